"""Analytic physics checks of the stepper under each friction model."""

from __future__ import annotations

import math

import numpy as np
import pytest

import scenes
from lcpdyn.body import RigidBody
from lcpdyn.constraints import BallJoint
from lcpdyn.friction import Polygonal, Regularized
from lcpdyn.model import Model
from lcpdyn.stepper import Simulation
from scenes.blocks import InclineBlock, Puck, SlidingBlock, SlidingSphere

from .engine_helpers import sphere_model, wheel_model

MODELS = ["regularized", "coulomb", "box", "polygonal"]


# --- energy ------------------------------------------------------------------------------
@pytest.mark.parametrize("update", ["paper", "symplectic"])
def test_frictionless_sphere_conserves_energy_exactly(update):
    """A sphere sliding and spinning on a frictionless plane: no gyroscopic term (isotropic
    inertia), N v = 0: the discrete energy is constant to rounding."""
    trajectory = Simulation(sphere_model(), "coulomb", 1e-3, position_update=update).run(1.0)
    np.testing.assert_allclose(trajectory.energy, trajectory.initial_energy, rtol=1e-12)
    np.testing.assert_allclose(trajectory.contact_gap, 0.0, atol=1e-12)


def test_frictionless_tilted_disk_energy_error_is_first_order():
    """mu = 0 tilted spinning disk: the contact does no work; the energy error of the
    semi-explicit scheme shrinks linearly with h (it is integration error, not contact work)."""
    errors = []
    for h in (2e-3, 1e-3, 5e-4):
        model = wheel_model(mu=0.0, theta_deg=10.0, velocity=(0.0, 0.0, 0.0), angular_velocity=(0.0, 0.0, 3.0))
        trajectory = Simulation(model, "coulomb", h, position_update="symplectic").run(0.5)
        errors.append(np.max(np.abs(trajectory.energy - trajectory.initial_energy)))
    assert errors[0] > errors[1] > errors[2]
    assert errors[1] / errors[2] == pytest.approx(2.0, rel=0.3)
    assert errors[2] < 2e-3 * float(trajectory.initial_energy)


def test_pendulum_on_ball_joint_energy_bounded_with_symplectic_update():
    model = Model()
    bob = model.add_body(RigidBody("bob", 1.0, (0.01, 0.01, 0.01), position=(1.0, 0.0, 0.0)))
    model.add_constraint(BallJoint(body_a=bob, offset_a=(-1.0, 0.0, 0.0), offset_b=(0.0, 0.0, 0.0)))
    trajectory = Simulation(model, "coulomb", 1e-3, position_update="symplectic").run(3.0)
    length = np.linalg.norm(trajectory.position[:, 0], axis=1)
    np.testing.assert_allclose(length, 1.0, atol=1e-5)
    # a compound pendulum (I = 0.01 about the bob's centre): v_bottom^2 = 2 g L / (1 + I/(m L^2)),
    # up to the integrator's O(h) energy error
    assert np.max(np.linalg.norm(trajectory.velocity[:, 0], axis=1)) == pytest.approx(
        math.sqrt(2 * 9.81 / 1.01), rel=5e-3
    )
    assert np.max(np.abs(trajectory.energy - trajectory.initial_energy)) < 0.05


# --- sliding and sticking ----------------------------------------------------------------
@pytest.mark.parametrize("friction", MODELS)
def test_sliding_block_decelerates_at_mu_g_and_stops_where_it_should(friction):
    scene = SlidingBlock.build()
    trajectory = Simulation(scene.model, scene.friction(friction), scene.dt).run(scene.t_end)
    stop_time, stop_distance = SlidingBlock.stopping(scene.parameters)
    vx = trajectory.velocity[:, 0, 0]
    t = trajectory.t
    sliding = t < stop_time - 0.01
    expected = scene.parameters["speed"] - scene.parameters["mu"] * 9.81 * t[sliding]
    np.testing.assert_allclose(vx[sliding], expected, atol=1e-9)
    assert np.all(np.abs(vx[t > stop_time + 0.01]) < 1e-9)
    assert trajectory.position[-1, 0, 0] == pytest.approx(stop_distance, abs=scene.parameters["speed"] * scene.dt)
    # no lift-off and no tipping: normal velocity and gap stay at zero to solver tolerance
    # (relative residual 1e-9 on a problem of scale ~ 1 + |q|: about 1e-8 m/s), total normal force m g
    np.testing.assert_allclose(trajectory.velocity[:, 0, 2], 0.0, atol=1e-8)
    np.testing.assert_allclose(trajectory.contact_gap, 0.0, atol=1e-8 * scene.dt)
    # impulses are exact to ~1e-8 N s (the tolerance), i.e. forces to ~1e-5 N at h = 1 ms
    np.testing.assert_allclose(trajectory.contact_normal_force.sum(axis=1), 9.81, rtol=0, atol=1e-8 / scene.dt)
    assert np.all(trajectory.solver_status == 0)


