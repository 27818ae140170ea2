"""The framework's residual (:mod:`solvers.result`) for problems stored as compressed sparse rows.

The same per-row, scale-invariant measure as ``solvers.result._measure_kernel`` (bounded
LCP) and ``solvers.friction_contact._measure_given`` (3D friction contact), computed over the
nonzeros of a CSR matrix instead of a dense one, so that a problem of thousands of unknowns with
a few dozen nonzeros per row (the step of a pile of bodies: Peiret 2016 Eq. 30 over 500 bodies and
1500 contacts, or its Delassus operator) is judged at a cost proportional to its nonzeros. Same
scales, same rules, the same answer up to the order of summation (tested against the dense
measure).

One difference, which can only reject: the dense measure re-judges an answer far beyond its data
(more than 1e3 times the data-only yardstick) by the data-only growth *when its basis is
numerically singular* (a dense condition number, O(n^3)). Here such an answer is judged by the
data-only growth outright, without the condition test.

CSR arrays: ``indptr`` (n + 1,), ``indices`` (nnz,) column indices sorted within each row,
``data`` (nnz,) float64; explicit zeros are allowed.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .contact_measure import contact_errors
from .result import _DATA_REACH_SWEEPS, _EPS, _SUSPECT_GROWTH, _lcp_errors, bound_sizes, finish_columns

__all__ = [
    "csr_lcp_measure",
    "csr_lcp_measure_scaled",
    "csr_lcp_scales",
    "csr_friction_contact_measure",
    "csr_friction_contact_measure_scaled",
    "csr_friction_contact_scales",
    "csr_arrays",
    "csr_position",
]


def csr_arrays(matrix):
    """(indptr, indices, data) of a scipy sparse matrix, indices sorted, as int64/float64."""
    csr = matrix.tocsr()
    csr.sort_indices()
    return csr.indptr.astype(np.int64), csr.indices.astype(np.int64), csr.data.astype(np.float64)


@njit(cache=True)
def csr_position(indptr, indices, i, j):
    """Where column j sits in row i of a CSR pattern (binary search; indices sorted within a
    row), or -1 if it is not stored."""
    lo, hi = indptr[i], indptr[i + 1]
    while lo < hi:
        mid = (lo + hi) // 2
        if indices[mid] < j:
            lo = mid + 1
        else:
            hi = mid
    if lo < indptr[i + 1] and indices[lo] == j:
        return lo
    return -1


@njit(cache=True)
def _entry(indptr, indices, data, i, j):
    """M_ij by binary search in row i (0 if not stored)."""
    p = csr_position(indptr, indices, i, j)
    return data[p] if p >= 0 else 0.0


@njit(cache=True)
def _abs_matvec(indptr, indices, data, x, out):
    """out <- |M| x."""
    for i in range(indptr.shape[0] - 1):
        acc = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            acc += abs(data[p]) * x[indices[p]]
        out[i] = acc


@njit(cache=True)
def _static_scales(indptr, indices, data, q, lo, hi):
    """(diag |M_kk|, d0, velocity) of :func:`solvers.result.static_scales`: what the measure
    needs of the problem alone, the same for every z (:func:`csr_lcp_scales`)."""
    n = q.shape[0]
    signed = np.zeros(n)  # M_kk
    for i in range(n):
        signed[i] = _entry(indptr, indices, data, i, i)
    diag = np.abs(signed)
    size = bound_sizes(lo, hi)
    d0 = np.abs(q)
    if n > 0 and size.max() > 0.0:
        extra = np.empty(n)
        _abs_matvec(indptr, indices, data, size, extra)
        d0 += extra
    velocity = np.zeros(n, np.bool_)
    for k in range(n):
        velocity[k] = lo[k] == -np.inf and hi[k] == np.inf and diag[k] != 0.0
    initial = velocity.copy()
    for k in range(n):
        mkk = signed[k]
        for p in range(indptr[k], indptr[k + 1]):
            j = indices[p]
            if j == k or not (initial[k] or initial[j]):
                continue
            mjj = signed[j]
            if abs(mkk * mjj) < data[p] * _entry(indptr, indices, data, j, k):
                velocity[k] = False
                velocity[j] = False
    return diag, d0, velocity


@njit(cache=True)
def _row_scales(indptr, indices, data, q, z, w, s, d0, velocity, diag, reach):
    """w <- M z + q; s <- row scales; reach <- data scales (:func:`solvers.result.row_scale_vector`)."""
    n = q.shape[0]
    terms = np.empty(n)
    for i in range(n):
        acc = q[i]
        size_i = abs(q[i])
        for p in range(indptr[i], indptr[i + 1]):
            t = data[p] * z[indices[p]]
            acc += t
            size_i += abs(t)
        w[i] = acc
        terms[i] = size_i
    size = np.zeros(n)
    for k in range(n):
        if velocity[k]:
            size[k] = max(d0[k], terms[k]) / diag[k]
    _abs_matvec(indptr, indices, data, size, reach)
    for i in range(n):
        reach[i] += d0[i]
        s[i] = max(terms[i], reach[i])


@njit(cache=True, error_model="numpy")
def _scan_columns(indptr, indices, data, s, z, scale, scale0, lo, hi, zeta):
    """:func:`solvers.result.scan_columns` over the nonzeros."""
    n = s.shape[0]
    largest = np.zeros(n)
    smallest = np.full(n, np.inf)
    smallest0 = np.full(n, np.inf)
    for i in range(n):
        inverse = 1.0 / s[i]
        inverse_data = 1.0 / scale[i]
        inverse_data0 = 1.0 / scale0[i]
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            a = abs(data[p])
            r = a * inverse
            if r > largest[j]:
                largest[j] = r
            if a > 0.0:
                r = a * inverse_data
                if r < smallest[j]:
                    smallest[j] = r
                r = a * inverse_data0
                if r < smallest0[j]:
                    smallest0[j] = r
    return finish_columns(largest, smallest, smallest0, z, lo, hi, zeta)


@njit(cache=True)
def _data_scales(indptr, indices, data, diag, d0, velocity, sweeps):
    """``solvers.result._data_scales`` over the nonzeros."""
    n = d0.shape[0]
    size = np.zeros(n)
    for k in range(n):
        if velocity[k]:
            size[k] = d0[k] / diag[k]
    out = np.empty(n)
    _abs_matvec(indptr, indices, data, size, out)
    out += d0
    for _ in range(sweeps):
        for i in range(n):
            if out[i] > 0.0:
                for p in range(indptr[i], indptr[i + 1]):
                    a = abs(data[p])
                    j = indices[p]
                    if a > 0.0 and out[i] > size[j] * a:
                        size[j] = out[i] / a
        _abs_matvec(indptr, indices, data, size, out)
        out += d0
    return out


@njit(cache=True)
def _scales(indptr, indices, data, q, z, w, s, reach, diag, d0, velocity):
    """The part both measures share, given the problem's static scales: w <- M z + q, s <- row
    scales, reach <- data scales; False when z or w is not finite (:func:`solvers.result.finite_scales`)."""
    n = q.shape[0]
    for i in range(n):
        if not np.isfinite(z[i]):
            return False
    _row_scales(indptr, indices, data, q, z, w, s, d0, velocity, diag, reach)
    for i in range(n):
        if not np.isfinite(w[i]):
            return False
    return True


@njit(cache=True)
def csr_lcp_scales(indptr, indices, data, q, lo, hi):
    """(diag, d0, velocity): the scales of the bounded LCP (M, q, lo, hi) that do not depend on
    the answer, for :func:`csr_lcp_measure_scaled` to judge many answers of one problem (an
    iterative solver's iterates) without computing them again -- the same numbers as
    :func:`csr_lcp_measure`."""
    return _static_scales(indptr, indices, data, q, lo, hi)


@njit(cache=True)
def csr_lcp_measure(indptr, indices, data, q, lo, hi, z, w, active_set):
    """The bounded-LCP measure of ``z`` (module docstring): w <- M z + q; returns (relative
    residual, worst row, absolute residual, absolute bound violation), NaN if not finite."""
    diag, d0, velocity = _static_scales(indptr, indices, data, q, lo, hi)
    return csr_lcp_measure_scaled(indptr, indices, data, q, lo, hi, z, w, active_set, diag, d0, velocity)


@njit(cache=True)
def csr_lcp_measure_scaled(indptr, indices, data, q, lo, hi, z, w, active_set, diag, d0, velocity):
    """:func:`csr_lcp_measure` with the problem's scales from :func:`csr_lcp_scales`."""
    n = q.shape[0]
    s = np.empty(n)
    zeta = np.empty(n)
    reach = np.empty(n)
    if not _scales(indptr, indices, data, q, z, w, s, reach, diag, d0, velocity):
        return np.nan, -1, np.nan, np.nan
    level0 = _data_scales(indptr, indices, data, diag, d0, velocity, 0)
    growth, pure = _scan_columns(indptr, indices, data, s, z, reach, level0, lo, hi, zeta)
    relative, worst, residual, violation = _lcp_errors(z, w, lo, hi, s, zeta, active_set)
    if pure > max(growth, _SUSPECT_GROWTH):
        data0 = _data_scales(indptr, indices, data, diag, d0, velocity, _DATA_REACH_SWEEPS)
        _, pure = _scan_columns(indptr, indices, data, data0, z, data0, data0, lo, hi, np.empty(n))
        if pure > max(growth, _SUSPECT_GROWTH):  # no condition test here: judged by the data alone
            growth = pure
    return max(relative, _EPS * growth), worst, residual, violation


@njit(cache=True)
def csr_friction_contact_scales(indptr, indices, data, b):
    """(diag, d0, velocity) of the friction-contact problem (W, b) that do not depend on the
    answer, for :func:`csr_friction_contact_measure_scaled` (as :func:`csr_lcp_scales`)."""
    hi = np.full(b.shape[0], np.inf)
    return _static_scales(indptr, indices, data, b, -hi, hi)


@njit(cache=True, error_model="numpy")
def csr_friction_contact_measure(indptr, indices, data, b, mu, r, u):
    """The friction-contact measure of ``r`` (``solvers.friction_contact._measure_given``):
    u <- W r + b; returns (relative residual, worst contact, absolute residual, absolute cone
    violation), NaN (worst -1) if not finite."""
    for i in range(r.shape[0]):  # a non-finite r is judged before any scale is computed
        if not np.isfinite(r[i]):
            return np.nan, -1, np.nan, np.nan
    diag, d0, velocity = csr_friction_contact_scales(indptr, indices, data, b)
    return csr_friction_contact_measure_scaled(indptr, indices, data, b, mu, r, u, diag, d0, velocity)


@njit(cache=True, error_model="numpy")
def csr_friction_contact_measure_scaled(indptr, indices, data, b, mu, r, u, diag, d0, velocity):
    """:func:`csr_friction_contact_measure` with the problem's scales from
    :func:`csr_friction_contact_scales`."""
    n = b.shape[0]
    hi = np.full(n, np.inf)
    lo = -hi
    s = np.empty(n)
    zeta = np.empty(n)
    reach = np.empty(n)
    if not _scales(indptr, indices, data, b, r, u, s, reach, diag, d0, velocity):
        return np.nan, -1, np.nan, np.nan
    growth, _ = _scan_columns(indptr, indices, data, s, r, reach, reach, lo, hi, zeta)
    relative, worst, residual, violation = contact_errors(mu, r, u, s, zeta)
    return max(relative, _EPS * growth), worst, residual, violation
