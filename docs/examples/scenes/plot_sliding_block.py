"""
Sliding block: μ g deceleration on four corners
===============================================

A cube launched at v0 on its four bottom corners (four point contacts, a redundant set)
decelerates at μ g and stops after t* = v0/(μ g), having slid v0²/(2 μ g). The four normal
forces are not unique (any split carrying the weight is a solution); the friction model fixes
the split. Scene ``sliding-block``; the same run from the command line:
``lcpdyn run sliding-block --friction coulomb --plot sliding-block.png``.
"""

import numpy as np

from lcpdyn.plotting import plot_run
from scenes import build_scene
from scenes.blocks import SlidingBlock

scene = build_scene("sliding-block")
t_stop, distance = SlidingBlock.stopping(scene.parameters)
for friction in ("regularized", "coulomb"):
    run = scene.simulation(friction).run(scene.t_end)
    slid = run.position[-1, 0, 0] - run.initial_position[0, 0]
    stopped = run.t[np.argmax(np.abs(run.velocity[:, 0, 0]) < 1e-6)]
    print(
        f"{friction:>11}: slid {slid:.5f} m (closed form {distance:.5f}), stopped at t = {stopped:.3f} s "
        f"(closed form {t_stop:.3f}); largest residual {run.solver_residual.max():.1e}"
    )
    assert abs(slid - distance) < 2 * scene.parameters["speed"] * scene.dt  # within one step's travel
plot_run(run, "sliding-block.png", title="sliding block under exact Coulomb")
