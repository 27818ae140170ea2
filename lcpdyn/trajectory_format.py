"""The trajectory file format's definitions and checks, shared by the reader
(:mod:`lcpdyn.trajectory`) and the HDF5 writer (:mod:`lcpdyn.trajectory_writer`): the fields
and their layouts, the errors, the checks of arrays, names, paths and text that both apply, and
:func:`read_resume_state` (the state a stopped run's file continues from)."""

from __future__ import annotations

import json
import operator
import os
import secrets
import stat
import struct
import tokenize
import zipfile
import zlib
from pathlib import Path

import numpy as np


class TrajectoryFileError(ValueError):
    """A trajectory file cannot be read (missing, not a trajectory, truncated, corrupted, or
    inconsistent), or a path cannot take one. ``path`` is the file, ``problem`` what is wrong;
    the message is ``"<path>: <problem>"``."""

    def __init__(self, path, problem: str):
        self.path, self.problem = os.fspath(path), problem
        super().__init__(f"{self.path}: {problem}")


class _Problem(ValueError):
    """A problem found while reading (becomes a :class:`TrajectoryFileError` naming the file)."""


#: Field -> description; the files hold these arrays plus ``parameters`` (JSON) and ``lcpdyn_version``.
FIELDS = {
    "t": "time at the end of each step (s), shape (steps,)",
    "position": "centre of mass (m, world), (steps, bodies, 3)",
    "quaternion": "orientation (w, x, y, z), (steps, bodies, 4)",
    "velocity": "centre-of-mass velocity (m/s, world), (steps, bodies, 3)",
    "angular_velocity": "angular velocity (rad/s, world), (steps, bodies, 3)",
    "contact_normal_force": "lambda_N (N) during the step, (steps, contacts)",
    "contact_friction_force": "lambda_T (N, world) during the step, (steps, contacts, 3)",
    "contact_slip_velocity": "slip of the material contact point, D v+ (m/s, world), (steps, contacts, 3)",
    "contact_gap": "gap Phi (m) at the start of the step, (steps, contacts)",
    "contact_kinetic": "regularized model branch (1 = kinetic), (steps, contacts)",
    "contact_mu": "friction coefficient the step applied: mu_k; mu_s where a box, polygonal or coulomb contact "
    "stuck with mu_s > mu_k; a friction_profile's value mu(t); (steps, contacts)",
    "energy": "mechanical energy (J) of the state at the end of the step, (steps,)",
    "solver_status": "solvers.Status code of the accepted solve, (steps,)",
    "solver_iterations": "pivots/sweeps of the accepted solve (summed over fixed-point passes), (steps,)",
    "solver_residual": "framework relative residual of the accepted solve, (steps,)",
    "solver_fallback": "1 where the first method failed and the fallback method's answer was used",
    "health": "lcpdyn.trajectory.Health bit flags per step (0 ok, 1 energy gain, 2 fallback used), int8, (steps,)",
    "initial_position": "(bodies, 3) at t = 0",
    "initial_energy": "mechanical energy at t = 0 (J)",
}

# Per-step fields: shape after the step axis ("bodies"/"contacts" or a fixed size) and the dtype
# the stepper records (lcpdyn.run.recorder.Recorder), which is the dtype of the HDF5 datasets.
_STEP_LAYOUT = {
    "t": ((), "f8"),
    "position": (("bodies", 3), "f8"),
    "quaternion": (("bodies", 4), "f8"),
    "velocity": (("bodies", 3), "f8"),
    "angular_velocity": (("bodies", 3), "f8"),
    "contact_normal_force": (("contacts",), "f8"),
    "contact_friction_force": (("contacts", 3), "f8"),
    "contact_slip_velocity": (("contacts", 3), "f8"),
    "contact_gap": (("contacts",), "f8"),
    "contact_kinetic": (("contacts",), "i1"),
    "contact_mu": (("contacts",), "f8"),
    "energy": ((), "f8"),
    "solver_status": ((), "i1"),
    "solver_iterations": ((), "i4"),
    "solver_residual": ((), "f8"),
    "solver_fallback": ((), "i1"),
    "health": ((), "i1"),
}
# Static fields: whole shape.
_STATIC_LAYOUT = {"initial_position": (("bodies", 3), "f8"), "initial_energy": ((), "f8")}
_STATIC = set(_STATIC_LAYOUT)
assert set(_STEP_LAYOUT) | _STATIC == set(FIELDS)