@pytest.mark.parametrize("friction", MODELS)
@pytest.mark.parametrize("angle_deg", [20.0, 26.0, 27.0, 35.0])
def test_incline_block_sticks_iff_tan_theta_le_mu(friction, angle_deg):
    """mu = 0.5: tan(26 deg) = 0.488 sticks, tan(27 deg) = 0.510 slides."""
    scene = InclineBlock.build(angle_deg=angle_deg)
    trajectory = Simulation(scene.model, scene.friction(friction), scene.dt).run(scene.t_end)
    downhill = np.array([math.cos(math.radians(angle_deg)), 0.0, -math.sin(math.radians(angle_deg))])
    travelled = trajectory.position[:, 0] @ downhill
    speed = trajectory.velocity[:, 0] @ downhill
    a = InclineBlock.acceleration(scene.parameters)
    if a == 0.0:
        assert np.max(np.abs(trajectory.position[:, 0])) < 1e-9  # bristle creep at k_T = 1e10 is ~1e-10 m
    else:
        np.testing.assert_allclose(speed, a * trajectory.t, rtol=1e-9, atol=1e-9)
        assert travelled[-1] == pytest.approx(0.5 * a * scene.t_end**2, rel=scene.dt / scene.t_end * 2)


@pytest.mark.parametrize("heading", [0.0, 22.5, 45.0])
@pytest.mark.parametrize("friction", ["regularized", "coulomb"])
def test_puck_keeps_heading_with_full_coulomb_force(friction, heading):
    scene = Puck.build(heading_deg=heading)
    trajectory = Simulation(scene.model, scene.friction(friction), scene.dt).run(scene.t_end)
    sliding = np.linalg.norm(trajectory.contact_slip_velocity[:, 0], axis=1) > 0.01
    assert sliding.sum() > 100
    velocity = trajectory.velocity[sliding, 0]
    np.testing.assert_allclose(np.degrees(np.arctan2(velocity[:, 1], velocity[:, 0])), heading, atol=1e-9)
    ratio = np.linalg.norm(trajectory.contact_friction_force[sliding, 0], axis=1) / (
        scene.parameters["mu"] * trajectory.contact_normal_force[sliding, 0]
    )
    np.testing.assert_allclose(ratio, 1.0, rtol=1e-9)


@pytest.mark.parametrize(
    "friction,heading,ratio",
    [
        ("box", 0.0, 1.0),
        ("box", 45.0, math.sqrt(2.0)),
        (Polygonal(4), 0.0, 1.0),
        (Polygonal(4), 45.0, math.sqrt(0.5)),
        (Polygonal(8), 22.5, math.cos(math.pi / 8)),
    ],
)
def test_box_and_pyramid_closed_forms(friction, heading, ratio):
    """Box: sqrt(2) mu lam_N for slip diagonal to the basis; a k-gon inscribed in the cone:
    cos(pi/k) mu lam_N for slip normal to a facet (0.707 for the pyramid, k = 4)."""
    scene = Puck.build(heading_deg=heading)
    trajectory = Simulation(
        scene.model, friction if not isinstance(friction, str) else scene.friction(friction), scene.dt
    ).run(scene.t_end)
    sliding = np.linalg.norm(trajectory.contact_slip_velocity[:, 0], axis=1) > 0.01
    assert sliding.sum() > 100
    measured = np.linalg.norm(trajectory.contact_friction_force[sliding, 0], axis=1) / (
        scene.parameters["mu"] * trajectory.contact_normal_force[sliding, 0]
    )
    np.testing.assert_allclose(measured, ratio, rtol=1e-9)
    velocity = trajectory.velocity[sliding, 0]
    np.testing.assert_allclose(np.degrees(np.arctan2(velocity[:, 1], velocity[:, 0])), heading, atol=1e-9)


def test_box_at_22_5_degrees_turns_the_puck():
    """The box's force sits on a corner (45 deg): misaligned with a 22.5 deg slip, it bends the path."""
    scene = Puck.build(heading_deg=22.5)
    trajectory = Simulation(scene.model, "box", scene.dt).run(scene.t_end)
    velocity = trajectory.velocity[:, 0]
    moving = np.linalg.norm(velocity, axis=1) > 0.05
    heading = np.degrees(np.arctan2(velocity[moving, 1], velocity[moving, 0]))
    assert heading[-1] < 22.5 - 1.0


