"""Compliant detected contacts (lcpdyn.detected_contacts.ContactProperties' ``normal_law``): the
linearized spring-damper rows of lcpdyn.compliance on the contacts the colliders find -- closed forms
of a sphere on the ground, the energy budget that counts the springs, the sparse path against the
dense one (a strictly convex problem: the contact forces themselves are unique), and bad input."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import lcpdyn.strategies.sparse_island as sparse_island
from lcpdyn import Model, Simulation
from lcpdyn.collision import Collider, HalfSpace, Sphere
from lcpdyn.compliance import PolynomialLaw, SpringDamperLaw
from lcpdyn.detected_contacts import ContactProperties
from lcpdyn.friction import Regularized
from lcpdyn.trajectory import Health
from scenes.touching import solid_sphere, sphere_pile

RADIUS, DENSITY, G = 0.1, 500.0, 9.81


def _ball(law, height=RADIUS, mu=0.5):
    """A ball of radius 0.1 m (500 kg/m^3) with its centre at ``height`` above the ground."""
    model = Model()
    ball = model.add_body(solid_sphere("ball", RADIUS, DENSITY, (0.0, 0.0, height)))
    model.add_collider(Collider(ball, Sphere(RADIUS)))
    model.add_collider(Collider(None, HalfSpace(), name="ground"))
    model.set_collisions(margin=0.005, contact=ContactProperties(mu=mu, normal_law=law))
    return model, ball


@pytest.mark.parametrize("friction", ["regularized", "coulomb"])
def test_a_ball_comes_to_rest_at_the_springs_static_deflection(friction):
    """At rest the linearized row's fixed point is the law's own balance, F(a) = m g: a = m g / k for
    the spring-damper (Bauchau 2002 Sec. 4.2), whatever the damper and the friction model."""
    k, c = 2e4, 100.0
    model, ball = _ball(SpringDamperLaw(k, c))
    sim = Simulation(model, friction, 1e-3)
    for _ in range(1500):
        out = sim.step()
    weight = ball.mass * G
    assert out.detected.normal_force[0] == pytest.approx(weight, rel=1e-8)
    assert RADIUS - sim.q[2] == pytest.approx(weight / k, rel=1e-6)


def test_a_polynomial_law_balances_the_weight_at_its_root():
    """F(a) = k1 a + k2 a^2 = m g at rest: the positive root of the quadratic."""
    k1, k2 = 1e4, 5e6
    model, ball = _ball(PolynomialLaw((k1, k2), damping=80.0))
    sim = Simulation(model, "regularized", 1e-3)
    for _ in range(1500):
        sim.step()
    weight = ball.mass * G
    root = (-k1 + math.sqrt(k1 * k1 + 4.0 * k2 * weight)) / (2.0 * k2)
    assert RADIUS - sim.q[2] == pytest.approx(root, rel=1e-6)


def test_an_undamped_bounce_keeps_its_energy_within_the_budget_that_counts_the_spring():
    """A ball dropped 5 cm onto an undamped spring: the run's energy (kinetic, gravity and the
    spring's elastic energy at each step's end) never rises, so no step is flagged, and the ball
    rises back close to its height (the implicit linearized spring takes a little out per impact).
    Without the spring's energy in the budget, the rebound would read as a gain."""
    k = 2e4
    model, ball = _ball(SpringDamperLaw(k, 0.0), height=RADIUS + 0.05)
    sim = Simulation(model, "regularized", 1e-4)
    run = sim.run(0.4)
    energy = run.arrays["energy"]
    assert np.count_nonzero(run.arrays["health"] & int(Health.ENERGY_GAIN)) == 0
    assert energy.max() <= energy[0] * (1.0 + 1e-9)
    assert energy.min() >= 0.95 * energy[0]
    heights = run.arrays["position"][:, 0, 2]
    low = int(np.argmin(heights))
    assert RADIUS - heights[low] > 0.5 * math.sqrt(2.0 * ball.mass * G * 0.05 / k)  # it did sink into the spring
    assert heights[low:].max() > RADIUS + 0.045


def test_the_spring_damper_of_a_time_constant():
    """MuJoCo's solref (tau, zeta) for a mass m: omega_n = 1/(tau zeta) and the damping ratio zeta."""
    law = SpringDamperLaw.from_time_constant(0.2, 0.002, 0.7)
    assert math.sqrt(law.stiffness / 0.2) == pytest.approx(1.0 / (0.002 * 0.7), rel=1e-14)
    assert law.damping / (2.0 * math.sqrt(law.stiffness * 0.2)) == pytest.approx(0.7, rel=1e-14)
    with pytest.raises(ValueError, match="time constant must be > 0"):
        SpringDamperLaw.from_time_constant(0.2, 0.0)


