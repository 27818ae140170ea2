"""Simulation output: per-step arrays, run parameters, and the .npz and HDF5 file formats.

Two formats, chosen by the file name (``.npz``; ``.h5`` or ``.hdf5``) when writing and by the
file's content (its magic bytes, not its name) when reading:

* ``.npz`` -- a NumPy zip archive written in one go by :meth:`Trajectory.save`: every array of
  :data:`FIELDS` and :data:`DETECTED_FIELDS`, ``parameters`` (JSON text), ``body_names``
  (strings) and ``lcpdyn_version``.
* HDF5 -- written step block by step block by :class:`TrajectoryWriter` (for long runs: a
  killed run keeps every block appended before the kill), or in one go by :meth:`Trajectory.save`.
  Root attributes ``parameters`` (JSON text), ``lcpdyn_version``, ``body_names``, ``status``
  (``running``, ``completed``, ``interrupted`` or ``failed: <reason>``), ``steps`` (completed
  steps: a reader reads that many rows of every per-step dataset, whatever lies beyond),
  ``format`` (``"lcpdyn trajectory"``) and ``format_version`` (2; 1 before the detected
  contacts). One chunked, resizable dataset per per-step field of :data:`FIELDS` and for
  ``detected_count`` (axis 0 the step; Fletcher-32 checksummed, so a damaged chunk is reported,
  not read), one per flat field of :data:`DETECTED_FIELDS` (axis 0 the record: a reader reads as
  many as the counts of the ``steps`` steps add up to), the static ``initial_position`` and
  ``initial_energy``, and an optional group ``resume``
  (:meth:`TrajectoryWriter.write_resume_state`).

Writes are atomic: nothing is written under the final name until it is complete (``.npz``, and
HDF5 through :meth:`Trajectory.save`) or holds at least one step (a streaming
:class:`TrajectoryWriter`, see there). :func:`load` checks what it reads and raises
:class:`TrajectoryFileError` naming the file and the problem. Nothing is ever pickled.
"""

from __future__ import annotations

import enum
import operator
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import __version__
from .trajectory_format import (
    _COUNT_FIELD,
    _FORMAT_VERSION,
    _H5_SUFFIXES,
    _METADATA,
    _READ_ERRORS,
    _RECORD_LAYOUT,
    _STATIC,
    _STEP_LAYOUT,
    DETECTED_FIELDS,
    FIELDS,
    TrajectoryFileError,
    _layout_problem,
    _names,
    _open_h5_or_report,
    _parameters,
    _parameters_json,
    _Problem,
    _remove,
    _sniff,
    _status_problem,
    _sync_directory,
    _temporary_name,
    _text,
    check_output_path,
    foreign_format_problem,
    no_detected,
    refuse_existing,
)
from .trajectory_writer import OutputWriteError, TrajectoryWriter, read_resume_state

__all__ = [
    "DETECTED_FIELDS",
    "FIELDS",
    "Trajectory",
    "load",
    "Health",
    "TrajectoryFileError",
    "OutputWriteError",
    "TrajectoryWriter",
    "read_resume_state",
    "refuse_existing",
    "check_output_path",
]


class _AtomicWriter(TrajectoryWriter):
    """For :meth:`Trajectory.save`: a unique temporary name, moved onto ``path`` by
    :meth:`close` only; ``_discard`` drops it."""

    _publish_on_append = False
    _locked = False  # one atomic rename of a complete file: nothing to corrupt, the last save wins

    def _publish_on_close(self) -> bool:
        return True

    def _temporary_path(self) -> Path:
        return _temporary_name(self.path)

    def _publish(self) -> None:
        if not self._published:
            descriptor = os.open(self._temporary, os.O_RDONLY)  # complete on disk before it takes the name
            try:
                os.fsync(descriptor)
            finally:
                os.close(descriptor)
            super()._publish()
            _sync_directory(self.path.parent)

    def _discard(self) -> None:
        if self._broken is not None:
            self.abandon()
        if self._file is not None:
            try:
                self._file.close()
            finally:
                self._file = None
        if not self._published:
            _remove(self._temporary)


