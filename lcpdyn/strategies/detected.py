"""The step with detected contacts (:mod:`lcpdyn.detected_contacts`): Eq. (30), or the exact cone's
Delassus problem, over every velocity, bilateral row, declared contact and detected contact at once --
the friction model's own block for both kinds of contact, whose rows differ only in their Jacobians."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from solvers.friction_contact import FrictionContactProblem
from solvers.problem import BoundedLCP
from solvers.result import Status

from ..detected_contacts import DetectedSet, bounds_moved
from ..friction.base import basis_settled
from ..islands import free_velocity
from ..step_result import StepResult
from ..step_work import IslandAnswers
from .assembly import accept, assemble_rows, call, sparse_rows
from .choice import WHOLE_SIZE
from .coulomb import delassus, solve_accepted, stacked_rows
from .coulomb_rows import BoundedRows, split, widened
from .second_solve import islands_to_solve
from .sparse_island import (
    answer_codes,
    body_matrices,
    dense_fallback_allowed,
    solve_sparse_coulomb,
    solve_sparse_island,
    sparse_applies,
)

__all__ = ["DetectedResult", "detected_islands", "solve_with_detected"]


@dataclass(frozen=True, eq=False)
class DetectedResult:
    """What a step did at its c detected contacts (``detected`` of :class:`lcpdyn.step_result.StepResult`).

    contacts : the :class:`~lcpdyn.collision.Contacts` the step was posed with.
    normal_force : (c,) lam_N+ (N); friction_force (c, 3) the world friction force (N).
    impulse : (c, 3) the world contact impulse h (lam_N n + lam_T) (N s) on the second body.
    tangent : (c, 2, 3) the friction directions t1, t2 the step used.
    impact : (c,) bool, the contacts whose row was Newton's impact law.
    kinetic : (c,) bool, the regularized model's kinetic branch.
    islands : the number of problems the step was solved as (:func:`detected_islands`; 1: whole).
    sparse : how many of them were solved on their sparse Delassus form
        (:func:`~lcpdyn.strategies.sparse_island.sparse_applies`).
    """

    contacts: object
    normal_force: np.ndarray
    friction_force: np.ndarray
    impulse: np.ndarray
    tangent: np.ndarray
    impact: np.ndarray
    kinetic: np.ndarray
    islands: int = 1
    sparse: int = 0

    def __len__(self) -> int:
        return int(self.normal_force.shape[0])


def _joined(k, det: DetectedSet):
    return np.vstack([k.N, det.N]), np.vstack([k.D, det.D])


def _part_rows(k, det: DetectedSet, x, columns):
    """H (3 R_g, n_g) dense: per contact of the island (``x``, indices into the r declared then c
    detected contacts, declared first) its normal, t1 and t2 rows over the island's columns --
    the detected ones taken from the step's sparse rows, never the whole dense (c, n)."""
    r = k.gap.shape[0]
    declared, detected = x[x < r], x[x >= r] - r
    H = np.empty((3 * x.size, columns.size))
    d = declared.size
    H[0 : 3 * d : 3] = k.N[np.ix_(declared, columns)]
    H[1 : 3 * d : 3] = k.D[np.ix_(2 * declared, columns)]
    H[2 : 3 * d : 3] = k.D[np.ix_(2 * declared + 1, columns)]
    rows = (3 * detected[:, None] + np.arange(3)).reshape(-1)
    H[3 * d :] = det.H[rows][:, columns].toarray()
    return H


def _warm_start(state, n, m, r, det):
    """The last step's active set carried to this step's layout (velocities, bilateral rows, r
    declared then c detected normal rows, two friction rows per contact): a detected contact that
    persists keeps its codes, a new one starts separated. None where the layout does not match."""
    warm = state.active_set
    if warm is None:
        return None
    c = len(det)
    if state.contacts is det.contacts:  # the midpoint scheme's second pass: the first pass's layout
        return warm if warm.shape[0] == n + m + 3 * (r + c) else None
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


def solve_with_detected(sim, work, state, k, det: DetectedSet, rhs, u, e_N, h) -> tuple[StepResult, DetectedResult]:
    """(the declared contacts' StepResult, the detected contacts' :class:`DetectedResult`) of one
    step posed whole over both."""
    if sim.coulomb:
        return _coulomb(sim, work, state, k, det, rhs, u, e_N, h)
    return _bounded(sim, work, state, k, det, rhs, u, e_N, h)


