"""A run's records: per-step rows in chunks, streamed to an HDF5 file or saved as .npz at the end, with the
state to continue from (docs/theory/step.md, "Run health", for the energy budget they carry)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from solvers.result import Status

from ..kernels import kinetic_energy, store_bodies, world_angular_velocity
from ..trajectory import Health, Trajectory
from ..trajectory_format import _RECORD_LAYOUT, _remove, no_detected
from ..trajectory_writer import OutputWriteError
from .energy import energy_health, energy_stop
from .errors import EnergyWarning, OutputFailed, SimulationError, UnsolvedWarning

TIMING_STEPS = 1_000_000  # wall times are kept for at most this many steps of a run


class Sink:
    """Where recorded chunks go: an HDF5 file written as the run goes, an .npz saved at the
    end (streamed meanwhile into its checkpoint, :func:`npz_checkpoint`), or nowhere (memory
    only)."""

    def __init__(self, path=None, writer=None, npz=None, lock=None):
        self.path, self.writer, self.npz, self.lock = path, writer, npz, lock

    @staticmethod
    def open(out, sim, record_every, overwrite=False):
        """The sink of ``out`` (None, an .npz or an HDF5 path), holding the output's lock
        (:mod:`lcpdyn.file_lock`: the HDF5 writer's own, or one held for the .npz until it is
        saved) before any step: a second run writing the same file is refused at once. A run from
        the start onto an existing file is refused unless ``overwrite``
        (:func:`~lcpdyn.trajectory.refuse_existing`); a continued run appends to its own."""
        if out is None:
            return Sink()
        from ..file_lock import OutputLock
        from ..trajectory import TrajectoryWriter, check_output_path, refuse_existing

        path = check_output_path(out)
        if sim.steps_done == 0:
            refuse_existing(path, overwrite)
        layout = (
            dict(sim.parameters(), record_every=record_every),
            [b.name for b in sim.model.bodies],
            len(sim.model.bodies),
            len(sim.model.contacts),
        )
        if path.suffix.lower() == ".npz":
            lock = OutputLock(path)
            try:
                checkpoint = npz_checkpoint(path)
                refuse_existing(checkpoint, overwrite)
                writer = TrajectoryWriter(checkpoint, *layout)
            except BaseException:
                lock.release()
                raise
            return Sink(path, writer=writer, npz=path, lock=lock)
        writer = TrajectoryWriter.open_or_append(path, *layout, steps_done=sim.steps_done)
        return Sink(path, writer=writer)

    def release(self, status="failed: the run ended before its records were closed"):
        """Close a writer still open (only when the run left by an unexpected path; ``finish``
        closes it otherwise) and release the output's lock."""
        try:
            if self.writer is not None and not self.writer.closed:
                self.writer.close(status)
        finally:
            if self.lock is not None:
                self.lock.release()


WARM = ("active_set", "impulse_guess")


def npz_checkpoint(path):
    """The HDF5 file an ``.npz`` run streams into until its ``.npz`` is saved:
    ``<name>.npz.checkpoint.h5`` beside it."""
    path = Path(path)
    return path.with_name(path.name + ".checkpoint.h5")


def write_resume(writer, sim, pending_health):
    """The state to continue from (:meth:`Simulation.snapshot`) into the writer's resume group:
    warm starts as ``warm_start``, the rest (previous forces, energy budget, the health flags of
    steps done but not yet recorded) as ``extra``."""
    state = sim.snapshot()
    warm = {name: state[name] for name in WARM}
    extra = {name: value for name, value in state.items() if name not in WARM + ("q", "v", "t", "steps_done")}
    extra["pending_health"] = np.int64(pending_health)
    writer.write_resume_state(state["q"], state["v"], float(state["t"]), int(state["steps_done"]), warm, extra)


