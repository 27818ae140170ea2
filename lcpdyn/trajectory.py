"""Simulation output: per-step arrays, run parameters, and the .npz and HDF5 file formats.

Two formats, chosen by the file name (``.npz``; ``.h5`` or ``.hdf5``) when writing and by the
file's content (its magic bytes, not its name) when reading:

* ``.npz`` -- a NumPy zip archive written in one go by :meth:`Trajectory.save`: every array of
  :data:`FIELDS`, ``parameters`` (JSON text), ``body_names`` (strings) and ``lcpdyn_version``.
* HDF5 -- written step block by step block by :class:`TrajectoryWriter` (for long runs: a
  killed run keeps every block appended before the kill), or in one go by :meth:`Trajectory.save`.
  Root attributes ``parameters`` (JSON text), ``lcpdyn_version``, ``body_names``, ``status``
  (``running``, ``completed``, ``interrupted`` or ``failed: <reason>``), ``steps`` (completed
  steps: a reader reads that many rows of every per-step dataset, whatever lies beyond),
  ``format`` (``"lcpdyn trajectory"``) and ``format_version`` (1). One chunked, resizable
  dataset per per-step field of :data:`FIELDS` (axis 0 the step; Fletcher-32 checksummed, so a
  damaged chunk is reported, not read), the static ``initial_position`` and ``initial_energy``,
  and an optional group ``resume`` (:meth:`TrajectoryWriter.write_resume_state`).

Writes are atomic: nothing is written under the final name until it is complete (``.npz``, and
HDF5 through :meth:`Trajectory.save`) or holds at least one step (a streaming
:class:`TrajectoryWriter`, see there). :func:`load` checks what it reads and raises
:class:`TrajectoryFileError` naming the file and the problem. Nothing is ever pickled.
"""

from __future__ import annotations

import enum
import json
import operator
import os
import secrets
import stat
import struct
import tokenize
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import __version__
from .file_lock import OutputLock

__all__ = [
    "Trajectory",
    "load",
    "Health",
    "TrajectoryFileError",
    "TrajectoryWriter",
    "read_resume_state",
    "refuse_existing",
    "check_output_path",
]


class Health(enum.IntFlag):
    """Bit flags of the per-step ``health`` array (int8; 0 = nothing to report). See
    docs/theory/step.md, "Run health", for how each is decided.

    * ``ENERGY_GAIN`` (1): the mechanical energy, net of the work put in by non-conservative
      applied forces and driven constraints, stands above its lowest value so far by more than
      ``energy_tolerance`` times the run's energy scale (only when ``energy_check`` is not
      ``"off"``).
    * ``FALLBACK`` (2): the first solver failed and the fallback method's answer was used
      (as ``solver_fallback``).
    """

    OK = 0
    ENERGY_GAIN = 1
    FALLBACK = 2


class TrajectoryFileError(ValueError):
    """A trajectory file cannot be read (missing, not a trajectory, truncated, corrupted, or
    inconsistent), or a path cannot take one. ``path`` is the file, ``problem`` what is wrong;
    the message is ``"<path>: <problem>"``."""

    def __init__(self, path, problem: str):
        self.path, self.problem = os.fspath(path), problem
        super().__init__(f"{self.path}: {problem}")


class _Problem(ValueError):
    """A problem found while reading (becomes a :class:`TrajectoryFileError` naming the file)."""


# Field -> description; the files hold these arrays plus ``parameters`` (JSON) and ``lcpdyn_version``.
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

_METADATA = ("parameters", "body_names", "lcpdyn_version")  # the .npz members that are not arrays of FIELDS
_SUFFIXES = (".npz", ".h5", ".hdf5")
_H5_SUFFIXES = (".h5", ".hdf5")
_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a local file header; an empty archive's end record
_HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
_NPY_MAGIC = b"\x93NUMPY"
_FORMAT, _FORMAT_VERSION = "lcpdyn trajectory", 1
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


@dataclass
class Trajectory:
    """Arrays of :data:`FIELDS` plus ``parameters`` (dict) and ``body_names``."""

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
        }
        return Trajectory(out, dict(self.parameters), list(self.body_names))

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
        extra = [name for name in self.arrays if name not in FIELDS]
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
            writer.append({name: arrays[name] for name in _STEP_LAYOUT})
            writer.close(status)
        except BaseException:
            writer._discard()
            raise


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
    return None


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


