"""
Dumbbells: ball joints and contacts in one problem
==================================================

16 dumbbells, each two solid spheres joined by a ball joint at their touching point, launched
across a plane: each dumbbell's two contacts and its joint's three rows are one block of the
step's problem. Scene ``dumbbells``.
"""

from lcpdyn.plotting import plot_run
from scenes import build_scene

scene = build_scene("dumbbells")
run = scene.simulation("regularized").run(scene.t_end)
print(
    f"{run.position.shape[1]} bodies, {run.contact_normal_force.shape[1]} contacts; energy "
    f"{run.initial_energy:.4f} J at the start, {run.energy[-1]:.4f} J at the end; "
    f"largest residual {run.solver_residual.max():.1e}"
)
assert run.energy[-1] < run.initial_energy and not run.health.any()
plot_run(run, "dumbbells.png", title="16 dumbbells, regularized model")
