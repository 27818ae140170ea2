"""Solver status, the result object, and the framework's own residual check.

Every answer returned by :func:`solvers.solve` (and by
:func:`solvers.friction_contact.solve_friction_contact`) is measured here, independently of
the method that produced it. The measure is *per row, against that row's own scale*, so that a
problem and any diagonal rescaling of it -- ``E M D``, ``E q``, ``lo / D``, ``hi / D`` with
positive diagonal E and D: the same physics in other units -- are accepted or rejected alike.

The derivations, the choices made and what they were measured against: ``docs/theory/residual.md``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from .compiled_copy import copy_into as _copy
from .lapack import lu_inverse
from .scaling import equilibrate

__all__ = [
    "Status",
    "LCPResult",
    "SolverFailure",
    "measure",
    "row_scales",
    "relative_residual",
    "AT_LOWER",
    "BASIC",
    "AT_UPPER",
    "FIXED",
]

# Active-set codes shared by all solvers (``LCPResult.active_set``), also the warm-start format.
_EPS = float(np.finfo(np.float64).eps)
# An answer more than this many times what the data alone ask of it is checked for a
# numerically singular basis (``_measure_kernel``); beyond this condition number it is.
_SUSPECT_GROWTH = 1e3
_SINGULAR_CONDITION = 1.0 / (1000.0 * _EPS)
# Up to this size, matrix-vector products are plain loops (a BLAS call costs more than the
# work: 0.06 against 0.35 us at n = 9); above it, BLAS (3x faster at n = 300). Either way
# the same input gives the same output.
_SMALL = 32
# Sweeps of the data-only yardstick beyond a velocity's own row (``_data_scales``).
_DATA_REACH_SWEEPS = 2

AT_LOWER = -1  # z_i = lo_i, w_i >= 0 required
BASIC = 0  # lo_i < z_i < hi_i, w_i = 0 imposed (free variables are always basic)
AT_UPPER = 1  # z_i = hi_i, w_i <= 0 required
FIXED = 2  # lo_i = hi_i, w_i unrestricted


class Status(enum.IntEnum):
    """Outcome of a solve; one enum for every method."""

    SOLVED = 0
    """The method converged and the framework's residual is within tolerance."""
    MAX_ITERATIONS = 1
    """The iteration or pivot limit was reached."""
    CYCLING = 2
    """A pivoting method revisited an active set under a deterministic rule."""
    RAY_TERMINATION = 3
    """Lemke's method ended on a secondary ray (no solution found; none may exist)."""
    SINGULAR_BASIS = 4
    """A basic linear system was singular or numerically singular."""
    INACCURATE = 5
    """The method reported success, but the framework's residual exceeds the tolerance."""
    NUMERICAL_ERROR = 6
    """Non-finite numbers appeared, or the method cannot be applied (e.g. zero diagonal in PGS)."""
    EXTERNAL_FAILURE = 7
    """An external library (Siconos) reported failure."""
    INFEASIBLE = 8
    """The problem has no solution (a certificate was found, e.g. a row that no z can satisfy)."""


class SolverFailure(RuntimeError):
    """Raised by ``solve(..., raise_on_failure=True)`` when the result is not a success."""

    def __init__(self, result):
        super().__init__(f"{result.method}: {result.status.name}: {result.message}")
        self.result = result


@dataclass(frozen=True, eq=False)
class LCPResult:
    """What a solver returns.

    Attributes
    ----------
    z, w : (n,) arrays. ``w`` is recomputed by the framework as ``M z + q``.
    status : :class:`Status`.
    success : ``status == SOLVED`` (implies ``relative_residual <= tolerance``).
    iterations : pivots (pivoting methods) or sweeps (PGS), summed over restarts.
    residual : absolute natural-map residual ``||z - clip(z - w, lo, hi)||_inf`` (information).
    bound_violation : absolute ``||max(lo - z, z - hi, 0)||_inf`` (information).
    relative_residual : the acceptance measure of docs/theory/residual.md: the largest per-row
        error in normalized variables (dimensionless, invariant under diagonal rescaling).
    worst_row : the row where ``relative_residual`` is attained (-1 if n = 0).
    tolerance : the tolerance ``relative_residual`` was judged against.
    message : human-readable account, including any fallback taken.
    method : the method name used.
    active_set : (n,) int8 codes ``AT_LOWER/BASIC/AT_UPPER/FIXED`` of the returned z; pass it as
        ``warm_start`` to the next solve.
    info : method-specific details (e.g. regularization used, external status codes).
    """

    z: np.ndarray
    w: np.ndarray
    status: Status
    iterations: int
    residual: float
    bound_violation: float
    relative_residual: float
    worst_row: int
    tolerance: float
    message: str
    method: str
    active_set: np.ndarray
    info: dict = field(default_factory=dict)

    @property
    def success(self) -> bool:
        """Whether the status is SOLVED (the framework's residual within the tolerance)."""
        return self.status == Status.SOLVED

    def __repr__(self) -> str:  # short, like scipy's OptimizeResult summary
        return (
            f"LCPResult(method={self.method!r}, status={self.status.name}, n={self.z.shape[0]}, "
            f"iterations={self.iterations}, relative_residual={self.relative_residual:.3g}, "
            f"message={self.message!r})"
        )


