"""The front door: ``solve(problem, method=...)`` for both problems of lcpdyn -- the bounded LCP
(:class:`~solvers.problem.BoundedLCP`, or its arrays ``M, q, lo, hi``) and the 3D friction-contact
problem (:class:`~solvers.friction_contact.FrictionContactProblem`)."""

from __future__ import annotations

import math

import numpy as np

from . import block_gs, friction_contact, judice_pires, lemke, pgs, siconos_route
from .friction_contact import FrictionContactProblem
from .options import build_options
from .problem import BoundedLCP, make_problem, zero_row_certificate
from .result import LCPResult, SolverFailure, Status, measure

__all__ = ["solve", "METHODS", "FRICTION_CONTACT_METHODS"]

METHODS = {module.NAME: module for module in (judice_pires, lemke, pgs, block_gs, siconos_route)}
"""The bounded-LCP methods by name."""
FRICTION_CONTACT_METHODS = friction_contact.METHODS
"""The friction-contact methods by name: ``nsgs``, ``newton``, ``prox``, ``auto`` (ours),
``siconos-nsgs``, ``siconos-nsn-ac``, ``siconos-prox``."""
DEFAULT_TOLERANCE = 1e-9
_DEFAULTS = {name: module.Options() for name, module in METHODS.items()}  # frozen, safe to share


def solve(
    M,
    q=None,
    lo=None,
    hi=None,
    method: str | None = None,
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    raise_on_failure: bool = False,
    **options,
) -> LCPResult | friction_contact.FrictionContactResult:
    """Solve a bounded LCP ``lo <= z <= hi``, ``w = M z + q`` (see :mod:`solvers.problem`), or a
    friction-contact problem ``u = W r + b`` passed as a
    :class:`~solvers.friction_contact.FrictionContactProblem`.

    Parameters
    ----------
    M, q, lo, hi : the problem (``lo`` defaults to 0, ``hi`` to +inf), or a
        :class:`~solvers.problem.BoundedLCP` or
        :class:`~solvers.friction_contact.FrictionContactProblem` passed as ``M`` with
        ``q, lo, hi`` omitted.
    method : for a bounded LCP ``"judice-pires"`` (default), ``"lemke"``, ``"pgs"``,
        ``"block-gs"`` (per-contact blocks solved exactly, :mod:`solvers.block_gs`) or
        ``"siconos"``; for a friction-contact problem ``"nsgs"`` (default), ``"newton"``,
        ``"prox"``, ``"auto"``, ``"siconos-nsgs"``, ``"siconos-nsn-ac"`` or ``"siconos-prox"``.
    Before any bounded-LCP method runs, a zero row of M that no z can complement is reported as
    ``INFEASIBLE`` (:func:`~solvers.problem.zero_row_certificate`).
    tolerance : the framework's acceptance bound on the relative residual (see
        :mod:`solvers.result`); a method's answer beyond it is reported ``INACCURATE``.
    raise_on_failure : raise :class:`~solvers.result.SolverFailure` instead of returning a
        result whose ``success`` is False.
    **options : method options, see each method's ``Options`` class (for a friction-contact
        problem also ``initial_guess``, the starting reactions); unknown names raise.

    Returns
    -------
    :class:`~solvers.result.LCPResult` -- ``z``, ``w`` (recomputed), ``status``, ``success``,
    ``iterations``, ``residual``, ``bound_violation``, ``relative_residual``, ``message``,
    ``method``, ``active_set``, ``info`` -- or, for a friction-contact problem,
    :class:`~solvers.friction_contact.FrictionContactResult` with ``r``, ``u`` and the same
    ``status``, ``success``, ``iterations``, ``relative_residual``, ``message``, ``method``,
    ``info``.
    """
    if isinstance(M, FrictionContactProblem):
        if q is not None or lo is not None or hi is not None:
            raise TypeError("pass either a FrictionContactProblem or M, q, lo, hi, not both")
        method = friction_contact.NSGS if method is None else method
        if method in METHODS:
            raise ValueError(f"method {method!r} solves bounded LCPs; for a FrictionContactProblem choose one of "
                             f"{list(FRICTION_CONTACT_METHODS)}")  # fmt: skip
        guess = options.pop("initial_guess", None)
        return friction_contact.solve_friction_contact(
            M.W, M.b, M.mu, method, tolerance=tolerance, initial_guess=guess, raise_on_failure=raise_on_failure,
            **options,
        )  # fmt: skip
    method = "judice-pires" if method is None else method
    if method in FRICTION_CONTACT_METHODS:
        raise ValueError(
            f"method {method!r} solves the friction-contact problem: pass a solvers.FrictionContactProblem"
        )
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
