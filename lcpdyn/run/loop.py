"""The run loop of :meth:`lcpdyn.stepper.Simulation.run`: argument checks, the step loop (ordinary steps and
chunks of the compiled loop), the energy budget of docs/theory/step.md ("Run health") and continuing from a
file."""

from __future__ import annotations

import json
import time

import numpy as np

from ..compiled_loop import CHUNK_STEPS
from ..compiled_loop import measure as measure_chunk
from ..model_check import check_start_gaps, check_turn
from ..precision import float64
from ..trajectory_writer import OutputWriteError
from ..validation import finite_number
from .energy import energy_stop
from .errors import OutputFailed, RunInterrupted, SimulationError
from .progress import Progress
from .recorder import Recorder, Sink
from .signals import StopOnSignal, blas_limit

MAX_STEPS = 100_000_000
"""Most steps one :meth:`lcpdyn.stepper.Simulation.run` call takes: its recorder allocates every step up front
(~150 bytes per step for one body and contact). Split longer runs into several ``run`` calls
(each continues from the current state)."""


def run(sim, t_end, progress=False, out=None, record_every=1, chunk_steps=1024, overwrite=False):
    """:meth:`lcpdyn.stepper.Simulation.run` (its docstring says what the arguments do): the checks,
    then the step loop inside the signal, BLAS and float64 scopes, answering the loop's requests
    for compiled chunks with ``sim``'s compiled loop."""
    steps = run_steps(sim, t_end, record_every, chunk_steps)
    stop = StopOnSignal()
    with stop, blas_limit(sim.blas_threads), float64():  # JAX's float64 scope: lcpdyn.precision
        loop = session(sim, steps, t_end, progress, out, record_every, chunk_steps, stop, overwrite)
        chunk = None
        while True:
            try:
                request = loop.send(chunk)
            except StopIteration as end:
                trajectory = end.value
                break
            chunk = sim._loop.run(*request)  # the compiled loop's chunks (compiled_loop=True)
    if stop.signal is not None:  # during the last step or the final save: the run is complete and kept
        raise RunInterrupted(stop.signal, sim.steps_done, sim.t, trajectory, None if out is None else str(out))
    return trajectory


def state_from_file(sim, path) -> dict:
    """The state to resume from a streamed file (``path``), checked against this simulation's parameters."""
    from ..trajectory import load, read_resume_state

    resume = read_resume_state(path)
    recorded = load(path).parameters
    mine = sim.parameters()

    def text(value):  # compared as JSON text: NaN parameters (mu_static) equal themselves
        return json.dumps(value, sort_keys=True)

    different = sorted(key for key in mine if key != "lcpdyn_version" and text(recorded.get(key)) != text(mine[key]))
    if different:
        raise ValueError(
            f"{path}: written by a different simulation (parameters {different} differ); "
            "build the same scene and options to continue it"
        )
    state = {"q": resume["q"], "v": resume["v"], "t": resume["t"], "steps_done": resume["steps_done"]}
    state.update(resume["warm_start"])
    state.update(resume["extra"])
    return state


def run_steps(sim, t_end, record_every, chunk_steps) -> int:
    """The checks of :func:`run`'s arguments and of the model (unchanged since the simulation was
    built: :mod:`lcpdyn.model_check`), before any work; the number of steps to take."""
    sim._built.check(sim.model)
    check_turn(sim.model, sim.v, sim.dt)
    t_end = finite_number("t_end", t_end)
    steps = round((t_end - sim.t) / sim.dt)
    if steps < 1:
        raise ValueError(f"t_end = {t_end} leaves no step of dt = {sim.dt} after t = {sim.t}")
    if steps > MAX_STEPS:
        raise ValueError(
            f"t_end = {t_end} with dt = {sim.dt} needs {steps:.3g} steps, more than MAX_STEPS = "
            f"{MAX_STEPS:.0e} per run() call (see lcpdyn.stepper.MAX_STEPS)"
        )
    if isinstance(record_every, bool) or not isinstance(record_every, int) or record_every < 1:
        raise ValueError(f"record_every must be an integer >= 1, got {record_every!r}")
    if isinstance(chunk_steps, bool) or not isinstance(chunk_steps, int) or chunk_steps < 1:
        raise ValueError(f"chunk_steps must be an integer >= 1, got {chunk_steps!r}")
    return steps


def session(sim, steps, t_end, progress, out, record_every, chunk_steps, stop, overwrite=False):
    """:func:`run` after its checks, as a generator (:func:`step_loop`): yields the compiled
    chunk requests, returns the :class:`Trajectory` (raises as :func:`run` does). ``stop``
    is the signal flag it polls; the caller holds the float64 and BLAS scopes."""
    try:
        sink = Sink.open(out, sim, record_every, overwrite)  # checks the path, takes its lock before any step
    except OutputWriteError as exc:  # no room for the file: before any step
        raise OutputFailed(str(exc), sim.steps_done, sim.t, exc.path, exc.steps, False) from None
    try:
        record = Recorder(sim, steps, record_every, chunk_steps, sink)
        k = sim.evaluate(sim.q, sim.v, sim.t)
        if sim.steps_done == 0:
            check_start_gaps(sim.model, np.asarray(k.gap))
        record.initial(sim, k)
        bar = Progress(progress, steps, sim.friction.name, t_end)
        try:
            yield from step_loop(sim, record, steps, k, stop, bar, sink)
        finally:
            bar.close()
        record.warn()
        return record.finish(steps, "completed")
    finally:
        sink.release()


