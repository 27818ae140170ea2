"""Solver status, the result object, and the framework's own residual check.

Every answer returned by :func:`solvers.solve` (and by
:func:`solvers.friction_contact.solve_friction_contact`) is measured here, independently of
the method that produced it. The measure is *per row, against that row's own scale*, so that a
problem and any diagonal rescaling of it -- ``E M D``, ``E q``, ``lo / D``, ``hi / D`` with
positive diagonal E and D: the same physics in other units -- are accepted or rejected alike.

Scales (:func:`row_scales`, one implementation for every solver)
----------------------------------------------------------------
With ``w = M z + q``:

* the **row scale** ``s_i = |q_i| + sum_j |M_ij z_j|``: the size of the terms that cancel in
  ``w_i``; ``|w_i| / s_i <= 1`` is the componentwise backward error of row i (Oettli & Prager
  1964, Skeel 1980);
* the **variable scale** ``zeta_j = min_{i: M_ij != 0} s_i / |M_ij|``: the smallest change of
  ``z_j`` that moves some row by its own scale (``+inf`` for a zero column); ``zeta_j >= |z_j|``.
  Bounds are data in the units of z, so ``zeta_j`` is at least ``|lo_j|`` and ``|hi_j|`` where
  they are finite (a friction impulse is measured against its box).

A free variable (an equation's unknown: a velocity, a bilateral multiplier) is determined by its
own row to the scale ``c_j / |M_jj|`` (momentum over mass), whatever its value; rows that
contain it see it at that scale: ``s_i += sum_{j free} |M_ij| c_j / |M_jj|``. Otherwise a row
whose terms all vanish at the solution (the gap row ``N v+`` of a body resting or sliding on a
plane) would be judged against the rounding noise of ``v+`` itself.

Both transform as the problem does under every rescaling above (``s_i -> E_i s_i``,
``w_i -> E_i w_i``, ``zeta_j -> zeta_j / D_j``), so the measure below is invariant.

Rounding noise: where a whole subspace of the answer vanishes (a body at rest with no force
across it), every term of its rows is rounding noise carried over from the rest of the problem
and no data give those rows a scale of their own. So ``s_i`` and ``zeta_j`` are floored at
``NOISE_FLOOR = 1e-6`` of the problem's global scale taken in its equilibrated form
(:func:`solvers.scaling.equilibrate`: ``G = max(|E q|_inf, max_j |E M e_j|_inf b_j)``, b_j the
largest finite bound of z_j -- the data that drive the answer; the floors are
``NOISE_FLOOR G / E_i`` and ``NOISE_FLOOR G D_j``). A row more than 1e6 below the
problem's scale is then judged to ``tol x NOISE_FLOOR G / s_i`` of its own scale, and pure noise
rows pass. The equilibration follows a rescaling of the input up to a power of two, so the
floor is invariant to within that factor.

Acceptance
----------
In normalized variables ``z~ = z / zeta``, ``w~ = w / s`` (and ``lo~ = lo / zeta``,
``hi~ = hi / zeta``; ``0 / 0 = 0``, ``x / inf = 0`` for finite x), each row's error is the
natural map of the bounded LCP (:mod:`solvers.problem`)

    e_i = | z~_i - clip(z~_i - w~_i, lo~_i, hi~_i) |,

together with the bound violation ``max(lo~_i - z~_i, z~_i - hi~_i, 0)``. The relative
residual is ``max_i`` of both; an answer is ``SOLVED`` only if it is at most the tolerance.
Reading it: an equation row (interior z_i, free variable) must hold to ``tol`` of its own
scale; a variable at a bound must have w of the right sign to ``tol`` of its row scale; a
variable off its bound by more than ``tol`` of its own scale must have ``w_i = 0`` to ``tol``.

For the 3D friction-contact problem the same scales are taken per contact (``max`` of the
three row scales, ``max(min`` of the three variable scales, ``|r_c|_inf)``), which keeps the
cone and is invariant under one positive scale per contact; the natural map there is De
Saxcé's (:mod:`solvers.friction_contact`).

Why not one global scale: a global ``1 + |q| + |M| |z|`` lets the rows of the largest numbers
set the bar for all, so small rows (a 1e-9 kg body next to a 1e6 kg one, a problem written in
other units) are not checked at all, and a few huge entries of z make every residual look
small (a solver that diverges to 1e307 looked converged).

One more rule closes what a componentwise test alone cannot see:

* **growth**: terms far larger than the data cancel to rounding, and no residual can verify the
  answer below that rounding. With the data of row i, ``d_i = |q_i| + sum_k |M_ik| B_k`` (q, the
  finite bounds ``B_k``, and for a free variable with a diagonal its own row's data over
  ``|M_kk|``: a velocity enters at its momentum over its mass), the largest size the data can
  ask of ``z_j`` is
  ``max_i d_i / |M_ij|``, and ``growth = max_j |z_j| / max_i (d_i / |M_ij|)`` (exactly
  invariant under rescaling; ``inf`` for a nonzero z_j that no data reach). ``eps x growth`` is
  added to the relative residual as the part of it that cannot be checked. A problem with no
  solution whose rows cancel exactly (``y^T M = 0``, ``y^T q < 0``) admits "solutions" of size
  1/eps that are backward stable; this rule rejects them (at tolerance 1e-9, any answer more
  than ~4.5e6 times what the data ask). A basic matrix that ill-conditioned is rejected too.

The absolute natural-map residual ``||z - clip(z - w, lo, hi)||_inf`` and bound violation are
kept in the result for information only.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from .scaling import equilibrate

__all__ = ["Status", "LCPResult", "SolverFailure", "measure", "row_scales", "relative_residual",
           "AT_LOWER", "BASIC", "AT_UPPER", "FIXED"]

# Active-set codes shared by all solvers (``LCPResult.active_set``), also the warm-start format.
_EPS = float(np.finfo(np.float64).eps)
NOISE_FLOOR = 1e-6  # rows and variables are judged against at least this fraction of the global scale

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
    relative_residual : the acceptance measure of the module docstring: the largest per-row
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
        return self.status == Status.SOLVED

    def __repr__(self) -> str:  # short, like scipy's OptimizeResult summary
        return (
            f"LCPResult(method={self.method!r}, status={self.status.name}, n={self.z.shape[0]}, "
            f"iterations={self.iterations}, relative_residual={self.relative_residual:.3g}, "
            f"message={self.message!r})"
        )


@njit(cache=True)
def row_scales(M, q, lo, hi, z, w, s, zeta, row, col):
    """w <- M z + q; zeta <- variable scales; s <- row scales (module docstring, with the
    bounds and the noise floor); ``row``, ``col``: the equilibration factors of M
    (:func:`solvers.scaling.equilibrate`; ones for a problem that is already equilibrated).
    Returns the growth ``max_j |z_j| / max_i (d_i / |M_ij|)`` (module docstring)."""
    n = q.shape[0]
    for i in range(n):  # w and the componentwise sizes c (kept in s for now)
        acc = q[i]
        size = abs(q[i])
        for j in range(n):
            term = M[i, j] * z[j]
            acc += term
            size += abs(term)
        w[i] = acc
        s[i] = size
    for j in range(n):
        zeta[j] = np.inf
    for i in range(n):
        for j in range(n):
            a = abs(M[i, j])
            if a > 0.0:
                ratio = s[i] / a
                if ratio < zeta[j]:
                    zeta[j] = ratio
    for j in range(n):
        if np.isfinite(lo[j]):
            zeta[j] = max(zeta[j], abs(lo[j]))
        if np.isfinite(hi[j]):
            zeta[j] = max(zeta[j], abs(hi[j]))
    # rows see the free variables (equations: velocities, bilateral multipliers) at the scale their
    # own row determines them, c_j / |M_jj|, not at their value, which may be rounding noise
    own = np.zeros(n)
    for j in range(n):
        if lo[j] == -np.inf and hi[j] == np.inf and M[j, j] != 0.0:
            own[j] = s[j] / abs(M[j, j])
    for i in range(n):
        extra = 0.0
        for j in range(n):
            if own[j] > 0.0:
                extra += abs(M[i, j]) * own[j]
        s[i] += extra
    # noise floor: NOISE_FLOOR x the global scale of the equilibrated problem (solvers.scaling)
    big = 0.0
    for i in range(n):
        big = max(big, abs(row[i] * q[i]))
    for j in range(n):
        bound = 0.0
        if np.isfinite(lo[j]):
            bound = abs(lo[j])
        if np.isfinite(hi[j]):
            bound = max(bound, abs(hi[j]))
        if bound > 0.0:
            column = 0.0
            for i in range(n):
                column = max(column, abs(row[i] * M[i, j]))
            big = max(big, column * bound)
    floor = NOISE_FLOOR * big
    for j in range(n):
        if zeta[j] == np.inf:  # a zero column: w does not see z_j; only its bounds and the floor scale it
            zeta[j] = 0.0
            if np.isfinite(lo[j]):
                zeta[j] = abs(lo[j])
            if np.isfinite(hi[j]):
                zeta[j] = max(zeta[j], abs(hi[j]))
        zeta[j] = max(zeta[j], floor * col[j])
    for i in range(n):
        s[i] = max(s[i], floor / row[i])
    # growth: |z_j| against the largest size the data can ask of it, max_i d_i / |M_ij|, with
    # d_i = |q_i| + sum_k |M_ik| b_k the data of row i (q and the finite bounds b_k)
    # B_k: the size the data give z_k -- its finite bounds, or for a free variable (a velocity) its own
    # row's data over the diagonal (momentum over mass); d_i = |q_i| + sum_k |M_ik| B_k
    size = np.zeros(n)
    for k in range(n):
        if np.isfinite(lo[k]):
            size[k] = abs(lo[k])
        if np.isfinite(hi[k]):
            size[k] = max(size[k], abs(hi[k]))
    data = np.empty(n)
    for i in range(n):
        acc = abs(q[i])
        for k in range(n):
            if size[k] > 0.0:
                acc += abs(M[i, k]) * size[k]
        data[i] = acc
    for k in range(n):
        if lo[k] == -np.inf and hi[k] == np.inf and M[k, k] != 0.0:
            size[k] = data[k] / abs(M[k, k])
    for i in range(n):
        acc = abs(q[i])
        for k in range(n):
            if size[k] > 0.0:
                acc += abs(M[i, k]) * size[k]
        data[i] = acc
    growth = 0.0
    for j in range(n):
        if z[j] == 0.0:
            continue
        largest = 0.0
        for i in range(n):
            a = abs(M[i, j])
            if a > 0.0:
                largest = max(largest, data[i] / a)
        largest = max(largest, floor * col[j])  # noise in a column that no data reach
        growth = max(growth, abs(z[j]) / largest if largest > 0.0 else np.inf)
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
        zt = normalized(z[i], zeta[i])
        wt = normalized(w[i], s[i]) if s[i] > 0.0 else 0.0
        lt = normalized(lo[i], zeta[i])
        ht = normalized(hi[i], zeta[i])
        error = abs(zt - min(max(zt - wt, lt), ht))
        error = max(error, lt - zt, zt - ht)
        if not error <= relative:  # also catches NaN
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
def _measure_kernel(M, q, lo, hi, z, w, active_set):
    """w <- M z + q; returns (relative residual, worst row, absolute residual, absolute bound
    violation), all NaN (worst -1) if z is not finite; fills active_set codes."""
    n = q.shape[0]
    for i in range(n):
        if not np.isfinite(z[i]):
            return np.nan, -1, np.nan, np.nan
    s = np.empty(n)
    zeta = np.empty(n)
    _, _, _, _, row, col = equilibrate(M, q, lo, hi)
    growth = row_scales(M, q, lo, hi, z, w, s, zeta, row, col)
    for i in range(n):
        if not np.isfinite(w[i]):
            return np.nan, -1, np.nan, np.nan
    relative, worst, residual, violation = _lcp_errors(z, w, lo, hi, s, zeta, active_set)
    return max(relative, _EPS * growth), worst, residual, violation


@njit(cache=True)
def relative_residual(M, q, lo, hi, z):
    """The framework's relative residual of ``z`` (module docstring); NaN if not finite."""
    n = q.shape[0]
    relative, _, _, _ = _measure_kernel(M, q, lo, hi, z, np.empty(n), np.empty(n, np.int8))
    return relative


