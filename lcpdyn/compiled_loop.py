"""The whole-run compiled loop: many steps of a small scene in one compiled JAX call.

``Simulation(..., compiled_loop=True)`` makes :meth:`lcpdyn.stepper.Simulation.run` advance the
run in chunks of up to :data:`CHUNK_STEPS` steps, each chunk one call of an XLA program that
holds the whole step: the kinematics (the model's own traced function, as
:meth:`lcpdyn.model.Model.compile` compiles it), the gap terms, the gyroscopic midpoint step,
the friction model's rows (regularized, Peiret 2016 Eqs. 9-20 and 25-27; box; the polygonal
cone, Eqs. 13-16), the bounded
MLCP of Eq. (30) solved by Júdice–Pires' basic-set pivoting (as :mod:`solvers.judice_pires`),
the step's second solve after a friction switch inside it (a breakaway with mu_s > mu_k, a
kinetic slip that reversed: :mod:`lcpdyn.friction_switches`' tests on the same numbers), and
the position update. At one contact the per-step cost is that of the arithmetic, not of a
Python call and a JAX dispatch per step.

Nothing is accepted on the compiled code's word. Every step's Eq. (30) problem (K, q, lo, hi)
and its answer come back to the host, where the framework's own relative residual
(:func:`solvers.result.relative_residual`'s measure, per row against the row's scale, the same
function every solver's answer goes through) judges it against ``tolerance``. The first step of
a chunk that failed anything -- pivoting that did not end, a residual above tolerance, a
non-finite number, a disk flat on its plane, a gyroscopic Newton step that did not converge --
and every step after it are discarded; that step is redone by the ordinary step
(:meth:`Simulation.step`: the fused Júdice–Pires solve, the fallback method, and the error
messages naming the culprit), and the loop goes on from its state. ``Simulation.loop_steps``
counts the steps taken each way.

Which scenes: the regularized, box, polygonal, continuous or creep model with ``judice-pires``,
rigid or compliant contacts, no bilateral rows (joints, ideal rolling), no friction profiles, no
extra normal-force passes, no solver options, and an Eq. (30) of at most :data:`MAX_SIZE`
unknowns (a dense pivoting solve per step is cubic in it; larger scenes belong to the island
path). :func:`unsupported` names what rules a scene out.

Differences from the ordinary step: the same equations in another order of floating-point
operations (XLA's, not Numba's), so the motion agrees to rounding -- on a well-posed step to
~1e-12 relative, and after many steps to the growth of rounding in the dynamics; on a
statically indeterminate contact set the two may pick different valid load sharings. Runs are
reproducible bit for bit either way. The gyroscopic step has no continuation in h (the
ordinary step, which has it, takes any step whose Newton iteration did not converge). Singular
basic systems (redundant contacts) get the ordinary Júdice–Pires' minimum-norm member.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from numba import njit

from solvers.result import _measure_kernel

from .compilation import jit
from .compiled_kinematics import _Layout
from .compiled_step import CHUNK_STEPS, chunk_function
from .friction import CompiledRows, compiled_rows
from .kernels import GYROSCOPIC_NEWTON_TOLERANCE, kinetic_energy, readonly
from .precision import float64

__all__ = [
    "CompiledLoop", "Chunk", "unsupported", "initial_set", "unknowns", "declined_by_auto", "REDUNDANT_CONTACTS",
    "measure", "measure_batch", "batched_chunk", "CHUNK_STEPS", "MAX_SIZE", "COMPILATIONS",
]  # fmt: skip

MAX_SIZE = 96
"""Largest Eq. (30) (velocities + normal + friction unknowns) the compiled loop takes."""
_COMPILED: OrderedDict = OrderedDict()  # structure key -> executable, shared by models of one structure
COMPILATIONS = [0]
"""How many chunk functions this process traced and compiled (a sweep over numbers adds none)."""
_CACHE_SIZE = 16


def unsupported(sim, coulomb: bool = False) -> list[str]:
    """Why the compiled loop cannot run ``sim``'s scene (empty: it can). ``coulomb``: the exact
    cone is taken too (the differentiable run's step, whose friction-contact problem is solved on
    the host: :mod:`lcpdyn.differentiable_coulomb`)."""
    model = sim.model
    reasons = []
    rows = None if sim.coulomb and not coulomb else _step_rows(sim)
    if rows is None:
        reasons.append(
            f"friction model {sim.friction.name!r} "
            "(the loop builds the regularized, box, polygonal, continuous and creep rows)"
        )
    if sim.method != "judice-pires" and not (sim.coulomb and coulomb):  # the exact cone: solved on the host
        reasons.append(f"method {sim.method!r} (the loop pivots like 'judice-pires')")
    if model.n_bilateral:
        reasons.append(f"{model.n_bilateral} bilateral rows (joints, ideal rolling)")
    if any(c.friction_profile is not None for c in model.contacts):
        reasons.append("friction profiles mu(t)")
    if sim.position_update == "midpoint":
        reasons.append("position_update='midpoint' (the loop takes the first-order step)")
    if sim.normal_force_iterations:
        reasons.append("normal_force_iterations > 0")
    if sim.solver_options:
        reasons.append(f"solver options {sorted(sim.solver_options)}")
    size = unknowns(model, rows)
    if size > MAX_SIZE:
        reasons.append(f"Eq. (30) has {size} unknowns, more than MAX_SIZE = {MAX_SIZE} (use the island path)")
    if not model.contacts:
        reasons.append("no contacts")
    return reasons


_EXACT_CONE = CompiledRows(0.0, 0.0, False)
"""The exact cone's place in the step's structure: three unknowns per contact, as the two-row models'."""


