"""A run as a differentiable JAX function of its initial state and its numbers (issue 49, item 2).

:class:`DifferentiableRun` takes a :class:`~lcpdyn.stepper.Simulation` of a scene the compiled loop
takes (:func:`lcpdyn.compiled_loop.unsupported`: the regularized, box, polygonal, continuous or
creep model, rigid or compliant contacts, no joints), or of such a scene under exact Coulomb, and
gives its run of ``steps`` steps as a pure function of (q0, v0, mu, constants, floats, mu_static):
the compiled loop's own traced step (:mod:`lcpdyn.compiled_loop`), with its second solve after a
friction switch inside a step (a breakaway with mu_s > mu_k, a kinetic slip that reversed) in the
form reverse mode takes, in a ``lax.scan``, each step under ``jax.checkpoint`` so that reverse mode
stores one state per step, not every intermediate (and the step's solver answers -- the pivoting's y
and final active set, the exact cone's r and modes -- so that its recomputation of the step does not
solve again). Its first step takes its friction bounds from lam_N of a first pass, as the ordinary
step does (there is no lagged lam_N at the start), so that the run is the simulation's own to
rounding. Under exact Coulomb each step's friction-contact problem u = W r + b (the velocities
eliminated, as :func:`lcpdyn.strategies.coulomb.solve_coulomb` poses it) is solved on the host and
differentiated on its contact modes (:mod:`lcpdyn.differentiable_coulomb`). ``jax.grad``,
``jax.jvp`` and ``jax.jacobian`` take it: the pivoting's answer is differentiated on its final
active set (``compiled_pivoting.pivot``'s rule; implicit differentiation, as
:mod:`solvers.sensitivity`), everything else by JAX.

What a derivative means: that of the motion on the active sets and friction branches the run
took. Where a step switches (a contact that starts or stops slipping, touches or lifts, a
regularized contact crossing its velocity threshold, a breakaway) the motion has one-sided
derivatives only, and the derivative given is that of the side the run is on (a number that
acts through a switch alone, as mu_s through the step a contact breaks away in, has derivative
0: :class:`lcpdyn.calibrate.Parameter`'s ``smoothing`` is for it); the run's outputs carry each
step's normal forces, slips and branch, and :meth:`DifferentiableRun.switches` lists the
switches inside a window (step, contact, mode before and after).

Nothing is taken on the traced step's word: every step's flag ``ok`` says whether its pivoting
converged and everything stayed finite; a run with a step not ok is not a solution, and its
derivative means nothing (:meth:`DifferentiableRun.check` raises, naming the step).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from . import compiled_pivoting, differentiable_coulomb
from .compiled_loop import CompiledLoop, initial_set, unsupported
from .compiled_step import chunk_function
from .kernels import GYROSCOPIC_NEWTON_TOLERANCE
from .precision import float64_arrays
from .step_state import StepState

__all__ = ["DifferentiableRun", "RunOutputs", "CONSTANTS", "contact_modes"]

#: The entries of the ``constants`` input, by name: h (s), the bristles' compliance 1/(k_T h²)
#: of the regularized model, its velocity threshold v_th (m/s; the continuous law's characteristic
#: velocity v0), the gap stabilization β, the static-friction threshold (m/s), the tolerance the
#: pivoting judges rounding by, and the creep law's Kalker coefficients f11, f22 (N), f23 (N m) and
#: least rolling speed (m/s) (0 under the other models).
CONSTANTS = (
    "dt", "compliance", "velocity_threshold", "stabilization", "static_threshold", "tolerance",
    "f11", "f22", "f23", "min_speed",
)  # fmt: skip


class RunOutputs(NamedTuple):
    """Per step (leading axis ``steps``): q+ and v+ (the generalized coordinates and velocities,
    as ``Simulation.q`` and ``.v``), the contacts' normal forces λ_N (N) and friction forces λ_T
    (N, world), their slips (m/s, world), which were on the regularized model's kinetic branch,
    ``ok``: the step's pivoting converged, everything stayed finite and the friction
    coefficients were valid (0 <= mu_k <= mu_s, as a contact requires), and ``coefficient``: the
    coefficient the step applied (the box's or polygonal cone's mu_s or, sliding, mu_k; the regularized model's mu_k,
    its static branch bounded by mu_s)."""

    q: jnp.ndarray
    v: jnp.ndarray
    normal_force: jnp.ndarray
    friction_force: jnp.ndarray
    slip: jnp.ndarray
    kinetic: jnp.ndarray
    ok: jnp.ndarray
    coefficient: jnp.ndarray | None = None


def contact_modes(outputs: RunOutputs, constants, mu, mu_static, box: bool, xp=np, smooth: bool = False):
    """Each contact's mode after each step, (steps, contacts) int8: 0 apart (lam_N = 0), 1
    sticking, 2 sliding -- the regularized model's kinetic branch, mu_k applied where it is below
    mu_s (``box``: the box model's or the polygonal cone's breakaway), or a slip above the static
    threshold (the entry of ``constants``) at the step's end; ``mu``, ``mu_static`` the run's inputs (NaN: follows mu).
    Where a mode changes between steps the run switched, and its derivative is one-sided there.
    ``smooth``: the continuous or the creep law, which have no stick (a load below mu_k lam_N creeps:
    Bauchau 2002 Eq. 28; Kalker's creep saturates smoothly) and no switch but touching and lifting --
    every loaded contact slides.
    ``xp``: NumPy, or ``jax.numpy`` inside a traced function."""
    threshold = constants[CONSTANTS.index("static_threshold")]
    slip = xp.sqrt(xp.sum(xp.asarray(outputs.slip) ** 2, axis=-1))
    sliding = xp.asarray(outputs.kinetic) | (slip > threshold) | smooth
    if box and outputs.coefficient is not None:  # the regularized model applies mu_k throughout
        static = xp.where(xp.isnan(mu_static), mu, mu_static)
        sliding = sliding | (xp.asarray(outputs.coefficient) < static)
    return xp.where(xp.asarray(outputs.normal_force) > 0.0, xp.where(sliding, 2, 1), 0).astype(xp.int8)


class DifferentiableRun:
    """The run of ``sim`` for ``steps`` steps from t = 0 as a JAX function (module docstring).

    Call it as ``run(q0, v0, mu, constants, floats, mu_static)`` (all float64 arrays;
    ``run.inputs`` are the simulation's own values) inside :func:`lcpdyn.precision.float64`; it
    returns :class:`RunOutputs`. ``floats`` are the model's packed numbers: gravity (3, m/s²), the
    bodies' masses (nb, kg), their inertia matrices about the centre in the body frame (nb x 9,
    kg m², row-major), then the contacts' geometry numbers, then each compliant contact's normal
    law (:meth:`law_numbers`) -- the derivative with respect to a mass, an inertia, a stiffness or a
    damping is that with respect to its entry. ``mu`` are the contacts' (kinetic) coefficients, ``mu_static``
    their static ones, NaN where a contact's static coefficient was not given and follows ``mu``
    (as :class:`~lcpdyn.contact.PointContact`'s does; None: the simulation's).
    ``checkpoint=False`` keeps every step's intermediates for reverse mode instead of
    recomputing them (memory growing with the steps; on the Peiret wheel it was also slower, 28x
    a forward run against 4.5x with checkpoints, 1,000 steps, measured 2026-11-30). A scene the compiled loop does
    not take, or whose friction model needs several passes per step, is refused with the
    reasons."""

    def __init__(self, sim, steps: int, checkpoint: bool = True):
        reasons = unsupported(sim, coulomb=True)
        if reasons:
            why = "; ".join(reasons)
            raise ValueError(f"DifferentiableRun: the compiled step does not take this simulation: {why}")
        loop = CompiledLoop(sim)
        if loop.static[7] > 1:
            raise ValueError(
                "DifferentiableRun: the friction model's bases are settled by passes within a step "
                "(static_bound='cone'), which are not differentiated yet"
            )
        if int(steps) != steps or steps < 1:
            raise ValueError(f"DifferentiableRun: steps must be a whole number >= 1, got {steps!r}")
        self.steps, self.checkpoint = int(steps), bool(checkpoint)
        self._single = chunk_function(
            loop._model, loop.layout, loop.static, GYROSCOPIC_NEWTON_TOLERANCE, differentiable=True
        )
        floats, ints, mu, _, constants = loop.numbers
        self._ints = ints
        q0, v0 = sim.model.initial_state()
        follows = [getattr(c, "_followed_mu", None) == c.mu_static for c in sim.model.contacts]
        mu_static = np.where(follows, np.nan, sim.mu_static)  # NaN: follows mu (not given)
        self.inputs = {"q0": np.asarray(q0, float), "v0": np.asarray(v0, float), "mu": np.asarray(mu),
                       "constants": np.asarray(constants), "floats": np.asarray(floats),
                       "mu_static": mu_static}  # fmt: skip
        self._contacts = loop.static[1]
        self._laws = {i: (start, order) for i, start, order in loop.layout.laws}
        # the pivoting starts from the active set of the simulation's own first step (the compiled
        # loop's chunks start from the host's too): from all basic, the polygonal cone's first
        # basic system would be singular (more directions basic than the tangent plane has)
        r, n = len(sim.model.contacts), sim.model.n_velocities
        start = StepState(q0, v0, 0.0, 0, np.zeros(r), np.zeros((r, 3)))
        first = sim.advance(start)[0].active_set if r else None
        self._codes = initial_set(first, loop.size, n, r)
        # box, polygonal or the exact cone: the coefficient applied tells a breakaway (contact_modes)
        self.box = bool(loop.static[2] or loop.static[8] or loop.static[9])
        # the continuous and creep laws: no stick, no switch but touch and lift
        self.smooth = bool(loop.static[10] or loop.static[11])
        # traced and compiled at the first call, once per run object; plain jax.jit (not
        # lcpdyn.compilation.jit): a run is called inside its users' own transformations and jits,
        # where a nested jit may not carry compiler options
        self._traced = jax.jit(self._run)

    def law_numbers(self, contact: int) -> tuple[slice, int]:
        """Where compliant contact ``contact``'s normal law (:mod:`lcpdyn.compliance`) sits in
        ``floats``: (the slice of its coefficients k_1..k_K, N/m^i; the index of its damping c,
        N s/m). A rigid contact is refused by name."""
        if contact not in self._laws:
            raise ValueError(f"DifferentiableRun.law_numbers: contact {contact!r} is no compliant contact of this run")
        start, order = self._laws[contact]
        return slice(start, start + order), start + order

    def __call__(self, q0, v0, mu, constants, floats, mu_static=None) -> RunOutputs:
        mu_static = self.inputs["mu_static"] if mu_static is None else mu_static
        inputs = float64_arrays(
            "DifferentiableRun", q0=q0, v0=v0, mu=mu, constants=constants, floats=floats, mu_static=mu_static
        )
        return self._traced(*inputs)

    def _run(self, q0, v0, mu, constants, floats, mu_static) -> RunOutputs:
        single, ints, r = self._single, self._ints, self._contacts
        mu_static = jnp.where(jnp.isnan(mu_static), mu, mu_static)
        kin = single.kinematics(q0, v0, 0.0 * constants[0], floats, ints)
        state = (q0, v0, kin, jnp.zeros(r), jnp.zeros((r, 3)), jnp.asarray(self._codes))

        def body(state, number):
            ok, new, row = single.advance(number, *state, floats, ints, mu, mu_static, constants)
            q, v, normal, friction, slip, _, kinetic, coefficient = row[:8]
            return new, RunOutputs(q, v, normal, friction, slip, kinetic, ok, coefficient)

        if r:  # the first step's bounds: lam_N of a first pass, as the ordinary step takes it (no lagged lam_N)
            first, trial, _ = single.advance(0, *state, floats, ints, mu, mu_static, constants)
            state = (q0, v0, kin, trial[3], state[4], trial[5])
        if self.checkpoint:  # the solvers' answers kept: reverse mode's recomputed step does not solve again
            kept = (*compiled_pivoting.SAVED, *differentiable_coulomb.SAVED)
            body = jax.checkpoint(body, policy=jax.checkpoint_policies.save_only_these_names(*kept))
        _, outputs = jax.lax.scan(body, state, jnp.arange(self.steps))
        ok = outputs.ok.at[0].set(outputs.ok[0] & first) if r else outputs.ok
        valid = jnp.all(mu >= 0.0) & jnp.all(mu_static >= mu)  # as Contact requires: 0 <= mu_k <= mu_s
        return outputs._replace(ok=ok & valid)

    def modes(self, outputs: RunOutputs, constants=None, mu=None, mu_static=None) -> np.ndarray:
        """:func:`contact_modes` of ``outputs`` with the ``constants``, ``mu`` and ``mu_static``
        they were run with (default: the run's own inputs)."""
        pick = lambda name, value: self.inputs[name] if value is None else np.asarray(value)  # noqa: E731
        return np.asarray(
            contact_modes(
                outputs,
                pick("constants", constants),
                pick("mu", mu),
                pick("mu_static", mu_static),
                self.box,
                smooth=self.smooth,
            )
        )

    def switches(self, outputs: RunOutputs, constants=None, mu=None, mu_static=None) -> list[tuple[int, int, str, str]]:
        """The switches inside a differentiated window: (step, contact, mode before, mode after)
        for every change of :meth:`modes` from one step to the next (``"apart"``, ``"sticking"``,
        ``"sliding"``); the step is the first in the new mode. Empty: the run kept its modes,
        and its derivative is the two-sided one of the motion on them. Under exact Coulomb on
        redundant contacts (a box on its four corners) the host's answer is one vertex of the
        family of load sharings, which may change from step to step: such changes are listed
        (apart <-> sliding) although the motion does not switch."""
        modes = self.modes(outputs, constants, mu, mu_static)
        names = ("apart", "sticking", "sliding")
        steps, contacts = np.nonzero(modes[1:] != modes[:-1])
        return [(int(k) + 1, int(c), names[modes[k, c]], names[modes[k + 1, c]]) for k, c in zip(steps, contacts)]

    @staticmethod
    def check(outputs: RunOutputs) -> None:
        """Raises ``ArithmeticError`` naming the first step that is not ``ok``."""
        ok = np.asarray(outputs.ok)
        if not ok.all():
            raise ArithmeticError(
                f"DifferentiableRun: step {int(np.argmin(ok))} did not solve (its pivoting did not converge, a "
                "number was not finite, or a friction coefficient was not valid: 0 <= mu_k <= mu_s is required); "
                "the run is not a solution and its derivative means nothing"
            )
