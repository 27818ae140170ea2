"""
Incline block: static and kinetic friction μs, μk from a pull test
==================================================================

A block rests on a plane tilted by 20° (scene ``incline-block``, regularized model) and is pulled
down the slope by a force growing at c = 5 N/s, a tensile tester's ramp. It holds until the pull
and gravity's downhill part reach μs m g cos θ, at t_b = m g (μs cos θ − sin θ) / c = 0.251 s, and
then slides under μk. Data: the distance slid over 0.6 s, made by the ordinary step at μk = 0.4,
μs = 0.5, exact and with noise of 1 % of the final distance on every sample.

μk acts on the slide smoothly, and forward mode gives its derivative. μs decides only which step
the block breaks away in: the trajectory is a step function of it, and its derivative is 0
wherever it exists, so Gauss–Newton on the exact Jacobian cannot move it. ``Parameter(...,
smoothing=σ)`` takes that column from a central difference of width σ, the exact derivative of the
residual box-filtered over ±σ. The data can fix μs only to one step's worth,
c h / (m g cos θ) = 5.4e-4. Nelder–Mead fits the same loss, from the same start, with forward
runs only.
"""

import math

import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np

from lcpdyn.calibrate import Parameter, calibrate, stepped
from lcpdyn.differentiable_run import DifferentiableRun
from lcpdyn.precision import float64
from scenes.blocks import InclineBlock

truth = {"mu": 0.4, "mu_static": 0.5, "pull_rate": 5.0}
scene = InclineBlock.build(**truth)
steps, angle = 600, math.radians(scene.parameters["angle_deg"])
downhill = np.array([math.cos(angle), 0.0, -math.sin(angle)])  # the plane's t1
origin = scene.model.bodies[0].position
q, _ = stepped(scene.simulation("regularized"), steps)
distance = (q[:, :3] - origin) @ downhill
t = scene.dt * np.arange(1, steps + 1)
assert np.max(np.abs(distance - InclineBlock.distance(scene.parameters, t))) < 1e-4  # closed form, first order in h
noise = 0.01 * distance[-1]
noisy = distance + noise * np.random.default_rng(1).normal(size=steps)
resolution = truth["pull_rate"] * scene.dt / (scene.parameters["mass"] * scene.parameters["gravity"] * math.cos(angle))


def residual(outputs, data):  # the distance slid, in units of the noise
    return ((outputs.q[:, :3] - jnp.asarray(origin)) @ jnp.asarray(downhill) - data) / noise


run = DifferentiableRun(InclineBlock.build(mu=0.3, mu_static=0.6, pull_rate=5.0).simulation("regularized"), steps)
exact_only = [Parameter("mu", 0.3, 0.05, 1.0), Parameter("mu_static", 0.6, 0.05, 1.0)]
smoothed = [exact_only[0], Parameter("mu_static", 0.6, 0.05, 1.0, smoothing=0.005)]
fits = {}
for label, data, parameters, method in (
    ("exact data, Gauss-Newton, exact Jacobian", distance, exact_only, "gauss-newton"),
    ("exact data, Gauss-Newton, mu_s smoothed", distance, smoothed, "gauss-newton"),
    ("exact data, Nelder-Mead", distance, exact_only, "nelder-mead"),
    ("1 % noise, Gauss-Newton, mu_s smoothed", noisy, smoothed, "gauss-newton"),
    ("1 % noise, Nelder-Mead", noisy, exact_only, "nelder-mead"),
):
    fits[label] = fit = calibrate(run, parameters, residual, data, method=method)
    errors = [abs(fit.values[name] - truth[name]) / truth[name] for name in ("mu", "mu_static")]
    print(
        f"{label:>42}: mu_k = {fit.values['mu']:.6f} ({errors[0]:.1e}), mu_s = {fit.values['mu_static']:.6f} "
        f"({errors[1]:.1e}); loss {fit.initial_loss:.4g} -> {fit.loss:.4g}; {fit.iterations} iterations, "
        f"{fit.runs} runs, {fit.jacobians} Jacobians, {fit.cpu_s:.2f} s CPU (compile {fit.compile_s:.1f} s apart)"
    )
stuck = fits["exact data, Gauss-Newton, exact Jacobian"]
assert stuck.values["mu_static"] == 0.6  # its column is 0: mu_s does not move
exact = fits["exact data, Gauss-Newton, mu_s smoothed"]
assert abs(exact.values["mu"] - 0.4) < 1e-6 * 0.4 and abs(exact.values["mu_static"] - 0.5) < resolution
for label in ("1 % noise, Gauss-Newton, mu_s smoothed", "1 % noise, Nelder-Mead"):  # within 1 %
    assert all(abs(fits[label].values[name] - truth[name]) < 0.01 * truth[name] for name in ("mu", "mu_static"))

colors = dict(zip(fits, ("C3", "C1", "C2", "C0", "C4")))
figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
right.plot(t, 1e3 * noisy, ".", color="0.7", ms=2, label="data, 1 % noise")
right.plot(t, 1e3 * distance, "k", lw=2, label="data, exact (μk = 0.4, μs = 0.5)")
with float64():
    for label in ("1 % noise, Gauss-Newton, mu_s smoothed", "exact data, Gauss-Newton, exact Jacobian"):
        values = fits[label].values
        inputs = {**run.inputs, "mu": np.full(1, values["mu"]), "mu_static": np.full(1, values["mu_static"])}
        fitted = (np.asarray(run(**inputs).q)[:, :3] - origin) @ downhill
        right.plot(
            t,
            1e3 * fitted,
            "--",
            color=colors[label],
            label=f"{label}: μk = {values['mu']:.4f}, μs = {values['mu_static']:.4f}",
        )
right.set(xlabel="t (s)", ylabel="distance slid (mm)", title="the pull test")
right.legend(fontsize=7)
for label, fit in fits.items():
    history = np.array(fit.history)
    left.semilogy(np.arange(len(history)), history[:, -1], "o-", ms=3, color=colors[label], label=label)
left.set(xlabel="accepted iterate", ylabel="loss ½|r|²", title="the fits' progress")
left.legend(fontsize=7)
figure.tight_layout()
