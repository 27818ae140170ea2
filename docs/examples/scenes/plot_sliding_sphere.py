"""
Sliding sphere: it slides, then rolls at 5/7 of its speed
=========================================================

A solid sphere launched without spin decelerates at μ g while friction spins it up; the slip
vanishes at t* = 2 v0/(7 μ g) and it rolls on at 5/7 v0. Scene ``sliding-sphere``; the closed
form is ``scenes.blocks.SlidingSphere.analytic``.
"""

import numpy as np

from lcpdyn.plotting import plot_run
from scenes import build_scene
from scenes.blocks import SlidingSphere

scene = build_scene("sliding-sphere")
p = scene.parameters
for friction in ("regularized", "coulomb"):
    run = scene.simulation(friction).run(scene.t_end)
    v, omega, x = SlidingSphere.analytic(p, run.t)
    error = np.abs(run.velocity[:, 0, 0] - v).max()
    print(
        f"{friction:>11}: final speed {run.velocity[-1, 0, 0]:.6f} m/s (5/7 v0 = {5 / 7 * p['speed']:.6f}), "
        f"largest speed error over the run {error:.1e} m/s"
    )
    assert error < p["mu"] * p["gravity"] * scene.dt  # within one step's change of speed
t_star = 2 * p["speed"] / (7 * p["mu"] * p["gravity"])
print(f"slip ends at t* = {t_star:.4f} s")
plot_run(run, "sliding-sphere.png", title="sliding sphere under exact Coulomb")
