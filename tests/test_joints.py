"""The lower-pair joints of lcpdyn.joints against closed forms: what each lets move and what it
holds, the symplectic step's exact discrete motion under constant forces, pendulum periods on a
universal joint, and a slider-crank's piston law (issue 47, items 1 and 7)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lcpdyn import RevoluteJoint, RigidBody, Simulation
from lcpdyn.constraints import BallJoint
from lcpdyn.joints import CylindricalJoint, FixedJoint, PlanarJoint, PrismaticJoint, UniversalJoint
from lcpdyn.model import Model
from lcpdyn.precision import float64
from lcpdyn.rotation import np_axis_angle, np_rotation_matrix

G = 9.81
H = 1e-3


def _drop(t, acceleration):
    """The symplectic step's position at the times ``t`` (multiples of h) from rest under a
    constant acceleration: v_n = a h n, x_n = x_0 + a h^2 n (n + 1) / 2."""
    n = np.round(t / H)
    return acceleration * H * H * n * (n + 1) / 2


def _run(model, t_end, friction="regularized"):
    return Simulation(model, friction, H).run(t_end)


@pytest.mark.parametrize(
    "joint, rows",
    [
        (lambda a, b: PrismaticJoint(body_a=a, body_b=b, axis_b=(1.0, 1.0, 0.0)), 5),
        (lambda a, b: CylindricalJoint(body_a=a, body_b=b, axis_a=(0.0, 0.0, 1.0), axis_b=(0.0, 0.0, 1.0)), 4),
        (lambda a, b: UniversalJoint(body_a=a, body_b=b, axis_a=(1.0, 0.0, 0.0), axis_b=(0.0, 1.0, 0.0)), 4),
        (lambda a, b: PlanarJoint(body_a=a, body_b=b, axis_a=(0.0, 0.0, 1.0), axis_b=(0.0, 0.0, 1.0)), 3),
        (lambda a, b: FixedJoint(body_a=a, body_b=b, offset_a=(0.1, 0.0, 0.0), offset_b=(0.1, 0.0, 0.0)), 6),
    ],
)
def test_each_joint_has_independent_rows_zero_at_assembly(joint, rows):
    model = Model(gravity=(0.0, 0.0, 0.0))
    a = model.add_body(RigidBody("a", 1.0, (0.1, 0.2, 0.3), position=(0.3, 0.1, 0.0)))
    b = model.add_body(RigidBody("b", 2.0, (0.2, 0.2, 0.2), position=(0.3, 0.1, 0.0)))
    made = joint(a, b)
    model.add_constraint(made)
    assert made.size == rows
    q, v = model.initial_state()
    k = model.compile()(q, v, 0.0)
    A = np.asarray(k.A)
    assert A.shape == (rows, 12)
    assert np.linalg.matrix_rank(A, tol=1e-9) == rows
    with float64():
        assert np.abs(np.asarray(model.holonomic_residual(q, 0.0))).max() < 1e-15


def test_prismatic_slide_down_an_incline_is_the_exact_discrete_motion():
    """A block on a prismatic joint to the world along an axis 30 degrees below horizontal: it
    slides at g sin 30 and does not turn, even when started spinning."""
    alpha = math.radians(30.0)
    axis = np.array([math.cos(alpha), 0.0, -math.sin(alpha)])
    model = Model()
    block = model.add_body(RigidBody("block", 2.0, (0.1, 0.2, 0.3), angular_velocity=(1.0, -2.0, 0.5)))
    model.add_constraint(PrismaticJoint(body_a=block, axis_b=axis))
    run = _run(model, 0.5)
    np.testing.assert_allclose(run.position[:, 0] @ axis, _drop(run.t, G * math.sin(alpha)), rtol=0, atol=1e-10)
    off_axis = run.position[:, 0] - np.outer(run.position[:, 0] @ axis, axis)
    assert np.abs(off_axis).max() < 1e-10
    assert np.abs(run.angular_velocity[1:, 0]).max() < 1e-9  # the spin is taken out at the first step
    assert np.abs(run.quaternion[:, 0] - [1.0, 0.0, 0.0, 0.0]).max() < 2e-3 * H  # one step's turn at most


def test_cylindrical_joint_lets_a_body_fall_and_spin_along_its_axis():
    model = Model()
    spinner = model.add_body(RigidBody("spinner", 1.5, (0.2, 0.2, 0.4), angular_velocity=(0.0, 0.0, 5.0)))
    model.add_constraint(CylindricalJoint(body_a=spinner, axis_a=(0.0, 0.0, 1.0), axis_b=(0.0, 0.0, 1.0)))
    run = _run(model, 0.5)
    np.testing.assert_allclose(run.position[:, 0, 2], -_drop(run.t, G), rtol=0, atol=1e-10)
    assert np.abs(run.position[:, 0, :2]).max() < 1e-12
    np.testing.assert_allclose(run.angular_velocity[:, 0], np.tile([0.0, 0.0, 5.0], (len(run.t), 1)), atol=1e-10)
    turned = 2 * np.arctan2(run.quaternion[-1, 0, 3], run.quaternion[-1, 0, 0])
    per_step = 2 * math.atan(5.0 * H / 2)  # the rotation update's turn in one step, q + h/2 omega q normalized
    assert turned == pytest.approx(math.remainder(per_step * round(run.t[-1] / H), 2 * math.pi), abs=1e-9)


def _hanging(arm_a, arm_b, spin):
    """A rod hanging 0.5 m below a universal joint to the world (arms ``arm_a`` on the rod and
    ``arm_b`` in the world), started with angular velocity ``spin``."""
    model = Model()
    rod = model.add_body(RigidBody("rod", 1.2, (0.03, 0.05, 0.025), position=(0.0, 0.0, -0.5), angular_velocity=spin))
    model.add_constraint(UniversalJoint(body_a=rod, offset_a=(0.0, 0.0, 0.5), axis_a=arm_a, axis_b=arm_b))
    return model


@pytest.mark.parametrize("arm, inertia", [(0, 0.03), (1, 0.05)])
def test_universal_joint_swings_as_a_compound_pendulum_about_either_arm(arm, inertia):
    """Small swings about either arm of the cross: T = 2 pi sqrt((I + m L^2) / (m g L))."""
    spin = np.zeros(3)
    spin[arm] = 0.02  # ~5 mrad amplitude: the period's amplitude term is ~2e-6
    model = _hanging((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), tuple(spin))
    m, L = 1.2, 0.5
    period = 2 * math.pi * math.sqrt((inertia + m * L * L) / (m * G * L))
    run = _run(model, 3.2 * period)
    w = run.angular_velocity[:, 0, arm]
    down = np.flatnonzero((w[:-1] > 0) & (w[1:] <= 0))
    crossings = run.t[down] + H * w[down] / (w[down] - w[down + 1])
    measured = np.diff(crossings).mean()
    assert measured == pytest.approx(period, rel=2e-4)
    assert np.abs(run.angular_velocity[:, 0, 1 - arm]).max() < 1e-9  # the other arm stays still


def test_universal_joint_holds_the_twist_about_the_rod():
    """The cross transmits the twist: a rod started spinning at 4 rad/s about its own axis
    (u_a x u_b) is stopped at the first step, and its arms stay orthogonal (u_a . u_b = 0: the
    relative rotation stays Ry(phi) Rx(theta), the two turns the cross allows, with no twist).
    What remains of the spin along the rod is the swing's own (phi' sin(theta), ~1e-4 here)."""
    model = _hanging((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.3, -0.2, 4.0))
    run = _run(model, 1.0)
    R = np.array([np_rotation_matrix(q) for q in run.quaternion[:, 0]])
    along_rod = np.einsum("nij,nj,ni->n", R, np.tile([0.0, 0.0, 1.0], (len(run.t), 1)), run.angular_velocity[:, 0])
    assert np.abs(along_rod[1:]).max() < 1e-3
    arms = np.einsum("nij,j->ni", R, [1.0, 0.0, 0.0]) @ np.array([0.0, 1.0, 0.0])
    assert np.abs(arms).max() < 1e-8


def test_planar_joint_slides_down_a_tilted_plane_turning_about_its_normal():
    alpha = math.radians(20.0)
    normal = np.array([math.sin(alpha), 0.0, math.cos(alpha)])
    down = np.array([math.cos(alpha), 0.0, -math.sin(alpha)])
    model = Model()
    puck = model.add_body(
        RigidBody("puck", 0.8, (0.3, 0.3, 0.3), velocity=(0.0, 0.4, 0.0), angular_velocity=tuple(2.0 * normal))
    )
    model.add_constraint(PlanarJoint(body_a=puck, axis_a=normal, axis_b=normal))
    run = _run(model, 0.5)
    x = run.position[:, 0]
    np.testing.assert_allclose(x @ down, _drop(run.t, G * math.sin(alpha)), rtol=0, atol=1e-10)
    np.testing.assert_allclose(x[:, 1], 0.4 * run.t, rtol=0, atol=1e-12)
    assert np.abs(x @ normal).max() < 1e-10
    np.testing.assert_allclose(run.angular_velocity[:, 0], np.tile(2.0 * normal, (len(run.t), 1)), atol=1e-10)


def test_fixed_joint_carries_a_body_as_one_rigid_body():
    """Two bodies fixed together and thrown spinning: their relative pose stays the initial one."""
    model = Model(gravity=(0.0, 0.0, 0.0))
    base = model.add_body(RigidBody("base", 3.0, (0.3, 0.2, 0.4), velocity=(1.0, 0.0, 0.5),
                                    angular_velocity=(0.5, 1.0, -0.7)))  # fmt: skip
    tip = model.add_body(RigidBody("tip", 0.5, (0.01, 0.02, 0.03), position=(0.4, 0.0, 0.0),
                                   orientation=np_axis_angle((0.0, 0.0, 1.0), 0.3)))  # fmt: skip
    model.add_constraint(FixedJoint(body_a=tip, body_b=base, offset_a=(0.0, 0.0, 0.0), offset_b=(0.4, 0.0, 0.0)))
    run = _run(model, 1.0)
    for n in range(0, len(run.t), 100):
        Rb = np_rotation_matrix(run.quaternion[n, 0])  # the base, added first
        np.testing.assert_allclose(run.position[n, 1], run.position[n, 0] + Rb @ [0.4, 0.0, 0.0], atol=1e-6)
        relative = Rb.T @ np_rotation_matrix(run.quaternion[n, 1])
        np.testing.assert_allclose(relative, np_rotation_matrix(np_axis_angle((0.0, 0.0, 1.0), 0.3)), atol=1e-6)


def test_misaligned_axes_are_refused_naming_the_joint():
    model = Model()
    body = model.add_body(RigidBody("body", 1.0, (0.1, 0.1, 0.1)))
    with pytest.raises(ValueError, match="slide.*parallel"):
        CylindricalJoint(body_a=body, axis_a=(0.0, 0.0, 1.0), axis_b=(0.0, 1.0, 0.0), name="slide")
    with pytest.raises(ValueError, match="cross.*orthogonal"):
        UniversalJoint(body_a=body, axis_a=(1.0, 0.0, 0.0), axis_b=(1.0, 1.0, 0.0), name="cross")
    with pytest.raises(ValueError, match="axis_b must be nonzero"):
        PrismaticJoint(body_a=body, axis_b=(0.0, 0.0, 0.0))


def test_slider_crank_piston_follows_the_crank_angle():
    """Crank (revolute to the world), rod (ball joint at the crank pin, universal joint at the
    piston pin), piston (prismatic to the world): one degree of freedom, no redundant row; the
    piston's position is x = r cos(theta) + sqrt(l^2 - r^2 sin^2(theta)) at every step, to the
    position update's O(h^2 v^2 / l) drift, which the next step's stabilization removes."""
    r, l, omega = 0.1, 0.3, 8.0
    model = Model(gravity=(0.0, 0.0, 0.0))
    crank = model.add_body(RigidBody("crank", 2.0, (0.01, 0.01, 0.02), position=(r / 2, 0.0, 0.0),
                                     angular_velocity=(0.0, 0.0, omega)))  # fmt: skip
    rod = model.add_body(RigidBody("rod", 0.5, (0.001, 0.004, 0.004), position=(r + l / 2, 0.0, 0.0)))
    piston = model.add_body(RigidBody("piston", 0.8, (0.002, 0.002, 0.002), position=(r + l, 0.0, 0.0)))
    z, y, x = (0.0, 0.0, 1.0), (0.0, 1.0, 0.0), (1.0, 0.0, 0.0)
    model.add_constraint(RevoluteJoint(body_a=crank, offset_a=(-r / 2, 0.0, 0.0), axis_a=z, axis_b=z))
    model.add_constraint(BallJoint(body_a=rod, offset_a=(-l / 2, 0.0, 0.0), body_b=crank, offset_b=(r / 2, 0.0, 0.0)))
    model.add_constraint(UniversalJoint(body_a=rod, offset_a=(l / 2, 0.0, 0.0), body_b=piston, axis_a=z, axis_b=y))
    model.add_constraint(PrismaticJoint(body_a=piston, offset_b=(r + l, 0.0, 0.0), axis_b=x))
    run = _run(model, 1.0)
    q = run.quaternion[:, 0]
    theta = 2 * np.arctan2(q[:, 3], q[:, 0])
    piston_x = r * np.cos(theta) + np.sqrt(l * l - (r * np.sin(theta)) ** 2)
    speed = omega * r
    assert np.abs(run.position[:, 2, 0] - piston_x).max() < 4 * H * H * speed**2 / l
    assert np.abs(run.position[:, 2, 1:]).max() < 4 * H * H * speed**2 / l
    assert np.ptp(theta) > math.pi  # the crank turned over


def test_joints_of_one_class_evaluated_together_keep_their_own_numbers():
    """Two prismatic joints (one vmapped group) with different axes and points: each block slides
    along its own axis at g times that axis' downward component."""
    axes = [np.array([1.0, 0.0, -1.0]) / math.sqrt(2), np.array([0.0, 0.6, -0.8])]
    model = Model()
    blocks = [model.add_body(RigidBody(f"b{i}", 1.0 + i, (0.1, 0.2, 0.3), position=(i, 0.0, 0.0))) for i in range(2)]
    for block, axis, i in zip(blocks, axes, range(2)):
        model.add_constraint(PrismaticJoint(body_a=block, offset_b=(i, 0.0, 0.0), axis_b=axis))
    run = _run(model, 0.2)
    for i, axis in enumerate(axes):
        along = (run.position[:, i] - [i, 0.0, 0.0]) @ axis
        np.testing.assert_allclose(along, _drop(run.t, -G * axis[2]), rtol=0, atol=1e-10)


