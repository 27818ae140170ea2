"""Time of the Peiret 2016 wheel (Table 1) at 1 kHz under each friction model, against MuJoCo
stepping the same wheel in the same run, with the median per-step cost split into Jacobians,
assembly, solve, the rest of the step and recording.

Entries (each run simulates ``--t-end`` s, default the scene's 4 s = 4000 steps; every entry run
``--repeats`` times, interleaved: all entries once, then all again):
* ``regularized``, ``box``: the default options, i.e. the strategy's own choice -- the whole-run
  compiled loop (:mod:`lcpdyn.compiled_loop`: chunks of steps in one XLA call, every step still
  measured on the host), which takes this scene;
* ``regularized/ordinary-step``, ``box/ordinary-step`` (``compiled_loop=False``): one fused Numba
  call per step (assembly, Júdice–Pires pivoting and the residual check in one call);
* ``regularized/general-path`` (``fused=False``): the same steps with assembly and solve timed
  apart; ``polygonal`` (lemke), ``coulomb`` (our NSGS with exact local solves);
* peers measured in the same run: ``mujoco`` (MuJoCo stepping the wheel as a thin cylinder,
  ``benchmarks/mujoco_wheel.py``; installed by ``./dev.sh bench wheel``), ``regularized/siconos``
  (the same Eq. 30 problem through the Siconos route: Schur + box split + Siconos LCP Lemke) and
  ``coulomb/siconos-nsn-ac`` (the same Delassus problem through Siconos fc3d NSN_AC). Ratios ours
  / peer are reported; against MuJoCo as the whole run's wall and CPU time per step.

Reported per entry: median wall and CPU time of a run per simulated second and per step (over
repeats), median per-step total and per-phase medians over all steps of all repeats. Phases (see
``Simulation.run``): ``jacobians`` = the compiled JAX kinematics call, blocking on its outputs;
``assembly`` = friction block and Eq. 30 matrix (Schur elimination for coulomb); ``solve`` =
solver incl. the framework's residual check; ``rest`` = gap terms, position update, bookkeeping;
``record`` = storing the step. In the compiled loop, ``solve`` is the chunk's call and ``rest``
the host's check, per step. JAX trace+compile time and the first (compiling) run are reported
separately, never mixed in. A parameter sweep is measured too (``--sweep``, default 10 x 10): mu x
theta wheels, each a new ``Model`` and ``Simulation`` run for ``--sweep-steps`` steps, with the
number of JAX compilations it caused (the model's numbers are inputs of the compiled code, so the
whole sweep shares the one compilation of the wheel's structure) and the build and run times per
member. BLAS runs on one thread.

Usage: ``python benchmarks/bench_wheel.py [--repeats 5] [--out results/bench_wheel.json]``
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import mujoco_wheel  # noqa: E402  (benchmarks/, this script's folder)

import scenes  # noqa: E402
from lcpdyn import __version__, compiled_loop  # noqa: E402
from lcpdyn import model as model_module  # noqa: E402
from lcpdyn.stepper import Simulation  # noqa: E402
from solvers.siconos_route import available as siconos_available  # noqa: E402

PHASES = ("jacobians", "assembly", "solve", "rest", "record")
ENTRIES = [
    ("regularized", None),
    ("regularized", "ordinary-step"),
    ("regularized", "general-path"),
    ("box", None),
    ("box", "ordinary-step"),
    ("polygonal", None),
    ("coulomb", None),
    ("regularized", "siconos"),
    ("coulomb", "siconos-nsn-ac"),
]
PEER = {
    ("regularized", "ordinary-step"): ("regularized", "siconos"),
    ("regularized", "general-path"): ("regularized", "siconos"),
    ("coulomb", None): ("coulomb", "siconos-nsn-ac"),
}
MUJOCO = "mujoco"


def _label(friction, method):
    return friction if method is None else f"{friction}/{method}"


def _simulation(scene, friction, method):
    if method is None:  # the default options: the strategy's own choice (the compiled loop where it applies)
        return Simulation(scene.model, scene.friction(friction), scene.dt)
    if method == "ordinary-step":  # the step by step path: one fused Numba call per step
        return Simulation(scene.model, scene.friction(friction), scene.dt, compiled_loop=False)
    if method == "general-path":  # same answers; assembly and solve timed separately
        return Simulation(scene.model, scene.friction(friction), scene.dt, fused=False, compiled_loop=False)
    return Simulation(scene.model, scene.friction(friction), scene.dt, method=method)


def measure_once(friction, method, t_end):
    """One run of ``t_end`` s: (wall s, CPU s, per-step phase timings or None, run facts)."""
    scene = scenes.wheel.build(t_end=t_end)
    steps = round(t_end / scene.dt)
    if friction == MUJOCO:
        measured = mujoco_wheel.run(scene, steps)
        assert measured["finite"]
        return measured["wall_s"], measured["cpu_s"], None, {"steps": steps, "version": measured["version"]}
    sim = _simulation(scene, friction, method)
    wall, cpu = time.perf_counter(), time.process_time()
    trajectory = sim.run(scene.t_end)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert np.all(trajectory.solver_status == 0)
    facts = {
        "steps": len(trajectory.t) - 1,
        "fallbacks": int(trajectory.solver_fallback.sum()),
        "mean_solver_iterations": float(trajectory.solver_iterations.mean()),
        "compiled_steps": sim.loop_steps["compiled"],
        "compiled_loop": sim.options.compiled_loop,
    }
    return wall, cpu, sim.timing, facts


def measure(entries, repeats, t_end):
    """Every entry ``repeats`` times, interleaved (entry 1, 2, ..., then again), so that the
    machine's drift falls on all of them alike."""
    runs = {_label(*e): [] for e in entries}
    for _ in range(repeats):
        for entry in entries:
            runs[_label(*entry)].append(measure_once(*entry, t_end))
    results = {}
    for label, measured in runs.items():
        walls = [m[0] for m in measured]
        cpus = [m[1] for m in measured]
        steps = measured[0][3]["steps"]
        result = {
            "wall_per_simulated_second_s": float(np.median(walls) / t_end),
            "cpu_per_simulated_second_s": float(np.median(cpus) / t_end),
            "wall_per_simulated_second_all_repeats_s": [w / t_end for w in walls],
            "run_wall_per_step_median_us": float(np.median(walls) / steps * 1e6),
            "run_cpu_per_step_median_us": float(np.median(cpus) / steps * 1e6),
            **{k: v for k, v in measured[-1][3].items() if k != "steps"},
        }
        if measured[0][2] is not None:
            per_step = np.concatenate([m[2] for m in measured])
            result["per_step_median_us"] = float(np.median(per_step.sum(axis=1)) * 1e6)
            result["phases_median_us"] = {p: float(np.median(per_step[:, i]) * 1e6) for i, p in enumerate(PHASES)}
        results[label] = result
    return results


