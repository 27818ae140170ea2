"""The ``lcpdyn`` command line: ``scenes``, ``run``, ``compare``, ``demo``, ``stability``, ``sweep``,
``animate`` and ``reproduce``.

    lcpdyn                       # this help
    lcpdyn scenes                # every scene, its parameters with defaults and units
    lcpdyn scenes wheel          # one scene in detail
    lcpdyn run wheel --friction regularized --dt 1e-3 --t-end 4 --out wheel.npz --plot wheel.png
    lcpdyn run wheel --set theta_deg=30 --set mu=0.5 --out w.npz
    lcpdyn run sliding-block --t-end 1000 --record-every 100 --out long.h5   # streamed; Ctrl-C keeps it
    lcpdyn run --resume long.h5 --t-end 1000                                 # and goes on
    lcpdyn compare wheel --out-dir results/
    lcpdyn demo                  # what ``python -m lcpdyn`` and ``./dev.sh demo`` run
    lcpdyn stability rolling-disk --param speed=0:1:101 --plot roots.png
    lcpdyn reproduce rolling-disk swivel-shimmy caster-shimmy --out-dir results/
    lcpdyn animate w.npz --out w.gif
    lcpdyn sweep wheel --grid mu=0.1:0.5:5 --grid theta_deg=10,20,30 --friction regularized,box --out sw/

Conventions: a bad command line (unknown scene, parameter or option value, an output path that
cannot be written: its suffix, a missing or read-only directory) is reported in one line
``lcpdyn: ...`` with exit code 2 before any run starts; a run that fails saves the steps done and
exits 1; SIGINT and SIGTERM stop a run cleanly after the step in progress, save the steps done
and exit 130 and 143. Every file is written under exactly the name given and reported as
written.
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys

from . import __version__
from .cli_analysis import _reproduce, _stability, _sweep
from .cli_checks import (
    RUN_SUFFIXES,
    STREAMED_SUFFIXES,
    UsageError,
    _check_out_dir,
    _check_output,
    _check_plot,
    _parse_sets,
)
from .cli_parser import DEMO, RUN_DEFAULTS, join_negative_values, not_positive
from .cli_parser import parser as _parser
from .run.signals import Terminated, deferred_signals, raise_pending
from .scene_collection import scene_collection


def main(argv=None) -> int:
    """The command line. SIGINT and SIGTERM are recorded, never raised inside its work
    (:func:`lcpdyn.run.signals.deferred_signals`): a run stops after the step in progress, anything
    else where the command ends or before its work starts -- exit 130 or 143, never lost."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["--version"]:  # without the parser
        print(f"lcpdyn {__version__}")
        return 0
    try:
        with deferred_signals():
            return _main(argv)
    except KeyboardInterrupt:
        print("lcpdyn: interrupted by SIGINT", file=sys.stderr)
        return 128 + signal.SIGINT
    except Terminated:
        print("lcpdyn: interrupted by SIGTERM", file=sys.stderr)
        return 128 + signal.SIGTERM


