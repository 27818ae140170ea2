"""JAX kinematics against finite differences and closed forms (Peiret 2016 Eqs. 2-4,
Bauchau 2002 Eqs. 2-4 and 17-18)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from lcpdyn import BodyForce, SpringDamper
from lcpdyn.body import RigidBody
from lcpdyn.constraints import BallJoint
from lcpdyn.kernels import update_positions
from lcpdyn.model import Model
from lcpdyn.precision import float64
from lcpdyn.rotation import np_rotation_matrix

from .engine_helpers import random_pose_model, wheel_model


def _advance(q, v, eps):
    """q moved by eps along Gamma(q) v, quaternion renormalized (a curve in the configuration space)."""
    return update_positions(q, v, eps)


@pytest.mark.parametrize("seed", range(5))
def test_gap_jacobian_N_matches_central_differences(seed):
    model = random_pose_model(seed)
    evaluate = model.compile()
    q, v = model.initial_state()
    k = evaluate(q, v, 0.0)
    rng = np.random.default_rng(100 + seed)
    for _ in range(3):
        dv = rng.normal(size=v.size)
        eps = 1e-6
        plus = evaluate(_advance(q, dv, eps), v, 0.0).gap
        minus = evaluate(_advance(q, dv, -eps), v, 0.0).gap
        np.testing.assert_allclose(k.N @ dv, (plus - minus) / (2 * eps), rtol=1e-6, atol=1e-7)
    # and N equals the derivative of the gap functions themselves, dPhi/dq Gamma (JAX, exact)
    with float64():
        np.testing.assert_allclose(k.N, np.asarray(model.gap_jacobian(q)), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("seed", range(5))
def test_N_and_D_equal_the_material_velocity_of_the_candidate_point(seed):
    """Independent NumPy formula: v_p = v + omega x (p - x) projected on (n, t1, t2). That N
    (from dPhi/dq) equals n . v_p is the stationarity of Bauchau's candidate point."""
    model = random_pose_model(seed)
    k = model.compile()(*model.initial_state(), 0.0)
    q, v = model.initial_state()
    R = np_rotation_matrix(q[3:7])
    omega_world = R @ v[3:6]
    for i in range(len(model.contacts)):
        velocity = v[:3] + np.cross(omega_world, k.point[i] - q[:3])
        np.testing.assert_allclose(k.N[i] @ v, k.normal[i] @ velocity, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(k.D[2 * i : 2 * i + 2] @ v, k.tangent[i] @ velocity, rtol=1e-10, atol=1e-12)
        basis = np.vstack([k.tangent[i], k.normal[i]])
        np.testing.assert_allclose(basis @ basis.T, np.eye(3), atol=1e-12)
        np.testing.assert_allclose(np.cross(k.tangent[i, 0], k.tangent[i, 1]), k.normal[i], atol=1e-12)


@pytest.mark.parametrize("theta_deg", [0.0, 20.0, 45.0, -30.0])
def test_disk_gap_and_bauchau_basis_closed_form(theta_deg):
    model = wheel_model(theta_deg=theta_deg, height_offset=0.01)
    q, v = model.initial_state()
    k = model.compile()(q, v, 0.0)
    theta = np.radians(theta_deg)
    # centre at 0.5 cos(theta) + 0.01: the lowest rim point is 0.01 above the plane
    assert k.gap[0] == pytest.approx(0.01, abs=1e-14)
    axis = np_rotation_matrix(q[3:7]) @ [0.0, 1.0, 0.0]
    d2 = np.cross([0.0, 0.0, 1.0], axis) / np.cos(theta)
    np.testing.assert_allclose(k.tangent[0, 0], d2, atol=1e-14)  # driving direction (Eq. 17)
    np.testing.assert_allclose(k.tangent[0, 1], np.cross([0.0, 0.0, 1.0], d2), atol=1e-14)  # transverse (Eq. 18)
    expected_point = q[:3] + 0.5 * np.cross(d2, axis)
    np.testing.assert_allclose(k.point[0], expected_point, atol=1e-14)
    assert k.point[0][2] == pytest.approx(0.01, abs=1e-14)


def test_rolling_wheel_has_zero_slip():
    """Upright wheel rolling at speed V with spin V/R about its axis: D v = 0."""
    model = wheel_model(theta_deg=0.0, velocity=(3.0, 0.0, 0.0), angular_velocity=(0.0, 6.0, 0.0))
    k = model.compile()(*model.initial_state(), 0.0)
    q, v = model.initial_state()
    np.testing.assert_allclose(k.D @ v, 0.0, atol=1e-14)
    np.testing.assert_allclose(k.N @ v, 0.0, atol=1e-14)


def test_ball_joint_jacobian_matches_finite_differences():
    model = Model()
    rng = np.random.default_rng(3)
    quaternion = rng.normal(size=4)
    body = model.add_body(
        RigidBody(
            "link",
            1.0,
            (0.1, 0.2, 0.3),
            position=(0.3, 0.1, -0.9),
            orientation=quaternion / np.linalg.norm(quaternion),
            velocity=rng.normal(size=3),
            angular_velocity=rng.normal(size=3),
        )
    )
    model.add_constraint(BallJoint(body_a=body, offset_a=(0.1, 0.2, 0.5), offset_b=(0.0, 0.0, 0.0)))
    evaluate = model.compile()
    q, v = model.initial_state()
    k = evaluate(q, v, 0.0)
    dv = rng.normal(size=6)
    eps = 1e-6
    fd = (
        evaluate(_advance(q, dv, eps), v, 0.0).holonomic_error - evaluate(_advance(q, dv, -eps), v, 0.0).holonomic_error
    ) / (2 * eps)
    np.testing.assert_allclose(k.A @ dv, fd, rtol=1e-6, atol=1e-8)


def test_gyroscopic_force_and_gravity():
    model = wheel_model()
    q, v = model.initial_state()
    k = model.compile()(q, v, 0.0)
    inertia = np.diag([0.3, 0.6, 0.3])
    omega = v[3:]
    np.testing.assert_allclose(k.force[:3], [0.0, 0.0, -9.81], atol=1e-14)
    np.testing.assert_allclose(k.force[3:], -np.cross(omega, inertia @ omega), atol=1e-14)
    assert k.potential_energy == pytest.approx(9.81 * q[2], rel=1e-14)


def test_kinematics_is_float64_without_global_x64():
    """lcpdyn computes in float64 inside its own scope and leaves JAX's global default alone."""
    model = wheel_model()
    k = model.compile()(*model.initial_state(), 0.0)
    assert k.N.dtype == np.float64
    assert jnp.zeros(1).dtype == jnp.float32  # the process default is untouched
    with float64():
        assert jnp.zeros(1).dtype == jnp.float64


def test_nonconservative_force_and_conservative_power():
    """f_nc holds the body force and the spring's damper (not its elastic part, not gravity);
    P_c = (f_app - f_nc) . v is the power of gravity and the elastic spring, without the
    gyroscopic term; sin_tilt and tilt_margin per disk contact."""
    model = wheel_model()
    wheel = model.bodies[0]
    model.add_force(BodyForce(wheel, lambda t, state: (jnp.array([1.0, 2.0, 3.0]), jnp.array([0.5, 0.0, 0.0]))))
    model.add_force(
        SpringDamper(wheel, (0.0, 0.0, 0.0), None, (0.0, 0.0, 2.0), stiffness=10.0, damping=3.0, rest_length=1.0)
    )
    q, v = model.initial_state()
    k = model.compile()(q, v, 0.0)
    x, velocity = q[:3], v[:3]
    d = x - np.array([0.0, 0.0, 2.0])
    length = np.linalg.norm(d)
    e = d / length
    damper = -3.0 * (e @ velocity) * e
    elastic = -10.0 * (length - 1.0) * e
    R = np_rotation_matrix(q[3:7])
    np.testing.assert_allclose(
        k.nonconservative_force[:3], [1.0 + damper[0], 2.0 + damper[1], 3.0 + damper[2]], atol=1e-13
    )
    np.testing.assert_allclose(k.nonconservative_force[3:], R.T @ [0.5, 0.0, 0.0], atol=1e-13)
    gravity = np.array([0.0, 0.0, -9.81])
    assert k.conservative_power == pytest.approx((gravity + elastic) @ velocity, rel=1e-12)
    assert k.potential_energy == pytest.approx(9.81 * x[2] + 5.0 * (length - 1.0) ** 2, rel=1e-12)
    np.testing.assert_allclose(k.sin_tilt, [np.cos(np.radians(20.0))], rtol=1e-14)
    assert k.tilt_margin == pytest.approx(np.cos(np.radians(20.0)) - 1e-6, rel=1e-14)
    assert k.finite


def test_holonomic_error_alone_is_the_kinematics_g():
    """The compiled g(q, t) of the holonomic constraints alone (what the compliant rows ask for at
    their predicted configuration) equals the whole kinematics' holonomic_error, for stacked
    beam elements beside a revolute joint evaluated alone (the incline pendulum on the paper's
    flexible beam), at a disturbed configuration; a NaN in q is reported."""
    from scenes import incline_pendulum

    model = incline_pendulum.build(beam_elements=4).model
    evaluate = model.compile()
    q, v = model.initial_state()
    rng = np.random.default_rng(3)
    q = update_positions(q, rng.normal(scale=0.3, size=v.shape), 0.01)
    g, finite = evaluate.holonomic_error(q, 0.25)
    whole = evaluate(q, v, 0.25)
    assert finite and g.shape == whole.holonomic_error.shape and g.size > 20
    np.testing.assert_allclose(g, whole.holonomic_error, rtol=0, atol=1e-14 * max(1.0, np.abs(g).max()))
    assert np.abs(g).max() > 1e-6  # the disturbance shows
    q_bad = q.copy()
    q_bad[0] = np.nan
    assert evaluate.holonomic_error(q_bad, 0.25)[1] is False
