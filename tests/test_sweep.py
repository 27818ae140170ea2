"""lcpdyn.sweep: the sweep driver on Dask (an embedded local cluster, and a scheduler and two
workers started as separate processes), failures recorded, resume after an interruption, the
table (xarray, netCDF) and its figures, the command line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from lcpdyn import metrics
from lcpdyn.batch import run_batch
from lcpdyn.sweep import METRICS, SweepInterrupted, load_sweep, plot_sweep, sweep
from scenes import wheel

# a short wheel (0.1 s, sliding all along) at a coarse step: every run is a few dozen steps
SHORT = {"t_end": 0.1, "dt": [2e-3], "reference": "coulomb@1e-3"}
REPO = Path(__file__).resolve().parents[1]


def _env():
    """The environment of a child process: this checkout first on its path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def _direct(mu, theta, friction, batch=True):
    """The scores of one run computed without the sweep: its own simulation (batched, as the
    sweep's default, or alone) against its own reference."""
    scene = wheel.build(mu=mu, theta_deg=theta, t_end=SHORT["t_end"])
    reference = scene.simulation("coulomb", dt=1e-3).run(scene.t_end)
    sim = scene.simulation(friction, dt=2e-3, compiled_loop=True)  # the sweep's "auto"
    run = run_batch([sim], scene.t_end)[0].trajectory if batch else sim.run(scene.t_end)
    scores = metrics.summary(run, reference, velocity_threshold=scene.contact_model["velocity_threshold"])
    return scores


def test_local_cluster_sweep_equals_single_runs_and_round_trips(tmp_path):
    table = sweep(
        "wheel", grid={"mu": [0.2, 0.4], "theta_deg": [10.0, 30.0]}, friction=["regularized", "box"],
        out=tmp_path / "sw", workers=2, progress=False, **SHORT,
    )  # fmt: skip
    assert table["force_rms_deviation_percent"].dims == ("friction", "dt", "mu", "theta_deg")
    assert (table["status"].values == "completed").all()
    assert table.attrs["completed"] == 8 and table.attrs["failed"] == 0
    assert (table["compiled_steps"].values == 49).all()  # compiled_loop="auto": all but the first step
    workers = set(table["worker"].values.ravel())
    assert all(w and not w.endswith(f":{os.getpid()}") for w in workers)  # ran in the cluster's processes
    # the numbers are those of the same runs made by hand, bit for bit
    expected = _direct(0.4, 30.0, "box")
    got = table.sel(friction="box", dt=2e-3, mu=0.4, theta_deg=30.0)
    for key in ("force_rms_deviation_percent", "misalignment_rms_deg", "position_error_final", "energy_error_final_J"):
        assert float(got[key]) == expected[key], key
    # the reference's own error is estimated per scene point (step halving)
    assert table["reference_error_force_rms_deviation_percent"].dims == ("mu", "theta_deg")
    assert np.isfinite(table["reference_error_position_error_final"].values).all()
    assert (table["reference_status"].values == "completed").all()
    # the netCDF table holds the same numbers and the sweep's description
    loaded = load_sweep(tmp_path / "sw")
    for key in METRICS:
        np.testing.assert_array_equal(loaded[key].values, table[key].values)
    spec = json.loads(loaded.attrs["sweep"])
    assert spec["scene"] == "wheel" and spec["grid"]["mu"] == [0.2, 0.4]
    figure = plot_sweep(loaded, "force_rms_deviation_percent", "mu", "theta_deg", tmp_path / "heat.png")
    assert len(figure.axes) == 3 and (tmp_path / "heat.png").stat().st_size > 10_000  # two panels and a colour bar


