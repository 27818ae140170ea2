"""The velocity-level time stepper of Peiret 2016 (Eqs. 5-7 and 21-31).

One step from the known state (t, q, v) with step size h:

1. Kinematics at (q, v) from the model's compiled JAX function: M, f_app - c, Phi, N, D, A, u
   (Eqs. 1-4). Everything without a "+" is explicit (paper, after Eq. 6).
2. The bounded mixed LCP of Eq. (30) in z = (v+, h lam+, h lam_N+, friction unknowns)
   (see :mod:`lcpdyn.friction` for the friction block of each model), solved by
   :func:`solvers.solve` (``judice-pires`` by default, warm-started with the previous step's
   active set), or -- for the exact ``coulomb`` model -- the Delassus problem obtained by
   eliminating v+ and h lam+ (Schur complement), solved by
   :func:`solvers.friction_contact.solve_friction_contact`.
3. Friction bounds +-mu lam_N use the previous step's lam_N (Eq. 12). With
   ``normal_force_iterations=k`` the step is re-solved k more times with the bounds from the
   latest lam_N+ (fixed-point iteration toward mu lam_N+, the paper's remark after Eq. 12). The
   first step has no previous lam_N and always does one such extra pass.
4. Position update. ``position_update="paper"`` (default) is Eq. (7): q+ = q + h Gamma(q) v
   with the *known* v; ``"symplectic"`` uses v+ instead (symplectic Euler). Quaternions are
   renormalized after the update.

Drift stabilization (not in the paper, whose Eqs. 22-23 are pure velocity constraints):
each gap row is N v+ + e_N >= 0 and each holonomic row A v+ = -beta g~/h, where g~ and Phi~
are the constraint values *predicted at the configuration that v+ will move*: with the paper's
update that is Phi~ = Phi + h N v (the update with the known v has already been decided), with
the symplectic one Phi~ = Phi. Then e_N = Phi~/h when Phi~ >= 0 (a separated contact may
close exactly, Anitescu-Potra/Stewart-Trinkle style) and beta Phi~/h when penetrating, with
``stabilization`` beta in [0, 1] (default 1: the penetration is removed in one step; 0 gives the
paper's pure velocity constraint Phi_dot+ >= 0). On flat contacts sliding with zero normal
velocity Phi~ = 0 and the rows are exactly the paper's.

Every solve is checked by the framework's own residual. A failed solve is never applied
silently: the step is re-solved with ``fallback_method`` (recorded in ``solver_fallback``), and
if that fails too the run stops with :class:`SimulationError`, which carries the trajectory
up to the failing step.
"""
from __future__ import annotations

import math
import sys
import time

import numpy as np

import solvers
from solvers import friction_contact
from solvers.judice_pires import default_max_iterations
from solvers.options import build_options
from solvers.problem import checked_problem
from solvers.result import Status, result_from_kernel

from . import __version__
from .compliance import force_and_slope
from .contact import DiskContact
from .friction import Box, Continuous, Coulomb, Regularized, make_friction
from .kernels import bounded_vectors, fill_matrix, fused_step, gap_terms, slip_world, store_bodies, update_positions
from .model import Model
from .precision import float64
from .trajectory import Trajectory
from .validation import finite_number, positive

__all__ = ["Simulation", "SimulationError", "simulate"]

_FALLBACKS = {"judice-pires": "lemke", "lemke": "judice-pires", "pgs": "judice-pires", "siconos": "judice-pires",
              "nsgs": "siconos-nsn-ac", "siconos-nsgs": "nsgs", "siconos-nsn-ac": "nsgs"}


class SimulationError(RuntimeError):
    """A step could not be solved (or the state became invalid). ``trajectory`` holds the steps
    the failing :meth:`Simulation.run` call completed before it; ``step`` (counted since the last
    :meth:`Simulation.reset`, so it equals ``len(trajectory.t)`` for a run from the start) and
    ``time`` locate the failure; ``result`` is the solver's last answer, if any."""

    def __init__(self, message, step, time, trajectory=None, result=None):
        super().__init__(f"step {step} (t = {time:.6g} s): {message}")
        self.step, self.time, self.trajectory, self.result = step, time, trajectory, result


