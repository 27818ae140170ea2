"""Scopes a run holds: SIGINT/SIGTERM turned into a flag between steps, and the BLAS thread limit."""

from __future__ import annotations

import contextlib
import signal
import threading


def blas_limit(threads):
    """threadpoolctl's scoped limit on BLAS threads, or nothing for ``None``."""
    if threads is None:
        return contextlib.nullcontext()
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=threads, user_api="blas")


class StopOnSignal:
    """SIGINT and SIGTERM set ``signal`` instead of killing the process, while the ``with``
    block runs in the main thread (elsewhere Python delivers no signals: nothing to do); the
    previous handlers come back after it."""

    def __init__(self):
        self.signal = None
        self._previous = {}

    def _handler(self, signum, frame):
        self.signal = signum

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._previous[signum] = signal.signal(signum, self._handler)
        return self

    def __exit__(self, *exc):
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous = {}
        return False
