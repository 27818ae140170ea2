"""Basic systems of a pivoting method: the square system A x = r of the basic variables, solved
directly (LU with a refinement step), and, where redundant contacts make A singular, its
independent rows and columns found by Gaussian elimination with complete pivoting and the
system solved for its minimum-norm member. Used by :mod:`solvers.judice_pires` at every pivot
and by :mod:`solvers.lemke` on the basis it ends on."""

from __future__ import annotations

import numpy as np
from numba import njit

from .lapack import lu_solve

_EPS = float(np.finfo(float).eps)
RANK_TOLERANCE = 1e3 * _EPS  # relative pivot size below which a basic column counts as dependent
REFINE = 8.0 * _EPS  # componentwise backward error beyond which a basic solve is refined


@njit(cache=True)
def basic_solve(A, r):
    """Solve A x = r by LU (LAPACK) with one step of iterative refinement when the componentwise
    backward error max_i abs(r - A x)_i / (abs(r) + abs(A) abs(x))_i exceeds 8 eps (Skeel 1980: one step
    of fixed-precision refinement makes LU componentwise backward stable). Returns (x, ok):
    ok is False for an exactly singular LU."""
    x, ok = lu_solve(A, r)
    if not ok:  # exactly singular LU
        return r, False
    m = r.shape[0]
    res = r - A @ x if m > 0 else r.copy()
    refine = False
    for a in range(m):
        if abs(res[a]) <= REFINE * abs(r[a]):
            continue  # within 8 eps of |r_a| <= (|r| + |A| |x|)_a: settled without the row
        size = abs(r[a])
        for b in range(m):
            size += abs(A[a, b] * x[b])
        if abs(res[a]) > REFINE * size:
            refine = True
            break
    if refine:
        correction, ok = lu_solve(A, res)
        if not ok:
            return r, False
        x = x + correction
    return x, True


@njit(cache=True)
def complete_pivoting(A):
    """Gaussian elimination with complete pivoting on a copy of the square A, stopped where the
    largest remaining entry falls below ``RANK_TOLERANCE`` x max |A|: (rank, rows, cols, F) with
    rows[:rank], cols[:rank] the pivots taken -- independent rows and columns -- and F the factors
    in the pivoted order, F[a, b] = (P A Q) factored: for a, b < rank the unit lower L11
    (strictly below the diagonal) and upper U11 of A[rows[:rank], cols[:rank]] = L11 U11, and
    U12 (rows < rank, columns >= rank) with A[rows[:rank], cols[rank:]] = L11 U12.

    The copy's rows and columns are swapped in place (contiguous access), and the next pivot is
    searched for row by row as the remaining block is updated: the same pivots, ties and
    arithmetic as a search of the whole remaining block after each elimination step, in one
    pass over it (1.4 ms on a 180 x 180 basic matrix of rank 170: the 10-box tower)."""
    m = A.shape[0]
    B = A.copy()
    rows = np.arange(m)
    cols = np.arange(m)
    scale = 0.0
    best, pi, pj = 0.0, 0, 0
    for a in range(m):  # the scale, and the first pivot (the first largest entry, row-major)
        for b in range(m):
            value = abs(B[a, b])
            scale = max(scale, value)
            if value > best:
                best, pi, pj = value, a, b
    rank = 0
    for k in range(m):
        if not best > RANK_TOLERANCE * scale:
            break
        if pi != k:
            for b in range(m):
                B[k, b], B[pi, b] = B[pi, b], B[k, b]
            rows[k], rows[pi] = rows[pi], rows[k]
        if pj != k:
            for a in range(m):
                B[a, k], B[a, pj] = B[a, pj], B[a, k]
            cols[k], cols[pj] = cols[pj], cols[k]
        pivot_value = B[k, k]
        rank += 1
        best, pi, pj = 0.0, k + 1, k + 1
        pivot_row = B[k]
        for a in range(k + 1, m):
            row = B[a]
            factor = row[k] / pivot_value
            row[k] = factor  # L's multiplier (the eliminated entry is zero)
            if factor != 0.0:
                for b in range(k + 1, m):
                    row[b] -= factor * pivot_row[b]
            top = 0.0  # the row's largest entry, then its first place: the first largest, row-major
            for b in range(k + 1, m):
                top = max(top, abs(row[b]))
            if top > best:
                for b in range(k + 1, m):
                    if abs(row[b]) == top:
                        best, pi, pj = top, a, b
                        break
    return rank, rows, cols, B


@njit(cache=True)
def rank_revealing(A):
    """(rank, rows, cols) of :func:`complete_pivoting`: rows[:rank], cols[:rank] independent
    rows and columns of the square A, cols[rank:] the columns that span nothing new."""
    rank, rows, cols, _ = complete_pivoting(A)
    return rank, rows, cols