def test_wheel_sliding_never_lifts_off():
    """The sliding wheel keeps contact (lam_N > 0 at every step); its gap error is the O(h^2)
    term of the contact point moving over the curved rim (~ h^2 v^2 / R, corrected each step),
    so it shrinks fourfold when h is halved -- no drift."""
    worst = []
    for h in (1e-3, 5e-4):
        scene = scenes.wheel.build(t_end=1.0, dt=h)
        trajectory = Simulation(scene.model, scene.friction("regularized"), scene.dt).run(scene.t_end)
        assert np.all(trajectory.contact_normal_force > 0)
        assert np.all(np.linalg.norm(trajectory.contact_slip_velocity[:, 0], axis=1) > 0.01)  # it slides throughout
        worst.append(np.max(np.abs(trajectory.contact_gap)))
    assert worst[0] < (1e-3**2) * 6.5**2 / 0.5
    assert worst[0] / worst[1] > 3.0


# --- regularized -> coulomb ----------------------------------------------------------------
def test_regularized_converges_to_coulomb_as_h_decreases():
    """Across the slide-to-roll transition (t = 2.3 s) the regularized wheel approaches the
    Coulomb wheel as h -> 0."""
    differences = []
    for h in (2e-3, 1e-3, 5e-4):
        runs = {}
        for name in ("regularized", "coulomb"):
            scene = scenes.wheel.build(dt=h, t_end=2.3)
            runs[name] = Simulation(scene.model, scene.friction(name), h).run(scene.t_end)
        differences.append(
            np.max(np.linalg.norm(runs["regularized"].position[:, 0] - runs["coulomb"].position[:, 0], axis=1))
        )
    assert differences[0] > differences[1] > differences[2]
    assert differences[2] < 1e-3


def test_infinite_tangential_stiffness_sticks_rigidly():
    scene = InclineBlock.build(angle_deg=20.0)
    trajectory = Simulation(scene.model, Regularized(tangential_stiffness=math.inf), scene.dt).run(scene.t_end)
    np.testing.assert_allclose(trajectory.position[:, 0], 0.0, atol=1e-12)


