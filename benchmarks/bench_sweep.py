"""The 100-run mu x theta wheel sweep (issue 16): lcpdyn's sweep driver against MuJoCo's serial
time for the same 100 runs, measured in the same run.

The runs: the Peiret 2016 wheel (scenes.wheel, Table 1) for 4 s at h = 1 ms under the
regularized model, mu in 10 values from 0.1 to 0.55 x theta in 10 values from 5 to 32 deg; no
reference (``reference=None``: the runs are timed and checked, not scored), so what is measured
is the runs.

lcpdyn (:func:`lcpdyn.sweep.sweep`):

* ``serial``: every run in this process (``workers=0``), after one warm-up run (its compile time
  reported apart);
* ``cluster``: the embedded local Dask cluster, one single-threaded worker process per CPU,
  started before the clock (its start-up reported apart), after a first cluster has filled JAX's
  persistent compilation cache (its time reported apart): each worker's first run still traces
  the model and loads the compiled code (the records' ``compilations``), counted in the sweep
  time as a user sees it on a second sweep;
* growth: the cluster sweep over 10, 30 and 100 runs, and the least-squares exponent of wall time
  against runs.

MuJoCo (``pip install ".[bench]"``; skipped with a note if absent): the same wheel as a thin
cylinder (radius 0.5 m, half-thickness 5 mm, axis along body y) with the same mass, inertia,
initial pose and velocities, friction mu (no torsional or rolling friction), elliptic cone, h =
1 ms, default solver; 4,000 ``mj_step`` per run, serially, in a Python loop -- the way a user
steps MuJoCo from Python. MuJoCo's contact is soft (its own friction model), so only costs are
compared, not trajectories.

Usage: ``python benchmarks/bench_sweep.py [--quick] [--out results/bench_sweep.json]`` (also
writes ``.txt``). ``--quick``: 2 s runs and 10/30 runs only.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def grid(runs: int) -> dict:
    """A mu x theta grid of ``runs`` points (10 x 10 for 100; the first runs of it for fewer)."""
    side = math.ceil(math.sqrt(runs))
    mu = np.round(np.linspace(0.1, 0.55, side), 6).tolist()
    theta = np.round(np.linspace(5.0, 32.0, math.ceil(runs / side)), 6).tolist()
    return {"mu": mu, "theta_deg": theta}


def lcpdyn_sweep(runs: int, t_end: float, workers: int, client=None) -> dict:
    from lcpdyn.sweep import sweep

    start = time.perf_counter()
    table = sweep(
        "wheel", grid=grid(runs), friction=["regularized"], dt=[1e-3], t_end=t_end, reference=None,
        workers=workers, client=client, progress=False,
    )  # fmt: skip
    wall = time.perf_counter() - start
    status = table["status"].values.ravel()
    steps = int(table["steps"].values.ravel()[0])
    run_wall = table["wall_s"].values.ravel()
    compiled = table["compilations"].values.ravel() > 0
    return {
        "runs": int(status.size),
        "completed": int(np.sum(status == "completed")),
        "wall_s": wall,
        "steps_per_run": steps,
        "run_wall_median_s": float(np.median(run_wall)),
        "run_wall_median_without_compilation_s": float(np.median(run_wall[~compiled])) if (~compiled).any() else None,
        "runs_that_compiled": int(compiled.sum()),
        "us_per_step_median": 1e6 * float(np.median(run_wall[~compiled] if (~compiled).any() else run_wall)) / steps,
        "fallback_steps": int(table["fallback_steps"].values.sum()),
    }


def mjcf(scene) -> str:
    p = scene.parameters
    body = scene.model.bodies[0]
    x, y, z = (float(c) for c in body.position)
    half = 0.005
    z += half * math.sin(math.radians(p["theta_deg"]))  # the rim's edge, not its mid-plane, on the ground
    w, a, b, c = (float(v) for v in body.orientation)
    inertia = " ".join(f"{v:.17g}" for v in body.inertia_matrix.diagonal())
    return (
        f'<mujoco><option timestep="1e-3" gravity="0 0 {-p["gravity"]}" cone="elliptic"/>'
        f'<worldbody><geom type="plane" size="0 0 1" friction="{p["mu"]} 0 0"/>'
        f'<body name="wheel" pos="{x} {y} {z}" quat="{w} {a} {b} {c}"><freejoint/>'
        f'<inertial pos="0 0 0" mass="{p["mass"]}" diaginertia="{inertia}"/>'
        f'<geom type="cylinder" size="{p["radius"]} {half}" zaxis="0 1 0" mass="0" friction="{p["mu"]} 0 0"/>'
        "</body></worldbody></mujoco>"
    )


def mujoco_serial(runs: int, t_end: float) -> dict | None:
    try:
        import mujoco
    except ImportError:
        return None
    from lcpdyn.rotation import np_rotation_matrix
    from scenes import wheel

    points = [(mu, theta) for theta in grid(runs)["theta_deg"] for mu in grid(runs)["mu"]][:runs]
    steps = round(t_end / 1e-3)
    build = run_time = 0.0
    finite = 0
    for mu, theta in points:
        start = time.perf_counter()
        scene = wheel.build(mu=mu, theta_deg=theta, t_end=t_end)
        model = mujoco.MjModel.from_xml_string(mjcf(scene))
        data = mujoco.MjData(model)
        body = scene.model.bodies[0]
        R = np_rotation_matrix(body.orientation)
        data.qvel[:3] = body.velocity
        data.qvel[3:] = R.T @ np.asarray(body.angular_velocity)  # MuJoCo's free joint: angular velocity in body frame
        middle = time.perf_counter()
        for _ in range(steps):
            mujoco.mj_step(model, data)
        end = time.perf_counter()
        build += middle - start
        run_time += end - middle
        finite += bool(np.all(np.isfinite(data.qpos)))
    return {
        "runs": runs,
        "version": mujoco.__version__,
        "steps_per_run": steps,
        "wall_s": run_time,
        "build_s": build,
        "us_per_step": 1e6 * run_time / (runs * steps),
        "finite_runs": finite,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 s runs, 10 and 30 runs")
    parser.add_argument("--out", default=str(ROOT / "results" / "bench_sweep.json"))
    args = parser.parse_args(argv)
    t_end = 2.0 if args.quick else 4.0
    sizes = (10, 30) if args.quick else (10, 30, 100)
    workers = os.cpu_count() or 1
    from dask.distributed import Client, LocalCluster

    result = {
        "machine": {"cpus": workers, "python": platform.python_version(), "platform": platform.platform()},
        "t_end_s": t_end,
        "dt_s": 1e-3,
    }
    start = time.perf_counter()
    warm = lcpdyn_sweep(1, t_end, workers=0)
    result["serial_warm_up_s"] = time.perf_counter() - start
    result["serial"] = lcpdyn_sweep(sizes[-1], t_end, workers=0)
    result["cluster_start_s"], result["cluster"] = {}, {}
    start = time.perf_counter()  # a first cluster fills JAX's persistent compilation cache (lcpdyn.sweep)
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with Client(cluster) as client:
            lcpdyn_sweep(workers, t_end, workers=workers, client=client)
    result["cluster_warm_up_s"] = time.perf_counter() - start
    for runs in sizes:  # each size on a fresh cluster: its workers' compilation counted every time
        start = time.perf_counter()
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
        client.wait_for_workers(workers)
        result["cluster_start_s"][str(runs)] = time.perf_counter() - start
        with client, cluster:
            result["cluster"][str(runs)] = lcpdyn_sweep(runs, t_end, workers=workers, client=client)
    walls = [result["cluster"][str(n)]["wall_s"] for n in sizes]
    # the cost of one more run, past the fixed start-up (worker imports, tracing): the slope
    # between the two largest sizes
    result["cluster_marginal_s_per_run"] = (walls[-1] - walls[-2]) / (sizes[-1] - sizes[-2])
    result["cluster_growth_exponent"] = float(np.polyfit(np.log(sizes), np.log(walls), 1)[0])
    peer = mujoco_serial(sizes[-1], t_end)
    result["mujoco_serial"] = peer
    if peer is not None:
        ours = result["cluster"][str(sizes[-1])]["wall_s"]
        result["ratio_cluster_to_mujoco_serial"] = ours / peer["wall_s"]
        result["ratio_serial_to_mujoco_serial"] = result["serial"]["wall_s"] / peer["wall_s"]
        result["ratio_marginal_to_mujoco_per_run"] = result["cluster_marginal_s_per_run"] / (
            peer["wall_s"] / peer["runs"]
        )
    del warm
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    lines = [
        f"{sizes[-1]}-run mu x theta wheel sweep, {t_end:g} s runs at h = 1 ms (regularized), {workers} CPUs",
        f"lcpdyn serial (in-process): {result['serial']['wall_s']:.1f} s "
        f"({result['serial']['us_per_step_median']:.0f} us per step; warm-up run {result['serial_warm_up_s']:.1f} s)",
    ]
    for runs in sizes:
        entry = result["cluster"][str(runs)]
        lines.append(
            f"lcpdyn local cluster, {runs} runs: {entry['wall_s']:.1f} s ({entry['runs_that_compiled']} runs "
            f"compiled; median run {entry['run_wall_median_s']:.2f} s)"
        )
    start_up = max(result["cluster_start_s"].values())
    lines.append(f"cluster start-up (apart): {start_up:.1f} s at most; the first cluster, which fills the "
                 f"compilation cache: {result['cluster_warm_up_s']:.1f} s; growth exponent in runs "
                 f"{result['cluster_growth_exponent']:.2f}")  # fmt: skip
    if peer is None:
        lines.append("MuJoCo: not installed (pip install '.[bench]'); no ratio")
    else:
        lines.append(
            f"MuJoCo {peer['version']} serial: {peer['wall_s']:.2f} s ({peer['us_per_step']:.2f} us per step); "
            f"ratio lcpdyn cluster / MuJoCo serial = {result['ratio_cluster_to_mujoco_serial']:.1f}, "
            f"serial / serial = {result['ratio_serial_to_mujoco_serial']:.1f}; one more run on the cluster "
            f"{result['cluster_marginal_s_per_run']:.3f} s = "
            f"{result['ratio_marginal_to_mujoco_per_run']:.1f} MuJoCo runs"
        )
    text = "\n".join(lines)
    out.with_suffix(".txt").write_text(text + "\n")
    print(text)
    print(f"wrote {out} and {out.with_suffix('.txt')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
