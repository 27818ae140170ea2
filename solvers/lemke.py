"""Lexicographic Lemke method (reference solver).

Lemke's complementary pivoting for the standard LCP(q, M): w = M z + q >= 0, z >= 0,
w^T z = 0, with the covering vector d = (1, ..., 1) and artificial variable z0
(Cottle, Pang & Stone, *The Linear Complementarity Problem*, 1992, Alg. 4.4.5). Degenerate
ratio tests are resolved lexicographically on the rows of [x_B, B^{-1}], so the method cannot
cycle. It ends with a solution (z0 leaves the basis) or on a secondary ray
(``RAY_TERMINATION``); for copositive-plus M the ray means the LCP has no solution. Murty's
example (M upper triangular with 1 on the diagonal and 2 above it, q = -1) makes it take
2^n - 1 pivots.

General bounded problems reach it through :mod:`solvers.reformulate`: free variables are
eliminated by a Schur complement, boxes split into complementarity pairs.

The basis inverse is kept explicitly (revised product form, O(n^2) per pivot).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from .basic_systems import basic_solve, minimum_norm_solve
from .options import check_count, check_positive
from .reformulate import eliminate_free_or_report, split_boxes
from .result import Status, measure, relative_residual
from .scaling import equilibrate

NAME = "lemke"

_SOLVED, _MAX_ITERATIONS, _RAY = 0, 1, 3
_EPS = float(np.finfo(float).eps)
_NOISE = 64.0  # rounding level of the equilibrated solution, in units of eps x max(x)
_CODE_TO_STATUS = {_SOLVED: Status.SOLVED, _MAX_ITERATIONS: Status.MAX_ITERATIONS, _RAY: Status.RAY_TERMINATION}


@dataclass(frozen=True)
class Options:
    """Options of ``method="lemke"``.

    max_pivots : pivot limit (0 means ``10000 + 100 n`` for the split LCP of size n).
    pivot_tolerance : entries of the entering column at or below this (times the column's
        magnitude) are treated as zero in the ratio test.
    """

    max_pivots: int = 0
    pivot_tolerance: float = 1e-12

    def __post_init__(self):
        check_count("max_pivots", self.max_pivots, minimum=0)
        check_positive("pivot_tolerance", self.pivot_tolerance)


@njit(cache=True)
def _lexico_less(x, B_inv, i, k, d):
    """True if row i of [x, B^{-1}] / d_i is lexicographically smaller than row k's."""
    a = x[i] / d[i]
    b = x[k] / d[k]
    if a != b:
        return a < b
    for j in range(B_inv.shape[1]):
        a = B_inv[i, j] / d[i]
        b = B_inv[k, j] / d[k]
        if a != b:
            return a < b
    return False


@njit(cache=True)
def lemke(M, q, max_pivots, pivot_tolerance):
    """Lexicographic Lemke on LCP(q, M). Returns (z, code, pivots); code 0/1/3."""
    z, code, pivots, _ = lemke_with_basis(M, q, max_pivots, pivot_tolerance)
    return z, code, pivots


