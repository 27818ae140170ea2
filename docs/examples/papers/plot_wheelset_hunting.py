"""
Hunting of a railway wheelset (Schwab & Meijaard 2002 §5.2, Figs. 9–10)
=======================================================================

An S1002 wheelset on UIC60 rails under creep forces, in the paper's three cases (rail slant and
yaw spring): its critical speed from lcpdyn's linearization (with and without the creep
forces' saturation) and from simulation (the growth rate of a small lateral shift at speeds
around it, zero at V_cr), against the paper; and the limit cycle at 131 m/s (Figs. 9–10).

.. note:: This reproduction takes several minutes, so this page shows stored results
   (the first line of the output says which run made them); ``lcpdyn reproduce
   wheelset-hunting`` runs it, and ``./dev.sh gallery-store`` stores it again.
"""

from _stored import show

numbers = show("wheelset-hunting")
for label, case in numbers.items():
    if "paper_critical_speed" in case:
        print(
            f"{label}: V_cr {case['critical_speed_simulated']:.2f} m/s simulated, "
            f"{case['critical_speed_linear']:.2f} m/s linearized "
            f"({case['critical_speed_linear_without_saturation']:.2f} without saturation); "
            f"paper {case['paper_critical_speed']} m/s"
        )
    elif "paper" in case:
        print(f"{label}: linearized V_cr {case['critical_speed_linear']:.2f} m/s; paper: {case['paper']}")
for label in ("limit_cycle", "limit_cycle_half_step"):
    cycle = numbers[label]
    print(
        f"{label.replace('_', ' ')} at 131 m/s: amplitude {cycle['amplitude_mm']:.2f} mm, wavelength "
        f"{cycle['wavelength_m']:.2f} m, largest Y/Q {cycle['largest_Y_over_Q']:.2f}"
    )
