"""The analysis commands of the ``lcpdyn`` command line (:mod:`lcpdyn.cli`): ``sweep`` (a grid of
runs on Dask), ``stability`` (eigenvalues of a linearization over a parameter) and ``reproduce``
(a paper's reports)."""

from __future__ import annotations

import math
import os
import sys

import numpy as np

from . import __version__
from .cli_checks import (
    JSON_SUFFIXES,
    UsageError,
    _check_out_dir,
    _check_output,
    _check_plot,
    _parse_sets,
    _unit,
    _with_unit,
)
from .scene_collection import scene_collection


def _sweep_values(text: str, option: str):
    """``V1,V2,...`` (numbers where they parse, else names) or ``START:STOP:COUNT`` (evenly spaced,
    rounded to 12 significant digits)."""
    if ":" in text:
        parts = text.split(":")
        try:
            start, stop, count = float(parts[0]), float(parts[1]), int(parts[2])
        except (ValueError, IndexError):
            raise UsageError(f"{option}: expected START:STOP:COUNT, got {text!r}") from None
        if len(parts) != 3 or count < 1:
            raise UsageError(f"{option}: expected START:STOP:COUNT with COUNT >= 1, got {text!r}")
        # to 12 significant digits: 0.1:0.5:5 gives 0.3 itself, not linspace's 0.30000000000000004, so a
        # point typed by hand (or in the API) is the same run with the same result, bit for bit
        return [float(f"{x:.12g}") for x in np.linspace(start, stop, count)]
    out = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            raise UsageError(f"{option}: an empty value in {text!r}")
        if item in ("true", "false", "True", "False"):
            out.append(item in ("true", "True"))
            continue
        try:
            out.append(float(item))
        except ValueError:
            out.append(item)
    return out


def _named_values(items, option: str) -> dict:
    out = {}
    for item in items or []:
        if "=" not in item:
            raise UsageError(f"{option} expects NAME=VALUES, got {item!r}")
        key, values = item.split("=", 1)
        key = key.strip()
        if key in out:
            raise UsageError(f"{option}: {key} given twice")
        out[key] = _sweep_values(values, f"{option} {key}")
    return out


def _sweep(args) -> int:
    import json

    from .sweep import METRICS, SweepInterrupted, plot_sweep, sweep

    grid = _named_values(args.grid, "--grid")
    points = None
    if args.points is not None:
        try:
            with open(args.points) as handle:
                points = json.load(handle)
        except OSError as exc:
            raise UsageError(f"--points {args.points}: {exc.strerror}") from None
        except ValueError as exc:
            raise UsageError(f"--points {args.points}: not JSON ({exc})") from None
        if not isinstance(points, list) or not all(isinstance(p, dict) for p in points):
            raise UsageError(f"--points {args.points}: must hold a JSON list of objects (scene parameters)")
    options = _named_values(args.option, "--option")
    for key, values in options.items():
        options[key] = [int(v) if key == "normal_force_iterations" and isinstance(v, float) else v for v in values]
    steps = [] if args.dt is None else _sweep_values(args.dt, "--dt")
    for step in steps:  # named by the option typed, before anything runs (the sweep checks it again)
        if not isinstance(step, float) or not math.isfinite(step) or step <= 0.0:
            raise UsageError(f"--dt {args.dt}: every step size must be a finite number > 0 (s), got {step!r}")
    plots = []
    for item in args.plot or []:
        metric, *axes = item.split(":")
        if metric not in METRICS and metric not in ("wall_s", "fallback_steps", "energy_gain_steps"):
            raise UsageError(f"--plot {item}: unknown metric {metric!r}; choose from {', '.join(METRICS)}, wall_s")
        if len(axes) > 2:
            raise UsageError(f"--plot {item}: expected METRIC[:X[:Y]]")
        swept = [*grid, *options, "dt"] + (["point"] if points is not None else [])
        for axis in axes:  # checked before anything runs, not after the sweep
            if axis not in swept:
                raise UsageError(f"--plot {item}: {axis!r} is not swept; the swept dimensions are {', '.join(swept)}")
        plots.append((metric, axes))
    if args.scheduler is not None:  # named by its option, before the results folder is made
        from .sweep import check_scheduler

        try:
            check_scheduler(args.scheduler)
        except ValueError as exc:
            raise UsageError(f"--scheduler {args.scheduler}: {str(exc).removeprefix('sweep: ')}") from None
    workers = args.workers
    kwargs = dict(
        grid=grid, points=points, friction=[f.strip() for f in args.friction.split(",")], dt=steps,
        options=options, reference=args.reference, t_end=args.t_end,
        fixed={k: v for k, v in _parse_sets(args.set).items()}, out=args.out, trajectories=args.trajectories,
        scheduler=args.scheduler, workers=workers, retry_failed=args.retry_failed, progress=not args.quiet,
        compiled_loop={"auto": "auto", "on": True, "off": False}[args.compiled_loop], batch=args.batch == "on",
    )  # fmt: skip
    try:
        table = sweep(args.scene, **kwargs)
    except SweepInterrupted as exc:
        done = exc.dataset.attrs["completed"] + exc.dataset.attrs["failed"]
        where = f"; saved in {exc.path}; run the same command to resume" if exc.path else ""
        print(f"lcpdyn: {exc} after {done} of {exc.dataset.attrs['runs']} runs{where}", file=sys.stderr)
        return 128 + exc.signal
    status = table["status"].values.ravel()
    reasons = table["reason"].values.ravel()
    print(
        f"sweep {args.scene}: {table.attrs['runs']} runs against {table.attrs['reference']}: "
        f"{table.attrs['completed']} completed, {table.attrs['failed']} failed"
    )
    for reason in sorted({r for s, r in zip(status, reasons) if s == "failed"}):
        print(f"  failed ({int(np.sum(reasons == reason))}): {reason}")
    print(f"wrote {os.path.join(args.out, 'sweep.nc')}")
    swept = [d for d in table["status"].dims if d not in ("friction",) and table.sizes[d] > 1]
    for metric, axes in plots:
        if not axes:
            axes = [d for d in swept if d not in ("dt",)][:2] or swept[:1]
        if not axes:
            raise UsageError(f"--plot {metric}: nothing swept besides the friction model to plot over")
        path = os.path.join(args.out, f"{metric}.png")
        plot_sweep(table, metric, axes[0], axes[1] if len(axes) > 1 else None, path)
        print(f"wrote {path}")
    return 1 if table.attrs["failed"] else 0


