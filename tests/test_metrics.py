"""Unit tests of :mod:`lcpdyn.metrics` on synthetic, hand-built trajectories.

Every expected number below is derived by hand from the definitions in the module docstring
(no simulation is run), so each test pins one definition down exactly.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from lcpdyn import metrics
from lcpdyn.trajectory import Trajectory

MU = 0.5


def synthetic(t, **arrays) -> Trajectory:
    """A Trajectory with ``t`` and the given arrays (as float64), one body named "b"."""
    out = {"t": np.asarray(t, dtype=float)}
    for name, value in arrays.items():
        out[name] = np.asarray(value, dtype=float) if name != "initial_energy" else np.float64(value)
    return Trajectory(out, parameters={}, body_names=["b"])


def force_run(t, f, normal=10.0, mu=MU, slip=None, direction=(1.0, 0.0, 0.0)):
    """One contact with lam_N = ``normal`` and |lam_T| = f mu lam_N along ``direction``."""
    t = np.asarray(t, float)
    f = np.broadcast_to(np.asarray(f, float), t.shape)
    normal = np.broadcast_to(np.asarray(normal, float), t.shape)
    friction = (f * mu * normal)[:, None, None] * np.asarray(direction, float)[None, None, :]
    if slip is None:
        slip = np.zeros((t.size, 1, 3))
    return synthetic(
        t, contact_normal_force=normal[:, None].copy(), contact_friction_force=friction, contact_slip_velocity=slip
    )


def grid(h, steps):
    """End-of-step times like the stepper's: (k + 1) h."""
    return (np.arange(steps) + 1) * h


# --- normalized friction force ------------------------------------------------------------
def test_normalized_friction_force_hand_values_and_nan_without_contact():
    normal = np.array([[10.0, 1.0], [0.0, 2.0], [4.0, 0.0], [-1.0, 8.0]])
    friction = np.zeros((4, 2, 3))
    friction[:, 0] = [(3.0, 4.0, 0.0), (1.0, 0.0, 0.0), (0.0, 0.0, 1.0), (1.0, 0.0, 0.0)]
    friction[:, 1] = [(0.0, 0.25, 0.0), (0.0, 0.0, 0.0), (7.0, 0.0, 0.0), (0.0, -2.0, 0.0)]
    run = synthetic(grid(1e-3, 4), contact_normal_force=normal, contact_friction_force=friction)

    f0 = metrics.normalized_friction_force(run, MU, contact=0)
    assert f0.shape == (4,)
    assert f0[0] == 1.0  # 5 / (0.5 * 10)
    assert math.isnan(f0[1])  # lam_N = 0: no contact
    assert f0[2] == 0.5  # 1 / (0.5 * 4)
    assert math.isnan(f0[3])  # lam_N < 0 is not a contact either

    f1 = metrics.normalized_friction_force(run, 0.25, contact=1)
    np.testing.assert_array_equal(f1, [1.0, 0.0, np.nan, 1.0])  # 0.25/(0.25*1), 0, NaN, 2/(0.25*8)

    # default: both contacts, sum_i |lam_T,i| / mu / sum_i lam_N,i^+ (mu = 0.5 for both)
    aggregate = metrics.normalized_friction_force(run, MU)
    np.testing.assert_allclose(
        aggregate,
        [
            (5.0 + 0.25) / (0.5 * 11.0),  # impulse-weighted mean of 1.0 and 0.5
            1.0 / (0.5 * 2.0),  # contact 0 carries friction without normal force
            (1.0 + 7.0) / (0.5 * 4.0),  # ... and now contact 1 does
            (1.0 + 2.0) / (0.5 * 8.0),
        ],
        rtol=1e-14,
    )  # lam_N < 0 counts as 0


# --- on_grid --------------------------------------------------------------------------------
def test_on_grid_samples_a_ten_times_finer_reference_at_the_coarse_times():
    t_ref = grid(1e-4, 1000)
    t = grid(1e-3, 100)
    values = np.sin(50.0 * t_ref) + t_ref**2  # nonlinear: only exact at coinciding grid points
    np.testing.assert_allclose(metrics.on_grid(t, t_ref, values), values[9::10], rtol=0, atol=1e-13)

    # (steps, bodies, 3) keeps its trailing shape, column by column
    stacked = np.stack([values, 2 * values, -values], axis=1)[:, None, :] * np.array([1.0, 10.0])[None, :, None]
    out = metrics.on_grid(t, t_ref, stacked)
    assert out.shape == (100, 2, 3)
    np.testing.assert_allclose(out, stacked[9::10], rtol=0, atol=1e-12)


def test_on_grid_interpolates_linearly_between_reference_samples():
    t_ref = grid(1e-4, 1000)
    linear = 3.0 + 2.0 * t_ref
    t = np.array([1.5e-4, 2.5e-4, 0.0123456, 0.1])
    np.testing.assert_allclose(metrics.on_grid(t, t_ref, linear), 3.0 + 2.0 * t, rtol=1e-14)
    # half way between two samples of a nonlinear signal: the mean of the two samples
    square = t_ref**2
    np.testing.assert_allclose(metrics.on_grid(np.array([1.5e-4]), t_ref, square), [0.5 * (1e-8 + 4e-8)], rtol=1e-12)


