"""The exact Coulomb problem's solution as a differentiable function (lcpdyn.differentiable_coulomb;
issue 49, item 1): derivatives on the contact modes against a particle's closed form and against
central differences on problems built with every mode; the edges of the modes reported; bad
input refused by name."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lcpdyn.differentiable_coulomb import APART, SLIDING, STICKING, friction_contact_solution, modes
from lcpdyn.precision import float64


def built(seed, kinds=(APART, STICKING, SLIDING, SLIDING)):
    """(W, b, mu, r) with r the solution, contact i in mode kinds[i]: W a random SPD Delassus
    matrix, r and u = W r + b chosen to satisfy the mode (u_N > 0 apart; r strictly inside the cone
    sticking; r_T = -mu r_N s and u_T = |u_T| s, s a unit slip, sliding), b = u - W r."""
    rng = np.random.default_rng(seed)
    nc = len(kinds)
    A = rng.normal(size=(3 * nc, 3 * nc))
    W = A @ A.T / (3 * nc) + 0.5 * np.eye(3 * nc)
    mu = rng.uniform(0.2, 0.6, nc)
    r, u = np.zeros(3 * nc), np.zeros(3 * nc)
    for i, kind in enumerate(kinds):
        normal, angle = rng.uniform(0.5, 1.0), rng.uniform(0.0, 2 * np.pi)
        s = np.array([np.cos(angle), np.sin(angle)])
        if kind == APART:
            u[3 * i : 3 * i + 3] = [rng.uniform(0.5, 1.0), *rng.normal(size=2)]
        elif kind == STICKING:
            r[3 * i : 3 * i + 3] = [normal, *(rng.uniform(0.1, 0.8) * mu[i] * normal * s)]
        else:
            r[3 * i : 3 * i + 3] = [normal, *(-mu[i] * normal * s)]
            u[3 * i + 1 : 3 * i + 3] = rng.uniform(0.5, 1.0) * s
    return W, u - W @ r, mu, r


def test_a_sliding_particles_derivative_is_its_closed_form():
    """A particle of mass m pressed onto a plane (W = I/m, free velocity b = (b_N < 0, b_T)),
    sliding (|b_T| > mu |b_N|): r_N = -m b_N, r_T = -mu r_N b_T/|b_T|; so dr_T/dmu = -r_N s and
    dr_T/db_T = -mu r_N (I - s s^T)/|b_T|, s = b_T/|b_T|."""
    m, mu = 2.0, 0.3
    W, b = np.eye(3) / m, np.array([-0.5, 0.4, -0.3])
    with float64():
        r = friction_contact_solution(W, b, np.array([mu]))
        d_mu = jax.jacobian(friction_contact_solution, argnums=2)(jnp.asarray(W), jnp.asarray(b), jnp.asarray([mu]))
        d_b = jax.jacobian(friction_contact_solution, argnums=1)(jnp.asarray(W), jnp.asarray(b), jnp.asarray([mu]))
    normal, slip = 0.25 * m * 2.0, np.hypot(0.4, -0.3)  # r_N = -m b_N = 1
    s = b[1:] / slip
    np.testing.assert_allclose(np.asarray(r), [normal, *(-mu * normal * s)], rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(d_mu)[:, 0], [0.0, *(-normal * s)], rtol=0, atol=1e-12)
    expected = np.zeros((3, 3))
    expected[0, 0] = -m
    expected[1:, 0] = -mu * (-m) * s  # through r_N
    expected[1:, 1:] = -mu * normal * (np.eye(2) - np.outer(s, s)) / slip
    np.testing.assert_allclose(np.asarray(d_b), expected, rtol=0, atol=1e-12)
    assert modes(W, b, [mu])[0].tolist() == [SLIDING]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_gradient_is_the_finite_difference_on_every_mode(seed):
    """Four contacts, one apart, one sticking, two sliding: the solution is the one built (to the
    solve's 1e-12), its modes are found with none on an edge, and jax.grad of a loss of r with
    respect to W, b and mu, and jax.jvp of r, agree with central differences (e = 1e-6) to 1e-6
    relative (measured 3e-11 to 1e-10)."""
    W, b, mu, expected = built(seed)
    mode, edge = modes(W, b, mu)
    assert mode.tolist() == [APART, STICKING, SLIDING, SLIDING] and not edge.any()
    rng = np.random.default_rng(100 + seed)
    weights = rng.normal(size=b.shape)
    dW = rng.normal(size=W.shape)
    dW, db, dmu = dW + dW.T, rng.normal(size=b.shape), rng.normal(size=mu.shape)
    with float64():

        def loss(W, b, mu):
            r = friction_contact_solution(W, b, mu)
            return jnp.sum(weights * r) + jnp.sum(r**2)

        r = friction_contact_solution(W, b, mu)
        gW, gb, gmu = jax.grad(loss, argnums=(0, 1, 2))(jnp.asarray(W), jnp.asarray(b), jnp.asarray(mu))
        _, tangent = jax.jvp(friction_contact_solution, (W, b, mu), (dW, db, dmu))
        e = 1e-6
        central = loss(W + e * dW, b + e * db, mu + e * dmu) - loss(W - e * dW, b - e * db, mu - e * dmu)
        central = float(central) / (2 * e)
        plus = np.asarray(friction_contact_solution(W + e * dW, b + e * db, mu + e * dmu))
        minus = np.asarray(friction_contact_solution(W - e * dW, b - e * db, mu - e * dmu))
    np.testing.assert_allclose(np.asarray(r), expected, rtol=0, atol=1e-10)
    exact = float(np.sum(np.asarray(gW) * dW) + np.sum(np.asarray(gb) * db) + np.sum(np.asarray(gmu) * dmu))
    assert exact == pytest.approx(central, rel=1e-6)
    difference = (plus - minus) / (2 * e)
    assert np.max(np.abs(np.asarray(tangent) - difference)) < 1e-6 * np.max(np.abs(difference))


def test_the_edges_of_the_modes_are_reported():
    """A contact sticking on the cone's edge (|r_T| = mu r_N, u = 0: about to slide) and one
    touching with no force (r = 0, u_N = 0: about to press) are on the edge of another mode,
    where the derivative is one-sided; the others are not."""
    W, b, mu, r = built(3, kinds=(APART, STICKING, STICKING))
    mu = mu.copy()
    mu[1] = np.linalg.norm(r[4:6]) / r[3]  # contact 1's force on the edge of its cone
    u = W @ r + b
    b[0] -= u[0]  # contact 0 touching: u_N = 0 with r = 0
    mode, edge = modes(W, b, mu, r)
    assert mode.tolist() == [APART, STICKING, STICKING]
    assert edge.tolist() == [True, True, False]


def test_bad_input_is_refused_by_name():
    W, b, mu, _ = built(0)
    with pytest.raises(TypeError, match="W has dtype float32"):
        with float64():
            friction_contact_solution(jnp.asarray(W, jnp.float32), b, mu)
    with float64():
        with pytest.raises(ValueError, match="mu must have one entry per contact"):
            friction_contact_solution(W, b, mu[:2])
        with pytest.raises(ValueError, match=r"W must be \(3nc, 3nc\)"):
            friction_contact_solution(W[:, :6], b, mu)
