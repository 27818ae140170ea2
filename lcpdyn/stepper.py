"""The velocity-level time stepper of Peiret 2016 (Eqs. 5-7 and 21-31): :class:`Simulation`.

One step from (t, q, v) with step size h: the kinematics at (q, v) from the model's compiled JAX
function (Eqs. 1-4); the bounded mixed LCP of Eq. (30) in z = (v+, h lam+, h lam_N+, friction
unknowns) with the friction model's block (:mod:`lcpdyn.friction`), or the exact cone's Delassus
problem, solved by the strategy :mod:`lcpdyn.strategies` the options and the problem's structure
choose, every answer checked by the framework's residual; then the position update
(``position_update``). Runs, their records and files are :mod:`lcpdyn.run`'s.

The scheme, its options and their measured costs -- why v+ is the default, the gyroscopic
midpoint rule, drift stabilization, compliant bilateral rows, Moreau's midpoint scheme, failed
solves and the run's health checks -- are derived in ``docs/theory/step.md``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time

import numpy as np

import solvers
from solvers import friction_contact
from solvers.options import build_options

from . import __version__, bounded_rows
from .compiled_loop import CHUNK_STEPS
from .compliance import by_law
from .forces import SpringDamper, TorsionalSpringDamper
from .friction import FRICTION_CONTACT, compiled_rows, for_scheme, make_friction
from .friction_switches import friction_switches
from .kernels import (
    GYROSCOPIC_NEWTON_ITERATIONS,
    GYROSCOPIC_NEWTON_TOLERANCE,
    gap_terms_blocks,
    gyroscopic_midpoint,
    kinetic_energy,
    momentum,
    slip_world_blocks,
    update_positions,
)
from .midpoint_friction import friction_point, stops
from .model import Model
from .model_check import ModelRecord, check_coefficients
from .options import POSITION_UPDATES, StepOptions
from .run import loop as run_loop
from .run.errors import EnergyWarning, OutputFailed, RunInterrupted, SimulationError, UnsolvedWarning, step_error
from .run.loop import MAX_STEPS, state_from_file
from .run.snapshot import restore, snapshot
from .step_checks import check_inputs, check_state, flat_disk, nonfinite_kinematics
from .step_result import StepResult
from .step_rows import coefficients_now, compliant_contact_rows, midpoint_rows
from .step_state import StepState
from .step_work import StepWork
from .strategies.choice import choose_islands, setup_collisions
from .strategies.condensed import solve_condensed
from .strategies.coulomb import solve_coulomb
from .strategies.dense import solve_lcp
from .strategies.detected import solve_with_detected
from .strategies.islands import solve_islands
from .strategies.methods import choose_methods, judge_step
from .trajectory import Trajectory
from .validation import positive

__all__ = [
    "Simulation", "SimulationError", "RunInterrupted", "OutputFailed", "EnergyWarning", "UnsolvedWarning", "simulate",
]  # fmt: skip
__all__ += ["MIN_DT", "MAX_STEPS", "POSITION_UPDATES", "StepOptions"]

MIN_DT = 1e-9
"""Smallest step size (s) the stepper accepts -- a practical floor: a simulated second would take
10^9 steps (a day at ~100 us per step), and the step's 1/h and 1/h^2 terms (Phi/h, the bristle
compliance 1/(k_T h^2), compliant rows 1/(h (F' h + c))) grow against the O(1) masses of
Eq. (30) -- 1e8 at 1 ns with k_T = 1e10 N/m; dt = 1e-300 overflows them outright. (Time itself
never stalls at t + dt == t: the stepper computes t = (steps done) x dt.)"""

_NEWTON_TOLERANCE, _NEWTON_ITERATIONS = GYROSCOPIC_NEWTON_TOLERANCE, GYROSCOPIC_NEWTON_ITERATIONS


class Simulation:
    """Time-step a :class:`~lcpdyn.model.Model` with a friction model.

    Parameters
    ----------
    model : the scene.
    friction : ``"regularized"`` (default), ``"polygonal"``, ``"box"``, ``"coulomb"``, ``"continuous"``
        or a model object (e.g. ``Regularized(tangential_stiffness=math.inf)``), as its ``for_scheme``
        resolves it for the position update (:mod:`lcpdyn.friction.base`).
    dt : step size h (s), > 0.
    options : a :class:`~lcpdyn.options.StepOptions` (default: its defaults). Every option below
        but ``scene`` is one of its fields and may also be given as a keyword argument, which
        replaces that field (``Simulation(m, dt=1e-3, tolerance=1e-10)`` is
        ``Simulation(m, dt=1e-3, options=StepOptions(tolerance=1e-10))``). ``self.options`` holds
        them as resolved for this model (the method and fallback chosen, the strategy taken):
        what every output file records. What each option does: :class:`~lcpdyn.options.StepOptions`.
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
        options: StepOptions | None = None,
        scene: dict | None = None,
        **changes,
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
        self._built = ModelRecord.of(model)  # checks the members' values again; run() and advance() compare
        friction = make_friction(friction)
        self.dt = positive("dt", dt)
        if self.dt < MIN_DT:
            raise ValueError(
                f"dt = {dt!r} s is below the smallest step size MIN_DT = {MIN_DT:g} s (see lcpdyn.stepper.MIN_DT)"
            )
        if options is not None and not isinstance(options, StepOptions):
            raise TypeError(f"options must be a StepOptions, got {type(options).__name__}")
        options = (options or StepOptions()).replace(**changes)
        position_update = options.position_update
        self.energy_check, self.energy_tolerance = options.energy_check, options.energy_tolerance
        self.blas_threads, self.tolerance = options.blas_threads, options.tolerance
        self.static_threshold, self.position_update = options.static_threshold, position_update
        self.gyroscopic, self.stabilization = options.gyroscopic_scheme, options.stabilization
        self.normal_force_iterations, self.on_unsolved = options.normal_force_iterations, options.on_unsolved
        self.friction = for_scheme(friction, position_update)  # e.g. the regularized model's static bound
        check_coefficients(model, self.friction)
        compliant = any(c.normal_law is not None for c in model.contacts)
        compliant = compliant or bool(model.colliders) and model.collisions.compliant  # declared or detected
        if position_update == "midpoint" and compliant:
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
        self.coulomb = self.friction.formulation == FRICTION_CONTACT  # the exact cone's problem
        self._basis_passes = int(getattr(self.friction, "basis_passes", 0))
        self.method, self.fallback_method = choose_methods(
            self.friction, options.method or self.friction.default_method, options.fallback_method
        )
        self.solver_options = options.solver_options
        if self.coulomb:  # named before any step, as the bounded-LCP methods' options are (build_options)
            known = friction_contact.options_fields(self.method)
            unknown = sorted(set(self.solver_options) - set(known))
            if unknown:
                raise ValueError(f"unknown solver_options {unknown} for method {self.method!r}; known: {sorted(known)}")
        else:
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
        # the model's rows as lcpdyn's Numba kernels build them (the two-row models: regularized,
        # box), or None; the step Eq. (30) is posed over: h, or h/2 to the midpoint in Moreau's midpoint scheme
        self._h_solve = 0.5 * self.dt if position_update == "midpoint" else self.dt
        rows = None if self.coulomb else compiled_rows(self.friction, self._h_solve)
        self._rows = rows if rows is not None and not (rows.directions or rows.continuous or rows.creep) else None
        self._fused = (
            options.fused
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
        self._compliant = by_law(c.normal_law for c in model.contacts)  # [(law, its declared contacts)]
        self.n_holonomic = sum(c.size for c in model.holonomic)
        self._disks = [i for i, c in enumerate(model.contacts) if c.tilt_of is not None]  # contacts with a tilt check
        self.has_disks = bool(self._disks)
        self._nonconservative = any(  # loads with work to count: all but undamped springs
            not (isinstance(f, (SpringDamper, TorsionalSpringDamper)) and f.damping == 0) for f in model.forces
        )
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
        bounded_rows.setup(self)  # limits, servos' effort bounds, joint friction
        options = setup_collisions(self, options)  # detected contacts: a contact source of this step
        self._islands = choose_islands(self, options.sparse)
        gravity = float(np.linalg.norm(model.gravity))
        # D_n carries the O(h) term of the scheme's modified energy (docs/theory/step.md): +h/2 P_c with v+,
        # -h/2 P_c with Eq. (7)
        # (none with the midpoint scheme, which keeps E exactly under a constant force)
        self._shadow = 0.5 * self.dt * {"symplectic": 1.0, "paper": -1.0, "midpoint": 0.0}[position_update]
        self._energy_floor = sum(
            b.mass * gravity * math.sqrt(np.trace(b.inertia_matrix) / b.mass) for b in model.bodies
        )
        size = model.n_velocities + model.n_bilateral + len(model.contacts)
        self._size = size + (2 * len(model.contacts) if self._rows is not None else 0)
        self._no_warm = np.zeros(self._size, np.int8)
        self._loop = None
        if options.compiled_loop and self._collisions is None:  # the strategy's choice: compiled where it applies
            from .compiled_loop import CompiledLoop, declined_by_auto, unsupported

            reasons = unsupported(self)
            if reasons and options.compiled_loop is True:
                raise ValueError(
                    "compiled_loop=True: this scene cannot run in the compiled loop: " + "; ".join(reasons)
                )
            if not reasons and (options.compiled_loop is True or not declined_by_auto(self)):
                self._loop = CompiledLoop(self)  # traced and compiled at the first run() that uses it
        self.loop_steps = {"compiled": 0, "ordinary": 0}
        self.options = options.replace(
            method=self.method,
            fallback_method=self.fallback_method,
            gyroscopic=self.gyroscopic,
            fused=self._fused,
            sparse=self._resolved_sparse(),
            compiled_loop=self._loop is not None,
        )  # as resolved for this model: what parameters() records and a rebuild passes back
        self.reset()

    def _resolved_sparse(self):
        """The ``sparse`` option as resolved for this model (what a rebuild passes back): with
        colliders the choice stays per step (``"auto"``: by size), else the strategy chosen."""
        if self._collisions is not None:
            return False if self._detected_groups is None else (True if self._split_always else "auto")
        return "condensed" if self._condensed else self._islands is not None

    CACHES = ("_dense_mass", "_mass_blocks")
    """Attributes a step may fill on first use: numbers of the model (the dense mass matrix, the
    islands' mass blocks), built once, never state."""

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
        self.contacts = self.contact_impulse = self.contact_tangent = None
        self.timing = None
        # the compiled loop's retry schedule (run.loop.step_loop): ordinary steps before it is tried
        # again, and the next wait after a refusal -- state of the run, so that a resumed run takes
        # the same steps in the loop as one never stopped
        self.loop_retry = (0, 1)
        k = self.evaluate(self.q, self.v, self.t)
        kinetic = kinetic_energy(self._mass, self._inertia, self.v)
        potential = self.potential_energy(k)
        if not math.isfinite(potential):
            culprits = self.model.diagnose(self.q, self.v, self.t)
            raise ValueError(
                "the initial potential energy is not finite (V = "
                f"{float(potential)!r} J){': ' + '; '.join(culprits) if culprits else ''}"
            )
        # the energy budget of "Run health" (docs/theory/step.md), kept across run() calls until reset
        self._potential_start = potential
        self._work = 0.0  # W_n, J
        self._lowest = potential + kinetic + self._shadow * k.conservative_power  # min_k D_k
        self._scale = max(self._energy_floor, kinetic)  # S_n

    def parameters(self) -> dict:
        """Everything that determines a run (recorded in output files)."""
        return {
            "lcpdyn_version": __version__,
            "dt": self.dt,
            "friction": self.friction.parameters(),
            **self.options.record(collisions=self._collisions is not None),
            **self.model.record(),
            **({"collisions": self._collisions.record()} if self._collisions is not None else {}),
            **({"scene": self.scene} if self.scene is not None else {}),
        }

    def energy(self, kinematics=None) -> float:
        """Mechanical energy of the current state (J): kinetic v . M v / 2 plus the potential of
        :meth:`lcpdyn.model.Model.potential_energy` (gravity, springs, compliant contacts)."""
        k = kinematics or self.evaluate(self.q, self.v, self.t)
        return self.potential_energy(k) + kinetic_energy(self._mass, self._inertia, self.v)

    def potential_energy(self, kinematics) -> float:
        """Potential energy (J) at the simulation's own q: the model's (``kinematics``) plus the compliant
        detected contacts' (:meth:`lcpdyn.detected_contacts.CollisionSource.elastic_energy`)."""
        detected = self._collisions
        return kinematics.potential_energy + (0.0 if detected is None else detected.elastic_energy(self.q))

    # --- one step -----------------------------------------------------------------------
    @property
    def state(self) -> StepState:
        """The simulation's current :class:`~lcpdyn.step_state.StepState` (what :meth:`step`
        advances; the arrays are the simulation's own, never modified in place)."""
        return StepState(
            self.q, self.v, self.t, self.steps_done, self.normal_force, self.friction_force,
            self.active_set, self.impulse_guess, self.contacts, self.contact_impulse, self.contact_tangent,
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
        self.contacts, self.contact_impulse = state.contacts, state.contact_impulse
        self.contact_tangent = state.contact_tangent
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
        if (changed := self._built.members_changed(self.model)) is not None:
            raise ValueError(changed)
        for name in ("q", "v", "normal_force", "friction_force"):
            value, own = getattr(state, name), getattr(self, name)
            if not isinstance(value, np.ndarray) or value.shape != own.shape:
                raise ValueError(
                    f"StepState.{name}: expected an array of shape {own.shape} for this model, got "
                    f"{getattr(value, 'shape', type(value).__name__)}"
                )
        begin = time.perf_counter()
        midpoint = self.position_update == "midpoint"
        if midpoint:  # Moreau's midpoint scheme (docs/theory/step.md): Eq. (30) over h/2 at q_m = q + h/2 v
            q_start = update_positions(state.q, state.v, 0.5 * self.dt)
            k = self.evaluate(q_start, state.v, state.t + 0.5 * self.dt)
        else:
            q_start = state.q
            k = kinematics or self.evaluate(state.q, state.v, state.t)
        h = self._h_solve
        if not k.finite:
            raise step_error(state, nonfinite_kinematics(self, state, k))
        if k.tilt_margin < 0.0:
            raise step_error(state, flat_disk(self, k))
        n, r, m = k.n_velocities, k.gap.shape[0], k.A_body.shape[0]
        v = state.v
        mu, mu_static = coefficients_now(self, state, k)
        # this step's own numbers for the strategies (lcpdyn.step_work): the simulation holds none of them
        work = StepWork(mu, mu_static, np.zeros(r), np.zeros(m))
        if midpoint and r and self._collisions is None:  # where each friction law is written (lcpdyn.midpoint_friction)
            work.friction_point = friction_point(self, state, k, np.maximum(mu, mu_static))
        paper = self.position_update == "paper"
        g, g_ahead = k.holonomic_error, None
        if midpoint:
            e_N, g = midpoint_rows(self, state, k, q_start, v)
        else:
            e_N = gap_terms_blocks(k.gap, k.N_block, k.contact_body, v, h, paper, self.stabilization)
        if self._compliant:
            e_N = compliant_contact_rows(self, k, v, h, paper, e_N, work.normal_compliance)
        if g.size and not midpoint:  # A v+ = -dg/dt - beta g~/h (rheonomic rate, drift at the configuration v+ moves)
            A_v = np.einsum("mkj,mkj->m", k.A_block[: g.size], v.reshape(-1, 6)[k.A_body[: g.size]])  # pads are 0
            g_pred = g + h * (A_v + k.holonomic_rate) if paper else g
            g = -self.stabilization * g_pred / h - k.holonomic_rate
            bounded_rows.targets(self, k, g, A_v, h)  # limits and stops: g(q) >= 0
            if self._soft_rows.size:  # compliant rows (docs/theory/step.md), linearized about q~ = q + h Gamma v
                s, stiffness, damping = self._soft_rows, self._soft_stiffness, self._soft_damping
                q_ahead = update_positions(state.q, v, h)
                g_ahead, finite = self.evaluate.holonomic_error(q_ahead, state.t + h)
                if not finite:
                    message = nonfinite_kinematics(self, state, self.evaluate(q_ahead, v, state.t + h))
                    raise step_error(state, "the compliant rows' predicted configuration: " + message)
                effective = h * stiffness + damping
                predicted = g_ahead[s] - h * A_v[s]
                g[s] = -(stiffness * predicted + damping * k.holonomic_rate[s]) / effective
                work.bilateral_compliance[s] = 1.0 / (h * effective)
        u = np.concatenate([g, k.nonholonomic_rhs])
        work.bilateral_bounds = bounded_rows.impulse_bounds(self, h, g_ahead)
        if self.gyroscopic == "midpoint":
            rhs, newton, body = gyroscopic_midpoint(
                self._mass, self._inertia, v, k.force, self.dt, _NEWTON_TOLERANCE, _NEWTON_ITERATIONS
            )
            if midpoint:  # over h/2 to the step's midpoint x = (omega + omega*)/2: (M v* + h f + M v)/2
                rhs = 0.5 * (rhs + momentum(self._mass, self._inertia, v))
            if not newton <= _NEWTON_TOLERANCE:
                omega = float(np.linalg.norm(v[6 * body + 3 : 6 * body + 6]))
                raise step_error(
                    state,
                    f"body {self.model.bodies[body].name!r}: the implicit midpoint step of the "
                    f"gyroscopic term did not converge (relative residual {newton:.3g} after "
                    f"{_NEWTON_ITERATIONS} Newton iterations, h |omega| = {h * omega:.3g})",
                )
        else:
            rhs = momentum(self._mass, self._inertia, v) + h * k.force
        detected = None
        if self._collisions is not None:
            detected = self._collisions.gather(
                q_start, v, self.dt, state, beta=self.stabilization, paper=paper, midpoint=midpoint,
                choose_static=not self.friction.chooses_static_coefficient, static_threshold=self.static_threshold,
            )  # fmt: skip
        split = self._islands is not None
        if split and self._coupled and not self._groups.conforms(k.A_block, k.A_body):
            # a row reaches a body outside its structural island: this step is solved whole, cold
            split, state = False, dataclasses.replace(state, active_set=None, impulse_guess=None)

        def solve(state, rhs, e_N, g, u):
            """Eq. (30) (twice in the midpoint scheme) with this step's coefficients ``work.mu``."""
            forces = None
            first = out = None
            for _pass in range(2 if midpoint else 1):
                if out is not None:  # the midpoint scheme's second pass: forces at the first v_m, rows about its v+
                    first = out
                    forces = self.evaluate(q_start, out.v, state.t + h)
                    if not forces.finite:
                        raise step_error(state, nonfinite_kinematics(self, state, forces))
                    rhs = momentum(self._mass, self._inertia, v) + h * forces.force
                    e_N, g = midpoint_rows(self, state, k, q_start, 2.0 * out.v - v)
                    u = np.concatenate([g, k.nonholonomic_rhs])
                    state = dataclasses.replace(
                        state,
                        active_set=state.active_set if out.active_set is None else out.active_set,
                        impulse_guess=state.impulse_guess if out.impulse_guess is None else out.impulse_guess,
                        normal_force=out.normal_force,  # lam_N over the step, for models that bound with it
                        **({} if detected is None else {"contacts": detected.contacts}),  # the first pass's layout
                    )
                check_inputs(self, state, rhs, e_N, u)
                if detected is not None:
                    out, out.detected = solve_with_detected(self, work, state, k, detected, rhs, u, e_N, h)
                elif split:
                    out = solve_islands(self, work, state, k, rhs, u, e_N, h)
                elif self.coulomb:
                    out = solve_coulomb(self, work, state, k, rhs, u, e_N, h)
                elif self._condensed:
                    out = solve_condensed(self, work, state, k, rhs, u, e_N, h)
                else:
                    out = solve_lcp(self, work, state, k, rhs, u, e_N, h, n, m, r)
                    if self._islands is not None:  # a whole step of an island run: its active set is out of order
                        out.active_set = None
            if first is not None:
                out.iterations += first.iterations
                out.fallback = out.fallback or first.fallback
            return state, out, first, forces

        start = state
        state, out, first, forces = solve(start, rhs, e_N, g, u)
        point = work.friction_point
        slips = None if point is None else (point.start, point.end_slip(k, out.v))
        again = friction_switches(self, work, start, k, rhs, 2.0 * out.v - v if midpoint else out.v, out, detected,
                                  slips)  # fmt: skip
        if point is not None and (stopped := stops(point, k, out.v)).any():  # stopped within the step: end law
            work.friction_point, again = point.with_end(stopped), True
        if again:
            tried = out
            work.first = None if midpoint else out  # the islands without a switch keep their answer
            state, out, first, forces = solve(start, rhs, e_N, g, u)
            out.iterations += tried.iterations
            out.fallback = out.fallback or tried.fallback
        judge_step(self, start, out)  # within the tolerance, or stopped, or kept and marked (on_unsolved)
        v_new = out.v
        if midpoint:  # v_m solved: v+ = 2 v_m - v, q+ = q_m + h/2 v+; impulses over the whole step
            v_new = out.v = 2.0 * v_new - v
            out.bilateral = 2.0 * out.bilateral
        if work.friction_point is None:
            out.slip_world = slip_world_blocks(k.D_block, k.contact_body, v_new, k.tangent)
        else:  # the slip at the step's end, J(q+) v+ ~ 2 J(q_m) v_m - J(q) v
            end = work.friction_point.end_slip(k, 0.5 * (v + v_new))
            out.slip_world = end[:, 0, None] * k.tangent[:, 0] + end[:, 1, None] * k.tangent[:, 1]
        out.gap = k.gap
        q_new = update_positions(q_start, v if paper else v_new, h)
        check_state(self, state, q_new, v_new, out)
        done = 0.0  # the work of non-conservative loads and driven constraints, J
        if self._nonconservative:  # h f_nc . (v + v+)/2; with compliant rows h f_nc . v+ ("Run health")
            f_nc = (k if first is None else forces).nonconservative_force
            if self._soft_rows.size:
                done = self.dt * float(f_nc @ v_new)
            else:
                done = 0.5 * self.dt * float(f_nc @ (v + v_new))
        if self._driven:  # (h lam) . u_drive
            done += float(out.bilateral @ np.concatenate([-k.holonomic_rate, k.nonholonomic_rhs]))
        out.work = done
        following = StepState(
            q_new,
            v_new,
            (state.steps_done + 1) * self.dt,
            state.steps_done + 1,
            out.normal_force,
            out.friction_force,
            state.active_set if out.active_set is None else out.active_set,
            state.impulse_guess if out.impulse_guess is None else out.impulse_guess,
            *(() if out.detected is None else (out.detected.contacts, out.detected.impulse, out.detected.tangent)),
        )
        total = time.perf_counter() - begin
        out.timing = (work.clock[0], work.clock[1], total - work.clock[0] - work.clock[1])
        out.mu = work.mu
        return following, out

    # --- health checks (docs/theory/step.md, "Run health") -----------------------------------
    def _error(self, message, result=None) -> SimulationError:
        return step_error(self.state, message, result)

    # --- runs ---------------------------------------------------------------------------
    def snapshot(self) -> dict:
        """The mutable state of the run (copies; :func:`lcpdyn.run.snapshot.snapshot`):
        :meth:`restore` of it continues the run exactly as if it had not stopped."""
        return snapshot(self)

    def restore(self, state) -> None:
        """Continue from a :meth:`snapshot`, or from the file of a stopped run (a path to an .h5
        written by :meth:`run` with ``out=``; its parameters must be this simulation's)."""
        restore(self, state_from_file(self, state) if not isinstance(state, dict) else state)

    def run(
        self,
        t_end: float,
        progress: bool = False,
        *,
        out=None,
        record_every: int = 1,
        chunk_steps: int = 1024,
        overwrite: bool = False,
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
            ``.npz``: saved (atomically) when the run ends, completes or not; while the run goes
            it streams into a checkpoint beside it, ``<name>.npz.checkpoint.h5`` (the HDF5 form,
            resumable), removed once the ``.npz`` is saved, kept if saving fails. A write that
            fails (a full disk: each write checks for room before it starts) stops the run with
            :class:`OutputFailed`, naming the file that keeps the steps written and whether it
            can be continued; its ``trajectory`` holds every step done. A run from the start
            onto an existing file raises :class:`FileExistsError` before any step (naming what the
            file holds: a stopped run says how to continue it) unless ``overwrite=True``.
        record_every : record every k-th step (k >= 1; the last step is always recorded); the
            health flags of the steps skipped are OR-ed into the next recorded one, so no
            energy gain or fallback goes unreported. Memory grows with the recorded steps only
            (nothing is preallocated for the whole run).
        progress : a tqdm bar on a terminal; in a log (stderr not a terminal), a line every 30 s.

        Per-step ``health`` flags and the energy check are described in docs/theory/step.md
        ("Run health"). Wall times per step (s) are left in ``self.timing`` (steps x 5:
        Jacobians, assembly, solve, rest of the step, recording; at most the first
        ``TIMING_STEPS`` steps), not in the trajectory, which stays reproducible. Steps of the
        compiled loop (``compiled_loop=True``) get their chunk's shares: the compiled call as
        solve, the host's residual check as rest, the recording."""
        if not isinstance(overwrite, bool):
            raise TypeError(f"overwrite must be True or False, got {overwrite!r}")
        return run_loop.run(self, t_end, progress, out, record_every, chunk_steps, overwrite)

    _chunk_limit = CHUNK_STEPS  # the most steps asked of one compiled chunk


def simulate(
    model: Model, friction="regularized", dt: float = 1e-3, t_end: float = 1.0, progress=False, **options
) -> Trajectory:
    """Shortcut: ``Simulation(model, friction, dt, **options).run(t_end)``."""
    return Simulation(model, friction, dt, **options).run(t_end, progress=progress)