def measure(problem, z, status: Status, iterations: int, message: str, method: str,
            tolerance: float, info: dict | None = None) -> LCPResult:
    """Build an :class:`LCPResult` for ``z``, recomputing ``w`` and the residual here.

    A method's claim of ``SOLVED`` is downgraded to ``INACCURATE`` when the framework's
    relative residual exceeds ``tolerance``; a non-finite ``z`` (or ``w``) becomes
    ``NUMERICAL_ERROR``.
    """
    z = np.ascontiguousarray(z, dtype=np.float64)
    n = problem.n
    w = np.empty(n)
    active_set = np.empty(n, dtype=np.int8)
    relative, worst, residual, violation = _measure_kernel(problem.M, problem.q, problem.lo, problem.hi, z, w,
                                                           active_set)
    if not np.isfinite(relative):
        nan = float("nan")
        return LCPResult(z, np.full(n, nan), Status.NUMERICAL_ERROR, int(iterations), nan, nan, nan, -1,
                         tolerance, f"non-finite solution; {message}", method, np.zeros(n, np.int8), info or {})
    return result_from_kernel(z, w, active_set, status, iterations, relative, worst, residual, violation,
                              message, method, tolerance, info)


def result_from_kernel(z, w, active_set, status, iterations, relative, worst, residual, violation, message,
                       method, tolerance, info=None) -> LCPResult:
    """An :class:`LCPResult` from the outputs of :func:`_measure_kernel` (for compiled callers
    that measured already, e.g. the stepper's fused path); applies the same acceptance."""
    if status == Status.SOLVED and not relative <= tolerance:
        status = Status.INACCURATE
        message = (f"{message}; framework residual {relative:.3g} (row {worst}) exceeds tolerance {tolerance:.3g}")
    return LCPResult(z, w, status, int(iterations), float(residual), float(violation), float(relative), int(worst),
                     float(tolerance), message, method, active_set, info or {})
