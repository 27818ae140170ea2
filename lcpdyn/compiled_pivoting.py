"""The compiled loop's small dense algebra, traced in JAX (:mod:`lcpdyn.compiled_loop`): one body's
gyroscopic midpoint rows by unrolled Newton steps, 3 x 3 inverses by the adjugate, unrolled Gaussian
elimination of small basic systems, and Júdice–Pires' basic-set pivoting (Júdice & Pires, JOTA
74(3) 1992, as :mod:`solvers.judice_pires`) on the contacts' bounded LCP."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.ad_checkpoint import checkpoint_name

__all__ = ["midpoint", "inverse3", "eliminate", "pivot", "SAVED"]

#: The names (``jax.ad_checkpoint.checkpoint_name``) under which a differentiated :func:`pivot`
#: gives its answer and final active set, for a checkpoint policy that keeps them
#: (:class:`lcpdyn.differentiable_run.DifferentiableRun`): the pivoting then runs once per step,
#: not again when reverse mode recomputes the step.
SAVED = ("pivot-answer", "pivot-active-set")

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


def eliminate(A, b, pivots=False):
    """A x = b by Gaussian elimination without row exchanges, unrolled over the static size:
    A is a principal submatrix of the Delassus matrix bordered by the identity (symmetric
    positive definite whenever the basic rows are independent, where no exchange is needed).
    A singular one gives non-finite x, which the caller reports. Systems larger than
    ``_UNROLLED``: LU with partial pivoting (LAPACK). ``pivots``: also the smallest pivot's
    magnitude (numerically singular where it is a rounding error of max |A|)."""
    size = b.shape[0]
    if size > _UNROLLED and not pivots:
        return jnp.linalg.solve(A, b)
    if size > _UNROLLED:
        lu, permutation = jax.scipy.linalg.lu_factor(A)
        return jax.scipy.linalg.lu_solve((lu, permutation), b), jnp.min(jnp.abs(jnp.diagonal(lu)))
    rows = jnp.arange(size)
    for k in range(size):
        factor = jnp.where(rows > k, A[:, k] / A[k, k], 0.0)
        A = A - factor[:, None] * A[k][None, :]
        b = b - factor * b[k]
    x = jnp.zeros(size)
    for k in range(size - 1, -1, -1):
        x = x.at[k].set((b[k] - A[k] @ x) / A[k, k])
    return (x, jnp.min(jnp.abs(jnp.diagonal(A)))) if pivots else x


_EPS = float(np.finfo(float).eps)
_CONDITION_LIMIT = 1.0 / (1000.0 * _EPS)  # ||A|| ||y|| / ||b|| beyond this: numerically singular (as the host's)
_RANK_TOLERANCE = 1e3 * _EPS  # a pivot below this x max |A| is rounding (solvers.basic_systems.RANK_TOLERANCE)


def _system(W, rhs, lo, hi, codes):
    """The basic system A y = b of the active set ``codes`` (-1 at lo, +1 at hi, 0 basic): W_BB
    bordered by the identity on the nonbasic rows, which are held at their bounds."""
    basic = codes == 0
    value = jnp.where(codes < 0, lo, jnp.where(codes > 0, hi, 0.0))
    A = jnp.where(basic[:, None] & basic[None, :], W, jnp.eye(rhs.shape[0]))
    return A, jnp.where(basic, -rhs - W @ value, value)


def _norms(A, b, y):
    """||A||_inf, ||y||_inf and ||b||_inf."""
    return jnp.max(jnp.sum(jnp.abs(A), axis=1)), jnp.max(jnp.abs(y)), jnp.max(jnp.abs(b))


def _consistent(A, b, y, norms):
    """Whether y meets A y = b: ||b - A y||_inf within 1e4 eps (||A||_inf ||y||_inf + ||b||_inf)
    (``norms``, :func:`_norms`), as :func:`solvers.basic_systems.minimum_norm_solve` judges it."""
    a_norm, y_norm, b_norm = norms
    return jnp.max(jnp.abs(A @ y - b)) <= 1e4 * _EPS * (a_norm * y_norm + b_norm)


def _eliminated(A, b, y, smallest):
    """Whether the elimination's y (its smallest pivot ``smallest``) is the system's answer: no
    pivot a rounding error of max |A| (``_RANK_TOLERANCE``: a numerically singular system, whose
    elimination gives one member of its family, not its minimum-norm one), y finite, meeting its
    rows, and ||A|| ||y|| within ``_CONDITION_LIMIT`` ||b|| (the host's test, :mod:`solvers.judice_pires`)."""
    norms = _norms(A, b, y)
    a_norm, y_norm, b_norm = norms
    regular = smallest > _RANK_TOLERANCE * jnp.max(jnp.abs(A))
    return (
        regular
        & jnp.all(jnp.isfinite(y))
        & (a_norm * y_norm <= _CONDITION_LIMIT * b_norm)
        & _consistent(A, b, y, norms)
    )


def _on_set(W, rhs, lo, hi, codes):
    """y on the active set ``codes``: W_BB y_B = -rhs_B - W_BN y_N, by elimination."""
    return eliminate(*_system(W, rhs, lo, hi, codes))


def _dependent_columns(A):
    """Columns of the square A that span nothing new: those Gaussian elimination with complete
    pivoting (:func:`solvers.basic_systems.complete_pivoting`, the first largest entry row-major)
    takes no pivot in before the largest remaining entry falls below ``_RANK_TOLERANCE`` x max |A|."""
    m = A.shape[0]
    scale = jnp.max(jnp.abs(A))

    def eliminate_one(_, c):
        B, free_rows, free_cols = c
        mag = jnp.where(free_rows[:, None] & free_cols[None, :], jnp.abs(B), -1.0)
        flat = jnp.argmax(mag)
        i, j = flat // m, flat % m
        take = mag[i, j] > _RANK_TOLERANCE * scale
        factor = jnp.where(free_rows & (jnp.arange(m) != i) & take, B[:, j] / B[i, j], 0.0)
        B = B - factor[:, None] * B[i][None, :]
        return B, free_rows.at[i].set(free_rows[i] & ~take), free_cols.at[j].set(free_cols[j] & ~take)

    start = (A, jnp.ones(m, bool), jnp.ones(m, bool))
    return jax.lax.fori_loop(0, m, eliminate_one, start)[2]


def _minimum_norm(A, b):
    """The minimum-norm member of A y = b, by the pseudo-inverse (``jnp.linalg.pinv``: singular
    values below 10 n eps sigma_max cut), and whether it meets the system (:func:`_consistent`)."""
    y = jnp.linalg.pinv(A) @ b
    return y, _consistent(A, b, y, _norms(A, b, y))


def _settled(W, rhs, lo, hi, codes):
    """(codes, y) on the active set ``codes`` where W_BB may be singular (``pivot``'s
    ``singular``): y by elimination where that is the answer (:func:`_eliminated`), else the
    minimum-norm member (as :func:`solvers.basic_systems.minimum_norm_solve` on the host: with the
    velocities eliminated they do not move along W_BB's null space, so its minimum norm is Eq.
    30's); a system that is inconsistent (no member meets its rows) has a dependent basic
    variable (:func:`_dependent_columns`) with a zero bound put on that bound, the one of least
    index, and is solved again -- the host's remedy (``solvers.judice_pires``). None left to put:
    y is NaN (not solved)."""
    size = rhs.shape[0]
    index = jnp.arange(size)
    zero_bound = (lo == 0.0) | (hi == 0.0)

    def attempt(codes):
        A, b = _system(W, rhs, lo, hi, codes)
        y, smallest = eliminate(A, b, pivots=True)

        def minimum_norm():  # the nonbasic variables exactly on their bounds (b holds them there)
            y, consistent = _minimum_norm(A, b)
            return jnp.where(codes == 0, y, b), consistent

        return jax.lax.cond(_eliminated(A, b, y, smallest), lambda: (y, jnp.asarray(True)), minimum_norm)

    def going(c):
        return ~c[2] & jnp.all(jnp.isfinite(c[1]))

    def remove(c):
        codes = c[0]
        candidate = (codes == 0) & zero_bound & _dependent_columns(_system(W, rhs, lo, hi, codes)[0])
        j = jnp.min(jnp.where(candidate, index, size))
        codes = jnp.where(index == j, jnp.where(lo == 0.0, -1, 1), codes).astype(codes.dtype)
        y, consistent = attempt(codes)
        return codes, jnp.where(j < size, y, jnp.nan), consistent

    codes, y, _ = jax.lax.while_loop(going, remove, (codes, *attempt(codes)))
    return codes, y


def _factor(A):
    """A's Gaussian elimination without row exchanges, as :func:`eliminate` does it (unrolled; LU
    with partial pivoting by LAPACK beyond ``_UNROLLED``), kept for :func:`_substitute`."""
    size = A.shape[0]
    if size > _UNROLLED:
        return jax.scipy.linalg.lu_factor(A)
    rows = jnp.arange(size)
    L = jnp.zeros_like(A)
    for k in range(size):
        factor = jnp.where(rows > k, A[:, k] / A[k, k], 0.0)
        A = A - factor[:, None] * A[k][None, :]
        L = L.at[:, k].set(factor)
    return L, A


def _substitute(factors, b):
    """x with A x = b, A's :func:`_factor` given: linear in b (reverse mode transposes the
    substitutions; the factors are computed once, not differentiated)."""
    L, U = factors
    size = b.shape[0]
    if size > _UNROLLED:
        return jax.scipy.linalg.lu_solve(factors, b)
    for k in range(size):
        b = b - L[:, k] * b[k]
    x = jnp.zeros(size)
    for k in range(size - 1, -1, -1):
        x = x.at[k].set((b[k] - U[k] @ x) / U[k, k])
    return x


def _set_tangent(data, tangents, codes, y):
    """The tangent of y on the active set ``codes`` whose basic system A y = b is regular:
    dy = A^-1 (db - dA y), the implicit function theorem's, with (dA, db) the tangent of
    :func:`_system` -- one elimination of A, then substitutions linear in the tangents."""
    (A, _), (dA, db) = jax.jvp(lambda *d: _system(*d, codes), data, tangents)
    return _substitute(_factor(jax.lax.stop_gradient(A)), db - dA @ y)


def _minimum_norm_tangent(data, tangents, codes, eliminated):
    """The tangent of :func:`_settled`'s answer on its final set ``codes`` by the way
    ``eliminated`` (a number, not traced through) says it was found: A^-1 (db - dA y) where the
    elimination was the answer; else the minimum-norm member's on A's rank, y = A^+ b,
    dy = A^+ (db - dA y) + (I - A^+ A) dA^T A^+T y (the pseudo-inverse's derivative on a system
    that y meets), the nonbasic variables following their bounds. Each way sees only a system it
    solves (the other way's operands replaced by the identity), so that no infinity of an unused
    elimination of a singular system meets a zero cotangent (0 x inf = NaN), also where vmap runs
    both ways."""
    (A, b), (dA, db) = jax.jvp(lambda *d: _system(*d, codes), data, tangents)
    A = jax.lax.stop_gradient(A)
    eye = jnp.eye(b.shape[0])

    def regular(dA, db):
        factors = _factor(jnp.where(eliminated, A, eye))
        return _substitute(factors, db - dA @ _substitute(factors, b))

    def rank(dA, db):
        inverse = jnp.linalg.pinv(jnp.where(eliminated, eye, A))
        y = jnp.where(codes == 0, inverse @ b, b)
        dy = inverse @ (db - dA @ y) + (eye - inverse @ A) @ (dA.T @ (inverse.T @ y))
        return jnp.where(codes == 0, dy, db)

    return jax.lax.cond(eliminated, regular, rank, dA, db)


@partial(jax.custom_jvp, nondiff_argnums=(7, 8))
def pivot(W, rhs, lo, hi, codes, sizes, facets, max_iterations, singular=False):
    """Júdice–Pires basic-set pivoting -- block exchanges of every infeasible variable while the
    number of infeasibilities sets new minima, at most ``_BLOCK_STALL`` exchanges without one, then
    Murty's single exchange of the least infeasible index -- on the contact unknowns' bounded LCP
    w = W y + rhs, lo <= y <= hi -- Eq. (30) with the velocities eliminated through the
    block-diagonal M (the same basic sets as on Eq. 30 itself, smaller systems): returns
    (y, basic solves, converged, final codes). Differentiable in (W, rhs, lo, hi): the derivative
    of y is that of the final active set's basic solve (implicit differentiation on the active
    set, :mod:`solvers.sensitivity`); the pivoting itself is not differentiated, and a run that
    is not differentiated computes exactly what it did without the rule. ``singular`` (static):
    singular basic systems are solved for their minimum-norm member, and an inconsistent one has a
    dependent variable put on its zero bound (:func:`_settled`); the derivative is then that of
    the minimum-norm member on its rank (the pseudo-inverse's). ``sizes`` (>= 0, not
    differentiated): the size of the terms each row's data was formed from (with the velocities
    eliminated, |J| |M^-1 (M v* + h f)|: a sticking contact's free slip is a difference of
    velocities of order 1), added to the row's scale of rounding -- the host judges Eq. (30)'s rows,
    whose scale holds |J| |v+| (:mod:`solvers.result`). ``facets`` (bool): the variables whose zero
    bound is no kink of the motion where their row is zero too -- the polygonal cone's facet
    unknowns beta: at a sticking contact every facet row is w = D_k v+ = 0, the facets span the
    tangent plane and the friction force moves smoothly whichever of them carry it; the
    derivative takes those on their bound with w = 0 (to rounding) as basic, with the others
    (their minimum-norm member), where the final set alone would hold the force to the span of
    its basic facets (measured on the rolling disk: 1.8 % off in one step)."""
    size = rhs.shape[0]
    fixed = lo == hi
    # a variable is held only at a finite bound (a free one -- the continuous law's, once its contact
    # is loaded -- may come from a step where it was fixed at 0)
    unheld = ((codes < 0) & ~jnp.isfinite(lo)) | ((codes > 0) & ~jnp.isfinite(hi))
    codes = jnp.where(fixed, -1, jnp.where(unheld, 0, codes)).astype(jnp.int8)
    index = jnp.arange(size)
    bound = jnp.maximum(jnp.abs(lo), jnp.where(jnp.isfinite(hi), jnp.abs(hi), 0.0))

    def solve(codes):
        if singular:
            codes, y = _settled(W, rhs, lo, hi, codes)
        else:
            y = _on_set(W, rhs, lo, hi, codes)
        basic = codes == 0
        w = W @ y + rhs
        row = jnp.abs(rhs) + jnp.abs(W) @ jnp.abs(y) + sizes
        slack = _ROUNDING * jnp.maximum(bound, jnp.abs(y))
        if singular:  # and by the variable's own scale: the change that moves a row by its size
            reach = jnp.max(jnp.abs(W) / jnp.where(row > 0.0, row, jnp.inf)[:, None], axis=0)
            slack = jnp.maximum(slack, _ROUNDING / jnp.where(reach > 0.0, reach, jnp.inf))
        below = basic & (y < lo - slack)
        above = basic & (y > hi + slack)
        wrong = ((codes < 0) & ~fixed & (w < -_ROUNDING * row)) | ((codes > 0) & (w > _ROUNDING * row))
        return codes, y, below, above, below | above | wrong

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
        codes, y, below, above, infeasible = solve(codes)
        return codes, y, infeasible, below, above, best, stall, k + 1

    codes, y, below, above, infeasible = solve(codes)
    carry = (codes, y, infeasible, below, above, jnp.asarray(size + 1), jnp.asarray(_BLOCK_STALL), 0)
    codes, y, infeasible, _, _, _, _, k = jax.lax.while_loop(going, step, carry)
    solved = ~jnp.any(infeasible) & jnp.all(jnp.isfinite(y))
    y = jnp.clip(y, lo, hi)  # rounding-level excursions onto their bounds (the host judges the answer)
    return y, k + 1, solved, codes  # basic solves, as judice-pires counts them


@pivot.defjvp
def _pivot_tangent(max_iterations, singular, primals, tangents):
    W, rhs, lo, hi, codes, sizes, facets = primals
    y, count, solved, final = pivot(W, rhs, lo, hi, codes, sizes, facets, max_iterations, singular)
    # named, so that a checkpointed step keeps the pivoting's answer (SAVED) and reverse mode's
    # recomputation of the step does not pivot again
    y, final = checkpoint_name(y, SAVED[0]), checkpoint_name(final, SAVED[1])
    out = (y, count, solved, final)
    data = (W, rhs, lo, hi)
    if singular:  # the way the final set's answer was found, then the derivative of that way
        w, row = W @ y + rhs, jnp.abs(rhs) + jnp.abs(W) @ jnp.abs(y) + sizes
        tied = facets & (final != 0) & (lo == 0.0) & (y == 0.0) & (jnp.abs(w) <= _ROUNDING * row)
        on = jnp.where(tied, 0, final).astype(final.dtype)
        A, b = _system(*data, on)
        eliminated = _eliminated(A, b, *eliminate(A, b, pivots=True))
        dy = _minimum_norm_tangent(data, tangents[:4], on, eliminated)
    else:
        dy = _set_tangent(data, tangents[:4], final, y)
    zero = jax.dtypes.float0
    return out, (dy, np.zeros((), zero), np.zeros((), zero), np.zeros(final.shape, zero))
