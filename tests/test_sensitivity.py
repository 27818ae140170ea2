"""Derivatives of a bounded LCP's solution on its active set (solvers.sensitivity; issue 49, item 1):
against central finite differences of re-solved problems, the order of their error, the
transpose relation of the forward and reverse forms, and the switches named."""

from __future__ import annotations

import numpy as np
import pytest

from solvers import solve
from solvers.library import random_p_matrix, random_spd
from solvers.sensitivity import active_set, solution_jvp, solution_vjp


def _solution(M, q, lo, hi):
    return solve(M, q, lo, hi, method="judice-pires", tolerance=1e-14, raise_on_failure=True).z


def _case(kind, seed):
    case = random_spd(12, seed) if kind == "spd" else random_p_matrix(10, seed, bounds="mixed")
    rng = np.random.default_rng(100 + seed)
    M, q, lo, hi = case.M, case.q, case.lo, case.hi
    tangents = (
        rng.normal(size=M.shape),
        rng.normal(size=q.shape),
        np.where(np.isfinite(lo), rng.normal(size=q.shape), 0.0),
        np.where(np.isfinite(hi), rng.normal(size=q.shape), 0.0),
    )
    return (M, q, lo, hi), tangents, rng


def _along(data, tangents, e):
    return [a + e * t for a, t in zip(data, tangents)]


@pytest.mark.parametrize("kind,seed", [("spd", s) for s in range(4)] + [("p-matrix", s) for s in range(4)])
def test_the_derivative_is_the_finite_difference_of_resolved_problems(kind, seed):
    """Random problems with free, one-sided and two-sided unknowns (every row kind of Eq. 30):
    every data entry perturbed at once; the central difference at e = 1e-5 agrees to 1e-6
    relative, and its error falls as e² (the active set does not change: no switch)."""
    data, tangents, _ = _case(kind, seed)
    z = _solution(*data)
    active = active_set(*data, z)
    assert active.switches == 0 and active.lower.any() | active.upper.any() and active.interior.any()
    dz = solution_jvp(*data, z, tangents, active)
    errors = []
    for e in (1e-4, 1e-5):
        central = (_solution(*_along(data, tangents, e)) - _solution(*_along(data, tangents, -e))) / (2 * e)
        errors.append(np.abs(central - dz).max() / np.abs(dz).max())
    assert errors[1] < 1e-6
    assert 30 < errors[0] / errors[1] < 300  # second order: 100x for a 10x smaller e


@pytest.mark.parametrize("seed", range(4))
def test_the_reverse_form_is_the_transpose_of_the_forward_form(seed):
    data, tangents, rng = _case("spd", seed)
    z = _solution(*data)
    dz = solution_jvp(*data, z, tangents)
    g = rng.normal(size=z.shape)
    gradients = solution_vjp(*data, z, g)
    assert float(g @ dz) == pytest.approx(sum(float(np.sum(a * t)) for a, t in zip(gradients, tangents)), rel=1e-12)


def test_a_weakly_complementary_row_is_a_switch_and_its_derivative_one_sided():
    """z = 0 at its bound with w = 0: raising q keeps z at 0, lowering it moves z at once. The row
    is named degenerate; the derivative returned is the one-sided one of the active set found
    (z at its bound: dz = 0, the right-hand derivative in q)."""
    M, q, lo, hi = np.array([[2.0]]), np.array([0.0]), np.array([0.0]), np.array([np.inf])
    z = _solution(M, q, lo, hi)
    active = active_set(M, q, lo, hi, z)
    assert active.switches == 1 and active.lower[0]
    dz = solution_jvp(M, q, lo, hi, z, (None, np.array([1.0]), None, None), active)
    e = 1e-6
    right = (_solution(M, q + e, lo, hi) - z) / e
    left = (z - _solution(M, q - e, lo, hi)) / e
    assert dz[0] == right[0] == 0.0 and left[0] == pytest.approx(-0.5)


def test_a_singular_interior_block_is_refused():
    M = np.array([[1.0, 1.0], [1.0, 1.0]])  # both interior, M_FF singular: z is not unique
    lo, hi = np.full(2, -np.inf), np.full(2, np.inf)
    z = np.array([0.5, -1.5])
    with pytest.raises(np.linalg.LinAlgError, match="singular"):
        solution_jvp(M, np.array([1.0, 1.0]), lo, hi, z, (None, np.ones(2), None, None))
