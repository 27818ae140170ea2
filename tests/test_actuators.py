"""Joint coordinates, motors and position servos (lcpdyn.actuators) against closed forms
(issue 47, item 3)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lcpdyn import RevoluteJoint, RigidBody, Simulation
from lcpdyn.actuators import JointCoordinate, JointMotor, position_servo
from lcpdyn.joints import CylindricalJoint, PrismaticJoint, UniversalJoint
from lcpdyn.model import Model
from lcpdyn.precision import float64
from lcpdyn.rotation import np_axis_angle, np_quaternion_multiply, np_rotation_matrix
from lcpdyn.state_view import StateView

H = 1e-3


def _disk(inertia=0.2, orientation=(1.0, 0.0, 0.0, 0.0)):
    model = Model(gravity=(0.0, 0.0, 0.0))
    disk = model.add_body(RigidBody("disk", 1.5, (0.3, 0.3, inertia), orientation=orientation))
    hinge = RevoluteJoint(body_a=disk, axis_a=(0.0, 0.0, 1.0), axis_b=(0.0, 0.0, 1.0), name="hinge")
    model.add_constraint(hinge)
    return model, disk, hinge


def _value(model, coordinate, q, v=None):
    v = np.zeros(6 * len(model.bodies)) if v is None else v
    with float64():
        view = StateView(model.index(), q, v)
        return float(coordinate.value(view)), float(coordinate.rate(view))


def test_coordinates_are_zero_at_assembly_and_follow_the_joint():
    start = np_axis_angle((1.0, 1.0, 0.0), 0.4)  # a tilted hinge: the angle is about its own axis
    model = Model(gravity=(0.0, 0.0, 0.0))
    base = model.add_body(RigidBody("base", 2.0, (0.1, 0.1, 0.1), orientation=start))
    arm = model.add_body(RigidBody("arm", 1.0, (0.1, 0.1, 0.1), position=(0.2, 0.0, 0.0), orientation=start))
    hinge = RevoluteJoint(body_a=arm, body_b=base, offset_a=(-0.2, 0.0, 0.0), axis_a=(0, 0, 1), axis_b=(0, 0, 1))
    angle = JointCoordinate(hinge)
    q, _ = model.initial_state()
    assert _value(model, angle, q) == pytest.approx((0.0, 0.0), abs=1e-15)
    axis = np_rotation_matrix(start) @ [0.0, 0.0, 1.0]
    for theta in (0.3, -2.0, 3.0):
        turned = q.copy().reshape(-1, 7)
        turned[1, 3:] = np_quaternion_multiply(np_axis_angle(axis, theta), start)
        v = np.zeros(12)
        v[9:12] = np_rotation_matrix(turned[1, 3:]).T @ (0.7 * axis)  # body-frame angular velocity
        value, rate = _value(model, angle, turned.reshape(-1), v)
        assert value == pytest.approx(theta, abs=1e-12)
        assert rate == pytest.approx(0.7, abs=1e-12)
    slider = PrismaticJoint(body_a=arm, body_b=base, offset_b=(0.1, 0.0, 0.0), axis_b=(1.0, 0.0, 0.0))
    slide = JointCoordinate(slider)
    moved = q.copy().reshape(-1, 7)
    moved[1, :3] += 0.25 * (np_rotation_matrix(start) @ [1.0, 0.0, 0.0])
    assert _value(model, slide, moved.reshape(-1))[0] == pytest.approx(0.25, abs=1e-12)


def test_coordinates_are_named_and_refused_where_the_joint_has_none():
    model = Model()
    a = model.add_body(RigidBody("a", 1.0, (0.1, 0.1, 0.1)))
    cylinder = CylindricalJoint(body_a=a, name="sleeve")
    with pytest.raises(ValueError, match="'sleeve'.*name one with kind="):
        JointCoordinate(cylinder)
    assert JointCoordinate(cylinder, "slide").kind == "slide"
    with pytest.raises(ValueError, match="'cross'.*has none"):
        JointCoordinate(UniversalJoint(body_a=a, axis_a=(1, 0, 0), axis_b=(0, 1, 0), name="cross"))
    with pytest.raises(ValueError, match="'slider'.*no 'angle' coordinate"):
        JointCoordinate(PrismaticJoint(body_a=a, name="slider"), "angle")


def test_motor_on_a_hinge_spins_the_disk_up_at_gear_times_effort_over_inertia():
    """omega_n = gear tau h n / I exactly under the symplectic step."""
    model, _, hinge = _disk()
    model.add_force(JointMotor(hinge, lambda t, state: 0.5, gear=2.0))
    run = Simulation(model, "regularized", H).run(0.5)
    np.testing.assert_allclose(run.angular_velocity[:, 0, 2], 2.0 * 0.5 / 0.2 * run.t, rtol=0, atol=1e-10)
    assert np.abs(run.angular_velocity[:, 0, :2]).max() < 1e-12


def test_motor_on_a_slider_pushes_both_bodies_apart():
    """A force F along a prismatic joint between two free bodies: the slide accelerates at
    F (1/m_a + 1/m_b), the momentum stays zero."""
    model = Model(gravity=(0.0, 0.0, 0.0))
    a = model.add_body(RigidBody("a", 2.0, (0.1, 0.2, 0.3), position=(0.3, 0.0, 0.0)))
    b = model.add_body(RigidBody("b", 3.0, (0.3, 0.2, 0.1)))
    slider = PrismaticJoint(body_a=a, body_b=b, offset_a=(-0.3, 0.0, 0.0), axis_b=(1.0, 0.0, 0.0))
    model.add_constraint(slider)
    model.add_force(JointMotor(slider, 1.2))
    run = Simulation(model, "box", H).run(0.4)
    n = np.round(run.t / H)
    expected = 1.2 * (1 / 2.0 + 1 / 3.0) * H * H * n * (n + 1) / 2
    np.testing.assert_allclose(run.position[:, 0, 0] - run.position[:, 1, 0] - 0.3, expected, rtol=0, atol=1e-11)
    momentum = 2.0 * run.velocity[:, 0] + 3.0 * run.velocity[:, 1]
    assert np.abs(momentum).max() < 1e-12


def test_position_servo_is_a_critically_damped_pd_step_response():
    """k_d = 2 sqrt(k_p I): theta(t) = theta_T (1 - (1 + w t) e^{-w t}), w = sqrt(k_p / I), to
    the implicit step's O(h w) lag; no overshoot; at rest on the target."""
    inertia, w, target = 0.2, 20.0, 0.8
    model, _, hinge = _disk(inertia)
    kp = inertia * w * w
    model.add_constraint(position_servo(hinge, target, kp, 2.0 * math.sqrt(kp * inertia)))
    run = Simulation(model, "regularized", H).run(1.5)
    q = run.quaternion[:, 0]
    theta = 2 * np.arctan2(q[:, 3], q[:, 0])
    exact = target * (1 - (1 + w * run.t) * np.exp(-w * run.t))
    assert np.abs(theta - exact).max() < 2 * H * w * target
    assert theta.max() < target * (1 + 1e-6)
    assert theta[-1] == pytest.approx(target, abs=1e-6)