@njit(cache=True)
def lemke_with_basis(M, q, max_pivots, pivot_tolerance):
    """:func:`lemke`, also returning the final basis as a mask of the basic z variables."""
    n = q.shape[0]
    z = np.zeros(n)
    if n == 0:
        return z, _SOLVED, 0, np.zeros(0, np.bool_)
    q_min = q.min()
    if q_min >= 0.0:
        return z, _SOLVED, 0, np.zeros(n, np.bool_)
    # Variables: 0..n-1 are w, n..2n-1 are z, 2n is z0. Column of w_i: e_i; of z_j: -M[:, j];
    # of z0: -d.
    basis = np.arange(n)
    B_inv = np.eye(n)
    x = q.copy()
    d = np.empty(n)
    # Initial pivot: z0 enters, the row with the most negative q leaves (ties: largest index,
    # the lexicographic rule for B = I and d = 1).
    r = 0
    for i in range(n):
        if q[i] <= q[r]:
            r = i
    entering = 2 * n
    for i in range(n):
        d[i] = -1.0  # B^{-1} (-d) with B = I
    pivots = 0
    while True:
        # pivot on row r with column d
        pivots += 1
        pr = d[r]
        for j in range(n):
            B_inv[r, j] /= pr
        x[r] /= pr
        for i in range(n):
            if i != r and d[i] != 0.0:
                f = d[i]
                for j in range(n):
                    B_inv[i, j] -= f * B_inv[r, j]
                x[i] -= f * x[r]
        leaving = basis[r]
        basis[r] = entering
        if leaving == 2 * n:
            break
        if pivots >= max_pivots:
            return _extract(basis, x, n), _MAX_ITERATIONS, pivots, _basic_mask(basis, n)
        # complement of the leaving variable enters
        entering = leaving + n if leaving < n else leaving - n
        if entering < n:  # a w column: B^{-1} e_i
            for i in range(n):
                d[i] = B_inv[i, entering]
        else:
            j = entering - n
            for i in range(n):
                s = 0.0
                for k in range(n):
                    s -= B_inv[i, k] * M[k, j]
                d[i] = s
        d_norm = 0.0
        for i in range(n):
            d_norm = max(d_norm, abs(d[i]))
        threshold = pivot_tolerance * max(d_norm, 1.0)
        r = -1
        for i in range(n):
            if d[i] > threshold:
                if r < 0 or _lexico_less(x, B_inv, i, r, d):
                    r = i
        if r < 0:
            return _extract(basis, x, n), _RAY, pivots, _basic_mask(basis, n)
    return _extract(basis, x, n), _SOLVED, pivots, _basic_mask(basis, n)


@njit(cache=True)
def polish(M, q, x, basic_mask, minimum_norm=False):
    """Recompute the solution of the complementary basis Lemke ended on directly: with
    F = the basic z variables of that basis, solve M_FF x_F = -q_F by LU with one refinement step
    (:func:`solvers.basic_systems.basic_solve`) and set the rest to 0. The pivots' product-form
    updates accumulate rounding at the scale of the largest rows (the covering vector couples
    all rows); the direct solve is componentwise backward stable. A degenerate basic variable
    that comes out at -rounding is put at 0. Returns (x, ok); ok is False if the basic system is
    singular or the answer is not finite (then the caller keeps Lemke's own x, as it does when
    that measures better).

    ``minimum_norm``: solve the basic system as a possibly singular one instead
    (:func:`solvers.basic_systems.minimum_norm_solve`): redundant contacts (a box on four
    coplanar corners) leave Lemke on a basis whose matrix is singular but consistent, where LU
    returns noise and the product form's x carries the pivots' rounding."""
    n = q.shape[0]
    basic = np.empty(n, np.int64)
    k = 0
    for j in range(n):
        if basic_mask[j]:
            basic[k] = j
            k += 1
    if k == 0:
        return x, True
    A = np.empty((k, k))
    r = np.empty(k)
    for a in range(k):
        r[a] = -q[basic[a]]
        for b in range(k):
            A[a, b] = M[basic[a], basic[b]]
    if minimum_norm:
        y, ok = minimum_norm_solve(A, r, np.abs(A).sum(axis=1).max(), np.abs(r).max())
    else:
        y, ok = basic_solve(A, r)
    if not ok:
        return x, False
    out = np.zeros(n)
    for a in range(k):
        if not np.isfinite(y[a]):
            return x, False
        out[basic[a]] = max(y[a], 0.0)  # a degenerate basic variable may come out at -rounding
    return out, True


@njit(cache=True)
def _basic_mask(basis, n):
    mask = np.zeros(n, np.bool_)
    for i in range(n):
        if n <= basis[i] < 2 * n:
            mask[basis[i] - n] = True
    return mask


