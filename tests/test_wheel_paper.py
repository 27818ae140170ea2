"""Reproduction of Peiret 2016's wheel comparison (section "Example"): the full 4 s runs of
every friction model at 1 kHz against exact Coulomb at 10 kHz (about a minute per variant)."""

from __future__ import annotations

import numpy as np
import pytest

import scenes
from lcpdyn.compare import compare

pytestmark = pytest.mark.one_leg(leg="siconos")  # proven once per two-leg test command (conftest.dealt_leg)


@pytest.fixture(scope="module", params=["paper", "symplectic"])
def comparison(request):
    return compare(scenes.wheel, position_update=request.param)


def test_every_step_solved_without_fallback(comparison):
    for name, run in comparison["runs"].items():
        assert np.all(run.solver_status == 0), name
        assert run.solver_fallback.sum() == 0, name


def test_wheel_slides_for_about_two_seconds(comparison):
    """Peiret 2016: 'it slides for the first two seconds'."""
    for name in ("coulomb-reference", "coulomb", "regularized"):
        run = comparison["runs"][name]
        sliding = np.linalg.norm(run.contact_slip_velocity[:, 0], axis=1) > 0.01
        assert 1.9 < run.t[np.flatnonzero(sliding)[-1]] < 2.1, name


def test_regularized_meets_the_paper_figures(comparison):
    """Force RMS deviation <= 1.67 % and misalignment RMS <= 0.7 deg (Peiret's own values).

    Against the Coulomb run at the same step in both variants; against the 10 kHz Coulomb run
    with the symplectic update. With the paper's Eq. (7) update the 1 kHz runs -- Coulomb's
    included -- drift from the 10 kHz run during rolling (integration error, see docs/guide/wheel-comparison.md),
    so there only the sliding phase is held to 1.67 %."""
    same_step = comparison["metrics_same_step"]["regularized"]
    fine = comparison["metrics"]["regularized"]
    assert same_step["force_rms_deviation_percent"] <= 1.67
    assert fine["misalignment_rms_deg"] <= 0.7
    assert fine["force_rms_deviation_sliding_percent"] <= 1.67
    if comparison["position_update"] == "symplectic":
        assert fine["force_rms_deviation_percent"] <= 1.67


def test_polygonal_and_box_are_clearly_worse_in_the_paper_order(comparison):
    m = comparison["metrics"]
    assert m["polygonal"]["misalignment_rms_deg"] > 5.0
    assert m["box"]["misalignment_rms_deg"] > 5.0
    assert (
        m["regularized"]["force_rms_deviation_percent"]
        < m["polygonal"]["force_rms_deviation_percent"]
        < m["box"]["force_rms_deviation_percent"]
    )
    assert (
        m["regularized"]["position_error_final"] < m["polygonal"]["position_error_final"]
        and m["regularized"]["position_error_final"] < m["box"]["position_error_final"]
    )


def test_slide_to_roll_transition_under_every_model(comparison):
    """Every model shows the wheel's slide-to-roll transition (issue 4, item 4): Coulomb (both
    steps) and regularized at 2.00 s within a step or two, polygonal within 0.1 s of it; the box
    model stops sliding earlier and slips again later."""
    transitions = comparison["transitions"]
    reference = transitions["coulomb-reference"]["first_roll"]
    assert 1.95 < reference < 2.05
    for name in ("coulomb", "regularized"):
        assert transitions[name]["first_roll"] == pytest.approx(reference, abs=3e-3), name
    assert transitions["polygonal"]["first_roll"] == pytest.approx(reference, abs=0.1)
    assert np.isfinite(transitions["box"]["first_roll"])
    assert transitions["box"]["to_slide"]  # re-slides after its first stop