def step_loop(sim, record, steps, k, stop, bar, sink):
    """The step loop of :func:`run`, as a generator: where it wants a compiled chunk
    (``compiled_loop=True``) it yields ``(state, steps)`` and is sent the
    :class:`~lcpdyn.compiled_loop.Chunk` -- :func:`run` answers with this simulation's
    compiled call; a driver of many runs may answer many requests with one call. Everything
    else (the host's residual check, the records, the ordinary step for a refused step,
    stops and failures) happens here, the same for every driver."""
    evaluate = sim.evaluate.unscoped
    i = 0
    while i < steps:
        cooldown, backoff = sim.loop_retry  # ordinary steps to take before the compiled loop is tried again
        if sim._loop is not None and cooldown == 0:
            try:
                done, refused = yield from compiled_chunk(sim, record, i, steps)
            except SimulationError as exc:  # an energy stop: the steps up to it are recorded
                exc.trajectory = record.finish(sim.steps_done, f"failed: {exc}")
                raise
            i += done
            sim.loop_steps["compiled"] += done
            bar.update(i, sim.t)
            if i == steps:
                break
            if done and stop.signal is not None:
                trajectory = record.finish(i, "interrupted")
                raise RunInterrupted(stop.signal, sim.steps_done, sim.t, trajectory, sink.path)
            if not refused:
                continue
            # the step the loop refused goes to the ordinary step; refusals in a row back
            # off (1, 2, 4, ... ordinary steps, at most a chunk's worth) so that a scene
            # the loop cannot solve costs no more than the ordinary run
            backoff = 1 if done or sim.steps_done == 0 else min(2 * backoff, CHUNK_STEPS)
            cooldown = backoff
            k = evaluate(sim.q, sim.v, sim.t)
        if sim._loop is not None:
            sim.loop_steps["ordinary"] += 1
            sim.loop_retry = (cooldown - 1, backoff)
        try:
            out_step = sim.step(k)
            start = time.perf_counter()
            k = evaluate(sim.q, sim.v, sim.t)
            jacobians = time.perf_counter() - start
        except SimulationError as exc:
            exc.trajectory = record.finish(i, f"failed: {exc}")
            raise
        except Exception as exc:  # a user function or anything else: never lose the steps done
            error = SimulationError(f"{type(exc).__name__} raised during the step: {exc}", sim.steps_done, sim.t)
            error.trajectory = record.finish(i, f"failed: {error}")
            raise error from exc
        start = time.perf_counter()
        try:
            record.store(i, sim, out_step, k)
        except SimulationError as exc:
            exc.trajectory = record.finish(i + 1, f"failed: {exc}")
            raise
        record.timing(i, jacobians, out_step.timing, time.perf_counter() - start)
        bar.update(i + 1, sim.t)
        if stop.signal is not None and i + 1 < steps:
            trajectory = record.finish(i + 1, "interrupted")
            raise RunInterrupted(stop.signal, sim.steps_done, sim.t, trajectory, sink.path)
        i += 1


def compiled_chunk(sim, record, i, steps):
    """(A generator: yields the chunk request, see :func:`step_loop`.)
    Steps ``i`` .. of the run through the compiled loop (:mod:`lcpdyn.compiled_loop`):
    one chunk (never past the recorder's next flush, so a file's resume state always
    matches its last record), every step's answer measured by the framework's residual, the
    leading steps that passed recorded and made the state; returns (their number, whether
    the loop refused the step after them: then it is the ordinary step's)."""
    if sim.steps_done == 0 and sim.model.contacts:
        return 0, True  # the first step takes an extra pass for lam_N (_solve_lcp): the ordinary step's
    begin = time.perf_counter()
    asked = min(steps - i, record.steps_to_flush(sim), sim._chunk_limit)
    chunk = yield (sim.state, asked)  # run() answers with sim._loop.run(state, asked)
    middle = time.perf_counter()
    if chunk.measured is None:
        relative, active, accepted = measure_chunk(
            chunk.K, chunk.rhs, chunk.lo, chunk.hi, chunk.z, chunk.done, sim.tolerance
        )
    else:  # a batch measured its copies' chunks with the same kernel (lcpdyn.batch)
        relative, active, accepted = chunk.measured
    measured = time.perf_counter()
    energy = chunk.potential_energy[:accepted] + chunk.kinetic_energy[:accepted]
    if not np.all(np.isfinite(energy)):  # the ordinary step and store() name it
        accepted = int(np.argmin(np.isfinite(energy)))
    if accepted == 0:
        return 0, True
    refused = accepted < asked
    health = record.chunk_health(sim, chunk, accepted)
    accepted = health["count"]
    j = accepted - 1
    first = sim.steps_done + 1
    sim.q, sim.v = chunk.q[j].copy(), chunk.v[j].copy()
    sim.steps_done += accepted
    sim.t = sim.steps_done * sim.dt
    sim.normal_force, sim.friction_force = chunk.normal_force[j].copy(), chunk.friction_force[j].copy()
    sim.active_set, sim.impulse_guess = active[j].copy(), None
    record.store_chunk(i, first, sim, chunk, relative, health)
    end = time.perf_counter()
    rows = min(accepted, max(0, sim.timing.shape[0] - i))
    if rows:  # per step: the compiled call as 'solve', the host's measure as 'rest', the recording
        sim.timing[i : i + rows] = (
            0.0, 0.0, (middle - begin) / accepted, (measured - middle) / accepted, (end - measured) / accepted,
        )  # fmt: skip
    if health["stop"]:
        raise energy_stop(sim, health["gain"][j], health["scale"][j], health["energy"][j])
    return accepted, refused
