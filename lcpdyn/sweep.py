"""Parameter sweeps: scene parameters x friction models x step sizes x solver options, every run
scored against a reference run, on ``dask.distributed``.

A friction-model study is a sweep (issue 16): the Peiret 2016 wheel over mu x theta under the
regularized, polygonal and box models against exact Coulomb at a fine step is 45 runs and 15
references. :func:`sweep` takes the grid (or a list of scene-parameter points), runs every
combination, and returns an ``xarray.Dataset`` with one dimension per swept quantity::

    from lcpdyn.sweep import sweep
    table = sweep("wheel", grid={"mu": [0.1, 0.3, 0.5], "theta_deg": [10, 20, 30]},
                  friction=["regularized", "polygonal", "box"], dt=[1e-3],
                  reference="coulomb@1e-4", out="wheel-sweep")
    table["force_rms_deviation_percent"].sel(friction="box", dt=1e-3)

What a run yields (:data:`METRICS`): every number of :func:`lcpdyn.metrics.summary` against its
reference -- the force RMS deviation over the whole run and over the sliding phase (% of mu
lam_N, Peiret 2016 Fig. 4), the RMS misalignment of friction and slip (deg, Fig. 5), the largest
static force over the cone, the position errors and the energy errors -- and its first
slide-to-roll time and that time's distance from the reference's; with its status
(``completed``, ``failed`` with the reason, ``not run``), its wall time, steps, fallback steps,
steps flagged for an energy gain, and the worker it ran on; the warnings it issued (an
``EnergyWarning``, say) are kept in its record (``out/runs/<key>.json``), not printed by the
workers.

The reference (:class:`Reference`) is one run per scene-parameter point: a friction model at a
step (``"coulomb@1e-4"``, exact Coulomb at 0.1 ms; any run of the grid may be named, e.g.
``"regularized@1e-3"``) or the event-driven exact solution of :mod:`lcpdyn.reference`
(``"exact@1e-4"``, sampled every 0.1 ms). Its own error is estimated as in
:func:`lcpdyn.compare.reference_error` (step halving, or the exact solution at 100x its ODE
tolerance) and stored beside the scores (``reference_error_*``, over the scene-parameter
dimensions only), so a deviation smaller than the reference's own error is seen as such.
``reference=None`` (``"none"``) runs no reference: the runs are timed and checked (status,
steps, fallbacks, energy flags, first slide-to-roll time), not scored -- what a benchmark of the
runs alone wants. The
reference runs on a worker; each run that needs it is sent to a worker with it, and its metrics
are computed there: only the numbers travel back.

Where it runs: on a ``dask.distributed`` cluster. By default an embedded ``LocalCluster`` of
single-threaded worker processes, one per CPU (``workers=`` sets the number); ``scheduler=``
(an address such as ``tcp://10.0.0.5:8786``) or ``client=`` sends the runs to an existing
cluster, so the same call scales from a laptop to many machines (the workers need lcpdyn
installed, and, for ``trajectories=True``, ``out`` on a file system they share). ``workers=0``
runs everything in this process, without Dask. Each worker process keeps its compiled code: the
kinematics and the compiled loop are cached per structure (:data:`lcpdyn.model.COMPILATIONS`),
so after a worker's first run nothing recompiles when only numbers change; each record carries
the compilations its run caused (``compilations``). Workers also keep JAX's persistent
compilation cache on disk (:func:`_use_compilation_cache`), so a new worker process's first
run loads what an earlier one compiled.

Failures and interruptions: a run that raises (a scene that cannot be built, a step that cannot
be solved, a worker that died) is recorded as ``failed`` with the reason and the sweep goes on;
a failed reference fails the runs of its point, naming it. With ``out``, every finished run is
written at once (``out/runs/<key>.json``, atomically), and ``out/sweep.nc`` (netCDF, h5netcdf)
is rewritten atomically at the end -- also after Ctrl-C or SIGTERM (:class:`SweepInterrupted`,
holding the table so far). Calling :func:`sweep` again with the same ``out`` resumes: runs
already recorded are skipped (failed ones too, unless ``retry_failed=True``); the grid may be
extended. The directory remembers the sweep (``out/sweep.json``); a call that differs in the
scene, the fixed parameters, the reference or the run length is refused, naming the difference.

Speed: by default (``compiled_loop="auto"``) every run whose scene the compiled loop takes
(:mod:`lcpdyn.compiled_loop`: small scenes, the regularized or box model, rigid contacts) runs
in it -- chunks of steps in one compiled call, every step still checked by the framework's
residual on the host, a refused step redone by the ordinary step -- which is 7x faster on the
wheel; its numbers equal the ordinary step's to rounding (the same equations in XLA's order of
operations). ``compiled_steps`` says how many steps each run took there. And by default
(``batch=True``) the runs go in batches (:func:`lcpdyn.batch.run_batch`): the runs of one
structure (one scene and friction model over different numbers) are stepped together, one
compiled call for many copies, each copy still checked step by step on the host; a run's numbers
equal its single run's to rounding and depend on its own parameters only (never on its batch).
A batch is one Dask task (as many per block of scene points as the cluster has workers; without
a reference, one block), and its runs' records are written when it ends (an interruption keeps
the runs it completed). ``batch=False``: one run per task, each run's record as it ends.

Reproducibility: a run's numbers depend on its own parameters only, never on the worker or the
order (each run is a fresh :class:`~lcpdyn.stepper.Simulation` on a freshly built scene); the
table's attributes hold the sweep's whole description (``sweep``, JSON) and the lcpdyn version.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import signal
import socket
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from . import __version__
from .scene_collection import scene_collection

__all__ = [
    "sweep",
    "SweepSpec",
    "Reference",
    "SweepInterrupted",
    "METRICS",
    "REFERENCE_METRICS",
    "OPTIONS",
    "load_sweep",
    "plot_sweep",
]

METRICS = (
    "force_rms_deviation_percent",
    "force_rms_deviation_sliding_percent",
    "misalignment_rms_deg",
    "static_force_ratio_max",
    "position_error_final",
    "position_error_max",
    "position_error_final_per_path",
    "energy_error_final_J",
    "energy_error_max_abs_J",
    "energy_error_max_relative",
    "first_roll_s",
    "first_roll_error_s",
)
"""A run's scores against its reference (:func:`lcpdyn.metrics.summary`, plus its first
slide-to-roll time and that time's distance from the reference's), NaN where undefined or failed."""

RUN_FIELDS = ("wall_s", "steps", "fallback_steps", "energy_gain_steps", "compilations", "compiled_steps", "batch")
"""A run's bookkeeping: wall time (s, build and run), steps taken, steps whose first solver failed
and the fallback's answer was used, steps flagged for an energy gain, compilations it caused,
steps taken by the compiled loop (:mod:`lcpdyn.compiled_loop`), and the runs of the batch it ran
in (:mod:`lcpdyn.batch`; 1: alone). A batched run's wall time is its batch's shared evenly, and
its batch's compilations are on the batch's first run."""

REFERENCE_METRICS = (
    "force_rms_deviation_percent",
    "force_rms_deviation_sliding_percent",
    "position_error_final",
    "position_error_max",
    "energy_error_max_abs_J",
    "first_roll_s",
)
"""The columns in which the reference's own error is estimated (``reference_error_<name>``)."""

