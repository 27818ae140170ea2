"""Equilibration: a diagonal rescaling that balances a problem before a method works on it.

A bounded LCP keeps its solutions under any positive diagonal row scaling E and column
scaling D::

    BLCP(M, q, lo, hi)  ->  BLCP(E M D, E q, lo / D, hi / D),   z = D z',  w' = E w,

because the sign conditions on w and the bounds on z are unchanged (see
:mod:`solvers.problem`). The pivoting methods decide feasibility and singularity with
tolerances; on a problem whose rows differ by 1e16 in size those decisions are made at the
scale of the largest rows, and the small ones are lost. So they first bring the problem to a
balanced form and only then pivot.

Method: Ruiz's simultaneous row and column scaling (D. Ruiz, "A scaling algorithm to equilibrate
both rows and columns norms in matrices", RAL-TR-2001-034): repeat ``row_i /= sqrt(max_j
|M_ij|)``, ``col_j /= sqrt(max_i |M_ij|)`` until every row and column has its largest entry
near 1. Differences from Ruiz: the factors are rounded to powers of two, so that scaling and
unscaling are exact in floating point (no rounding is added to the data); a zero row is scaled
by its q entry instead, and a zero column is left alone. For a matrix whose magnitude pattern
is symmetric (``|M| = |M|^T``: symmetric matrices, and the saddle-point matrix of Peiret 2016
Eq. 30) the row and column factors come out equal, so symmetry and positive (semi)definiteness
survive the scaling.

The answer is always judged on the *original* problem (:mod:`solvers.result`).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["equilibrate", "zero_row", "RUIZ_SWEEPS"]

RUIZ_SWEEPS = 8  # each sweep halves the log-imbalance; 8 take 1e16 to within a factor 4


@njit(cache=True, inline="always")
def _power_of_two(x):
    """The power of two nearest to x > 0 (in the log sense)."""
    return math.ldexp(1.0, int(round(math.log2(x))))


@njit(cache=True)
def zero_row(M, i):
    """True if row i of M has no nonzero entry."""
    for j in range(M.shape[1]):
        if M[i, j] != 0.0:
            return False
    return True


@njit(cache=True)
def equilibrate(M, q, lo, hi):
    """Returns (M', q', lo', hi', row, col): the problem ``diag(row) M diag(col)``,
    ``row * q``, ``lo / col``, ``hi / col`` and the power-of-two factors. Recover
    ``z = col * z'``. ``M'`` is ``M`` itself (not a copy) when no factor differs from 1 (a
    balanced problem: no work and no n^2 copy); callers treat it as read-only."""
    n = q.shape[0]
    row = np.ones(n)
    col = np.ones(n)
    A = M
    fr = np.zeros(n)  # row and column maxima of |A|
    fc = np.zeros(n)
    for i in range(n):
        for j in range(n):
            a = abs(A[i, j])
            fr[i] = max(fr[i], a)
            fc[j] = max(fc[j], a)
    copied = False
    for _ in range(RUIZ_SWEEPS):
        # Ruiz: row and column maxima of the same A, then both applied (keeps |A| symmetric);
        # the pass that applies them takes the maxima for the next sweep
        changed = False
        for i in range(n):
            fr[i] = _power_of_two(1.0 / math.sqrt(fr[i])) if fr[i] > 0.0 else 1.0
            fc[i] = _power_of_two(1.0 / math.sqrt(fc[i])) if fc[i] > 0.0 else 1.0
            if fr[i] != 1.0 or fc[i] != 1.0:
                changed = True
        if not changed:
            break
        if not copied:
            A = M.copy()
            copied = True
        for i in range(n):
            row[i] *= fr[i]
            col[i] *= fc[i]
        next_fc = np.zeros(n)
        for i in range(n):
            f = fr[i]
            largest = 0.0
            for j in range(n):
                a = A[i, j] * (f * fc[j])
                A[i, j] = a
                a = abs(a)
                largest = max(largest, a)
                next_fc[j] = max(next_fc[j], a)
            fr[i] = largest
        fc = next_fc
    qs = np.empty(n)
    los = np.empty(n)
    his = np.empty(n)
    for i in range(n):
        if q[i] != 0.0 and zero_row(A, i):  # w_i = q_i whatever z is: only its sign matters
            row[i] = _power_of_two(1.0 / abs(q[i]))
        qs[i] = row[i] * q[i]
        los[i] = lo[i] / col[i]
        his[i] = hi[i] / col[i]
    return A, qs, los, his, row, col
