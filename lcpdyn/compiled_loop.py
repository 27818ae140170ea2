"""The whole-run compiled loop: many steps of a small scene in one compiled JAX call.

``Simulation(..., compiled_loop=True)`` makes :meth:`lcpdyn.stepper.Simulation.run` advance the
run in chunks of up to :data:`CHUNK_STEPS` steps, each chunk one call of an XLA program that
holds the whole step: the kinematics (the model's own traced function, as
:meth:`lcpdyn.model.Model.compile` compiles it), the gap terms, the gyroscopic midpoint step,
the friction model's rows (regularized, Peiret 2016 Eqs. 9-20 and 25-27; box), the bounded
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

Which scenes: the regularized or box model with ``judice-pires``, rigid contacts, no bilateral
rows (joints, ideal rolling), no friction profiles, no extra normal-force passes, no solver
options, and an Eq. (30) of at most :data:`MAX_SIZE` unknowns (a dense pivoting solve per
step is cubic in it; larger scenes belong to the island path). :func:`unsupported` names what
rules a scene out.

Differences from the ordinary step: the same equations in another order of floating-point
operations (XLA's, not Numba's), so the motion agrees to rounding -- on a well-posed step to
~1e-12 relative, and after many steps to the growth of rounding in the dynamics; on a
statically indeterminate contact set the two may pick different valid load sharings. Runs are
reproducible bit for bit either way. The gyroscopic step has no continuation in h (the
ordinary step, which has it, takes any step whose Newton iteration did not converge), and a
singular basic system (redundant rigid contacts) is not solved for its minimum-norm member
here: the step goes to the ordinary Júdice–Pires, which does that.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from numba import njit

from solvers.result import _measure_kernel

from .compiled_kinematics import _Layout
from .compiled_pivoting import inverse3 as _inverse3
from .compiled_pivoting import midpoint as _midpoint
from .compiled_pivoting import pivot as _pivot
from .friction import compiled_rows
from .friction_switches import BREAKAWAY
from .kernels import GYROSCOPIC_NEWTON_TOLERANCE, kinetic_energy
from .precision import float64

__all__ = [
    "CompiledLoop", "Chunk", "unsupported", "declined_by_auto", "REDUNDANT_CONTACTS", "measure",
    "measure_batch", "batched_chunk", "CHUNK_STEPS", "MAX_SIZE", "COMPILATIONS",
]  # fmt: skip

CHUNK_STEPS = 512
"""Steps per compiled call (the outputs of a chunk are kept until the host has checked them)."""
MAX_SIZE = 96
"""Largest Eq. (30) (velocities + normal + friction unknowns) the compiled loop takes."""
_COMPILED: OrderedDict = OrderedDict()  # structure key -> executable, shared by models of one structure
COMPILATIONS = [0]
"""How many chunk functions this process traced and compiled (a sweep over numbers adds none)."""
_CACHE_SIZE = 16


def unsupported(sim) -> list[str]:
    """Why the compiled loop cannot run ``sim``'s scene (empty: it can)."""
    model = sim.model
    reasons = []
    rows = None if sim.coulomb else compiled_rows(sim.friction, sim.dt)
    if rows is None:
        reasons.append(f"friction model {sim.friction.name!r} (the loop builds the regularized and box rows)")
    if sim.method != "judice-pires":
        reasons.append(f"method {sim.method!r} (the loop pivots like 'judice-pires')")
    if model.n_bilateral:
        reasons.append(f"{model.n_bilateral} bilateral rows (joints, ideal rolling)")
    if any(c.normal_law is not None for c in model.contacts):
        reasons.append("compliant contacts")
    if any(c.friction_profile is not None for c in model.contacts):
        reasons.append("friction profiles mu(t)")
    if sim.position_update == "midpoint":
        reasons.append("position_update='midpoint' (the loop takes the first-order step)")
    if sim.normal_force_iterations:
        reasons.append("normal_force_iterations > 0")
    if sim.solver_options:
        reasons.append(f"solver options {sorted(sim.solver_options)}")
    size = model.n_velocities + 3 * len(model.contacts)
    if size > MAX_SIZE:
        reasons.append(f"Eq. (30) has {size} unknowns, more than MAX_SIZE = {MAX_SIZE} (use the island path)")
    if not model.contacts:
        reasons.append("no contacts")
    return reasons


