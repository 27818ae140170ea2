"""
Klingel motion of a railway wheelset (Schwab & Meijaard 2002 §5.1, Eq. 9, Figs. 7–8)
====================================================================================

An S1002 wheelset on UIC60 rails canted 1/40 and 1/20, rolling at 10 m/s from a small lateral
shift: the wavelength of its kinematic (Klingel) oscillation from lcpdyn's time stepper with
wheel–rail contacts on the measured profiles, for several amplitudes, against Klingel's formula
(Eq. 9) evaluated on the placed profiles and against the paper's values.

.. note:: This reproduction takes about a minute, so this page shows stored
   results (the first line of the output says which run made them); ``lcpdyn reproduce
   wheelset-klingel`` runs it, and ``./dev.sh gallery-store`` stores it again.
"""

from _stored import show

numbers = show("wheelset-klingel")
for label, case in numbers.items():
    print(
        f"slant {label}: Eq. (9) on the profiles λ = {case['wavelength_eq9']:.3f} m "
        f"(paper {case['paper_wavelength']} m)"
    )
    for run in case["runs"]:
        print(
            f"    y0 = {run['amplitude'] * 1e3:g} mm: λ = {run['wavelength']:.3f} m "
            f"({100 * run['relative_to_eq9']:+.2f} % from Eq. 9)"
        )
