"""Event-driven exact Coulomb friction: a reference whose own error is the ODE solver's tolerance.

The time stepper's Coulomb reference (the exact cone at a fine step, as in Peiret 2016) is
first-order: its switch times are off by a step and its error can exceed the deviations it is
meant to judge. This module integrates the same model mode by mode instead.

The derivations, the choices made and what they were measured against: ``docs/theory/exact-reference.md``.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from .compilation import jit
from .precision import float64
from .reference_solution import (  # noqa: F401  (the public names of lcpdyn.reference)
    ESTIMATED_FIELDS,
    FREE,
    MODE_NAMES,
    SLIDE,
    STICK,
    Event,
    ExactSolution,
    ReferenceFailure,
    ReferenceInterrupted,
    error_estimate,
)
from .rotation import quaternion_rate_matrix, rotation_matrix

__all__ = [
    "FREE",
    "SLIDE",
    "STICK",
    "ExactSolution",
    "ReferenceFailure",
    "ReferenceInterrupted",
    "error_estimate",
    "exact_coulomb",
    "painleve_margin",
]


def _check_model(model):
    if len(model.bodies) != 1:
        raise ValueError(f"exact_coulomb: one rigid body is supported, the model has {len(model.bodies)}")
    if model.forces or model.holonomic or model.nonholonomic:
        raise ValueError("exact_coulomb: user forces and joints are not supported (gravity and contacts only)")
    if not model.contacts:
        raise ValueError("exact_coulomb: the model has no contacts")
    for i, c in enumerate(model.contacts):
        if c.normal_law is not None:
            raise ValueError(f"exact_coulomb: contact {i} is compliant; the reference is for rigid contact")
        if c.friction_profile is not None:
            raise ValueError(f"exact_coulomb: contact {i} has a friction_profile; the reference needs constant mu")
        if getattr(c, "ideal_rolling", False):
            raise ValueError(f"exact_coulomb: contact {i} has ideal rolling rows; give it a friction coefficient")


class _Dynamics:
    """The compiled pieces for one model (float64; call inside :func:`float64`)."""

    def __init__(self, model):
        body = model.bodies[0]
        self.k = len(model.contacts)
        self.mass = float(body.mass)
        self.inertia = np.asarray(body.inertia_matrix, float)
        self.gravity = np.asarray(model.gravity, float)
        self.mu = np.array([c.mu for c in model.contacts], float)
        self.mu_static = np.array([c.mu_static for c in model.contacts], float)
        numbers = [{k: jnp.asarray(np.asarray(v, np.float64)) for k, v in c.geometry().items()} for c in model.contacts]
        frames = [type(c).frame_of for c in model.contacts]
        mass, inertia, gravity = self.mass, jnp.asarray(self.inertia), jnp.asarray(self.gravity)
        inverse_mass = jnp.diag(jnp.concatenate([jnp.full(3, 1.0 / mass), jnp.zeros(3)]))
        inverse_mass = inverse_mass.at[3:, 3:].set(jnp.linalg.inv(inertia))
        mu = jnp.asarray(self.mu)
        k = self.k

        def geometry(x, q):
            R = rotation_matrix(q / jnp.linalg.norm(q))
            out = [f(p, x, R, False) for f, p in zip(frames, numbers)]
            gaps = jnp.stack([o[0] for o in out])
            points = jnp.stack([o[1] for o in out])
            bases = jnp.stack([jnp.stack([o[2], o[3], o[4]]) for o in out])  # (k, 3, 3): rows n, t1, t2
            return gaps, points, bases, R

        def jacobians(x, q):
            _, points, bases, R = geometry(x, q)
            r = points - x
            skew = jax.vmap(lambda a: jnp.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]]))(r)
            return jnp.concatenate([bases, -jnp.einsum("kij,kjl,lm->kim", bases, skew, R)], axis=2)  # (k, 3, 6)

        def contact_velocities(x, q, velocity):
            return jacobians(x, q) @ velocity  # (k, 3)

        def step(y, modes, seeds, tolerance):
            x, q, velocity = y[:3], y[3:7], y[7:13]
            wb = velocity[3:]
            qdot = quaternion_rate_matrix(q / jnp.linalg.norm(q)) @ wb
            J = jacobians(x, q)
            u = J @ velocity
            drift = jax.jvp(lambda x_, q_: contact_velocities(x_, q_, velocity), (x, q), (velocity[:3], qdot))[1]
            f = jnp.concatenate([mass * gravity, -jnp.cross(wb, inertia @ wb)])
            Jf = J.reshape(3 * k, 6)
            W = Jf @ inverse_mass @ Jf.T
            w = Jf @ inverse_mass @ f + drift.reshape(3 * k)
            slip = u[:, 1:]
            speed = jnp.linalg.norm(slip, axis=1)
            # the slip's direction, continued through zero slip within a segment: where the slip has
            # turned against the segment's seed (past a stop the integrator steps across), the
            # direction keeps the seed's side, so the right-hand side stays smooth there
            # (seeds are world vectors: a contact's tangent basis may turn with the body)
            tangents = geometry(x, q)[2][:, 1:]  # (k, 2, 3)
            seeds_here = jnp.einsum("kij,kj->ki", tangents, seeds)
            seeds_here = seeds_here / jnp.maximum(jnp.linalg.norm(seeds_here, axis=1), 1e-300)[:, None]
            side = jnp.where(jnp.sum(slip * seeds_here, axis=1) < 0.0, -1.0, 1.0)
            unit = side[:, None] * slip / jnp.maximum(speed, 1e-300)[:, None]
            direction = jnp.where((speed > tolerance)[:, None], unit, seeds_here)
            rows, rhs = [], []
            eye = jnp.eye(3 * k)
            for i in range(k):
                for j in range(3):
                    row = 3 * i + j
                    # the row's acceleration kept at zero (W lam + w), or while sliding the friction
                    # component tied to the normal force: lam_j + mu_k s_j lam_N = 0
                    kept = W[row]
                    if j > 0:
                        sliding = eye[row] + mu[i] * direction[i, j - 1] * eye[3 * i]
                        kept = jnp.where(modes[i] == STICK, kept, sliding)
                    constraint = jnp.where(modes[i] == FREE, eye[row], kept)
                    value = jnp.where((modes[i] == FREE) | ((modes[i] == SLIDE) & (j > 0)), 0.0, -w[row])
                    rows.append(constraint)
                    rhs.append(value)
            A, b = jnp.stack(rows), jnp.stack(rhs)
            lam, *_ = jnp.linalg.lstsq(A, b)
            residual = jnp.linalg.norm(A @ lam - b)
            scale = jnp.linalg.norm(b) + jnp.linalg.norm(A, ord="fro") * jnp.linalg.norm(lam) + 1e-300
            # several motions: a null vector of A that moves the accelerations
            U, S, Vt = jnp.linalg.svd(A)
            null = S <= 1e-10 * S[0]
            motion = inverse_mass @ Jf.T @ Vt.T  # how each right singular vector moves a
            moved = jnp.linalg.norm(motion, axis=0)
            ambiguity = jnp.max(jnp.where(null, moved, 0.0)) / (jnp.max(moved) + 1e-300)
            a = inverse_mass @ (f + Jf.T @ lam)
            lam3 = lam.reshape(k, 3)
            dissipation = -jnp.sum(lam3[:, 1:] * u[:, 1:])  # the friction forces' power, negated (W)
            dy = jnp.concatenate([velocity[:3], qdot, a, dissipation[None]])
            gaps = geometry(x, q)[0]
            accelerations = J @ a + drift  # d/dt u_i, (k, 3)
            return dy, lam3, u, gaps, residual / scale, ambiguity, accelerations, W, direction, geometry(x, q)[2]

        self.step = jit(step)
        self.jacobians = jit(jacobians)
        self.inverse_mass = np.asarray(inverse_mass)

    def energy(self, y) -> float:
        v, wb = y[7:10], y[10:13]
        return float(0.5 * self.mass * v @ v + 0.5 * wb @ self.inertia @ wb - self.mass * self.gravity @ y[:3])


TURN_COSINE = math.cos(math.radians(80.0))
"""A sliding contact is reseeded where its slip has turned this far (cosine) from its seed."""

PAINLEVE_MARGIN = 1e-9
""":func:`painleve_margin` at or below which :func:`exact_coulomb` stops (Painleve's paradox)."""


def painleve_message(margin: float, t: float) -> str:
    """The message of a stop at Painleve's paradox (smallest scaled principal minor ``margin`` at time ``t``)."""
    return (
        f"exact_coulomb: Painleve's paradox at t = {t:.12g} s: the sliding contacts' normal problem is not a "
        f"P-matrix (smallest scaled principal minor {margin:.3g}), so friction can drive a sliding contact into "
        "the plane: the acceleration problem has no solution or several (contact and separation both consistent)"
    )


def painleve_margin(W, direction, modes, mu) -> float:
    """How far the sliding contacts' normal problem is from Painleve's paradox: the smallest
    principal minor of K, scaled by its diagonal's size (inf without sliding contacts).

    With the sliding contacts' forces lam_j = lam_N,j (n_j - mu_j s_j) and the sticking contacts'
    accelerations held at zero (their rows eliminated by a Schur complement of the Delassus
    operator W = J M^-1 J^T), the sliding contacts' normal accelerations are K lam_N + k0. The
    complementarity 0 <= lam_N _|_ K lam_N + k0 >= 0 has exactly one solution for every k0 iff K
    is a P-matrix (all principal minors > 0); otherwise friction can press a sliding contact into
    the plane faster than its normal force pushes it out, and depending on k0 there is no
    consistent motion (neither contact nor separation) or several (Painleve 1895; for a rod
    sliding on its end, K = 1/m (1 + 3 cos^2 theta - 3 mu sin theta cos theta) up to the sign of
    the slip)."""
    slide = [i for i in range(len(modes)) if modes[i] == SLIDE]
    if not slide:
        return math.inf
    k = len(modes)
    G = np.zeros((3 * k, len(slide)))
    for a, j in enumerate(slide):
        G[3 * j, a] = 1.0
        G[3 * j + 1 : 3 * j + 3, a] = -mu[j] * direction[j]
    normal = [3 * i for i in slide]
    K = W[normal] @ G
    stick = [3 * i + c for i in range(k) if modes[i] == STICK for c in range(3)]
    if stick:
        K = K - W[np.ix_(normal, stick)] @ np.linalg.pinv(W[np.ix_(stick, stick)]) @ W[stick] @ G
    size = np.sqrt(np.abs(np.diag(W)[normal]))
    K = K / np.outer(size, size)
    smallest = math.inf
    for mask in range(1, 2 ** len(slide)):
        chosen = [a for a in range(len(slide)) if mask >> a & 1]
        smallest = min(smallest, float(np.linalg.det(K[np.ix_(chosen, chosen)])))
    return smallest


def _state(model) -> np.ndarray:
    body = model.bodies[0]
    state = [body.position, body.orientation, body.velocity, body.body_angular_velocity, [0.0]]  # last: W
    return np.concatenate(state).astype(float)


def exact_coulomb(
    model,
    t_end: float,
    samples=None,
    *,
    rtol: float = 1e-11,
    atol: float = 1e-12,
    slip_tolerance: float = 1e-9,
    consistency: float = 1e-8,
    contact_tolerance: float = 1e-9,
    max_switches: int = 10000,
    max_evaluations: int = 400_000,
    method: str = "DOP853",
) -> ExactSolution:
    """The event-driven exact Coulomb solution of ``model`` (one rigid body, rigid plane
    contacts, gravity; docs/theory/exact-reference.md) from its initial state to ``t_end`` (s), sampled at
    ``samples`` (times in [0, t_end], default 1001 evenly spaced) from the ODE solver's dense
    output (``method``: SciPy's ``DOP853`` or ``Radau``, ``rtol``/``atol``). Contacts start in
    contact where |gap| <= ``contact_tolerance`` (m) and the normal velocity is not separating,
    sliding where |u_T| > ``slip_tolerance`` (m/s), else sticking (or sliding, seeded, where
    sticking would leave the cone). Raises :class:`ReferenceFailure` (with the solution so far)
    where the problem has no or several solutions or a contact touches down."""
    from scipy.integrate import solve_ivp

    _check_model(model)
    if not (isinstance(t_end, (int, float)) and math.isfinite(t_end) and t_end > 0):
        raise ValueError(f"exact_coulomb: t_end must be a positive number of seconds, got {t_end!r}")
    if method not in ("DOP853", "Radau", "RK45", "LSODA"):
        raise ValueError(f"exact_coulomb: method must be 'DOP853', 'Radau', 'RK45' or 'LSODA', got {method!r}")
    for name, value in (("rtol", rtol), ("atol", atol), ("slip_tolerance", slip_tolerance)):
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"exact_coulomb: {name} must be positive, got {value!r}")
    samples = np.linspace(0.0, t_end, 1001) if samples is None else np.asarray(samples, float)
    if samples.ndim != 1 or not samples.size or not np.all(np.isfinite(samples)) or np.any(np.diff(samples) < 0) \
            or samples[0] < 0 or samples[-1] > t_end:  # fmt: skip
        raise ValueError("exact_coulomb: samples must be increasing times within [0, t_end]")
    if not (isinstance(max_evaluations, int) and max_evaluations > 0):
        raise ValueError(f"exact_coulomb: max_evaluations must be a positive integer, got {max_evaluations!r}")
    parameters = {"t_end": float(t_end), "rtol": rtol, "atol": atol, "slip_tolerance": slip_tolerance,
                  "consistency": consistency, "method": method}  # fmt: skip
    with float64():
        dyn = _Dynamics(model)
        k = dyn.k
        y = _state(model)
        dyn.initial_energy = dyn.energy(y)
        first = [np.asarray(a) for a in dyn.step(y, np.full(k, FREE), np.tile([1.0, 0.0, 0.0], (k, 1)), slip_tolerance)]
        seeds = first[9][:, 1].copy()  # world vectors, each contact's first tangent to start with
        _, lam, u, gaps, *_ = (np.asarray(a) for a in dyn.step(y, np.full(k, FREE), seeds, slip_tolerance))
        modes = np.array([FREE if (gaps[i] > contact_tolerance or u[i, 0] > contact_tolerance) else
                          (SLIDE if np.hypot(*u[i, 1:]) > slip_tolerance else STICK) for i in range(k)])  # fmt: skip
        t, events, segments, pieces, rejected, evaluations, stalled = 0.0, [], [], [], [], [], 0

        def so_far():
            return _assemble(dyn, pieces, samples, events, segments, parameters, slip_tolerance, rejected,
                             evaluations)  # fmt: skip

        last = [None, None]  # the right-hand side and every event function ask for the same state

        def evaluate(y_, modes_, seeds_):
            key = (np.asarray(y_, float).tobytes(), np.asarray(modes_).tobytes(), np.asarray(seeds_).tobytes())
            if last[0] != key:
                last[:] = key, tuple(np.asarray(a) for a in dyn.step(y_, modes_, seeds_, slip_tolerance))
            return last[1]

        def world(y_, modes_, seeds_, i, vector):
            """A tangential vector of contact i, (t1, t2) components, in world axes."""
            return np.asarray(vector) @ evaluate(y_, modes_, seeds_)[9][i, 1:]

        def aligned(y_, modes_, seeds_):
            """The seeds with each sliding contact's slip direction where it slides faster than
            slip_tolerance (a seed is the side of the continued direction: it must not be stale)."""
            out, slips_ = seeds_.copy(), evaluate(y_, modes_, seeds_)[2][:, 1:]
            for i in range(k):
                speed = np.hypot(*slips_[i])
                if modes_[i] == SLIDE and speed > slip_tolerance:
                    out[i] = world(y_, modes_, seeds_, i, slips_[i] / speed)
            return out

        def settle(y_, modes_, seeds_, t_):
            """Modes consistent with the acceleration problem at a switch (docs/theory/exact-reference.md)."""
            freed = set()
            for _ in range(4 * k + 4):
                _, lam_, u_, gaps_, bad, ambiguity, acc_, W_, direction_, _ = evaluate(y_, modes_, seeds_)
                margin = painleve_margin(W_, direction_, modes_, dyn.mu)
                if margin <= PAINLEVE_MARGIN:  # before freeing a contact whose lam_N < 0: no consistent motion
                    raise ReferenceFailure(painleve_message(margin, t_), None)
                changed = False
                for i in range(k):
                    if modes_[i] == STICK:
                        tangential = np.hypot(*lam_[i, 1:])
                        if tangential > dyn.mu_static[i] * lam_[i, 0] * (1 + 1e-12) + 1e-300:
                            modes_[i], seeds_[i] = SLIDE, world(y_, modes_, seeds_, i, -lam_[i, 1:] / tangential)
                            changed = True
                    if modes_[i] != FREE and lam_[i, 0] < 0.0:
                        modes_[i] = FREE
                        freed.add(i)
                        changed = True
                if not changed:
                    for i in freed:  # freed, it must not accelerate into the plane
                        if acc_[i, 0] < -consistency * (1.0 + np.abs(acc_[i]).max()):
                            raise ReferenceFailure(
                                f"exact_coulomb: contact {i} can neither push (lam_N < 0) nor separate "
                                f"(normal acceleration {acc_[i, 0]:.3e} m/s^2) at t = {t_:.12g} s",
                                None,
                            )
                    return modes_, seeds_
            raise ReferenceFailure(f"exact_coulomb: no consistent modes at t = {t_:.12g} s", None)

        modes, seeds = settle(y, modes, aligned(y, modes, seeds), t)
        for _ in range(max_switches):
            current, current_seeds = modes.copy(), seeds.copy()
            # a sliding contact's direction if its slip falls below slip_tolerance within the segment
            # (where u_T / |u_T| is lost): its slip direction at the segment's start, so that lam_N and
            # the Painleve margin do not jump there (a seed opposite the slip fired a false lift-off)
            slips = evaluate(y, current, current_seeds)[2][:, 1:]
            for i in range(k):
                speed = np.hypot(*slips[i])
                if current[i] == SLIDE and speed > slip_tolerance:
                    current_seeds[i] = world(y, current, current_seeds, i, slips[i] / speed)

            work = [0]

            def rhs(_t, y_):
                work[0] += 1
                if work[0] > max_evaluations:
                    raise _Crawl(_t)
                return evaluate(y_, current, current_seeds)[0]

            def slip_speed(_t, y_, i):
                # signed: negative once the slip has turned against the segment's seed, so a stop is
                # found even where a step crosses zero slip; a turn through 90 degrees while sliding
                # also changes its sign (then the contact is reseeded, not stopped)
                out = evaluate(y_, current, current_seeds)
                slip = out[2][i, 1:] @ out[9][i, 1:]  # world
                speed = np.linalg.norm(slip)
                return (speed if slip @ current_seeds[i] >= 0.0 else -speed) - slip_tolerance

            # below this slip its direction is the ODE solver's noise: no turn is read there
            noise = max(slip_tolerance, 100.0 * rtol * float(np.max(np.abs(y[7:13]))))

            def turn(_t, y_, i):
                # the slip's direction turned 80 degrees from the segment's seed: a new segment,
                # reseeded, before the continuation through zero slip could take the wrong side
                out = evaluate(y_, current, current_seeds)
                slip = out[2][i, 1:] @ out[9][i, 1:]  # world
                return slip @ current_seeds[i] - TURN_COSINE * (np.linalg.norm(slip) - noise)

            def cone_margin(_t, y_, i):
                lam_ = evaluate(y_, current, current_seeds)[1]
                return dyn.mu_static[i] * lam_[i, 0] - np.hypot(*lam_[i, 1:])

            def normal_force(_t, y_, i):
                return evaluate(y_, current, current_seeds)[1][i, 0]

            def gap(_t, y_, i):
                return evaluate(y_, current, current_seeds)[3][i]

            def paradox(_t, y_):
                return painleve_margin(*evaluate(y_, current, current_seeds)[7:9], current, dyn.mu) - PAINLEVE_MARGIN

            events_here = [(-1, "painleve", paradox)] if np.any(current == SLIDE) else []
            for i in range(k):
                kinds = {SLIDE: [("stick", slip_speed), ("turn", turn)], STICK: [("slip", cone_margin)]}.get(
                    current[i], []
                )
                kinds += [("lift-off", normal_force)] if current[i] != FREE else [("touch-down", gap)]
                for kind, function in kinds:
                    events_here.append((i, kind, lambda _t, y_, i=i, function=function: function(_t, y_, i)))
            functions = []
            for _, _, g in events_here:
                g.terminal, g.direction = True, -1
                functions.append(g)
            try:
                sol = solve_ivp(rhs, (t, t_end), y, method=method, rtol=rtol, atol=atol, events=functions,
                                dense_output=True)  # fmt: skip
            except KeyboardInterrupt:
                raise ReferenceInterrupted(
                    f"exact_coulomb: interrupted (Ctrl-C) in the segment from t = {t:.12g} s; the solution "
                    "up to there is kept",
                    so_far(),
                ) from None
            except _Crawl as crawl:
                raise ReferenceFailure(
                    f"exact_coulomb: the ODE solver crawls: {max_evaluations} evaluations in the segment from "
                    f"t = {t:.12g} s without reaching its end or an event (last at t = {crawl.t:.12g} s); the "
                    "solution up to the segment's start is kept (raise max_evaluations, or try method='Radau' "
                    "where a small slip's direction makes the motion stiff)",
                    so_far(),
                ) from None
            if sol.status == -1:
                raise ReferenceFailure(f"exact_coulomb: the ODE solver failed at t = {sol.t[-1]:.12g} s: {sol.message}",
                                       so_far())  # fmt: skip
            _, _, _, _, bad, ambiguity, *_ = evaluate(sol.y[:, -1], current, current_seeds)
            if bad > consistency or ambiguity > 1e-8:
                what = "no solution" if bad > consistency else "several solutions"
                raise ReferenceFailure(
                    f"exact_coulomb: the acceleration problem of modes {segments[-1][2]} has {what} near "
                    f"t = {sol.t[-1]:.12g} s (Painleve)",
                    so_far(),
                )
            start, t, y = t, float(sol.t[-1]), sol.y[:, -1].copy()
            evaluations.append(work[0])
            pieces.append((start, t, sol.sol, current, current_seeds))
            segments.append((start, t, tuple(MODE_NAMES[m] for m in current)))
            if sol.status == 0:
                break
            fired = [n for n, times in enumerate(sol.t_events) if len(times)]
            # a slide that stops fires the normal force's event with it: at |u_T| = slip_tolerance the
            # slip direction falls back to the seed and lam_N jumps. The stick is the event; settle()
            # below frees the contact if sticking needs lam_N < 0.
            stopping = {events_here[n][0] for n in fired if events_here[n][1] == "stick"}
            fired = [n for n in fired if not (events_here[n][1] == "lift-off" and events_here[n][0] in stopping)]
            reseeded, stops = set(), []
            for n in fired:
                i, kind, _ = events_here[n]
                if kind == "painleve":
                    raise ReferenceFailure(painleve_message(PAINLEVE_MARGIN, t), so_far())
                if kind == "touch-down":
                    raise ReferenceFailure(
                        f"exact_coulomb: contact {i} touches down at t = {t:.12g} s; impacts are not modelled",
                        so_far(),
                    )
                if kind == "turn":
                    reseeded.add(i)
                    continue
                if kind == "stick":
                    # reversed beyond both the slip tolerance and the solver's noise: the slip turned
                    # from its seed without stopping, and slides on; within them it stopped
                    if np.hypot(*evaluate(y, current, current_seeds)[2][i, 1:]) > max(2.0 * slip_tolerance, noise):
                        reseeded.add(i)
                        continue
                    modes[i] = STICK
                    stops.append(i)
                elif kind == "slip":
                    lam = evaluate(y, current, current_seeds)[1]
                    seeds[i] = world(y, current, current_seeds, i, -lam[i, 1:] / max(np.hypot(*lam[i, 1:]), 1e-300))
                    modes[i] = SLIDE
                elif kind == "lift-off":
                    modes[i] = FREE
            removed = {}
            if stops:  # the stopping slips taken to zero: the state at the zero, the rest removed
                y, step = _to_zero_slip(dyn, y, current, current_seeds, stops[0], slip_tolerance) if len(stops) == 1 \
                    else (y, 0.0)  # fmt: skip
                t += step  # the segment ends at the zero (its dense output extrapolated over tau)
                pieces[-1], segments[-1] = (start, t, *pieces[-1][2:]), (start, t, segments[-1][2])
                y, removed = _remove_slip(dyn, y, modes, stops)
            stalled = stalled + 1 if t - start <= 64 * np.finfo(float).eps * max(1.0, abs(t)) else 0
            if stalled > 4 * k + 4:
                raise ReferenceFailure(
                    f"exact_coulomb: no progress at t = {t:.12g} s: {stalled} switches in a row at one instant "
                    f"(modes {segments[-1][2]})",
                    so_far(),
                )
            try:
                modes, seeds = settle(y, modes, aligned(y, modes, seeds), t)
            except ReferenceFailure as exc:
                raise ReferenceFailure(str(exc), so_far()) from None  # fmt: skip
            for n in fired:
                i, kind, _ = events_here[n]
                if i in reseeded and kind in ("stick", "turn"):
                    continue
                event = Event(t, i, kind, tuple(MODE_NAMES[m] for m in modes), removed.get(i, 0.0))
                if modes[i] != current[i]:
                    events.append(event)
                else:  # e.g. slip reaching zero where sticking would leave the cone: it slides on, reseeded
                    rejected.append(event)
        else:
            raise ReferenceFailure(f"exact_coulomb: more than {max_switches} switches before t = {t_end}",
                                   so_far())  # fmt: skip
        return so_far()


