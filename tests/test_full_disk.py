"""A full disk or a failed write ends a run cleanly (issue 46, item 2): one message naming the file
and the cause, the steps already written kept and resumable elsewhere, no HDF5 error storm and no
crash; an .npz run streams into a checkpoint so that a failure at the end loses nothing.

The end-to-end cases run on a small tmpfs the test mounts (root only; skipped with the reason
otherwise)."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess

import numpy as np
import pytest

from lcpdyn import output_room
from lcpdyn.cli import main
from lcpdyn.run.recorder import npz_checkpoint
from lcpdyn.stepper import OutputFailed, Simulation
from lcpdyn.trajectory import OutputWriteError, Trajectory, TrajectoryWriter, load, read_resume_state
from scenes.blocks import SlidingBlock
from tests.test_run_resume import ARRAYS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MB tmpfs mounted at a fresh folder (unmounted afterwards)."""
    where = tmp_path / "disk"
    where.mkdir()
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root and mount(8)")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(where)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def run_cli(argv, capsys):
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def wheel_argv(out, t_end):
    return ["run", "wheel", "--t-end", str(t_end), "--out", str(out), "--quiet"]


def test_a_streamed_run_onto_a_full_disk_stops_cleanly_and_resumes_elsewhere_bit_for_bit(small_disk, tmp_path, capsys):
    """The wheel to 30 s onto 2 MB: the run stops where the next block finds no room, with one
    line naming the file and the cause and no traceback; the file holds the blocks written
    before, says why it stopped, and -- moved to a disk with room -- continues to the same file,
    array for array, as a run never stopped."""
    out = small_disk / "w.h5"
    code, stdout, stderr = run_cli(wheel_argv(out, 30), capsys)
    assert code == 1
    assert stderr.count("\n") == 1 and "Traceback" not in stderr, stderr
    assert f"{out}: no room on its disk for 1024 more steps" in stderr
    assert "lcpdyn run --resume" in stderr
    assert sorted(os.listdir(small_disk)) == ["w.h5"]  # no .partial, lock or scratch file left
    kept = load(out)
    assert kept.t.shape[0] % 1024 == 0 and kept.t.shape[0] >= 1024
    assert kept.parameters["status"].startswith("failed: ") and "no room" in kept.parameters["status"]
    assert read_resume_state(out)["trajectory_steps"] == kept.t.shape[0]

    moved = tmp_path / "w.h5"
    shutil.copy(out, moved)
    code, stdout, stderr = run_cli(["run", "--resume", str(moved), "--t-end", "6", "--quiet"], capsys)
    assert code == 0, stderr
    whole = tmp_path / "whole.h5"
    assert run_cli(wheel_argv(whole, 6), capsys)[0] == 0
    resumed, uninterrupted = load(moved), load(whole)
    assert resumed.parameters["status"] == "completed"
    for name in ARRAYS:
        np.testing.assert_array_equal(getattr(resumed, name), getattr(uninterrupted, name), err_msg=name)


def test_an_npz_run_onto_a_full_disk_keeps_its_checkpoint(small_disk, capsys):
    """An .npz run streams into its checkpoint: on a full disk it stops as a streamed run does,
    the .npz is not written, and the checkpoint (named in the message) holds the steps and
    continues."""
    out = small_disk / "w.npz"
    code, stdout, stderr = run_cli(wheel_argv(out, 30), capsys)
    assert code == 1 and "Traceback" not in stderr
    checkpoint = npz_checkpoint(out)
    assert f"{out} is not written: its checkpoint {checkpoint}: no room" in stderr
    assert not out.exists()
    assert load(checkpoint).t.shape[0] >= 1024
    assert f"lcpdyn run --resume {checkpoint}" in stderr


def test_a_run_refused_room_at_its_start_writes_nothing(small_disk, capsys):
    """A disk with less room than a writer's margin: refused before any step, nothing left."""
    filler = small_disk / "filler"
    filler.write_bytes(b"\0" * (1 << 20))
    code, stdout, stderr = run_cli(wheel_argv(small_disk / "w.h5", 1), capsys)
    assert code == 1 and "Traceback" not in stderr
    assert "step 0 (t = 0 s)" in stderr and "no room on its disk for a new file" in stderr
    assert sorted(os.listdir(small_disk)) == ["filler"]