class Health(enum.IntFlag):
    """Bit flags of the per-step ``health`` array (int8; 0 = nothing to report). See
    docs/theory/step.md, "Run health", for how each is decided.

    * ``ENERGY_GAIN`` (1): the mechanical energy, net of the work put in by non-conservative
      applied forces and driven constraints, stands above its lowest value so far by more than
      ``energy_tolerance`` times the run's energy scale (only when ``energy_check`` is not
      ``"off"``).
    * ``FALLBACK`` (2): the first solver failed and the fallback method's answer was used
      (as ``solver_fallback``).
    * ``UNSOLVED`` (4): the step's answer misses the run's ``tolerance`` and was kept because
      the run asked for it (``on_unsolved="flag"``); ``solver_status`` and ``solver_residual``
      say by how much.
    """

    OK = 0
    ENERGY_GAIN = 1
    FALLBACK = 2
    UNSOLVED = 4


@dataclass
class Trajectory:
    """Arrays of :data:`FIELDS` and :data:`DETECTED_FIELDS` plus ``parameters`` (dict) and
    ``body_names``. A step's detected contacts: :meth:`detected_at`."""

    arrays: dict
    parameters: dict
    body_names: list = field(default_factory=list)

    def __getattr__(self, name):
        arrays = self.__dict__.get("arrays", {})
        if name in arrays:
            return arrays[name]
        raise AttributeError(name)

    def truncated(self, steps: int) -> Trajectory:
        """The first ``steps`` steps (used to keep a partial run when a simulation stops)."""
        out = {
            k: (v[:steps] if isinstance(v, np.ndarray) and v.ndim and k not in _STATIC else v)
            for k, v in self.arrays.items()
            if k not in _RECORD_LAYOUT
        }
        if _COUNT_FIELD in self.arrays:
            total = int(np.sum(self.arrays[_COUNT_FIELD][:steps]))
            out.update({name: self.arrays[name][:total] for name in _RECORD_LAYOUT if name in self.arrays})
        return Trajectory(out, dict(self.parameters), list(self.body_names))

    @property
    def detected_start(self) -> np.ndarray:
        """(steps + 1,) int64: step s's detected contacts are the records
        ``detected_start[s]:detected_start[s + 1]`` of the flat ``detected_*`` arrays."""
        count = self.arrays.get(_COUNT_FIELD)
        if count is None:
            count = np.zeros(np.shape(self.arrays["t"])[0], np.int64)
        return np.concatenate([[0], np.cumsum(count, dtype=np.int64)])

    def detected_at(self, step: int) -> dict:
        """Recorded step ``step``'s detected contacts (0-based over the recorded steps, negative
        from the end): a dict of the :data:`DETECTED_FIELDS` records without their ``detected_``
        prefix -- ``collider``, ``body``, ``point``, ``normal``, ``gap``, ``normal_force``,
        ``friction_force``, ``impact``, ``kinetic`` -- one row per contact."""
        steps = np.shape(self.arrays["t"])[0]
        index = operator.index(step)
        if not -steps <= index < steps:
            raise IndexError(f"step {step} is outside the {steps} recorded steps")
        index %= steps
        start = self.detected_start
        a, b = int(start[index]), int(start[index + 1])
        arrays = self.arrays if _COUNT_FIELD in self.arrays else no_detected(steps)
        return {name[len("detected_") :]: arrays[name][a:b] for name in _RECORD_LAYOUT}

    def save(self, path) -> Path:
        """Write the trajectory to ``path`` and return the path written (absolute).

        The name chooses the format: ``.npz`` (every array, ``parameters`` as JSON,
        ``body_names``, ``lcpdyn_version``; compressed) or ``.h5``/``.hdf5`` (through
        :class:`TrajectoryWriter`: every field of :data:`FIELDS` is needed and no other array is
        allowed; ``status`` is ``parameters["status"]`` when that is a valid status, else
        ``"completed"``). Any other name raises :class:`TrajectoryFileError` (no suffix is added).

        Atomic: the file is written under a temporary name in the same directory
        (``.<name>.<random>.tmp``) and renamed onto ``path`` (``os.replace``) only when complete;
        on any error the temporary file is removed and a file already at ``path`` is untouched.
        The arrays are checked as :func:`load` checks them (real numeric dtypes, one length along
        the step axis, consistent body and contact counts), so that no file is written that
        :func:`load` would refuse: a problem raises :class:`ValueError` before anything is
        written."""
        path = check_output_path(path)
        problem = _layout_problem(self.arrays, self.body_names)
        if problem is None:
            clash = [name for name in _METADATA if name in self.arrays]
            problem = f"arrays named {clash} clash with the file's metadata" if clash else None
        if problem is not None:
            raise ValueError(f"cannot save the trajectory to {path}: {problem}")
        if path.suffix.lower() in _H5_SUFFIXES:
            self._save_h5(path)
        else:
            self._save_npz(path)
        return path

    def _save_npz(self, path: Path) -> None:
        members = dict(
            self.arrays,
            parameters=_parameters_json(self.parameters),
            body_names=np.array([str(name) for name in self.body_names], dtype=str),
            lcpdyn_version=__version__,
        )
        temporary = _temporary_name(path)
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies
        try:
            with os.fdopen(descriptor, "wb") as file:
                np.savez_compressed(file, **members)  # numeric and text arrays only (checked): nothing pickled
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, path)
        except BaseException:
            _remove(temporary)
            raise
        _sync_directory(path.parent)

    def _save_h5(self, path: Path) -> None:
        missing = [name for name in FIELDS if name not in self.arrays]
        extra = [name for name in self.arrays if name not in FIELDS and name not in DETECTED_FIELDS]
        if missing or extra:
            what = f"lacks {missing}" if missing else f"has arrays the HDF5 format does not hold: {extra} (use .npz)"
            raise ValueError(f"cannot save the trajectory to {path}: it {what}")
        parameters = dict(self.parameters)
        status = parameters.pop("status", None)
        if not isinstance(status, str) or _status_problem(status) is not None:
            status = "completed"
        arrays = self.arrays
        writer = _AtomicWriter(
            path,
            parameters,
            [str(name) for name in self.body_names],
            np.shape(arrays["position"])[1],
            np.shape(arrays["contact_normal_force"])[1],
            compression="gzip",
        )
        try:
            writer.write_static(arrays["initial_position"], arrays["initial_energy"])
            detected = {name: arrays[name] for name in DETECTED_FIELDS} if _COUNT_FIELD in arrays else None
            writer.append({name: arrays[name] for name in _STEP_LAYOUT}, detected)
            writer.close(status)
        except BaseException:
            writer._discard()
            raise


