"""Batched runs: many copies of a small scene stepped together (issue 16, item 3).

:func:`run_batch` runs many :class:`~lcpdyn.stepper.Simulation` objects to ``t_end``. Copies
whose scenes share one structure (the same bodies, contacts and options: a sweep over numbers
-- mu, angles, masses, initial states, h -- of one scene) and that the compiled loop takes
(``compiled_loop=True``, :func:`lcpdyn.compiled_loop.unsupported` empty) are stepped together:
one compiled call advances a part of them (a power of two from :data:`LANES` to
:data:`COPIES_PER_CALL` copies) by up to :data:`CHUNK_LENGTH` steps, the compiled loop's step
``jax.vmap``-ped over the copies inside a ``lax.scan`` over the steps.

Nothing is accepted on the batch's word: each copy's run is its own
:meth:`Simulation.run <lcpdyn.stepper.Simulation.run>`, every batched step measured on the host
by the framework's residual against that copy's tolerance, and a step the batch could not do is
redone by that copy's ordinary step. A copy agrees with its single run to rounding, not bit for
bit. Why vmap, what is checked, and how exact the agreement is on which machine: the
documentation's ``docs/theory/batches.md``.
"""

from __future__ import annotations

import math
import warnings
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass

import numpy as np

from .compiled_loop import Chunk, batched_chunk, initial_set, kinetic_energies, measure_batch
from .kernels import readonly
from .precision import float64

__all__ = ["run_batch", "BatchRun", "BatchInterrupted", "COPIES_PER_CALL", "CHUNK_LENGTH", "LANES", "THREADS"]

COPIES_PER_CALL = 128
"""Most copies one compiled call steps (a power of two; a batch of more is split into calls of
this size, the last padded with riders)."""
CHUNK_LENGTH = 512
"""Steps per batched compiled call (each copy's outputs are kept until the host checked them)."""
LANES = 8
"""A call's copies are a multiple of this (padded with riders), so that XLA's vectorized code treats
every copy alike; bit for bit with JAX 0.7 and on AVX2, to rounding with JAX 0.10 on AVX-512
(module docstring)."""
THREADS = 2
"""Threads that run the batched calls and their residual checks (the machine's cores)."""


@dataclass(frozen=True)
class BatchRun:
    """One copy's run: its trajectory (the steps done, also for a failed or interrupted run),
    ``status`` (``"completed"``, ``"failed: <reason>"``, ``"interrupted"``), the exception that
    ended it (None when completed), how many of its steps each path took
    (``Simulation.loop_steps``: ``{"compiled": ..., "ordinary": ...}``) and the warnings it
    raised (``"Category: message"``; :func:`run_batch` warns once for all of them)."""

    trajectory: object
    status: str
    error: BaseException | None
    loop_steps: dict
    warnings: tuple = ()

    @property
    def completed(self) -> bool:
        """Whether this member ran to its end (``status == "completed"``)."""
        return self.status == "completed"


class BatchInterrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM stopped a batch: ``runs`` holds every copy's :class:`BatchRun` (the
    interrupted ones with the steps they did; a copy can be continued with ``restore``)."""

    def __init__(self, signum, runs):
        super().__init__(f"batch interrupted by signal {signum}")
        self.signum, self.runs = signum, runs


class _Group:
    """Copies of one structure, split into calls of ``size`` copies (the last padded with
    riders that take no step)."""

    def __init__(self, members, sims, length):
        self.members, self.error = members, None
        try:
            self._build(members, sims, length)
        except Exception as exc:  # the copies will take their ordinary steps (run_batch)
            self.error = f"{type(exc).__name__}: {exc}"

    def _build(self, members, sims, length):
        loop = sims[members[0]]._loop
        # a power of two from LANES to COPIES_PER_CALL, so that a structure compiles a few sizes
        # at most; at least THREADS calls when the copies fill them
        share = math.ceil(len(members) / THREADS)
        self.size = max(LANES, min(COPIES_PER_CALL, 1 << max(0, share - 1).bit_length()))
        self.parts = [members[i : i + self.size] for i in range(0, len(members), self.size)]
        self.executable = batched_chunk(loop, self.size, length)
        model = loop._model
        self.unknowns, self.velocities, self.contacts = loop.size, model.n_velocities, len(model.contacts)
        self.numbers, self.masses = [], []
        for part in self.parts:
            padded = part + [part[-1]] * (self.size - len(part))
            loops = [sims[i]._loop for i in padded]
            self.numbers.append(tuple(np.stack([np.asarray(x.numbers[k]) for x in loops]) for k in range(5)))
            self.masses.append((np.stack([x.mass for x in loops]), np.stack([x.inertia for x in loops])))


_EMPTY = np.empty(0)
_REFUSED = Chunk(0, *([_EMPTY] * 18), measured=(_EMPTY, np.empty((0, 0), np.int8), 0))
"""The answer to a request the batch cannot serve: no step done; the copy takes its ordinary step."""


def _call(executable, inputs, numbers, tolerance, masses):
    """One batched compiled call and its host check (on a worker thread)."""
    with float64():
        out = executable(*inputs, *numbers)
        out = [np.asarray(x) for x in out]
    out[15] = kinetic_energies(*masses, out[2])  # the ordinary step's kernel, on the host
    relative, active, accepted = measure_batch(*(readonly(x) for x in (*out[10:15], out[0], tolerance)))
    # what the host records, copy-major (each copy's rows contiguous); the measured problems
    # (K, rhs, lo, hi, z) are not read again
    copies = [np.ascontiguousarray(np.swapaxes(x, 0, 1)) for x in (*out[1:10], *out[15:], relative, active)]
    return out[0], copies[:9] + [np.swapaxes(x, 0, 1) for x in out[10:15]] + copies[9:13], (*copies[13:], accepted)


def run_batch(
    simulations,
    t_end: float,
    *,
    outs=None,
    progress: bool = False,
    record_every: int = 1,
    chunk_steps: int = 1024,
    overwrite: bool = False,
) -> list[BatchRun]:
    """Run every simulation to ``t_end`` (s), the copies the batch takes together (module
    docstring), the others one by one; returns one :class:`BatchRun` per simulation, in order.
    ``outs``: None, or one path (or None) per simulation, each run's ``out`` of
    :meth:`Simulation.run` (HDF5 streamed as it goes, or .npz); ``record_every``,
    ``chunk_steps``: as :meth:`Simulation.run`. Arguments and paths are checked before any
    step (an existing file is refused unless ``overwrite``, as :meth:`Simulation.run` refuses it).
    ``progress``: one tqdm bar over all steps. SIGINT / SIGTERM: every run stops after its
    step or chunk in progress and :class:`BatchInterrupted` carries them all."""
    from threadpoolctl import threadpool_limits
    from tqdm.auto import tqdm

    from .run.errors import RunInterrupted, SimulationError
    from .run.loop import run_steps, session
    from .run.signals import StopOnSignal
    from .stepper import Simulation
    from .trajectory import check_output_path, refuse_existing

    sims = list(simulations)
    for i, sim in enumerate(sims):
        if not isinstance(sim, Simulation):
            raise TypeError(f"run_batch: simulations[{i}] is a {type(sim).__name__}, not a Simulation")
    if len({id(s) for s in sims}) < len(sims):
        raise ValueError("run_batch: a Simulation appears twice (each copy needs its own)")
    steps = [run_steps(sim, t_end, record_every, chunk_steps) for sim in sims]
    outs = [None] * len(sims) if outs is None else list(outs)
    if len(outs) != len(sims):
        raise ValueError(f"run_batch: {len(outs)} outs for {len(sims)} simulations")
    for sim, out in zip(sims, outs, strict=True):
        if out is not None:
            path = check_output_path(out)
            if sim.steps_done == 0:
                refuse_existing(path, overwrite)
    groups = {}
    for i, sim in enumerate(sims):
        if sim._loop is not None and sim._loop._key is not None:
            groups.setdefault(sim._loop._key, []).append(i)
    groups = list(groups.values())  # a lone copy too: its numbers do not depend on its company
    batched = {i for members in groups for i in members}
    runs = [None] * len(sims)
    raised = [[] for _ in sims]
    requests = {}  # copy -> its pending chunk request (state, steps)
    stop = StopOnSignal()
    bar = tqdm(total=sum(steps), disable=not progress, desc=f"batch of {len(sims)}", unit="step", smoothing=0)

    def advance(i, chunk):
        """Send copy i its chunk (None: start it); keep its next request, or its end. A copy
        outside the batch (a model that shares no compiled code) answers its own requests."""
        sim = sims[i]
        before = sim.steps_done
        end = None
        with warnings.catch_warnings(record=True) as caught:  # each copy's own (sessions run in this thread)
            warnings.simplefilter("always")
            try:
                request = sessions[i].send(chunk)
                while i not in batched:
                    request = sessions[i].send(sim._loop.run(*request))
                requests[i] = request
            except StopIteration as stopped:
                end = (stopped.value, "completed", None)
            except RunInterrupted as exc:
                end = (exc.trajectory, "interrupted", exc)
            except SimulationError as exc:
                end = (exc.trajectory, f"failed: {exc}", exc)
            except Exception as exc:  # before its first step (its output file, say): this copy only
                end = (None, f"failed: {type(exc).__name__}: {exc}", exc)
        raised[i].extend(f"{w.category.__name__}: {w.message}" for w in caught)
        if end is not None:
            runs[i] = BatchRun(*end, dict(sim.loop_steps), tuple(raised[i]))
        bar.update(sim.steps_done - before)

    running = {}  # future -> (group, part)

    def submit(pool, group, p):
        """The next compiled call of a group's part p, if any copy of it asks one. A group whose
        compilation or call failed refuses every request: its copies go on with their ordinary
        steps (each one's loop_steps and warnings say so)."""
        part = group.parts[p] if group.error is None else group.members
        if group.error is not None:
            for i in part:
                if i in requests:
                    raised[i].append(f"RuntimeWarning: the batched call failed ({group.error}); ordinary steps")
            while any(i in requests for i in part):
                for i in [i for i in part if i in requests]:
                    del requests[i]
                    advance(i, _REFUSED)
            return
        if not any(i in requests for i in part):
            return
        padded = part + [part[-1]] * (group.size - len(part))
        states = [requests[i][0] if i in requests else sims[i].state for i in padded]
        asked = [requests[i][1] if i in requests else 0 for i in part] + [0] * (group.size - len(part))
        inputs = (
            np.stack([s.q for s in states]), np.stack([s.v for s in states]),
            np.array([s.steps_done for s in states], np.int64),
            np.stack([s.normal_force for s in states]), np.stack([s.friction_force for s in states]),
            np.stack([initial_set(s.active_set, group.unknowns, group.velocities, group.contacts) for s in states]),
            np.array(asked, np.int64),
        )  # fmt: skip
        tolerance = np.array([sims[i].tolerance for i in padded], np.float64)
        masses = group.masses[p]
        running[pool.submit(_call, group.executable, inputs, group.numbers[p], tolerance, masses)] = (group, p)

    with stop, threadpool_limits(limits=1, user_api="blas"), float64(), ThreadPoolExecutor(THREADS) as pool:
        for i in batched:
            sims[i]._chunk_limit = CHUNK_LENGTH
        try:
            sessions = [
                session(sim, n, t_end, False, out, record_every, chunk_steps, stop, overwrite)
                for sim, n, out in zip(sims, steps, outs, strict=True)
            ]
            for i in range(len(sims)):
                advance(i, None)
            for group in [_Group(members, sims, CHUNK_LENGTH) for members in groups]:
                for p in range(len(group.parts)):
                    submit(pool, group, p)
            while running:
                for future in wait(list(running), timeout=0.25, return_when=FIRST_COMPLETED).done:
                    group, p = running.pop(future)
                    try:
                        done, out, (relative, active, accepted) = future.result()
                    except Exception as exc:  # XLA or memory: the step is the copies' ordinary one
                        group.error = f"{type(exc).__name__}: {exc}"
                        submit(pool, group, p)
                        continue
                    for b, i in enumerate(group.parts[p]):
                        if i in requests:
                            measured = (relative[b], active[b], int(accepted[b]))
                            chunk = Chunk(int(done[b]), *(x[b] for x in out), measured=measured)
                            del requests[i]
                            advance(i, chunk)
                    submit(pool, group, p)
        finally:
            for i in batched:
                sims[i].__dict__.pop("_chunk_limit", None)
            bar.close()
    warned = [run for run in runs if run.warnings]
    if warned:
        warnings.warn(
            f"{len(warned)} of {len(runs)} runs of the batch raised warnings (BatchRun.warnings), the first: "
            f"{warned[0].warnings[0]}",
            RuntimeWarning,
            stacklevel=2,
        )
    if stop.signal is not None:  # also when every run had ended: the caller asked to stop
        raise BatchInterrupted(stop.signal, runs)
    return runs
