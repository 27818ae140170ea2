"""The argument parser of the ``lcpdyn`` command line (:mod:`lcpdyn.cli`): every command, its
options, their defaults and help; the choices it lists come from the tables the code uses."""

from __future__ import annotations

import argparse

from . import __version__
from .cli_catalogue import catalogue

__all__ = ["parser", "RUN_DEFAULTS", "DEMO", "plot_suffixes", "listing", "not_positive", "join_negative_values"]

# ``run`` options whose parser default is None so that --resume can tell them given from not
# given; their effective defaults (shown in the help):
RUN_DEFAULTS = {
    "friction": "regularized",
    "position_update": "symplectic",
    "energy_check": "warn",
    "energy_tolerance": 1e-3,
    "normal_force_iterations": 0,
    "record_every": 1,
    "tolerance": 1e-9,
    "on_unsolved": "stop",
}
DEMO = {"scene": "wheel", "reference_dt": 1e-4, "reference": "stepper", "position_update": "both"}  # = compare wheel


class _HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """Descriptions kept as written; every option's default appended as "(default: ...)" unless
    its help already states it (options whose default depends on the scene or the friction
    model, or that --resume must see as not given)."""

    def _get_help_string(self, action):
        text = action.help or ""
        if "(default" in text or action.default in (None, False, argparse.SUPPRESS):
            return text
        return super()._get_help_string(action)

    def _split_lines(self, text, width):  # no line break inside a hyphenated name (rolling-disk, judice-pires)
        import textwrap

        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


POSITIVE = (
    ("dt", "--dt"),
    ("t_end", "--t-end"),
    ("tolerance", "--tolerance"),
    ("energy_tolerance", "--energy-tolerance"),
    ("reference_dt", "--reference-dt"),
    ("fps", "--fps"),
    ("speed", "--speed"),
)
"""Options that take a step, a time, a tolerance, a rate or a speed: a finite number > 0
(:func:`not_positive`)."""


def not_positive(args) -> str | None:
    """The error for the first of :data:`POSITIVE` that ``args`` gives as a number not finite and
    > 0 (named by its option, before any work is done; :func:`lcpdyn.validation.positive`), or None."""
    from .validation import positive

    for name, option in POSITIVE:
        value = getattr(args, name, None)
        if isinstance(value, float):
            try:
                positive(option, value)
            except ValueError as exc:
                return str(exc)
    return None


def join_negative_values(argv: list) -> list:
    """``--opt -1e-3`` as ``--opt=-1e-3``: argparse takes a negative number written with an
    exponent for an option of its own ("expected one argument"), hiding the value's real fault."""
    out, i = [], 0
    while i < len(argv):
        token = argv[i]
        following = argv[i + 1] if i + 1 < len(argv) else None
        if token.startswith("--") and "=" not in token and following is not None and following.startswith("-"):
            try:
                float(following)
            except ValueError:
                pass
            else:
                out.append(f"{token}={following}")
                i += 2
                continue
        out.append(token)
        i += 1
    return out


def listing(names) -> str:
    """The names joined by commas, for a help or error message."""
    return ", ".join(names)


def plot_suffixes() -> tuple:
    """The figure formats matplotlib writes (from the command line's catalogue)."""
    return tuple(catalogue()["plot_suffixes"])


