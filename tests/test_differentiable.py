"""The bounded LCP's solution as a differentiable JAX function (lcpdyn.differentiable; issue 49,
item 1): jax.grad, jax.jvp and jax.jacobian against central finite differences and against
solvers.sensitivity, inside jit and vmap; float32 and unsolved problems refused by name."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lcpdyn.differentiable import bounded_lcp_solution, switches
from lcpdyn.precision import float64
from solvers import solve
from solvers.library import random_spd
from solvers.sensitivity import solution_jvp


def _data(seed):
    case = random_spd(10, seed)
    return case.M, case.q, case.lo, case.hi


def _z(M, q, lo, hi):
    return solve(M, q, lo, hi, method="judice-pires", tolerance=1e-14).z


@pytest.mark.parametrize("seed", range(3))
def test_grad_of_a_loss_is_the_finite_difference(seed):
    """d/dq and d/dM of L = |z|² + z_0 through jit: the central difference at e = 1e-5 (every
    entry of q, and M along a random direction) agrees to 1e-6 relative."""
    M, q, lo, hi = _data(seed)
    assert switches(M, q, lo, hi) == 0

    def loss(M, q):
        z = bounded_lcp_solution(M, q, jnp.asarray(lo), jnp.asarray(hi))
        return jnp.sum(z**2) + z[0]

    with float64():
        gM, gq = jax.jit(jax.grad(loss, argnums=(0, 1)))(jnp.asarray(M), jnp.asarray(q))
        gM, gq = np.asarray(gM), np.asarray(gq)

    def plain(M, q):
        z = _z(M, q, lo, hi)
        return float(np.sum(z**2) + z[0])

    e = 1e-5
    fd_q = np.array([(plain(M, q + e * u) - plain(M, q - e * u)) / (2 * e) for u in np.eye(q.size)])
    np.testing.assert_allclose(gq, fd_q, rtol=1e-6, atol=1e-6 * np.abs(fd_q).max())
    direction = np.random.default_rng(seed).normal(size=M.shape)
    fd_M = (plain(M + e * direction, q) - plain(M - e * direction, q)) / (2 * e)
    assert float(np.sum(gM * direction)) == pytest.approx(fd_M, rel=1e-6)


def test_jvp_is_the_sensitivity_modules_and_vmap_solves_each_problem():
    M, q, lo, hi = _data(7)
    rng = np.random.default_rng(7)
    tangents = (rng.normal(size=M.shape), rng.normal(size=q.shape), np.zeros_like(lo), np.zeros_like(hi))
    with float64():
        z, dz = jax.jvp(bounded_lcp_solution, (M, q, lo, hi), tangents)
        batch = jax.vmap(bounded_lcp_solution, in_axes=(None, 0, None, None))(M, jnp.stack([q, 2 * q]), lo, hi)
    np.testing.assert_allclose(np.asarray(z), _z(M, q, lo, hi), rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(dz), solution_jvp(M, q, lo, hi, np.asarray(z), tangents), rtol=1e-10)
    np.testing.assert_allclose(np.asarray(batch[1]), _z(M, 2 * q, lo, hi), rtol=0, atol=1e-12)


def test_bad_input_is_refused_by_name():
    M, q, lo, hi = _data(0)
    with pytest.raises(TypeError, match="q has dtype float32"):
        with float64():
            bounded_lcp_solution(M, jnp.asarray(q, dtype=jnp.float32), lo, hi)
    unsolvable = (np.array([[0.0]]), np.array([-1.0]), np.array([0.0]), np.array([np.inf]))  # w = -1 < 0 always
    with pytest.raises(Exception, match="did not solve"):
        with float64():
            jax.block_until_ready(bounded_lcp_solution(*unsolvable))


def test_host_callbacks_take_and_give_float64_exactly_on_any_thread():
    """lcpdyn.precision.float64_callback, through which the differentiable solves reach the host:
    float64 arguments and answers cross as their bytes, bit for bit, in a compiled scan (where
    XLA may run the callback on a thread of its own, whose JAX is not in float64 mode: there the
    numbers were rounded to float32), under vmap, and with an integer answer."""
    from lcpdyn.precision import float64_callback

    seen = []

    def host(a, n):
        seen.append((a.dtype, n.dtype))
        return a * 3.0

    x = 0.1 + np.arange(6.0).reshape(2, 3) * 1e-12  # not float32 numbers
    with float64():

        def body(c, _):
            return c + 1e-13, float64_callback(host, (3,), c, jnp.int32(2))

        _, out = jax.jit(lambda c: jax.lax.scan(body, c, jnp.arange(50)))(jnp.asarray(x[0]))
        batched = jax.vmap(lambda a: float64_callback(host, (3,), a, jnp.int32(2)))(jnp.asarray(x))
        count = float64_callback(lambda a: np.argsort(a).astype(np.int32), (3,), jnp.asarray(x[0]), dtype=np.int32)
    expected = np.empty((50, 3))
    step = x[0].copy()
    for k in range(50):  # the scan's own additions, in the same order
        expected[k] = step * 3.0
        step = step + 1e-13
    np.testing.assert_array_equal(np.asarray(out), expected)
    np.testing.assert_array_equal(np.asarray(batched), x * 3.0)
    assert out.dtype == jnp.float64 and count.dtype == jnp.int32 and np.asarray(count).tolist() == [0, 1, 2]
    assert all(a == np.float64 and n == np.int32 for a, n in seen)
