"""The same bounded LCP posed to Siconos numerics -- the independent cross-check.

Route (chosen because it is correct in Debian's Siconos 4.4 build; see
``shared/notes/siconos-4.4-debian.md``): the free variables are eliminated by a Schur
complement and the boxes split into complementarity pairs (:mod:`solvers.reformulate`); the
resulting standard LCP goes to ``siconos.numerics.linearComplementarity_driver`` with one of
the solvers listed in ``SOLVERS`` (all exact there). The MLCP interface (``sn.MLCP``) is
avoided: its PGS/Lemke conversions corrupt the heap when equalities and complementarity rows
differ in number, and its DIRECT solvers keep state in C globals.

Siconos' own ``info == 0`` is never taken as success: the framework's residual decides.
Import of Siconos is lazy, so :mod:`solvers` works without it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .options import check_count, check_positive
from .reformulate import eliminate_free_or_report, split_boxes
from .result import Status, measure

NAME = "siconos"

SOLVERS = {  # name -> Siconos LCP solver constant name
    "lemke": "SICONOS_LCP_LEMKE",
    "pivot": "SICONOS_LCP_PIVOT",
    "murty": "SICONOS_LCP_MURTY",
    "newton-fb": "SICONOS_LCP_NEWTON_FB_FBLSA",
    "newton-min-fb": "SICONOS_LCP_NEWTON_MIN_FBLSA",
}


class SiconosUnavailable(ImportError):
    """Siconos numerics cannot be imported here."""


def import_siconos():
    """Return ``siconos.numerics`` or raise :class:`SiconosUnavailable` saying why."""
    try:
        import siconos.numerics as sn
    except Exception as exc:  # ImportError, or NumPy ABI errors raised as other types
        raise SiconosUnavailable(
            "method 'siconos' needs Debian's python3-siconos importable with NumPy < 2 "
            f"(see README, 'Set-up'); import failed: {exc}"
        ) from exc
    return sn


def available() -> bool:
    """Whether Siconos can be imported here."""
    try:
        import_siconos()
    except SiconosUnavailable:
        return False
    return True


@dataclass(frozen=True)
class Options:
    """Options of ``method="siconos"``: ``solver`` (a key of ``SOLVERS``), ``max_iterations``
    (Siconos iparam[0]) and ``siconos_tolerance`` (dparam[0], Siconos' own error measure)."""

    solver: str = "lemke"
    max_iterations: int = 100_000
    siconos_tolerance: float = 1e-12

    def __post_init__(self):
        if self.solver not in SOLVERS:
            raise ValueError(f"option solver must be one of {sorted(SOLVERS)}, got {self.solver!r}")
        check_count("max_iterations", self.max_iterations)
        check_positive("siconos_tolerance", self.siconos_tolerance)


def run(problem, options: Options, tolerance: float):
    """``method="siconos"``: the bounded LCP posed to Siconos numerics (free variables eliminated, boxes split), its
    answer judged by the framework's measure."""
    sn = import_siconos()
    elimination, failure = eliminate_free_or_report(problem, NAME, tolerance)
    if failure is not None:
        return failure
    split = split_boxes(elimination.reduced)
    m = split.q.shape[0]
    x = np.zeros(m)
    info_code, iterations, error = 0, 0, 0.0
    if m:
        lcp = sn.LCP(split.M, split.q)
        solver_options = sn.SolverOptions(getattr(sn, SOLVERS[options.solver]))
        solver_options.iparam[0] = options.max_iterations
        solver_options.dparam[0] = options.siconos_tolerance
        slack = np.zeros(m)
        info_code = int(sn.linearComplementarity_driver(lcp, x, slack, solver_options))
        iterations, error = int(solver_options.iparam[1]), float(solver_options.dparam[1])
    z = elimination.recover(split.recover(x))
    status = Status.SOLVED if info_code == 0 else Status.EXTERNAL_FAILURE
    return measure(
        problem,
        z,
        status,
        iterations,
        f"Siconos {SOLVERS[options.solver]} on a {m}-variable LCP: info={info_code}, Siconos error {error:.3g}",
        NAME,
        tolerance,
        {"siconos_info": info_code, "siconos_error": error, "lcp_size": m},
    )
