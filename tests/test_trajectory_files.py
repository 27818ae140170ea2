"""Trajectory files (issue 10, items 3-4): :func:`lcpdyn.trajectory.load` refuses damaged or
inconsistent files with a :class:`TrajectoryFileError` naming the file and the problem,
:meth:`Trajectory.save` is atomic, and the HDF5 format streams a run (:class:`TrajectoryWriter`)
so that a killed run keeps its completed steps and a stopped one can be continued."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import h5py
import numpy as np
import pytest

import lcpdyn
import scenes
from lcpdyn.file_lock import OutputBusy, OutputLock
from lcpdyn.stepper import Simulation
from lcpdyn.trajectory import FIELDS, Health, Trajectory, TrajectoryFileError, TrajectoryWriter, load, read_resume_state

ROOT = Path(__file__).resolve().parent.parent
STEPS = 50  # SlidingBlock, t_end = 0.05 s, dt = 1e-3 s
PER_STEP = [name for name in FIELDS if name not in ("initial_position", "initial_energy")]


@pytest.fixture(scope="module")
def run() -> Trajectory:
    """A short real run: the sliding block (one body, four corner contacts), regularized friction."""
    scene = scenes.blocks.SlidingBlock.build(t_end=0.05)
    return Simulation(scene.model, scene.friction("regularized"), scene.dt).run(scene.t_end)


@pytest.fixture(scope="module")
def files(run, tmp_path_factory):
    """The run saved as .npz and as .h5 (read-only: tests copy what they damage)."""
    directory = tmp_path_factory.mktemp("saved")
    return {"npz": run.save(directory / "run.npz"), "h5": run.save(directory / "run.h5")}


def npz_members(path) -> dict:
    with np.load(path, allow_pickle=False) as data:
        return {name: data[name] for name in data.files}


def assert_refused(path, *words) -> TrajectoryFileError:
    """load(path) raises TrajectoryFileError (a ValueError) naming the file and every word."""
    with pytest.raises(TrajectoryFileError) as info:
        load(path)
    error = info.value
    assert isinstance(error, ValueError)
    message = str(error)
    assert str(path) in message, message
    for word in words:
        assert word in message, (word, message)
    return error


def assert_same_arrays(a: dict, b: dict):
    assert set(a) == set(b)
    for name in a:
        x, y = np.asarray(a[name]), np.asarray(b[name])
        assert x.dtype == y.dtype and x.shape == y.shape, (name, x.dtype, y.dtype, x.shape, y.shape)
        assert x.tobytes() == y.tobytes(), name


def block(run, start, stop) -> dict:
    return {name: run.arrays[name][start:stop] for name in PER_STEP}


def new_writer(path, run, **options) -> TrajectoryWriter:
    return TrajectoryWriter(
        path, run.parameters, run.body_names, run.position.shape[1], run.contact_normal_force.shape[1], **options
    )


# --- round trips -------------------------------------------------------------------------------
def test_save_returns_the_absolute_path_it_wrote(run, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("relative.npz", "relative.h5", "upper.HDF5"):
        written = run.save(name)
        assert isinstance(written, Path) and written.is_absolute()
        assert written == tmp_path / name and written.is_file()
    assert sorted(os.listdir(tmp_path)) == ["relative.h5", "relative.npz", "upper.HDF5"]  # no temporaries left


def test_hdf5_round_trip_equals_npz_round_trip_bit_for_bit(run, files):
    from_npz, from_h5 = load(files["npz"]), load(files["h5"])
    assert_same_arrays(from_npz.arrays, from_h5.arrays)
    assert_same_arrays(from_npz.arrays, run.arrays)  # and both equal the run itself, dtypes included
    assert from_h5.arrays["solver_iterations"].dtype == np.int32 and from_h5.arrays["health"].dtype == np.int8
    assert from_npz.body_names == from_h5.body_names == ["block"]
    assert from_h5.parameters["status"] == "completed"
    assert from_h5.parameters["lcpdyn_version"] == lcpdyn.__version__
    assert from_npz.parameters == from_h5.parameters
    assert {k: v for k, v in from_h5.parameters.items() if k not in ("status", "lcpdyn_version")} == {
        k: v for k, v in run.parameters.items() if k not in ("status", "lcpdyn_version")
    }


def test_an_hdf5_file_is_read_by_content_whatever_its_name(files, tmp_path):
    disguised = tmp_path / "really-hdf5.npz"
    disguised.write_bytes(files["h5"].read_bytes())
    assert_same_arrays(load(disguised).arrays, load(files["h5"]).arrays)


def test_save_h5_keeps_a_partial_runs_status(run, tmp_path):
    partial = run.truncated(20)
    partial.parameters["status"] = "failed: the solver gave up"
    again = load(partial.save(tmp_path / "partial.h5"))
    assert again.parameters["status"] == "failed: the solver gave up"
    assert again.t.shape == (20,)
    assert_same_arrays(again.arrays, partial.arrays)


def test_old_npz_without_health_still_loads(files, tmp_path):
    members = npz_members(files["npz"])
    del members["health"]
    members["solver_fallback"] = members["solver_fallback"].copy()
    members["solver_fallback"][[2, 7]] = 1
    old = tmp_path / "old.npz"
    np.savez_compressed(old, **members)
    trajectory = load(old)
    expected = np.zeros(STEPS, np.int8)
    expected[[2, 7]] = int(Health.FALLBACK)
    np.testing.assert_array_equal(trajectory.health, expected)
    assert trajectory.health.dtype == np.int8


# --- load refuses what is not a sound trajectory file ---------------------------------------------
def test_missing_path(tmp_path):
    assert_refused(tmp_path / "nowhere.npz", "no such file")


def test_directory(tmp_path):
    directory = tmp_path / "results.npz"
    directory.mkdir()
    assert_refused(directory, "is a directory")


def test_text_file_named_npz(tmp_path):
    path = tmp_path / "x.npz"
    path.write_text("time,position\n0.0,1.0\n")
    assert_refused(path, "not a trajectory file", "neither an .npz (zip) archive nor HDF5")


def test_empty_file(tmp_path):
    path = tmp_path / "empty.h5"
    path.write_bytes(b"")
    assert_refused(path, "empty")


def test_single_npy_array_named_npz(tmp_path):
    path = tmp_path / "array.npz"
    with open(path, "wb") as file:
        np.save(file, np.arange(3.0))
    assert_refused(path, ".npy")


@pytest.mark.parametrize("kind", ["npz", "h5"])
@pytest.mark.parametrize("fraction", [0.0001, 0.001, 0.01, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99, 0.9999])
def test_truncated_file(files, tmp_path, kind, fraction):
    data = files[kind].read_bytes()
    size = max(1, int(len(data) * fraction))
    assert size < len(data)
    path = tmp_path / f"cut.{kind}"
    path.write_bytes(data[:size])
    error = assert_refused(path)
    assert "truncated" in error.problem, error.problem


@pytest.mark.parametrize("member", ["position", "contact_friction_force", "energy", "parameters", "t"])
@pytest.mark.parametrize("where", [0.25, 0.5, 0.75])
def test_flipped_bytes_in_a_compressed_npz_member(files, tmp_path, member, where):
    data = bytearray(files["npz"].read_bytes())
    with zipfile.ZipFile(files["npz"]) as archive:
        info = archive.getinfo(f"{member}.npy")
    assert info.compress_type == zipfile.ZIP_DEFLATED
    # the member's compressed bytes follow its local header (30 bytes, name, extra field)
    name_length, extra_length = np.frombuffer(data[info.header_offset + 26 : info.header_offset + 30], "<u2")
    start = info.header_offset + 30 + int(name_length) + int(extra_length)
    offset = start + int(where * info.compress_size)
    data[offset : offset + 4] = bytes(b ^ 0xA5 for b in data[offset : offset + 4])
    path = tmp_path / "flipped.npz"
    path.write_bytes(bytes(data))
    assert_refused(path, f"member {member!r}", "corrupted")


@pytest.fixture(scope="module")
def streamed(run, tmp_path_factory) -> Path:
    """The run written by a TrajectoryWriter without compression (a damaged chunk inflates fine:
    only its Fletcher-32 checksum tells)."""
    path = tmp_path_factory.mktemp("streamed") / "run.h5"
    with new_writer(path, run) as writer:
        writer.write_static(run.initial_position, run.initial_energy)
        writer.append(block(run, 0, STEPS))
    return path


@pytest.mark.parametrize("compressed", [True, False], ids=["saved-gzip", "streamed-plain"])
@pytest.mark.parametrize("dataset", ["position", "contact_friction_force", "energy", "t"])
def test_flipped_bytes_in_an_hdf5_chunk_are_caught(files, streamed, tmp_path, dataset, compressed):
    source = files["h5"] if compressed else streamed
    with h5py.File(source, "r") as file:
        assert (file[dataset].compression == "gzip") == compressed
        chunk = file[dataset].id.get_chunk_info(0)
    data = bytearray(source.read_bytes())
    offset = chunk.byte_offset + chunk.size // 4
    data[offset] ^= 0xFF
    path = tmp_path / "flipped.h5"
    path.write_bytes(bytes(data))
    assert_refused(path, "corrupted")


@pytest.mark.parametrize("kind", ["npz", "h5"])
def test_no_raw_exception_escapes_from_damaged_files(files, tmp_path, kind):
    """Every truncation (every 1/97 of the file) and 200 random byte flips: load succeeds (a flip
    in bytes that do not matter) or raises TrajectoryFileError -- never zipfile, zlib, json,
    OSError or KeyError."""
    data = files[kind].read_bytes()
    path = tmp_path / f"damaged.{kind}"
    cases = [data[:size] for size in range(0, len(data), max(1, len(data) // 97))]
    rng = np.random.default_rng(10)
    for offset in rng.integers(0, len(data), 200):
        flipped = bytearray(data)
        flipped[offset] ^= int(rng.integers(1, 256))
        cases.append(bytes(flipped))
    refused = 0
    for case in cases:
        path.write_bytes(case)
        try:
            trajectory = load(path)
        except TrajectoryFileError as error:
            assert str(path) in str(error)
            refused += 1
        else:
            assert trajectory.t.shape == (STEPS,)
    assert refused >= 98  # every truncation at least


@pytest.mark.parametrize("damage", [b"(50, 4,'e, 'shap\x01\x86(}", b"(((", b"{{{{", b"\x00\x00"])
def test_damaged_npy_header_is_refused(files, tmp_path, damage):
    """A member whose .npy header dict is damaged inside an intact zip (CRCs right): NumPy's
    header parser raises SyntaxError or, under NumPy 1.x, tokenize.TokenError -- load turns
    each into a TrajectoryFileError naming the file."""
    import io

    buffer = io.BytesIO()
    np.save(buffer, npz_members(files["npz"])["contact_friction_force"])
    raw = buffer.getvalue()
    start = raw.index(b"(")  # the shape tuple inside the header dict
    broken = raw[:start] + damage + raw[start + len(damage) :]
    path = tmp_path / "header.npz"
    with zipfile.ZipFile(files["npz"]) as source, zipfile.ZipFile(path, "w") as target:
        for info in source.infolist():
            payload = broken if info.filename == "contact_friction_force.npy" else source.read(info)
            target.writestr(info.filename, payload)
    with pytest.raises(TrajectoryFileError, match="header.npz"):
        load(path)


def damaged_npz(files, tmp_path, **changes) -> Path:
    members = npz_members(files["npz"])
    for name, value in changes.items():
        if value is None:
            del members[name]
        else:
            members[name] = value
    path = tmp_path / "damaged.npz"
    np.savez_compressed(path, **members)
    return path


def test_npz_without_parameters(files, tmp_path):
    assert_refused(damaged_npz(files, tmp_path, parameters=None), "no 'parameters'")


def test_npz_parameters_not_json(files, tmp_path):
    assert_refused(damaged_npz(files, tmp_path, parameters=np.array("{'dt': 0.001")), "'parameters'", "not valid JSON")


def test_npz_parameters_not_a_json_object(files, tmp_path):
    assert_refused(damaged_npz(files, tmp_path, parameters=np.array("[1, 2, 3]")), "not a JSON object")


def test_npz_parameters_not_text(files, tmp_path):
    assert_refused(damaged_npz(files, tmp_path, parameters=np.arange(3.0)), "'parameters'", "not text")


def test_npz_without_t(files, tmp_path):
    assert_refused(damaged_npz(files, tmp_path, t=None), "no 't'")


@pytest.mark.parametrize("field", ["position", "contact_normal_force", "energy", "health", "solver_iterations"])
def test_npz_with_a_field_of_another_length(files, tmp_path, field):
    short = npz_members(files["npz"])[field][:-1]
    assert_refused(
        damaged_npz(files, tmp_path, **{field: short}), repr(field), f"{STEPS - 1} steps", f"'t' has {STEPS}"
    )


def test_npz_with_a_field_of_the_wrong_shape(files, tmp_path):
    quaternion = npz_members(files["npz"])["quaternion"][..., :3]
    assert_refused(damaged_npz(files, tmp_path, quaternion=quaternion), "'quaternion'", "expected (steps, bodies, 4)")


def test_npz_with_disagreeing_contact_counts(files, tmp_path):
    gap = npz_members(files["npz"])["contact_gap"][:, :3]
    assert_refused(
        damaged_npz(files, tmp_path, contact_gap=gap), "'contact_gap' has 3 contacts", "'contact_normal_force' has 4"
    )


@pytest.mark.parametrize("field", ["energy", "t", "a_note"])
def test_npz_with_a_string_array(files, tmp_path, field):
    strings = np.array([f"{i}" for i in range(STEPS)])
    assert strings.dtype.kind == "U"
    assert_refused(damaged_npz(files, tmp_path, **{field: strings}), repr(field), "not a real numeric type")


def test_npz_with_a_body_name_too_many(files, tmp_path):
    assert_refused(
        damaged_npz(files, tmp_path, body_names=np.array(["block", "ghost"])), "2 body_names", "1 bodies in 'position'"
    )


def test_h5_that_is_not_a_trajectory(tmp_path):
    path = tmp_path / "other.h5"
    with h5py.File(path, "w") as file:
        file["t"] = np.arange(3.0)
    assert_refused(path, "not an lcpdyn trajectory")


def damaged_h5(files, tmp_path, change) -> Path:
    path = tmp_path / "damaged.h5"
    path.write_bytes(files["h5"].read_bytes())
    with h5py.File(path, "r+") as file:
        change(file)
    return path


def test_h5_with_bad_parameters(files, tmp_path):
    def change(file):
        file.attrs["parameters"] = "{not json"

    assert_refused(damaged_h5(files, tmp_path, change), "'parameters'", "not valid JSON")


def test_h5_without_parameters(files, tmp_path):
    def change(file):
        del file.attrs["parameters"]

    assert_refused(damaged_h5(files, tmp_path, change), "no 'parameters'")


def test_h5_with_a_dataset_shorter_than_its_steps(files, tmp_path):
    def change(file):
        file["energy"].resize(STEPS - 5, axis=0)

    assert_refused(damaged_h5(files, tmp_path, change), "'energy' holds 45 steps", f"'steps' attribute ({STEPS})")


def test_h5_with_a_string_dataset(files, tmp_path):
    def change(file):
        file["note"] = np.array([b"a", b"b"])

    assert_refused(damaged_h5(files, tmp_path, change), "'note'", "not a real numeric type")


def test_h5_with_a_body_name_too_many(files, tmp_path):
    def change(file):
        file.attrs["body_names"] = np.array(["block", "ghost"], dtype=h5py.string_dtype())

    assert_refused(damaged_h5(files, tmp_path, change), "2 body_names")


# --- atomic save ---------------------------------------------------------------------------------
def snapshot(directory) -> dict:
    return {name: (directory / name).read_bytes() for name in sorted(os.listdir(directory))}


def test_a_failing_npz_save_leaves_the_old_file_and_no_temporary(run, tmp_path, monkeypatch):
    path = tmp_path / "run.npz"
    run.truncated(10).save(path)
    before = snapshot(tmp_path)

    def half_written(file, **members):
        file.write(b"PK\x03\x04 half an archive")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "savez_compressed", half_written)
    with pytest.raises(OSError, match="No space left"):
        run.save(path)
    assert snapshot(tmp_path) == before  # same names (no temporary), same bytes
    monkeypatch.undo()
    assert load(path).t.shape == (10,)


@pytest.mark.parametrize("failing", ["a dataset write", "the final status"])
def test_a_failing_h5_save_leaves_the_old_file_and_no_temporary(run, tmp_path, monkeypatch, failing):
    path = tmp_path / "run.h5"
    run.truncated(10).save(path)
    before = snapshot(tmp_path)
    calls = []
    if failing == "a dataset write":
        original = h5py.Dataset.__setitem__

        def fails_midway(self, key, value):
            calls.append(self.name)
            if len(calls) == 6:
                raise OSError(5, "Input/output error")
            return original(self, key, value)

        monkeypatch.setattr(h5py.Dataset, "__setitem__", fails_midway)
    else:  # every array written, the status is the last thing before the rename

        def fails_at_the_end(self, status):
            calls.append(status)
            raise OSError(5, "Input/output error")

        monkeypatch.setattr(TrajectoryWriter, "set_status", fails_at_the_end)
    with pytest.raises(OSError, match="Input/output error"):
        run.save(path)
    assert len(calls) == (6 if failing == "a dataset write" else 1)  # it did fail where intended
    assert snapshot(tmp_path) == before
    monkeypatch.undo()
    assert load(path).t.shape == (10,)


@pytest.mark.parametrize("name", ["run.txt", "run", "run.npy", "run.npz.bak"])
def test_save_refuses_a_name_without_a_trajectory_suffix(run, tmp_path, name):
    with pytest.raises(TrajectoryFileError) as info:
        run.save(tmp_path / name)
    assert str(tmp_path / name) in str(info.value) and ".npz, .h5, .hdf5" in str(info.value)
    assert os.listdir(tmp_path) == []  # nothing written, nothing appended to the name


def test_save_refuses_an_inconsistent_trajectory_before_writing(run, tmp_path):
    broken = run.truncated(STEPS)
    broken.arrays["energy"] = broken.arrays["energy"][:-1]
    for name in ("broken.npz", "broken.h5"):
        with pytest.raises(ValueError, match="'energy' has 49 steps"):
            broken.save(tmp_path / name)
    assert os.listdir(tmp_path) == []


# --- the streaming writer ----------------------------------------------------------------------
def test_writer_streams_blocks_and_closes_completed(run, tmp_path):
    path = tmp_path / "stream.h5"
    with new_writer(path, run, chunk_steps=16) as writer:
        assert writer.status == "running" and writer.steps == 0
        writer.write_static(run.initial_position, run.initial_energy)
        for start in range(0, STEPS, 15):
            writer.append(block(run, start, min(start + 15, STEPS)))
        assert writer.steps == STEPS
    assert writer.closed and writer.status == "completed"
    again = load(path)
    assert again.parameters["status"] == "completed"
    assert_same_arrays(again.arrays, run.arrays)
    with h5py.File(path, "r") as file:
        assert file["position"].chunks == (16, 1, 3)
        assert json.loads(file.attrs["parameters"]) == json.loads(json.dumps(run.parameters))
        assert int(file.attrs["steps"]) == STEPS and file.attrs["lcpdyn_version"] == lcpdyn.__version__
        assert list(file.attrs["body_names"]) == ["block"]


def test_writer_replaces_an_existing_file_only_at_its_first_step(run, tmp_path):
    path = tmp_path / "run.h5"
    run.truncated(7).save(path)
    old = path.read_bytes()
    writer = new_writer(path, run)
    writer.write_static(run.initial_position, run.initial_energy)
    (partial,) = tmp_path.glob("run.h5.*.partial")  # a name of the writer's own
    assert partial.is_file() and path.read_bytes() == old  # nothing to show yet: the old run stays
    writer.append(block(run, 0, 5))
    assert not partial.exists()
    during = load(path)  # the new file, readable while the writer has it open
    assert during.t.shape == (5,) and during.parameters["status"] == "running"
    writer.close("interrupted")
    assert load(path).parameters["status"] == "interrupted"


def test_a_writer_failing_before_its_first_step_leaves_the_old_file(run, tmp_path):
    path = tmp_path / "run.h5"
    run.truncated(7).save(path)
    old = path.read_bytes()
    with pytest.raises(RuntimeError, match="boom"):
        with new_writer(path, run):
            raise RuntimeError("boom")
    assert path.read_bytes() == old
    (partial,) = tmp_path.glob("run.h5.*.partial")
    failed = load(partial)
    assert failed.parameters["status"] == "failed: RuntimeError: boom" and failed.t.shape == (0,)


@pytest.mark.parametrize(
    "exception, status",
    [(RuntimeError("solver gave up"), "failed: RuntimeError: solver gave up"), (KeyboardInterrupt(), "interrupted")],
)
def test_writer_context_records_how_the_run_ended(run, tmp_path, exception, status):
    path = tmp_path / "run.h5"
    with pytest.raises(type(exception)):
        with new_writer(path, run) as writer:
            writer.append(block(run, 0, 3))
            raise exception
    assert load(path).parameters["status"] == status
    with pytest.raises(RuntimeError):  # a status set explicitly is kept
        with new_writer(path, run) as writer:
            writer.append(block(run, 0, 3))
            writer.set_status("interrupted")
            raise RuntimeError("after the interruption")
    assert load(path).parameters["status"] == "interrupted"


def test_writer_checks_its_input(run, tmp_path):
    with pytest.raises(TrajectoryFileError, match="must end in .h5, .hdf5"):
        new_writer(tmp_path / "run.npz", run)
    with pytest.raises(ValueError, match="body_names"):
        TrajectoryWriter(tmp_path / "run.h5", {}, ["a", "b"], 1, 4)
    writer = new_writer(tmp_path / "run.h5", run)
    bad = block(run, 0, 5)
    del bad["health"]
    with pytest.raises(ValueError, match=r"missing \['health'\]"):
        writer.append(bad)
    bad = block(run, 0, 5)
    bad["energy"] = bad["energy"][:4]
    with pytest.raises(ValueError, match="'energy' has 4 steps but 't' has 5"):
        writer.append(bad)
    bad = block(run, 0, 5)
    bad["health"] = np.full(5, 0.5)
    with pytest.raises(ValueError, match="'health'"):
        writer.append(bad)
    bad = block(run, 0, 5)
    bad["position"] = bad["position"][:, :, :2]
    with pytest.raises(ValueError, match=r"'position' has shape \(5, 1, 2\); expected \(k, 1, 3\)"):
        writer.append(bad)
    with pytest.raises(ValueError, match="status must be"):
        writer.set_status("done")
    with pytest.raises(ValueError, match="status must be"):
        writer.set_status("failed: ")
    assert writer.steps == 0  # nothing was appended by the refused blocks
    ok = block(run, 0, 5)
    ok["health"] = ok["health"].astype(np.int64)  # fits int8: stored as int8
    assert writer.append(ok) == 5
    writer.close("completed")
    assert load(tmp_path / "run.h5").health.dtype == np.int8
    with pytest.raises(ValueError, match="closed"):
        writer.append(block(run, 5, 6))


KILLED_WRITER = textwrap.dedent("""
    import os, sys
    import numpy as np
    from lcpdyn.trajectory import FIELDS, TrajectoryWriter, load

    source, path = sys.argv[1], sys.argv[2]
    run = load(source)
    fields = [name for name in FIELDS if name not in ("initial_position", "initial_energy")]
    writer = TrajectoryWriter(path, run.parameters, run.body_names, 1, 4, chunk_steps=8)
    writer.write_static(run.initial_position, run.initial_energy)
    for start, stop in ((0, 12), (12, 30)):
        writer.append({name: run.arrays[name][start:stop] for name in fields})
    # killed in the middle of the third append: some datasets grown and written, 'steps' not yet
    file = writer._file
    for name in fields[:5]:
        file[name].resize(40, axis=0)
        file[name][30:] = run.arrays[name][30:40]
    file.flush()
    os._exit(0)
