"""Streaming a run into an HDF5 trajectory file (:class:`TrajectoryWriter`), block of steps by
block of steps, with the state a stopped run continues from (:func:`read_resume_state`). The format
is :mod:`lcpdyn.trajectory`'s (module docstring there)."""

from __future__ import annotations

import gc
import os
import secrets
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from . import __version__
from .file_lock import OutputLock
from .output_room import ROOM_MARGIN, STATUS_ROOM, OutputWriteError, no_room, write_failure
from .trajectory_format import (
    _COUNT_FIELD,
    _FORMAT,
    _FORMAT_VERSION,
    _H5_SUFFIXES,
    _READ_ERRORS,
    _RECORD_LAYOUT,
    _STATIC_LAYOUT,
    _STEP_LAYOUT,
    TrajectoryFileError,
    _count,
    _describe,
    _fits,
    _names,
    _numeric,
    _parameters_json,
    _Problem,
    _remove,
    _status_problem,
    check_output_path,
    read_resume_state,
)
from .trajectory_layout import checked_detected, chunk_bytes, chunk_cache, create_detected

__all__ = ["OutputWriteError", "TrajectoryWriter", "read_resume_state"]


class TrajectoryWriter:
    """Stream a run into an HDF5 file (h5py), block of steps by block of steps.

    path : the file, ending in ``.h5`` or ``.hdf5``; its directory must exist.
    parameters : the run's settings (a JSON-serializable dict), stored as the ``parameters``
        attribute (JSON text).
    body_names : one name per body (or an empty list: not recorded).
    n_bodies, n_contacts : sizes of the body and contact axes of the per-step fields.
    chunk_steps : steps per HDF5 chunk (the unit of storage and of the Fletcher-32 checksum).
    compression : None (default: chunks are rewritten in place at every flush) or ``"gzip"`` /
        ``"lzf"`` (smaller files; each flush of a partly filled chunk stores it anew).

    The file starts with ``status = "running"``, ``steps = 0``, one empty resizable dataset per
    per-step field (float64, except ``contact_kinetic``, ``solver_status``, ``solver_fallback``
    and ``health`` int8 and ``solver_iterations`` int32, as :meth:`lcpdyn.stepper.Simulation.run`
    records them) and the root attributes listed in the module docstring. :meth:`append` adds
    steps, :meth:`write_static` the initial values, :meth:`write_resume_state` the state to
    continue from, :meth:`set_status` and :meth:`close` end it. Every method that writes ends
    with ``flush()``, so that a killed process leaves a file holding every completed call: the
    file is consistent at each flush, and the ``steps`` attribute, written last, bounds what
    :func:`load` reads (an append cut by the kill is ignored). This covers a process kill, not
    a power cut: nothing is fsynced while streaming.

    One writer per file: the writer takes the output's lock (:class:`lcpdyn.file_lock.OutputLock`)
    before it creates or truncates anything, and holds it until :meth:`close`; a second writer of
    the same ``path`` -- a new run or one continuing it -- is refused at once with
    :class:`lcpdyn.file_lock.OutputBusy` naming the process that writes it.

    Where the file lives: it is created under a name of its own,
    ``path + ".<pid>-<random>.partial"``, and renamed (``os.replace``)
    onto ``path`` by the first :meth:`append` that adds steps, after its flush -- or, for a run
    without steps, by :meth:`close` with status ``"completed"``. So a file already at ``path``
    (an earlier run) is replaced in one atomic step, and only once the new run has a step to
    show: a run that fails or is interrupted before its first step leaves it untouched (its own
    record stays in its ``.partial`` file, with its status). From the first step on, ``path``
    holds a loadable file that grows with every append (:func:`load` reads its completed steps,
    even while the writer runs, as of the last flush). Creating the file directly at ``path`` would destroy the earlier
    file before the new run had anything; renaming only at :meth:`close` would leave a killed
    run's steps under a name nobody looks for. The rename of an open file needs POSIX semantics
    (Linux, macOS).

    A full disk: every write first checks that the file's disk has room for it (the chunks it
    may allocate, plus :data:`~lcpdyn.output_room.ROOM_MARGIN`), and a write without room raises
    :class:`OutputWriteError` (``ENOSPC``) before anything is written, so the file stays as its
    last write left it: complete, loadable, and continued (:meth:`open_or_append`) once there is
    room or after it is moved. A write that fails all the same (a quota, another process filling
    the disk, an I/O error) raises :class:`OutputWriteError` with ``damaged=True``; the writer is
    then broken: every later write raises the same error, and :meth:`abandon` (or :meth:`close`)
    lets go of the file without writing more.

    As a context manager (``with TrajectoryWriter(...) as writer:``) the file is closed on
    leaving: with status ``"completed"`` when the block ends normally, ``"interrupted"`` on
    KeyboardInterrupt, ``"failed: <ExceptionType>: <message>"`` on any other exception -- unless
    :meth:`set_status` already set a status other than ``"running"``.
    """

    _publish_on_append = True

    def __init__(
        self,
        path,
        parameters: dict,
        body_names: list,
        n_bodies: int,
        n_contacts: int,
        chunk_steps: int = 1024,
        *,
        compression: str | None = None,
    ):
        import h5py

        self.path = check_output_path(path, _H5_SUFFIXES)
        text = _parameters_json(parameters)
        n_bodies = _count("n_bodies", n_bodies, 0)
        n_contacts = _count("n_contacts", n_contacts, 0)
        chunk_steps = _count("chunk_steps", chunk_steps, 1)
        names = list(body_names)
        if (names and len(names) != n_bodies) or not all(isinstance(name, str) for name in names):
            raise ValueError(f"body_names must be {n_bodies} strings (or empty), got {names!r}")
        if compression not in (None, "gzip", "lzf"):
            raise ValueError(f"compression must be None, 'gzip' or 'lzf', got {compression!r}")
        self.n_bodies, self.n_contacts, self.chunk_steps = n_bodies, n_contacts, chunk_steps
        self._steps, self._status, self._published, self._continuing = 0, "running", False, False
        self._records, self._broken, self._resume_written = 0, None, False
        self._lock = OutputLock(self.path) if self._locked else None  # before anything is created or truncated
        self._temporary = self._temporary_path()
        try:
            self._room(0, "a new file")
        except BaseException:
            self._release()
            raise
        sizes = {"bodies": n_bodies, "contacts": n_contacts}
        shapes = {name: tuple(sizes.get(d, d) for d in trailing) for name, (trailing, _) in _STEP_LAYOUT.items()}
        try:
            file = h5py.File(self._temporary, "w-", **chunk_cache(chunk_steps, n_bodies, n_contacts))
        except BaseException:
            self._release()
            raise
        try:
            attrs = file.attrs
            attrs["format"] = _FORMAT
            attrs["format_version"] = np.int64(_FORMAT_VERSION)
            attrs["parameters"] = text
            attrs["lcpdyn_version"] = __version__
            attrs["body_names"] = np.array(names, dtype=h5py.string_dtype())
            attrs["status"] = "running"
            attrs["steps"] = np.int64(0)
            for name, shape in shapes.items():
                file.create_dataset(
                    name,
                    shape=(0, *shape),
                    dtype=_STEP_LAYOUT[name][1],
                    maxshape=(None, *(d if d else None for d in shape)),
                    chunks=(chunk_steps, *(max(d, 1) for d in shape)),
                    fletcher32=True,
                    compression=compression,
                    shuffle=compression is not None,
                )
            create_detected(file, 0, chunk_steps, compression)
            file.flush()
        except BaseException:
            file.close()
            _remove(self._temporary)
            self._release()
            raise
        self._file = file

    _locked = True  # a streaming writer holds the output's lock (lcpdyn.file_lock) while it is open

    def _temporary_path(self) -> Path:
        return self.path.with_name(f"{self.path.name}.{os.getpid()}-{secrets.token_hex(3)}.partial")

    def _release(self) -> None:
        if getattr(self, "_lock", None) is not None:
            self._lock.release()

    @classmethod
    def open_or_append(
        cls,
        path,
        parameters: dict,
        body_names: list,
        n_bodies: int,
        n_contacts: int,
        chunk_steps: int = 1024,
        *,
        steps_done: int = 0,
        compression: str | None = None,
    ) -> TrajectoryWriter:
        """A writer for a run that may continue a stopped one.

        ``steps_done == 0`` (a run from the start), or no file at ``path``: a new file, as
        ``TrajectoryWriter(path, ...)``. Otherwise ``path`` must hold an lcpdyn HDF5 trajectory
        whose resume state (:meth:`write_resume_state`) was written at ``steps_done`` steps, with
        ``n_bodies`` bodies, ``n_contacts`` contacts and the same ``body_names``: it is opened
        for appending in place, cut back to the steps recorded when that resume state was
        written (rows appended after it -- a block whose resume state was never written, or an
        append cut by a kill -- are dropped: the continued run recomputes them), and its status
        set back to ``"running"``. A file of another run or another step raises
        :class:`TrajectoryFileError` rather than being overwritten. ``parameters`` are not
        compared (the caller checks that the simulation is the file's, as
        :meth:`lcpdyn.stepper.Simulation.restore` does); the file keeps its own."""
        steps_done = _count("steps_done", steps_done, 0)
        if steps_done == 0 or not os.path.lexists(os.fspath(path)):
            return cls(path, parameters, body_names, n_bodies, n_contacts, chunk_steps, compression=compression)
        import h5py

        target = check_output_path(path, _H5_SUFFIXES)
        lock = OutputLock(target)  # before the file is read, opened for writing or cut back
        try:
            resume = read_resume_state(target)
        except BaseException:
            lock.release()
            raise
        writer = cls.__new__(cls)
        writer.path, writer._temporary, writer._published, writer._continuing = target, target, True, True
        writer._status, writer._lock, writer._broken, writer._steps = "running", lock, None, 0
        writer._resume_written = True
        if resume["steps_done"] != steps_done:
            writer._release()
            raise TrajectoryFileError(
                target,
                f"its resume state is at step {resume['steps_done']}, not at the "
                f"simulation's step {steps_done}: not continuing it",
            )
        try:
            writer._room(0, "continuing it")
            file = h5py.File(target, "r+", **chunk_cache(chunk_steps, n_bodies, n_contacts))
        except _READ_ERRORS as exc:
            writer._release()
            raise TrajectoryFileError(target, f"cannot be opened for appending ({type(exc).__name__}: {exc})") from exc
        except BaseException:
            writer._release()
            raise
        try:
            names = _names(file.attrs["body_names"], "'body_names'") if "body_names" in file.attrs else []
            missing = [name for name in _STEP_LAYOUT if name not in file]
            if missing:
                raise TrajectoryFileError(target, f"lacks the datasets {missing}")
            sizes = (file["position"].shape[1], file["contact_normal_force"].shape[1])
            if sizes != (n_bodies, n_contacts) or (names and body_names and list(body_names) != names):
                raise TrajectoryFileError(
                    target,
                    f"holds a run with {sizes[0]} bodies {names} and {sizes[1]} "
                    f"contacts, not {n_bodies} bodies {list(body_names)} and "
                    f"{n_contacts} contacts",
                )
            steps = min(int(file.attrs["steps"]), resume["trajectory_steps"])
            for name in _STEP_LAYOUT:
                file[name].resize(steps, axis=0)
            if _COUNT_FIELD not in file:  # format version 1: no detected contact in the steps so far
                create_detected(file, steps, file["t"].chunks[0], file["t"].compression)
                file.attrs["format_version"] = np.int64(_FORMAT_VERSION)
            file[_COUNT_FIELD].resize(steps, axis=0)
            records = int(file[_COUNT_FIELD][:steps].sum(dtype=np.int64))
            for name in _RECORD_LAYOUT:
                if file[name].shape[0] < records:
                    held = file[name].shape[0]
                    raise _Problem(f"{name!r} holds {held} records, fewer than the {records} its steps count")
                file[name].resize(records, axis=0)
            file.attrs.modify("steps", np.int64(steps))
            file.attrs["status"] = "running"
            file.flush()
        except _Problem as exc:
            file.close()
            writer._release()
            raise TrajectoryFileError(target, str(exc)) from None
        except BaseException:
            file.close()
            writer._release()
            raise
        writer._file, writer._steps, writer._records = file, steps, records
        writer.n_bodies, writer.n_contacts = n_bodies, n_contacts
        writer.chunk_steps = file["t"].chunks[0]
        return writer

    # --- state ---
    @property
    def steps(self) -> int:
        """Completed steps in the file (the ``steps`` attribute)."""
        return self._steps

    @property
    def status(self) -> str:
        """The file's status attribute: ``running``, ``completed``, ``interrupted`` or ``failed: <reason>``."""
        return self._status

    @property
    def closed(self) -> bool:
        """Whether the file is closed."""
        return self._file is None

    @property
    def broken(self) -> OutputWriteError | None:
        """The error of a write that failed part-way (the writer writes nothing more), or None."""
        return self._broken

    @property
    def resumable(self) -> bool:
        """Whether the file at ``path`` holds a state to continue from (:meth:`write_resume_state`
        has written one, or the file being continued had one)."""
        return self._published and self._resume_written

    def _where(self) -> Path:
        return self.path if self._published else self._temporary

    def _room(self, nbytes: int, what: str, margin: int = ROOM_MARGIN) -> None:
        """Raise :class:`OutputWriteError` (ENOSPC or EDQUOT) unless ``nbytes`` plus ``margin``
        can be written to the file's disk for ``what``."""
        problem = no_room(self.path.parent, nbytes, margin)
        if problem is not None:
            code, words = problem
            held = f"; nothing of it was written, and {self._where()} holds its {self._steps} steps as before"
            held = held if self._steps else "; nothing was written"
            raise OutputWriteError(
                code,
                f"{self.path}: no room on its disk for {what} ({words})"
                + (held if self._steps else "; nothing was written"),
                self._where(),
                self._steps,
                False,
            )

    @contextmanager
    def _writing(self, what: str):
        """Around the HDF5 calls of one write: a failure becomes :class:`OutputWriteError`
        (``damaged=True``, without HDF5's error stack) and breaks the writer."""
        if self._broken is not None:
            raise self._broken
        try:
            yield
        except OutputWriteError:
            raise
        except (OSError, RuntimeError) as exc:  # what h5py raises for a failed write
            self._broken = write_failure(exc, self._where(), f"writing {what}", self._steps)
            raise self._broken from None

    def _open_file(self):
        if self._file is None:
            raise ValueError(f"{self.path}: the writer is closed")
        return self._file

    def _publish_on_close(self) -> bool:
        return self._status == "completed"

    def _publish(self) -> None:
        if not self._published:
            os.replace(self._temporary, self.path)
            self._published = True

    # --- writing ---
    def write_static(self, initial_position, initial_energy) -> None:
        """Store ``initial_position`` (n_bodies, 3; m, world, at t = 0) and ``initial_energy``
        (a scalar, J), replacing earlier values; then flush. A writer continuing a file
        (:meth:`open_or_append`) checks the values but keeps the file's: they describe the start
        of the run, not the point it was continued from."""
        file = self._open_file()
        values = {
            "initial_position": _numeric("initial_position", initial_position),
            "initial_energy": _numeric("initial_energy", initial_energy),
        }
        expected = {"initial_position": (self.n_bodies, 3), "initial_energy": ()}
        for name, value in values.items():
            if value.shape != expected[name]:
                raise ValueError(f"{name} has shape {value.shape}; expected {expected[name]}")
            values[name] = _fits(value, np.dtype(_STATIC_LAYOUT[name][1]))
        if self._continuing and all(name in file for name in values):
            return
        self._room(sum(value.nbytes for value in values.values()), "the initial values")
        with self._writing("the initial values"):
            for name, value in values.items():
                if name in file:
                    file[name][()] = value
                else:
                    file.create_dataset(name, data=value)
            file.flush()

    def append(self, arrays: dict, detected: dict | None = None) -> int:
        """Append a block of k >= 0 steps: ``arrays`` maps every per-step field of :data:`FIELDS`
        (all of them, nothing else) to an array of k rows with that field's shape after the step
        axis (n_bodies, n_contacts); values must fit the field's dtype (an int64 flag array of
        0/1 is stored as int8; a fraction in an integer field is refused). ``detected``: the
        block's detected contacts, every field of :data:`DETECTED_FIELDS` (``detected_count`` of
        k rows, the flat fields of as many records as the counts add up to), or None for none.
        Checked before anything is written. The records grow, then the per-step datasets, then
        the ``steps`` attribute, then the file is flushed (and, the first time, renamed onto
        ``path``). Returns the steps in the file."""
        file = self._open_file()
        if not isinstance(arrays, dict):
            raise TypeError(f"append takes a dict of arrays, got {type(arrays).__name__}")
        missing = [name for name in _STEP_LAYOUT if name not in arrays]
        extra = [name for name in arrays if name not in _STEP_LAYOUT]
        if missing or extra:
            raise ValueError(f"append needs every per-step field: missing {missing}, unknown {extra}")
        block, k = {}, None
        for name in _STEP_LAYOUT:
            dataset = file[name]
            value = _numeric(name, arrays[name])
            if value.ndim != dataset.ndim or value.shape[1:] != dataset.shape[1:]:
                raise ValueError(f"{name!r} has shape {value.shape}; expected {_describe(('k', *dataset.shape[1:]))}")
            if k is None:
                k = value.shape[0]
            elif value.shape[0] != k:
                raise ValueError(f"{name!r} has {value.shape[0]} steps but 't' has {k}")
            try:
                block[name] = _fits(value, dataset.dtype)
            except ValueError as exc:
                raise ValueError(f"{name!r}: {exc}") from None
        records = checked_detected(detected, k)
        if k == 0:
            return self._steps
        n, total = self._steps, self._records
        added = records[_COUNT_FIELD].sum(dtype=np.int64)
        # uncompressed chunks are allocated whole, when first written: the chunks this block starts
        steps_bytes, records_bytes = chunk_bytes(self.chunk_steps, self.n_bodies, self.n_contacts)
        new_steps = -(-(n + k) // self.chunk_steps) - -(-n // self.chunk_steps)
        per = 4 * self.chunk_steps
        new_records = -(-(total + added) // per) - -(-total // per)
        self._room(new_steps * steps_bytes + new_records * records_bytes, f"{k} more steps")
        with self._writing(f"steps {n}..{n + k - 1}"):
            for name in _RECORD_LAYOUT:  # first: rows beyond the counted ones are never read
                dataset = file[name]
                dataset.resize(total + added, axis=0)
                dataset[total:] = records[name]
            block[_COUNT_FIELD] = records[_COUNT_FIELD]
            for name, value in block.items():
                dataset = file[name]
                dataset.resize(n + k, axis=0)
                dataset[n:] = value
            file.attrs.modify("steps", np.int64(n + k))  # last: a reader bounds every dataset by it
            file.flush()
        self._steps, self._records = n + k, int(total + added)
        if self._publish_on_append:
            self._publish()
        return self._steps

    def set_status(self, status: str) -> None:
        """Set the ``status`` attribute -- ``"running"``, ``"completed"``, ``"interrupted"`` or
        ``"failed: <reason>"`` -- and flush."""
        problem = _status_problem(status)
        if problem is not None:
            raise ValueError(problem)
        file = self._open_file()
        self._room(0, f"the status {status!r}", STATUS_ROOM)
        with self._writing("the status"):
            file.attrs["status"] = status
            file.flush()
        self._status = status

    def write_resume_state(
        self, q, v, t: float, steps_done: int, warm_start: dict | None = None, extra: dict | None = None
    ) -> None:
        """Store the state a stopped run continues from, replacing the previous one: group
        ``resume`` with datasets ``q`` (generalized positions), ``v`` (velocities), ``t`` (s),
        ``steps_done`` (steps taken by the simulation, which may differ from the rows in the file
        when not every step is recorded) and groups ``warm_start`` and ``extra`` (name -> real
        numeric array, or None: recorded as absent and read back as None), and the attribute
        ``trajectory_steps`` (the file's ``steps`` now). Written as a new group (``resume.new``)
        that then replaces the old one, and flushed: the old state's data is never overwritten in
        place, so a kill before the flush leaves the previous state readable, not a mix of the
        two. :func:`read_resume_state` reads it back."""
        file = self._open_file()
        t = float(t)
        if not np.isfinite(t):
            raise ValueError(f"t must be finite, got {t!r}")
        steps_done = _count("steps_done", steps_done, 0)
        data = {"q": _numeric("q", q), "v": _numeric("v", v)}
        groups = {}
        for group, entries in (("warm_start", warm_start), ("extra", extra)):
            entries = {} if entries is None else entries
            if not isinstance(entries, dict):
                raise TypeError(f"{group} must be a dict of arrays, got {type(entries).__name__}")
            for key in entries:
                if not isinstance(key, str) or not key or "/" in key or key == ".":
                    raise ValueError(f"{group}: {key!r} is not a valid name (a non-empty string without '/')")
            groups[group] = {
                key: (None if value is None else _numeric(f"{group}[{key!r}]", value)) for key, value in entries.items()
            }
        arrays = [*data.values(), *(v for entries in groups.values() for v in entries.values() if v is not None)]
        self._room(2 * sum(value.nbytes for value in arrays), "the state to continue from")
        with self._writing("the state to continue from"):
            self._write_resume(file, data, groups, t, steps_done)
        self._resume_written = True

    def _write_resume(self, file, data, groups, t, steps_done) -> None:
        import h5py

        if "resume.new" in file:
            del file["resume.new"]
        new = file.create_group("resume.new")
        new.create_dataset("q", data=data["q"])
        new.create_dataset("v", data=data["v"])
        new.create_dataset("t", data=np.float64(t))
        new.create_dataset("steps_done", data=np.int64(steps_done))
        for group, entries in groups.items():
            sub = new.create_group(group)
            sub.attrs["none"] = np.array(
                [key for key, value in entries.items() if value is None], dtype=h5py.string_dtype()
            )
            for key, value in entries.items():
                if value is not None:
                    sub.create_dataset(key, data=value)
        new.attrs["trajectory_steps"] = np.int64(self._steps)
        if "resume" in file:
            del file["resume"]
        file.move("resume.new", "resume")
        file.flush()

    # --- ending ---
    def close(self, status: str | None = None) -> Path:
        """Set ``status`` if given (:meth:`set_status`) and close the file. If no append has
        renamed it onto ``path`` (no step was written), that is done now when the status is
        ``"completed"``; otherwise the file stays at its ``.partial`` name and a file at ``path``
        is left alone. The output's lock is released. Returns where the file is. Closing twice does nothing."""
        if self._file is None:
            return self.path if self._published else self._temporary
        if self._broken is not None:
            return self.abandon()
        if status is not None:
            problem = _status_problem(status)
            if problem is not None:
                raise ValueError(problem)
        file = self._file
        try:
            try:
                if status is not None:
                    self.set_status(status)
            finally:
                self._file = None
                file.close()
            if self._publish_on_close():
                self._publish()
        finally:
            self._release()
        return self.path if self._published else self._temporary

    def abandon(self) -> Path:
        """Let go of the file without writing anything more (after an :class:`OutputWriteError`):
        HDF5's own complaints about what it can no longer write are silenced; the lock is
        released. The file keeps what its last successful write left (and its name: a file never
        renamed onto ``path`` stays at its ``.partial`` name). Returns where the file is."""
        file, self._file = self._file, None
        if file is not None:
            hook = sys.unraisablehook
            sys.unraisablehook = lambda *args: None  # h5py's object deallocations report the failed flushes
            try:
                try:
                    file.close()
                except (OSError, RuntimeError):
                    pass
                del file
                gc.collect()
            finally:
                sys.unraisablehook = hook
        self._release()
        return self._where()

    def __enter__(self) -> TrajectoryWriter:
        return self

    def __exit__(self, exc_type, exc, traceback) -> bool:
        if self._file is None:
            return False
        status = None
        if self._status == "running":
            if exc_type is None:
                status = "completed"
            elif issubclass(exc_type, KeyboardInterrupt):
                status = "interrupted"
            else:
                status = f"failed: {exc_type.__name__}: {exc}"
        if exc_type is None:
            self.close(status)
            return False
        try:
            self.close(status)
        except Exception as error:  # keep the original exception; say why the file may be incomplete
            if self._file is not None:
                self._file.close()
                self._file = None
            self._release()
            if hasattr(exc, "add_note"):
                exc.add_note(f"closing {self.path} failed too: {type(error).__name__}: {error}")
        return False

    def __repr__(self):
        state = "closed" if self._file is None else self._status
        return f"TrajectoryWriter({str(self.path)!r}, steps={self._steps}, {state})"
