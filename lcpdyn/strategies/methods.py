"""The solver methods of a step: the method and its fallback chosen for a friction model, and the rule that a
failed answer is retried once and never returned."""

from __future__ import annotations

import solvers
from solvers import friction_contact

from ..friction import FRICTION_CONTACT
from ..run.errors import SimulationError

FALLBACKS = {
    "judice-pires": "lemke",
    "lemke": "judice-pires",
    "pgs": "judice-pires",
    "siconos": "judice-pires",
    "nsgs": "prox",  # the proximal-point Newton loop converges where NSGS stalls (hyperstatic contact sets)
    "newton": "prox",
    "prox": "nsgs",
    "auto": "nsgs",  # (the friction-contact method "auto"; fallback_method="auto" means "from this table")
    "siconos-nsgs": "nsgs",
    "siconos-nsn-ac": "nsgs",
    "siconos-prox": "prox",
}


def choose_methods(friction, method: str, fallback_method) -> tuple[str, str | None]:
    """(method, fallback method) for a friction model: ``method`` checked against the methods of
    the model's problem (bounded LCP or friction contact), ``fallback_method="auto"`` resolved
    from :data:`FALLBACKS`, ``None`` kept (no fallback)."""
    allowed = friction_contact.METHODS if friction.formulation == FRICTION_CONTACT else solvers.METHODS
    if method not in allowed:
        raise ValueError(
            f"unknown method {method!r} for friction model {friction.name!r}; choose one of {sorted(allowed)}"
        )
    if fallback_method == "auto":
        fallback_method = FALLBACKS.get(method)
    if fallback_method is not None and fallback_method not in allowed:
        raise ValueError(f"unknown fallback_method {fallback_method!r}; choose one of {sorted(allowed)}")
    return method, fallback_method


def accept_or_fallback(result, retry, fallback_method, step: int, t: float):
    """(result, False) if it succeeded; else (retry(fallback_method), True) if that succeeded;
    else :class:`SimulationError` at ``step``, ``t`` -- a failed answer is never returned."""
    if result.success:
        return result, False
    if fallback_method is None:
        raise SimulationError(f"{result.method} failed: {result.status.name}: {result.message}", step, t,
                              result=result)  # fmt: skip
    second = retry(fallback_method)
    if not second.success:
        raise SimulationError(
            f"{result.method} failed ({result.status.name}: {result.message}) and the "
            f"fallback {second.method} failed too ({second.status.name}: {second.message})",
            step,
            t,
            result=second,
        )
    return second, True
