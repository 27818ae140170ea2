"""Newton-type methods for the large sparse step problems of a pile of bodies, where Gauss–Seidel
stalls (a linear rate close to 1 on hyperstatic contact networks) and the primal-dual active-set
iteration cycles (during a pour, when hundreds of contacts open and close in one step).

* :func:`projected_newton_csr` -- the bounded LCP ``lo <= z <= hi _|_ w = K z + q`` with a
  **symmetric positive semidefinite** K (scipy sparse): the Delassus form of Peiret 2016 Eq. (30)
  with the regularized or the box model, whose friction rows are the transposes of their force
  columns (F = G) and whose compliance C is diagonal and nonnegative, so that for fixed bounds
  the problem is exactly the optimality condition of the convex bound-constrained quadratic
  program  min f(z) = ½ zᵀ K z + qᵀ z  over  lo <= z <= hi. Bertsekas' projected Newton method
  (D. P. Bertsekas 1982, "Projected Newton methods for optimization problems with simple
  constraints", SIAM J. Control Optim. 20: 221-246): at z, with g = K z + q and d = diag(K),
  the variables whose bound a scaled gradient step would reach (``z - g/d`` beyond the bound,
  g pointing outward) are held by a diagonally scaled gradient step, the others take the Newton
  step of the quadratic on their face, ``K_FF p_F = -g_F`` (SuperLU, with the proximal term of
  :func:`solvers.sparse_gauss_seidel.proximal_solve` where K_FF is singular, as it is for the
  normal rows of a hyperstatic contact set); the step goes to the first minimizer of f along
  the projection arc P(z + t p), t in [0, 1], found exactly (Moré & Toraldo's projected search,
  :func:`_projected_search`; Bertsekas uses Armijo backtracking along the arc, which took up to
  2.3 times as many iterations on islands of the 500-sphere pour). f decreases at every
  iteration, which is what the active-set iteration lacks; once the active set is the
  solution's, the full step lands on the solution (one factorization per iteration; a resting
  pile from a warm start takes one).
* :func:`proximal_point_csr` -- the exact-cone friction-contact problem on a CSR Delassus
  operator: the proximal-point loop of :mod:`solvers.proximal_point` around the semismooth
  Newton of :mod:`solvers.alart_curnier` (Alart–Curnier function, Armijo on ½|Φ|², SuperLU on
  the block-row pattern of W), started from the caller's iterate (NSGS's), stopping on the
  caller's measure. Plain Newton fails there: on a hyperstatic pile its Jacobian is singular
  (measured: 100 iterations short of 1e-9 on an island of 346 contacts of the 500-sphere
  pour), while W + Λ is positive definite.

Both judge convergence by ``measure(z)``, the framework's per-row residual of the problem the
caller poses (:mod:`solvers.sparse_measure`), never by their own merit function, and leave z at
the best iterate measured.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numba import njit

from .sparse_gauss_seidel import proximal_solve
from .sparse_measure import csr_arrays

__all__ = ["projected_newton_csr", "proximal_point_csr", "is_symmetric"]


def is_symmetric(matrix, tolerance: float = 1e-12) -> bool:
    """Whether the sparse ``matrix`` equals its transpose to ``tolerance`` times its largest
    entry (the test that picks :func:`projected_newton_csr` for a model's problem, rather than
    a list of models)."""
    M = sp.csr_matrix(matrix)
    if M.shape[0] != M.shape[1]:
        return False
    difference = abs(M - M.T)
    top = abs(M).max() if M.nnz else 0.0
    return bool(difference.nnz == 0 or difference.max() <= tolerance * top)


@njit(cache=True)
def _projected_search(indptr, indices, data, q, lo, hi, z, p, g, out):
    """The projected search of Moré & Toraldo 1991 (SIAM J. Optim. 1: 93-113) for the quadratic
    f(x) = ½ xᵀKx + qᵀx (K symmetric, CSR): the first local minimizer of f(P(z + t p)) over
    t in [0, 1], P the projection on [lo, hi], found exactly by walking the breakpoints of the
    path in order (f is quadratic between them: its slope a = g(x)ᵀd and curvature b = dᵀKd
    are updated as each variable reaches its bound and leaves the direction d, in O(nonzeros)
    overall). g = K z + q at z. Writes the point into ``out``; returns (t, the change of f
    along the walk, summed segment by segment: exact up to the rounding of its terms, where
    f(out) - f(z) computed from the two values loses everything below |f| eps); (0, 0) if p does
    not descend."""
    n = z.shape[0]
    # breakpoints
    tb = np.empty(n)
    for i in range(n):
        if p[i] > 0.0:
            tb[i] = (hi[i] - z[i]) / p[i] if hi[i] < np.inf else np.inf
        elif p[i] < 0.0:
            tb[i] = (lo[i] - z[i]) / p[i] if lo[i] > -np.inf else np.inf
        else:
            tb[i] = 0.0  # not moving: out of the direction from the start
        if tb[i] < 0.0:
            tb[i] = 0.0
    d = p.copy()
    for i in range(n):
        if tb[i] <= 0.0:
            d[i] = 0.0
    # Kd
    Kd = np.zeros(n)
    for i in range(n):
        s = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            s += data[k] * d[indices[k]]
        Kd[i] = s
    a = 0.0
    b = 0.0
    for i in range(n):
        a += g[i] * d[i]
        b += d[i] * Kd[i]
    order = np.argsort(tb)
    t = 0.0
    change = 0.0
    j = 0
    while j < n and tb[order[j]] <= 0.0:
        j += 1
    while True:
        nxt = tb[order[j]] if j < n else np.inf
        if nxt > 1.0:
            nxt = 1.0
        dt = nxt - t
        if a >= 0.0:  # not descending any more: stop here
            break
        if b > 0.0:
            s = -a / b
            if s < dt:
                t = t + s
                change += a * s + 0.5 * b * s * s
                break
        t = nxt
        change += a * dt + 0.5 * b * dt * dt
        a = a + dt * b
        if t >= 1.0 or j >= n:
            break
        # remove every variable whose breakpoint is t
        while j < n and tb[order[j]] <= t:
            i = order[j]
            pi = d[i]
            if pi != 0.0:
                # g_i at the current point: row i of K times x(t) plus q_i
                gi = q[i]
                for k in range(indptr[i], indptr[i + 1]):
                    c = indices[k]
                    x = z[c] + t * p[c]
                    if x > hi[c]:
                        x = hi[c]
                    if x < lo[c]:
                        x = lo[c]
                    gi += data[k] * x
                a -= pi * gi
                b -= 2.0 * pi * Kd[i]
                kii = 0.0
                for k in range(indptr[i], indptr[i + 1]):
                    if indices[k] == i:
                        kii = data[k]
                b += pi * pi * kii
                for k in range(indptr[i], indptr[i + 1]):
                    Kd[indices[k]] -= pi * data[k]  # column i = row i (symmetric)
                d[i] = 0.0
            j += 1
    for i in range(n):
        x = z[i] + t * p[i]
        if x > hi[i]:
            x = hi[i]
        if x < lo[i]:
            x = lo[i]
        out[i] = x
    return t, change


def projected_newton_csr(matrix, q, lo, hi, z, max_iterations, tolerance, measure, proximal=1e-10, refine=8):
    """Bertsekas' projected Newton method (module docstring) in place on z for the bounded LCP
    with the symmetric positive semidefinite sparse ``matrix``. ``measure(z)`` returns the
    framework's relative residual. Returns (iterations, relative residual, converged); z is left
    at the best iterate measured."""
    K = sp.csr_matrix(matrix)
    arrays = csr_arrays(K)
    d = K.diagonal().copy()
    d[~(d > 0.0)] = 1.0
    fixed = lo == hi
    np.clip(z, lo, hi, out=z)
    relative = measure(z)
    best, best_z = relative, z.copy()
    g = K @ z + q
    iterations = 0
    while not (relative <= tolerance) and iterations < max_iterations:
        iterations += 1
        y = z - g / d
        held = fixed | ((g > 0.0) & (y <= lo)) | ((g < 0.0) & (y >= hi))
        p = np.where(held, -g / d, 0.0)
        free = np.flatnonzero(~held)
        if free.size:  # the face's Newton step nearest zero (proximal on a singular face)
            x = proximal_solve(K, free, proximal * d[free], -g[free], np.zeros(free.size), 1 + refine, symmetric=True)
            if x is None:  # singular even with the shift
                break
            p[free] = x
        if not np.all(np.isfinite(p)):
            break
        trial = np.empty_like(z)
        _, change = _projected_search(*arrays, q, lo, hi, z, p, g, trial)
        if not change < 0.0:  # no descent along the arc: at a minimizer up to rounding, or stuck
            break
        z[:] = trial
        g = K @ z + q
        relative = measure(z)
        if relative < best:
            best, best_z = relative, z.copy()
    z[:] = best_z
    return iterations, best, bool(best <= tolerance)


def proximal_point_csr(W, b, mu, r, max_outer, tolerance, measure):
    """The proximal-point loop of :mod:`solvers.proximal_point` (Newton on the Alart–Curnier
    function of W + Λ, whose Jacobian is nonsingular on a hyperstatic pile, where plain Newton's
    is not) in place on r (3 nc,) for u = W r + b with W a scipy sparse matrix, from the caller's
    r, stopping when ``measure(r)`` (the framework's relative residual) reaches ``tolerance``.
    Returns (Newton iterations, relative residual, converged); r is left at the best iterate
    measured."""
    from .proximal_point import ProxOptions, proximal_point

    best = [measure(r), r.copy()]

    def outer_residual(x):
        relative = measure(x)
        if relative < best[0]:
            best[0], best[1] = relative, x.copy()
        return relative

    _, _, info = proximal_point(sp.csr_matrix(W), b, mu, r, ProxOptions(max_outer=max_outer, polish_outer=0),
                                outer_residual, tolerance)  # fmt: skip
    r[:] = best[1]
    return info["inner_iterations"], best[0], bool(best[0] <= tolerance)
