"""The ``lcpdyn`` command line: ``scenes``, ``run`` and ``compare``.

    lcpdyn scenes
    lcpdyn run wheel --friction regularized --dt 1e-3 --t-end 4 --out wheel.npz --plot wheel.png
    lcpdyn run wheel --set theta_deg=30 --set mu=0.5 --out w.npz
    lcpdyn compare wheel --out-dir results/
    lcpdyn stability rolling-disk --param speed=0:1:101 --plot roots.png
    lcpdyn reproduce rolling-disk swivel-shimmy caster-shimmy --out-dir results/
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

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
    run.add_argument("--position-update", default="symplectic", choices=("symplectic", "paper"),
                     help="symplectic: q+ with v+ and the midpoint gyroscopic step (default, adds no energy); "
                          "paper: Peiret 2016 Eq. (7) with the known v and the explicit gyroscopic term")
    run.add_argument("--gyroscopic", default=None, choices=("midpoint", "explicit"),
                     help="treatment of omega x I omega (default: midpoint with symplectic, explicit with paper)")
    run.add_argument("--energy-check", default="warn", choices=("warn", "stop", "off"),
                     help="on a step whose energy rises above the budget: warn at the end (default), stop, or off")
    run.add_argument("--energy-tolerance", type=float, default=1e-3,
                     help="energy rise allowed, relative to the run's energy scale (default 1e-3)")
    run.add_argument("--normal-force-iterations", type=int, default=0)
    run.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a scene parameter")
    run.add_argument("--out", required=True, help="output .npz")
    run.add_argument("--plot", default=None, help="optional PNG with the run's main quantities")
    run.add_argument("--quiet", action="store_true", help="no progress line")

    compare = sub.add_parser("compare", help="every friction model against exact Coulomb (Peiret 2016 Figs. 4-5)")
    compare.add_argument("scene")
    compare.add_argument("--reference-dt", type=float, default=1e-4, help="step of the Coulomb reference (s)")
    compare.add_argument("--position-update", default="both", choices=("symplectic", "paper", "both"),
                         help="both (default): the engine's default v+ update first, then the paper's Eq. (7)")
    compare.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a scene parameter")
    compare.add_argument("--out-dir", default="results", help="directory for the JSON and figures")
    compare.add_argument("--quiet", action="store_true")

    stability = sub.add_parser("stability", help="eigenvalues of the linearized equations over a parameter "
                                                 "(Schwab–Meijaard 2003 Eq. 29)")
    stability.add_argument("scene")
    stability.add_argument("--param", default=None, metavar="NAME=START:STOP:COUNT",
                           help="the swept parameter (default: the scene's)")
    stability.add_argument("--set", action="append", metavar="KEY=VALUE", help="fix another parameter")
    stability.add_argument("--plot", default=None, help="root-locus PNG")
    stability.add_argument("--out", default=None, help="JSON with the eigenvalues")

    reproduce = sub.add_parser("reproduce", help="the paper checks and figures of a scene (rolling-disk, "
                                                 "swivel-shimmy, caster-shimmy, road-wheel, incline-pendulum)")
    reproduce.add_argument("scenes", nargs="+")
    reproduce.add_argument("--out-dir", default="results")
    return parser


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    from scenes import SCENES, describe  # imported here so `lcpdyn --version` stays fast

    if args.command == "scenes":
        for name, line, kinds in describe():
            print(f"{name:16s} [{kinds}] {line}")
        return 0
    try:
        if args.command == "stability":
            return _stability(args)
        if args.command == "reproduce":
            return _reproduce(args)
    except (ValueError, TypeError) as exc:
        print(f"lcpdyn: {exc}", file=sys.stderr)
        return 2
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
                     position_update=args.position_update, normal_force_iterations=args.normal_force_iterations,
                     gyroscopic=args.gyroscopic, energy_check=args.energy_check,
                     energy_tolerance=args.energy_tolerance)
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
    updates = ("symplectic", "paper") if args.position_update == "both" else (args.position_update,)
    for update in updates:
        result = compare(module, reference_dt=args.reference_dt, progress=not args.quiet, position_update=update,
                         **parameters)
        print(format_table(result))
        prefix = os.path.join(args.out_dir, f"{result['scene']}-{update}")
        write_json(result, prefix + ".json")
        paths = write_figures(result, prefix)
        print(f"wrote {prefix}.json, " + ", ".join(paths) + "\n")
    return 0


def _stability(args) -> int:
    import json

    from scenes import STABILITY

    from .stability import parse_sweep, plot_root_locus, root_locus, write_root_locus

    if args.scene not in STABILITY:
        raise ValueError(f"unknown stability scene {args.scene!r}; choose one of {sorted(STABILITY)}")
    module = STABILITY[args.scene]
    if args.param is None:
        name, start, stop, count = module.SWEEP
        values = np.linspace(start, stop, count)
    else:
        name, values = parse_sweep(args.param)
    fixed = {k: float(v) for k, v in _parse_sets(args.set).items()}
    module.system().params(**{name: values[0]}, **fixed)  # unknown names raise here
    result = root_locus(module, name, values, **fixed)
    unstable = [float(v) for v, row in zip(values, result["eigenvalues"]) if row.real.max() > 1e-9]
    print(f"{args.scene}: {len(values)} values of {name} in [{values[0]:g}, {values[-1]:g}]; "
          f"state size {result['eigenvalues'].shape[1]}; max Re > 1e-9 at {len(unstable)} values")
    if args.plot:
        plot_root_locus(result, args.plot)
        print(f"wrote {args.plot}")
    if args.out:
        write_root_locus(result, args.out)
        print(f"wrote {args.out}")
    if not args.plot and not args.out:
        print(json.dumps({"values": values.tolist(), "max_real": result["eigenvalues"].real.max(axis=1).tolist()}))
    return 0


def _reproduce(args) -> int:
    import json

    from scenes import REPORTS

    from . import __version__

    os.makedirs(args.out_dir, exist_ok=True)
    for name in args.scenes:
        if name not in REPORTS:
            raise ValueError(f"unknown report scene {name!r}; choose one of {sorted(REPORTS)}")
    for name in args.scenes:
        numbers = REPORTS[name].report(args.out_dir)
        path = os.path.join(args.out_dir, f"{name}.json")
        with open(path, "w") as handle:
            json.dump({"lcpdyn_version": __version__, "scene": name, **numbers}, handle, indent=2, default=float)
        print(f"{name}: " + ", ".join(f"{k} = {v}" for k, v in numbers.items()))
        print(f"wrote {path} and {name}-*.png in {args.out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
