"""The exact Coulomb cone's strategies: the Delassus problem W r + b of the contacts, the velocities and
bilateral multipliers eliminated, solved whole or island by island by the friction-contact methods."""

from __future__ import annotations

import time

import numpy as np

from solvers import friction_contact
from solvers.friction_contact import FrictionContactProblem
from solvers.result import Status

from ..compiled_kinematics import _scatter
from ..islands import coulomb_islands as coulomb_island_kernel
from ..islands import free_velocity
from ..kkt import solve_kkt
from ..run.errors import step_error
from ..step_result import StepResult
from ..step_work import IslandAnswers
from .assembly import EMPTY, accept, sparse_rows
from .coulomb_rows import BoundedRows, split, widened
from .second_solve import islands_to_solve, kept_answer


def coulomb_groups(sim, work, state, k, rhs, u, e_N, h):
    """The exact cone island by island when bilateral rows couple bodies: each island's
    velocities and bilateral multipliers eliminated (:func:`lcpdyn.kkt.solve_kkt`, a sparse
    factorization for large islands), its Delassus problem solved by NSGS from the previous
    impulses, with the residual check and fallback of the dense path."""
    r, m = k.gap.shape[0], k.A_body.shape[0]
    v_new = free_velocity(sim._mass, sim._inertia, rhs)
    impulse = np.zeros(3 * r)
    bilateral = np.zeros(m)
    guess = state.impulse_guess
    iterations, fallback = 0, False
    groups = sim._groups.groups
    again = islands_to_solve(work, [g.contacts for g in groups])  # a second solve: the switched islands
    residual = np.zeros(len(groups)) if again is None else work.islands.residuals.copy()
    for j, g in enumerate(groups):
        if again is not None and not again[j]:
            continue
        start = time.perf_counter()
        c, n_g = g.contacts, g.columns.size
        H = np.empty((3 * c.size, n_g))
        H[0::3] = _scatter(k.N_block[c], g.slot, n_g)
        H[1::3] = _scatter(k.D_block[c, 0], g.slot, n_g)
        H[2::3] = _scatter(k.D_block[c, 1], g.slot, n_g)
        rows = (3 * c[:, None] + np.arange(3)).reshape(-1)
        A_g = sim._groups.rows_matrix(j, k.A_block, k.A_body)
        bounded = BoundedRows.of(work.bilateral_bounds, g.rows)
        free, response, W, b = delassus(sim,
            state, sim._mass[g.bodies], sim._inertia[g.bodies], A_g, H,
            rhs[g.columns], u[g.rows], e_N[c], work.normal_compliance[c], work.bilateral_compliance[g.rows], bounded,
        )  # fmt: skip
        middle = time.perf_counter()
        mu, start_guess = widened(bounded, work.mu[c], None if guess is None else guess[rows])
        if b.size:
            result = solve_fc(sim, W, b, mu, start_guess, sim.method)
            result, retried = accept(
                sim, state, result, lambda method, W=W, b=b, mu=mu, s=start_guess: solve_fc(sim, W, b, mu, s, method)
            )
            fallback = fallback or retried
            iterations += result.iterations
            residual[j] = result.relative_residual
            x = free + response @ result.r
            impulse[rows], bilateral[g.rows] = split(bounded, result.r, rows.size, x[n_g:])
        else:  # a mechanism without contacts or bounded rows: its bilateral system alone
            x = free
            bilateral[g.rows] = x[n_g:]
        v_new[g.columns] = x[:n_g]
        work.time(start, middle, time.perf_counter())
    work.islands = IslandAnswers(residual)
    per = impulse.reshape(r, 3) / h
    friction = per[:, 1, None] * k.tangent[:, 0] + per[:, 2, None] * k.tangent[:, 1]
    out = StepResult(
        v=v_new,
        normal_force=per[:, 0].copy(),
        friction_force=friction,
        status=int(Status.SOLVED),
        iterations=iterations,
        residual=float(residual.max()) if residual.size else 0.0,
        fallback=fallback,
        kinetic=np.zeros(r, bool),
        bilateral=bilateral,
        impulse_guess=impulse,
    )
    if again is None:
        return out
    solved = [g for g, redo in zip(groups, again) if redo]
    contacts = _joined([g.contacts for g in solved])
    return kept_answer(
        work,
        out,
        columns=_joined([g.columns for g in solved]),
        contacts=contacts,
        rows=_joined([g.rows for g in solved]),
        impulse=(3 * contacts[:, None] + np.arange(3)).reshape(-1),
    )