@pytest.mark.parametrize(
    "t",
    [
        np.array([0.5e-4, 1e-3]),  # starts before the reference's first sample
        np.array([1e-3, 0.1 + 1e-6]),  # ends after its last sample
        np.array([0.2]),
    ],
)
def test_on_grid_rejects_times_outside_the_reference(t):
    t_ref = grid(1e-4, 1000)
    with pytest.raises(ValueError, match="within the reference"):
        metrics.on_grid(t, t_ref, t_ref)


def test_metrics_reject_a_model_run_longer_than_the_reference():
    reference = force_run(grid(1e-3, 10), 0.5)
    model = force_run(grid(1e-3, 20), 0.5)
    with pytest.raises(ValueError):
        metrics.force_rms_deviation(model, reference, MU)


# --- force RMS deviation ------------------------------------------------------------------
def test_force_rms_deviation_of_a_constant_offset_is_5_percent():
    t = grid(1e-3, 20)
    f_ref = np.linspace(0.2, 1.0, 20)
    reference = force_run(t, f_ref)
    assert metrics.force_rms_deviation(force_run(t, f_ref + 0.05), reference, MU) == pytest.approx(5.0, rel=1e-12)
    assert metrics.force_rms_deviation(force_run(t, f_ref - 0.05), reference, MU) == pytest.approx(5.0, rel=1e-12)
    assert metrics.force_rms_deviation(reference, reference, MU) == 0.0
    # offset 0.05 on half of the steps only: 100 sqrt(0.0025 / 2)
    half = f_ref + np.where(np.arange(20) < 10, 0.05, 0.0)
    assert metrics.force_rms_deviation(force_run(t, half), reference, MU) == pytest.approx(
        100 * math.sqrt(0.0025 / 2), rel=1e-12
    )


def test_force_rms_deviation_does_not_depend_on_the_direction_or_scale_of_the_force():
    t = grid(1e-3, 12)
    reference = force_run(t, 0.8, normal=3.0, direction=(0.0, 1.0, 0.0))
    model = force_run(t, 0.85, normal=40.0, direction=(0.6, -0.8, 0.0))
    assert metrics.force_rms_deviation(model, reference, MU) == pytest.approx(5.0, rel=1e-12)


def test_force_rms_deviation_skips_steps_where_either_force_is_undefined():
    t = grid(1e-3, 10)
    model_normal = np.full(10, 10.0)
    model_normal[[2, 3]] = 0.0  # no model contact
    reference_normal = np.full(10, 10.0)
    reference_normal[[7]] = 0.0  # no reference contact
    f = np.full(10, 0.65)
    f[[2, 3, 7]] = 100.0  # would dominate the RMS if counted (the model's force is still nonzero)
    model = force_run(t, f, normal=model_normal)
    model.contact_friction_force[[2, 3], 0] = (50.0, 0.0, 0.0)
    reference = force_run(t, 0.6, normal=reference_normal)
    assert metrics.force_rms_deviation(model, reference, MU) == pytest.approx(5.0, rel=1e-12)
    # nothing defined at all -> NaN
    empty = force_run(t, 0.6, normal=0.0)
    assert math.isnan(metrics.force_rms_deviation(empty, reference, MU))


def test_force_rms_deviation_sliding_phase_uses_the_reference_slip():
    t = grid(1e-3, 20)
    first = np.arange(20) < 10
    reference_slip = np.zeros((20, 1, 3))
    reference_slip[first, 0] = (0.0, -1.0, 0.0)  # reference slides in the first half
    reference_slip[~first, 0] = (0.01, 0.0, 0.0)  # exactly v_th: not sliding (strict >)
    reference_slip[15, 0] = (0.0, 0.0, 0.0)
    model_slip = np.zeros((20, 1, 3))
    model_slip[~first, 0] = (3.0, 0.0, 0.0)  # the model slides in the *other* half
    f_ref = np.full(20, 0.7)
    f = f_ref + np.where(first, 0.05, 0.2)
    reference = force_run(t, f_ref, slip=reference_slip)
    model = force_run(t, f, slip=model_slip)

    assert metrics.force_rms_deviation(model, reference, MU, velocity_threshold=0.01, phase="all") == pytest.approx(
        100 * math.sqrt((10 * 0.05**2 + 10 * 0.2**2) / 20), rel=1e-12
    )
    assert metrics.force_rms_deviation(model, reference, MU, velocity_threshold=0.01, phase="sliding") == pytest.approx(
        5.0, rel=1e-12
    )  # (with the model's slip it would be 20 %)
    # a lower threshold lets the reference's 0.01 m/s steps count as sliding (not step 15, at rest)
    assert metrics.force_rms_deviation(
        model, reference, MU, velocity_threshold=0.001, phase="sliding"
    ) == pytest.approx(100 * math.sqrt((10 * 0.05**2 + 9 * 0.2**2) / 19), rel=1e-12)


def test_force_rms_deviation_rejects_an_unknown_phase():
    run = force_run(grid(1e-3, 3), 0.5)
    with pytest.raises(ValueError, match="phase"):
        metrics.force_rms_deviation(run, run, MU, phase="stick")