@njit(cache=True)
def bound_sizes(lo, hi):
    """b_k = max(|lo_k|, |hi_k|) over the finite bounds (0 for a free variable): the size the
    bounds alone give each variable."""
    n = lo.shape[0]
    size = np.zeros(n)
    for k in range(n):
        if np.isfinite(lo[k]):
            size[k] = abs(lo[k])
        if np.isfinite(hi[k]):
            size[k] = max(size[k], abs(hi[k]))
    return size


@njit(cache=True)
def static_scales(M, q, lo, hi):
    """The parts of :func:`row_scales` that do not depend on z: ``(|M|, d0, velocity)`` with
    ``d0_i = |q_i| + sum_k |M_ik| b_k`` (``b_k`` the finite bounds' size) and ``velocity`` the
    free variables with a dominant diagonal (their ``B_k`` depends on z)."""
    n = q.shape[0]
    size = bound_sizes(lo, hi)
    abs_m = np.abs(M)
    d0 = np.abs(q)
    if n > 0 and size.max() > 0.0:  # no finite bound, nothing to add (a friction-contact measure)
        d0 += _product(abs_m, size)
    # velocity: free, a nonzero diagonal, and a dominant diagonal: |M_kk M_jj| >= M_kj M_jk for
    # every j, i.e. each 2x2 principal minor through k is dominated by its diagonal (a mass
    # matrix next to its constraints: M_kj M_jk = -N^2 <= 0 for a multiplier, M_kj^2 <= M_kk M_jj
    # within an SPD mass block; invariant under E M D). Only then does row k determine z_k at the
    # scale of its own data over M_kk. The test is symmetric in k and j: each pair once.
    velocity = np.zeros(n, np.bool_)
    for k in range(n):
        velocity[k] = lo[k] == -np.inf and hi[k] == np.inf and M[k, k] != 0.0
    for k in range(n):
        for j in range(k + 1, n):
            if (velocity[k] or velocity[j]) and abs(M[k, k] * M[j, j]) < M[k, j] * M[j, k]:
                velocity[k] = False
                velocity[j] = False
    return abs_m, d0, velocity


@njit(cache=True, error_model="numpy")
def row_scale_vector(M, abs_m, q, z, w, s, d0, velocity, reach):
    """w <- M z + q; s <- row scales s_i = max(c_i, d_i); reach <- data scales d_i (module
    docstring), given :func:`static_scales` (``abs_m = |M|``). Matrix-vector products by BLAS."""
    n = q.shape[0]
    if n == 0:
        return
    if n <= _SMALL:  # one pass of plain loops: BLAS calls cost more than the work
        terms = np.empty(n)
        for i in range(n):
            acc = q[i]
            size_i = abs(q[i])
            for j in range(n):
                p = M[i, j] * z[j]
                acc += p
                size_i += abs(p)  # |M_ij z_j| = |M_ij| |z_j| exactly
            w[i] = acc
            terms[i] = size_i
    else:
        _copy(M @ z + q, w)
        terms = abs_m @ np.abs(z) + np.abs(q)  # the componentwise sizes c_i
    # B_k of a velocity: its own row's size over the diagonal (momentum over mass)
    size = np.zeros(n)
    any_velocity = False
    for k in range(n):
        if velocity[k]:
            size[k] = max(d0[k], terms[k]) / abs_m[k, k]
            any_velocity = True
    if not any_velocity:
        _copy(d0, reach)
    elif n <= _SMALL:
        for i in range(n):
            acc = d0[i]
            for k in range(n):
                acc += abs_m[i, k] * size[k]
            reach[i] = acc
    else:
        _copy(d0 + abs_m @ size, reach)
    for i in range(n):
        s[i] = max(terms[i], reach[i])


