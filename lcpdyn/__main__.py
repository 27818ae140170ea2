"""``python -m lcpdyn``: the main job -- the Peiret 2016 wheel under every friction model
against exact Coulomb, with the engine's default v+ update (symplectic Euler, midpoint
gyroscopic step) and with the paper's own Eq. (7) update (table printed; JSON and Fig. 4/5-style
PNGs written to ``results/``): ``lcpdyn demo``, which is ``lcpdyn compare wheel``. Any ``lcpdyn``
command line may be given instead. (The ``lcpdyn`` command itself prints its help when given no
arguments.)"""

from __future__ import annotations

import signal
import sys

from .run.signals import record_signal

# a Ctrl-C while the modules below import is recorded and acted on before any work (lcpdyn.cli.main)
for _signum in (signal.SIGINT, signal.SIGTERM):
    if signal.getsignal(_signum) is not signal.SIG_IGN:  # a shell's background job keeps ignoring it
        signal.signal(_signum, record_signal)

from . import cli  # noqa: E402


def command() -> int:
    """The ``lcpdyn`` command (pyproject's script): :func:`lcpdyn.cli.main`, entered through this
    module so that a signal during the imports is recorded too."""
    return cli.main(sys.argv[1:])


def main(argv=None) -> int:
    """``lcpdyn.cli.main`` with ``demo`` when there are no arguments."""
    argv = sys.argv[1:] if argv is None else list(argv)
    return cli.main(argv or ["demo"])


if __name__ == "__main__":
    sys.exit(main())