def test_force_rms_deviation_against_a_ten_times_finer_reference():
    """f_ref(t) = 0.3 + 5 t is linear, so the interpolated reference is exact at the model's
    times; sampling the reference by index instead of by time would give a different answer."""
    t_ref = grid(1e-4, 1000)
    t = grid(1e-3, 100)
    reference = force_run(t_ref, 0.3 + 5.0 * t_ref)
    model = force_run(t, 0.3 + 5.0 * t + 0.05)
    assert metrics.force_rms_deviation(model, reference, MU) == pytest.approx(5.0, rel=1e-9)
    # sliding phase with the reference's slip on its own (fine) grid: slides only for t <= 0.05
    slip = np.zeros((1000, 1, 3))
    slip[t_ref <= 0.05 + 1e-12, 0, 0] = 1.0
    reference = force_run(t_ref, 0.3 + 5.0 * t_ref, slip=slip)
    model = force_run(t, 0.3 + 5.0 * t + np.where(t <= 0.05 + 1e-12, 0.05, 0.5))
    assert metrics.force_rms_deviation(model, reference, MU, phase="sliding") == pytest.approx(5.0, rel=1e-9)


# --- misalignment ---------------------------------------------------------------------------
def rotate_z(vector, degrees):
    a = math.radians(degrees)
    c, s = math.cos(a), math.sin(a)
    return np.array([c * vector[0] - s * vector[1], s * vector[0] + c * vector[1], vector[2]])


def test_misalignment_of_a_friction_force_rotated_by_a_known_angle():
    angles = np.array([10.0, 30.0, 45.0, 90.0, 135.0, 170.0])
    headings = np.array([0.0, 22.5, 100.0, -60.0, 200.0, 333.0])  # slip directions
    speeds = np.array([0.5, 2.0, 0.02, 7.0, 1.0, 0.3])
    magnitudes = np.array([1.0, 3.0, 0.1, 10.0, 2.0, 0.7])
    slip = np.zeros((6, 1, 3))
    friction = np.zeros((6, 1, 3))
    for k in range(6):
        direction = rotate_z((1.0, 0.0, 0.0), headings[k])
        slip[k, 0] = speeds[k] * direction
        friction[k, 0] = magnitudes[k] * rotate_z(-direction, angles[k])
    t = grid(1e-3, 6)
    run = synthetic(t, contact_friction_force=friction, contact_slip_velocity=slip)
    times, got = metrics.misalignment_angles(run, velocity_threshold=0.01)
    np.testing.assert_array_equal(times, t)
    np.testing.assert_allclose(got, angles, rtol=0, atol=1e-9)
    assert metrics.misalignment_rms(run, 0.01) == pytest.approx(math.sqrt(np.mean(angles**2)), rel=1e-12)


def test_misalignment_out_of_the_plane_and_perfectly_aligned_force():
    slip = np.zeros((2, 1, 3))
    friction = np.zeros((2, 1, 3))
    slip[0, 0] = (0.0, 2.0, 0.0)
    friction[0, 0] = (0.0, -1.0, 1.0)  # 45 deg from -v_T, tilted out of the plane
    slip[1, 0] = (-1.0, 0.0, 0.0)
    friction[1, 0] = (4.0, 0.0, 0.0)  # exactly opposite to the slip: 0 deg
    run = synthetic(grid(1e-3, 2), contact_friction_force=friction, contact_slip_velocity=slip)
    _, got = metrics.misalignment_angles(run)
    np.testing.assert_allclose(got, [45.0, 0.0], rtol=0, atol=1e-6)


def test_misalignment_excludes_steps_at_or_below_the_threshold_and_without_force():
    t = grid(1e-3, 6)
    slip = np.zeros((6, 1, 3))
    friction = np.zeros((6, 1, 3))
    slip[:, 0, 0] = [1.0, 0.01, 0.005, 0.0, 2.0, 0.5]
    friction[:, 0] = (0.0, 1.0, 0.0)  # 90 deg from -v_T wherever v_T != 0
    friction[0, 0] = (-1.0, 0.0, 0.0)  # 0 deg
    friction[4, 0] = (0.0, 0.0, 0.0)  # sliding but no friction force: excluded
    friction[5, 0] = rotate_z((-1.0, 0.0, 0.0), 30.0)  # 30 deg
    run = synthetic(t, contact_friction_force=friction, contact_slip_velocity=slip)

    times, got = metrics.misalignment_angles(run, velocity_threshold=0.01)
    np.testing.assert_array_equal(times, t[[0, 5]])  # 0.01 m/s is not > v_th = 0.01
    np.testing.assert_allclose(got, [0.0, 30.0], rtol=0, atol=1e-6)
    assert metrics.misalignment_rms(run, 0.01) == pytest.approx(math.sqrt((0.0 + 900.0) / 2), rel=1e-9)

    times, got = metrics.misalignment_angles(run, velocity_threshold=0.001)
    np.testing.assert_array_equal(times, t[[0, 1, 2, 5]])
    np.testing.assert_allclose(got, [0.0, 90.0, 90.0, 30.0], rtol=0, atol=1e-6)

    at_rest = synthetic(t, contact_friction_force=friction, contact_slip_velocity=np.zeros((6, 1, 3)))
    assert metrics.misalignment_angles(at_rest)[0].size == 0
    assert math.isnan(metrics.misalignment_rms(at_rest))