def test_position_servo_on_a_slider_follows_a_moving_target():
    """A stiff servo (w = 200 rad/s, critically damped) on a slider tracks s_T = 0.1 sin(2 t): the
    PD acts on the error and its rate (g' = s' - s_T'), so its transfer function
    G = (k_d s + k_p) / (m s^2 + k_d s + k_p) is 1 + O((Omega / w)^2); a constant gravity load
    sags it by m g / k_p."""
    import jax.numpy as jnp

    model = Model()
    mass, w = 1.5, 200.0
    block = model.add_body(RigidBody("block", mass, (0.1, 0.1, 0.1)))
    slider = PrismaticJoint(body_a=block, axis_b=(0.0, 0.0, 1.0))
    model.add_constraint(slider)
    kp = mass * w * w
    model.add_constraint(position_servo(slider, lambda t: 0.1 * jnp.sin(2.0 * t), kp, 2.0 * mass * w))
    run = Simulation(model, "coulomb", H).run(3.0)
    late = run.t > 1.0
    expected = 0.1 * np.sin(2.0 * run.t[late]) - mass * 9.81 / kp
    # |G(j Omega) - 1| = (Omega / w)^2 to first order (1e-4: measured 1.2e-5 m of 0.1 m); the step adds less
    assert np.abs(run.position[late, 0, 2] - expected).max() < 2 * 0.1 * (2.0 / w) ** 2


def test_motor_and_servo_refuse_bad_numbers():
    _, _, hinge = _disk()
    with pytest.raises(ValueError, match="gear must be finite and nonzero"):
        JointMotor(hinge, 1.0, gear=0.0)
    with pytest.raises(ValueError, match="stiffness"):
        position_servo(hinge, 0.1, -5.0, 1.0)


def test_add_force_takes_any_load_of_the_protocol_and_names_what_a_stranger_lacks():
    model, _, hinge = _disk()

    class Wind:
        def wrenches(self, t, state):
            return []

    with pytest.raises(TypeError, match="Wind lacks nonconservative_wrenches, potential"):
        model.add_force(Wind())
    assert model.add_force(JointMotor(hinge, 0.1)).body_a is hinge.body_a
