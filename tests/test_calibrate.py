"""Parameters fitted to trajectories through a differentiable run (lcpdyn.calibrate; issue 49,
item 5): known truths recovered from data the ordinary simulation made, by Gauss–Newton, gradient
descent and Nelder–Mead on the same loss; a caller's own number through ``apply``; bad input
refused by name."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
import pytest

from lcpdyn.calibrate import Parameter, calibrate, stepped
from lcpdyn.differentiable_run import DifferentiableRun
from lcpdyn.friction import Regularized
from scenes import build_scene

pytestmark = pytest.mark.one_leg  # proven once per two-leg test command (conftest.dealt_leg)


def _position_residual(outputs, data):
    return (outputs.q[:, :3] - data[:, :3]) / 1e-3  # per mm


@pytest.fixture(scope="module")
def sphere():
    """The sliding sphere for 80 steps (sliding throughout), its data made by the ordinary step at
    mu = 0.4, and a differentiable run of it."""
    data, _ = stepped(build_scene("sliding-sphere", mu=0.4).simulation("regularized"), 80)
    scene = build_scene("sliding-sphere")  # mu = 0.5: the run's own value, which the fit replaces
    return scene, data, DifferentiableRun(scene.simulation("regularized"), 80)


@pytest.mark.parametrize("method", ["gauss-newton", "gradient", "nelder-mead"])
def test_a_sliding_spheres_mu_is_recovered_by_every_method(sphere, method):
    """x_N = x_0 + N h v0 - mu g h² N(N+1)/2 is linear in mu: Gauss–Newton lands on mu = 0.4 in
    its first iterate; gradient descent and Nelder–Mead reach it too, on the same loss."""
    _, data, run = sphere
    fit = calibrate(run, [Parameter("mu", 0.1, 0.0, 1.0)], _position_residual, data, method=method)
    assert fit.converged and fit.loss < 1e-12 * fit.initial_loss
    assert fit.values["mu"] == pytest.approx(0.4, abs={"nelder-mead": 1e-7}.get(method, 1e-10))
    if method == "gauss-newton":
        assert fit.history[1][0] == pytest.approx(0.4, rel=2e-3) and fit.jacobians <= 6  # damping 1e-3
    assert fit.branch_changes == 0 and fit.runs >= fit.iterations and fit.compile_s > 0.0


def test_a_callers_own_number_goes_in_through_apply(sphere):
    """The launch speed as the caller's parameter: apply puts it into v0 (the extension point for a
    model's own numbers); recovered from positions made at the scene's 2 m/s."""
    scene, _, run = sphere
    v0 = np.asarray(run.inputs["v0"])
    direction = v0[:3] / np.linalg.norm(v0[:3])
    sim = scene.simulation("regularized")
    data, _ = stepped(sim, 80)
    speed = float(np.linalg.norm(v0[:3]))

    def launch(inputs, value):
        inputs["v0"] = inputs["v0"].at[:3].set(value * jnp.asarray(direction))
        return inputs

    parameter = Parameter("launch", 0.5 * speed, 0.0, 10.0, apply=launch)  # forward runs only: one compile
    fit = calibrate(run, [parameter], _position_residual, data, method="nelder-mead")
    assert fit.values["launch"] == pytest.approx(speed, rel=1e-7)


def test_the_wheels_mu_and_bristle_stiffness_are_recovered_from_its_rolling():
    """The Peiret wheel made by the ordinary step at mu = 0.3 and k_T = 1e5 N/m for 4 s (it
    slides, then rolls on its bristles from t ~ 2 s): Gauss–Newton from mu = 0.2, k_T = 1e7
    (fitted in log10) recovers both, k_T to 1e-6, crossing the switch from sliding to rolling.
    Positions and spins: the bristles show in the spin while it rolls (from positions alone the
    fit ends at k_T's upper bound with mu off by 2e-6, which the guide says)."""
    scene = build_scene("wheel")
    steps = 4000
    data = stepped(scene.simulation(Regularized(tangential_stiffness=1e5)), steps)
    run = DifferentiableRun(scene.simulation("regularized"), steps)

    def residual(outputs, data):  # positions per mm, spins per 0.01 rad/s
        q, v = data
        positions, spins = outputs.q[:, :3] - q[:, :3], outputs.v[:, 3:] - v[:, 3:]
        return jnp.concatenate([jnp.ravel(positions) / 1e-3, jnp.ravel(spins) / 1e-2])

    parameters = [Parameter("mu", 0.2, 0.0, 1.0), Parameter("tangential_stiffness", 1e7, 1e3, 1e12, log=True)]
    fit = calibrate(run, parameters, residual, data)
    assert fit.converged, fit.message
    assert fit.values["mu"] == pytest.approx(0.3, rel=1e-9)
    assert fit.values["tangential_stiffness"] == pytest.approx(1e5, rel=1e-6)
    assert fit.branch_changes >= 1  # the iterates' runs rolled from different steps on


def test_static_friction_is_recovered_through_a_smoothed_column():
    """The incline block's pull test of the gallery's calibration page (mu_k = 0.4, mu_s = 0.5,
    5 N/s: breakaway at 0.251 s; 600 steps of exact data, the distance slid in units of 1 % of
    the last one), from mu_k = 0.3, mu_s = 0.6: the page's programs, which its build then takes
    from the XLA cache. mu_s acts only through the step the block breaks away in, so its exact
    Jacobian column is 0 and Gauss–Newton leaves it where it started; with ``smoothing`` (the
    column by a central difference of width 0.005) it lands in the stair of mu_s the data cannot
    split (c h / (m g cos) = 5.4e-4 wide), with mu_k to 1e-8 and the loss at rounding."""
    from scenes.blocks import InclineBlock

    steps, angle = 600, math.radians(20.0)
    scene = InclineBlock.build(mu=0.4, mu_static=0.5, pull_rate=5.0)
    downhill = np.array([math.cos(angle), 0.0, -math.sin(angle)])
    origin = scene.model.bodies[0].position
    q, _ = stepped(scene.simulation("regularized"), steps)
    distance = (q[:, :3] - origin) @ downhill
    noise = 0.01 * distance[-1]

    def residual(outputs, data):  # as the page's
        return ((outputs.q[:, :3] - jnp.asarray(origin)) @ jnp.asarray(downhill) - data) / noise

    run = DifferentiableRun(InclineBlock.build(mu=0.3, mu_static=0.6, pull_rate=5.0).simulation("regularized"), steps)
    mu_k = Parameter("mu", 0.3, 0.05, 1.0)
    stuck = calibrate(run, [mu_k, Parameter("mu_static", 0.6, 0.05, 1.0)], residual, distance)
    assert stuck.values["mu_static"] == 0.6 and stuck.loss > 1.0
    fit = calibrate(run, [mu_k, Parameter("mu_static", 0.6, 0.05, 1.0, smoothing=0.005)], residual, distance)
    width = 5.0 * 1e-3 / (9.81 * math.cos(angle))
    assert fit.converged and fit.loss < 1e-20 * fit.initial_loss
    assert fit.values["mu"] == pytest.approx(0.4, abs=1e-8) and abs(fit.values["mu_static"] - 0.5) < width
    assert fit.runs > fit.iterations + 2 * fit.jacobians - 1  # each smoothed column took two runs
    with pytest.raises(ArithmeticError, match=r"\{'mu_static': 0.2\} does not solve.*0 <= mu_k <= mu_s"):
        calibrate(run, [Parameter("mu_static", 0.2, 0.05, 1.0)], residual, distance)  # below mu_k = 0.3


def test_a_scene_the_run_does_not_take_is_fitted_through_simulate(sphere):
    """The same sphere through a function simulate(values) that runs it with the ordinary step
    (the route of scenes a differentiable run does not take: joints, creep rows, exact Coulomb):
    Gauss–Newton on central differences recovers mu = 0.4 as the differentiable run's fit does,
    two runs per Jacobian counted; a run that raises SimulationError at the start is refused with
    its message, and a later iterate whose run raises is rejected, not taken."""
    from lcpdyn.run.errors import SimulationError

    _, data, _ = sphere

    def simulate(values):
        if values["mu"] > 0.45:  # an iterate whose run fails: rejected
            raise SimulationError("the friction coefficient is out of the measured range", 0, 0.0)
        q, _ = stepped(build_scene("sliding-sphere", mu=values["mu"]).simulation("regularized"), 80)
        return q

    def residual(q, data):  # NumPy: the outputs are simulate's
        return (q[:, :3] - data[:, :3]) / 1e-3

    fit = calibrate(simulate, [Parameter("mu", 0.1, 0.0, 1.0)], residual, data)
    assert fit.converged and fit.values["mu"] == pytest.approx(0.4, abs=1e-9) and fit.loss < 1e-12 * fit.initial_loss
    assert fit.runs >= 1 + 2 * fit.jacobians + fit.iterations and fit.branch_changes == 0
    with pytest.raises(ArithmeticError, match=r"\{'mu': 0.5\} failed: SimulationError: .*measured range"):
        calibrate(simulate, [Parameter("mu", 0.5, 0.0, 1.0)], residual, data)


@pytest.mark.one_leg(leg="both")  # a quick refusal test: on both stacks
def test_bad_parameters_and_methods_are_refused_by_name(sphere):
    _, data, run = sphere
    with pytest.raises(ValueError, match="'mass'.*needs apply"):  # a differentiable run's own names, or apply
        calibrate(run, [Parameter("mass", 1.0)], _position_residual, data)
    with pytest.raises(TypeError, match="a DifferentiableRun or a function simulate"):
        calibrate("wheel", [Parameter("mu", 0.3)], _position_residual, data)
    with pytest.raises(ValueError, match="'mu': initial value 2.0 is outside its bounds"):
        Parameter("mu", 2.0, 0.0, 1.0)
    with pytest.raises(ValueError, match="'mu': lower is NaN"):
        Parameter("mu", 0.3, math.nan)
    with pytest.raises(ValueError, match="log=True needs a positive value"):
        Parameter("tangential_stiffness", 0.0, log=True)
    with pytest.raises(ValueError, match="'mu_static': smoothing must be finite and >= 0"):
        Parameter("mu_static", 0.5, smoothing=-0.01)
    with pytest.raises(ValueError, match="unknown method 'bfgs'"):
        calibrate(run, [Parameter("mu", 0.3)], _position_residual, data, method="bfgs")
    with pytest.raises(ValueError, match="named twice"):
        calibrate(run, [Parameter("mu", 0.3), Parameter("mu", 0.2)], _position_residual, data)
    with pytest.raises(TypeError, match="sequence of Parameter"):
        calibrate(run, [("mu", 0.3)], _position_residual, data)
    with pytest.raises(ValueError, match="'v0\\[9\\]': the run's v0 has 6 entries"):
        calibrate(run, [Parameter("v0[9]", 0.3)], _position_residual, data)

    def infinite_speed(inputs, value):
        inputs["v0"] = inputs["v0"].at[0].set(value * jnp.inf)
        return inputs

    with pytest.raises(ArithmeticError, match=r"initial parameters \{'speed': 1.0\} does not solve step 0"):
        calibrate(run, [Parameter("speed", 1.0, apply=infinite_speed)], _position_residual, data, method="nelder-mead")
