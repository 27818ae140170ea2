"""The bounded mixed linear complementarity problem (BLCP / MLCP with bounds).

Problem (Peiret 2016, Eqs. 30-31; Júdice & Pires 1992): given ``M`` (n x n), ``q`` (n) and
bounds ``lo``, ``hi`` (n, entries may be -inf / +inf), find ``z`` and ``w = M z + q`` with
``lo <= z <= hi`` and, for every index i,

    z_i = lo_i  =>  w_i >= 0,
    z_i = hi_i  =>  w_i <= 0,
    lo_i < z_i < hi_i  =>  w_i = 0.

Special cases: ``lo_i = -inf, hi_i = +inf`` makes ``i`` a free variable (an equation w_i = 0);
``[0, +inf)`` is a classic LCP pair; a finite box is a friction-type variable. A zero-width
box ``lo_i = hi_i`` fixes z_i and leaves w_i unrestricted: this is the natural-map
convention of box-constrained variational inequalities (``z = clip(z - w, lo, hi)`` holds for
any w_i), and it is what a friction box [-mu*lambda_N, mu*lambda_N] with lambda_N = 0 needs
(the contact may slide freely). Reading the two implications above literally would demand
w_i = 0 there; lcpdyn does not.

The equivalent fixed-point form used to measure every answer is the natural map
``z = clip(z - w, lo, hi)`` (see :mod:`solvers.result`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from .scaling import zero_row

__all__ = ["BoundedLCP", "make_problem", "checked_problem", "zero_row_certificate"]


@dataclass(frozen=True, eq=False)
class BoundedLCP:
    """A validated bounded LCP. Build it with :func:`make_problem`, which checks the input.

    Attributes
    ----------
    M : (n, n) float64 array, C-contiguous. Any sign structure; need not be symmetric.
    q : (n,) float64 array.
    lo, hi : (n,) float64 arrays, ``lo <= hi``; ``-inf`` / ``+inf`` allowed, NaN not.
    """

    M: np.ndarray
    q: np.ndarray
    lo: np.ndarray
    hi: np.ndarray

    @property
    def n(self) -> int:
        """The number of unknowns."""
        return self.q.shape[0]

    @property
    def free(self) -> np.ndarray:
        """Boolean mask of free variables (both bounds infinite)."""
        return np.isneginf(self.lo) & np.isposinf(self.hi)

    @property
    def fixed(self) -> np.ndarray:
        """Boolean mask of zero-width boxes (``lo == hi``)."""
        return self.lo == self.hi


# Codes returned by _find_bad_entry: (what, i, j)
_OK, _M_NAN, _M_INF, _Q_NAN, _Q_INF, _LO_NAN, _HI_NAN, _LO_POSINF, _HI_NEGINF, _LO_GT_HI = range(10)


@njit(cache=True)
def _find_bad_entry(M, q, lo, hi):
    n = q.shape[0]
    for i in range(n):
        for j in range(n):
            x = M[i, j]
            if np.isnan(x):
                return _M_NAN, i, j
            if np.isinf(x):
                return _M_INF, i, j
    for i in range(n):
        if np.isnan(q[i]):
            return _Q_NAN, i, 0
        if np.isinf(q[i]):
            return _Q_INF, i, 0
        if np.isnan(lo[i]):
            return _LO_NAN, i, 0
        if np.isnan(hi[i]):
            return _HI_NAN, i, 0
        if lo[i] == np.inf:
            return _LO_POSINF, i, 0
        if hi[i] == -np.inf:
            return _HI_NEGINF, i, 0
        if lo[i] > hi[i]:
            return _LO_GT_HI, i, 0
    return _OK, 0, 0


def _as_float_array(name: str, value, ndim: int) -> np.ndarray:
    if type(value) is np.ndarray and value.dtype == np.float64 and value.ndim == ndim:
        return value.copy(order="C")  # fast path for the common case; always a private copy
    try:
        arr = np.asarray(value)
    except Exception as exc:  # e.g. ragged nested lists
        raise ValueError(f"{name} could not be converted to an array: {exc}") from None
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise TypeError(f"{name} must be real numbers, got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.complexfloating):
        raise TypeError(f"{name} must be real, got complex dtype {arr.dtype}")
    if arr.ndim != ndim:
        want = {0: "a scalar", 1: "a 1-D vector", 2: "a 2-D (n, n) matrix"}[ndim]
        raise ValueError(f"{name} must be {want}, got shape {arr.shape}")
    return np.array(arr, dtype=np.float64, order="C")  # always a private copy


def _bound(name: str, value, default: float, n: int) -> np.ndarray:
    if value is None:
        return np.full(n, default)
    if np.ndim(value) == 0:
        return np.full(n, float(_as_float_array(name, value, 0)))
    arr = _as_float_array(name, value, 1)
    if arr.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},) to match q, got {arr.shape}")
    return arr


def make_problem(M, q, lo=None, hi=None) -> BoundedLCP:
    """Validate input and build a :class:`BoundedLCP`.

    ``lo`` defaults to 0 and ``hi`` to +inf (the standard LCP); scalars broadcast.
    Raises ``ValueError`` / ``TypeError`` naming the offending argument and index for: wrong
    shapes, non-real dtypes, NaN or inf in ``M`` or ``q``, NaN bounds, ``lo = +inf``,
    ``hi = -inf``, and ``lo > hi``. Inputs are copied, never modified.
    """
    M = _as_float_array("M", M, 2)
    q = _as_float_array("q", q, 1)
    n = q.shape[0]
    if M.shape != (n, n):
        raise ValueError(f"M must be square with shape ({n}, {n}) to match q of length {n}, got {M.shape}")
    lo = _bound("lo", lo, 0.0, n)
    hi = _bound("hi", hi, np.inf, n)
    what, i, j = _find_bad_entry(M, q, lo, hi)
    if what != _OK:
        messages = {
            _M_NAN: f"M contains NaN at ({i}, {j})",
            _M_INF: f"M contains an infinite entry at ({i}, {j})",
            _Q_NAN: f"q contains NaN at index {i}",
            _Q_INF: f"q contains an infinite entry at index {i}",
            _LO_NAN: f"lo contains NaN at index {i} (use -inf for no lower bound)",
            _HI_NAN: f"hi contains NaN at index {i} (use +inf for no upper bound)",
            _LO_POSINF: f"lo[{i}] = +inf leaves no feasible value for z[{i}]",
            _HI_NEGINF: f"hi[{i}] = -inf leaves no feasible value for z[{i}]",
            _LO_GT_HI: f"lo[{i}] = {float(lo[i])!r} > hi[{i}] = {float(hi[i])!r}: empty box for z[{i}]",
        }
        raise ValueError(messages[what])
    # _as_float_array and _bound made private copies: the caller's arrays are never aliased.
    return BoundedLCP(M, q, lo, hi)


def checked_problem(M: np.ndarray, q: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> BoundedLCP:
    """The fast path for callers that build float64, C-contiguous arrays of matching shapes
    themselves (the time stepper): the same entry checks as :func:`make_problem` (NaN, inf,
    empty boxes) but no conversion and no copy -- the problem aliases the caller's arrays, which
    must not be modified while it is in use. Shapes and dtypes are not re-checked."""
    what, i, j = _find_bad_entry(M, q, lo, hi)
    if what != _OK:
        make_problem(M, q, lo, hi)  # raises with the full message
    return BoundedLCP(M, q, lo, hi)


@njit(cache=True)
def _zero_row_conflict(M, q, lo, hi):
    """First row i with M[i, :] = 0 whose constant w_i = q_i no z_i can complement, else -1."""
    n = q.shape[0]
    for i in range(n):
        if lo[i] == hi[i] or not zero_row(M, i):
            continue
        if (q[i] < 0.0 and hi[i] == np.inf) or (q[i] > 0.0 and lo[i] == -np.inf):
            return i
    return -1


def zero_row_certificate(problem: BoundedLCP) -> str | None:
    """A proof that ``problem`` has no solution, from a zero row of M, or None.

    If row i of M is zero, ``w_i = q_i`` whatever z is. ``q_i < 0`` needs ``z_i = hi_i`` (so hi_i
    finite), ``q_i > 0`` needs ``z_i = lo_i`` (so lo_i finite); a zero-width box accepts any w_i.
    """
    i = _zero_row_conflict(problem.M, problem.q, problem.lo, problem.hi)
    if i < 0:
        return None
    side = "upper" if problem.q[i] < 0 else "lower"
    return (
        f"row {i} of M is zero, so w[{i}] = q[{i}] = {float(problem.q[i])!r} whatever z is, and z[{i}] has no "
        f"finite {side} bound to complement it: the problem has no solution"
    )