def _step_rows(sim) -> CompiledRows | None:
    """The rows the compiled step builds for ``sim``'s friction model (None: it builds none)."""
    return _EXACT_CONE if sim.coulomb else compiled_rows(sim.friction, sim.dt)


def unknowns(model, rows) -> int:
    """The unknowns of the compiled step's Eq. (30): velocities, normal impulses and the friction
    model's (two per contact, or the polygonal cone's k + 1)."""
    r = len(model.contacts)
    per_contact = 2 if rows is None or not rows.directions else rows.directions + 1
    return model.n_velocities + r + per_contact * r


REDUNDANT_CONTACTS = 4
"""``compiled_loop="auto"`` leaves to the ordinary step a scene with a body on this many rigid
contacts or more (a box on its four corners). The loop takes such a scene when asked
(``compiled_loop=True``: its singular basic systems solved for their minimum-norm members, on
the sliding block ~0.1 ms a step against the ordinary step's ~0.6 ms), but its first use costs a
compilation (seconds) that a short run of a small scene does not repay."""


def declined_by_auto(sim) -> list[str]:
    """Why ``compiled_loop="auto"`` leaves a scene the loop could take to the ordinary step (empty:
    it takes it): a body on :data:`REDUNDANT_CONTACTS` rigid contacts or more."""
    counts: dict = {}
    for c in sim.model.contacts:
        counts[c.body.name] = counts.get(c.body.name, 0) + 1
    return [
        f"body {name!r} rests on {count} contacts (redundant; compiled_loop=True takes it)"
        for name, count in counts.items()
        if count >= REDUNDANT_CONTACTS
    ]


class Chunk(NamedTuple):
    """One compiled call's per-step outputs (leading axis: steps; ``done`` of them valid)."""

    done: int  # steps the compiled code completed before stopping (all ok as far as it knows)
    q: np.ndarray
    v: np.ndarray
    normal_force: np.ndarray
    friction_force: np.ndarray
    slip_world: np.ndarray
    gap: np.ndarray
    kinetic: np.ndarray
    mu: np.ndarray
    iterations: np.ndarray
    K: np.ndarray
    rhs: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    z: np.ndarray
    kinetic_energy: np.ndarray
    potential_energy: np.ndarray
    conservative_power: np.ndarray
    work: np.ndarray
    measured: tuple | None = None  # (relative, active, accepted) of :func:`measure`, if the caller measured


