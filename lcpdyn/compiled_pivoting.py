"""The compiled loop's small dense algebra, traced in JAX (:mod:`lcpdyn.compiled_loop`): one body's
gyroscopic midpoint rows by unrolled Newton steps, 3 x 3 inverses by the adjugate, unrolled Gaussian
elimination of small basic systems, and Júdice–Pires' basic-set pivoting (Júdice & Pires, JOTA
74(3) 1992, as :mod:`solvers.judice_pires`) on the contacts' bounded LCP."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["midpoint", "inverse3", "eliminate", "pivot"]

_BLOCK_STALL = 3  # block exchanges allowed without a new lowest infeasibility count
_ROUNDING = 1e-12  # infeasibility below this fraction of a row's or bound's own size is rounding

_NEWTON_STEPS = 4  # unrolled Newton steps of the gyroscopic midpoint equation (then judged converged or not)


def midpoint(I, omega, torque, h, tolerance):
    """One body's gyroscopic midpoint rows I omega* + h tau
    (:func:`lcpdyn.kernels.gyroscopic_midpoint`: F(x) = 2 I x + h x x I x - 2 I omega = 0 by Newton from x = omega,
    Cramer's rule for the 3 x 3 Jacobian) and whether the relative residual reached
    ``tolerance``. Here ``_NEWTON_STEPS`` full steps, unrolled -- no backtracking, no continuation
    in h: a step they do not converge is the ordinary step's, which has both."""
    target = 2.0 * I @ omega
    rotating = jnp.any(target != 0.0)
    c = 0.5 * jnp.cross(omega, target)
    scale = jnp.linalg.norm(target) * (1.0 + h * jnp.linalg.norm(omega))
    x = omega
    for _ in range(_NEWTON_STEPS):
        Ix = I @ x
        F = 2.0 * Ix + h * jnp.cross(x, Ix) - target
        skew = jnp.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])
        skew_Ix = jnp.array([[0.0, -Ix[2], Ix[1]], [Ix[2], 0.0, -Ix[0]], [-Ix[1], Ix[0], 0.0]])
        J = 2.0 * I + h * (skew @ I - skew_Ix)
        cof = jnp.stack([jnp.cross(J[1], J[2]), jnp.cross(J[2], J[0]), jnp.cross(J[0], J[1])])  # rows: adj(J)^T
        det = J[0] @ cof[0]
        x = x - (cof.T @ F) / det
    Ix = I @ x
    norm = jnp.linalg.norm(2.0 * Ix + h * jnp.cross(x, Ix) - target)
    converged = ~rotating | (norm <= tolerance * scale)
    rows = jnp.where(rotating, I @ (2.0 * x - omega) + h * torque + h * c, I @ omega + h * torque)
    return rows, converged


def inverse3(I):
    """The inverse of a 3 x 3 matrix by its adjugate (no LAPACK call: batched over many scenes,
    XLA would call LAPACK once per matrix)."""
    cof = jnp.stack([jnp.cross(I[1], I[2]), jnp.cross(I[2], I[0]), jnp.cross(I[0], I[1])])  # rows: adj(I)^T
    return cof.T / (I[0] @ cof[0])


_UNROLLED = 24  # basic systems up to this size are eliminated by unrolled code, larger ones by LAPACK


def eliminate(A, b):
    """A x = b by Gaussian elimination without row exchanges, unrolled over the static size:
    A is a principal submatrix of the Delassus matrix bordered by the identity (symmetric
    positive definite whenever the basic rows are independent, where no exchange is needed).
    A singular one gives non-finite x, which the caller reports."""
    size = b.shape[0]
    if size > _UNROLLED:
        return jnp.linalg.solve(A, b)
    rows = jnp.arange(size)
    for k in range(size):
        factor = jnp.where(rows > k, A[:, k] / A[k, k], 0.0)
        A = A - factor[:, None] * A[k][None, :]
        b = b - factor * b[k]
    x = jnp.zeros(size)
    for k in range(size - 1, -1, -1):
        x = x.at[k].set((b[k] - A[k] @ x) / A[k, k])
    return x


_CONSISTENT = 1e-9  # a basic row's relative residual above this: its system is singular (singular=True)


def _on_set(W, rhs, lo, hi, codes, singular=False):
    """y on the active set ``codes`` (-1 at lo, +1 at hi, 0 basic): W_BB y_B = -rhs_B - W_BN y_N.
    ``singular`` (static): where the elimination misses its rows by more than ``_CONSISTENT`` of
    their scale (a singular W_BB: a polygonal contact sticking with more directions basic than
    its tangent plane has), y_B is the minimum-norm solution, by the pseudo-inverse (as
    :func:`solvers.basic_systems.minimum_norm_solve` on the host: with the velocities eliminated
    they do not move along W_BB's null space, so its minimum norm is Eq. 30's)."""
    basic = codes == 0
    value = jnp.where(codes < 0, lo, jnp.where(codes > 0, hi, 0.0))
    A = jnp.where(basic[:, None] & basic[None, :], W, jnp.eye(rhs.shape[0]))
    b = jnp.where(basic, -rhs - W @ value, value)
    y = eliminate(A, b)
    if not singular:
        return y
    missed = jnp.abs(A @ y - b) > _CONSISTENT * (jnp.abs(A) @ jnp.abs(y) + jnp.abs(b))
    good = jnp.all(jnp.isfinite(y)) & ~jnp.any(missed)
    return jax.lax.cond(good, lambda: y, lambda: jnp.linalg.pinv(A) @ b)


