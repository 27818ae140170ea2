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
    "contact_mu",
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


# --- rebuilding a run from its file (issue 10, item 6) --------------------------------------
REBUILT = [
    ("wheel", "regularized", 0.05, {}),
    ("sliding-block", "coulomb", 0.05, {"mu": 0.4}),
    ("half-car", "box", 0.03, {}),
    ("incline-block", "polygonal", 0.05, {}),
]


@pytest.mark.parametrize("name, friction, t_end, overrides", REBUILT)
@pytest.mark.parametrize("suffix", [".npz", ".h5"])
def test_a_saved_scene_run_is_rebuilt_from_its_file_and_rerun_bit_for_bit(
    tmp_path, name, friction, t_end, overrides, suffix
):
    """Scene.simulation records the scene; simulation_from_trajectory(load(path)) builds the same simulation from
    the file alone (scene parameters that differ from the defaults included), and running it
    reproduces every recorded array bit for bit, and the recorded parameters exactly."""
    import scenes
    from lcpdyn.rebuild import simulation_from_trajectory
    from lcpdyn.trajectory import FIELDS, load

    scene = scenes.SCENES[name].build(**overrides)
    path = tmp_path / f"run{suffix}"
    original = scene.simulation(friction, energy_check="off").run(t_end, out=path)
    saved = load(path)
    rebuilt = simulation_from_trajectory(saved)
    assert json_text(rebuilt.scene) == json_text({"name": name, **scene.parameters})  # NaN (an unset mu_static) too
    again = rebuilt.run(t_end)
    for field in FIELDS:
        assert np.array_equal(getattr(again, field), getattr(saved, field)), field
        assert np.array_equal(getattr(original, field), getattr(saved, field)), field
    recorded = {k: v for k, v in saved.parameters.items() if k not in ("status",)}
    assert json_text(recorded) == json_text({k: v for k, v in again.parameters.items() if k != "status"})


def json_text(value):
    import json

    return json.dumps(value, sort_keys=True)


def test_resume_continues_a_stopped_scene_run_into_its_file_bit_for_bit(tmp_path):
    """lcpdyn.rebuild.resume(path, t_end): rebuild from the file, restore its saved state, run on
    into the same file -- the file then equals the run that was never stopped."""
    import scenes
    from lcpdyn.rebuild import resume
    from lcpdyn.trajectory import FIELDS, load

    scene = scenes.SCENES["sliding-block"].build()
    whole = scene.simulation("regularized").run(0.2)
    path = tmp_path / "stopped.h5"
    scene.simulation("regularized").run(0.1, out=path)
    resume(path, t_end=0.2)
    continued = load(path)
    assert continued.parameters["status"] == "completed"
    for field in FIELDS:
        assert np.array_equal(getattr(continued, field), getattr(whole, field)), field


def test_a_model_built_in_python_cannot_be_rebuilt_and_says_why(tmp_path):
    from lcpdyn.rebuild import RebuildError, resume, simulation_from_trajectory
    from lcpdyn.trajectory import load

    sim, _ = _simulation()  # Simulation(model, ...): no scene record
    sim.run(0.01, out=tmp_path / "python.npz")
    with pytest.raises(RebuildError, match="no scene recorded"):
        simulation_from_trajectory(load(tmp_path / "python.npz"))
    with pytest.raises(RebuildError, match="no scene recorded"):
        resume(tmp_path / "python.npz", t_end=0.02)


@pytest.mark.parametrize("record", [{"name": "no-such-scene"}, {"mu": 0.3}, "wheel"])
def test_a_bad_scene_record_is_refused(record):
    from lcpdyn.rebuild import RebuildError, simulation_from_parameters

    if isinstance(record, dict) and record.get("name") == "no-such-scene":
        with pytest.raises(RebuildError, match="no-such-scene"):
            simulation_from_parameters({"scene": record, "dt": 1e-3, "friction": {"model": "box"}})
    else:
        scene = SlidingBlock.build()
        with pytest.raises(ValueError, match="scene"):
            Simulation(scene.model, "box", 1e-3, scene=record)


def test_contact_mu_records_the_coefficient_each_step_applied():
    """contact_mu holds mu per step and contact: a friction profile's mu(t) (the contact is
    marked friction_profile in the parameters), and mu_s on the steps a box contact sticks with
    mu_s > mu_k; the metrics read it rather than the nominal mu."""
    from lcpdyn.metrics import friction_coefficients

    scene = SlidingBlock.build()
    profile = lambda t: 0.2 + 0.5 * t  # noqa: E731 -- mu(t) at the start of the step
    scene.model.contacts[0].friction_profile = profile
    sim = Simulation(scene.model, scene.friction("regularized"), scene.dt)
    run = sim.run(0.05)
    start = np.concatenate([[0.0], run.t[:-1]])
    assert np.array_equal(run.contact_mu[:, 0], [profile(t) for t in start])
    assert np.all(run.contact_mu[:, 1:] == scene.model.contacts[1].mu)
    flags = [c["friction_profile"] for c in run.parameters["contacts"]]
    assert flags == [True, False, False, False]
    assert np.array_equal(friction_coefficients(run), run.contact_mu)


