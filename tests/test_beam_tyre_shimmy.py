"""Issue 18 item 4: Bauchau 2002 Sec. 8.3, the beam-tyre shimmy -- stable at 15 m/s, unstable at
30 m/s -- by the linearization in minimal coordinates and by the time stepper, which must agree."""

from __future__ import annotations

import numpy as np
import pytest

from lcpdyn.trajectory import Health
from scenes import beam_tyre_shimmy as shimmy

pytestmark = pytest.mark.one_leg(leg="current")  # proven once per two-leg test command (conftest.dealt_leg)

ELEMENTS = 4  # the same beam in both models
DT = 5e-5


def test_linearization_puts_the_shimmy_boundary_between_the_papers_two_speeds():
    """Case 1 (15 m/s) stable, case 2 (30 m/s) unstable (Bauchau 2002 Sec. 8.3): the least stable
    mode's real part changes sign between them, once, as a complex pair (a Hopf boundary: shimmy
    is an oscillation, here at about 26 Hz)."""
    slow, fast = (shimmy.least_stable(v, ELEMENTS) for v in (15.0, 30.0))
    assert slow.real < -1.0 and fast.real > 1.0
    assert abs(slow.imag) > 100.0 and abs(fast.imag) > 100.0
    critical = shimmy.critical_speed(elements=ELEMENTS)
    assert 20.0 < critical["speed_m_per_s"] < 28.0
    assert critical["frequency_rad_per_s"] == pytest.approx(abs(fast.imag), rel=0.05)
    # one crossing only: stable all the way below it, unstable all the way above (to 40 m/s)
    for v in (10.0, 20.0, critical["speed_m_per_s"] * 0.98):
        assert shimmy.least_stable(v, ELEMENTS).real < 0
    for v in (critical["speed_m_per_s"] * 1.02, 35.0, 40.0):
        assert shimmy.least_stable(v, ELEMENTS).real > 0


@pytest.mark.parametrize("speed", [15.0, 30.0])
def test_time_stepper_decays_and_grows_at_the_rate_of_the_linearization(speed):
    """The stepped scene (beam elements, gravity, unilateral contact of the footprint wheel,
    Coulomb friction) after a small sideways kick: the envelopes of the tip's lateral
    displacement, of its torsion and of the tyre's Psi all change at the rate the linearization
    predicts for the step (backward Euler on the mode, :func:`scenes.beam_tyre_shimmy.stepped_rate`)
    -- decaying at 15 m/s, growing in bending and torsion at 30 m/s (Figs. 17-20)."""
    scene = shimmy.build(speed=speed, beam_elements=ELEMENTS, dt=DT)
    run = scene.simulation("coulomb").run(0.6)
    assert run.t[-1] == pytest.approx(0.6) and np.all(run.solver_status == 0)
    assert not np.any(run.health & Health.ENERGY_GAIN)
    history = shimmy.histories(run, scene)
    predicted = shimmy.stepped_rate(shimmy.least_stable(speed, ELEMENTS), DT)
    for key in ("tip_lateral_m", "tip_torsion_rad", "psi_rad"):
        rate = shimmy.growth_rate(history["t"], history[key], skip=0.2)
        assert np.sign(rate) == np.sign(predicted), key
        assert rate == pytest.approx(predicted, rel=0.1), key
    assert np.all(run.contact_normal_force[:, 0] > 0)  # the wheel never leaves the road


def test_report_figures_label_the_papers_figures(tmp_path):
    """The report's two figures (drawn here from a synthetic history): Figs. 17-20's quantities,
    the log-scale envelope with the rates, and the stability panel with the critical speed."""
    t = np.linspace(0.0, 2.0, 2001)
    keys = ("tip_lateral_m", "tip_bending_rad", "tip_torsion_rad", "root_bending_moment_Nm",
            "root_torsion_moment_Nm", "delta_m", "psi_rad")  # fmt: skip
    history = {"t": t, **{k: 1e-4 * np.exp(-t) * np.sin(160 * t) for k in keys}}
    figure = shimmy.plot_history(
        {"case 1": (15.0, history, None), "case 2": (30.0, history, 1.5)}, tmp_path / "h.png", {"case 1": -1.0}
    )
    text = " ".join(ax.get_title() for ax in figure.axes)
    for figure_number in ("Fig. 17", "Fig. 18, top", "Fig. 18, bottom", "Fig. 19, top", "Fig. 20, bottom"):
        assert figure_number in text
    assert (tmp_path / "h.png").stat().st_size > 10_000
    speeds = np.linspace(10.0, 40.0, 7)
    shimmy.plot_stability(
        speeds, (speeds - 26.0) / 3 + 160j, {"speed_m_per_s": 26.0}, [(15.0, -3.0)], DT, tmp_path / "s.png"
    )
    assert (tmp_path / "s.png").stat().st_size > 10_000