@njit(cache=True, inline="always")
def _finish_variable_scale(largest, lo_j, hi_j):
    """zeta_j from ``largest = max_i |M_ij| / s_i``: its inverse, the zero-column rules, and at
    least the finite bounds' size."""
    zeta = 1.0 / largest if largest > 0.0 else np.inf
    if zeta == np.inf:  # a zero column: w does not see z_j
        if lo_j == -np.inf and hi_j == np.inf:
            return zeta  # a free z_j that nothing depends on: any value will do (z~ = 0)
        zeta = 0.0  # a bounded one must sit on the bound its w_j = q_j asks for
    if np.isfinite(lo_j):
        zeta = max(zeta, abs(lo_j))
    if np.isfinite(hi_j):
        zeta = max(zeta, abs(hi_j))
    return zeta


@njit(cache=True, error_model="numpy")
def scan_columns(abs_m, s, z, data, data0, lo, hi, zeta):
    """One row-major pass over |M| for the column quantities of docs/theory/residual.md:

    * zeta <- the variable scales ``zeta_j = min_i s_i / |M_ij|``, taken as
      ``1 / max_i |M_ij| (1 / s_i)`` (no division in the loop; a zero entry gives
      ``0 * inf = NaN`` for s_i = 0, which the comparison skips, as it should);
    * returns ``(growth, growth0)``: ``max_j |z_j| / max_i (data_i / |M_ij|)`` for the data
      scales ``data`` and ``data0`` (a column no data reach is not judged), as
      ``|z_j| min_i |M_ij| (1 / data_i)`` over ``M_ij != 0``.
    """
    n = s.shape[0]
    largest = np.zeros(n)
    smallest = np.full(n, np.inf)
    smallest0 = np.full(n, np.inf)
    for i in range(n):
        inverse = 1.0 / s[i]
        inverse_data = 1.0 / data[i]
        inverse_data0 = 1.0 / data0[i]
        for j in range(n):  # selects, not branches: the loop vectorizes
            a = abs_m[i, j]
            r = a * inverse
            largest[j] = r if r > largest[j] else largest[j]
            r = a * inverse_data if a > 0.0 else np.inf
            smallest[j] = r if r < smallest[j] else smallest[j]
            r = a * inverse_data0 if a > 0.0 else np.inf
            smallest0[j] = r if r < smallest0[j] else smallest0[j]
    return finish_columns(largest, smallest, smallest0, z, lo, hi, zeta)


@njit(cache=True)
def finish_columns(largest, smallest, smallest0, z, lo, hi, zeta):
    """The end of :func:`scan_columns` (shared with the sparse measure): zeta <- the variable
    scales from ``largest_j = max_i |M_ij| / s_i``; returns (growth, growth0) from the column
    minima ``smallest`` and ``smallest0`` of ``|M_ij| / data_i``."""
    growth = 0.0
    growth0 = 0.0
    for j in range(z.shape[0]):
        zeta[j] = _finish_variable_scale(largest[j], lo[j], hi[j])
        if z[j] != 0.0:
            if smallest[j] < np.inf:
                growth = max(growth, abs(z[j]) * smallest[j])
            if smallest0[j] < np.inf:
                growth0 = max(growth0, abs(z[j]) * smallest0[j])
    return growth, growth0


@njit(cache=True, error_model="numpy")
def variable_scale(abs_m, s, lo, hi, j):
    """The one variable scale zeta_j of :func:`scan_columns` (the same operations, so the
    same number), for callers that need a few of them."""
    largest = 0.0
    for i in range(s.shape[0]):
        r = abs_m[i, j] * (1.0 / s[i])
        if r > largest:
            largest = r
    return _finish_variable_scale(largest, lo[j], hi[j])


@njit(cache=True)
def row_scales(M, q, lo, hi, z, w, s, zeta):
    """w <- M z + q; s <- row scales; zeta <- variable scales (docs/theory/residual.md). Returns the
    growth ``max_j |z_j| / max_i (d_i / |M_ij|)``."""
    abs_m, d0, velocity = static_scales(M, q, lo, hi)
    return row_scales_given(M, q, lo, hi, z, w, s, zeta, abs_m, d0, velocity)


