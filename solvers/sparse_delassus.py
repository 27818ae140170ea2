"""The Delassus operator W = H M^-1 H^T of contacts between free rigid bodies, assembled block by
block (three rows per contact, six columns per body), and the problems built from it by per-contact
row transformations, without general sparse products.

A step of a pile poses the same W to every solve and pass of the step (only the friction rows'
transformation, their compliance and bounds change), so W is built once
(:func:`delassus_blocks`: per body, the products of the contacts that touch it) and each pass's
matrix is K_ij = T_i W_ij T'_j^T + delta_ij C_i (:func:`transformed_csr`), with T_i, T'_i the 3x3
maps of contact i's normal and slip rows onto its unknowns' rows (Peiret 2016 Eq. 30 with the
velocities eliminated: T = diag(1, F_i), T' = diag(1, G_i)).

Inputs and outputs are CSR arrays (``indptr``, ``indices``, ``data``; indices sorted within a row)
or block arrays: ``bodies`` (c, 2) the island's body of each side of contact i (-1: none, the
world), ``rows`` (c, 2, 3, 6) contact i's three rows over the six velocities of each side's body.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .sparse_measure import csr_position

__all__ = ["contact_rows", "delassus_blocks", "transformed_csr", "transformed_rows", "block_diagonal_csr"]


@njit(cache=True)
def contact_rows(indptr, indices, data, c):
    """(bodies (c, 2), rows (c, 2, 3, 6), ok) of H (3c rows, six columns per body) in CSR: each
    contact's bodies in the order its entries meet them; ``ok`` False if a contact's rows reach
    more than two bodies (not a two-body contact: the caller takes another path)."""
    bodies = np.full((c, 2), -1, np.int64)
    rows = np.zeros((c, 2, 3, 6))
    for i in range(c):
        for a in range(3):
            row = 3 * i + a
            for p in range(indptr[row], indptr[row + 1]):
                column = indices[p]
                b = column // 6
                if bodies[i, 0] == b:
                    s = 0
                elif bodies[i, 1] == b:
                    s = 1
                elif bodies[i, 0] < 0:
                    bodies[i, 0] = b
                    s = 0
                elif bodies[i, 1] < 0:
                    bodies[i, 1] = b
                    s = 1
                else:
                    return bodies, rows, False
                rows[i, s, a, column - 6 * b] += data[p]
    return bodies, rows, True


@njit(cache=True)
def delassus_blocks(bodies, rows, inverse_mass, nb):
    """W = H M^-1 H^T as block-sparse rows of 3x3 blocks: (ptr (c + 1,), index (k,) sorted within a
    block row, blocks (k, 3, 3)); ``inverse_mass`` (nb, 6, 6) each body's M^-1 block. Block (i, j)
    is stored where contacts i and j share a body (W_ii always, if contact i has a body); W_ji is
    stored as W_ij^T exactly, so that W is symmetric bit for bit."""
    c = bodies.shape[0]
    start = np.zeros(nb + 1, np.int64)  # the contacts of each body, CSR
    for i in range(c):
        for s in range(2):
            if bodies[i, s] >= 0:
                start[bodies[i, s] + 1] += 1
    for b in range(nb):
        start[b + 1] += start[b]
    fill = start[:-1].copy()
    member = np.empty(start[nb], np.int64)
    side = np.empty(start[nb], np.int64)
    for i in range(c):
        for s in range(2):
            b = bodies[i, s]
            if b >= 0:
                member[fill[b]] = i
                side[fill[b]] = s
                fill[b] += 1
    scaled = np.zeros((c, 2, 3, 6))  # H_i,s M_b^-1
    for i in range(c):
        for s in range(2):
            b = bodies[i, s]
            if b >= 0:
                for a in range(3):
                    for k in range(6):
                        acc = 0.0
                        for m in range(6):
                            acc += rows[i, s, a, m] * inverse_mass[b, m, k]
                        scaled[i, s, a, k] = acc
    where = np.full(c, -1, np.int64)
    ptr = np.zeros(c + 1, np.int64)
    for i in range(c):  # the pattern: contacts sharing a body with i
        count = 0
        for s in range(2):
            b = bodies[i, s]
            if b < 0:
                continue
            for p in range(start[b], start[b + 1]):
                j = member[p]
                if where[j] != i:
                    where[j] = i
                    count += 1
        ptr[i + 1] = ptr[i] + count
    index = np.empty(ptr[c], np.int64)
    blocks = np.zeros((ptr[c], 3, 3))
    where[:] = -1
    for i in range(c):
        count = ptr[i]
        for s in range(2):
            b = bodies[i, s]
            if b < 0:
                continue
            for p in range(start[b], start[b + 1]):
                j = member[p]
                if where[j] != -2 - i:
                    where[j] = -2 - i
                    index[count] = j
                    count += 1
        index[ptr[i] : ptr[i + 1]].sort()
        for t in range(ptr[i], ptr[i + 1]):
            where[index[t]] = t
        for s in range(2):
            b = bodies[i, s]
            if b < 0:
                continue
            for p in range(start[b], start[b + 1]):
                j = member[p]
                if j < i:
                    continue  # the lower blocks are the upper ones transposed (below)
                t = where[j]
                sj = side[p]
                for a in range(3):
                    for e in range(3):
                        acc = 0.0
                        for k in range(6):
                            acc += scaled[i, s, a, k] * rows[j, sj, e, k]
                        blocks[t, a, e] += acc
        for t in range(ptr[i], ptr[i + 1]):
            where[index[t]] = -1
    for i in range(c):  # W_ji = W_ij^T
        for t in range(ptr[i], ptr[i + 1]):
            j = index[t]
            if j == i:  # W_ii symmetric bit for bit
                for a in range(3):
                    for e in range(a + 1, 3):
                        mean = 0.5 * (blocks[t, a, e] + blocks[t, e, a])
                        blocks[t, a, e] = mean
                        blocks[t, e, a] = mean
                continue
            if j < i:
                continue
            mirror = csr_position(ptr, index, j, i)  # block (j, i): stored, the pattern is symmetric
            for a in range(3):
                for e in range(3):
                    blocks[mirror, e, a] = blocks[t, a, e]
    return ptr, index, blocks


@njit(cache=True)
def transformed_csr(ptr, index, blocks, left, right, diagonal):
    """CSR arrays of K (3c, 3c) with K_ij = left_i W_ij right_j^T + delta_ij diagonal_i, W given by
    :func:`delassus_blocks`; ``left``, ``right``, ``diagonal`` (c, 3, 3). Every entry of a stored
    block is stored (explicit zeros included), columns sorted."""
    c = ptr.shape[0] - 1
    indptr = np.empty(3 * c + 1, np.int64)
    indices = np.empty(9 * ptr[c], np.int64)
    data = np.empty(9 * ptr[c])
    indptr[0] = 0
    out = 0
    for i in range(c):
        for a in range(3):
            for t in range(ptr[i], ptr[i + 1]):
                j = index[t]
                for e in range(3):
                    acc = 0.0
                    for k in range(3):
                        if left[i, a, k] == 0.0:
                            continue
                        row = 0.0
                        for m in range(3):
                            row += blocks[t, k, m] * right[j, e, m]
                        acc += left[i, a, k] * row
                    if j == i:
                        acc += diagonal[i, a, e]
                    indices[out] = 3 * j + e
                    data[out] = acc
                    out += 1
            indptr[3 * i + a + 1] = out
    return indptr, indices, data


@njit(cache=True)
def transformed_rows(bodies, rows, left):
    """CSR arrays of B (3c, 6 nb) with contact i's rows left_i H_i (``left`` (c, 3, 3)), over each
    side's six body columns, columns sorted."""
    c = bodies.shape[0]
    count = 0
    for i in range(c):
        for s in range(2):
            if bodies[i, s] >= 0:
                count += 18
    indptr = np.empty(3 * c + 1, np.int64)
    indices = np.empty(count, np.int64)
    data = np.empty(count)
    indptr[0] = 0
    out = 0
    for i in range(c):
        first, second = 0, 1
        if bodies[i, 1] >= 0 and (bodies[i, 0] < 0 or bodies[i, 1] < bodies[i, 0]):
            first, second = 1, 0
        for a in range(3):
            for s in (first, second):
                b = bodies[i, s]
                if b < 0:
                    continue
                for k in range(6):
                    acc = 0.0
                    for m in range(3):
                        acc += left[i, a, m] * rows[i, s, m, k]
                    indices[out] = 6 * b + k
                    data[out] = acc
                    out += 1
            indptr[3 * i + a + 1] = out
    return indptr, indices, data


@njit(cache=True)
def block_diagonal_csr(blocks):
    """CSR arrays of the block-diagonal matrix of ``blocks`` (k, m, m), every entry stored."""
    k, m = blocks.shape[0], blocks.shape[1]
    indptr = np.arange(0, k * m * m + 1, m).astype(np.int64)
    indices = np.empty(k * m * m, np.int64)
    data = np.empty(k * m * m)
    out = 0
    for b in range(k):
        for a in range(m):
            for e in range(m):
                indices[out] = m * b + e
                data[out] = blocks[b, a, e]
                out += 1
    return indptr, indices, data
