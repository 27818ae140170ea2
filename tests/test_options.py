"""StepOptions: one frozen, typed object, validated once, recorded once, rebuilt from once."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from lcpdyn import Simulation, StepOptions
from lcpdyn.options import COLLISION_RECORDED, RECORDED
from lcpdyn.rebuild import SIMULATION_KEYS

from .engine_helpers import sphere_model


def test_options_are_frozen_and_validated_on_every_change():
    options = StepOptions(tolerance=1e-10)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.tolerance = 1.0
    with pytest.raises(ValueError, match="tolerance"):
        options.replace(tolerance=-1.0)
    with pytest.raises(ValueError, match="position_update must be one of"):
        StepOptions(position_update="leapfrog")
    with pytest.raises(ValueError, match="needs gyroscopic='midpoint'"):
        StepOptions(position_update="midpoint", gyroscopic="explicit")
    with pytest.raises(TypeError, match=r"unknown option\(s\) \['tolerence'\]"):
        options.replace(tolerence=1e-9)
    given = {"max_iterations": 50}
    options = StepOptions(solver_options=given)
    given["max_iterations"] = 1  # the options keep their own copy, read-only
    assert options.solver_options["max_iterations"] == 50
    with pytest.raises(TypeError):
        options.solver_options["max_iterations"] = 2


def test_gyroscopic_default_follows_the_scheme_through_replace():
    """None means the scheme's default, resolved when read, so replacing the scheme moves it."""
    assert StepOptions().gyroscopic_scheme == "midpoint"
    assert StepOptions().replace(position_update="paper").gyroscopic_scheme == "explicit"
    assert StepOptions(gyroscopic="midpoint", position_update="paper").gyroscopic_scheme == "midpoint"


def test_keywords_and_options_build_the_same_simulation_and_record_the_resolved_options():
    model = sphere_model(mu=0.3, velocity=(1.0, 0.0, 0.0))
    by_keyword = Simulation(model, "box", 1e-3, tolerance=1e-10, position_update="paper")
    by_options = Simulation(model, "box", 1e-3, options=StepOptions(tolerance=1e-10, position_update="paper"))
    mixed = Simulation(model, "box", 1e-3, options=StepOptions(tolerance=1e-10), position_update="paper")
    assert by_keyword.parameters() == by_options.parameters() == mixed.parameters()
    recorded = by_keyword.parameters()
    assert set(RECORDED) <= set(recorded) and "blas_threads" not in recorded
    assert recorded["method"] == "judice-pires" and recorded["fallback_method"] == "lemke"  # resolved
    assert recorded["gyroscopic"] == "explicit"
    assert SIMULATION_KEYS == RECORDED + COLLISION_RECORDED
    rebuilt = Simulation(model, "box", 1e-3, **{key: recorded[key] for key in RECORDED})
    assert rebuilt.parameters() == recorded
    a, b = by_keyword.run(0.05), rebuilt.run(0.05)
    np.testing.assert_array_equal(a.position, b.position)
    with pytest.raises(TypeError, match="options must be a StepOptions"):
        Simulation(model, "box", 1e-3, options={"tolerance": 1e-10})
    with pytest.raises(TypeError, match="unknown option"):
        Simulation(model, "box", 1e-3, tolerence=1e-10)