@dataclass(frozen=True, eq=False)
class _Part:
    """One island of a step with detected contacts: its bodies' velocity columns, its bilateral
    rows, its contacts (indices into the step's r declared then c detected contacts), and
    ``whole`` when it is the whole problem in its own order."""

    columns: np.ndarray
    rows: np.ndarray
    contacts: np.ndarray
    whole: bool = False


def detected_islands(sim, k, det) -> list[_Part] | None:
    """The step's islands: the static groups of bodies that bilateral rows couple
    (:class:`~lcpdyn.islands.BodyGroups`, chosen once by
    :func:`~lcpdyn.strategies.choice.choose_detected_islands`) joined through this step's
    detected contacts between two bodies (connected components). A body in no island moves
    freely. None: the step is solved whole (no groups chosen; with ``sparse="auto"`` a problem of
    at most :data:`~lcpdyn.strategies.choice.WHOLE_SIZE` unknowns; a row that reaches a body
    outside its structural island; or one island that holds everything)."""
    groups = sim._detected_groups
    if groups is None:
        return None
    if not sim._split_always and k.n_velocities + k.A_body.shape[0] + 3 * (k.gap.shape[0] + len(det)) <= WHOLE_SIZE:
        return None
    if len(groups.groups) and not groups.conforms(k.A_block, k.A_body):
        return None
    nb = groups.n_bodies
    label = np.arange(len(groups.groups), len(groups.groups) + nb)  # a body in no group: its own label
    for j, g in enumerate(groups.groups):
        label[g.bodies] = j
    used = np.zeros(nb, bool)
    used[np.flatnonzero(label < len(groups.groups))] = True
    body = det.rows.body
    used[body[body >= 0]] = True
    both = (body[:, 0] >= 0) & (body[:, 1] >= 0)
    size = len(groups.groups) + nb
    graph = coo_matrix((np.ones(int(both.sum())), (label[body[both, 0]], label[body[both, 1]])), shape=(size, size))
    _, component = connected_components(graph.tocsr(), directed=False)
    of_body = component[label]
    of_row = np.empty(k.A_body.shape[0], np.int64)
    for g in groups.groups:
        of_row[g.rows] = of_body[g.bodies[0]]
    of_contact = np.concatenate([of_body[k.contact_body], of_body[np.max(body, axis=1)]])
    islands = np.unique(of_body[used])
    if islands.size == 1 and used.all():
        return None
    parts = []
    for island in islands:
        bodies = np.flatnonzero(used & (of_body == island))
        parts.append(
            _Part(
                columns=(6 * bodies[:, None] + np.arange(6)).reshape(-1),
                rows=np.flatnonzero(of_row == island),
                contacts=np.flatnonzero(of_contact == island),
            )
        )
    return parts