def _read_npz(path):
    """(arrays, parameters, body_names) of an .npz; a damaged archive raises TrajectoryFileError,
    missing or malformed metadata _Problem."""
    try:
        archive = np.load(path, allow_pickle=False)
    except _READ_ERRORS as exc:
        raise TrajectoryFileError(
            path, f"the .npz (zip) archive is truncated or corrupted ({type(exc).__name__}: {exc})"
        ) from exc
    with archive:
        members = {}
        for name in archive.files:
            try:
                value = archive[name]
            except ValueError as exc:
                if "allow_pickle" in str(exc):
                    raise TrajectoryFileError(
                        path, f"member {name!r} holds pickled Python objects; they are never loaded"
                    ) from exc
                raise TrajectoryFileError(path, f"member {name!r} is corrupted ({exc})") from exc
            except _READ_ERRORS as exc:
                raise TrajectoryFileError(path, f"member {name!r} is corrupted ({type(exc).__name__}: {exc})") from exc
            if not isinstance(value, np.ndarray):
                raise TrajectoryFileError(path, f"member {name!r} is not a NumPy array")
            members[name] = value
    if "parameters" not in members:
        raise _Problem("no 'parameters' member (the run's settings as JSON)")
    parameters = _parameters(_text(members.pop("parameters"), "'parameters'"))
    version = members.pop("lcpdyn_version", None)
    if version is not None:
        parameters.setdefault("lcpdyn_version", _text(version, "'lcpdyn_version'"))
    body_names = _names(members.pop("body_names"), "'body_names'") if "body_names" in members else []
    return members, parameters, body_names


