"""Exact reformulations of the bounded LCP used by the Lemke, PGS and Siconos routes.

1. :func:`eliminate_free` -- Schur complement of the free variables (velocities and bilateral
   multipliers in Peiret 2016 Eq. 30). With f the free and b the bounded indices,

       z_f = -M_ff^{-1} (q_f + M_fb z_b),
       BLCP(M_bb - M_bf M_ff^{-1} M_fb,  q_b - M_bf M_ff^{-1} q_f,  lo_b, hi_b).

   Requires a nonsingular M_ff (the mass matrix plus independent bilateral constraints).

2. :func:`split_boxes` -- a BLCP without free variables as a standard LCP(q', M'). With
   z = z0 + S x, where for each non-fixed index z0_i = lo_i, S_ii = +1 (lower-bounded or boxed)
   or z0_i = hi_i, S_ii = -1 (upper-bounded only), and a mirror multiplier y_i >= 0 for every
   finite box (w_i = w_i^+ - y_i):

       [ S M S   E ] [x]   [ S (M z0 + q) ]
       [ -E^T    0 ] [y] + [   hi - lo    ]  >= 0,  complementary to (x, y) >= 0,

   E selecting the boxed indices. Fixed indices (lo = hi) are constants and drop out. If M is
   positive semidefinite the split matrix is too, hence copositive-plus (Lemke processes it).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla

from .problem import BoundedLCP
from .result import Status, measure
from .scaling import equilibrate

__all__ = [
    "SingularFreeBlock",
    "FreeElimination",
    "eliminate_free",
    "eliminate_free_or_report",
    "BoxSplit",
    "split_boxes",
]

# M_ff counts as singular when LAPACK's reciprocal condition estimate falls below this.
_RCOND_LIMIT = 1000.0 * np.finfo(float).eps


class SingularFreeBlock(ValueError):
    """The free-variable block M_ff is singular, so it cannot be eliminated."""


class _ScaledLU:
    """LU of the equilibrated block ``diag(row) M_ff diag(col)``; ``solve(b)`` returns
    ``M_ff^{-1} b = col * (LU^{-1} (row * b))`` (exact scalings: powers of two)."""

    def __init__(self, lu, row, col):
        self.lu, self.row, self.col = lu, row, col

    def solve(self, b):
        scaled = (self.row[:, None] * b) if b.ndim == 2 else self.row * b
        x = sla.lu_solve(self.lu, scaled, check_finite=False)
        return (self.col[:, None] * x) if b.ndim == 2 else self.col * x


@dataclass(frozen=True, eq=False)
class FreeElimination:
    """Result of :func:`eliminate_free`: the reduced BLCP and what is needed to recover z."""

    reduced: BoundedLCP
    free: np.ndarray  # indices f
    bounded: np.ndarray  # indices b
    lu: object  # _ScaledLU of M_ff (None without free variables)
    M_fb: np.ndarray
    q_f: np.ndarray
    n: int

    M_ff: np.ndarray | None = None

    def recover(self, z_bounded: np.ndarray) -> np.ndarray:
        """Full z from the reduced solution z_b: z_f = -M_ff^-1 (q_f + M_fb z_b), with up to
        :data:`REFINEMENTS` steps of iterative refinement (Skeel 1980: in the working precision
        they make the solve componentwise backward stable, so that each free row's own residual,
        which the framework's measure judges against that row's scale, is at rounding level and
        not at the rounding of the block's largest rows)."""
        z = np.empty(self.n)
        z[self.bounded] = z_bounded
        if self.free.size:
            rhs = self.q_f + self.M_fb @ z_bounded
            z_f = -self.lu.solve(rhs)
            if self.M_ff is not None:
                scale = np.abs(self.M_ff) @ np.abs(z_f) + np.abs(rhs)
                for _ in range(REFINEMENTS):
                    residual = self.M_ff @ z_f + rhs
                    if not np.any(np.abs(residual) > 4.0 * np.finfo(float).eps * scale):
                        break
                    z_f = z_f - self.lu.solve(residual)
            z[self.free] = z_f
        return z

    def starting_point(self, initial_guess) -> np.ndarray:
        """The reduced problem's starting z of an iterative method: ``initial_guess`` (a full
        z of length n, e.g. the previous step's solution) restricted to the bounded variables,
        or 0, clipped into the bounds; a guess of another shape or with NaN/inf is a
        ``ValueError``."""
        reduced = self.reduced
        if initial_guess is None:
            return np.clip(np.zeros(reduced.n), reduced.lo, reduced.hi)
        guess = np.asarray(initial_guess, dtype=np.float64)
        if guess.shape != (self.n,) or not np.all(np.isfinite(guess)):
            raise ValueError(f"initial_guess must be a finite vector of shape ({self.n},), got shape {guess.shape}")
        return np.clip(guess[self.bounded], reduced.lo, reduced.hi)

    def sweep_result(self, problem, z, sweeps, converged, residual, description, method, tolerance):
        """The result of an iterative method's sweeps on the reduced problem (pgs, block-gs):
        ``z`` recovered to the full problem and measured there, ``SOLVED`` if the sweeps met
        their stopping test (the measure still judges it), else ``MAX_ITERATIONS``."""
        status = Status.SOLVED if converged else Status.MAX_ITERATIONS
        return measure(
            problem,
            self.recover(z),
            status,
            sweeps,
            f"{description}: {status.name.lower()} after {sweeps} sweeps, reduced residual {residual:.3g}",
            method,
            tolerance,
        )


REFINEMENTS = 3
"""Iterative-refinement steps at most of :meth:`FreeElimination.recover`."""


def eliminate_free(problem: BoundedLCP) -> FreeElimination:
    """Schur-complement the free variables out of ``problem`` (see module docstring)."""
    free_mask = problem.free
    free = np.flatnonzero(free_mask)
    bounded = np.flatnonzero(~free_mask)
    M, q = problem.M, problem.q
    if free.size == 0:
        return FreeElimination(problem, free, bounded, None, np.zeros((0, bounded.size)), np.zeros(0), problem.n)
    M_ff = M[np.ix_(free, free)]
    M_fb = M[np.ix_(free, bounded)]
    M_bf = M[np.ix_(bounded, free)]
    # Equilibrate M_ff first (solvers.scaling; exact powers of two): a mass matrix spanning 1e-9 kg
    # and 1e6 kg is badly scaled, not singular, and its condition is judged after scaling.
    nf = free.size
    scaled, _, _, _, row, col = equilibrate(M_ff, np.zeros(nf), np.zeros(nf), np.zeros(nf))
    with warnings.catch_warnings():  # singularity is judged by the rcond test below
        warnings.simplefilter("ignore", sla.LinAlgWarning)
        lu = sla.lu_factor(scaled, check_finite=False)
    anorm = np.abs(scaled).sum(axis=0).max()
    rcond, _ = sla.lapack.dgecon(lu[0], anorm, norm="1")
    if not rcond > _RCOND_LIMIT:
        raise SingularFreeBlock(
            f"the block of the {free.size} free variables is singular (reciprocal condition {rcond:.2g} after "
            "equilibration); it cannot be eliminated"
        )
    factor = _ScaledLU(lu, row, col)
    solved = factor.solve(np.column_stack([M_fb, q[free]]))
    reduced_M = M[np.ix_(bounded, bounded)] - M_bf @ solved[:, :-1]
    reduced_q = q[bounded] - M_bf @ solved[:, -1]
    reduced = BoundedLCP(
        np.ascontiguousarray(reduced_M), reduced_q, problem.lo[bounded].copy(), problem.hi[bounded].copy()
    )
    return FreeElimination(reduced, free, bounded, factor, M_fb, q[free].copy(), problem.n, M_ff)


def eliminate_free_or_report(problem: BoundedLCP, method: str, tolerance: float):
    """``(elimination, None)``, or ``(None, result)`` with a ``SINGULAR_BASIS`` result saying
    why M_ff could not be eliminated -- the shared first step of the reduced-problem methods."""
    try:
        return eliminate_free(problem), None
    except SingularFreeBlock as exc:
        return None, measure(problem, np.zeros(problem.n), Status.SINGULAR_BASIS, 0, str(exc), method, tolerance)


@dataclass(frozen=True, eq=False)
class BoxSplit:
    """Result of :func:`split_boxes`: LCP(q', M') and the map back to z."""

    M: np.ndarray
    q: np.ndarray
    z0: np.ndarray  # (n,)
    sign: np.ndarray  # (n,) entries of S: +1, -1, or 0 for fixed
    moving: np.ndarray  # indices of non-fixed variables (the x block)

    def recover(self, x: np.ndarray) -> np.ndarray:
        """z of the bounded problem from the split LCP's solution ``x``."""
        z = self.z0.copy()
        z[self.moving] += self.sign[self.moving] * x[: self.moving.size]
        return z


def split_boxes(problem: BoundedLCP) -> BoxSplit:
    """Standard LCP equivalent to a BLCP with no free variables (see module docstring)."""
    lo, hi = problem.lo, problem.hi
    if problem.free.any():
        raise ValueError("split_boxes needs a problem without free variables; call eliminate_free first")
    lower_finite = np.isfinite(lo)
    upper_finite = np.isfinite(hi)
    fixed = lo == hi
    sign = np.where(fixed, 0.0, np.where(lower_finite, 1.0, -1.0))
    z0 = np.where(lower_finite, lo, hi)
    moving = np.flatnonzero(~fixed)
    boxed = np.flatnonzero(lower_finite & upper_finite & ~fixed)
    s = sign[moving]
    base = problem.M @ z0 + problem.q
    m, k = moving.size, boxed.size
    big = np.zeros((m + k, m + k))
    big[:m, :m] = s[:, None] * problem.M[np.ix_(moving, moving)] * s[None, :]
    position = np.searchsorted(moving, boxed)  # row of each boxed index in the x block
    big[position, m + np.arange(k)] = 1.0
    big[m + np.arange(k), position] = -1.0
    rhs = np.concatenate([s * base[moving], hi[boxed] - lo[boxed]])
    return BoxSplit(big, rhs, z0, sign, moving)
