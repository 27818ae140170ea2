"""Compliant bilateral rows (a holonomic constraint with a stiffness): the step's linearized
backward Euler against its closed-form recurrence, energy, the rigid limit, every solve path,
and refused input (:mod:`lcpdyn.stepper`, "Compliant bilateral rows")."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lcpdyn import RigidBody, Simulation
from lcpdyn.constraints import BallJoint, Holonomic
from lcpdyn.model import Model

MASS, STIFFNESS, H = 2.0, 5.0e4, 1e-3  # omega = 158 rad/s: h omega = 0.158


def _oscillator(stiffness=STIFFNESS, damping=0.0, bodies=1):
    """Bodies on compliant ball joints to the world (no gravity), pushed along x at 1 m/s."""
    model = Model(gravity=(0.0, 0.0, 0.0))
    for i in range(bodies):
        body = model.add_body(
            RigidBody(f"b{i}", MASS, (0.1, 0.1, 0.1), position=(0.0, float(i), 0.0), velocity=(1.0, 0.0, 0.0))
        )
        model.add_constraint(
            BallJoint(
                body_a=body, offset_b=(0.0, float(i), 0.0), stiffness=stiffness, damping=damping, name=f"joint {i}"
            )
        )
    return model


def _recurrence(steps, damping=0.0):
    """x, v of m v+ = m v - h (k (x + h v+) + c v+), x+ = x + h v+ (linearized backward Euler of
    the elastic force with the symplectic position update)."""
    x, v, out = 0.0, 1.0, []
    for _ in range(steps):
        v = (MASS * v - H * STIFFNESS * x) / (MASS + H * H * STIFFNESS + H * damping)
        x += H * v
        out.append((x, v))
    return np.array(out)


@pytest.mark.parametrize("damping", [0.0, 30.0])
def test_a_compliant_joint_follows_the_backward_euler_recurrence(damping):
    trajectory = Simulation(_oscillator(damping=damping), "coulomb", H).run(0.2)
    expected = _recurrence(200, damping)
    np.testing.assert_allclose(trajectory.position[:, 0, 0], expected[:, 0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(trajectory.velocity[:, 0, 0], expected[:, 1], rtol=0, atol=1e-10)


def test_the_undamped_amplitude_shrinks_by_the_documented_factor_per_step():
    """Energy ratio per step exactly 1 / (1 + (h omega)^2) for a linear spring (the scheme's
    numerical damping), and the energy never rises."""
    sim = Simulation(_oscillator(), "regularized", H)
    trajectory = sim.run(0.5)
    energy = trajectory.energy
    assert np.all(np.diff(energy) <= 1e-12 * energy[0])
    h_omega2 = H * H * STIFFNESS / MASS
    # the discrete energy E = m v^2/2 + k x^2/2 is not the invariant of the recurrence; over whole
    # periods of the discrete motion its decay matches (1 + (h omega)^2)^(-steps/2) per amplitude
    x, v = trajectory.position[:, 0, 0], trajectory.velocity[:, 0, 0]
    amplitude = np.sqrt(x**2 + MASS / STIFFNESS * v**2 * (1.0 + h_omega2))
    ratio = amplitude[-1] / amplitude[99]
    assert ratio == pytest.approx((1.0 + h_omega2) ** (-(len(x) - 100) / 2), rel=2e-3)
    assert trajectory.health.max() == 0


def test_the_stiff_limit_is_the_rigid_joint():
    rigid = Model(gravity=(0.0, 0.0, -9.81))
    body = rigid.add_body(RigidBody("b", MASS, (0.1, 0.1, 0.1), position=(1.0, 0.0, 0.0)))
    rigid.add_constraint(BallJoint(body_a=body, offset_a=(-1.0, 0.0, 0.0)))
    soft = Model(gravity=(0.0, 0.0, -9.81))
    body = soft.add_body(RigidBody("b", MASS, (0.1, 0.1, 0.1), position=(1.0, 0.0, 0.0)))
    soft.add_constraint(BallJoint(body_a=body, offset_a=(-1.0, 0.0, 0.0), stiffness=1e12))
    a = Simulation(rigid, "regularized", H).run(0.5)
    b = Simulation(soft, "regularized", H).run(0.5)
    assert np.max(np.abs(a.position)) > 0.3  # the pendulum swung
    # the stiff row, linearized about the predicted configuration, holds the radius to
    # O(h^2 Omega |v+ - v|) (~4e-8 m here; 1e-5 m linearized about q) and stores no spurious
    # elastic energy; the rigid row's first-order drift is O(h^2 Omega^2 L)
    assert np.max(np.abs(np.linalg.norm(b.position[:, 0], axis=1) - 1.0)) < 1e-7
    assert b.health.max() == 0
    drift = np.max(np.abs(np.linalg.norm(a.position[:, 0], axis=1) - 1.0))
    assert 1e-6 < drift < 3e-5
    assert np.max(np.abs(a.position - b.position)) < 2 * drift


@pytest.mark.parametrize("friction, sparse", [("coulomb", False), ("coulomb", True), ("box", True), ("box", False)])
def test_every_solve_path_takes_the_rows_alike(friction, sparse):
    """Two bodies on their own compliant joints: the dense problem, the islands and the exact
    cone's KKT elimination give the recurrence."""
    trajectory = Simulation(_oscillator(bodies=2), friction, H, sparse=sparse).run(0.05)
    expected = _recurrence(50)
    for i in range(2):
        np.testing.assert_allclose(trajectory.position[:, i, 0], expected[:, 0], rtol=0, atol=1e-12)


def test_the_elastic_energy_is_in_the_potential():
    model = _oscillator()
    q, _ = model.initial_state()
    q[0] = 0.01
    assert float(model.potential_energy(q)) == pytest.approx(0.5 * STIFFNESS * 0.01**2, rel=1e-12)


def _function(state):
    return np.zeros(1)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"stiffness": 0.0}, "stiffness must be > 0"),
        ({"stiffness": math.nan}, "stiffness"),
        ({"stiffness": (1.0, 2.0)}, "a number or 1 numbers"),
        ({"stiffness": 1.0, "damping": -1.0}, "damping must be >= 0"),
        ({"damping": 1.0}, "damping needs a stiffness"),
    ],
)
def test_bad_compliance_is_refused_with_the_constraint_named(kwargs, message):
    with pytest.raises(ValueError, match=message) as error:
        Holonomic(_function, 1, name="hinge 3", **kwargs)
    assert "hinge 3" in str(error.value)


@pytest.mark.parametrize("update", ["paper", "midpoint"])
def test_compliant_rows_need_the_symplectic_update(update):
    with pytest.raises(ValueError, match="need position_update='symplectic'"):
        Simulation(_oscillator(), "regularized", H, position_update=update)