def _read_h5(path):
    """(arrays, parameters, body_names) of an HDF5 trajectory, the per-step datasets read up to
    the ``steps`` attribute; ``parameters["status"]`` from the ``status`` attribute."""
    import h5py

    file = _open_h5_or_report(path)
    try:
        with file:
            attrs = file.attrs
            foreign = foreign_format_problem(attrs)
            if foreign is not None:
                raise _Problem(foreign)
            if "steps" not in attrs:
                raise _Problem("an HDF5 file but not an lcpdyn trajectory (no 'steps' attribute)")
            version = attrs.get("format_version", _FORMAT_VERSION)
            if not np.isscalar(version) or int(version) > _FORMAT_VERSION:
                raise _Problem(f"format version {version!r} is newer than this lcpdyn reads ({_FORMAT_VERSION})")
            steps = np.asarray(attrs["steps"])
            if steps.ndim != 0 or steps.dtype.kind not in "iu" or int(steps) < 0:
                raise _Problem(f"the 'steps' attribute is not a step count ({steps!r})")
            steps = int(steps)
            if "parameters" not in attrs:
                raise _Problem("no 'parameters' attribute (the run's settings as JSON)")
            parameters = _parameters(_text(attrs["parameters"], "'parameters'"))
            parameters.pop("status", None)
            if "status" in attrs:
                parameters["status"] = _text(attrs["status"], "'status'")
            if "lcpdyn_version" in attrs:
                parameters.setdefault("lcpdyn_version", _text(attrs["lcpdyn_version"], "'lcpdyn_version'"))
            body_names = _names(attrs["body_names"], "'body_names'") if "body_names" in attrs else []
            arrays = {}
            for name, item in file.items():
                if not isinstance(item, h5py.Dataset):
                    continue  # the resume group
                if item.dtype.kind not in "biuf":
                    raise _Problem(f"array {name!r} has dtype {item.dtype}, not a real numeric type")
                if name in _STEP_LAYOUT or name == _COUNT_FIELD:
                    if item.ndim == 0 or item.shape[0] < steps:
                        raise _Problem(
                            f"{name!r} holds {item.shape[0] if item.ndim else 0} steps, fewer than "
                            f"the file's 'steps' attribute ({steps})"
                        )
                    arrays[name] = item[:steps]
                elif name not in _RECORD_LAYOUT:
                    arrays[name] = np.asarray(item[()])
            if _COUNT_FIELD in arrays:  # the records of the counted steps, whatever lies beyond
                counts = arrays[_COUNT_FIELD]
                total = int(counts.sum()) if counts.dtype.kind in "iu" and (counts >= 0).all() else 0
                for name in _RECORD_LAYOUT:
                    item = file.get(name)
                    if not isinstance(item, h5py.Dataset) or item.ndim == 0 or item.shape[0] < total:
                        held = "no dataset" if not isinstance(item, h5py.Dataset) else f"{item.shape[0]} records"
                        raise _Problem(f"{name!r} holds {held}, fewer than the {total} its steps count")
                    if item.dtype.kind not in "biuf":
                        raise _Problem(f"array {name!r} has dtype {item.dtype}, not a real numeric type")
                    arrays[name] = item[:total]
    except _Problem as exc:
        raise TrajectoryFileError(path, str(exc)) from None
    except _READ_ERRORS as exc:
        raise TrajectoryFileError(path, f"the HDF5 file is corrupted ({type(exc).__name__}: {exc})") from exc
    return arrays, parameters, body_names


def load(path) -> Trajectory:
    """Read a trajectory file: an .npz written by :meth:`Trajectory.save` or an HDF5 file
    written by :class:`TrajectoryWriter` (told apart by content, whatever the name). For HDF5,
    the per-step arrays hold the ``steps`` attribute's count (a run killed in the middle of an
    append loads its completed steps) and ``parameters`` gets ``status`` and ``lcpdyn_version``
    from the file's attributes.

    Raises :class:`TrajectoryFileError` (a ValueError) naming the file and the problem when the
    path is missing or a directory, the file is neither format, truncated or corrupted (a damaged
    compressed member or HDF5 chunk), ``parameters`` is missing or not a JSON object, ``t`` is
    missing, an array is not of a real numeric dtype, a per-step field of :data:`FIELDS` does not
    have ``len(t)`` steps or its documented shape, the body or contact counts disagree between
    fields, or ``body_names`` does not name every body (an empty list means not recorded).

    Files from before the ``health`` field get it rebuilt from ``solver_fallback`` (the only
    flag they recorded; the energy bit is 0 -- unknown, not checked) and
    ``parameters["energy_check"] = "not recorded"``; files from before the detected contacts
    (format version 1) get :data:`DETECTED_FIELDS` with no contact at any step."""
    kind = _sniff(path)
    try:
        if kind == "npz":
            arrays, parameters, body_names = _read_npz(path)
        else:
            arrays, parameters, body_names = _read_h5(path)
        problem = _layout_problem(arrays, body_names)
        if problem is not None:
            raise _Problem(problem)
    except _Problem as exc:
        raise TrajectoryFileError(path, str(exc)) from None
    if "health" not in arrays and "solver_fallback" in arrays:
        arrays["health"] = np.where(arrays["solver_fallback"] != 0, int(Health.FALLBACK), 0).astype(np.int8)
        parameters.setdefault("energy_check", "not recorded")
    if _COUNT_FIELD not in arrays:  # a file from before the detected contacts (format version 1)
        arrays.update(no_detected(np.shape(arrays["t"])[0]))
    return Trajectory(arrays, parameters, body_names)
