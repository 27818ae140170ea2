"""Derivatives of a bounded LCP's solution with respect to its data, on the solution's active set.

The bounded LCP (Peiret 2016 Eq. 30; :class:`~solvers.problem.BoundedLCP`) asks for z with
lo <= z <= hi and w = M z + q such that w_i >= 0 where z_i = lo_i, w_i <= 0 where z_i = hi_i and
w_i = 0 in between. Its solution is piecewise smooth in (M, q, lo, hi): on a fixed active set —
the unknowns at their lower bound (L), at their upper bound (U) and between (F) — it is

    z_L = lo_L,   z_U = hi_U,   M_FF z_F = -(q_F + M_FB z_B),   B = L u U,

so its derivative is one linear solve with M_FF (implicit differentiation; de Avila Belbute-Peres
et al. 2018, Werling et al. 2021 for a boxed LCP):

    dz_B = (dlo_L, dhi_U),   M_FF dz_F = -(dq_F + dM_F. z + M_FB dz_B).

This holds where the active set does not change under a small perturbation: every bounded
unknown strictly complementary (w_i != 0 at its bound) and every interior one strictly inside its
bounds. Where that fails the solution has one-sided derivatives only (a switch: a contact that
is about to stick, slip, touch or lift); :func:`active_set` reports those rows as
``degenerate``, and the derivatives here are those of the active set as found (the one-sided
derivative on the side of that set).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.linalg

__all__ = ["ActiveSet", "active_set", "solution_jvp", "solution_vjp"]


@dataclass(frozen=True)
class ActiveSet:
    """The active set of a bounded LCP's solution z (boolean masks over the unknowns).

    Attributes
    ----------
    lower, upper, interior : (n,) bool arrays
        z_i at lo_i, at hi_i (a zero-width box counts as lower), strictly between.
    degenerate : (n,) bool array
        Rows where the set may change under an arbitrarily small perturbation: a bounded
        unknown with w_i = 0 (weakly complementary) or an interior one within the tolerance of a
        bound. Derivatives there are one-sided.
    """

    lower: np.ndarray
    upper: np.ndarray
    interior: np.ndarray
    degenerate: np.ndarray

    @property
    def switches(self) -> int:
        """The number of degenerate rows."""
        return int(np.count_nonzero(self.degenerate))


def active_set(M, q, lo, hi, z, tolerance: float = 1e-9) -> ActiveSet:
    """The active set of the solution ``z`` of the bounded LCP (M, q, lo, hi). An unknown is at
    a bound when it is within ``tolerance`` times (1 + |bound|) of it; a row is degenerate where
    w = M z + q is within ``tolerance`` times its scale (1 + |M_i.| |z| + |q_i|) of zero at a
    bound, or an interior unknown lies within 100 ``tolerance`` of a bound."""
    M, q, lo, hi, z = (np.asarray(a, dtype=float) for a in (M, q, lo, hi, z))
    w = M @ z + q
    scale = 1.0 + np.abs(M) @ np.abs(z) + np.abs(q)
    lo_scale = 1.0 + np.abs(np.where(np.isfinite(lo), lo, 0.0))  # a bound's own size
    hi_scale = 1.0 + np.abs(np.where(np.isfinite(hi), hi, 0.0))
    near_lo = np.isfinite(lo) & (np.abs(z - lo) <= tolerance * lo_scale)
    near_hi = np.isfinite(hi) & (np.abs(z - hi) <= tolerance * hi_scale)
    fixed = lo == hi
    # at a bound: the side the multiplier w says (w > 0 pushes up from lo, w < 0 down from hi)
    lower = fixed | (near_lo & ~(near_hi & (w < 0.0)))
    upper = ~lower & near_hi
    interior = ~lower & ~upper
    weak = (lower | upper) & ~fixed & (np.abs(w) <= tolerance * scale)
    margin = 100.0 * tolerance
    close = interior & (
        (np.isfinite(lo) & (z - lo <= margin * lo_scale)) | (np.isfinite(hi) & (hi - z <= margin * hi_scale))
    )
    return ActiveSet(lower, upper, interior, weak | close)


def _factor(M, interior):
    block = M[np.ix_(interior, interior)]
    if block.size == 0:
        return None
    with warnings.catch_warnings():  # an exactly singular block is refused below, by name
        warnings.simplefilter("ignore", scipy.linalg.LinAlgWarning)
        lu = scipy.linalg.lu_factor(block, check_finite=True)
    if not np.all(np.isfinite(lu[0])) or np.min(np.abs(np.diag(lu[0]))) == 0.0:
        raise np.linalg.LinAlgError("the interior block M_FF of the active set is singular")
    return lu


def solution_jvp(M, q, lo, hi, z, tangents, active: ActiveSet | None = None):
    """dz, the derivative of the solution ``z`` along ``tangents`` = (dM, dq, dlo, dhi) (arrays of
    the data's shapes; None for no change) on ``z``'s active set (module docstring). Raises
    numpy's LinAlgError where M_FF is singular (the interior unknowns are not unique)."""
    M, q, lo, hi, z = (np.asarray(a, dtype=float) for a in (M, q, lo, hi, z))
    active = active or active_set(M, q, lo, hi, z)
    dM, dq, dlo, dhi = (
        np.zeros_like(a) if t is None else np.asarray(t, float) for a, t in zip((M, q, lo, hi), tangents)
    )
    dz = np.zeros_like(z)
    dz[active.lower] = dlo[active.lower]
    dz[active.upper] = dhi[active.upper]
    F = active.interior
    lu = _factor(M, F)
    if lu is not None:
        B = ~F
        rhs = dq[F] + dM[F] @ z + M[np.ix_(F, B)] @ dz[B]
        dz[F] = -scipy.linalg.lu_solve(lu, rhs)
    return dz


def solution_vjp(M, q, lo, hi, z, cotangent, active: ActiveSet | None = None):
    """(dM, dq, dlo, dhi): the gradient of <cotangent, z> with respect to the data, on ``z``'s
    active set (the transpose of :func:`solution_jvp`): with M_FFᵀ y = cotangent_F,
    dq_F = -y, dM_F. = -y zᵀ, dlo_L = cotangent_L - (M_FLᵀ y), dhi_U likewise; zero elsewhere."""
    M, q, lo, hi, z = (np.asarray(a, dtype=float) for a in (M, q, lo, hi, z))
    g = np.asarray(cotangent, dtype=float)
    active = active or active_set(M, q, lo, hi, z)
    F = active.interior
    dM, dq, dlo, dhi = np.zeros_like(M), np.zeros_like(q), np.zeros_like(lo), np.zeros_like(hi)
    through = g.copy()  # d<g, z>/dz_B: direct, plus through z_F
    lu = _factor(M, F)
    if lu is not None:
        y = scipy.linalg.lu_solve(lu, g[F], trans=1)
        dq[F] = -y
        dM[F] = -np.outer(y, z)
        through[~F] -= M[np.ix_(F, ~F)].T @ y
    dlo[active.lower] = through[active.lower]
    dhi[active.upper] = through[active.upper]
    return dM, dq, dlo, dhi