@njit(cache=True)
def row_scales_given(M, q, lo, hi, z, w, s, zeta, abs_m, d0, velocity):
    """:func:`row_scales` given the parts that do not depend on z (:func:`static_scales`), for
    callers that measure many z of one problem."""
    data = np.empty(q.shape[0])
    row_scale_vector(M, abs_m, q, z, w, s, d0, velocity, data)
    growth, _ = scan_columns(abs_m, s, z, data, data, lo, hi, zeta)
    return growth


@njit(cache=True, inline="always")
def normalized(x, scale):
    """x / scale with 0 / 0 = 0, finite / inf = 0 and x / 0 = +-inf (the rules of the module
    docstring)."""
    if x == 0.0:
        return 0.0
    if scale == np.inf:
        return x if np.isinf(x) else 0.0
    if scale == 0.0:
        return np.inf if x > 0.0 else -np.inf
    return x / scale


@njit(cache=True, inline="always")
def _bound_scale(bound, reach):
    """The scale a distance to ``bound`` is judged against: ``reach`` (the variable's scale or
    its box), or the bound's own size where that is smaller and not zero."""
    size = abs(bound)
    return size if 0.0 < size < reach else reach


@njit(cache=True)
def _lcp_errors(z, w, lo, hi, s, zeta, active_set):
    """(relative residual, worst row, absolute residual, absolute violation); fills active_set."""
    n = z.shape[0]
    relative = 0.0
    worst = -1
    residual = 0.0
    violation = 0.0
    for i in range(n):
        projected = min(max(z[i] - w[i], lo[i]), hi[i])
        residual = max(residual, abs(z[i] - projected))
        violation = max(violation, lo[i] - z[i], z[i] - hi[i])
        # The natural map, |z~ - clip(z~ - w~, lo~, hi~)| = min(|w~|, the distance to the bound
        # the sign of w asks for), with that distance judged against the variable's scale, its
        # box when narrower, and the bound's own size when smaller still (a zero bound: the other
        # two). Against zeta alone a bound far inside it looked reached: M = [1e-12] gives
        # zeta = 2.3e11, and z = 0, w = q = -0.2265 passed for the answer z = hi = 0.3243.
        reach = min(zeta[i], hi[i] - lo[i]) if hi[i] > lo[i] else zeta[i]
        wt = normalized(w[i], s[i]) if s[i] > 0.0 else 0.0
        if wt > 0.0:  # z at lo, or w = 0
            error = min(wt, normalized(max(z[i] - lo[i], 0.0), _bound_scale(lo[i], reach)))
        elif wt < 0.0:  # z at hi, or w = 0
            error = min(-wt, normalized(max(hi[i] - z[i], 0.0), _bound_scale(hi[i], reach)))
        else:
            error = 0.0
        violation_i = max(lo[i] - z[i], z[i] - hi[i])
        if violation_i > 0.0:
            error = max(error, violation_i / reach if reach > 0.0 else np.inf)
        if error != error:  # NaN (inf - inf: a variable infinitely far out in its own scale)
            error = np.inf
        if error > relative:
            relative = error
            worst = i
        if lo[i] == hi[i]:
            active_set[i] = 2
        elif z[i] <= lo[i]:
            active_set[i] = -1
        elif z[i] >= hi[i]:
            active_set[i] = 1
        else:
            active_set[i] = 0
    return relative, worst, residual, violation


@njit(cache=True)
def finite_scales(M, q, lo, hi, z, w, s, zeta):
    """:func:`row_scales` for a finite z: returns the growth, or NaN if z or w = M z + q is not
    finite (the shared first step of the LCP and friction-contact measures)."""
    abs_m, d0, velocity = static_scales(M, q, lo, hi)
    return finite_scales_given(M, q, lo, hi, z, w, s, zeta, abs_m, d0, velocity)


@njit(cache=True)
def finite_scales_given(M, q, lo, hi, z, w, s, zeta, abs_m, d0, velocity):
    """:func:`finite_scales` given :func:`static_scales` (see :func:`row_scales_given`)."""
    n = q.shape[0]
    for i in range(n):
        if not np.isfinite(z[i]):
            return np.nan
    growth = row_scales_given(M, q, lo, hi, z, w, s, zeta, abs_m, d0, velocity)
    for i in range(n):
        if not np.isfinite(w[i]):
            return np.nan
    return growth


