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
def rank_revealing(A):
    """Gaussian elimination with complete pivoting on a copy of the square A: (rank, rows,
    cols) with rows[:rank], cols[:rank] the pivots taken before the largest remaining entry fell
    below ``RANK_TOLERANCE`` x max |A| -- independent rows and columns -- and cols[rank:] the
    columns that span nothing new.

    The copy's rows and columns are swapped in place (contiguous access), and the next pivot is
    searched for while the remaining block is updated: the same pivots, ties and arithmetic as a
    search of the whole remaining block after each elimination step, in a single pass over it
    (4 ms -> 1 ms on a 150 x 150 basic matrix of rank 120)."""
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
        for a in range(k + 1, m):
            factor = B[a, k] / pivot_value
            if factor != 0.0:
                B[a, k] -= factor * B[k, k]
                for b in range(k + 1, m):
                    B[a, b] -= factor * B[k, b]
                    value = abs(B[a, b])
                    if value > best:
                        best, pi, pj = value, a, b
            else:
                for b in range(k + 1, m):
                    value = abs(B[a, b])
                    if value > best:
                        best, pi, pj = value, a, b
    return rank, rows, cols


@njit(cache=True)
def minimum_norm_solve(A, r, a_norm, r_norm):
    """A solution of a singular (or numerically singular) basic system A x = r with the
    minimum-norm member's dependent variables, and whether the system is consistent:
    ||r - A x||_inf within 1e4 eps (||A||_inf ||x||_inf + ||r||_inf).

    Redundant contacts make such a system consistent with a family of solutions -- v+ is unique
    and the impulses are not (a box on four coplanar corners: N^T dlam = 0 for
    dlam = t (1, -1, 1, -1)) -- and the minimum-norm member shares the load evenly (t = 0), the
    symmetric answer, where any vertex of the family would unload two corners.

    The minimum-norm member is computed from the independent rows B = A[R, :] that
    :func:`rank_revealing` finds (rank k; the other rows are their combinations when the system
    is consistent): x = Q R^-T r_R with B^T = Q R the Householder QR of the m x k matrix B^T, the
    minimum-norm solution of B x = r_R. QR is a direct factorization; an SVD least squares
    (LAPACK gelsd) was used before and can fail to converge -- it did, single-threaded
    OpenBLAS 0.3.30 on a SkylakeX core, on a finite 432 x 432 basic system of 24 boxes. The
    orthogonal factors spread rounding over every component, also over those the structure makes
    exactly zero (a spin no force acts on), which the framework's per-row measure rightly
    refuses; so only the dependent variables keep their minimum-norm values, and the
    independent ones are solved again by LU from the full-rank square subsystem of independent
    rows and columns, as a nonsingular basis would be."""
    rank, rows, cols = rank_revealing(A)
    m = A.shape[0]
    x = np.zeros(m)
    if rank > 0:
        Bt = np.empty((m, rank))
        for a in range(rank):
            for b in range(m):
                Bt[b, a] = A[rows[a], b]
        Q, R = np.linalg.qr(Bt)
        y = np.empty(rank)
        for a in range(rank):  # forward substitution R^T y = r_R
            acc = r[rows[a]]
            for b in range(a):
                acc -= R[b, a] * y[b]
            y[a] = acc / R[a, a]
        for b in range(m):  # x = Q y
            acc = 0.0
            for a in range(rank):
                acc += Q[b, a] * y[a]
            x[b] = acc
    if 0 < rank < m:
        sub = np.empty((rank, rank))
        rhs = np.empty(rank)
        for a in range(rank):
            acc = r[rows[a]]
            for b in range(rank, m):
                acc -= A[rows[a], cols[b]] * x[cols[b]]
            rhs[a] = acc
            for b in range(rank):
                sub[a, b] = A[rows[a], cols[b]]
        y, ok = basic_solve(sub, rhs)
        if ok:
            for b in range(rank):
                x[cols[b]] = y[b]
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
