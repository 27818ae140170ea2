"""Eq. (30) of Peiret 2016 assembled from the friction model's block, solved through a method with its
residual check and fallback, and its answer turned into a :class:`~lcpdyn.step_result.StepResult`: the
parts every bounded-LCP strategy shares."""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.sparse as sp

import solvers
from solvers.block_gs import contact_blocks
from solvers.problem import checked_problem

from ..compiled_kinematics import _scatter
from ..friction.base import FrictionBlock
from ..friction.creep import RollingKinematics
from ..kernels import block_rows, bounded_vectors, fill_matrix
from ..kkt import SPARSE_SIZE
from ..midpoint_friction import midpoint_block
from ..rotation import np_rotation_matrices
from ..step_result import StepResult
from .methods import accept_or_fallback

EMPTY = np.zeros(0)


def sparse_rows(A_block, A_body, m, n):
    """A (m, n) for :func:`lcpdyn.kkt.solve_kkt` from its row blocks (Kinematics.A_block,
    A_body): a CSR matrix, without the dense (m, n) array whose size grows with the square of a
    chain's length -- or, where ``solve_kkt`` factorizes the KKT matrix densely
    (n + m <= :data:`~lcpdyn.kkt.SPARSE_SIZE`), the dense array itself, the same numbers
    without SciPy's construction (0.4 ms a step, a third of a one-contact wheel's step)."""
    rows, slots = np.nonzero(A_body >= 0)
    columns = 6 * A_body[rows, slots][:, None] + np.arange(6)
    values = A_block[rows, slots].reshape(-1)
    if n + m <= SPARSE_SIZE:
        A = np.zeros((m, n))
        np.add.at(A, (np.repeat(rows, 6), columns.reshape(-1)), values)  # duplicates sum, as in CSR
        return A
    return sp.csr_matrix((values, (np.repeat(rows, 6), columns.reshape(-1))), shape=(m, n))


def friction_on_end_velocity(block: FrictionBlock, v: np.ndarray) -> FrictionBlock:
    """Moreau's midpoint scheme (docs/theory/step.md): a friction block the model built for the
    whole step h -- rows F v+ + C x + P (h lam_N) + c = w over impulses x in [lo, hi] -- as rows
    in the midpoint velocity v_m = (v + v+)/2 and the impulses over h/2 (x' = x/2, h/2 lam_N):
    F v_m + C x' + P (h/2 lam_N) + (c - F v)/2 = w/2, x' in [lo/2, hi/2]. Each row is the model's
    own, halved, so the friction law holds at the end velocity v+ as in the first-order step
    (detected contacts; declared ones take :func:`lcpdyn.midpoint_friction.midpoint_block`)."""
    return dataclasses.replace(block, c=0.5 * (block.c - block.F @ v), lo=0.5 * block.lo, hi=0.5 * block.hi)


def assemble(sim, work, state, k, rhs, u, e_N, h, n, m, r, normal_force, basis_force=None):
    """Eq. (30) with the friction model's block (see :mod:`lcpdyn.friction`)."""
    rolling = rolling_kinematics(sim, state, k)
    if rolling is not None:
        rolling = RollingKinematics(_scatter(rolling.spin, k.contact_body, k.n_velocities), rolling.speed)
    return assemble_rows(sim,
        sim.M, k.A, k.N, k.D, k.tangent, state.v, rhs, u, e_N, work.normal_compliance,
        work.bilateral_compliance, h, work.mu, work.mu_static, normal_force, state.friction_force,
        rolling, basis_force, work.switch_arguments(),
        work.friction_point, work.row_bounds(),
    )  # fmt: skip


def rolling_kinematics(sim, state, k):
    """For a friction model with ``rolling_kinematics`` (the creep law): per contact the spin
    row blocks (r, 6) of s3 = n . omega = (R_b^T n) . omega_b over its body's velocities, and
    the rolling speed V = |P_T (v_b - v_c / 2)| (Schwab–Meijaard 2002 §3: ||c_dot - v_c/2||,
    the contact point's velocity c_dot taken as the body centre's, v_b), as a
    :class:`~lcpdyn.friction.creep.RollingKinematics`; None for other models."""
    if not getattr(sim.friction, "rolling_kinematics", False):
        return None
    body = k.contact_body
    rotations = np_rotation_matrices(state.q.reshape(-1, 7)[body, 3:])  # (r, 3, 3)
    spin = np.zeros((body.shape[0], 6))
    spin[:, 3:] = np.einsum("rji,rj->ri", rotations, k.normal)
    centre = state.v.reshape(-1, 6)[body, :3]
    slip = block_rows(k.D_block, body, state.v)
    along = np.einsum("rkj,rj->rk", k.tangent, centre) - 0.5 * slip
    return RollingKinematics(spin, np.sqrt((along**2).sum(axis=1)))


