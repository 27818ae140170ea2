"""Batched runs (lcpdyn.batch): copies of a scene stepped together give their single runs'
results to 1e-9, each copy's steps measured and accepted as in a single run, a failing copy
recorded while the others go on, and copies the batch cannot take run alone."""

from __future__ import annotations

import numpy as np
import pytest

import scenes
from lcpdyn import batch as batch_module
from lcpdyn.batch import BatchRun, run_batch
from lcpdyn.kernels import readonly
from lcpdyn.stepper import SimulationError

FIELDS = (
    "position", "quaternion", "velocity", "angular_velocity", "contact_normal_force", "contact_friction_force",
    "contact_slip_velocity", "energy",
)  # fmt: skip
POINTS = [(0.1, 10.0), (0.25, 20.0), (0.4, 30.0), (0.5, 30.0), (0.3, 25.0)]  # (mu, theta in degrees)
T_END = 2.0  # s: each wheel slides, then rolls


def wheels(**options):
    return [
        scenes.build_scene("wheel", mu=mu, theta_deg=theta).simulation("regularized", compiled_loop=True, **options)
        for mu, theta in POINTS
    ]


def assert_close(batched, single, tolerance=1e-9):
    """Every recorded field within ``tolerance`` of its single run's, relative to the field's size."""
    np.testing.assert_array_equal(batched.t, single.t)
    for name in FIELDS:
        a, b = getattr(batched, name), getattr(single, name)
        scale = max(np.max(np.abs(b)), 1e-300)
        assert np.max(np.abs(a - b)) <= tolerance * scale, (name, np.max(np.abs(a - b)) / scale)
    np.testing.assert_array_equal(batched.contact_kinetic, single.contact_kinetic)
    np.testing.assert_array_equal(batched.health, single.health)


@pytest.fixture(scope="module")
def singles():
    runs = []
    for sim in wheels():
        trajectory = sim.run(T_END)
        runs.append((trajectory, dict(sim.loop_steps)))
    return runs


def test_batch_equals_single_runs(singles):
    """Five wheels (mu 0.1-0.5, theta 10-30 degrees) in one batch: each copy's motion, forces and
    energy are its single run's to 1e-9, every step SOLVED with the framework's residual within
    the copy's tolerance, all but the first step batched; a repeat is bit for bit."""
    sims = wheels()
    runs = run_batch(sims, T_END)
    assert [run.status for run in runs] == ["completed"] * len(POINTS)
    for run, sim, (single, loop_steps) in zip(runs, sims, singles, strict=True):
        assert isinstance(run, BatchRun) and run.completed and run.error is None
        assert run.loop_steps == loop_steps == {"compiled": 1999, "ordinary": 1}
        assert np.all(run.trajectory.solver_status == 0)
        assert np.all(run.trajectory.solver_residual <= sim.tolerance)
        assert_close(run.trajectory, single)
        assert sim.steps_done == 2000 and sim.t == pytest.approx(T_END)
    again = run_batch(wheels(), T_END)
    for a, b in zip(again, runs, strict=True):
        for name in FIELDS + ("solver_residual",):
            np.testing.assert_array_equal(getattr(a.trajectory, name), getattr(b.trajectory, name))


def test_a_refused_step_and_a_failing_copy(singles, monkeypatch):
    """Copy 1's 6th step is spoiled after the compiled call: the host's residual refuses it, the
    copy's ordinary step redoes it and the copy rejoins the batch (its run still its single
    run's). Copy 3 stops on an energy gain (energy_check='stop'): it is recorded as failed with
    the steps it did, the same failure as its single run, and the others complete."""
    real = batch_module.measure_batch
    spoiled = []

    def spoil(K, rhs, lo, hi, z, done, tolerance):
        if not spoiled:
            z = z.copy()
            z[4, 1, 0] += 1.0  # the chunk starts at step 2: its 5th row is step 6
            z = readonly(z)  # as the batch passes it (one compilation of the kernel)
            spoiled.append(True)
        return real(K, rhs, lo, hi, z, done, tolerance)

    monkeypatch.setattr(batch_module, "measure_batch", spoil)
    monkeypatch.setattr(batch_module, "THREADS", 1)  # one call for all five copies: copy 1 is column 1
    sims = wheels()
    sims[3] = scenes.build_scene("wheel", mu=POINTS[3][0], theta_deg=POINTS[3][1]).simulation(
        "regularized", compiled_loop=True, energy_check="stop", energy_tolerance=1e-6
    )
    runs = run_batch(sims, T_END)
    assert spoiled and runs[1].loop_steps == {"compiled": 1998, "ordinary": 2}
    assert_close(runs[1].trajectory, singles[1][0])
    alone = scenes.build_scene("wheel", mu=POINTS[3][0], theta_deg=POINTS[3][1]).simulation(
        "regularized", compiled_loop=True, energy_check="stop", energy_tolerance=1e-6
    )
    with pytest.raises(SimulationError) as single_failure:
        alone.run(T_END)
    failed = runs[3]
    assert failed.status.startswith("failed: ") and isinstance(failed.error, SimulationError)
    assert str(failed.error) == str(single_failure.value)
    assert len(failed.trajectory.t) == len(single_failure.value.trajectory.t) < 2000
    for i in (0, 2, 4):
        assert runs[i].completed
        assert_close(runs[i].trajectory, singles[i][0])


