"""
A chain dropped onto a box
==========================

A chain of ball-jointed capsules falls onto a box resting on the ground: joints and contacts
found by collision detection in one step's problem. Scene ``chain-on-box`` (the ``collision``
extra). Its contacts are detected, not declared, so the figure's contact panels are empty; the
numbers below read them from the run's detected-contact records.
"""

from lcpdyn.plotting import plot_run
from scenes import build_scene

scene = build_scene("chain-on-box")
run = scene.simulation("regularized").run(scene.t_end)
print(
    f"{run.position.shape[1]} bodies; up to {run.detected_count.max()} detected contacts a step, "
    f"deepest penetration {-run.detected_gap.min() * 1e3:.3f} mm; energy {run.initial_energy:.3f} J "
    f"at the start, {run.energy[-1]:.3f} J at the end; largest residual {run.solver_residual.max():.1e}"
)
assert run.energy[-1] < run.initial_energy and not (run.health & 1).any()
plot_run(run, "chain-on-box.png", title="a chain dropped onto a box, regularized model")