def _main(argv) -> int:
    parser = _parser()
    if not argv:
        parser.print_help()
        return 0
    args = parser.parse_args(join_negative_values(argv))
    raise_pending()  # a signal while the command line started: before any work
    if (message := not_positive(args)) is not None:
        print(f"lcpdyn: {message}", file=sys.stderr)
        return 2
    try:
        if args.command == "scenes":
            return _scenes(args)
        if args.command == "run":
            return _run(args)
        if args.command == "compare":
            return _compare(args)
        if args.command == "demo":
            return _compare(argparse.Namespace(**DEMO, set=None, out_dir=args.out_dir, quiet=args.quiet))
        if args.command == "stability":
            return _stability(args)
        if args.command == "sweep":
            return _sweep(args)
        if args.command == "animate":
            return _animate(args)
        return _reproduce(args)
    except (ValueError, TypeError) as exc:  # UsageError, bad scene parameters and settings (named)
        print(f"lcpdyn: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C outside a run (a run handles it itself: see _execute)
        print("lcpdyn: interrupted by SIGINT", file=sys.stderr)
        return 128 + signal.SIGINT
    except RuntimeError as exc:  # a run that stopped inside compare, stability or reproduce
        stepper = sys.modules.get("lcpdyn.stepper")  # imported, if the run got that far
        if stepper is None or not isinstance(exc, stepper.SimulationError):
            raise
        if isinstance(exc, stepper.RunInterrupted):
            print(f"lcpdyn: {args.command} {exc}; nothing written", file=sys.stderr)
            return 128 + exc.signal
        print(f"lcpdyn: {args.command}: simulation stopped: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `lcpdyn scenes | head`: the reader left
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as a shell reports it


# --- lcpdyn scenes --------------------------------------------------------------------------------
def _scenes(args) -> int:
    """``lcpdyn scenes [SCENE]``, from the command line's catalogue (:mod:`lcpdyn.cli_catalogue`):
    no scene is imported."""
    import textwrap

    from .cli_catalogue import catalogue

    known = catalogue()
    rows = known["scenes"]
    if args.scene is None:
        for name, row in rows.items():
            print(f"{name:16s} [{row['kinds']}] {row['summary']}")
            for kind, parameters in row["parameters"]:
                # a non-breaking space inside "key = value [unit]": lines break between parameters only
                items = ", ".join(f"{key} = {value} [{unit}]".replace(" ", "\xa0") for key, value, unit in parameters)
                print(
                    textwrap.fill(
                        items, width=118, initial_indent=f"    {kind}: ", subsequent_indent=" " * (len(kind) + 6)
                    ).replace("\xa0", " ")
                )
        print("\nunits: [-] dimensionless or a choice; `lcpdyn scenes SCENE` shows one scene in detail.")
        return 0
    if args.scene not in rows:
        raise UsageError(f"unknown scene {args.scene!r}; choose one of {sorted(rows)}")
    name, row = args.scene, rows[args.scene]
    print(f"{name} [{row['kinds']}]\n")
    print(row["doc"])
    for kind, parameters in row["parameters"]:
        if kind == "run":
            print(f"\nrun parameters (lcpdyn run {name} --set KEY=VALUE):")
        else:
            sweep = row["sweep"]
            print(
                f"\nstability parameters (lcpdyn stability {name} --set KEY=VALUE; default sweep: "
                f"--param {sweep[0]}={sweep[1]:g}:{sweep[2]:g}:{sweep[3]}):"
            )
        width = max(len(key) for key, _, _ in parameters)
        for key, value, unit in parameters:
            print(f"  {key:{width}s}  {value:>12s}  {unit}")
    if name in known["reports"]:
        print(f"\npaper checks: lcpdyn reproduce {name} --out-dir results")
    return 0


# --- lcpdyn run -----------------------------------------------------------------------------------
def _scene_module(name):
    from .cli_catalogue import catalogue

    if name not in catalogue()["run"]:  # before any scene is imported
        raise UsageError(f"unknown scene {name!r}; choose one of {sorted(catalogue()['run'])}")
    return scene_collection().SCENES[name]


def _known_parameters(name: str, parameters: dict) -> dict:
    """``parameters`` (from ``--set``) if the run scene ``name`` has each of them, by the catalogue:
    an unknown name is a usage error before the scene is imported."""
    from .cli_catalogue import catalogue

    for kind, known in catalogue()["scenes"][name]["parameters"]:
        if kind == "run":
            keys = [key for key, _, _ in known]
            unknown = sorted(set(parameters) - set(keys))
            if unknown:
                raise UsageError(f"scene {name!r}: unknown parameter(s) {unknown}; known: {sorted(keys)}")
    return parameters


def _run(args) -> int:
    if args.resume is not None:
        return _resume(args)
    from .cli_catalogue import catalogue

    if args.scene is None:
        raise UsageError("run needs a SCENE (lcpdyn scenes lists them) or --resume FILE.h5")
    if args.scene not in catalogue()["run"]:
        raise UsageError(f"unknown scene {args.scene!r}; choose one of {sorted(catalogue()['run'])}")
    options = {key: (RUN_DEFAULTS[key] if getattr(args, key) is None else getattr(args, key)) for key in RUN_DEFAULTS}
    models = catalogue()["friction_models"]
    if options["friction"] not in models:
        raise UsageError(f"unknown friction model {options['friction']!r}; choose one of {sorted(models)}")
    if options["record_every"] < 1:
        raise UsageError(f"--record-every must be an integer >= 1, got {options['record_every']}")
    if args.out is None:
        raise UsageError("run needs --out FILE (.npz, .h5 or .hdf5)")
    parameters = _known_parameters(args.scene, _parse_sets(args.set))
    out = _check_output(args.out, RUN_SUFFIXES, "--out")
    streamed = os.path.splitext(out)[1].lower() in STREAMED_SUFFIXES
    from .run.recorder import npz_checkpoint
    from .trajectory import refuse_existing

    try:
        refuse_existing(out, args.overwrite, "--overwrite")
        if not streamed:  # the checkpoint an .npz run streams into: an earlier run's is a result too
            refuse_existing(npz_checkpoint(out), args.overwrite, "--overwrite")
    except FileExistsError as exc:
        raise UsageError(f"--out {exc}") from None
    plot = _check_plot(args.plot)
    if args.dt is not None:
        parameters["dt"] = args.dt
    if args.t_end is not None:
        parameters["t_end"] = args.t_end
    scene = _scene_module(args.scene).build(**parameters)
    sim = scene.simulation(
        options["friction"],
        method=args.method,
        position_update=options["position_update"],
        normal_force_iterations=options["normal_force_iterations"],
        tolerance=options["tolerance"],
        on_unsolved=options["on_unsolved"],
        gyroscopic=args.gyroscopic,
        energy_check=options["energy_check"],
        energy_tolerance=options["energy_tolerance"],
        compiled_loop={None: "auto", "auto": "auto", "on": True, "off": False}[args.compiled_loop],
    )

    def go():
        return sim.run(
            scene.t_end,
            progress=not args.quiet,
            out=out,
            record_every=options["record_every"],
            overwrite=args.overwrite,
        )

    title = f"{scene.name}, {options['friction']}, h = {scene.dt:g} s"
    return _execute(go, out, streamed, scene.t_end, plot, title)


def _resume(args) -> int:
    given = [
        option
        for option, value in (
            ("SCENE", args.scene),
            ("--friction", args.friction),
            ("--dt", args.dt),
            ("--method", args.method),
            ("--position-update", args.position_update),
            ("--gyroscopic", args.gyroscopic),
            ("--energy-check", args.energy_check),
            ("--energy-tolerance", args.energy_tolerance),
            ("--normal-force-iterations", args.normal_force_iterations),
            ("--tolerance", args.tolerance),
            ("--on-unsolved", args.on_unsolved),
            ("--set", args.set),
            ("--record-every", args.record_every),
            ("--out", args.out),
            ("--compiled-loop", args.compiled_loop),
            ("--overwrite", args.overwrite or None),
        )
        if value is not None
    ]
    if given:
        raise UsageError(
            f"--resume continues {args.resume} with the scene and options recorded in it, in that file: "
            f"{', '.join(given)} cannot be combined with it (only --t-end, --plot and --quiet)"
        )
    if args.t_end is None:
        raise UsageError(f"--resume {args.resume} needs --t-end (the time to continue to)")
    path = args.resume
    if os.path.splitext(path)[1].lower() not in STREAMED_SUFFIXES:
        raise UsageError(f"--resume {path}: only an .h5/.hdf5 written by `lcpdyn run --out FILE.h5` can be continued")
    if not os.path.isfile(path):
        raise UsageError(f"--resume {path}: no such file")
    _check_output(path, STREAMED_SUFFIXES, "--resume")
    plot = _check_plot(args.plot)
    from .rebuild import RebuildError, continue_file, simulation_from_file

    try:
        sim, recorded = simulation_from_file(path)
    except RebuildError as exc:
        raise UsageError(f"--resume: {exc}") from None

    def go():
        return continue_file(sim, recorded, path, args.t_end, progress=not args.quiet)

    title = f"{sim.scene['name']}, {sim.friction.name}, h = {sim.dt:g} s (resumed)"
    return _execute(go, path, True, args.t_end, plot, title, whole_file=True)


def _execute(go, out, streamed, t_end, plot, title, whole_file=False) -> int:
    """Run ``go()`` (the run writes ``out``) and report the file, also after a failure (exit 1) or
    SIGINT/SIGTERM (exit 128 + signal); draw ``plot``. A run whose file could not be written
    (a full disk) says where its steps are kept (exit 1)."""
    from . import stepper

    try:
        trajectory, code = go(), 0
    except stepper.RunInterrupted as exc:
        return _interrupted(exc, out, streamed, t_end)
    except stepper.OutputFailed as exc:
        print(f"lcpdyn: simulation stopped: {exc}", file=sys.stderr)
        return 1
    except stepper.SimulationError as exc:
        print(f"lcpdyn: simulation stopped: {exc}; saving the {exc.step} completed steps", file=sys.stderr)
        trajectory, code = exc.trajectory, 1
        if trajectory is None:
            return code
    written = os.fspath(out)
    if whole_file:  # a resumed run: report and draw the whole file
        from .trajectory import load

        trajectory = load(written)
    every = trajectory.parameters.get("record_every", 1)
    print(f"wrote {written} ({trajectory.t.shape[0]} steps" + (f" recorded, one in {every}" if every > 1 else "") + ")")
    if plot:
        from .plotting import plot_run

        plot_run(trajectory, plot, title=title)
        print(f"wrote {plot}")
    return code


def _interrupted(exc, out, streamed, t_end) -> int:
    name = signal.Signals(exc.signal).name
    status = (exc.trajectory.parameters or {}).get("status") if exc.trajectory is not None else None
    if status == "completed":  # the signal came during the last step or the final save
        path = os.fspath(exc.path or out)
        print(
            f"lcpdyn: {name} arrived as the run ended: it had completed; {exc.step} steps saved to {path} "
            "(status 'completed')",
            file=sys.stderr,
        )
        return 128 + int(exc.signal)
    if streamed:
        path = os.fspath(exc.path or out)
        tail = f"continue with: lcpdyn run --resume {shlex.quote(path)} --t-end {t_end:.15g}"
    else:
        path = os.fspath(out)
        tail = "an .npz cannot be continued: write to an .h5 (--out FILE.h5) to resume a stopped run"
    print(
        f"lcpdyn: interrupted by {name} at t = {exc.time:.6g} s; {exc.step} steps saved to {path} "
        f"(status 'interrupted'); {tail}",
        file=sys.stderr,
    )
    return 128 + int(exc.signal)


# --- lcpdyn compare / demo ------------------------------------------------------------------------
def _compare(args) -> int:
    module = _scene_module(args.scene)  # an unknown scene is refused before the engine is imported
    from .compare import compare, format_table, write_json
    from .compare_figures import write_figures

    parameters = _parse_sets(args.set)
    out_dir = _check_out_dir(args.out_dir)
    os.makedirs(out_dir, exist_ok=True)
    updates = ("symplectic", "paper") if args.position_update == "both" else (args.position_update,)
    for update in updates:
        result = compare(
            module, reference_dt=args.reference_dt, progress=not args.quiet, position_update=update,
            reference=args.reference, **parameters,
        )  # fmt: skip
        print(format_table(result))
        prefix = os.path.join(out_dir, f"{result['scene']}-{update}")
        write_json(result, prefix + ".json")
        paths = write_figures(result, prefix)
        print(f"wrote {prefix}.json, " + ", ".join(paths) + "\n")
    return 0


# --- lcpdyn animate -------------------------------------------------------------------------------
def _animate(args) -> int:
    from .animation import WRITERS, animate, frame_times
    from .trajectory import load

    out = _check_output(args.out, (*WRITERS, ".rrd"), "--out")
    if not os.path.isfile(args.result):
        raise UsageError(f"RESULT {args.result}: no such file")
    trajectory = load(args.result)
    if out.lower().endswith(".rrd"):
        from .viewer import export_rerun

        try:
            count = export_rerun(trajectory, out)
        except ImportError as exc:
            raise UsageError(str(exc)) from None
        print(f"wrote {out} ({count} time points; open it with `rerun {out}`)")
        return 0
    frame_times(trajectory, args.fps, args.speed)  # bad numbers named before the model is rebuilt
    frames = animate(trajectory, out, fps=args.fps, speed=args.speed)
    print(f"wrote {out} ({frames} frames at {args.fps:g} fps, {args.speed:g} simulated s per s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
