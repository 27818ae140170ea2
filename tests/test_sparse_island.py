"""Unit tests of the pieces of a pile's sparse island solve (lcpdyn.strategies.sparse_island) that
its bound passes rely on: the symmetry test on the model's rows, and a bound pass asking the model
again only for the contacts whose lam_N changed."""

from __future__ import annotations

import numpy as np
import pytest

from lcpdyn.friction import Box, Regularized
from lcpdyn.strategies.sparse_island import _renew_rows, contact_friction, symmetric_rows


def _contacts(c, seed=0):
    rng = np.random.default_rng(seed)
    slips = rng.standard_normal((c, 2)) * np.where(rng.random((c, 1)) < 0.5, 1e-6, 0.3)  # sticking and sliding
    tangent = np.zeros((c, 2, 3))
    tangent[:, 0, 0] = tangent[:, 1, 1] = 1.0
    friction_force = np.zeros((c, 3))
    friction_force[:, :2] = rng.standard_normal((c, 2))
    mu = np.full(c, 0.5)
    normal_force = rng.uniform(0.1, 10.0, c)
    return slips, mu, mu.copy(), normal_force, friction_force, tangent


@pytest.mark.parametrize(
    "model",
    [Regularized(tangential_stiffness=1e6), Regularized(), Box()],
    ids=["regularized k_T 1e6", "regularized", "box"],
)
def test_a_bound_pass_renews_the_moved_contacts_alone_with_the_same_rows_as_asking_for_all(model):
    """70 contacts (three chunks of the model's calls), some sticking, some sliding; the lam_N of
    a few changes: the renewed rows are bit for bit those of asking the model for every contact."""
    c, h = 70, 1e-3
    slips, mu, mu_s, normal, friction, tangent = _contacts(c)
    first = contact_friction(model, slips.reshape(-1), h, mu, mu_s, normal, friction, tangent)
    moved = np.array([0, 5, 31, 32, 33, 69])
    latest = normal.copy()
    latest[moved] *= np.array([3.0, 0.2, 0.0, 1.7, 4.0, 0.5])
    whole = contact_friction(model, slips.reshape(-1), h, mu, mu_s, latest, friction, tangent)
    renewed = _renew_rows(first, moved, model, slips, h, mu, mu_s, latest, friction, tangent, None, None)
    for a, b in zip(renewed, whole):
        np.testing.assert_array_equal(a, b)
    # the first pass's rows are copied, not written over; with no contact renewed they are kept as they are
    assert not any(np.shares_memory(a, b) for a, b in zip(renewed, first))
    assert _renew_rows(first, np.zeros(0, np.int64), model, slips, h, mu, mu_s, latest, friction, tangent, None,
                       None) is first  # fmt: skip


def test_symmetry_is_read_off_the_rows():
    """K = T W T'^T + C is symmetric where F = G and each C_i is symmetric (to 1e-12 of their
    size); a model whose force columns differ from its rows, or whose compliance is not
    symmetric, is not (the sparse path then takes the active-set iteration)."""
    rng = np.random.default_rng(1)
    F = rng.standard_normal((5, 2, 2))
    C = np.zeros((5, 2, 2))
    C[:, 0, 0] = C[:, 1, 1] = 1e-3
    assert symmetric_rows(F, F.copy(), C)
    assert symmetric_rows(F, F * (1 + 1e-14), C)
    G = F.copy()
    G[3, 1, 0] += 1e-6
    assert not symmetric_rows(F, G, C)
    C[2, 0, 1] = 1e-4
    assert not symmetric_rows(F, F, C)
    C[2, 1, 0] = 1e-4
    assert symmetric_rows(F, F, C)
