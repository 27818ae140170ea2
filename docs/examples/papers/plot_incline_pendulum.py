"""
Pendulum on a wheel on an incline (Bauchau 2002 Sec. 8.2, Figs. 10–15)
======================================================================

A pendulum hinged on a wheel that rolls and slides down a 25° incline (μs = 0.8, μk = 0.4):
under Coulomb friction with rolling constraints the wheel alternates rolling events and sliding
phases of growing length; under the continuous law it creeps at first and then slides. Run
under exact Coulomb, the regularized model and the continuous law, on the rigid bar and on
the paper's flexible beam.

.. note:: This reproduction takes about seven minutes, so this page shows stored results
   (the first line of the output says which run made them); ``lcpdyn reproduce
   incline-pendulum`` runs it, and ``./dev.sh gallery-store`` stores it again.
"""

from _stored import show

numbers = show("incline-pendulum")
print(f"paper: {numbers['paper']}")
for name, events in numbers["rolling_events"].items():
    spans = ", ".join(f"{a:.3f}–{b:.3f}" for a, b in events)
    print(f"{name:>27}: {len(events)} rolling events (s): {spans}")
