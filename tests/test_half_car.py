"""The half car (Ikoki 2022): traction saturation in the complementarity engine and the
Udwadia–Kalaba formulation of the same car."""

from __future__ import annotations

import numpy as np
import pytest

from scenes import half_car

pytestmark = pytest.mark.one_leg(leg="current")  # proven once per two-leg test command (conftest.dealt_leg)


@pytest.fixture(scope="module")
def spinning():
    """T_max = 550 N m through the slippery stretch (t = 2.5 ... 5.5 s), Coulomb friction."""
    return half_car.run_engine(550.0, t_end=6.0)


def test_traction_never_exceeds_mu_n(spinning):
    """|F_T| <= mu N at every step and contact (mu N of the step: the cone uses lam_N+)."""
    trajectory, scene, _ = spinning
    mu = np.array([half_car.grip(t - scene.dt, scene.parameters) for t in trajectory.t])
    bound = mu[:, None] * trajectory.contact_normal_force
    friction = np.linalg.norm(trajectory.contact_friction_force, axis=2)
    assert np.all(friction <= bound * (1 + 1e-7) + 1e-9)
    assert np.all(trajectory.solver_status == 0)


def test_rear_wheel_spins_on_the_slippery_stretch_while_the_front_rolls(spinning):
    trajectory, scene, _ = spinning
    front, rear = half_car.wheel_speeds(trajectory)
    speed = trajectory.velocity[:, 0, 0]
    on_ice = (trajectory.t > 3.5) & (trajectory.t < 4.5)
    rear_rim = rear * trajectory.position[:, 4, 2]
    front_rim = front * trajectory.position[:, 2, 2]
    assert np.min(rear_rim[on_ice] - speed[on_ice]) > 10.0  # spinning
    assert np.max(np.abs(front_rim[on_ice] - speed[on_ice])) < 0.05  # rolling (tyre compression aside)
    mu = np.array([half_car.grip(t - scene.dt, scene.parameters) for t in trajectory.t])
    traction = half_car.traction(trajectory)
    np.testing.assert_allclose(traction[on_ice], mu[on_ice] * trajectory.contact_normal_force[on_ice, 1], rtol=1e-6)


def test_small_torque_keeps_both_wheels_rolling_at_high_grip():
    trajectory, scene, _ = half_car.run_engine(150.0, t_end=2.0)
    front, rear = half_car.wheel_speeds(trajectory)
    speed = trajectory.velocity[:, 0, 0]
    assert np.max(np.abs(rear * trajectory.position[:, 4, 2] - speed)) < 0.05


def test_udwadia_kalaba_car_agrees_with_the_engine_before_the_slippery_stretch(spinning):
    """Same car, two formulations: while grip is high both wheels roll and the car speeds agree."""
    uk = half_car.run_udwadia_kalaba(550.0, t_end=2.0, samples_per_second=50)
    # the engine's first 2 s: the fixture's run of the same car, cut there (a run's steps do not
    # depend on where it ends: the cut is, bit for bit, run_engine(550.0, t_end=2.0))
    full, scene, _ = spinning
    trajectory = full.truncated(round(2.0 / scene.dt))
    assert trajectory.t[-1] == pytest.approx(2.0)
    engine_speed = np.interp(uk["t"], trajectory.t, trajectory.velocity[:, 0, 0])
    assert np.max(np.abs(uk["speed"] - engine_speed)) < 0.05 * engine_speed.max()
    assert np.max(np.abs(uk["front_rim"] - uk["speed"])) < 0.05
