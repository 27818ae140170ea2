"""The block assembly of a pile's Delassus operator (solvers.sparse_delassus) against plain sparse
products, and the per-contact friction rows the sparse island path builds from it
(lcpdyn.strategies.sparse_island.contact_friction) against the model's block."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from lcpdyn.contact_rows import tangent_basis
from lcpdyn.friction.base import FrictionBlock
from lcpdyn.strategies.sparse_island import body_matrices, contact_friction, island_delassus
from solvers.sparse_delassus import block_diagonal_csr, transformed_csr, transformed_rows


def _island(rng, nb=7, c=19):
    """H (3c, 6 nb) of random two-body and body-world contacts (two pairs with two contacts each,
    as a box's corners give), the bodies' M^-1 and M."""
    pairs = [(int(rng.integers(nb)), -1) for _ in range(5)] + [(0, 1), (0, 1), (2, 3), (3, 2)]
    while len(pairs) < c:
        a, b = rng.choice(nb, 2, replace=False)
        pairs.append((int(a), int(b)))
    H = np.zeros((3 * c, 6 * nb))
    for i, (a, b) in enumerate(pairs):
        for body in (a, b):
            if body >= 0:
                H[3 * i : 3 * i + 3, 6 * body : 6 * body + 6] = rng.normal(size=(3, 6))
    mass = rng.uniform(0.5, 3.0, nb)
    inertia = np.array([(lambda A: A @ A.T + np.eye(3))(rng.normal(size=(3, 3))) for _ in range(nb)])
    Minv, M = body_matrices(mass, inertia, np.linalg.inv(inertia))
    return sp.csr_matrix(H), Minv, M


def _dense(arrays, shape):
    indptr, indices, data = arrays
    return sp.csr_matrix((data, indices, indptr), shape=shape).toarray()


def test_delassus_blocks_are_the_sparse_product_and_symmetric():
    rng = np.random.default_rng(4)
    H, Minv, M = _island(rng)
    c = H.shape[0] // 3
    assert np.allclose((Minv @ M).toarray(), np.eye(M.shape[0]), atol=1e-12)
    bodies, rows, (ptr, index, blocks) = island_delassus(H, Minv)
    W = (H @ Minv @ H.T).toarray()
    identity = np.tile(np.eye(3), (c, 1, 1))
    got = _dense(transformed_csr(ptr, index, blocks, identity, identity, np.zeros((c, 3, 3))), (3 * c, 3 * c))
    assert np.abs(got - W).max() < 1e-12 * np.abs(W).max()
    assert np.array_equal(got, got.T)  # bit for bit
    for i in range(c):  # a block is stored exactly where two contacts share a body
        shared = {b for b in bodies[i] if b >= 0}
        stored = set(index[ptr[i] : ptr[i + 1]])
        assert stored == {j for j in range(c) if shared & {b for b in bodies[j] if b >= 0}}
        assert list(index[ptr[i] : ptr[i + 1]]) == sorted(stored)
    # each pass's matrix: rows and columns mapped per contact, a compliance on the diagonal blocks
    left, right, diagonal = rng.normal(size=(3, c, 3, 3))
    T, TG = sp.block_diag(list(left)), sp.block_diag(list(right))
    want = (T @ H @ Minv @ H.T @ TG.T).toarray() + sp.block_diag(list(diagonal)).toarray()
    got = _dense(transformed_csr(ptr, index, blocks, left, right, diagonal), (3 * c, 3 * c))
    assert np.abs(got - want).max() < 1e-12 * np.abs(want).max()
    B = _dense(transformed_rows(bodies, rows, left), H.shape)
    assert np.abs(B - (T @ H).toarray()).max() < 1e-12 * np.abs(B).max()
    assert np.array_equal(_dense(block_diagonal_csr(diagonal), (3 * c, 3 * c)), sp.block_diag(list(diagonal)).toarray())


def test_a_contact_reaching_three_bodies_is_refused():
    H = sp.csr_matrix(np.ones((3, 18)))
    Minv, _ = body_matrices(np.ones(3), np.tile(np.eye(3), (3, 1, 1)), np.tile(np.eye(3), (3, 1, 1)))
    with pytest.raises(ValueError, match="more than two bodies"):
        island_delassus(H, Minv)


def test_the_delassus_operator_is_kept_for_the_same_rows_only():
    rng = np.random.default_rng(5)
    H, Minv, _ = _island(rng)
    cache = {}
    first = island_delassus(H, Minv, cache)
    assert island_delassus(H.copy(), Minv, cache) is first
    moved = H.copy()
    moved.data[0] += 1e-9
    assert island_delassus(moved, Minv, cache) is not first


def test_contact_friction_refuses_rows_that_couple_contacts():
    class Coupled:
        name = "coupled"

        def block(self, D, v, h, mu, normal_force, friction_force, tangent, mu_static=None):
            k = mu.shape[0]
            F = np.eye(2 * k) + np.eye(2 * k, k=2)  # contact i's rows reach contact i + 1's
            return FrictionBlock(F, F, None, np.zeros((2 * k, 2 * k)), np.zeros(2 * k), -np.ones(2 * k),
                                 np.ones(2 * k), np.tile(np.eye(2), (k, 1, 1)), np.zeros(k, bool))  # fmt: skip

    r = 4
    with pytest.raises(ValueError, match="'coupled'.*another contact"):
        contact_friction(Coupled(), np.zeros(2 * r), 1e-3, np.ones(r), np.ones(r), np.ones(r), np.zeros((r, 3)),
                         tangent_basis(np.tile([0.0, 0.0, 1.0], (r, 1))))  # fmt: skip