def test_misalignment_uses_the_requested_contact():
    slip = np.zeros((1, 2, 3))
    friction = np.zeros((1, 2, 3))
    slip[0, 0] = (1.0, 0.0, 0.0)
    friction[0, 0] = (-1.0, 0.0, 0.0)  # contact 0: 0 deg
    slip[0, 1] = (1.0, 0.0, 0.0)
    friction[0, 1] = rotate_z((-1.0, 0.0, 0.0), 60.0)  # contact 1: 60 deg
    run = synthetic(grid(1e-3, 1), contact_friction_force=friction, contact_slip_velocity=slip)
    assert metrics.misalignment_angles(run, contact=1)[1] == pytest.approx([60.0], abs=1e-9)
    assert metrics.misalignment_rms(run, contact=1) == pytest.approx(60.0, abs=1e-9)


# --- position error -------------------------------------------------------------------------
def test_position_error_is_normalized_by_the_reference_distance_from_the_start():
    start = np.array([1.0, -2.0, 0.5])
    t = grid(1e-3, 50)
    x_ref = start + 2.0 * t[:, None] * np.array([1.0, 0.0, 0.0])  # 2 m/s along x
    reference = synthetic(t, position=x_ref[:, None, :], initial_position=start[None, :])
    offset = np.array([0.0, 0.003, 0.004])  # |offset| = 0.005
    model = synthetic(
        t, position=(x_ref + offset)[:, None, :], initial_position=np.zeros((1, 3))
    )  # the model's own start is not used
    times, error = metrics.position_error(model, reference)
    np.testing.assert_array_equal(times, t)
    np.testing.assert_allclose(error, 0.005 / (2.0 * t), rtol=1e-9)
    assert error[-1] == pytest.approx(0.005 / 0.1, rel=1e-9)


def test_position_error_with_a_finer_reference_second_body_and_zero_distance():
    t_ref = grid(1e-4, 1000)
    t = grid(1e-3, 100)
    start = np.array([[5.0, 5.0, 5.0], [0.0, 1.0, 0.0]])
    ref_pos = np.zeros((1000, 2, 3))
    ref_pos[:, 0] = start[0]  # body 0 never moves: distance 0 -> NaN
    ref_pos[:, 1] = start[1] + t_ref[:, None] * np.array([0.0, 0.0, -3.0])  # body 1 at 3 m/s down
    reference = synthetic(t_ref, position=ref_pos, initial_position=start)
    model_pos = np.zeros((100, 2, 3))
    model_pos[:, 0] = start[0] + 1.0
    model_pos[:, 1] = start[1] + t[:, None] * np.array([0.0, 0.0, -3.0]) + np.array([0.01, 0.0, 0.0])
    model = synthetic(t, position=model_pos, initial_position=start)

    _, error1 = metrics.position_error(model, reference, body=1)
    np.testing.assert_allclose(error1, 0.01 / (3.0 * t), rtol=1e-9)
    _, error0 = metrics.position_error(model, reference)
    assert np.all(np.isnan(error0))


# --- energy error ---------------------------------------------------------------------------
def test_energy_error_absolute_and_relative():
    t_ref = grid(1e-4, 1000)
    t = grid(1e-3, 100)
    reference = synthetic(t_ref, energy=8.0 - 10.0 * t_ref, initial_energy=8.0)
    model = synthetic(t, energy=8.0 - 10.0 * t + 0.2 - t, initial_energy=123.0)
    times, absolute, relative = metrics.energy_error(model, reference)
    np.testing.assert_array_equal(times, t)
    np.testing.assert_allclose(absolute, 0.2 - t, rtol=1e-9)
    np.testing.assert_allclose(relative, (0.2 - t) / 8.0, rtol=1e-9)  # over the *reference's* E(0)
    assert absolute[-1] == pytest.approx(0.1, rel=1e-9)


# --- summary --------------------------------------------------------------------------------
def consistent_pair():
    """A reference on a 10x finer grid and a model with known errors over 0.2 s:
    force offset 0.05 (5 %), friction rotated 20 deg from -v_T, position offset 0.005 m against a
    reference moving at 2 m/s, energy offset +0.2 J with E_ref(0) = 8 J."""
    t_ref, t = grid(1e-4, 2000), grid(1e-3, 200)
    start = np.array([0.0, 0.0, 0.1])

    def run(times, f, angle, position_offset, energy_offset, initial_energy):
        n = times.size
        heading = np.array([1.0, 0.0, 0.0])
        slip = np.tile(0.5 * heading, (n, 1, 1))
        normal = np.full((n, 1), 9.81)
        friction = (f * MU * normal[:, 0])[:, None, None] * rotate_z(-heading, angle)[None, None, :]
        position = (start + 2.0 * times[:, None] * heading + position_offset)[:, None, :]
        return synthetic(
            times,
            contact_normal_force=normal,
            contact_friction_force=friction,
            contact_slip_velocity=slip,
            position=position,
            initial_position=start[None, :],
            energy=8.0 - 5.0 * times + energy_offset,
            initial_energy=initial_energy,
        )

    reference = run(t_ref, 0.9 + 0.5 * t_ref, 0.0, np.zeros(3), 0.0, 8.0)
    model = run(t, 0.95 + 0.5 * t, 20.0, np.array([0.0, 0.005, 0.0]), 0.2, 8.2)
    return model, reference, t


