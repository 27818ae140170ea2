"""The velocity-level time stepper of Peiret 2016 (Eqs. 5-7 and 21-31).

One step from the known state (t, q, v) with step size h:

1. Kinematics at (q, v) from the model's compiled JAX function: M, f_app - c, Phi, N, D, A, u
   (Eqs. 1-4). Everything without a "+" is explicit (paper, after Eq. 6).
2. The bounded mixed LCP of Eq. (30) in z = (v+, h lam+, h lam_N+, friction unknowns)
   -- split into one island per body when it has no bilateral rows (:mod:`lcpdyn.islands`;
   ``sparse``), else whole --
   (see :mod:`lcpdyn.friction` for the friction block of each model), solved by
   :func:`solvers.solve` (``judice-pires`` by default, warm-started with the previous step's
   active set), or -- for the exact ``coulomb`` model -- the Delassus problem obtained by
   eliminating v+ and h lam+ (Schur complement), solved by
   :func:`solvers.friction_contact.solve_friction_contact`.
3. Friction bounds +-mu lam_N use the previous step's lam_N (Eq. 12). With
   ``normal_force_iterations=k`` the step is re-solved k more times with the bounds from the
   latest lam_N+ (fixed-point iteration toward mu lam_N+, the paper's remark after Eq. 12). The
   first step has no previous lam_N and always does one such extra pass.
4. Position update. ``position_update="symplectic"`` (default) moves the configuration with the
   new velocity, q+ = q + h Gamma(q) v+ (symplectic Euler); ``"paper"`` is Eq. (7),
   q+ = q + h Gamma(q) v with the *known* v, kept to reproduce the paper. Quaternions are
   renormalized after the update.

Why v+ is the default. Eq. (7) makes positions explicit in the velocity as well: in free flight
under a constant force f (gravity) a step changes the energy by +h^2 f . M^-1 f / 2 > 0
(explicit Euler), and a body in contact is moved with a velocity the contact impulse has not yet
acted on. With v+ the same step changes it by -|v+ - v|_M^2 / 2 <= 0: M (v+ - v) = h f + J^T
(impulses) and q+ = q + h v+ give E+ - E = -|v+ - v|_M^2 / 2 + (impulses) . v+ for constant f,
so only impulses can add energy -- normal ones only while a penetration is pushed out (the
stabilization below), friction ones never (Coulomb's maximal dissipation; box and polygon
direction by direction; the regularized bristle returns at most the |lam_T|^2 / (2 k_T) it
stored). Measured on the Table 1 wheel at h = 1 ms (``scenes.wheel``): released at rest at
theta = 60 deg, Eq. (7) takes it from 2.45 J to 23.8 J (it flips and jumps 1.4 m, every step
SOLVED); v+ lets it fall flat, energy never above 2.45 J. Rolling, Eq. (7) gains 0.21 J in 2 s.

Gyroscopic term (``gyroscopic``). The paper evaluates c = omega x I omega at the known omega
(Eq. 6). For a spinning body that is explicit Euler on Euler's equations, which multiplies the
body-frame precession amplitude by sqrt(1 + (h lam)^2) per step (lam the precession rate), under
either position update: the wheel with a yaw rate of -100 rad/s goes from 1.70e3 J to 5.7e4 J in
4 s, at -1000 rad/s to overflow. ``gyroscopic="midpoint"`` (the default with the v+ update)
first advances each body's free rotation by the implicit midpoint rule,

    I (omega* - omega) = -h x x I x,   x = (omega + omega*) / 2,

(Newton on three unknowns per body, :func:`lcpdyn.kernels.gyroscopic_midpoint`), which keeps
omega . I omega and |I omega| exactly (the midpoint rule conserves quadratic invariants), and
then solves Eq. (30) with M v* + h f_app in place of M v + h (f_app - c). M stays the constant,
symmetric mass matrix, so the energy argument above holds with v* for v: with the defaults a
step adds no energy but the impulses'. ``"explicit"`` is the paper's and the default with
``position_update="paper"``, which therefore reproduces the paper exactly.

Drift stabilization (not in the paper, whose Eqs. 22-23 are pure velocity constraints):
each gap row is N v+ + e_N >= 0 and each holonomic row A v+ = -beta g~/h, where g~ and Phi~
are the constraint values *predicted at the configuration that v+ will move*: with the paper's
update that is Phi~ = Phi + h N v (the update with the known v has already been decided), with
the symplectic one Phi~ = Phi. Then e_N = Phi~/h when Phi~ >= 0 (a separated contact may
close exactly, Anitescu-Potra/Stewart-Trinkle style) and beta Phi~/h when penetrating, with
``stabilization`` beta in [0, 1] (default 1: the penetration is removed in one step; 0 gives the
paper's pure velocity constraint Phi_dot+ >= 0). On flat contacts sliding with zero normal
velocity Phi~ = 0 and the rows are exactly the paper's.

Compliant bilateral rows (holonomic constraints with a ``stiffness``, the elements of
:mod:`lcpdyn.beam`). A row g(q) with stiffness k and damper c carries the force
lam = -k g(q+) - c g_dot+ of the potential k g^2 / 2, taken implicitly: with g(q+) linearized
about the prediction q~ = q + h Gamma(q) v (at t + h), g(q+) ~ g~ + h A (v+ - v), and
g_dot+ = A v+ + g_t,

    A v+ + C_A (h lam) = -(k (g~ - h A v) + c g_t) / (h k + c),     C_A = 1 / (h (h k + c)),

a regularized bilateral row of Eq. (30) (K gains diag(C_A) in the bilateral block; the rows stay
free). Eliminating h lam gives (M + h C + h^2 K) v+ = M v + h f - h A^T k (g~ - h A v) with
K = A^T k A and C = A^T c A: the linearized backward Euler step of the elastic and damping forces
(the geometric stiffness (dA^T/dq) lam is left out of the matrix, as in compliant-constraint
formulations; it is in the force, since A and g are evaluated at every step). Linearizing about
q~ rather than q costs one more kinematics evaluation per step and matters for stiff rows that
rotate: about q, a row of length L turning at Omega is stretched by the linearization's
L (h Omega)^2 / 2 every step, which a stiff row stores as spurious elastic energy (a pendulum on a
row of k = 1e12 N/m showed 35 J on 18 J); about q~ the error is O(h^2 |v+ - v|^2). For
k -> inf the row becomes the rigid one with beta = 1. Why backward Euler: it is stable for every h with the stiffest
sectional data, keeps M block-diagonal and constant (the beam's stiffness sits in sparse rows
over two nodes each) and cannot add energy: for a linear spring of frequency omega the step
multiplies the amplitude by exactly 1 / sqrt(1 + (h omega)^2) (``tests/test_compliant_rows.py``
checks this). Its numerical damping is, to leading order in h omega, a stiffness-proportional
damping of coefficient h seconds (damping ratio h omega / 2): at h = 1 ms as much as Bauchau
2002's beams' own 0.001 s (Table 1), at h = 0.1 ms a tenth of it. Compliant rows need the
symplectic update (the paper's Eq. (7) would make the elastic force explicit; the midpoint
scheme is not extended to them).

Moreau's midpoint scheme (``position_update="midpoint"``, second order on smooth phases). The
first-order step above errs by O(h) in every smooth phase; on the wobbling rolling disk
(Schwab–Meijaard 2003 Sec. 3.2) that error leaves the exact path after one loop. The midpoint
scheme (Moreau 1988's q_m = q + h/2 v, q+ = q_m + h/2 v+; the theta = 1/2 member of the
Moreau–Jean family) poses Eq. (30) over h/2 at the midpoint configuration q_m, at time t + h/2,
in the midpoint velocity v_m = (v + v+)/2:

    M (v_m - v) = h/2 f(q_m, v_m) + impulses over h/2,   v+ = 2 v_m - v,   q+ = q_m + h/2 v+,

that is, M (v+ - v) = h f(q_m, v_m) + impulses -- the implicit midpoint rule for the smooth
dynamics (for a constant force E+ - E is the impulses' work h lam . v_m only). Two passes make
it second order: the first takes the applied forces and c = omega x I omega at the start (with
the gyroscopic midpoint rule above), the second at the first pass's v_m (the rule needs
f(q_m, v_m); an O(h) error in the argument would make the scheme first order, as the
frictionless wheel's contact torque showed). Each kind of row is written where the smooth
solution satisfies it:

* velocity constraints -- non-holonomic rows A v = u, ideal rolling -- at the midpoint,
  A(q_m) v_m = u(t + h/2) (the implicit midpoint rule for non-holonomic systems);
* position constraints -- gaps and holonomic rows -- at the next midpoint configuration
  q_m' = q_m + h v+, as in Störmer–Verlet/SHAKE: Phi(q_m') >= 0 complementary to lam_N (an
  impact is therefore inelastic, not the midpoint rule's elastic bounce), linearized about the
  prediction q_m + h v^, with v^ the known v in the first pass and the first pass's v+ in the
  second (:meth:`Simulation._midpoint_rows`: the linearization's error is O(h^4) in the second
  pass, what a local error O(h^3) needs);
* friction rows at the end velocity v+, over the whole step, exactly as the model writes them
  for the first-order step (:func:`_friction_on_end_velocity`): a contact that stops sliding
  stops at the end of the step. Written at v_m, sticking would hold D v_m = 0, i.e.
  D v+ = -D v: a block that came to rest would keep a velocity alternating in sign forever.
  Friction laws are nonsmooth, so phases with friction stay first order in h (with a smaller
  constant: the Peiret wheel's COM at t = 3 s is 5e-4 m off the exact reference at h = 1 ms,
  against 2.6e-3 m with the first-order step).

Measured: observed order 2.0 on the frictionless wheel against the event-driven reference
(:mod:`lcpdyn.reference`) and on the rolling disk against its state equations; at h = 1 ms the
disk's centre stays within 5e-5 of the exact path over the whole 87 time units (the first-order
step leaves 1 % of the path length at t = 17.9). A step costs about three first-order ones (two
solves, three kinematics evaluations). The scheme takes rigid contacts (compliant normal laws
are refused) and is solved whole (not island by island, not in the compiled loop); the energy
check's modified-energy term is zero (the scheme conserves E exactly under a constant force).

Every solve is checked by the framework's own residual. A failed solve is never applied
silently: the step is re-solved with ``fallback_method`` (recorded in ``solver_fallback``), and
if that fails too the run stops with :class:`SimulationError`, which carries the trajectory
up to the failing step.

Run health (:meth:`Simulation.run` records ``health``, :class:`lcpdyn.trajectory.Health` bit
flags, per step):

* Non-finite values stop the run. The compiled kinematics flags a NaN or inf anywhere in its
  outputs (one reduction inside the compiled call); the step's right-hand side and gap terms,
  and the new velocities and positions, are scanned (:func:`lcpdyn.kernels.first_nonfinite`, O(n)).
  Either raises :class:`SimulationError` naming the culprit -- the body force, spring, contact,
  constraint or body, and the quantity (:meth:`lcpdyn.model.Model.diagnose`) -- with the
  trajectory so far. An exception raised inside a user function during a step (a
  ``friction_profile``) or anywhere else in it becomes a :class:`SimulationError` with the
  trajectory attached and the original as ``__cause__``.
* Energy check (``energy_check``: ``"warn"`` default, ``"stop"``, ``"off"``). Let E_n be the
  mechanical energy after step n (:meth:`Simulation.energy`) and W_n the work put in since the
  start by the loads that have no potential (body forces and dampers, h f_nc(q, v, t) . (v + v+)/2
  per step; with compliant bilateral rows h f_nc . v+, the load's work on the step's displacement
  h v+: the trapezoid balances symplectic Euler's kinetic energy exactly only when every force is
  explicit, and next to an implicit elastic force it errs by h f_nc . (v+ - v)/2, which a
  quasi-static run at h omega >> 1 showed as a 4 % "gain"; with h f_nc . v+ a step of linear
  compliant rows changes D by -|v+ - v|_M^2 / 2 - sum k (g+ - g)^2 / 2 <= 0) and by driven
  constraints ((h lam) . u_drive with u_drive the rheonomic rate -dg/dt and the non-holonomic
  right-hand side u). In a passive system D_n = E_n - W_n never rises.
  A step is flagged ``ENERGY_GAIN`` when

      D_n - min_{k <= n} D_k  >  energy_tolerance * S_n  (+ 1e-12 (|E_n| + S_n) for rounding),

  measured from the running minimum, so that a gain after a dissipative phase is not hidden by
  it (the Eq. (7) wheel gains its 0.21 J rolling after losing 18 J sliding). The energy scale
  S_n = max(sum_b m_b |g| l_b, max_{k<=n} T_k, max_{k<=n} |V_k - V_0|, max_{k<=n} |W_k|) -- with
  T kinetic and V potential energy, and l_b = sqrt(tr I_b / m_b) a body's size from its inertia
  -- does not depend on the potential's datum. D_n also carries the O(h) term of the scheme's
  modified energy, +h/2 P_c with the v+ update (-h/2 P_c with Eq. 7), P_c = (f_app - f_nc) . v the
  power of gravity and springs: symplectic Euler conserves E + h/2 P_c exactly for a linear
  spring and in free fall, so its bounded O(h) energy oscillation (a pendulum's, a coarse
  spring's) is not taken for a gain. Default tolerance 1e-3: on the Table 1 wheel (S = 18.7 J)
  that is 19 mJ; the default scheme's largest rise there is 1 mJ (any friction model), the
  Eq. (7) gain 0.13 J (0.19 J under box). Drift stabilization (beta > 0) pushes a penetration d out at
  beta d / h, doing work up to beta lam_N d: in steady contact the penetration is the O(h^2) gap
  error of the rim's curvature, which first lowered the potential energy by as much, so the two
  cancel within a step or two and the tolerance covers the rest; a deep penetration (a body
  started inside the plane) is pushed out at d / h, and the kinetic energy this creates is
  flagged, deliberately. ``"warn"`` issues one :class:`EnergyWarning` at the end of the run
  (how many steps, the largest gain and when, the first flagged time); ``"stop"`` raises
  :class:`SimulationError` at the first flagged step.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import signal
import sys
import threading
import time
import warnings

import numpy as np
import scipy.sparse as sp

import solvers
from solvers import friction_contact
from solvers.block_gs import contact_blocks
from solvers.friction_contact import FrictionContactProblem
from solvers.judice_pires import default_max_iterations
from solvers.options import build_options
from solvers.problem import BoundedLCP, checked_problem
from solvers.result import Status, result_from_kernel

from . import __version__
from .compiled_loop import CHUNK_STEPS
from .compiled_loop import measure as measure_chunk
from .compliance import force_and_slope
from .forces import BodyForce
from .friction import FRICTION_CONTACT, compiled_rows, make_friction
from .friction.base import FrictionBlock, world_kernel
from .friction.creep import RollingKinematics
from .islands import BodyGroups, coulomb_islands, free_velocity, lcp_islands, row_bodies
from .kernels import (
    GYROSCOPIC_NEWTON_ITERATIONS,
    GYROSCOPIC_NEWTON_TOLERANCE,
    all_finite,
    block_rows,
    bounded_vectors,
    fill_matrix,
    first_nonfinite,
    fused_step,
    gap_terms_blocks,
    gyroscopic_midpoint,
    kinetic_energy,
    momentum,
    slip_world_blocks,
    store_bodies,
    update_positions,
    world_angular_velocity,
)
from .kkt import SPARSE_SIZE, solve_kkt
from .model import Model, _scatter
from .precision import float64
from .rotation import np_rotation_matrix
from .step_result import StepResult
from .step_state import StepState
from .trajectory import Health, Trajectory
from .validation import finite_number, positive

__all__ = [
    "Simulation",
    "SimulationError",
    "RunInterrupted",
    "EnergyWarning",
    "simulate",
    "MIN_DT",
    "MAX_STEPS",
    "POSITION_UPDATES",
]

POSITION_UPDATES = ("symplectic", "paper", "midpoint")
"""The time-stepping schemes of :class:`Simulation`'s ``position_update`` (module docstring)."""
MIN_DT = 1e-9
"""Smallest step size (s) the stepper accepts -- a practical floor: a simulated second would take
10^9 steps (a day at ~100 us per step), and the step's 1/h and 1/h^2 terms (Phi/h, the bristle
compliance 1/(k_T h^2), compliant rows 1/(h (F' h + c))) grow against the O(1) masses of
Eq. (30) -- 1e8 at 1 ns with k_T = 1e10 N/m; dt = 1e-300 overflows them outright. (Time itself
never stalls at t + dt == t: the stepper computes t = (steps done) x dt.)"""