def test_sweep_on_a_separately_started_scheduler_and_two_workers(tmp_path):
    scheduler_file = tmp_path / "scheduler.json"
    env = _env()
    common = {"env": env, "cwd": tmp_path, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "distributed.cli.dask_scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--scheduler-file",
                str(scheduler_file),
                "--no-dashboard",
            ],
            **common,
        )  # fmt: skip
    ]
    try:
        deadline = time.monotonic() + 120
        while not scheduler_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        address = json.loads(scheduler_file.read_text())["address"]
        assert address.startswith("tcp://127.0.0.1:")
        for _ in range(2):
            processes.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "distributed.cli.dask_worker",
                        address,
                        "--nworkers",
                        "1",
                        "--nthreads",
                        "1",
                        "--no-dashboard",
                        "--host",
                        "127.0.0.1",
                    ],
                    **common,
                )  # fmt: skip
            )
        from dask.distributed import Client

        with Client(address) as client:
            client.wait_for_workers(2, timeout=120)
            worker_pids = set(client.run(os.getpid).values())
            table = sweep(
                "wheel", grid={"mu": [0.1, 0.2, 0.3, 0.4]}, friction=["regularized"], client=client, progress=False,
                **SHORT,
            )  # fmt: skip
        assert (table["status"].values == "completed").all()
        ran_on = {int(w.rsplit(":", 1)[1]) for w in table["worker"].values.ravel()}
        assert ran_on <= worker_pids and os.getpid() not in ran_on
        expected = _direct(0.3, 20.0, "regularized")
        got = table.sel(friction="regularized", dt=2e-3, mu=0.3)
        assert float(got["force_rms_deviation_percent"]) == expected["force_rms_deviation_percent"]
        # and by address, as `lcpdyn sweep --scheduler ADDRESS` does
        by_address = sweep("wheel", grid={"mu": [0.1]}, scheduler=address, progress=False, **SHORT)
        assert float(by_address["force_rms_deviation_percent"].squeeze()) == float(
            table["force_rms_deviation_percent"].sel(mu=0.1).squeeze()
        )
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


def test_a_failing_run_is_recorded_and_the_sweep_goes_on(tmp_path):
    points = [{"theta_deg": 10.0}, {"theta_deg": 95.0}, {"theta_deg": 20.0}]
    table = sweep(
        "wheel", points=points, friction=["regularized", "box"], options={"method": ["judice-pires", "no-such"]},
        out=tmp_path / "sw", workers=0, progress=False, **SHORT,
    )  # fmt: skip
    status = table["status"]
    assert status.dims == ("friction", "dt", "method", "point")
    assert list(table["theta_deg"].values) == [10.0, 95.0, 20.0]
    # the bad point: its reference could not be built; every run of it says so
    bad = table.sel(point=1)
    assert (bad["status"].values == "failed").all()
    assert all("theta_deg must be in (-90, 90)" in r for r in bad["reason"].values.ravel())
    assert np.isnan(bad["force_rms_deviation_percent"].values).all()
    assert table["reference_status"].values.tolist() == ["completed", "failed", "completed"]
    # an unknown solver: the run fails, naming it; the good runs completed
    unknown = table.sel({"method": "no-such", "point": [0, 2]})  # dict form: sel has its own method=
    assert (unknown["status"].values == "failed").all()
    assert all("no-such" in r for r in unknown["reason"].values.ravel())
    good = table.sel({"method": "judice-pires", "point": [0, 2]})
    assert (good["status"].values == "completed").all() and np.isfinite(good["misalignment_rms_deg"]).all()
    assert table.attrs["failed"] == 8 and table.attrs["completed"] == 4


def _sweep_command(out, *extra):
    # runs of 250 ordinary steps (~0.1 s each), one by one: long enough that SIGINT, sent when the
    # third run is recorded, lands before the last one (with the compiled loop all ten ran out in
    # the polling gap)
    return [
        sys.executable, "-m", "lcpdyn", "sweep", "wheel", "--grid", "mu=0.1:0.5:5", "--friction", "regularized,box",
        "--dt", "2e-3", "--t-end", "0.5", "--reference", "coulomb@1e-3", "--workers", "0", "--quiet",
        "--compiled-loop", "off", "--batch", "off", "--out", str(out), *extra,
    ]  # fmt: skip


