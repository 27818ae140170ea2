"""Bounded and unilateral bilateral rows posed as contacts of the exact cone's Delassus problem
(lcpdyn.strategies.coulomb_rows): the embedding solves the same box complementarity as the
bounded LCP."""

from __future__ import annotations

import numpy as np
import pytest

import solvers
from lcpdyn.strategies.coulomb import delassus
from lcpdyn.strategies.coulomb_rows import BoundedRows

INF = np.inf
# two-sided symmetric and asymmetric, lower only (a limit), upper only, free, fixed (lo == hi)
LOWER = np.array([-0.4, -0.1, 0.0, -INF, -INF, 0.2, 0.3])
UPPER = np.array([0.4, 0.7, INF, 0.25, INF, 0.6, 0.3])


def _problem(seed):
    rng = np.random.default_rng(seed)
    mass, inertia = np.array([1.3, 0.7]), np.stack([np.diag([0.2, 0.3, 0.25]), np.diag([0.1, 0.1, 0.15])])
    A = rng.normal(size=(LOWER.size, 12))
    rhs, u = rng.normal(size=12), rng.normal(size=LOWER.size)
    compliance = np.where(np.arange(LOWER.size) % 3 == 0, 0.05, 0.0)
    return mass, inertia, A, rhs, u, compliance


def _box_residual(s, w, lo, hi):
    """The natural map of the box complementarity, per row."""
    return np.abs(s - np.clip(s - w, lo, hi))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("method", ["newton", "nsgs", "prox"])
def test_the_embedding_solves_the_rows_box_complementarity(seed, method):
    mass, inertia, A, rhs, u, compliance = _problem(seed)
    bounded = BoundedRows.of((LOWER, UPPER))
    assert bounded.rows.tolist() == [0, 1, 2, 3, 5, 6] and bounded.equal.tolist() == [4]
    free, response, W, b = delassus(None, None, mass, inertia, A, np.zeros((0, 12)), rhs, u, np.zeros(0),
                                    np.zeros(0), compliance, bounded)  # fmt: skip
    np.testing.assert_array_equal(W, W.T)
    result = solvers.solve(solvers.FrictionContactProblem(W, b, bounded.mu(np.zeros(0))), method=method,
                           tolerance=1e-12)  # fmt: skip
    assert result.status == solvers.Status.SOLVED
    x = free + response @ result.r
    s = bounded.impulses(x[12:], result.r)
    # the rows' own equations, recomputed from the bodies' velocities
    inverse = np.zeros((12, 12))
    for i in range(2):
        inverse[6 * i : 6 * i + 3, 6 * i : 6 * i + 3] = np.eye(3) / mass[i]
        inverse[6 * i + 3 : 6 * i + 6, 6 * i + 3 : 6 * i + 6] = np.linalg.inv(inertia[i])
    v = inverse @ (rhs + A.T @ s)
    np.testing.assert_allclose(x[:12], v, rtol=0, atol=1e-10)
    w = A @ v + compliance * s - u
    assert np.all(s >= LOWER - 1e-10) and np.all(s <= UPPER + 1e-10)
    assert _box_residual(s, w, LOWER, UPPER).max() < 1e-9
    # and the same answer as the bounded LCP of those rows, posed directly
    K = A @ inverse @ A.T + np.diag(compliance)
    direct = solvers.solve(solvers.BoundedLCP(K, A @ inverse @ rhs - u, LOWER, UPPER), method="judice-pires",
                           tolerance=1e-12)  # fmt: skip
    np.testing.assert_allclose(s, direct.z, rtol=0, atol=1e-8)


def test_rows_without_bounds_are_not_embedded():
    assert BoundedRows.of(None) is None
    assert BoundedRows.of((np.full(3, -INF), np.full(3, INF))) is None
    part = BoundedRows.of((LOWER, UPPER), np.array([4, 2]))
    assert part.rows.tolist() == [1] and part.equal.tolist() == [0] and part.m == 2
