"""
A ball strikes a flexible beam
==============================

A ball flies onto the free-floating flexible beam of Bauchau 2002 Sec. 8.1 (ten geometrically
exact elements): beam nodes and a free body meet in a detected contact. The linear momentum
stays the ball's through the impact, and the energy the ball loses goes into the beam's motion
and vibration. Scene ``ball-on-beam`` (the ``collision`` extra).
"""

from lcpdyn.plotting import plot_run
from scenes import build_scene

scene = build_scene("ball-on-beam")
run = scene.simulation("regularized").run(scene.t_end)
names = run.body_names
ball = names.index("ball")
print(f"ball's vertical speed: {run.velocity[0, ball, 2]:.4f} m/s before, {run.velocity[-1, ball, 2]:.4f} m/s after")
print(f"energy {run.initial_energy:.5f} J at the start, {run.energy[-1]:.5f} J at the end")
plot_run(run, "ball-on-beam.png", title="a ball strikes the flexible beam, regularized model")
