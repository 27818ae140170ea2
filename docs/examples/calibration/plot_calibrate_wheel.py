"""
Peiret wheel: μ and the bristle stiffness k_T fitted to its trajectory
======================================================================

The Peiret wheel (scene ``wheel``) slides and then, from t ≈ 2 s, rolls on its bristles. Data:
its positions and spins over 4 s, made by the ordinary step at μ = 0.3 and k_T = 1e5 N/m, exact
and with 1 % noise. Gauss–Newton (``lcpdyn.calibrate``, the run's Jacobian by forward-mode JAX)
starts from μ = 0.2, k_T = 1e7 N/m (fitted in log10); Nelder–Mead minimizes the same loss from
the same start with forward runs only.
"""

import time

import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np

from lcpdyn.calibrate import Parameter, calibrate, stepped
from lcpdyn.differentiable_run import DifferentiableRun
from lcpdyn.friction import Regularized
from lcpdyn.precision import float64
from scenes import build_scene

scene = build_scene("wheel")
steps = 4000
q, v = stepped(scene.simulation(Regularized(tangential_stiffness=1e5)), steps)
rng = np.random.default_rng(0)
noisy = (q + 0.01 * q.std(axis=0) * rng.normal(size=q.shape), v + 0.01 * v.std(axis=0) * rng.normal(size=v.shape))


def residual(outputs, data):  # positions in mm, spins in 0.01 rad/s
    q, v = data
    positions, spins = outputs.q[:, :3] - q[:, :3], outputs.v[:, 3:] - v[:, 3:]
    return jnp.concatenate([jnp.ravel(positions) / 1e-3, jnp.ravel(spins) / 1e-2])


run = DifferentiableRun(scene.simulation("regularized"), steps)
start = [Parameter("mu", 0.2, 0.0, 1.0), Parameter("tangential_stiffness", 1e7, 1e3, 1e12, log=True)]
fits = {}
for label, data, method in (
    ("exact, Gauss-Newton", (q, v), "gauss-newton"),
    ("exact, Nelder-Mead", (q, v), "nelder-mead"),
    ("1 % noise, Gauss-Newton", noisy, "gauss-newton"),
):
    cpu = time.process_time()
    fit = calibrate(run, start, residual, data, method=method, tolerance=1e-6)
    fits[label] = fit
    work = fit.runs + len(start) * fit.jacobians  # a Jacobian pass is worth about one run per parameter
    print(
        f"{label:>24}: mu = {fit.values['mu']:.10f}, k_T = {fit.values['tangential_stiffness']:.6g} N/m; "
        f"loss {fit.initial_loss:.3g} -> {fit.loss:.3g}; {fit.iterations} iterations, {fit.runs} runs, "
        f"{fit.jacobians} Jacobians (~{work} run equivalents), {fit.cpu_s:.1f} s CPU "
        f"(compile {fit.compile_s:.1f} s apart)"
    )
exact = fits["exact, Gauss-Newton"]
assert abs(exact.values["mu"] - 0.3) < 1e-6 * 0.3 and abs(exact.values["tangential_stiffness"] - 1e5) < 1e-3 * 1e5
assert abs(fits["1 % noise, Gauss-Newton"].values["mu"] - 0.3) < 1e-3 * 0.3

figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
for label, fit in fits.items():
    history = np.array(fit.history)
    left.semilogy(np.arange(len(history)), history[:, -1], "o-", ms=3, label=label)
left.set(xlabel="accepted iterate", ylabel="loss ½|r|²", title="the fits' progress")
left.legend()
t = scene.dt * np.arange(1, steps + 1)
with float64():
    with_start = run(**{**run.inputs, "mu": np.full_like(run.inputs["mu"], 0.2)})
right.plot(t, v[:, 3], "k", lw=2, label="data (μ = 0.3, k_T = 1e5)")
right.plot(t, np.asarray(with_start.v)[:, 3], "C1--", label="μ = 0.2, the run's own k_T = 1e10")
right.set(xlabel="t (s)", ylabel="spin ω_x (rad/s)", title="the wheel's spin")
right.legend()
figure.tight_layout()