def test_copies_the_batch_cannot_take_run_alone():
    """A copy on the ordinary step (compiled_loop=False) and a copy whose compiled code is its
    own (a model that shares none: user functions) run by themselves, exactly as their single
    runs; a lone copy of another structure (the box model) is batched on its own."""
    wheel = scenes.build_scene("wheel", mu=POINTS[0][0], theta_deg=POINTS[0][1])
    ordinary = wheel.simulation("regularized", compiled_loop=False)
    private = wheel.simulation("regularized", compiled_loop=True)
    private._loop._key = None  # as for a model with user functions (Model._shareable() False)
    box = wheel.simulation("box", compiled_loop=True)
    sims = [ordinary, *wheels()[:2], private, box]
    runs = run_batch(sims, 0.3)
    assert all(run.completed for run in runs)
    assert runs[0].loop_steps == {"compiled": 0, "ordinary": 0}  # no loop: no count kept
    assert runs[1].loop_steps == runs[3].loop_steps == runs[4].loop_steps == {"compiled": 299, "ordinary": 1}
    for i, friction, loop in ((0, "regularized", False), (3, "regularized", True)):
        single = wheel.simulation(friction, compiled_loop=loop).run(0.3)
        for name in FIELDS:
            np.testing.assert_array_equal(getattr(runs[i].trajectory, name), getattr(single, name))
    assert_close(runs[1].trajectory, wheels()[0].run(0.3))
    assert_close(runs[4].trajectory, wheel.simulation("box", compiled_loop=True).run(0.3))


def test_a_copy_does_not_depend_on_its_company(monkeypatch):
    """A batch run again gives the same numbers bit for bit. Calls are padded to a multiple of
    LANES copies: a copy's numbers are the same in any order, in calls of any size and with any
    other copies beside it -- bit for bit on AVX2 machines. On AVX-512 the copy's place in its
    call can change the last bit of a step (lcpdyn.batch's docstring): the copies are held to the
    rounding that gives (assert_place_independent)."""

    def nine():
        return wheels() + [
            scenes.build_scene("wheel", mu=mu, theta_deg=theta).simulation("regularized", compiled_loop=True)
            for mu, theta in ((0.15, 12.0), (0.35, 18.0), (0.45, 22.0), (0.2, 28.0))
        ]

    whole = run_batch(nine(), 0.3)  # two calls of 8 copies (THREADS = 2)
    again = run_batch(nine(), 0.3)
    for a, b in zip(whole, again, strict=True):
        for name in FIELDS + ("solver_residual",):
            np.testing.assert_array_equal(getattr(a.trajectory, name), getattr(b.trajectory, name))
    reordered = run_batch(nine()[::-1], 0.3)[::-1]
    alone = run_batch(wheels()[2:3], 0.3)  # one call: the copy and 7 riders
    monkeypatch.setattr(batch_module, "THREADS", 1)
    one_call = run_batch(nine(), 0.3)  # one call of 16
    for other in (reordered, one_call):
        for a, b in zip(whole, other, strict=True):
            assert_place_independent(a.trajectory, b.trajectory)
    assert_place_independent(alone[0].trajectory, whole[2].trajectory)


