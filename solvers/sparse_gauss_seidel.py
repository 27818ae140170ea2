"""Gauss–Seidel over contact blocks for large sparse step problems, each block solved exactly,
convergence judged by the framework's own residual on the sparse problem
(:mod:`solvers.sparse_measure`).

Two problems, both stored as compressed sparse rows (a pile of 500 bodies on 1500 contacts has a
Delassus operator of 4500 rows with a few dozen nonzeros each: dense, it would be 160 MB and its
assembly alone slower than the step):

* :func:`nsgs_csr` -- the 3D friction-contact problem u = W r + b, r in the Coulomb cone per
  contact (Jourdan, Alart & Jean 1998's NSGS): each sweep solves contact i's local problem
  u_i = W_ii r_i + (b_i + sum_{j != i} W_ij r_j) exactly with the local solver of
  :mod:`solvers.friction_contact` (separation, stick, or slide on the cone's boundary);
* :func:`block_gs_csr` -- a bounded LCP ``lo <= z <= hi _|_ w = M z + q`` whose variables come in
  blocks of at most three (one contact's normal impulse and two friction unknowns: the Delassus
  form of Peiret 2016 Eq. 30 with the regularized or box model), each block's local bounded LCP
  solved by enumerating its 3^b active sets (:func:`solvers.block_gs.local_blcp`).

Both start from a warm start (the previous step's impulses of persisting contacts), sweep the
blocks in order, and every ``check_every`` sweeps call ``measure`` -- a compiled function of the
iterate returning the framework's relative residual, supplied by the caller so that the
acceptance is judged on the problem the caller poses (the Delassus problem itself for the
friction contact, the full Eq. 30 for the bounded LCP) -- stopping at ``tolerance``. For a
symmetric positive semidefinite operator a sweep is an exact block coordinate descent (Luo &
Tseng 1992) for the bounded LCP; NSGS has no such guarantee but is the standard method of the
field. Neither is a direct method: an unconverged run says so (``converged`` False) with its last
iterate and residual, and the caller falls back.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .block_gs import local_blcp
from .local_coulomb import _grid, _inverse3, _solve_local

__all__ = ["nsgs_csr", "block_gs_csr", "active_set_csr", "proximal_solve"]


@njit(cache=True)
def _block_of(indptr, indices, data, start, size, out):
    """out <- the diagonal block M[start:start+size, start:start+size]."""
    for a in range(size):
        for b in range(size):
            out[a, b] = 0.0
        for p in range(indptr[start + a], indptr[start + a + 1]):
            j = indices[p] - start
            if 0 <= j < size:
                out[a, j] = data[p]


@njit(cache=True, error_model="numpy")
def _nsgs_blocks(indptr, indices, data, nc):
    """The contacts' diagonal blocks W_ii and their inverses (a small proximal term on a
    degenerate block)."""
    blocks = np.empty((nc, 3, 3))
    inverses = np.empty((nc, 3, 3))
    for i in range(nc):
        _block_of(indptr, indices, data, 3 * i, 3, blocks[i])
        det = _inverse3(blocks[i], inverses[i])
        if not (det > 0.0 and np.isfinite(det)):
            scale = abs(blocks[i, 0, 0]) + abs(blocks[i, 1, 1]) + abs(blocks[i, 2, 2])
            rho = 1e-10 * scale if scale > 0.0 else 1e-10
            for a in range(3):
                blocks[i, a, a] += rho
            _inverse3(blocks[i], inverses[i])
    return blocks, inverses


@njit(cache=True, error_model="numpy")
def _nsgs_sweeps(indptr, indices, data, b, mu, r, sweeps, blocks, inverses, phis, grid_cos, grid_sin):
    nc = mu.shape[0]
    c = np.empty(3)
    rp = np.empty(3)
    out = np.empty(3)
    for _ in range(sweeps):
        for i in range(nc):
            k = 3 * i
            for a in range(3):
                s = b[k + a]
                for p in range(indptr[k + a], indptr[k + a + 1]):
                    j = indices[p]
                    if j < k or j >= k + 3:
                        s += data[p] * r[j]
                rp[a] = r[k + a]
                c[a] = s
            _solve_local(blocks[i], inverses[i], c, mu[i], rp, phis, grid_cos, grid_sin, out)
            r[k], r[k + 1], r[k + 2] = out[0], out[1], out[2]


def sweeps_to_measure(check_every, sweeps, relative, previous, tolerance):
    """How many sweeps to take before the next measure: ``check_every`` at first, then, from the
    linear rate the last two measures show (``previous`` (sweeps, relative) before ``sweeps``,
    ``relative``), nine tenths of the sweeps that rate predicts to ``tolerance`` -- at least
    ``check_every`` and at most ten times it. A measure costs ~3 sweeps (1,500 contacts of a
    resting pile need 200-300 sweeps to 1e-6): measured every 10 sweeps a third of the solve was
    spent measuring."""
    if previous is None or not (0.0 < relative < previous[1]) or not tolerance > 0.0:
        return check_every
    rate = np.log(relative / previous[1]) / (sweeps - previous[0])  # log of the residual per sweep (< 0)
    predicted = np.log(tolerance / relative) / rate
    return int(min(10 * check_every, max(check_every, 0.9 * predicted)))


def nsgs_csr(indptr, indices, data, b, mu, r, max_sweeps, check_every, tolerance, measure, grid_points=16):
    """NSGS in place on r (3 nc,) for u = W r + b in CSR (module docstring); ``measure(r)``
    returns the relative residual of r, taken every ``check_every`` sweeps and, once the residual
    falls, where its linear rate predicts the tolerance (:func:`sweeps_to_measure`). Returns
    (sweeps, relative residual, converged)."""
    blocks, inverses = _nsgs_blocks(indptr, indices, data, mu.shape[0])
    phis, grid_cos, grid_sin = grid(grid_points)
    relative = measure(r)
    sweeps, previous = 0, None
    while not (relative <= tolerance) and sweeps < max_sweeps and np.isfinite(relative):
        count = min(sweeps_to_measure(check_every, sweeps, relative, previous, tolerance), max_sweeps - sweeps)
        _nsgs_sweeps(indptr, indices, data, b, mu, r, count, blocks, inverses, phis, grid_cos, grid_sin)
        previous = (sweeps, relative)
        sweeps += count
        relative = measure(r)
    return sweeps, relative, bool(relative <= tolerance)


@njit(cache=True)
def _block_gs_sweeps(indptr, indices, data, q, lo, hi, starts, z, sweeps, A):
    s = np.empty(3)
    lo_b = np.empty(3)
    hi_b = np.empty(3)
    for _ in range(sweeps):
        for I in range(starts.shape[0] - 1):
            a0, size = starts[I], starts[I + 1] - starts[I]
            for a in range(size):
                row = a0 + a
                acc = q[row]
                for p in range(indptr[row], indptr[row + 1]):
                    j = indices[p]
                    if j < a0 or j >= a0 + size:
                        acc += data[p] * z[j]
                s[a] = acc
                lo_b[a] = lo[row]
                hi_b[a] = hi[row]
            local_blcp(A[I, :size, :size], s[:size], lo_b[:size], hi_b[:size], z[a0 : a0 + size])


@njit(cache=True)
def _diagonal_blocks(indptr, indices, data, starts):
    A = np.zeros((starts.shape[0] - 1, 3, 3))
    for I in range(starts.shape[0] - 1):
        _block_of(indptr, indices, data, starts[I], starts[I + 1] - starts[I], A[I])
    return A


def block_gs_csr(indptr, indices, data, q, lo, hi, starts, z, max_sweeps, check_every, tolerance, measure):
    """Block Gauss–Seidel in place on z for lo <= z <= hi _|_ M z + q in CSR, blocks
    ``z[starts[I]:starts[I+1]]`` of at most 3 variables (module docstring); ``measure(z)`` returns
    the relative residual. Returns (sweeps, relative residual, converged)."""
    starts = np.asarray(starts, np.int64)
    if np.diff(starts).max(initial=0) > 3:
        raise ValueError("block_gs_csr takes blocks of at most 3 variables")
    A = _diagonal_blocks(indptr, indices, data, starts)
    relative = measure(z)
    sweeps = 0
    while not (relative <= tolerance) and sweeps < max_sweeps and np.isfinite(relative):
        count = min(check_every, max_sweeps - sweeps)
        _block_gs_sweeps(indptr, indices, data, q, lo, hi, starts, z, count, A)
        sweeps += count
        relative = measure(z)
    return sweeps, relative, bool(relative <= tolerance)


def grid(points: int = 16):
    """(phi, cos, sin) of the local solver's angular grid (``solvers.friction_contact._grid``)."""

    return _grid(points)


