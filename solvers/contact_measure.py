"""The framework's measure of a friction-contact answer: the projection onto the Coulomb cone and
the per-contact relative residual that decides ``SOLVED`` for every method (ours and Siconos').

The problem ``u = W r + b``, ``r_i`` in ``K_i = {r_N >= 0, |r_T| <= mu_i r_N}``, is stated in
:mod:`solvers.friction_contact`.

Residual (computed here, never trusted from a method)
-----------------------------------------------------
The natural map of De Saxcé's formulation, per contact ``||r_i - proj_{K_i}(r_i - û_i)||_2``
(zero exactly at a solution), together with the cone violation ``||r_i - proj_{K_i}(r_i)||_2``,
each measured per contact against that contact's own scales -- ``r_i`` against its reaction
scale, ``u_i`` against its velocity scale, the scales of :mod:`solvers.result` taken per contact
-- and combined as the maximum over contacts. A problem and its rescaling by one positive factor
per contact (``D W D``, ``D b``: the same physics in other units) are judged alike. The
projection onto ``K = K_mu`` is in closed form: for ``x = (x_N, x_T)``,
``t = |x_T|``: ``x`` if ``t <= mu x_N``; ``0`` if ``mu t <= -x_N`` (the polar cone); otherwise
``p (1, mu x_T / t)`` with ``p = (x_N + mu t) / (1 + mu^2)``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .result import finite_scales_given, normalized, static_scales

__all__ = ["contact_errors", "project_on_cone", "framework_residual"]

_EPS = float(np.finfo(np.float64).eps)


@njit(cache=True, error_model="numpy")
def _project3(mu, xn, x1, x2, out):
    """out <- projection of (xn, x1, x2) onto K_mu = {|x_T| <= mu x_N} (closed form)."""
    t = math.sqrt(x1 * x1 + x2 * x2)
    if t <= mu * xn and xn >= 0.0:  # (xn >= 0 matters for mu = 0, where the cone is a ray)
        out[0], out[1], out[2] = xn, x1, x2
    elif mu * t <= -xn:
        out[0], out[1], out[2] = 0.0, 0.0, 0.0
    else:  # t > 0 here
        p = (xn + mu * t) / (1.0 + mu * mu)
        out[0], out[1], out[2] = p, mu * p * x1 / t, mu * p * x2 / t


@njit(cache=True, error_model="numpy")
def _contact_errors(mu, r0, r1, r2, u0, u1, u2, tmp):
    """(natural-map residual, cone distance) of one contact."""
    un_hat = u0 + mu * math.sqrt(u1 * u1 + u2 * u2)
    _project3(mu, r0 - un_hat, r1 - u1, r2 - u2, tmp)
    residual = math.sqrt((r0 - tmp[0]) ** 2 + (r1 - tmp[1]) ** 2 + (r2 - tmp[2]) ** 2)
    _project3(mu, r0, r1, r2, tmp)
    violation = math.sqrt((r0 - tmp[0]) ** 2 + (r1 - tmp[1]) ** 2 + (r2 - tmp[2]) ** 2)
    return residual, violation


@njit(cache=True)
def _measure_statics(W, b):
    """The parts of ``_measure_kernel`` that do not depend on ``r``
    (:func:`~solvers.result.static_scales` with no bounds): ``(|W|, d0, velocity, lo, hi)``,
    computed once by the solvers that measure many iterates of one problem."""
    n = b.shape[0]
    hi = np.full(n, np.inf)
    lo = -hi
    abs_w, d0, velocity = static_scales(W, b, lo, hi)
    return abs_w, d0, velocity, lo, hi


@njit(cache=True)
def _measure_kernel(W, b, mu, r, u):
    """``_measure_given`` with the static parts computed here."""
    return _measure_given(W, b, mu, r, u, _measure_statics(W, b))


@njit(cache=True, error_model="numpy")
def _measure_given(W, b, mu, r, u, statics):
    """u <- W r + b; returns (relative residual, worst contact, absolute residual, absolute cone
    violation), NaN (worst -1) if r or u is not finite. Per contact c the scales of
    :mod:`solvers.result` (one implementation, :func:`~solvers.result.finite_scales`): velocity
    scale ``s_c = max`` of its three row scales, reaction scale
    ``zeta_c = max(min`` of its three variable scales, ``|r_c|_inf)``; the error is De Saxcé's
    natural map in ``r~ = r / zeta_c``, ``u~ = u / s_c`` (2-norm over the contact), with the
    cone violation of ``r~`` and the normal complementarity ``|r~_N - max(r~_N - u_N / s_N, 0)|``
    against the normal row's own scale ``s_N``."""
    n = b.shape[0]
    s = np.empty(n)
    zeta = np.empty(n)
    abs_w, d0, velocity, lo, hi = statics
    growth = finite_scales_given(W, b, lo, hi, r, u, s, zeta, abs_w, d0, velocity)
    if growth != growth:
        return np.nan, -1, np.nan, np.nan
    relative, worst, residual, violation = contact_errors(mu, r, u, s, zeta)
    return max(relative, _EPS * growth), worst, residual, violation


