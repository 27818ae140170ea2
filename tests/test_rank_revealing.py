"""Júdice–Pires' rank-revealing elimination (complete pivoting) against a plain reference: the
same pivots, ties and rank as searching the whole remaining block after every elimination step."""

from __future__ import annotations

import numpy as np

from solvers import basic_systems


def _reference(A, tolerance):
    """Complete pivoting the textbook way: after each step, the first largest remaining entry
    (row-major over the permuted positions) is the next pivot."""
    m = A.shape[0]
    B = A.copy()
    rows, cols = np.arange(m), np.arange(m)
    scale = np.abs(B).max(initial=0.0)
    rank = 0
    for k in range(m):
        block = np.abs(B[np.ix_(rows[k:], cols[k:])])
        if block.size == 0 or not block.max() > tolerance * scale:
            break
        pi, pj = np.unravel_index(np.argmax(block), block.shape)  # first maximum, row-major
        pi, pj = pi + k, pj + k
        rows[[k, pi]], cols[[k, pj]] = rows[[pi, k]], cols[[pj, k]]
        pivot = B[rows[k], cols[k]]
        for a in range(k + 1, m):
            factor = B[rows[a], cols[k]] / pivot
            if factor != 0.0:
                B[rows[a], cols[k:]] -= factor * B[rows[k], cols[k:]]
        rank += 1
    return rank, rows, cols


def test_rank_revealing_takes_the_reference_pivots():
    rng = np.random.default_rng(7)
    tolerance = basic_systems.RANK_TOLERANCE
    for trial in range(400):
        m = int(rng.integers(0, 25))
        kind = trial % 4
        if kind == 0:  # nonsingular
            A = rng.standard_normal((m, m))
        elif kind == 1:  # symmetric, rank k
            k = int(rng.integers(0, m + 1))
            B = rng.standard_normal((m, k))
            A = B @ B.T
        elif kind == 2:  # small integers: many ties
            A = rng.integers(-2, 3, (m, m)).astype(float)
        else:  # duplicated rows and columns (four coplanar corners)
            A = np.kron(np.eye(max(m // 4, 1)), np.ones((4, 4)))[:m, :m].copy()
        rank, rows, cols = basic_systems.rank_revealing(A)
        expected = _reference(A, tolerance)
        assert rank == expected[0], (trial, rank, expected[0])
        assert np.array_equal(rows, expected[1]) and np.array_equal(cols, expected[2]), trial
        if kind == 1 and m:
            assert rank == np.linalg.matrix_rank(A)
