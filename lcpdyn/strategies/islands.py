"""The island strategies: the step split by body (compiled per-body kernels for the regularized and box
models) or by group of bodies coupled by bilateral rows (any bounded-LCP model, assembled from its block)."""

from __future__ import annotations

import time

import numpy as np

from solvers.problem import BoundedLCP
from solvers.result import Status

from ..compiled_kinematics import _scatter
from ..friction.base import unsettled, world_kernel
from ..friction.creep import RollingKinematics
from ..islands import free_velocity, lcp_islands
from ..step_result import StepResult
from ..step_work import IslandAnswers
from .assembly import EMPTY, accept, assemble_rows, call, rolling_kinematics
from .coulomb import coulomb_groups, coulomb_islands
from .second_solve import islands_to_solve, kept_answer


def solve_islands(sim, work, state, k, rhs, u, e_N, h):
    """The step solved island by island (:mod:`lcpdyn.islands`): the same problem as the dense
    path, split by body (or by group of bodies coupled by bilateral rows); an island whose
    first solve fails goes through the full method and its fallback like the dense problem
    does."""
    if sim.coulomb:
        if sim._coupled:
            return coulomb_groups(sim, work, state, k, rhs, u, e_N, h)
        return coulomb_islands(sim, work, state, k, rhs, e_N, h)
    if not sim._fused or sim._coupled:
        return solve_islands_general(sim, work, state, k, rhs, u, e_N, h)
    islands = sim._islands
    rows = sim._rows
    options = sim._options[sim.method]
    r = k.gap.shape[0]
    normal_force = state.normal_force
    passes = 1 + sim.normal_force_iterations + (1 if state.steps_done == 0 and r else 0) + sim._basis_passes
    basis_force = state.friction_force  # static_bound="cone": then the last pass's force
    warm = state.active_set
    again = islands_to_solve(work, islands.order, islands.starts)  # a second solve: the switched islands
    if again is not None:
        everywhere = islands
        islands, stacked = everywhere.subset(again)
        warm = warm[stacked] if warm is not None and warm.shape[0] == everywhere.size else None
    iterations, fallback = 0, False
    solving, rows_of, live = islands, None, None  # the islands of this pass; with the cone, those not settled
    for done in range(passes):
        start = time.perf_counter()
        use_warm = warm is not None and warm.shape[0] == solving.size
        (v_got, N_got, T_got, B_got, kin_got, act_got, K, q, lo, hi, codes, its, rel_got, *_) = lcp_islands(
            sim._mass,
            sim._inertia,
            rhs,
            e_N,
            work.normal_compliance,
            k.N_block,
            k.D_block,
            k.tangent,
            state.v,
            h,
            work.mu,
            work.mu_static,
            normal_force,
            state.friction_force,
            rows.compliance,
            rows.velocity_threshold,
            rows.rigid_box,
            rows.cone,
            basis_force,
            *work.switch_arrays(),
            solving.order,
            solving.starts,
            solving.bodies,
            solving.offsets,
            solving.matrix_offsets,
            warm if use_warm else np.zeros(solving.size, np.int8),
            use_warm,
            options.max_iterations,
            options.max_stall,
            options.pivot_tolerance,
        )
        middle = time.perf_counter()
        if rows_of is None:  # every island: this pass's answer is the step's
            v_new, impulse_N, impulse_T, basis, kinetic, active, relative = (
                v_got, N_got, T_got, B_got, kin_got, act_got, rel_got)  # fmt: skip
        else:  # the islands not yet settled: their entries of the step's answer
            contacts = solving.order
            columns = (6 * solving.bodies[:, None] + np.arange(6)).reshape(-1)
            v_new[columns], impulse_N[contacts], impulse_T[contacts] = v_got[columns], N_got[contacts], T_got[contacts]
            basis[contacts], kinetic[contacts], active[rows_of], relative[live] = (
                B_got[contacts], kin_got[contacts], act_got, rel_got)  # fmt: skip
        iterations += int(its.sum())
        for i in np.flatnonzero((codes != 0) | ~(rel_got <= sim.tolerance)):
            j = i if rows_of is None else np.flatnonzero(live)[i]  # the island's index in the step
            a, b = islands.offsets[j], islands.offsets[j + 1]
            e, f = solving.offsets[i], solving.offsets[i + 1]  # its entries in this pass's vectors
            s = b - a
            m0 = solving.matrix_offsets[i]
            problem = (K[m0 : m0 + s * s].reshape(s, s), q[e:f], lo[e:f], hi[e:f])
            layout = (6, 0, (s - 6) // 3)
            result = call(sim, sim.method, *problem, warm[e:f] if use_warm else None, layout)  # as the dense path
            result, retried = accept(sim, state, result, lambda method, p=problem: call(sim, method, *p, None, layout))
            fallback = fallback or retried
            iterations += result.iterations
            relative[j] = result.relative_residual
            active[a:b] = result.active_set
            contacts = islands.order[islands.starts[j] : islands.starts[j + 1]]
            body = islands.bodies[j]
            v_new[6 * body : 6 * body + 6] = result.z[:6]
            impulse_N[contacts] = result.z[6 : 6 + contacts.size]
            impulse_T[contacts] = result.z[6 + contacts.size :].reshape(-1, 2)
        work.time(start, middle, time.perf_counter())
        warm = active
        bounded, normal_force = normal_force, impulse_N / h
        if rows.cone and done + 1 < passes:  # the static basis from this pass's force
            following = np.empty((r, 3))
            world_kernel(impulse_T, basis, k.tangent, h, following)
            if done + 1 >= passes - sim._basis_passes:  # each island's passes end once it settled
                moving = unsettled(following, basis_force, normal_force, bounded, work.mu_static, sim.tolerance,
                                   kinetic)[islands.order]  # fmt: skip
                counts = np.diff(islands.starts)
                island = np.repeat(np.arange(counts.size), counts)  # of each contact in islands.order
                live = np.bincount(island, weights=moving, minlength=counts.size) > 0
                if not live.any():
                    break
                solving, rows_of = islands.subset(live)
                warm = active[rows_of]
            basis_force = following
    friction_force = np.empty((r, 3))
    world_kernel(impulse_T, basis, k.tangent, h, friction_force)
    if again is not None:  # the islands without a switch keep their first answer
        relative, kept = work.islands.residuals.copy(), relative
        relative[again] = kept
    work.islands = IslandAnswers(relative)
    out = StepResult(
        v=v_new,
        normal_force=normal_force,
        friction_force=friction_force,
        status=int(Status.SOLVED),
        iterations=iterations,
        residual=float(relative.max()) if relative.size else 0.0,
        fallback=fallback,
        kinetic=kinetic,
        bilateral=EMPTY,
        active_set=active,
    )
    if again is not None:
        columns = (6 * islands.bodies[:, None] + np.arange(6)).reshape(-1)
        return kept_answer(work, out, columns=columns, contacts=islands.order, active=stacked)
    if len(islands) == 1 and len(sim.model.bodies) == 1:  # the whole problem (the dense path's)
        out.problem = BoundedLCP(K.reshape(islands.size, islands.size), q, lo, hi)
    return out


def solve_islands_general(sim, work, state, k, rhs, u, e_N, h):
    """The step island by island for any bounded-LCP friction model assembled from its
    ``block`` (polygonal, continuous, a user's model), any method but the fused
    judice-pires, or islands of bodies coupled by bilateral rows: each island's Eq. (30)
    over its bodies' velocities, its bilateral rows and its contacts, assembled and solved
    as the dense problem is (same method, warm start, fallback and residual check), so the
    cost grows with the number of islands, not with the cube of the whole system."""
    groups = list(enumerate(sim._groups.groups))
    again = islands_to_solve(work, [g.contacts for _, g in groups])  # a second solve: the switched islands
    if again is not None:
        groups = [groups[j] for j in np.flatnonzero(again)]
    r, m = k.gap.shape[0], k.A_body.shape[0]
    blocks = group_mass_blocks(
        sim,
    )
    v_new = free_velocity(sim._mass, sim._inertia, rhs)
    impulse_N = np.zeros(r)
    bilateral = np.zeros(m)
    normal_force = state.normal_force
    passes = 1 + sim.normal_force_iterations + (1 if state.steps_done == 0 and r else 0) + sim._basis_passes
    warm = state.active_set
    if again is not None:  # the switched islands' entries of the whole warm start
        stacked = _entries(work.islands.offsets, groups)
        warm = warm[stacked] if warm is not None and warm.shape[0] == work.islands.offsets[-1] else None
    iterations, fallback = 0, False
    rolling = rolling_kinematics(sim, state, k)
    basis_force = np.zeros((r, 3)) if sim._basis_passes else None
    bounded = normal_force
    problems, unknowns = [None] * len(groups), [None] * len(groups)
    live = np.ones(len(groups), bool)  # the islands this pass solves: with basis passes, those not settled
    residual = np.zeros(len(groups))
    for done in range(passes):
        start = time.perf_counter()
        if sim._basis_passes and done:  # the model's static basis from the last pass's force
            used = state.friction_force if done == 1 else basis_force.copy()
            kinetic = np.zeros(r, bool)
            for (g, block, *_), x in zip(problems, unknowns):
                basis_force[g.contacts] = sim.friction.world_force(x, block, k.tangent[g.contacts], h)
                kinetic[g.contacts] = block.kinetic
            if done >= passes - sim._basis_passes:  # each island's passes end once it settled
                moving = unsettled(basis_force, used, normal_force, bounded, work.mu_static, sim.tolerance, kinetic)
                live = np.array([bool(moving[g.contacts].any()) for _, g in groups], bool)
                if not live.any():
                    break
        for i, (j, g) in enumerate(groups):
            if not live[i]:
                continue
            c, cols, n_g = g.contacts, g.columns, g.columns.size
            island_rolling = None
            if rolling is not None:
                island_rolling = RollingKinematics(_scatter(rolling.spin[c], g.slot, n_g), rolling.speed[c])
            assembled = assemble_rows(sim,
                blocks[j], sim._groups.rows_matrix(j, k.A_block, k.A_body), _scatter(k.N_block[c], g.slot, n_g),
                _scatter(k.D_block[c].reshape(-1, 6), np.repeat(g.slot, 2), n_g), k.tangent[c],
                state.v[cols], rhs[cols], u[g.rows], e_N[c], work.normal_compliance[c],
                work.bilateral_compliance[g.rows], h, work.mu[c], work.mu_static[c], normal_force[c],
                state.friction_force[c], island_rolling,
                None if not (sim._basis_passes and done) else basis_force[c], work.switch_arguments(c),
                row_bounds=work.row_bounds(g.rows),
            )  # fmt: skip
            problems[i] = (g, *assembled)
        offsets = np.cumsum([0] + [p[3].shape[0] for p in problems])
        use_warm = warm is not None and warm.shape[0] == offsets[-1]
        active = warm.copy() if use_warm and not live.all() else np.empty(offsets[-1], np.int8)
        middle = time.perf_counter()
        for j, (g, _, K, qv, lo, hi) in enumerate(problems):
            if not live[j]:
                continue
            a, b = offsets[j], offsets[j + 1]
            n_g, m_g, r_g = g.columns.size, g.rows.size, g.contacts.size
            layout = (n_g, m_g, r_g)
            result = call(sim, sim.method, K, qv, lo, hi, warm[a:b] if use_warm else None, layout)
            result, retried = accept(
                sim,
                state,
                result,
                lambda method, K=K, qv=qv, lo=lo, hi=hi, layout=layout: call(sim, method, K, qv, lo, hi, None, layout),
            )
            fallback = fallback or retried
            iterations += result.iterations
            residual[j] = result.relative_residual
            active[a:b] = result.active_set
            v_new[g.columns] = result.z[:n_g]
            bilateral[g.rows] = result.z[n_g : n_g + m_g]
            impulse_N[g.contacts] = result.z[n_g + m_g : n_g + m_g + r_g]
            unknowns[j] = result.z[n_g + m_g + r_g :]
        work.time(start, middle, time.perf_counter())
        warm = active
        bounded, normal_force = normal_force, impulse_N / h
    friction_force = np.empty((r, 3))
    kinetic = np.empty(r, bool)
    for (g, block, *_), x in zip(problems, unknowns):
        c = g.contacts
        friction_force[c] = sim.friction.world_force(x, block, k.tangent[c], h)
        kinetic[c] = block.kinetic
    if again is None:
        work.islands = IslandAnswers(residual, offsets)
    else:  # the islands without a switch keep their first answer
        residual, kept = work.islands.residuals.copy(), residual
        residual[again] = kept
    out = StepResult(
        v=v_new,
        normal_force=normal_force,
        friction_force=friction_force,
        status=int(Status.SOLVED),
        iterations=iterations,
        residual=float(residual.max()) if residual.size else 0.0,
        fallback=fallback,
        kinetic=kinetic,
        bilateral=bilateral,
        active_set=active,
    )
    if again is None:
        return out
    return kept_answer(
        work,
        out,
        columns=_joined([g.columns for _, g in groups]),
        contacts=_joined([g.contacts for _, g in groups]),
        rows=_joined([g.rows for _, g in groups]),
        active=stacked,
    )


def _joined(indices):
    return np.concatenate(indices).astype(np.int64) if indices else np.zeros(0, np.int64)


def _entries(offsets, groups):
    """The entries of the islands ``groups`` ((j, group) pairs) in a stacked vector whose island j
    runs from ``offsets[j]`` to ``offsets[j + 1]``."""
    return _joined([np.arange(offsets[j], offsets[j + 1]) for j, _ in groups])


def group_mass_blocks(sim):
    """The blocks of M over each island's bodies (block-diagonal), built on first use."""
    if getattr(sim, "_mass_blocks", None) is None:
        sim._mass_blocks = []
        for g in sim._groups.groups:
            block = np.zeros((g.columns.size,) * 2)
            for i, body in enumerate(g.bodies):
                o = 6 * i
                block[o : o + 3, o : o + 3] = sim._mass[body] * np.eye(3)
                block[o + 3 : o + 6, o + 3 : o + 6] = sim._inertia[body]
            sim._mass_blocks.append(block)
    return sim._mass_blocks
