"""
A crate on the load bed of a moving half car
============================================

A crate is dropped onto the load bed of the half car of Ikoki 2022 as it pulls away: the car's
suspension and tyres, its joints and the crate's detected contacts with the bed are one problem.
With μ = 0.5 the bed carries the crate along, since the car's acceleration (up to ~0.9 m/s²)
stays below μ g; with ``mu=0.05`` it slides back along the bed at μ g, falls off the back and
slides to rest on the road. Scene ``crate-on-half-car`` (the ``collision`` extra).
"""

import numpy as np

from lcpdyn.plotting import plot_run
from scenes import build_scene

scene = build_scene("crate-on-half-car")
run = scene.simulation("regularized").run(1.2)
names = run.body_names
crate, chassis = names.index("crate"), names.index("chassis")
behind = run.position[:, crate, 0] - run.position[:, chassis, 0]
print(f"bodies: {', '.join(names)}; up to {run.detected_count.max()} detected contacts a step")
print(
    f"the crate rides {behind[-1]:.4f} m from the chassis' centre at the end (it landed at {behind[600]:.4f} m); "
    f"the car's speed {run.velocity[-1, chassis, 0]:.3f} m/s"
)
assert np.ptp(behind[600:]) < 5e-3 and run.velocity[-1, chassis, 0] > 0.5
plot_run(run, "crate-on-half-car.png", title="crate on the half car's load bed, regularized model")
