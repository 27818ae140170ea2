"""lcpdyn.animation: an animation file is written with the expected frame count; what it draws
comes from the contacts' outlines; bad requests are refused before anything is drawn."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from lcpdyn.animation import animate, frame_times
from scenes import SCENES, wheel


@pytest.fixture(scope="module")
def short_wheel(tmp_path_factory):
    scene = wheel.build(t_end=0.2)
    path = tmp_path_factory.mktemp("run") / "wheel.h5"
    scene.simulation("regularized", dt=2e-3).run(scene.t_end, out=path)
    return path


def test_frame_times_follow_fps_and_speed(short_wheel):
    from lcpdyn.trajectory import load

    run = load(short_wheel)
    times, steps = frame_times(run, fps=25, speed=0.1)  # 0.198 s of motion over 1.98 s of video
    assert len(times) == 51  # floor(0.198 * 250) + 1 = 50 frames, and the last step
    np.testing.assert_allclose(np.diff(times[:-1]), 0.004)
    assert steps[0] == 0 and steps[-1] == len(run.t) - 1
    np.testing.assert_allclose(run.t[steps[:-1]], times[:-1], atol=1e-3)  # the nearest recorded step
    with pytest.raises(ValueError, match="fps must be finite and > 0"):
        frame_times(run, fps=0)
    with pytest.raises(ValueError, match="speed must be finite and > 0"):
        frame_times(run, speed=float("nan"))


def test_a_gif_has_the_expected_frame_count(short_wheel, tmp_path):
    out = tmp_path / "wheel.gif"
    frames = animate(short_wheel, out, fps=20, speed=0.2)
    from lcpdyn.trajectory import load

    assert frames == len(frame_times(load(short_wheel), 20, 0.2)[0])
    with Image.open(out) as image:
        assert image.n_frames == frames
        first = np.asarray(image.convert("RGB"))
        image.seek(frames - 1)
        last = np.asarray(image.convert("RGB"))
    assert first.shape[0] > 300 and (first != last).any()  # the wheel moved
    assert not list(tmp_path.glob(".*partial*"))  # written under a temporary name, then renamed


def test_outlines_come_from_the_contact_geometry():
    scene = wheel.build()
    (disk,) = scene.model.contacts
    rim, *spokes = disk.outline()
    np.testing.assert_allclose(np.linalg.norm(rim, axis=1), 0.5)  # radius rho
    np.testing.assert_allclose(rim @ disk.axis, 0.0, atol=1e-15)  # in the wheel's plane
    assert len(spokes) == 2
    box = SCENES["sliding-block"].build()
    for contact in box.model.contacts:
        (line,) = contact.outline()
        np.testing.assert_array_equal(line[1], contact.offset)


def test_bad_requests_are_refused_before_drawing(short_wheel, tmp_path):
    with pytest.raises(ValueError, match=r"must end in \.gif, \.mp4"):
        animate(short_wheel, tmp_path / "run.avi")
    with pytest.raises(ValueError, match="does not exist"):
        animate(short_wheel, tmp_path / "missing" / "run.gif")
    from matplotlib import animation

    if not animation.writers.is_available("ffmpeg"):
        with pytest.raises(ValueError, match="install ffmpeg"):
            animate(short_wheel, tmp_path / "run.mp4")


def test_the_command_line_writes_the_animation(short_wheel, tmp_path):
    out = tmp_path / "w.gif"
    done = subprocess.run(
        [sys.executable, "-m", "lcpdyn", "animate", str(short_wheel), "--out", str(out), "--fps", "10",
         "--speed", "0.5"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "(5 frames at 10 fps" in done.stdout
    with Image.open(out) as image:
        assert image.n_frames == 5
    bad = subprocess.run(
        [sys.executable, "-m", "lcpdyn", "animate", str(tmp_path / "nope.h5"), "--out", str(out)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert bad.returncode == 2 and "no such file" in bad.stderr


def test_a_rerun_recording_holds_the_bodies_contacts_and_plots(short_wheel, tmp_path):
    pytest.importorskip("rerun", reason="the 'viewer' extra (rerun-sdk needs NumPy >= 2: the current-stack leg has it)")
    from lcpdyn.trajectory import load
    from lcpdyn.viewer import export_rerun

    out = tmp_path / "wheel.rrd"
    assert export_rerun(short_wheel, out) == len(load(short_wheel).t)
    assert export_rerun(short_wheel, tmp_path / "sparse.rrd", every=10) == 11  # steps 0, 10, ..., 90 and the last, 99
    rerun = Path(sys.executable).with_name("rerun")
    env = {**os.environ, "HOME": str(tmp_path)}  # no analytics state in the user's home
    verified = subprocess.run([rerun, "rrd", "verify", out], capture_output=True, text=True, env=env)
    assert verified.returncode == 0, verified.stderr
    printed = subprocess.run([rerun, "rrd", "print", out], capture_output=True, text=True, env=env).stdout
    for entity in (
        "/world/bodies/wheel", "/world/bodies/wheel/outline", "/world/contacts/0/friction", "/world/contacts/0/slip",
        "/world/contacts/0/path", "/world/planes/0", "/plots/energy_J", "/plots/contact_0/normal_force_N",
    ):  # fmt: skip
        assert entity in printed, entity
    with pytest.raises(ValueError, match=r"must end in \.rrd"):
        export_rerun(short_wheel, tmp_path / "x.gif")


def test_a_run_of_a_model_built_in_python_needs_its_model(tmp_path):
    from lcpdyn import DiskContact, Model, Plane, RigidBody, Simulation

    model = Model(gravity=(0, 0, -9.81))
    disk = model.add_body(RigidBody("disk", 1.0, (0.3, 0.6, 0.3), position=(0, 0, 0.5), velocity=(1, 0, 0)))
    model.add_contact(DiskContact(disk, Plane(), mu=0.3, radius=0.5))
    run = Simulation(model, "box", dt=1e-2).run(0.2)
    with pytest.raises(ValueError, match="records no scene.*model=model"):
        animate(run, tmp_path / "a.gif")
    assert animate(run, tmp_path / "a.gif", fps=10, model=model) == 3  # t = 0.01 ... 0.2: 2 frames and the last
