"""The condensed strategy (``sparse="condensed"``): the velocities and bilateral multipliers eliminated by the
sparse KKT factorization, the contacts' bounded LCP solved alone."""

from __future__ import annotations

import time

import numpy as np

from solvers.problem import BoundedLCP

from ..compiled_kinematics import _scatter
from ..friction.base import basis_settled
from ..friction.creep import RollingKinematics
from ..kkt import solve_kkt
from ..run.errors import step_error
from .assembly import accept, bounded_result, call, rolling_kinematics, sparse_rows


def solve_condensed(sim, work, state, k, rhs, u, e_N, h):
    """Eq. (30) with its free unknowns eliminated (``sparse="condensed"``). With
    K_ff = [[M, -A^T], [A, C_A]] the velocities and bilateral multipliers, the free rows give

        (v+, h lam) = x_0 + X (h lam_N, friction),   K_ff x_0 = (M v + h f, u),
        K_ff X = [[N^T, G^T], [0, 0]],

    (:func:`lcpdyn.kkt.solve_kkt`: the block-diagonal M and a sparse LU of
    S = A M^-1 A^T + C_A, whose cost grows with A's nonzeros -- linearly along a beam), and
    the contacts' rows become the bounded LCP

        W = [[N], [F]] X_v + [[C_N, 0], [P, C]],   b = [[N], [F]] x_0,v + (e_N, c),

    h lam_N >= 0 and the friction unknowns in the model's bounds -- the Schur complement of
    Eq. (30), solved by the chosen method with its warm start, residual check and fallback
    (on this problem of 3 r unknowns, not on the whole one). The friction model, normal-force
    and basis passes are those of the dense path."""
    n, r, m = k.n_velocities, k.gap.shape[0], k.A_body.shape[0]
    A = sparse_rows(k.A_block, k.A_body, m, n)
    N, D = k.N, k.D
    rolling = rolling_kinematics(sim, state, k)
    extra = {}
    if rolling is not None:
        extra["rolling"] = RollingKinematics(_scatter(rolling.spin, k.contact_body, n), rolling.speed)
    normal_force = state.normal_force
    passes = 1 + sim.normal_force_iterations + (1 if state.steps_done == 0 and r else 0) + sim._basis_passes
    warm = state.active_set
    iterations, fallback = 0, False
    result = x = block = bounded = None
    for done in range(passes):
        start = time.perf_counter()
        if sim._basis_passes and done:  # the model's static basis from the last pass's force
            following = sim.friction.world_force(result.z[r:], block, k.tangent, h)
            used = extra.get("basis_force", state.friction_force)
            if done >= passes - sim._basis_passes and basis_settled(
                following, used, normal_force, bounded, work.mu_static, sim.tolerance, block.kinetic
            ):
                break
            extra["basis_force"] = following
        bounded = normal_force  # the normal force this pass bounds with
        block = sim.friction.block(
            D, state.v, h, work.mu, normal_force, state.friction_force, k.tangent,
            mu_static=work.mu_static, **extra, **work.switch_arguments(),
        )  # fmt: skip
        nf = block.F.shape[0]
        right = np.zeros((n + m, 1 + r + nf))
        right[:n, 0], right[n:, 0] = rhs, u
        right[:n, 1 : 1 + r] = N.T
        right[:n, 1 + r :] = block.G.T
        try:
            solution = solve_kkt(sim._mass, sim._inertia, A, right, work.bilateral_compliance)
        except np.linalg.LinAlgError as exc:
            raise step_error(state, f"{exc} -- the step cannot eliminate the velocities") from exc
        free, response = solution[:, 0], solution[:, 1:]
        rows = np.vstack([N, block.F])
        W = rows @ response[:n]
        W[:r, :r] += np.diag(work.normal_compliance)
        if block.P is not None:
            W[r:, :r] += block.P
        W[r:, r:] += block.C
        b = rows @ free[:n]
        b[:r] += e_N
        b[r:] += block.c
        lo = np.concatenate([np.zeros(r), block.lo])
        hi = np.concatenate([np.full(r, np.inf), block.hi])
        middle = time.perf_counter()
        result = call(sim, sim.method, W, b, lo, hi, warm, (0, 0, r))
        work.time(start, middle, time.perf_counter())
        result, retried = accept(
            sim, state, result, lambda method, W=W, b=b, lo=lo, hi=hi: call(sim, method, W, b, lo, hi, None, (0, 0, r))
        )
        fallback = fallback or retried
        iterations += result.iterations
        warm = result.active_set
        normal_force = result.z[:r] / h
        x = free + response @ result.z
    return bounded_result(sim,
        result, x[:n].copy(), x[n:], normal_force, result.z[r:], block, k, h, iterations, fallback,
        BoundedLCP(W, b, lo, hi),
    )  # fmt: skip