def proximal_solve(matrix, free, shift, rhs, start, steps):
    """x with ``matrix[free][:, free] x = rhs`` by the proximal-point iteration (Rockafellar
    1976) x <- (A + diag(shift))^-1 (rhs + shift x) from ``start``, at most ``steps`` solves with
    one sparse LU (SuperLU, partial pivoting: the matrix need not be symmetric), stopping when x
    no longer changes: the free block of a hyperstatic contact set (four corners, a pile) is
    singular, and the iteration goes to the solution nearest ``start`` (or, where rhs is not in
    the range, moves along the null space by rhs / shift per solve). None if it is singular even
    with the shift. (The symmetric case, on changing faces: :class:`solvers.sparse_newton.FaceSolver`.)"""
    import scipy.sparse as sp
    import scipy.sparse.linalg as spla

    A = (matrix[free][:, free] + sp.diags(shift)).tocsc()
    try:
        lu = spla.splu(A, permc_spec="MMD_AT_PLUS_A")
    except RuntimeError:
        return None
    x = np.array(start, dtype=np.float64)
    for _ in range(steps):
        x_next = lu.solve(rhs + shift * x)
        done = np.max(np.abs(x_next - x), initial=0.0) <= 1e-15 * np.max(np.abs(x_next), initial=0.0)
        x = x_next
        if done:
            break
    return x


