"""Body-contact runs streamed into HDF5 and continued (lcpdyn.body_contact_file): a run stopped
by SIGTERM or killed outright goes on from its file and ends as the uninterrupted run, bit for
bit; a failure keeps its steps on disk; a file of another simulation, a failed run, a bad path or
a damaged file is refused with its name."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from lcpdyn import Model, RigidBody
from lcpdyn.body_contact import BodyContactSimulation, load_run
from lcpdyn.collision import Box, Collider, CollisionWorld, HalfSpace, Sphere
from lcpdyn.stepper import RunInterrupted, SimulationError
from lcpdyn.trajectory import TrajectoryFileError

ROOT = Path(__file__).resolve().parents[1]
COMPARED = ("t", "q", "v", "energy", "kinetic_energy", "contacts", "penetration", "solve_status", "iterations",
            "residual", "fallback", "health", "islands", "largest_island", "candidates", "contact_start",
            "contact_body", "contact_point", "contact_normal", "contact_normal_force", "contact_friction_force",
            "contact_gap")  # fmt: skip


def scene(friction="regularized", dt=1e-3, mass=1.0):
    """A ball rolling on the ground and a tilted box falling onto it: contacts that appear,
    persist (warm starts) and change in number."""
    model = Model()
    ball = model.add_body(RigidBody("ball", mass, (0.004 * mass,) * 3, (0, 0, 0.12), velocity=(0.3, 0, 0)))
    box = model.add_body(RigidBody("box", 1.0, (1 / 600,) * 3, (0.05, 0.02, 0.35), (0.99, 0.1, 0.05, 0)))
    colliders = [Collider(ball, Sphere(0.1)), Collider(box, Box((0.1, 0.1, 0.1))), Collider(None, HalfSpace())]
    return BodyContactSimulation(model, CollisionWorld(colliders, [ball, box], margin=0.01), friction, dt)


def stop_at(sim, step, signum):
    """Send ``signum`` to this process while ``step`` is being taken."""
    advance = sim.advance

    def advance_and_signal(state):
        if state.steps_done == step:
            os.kill(os.getpid(), signum)
        return advance(state)

    sim.advance = advance_and_signal


def assert_same_run(a, b):
    for name in COMPARED:
        assert np.array_equal(getattr(a, name), getattr(b, name)), name


@pytest.fixture(scope="module")
def uninterrupted(coal):
    return scene().run(0.4)


def test_sigterm_stops_after_the_step_and_resume_ends_as_the_uninterrupted_run(coal, uninterrupted, tmp_path):
    path = tmp_path / "run.h5"
    sim = scene()
    stop_at(sim, 237, signal.SIGTERM)
    with pytest.raises(RunInterrupted, match="SIGTERM") as info:
        sim.run(0.4, out=path, chunk_steps=50)
    assert info.value.path == path and info.value.trajectory.status == "interrupted"
    stopped = load_run(path)
    assert stopped.status == "interrupted" and len(stopped.t) == 239  # the step in progress was finished and kept
    assert np.isnan(stopped.time_solve).all()  # wall times are not kept: the file is reproducible
    resumed = scene().resume(path)
    assert resumed.status == "completed" and len(resumed.t) == 401
    assert_same_run(resumed, uninterrupted)
    assert_same_run(load_run(path), uninterrupted)
    assert load_run(path).status == "completed"


def test_a_killed_run_resumes_from_its_last_flush(coal, uninterrupted, tmp_path):
    """SIGKILL while step 137 is taken, blocks of 50 steps: the file holds 100 steps and says
    ``running``; resume recomputes the rest."""
    path = tmp_path / "killed.h5"
    code = (
        "import os, signal\n"
        "from tests.test_body_contact_file import scene, stop_at\n"
        "sim = scene()\n"
        "stop_at(sim, 137, signal.SIGKILL)\n"
        f"sim.run(0.4, out={str(path)!r}, chunk_steps=50)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == -signal.SIGKILL, done.stderr
    stopped = load_run(path)
    assert stopped.status == "running" and len(stopped.t) == 101
    assert_same_run(scene().resume(path), uninterrupted)


def test_same_run_writes_the_same_data(coal, tmp_path):
    a, b = tmp_path / "a.h5", tmp_path / "b.h5"
    scene().run(0.05, out=a, chunk_steps=7)
    scene().run(0.05, out=b, chunk_steps=20)
    assert_same_run(load_run(a), load_run(b))
    assert load_run(a).parameters == scene().parameters()


def test_a_failed_run_keeps_its_steps_on_disk_and_is_not_resumed(coal, tmp_path):
    path = tmp_path / "failed.h5"
    model = Model()
    box = model.add_body(RigidBody("box", 1.0, (1 / 150,) * 3, (0, 0, 0.2), (0.99, 0.1, 0.05, 0)))
    world = CollisionWorld([Collider(box, Box((0.2, 0.2, 0.2))), Collider(None, HalfSpace())], [box], margin=0.01)
    sim = BodyContactSimulation(model, world, "coulomb", 1e-3, method="nsgs", fallback_method=None,
                                solver_options={"max_sweeps": 1})  # fmt: skip
    with pytest.raises(SimulationError, match="nsgs failed") as info:
        sim.run(1.0, out=path, chunk_steps=1000)
    saved = load_run(path)
    assert saved.status.startswith("failed: ") and "nsgs failed" in saved.status
    assert np.array_equal(saved.q, info.value.trajectory.q) and len(saved.t) > 10
    with pytest.raises(ValueError, match="failed"):
        sim.resume(path)


def test_resume_refuses_another_simulation(coal, tmp_path):
    path = tmp_path / "run.h5"
    sim = scene()
    stop_at(sim, 20, signal.SIGTERM)
    with pytest.raises(RunInterrupted):
        sim.run(0.1, out=path)
    with pytest.raises(ValueError, match=r"other parameters: \['dt'\]"):
        scene(dt=2e-3).resume(path)
    with pytest.raises(ValueError, match=r"other parameters: \['friction'\]"):
        scene(friction="box").resume(path)
    with pytest.raises(ValueError, match="other bodies"):
        scene(mass=2.0).resume(path)
    assert len(scene().resume(path).t) == 101


def test_bad_paths_and_files_are_named_before_any_step(coal, tmp_path):
    sim = scene()
    calls = []
    advance = sim.advance
    sim.advance = lambda state: calls.append(1) or advance(state)
    for bad, words in ((tmp_path / "run.npz", "unknown trajectory format"),
                       (tmp_path / "missing" / "run.h5", "does not exist"),
                       (tmp_path, "unknown trajectory format")):  # fmt: skip
        with pytest.raises(TrajectoryFileError, match=words):
            sim.run(0.01, out=bad)
    assert not calls
    with pytest.raises(TrajectoryFileError, match="does not exist"):
        sim.resume(tmp_path / "none.h5")
    junk = tmp_path / "junk.h5"
    junk.write_bytes(b"not an HDF5 file at all" * 10)
    with pytest.raises(TrajectoryFileError, match="junk.h5"):
        load_run(junk)
    good = tmp_path / "good.h5"
    sim.run(0.01, out=good)
    cut = tmp_path / "cut.h5"
    cut.write_bytes(good.read_bytes()[:2000])
    with pytest.raises(TrajectoryFileError, match="cut.h5"):
        sim.resume(cut)
    with pytest.raises(ValueError, match="chunk_steps"):
        sim.run(0.01, out=good, chunk_steps=0)
