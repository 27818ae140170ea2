"""The exact one-contact Coulomb solve of NSGS (:mod:`solvers.nsgs`): the local problem
``u = A r + c`` of one contact solved by enumerating its cases:

1. separation, ``r = 0``, if ``c_N >= 0``;
2. stick, ``r = -A^{-1} c``, if that lies in the cone (strictly inside: accepted at once);
3. slide: ``r = r_N g(φ)``, ``g(φ) = (1, -mu cos φ, -mu sin φ)``; ``u_N = 0`` gives
   ``r_N = -c_N / D(φ)`` with ``D(φ) = A_N · g(φ)`` (``A_N`` the normal row of ``A``), and the
   slip direction condition is that ``u_T`` be parallel to ``d = (cos φ, sin φ)`` with a
   positive factor. Multiplying by ``D(φ)`` removes the poles:
   ``v(φ) = D(φ) u_T(φ) = -c_N A_T g(φ) + c_T D(φ)``, and the roots of the 2D cross product
   ``F(φ) = v(φ) × d(φ)`` (a trigonometric polynomial of degree 2, so at most four roots) are
   bracketed by sign changes on a grid of ``grid_points`` angles and refined by Brent's method to
   machine precision. A root is a candidate only if ``D > 0`` (so ``r_N > 0``, as ``c_N < 0``) and
   ``v · d >= 0`` (``s >= 0``: friction opposes slip; the other roots are anti-parallel).

All candidates (the stick solution projected onto the cone -- which covers stick on the cone's
boundary, where ``s = 0`` -- and each sliding root) are scored by the local De Saxcé
natural-map residual; exact ones (residual below 1e-12 of the candidate's own scale
``1 + |c| + |A| |r|``) are preferred, and among several exact ones the one closest to the
contact's previous reaction is kept (so the sweep does not hop between solutions when the local
problem has several). If no exact candidate shows up (only possible at a double root, where
``F`` touches zero without changing sign, or when two roots share a grid cell), the search is
repeated on a 2048-angle grid, with local minima of ``|F|`` refined by golden-section search;
if even that finds nothing exact, the best candidate is used and counted in
``info["local_failures"]``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .contact_measure import _contact_errors, _project3

__all__ = ["solve_local", "inverse3", "angle_grid"]

# Local-solve outcome codes (counted in ``info``).
_SEPARATE, _STICK, _SLIDE, _INEXACT = 0, 1, 2, -1

_DENSE_GRID = 2048

_EXACT = 1e-12  # a local candidate is "exact" when its residual is below _EXACT x local scale


@njit(cache=True, error_model="numpy")
def _local_residual(A, c, mu, r, tmp):
    u0 = c[0] + A[0, 0] * r[0] + A[0, 1] * r[1] + A[0, 2] * r[2]
    u1 = c[1] + A[1, 0] * r[0] + A[1, 1] * r[1] + A[1, 2] * r[2]
    u2 = c[2] + A[2, 0] * r[0] + A[2, 1] * r[1] + A[2, 2] * r[2]
    res, vio = _contact_errors(mu, r[0], r[1], r[2], u0, u1, u2, tmp)
    return max(res, vio)


@njit(cache=True, error_model="numpy")
def _cross(A, c, mu, phi):
    """F(φ) = v(φ) × d(φ), v = D(φ) u_T(φ) (see the module docstring)."""
    return _cross_cs(A, c, mu, math.cos(phi), math.sin(phi))


@njit(cache=True, error_model="numpy")
def _cross_cs(A, c, mu, cp, sp):
    """_cross from cos φ, sin φ."""
    d = A[0, 0] - mu * (A[0, 1] * cp + A[0, 2] * sp)
    v1 = -c[0] * (A[1, 0] - mu * (A[1, 1] * cp + A[1, 2] * sp)) + c[1] * d
    v2 = -c[0] * (A[2, 0] - mu * (A[2, 1] * cp + A[2, 2] * sp)) + c[2] * d
    return v1 * sp - v2 * cp


@njit(cache=True, error_model="numpy")
def _brent(A, c, mu, a, b, fa, fb):
    """Root of _cross in [a, b] with fa * fb <= 0 (Brent's zeroin), to machine precision."""
    if fa == 0.0:
        return a
    if fb == 0.0:
        return b
    cc, fc = a, fa
    d = b - a
    e = d
    for _ in range(200):
        if (fb > 0.0) == (fc > 0.0):
            cc, fc = a, fa
            d = b - a
            e = d
        if abs(fc) < abs(fb):
            a, b, cc = b, cc, b
            fa, fb, fc = fb, fc, fb
        tol1 = 2.0 * 2.220446049250313e-16 * abs(b) + 1e-300
        xm = 0.5 * (cc - b)
        if abs(xm) <= tol1 or fb == 0.0:
            return b
        if abs(e) >= tol1 and abs(fa) > abs(fb):
            s = fb / fa
            if a == cc:
                p = 2.0 * xm * s
                q = 1.0 - s
            else:
                q = fa / fc
                rr = fb / fc
                p = s * (2.0 * xm * q * (q - rr) - (b - a) * (rr - 1.0))
                q = (q - 1.0) * (rr - 1.0) * (s - 1.0)
            if p > 0.0:
                q = -q
            p = abs(p)
            if 2.0 * p < min(3.0 * xm * q - abs(tol1 * q), abs(e * q)):
                e = d
                d = p / q
            else:
                d = xm
                e = d
        else:
            d = xm
            e = d
        a, fa = b, fb
        if abs(d) > tol1:
            b += d
        else:
            b += tol1 if xm > 0.0 else -tol1
        fb = _cross(A, c, mu, b)
    return b


@njit(cache=True, error_model="numpy")
def _golden_min_abs(A, c, mu, a, b):
    """Minimizer of |F| on [a, b] by golden-section search (for double roots)."""
    g = 0.6180339887498949
    x1 = b - g * (b - a)
    x2 = a + g * (b - a)
    f1 = abs(_cross(A, c, mu, x1))
    f2 = abs(_cross(A, c, mu, x2))
    for _ in range(80):
        if f1 < f2:
            b, x2, f2 = x2, x1, f1
            x1 = b - g * (b - a)
            f1 = abs(_cross(A, c, mu, x1))
        else:
            a, x1, f1 = x1, x2, f2
            x2 = a + g * (b - a)
            f2 = abs(_cross(A, c, mu, x2))
    return 0.5 * (a + b)


@njit(cache=True, error_model="numpy")
def _slide_candidate(A, c, mu, phi, cand):
    """cand <- sliding reaction at angle φ. False unless it is a genuine slide: r_N > 0
    (D(φ) > 0, as c_N < 0) and slip along +d, so that friction opposes it (v · d >= 0)."""
    cp = math.cos(phi)
    sp = math.sin(phi)
    d = A[0, 0] - mu * (A[0, 1] * cp + A[0, 2] * sp)
    if not d > 0.0:
        return False
    rn = -c[0] / d
    if not rn > 0.0:
        return False
    v1 = -c[0] * (A[1, 0] - mu * (A[1, 1] * cp + A[1, 2] * sp)) + c[1] * d
    v2 = -c[0] * (A[2, 0] - mu * (A[2, 1] * cp + A[2, 2] * sp)) + c[2] * d
    if v1 * cp + v2 * sp < 0.0:
        return False
    cand[0] = rn
    cand[1] = -mu * rn * cp
    cand[2] = -mu * rn * sp
    return True


@njit(cache=True, error_model="numpy")
def _local_relative_residual(A, c, mu, r, a_norm, tmp):
    """The local residual in the contact's own scales (as ``_measure_kernel`` measures a
    contact): u = A r + c against sigma = max_k (|c_k| + sum_j |A_kj r_j|), r against
    max(|r|_inf, sigma / max|A|)."""
    u = np.empty(3)
    sigma = 0.0
    a_max = 0.0
    for k in range(3):
        acc = c[k]
        size = abs(c[k])
        for j in range(3):
            t = A[k, j] * r[j]
            acc += t
            size += abs(t)
            a_max = max(a_max, abs(A[k, j]))
        u[k] = acc
        sigma = max(sigma, size)
    if sigma == 0.0:
        return 0.0
    zeta = max(abs(r[0]), abs(r[1]), abs(r[2]), sigma / a_max if a_max > 0.0 else 0.0)
    if zeta == 0.0:
        zeta = 1.0  # r = 0 with a zero block: only the sign of u matters
    res, vio = _contact_errors(mu, r[0] / zeta, r[1] / zeta, r[2] / zeta, u[0] / sigma, u[1] / sigma, u[2] / sigma, tmp)
    return max(res, vio)


@njit(cache=True, error_model="numpy")
def _consider(A, c, mu, cand, rp, a_norm, best, state, tmp):
    """Keep cand in best if it beats the current best. A candidate is exact when its local
    residual, in the contact's own scales (``_local_relative_residual``), is at rounding
    level. state = [best residual, best distance to r_prev, best-is-exact flag]; exact beats
    inexact, then closest to r_prev."""
    res = _local_relative_residual(A, c, mu, cand, a_norm, tmp)
    if not np.isfinite(res):
        return
    dist = (cand[0] - rp[0]) ** 2 + (cand[1] - rp[1]) ** 2 + (cand[2] - rp[2]) ** 2
    exact = res <= _EXACT
    take = False
    if exact:
        take = state[2] == 0.0 or dist < state[1]
    elif state[2] == 0.0:
        take = res < state[0]
    if take:
        best[0], best[1], best[2] = cand[0], cand[1], cand[2]
        state[0] = res
        state[1] = dist
        state[2] = 1.0 if exact else 0.0


@njit(cache=True, error_model="numpy")
def _scan(A, c, mu, phis, fs, rp, a_norm, best, state, cand, tmp, with_minima):
    """Bracket sign changes of F on the closed grid (phis, fs), refine, consider the candidates;
    optionally also the local minima of |F| (double roots)."""
    m = phis.shape[0]
    for k in range(m):
        k1 = (k + 1) % m
        a = phis[k]
        b = phis[k1] if k1 > 0 else phis[0] + 2.0 * math.pi
        fa, fb = fs[k], fs[k1]
        if fa == 0.0 or (fa > 0.0) != (fb > 0.0):
            if fb == 0.0 and fa != 0.0:
                continue  # the root at b is the next cell's left end
            phi = _brent(A, c, mu, a, b, fa, fb)
            if _slide_candidate(A, c, mu, phi, cand):
                _consider(A, c, mu, cand, rp, a_norm, best, state, tmp)
        elif with_minima:
            km = (k - 1) % m
            if abs(fa) <= abs(fs[km]) and abs(fa) <= abs(fb):
                a0 = phis[km] if km < k else phis[km] - 2.0 * math.pi
                phi = _golden_min_abs(A, c, mu, a0, b)
                if _slide_candidate(A, c, mu, phi, cand):
                    _consider(A, c, mu, cand, rp, a_norm, best, state, tmp)


@njit(cache=True, error_model="numpy")
def _solve_local(A, Ainv, c, mu, rp, phis, grid_cos, grid_sin, out):
    """Exact solution of the one-contact problem u = A r + c (A positive definite here, after
    any proximal regularization). out <- r. Returns a _SEPARATE/_STICK/_SLIDE/_INEXACT code."""
    if c[0] >= 0.0:  # (1) separation
        out[0], out[1], out[2] = 0.0, 0.0, 0.0
        return _SEPARATE
    if mu == 0.0:  # frictionless: r_T = 0, u_N = 0
        out[0], out[1], out[2] = (-c[0] / A[0, 0] if A[0, 0] > 0.0 else 0.0), 0.0, 0.0
        return _STICK if out[0] > 0.0 else _INEXACT
    # (2) stick
    s0 = -(Ainv[0, 0] * c[0] + Ainv[0, 1] * c[1] + Ainv[0, 2] * c[2])
    s1 = -(Ainv[1, 0] * c[0] + Ainv[1, 1] * c[1] + Ainv[1, 2] * c[2])
    s2 = -(Ainv[2, 0] * c[0] + Ainv[2, 1] * c[1] + Ainv[2, 2] * c[2])
    if math.sqrt(s1 * s1 + s2 * s2) < mu * s0:
        out[0], out[1], out[2] = s0, s1, s2
        return _STICK
    # (3) slide: candidates scored by the local residual
    tmp = np.empty(3)
    cand = np.empty(3)
    state = np.array([np.inf, np.inf, 0.0])
    a_norm = 0.0
    for i in range(3):
        a_norm = max(a_norm, abs(A[i, 0]) + abs(A[i, 1]) + abs(A[i, 2]))
    _project3(mu, s0, s1, s2, cand)  # stick projected (covers stick on the cone's boundary)
    _consider(A, c, mu, cand, rp, a_norm, out, state, tmp)
    m = phis.shape[0]
    fs = np.empty(m)
    for k in range(m):
        fs[k] = _cross_cs(A, c, mu, grid_cos[k], grid_sin[k])
    _scan(A, c, mu, phis, fs, rp, a_norm, out, state, cand, tmp, False)
    if state[2] == 0.0:  # no exact candidate yet: double root? dense grid with minima
        dense = np.empty(_DENSE_GRID)
        fd = np.empty(_DENSE_GRID)
        for k in range(_DENSE_GRID):
            dense[k] = 2.0 * math.pi * k / _DENSE_GRID
            fd[k] = _cross(A, c, mu, dense[k])
        _scan(A, c, mu, dense, fd, rp, a_norm, out, state, cand, tmp, True)
    if state[2] == 0.0:
        if not np.isfinite(state[0]):
            out[0], out[1], out[2] = rp[0], rp[1], rp[2]
        return _INEXACT
    return _SLIDE if out[0] > 0.0 and math.sqrt(out[1] ** 2 + out[2] ** 2) >= mu * out[0] * (1 - 1e-12) else _STICK


@njit(cache=True, error_model="numpy")
def _inverse3(A, out):
    """out <- A^{-1} by cofactors (NaN if singular); returns det."""
    c00 = A[1, 1] * A[2, 2] - A[1, 2] * A[2, 1]
    c01 = A[1, 2] * A[2, 0] - A[1, 0] * A[2, 2]
    c02 = A[1, 0] * A[2, 1] - A[1, 1] * A[2, 0]
    det = A[0, 0] * c00 + A[0, 1] * c01 + A[0, 2] * c02
    if det == 0.0:
        out[:, :] = np.nan
        return det
    out[0, 0] = c00 / det
    out[1, 0] = c01 / det
    out[2, 0] = c02 / det
    out[0, 1] = (A[0, 2] * A[2, 1] - A[0, 1] * A[2, 2]) / det
    out[1, 1] = (A[0, 0] * A[2, 2] - A[0, 2] * A[2, 0]) / det
    out[2, 1] = (A[0, 1] * A[2, 0] - A[0, 0] * A[2, 1]) / det
    out[0, 2] = (A[0, 1] * A[1, 2] - A[0, 2] * A[1, 1]) / det
    out[1, 2] = (A[0, 2] * A[1, 0] - A[0, 0] * A[1, 2]) / det
    out[2, 2] = (A[0, 0] * A[1, 1] - A[0, 1] * A[1, 0]) / det
    return det


_GRIDS: dict[int, tuple] = {}


def _grid(points: int) -> tuple:
    """(φ, cos φ, sin φ) on ``points`` equally spaced angles in [0, 2π)."""
    grid = _GRIDS.get(points)
    if grid is None:
        phis = 2.0 * np.pi * np.arange(points) / points
        grid = _GRIDS[points] = (phis, np.cos(phis), np.sin(phis))
    return grid


solve_local, inverse3, angle_grid = _solve_local, _inverse3, _grid