@njit(cache=True)
def data_growth(M, q, lo, hi, z):
    """The growth of :func:`row_scales` with yardsticks from the data alone: ``B_k`` the finite
    bounds' size, or ``d0_k / |M_kk|`` for a free variable with a dominant diagonal (``d0`` from
    the bounds alone, no term of z); ``max_j |z_j| / max_i (d_i / |M_ij|)``. An answer cannot
    inflate these yardsticks, unlike :func:`row_scales`' (a velocity's own terms), which a
    runaway answer of a cancelling infeasible problem does."""
    abs_m, d0, velocity = static_scales(M, q, lo, hi)
    data0 = _data_scales(abs_m, d0, velocity, _DATA_REACH_SWEEPS)
    _, growth0 = scan_columns(abs_m, data0, z, data0, data0, lo, hi, np.empty(z.shape[0]))
    return growth0


@njit(cache=True)
def _data_scales(abs_m, d0, velocity, sweeps):
    """The data scales from the data alone (:func:`data_growth`): ``d0 + |M| B`` with a
    velocity's ``B_k = d0_k / |M_kk|``, then ``sweeps`` (``_DATA_REACH_SWEEPS``) sweeps that give every
    variable the size its rows ask of it, ``B_j = max_i d_i / |M_ij|``, and recompute
    ``d = d0 + |M| B``. Each sweep reaches one coupling further from the data: gravity on a
    velocity row, to the normal impulse in that row, to the friction bounded by mu lambda_N in a
    cone row (a resting box's self-equilibrated friction is two couplings from gravity). None of
    it depends on z, so a runaway answer cannot inflate it."""
    n = d0.shape[0]
    size = np.zeros(n)
    for k in range(n):
        if velocity[k]:
            size[k] = d0[k] / abs_m[k, k]
    data = d0 + _product(abs_m, size) if n > 0 else d0.copy()
    for _ in range(sweeps):
        for i in range(n):
            if data[i] > 0.0:
                for j in range(n):
                    a = abs_m[i, j]
                    if a > 0.0 and data[i] > size[j] * a:
                        size[j] = data[i] / a
        data = d0 + _product(abs_m, size) if n > 0 else d0.copy()
    return data


@njit(cache=True)
def _product(A, x):
    """A @ x: plain loops up to ``_SMALL`` (a BLAS call costs more than the work), BLAS above."""
    n = x.shape[0]
    if n > _SMALL:
        return A @ x
    y = np.empty(A.shape[0])
    for i in range(A.shape[0]):
        acc = 0.0
        for k in range(n):
            acc += A[i, k] * x[k]
        y[i] = acc
    return y


@njit(cache=True)
def basis_singular(M, lo, hi, z):
    """Whether the basic block ``M_BB`` of ``z`` (``B = {i: lo_i < z_i < hi_i}``), equilibrated
    (:func:`solvers.scaling.equilibrate`), is numerically singular: its 1-norm condition number
    exceeds ``1 / (1000 eps)`` (or an inverse does not exist). O(|B|^3); called only for answers
    far beyond their data (``_measure_kernel``)."""
    n = z.shape[0]
    basic = np.empty(n, np.int64)
    m = 0
    for i in range(n):
        if lo[i] < z[i] < hi[i]:
            basic[m] = i
            m += 1
    if m == 0:
        return False
    A = np.empty((m, m))
    for a in range(m):
        for b in range(m):
            A[a, b] = M[basic[a], basic[b]]
    unbounded = np.full(m, np.inf)
    As = equilibrate(A, np.zeros(m), -unbounded, unbounded)[0]
    norm = _norm_1(As)
    if norm == 0.0:
        return True
    inverse, ok = lu_inverse(As)
    if not ok:  # no inverse (lu_inverse: no exception, which would leak in compiled code)
        return True
    return not norm * _norm_1(inverse) <= _SINGULAR_CONDITION


@njit(cache=True)
def _norm_1(A):
    """The 1-norm of a square matrix: its largest column sum of |A_ij|."""
    m = A.shape[0]
    norm = 0.0
    for b in range(m):
        col = 0.0
        for a in range(m):
            col += abs(A[a, b])
        norm = max(norm, col)
    return norm


