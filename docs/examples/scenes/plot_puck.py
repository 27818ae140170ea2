r"""
Puck: exact Coulomb keeps the heading, a polygonal cone turns it
================================================================

A point mass slides at 10° to the contact's tangent basis. Under Coulomb's law the friction
force opposes the slip, so the heading never turns and \|λ_T\| = μ λ_N. The polygonal cone
(Anitescu–Potra 1997; 8 directions inscribed in the circle of radius μ λ_N by default) puts the
force on its vertex at 0°, misaligned by 10°, which turns the path until the slip points at
the middle of a facet, 22.5°, where the force is aligned again but only μ cos(π/8) λ_N strong.
Scene ``puck``.
"""

import numpy as np

from lcpdyn.plotting import plot_run
from scenes import build_scene

scene = build_scene("puck", heading_deg=10.0)
for friction in ("coulomb", "polygonal"):
    run = scene.simulation(friction).run(scene.t_end)
    heading = np.degrees(np.arctan2(run.velocity[:, 0, 1], run.velocity[:, 0, 0]))
    ratio = np.linalg.norm(run.contact_friction_force[:, 0], axis=1) / run.contact_normal_force[:, 0]
    print(
        f"{friction:>9}: heading from {heading[0]:.3f}° to {heading[-1]:.3f}°, "
        f"|λ_T|/λ_N at the end {ratio[-1]:.4f} (μ = {scene.parameters['mu']}, μ cos(π/8) = "
        f"{scene.parameters['mu'] * np.cos(np.pi / 8):.4f})"
    )
    if friction == "coulomb":
        assert np.ptp(heading) < 1e-9 and np.abs(ratio - scene.parameters["mu"]).max() < 1e-9
    else:
        assert abs(heading[-1] - 22.5) < 1e-6
plot_run(run, "puck.png", title="puck at 10° under the polygonal cone")