@njit(cache=True)
def _upper_solve(F, rank, y):
    """U11^-1 y with the upper factor of :func:`complete_pivoting` (pivoted order)."""
    x = y.copy()
    for a in range(rank - 1, -1, -1):
        acc = x[a]
        for b in range(a + 1, rank):
            acc -= F[a, b] * x[b]
        x[a] = acc / F[a, a]
    return x


@njit(cache=True)
def _independent_solve(F, rank, y):
    """U11^-1 L11^-1 y: the solve with the factors of :func:`complete_pivoting` (pivoted order)."""
    x = y.copy()
    for a in range(rank):  # L11 (unit lower)
        acc = x[a]
        for b in range(a):
            acc -= F[a, b] * x[b]
        x[a] = acc
    return _upper_solve(F, rank, x)


@njit(cache=True)
def minimum_norm_solve(A, r, a_norm, r_norm):
    """A solution of a singular (or numerically singular) basic system A x = r with the
    minimum-norm member's dependent variables, and whether the system is consistent:
    ||r - A x||_inf within 1e4 eps (||A||_inf ||x||_inf + ||r||_inf).

    Redundant contacts make such a system consistent with a family of solutions -- v+ is unique
    and the impulses are not (a box on four coplanar corners: N^T dlam = 0 for
    dlam = t (1, -1, 1, -1)) -- and the minimum-norm member shares the load evenly (t = 0), the
    symmetric answer, where any vertex of the family would unload two corners.

    From the complete-pivoting elimination that finds the independent rows R and columns C
    (:func:`complete_pivoting`, rank k): the rows R read B1 x1 + B2 x2 = r_R with B1 = A[R, C]
    (= L11 U11, nonsingular) and x2 the m - k dependent variables, so that x1 = c - G x2 with
    c = B1^-1 r_R and G = B1^-1 B2 = U11^-1 U12, and the minimum of |x1|² + |x2|² is the least
    squares solution of [G; I] x2 = [c; 0] (Householder QR of that (m, m - k) matrix) -- a
    problem in the dependent variables only, with no second factorization of A (a Householder
    QR of A[R, :]^T did this before, at about twice the cost).
    The independent variables are then those of the square subsystem B1 x1 = r_R - B2 x2, as a
    nonsingular basis would give them, with a step of iterative refinement where its
    componentwise backward error exceeds 8 eps (as :func:`basic_solve`): the framework's
    per-row measure judges each row against its own scale."""
    rank, rows, cols, F = complete_pivoting(A)
    m = A.shape[0]
    x = np.zeros(m)
    if rank > 0:
        d = m - rank
        G = np.empty((rank, d))
        for j in range(d):  # G = U11^-1 U12, column by column
            G[:, j] = _upper_solve(F, rank, F[:rank, rank + j].copy())
        y = np.empty(rank)
        for a in range(rank):
            y[a] = r[rows[a]]
        c = _independent_solve(F, rank, y)
        x2 = np.zeros(d)
        if d > 0:  # least squares [G; I] x2 = [c; 0] by Householder QR (not the normal equations: cond(G)²)
            stacked = np.zeros((rank + d, d))
            stacked[:rank] = G
            for j in range(d):
                stacked[rank + j, j] = 1.0
            Q, R = np.linalg.qr(stacked)
            for j in range(d - 1, -1, -1):  # R x2 = Q^T [c; 0]
                acc = 0.0
                for a in range(rank):
                    acc += Q[a, j] * c[a]
                for b in range(j + 1, d):
                    acc -= R[j, b] * x2[b]
                x2[j] = acc / R[j, j]
        # the independent variables from the square subsystem B1 x1 = r_R - B2 x2 (refined once)
        rhs = np.empty(rank)
        for a in range(rank):
            acc = r[rows[a]]
            for j in range(d):
                acc -= A[rows[a], cols[rank + j]] * x2[j]
            rhs[a] = acc
        x1 = _independent_solve(F, rank, rhs)
        residual = np.empty(rank)
        refine = False
        for a in range(rank):
            acc = rhs[a]
            size = abs(rhs[a])
            for b in range(rank):
                term = A[rows[a], cols[b]] * x1[b]
                acc -= term
                size += abs(term)
            residual[a] = acc
            if abs(acc) > REFINE * size:
                refine = True
        if refine:
            x1 = x1 + _independent_solve(F, rank, residual)
        for b in range(rank):
            x[cols[b]] = x1[b]
        for j in range(d):
            x[cols[rank + j]] = x2[j]
    x_norm = 0.0
    for a in range(m):
        x_norm = max(x_norm, abs(x[a]))
    if not np.isfinite(x_norm):
        return x, False
    res = r - A @ x
    worst = 0.0
    for a in range(m):
        worst = max(worst, abs(res[a]))
    return x, worst <= 1e4 * _EPS * (a_norm * x_norm + r_norm)
