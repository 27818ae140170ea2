"""Rolling constraints and linearized stability (Schwab–Meijaard 2003; Bauchau 2002 Sec. 5-6)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from lcpdyn import DiskContact, Model, Plane, RigidBody
from lcpdyn.cli import main
from lcpdyn.stepper import Simulation
from scenes import caster_shimmy, rolling_disk, swivel_shimmy

pytestmark = pytest.mark.one_leg(leg="siconos")  # proven once per two-leg test command (conftest.dealt_leg)


# --- linearization --------------------------------------------------------------------------
def test_rolling_disk_critical_speed_is_one_over_sqrt_three():
    assert rolling_disk.critical_speed() == pytest.approx(1 / math.sqrt(3), abs=1e-4)
    assert abs(rolling_disk.critical_speed() - 1 / math.sqrt(3)) < 1e-9  # in fact to rounding


@pytest.mark.parametrize("speed,kind", [(0.3, "real"), (0.8, "imaginary")])
def test_rolling_disk_eigenvalue_structure(speed, kind):
    """Dimension 8: six zero eigenvalues (two cyclic coordinates, two kinematic coordinates) and
    one pair, real (unstable, like an inverted pendulum) below the critical speed and imaginary
    (the slalom mode) above it."""
    system = rolling_disk.system()
    eigenvalues = system.linearize(rolling_disk.nominal(system.params(speed=speed)), speed=speed).eigenvalues
    assert eigenvalues.size == 8
    assert np.sum(np.abs(eigenvalues) < 1e-9) == 6
    pair = eigenvalues[np.abs(eigenvalues) > 1e-9]
    if kind == "real":
        np.testing.assert_allclose(pair.imag, 0.0, atol=1e-12)
        assert pair.real.max() > 0.1
    else:
        np.testing.assert_allclose(pair.real, 0.0, atol=1e-12)
        assert np.abs(pair.imag).min() > 0.1


@pytest.mark.parametrize(
    "module,x0,params",
    [
        (rolling_disk, np.array([0.02, -0.01, 0.5, 0.1, 0.05, 0.3, 0.2, -0.4]), {"speed": 0.5}),
        (swivel_shimmy, np.array([0.1, 0.05, -0.2]), {"a_over_l": 0.4}),
        (caster_shimmy, np.array([0.1, -0.05, 0.3]), {"flexible": 1.0}),
    ],
)
def test_linearization_matches_finite_differences_of_the_state_equations(module, x0, params):
    """J = -E^-1 P of Eq. (29), every block from JAX derivatives, equals central differences of
    the compiled state equations (Eq. 22) at the steady motion (where f_d = 0); the state
    equations also evaluate finitely away from it."""
    system = module.system()
    nominal = module.nominal(system.params(**params))
    linear = system.linearize(nominal, **params)
    eps = 1e-6
    fd = np.zeros_like(linear.state_matrix)
    for i in range(nominal.size):
        step = np.zeros(nominal.size)
        step[i] = eps
        fd[:, i] = (system.derivative(nominal + step, **params) - system.derivative(nominal - step, **params)) / (
            2 * eps
        )
    np.testing.assert_allclose(linear.state_matrix, fd, atol=1e-8)
    assert np.all(np.isfinite(system.derivative(x0, **params)))


def test_swivel_wheel_matrices_equal_equation_30():
    """Every block of Eq. (29) for Den Hartog's swivel wheel equals the closed forms of Eq. (30)."""
    m, l, k, v, a_over_l, gyration = 2.0, 1.5, 3.0, 1.7, 0.4, 0.21
    p = dict(mass=m, length=l, stiffness=k, speed=v, a_over_l=a_over_l, gyration=gyration)
    linear = swivel_shimmy.system().linearize(np.zeros(3), **p)
    a = a_over_l * l
    b, r2 = l - a, gyration * l * l
    np.testing.assert_allclose(linear.M, [[m * (a * a + r2) / l**2]], rtol=1e-12)
    np.testing.assert_allclose(linear.C, [[m * (a * b - r2) / l**2 * v / l]], rtol=1e-12)
    np.testing.assert_allclose(linear.K_d, [[k]], rtol=1e-12)
    np.testing.assert_allclose(linear.K_k, [[-m * (a * b - r2) / l**2 * v**2 / l]], rtol=1e-12)
    np.testing.assert_allclose(linear.A, [[1 / l]], rtol=1e-12)
    np.testing.assert_allclose(linear.B_d, [[0.0]], atol=1e-14)
    np.testing.assert_allclose(linear.B_k, [[-v / l]], rtol=1e-12)
    np.testing.assert_allclose(linear.f_d, [0.0], atol=1e-14)
    np.testing.assert_allclose(np.poly(linear.state_matrix), swivel_shimmy.characteristic_polynomial(**p), rtol=1e-10)