@njit(cache=True, error_model="numpy")
def contact_errors(mu, r, u, s, zeta):
    """(relative residual, worst contact, absolute residual, absolute cone violation) of the
    reactions r and velocities u = W r + b given the row scales s and variable scales zeta
    (``_measure_given``; shared with :func:`solvers.sparse_measure.csr_friction_contact_measure`)."""
    n = r.shape[0]
    residual = 0.0
    violation = 0.0
    relative = 0.0
    worst = -1
    tmp = np.empty(3)
    for c in range(n // 3):
        k = 3 * c
        res, vio = _contact_errors(mu[c], r[k], r[k + 1], r[k + 2], u[k], u[k + 1], u[k + 2], tmp)
        residual = max(residual, res)
        violation = max(violation, vio)
        sc = max(s[k], s[k + 1], s[k + 2])
        zc = max(min(zeta[k], zeta[k + 1], zeta[k + 2]), abs(r[k]), abs(r[k + 1]), abs(r[k + 2]))
        ur0 = normalized(u[k], sc) if sc > 0.0 else 0.0
        ur1 = normalized(u[k + 1], sc) if sc > 0.0 else 0.0
        ur2 = normalized(u[k + 2], sc) if sc > 0.0 else 0.0
        rn = normalized(r[k], zc)
        res, vio = _contact_errors(mu[c], rn, normalized(r[k + 1], zc), normalized(r[k + 2], zc), ur0, ur1, ur2, tmp)
        # the normal complementarity r_N >= 0 _|_ u_N >= 0 alone, against the normal row's own scale
        # (a necessary condition in every case -- separation, stick, slide -- which the common
        # contact scale, set by a large slip, would judge too loosely)
        un = normalized(u[k], s[k]) if s[k] > 0.0 else 0.0
        normal = abs(rn - max(rn - un, 0.0))
        error = max(res, vio, normal)
        if error != error:  # NaN
            error = np.inf
        if not error <= relative:
            relative = error
            worst = c
    return relative, worst, residual, violation


def project_on_cone(x, mu):
    """Projection of the 3-vector ``x = (x_N, x_T1, x_T2)`` onto ``{|x_T| <= mu x_N}``."""
    out = np.empty(3)
    x = np.asarray(x, dtype=np.float64)
    _project3(float(mu), float(x[0]), float(x[1]), float(x[2]), out)
    return out


def framework_residual(W, b, mu):
    """``r -> relative residual`` of the framework on the problem (W, b, mu)."""
    u = np.empty(b.shape[0])
    statics = _measure_statics(W, b)

    def residual(r):
        return float(_measure_given(W, b, mu, r, u, statics)[0])

    return residual
