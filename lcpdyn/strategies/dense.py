"""The dense strategy: Eq. (30) over every velocity, bilateral row and contact at once; for the regularized and
box models with judice-pires its first pivoting pass fused with the assembly in one compiled call."""

from __future__ import annotations

import time

from solvers.judice_pires import default_max_iterations
from solvers.problem import BoundedLCP
from solvers.result import Status, result_from_kernel

from ..friction.base import basis_settled
from ..kernels import fused_step, readonly
from .assembly import accept, assemble, bounded_result, call


class Basis:
    """The per-contact bases (r, 2, 2) and branches of a fused step (what world_force reads)."""

    def __init__(self, basis, kinetic):
        self.basis, self.kinetic = basis, kinetic


def solve_lcp(sim, work, state, k, rhs, u, e_N, h, n, m, r):
    """The bounded-LCP step over every velocity, bilateral row and contact at once (Peiret 2016 Eq. 30), with its
    passes: the normal-force fixed point, the first step's extra pass and the friction basis's."""
    normal_force = state.normal_force
    passes = 1 + sim.normal_force_iterations + (1 if state.steps_done == 0 and r else 0) + sim._basis_passes
    iterations = 0
    warm = state.active_set
    fallback = False
    basis_force = result = block = None
    for done in range(passes):
        start = time.perf_counter()
        if sim._fused:
            block, K, qv, lo, hi, result = fused_pass(
                sim, work, state, k, rhs, u, e_N, h, normal_force, warm, basis_force
            )
            middle = time.perf_counter()
            if result is None:  # pivoting did not converge: the full method (proximal fallback)
                result = call(sim, sim.method, K, qv, lo, hi, warm, (n, m, r))
        else:
            block, K, qv, lo, hi = assemble(sim, work, state, k, rhs, u, e_N, h, n, m, r, normal_force, basis_force)
            middle = time.perf_counter()
            result = call(sim, sim.method, K, qv, lo, hi, warm, (n, m, r))
        work.time(start, middle, time.perf_counter())
        result, retried = accept(sim, state, result, lambda method: call(sim, method, K, qv, lo, hi, None, (n, m, r)))
        fallback = fallback or retried
        iterations += result.iterations
        warm = result.active_set
        bounded, normal_force = normal_force, result.z[n + m : n + m + r] / h
        if sim._basis_passes and done + 1 < passes:  # the model's static basis from this pass's force
            following = sim.friction.world_force(result.z[n + m + r :], block, k.tangent, h)
            used = state.friction_force if basis_force is None else basis_force
            if done + 1 >= passes - sim._basis_passes and basis_settled(
                following, used, normal_force, bounded, work.mu_static, sim.tolerance, block.kinetic
            ):
                break
            basis_force = following
    z = result.z
    return bounded_result(sim,
        result, z[:n].copy(), z[n : n + m], normal_force, z[n + m + r :], block, k, h, iterations, fallback,
        BoundedLCP(K, qv, lo, hi),
    )  # fmt: skip


def fused_pass(sim, work, state, k, rhs, u, e_N, h, normal_force, warm, basis_force=None):
    """The regularized/box model with judice-pires in one compiled call
    (:func:`lcpdyn.kernels.fused_step`); the same problem and the same first pivoting run as
    the general path, and the same residual test. Returns (block, K, q, lo, hi, result or None
    when the pivoting did not converge)."""
    options = sim._options[sim.method]
    rows = sim._rows
    use_warm = warm is not None and warm.shape[0] == sim._size
    (K, qv, lo, hi, basis, kinetic, z, w, active_set, code, iterations, relative, worst, residual, violation) = (
        fused_step(
            sim.M,
            readonly(k.A),  # the kinematics' arrays as read-only views (one compilation, kernels.readonly)
            readonly(k.N),
            readonly(k.D),
            readonly(k.tangent),
            rhs,
            u,
            e_N,
            work.normal_compliance,
            work.bilateral_compliance,
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
            state.friction_force if basis_force is None else basis_force,
            *work.switch_arrays(),
            warm if use_warm else sim._no_warm,
            use_warm,
            options.max_iterations or default_max_iterations(sim._size),
            options.max_stall,
            options.pivot_tolerance,
        )
    )
    block = Basis(basis, kinetic)
    if code != 0 or not relative <= sim.tolerance:
        return block, K, qv, lo, hi, None
    result = result_from_kernel(
        z,
        w,
        active_set,
        Status.SOLVED,
        iterations,
        relative,
        worst,
        residual,
        violation,
        f"basic-set pivoting: solved after {iterations} iterations (fused stepper path)",
        sim.method,
        sim.tolerance,
    )
    return block, K, qv, lo, hi, result
