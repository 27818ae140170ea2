"""The ``lcpdyn`` command line: ``scenes``, ``run`` and ``compare``.

    lcpdyn scenes
    lcpdyn run wheel --friction regularized --dt 1e-3 --t-end 4 --out wheel.npz --plot wheel.png
    lcpdyn run wheel --set theta_deg=30 --set mu=0.5 --out w.npz
    lcpdyn compare wheel --out-dir results/
"""
from __future__ import annotations

import argparse
import os
import sys

from . import __version__


def _parse_sets(items) -> dict:
    out = {}
    for item in items or []:
        if "=" not in item:
            raise ValueError(f"--set expects KEY=VALUE, got {item!r}")
        key, value = item.split("=", 1)
        out[key.strip()] = value.strip()
    return out


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lcpdyn", description="Contact dynamics on complementarity solvers.")
    parser.add_argument("--version", action="version", version=f"lcpdyn {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("scenes", help="list the scenes")

    run = sub.add_parser("run", help="simulate one scene with one friction model")
    run.add_argument("scene")
    run.add_argument("--friction", default="regularized", help="regularized | polygonal | box | coulomb")
    run.add_argument("--dt", type=float, default=None, help="step size h (s); default the scene's")
    run.add_argument("--t-end", type=float, default=None, help="end time (s); default the scene's")
    run.add_argument("--method", default=None, help="solver (default: the friction model's)")
    run.add_argument("--position-update", default="paper", choices=("paper", "symplectic"))
    run.add_argument("--normal-force-iterations", type=int, default=0)
    run.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a scene parameter")
    run.add_argument("--out", required=True, help="output .npz")
    run.add_argument("--plot", default=None, help="optional PNG with the run's main quantities")
    run.add_argument("--quiet", action="store_true", help="no progress line")

    compare = sub.add_parser("compare", help="every friction model against exact Coulomb (Peiret 2016 Figs. 4-5)")
    compare.add_argument("scene")
    compare.add_argument("--reference-dt", type=float, default=1e-4, help="step of the Coulomb reference (s)")
    compare.add_argument("--position-update", default="both", choices=("paper", "symplectic", "both"))
    compare.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a scene parameter")
    compare.add_argument("--out-dir", default="results", help="directory for the JSON and figures")
    compare.add_argument("--quiet", action="store_true")
    return parser


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    from scenes import SCENES, describe  # imported here so `lcpdyn --version` stays fast

    if args.command == "scenes":
        for name, line in describe():
            print(f"{name:16s} {line}")
        return 0
    if args.scene not in SCENES:
        print(f"lcpdyn: unknown scene {args.scene!r}; choose one of {sorted(SCENES)}", file=sys.stderr)
        return 2
    module = SCENES[args.scene]
    try:
        parameters = _parse_sets(args.set)
        if args.command == "run":
            return _run(args, module, parameters)
        return _compare(args, module, parameters)
    except (ValueError, TypeError) as exc:
        print(f"lcpdyn: {exc}", file=sys.stderr)
        return 2


def _run(args, module, parameters) -> int:
    from .stepper import Simulation, SimulationError

    if args.dt is not None:
        parameters["dt"] = args.dt
    if args.t_end is not None:
        parameters["t_end"] = args.t_end
    scene = module.build(**parameters)
    sim = Simulation(scene.model, scene.friction(args.friction), scene.dt, method=args.method,
                     position_update=args.position_update, normal_force_iterations=args.normal_force_iterations)
    try:
        trajectory = sim.run(scene.t_end, progress=not args.quiet)
        code = 0
    except SimulationError as exc:
        print(f"lcpdyn: simulation stopped: {exc}; saving the {exc.step} completed steps", file=sys.stderr)
        trajectory, code = exc.trajectory, 1
    trajectory.parameters["scene"] = {"name": scene.name, **scene.parameters}
    trajectory.save(args.out)
    print(f"wrote {args.out} ({trajectory.t.shape[0]} steps)")
    if args.plot:
        from .plotting import plot_run
        plot_run(trajectory, args.plot, title=f"{scene.name}, {args.friction}, h = {scene.dt:g} s")
        print(f"wrote {args.plot}")
    return code


def _compare(args, module, parameters) -> int:
    from .compare import compare, format_table, write_figures, write_json

    os.makedirs(args.out_dir, exist_ok=True)
    updates = ("paper", "symplectic") if args.position_update == "both" else (args.position_update,)
    for update in updates:
        result = compare(module, reference_dt=args.reference_dt, progress=not args.quiet, position_update=update,
                         **parameters)
        print(format_table(result))
        prefix = os.path.join(args.out_dir, f"{result['scene']}-{update}")
        write_json(result, prefix + ".json")
        paths = write_figures(result, prefix)
        print(f"wrote {prefix}.json, " + ", ".join(paths) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