# --- static and kinetic coefficients (issue 5) ------------------------------------------------
@pytest.mark.parametrize("friction", MODELS)
def test_incline_between_kinetic_and_static_coefficients_holds_without_creep(friction):
    """mu_k = 0.4 < tan(30 deg) = 0.577 < mu_s = 0.8: a block at rest stays at rest (no creep
    beyond the bristle deflection m g sin / k_T ~ 5e-10 m)."""
    scene = InclineBlock.build(angle_deg=30.0, mu=0.4, mu_static=0.8, t_end=1.0)
    trajectory = Simulation(scene.model, scene.friction(friction), scene.dt).run(scene.t_end)
    assert np.max(np.abs(trajectory.position[:, 0])) < 1e-9
    assert np.max(np.abs(trajectory.position[-1, 0] - trajectory.position[len(trajectory.t) // 2, 0])) < 1e-12


@pytest.mark.parametrize("friction", MODELS)
def test_incline_steeper_than_static_coefficient_breaks_away_at_kinetic_rate(friction):
    """tan(40 deg) = 0.839 > mu_s = 0.8: it breaks away and then slides at g (sin - mu_k cos)."""
    scene = InclineBlock.build(angle_deg=40.0, mu=0.4, mu_static=0.8, t_end=0.5)
    trajectory = Simulation(scene.model, scene.friction(friction), scene.dt).run(scene.t_end)
    downhill = np.array([math.cos(math.radians(40.0)), 0.0, -math.sin(math.radians(40.0))])
    speed = trajectory.velocity[:, 0] @ downhill
    sliding = speed > 0.05
    rate = np.diff(speed[sliding]) / scene.dt
    np.testing.assert_allclose(rate, InclineBlock.acceleration(scene.parameters), rtol=1e-8)
    assert InclineBlock.acceleration(scene.parameters) == pytest.approx(
        9.81 * (math.sin(math.radians(40.0)) - 0.4 * math.cos(math.radians(40.0)))
    )


def test_static_coefficient_below_kinetic_is_rejected():
    with pytest.raises(ValueError, match="mu_static = 0.3 is below the kinetic mu = 0.5"):
        InclineBlock.build(mu=0.5, mu_static=0.3)


# --- the continuous law (Bauchau 2002 Eq. 28) ----------------------------------------------------
def test_continuous_law_creeps_down_an_incline_at_the_closed_form_speed():
    """tan(20 deg) = 0.364 < mu = 0.5: instead of sticking, the block creeps at the speed where
    mu cos (1 - exp(-v/v0)) = sin, i.e. v = -v0 ln(1 - tan / mu)."""
    from lcpdyn.friction import Continuous

    v0 = 0.01
    scene = InclineBlock.build(angle_deg=20.0, t_end=0.5)
    trajectory = Simulation(scene.model, Continuous(v0), 1e-4).run(scene.t_end)
    downhill = np.array([math.cos(math.radians(20.0)), 0.0, -math.sin(math.radians(20.0))])
    creep = -v0 * math.log(1.0 - math.tan(math.radians(20.0)) / 0.5)
    assert trajectory.velocity[-1, 0] @ downhill == pytest.approx(creep, rel=1e-6)


def test_continuous_law_slides_at_nearly_mu_g():
    """Far above v0 the factor 1 - exp(-v/v0) is 1: the sliding block decelerates at mu g."""
    from lcpdyn.friction import Continuous

    scene = SlidingBlock.build(t_end=0.2)
    trajectory = Simulation(scene.model, Continuous(1e-3), scene.dt).run(scene.t_end)
    expected = scene.parameters["speed"] - scene.parameters["mu"] * 9.81 * trajectory.t
    np.testing.assert_allclose(trajectory.velocity[:, 0, 0], expected, atol=1e-9)


@pytest.mark.parametrize("friction", ["coulomb", "box", "polygonal", "regularized"])
@pytest.mark.parametrize("past_deg", [0.02, 5.0])
def test_breakaway_takes_the_kinetic_coefficient_in_its_first_step(friction, past_deg):
    """Issue 44, item 1: mu_s = 0.6, mu_k = 0.3, the incline 0.02 degrees past atan mu_s. Static
    friction cannot hold the block, so Coulomb's law has it slide at once at g (sin - mu_k cos) =
    2.53 m/s^2. It used to creep at mu_s (0.004 m/s^2) for 2.5 s, until its slip passed
    ``static_threshold``: the step tried mu_s, found it sliding, and kept mu_s. Now the step
    solves again with mu_k: the first step's velocity is h g (sin - mu_k cos), and so is every
    step's increment."""
    angle = math.degrees(math.atan(0.6)) + past_deg
    scene = InclineBlock.build(angle_deg=angle, mu=0.3, mu_static=0.6, t_end=0.02)
    trajectory = Simulation(scene.model, scene.friction(friction), scene.dt).run(scene.t_end)
    downhill = np.array([math.cos(math.radians(angle)), 0.0, -math.sin(math.radians(angle))])
    speed = trajectory.velocity[:, 0] @ downhill
    kinetic = InclineBlock.acceleration(scene.parameters)
    assert kinetic == pytest.approx(9.81 * (math.sin(math.radians(angle)) - 0.3 * math.cos(math.radians(angle))))
    np.testing.assert_allclose(np.diff(speed) / scene.dt, kinetic, rtol=1e-8)
    assert trajectory.t[0] == scene.dt and speed[0] == pytest.approx(kinetic * scene.dt, rel=1e-8)  # from rest


@pytest.mark.parametrize("mu", [1e5, 1e6])
def test_a_huge_mu_stops_the_slip_in_one_step_instead_of_reversing_it(mu):
    """Issue 46, item 4: a sphere launched at 2 m/s without spin, mu = 1e5 or 1e6. Coulomb's law
    stops the slip at once (the impulse mu lam_N h is far more than the momentum), and the sphere
    rolls at 5/7 of its speed. The regularized model's kinetic branch applied the full mu lam_N
    impulse against the start slip and drove it back: the velocity flipped between 0.43 and
    0.99 m/s every step, every step SOLVED. A kinetic contact whose slip reverses within the step
    is now solved again in the static branch (docs/theory/step.md): it rolls at 5/7 v0, as under
    ``coulomb``, the bristle's elastic slip (5.7e-5 m/s) gone within four steps; the compiled loop
    gives that step to the ordinary step."""
    scene = SlidingSphere.build(mu=mu, t_end=0.02)
    for friction, compiled in (("regularized", False), ("regularized", True), ("coulomb", False)):
        sim = Simulation(scene.model, scene.friction(friction), scene.dt, compiled_loop=compiled)
        trajectory = sim.run(scene.t_end)
        assert np.all(trajectory.solver_status == 0)
        np.testing.assert_allclose(trajectory.velocity[:, 0, 0], 2.0 * 5.0 / 7.0, rtol=2e-5)
        slip = np.linalg.norm(trajectory.contact_slip_velocity[:, 0], axis=1)
        assert slip.max() < 1e-4 and slip[4:].max() < 1e-9, friction
        if compiled:  # the loop hands the step whose slip reversed to the ordinary step, then goes on
            assert sim.loop_steps["compiled"] > 10
