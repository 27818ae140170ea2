"""How a step's complementarity problem is solved: dense, condensed, island by island, or as the exact
Coulomb cone's Delassus problem (chosen by :class:`lcpdyn.stepper.Simulation` from the problem's size and
structure)."""