def _joined(indices):
    return np.concatenate(indices).astype(np.int64) if indices else np.zeros(0, np.int64)


def coulomb_islands(sim, work, state, k, rhs, e_N, h):
    """The exact cone island by island where no bilateral row couples bodies: each island's Delassus problem and
    NSGS in one compiled call, the islands it leaves above the tolerance re-solved with the fallback."""
    from solvers.contact_result import measure_friction_contact
    from solvers.local_coulomb import _grid

    islands = sim._islands
    options = sim._nsgs_options
    r = k.gap.shape[0]
    guess = state.impulse_guess if state.impulse_guess is not None else np.zeros(3 * r)
    again = islands_to_solve(work, islands.order, islands.starts)  # a second solve: the switched islands
    if again is not None:
        islands, _ = islands.subset(again)
    start = time.perf_counter()
    phis, grid_cos, grid_sin = _grid(options.grid_points)
    impulse, v_new, free, response, W, b, sweeps, relative, *_ = coulomb_island_kernel(
        sim._mass,
        sim._inertia,
        rhs,
        e_N,
        work.normal_compliance,
        k.N_block,
        k.D_block,
        work.mu,
        islands.order,
        islands.starts,
        islands.bodies,
        guess,
        options.max_sweeps,
        sim.tolerance,
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
    failed = np.flatnonzero(~(relative <= sim.tolerance))
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
        mu = work.mu[contacts]
        first = measure_friction_contact(
            W_j, b_j, mu, impulse[rows], Status.MAX_ITERATIONS, int(sweeps[j]),
            f"NSGS (exact local solves) on island {j}: no convergence in {int(sweeps[j])} sweeps",
            "nsgs", sim.tolerance,
        )  # fmt: skip
        result, retried = accept(
            sim,
            state,
            first,
            lambda method, W_j=W_j, b_j=b_j, mu=mu: friction_contact.solve_friction_contact(
                W_j, b_j, mu, method=method, tolerance=sim.tolerance
            ),
        )
        fallback = fallback or retried
        iterations += result.iterations
        relative[j] = result.relative_residual
        impulse[rows] = result.r
        body = islands.bodies[j]
        response_j = response[6 * pb : 6 * pb + 6 * size].reshape(6, size)
        v_new[6 * body : 6 * body + 6] = free[6 * body : 6 * body + 6] + response_j @ result.r
    # assembly: the islands' Delassus matrices and NSGS (one compiled call); solve: failed islands, velocities
    work.time(start, middle, time.perf_counter())
    if again is not None:  # the islands without a switch keep their first answer
        relative, kept = work.islands.residuals.copy(), relative
        relative[again] = kept
    work.islands = IslandAnswers(relative)
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
        bilateral=EMPTY,
        impulse_guess=impulse,
    )
    if again is not None:
        contacts = islands.order
        columns = (6 * islands.bodies[:, None] + np.arange(6)).reshape(-1)
        impulse_rows = (3 * contacts[:, None] + np.arange(3)).reshape(-1)
        return kept_answer(work, out, columns=columns, contacts=contacts, impulse=impulse_rows)
    if len(islands) == 1 and len(sim.model.bodies) == 1:
        out.problem = FrictionContactProblem(W.reshape(3 * r, 3 * r), b, work.mu.copy())
    return out