OPTIONS = (
    "method",
    "tolerance",
    "position_update",
    "stabilization",
    "normal_force_iterations",
    "fallback_method",
    "static_threshold",
    "gyroscopic",
    "sparse",
    "compiled_loop",
)
"""The :class:`~lcpdyn.stepper.Simulation` options a sweep may vary (``options=``)."""

NOT_RUN = "not run"


class _Stopped(KeyboardInterrupt):
    """A run inside this process stopped by SIGINT or SIGTERM (its RunInterrupted): the sweep stops."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def _interruption():
    """The stepper's RunInterrupted class (a SimulationError, which run_one would record as a failure)."""
    from .run.errors import RunInterrupted

    return RunInterrupted


class SweepInterrupted(RuntimeError):
    """A sweep stopped by SIGINT or SIGTERM (``signal``). ``dataset`` holds the runs finished so
    far (the rest ``not run``); with ``out``, they are saved and the same call resumes."""

    def __init__(self, signum, dataset, path=None):
        super().__init__(f"sweep interrupted by {signal.Signals(signum).name}")
        self.signal, self.dataset, self.path = signum, dataset, path


# --- what a sweep is ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Reference:
    """The run every run of a scene-parameter point is scored against: friction model
    ``friction`` at step ``dt`` (s), or ``friction="exact"``: the event-driven exact Coulomb
    solution (:func:`lcpdyn.reference.exact_coulomb`) sampled every ``dt``."""

    friction: str = "coulomb"
    dt: float = 1e-4
    position_update: str = "symplectic"

    @classmethod
    def parse(cls, text) -> Reference | None:
        """``"MODEL@DT"`` (``"coulomb@1e-4"``, ``"exact@1e-4"``), a :class:`Reference`, or
        None / ``"none"``: no reference (runs are timed and checked, not scored)."""
        if text is None or text == "none":
            return None
        if isinstance(text, Reference):
            return text
        if isinstance(text, dict):
            return cls(**text)
        if not isinstance(text, str) or text.count("@") != 1:
            raise ValueError(f"reference must be 'MODEL@DT' (e.g. 'coulomb@1e-4', 'exact@1e-4'), got {text!r}")
        name, step = text.split("@")
        try:
            dt = float(step)
        except ValueError:
            raise ValueError(f"reference {text!r}: the step after '@' must be a number, got {step!r}") from None
        return cls(name.strip(), dt)

    @property
    def label(self) -> str:
        return f"{self.friction}@{self.dt:g}"