def _bounded(sim, work, state, k, det, rhs, u, e_N, h):
    n, m, r, c = k.n_velocities, k.A_body.shape[0], k.gap.shape[0], len(det)
    R = r + c
    tangent = np.concatenate([k.tangent, det.tangent])
    mu, branch, guess = work.with_detected(det)  # a switch inside the step (lcpdyn.friction_switches)
    arrays = {
        "mu": mu,
        "mu_static": np.concatenate([work.mu_static, det.mu_static]),
        "e": np.concatenate([e_N, det.e_N]),
        "CN": np.concatenate([work.normal_compliance, det.compliance]),
        "normal": np.concatenate([state.normal_force, det.normal_force]),
        "friction_force": np.concatenate([state.friction_force, det.friction_force]),
        # the body pairs of the contacts (a declared contact's second body is the world)
        "pair": np.vstack([np.stack([k.contact_body, np.full(r, -1)], axis=1), det.rows.body]),
    }
    if branch is not None:
        arrays["branch"], arrays["guess"] = branch, guess
    second = work.first is not None and work.bound_passes is not None
    if second:  # the bound passes go on from the first solve's last bounds (_passes_left)
        arrays["normal"] = np.concatenate([state.normal_force, work.bound_normal[r:]])
    bound_normal = arrays["normal"].copy()  # per contact, the lam_N its friction bound is taken from
    bound_passes = work.bound_passes.copy() if second else np.zeros(R, np.int64)  # and its island's passes
    warm = _warm_start(state, n, m, r, det) if sim._warm_capable.get(sim.method) else None
    parts = detected_islands(sim, k, det)
    if parts is None:
        parts = [_Part(np.arange(n), np.arange(m), np.arange(R), whole=True)]
    whole = len(parts) == 1 and parts[0].whole
    v_new = np.zeros(n) if whole else free_velocity(sim._mass, sim._inertia, rhs)  # no island: moves freely
    bilateral, latest = np.zeros(m), np.zeros(R)
    world, kinetic = np.zeros((R, 3)), np.zeros(R, bool)
    active = np.zeros(n + m + 3 * R, np.int8)  # velocities free (basic) where no island holds them
    iterations, fallback, result, K = 0, False, None, None
    residual, on_sparse = np.zeros(len(parts)), np.zeros(len(parts), bool)
    again = None if whole else islands_to_solve(work, [part.contacts for part in parts])
    if again is not None:  # a second solve: the islands without a switched contact keep their first answer
        first = work.first
        v_new, bilateral = first.v.copy(), first.bilateral.copy()
        latest = np.concatenate([first.normal_force, first.detected.normal_force])
        world = np.concatenate([first.friction_force, first.detected.friction_force])
        kinetic = np.concatenate([first.kinetic, first.detected.kinetic])
        active = first.active_set.copy()
        residual, on_sparse = work.islands.residuals.copy(), work.islands.sparse.copy()
    for j, part in enumerate(parts):
        if again is not None and not again[j]:
            continue
        x = part.contacts
        friction = np.stack([2 * x, 2 * x + 1], axis=1).reshape(-1)
        index = np.concatenate([part.columns, n + part.rows, n + m + x, n + m + R + friction])
        values = arrays if part.whole else {name: a[x] for name, a in arrays.items()}
        if sparse_applies(sim, part.rows.size, x, r):
            left = _passes_left(sim, bound_passes[x])
            answer = _sparse_part(sim, work, state, part, values, det, rhs, tangent[x], r, h, left)
            if answer.converged or not dense_fallback_allowed(
                sim, state, part, f"{answer.methods} and Gauss–Seidel: residual {answer.relative:.3g}",
                bool(np.isfinite(answer.v).all() and np.isfinite(answer.relative)),
            ):  # fmt: skip
                v_new[part.columns] = answer.v
                latest[x] = answer.normal / h
                world[x] = (
                    answer.tangential[:, 0, None] * tangent[x, 0] + answer.tangential[:, 1, None] * tangent[x, 1]
                ) / h
                kinetic[x] = answer.kinetic
                bound_normal[x] = answer.bound_normal
                bound_passes[x] += answer.bound_passes
                if active.size:
                    active[index] = answer_codes(answer)
                iterations += answer.iterations
                residual[j], on_sparse[j] = answer.relative, True
                continue
            iterations += answer.iterations
            fallback = True
        M_g = sim.M if part.whole else sim.M[np.ix_(part.columns, part.columns)]
        A_g = k.A if part.whole else k.A[np.ix_(part.rows, part.columns)]
        if part.whole:
            N_g, D_g = _joined(k, det)
        else:
            H_g = _part_rows(k, det, x, part.columns)
            N_g, D_g = H_g[0::3], np.empty((2 * x.size, part.columns.size))
            D_g[0::2], D_g[1::2] = H_g[1::3], H_g[2::3]
        solved = _solve_part(
            sim, work, state, part, values, M_g, A_g, N_g, D_g, tangent[x], state.v[part.columns], rhs[part.columns],
            u[part.rows], None if warm is None else warm[index], r, h, _passes_left(sim, bound_passes[x]),
        )  # fmt: skip
        result, block, its, retried, K, used, extra = solved
        bound_normal[x] = used
        bound_passes[x] += extra
        z = result.z
        iterations += its
        fallback = fallback or retried
        residual[j], on_sparse[j] = result.relative_residual, False
        n_g, m_g, R_g = part.columns.size, part.rows.size, x.size
        if part.whole:
            v_new = z[:n].copy()
        else:
            v_new[part.columns] = z[:n_g]
        bilateral[part.rows] = z[n_g : n_g + m_g]
        latest[x] = z[n_g + m_g : n_g + m_g + R_g] / h
        world[x] = sim.friction.world_force(z[n_g + m_g + R_g :], block, tangent[x], h)
        kinetic[x] = np.asarray(block.kinetic, bool)
        if active.size and result.active_set is not None and block.F.shape[0] == 2 * R_g:
            active[index] = result.active_set
        else:
            active = np.zeros(0, np.int8)  # not the layout a warm start reads (_warm_start)
    work.islands = IslandAnswers(residual, sparse=on_sparse)
    work.bound_normal, work.bound_passes = bound_normal, bound_passes
    sparse = int(on_sparse.sum())
    out = StepResult(
        v=v_new,
        normal_force=latest[:r].copy(),
        friction_force=world[:r],
        status=int(Status.SOLVED),  # accept() returns solved answers only
        iterations=iterations,
        residual=float(residual.max()) if residual.size else 0.0,
        fallback=fallback,
        kinetic=kinetic[:r].copy(),
        problem=BoundedLCP(*K) if whole and K is not None else None,
        bilateral=bilateral,
        active_set=result.active_set if whole and result is not None else active,
    )
    return out, _detected_result(det, latest[r:], world[r:], sim.dt, kinetic[r:], len(parts), sparse)