class _Basis:
    """The per-contact bases (r, 2, 2) and branches of a fused step (what world_force reads)."""

    def __init__(self, basis, kinetic):
        self.basis, self.kinetic = basis, kinetic


class Simulation:
    """Time-step a :class:`~lcpdyn.model.Model` with a friction model.

    Parameters
    ----------
    model : the scene.
    friction : ``"regularized"`` (default), ``"polygonal"``, ``"box"``, ``"coulomb"``,
        ``"continuous"`` or a model
        object from :mod:`lcpdyn.friction` (e.g. ``Regularized(tangential_stiffness=math.inf)``).
    dt : step size h (s), > 0.
    method : solver; default the friction model's (``judice-pires``; ``lemke`` for polygonal;
        ``nsgs`` for coulomb). Any of :data:`solvers.METHODS` for the LCP models, any of
        ``solvers.friction_contact.METHODS`` for coulomb.
    tolerance : acceptance bound on the framework's relative residual.
    position_update : ``"paper"`` (Eq. 7, known v) or ``"symplectic"`` (v+).
    stabilization : beta in [0, 1] for penetration and holonomic drift (see module docstring).
    normal_force_iterations : extra fixed-point passes toward mu lam_N+ (>= 0).
    fallback_method : method used when the first fails (``"auto"``: lemke for judice-pires and
        vice versa; nsgs <-> Siconos for coulomb); ``None`` stops at the first failure.
    solver_options : dict of options for ``method`` (see each method's ``Options``).
    static_threshold : slip speed (m/s) below which a contact counts as sticking when choosing
        between mu_s and mu_k for box, polygonal and coulomb (the regularized model uses its v_th).
    fused : for ``regularized`` and ``box`` with ``judice-pires``, assemble and run the first
        pivoting pass in one compiled call (:func:`lcpdyn.kernels.fused_step`). Same problem, same
        algorithm, same residual test, bit-identical results; ``False`` runs the general path
        (separately timed assembly and solve).
    """

    def __init__(self, model: Model, friction="regularized", dt: float = 1e-3, *, method: str | None = None,
                 tolerance: float = 1e-9, position_update: str = "paper", stabilization: float = 1.0,
                 normal_force_iterations: int = 0, fallback_method: str | None = "auto",
                 solver_options: dict | None = None, fused: bool = True, static_threshold: float = 0.01):
        if not isinstance(model, Model):
            raise TypeError(f"model must be an lcpdyn Model, got {type(model).__name__}")
        self.model = model
        self.friction = make_friction(friction)
        self.dt = positive("dt", dt)
        self.tolerance = positive("tolerance", tolerance)
        self.static_threshold = finite_number("static_threshold", static_threshold)
        if self.static_threshold < 0:
            raise ValueError(f"static_threshold must be >= 0, got {static_threshold!r}")
        if position_update not in ("paper", "symplectic"):
            raise ValueError(f"position_update must be 'paper' or 'symplectic', got {position_update!r}")
        self.position_update = position_update
        self.stabilization = finite_number("stabilization", stabilization)
        if not 0.0 <= self.stabilization <= 1.0:
            raise ValueError(f"stabilization must be in [0, 1], got {stabilization!r}")
        if isinstance(normal_force_iterations, bool) or not isinstance(normal_force_iterations, int) \
                or normal_force_iterations < 0:
            raise ValueError(f"normal_force_iterations must be an integer >= 0, got {normal_force_iterations!r}")
        self.normal_force_iterations = normal_force_iterations
        self.coulomb = isinstance(self.friction, Coulomb)
        allowed = friction_contact.METHODS if self.coulomb else solvers.METHODS
        self.method = method or self.friction.default_method
        if self.method not in allowed:
            raise ValueError(f"unknown method {self.method!r} for friction model {self.friction.name!r}; "
                             f"choose one of {sorted(allowed)}")
        if fallback_method == "auto":
            fallback_method = _FALLBACKS.get(self.method)
        if fallback_method is not None and fallback_method not in allowed:
            raise ValueError(f"unknown fallback_method {fallback_method!r}; choose one of {sorted(allowed)}")
        self.fallback_method = fallback_method
        self.solver_options = dict(solver_options or {})
        if not self.coulomb:
            self._options, self._warm_capable = {}, {}
            for name in {self.method, self.fallback_method} - {None}:
                module = solvers.METHODS[name]
                given = self.solver_options if name == self.method else {}
                self._options[name] = build_options(module.Options, name, given)
                self._warm_capable[name] = name == "judice-pires"  # its run() takes warm_start=
        if not isinstance(fused, bool):
            raise ValueError(f"fused must be True or False, got {fused!r}")
        self._fused = (fused and self.method == "judice-pires" and isinstance(self.friction, (Regularized, Box))
                       and self.solver_options.get("warm_start") is None)
        self.evaluate = model.compile()
        self.M = model.mass_matrix()
        self.mu = model.friction_coefficients()
        self.mu_static = model.friction_coefficients(static=True)
        self._two_coefficients = bool(np.any(self.mu_static != self.mu))
        self._profiles = [(i, c.friction_profile) for i, c in enumerate(model.contacts)
                          if c.friction_profile is not None]
        self._compliant = [(i, c.normal_law) for i, c in enumerate(model.contacts) if c.normal_law is not None]
        self._normal_compliance = np.zeros(len(model.contacts))
        self.n_holonomic = sum(c.size for c in model.holonomic)
        self.has_disks = any(isinstance(c, DiskContact) for c in model.contacts)
        size = self.M.shape[0] + model.n_bilateral + len(model.contacts)
        self._size = size + (2 * len(model.contacts) if isinstance(self.friction, (Regularized, Box)) else 0)
        self._no_warm = np.zeros(self._size, np.int8)
        self.reset()

    # --- state ------------------------------------------------------------------------
    def reset(self):
        """Back to the model's initial state."""
        self.q, self.v = self.model.initial_state()
        self.t = 0.0
        self.steps_done = 0
        r = len(self.model.contacts)
        self.normal_force = np.zeros(r)
        self.friction_force = np.zeros((r, 3))
        self.active_set = None
        self.impulse_guess = None
        self.timing = None

    def parameters(self) -> dict:
        """Everything that determines a run (recorded in output files)."""
        return {"lcpdyn_version": __version__, "dt": self.dt, "friction": self.friction.parameters(),
                "method": self.method, "fallback_method": self.fallback_method, "tolerance": self.tolerance,
                "position_update": self.position_update, "stabilization": self.stabilization,
                "normal_force_iterations": self.normal_force_iterations, "fused": self._fused,
                "static_threshold": self.static_threshold,
                "solver_options": {k: v for k, v in self.solver_options.items() if k != "warm_start"},
                "bodies": [{"name": b.name, "mass": b.mass, "inertia": b.inertia_matrix.tolist(),
                            "position": b.position.tolist(), "orientation": b.orientation.tolist(),
                            "velocity": b.velocity.tolist(), "angular_velocity": b.angular_velocity.tolist()}
                           for b in self.model.bodies],
                "contacts": [{"type": type(c).__name__, "body": c.body.name, "mu": c.mu, "mu_static": c.mu_static,
                              "normal_law": None if c.normal_law is None else {
                                  "type": type(c.normal_law).__name__, "coefficients": list(c.normal_law.coefficients),
                                  "damping": c.normal_law.damping},
                              "plane_normal": c.plane.normal.tolist(), "plane_point": c.plane.point.tolist(),
                              **({"radius": c.radius} if hasattr(c, "radius") else {})}
                             for c in self.model.contacts],
                "gravity": self.model.gravity.tolist()}

    def energy(self, kinematics=None) -> float:
        """Mechanical energy of the current state (J)."""
        k = kinematics or self.evaluate(self.q, self.v, self.t)
        return k.potential_energy + 0.5 * float(self.v @ self.M @ self.v)

    # --- one step -----------------------------------------------------------------------
    def step(self, kinematics=None) -> dict:
        """Advance one step; returns what was solved (forces, slip, statuses) for recording,
        including ``timing`` = (assembly, solve, rest) in seconds (assembly includes the Schur
        elimination for coulomb; rest is the gap terms, position update and bookkeeping)."""
        begin = time.perf_counter()
        self._clock = [0.0, 0.0]
        h = self.dt
        k = kinematics or self.evaluate(self.q, self.v, self.t)
        if self.has_disks and k.min_sin_tilt < 1e-6:
            raise SimulationError("a disk lies flat on its plane (|n x axis| < 1e-6): the single-point disk "
                                  "contact is undefined", self.steps_done, self.t)
        n, r, m = self.M.shape[0], k.gap.shape[0], k.A.shape[0]
        v = self.v
        self._mu_now, self._mu_static_now = self._coefficients_now(k)
        paper = self.position_update == "paper"
        e_N = gap_terms(k.gap, k.N, v, h, paper, self.stabilization)
        if self._compliant:
            e_N = self._compliant_rows(k, v, h, paper, e_N)
        g = k.holonomic_error
        if g.size:  # A v+ = -dg/dt - beta g~/h (rheonomic rate, drift at the configuration v+ moves)
            g_pred = g + h * (k.A[:g.size] @ v + k.holonomic_rate) if paper else g
            g = -self.stabilization * g_pred / h - k.holonomic_rate
        u = np.concatenate([g, k.nonholonomic_rhs])
        rhs = self.M @ v + h * k.force
        if self.coulomb:
            out = self._solve_coulomb(k, rhs, u, e_N, h)
        else:
            out = self._solve_lcp(k, rhs, u, e_N, h, n, m, r)
        v_new = out["v"]
        out["slip_world"] = slip_world(k.D, v_new, k.tangent)
        out["gap"] = k.gap
        self.q = update_positions(self.q, v if paper else v_new, h)
        self.v = v_new
        self.t = (self.steps_done + 1) * h
        self.steps_done += 1
        self.normal_force = out["normal_force"]
        self.friction_force = out["friction_force"]
        total = time.perf_counter() - begin
        out["timing"] = (self._clock[0], self._clock[1], total - self._clock[0] - self._clock[1])
        return out

    def _compliant_rows(self, k, v, h, paper, e_N):
        """Compliant contacts (:mod:`lcpdyn.compliance`): their rows become
        N v+ + C_N h lam_N+ - F(a~)/(F' h + c) >= 0 at the predicted approach a~ = -Phi~."""
        e_N = e_N.copy()
        for i, law in self._compliant:
            approach = -(k.gap[i] + h * (k.N[i] @ v) if paper else k.gap[i])
            force, slope = force_and_slope(law, approach)
            # the damper acts only in contact: ahead of it (a~ <= 0) the spring alone decides whether
            # the step closes the gap, so no force acts before the surfaces touch
            effective = slope * h + (law.damping if approach > 0.0 else 0.0)
            self._normal_compliance[i] = 1.0 / (h * effective)
            e_N[i] = -force / effective
        return e_N

    def _coefficients_now(self, k):
        """(mu, mu_s) per contact for this step: friction profiles mu(t) first; then, with
        mu_s > mu_k, mu is mu_k where the contact slid in the previous step (|D v| >
        ``static_threshold``) and mu_s where it stuck -- for box, polygonal and coulomb; the
        regularized model gets mu_k and applies mu_s in its own static branch."""
        mu, mu_static = self.mu, self.mu_static
        if self._profiles:
            mu, mu_static = mu.copy(), mu_static.copy()
            for i, profile in self._profiles:
                value = float(profile(self.t))
                if not (np.isfinite(value) and value >= 0):
                    raise SimulationError(f"friction_profile of contact {i} gave mu = {value!r}", self.steps_done,
                                          self.t)
                mu[i] = mu_static[i] = value
        if not self._two_coefficients or isinstance(self.friction, (Regularized, Continuous)):
            return mu, mu_static
        slip = (k.D @ self.v).reshape(-1, 2)
        sliding = np.sqrt((slip ** 2).sum(axis=1)) > self.static_threshold
        return np.where(sliding, mu, mu_static), mu_static

    def _assemble(self, k, rhs, u, e_N, h, n, m, r, normal_force):
        """Eq. (30) with the friction model's block (see :mod:`lcpdyn.friction`)."""
        block = self.friction.block(k.D, self.v, h, self._mu_now, normal_force, self.friction_force, k.tangent,
                                    mu_static=self._mu_static_now)
        nf = block.F.shape[0]
        size = n + m + r + nf
        K = np.zeros((size, size))
        fill_matrix(K, self.M, k.A, k.N, block.F, block.G, block.C,
                    block.P if block.P is not None else np.zeros((nf, r)), self._normal_compliance)
        qv, lo, hi = bounded_vectors(rhs, u, e_N, block.c, block.lo, block.hi)
        return block, K, qv, lo, hi

    def _call(self, method, K, qv, lo, hi, warm):
        """Solve through the method's module with prepared options (the front door's work minus
        the input conversion: the arrays are ours; entries are still checked)."""
        problem = checked_problem(K, qv, lo, hi)
        options = self._options[method]
        if warm is not None and self._warm_capable[method] and warm.shape[0] == qv.shape[0]:
            return solvers.METHODS[method].run(problem, options, self.tolerance, warm_start=warm)
        return solvers.METHODS[method].run(problem, options, self.tolerance)

    def _solve_lcp(self, k, rhs, u, e_N, h, n, m, r):
        normal_force = self.normal_force
        passes = 1 + self.normal_force_iterations + (1 if self.steps_done == 0 and r else 0)
        iterations = 0
        warm = self.active_set
        fallback = False
        for _ in range(passes):
            start = time.perf_counter()
            if self._fused:
                block, K, qv, lo, hi, result = self._fused_pass(k, rhs, u, e_N, h, normal_force, warm)
                middle = time.perf_counter()
                if result is None:  # pivoting did not converge: the full method (proximal fallback)
                    result = self._call(self.method, K, qv, lo, hi, warm)
            else:
                block, K, qv, lo, hi = self._assemble(k, rhs, u, e_N, h, n, m, r, normal_force)
                middle = time.perf_counter()
                result = self._call(self.method, K, qv, lo, hi, warm)
            self._clock[0] += middle - start
            self._clock[1] += time.perf_counter() - middle
            result, retried = self._accept(result, lambda method: self._call(method, K, qv, lo, hi, None))
            fallback = fallback or retried
            iterations += result.iterations
            warm = result.active_set
            normal_force = result.z[n + m:n + m + r] / h
        self.active_set = result.active_set
        z = result.z
        friction_force = self.friction.world_force(z[n + m + r:], block, k.tangent, h)
        return {"v": z[:n].copy(), "normal_force": normal_force, "friction_force": friction_force,
                "status": int(result.status), "iterations": iterations, "residual": result.relative_residual,
                "fallback": fallback, "kinetic": block.kinetic.copy(), "problem": (K, qv, lo, hi)}

    def _fused_pass(self, k, rhs, u, e_N, h, normal_force, warm):
        """The regularized/box model with judice-pires in one compiled call
        (:func:`lcpdyn.kernels.fused_step`); the same problem and the same first pivoting run as
        the general path, and the same residual test. Returns (block, K, q, lo, hi, result or None
        when the pivoting did not converge)."""
        options = self._options[self.method]
        friction = self.friction
        regularized = isinstance(friction, Regularized)
        compliance = 0.0
        if regularized and not math.isinf(friction.tangential_stiffness):
            compliance = 1.0 / (friction.tangential_stiffness * h * h)
        use_warm = warm is not None and warm.shape[0] == self._size
        (K, qv, lo, hi, basis, kinetic, z, w, active_set, code, iterations, relative, worst, residual,
         violation) = fused_step(self.M, k.A, k.N, k.D, k.tangent, rhs, u, e_N, self._normal_compliance, self.v, h,
                             self._mu_now, self._mu_static_now,
                             normal_force,
                             self.friction_force, compliance,
                             friction.velocity_threshold if regularized else 0.0, not regularized,
                             warm if use_warm else self._no_warm, use_warm,
                             options.max_iterations or default_max_iterations(self._size), options.max_stall,
                             options.pivot_tolerance)
        block = _Basis(basis, kinetic)
        if code != 0 or not relative <= self.tolerance:
            return block, K, qv, lo, hi, None
        result = result_from_kernel(z, w, active_set, Status.SOLVED, iterations, relative, worst, residual,
                                    violation, f"basic-set pivoting: solved after {iterations} iterations "
                                    "(fused stepper path)", self.method, self.tolerance)
        return block, K, qv, lo, hi, result

    def _accept(self, result, retry):
        """(result, False) if it succeeded; else (retry(fallback_method), True) if that succeeded;
        else :class:`SimulationError` -- a failed answer is never returned."""
        if result.success:
            return result, False
        if self.fallback_method is None:
            raise SimulationError(f"{result.method} failed: {result.status.name}: {result.message}",
                                  self.steps_done, self.t, result=result)
        second = retry(self.fallback_method)
        if not second.success:
            raise SimulationError(f"{result.method} failed ({result.status.name}: {result.message}) and the "
                                  f"fallback {second.method} failed too ({second.status.name}: {second.message})",
                                  self.steps_done, self.t, result=second)
        return second, True

    def _solve_coulomb(self, k, rhs, u, e_N, h):
        start = time.perf_counter()
        n, m, r = self.M.shape[0], k.A.shape[0], k.gap.shape[0]
        KKT = np.zeros((n + m, n + m))
        KKT[:n, :n] = self.M
        KKT[:n, n:] = -k.A.T
        KKT[n:, :n] = k.A
        H = np.empty((3 * r, n))  # per contact: normal, t1, t2 (Siconos' ordering)
        H[0::3] = k.N
        H[1::3] = k.D[0::2]
        H[2::3] = k.D[1::2]
        right = np.zeros((n + m, 1 + 3 * r))
        right[:n, 0] = rhs
        right[n:, 0] = u
        right[:n, 1:] = H.T
        solution = np.linalg.solve(KKT, right)
        free, response = solution[:, 0], solution[:, 1:]
        W = H @ response[:n]
        W = 0.5 * (W + W.T)
        W[0::3, 0::3] += np.diag(self._normal_compliance)  # compliant contacts
        b = H @ free[:n]
        b[0::3] += e_N
        middle = time.perf_counter()
        result = self._solve_fc(W, b, self.method)
        self._clock[0] += middle - start
        self._clock[1] += time.perf_counter() - middle
        result, fallback = self._accept(result, lambda method: self._solve_fc(W, b, method))
        impulse = result.r
        self.impulse_guess = impulse
        x = free + response @ impulse
        per = impulse.reshape(r, 3) / h
        friction = per[:, 1, None] * k.tangent[:, 0] + per[:, 2, None] * k.tangent[:, 1]
        return {"v": x[:n].copy(), "normal_force": per[:, 0].copy(), "friction_force": friction,
                "status": int(result.status), "iterations": result.iterations,
                "residual": result.relative_residual, "fallback": fallback, "kinetic": np.zeros(r, bool),
                "delassus": (W, b)}

    def _solve_fc(self, W, b, method):
        options = dict(self.solver_options) if method == self.method else {}
        guess = self.impulse_guess if method == "nsgs" else None
        return friction_contact.solve_friction_contact(W, b, self._mu_now, method=method, tolerance=self.tolerance,
                                                       initial_guess=guess, **options)

    # --- runs ---------------------------------------------------------------------------
    def run(self, t_end: float, progress: bool = False) -> Trajectory:
        """Simulate from the current state to ``t_end`` (s); returns the :class:`Trajectory`.

        On a failed step raises :class:`SimulationError` whose ``trajectory`` holds the steps
        done. ``progress=True`` prints a progress line to stderr about once a second. Wall
        times per step (s) are left in ``self.timing`` (steps x 5: Jacobians, assembly, solve,
        rest of the step, recording), not in the trajectory, which stays reproducible."""
        t_end = finite_number("t_end", t_end)
        steps = int(round((t_end - self.t) / self.dt))
        if steps < 1:
            raise ValueError(f"t_end = {t_end} leaves no step of dt = {self.dt} after t = {self.t}")
        record = _Recorder(self, steps)
        k = self.evaluate(self.q, self.v, self.t)
        record.initial(self, k)
        last_print = time.perf_counter()
        evaluate = self.evaluate.unscoped
        with float64():  # the whole loop inside JAX's float64 scope (see lcpdyn.precision)
            for i in range(steps):
                try:
                    out = self.step(k)
                    start = time.perf_counter()
                    k = evaluate(self.q, self.v, self.t)
                    jacobians = time.perf_counter() - start
                except SimulationError as exc:
                    exc.trajectory = record.finish(i)
                    raise
                start = time.perf_counter()
                record.store(i, self, out, k)
                record.timing(i, jacobians, out["timing"], time.perf_counter() - start)
                if progress and time.perf_counter() - last_print > 1.0:
                    last_print = time.perf_counter()
                    print(f"\r  {self.friction.name}: t = {self.t:.3f} / {t_end:g} s "
                          f"({100 * (i + 1) / steps:.0f} %)", end="", file=sys.stderr, flush=True)
        if progress:
            print(f"\r  {self.friction.name}: t = {self.t:.3f} / {t_end:g} s (100 %)", file=sys.stderr)
        return record.finish(steps)