@dataclass(frozen=True)
class SweepSpec:
    """A sweep, validated (:meth:`checked`). ``grid``: scene parameter -> values, every
    combination run; or ``points``: a list of scene-parameter dicts run as given (one dimension
    ``point``). ``fixed``: scene parameters held at one value. ``friction``, ``dt`` (s) and
    ``options`` (a :data:`OPTIONS` name -> values) multiply the scene points."""

    scene: str
    grid: dict = field(default_factory=dict)
    points: tuple | None = None
    friction: tuple = ("regularized",)
    dt: tuple = ()
    options: dict = field(default_factory=dict)
    reference: Reference | None = Reference()
    t_end: float | None = None
    fixed: dict = field(default_factory=dict)
    compiled_loop: object = "auto"

    def checked(self) -> SweepSpec:
        """This sweep with every name and number checked before anything runs (a ``ValueError``
        names the culprit), ``dt`` defaulting to the scene's and ``t_end`` made explicit."""
        collection = scene_collection()
        SCENES, override = collection.SCENES, collection.override

        from .friction import MODELS

        if self.scene not in SCENES:
            raise ValueError(f"unknown scene {self.scene!r}; choose one of {sorted(SCENES)}")
        defaults = SCENES[self.scene].DEFAULTS
        fixed = override(defaults, dict(self.fixed), self.scene)
        for key in ("dt", "t_end"):
            if key in self.grid or key in self.fixed or any(key in p for p in self.points or ()):
                raise ValueError(f"sweep: {key} is not a scene parameter to sweep; use the sweep's {key}= instead")
        grid = {}
        for key, values in self.grid.items():
            values = tuple(_plain(v) for v in np.atleast_1d(np.asarray(values, dtype=object)).tolist())
            if not values:
                raise ValueError(f"sweep: grid parameter {key!r} has no values")
            if len(set(values)) != len(values):
                raise ValueError(f"sweep: grid parameter {key!r} repeats a value: {list(values)}")
            for value in values:
                override(defaults, {key: value}, self.scene)  # unknown names, non-numbers, NaN
            grid[key] = values
        points = None
        if self.points is not None:
            if grid:
                raise ValueError("sweep: give a grid or a list of points, not both")
            points = tuple({k: _plain(v) for k, v in dict(p).items()} for p in self.points)
            if not points:
                raise ValueError("sweep: the list of points is empty")
            keys = set(points[0])
            for p in points:
                if set(p) != keys:
                    raise ValueError(f"sweep: every point must set the same parameters; {sorted(p)} != {sorted(keys)}")
                override(defaults, p, self.scene)
        friction = tuple(_strings(self.friction, "friction"))
        for name in friction:
            if name not in MODELS:
                raise ValueError(f"sweep: unknown friction model {name!r}; choose from {sorted(MODELS)}")
        steps = tuple(float(d) for d in np.atleast_1d(self.dt)) if len(np.atleast_1d(self.dt)) else (fixed["dt"],)
        for d in steps:
            if not (math.isfinite(d) and d > 0):
                raise ValueError(f"sweep: every step size dt must be finite and > 0, got {d!r}")
        if len(set(steps)) != len(steps):
            raise ValueError(f"sweep: dt repeats a value: {list(steps)}")
        options = {}
        for key, values in self.options.items():
            if key not in OPTIONS:
                raise ValueError(f"sweep: option {key!r} cannot be swept; choose from {list(OPTIONS)}")
            options[key] = tuple(_plain(v) for v in np.atleast_1d(np.asarray(values, dtype=object)).tolist())
            if not options[key]:
                raise ValueError(f"sweep: option {key!r} has no values")
        reference = Reference.parse(self.reference)
        if reference is not None and reference.friction != "exact" and reference.friction not in MODELS:
            raise ValueError(
                f"sweep: unknown reference model {reference.friction!r}; choose 'exact' or one of {sorted(MODELS)}"
            )
        if reference is not None and not (math.isfinite(reference.dt) and reference.dt > 0):
            raise ValueError(f"sweep: the reference's step must be finite and > 0, got {reference.dt!r}")
        t_end = fixed["t_end"] if self.t_end is None else float(self.t_end)
        if not (math.isfinite(t_end) and t_end > 0):
            raise ValueError(f"sweep: t_end must be finite and > 0, got {self.t_end!r}")
        fixed = {k: _plain(v) for k, v in dict(self.fixed).items()}
        if self.compiled_loop not in ("auto", True, False):
            raise ValueError(f"sweep: compiled_loop must be 'auto', True or False, got {self.compiled_loop!r}")
        return SweepSpec(
            self.scene, grid, points, friction, steps, options, reference, t_end, fixed, self.compiled_loop
        )

    # the runs
    def scene_points(self) -> list[dict]:
        """The scene-parameter points (the grid's combinations, in order, or the list)."""
        if self.points is not None:
            return [dict(p) for p in self.points]
        keys = list(self.grid)
        return [dict(zip(keys, values)) for values in itertools.product(*(self.grid[k] for k in keys))]

    def runs(self) -> list[dict]:
        """Every run: ``{"point": index into scene_points(), "friction", "dt", **options}``."""
        option_keys = list(self.options)
        out = []
        for i, _ in enumerate(self.scene_points()):
            for friction, dt, *values in itertools.product(
                self.friction, self.dt, *(self.options[k] for k in option_keys)
            ):
                out.append({"point": i, "friction": friction, "dt": dt, **dict(zip(option_keys, values))})
        return out

    def identity(self) -> dict:
        """What a results directory must agree on to be resumed (everything but the swept values)."""
        return {
            "scene": self.scene,
            "fixed": self.fixed,
            "reference": _reference_dict(self.reference),
            "t_end": self.t_end,
            "compiled_loop": self.compiled_loop,
            "lcpdyn_version": __version__,
        }

    def to_json(self) -> str:
        data = asdict(self)
        data["reference"] = _reference_dict(self.reference)
        data["points"] = None if self.points is None else [dict(p) for p in self.points]
        return json.dumps(data, sort_keys=True)

    def run_key(self, run: dict) -> str:
        """A run's name in the results directory: a hash of its scene point and settings."""
        point = self.scene_points()[run["point"]]
        text = json.dumps({"scene": point, **{k: v for k, v in run.items() if k != "point"}}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:20]

    def point_key(self, index: int) -> str:
        text = json.dumps(self.scene_points()[index], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:20]


def _reference_dict(reference) -> dict | None:
    reference = Reference.parse(reference)
    return None if reference is None else asdict(reference)


def _reference_label(reference) -> str:
    return "none" if reference is None else reference.label


