"""Model parameters fitted to a trajectory through a differentiable run (issue 49, item 5).

:func:`calibrate` fits the numbers named by :class:`Parameter` (a friction coefficient, the
regularized model's bristle stiffness k_T, its velocity threshold, an initial velocity, or any
number a caller's ``apply`` puts into the run's inputs) so that a
:class:`~lcpdyn.differentiable_run.DifferentiableRun` reproduces data: it minimizes
½ |r(θ)|², r the caller's residual of the run's outputs (:class:`RunOutputs`) against the data,
by damped Gauss–Newton (Levenberg–Marquardt, the Jacobian dr/dθ by forward-mode JAX through the
run: one pass per parameter, not finite differences), by gradient descent on the same loss, or
by Nelder–Mead (forward runs only, the gradient-free yardstick). Box bounds are kept by
projection; a parameter with ``log=True`` is fitted as log10 of its value.

A scene the differentiable run does not take (joints, the wheel–rail creep rows,
detected contacts) is fitted the same way through a function ``simulate(values) -> outputs``
that runs it with the ordinary step: the same methods and checks, the Jacobian by central
differences (two runs per parameter; :class:`Parameter`'s ``smoothing`` is its width where
given).

What a fit means where the run switches (a contact that starts or stops slipping): the loss is
continuous but its derivative has one-sided values there (:mod:`lcpdyn.differentiable_run`).
Each accepted iterate's run records its contacts' modes (apart, sticking, sliding:
:func:`~lcpdyn.differentiable_run.contact_modes`), and :class:`Calibration` counts the iterates
whose modes differ from the previous one's (``branch_changes``): a fit that crosses switches
took steps on a piecewise-smooth loss.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np

from .compilation import jit
from .differentiable_run import CONSTANTS, DifferentiableRun, RunOutputs, contact_modes
from .precision import float64
from .run.errors import SimulationError

__all__ = ["Parameter", "Calibration", "calibrate", "stepped", "METHODS"]

#: The fitting methods of :func:`calibrate`, by name.
METHODS = ("gauss-newton", "gradient", "nelder-mead")
_INDEXED = re.compile(r"^(mu|mu_static|q0|v0)\[(\d+)\]$")
_NAMED = ("mu", "mu_static", "tangential_stiffness", "velocity_threshold", "stabilization", "f11", "f22", "f23")


@dataclass(frozen=True)
class Parameter:
    """A number to fit: ``name`` (below), its ``initial`` value and bounds ``lower`` <= value <=
    ``upper``; ``log``: fit log10 of the value (a stiffness over decades; value > 0).

    Names lcpdyn knows: ``mu`` (every contact's friction coefficient; with ``mu_static`` not
    given, a contact's static coefficient follows it), ``mu[i]`` (contact i's), ``mu_static`` and
    ``mu_static[i]`` (the static coefficients mu_s, every contact's or contact i's),
    ``tangential_stiffness`` (the regularized model's k_T, N/m; the run's compliance is
    1/(k_T h²)), ``velocity_threshold`` (m/s; the continuous law's characteristic velocity v0),
    ``stabilization`` (β), ``f11``, ``f22`` (N) and ``f23`` (N m) (the creep law's Kalker
    coefficients), ``q0[i]`` and ``v0[i]``
    (an initial coordinate or velocity). Any other name needs ``apply(inputs, value) -> inputs``,
    which returns the run's inputs (a dict of ``q0, v0, mu, constants, floats, mu_static``, JAX arrays)
    with ``value`` put where it belongs (the extension point for a model's own numbers).

    ``smoothing`` σ > 0 (in the fitted coordinate): this parameter's column of the Jacobian is
    (r(u + σ) - r(u - σ)) / (2σ), two runs, which is the exact derivative of r averaged over
    [u - σ, u + σ] (a box filter), instead of forward mode's derivative. For a number that acts
    through a switch alone -- mu_s decides which step a contact breaks away in, a step function
    of it whose derivative is 0 wherever it exists -- it is the slope of the switch's effect at
    the scale σ. The loss a fit lowers stays the unsmoothed one; what σ costs in accuracy is
    measured in the gallery's incline example."""

    name: str
    initial: float
    lower: float = -math.inf
    upper: float = math.inf
    log: bool = False
    apply: Callable | None = field(default=None, compare=False)
    smoothing: float = 0.0

    def __post_init__(self):
        for label in ("initial", "lower", "upper"):
            if math.isnan(float(getattr(self, label))):
                raise ValueError(f"Parameter {self.name!r}: {label} is NaN")
        if not self.lower <= self.initial <= self.upper:
            raise ValueError(
                f"Parameter {self.name!r}: initial value {self.initial} is outside its bounds "
                f"[{self.lower}, {self.upper}]"
            )
        if not (math.isfinite(self.smoothing) and self.smoothing >= 0.0):
            raise ValueError(f"Parameter {self.name!r}: smoothing must be finite and >= 0, got {self.smoothing}")
        if self.log and not self.initial > 0.0:
            raise ValueError(f"Parameter {self.name!r}: log=True needs a positive value, got {self.initial}")

    def check_for_run(self) -> None:
        """Raises ``ValueError`` unless a differentiable run can take this parameter: a name lcpdyn
        knows or an ``apply`` (a function ``simulate(values)`` takes any name)."""
        if self.apply is None and self.name not in _NAMED and not _INDEXED.match(self.name):
            raise ValueError(
                f"Parameter {self.name!r}: lcpdyn knows {', '.join(_NAMED)}, mu[i], mu_static[i], q0[i] and v0[i]; "
                "any other number needs apply(inputs, value) -> inputs"
            )

    def to_internal(self, value: float) -> float:
        """The fitted coordinate of ``value`` (its log10 where ``log``)."""
        return math.log10(value) if self.log else float(value)

    def to_value(self, u):
        """The value of the fitted coordinate ``u`` (traced or not)."""
        return 10.0**u if self.log else u

    def bounds(self) -> tuple[float, float]:
        """The bounds in the fitted coordinate (log10 where ``log``)."""
        if not self.log:
            return float(self.lower), float(self.upper)
        lower = math.log10(self.lower) if self.lower > 0.0 else -math.inf
        return lower, math.log10(self.upper) if math.isfinite(self.upper) else math.inf

    def put(self, inputs: dict, value) -> dict:
        """``inputs`` with ``value`` in place (traced: value may be a JAX tracer)."""
        if self.apply is not None:
            return dict(self.apply(dict(inputs), value))
        out = dict(inputs)
        match = _INDEXED.match(self.name)
        if match:
            key, index = match.group(1), int(match.group(2))
            if index >= out[key].shape[0]:
                raise ValueError(f"Parameter {self.name!r}: the run's {key} has {out[key].shape[0]} entries")
            out[key] = out[key].at[index].set(value)
        elif self.name in ("mu", "mu_static"):
            out[self.name] = jnp.full_like(out[self.name], value)
        elif self.name == "tangential_stiffness":
            h = out["constants"][CONSTANTS.index("dt")]
            out["constants"] = out["constants"].at[CONSTANTS.index("compliance")].set(1.0 / (value * h * h))
        else:
            out["constants"] = out["constants"].at[CONSTANTS.index(self.name)].set(value)
        return out


@dataclass(frozen=True)
class Calibration:
    """A fit's outcome: ``values`` by parameter name, the ``loss`` ½|r|² reached from
    ``initial_loss``, ``iterations`` (accepted iterates), ``runs`` (forward runs) and
    ``jacobians`` (forward-mode passes, each worth about ``len(values)`` runs),
    ``converged`` with ``message``; ``history`` the accepted iterates' (values..., loss);
    ``branch_changes`` the accepted iterates whose run took other contact modes than the
    one before (module docstring); ``wall_s`` and ``cpu_s`` of the fit and ``compile_s``
    apart (tracing and compiling the run and its Jacobian, with their first evaluation)."""

    method: str
    values: dict
    loss: float
    initial_loss: float
    iterations: int
    runs: int
    jacobians: int
    converged: bool
    message: str
    history: tuple
    branch_changes: int
    wall_s: float
    cpu_s: float
    compile_s: float


class _Problem:
    """The residual of a run in the fitted coordinates u and its Jacobian, compiled once per run,
    parameter set (names, ``log``, ``apply``) and residual function: further fits of the same
    (other data, starts or bounds, another method) reuse them."""

    def __init__(self, run: DifferentiableRun, parameters, residual, data):
        self.parameters = tuple(parameters)
        key = (tuple((p.name, p.log, p.apply) for p in self.parameters), residual)
        compiled = run.__dict__.setdefault("_calibration_functions", {})
        if key not in compiled:
            compiled[key] = _functions(run, self.parameters, residual)
        self._evaluate, self._jacobian = compiled[key]
        self.data = data
        self.runs = self.jacobians = 0

    def evaluate(self, u):
        """(residual, the contacts' modes after each step, each step's ok flag) at u."""
        self.runs += 1
        r, modes, ok = self._evaluate(jnp.asarray(u), self.data)
        return np.asarray(r), np.asarray(modes), np.asarray(ok)

    def jacobian(self, u):
        """dr/du by forward mode; a parameter with ``smoothing`` σ has its column by the central
        difference of width σ (two runs, counted in ``runs``)."""
        self.jacobians += 1
        J = np.array(self._jacobian(jnp.asarray(u), self.data))
        for k, p in enumerate(self.parameters):
            if p.smoothing > 0.0:
                J[:, k] = _central_column(self.evaluate, u, k, p.smoothing)
        return J


class _Simulated:
    """:class:`_Problem` for a run given as ``simulate(values) -> outputs`` (the ordinary step):
    the residual on the host, the Jacobian by central differences in the fitted coordinates (of
    width ``smoothing`` where a parameter has it, else 1e-6 of the coordinate's size, at least
    1e-6), two runs per parameter. A run that raises ``SimulationError`` is not a solution."""

    def __init__(self, simulate, parameters, residual, data):
        self.parameters, self.simulate, self.residual, self.data = tuple(parameters), simulate, residual, data
        self.runs = self.jacobians = 0
        self.failure, self._size = None, 1

    def evaluate(self, u):
        self.runs += 1
        values = dict(zip([p.name for p in self.parameters], _values(self.parameters, u)))
        try:
            outputs = self.simulate(values)
        except SimulationError as error:
            self.failure = f"{type(error).__name__}: {error}"
            return np.full(self._size, np.nan), np.zeros(0, bool), np.zeros(1, bool)
        r = np.ravel(np.asarray(self.residual(outputs, self.data), float))
        self._size = r.size
        return r, np.zeros(0, bool), np.ones(1, bool)

    def jacobian(self, u):
        self.jacobians += 1
        columns = []
        for k, p in enumerate(self.parameters):
            width = p.smoothing if p.smoothing > 0.0 else 1e-6 * max(abs(float(u[k])), 1.0)
            columns.append(_central_column(self.evaluate, u, k, width))
        return np.stack(columns, axis=1)


def _central_column(evaluate, u, k, width):
    """(r(u + width e_k) - r(u - width e_k)) / (2 width) by ``evaluate`` (two runs); NaN where
    either run did not solve."""
    shift = np.zeros_like(u)
    shift[k] = width
    (above, _, ok_above), (below, _, ok_below) = evaluate(u + shift), evaluate(u - shift)
    if not (ok_above.all() and ok_below.all()):
        return np.full(above.shape, np.nan)
    return (above - below) / (2.0 * width)


def _functions(run, parameters, residual):
    """The jitted (evaluate, jacobian) of :class:`_Problem`."""
    base = {name: jnp.asarray(value) for name, value in run.inputs.items()}

    def inputs_at(u):
        inputs = base
        for k, p in enumerate(parameters):
            inputs = p.put(inputs, p.to_value(u[k]))
        return inputs

    def evaluate(u, data):  # the residual, each contact's mode after each step (contact_modes), ok
        inputs = inputs_at(u)
        out = run(**inputs)
        modes = contact_modes(out, inputs["constants"], inputs["mu"], inputs["mu_static"], run.box, jnp, run.smooth)
        return jnp.ravel(residual(out, data)), modes, out.ok

    return jit(evaluate), jit(jax.jacfwd(lambda u, data: jnp.ravel(residual(run(**inputs_at(u)), data))))


def stepped(sim, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """(q, v) after each of ``sim``'s next ``steps`` ordinary steps (``Simulation.step``), shaped
    as :class:`RunOutputs` ``q`` and ``v`` (leading axis the steps): a trajectory to fit, or to
    hold a differentiable run to."""
    q, v = [], []
    for _ in range(int(steps)):
        sim.step()
        q.append(sim.q.copy())
        v.append(sim.v.copy())
    return np.array(q), np.array(v)


def calibrate(
    run: DifferentiableRun | Callable[[dict], object],
    parameters,
    residual: Callable[[RunOutputs, object], jnp.ndarray],
    data=None,
    method: str = "gauss-newton",
    max_iterations: int = 50,
    tolerance: float = 1e-10,
) -> Calibration:
    """Fits ``parameters`` (:class:`Parameter`, a sequence) so that ``run`` reproduces ``data``:
    minimizes ½|r|², r = ``residual(outputs, data)`` (a JAX function of the run's
    :class:`RunOutputs` and the data, e.g. positions minus measured positions over their noise)
    by ``method`` (:data:`METHODS`; module docstring), stopping when an iterate lowers the loss
    by less than ``tolerance`` of it, moves the parameters by less than ``tolerance`` of their
    size, or after ``max_iterations`` iterates (Nelder–Mead: 200 per parameter). Every run is
    checked: an iterate whose run has a step that did not solve is rejected, and a start that
    does not solve raises ``ArithmeticError`` naming the step.

    ``run`` may instead be a function ``simulate(values) -> outputs`` (``values`` the parameters'
    values by name; any names) that runs a scene the differentiable run does not take, with the
    ordinary step; ``residual`` is then a NumPy function of its outputs, the Jacobian is by
    central differences (module docstring), and a run that raises
    :class:`~lcpdyn.run.errors.SimulationError` is rejected (at the start: ``ArithmeticError``
    with its message)."""
    if method not in METHODS:
        raise ValueError(f"calibrate: unknown method {method!r}; choose one of {', '.join(METHODS)}")
    parameters = tuple(parameters)
    if not parameters or not all(isinstance(p, Parameter) for p in parameters):
        raise TypeError("calibrate: parameters must be a non-empty sequence of Parameter")
    names = [p.name for p in parameters]
    if len(set(names)) != len(names):
        raise ValueError(f"calibrate: a parameter is named twice in {names}")
    if not (int(max_iterations) == max_iterations and max_iterations >= 1) or not tolerance > 0.0:
        raise ValueError("calibrate: max_iterations must be a whole number >= 1 and tolerance > 0")
    if isinstance(run, DifferentiableRun):
        for p in parameters:
            p.check_for_run()
        with float64():
            return _fit(_Problem(run, parameters, residual, data), parameters, method, int(max_iterations), tolerance)
    if not callable(run):
        raise TypeError(
            f"calibrate: run must be a DifferentiableRun or a function simulate(values) -> outputs, got "
            f"{type(run).__name__}"
        )
    return _fit(_Simulated(run, parameters, residual, data), parameters, method, int(max_iterations), tolerance)


def _fit(problem, parameters, method, max_iterations, tolerance) -> Calibration:
    u = np.array([p.to_internal(p.initial) for p in parameters])
    lo, hi = (np.array(b) for b in zip(*(p.bounds() for p in parameters)))
    start = time.perf_counter()
    r, branches, ok = problem.evaluate(u)
    if not ok.all():
        at = dict(zip([p.name for p in parameters], _values(parameters, u)))
        if isinstance(problem, _Simulated):
            raise ArithmeticError(f"calibrate: the run at the initial parameters {at} failed: {problem.failure}")
        raise ArithmeticError(
            f"calibrate: the run at the initial parameters {at} does not solve step {int(np.argmin(ok))} "
            "(its pivoting did not converge, a number was not finite, or 0 <= mu_k <= mu_s did not hold)"
        )
    if method != "nelder-mead" and isinstance(problem, _Problem):
        problem.jacobian(u)  # compiled here, apart from the fit's time
    compile_s = time.perf_counter() - start
    wall0, cpu0 = time.perf_counter(), time.process_time()
    loss0 = 0.5 * float(r @ r)
    state = {"u": u, "r": r, "loss": loss0, "branches": branches, "changes": 0,
             "history": [(*_values(parameters, u), loss0)]}  # fmt: skip

    def accept(u_new, r_new, loss_new, branches_new):
        if not np.array_equal(branches_new, state["branches"]):
            state["changes"] += 1
        state.update(u=u_new, r=r_new, loss=loss_new, branches=branches_new)
        state["history"].append((*_values(parameters, u_new), loss_new))

    if method == "nelder-mead":
        converged, message, iterations = _nelder_mead(problem, parameters, u, lo, hi, tolerance, accept, state)
    else:
        converged, message, iterations = _descent(problem, method, lo, hi, max_iterations, tolerance, accept, state)
    return Calibration(
        method=method,
        values=dict(zip([p.name for p in parameters], _values(parameters, state["u"]))),
        loss=state["loss"],
        initial_loss=loss0,
        iterations=iterations,
        runs=problem.runs,
        jacobians=problem.jacobians,
        converged=converged,
        message=message,
        history=tuple(state["history"]),
        branch_changes=state["changes"],
        wall_s=time.perf_counter() - wall0,
        cpu_s=time.process_time() - cpu0,
        compile_s=compile_s,
    )


def _values(parameters, u) -> list[float]:
    return [float(p.to_value(x)) for p, x in zip(parameters, u)]


def _trial(problem, u):
    r, branches, ok = problem.evaluate(u)
    loss = 0.5 * float(r @ r) if ok.all() and np.all(np.isfinite(r)) else math.inf
    return r, loss, branches


def _descent(problem, method, lo, hi, max_iterations, tolerance, accept, state):
    """Levenberg–Marquardt (Gauss–Newton with damping λ diag(JᵀJ)) or gradient descent with
    backtracking, both projected on the bounds."""
    damping, step_size = 1e-3, None
    for iteration in range(1, max_iterations + 1):
        u, r = state["u"], state["r"]
        J = problem.jacobian(u)
        if not np.all(np.isfinite(J)):
            return False, f"the Jacobian at {_values(problem.parameters, u)} is not finite", iteration - 1
        g = J.T @ r
        A = J.T @ J
        for _ in range(30):  # damping or step size until the loss goes down
            if method == "gauss-newton":
                scale = np.diag(A) + 1e-300
                try:  # the damped normal equations; an exactly singular one (a parameter the run ignores) by lstsq
                    step = np.linalg.solve(A + damping * np.diag(scale), -g)
                except np.linalg.LinAlgError:
                    step = np.linalg.lstsq(A + damping * np.diag(scale), -g, rcond=None)[0]
            else:
                step_size = step_size or 1.0 / max(np.linalg.norm(A, 2), 1e-300)
                step = -step_size * g
            u_new = np.clip(u + step, lo, hi)
            r_new, loss_new, branches = _trial(problem, u_new)
            if loss_new < state["loss"]:
                break
            if method == "gauss-newton":
                damping *= 4.0
            else:
                step_size *= 0.5
        else:
            return True, "no step lowers the loss: at a minimum (or a kink of the loss) to rounding", iteration - 1
        before = state["loss"]
        accept(u_new, r_new, loss_new, branches)
        if method == "gauss-newton":
            damping = max(damping / 3.0, 1e-12)
        else:
            step_size *= 1.5
        moved = np.max(np.abs(u_new - u) / np.maximum(np.abs(u), 1.0))
        fell = (before - loss_new) / before
        if fell <= tolerance:
            return True, f"converged: the last iterate lowered the loss by {fell:.1e} of it", iteration
        if moved <= tolerance:
            return True, f"converged: the last iterate moved the parameters by {moved:.1e} of their size", iteration
    return False, f"stopped after {max_iterations} iterations", max_iterations


def _nelder_mead(problem, parameters, u, lo, hi, tolerance, accept, state):
    from scipy.optimize import minimize

    def loss(x):
        r, value, branches = _trial(problem, np.asarray(x))
        if value < state["loss"]:
            accept(np.asarray(x, float).copy(), r, value, branches)
        return value

    bounds = list(zip(np.where(np.isfinite(lo), lo, None), np.where(np.isfinite(hi), hi, None)))
    options = {"xatol": tolerance, "fatol": tolerance * state["loss"], "maxfev": 200 * len(u)}
    result = minimize(loss, u, method="Nelder-Mead", bounds=bounds, options=options)
    return bool(result.success), str(result.message), int(result.nit)