def test_an_interrupted_sweep_keeps_its_runs_and_resumes(tmp_path):
    out = tmp_path / "sw"
    process = subprocess.Popen(_sweep_command(out), env=_env(), cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and len(list((out / "runs").glob("*.json"))) < 3:
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert "interrupted by SIGINT" in stderr and "resume" in stderr
    partial = load_sweep(out)
    done = partial.attrs["completed"]
    assert 3 <= done < 10 and (partial["status"].values == "not run").sum() == 10 - done
    kept = {p.name: p.stat().st_mtime_ns for p in (out / "runs").glob("*.json")}
    # the same command resumes: the finished runs are not run again
    finished = subprocess.run(_sweep_command(out), env=_env(), cwd=tmp_path, capture_output=True, text=True)
    assert finished.returncode == 0, finished.stderr
    assert "10 completed, 0 failed" in finished.stdout
    for name, stamp in kept.items():
        assert (out / "runs" / name).stat().st_mtime_ns == stamp, name
    resumed = load_sweep(out)
    whole = sweep(
        "wheel", grid={"mu": [0.1, 0.2, 0.3, 0.4, 0.5]}, friction=["regularized", "box"], workers=0, progress=False,
        **{**SHORT, "t_end": 0.5}, compiled_loop=False,
    )  # fmt: skip
    for key in METRICS:
        np.testing.assert_array_equal(resumed[key].values, whole[key].values)


def test_sigterm_stops_a_sweep_like_ctrl_c(tmp_path, monkeypatch):
    from lcpdyn import sweep as module

    calls = []
    original = module.run_one

    def run_then_terminate(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            os.kill(os.getpid(), signal.SIGTERM)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, "run_one", run_then_terminate)
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SweepInterrupted) as caught:
        sweep(
            "wheel", grid={"mu": [0.1, 0.2, 0.3]}, out=tmp_path / "sw", workers=0, progress=False, batch=False,
            **SHORT,
        )  # fmt: skip
    assert caught.value.signal == signal.SIGTERM
    # the signal lands as the second run starts, before its steps: that run finishes and is kept,
    # the third is not run
    assert caught.value.dataset.attrs["completed"] == 2
    assert (caught.value.dataset["status"].values == "not run").sum() == 1
    assert load_sweep(tmp_path / "sw").attrs["completed"] == 2
    assert signal.getsignal(signal.SIGTERM) is before  # the handler before the sweep is back


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"grid": {"no_such": [1.0]}}, "unknown parameter"),
        ({"grid": {"mu": [0.1, 0.1]}}, "repeats a value"),
        ({"grid": {"mu": [float("nan")]}}, "must be finite"),
        ({"friction": ["nope"]}, "unknown friction model 'nope'"),
        ({"dt": [0.0]}, "dt must be finite and > 0"),
        ({"dt": [-1e-3]}, "dt must be finite and > 0"),
        ({"reference": "coulomb"}, "MODEL@DT"),
        ({"reference": "nope@1e-4"}, "unknown reference model 'nope'"),
        ({"reference": "coulomb@0"}, "reference's step"),
        ({"t_end": -1.0}, "t_end must be finite and > 0"),
        ({"options": {"mass": [1.0]}}, "cannot be swept"),
        ({"grid": {"mu": [0.1]}, "points": [{"mu": 0.2}]}, "not both"),
        ({"points": [{"mu": 0.2}, {"theta_deg": 10}]}, "same parameters"),
        ({"fixed": {"dt": 1e-3}}, "use the sweep's dt="),
        ({"workers": -1}, "workers must be an integer >= 0"),
        ({"trajectories": True}, "needs out"),
    ],
)
def test_bad_sweeps_are_refused_before_anything_runs(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        sweep("wheel", progress=False, **kwargs)


def test_a_directory_holding_another_sweep_is_not_mixed_in(tmp_path):
    sweep("wheel", grid={"mu": [0.2]}, out=tmp_path / "sw", workers=0, progress=False, **SHORT)
    with pytest.raises(ValueError, match="holds another sweep.*reference"):
        sweep("wheel", grid={"mu": [0.2]}, out=tmp_path / "sw", workers=0, progress=False, **{
            **SHORT, "reference": "coulomb@5e-4"})  # fmt: skip
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="not a directory"):
        sweep("wheel", out=tmp_path / "file", workers=0, progress=False, **SHORT)
    with pytest.raises(ValueError, match="does not exist"):
        sweep("wheel", out=tmp_path / "missing" / "sw", workers=0, progress=False, **SHORT)
    with pytest.raises(ValueError, match="not a readable sweep table|no sweep table"):
        load_sweep(tmp_path / "file")


def test_trajectories_are_streamed_per_run(tmp_path):
    from lcpdyn.trajectory import load

    table = sweep(
        "wheel", grid={"mu": [0.2]}, friction=["box"], out=tmp_path / "sw", trajectories=True, workers=0,
        progress=False, **SHORT,
    )  # fmt: skip
    (path,) = (tmp_path / "sw" / "trajectories").glob("*.h5")
    run = load(path)
    assert run.parameters["status"] == "completed" and len(run.t) == int(table["steps"].squeeze())
    assert run.parameters["scene"]["mu"] == 0.2


