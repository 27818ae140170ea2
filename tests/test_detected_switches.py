"""Friction switches inside the step at detected contacts (lcpdyn.friction_switches): a contact
that a collider found breaks away at once and stops without reversing, as a declared one does
(tests/test_physics.py holds the declared contacts to the same closed forms)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lcpdyn import Model, RigidBody, Simulation
from lcpdyn.collision import Box, Collider, HalfSpace, Sphere

pytestmark = pytest.mark.filterwarnings("ignore::lcpdyn.stepper.EnergyWarning")


@pytest.mark.parametrize("friction", ["coulomb", "box", "polygonal", "regularized"])
def test_a_box_on_colliders_breaks_away_in_its_first_step(friction):
    """mu_s = 0.6, mu_k = 0.3 on a pair of colliders, the ground tilted (gravity turned) 0.02
    degrees past atan mu_s: static friction cannot hold the box on its four corners, so it slides
    from its first step at g (sin - mu_k cos), every step's increment h g (sin - mu_k cos)."""
    angle = math.atan(0.6) + math.radians(0.02)
    g, side, h = 9.81, 0.2, 1e-3
    model = Model(gravity=(g * math.sin(angle), 0.0, -g * math.cos(angle)))
    box = model.add_body(RigidBody("box", 1.0, (side**2 / 6,) * 3, (0.0, 0.0, side / 2)))
    model.add_collider(Collider(box, Box((side,) * 3)))
    model.add_collider(Collider(None, HalfSpace(), name="ground"))
    model.set_collisions(margin=0.005, contact={"mu": 0.3, "mu_static": 0.6})
    run = Simulation(model, friction, h).run(0.02)
    assert np.all(run.solver_status == 0) and (run.detected_count == 4).all()
    kinetic = g * (math.sin(angle) - 0.3 * math.cos(angle))
    speed = run.velocity[:, 0, 0]
    np.testing.assert_allclose(np.diff(speed) / h, kinetic, rtol=1e-7)
    assert speed[0] == pytest.approx(kinetic * h, rel=1e-7)


@pytest.mark.parametrize("mu", [1e5, 1e6])
def test_a_huge_mu_stops_a_detected_contacts_slip_in_one_step(mu):
    """A sphere on colliders launched at 2 m/s without spin, mu = 1e5 or 1e6: the regularized
    model's kinetic branch would drive the slip back each step; the reversal is solved again in
    the static branch, and the sphere rolls at 5/7 of its speed, as under coulomb."""
    radius, mass = 0.1, 1.0
    for friction in ("regularized", "coulomb"):
        model = Model()
        ball = model.add_body(
            RigidBody("ball", mass, (0.4 * mass * radius**2,) * 3, (0.0, 0.0, radius), velocity=(2.0, 0.0, 0.0))
        )
        model.add_collider(Collider(ball, Sphere(radius)))
        model.add_collider(Collider(None, HalfSpace(), name="ground"))
        model.set_collisions(margin=0.002, contact={"mu": mu})
        run = Simulation(model, friction, 1e-3).run(0.02)
        assert np.all(run.solver_status == 0)
        np.testing.assert_allclose(run.velocity[:, 0, 0], 2.0 * 5.0 / 7.0, rtol=2e-5, err_msg=friction)
        slip = np.abs(run.velocity[:, 0, 0] - radius * run.angular_velocity[:, 0, 1])
        assert slip.max() < 1e-4 and slip[4:].max() < 1e-9, friction
