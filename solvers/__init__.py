"""Complementarity solvers for lcpdyn (importable without JAX).

Front door::

    from solvers import solve
    result = solve(M, q, lo, hi, method="judice-pires")
    result.z, result.w, result.status, result.success, result.relative_residual

Methods: ``"judice-pires"`` (default, :mod:`solvers.judice_pires`), ``"lemke"``
(:mod:`solvers.lemke`), ``"pgs"`` (:mod:`solvers.pgs`), ``"siconos"``
(:mod:`solvers.siconos_route`). The problem is defined in :mod:`solvers.problem`; every
answer is checked by the residual of :mod:`solvers.result`.
"""

from .api import METHODS, solve
from .problem import BoundedLCP, make_problem
from .result import AT_LOWER, AT_UPPER, BASIC, FIXED, LCPResult, SolverFailure, Status

__all__ = [
    "solve",
    "METHODS",
    "BoundedLCP",
    "make_problem",
    "LCPResult",
    "Status",
    "SolverFailure",
    "AT_LOWER",
    "BASIC",
    "AT_UPPER",
    "FIXED",
]