# --- an existing result is never replaced without being told (issue 46, item 1) ----------------
@pytest.mark.parametrize("suffix", [".npz", ".h5"])
def test_a_new_run_onto_an_existing_result_is_refused_before_any_step(tmp_path, suffix):
    """A run from the start onto a file that exists raises FileExistsError naming it, and the file
    is left byte for byte; overwrite=True replaces it. A stopped .h5 run is named with the step it
    stopped at and the way to continue it (it used to be overwritten without a word)."""
    import scenes

    scene = scenes.SCENES["sliding-block"].build()
    path = tmp_path / f"result{suffix}"
    sim = scene.simulation("regularized")
    calls = {"n": 0}
    original = sim.step

    def step(k=None):  # a run stopped by SIGINT after 20 steps: an interrupted, resumable file
        calls["n"] += 1
        if calls["n"] == 20:
            os.kill(os.getpid(), signal.SIGINT)
        return original(k)

    sim.step = step
    with pytest.raises(RunInterrupted):
        sim.run(0.1, out=path)
    before = path.read_bytes()
    fresh = scene.simulation("regularized")
    with pytest.raises(FileExistsError) as info:
        fresh.run(0.1, out=path)
    message = str(info.value)
    assert str(path) in message and "overwrite=True" in message
    if suffix == ".h5":
        assert "stopped at step 20" in message and "resume" in message
    assert path.read_bytes() == before and fresh.steps_done == 0
    with pytest.raises(TypeError, match="overwrite must be True or False"):
        fresh.run(0.1, out=path, overwrite="yes")
    done = fresh.run(0.1, out=path, overwrite=True)
    from lcpdyn.trajectory import load

    assert load(path).parameters["status"] == "completed" and load(path).t.size == done.t.size == 100


def test_a_file_from_before_the_static_bound_option_rebuilds_with_the_box():
    """A file whose recorded regularized model has no ``static_bound`` was run with the paper's
    box and is rebuilt with it whatever the default (issue 44 may make it the cone), while one
    that records its bound keeps it."""
    from lcpdyn.rebuild import simulation_from_parameters

    old = {"model": "regularized", "tangential_stiffness": 1e10, "velocity_threshold": 0.01}
    record = {"name": "sliding-block"}
    for friction, bound in ((old, "box"), ({**old, "static_bound": "cone"}, "cone")):
        sim = simulation_from_parameters({"scene": record, "dt": 1e-3, "friction": friction})
        assert sim.friction.static_bound == bound


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_the_final_save_is_not_lost(tmp_path, monkeypatch, capsys, signum):
    """SIGINT or SIGTERM while a finished run is being saved (issue 46, item 3): the run had
    completed and its file is saved whole (status completed), and the signal still ends it --
    RunInterrupted from the API, exit 128 + signal from the command line -- where it used to be
    dropped (exit 0) or, before the .npz was saved inside the run, lose the file."""
    from lcpdyn.cli import main
    from lcpdyn.run import recorder
    from lcpdyn.trajectory import load

    real = recorder.Recorder.finish

    def finish(self, steps_done, status):
        if status == "completed":
            os.kill(os.getpid(), signum)  # the handler only sets a flag: the save goes on
        return real(self, steps_done, status)

    monkeypatch.setattr(recorder.Recorder, "finish", finish)
    for suffix in (".npz", ".h5"):
        out = tmp_path / f"api{suffix}"
        sim, _ = _simulation()
        with pytest.raises(RunInterrupted) as caught:
            sim.run(0.05, out=out)
        assert caught.value.signal == signum and caught.value.trajectory.parameters["status"] == "completed"
        saved = load(out)
        assert saved.parameters["status"] == "completed" and saved.t.shape[0] == 50
    out = tmp_path / "cli.npz"
    code = main(["run", "puck", "--t-end", "0.05", "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert code == 128 + signum, err
    assert "arrived as the run ended: it had completed; 50 steps saved to" in err
    assert load(out).parameters["status"] == "completed"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_the_model_compiles_stops_the_run_at_its_first_step(tmp_path, monkeypatch, capsys, signum):
    """A signal 1.5-2.5 s into `lcpdyn run`, while JAX traced and compiled the model, raised inside
    JAX's garbage-collection callback, which swallowed it ("Exception ignored"): the run went on and
    exited 0; or inside XLA's compilation, after which the process crashed at exit (rc -11). The
    command line now records the signal (lcpdyn.run.signals.deferred_signals) and the run takes it
    over: it stops after its first step, saved and resumable, exit 128 + signal."""
    from lcpdyn.cli import main
    from lcpdyn.model import Model
    from lcpdyn.trajectory import load

    real = Model.compile

    def compile_interrupted(self):
        os.kill(os.getpid(), signum)  # recorded, not raised inside the tracing
        return real(self)

    monkeypatch.setattr(Model, "compile", compile_interrupted)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # as an interactive start has it
    try:
        code = main(["run", "puck", "--t-end", "0.05", "--out", str(tmp_path / "r.h5"), "--quiet"])
    finally:
        signal.signal(signal.SIGINT, previous)
    err = capsys.readouterr().err
    assert code == 128 + signum, err
    assert "1 steps saved to" in err and "--resume" in err
    saved = load(tmp_path / "r.h5")
    assert saved.parameters["status"] == "interrupted" and saved.t.shape[0] == 1