def test_swivel_wheel_stable_exactly_between_three_and_seven_tenths():
    low, high = swivel_shimmy.stability_boundaries()
    assert low == pytest.approx(0.3, abs=1e-3)
    assert high == pytest.approx(0.7, abs=1e-3)
    assert swivel_shimmy.growth_rate(0.5) < 0 < swivel_shimmy.growth_rate(0.2)
    assert swivel_shimmy.growth_rate(0.8) > 0


def test_swivel_wheel_critical_case_eigenvalues():
    """a (l - a) = r^2: lambda_1 = -omega and lambda_2,3 = +-i omega_n (their text after Eq. 32)."""
    eigenvalues = swivel_shimmy.system().linearize(np.zeros(3), a_over_l=0.3).eigenvalues
    omega_n = math.sqrt(1.0 / (0.3**2 + 0.21))
    np.testing.assert_allclose(
        sorted(eigenvalues, key=lambda z: z.imag), [1j * -omega_n, -1.0 + 0j, 1j * omega_n], atol=1e-9
    )


@pytest.mark.parametrize("flexible,expected", [(0.0, 2 * math.pi), (1.0, 2 * math.pi * math.sqrt(1 + 5 / 9))])
def test_caster_kinematic_shimmy_wavelength(flexible, expected):
    assert caster_shimmy.bending_factor(1.0) == pytest.approx(5 / 9)
    assert caster_shimmy.wavelength_linear(flexible=flexible) == pytest.approx(expected, rel=1e-9)
    transient = caster_shimmy.transient(flexible=flexible)
    assert transient["wavelength"] == pytest.approx(expected, rel=0.01)
    if flexible:
        assert transient["wavelength"] == pytest.approx(7.83, rel=0.01)  # their simulation


def test_rolling_disk_transient_wobbles_with_force_ratio_at_most_0_52():
    result = rolling_disk.transient()
    assert result["max_force_ratio"] == pytest.approx(0.52, abs=0.005)
    # sharp turns at equal intervals, alternating in direction (Fig. 5)
    yaw_rate = result["states"][:, 0]
    t = result["t"]
    peaks = [
        i
        for i in range(1, len(t) - 1)
        if abs(yaw_rate[i]) > 0.5 * np.abs(yaw_rate).max()
        and abs(yaw_rate[i]) >= abs(yaw_rate[i - 1])
        and abs(yaw_rate[i]) >= abs(yaw_rate[i + 1])
    ]
    assert len(peaks) >= 4
    signs = np.sign(yaw_rate[peaks])
    assert np.all(signs[1:] == -signs[:-1])
    gaps = np.diff(t[peaks])
    np.testing.assert_allclose(gaps, gaps.mean(), rtol=0.02)
    assert np.all(result["force"][:, 2] > 0)  # it never leaves the plane


# --- rolling constraints in the LCP time stepper ---------------------------------------------
@pytest.mark.parametrize("friction", ["coulomb", "regularized"])
def test_ideal_rolling_stepper_converges_to_the_state_equations(friction):
    reference = rolling_disk.transient_path(t_end=12.0, samples=1201)
    errors = []
    for h in (2e-3, 1e-3):
        scene = rolling_disk.build(dt=h, t_end=12.0)
        trajectory = Simulation(scene.model, friction, h, position_update="symplectic").run(12.0)
        assert np.max(np.abs(trajectory.contact_slip_velocity)) < 1e-9  # never slips
        end = np.array([np.interp(12.0, reference["t"], reference["centre"][:, j]) for j in range(3)])
        errors.append(np.linalg.norm(trajectory.position[-1, 0] - end))
    assert errors[1] < 6e-3
    assert errors[0] / errors[1] == pytest.approx(2.0, rel=0.25)  # first order


@pytest.mark.parametrize("friction", ["coulomb", "regularized"])
def test_friction_limited_rolling_holds_above_and_slips_below_the_required_ratio(friction):
    """The turning disk needs |F_T| / F_N up to 0.52: with mu = 0.6 the rolling rows hold, with
    mu = 0.3 they are released into sliding during the first turn (Schwab–Meijaard 2003 Sec. 3.2)."""
    outcomes = {}
    for mu in (0.6, 0.3):
        scene = rolling_disk.build(t_end=12.0, rolling="friction", mu=mu)
        trajectory = Simulation(scene.model, scene.friction(friction), 1e-3, position_update="symplectic").run(12.0)
        outcomes[mu] = np.linalg.norm(trajectory.contact_slip_velocity[:, 0], axis=1).max()
    assert outcomes[0.6] < 1e-6
    assert outcomes[0.3] > 0.1


