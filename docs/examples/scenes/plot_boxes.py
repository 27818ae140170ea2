"""
Many boxes on four corners each
===============================

16 cubes, each on four point contacts at its bottom corners (redundant contacts): every other
one is launched and slides to rest at μ g, the others stay at rest. Scene ``boxes``.
"""

import numpy as np

from lcpdyn.plotting import plot_run
from scenes import build_scene

scene = build_scene("boxes")
run = scene.simulation("regularized").run(scene.t_end)
speeds = np.linalg.norm(run.velocity[:, :, :2], axis=2)
launched = speeds[0] > 1e-3
print(
    f"{launched.sum()} of {speeds.shape[1]} boxes launched; speeds at the end: largest {speeds[-1].max():.1e} m/s; "
    f"the resting ones moved at most {speeds[:, ~launched].max():.1e} m/s"
)
assert speeds[:, ~launched].max() < 1e-6
plot_run(run, "boxes.png", title="16 boxes on four corners, regularized model")
