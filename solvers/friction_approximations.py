"""lcpdyn's friction approximations -- box, polygonal and regularized -- posed on a 3D
friction-contact problem in local (Delassus) form, to score them against exact Coulomb friction.

The derivations, the choices made and what they were measured against: ``docs/theory/friction-approximations.md``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .api import solve
from .approximation_models import (
    ANITESCU_POTRA,
    ZONOTOPE,
    Box,
    DelassusContext,
    Polygonal,
    PosedLCP,
    Posing,
    Regularized,
    _count,
    _diagonal_scale,
    _real,
    model_from_label,
    polygon_vertices,
    velocity_scale,
    zonotope_generators,
)
from .block_gs import MAX_BLOCK
from .friction_contact import FrictionContactProblem, measure_friction_contact
from .result import Status

__all__ = [
    "Box",
    "Polygonal",
    "Regularized",
    "FixedPointOptions",
    "ApproximationResult",
    "MetricOptions",
    "ContactMetrics",
    "approximate",
    "contact_metrics",
    "velocity_scale",
    "model_from_label",
    "polygon_vertices",
    "zonotope_generators",
    "ZONOTOPE",
    "ANITESCU_POTRA",
    "DelassusContext",
    "PosedLCP",
    "Posing",
]


@dataclass(frozen=True)
class FixedPointOptions:
    """Options of :func:`approximate` (docs/theory/friction-approximations.md, "Choices").

    tolerance : bound on the self-consistent model residual for ``converged``.
    max_iterations : fixed-point iterations (one bounded-LCP solve each, retries not counted).
    relaxation, min_relaxation, stall : initial omega in (0, 1]; when the residual is no lower
        than ``stall`` iterations before (checked at most once per ``stall`` iterations), omega
        is halved (down to min_relaxation) if the last two steps oppose, and rho divided by 10
        (down to ``proximal``) if they agree.
    proximal, max_proximal : relative proximal weight rho of the first try and its ceiling; a
        failed solve is retried with rho x 10, and rho stays raised.
    method : inner bounded-LCP method; None picks the engine's default (``lemke`` for the
        Anitescu-Potra polygonal posing, ``judice-pires`` otherwise).
    fallback : method tried when ``method`` fails at ``max_proximal`` (``block-gs`` is used only
        where a contact has at most 4 unknowns); None for none.
    inner_tolerance : tolerance passed to :func:`solvers.solve`.
    max_pivots : Judice-Pires' pivot limit per pivoting run (its option ``max_iterations``): a
        solve that needs more is retried with a larger rho instead (a larger proximal weight
        makes the pivoting converge in a few block pivots).
    time_limit : seconds; checked between iterations (None: no limit).
    """

    tolerance: float = 1e-8
    max_iterations: int = 1000
    relaxation: float = 0.7
    min_relaxation: float = 1.0 / 16.0
    stall: int = 10
    proximal: float = 1e-4
    max_proximal: float = 1e-1
    method: str | None = None
    fallback: str | None = "block-gs"
    inner_tolerance: float = 1e-10
    max_pivots: int = 200
    time_limit: float | None = None

    def __post_init__(self):
        _real("tolerance", self.tolerance, 0.0, strict=True)
        _count("max_iterations", self.max_iterations, 1)
        _count("stall", self.stall, 1)
        _count("max_pivots", self.max_pivots, 1)
        _real("relaxation", self.relaxation, 0.0, strict=True)
        if self.relaxation > 1.0:
            raise ValueError(f"relaxation must be in (0, 1], got {self.relaxation!r}")
        _real("min_relaxation", self.min_relaxation, 0.0, strict=True)
        if self.min_relaxation > self.relaxation:
            raise ValueError(f"min_relaxation {self.min_relaxation!r} exceeds relaxation {self.relaxation!r}")
        _real("proximal", self.proximal, 0.0)
        _real("max_proximal", self.max_proximal, 0.0)
        if self.max_proximal < self.proximal:
            raise ValueError(f"max_proximal {self.max_proximal!r} is below proximal {self.proximal!r}")
        _real("inner_tolerance", self.inner_tolerance, 0.0, strict=True)
        if self.time_limit is not None:
            _real("time_limit", self.time_limit, 0.0, strict=True)


@dataclass(frozen=True, eq=False)
class ApproximationResult:
    """What :func:`approximate` returns.

    model : the model's label (``box``, ``polygonal-8``, ``regularized``).
    parameters : the model's parameters, with the absolute constants used (C_T, v_th).
    r, u : (3 nc,) the last iterate's impulses and u = W r + q, per contact (normal, t1, t2).
    converged : the self-consistent model residual is <= the tolerance (docs/theory/friction-approximations.md).
    iterations : fixed-point iterations done.  inner_iterations : pivots/sweeps summed.
    residual : self-consistent model residual of ``r`` (framework's relative measure).
    coulomb_residual : the framework's Coulomb measure of ``r`` on the exact problem
        (:func:`solvers.friction_contact.measure_friction_contact`): how far r is from being
        an exact Coulomb solution, whichever solution that would be.
    relaxation, proximal : the final omega and relative rho.
    history : the residual after each iteration.  seconds : wall time.  message : account.
    """

    model: str
    parameters: dict
    r: np.ndarray
    u: np.ndarray
    converged: bool
    iterations: int
    inner_iterations: int
    residual: float
    coulomb_residual: float
    relaxation: float
    proximal: float
    history: tuple
    seconds: float
    message: str

    def __repr__(self) -> str:
        return (
            f"ApproximationResult(model={self.model!r}, converged={self.converged}, iterations={self.iterations}, "
            f"residual={self.residual:.3g}, coulomb_residual={self.coulomb_residual:.3g}, message={self.message!r})"
        )


def _validated(problem) -> FrictionContactProblem:
    if not isinstance(problem, FrictionContactProblem):
        raise TypeError(
            f"problem must be a solvers.FrictionContactProblem (FrictionContactProblem.make(W, q, mu)), "
            f"got {type(problem).__name__}"
        )
    # re-validated (shapes, finite entries, mu >= 0, each named) by the front door's own check:
    # the dataclass can be built directly, bypassing make()
    return FrictionContactProblem.make(problem.W, problem.b, problem.mu)


def approximate(problem, model, options: FixedPointOptions | None = None, initial_guess=None) -> ApproximationResult:
    """The answer of ``model`` on the Delassus problem ``problem`` (a
    :class:`~solvers.friction_contact.FrictionContactProblem`), by the fixed-point iteration of
    docs/theory/friction-approximations.md.

    model : :class:`Box`, :class:`Polygonal`, :class:`Regularized` or any object with a ``label``
        (str), ``parameters()`` (dict) and ``posing(context)`` returning a :class:`Posing`.
    initial_guess : starting impulses (3 nc,) for the lagged state; default no force (the first
        solve is then the frictionless problem).
    Raises ``TypeError`` / ``ValueError`` naming the culprit for a bad problem, model or option.
    """
    start = time.perf_counter()
    problem = _validated(problem)
    if not (callable(getattr(model, "posing", None)) and isinstance(getattr(model, "label", None), str)):
        raise TypeError(
            f"model must have a label and a posing(context) method (Box(), Polygonal(k), Regularized()), got {model!r}"
        )
    options = FixedPointOptions() if options is None else options
    if not isinstance(options, FixedPointOptions):
        raise TypeError(f"options must be a FixedPointOptions, got {type(options).__name__}")
    nc = problem.contacts
    W, q = problem.W, problem.b
    if initial_guess is None:
        r_state = np.zeros(3 * nc)
    else:
        r_state = np.array(initial_guess, dtype=float).reshape(-1)
        if r_state.shape != (3 * nc,) or not np.all(np.isfinite(r_state)):
            raise ValueError(f"initial_guess must be {3 * nc} finite impulses, got shape {np.shape(initial_guess)}")
    scale = _diagonal_scale(W, nc) if nc else np.zeros(0)
    context = DelassusContext(W, q, problem.mu, nc, scale, velocity_scale(problem))
    posing = model.posing(context)
    p = posing.unknowns
    u_state = W @ r_state + q
    method = options.method or posing.default_method
    fallback = options.fallback if (options.fallback != "block-gs" or p <= MAX_BLOCK) else None
    if fallback == method:
        fallback = None
    finish = _Finisher(problem, model.label, posing.parameters, start)
    if nc == 0:
        return finish(np.zeros(0), True, 0, 0, 0.0, options.relaxation, options.proximal, [], "no contacts")
    posed = posing.pose(r_state, u_state)
    row_scale = np.where(posed.prox > 0, np.repeat(scale, p), 1.0)
    z_state = posing.center(posed, r_state, None)
    omega, rho_rel = options.relaxation, options.proximal
    history: list[float] = []
    inner_total, warm, last_change = 0, None, 0
    previous_step = None
    r_new = r_state
    message = ""
    for iteration in range(1, options.max_iterations + 1):
        outcome = _inner_solve(posed, row_scale, z_state, rho_rel, warm, method, fallback, options, nc)
        inner_total += outcome.iterations
        rho_rel = outcome.rho
        if outcome.z is None:
            residual = history[-1] if history else float("nan")
            message = f"iteration {iteration}: inner solve failed ({outcome.message})"
            return finish(r_new, False, iteration, inner_total, residual, omega, rho_rel, history, message)
        z_new = outcome.z
        warm = outcome.active_set
        r_new = posed.r_of(z_new)
        u_new = W @ r_new + q
        own = posing.pose(r_new, u_new)  # the model posed from the iterate's own state
        residual = _scaled_residual(own, posing.unknowns_of(own, r_new, z_new), row_scale)
        history.append(residual)
        if residual <= options.tolerance:
            message = f"self-consistent after {iteration} iterations"
            return finish(r_new, True, iteration, inner_total, residual, omega, rho_rel, history, message)
        window = options.stall
        step = r_new - r_state
        if len(history) > window and history[-1] >= history[-1 - window] and len(history) - last_change > window:
            # stalled: steps that alternate (the lag oscillating) want a smaller omega; steps
            # that keep their direction (the iterate drifting along a continuum of solutions of
            # a hyperstatic set) a smaller proximal weight
            aligned = float(step @ previous_step) > 0.0 if previous_step is not None else False
            if aligned:  # the proximal term, not omega, sets the pace of a drift
                rho_rel = max(rho_rel / 10.0, options.proximal)
            else:
                omega = max(omega / 2.0, options.min_relaxation)
            last_change = len(history)
        previous_step = step
        if posing.lagged:
            r_state = r_state + omega * (r_new - r_state)
            u_state = u_state + omega * (u_new - u_state)
            z_relaxed = z_state + omega * (z_new - z_state)
        else:
            z_relaxed = z_new
        posed = posing.pose(r_state, u_state)
        z_state = posing.center(posed, r_state, z_relaxed)
        if options.time_limit is not None and time.perf_counter() - start > options.time_limit:
            message = f"time limit {options.time_limit:g} s reached after {iteration} iterations"
            break
    else:
        message = f"not self-consistent after {options.max_iterations} iterations"
    message = f"{message} (residual {history[-1]:.3g} > {options.tolerance:.3g})"
    return finish(r_new, False, len(history), inner_total, history[-1], omega, rho_rel, history, message)


@dataclass(frozen=True, eq=False)
class _Inner:
    z: np.ndarray | None
    active_set: np.ndarray | None
    iterations: int
    rho: float
    message: str


def _scaled_residual(posed: PosedLCP, z: np.ndarray, row_scale: np.ndarray, M=None, q=None) -> float:
    """||z - clip(z - D^-1 w, lo, hi)||_2 / max(||D^-1 q||_2, ||z||_2) with w = M z + q and D the
    rows' Delassus scales (docs/theory/friction-approximations.md, "Convergence"); ``M``, ``q`` default to posed's."""
    M = posed.M if M is None else M
    q = posed.q if q is None else q
    w = M @ z + q
    F = z - np.clip(z - w / row_scale, posed.lo, posed.hi)
    scale = max(float(np.linalg.norm(q / row_scale)), float(np.linalg.norm(z)))
    value = float(np.linalg.norm(F))
    if not np.isfinite(value):
        return float("nan")
    return value / scale if scale > 0 else value


def _inner_solve(posed: PosedLCP, row_scale, center, rho_rel, warm, method, fallback, options, nc: int) -> _Inner:
    """One proximal solve of ``posed`` around ``center``, raising rho and falling back on failure.
    A solve is accepted when its scaled residual (``_scaled_residual``) on the proximal
    problem is within ``inner_tolerance``, whatever status the method reported."""
    scale = row_scale * posed.prox
    iterations, messages = 0, []
    attempts = []
    rho = rho_rel
    while True:
        attempts.append((method, rho))
        if rho >= options.max_proximal or rho == 0.0:
            break
        rho = min(rho * 10.0, options.max_proximal)
    if fallback is not None:
        attempts.append((fallback, options.max_proximal))
    for name, rho in attempts:
        weights = rho * scale
        M = posed.M + np.diag(weights)
        qp = posed.q - weights * center
        extra = {}
        if name == "judice-pires":
            extra["max_iterations"] = options.max_pivots
            extra["regularization"] = 0.0  # its own proximal fallback: this loop retries instead
            if warm is not None and warm.shape == posed.q.shape:
                extra["warm_start"] = warm
        if name == "block-gs":
            extra["blocks"] = np.repeat(np.arange(nc), posed.q.size // nc)
            extra["initial_guess"] = np.clip(center, posed.lo, posed.hi)
        result = solve(M, qp, posed.lo, posed.hi, method=name, tolerance=options.inner_tolerance, **extra)
        iterations += result.iterations
        accuracy = _scaled_residual(posed, result.z, row_scale, M, qp)
        if accuracy <= options.inner_tolerance:
            return _Inner(result.z, result.active_set, iterations, rho, result.message)
        messages.append(f"{name} rho={rho:g}: {result.status.name}, scaled residual {accuracy:.2g}")
    return _Inner(None, None, iterations, rho_rel, "; ".join(messages))


class _Finisher:
    """Builds the :class:`ApproximationResult` of one :func:`approximate` call."""

    def __init__(self, problem: FrictionContactProblem, label: str, parameters: dict, start: float):
        self.problem, self.label, self.parameters, self.start = problem, label, parameters, start

    def __call__(self, r, converged, iterations, inner, residual, omega, rho, history, message):
        W, q, mu = self.problem.W, self.problem.b, self.problem.mu
        coulomb = measure_friction_contact(W, q, mu, r, Status.SOLVED, 0, "", self.label, 1.0)
        return ApproximationResult(
            model=self.label,
            parameters=self.parameters,
            r=r,
            u=W @ r + q,
            converged=bool(converged),
            iterations=int(iterations),
            inner_iterations=int(inner),
            residual=float(residual),
            coulomb_residual=float(coulomb.relative_residual),
            relaxation=float(omega),
            proximal=float(rho),
            history=tuple(float(h) for h in history),
            seconds=time.perf_counter() - self.start,
            message=message,
        )


# --- metrics -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MetricOptions:
    """Thresholds of :func:`contact_metrics`.

    slip_threshold : a contact slides when |u_T| > slip_threshold x V, V = ||q||_2 / sqrt(nc)
        the problem's velocity scale (:func:`velocity_scale`) -- the analogue of
        :mod:`lcpdyn.metrics`' v_th (0.01 m/s there, against wheel speeds of metres per second).
    zero_force : an impulse counts as zero when its norm is <= zero_force x R, R = max_a
        |r_exact,a| the problem's force scale (1e-8: the exact solutions' tolerance).
    """

    slip_threshold: float = 1e-4
    zero_force: float = 1e-8

    def __post_init__(self):
        _real("slip_threshold", self.slip_threshold, 0.0)
        _real("zero_force", self.zero_force, 0.0)


@dataclass(frozen=True, eq=False)
class ContactMetrics:
    """Per-contact comparison of an answer r with an exact Coulomb answer r_exact (one problem).

    force_deviation : |r_a - r_exact,a| / |r_exact,a|; NaN where r_exact,a is zero.
    exact_zero : where |r_exact,a| <= zero_force R (separated in the exact answer).
    spurious_force : |r_a| / R where r_exact,a is zero, NaN elsewhere.
    sliding : |u_T| > slip_threshold V and |r_T| > zero_force R in the answer's own velocities
        u = W r + q (as lcpdyn.metrics: the angle is measured within one run).
    misalignment_deg : angle between r_T and -u_T where ``sliding``, NaN elsewhere.
    cone_excess : max(|r_T| / (mu r_N) - 1, 0) where mu > 0 and r_N > zero_force R, else NaN.
    friction_without_normal : contacts with |r_T| > zero_force R but r_N <= zero_force R.
    misalignment_rms_deg : sqrt(sum_a w_a theta_a^2 / sum_a w_a) over the sliding contacts,
        w_a = max(r_N, 0) (equal weights if none carries load): lcpdyn.metrics' per-step value.
    normalized_friction_force, normalized_friction_force_exact : F = sum_a |r_T,a| / mu_a /
        sum_a max(r_N,a, 0) over contacts with mu_a > 0 (lcpdyn.metrics' aggregate; where all
        contacts slide with one mu it does not depend on how redundant contacts share the
        load, where some stick it does); NaN without normal force.
    velocity_scale, force_scale, slip_velocity : V, R and the absolute slip threshold.
    """

    force_deviation: np.ndarray
    exact_zero: np.ndarray
    spurious_force: np.ndarray
    sliding: np.ndarray
    misalignment_deg: np.ndarray
    cone_excess: np.ndarray
    friction_without_normal: int
    misalignment_rms_deg: float
    normalized_friction_force: float
    normalized_friction_force_exact: float
    velocity_scale: float
    force_scale: float
    slip_velocity: float


def _aggregate_friction(r: np.ndarray, mu: np.ndarray) -> float:
    rr = r.reshape(-1, 3)
    has = mu > 0
    normal = np.clip(rr[has, 0], 0.0, None).sum()
    if not normal > 0:
        return float("nan")
    return float((np.linalg.norm(rr[has, 1:], axis=1) / mu[has]).sum() / normal)


def contact_metrics(problem, r, r_exact, options: MetricOptions | None = None) -> ContactMetrics:
    """Compare impulses ``r`` with an exact Coulomb answer ``r_exact`` on ``problem``, contact by
    contact (:class:`ContactMetrics`; definitions after :mod:`lcpdyn.metrics`)."""
    problem = _validated(problem)
    options = MetricOptions() if options is None else options
    if not isinstance(options, MetricOptions):
        raise TypeError(f"options must be a MetricOptions, got {type(options).__name__}")
    nc = problem.contacts
    arrays = {}
    for name, value in (("r", r), ("r_exact", r_exact)):
        arr = np.asarray(value, dtype=float).reshape(-1)
        if arr.shape != (3 * nc,):
            raise ValueError(f"{name} must hold 3 x {nc} = {3 * nc} impulses, got shape {np.shape(value)}")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} contains a non-finite entry at index {int(np.flatnonzero(~np.isfinite(arr))[0])}")
        arrays[name] = arr.reshape(nc, 3)
    ra, re = arrays["r"], arrays["r_exact"]
    mu = problem.mu
    u = (problem.W @ ra.reshape(-1) + problem.b).reshape(nc, 3)
    V = velocity_scale(problem)
    norm_exact = np.linalg.norm(re, axis=1)
    R = float(norm_exact.max()) if nc else 0.0
    zero = options.zero_force * R
    exact_zero = norm_exact <= zero
    with np.errstate(invalid="ignore", divide="ignore"):
        deviation = np.where(exact_zero, np.nan, np.linalg.norm(ra - re, axis=1) / norm_exact)
        spurious = np.where(exact_zero, np.linalg.norm(ra, axis=1) / (R if R > 0 else 1.0), np.nan)
    rT = np.linalg.norm(ra[:, 1:], axis=1)
    uT = np.linalg.norm(u[:, 1:], axis=1)
    slip_velocity = options.slip_threshold * V
    sliding = (uT > slip_velocity) & (rT > zero) & (mu > 0)
    angle = np.full(nc, np.nan)
    if sliding.any():
        cosine = -np.einsum("ai,ai->a", ra[sliding, 1:], u[sliding, 1:]) / (rT[sliding] * uT[sliding])
        angle[sliding] = np.degrees(np.arccos(np.clip(cosine, -1.0, 1.0)))
    loaded = (mu > 0) & (ra[:, 0] > zero)
    excess = np.full(nc, np.nan)
    excess[loaded] = np.maximum(rT[loaded] / (mu[loaded] * ra[loaded, 0]) - 1.0, 0.0)
    without = int(np.sum((rT > zero) & ~(ra[:, 0] > zero)))
    if sliding.any():
        weight = np.clip(ra[sliding, 0], 0.0, None)
        if not weight.sum() > 0:
            weight = np.ones(int(sliding.sum()))
        rms = float(np.sqrt(np.sum(weight * angle[sliding] ** 2) / weight.sum()))
    else:
        rms = float("nan")
    return ContactMetrics(
        force_deviation=deviation,
        exact_zero=exact_zero,
        spurious_force=spurious,
        sliding=sliding,
        misalignment_deg=angle,
        cone_excess=excess,
        friction_without_normal=without,
        misalignment_rms_deg=rms,
        normalized_friction_force=_aggregate_friction(ra, mu),
        normalized_friction_force_exact=_aggregate_friction(re, mu),
        velocity_scale=V,
        force_scale=R,
        slip_velocity=slip_velocity,
    )