def test_summary_returns_every_metric_with_the_hand_derived_values():
    model, reference, t = consistent_pair()
    result = metrics.summary(model, reference, MU, velocity_threshold=0.01, settle=0.1)
    assert set(result) == {
        "force_rms_deviation_percent",
        "force_rms_deviation_sliding_percent",
        "misalignment_rms_deg",
        "static_force_ratio_max",
        "position_error_final",
        "position_error_max",
        "position_error_final_per_path",
        "energy_error_final_J",
        "energy_error_max_abs_J",
        "energy_error_max_relative",
    }
    assert math.isnan(result.pop("static_force_ratio_max"))  # it always slides: never sticks
    assert all(isinstance(v, float) and math.isfinite(v) for v in result.values()), result
    assert result["force_rms_deviation_percent"] == pytest.approx(5.0, rel=1e-9)
    assert result["force_rms_deviation_sliding_percent"] == pytest.approx(5.0, rel=1e-9)
    assert result["misalignment_rms_deg"] == pytest.approx(20.0, rel=1e-9)
    assert result["position_error_final"] == pytest.approx(0.005 / (2.0 * 0.2), rel=1e-9)
    # a straight reference: the path travelled equals the distance from the start
    assert result["position_error_final_per_path"] == pytest.approx(0.005 / (2.0 * 0.2), rel=1e-9)
    first_late = t[t >= 0.1][0]  # the largest relative error after settling is the earliest one
    assert first_late == pytest.approx(0.1, abs=1.5e-3)
    assert result["position_error_max"] == pytest.approx(0.005 / (2.0 * first_late), rel=1e-9)
    assert result["energy_error_final_J"] == pytest.approx(0.2, rel=1e-9)
    assert result["energy_error_max_abs_J"] == pytest.approx(0.2, rel=1e-9)
    assert result["energy_error_max_relative"] == pytest.approx(0.2 / 8.0, rel=1e-9)


def test_summary_of_the_reference_against_itself_is_zero():
    _, reference, _ = consistent_pair()
    result = metrics.summary(reference, reference, MU)
    assert result["force_rms_deviation_percent"] == 0.0
    assert result["force_rms_deviation_sliding_percent"] == 0.0
    assert result["misalignment_rms_deg"] == pytest.approx(0.0, abs=1e-5)
    assert result["position_error_final"] == 0.0
    assert result["position_error_max"] == 0.0
    assert result["energy_error_final_J"] == 0.0
    assert result["energy_error_max_abs_J"] == 0.0
    assert result["energy_error_max_relative"] == 0.0


def test_summary_position_error_max_is_nan_when_the_run_ends_before_settling():
    model, reference, _ = consistent_pair()
    result = metrics.summary(model, reference, MU, settle=0.5)  # the runs last 0.2 s
    assert math.isnan(result["position_error_max"])
    assert math.isfinite(result["position_error_final"])


def test_summary_energy_errors_are_signed_final_and_absolute_maxima():
    """The energy error 0.1 - 3 t changes sign: final -0.5 J, largest magnitude 0.5 J."""
    model, reference, t = consistent_pair()
    model.arrays["energy"] = 8.0 - 5.0 * t + 0.1 - 3.0 * t
    result = metrics.summary(model, reference, MU)
    assert result["energy_error_final_J"] == pytest.approx(-0.5, rel=1e-9)
    assert result["energy_error_max_abs_J"] == pytest.approx(0.5, rel=1e-9)
    assert result["energy_error_max_relative"] == pytest.approx(0.5 / 8.0, rel=1e-9)


def test_position_error_per_path_length_uses_the_distance_travelled():
    """A reference going 1 m out along x and 1 m back along y... here: out 1 m along x then
    1 m along y (path 2 m, displacement sqrt(2) m); the model is 0.02 m off at the end."""
    from lcpdyn.metrics import position_error
    from lcpdyn.trajectory import Trajectory

    t = np.array([1.0, 2.0])
    ref_positions = np.array([[[1.0, 0.0, 0.0]], [[1.0, 1.0, 0.0]]])
    reference = Trajectory({"t": t, "position": ref_positions, "initial_position": np.zeros((1, 3))}, {}, ["b"])
    model = Trajectory(
        {"t": t, "position": ref_positions + [0.0, 0.02, 0.0], "initial_position": np.zeros((1, 3))}, {}, ["b"]
    )
    _, per_path = position_error(model, reference, normalize="path")
    _, per_start = position_error(model, reference)
    np.testing.assert_allclose(per_path, [0.02, 0.01])
    np.testing.assert_allclose(per_start, [0.02, 0.02 / np.sqrt(2.0)])
    with pytest.raises(ValueError, match="normalize"):
        position_error(model, reference, normalize="odometer")


# --- several contacts: aggregation weighted by normal impulse -------------------------------
def two_contacts(t, f, normal, slip=None, mu=MU, parameters=None):
    """Contacts with lam_N = normal[:, i] and |lam_T| = f[:, i] mu lam_N along x."""
    t = np.asarray(t, float)
    f = np.broadcast_to(np.asarray(f, float), (t.size, 2))
    normal = np.broadcast_to(np.asarray(normal, float), (t.size, 2)).copy()
    friction = np.zeros((t.size, 2, 3))
    friction[:, :, 0] = -f * mu * normal
    if slip is None:
        slip = np.zeros((t.size, 2, 3))
    run = synthetic(t, contact_normal_force=normal, contact_friction_force=friction, contact_slip_velocity=slip)
    run.parameters.update(parameters or {})
    return run