def _read_h5(path):
    """(arrays, parameters, body_names) of an HDF5 trajectory, the per-step datasets read up to
    the ``steps`` attribute; ``parameters["status"]`` from the ``status`` attribute."""
    import h5py

    file = _open_h5_or_report(path)
    try:
        with file:
            attrs = file.attrs
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
                if name in _STEP_LAYOUT:
                    if item.ndim == 0 or item.shape[0] < steps:
                        raise _Problem(
                            f"{name!r} holds {item.shape[0] if item.ndim else 0} steps, fewer than "
                            f"the file's 'steps' attribute ({steps})"
                        )
                    arrays[name] = item[:steps]
                else:
                    arrays[name] = np.asarray(item[()])
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
    ``parameters["energy_check"] = "not recorded"``."""
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
    return Trajectory(arrays, parameters, body_names)


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


def _chunk_cache(chunk_steps: int, n_bodies: int, n_contacts: int) -> dict:
    """h5py.File options: room in the chunk cache for one chunk of every per-step dataset (twice
    over), so that appending a block never reads a chunk back from the file."""
    sizes = {"bodies": n_bodies, "contacts": n_contacts}
    nbytes = sum(
        chunk_steps * int(np.prod([max(sizes.get(d, d), 1) for d in trailing])) * np.dtype(dtype).itemsize
        for trailing, dtype in _STEP_LAYOUT.values()
    )
    return {"rdcc_nbytes": max(1 << 20, 2 * nbytes), "rdcc_nslots": 1009}


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
        self._lock = OutputLock(self.path) if self._locked else None  # before anything is created or truncated
        self._temporary = self._temporary_path()
        sizes = {"bodies": n_bodies, "contacts": n_contacts}
        shapes = {name: tuple(sizes.get(d, d) for d in trailing) for name, (trailing, _) in _STEP_LAYOUT.items()}
        try:
            file = h5py.File(self._temporary, "w-", **_chunk_cache(chunk_steps, n_bodies, n_contacts))
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
        writer._status, writer._lock = "running", lock
        if resume["steps_done"] != steps_done:
            writer._release()
            raise TrajectoryFileError(
                target,
                f"its resume state is at step {resume['steps_done']}, not at the "
                f"simulation's step {steps_done}: not continuing it",
            )
        try:
            file = h5py.File(target, "r+", **_chunk_cache(chunk_steps, n_bodies, n_contacts))
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
        writer._file, writer._steps = file, steps
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
        return self._status

    @property
    def closed(self) -> bool:
        return self._file is None

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
        for name, value in values.items():
            if name in file:
                file[name][()] = value
            else:
                file.create_dataset(name, data=value)
        file.flush()

    def append(self, arrays: dict) -> int:
        """Append a block of k >= 0 steps: ``arrays`` maps every per-step field of :data:`FIELDS`
        (all of them, nothing else) to an array of k rows with that field's shape after the step
        axis (n_bodies, n_contacts); values must fit the field's dtype (an int64 flag array of
        0/1 is stored as int8; a fraction in an integer field is refused). Checked before
        anything is written. The datasets grow, then the ``steps`` attribute, then the file is
        flushed (and, the first time, renamed onto ``path``). Returns the steps in the file."""
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
        if k == 0:
            return self._steps
        n = self._steps
        for name, value in block.items():
            dataset = file[name]
            dataset.resize(n + k, axis=0)
            dataset[n:] = value
        file.attrs.modify("steps", np.int64(n + k))  # last: a reader bounds every dataset by it
        file.flush()
        self._steps = n + k
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
        import h5py

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


class _AtomicWriter(TrajectoryWriter):
    """For :meth:`Trajectory.save`: a unique temporary name, moved onto ``path`` by
    :meth:`close` only; :meth:`_discard` drops it."""

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
        if self._file is not None:
            try:
                self._file.close()
            finally:
                self._file = None
        if not self._published:
            _remove(self._temporary)


def read_resume_state(path) -> dict:
    """The state written by :meth:`TrajectoryWriter.write_resume_state`: a dict with ``q``,
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