REDUNDANT_CONTACTS = 4
"""``compiled_loop="auto"`` leaves to the ordinary step a scene with a body on this many rigid
contacts or more (a box on its four corners): at rest on them the contacts are redundant, every
basic system is singular, and the loop hands each such step back (module docstring) -- it would
cost its compile and its refused chunks and take no step."""


def declined_by_auto(sim) -> list[str]:
    """Why ``compiled_loop="auto"`` leaves a scene the loop could take to the ordinary step (empty:
    it takes it): a body on :data:`REDUNDANT_CONTACTS` rigid contacts or more."""
    counts: dict = {}
    for c in sim.model.contacts:
        counts[c.body.name] = counts.get(c.body.name, 0) + 1
    return [
        f"body {name!r} rests on {count} contacts (redundant: singular bases the loop hands back)"
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
        rows = compiled_rows(sim.friction, sim.dt)
        self.static = (
            len(model.bodies),
            len(model.contacts),
            bool(rows.rigid_box),
            sim.position_update == "paper",
            sim.gyroscopic == "midpoint",
            bool(sim._two_coefficients and not sim.friction.chooses_static_coefficient),
            bool(sim._nonconservative),
            1 + (sim._basis_passes if rows.cone else 0),  # the passes of one step
        )
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
                    ],  # fmt: skip
                    jnp.float64,
                ),
            )
        key = (layout.key(), self.static) if model._shareable() else None
        self.executable = _COMPILED.get(key) if key is not None else None
        self._key, self._model = key, model
        self.size = model.n_velocities + 3 * len(model.contacts)
        self.mass, self.inertia = model.body_masses()

    def _compile(self):
        function = _chunk_function(self._model, self.layout, self.static, GYROSCOPIC_NEWTON_TOLERANCE)
        q0, v0 = self._model.initial_state()
        r = self.static[1]
        args = (q0, v0, np.int64(0), np.zeros(r), np.zeros((r, 3)), np.zeros(self.size, np.int8), np.int64(1))
        COMPILATIONS[0] += 1
        with float64():
            self.executable = jax.jit(function).lower(*args, *self.numbers).compile()
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
        warm = _initial_set(state.active_set, self.size, self._model.n_velocities, len(self._model.contacts))
        with float64():
            out = self.executable(
                state.q, state.v, np.int64(state.steps_done), state.normal_force, state.friction_force, warm,
                np.int64(min(steps, CHUNK_STEPS)), *self.numbers,
            )  # fmt: skip
        out = [np.asarray(x) for x in out]
        out[15] = kinetic_energies(self.mass[None], self.inertia[None], out[2][:, None, :])[:, 0]
        return Chunk(int(out[0]), *out[1:])


