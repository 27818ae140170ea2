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


PENDING = {"signal": None}
"""A SIGINT or SIGTERM that arrived while the command line held the signals (:func:`deferred_signals`)
and has not been acted on yet."""


class Terminated(BaseException):
    """SIGTERM, raised where the command line can end cleanly (as KeyboardInterrupt is for SIGINT)."""


def record_signal(signum, frame) -> None:
    """A handler that only records the signal (the first one) in :data:`PENDING`."""
    if PENDING["signal"] is None:
        PENDING["signal"] = signum


def raise_pending() -> None:
    """Raise KeyboardInterrupt (SIGINT) or :class:`Terminated` (SIGTERM) for a recorded signal."""
    signum, PENDING["signal"] = PENDING["signal"], None
    if signum is not None:
        raise KeyboardInterrupt() if signum == signal.SIGINT else Terminated()


@contextlib.contextmanager
def deferred_signals():
    """SIGINT and SIGTERM recorded, never raised, while the block runs in the main thread; raised on
    leaving it (:func:`raise_pending`) unless the block raised. An exception raised by a handler can
    land inside a JAX callback (its garbage-collection hook), which swallows it ("Exception
    ignored"), so that the run went on and exited 0; or inside XLA's compilation, after which the
    process crashed at exit (segmentation fault). A run (:class:`StopOnSignal`) takes a recorded
    signal over and stops after its first step."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {
        signum: signal.signal(signum, record_signal)
        for signum in (signal.SIGINT, signal.SIGTERM)
        if signal.getsignal(signum) is not signal.SIG_IGN  # a shell's background job: it stays ignored
    }
    try:
        yield
    except BaseException:
        PENDING["signal"] = None  # the block's own exception ends it: a signal recorded meanwhile goes with it
        raise
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    raise_pending()


class StopOnSignal:
    """SIGINT and SIGTERM set ``signal`` instead of killing the process, while the ``with``
    block runs in the main thread (elsewhere Python delivers no signals: nothing to do); the
    previous handlers come back after it. A signal recorded before the block
    (:func:`deferred_signals`) is taken over: ``signal`` is set from the start."""

    def __init__(self):
        self.signal = None
        self._previous = {}

    def _handler(self, signum, frame):
        self.signal = signum

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self.signal, PENDING["signal"] = PENDING["signal"], None
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._previous[signum] = signal.signal(signum, self._handler)
        return self

    def __exit__(self, *exc):
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous = {}
        return False
