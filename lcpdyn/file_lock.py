"""One writer per output file: an exclusive advisory lock that a run takes on its output before it
creates or truncates anything, so that a second run writing the same file is refused at once with
a message naming the first, instead of both writing and one result being lost or corrupted.

The lock is ``flock`` on a small file beside the output (``.<name>.lock``) that holds the
holder's process id, host and start time. The kernel releases it when the holder's process ends,
however it ends (a killed run leaves no stale lock, at most the small file, which the next writer
takes over). The holder removes the file when it releases the lock; a writer that opened the file
just before it was removed sees that it holds a lock on a removed file and tries again.
"""

from __future__ import annotations

import fcntl
import os
import socket
import time
from pathlib import Path

__all__ = ["OutputLock", "OutputBusy"]


class OutputBusy(ValueError):
    """Another run holds the lock on this output; the message names it."""


class OutputLock:
    """The exclusive lock on writing ``path`` (taken at construction, released by
    :meth:`release`, which may be called more than once). Raises :class:`OutputBusy` naming the
    other writer when the lock is held."""

    def __init__(self, path):
        self.path = Path(path)
        self.lock_path = self.path.with_name(f".{self.path.name}.lock")
        while True:
            descriptor = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o666)
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read(descriptor)
                os.close(descriptor)
                raise OutputBusy(
                    f"{self.path}: another run is writing this file ({holder or 'holder unknown'}); "
                    "choose another output, or wait for that run to end"
                ) from None
            try:
                current = os.stat(self.lock_path).st_ino
            except FileNotFoundError:
                current = None
            if current == os.fstat(descriptor).st_ino:
                break
            os.close(descriptor)  # the holder before us removed the file we locked: lock the new one
        self._descriptor = descriptor
        os.ftruncate(descriptor, 0)
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime())
        os.write(descriptor, f"process {os.getpid()} on {socket.gethostname()}, since {stamp}".encode())

    @property
    def held(self) -> bool:
        """Whether this lock holds its file now."""
        return self._descriptor is not None

    def release(self) -> None:
        """Remove the lock file and release the lock (in that order, so that a writer waiting on
        the old file notices it is gone)."""
        if self._descriptor is None:
            return
        try:
            os.unlink(self.lock_path)
        except FileNotFoundError:
            pass
        finally:
            os.close(self._descriptor)
            self._descriptor = None

    def __enter__(self) -> OutputLock:
        return self

    def __exit__(self, *exc) -> bool:
        self.release()
        return False


def _read(descriptor) -> str:
    try:
        return os.pread(descriptor, 400, 0).decode(errors="replace").strip()
    except OSError:
        return ""