#: Detected contacts (a model's colliders, lcpdyn.detected_contacts): a number that changes from step
#: to step, recorded as one count per recorded step and flat arrays over the records, step s's
#: records being start[s]:start[s + 1] with start the running sum of the counts
#: (Trajectory.detected_at). Files of format version 1 have none: read as no detected contact.
DETECTED_FIELDS = {
    "detected_count": "detected contacts recorded at each step, (steps,)",
    "detected_collider": "the two colliders (indices into Model.colliders), (records, 2)",
    "detected_body": "their bodies (indices into Model.bodies; -1 the world), (records, 2)",
    "detected_point": "midpoint of the two witness points at the start of the step (m, world), (records, 3)",
    "detected_normal": "unit normal from the first collider to the second (world), (records, 3)",
    "detected_gap": "signed distance at the start of the step (m; negative in penetration), (records,)",
    "detected_normal_force": "lambda_N (N) during the step, (records,)",
    "detected_friction_force": "friction force (N, world) on the second collider's body, (records, 3)",
    "detected_impact": "1 where the contact's row was Newton's impact law, (records,)",
    "detected_kinetic": "1 on the regularized model's kinetic branch, (records,)",
}
_COUNT_FIELD = "detected_count"
_COUNT_DTYPE = "i4"
# Flat fields: shape after the record axis and dtype.
_RECORD_LAYOUT = {
    "detected_collider": ((2,), "i4"),
    "detected_body": ((2,), "i4"),
    "detected_point": ((3,), "f8"),
    "detected_normal": ((3,), "f8"),
    "detected_gap": ((), "f8"),
    "detected_normal_force": ((), "f8"),
    "detected_friction_force": ((3,), "f8"),
    "detected_impact": ((), "i1"),
    "detected_kinetic": ((), "i1"),
}
assert {_COUNT_FIELD, *_RECORD_LAYOUT} == set(DETECTED_FIELDS)


_BODY_CONTACT_FORMAT = "lcpdyn body-contact run"


def foreign_format_problem(attrs) -> str | None:
    """Why an HDF5 file with these root attributes is not a trajectory this lcpdyn reads, where
    its format says so: a run of the former ``BodyContactSimulation``; else None."""
    kind = attrs.get("format")
    if isinstance(kind, bytes):
        kind = kind.decode("utf-8", "replace")
    if kind == _BODY_CONTACT_FORMAT:
        return (
            "a run of BodyContactSimulation (format 'lcpdyn body-contact run'), which lcpdyn no longer has: "
            "Simulation takes detected contacts, the colliders in its Model (Model.add_collider), so rerun "
            "the scene there; this file's datasets (t, q, v, energy, contact_*) are plain HDF5 that h5py reads"
        )
    return None


def no_detected(steps: int) -> dict:
    """The detected-contact fields of ``steps`` steps without a detected contact."""
    out = {_COUNT_FIELD: np.zeros(steps, _COUNT_DTYPE)}
    for name, (trailing, dtype) in _RECORD_LAYOUT.items():
        out[name] = np.zeros((0, *trailing), dtype)
    return out


def detected_problem(arrays: dict, steps: int) -> str | None:
    """What is wrong with the detected-contact fields of ``arrays`` (a trajectory of ``steps``
    steps), or None: all of them or none, ``detected_count`` (steps,) of non-negative integers,
    and every flat field with as many records as the counts add up to."""
    present = [name for name in DETECTED_FIELDS if name in arrays]
    if not present:
        return None
    if len(present) != len(DETECTED_FIELDS):
        return f"it has the detected-contact fields {present} but not {sorted(set(DETECTED_FIELDS) - set(present))}"
    count = np.asarray(arrays[_COUNT_FIELD])
    if count.shape != (steps,):
        return f"'detected_count' has shape {count.shape}; expected ({steps},), one count per step"
    if count.dtype.kind not in "iu" or (count.size and int(count.min()) < 0):
        return "'detected_count' is not a count per step (integers >= 0)"
    total = int(count.sum())
    for name, (trailing, _) in _RECORD_LAYOUT.items():
        shape = np.shape(arrays[name])
        if shape != (total, *trailing):
            expected = _describe((total, *trailing))
            return f"{name!r} has shape {shape}; expected {expected} (the counts add up to {total})"
    return None


