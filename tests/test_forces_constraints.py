"""Applied forces, springs, non-holonomic constraints and the fixed-point option, against closed forms."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
import pytest

from lcpdyn import BodyForce, Nonholonomic, Plane, PointContact, RigidBody, Simulation, SphereContact, SpringDamper
from lcpdyn.friction import Regularized
from lcpdyn.model import Model


def test_spring_mass_oscillates_with_the_closed_form_period():
    """m = 2 kg on k = 50 N/m (no gravity), released at x = 0.1 m: x(t) = 0.1 cos(sqrt(k/m) t)."""
    model = Model(gravity=(0.0, 0.0, 0.0))
    mass = model.add_body(RigidBody("mass", 2.0, (0.1, 0.1, 0.1), position=(0.1, 0.0, 0.0)))
    model.add_force(SpringDamper(mass, (0.0, 0.0, 0.0), None, (0.0, 0.0, 0.0), stiffness=50.0, rest_length=0.0))
    trajectory = Simulation(model, "coulomb", 1e-4, position_update="symplectic").run(2.0)
    omega = math.sqrt(50.0 / 2.0)
    np.testing.assert_allclose(trajectory.position[:, 0, 0], 0.1 * np.cos(omega * trajectory.t), atol=2e-4)
    np.testing.assert_allclose(trajectory.energy, 0.5 * 50.0 * 0.1**2, rtol=3e-4)


def test_spring_damper_decays_at_the_closed_form_rate():
    """c = 2 N s/m, m = 2 kg: the amplitude decays like exp(-c t / (2 m))."""
    model = Model(gravity=(0.0, 0.0, 0.0))
    mass = model.add_body(RigidBody("mass", 2.0, (0.1, 0.1, 0.1), position=(0.1, 0.0, 0.0)))
    model.add_force(SpringDamper(mass, (0.0, 0.0, 0.0), None, (0.0, 0.0, 0.0), stiffness=50.0, damping=2.0))
    trajectory = Simulation(model, "coulomb", 1e-4, position_update="symplectic").run(3.0)
    energy_ratio = trajectory.energy[-1] / trajectory.initial_energy
    period = 2 * math.pi / math.sqrt(50.0 / 2.0 - (2.0 / 4.0) ** 2)
    # over whole periods the energy decays like exp(-c t / m) (cycle average)
    whole = int(3.0 / period) * period
    index = int(round(whole / 1e-4)) - 1
    assert trajectory.energy[index] / trajectory.initial_energy == pytest.approx(math.exp(-2.0 * whole / 2.0), rel=0.02)
    assert energy_ratio < 0.06


def test_ball_rolling_down_an_incline_under_a_nonholonomic_constraint():
    """A solid sphere (I = 2/5 m R^2) rolling without slip, imposed as a non-holonomic
    constraint (contact-point velocity in the plane = 0) on a frictionless contact:
    acceleration (5/7) g sin(theta)."""
    angle = math.radians(30)
    plane = Plane.inclined(angle)
    radius, mass = 0.2, 1.5
    model = Model()
    ball = model.add_body(RigidBody("ball", mass, (0.4 * mass * radius**2,) * 3, position=radius * plane.normal))
    model.add_contact(SphereContact(ball, plane, 0.0, radius=radius))
    normal, t1, t2 = (jnp.asarray(x) for x in (plane.normal, plane.t1, plane.t2))

    def slip(state):
        contact_point = state.position(ball) - radius * normal
        velocity = state.point_velocity(ball, contact_point)
        return jnp.stack([t1 @ velocity, t2 @ velocity])

    model.add_constraint(Nonholonomic(slip, 2, name="rolling"))
    trajectory = Simulation(model, "coulomb", 1e-3).run(1.0)
    downhill = trajectory.velocity[:, 0] @ plane.t1
    # each step is exact to the solver tolerance (1e-9 relative): ~1e-8 m/s after 1000 steps
    np.testing.assert_allclose(downhill, 5.0 / 7.0 * 9.81 * math.sin(angle) * trajectory.t, rtol=0, atol=1e-7)
    spin = np.linalg.norm(trajectory.angular_velocity[:, 0], axis=1)
    np.testing.assert_allclose(spin * radius, np.abs(downhill), rtol=0, atol=1e-7)


@pytest.mark.parametrize("iterations,bound,exact", [(0, "box", False), (2, "box", True), (0, "cone", True)])
def test_normal_force_iterations_move_the_bound_to_the_current_normal_force(iterations, bound, exact):
    """A puck sliding under a vertical force that changes every step: with the paper's
    previous-step bound |lam_T| = mu lam_N(t - h) (Eq. 12, ``static_bound="box"``); after
    fixed-point passes mu lam_N+. The cone (``static_bound="cone"``) takes its bounds' lam_N
    from the last pass in its basis passes, which end only once lam_N settles: mu lam_N+ as well."""
    model = Model()
    puck = model.add_body(RigidBody("puck", 1.0, (0.01, 0.01, 0.01), velocity=(3.0, 0.0, 0.0)))
    model.add_force(BodyForce(puck, lambda t, state: (jnp.array([0.0, 0.0, -5.0 * jnp.sin(20.0 * t)]), jnp.zeros(3))))
    model.add_contact(PointContact(puck, Plane(), 0.3))
    friction = Regularized(static_bound=bound)
    trajectory = Simulation(model, friction, 1e-3, normal_force_iterations=iterations).run(0.3)
    ratio = np.linalg.norm(trajectory.contact_friction_force[:, 0], axis=1) / (
        0.3 * trajectory.contact_normal_force[:, 0]
    )
    if exact:
        np.testing.assert_allclose(ratio, 1.0, rtol=1e-9)
    else:
        assert np.max(np.abs(ratio[1:] - 1.0)) > 1e-3


@pytest.mark.parametrize(
    "function,culprit",
    [
        (lambda t, s: (jnp.array([1.0, 0.0]), jnp.zeros(3)), "got shapes (2,) and (3,)"),
        (lambda t, s: (jnp.zeros(3), jnp.zeros((3, 1))), "got shapes (3,) and (3, 1)"),
        (lambda t, s: jnp.zeros(3), "got an array of shape (3,)"),
        (lambda t, s: None, "got NoneType"),
    ],
)
def test_a_body_force_of_the_wrong_shape_is_named_when_the_simulation_is_built(function, culprit):
    """A force function returning a 2-vector used to end in JAX's "Incompatible types for
    broadcasting"; its body and the shapes are named now, before any step."""
    model = Model()
    body = model.add_body(RigidBody("pushed", 1.0, np.eye(3) * 0.1, position=(0.0, 0.0, 1.0)))
    model.add_force(BodyForce(body, function))
    with pytest.raises(ValueError, match="BodyForce on body 'pushed'") as info:
        Simulation(model, Regularized(), 1e-3)
    assert culprit in str(info.value)


def test_a_body_force_may_be_one_array_of_its_force_and_torque_rows():
    model = Model()
    body = model.add_body(RigidBody("pushed", 2.0, np.eye(3) * 0.1, position=(0.0, 0.0, 1.0)))
    model.add_force(BodyForce(body, lambda t, s: jnp.array([[4.0, 0.0, 0.0], [0.0, 0.0, 0.0]])))
    sim = Simulation(model, Regularized(), 1e-3)
    sim.step()
    assert sim.v[0] == pytest.approx(2.0 * 1e-3, rel=1e-12)  # a = F / m along x
