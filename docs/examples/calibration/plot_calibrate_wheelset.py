"""
Railway wheelset: Kalker's creep coefficients f11, f22 from a hunting run
=========================================================================

The wheelset of Schwab & Meijaard 2002 §5.2 (scene ``wheelset-hunting``: S1002 wheels on UIC60
rails, slant 1/40, no yaw spring) runs at 26 m/s, below its critical speed of 30.4 m/s. It
starts 0.1 mm off centre, and its lateral motion y(t) decays while it oscillates. The creep rows
carry Kalker's linear coefficients with Vermeulen–Johnson saturation (``friction="creep"``). The
reference is the ordinary step's run at the paper's f11 = f22 = 12 MN, over 0.5 s. The fit
starts from f11 = 9 MN and f22 = 15 MN, in log10.

The creep law is on the compiled path a differentiable run traces (its coefficients are traced
numbers: the wheel's gradient in them is checked against central differences), but this scene
holds the wheelset's forward speed by a non-holonomic row, and the compiled step takes no
bilateral rows. This fit therefore goes through a function ``simulate(values)`` that runs the
scene with the ordinary step, and takes its Jacobian from central differences, two runs per
coefficient (the route ``lcpdyn.calibrate`` gives every scene). The scene is built once, so its kinematics compile
once, and each run makes a new ``Creep`` model.
"""

import time

import matplotlib.pyplot as plt
import numpy as np

from lcpdyn.calibrate import Parameter, calibrate
from lcpdyn.friction import Creep
from lcpdyn.run.errors import SimulationError
from lcpdyn.stepper import Simulation
from scenes import wheelset_hunting

scene = wheelset_hunting.build(speed=26.0, amplitude=1e-4, t_end=0.5)
f23 = scene.parameters["f23"]


def simulate(values):
    """The lateral displacement y (m) of the wheelset's centre over the run, at f11 and f22."""
    creep = Creep(f11=values["f11"], f22=values["f22"], f23=f23)
    trajectory = Simulation(scene.model, creep, scene.dt).run(scene.t_end)
    if not np.all(trajectory.solver_status == 0):
        raise SimulationError("a step was not solved", len(trajectory.t) - 1, float(trajectory.t[-1]))
    return trajectory.position[:, 0, 1]


cpu = time.process_time()
reference = simulate({"f11": 12e6, "f22": 12e6})  # the first run compiles the kinematics
print(f"reference run (with the kinematics' compilation): {time.process_time() - cpu:.1f} s CPU")


def residual(y, data):  # micrometres
    return (y - data) / 1e-6


start = [Parameter("f11", 9e6, 1e6, 1e8, log=True), Parameter("f22", 15e6, 1e6, 1e8, log=True)]
fit = calibrate(simulate, start, residual, reference, tolerance=1e-8)
errors = {name: abs(fit.values[name] - 12e6) / 12e6 for name in ("f11", "f22")}
print(
    f"Gauss-Newton: f11 = {fit.values['f11'] / 1e6:.9f} MN ({errors['f11']:.1e}), "
    f"f22 = {fit.values['f22'] / 1e6:.9f} MN ({errors['f22']:.1e}); loss {fit.initial_loss:.4g} -> {fit.loss:.3g}; "
    f"{fit.iterations} iterations, {fit.runs} runs ({fit.jacobians} Jacobians of 4 runs each), {fit.cpu_s:.0f} s CPU"
)
assert max(errors.values()) < 1e-6

t = scene.dt * np.arange(len(reference))
figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
history = np.array(fit.history)
left.plot(history[:, 0] / 1e6, history[:, 1] / 1e6, "o-", ms=4)
left.plot([12], [12], "k*", ms=12, label="the reference's f11 = f22 = 12 MN")
left.set(xlabel="f11 (MN)", ylabel="f22 (MN)", title="Gauss–Newton's iterates")
left.legend()
right.plot(t, 1e3 * reference, "k", lw=2, label="reference, f11 = f22 = 12 MN")
right.plot(t, 1e3 * simulate({"f11": 9e6, "f22": 15e6}), "C1--", label="start, f11 = 9 MN, f22 = 15 MN")
right.set(xlabel="t (s)", ylabel="lateral displacement y (mm)", title="the wheelset's hunting at 26 m/s")
right.legend()
figure.tight_layout()
