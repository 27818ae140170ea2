"""Moreau's midpoint scheme (``position_update="midpoint"``, docs/theory/step.md):
observed order 2 on smooth phases -- the frictionless wheel against the event-driven reference,
the rolling disk against its state equations, a double pendulum of ball joints (one anchor
driven) by self-convergence -- where the first-order step shows order 1; events still honoured
(an inelastic impact, a block that stops and stays stopped); the options it refuses."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lcpdyn import Model, RigidBody, Simulation
from lcpdyn.compliance import SpringDamperLaw
from lcpdyn.constraints import BallJoint
from lcpdyn.contact import Plane, PointContact, SphereContact
from lcpdyn.reference import exact_coulomb

pytestmark = pytest.mark.one_leg(leg="siconos")  # proven once per two-leg test command (conftest.dealt_leg)

G = 9.81


def observed_orders(errors):
    return [math.log2(a / b) for a, b in zip(errors, errors[1:])]


def test_frictionless_wheel_is_second_order_against_the_exact_reference():
    """Peiret's wheel with mu = 0 (a smooth phase throughout: the contact point runs round the
    rim): COM error at t = 0.5 s against the event-driven reference (rtol 1e-11)."""
    from scenes import wheel

    t_end = 0.5
    exact = exact_coulomb(wheel.build(mu=0.0).model, t_end, np.array([0.0, t_end])).position[-1]
    errors = {}
    for update in ("midpoint", "symplectic"):
        errors[update] = [
            np.linalg.norm(
                Simulation(wheel.build(mu=0.0).model, "regularized", h, position_update=update)
                .run(t_end)
                .position[-1, 0]
                - exact
            )
            for h in (4e-3, 2e-3, 1e-3)
        ]
    assert min(observed_orders(errors["midpoint"])) > 1.9, errors
    assert max(observed_orders(errors["symplectic"])) < 1.2, errors  # the test can tell the orders apart
    assert errors["midpoint"][-1] < 1e-5


def test_rolling_disk_is_second_order_against_its_state_equations():
    """Schwab–Meijaard 2003 Sec. 3.2, ideal rolling (non-holonomic rows at v_m): centre at t = 5
    against the state equations (DOP853, rtol 1e-10)."""
    from scenes import rolling_disk

    t_end = 5.0
    exact = rolling_disk.transient_path(t_end=t_end, samples=2)["centre"][-1]
    errors = []
    for h in (4e-3, 2e-3):
        run = Simulation(rolling_disk.build(dt=h).model, "regularized", h, position_update="midpoint").run(t_end)
        errors.append(np.linalg.norm(run.position[-1, 0] - exact))
    assert observed_orders(errors)[0] > 1.9, errors
    assert errors[-1] < 1e-5


def double_pendulum():
    """Two rods hung by ball joints, the top anchor moving sideways (a rheonomic holonomic row),
    both spinning; the initial velocities satisfy the joints (an inconsistent start is an impulse
    at t = 0, an event, after which no scheme is second order)."""
    anchor_velocity, w_upper, w_lower = np.array([0.0, 0.2, 0.0]), np.array([0.0, 1.0, 0.5]), np.array([0.3, 0.0, 2.0])
    v_upper = anchor_velocity + np.cross(w_upper, [0.2, 0.0, -0.3])
    v_lower = v_upper + np.cross(w_upper, [0.0, 0.0, -0.3]) + np.cross(w_lower, [0.2, 0.1, -0.2])
    model = Model(gravity=(0.0, 0.0, -G))
    upper = model.add_body(RigidBody("upper", 1.0, (0.02, 0.02, 0.002), position=(0.2, 0.0, -0.3), velocity=v_upper,
                                     angular_velocity=w_upper))  # fmt: skip
    lower = model.add_body(RigidBody("lower", 0.5, (0.01, 0.01, 0.001), position=(0.4, 0.1, -0.8), velocity=v_lower,
                                     angular_velocity=w_lower))  # fmt: skip
    model.add_constraint(BallJoint(body_a=upper, offset_a=(-0.2, 0.0, 0.3), anchor_velocity=anchor_velocity))
    model.add_constraint(BallJoint(body_a=upper, offset_a=(0.0, 0.0, -0.3), body_b=lower, offset_b=(-0.2, -0.1, 0.2)))
    return model


def test_double_pendulum_of_ball_joints_is_second_order():
    """Holonomic rows at the next midpoint configuration (SHAKE-like): differences between h, h/2
    and h/4 shrink fourfold with the midpoint scheme, twofold with the first-order step."""
    t_end = 0.3
    for update, low, high in (("midpoint", 1.85, 2.2), ("symplectic", 0.8, 1.2)):
        ends = []
        for h in (4e-3, 2e-3, 1e-3, 5e-4):
            run = Simulation(double_pendulum(), "regularized", h, position_update=update).run(t_end)
            ends.append(np.concatenate([run.position[-1].ravel(), run.quaternion[-1].ravel()]))
        differences = [np.linalg.norm(a - b) for a, b in zip(ends, ends[1:])]
        orders = observed_orders(differences)
        assert low < min(orders) and max(orders) < high, (update, differences)


def test_block_stops_where_it_should_and_stays_stopped():
    """A block sliding at 2 m/s with mu = 0.4 stops at v^2/(2 mu g) and its velocity is zero
    afterwards: the law at the step's end where it stops (written at v_m, sticking would leave
    it alternating in sign; docs/theory/step.md, "Friction in the midpoint scheme")."""
    for friction in ("regularized", "box", "coulomb"):
        model = Model(gravity=(0.0, 0.0, -G))
        body = model.add_body(RigidBody("block", 3.0, (0.1, 0.1, 0.1), velocity=(2.0, 0.0, 0.0)))
        model.add_contact(PointContact(body, Plane(), 0.4))
        run = Simulation(model, friction, 1e-3, position_update="midpoint").run(1.0)
        assert run.position[-1, 0, 0] == pytest.approx(2.0**2 / (2 * 0.4 * G), abs=1e-6), friction
        stopped = run.t > 0.6
        assert np.abs(run.velocity[stopped, 0]).max() < 1e-12, friction  # at v_m: +-1e-3 m/s


def test_impact_is_inelastic_and_the_ball_then_rolls():
    """The gap row at the next midpoint makes a touch-down inelastic (no bounce, no
    penetration); the ball then rolls at 5/7 of its sliding start (slip stops, exactly)."""
    model = Model(gravity=(0.0, 0.0, -G))
    ball = model.add_body(RigidBody("ball", 1.0, (0.004,) * 3, position=(0.0, 0.0, 0.2), velocity=(0.5, 0.0, 0.0)))
    model.add_contact(SphereContact(ball, Plane(), 0.3, radius=0.1))
    run = Simulation(model, "regularized", 1e-3, position_update="midpoint").run(0.6)
    height = run.position[:, 0, 2] - 0.1
    assert height.min() >= -1e-12
    landed = np.flatnonzero(height < 1e-9)[0]
    assert np.all(np.abs(run.velocity[landed:, 0, 2]) < 1e-12)
    assert run.velocity[-1, 0, 0] == pytest.approx(5 / 7 * 0.5, rel=1e-9)


def test_what_the_scheme_refuses_is_named():
    from scenes import wheel

    with pytest.raises(ValueError, match="gyroscopic='midpoint'"):
        Simulation(wheel.build().model, position_update="midpoint", gyroscopic="explicit")
    with pytest.raises(ValueError, match="compiled loop"):
        Simulation(wheel.build().model, position_update="midpoint", compiled_loop=True)
    model = Model()
    body = model.add_body(RigidBody("b", 1.0, (0.1, 0.1, 0.1)))
    model.add_contact(PointContact(body, Plane(), 0.3, normal_law=SpringDamperLaw(1e5, 10.0)))
    with pytest.raises(ValueError, match="rigid contacts only"):
        Simulation(model, position_update="midpoint")
    with pytest.raises(ValueError, match="position_update must be one of"):
        Simulation(wheel.build().model, position_update="trapezoidal")
