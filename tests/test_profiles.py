"""Wheel and rail profiles (lcpdyn.profiles): the S1002 and UIC60 files read into the shapes
their standards define, parametric profiles against their closed forms, the spline's
arc-length parametrization and curvature, mirroring and transformation exact, JAX evaluation
equal to NumPy's, and bad files named."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from lcpdyn.profiles import (
    DATA,
    Profile,
    circular_rail,
    circular_wheel,
    conical_wheel,
    evaluate,
    read_csv,
    read_simpack,
    s1002,
    uic60,
)
from tests.engine_helpers import readme_example

SHARED = Path(__file__).resolve().parents[2] / "shared" / "profiles"  # the originals, where present


def s1002_tread_mm(y):
    """S1002's section B (the tread, −26 mm <= y <= 32.158 mm from the tape circle, y towards
    the field side): the radius offset in mm (EN 13715; coefficients as in DLR's definition)."""
    c = (0.0, -3.358537058e-2, 1.565681624e-3, -2.810427944e-5, 5.844240864e-8, -1.562379023e-8, 5.309217349e-15,
         -5.957839843e-12, 2.646656573e-13)  # fmt: skip
    return sum(ck * y**k for k, ck in enumerate(c))


@pytest.fixture(scope="module")
def wheel():
    return s1002(0.46)


@pytest.fixture(scope="module")
def rail():
    return uic60()


def test_shipped_files_are_the_originals():
    for name in ("MBench_S1002_v3.prw", "MBench_UIC60_v3.prr"):
        assert (DATA / name).is_file() and "Apache License 2.0" in " ".join((DATA / "NOTICE.md").read_text().split())
        if (SHARED / name).is_file():
            assert (DATA / name).read_bytes() == (SHARED / name).read_bytes()


def test_s1002_is_the_standard_profile(wheel):
    y = np.linspace(-25.0, 32.0, 115)
    radius = wheel.point(wheel.at_y(y / 1000))[:, 1]
    assert np.max(np.abs((radius - 0.46) * 1000 - s1002_tread_mm(y))) < 2e-5  # mm
    _, r = wheel.sample(20000)
    assert (r.max() - 0.46) * 1000 == pytest.approx(28.0, abs=0.01)  # flange height
    flank = wheel.at_y(-0.039)  # section E, the straight flank: dr/dy = -2.7475 (the radius falls towards the tread)
    slope = wheel.derivative(flank)
    assert math.degrees(math.atan2(slope[1], slope[0])) == pytest.approx(-70.0, abs=0.01)
    assert 1 / wheel.curvature(wheel.at_y(0.0)) == pytest.approx(0.3199, abs=2e-4)  # concave at the tape circle
    y0, _ = wheel.point(0.0)
    assert y0 == pytest.approx(-0.06961, abs=1e-5)  # the flange back first: y increases along the curve


def test_uic60_head_radii_and_cant(rail):
    s = rail.at_y(np.array([-7.5, -25.0, 10.0, -40.0]) / 1000)
    radii = -1.0 / rail.curvature(s)  # convex head: the curve turns right
    # curvature is a second derivative of a spline through points 0.07-1.7 mm apart: 3e-4 on the R13 arc
    assert radii == pytest.approx([0.300, 0.080, 0.080, 0.013], rel=5e-4)
    top = rail.point(rail.at_y(0.0))
    # the origin is the canted head's highest point: the R300 centre lies 6 µm to its side (slope 6e-6 / 0.3)
    assert top[1] == pytest.approx(0.0, abs=1e-9) and rail.derivative(rail.at_y(0.0))[1] == pytest.approx(
        2e-5, abs=2e-6
    )
    # canted 1:40: the R300 centre lies below the crown, the head's axis through the R80 centres tilts by 1/40
    centres = [rail.point(si) + rail.normal(si) * (-r) for si, r in zip(s[1:3], radii[1:3])]
    axis = 0.5 * (centres[0] + centres[1]) - (rail.point(s[0]) - rail.normal(s[0]) * radii[0])
    assert axis[0] / axis[1] == pytest.approx(-1 / 40, rel=2e-3)  # leaning towards the track centre, -y


def test_parametric_profiles_are_their_closed_forms():
    rail = circular_rail(0.3, half_width=0.02)
    s = np.linspace(0.002, rail.length - 0.002, 9)
    assert -1 / rail.curvature(s) == pytest.approx(0.3, rel=1e-6)
    assert rail.length == pytest.approx(2 * 0.3 * math.asin(0.02 / 0.3), rel=1e-9)  # arc length exact
    angle = math.atan(0.05)
    wheel = circular_wheel(0.46, 0.4, angle)
    inside = np.linspace(0.002, wheel.length - 0.002, 9)  # the spline's not-a-knot ends are off by 1e-6
    assert 1 / wheel.curvature(inside) == pytest.approx(0.4, rel=1e-6)
    slope = wheel.derivative(wheel.at_y(0.0))
    assert slope[1] / slope[0] == pytest.approx(-0.05, rel=1e-7) and wheel.point(wheel.at_y(0.0))[1] == pytest.approx(
        0.46, abs=1e-12
    )
    cone = conical_wheel(0.45, 0.1)
    y, r = cone.sample(50)
    assert r == pytest.approx(0.45 - 0.1 * y, abs=1e-12)
    assert np.abs(cone.curvature(np.linspace(0, cone.length, 20))).max() < 1e-9
    # arc length: |d(y, z)/ds| = 1 along the curve
    for profile in (rail, wheel, cone):
        speed = np.linalg.norm(profile.derivative(np.linspace(0, profile.length, 333)), axis=1)
        assert speed == pytest.approx(1.0, abs=1e-7)


def test_mirror_and_transform_are_exact():
    profile = circular_wheel(0.46, 0.4, 0.05)
    other = profile.mirrored()
    s = np.linspace(0, profile.length, 41)
    back = profile.length - s
    assert other.point(back) == pytest.approx(profile.point(s) * [-1, 1], abs=1e-15)
    assert other.normal(back) == pytest.approx(profile.normal(s) * [-1, 1], abs=1e-12)
    assert other.curvature(back) == pytest.approx(profile.curvature(s), rel=1e-9)
    moved = profile.transformed(0.3, (0.1, -0.2))
    c, sn = math.cos(0.3), math.sin(0.3)
    assert moved.point(s) == pytest.approx(profile.point(s) @ np.array([[c, sn], [-sn, c]]) + [0.1, -0.2], abs=1e-15)
    assert moved.curvature(s) == pytest.approx(profile.curvature(s), rel=1e-9)


def test_jax_evaluation_equals_numpy_and_its_derivative():
    import jax
    import jax.numpy as jnp

    from lcpdyn.precision import float64

    profile = circular_rail(0.08, 0.03)
    s = np.linspace(0.001, profile.length - 0.001, 17)
    with float64():
        knots, coefficients = jnp.asarray(profile.knots), jnp.asarray(profile.coefficients)
        values = np.asarray(evaluate(knots, coefficients, jnp.asarray(s), 0, jnp))
        slope = np.asarray(jax.vmap(jax.jacfwd(lambda t: evaluate(knots, coefficients, t, 0, jnp)))(jnp.asarray(s)))
    assert values == pytest.approx(profile.point(s), abs=1e-15)
    assert slope == pytest.approx(profile.derivative(s), abs=1e-12)


def test_csv_reader_and_smoothing(tmp_path):
    y = np.linspace(-20, 20, 81)  # mm
    z = np.sqrt(300.0**2 - y * y) - 300.0
    path = tmp_path / "head.csv"
    path.write_text("y_mm,z_mm\n" + "\n".join(f"{a},{b}" for a, b in zip(y, z)) + "\n")
    rail = read_csv(path, "rail", unit=1000)
    assert -1 / rail.curvature(np.linspace(0.002, rail.length - 0.002, 7)) == pytest.approx(0.3, rel=1e-4)
    noisy = z + np.random.default_rng(1).normal(0, 1e-3, z.shape)  # 1 µm of measurement noise
    path.write_text("\n".join(f"{a} {b}" for a, b in zip(y, noisy)))
    raw, smooth = read_csv(path, "rail", unit=1000), read_csv(path, "rail", unit=1000, smoothing=1e-8)
    s_raw, s_smooth = np.linspace(0.005, raw.length - 0.005, 50), np.linspace(0.005, smooth.length - 0.005, 50)
    error_raw = np.abs(-1 / raw.curvature(s_raw) - 0.3).max()
    error_smooth = np.abs(-1 / smooth.curvature(s_smooth) - 0.3).max()
    assert error_smooth < 0.1 * error_raw  # the smoothing spline keeps the curvature the noise spoils


def test_bad_profiles_are_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere.prr"):
        read_simpack(tmp_path / "nowhere.prr")
    bad = tmp_path / "bad.csv"
    bad.write_text("1,2\n3,4\nfive,6\n7,8\n")
    with pytest.raises(ValueError, match="line 3"):
        read_csv(bad, "rail")
    with pytest.raises(ValueError, match=r"z\[1\] is nan"):
        Profile.from_points([0, 1, 2, 3], [0, float("nan"), 0, 0])
    with pytest.raises(ValueError, match="at least 4 distinct"):
        Profile.from_points([0, 0, 0, 1], [0, 0, 0, 1])
    with pytest.raises(ValueError, match="nominal_radius"):
        read_csv(tmp_path / "bad.csv", "wheel")
    with pytest.raises(ValueError, match="kind"):
        read_csv(bad, "axle")
    headless = tmp_path / "headless.prr"
    headless.write_text("point.begin\n0 0\n1 0\n2 0\n3 0\npoint.end\n")
    with pytest.raises(ValueError, match="type"):
        read_simpack(headless)
    with pytest.raises(ValueError, match="positive"):
        circular_rail(-0.3)


def test_readme_profiles_example_runs(capsys):
    namespace = readme_example("# Wheel and rail profiles")
    assert -1 / namespace["rail"].curvature(namespace["s"]) == pytest.approx(0.300, rel=1e-4)
    assert "[" in capsys.readouterr().out
