"""Complementarity solvers for lcpdyn (importable without JAX).

Front door, one for both problems::

    from solvers import FrictionContactProblem, solve
    result = solve(M, q, lo, hi, method="judice-pires")          # bounded LCP
    result.z, result.w, result.status, result.success, result.relative_residual
    result = solve(FrictionContactProblem.make(W, b, mu), method="nsgs")  # 3D friction contact
    result.r, result.u, result.status, result.success, result.relative_residual

Methods: ``"judice-pires"`` (default, :mod:`solvers.judice_pires`), ``"lemke"``
(:mod:`solvers.lemke`), ``"pgs"`` (:mod:`solvers.pgs`), ``"block-gs"`` (:mod:`solvers.block_gs`,
per-contact blocks solved exactly), ``"siconos"``
(:mod:`solvers.siconos_route`) for the bounded LCP; ``"nsgs"``, ``"newton"``
(:mod:`solvers.alart_curnier`), ``"prox"`` (:mod:`solvers.proximal_point`), ``"auto"``
(:mod:`solvers.auto_choice`), ``"siconos-nsgs"``, ``"siconos-nsn-ac"`` and ``"siconos-prox"`` for
the friction-contact problem (:mod:`solvers.friction_contact`). The
bounded LCP is defined in :mod:`solvers.problem`; every answer is checked by the framework's own
residual (:mod:`solvers.result`, and per contact for the friction-contact problem).
"""

from .compiled_cache import install as _install_cache

_install_cache()  # before any compiled function is defined (solvers.compiled_cache)

from .api import FRICTION_CONTACT_METHODS, METHODS, solve  # noqa: E402
from .friction_contact import FrictionContactProblem, FrictionContactResult  # noqa: E402
from .problem import BoundedLCP, make_problem  # noqa: E402
from .problem_files import FclibFile, ProblemFileError, read_fclib, read_siconos_dat  # noqa: E402
from .result import AT_LOWER, AT_UPPER, BASIC, FIXED, LCPResult, SolverFailure, Status  # noqa: E402

__all__ = [
    "solve",
    "METHODS",
    "FRICTION_CONTACT_METHODS",
    "FrictionContactProblem",
    "FrictionContactResult",
    "BoundedLCP",
    "make_problem",
    "read_siconos_dat",
    "read_fclib",
    "FclibFile",
    "ProblemFileError",
    "LCPResult",
    "Status",
    "SolverFailure",
    "AT_LOWER",
    "BASIC",
    "AT_UPPER",
    "FIXED",
]
