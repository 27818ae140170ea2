"""
Solo-12: landing on servoed straight legs
=========================================

ODRI's Solo-12 quadruped from its URDF, dropped 5 cm onto the ground on straight legs servoed
there. Its feet are convex hulls of meshes, each meeting the ground at up to six points; at rest
those contacts carry its weight. (Under the polygonal cone this landing is a known limit of
lcpdyn: see the documentation's known limits.) Scene ``solo12-stand``.
"""

from lcpdyn.plotting import plot_run
from scenes import build_scene

scene = build_scene("solo12-stand")
weight = sum(body.mass for body in scene.model.bodies) * 9.81
run = scene.simulation("coulomb").run(0.3)
last = run.detected_at(-1)
print(
    f"{last['normal_force'].size} contacts carry {last['normal_force'].sum():.3f} N (weight {weight:.3f} N); "
    f"base height {run.position[-1, 0, 2]:.4f} m; steps that took the fallback solver: {int(run.solver_fallback.sum())}"
)
assert abs(last["normal_force"].sum() / weight - 1) < 0.02
plot_run(run, "solo12-stand.png", title="Solo-12 landing, exact Coulomb")