""")


def test_a_killed_writer_leaves_its_completed_steps(files, run, tmp_path):
    path = tmp_path / "killed.h5"
    done = subprocess.run(
        [sys.executable, "-c", KILLED_WRITER, str(files["npz"]), str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    # the lock's small file stays behind a killed writer, its lock gone with the process
    assert sorted(os.listdir(tmp_path)) == [".killed.h5.lock", "killed.h5"]
    OutputLock(path).release()  # free to take: the next writer takes it over
    killed = load(path)
    assert killed.parameters["status"] == "running"
    assert killed.t.shape == (30,)  # the two completed appends, not the cut third one
    assert_same_arrays(killed.arrays, run.truncated(30).arrays)
    with h5py.File(path, "r") as file:
        assert file["t"].shape[0] == 40  # the cut append is in the file, beyond 'steps'


LIVE_WRITER = textwrap.dedent("""
    import sys
    from lcpdyn.trajectory import FIELDS, TrajectoryWriter, load

    source, path = sys.argv[1], sys.argv[2]
    run = load(source)
    fields = [name for name in FIELDS if name not in ("initial_position", "initial_energy")]
    with TrajectoryWriter(path, run.parameters, run.body_names, 1, 4) as writer:
        writer.write_static(run.initial_position, run.initial_energy)
        for start, stop in ((0, 12), (12, 30)):
            writer.append({name: run.arrays[name][start:stop] for name in fields})
        print("appended", flush=True)
        sys.stdin.read()  # until the test closes our stdin
