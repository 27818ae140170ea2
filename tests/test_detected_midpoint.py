"""Detected contacts under Moreau's midpoint scheme (position_update="midpoint"): a collider's
normal row written in v_m (lcpdyn.detected_contacts.CollisionSource.gather), its friction rows on
v+ like a declared contact's (lcpdyn.strategies.assembly.friction_on_end_velocity), the exact cone's
Delassus problem on the slip at v+ -- checked against the declared contact and closed forms."""

from __future__ import annotations

import numpy as np
import pytest

from lcpdyn import Model, RigidBody, Simulation
from lcpdyn.collision import Collider, HalfSpace, Sphere
from lcpdyn.contact import Plane, SphereContact

pytestmark = pytest.mark.filterwarnings("ignore::lcpdyn.stepper.EnergyWarning")

RADIUS, MASS, MU, G = 0.1, 2.0, 0.3, 9.81


def _sphere(detected: bool, *, height=RADIUS, velocity=(1.0, 0.4, 0.0), spin=(0.0, 0.0, 5.0), restitution=0.0):
    """A solid sphere launched sliding on the ground: a declared SphereContact, or colliders."""
    model = Model()
    inertia = 0.4 * MASS * RADIUS**2
    ball = model.add_body(
        RigidBody("ball", MASS, (inertia,) * 3, (0.0, 0.0, height), velocity=velocity, angular_velocity=spin)
    )
    if detected:
        model.add_collider(Collider(ball, Sphere(RADIUS)))
        model.add_collider(Collider(None, HalfSpace(), name="ground"))
        model.set_collisions(margin=0.002, contact={"mu": MU, "restitution": restitution})
    else:
        model.add_contact(SphereContact(ball, Plane(), MU, radius=RADIUS))
    return model


def test_a_sphere_on_colliders_moves_as_on_its_declared_contact_under_the_midpoint_scheme():
    """Exact Coulomb (isotropic, so the friction bases do not matter): the sphere found by
    detection slides, then rolls, as the declared sphere does, to the solver's tolerance; and it
    rolls at 5/7 of its launch speed (the closed form), after 2 v0 / (7 mu g)."""
    runs = {}
    for detected in (False, True):
        sim = Simulation(_sphere(detected), "coulomb", 1e-3, position_update="midpoint", tolerance=1e-12)
        runs[detected] = sim.run(0.4)
    declared, found = runs[False], runs[True]
    assert np.all(found.solver_status == 0)
    np.testing.assert_allclose(found.position, declared.position, rtol=0, atol=1e-9)
    np.testing.assert_allclose(found.quaternion, declared.quaternion, rtol=0, atol=1e-9)
    np.testing.assert_allclose(found.velocity, declared.velocity, rtol=0, atol=1e-8)
    speed = np.hypot(*found.velocity[-1, 0, :2])
    assert speed == pytest.approx(5.0 / 7.0 * np.hypot(1.0, 0.4), rel=1e-6)


@pytest.mark.parametrize("friction", ["regularized", "box", "polygonal"])
def test_the_bounded_models_take_detected_contacts_under_the_midpoint_scheme(friction):
    """Each bounded model's own block on the detected contact, written on v+: the sphere ends
    rolling at 5/7 of its launch speed (no spin about the normal, so the friction direction
    stays along the launch) and its rest height is the radius."""
    sim = Simulation(
        _sphere(True, velocity=(1.0, 0.0, 0.0), spin=(0.0, 0.0, 0.0)), friction, 1e-3, position_update="midpoint"
    )
    run = sim.run(0.4)
    assert np.all(run.solver_status == 0)
    assert run.velocity[-1, 0, 0] == pytest.approx(5.0 / 7.0, rel=2e-3)
    assert abs(run.velocity[-1, 0, 1]) < 1e-9
    assert run.position[-1, 0, 2] == pytest.approx(RADIUS, abs=1e-6)


def test_a_ball_bounces_by_newtons_law_under_the_midpoint_scheme():
    """Dropped from 0.3 m with restitution 0.5: the first rebound leaves at half the impact speed
    (to the h g of one step) and the ball rises to a quarter of its drop, without sinking in."""
    h = 1e-4
    sim = Simulation(
        _sphere(True, height=0.4, velocity=(0.0, 0.0, 0.0), spin=(0.0, 0.0, 0.0), restitution=0.5),
        "coulomb",
        h,
        position_update="midpoint",
    )
    run = sim.run(0.55)
    vz, z = run.velocity[:, 0, 2], run.position[:, 0, 2]
    first = int(np.flatnonzero(vz > 0)[0])
    impact = np.sqrt(2 * G * 0.3)
    assert vz[first - 1] == pytest.approx(-impact, abs=2 * G * h)
    assert vz[first] == pytest.approx(0.5 * impact, abs=2 * G * h)
    peak = z[first:].max() - RADIUS
    assert peak == pytest.approx(0.25 * 0.3, rel=1e-2)
    assert z.min() > RADIUS - 1e-4


def test_islands_give_the_whole_steps_answer_under_the_midpoint_scheme():
    """Two balls dropped onto the ground far apart: split into islands (sparse=True) the
    midpoint scheme's step -- both passes -- is the whole problem's to rounding."""

    def simulation(sparse):
        model = Model()
        inertia = 0.4 * MASS * RADIUS**2
        for k, x in enumerate((0.0, 2.0)):
            ball = model.add_body(
                RigidBody(f"ball{k}", MASS, (inertia,) * 3, (x, 0.0, 0.12), velocity=(0.5 - k, 0.2, 0.0))
            )
            model.add_collider(Collider(ball, Sphere(RADIUS)))
        model.add_collider(Collider(None, HalfSpace(), name="ground"))
        model.set_collisions(margin=0.002, contact={"mu": MU})
        return Simulation(model, "regularized", 1e-3, position_update="midpoint", sparse=sparse)

    split, whole = simulation(True), simulation(False)
    islands = []
    for _ in range(200):
        a, _ = split.step(), whole.step()
        islands.append(a.detected.islands)
        assert np.abs(split.q - whole.q).max() < 1e-12 and np.abs(split.v - whole.v).max() < 1e-10
    assert islands[-1] == 2 and len(a.detected) == 2
