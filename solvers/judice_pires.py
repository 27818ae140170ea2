"""Júdice–Pires basic-set (block principal pivoting) algorithm for the bounded LCP
(Júdice & Pires 1992, JOTA 74(3) -- the solver Peiret 2016 names for its mixed LCP with bounds,
Eqs. 30-31): block pivots while the count of infeasible indices keeps setting new minima, Murty's
least-index pivot after ``max_stall`` iterations without one; singular basic systems of redundant
contacts solved for their minimum-norm member (:mod:`solvers.basic_systems`), inconsistent ones
by fixing a dependent bounded variable; a failed warm start repeated cold, then single pivots,
then the front door's explicit proximal-point fallback. Every answer is judged by the
framework's per-row residual. The algorithm, its remedies and the differences from the paper:
docs/theory/judice-pires.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from .basic_systems import basic_solve, minimum_norm_solve, rank_revealing
from .compiled_copy import copy_into as _copy
from .options import check_count, check_nonnegative, check_positive, check_warm_start
from .result import (
    Status,
    _measure_kernel,
    bound_sizes,
    measure,
    result_from_kernel,
    row_scale_vector,
    static_scales,
    variable_scale,
)
from .scaling import equilibrate

NAME = "judice-pires"

_SOLVED, _MAX_ITERATIONS, _CYCLING, _SINGULAR = 0, 1, 2, 4
_CODE_TO_STATUS = {
    _SOLVED: Status.SOLVED,
    _MAX_ITERATIONS: Status.MAX_ITERATIONS,
    _CYCLING: Status.CYCLING,
    _SINGULAR: Status.SINGULAR_BASIS,
}
_CONTINUATION_START = 0.1  # first proximal weight, relative to ||M||_inf
_PROXIMAL_PATIENCE = 50  # outer iterations at the final weight without halving the residual
_CODE_TO_TEXT = {code: status.name.lower() for code, status in _CODE_TO_STATUS.items()}
# Numerically singular when ||A|| ||x|| / ||r|| (a lower bound on cond(A)) exceeds this.
_EPS = float(np.finfo(float).eps)
_CONDITION_LIMIT = 1.0 / (1000.0 * _EPS)


@dataclass(frozen=True)
class Options:
    """Options of ``method="judice-pires"``.

    max_iterations : pivoting iterations per pivoting run (0 means ``50 + 50 n``).
    max_stall : block iterations allowed without a new minimum of infeasibilities before the
        single-pivot (Murty) rule takes over.
    pivot_tolerance : relative tolerance deciding infeasibility (times ``1 + ||z||`` for
        z-bounds, times ``1 + ||q|| + ||M|| ||z||`` for signs of w).
    warm_start : active-set codes (length n) to start from, e.g. ``result.active_set`` of the
        previous time step.
    regularization : relative weight rho / ||M||_inf of the proximal fallback; 0 disables it.
    max_proximal_iterations : outer iterations of the proximal fallback.
    """

    max_iterations: int = 0
    max_stall: int = 3
    pivot_tolerance: float = 1e-12
    warm_start: object = None
    regularization: float = 1e-4
    max_proximal_iterations: int = 1000

    def __post_init__(self):
        check_count("max_iterations", self.max_iterations, minimum=0)
        check_count("max_stall", self.max_stall)
        check_positive("pivot_tolerance", self.pivot_tolerance)
        check_nonnegative("regularization", self.regularization)
        check_count("max_proximal_iterations", self.max_proximal_iterations)


@njit(cache=True)
def _initial_state(lo, hi, warm, use_warm):
    """Active-set codes to start from: the warm start made consistent with the bounds, or a
    default (free -> BASIC, box containing 0 in its interior -> BASIC, else the finite bound)."""
    n = lo.shape[0]
    state = np.empty(n, np.int8)
    for i in range(n):
        lo_finite = lo[i] > -np.inf
        hi_finite = hi[i] < np.inf
        if lo[i] == hi[i]:
            state[i] = 2
        elif not lo_finite and not hi_finite:
            state[i] = 0
        elif (
            use_warm and warm[i] != 2 and not (warm[i] == -1 and not lo_finite) and not (warm[i] == 1 and not hi_finite)
        ):
            state[i] = warm[i]
        elif lo_finite and hi_finite and lo[i] < 0.0 < hi[i]:
            state[i] = 0
        elif lo_finite:
            state[i] = -1
        else:
            state[i] = 1
    return state


@njit(cache=True)
def _state_hash(state):
    h = np.uint64(1469598103934665603)
    for i in range(state.shape[0]):
        h = (h ^ np.uint64(state[i] + 3)) * np.uint64(1099511628211)
    return h


@njit(cache=True)
def _dependent_index(A, basic, n_basic, lo, hi):
    """The index (into the problem) of a basic variable whose column of the basic matrix A is
    (numerically) a combination of the others (:func:`rank_revealing`) and which has a zero
    bound, or -1. Of those, the one with the smallest problem index is returned, so the choice is
    deterministic and the variable is fixed where it exerts nothing: the remedy for a singular
    system that is not a consistent redundancy (:func:`minimum_norm_solve`); the residual check
    that follows judges the answer."""
    rank, _, cols = rank_revealing(A[:n_basic, :n_basic])
    chosen = -1
    for b in range(rank, n_basic):
        j = basic[cols[b]]
        if (lo[j] == 0.0 or hi[j] == 0.0) and (chosen < 0 or j < chosen):
            chosen = j
    return chosen


@njit(cache=True)
def pivot(M, q, lo, hi, state, max_iterations, max_stall, pivot_tolerance, rho, center):
    """Basic-set pivoting on BLCP(M + rho I, q - rho center, lo, hi) (best on an equilibrated
    problem, :func:`solvers.scaling.equilibrate`).

    Infeasibility is judged per row against that row's own scale (:mod:`solvers.result`):
    a sign of w_i against ``pivot_tolerance x s_i``, a bound on z_i against
    ``pivot_tolerance x zeta_i`` (s_i, zeta_i the row and variable scales of the acceptance
    measure; the parts that do not depend on z are computed once, :func:`static_scales`).
    ``state`` (int8 active-set codes) is updated in place. Returns ``(z, code, iterations)`` with
    code 0 solved, 1 iteration limit, 2 cycling, 4 singular basis.
    """
    n = q.shape[0]
    z = np.zeros(n)
    w = np.zeros(n)
    s = np.zeros(n)
    if rho == 0.0:
        q_eff = q
        M_eff = M
    else:
        q_eff = q - rho * center
        M_eff = M.copy()
        for i in range(n):
            M_eff[i, i] += rho
    abs_m, d0, velocity = static_scales(M_eff, q_eff, lo, hi)
    reach = np.empty(n)
    # zeta_j >= |z_j| (every s_i >= |M_ij z_j|) and >= its bounds' size, except for a zero
    # column (then exactly the bounds' size): a cheap lower bound that settles most bound tests
    floor_z = np.zeros(n)  # 1: |z_j| counts, 0: it does not (zero column)
    bound_size = bound_sizes(lo, hi)
    for j in range(n):
        for i in range(n):
            if abs_m[i, j] > 0.0:
                floor_z[j] = 1.0
                break
    move = np.zeros(n, np.int8)  # per iteration: the state an infeasible index moves to
    basic = np.empty(n, np.int64)
    murty_hashes = np.zeros(max_iterations + 1, np.uint64)
    n_hashes = 0
    best = n + 1
    stall = 0
    code = _MAX_ITERATIONS
    iterations = 0
    # redundant basic variables put on a bound (see _dependent_index), at most n times; should the
    # pivoting still fail, it reports the singular basis it first met, with that state and z
    # (what the proximal fallback starts from)
    removals = 0
    singular_state = np.empty(n, np.int8)
    singular_z = np.empty(n)
    while iterations < max_iterations:
        iterations += 1
        n_basic = 0
        for i in range(n):
            if state[i] == 0:
                basic[n_basic] = i
                n_basic += 1
            elif state[i] == 1:
                z[i] = hi[i]
            else:
                z[i] = lo[i]
        if n_basic > 0:
            A = np.empty((n_basic, n_basic))
            r = np.empty(n_basic)
            r_norm = 0.0
            a_norm = 0.0
            for a in range(n_basic):
                i = basic[a]
                acc = q_eff[i]
                for j in range(n):
                    if state[j] != 0:
                        acc += M_eff[i, j] * z[j]
                r[a] = -acc
                r_norm = max(r_norm, abs(acc))
                row = 0.0
                for b in range(n_basic):
                    A[a, b] = M_eff[i, basic[b]]
                    row += abs(A[a, b])
                a_norm = max(a_norm, row)
            x, ok = basic_solve(A, r)
            x_norm = 0.0
            if ok:
                for a in range(n_basic):
                    x_norm = max(x_norm, abs(x[a]))
            consistent = True
            if not ok or not np.isfinite(x_norm) or a_norm * x_norm > _CONDITION_LIMIT * r_norm:
                # redundant basic variables (coplanar contacts' lam_N): the minimum-norm solution
                x, consistent = minimum_norm_solve(A, r, a_norm, r_norm)
            if not consistent:
                # not a consistent redundancy: put a dependent variable on its zero bound
                j = _dependent_index(A, basic, n_basic, lo, hi)
                if j < 0 or removals >= n:
                    code = _SINGULAR
                    break
                if removals == 0:  # where a failure of this remedy reports from (see below)
                    _copy(state, singular_state)
                    _copy(z, singular_z)
                state[j] = -1 if lo[j] == 0.0 else 1
                removals += 1
                continue
            for a in range(n_basic):
                z[basic[a]] = x[a]
        row_scale_vector(M_eff, abs_m, q_eff, z, w, s, d0, velocity, reach)
        count = 0
        first_infeasible = -1
        for i in range(n):
            st = state[i]
            move[i] = st
            if st == 0:
                if lo[i] == -np.inf and hi[i] == np.inf:
                    continue
                # settled by the lower bound of zeta_i when possible, else by zeta_i itself
                floor = pivot_tolerance * max(floor_z[i] * abs(z[i]), bound_size[i])
                if lo[i] - floor <= z[i] <= hi[i] + floor:
                    continue
                tol_z = pivot_tolerance * variable_scale(abs_m, s, lo, hi, i)
                if z[i] < lo[i] - tol_z:
                    move[i] = -1
                elif z[i] > hi[i] + tol_z:
                    move[i] = 1
            elif st == -1 and w[i] < -pivot_tolerance * s[i]:
                move[i] = 0
            elif st == 1 and w[i] > pivot_tolerance * s[i]:
                move[i] = 0
            if move[i] != st:
                count += 1
                if first_infeasible < 0:
                    first_infeasible = i
        if count == 0:
            code = _SOLVED
            break
        if count < best:
            best = count
            stall = 0
            n_hashes = 0
        else:
            stall += 1
        if stall < max_stall:
            first, stop = 0, n  # block pivot: every infeasible index
        else:
            h = _state_hash(state)
            for k in range(n_hashes):
                if murty_hashes[k] == h:
                    code = _CYCLING
                    break
            if code == _CYCLING:
                break
            murty_hashes[n_hashes] = h
            n_hashes += 1
            first, stop = first_infeasible, first_infeasible + 1  # Murty: least infeasible index
        for i in range(first, stop):
            state[i] = move[i]
    if code != _SOLVED and removals > 0:
        _copy(singular_state, state)
        _copy(singular_z, z)
        code = _SINGULAR
    if code == _CYCLING:
        return z, code, iterations
    if code == _SOLVED:  # basic values within tolerance of a bound are put on it
        for i in range(n):
            z[i] = min(max(z[i], lo[i]), hi[i])
    return z, code, iterations


@njit(cache=True)
def pivot_and_measure(M, q, lo, hi, warm, use_warm, max_iterations, max_stall, pivot_tolerance):
    """One compiled call for callers inside Numba code (the time stepper's fused path): the
    initial active set (from ``warm`` if ``use_warm``), equilibration, one pivoting run, and the
    framework's residual of :func:`solvers.result.measure` on the original problem. No proximal
    fallback: on a nonzero ``code`` call :func:`run`. Returns (z, w, active_set, code,
    iterations, relative, worst, residual, violation); ``code`` 0 means the pivoting converged
    (the caller still judges ``relative`` against its tolerance)."""
    n = q.shape[0]
    state = _initial_state(lo, hi, warm, use_warm)
    Ms, qs, los, his, row, col = equilibrate(M, q, lo, hi)
    zs, code, iterations = pivot(Ms, qs, los, his, state, max_iterations, max_stall, pivot_tolerance, 0.0, np.zeros(n))
    z = _unscale(zs, col, lo, hi)
    w = np.empty(n)
    active_set = np.empty(n, np.int8)
    relative, worst, residual, violation = _measure_kernel(M, q, lo, hi, z, w, active_set)
    return z, w, active_set, code, iterations, relative, worst, residual, violation


@njit(cache=True)
def _unscale(zs, col, lo, hi):
    """z = col * z' (exact: powers of two), clipped to the original bounds (an unscaled bound
    times its factor is the bound itself, so a variable on its bound stays exactly on it)."""
    z = np.empty(zs.shape[0])
    for i in range(zs.shape[0]):
        z[i] = min(max(col[i] * zs[i], lo[i]), hi[i])
    return z


def default_max_iterations(n: int) -> int:
    """The pivot limit per pivoting run when ``max_iterations`` is 0."""
    return 50 + 50 * n


def run(problem, options: Options, tolerance: float, warm_start: np.ndarray | None = None):
    """Solve ``problem`` (a :class:`~solvers.problem.BoundedLCP`); see the module docstring.

    ``warm_start`` (int8 active-set codes of length n, e.g. the previous ``result.active_set``)
    overrides ``options.warm_start``; the time stepper passes it here to avoid rebuilding the
    options every step."""
    n = problem.n
    if (
        warm_start is not None
        and isinstance(warm_start, np.ndarray)
        and warm_start.dtype == np.int8
        and warm_start.shape == (n,)
    ):
        warm = warm_start  # an active_set returned by a solver: codes valid by construction
    else:
        warm = check_warm_start(options.warm_start if warm_start is None else warm_start, n)
    use_warm = warm is not None
    warm = warm if use_warm else np.zeros(n, np.int8)
    max_iterations = options.max_iterations or default_max_iterations(n)
    # one compiled call for the common case (equilibrate, pivot, measure): per-call dispatch
    # costs about as much as the whole solve of a one-contact problem
    z, w, active_set, code, iterations, relative, worst, residual, violation = pivot_and_measure(
        problem.M,
        problem.q,
        problem.lo,
        problem.hi,
        warm,
        use_warm,
        max_iterations,
        options.max_stall,
        options.pivot_tolerance,
    )
    first = result_from_kernel(
        z,
        w,
        active_set,
        _CODE_TO_STATUS[code],
        iterations,
        relative,
        worst,
        residual,
        violation,
        f"basic-set pivoting: {_CODE_TO_TEXT[code]} after {iterations} iterations",
        NAME,
        tolerance,
        {"regularization": None},
    )
    # Other pivoting paths before the proximal fallback. A warm start is a guess: a set that cycles
    # or meets a singular basis (degenerate, redundant contacts) says nothing of the problem, so
    # pivot again from the bounds. On a degenerate problem that is not a P-matrix the block rule
    # can still cycle where single pivots by the least-index rule from the start do not (and the
    # other way round): that path is the last one tried.
    stalls = [options.max_stall] if use_warm else []
    if options.max_stall != 1:
        stalls.append(1)
    for stall in stalls if not first.success else []:
        z, w, active_set, code, more, relative, worst, residual, violation = pivot_and_measure(
            problem.M,
            problem.q,
            problem.lo,
            problem.hi,
            np.zeros(n, np.int8),
            False,
            max_iterations,
            stall,
            options.pivot_tolerance,
        )
        path = "from the bounds" if stall == options.max_stall else "from the bounds by single pivots"
        second = result_from_kernel(
            z,
            w,
            active_set,
            _CODE_TO_STATUS[code],
            iterations + more,
            relative,
            worst,
            residual,
            violation,
            f"basic-set pivoting: {'the warm start' if use_warm else 'the block rule'} ended on "
            f"{first.status.name.lower()} after {iterations} iterations; {path}, {_CODE_TO_TEXT[code]} "
            f"after {more} more",
            NAME,
            tolerance,
            {
                "regularization": None,
                "warm_start_failed": first.status.name.lower() if use_warm else None,
                "single_pivots": stall == 1,
            },
        )
        if second.success:
            return second
    if first.success or options.regularization == 0.0:
        return first
    # The fallback restarts from the initial active set: the failed run's last set is often
    # far from the solution (it is where pivoting went wrong).
    scaled = equilibrate(problem.M, problem.q, problem.lo, problem.hi)
    zs = z / scaled[5]  # exact: powers of two
    initial = _initial_state(problem.lo, problem.hi, warm, use_warm)
    return _proximal_fallback(problem, scaled, options, tolerance, first, zs, initial, max_iterations)


def _proximal_fallback(problem, scaled, options: Options, tolerance: float, first, first_zs, state, max_iterations):
    """Proximal-point regularization (see module docstring) on the equilibrated problem: active
    sets from ``state`` (updated in place), first proximal centre the failed run's z clipped to
    the bounds.

    Outer iterations continue until the framework's relative residual (on the original problem)
    is below ``tolerance / 1000`` (cheap: each is warm-started and takes few pivots), or the
    iterate stops moving, or leaves the range of finite numbers (an infeasible problem drives it
    away: that is reported, never accepted); the best iterate is returned, and it is a success
    only if it meets ``tolerance``."""
    Ms, qs, los, his, _, col = scaled
    lo, hi = problem.lo, problem.hi
    m_norm = float(np.abs(Ms).sum(axis=1).max()) if problem.n else 0.0
    if not m_norm > 0.0:
        m_norm = 1.0  # a zero matrix: the equilibrated problem's natural unit
    rho_final = options.regularization * m_norm
    # Continuation: start better conditioned (pivoting on M + rho I is fast when rho is a
    # sizeable part of ||M||) and shrink rho tenfold per outer iteration down to rho_final.
    rho = max(rho_final, _CONTINUATION_START * m_norm)
    center = np.clip(first_zs, los, his) if np.all(np.isfinite(first_zs)) else np.clip(0.0, los, his)
    iterations = first.iterations
    why = first.status.name.lower()
    best = None
    outer = 0
    code = _SOLVED
    ending = f"the outer iteration limit {options.max_proximal_iterations}"
    since_progress = 0
    limit = 1e150  # far beyond any physical answer of an equilibrated problem, far below overflow
    while outer < options.max_proximal_iterations:
        outer += 1
        zs, code, its = pivot(
            Ms, qs, los, his, state, max_iterations, options.max_stall, options.pivot_tolerance, rho, center
        )
        iterations += its
        if code != _SOLVED:
            ending = f"an inner {_CODE_TO_TEXT[code]}"
            break
        size = float(np.max(np.abs(zs), initial=0.0))
        if not size < limit:
            ending = f"iterates growing without bound (|z'| = {size:.3g}): the problem may have no solution"
            break
        trial = measure(problem, _unscale(zs, col, lo, hi), Status.SOLVED, iterations, "", NAME, tolerance)
        if best is None or trial.relative_residual < 0.5 * best.relative_residual:
            since_progress = 0
        else:
            since_progress += 1
        if best is None or trial.relative_residual < best.relative_residual:
            best = trial
        if trial.relative_residual <= 1e-3 * tolerance:
            break
        if rho == rho_final and since_progress >= _PROXIMAL_PATIENCE:
            ending = f"no progress in {_PROXIMAL_PATIENCE} outer iterations at the final rho"
            break
        center = zs
        rho = max(rho_final, 0.1 * rho)
    info = {"regularization": rho, "proximal_iterations": outer, "first_attempt": why}
    if best is not None and best.relative_residual <= tolerance:
        return measure(
            problem,
            best.z,
            Status.SOLVED,
            iterations,
            f"pivoting failed ({why}); solved by the proximal-point fallback, rho={rho:.3g}, "
            f"best of {outer} outer iterations",
            NAME,
            tolerance,
            info,
        )
    status = Status.MAX_ITERATIONS if best is not None else _CODE_TO_STATUS.get(code, Status.MAX_ITERATIONS)
    z = best.z if best is not None else first.z
    return measure(
        problem,
        z,
        status,
        iterations,
        f"pivoting failed ({why}); the proximal-point fallback (rho={rho:.3g}) ended on {ending} "
        f"without reaching the tolerance",
        NAME,
        tolerance,
        info,
    )
