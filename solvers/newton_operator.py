"""The operator W of the Newton methods on the Alart–Curnier function (:mod:`solvers.alart_curnier`,
:mod:`solvers.proximal_point`): the per-contact scaling ``ρ_α = 1 / |W_αα|_F``, products ``W r + b``
and the assembly and factorization of the generalized Jacobian ``J = A + B (W + diag(shift))``,
dense (LAPACK LU) or sparse (CSR on the block-row pattern of ``W``, SuperLU); derivation in
docs/theory/alart-curnier.md."""

from __future__ import annotations

import math
import warnings

import numpy as np
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from numba import njit

__all__ = ["contact_rho", "contact_rho_csr", "Operator"]


def contact_rho(W) -> np.ndarray:
    """``ρ_α = 1 / |W_αα|_F`` per contact (docs/theory/alart-curnier.md, "Scaling"); a zero block gets the mean of the
    others' ρ (1 if all are zero). Shape (nc,). Compiled: on a few contacts, where Newton itself
    takes tens of microseconds, the array version (fancy indexing) cost 35 µs of a 130 µs solve."""
    W = np.asarray(W, dtype=np.float64)
    return _rho_dense(W, W.shape[0] // 3)


@njit(cache=True)
def _rho_dense(W, nc):
    """:func:`contact_rho` from the diagonal blocks of a dense ``W``."""
    fro = np.empty(nc)
    for c in range(nc):
        k = 3 * c
        total = 0.0
        for i in range(3):
            for j in range(3):
                total += W[k + i, k + j] * W[k + i, k + j]
        fro[c] = math.sqrt(total)
    return _rho_of_norms(fro)


@njit(cache=True)
def _rho_of_norms(fro):
    """ρ from the contacts' block norms |W_αα|_F (:func:`contact_rho`): 1 / norm where it is
    finite and positive, elsewhere the mean of those (1 if there are none)."""
    nc = fro.shape[0]
    rho = np.empty(nc)
    total = 0.0
    count = 0
    for c in range(nc):
        if math.isfinite(fro[c]) and fro[c] > 0.0:
            rho[c] = 1.0 / fro[c]
            total += rho[c]
            count += 1
    fill = total / count if count else 1.0
    for c in range(nc):
        if not (math.isfinite(fro[c]) and fro[c] > 0.0):
            rho[c] = fill
    return rho


@njit(cache=True)
def _assemble_dense(W, A, B, J):
    """J <- blockdiag(A) + blockdiag(B) W (dense)."""
    n = W.shape[0]
    nc = n // 3
    for c in range(nc):
        k = 3 * c
        for a in range(3):
            for j in range(n):
                J[k + a, j] = B[c, a, 0] * W[k, j] + B[c, a, 1] * W[k + 1, j] + B[c, a, 2] * W[k + 2, j]
            for bb in range(3):
                J[k + a, k + bb] += A[c, a, bb]


@njit(cache=True)
def _matvec(W, r, b, u):
    """u <- W r + b (dense)."""
    n = W.shape[0]
    for i in range(n):
        s = b[i]
        for j in range(n):
            s += W[i, j] * r[j]
        u[i] = s


@njit(cache=True)
def _block_row_pattern(indptr, indices, n):
    """For each contact c the sorted column set S_c of its three rows of W (CSR ``indptr``,
    ``indices``) together with its own three columns. Returns (offsets (nc + 1), columns)."""
    nc = n // 3
    mark = np.full(n, -1, dtype=np.int64)
    counts = np.zeros(nc + 1, dtype=np.int64)
    for c in range(nc):
        count = 0
        for a in range(3):
            row = 3 * c + a
            for p in range(indptr[row], indptr[row + 1]):
                j = indices[p]
                if mark[j] != c:
                    mark[j] = c
                    count += 1
        for a in range(3):
            if mark[3 * c + a] != c:
                mark[3 * c + a] = c
                count += 1
        counts[c + 1] = counts[c] + count
    columns = np.empty(counts[nc], dtype=np.int64)
    mark[:] = -1
    for c in range(nc):
        pos = counts[c]
        for a in range(3):
            row = 3 * c + a
            for p in range(indptr[row], indptr[row + 1]):
                j = indices[p]
                if mark[j] != c:
                    mark[j] = c
                    columns[pos] = j
                    pos += 1
        for a in range(3):
            if mark[3 * c + a] != c:
                mark[3 * c + a] = c
                columns[pos] = 3 * c + a
                pos += 1
        columns[counts[c] : counts[c + 1]].sort()
    return counts, columns


@njit(cache=True)
def _gather_rows(indptr, indices, data, offsets, columns):
    """The three rows of each contact restricted to S_c, flattened, from W in CSR (indices
    sorted within rows; absent entries are 0): values[3 * offsets[c] + a * |S_c| + t] =
    W[3c + a, columns[offsets[c] + t]]."""
    nc = offsets.shape[0] - 1
    values = np.zeros(3 * offsets[nc])
    for c in range(nc):
        start = offsets[c]
        size = offsets[c + 1] - start
        for a in range(3):
            t = 0
            for p in range(indptr[3 * c + a], indptr[3 * c + a + 1]):
                j = indices[p]
                while t < size and columns[start + t] < j:
                    t += 1
                if t < size and columns[start + t] == j:
                    values[3 * start + a * size + t] = data[p]
    return values


def contact_rho_csr(operator) -> np.ndarray:
    """:func:`contact_rho` of a sparse :class:`Operator` (from its contacts' diagonal blocks)."""
    n = operator.n
    indptr, indices, data = operator._w
    rows = np.repeat(np.arange(n), np.diff(indptr))
    own = indices // 3 == rows // 3
    squares = np.zeros(n // 3)
    np.add.at(squares, rows[own] // 3, data[own] ** 2)
    return _rho_of_norms(np.sqrt(squares))


@njit(cache=True)
def _assemble_sparse(offsets, columns, rows, A, B, indptr, indices, data):
    """J = blockdiag(A) + blockdiag(B) W in CSR (indptr, indices, data), row pattern S_c for the
    rows of contact c; ``rows`` from ``_gather_rows``."""
    nc = offsets.shape[0] - 1
    indptr[0] = 0
    for c in range(nc):
        start = offsets[c]
        size = offsets[c + 1] - start
        base = 3 * start
        for a in range(3):
            row = 3 * c + a
            out = indptr[row]
            for t in range(size):
                j = columns[start + t]
                value = (
                    B[c, a, 0] * rows[base + t]
                    + B[c, a, 1] * rows[base + size + t]
                    + B[c, a, 2] * rows[base + 2 * size + t]
                )
                d = j - 3 * c
                if 0 <= d < 3:
                    value += A[c, a, d]
                indices[out + t] = j
                data[out + t] = value
            indptr[row + 1] = out + size


@njit(cache=True)
def _csr_diagonal_positions(indptr, indices):
    """Position of the (stored) diagonal entry of each row of a CSR matrix."""
    n = indptr.shape[0] - 1
    out = np.full(n, -1, dtype=np.int64)
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            if indices[p] == i:
                out[i] = p
    return out


@njit(cache=True)
def _diagonal_positions(offsets, columns):
    """Position of W[i, i] in the array of ``_gather_rows``, for every unknown i."""
    nc = offsets.shape[0] - 1
    out = np.empty(3 * nc, dtype=np.int64)
    for c in range(nc):
        start = offsets[c]
        size = offsets[c + 1] - start
        for a in range(3):
            for t in range(size):
                if columns[start + t] == 3 * c + a:
                    out[3 * c + a] = 3 * start + a * size + t
    return out


@njit(cache=True)
def _csr_matvec(indptr, indices, data, r, b, u):
    """u <- W r + b (W in CSR)."""
    for i in range(b.shape[0]):
        s = b[i]
        for p in range(indptr[i], indptr[i + 1]):
            s += data[p] * r[indices[p]]
        u[i] = s


class Operator:
    """``W`` (plus an optional per-unknown diagonal shift) for the Newton iterations: products
    and the assembly of ``J = A + B (W + diag(shift))``, dense (LAPACK LU) or sparse (CSR with the
    block-row pattern of W, SuperLU)."""

    def __init__(self, W, shift, dense_limit):
        n = W.shape[0]
        self.n = n
        self.dense = n <= dense_limit
        self._shift = np.zeros(n)
        if self.dense:
            self.W = W  # copied by the first set_shift: the caller's W is never written
            self._owned = False
            self.J = np.empty((n, n))
        else:
            rows, cols = np.nonzero(W)
            self._set_sparse(rows, cols, np.asarray(W, dtype=np.float64)[rows, cols])
        if shift is not None:
            self.set_shift(shift)

    @classmethod
    def from_csr(cls, W):
        """The sparse operator from a scipy CSR ``W`` directly (a Delassus operator too large to
        hold dense: :func:`solvers.sparse_newton.proximal_point_csr`)."""
        n = W.shape[0]
        self = cls.__new__(cls)
        self.n = n
        self.dense = False
        self._shift = np.zeros(n)
        coo = sp.coo_matrix(W)
        self._set_sparse(coo.row, coo.col, coo.data.astype(np.float64))
        return self

    def _set_sparse(self, rows, cols, values):
        """The CSR structures of the sparse path from W's entries in coordinates, with every
        diagonal entry stored (an explicit zero where W has none: ``set_shift`` writes there;
        scipy's sparse sum would drop it)."""
        n = self.n
        diagonal = np.arange(n)
        rows = np.concatenate([rows, diagonal])
        cols = np.concatenate([cols, diagonal])
        values = np.concatenate([values, np.zeros(n)])
        Ws = sp.coo_matrix((values, (rows, cols)), shape=(n, n)).tocsr()  # explicit zeros kept
        Ws.sum_duplicates()
        Ws.sort_indices()
        indptr, indices = Ws.indptr.astype(np.int64), Ws.indices.astype(np.int64)
        self._w = (indptr, indices, Ws.data.astype(np.float64))
        self._w_diagonal = _csr_diagonal_positions(indptr, indices)
        self._offsets, self._columns = _block_row_pattern(indptr, indices, self.n)
        self._rows = _gather_rows(*self._w, self._offsets, self._columns)
        self._rows_diagonal = _diagonal_positions(self._offsets, self._columns)
        nnz = 3 * int(self._offsets[-1])
        self._indptr = np.empty(self.n + 1, dtype=np.int64)
        self._indices = np.empty(nnz, dtype=np.int64)
        self._data = np.empty(nnz)

    def set_shift(self, shift):
        """Make the operator ``W + diag(shift)`` (replacing the previous shift)."""
        delta = np.asarray(shift, dtype=np.float64) - self._shift
        if self.dense:
            if not self._owned:
                self.W = np.array(self.W, dtype=np.float64, order="C", copy=True)
                self._owned = True
            self.W[np.diag_indices(self.n)] += delta
        else:
            self._w[2][self._w_diagonal] += delta
            self._rows[self._rows_diagonal] += delta
        self._shift = delta + self._shift

    def velocity(self, r, b, out):
        """out = W r + b (dense or CSR W)."""
        if self.dense:
            _matvec(self.W, r, b, out)
        else:
            _csr_matvec(*self._w, r, b, out)
        return out

    def direction(self, A, B, phi):
        """Solve J d = −Φ; returns (d, regularized?) or (None, True) if no finite d is found."""
        if self.dense:
            _assemble_dense(self.W, A, B, self.J)
            scale = max(float(np.abs(self.J).max()), 1.0)
            for attempt in range(3):
                J = self.J if not attempt else self.J + (10.0 ** (attempt * 4 - 16)) * scale * np.eye(self.n)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", scipy.linalg.LinAlgWarning)
                    lu = scipy.linalg.lu_factor(J, check_finite=False)
                pivots = np.abs(np.diag(lu[0]))
                if pivots.min() <= 1e-14 * pivots.max():
                    continue
                d = scipy.linalg.lu_solve(lu, -phi, check_finite=False)
                if np.all(np.isfinite(d)):
                    return d, attempt > 0
            return None, True
        _assemble_sparse(self._offsets, self._columns, self._rows, A, B, self._indptr, self._indices, self._data)
        # the CSR arrays of J are the CSC arrays of J^T: factorize J^T, solve with trans="T"
        JT = sp.csc_matrix((self._data, self._indices, self._indptr), shape=(self.n, self.n))
        scale = max(float(np.abs(self._data).max()), 1.0)
        for attempt in range(3):
            try:
                M = JT if not attempt else JT + (10.0 ** (attempt * 4 - 16)) * scale * sp.identity(self.n, format="csc")
                # minimum degree on J + J^T (J has W's symmetric pattern with the cone blocks) with
                # threshold pivoting that prefers the diagonal (a pivot within 10 % of its
                # column's largest): the ordering's low fill survives the pivoting. A 150-sphere
                # pile's Jacobians (1302 unknowns): 4-8 ms a factorization against 7-21 ms with
                # COLAMD and full partial pivoting, the same direction to 1e-15
                d = spla.splu(M, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.1).solve(-phi, trans="T")
            except RuntimeError:  # "Factor is exactly singular"
                continue
            if np.all(np.isfinite(d)):
                return d, attempt > 0
        return None, True