_EMPTY = np.zeros(0)
_NEWTON_TOLERANCE, _NEWTON_ITERATIONS = GYROSCOPIC_NEWTON_TOLERANCE, GYROSCOPIC_NEWTON_ITERATIONS

MAX_STEPS = 100_000_000
"""Most steps one :meth:`Simulation.run` call takes: its recorder allocates every step up front
(~150 bytes per step for one body and contact). Split longer runs into several ``run`` calls
(each continues from the current state)."""

_FALLBACKS = {
    "judice-pires": "lemke",
    "lemke": "judice-pires",
    "pgs": "judice-pires",
    "siconos": "judice-pires",
    "nsgs": "prox",  # the proximal-point Newton loop converges where NSGS stalls (hyperstatic contact sets)
    "newton": "prox",
    "prox": "nsgs",
    "auto": "nsgs",  # (the friction-contact method "auto"; fallback_method="auto" means "from this table")
    "siconos-nsgs": "nsgs",
    "siconos-nsn-ac": "nsgs",
    "siconos-prox": "prox",
}


class SimulationError(RuntimeError):
    """A step could not be solved (or the state became invalid). ``trajectory`` holds the steps
    the failing :meth:`Simulation.run` call completed before it; ``step`` (counted since the last
    :meth:`Simulation.reset`, so it equals ``len(trajectory.t)`` for a run from the start) and
    ``time`` locate the failure; ``result`` is the solver's last answer, if any."""

    def __init__(self, message, step, time, trajectory=None, result=None):
        super().__init__(f"step {step} (t = {time:.6g} s): {message}")
        self.step, self.time, self.trajectory, self.result = step, time, trajectory, result


class RunInterrupted(SimulationError):
    """:meth:`Simulation.run` was stopped by SIGINT or SIGTERM (``signal``) between two steps.
    ``trajectory`` holds the steps done; ``path`` the file they were written to (status
    ``interrupted``, with the state to continue from: :meth:`Simulation.restore`), or None."""

    def __init__(self, signum, step, time, trajectory=None, path=None):
        name = signal.Signals(signum).name
        SimulationError.__init__(self, f"interrupted by {name}", step, time, trajectory)
        self.signal, self.path = signum, path


class EnergyWarning(RuntimeWarning):
    """Issued at the end of :meth:`Simulation.run` when steps were flagged ``ENERGY_GAIN``
    (see the module docstring, "Run health")."""


class _Basis:
    """The per-contact bases (r, 2, 2) and branches of a fused step (what world_force reads)."""

    def __init__(self, basis, kinetic):
        self.basis, self.kinetic = basis, kinetic


def _blas_limit(threads):
    """threadpoolctl's scoped limit on BLAS threads, or nothing for ``None``."""
    if threads is None:
        return contextlib.nullcontext()
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=threads, user_api="blas")


def choose_methods(friction, method: str, fallback_method) -> tuple[str, str | None]:
    """(method, fallback method) for a friction model: ``method`` checked against the methods of
    the model's problem (bounded LCP or friction contact), ``fallback_method="auto"`` resolved
    from :data:`_FALLBACKS`, ``None`` kept (no fallback)."""
    allowed = friction_contact.METHODS if friction.formulation == FRICTION_CONTACT else solvers.METHODS
    if method not in allowed:
        raise ValueError(
            f"unknown method {method!r} for friction model {friction.name!r}; choose one of {sorted(allowed)}"
        )
    if fallback_method == "auto":
        fallback_method = _FALLBACKS.get(method)
    if fallback_method is not None and fallback_method not in allowed:
        raise ValueError(f"unknown fallback_method {fallback_method!r}; choose one of {sorted(allowed)}")
    return method, fallback_method


def accept_or_fallback(result, retry, fallback_method, step: int, t: float):
    """(result, False) if it succeeded; else (retry(fallback_method), True) if that succeeded;
    else :class:`SimulationError` at ``step``, ``t`` -- a failed answer is never returned."""
    if result.success:
        return result, False
    if fallback_method is None:
        raise SimulationError(f"{result.method} failed: {result.status.name}: {result.message}", step, t,
                              result=result)  # fmt: skip
    second = retry(fallback_method)
    if not second.success:
        raise SimulationError(
            f"{result.method} failed ({result.status.name}: {result.message}) and the "
            f"fallback {second.method} failed too ({second.status.name}: {second.message})",
            step,
            t,
            result=second,
        )
    return second, True


def _sparse_rows(A_block, A_body, m, n):
    """A (m, n) as a CSR matrix from its row blocks (Kinematics.A_block, A_body): the bilateral
    rows without the dense (m, n) array, whose size grows with the square of a chain's length."""
    rows, slots = np.nonzero(A_body >= 0)
    columns = 6 * A_body[rows, slots][:, None] + np.arange(6)
    return sp.csr_matrix((A_block[rows, slots].reshape(-1), (np.repeat(rows, 6), columns.reshape(-1))), shape=(m, n))