def test_aggregate_force_deviation_weights_contacts_by_normal_impulse():
    """Contact 0 carries 3 N, contact 1 1 N; the model's friction is 10 % off at contact 0 only.
    Per step F - F_ref = (3 * 0.1 + 1 * 0) / 4 = 0.075: 7.5 %, not the unweighted 5 %."""
    t = grid(1e-3, 10)
    reference = two_contacts(t, [0.8, 0.6], [3.0, 1.0])
    model = two_contacts(t, [0.9, 0.6], [3.0, 1.0])
    assert metrics.force_rms_deviation(model, reference, MU) == pytest.approx(7.5, rel=1e-12)
    assert metrics.force_rms_deviation(model, reference, MU, contact=0) == pytest.approx(10.0, rel=1e-12)
    assert metrics.force_rms_deviation(model, reference, MU, contact=1) == 0.0
    assert metrics.force_rms_deviation(model, reference, MU, contact=[1, 0]) == pytest.approx(7.5, rel=1e-12)
    # the weights are the normal impulses h lam_N: with the loads swapped, (1 * 0.1 + 3 * 0) / 4
    swapped = two_contacts(t, [0.9, 0.6], [1.0, 3.0])
    swapped_reference = two_contacts(t, [0.8, 0.6], [1.0, 3.0])
    assert metrics.force_rms_deviation(swapped, swapped_reference, MU) == pytest.approx(2.5, rel=1e-12)


def test_aggregate_does_not_depend_on_how_the_load_is_shared():
    """Two redundant supports fully sliding: the model puts all the load on contact 0, the
    reference shares it 50/50. Per contact that is undefined or far off; the aggregate is exact."""
    t = grid(1e-3, 8)
    reference = two_contacts(t, [1.0, 1.0], [2.0, 2.0])
    model = two_contacts(t, [1.0, 1.0], [4.0, 0.0])
    assert metrics.force_rms_deviation(model, reference, MU) == 0.0
    assert math.isnan(metrics.force_rms_deviation(model, reference, MU, contact=1))  # never loaded in the model
    # the model's friction lags the load by one step (Eq. 12): contact 1 still carries mu * 2 N of
    # friction without normal force, contact 0 mu * 2 N on 4 N -- the aggregate keeps both
    lagging = two_contacts(t, [0.5, 0.0], [4.0, 0.0])
    lagging.contact_friction_force[:, 1, 0] = -MU * 2.0
    np.testing.assert_allclose(metrics.normalized_friction_force(lagging, MU), 1.0, rtol=1e-14)
    np.testing.assert_allclose(metrics.normalized_friction_force(lagging, MU, contact=0), 0.5, rtol=1e-14)


def test_aggregate_sliding_phase_keeps_only_the_contacts_where_the_reference_slides():
    """Step by step only the contacts whose reference slip exceeds v_th enter F and F_ref."""
    t = grid(1e-3, 4)
    slip = np.zeros((4, 2, 3))
    slip[:2, 0, 0] = 1.0  # contact 0 slides in steps 0-1
    slip[1:3, 1, 0] = 1.0  # contact 1 slides in steps 1-2; nothing slides in step 3
    reference = two_contacts(t, [1.0, 1.0], [3.0, 1.0], slip=slip)
    model = two_contacts(t, [0.9, 0.5], [3.0, 1.0])
    deviations = [
        0.1,  # contact 0 alone
        (3 * 0.1 + 1 * 0.5) / 4,  # both
        0.5,
    ]  # contact 1 alone; step 3: no contact slides, not counted
    expected = 100 * math.sqrt(np.mean(np.square(deviations)))
    assert metrics.force_rms_deviation(model, reference, MU, phase="sliding") == pytest.approx(expected, rel=1e-12)
    # every step with both contacts: (3 * 0.1 + 1 * 0.5) / 4 = 0.2
    assert metrics.force_rms_deviation(model, reference, MU) == pytest.approx(20.0, rel=1e-12)


def test_aggregate_sliding_phase_against_a_finer_reference():
    """The reference's aggregate over the contacts sliding at t_k is computed on its own grid and
    interpolated: a 10x finer reference with a linear force gives the exact offset."""
    t_ref, t = grid(1e-4, 200), grid(1e-3, 20)
    slip = np.zeros((200, 2, 3))
    slip[:, 0, 0] = 1.0
    slip[t_ref > 0.0105, 1, 0] = 1.0  # contact 1 starts sliding between the model's steps 10 and 11
    f_ref = np.stack([0.5 + 10 * t_ref, 0.2 + 0 * t_ref], axis=1)
    reference = two_contacts(t_ref, f_ref, [2.0, 2.0], slip=slip)
    model = two_contacts(t, np.stack([0.5 + 10 * t + 0.04, 0.2 + 0 * t + 0.04], axis=1), [2.0, 2.0])
    assert metrics.force_rms_deviation(model, reference, MU, phase="sliding") == pytest.approx(4.0, rel=1e-9)


