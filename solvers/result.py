"""Solver status, the result object, and the framework's own residual check.

Every answer returned by :func:`solvers.solve` is measured here, independently of the method
that produced it: ``w`` is recomputed as ``M z + q`` and the natural-map residual

    r(z) = || z - clip(z - w, lo, hi) ||_inf

(zero exactly at a solution of the bounded LCP, see :mod:`solvers.problem`) is reported
together with the bound violation ``|| max(lo - z, z - hi, 0) ||_inf``. Both are judged
relative to the problem's scale ``1 + ||q||_inf + ||M||_inf ||z||_inf`` (``||M||_inf`` the
largest absolute row sum), which is the size of the terms that cancel in ``w``.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np
from numba import njit

__all__ = ["Status", "LCPResult", "SolverFailure", "measure", "AT_LOWER", "BASIC", "AT_UPPER", "FIXED"]

# Active-set codes shared by all solvers (``LCPResult.active_set``), also the warm-start format.
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


class SolverFailure(RuntimeError):
    """Raised by ``solve(..., raise_on_failure=True)`` when the result is not a success."""

    def __init__(self, result: "LCPResult"):
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
    residual : natural-map residual ``||z - clip(z - w, lo, hi)||_inf`` (absolute).
    bound_violation : ``||max(lo - z, z - hi, 0)||_inf`` (absolute).
    scale : ``1 + ||q||_inf + ||M||_inf ||z||_inf``.
    relative_residual : ``max(residual, bound_violation) / scale``.
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
    scale: float
    relative_residual: float
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
def _measure_kernel(M, q, lo, hi, z, w, active_set):
    """w <- M z + q; returns (residual, bound_violation, scale), all NaN if z is not finite;
    fills active_set codes."""
    n = q.shape[0]
    residual = 0.0
    violation = 0.0
    m_norm = 0.0
    z_norm = 0.0
    q_norm = 0.0
    for i in range(n):
        if not np.isfinite(z[i]):
            return np.nan, np.nan, np.nan
    for i in range(n):
        s = q[i]
        row = 0.0
        for j in range(n):
            s += M[i, j] * z[j]
            row += abs(M[i, j])
        w[i] = s
        m_norm = max(m_norm, row)
        z_norm = max(z_norm, abs(z[i]))
        q_norm = max(q_norm, abs(q[i]))
        projected = min(max(z[i] - s, lo[i]), hi[i])
        residual = max(residual, abs(z[i] - projected))
        violation = max(violation, lo[i] - z[i], z[i] - hi[i])
        if lo[i] == hi[i]:
            active_set[i] = 2
        elif z[i] <= lo[i]:
            active_set[i] = -1
        elif z[i] >= hi[i]:
            active_set[i] = 1
        else:
            active_set[i] = 0
    return residual, violation, 1.0 + q_norm + m_norm * z_norm


def measure(problem, z, status: Status, iterations: int, message: str, method: str,
            tolerance: float, info: dict | None = None) -> LCPResult:
    """Build an :class:`LCPResult` for ``z``, recomputing ``w`` and the residual here.

    A method's claim of ``SOLVED`` is downgraded to ``INACCURATE`` when the framework's
    relative residual exceeds ``tolerance``; a non-finite ``z`` becomes ``NUMERICAL_ERROR``.
    """
    z = np.ascontiguousarray(z, dtype=np.float64)
    n = problem.n
    w = np.empty(n)
    active_set = np.empty(n, dtype=np.int8)
    residual, violation, scale = _measure_kernel(problem.M, problem.q, problem.lo, problem.hi, z, w,
                                                 active_set)
    if not np.isfinite(scale):
        nan = float("nan")
        return LCPResult(z, np.full(n, nan), Status.NUMERICAL_ERROR, iterations, nan, nan, nan, nan,
                         tolerance, f"non-finite solution; {message}", method,
                         np.zeros(n, np.int8), info or {})
    relative = max(residual, violation) / scale
    if status == Status.SOLVED and not relative <= tolerance:
        status = Status.INACCURATE
        message = (f"{message}; framework residual {relative:.3g} exceeds tolerance {tolerance:.3g}")
    return LCPResult(z, w, status, int(iterations), float(residual), float(violation), float(scale),
                     float(relative), float(tolerance), message, method, active_set, info or {})
