"""Cost per step of a geometrically exact beam as it grows (issue 18, item 6).

Two scenes, each for 4 ... 256 elements (:func:`build`):

* ``free``: a free beam (Bauchau 2002 Table 1, set 3's section, 0.5 m) falling and vibrating
  under gravity, no contact -- the elements' compliant rows alone;
* ``clamped-wheel``: the same beam hanging from a cart that moves at 5 m/s (a clamp whose anchor
  moves), a wheel (20 kg, 0.25 m: Sec. 8.3's) on a revolute joint at its lower end, rolling on the
  ground (rigid contact, regularized friction, mu = 0.8).

Each runs at h = 1 ms on the condensed path (``sparse="condensed"``: velocities and bilateral
multipliers eliminated by the sparse KKT factorization, the contacts' bounded LCP solved alone)
and, up to 64 elements, on the dense path (the whole Eq. (30) pivoted) for comparison; the two
agree to rounding. Reported per (scene, path, size): median ms per step over ``--repeats`` runs
of ``--steps`` steps, after a first run that traces and compiles the kinematics (its time reported
apart), and the growth exponent p of time ~ N^p fitted over 16 ... 256 elements (goal <= 1.1).

Peer: none in this run. No engine the brief names couples geometrically exact beams with a
complementarity wheel (the issue: Chrono and Drake have deformable bodies but no such wheel);
the dense path is the reference the condensed one is measured against.

Usage: ``python benchmarks/bench_beam.py [--repeats 3] [--steps 200] [--out results/bench_beam.json]``
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

from lcpdyn import __version__  # noqa: E402
from lcpdyn.beam import BeamSection, WeldJoint, add_beam  # noqa: E402
from lcpdyn.body import RigidBody  # noqa: E402
from lcpdyn.constraints import RevoluteJoint  # noqa: E402
from lcpdyn.contact import DiskContact, Plane  # noqa: E402
from lcpdyn.model import Model  # noqa: E402
from lcpdyn.stepper import Simulation  # noqa: E402

SIZES = (4, 8, 16, 32, 64, 128, 256)
DENSE_UP_TO = 64
SPEED, WHEEL_MASS, WHEEL_RADIUS = 5.0, 20.0, 0.25


def build(scene: str, elements: int) -> Model:
    """The ``free`` or ``clamped-wheel`` model with a beam of ``elements`` elements."""
    section, length = BeamSection.bauchau_2002(3)
    model = Model(gravity=(0.0, 0.0, -9.81))
    if scene == "free":
        add_beam(model, "beam", section, (0.0, 0.0, 1.0), (length, 0.0, 1.0), elements, velocity=(0.0, 0.0, 0.1))
        return model
    if scene != "clamped-wheel":
        raise ValueError(f"scene must be 'free' or 'clamped-wheel', got {scene!r}")
    top = WHEEL_RADIUS + length
    velocity = (SPEED, 0.0, 0.0)
    beam = add_beam(
        model, "beam", section, (0.0, 0.0, top), (0.0, 0.0, WHEEL_RADIUS), elements, normal=(1.0, 0.0, 0.0),
        velocity=velocity,
    )  # fmt: skip
    model.add_constraint(
        WeldJoint(body_a=beam.root, offset_b=(0.0, 0.0, top), anchor_velocity=velocity, name="cart clamp")
    )
    inertia = (WHEEL_MASS * WHEEL_RADIUS**2 / 4, WHEEL_MASS * WHEEL_RADIUS**2 / 2, WHEEL_MASS * WHEEL_RADIUS**2 / 4)
    wheel = model.add_body(
        RigidBody(
            "wheel", WHEEL_MASS, inertia, position=(0.0, 0.0, WHEEL_RADIUS), velocity=velocity,
            angular_velocity=(0.0, SPEED / WHEEL_RADIUS, 0.0),
        )
    )  # fmt: skip
    # the node frame's e3 is world x, e2 = e3 x e1 = world y: the axle is the node's y axis too
    model.add_constraint(RevoluteJoint(body_a=wheel, body_b=beam.tip, name="axle"))
    model.add_contact(DiskContact(wheel, Plane(), 0.8, radius=WHEEL_RADIUS))
    return model


def measure(scene: str, elements: int, sparse, steps: int, repeats: int, dt: float = 1e-3) -> dict:
    """Compile-inclusive first run, then ``repeats`` timed runs of ``steps`` steps each."""
    model = build(scene, elements)
    start = time.perf_counter()
    sim = Simulation(model, "regularized", dt, sparse=sparse)
    first = sim.run(steps * dt)
    compile_and_first = time.perf_counter() - start
    times = []
    for _ in range(repeats):
        sim.reset()
        start = time.perf_counter()
        trajectory = sim.run(steps * dt)
        times.append((time.perf_counter() - start) / steps * 1e3)
    return {
        "scene": scene,
        "elements": elements,
        "path": "condensed" if sparse == "condensed" else "dense",
        "unknowns": model.n_velocities + model.n_bilateral + 3 * len(model.contacts),
        "ms_per_step": float(np.median(times)),
        "ms_per_step_runs": times,
        "first_run_s": compile_and_first,
        "all_solved": bool(np.all(trajectory.solver_status == 0) and np.all(first.solver_status == 0)),
        "health_flags": int(trajectory.health.max()),
        "final_position": trajectory.position[-1].tolist(),
    }


def growth_exponent(rows: list, smallest: int = 16) -> float:
    """p of ms ~ N^p, least squares in log-log over N >= ``smallest``."""
    points = [(r["elements"], r["ms_per_step"]) for r in rows if r["elements"] >= smallest]
    if len(points) < 2:
        return float("nan")
    x, y = np.log([p[0] for p in points]), np.log([p[1] for p in points])
    return float(np.polyfit(x, y, 1)[0])


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per entry (default 3)")
    parser.add_argument("--steps", type=int, default=200, help="steps per run (default 200)")
    parser.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=list(SIZES),
        help=f"element counts (default {' '.join(map(str, SIZES))})",
    )
    parser.add_argument("--out", default="results/bench_beam.json", help="JSON file (default results/bench_beam.json)")
    args = parser.parse_args(argv)
    rows, exponents, agreement = [], {}, {}
    for scene in ("free", "clamped-wheel"):
        for path in ("condensed", "dense"):
            entry = []
            for elements in args.sizes:
                if path == "dense" and elements > DENSE_UP_TO:
                    continue
                row = measure(scene, elements, "condensed" if path == "condensed" else False, args.steps, args.repeats)
                entry.append(row)
                print(
                    f"{scene:14s} {path:9s} N = {elements:4d}: {row['ms_per_step']:8.3f} ms/step "
                    f"(first run {row['first_run_s']:.1f} s, {row['unknowns']} unknowns)",
                    flush=True,
                )
            rows += entry
            exponents[f"{scene}/{path}"] = growth_exponent(entry)
        by_size = {}
        for row in rows:
            if row["scene"] == scene:
                by_size.setdefault(row["elements"], {})[row["path"]] = row
        agreement[scene] = {
            str(n): float(np.max(np.abs(np.subtract(p["condensed"]["final_position"], p["dense"]["final_position"]))))
            for n, p in by_size.items()
            if len(p) == 2
        }
    ratios = {
        f"{r['scene']}/N={r['elements']}": next(
            d["ms_per_step"] / r["ms_per_step"]
            for d in rows
            if d["path"] == "dense" and d["scene"] == r["scene"] and d["elements"] == r["elements"]
        )
        for r in rows
        if r["path"] == "condensed" and r["elements"] <= DENSE_UP_TO
    }
    report = {
        "lcpdyn_version": __version__,
        "machine": {"python": platform.python_version(), "processor": platform.processor(), "cpus": os.cpu_count()},
        "parameters": {"steps": args.steps, "repeats": args.repeats, "dt": 1e-3, "sizes": args.sizes},
        "rows": rows,
        "growth_exponent_16_to_256": exponents,
        "dense_over_condensed": ratios,
        "largest_position_difference_condensed_vs_dense_m": agreement,
    }
    for key, value in exponents.items():
        print(f"growth exponent {key}: {value:.2f}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    temporary = out.with_suffix(".json.tmp")
    temporary.write_text(json.dumps(report, indent=2))
    temporary.replace(out)
    return report


if __name__ == "__main__":
    main()
