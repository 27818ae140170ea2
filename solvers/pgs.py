"""Projected Gauss–Seidel / SOR for large bounded LCPs.

After the free variables are eliminated (:func:`solvers.reformulate.eliminate_free`; the
saddle-point rows of Peiret 2016 Eq. 30 have zero diagonal, which PGS cannot use), each sweep
updates, for i = 1..n,

    z_i <- clip(z_i - omega * w_i / M_ii, lo_i, hi_i),   w_i = (M z + q)_i with the latest z,

the projected SOR iteration (Cottle, Pang & Stone 1992, Alg. 5.2.1). It converges for symmetric
positive (semi)definite M with 0 < omega < 2; it is not a direct method, and may need many
sweeps on ill-conditioned problems. Every ``check_every`` sweeps the relative natural-map
residual of the reduced problem is measured; the solve stops when it is at most
``0.1 x tolerance``. Reaching ``max_sweeps`` returns ``MAX_ITERATIONS`` with the last iterate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from .options import check_count, check_positive
from .reformulate import eliminate_free_or_report
from .result import Status, measure, relative_residual

NAME = "pgs"


@dataclass(frozen=True)
class Options:
    """Options of ``method="pgs"``.

    max_sweeps : sweep limit.  relaxation : omega in (0, 2).  check_every : sweeps between
    residual checks.  initial_guess : starting z (length n), e.g. the previous step's solution.
    """

    max_sweeps: int = 100_000
    relaxation: float = 1.0
    check_every: int = 5
    initial_guess: object = None

    def __post_init__(self):
        check_count("max_sweeps", self.max_sweeps)
        check_positive("relaxation", self.relaxation)
        if not self.relaxation < 2.0:
            raise ValueError(f"option relaxation must be in (0, 2), got {self.relaxation!r}")
        check_count("check_every", self.check_every)


@njit(cache=True)
def projected_sor(M, q, lo, hi, z, omega, max_sweeps, check_every, stop):
    """Sweeps in place on z. Returns (sweeps, converged, relative residual)."""
    n = q.shape[0]
    sweeps = 0
    residual = relative_residual(M, q, lo, hi, z)
    while residual > stop and sweeps < max_sweeps:
        for _ in range(min(check_every, max_sweeps - sweeps)):  # never more than max_sweeps in all
            sweeps += 1
            for i in range(n):
                s = q[i]
                for j in range(n):
                    s += M[i, j] * z[j]
                z[i] = min(max(z[i] - omega * s / M[i, i], lo[i]), hi[i])
        residual = relative_residual(M, q, lo, hi, z)
    return sweeps, residual <= stop, residual


def run(problem, options: Options, tolerance: float):
    """PSOR on the problem with its free variables eliminated."""
    n = problem.n
    elimination, failure = eliminate_free_or_report(problem, NAME, tolerance)
    if failure is not None:
        return failure
    reduced = elimination.reduced
    diagonal = np.diag(reduced.M)
    if reduced.n and not np.all(diagonal > 0):
        i = int(np.flatnonzero(~(diagonal > 0))[0])
        return measure(
            problem,
            np.zeros(n),
            Status.NUMERICAL_ERROR,
            0,
            f"PGS needs a positive diagonal; reduced M[{i}, {i}] = {diagonal[i]:.3g}",
            NAME,
            tolerance,
        )
    z = elimination.starting_point(options.initial_guess)
    sweeps, converged, residual = projected_sor(
        reduced.M,
        reduced.q,
        reduced.lo,
        reduced.hi,
        z,
        options.relaxation,
        options.max_sweeps,
        options.check_every,
        0.1 * tolerance,
    )
    return elimination.sweep_result(
        problem, z, sweeps, converged, residual, f"projected SOR (omega={options.relaxation})", NAME, tolerance
    )