def _pile(sparse, friction, law):
    model = sphere_pile(count=60, half_width=0.1)
    model.set_collisions(contact=ContactProperties(mu=0.3, normal_law=law))
    return Simulation(model, friction, 1e-3, sparse=sparse)


@pytest.fixture(scope="module")
def compliant_pile():
    """60 spheres poured into a narrow bin on compliant contacts (solref 2 ms on one sphere) for
    0.4 s: one island of more than SPARSE_CONTACTS contacts."""
    model = sphere_pile(count=60, half_width=0.1)
    law = SpringDamperLaw.from_time_constant(model.bodies[0].mass, 0.002)
    sim = _pile("auto", Regularized(static_bound="box"), law)
    for _ in range(400):
        out = sim.step()
    assert out.detected.sparse == 1
    return sim.snapshot(), law


@pytest.mark.parametrize(
    ("friction", "cg"),
    [(Regularized(static_bound="box"), False), (Regularized(static_bound="box", tangential_stiffness=1e6), True),
     ("coulomb", False)],
    ids=["regularized", "regularized k_T=1e6", "coulomb"],
)  # fmt: skip
def test_a_compliant_piles_sparse_island_gives_the_dense_steps_forces_contact_by_contact(compliant_pile, friction, cg,
                                                                                         monkeypatch):  # fmt: skip
    """With compliant normal rows the step's problem is strictly convex in lam_N, so the forces
    themselves are unique (rigid contacts leave a redundant pile's split of its load open, and only
    v+ and each pair's total are compared there): the island's sparse solve (the compliance in its
    Delassus form; with bristles of k_T = 1e6 its faces by conjugate gradients, the bristles' and
    the normal rows' compliance bounding K's condition; with the default k_T = 1e10 by sparse LU)
    and the dense Eq. (30) give the same force at every contact."""
    import solvers.sparse_newton as sparse_newton

    solves = []

    class Counted(sparse_newton.CGFaceSolver):
        def solve(self, *args):
            solves.append(1)
            return super().solve(*args)

    monkeypatch.setattr(sparse_newton, "CGFaceSolver", Counted)
    monkeypatch.setattr(sparse_island, "CG_SIZE", 0)  # the 60-sphere island is below the size CG pays at
    saved, law = compliant_pile
    a, b = _pile("auto", friction, law), _pile(False, friction, law)
    a.restore(saved)
    b.restore(saved)
    for _ in range(3):
        x, y = a.step(), b.step()
        assert x.detected.sparse == 1 and y.detected.sparse == 0 and not x.fallback
        assert x.residual <= a.tolerance and y.residual <= b.tolerance
        scale = y.detected.normal_force.max()
        assert np.abs(x.detected.normal_force - y.detected.normal_force).max() < 1e-6 * scale
        assert np.abs(a.v - b.v).max() < 1e-7
    assert (len(solves) > 0) == cg


def test_a_compliant_run_resumes_bit_for_bit(compliant_pile):
    """Snapshot and restore continue the compliant pile exactly (the last detection kept for the
    energy budget is the same detection a fresh one would make)."""
    saved, law = compliant_pile
    a = _pile("auto", Regularized(static_bound="box"), law)
    a.restore(saved)
    for _ in range(3):
        a.step()
    middle = a.snapshot()
    a.step()
    b = _pile("auto", Regularized(static_bound="box"), law)
    b.restore(middle)
    b.step()
    np.testing.assert_array_equal(a.q, b.q)
    np.testing.assert_array_equal(a.v, b.v)


def test_bad_compliant_contact_input_is_named():
    with pytest.raises(TypeError, match="normal_law must be a SpringDamperLaw, a PolynomialLaw or None, got str"):
        ContactProperties(normal_law="stiff")
    with pytest.raises(ValueError, match="restitution = 0.5 with a normal_law"):
        ContactProperties(restitution=0.5, normal_law=SpringDamperLaw(1e4))
    model, _ = _ball(SpringDamperLaw(1e4, 10.0))
    with pytest.raises(ValueError, match="midpoint.*rigid contacts only"):
        Simulation(model, "regularized", 1e-3, position_update="midpoint")
    record = Simulation(model, "regularized", 1e-3).parameters()["collisions"]["contact"]
    assert json.loads(json.dumps(record))["normal_law"] == {
        "type": "SpringDamperLaw", "coefficients": [1e4], "damping": 10.0,
    }  # fmt: skip