class _Recorder:
    def __init__(self, sim: Simulation, steps: int):
        nb, r = len(sim.model.bodies), len(sim.model.contacts)
        self.sim = sim
        self.a = {
            "t": np.zeros(steps), "position": np.zeros((steps, nb, 3)), "quaternion": np.zeros((steps, nb, 4)),
            "velocity": np.zeros((steps, nb, 3)), "angular_velocity": np.zeros((steps, nb, 3)),
            "contact_normal_force": np.zeros((steps, r)), "contact_friction_force": np.zeros((steps, r, 3)),
            "contact_slip_velocity": np.zeros((steps, r, 3)), "contact_gap": np.zeros((steps, r)),
            "contact_kinetic": np.zeros((steps, r), np.int8), "energy": np.zeros(steps),
            "solver_status": np.zeros(steps, np.int8), "solver_iterations": np.zeros(steps, np.int32),
            "solver_residual": np.zeros(steps), "solver_fallback": np.zeros(steps, np.int8),
        }
        # wall times are kept out of the trajectory so that outputs are reproducible
        sim.timing = np.zeros((steps, 5))

    def timing(self, i, jacobians, inner, record):
        row = self.sim.timing[i]
        row[0] = jacobians
        row[1], row[2], row[3] = inner
        row[4] = record

    def initial(self, sim, k):
        nb = len(sim.model.bodies)
        self.a["initial_position"] = sim.q.reshape(nb, 7)[:, :3].copy()
        self.a["initial_energy"] = np.float64(sim.energy(k))

    def store(self, i, sim, out, k):
        a = self.a
        a["t"][i] = sim.t
        store_bodies(sim.q, sim.v, a["position"][i], a["quaternion"][i], a["velocity"][i], a["angular_velocity"][i])
        a["contact_normal_force"][i] = out["normal_force"]
        a["contact_friction_force"][i] = out["friction_force"]
        a["contact_slip_velocity"][i] = out["slip_world"]
        a["contact_gap"][i] = out["gap"]
        a["contact_kinetic"][i] = out["kinetic"]
        a["energy"][i] = sim.energy(k)
        a["solver_status"][i] = out["status"]
        a["solver_iterations"][i] = out["iterations"]
        a["solver_residual"][i] = out["residual"]
        a["solver_fallback"][i] = out["fallback"]

    def finish(self, steps) -> Trajectory:
        sim = self.sim
        trajectory = Trajectory(self.a, sim.parameters(), [b.name for b in sim.model.bodies])
        return trajectory.truncated(steps)


def simulate(model: Model, friction="regularized", dt: float = 1e-3, t_end: float = 1.0, progress=False,
             **options) -> Trajectory:
    """Shortcut: ``Simulation(model, friction, dt, **options).run(t_end)``."""
    return Simulation(model, friction, dt, **options).run(t_end, progress=progress)
