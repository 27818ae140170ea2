"""
Rolling disk (Schwab–Meijaard 2003 Sec. 3.2, Figs. 4–6)
=======================================================

A uniform thin disk rolling on a horizontal plane (units m = r = g = 1): the root locus of its
linearized equations over the forward speed, with the critical speed 1/√3 above which upright
rolling is stable, and the 87-unit transient of Figs. 5–6 from a slow start with a small roll
rate, integrated from the state equations and by lcpdyn's LCP time stepper with ideal rolling
rows (Bauchau 2002 Eq. 19) — first order (the default update) and Moreau's midpoint scheme.

.. note:: This reproduction takes about two minutes, so this page shows stored results
   (the first line of the output says which run made them); ``lcpdyn reproduce rolling-disk``
   runs it, and ``./dev.sh gallery-store`` stores it again.
"""

from _stored import show

numbers = show("rolling-disk")
print(f"critical speed: {numbers['critical_speed']:.10f} (exact 1/√3 = {numbers['critical_speed_exact']:.10f})")
print(
    f"largest friction/normal force ratio in the transient: {numbers['max_force_ratio']:.3f} "
    f"(paper: {numbers['paper_max_force_ratio']})"
)
print(f"wobble period: {numbers['wobble_period']:.3f} time units")
for update in ("symplectic", "midpoint"):
    print(
        f"LCP stepper at h = {numbers['stepper_dt']}, {update} update: the contact point ends "
        f"{numbers[f'stepper_{update}_end_distance']:.2e} r from the state equations' "
        f"(path length {numbers[f'stepper_{update}_path_length']:.2f} r)"
    )
