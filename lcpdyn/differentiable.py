"""A bounded LCP's solution as a differentiable JAX function (implicit derivatives on its active set).

``bounded_lcp_solution`` solves lo <= z <= hi, w = M z + q (Peiret 2016 Eq. 30) with
lcpdyn's own solver on the host, its answer checked by the framework's residual like every solve,
and carries the derivative of :mod:`solvers.sensitivity`: on the solution's active set, one
linear solve with the interior block M_FF. It is a ``jax.custom_jvp`` function whose tangent
rule is linear in the tangents, so ``jax.jvp``, ``jax.vjp``, ``jax.grad`` and ``jax.jacobian``
all take it, inside ``jax.jit`` and ``jax.vmap`` too (the solve is a host callback, one problem
at a time under ``vmap``).

Where the active set is about to change (a weakly complementary row: a contact on the verge of
sticking, slipping, touching or lifting) the solution has one-sided derivatives only; the
derivative given is that of the active set found, and :func:`switches` counts those rows for a
caller who must know.

Float64 throughout: call it inside :func:`lcpdyn.precision.float64` (or with JAX's x64 enabled);
float32 data are refused by name.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from solvers import solve
from solvers.sensitivity import active_set

from .precision import float64_arrays, float64_callback

__all__ = ["bounded_lcp_solution", "switches", "METHOD", "TOLERANCE"]

#: The method and tolerance of the host solve (the framework's residual, per row against its scale).
METHOD = "judice-pires"
TOLERANCE = 1e-12


def _host_solve(M, q, lo, hi):
    result = solve(np.asarray(M), np.asarray(q), np.asarray(lo), np.asarray(hi), METHOD, tolerance=TOLERANCE)
    if not result.success:
        raise ArithmeticError(
            f"bounded_lcp_solution: {METHOD} did not solve the problem to {TOLERANCE:g} ({result.status.name}, "
            f"relative residual {result.relative_residual:.2e}): no derivative of an unsolved problem is given"
        )
    return np.asarray(result.z, dtype=np.float64)


def _host_codes(M, q, lo, hi, z):
    active = active_set(np.asarray(M), np.asarray(q), np.asarray(lo), np.asarray(hi), np.asarray(z))
    return np.where(active.lower, 1, np.where(active.upper, 2, 0)).astype(np.int32)


def bounded_lcp_solution(M, q, lo, hi):
    """z solving the bounded LCP (M, q, lo, hi): M (n, n), q, lo, hi (n,) float64 JAX or NumPy
    arrays (lo may be -inf, hi +inf). Differentiable in all four on the solution's active set
    (module docstring); an unsolved problem raises ``ArithmeticError`` from the callback."""
    return _solution(*float64_arrays("bounded_lcp_solution", M=M, q=q, lo=lo, hi=hi))


@jax.custom_jvp
def _solution(M, q, lo, hi):
    return float64_callback(_host_solve, q.shape, M, q, lo, hi)


@_solution.defjvp
def _tangent(primals, tangents):
    M, q, lo, hi = primals
    dM, dq, dlo, dhi = tangents
    z = _solution(M, q, lo, hi)
    codes = float64_callback(_host_codes, q.shape, M, q, lo, hi, z, dtype=np.int32)
    interior, lower = codes == 0, codes == 1
    # rows of F: M_F. dz = -(dq_F + dM_F. z); rows of L and U: dz = dlo, dhi (solvers.sensitivity)
    K = jnp.where(interior[:, None], M, jnp.eye(q.shape[0], dtype=M.dtype))
    rhs = jnp.where(interior, -(dq + dM @ z), jnp.where(lower, dlo, dhi))
    return z, jnp.linalg.solve(K, rhs)


def switches(M, q, lo, hi, z=None) -> int:
    """The number of rows of the problem's solution (``z``, or solved here) where the active set
    changes under an arbitrarily small perturbation: there the derivative is one-sided
    (:class:`solvers.sensitivity.ActiveSet`)."""
    M, q, lo, hi = (np.asarray(a, dtype=float) for a in (M, q, lo, hi))
    z = _host_solve(M, q, lo, hi) if z is None else np.asarray(z, dtype=float)
    return active_set(M, q, lo, hi, z).switches
