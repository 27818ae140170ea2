"""Unit tests of lcpdyn.compiled_pivoting.pivot: its answer meets the bounded LCP, its tangent on a
fixed active set is the central difference of the answer (a regular and a singular basic system),
and reverse mode is the transpose of forward mode."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lcpdyn.compiled_pivoting import pivot
from lcpdyn.precision import float64

SIZE = 8
LO = np.array([0.0, 0.0, 0.0, -0.4, -0.4, -0.4, -0.4, -0.4])  # three unknowns >= 0 (normal-like), five in a box
HI = np.array([np.inf, np.inf, np.inf, 0.4, 0.4, 0.4, 0.4, 0.4])


def problem(t, singular: bool):
    """A bounded LCP w = W y + rhs, lo <= y <= hi on a path through its data (t = 0: the problem):
    W = B B^T (+ I/2), rhs = B c (+ d), B, c, d and the box bounds moving with t. ``singular``:
    the last two rows of B are the two before them times s(t) = (1 + t, 2 - t) (redundant contacts,
    scaled): W is singular, rhs in its range, and its null space turns with t."""
    rng = np.random.default_rng(3)
    B, dB = rng.normal(size=(SIZE, 5)), rng.normal(size=(SIZE, 5))
    c, dc = rng.normal(size=5), rng.normal(size=5)
    d, dd = rng.normal(size=SIZE), rng.normal(size=SIZE)
    dlo = np.where(LO < 0.0, rng.normal(size=SIZE), 0.0)
    B = B + t * dB
    if singular:
        B = jnp.concatenate([B[:-2], jnp.stack([1.0 + t, 2.0 - t])[:, None] * B[-4:-2]])
        return B @ B.T, B @ (c + t * dc), LO + t * dlo, HI - t * dlo
    return B @ B.T + 0.5 * jnp.eye(SIZE), B @ (c + t * dc) + d + t * dd, LO + t * dlo, HI - t * dlo


def answer(t, singular):
    """pivot's (y, final codes) on the problem at t, from every unknown basic."""
    codes = jnp.zeros(SIZE, jnp.int8)
    y, _, solved, final = pivot(*problem(t, singular), codes, jnp.zeros(SIZE), jnp.zeros(SIZE, bool), 100, singular)
    return y, final, solved


@pytest.mark.parametrize("singular", [False, True], ids=["regular", "singular"])
def test_the_answer_meets_the_bounded_lcp_and_its_tangent_is_the_central_difference(singular):
    with float64():
        W, rhs, lo, hi = (np.asarray(a) for a in problem(0.0, singular))
        y, final, solved = answer(0.0, singular)
        assert bool(solved)
        y, w, codes = np.asarray(y), W @ np.asarray(y) + rhs, np.asarray(final)
        scale = np.abs(rhs) + np.abs(W) @ np.abs(y)
        at_lo, at_hi = np.isclose(y, lo), np.isclose(y, hi)
        assert np.all(np.abs(w[~at_lo & ~at_hi]) <= 1e-12 * scale[~at_lo & ~at_hi])  # basic: w = 0
        assert np.all(w[at_lo] >= -1e-12 * scale[at_lo]) and np.all(w[at_hi] <= 1e-12 * scale[at_hi])
        assert np.sum(codes == 0) >= 3 and np.sum(codes != 0) >= 1  # a set that is not trivial
        if singular:  # the scaled repeated unknowns: the minimum-norm member shares as the scales do
            basic = (codes[-2:] == 0) & (codes[-4:-2] == 0)
            assert np.any(basic)
            np.testing.assert_allclose(y[-2:][basic], (np.array([1.0, 2.0]) * y[-4:-2])[basic], rtol=1e-10)

        _, (dy, _, _) = jax.jvp(lambda t: answer(t, singular), (0.0,), (1.0,))
        eps = 1e-6
        plus, minus = answer(eps, singular), answer(-eps, singular)
        assert np.array_equal(plus[1], codes) and np.array_equal(minus[1], codes)  # the set is fixed
        central = (np.asarray(plus[0]) - np.asarray(minus[0])) / (2 * eps)
        assert np.max(np.abs(dy)) > 1e-2  # the path moves the answer
        np.testing.assert_allclose(dy, central, rtol=0, atol=1e-7 * np.max(np.abs(central)))


@pytest.mark.parametrize("singular", [False, True], ids=["regular", "singular"])
def test_reverse_mode_is_the_transpose_of_forward_mode(singular):
    """<u, J v> = <J^T u, v> for the answer's derivative in (W, rhs), J by jax.jvp, J^T by jax.vjp."""
    with float64():
        W, rhs, lo, hi = problem(0.0, singular)
        codes, sizes, facets = jnp.zeros(SIZE, jnp.int8), jnp.zeros(SIZE), jnp.zeros(SIZE, bool)

        def y(W, rhs):
            return pivot(W, rhs, lo, hi, codes, sizes, facets, 100, singular)[0]

        rng = np.random.default_rng(5)
        v = (jnp.asarray(rng.normal(size=(SIZE, SIZE))), jnp.asarray(rng.normal(size=SIZE)))
        u = jnp.asarray(rng.normal(size=SIZE))
        _, Jv = jax.jvp(y, (W, rhs), v)
        _, pullback = jax.vjp(y, W, rhs)
        JTu = pullback(u)
        left = float(u @ Jv)
        right = float(jnp.sum(JTu[0] * v[0]) + JTu[1] @ v[1])
        assert abs(left) > 1e-3
        assert left == pytest.approx(right, rel=1e-12)