_METADATA = ("parameters", "body_names", "lcpdyn_version")  # the .npz members that are not arrays of FIELDS
_SUFFIXES = (".npz", ".h5", ".hdf5")
_H5_SUFFIXES = (".h5", ".hdf5")
_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a local file header; an empty archive's end record
_HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
_NPY_MAGIC = b"\x93NUMPY"
_FORMAT, _FORMAT_VERSION = "lcpdyn trajectory", 2  # 2: the detected contacts
_STATUSES = ("running", "completed", "interrupted")
# What reading a damaged zip, .npy member or HDF5 file raises (zipfile, zlib, numpy.lib.format, h5py;
# NumPy 1.x parses a damaged .npy header with tokenize and ast: TokenError, SyntaxError).
_READ_ERRORS = (
    OSError,
    EOFError,
    ValueError,
    KeyError,
    IndexError,
    TypeError,
    RuntimeError,
    NotImplementedError,
    MemoryError,
    OverflowError,
    SyntaxError,
    struct.error,
    tokenize.TokenError,
    zlib.error,
    zipfile.BadZipFile,
)


# --- checks shared by reading and writing ------------------------------------------------------
def _describe(dims) -> str:
    return "(" + ", ".join(str(d) for d in dims) + ("," if len(dims) == 1 else "") + ")"


def _layout_problem(arrays: dict, body_names) -> str | None:
    """What is wrong with ``arrays`` (and ``body_names``) as a trajectory, or None: ``t``
    present, every array of a real numeric dtype, every per-step field of :data:`FIELDS` with
    ``len(t)`` steps along axis 0 and its documented shape, one body count and one contact count
    across the fields, and ``body_names`` empty (not recorded) or one per body."""
    if "t" not in arrays:
        return "no 't' array (the time of each step)"
    for name, value in arrays.items():
        dtype = np.asarray(value).dtype
        if dtype.kind not in "biuf":
            return f"array {name!r} has dtype {dtype}, not a real numeric type"
    steps = np.shape(arrays["t"])[0] if np.ndim(arrays["t"]) == 1 else None
    if steps is None:
        return f"'t' has shape {np.shape(arrays['t'])}; expected (steps,)"
    counts = {}  # "bodies"/"contacts" -> (count, the field it was first seen in)
    for name, (trailing, _) in (*_STEP_LAYOUT.items(), *_STATIC_LAYOUT.items()):
        if name not in arrays:
            continue
        shape = np.shape(arrays[name])
        expected = (("steps",) if name in _STEP_LAYOUT else ()) + trailing
        if len(shape) != len(expected):
            return f"{name!r} has shape {shape}; expected {_describe(expected)}"
        if name in _STEP_LAYOUT and shape[0] != steps:
            return f"{name!r} has {shape[0]} steps along axis 0 but 't' has {steps}"
        for axis, (size, want) in enumerate(zip(shape, expected)):
            if isinstance(want, int) and size != want:
                return f"{name!r} has shape {shape}; expected {_describe(expected)}"
            if want in ("bodies", "contacts"):
                count, first = counts.setdefault(want, (size, name))
                if size != count:
                    return f"{name!r} has {size} {want} (axis {axis}) but {first!r} has {count}"
    if body_names and "bodies" in counts and len(body_names) != counts["bodies"][0]:
        count, first = counts["bodies"]
        return f"{len(body_names)} body_names {list(body_names)} for {count} bodies in {first!r}"
    return detected_problem(arrays, steps)


def _parameters_json(parameters) -> str:
    if not isinstance(parameters, dict):
        raise TypeError(f"parameters must be a dict, got {type(parameters).__name__}")
    try:
        return json.dumps(parameters, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"parameters must be JSON-serializable: {exc}") from exc


def _status_problem(status) -> str | None:
    if not isinstance(status, str):
        return f"status must be a string, got {type(status).__name__}"
    if status in _STATUSES or (status.startswith("failed: ") and status[len("failed: ") :].strip()):
        return None
    return f"status must be 'running', 'completed', 'interrupted' or 'failed: <reason>', got {status!r}"


def check_output_path(path, suffixes=_SUFFIXES) -> Path:
    """``path`` as an absolute :class:`~pathlib.Path` if a trajectory can be written there:
    its name ends in one of ``suffixes`` (case-insensitive; default ``.npz``, ``.h5``,
    ``.hdf5``), it is not a directory, and its directory exists. Otherwise raises
    :class:`TrajectoryFileError` -- before any work, so that a run never ends unsaveable."""
    path = Path(os.path.abspath(os.fspath(path)))
    suffix = path.suffix.lower()
    if suffix not in suffixes:
        got = f"{path.suffix!r}" if path.suffix else "no suffix"
        raise TrajectoryFileError(
            path, f"unknown trajectory format ({got}): the name must end in " + ", ".join(suffixes)
        )
    if path.is_dir():
        raise TrajectoryFileError(path, "is a directory")
    if not path.parent.is_dir():
        raise TrajectoryFileError(path, f"the directory {path.parent} does not exist")
    return path


