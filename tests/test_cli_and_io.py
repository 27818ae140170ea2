"""End-to-end tests of the ``lcpdyn`` command line, the .npz output and the stepper's input
checks and failure handling. Runs are kept short (t_end = 0.05 s) to stay fast."""

from __future__ import annotations

import json
import math
import os
import stat
import subprocess
import sys

import numpy as np
import pytest

import lcpdyn
import lcpdyn.cli_catalogue
import scenes
from lcpdyn.cli import main
from lcpdyn.stepper import Simulation, SimulationError
from lcpdyn.trajectory import FIELDS, Trajectory, load

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = ["regularized", "polygonal", "box", "coulomb"]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
T_END = 0.05
STEPS = 50  # T_END / 1e-3


def run_cli(argv, capsys):
    """``lcpdyn.cli.main(argv)`` in-process -> (exit code, stdout, stderr)."""
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse (and anything else that exits) -- keep its code
        code = exc.code
        if isinstance(code, str):  # sys.exit("message") prints the message and exits with 1
            print(code, file=sys.stderr)
            code = 1
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def puck_argv(out, *extra, friction="coulomb"):
    return [
        "run",
        "puck",
        "--friction",
        friction,
        "--dt",
        "1e-3",
        "--t-end",
        str(T_END),
        "--out",
        str(out),
        "--quiet",
        *extra,
    ]


# --- lcpdyn scenes ----------------------------------------------------------------------------
def scene_blocks(stdout) -> dict:
    """``lcpdyn scenes`` output -> {scene: (its heading line, the text of its parameter lines)}:
    a scene starts at an unindented line, its parameters follow indented."""
    blocks, name = {}, None
    for line in stdout.splitlines():
        if not line.strip() or line.startswith("units:"):
            name = None
        elif not line[0].isspace():
            name = line.split()[0]
            blocks[name] = (line, "")
        elif name is not None:
            blocks[name] = (blocks[name][0], blocks[name][1] + " " + line.strip())
    return blocks