class _Crawl(Exception):
    """Raised inside the ODE solver's right-hand side when a segment exceeds its work bound."""

    def __init__(self, t):
        super().__init__(t)
        self.t = float(t)


def _to_zero_slip(dyn, y, modes, seeds, i, slip_tolerance):
    """From a stop event (contact ``i``'s slip u_T fallen to ``slip_tolerance``) to the slip's zero:
    one explicit step of tau = -u_T.a_T / |a_T|^2 (a_T = d/dt u_T, the direction held at the
    slip's own), the minimum of |u_T + tau a_T|. Its error is O(tau^2) with tau ~ slip_tolerance /
    |a_T| (~1e-10 s). Returns (y, tau); tau = 0 where the slip does not close linearly or the stop
    was a reversal within the solver's noise."""
    seeds = seeds.copy()
    out = dyn.step(y, modes, seeds, slip_tolerance)
    slip = np.asarray(out[2][i, 1:]) @ np.asarray(out[9][i, 1:])  # world
    seeds[i] = slip / max(float(np.linalg.norm(slip)), 1e-300)
    dy, _, u, _, _, _, acceleration, *_ = (np.asarray(a) for a in dyn.step(y, modes, seeds, slip_tolerance))
    slip, rate = u[i, 1:], acceleration[i, 1:]
    tau = -float(slip @ rate) / max(float(rate @ rate), 1e-300)
    # a stop found as a reversal within the solver's noise (|u_T| above the tolerance) is at the zero
    # already: its direction is noise, and so would be the step
    if not (
        0.0 < tau and np.hypot(*slip) <= 2.0 * slip_tolerance and np.hypot(*(slip + tau * rate)) < 0.5 * np.hypot(*slip)
    ):
        return y, 0.0
    return y + tau * dy, tau