class CompiledLoop:
    """The compiled chunk function of one :class:`~lcpdyn.stepper.Simulation` (module
    docstring). Its numbers -- masses, inertias, geometry, mu, h, the model constants -- are
    inputs of the compiled code: simulations of one structure share one compilation."""

    def __init__(self, sim):
        model = sim.model
        self.layout = layout = _Layout(model)
        floats, ints = layout.pack(model)
        rows = _step_rows(sim)
        self.static = (
            len(model.bodies),
            len(model.contacts),
            bool(rows.rigid_box),
            sim.position_update == "paper",
            sim.gyroscopic == "midpoint",
            bool(sim._two_coefficients and not sim.friction.chooses_static_coefficient),
            bool(sim._nonconservative),
            1 + (sim._basis_passes if rows.cone else 0),  # the passes of one step
            int(rows.directions),  # the polygonal cone's k (0: two friction unknowns per contact)
            bool(sim.coulomb),  # the exact cone (the differentiable run's step only)
            bool(rows.continuous),  # the continuous law (v0 in the constants' velocity threshold)
            (2 if rows.creep[4] else 1) if rows.creep else 0,  # the creep law: 2 saturating (its numbers in constants)
        )
        creep = rows.creep[:4] if rows.creep else (0.0, 0.0, 0.0, 0.0)
        with float64():
            self.numbers = (
                jnp.asarray(floats),
                jnp.asarray(ints),
                jnp.asarray(sim.mu, jnp.float64),
                jnp.asarray(sim.mu_static, jnp.float64),
                jnp.asarray(
                    [
                        sim.dt,
                        rows.compliance,
                        rows.velocity_threshold,
                        sim.stabilization,
                        sim.static_threshold,
                        sim.tolerance,
                        *creep,
                    ],  # fmt: skip
                    jnp.float64,
                ),
            )
        key = (layout.key(), self.static) if model._shareable() else None
        self.executable = _COMPILED.get(key) if key is not None else None
        self._key, self._model = key, model
        self.size = unknowns(model, rows)
        self.mass, self.inertia = model.body_masses()

    def _compile(self):
        function = chunk_function(self._model, self.layout, self.static, GYROSCOPIC_NEWTON_TOLERANCE)
        q0, v0 = self._model.initial_state()
        r = self.static[1]
        args = (q0, v0, np.int64(0), np.zeros(r), np.zeros((r, 3)), np.zeros(self.size, np.int8), np.int64(1))
        COMPILATIONS[0] += 1
        with float64():
            self.executable = jit(function).lower(*args, *self.numbers).compile()
        if self._key is not None:
            _COMPILED[self._key] = self.executable
            while len(_COMPILED) > _CACHE_SIZE:
                _COMPILED.popitem(last=False)

    def run(self, state, steps: int) -> Chunk:
        """Up to ``min(steps, CHUNK_STEPS)`` steps from ``state`` (a StepState); stops early at
        the first step it knows failed. The host still measures every step (:func:`measure`)."""
        if self.executable is None and self._key is not None:  # one built after this loop was made
            self.executable = _COMPILED.get(self._key)
        if self.executable is None:
            self._compile()
        elif self._key is not None and self._key in _COMPILED:
            _COMPILED.move_to_end(self._key)
        warm = initial_set(state.active_set, self.size, self._model.n_velocities, len(self._model.contacts))
        with float64():
            out = self.executable(
                state.q, state.v, np.int64(state.steps_done), state.normal_force, state.friction_force, warm,
                np.int64(min(steps, CHUNK_STEPS)), *self.numbers,
            )  # fmt: skip
        out = [np.asarray(x) for x in out]
        out[15] = kinetic_energies(self.mass[None], self.inertia[None], out[2][:, None, :])[:, 0]
        return Chunk(int(out[0]), *out[1:])


def initial_set(active_set, size, n, r):
    """The compiled pivoting's starting set (codes, (size,) int8) from the previous step's active
    set (-1 lower, 0 basic, +1 upper; fixed variables and velocities are set by the code itself),
    all basic without one."""
    if active_set is None or active_set.shape[0] != size:
        return np.zeros(size, np.int8)
    codes = np.asarray(active_set, np.int8).copy()
    codes[codes == 2] = -1
    codes[:n] = 0
    return codes


def measure(K, rhs, lo, hi, z, done, tolerance):
    """The framework's relative residual of each of the first ``done`` steps' Eq. (30) answers
    (the same ``solvers.result._measure_kernel`` as every solver), their active sets, and
    how many leading steps are within ``tolerance``: :func:`measure_batch` of one copy."""
    relative, active, accepted = measure_batch(
        *(readonly(x[:, None]) for x in (K, rhs, lo, hi, z)), readonly([done]), readonly([float(tolerance)])
    )
    return relative[:, 0], active[:, 0], int(accepted[0])