@njit(cache=True)
def _extract(basis, x, n):
    z = np.zeros(n)
    for i in range(n):
        if n <= basis[i] < 2 * n:
            z[basis[i] - n] = max(x[i], 0.0)
    return z


def run(problem, options: Options, tolerance: float):
    """Solve a bounded LCP through the reformulations of :mod:`solvers.reformulate`."""
    elimination, failure = eliminate_free_or_report(problem, NAME, tolerance)
    if failure is not None:
        return failure
    split = split_boxes(elimination.reduced)
    m = split.q.shape[0]
    max_pivots = options.max_pivots or 10_000 + 100 * m
    # equilibrated (solvers.scaling): LCP(E q, E M D) has the solutions x = D x'
    Ms, qs, _, _, _, col = equilibrate(split.M, split.q, np.zeros(m), np.full(m, np.inf))
    xs, code, pivots, basic = lemke_with_basis(Ms, qs, max_pivots, options.pivot_tolerance)
    retried = False
    if code != _SOLVED:
        # A different scaling is a different covering vector, hence a different path; on degenerate
        # problems (noise-level q entries) rounding can end one path on a ray that the other avoids.
        x_raw, code_raw, pivots_raw, basic_raw = lemke_with_basis(split.M, split.q, max_pivots, options.pivot_tolerance)
        pivots += pivots_raw
        retried = True
        if code_raw == _SOLVED:
            Ms, qs, col, xs, code, basic = split.M, split.q, np.ones(m), x_raw, code_raw, basic_raw

    def answer(x):  # z of the original problem for the split LCP's x, and its framework residual
        z_x = elimination.recover(split.recover(col * x))
        return z_x, relative_residual(problem.M, problem.q, problem.lo, problem.hi, z_x)

    z, relative = answer(xs)
    polished = False
    if code == _SOLVED:
        for minimum_norm in (False, True):  # the second only where the first leaves a singular basis's noise
            if minimum_norm and relative <= tolerance:
                break
            candidate, ok = polish(Ms, qs, xs, basic, minimum_norm)
            if ok:
                z_polished, relative_polished = answer(candidate)
                if relative_polished <= relative:
                    xs, z, relative, polished = candidate, z_polished, relative_polished, True
    cleaned = False
    if code in (_SOLVED, _RAY) and not relative <= tolerance:
        # degenerate basic variables at rounding level of the equilibrated solution (6e-33 where 0
        # is meant: in a row whose other terms vanish, the slip row of a contact without load,
        # that noise is the whole row) put on their bound; kept only if the measure says better
        noise = _NOISE * _EPS * float(np.max(xs)) if m else 0.0
        candidate = np.where(xs <= noise, 0.0, xs)
        z_candidate, relative_candidate = answer(candidate)
        if relative_candidate < relative:
            xs, z, relative, cleaned = candidate, z_candidate, relative_candidate, True
    status = _CODE_TO_STATUS[code]
    ray_but_solved = code == _RAY and relative <= tolerance
    if ray_but_solved:
        # the ray was found with the artificial z0 at rounding level (a degenerate problem): the
        # basis in hand already solves the problem, as the framework's measure (the arbiter of
        # every answer) confirms
        status = Status.SOLVED
    return measure(
        problem,
        z,
        status,
        pivots,
        f"lexicographic Lemke on a {m}-variable LCP: {status.name.lower()} after {pivots} pivots"
        + (" (ended on a secondary ray whose basis already solves the problem)" if ray_but_solved else "")
        + (", basis solution recomputed" if polished else "")
        + (", rounding-level values put on their bounds" if cleaned else "")
        + (" (equilibrated path failed; retried unscaled)" if retried else ""),
        NAME,
        tolerance,
        {"lcp_size": m, "polished": polished, "retried_unscaled": retried, "cleaned": cleaned},
    )
