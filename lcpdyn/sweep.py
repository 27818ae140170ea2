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

What a run yields, where it runs, failures and resuming, speed and reproducibility: :func:`sweep`.
"""

from __future__ import annotations

import json
import math
import os
import signal
import tempfile
from dataclasses import asdict
from pathlib import Path

import numpy as np

from .sweep_spec import METRICS, OPTIONS, REFERENCE_METRICS, Reference, SweepSpec, _strings
from .sweep_table import _dataset, _save, load_sweep, plot_sweep
from .sweep_worker import _failure, _new_record, _Stopped, run_batch_records, run_one, run_reference

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


class SweepInterrupted(RuntimeError):
    """A sweep stopped by SIGINT or SIGTERM (``signal``). ``dataset`` holds the runs finished so
    far (the rest ``not run``); with ``out``, they are saved and the same call resumes."""

    def __init__(self, signum, dataset, path=None):
        super().__init__(f"sweep interrupted by {signal.Signals(signum).name}")
        self.signal, self.dataset, self.path = signum, dataset, path


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
    ``client`` / ``scheduler`` / ``workers``: where it runs (below); ``compiled_loop``:
    ``"auto"`` runs each scene the compiled loop takes (:func:`lcpdyn.compiled_loop.unsupported`
    empty) in it, True / False force it (an ``options`` entry for it wins); ``batch``: runs of
    one structure stepped together (:mod:`lcpdyn.batch`), False: one by one.

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
    compilation cache on disk (``_use_compilation_cache``), so a new worker process's first
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
    if scheduler is not None:
        check_scheduler(scheduler)
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


SCHEDULER_TIMEOUT = 5.0
"""Seconds a sweep waits for a scheduler given by address to accept a connection, before any run."""


def check_scheduler(address: str) -> None:
    """Raise ValueError, naming the address, unless something accepts a TCP connection there
    (Dask's own client waits 30 s and then raises from deep in its comm layer)."""
    import socket

    if not isinstance(address, str) or not address:
        raise ValueError(f"sweep: scheduler must be an address such as 'tcp://host:8786', got {address!r}")
    scheme, _, rest = address.rpartition("://")
    if scheme not in ("", "tcp", "tls"):
        return  # another transport: Dask's client says what it finds
    host, _, port = rest.rpartition(":")
    try:
        port_number = int(port)
    except ValueError:
        raise ValueError(f"sweep: scheduler {address!r} has no port (expected 'tcp://host:port')") from None
    try:
        with socket.create_connection((host.strip("[]") or "localhost", port_number), timeout=SCHEDULER_TIMEOUT):
            pass
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise ValueError(
            f"sweep: no Dask scheduler answers at {address!r} ({why} within {SCHEDULER_TIMEOUT:g} s); start one "
            "(`dask scheduler`) or leave the scheduler out to run on a local cluster"
        ) from None


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