def test_a_sweep_without_a_reference_times_and_checks_its_runs(tmp_path):
    table = sweep(
        "wheel", grid={"mu": [0.2, 0.4]}, friction=["box"], t_end=0.1, dt=[2e-3], reference=None,
        out=tmp_path / "sw", workers=0, progress=False,
    )  # fmt: skip
    assert table.attrs["reference"] == "none" and table.attrs["completed"] == 2
    assert np.isnan(table["force_rms_deviation_percent"].values).all()
    assert (table["steps"].values == 50).all() and (table["wall_s"].values > 0).all()
    assert (table["reference_status"].values == "not run").all()
    assert not list((tmp_path / "sw" / "references").glob("*.json"))


def test_compiled_loop_off_gives_the_ordinary_steps(tmp_path):
    kwargs = {"grid": {"mu": [0.3]}, "friction": ["regularized"], "workers": 0, "progress": False, **SHORT}
    ordinary = sweep("wheel", compiled_loop=False, **kwargs)
    assert (ordinary["compiled_steps"].values == 0).all()
    scene = wheel.build(mu=0.3, t_end=SHORT["t_end"])
    reference = scene.simulation("coulomb", dt=1e-3).run(scene.t_end)
    run = scene.simulation("regularized", dt=2e-3, compiled_loop=False).run(scene.t_end)
    expected = metrics.summary(run, reference, velocity_threshold=0.01)
    assert float(ordinary["misalignment_rms_deg"].squeeze()) == expected["misalignment_rms_deg"]
    looped = sweep("wheel", **kwargs)  # "auto": the same numbers to rounding
    np.testing.assert_allclose(
        looped["position_error_final"].values, ordinary["position_error_final"].values, rtol=1e-6
    )
    with pytest.raises(ValueError, match="compiled_loop must be"):
        sweep("wheel", compiled_loop="yes", **kwargs)


def test_batched_and_one_by_one_sweeps(tmp_path, monkeypatch):
    """batch=True (the default) steps the runs of one structure together: each run's numbers are
    those of the batch API bit for bit and those of the one-by-one sweep (its single runs, bit for
    bit) to rounding; a stop signal between batches keeps the finished batch."""
    kwargs = {"grid": {"mu": [0.2, 0.4]}, "friction": ["regularized", "box"], "workers": 0, "progress": False}
    batched = sweep("wheel", **kwargs, **SHORT)
    alone = sweep("wheel", batch=False, **kwargs, **SHORT)
    assert (batched["batch"].values == 4).all() and (alone["batch"].values == 1).all()
    for friction in ("regularized", "box"):
        got = batched.sel(friction=friction, dt=2e-3, mu=0.4)
        single = alone.sel(friction=friction, dt=2e-3, mu=0.4)
        for key in ("force_rms_deviation_percent", "misalignment_rms_deg", "position_error_final"):
            assert float(got[key]) == _direct(0.4, 20.0, friction)[key], key
            assert float(single[key]) == _direct(0.4, 20.0, friction, batch=False)[key], key
            # abs: a misalignment of ~1e-4 deg is an angle between nearly parallel vectors, whose
            # rounding error is ~sqrt(eps) rad (here 7e-10 deg apart)
            assert float(got[key]) == pytest.approx(float(single[key]), rel=1e-6, abs=1e-8), key
    from lcpdyn import sweep as module

    original = module.run_batch_records

    def batch_then_terminate(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)  # before the batch's steps: the sweep stops after it
        return original(*args, **kwargs)

    monkeypatch.setattr(module, "run_batch_records", batch_then_terminate)
    monkeypatch.setattr(module, "BATCH_POINTS", 1)  # a batch per scene point
    with pytest.raises(SweepInterrupted) as caught:
        sweep("wheel", out=tmp_path / "sw", **kwargs, **SHORT)
    assert caught.value.signal == signal.SIGTERM
    assert caught.value.dataset.attrs["completed"] == 2  # the first point's batch
    assert (caught.value.dataset["status"].values == "not run").sum() == 2


def test_the_command_line_refuses_a_plot_over_an_unswept_parameter(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "lcpdyn", "sweep", "wheel", "--grid", "mu=0.1,0.2", "--out", str(tmp_path / "sw"),
         "--plot", "misalignment_rms_deg:theta_deg", "--workers", "0"],
        env=_env(), cwd=tmp_path, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 2
    assert "'theta_deg' is not swept; the swept dimensions are mu, dt" in done.stderr
    assert not (tmp_path / "sw").exists()  # nothing ran, nothing was written
