"""The step on an explicit state (Simulation.advance): a function of the state it is given,
equal to step() on the simulation's own state, and leaving every input untouched."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import scenes
from lcpdyn.step_state import StepState
from lcpdyn.stepper import Simulation, SimulationError
from scenes.scale import Spheres

FIELDS = ("q", "v", "t", "steps_done", "normal_force", "friction_force", "active_set", "impulse_guess")


def _same(a: StepState, b: StepState):
    for name in FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        if x is None or y is None:
            assert x is None and y is None, name
        else:
            np.testing.assert_array_equal(x, y, err_msg=name)


@pytest.mark.parametrize(
    "scene, friction, sparse",
    [("wheel", "regularized", "auto"), ("wheel", "coulomb", "auto"), ("spheres", "box", True),
     ("spheres", "coulomb", True), ("spheres", "polygonal", True), ("half-car", "regularized", "auto")],
)  # fmt: skip
def test_advance_is_a_function_of_the_state_and_equals_step(scene, friction, sparse):
    built = Spheres.build(count=4, seed=2) if scene == "spheres" else scenes.SCENES[scene].build()
    sim = Simulation(built.model, built.friction(friction), built.dt, sparse=sparse)
    for _ in range(3):
        sim.step()
    start = sim.state
    # every path hands its warm start on: the active set (bounded LCP) or the reactions (the cone)
    warm, unused = ("impulse_guess", "active_set") if friction == "coulomb" else ("active_set", "impulse_guess")
    assert getattr(start, warm) is not None and getattr(start, unused) is None
    kept = {name: None if getattr(start, name) is None else np.array(getattr(start, name)) for name in FIELDS}
    first, out_a = sim.advance(start)
    again, out_b = sim.advance(start)  # the same state again: the same step, bit for bit
    _same(first, again)
    np.testing.assert_array_equal(out_a.normal_force, out_b.normal_force)
    np.testing.assert_array_equal(out_a.friction_force, out_b.friction_force)
    _same(sim.state, start)  # the simulation's own state is untouched ...
    for name, value in kept.items():  # ... and so is the state passed in
        if value is not None:
            np.testing.assert_array_equal(getattr(start, name), value, err_msg=name)
    assert first.steps_done == start.steps_done + 1 and first.t == pytest.approx(start.t + built.dt)
    out = sim.step()  # step() is advance() on the simulation's own state
    _same(sim.state, first)
    np.testing.assert_array_equal(out.v, out_a.v)
    chained = first  # a chain of advance() calls follows step() exactly
    for _ in range(5):
        chained, _ = sim.advance(chained)
        sim.step()
    _same(sim.state, chained)


def test_advance_from_another_state_and_bad_input():
    built = scenes.SCENES["wheel"].build()
    sim = Simulation(built.model, built.friction("regularized"), built.dt)
    start = sim.state
    faster = dataclasses.replace(start, v=start.v * 1.5)
    moved, _ = sim.advance(faster)
    normal, _ = sim.advance(start)
    assert not np.array_equal(moved.v, normal.v)  # the state passed in is the one stepped
    _same(sim.state, start)
    with pytest.raises(TypeError, match="StepState"):
        sim.advance({"q": start.q})
    with pytest.raises(ValueError, match=r"StepState\.v: expected an array of shape \(6,\)"):
        sim.advance(dataclasses.replace(start, v=start.v[:3]))
    with pytest.raises(ValueError, match="StepState.friction_force"):
        sim.advance(dataclasses.replace(start, friction_force=[0.0, 0.0, 0.0]))
    broken = dataclasses.replace(start, v=np.full_like(start.v, np.nan))
    with pytest.raises(SimulationError, match="step 0"):
        sim.advance(broken)
    _same(sim.state, start)  # a failed step changes nothing


def _attributes(sim) -> dict:
    """Every attribute of ``sim``: its identity, and an array's bytes or a list's members' identities."""
    out = {}
    for name, value in vars(sim).items():
        if name in Simulation.CACHES:  # the model's numbers, built on first use
            continue
        if isinstance(value, np.ndarray):
            out[name] = (id(value), value.tobytes())
        elif isinstance(value, list):
            out[name] = (id(value), tuple(map(id, value)))
        else:
            out[name] = id(value)
    return out


@pytest.mark.parametrize(
    "scene, friction, parameters, before",
    [
        ("half-car", "regularized", {}, 3),  # compliant tyres, friction profiles mu(t), joints
        ("incline-pendulum", "regularized", {"beam_elements": 2}, 3),  # compliant bilateral rows (the beam)
        ("incline-block", "coulomb", {"angle_deg": 31.0, "mu": 0.3, "mu_static": 0.6}, 0),  # a breakaway
        ("incline-block", "regularized", {"angle_deg": 31.0, "mu": 0.3, "mu_static": 0.6}, 0),  # its switch
        ("crate-on-half-car", "regularized", {}, 3),  # detected contacts beside declared ones
    ],
)
def test_advance_writes_nothing_outside_what_it_returns(scene, friction, parameters, before):
    """``advance(state)`` leaves every attribute of the simulation as it was -- the step's own
    numbers (its mu, the compliances of compliant rows, a friction switch's branch, the phase
    clock) live in the step (``lcpdyn.step_work``) and what it returns (``StepResult.mu``) --
    on the paths that have such numbers: compliant contacts and profiles, compliant beam rows, a
    breakaway under coulomb and the regularized model's switch, detected contacts."""
    built = scenes.SCENES[scene].build(**parameters)
    sim = built.simulation(friction)
    for _ in range(before):
        sim.step()
    kept = _attributes(sim)
    following, out = sim.advance(sim.state)
    assert _attributes(sim) == kept
    assert out.mu is not None and out.mu.shape == (len(built.model.contacts),)
    if scene == "incline-block":  # the breakaway: mu_k from the first step (issue 44, item 1)
        assert out.mu[0] == 0.3 and following.v[0] != 0.0
    out_step = sim.step()  # the same step on the simulation's own state
    np.testing.assert_array_equal(out_step.v, out.v)
    np.testing.assert_array_equal(out_step.mu, out.mu)
