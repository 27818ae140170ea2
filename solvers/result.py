"""Solver status, the result object, and the framework's own residual check.

Every answer returned by :func:`solvers.solve` (and by
:func:`solvers.friction_contact.solve_friction_contact`) is measured here, independently of
the method that produced it. The measure is *per row, against that row's own scale*, so that a
problem and any diagonal rescaling of it -- ``E M D``, ``E q``, ``lo / D``, ``hi / D`` with
positive diagonal E and D: the same physics in other units -- are accepted or rejected alike.

Scales (:func:`row_scales`, one implementation for every solver)
----------------------------------------------------------------
With ``w = M z + q``:

* the **data size** of each variable, ``B_k``: its finite bounds (a friction impulse's box), or
  for a free variable whose diagonal dominates (``|M_kk M_jj| >= M_kj M_jk`` for every j: a
  velocity next to its constraints) its own row's size over that diagonal,
  ``max(d0_k, c_k) / |M_kk|`` with ``d0_k = |q_k| + sum_l |M_kl| b_l`` and ``c_k`` below
  (momentum over mass: the impulses a body takes set the scale of its velocity); 0 otherwise;
* the **data scale** of each row, ``d_i = |q_i| + sum_k |M_ik| B_k``: the size row i has when its
  variables are at the sizes the data give them;
* the **row scale** ``s_i = max(c_i, d_i)`` with ``c_i = |q_i| + sum_j |M_ij z_j|``, the size of
  the terms that cancel in ``w_i`` (``|w_i| / c_i`` is the componentwise backward error of
  Oettli & Prager 1964). ``c_i`` alone would judge a row whose terms all vanish at the solution
  (the gap row ``N v+`` of a body resting or sliding on a plane, the momentum rows of a direction
  no force acts in) against the rounding noise of those terms; ``d_i`` gives it the scale of the
  velocities and impulses the data imply;
* the **variable scale** ``zeta_j = min_{i: M_ij != 0} s_i / |M_ij|``: the smallest change of
  ``z_j`` that moves some row by its own scale, at least ``|lo_j|`` and ``|hi_j|`` where they
  are finite; ``zeta_j >= |z_j|``. A zero column (w does not see z_j): ``+inf`` for a free
  variable (any value will do), its bounds' size for a bounded one (it must sit on the bound
  ``w_j = q_j`` asks for, exactly when that bound is 0).

All of them transform exactly as the problem does under every rescaling above
(``B_k, zeta_j -> . / D_j``; ``c_i, d_i, s_i, w_i -> E_i .``), so the measure below is exactly
invariant: no global scale, no equilibration enters it.

Acceptance
----------
In normalized variables ``z~ = z / zeta``, ``w~ = w / s`` (and ``lo~ = lo / zeta``,
``hi~ = hi / zeta``; ``0 / 0 = 0``, ``x / inf = 0`` for finite x), each row's error is the
natural map of the bounded LCP (:mod:`solvers.problem`)

    e_i = | z~_i - clip(z~_i - w~_i, lo~_i, hi~_i) |,

together with the bound violation ``max(lo_i - z_i, z_i - hi_i, 0)`` measured against
``min(zeta_i, hi_i - lo_i)`` (the variable's scale, or its box when narrower). The relative
residual is ``max_i`` of both; an answer is ``SOLVED`` only if it is at most the tolerance.
Reading it: an equation row (interior z_i, free variable) must hold to ``tol`` of its own
scale; a variable at a bound must have w of the right sign to ``tol`` of its row scale; a
variable off its bound by more than ``tol`` of its own scale must have ``w_i = 0`` to ``tol``.

For the 3D friction-contact problem the same scales are taken per contact (``max`` of the
three row scales, ``max(min`` of the three variable scales, ``|r_c|_inf)``; every reaction
counts as a variable with a diagonal, so ``B_k = d0_k / W_kk``), which keeps the cone and is
invariant under one positive scale per contact; the natural map there is De Saxcé's
(:mod:`solvers.friction_contact`), with the normal complementarity also checked against the
normal row's own scale.

Why not one global scale: a global ``1 + |q| + |M| |z|`` lets the rows of the largest numbers
set the bar for all, so small rows (a 1e-9 kg body next to a 1e6 kg one, a problem written in
other units) are not checked at all, and a few huge entries of z make every residual look
small (a solver that diverges to 1e307 looked converged).

One more rule closes what a componentwise test alone cannot see:

* **growth**: terms far larger than the data cancel to rounding, and no residual can verify the
  answer below that rounding. With ``d_i = |q_i| + sum_k |M_ik| B_k`` (the row's data scale
  above), the largest size the data can ask of ``z_j`` is ``max_i d_i / |M_ij|``, and
  ``growth = max_j |z_j| / max_i (d_i / |M_ij|)`` (exactly invariant under rescaling; a column
  no data reach is not judged by it). ``eps x growth`` is added to the relative residual as the
  part of it that cannot be checked. A problem with no solution whose rows cancel exactly
  (``y^T M = 0``, ``y^T q < 0``) admits "solutions" of size 1/eps that are backward stable; this
  rule rejects most of them (at tolerance 1e-9, any answer more than ~4.5e6 times what the data
  ask). Limits: a velocity's ``B_k`` includes its own row's terms (one coupling deep: an unknown
  driven through several couplings -- gravity on one body, through a joint, to another body's
  rotation -- is otherwise underestimated and a correct answer rejected), and a runaway answer
  in such a velocity inflates its own yardstick; some cancelling infeasible problems still pass
  (README, "Known limits").

The absolute natural-map residual ``||z - clip(z - w, lo, hi)||_inf`` and bound violation are
kept in the result for information only.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np
from numba import njit

__all__ = ["Status", "LCPResult", "SolverFailure", "measure", "row_scales", "relative_residual",
           "AT_LOWER", "BASIC", "AT_UPPER", "FIXED"]

# Active-set codes shared by all solvers (``LCPResult.active_set``), also the warm-start format.
_EPS = float(np.finfo(np.float64).eps)

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
def _dominant_diagonal(M, k):
    """|M_kk M_jj| >= M_kj M_jk for every j: each 2x2 principal minor through k is dominated by
    its diagonal (a mass matrix next to its constraints: M_kj M_jk = -N^2 <= 0 for a multiplier,
    M_kj^2 <= M_kk M_jj within an SPD mass block). Invariant under E M D. Only then does row k
    determine z_k at the scale of its own data over M_kk."""
    for j in range(M.shape[0]):
        if j != k and abs(M[k, k] * M[j, j]) < M[k, j] * M[j, k]:
            return False
    return True


@njit(cache=True)
def row_scales(M, q, lo, hi, z, w, s, zeta):
    """w <- M z + q; s <- row scales; zeta <- variable scales (module docstring). Returns the
    growth ``max_j |z_j| / max_i (d_i / |M_ij|)``."""
    n = q.shape[0]
    terms = np.empty(n)
    for i in range(n):  # w and the componentwise sizes c_i
        acc = q[i]
        size_i = abs(q[i])
        for k in range(n):
            t = M[i, k] * z[k]
            acc += t
            size_i += abs(t)
        w[i] = acc
        terms[i] = size_i
    # B_k: the size the data give z_k -- its finite bounds, or for a free variable whose diagonal
    # dominates (a velocity) its own row's size over the diagonal (momentum over mass)
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
    given = size.copy()  # the same from the data alone (d0_k for a velocity), for the growth rule
    for k in range(n):
        if lo[k] == -np.inf and hi[k] == np.inf and M[k, k] != 0.0 and _dominant_diagonal(M, k):
            size[k] = max(data[k], terms[k]) / abs(M[k, k])
            given[k] = size[k]
    for i in range(n):  # d_i = |q_i| + sum_k |M_ik| B_k; s_i = max(c_i, d_i); data_i from the data alone
        reach = abs(q[i])
        pure = abs(q[i])
        for k in range(n):
            a = abs(M[i, k])
            reach += a * size[k]
            pure += a * given[k]
        data[i] = pure
        s[i] = max(terms[i], reach)
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
        if zeta[j] == np.inf:  # a zero column: w does not see z_j
            if lo[j] == -np.inf and hi[j] == np.inf:
                continue  # a free z_j that nothing depends on: any value will do (z~ = 0)
            zeta[j] = 0.0  # a bounded one must sit on the bound its w_j = q_j asks for
        if np.isfinite(lo[j]):
            zeta[j] = max(zeta[j], abs(lo[j]))
        if np.isfinite(hi[j]):
            zeta[j] = max(zeta[j], abs(hi[j]))
    # growth: |z_j| against the largest size the data can ask of it
    growth = 0.0
    for j in range(n):
        if z[j] == 0.0:
            continue
        largest = 0.0
        for i in range(n):
            a = abs(M[i, j])
            if a > 0.0:
                largest = max(largest, data[i] / a)
        if largest > 0.0:  # (a column no data reach is not judged here)
            growth = max(growth, abs(z[j]) / largest)
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
        violation_i = max(lo[i] - z[i], z[i] - hi[i])
        if violation_i > 0.0:  # against the variable's scale, or its box when that is narrower
            reach = min(zeta[i], hi[i] - lo[i]) if hi[i] > lo[i] else zeta[i]
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
    n = q.shape[0]
    for i in range(n):
        if not np.isfinite(z[i]):
            return np.nan
    growth = row_scales(M, q, lo, hi, z, w, s, zeta)
    for i in range(n):
        if not np.isfinite(w[i]):
            return np.nan
    return growth


@njit(cache=True)
def _measure_kernel(M, q, lo, hi, z, w, active_set):
    """w <- M z + q; returns (relative residual, worst row, absolute residual, absolute bound
    violation), all NaN (worst -1) if z is not finite; fills active_set codes."""
    n = q.shape[0]
    s = np.empty(n)
    zeta = np.empty(n)
    growth = finite_scales(M, q, lo, hi, z, w, s, zeta)
    if growth != growth:
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
