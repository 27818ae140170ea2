"""A run's record of its detected contacts (lcpdyn.trajectory.DETECTED_FIELDS): a number that changes
from step to step, kept as a count per step and flat arrays over the records, in memory, in .npz and
in a streamed HDF5 file, through a kill and a resume."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from lcpdyn import Model, Simulation
from lcpdyn.collision import Box, Collider, HalfSpace, Sphere
from lcpdyn.detected_contacts import ContactProperties
from lcpdyn.trajectory import DETECTED_FIELDS, FIELDS, Trajectory, TrajectoryFileError, TrajectoryWriter, load
from scenes.touching import solid_box, solid_sphere

pytestmark = pytest.mark.filterwarnings("ignore::lcpdyn.stepper.EnergyWarning")

H, STEPS = 1e-3, 400


def _ball_on_box():
    """A 1 kg ball dropped 2 cm onto a 20 kg box that stands on the ground: no contact at first,
    then the ball's and the box's."""
    model = Model()
    box = model.add_body(solid_box("box", (0.4, 0.4, 0.2), 1250.0, (0.0, 0.0, 0.1)))
    ball = model.add_body(solid_sphere("ball", 0.05, 1.0 / (4 / 3 * np.pi * 0.05**3), (0.05, 0.0, 0.27)))
    model.add_collider(Collider(box, Box((0.4, 0.4, 0.2))))
    model.add_collider(Collider(ball, Sphere(0.05)))
    model.add_collider(Collider(None, HalfSpace(), name="ground"))
    model.set_collisions(margin=0.002, contact=ContactProperties(mu=0.5))
    return model


def _steps(model, steps):
    sim = Simulation(model, "regularized", H)
    return [sim.step().detected for _ in range(steps)]


def test_a_run_records_each_steps_detected_contacts_as_the_step_found_them(tmp_path):
    """The file's records of step s are that step's DetectedResult (bit for bit, stepped one by
    one in a second simulation), and the physics holds in them: at rest the ground carries box
    and ball, the box the ball."""
    model = _ball_on_box()
    path = tmp_path / "run.h5"
    run = Simulation(model, "regularized", H).run(STEPS * H, out=path)
    stepped = _steps(model, STEPS)
    saved = load(path)
    counts = [len(d) for d in stepped]
    assert counts[0] == 4 and max(counts) == 5  # the box's four corners; then the ball on its top face
    for trajectory in (run, saved):
        assert np.array_equal(trajectory.detected_count, counts)
        for s in (0, 150, STEPS - 1):
            records, d = trajectory.detected_at(s), stepped[s]
            assert np.array_equal(records["collider"], d.contacts.collider)
            assert np.array_equal(records["normal_force"], d.normal_force)
            assert np.array_equal(records["friction_force"], d.friction_force)
            assert np.array_equal(records["gap"], d.contacts.gap)
            assert np.array_equal(records["impact"], d.impact)
    last = saved.detected_at(-1)
    force = last["normal_force"][:, None] * last["normal"] + last["friction_force"]  # on the second collider's body
    on_ground = last["collider"][:, 1] == 2
    on_box = (last["collider"][:, 0] == 0) & (last["collider"][:, 1] == 1)
    weights = -model.gravity[2] * np.array([b.mass for b in model.bodies])
    assert -force[on_ground, 2].sum() == pytest.approx(weights.sum(), rel=1e-6)
    assert force[on_box, 2].sum() == pytest.approx(weights[1], rel=1e-6)
    assert saved.parameters["status"] == "completed"


def test_records_survive_npz_truncation_and_reject_inconsistent_counts(tmp_path):
    run = Simulation(_ball_on_box(), "regularized", H).run(200 * H)
    again = load(run.save(tmp_path / "run.npz"))
    for name in (*FIELDS, *DETECTED_FIELDS):
        assert np.array_equal(getattr(again, name), getattr(run, name)), name
    short = run.truncated(120)
    assert short.detected_count.shape == (120,) and short.detected_body.shape[0] == run.detected_count[:120].sum()
    assert np.array_equal(short.detected_at(119)["normal_force"], run.detected_at(119)["normal_force"])
    assert np.array_equal(load(short.save(tmp_path / "short.h5")).detected_gap, short.detected_gap)
    with pytest.raises(IndexError, match="outside the 200 recorded steps"):
        run.detected_at(200)
    broken = dict(run.arrays, detected_gap=run.detected_gap[:-1])
    with pytest.raises(ValueError, match="'detected_gap' has shape .*the counts add up to"):
        Trajectory(broken, run.parameters, run.body_names).save(tmp_path / "broken.npz")
    assert not (tmp_path / "broken.npz").exists()


def test_a_kill_in_an_append_and_a_resume_keep_the_counted_records_only(tmp_path):
    """Records appended beyond the counted steps (an append cut by a kill after its records grew)
    are not read, and a continued run cuts them away before it appends its own: the file is then
    the uninterrupted run's."""
    model = _ball_on_box()
    whole = Simulation(model, "regularized", H).run(STEPS * H)
    path = tmp_path / "run.h5"
    Simulation(model, "regularized", H).run(250 * H, out=path)
    with h5py.File(path, "r+") as file:  # what a kill leaves: records of steps that were never counted
        for name in ("detected_gap", "detected_body"):
            n = file[name].shape[0]
            file[name].resize(n + 7, axis=0)
            file[name][n:] = 99
    cut = load(path)
    assert cut.detected_body.shape[0] == cut.detected_count.sum() and not (cut.detected_gap == 99).any()
    sim = Simulation(model, "regularized", H)
    sim.restore(path)  # a model built in Python: its own simulation continues the file
    sim.run(STEPS * H, out=path)
    continued = load(path)
    for name in (*FIELDS, *DETECTED_FIELDS):
        assert np.array_equal(getattr(continued, name), getattr(whole, name)), name