# --- lcpdyn stability -----------------------------------------------------------------------------
def _stability(args) -> int:
    import json

    STABILITY = scene_collection().STABILITY

    from .stability import (
        critical_values,
        parse_sweep,
        plot_root_locus,
        root_locus,
        unstable_values,
        write_root_locus,
    )

    if args.scene not in STABILITY:
        raise UsageError(f"unknown stability scene {args.scene!r}; choose one of {sorted(STABILITY)}")
    module = STABILITY[args.scene]
    if args.param is None:
        name, start, stop, count = module.SWEEP
        values = np.linspace(start, stop, count)
    else:
        name, values = parse_sweep(args.param)
    fixed = {k: float(v) for k, v in _parse_sets(args.set).items()}
    module.system().params(**{name: values[0]}, **fixed)  # unknown names raise here
    plot = _check_plot(args.plot)
    out = None if args.out is None else _check_output(args.out, JSON_SUFFIXES, "--out")
    result = root_locus(module, name, values, **fixed)
    unit = _unit(name)
    crossings = critical_values(result)
    eigenvalues = result["eigenvalues"]
    unstable = int(np.sum(unstable_values(result)))
    print(
        f"{args.scene}: {len(values)} values of {name} from {_with_unit(float(values[0]), name)} to "
        f"{_with_unit(float(values[-1]), name)}; state size {eigenvalues.shape[1]}; unstable (an eigenvalue "
        f"with Re lambda > 1e-8 |lambda|, cyclic zeros aside) at {unstable} values"
    )
    lower, upper = ("below", "above") if values[-1] >= values[0] else ("above", "below")
    for c in crossings:
        before, after = (
            ("stable or marginal", "unstable")
            if c["direction"] == "destabilizing"
            else ("unstable", "stable or marginal")
        )
        mode = (
            f"oscillatory, |Im lambda| = {c['frequency']:.4g} rad/s"
            if c["kind"] == "oscillatory"
            else "non-oscillatory"
        )
        print(
            f"critical {name} = {_with_unit(c['value'], name)}: {before} {lower}, {after} {upper} ({mode}; "
            f"interpolated between {_with_unit(c['bracket'][0], name)} and {_with_unit(c['bracket'][1], name)})"
        )
    if not crossings:
        state = "unstable" if unstable == len(values) else "stable or marginal"
        print(
            f"no critical value of {name} in the sweep: the largest real part of the eigenvalues does not cross "
            f"zero (the motion is {state} at every value)"
        )
    extra = {"units": {name: unit}}
    if plot:
        plot_root_locus(result, plot)
        print(f"wrote {plot}")
    if out:
        write_root_locus(result, out, extra=extra)
        print(f"wrote {out}")
    if not plot and not out:
        print(
            json.dumps(
                {
                    "parameter": name,
                    "unit": unit,
                    "values": values.tolist(),
                    "max_real": result["eigenvalues"].real.max(axis=1).tolist(),
                    "critical_values": [c["value"] for c in crossings],
                }
            )
        )
    return 0


# --- lcpdyn reproduce -----------------------------------------------------------------------------
def _reproduce(args) -> int:
    import json

    REPORTS = scene_collection().REPORTS

    for name in args.scenes:
        if name not in REPORTS:
            raise UsageError(f"unknown report scene {name!r}; choose one of {sorted(REPORTS)}")
    out_dir = _check_out_dir(args.out_dir)
    os.makedirs(out_dir, exist_ok=True)
    for name in args.scenes:
        numbers = REPORTS[name].report(out_dir)
        path = os.path.join(out_dir, f"{name}.json")
        with open(path, "w") as handle:
            json.dump({"lcpdyn_version": __version__, "scene": name, **numbers}, handle, indent=2, default=float)
        print(f"{name}: " + ", ".join(f"{k} = {v}" for k, v in numbers.items()))
        print(f"wrote {path} and {name}-*.png in {out_dir}")
    return 0
