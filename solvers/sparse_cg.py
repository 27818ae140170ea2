"""Conjugate gradients for the face systems of projected Newton (:func:`solvers.sparse_newton.projected_newton_csr`)
where the step's matrix is symmetric positive definite: the Delassus form of Peiret 2016 Eq. (30) with
compliant normal rows (C_N > 0) and a regularized friction compliance, K = T W T^T + C with C positive
definite per contact, so that every face K_FF has its smallest eigenvalue at least C's.

There a face's condition number does not grow with the island (measured on the settled 500-sphere pile
of ``benchmarks/bench_pile.py``, k_T = 1e6, solref 0.7 ms: eigenvalues 1.4 to 345 on a face of 2,320
unknowns), so Jacobi-preconditioned CG takes a number of iterations independent of the pile's size, each
one a product with K_FF: the cost grows linearly with the island, where a sparse LU of a
three-dimensional contact network fills in superlinearly (Hestenes & Stiefel 1952; the preconditioned
form of Golub & Van Loan, "Matrix Computations", Alg. 11.5.1).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .sparse_measure import csr_arrays

__all__ = ["CGFaceSolver", "face_csr", "pcg_csr"]

RELATIVE = 1e-10
"""A face solve ends once its residual is this share of its right-hand side: the direction is then
exact far beyond what the projected search and the framework's tolerances (1e-6 to 1e-9) need."""


@njit(cache=True)
def face_csr(indptr, indices, data, rows, place):
    """CSR arrays (indptr, indices, data) of K[rows][:, cols] for K in CSR, the columns kept and
    renumbered by ``place`` (n,): the column's number in the block, -1 where it is not taken (in
    the order of K's own rows, as scipy's fancy indexing gives them, without its copies)."""
    count = 0
    for r in range(rows.shape[0]):
        i = rows[r]
        for k in range(indptr[i], indptr[i + 1]):
            if place[indices[k]] >= 0:
                count += 1
    ptr = np.empty(rows.shape[0] + 1, np.int64)
    idx = np.empty(count, np.int64)
    val = np.empty(count)
    ptr[0] = 0
    count = 0
    for r in range(rows.shape[0]):
        i = rows[r]
        for k in range(indptr[i], indptr[i + 1]):
            c = place[indices[k]]
            if c >= 0:
                idx[count] = c
                val[count] = data[k]
                count += 1
        ptr[r + 1] = count
    return ptr, idx, val


@njit(cache=True)
def _matvec(ptr, idx, val, x, out):
    for i in range(ptr.shape[0] - 1):
        s = 0.0
        for k in range(ptr[i], ptr[i + 1]):
            s += val[k] * x[idx[k]]
        out[i] = s


@njit(cache=True, error_model="numpy")
def pcg_csr(ptr, idx, val, b, relative, max_iterations):
    """Jacobi-preconditioned conjugate gradients for A x = b, A symmetric positive definite in CSR
    (``ptr``, ``idx``, ``val``), from x = 0, until |r| <= ``relative`` |b| (2-norms) or
    ``max_iterations``. Returns (x, iterations, |r| / |b|); a nonpositive curvature p^T A p (A not
    positive definite) stops it with the ratio as NaN."""
    n = b.shape[0]
    x = np.zeros(n)
    inverse = np.empty(n)
    for i in range(n):
        inverse[i] = 0.0
        for k in range(ptr[i], ptr[i + 1]):
            if idx[k] == i:
                inverse[i] = 1.0 / val[k] if val[k] > 0.0 else 1.0
    r = b.copy()
    size = np.sqrt(np.dot(b, b))
    if size == 0.0:
        return x, 0, 0.0
    s = r * inverse
    p = s.copy()
    rs = np.dot(r, s)
    Ap = np.empty(n)
    for it in range(1, max_iterations + 1):
        _matvec(ptr, idx, val, p, Ap)
        curvature = np.dot(p, Ap)
        if not curvature > 0.0:
            return x, it, np.nan
        alpha = rs / curvature
        x += alpha * p
        r -= alpha * Ap
        norm = np.sqrt(np.dot(r, r))
        if norm <= relative * size:
            return x, it, norm / size
        s = r * inverse
        following = np.dot(r, s)
        p = s + (following / rs) * p
        rs = following
    return x, max_iterations, np.sqrt(np.dot(r, r)) / size


class CGFaceSolver:
    """Solves K_FF x = b on the faces F of one projected Newton run by :func:`pcg_csr` to
    :data:`RELATIVE`, for a symmetric positive definite K (module docstring); the interface of
    :class:`solvers.sparse_newton.FaceSolver`. ``iterations`` counts CG iterations over the run;
    ``max_iterations`` bounds one solve (None if it is not reached: the caller stops)."""

    def __init__(self, matrix, arrays=None, max_iterations: int = 500):
        self.arrays = csr_arrays(matrix) if arrays is None else arrays
        self.n = self.arrays[0].shape[0] - 1
        self.max_iterations = int(max_iterations)
        self.iterations = 0
        self.solves = 0

    def solve(self, free, rhs, steps=None):
        """x with K_FF x = rhs on the face ``free`` (indices); None if CG did not reach
        :data:`RELATIVE` (K not positive definite on the face, or too ill-conditioned)."""
        place = np.full(self.n, -1, np.int64)
        place[free] = np.arange(free.size)
        ptr, idx, val = face_csr(*self.arrays, np.asarray(free, np.int64), place)
        x, iterations, ratio = pcg_csr(ptr, idx, val, np.asarray(rhs, np.float64), RELATIVE, self.max_iterations)
        self.iterations += iterations
        self.solves += 1
        return x if ratio <= RELATIVE else None