class Recorder:
    """Per-step records in chunks (nothing preallocated for the whole run), every
    ``record_every``-th step, flushed to the sink chunk by chunk."""

    def __init__(self, sim, steps: int, record_every: int, chunk_steps: int, sink: Sink):
        self.sim, self.steps, self.every, self.sink = sim, steps, record_every, sink
        self.rows = min(chunk_steps, -(-steps // record_every))
        self.blocks = []  # completed chunks (dicts of arrays)
        self.n = 0  # rows used in the current chunk
        self.records = []  # the current chunk's detected contacts, one tuple per recorded step that has any
        self.a = self._chunk()
        self.static = {}
        self.pending = sim.__dict__.pop("_pending_health", 0)  # flags of steps done, not recorded yet
        self.flagged, self.first, self.largest, self.largest_t, self.largest_scale = 0, None, 0.0, None, 0.0
        self.unsolved, self.unsolved_first, self.unsolved_worst = 0, None, 0.0  # on_unsolved="flag"
        self.recorded_steps = 0
        self.failed = None  # the OutputWriteError that stopped the sink's writer
        # wall times are kept out of the trajectory so that outputs are reproducible
        sim.timing = np.zeros((min(steps, TIMING_STEPS), 5))

    def _chunk(self):
        nb, r, n = len(self.sim.model.bodies), len(self.sim.model.contacts), self.rows
        return {
            "t": np.zeros(n),
            "position": np.zeros((n, nb, 3)),
            "quaternion": np.zeros((n, nb, 4)),
            "velocity": np.zeros((n, nb, 3)),
            "angular_velocity": np.zeros((n, nb, 3)),
            "contact_normal_force": np.zeros((n, r)),
            "contact_friction_force": np.zeros((n, r, 3)),
            "contact_slip_velocity": np.zeros((n, r, 3)),
            "contact_gap": np.zeros((n, r)),
            "contact_kinetic": np.zeros((n, r), np.int8),
            "contact_mu": np.zeros((n, r)),
            "energy": np.zeros(n),
            "solver_status": np.zeros(n, np.int8),
            "solver_iterations": np.zeros(n, np.int32),
            "solver_residual": np.zeros(n),
            "solver_fallback": np.zeros(n, np.int8),
            "health": np.zeros(n, np.int8),
            "detected_count": np.zeros(n, np.int32),
        }

    def timing(self, i, jacobians, inner, record):
        """Stores step ``i``'s wall times (the Jacobians, the solve's parts, recording) in the simulation's timing
        table."""
        if i < self.sim.timing.shape[0]:
            row = self.sim.timing[i]
            row[0] = jacobians
            row[1], row[2], row[3] = inner
            row[4] = record

    def initial(self, sim, k):
        """Records the run's initial positions and energy (and starts the file, if the run streams)."""
        nb = len(sim.model.bodies)
        self.static["initial_position"] = sim.q.reshape(nb, 7)[:, :3].copy()
        self.static["initial_energy"] = np.float64(sim.energy(k))
        if self.sink.writer is not None:
            try:
                self.sink.writer.write_static(self.static["initial_position"], self.static["initial_energy"])
            except OutputWriteError as exc:
                raise self._fail(exc) from None

    def store(self, i, sim, out, k):
        """Records step ``i``'s answer ``out`` (state, contact forces, solver results, energy and health flags) at
        the kinematics ``k``."""
        v = sim.v
        kinetic = kinetic_energy(sim._mass, sim._inertia, v)
        energy = sim.potential_energy(k) + kinetic
        error = None
        try:
            flag, gain, scale = energy_health(sim, energy, kinetic, out.work, k.conservative_power)
        except SimulationError as exc:  # non-finite energy: the step is recorded, then the run stops
            flag, error = 0, exc
        if flag:
            self.flagged += 1
            if self.first is None:
                self.first = sim.t
            if gain > self.largest:
                self.largest, self.largest_t, self.largest_scale = gain, sim.t, scale
        self.pending |= flag | (int(Health.FALLBACK) if out.fallback else 0)
        if out.status:  # kept unsolved (on_unsolved="flag"; otherwise the step raised)
            self.pending |= int(Health.UNSOLVED)
            self.unsolved += 1
            self.unsolved_first = sim.t if self.unsolved_first is None else self.unsolved_first
            self.unsolved_worst = max(self.unsolved_worst, out.residual, key=lambda x: (x != x, x))
        if error is not None or sim.steps_done % self.every == 0 or i + 1 == self.steps:  # phase spans run() calls
            a, j = self.a, self.n
            a["t"][j] = sim.t
            store_bodies(sim.q, v, a["position"][j], a["quaternion"][j], a["velocity"][j], a["angular_velocity"][j])
            a["contact_normal_force"][j] = out.normal_force
            a["contact_friction_force"][j] = out.friction_force
            a["contact_slip_velocity"][j] = out.slip_world
            a["contact_gap"][j] = out.gap
            a["contact_kinetic"][j] = out.kinetic
            a["contact_mu"][j] = out.mu
            a["energy"][j] = energy
            a["solver_status"][j] = out.status
            a["solver_iterations"][j] = out.iterations
            a["solver_residual"][j] = out.residual
            a["solver_fallback"][j] = out.fallback
            a["health"][j] = self.pending
            a["detected_count"][j] = self._detected(out.detected)
            self.pending = 0
            self.n += 1
            if self.n == self.rows:
                self._flush(sim)
        if error is not None:
            raise error
        if flag and sim.energy_check == "stop":
            raise energy_stop(sim, gain, scale, energy)

    def steps_to_flush(self, sim) -> int:
        """Steps from ``sim``'s state until the current chunk of records is full."""
        left = self.rows - self.n
        return (sim.steps_done // self.every + left) * self.every - sim.steps_done

    def chunk_health(self, sim, c, count) -> dict:
        """The energy budget of :meth:`store` for ``count`` steps of a compiled chunk
        (:mod:`lcpdyn.compiled_loop`), vectorized in the same order of operations (running sums,
        minima and maxima give the same numbers as the step-by-step updates); with
        ``energy_check='stop'`` cut after the first flagged step (``stop`` True). Changes nothing."""
        kinetic = c.kinetic_energy[:count]
        energy = c.potential_energy[:count] + kinetic
        works = np.cumsum(np.concatenate([[sim._work], c.work[:count]]))[1:]
        budget = energy + sim._shadow * c.conservative_power[:count] - works
        lowest = np.minimum.accumulate(np.concatenate([[sim._lowest], budget]))[1:]
        candidates = np.maximum(np.maximum(kinetic, np.abs(energy - kinetic - sim._potential_start)), np.abs(works))
        scale = np.maximum.accumulate(np.concatenate([[sim._scale], candidates]))[1:]
        gain = budget - lowest
        if sim.energy_check == "off":
            flags = np.zeros(count, bool)
        else:
            flags = gain > sim.energy_tolerance * scale + 1e-12 * (np.abs(energy) + scale)
        stop = sim.energy_check == "stop" and bool(flags.any())
        if stop:
            count = int(np.argmax(flags)) + 1
        return {
            "count": count, "stop": stop, "flags": flags[:count], "gain": gain[:count], "scale": scale[:count],
            "energy": energy[:count], "works": works[:count], "lowest": lowest[:count],
        }  # fmt: skip

    def store_chunk(self, i, first, sim, c, relative, health):
        """:meth:`store` for steps ``i`` .. of this run (numbers ``first`` .. of the whole run)
        from a compiled chunk, with :meth:`chunk_health`'s budget; ``sim`` is already at the
        chunk's last state. Fills at most the current chunk of records (the caller never runs
        past :meth:`steps_to_flush`)."""
        count, flags, gain, scale = health["count"], health["flags"], health["gain"], health["scale"]
        sim._work, sim._lowest, sim._scale = (
            float(health["works"][-1]), float(health["lowest"][-1]), float(scale[-1]),
        )  # fmt: skip
        number = first + np.arange(count)
        t = number * sim.dt
        if flags.any():
            self.flagged += int(flags.sum())
            if self.first is None:
                self.first = float(t[np.argmax(flags)])
            j = int(np.argmax(np.where(flags, gain, -np.inf)))
            if gain[j] > self.largest:
                self.largest, self.largest_t, self.largest_scale = float(gain[j]), float(t[j]), float(scale[j])
        recorded = np.flatnonzero((number % self.every == 0) | (i + np.arange(count) + 1 == self.steps))
        gained = np.cumsum(flags)
        if recorded.size:
            before = np.concatenate([[0], gained[recorded[:-1]]])
            row_health = np.where(gained[recorded] > before, int(Health.ENERGY_GAIN), 0).astype(np.int8)
            row_health[0] |= self.pending
            self.pending = int(Health.ENERGY_GAIN) if gained[-1] > gained[recorded[-1]] else 0
        else:
            row_health = np.zeros(0, np.int8)
            self.pending |= int(Health.ENERGY_GAIN) if gained[-1] else 0
        if recorded.size > self.rows - self.n:
            raise AssertionError("compiled chunk past the recorder's flush")  # steps_to_flush prevents it
        if recorded.size == count:  # every step recorded: views, not copies
            recorded = slice(0, count)
        nb = len(sim.model.bodies)
        q = c.q[recorded].reshape(-1, nb, 7)
        v = c.v[recorded].reshape(-1, nb, 6)
        rows = {
            "t": t[recorded],
            "position": q[:, :, :3],
            "quaternion": q[:, :, 3:],
            "velocity": v[:, :, :3],
            "angular_velocity": world_angular_velocity(q[:, :, 3:], v[:, :, 3:]),
            "contact_normal_force": c.normal_force[recorded],
            "contact_friction_force": c.friction_force[recorded],
            "contact_slip_velocity": c.slip_world[recorded],
            "contact_gap": c.gap[recorded],
            "contact_kinetic": c.kinetic[recorded],
            "contact_mu": c.mu[recorded],
            "energy": health["energy"][recorded],
            "solver_status": int(Status.SOLVED),
            "solver_iterations": c.iterations[recorded],
            "solver_residual": relative[recorded],
            "solver_fallback": 0.0,
            "health": row_health,
            "detected_count": 0,  # the compiled loop takes no colliders
        }
        j, take = self.n, row_health.size
        for name, values in rows.items():
            self.a[name][j : j + take] = values
        self.n += take
        if self.n == self.rows:
            self._flush(sim)

    def _detected(self, detected) -> int:
        """Keeps a recorded step's detected contacts (:class:`~lcpdyn.strategies.detected.DetectedResult`,
        or None) for the chunk's records (:data:`lcpdyn.trajectory.DETECTED_FIELDS`); returns their number."""
        if detected is None or len(detected) == 0:
            return 0
        c = detected.contacts
        self.records.append((
            c.collider, c.body, 0.5 * (c.point_a + c.point_b), c.normal, c.gap, detected.normal_force,
            detected.friction_force, detected.impact, detected.kinetic,
        ))  # fmt: skip
        return len(detected)

    def _flush(self, sim):
        if self.n == 0:
            return
        block = {name: values[: self.n].copy() for name, values in self.a.items()}
        detected = {"detected_count": block.pop("detected_count")}
        for j, (name, (trailing, dtype)) in enumerate(_RECORD_LAYOUT.items()):
            parts = [np.asarray(record[j]) for record in self.records]
            detected[name] = np.concatenate(parts).astype(dtype) if parts else np.zeros((0, *trailing), dtype)
        self.records = []
        self.blocks.append({**block, **detected})
        self.recorded_steps += self.n
        self.n = 0
        if self.sink.writer is not None and self.failed is None:
            try:
                self.sink.writer.append(block, detected)
                write_resume(self.sink.writer, sim, self.pending)
            except OutputWriteError as exc:
                raise self._fail(exc) from None

    def _fail(self, exc: OutputWriteError) -> OutputFailed:
        """The run's stop for a write that failed: the writer lets go of its file (nothing more is
        written to it), and the error says where the steps written are and how to go on."""
        self.failed = exc
        writer = self.sink.writer
        if not exc.damaged and exc.steps:  # refused before writing: the file can still say why it stopped
            try:
                writer.set_status(f"failed: {exc.strerror}")
            except OutputWriteError:
                pass
        where = writer.abandon()
        if where != writer.path and exc.steps == 0:  # never renamed onto its name, and holds no step
            _remove(where)
        resumable = not exc.damaged and writer.resumable
        message = str(exc)
        if self.sink.npz is not None:
            message = f"{self.sink.npz} is not written: its checkpoint {message}"
        if resumable:
            message += (
                f"; it continues, on a disk with room (move it there), with `lcpdyn run --resume {where} --t-end T` "
                "or lcpdyn.rebuild.resume"
            )
        sim = self.sim
        return OutputFailed(message, sim.steps_done, sim.t, str(where), exc.steps, resumable)

    def warn(self):
        """Warns once of the steps kept unsolved (``on_unsolved='flag'``), with the first one's time."""
        if self.unsolved:
            sim = self.sim
            warnings.warn(
                f"{self.unsolved} of {self.steps} steps kept unsolved (on_unsolved='flag'; first at t = "
                f"{self.unsolved_first:.6g} s): relative residual up to {self.unsolved_worst:.3g} against the "
                f"tolerance {sim.tolerance:g}; the steps are flagged in trajectory.health (Health.UNSOLVED), "
                "their status and residual in solver_status and solver_residual",
                UnsolvedWarning,
                stacklevel=3,
            )
        if self.flagged:
            sim = self.sim
            warnings.warn(
                f"energy gain in {self.flagged} of {self.steps} steps (first at t = "
                f"{self.first:.6g} s): the energy rose up to {self.largest:.4g} J above its lowest value "
                f"(at t = {self.largest_t:.6g} s; {self.largest / self.largest_scale:.3g} of the energy "
                f"scale {self.largest_scale:.4g} J, energy_tolerance = {sim.energy_tolerance:g}) with "
                f"position_update={sim.position_update!r}, gyroscopic={sim.gyroscopic!r}, "
                f"dt = {sim.dt:g} s; the steps are flagged in trajectory.health (Health.ENERGY_GAIN)",
                EnergyWarning,
                stacklevel=3,
            )

    def finish(self, steps_done, status) -> Trajectory:
        """The trajectory of the recorded steps so far (the run did ``steps_done`` steps), with
        the sink brought up to date: every record written, ``status`` set, the file closed."""
        sim = self.sim
        self._flush(sim)
        if self.blocks:
            arrays = {name: np.concatenate([b[name] for b in self.blocks]) for name in self.blocks[0]}
        else:
            arrays = {name: values[:0].copy() for name, values in self.a.items()}
            arrays.update(no_detected(0))
        arrays.update(self.static)
        parameters = dict(sim.parameters(), record_every=self.every, status=status)
        trajectory = Trajectory(arrays, parameters, [b.name for b in sim.model.bodies])
        writer = self.sink.writer
        if writer is not None and self.failed is None:
            try:
                write_resume(writer, sim, self.pending)
                writer.close(status)
            except OutputWriteError as exc:
                error = self._fail(exc)
                error.trajectory = trajectory
                raise error from None
        if self.sink.npz is not None and self.failed is None:
            try:
                trajectory.save(self.sink.npz)
            except OSError as exc:
                error = OutputFailed(
                    f"{self.sink.npz}: saving failed ({exc.strerror or exc}); the run's {trajectory.t.shape[0]} "
                    f"recorded steps are kept in its checkpoint {writer.path} (lcpdyn.load reads it, "
                    "`lcpdyn run --resume` continues it)",
                    sim.steps_done, sim.t, str(writer.path), trajectory.t.shape[0], True, trajectory,
                )  # fmt: skip
                raise error from None
            _remove(writer.path)
        return trajectory