def test_python_dash_m_lcpdyn_scenes_lists_every_scene():
    """(The listing gained indented parameter lines under each scene: only the unindented scene
    lines are parsed here; the parameters are checked below.)"""
    done = subprocess.run(
        [sys.executable, "-m", "lcpdyn", "scenes"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    blocks = scene_blocks(done.stdout)
    rows = {name: heading.split()[1] for name, (heading, _) in blocks.items()}
    assert rows == {
        "wheel": "[run]",
        "sliding-block": "[run]",
        "incline-block": "[run]",
        "puck": "[run]",
        "sliding-sphere": "[run]",
        "rolling-disk": "[run+stability+reproduce]",
        "swivel-shimmy": "[stability+reproduce]",
        "caster-shimmy": "[stability+reproduce]",
        "road-wheel": "[run+reproduce]",
        "incline-pendulum": "[run+reproduce]",
        "beam-tyre-shimmy": "[run+stability+reproduce]",
        "half-car": "[run+reproduce]",
        "spheres": "[run]",
        "boxes": "[run]",
        "dumbbells": "[run]",
        "wheelset-klingel": "[run+reproduce]",
        "wheelset-hunting": "[run+stability+reproduce]",
        "chain-on-box": "[run]",
        "wheel-into-boxes": "[run]",
        "crate-on-half-car": "[run]",
        "ball-on-beam": "[run]",
        "ur5-servo": "[run]",
        "panda-servo": "[run]",
        "solo12-stand": "[run]",
        "a1-stand": "[run]",
    }
    for heading, _ in blocks.values():  # each with its one-line description
        assert len(heading.split()) > 2


# --- lcpdyn run ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def puck_files(tmp_path_factory):
    """One ``lcpdyn run puck --friction coulomb ... --out X.npz --plot X.png --quiet``."""
    directory = tmp_path_factory.mktemp("puck")
    out, plot = directory / "puck.npz", directory / "puck.png"
    code = main(puck_argv(out, "--plot", str(plot)))
    return code, out, plot


def test_run_writes_the_npz_and_the_png(puck_files):
    code, out, plot = puck_files
    assert code == 0
    assert out.is_file() and out.stat().st_size > 0
    assert plot.is_file() and plot.read_bytes()[:8] == PNG_SIGNATURE


def test_run_npz_holds_every_documented_array_with_its_shape(puck_files):
    _, out, _ = puck_files
    with np.load(out, allow_pickle=False) as data:
        files = set(data.files)
        arrays = {k: data[k] for k in data.files}
    required = {
        "t",
        "position",
        "quaternion",
        "velocity",
        "angular_velocity",
        "contact_normal_force",
        "contact_friction_force",
        "contact_slip_velocity",
        "energy",
        "solver_status",
        "solver_iterations",
        "parameters",
        "lcpdyn_version",
    }
    assert required <= files, required - files
    assert set(FIELDS) <= files, set(FIELDS) - files  # everything the format documents
    bodies, contacts = 1, 1
    assert arrays["t"].shape == (STEPS,)
    np.testing.assert_allclose(arrays["t"], (np.arange(STEPS) + 1) * 1e-3, rtol=1e-12)
    assert arrays["position"].shape == (STEPS, bodies, 3)
    assert arrays["quaternion"].shape == (STEPS, bodies, 4)
    assert arrays["velocity"].shape == (STEPS, bodies, 3)
    assert arrays["angular_velocity"].shape == (STEPS, bodies, 3)
    assert arrays["contact_normal_force"].shape == (STEPS, contacts)
    assert arrays["contact_friction_force"].shape == (STEPS, contacts, 3)
    assert arrays["contact_slip_velocity"].shape == (STEPS, contacts, 3)
    assert arrays["energy"].shape == (STEPS,)
    assert arrays["solver_status"].shape == (STEPS,)
    assert arrays["solver_iterations"].shape == (STEPS,)
    assert np.all(arrays["solver_status"] == 0)
    assert np.all(np.isfinite(arrays["position"]))
    # the puck rests on the plane: lam_N = m g, and slides: |lam_T| = mu lam_N (exact Coulomb)
    np.testing.assert_allclose(arrays["contact_normal_force"], 9.81, rtol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(arrays["contact_friction_force"], axis=2), 0.4 * 9.81, rtol=1e-6)

    parameters = json.loads(str(arrays["parameters"]))
    assert parameters["lcpdyn_version"] == lcpdyn.__version__
    assert parameters["dt"] == 1e-3
    assert parameters["friction"]["model"] == "coulomb"
    assert parameters["scene"]["name"] == "puck"
    assert parameters["scene"]["t_end"] == T_END
    assert str(arrays["lcpdyn_version"]) == lcpdyn.__version__


def test_trajectory_load_round_trips_the_npz(puck_files, tmp_path):
    _, out, _ = puck_files
    trajectory = load(out)
    assert isinstance(trajectory, Trajectory)
    assert trajectory.body_names == ["puck"]
    with np.load(out, allow_pickle=False) as data:
        raw = {k: data[k] for k in data.files}
        assert trajectory.parameters == json.loads(str(data["parameters"]))
    assert set(trajectory.arrays) == set(raw) - {"parameters", "body_names", "lcpdyn_version"}
    for name, value in trajectory.arrays.items():
        np.testing.assert_array_equal(value, raw[name], err_msg=name)
        assert value.dtype == raw[name].dtype, name
    # attribute access to the arrays
    np.testing.assert_array_equal(trajectory.t, raw["t"])
    # save -> load again gives the same thing
    again_path = tmp_path / "again.npz"
    trajectory.save(again_path)
    again = load(again_path)
    assert again.parameters == trajectory.parameters
    assert again.body_names == trajectory.body_names
    assert set(again.arrays) == set(trajectory.arrays)
    for name, value in trajectory.arrays.items():
        np.testing.assert_array_equal(again.arrays[name], value, err_msg=name)


@pytest.mark.parametrize("friction", MODELS)
def test_run_each_friction_model_on_the_puck(friction, tmp_path, capsys):
    out = tmp_path / f"{friction}.npz"
    code, stdout, _ = run_cli(puck_argv(out, friction=friction), capsys)
    assert code == 0
    assert f"wrote {out}" in stdout
    trajectory = load(out)
    assert trajectory.parameters["friction"]["model"] == friction
    assert trajectory.t.shape == (STEPS,)
    assert np.all(trajectory.solver_status == 0)
    assert np.all(trajectory.solver_fallback == 0)
    # every model decelerates the sliding puck (speed 2 m/s, mu g = 3.9 m/s^2)
    speed = np.linalg.norm(trajectory.velocity[:, 0], axis=1)
    assert np.all(np.diff(speed) < 0)
    assert speed[-1] < 2.0 - 0.5 * 0.4 * 9.81 * T_END


def test_run_honours_set_heading_deg(tmp_path, capsys):
    out = tmp_path / "heading.npz"
    code, _, _ = run_cli(puck_argv(out, "--set", "heading_deg=45"), capsys)
    assert code == 0
    trajectory = load(out)
    assert trajectory.parameters["scene"]["heading_deg"] == 45.0
    initial = np.array(trajectory.parameters["bodies"][0]["velocity"])
    np.testing.assert_allclose(initial, [math.sqrt(2.0), math.sqrt(2.0), 0.0], rtol=1e-12, atol=1e-15)
    velocity = trajectory.velocity[:, 0]
    np.testing.assert_allclose(np.degrees(np.arctan2(velocity[:, 1], velocity[:, 0])), 45.0, atol=1e-9)
    np.testing.assert_allclose(velocity[:, 2], 0.0, atol=1e-12)
    # and the default heading is not 45 deg (so the override is what made it)
    default = tmp_path / "default.npz"
    assert run_cli(puck_argv(default), capsys)[0] == 0
    v0 = load(default).parameters["bodies"][0]["velocity"]
    assert math.degrees(math.atan2(v0[1], v0[0])) == pytest.approx(22.5, abs=1e-12)


BAD_INPUT = {
    "unknown scene": (["run", "no-such-scene", "--quiet"], ["no-such-scene"]),
    "unknown friction model": (["run", "puck", "--friction", "viscous", "--quiet"], ["viscous"]),
    "negative mass": (["run", "puck", "--set", "mass=-1", "--quiet"], ["mass", "-1"]),
    "negative mu": (["run", "puck", "--set", "mu=-0.1", "--quiet"], ["mu", "-0.1"]),
    "nan mu": (["run", "puck", "--set", "mu=nan", "--quiet"], ["mu", "nan"]),
    "upward gravity": (["run", "puck", "--set", "gravity=-9.81", "--quiet"], ["gravity", "-9.81", "magnitude"]),
    "zero dt": (["run", "puck", "--dt", "0", "--quiet"], ["dt"]),
    "negative dt": (["run", "puck", "--dt", "-1", "--quiet"], ["dt", "-1"]),
    "nan dt": (["run", "puck", "--dt", "nan", "--quiet"], ["dt", "nan"]),
    "unknown --set key": (["run", "puck", "--set", "bogus=1", "--quiet"], ["bogus"]),
    "non-numeric --set value": (["run", "puck", "--set", "speed=fast", "--quiet"], ["speed", "fast"]),
    "--set without '='": (["run", "puck", "--set", "mass", "--quiet"], ["mass"]),
    "--set twice, two values": (["run", "puck", "--set", "mu=0.3", "--set", "mu=0.5", "--quiet"], ["mu", "0.3", "0.5"]),
    "unknown method": (["run", "puck", "--method", "simplex", "--quiet"], ["simplex"]),
    "t_end leaving no step": (["run", "puck", "--t-end", "0", "--quiet"], ["--t-end"]),
    "compare: unknown scene": (["compare", "no-such-scene", "--quiet"], ["no-such-scene"]),
}


@pytest.mark.parametrize("argv, culprits", list(BAD_INPUT.values()), ids=list(BAD_INPUT))
def test_bad_input_exits_with_code_2_naming_the_culprit(argv, culprits, tmp_path, capsys):
    out = tmp_path / "never.npz"
    if argv[0] == "run":
        argv = argv + ["--out", str(out)]
    else:
        argv = argv + ["--out-dir", str(tmp_path / "never")]
    code, _, stderr = run_cli(argv, capsys)
    assert code == 2, (code, stderr)
    assert stderr.startswith("lcpdyn: "), stderr
    for culprit in culprits:
        assert culprit in stderr, (culprit, stderr)
    assert "Traceback" not in stderr
    assert not out.exists()
    assert not (tmp_path / "never").exists()


# --- lcpdyn compare -----------------------------------------------------------------------------
def test_compare_writes_the_json_and_both_figures(tmp_path, capsys):
    out_dir = tmp_path / "results"
    code, stdout, _ = run_cli(
        [
            "compare",
            "wheel",
            "--set",
            f"t_end={T_END}",
            "--reference-dt",
            "5e-4",
            "--position-update",
            "paper",
            "--out-dir",
            str(out_dir),
            "--quiet",
        ],
        capsys,
    )
    assert code == 0
    json_path = out_dir / "wheel-paper.json"
    assert json_path.is_file()
    for figure in ("wheel-paper-fig4-normalized-force.png", "wheel-paper-fig5-errors.png"):
        assert (out_dir / figure).read_bytes()[:8] == PNG_SIGNATURE, figure
    assert not (out_dir / "wheel-symplectic.json").exists()  # only the requested update
    assert "regularized" in stdout and "1.67" in stdout  # the table with the paper's numbers

    result = json.loads(json_path.read_text())
    assert result["lcpdyn_version"] == lcpdyn.__version__
    assert result["scene"] == "wheel"
    assert result["position_update"] == "paper"
    assert result["reference_dt"] == 5e-4
    assert result["dt"] == 1e-3
    assert result["t_end"] == T_END
    assert result["mu"] == 0.3
    assert set(result["metrics"]) == set(MODELS)
    keys = {
        "force_rms_deviation_percent",
        "force_rms_deviation_sliding_percent",
        "misalignment_rms_deg",
        "static_force_ratio_max",
        "position_error_final",
        "position_error_max",
        "position_error_final_per_path",
        "energy_error_final_J",
        "energy_error_max_abs_J",
        "energy_error_max_relative",
    }
    assert set(result["static_force_ratio"]) == set(MODELS) | {"coulomb-reference"}
    for name, row in result["metrics"].items():
        assert set(row) == keys, name
        for key, value in row.items():
            if key == "position_error_max":
                assert value is None  # t_end = 0.05 s < the default 0.1 s settling time: NaN -> null
            elif key == "static_force_ratio_max":
                assert value is None  # the wheel slides throughout the first 0.05 s: never sticks
            else:
                assert isinstance(value, float) and math.isfinite(value), (name, key, value)
    assert set(result["metrics_same_step"]) == {"regularized", "polygonal", "box"}
    assert result["paper"] == {
        "regularized": {"force_rms_deviation_percent": 1.67, "misalignment_rms_deg": 0.7},
        "polygonal": {"force_rms_deviation_percent": 3.76, "misalignment_rms_deg": 14.0},
        "box": {"force_rms_deviation_percent": 9.70, "misalignment_rms_deg": 12.6},
    }
    # each run's parameters are recorded, the reference at its own step
    assert result["run_parameters"]["coulomb-reference"]["dt"] == 5e-4
    assert result["run_parameters"]["regularized"]["friction"]["model"] == "regularized"
    assert result["solver_status_counts"]["coulomb-reference"] == {"0": 100}
    for name in MODELS:
        assert result["solver_status_counts"][name] == {"0": STEPS}, name


# --- reproducibility ----------------------------------------------------------------------------
def wheel_run(friction):
    scene = scenes.build_scene("wheel", t_end=T_END)
    return Simulation(scene.model, scene.friction(friction), scene.dt).run(scene.t_end)


def assert_bit_identical(a: Trajectory, b: Trajectory):
    assert set(a.arrays) == set(b.arrays)
    for name in a.arrays:
        x, y = np.asarray(a.arrays[name]), np.asarray(b.arrays[name])
        assert x.dtype == y.dtype and x.shape == y.shape, name
        assert x.tobytes() == y.tobytes(), f"{name} differs between two identical runs"


@pytest.mark.parametrize("friction", MODELS)
def test_two_runs_of_the_same_scene_and_model_are_bit_identical(friction):
    first, second = wheel_run(friction), wheel_run(friction)
    assert_bit_identical(first, second)
    assert json.dumps(first.parameters, sort_keys=True) == json.dumps(second.parameters, sort_keys=True)


def test_a_reset_simulation_reproduces_its_run_bit_for_bit():
    scene = scenes.build_scene("wheel", t_end=T_END)
    sim = Simulation(scene.model, scene.friction("regularized"), scene.dt)
    first = sim.run(T_END)
    sim.reset()
    assert_bit_identical(first, sim.run(T_END))


def test_two_cli_runs_write_identical_arrays(tmp_path, capsys):
    paths = [tmp_path / "a.npz", tmp_path / "b.npz"]
    for path in paths:
        assert run_cli(puck_argv(path, friction="regularized"), capsys)[0] == 0
    a, b = load(paths[0]), load(paths[1])
    assert_bit_identical(a, b)
    assert a.parameters == b.parameters


# --- Simulation input checks ------------------------------------------------------------------
@pytest.fixture(scope="module")
def wheel_model():
    return scenes.build_scene("wheel").model


SIMULATION_ERRORS = {
    "dt zero": (dict(dt=0.0), ["dt", "0"]),
    "dt negative": (dict(dt=-1e-3), ["dt", "-0.001"]),
    "dt nan": (dict(dt=float("nan")), ["dt", "nan"]),
    "dt inf": (dict(dt=float("inf")), ["dt", "inf"]),
    "unknown friction": (dict(friction="viscous"), ["viscous"]),
    "unknown method": (dict(method="simplex"), ["simplex"]),
    "coulomb with an LCP method": (dict(friction="coulomb", method="lemke"), ["lemke"]),
    "stabilization above 1": (dict(stabilization=1.5), ["stabilization", "1.5"]),
    "stabilization below 0": (dict(stabilization=-0.1), ["stabilization", "-0.1"]),
    "stabilization nan": (dict(stabilization=float("nan")), ["stabilization"]),
    "negative normal_force_iterations": (dict(normal_force_iterations=-1), ["normal_force_iterations", "-1"]),
    "fractional normal_force_iterations": (dict(normal_force_iterations=1.5), ["normal_force_iterations"]),
    "unknown position update": (dict(position_update="verlet"), ["verlet"]),
    "unknown fallback": (dict(fallback_method="simplex"), ["simplex"]),
    "tolerance zero": (dict(tolerance=0.0), ["tolerance"]),
    "dt below MIN_DT": (dict(dt=1e-300), ["dt = 1e-300", "MIN_DT"]),
    "dt just below MIN_DT": (dict(dt=9.9e-10), ["dt = 9.9e-10", "MIN_DT"]),
    "unknown gyroscopic treatment": (dict(gyroscopic="implicit"), ["gyroscopic", "implicit"]),
    "unknown energy check": (dict(energy_check="loud"), ["energy_check", "loud"]),
    "energy_tolerance zero": (dict(energy_tolerance=0.0), ["energy_tolerance", "0.0"]),
    "energy_tolerance nan": (dict(energy_tolerance=float("nan")), ["energy_tolerance", "nan"]),
}


@pytest.mark.parametrize("kwargs, culprits", list(SIMULATION_ERRORS.values()), ids=list(SIMULATION_ERRORS))
def test_simulation_rejects_bad_settings_naming_the_culprit(wheel_model, kwargs, culprits):
    kwargs = dict(kwargs)
    friction = kwargs.pop("friction", "regularized")
    dt = kwargs.pop("dt", 1e-3)
    with pytest.raises(ValueError) as info:
        Simulation(wheel_model, friction, dt, **kwargs)
    for culprit in culprits:
        assert culprit in str(info.value), (culprit, str(info.value))


def test_simulation_accepts_the_edges_of_the_valid_ranges(wheel_model):
    for stabilization in (0.0, 1.0):
        assert Simulation(wheel_model, "regularized", 1e-3, stabilization=stabilization).stabilization == stabilization
    assert Simulation(wheel_model, "regularized", 1e-3, normal_force_iterations=0).normal_force_iterations == 0
    assert Simulation(wheel_model, "regularized", 1e-9).dt == 1e-9  # MIN_DT itself


def test_simulation_defaults_are_the_energy_safe_scheme(wheel_model):
    """The v+ update with the midpoint gyroscopic step is the default; ``"paper"`` brings the
    paper's explicit gyroscopic term with it, and either may be combined explicitly."""
    default = Simulation(wheel_model, "regularized", 1e-3)
    assert (default.position_update, default.gyroscopic, default.energy_check) == ("symplectic", "midpoint", "warn")
    paper = Simulation(wheel_model, "regularized", 1e-3, position_update="paper")
    assert (paper.position_update, paper.gyroscopic) == ("paper", "explicit")
    mixed = Simulation(wheel_model, "regularized", 1e-3, position_update="symplectic", gyroscopic="explicit")
    assert mixed.parameters()["gyroscopic"] == "explicit"


def test_cli_energy_check_stop_saves_the_steps_up_to_the_gain(tmp_path, capsys):
    """``--position-update paper --energy-check stop``: the wheel stops at the first step whose
    energy gain exceeds the tolerance (while rolling), exit code 1, the steps so far saved with
    the flag on the last one."""
    out = tmp_path / "stopped.npz"
    code, _, stderr = run_cli(
        ["run", "wheel", "--position-update", "paper", "--energy-check", "stop", "--out", str(out), "--quiet"], capsys
    )
    assert code == 1, stderr
    assert "energy_check='stop'" in stderr and "simulation stopped" in stderr
    trajectory = load(out)
    assert 2.0 < trajectory.t[-1] < 4.0
    assert trajectory.health[-1] == int(lcpdyn.Health.ENERGY_GAIN)
    assert trajectory.parameters["position_update"] == "paper" and trajectory.parameters["energy_check"] == "stop"
    argv = ["run", "wheel", "--energy-check", "stop", "--out", str(out), "--quiet", "--overwrite"]
    code, _, _ = run_cli(argv, capsys)
    assert code == 0 and load(out).t.shape == (4000,)  # the default update runs through


def test_simulation_run_rejects_an_end_time_without_steps(wheel_model):
    sim = Simulation(wheel_model, "regularized", 1e-3)
    for t_end in (0.0, 1e-4, float("nan")):
        with pytest.raises(ValueError, match="t_end"):
            sim.run(t_end)


# --- a failing solve is never applied silently ------------------------------------------------
def test_failing_pgs_without_fallback_raises_with_the_partial_trajectory():
    """The brief's configuration: PGS limited to one sweep, no fallback, on the wheel."""
    scene = scenes.build_scene("wheel", t_end=T_END)
    sim = Simulation(
        scene.model, "regularized", 1e-3, method="pgs", solver_options={"max_sweeps": 1}, fallback_method=None
    )
    with pytest.raises(SimulationError) as info:
        sim.run(T_END)
    error = info.value
    assert error.trajectory is not None
    assert error.trajectory.t.shape == (error.step,)
    assert "pgs" in str(error)


def test_failing_pgs_with_the_default_fallback_records_the_fallback():
    """The brief's configuration with the default fallback (judice-pires): the run completes and
    ``solver_fallback`` marks the steps the fallback solved."""
    scene = scenes.build_scene("wheel", t_end=T_END)
    sim = Simulation(scene.model, "regularized", 1e-3, method="pgs", solver_options={"max_sweeps": 1})
    assert sim.fallback_method == "judice-pires"
    trajectory = sim.run(T_END)
    assert trajectory.t.shape == (STEPS,)
    assert trajectory.solver_fallback.sum() > 0
    assert np.all(trajectory.solver_status == 0)


def test_failing_single_sweep_pgs_on_the_wheel_stops_at_its_first_step():
    """One sweep checked after every sweep (check_every=1, so that max_sweeps is honoured
    exactly): PGS cannot solve the wheel's first step; without fallback the run stops there."""
    scene = scenes.build_scene("wheel", t_end=T_END)
    sim = Simulation(
        scene.model,
        "regularized",
        1e-3,
        method="pgs",
        solver_options={"max_sweeps": 1, "check_every": 1},
        fallback_method=None,
    )
    with pytest.raises(SimulationError) as info:
        sim.run(T_END)
    error = info.value
    assert error.step == 0 and error.time == 0.0
    assert "pgs" in str(error) and "MAX_ITERATIONS" in str(error)
    assert error.result is not None and not error.result.success
    partial = error.trajectory
    assert partial.t.shape == (0,)
    assert partial.position.shape == (0, 1, 3)
    assert partial.contact_normal_force.shape == (0, 1)
    assert partial.initial_position.shape == (1, 3)  # the static fields are kept whole
    assert sim.steps_done == 0  # the failed solve was not applied
    np.testing.assert_array_equal(sim.q, scene.model.initial_state()[0])


def test_single_sweep_pgs_on_the_wheel_with_the_default_fallback():
    scene = scenes.build_scene("wheel", t_end=T_END)
    sim = Simulation(scene.model, "regularized", 1e-3, method="pgs", solver_options={"max_sweeps": 1, "check_every": 1})
    trajectory = sim.run(T_END)
    assert trajectory.t.shape == (STEPS,)
    assert trajectory.solver_fallback.sum() > 0
    assert trajectory.solver_fallback[0] == 1
    assert set(np.unique(trajectory.solver_fallback)) <= {0, 1}
    assert np.all(trajectory.solver_status == 0)
    assert trajectory.parameters["fallback_method"] == "judice-pires"


@pytest.fixture(scope="module")
def block_runs():
    """The sliding block (stops at t = v0 / (mu g) = 0.408 s) under PGS limited to 20 sweeps:
    PGS solves the sliding steps but not the stick transition (step 406)."""
    options = {"max_sweeps": 20, "check_every": 1}
    scene = scenes.build_scene("sliding-block")
    sim = Simulation(scene.model, "regularized", 1e-3, method="pgs", solver_options=options, fallback_method=None)
    with pytest.raises(SimulationError) as info:
        sim.run(0.45)
    scene = scenes.build_scene("sliding-block")
    with_fallback = Simulation(scene.model, "regularized", 1e-3, method="pgs", solver_options=options).run(0.45)
    return info.value, with_fallback


def test_failure_mid_run_carries_the_steps_done(block_runs):
    error, with_fallback = block_runs
    assert error.step > 300  # the sliding phase is solved, the failure is at the stick transition
    assert error.time == pytest.approx(error.step * 1e-3, abs=1e-12)
    assert f"step {error.step}" in str(error)
    partial = error.trajectory
    assert partial.t.shape == (error.step,)
    for name in (
        "position",
        "velocity",
        "contact_normal_force",
        "contact_friction_force",
        "energy",
        "solver_status",
        "solver_fallback",
    ):
        assert partial.arrays[name].shape[0] == error.step, name
    assert np.all(partial.solver_status == 0) and np.all(partial.solver_fallback == 0)
    assert partial.t[-1] == pytest.approx(error.time, abs=1e-12)
    # the steps before the failure are exactly those of the same run with a fallback
    for name, value in partial.arrays.items():
        if name in ("initial_position", "initial_energy"):
            np.testing.assert_array_equal(value, with_fallback.arrays[name], err_msg=name)
        else:
            np.testing.assert_array_equal(value, with_fallback.arrays[name][: error.step], err_msg=name)


def test_fallback_is_recorded_exactly_where_the_first_method_failed(block_runs):
    error, with_fallback = block_runs
    assert with_fallback.t.shape == (450,)
    used = np.flatnonzero(with_fallback.solver_fallback)
    assert used.size > 0
    assert used[0] == error.step  # the first fallback is the step that failed without one
    assert np.all(with_fallback.solver_status == 0)  # every accepted solve succeeded
    # the block ends at rest near v0^2 / (2 mu g) = 0.408 m
    np.testing.assert_allclose(with_fallback.velocity[-1, 0], 0.0, atol=1e-6)
    assert with_fallback.position[-1, 0, 0] == pytest.approx(2.0**2 / (2 * 0.5 * 9.81), abs=5e-3)


def test_fused_and_general_paths_give_bit_identical_runs():
    """The fused regularized/box step (one compiled call) poses and solves exactly the general
    path's problem."""
    import scenes as _scenes
    from lcpdyn.stepper import Simulation as _Simulation

    for friction in ("regularized", "box"):
        scene = _scenes.wheel.build(t_end=2.1)
        runs = [
            _Simulation(_scenes.wheel.build(t_end=2.1).model, scene.friction(friction), scene.dt, fused=fused).run(
                scene.t_end
            )
            for fused in (True, False)
        ]
        for name, array in runs[0].arrays.items():
            np.testing.assert_array_equal(array, runs[1].arrays[name], err_msg=f"{friction}: {name}")


# --- command-line conventions (issue 10, item 5) ------------------------------------------------
import argparse  # noqa: E402
import re  # noqa: E402
import signal  # noqa: E402
import time  # noqa: E402

import lcpdyn.cli  # noqa: E402
import lcpdyn.compare  # noqa: E402
import lcpdyn.friction  # noqa: E402
import lcpdyn.stability  # noqa: E402
import lcpdyn.stepper  # noqa: E402
from scenes.scene import PARAMETER_UNITS  # noqa: E402

ENGINE = pytest.mark.skipif(not hasattr(lcpdyn.stepper, "RunInterrupted"), reason="engine side not yet in")
COMMANDS = ("scenes", "run", "compare", "demo", "stability", "sweep", "animate", "reproduce")


def subparsers(parser=None) -> dict:
    parser = parser or lcpdyn.cli._parser()
    (group,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(group.choices)


def help_text(argv, capsys) -> str:
    """``lcpdyn ARGV --help``, whitespace normalized (argparse wraps lines)."""
    with pytest.raises(SystemExit) as info:
        main([*argv, "--help"])
    assert info.value.code == 0
    return " ".join(capsys.readouterr().out.split())


def test_lcpdyn_without_arguments_prints_the_help_and_exits_0(monkeypatch, capsys):
    """What the console script ``lcpdyn`` (``lcpdyn.__main__:command``, which calls
    ``lcpdyn.cli.main`` on sys.argv) does bare."""
    monkeypatch.setattr(sys, "argv", ["lcpdyn"])
    assert main() == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: lcpdyn")
    for command in COMMANDS:
        assert re.search(rf"^\s+{command}\b", out, re.M), command
    assert main([]) == 0 and capsys.readouterr().out == out


def test_the_console_script_without_arguments_prints_the_help():
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from lcpdyn.__main__ import command; sys.exit(command())"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: lcpdyn") and "demo" in done.stdout


def test_python_dash_m_lcpdyn_without_arguments_runs_the_demo(monkeypatch):
    """``python -m lcpdyn`` (./dev.sh demo) still runs the demo; with arguments, any command line."""
    import lcpdyn.__main__ as entry

    calls = []
    monkeypatch.setattr(lcpdyn.cli, "main", lambda argv=None: calls.append(argv) or 0)
    assert entry.main([]) == 0 and entry.main(["scenes"]) == 0
    assert calls == [["demo"], ["scenes"]]


def test_demo_is_compare_wheel_with_its_defaults(monkeypatch, tmp_path):
    seen = []
    monkeypatch.setattr(lcpdyn.cli, "_compare", lambda args: seen.append(args) or 0)
    assert main(["demo", "--out-dir", str(tmp_path / "r"), "--quiet"]) == 0
    compare = lcpdyn.cli._parser().parse_args(["compare", "wheel"])
    (demo,) = seen
    options = set(vars(compare)) - {"command", "out_dir", "quiet"}
    assert options >= {"scene", "reference_dt", "reference", "position_update", "set"}
    for key in options:  # every option of compare, so a new one cannot be missing from the demo's
        assert getattr(demo, key) == getattr(compare, key), key
    assert demo.out_dir == str(tmp_path / "r") and demo.quiet
    assert lcpdyn.cli._parser().parse_args(["demo"]).out_dir == compare.out_dir == "results"


def test_every_option_of_every_command_states_its_default():
    parser = lcpdyn.cli._parser()
    commands = subparsers(parser)
    assert set(commands) == set(COMMANDS)
    for name, sub in commands.items():
        formatter = sub._get_formatter()
        for action in sub._actions:
            if not action.option_strings or isinstance(action, (argparse._HelpAction, argparse._StoreTrueAction)):
                continue
            text = formatter._expand_help(action)
            assert "(default" in text, (name, action.option_strings, text)


def test_help_lists_the_defaults(capsys):
    run = help_text(["run"], capsys)
    for shown in (
        "(default: regularized)",
        "(default: symplectic)",
        "(default: warn)",
        "(default: 0.001)",
        "(default: 1)",
        "(default: the scene's dt)",
        "(default: the scene's t_end",
    ):
        assert shown in run, shown
    compare = help_text(["compare"], capsys)
    assert "(default: 0.0001)" in compare and "(default: both)" in compare and "(default: results)" in compare
    assert "(default: results)" in help_text(["demo"], capsys)
    assert "(default: results)" in help_text(["reproduce"], capsys)
    assert "speed=0:1:101" in help_text(["stability"], capsys)


def test_help_lists_every_choice_from_the_tables_the_code_uses(monkeypatch, capsys, tmp_path):
    import solvers

    run = help_text(["run"], capsys)
    for model in lcpdyn.friction.MODELS:
        assert model in run, model
    assert "continuous" in run
    for method in solvers.METHODS:
        assert method in run, method
    compare = help_text(["compare"], capsys)
    for name in scenes.SCENES:
        assert name in run and name in compare, name
    stability = help_text(["stability"], capsys)
    for name in scenes.STABILITY:
        assert name in stability, name
    reproduce = help_text(["reproduce"], capsys)
    for name in scenes.REPORTS:
        assert name in reproduce, name
    assert "half-car" in reproduce
    # from the registries, not a copy: a model or report added there shows up once the command
    # line's catalogue is built again (as a change of the sources does: test_cli_catalogue.py)
    monkeypatch.setitem(lcpdyn.friction.MODELS, "made-up-model", lcpdyn.friction.Box)
    monkeypatch.setitem(scenes.REPORTS, "made-up-report", scenes.half_car)
    monkeypatch.setenv("LCPDYN_CACHE", str(tmp_path))
    monkeypatch.setattr(lcpdyn.cli_catalogue, "_LOADED", {})
    assert "made-up-model" in help_text(["run"], capsys)
    assert "made-up-report" in help_text(["reproduce"], capsys)


def test_run_accepts_continuous_friction(tmp_path, capsys):
    out = tmp_path / "continuous.npz"
    code, stdout, stderr = run_cli(puck_argv(out, friction="continuous"), capsys)
    assert code == 0, stderr
    assert load(out).parameters["friction"]["model"] == "continuous"


def all_scene_parameters():
    """(scene, kind, parameter, default) of every run scene's DEFAULTS and every stability scene's
    linearization parameters."""
    out = []
    for name, module in scenes.SCENES.items():
        out += [(name, "run", key, value) for key, value in module.DEFAULTS.items()]
    for name, module in scenes.STABILITY.items():
        out += [(name, "stability", key, value) for key, value in module.system().parameters.items()]
    return out


def test_every_parameter_of_every_scene_has_a_unit():
    missing = sorted({(name, key) for name, _, key, _ in all_scene_parameters() if key not in PARAMETER_UNITS})
    assert not missing, f"add these to scenes.scene.PARAMETER_UNITS: {missing}"
    assert all(isinstance(unit, str) and unit for unit in PARAMETER_UNITS.values())
    listed = {(name, kind, key) for name, kind, key, _ in all_scene_parameters()}
    assert listed == {
        (name, kind, key)
        for name in {*scenes.SCENES, *scenes.STABILITY}
        for kind, parameters in lcpdyn.cli_catalogue.catalogue()["scenes"][name]["parameters"]
        for key, _, _ in parameters
    }


def test_scenes_lists_every_parameter_with_its_default_and_unit(capsys):
    code, out, err = run_cli(["scenes"], capsys)
    assert code == 0, err
    blocks = scene_blocks(out)
    assert set(blocks) == {*scenes.SCENES, *scenes.STABILITY}
    for name, kind, key, value in all_scene_parameters():
        shown = f"{key} = {lcpdyn.cli_catalogue._text(value)} [{PARAMETER_UNITS[key]}]"
        assert shown in blocks[name][1], (name, shown)
        assert f"{kind}:" in blocks[name][1]
    assert "[?]" not in out
    assert "dt = 0.001 [s]" in blocks["wheel"][1] and "theta_deg = 20 [deg]" in blocks["wheel"][1]


@pytest.mark.parametrize("name", ["wheel", "rolling-disk", "swivel-shimmy", "half-car"])
def test_scenes_scene_shows_one_scene_in_detail(name, capsys):
    code, out, err = run_cli(["scenes", name], capsys)
    assert code == 0, err
    assert out.startswith(name)
    module = scenes.SCENES.get(name) or scenes.STABILITY[name]
    assert module.__doc__.strip().splitlines()[0] in out
    rows = {tuple(line.split()) for line in out.splitlines() if line.startswith("  ")}
    for scene, _kind, key, value in all_scene_parameters():
        if scene == name:
            assert (key, lcpdyn.cli_catalogue._text(value), *PARAMETER_UNITS[key].split()) in rows, (key, value)
    assert ("lcpdyn run " + name in out) == (name in scenes.SCENES)
    assert ("lcpdyn stability " + name in out) == (name in scenes.STABILITY)


def test_scenes_with_an_unknown_scene_exits_2(capsys):
    code, _, err = run_cli(["scenes", "no-such-scene"], capsys)
    assert code == 2 and err.startswith("lcpdyn: ") and "no-such-scene" in err and "half-car" in err


def test_stability_prints_the_critical_value_with_its_unit(tmp_path, capsys):
    """The rolling disk's critical speed 1/sqrt(3) (Schwab–Meijaard 2003 Sec. 3.2), found between
    the sweep's values, printed with its unit and written to the JSON."""
    out = tmp_path / "roots.json"
    code, stdout, err = run_cli(["stability", "rolling-disk", "--param", "speed=0.5:0.65:4", "--out", str(out)], capsys)
    assert code == 0, err
    match = re.search(r"critical speed = ([0-9.eE+-]+) m/s", stdout)
    assert match, stdout
    assert float(match.group(1)) == pytest.approx(1 / math.sqrt(3), abs=5e-3)
    assert "unstable below" in stdout
    data = json.loads(out.read_text())
    (critical,) = data["critical_values"]
    assert critical["value"] == pytest.approx(float(match.group(1)), rel=1e-5)
    assert data["units"] == {"speed": "m/s"}
    assert f"wrote {out}" in stdout


def fail_if_run(monkeypatch):
    """Any simulation, comparison, sweep or report started fails the test."""

    def started(*args, **kwargs):
        raise AssertionError("a run started before the output paths were checked")

    monkeypatch.setattr(lcpdyn.stepper.Simulation, "run", started)
    monkeypatch.setattr(lcpdyn.stepper.Simulation, "__init__", started)
    monkeypatch.setattr(lcpdyn.compare, "compare", started)
    monkeypatch.setattr(lcpdyn.stability, "root_locus", started)
    for module in scenes.REPORTS.values():
        monkeypatch.setattr(module, "report", started)


BAD_OUTPUT = {
    "--out suffix .txt": (["run", "puck", "--out", "{d}/x.txt"], "x.txt"),
    "--out without suffix": (["run", "puck", "--out", "{d}/x"], "no suffix"),
    "--out .npy": (["run", "puck", "--out", "{d}/x.npy"], ".npy"),
    "--out missing directory": (["run", "puck", "--out", "{d}/missing/x.npz"], "does not exist"),
    "--out a directory": (["run", "puck", "--out", "{d}/dir.npz"], "is a directory"),
    "--out under a file": (["run", "puck", "--out", "{d}/file.npz/x.npz"], "is not a directory"),
    "--plot suffix": (["run", "puck", "--out", "{d}/x.npz", "--plot", "{d}/x.png.txt"], "x.png.txt"),
    "--plot without suffix": (["run", "puck", "--out", "{d}/x.npz", "--plot", "{d}/x"], "--plot"),
    "--plot missing directory": (["run", "puck", "--out", "{d}/x.npz", "--plot", "{d}/missing/x.png"], "missing"),
    "stability --out .txt": (["stability", "rolling-disk", "--out", "{d}/roots.txt"], "roots.txt"),
    "stability --plot missing directory": (["stability", "rolling-disk", "--plot", "{d}/missing/r.png"], "missing"),
    "compare --out-dir parent missing": (["compare", "wheel", "--out-dir", "{d}/missing/results"], "missing"),
    "compare --out-dir a file": (["compare", "wheel", "--out-dir", "{d}/file.npz"], "not a directory"),
    "demo --out-dir parent missing": (["demo", "--out-dir", "{d}/missing/results"], "missing"),
    "reproduce --out-dir a file": (["reproduce", "half-car", "--out-dir", "{d}/file.npz"], "not a directory"),
}


@pytest.mark.parametrize("argv, culprit", list(BAD_OUTPUT.values()), ids=list(BAD_OUTPUT))
def test_output_paths_are_checked_before_any_run(argv, culprit, tmp_path, monkeypatch, capsys):
    (tmp_path / "dir.npz").mkdir()
    (tmp_path / "file.npz").write_bytes(b"")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    fail_if_run(monkeypatch)
    code, stdout, stderr = run_cli(
        [a.format(d=tmp_path) for a in argv] + ["--quiet"] * (argv[0] in ("run", "compare", "demo")), capsys
    )
    assert code == 2, (code, stderr)
    assert stderr.startswith("lcpdyn: ") and culprit in stderr, stderr
    assert len(stderr.strip().splitlines()) == 1 and "Traceback" not in stderr
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # nothing written, nothing created
    assert stdout == ""


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_output_to_a_read_only_directory_exits_2_before_the_run(tmp_path, monkeypatch, capsys):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        fail_if_run(monkeypatch)
        code, _, stderr = run_cli(puck_argv(locked / "x.npz"), capsys)
        assert code == 2 and "not writable" in stderr
        code, _, stderr = run_cli(["compare", "wheel", "--out-dir", str(locked / "r"), "--quiet"], capsys)
        assert code == 2 and "not writable" in stderr
    finally:
        locked.chmod(0o755)


@pytest.mark.parametrize("name", ["run.npz", "RUN.NPZ", "with.dots.npz"])
def test_run_writes_exactly_the_name_given_and_reports_it(name, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, stdout, stderr = run_cli(puck_argv(name), capsys)
    assert code == 0, stderr
    assert sorted(os.listdir(tmp_path)) == [name]  # no name.npz.npz, no temporary left
    (line,) = [line for line in stdout.splitlines() if line.startswith("wrote ")]
    reported = line[len("wrote ") :].rsplit(" (", 1)[0]
    assert os.path.samefile(reported, tmp_path / name)
    assert load(tmp_path / name).t.shape == (STEPS,)


def test_run_plot_is_written_under_exactly_its_name(tmp_path, capsys):
    out, plot = tmp_path / "p.npz", tmp_path / "p.figure.svg"
    code, stdout, stderr = run_cli(puck_argv(out, "--plot", str(plot)), capsys)
    assert code == 0, stderr
    assert sorted(os.listdir(tmp_path)) == ["p.figure.svg", "p.npz"]
    assert f"wrote {plot}" in stdout and plot.read_bytes().lstrip().startswith(b"<?xml")


def test_run_needs_a_scene_and_an_out(tmp_path, capsys):
    code, _, stderr = run_cli(["run", "--out", str(tmp_path / "x.npz"), "--quiet"], capsys)
    assert code == 2 and "SCENE" in stderr
    code, _, stderr = run_cli(["run", "puck", "--quiet"], capsys)
    assert code == 2 and "--out" in stderr


@pytest.mark.parametrize("value", ["0", "-3"])
def test_record_every_below_1_exits_2(value, tmp_path, capsys):
    code, _, stderr = run_cli(puck_argv(tmp_path / "x.npz", "--record-every", value), capsys)
    assert code == 2 and "--record-every" in stderr and value in stderr
    assert not (tmp_path / "x.npz").exists()


RESUME_CONFLICTS = {
    "a scene": (["puck"], "SCENE"),
    "--set": (["--set", "mu=0.2"], "--set"),
    "--friction": (["--friction", "box"], "--friction"),
    "--dt": (["--dt", "1e-4"], "--dt"),
    "--method": (["--method", "lemke"], "--method"),
    "--record-every": (["--record-every", "2"], "--record-every"),
    "--energy-check": (["--energy-check", "off"], "--energy-check"),
    "--out": (["--out", "{d}/other.npz"], "--out"),
}


@pytest.mark.parametrize("extra, culprit", list(RESUME_CONFLICTS.values()), ids=list(RESUME_CONFLICTS))
def test_resume_with_scene_options_exits_2(extra, culprit, tmp_path, monkeypatch, capsys):
    fail_if_run(monkeypatch)
    path = tmp_path / "run.h5"
    path.write_bytes(b"")
    argv = ["run", "--resume", str(path), "--t-end", "1", "--quiet", *[a.format(d=tmp_path) for a in extra]]
    code, _, stderr = run_cli(argv, capsys)
    assert code == 2 and stderr.startswith("lcpdyn: ") and culprit in stderr and "--resume" in stderr, stderr


def test_resume_needs_t_end_and_an_existing_h5(tmp_path, monkeypatch, capsys):
    fail_if_run(monkeypatch)
    h5, npz = tmp_path / "run.h5", tmp_path / "run.npz"
    h5.write_bytes(b"")
    npz.write_bytes(b"")
    code, _, stderr = run_cli(["run", "--resume", str(h5), "--quiet"], capsys)
    assert code == 2 and "--t-end" in stderr
    code, _, stderr = run_cli(["run", "--resume", str(npz), "--t-end", "1", "--quiet"], capsys)
    assert code == 2 and ".h5" in stderr
    code, _, stderr = run_cli(["run", "--resume", str(tmp_path / "none.h5"), "--t-end", "1", "--quiet"], capsys)
    assert code == 2 and "no such file" in stderr


# --- the engine side: HDF5 streaming, --record-every, --resume, signals --------------------------
@ENGINE
def test_run_streams_an_h5_and_records_every_kth_step(tmp_path, capsys):
    out = tmp_path / "puck.h5"
    code, stdout, stderr = run_cli(puck_argv(out, "--record-every", "7"), capsys)
    assert code == 0, stderr
    assert sorted(os.listdir(tmp_path)) == ["puck.h5"]
    assert f"wrote {out}" in stdout
    trajectory = load(out)
    kept = [i for i in range(STEPS) if (i + 1) % 7 == 0] + ([STEPS - 1] if STEPS % 7 else [])
    np.testing.assert_allclose(trajectory.t, (np.array(kept) + 1) * 1e-3, rtol=1e-12)
    assert trajectory.parameters["record_every"] == 7
    assert trajectory.parameters["status"] == "completed"
    assert trajectory.parameters["scene"]["name"] == "puck"


@ENGINE
def test_resume_continues_a_run_in_its_file_bit_for_bit(tmp_path, capsys):
    whole, part = tmp_path / "whole.h5", tmp_path / "part.h5"
    assert run_cli(puck_argv(whole, "--set", "heading_deg=40"), capsys)[0] == 0
    argv = puck_argv(part, "--set", "heading_deg=40")
    argv[argv.index("--t-end") + 1] = "0.02"
    assert run_cli(argv, capsys)[0] == 0
    assert load(part).t.shape == (20,)
    code, stdout, stderr = run_cli(["run", "--resume", str(part), "--t-end", str(T_END), "--quiet"], capsys)
    assert code == 0, stderr
    assert f"wrote {part} ({STEPS} steps)" in stdout
    a, b = load(whole), load(part)
    for name in a.arrays:
        np.testing.assert_array_equal(b.arrays[name], a.arrays[name], err_msg=name)
    assert b.parameters["status"] == "completed" and b.parameters["scene"]["heading_deg"] == 40.0


def interrupt_at_step(monkeypatch, signum, at=10):
    """The process sends itself ``signum`` during step ``at`` of a run."""
    original = lcpdyn.stepper.Simulation.step
    calls = {"n": 0}

    def step(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == at:
            os.kill(os.getpid(), signum)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(lcpdyn.stepper.Simulation, "step", step)


@ENGINE
@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
@pytest.mark.parametrize("suffix", [".npz", ".h5"])
def test_a_signal_saves_the_steps_done_and_exits_128_plus_signal(signum, code, suffix, tmp_path, monkeypatch, capsys):
    out = tmp_path / f"stopped{suffix}"
    interrupt_at_step(monkeypatch, signum)
    got, stdout, stderr = run_cli(puck_argv(out), capsys)
    assert got == code, stderr
    assert "Traceback" not in stderr
    (line,) = stderr.strip().splitlines()
    name = signal.Signals(signum).name
    assert line.startswith(f"lcpdyn: interrupted by {name} at t = ") and "(status 'interrupted')" in line
    assert str(out) in line
    assert ("continue with: lcpdyn run --resume" in line) == (suffix == ".h5")
    assert sorted(os.listdir(tmp_path)) == [out.name]
    trajectory = load(out)
    assert trajectory.parameters["status"] == "interrupted"
    assert 0 < trajectory.t.shape[0] < STEPS
    assert re.search(r"; (\d+) steps saved", line).group(1) == str(trajectory.t.shape[0])


@ENGINE
@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_python_dash_m_lcpdyn_run_stops_on_a_signal_with_its_file_saved(signum, code, tmp_path):
    """The brief's check, end to end: a long run in a subprocess, stopped once its .h5 holds steps."""
    out = tmp_path / "long.h5"
    process = subprocess.Popen(
        [sys.executable, "-m", "lcpdyn", "run", "sliding-block", "--t-end", "1000", "--out", str(out)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and process.poll() is None:
            try:
                if out.exists() and load(out).t.shape[0] > 0:
                    break
            except Exception:  # being written: try again
                pass
            time.sleep(0.5)
        assert process.poll() is None, process.communicate()
        process.send_signal(signum)
        stdout, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == code, stderr
    assert "Traceback" not in stderr
    assert f"interrupted by {signal.Signals(signum).name}" in stderr and "--resume" in stderr
    trajectory = load(out)
    assert trajectory.parameters["status"] == "interrupted"
    assert trajectory.t.shape[0] > 0 and trajectory.t[-1] < 1000
    assert trajectory.parameters["scene"]["name"] == "sliding-block"


def test_a_run_that_fails_inside_compare_is_reported_without_a_traceback(monkeypatch, tmp_path, capsys):
    """compare (and demo, stability, reproduce) run simulations themselves: a SimulationError
    there is one line naming the failure and exit code 1, not a traceback."""
    from lcpdyn.stepper import Simulation, SimulationError

    def failing_run(self, t_end, progress=False, **kwargs):
        raise SimulationError("judice-pires failed (MAX_ITERATIONS: test)", 7, 0.007)

    monkeypatch.setattr(Simulation, "run", failing_run)
    code, _, stderr = run_cli(["compare", "sliding-block", "--out-dir", str(tmp_path), "--quiet"], capsys)
    assert code == 1
    assert stderr.strip() == (
        "lcpdyn: compare: simulation stopped: step 7 (t = 0.007 s): judice-pires failed (MAX_ITERATIONS: test)"
    )


def test_run_compiled_loop_flag_runs_the_compiled_loop_and_refuses_a_scene_it_cannot(tmp_path, capsys):
    """``lcpdyn run ... --compiled-loop [auto|on|off]``: with ``on`` (or the bare flag) the run
    is the compiled loop's (recorded in the file's parameters), its motion the ordinary step's
    (``off``) to 1e-9; without the flag (``auto``) a scene the loop takes runs in it, the same
    file bit for bit, and one it cannot take (the rolling disk's ideal rolling rows) runs the
    ordinary step; with ``on`` that scene is a usage error naming why, nothing run; --resume
    takes the choice from the file, not from the flag."""
    argv = ["run", "sliding-sphere", "--t-end", "0.05", "--quiet"]
    code, _, err = run_cli([*argv, "--compiled-loop", "--out", str(tmp_path / "c.npz")], capsys)
    assert code == 0, err
    code, _, err = run_cli([*argv, "--compiled-loop", "off", "--out", str(tmp_path / "o.npz")], capsys)
    assert code == 0, err
    code, _, err = run_cli([*argv, "--out", str(tmp_path / "a.npz")], capsys)
    assert code == 0, err
    compiled, ordinary, auto = load(tmp_path / "c.npz"), load(tmp_path / "o.npz"), load(tmp_path / "a.npz")
    assert compiled.parameters["compiled_loop"] is True and ordinary.parameters["compiled_loop"] is False
    assert auto.parameters == compiled.parameters
    np.testing.assert_array_equal(auto.velocity, compiled.velocity)
    np.testing.assert_allclose(compiled.velocity, ordinary.velocity, rtol=0, atol=1e-9)
    code, _, err = run_cli(
        ["run", "rolling-disk", "--t-end", "0.002", "--quiet", "--out", str(tmp_path / "r.npz")], capsys
    )
    assert code == 0, err
    assert load(tmp_path / "r.npz").parameters["compiled_loop"] is False
    code, _, err = run_cli(
        ["run", "rolling-disk", "--t-end", "0.01", "--compiled-loop", "--quiet", "--out", str(tmp_path / "d.npz")],
        capsys,
    )
    assert code == 2 and "cannot run in the compiled loop" in err and "bilateral rows" in err
    assert not (tmp_path / "d.npz").exists()
    code, _, err = run_cli(["run", "--resume", str(tmp_path / "x.h5"), "--t-end", "1", "--compiled-loop"], capsys)
    assert code == 2 and "--compiled-loop cannot be combined" in err


@pytest.mark.parametrize("suffix", [".npz", ".h5"])
def test_run_onto_an_existing_result_needs_overwrite(tmp_path, capsys, suffix):
    """`run --out FILE` where FILE exists: exit 2 naming the file and --overwrite, before any step,
    the file untouched; with --overwrite the run replaces it; --overwrite cannot go with --resume."""
    out = tmp_path / f"result{suffix}"
    argv = ["run", "puck", "--t-end", "0.01", "--quiet", "--out", str(out)]
    assert run_cli(argv, capsys)[0] == 0
    before = out.read_bytes()
    code, _, stderr = run_cli(argv, capsys)
    assert code == 2 and str(out) in stderr and "--overwrite" in stderr and "Traceback" not in stderr
    assert out.read_bytes() == before
    assert run_cli(argv + ["--overwrite"], capsys)[0] == 0
    assert load(out).parameters["status"] == "completed"
    if suffix == ".h5":
        code, _, stderr = run_cli(["run", "--resume", str(out), "--t-end", "0.02", "--overwrite"], capsys)
        assert code == 2 and "--overwrite" in stderr


def test_scenes_lists_the_stability_parameters_without_building_a_system(monkeypatch, capsys, tmp_path):
    """`lcpdyn scenes` took 16 s: it built every stability system to read its parameters, and the
    wheelset's solves its centred contact first (11 s; issue 46, item 6). Each stability scene
    states them (SYSTEM_PARAMETERS, what its system() takes), and the catalogue the listing reads
    is built from that."""
    import scenes

    for name, module in scenes.STABILITY.items():
        assert module.system().parameters == module.SYSTEM_PARAMETERS, name

    def refuse():
        raise AssertionError("a system was built")

    for module in scenes.STABILITY.values():
        monkeypatch.setattr(module, "system", refuse)
    built = lcpdyn.cli_catalogue.build()
    for name in scenes.STABILITY:
        listed = dict(built["scenes"][name]["parameters"])["stability"]
        expected = scenes.STABILITY[name].SYSTEM_PARAMETERS
        assert listed == [
            [key, lcpdyn.cli_catalogue._text(value), PARAMETER_UNITS[key]] for key, value in expected.items()
        ]
    monkeypatch.setenv("LCPDYN_CACHE", str(tmp_path))
    monkeypatch.setattr(lcpdyn.cli_catalogue, "_LOADED", {})
    code, stdout, _ = run_cli(["scenes"], capsys)
    assert code == 0 and "wheelset-hunting" in stdout and "yaw_stiffness" in stdout


@pytest.mark.parametrize("signal_number", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_the_command_line_starts_exits_cleanly(monkeypatch, capsys, signal_number):
    """Ctrl-C in the first second or two, while the parser imports the scenes, gave a raw
    KeyboardInterrupt traceback (the parser was built outside the handler; issue 46, item 3):
    now the signal is recorded while the command line starts, and the command ends before any
    work with one line and the signal's exit code, as a signal during a run gives."""
    import lcpdyn.cli as cli

    real = cli._parser

    def interrupted():
        os.kill(os.getpid(), signal_number)  # recorded: the parser is built all the same
        return real()

    def no_work(args):
        raise AssertionError("the command ran after the signal")

    monkeypatch.setattr(cli, "_scenes", no_work)

    # Python's own Ctrl-C handler, as an interactive start gives it: a suite started in the
    # background of a non-interactive shell inherits SIGINT ignored, and then no Ctrl-C reaches
    # the command line at all (lcpdyn leaves an ignored SIGINT ignored, as its parent asked)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    monkeypatch.setattr(cli, "_parser", interrupted)
    try:
        code, _, stderr = run_cli(["scenes"], capsys)
    finally:
        signal.signal(signal.SIGINT, previous)

    name = "SIGINT" if signal_number == signal.SIGINT else "SIGTERM"
    assert code == 128 + signal_number and stderr.strip() == f"lcpdyn: interrupted by {name}"


@pytest.mark.parametrize(
    "argv,culprit",
    [
        (["run", "wheel", "--dt", "-1e-3"], "lcpdyn: --dt must be > 0, got -0.001"),
        (["run", "wheel", "--dt", "0"], "lcpdyn: --dt must be > 0, got 0.0"),
        (["run", "wheel", "--dt", "nan"], "lcpdyn: --dt must be finite, got nan"),
        (["compare", "wheel", "--reference-dt", "0"], "lcpdyn: --reference-dt must be > 0, got 0.0"),
        (["compare", "wheel", "--reference-dt", "-1e-4"], "lcpdyn: --reference-dt must be > 0, got -0.0001"),
    ],
)
def test_a_step_that_is_not_positive_is_refused_by_its_option_before_any_work(tmp_path, capsys, argv, culprit):
    """A negative step with an exponent used to read as an option of its own ("expected one
    argument"), and --reference-dt 0 said "dt must be > 0" after making the output folder."""
    out_dir = tmp_path / "comparison"
    extra = ["--out", str(tmp_path / "run.h5")] if argv[0] == "run" else ["--out-dir", str(out_dir)]
    code, _, err = run_cli([*argv, *extra], capsys)
    assert code == 2 and err.startswith(culprit), err
    assert not out_dir.exists() and not (tmp_path / "run.h5").exists()


def test_negative_values_are_joined_to_their_option_only():
    from lcpdyn.cli_parser import join_negative_values

    assert join_negative_values(["run", "x", "--dt", "-1e-3", "--quiet"]) == ["run", "x", "--dt=-1e-3", "--quiet"]
    assert join_negative_values(["--t-end", "-2", "--set", "mu=-1"]) == ["--t-end=-2", "--set", "mu=-1"]
    assert join_negative_values(["--quiet", "--out", "a.h5"]) == ["--quiet", "--out", "a.h5"]
    assert join_negative_values(["--friction", "-box"]) == ["--friction", "-box"]  # not a number: argparse's to judge


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_out_onto_a_fifo_is_refused_and_onto_a_link_writes_its_target(tmp_path, capsys):
    """``--out`` onto a FIFO was replaced by a regular file, and onto a symbolic link replaced the
    link by a file: the FIFO is now refused by name, and a link's target is the file written (the
    link stays); a link to a file of another kind is refused."""
    fifo = tmp_path / "pipe.npz"
    os.mkfifo(fifo)
    code, _, err = run_cli(puck_argv(fifo, "--overwrite"), capsys)
    assert code == 2 and "is a FIFO, not a regular file" in err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    target, link = tmp_path / "kept" / "run.npz", tmp_path / "link.npz"
    target.parent.mkdir()
    target.write_bytes(b"")
    link.symlink_to(target)
    assert run_cli(puck_argv(link, "--overwrite"), capsys)[0] == 0
    assert link.is_symlink() and load(link).t.size > 1 and load(target).t.size == load(link).t.size
    other = tmp_path / "other.npz"
    other.symlink_to(tmp_path / "elsewhere.h5")
    code, _, err = run_cli(puck_argv(other, "--overwrite"), capsys)
    assert code == 2 and "whose suffix is not '.npz'" in err