def _passes_left(sim, done: np.ndarray) -> int:
    """The bound passes an island may still take in this step: ``options.bound_passes`` counted over
    the step's two solves (``done``: the passes its contacts' islands took in the first), so that a
    second solve after a friction switch goes on from the first's last bounds
    (``work.bound_normal``) instead of taking them again from the lagged lam_N (docs/theory/step.md,
    "Friction switches inside the step")."""
    return max(0, sim.options.bound_passes - int(done.max(initial=0)))


def _sparse_rows(sim, det, detected, columns):
    """(H (3c, n_g) CSR, M^-1, M (n_g, n_g) CSR) of an island of the ``detected`` contacts over
    its bodies' ``columns`` (six per body)."""
    bodies = columns[::6] // 6
    H = det.H[(3 * detected[:, None] + np.arange(3)).reshape(-1)][:, columns].tocsr()
    inertia = sim._inertia[bodies]
    Minv, M = body_matrices(sim._mass[bodies], inertia, np.linalg.inv(inertia))
    return H, Minv, M


def _sparse_part(sim, work, state, part, values, det, rhs, tangent, r, h, bound_passes):
    """One island of detected contacts between free bodies on its sparse Delassus form
    (:func:`~lcpdyn.strategies.sparse_island.solve_sparse_island`), its rows taken from the step's
    sparse H, warm-started from the contacts' previous impulses (in a second solve, from the
    first solve's), with at most ``bound_passes`` bound passes."""
    x, columns = part.contacts, part.columns
    H, Minv, M = _sparse_rows(sim, det, x - r, columns)
    guess = det.impulse_guess[x - r]
    first = work.first.detected if work.first is not None else None
    if first is not None:  # a second solve: from the first solve's impulses, in this step's frames
        frame = det.rows.frame[x - r]
        impulse = h * (first.normal_force[x - r, None] * frame[:, 0] + first.friction_force[x - r])
        guess = np.einsum("kj,krj->kr", impulse, frame)
    return solve_sparse_island(
        sim.friction, H, Minv, M, Minv @ rhs[columns], rhs[columns], values["e"], values["CN"],
        (H @ state.v[columns]).reshape(-1, 3)[:, 1:], h, values["mu"], values["mu_static"], values["normal"],
        values["friction_force"], tangent, guess[:, 0], guess[:, 1:], values["pair"],
        dataclasses.replace(sim._sparse_settings, bound_passes=bound_passes),
        {"branch": values["branch"], "guess": values["guess"]} if "branch" in values else None, work.delassus,
    )  # fmt: skip


