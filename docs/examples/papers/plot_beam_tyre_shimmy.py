"""
Shimmy of a wheel with Moreland's tyre on a flexible beam (Bauchau 2002 Sec. 8.3, Figs. 16–20)
===============================================================================================

A wheel with Moreland's tyre model at the tip of a flexible beam (8 elements), kicked sideways:
at 15 m/s the shimmy decays and at 30 m/s it grows, as in the paper. lcpdyn's linearization of
the same equations puts the stability boundary between the two speeds and predicts each run's
rate of decay or growth, which the time stepper's runs measure.

.. note:: This reproduction takes about four minutes, so this page shows stored results
   (the first line of the output says which run made them); ``lcpdyn reproduce
   beam-tyre-shimmy`` runs it, and ``./dev.sh gallery-store`` stores it again.
"""

from _stored import show

numbers = show("beam-tyre-shimmy")
paper = numbers["paper"]
print(f"paper: stable at {paper['stable_speed_m_per_s']} m/s, unstable at {paper['unstable_speed_m_per_s']} m/s")
print(
    f"linearization: critical speed {numbers['critical_speed_m_per_s']:.2f} m/s "
    f"({numbers['critical_speed_4_elements_m_per_s']:.2f} m/s with 4 elements)"
)
for case, run in numbers["cases"].items():
    print(
        f"{case:>13}: {run['speed_m_per_s']:.2f} m/s {run['verdict']}: rate "
        f"{run['measured_rate_per_s']['tip_lateral_m']:+.3f} 1/s measured, "
        f"{run['linear_rate_under_the_step_per_s']:+.3f} 1/s linearized under the step"
    )
