"""The cost of a run's gradient against the run itself (issue 49's done-when: one gradient of a 1 s
run of the Peiret wheel within 5x the forward run).

For each friction model the differentiable run takes (``regularized``, ``box``, ``polygonal`` with
``judice-pires``, ``continuous``, ``creep`` (:func:`law`), ``coulomb``: its problem solved on the
host each step), the Peiret wheel (scene ``wheel``) for ``--steps`` steps (1,000: 1 s at h = 1 ms) as a
:class:`~lcpdyn.differentiable_run.DifferentiableRun`, and a loss of its last position and spin:

* ``forward``: the loss, compiled;
* ``reverse``: ``jax.grad`` of the loss with respect to the initial velocity (6) and mu, compiled
  (checkpointed steps: one state per step kept);
* ``forward-mode``: ``jax.jacfwd`` of the same (one tangent per input, as
  :func:`lcpdyn.calibrate.calibrate` takes its Jacobian);
* ``ordinary``: the same steps by the ordinary step (``Simulation.run`` with
  ``compiled_loop=False``), the cost a user pays without the compiled path.

Each is compiled first (its time reported apart), then run ``--repeats`` times, the kinds
interleaved so that the machine's noise falls on all of them alike; reported: median CPU and wall
time, and the ratios to the forward run. ``--out`` writes the numbers as JSON.
"""

from __future__ import annotations

import argparse
import json
import time

import jax
import numpy as np

from lcpdyn.differentiable_run import DifferentiableRun
from lcpdyn.friction import Creep
from lcpdyn.precision import float64
from scenes import build_scene


def law(friction: str):
    """The friction model by name; ``creep``: Kalker's coefficients for the 1 kg wheel (f11 = f22 =
    5 N, f23 = 0.5 N m: saturated for the first 0.63 s, then partly not)."""
    return Creep(f11=5.0, f22=5.0, f23=0.5) if friction == "creep" else friction


def options(friction: str) -> dict:
    """The simulation's options: the polygonal cone with the method the compiled step pivots like."""
    return {"method": "judice-pires"} if friction == "polygonal" else {}


def measure(friction: str, steps: int, repeats: int) -> dict:
    scene = build_scene("wheel")
    run = DifferentiableRun(scene.simulation(law(friction), **options(friction)), steps)
    x = run.inputs
    with float64():

        def loss(v0, mu):
            out = run(x["q0"], v0, mu, x["constants"], x["floats"])
            return out.q[-1, 0] + out.q[-1, 1] + 0.1 * out.v[-1, 5]

        kinds = {
            "forward": jax.jit(loss),
            "reverse": jax.jit(jax.grad(loss, argnums=(0, 1))),
            "forward-mode": jax.jit(jax.jacfwd(loss, argnums=(0, 1))),
        }
        compile_s = {}
        for name, function in kinds.items():
            start = time.perf_counter()
            jax.block_until_ready(function(x["v0"], x["mu"]))
            compile_s[name] = time.perf_counter() - start
        times = {name: ([], []) for name in [*kinds, "ordinary"]}
        for _ in range(repeats):
            for name, function in kinds.items():
                wall, cpu = time.perf_counter(), time.process_time()
                jax.block_until_ready(function(x["v0"], x["mu"]))
                times[name][0].append(time.perf_counter() - wall)
                times[name][1].append(time.process_time() - cpu)
            sim = scene.simulation(law(friction), compiled_loop=False, **options(friction))
            wall, cpu = time.perf_counter(), time.process_time()
            sim.run(steps * scene.dt)
            times["ordinary"][0].append(time.perf_counter() - wall)
            times["ordinary"][1].append(time.process_time() - cpu)
    medians = {name: {"wall_s": float(np.median(w)), "cpu_s": float(np.median(c))} for name, (w, c) in times.items()}
    base = medians["forward"]["cpu_s"]
    return {
        "steps": steps,
        "repeats": repeats,
        "compile_s": compile_s,
        "median": medians,
        "cpu_ratio_to_forward": {name: m["cpu_s"] / base for name, m in medians.items()},
    }


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=7)
    models = "regularized,box,polygonal,continuous,creep,coulomb"
    parser.add_argument("--friction", default=models, help=f"comma-separated, of {models}")
    parser.add_argument("--out", default=None, help="write the numbers as JSON here")
    args = parser.parse_args(argv)
    results = {}
    for friction in args.friction.split(","):
        results[friction] = r = measure(friction, args.steps, args.repeats)
        m, ratio = r["median"], r["cpu_ratio_to_forward"]
        print(f"{friction}, {args.steps} steps (medians of {args.repeats}, CPU s; compile apart):")
        for name in ("forward", "reverse", "forward-mode", "ordinary"):
            compiled = r["compile_s"].get(name)
            extra = f", compile {compiled:.1f} s" if compiled is not None else ""
            print(f"  {name:>12}: {m[name]['cpu_s']:.4f} s CPU, {m[name]['wall_s']:.4f} s wall, "
                  f"{ratio[name]:.2f}x the forward run{extra}")  # fmt: skip
    if args.out:
        with open(args.out, "w") as handle:
            json.dump(results, handle, indent=2)
    return results


if __name__ == "__main__":
    main()
