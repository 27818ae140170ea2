"""A run's progress: tqdm's bar on a terminal, a plain line every 30 s in a log."""

from __future__ import annotations

import sys
import time


class Progress:
    """tqdm's bar on a terminal; in a log, one plain line every ``LOG_INTERVAL`` seconds."""

    LOG_INTERVAL = 30.0

    def __init__(self, enabled, steps, name, t_end):
        self.enabled, self.steps, self.name, self.t_end = enabled, steps, name, t_end
        self.bar = None
        self.last = time.perf_counter()
        if enabled and sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(
                total=steps,
                desc=f"  {name}",
                unit="step",
                file=sys.stderr,
                mininterval=0.5,
                dynamic_ncols=True,
                leave=False,
            )

    def update(self, done, t):
        """Shows ``done`` steps and the time ``t`` (s), if the bar is on."""
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.update(done - self.bar.n)
        elif time.perf_counter() - self.last > self.LOG_INTERVAL:
            self.last = time.perf_counter()
            print(
                f"  {self.name}: t = {t:.6g} / {self.t_end:g} s ({100 * done / self.steps:.0f} %)",
                file=sys.stderr,
                flush=True,
            )

    def close(self):
        """Closes the bar."""
        if self.bar is not None:
            self.bar.close()