def _remove_slip(dyn, y, modes, stops):
    """The impulse that brings every kept velocity row to zero at a stop: the stopping contacts'
    three rows, every other contact's normal row and the sticking contacts' tangential rows (the
    least change of kinetic energy, M-orthogonal projection). The kinetic energy it takes is booked
    as friction work, so E + W_friction stays constant. Returns (y, {contact: slip removed})."""
    k = len(modes)
    J = np.asarray(dyn.jacobians(y[:3], y[3:7])).reshape(3 * k, 6)
    rows = [3 * i + c for i in range(k) if modes[i] != FREE for c in ((0, 1, 2) if modes[i] == STICK else (0,))]
    velocity = y[7:13]
    removed = {i: float(np.hypot(*(J[3 * i + 1 : 3 * i + 3] @ velocity))) for i in stops}
    Jr = J[rows]
    impulse = np.linalg.lstsq(Jr @ dyn.inverse_mass @ Jr.T, -(Jr @ velocity), rcond=1e-12)[0]
    out = y.copy()
    out[7:13] = velocity + dyn.inverse_mass @ Jr.T @ impulse
    out[13] += dyn.energy(y) - dyn.energy(out)
    return out, removed


def _assemble(dyn, pieces, samples, events, segments, parameters, slip_tolerance, rejected,
              evaluations) -> ExactSolution:  # fmt: skip
    """Samples of the pieces' dense outputs (each time from the piece that covers it; a
    switch time from the piece that ends there)."""
    times = samples[samples <= pieces[-1][1]] if pieces else samples[:0]
    k = dyn.k
    states, forces, velocities, energies, gaps, bases, modes = [], [], [], [], [], [], []
    for time in times:
        piece = next((p for p in pieces if p[0] <= time <= p[1]), None)
        y = piece[2](time)
        _, lam, u, gap, *_, basis = (np.asarray(a) for a in dyn.step(y, piece[3], piece[4], slip_tolerance))
        states.append(y)
        forces.append(lam)
        velocities.append(u)
        energies.append(dyn.energy(y))
        gaps.append(gap)
        bases.append(basis)
        modes.append(piece[3])
    states = np.asarray(states).reshape(-1, 14)
    quaternions = states[:, 3:7] / np.linalg.norm(states[:, 3:7], axis=1, keepdims=True)
    omega = np.array([_rotate(q, w) for q, w in zip(quaternions, states[:, 10:13])]).reshape(-1, 3)
    return ExactSolution(
        t=times, position=states[:, :3], quaternion=quaternions, velocity=states[:, 7:10], angular_velocity=omega,
        contact_force=np.asarray(forces).reshape(-1, k, 3), contact_velocity=np.asarray(velocities).reshape(-1, k, 3),
        energy=np.asarray(energies), friction_work=states[:, 13], contact_gap=np.asarray(gaps).reshape(-1, k),
        contact_basis=np.asarray(bases).reshape(-1, k, 3, 3), contact_mode=np.asarray(modes, int).reshape(-1, k),
        initial_energy=dyn.initial_energy, events=list(events), segments=list(segments),
        parameters=dict(parameters), rejected=list(rejected), evaluations=list(evaluations),
    )  # fmt: skip


def _rotate(q, w):
    from .rotation import np_rotation_matrix

    return np_rotation_matrix(q) @ w