def _solve_part(sim, work, state, part, values, M, A, N, D, tangent, v, rhs, u, warm, r, h, bound_passes):
    """Eq. (30) over one island (or the whole step): the friction model's block, the solve with
    its residual check and fallback, the normal-force passes and at most ``bound_passes`` bound
    passes of the detected contacts. Returns (result, block, iterations, fallback, (K, q, lo, hi),
    the lam_N the last pass's bounds were taken from, the bound passes taken)."""
    n_g, m_g, R_g = M.shape[0], A.shape[0], N.shape[0]
    r_g = int(np.count_nonzero(part.contacts < r))  # the island's declared contacts come first
    normal = values["normal"].copy()
    switches = None if "branch" not in values else {"branch": values["branch"], "guess": values["guess"]}
    layout = (n_g, m_g, R_g)
    passes = 1 + sim.normal_force_iterations + (1 if state.steps_done == 0 and r else 0) + sim._basis_passes
    options = sim.options
    iterations, fallback, done, extra = 0, False, 0, 0
    basis_force = result = block = following = None
    while True:
        start = time.perf_counter()
        if sim._basis_passes and done:  # the model's static basis from the last pass's force
            basis_force = following
        block, K, qv, lo, hi = assemble_rows(sim,
            M, A, N, D, tangent, v, rhs, u, values["e"], values["CN"], work.bilateral_compliance[part.rows], h,
            values["mu"], values["mu_static"], normal, values["friction_force"], None, basis_force, switches,
            row_bounds=work.row_bounds(part.rows),
        )  # fmt: skip
        middle = time.perf_counter()
        result = call(sim, sim.method, K, qv, lo, hi, warm, layout)
        work.time(start, middle, time.perf_counter())
        result, retried = accept(sim, state, result, lambda method: call(sim, method, K, qv, lo, hi, None, layout))
        fallback = fallback or retried
        iterations += result.iterations
        warm = result.active_set
        latest = result.z[n_g + m_g : n_g + m_g + R_g] / h
        done += 1
        if sim._basis_passes:  # the next pass's static basis; the basis passes end once it settled
            following = sim.friction.world_force(result.z[n_g + m_g + R_g :], block, tangent, h)
            used = values["friction_force"] if basis_force is None else basis_force
            if passes - sim._basis_passes <= done < passes and basis_settled(
                following, used, latest, normal, values["mu_static"], sim.tolerance, block.kinetic
            ):
                done = passes
        if done < passes:
            normal = latest.copy()
            continue
        # the detected contacts' friction bounds (docs/theory/detected-contacts.md, "Friction bounds")
        if R_g == r_g or extra >= bound_passes:
            break
        nf = block.F.shape[0]
        pair = (None, None, None)
        if nf == 2 * R_g:
            pair = tuple(x[n_g + m_g + R_g :].reshape(R_g, 2)[r_g:] for x in (result.z, lo, hi))
        patch = values["pair"][r_g:]
        moved = bounds_moved(normal[r_g:], np.maximum(latest[r_g:], 0.0), options.bound_change, *pair, patch)
        if not moved.any():
            break
        normal[r_g:] = np.where(moved, np.maximum(latest[r_g:], 0.0), normal[r_g:])
        extra += 1
    return result, block, iterations, fallback, (K, qv, lo, hi), normal, extra