def _temporary_name(path: Path) -> Path:
    return path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")


def _remove(path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _sync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable (best effort: not every system allows it)."""
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


# --- reading -----------------------------------------------------------------------------------
def _sniff(path) -> str:
    """ "npz" or "hdf5" from the file's first bytes; :class:`TrajectoryFileError` for anything
    else (missing, a directory, empty, truncated inside the magic bytes, another format)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise TrajectoryFileError(path, "no such file") from None
    except OSError as exc:
        raise TrajectoryFileError(path, f"cannot be accessed ({exc.strerror or exc})") from None
    if stat.S_ISDIR(info.st_mode):
        raise TrajectoryFileError(path, "is a directory, not a trajectory file")
    if not stat.S_ISREG(info.st_mode):
        raise TrajectoryFileError(path, "is not a regular file")
    try:
        with open(path, "rb") as file:
            head = file.read(8)
            if head.startswith(_ZIP_MAGIC):
                return "npz"
            offset = 0  # HDF5's signature: at 0 or, after a user block, at 512, 1024, 2048, ...
            while offset + 8 <= info.st_size:
                file.seek(offset)
                if file.read(8) == _HDF5_MAGIC:
                    return "hdf5"
                offset = 512 if offset == 0 else 2 * offset
    except OSError as exc:
        raise TrajectoryFileError(path, f"cannot be read ({exc.strerror or exc})") from None
    if not head:
        raise TrajectoryFileError(path, "is empty (0 bytes)")
    if len(head) < 8 and any(magic.startswith(head) for magic in (*_ZIP_MAGIC, _HDF5_MAGIC)):
        raise TrajectoryFileError(path, f"is truncated ({len(head)} bytes)")
    if head.startswith(_NPY_MAGIC):
        raise TrajectoryFileError(path, "is a single .npy array, not a trajectory (.npz or HDF5)")
    raise TrajectoryFileError(
        path, f"is not a trajectory file: neither an .npz (zip) archive nor HDF5 (it starts with {head!r})"
    )


def _text(value, what: str) -> str:
    """A text scalar (0-d str/bytes array, str, bytes) as str; ValueError naming ``what`` otherwise."""
    if isinstance(value, np.ndarray):
        if value.ndim != 0 or value.dtype.kind not in "US":
            raise _Problem(f"{what} is not text (dtype {value.dtype}, shape {value.shape})")
        value = value[()]
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, str):
        return str(value)
    raise _Problem(f"{what} is not text ({type(value).__name__})")


def _names(value, what: str) -> list:
    """Body names from a 1-d array of strings (or an empty array of any dtype: none recorded)."""
    value = np.asarray(value)
    if value.ndim != 1:
        raise _Problem(f"{what} has shape {value.shape}; expected (bodies,)")
    if value.size == 0:
        return []
    if value.dtype.kind not in "USO":
        raise _Problem(f"{what} is not a list of names (dtype {value.dtype})")
    names = [item.decode("utf-8") if isinstance(item, bytes) else item for item in value.tolist()]
    if not all(isinstance(name, str) for name in names):
        raise _Problem(f"{what} is not a list of names")
    return names


def _parameters(text: str) -> dict:
    try:
        parameters = json.loads(text)
    except ValueError as exc:  # json.JSONDecodeError
        raise _Problem(f"'parameters' is not valid JSON ({exc})") from None
    except RecursionError:
        raise _Problem("'parameters' is not valid JSON (nested too deeply)") from None
    if not isinstance(parameters, dict):
        raise _Problem(f"'parameters' is not a JSON object (it is a JSON {type(parameters).__name__})")
    return parameters


def _open_h5(path):
    import h5py

    try:
        return h5py.File(path, "r")
    except BlockingIOError:  # locked by a writer in another process (a run in progress): read its last flush
        return h5py.File(path, "r", locking=False)


def _h5_open_problem(exc) -> str:
    if "truncated" in str(exc).lower():
        return f"the HDF5 file is truncated ({exc})"
    return f"cannot be opened as HDF5: truncated or corrupted? ({type(exc).__name__}: {exc})"


