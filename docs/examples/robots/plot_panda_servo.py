"""
Panda arm: servos, joint limits and every friction model
========================================================

Franka Emika's Panda from its URDF, seven hinges and two finger slides on servos, with the
file's joint limits as unilateral rows (16 stops). The arm touches nothing, so the friction
model does not enter its motion; each model's strategy still poses the limits its own way
(exact Coulomb takes them as frictionless contacts of its Delassus problem), and the script
shows that every one moves the arm alike. Scene ``panda-servo``.
"""

import numpy as np

from lcpdyn.plotting import plot_run
from scenes import build_scene

scene = build_scene("panda-servo")
final = {}
for friction in ("regularized", "coulomb"):
    sim = scene.simulation(friction)
    run = sim.run(0.2)
    final[friction] = sim.q.copy()
    print(
        f"{friction:>11}: {run.t.size} steps, largest residual {run.solver_residual.max():.1e}, "
        f"flags {np.unique(run.health)}"
    )
difference = np.abs(final["coulomb"] - final["regularized"]).max()
print(f"largest difference of the two models' coordinates after 0.2 s: {difference:.1e}")
assert difference < 1e-8
plot_run(run, "panda-servo.png", title="Panda servoed to a pose, exact Coulomb")