def _block(friction="regularized"):
    scene = SlidingBlock.build()
    return Simulation(scene.model, scene.friction(friction), scene.dt)


def test_an_npz_run_whose_save_fails_keeps_every_step_in_its_checkpoint(tmp_path, monkeypatch):
    """The save of the .npz fails at the end (a full disk then): OutputFailed names the
    checkpoint, which holds every step, completed; the trajectory is in the error. Without the
    failure the checkpoint is removed and the .npz holds the same steps."""
    out = tmp_path / "b.npz"
    saved = _block().run(0.2, out=out)
    assert out.exists() and not npz_checkpoint(out).exists()

    def full(self, path):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(Trajectory, "_save_npz", full)
    again = tmp_path / "c.npz"
    with pytest.raises(OutputFailed) as caught:
        _block().run(0.2, out=again)
    error = caught.value
    assert "saving failed (No space left on device)" in str(error) and str(npz_checkpoint(again)) in str(error)
    assert error.path == str(npz_checkpoint(again)) and error.resumable
    kept = load(npz_checkpoint(again))
    assert kept.parameters["status"] == "completed"
    for name in ARRAYS:
        np.testing.assert_array_equal(getattr(kept, name), getattr(saved, name), err_msg=name)
        np.testing.assert_array_equal(getattr(error.trajectory, name), getattr(saved, name), err_msg=name)


def test_a_stale_checkpoint_is_a_result_and_is_not_replaced_silently(tmp_path):
    out = tmp_path / "b.npz"
    npz_checkpoint(out).write_bytes(b"an earlier run's steps")
    with pytest.raises(FileExistsError, match="checkpoint.h5: a result file is already there; pass overwrite=True"):
        _block().run(0.1, out=out)
    _block().run(0.1, out=out, overwrite=True)
    assert out.exists() and not npz_checkpoint(out).exists()


def test_room_is_asked_of_the_filesystem(tmp_path):
    """no_room answers None where there is room, ENOSPC with what is free and needed where not."""
    assert output_room.no_room(tmp_path, 1000) is None
    code, words = output_room.no_room(tmp_path, 1 << 62)
    assert code == errno.ENOSPC and "free, about" in words and "needed" in words
    assert os.listdir(tmp_path) == []  # the scratch file is gone


def test_a_write_that_fails_part_way_breaks_the_writer_without_a_storm(tmp_path, monkeypatch):
    """An HDF5 flush that fails (h5py's RuntimeError carrying the C errno) becomes one
    OutputWriteError (damaged), later writes raise the same error without touching the file,
    and closing lets go of the file and its lock without raising."""
    writer = TrajectoryWriter(tmp_path / "w.h5", {"dt": 1e-3}, ["a"], 1, 0)
    file = writer._file
    real_flush = file.flush

    def failing():
        raise RuntimeError("Unable to synchronously flush file (file write failed: errno = 28, error message = 'x')")

    monkeypatch.setattr(file, "flush", failing)
    with pytest.raises(OutputWriteError) as caught:
        writer.set_status("interrupted")
    error = caught.value
    assert error.errno == errno.ENOSPC and error.damaged and "writing the status failed (No space left" in str(error)
    assert writer.broken is error
    with pytest.raises(OutputWriteError) as again:
        writer.set_status("completed")
    assert again.value is error
    monkeypatch.setattr(file, "flush", real_flush)
    writer.close("completed")  # abandons: no write, no exception
    assert writer.closed
    TrajectoryWriter(tmp_path / "w.h5", {"dt": 1e-3}, ["a"], 1, 0).close()  # the lock was released


def test_a_room_refusal_leaves_the_writer_usable(tmp_path, monkeypatch):
    """The room check refuses a block (nothing written): the writer is not broken, and the block
    goes in once there is room."""
    with TrajectoryWriter(tmp_path / "w.h5", {"dt": 1e-3}, ["a"], 1, 0) as writer:
        monkeypatch.setattr(output_room, "free_bytes", lambda directory: 10)
        with pytest.raises(OutputWriteError) as caught:
            writer.set_status("running")
        assert not caught.value.damaged and writer.broken is None
        monkeypatch.undo()
        writer.set_status("running")
    assert load(tmp_path / "w.h5").parameters["status"] == "completed"