def _open_h5_or_report(path):
    """The HDF5 file open for reading, or :class:`TrajectoryFileError` saying why not."""
    try:
        return _open_h5(path)
    except _READ_ERRORS as exc:
        raise TrajectoryFileError(path, _h5_open_problem(exc)) from exc


# --- the HDF5 writer ---------------------------------------------------------------------------
def _count(name, value, minimum) -> int:
    """An integer (Python, NumPy, or a 0-d integer array) >= ``minimum``; not a bool."""
    try:
        count = None if np.asarray(value).dtype.kind == "b" else operator.index(value)
    except TypeError:
        count = None
    if count is None or count < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return count


def _numeric(name, value) -> np.ndarray:
    array = np.asarray(value)
    if array.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be a real numeric array, got dtype {array.dtype}")
    return array


def _fits(array: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``array`` as ``dtype`` if that keeps every value, else ValueError."""
    if array.dtype == dtype:
        return array
    if not np.can_cast(array.dtype, dtype, "same_kind"):
        raise ValueError(f"dtype {array.dtype} cannot be stored as {dtype}")
    cast = array.astype(dtype)
    if not np.array_equal(cast, array, equal_nan=dtype.kind == "f"):
        raise ValueError(f"values do not fit in {dtype}")
    return cast


def read_resume_state(path) -> dict:
    """The state written by :meth:`lcpdyn.trajectory_writer.TrajectoryWriter.write_resume_state`: a dict with ``q``,
    ``v`` (arrays), ``t`` (float, s), ``steps_done`` (int), ``warm_start`` and ``extra`` (dicts of
    arrays, None where None was written), ``trajectory_steps`` (int: the file's steps when it was
    written) and ``status`` (the file's status). Raises :class:`TrajectoryFileError` when the file
    is not an HDF5 trajectory, holds no resume state, or is damaged."""
    import h5py

    if _sniff(path) != "hdf5":
        raise TrajectoryFileError(path, "is an .npz; only HDF5 trajectories hold a resume state")
    file = _open_h5_or_report(path)
    try:
        with file:
            foreign = foreign_format_problem(file.attrs)
            if foreign is not None:
                raise TrajectoryFileError(path, foreign)
            group = file.get("resume")
            if not isinstance(group, h5py.Group):
                raise TrajectoryFileError(path, "holds no resume state (no 'resume' group)")
            missing = [name for name in ("q", "v", "t", "steps_done", "warm_start", "extra") if name not in group]
            if missing:
                raise TrajectoryFileError(path, f"the resume state lacks {missing}")
            state = {
                "q": group["q"][()],
                "v": group["v"][()],
                "t": float(group["t"][()]),
                "steps_done": int(group["steps_done"][()]),
                "trajectory_steps": int(group.attrs["trajectory_steps"]),
                "status": _text(file.attrs["status"], "'status'") if "status" in file.attrs else None,
            }
            for name in ("warm_start", "extra"):
                sub = group[name]
                entries = {key: np.asarray(item[()]) for key, item in sub.items()}
                for key in _names(sub.attrs.get("none", np.array([], dtype=str)), f"{name} 'none'"):
                    entries[key] = None
                state[name] = entries
    except TrajectoryFileError:
        raise
    except _Problem as exc:
        raise TrajectoryFileError(path, str(exc)) from None
    except _READ_ERRORS as exc:
        raise TrajectoryFileError(path, f"the resume state is corrupted ({type(exc).__name__}: {exc})") from exc
    return state


def refuse_existing(path, overwrite: bool, how: str = "overwrite=True") -> None:
    """Raise :class:`FileExistsError` if ``path`` exists and ``overwrite`` is False: a new run
    never replaces a result without being told to (``how`` names the way to tell it). The message
    says what the file holds -- for a stopped HDF5 run, the step it can be continued from."""
    if overwrite or not os.path.lexists(os.fspath(path)):
        return
    held = "a file"
    if Path(path).suffix.lower() in _H5_SUFFIXES:
        try:
            resume = read_resume_state(path)
        except TrajectoryFileError:
            held = "a result file"
        else:
            held = f"a run stopped at step {resume['steps_done']} (status {resume['status']!r})"
            if resume["status"] != "completed":
                held += ", which lcpdyn.rebuild.resume(path, t_end) or `lcpdyn run --resume` continues"
    elif Path(path).suffix.lower() == ".npz":
        held = "a result file"
    raise FileExistsError(f"{path}: {held} is already there; pass {how} to replace it")
