"""Friction switch times against the exact Coulomb reference (issue 44; docs/guide/wheel-comparison.md, "Friction events
on time"): the Peiret wheel with mu = 0.2 (five stick/slip switches between 3.08 and 3.87 s)
under coulomb and the regularized model (static branch in the cone, and Eq. 12's box), with the
midpoint scheme and the first-order step, at h = 2, 1, 0.5 and 0.25 ms. Each switch is where the
slip crosses 1e-5 m/s, located inside its step (``metrics.slip_transitions(..., locate=True)``),
in the runs and in the event-driven reference (rtol 1e-11, sampled every 0.1 ms from 3 s).

    python benchmarks/friction_events.py                # the whole table (about 15 min of CPU)
    python benchmarks/friction_events.py --dt 1e-3      # one step size

Prints the exact switches and crossings, then per run the largest error over the five switches
(ms), the observed order between consecutive step sizes, and the CPU time of the run.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

import scenes
from lcpdyn import Simulation
from lcpdyn.friction import Regularized
from lcpdyn.metrics import slip_transitions
from lcpdyn.reference import exact_coulomb

THRESHOLD = 1e-5


def exact_crossings():
    """(zero-slip switch times, threshold crossings) of the reference after t = 3 s."""
    model = scenes.wheel.build(mu=0.2).model
    samples = np.concatenate([np.linspace(0.0, 3.0, 31)[:-1], 3.0 + 1e-4 * np.arange(10001)])
    solution = exact_coulomb(model, 4.0, samples)
    events = [e.t for e in solution.events if e.kind in ("stick", "slip") and e.t > 3.0]
    transitions = slip_transitions(solution.as_trajectory(model), THRESHOLD, locate=True)
    crossings = sorted(t for t in transitions["to_roll"] + transitions["to_slide"] if t > 3.0)
    return np.array(events), np.array(crossings)


def frictions():
    constants = scenes.wheel.build(mu=0.2).contact_model
    stiffness, threshold = constants["tangential_stiffness"], constants["velocity_threshold"]
    return {
        "coulomb": "coulomb",
        "regularized, cone": Regularized(stiffness, threshold, static_bound="cone"),
        "regularized, box (Eq. 12)": Regularized(stiffness, threshold, static_bound="box"),
    }


def switch_times(friction, h, update):
    scene = scenes.wheel.build(mu=0.2)
    start = time.process_time()
    run = Simulation(scene.model, friction, h, position_update=update).run(4.0)
    cpu = time.process_time() - start
    transitions = slip_transitions(run, THRESHOLD, locate=True)
    times = np.array(sorted(t for t in transitions["to_roll"] + transitions["to_slide"] if t > 3.0))
    return times, cpu


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dt", type=float, nargs="*", default=[2e-3, 1e-3, 5e-4, 2.5e-4], help="step sizes (s)")
    parser.add_argument("--update", nargs="*", default=["midpoint", "symplectic"], help="position updates")
    args = parser.parse_args(argv)
    start = time.process_time()
    events, crossings = exact_crossings()
    print(f"exact switches (s): {np.array2string(events, precision=6)}")
    print(f"slip crossing {THRESHOLD:g} m/s (s): {np.array2string(crossings, precision=6)}")
    print(f"(reference: {time.process_time() - start:.0f} s CPU)\n")
    print("| model | update | " + " | ".join(f"h = {1e3 * h:g} ms" for h in args.dt) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in args.dt) + " |")
    for name, friction in frictions().items():
        for update in args.update:
            cells, previous = [], None
            for h in args.dt:
                times, cpu = switch_times(friction, h, update)
                if times.size != crossings.size:
                    cells.append(f"{times.size} switches ({cpu:.0f} s)")
                    previous = None
                    continue
                worst = float(np.max(np.abs(times - crossings)))
                order = "" if previous is None else f", order {math.log(previous / worst, 2):.1f}"
                cells.append(f"{1e3 * worst:.3f}{order} ({cpu:.0f} s)")
                previous = worst
            print(f"| {name} | {update} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