""")


def test_a_file_being_written_by_another_process_loads(files, run, tmp_path):
    """HDF5 locks a file open for writing; load reads it anyway (as of the writer's last flush)."""
    path = tmp_path / "live.h5"
    writer = subprocess.Popen(
        [sys.executable, "-c", LIVE_WRITER, str(files["npz"]), str(path)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert writer.stdout.readline() == "appended\n", writer.stderr.read()
        with pytest.raises(BlockingIOError):  # the writer's lock is real
            h5py.File(path, "r")
        live = load(path)
        assert live.parameters["status"] == "running"
        assert_same_arrays(live.arrays, run.truncated(30).arrays)
    finally:
        writer.communicate("", timeout=120)
    assert writer.returncode == 0
    assert load(path).parameters["status"] == "completed"


# --- resume state ------------------------------------------------------------------------------
def test_resume_state_round_trip(run, tmp_path):
    path = tmp_path / "run.h5"
    q, v = np.linspace(0.0, 1.0, 7), np.linspace(-1.0, 1.0, 6)
    warm = {
        "active_set": np.array([1, 0, 2, 1], np.int8),
        "impulse_guess": None,
        "normal_force": np.array([2.5, 2.5, 2.5, 2.5]),
    }
    extra = {"pending_health": np.int8(3), "_work": 1.25, "_lowest": np.float64(-np.inf)}
    with new_writer(path, run) as writer:
        writer.append(block(run, 0, 20))
        writer.write_resume_state(q * 2, v * 2, 0.01, 10, {"active_set": np.zeros(4, np.int8)}, {})
        writer.append(block(run, 20, 30))
        writer.write_resume_state(q, v, 0.03, 30, warm, extra)  # replaces the first
    state = read_resume_state(path)
    assert state["q"].tobytes() == q.tobytes() and state["v"].tobytes() == v.tobytes()
    assert state["t"] == 0.03 and state["steps_done"] == 30 and state["trajectory_steps"] == 30
    assert state["status"] == "completed"
    assert set(state["warm_start"]) == set(warm) and state["warm_start"]["impulse_guess"] is None
    for name in ("active_set", "normal_force"):
        assert state["warm_start"][name].dtype == warm[name].dtype
        np.testing.assert_array_equal(state["warm_start"][name], warm[name])
    assert set(state["extra"]) == set(extra)
    assert state["extra"]["pending_health"] == 3 and state["extra"]["pending_health"].dtype == np.int8
    assert state["extra"]["_work"] == 1.25 and state["extra"]["_lowest"] == -np.inf
    assert load(path).t.shape == (30,)  # the trajectory is untouched by the resume group


def test_read_resume_state_refuses_files_without_one(files, tmp_path):
    with pytest.raises(TrajectoryFileError, match="only HDF5"):
        read_resume_state(files["npz"])
    with pytest.raises(TrajectoryFileError, match="no resume state"):
        read_resume_state(files["h5"])
    with pytest.raises(TrajectoryFileError, match="no such file"):
        read_resume_state(tmp_path / "nowhere.h5")


def test_open_or_append_continues_a_stopped_file(run, tmp_path):
    path = tmp_path / "run.h5"
    writer = new_writer(path, run)
    writer.write_static(run.initial_position, run.initial_energy)
    writer.append(block(run, 0, 20))
    writer.write_resume_state(np.zeros(7), np.zeros(6), np.array(0.02), np.array(20))  # 0-d, as in a snapshot
    writer.append(block(run, 20, 25))  # recorded after the last resume state: recomputed by the continuation
    writer.close("interrupted")
    with pytest.raises(TrajectoryFileError, match="at step 20, not at the simulation's step 21"):
        TrajectoryWriter.open_or_append(path, run.parameters, run.body_names, 1, 4, steps_done=21)
    with pytest.raises(TrajectoryFileError, match="2 bodies"):
        TrajectoryWriter.open_or_append(path, run.parameters, ["a", "b"], 2, 4, steps_done=20)
    with TrajectoryWriter.open_or_append(path, run.parameters, run.body_names, 1, 4, steps_done=20) as writer:
        assert writer.steps == 20 and writer.status == "running"
        writer.write_static(run.initial_position + 1.0, 99.0)  # the continued run's start: not t = 0, kept out
        writer.append(block(run, 20, STEPS))
    again = load(path)
    assert again.parameters["status"] == "completed"
    assert_same_arrays(again.arrays, run.arrays)


# --- one writer per file -----------------------------------------------------------------------
def test_a_second_writer_of_the_same_file_is_refused_at_once_naming_the_first(run, tmp_path):
    """The output's lock is taken before anything is created: the second writer (a new run or
    one continuing the file) fails naming the first one's process, the first one's file is
    untouched and complete, and once it is closed the file can be written again."""
    path = tmp_path / "run.h5"
    first = new_writer(path, run)
    first.write_static(run.initial_position, run.initial_energy)
    first.append(block(run, 0, 5))
    with pytest.raises(OutputBusy, match=rf"another run is writing this file \(process {os.getpid()} on "):
        new_writer(path, run)
    with pytest.raises(OutputBusy, match="another run is writing this file"):
        TrajectoryWriter.open_or_append(
            path, run.parameters, run.body_names, 1, run.contact_normal_force.shape[1], steps_done=5
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == [".run.h5.lock", "run.h5"]
    first.append(block(run, 5, STEPS))
    first.close("completed")
    assert_same_arrays(
        {name: load(path).arrays[name] for name in PER_STEP}, {name: run.arrays[name] for name in PER_STEP}
    )
    assert not (tmp_path / ".run.h5.lock").exists()  # released and removed with the close
    with new_writer(path, run) as again:
        again.write_static(run.initial_position, run.initial_energy)
    assert load(path).t.shape == (0,)


def test_a_run_onto_a_file_another_process_writes_is_refused_before_any_step(run, tmp_path):
    """Two runs started together on one output: the one that comes second stops before its first
    step with the other process named, whichever output kind (.h5 streamed, .npz saved at the
    end); the holder's result is never touched."""
    for name in ("run.h5", "run.npz"):
        path = tmp_path / name
        holder = subprocess.Popen(
            [sys.executable, "-c", HOLD_LOCK, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},  # this checkout's lcpdyn
        )
        try:
            assert holder.stdout.readline().strip() == "held"
            scene = scenes.blocks.SlidingBlock.build(t_end=0.05)
            sim = Simulation(scene.model, scene.friction("regularized"), scene.dt)
            with pytest.raises(OutputBusy, match=rf"process {holder.pid} on "):
                sim.run(scene.t_end, out=path)
            assert sim.steps_done == 0 and not path.exists()
        finally:
            holder.communicate("done\n", timeout=60)
        assert holder.returncode == 0
        sim.run(scene.t_end, out=path)  # the lock went with its holder
        assert load(path).t.shape == (50,)


HOLD_LOCK = """
import sys
from lcpdyn.file_lock import OutputLock
lock = OutputLock(sys.argv[1])
print("held", flush=True)
sys.stdin.readline()
lock.release()
"""
