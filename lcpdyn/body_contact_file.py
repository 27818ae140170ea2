"""A body-contact run streamed into an HDF5 file, and the state to continue it from
(:meth:`lcpdyn.body_contact.BodyContactSimulation.run` with ``out=``,
:meth:`~lcpdyn.body_contact.BodyContactSimulation.resume`, :func:`load_run`).

A pile or a stack of bodies is a long run (the 500-sphere pour takes about 25 min for 1 s) whose
contacts change in number from step to step, so its file is not
:class:`lcpdyn.trajectory.TrajectoryWriter`'s (a fixed contact axis). Layout (h5py, every
dataset resizable along its first axis):

* ``t`` (n + 1,), ``q`` (n + 1, 7 nb), ``v`` (n + 1, 6 nb), ``energy``, ``kinetic_energy``
  (n + 1,): the state before the first step and after each of the n steps (s, m and unit
  quaternions, m/s and rad/s, J);
* one dataset per step column of :class:`~lcpdyn.body_contact.BodyContactRun` (``contacts``,
  ``penetration``, ``solve_status``, ... ``candidates``), (n,) -- but not the wall times
  (``time_*``), so that the same run writes the same file, bit for bit (read back as NaN);
* with contacts recorded: ``contact_count`` (n,) and the contacts of all steps one after the
  other, ``contact_body`` (K, 2), ``contact_point`` (K, 3), ``contact_normal`` (K, 3),
  ``contact_normal_force`` (K,), ``contact_friction_force`` (K, 3), ``contact_gap`` (K,);
* root attributes: ``format``, ``format_version``, ``lcpdyn_version``, ``parameters`` (JSON: the
  simulation's :meth:`~lcpdyn.body_contact.BodyContactSimulation.parameters`), ``scene`` (JSON:
  body count, masses and inertias, which the continuing simulation must match),
  ``total_steps`` (the steps the run was asked for), ``record_contacts``, ``status``
  (``running``, ``completed``, ``interrupted``, ``failed: <reason>``) and ``steps``, written last
  at every flush: a reader bounds every dataset by it, so a kill between two flushes leaves a
  file that reads as of the last one;
* group ``resume``: the :class:`~lcpdyn.body_contact.BodyContactState` after the last step in
  the file -- q, v, t, steps done, the contacts found at that step with their impulses, active
  sets and tangents (the warm start of the next step) -- and the run's energy bookkeeping
  (work done, lowest energy budget, energy scale, flagged gains), so that a continued run is
  the uninterrupted one bit for bit: same states, same health flags. Written as ``resume.new``
  and moved over the old group after the steps are appended.

Where the file lives: as ``path + ".partial"`` until the first block of steps is flushed, then
renamed onto ``path`` (``os.replace``; an earlier file there is replaced in one step, and only
once the new run has a step to show), as :class:`lcpdyn.trajectory.TrajectoryWriter` does.
Blocks of ``chunk_steps`` steps are appended and flushed; on SIGINT or SIGTERM the run stops
after the step in progress, appends what is left, and closes the file ``interrupted``. A kill
(SIGKILL, a power cut) loses at most the steps since the last flush; the file is flushed, not
fsynced.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from . import __version__
from .trajectory_format import (
    _H5_SUFFIXES,
    _READ_ERRORS,
    TrajectoryFileError,
    _open_h5_or_report,
    _parameters_json,
    _remove,
    _status_problem,
    check_output_path,
)

__all__ = ["FORMAT", "BodyContactWriter", "read_resume", "read_run"]

FORMAT, FORMAT_VERSION = "lcpdyn body-contact run", 1

ROW_FIELDS = ("t", "q", "v", "energy", "kinetic_energy")
STEP_FIELDS = {  # name -> dtype, in BodyContactRun's column order
    "contacts": np.int64,
    "penetration": np.float64,
    "solve_status": np.int64,
    "iterations": np.int64,
    "residual": np.float64,
    "fallback": np.bool_,
    "health": np.int8,
    "islands": np.int64,
    "largest_island": np.int64,
    "candidates": np.int64,
    "time_detection": np.float64,
    "time_rows": np.float64,
    "time_solve": np.float64,
    "time_rest": np.float64,
}
TIMING = ("time_detection", "time_rows", "time_solve", "time_rest")  # wall times: not written, read as NaN
CONTACT_FIELDS = {  # name -> (trailing shape, dtype)
    "contact_body": ((2,), np.int64),
    "contact_point": ((3,), np.float64),
    "contact_normal": ((3,), np.float64),
    "contact_normal_force": ((), np.float64),
    "contact_friction_force": ((3,), np.float64),
    "contact_gap": ((), np.float64),
}
_CONTACT_ARRAYS = ("collider", "body", "point_a", "point_b", "normal", "gap", "local_a", "feature")


def scene_fingerprint(mass, inertia) -> dict:
    """What a continuing simulation must share with the file's: the body count, masses (kg) and
    inertia tensors (kg m^2), as JSON-able lists (compared exactly)."""
    mass = np.asarray(mass, np.float64)
    return {"bodies": int(mass.shape[0]), "mass": mass.tolist(), "inertia": np.asarray(inertia, np.float64).tolist()}


class BodyContactWriter:
    """Streams a body-contact run into ``path`` (``.h5``/``.hdf5``; module docstring).

    ``BodyContactWriter(path, parameters, scene, n_bodies, total_steps, record_contacts)``
    starts a new file (``path + ".partial"`` until the first append);
    :meth:`continuing` reopens a stopped run's file in place. :meth:`append` adds a block of
    rows, steps and contacts and the state to continue from; :meth:`close` sets the status."""

    def __init__(self, path, parameters: dict, scene: dict, n_bodies: int, total_steps: int, record_contacts: bool):
        import h5py

        self.path = check_output_path(path, _H5_SUFFIXES)
        self._temporary = self.path.with_name(self.path.name + ".partial")
        self._published = False
        self.record_contacts = bool(record_contacts)
        self.steps = 0
        file = h5py.File(self._temporary, "w")
        try:
            attrs = file.attrs
            attrs["format"] = FORMAT
            attrs["format_version"] = np.int64(FORMAT_VERSION)
            attrs["lcpdyn_version"] = __version__
            attrs["parameters"] = _parameters_json(parameters)
            attrs["scene"] = _parameters_json(scene)
            attrs["total_steps"] = np.int64(total_steps)
            attrs["record_contacts"] = self.record_contacts
            attrs["status"] = "running"
            attrs["steps"] = np.int64(0)
            layout = {"t": ((), np.float64), "q": ((7 * n_bodies,), np.float64), "v": ((6 * n_bodies,), np.float64),
                      "energy": ((), np.float64), "kinetic_energy": ((), np.float64)}  # fmt: skip
            layout.update({name: ((), kind) for name, kind in STEP_FIELDS.items() if name not in TIMING})
            if self.record_contacts:
                layout["contact_count"] = ((), np.int64)
                layout.update(CONTACT_FIELDS)
            for name, (trailing, kind) in layout.items():
                file.create_dataset(name, shape=(0, *trailing), dtype=kind, maxshape=(None, *trailing),
                                    chunks=(256 if name.startswith("contact_") else 64, *trailing))  # fmt: skip
            file.flush()
        except BaseException:
            file.close()
            _remove(self._temporary)
            raise
        self._file = file

    @classmethod
    def continuing(cls, path) -> BodyContactWriter:
        """The file of a stopped run, opened for appending and cut back to the steps its resume
        state was written with (rows a kill left beyond it are dropped: the continued run
        recomputes them); its status set back to ``running``."""
        import h5py

        path = check_output_path(path, _H5_SUFFIXES)
        resume = read_resume(path)
        writer = cls.__new__(cls)
        writer.path = writer._temporary = path
        writer._published = True
        try:
            file = h5py.File(path, "r+")
        except _READ_ERRORS as exc:
            raise TrajectoryFileError(path, f"cannot be opened for appending ({type(exc).__name__}: {exc})") from exc
        try:
            steps = resume["steps_in_file"]
            writer.record_contacts = bool(file.attrs["record_contacts"])
            _cut(file, steps, writer.record_contacts)
            file.attrs.modify("steps", np.int64(steps))
            file.attrs["status"] = "running"
            file.flush()
        except BaseException:
            file.close()
            raise
        writer._file, writer.steps = file, steps
        return writer

    def append(self, rows: dict, steps: dict, contacts: dict | None, resume: dict) -> None:
        """Append k steps: ``rows`` (every name of ``ROW_FIELDS``, the rows after :attr:`rows`:
        k of them, or k + 1 in a new file, whose first block starts with the state before the
        first step), ``steps`` (every
        name of ``STEP_FIELDS``, k values), ``contacts`` (``contact_count`` (k,) and the
        ``CONTACT_FIELDS``, or None without contacts recorded), then the resume state
        (:func:`_write_resume`); flush; the first time, rename the file onto ``path``."""
        file = self._file
        k = len(steps["contacts"])
        n = self.steps
        blocks = dict(rows)
        blocks.update({name: value for name, value in steps.items() if name not in TIMING})
        if self.record_contacts:
            blocks.update(contacts)
        for name, value in blocks.items():
            dataset = file[name]
            value = np.asarray(value, dataset.dtype).reshape((-1, *dataset.shape[1:]))
            start = dataset.shape[0] if name in ROW_FIELDS or name in CONTACT_FIELDS else n
            dataset.resize(start + value.shape[0], axis=0)
            dataset[start:] = value
        _write_resume(file, resume, n + k)
        file.attrs.modify("steps", np.int64(n + k))  # last: a reader bounds every dataset by it
        file.flush()
        self.steps = n + k
        if not self._published and k:
            os.replace(self._temporary, self.path)
            self._published = True

    @property
    def rows(self) -> int:
        """Rows of the state datasets in the file (0 in a new file, else steps + 1)."""
        return int(self._file["t"].shape[0])

    def close(self, status: str) -> Path:
        """Set the status and close; a file that never got a step stays at ``path + ".partial"``
        unless the run completed. Returns where the file is."""
        problem = _status_problem(status)
        if problem is not None:
            raise ValueError(problem)
        if self._file is not None:
            file, self._file = self._file, None
            try:
                file.attrs["status"] = status
                file.flush()
            finally:
                file.close()
            if not self._published and status == "completed":
                os.replace(self._temporary, self.path)
                self._published = True
        return self.path if self._published else self._temporary


def _cut(file, steps: int, record_contacts: bool) -> None:
    """Every dataset cut back to ``steps`` steps (rows: steps + 1; contacts: their count)."""
    for name in ROW_FIELDS:
        file[name].resize(steps + 1, axis=0)
    for name in STEP_FIELDS:
        if name not in TIMING:
            file[name].resize(steps, axis=0)
    if record_contacts:
        file["contact_count"].resize(steps, axis=0)
        total = int(file["contact_count"][:].sum())
        for name in CONTACT_FIELDS:
            file[name].resize(total, axis=0)


def _write_resume(file, resume: dict, steps: int) -> None:
    import h5py

    if "resume.new" in file:
        del file["resume.new"]
    group = file.create_group("resume.new")
    for name, value in resume.items():
        if value is None:
            continue
        group.create_dataset(name, data=np.asarray(value))
    group.attrs["none"] = np.array([k for k, v in resume.items() if v is None], dtype=h5py.string_dtype())
    group.attrs["steps_in_file"] = np.int64(steps)
    if "resume" in file:
        del file["resume"]
    file.move("resume.new", "resume")


def _open(path):
    path = Path(os.path.abspath(os.fspath(path)))
    if not path.exists():
        raise TrajectoryFileError(path, "does not exist")
    file = _open_h5_or_report(path)
    if file.attrs.get("format") != FORMAT:
        found = file.attrs.get("format")
        file.close()
        raise TrajectoryFileError(path, f"is not a body-contact run (format {found!r}, expected {FORMAT!r})")
    return path, file


def _attributes(file) -> dict:
    """The run's status, parameters, scene and total steps (root attributes)."""
    return {"status": str(file.attrs["status"]), "parameters": json.loads(file.attrs["parameters"]),
            "scene": json.loads(file.attrs["scene"]), "total_steps": int(file.attrs["total_steps"])}  # fmt: skip


