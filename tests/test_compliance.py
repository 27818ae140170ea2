"""Compliant normal contact (Bauchau 2002 Sec. 4.2) against closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq

from lcpdyn import Model, Plane, PointContact, RigidBody, Simulation
from lcpdyn.compliance import PolynomialLaw, SpringDamperLaw


def _block(law, height=0.0, velocity=0.0, mass=1.0, mu=0.3):
    model = Model()
    block = model.add_body(
        RigidBody("block", mass, (0.01, 0.01, 0.01), position=(0.0, 0.0, height), velocity=(0.0, 0.0, velocity))
    )
    model.add_contact(PointContact(block, Plane(), mu, normal_law=law))
    return model


@pytest.mark.parametrize("friction", ["regularized", "coulomb"])
def test_resting_block_settles_at_the_static_approach(friction):
    """k = 1e5 N/m, c = 2 sqrt(k m) (critically damped): approach m g / k, normal force m g."""
    k, m = 1e5, 2.0
    trajectory = Simulation(_block(SpringDamperLaw(k, 2 * math.sqrt(k * m)), mass=m), friction, 1e-4).run(0.2)
    assert -trajectory.contact_gap[-1, 0] == pytest.approx(m * 9.81 / k, rel=1e-6)
    assert trajectory.contact_normal_force[-1, 0] == pytest.approx(m * 9.81, rel=1e-6)


def test_polynomial_tyre_static_approach_solves_the_polynomial():
    """Bauchau 2002 Sec. 8.1 tyre under a 15 kg wheel: sum k_i a^i = m g."""
    law = PolynomialLaw((1.755e6, 463.5e6, -18.560e9, 303.750e9), damping=2 * math.sqrt(1.755e6 * 15.0))
    trajectory = Simulation(_block(law, mass=15.0), "coulomb", 1e-4).run(0.2)
    expected = brentq(lambda a: sum(k * a ** (i + 1) for i, k in enumerate(law.coefficients)) - 15.0 * 9.81, 0, 1e-2)
    assert -trajectory.contact_gap[-1, 0] == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("damping_ratio", [0.0, 0.1, 0.3])
def test_drop_on_spring_damper_leaves_with_the_analytic_velocity_and_contact_time(damping_ratio):
    """A mass hitting a linear spring-damper contact at v0 (gravity off). While in contact
    a(t) = (v0/w_d) exp(-zeta w t) sin(w_d t); the contact force k a + c a_dot may not pull, so the
    mass separates at the first t* > 0 where k a + c a_dot = 0, leaving at -a_dot(t*) -- for
    zeta = 0 after half a period with the impact speed."""
    k, m, v0 = 1e6, 1.0, 1.0
    c = 2 * damping_ratio * math.sqrt(k * m)
    omega = math.sqrt(k / m)
    omega_d = omega * math.sqrt(1 - damping_ratio**2)

    def approach(t):
        return v0 / omega_d * math.exp(-damping_ratio * omega * t) * math.sin(omega_d * t)

    def rate(t):
        return (
            v0
            * math.exp(-damping_ratio * omega * t)
            * (math.cos(omega_d * t) - damping_ratio * omega / omega_d * math.sin(omega_d * t))
        )

    if damping_ratio == 0.0:
        t_star = math.pi / omega
    else:
        t_star = brentq(lambda t: k * approach(t) + c * rate(t), 0.5 * math.pi / omega_d, math.pi / omega_d)
    model = Model(gravity=(0.0, 0.0, 0.0))
    block = model.add_body(
        RigidBody("block", m, (0.01, 0.01, 0.01), position=(0.0, 0.0, 1e-4), velocity=(0.0, 0.0, -v0))
    )
    model.add_contact(PointContact(block, Plane(), 0.0, normal_law=SpringDamperLaw(k, c)))
    h = 1e-6
    trajectory = Simulation(model, "coulomb", h, position_update="symplectic").run(8e-3)
    assert trajectory.velocity[-1, 0, 2] == pytest.approx(-rate(t_star), rel=5e-3)
    duration = (trajectory.contact_normal_force[:, 0] > 0).sum() * h
    assert duration == pytest.approx(t_star, rel=5e-3)
    assert np.all(trajectory.contact_normal_force >= 0)
    assert -trajectory.contact_gap.min() == pytest.approx(
        max(approach(t) for t in np.linspace(0, t_star, 2001)), rel=5e-3
    )


def test_bad_normal_laws_are_rejected():
    with pytest.raises(ValueError, match="k_1"):
        PolynomialLaw((0.0, 1.0))
    with pytest.raises(ValueError, match="stiffness"):
        SpringDamperLaw(-1.0)
    with pytest.raises(ValueError, match="damping"):
        SpringDamperLaw(1.0, -2.0)
    model = Model()
    body = model.add_body(RigidBody("b", 1.0, (1.0, 1.0, 1.0)))
    with pytest.raises(TypeError, match="normal_law"):
        PointContact(body, Plane(), 0.3, normal_law="soft")