def test_a_file_from_before_the_detected_contacts_loads_and_continues(tmp_path):
    """A file of format version 1 (no detected-contact datasets) reads as no detected contact at any
    step, and a writer continuing it adds the datasets."""
    run = Simulation(_ball_on_box(), "regularized", H).run(20 * H)
    path = tmp_path / "old.h5"
    with TrajectoryWriter(path, run.parameters, run.body_names, 2, 0) as writer:
        writer.append(
            {name: run.arrays[name][:10] for name in FIELDS if name not in ("initial_position", "initial_energy")}
        )
        writer.write_resume_state(np.zeros(14), np.zeros(12), 0.01, 10)
    with h5py.File(path, "r+") as file:
        for name in DETECTED_FIELDS:
            del file[name]
        file.attrs["format_version"] = 1
    old = load(path)
    assert np.array_equal(old.detected_count, np.zeros(10)) and old.detected_normal.shape == (0, 3)
    with TrajectoryWriter.open_or_append(path, run.parameters, run.body_names, 2, 0, steps_done=10) as writer:
        block = {name: run.arrays[name][10:] for name in FIELDS if name not in ("initial_position", "initial_energy")}
        a, b = run.detected_start[10], run.detected_start[20]
        records = {name: getattr(run, name)[a:b] for name in DETECTED_FIELDS if name != "detected_count"}
        writer.append(block, dict(records, detected_count=run.detected_count[10:]))
    new = load(path)
    assert np.array_equal(new.detected_count, np.concatenate([np.zeros(10), run.detected_count[10:]]))
    assert np.array_equal(new.detected_at(15)["normal_force"], run.detected_at(15)["normal_force"])


def test_the_writer_refuses_records_that_do_not_match_their_counts_before_writing(tmp_path):
    run = Simulation(_ball_on_box(), "regularized", H).run(10 * H)
    per_step = {name: run.arrays[name] for name in FIELDS if name not in ("initial_position", "initial_energy")}
    records = {name: run.arrays[name] for name in DETECTED_FIELDS}
    path = tmp_path / "run.h5"
    with TrajectoryWriter(path, run.parameters, run.body_names, 2, 0) as writer:
        with pytest.raises(ValueError, match="'detected_normal' has shape"):
            writer.append(per_step, dict(records, detected_normal=records["detected_normal"][:-1]))
        with pytest.raises(ValueError, match="detected_count.* not a count"):
            writer.append(per_step, dict(records, detected_count=-records["detected_count"] - 1))
        with pytest.raises(ValueError, match="unknown fields"):
            writer.append(per_step, dict(records, detected_colour=records["detected_gap"]))
        assert writer.steps == 0
        writer.append(per_step, records)
    assert np.array_equal(load(path).detected_normal, run.detected_normal)
    with pytest.raises(TrajectoryFileError, match="fewer than the"):
        with h5py.File(path, "r+") as file:
            file["detected_point"].resize(1, axis=0)
        load(path)


def test_a_file_of_the_former_body_contact_stepper_is_refused_saying_what_to_do(tmp_path):
    """BodyContactSimulation is gone (the one step does what it did): its files, format 'lcpdyn
    body-contact run', are refused by load and by a resume with a message that says so and how to
    go on, not read as a damaged trajectory."""
    from lcpdyn.trajectory import read_resume_state

    path = tmp_path / "pour.h5"
    with h5py.File(path, "w") as file:
        file.attrs["format"] = "lcpdyn body-contact run"
        file.attrs["steps"] = np.int64(2)
        file.create_dataset("t", data=np.zeros(3))
        file.create_group("resume")
    for read in (load, read_resume_state):
        with pytest.raises(TrajectoryFileError, match="BodyContactSimulation .* rerun the scene there"):
            read(path)