# --- the parser -----------------------------------------------------------------------------------
def parser() -> argparse.ArgumentParser:
    """The whole command line; the choices it lists come from the tables the code uses
    (scenes.SCENES/STABILITY/REPORTS, lcpdyn.friction.MODELS, the solver registries), read from
    :func:`lcpdyn.cli_catalogue.catalogue` so that nothing of the engine is imported."""
    known = catalogue()
    REPORTS, SCENES, STABILITY = known["reports"], known["run"], known["stability"]
    MODELS, COMPARED = known["friction_models"], known["compared_models"]

    formatter = _HelpFormatter
    parser = argparse.ArgumentParser(
        prog="lcpdyn",
        formatter_class=formatter,
        description="Contact dynamics on complementarity solvers.",
        epilog="`lcpdyn COMMAND --help` shows a command's options with their defaults; `lcpdyn scenes` lists the "
        "scenes\nwith their parameters, defaults and units. Exit codes: 0 done, 1 a run failed (its steps "
        "are saved),\n2 bad command line (nothing run), 130/143 stopped by SIGINT/SIGTERM (steps saved).",
    )
    parser.add_argument("--version", action="version", version=f"lcpdyn {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")

    scenes_cmd = sub.add_parser(
        "scenes",
        formatter_class=formatter,
        help="list the scenes with their parameters (defaults, units); one in detail",
        description="Without SCENE: every scene with its one-line description, the "
        "commands that take it\nand its parameters (default and unit). With "
        "SCENE: that scene in detail.",
    )
    scenes_cmd.add_argument(
        "scene",
        nargs="?",
        default=None,
        help="show this scene in detail; one of: " + listing(dict.fromkeys([*SCENES, *STABILITY])),
    )

    methods, coulomb_methods = known["methods"], known["coulomb_methods"]
    model_methods = ", ".join(f"{name} {method}" for name, method in MODELS.items())
    run = sub.add_parser(
        "run",
        formatter_class=formatter,
        help="simulate one scene with one friction model",
        description="Simulate one scene with one friction model and write the trajectory.\n\n"
        "--out FILE.npz is saved when the run ends; --out FILE.h5 (or .hdf5) is written as the run "
        "goes,\nso that a killed run keeps its steps and a stopped one can be continued with "
        "--resume.\nSIGINT (Ctrl-C) or SIGTERM stop the run after the step in progress: the steps done "
        "are saved\n(status 'interrupted') and the exit code is 130 or 143.",
        epilog="scenes (their parameters: lcpdyn scenes SCENE):\n  " + listing(SCENES),
    )
    run.add_argument("scene", nargs="?", default=None, help="the scene (not with --resume); one of: " + listing(SCENES))
    run.add_argument(
        "--friction",
        default=None,
        metavar="MODEL",
        help=f"friction model, one of: {listing(MODELS)} (default: {RUN_DEFAULTS['friction']})",
    )
    run.add_argument("--dt", type=float, default=None, help="step size h (s) (default: the scene's dt)")
    run.add_argument(
        "--t-end",
        type=float,
        default=None,
        help="end time (s) (default: the scene's t_end; with --resume: required, the time to continue to)",
    )
    run.add_argument(
        "--method",
        default=None,
        help=f"complementarity solver: {listing(methods)}; for coulomb: {listing(coulomb_methods)} "
        f"(default: the friction model's: {model_methods})",
    )
    run.add_argument(
        "--position-update",
        default=None,
        choices=("symplectic", "paper", "midpoint"),
        help="symplectic: q+ with v+ and the midpoint gyroscopic step (adds no energy); paper: "
        "Peiret 2016 Eq. (7) with the known v and the explicit gyroscopic term; midpoint: Moreau's "
        "midpoint scheme, second order on smooth phases "
        f"(default: {RUN_DEFAULTS['position_update']})",
    )
    run.add_argument(
        "--gyroscopic",
        default=None,
        choices=("midpoint", "explicit"),
        help="treatment of omega x I omega (default: midpoint with symplectic, explicit with paper)",
    )
    run.add_argument(
        "--energy-check",
        default=None,
        choices=("warn", "stop", "off"),
        help="on a step whose energy rises above the budget: warn at the end, stop, or off "
        f"(default: {RUN_DEFAULTS['energy_check']})",
    )
    run.add_argument(
        "--energy-tolerance",
        type=float,
        default=None,
        help=f"energy rise allowed, relative to the run's energy scale (default: {RUN_DEFAULTS['energy_tolerance']:g})",
    )
    run.add_argument(
        "--tolerance",
        type=float,
        default=None,
        help="acceptance bound on the framework's relative residual of every step's answer "
        f"(default: {RUN_DEFAULTS['tolerance']:g})",
    )
    run.add_argument(
        "--on-unsolved",
        default=None,
        choices=("stop", "flag"),
        help="a step whose answer misses --tolerance: stop the run, or keep the better answer, marked "
        "in the file's health (UNSOLVED), status and residual, with a warning at the end "
        f"(default: {RUN_DEFAULTS['on_unsolved']})",
    )
    run.add_argument(
        "--normal-force-iterations",
        type=int,
        default=None,
        metavar="K",
        help="re-solve each step K more times with friction bounds from the latest normal impulses "
        f"(default: {RUN_DEFAULTS['normal_force_iterations']})",
    )
    run.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a scene parameter, repeatable (default: none; the parameters with their "
        "defaults and units: lcpdyn scenes SCENE)",
    )
    run.add_argument(
        "--record-every",
        type=int,
        default=None,
        metavar="K",
        help="record every K-th step (K >= 1; the last step is always recorded, and the health "
        f"flags of skipped steps go to the next record) (default: {RUN_DEFAULTS['record_every']})",
    )
    run.add_argument(
        "--out",
        default=None,
        metavar="FILE",
        help="the trajectory: FILE.npz (saved at the end) or FILE.h5/.hdf5 (written as the run goes, "
        "resumable) (default: none; required, except with --resume)",
    )
    run.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the file --out names if it exists (default: refuse, naming what it holds; a "
        "stopped FILE.h5 is continued with --resume)",
    )
    run.add_argument(
        "--resume",
        default=None,
        metavar="FILE.h5",
        help="continue the stopped run in FILE.h5 (written by `lcpdyn run ... --out FILE.h5`) up to "
        "--t-end, in the same file; the scene and options come from the file (default: a new run)",
    )
    run.add_argument(
        "--plot",
        default=None,
        metavar="FILE",
        help="a figure of the run's main quantities, format by suffix: "
        + listing(s.lstrip(".") for s in plot_suffixes())
        + " (default: no figure)",
    )
    run.add_argument(
        "--compiled-loop",
        nargs="?",
        const="on",
        default=None,
        choices=("auto", "on", "off"),
        help="chunks of steps as one compiled call (small scenes: regularized, box, polygonal, continuous or creep "
        "with judice-pires, rigid or compliant contacts, no bilateral rows "
        "or friction profiles; every step still checked, a refused one redone by the "
        "ordinary step): auto wherever the scene allows, on (the bare flag) a scene it cannot take is an "
        "error, off the ordinary step (default: auto)",
    )
    run.add_argument("--quiet", action="store_true", help="no progress bar")

    compare = sub.add_parser(
        "compare",
        formatter_class=formatter,
        help="every friction model against exact Coulomb (Peiret 2016 Figs. 4-5)",
        description=f"Run SCENE under {listing(COMPARED)} at the scene's step and exact\nCoulomb also at "
        "--reference-dt; print the table of Peiret 2016's metrics and write\n"
        "OUT_DIR/SCENE-UPDATE.json and the Fig. 4/5-style PNGs.",
    )
    compare.add_argument("scene", help="the scene; one of: " + listing(SCENES))
    compare.add_argument(
        "--reference-dt", type=float, default=DEMO["reference_dt"], help="step of the Coulomb reference (s)"
    )
    compare.add_argument(
        "--reference",
        default=DEMO["reference"],
        choices=("stepper", "exact"),
        help="stepper: exact Coulomb by the time stepper at --reference-dt; exact: event-driven "
        "(lcpdyn.reference), sampled every --reference-dt",
    )
    compare.add_argument(
        "--position-update",
        default=DEMO["position_update"],
        choices=("symplectic", "paper", "midpoint", "both"),
        help="both: the engine's default v+ update first, then the paper's Eq. (7); midpoint: Moreau's "
        "second-order midpoint scheme",
    )
    compare.add_argument(
        "--set", action="append", metavar="KEY=VALUE", help="override a scene parameter, repeatable (default: none)"
    )
    compare.add_argument(
        "--out-dir",
        default="results",
        help="directory for the JSON and figures (created if missing; its parent must exist)",
    )
    compare.add_argument("--quiet", action="store_true", help="no progress bars")

    demo = sub.add_parser(
        "demo",
        formatter_class=formatter,
        help="the main job: the Peiret 2016 wheel under every friction model against exact Coulomb",
        description=f"`lcpdyn compare {DEMO['scene']} --reference-dt {DEMO['reference_dt']:g} --position-update "
        f"{DEMO['position_update']}`:\nthe Peiret 2016 wheel (Table 1) under {listing(COMPARED)} "
        "against\nexact Coulomb, with the engine's default v+ update and with the paper's Eq. (7);\n"
        "what `python -m lcpdyn` without arguments and `./dev.sh demo` run.",
    )
    demo.add_argument(
        "--out-dir",
        default="results",
        help="directory for the JSON and figures (created if missing; its parent must exist)",
    )
    demo.add_argument("--quiet", action="store_true", help="no progress bars")

    sweeps = "; ".join(
        f"{name}: {sweep[0]}={sweep[1]:g}:{sweep[2]:g}:{sweep[3]}"
        for name in STABILITY
        for sweep in [known["scenes"][name]["sweep"]]
    )
    stability = sub.add_parser(
        "stability",
        formatter_class=formatter,
        help="eigenvalues of the linearized equations over a parameter (Schwab–Meijaard 2003 Eq. 29)",
        description="Linearize the scene's steady motion at every value of the swept parameter, print where the "
        "largest\nreal part of the eigenvalues crosses zero (the critical values, with units), and "
        "optionally\nwrite the root locus (figure, JSON).",
        epilog="scenes and their default sweeps:\n  " + sweeps.replace("; ", "\n  "),
    )
    stability.add_argument("scene", help="the scene; one of: " + listing(STABILITY))
    stability.add_argument(
        "--param",
        default=None,
        metavar="NAME=START:STOP:COUNT",
        help=f"the swept parameter (default: the scene's: {sweeps})",
    )
    stability.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="fix another parameter, repeatable (default: the scene's values, see lcpdyn scenes SCENE)",
    )
    stability.add_argument(
        "--plot",
        default=None,
        metavar="FILE",
        help="root-locus figure, format by suffix: "
        + listing(s.lstrip(".") for s in plot_suffixes())
        + " (default: no figure)",
    )
    stability.add_argument(
        "--out",
        default=None,
        metavar="FILE.json",
        help="JSON with the eigenvalues and critical values (default: none; without --plot and "
        "--out the largest real parts are printed as JSON)",
    )

    sweep = sub.add_parser(
        "sweep",
        formatter_class=formatter,
        help="run a grid of scene parameters x friction models x step sizes, scored against a reference, on Dask",
        description="Run every combination of the swept scene parameters (--grid, or --points FILE.json), friction\n"
        "models, step sizes and solver options, each scored against the reference run of its scene point\n"
        "(lcpdyn.sweep), on a dask.distributed cluster: an embedded local one (--workers) or --scheduler's.\n"
        "OUT/sweep.nc is the table (xarray, netCDF), one dimension per swept quantity; OUT/runs/ holds each\n"
        "finished run, so the same command resumes an interrupted sweep. A run that fails is recorded with\n"
        "its reason and the sweep goes on; the exit code is then 1.",
        epilog="example (the study of the guide's sweeps page):\n"
        "  lcpdyn sweep wheel --grid mu=0.1:0.5:5 --grid theta_deg=10,20,30 "
        "\\\n      --friction regularized,polygonal,box --reference coulomb@1e-4 --out wheel-sweep "
        "\\\n      --plot force_rms_deviation_percent --plot misalignment_rms_deg",
    )
    sweep.add_argument("scene", help="the scene; one of: " + listing(SCENES))
    sweep.add_argument(
        "--grid",
        action="append",
        metavar="NAME=V1,V2,...|NAME=START:STOP:COUNT",
        help="a swept scene parameter, repeatable; every combination runs (default: none)",
    )
    sweep.add_argument(
        "--points",
        default=None,
        metavar="FILE.json",
        help="a JSON list of scene-parameter objects to run as given, instead of --grid (default: none)",
    )
    sweep.add_argument(
        "--friction",
        default="regularized",
        metavar="M1,M2,...",
        help=f"friction models, comma-separated, from: {listing(MODELS)}",
    )
    sweep.add_argument(
        "--dt", default=None, metavar="H1,H2,...", help="step sizes (s), comma-separated (default: the scene's dt)"
    )
    sweep.add_argument(
        "--option",
        action="append",
        metavar="NAME=V1,V2,...",
        help="a swept Simulation option, repeatable (method, tolerance, position_update, stabilization, ...) "
        "(default: none)",
    )
    sweep.add_argument(
        "--set", action="append", metavar="KEY=VALUE", help="fix a scene parameter, repeatable (default: none)"
    )
    sweep.add_argument("--t-end", type=float, default=None, help="run length (s) (default: the scene's t_end)")
    sweep.add_argument(
        "--reference",
        default="coulomb@1e-4",
        metavar="MODEL@DT",
        help="the run each run is scored against: a friction model at a step, exact@DT (the event-driven "
        "solution sampled every DT), or none (runs timed and checked, not scored)",
    )
    sweep.add_argument(
        "--out",
        required=True,
        metavar="DIR",
        help="the results directory (created, its parent must exist; resumable) (default: none, required)",
    )
    sweep.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="a running dask scheduler (tcp://host:8786) to send the runs to (default: an embedded local cluster)",
    )
    sweep.add_argument(
        "--workers",
        type=int,
        default=None,
        help="worker processes of the embedded cluster; 0: run in this process, without Dask (default: one per CPU)",
    )
    sweep.add_argument(
        "--trajectories", action="store_true", help="stream every run's trajectory to OUT/trajectories/KEY.h5"
    )
    sweep.add_argument("--retry-failed", action="store_true", help="on resume, run the failed runs again")
    sweep.add_argument(
        "--compiled-loop",
        default="auto",
        choices=("auto", "on", "off"),
        help="auto: every run whose scene the compiled loop takes runs in it (every step still checked); on/off: force",
    )
    sweep.add_argument(
        "--batch",
        default="on",
        choices=("on", "off"),
        help="on: runs of one structure are stepped together, one compiled call for many (lcpdyn.batch); "
        "off: one by one (default: on)",
    )
    sweep.add_argument(
        "--plot",
        action="append",
        metavar="METRIC[:X[:Y]]",
        help="a figure OUT/METRIC.png per friction model panel: a heat map over X and Y (default: the first two "
        "swept scene parameters) or a line over X; repeatable (default: none)",
    )
    sweep.add_argument("--quiet", action="store_true", help="no progress bar")

    animate = sub.add_parser(
        "animate",
        formatter_class=formatter,
        help="a 3D animation of a result file: bodies, contacts, friction and slip arrows",
        description="Draw the run in RESULT (a file written by `lcpdyn run --out`) frame by frame: each body by\n"
        "its contact geometry, the friction force and slip velocity at each contact, the contact\n"
        "points' paths and a time readout (lcpdyn.animation); .gif by Pillow, .mp4 by ffmpeg; .rrd: a Rerun\n"
        "recording for the interactive viewer, every step on a time line (lcpdyn.viewer, extra 'viewer').",
    )
    animate.add_argument("result", help="the trajectory file (.npz, .h5)")
    animate.add_argument(
        "--out",
        required=True,
        metavar="FILE",
        help="FILE.gif or FILE.mp4 (an animation) or FILE.rrd (a Rerun recording) (default: none, required)",
    )
    animate.add_argument("--fps", type=float, default=25.0, help="frames per second of video")
    animate.add_argument(
        "--speed", type=float, default=1.0, help="simulated seconds per second of video (1: real time)"
    )

    reproduce = sub.add_parser(
        "reproduce",
        formatter_class=formatter,
        help="the paper checks and figures of a scene (" + listing(REPORTS) + ")",
        description="Run the paper checks of each scene; write OUT_DIR/SCENE.json and OUT_DIR/SCENE-*.png.",
    )
    reproduce.add_argument("scenes", nargs="+", metavar="SCENE", help="one or more of: " + listing(REPORTS))
    reproduce.add_argument(
        "--out-dir",
        default="results",
        help="directory for the JSON and figures (created if missing; its parent must exist)",
    )
    return parser
