"""
Kinematic shimmy of a caster wheel (Schwab–Meijaard 2003 Sec. 3.3, Fig. 8, Eq. 35)
==================================================================================

A caster wheel on a rigid and on a flexible yoke: the wavelength of its kinematic shimmy from
the linearized equations, from the transient of the state equations, and from lcpdyn's time
stepper with the yoke as a beam of geometrically exact elements, against the paper's 7.83 m.

.. note:: This reproduction takes about a minute, so this page shows stored
   results (the first line of the output says which run made them); ``lcpdyn reproduce
   caster-shimmy`` runs it, and ``./dev.sh gallery-store`` stores it again.
"""

from _stored import show

numbers = show("caster-shimmy")
print(
    f"rigid yoke: wavelength {numbers['wavelength_rigid_linear']:.4f} m linearized, "
    f"{numbers['wavelength_rigid_transient']:.4f} m from the transient (2π = {numbers['expected_rigid']:.4f})"
)
print(
    f"flexible yoke: {numbers['wavelength_flexible_linear']:.4f} m linearized, "
    f"{numbers['wavelength_flexible_transient']:.4f} m from the transient, "
    f"{numbers['wavelength_flexible_beam_time_stepper']:.4f} m from the time stepper with "
    f"{numbers['beam_elements']} beam elements (paper's simulation: {numbers['paper_simulation']} m)"
)
