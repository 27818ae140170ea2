"""The wheelset under creep forces (scenes.wheelset_hunting): in steady centred rolling every
creepage but the spin is zero and each wheel carries the lateral creep force of its spin,
-eps f23 s3 / V (opposite on the two wheels); a lateral perturbation decays below the paper's
critical speed (30.4 m/s at slant 1/40, no springs) and grows above it; the linearization finds
that critical speed, and its state matrix is the finite-difference Jacobian of the nonlinear
equations of motion."""

from __future__ import annotations

import numpy as np
import pytest

from lcpdyn.friction.creep import creep_force
from lcpdyn.rotation import np_rotation_matrix
from scenes import wheelset_hunting as hunting

pytestmark = pytest.mark.one_leg(leg="siconos")  # proven once per two-leg test command (conftest.dealt_leg)


def test_steady_rolling_carries_the_spin_creep_force():
    scene = hunting.build(amplitude=0.0, speed=20.0)
    sim = scene.simulation("creep")
    trajectory = sim.run(0.2)
    assert np.all(trajectory.solver_status == 0)
    k = sim.evaluate(sim.q, sim.v, sim.t)
    omega = np_rotation_matrix(sim.q[3:7]) @ sim.v[3:6]  # world angular velocity
    p = scene.parameters
    lateral = []
    for i in range(2):
        force = trajectory.contact_friction_force[-1, i]
        t1, t2 = k.tangent[i]
        spin = omega @ k.normal[i]
        slip = k.D_block[i] @ sim.v
        assert np.abs(slip).max() < 1e-6  # m/s: creepage below 5e-8
        expected, _ = creep_force(np.array([*slip, spin]), p["speed"], trajectory.contact_normal_force[-1, i],
                                  p["mu"], (p["f11"], p["f22"], p["f23"]))  # fmt: skip
        assert force @ t2 == pytest.approx(expected[1], rel=1e-3)
        assert abs(force @ t1) < 1e-3 * abs(force @ t2)
        lateral.append(force @ t2)
    # the spin of the two wheels' contacts is opposite: so are their lateral forces (~1 kN each)
    assert lateral[0] == pytest.approx(-lateral[1], rel=0.02) and abs(lateral[0]) > 500.0


@pytest.mark.parametrize("speed, grows", [(20.0, False), (40.0, True)])
def test_perturbation_decays_below_and_grows_above_the_critical_speed(speed, grows):
    result = hunting.run(speed=speed, amplitude=1e-3, t_end=0.9)
    assert result["solved"]
    assert (result["sigma"] > 0) == grows, result["sigma"]


def test_linearized_critical_speed_is_the_papers():
    """Slant 1/40, no springs: V_cr = 30.4 m/s (Schwab–Meijaard 2002 §5.2); measured 30.656
    (+0.8 %) with saturation, 30.147 (-0.8 %) without. The mode at V_cr is the kinematic one:
    its frequency is 2 pi V / lambda with lambda near Eq. (9)'s 11.248 m."""
    speed = hunting.linear_critical_speed(1 / 40)
    assert speed == pytest.approx(30.4, rel=0.015)
    model = hunting.system(1 / 40)
    p = model.params(speed=speed)
    eigenvalues = np.linalg.eigvals(model.linearize(hunting.nominal(p), **p).state_matrix[:5, :5])
    critical = eigenvalues[np.argmax(eigenvalues.real)]
    assert abs(critical.real) < 1e-6 * abs(critical)
    assert 2 * np.pi * speed / abs(critical.imag) == pytest.approx(11.248, rel=0.02)
    # without spin coupling the centred creep force is zero, where |F| has no derivative: finite anyway
    assert np.isfinite(hunting.linear_growth(30.0, f23=0.0))


def test_linearization_is_the_jacobian_of_the_equations_of_motion():
    """The state matrix of lcpdyn.nonholonomic's Eq. (29), through the implicit contact solve and
    the creep forces, against central differences of the compiled state derivative."""
    model = hunting.system(1 / 40)
    p = model.params(speed=30.0, yaw_stiffness=816e3)
    x0 = hunting.nominal(p)
    J = model.linearize(x0, **p).state_matrix
    difference = np.zeros_like(J)
    for i in range(x0.size):
        step = np.zeros_like(x0)
        step[i] = 1e-6 * max(1.0, abs(x0[i]))
        difference[:, i] = (model.derivative(x0 + step, **p) - model.derivative(x0 - step, **p)) / (2 * step[i])
    assert np.abs(J - difference).max() <= 1e-6 * np.abs(J).max()  # measured 3e-7 (helper, no spring)


def test_yaw_spring_torque_is_the_gradient_of_its_potential():
    """The torque of the yaw spring is -dV/dtheta for a world rotation theta of the wheelset, at a
    pose with yaw, roll and spin (so its energy is conserved and its check meaningful)."""
    import jax
    import jax.numpy as jnp

    from lcpdyn import RigidBody
    from lcpdyn.precision import float64
    from lcpdyn.rotation import np_axis_angle, np_quaternion_multiply
    from lcpdyn.state_view import StateView

    body = RigidBody("wheelset", 1887.0, (1000.0, 100.0, 1000.0))
    spring = hunting.YawSpring(body, 816e3)
    yaw, roll, spin = (np_axis_angle(np.eye(3)[k], a) for a, k in ((0.01, 2), (0.02, 0), (1.3, 1)))
    q0 = np_quaternion_multiply(np_quaternion_multiply(yaw, roll), spin)

    def state(theta):
        angle = jnp.sqrt(theta @ theta + 1e-300)
        w, v = jnp.cos(angle / 2), jnp.sin(angle / 2) * theta / angle
        p0, p = q0[0], jnp.asarray(q0[1:])
        q = jnp.concatenate([jnp.array([w * p0 - v @ p]), w * p + p0 * v + jnp.cross(v, p)])
        return StateView({id(body): 0}, jnp.concatenate([jnp.zeros(3), q]))

    with float64():
        theta = jnp.array([1e-9, 2e-9, -1e-9])
        gradient = np.asarray(jax.grad(lambda a: spring.potential(state(a)))(theta))
        torque = np.asarray(spring.wrenches(0.0, state(theta))[0][2])
    assert np.abs(torque).max() > 1e3  # ~ k psi = 8 kN m
    assert torque == pytest.approx(-gradient, rel=1e-6, abs=1e-6 * np.abs(gradient).max())


def test_above_the_critical_speed_the_flange_pairs_bound_a_limit_cycle():
    """The paper's Figs. 9-10 case (slant 1/20, yaw spring, 131 m/s > V_cr 130.0, 5 mm start)
    with flange pairs: the run keeps to the rails (every step solved, the axle lifted by less than
    2 mm at the flange impacts), both flanges touch, and over the second half the motion is a
    cycle of settled amplitude (extrema within 10 % of each other) bounded by the flanges: past
    the 5.5 mm where the centred wheelset's contact jumps to the flange root (wheelset_geometry),
    within 2 mm more."""
    r = hunting.limit_cycle(t_end=1.2)
    assert r["stopped"] is None and r["solved"] and r["simulated_s"] == pytest.approx(1.2)
    assert r["largest_lift_mm"] < 2.0
    assert min(r["flange_contact_share"]) > 0.02
    assert 5.5 < r["amplitude_mm"] < 7.5
    assert r["amplitude_spread_mm"] < 0.1 * r["amplitude_mm"]
    assert 5.0 < r["frequency_hz"] < 15.0
