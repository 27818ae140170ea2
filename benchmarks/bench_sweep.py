"""The 100-run mu x theta wheel sweep (issue 16): lcpdyn's sweep driver against MuJoCo's serial
time for the same 100 runs, measured in the same run.

The runs: the Peiret 2016 wheel (scenes.wheel, Table 1) for 4 s at h = 1 ms under the
regularized model, mu in 10 values from 0.1 to 0.55 x theta in 10 values from 5 to 32 deg; no
reference (``reference=None``: the runs are timed and checked, not scored), so what is measured
is the runs.

lcpdyn (:func:`lcpdyn.sweep.sweep`):

* ``serial``: every run in this process (``workers=0``), batched (:mod:`lcpdyn.batch`, the
  default) after a warm-up sweep of the same runs for 10 ms (it compiles the batch's call size;
  its time reported apart), and one by one (``batch=False``);
* ``batch``: :func:`lcpdyn.batch.run_batch` alone on 10, 100 and 1,000 wheels: us per
  wheel-step (compile apart), every step SOLVED, the difference from single runs, and the growth
  exponent in copies;
* ``cluster``: the embedded local Dask cluster, one single-threaded worker process per CPU,
  started before the clock (its start-up reported apart), after a first cluster has filled JAX's
  persistent compilation cache with 10 ms sweeps of every size (its time reported apart): each
  worker's first batch still traces the model and loads the compiled code (the records'
  ``compilations``), counted in the sweep time as a user sees it on a second sweep;
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

import mujoco_wheel  # noqa: E402  (benchmarks/, this script's folder)


def grid(runs: int) -> dict:
    """A mu x theta grid of ``runs`` points (10 x 10 for 100; the first runs of it for fewer)."""
    side = math.ceil(math.sqrt(runs))
    mu = np.round(np.linspace(0.1, 0.55, side), 6).tolist()
    theta = np.round(np.linspace(5.0, 32.0, math.ceil(runs / side)), 6).tolist()
    return {"mu": mu, "theta_deg": theta}


def lcpdyn_sweep(runs: int, t_end: float, workers: int, client=None, batch: bool = True) -> dict:
    from lcpdyn.sweep import sweep

    start = time.perf_counter()
    table = sweep(
        "wheel", grid=grid(runs), friction=["regularized"], dt=[1e-3], t_end=t_end, reference=None,
        workers=workers, client=client, progress=False, batch=batch,
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


def difference(a, b) -> float:
    """The largest difference of two trajectories' positions and velocities, relative to b's largest value."""
    return max(
        float(np.max(np.abs(getattr(a, name) - getattr(b, name))) / np.max(np.abs(getattr(b, name))))
        for name in ("position", "velocity")
    )


def batch_mode(sizes, t_end: float, checked: int = 8) -> dict:
    """lcpdyn.batch.run_batch on ``n`` wheels (mu x theta of :func:`grid`) for each n in
    ``sizes``: the models built apart, each call size compiled once before the clock (its time
    apart), then the batch timed (the median of repeats for the small sizes); us per wheel-step,
    every step SOLVED within its copy's tolerance, and the largest relative difference of
    ``checked`` copies' positions and velocities from their single runs (for the largest size
    also of those single runs from the ordinary step: the same rounding, amplified alike by the
    motion)."""
    from lcpdyn import compiled_loop
    from lcpdyn.batch import run_batch
    from scenes import wheel

    steps = round(t_end / 1e-3)

    def build(n):
        points = [(mu, theta) for theta in grid(n)["theta_deg"] for mu in grid(n)["mu"]][:n]
        return points, [
            wheel.build(mu=mu, theta_deg=theta).simulation("regularized", compiled_loop=True) for mu, theta in points
        ]

    out = {"t_end_s": t_end, "steps_per_run": steps, "sizes": {}}
    for n in sizes:
        start = time.perf_counter()
        points, sims = build(n)
        built = time.perf_counter() - start
        before = compiled_loop.COMPILATIONS[0]
        start = time.perf_counter()
        run_batch(build(n)[1], 0.002)  # compiles this size's calls (and the first, ordinary step)
        compile_s = time.perf_counter() - start
        compiled = compiled_loop.COMPILATIONS[0] - before
        walls = []
        for repeat in range(1 if n >= 1000 else 3):
            sims = sims if repeat == 0 else build(n)[1]
            start = time.perf_counter()
            runs = run_batch(sims, t_end)
            walls.append(time.perf_counter() - start)
        solved = all(
            run.completed and np.all(run.trajectory.solver_status == 0)
            and np.all(run.trajectory.solver_residual <= sim.tolerance)
            for run, sim in zip(runs, sims, strict=True)
        )  # fmt: skip
        worst = ordinary_worst = 0.0
        for k in np.linspace(0, n - 1, min(checked, n)).astype(int):
            mu, theta = points[k]
            scene = wheel.build(mu=mu, theta_deg=theta)
            single = scene.simulation("regularized", compiled_loop=True).run(t_end)
            worst = max(worst, difference(runs[k].trajectory, single))
            if n == max(sizes):  # the single run against the ordinary step: rounding the motion amplifies
                ordinary_worst = max(ordinary_worst, difference(single, scene.simulation("regularized").run(t_end)))
        wall = float(np.median(walls))
        out["sizes"][str(n)] = {
            "copies": n, "wall_s": wall, "walls_s": walls, "us_per_wheel_step": 1e6 * wall / (n * steps),
            "build_s": built, "compile_and_first_step_s": compile_s, "compilations": compiled,
            "all_steps_solved": bool(solved), "max_relative_difference_from_single_runs": worst,
            "single_runs_checked": int(min(checked, n)),
            "max_relative_difference_single_from_ordinary": ordinary_worst if n == max(sizes) else None,
        }  # fmt: skip
    walls = [out["sizes"][str(n)]["wall_s"] for n in sizes]
    out["growth_exponent"] = float(np.polyfit(np.log(sizes), np.log(walls), 1)[0])
    return out


def mujoco_serial(runs: int, t_end: float) -> dict | None:
    if not mujoco_wheel.available():
        return None
    from scenes import wheel

    points = [(mu, theta) for theta in grid(runs)["theta_deg"] for mu in grid(runs)["mu"]][:runs]
    steps = round(t_end / 1e-3)
    build = run_time = 0.0
    finite = 0
    for mu, theta in points:
        start = time.perf_counter()
        scene = wheel.build(mu=mu, theta_deg=theta, t_end=t_end)
        build += time.perf_counter() - start
        measured = mujoco_wheel.run(scene, steps)
        build += measured["build_s"]
        run_time += measured["wall_s"]
        finite += measured["finite"]
    return {
        "runs": runs,
        "version": measured["version"],
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
    warm = lcpdyn_sweep(sizes[-1], 0.01, workers=0)  # compiles the batch's call size of the timed sweep
    result["serial_warm_up_s"] = time.perf_counter() - start
    result["serial"] = lcpdyn_sweep(sizes[-1], t_end, workers=0)  # batched (the default)
    result["serial_one_by_one"] = lcpdyn_sweep(sizes[-1], t_end, workers=0, batch=False)
    result["cluster_start_s"], result["cluster"] = {}, {}
    start = time.perf_counter()  # a first cluster fills JAX's persistent compilation cache (lcpdyn.sweep)
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with Client(cluster) as client:
            for runs in sizes:  # the call sizes of every timed sweep into the persistent cache
                lcpdyn_sweep(runs, 0.01, workers=workers, client=client)
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
    result["batch"] = batch_mode((10, 100, 1000) if not args.quick else (10, 100), t_end)
    peer = mujoco_serial(sizes[-1], t_end)
    result["mujoco_serial"] = peer
    if peer is not None:
        ours = result["cluster"][str(sizes[-1])]["wall_s"]
        result["ratio_cluster_to_mujoco_serial"] = ours / peer["wall_s"]
        result["ratio_serial_to_mujoco_serial"] = result["serial"]["wall_s"] / peer["wall_s"]
        result["ratio_serial_one_by_one_to_mujoco_serial"] = result["serial_one_by_one"]["wall_s"] / peer["wall_s"]
        largest = result["batch"]["sizes"][max(result["batch"]["sizes"], key=int)]
        result["ratio_batch_step_to_mujoco_step"] = largest["us_per_wheel_step"] / peer["us_per_step"]
        result["ratio_marginal_to_mujoco_per_run"] = result["cluster_marginal_s_per_run"] / (
            peer["wall_s"] / peer["runs"]
        )
    del warm
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    lines = [
        f"{sizes[-1]}-run mu x theta wheel sweep, {t_end:g} s runs at h = 1 ms (regularized), {workers} CPUs",
        f"lcpdyn serial (in-process, batched): {result['serial']['wall_s']:.1f} s "
        f"({result['serial']['runs_that_compiled']} batch compiled; warm-up sweep {result['serial_warm_up_s']:.1f} s); "
        f"one by one: {result['serial_one_by_one']['wall_s']:.1f} s",
    ]
    for n, entry in result["batch"]["sizes"].items():
        lines.append(
            f"batch of {n} wheels: {entry['us_per_wheel_step']:.2f} us per wheel-step ({entry['wall_s']:.2f} s; "
            f"compile + first step apart {entry['compile_and_first_step_s']:.1f} s, build {entry['build_s']:.1f} s); "
            f"all steps SOLVED: {entry['all_steps_solved']}; largest relative difference from "
            f"{entry['single_runs_checked']} single runs {entry['max_relative_difference_from_single_runs']:.1e}"
            + (
                ""
                if (apart := entry["max_relative_difference_single_from_ordinary"]) is None
                else f" (those single runs from the ordinary step: {apart:.1e})"
            )
        )
    lines.append(f"batch growth exponent in copies: {result['batch']['growth_exponent']:.2f}")
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
            f"serial / serial = {result['ratio_serial_to_mujoco_serial']:.1f} (one by one "
            f"{result['ratio_serial_one_by_one_to_mujoco_serial']:.1f}); batch step / MuJoCo step = "
            f"{result['ratio_batch_step_to_mujoco_step']:.2f}; one more run on the cluster "
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
