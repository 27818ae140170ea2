"""The wheel–rail creep law (lcpdyn.friction.Creep): Kalker's linear forces and Vermeulen–
Johnson's saturation against their formulas, the derivative the step linearizes with against
finite differences, the implicit rows against the law, and the law in a wheelset's steady
rolling: the lateral forces of the rolling spin, f23 s3 / V per wheel."""

from __future__ import annotations

import numpy as np
import pytest

from lcpdyn.friction import Creep, make_friction
from lcpdyn.friction.creep import RollingKinematics, creep_force, saturation

COEFFICIENTS = (12e6, 12e6, 20e3)


def test_saturation_is_vermeulen_johnson_and_c1_at_three():
    for beta in (0.0, 0.5, 1.0, 2.0, 2.999):
        eps, _ = saturation(beta)
        assert eps * beta == pytest.approx(beta - beta**2 / 3 + beta**3 / 27, rel=1e-14, abs=1e-300)
    for beta in (3.0, 4.0, 50.0):
        assert saturation(beta)[0] * beta == pytest.approx(1.0, rel=1e-14)
    below, above = saturation(3.0 - 1e-9), saturation(3.0 + 1e-9)
    assert below[0] == pytest.approx(above[0], abs=1e-9) and below[1] == pytest.approx(above[1], abs=1e-8)
    for beta in (0.3, 1.7, 3.5):  # the slope against a central difference
        h = 1e-6
        assert saturation(beta)[1] == pytest.approx((saturation(beta + h)[0] - saturation(beta - h)[0]) / (2 * h))


def test_linear_forces_are_kalker():
    s = np.array([0.02, -0.05, 0.3])  # m/s, m/s, rad/s
    force, jacobian = creep_force(s, 25.0, 8e4, 0.3, COEFFICIENTS, saturate=False)
    f11, f22, f23 = COEFFICIENTS
    assert force == pytest.approx([-f11 * 0.02 / 25, -(f22 * -0.05 + f23 * 0.3) / 25], rel=1e-15)
    assert jacobian == pytest.approx(-np.array([[f11, 0, 0], [0, f22, f23]]) / 25, rel=1e-15)


@pytest.mark.parametrize("scale", [1e-4, 1e-3, 1e-2, 0.1])  # beta from ~0.05 to beyond 3
def test_saturated_force_magnitude_direction_and_derivative(scale):
    rng = np.random.default_rng(7)
    s = scale * rng.standard_normal(3)
    V, N, mu = 30.0, 86e3, 0.3
    force, jacobian = creep_force(s, V, N, mu, COEFFICIENTS)
    linear, _ = creep_force(s, V, N, mu, COEFFICIENTS, saturate=False)
    beta = np.linalg.norm(linear) / (mu * N)
    expected = mu * N * (beta - beta**2 / 3 + beta**3 / 27 if beta < 3 else 1.0)
    assert np.linalg.norm(force) == pytest.approx(expected, rel=1e-13)
    assert force / np.linalg.norm(force) == pytest.approx(linear / np.linalg.norm(linear), rel=1e-13)
    step = 1e-7 * max(np.abs(s).max(), 1e-6)
    difference = np.column_stack(
        [(creep_force(s + e, V, N, mu, COEFFICIENTS)[0] - creep_force(s - e, V, N, mu, COEFFICIENTS)[0]) / (2 * step)
         for e in step * np.eye(3)]
    )  # fmt: skip
    assert jacobian == pytest.approx(difference, rel=1e-6, abs=1e-6 * np.abs(difference).max())


def test_unloaded_contact_carries_no_creep_force():
    force, jacobian = creep_force(np.array([0.1, 0.1, 0.1]), 10.0, 0.0, 0.3, COEFFICIENTS)
    assert not force.any() and not jacobian.any()


def test_block_rows_are_the_law_linearized_at_the_known_slip():
    """The rows F v+ + x + c = 0 give x = h (F(s^) + J (W v+ - s^)): the law itself at v+ = v."""
    rng = np.random.default_rng(3)
    n, r, h = 6, 2, 1e-3
    D = rng.standard_normal((2 * r, n))
    S = rng.standard_normal((r, n))
    v = 1e-3 * rng.standard_normal(n)
    speed = np.array([20.0, 0.01])  # the second below min_speed: floored
    mu, N = np.array([0.3, 0.2]), np.array([8e4, 5e4])
    model = Creep()
    block = model.block(D, v, h, mu, N, np.zeros((r, 3)), np.zeros((r, 2, 3)), rolling=RollingKinematics(S, speed))
    assert np.all(np.isinf(block.lo)) and np.all(np.isinf(block.hi)) and block.P is None
    assert np.array_equal(block.C, np.eye(2 * r)) and np.array_equal(block.G, D)
    x = -(block.F @ v + block.c)
    for i in range(r):
        s = np.array([*(D[2 * i : 2 * i + 2] @ v), S[i] @ v])
        expected, _ = creep_force(s, max(speed[i], model.min_speed), N[i], mu[i], COEFFICIENTS)
        assert x[2 * i : 2 * i + 2] == pytest.approx(h * expected, rel=1e-12)


def test_creep_needs_rolling_kinematics_and_checks_its_coefficients():
    with pytest.raises(ValueError, match="spin rows and rolling speeds"):
        Creep().block(np.eye(2), np.zeros(2), 1e-3, np.ones(1), np.ones(1), np.zeros((1, 3)), np.zeros((1, 2, 3)))
    with pytest.raises(ValueError, match="f11"):
        Creep(f11=-1.0)
    with pytest.raises(ValueError, match="f23"):
        Creep(f23=float("nan"))
    with pytest.raises(ValueError, match="min_speed"):
        Creep(min_speed=0.0)
    assert make_friction("creep", **{k: v for k, v in Creep(f23=1.0).parameters().items() if k != "model"}).f23 == 1.0
