"""The front door: ``solve(M, q, lo, hi, method=...)``."""

from __future__ import annotations

import math

import numpy as np

from . import judice_pires, lemke, pgs, siconos_route
from .options import build_options
from .problem import BoundedLCP, make_problem, zero_row_certificate
from .result import LCPResult, SolverFailure, Status, measure

__all__ = ["solve", "METHODS"]

METHODS = {module.NAME: module for module in (judice_pires, lemke, pgs, siconos_route)}
DEFAULT_TOLERANCE = 1e-9
_DEFAULTS = {name: module.Options() for name, module in METHODS.items()}  # frozen, safe to share


def solve(
    M,
    q=None,
    lo=None,
    hi=None,
    method: str = "judice-pires",
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    raise_on_failure: bool = False,
    **options,
) -> LCPResult:
    """Solve the bounded LCP ``lo <= z <= hi``, ``w = M z + q`` (see :mod:`solvers.problem`).

    Parameters
    ----------
    M, q, lo, hi : the problem (``lo`` defaults to 0, ``hi`` to +inf), or a
        :class:`~solvers.problem.BoundedLCP` passed as ``M`` with ``q, lo, hi`` omitted.
    method : ``"judice-pires"`` (default), ``"lemke"``, ``"pgs"`` or ``"siconos"``.
    Before any method runs, a zero row of M that no z can complement is reported as
    ``INFEASIBLE`` (:func:`~solvers.problem.zero_row_certificate`).
    tolerance : the framework's acceptance bound on the relative residual (see
        :mod:`solvers.result`); a method's answer beyond it is reported ``INACCURATE``.
    raise_on_failure : raise :class:`~solvers.result.SolverFailure` instead of returning a
        result whose ``success`` is False.
    **options : method options, see each method's ``Options`` class; unknown names raise.

    Returns
    -------
    :class:`~solvers.result.LCPResult` -- ``z``, ``w`` (recomputed), ``status``, ``success``,
    ``iterations``, ``residual``, ``bound_violation``, ``relative_residual``, ``message``,
    ``method``, ``active_set``, ``info``.
    """
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {sorted(METHODS)}")
    if (
        isinstance(tolerance, bool)
        or not isinstance(tolerance, (int, float))
        or not (math.isfinite(tolerance) and tolerance > 0)
    ):
        raise ValueError(f"tolerance must be a finite number > 0, got {tolerance!r}")
    if isinstance(M, BoundedLCP):
        if q is not None or lo is not None or hi is not None:
            raise TypeError("pass either a BoundedLCP or M, q, lo, hi, not both")
        problem = M
    else:
        if q is None:
            raise TypeError("solve() needs q (or a BoundedLCP as its first argument)")
        problem = make_problem(M, q, lo, hi)
    module = METHODS[method]
    method_options = build_options(module.Options, method, options) if options else _DEFAULTS[method]
    certificate = zero_row_certificate(problem)
    if certificate is not None:  # a proof of infeasibility: no method is run
        result = measure(
            problem,
            np.clip(np.zeros(problem.n), problem.lo, problem.hi),
            Status.INFEASIBLE,
            0,
            certificate,
            method,
            float(tolerance),
        )
    else:
        result = module.run(problem, method_options, float(tolerance))
    if raise_on_failure and not result.success:
        raise SolverFailure(result)
    return result
