"""Joint coordinates, motors and position servos (lcpdyn.actuators) against closed forms
(issue 47, item 3)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lcpdyn import RevoluteJoint, RigidBody, Simulation
from lcpdyn.actuators import JointCoordinate, JointMotor, joint_friction, joint_limit, position_servo, velocity_servo
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


# --- bounded and unilateral rows: limits, a saturating motor, joint friction ------------------


def _pendulum(angle, gravity=9.81):
    """A rod (1 kg, centre 0.5 m from a hinge about y at the origin) at ``angle`` from hanging."""
    model = Model(gravity=(0.0, 0.0, -gravity))
    length = 0.5
    position = (length * math.sin(angle), 0.0, -length * math.cos(angle))
    rod = model.add_body(RigidBody("rod", 1.0, (0.02, 0.02, 0.001), position=position,
                                   orientation=np_axis_angle((0.0, 1.0, 0.0), -angle)))  # fmt: skip
    hinge = RevoluteJoint(body_a=rod, offset_a=(0.0, 0.0, length), axis_a=(0, 1, 0), axis_b=(0, 1, 0), name="hinge")
    model.add_constraint(hinge)
    return model, hinge, 0.02 + 1.0 * length**2  # about the hinge


@pytest.mark.parametrize("restitution", [0.0, 0.5])
def test_a_limit_stop_takes_the_impact_with_the_restitution_asked(restitution):
    """A disk spinning at 2 rad/s on a hinge with a stop at 0.5 rad: it never passes it, and
    from the step after the one that reaches it (which closes what is left of the gap, as a
    contact's row does) it leaves at -e 2 rad/s (at rest against it for e = 0)."""
    model, _, hinge = _disk()
    model.bodies[0].angular_velocity = np.array([0.0, 0.0, 2.0])
    model.add_constraint(joint_limit(hinge, -1.0, 0.5, restitution=restitution))
    run = Simulation(model, "regularized", H).run(0.4)
    q = run.quaternion[:, 0]
    theta = 2 * np.arctan2(q[:, 3], q[:, 0])
    assert theta.max() < 0.5 + 1e-9
    hit = np.flatnonzero(run.angular_velocity[:, 0, 2] < 1.9)[0]  # the step that reaches the stop
    after = run.angular_velocity[hit + 1 :, 0, 2]
    assert after[-1] == pytest.approx(-restitution * 2.0, abs=1e-9)
    assert np.all(np.abs(after - after[-1]) < 1e-9)  # no gravity, no friction: it keeps that rate


def test_a_velocity_servo_saturates_at_its_effort_bound():
    """Target 2 rad/s, effort bound 0.5 N m on a disk of I = 0.2 kg m^2: the torque is pinned at
    the bound and the speed ramps at tau_max / I = 2.5 rad/s^2 (exactly, step by step) until it
    reaches the target at 0.8 s; then it holds it with no effort."""
    model, _, hinge = _disk()
    model.add_constraint(velocity_servo(hinge, 2.0, 0.5))
    run = Simulation(model, "box", H).run(1.2)
    w = run.angular_velocity[:, 0, 2]
    ramp = run.t < 0.8 - 1e-9
    np.testing.assert_allclose(w[ramp], 2.5 * run.t[ramp], rtol=0, atol=1e-10)
    np.testing.assert_allclose(w[run.t > 0.8 + 1e-9], 2.0, rtol=0, atol=1e-10)


@pytest.mark.parametrize("friction", ["regularized", "box", "polygonal", "coulomb"])
def test_joint_friction_holds_a_pendulum_below_breakaway_and_releases_it_above(friction):
    """Gravity's torque on the rod at angle a is m g l sin(a) = 4.905 sin(a) N m; with 2 N m of
    friction in the hinge it holds at 20 degrees (1.68 N m) and slides at 30 degrees (2.45 N m),
    its angular acceleration (m g l sin a - tau_f) / I_hinge while a stays near 30 degrees."""
    for degrees, holds in ((20.0, True), (30.0, False)):
        model, hinge, inertia = _pendulum(math.radians(degrees))
        model.add_constraint(joint_friction(hinge, 2.0))
        run = Simulation(model, friction, H).run(0.05)
        spin = run.angular_velocity[:, 0, 1]  # about y, the hinge
        if holds:
            assert np.abs(spin).max() < 1e-9
        else:
            torque = 1.0 * 9.81 * 0.5 * math.sin(math.radians(degrees)) - 2.0
            assert spin[9] / run.t[9] == pytest.approx(torque / inertia, rel=2e-3)  # back towards hanging


@pytest.mark.parametrize("friction", ["regularized", "coulomb"])
def test_a_compliant_stop_holds_a_motor_at_its_static_deflection_and_never_pulls(friction):
    """A motor's torque tau = 0.5 N m drives the disk (I = 0.2 kg m^2) into a compliant stop at
    0.3 rad (k = 50 N m/rad, c = 2 N m s/rad): until it reaches the stop the spin is tau t / I
    exactly (the stop neither pushes on the approach nor pulls), and it comes to rest at
    0.3 + tau / k, where the stop's spring balances the torque."""
    model, disk, hinge = _disk()
    model.add_force(JointMotor(hinge, 0.5))
    model.add_constraint(joint_limit(hinge, upper=0.3, stiffness=50.0, damping=2.0, name="soft stop"))
    run = Simulation(model, friction, H).run(3.0)
    q = run.quaternion[:, 0]
    theta = 2 * np.arctan2(q[:, 3], q[:, 0])
    free = theta < 0.3 - 1e-9
    free[np.argmax(~free) - 1 :] = False  # the step that reaches the stop may start its push
    np.testing.assert_allclose(run.angular_velocity[free, 0, 2], 0.5 / 0.2 * run.t[free], rtol=0, atol=1e-9)
    assert theta[-1] == pytest.approx(0.3 + 0.5 / 50.0, abs=1e-6)
    assert not np.any(run.health)


def test_an_undamped_compliant_stop_returns_the_disk_with_its_energy():
    """The disk spinning at 1 rad/s onto an undamped compliant stop (k = 50 N m/rad) comes back at
    its speed, less backward Euler's numerical damping of the stop's mode (h w^2 / 2 per second,
    w = sqrt(k / I): ~2.5 % over the contact); the stop's stored energy counts in the run's energy,
    so no step is flagged for a gain."""
    model, disk, hinge = _disk()
    disk.angular_velocity = (0.0, 0.0, 1.0)
    model.add_constraint(joint_limit(hinge, upper=0.2, stiffness=50.0, name="soft stop"))
    run = Simulation(model, "regularized", H).run(1.0)
    spin = run.angular_velocity[:, 0, 2]
    assert spin[-1] == pytest.approx(-1.0, rel=0.04) and spin[-1] < -0.95
    assert not np.any(run.health)


def test_a_compliant_stop_takes_no_restitution():
    _, _, hinge = _disk()
    with pytest.raises(ValueError, match="restitution is for rigid rows"):
        joint_limit(hinge, upper=0.3, stiffness=50.0, restitution=0.5)


def test_bounded_rows_are_refused_where_the_formulation_eliminates_them():
    model, _, hinge = _disk()
    model.add_constraint(joint_limit(hinge, -0.5, 0.5, name="stop"))
    with pytest.raises(ValueError, match="row 'stop'.*midpoint"):
        Simulation(model, "regularized", H, position_update="midpoint")
    with pytest.raises(ValueError, match="within \\(-pi, pi\\)"):
        joint_limit(hinge, -4.0, 0.5)
    with pytest.raises(ValueError, match="restitution must be in \\[0, 1\\]"):
        joint_limit(hinge, -0.5, 0.5, restitution=1.5)


def test_bounded_rows_take_the_same_effect_on_every_strategy_that_keeps_them():
    """The slipping pendulum with joint friction and a stop 0.5 rad down its swing: the dense step, the island path
    (sparse=True, a second body on its own) and the step with detected contacts (a far floor
    collider) give the same motion, under a bounded-LCP model and under exact Coulomb (whose
    Delassus problem takes the bounded rows as contacts of their own, lcpdyn.strategies.coulomb_rows)."""
    from lcpdyn.collision import Collider, HalfSpace

    runs = []
    for friction, variant in [(f, v) for f in ("regularized", "coulomb") for v in ("dense", "islands", "detected")]:
        model, hinge, _ = _pendulum(math.radians(40.0))
        model.add_constraint(joint_friction(hinge, 1.0))
        model.add_constraint(joint_limit(hinge, -0.3, 0.5, restitution=0.3))
        options = {}
        if variant == "islands":
            other = model.add_body(RigidBody("other", 1.0, (0.1, 0.1, 0.1), position=(3.0, 0.0, 0.0)))
            model.add_constraint(RevoluteJoint(body_a=other, offset_b=(3.0, 0.0, 0.0), name="other hinge"))
            options["sparse"] = True
        if variant == "detected":
            model.add_collider(Collider(None, HalfSpace((0.0, 0.0, 1.0), -5.0), name="floor"))
        runs.append(Simulation(model, friction, H, **options).run(0.6))
    for run in runs[1:]:
        np.testing.assert_allclose(run.position[:, 0], runs[0].position[:, 0], rtol=0, atol=1e-10)
    q = runs[0].quaternion[:, 0]
    turned = 2 * np.arctan2(q[:, 2], q[:, 0]) + math.radians(40.0)  # the joint's angle (about +y), 0 at the start
    # onto the stop, not through it: the impact law acts in the step that would cross it, up to
    # h times the approach rate (~2 rad/s) short of it
    assert 0.5 - 2.5 * H < turned.max() < 0.5 + 1e-6