def test_aggregate_misalignment_weights_contacts_by_normal_impulse():
    """Contact 0 (3 N) at 10 deg, contact 1 (1 N) at 30 deg: per step sqrt((3 * 100 + 900) / 4)."""
    t = grid(1e-3, 3)
    slip = np.zeros((3, 2, 3))
    slip[:, :, 0] = 1.0
    run = two_contacts(t, [1.0, 1.0], [3.0, 1.0], slip=slip)
    for i, angle in ((0, 10.0), (1, 30.0)):
        run.contact_friction_force[:, i] = rotate_z((-1.0, 0.0, 0.0), angle)
    run.contact_slip_velocity[2, 1] = 0.0  # step 2: contact 1 sticks, contact 0 alone
    times, angles = metrics.misalignment_angles(run)
    np.testing.assert_array_equal(times, t)
    np.testing.assert_allclose(angles, [math.sqrt(300.0), math.sqrt(300.0), 10.0], rtol=1e-12)
    assert metrics.misalignment_rms(run) == pytest.approx(math.sqrt((300.0 + 300.0 + 100.0) / 3), rel=1e-12)
    assert metrics.misalignment_rms(run, contact=1) == pytest.approx(30.0, rel=1e-12)
    # no normal force at all in a step: equal weights
    run.contact_normal_force[0] = 0.0
    assert metrics.misalignment_angles(run)[1][0] == pytest.approx(math.sqrt(500.0), rel=1e-12)


def test_normal_impulse_and_contact_summary():
    t = grid(2e-3, 5)
    reference = two_contacts(t, [1.0, 1.0], [3.0, 1.0], parameters={"dt": 2e-3})
    model = two_contacts(t, [0.9, 1.0], [3.0, 1.0], parameters={"dt": 2e-3})
    np.testing.assert_allclose(metrics.normal_impulse(model), np.tile([6e-3, 2e-3], (5, 1)), rtol=1e-14)
    rows = metrics.contact_summary(model, reference, MU)
    assert [row["contact"] for row in rows] == [0, 1]
    assert rows[0]["normal_impulse_Ns"] == pytest.approx(0.03, rel=1e-12)
    assert rows[0]["normal_impulse_share"] == pytest.approx(0.75, rel=1e-12)
    assert rows[1]["normal_impulse_share"] == pytest.approx(0.25, rel=1e-12)
    assert rows[0]["force_rms_deviation_percent"] == pytest.approx(10.0, rel=1e-12)
    assert rows[1]["force_rms_deviation_percent"] == 0.0
    assert metrics.force_rms_deviation(model, reference, MU) == pytest.approx(7.5, rel=1e-12)


def test_slip_transitions_of_several_contacts_stop_when_the_last_one_does():
    t = grid(1e-3, 6)
    slip = np.zeros((6, 2, 3))
    slip[:2, 0, 0] = 1.0  # contact 0 stops at step 2
    slip[:4, 1, 0] = 1.0  # contact 1 at step 4
    run = two_contacts(t, [1.0, 1.0], [1.0, 1.0], slip=slip)
    assert metrics.slip_transitions(run)["first_roll"] == pytest.approx(t[4])
    assert metrics.slip_transitions(run, contact=0)["first_roll"] == pytest.approx(t[2])


def test_slip_transitions_located_inside_the_step():
    """A slip falling at 1 m/s^2 through 0.0035 m/s (to rest at step 4) and rising from rest at
    t = 6.5 ms at 2 m/s^2: located, the stop's crossing of 1e-4 m/s is its line's (extrapolated from
    the two steps before it), the start's that of the line between its step's ends."""
    t = grid(1e-3, 10)
    speed = np.where(t < 3.5e-3, 3.5e-3 - t, 0.0) + np.where(t > 6.5e-3, 2.0 * (t - 6.5e-3), 0.0)
    slip = np.zeros((10, 2, 3))
    slip[:, 0, 0] = speed
    run = two_contacts(t, [1.0, 1.0], [1.0, 1.0], slip=slip)
    plain = metrics.slip_transitions(run, 1e-4, contact=0)
    located = metrics.slip_transitions(run, 1e-4, contact=0, locate=True)
    assert plain["to_roll"] == pytest.approx([4e-3]) and plain["to_slide"] == pytest.approx([7e-3])
    assert located["to_roll"] == pytest.approx([3.4e-3], abs=1e-15)
    assert located["to_slide"] == pytest.approx([6.1e-3], abs=1e-15)  # 0 at 6 ms, 1e-3 m/s at 7 ms


# --- mu read from the trajectory --------------------------------------------------------------
def test_mu_is_read_from_the_trajectory_parameters():
    t = grid(1e-3, 4)
    recorded = {"contacts": [{"type": "PointContact", "mu": 0.5}, {"type": "PointContact", "mu": 0.25}]}
    run = two_contacts(t, [1.0, 1.0], [2.0, 2.0], parameters=recorded)
    run.contact_friction_force[:, 1, 0] = -0.25 * 2.0  # |lam_T| = mu_1 lam_N at contact 1
    np.testing.assert_allclose(metrics.friction_coefficients(run), np.tile([0.5, 0.25], (4, 1)))
    np.testing.assert_allclose(metrics.normalized_friction_force(run, contact=1), 1.0, rtol=1e-14)
    np.testing.assert_allclose(metrics.normalized_friction_force(run), 1.0, rtol=1e-14)
    # an explicit mu that agrees is accepted; one that disagrees is refused, naming the recorded value
    np.testing.assert_allclose(metrics.normalized_friction_force(run, [0.5, 0.25]), 1.0, rtol=1e-14)
    with pytest.raises(ValueError, match="disagrees"):
        metrics.normalized_friction_force(run, 0.5)


