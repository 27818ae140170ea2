"""The wheelset's contact geometry on straight track (lcpdyn.wheelset_geometry): the
equivalent conicity against Wickens' closed forms for a cone and for circular profiles on a
circular rail head, Eq. (9) against Klingel's formula in its limit, the S1002/UIC60 contact
against a brute-force search, the placement (gauge point, crown) and the symmetry of the
contact table, and a contact off a profile's end refused."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lcpdyn.profiles import circular_rail, circular_wheel, conical_wheel, s1002, uic60
from lcpdyn.wheelset_geometry import TrackPlacement, WheelsetGeometry, eq9_wavelength, klingel_wavelength

FLAT = {"cant": 0.0, "profile_cant": 0.0, "gauge_height": 0.001}


def wickens(gamma, rho_w, rho_r, b, r0):
    """Equivalent conicity of circular wheel (ρ_w, concave; inf: a cone) and rail (ρ_r) profiles
    in contact at angle α = atan γ (Wickens, "Fundamentals of rail vehicle dynamics", 2003,
    §2.4): λ_e = γ ρ_w (b + ρ_r sin α) / ((ρ_w − ρ_r)(b − r₀ γ))."""
    alpha = math.atan(gamma)
    factor = 1.0 if math.isinf(rho_w) else rho_w / (rho_w - rho_r)
    return gamma * factor * (b + rho_r * math.sin(alpha)) / (b - r0 * gamma)


def test_cone_on_a_circular_head_has_wickens_conicity():
    geometry = WheelsetGeometry(conical_wheel(0.46, 0.05, 0.03), circular_rail(0.3, 0.03), TrackPlacement(**FLAT))
    k = geometry.klingel(1e-5)
    assert k["gamma"] == pytest.approx(0.05, rel=1e-9)  # the cone's slope wherever it touches
    assert k["equivalent_conicity"] == pytest.approx(wickens(0.05, math.inf, 0.3, k["b"], k["r0"]), rel=1e-6)
    assert k["rho_r"] == pytest.approx(0.3, rel=1e-5) and k["rho_w"] > 1e6


def test_hollow_tread_on_a_circular_head_has_wickens_conicity():
    alpha = math.atan(0.05)
    # the rail placed so that the contact is at the wheel's nominal point (y = 0.75 m): the head's centre
    # lies rho_r along the common normal, tilted by alpha, below it
    crown = 0.75 + 0.3 * math.sin(alpha)
    gauge = 2 * (crown - math.sqrt(2 * 0.3 * 0.001 - 0.001**2))
    placement = TrackPlacement(gauge=gauge, **FLAT)
    geometry = WheelsetGeometry(circular_wheel(0.46, 0.4, alpha, 0.1), circular_rail(0.3, 0.06), placement)
    k = geometry.klingel(1e-5)
    assert abs(k["wheel_contact_y"]) < 1e-9  # at the nominal point, as placed
    assert k["rho_w"] == pytest.approx(0.4, rel=1e-5) and k["rho_r"] == pytest.approx(0.3, rel=1e-5)
    # Wickens' closed form is the slope at the centre; the table's over +-10 µm agrees to 1e-6
    assert k["equivalent_conicity"] == pytest.approx(wickens(k["gamma"], 0.4, 0.3, k["b"], k["r0"]), rel=1e-6)
    # Eq. (9) is Klingel's with that conicity, b in place of (b - r0 gamma)
    ratio = (k["wavelength_eq9"] / k["wavelength_kinematic"]) ** 2
    assert ratio == pytest.approx(k["b"] / (k["b"] - k["r0"] * k["gamma"]), rel=1e-6)


def test_eq9_is_klingel_for_a_cone_on_a_knife_edge():
    assert eq9_wavelength(0.75, 0.46, 0.05, 0.0, 0.0) == pytest.approx(klingel_wavelength(0.75, 0.46, 0.05), rel=1e-15)
    assert klingel_wavelength(0.75, 0.46, 0.05) == pytest.approx(2 * math.pi * math.sqrt(0.75 * 0.46 / 0.05))


@pytest.mark.parametrize("cant", [1 / 40, 1 / 20])
def test_s1002_on_uic60_contact_found_as_by_brute_force(cant):
    geometry = WheelsetGeometry(s1002(0.46), uic60(), TrackPlacement(cant=cant))
    left_rail = geometry.rails[0]
    # placement: the crown at z = 0, the gauge point 14 mm below it at y = gauge / 2
    y, z = left_rail.sample(200001)
    assert z.max() == pytest.approx(0.0, abs=1e-12)
    below = np.flatnonzero(z >= -0.014)[0]
    assert y[below] == pytest.approx(1.435 / 2, abs=1e-6)
    z_c, roll, (left, right) = geometry.equilibrium(0.0)
    assert abs(roll) < 1e-12 and left.radius == pytest.approx(right.radius, abs=1e-12)
    # brute force: the wheel's lowest point over the rail, vertical gaps on a 1 µm grid
    wy, wr = geometry.wheels[0].sample(400001)
    wy = wy + geometry.tape
    grid = np.arange(0.70, 0.80, 1e-6)
    inside = (grid > y.min()) & (grid < y.max()) & (grid > wy.min()) & (grid < wy.max())
    gap = (z_c - np.interp(grid[inside], wy, wr)) - np.interp(grid[inside], y, z)
    assert gap.min() == pytest.approx(0.0, abs=1e-8)
    assert grid[inside][np.argmin(gap)] == pytest.approx(left.point[0], abs=3e-5)


def test_contact_table_is_symmetric_and_closed():
    geometry = WheelsetGeometry(s1002(0.46), uic60(), TrackPlacement(cant=1 / 20))
    table = geometry.table([-2e-3, -1e-3, 0.0, 1e-3, 2e-3])
    assert table["r_left"] == pytest.approx(table["r_right"][::-1], abs=1e-12)
    assert table["roll"] == pytest.approx(-table["roll"][::-1], abs=1e-12)
    assert np.all(np.diff(table["delta_r"]) > 0)  # shifted left, the left wheel rolls on a larger radius
    for y in (-2e-3, 1e-3):
        z, roll, contacts = geometry.equilibrium(y)
        assert max(abs(c.gap) for c in contacts) < 1e-13


def test_a_contact_off_the_profiles_is_refused():
    geometry = WheelsetGeometry(conical_wheel(0.46, 0.05, 0.01), circular_rail(0.3, 0.03), TrackPlacement(**FLAT))
    with pytest.raises(ValueError, match="runs off the end of the wheel profile"):
        geometry.equilibrium(0.0)
    with pytest.raises(ValueError, match="gauge must be positive"):
        TrackPlacement(gauge=-1.0)