def test_four_bar_linkage_keeps_its_loop_closed_for_ten_seconds():
    """A crank-rocker four-bar (ground 0.4 m, crank 0.1 m, coupler 0.35 m, rocker 0.3 m) in the
    vertical plane under gravity, its crank started at 6 rad/s: revolute joints at the two ground
    pivots, a ball joint and a universal joint at the coupler's ends (one degree of freedom, no
    redundant row). The loop's closure error -- the coupler's far end against the rocker's tip --
    stays at the position update's O(h^2 v^2 / l) level over 10 s; it does not grow."""
    ground, crank_l, coupler_l, rocker_l = 0.4, 0.1, 0.35, 0.3
    # the assembly at crank angle 90 degrees: crank tip B, rocker tip C found by circle intersection
    A, D = np.array([0.0, 0.0, 0.0]), np.array([ground, 0.0, 0.0])
    B = A + crank_l * np.array([0.0, 0.0, 1.0])
    distance = np.linalg.norm(D - B)
    along = (coupler_l**2 - rocker_l**2 + distance**2) / (2 * distance)
    height = math.sqrt(coupler_l**2 - along**2)
    unit = (D - B) / distance
    C = B + along * unit + height * np.array([unit[2], 0.0, -unit[0]]) * -1.0
    assert abs(np.linalg.norm(C - D) - rocker_l) < 1e-12
    y = (0.0, 1.0, 0.0)

    def link(name, start, end, mass=0.5):
        middle = 0.5 * (start + end)
        axis = (end - start) / np.linalg.norm(end - start)
        angle = math.atan2(-axis[2], axis[0])  # the link's x axis along it, about y
        length = float(np.linalg.norm(end - start))
        inertia = (1e-4, mass * length**2 / 12, mass * length**2 / 12)
        return RigidBody(name, mass, inertia, position=tuple(middle), orientation=np_axis_angle(y, angle)), length

    model = Model()
    crank, lc = link("crank", A, B, 1.0)
    coupler, lk = link("coupler", B, C)
    rocker, lr = link("rocker", D, C)
    for body in (crank, coupler, rocker):
        model.add_body(body)
    model.add_constraint(RevoluteJoint(body_a=crank, offset_a=(-lc / 2, 0, 0), offset_b=tuple(A), axis_a=y, axis_b=y))
    model.add_constraint(RevoluteJoint(body_a=rocker, offset_a=(-lr / 2, 0, 0), offset_b=tuple(D), axis_a=y, axis_b=y))
    model.add_constraint(BallJoint(body_a=coupler, offset_a=(-lk / 2, 0, 0), body_b=crank, offset_b=(lc / 2, 0, 0)))
    model.add_constraint(UniversalJoint(body_a=coupler, offset_a=(lk / 2, 0, 0), body_b=rocker, offset_b=(lr / 2, 0, 0),
                                        axis_a=(0.0, 0.0, 1.0), axis_b=y))  # fmt: skip
    crank.angular_velocity = np.array([0.0, 6.0, 0.0])
    run = _run(model, 10.0)
    R_coupler = np.array([np_rotation_matrix(q) for q in run.quaternion[:, 1]])
    R_rocker = np.array([np_rotation_matrix(q) for q in run.quaternion[:, 2]])
    far = run.position[:, 1] + R_coupler @ np.array([lk / 2, 0.0, 0.0])
    tip = run.position[:, 2] + R_rocker @ np.array([lr / 2, 0.0, 0.0])
    closure = np.linalg.norm(far - tip, axis=1)
    speed = np.abs(run.velocity[:, 1]).max()
    assert closure.max() < 4 * H * H * speed**2 / min(lk, lr) + 1e-9
    first, last = closure[: len(closure) // 10].max(), closure[-len(closure) // 10 :].max()
    assert last < 2 * first + 1e-9  # no drift: the last second's error is the first's
    q = run.quaternion[:, 0]
    assert np.ptp(np.unwrap(2 * np.arctan2(q[:, 2], q[:, 0]))) > math.pi  # the crank swings through half a turn