def active_set_csr(matrix, q, lo, hi, z, max_iterations, tolerance, measure, proximal=1e-10, proximal_steps=8):
    """Primal-dual active-set iterations (Hintermüller, Ito & Kunisch 2002, SIAM J. Optim. 13:
    865-888, for box constraints) in place on z for ``lo <= z <= hi _|_ w = M z + q`` with a
    sparse M (scipy, square): with d the diagonal of M (1 where it vanishes), y = z - w / d picks
    each variable's set -- at its lower bound where y <= lo, at its upper bound where y >= hi, free
    otherwise -- and the free variables solve M_FF z_F = -(q_F + M_FB z_B) (sparse LU, SuperLU;
    with a proximal term ``proximal`` d_F corrected in up to ``proximal_steps`` steps from the
    current iterate, because the free block of a hyperstatic contact set is singular).
    The iteration stops when the sets repeat any earlier ones (converged, or cycling), or at
    ``measure(z) <= tolerance``, and leaves z at the best iterate it measured. From a warm start
    whose sets are right (a resting pile from one step to the next) it ends after one
    factorization. Not guaranteed to converge (it may cycle on a matrix that is not an M-matrix):
    the caller judges the result by ``measure`` and falls back. Returns (iterations, relative
    residual, converged)."""
    import scipy.sparse as sp

    M = sp.csr_matrix(matrix)
    d = M.diagonal().copy()
    d[d == 0.0] = 1.0
    fixed = lo == hi
    relative = measure(z)
    best, best_z = relative, z.copy()
    visited = set()
    iterations = 0
    while not (relative <= tolerance) and iterations < max_iterations:
        w = M @ z + q
        y = z - w / d
        at_lo = fixed | (np.isfinite(lo) & (y <= lo))
        at_hi = ~at_lo & np.isfinite(hi) & (y >= hi)
        state = hash((at_lo.tobytes(), at_hi.tobytes()))
        if state in visited:  # the sets repeat: converged, or cycling
            break
        visited.add(state)
        iterations += 1
        z_new = np.where(at_lo, lo, np.where(at_hi, hi, 0.0))
        free = np.flatnonzero(~(at_lo | at_hi))
        if free.size:
            bound = np.flatnonzero(at_lo | at_hi)
            rhs = -(q[free] + M[free][:, bound] @ z_new[bound])
            x = proximal_solve(M, free, proximal * d[free], rhs, z[free], proximal_steps)
            if x is None:  # singular even with the shift
                break
            z_new[free] = x
        if not np.all(np.isfinite(z_new)):
            break
        z[:] = z_new
        relative = measure(z)
        if relative < best:
            best, best_z = relative, z.copy()
    z[:] = best_z  # the best iterate (the iteration can cycle: the caller smooths and comes back)
    return iterations, best, bool(best <= tolerance)
