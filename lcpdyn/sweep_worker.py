"""What runs on a sweep's worker (:mod:`lcpdyn.sweep`): one run or reference, or a batch of runs of
one structure, from the sweep's specification, with its scores and bookkeeping as plain records."""

from __future__ import annotations

import json
import os
import socket
import time
import warnings

import numpy as np

from .scene_collection import scene_collection
from .sweep_spec import METRICS, Reference, SweepSpec


class _Stopped(KeyboardInterrupt):
    """A run inside this process stopped by SIGINT or SIGTERM (its RunInterrupted): the sweep stops."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def _interruption():
    """The stepper's RunInterrupted class (a SimulationError, which run_one would record as a failure)."""
    from .run.errors import RunInterrupted

    return RunInterrupted


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
                sim = built.simulation(
                    ref.friction, dt=ref.dt, compiled_loop=compiled_loop, position_update=ref.position_update
                )
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
    ``_Stopped`` (``records``)."""
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
    options.setdefault("compiled_loop", spec.compiled_loop)
    sim = built.simulation(run["friction"], dt=run["dt"], **options)
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