@partial(jax.custom_jvp, nondiff_argnums=(5, 6))
def pivot(W, rhs, lo, hi, codes, max_iterations, singular=False):
    """Júdice–Pires basic-set pivoting -- block exchanges of every infeasible variable while the
    number of infeasibilities sets new minima, at most ``_BLOCK_STALL`` exchanges without one, then
    Murty's single exchange of the least infeasible index -- on the contact unknowns' bounded LCP
    w = W y + rhs, lo <= y <= hi -- Eq. (30) with the velocities eliminated through the
    block-diagonal M (the same basic sets as on Eq. 30 itself, smaller systems): returns
    (y, basic solves, converged, final codes). Differentiable in (W, rhs, lo, hi): the derivative
    of y is that of the final active set's basic solve (implicit differentiation on the active
    set, :mod:`solvers.sensitivity`); the pivoting itself is not differentiated, and a run that
    is not differentiated computes exactly what it did without the rule. ``singular`` (static):
    singular basic systems are solved for their minimum-norm member (:func:`_on_set`), and a
    basic row that this leaves unsatisfied (an inconsistent system) counts as infeasible; the
    derivative is then that of the minimum-norm member on its rank (the pseudo-inverse's)."""
    size = rhs.shape[0]
    fixed = lo == hi
    codes = jnp.where(fixed, -1, codes).astype(jnp.int8)
    index = jnp.arange(size)
    bound = jnp.maximum(jnp.abs(lo), jnp.where(jnp.isfinite(hi), jnp.abs(hi), 0.0))

    def solve(codes):
        basic = codes == 0
        y = _on_set(W, rhs, lo, hi, codes, singular)
        w = W @ y + rhs
        row = jnp.abs(rhs) + jnp.abs(W) @ jnp.abs(y)
        slack = _ROUNDING * jnp.maximum(bound, jnp.abs(y))
        if singular:  # and by the variable's own scale: the change that moves a row by its size
            reach = jnp.max(jnp.abs(W) / jnp.where(row > 0.0, row, jnp.inf)[:, None], axis=0)
            slack = jnp.maximum(slack, _ROUNDING / jnp.where(reach > 0.0, reach, jnp.inf))
        below = basic & (y < lo - slack)
        above = basic & (y > hi + slack)
        wrong = ((codes < 0) & ~fixed & (w < -_ROUNDING * row)) | ((codes > 0) & (w > _ROUNDING * row))
        if singular:  # an inconsistent singular system: its least-squares member is no solution
            wrong = wrong | (basic & (jnp.abs(w) > _CONSISTENT * row))
        return y, below, above, below | above | wrong

    def going(c):
        _, y, infeasible, _, _, _, _, k = c
        return jnp.any(infeasible) & (k < max_iterations) & jnp.all(jnp.isfinite(y))

    def step(c):
        codes, y, infeasible, below, above, best, stall, k = c
        count = jnp.sum(infeasible)
        improved = count < best
        block = improved | (stall > 0)
        least = jnp.min(jnp.where(infeasible, index, size))
        chosen = jnp.where(block, infeasible, index == least)
        new = jnp.where(below, -1, jnp.where(above, 1, 0)).astype(jnp.int8)
        codes = jnp.where(chosen, new, codes)
        best = jnp.minimum(best, count)
        stall = jnp.where(improved, _BLOCK_STALL, stall - jnp.where(block, 1, 0))
        y, below, above, infeasible = solve(codes)
        return codes, y, infeasible, below, above, best, stall, k + 1

    y, below, above, infeasible = solve(codes)
    carry = (codes, y, infeasible, below, above, jnp.asarray(size + 1), jnp.asarray(_BLOCK_STALL), 0)
    codes, y, infeasible, _, _, _, _, k = jax.lax.while_loop(going, step, carry)
    solved = ~jnp.any(infeasible) & jnp.all(jnp.isfinite(y))
    y = jnp.clip(y, lo, hi)  # rounding-level excursions onto their bounds (the host judges the answer)
    return y, k + 1, solved, codes  # basic solves, as judice-pires counts them


@pivot.defjvp
def _pivot_tangent(max_iterations, singular, primals, tangents):
    W, rhs, lo, hi, codes = primals
    out = pivot(W, rhs, lo, hi, codes, max_iterations, singular)
    final = out[3]
    _, dy = jax.jvp(lambda *data: _on_set(*data, final, singular), (W, rhs, lo, hi), tangents[:4])
    zero = jax.dtypes.float0
    return out, (dy, np.zeros((), zero), np.zeros((), zero), np.zeros(final.shape, zero))
