"""Friction events on time in Moreau's midpoint scheme (issue 44; docs/theory/step.md, "Friction
in the midpoint scheme"): each contact's law at the step's middle while it slides through the
step, at the step's end where it may stop or sticks -- switch times of the mu = 0.2 wheel against
the exact reference, second order; a stop inside a step taken by a second solve; friction-limited
rolling second order as ideal rolling is."""

from __future__ import annotations

import math

import numpy as np
import pytest

import scenes
from lcpdyn import Model, RigidBody, Simulation
from lcpdyn.contact import Plane, PointContact
from lcpdyn.metrics import slip_transitions
from lcpdyn.midpoint_friction import FrictionPoint, stops

pytestmark = pytest.mark.one_leg(leg="siconos")  # proven once per two-leg test command (conftest.dealt_leg)

G = 9.81

EXACT_CROSSINGS = np.array([3.078874, 3.525376, 3.592858, 3.801945, 3.873549])
"""The mu = 0.2 wheel's slip crossing 1e-5 m/s at its five switches (stick, slip, stick, slip,
stick), from :func:`lcpdyn.reference.exact_coulomb` at rtol 1e-11 sampled every 0.1 ms and located
as ``slip_transitions(..., locate=True)`` locates (benchmarks/friction_events.py prints them; the
switches themselves, at zero slip: 3.078893, 3.523169, 3.592917, 3.799920, 3.873616 s). The
crossings, not the zero-slip events, are what a run's slip can be held to: a slip starting from
rest takes 2.5 ms to reach 1e-5 m/s."""


def switch_errors(friction, h):
    scene = scenes.wheel.build(mu=0.2, t_end=4.0)
    run = Simulation(scene.model, friction, h, position_update="midpoint").run(4.0)
    transitions = slip_transitions(run, 1e-5, locate=True)
    times = np.array(sorted(transitions["to_roll"] + transitions["to_slide"]))
    later = times[times > 3.0]
    assert later.size == 5, (friction, h, later)
    return np.abs(later - EXACT_CROSSINGS)


def test_stick_slip_wheel_switches_on_time_and_second_order():
    """Was (friction law at v+ over the whole step): up to 9.6 ms off at h = 1 ms, first order."""
    coarse, fine = switch_errors("coulomb", 2e-3), switch_errors("coulomb", 1e-3)
    assert fine.max() < 0.2e-3, fine  # 0.086 ms measured, the issue asks for 2 ms
    assert coarse.max() / fine.max() > 3.0, (coarse, fine)  # 0.335 / 0.086: order 1.96
    # the regularized model by its name: under the midpoint scheme its static branch is in the cone
    assert switch_errors("regularized", 1e-3).max() < 0.5e-3  # 0.34 ms measured (Eq. 12's box: 7.7 ms)


def block_up_an_incline(friction, v0):
    slope = math.radians(20.0)
    up = np.array([math.cos(slope), 0.0, math.sin(slope)])
    model = Model(gravity=(0.0, 0.0, -G))
    body = model.add_body(RigidBody("block", 2.0, (0.1, 0.1, 0.1), velocity=tuple(v0 * up)))
    model.add_contact(PointContact(body, Plane(normal=(-math.sin(slope), 0.0, math.cos(slope))), 0.5))
    run = Simulation(model, friction, 1e-3, position_update="midpoint").run(0.6)
    deceleration = G * (math.sin(slope) + 0.5 * math.cos(slope))
    return run, run.position[:, 0] @ up, v0**2 / (2.0 * deceleration)


@pytest.mark.parametrize("friction", ["coulomb", "regularized", "box", "polygonal"])
def test_block_thrown_up_an_incline_stops_where_it_should_and_stays(friction, monkeypatch):
    """mu = 0.5 > tan 20 deg: it stops at v0^2 / (2 g (sin + mu cos)) and sticks. At 2.004 m/s its
    last sliding step starts faster than friction alone would stop in one step (midpoint law),
    its slip reverses within it, and the second solve writes its law at the step's end."""
    import lcpdyn.stepper as stepper

    fired = []

    def spy(point, k, v_mid):
        out = stops(point, k, v_mid)
        fired.append(bool(out.any()))
        return out

    monkeypatch.setattr(stepper, "stops", spy)
    run, along, exact = block_up_an_incline(friction, 2.004)
    assert sum(fired) == 1
    assert along[-1] == pytest.approx(exact, abs=2e-6)  # a h^2 / 2 = 4e-6 m at most
    assert np.abs(run.velocity[run.t > 0.3, 0]).max() < 1e-10  # no creep: stopped means stopped


def test_stops_are_reversed_slips_of_contacts_with_the_midpoint_law():
    point = FrictionPoint(np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 0.0]]), np.array([False, True, True]))

    class K:  # two contacts on one body sliding along t1, a third at rest
        D_block = np.tile(np.array([[1.0, 0, 0, 0, 0, 0], [0, 1.0, 0, 0, 0, 0]]), (3, 1, 1))
        contact_body = np.zeros(3, int)

    np.testing.assert_array_equal(stops(point, K, np.array([0.4, 0, 0, 0, 0, 0])), [True, False, False])
    np.testing.assert_array_equal(stops(point, K, np.array([0.6, 0, 0, 0, 0, 0])), [False, False, False])
    np.testing.assert_allclose(point.end_slip(K, np.array([0.4, 0, 0, 0, 0, 0])), [[-0.2, 0], [-0.2, 0], [0.8, 0]])
    np.testing.assert_array_equal(point.law_slip, [[0.0, 0.0], [1.0, 0.0], [0.0, 0.0]])


def test_friction_limited_rolling_disk_is_second_order_as_ideal_rolling():
    """Schwab–Meijaard 2003 Sec. 3.2 with mu = 1 (the disk never slips): centre at t = 5 against
    the state equations. Was (law at v+): first order, 12.5 % of the path off after 87 units."""
    from scenes import rolling_disk

    t_end = 5.0
    exact = rolling_disk.transient_path(t_end=t_end, samples=2)["centre"][-1]
    errors = []
    for h in (4e-3, 2e-3):
        model = rolling_disk.build(rolling="friction", mu=1.0, dt=h).model
        run = Simulation(model, "coulomb", h, position_update="midpoint").run(t_end)
        assert np.linalg.norm(run.contact_slip_velocity, axis=-1).max() < 1e-6  # it rolls
        errors.append(np.linalg.norm(run.position[-1, 0] - exact))
    assert math.log2(errors[0] / errors[1]) > 1.9, errors
    assert errors[-1] < 1e-5
