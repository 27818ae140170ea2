"""
The Peiret 2016 wheel: every friction model against exact Coulomb (Table 1, Figs. 3–5)
======================================================================================

The tilted disk of Peiret 2016 launched sliding at 6 m/s (Table 1), run for 4 s at 1 kHz under
the regularized (bristle/hybrid) model, the polygonal cone (8 directions) and box friction, and
under exact Coulomb at 10 kHz as the reference. The table gives each model's RMS deviation of the
normalized friction force from the reference and its RMS misalignment with the slip, beside the
paper's; the figures are those of ``lcpdyn compare wheel`` (Peiret 2016 Figs. 4–5). The paper's
own Eq. (7) update is ``position_update="paper"`` (the documentation's wheel-comparison page
reads the difference).

.. note:: This comparison takes most of a minute (40,000 steps of exact Coulomb at
   10 kHz), so this page shows stored results (the first line of the output says which run
   made them); ``lcpdyn compare wheel`` runs it (``./dev.sh demo`` also with the paper's own
   update), and ``./dev.sh gallery-store wheel`` stores it again.
"""

from _stored import show

numbers = show("wheel")
print(numbers["table"])
regularized, paper = numbers["metrics"]["regularized"], numbers["paper"]["regularized"]
assert regularized["force_rms_deviation_percent"] < paper["force_rms_deviation_percent"]
