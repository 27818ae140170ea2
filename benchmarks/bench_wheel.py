"""Wall time of the Peiret 2016 wheel (Table 1) at 1 kHz under each friction model, with the
median per-step cost split into Jacobians, assembly, solve, the rest of the step and recording.

Entries (each run simulates the scene's full 4 s = 4000 steps; repeated ``--repeats`` times):
* ``regularized``, ``box`` (judice-pires), ``polygonal`` (lemke), ``coulomb`` (our NSGS with exact
  local solves);
* ``regularized/compiled-loop``, ``box/compiled-loop``: the same models through the whole-run
  compiled loop (``Simulation(compiled_loop=True)``, :mod:`lcpdyn.compiled_loop`), chunks of steps
  in one XLA call, every step still measured on the host;
* peers measured in the same run: ``regularized/siconos`` (the same Eq. 30 problem through the
  Siconos route: Schur + box split + Siconos LCP Lemke) and ``coulomb/siconos-nsn-ac`` (the same
  Delassus problem through Siconos fc3d NSN_AC). Ratios ours / peer are reported.

Reported per entry: median wall time per simulated second (over repeats), median per-step total
and per-phase medians over all steps of all repeats. Phases (see ``Simulation.run``):
``jacobians`` = the compiled JAX kinematics call, blocking on its outputs; ``assembly`` = friction
block and Eq. 30 matrix (Schur elimination for coulomb); ``solve`` = solver incl. the framework's
residual check; ``rest`` = gap terms, position update, bookkeeping; ``record`` = storing the step.
``regularized`` and ``box`` use the fused path by default: there ``assembly`` is the one compiled
call that assembles, pivots and checks the residual, and ``solve`` only wraps its result;
``regularized/general-path`` (``fused=False``) gives the assembly/solve split of the same steps.
JAX trace+compile time and the first (Numba-compiling) run are reported separately, never mixed in.
A parameter sweep is measured too (``--sweep``, default 10 x 10): mu x theta wheels, each a new
``Model`` and ``Simulation`` run for ``--sweep-steps`` steps, with the number of JAX compilations
it caused (the model's numbers are inputs of the compiled kinematics, so the whole sweep shares
the one compilation of the wheel's structure) and the build and run times per member.
BLAS runs on one thread. For scale: MuJoCo takes about 3 us per step on a comparable wheel (quoted
in the issue, not measured here).

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

import scenes  # noqa: E402
from lcpdyn import __version__, compiled_loop  # noqa: E402
from lcpdyn import model as model_module  # noqa: E402
from lcpdyn.stepper import Simulation  # noqa: E402
from solvers.siconos_route import available as siconos_available  # noqa: E402

PHASES = ("jacobians", "assembly", "solve", "rest", "record")
ENTRIES = [
    ("regularized", None),
    ("regularized", "general-path"),
    ("regularized", "compiled-loop"),
    ("box", None),
    ("box", "compiled-loop"),
    ("polygonal", None),
    ("coulomb", None),
    ("regularized", "siconos"),
    ("coulomb", "siconos-nsn-ac"),
]
PEER = {
    ("regularized", None): ("regularized", "siconos"),
    ("regularized", "general-path"): ("regularized", "siconos"),
    ("coulomb", None): ("coulomb", "siconos-nsn-ac"),
}


def _label(friction, method):
    return friction if method is None else f"{friction}/{method}"


def _simulation(scene, friction, method):
    if method == "general-path":  # same answers; assembly and solve timed separately
        return Simulation(scene.model, scene.friction(friction), scene.dt, fused=False)
    if method == "compiled-loop":  # chunks of steps in one XLA call (lcpdyn.compiled_loop)
        return Simulation(scene.model, scene.friction(friction), scene.dt, compiled_loop=True)
    return Simulation(scene.model, scene.friction(friction), scene.dt, method=method)


def measure(friction, method, repeats, t_end):
    walls, timings = [], []
    for _ in range(repeats):
        scene = scenes.wheel.build(t_end=t_end)
        sim = _simulation(scene, friction, method)
        start = time.perf_counter()
        trajectory = sim.run(scene.t_end)
        walls.append(time.perf_counter() - start)
        timings.append(sim.timing)
        assert np.all(trajectory.solver_status == 0)
    per_step = np.concatenate(timings)
    total = per_step.sum(axis=1)
    return {
        "wall_per_simulated_second_s": float(np.median(walls) / t_end),
        "wall_per_simulated_second_all_repeats_s": [w / t_end for w in walls],
        "per_step_median_us": float(np.median(total) * 1e6),
        "phases_median_us": {p: float(np.median(per_step[:, i]) * 1e6) for i, p in enumerate(PHASES)},
        "fallbacks": int(trajectory.solver_fallback.sum()),
        "mean_solver_iterations": float(trajectory.solver_iterations.mean()),
    }


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
            sim = Simulation(scene.model, scene.friction("regularized"), scene.dt, compiled_loop=compiled)
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
        _simulation(scenes.wheel.build(t_end=0.01), "regularized", "compiled-loop").run(0.01)
    swept_loop = sweep(args.sweep, args.sweep_steps, compiled=True) if args.sweep else None

    entries = [e for e in ENTRIES if e[1] is None or "siconos" not in e[1] or siconos_available()]
    warm = {}
    for friction, method in entries:  # warm-up: Numba compilation and caches
        scene = scenes.wheel.build(t_end=0.05)
        start = time.perf_counter()
        _simulation(scene, friction, method).run(scene.t_end)
        warm[_label(friction, method)] = time.perf_counter() - start
    results = {}
    for friction, method in entries:
        results[_label(friction, method)] = measure(friction, method, args.repeats, args.t_end)
        print(f"  measured {_label(friction, method)}", file=sys.stderr)
    ratios = {}
    for ours, peer in PEER.items():
        if _label(*peer) in results:
            a, b = results[_label(*ours)], results[_label(*peer)]
            fused = ours == ("regularized", None)  # its solve happens inside the 'assembly' phase
            ratios[f"{_label(*ours)} / {_label(*peer)}"] = {
                "wall": a["wall_per_simulated_second_s"] / b["wall_per_simulated_second_s"],
                "solve_phase": None if fused else a["phases_median_us"]["solve"] / b["phases_median_us"]["solve"],
            }

    lines = [
        f"lcpdyn {__version__}: Peiret 2016 wheel, h = 1 ms, {args.t_end:g} s per run, median of "
        f"{args.repeats} runs (BLAS 1 thread)",
        f"JAX trace+compile of the wheel kinematics: {compile_seconds:.2f} s; one compiled call, "
        f"blocking: {jacobian_call_us:.1f} us",
        "",
        f"{'model':28s} {'wall/sim s':>10s} {'us/step':>8s} " + " ".join(f"{p:>9s}" for p in PHASES),
    ]
    for name, r in results.items():
        lines.append(
            f"{name:28s} {r['wall_per_simulated_second_s']:10.3f} {r['per_step_median_us']:8.1f} "
            + " ".join(f"{r['phases_median_us'][p]:9.1f}" for p in PHASES)
        )
    lines.append("")
    for name, ratio in ratios.items():
        solve = "" if ratio["solve_phase"] is None else f", solve phase {ratio['solve_phase']:.2f}"
        lines.append(f"ratio {name}: wall {ratio['wall']:.2f}{solve}")
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
        label = f"{friction}/compiled-loop"
        if label in warm:
            lines.append(f"{label}: first run of 50 steps (traces and compiles the chunk) {warm[label]:.2f} s")
    lines.append(
        "Target (issue 11): <= 20 us per step for 'regularized' (the compiled loop's per-step phases: the "
        "chunk's call as 'solve', the host's residual check as 'rest'). MuJoCo (quoted): ~2.4 us per step."
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
