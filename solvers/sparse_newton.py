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
  ``_projected_search``; Bertsekas uses Armijo backtracking along the arc, which took up to
  2.3 times as many iterations on islands of the 500-sphere pour). f decreases at every
  iteration, which is what the active-set iteration lacks; once the active set is the
  solution's, the full step lands on the solution (a resting pile from a warm start takes one
  iteration). The face systems of successive iterations differ in few variables (1-100 of
  ~4,000 on the pour's islands, a few in the tail of a run): :class:`FaceSolver` factorizes a
  face only when it is more than ``border`` variables away from the last one factorized and
  otherwise solves by a Schur complement on the difference -- 1.4-1.5 times faster on 15
  islands of the 500-sphere pour (12-63 iterations each), the same iterations.
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

from .sparse_cg import CGFaceSolver, face_csr
from .sparse_measure import csr_arrays

__all__ = ["FaceSolver", "projected_newton_csr", "proximal_point_csr", "is_symmetric"]

ROUNDING = 1e-13
"""A face solve ends once its residual is this share of its right-hand side (:meth:`FaceSolver.solve`)."""


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


class FaceSolver:
    """Solves (K_FF + diag(s_F)) x = b on the successive faces F of one projected Newton run,
    with one sparse LU per *base* face F0 and, while F differs from F0 in at most ``border``
    variables, a dense Schur complement on the difference instead of a new factorization (the
    bordered system of active-set QP solvers: Gill, Murray, Saunders & Wright 1990, "A
    Schur-complement method for sparse quadratic programming", in Reliable Numerical
    Computation, Oxford, 113-138).

    With R = F0 \\ F (variables the face dropped) and N = F \\ F0 (variables it gained),
    A0 = K_{F0 F0} + diag(s_{F0}) and C = K_{F0 N}, x solves

        [ A0     E_R   C                ] [ x0 ]   [ b on F0 ∩ F, 0 on R ]
        [ E_R^T  0     0                ] [ mu ] = [ 0                   ]
        [ C^T    0     K_NN + diag(s_N) ] [ x_N]   [ b_N                 ]

    (the rows of R are released by mu and their unknowns held at 0), so with Z = A0^-1 [E_R C]
    (two triangular solves per border column, cached per variable while F0 stands) the border
    unknowns solve the |R|+|N| dense Schur complement [[0, 0], [0, K_NN + s_N]] - [E_R C]^T Z,
    and x0 = A0^-1 b0 - Z (mu, x_N). On the islands of the 500-sphere pour the face changes by
    1-100 variables per iteration (a few in the tail of a run), and a factorization of the face
    (~4,000 unknowns) costs ~30 column solves. ``shift`` is the proximal term s (n,); ``arrays``
    K's :func:`~solvers.sparse_measure.csr_arrays` where the caller has them already. With
    ``border=0`` every face is factorized (as :func:`solvers.sparse_gauss_seidel.proximal_solve`
    does)."""

    def __init__(self, matrix, shift, border: int = 40, arrays=None):
        self.K = sp.csr_matrix(matrix)
        self.arrays = csr_arrays(self.K) if arrays is None else arrays  # (indptr, indices, data) of K
        self.shift = np.asarray(shift, dtype=np.float64)
        self.border = int(border)
        self.n = self.K.shape[0]
        self.base = None
        self.factorizations = 0
        self.column_solves = 0

    def _factorize(self, free):
        import scipy.sparse.linalg as spla

        place = np.full(self.n, -1, np.int64)
        place[free] = np.arange(free.size)
        A = (self._block(free, place, free.size) + sp.diags(self.shift[free])).tocsc()
        try:  # symmetric positive definite with the shift: no pivoting, one symmetric ordering
            self.lu = spla.splu(A, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                                options={"SymmetricMode": True})  # fmt: skip
        except RuntimeError:  # singular even with the shift
            self.base = None
            return False
        self.base = free
        self.position = np.full(self.n, -1, np.int64)
        self.position[free] = np.arange(free.size)
        self.columns = {}
        self.factorizations += 1
        return True

    def _block(self, rows, place, columns):
        """K[rows][:, cols] as CSR, the columns numbered by ``place`` (:func:`~solvers.sparse_cg.face_csr`)."""
        ptr, idx, val = face_csr(*self.arrays, rows, place)
        return sp.csr_matrix((val, idx, ptr), shape=(rows.size, columns))

    def _on_base(self, rows):
        """K[rows][:, F0] as CSR with the columns numbered by their place in F0."""
        return self._block(rows, self.position, self.base.size)

    def _prepare(self, free):
        """Set the face: a new base, or the Schur complement of its border. False if singular."""
        if self.base is not None:
            in_face = np.zeros(self.n, bool)
            in_face[free] = True
            on_base = self.position >= 0
            dropped = np.flatnonzero(on_base & ~in_face)
            gained = np.flatnonzero(in_face & ~on_base)
            if dropped.size + gained.size > self.border:
                self.base = None
        if self.base is None:
            if not self._factorize(free):
                return False
            dropped = gained = np.zeros(0, np.int64)
        self._set_border(free, dropped, gained)
        if dropped.size + gained.size == 0:
            return True
        import scipy.linalg as sla

        wanted = np.concatenate([dropped, gained])
        missing = [k for k, i in enumerate(wanted) if i not in self.columns]
        if missing:
            rhs = np.zeros((self.base.size, len(missing)))
            for col, k in enumerate(missing):
                if k < dropped.size:
                    rhs[self.position[wanted[k]], col] = 1.0
            new = [k - dropped.size for k in missing if k >= dropped.size]
            if new:
                rhs[:, len(missing) - len(new) :] = self.Ct[new].toarray().T
            solved = self.lu.solve(rhs)
            self.column_solves += len(missing)
            for col, k in enumerate(missing):
                self.columns[int(wanted[k])] = solved[:, col]
        self.Z = np.column_stack([self.columns[int(i)] for i in wanted])
        lower = self.Ct @ self.Z if gained.size else np.zeros((0, wanted.size))
        schur = -np.vstack([self.Z[self.position[dropped]], lower])
        if gained.size:
            m = dropped.size
            place = np.full(self.n, -1, np.int64)
            place[gained] = np.arange(gained.size)
            schur[m:, m:] += self._block(gained, place, gained.size).toarray() + np.diag(self.shift[gained])
        with np.errstate(all="ignore"):
            self.schur = sla.lu_factor(schur, check_finite=False)
        if not np.all(np.isfinite(self.schur[0])) or np.min(np.abs(np.diag(self.schur[0]))) == 0.0:
            if not self._factorize(free):  # a singular border: factorize the face itself
                return False
            self._set_border(free, np.zeros(0, np.int64), np.zeros(0, np.int64))
        return True

    def _set_border(self, free, dropped, gained):
        """The face's border and the index maps its solves use, once per face: ``kept`` the
        places in F0 still on the face, ``to_face`` their places on it, ``gained_on_face``
        those of N."""
        self.dropped, self.gained = dropped, gained
        self.Ct = self._on_base(gained) if gained.size else None  # C^T (|N|, |F0|)
        place = np.full(self.n, -1, np.int64)
        place[free] = np.arange(free.size)
        on_face = place[self.base]
        self.kept = np.flatnonzero(on_face >= 0)
        self.to_face = on_face[self.kept]
        self.gained_on_face = place[gained]

    def _bordered(self, free, b):
        dropped, gained = self.dropped, self.gained
        b0 = np.zeros(self.base.size)
        b0[self.kept] = b[self.to_face]
        y = self.lu.solve(b0)
        x = np.empty(free.size)
        if dropped.size + gained.size == 0:
            x[self.to_face] = y  # the face is the base
            return x
        import scipy.linalg as sla

        rhs = -np.concatenate([y[self.position[dropped]], self.Ct @ y if gained.size else np.zeros(0)])
        rhs[dropped.size :] += b[self.gained_on_face]
        border = sla.lu_solve(self.schur, rhs, check_finite=False)
        x0 = y - self.Z @ border
        x[self.to_face] = x0[self.kept]
        x[self.gained_on_face] = border[dropped.size :]
        return x

    def solve(self, free, rhs, steps):
        """x with K_FF x = rhs on the face ``free`` (indices) by the proximal-point iteration of
        :func:`solvers.sparse_gauss_seidel.proximal_solve` from 0, x <- x + (K_FF + s_F)^-1
        (rhs - K_FF x) (at most ``steps`` solves): written on the residual, the iteration also
        refines away the error of a bordered solve, which grows with the condition of the base
        factorization (large on a singular face with a small shift). It stops when a solve changes
        x by less than 1e-9 of its size (the direction is then exact far beyond what the
        projected search and the next iteration need), when the residual is :data:`ROUNDING`
        of rhs (the next solve would change x by ~1e-14 of it: measured on the 500-sphere pile,
        where the first solve leaves ~1e-8 from the proximal shift and the second rounding),
        or fails to halve the residual: what
        remains is then rounding amplified by the face's condition, or the part of rhs outside
        the range of a singular K_FF, which every further solve only adds again along the null
        space (rhs / s: the same direction, which the projected search scales anyway). None if
        singular even with the shift."""
        if not self._prepare(free):
            return None
        x = np.zeros(free.size)
        full = np.zeros(self.n)
        residual = np.array(rhs, dtype=np.float64)
        size = first = np.max(np.abs(residual), initial=0.0)
        for _ in range(steps):
            step = self._bordered(free, residual)
            x = x + step
            if np.max(np.abs(step), initial=0.0) <= 1e-9 * np.max(np.abs(x), initial=0.0):
                break
            full[free] = x
            residual = rhs - (self.K @ full)[free]
            previous, size = size, np.max(np.abs(residual), initial=0.0)
            if not size <= 0.5 * previous:  # stalled on the null space (or not finite)
                break
            if size <= ROUNDING * first:  # solved to rounding: a further solve changes x by rounding
                break
        return x


def projected_newton_csr(matrix, q, lo, hi, z, max_iterations, tolerance, measure, proximal=1e-10, refine=8, border=40,
                         measure_every=8, linear="direct"):  # fmt: skip
    """Bertsekas' projected Newton method (module docstring) in place on z for the bounded LCP
    with the symmetric positive semidefinite sparse ``matrix``. ``measure(z)`` returns the
    framework's relative residual; it is taken where the iteration may have ended -- after a full
    step (the face's Newton step landed: t = 1 on the arc) or a step on the same face as the last
    -- and every ``measure_every`` iterations, and at the last iterate (while the active set is
    still being found, the residual stays far above any tolerance: on the resting 150-sphere
    pile this measures one iterate in six). The face systems are solved by :class:`FaceSolver`,
    which factorizes a face only when it differs from the last factorized one in more than
    ``border`` variables; with ``linear="cg"``, for a symmetric positive *definite* matrix, by
    Jacobi-preconditioned conjugate gradients (:class:`solvers.sparse_cg.CGFaceSolver`: no
    factorization, a cost linear in the island). Returns (iterations, relative residual,
    converged); z is left at the best iterate measured."""
    K = sp.csr_matrix(matrix)
    arrays = csr_arrays(K)
    d = K.diagonal().copy()
    d[~(d > 0.0)] = 1.0
    fixed = lo == hi
    np.clip(z, lo, hi, out=z)
    relative = measure(z)
    best, best_z = relative, z.copy()
    g = K @ z + q
    if linear not in ("direct", "cg"):
        raise ValueError(f"linear must be 'direct' or 'cg', got {linear!r}")
    faces = FaceSolver(K, proximal * d, border, arrays) if linear == "direct" else CGFaceSolver(K, arrays)
    iterations, measured, last_held = 0, True, None
    while not (relative <= tolerance) and iterations < max_iterations:
        iterations += 1
        y = z - g / d
        held = fixed | ((g > 0.0) & (y <= lo)) | ((g < 0.0) & (y >= hi))
        p = np.where(held, -g / d, 0.0)
        free = np.flatnonzero(~held)
        if free.size:  # the face's Newton step nearest zero (proximal on a singular face)
            x = faces.solve(free, -g[free], 1 + refine)
            if x is None:  # singular even with the shift (direct), or CG short of its tolerance
                break
            p[free] = x
        if not np.all(np.isfinite(p)):
            break
        trial = np.empty_like(z)
        t, change = _projected_search(*arrays, q, lo, hi, z, p, g, trial)
        if not change < 0.0:  # no descent along the arc: at a minimizer up to rounding, or stuck
            break
        z[:] = trial
        g = K @ z + q
        settling = t >= 1.0 or (last_held is not None and np.array_equal(held, last_held))
        last_held = held
        measured = settling or iterations % measure_every == 0
        if measured:
            relative = measure(z)
            if relative < best:
                best, best_z = relative, z.copy()
    if not measured:  # the last iterate, which f ranks best
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