def _plain(value):
    """A JSON- and netCDF-friendly scalar (NumPy scalars to Python's)."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple, dict, set)) or value is None:
        raise ValueError(f"sweep: swept values must be numbers, strings or booleans, got {value!r}")
    return value


def _strings(values, what) -> list[str]:
    values = [values] if isinstance(values, str) else list(values)
    if not values:
        raise ValueError(f"sweep: {what} has no values")
    for v in values:
        if not isinstance(v, str):
            raise ValueError(f"sweep: {what} values must be names, got {v!r}")
    if len(set(values)) != len(values):
        raise ValueError(f"sweep: {what} repeats a value: {values}")
    return values


# --- what runs on a worker ------------------------------------------------------------------------
def _compilations() -> int:
    from . import compiled_loop, model

    return model.COMPILATIONS[0] + compiled_loop.COMPILATIONS[0]


def _use_compilation_cache() -> None:
    """On a Dask worker: JAX's persistent compilation cache, so a fresh worker process loads the
    compiled kinematics and chunk functions from disk instead of compiling them again (on the
    wheel: its first run 1.5 s instead of 4.7 s). The directory is ``$LCPDYN_JAX_CACHE``, else
    ``$XDG_CACHE_HOME/lcpdyn/jax`` (``~/.cache/lcpdyn/jax``), unless JAX already has one. JAX
    keys each entry on the program, its own version and the backend, so a stale entry is never
    used. Nothing changes in a process that is not a worker (``workers=0`` runs in yours)."""
    try:
        from distributed import get_worker

        get_worker()
    except (ImportError, ValueError):
        return
    import jax

    if jax.config.jax_compilation_cache_dir:
        return
    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    jax.config.update(
        "jax_compilation_cache_dir", os.environ.get("LCPDYN_JAX_CACHE") or os.path.join(home, "lcpdyn", "jax")
    )
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)


def _failure(exc) -> str:
    text = str(exc).strip() or "(no message)"
    return f"{type(exc).__name__}: {text}"


def run_reference(scene: str, parameters: dict, reference: dict, t_end: float, compiled_loop="auto") -> dict:
    """The reference run of one scene point and its own error estimate (module docstring). Returns
    ``{"status", "reason", "trajectory", "threshold", "error", "first_roll_s", "wall_s"}``; a failure is
    recorded there, not raised (SIGINT or SIGTERM in this process stop the sweep)."""
    from threadpoolctl import threadpool_limits

    start = time.perf_counter()
    _use_compilation_cache()
    try:
        build_scene = scene_collection().build_scene

        from .compare import EXACT_RTOL, reference_error
        from .metrics import slip_transitions

        ref = Reference(**reference)
        with threadpool_limits(limits=1, user_api="blas"):
            built = build_scene(scene, **parameters, t_end=t_end)
            threshold = built.contact_model.get("velocity_threshold", 0.01)
            if ref.friction == "exact":
                from .reference import exact_coulomb

                samples = ref.dt * np.arange(1, int(round(t_end / ref.dt)) + 1)
                trajectory = exact_coulomb(built.model, t_end, samples, rtol=EXACT_RTOL).as_trajectory(built.model)
            else:
                # as the runs of the grid: a reference that is one of them is that run
                sim = _simulation(built, ref.friction, ref.dt, compiled_loop, position_update=ref.position_update)
                trajectory = sim.run(t_end)
            kind = "exact" if ref.friction == "exact" else "stepper"
            error = reference_error(
                built, kind, ref.dt, trajectory, threshold, ref.position_update, friction=ref.friction
            )
    except _interruption() as exc:  # Ctrl-C or SIGTERM in this process (workers=0): stop the sweep
        raise _Stopped(exc.signal) from None
    except Exception as exc:  # recorded, never raised: the sweep goes on
        return {"status": "failed", "reason": _failure(exc), "trajectory": None, "wall_s": time.perf_counter() - start}
    return {
        "status": "completed",
        "reason": "",
        "trajectory": trajectory,
        "threshold": threshold,
        "error": {**error["estimate"], "first_roll_s": error["first_roll_s"], "method": error["method"]},
        "first_roll_s": slip_transitions(trajectory, threshold)["first_roll"],
        "wall_s": time.perf_counter() - start,
    }


def run_one(spec_json: str, run: dict, reference: dict, trajectory_path: str | None = None) -> dict:
    """One run of a sweep and its scores against ``reference`` (:func:`run_reference`'s result),
    computed here, where the run ran. Returns the run's record; a failure is recorded there, not raised
    (SIGINT or SIGTERM in this process stop the sweep)."""
    from threadpoolctl import threadpool_limits

    from .run.errors import SimulationError

    spec = _spec_from_json(spec_json)
    record = _new_record(spec, run)
    start = time.perf_counter()
    _use_compilation_cache()
    before = _compilations()
    with threadpool_limits(limits=1, user_api="blas"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            built, sim = _prepare(spec, run, reference)
            try:
                # the sweep owns its runs' files: a run it does again starts its file again
                trajectory = sim.run(spec.t_end, out=trajectory_path, overwrite=True)
                failure = None
            except _interruption() as exc:  # Ctrl-C or SIGTERM in this process (workers=0): stop the sweep
                raise _Stopped(exc.signal) from None
            except SimulationError as exc:
                if exc.trajectory is None:
                    raise
                trajectory, failure = exc.trajectory, exc
            _score(record, built, sim, trajectory, failure, reference)
        except Exception as exc:  # recorded, never raised: the sweep goes on
            record["reason"] = _failure(exc)
    record["warnings"] = [f"{w.category.__name__}: {w.message}" for w in caught]
    record["wall_s"] = time.perf_counter() - start
    record["compilations"] = _compilations() - before
    record["batch"] = 1
    return record


def run_batch_records(
    spec_json: str, runs: list, references: list, trajectory_paths: list, progress: bool = False
) -> list[dict]:
    """Runs of a sweep together, in one :func:`lcpdyn.batch.run_batch` (copies of one structure
    stepped by one compiled call; the others alone), each scored against its reference
    (``references[i]`` for ``runs[i]``) where it ran. Returns their records, as
    :func:`run_one`'s; ``wall_s`` is the batch's wall time shared out evenly, ``batch`` the
    number of runs it held, and the compilations it caused are on its first record. A SIGINT or
    SIGTERM in this process: the records of the runs that completed ride on the raised
    :class:`_Stopped` (``records``)."""
    from threadpoolctl import threadpool_limits

    from .batch import BatchInterrupted, run_batch

    spec = _spec_from_json(spec_json)
    records = [_new_record(spec, run) for run in runs]
    start = time.perf_counter()
    _use_compilation_cache()
    before = _compilations()
    prepared, raised = {}, {i: [] for i in range(len(runs))}
    with threadpool_limits(limits=1, user_api="blas"):
        for i, run in enumerate(runs):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    prepared[i] = _prepare(spec, run, references[i])
                except Exception as exc:  # recorded, never raised: the sweep goes on
                    records[i]["reason"] = _failure(exc)
            raised[i] += [f"{w.category.__name__}: {w.message}" for w in caught]
        order = sorted(prepared)
        interrupted = None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # each run's warnings are in its BatchRun, then its record
            try:
                outcome = run_batch(
                    [prepared[i][1] for i in order],
                    spec.t_end,
                    outs=[trajectory_paths[i] for i in order],
                    progress=progress,
                    overwrite=True,  # the sweep's own run files, as in run_one
                )
            except BatchInterrupted as exc:
                outcome, interrupted = exc.runs, exc.signum
        for i, result in zip(order, outcome, strict=True):
            if result.status == "interrupted":
                continue
            raised[i] += list(result.warnings)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    if result.trajectory is None:
                        raise result.error
                    built, sim = prepared[i]
                    _score(records[i], built, sim, result.trajectory, result.error, references[i])
                except Exception as exc:
                    records[i]["reason"] = _failure(exc)
            raised[i] += [f"{w.category.__name__}: {w.message}" for w in caught]
    wall = time.perf_counter() - start
    for i, record in enumerate(records):
        record["warnings"] = raised[i]
        record["wall_s"] = wall / len(records)
        record["batch"] = len(records)
        record["compilations"] = 0
    records[0]["compilations"] = _compilations() - before
    if interrupted is not None:
        cut = {i for i, result in zip(order, outcome, strict=True) if result.status == "interrupted"}
        stopped = _Stopped(interrupted)
        stopped.records = [record for i, record in enumerate(records) if i not in cut]
        raise stopped
    return records


def _new_record(spec, run) -> dict:
    return {
        "key": spec.run_key(run),
        "run": run,
        "status": "failed",
        "reason": "",
        "worker": f"{socket.gethostname()}:{os.getpid()}",
        "metrics": {},
    }


def _prepare(spec, run, reference):
    """The scene and the Simulation of one run (raises what stops it: an unbuildable scene, a
    failed reference)."""
    if reference is not None and reference["status"] != "completed":
        raise RuntimeError(f"its reference ({spec.reference.label}) failed: {reference['reason']}")
    build_scene = scene_collection().build_scene

    point = spec.scene_points()[run["point"]]
    options = {k: v for k, v in run.items() if k not in ("point", "friction", "dt")}
    built = build_scene(spec.scene, **spec.fixed, **point, t_end=spec.t_end)
    sim = _simulation(built, run["friction"], run["dt"], options.pop("compiled_loop", spec.compiled_loop), **options)
    return built, sim


def _score(record, built, sim, trajectory, failure, reference) -> None:
    """Fill a run's record from its trajectory (the steps done, for a failed run: ``failure``)
    and its reference (None: timed and checked, not scored)."""
    from . import metrics
    from .trajectory import Health

    threshold = built.contact_model.get("velocity_threshold", 0.01)
    first_roll = metrics.slip_transitions(trajectory, threshold)["first_roll"]
    if reference is not None:
        scores = metrics.summary(trajectory, reference["trajectory"], velocity_threshold=threshold)
        scores["first_roll_error_s"] = abs(first_roll - reference["first_roll_s"])
    else:  # no reference: the run is timed and checked, not scored
        scores = {k: float("nan") for k in METRICS}
    record["compiled_steps"] = int(sim.loop_steps["compiled"])
    scores["first_roll_s"] = first_roll
    record["metrics"] = {k: float(scores[k]) for k in METRICS}
    record["steps"] = int(len(trajectory.t))
    record["fallback_steps"] = int(np.count_nonzero(np.asarray(trajectory.solver_fallback)))
    record["energy_gain_steps"] = int(np.count_nonzero(np.asarray(trajectory.health) & int(Health.ENERGY_GAIN)))
    if failure is None:
        record["status"] = "completed"
    else:
        record["reason"] = _failure(failure)  # scored over the steps done, and failed


def _simulation(built, friction, dt, compiled_loop, **options):
    """The Simulation of one run (or reference) of a sweep: ``compiled_loop`` as
    :class:`~lcpdyn.stepper.Simulation` takes it (``"auto"``: in the compiled loop where it
    takes the scene, else the ordinary step)."""
    return built.simulation(friction, dt=dt, compiled_loop=compiled_loop, **options)


def _spec_from_json(text: str) -> SweepSpec:
    data = json.loads(text)
    data["reference"] = None if data["reference"] is None else Reference(**data["reference"])
    data["friction"] = tuple(data["friction"])
    data["dt"] = tuple(data["dt"])
    data["grid"] = {k: tuple(v) for k, v in data["grid"].items()}
    data["options"] = {k: tuple(v) for k, v in data["options"].items()}
    if data["points"] is not None:
        data["points"] = tuple(data["points"])
    return SweepSpec(**data)


# --- the results directory ------------------------------------------------------------------------
def _write_json_atomic(path: Path, payload) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w") as stream:
            json.dump(payload, stream, sort_keys=True, allow_nan=True)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _read_record(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None  # a record cut short is not a record: the run is done again


def _open_directory(out, spec: SweepSpec) -> Path:
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"sweep: out {str(out)!r} exists and is not a directory")
    if not out.parent.is_dir():
        raise ValueError(f"sweep: the directory holding out, {str(out.parent)!r}, does not exist")
    (out / "runs").mkdir(parents=True, exist_ok=True)
    (out / "references").mkdir(exist_ok=True)
    marker = out / "sweep.json"
    if marker.exists():
        stored = _read_record(marker)
        if stored is None:
            raise ValueError(f"sweep: {str(marker)!r} is not readable JSON; move the directory aside")
        wanted = json.loads(json.dumps(spec.identity()))
        differ = sorted(k for k in set(stored) | set(wanted) if stored.get(k) != wanted.get(k))
        if differ:
            detail = "; ".join(f"{k}: stored {stored.get(k)!r}, now {wanted.get(k)!r}" for k in differ)
            raise ValueError(f"sweep: {str(out)!r} holds another sweep ({detail}); choose a new out")
    else:
        _write_json_atomic(marker, spec.identity())
    return out


# --- the driver -----------------------------------------------------------------------------------
def sweep(
    scene: str,
    *,
    grid: dict | None = None,
    points=None,
    friction=("regularized",),
    dt=(),
    options: dict | None = None,
    reference="coulomb@1e-4",
    t_end: float | None = None,
    fixed: dict | None = None,
    out=None,
    trajectories: bool = False,
    client=None,
    scheduler: str | None = None,
    workers: int | None = None,
    retry_failed: bool = False,
    progress: bool = True,
    compiled_loop="auto",
    batch: bool = True,
):
    """Run a sweep (module docstring) and return its ``xarray.Dataset``. ``out``: a results
    directory (created; its parent must exist) that makes the sweep resumable and gets
    ``sweep.nc``; ``trajectories``: each run streamed to ``out/trajectories/<key>.h5``;
    ``client`` / ``scheduler`` / ``workers``: where it runs (module docstring); ``compiled_loop``:
    ``"auto"`` runs each scene the compiled loop takes (:func:`lcpdyn.compiled_loop.unsupported`
    empty) in it, True / False force it (an ``options`` entry for it wins); ``batch``: runs of
    one structure stepped together (:mod:`lcpdyn.batch`), False: one by one."""
    if not isinstance(batch, bool):
        raise ValueError(f"sweep: batch must be True or False, got {batch!r}")
    spec = SweepSpec(
        scene,
        dict(grid or {}),
        None if points is None else tuple(points),
        tuple(_strings(friction, "friction")),
        tuple(np.atleast_1d(dt).tolist()),
        dict(options or {}),
        Reference.parse(reference),
        t_end,
        dict(fixed or {}),
        compiled_loop,
    ).checked()
    if trajectories and out is None:
        raise ValueError("sweep: trajectories=True needs out (the directory the trajectories go to)")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 0):
        raise ValueError(f"sweep: workers must be an integer >= 0, got {workers!r}")
    if sum(x is not None for x in (client, scheduler)) > 1 or (workers == 0 and (client or scheduler)):
        raise ValueError("sweep: give at most one of client=, scheduler= and workers=0")
    directory = None if out is None else _open_directory(out, spec)
    if directory is not None and trajectories:
        (directory / "trajectories").mkdir(exist_ok=True)
    runs = spec.runs()
    records = {}
    if directory is not None:
        for run in runs:
            record = _read_record(directory / "runs" / f"{spec.run_key(run)}.json")
            if record is not None and (record["status"] == "completed" or not retry_failed):
                records[record["key"]] = record
    references = {}
    if directory is not None:
        for i in range(len(spec.scene_points())):
            record = _read_record(directory / "references" / f"{spec.point_key(i)}.json")
            if record is not None:
                references[i] = record
    todo = [run for run in runs if spec.run_key(run) not in records]
    spec_json = spec.to_json()

    def keep(record):
        records[record["key"]] = record
        if directory is not None:
            _write_json_atomic(directory / "runs" / f"{record['key']}.json", record)

    def keep_reference(i, result):
        entry = {k: v for k, v in result.items() if k != "trajectory"}
        references[i] = entry
        if directory is not None:
            _write_json_atomic(directory / "references" / f"{spec.point_key(i)}.json", entry)

    def path_of(run):
        if not trajectories:
            return None
        return str((directory / "trajectories" / f"{spec.run_key(run)}.h5").resolve())

    from .run.signals import StopOnSignal

    stop = StopOnSignal()
    bar = _bar(len(runs), len(runs) - len(todo), progress, spec)
    try:
        with stop:
            if todo and workers == 0:
                _run_here(spec, spec_json, todo, keep, keep_reference, path_of, bar, stop, batch)
            elif todo:
                _run_on_dask(
                    spec, spec_json, todo, keep, keep_reference, path_of, bar, stop, client, scheduler, workers, batch
                )
    except KeyboardInterrupt as exc:
        bar.close()
        dataset = _dataset(spec, records, references)
        path = _save(dataset, directory)
        raise SweepInterrupted(getattr(exc, "signum", None) or stop.signal or signal.SIGINT, dataset, path) from None
    bar.close()
    dataset = _dataset(spec, records, references)
    _save(dataset, directory)
    return dataset


def _check(stop) -> None:
    """Stop the sweep here if SIGINT or SIGTERM came (``stop``: the stepper's flag-only handler,
    :class:`lcpdyn.run.signals.StopOnSignal`). Its handler never raises: one that did could land in a
    library's callback (JAX's garbage-collection hook swallows a KeyboardInterrupt) and the signal
    would be lost. The sweep's loops call this between runs and every :data:`POLL` s while
    waiting on the cluster."""
    if stop.signal is not None:
        raise _Stopped(stop.signal)


POLL = 0.25
"""Seconds between checks for a stop signal while the sweep waits on its cluster."""


def _bar(total, done, enabled, spec):
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=done, disable=not enabled, desc=f"sweep {spec.scene}", unit="run", smoothing=0)


def _run_here(spec, spec_json, todo, keep, keep_reference, path_of, bar, stop, batch):
    if batch:
        return _run_here_batched(spec, spec_json, todo, keep, keep_reference, path_of, bar, stop)
    cache = {}
    for run in todo:
        i = run["point"]
        if i not in cache and spec.reference is None:
            cache = {i: None}
        elif i not in cache:
            cache = {i: _reference_here(spec, i)}
            keep_reference(i, cache[i])
            _check(stop)
        keep(run_one(spec_json, run, cache[i], path_of(run)))
        bar.update()
        _check(stop)  # a signal between a run's steps stops that run (RunInterrupted); here, between runs


def _reference_here(spec, i):
    point = spec.scene_points()[i]
    return run_reference(spec.scene, {**spec.fixed, **point}, asdict(spec.reference), spec.t_end, spec.compiled_loop)


def _run_here_batched(spec, spec_json, todo, keep, keep_reference, path_of, bar, stop):
    for runs in _batches(todo, 1, spec.reference is not None):
        references = {}
        for i in sorted({run["point"] for run in runs}) if spec.reference is not None else ():
            references[i] = _reference_here(spec, i)
            keep_reference(i, references[i])
            _check(stop)
        try:
            records = run_batch_records(
                spec_json, runs, [references.get(run["point"]) for run in runs], [path_of(run) for run in runs],
                progress=not bar.disable,
            )  # fmt: skip
        except _Stopped as exc:
            for record in getattr(exc, "records", ()):
                keep(record)
            raise
        for record in records:
            keep(record)
        bar.update(len(records))
        _check(stop)


BATCH_POINTS = 16
"""Scene points whose runs go into one batch (their references are held in memory together)."""
BATCH_RUNS = 1024
"""Most runs in one batch (one Dask task)."""


def _batches(todo, parts, referenced=True):
    """The runs to do, in batches: blocks of at most :data:`BATCH_POINTS` scene points (all of
    them without references to hold), each cut into ``parts`` near-equal batches (the workers of
    a cluster) of at most :data:`BATCH_RUNS`."""
    points = sorted({run["point"] for run in todo})
    batches = []
    block_points = BATCH_POINTS if referenced else max(1, len(points))
    for k in range(0, len(points), block_points):
        block = set(points[k : k + block_points])
        runs = [run for run in todo if run["point"] in block]
        count = max(min(parts, len(runs)), math.ceil(len(runs) / BATCH_RUNS))
        size = math.ceil(len(runs) / count)
        batches += [runs[j : j + size] for j in range(0, len(runs), size)]
    return batches


def _run_on_dask(spec, spec_json, todo, keep, keep_reference, path_of, bar, stop, client, scheduler, workers, batch):
    from dask.distributed import Client, LocalCluster, wait

    own = []
    if client is None:
        if scheduler is not None:
            client = Client(scheduler)
        else:
            count = workers or os.cpu_count() or 1
            cluster = LocalCluster(
                n_workers=count, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
            )
            own.append(cluster)
            client = Client(cluster)
        own.insert(0, client)
    try:
        needed = sorted({run["point"] for run in todo})
        points = spec.scene_points()
        references = {
            i: client.submit(
                run_reference,
                spec.scene,
                {**spec.fixed, **points[i]},
                asdict(spec.reference),
                spec.t_end,
                spec.compiled_loop,
                key=f"reference-{spec.point_key(i)}",
                pure=False,
            )  # fmt: skip
            for i in (needed if spec.reference is not None else ())
        }
        if batch:  # each task a batch of runs (lcpdyn.batch), as many per block of points as workers
            workers_now = max(1, len(client.scheduler_info().get("workers", {})))
            futures = {
                client.submit(
                    run_batch_records,
                    spec_json,
                    runs,
                    [references.get(run["point"]) for run in runs],
                    [path_of(run) for run in runs],
                    key=f"batch-{spec.run_key(runs[0])}-{len(runs)}",
                    pure=False,
                ): runs  # fmt: skip
                for runs in _batches(todo, workers_now, spec.reference is not None)
            }
        else:
            futures = {
                client.submit(
                    run_one,
                    spec_json,
                    run,
                    references.get(run["point"]),
                    path_of(run),
                    key=f"run-{spec.run_key(run)}",
                    pure=False,
                ): [run]  # fmt: skip
                for run in todo
            }
        pending_references = dict(references)
        try:
            while futures:
                _check(stop)
                try:
                    finished = wait(list(futures), timeout=POLL, return_when="FIRST_COMPLETED").done
                except TimeoutError:
                    continue
                for future in finished:
                    runs = futures.pop(future)
                    try:
                        records = future.result()
                        records = records if isinstance(records, list) else [records]
                    except Exception as exc:  # the worker died, or the task could not be shipped
                        reason = f"on the cluster: {_failure(exc)}"
                        records = [
                            {**_new_record(spec, run), "reason": reason, "worker": "", "wall_s": float("nan")}
                            for run in runs
                        ]
                    for record in records:
                        keep(record)
                    bar.update(len(records))
                for i in [i for i, f in pending_references.items() if f.done()]:
                    f = pending_references.pop(i)
                    try:
                        keep_reference(i, f.result())
                    except Exception as exc:
                        keep_reference(i, {"status": "failed", "reason": f"on the cluster: {_failure(exc)}"})
        finally:
            client.cancel(list(futures) + list(pending_references.values()))
    finally:
        for thing in own:
            thing.close()


# --- the table ------------------------------------------------------------------------------------
def _dataset(spec: SweepSpec, records: dict, references: dict):
    """The ``xarray.Dataset`` of a sweep from its records (missing runs ``not run``)."""
    import xarray as xr

    option_keys = list(spec.options)
    run_dims = ["friction", "dt", *option_keys]
    coords = {"friction": list(spec.friction), "dt": list(spec.dt)}
    coords.update({k: list(v) for k, v in spec.options.items()})
    points = spec.scene_points()
    if spec.points is not None:
        point_dims = ["point"]
        coords["point"] = np.arange(len(points))
        point_coords = {k: ("point", [p[k] for p in points]) for k in points[0]}
        point_index = {i: (i,) for i in range(len(points))}
    else:
        point_dims = list(spec.grid)
        coords.update({k: list(v) for k, v in spec.grid.items()})
        point_coords = {}
        point_index = {i: tuple(spec.grid[k].index(p[k]) for k in point_dims) for i, p in enumerate(points)}
    shape = tuple(len(coords[d]) for d in run_dims + point_dims)
    point_shape = tuple(len(coords[d]) for d in point_dims)
    data = {name: np.full(shape, np.nan) for name in (*METRICS, "wall_s")}
    counts = {name: np.full(shape, -1, np.int64) for name in RUN_FIELDS if name != "wall_s"}
    text = {
        name: np.full(shape, "" if name != "status" else NOT_RUN, dtype=object)
        for name in ("status", "reason", "worker")
    }
    for run in spec.runs():
        record = records.get(spec.run_key(run))
        if record is None:
            continue
        where = (
            spec.friction.index(run["friction"]),
            spec.dt.index(run["dt"]),
            *(spec.options[k].index(run[k]) for k in option_keys),
            *point_index[run["point"]],
        )
        for name, value in record.get("metrics", {}).items():
            if name in data:
                data[name][where] = value
        data["wall_s"][where] = record.get("wall_s", np.nan)
        for name in counts:
            counts[name][where] = record.get(name, -1)
        for name in text:
            text[name][where] = record.get(name, "")
    dims = run_dims + point_dims
    variables = {name: (dims, values) for name, values in data.items()}
    variables.update({name: (dims, values) for name, values in counts.items()})
    variables.update({name: (dims, values.astype(str)) for name, values in text.items()})
    reference_data = {f"reference_error_{name}": np.full(point_shape, np.nan) for name in REFERENCE_METRICS}
    reference_status = np.full(point_shape, NOT_RUN, dtype=object)
    reference_wall = np.full(point_shape, np.nan)
    for i, entry in references.items():
        if i >= len(points):
            continue
        reference_status[point_index[i]] = entry.get("status", NOT_RUN) if entry.get("status") else NOT_RUN
        reference_wall[point_index[i]] = entry.get("wall_s", np.nan)
        for name in REFERENCE_METRICS:
            reference_data[f"reference_error_{name}"][point_index[i]] = entry.get("error", {}).get(name, np.nan)
    variables.update({name: (point_dims, values) for name, values in reference_data.items()})
    variables["reference_status"] = (point_dims, reference_status.astype(str))
    variables["reference_wall_s"] = (point_dims, reference_wall)
    dataset = xr.Dataset(variables, coords={**coords, **point_coords})
    dataset.attrs.update(
        {
            "scene": spec.scene,
            "reference": _reference_label(spec.reference),
            "t_end": spec.t_end,
            "sweep": spec.to_json(),
            "lcpdyn_version": __version__,
            "runs": len(spec.runs()),
            "completed": int(np.count_nonzero(text["status"] == "completed")),
            "failed": int(np.count_nonzero(text["status"] == "failed")),
        }
    )
    for name in METRICS:
        dataset[name].attrs["description"] = "lcpdyn.metrics.summary against the reference (lcpdyn.sweep)"
    return dataset


def _save(dataset, directory) -> Path | None:
    """``directory/sweep.nc`` written atomically (a temporary file renamed onto it)."""
    if directory is None:
        return None
    path = Path(directory) / "sweep.nc"
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=".sweep.nc.", suffix=".tmp")
    os.close(handle)
    try:
        dataset.to_netcdf(temporary, engine="h5netcdf")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def load_sweep(path):
    """A saved sweep table (``sweep.nc``, or the results directory holding it), loaded into memory."""
    import xarray as xr

    path = Path(path)
    if path.is_dir():
        path = path / "sweep.nc"
    if not path.is_file():
        raise ValueError(f"sweep: no sweep table at {str(path)!r}")
    try:
        with xr.open_dataset(path, engine="h5netcdf") as dataset:
            loaded = dataset.load()
    except (OSError, ValueError) as exc:
        raise ValueError(f"sweep: {str(path)!r} is not a readable sweep table: {exc}") from None
    if "sweep" not in loaded.attrs:
        raise ValueError(f"sweep: {str(path)!r} is a netCDF file but not an lcpdyn sweep table (no 'sweep' attribute)")
    return loaded


# --- figures --------------------------------------------------------------------------------------
METRIC_LABELS = {
    "force_rms_deviation_percent": "force RMS deviation (% of mu lam_N)",
    "force_rms_deviation_sliding_percent": "force RMS deviation, sliding (% of mu lam_N)",
    "misalignment_rms_deg": "RMS misalignment of friction and slip (deg)",
    "static_force_ratio_max": "largest static |lam_T| / (mu_s lam_N)",
    "position_error_final": "final position error (relative)",
    "position_error_max": "largest position error (relative)",
    "position_error_final_per_path": "final position error / path length",
    "energy_error_final_J": "final energy error (J)",
    "energy_error_max_abs_J": "largest |energy error| (J)",
    "energy_error_max_relative": "largest |energy error| (relative)",
    "first_roll_s": "first slide-to-roll time (s)",
    "first_roll_error_s": "|first slide-to-roll time - reference's| (s)",
    "wall_s": "wall time per run (s)",
}


def _tick(value) -> str:
    return f"{value:g}" if isinstance(value, (float, np.floating)) else str(value)


def plot_sweep(dataset, metric: str, x: str, y: str | None = None, path=None, select: dict | None = None):
    """A figure of ``metric`` over swept parameters, one panel per friction model: a heat map over
    ``x`` and ``y`` (the value written in each cell, one colour scale for all panels; runs that
    failed or did not run hatched in red and labelled), or, with ``y=None``, a line over ``x``
    (one line per value of one more swept dimension, if there is one; failed runs marked x). A
    cell is starred where the reference's own error estimate (``reference_error_<metric>``)
    exceeds :data:`lcpdyn.compare.REFERENCE_ERROR_FRACTION` of its value (the comparison's own
    rule): the reference does not resolve it.
    Every other swept dimension must have one value or be fixed by ``select`` (dimension ->
    value). Returns the figure; saved to ``path`` if given."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    from .compare import REFERENCE_ERROR_FRACTION as REFERENCE_FRACTION

    if metric not in dataset.data_vars:
        raise ValueError(f"plot_sweep: unknown metric {metric!r}; choose from {sorted(dataset.data_vars)}")
    values, status = dataset[metric], dataset["status"]
    if select:
        unknown = sorted(set(select) - set(values.dims))
        if unknown:
            raise ValueError(f"plot_sweep: select names {unknown}, not dimensions of {metric}: {values.dims}")
        values, status = values.sel(select), status.sel(select)
    wanted = [d for d in (x, y) if d is not None]
    for d in wanted:
        if d not in values.dims or d == "friction":
            raise ValueError(f"plot_sweep: {d!r} is not a swept dimension of {metric}: {values.dims}")
    extra = [d for d in values.dims if d not in (*wanted, "friction") and values.sizes[d] > 1]
    group = None
    if y is None and len(extra) == 1:
        group = extra.pop()
    if extra:
        raise ValueError(f"plot_sweep: fix the other swept dimensions {extra} with select= (dimension -> value)")
    keep = (*wanted, "friction") + ((group,) if group else ())
    values = values.squeeze([d for d in values.dims if d not in keep], drop=True)
    status = status.squeeze([d for d in status.dims if d not in keep], drop=True)
    label = METRIC_LABELS.get(metric, metric)
    models = list(values["friction"].values)
    fig, axes = plt.subplots(1, len(models), figsize=(4.4 * len(models) + 1.2, 3.9), squeeze=False, sharey=True)
    finite = np.asarray(values.values, float)
    finite = finite[np.isfinite(finite)]
    low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    image, unresolved = None, 0
    for ax, model in zip(axes[0], models):
        v, s = values.sel(friction=model), status.sel(friction=model)
        if y is None:
            lines = (
                [(None, v, s)]
                if group is None
                else [(g, v.sel({group: g}), s.sel({group: g})) for g in v[group].values]
            )
            for g, vv, ss in lines:
                xs = np.asarray(vv[x].values)
                (line,) = ax.plot(xs, vv.values, "o-", label=None if g is None else f"{group} = {_tick(g)}")
                bad = ss.values != "completed"
                if bad.any():
                    ax.plot(xs[bad], np.full(bad.sum(), low), "x", color="red", ms=9, mew=2)
            if group is not None:
                ax.legend(fontsize=8)
            ax.grid(alpha=0.3)
        else:
            v, s = v.transpose(y, x), s.transpose(y, x)
            own = None
            if f"reference_error_{metric}" in dataset.data_vars:
                own = dataset[f"reference_error_{metric}"]
                own = own.sel({k: val for k, val in (select or {}).items() if k in own.dims})
                own = own.squeeze([d for d in own.dims if d not in (x, y)], drop=True)
                own = own.broadcast_like(v).transpose(y, x)
            grid = np.asarray(v.values, float)
            image = ax.imshow(grid, origin="lower", aspect="auto", vmin=low, vmax=high, cmap="viridis")
            ax.set_xticks(range(v.sizes[x]), [_tick(c) for c in v[x].values])
            ax.set_yticks(range(v.sizes[y]), [_tick(c) for c in v[y].values])
            for (j, i), value in np.ndenumerate(grid):
                if s.values[j, i] != "completed":
                    ax.add_patch(plt.Rectangle((i - 0.5, j - 0.5), 1, 1, fill=False, hatch="xx", color="red", lw=0))
                    ax.text(i, j, s.values[j, i], ha="center", va="center", fontsize=8, color="red",
                            bbox={"facecolor": "white", "edgecolor": "none", "pad": 1})  # fmt: skip
                else:
                    shade = (value - low) / (high - low) if high > low else 0.0
                    mark = "*" if own is not None and own.values[j, i] > REFERENCE_FRACTION * abs(value) else ""
                    unresolved += bool(mark)
                    ax.text(i, j, f"{value:.3g}{mark}", ha="center", va="center", fontsize=8,
                            color="black" if shade > 0.6 else "white")  # fmt: skip
        ax.set_xlabel(x)
        ax.set_title(model)
    axes[0][0].set_ylabel(label if y is None else y)
    if image is not None:
        fig.colorbar(image, ax=list(axes[0]), label=label, shrink=0.9)
    fig.suptitle(
        f"{dataset.attrs.get('scene', '')}: {label}, against {dataset.attrs.get('reference', '')}"
        + ("" if not select else " (" + ", ".join(f"{k} = {_tick(v)}" for k, v in select.items()) + ")"),
        y=1.03,
    )
    if unresolved:
        fig.text(
            0.5, -0.04, f"* the reference's own error estimate exceeds {100 * REFERENCE_FRACTION:g} % of the value: "
            "the reference does not resolve it (lcpdyn.compare.reference_error)", ha="center", fontsize=8,
        )  # fmt: skip
    if path is not None:
        fig.savefig(path, dpi=120, bbox_inches="tight")
    return fig