def _friction_on_end_velocity(block: FrictionBlock, v: np.ndarray) -> FrictionBlock:
    """Moreau's midpoint scheme (module docstring): a friction block the model built for the
    whole step h -- rows F v+ + C x + P (h lam_N) + c = w over impulses x in [lo, hi] -- as rows
    in the midpoint velocity v_m = (v + v+)/2 and the impulses over h/2 (x' = x/2, h/2 lam_N):
    F v_m + C x' + P (h/2 lam_N) + (c - F v)/2 = w/2, x' in [lo/2, hi/2]. Each row is the model's
    own, halved, so the friction law holds at the end velocity v+ as in the first-order step."""
    return dataclasses.replace(block, c=0.5 * (block.c - block.F @ v), lo=0.5 * block.lo, hi=0.5 * block.hi)


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
    position_update : ``"symplectic"`` (default: q+ with v+), ``"paper"`` (Eq. 7, known v) or
        ``"midpoint"`` (Moreau's midpoint scheme, second order on smooth phases); see the module
        docstring for why and what each costs.
    gyroscopic : ``"midpoint"`` (implicit midpoint rule for omega x I omega, energy-conserving) or
        ``"explicit"`` (the paper's c at the known omega); default: ``"midpoint"`` with the v+
        update, ``"explicit"`` with ``"paper"``.
    energy_check : ``"warn"`` (default), ``"stop"`` or ``"off"`` -- what :meth:`run` does about a
        step whose energy rises more than ``energy_tolerance`` (module docstring, "Run health").
    energy_tolerance : relative to the run's energy scale S_n, > 0 (default 1e-3).
    stabilization : beta in [0, 1] for penetration and holonomic drift (see module docstring).
    normal_force_iterations : extra fixed-point passes toward mu lam_N+ (>= 0).
    fallback_method : method used when the first fails (``"auto"``, the default, picks it: lemke
        for judice-pires and vice versa; for coulomb ``prox`` after nsgs and newton, nsgs after
        the others); ``None`` stops at the first failure. (Here ``"auto"`` means "pick"; the
        friction-contact *method* named ``auto`` can be the main method, not the fallback.)
    solver_options : dict of options for ``method`` (see each method's ``Options``).
    static_threshold : slip speed (m/s) below which a contact counts as sticking when choosing
        between mu_s and mu_k for box, polygonal and coulomb (the regularized model uses its v_th).
    fused : for ``regularized`` and ``box`` with ``judice-pires``, assemble and run the first
        pivoting pass in one compiled call (:func:`lcpdyn.kernels.fused_step`). Same problem, same
        algorithm, same residual test, bit-identical results; ``False`` runs the general path
        (separately timed assembly and solve).
    blas_threads : BLAS threads while :meth:`run` runs (threadpoolctl, scoped to the run and
        restored after it; default 1). The per-step dense work is small (a few to a few hundred
        unknowns): threads cost more in synchronization than they bring. ``None`` leaves the
        process's setting alone.
    sparse : ``"auto"`` (default), ``True`` or ``False``: solve the step island by island
        (:mod:`lcpdyn.islands`: one small problem per body with contacts, cost linear in the
        number of bodies) instead of as one dense problem. ``"auto"`` takes the islands whenever
        the step splits into several -- two or more bodies and no bilateral rows (joints and
        ideal rolling couple velocities), and for coulomb the method nsgs -- and the dense path
        otherwise. Regularized and box with judice-pires on the fused path run every island in
        one compiled loop; any other bounded-LCP model (polygonal, continuous, a user's model
        through the friction-model protocol) or method assembles and solves each island from the
        model's block. ``True`` raises if the step does not split. With one body the island is
        the dense problem itself; the two compiled loops may still differ in rounding, which on
        a statically indeterminate contact set (a block on four corners) can pick another of its
        equally valid load sharings. ``"condensed"``: eliminate the velocities and bilateral
        multipliers by the sparse KKT factorization (:func:`lcpdyn.kkt.solve_kkt`) and solve the
        bounded LCP of the contacts alone (:meth:`_solve_condensed`, the cost linear in a chain of
        bodies such as a beam); ``"auto"`` takes it when bilateral rows couple an island of more
        than :data:`lcpdyn.kkt.SPARSE_SIZE` velocities and rows.
    compiled_loop : ``True``: :meth:`run` advances in chunks of steps, each chunk one compiled
        call holding the whole step (:mod:`lcpdyn.compiled_loop`: kinematics, Eq. 30 and its
        Júdice–Pires pivoting in one XLA program), for small scenes of the regularized or box
        model; every step's answer is still measured by the framework's residual on the host,
        and a step that fails anything is redone by the ordinary step. ``loop_steps`` counts the
        steps taken each way. A scene it cannot take is a ValueError naming why. :meth:`step`
        and :meth:`advance` always take the ordinary step. Default ``False``.
    scene : the record of a ready scene that built ``model`` -- ``{"name": <a key of
        scenes.SCENES>, **its parameters}`` (what :meth:`scenes.scene.Scene.simulation` passes).
        Written to every output file, so that the run can be rebuilt from the file alone
        (:func:`lcpdyn.rebuild.simulation_from_parameters`,
        :func:`lcpdyn.rebuild.simulation_from_trajectory`, :func:`lcpdyn.rebuild.resume`). A model
        built in Python has none; its files are still complete for analysis, and continuing one
        takes the same Simulation and :meth:`restore`.
    """

    def __init__(
        self,
        model: Model,
        friction="regularized",
        dt: float = 1e-3,
        *,
        method: str | None = None,
        tolerance: float = 1e-9,
        position_update: str = "symplectic",
        stabilization: float = 1.0,
        normal_force_iterations: int = 0,
        fallback_method: str | None = "auto",
        solver_options: dict | None = None,
        fused: bool = True,
        static_threshold: float = 0.01,
        gyroscopic: str | None = None,
        energy_check: str = "warn",
        energy_tolerance: float = 1e-3,
        blas_threads: int | None = 1,
        scene: dict | None = None,
        sparse="auto",
        compiled_loop: bool = False,
    ):
        if not isinstance(model, Model):
            raise TypeError(f"model must be an lcpdyn Model, got {type(model).__name__}")
        if scene is not None:
            if not isinstance(scene, dict) or not isinstance(scene.get("name"), str):
                raise ValueError(f"scene must be a dict with the scene's 'name' and its parameters, got {scene!r}")
            try:
                json.dumps(scene, allow_nan=True)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"scene record {scene!r} is not plain data (numbers, strings, lists): {exc}") from None
        self.scene = None if scene is None else dict(scene)
        self.model = model
        self.friction = make_friction(friction)
        self.dt = positive("dt", dt)
        if self.dt < MIN_DT:
            raise ValueError(
                f"dt = {dt!r} s is below the smallest step size MIN_DT = {MIN_DT:g} s (see lcpdyn.stepper.MIN_DT)"
            )
        if energy_check not in ("warn", "stop", "off"):
            raise ValueError(f"energy_check must be 'warn', 'stop' or 'off', got {energy_check!r}")
        self.energy_check = energy_check
        if blas_threads is not None and (
            isinstance(blas_threads, bool) or not isinstance(blas_threads, int) or blas_threads < 1
        ):
            raise ValueError(f"blas_threads must be an integer >= 1 or None, got {blas_threads!r}")
        self.blas_threads = blas_threads
        self.energy_tolerance = positive("energy_tolerance", energy_tolerance)
        self.tolerance = positive("tolerance", tolerance)
        self.static_threshold = finite_number("static_threshold", static_threshold)
        if self.static_threshold < 0:
            raise ValueError(f"static_threshold must be >= 0, got {static_threshold!r}")
        if position_update not in POSITION_UPDATES:
            raise ValueError(f"position_update must be one of {POSITION_UPDATES}, got {position_update!r}")
        self.position_update = position_update
        if gyroscopic is None:
            gyroscopic = "explicit" if position_update == "paper" else "midpoint"
        if gyroscopic not in ("explicit", "midpoint"):
            raise ValueError(f"gyroscopic must be 'explicit' or 'midpoint', got {gyroscopic!r}")
        if position_update == "midpoint" and any(c.normal_law is not None for c in model.contacts):
            raise ValueError("position_update='midpoint' takes rigid contacts only (this model has compliant ones)")
        stiffness, damping = model.holonomic_compliance()
        soft = np.flatnonzero(np.isfinite(stiffness))
        if soft.size and position_update != "symplectic":
            raise ValueError(
                f"position_update={position_update!r}: compliant bilateral rows (beams, constraints with a "
                "stiffness) need position_update='symplectic' (their elastic force is implicit in the "
                "configuration v+ moves)"
            )
        self._soft_rows, self._soft_stiffness, self._soft_damping = soft, stiffness[soft], damping[soft]
        self._bilateral_compliance = np.zeros(model.n_bilateral)
        if position_update == "midpoint" and gyroscopic != "midpoint":
            raise ValueError(
                "position_update='midpoint' needs gyroscopic='midpoint' (the explicit c = omega x I omega "
                "would make the scheme first order)"
            )
        self.gyroscopic = gyroscopic
        self.stabilization = finite_number("stabilization", stabilization)
        if not 0.0 <= self.stabilization <= 1.0:
            raise ValueError(f"stabilization must be in [0, 1], got {stabilization!r}")
        if (
            isinstance(normal_force_iterations, bool)
            or not isinstance(normal_force_iterations, int)
            or normal_force_iterations < 0
        ):
            raise ValueError(f"normal_force_iterations must be an integer >= 0, got {normal_force_iterations!r}")
        self.normal_force_iterations = normal_force_iterations
        self.coulomb = self.friction.formulation == FRICTION_CONTACT  # the exact cone's problem
        self._basis_passes = int(getattr(self.friction, "basis_passes", 0))
        self.method, self.fallback_method = choose_methods(
            self.friction, method or self.friction.default_method, fallback_method
        )
        self.solver_options = dict(solver_options or {})
        if not self.coulomb:
            self._options, self._warm_capable, self._blocks_by_contact = {}, {}, {}
            for name in {self.method, self.fallback_method} - {None}:
                module = solvers.METHODS[name]
                given = self.solver_options if name == self.method else {}
                self._options[name] = build_options(module.Options, name, given)
                self._warm_capable[name] = name == "judice-pires"  # its run() takes warm_start=
                # block-gs: one block per contact unless the caller chose blocks
                self._blocks_by_contact[name] = "blocks" in {f.name for f in dataclasses.fields(module.Options)} and (
                    "blocks" not in given
                )
        if not isinstance(fused, bool):
            raise ValueError(f"fused must be True or False, got {fused!r}")
        # the model's rows as lcpdyn's compiled kernels build them (regularized, box), or None
        # the step Eq. (30) is posed over: h, or h/2 to the midpoint in Moreau's midpoint scheme
        self._h_solve = 0.5 * self.dt if position_update == "midpoint" else self.dt
        self._rows = None if self.coulomb else compiled_rows(self.friction, self._h_solve)
        self._fused = (
            fused
            and position_update != "midpoint"
            and self.method == "judice-pires"
            and self._rows is not None
            and self.solver_options.get("warm_start") is None
        )
        self.evaluate = model.compile()
        self._mass, self._inertia = model.body_masses()  # the blocks of M (the dense M only on demand)
        self.mu = model.friction_coefficients()
        self.mu_static = model.friction_coefficients(static=True)
        self._two_coefficients = bool(np.any(self.mu_static != self.mu))
        self._profiles = [
            (i, c.friction_profile) for i, c in enumerate(model.contacts) if c.friction_profile is not None
        ]
        self._compliant = [(i, c.normal_law) for i, c in enumerate(model.contacts) if c.normal_law is not None]
        self._normal_compliance = np.zeros(len(model.contacts))
        self.n_holonomic = sum(c.size for c in model.holonomic)
        self._disks = [i for i, c in enumerate(model.contacts) if c.tilt_of is not None]  # contacts with a tilt check
        self.has_disks = bool(self._disks)
        self._nonconservative = any(isinstance(f, BodyForce) or f.damping > 0 for f in model.forces)
        self._driven = any(c.time_dependent for c in model.holonomic) or any(
            c.rhs is not None for c in model.nonholonomic
        )
        self._bilateral_rows = (
            [c.name for c in model.holonomic for _ in range(c.size)]
            + [c.name for c in model.nonholonomic for _ in range(c.size)]
            + [
                f"ideal rolling/spin of {model.describe_contact(i)}"
                for i, c in enumerate(model.contacts)
                for _ in range(c.bilateral_rows)
            ]
        )
        self._islands = self._choose_islands(sparse, fused)
        gravity = float(np.linalg.norm(model.gravity))
        # D_n carries the O(h) term of the scheme's modified energy (module docstring): +h/2 P_c with v+,
        # -h/2 P_c with Eq. (7)
        # (none with the midpoint scheme, which keeps E exactly under a constant force)
        self._shadow = 0.5 * self.dt * {"symplectic": 1.0, "paper": -1.0, "midpoint": 0.0}[position_update]
        self._energy_floor = sum(
            b.mass * gravity * math.sqrt(np.trace(b.inertia_matrix) / b.mass) for b in model.bodies
        )
        size = model.n_velocities + model.n_bilateral + len(model.contacts)
        self._size = size + (2 * len(model.contacts) if self._rows is not None else 0)
        self._no_warm = np.zeros(self._size, np.int8)
        if not isinstance(compiled_loop, bool):
            raise ValueError(f"compiled_loop must be True or False, got {compiled_loop!r}")
        self._loop = None
        if compiled_loop:
            from .compiled_loop import CompiledLoop, unsupported

            reasons = unsupported(self)
            if reasons:
                raise ValueError(
                    "compiled_loop=True: this scene cannot run in the compiled loop: " + "; ".join(reasons)
                )
            self._loop = CompiledLoop(self)
        self.loop_steps = {"compiled": 0, "ordinary": 0}
        self.reset()

    def _choose_islands(self, sparse, fused):
        """The island layout (:mod:`lcpdyn.islands`) when the step is solved island by island,
        else None (the dense path). Without bilateral rows: one island per body with contacts
        (:class:`~lcpdyn.islands.Islands`, the compiled per-body kernels); with them: the bodies
        coupled by the rows' structural pattern (:class:`~lcpdyn.islands.BodyGroups`). Either
        way ``self._groups`` holds the groups the general island path iterates over."""
        if sparse not in ("auto", True, False, "condensed"):
            raise ValueError(f"sparse must be 'auto', True, False or 'condensed', got {sparse!r}")
        model = self.model
        self._condensed = False
        nb = len(model.bodies)
        index = model.index()
        contact_body = np.array([index[id(c.body)] for c in model.contacts], np.int64)
        self._coupled = model.n_bilateral > 0
        reasons = []
        if self._coupled:
            groups = BodyGroups(nb, contact_body, self._structural_pattern())
            if groups.sparsity_error is not None:
                j = groups.sparsity_error
                reasons.append(f"the bilateral row of {self._bilateral_rows[j]!r} (row {j}) touches no body")
            elif not groups.splits:
                reasons.append(
                    f"the model's {model.n_bilateral} bilateral rows (joints, ideal rolling) couple all "
                    "its bodies into one island"
                )
        else:
            groups = BodyGroups(nb, contact_body, np.zeros((0, nb), bool))
        if self.coulomb and self.method != "nsgs":
            reasons.append(f"method {self.method!r} (the islands of the exact cone are solved by 'nsgs')")
        if self.position_update == "midpoint":
            reasons.append("position_update='midpoint' (solved whole: its friction rows are rewritten on v+)")
        condensable = self._coupled and not self.coulomb and self.position_update != "midpoint"
        if sparse == "condensed" or (sparse == "auto" and condensable and groups.largest > SPARSE_SIZE):
            if not condensable:
                raise ValueError(
                    "sparse='condensed' eliminates bilateral rows for a bounded-LCP friction model: this "
                    "simulation has " + ("no bilateral rows" if not self._coupled else "coulomb or the midpoint scheme")
                )
            self._condensed = True
            return None
        if sparse is False or (sparse == "auto" and (reasons or nb == 1)):
            return None  # one body: the island is the whole problem, the dense path solves it
        if reasons:
            raise ValueError("sparse=True: the step cannot be split into islands: " + "; ".join(reasons))
        from .islands import Islands

        self._groups = groups
        if self.coulomb:
            from solvers.friction_contact import Options as FrictionContactOptions

            self._nsgs_options = build_options(FrictionContactOptions, "nsgs", self.solver_options)
        return groups if self._coupled else Islands(contact_body)

    def _structural_pattern(self) -> np.ndarray:
        """(m, nb) bool: the bodies each bilateral row can touch -- the pattern of A at the
        initial state and at two random states (random positions, unit quaternions, velocities
        and time), so a user's constraint is split correctly without declaring its bodies; an
        entry zero at all three is structurally zero (each step still checks its A against it,
        :meth:`~lcpdyn.islands.BodyGroups.conforms`)."""
        nb = len(self.model.bodies)
        q0, v0 = self.model.initial_state()
        k = self.evaluate(q0, v0, 0.0)
        pattern = row_bodies(k.A_block, k.A_body, nb)
        rng = np.random.default_rng(20261125)
        for _ in range(2):
            q = q0.reshape(nb, 7).copy()
            q[:, :3] += rng.normal(size=(nb, 3))
            quaternion = rng.normal(size=(nb, 4))
            q[:, 3:] = quaternion / np.linalg.norm(quaternion, axis=1, keepdims=True)
            k = self.evaluate(q.reshape(-1), rng.normal(size=v0.shape), float(rng.uniform(0.1, 1.0)))
            pattern |= row_bodies(k.A_block, k.A_body, nb)
        return pattern

    @property
    def M(self) -> np.ndarray:
        """The dense mass matrix (n, n), built on first use (the step itself works with the blocks)."""
        if getattr(self, "_dense_mass", None) is None:
            self._dense_mass = self.model.mass_matrix()
        return self._dense_mass

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
        k = self.evaluate(self.q, self.v, self.t)
        kinetic = kinetic_energy(self._mass, self._inertia, self.v)
        if not math.isfinite(k.potential_energy):
            culprits = self.model.diagnose(self.q, self.v, self.t)
            raise ValueError(
                "the initial potential energy is not finite (V = "
                f"{float(k.potential_energy)!r} J){': ' + '; '.join(culprits) if culprits else ''}"
            )
        # the energy budget of "Run health" (module docstring), kept across run() calls until reset
        self._potential_start = k.potential_energy
        self._work = 0.0  # W_n, J
        self._lowest = k.potential_energy + kinetic + self._shadow * k.conservative_power  # min_k D_k
        self._scale = max(self._energy_floor, kinetic)  # S_n

    def parameters(self) -> dict:
        """Everything that determines a run (recorded in output files)."""
        return {
            "lcpdyn_version": __version__,
            "dt": self.dt,
            "friction": self.friction.parameters(),
            "method": self.method,
            "fallback_method": self.fallback_method,
            "tolerance": self.tolerance,
            "position_update": self.position_update,
            "gyroscopic": self.gyroscopic,
            "energy_check": self.energy_check,
            "energy_tolerance": self.energy_tolerance,
            "stabilization": self.stabilization,
            "normal_force_iterations": self.normal_force_iterations,
            "fused": self._fused,
            "sparse": "condensed" if self._condensed else self._islands is not None,
            "compiled_loop": self._loop is not None,
            "static_threshold": self.static_threshold,
            "solver_options": {k: v for k, v in self.solver_options.items() if k != "warm_start"},
            "bodies": [
                {
                    "name": b.name,
                    "mass": b.mass,
                    "inertia": b.inertia_matrix.tolist(),
                    "position": b.position.tolist(),
                    "orientation": b.orientation.tolist(),
                    "velocity": b.velocity.tolist(),
                    "angular_velocity": b.angular_velocity.tolist(),
                }
                for b in self.model.bodies
            ],
            "contacts": [
                {
                    "type": type(c).__name__,
                    "body": c.body.name,
                    "mu": c.mu,
                    "mu_static": c.mu_static,
                    "normal_law": None
                    if c.normal_law is None
                    else {
                        "type": type(c.normal_law).__name__,
                        "coefficients": list(c.normal_law.coefficients),
                        "damping": c.normal_law.damping,
                    },
                    "friction_profile": c.friction_profile is not None,
                    "plane_normal": c.plane.normal.tolist(),
                    "plane_point": c.plane.point.tolist(),
                    **({"radius": c.radius} if hasattr(c, "radius") else {}),
                }
                for c in self.model.contacts
            ],
            "gravity": self.model.gravity.tolist(),
            **({"scene": self.scene} if self.scene is not None else {}),
        }

    def energy(self, kinematics=None) -> float:
        """Mechanical energy of the current state (J): kinetic v . M v / 2 plus the potential of
        :meth:`lcpdyn.model.Model.potential_energy` (gravity, springs, compliant contacts)."""
        k = kinematics or self.evaluate(self.q, self.v, self.t)
        return k.potential_energy + kinetic_energy(self._mass, self._inertia, self.v)

    # --- one step -----------------------------------------------------------------------
    @property
    def state(self) -> StepState:
        """The simulation's current :class:`~lcpdyn.step_state.StepState` (what :meth:`step`
        advances; the arrays are the simulation's own, never modified in place)."""
        return StepState(
            self.q, self.v, self.t, self.steps_done, self.normal_force, self.friction_force,
            self.active_set, self.impulse_guess,
        )  # fmt: skip

    def step(self, kinematics=None) -> StepResult:
        """Advance the simulation's own state one step (:meth:`advance` on :attr:`state`, whose
        result becomes the new state); returns the :class:`~lcpdyn.step_result.StepResult`.
        Raises :class:`SimulationError` on an invalid state or a failed solve (without a
        trajectory: :meth:`run` attaches it), leaving the state as it was."""
        state, out = self.advance(self.state, kinematics)
        self.q, self.v, self.t, self.steps_done = state.q, state.v, state.t, state.steps_done
        self.normal_force, self.friction_force = state.normal_force, state.friction_force
        self.active_set, self.impulse_guess = state.active_set, state.impulse_guess
        return out

    def advance(self, state: StepState, kinematics=None) -> tuple[StepState, StepResult]:
        """One step from an explicit ``state`` (:class:`~lcpdyn.step_state.StepState`): returns
        (the next state, the :class:`~lcpdyn.step_result.StepResult`) and changes neither
        ``state`` nor the simulation's own state -- the step is a function of the state, the
        model's numbers and the simulation's options (MuJoCo's ``mj_step(model, data)`` with
        data passed in and out). The result holds the forces, slip, statuses, the step's
        problem when it was posed whole, ``timing`` = (assembly, solve, rest) in seconds
        (assembly includes the Schur elimination for coulomb; rest is the gap terms, position
        update and bookkeeping) and ``work`` (J), the work of non-conservative loads and driven
        constraints in the step. ``kinematics``: the compiled kinematics at ``state`` if already
        evaluated (:meth:`run` passes it). Raises :class:`SimulationError` on an invalid state
        or a failed solve."""
        if not isinstance(state, StepState):
            raise TypeError(f"advance expects a StepState (Simulation.state), got {type(state).__name__}")
        for name in ("q", "v", "normal_force", "friction_force"):
            value, own = getattr(state, name), getattr(self, name)
            if not isinstance(value, np.ndarray) or value.shape != own.shape:
                raise ValueError(
                    f"StepState.{name}: expected an array of shape {own.shape} for this model, got "
                    f"{getattr(value, 'shape', type(value).__name__)}"
                )
        begin = time.perf_counter()
        self._clock = [0.0, 0.0]
        midpoint = self.position_update == "midpoint"
        if midpoint:  # Moreau's midpoint scheme (module docstring): Eq. (30) over h/2 at q_m = q + h/2 v
            q_start = update_positions(state.q, state.v, 0.5 * self.dt)
            k = self.evaluate(q_start, state.v, state.t + 0.5 * self.dt)
        else:
            q_start = state.q
            k = kinematics or self.evaluate(state.q, state.v, state.t)
        h = self._h_solve
        if not k.finite:
            raise self._step_error(state, self._nonfinite_kinematics(state, k))
        if k.tilt_margin < 0.0:
            raise self._step_error(state, self._flat_disk(k))
        n, r, m = k.n_velocities, k.gap.shape[0], k.A_body.shape[0]
        v = state.v
        self._mu_now, self._mu_static_now = self._coefficients_now(state, k)
        paper = self.position_update == "paper"
        g = k.holonomic_error
        if midpoint:
            e_N, g = self._midpoint_rows(state, k, q_start, v)
        else:
            e_N = gap_terms_blocks(k.gap, k.N_block, k.contact_body, v, h, paper, self.stabilization)
        if self._compliant:
            e_N = self._compliant_rows(k, v, h, paper, e_N)
        if g.size and not midpoint:  # A v+ = -dg/dt - beta g~/h (rheonomic rate, drift at the configuration v+ moves)
            A_v = np.einsum("mkj,mkj->m", k.A_block[: g.size], v.reshape(-1, 6)[k.A_body[: g.size]])  # pads are 0
            g_pred = g + h * (A_v + k.holonomic_rate) if paper else g
            g = -self.stabilization * g_pred / h - k.holonomic_rate
            if self._soft_rows.size:  # compliant rows (module docstring), linearized about q~ = q + h Gamma v
                s, stiffness, damping = self._soft_rows, self._soft_stiffness, self._soft_damping
                ahead = self.evaluate(update_positions(state.q, v, h), v, state.t + h)
                if not ahead.finite:
                    message = self._nonfinite_kinematics(state, ahead)
                    raise self._step_error(state, "the compliant rows' predicted configuration: " + message)
                effective = h * stiffness + damping
                predicted = ahead.holonomic_error[s] - h * A_v[s]
                g[s] = -(stiffness * predicted + damping * k.holonomic_rate[s]) / effective
                self._bilateral_compliance[s] = 1.0 / (h * effective)
        u = np.concatenate([g, k.nonholonomic_rhs])
        if self.gyroscopic == "midpoint":
            rhs, newton, body = gyroscopic_midpoint(
                self._mass, self._inertia, v, k.force, self.dt, _NEWTON_TOLERANCE, _NEWTON_ITERATIONS
            )
            if midpoint:  # over h/2 to the step's midpoint x = (omega + omega*)/2: (M v* + h f + M v)/2
                rhs = 0.5 * (rhs + momentum(self._mass, self._inertia, v))
            if not newton <= _NEWTON_TOLERANCE:
                omega = float(np.linalg.norm(v[6 * body + 3 : 6 * body + 6]))
                raise self._step_error(
                    state,
                    f"body {self.model.bodies[body].name!r}: the implicit midpoint step of the "
                    f"gyroscopic term did not converge (relative residual {newton:.3g} after "
                    f"{_NEWTON_ITERATIONS} Newton iterations, h |omega| = {h * omega:.3g})",
                )
        else:
            rhs = momentum(self._mass, self._inertia, v) + h * k.force
        split = self._islands is not None
        if split and self._coupled and not self._groups.conforms(k.A_block, k.A_body):
            # a row reaches a body outside its structural island: this step is solved whole, cold
            split, state = False, dataclasses.replace(state, active_set=None, impulse_guess=None)
        first = out = None
        for _pass in range(2 if midpoint else 1):
            if out is not None:  # the midpoint scheme's second pass: forces at the first pass's v_m, rows about its v+
                first = out
                forces = self.evaluate(q_start, out.v, state.t + h)
                if not forces.finite:
                    raise self._step_error(state, self._nonfinite_kinematics(state, forces))
                rhs = momentum(self._mass, self._inertia, v) + h * forces.force
                e_N, g = self._midpoint_rows(state, k, q_start, 2.0 * out.v - v)
                u = np.concatenate([g, k.nonholonomic_rhs])
                state = dataclasses.replace(
                    state,
                    active_set=state.active_set if out.active_set is None else out.active_set,
                    impulse_guess=state.impulse_guess if out.impulse_guess is None else out.impulse_guess,
                )
            self._check_inputs(state, rhs, e_N, u)
            if split:
                out = self._solve_islands(state, k, rhs, u, e_N, h)
            elif self.coulomb:
                out = self._solve_coulomb(state, k, rhs, u, e_N, h)
            elif self._condensed:
                out = self._solve_condensed(state, k, rhs, u, e_N, h)
            else:
                out = self._solve_lcp(state, k, rhs, u, e_N, h, n, m, r)
                if self._islands is not None:  # a whole step of an island run: its active set is not in island order
                    out.active_set = None
        if first is not None:
            out.iterations += first.iterations
            out.fallback = out.fallback or first.fallback
        v_new = out.v
        if midpoint:  # v_m solved: v+ = 2 v_m - v, q+ = q_m + h/2 v+; impulses over the whole step
            v_new = out.v = 2.0 * v_new - v
            out.bilateral = 2.0 * out.bilateral
        out.slip_world = slip_world_blocks(k.D_block, k.contact_body, v_new, k.tangent)
        out.gap = k.gap
        q_new = update_positions(q_start, v if paper else v_new, h)
        self._check_state(state, q_new, v_new, out)
        work = 0.0
        if self._nonconservative:  # h f_nc . (v + v+)/2; with compliant rows h f_nc . v+ ("Run health")
            f_nc = (k if first is None else forces).nonconservative_force
            if self._soft_rows.size:
                work = self.dt * float(f_nc @ v_new)
            else:
                work = 0.5 * self.dt * float(f_nc @ (v + v_new))
        if self._driven:  # (h lam) . u_drive
            work += float(out.bilateral @ np.concatenate([-k.holonomic_rate, k.nonholonomic_rhs]))
        out.work = work
        following = StepState(
            q_new,
            v_new,
            (state.steps_done + 1) * self.dt,
            state.steps_done + 1,
            out.normal_force,
            out.friction_force,
            state.active_set if out.active_set is None else out.active_set,
            state.impulse_guess if out.impulse_guess is None else out.impulse_guess,
        )
        total = time.perf_counter() - begin
        out.timing = (self._clock[0], self._clock[1], total - self._clock[0] - self._clock[1])
        return following, out

    # --- health checks (module docstring, "Run health") -----------------------------------
    def _error(self, message, result=None) -> SimulationError:
        return self._step_error(self.state, message, result)

    @staticmethod
    def _step_error(state, message, result=None) -> SimulationError:
        return SimulationError(message, state.steps_done, state.t, result=result)

    def _nonfinite_kinematics(self, state, k) -> str:
        """Names what gave a NaN or inf in the kinematics at the current state."""
        culprits = self.model.diagnose(state.q, state.v, state.t)
        fields = [
            name
            for name in (
                "force",
                "gap",
                "N",
                "D",
                "A",
                "holonomic_error",
                "nonholonomic_rhs",
                "point",
                "normal",
                "tangent",
                "sin_tilt",
                "tilt_margin",
                "potential_energy",
                "holonomic_rate",
                "nonconservative_force",
                "conservative_power",
            )
            if not np.all(np.isfinite(getattr(k, name)))
        ]
        where = f"NaN or inf in the kinematics ({', '.join(fields)}) at t = {state.t:.6g} s"
        if culprits:
            return f"{where}: " + "; ".join(culprits)
        if "force" in fields:
            j = first_nonfinite(k.force)
            body = self.model.bodies[j // 6].name
            return f"{where}: the generalized force f_app - c of body {body!r} (entry {j}) = {float(k.force[j])!r}"
        return where

    def _flat_disk(self, k) -> str:
        thresholds = np.array([self.model.contacts[i].min_sin_tilt for i in self._disks])
        j = int(np.argmin(k.sin_tilt - thresholds))
        return (
            f"{self.model.describe_contact(self._disks[j])} lies flat on its plane (|n x axis| = "
            f"{k.sin_tilt[j]:.3g} < min_sin_tilt = {thresholds[j]:g}): the single-point disk contact is undefined"
        )

    def _check_inputs(self, state, rhs, e_N, u):
        """The right-hand sides of Eq. (30) must be finite before any solver sees them."""
        if all_finite(rhs, e_N, u, _EMPTY):
            return
        j = first_nonfinite(rhs)
        if j >= 0:
            body = self.model.bodies[j // 6].name
            raise self._step_error(
                state,
                f"body {body!r}: the momentum M v + h f of the step is not finite (entry {j} = {float(rhs[j])!r})",
            )
        j = first_nonfinite(e_N)
        if j >= 0:
            law = self.model.contacts[j].normal_law
            what = "gap term Phi~/h" if law is None else f"compliant row of its {type(law).__name__}"
            raise self._step_error(
                state, f"{self.model.describe_contact(j)}: the {what} is not finite ({float(e_N[j])!r})"
            )
        j = first_nonfinite(u)
        if j >= 0:
            raise self._step_error(
                state,
                f"constraint {self._bilateral_rows[j]!r}: the right-hand side u of its row is not "
                f"finite ({float(u[j])!r})",
            )

    def _check_state(self, state, q, v, out):
        """The new state and contact forces must be finite (names the body or contact)."""
        if all_finite(q, v, out.normal_force, out.friction_force.reshape(-1)):
            return
        for array, size, names in (
            (q, 7, ("position", "position", "position", "orientation", "orientation", "orientation", "orientation")),
            (v, 6, ("velocity",) * 3 + ("angular velocity",) * 3),
        ):
            j = first_nonfinite(array)
            if j >= 0:
                body = self.model.bodies[j // size].name
                raise self._step_error(
                    state,
                    f"body {body!r}: the {names[j % size]} became non-finite in the step "
                    f"({float(array[j])!r}); the solve returned v+ = {out.v.tolist()}",
                )
        for key in ("normal_force", "friction_force"):
            j = first_nonfinite(getattr(out, key).reshape(-1))
            if j >= 0:
                contact = j if key == "normal_force" else j // 3
                raise self._step_error(
                    state,
                    f"{self.model.describe_contact(contact)}: the {key.replace('_', ' ')} is not "
                    f"finite ({float(getattr(out, key).reshape(-1)[j])!r})",
                )

    def _midpoint_rows(self, state, k, q_mid, guess):
        """Moreau's midpoint scheme (module docstring): the gap rows' e_N and the holonomic rows'
        right-hand sides in terms of v_m, from the constraints at the next midpoint
        q_m' = q_m + h v+, predicted at q_m + h v^ (``guess`` v^ of v+: the known v in the first
        pass, the first pass's v+ in the second) and linearized about it with the N at q_m:
        Phi(q_m') = Phi^ + h N (v+ - v^), v+ = 2 v_m - v, so Phi(q_m') >= 0 reads
        N v_m - N (v + v^)/2 + Phi^/(2h) >= 0 (scaled by 1/2; the same with A, g for the holonomic
        rows, whose predicted g^ holds the rheonomic motion up to t + 3h/2). The linearization
        errs by h (N(q^) - N(q_m)) (v+ - v^) = O(h^2 |v+ - v^|): O(h^3) in the first pass, O(h^4)
        in the second -- what a local error O(h^3) needs. Of the penetration or drift at q_m only
        the fraction ``stabilization`` is removed."""
        h, v = self.dt, state.v
        beta = self.stabilization
        ahead_q = update_positions(update_positions(q_mid, guess, 0.5 * h), guess, 0.5 * h)  # as q_m' is made
        ahead = self.evaluate(ahead_q, guess, state.t + 1.5 * h)
        if not ahead.finite:
            raise self._step_error(
                state, "the midpoint scheme's predicted configuration: " + self._nonfinite_kinematics(state, ahead)
            )
        both = (v + guess).reshape(-1, 6)
        closing = 0.5 * np.einsum("ij,ij->i", k.N_block, both[k.contact_body])
        target = ahead.gap - (1.0 - beta) * np.minimum(k.gap, 0.0)
        e_N = target / (2.0 * h) - closing
        g = k.holonomic_error
        if g.size:
            A_v = 0.5 * np.einsum("mkj,mkj->m", k.A_block[: g.size], both[k.A_body[: g.size]])  # pads are 0
            g = A_v - (ahead.holonomic_error - (1.0 - beta) * g) / (2.0 * h)
        return e_N, g

    def _compliant_rows(self, k, v, h, paper, e_N):
        """Compliant contacts (:mod:`lcpdyn.compliance`): their rows become
        N v+ + C_N h lam_N+ - F(a~)/(F' h + c) >= 0 at the predicted approach a~ = -Phi~."""
        e_N = e_N.copy()
        for i, law in self._compliant:
            approach = -(
                k.gap[i] + h * (k.N_block[i] @ v[6 * k.contact_body[i] : 6 * k.contact_body[i] + 6])
                if paper
                else k.gap[i]
            )
            force, slope = force_and_slope(law, approach)
            # the damper acts only in contact: ahead of it (a~ <= 0) the spring alone decides whether
            # the step closes the gap, so no force acts before the surfaces touch
            effective = slope * h + (law.damping if approach > 0.0 else 0.0)
            self._normal_compliance[i] = 1.0 / (h * effective)
            e_N[i] = -force / effective
        return e_N

    def _coefficients_now(self, state, k):
        """(mu, mu_s) per contact for this step: friction profiles mu(t) first; then, with
        mu_s > mu_k, mu is mu_k where the contact slid in the previous step (|D v| >
        ``static_threshold``) and mu_s where it stuck -- unless the friction model
        ``chooses_static_coefficient`` (:mod:`lcpdyn.friction.base`): then it gets mu_k and mu_s
        as they are (the regularized model applies mu_s in its own static branch)."""
        mu, mu_static = self.mu, self.mu_static
        if self._profiles:
            mu, mu_static = mu.copy(), mu_static.copy()
            for i, profile in self._profiles:
                try:
                    value = float(profile(state.t))
                except Exception as exc:  # a user function: report it as the step's failure, keep the run
                    raise self._step_error(
                        state,
                        f"friction_profile of {self.model.describe_contact(i)} raised {type(exc).__name__}: {exc}",
                    ) from exc
                if not (np.isfinite(value) and value >= 0):
                    raise self._step_error(
                        state,
                        f"friction_profile of {self.model.describe_contact(i)} gave mu = {value!r} "
                        "(must be finite and >= 0)",
                    )
                mu[i] = mu_static[i] = value
        if not self._two_coefficients or self.friction.chooses_static_coefficient:
            return mu, mu_static
        slip = block_rows(k.D_block, k.contact_body, state.v)
        sliding = np.sqrt((slip**2).sum(axis=1)) > self.static_threshold
        return np.where(sliding, mu, mu_static), mu_static

    def _assemble(self, state, k, rhs, u, e_N, h, n, m, r, normal_force, basis_force=None):
        """Eq. (30) with the friction model's block (see :mod:`lcpdyn.friction`)."""
        rolling = self._rolling_kinematics(state, k)
        if rolling is not None:
            rolling = RollingKinematics(_scatter(rolling.spin, k.contact_body, k.n_velocities), rolling.speed)
        return self._assemble_rows(
            self.M, k.A, k.N, k.D, k.tangent, state.v, rhs, u, e_N, self._normal_compliance,
            self._bilateral_compliance, h, self._mu_now, self._mu_static_now, normal_force, state.friction_force,
            rolling, basis_force,
        )  # fmt: skip

    def _rolling_kinematics(self, state, k):
        """For a friction model with ``rolling_kinematics`` (the creep law): per contact the spin
        row blocks (r, 6) of s3 = n . omega = (R_b^T n) . omega_b over its body's velocities, and
        the rolling speed V = |P_T (v_b - v_c / 2)| (Schwab–Meijaard 2002 §3: ||c_dot - v_c/2||,
        the contact point's velocity c_dot taken as the body centre's, v_b), as a
        :class:`~lcpdyn.friction.creep.RollingKinematics`; None for other models."""
        if not getattr(self.friction, "rolling_kinematics", False):
            return None
        body = k.contact_body
        rotations = np.moveaxis(np_rotation_matrix(state.q.reshape(-1, 7)[body, 3:].T), -1, 0)  # (r, 3, 3)
        spin = np.zeros((body.shape[0], 6))
        spin[:, 3:] = np.einsum("rji,rj->ri", rotations, k.normal)
        centre = state.v.reshape(-1, 6)[body, :3]
        slip = block_rows(k.D_block, body, state.v)
        along = np.einsum("rkj,rj->rk", k.tangent, centre) - 0.5 * slip
        return RollingKinematics(spin, np.sqrt((along**2).sum(axis=1)))

    def _assemble_rows(
        self,
        M, A, N, D, tangent, v, rhs, u, e_N, CN, CA, h, mu, mu_static, normal_force, friction_force,
        rolling=None, basis_force=None,
    ):  # fmt: skip
        """(block, K, q, lo, hi) of Eq. (30) over the velocities of M and the contacts of N: the
        whole problem (:meth:`_assemble`) or one island's (:meth:`_solve_islands_general`);
        ``rolling`` the contacts' :class:`~lcpdyn.friction.creep.RollingKinematics` over the same
        velocities, for a model that asks for them; ``basis_force`` the last pass's world friction
        force in a model's ``basis_passes`` (:mod:`lcpdyn.friction.base`)."""
        extra = {} if rolling is None else {"rolling": rolling}
        if basis_force is not None:
            extra["basis_force"] = basis_force
        if self.position_update == "midpoint":  # the model's rows over the whole step, written on v+
            block = self.friction.block(
                D, v, self.dt, mu, normal_force, friction_force, tangent, mu_static=mu_static, **extra
            )
            block = _friction_on_end_velocity(block, v)
        else:
            block = self.friction.block(
                D, v, h, mu, normal_force, friction_force, tangent, mu_static=mu_static, **extra
            )
        nf, r = block.F.shape[0], N.shape[0]
        K = np.zeros((M.shape[0] + A.shape[0] + r + nf,) * 2)
        P = block.P if block.P is not None else np.zeros((nf, r))
        fill_matrix(K, M, A, N, block.F, block.G, block.C, P, CN, CA)
        qv, lo, hi = bounded_vectors(rhs, u, e_N, block.c, block.lo, block.hi)
        return block, K, qv, lo, hi

    def _call(self, method, K, qv, lo, hi, warm, layout=None):
        """Solve through the method's module with prepared options (the front door's work minus
        the input conversion: the arrays are ours; entries are still checked). ``layout`` =
        (n, m, r) of Eq. (30): with it, a method that takes blocks (block-gs) gets one block per
        contact (its normal and two friction unknowns) when the model has two friction rows per
        contact and the caller did not choose blocks."""
        problem = checked_problem(K, qv, lo, hi)
        options = self._options[method]
        if layout is not None and self._blocks_by_contact[method]:
            n, m, r = layout
            if qv.shape[0] == n + m + 3 * r:
                options = dataclasses.replace(options, blocks=contact_blocks(n, m, r))
        if warm is not None and self._warm_capable[method] and warm.shape[0] == qv.shape[0]:
            return solvers.METHODS[method].run(problem, options, self.tolerance, warm_start=warm)
        return solvers.METHODS[method].run(problem, options, self.tolerance)

    def _solve_lcp(self, state, k, rhs, u, e_N, h, n, m, r):
        normal_force = state.normal_force
        passes = 1 + self.normal_force_iterations + (1 if state.steps_done == 0 and r else 0) + self._basis_passes
        iterations = 0
        warm = state.active_set
        fallback = False
        basis_force = None
        for done in range(passes):
            start = time.perf_counter()
            if self._fused:
                block, K, qv, lo, hi, result = self._fused_pass(state, k, rhs, u, e_N, h, normal_force, warm)
                middle = time.perf_counter()
                if result is None:  # pivoting did not converge: the full method (proximal fallback)
                    result = self._call(self.method, K, qv, lo, hi, warm, (n, m, r))
            else:
                if self._basis_passes and done:  # the model's static basis from the last pass's force
                    basis_force = self.friction.world_force(result.z[n + m + r :], block, k.tangent, h)
                block, K, qv, lo, hi = self._assemble(state, k, rhs, u, e_N, h, n, m, r, normal_force, basis_force)
                middle = time.perf_counter()
                result = self._call(self.method, K, qv, lo, hi, warm, (n, m, r))
            self._clock[0] += middle - start
            self._clock[1] += time.perf_counter() - middle
            result, retried = self._accept(
                state, result, lambda method: self._call(method, K, qv, lo, hi, None, (n, m, r))
            )
            fallback = fallback or retried
            iterations += result.iterations
            warm = result.active_set
            normal_force = result.z[n + m : n + m + r] / h
        z = result.z
        return self._bounded_result(
            result, z[:n].copy(), z[n : n + m], normal_force, z[n + m + r :], block, k, h, iterations, fallback,
            BoundedLCP(K, qv, lo, hi),
        )  # fmt: skip

    def _bounded_result(self, result, v, bilateral, normal_force, friction, block, k, h, iterations, fallback, problem):
        """The StepResult of a bounded-LCP step (dense or condensed) from its accepted solve
        ``result``: v+, the bilateral impulses, lam_N+, the model's friction unknowns."""
        return StepResult(
            v=v,
            normal_force=normal_force,
            friction_force=self.friction.world_force(friction, block, k.tangent, h),
            status=int(result.status),
            iterations=iterations,
            residual=result.relative_residual,
            fallback=fallback,
            kinetic=block.kinetic.copy(),
            problem=problem,
            bilateral=bilateral,
            active_set=result.active_set,
        )

    def _solve_condensed(self, state, k, rhs, u, e_N, h):
        """Eq. (30) with its free unknowns eliminated (``sparse="condensed"``). With
        K_ff = [[M, -A^T], [A, C_A]] the velocities and bilateral multipliers, the free rows give

            (v+, h lam) = x_0 + X (h lam_N, friction),   K_ff x_0 = (M v + h f, u),
            K_ff X = [[N^T, G^T], [0, 0]],

        (:func:`lcpdyn.kkt.solve_kkt`: the block-diagonal M and a sparse LU of
        S = A M^-1 A^T + C_A, whose cost grows with A's nonzeros -- linearly along a beam), and
        the contacts' rows become the bounded LCP

            W = [[N], [F]] X_v + [[C_N, 0], [P, C]],   b = [[N], [F]] x_0,v + (e_N, c),

        h lam_N >= 0 and the friction unknowns in the model's bounds -- the Schur complement of
        Eq. (30), solved by the chosen method with its warm start, residual check and fallback
        (on this problem of 3 r unknowns, not on the whole one). The friction model, normal-force
        and basis passes are those of the dense path."""
        n, r, m = k.n_velocities, k.gap.shape[0], k.A_body.shape[0]
        A = _sparse_rows(k.A_block, k.A_body, m, n)
        N, D = k.N, k.D
        rolling = self._rolling_kinematics(state, k)
        extra = {}
        if rolling is not None:
            extra["rolling"] = RollingKinematics(_scatter(rolling.spin, k.contact_body, n), rolling.speed)
        normal_force = state.normal_force
        passes = 1 + self.normal_force_iterations + (1 if state.steps_done == 0 and r else 0) + self._basis_passes
        warm = state.active_set
        iterations, fallback = 0, False
        result = x = block = None
        for done in range(passes):
            start = time.perf_counter()
            if self._basis_passes and done:
                extra["basis_force"] = self.friction.world_force(result.z[r:], block, k.tangent, h)
            block = self.friction.block(
                D, state.v, h, self._mu_now, normal_force, state.friction_force, k.tangent,
                mu_static=self._mu_static_now, **extra,
            )  # fmt: skip
            nf = block.F.shape[0]
            right = np.zeros((n + m, 1 + r + nf))
            right[:n, 0], right[n:, 0] = rhs, u
            right[:n, 1 : 1 + r] = N.T
            right[:n, 1 + r :] = block.G.T
            try:
                solution = solve_kkt(self._mass, self._inertia, A, right, self._bilateral_compliance)
            except np.linalg.LinAlgError as exc:
                raise self._step_error(state, f"{exc} -- the step cannot eliminate the velocities") from exc
            free, response = solution[:, 0], solution[:, 1:]
            rows = np.vstack([N, block.F])
            W = rows @ response[:n]
            W[:r, :r] += np.diag(self._normal_compliance)
            if block.P is not None:
                W[r:, :r] += block.P
            W[r:, r:] += block.C
            b = rows @ free[:n]
            b[:r] += e_N
            b[r:] += block.c
            lo = np.concatenate([np.zeros(r), block.lo])
            hi = np.concatenate([np.full(r, np.inf), block.hi])
            middle = time.perf_counter()
            result = self._call(self.method, W, b, lo, hi, warm, (0, 0, r))
            self._clock[0] += middle - start
            self._clock[1] += time.perf_counter() - middle
            result, retried = self._accept(
                state, result, lambda method, W=W, b=b, lo=lo, hi=hi: self._call(method, W, b, lo, hi, None, (0, 0, r))
            )
            fallback = fallback or retried
            iterations += result.iterations
            warm = result.active_set
            normal_force = result.z[:r] / h
            x = free + response @ result.z
        return self._bounded_result(
            result, x[:n].copy(), x[n:], normal_force, result.z[r:], block, k, h, iterations, fallback,
            BoundedLCP(W, b, lo, hi),
        )  # fmt: skip

    def _solve_islands(self, state, k, rhs, u, e_N, h):
        """The step solved island by island (:mod:`lcpdyn.islands`): the same problem as the dense
        path, split by body (or by group of bodies coupled by bilateral rows); an island whose
        first solve fails goes through the full method and its fallback like the dense problem
        does."""
        if self.coulomb:
            if self._coupled:
                return self._coulomb_groups(state, k, rhs, u, e_N, h)
            return self._coulomb_islands(state, k, rhs, e_N, h)
        if not self._fused or self._coupled:
            return self._solve_islands_general(state, k, rhs, u, e_N, h)
        islands = self._islands
        rows = self._rows
        options = self._options[self.method]
        r = k.gap.shape[0]
        normal_force = state.normal_force
        passes = 1 + self.normal_force_iterations + (1 if state.steps_done == 0 and r else 0)
        warm = state.active_set
        iterations, fallback = 0, False
        for _ in range(passes):
            start = time.perf_counter()
            use_warm = warm is not None and warm.shape[0] == islands.size
            (v_new, impulse_N, impulse_T, basis, kinetic, active, K, q, lo, hi, codes, its, relative, *_) = lcp_islands(
                self._mass,
                self._inertia,
                rhs,
                e_N,
                self._normal_compliance,
                k.N_block,
                k.D_block,
                k.tangent,
                state.v,
                h,
                self._mu_now,
                self._mu_static_now,
                normal_force,
                state.friction_force,
                rows.compliance,
                rows.velocity_threshold,
                rows.rigid_box,
                islands.order,
                islands.starts,
                islands.bodies,
                islands.offsets,
                islands.matrix_offsets,
                warm if use_warm else np.zeros(islands.size, np.int8),
                use_warm,
                options.max_iterations,
                options.max_stall,
                options.pivot_tolerance,
            )
            middle = time.perf_counter()
            iterations += int(its.sum())
            for j in np.flatnonzero((codes != 0) | ~(relative <= self.tolerance)):
                a, b = islands.offsets[j], islands.offsets[j + 1]
                s = b - a
                m0 = islands.matrix_offsets[j]
                problem = (K[m0 : m0 + s * s].reshape(s, s), q[a:b], lo[a:b], hi[a:b])
                layout = (6, 0, (s - 6) // 3)
                result = self._call(self.method, *problem, warm[a:b] if use_warm else None, layout)  # as the dense path
                result, retried = self._accept(
                    state, result, lambda method, p=problem: self._call(method, *p, None, layout)
                )
                fallback = fallback or retried
                iterations += result.iterations
                relative[j] = result.relative_residual
                active[a:b] = result.active_set
                contacts = islands.order[islands.starts[j] : islands.starts[j + 1]]
                body = islands.bodies[j]
                v_new[6 * body : 6 * body + 6] = result.z[:6]
                impulse_N[contacts] = result.z[6 : 6 + contacts.size]
                impulse_T[contacts] = result.z[6 + contacts.size :].reshape(-1, 2)
            self._clock[0] += middle - start
            self._clock[1] += time.perf_counter() - middle
            warm = active
            normal_force = impulse_N / h
        friction_force = np.empty((r, 3))
        world_kernel(impulse_T, basis, k.tangent, h, friction_force)
        out = StepResult(
            v=v_new,
            normal_force=normal_force,
            friction_force=friction_force,
            status=int(Status.SOLVED),
            iterations=iterations,
            residual=float(relative.max()) if relative.size else 0.0,
            fallback=fallback,
            kinetic=kinetic,
            bilateral=_EMPTY,
            active_set=active,
        )
        if len(islands) == 1 and len(self.model.bodies) == 1:  # the whole problem (the dense path's)
            out.problem = BoundedLCP(K.reshape(islands.size, islands.size), q, lo, hi)
        return out

    def _solve_islands_general(self, state, k, rhs, u, e_N, h):
        """The step island by island for any bounded-LCP friction model assembled from its
        ``block`` (polygonal, continuous, a user's model), any method but the fused
        judice-pires, or islands of bodies coupled by bilateral rows: each island's Eq. (30)
        over its bodies' velocities, its bilateral rows and its contacts, assembled and solved
        as the dense problem is (same method, warm start, fallback and residual check), so the
        cost grows with the number of islands, not with the cube of the whole system."""
        groups = self._groups.groups
        r, m = k.gap.shape[0], k.A_body.shape[0]
        blocks = self._group_mass_blocks()
        v_new = free_velocity(self._mass, self._inertia, rhs)
        impulse_N = np.zeros(r)
        bilateral = np.zeros(m)
        normal_force = state.normal_force
        passes = 1 + self.normal_force_iterations + (1 if state.steps_done == 0 and r else 0) + self._basis_passes
        warm = state.active_set
        iterations, fallback = 0, False
        rolling = self._rolling_kinematics(state, k)
        basis_force = np.zeros((r, 3)) if self._basis_passes else None
        problems, unknowns = [], []
        for done in range(passes):
            start = time.perf_counter()
            if self._basis_passes and done:  # the model's static basis from the last pass's force
                for (g, block, *_), x in zip(problems, unknowns):
                    basis_force[g.contacts] = self.friction.world_force(x, block, k.tangent[g.contacts], h)
            problems = []
            for j, g in enumerate(groups):
                c, cols, n_g = g.contacts, g.columns, g.columns.size
                island_rolling = None
                if rolling is not None:
                    island_rolling = RollingKinematics(_scatter(rolling.spin[c], g.slot, n_g), rolling.speed[c])
                assembled = self._assemble_rows(
                    blocks[j], self._groups.rows_matrix(j, k.A_block, k.A_body), _scatter(k.N_block[c], g.slot, n_g),
                    _scatter(k.D_block[c].reshape(-1, 6), np.repeat(g.slot, 2), n_g), k.tangent[c],
                    state.v[cols], rhs[cols], u[g.rows], e_N[c], self._normal_compliance[c],
                    self._bilateral_compliance[g.rows], h, self._mu_now[c], self._mu_static_now[c], normal_force[c],
                    state.friction_force[c], island_rolling,
                    None if not (self._basis_passes and done) else basis_force[c],
                )  # fmt: skip
                problems.append((g, *assembled))
            offsets = np.cumsum([0] + [p[3].shape[0] for p in problems])
            use_warm = warm is not None and warm.shape[0] == offsets[-1]
            active = np.empty(offsets[-1], np.int8)
            middle = time.perf_counter()
            residual, unknowns = 0.0, []
            for j, (g, _, K, qv, lo, hi) in enumerate(problems):
                a, b = offsets[j], offsets[j + 1]
                n_g, m_g, r_g = g.columns.size, g.rows.size, g.contacts.size
                layout = (n_g, m_g, r_g)
                result = self._call(self.method, K, qv, lo, hi, warm[a:b] if use_warm else None, layout)
                result, retried = self._accept(
                    state,
                    result,
                    lambda method, K=K, qv=qv, lo=lo, hi=hi, layout=layout: self._call(
                        method, K, qv, lo, hi, None, layout
                    ),
                )
                fallback = fallback or retried
                iterations += result.iterations
                residual = max(residual, result.relative_residual)
                active[a:b] = result.active_set
                v_new[g.columns] = result.z[:n_g]
                bilateral[g.rows] = result.z[n_g : n_g + m_g]
                impulse_N[g.contacts] = result.z[n_g + m_g : n_g + m_g + r_g]
                unknowns.append(result.z[n_g + m_g + r_g :])
            self._clock[0] += middle - start
            self._clock[1] += time.perf_counter() - middle
            warm = active
            normal_force = impulse_N / h
        friction_force = np.empty((r, 3))
        kinetic = np.empty(r, bool)
        for (g, block, *_), x in zip(problems, unknowns):
            c = g.contacts
            friction_force[c] = self.friction.world_force(x, block, k.tangent[c], h)
            kinetic[c] = block.kinetic
        return StepResult(
            v=v_new,
            normal_force=normal_force,
            friction_force=friction_force,
            status=int(Status.SOLVED),
            iterations=iterations,
            residual=residual,
            fallback=fallback,
            kinetic=kinetic,
            bilateral=bilateral,
            active_set=active,
        )

    def _group_mass_blocks(self):
        """The blocks of M over each island's bodies (block-diagonal), built on first use."""
        if getattr(self, "_mass_blocks", None) is None:
            self._mass_blocks = []
            for g in self._groups.groups:
                block = np.zeros((g.columns.size,) * 2)
                for i, body in enumerate(g.bodies):
                    o = 6 * i
                    block[o : o + 3, o : o + 3] = self._mass[body] * np.eye(3)
                    block[o + 3 : o + 6, o + 3 : o + 6] = self._inertia[body]
                self._mass_blocks.append(block)
        return self._mass_blocks

    def _coulomb_groups(self, state, k, rhs, u, e_N, h):
        """The exact cone island by island when bilateral rows couple bodies: each island's
        velocities and bilateral multipliers eliminated (:func:`lcpdyn.kkt.solve_kkt`, a sparse
        factorization for large islands), its Delassus problem solved by NSGS from the previous
        impulses, with the residual check and fallback of the dense path."""
        r, m = k.gap.shape[0], k.A_body.shape[0]
        v_new = free_velocity(self._mass, self._inertia, rhs)
        impulse = np.zeros(3 * r)
        bilateral = np.zeros(m)
        guess = state.impulse_guess
        iterations, fallback, residual = 0, False, 0.0
        for j, g in enumerate(self._groups.groups):
            start = time.perf_counter()
            c, n_g = g.contacts, g.columns.size
            H = np.empty((3 * c.size, n_g))
            H[0::3] = _scatter(k.N_block[c], g.slot, n_g)
            H[1::3] = _scatter(k.D_block[c, 0], g.slot, n_g)
            H[2::3] = _scatter(k.D_block[c, 1], g.slot, n_g)
            rows = (3 * c[:, None] + np.arange(3)).reshape(-1)
            A_g = self._groups.rows_matrix(j, k.A_block, k.A_body)
            free, response, W, b = self._delassus(
                state, self._mass[g.bodies], self._inertia[g.bodies], A_g, H,
                rhs[g.columns], u[g.rows], e_N[c], self._normal_compliance[c], self._bilateral_compliance[g.rows],
            )  # fmt: skip
            middle = time.perf_counter()
            mu, start_guess = self._mu_now[c], None if guess is None else guess[rows]
            if c.size:
                result = self._solve_fc(W, b, mu, start_guess, self.method)
                result, retried = self._accept(
                    state, result, lambda method, W=W, b=b, mu=mu, s=start_guess: self._solve_fc(W, b, mu, s, method)
                )
                fallback = fallback or retried
                iterations += result.iterations
                residual = max(residual, result.relative_residual)
                impulse[rows] = result.r
                x = free + response @ result.r
            else:  # a mechanism without contacts: its bilateral system alone
                x = free
            v_new[g.columns] = x[:n_g]
            bilateral[g.rows] = x[n_g:]
            self._clock[0] += middle - start
            self._clock[1] += time.perf_counter() - middle
        per = impulse.reshape(r, 3) / h
        friction = per[:, 1, None] * k.tangent[:, 0] + per[:, 2, None] * k.tangent[:, 1]
        return StepResult(
            v=v_new,
            normal_force=per[:, 0].copy(),
            friction_force=friction,
            status=int(Status.SOLVED),
            iterations=iterations,
            residual=residual,
            fallback=fallback,
            kinetic=np.zeros(r, bool),
            bilateral=bilateral,
            impulse_guess=impulse,
        )

    def _coulomb_islands(self, state, k, rhs, e_N, h):
        from solvers.contact_result import measure_friction_contact
        from solvers.local_coulomb import _grid

        islands = self._islands
        options = self._nsgs_options
        r = k.gap.shape[0]
        guess = state.impulse_guess if state.impulse_guess is not None else np.zeros(3 * r)
        start = time.perf_counter()
        phis, grid_cos, grid_sin = _grid(options.grid_points)
        impulse, v_new, free, response, W, b, sweeps, relative, *_ = coulomb_islands(
            self._mass,
            self._inertia,
            rhs,
            e_N,
            self._normal_compliance,
            k.N_block,
            k.D_block,
            self._mu_now,
            islands.order,
            islands.starts,
            islands.bodies,
            guess,
            options.max_sweeps,
            self.tolerance,
            options.proximal,
            options.singular_ratio,
            options.relaxation,
            phis,
            grid_cos,
            grid_sin,
        )
        middle = time.perf_counter()
        fallback = False
        iterations = int(sweeps.sum())
        failed = np.flatnonzero(~(relative <= self.tolerance))
        if failed.size:
            sizes = 3 * np.diff(islands.starts)
            w_offsets = np.concatenate([[0], np.cumsum(sizes * sizes)])
            b_offsets = np.concatenate([[0], np.cumsum(sizes)])
        for j in failed:
            contacts = islands.order[islands.starts[j] : islands.starts[j + 1]]
            size, pw, pb = sizes[j], w_offsets[j], b_offsets[j]
            W_j = W[pw : pw + size * size].reshape(size, size)
            b_j = b[pb : pb + size]
            rows = (3 * contacts[:, None] + np.arange(3)).reshape(-1)
            mu = self._mu_now[contacts]
            first = measure_friction_contact(
                W_j, b_j, mu, impulse[rows], Status.MAX_ITERATIONS, int(sweeps[j]),
                f"NSGS (exact local solves) on island {j}: no convergence in {int(sweeps[j])} sweeps",
                "nsgs", self.tolerance,
            )  # fmt: skip
            result, retried = self._accept(
                state,
                first,
                lambda method, W_j=W_j, b_j=b_j, mu=mu: friction_contact.solve_friction_contact(
                    W_j, b_j, mu, method=method, tolerance=self.tolerance
                ),
            )
            fallback = fallback or retried
            iterations += result.iterations
            relative[j] = result.relative_residual
            impulse[rows] = result.r
            body = islands.bodies[j]
            response_j = response[6 * pb : 6 * pb + 6 * size].reshape(6, size)
            v_new[6 * body : 6 * body + 6] = free[6 * body : 6 * body + 6] + response_j @ result.r
        self._clock[0] += middle - start  # the islands' Delassus matrices and NSGS (one compiled call)
        self._clock[1] += time.perf_counter() - middle  # failed islands, velocities
        per = impulse.reshape(r, 3) / h
        friction = per[:, 1, None] * k.tangent[:, 0] + per[:, 2, None] * k.tangent[:, 1]
        out = StepResult(
            v=v_new,
            normal_force=per[:, 0].copy(),
            friction_force=friction,
            status=int(Status.SOLVED),
            iterations=iterations,
            residual=float(relative.max()) if relative.size else 0.0,
            fallback=fallback,
            kinetic=np.zeros(r, bool),
            bilateral=_EMPTY,
            impulse_guess=impulse,
        )
        if len(islands) == 1 and len(self.model.bodies) == 1:
            out.problem = FrictionContactProblem(W.reshape(3 * r, 3 * r), b, self._mu_now.copy())
        return out

    def _fused_pass(self, state, k, rhs, u, e_N, h, normal_force, warm):
        """The regularized/box model with judice-pires in one compiled call
        (:func:`lcpdyn.kernels.fused_step`); the same problem and the same first pivoting run as
        the general path, and the same residual test. Returns (block, K, q, lo, hi, result or None
        when the pivoting did not converge)."""
        options = self._options[self.method]
        rows = self._rows
        use_warm = warm is not None and warm.shape[0] == self._size
        (K, qv, lo, hi, basis, kinetic, z, w, active_set, code, iterations, relative, worst, residual, violation) = (
            fused_step(
                self.M,
                k.A,
                k.N,
                k.D,
                k.tangent,
                rhs,
                u,
                e_N,
                self._normal_compliance,
                self._bilateral_compliance,
                state.v,
                h,
                self._mu_now,
                self._mu_static_now,
                normal_force,
                state.friction_force,
                rows.compliance,
                rows.velocity_threshold,
                rows.rigid_box,
                warm if use_warm else self._no_warm,
                use_warm,
                options.max_iterations or default_max_iterations(self._size),
                options.max_stall,
                options.pivot_tolerance,
            )
        )
        block = _Basis(basis, kinetic)
        if code != 0 or not relative <= self.tolerance:
            return block, K, qv, lo, hi, None
        result = result_from_kernel(
            z,
            w,
            active_set,
            Status.SOLVED,
            iterations,
            relative,
            worst,
            residual,
            violation,
            f"basic-set pivoting: solved after {iterations} iterations (fused stepper path)",
            self.method,
            self.tolerance,
        )
        return block, K, qv, lo, hi, result

    def _accept(self, state, result, retry):
        """(result, False) if it succeeded; else (retry(fallback_method), True) if that succeeded;
        else :class:`SimulationError` -- a failed answer is never returned."""
        return accept_or_fallback(result, retry, self.fallback_method, state.steps_done, state.t)

    def _solve_coulomb(self, state, k, rhs, u, e_N, h):
        start = time.perf_counter()
        n, r = k.n_velocities, k.gap.shape[0]
        H = np.empty((3 * r, n))  # per contact: normal, t1, t2 (Siconos' ordering)
        H[0::3] = k.N
        H[1::3] = k.D[0::2]
        H[2::3] = k.D[1::2]
        A = _sparse_rows(k.A_block, k.A_body, k.A_body.shape[0], n)  # not the dense (m, n): a beam's grows as N^2
        free, response, W, b = self._delassus(
            state, self._mass, self._inertia, A, H, rhs, u, e_N, self._normal_compliance, self._bilateral_compliance
        )
        if self.position_update == "midpoint":  # u = 2 H v_m + ...: the slip at v+ = 2 v_m - v (module docstring)
            W, b = 2.0 * W, 2.0 * b
            b[1::3] -= H[1::3] @ state.v
            b[2::3] -= H[2::3] @ state.v
        middle = time.perf_counter()
        mu, guess = self._mu_now, state.impulse_guess
        result = self._solve_fc(W, b, mu, guess, self.method)
        self._clock[0] += middle - start
        self._clock[1] += time.perf_counter() - middle
        result, fallback = self._accept(state, result, lambda method: self._solve_fc(W, b, mu, guess, method))
        impulse = result.r
        x = free + response @ impulse
        per = impulse.reshape(r, 3) / h
        friction = per[:, 1, None] * k.tangent[:, 0] + per[:, 2, None] * k.tangent[:, 1]
        return StepResult(
            v=x[:n].copy(),
            normal_force=per[:, 0].copy(),
            friction_force=friction,
            status=int(result.status),
            iterations=result.iterations,
            residual=result.relative_residual,
            fallback=fallback,
            kinetic=np.zeros(r, bool),
            problem=FrictionContactProblem(W, b, self._mu_now.copy()),
            bilateral=x[n:],
            impulse_guess=impulse,
        )

    def _delassus(self, state, mass, inertia, A, H, rhs, u, e_N, CN, CA):
        """(free, response, W, b) of the exact-cone problem over the contacts of H (3 r, n) with
        the velocities and the bilateral multipliers of the bodies (mass, inertia) eliminated
        (:func:`lcpdyn.kkt.solve_kkt`): x = free + response r, W = H response_v + C_N,
        b = H free_v + e_N (normal rows)."""
        n, m = H.shape[1], A.shape[0]
        right = np.zeros((n + m, 1 + H.shape[0]))
        right[:n, 0] = rhs
        right[n:, 0] = u
        right[:n, 1:] = H.T
        try:
            solution = solve_kkt(mass, inertia, A, right, CA)
        except np.linalg.LinAlgError as exc:
            raise self._step_error(state, f"{exc} -- the step cannot eliminate the velocities") from exc
        free, response = solution[:, 0], solution[:, 1:]
        W = H @ response[:n]
        W = 0.5 * (W + W.T)
        W[0::3, 0::3] += np.diag(CN)  # compliant contacts
        b = H @ free[:n]
        b[0::3] += e_N
        return free, response, W, b

    def _solve_fc(self, W, b, mu, guess, method):
        options = dict(self.solver_options) if method == self.method else {}
        return friction_contact.solve_friction_contact(
            W, b, mu, method=method, tolerance=self.tolerance,
            initial_guess=guess if method == "nsgs" else None, **options,
        )  # fmt: skip

    # --- runs ---------------------------------------------------------------------------
    # Everything a step reads that earlier steps wrote: a snapshot of these continues a run
    # bit for bit (:meth:`snapshot`, :meth:`restore`).
    _STATE = (
        "q",
        "v",
        "t",
        "steps_done",
        "normal_force",
        "friction_force",
        "active_set",
        "impulse_guess",
        "_potential_start",
        "_work",
        "_lowest",
        "_scale",
    )

    def snapshot(self) -> dict:
        """The mutable state of the run (copies): position and velocity, time, warm starts, the
        previous step's forces and the energy budget. :meth:`restore` of it continues the run
        exactly as if it had not stopped."""
        return {
            name: (None if getattr(self, name) is None else np.array(getattr(self, name), copy=True))
            for name in self._STATE
        }

    def restore(self, state) -> None:
        """Continue from a :meth:`snapshot`, or from the file of a stopped run (a path to an .h5
        written by :meth:`run` with ``out=``; its parameters must be this simulation's)."""
        if not isinstance(state, dict):
            state = self._state_from_file(state)
        missing = [name for name in self._STATE if name not in state]
        if missing:
            raise ValueError(f"the state to restore lacks {missing}")
        for name in self._STATE:
            value = state[name]
            if value is None:
                setattr(self, name, None)
            elif name in ("t", "_potential_start", "_work", "_lowest", "_scale"):
                setattr(self, name, float(value))
            elif name == "steps_done":
                setattr(self, name, int(value))
            else:
                value = np.array(value, copy=True)
                if name == "active_set":
                    value = value.astype(np.int8)
                setattr(self, name, value)
        self._pending_health = int(state.get("pending_health", 0))

    def _state_from_file(self, path) -> dict:
        from .trajectory import load, read_resume_state

        resume = read_resume_state(path)
        recorded = load(path).parameters
        mine = self.parameters()

        def text(value):  # compared as JSON text: NaN parameters (mu_static) equal themselves
            return json.dumps(value, sort_keys=True)

        different = sorted(
            key for key in mine if key != "lcpdyn_version" and text(recorded.get(key)) != text(mine[key])
        )
        if different:
            raise ValueError(
                f"{path}: written by a different simulation (parameters {different} differ); "
                "build the same scene and options to continue it"
            )
        state = {"q": resume["q"], "v": resume["v"], "t": resume["t"], "steps_done": resume["steps_done"]}
        state.update(resume["warm_start"])
        state.update(resume["extra"])
        return state

    def run(
        self, t_end: float, progress: bool = False, *, out=None, record_every: int = 1, chunk_steps: int = 1024
    ) -> Trajectory:
        """Simulate from the current state to ``t_end`` (s); returns the :class:`Trajectory`.

        On a failed step raises :class:`SimulationError` whose ``trajectory`` holds the steps
        done (any other exception inside a step is re-raised as one, the original as
        ``__cause__``). SIGINT and SIGTERM stop the run cleanly after the step in progress:
        :class:`RunInterrupted`, with the steps done (and, with ``out``, saved).

        out : optional path. ``.h5``/``.hdf5``: the run streams into it (h5py, every
            ``chunk_steps`` recorded steps appended and flushed, with the state to continue from
            and a ``status`` attribute: ``running``, ``completed``, ``interrupted``,
            ``failed: <reason>``), so a killed run keeps every completed chunk and an interrupted
            one can be continued (:meth:`restore`, then ``run(..., out=same path)`` appends).
            ``.npz``: saved (atomically) when the run ends, completes or not.
        record_every : record every k-th step (k >= 1; the last step is always recorded); the
            health flags of the steps skipped are OR-ed into the next recorded one, so no
            energy gain or fallback goes unreported. Memory grows with the recorded steps only
            (nothing is preallocated for the whole run).
        progress : a tqdm bar on a terminal; in a log (stderr not a terminal), a line every 30 s.

        Per-step ``health`` flags and the energy check are described in the module docstring
        ("Run health"). Wall times per step (s) are left in ``self.timing`` (steps x 5:
        Jacobians, assembly, solve, rest of the step, recording; at most the first
        ``TIMING_STEPS`` steps), not in the trajectory, which stays reproducible. Steps of the
        compiled loop (``compiled_loop=True``) get their chunk's shares: the compiled call as
        solve, the host's residual check as rest, the recording."""
        steps = self._run_steps(t_end, record_every, chunk_steps)
        stop = _StopOnSignal()
        with stop, _blas_limit(self.blas_threads), float64():  # JAX's float64 scope: lcpdyn.precision
            session = self._session(steps, t_end, progress, out, record_every, chunk_steps, stop)
            chunk = None
            while True:
                try:
                    request = session.send(chunk)
                except StopIteration as end:
                    return end.value
                chunk = self._loop.run(*request)  # the compiled loop's chunks (compiled_loop=True)

    def _run_steps(self, t_end, record_every, chunk_steps) -> int:
        """The checks of :meth:`run`'s arguments (before any work); the number of steps to take."""
        t_end = finite_number("t_end", t_end)
        steps = round((t_end - self.t) / self.dt)
        if steps < 1:
            raise ValueError(f"t_end = {t_end} leaves no step of dt = {self.dt} after t = {self.t}")
        if steps > MAX_STEPS:
            raise ValueError(
                f"t_end = {t_end} with dt = {self.dt} needs {steps:.3g} steps, more than MAX_STEPS = "
                f"{MAX_STEPS:.0e} per run() call (see lcpdyn.stepper.MAX_STEPS)"
            )
        if isinstance(record_every, bool) or not isinstance(record_every, int) or record_every < 1:
            raise ValueError(f"record_every must be an integer >= 1, got {record_every!r}")
        if isinstance(chunk_steps, bool) or not isinstance(chunk_steps, int) or chunk_steps < 1:
            raise ValueError(f"chunk_steps must be an integer >= 1, got {chunk_steps!r}")
        return steps

    def _session(self, steps, t_end, progress, out, record_every, chunk_steps, stop):
        """:meth:`run` after its checks, as a generator (:meth:`_steps`): yields the compiled
        chunk requests, returns the :class:`Trajectory` (raises as :meth:`run` does). ``stop``
        is the signal flag it polls; the caller holds the float64 and BLAS scopes."""
        sink = _Sink.open(out, self, record_every)  # checks the path before any step
        record = _Recorder(self, steps, record_every, chunk_steps, sink)
        k = self.evaluate(self.q, self.v, self.t)
        record.initial(self, k)
        bar = _Progress(progress, steps, self.friction.name, t_end)
        try:
            yield from self._steps(record, steps, k, stop, bar, sink)
        finally:
            bar.close()
        record.warn()
        return record.finish(steps, "completed")

    def _steps(self, record, steps, k, stop, bar, sink):
        """The step loop of :meth:`run`, as a generator: where it wants a compiled chunk
        (``compiled_loop=True``) it yields ``(state, steps)`` and is sent the
        :class:`~lcpdyn.compiled_loop.Chunk` -- :meth:`run` answers with this simulation's
        compiled call; a driver of many runs may answer many requests with one call. Everything
        else (the host's residual check, the records, the ordinary step for a refused step,
        stops and failures) happens here, the same for every driver."""
        evaluate = self.evaluate.unscoped
        i = 0
        cooldown, backoff = 0, 1  # ordinary steps to take before the compiled loop is tried again
        while i < steps:
            if self._loop is not None and cooldown == 0:
                try:
                    done, refused = yield from self._compiled_chunk(record, i, steps)
                except SimulationError as exc:  # an energy stop: the steps up to it are recorded
                    exc.trajectory = record.finish(self.steps_done, f"failed: {exc}")
                    raise
                i += done
                self.loop_steps["compiled"] += done
                bar.update(i, self.t)
                if i == steps:
                    break
                if done and stop.signal is not None:
                    trajectory = record.finish(i, "interrupted")
                    raise RunInterrupted(stop.signal, self.steps_done, self.t, trajectory, sink.path)
                if not refused:
                    continue
                # the step the loop refused goes to the ordinary step; refusals in a row back
                # off (1, 2, 4, ... ordinary steps, at most a chunk's worth) so that a scene
                # the loop cannot solve costs no more than the ordinary run
                backoff = 1 if done or self.steps_done == 0 else min(2 * backoff, CHUNK_STEPS)
                cooldown = backoff
                k = evaluate(self.q, self.v, self.t)
            if self._loop is not None:
                self.loop_steps["ordinary"] += 1
                cooldown -= 1
            try:
                out_step = self.step(k)
                start = time.perf_counter()
                k = evaluate(self.q, self.v, self.t)
                jacobians = time.perf_counter() - start
            except SimulationError as exc:
                exc.trajectory = record.finish(i, f"failed: {exc}")
                raise
            except Exception as exc:  # a user function or anything else: never lose the steps done
                error = SimulationError(f"{type(exc).__name__} raised during the step: {exc}", self.steps_done, self.t)
                error.trajectory = record.finish(i, f"failed: {error}")
                raise error from exc
            start = time.perf_counter()
            try:
                record.store(i, self, out_step, k)
            except SimulationError as exc:
                exc.trajectory = record.finish(i + 1, f"failed: {exc}")
                raise
            record.timing(i, jacobians, out_step.timing, time.perf_counter() - start)
            bar.update(i + 1, self.t)
            if stop.signal is not None and i + 1 < steps:
                trajectory = record.finish(i + 1, "interrupted")
                raise RunInterrupted(stop.signal, self.steps_done, self.t, trajectory, sink.path)
            i += 1

    _chunk_limit = CHUNK_STEPS  # the most steps asked of one compiled chunk

    def _compiled_chunk(self, record, i, steps):
        """(A generator: yields the chunk request, see :meth:`_steps`.)
        Steps ``i`` .. of the run through the compiled loop (:mod:`lcpdyn.compiled_loop`):
        one chunk (never past the recorder's next flush, so a file's resume state always
        matches its last record), every step's answer measured by the framework's residual, the
        leading steps that passed recorded and made the state; returns (their number, whether
        the loop refused the step after them: then it is the ordinary step's)."""
        if self.steps_done == 0 and self.model.contacts:
            return 0, True  # the first step takes an extra pass for lam_N (_solve_lcp): the ordinary step's
        begin = time.perf_counter()
        asked = min(steps - i, record.steps_to_flush(self), self._chunk_limit)
        chunk = yield (self.state, asked)  # run() answers with self._loop.run(state, asked)
        middle = time.perf_counter()
        if chunk.measured is None:
            relative, active, accepted = measure_chunk(
                chunk.K, chunk.rhs, chunk.lo, chunk.hi, chunk.z, chunk.done, self.tolerance
            )
        else:  # a batch measured its copies' chunks with the same kernel (lcpdyn.batch)
            relative, active, accepted = chunk.measured
        measured = time.perf_counter()
        energy = chunk.potential_energy[:accepted] + chunk.kinetic_energy[:accepted]
        if not np.all(np.isfinite(energy)):  # the ordinary step and store() name it
            accepted = int(np.argmin(np.isfinite(energy)))
        if accepted == 0:
            return 0, True
        refused = accepted < asked
        health = record.chunk_health(self, chunk, accepted)
        accepted = health["count"]
        j = accepted - 1
        first = self.steps_done + 1
        self.q, self.v = chunk.q[j].copy(), chunk.v[j].copy()
        self.steps_done += accepted
        self.t = self.steps_done * self.dt
        self.normal_force, self.friction_force = chunk.normal_force[j].copy(), chunk.friction_force[j].copy()
        self.active_set, self.impulse_guess = active[j].copy(), None
        self._mu_now = chunk.mu[j].copy()
        record.store_chunk(i, first, self, chunk, relative, health)
        end = time.perf_counter()
        rows = min(accepted, max(0, self.timing.shape[0] - i))
        if rows:  # per step: the compiled call as 'solve', the host's measure as 'rest', the recording
            self.timing[i : i + rows] = (
                0.0, 0.0, (middle - begin) / accepted, (measured - middle) / accepted, (end - measured) / accepted,
            )  # fmt: skip
        if health["stop"]:
            raise self._energy_stop(health["gain"][j], health["scale"][j], health["energy"][j])
        return accepted, refused

    def _energy_health(self, energy: float, kinetic: float, work: float, power: float) -> tuple[int, float, float]:
        """Updates the energy budget with step n's E_n, T_n, work and conservative power P_c;
        returns (flag, gain D_n - min D, scale S_n) -- flag ``Health.ENERGY_GAIN`` or 0 (module
        docstring, "Run health")."""
        if not math.isfinite(energy):
            raise self._error(self._nonfinite_energy(energy, kinetic))
        self._work += work
        budget = energy + self._shadow * power - self._work
        if budget < self._lowest:
            self._lowest = budget
        scale = max(self._scale, kinetic, abs(energy - kinetic - self._potential_start), abs(self._work))
        self._scale = scale
        gain = budget - self._lowest
        if self.energy_check != "off" and gain > self.energy_tolerance * scale + 1e-12 * (abs(energy) + scale):
            return int(Health.ENERGY_GAIN), gain, scale
        return 0, gain, scale

    def _energy_stop(self, gain, scale, energy) -> SimulationError:
        return self._error(
            f"the energy rose {gain:.4g} J above its lowest value so far, more than "
            f"energy_tolerance = {self.energy_tolerance:g} of the energy scale {scale:.4g} J "
            f"(E = {energy:.6g} J, work put in {self._work:.4g} J; energy_check='stop')"
        )

    def _nonfinite_energy(self, energy, kinetic) -> str:
        if not math.isfinite(kinetic):
            for i, b in enumerate(self.model.bodies):
                for name, part, block in (
                    ("velocity", "m |v|^2 / 2", slice(6 * i, 6 * i + 3)),
                    ("angular velocity", "omega . I omega / 2", slice(6 * i + 3, 6 * i + 6)),
                ):
                    w = self.v[block]
                    with np.errstate(over="ignore", invalid="ignore"):
                        value = 0.5 * float(w @ self.M[block, block] @ w)
                    if not math.isfinite(value):
                        return (
                            f"body {b.name!r}: the kinetic energy overflowed ({part} = {value!r} J, "
                            f"{name} {w.tolist()})"
                        )
            return f"the total kinetic energy overflowed ({float(kinetic)!r} J)"
        culprits = self.model.diagnose(self.q, self.v, self.t)
        return f"the potential energy is not finite ({float(energy - kinetic)!r} J)" + (
            ": " + "; ".join(culprits) if culprits else ""
        )


TIMING_STEPS = 1_000_000  # wall times are kept for at most this many steps of a run


class _StopOnSignal:
    """SIGINT and SIGTERM set ``signal`` instead of killing the process, while the ``with``
    block runs in the main thread (elsewhere Python delivers no signals: nothing to do); the
    previous handlers come back after it."""

    def __init__(self):
        self.signal = None
        self._previous = {}

    def _handler(self, signum, frame):
        self.signal = signum

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._previous[signum] = signal.signal(signum, self._handler)
        return self

    def __exit__(self, *exc):
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous = {}
        return False


class _Progress:
    """tqdm's bar on a terminal; in a log, one plain line every ``LOG_INTERVAL`` seconds."""

    LOG_INTERVAL = 30.0

    def __init__(self, enabled, steps, name, t_end):
        self.enabled, self.steps, self.name, self.t_end = enabled, steps, name, t_end
        self.bar = None
        self.last = time.perf_counter()
        if enabled and sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(
                total=steps,
                desc=f"  {name}",
                unit="step",
                file=sys.stderr,
                mininterval=0.5,
                dynamic_ncols=True,
                leave=False,
            )

    def update(self, done, t):
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.update(done - self.bar.n)
        elif time.perf_counter() - self.last > self.LOG_INTERVAL:
            self.last = time.perf_counter()
            print(
                f"  {self.name}: t = {t:.6g} / {self.t_end:g} s ({100 * done / self.steps:.0f} %)",
                file=sys.stderr,
                flush=True,
            )

    def close(self):
        if self.bar is not None:
            self.bar.close()


class _Sink:
    """Where recorded chunks go: an HDF5 file written as the run goes, an .npz saved at the
    end, or nowhere (memory only)."""

    def __init__(self, path=None, writer=None, npz=None):
        self.path, self.writer, self.npz = path, writer, npz

    @staticmethod
    def open(out, sim, record_every):
        if out is None:
            return _Sink()
        from .trajectory import TrajectoryWriter, check_output_path

        path = check_output_path(out)
        if path.suffix.lower() == ".npz":
            return _Sink(path, npz=path)
        parameters = dict(sim.parameters(), record_every=record_every)
        writer = TrajectoryWriter.open_or_append(
            path,
            parameters,
            [b.name for b in sim.model.bodies],
            len(sim.model.bodies),
            len(sim.model.contacts),
            steps_done=sim.steps_done,
        )
        return _Sink(path, writer=writer)


_WARM = ("active_set", "impulse_guess")


def _write_resume(writer, sim, pending_health):
    """The state to continue from (:meth:`Simulation.snapshot`) into the writer's resume group:
    warm starts as ``warm_start``, the rest (previous forces, energy budget, the health flags of
    steps done but not yet recorded) as ``extra``."""
    state = sim.snapshot()
    warm = {name: state[name] for name in _WARM}
    extra = {name: state[name] for name in Simulation._STATE if name not in _WARM + ("q", "v", "t", "steps_done")}
    extra["pending_health"] = np.int64(pending_health)
    writer.write_resume_state(state["q"], state["v"], float(state["t"]), int(state["steps_done"]), warm, extra)


class _Recorder:
    """Per-step records in chunks (nothing preallocated for the whole run), every
    ``record_every``-th step, flushed to the sink chunk by chunk."""

    def __init__(self, sim: Simulation, steps: int, record_every: int, chunk_steps: int, sink: _Sink):
        self.sim, self.steps, self.every, self.sink = sim, steps, record_every, sink
        self.rows = min(chunk_steps, -(-steps // record_every))
        self.blocks = []  # completed chunks (dicts of arrays)
        self.n = 0  # rows used in the current chunk
        self.a = self._chunk()
        self.static = {}
        self.pending = sim.__dict__.pop("_pending_health", 0)  # flags of steps done, not recorded yet
        self.flagged, self.first, self.largest, self.largest_t, self.largest_scale = 0, None, 0.0, None, 0.0
        self.recorded_steps = 0
        # wall times are kept out of the trajectory so that outputs are reproducible
        sim.timing = np.zeros((min(steps, TIMING_STEPS), 5))

    def _chunk(self):
        nb, r, n = len(self.sim.model.bodies), len(self.sim.model.contacts), self.rows
        return {
            "t": np.zeros(n),
            "position": np.zeros((n, nb, 3)),
            "quaternion": np.zeros((n, nb, 4)),
            "velocity": np.zeros((n, nb, 3)),
            "angular_velocity": np.zeros((n, nb, 3)),
            "contact_normal_force": np.zeros((n, r)),
            "contact_friction_force": np.zeros((n, r, 3)),
            "contact_slip_velocity": np.zeros((n, r, 3)),
            "contact_gap": np.zeros((n, r)),
            "contact_kinetic": np.zeros((n, r), np.int8),
            "contact_mu": np.zeros((n, r)),
            "energy": np.zeros(n),
            "solver_status": np.zeros(n, np.int8),
            "solver_iterations": np.zeros(n, np.int32),
            "solver_residual": np.zeros(n),
            "solver_fallback": np.zeros(n, np.int8),
            "health": np.zeros(n, np.int8),
        }

    def timing(self, i, jacobians, inner, record):
        if i < self.sim.timing.shape[0]:
            row = self.sim.timing[i]
            row[0] = jacobians
            row[1], row[2], row[3] = inner
            row[4] = record

    def initial(self, sim, k):
        nb = len(sim.model.bodies)
        self.static["initial_position"] = sim.q.reshape(nb, 7)[:, :3].copy()
        self.static["initial_energy"] = np.float64(sim.energy(k))
        if self.sink.writer is not None:
            self.sink.writer.write_static(self.static["initial_position"], self.static["initial_energy"])

    def store(self, i, sim, out, k):
        v = sim.v
        kinetic = kinetic_energy(sim._mass, sim._inertia, v)
        energy = k.potential_energy + kinetic
        error = None
        try:
            flag, gain, scale = sim._energy_health(energy, kinetic, out.work, k.conservative_power)
        except SimulationError as exc:  # non-finite energy: the step is recorded, then the run stops
            flag, error = 0, exc
        if flag:
            self.flagged += 1
            if self.first is None:
                self.first = sim.t
            if gain > self.largest:
                self.largest, self.largest_t, self.largest_scale = gain, sim.t, scale
        self.pending |= flag | (int(Health.FALLBACK) if out.fallback else 0)
        if error is not None or sim.steps_done % self.every == 0 or i + 1 == self.steps:  # phase spans run() calls
            a, j = self.a, self.n
            a["t"][j] = sim.t
            store_bodies(sim.q, v, a["position"][j], a["quaternion"][j], a["velocity"][j], a["angular_velocity"][j])
            a["contact_normal_force"][j] = out.normal_force
            a["contact_friction_force"][j] = out.friction_force
            a["contact_slip_velocity"][j] = out.slip_world
            a["contact_gap"][j] = out.gap
            a["contact_kinetic"][j] = out.kinetic
            a["contact_mu"][j] = sim._mu_now
            a["energy"][j] = energy
            a["solver_status"][j] = out.status
            a["solver_iterations"][j] = out.iterations
            a["solver_residual"][j] = out.residual
            a["solver_fallback"][j] = out.fallback
            a["health"][j] = self.pending
            self.pending = 0
            self.n += 1
            if self.n == self.rows:
                self._flush(sim)
        if error is not None:
            raise error
        if flag and sim.energy_check == "stop":
            raise sim._energy_stop(gain, scale, energy)

    def steps_to_flush(self, sim) -> int:
        """Steps from ``sim``'s state until the current chunk of records is full."""
        left = self.rows - self.n
        return (sim.steps_done // self.every + left) * self.every - sim.steps_done

    def chunk_health(self, sim, c, count) -> dict:
        """The energy budget of :meth:`store` for ``count`` steps of a compiled chunk
        (:mod:`lcpdyn.compiled_loop`), vectorized in the same order of operations (running sums,
        minima and maxima give the same numbers as the step-by-step updates); with
        ``energy_check='stop'`` cut after the first flagged step (``stop`` True). Changes nothing."""
        kinetic = c.kinetic_energy[:count]
        energy = c.potential_energy[:count] + kinetic
        works = np.cumsum(np.concatenate([[sim._work], c.work[:count]]))[1:]
        budget = energy + sim._shadow * c.conservative_power[:count] - works
        lowest = np.minimum.accumulate(np.concatenate([[sim._lowest], budget]))[1:]
        candidates = np.maximum(np.maximum(kinetic, np.abs(energy - kinetic - sim._potential_start)), np.abs(works))
        scale = np.maximum.accumulate(np.concatenate([[sim._scale], candidates]))[1:]
        gain = budget - lowest
        if sim.energy_check == "off":
            flags = np.zeros(count, bool)
        else:
            flags = gain > sim.energy_tolerance * scale + 1e-12 * (np.abs(energy) + scale)
        stop = sim.energy_check == "stop" and bool(flags.any())
        if stop:
            count = int(np.argmax(flags)) + 1
        return {
            "count": count, "stop": stop, "flags": flags[:count], "gain": gain[:count], "scale": scale[:count],
            "energy": energy[:count], "works": works[:count], "lowest": lowest[:count],
        }  # fmt: skip

    def store_chunk(self, i, first, sim, c, relative, health):
        """:meth:`store` for steps ``i`` .. of this run (numbers ``first`` .. of the whole run)
        from a compiled chunk, with :meth:`chunk_health`'s budget; ``sim`` is already at the
        chunk's last state. Fills at most the current chunk of records (the caller never runs
        past :meth:`steps_to_flush`)."""
        count, flags, gain, scale = health["count"], health["flags"], health["gain"], health["scale"]
        sim._work, sim._lowest, sim._scale = (
            float(health["works"][-1]), float(health["lowest"][-1]), float(scale[-1]),
        )  # fmt: skip
        number = first + np.arange(count)
        t = number * sim.dt
        if flags.any():
            self.flagged += int(flags.sum())
            if self.first is None:
                self.first = float(t[np.argmax(flags)])
            j = int(np.argmax(np.where(flags, gain, -np.inf)))
            if gain[j] > self.largest:
                self.largest, self.largest_t, self.largest_scale = float(gain[j]), float(t[j]), float(scale[j])
        recorded = np.flatnonzero((number % self.every == 0) | (i + np.arange(count) + 1 == self.steps))
        gained = np.cumsum(flags)
        if recorded.size:
            before = np.concatenate([[0], gained[recorded[:-1]]])
            row_health = np.where(gained[recorded] > before, int(Health.ENERGY_GAIN), 0).astype(np.int8)
            row_health[0] |= self.pending
            self.pending = int(Health.ENERGY_GAIN) if gained[-1] > gained[recorded[-1]] else 0
        else:
            row_health = np.zeros(0, np.int8)
            self.pending |= int(Health.ENERGY_GAIN) if gained[-1] else 0
        if recorded.size > self.rows - self.n:
            raise AssertionError("compiled chunk past the recorder's flush")  # steps_to_flush prevents it
        if recorded.size == count:  # every step recorded: views, not copies
            recorded = slice(0, count)
        nb = len(sim.model.bodies)
        q = c.q[recorded].reshape(-1, nb, 7)
        v = c.v[recorded].reshape(-1, nb, 6)
        rows = {
            "t": t[recorded],
            "position": q[:, :, :3],
            "quaternion": q[:, :, 3:],
            "velocity": v[:, :, :3],
            "angular_velocity": world_angular_velocity(q[:, :, 3:], v[:, :, 3:]),
            "contact_normal_force": c.normal_force[recorded],
            "contact_friction_force": c.friction_force[recorded],
            "contact_slip_velocity": c.slip_world[recorded],
            "contact_gap": c.gap[recorded],
            "contact_kinetic": c.kinetic[recorded],
            "contact_mu": c.mu[recorded],
            "energy": health["energy"][recorded],
            "solver_status": int(Status.SOLVED),
            "solver_iterations": c.iterations[recorded],
            "solver_residual": relative[recorded],
            "solver_fallback": 0.0,
            "health": row_health,
        }
        j, take = self.n, row_health.size
        for name, values in rows.items():
            self.a[name][j : j + take] = values
        self.n += take
        if self.n == self.rows:
            self._flush(sim)

    def _flush(self, sim):
        if self.n == 0:
            return
        block = {name: values[: self.n].copy() for name, values in self.a.items()}
        self.blocks.append(block)
        self.recorded_steps += self.n
        self.n = 0
        if self.sink.writer is not None:
            self.sink.writer.append(block)
            _write_resume(self.sink.writer, sim, self.pending)

    def warn(self):
        if self.flagged:
            sim = self.sim
            warnings.warn(
                f"energy gain in {self.flagged} of {self.steps} steps (first at t = "
                f"{self.first:.6g} s): the energy rose up to {self.largest:.4g} J above its lowest value "
                f"(at t = {self.largest_t:.6g} s; {self.largest / self.largest_scale:.3g} of the energy "
                f"scale {self.largest_scale:.4g} J, energy_tolerance = {sim.energy_tolerance:g}) with "
                f"position_update={sim.position_update!r}, gyroscopic={sim.gyroscopic!r}, "
                f"dt = {sim.dt:g} s; the steps are flagged in trajectory.health (Health.ENERGY_GAIN)",
                EnergyWarning,
                stacklevel=3,
            )

    def finish(self, steps_done, status) -> Trajectory:
        """The trajectory of the recorded steps so far (the run did ``steps_done`` steps), with
        the sink brought up to date: every record written, ``status`` set, the file closed."""
        sim = self.sim
        self._flush(sim)
        if self.blocks:
            arrays = {name: np.concatenate([b[name] for b in self.blocks]) for name in self.blocks[0]}
        else:
            arrays = {name: values[:0].copy() for name, values in self.a.items()}
        arrays.update(self.static)
        parameters = dict(sim.parameters(), record_every=self.every, status=status)
        trajectory = Trajectory(arrays, parameters, [b.name for b in sim.model.bodies])
        if self.sink.writer is not None:
            _write_resume(self.sink.writer, sim, self.pending)
            self.sink.writer.close(status)
        elif self.sink.npz is not None:
            trajectory.save(self.sink.npz)
        return trajectory


def simulate(
    model: Model, friction="regularized", dt: float = 1e-3, t_end: float = 1.0, progress=False, **options
) -> Trajectory:
    """Shortcut: ``Simulation(model, friction, dt, **options).run(t_end)``."""
    return Simulation(model, friction, dt, **options).run(t_end, progress=progress)
