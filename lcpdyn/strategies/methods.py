"""The solver methods of a step: the method and its fallback chosen for a friction model, and the rule that a
failed answer is retried once and never returned as solved: it stops the run, or, with
``on_unsolved="flag"``, the better of the two answers is kept and the step marked not solved."""

from __future__ import annotations

import numpy as np

import solvers
from solvers import friction_contact
from solvers.result import Status

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
"""The fallback of each method when ``fallback_method="auto"``: the method tried after it fails."""


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


def accept_or_fallback(result, retry, fallback_method, step: int, t: float, keep: bool = False):
    """(result, False) if it succeeded; else (retry(fallback_method), True) if that succeeded;
    else :class:`SimulationError` at ``step``, ``t`` -- a failed answer is never returned as
    solved. With ``keep`` (``on_unsolved="flag"``) the failed answer of the smaller residual is
    returned instead, with its failure status, as long as it is finite."""
    if result.success:
        return result, False
    hint = "" if keep else "; on_unsolved='flag' keeps such steps, marked"
    if fallback_method is None:
        if keep and _finite(result):
            return result, False
        raise SimulationError(f"{result.method} failed: {result.status.name}: {result.message}{hint}", step, t,
                              result=result)  # fmt: skip
    second = retry(fallback_method)
    if second.success:
        return second, True
    if keep:
        kept = [answer for answer in (result, second) if _finite(answer)]
        if kept:
            best = min(kept, key=lambda answer: answer.relative_residual)
            return best, best is second
    raise SimulationError(
        f"{result.method} failed ({result.status.name}: {result.message}) and the "
        f"fallback {second.method} failed too ({second.status.name}: {second.message}){hint}",
        step,
        t,
        result=second,
    )


def _finite(result) -> bool:
    """Whether a solver's answer and its residual are finite numbers (an answer that can be kept)."""
    answer = getattr(result, "z", None)
    if answer is None:
        answer = result.r
    return bool(np.isfinite(answer).all()) and bool(np.isfinite(result.relative_residual))


def judge_step(sim, state, out) -> None:
    """The step's own verdict on its answer ``out`` (a StepResult), whatever path solved it: a
    step whose largest relative residual exceeds the run's ``tolerance`` (or is not finite) is not
    solved -- its status becomes INACCURATE if a path left SOLVED. Under ``on_unsolved="stop"``
    (the default) such a step stops the run with :class:`SimulationError`; under ``"flag"`` it is
    kept, and the run's record marks it (``Health.UNSOLVED``)."""
    if out.residual <= sim.tolerance and out.status == Status.SOLVED:
        return
    if out.status == Status.SOLVED:
        out.status = int(Status.INACCURATE)
    if sim.on_unsolved != "flag":
        raise SimulationError(
            f"the step's answer has relative residual {out.residual:.3g} above the tolerance "
            f"{sim.tolerance:g} ({Status(out.status).name}); on_unsolved='flag' keeps such steps, marked",
            state.steps_done,
            state.t,
        )
