"""Bounded and unilateral bilateral rows inside the exact cone's Delassus problem.

The exact cone's step eliminates the bilateral rows of Peiret 2016 Eq. (30) as equalities (KKT)
and hands the contacts' problem u = W r + b to the friction-contact solvers. A row whose impulse is
bounded, lo <= s <= hi (:mod:`lcpdyn.bounded_rows`: a limit, a servo's effort bound, joint
friction), is not an equality. It is posed instead as one more contact of that problem, exactly,
with s = c + sigma s' and w the row's velocity residual (A v+ + C_A s - u):

* one-sided (one bound finite; lo: c = lo, sigma = 1; hi: c = hi, sigma = -1): s' >= 0 _|_
  sigma w >= 0 is a frictionless contact (mu = 0) whose normal row is sigma a (a the row);
* two-sided (c the middle, half the half width): |s'| <= half, w >= 0 at lo, w <= 0 at hi, w = 0
  between, is Coulomb's law on a tangent row t1 = a of a contact with mu = 1 whose normal force is
  held at half by a row of its own: u_N = d r_N - d half (d > 0, no velocity), so that r_N = half
  wherever the contact sticks or slides.

The remaining tangent rows are decoupled, u = d r with b = 0: their reactions vanish at any
solution. d is the row's own Delassus diagonal, so every row of the problem keeps its scale in the
framework's per-contact residual.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

__all__ = ["BoundedRows", "widened", "split"]


@dataclass(frozen=True)
class BoundedRows:
    """The bilateral rows of one problem split into equalities and embedded contacts (module
    docstring); ``equal`` and ``rows`` index the problem's (m,) rows."""

    m: int
    equal: np.ndarray
    rows: np.ndarray
    center: np.ndarray
    sign: np.ndarray
    half: np.ndarray  # inf on one-sided rows

    @classmethod
    def of(cls, bounds, rows=slice(None)) -> BoundedRows | None:
        """From impulse ``bounds`` (lower, upper) of every bilateral row (or None), taken at
        ``rows``; None where none of them is bounded."""
        if bounds is None:
            return None
        lo, hi = (np.asarray(x, float)[rows] for x in bounds)
        finite = np.isfinite(lo) | np.isfinite(hi)
        if not finite.any():
            return None
        lo_b, hi_b = lo[finite], hi[finite]
        both = np.isfinite(lo_b) & np.isfinite(hi_b)
        center = np.where(both, 0.5 * (lo_b + hi_b), np.where(np.isfinite(lo_b), lo_b, hi_b))
        sign = np.where(~both & ~np.isfinite(lo_b), -1.0, 1.0)
        half = np.where(both, 0.5 * (hi_b - lo_b), np.inf)
        return cls(lo.size, np.flatnonzero(~finite), np.flatnonzero(finite), center, sign, half)

    @property
    def two_sided(self) -> np.ndarray:
        """Which embedded rows have both bounds finite (a contact with mu = 1 and a held normal)."""
        return np.isfinite(self.half)

    def stacked(self, a) -> np.ndarray:
        """(3 k, n) rows of the embedded contacts, in the order (normal, t1, t2) of each, from the
        bounded rows ``a`` (k, n; dense or sparse)."""
        a = a.toarray() if sp.issparse(a) else np.asarray(a)
        out = np.zeros((3 * self.rows.size, a.shape[1]))
        two = self.two_sided
        out[0::3] = np.where(two[:, None], 0.0, self.sign[:, None] * a)
        out[1::3] = np.where(two[:, None], a, 0.0)
        return out

    def complete(self, W, b, start, u, compliance) -> None:
        """Writes the embedded contacts' compliance, targets and decoupled rows into ``W`` and
        ``b`` (rows from ``start``), given the bounded rows' targets ``u`` and compliance C_A."""
        two = self.two_sided
        k = self.rows.size
        at = start + 3 * np.arange(k) + np.where(two, 1, 0)  # where each row's velocity is
        W[at, at] += compliance
        b[at] += self.sign * (compliance * self.center - u)
        d = W[at, at].copy()
        d = np.where(d > 0.0, d, 1.0)
        for offset in range(3):
            own = start + 3 * np.arange(k) + offset
            dummy = own != at
            W[own[dummy], :] = 0.0
            W[:, own[dummy]] = 0.0
            W[own[dummy], own[dummy]] = d[dummy]
            b[own[dummy]] = 0.0
        normal = start + 3 * np.arange(k)
        b[normal[two]] = -d[two] * self.half[two]

    def mu(self, mu) -> np.ndarray:
        """The contacts' mu followed by the embedded ones' (1 two-sided, 0 one-sided)."""
        return np.concatenate([mu, np.where(self.two_sided, 1.0, 0.0)])

    def guess(self, guess) -> np.ndarray | None:
        """A warm start for the extended problem: the contacts' ``guess``, the embedded rows at
        their bounds' middle (two-sided: r_N = half)."""
        if guess is None:
            return None
        extra = np.zeros((self.rows.size, 3))
        extra[:, 0] = np.where(self.two_sided, self.half, 0.0)
        return np.concatenate([guess, extra.reshape(-1)])

    def impulses(self, equal, r_rows) -> np.ndarray:
        """The (m,) bilateral impulses from the equality rows' multipliers ``equal`` and the
        embedded contacts' reactions ``r_rows`` (3 k,)."""
        out = np.empty(self.m)
        out[self.equal] = equal
        r = r_rows.reshape(-1, 3)
        out[self.rows] = self.center + self.sign * np.where(self.two_sided, r[:, 1], r[:, 0])
        return out


def widened(bounded: BoundedRows | None, mu, guess):
    """(mu, guess) of the problem with ``bounded``'s contacts after the contacts' own (as they are
    without bounded rows)."""
    return (mu, guess) if bounded is None else (bounded.mu(mu), bounded.guess(guess))


def split(bounded: BoundedRows | None, r, contacts: int, equal):
    """(the contacts' reactions r[:contacts], the (m,) bilateral impulses) of a solved problem:
    ``equal`` the eliminated rows' multipliers, the bounded rows' from their contacts' reactions."""
    if bounded is None:
        return r[:contacts], equal
    return r[:contacts], bounded.impulses(equal, r[contacts:])