@njit(cache=True)
def _measure_kernel(M, q, lo, hi, z, w, active_set):
    """w <- M z + q; returns (relative residual, worst row, absolute residual, absolute bound
    violation), all NaN (worst -1) if z is not finite; fills active_set codes. Growth rule of
    docs/theory/residual.md, with the data-only yardsticks (:func:`data_growth`) for an answer more
    than ``_SUSPECT_GROWTH`` times its data whose basis is numerically singular."""
    n = q.shape[0]
    for i in range(n):
        if not np.isfinite(z[i]):
            return np.nan, -1, np.nan, np.nan
    s = np.empty(n)
    zeta = np.empty(n)
    data = np.empty(n)
    abs_m, d0, velocity = static_scales(M, q, lo, hi)
    row_scale_vector(M, abs_m, q, z, w, s, d0, velocity, data)
    for i in range(n):
        if not np.isfinite(w[i]):
            return np.nan, -1, np.nan, np.nan
    # the data-only growth, first with the one-level yardstick (cheap; the sweeps only enlarge
    # it, so this is an upper bound) and followed further only for a suspect answer
    growth, pure = scan_columns(abs_m, s, z, data, _data_scales(abs_m, d0, velocity, 0), lo, hi, zeta)
    relative, worst, residual, violation = _lcp_errors(z, w, lo, hi, s, zeta, active_set)
    if pure > max(growth, _SUSPECT_GROWTH):
        data0 = _data_scales(abs_m, d0, velocity, _DATA_REACH_SWEEPS)
        _, pure = scan_columns(abs_m, data0, z, data0, data0, lo, hi, np.empty(n))
        if pure > max(growth, _SUSPECT_GROWTH) and basis_singular(M, lo, hi, z):
            growth = pure
    return max(relative, _EPS * growth), worst, residual, violation


@njit(cache=True)
def relative_residual(M, q, lo, hi, z):
    """The framework's relative residual of ``z`` (docs/theory/residual.md); NaN if not finite."""
    n = q.shape[0]
    relative, _, _, _ = _measure_kernel(M, q, lo, hi, z, np.empty(n), np.empty(n, np.int8))
    return relative


def measure(
    problem, z, status: Status, iterations: int, message: str, method: str, tolerance: float, info: dict | None = None
) -> LCPResult:
    """Build an :class:`LCPResult` for ``z``, recomputing ``w`` and the residual here.

    A method's claim of ``SOLVED`` is downgraded to ``INACCURATE`` when the framework's
    relative residual exceeds ``tolerance``; a non-finite ``z`` (or ``w``) becomes
    ``NUMERICAL_ERROR``.
    """
    z = np.ascontiguousarray(z, dtype=np.float64)
    n = problem.n
    w = np.empty(n)
    active_set = np.empty(n, dtype=np.int8)
    relative, worst, residual, violation = _measure_kernel(
        problem.M, problem.q, problem.lo, problem.hi, z, w, active_set
    )
    return result_from_kernel(
        z, w, active_set, status, iterations, relative, worst, residual, violation, message, method, tolerance, info
    )


def result_from_kernel(
    z, w, active_set, status, iterations, relative, worst, residual, violation, message, method, tolerance, info=None
) -> LCPResult:
    """An :class:`LCPResult` from the outputs of ``_measure_kernel`` (for compiled callers
    that measured already, e.g. the stepper's fused path and Júdice–Pires' first run); applies
    the same acceptance: non-finite -> ``NUMERICAL_ERROR``, beyond tolerance -> ``INACCURATE``."""
    if not np.isfinite(relative):
        nan = float("nan")
        n = z.shape[0]
        return LCPResult(
            z,
            np.full(n, nan),
            Status.NUMERICAL_ERROR,
            int(iterations),
            nan,
            nan,
            nan,
            -1,
            tolerance,
            f"non-finite solution; {message}",
            method,
            np.zeros(n, np.int8),
            info or {},
        )
    if status == Status.SOLVED and not relative <= tolerance:
        status = Status.INACCURATE
        message = f"{message}; framework residual {relative:.3g} (row {worst}) exceeds tolerance {tolerance:.3g}"
    return LCPResult(
        z,
        w,
        status,
        int(iterations),
        float(residual),
        float(violation),
        float(relative),
        int(worst),
        float(tolerance),
        message,
        method,
        active_set,
        info or {},
    )
