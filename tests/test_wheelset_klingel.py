"""Klingel motion of a wheelset rolling on the wheel–rail element (scenes.wheelset_klingel):
for a small amplitude the wavelength of the simulated lateral motion is Schwab & Meijaard
2002's Eq. (9) evaluated from the placed profiles, within 0.5 %, for S1002 on UIC60 at slants
1/40 and 1/20 and for a cone on a circular rail head; it falls as the amplitude grows (the
paper's Figs. 7-8); ideal rolling on the rigid wheelset, overconstrained as the paper says, is a
reported failure."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from lcpdyn import Simulation
from lcpdyn.profiles import circular_rail, conical_wheel
from lcpdyn.stepper import SimulationError
from lcpdyn.wheelset_geometry import TrackPlacement, WheelsetGeometry
from scenes import wheelset_klingel as klingel

pytestmark = pytest.mark.one_leg(leg="siconos")  # proven once per two-leg test command (conftest.dealt_leg)

SPEED = 20.0  # m/s: the kinematic wavelength does not depend on it (39.3436 m at 10 and at 20 m/s, 1/20)


def simulated_wavelength(track, amplitude, friction="regularized"):
    eq9 = track.klingel(1e-6)["wavelength_eq9"]
    model = klingel.wheelset(track, {**klingel.DEFAULTS, "amplitude": amplitude, "speed": SPEED})
    trajectory = Simulation(model, friction, 1e-3).run(1.35 * eq9 / SPEED)  # three zero crossings
    assert np.all(trajectory.solver_status == 0)
    return klingel.wavelength(trajectory.position[:, 0, 0], trajectory.position[:, 0, 1]), eq9


@functools.cache  # a run is made once: test_wavelength_falls_with_amplitude starts from the 1/40 one
def pair_wavelength(pair, amplitude):
    if pair.startswith("s1002"):
        track = klingel.geometry({**klingel.DEFAULTS, "cant": 1 / 40 if pair.endswith("40") else 1 / 20})
    else:
        track = WheelsetGeometry(conical_wheel(0.46, 0.02, 0.03), circular_rail(0.3, 0.04),
                                 TrackPlacement(cant=0.0, profile_cant=0.0, gauge_height=0.001))  # fmt: skip
    return simulated_wavelength(track, amplitude)


@pytest.mark.parametrize(
    "pair, amplitude",
    [("s1002-uic60-1/40", 5e-5), ("s1002-uic60-1/20", 1e-3), ("cone-0.02-on-head-0.3", 1e-3)],
)
def test_small_amplitude_wavelength_is_eq9(pair, amplitude):
    wavelength, eq9 = pair_wavelength(pair, amplitude)
    # measured: -0.08 % (1/40), -0.25 % (1/20), +0.0004 % (the cone)
    assert wavelength == pytest.approx(eq9, rel=5e-3)


def test_wavelength_falls_with_amplitude():
    small, _ = pair_wavelength("s1002-uic60-1/40", 5e-5)
    large, _ = pair_wavelength("s1002-uic60-1/40", 2e-4)
    assert large < 0.995 * small  # measured 11.107 m against 11.240 m at 10 m/s


def test_ideal_rolling_on_a_rigid_wheelset_is_a_reported_failure():
    """All four slips held at zero on a rigid wheelset with its forward speed prescribed leave it
    no motion but the straight one: the paper frees the axle axially. Here the redundant rows are
    solved while they stay consistent, and once the shifted wheelset's rolling radii make them
    inconsistent the run stops saying so, with the steps before it (measured: after 0.2 s with
    the newest NumPy and JAX, 1.0 s on the Siconos leg's)."""
    track = klingel.geometry({**klingel.DEFAULTS, "cant": 1 / 20})
    model = klingel.wheelset(track, {**klingel.DEFAULTS, "amplitude": 1e-3}, rolling="ideal")
    simulation = Simulation(model, "regularized", 1e-3)
    with pytest.raises(SimulationError, match="failed") as info:
        simulation.run(2.0)
    trajectory = info.value.trajectory
    assert trajectory is not None and len(trajectory.t) > 100
    # pure rolling while it is solved: every step's rows, the slip rows among them, hold to the
    # solver's tolerance on their own scales (the framework's residual of each accepted step) ...
    assert np.all(trajectory.solver_status[1:] == 0)
    assert trajectory.solver_residual[1:].max() <= simulation.tolerance
    # ... and those scales are the indeterminate internal impulses of the redundant rows (the
    # axial force the paper's flexible axle would take), which grow along the run: re-measured
    # on a run's steps, 1e8 to 7e9 at a relative residual of 3e-17. The slips are their
    # rounding: 3.2e-8 m/s at most in one run and 1.5e-7 m/s in another whose kinematics agreed
    # to 5e-16 at every state visited. A creepage of 1e-7 at most, a hundredth of what the
    # bristles of rolling="friction" allow (~1e-5):
    assert np.abs(trajectory.contact_slip_velocity[1:]).max() <= 1e-7 * klingel.DEFAULTS["speed"]
