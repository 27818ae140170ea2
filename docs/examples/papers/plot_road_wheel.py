"""
Road wheel (Bauchau 2002 Sec. 8.1, Figs. 3–9)
=============================================

A wheel at the tip of a beam swings down onto a road moving at V = 8 m/s: three contact events,
then continuous rolling at V/ρ = 32 rad/s. Run with exact Coulomb, the regularized model and the
continuous law on the rigid bar, and the regularized model on the paper's flexible beam
(Table 1 set 1, 8 elements); the paper's numbers are marked on the figure and printed below.

.. note:: This reproduction takes about four minutes, so this page shows stored results
   (the first line of the output says which run made them); ``lcpdyn reproduce road-wheel``
   runs it, and ``./dev.sh gallery-store`` stores it again.
"""

from _stored import show

numbers = show("road-wheel")
paper = numbers["paper"]
print(
    f"paper: contact events at {paper['contact_times_s']} s, minimum relative distance "
    f"{paper['minimum_relative_distance_m']} m; continuous rolling at "
    f"{numbers['rolling_spin_expected_rad_per_s']} rad/s"
)
for name in ("coulomb", "regularized", "continuous", "regularized, flexible beam"):
    run = numbers[name]
    events = ", ".join(f"{t:.4f}" for t in run["contact_events_s"])
    print(
        f"{name}: contact events at {events} s;\n    minimum gap {run['minimum_gap_first_contact_m']:.4f} m, "
        f"final spin {run['final_spin_rad_per_s']:.2f} rad/s, {run['cpu_s']:.0f} s CPU"
    )
