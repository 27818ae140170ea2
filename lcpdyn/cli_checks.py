"""The checks of the ``lcpdyn`` command line (:mod:`lcpdyn.cli`) made before anything runs: the
output paths (suffix, directory, permissions), ``--set`` values, and units of scene parameters.
A failed check is a :class:`UsageError`: one line, exit code 2, nothing run."""

from __future__ import annotations

import os
import stat

import numpy as np

from .cli_parser import plot_suffixes as _plot_suffixes

RUN_SUFFIXES = (".npz", ".h5", ".hdf5")  # lcpdyn.trajectory writes these (Trajectory.save, TrajectoryWriter)
STREAMED_SUFFIXES = (".h5", ".hdf5")  # written as the run goes (Simulation.run(out=...)), resumable
JSON_SUFFIXES = (".json",)


class UsageError(ValueError):
    """A bad command line: reported in one line, exit code 2, nothing run."""


def _parse_sets(items) -> dict:
    out = {}
    for item in items or []:
        if "=" not in item:
            raise UsageError(f"--set expects KEY=VALUE, got {item!r}")
        key, value = (part.strip() for part in item.split("=", 1))
        if key in out and out[key] != value:  # the last would win silently: refused, as sweep --grid does
            raise UsageError(f"--set {key} is given twice, as {out[key]!r} and {value!r}; give it once")
        out[key] = value
    return out


def _unit(name: str) -> str:
    from .cli_catalogue import catalogue

    return catalogue()["units"].get(name, "?")


def _with_unit(value, name: str) -> str:
    unit = _unit(name)
    text = f"{value:.6g}" if isinstance(value, (float, np.floating)) else str(value)
    return text + ("" if unit == "-" else f" {unit}")


# --- output paths, checked before anything runs ---------------------------------------------------
def _check_writable_directory(directory: str, what: str) -> None:
    if not os.path.isdir(directory):
        state = "is not a directory" if os.path.exists(directory) else "does not exist"
        raise UsageError(f"{what}: the directory {directory} {state}")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise UsageError(f"{what}: the directory {directory} is not writable")


def _check_output(path, suffixes, option: str) -> str:
    """The path to write if a file can be written there: a supported suffix, not a directory nor
    any other file that is not a regular one (a FIFO, a socket, a device), its directory existing
    and writable, the file (if any) writable. A symbolic link is followed: its target (which must
    have the link's suffix) is the file written and replaced, and the link stays."""
    name = os.fspath(path)
    suffix = os.path.splitext(name)[1]
    if suffix.lower() not in suffixes:
        got = f"suffix {suffix!r}" if suffix else "no suffix"
        raise UsageError(f"{option} {name}: {got}; the name must end in {', '.join(suffixes)}")
    if os.path.islink(name):
        target = os.path.realpath(name)
        if os.path.splitext(target)[1].lower() != suffix.lower():
            raise UsageError(f"{option} {name}: a link to {target}, whose suffix is not {suffix!r}")
        name = target
    if os.path.isdir(name):
        raise UsageError(f"{option} {name}: is a directory")
    if os.path.exists(name) and not os.path.isfile(name):
        mode = os.stat(name).st_mode
        kind = "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
        raise UsageError(f"{option} {name}: is {kind}, not a regular file; results are written to regular files")
    _check_writable_directory(os.path.dirname(os.path.abspath(name)), f"{option} {name}")
    if os.path.exists(name) and not os.access(name, os.W_OK):
        raise UsageError(f"{option} {name}: the file exists and is not writable")
    return name


def _check_out_dir(path) -> str:
    """``--out-dir``: an existing writable directory, or one to create in an existing writable one."""
    name = os.fspath(path)
    if os.path.exists(name):
        if not os.path.isdir(name):
            raise UsageError(f"--out-dir {name}: exists and is not a directory")
        _check_writable_directory(name, f"--out-dir {name}")
    else:
        _check_writable_directory(os.path.dirname(os.path.abspath(name)), f"--out-dir {name}")
    return name


def _check_plot(path, option="--plot"):
    return None if path is None else _check_output(path, _plot_suffixes(), option)