@njit(cache=True, nogil=True)
def kinetic_energies(mass, inertia, v):
    """The kinetic energy of every state of a chunk, by the ordinary step's own kernel
    (:func:`lcpdyn.kernels.kinetic_energy`): ``v`` (steps, copies, 6 nb), ``mass`` (copies, nb),
    ``inertia`` (copies, nb, 3, 3) -> (steps, copies). On the host, so that a copy's energy does
    not depend on how XLA vectorized its call (a reduction's order may change with the call's
    size)."""
    steps, copies = v.shape[0], v.shape[1]
    out = np.empty((steps, copies))
    for i in range(steps):
        for b in range(copies):
            out[i, b] = kinetic_energy(mass[b], inertia[b], v[i, b])
    return out


@njit(cache=True, nogil=True)
def measure_batch(K, rhs, lo, hi, z, done, tolerance):
    """:func:`measure` of each copy of a batched chunk (:func:`batched_chunk`: leading axes
    steps x copies), the same kernel on the same numbers: ``(relative (steps, copies), active
    (steps, copies, size), accepted (copies,))``; the arrays as read-only views (one compilation,
    :func:`lcpdyn.kernels.readonly`). Releases the GIL (the batch measures one part
    of its copies while the compiled code steps another)."""
    steps, copies, size = z.shape
    relative = np.full((steps, copies), np.nan)
    active = np.zeros((steps, copies, size), np.int8)
    accepted = done.astype(np.int64)
    w = np.empty(size)
    for i in range(steps):  # step-major, as the arrays are laid out
        for b in range(copies):
            if i < accepted[b]:
                value, _, _, _ = _measure_kernel(K[i, b], rhs[i, b], lo[i, b], hi[i, b], z[i, b], w, active[i, b])
                relative[i, b] = value
                if not value <= tolerance[b]:
                    accepted[b] = i
    return relative, active, accepted


def batched_chunk(loop: CompiledLoop, copies: int, length: int):
    """The compiled chunk of ``copies`` simulations of ``loop``'s structure at once (the batch
    of :mod:`lcpdyn.batch`): ``(q, v, steps_done, normal_force, friction_force, codes, steps,
    floats, ints, mu, mu_static, constants)``, each with a leading axis of copies, ->
    ``(done (copies,), the per-step outputs of :class:`Chunk` with leading axes (length,
    copies))``. A ``lax.scan`` of ``length`` steps whose body is the single chunk's step
    (``advance``, the same traced code) vmapped over the copies; a copy stops advancing at its
    first failed step or after its own ``steps`` (0: it only rides along). Compiled once per
    structure, number of copies and length; the numbers are inputs."""
    key = ("batch", loop._key, copies, length)
    executable = _COMPILED.get(key)
    if executable is not None:
        _COMPILED.move_to_end(key)
        return executable
    single = chunk_function(loop._model, loop.layout, loop.static, GYROSCOPIC_NEWTON_TOLERANCE)
    kinematics, advance = jax.vmap(single.kinematics), jax.vmap(single.advance)

    def chunk(q, v, steps_done, normal_force, friction_force, codes, steps, floats, ints, mu, mu_static, constants):
        kin = kinematics(q, v, steps_done * constants[:, 0], floats, ints)

        def body(carry, i):
            alive, state = carry
            ok, new, row = advance(steps_done + i, *state, floats, ints, mu, mu_static, constants)
            ok = alive & ok & (i < steps)
            state = jax.tree_util.tree_map(
                lambda a, b: jnp.where(ok.reshape(ok.shape + (1,) * (a.ndim - 1)), a, b), new, state
            )
            return (ok, state), (ok, row)

        start = (jnp.ones(copies, bool), (q, v, kin, normal_force, friction_force, codes))
        _, (oks, rows) = jax.lax.scan(body, start, jnp.arange(length))
        done = jnp.sum(jnp.cumprod(oks.astype(jnp.int64), axis=0), axis=0)
        return (done, *rows)

    q0, v0 = loop._model.initial_state()
    r, size = loop.static[1], loop.size
    stack = lambda x: np.broadcast_to(np.asarray(x), (copies, *np.shape(x)))  # noqa: E731
    args = (
        stack(q0), stack(v0), stack(np.int64(0)), stack(np.zeros(r)), stack(np.zeros((r, 3))),
        stack(np.zeros(size, np.int8)), stack(np.int64(1)), *(stack(x) for x in loop.numbers),
    )  # fmt: skip
    COMPILATIONS[0] += 1
    with float64():
        executable = jit(chunk).lower(*args).compile()
    _COMPILED[key] = executable
    while len(_COMPILED) > _CACHE_SIZE:
        _COMPILED.popitem(last=False)
    return executable
