r"""
Many spheres on a plane
=======================

64 solid spheres launched with varied velocities and spins, each sliding until its contact
point stops slipping and then rolling (each its own t* = 2 \|v_slip\|/(7 μ g)). The contacts do
not couple, so the step's problem splits into 64 islands. Scene ``spheres`` (the scale
benchmark's scene; ``count`` sets N).
"""

import numpy as np

from lcpdyn.plotting import plot_run
from scenes import build_scene

scene = build_scene("spheres")
run = scene.simulation("regularized").run(scene.t_end)
slip = np.linalg.norm(run.contact_slip_velocity[-1], axis=1)
print(
    f"{run.position.shape[1]} spheres; slip at the end: largest {slip.max():.1e} m/s; "
    f"largest residual {run.solver_residual.max():.1e}"
)
assert slip.max() < 1e-6  # every sphere rolls by the end
plot_run(run, "spheres.png", title="64 spheres, regularized model")