def sweep(size: int, steps: int, compiled: bool = False) -> dict:
    """A size x size mu x theta sweep of the wheel under the regularized model: JAX compilations
    it caused, median build (scene + Simulation, which compiles or reuses the kinematics) and run
    time per member, and the total. ``compiled``: through the compiled loop (whose chunk function
    is compiled once per structure, like the kinematics)."""
    before = model_module.COMPILATIONS[0] + compiled_loop.COMPILATIONS[0]
    builds, runs = [], []
    start_all = time.perf_counter()
    for mu in np.linspace(0.1, 1.0, size):
        for theta in np.linspace(0.0, 40.0, size):
            start = time.perf_counter()
            scene = scenes.wheel.build(mu=float(mu), theta_deg=float(theta), t_end=steps * 1e-3)
            sim = Simulation(
                scene.model, scene.friction("regularized"), scene.dt, compiled_loop="auto" if compiled else False
            )
            builds.append(time.perf_counter() - start)
            start = time.perf_counter()
            trajectory = sim.run(scene.t_end)
            runs.append(time.perf_counter() - start)
            assert np.all(trajectory.solver_status == 0)
    return {
        "members": size * size,
        "steps_per_member": steps,
        "compiled_loop": compiled,
        "compilations_during_sweep": model_module.COMPILATIONS[0] + compiled_loop.COMPILATIONS[0] - before,
        "median_build_s": float(np.median(builds)),
        "median_run_s": float(np.median(runs)),
        "total_s": time.perf_counter() - start_all,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--t-end", type=float, default=4.0)
    parser.add_argument("--out", default="results/bench_wheel.json")
    parser.add_argument("--sweep", type=int, default=10, help="mu x theta sweep of size N x N (0: none)")
    parser.add_argument("--sweep-steps", type=int, default=200)
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.t_end <= 0 or args.sweep < 0 or args.sweep_steps < 1:
        parser.error("--repeats and --sweep-steps must be >= 1, --t-end > 0 and --sweep >= 0")

    # JAX trace + XLA compile, measured on a fresh model (not part of any timing below)
    scene = scenes.wheel.build()
    start = time.perf_counter()
    evaluate = scene.model.compile()
    compile_seconds = time.perf_counter() - start
    q, v = scene.model.initial_state()
    samples = []
    for _ in range(2000):
        t0 = time.perf_counter()
        evaluate(q, v, 0.0)  # returns NumPy arrays: blocks on the outputs
        samples.append(time.perf_counter() - t0)
    jacobian_call_us = float(np.median(samples[200:]) * 1e6)
    swept = sweep(args.sweep, args.sweep_steps) if args.sweep else None
    if args.sweep:  # the compiled loop's chunk function, compiled once for the structure
        _simulation(scenes.wheel.build(t_end=0.01), "regularized", None).run(0.01)
    swept_loop = sweep(args.sweep, args.sweep_steps, compiled=True) if args.sweep else None

    entries = [e for e in ENTRIES if e[1] is None or "siconos" not in e[1] or siconos_available()]
    warm = {}
    for friction, method in entries:  # warm-up: Numba compilation, the compiled loop's chunk, caches
        scene = scenes.wheel.build(t_end=0.05)
        start = time.perf_counter()
        _simulation(scene, friction, method).run(scene.t_end)
        warm[_label(friction, method)] = time.perf_counter() - start
    if mujoco_wheel.available():
        entries.append((MUJOCO, None))
    results = measure(entries, args.repeats, args.t_end)
    ratios = {}
    for ours, peer in PEER.items():
        if _label(*peer) in results:
            a, b = results[_label(*ours)], results[_label(*peer)]
            fused = ours == ("regularized", "ordinary-step")  # its solve happens inside the 'assembly' phase
            ratios[f"{_label(*ours)} / {_label(*peer)}"] = {
                "wall": a["wall_per_simulated_second_s"] / b["wall_per_simulated_second_s"],
                "solve_phase": None if fused else a["phases_median_us"]["solve"] / b["phases_median_us"]["solve"],
            }
    if MUJOCO in results:
        peer = results[MUJOCO]
        for label in ("regularized", "box", "regularized/ordinary-step"):
            ratios[f"{label} / {MUJOCO}"] = {
                "wall": results[label]["run_wall_per_step_median_us"] / peer["run_wall_per_step_median_us"],
                "cpu": results[label]["run_cpu_per_step_median_us"] / peer["run_cpu_per_step_median_us"],
            }

    lines = [
        f"lcpdyn {__version__}: Peiret 2016 wheel, h = 1 ms, {args.t_end:g} s per run, median of "
        f"{args.repeats} runs (BLAS 1 thread)",
        f"JAX trace+compile of the wheel kinematics: {compile_seconds:.2f} s; one compiled call, "
        f"blocking: {jacobian_call_us:.1f} us",
        "",
        f"{'model':28s} {'wall/sim s':>10s} {'run us/step':>11s} {'cpu us/step':>11s} {'us/step':>8s} "
        + " ".join(f"{p:>9s}" for p in PHASES),
    ]
    for name, r in results.items():
        phases = r.get("phases_median_us")
        lines.append(
            f"{name:28s} {r['wall_per_simulated_second_s']:10.3f} {r['run_wall_per_step_median_us']:11.1f} "
            f"{r['run_cpu_per_step_median_us']:11.1f} "
            + (
                f"{r['per_step_median_us']:8.1f} " + " ".join(f"{phases[p]:9.1f}" for p in PHASES)
                if phases
                else f"{'':8s} (MuJoCo {r['version']}: the whole run's wall and CPU time per step)"
            )
        )
    lines.append("")
    for name, ratio in ratios.items():
        solve = "" if ratio.get("solve_phase") is None else f", solve phase {ratio['solve_phase']:.2f}"
        cpu = "" if ratio.get("cpu") is None else f", CPU {ratio['cpu']:.2f}"
        lines.append(f"ratio {name}: wall {ratio['wall']:.2f}{cpu}{solve}")
    for label, swept_entry in (("sweep", swept), ("sweep, compiled loop", swept_loop)):
        if swept_entry:
            lines.append(
                f"{label}: {swept_entry['members']} wheels (mu x theta), "
                f"{swept_entry['compilations_during_sweep']} JAX compilations during it (the structure was "
                f"compiled once above), build {swept_entry['median_build_s'] * 1e3:.1f} ms and "
                f"{swept_entry['steps_per_member']} steps {swept_entry['median_run_s'] * 1e3:.1f} ms per member "
                f"(median), {swept_entry['total_s']:.1f} s in all"
            )
    for friction in ("regularized", "box"):
        if friction in warm:
            lines.append(f"{friction}: first run of 50 steps (traces and compiles the chunk) {warm[friction]:.2f} s")
    lines.append(
        "Target (issue 43): the default options (the compiled loop, where it applies) <= 10x MuJoCo's time per "
        "step, both as the whole run's time per step; the compiled loop's per-step phases are the chunk's "
        "call as 'solve' and the host's residual check as 'rest'."
    )
    text = "\n".join(lines)
    print(text)

    record = {
        "lcpdyn_version": __version__,
        "benchmark": "bench_wheel",
        "parameters": {
            "scene": "wheel",
            "dt": 1e-3,
            "t_end": args.t_end,
            "repeats": args.repeats,
            "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
        },
        "jax_compile_seconds": compile_seconds,
        "jacobian_call_median_us": jacobian_call_us,
        "first_run_seconds_0.05s": warm,
        "sweep": swept,
        "sweep_compiled_loop": swept_loop,
        "results": results,
        "ratios": ratios,
        "machine": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
        },
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2))
    out.with_suffix(".txt").write_text(text + "\n")
    print(f"wrote {out} and {out.with_suffix('.txt')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
