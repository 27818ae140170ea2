"""
Block on an incline: it sticks iff tan θ ≤ μs
=============================================

A block released on a plane tilted by θ stays put if tan θ ≤ μs and otherwise slides at
g (sin θ − μk cos θ). Here μs = 0.6 and μk = 0.5: at 28° (tan = 0.53) the block sticks
under a model that knows μs, and at 35° it slides at the kinetic rate. Scene ``incline-block``.
"""

import math

import numpy as np

from lcpdyn.plotting import plot_run
from scenes import build_scene
from scenes.blocks import InclineBlock

for angle in (28.0, 35.0):
    scene = build_scene("incline-block", angle_deg=angle, mu=0.5, mu_static=0.6)
    expected = InclineBlock.acceleration(scene.parameters)
    run = scene.simulation("box").run(scene.t_end)
    downhill = np.array([math.cos(math.radians(angle)), 0.0, -math.sin(math.radians(angle))])
    speed = run.velocity[:, 0] @ downhill
    rate = float(np.polyfit(run.t, speed, 1)[0])
    print(f"θ = {angle:g}°: downhill acceleration {rate:.6f} m/s² (closed form {expected:.6f})")
    assert abs(rate - expected) < 1e-6 * max(1.0, expected)
plot_run(run, "incline-block.png", title=f"incline block at {angle:g}°, μs = 0.6, μk = 0.5, box friction")
