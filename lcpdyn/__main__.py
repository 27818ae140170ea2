"""``python -m lcpdyn``: the main job -- the Peiret 2016 wheel under every friction model
against exact Coulomb, with the engine's default v+ update (symplectic Euler, midpoint
gyroscopic step) and with the paper's own Eq. (7) update (table printed; JSON and Fig. 4/5-style
PNGs written to ``results/``). Equivalent to ``lcpdyn compare wheel``; any ``lcpdyn`` command
line may be given instead."""
from __future__ import annotations

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["compare", "wheel"]))