def test_zero_spin_row_stops_rotation_about_the_normal():
    model = Model()
    wheel = model.add_body(
        RigidBody(
            "wheel",
            1.0,
            (0.3, 0.6, 0.3),
            position=(0.0, 0.0, 0.5),
            velocity=(1.0, 0.0, 0.0),
            angular_velocity=(0.0, 2.0, 0.0),
        )
    )
    model.add_contact(DiskContact(wheel, Plane(), 0.0, radius=0.5, rolling="ideal", spin="ideal"))
    trajectory = Simulation(model, "coulomb", 1e-3).run(0.5)
    np.testing.assert_allclose(trajectory.angular_velocity[:, 0, 2], 0.0, atol=1e-9)


@pytest.mark.parametrize("field,value", [("rolling", "sometimes"), ("spin", "yes")])
def test_bad_rolling_options_are_rejected(field, value):
    model = Model()
    wheel = model.add_body(RigidBody("wheel", 1.0, (0.3, 0.6, 0.3)))
    with pytest.raises(ValueError, match=field):
        DiskContact(wheel, Plane(), 0.3, radius=0.5, **{field: value})


# --- command line ---------------------------------------------------------------------------
def test_stability_command_writes_plot_and_json(tmp_path, capsys):
    plot, out = tmp_path / "roots.png", tmp_path / "roots.json"
    assert main(["stability", "rolling-disk", "--param", "speed=0:1:11", "--plot", str(plot), "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["parameter"] == "speed" and len(data["values"]) == 11
    max_real = np.max(data["eigenvalues_real"], axis=1)
    values = np.array(data["values"])
    assert np.all(max_real[values < 0.57] > 1e-6) and np.all(max_real[values > 0.58] < 1e-9)
    assert plot.stat().st_size > 10_000


@pytest.mark.parametrize(
    "argv,culprit",
    [
        (["stability", "nowhere"], "nowhere"),
        (["stability", "rolling-disk", "--param", "speed=0:1"], "--param"),
        (["stability", "rolling-disk", "--param", "velocity=0:1:5"], "velocity"),
        (["reproduce", "nowhere"], "nowhere"),
        # a body without mass or inertia: refused before the sweep, naming the parameter given
        (["stability", "rolling-disk", "--set", "mass=-1"], "mass=-1"),
        (["stability", "rolling-disk", "--set", "radius=0"], "radius=0"),
        (["stability", "rolling-disk", "--param", "mass=-1:1:5"], "mass=-1"),
    ],
)
def test_stability_bad_input_exits_2(argv, culprit, capsys):
    assert main(argv) == 2
    assert culprit in capsys.readouterr().err


def test_reproduce_swivel_writes_checks(tmp_path):
    assert main(["reproduce", "swivel-shimmy", "--out-dir", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "swivel-shimmy.json").read_text())
    np.testing.assert_allclose(data["stability_boundaries_a_over_l"], [0.3, 0.7], atol=1e-3)
    assert data["max_coefficient_difference_vs_eq31"] < 1e-10
    assert (tmp_path / "swivel-shimmy-root-locus.png").exists()


def test_caster_with_the_yoke_as_a_beam_in_the_time_stepper():
    """Schwab–Meijaard 2003 Sec. 3.3's own model: the yoke a beam of EI = 10 with 1 % damping
    (4 geometrically exact elements), the wheel with ideal rolling and zero spin, stepped at
    h = 1 ms over 17 wheel radii (two upward crossings): the contact path's wavelength is their 7.83 and within 0.5 % of
    2 pi r sqrt(1 + 5/9) = 7.8365 (the massless quasi-static yoke), as the state equations' own
    transient (7.818)."""
    beam = caster_shimmy.beam_transient(4, 1e-3, distance=17.0)
    assert beam["crossings"].size >= 2
    assert beam["wavelength"] == pytest.approx(7.83, rel=0.005)
    assert beam["wavelength"] == pytest.approx(2 * math.pi * math.sqrt(1 + 5 / 9), rel=0.005)
    assert np.all(beam["run"].solver_status == 0) and beam["run"].health.max() == 0
    # a sinusoid of heading amplitude yaw0 = 0.1: lateral amplitude 0.1 lambda / (2 pi), kept
    amplitude = np.abs(beam["contact"][:, 1]).max()
    assert amplitude == pytest.approx(0.1 * beam["wavelength"] / (2 * math.pi), rel=0.02)