def _initial_set(active_set, size, n, r):
    """The pivoting's starting set from the previous step's active set (-1 lower, 0 basic,
    +1 upper; fixed variables and velocities are set by the code itself), all basic without one."""
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
        K[:, None], rhs[:, None], lo[:, None], hi[:, None], z[:, None], np.array([done]), np.array([tolerance])
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
    (steps, copies, size), accepted (copies,))``. Releases the GIL (the batch measures one part
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
    single = _chunk_function(loop._model, loop.layout, loop.static, GYROSCOPIC_NEWTON_TOLERANCE)
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
        executable = jax.jit(chunk).lower(*args).compile()
    _COMPILED[key] = executable
    while len(_COMPILED) > _CACHE_SIZE:
        _COMPILED.popitem(last=False)
    return executable


# --- the traced step ---------------------------------------------------------------------------


def _chunk_function(model, layout, static, newton_tolerance, differentiable=False):
    """The traced chunk (module docstring): ``(q, v, steps_done, normal_force, friction_force,
    codes, steps, floats, ints, mu, mu_static, constants) -> (done, per-step outputs...)``.
    ``differentiable``: the step's second solve after a switch inside it is taken in a form
    reverse mode differentiates (the first solve, then a cond on the second) instead of a while loop
    (which runs the solve's program a second time only where a step switched, also under vmap)."""
    nb, r, rigid_box, paper, midpoint, two_coefficients, nonconservative, passes = static
    cone = passes > 1
    n = 6 * nb
    body = layout.contact_body  # static: the structure
    columns = 6 * body[:, None] + np.arange(6)
    size = n + 3 * r
    max_iterations = 10 * size + 50
    contact_rows = np.arange(r)

    def kinematics(q, v, t, floats, ints):
        return layout.evaluate(model, q, v, t, floats, ints)

    def one_step(q, v, t, kin, normal_force, friction_force, codes, floats, ints, mu, mu_static, constants):
        h, compliance, v_th, beta, threshold, tolerance = (constants[i] for i in range(6))
        force, gap, N_block, D_block, _, _, _, _, _, tangent, _, margin, _, _, f_nc, _ = kin
        _, mass, inertia = layout.bodies(floats)
        vb = v.reshape(nb, 6)[body]  # (r, 6) the velocities of each contact's body
        slip = jnp.einsum("rkj,rj->rk", D_block, vb)  # (r, 2) D v in the base bases
        if two_coefficients:
            mu_now = jnp.where(jnp.sqrt(jnp.sum(slip**2, axis=1)) > threshold, mu, mu_static)
        else:
            mu_now = mu
        predicted = gap + (h * jnp.einsum("rj,rj->r", N_block, vb) if paper else 0.0)
        e_N = jnp.where(predicted >= 0.0, predicted, beta * predicted) / h
        linear = mass[:, None] * v.reshape(nb, 6)[:, :3] + h * force.reshape(nb, 6)[:, :3]
        omega = v.reshape(nb, 6)[:, 3:]
        torque = force.reshape(nb, 6)[:, 3:]
        if midpoint:
            angular, converged = jax.vmap(lambda I, w, tau: _midpoint(I, w, tau, h, newton_tolerance))(
                inertia, omega, torque
            )
            newton_ok = jnp.all(converged)
        else:
            angular = jnp.einsum("bij,bj->bi", inertia, omega) + h * torque
            newton_ok = True
        momentum = jnp.concatenate([linear, angular], axis=1).reshape(n)
        previous = jnp.einsum("rkj,rj->rk", tangent, friction_force)  # the previous force, base basis
        M = jnp.zeros((n, n))
        inverse = jnp.zeros((n, n))
        for b in range(nb):
            M = M.at[6 * b : 6 * b + 3, 6 * b : 6 * b + 3].set(mass[b] * jnp.eye(3))
            M = M.at[6 * b + 3 : 6 * b + 6, 6 * b + 3 : 6 * b + 6].set(inertia[b])
            inverse = inverse.at[6 * b : 6 * b + 3, 6 * b : 6 * b + 3].set(jnp.eye(3) / mass[b])
            inverse = inverse.at[6 * b + 3 : 6 * b + 6, 6 * b + 3 : 6 * b + 6].set(_inverse3(inertia[b]))
        N = jnp.zeros((r, n)).at[contact_rows[:, None], columns].set(N_block)

        def friction_rows(normal_force, basis_force, mu_now, branch, guess):
            """(F_block (r, 2, 6), C, c, bound (2r,), basis, kinetic): lcpdyn.friction.regularized.regularized_block,
            lcpdyn.friction.box.box_block; ``basis_force`` (r, 2) in the base basis (static_bound="cone");
            ``mu_now`` the coefficients applied, ``branch`` and ``guess`` a switch inside the step (as the
            ordinary block takes them: 0 the slip's branch, 1 kinetic about ``guess``, -1 static)."""
            if rigid_box:
                bound = h * mu_now * normal_force
                return (D_block, jnp.zeros(2 * r), jnp.zeros(2 * r), bound.repeat(2),
                        jnp.broadcast_to(jnp.eye(2), (r, 2, 2)), jnp.zeros(r, bool))  # fmt: skip
            chosen = jnp.where((branch == 1)[:, None], guess, slip)  # the slip the branch is chosen by
            speed = _length(chosen[:, 0], chosen[:, 1])
            magnitude = _length(previous[:, 0], previous[:, 1])
            kinetic = jnp.where(branch == 0, speed > v_th, (branch == 1) & (speed > 0.0))
            kinetic_bound = mu_now * normal_force
            static_bound = mu_static * normal_force
            safe_speed = jnp.where(kinetic, speed, 1.0)
            safe_magnitude = jnp.where(magnitude > 0.0, magnitude, 1.0)
            s1 = jnp.where(magnitude > 0.0, -previous[:, 0] / safe_magnitude, 1.0)  # static: against lam_T
            s2 = jnp.where(magnitude > 0.0, -previous[:, 1] / safe_magnitude, 0.0)
            target = -magnitude
            second_c = jnp.zeros(r)
            transverse = h * static_bound
            if cone:  # the basis of the force to keep in the cone; the bristle still pulls toward lam_T
                along = _length(basis_force[:, 0], basis_force[:, 1])
                safe_along = jnp.where(along > 0.0, along, 1.0)
                s1 = jnp.where(along > 0.0, -basis_force[:, 0] / safe_along, s1)
                s2 = jnp.where(along > 0.0, -basis_force[:, 1] / safe_along, s2)
                target = previous[:, 0] * s1 + previous[:, 1] * s2
                anchor = -previous[:, 0] * s2 + previous[:, 1] * s1
                second_c = -compliance * h * anchor
                transverse = h * jnp.sqrt(jnp.maximum(static_bound**2 - along**2, 0.0))
            e1 = jnp.where(kinetic, chosen[:, 0] / safe_speed, s1)
            e2 = jnp.where(kinetic, chosen[:, 1] / safe_speed, s2)
            target = jnp.where(kinetic, -kinetic_bound, target)
            second = jnp.where(
                kinetic & (kinetic_bound > 0.0),
                speed / (jnp.where(kinetic_bound > 0.0, kinetic_bound, 1.0) * h),
                compliance,
            )
            C = jnp.stack([jnp.full(r, compliance), second], axis=1).reshape(2 * r)
            c = jnp.stack([-compliance * h * target, jnp.where(kinetic, 0.0, second_c)], axis=1).reshape(2 * r)
            first_bound = h * jnp.where(kinetic, kinetic_bound, static_bound)
            bound = jnp.stack([first_bound, jnp.where(kinetic, first_bound, transverse)], axis=1).reshape(2 * r)
            F_block = jnp.stack(
                [
                    e1[:, None] * D_block[:, 0] + e2[:, None] * D_block[:, 1],
                    -e2[:, None] * D_block[:, 0] + e1[:, None] * D_block[:, 1],
                ],
                axis=1,
            )
            basis = jnp.stack([jnp.stack([e1, -e2], axis=1), jnp.stack([e2, e1], axis=1)], axis=1)
            return F_block, C, c, bound, basis, kinetic

        def solve(normal_force, basis_force, codes, switch):
            """One pass of Eq. (30): K = [[M, -N^T, -F^T], [N, 0, 0], [F, 0, C]], the velocities
            eliminated, v+ = M^-1 (M v* + h f + J^T y), J = [N; F], y the contact unknowns;
            ``switch`` = (mu_now, branch, guess) of :func:`friction_rows`."""
            F_block, C, c, bound, basis, kinetic = friction_rows(normal_force, basis_force, *switch)
            F = jnp.zeros((r, 2, n)).at[contact_rows[:, None, None], np.arange(2)[None, :, None], columns[:, None, :]]
            F = F.set(F_block).reshape(2 * r, n)
            K = jnp.block(
                [
                    [M, -N.T, -F.T],
                    [N, jnp.zeros((r, r)), jnp.zeros((r, 2 * r))],
                    [F, jnp.zeros((2 * r, r)), jnp.diag(C)],
                ]
            )
            rhs = jnp.concatenate([-momentum, e_N, c])
            lo = jnp.concatenate([jnp.full(n, -jnp.inf), jnp.zeros(r), -bound])
            hi = jnp.concatenate([jnp.full(n, jnp.inf), jnp.full(r, jnp.inf), bound])
            J = jnp.concatenate([N, F])
            response = inverse @ J.T
            free = inverse @ momentum
            W = J @ response + jnp.diag(jnp.concatenate([jnp.zeros(r), C]))
            y, iterations, solved, _ = _pivot(W, J @ free + rhs[n:], lo[n:], hi[n:], codes[n:], max_iterations)
            # the next step (or pass) starts from this answer's active set, exactly as the host derives it
            # from the measured active set (_initial_set): a step's result does not depend on where a
            # chunk begins, and a restored run continues bit for bit
            codes = codes.at[n:].set(jnp.where(y <= lo[n:], -1, jnp.where(y >= hi[n:], 1, 0)).astype(jnp.int8))
            z = jnp.concatenate([free + response @ y, y])
            in_base = jnp.einsum("rij,rj->ri", basis, z[n + r :].reshape(r, 2)) / h
            return z, codes, iterations, solved, K, rhs, lo, hi, kinetic, in_base

        def passes_of(switch, codes):
            """The step's solve with ``switch``: one pass, and the cone's passes
            (lcpdyn.strategies.dense) each from the last pass's force and lam_N, until a pass's force
            settles on the force its basis was built on (basis_settled)."""
            first = solve(normal_force, previous, codes, switch)
            if not cone:
                return first

            def settled(force, used, z, bounded, kinetic):  # lcpdyn.friction.base.basis_settled
                normal, bounded = jnp.maximum(z[n : n + r] / h, 0.0), jnp.maximum(bounded, 0.0)
                scale = jnp.maximum(jnp.sqrt(jnp.sum(force**2, axis=1)), mu_static * normal)
                moved = jnp.sqrt(jnp.sum((force - used) ** 2, axis=1)) <= tolerance * scale
                held = jnp.abs(normal - bounded) <= tolerance * jnp.maximum(normal, bounded)
                return jnp.all(held) & jnp.all(kinetic | moved)

            def going(carry):
                return (carry[0] < passes) & ~carry[1]

            def one_pass(carry):
                done, _, last, total, all_solved = carry
                z, codes, *_, in_base = last
                bounded = z[n : n + r] / h
                out = solve(bounded, in_base, codes, switch)
                return (
                    done + 1,
                    settled(out[-1], in_base, out[0], bounded, out[-2]),
                    out,
                    total + out[2],
                    all_solved & out[3],
                )

            z, _, iterations, solved, *_, kinetic, in_base = first
            start = (1, settled(in_base, previous, z, normal_force, kinetic), first, iterations, solved)
            _, _, last, iterations, solved = jax.lax.while_loop(going, one_pass, start)
            return (*last[:2], iterations, solved, *last[4:])

        def switches(out, switch):
            """The switches inside the step from its first solve ``out`` (lcpdyn.friction_switches,
            the same tests on the same numbers): (whether to solve again, the second solve's switch).
            Regularized: a kinetic contact whose slip reversed takes the static branch; with
            mu_s > mu_k a static contact that slid beyond its bristle, the kinetic branch about its
            slip. Box: a contact given mu_s that slid all the same takes mu_k."""
            z, kinetic, in_base = out[0], out[8], out[9]
            end = jnp.einsum("rkj,rj->rk", D_block, z[:n].reshape(nb, 6)[body])  # D v+, base bases
            end_size = _length(end[:, 0], end[:, 1])
            size_of_free = jnp.einsum("rkj,rj->rk", jnp.abs(D_block), jnp.abs(inverse @ momentum).reshape(nb, 6)[body])
            scale = BREAKAWAY * _length(size_of_free[:, 0], size_of_free[:, 1])  # |D| |v*|
            if rigid_box:
                slid = (switch[0] == mu_static) & (mu_static > mu) & (end_size > scale)
                return jnp.any(slid), (jnp.where(slid, mu, switch[0]), switch[1], switch[2])
            reversed_ = kinetic & (jnp.sum(slip * end, axis=1) <= 0.0)
            sigma = end + (in_base - previous) * (compliance * h)  # D v+ + (lam_T+ - lam_T) / (h k_T)
            slid = ~kinetic & (mu_static > mu) & (_length(sigma[:, 0], sigma[:, 1]) > scale) & (end_size > 0.0)
            branch = jnp.where(slid, 1, jnp.where(reversed_, -1, 0)).astype(jnp.int8)
            return jnp.any(branch != 0), (switch[0], branch, jnp.where(slid[:, None], end, 0.0))

        def solves(passes_of, unswitched, codes):
            """The step's first solve and, after a switch inside it, its second (from the step's own
            start, as the ordinary step's): (the last solve's outputs, iterations of both added;
            the switch it took). One solve in the program, run once or twice by a while loop; for
            reverse mode the first solve and a cond on the second (two solves in the program: a
            scan of two turns, each a cond, cost reverse mode 3.8x the time on the Peiret wheel)."""
            if differentiable:
                first = passes_of(unswitched, codes)
                again, switched = switches(first, unswitched)

                def second():
                    out = passes_of(switched, codes)
                    return (*out[:2], first[2] + out[2], *out[3:]), switched

                return jax.lax.cond(again, second, lambda: (first, unswitched))

            def turn(carry):
                count, _, last, total, switch = carry
                out = passes_of(switch, codes)
                again, switched = switches(out, switch)
                again = again & (count == 0)
                switch = jax.tree_util.tree_map(lambda a, b: jnp.where(again, a, b), switched, switch)
                return count + 1, again, out, total + out[2], switch

            blank = jax.eval_shape(lambda: passes_of(unswitched, codes))
            blank = jax.tree_util.tree_map(lambda a: jnp.zeros(a.shape, a.dtype), blank)
            start = (jnp.asarray(0), jnp.asarray(True), blank, jnp.asarray(0, blank[2].dtype), unswitched)
            carry = jax.lax.while_loop(lambda c: c[1], turn, start)
            _, _, out, total, switch = carry
            return (*out[:2], total, *out[3:]), switch

        unswitched = (mu_now, jnp.zeros(r, jnp.int8), jnp.zeros((r, 2)))
        if rigid_box and not two_coefficients:  # the box with one coefficient has no switch inside the step
            z, codes, iterations, solved, K, rhs, lo, hi, kinetic, in_base = passes_of(unswitched, codes)
            switch = unswitched
        else:
            (z, codes, iterations, solved, K, rhs, lo, hi, kinetic, in_base), switch = solves(
                passes_of, unswitched, codes
            )
        mu_now = switch[0]
        v_new = z[:n]
        impulse_N = z[n : n + r]
        friction_world = jnp.einsum("rk,rkj->rj", in_base, tangent)
        slip_new = jnp.einsum("rkj,rj->rk", D_block, v_new.reshape(nb, 6)[body])
        slip_world = jnp.einsum("rk,rkj->rj", slip_new, tangent)
        q_new = _update_positions(q, v if paper else v_new, h, nb)
        work = 0.5 * h * f_nc @ (v + v_new) if nonconservative else jnp.asarray(0.0)
        ok = solved & newton_ok & (margin >= 0.0) & jnp.all(jnp.isfinite(rhs))
        outputs = (
            q_new, v_new, impulse_N / h, friction_world, slip_world, gap, kinetic, mu_now, iterations,
            K, rhs, lo, hi, z, work,
        )  # fmt: skip
        return outputs, codes, ok

    def chunk(q, v, steps_done, normal_force, friction_force, codes, steps, floats, ints, mu, mu_static, constants):
        h = constants[0]
        kin = kinematics(q, v, steps_done * h, floats, ints)
        length = CHUNK_STEPS
        blank = (
            jnp.zeros((length, 7 * nb)), jnp.zeros((length, n)), jnp.zeros((length, r)), jnp.zeros((length, r, 3)),
            jnp.zeros((length, r, 3)), jnp.zeros((length, r)), jnp.zeros((length, r), bool), jnp.zeros((length, r)),
            jnp.zeros(length, jnp.int64), jnp.zeros((length, size, size)), jnp.zeros((length, size)),
            jnp.zeros((length, size)), jnp.zeros((length, size)), jnp.zeros((length, size)), jnp.zeros(length),
            jnp.zeros(length), jnp.zeros(length), jnp.zeros(length),
        )  # fmt: skip

        def going(c):
            i, ok = c[0], c[1]
            return ok & (i < steps)

        def body_fn(c):
            i, _, q, v, kin, normal_force, friction_force, codes, buffers = c
            ok, state, row = advance(
                steps_done + i, q, v, kin, normal_force, friction_force, codes, floats, ints, mu, mu_static, constants
            )
            buffers = tuple(b.at[i].set(x) for b, x in zip(buffers, row, strict=True))
            return (i + jnp.where(ok, 1, 0), ok, *state, buffers)

        start = (jnp.asarray(0), jnp.asarray(True), q, v, kin, normal_force, friction_force, codes, blank)
        done, _, _, _, _, _, _, _, buffers = jax.lax.while_loop(going, body_fn, start)
        return (done, *buffers)

    def advance(number, q, v, kin, normal_force, friction_force, codes, floats, ints, mu, mu_static, constants):
        """Step ``number`` (counted from the run's start) from (q, v) with kinematics ``kin``:
        (ok, (q+, v+, kin+, lam_N, lam_T, codes+), the step's row of per-step outputs)."""
        h = constants[0]
        _, mass, inertia = layout.bodies(floats)
        outputs, codes, ok = one_step(
            q, v, number * h, kin, normal_force, friction_force, codes, floats, ints, mu, mu_static, constants
        )
        q_new, v_new, lam_N, lam_T = outputs[0], outputs[1], outputs[2], outputs[3]
        kin_new = kinematics(q_new, v_new, (number + 1) * h, floats, ints)
        vb = v_new.reshape(nb, 6)
        # for the finiteness check: the recorded energy is the host's (kinetic_energies)
        kinetic_energy = 0.5 * (
            jnp.sum(mass * jnp.sum(vb[:, :3] ** 2, axis=1))
            + jnp.sum(vb[:, 3:] * jnp.einsum("bij,bj->bi", inertia, vb[:, 3:]))
        )
        potential, power = kin_new[12], kin_new[15]
        finite = jnp.all(jnp.isfinite(jnp.concatenate([jnp.ravel(x) for x in kin_new])))
        finite = finite & jnp.isfinite(kinetic_energy) & jnp.all(jnp.isfinite(q_new)) & jnp.all(jnp.isfinite(v_new))
        ok = ok & finite & jnp.all(jnp.isfinite(lam_N)) & jnp.all(jnp.isfinite(lam_T))
        row = (*outputs[:-1], kinetic_energy, potential, power, outputs[-1])
        return ok, (q_new, v_new, kin_new, lam_N, lam_T, codes), row

    chunk.kinematics, chunk.advance = kinematics, advance  # the batch's scan (lcpdyn.batch) steps with these
    return chunk


def _length(x, y):
    """sqrt(x² + y²), 0 where both are 0, with a finite derivative there (0: a resting contact's
    slip or a zero force carries no gradient through its length) -- the same numbers as jnp.sqrt."""
    square = x * x + y * y
    positive = square > 0.0
    return jnp.where(positive, jnp.sqrt(jnp.where(positive, square, 1.0)), 0.0)


def _update_positions(q, v, h, nb):
    """q+ = q + h Gamma(q) v with the quaternions renormalized (:func:`lcpdyn.kernels.update_positions`)."""
    q = q.reshape(nb, 7)
    v = v.reshape(nb, 6)
    position = q[:, :3] + h * v[:, :3]
    w, a, b, c = q[:, 3], q[:, 4], q[:, 5], q[:, 6]
    ox, oy, oz = v[:, 3], v[:, 4], v[:, 5]
    w1 = w + 0.5 * h * (-a * ox - b * oy - c * oz)
    a1 = a + 0.5 * h * (w * ox - c * oy + b * oz)
    b1 = b + 0.5 * h * (c * ox + w * oy - a * oz)
    c1 = c + 0.5 * h * (-b * ox + a * oy + w * oz)
    norm = jnp.sqrt(w1 * w1 + a1 * a1 + b1 * b1 + c1 * c1)
    quaternion = jnp.stack([w1, a1, b1, c1], axis=1) / norm[:, None]
    return jnp.concatenate([position, quaternion], axis=1).reshape(7 * nb)