def assert_place_independent(a, b):
    """States and energy to 1e-12 of each field's size; contact forces, which are impulses over h,
    to 1e-12 of the wheel's momentum scale m |v| / h (N): a last bit of v moves lam = impulse / h
    by an ulp of m v over h -- on an AMD EPYC core with AVX-512 (JAX 0.7 and 0.10) one call of 16
    against two of 8 moved positions by 1 ulp, velocities by 2.4e-14, and the forces by 3.1e-11 of
    their size (3e-10 N of 2e-9 N allowed here), the same rounding seen through 1/h."""
    np.testing.assert_array_equal(a.t, b.t)
    momentum = 1.0 * np.max(np.abs(b.velocity)) / (b.t[1] - b.t[0])  # the wheel's mass is 1 kg
    for name in FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        force = name in ("contact_normal_force", "contact_friction_force")
        bound = 1e-12 * (momentum if force else max(np.max(np.abs(y)), 1e-300))
        assert np.max(np.abs(x - y)) <= bound, (name, np.max(np.abs(x - y)), bound)
    np.testing.assert_array_equal(a.contact_kinetic, b.contact_kinetic)
    np.testing.assert_array_equal(a.health, b.health)


def test_bad_batches_are_refused_before_any_step(tmp_path):
    sims = wheels()[:2]
    with pytest.raises(TypeError, match=r"simulations\[1\] is a str"):
        run_batch([sims[0], "wheel"], 1.0)
    with pytest.raises(ValueError, match="appears twice"):
        run_batch([sims[0], sims[0]], 1.0)
    with pytest.raises(ValueError, match="t_end"):
        run_batch(sims, float("nan"))
    with pytest.raises(ValueError, match="record_every"):
        run_batch(sims, 1.0, record_every=0)
    with pytest.raises(ValueError, match="1 outs for 2 simulations"):
        run_batch(sims, 1.0, outs=[None])
    with pytest.raises(ValueError, match="no_such_dir"):
        run_batch(sims, 1.0, outs=[None, tmp_path / "no_such_dir" / "run.h5"])
    assert all(sim.steps_done == 0 for sim in sims)


def test_runs_stream_to_their_files_and_a_signal_stops_the_batch(tmp_path):
    """Each copy streams to its own HDF5 file (the file holds its run); SIGTERM mid-batch stops
    every copy after its chunk or step in progress: BatchInterrupted holds every copy's run so
    far, and the files say 'interrupted'."""
    import os
    import signal
    import threading

    from lcpdyn.batch import BatchInterrupted
    from lcpdyn.trajectory import load

    paths = [tmp_path / f"run{i}.h5" for i in range(3)]
    runs = run_batch(wheels()[:3], 0.2, outs=paths)
    for run, path in zip(runs, paths, strict=True):
        stored = load(path)
        assert stored.parameters["status"] == "completed"
        np.testing.assert_array_equal(stored.position, run.trajectory.position)
    # the ordinary step (compiled_loop=False): every step checks for the signal
    slow = [scenes.build_scene("wheel", mu=mu, theta_deg=th).simulation("regularized") for mu, th in POINTS[:2]]
    before = signal.getsignal(signal.SIGTERM)
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGTERM))
    timer.start()
    try:
        with pytest.raises(BatchInterrupted) as caught:
            run_batch(slow, 30.0, outs=[tmp_path / "slow0.h5", tmp_path / "slow1.h5"])
    finally:
        timer.cancel()
    assert caught.value.signum == signal.SIGTERM
    assert [run.status for run in caught.value.runs] == ["interrupted", "interrupted"]
    for i, run in enumerate(caught.value.runs):
        assert 0 < len(run.trajectory.t) < 30_000
        assert load(tmp_path / f"slow{i}.h5").parameters["status"] == "interrupted"
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_failing_batched_call_leaves_its_copies_to_their_ordinary_steps(monkeypatch):
    """The compiled call raises (XLA, memory): the copies of that group go on with their ordinary
    steps, each saying so in its warnings, and complete as their ordinary runs."""

    def broken(*args):
        raise MemoryError("no room for the chunk")

    monkeypatch.setattr(batch_module, "_call", broken)
    with pytest.warns(RuntimeWarning, match="batched call failed"):
        runs = run_batch(wheels()[:2], 0.05)
    for run, (mu, theta) in zip(runs, POINTS, strict=False):
        assert run.completed and run.loop_steps["compiled"] == 0
        assert any("MemoryError: no room for the chunk" in w for w in run.warnings)
        ordinary = scenes.build_scene("wheel", mu=mu, theta_deg=theta).simulation("regularized", compiled_loop=False)
        ordinary = ordinary.run(0.05)
        np.testing.assert_array_equal(run.trajectory.position, ordinary.position)