def read_resume(path) -> dict:
    """The resume group of a body-contact run file, as a dict: ``q``, ``v``, ``t``,
    ``steps_done``, the contact arrays and warm start (None where absent), the energy
    bookkeeping, ``steps_in_file``, and the file's ``parameters``, ``scene`` (dicts),
    ``total_steps``, ``status``. A missing or damaged file is a
    :class:`~lcpdyn.trajectory.TrajectoryFileError` naming it."""
    import h5py

    path, file = _open(path)
    try:
        with file:
            group = file.get("resume")
            if not isinstance(group, h5py.Group):
                raise TrajectoryFileError(path, "holds no resume state (no 'resume' group)")
            out = {name: group[name][()] for name in group}
            for name in group.attrs["none"]:
                out[name.decode() if isinstance(name, bytes) else str(name)] = None
            out["steps_in_file"] = int(group.attrs["steps_in_file"])
            out.update(_attributes(file))
    except TrajectoryFileError:
        raise
    except (*_READ_ERRORS, KeyError, ValueError) as exc:
        raise TrajectoryFileError(path, f"the resume state is damaged ({type(exc).__name__}: {exc})") from exc
    return out


def read_run(path) -> dict:
    """Every dataset of a body-contact run file up to its ``steps`` attribute (module
    docstring), plus ``status``, ``parameters``, ``scene``, ``total_steps``,
    ``record_contacts`` and ``lcpdyn_version``."""
    path, file = _open(path)
    try:
        with file:
            steps = int(file.attrs["steps"])
            record = bool(file.attrs["record_contacts"])
            out = {name: file[name][: steps + 1] for name in ROW_FIELDS}
            for name in STEP_FIELDS:
                out[name] = np.full(steps, np.nan) if name in TIMING else file[name][:steps]
            if record:
                out["contact_count"] = file["contact_count"][:steps]
                total = int(out["contact_count"].sum())
                out.update({name: file[name][:total] for name in CONTACT_FIELDS})
            for name, value in out.items():
                if value.shape[0] < (steps + 1 if name in ROW_FIELDS else steps) and name not in CONTACT_FIELDS:
                    raise TrajectoryFileError(path, f"{name!r} holds {value.shape[0]} rows for {steps} steps")
            out.update(_attributes(file))
            out["record_contacts"] = record
            out["lcpdyn_version"] = str(file.attrs["lcpdyn_version"])
    except TrajectoryFileError:
        raise
    except (*_READ_ERRORS, KeyError, ValueError) as exc:
        raise TrajectoryFileError(path, f"is damaged ({type(exc).__name__}: {exc})") from exc
    return out