def _coulomb(sim, work, state, k, det, rhs, u, e_N, h):
    """The exact cone's step: per island (:func:`detected_islands`; or whole) the Delassus problem
    W r + b of its contacts, its velocities and bilateral multipliers eliminated, solved from the
    previous impulses with the residual check and fallback."""
    n, m, r, c = k.n_velocities, k.A_body.shape[0], k.gap.shape[0], len(det)
    R = r + c
    tangent = np.concatenate([k.tangent, det.tangent])
    A = sparse_rows(k.A_block, k.A_body, m, n)
    e = np.concatenate([e_N, det.e_N])
    CN = np.concatenate([work.normal_compliance, det.compliance])
    mu, _, _ = work.with_detected(det)  # a switch inside the step may give mu_k (lcpdyn.friction_switches)
    declared = state.impulse_guess if state.impulse_guess is not None else np.zeros(3 * r)
    guess = np.concatenate([declared, det.impulse_guess.reshape(-1)])
    parts = detected_islands(sim, k, det)
    whole = parts is None
    if whole:
        parts = [_Part(np.arange(n), np.arange(m), np.arange(R), whole=True)]
    v_new = np.zeros(n) if whole else free_velocity(sim._mass, sim._inertia, rhs)  # no island: moves freely
    bilateral, impulse = np.zeros(m), np.zeros(3 * R)
    iterations, fallback, result = 0, False, None
    residual, on_sparse = np.zeros(len(parts)), np.zeros(len(parts), bool)
    again = None if whole else islands_to_solve(work, [part.contacts for part in parts])
    if again is not None:  # a second solve: the islands without a switched contact keep their first answer
        first = work.first
        v_new, bilateral = first.v.copy(), first.bilateral.copy()
        impulse = work.islands.impulse.copy()
        residual, on_sparse = work.islands.residuals.copy(), work.islands.sparse.copy()
    for j, part in enumerate(parts):
        if again is not None and not again[j]:
            continue
        start = time.perf_counter()
        cols, x = part.columns, part.contacts
        rows3 = (3 * x[:, None] + np.arange(3)).reshape(-1)
        if sparse_applies(sim, part.rows.size, x, r):
            H_s, Minv, _ = _sparse_rows(sim, det, x - r, cols)
            middle = time.perf_counter()
            answer, sweeps, relative, converged = solve_sparse_coulomb(
                H_s, Minv, Minv @ rhs[cols], e[x], CN[x], mu[x], guess[rows3].reshape(-1, 3), sim._sparse_settings
            )
            work.time(start, middle, time.perf_counter())
            iterations += sweeps
            if converged or not dense_fallback_allowed(
                sim, state, part, f"NSGS and proximal Newton: residual {relative:.3g}",
                bool(np.isfinite(answer).all() and np.isfinite(relative)),
            ):  # fmt: skip
                impulse[rows3] = answer.reshape(-1)
                v_new[cols] = Minv @ (rhs[cols] + H_s.T @ answer.reshape(-1))
                residual[j], on_sparse[j] = relative, True
                continue
            fallback = True
        bodies = slice(None) if part.whole else cols[::6] // 6  # an island's columns: six per body
        H_g = stacked_rows(*_joined(k, det)) if part.whole else _part_rows(k, det, x, cols)
        A_g = A if part.whole else A[part.rows][:, cols]
        bounded = BoundedRows.of(work.bilateral_bounds, part.rows)
        free, response, W, b = delassus(sim,
            state, sim._mass[bodies], sim._inertia[bodies], A_g, H_g, rhs[cols], u[part.rows], e[x], CN[x],
            work.bilateral_compliance[part.rows], bounded,
        )  # fmt: skip
        if sim.position_update == "midpoint":  # the slip at v+ = 2 v_m - v, as solve_coulomb
            W, b = 2.0 * W, 2.0 * b
            b[1::3] -= H_g[1::3] @ state.v[cols]
            b[2::3] -= H_g[2::3] @ state.v[cols]
        mu_x, guess_x = widened(bounded, mu[x], guess[rows3])
        if b.size:
            result, retried = solve_accepted(sim, work, state, W, b, mu_x, guess_x, start)
            fallback = fallback or retried
            iterations += result.iterations
            residual[j], on_sparse[j] = result.relative_residual, False
            solution = free + response @ result.r
            impulse[rows3], bilateral[part.rows] = split(bounded, result.r, rows3.size, solution[cols.size :])
        else:  # a mechanism without contacts or bounded rows: its bilateral system alone
            solution = free
            bilateral[part.rows] = solution[cols.size :]
        v_new[cols] = solution[: cols.size]
    work.islands = IslandAnswers(residual, sparse=on_sparse, impulse=impulse)
    sparse = int(on_sparse.sum())
    per = impulse.reshape(R, 3) / h
    world = per[:, 1, None] * tangent[:, 0] + per[:, 2, None] * tangent[:, 1]
    out = StepResult(
        v=v_new,
        normal_force=per[:r, 0].copy(),
        friction_force=world[:r],
        status=int(Status.SOLVED),  # accept() returns solved answers only
        iterations=iterations,
        residual=float(residual.max()) if residual.size else 0.0,
        fallback=fallback,
        kinetic=np.zeros(r, bool),
        problem=FrictionContactProblem(W, b, mu_x.copy()) if whole and not sparse else None,
        bilateral=bilateral,
        impulse_guess=impulse[: 3 * r].copy(),
    )
    return out, _detected_result(det, per[r:, 0], world[r:], sim.dt, np.zeros(c, bool), len(parts), sparse)


def _detected_result(det, normal_force, friction_force, h, kinetic, islands=1, sparse=0):
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
        islands=islands,
        sparse=sparse,
    )
