"""
A rolling wheel pushes a row of boxes
=====================================

A wheel held upright on its ideal rolling rows (Bauchau 2002 Eq. 19) rolls into a row of three
loose boxes; rim and boxes are found by collision detection each step and solved with the
rolling rows in one problem. Once the wheel pushes the row as one, it decelerates at
a = −n μ g m_b / (n m_b + m_eff (1 − μ μ_w)/(1 + μ_w)) with m_eff = m + I/r² (the scene's
docstring), until everything stops. Scene ``wheel-into-boxes`` (the ``collision`` extra).
"""

import numpy as np

from lcpdyn.plotting import plot_run
from scenes import build_scene, wheel_into_boxes

scene = build_scene("wheel-into-boxes")
run = scene.simulation("regularized").run(scene.t_end)
h = scene.dt
speeds = run.velocity[:, :, 0]
together = speeds[150:350]
rate = float(np.mean(np.diff(together[:, 0]) / h))
expected = wheel_into_boxes.pushing_deceleration(scene.parameters)
print(
    f"pushing the row: {rate:.5f} m/s² (closed form {expected:.5f}); "
    f"speeds at the end {np.abs(speeds[-1]).max():.1e} m/s"
)
assert abs(rate / expected - 1) < 1e-6
plot_run(run, "wheel-into-boxes.png", title="a wheel on rolling rows pushes three boxes, regularized model")