def test_mu_per_step_array_wins_and_profiles_without_it_are_refused():
    t = grid(1e-3, 4)
    run = two_contacts(t, [1.0, 1.0], [2.0, 2.0], parameters={"contacts": [{"mu": 0.5}, {"mu": 0.5}]})
    run.arrays["contact_mu"] = np.array([[0.5, 0.5], [0.5, 0.5], [0.25, 0.25], [0.25, 0.25]])
    np.testing.assert_allclose(metrics.normalized_friction_force(run), [1.0, 1.0, 2.0, 2.0], rtol=1e-14)
    del run.arrays["contact_mu"]
    run.parameters["contacts"][1]["friction_profile"] = True
    with pytest.raises(ValueError, match="friction_profile"):
        metrics.normalized_friction_force(run)


def test_a_trajectory_without_mu_needs_the_fallback():
    run = two_contacts(grid(1e-3, 3), [1.0, 1.0], [2.0, 2.0])
    with pytest.raises(ValueError, match="records no friction coefficient"):
        metrics.normalized_friction_force(run)
    with pytest.raises(ValueError, match="records no friction coefficient"):
        metrics.force_rms_deviation(run, run)
    with pytest.raises(ValueError, match="one value per contact"):
        metrics.normalized_friction_force(run, [0.5, 0.5, 0.5])
    np.testing.assert_allclose(metrics.normalized_friction_force(run, mu=MU), 1.0, rtol=1e-14)


def test_frictionless_contacts_are_left_out_of_the_friction_metrics():
    run = two_contacts(grid(1e-3, 3), [1.0, 0.0], [2.0, 6.0], parameters={"contacts": [{"mu": 0.5}, {"mu": 0.0}]})
    np.testing.assert_allclose(metrics.normalized_friction_force(run), 1.0, rtol=1e-14)
    assert np.all(np.isnan(metrics.normalized_friction_force(run, contact=1)))


def test_contact_selection_is_checked():
    run = two_contacts(grid(1e-3, 3), [1.0, 1.0], [2.0, 2.0])
    with pytest.raises(IndexError, match="2 contacts"):
        metrics.normalized_friction_force(run, MU, contact=2)
    with pytest.raises(ValueError, match="no contact"):
        metrics.normalized_friction_force(run, MU, contact=[])


def test_static_force_ratio_sees_a_sticking_force_outside_the_cone():
    """Two contacts, mu_k = 0.5, mu_s = 0.6 (parameters): contact 0 sticks with |lam_T| = f mu_k
    lam_N, f = (0.6, 1.32, 0.9, 2.0); the last step slides (|v_T| > v_th) and does not count;
    contact 1 sticks at f = 0.5. r = f mu_k / mu_s: 0.5, 1.1, 0.75; contact 1 0.4167."""
    t = grid(1e-3, 4)
    slip = np.zeros((4, 2, 3))
    slip[3, 0] = (0.5, 0.0, 0.0)
    contacts = [{"mu": MU, "mu_static": 0.6}, {"mu": MU, "mu_static": 0.6}]
    run = two_contacts(t, np.array([[0.6, 0.5], [1.32, 0.5], [0.9, 0.5], [2.0, 0.5]]), [4.0, 2.0], slip=slip,
                       parameters={"contacts": contacts})  # fmt: skip
    result = metrics.static_force_ratio(run)
    assert result["max"] == pytest.approx(1.1, rel=1e-12)
    assert result["t_max"] == t[1] and result["contact_max"] == 0 and result["steps_outside"] == 1
    assert metrics.static_force_ratio(run, contact=1)["max"] == pytest.approx(0.5 * MU / 0.6, rel=1e-12)
    np.testing.assert_allclose(metrics.static_coefficients(run), 0.6)
    # the same run in other units of force: the ratio does not change
    scaled = two_contacts(t, np.array([[0.6, 0.5], [1.32, 0.5], [0.9, 0.5], [2.0, 0.5]]), [4e3, 2e3], slip=slip,
                          parameters={"contacts": contacts})  # fmt: skip
    assert metrics.static_force_ratio(scaled)["max"] == pytest.approx(1.1, rel=1e-12)
    # a recorded contact_mu holds mu_s where a Coulomb contact stuck: mu_s is not scaled again
    recorded = two_contacts(t, np.array([[0.6, 0.5], [1.32, 0.5], [0.9, 0.5], [2.0, 0.5]]), [4.0, 2.0], slip=slip,
                            parameters={"contacts": contacts})  # fmt: skip
    recorded.arrays["contact_mu"] = np.full((4, 2), 0.6)
    np.testing.assert_allclose(metrics.static_coefficients(recorded), 0.6)
    sliding = two_contacts(t, 1.0, [4.0, 2.0], slip=np.full((4, 2, 3), 0.3), parameters={"contacts": contacts})
    assert math.isnan(metrics.static_force_ratio(sliding)["max"])
