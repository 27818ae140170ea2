"""Room for a result file, and what a failed write raises: :class:`OutputWriteError`, with the
file, the steps it holds and whether the failure may have damaged it.

A writer asks :func:`no_room` before each write. HDF5 must never meet a full disk itself:
HDF5 1.14 answers ``ENOSPC`` inside ``H5Fflush`` with a storm of errors and then a segmentation
fault, which no Python code can catch (measured on a 2 MB tmpfs). :func:`no_room` therefore asks
the filesystem for the bytes themselves (``posix_fallocate`` of a scratch file, removed at once),
which also meets a user's disk quota, where ``statvfs`` does not."""

from __future__ import annotations

import errno
import os
import re
import secrets

ROOM_MARGIN = 1 << 20
"""Bytes a write asks for beyond its own estimate (HDF5's metadata, the status, the resume
state's group): a write that would leave less is refused before anything is written."""


class OutputWriteError(OSError):
    """A result file could not be written: its disk is full or a quota is reached (found before
    the write by the room check: ``damaged`` False, the file is as its last write left it), or a
    write failed part-way (an I/O error, or a disk filled by another process between the check and
    the write: ``damaged`` True, and the file's last block may be unreadable; :func:`lcpdyn.load`
    checks it). ``path`` is the file; ``steps`` the complete steps it held before the write."""

    def __init__(self, code, message, path, steps, damaged):
        super().__init__(code, message)
        self.path, self.steps, self.damaged = os.fspath(path), int(steps), bool(damaged)

    def __str__(self):
        return self.strerror


def size_text(nbytes: float) -> str:
    """``nbytes`` in bytes, kB, MB or GB (powers of 1000)."""
    for unit in ("bytes", "kB", "MB"):
        if nbytes < 1000:
            return f"{nbytes:.0f} {unit}" if unit == "bytes" else f"{nbytes:.1f} {unit}"
        nbytes /= 1000
    return f"{nbytes:.1f} GB"


def free_bytes(directory) -> int:
    """Bytes an unprivileged writer may still use on the filesystem of ``directory`` (statvfs;
    quotas not counted)."""
    stats = os.statvfs(directory)
    return stats.f_bavail * stats.f_frsize


STATUS_ROOM = 64 << 10
"""Bytes a status attribute asks for (instead of :data:`ROOM_MARGIN`): a run refused room for its
next block can still say so in its file."""


def no_room(directory, nbytes: int, margin: int = ROOM_MARGIN) -> tuple[int, str] | None:
    """None if ``nbytes`` + ``margin`` can be written in ``directory`` now; else the
    errno (ENOSPC or EDQUOT) and words saying what is free and what is needed. The bytes are
    asked for, not estimated: a scratch file there is allocated to that size and removed (on a
    filesystem that cannot allocate ahead, the statvfs count decides)."""
    need = int(nbytes) + margin
    free = free_bytes(directory)
    if free < need:
        return errno.ENOSPC, f"{size_text(free)} free, about {size_text(need)} needed"
    scratch = os.path.join(directory, f".lcpdyn-room-{os.getpid()}-{secrets.token_hex(3)}")
    try:
        descriptor = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return exc.errno, f"{os.strerror(exc.errno)}: not even a scratch file could be made"
        raise
    try:
        os.posix_fallocate(descriptor, 0, need)
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return exc.errno, f"{os.strerror(exc.errno)}: {size_text(need)} could not be set aside"
        if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
            raise
    finally:
        os.close(descriptor)
        os.unlink(scratch)
    return None


def write_failure(exc: BaseException, path, what: str, steps: int) -> OutputWriteError:
    """The :class:`OutputWriteError` (damaged) of ``what`` failing with ``exc`` (h5py reports the C
    library's errno in its text)."""
    code = getattr(exc, "errno", None)
    if not isinstance(code, int):
        found = re.search(r"errno = (\d+)", str(exc))
        code = int(found.group(1)) if found else errno.EIO
    return OutputWriteError(
        code,
        f"{path}: {what} failed ({os.strerror(code)}); the file held {steps} complete steps before this write, "
        "which may have damaged its last block",
        path,
        steps,
        True,
    )
