"""
Unitree A1: landing and standing on four feet
=============================================

Unitree's A1 quadruped from its URDF, dropped 3 cm onto the ground in a standing pose, each
joint servoed there. Its four sphere feet meet the ground by collision detection; at rest the
four contacts carry its weight. Scene ``a1-stand``.
"""

import numpy as np

from lcpdyn.plotting import plot_run
from scenes import build_scene

scene = build_scene("a1-stand")
weight = sum(body.mass for body in scene.model.bodies) * 9.81
for friction in ("regularized", "polygonal"):
    run = scene.simulation(friction).run(0.3)
    last = run.detected_at(-1)
    print(
        f"{friction:>11}: {last['normal_force'].size} contacts carry {last['normal_force'].sum():.2f} N "
        f"(weight {weight:.2f} N); base height {run.position[-1, 0, 2]:.4f} m, "
        f"speed {np.abs(run.velocity[-1]).max():.1e} m/s"
    )
    assert abs(last["normal_force"].sum() / weight - 1) < 0.02
plot_run(run, "a1-stand.png", title="A1 landing, polygonal cone")
