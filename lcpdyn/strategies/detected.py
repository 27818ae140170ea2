"""The step with detected contacts (:mod:`lcpdyn.detected_contacts`): Eq. (30), or the exact cone's
Delassus problem, over every velocity, bilateral row, declared contact and detected contact at once --
the friction model's own block for both kinds of contact, whose rows differ only in their Jacobians."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from solvers.friction_contact import FrictionContactProblem
from solvers.problem import BoundedLCP

from ..detected_contacts import DetectedSet, bounds_moved
from ..step_result import StepResult
from .assembly import accept, assemble_rows, call, sparse_rows
from .coulomb import delassus, solve_accepted, stacked_rows

__all__ = ["DetectedResult", "solve_with_detected"]


@dataclass(frozen=True, eq=False)
class DetectedResult:
    """What a step did at its c detected contacts (:attr:`lcpdyn.step_result.StepResult.detected`).

    contacts : the :class:`~lcpdyn.collision.Contacts` the step was posed with.
    normal_force : (c,) lam_N+ (N); friction_force (c, 3) the world friction force (N).
    impulse : (c, 3) the world contact impulse h (lam_N n + lam_T) (N s) on the second body.
    tangent : (c, 2, 3) the friction directions t1, t2 the step used.
    impact : (c,) bool, the contacts whose row was Newton's impact law.
    kinetic : (c,) bool, the regularized model's kinetic branch.
    """

    contacts: object
    normal_force: np.ndarray
    friction_force: np.ndarray
    impulse: np.ndarray
    tangent: np.ndarray
    impact: np.ndarray
    kinetic: np.ndarray

    def __len__(self) -> int:
        return int(self.normal_force.shape[0])


def _joined(k, det: DetectedSet):
    return np.vstack([k.N, det.N]), np.vstack([k.D, det.D]), np.concatenate([k.tangent, det.tangent])


def _warm_start(state, n, m, r, det):
    """The last step's active set carried to this step's layout (velocities, bilateral rows, r
    declared then c detected normal rows, two friction rows per contact): a detected contact that
    persists keeps its codes, a new one starts separated. None where the layout does not match."""
    warm = state.active_set
    if warm is None:
        return None
    c = len(det)
    before = 0 if state.contacts is None else len(state.contacts)
    R0, R = r + before, r + c
    if warm.shape[0] != n + m + 3 * R0:
        return None
    out = np.zeros(n + m + 3 * R, np.int8)
    out[: n + m + r] = warm[: n + m + r]
    out[n + m + R : n + m + R + 2 * r] = warm[n + m + R0 : n + m + R0 + 2 * r]
    out[n + m + r : n + m + R] = -1
    kept = np.flatnonzero(det.previous >= 0)
    j = det.previous[kept]
    out[n + m + r + kept] = warm[n + m + r + j]
    friction0 = warm[n + m + R0 :].reshape(R0, 2)
    friction = out[n + m + R :].reshape(R, 2)
    friction[r + kept] = friction0[r + j]
    return out


def solve_with_detected(sim, state, k, det: DetectedSet, rhs, u, e_N, h) -> tuple[StepResult, DetectedResult]:
    """(the declared contacts' StepResult, the detected contacts' :class:`DetectedResult`) of one
    step posed whole over both."""
    if sim.coulomb:
        return _coulomb(sim, state, k, det, rhs, u, e_N, h)
    return _bounded(sim, state, k, det, rhs, u, e_N, h)


def _bounded(sim, state, k, det, rhs, u, e_N, h):
    n, m, r, c = k.n_velocities, k.A_body.shape[0], k.gap.shape[0], len(det)
    R = r + c
    N, D, tangent = _joined(k, det)
    mu = np.concatenate([sim._mu_now, det.mu])
    mu_static = np.concatenate([sim._mu_static_now, det.mu_static])
    e = np.concatenate([e_N, det.e_N])
    CN = np.concatenate([sim._normal_compliance, np.zeros(c)])
    normal = np.concatenate([state.normal_force, det.normal_force])
    friction_force = np.concatenate([state.friction_force, det.friction_force])
    switches = None
    if sim._branch is not None:  # a switch inside the step at a declared contact (lcpdyn.friction_switches)
        switches = {
            "branch": np.concatenate([sim._branch, np.zeros(c, np.int8)]),
            "guess": np.concatenate([sim._guess, np.zeros((c, 2))]),
        }
    warm = _warm_start(state, n, m, r, det) if sim._warm_capable.get(sim.method) else None
    layout = (n, m, R)
    passes = 1 + sim.normal_force_iterations + (1 if state.steps_done == 0 and r else 0) + sim._basis_passes
    options = sim.options
    iterations, fallback, done, extra = 0, False, 0, 0
    basis_force = result = block = None
    while True:
        start = time.perf_counter()
        if sim._basis_passes and done:  # the model's static basis from the last pass's force
            basis_force = sim.friction.world_force(result.z[n + m + R :], block, tangent, h)
        block, K, qv, lo, hi = assemble_rows(sim,
            sim.M, k.A, N, D, tangent, state.v, rhs, u, e, CN, sim._bilateral_compliance, h, mu, mu_static,
            normal, friction_force, None, basis_force, switches,
        )  # fmt: skip
        middle = time.perf_counter()
        result = call(sim, sim.method, K, qv, lo, hi, warm, layout)
        sim._clock[0] += middle - start
        sim._clock[1] += time.perf_counter() - middle
        result, retried = accept(sim, state, result, lambda method: call(sim, method, K, qv, lo, hi, None, layout))
        fallback = fallback or retried
        iterations += result.iterations
        warm = result.active_set
        latest = result.z[n + m : n + m + R] / h
        done += 1
        if done < passes:
            normal = latest.copy()
            continue
        # the detected contacts' friction bounds (docs/theory/detected-contacts.md, "Friction bounds")
        if c == 0 or extra >= options.bound_passes:
            break
        nf = block.F.shape[0]
        pair = (None, None, None)
        if nf == 2 * R:
            pair = tuple(x[n + m + R :].reshape(R, 2)[r:] for x in (result.z, lo, hi))
        moved = bounds_moved(normal[r:], np.maximum(latest[r:], 0.0), options.bound_change, *pair, det.rows.body)
        if not moved.any():
            break
        normal[r:] = np.where(moved, np.maximum(latest[r:], 0.0), normal[r:])
        extra += 1
    z = result.z
    world = sim.friction.world_force(z[n + m + R :], block, tangent, h)
    kinetic = np.asarray(block.kinetic, bool)
    out = StepResult(
        v=z[:n].copy(),
        normal_force=latest[:r].copy(),
        friction_force=world[:r],
        status=int(result.status),
        iterations=iterations,
        residual=result.relative_residual,
        fallback=fallback,
        kinetic=kinetic[:r].copy(),
        problem=BoundedLCP(K, qv, lo, hi),
        bilateral=z[n : n + m],
        active_set=result.active_set,
    )
    return out, _detected_result(det, latest[r:], world[r:], h, kinetic[r:])


def _coulomb(sim, state, k, det, rhs, u, e_N, h):
    start = time.perf_counter()
    n, m, r, c = k.n_velocities, k.A_body.shape[0], k.gap.shape[0], len(det)
    R = r + c
    N, D, tangent = _joined(k, det)
    H = stacked_rows(N, D)
    A = sparse_rows(k.A_block, k.A_body, m, n)
    e = np.concatenate([e_N, det.e_N])
    CN = np.concatenate([sim._normal_compliance, np.zeros(c)])
    free, response, W, b = delassus(sim, state, sim._mass, sim._inertia, A, H, rhs, u, e, CN, sim._bilateral_compliance)
    mu = np.concatenate([sim._mu_now, det.mu])
    declared = state.impulse_guess if state.impulse_guess is not None else np.zeros(3 * r)
    guess = np.concatenate([declared, det.impulse_guess.reshape(-1)])
    result, fallback = solve_accepted(sim, state, W, b, mu, guess, start)
    impulse = result.r
    x = free + response @ impulse
    per = impulse.reshape(R, 3) / h
    world = per[:, 1, None] * tangent[:, 0] + per[:, 2, None] * tangent[:, 1]
    out = StepResult(
        v=x[:n].copy(),
        normal_force=per[:r, 0].copy(),
        friction_force=world[:r],
        status=int(result.status),
        iterations=result.iterations,
        residual=result.relative_residual,
        fallback=fallback,
        kinetic=np.zeros(r, bool),
        problem=FrictionContactProblem(W, b, mu.copy()),
        bilateral=x[n:],
        impulse_guess=impulse[: 3 * r].copy(),
    )
    return out, _detected_result(det, per[r:, 0], world[r:], h, np.zeros(c, bool))


def _detected_result(det, normal_force, friction_force, h, kinetic):
    normal = det.rows.frame[:, 0]
    impulse = h * (normal_force[:, None] * normal + friction_force)
    return DetectedResult(
        contacts=det.contacts,
        normal_force=normal_force.copy(),
        friction_force=friction_force.copy(),
        impulse=impulse,
        tangent=det.tangent,
        impact=det.impact,
        kinetic=kinetic.copy(),
    )
