"""Runs that stop and go on: snapshot/restore bit for bit, decimated recording, interrupts
(issue 10, item 3). The file side (HDF5 streaming, statuses) is in test_trajectory_files.py and
test_cli_and_io.py."""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest

from lcpdyn.stepper import RunInterrupted, Simulation
from lcpdyn.trajectory import Health
from scenes.blocks import SlidingBlock

ARRAYS = (
    "t",
    "position",
    "quaternion",
    "velocity",
    "angular_velocity",
    "contact_normal_force",
    "contact_friction_force",
    "contact_slip_velocity",
    "contact_gap",
    "contact_kinetic",
    "energy",
    "solver_status",
    "solver_iterations",
    "solver_residual",
    "solver_fallback",
    "health",
)


def _simulation(friction="regularized"):
    scene = SlidingBlock.build()
    return Simulation(scene.model, scene.friction(friction), scene.dt), scene


def _joined(first, second, name):
    return np.concatenate([getattr(first, name), getattr(second, name)])


@pytest.mark.parametrize("friction", ["regularized", "polygonal", "coulomb"])
def test_a_run_continued_from_a_snapshot_is_bit_identical(friction):
    """0.3 s in one go against 0.15 s, a snapshot restored into a fresh simulation, 0.15 s more:
    every recorded array equal bit for bit (warm starts, previous forces and the energy budget
    are part of the state)."""
    whole_sim, scene = _simulation(friction)
    whole = whole_sim.run(0.3)
    first_sim, _ = _simulation(friction)
    first = first_sim.run(0.15)
    state = first_sim.snapshot()
    second_sim, _ = _simulation(friction)
    second_sim.restore(state)
    second = second_sim.run(0.3)
    for name in ARRAYS:
        np.testing.assert_array_equal(_joined(first, second, name), getattr(whole, name), err_msg=name)


def test_record_every_keeps_every_kth_step_and_the_last_and_no_flag_is_lost():
    sim, _ = _simulation()
    full = sim.run(0.1)
    sim2, _ = _simulation()
    decimated = sim2.run(0.1, record_every=7)
    steps = full.t.size
    kept = [i for i in range(steps) if (i + 1) % 7 == 0] + ([steps - 1] if steps % 7 else [])
    np.testing.assert_array_equal(decimated.t, full.t[kept])
    np.testing.assert_array_equal(decimated.velocity, full.velocity[kept])
    assert decimated.parameters["record_every"] == 7
    # health: the OR of the steps since the previous record
    expected = [
        np.bitwise_or.reduce(full.health[(kept[j - 1] + 1 if j else 0) : kept[j] + 1]) for j in range(len(kept))
    ]
    np.testing.assert_array_equal(decimated.health, expected)


def test_record_every_is_validated():
    sim, _ = _simulation()
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="record_every"):
            sim.run(0.01, record_every=bad)


def test_a_long_run_allocates_only_what_it_records():
    """t_end far beyond memory if every step were preallocated: nothing is allocated up front; a
    signal stops it after a few steps with those steps kept."""
    sim, _ = _simulation()
    calls = {"n": 0}
    original = sim.step

    def step(k=None):
        calls["n"] += 1
        if calls["n"] == 5:
            os.kill(os.getpid(), signal.SIGINT)
        return original(k)

    sim.step = step
    with pytest.raises(RunInterrupted) as info:
        sim.run(1e5, record_every=1)  # 1e8 steps: 20 GB if preallocated
    assert info.value.signal == signal.SIGINT
    assert info.value.trajectory.t.size == 5
    assert info.value.trajectory.parameters["status"] == "interrupted"
    assert "interrupted by SIGINT" in str(info.value)
    assert int(Health.OK) == 0