def assemble_rows(
    sim,
    M, A, N, D, tangent, v, rhs, u, e_N, CN, CA, h, mu, mu_static, normal_force, friction_force,
    rolling=None, basis_force=None, switches=None, point=None, row_bounds=None,
):  # fmt: skip
    """(block, K, q, lo, hi) of Eq. (30) over the velocities of M and the contacts of N: the
    whole problem (:func:`assemble`) or one island's (:func:`lcpdyn.strategies.islands.solve_islands_general`);
    ``rolling`` the contacts' :class:`~lcpdyn.friction.creep.RollingKinematics` over the same
    velocities, for a model that asks for them; ``basis_force`` the last pass's world friction
    force in a model's ``basis_passes`` (:mod:`lcpdyn.friction.base`); ``point`` the midpoint
    scheme's :class:`~lcpdyn.midpoint_friction.FrictionPoint` (declared contacts), or None;
    ``row_bounds`` the bilateral rows' impulse bounds (:meth:`lcpdyn.step_work.StepWork.row_bounds`),
    or None (every row an equality)."""
    extra = {} if rolling is None else {"rolling": rolling}
    extra.update(switches or {})  # a switch inside the step (switch_arguments)
    if basis_force is not None:
        extra["basis_force"] = basis_force
    if sim.position_update == "midpoint" and point is not None:  # each law where its FrictionPoint says
        block = midpoint_block(sim.friction, D, v, sim.dt, mu, normal_force, friction_force, tangent, mu_static,
                               extra, point)  # fmt: skip
    elif sim.position_update == "midpoint":  # the model's rows over the whole step, written on v+
        block = sim.friction.block(
            D, v, sim.dt, mu, normal_force, friction_force, tangent, mu_static=mu_static, **extra
        )
        block = friction_on_end_velocity(block, v)
    else:
        block = sim.friction.block(D, v, h, mu, normal_force, friction_force, tangent, mu_static=mu_static, **extra)
    nf, r = block.F.shape[0], N.shape[0]
    K = np.zeros((M.shape[0] + A.shape[0] + r + nf,) * 2)
    P = block.P if block.P is not None else np.zeros((nf, r))
    fill_matrix(K, M, A, N, block.F, block.G, block.C, P, CN, CA)
    free = np.full(A.shape[0], np.inf)
    lo_rows, hi_rows = (-free, free) if row_bounds is None else row_bounds
    qv, lo, hi = bounded_vectors(rhs, u, e_N, block.c, block.lo, block.hi, lo_rows, hi_rows)
    return block, K, qv, lo, hi


def call(sim, method, K, qv, lo, hi, warm, layout=None):
    """Solve through the method's module with prepared options (the front door's work minus
    the input conversion: the arrays are ours; entries are still checked). ``layout`` =
    (n, m, r) of Eq. (30): with it, a method that takes blocks (block-gs) gets one block per
    contact (its normal and two friction unknowns) when the model has two friction rows per
    contact and the caller did not choose blocks."""
    problem = checked_problem(K, qv, lo, hi)
    options = sim._options[method]
    if layout is not None and sim._blocks_by_contact[method]:
        n, m, r = layout
        if qv.shape[0] == n + m + 3 * r:
            options = dataclasses.replace(options, blocks=contact_blocks(n, m, r))
    if warm is not None and sim._warm_capable[method] and warm.shape[0] == qv.shape[0]:
        return solvers.METHODS[method].run(problem, options, sim.tolerance, warm_start=warm)
    return solvers.METHODS[method].run(problem, options, sim.tolerance)


def bounded_result(sim, result, v, bilateral, normal_force, friction, block, k, h, iterations, fallback, problem):
    """The StepResult of a bounded-LCP step (dense or condensed) from its accepted solve
    ``result``: v+, the bilateral impulses, lam_N+, the model's friction unknowns."""
    return StepResult(
        v=v,
        normal_force=normal_force,
        friction_force=sim.friction.world_force(friction, block, k.tangent, h),
        status=int(result.status),
        iterations=iterations,
        residual=result.relative_residual,
        fallback=fallback,
        kinetic=block.kinetic.copy(),
        problem=problem,
        bilateral=bilateral,
        active_set=result.active_set,
    )


def accept(sim, state, result, retry):
    """(result, False) if it succeeded; else (retry(fallback_method), True) if that succeeded;
    else :class:`SimulationError` -- or, with ``on_unsolved="flag"``, the better failed answer,
    which keeps its failure status (:func:`~lcpdyn.strategies.methods.accept_or_fallback`)."""
    return accept_or_fallback(
        result, retry, sim.fallback_method, state.steps_done, state.t, keep=sim.on_unsolved == "flag"
    )
