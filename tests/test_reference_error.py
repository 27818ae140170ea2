"""``compare`` reports the reference's own error beside the deviations it scores (issue 15, item
3): the step-halving estimate is what an independent run at 2 reference_dt gives, a reference as
coarse as the models is warned about, and the event-driven reference's estimate is at its ODE
tolerance's level."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import scenes
from lcpdyn import Simulation
from lcpdyn.compare import ReferenceErrorWarning, compare, format_table


def test_step_halving_estimate_is_the_distance_to_an_independent_coarser_run():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReferenceErrorWarning)
        result = compare(scenes.wheel, reference_dt=5e-4, t_end=0.3, models=("regularized", "coulomb"))
    own = result["reference_error"]
    assert "step halving" in own["method"] and "0.001 s" in own["method"]
    scene = scenes.wheel.build(t_end=0.3)
    fine = Simulation(scene.model, scene.friction("coulomb"), 5e-4).run(0.3)
    coarse = Simulation(scene.model, scene.friction("coulomb"), 1e-3).run(0.3)
    distance = np.linalg.norm(coarse.position[-1, 0] - fine.position[-1, 0])
    travelled = np.linalg.norm(fine.position[-1, 0] - fine.initial_position[0])  # metrics: relative to it
    assert own["estimate"]["position_error_final"] == pytest.approx(distance / travelled, rel=1e-9)
    assert "Reference's own error (estimate from step halving" in format_table(result)


def test_a_reference_as_coarse_as_the_models_is_warned_about():
    """Reference at the models' own step: its error (its distance to the run at 2 ms) is as large
    as the regularized model's deviation, so the force and position columns cannot rank models."""
    with pytest.warns(ReferenceErrorWarning, match="cannot rank the models") as caught:
        result = compare(scenes.wheel, reference_dt=1e-3, t_end=0.5, models=("regularized", "coulomb"))
    assert result["reference_error"]["warnings"] and len(caught) == len(result["reference_error"]["warnings"])
    assert any(w.startswith("pos err end") for w in result["reference_error"]["warnings"])
    assert "WARNING: pos err end" in format_table(result)
    # the default 10x finer reference is not warned about in those columns
    with warnings.catch_warnings(record=True) as fine:
        warnings.simplefilter("always", ReferenceErrorWarning)
        good = compare(scenes.wheel, reference_dt=1e-4, t_end=0.5, models=("regularized", "coulomb"))
    assert not [w for w in good["reference_error"]["warnings"] if w.startswith(("pos err", "force RMS dev:"))]
    assert len(fine) == len(good["reference_error"]["warnings"])