def solve_coulomb(sim, work, state, k, rhs, u, e_N, h):
    """The exact cone over the whole step: the velocities and bilateral multipliers eliminated (bounded rows kept as
    contacts of their own, :mod:`lcpdyn.strategies.coulomb_rows`), the Delassus problem solved and checked."""
    start = time.perf_counter()
    n, r = k.n_velocities, k.gap.shape[0]
    H = stacked_rows(k.N, k.D)
    A = sparse_rows(k.A_block, k.A_body, k.A_body.shape[0], n)  # not the dense (m, n): a beam's grows as N^2
    bounded = BoundedRows.of(work.bilateral_bounds)
    free, response, W, b = delassus(sim, state, sim._mass, sim._inertia, A, H, rhs, u, e_N, work.normal_compliance,
                                    work.bilateral_compliance, bounded)  # fmt: skip
    if sim.position_update == "midpoint":  # u = 2 H v_m + ...: each law at its FrictionPoint (docs/theory/step.md)
        W, b = 2.0 * W, 2.0 * b
        if work.friction_point is None:  # the slip at v+ = 2 v_m - v
            b[1::3] -= H[1::3] @ state.v
            b[2::3] -= H[2::3] @ state.v
        else:  # 2 J(q_m) v_m - J(q) v at the step's end, 2 J(q_m) v_m at its middle
            b.reshape(-1, 3)[:, 1:] -= work.friction_point.law_slip
    mu, guess = widened(bounded, work.mu, state.impulse_guess)
    result, fallback = solve_accepted(sim, work, state, W, b, mu, guess, start)
    x = free + response @ result.r
    impulse, bilateral = split(bounded, result.r, 3 * r, x[n:])
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
        problem=FrictionContactProblem(W, b, mu.copy()),
        bilateral=bilateral,
        impulse_guess=impulse,
    )


def delassus(sim, state, mass, inertia, A, H, rhs, u, e_N, CN, CA, bounded: BoundedRows | None = None):
    """(free, response, W, b) of the exact-cone problem over the contacts of H (3 r, n) with
    the velocities and the bilateral multipliers of the bodies (mass, inertia) eliminated
    (:func:`lcpdyn.kkt.solve_kkt`): x = free + response r, W = H response_v + C_N,
    b = H free_v + e_N (normal rows). With ``bounded`` rows (:mod:`~lcpdyn.strategies.coulomb_rows`)
    only the equalities are eliminated; the bounded rows follow the contacts as contacts of their
    own (r then has 3 (r + k) entries, x the equalities' multipliers)."""
    r3 = H.shape[0]
    if bounded is not None:
        rows_b = A[bounded.rows]
        rhs = rhs + np.asarray(rows_b.T @ bounded.center).reshape(-1)  # the bounds' middles act as known impulses
        H = np.vstack([H, bounded.stacked(rows_b)])
        u_b, CA_b = u[bounded.rows], CA[bounded.rows]
        A, u, CA = A[bounded.equal], u[bounded.equal], CA[bounded.equal]
    n, m = H.shape[1], A.shape[0]
    right = np.zeros((n + m, 1 + H.shape[0]))
    right[:n, 0] = rhs
    right[n:, 0] = u
    right[:n, 1:] = H.T
    try:
        solution = solve_kkt(mass, inertia, A, right, CA)
    except np.linalg.LinAlgError as exc:
        raise step_error(state, f"{exc} -- the step cannot eliminate the velocities") from exc
    free, response = solution[:, 0], solution[:, 1:]
    W = H @ response[:n]
    W = 0.5 * (W + W.T)
    normal = np.arange(0, r3, 3)
    W[normal, normal] += CN  # compliant contacts
    b = H @ free[:n]
    b[normal] += e_N
    if bounded is not None:
        bounded.complete(W, b, r3, u_b, CA_b)
    return free, response, W, b


def stacked_rows(N, D):
    """H (3 r, n) of the exact cone's problem from N (r, n) and D (2 r, n): per contact its normal,
    t1 and t2 rows (Siconos' ordering)."""
    H = np.empty((3 * N.shape[0], N.shape[1]))
    H[0::3], H[1::3], H[2::3] = N, D[0::2], D[1::2]
    return H


def solve_accepted(sim, work, state, W, b, mu, guess, start):
    """(result, fallback) of the Delassus problem W r + b solved by the simulation's method from
    ``guess``, with the residual check and fallback; the assembly time since ``start`` and the
    solve time go to the step's clock."""
    middle = time.perf_counter()
    result = solve_fc(sim, W, b, mu, guess, sim.method)
    work.time(start, middle, time.perf_counter())
    return accept(sim, state, result, lambda method: solve_fc(sim, W, b, mu, guess, method))


def solve_fc(sim, W, b, mu, guess, method):
    """The friction-contact problem (W, b, mu) solved by ``method`` at the simulation's tolerance (its options where
    it is the simulation's own method; NSGS from ``guess``)."""
    options = dict(sim.solver_options) if method == sim.method else {}
    return friction_contact.solve_friction_contact(
        W, b, mu, method=method, tolerance=sim.tolerance,
        initial_guess=guess if method == "nsgs" else None, **options,
    )  # fmt: skip
