"""The friction-model comparison of Peiret 2016 (Figs. 4-5 and the numbers quoted in its text).

:func:`compare` runs a scene under every friction model at the scene's step (1 kHz for the
wheel) and the exact Coulomb model also at ``reference_dt`` (10 kHz, as the paper did), then
computes :func:`lcpdyn.metrics.summary` of each run against the fine Coulomb run (and against
the Coulomb run at the same step). :func:`write_figures` draws Fig. 4 (normalized friction
force) and Fig. 5 (position error, energy error, misalignment); :func:`write_json` writes
the numbers with the lcpdyn version and every parameter.
"""
from __future__ import annotations

import json
import time

import numpy as np

from . import __version__
from . import metrics
from .stepper import Simulation
from .trajectory import Health

__all__ = ["PAPER", "compare", "format_table", "write_json", "write_figures"]

# Peiret 2016, section "Example": RMS deviation of |lam_T|/(mu lam_N) from Coulomb, and RMS
# misalignment between friction force and sliding velocity.
PAPER = {
    "regularized": {"force_rms_deviation_percent": 1.67, "misalignment_rms_deg": 0.7},
    "polygonal": {"force_rms_deviation_percent": 3.76, "misalignment_rms_deg": 14.0},
    "box": {"force_rms_deviation_percent": 9.70, "misalignment_rms_deg": 12.6},
}
MODELS = ("regularized", "polygonal", "box", "coulomb")


def compare(scene_module, reference_dt: float = 1e-4, models=MODELS, progress: bool = False,
            position_update: str = "symplectic", **parameters) -> dict:
    """Run ``scene_module.build(**parameters)`` under each model (every run with the same
    ``position_update``: the engine's default ``"symplectic"``, or ``"paper"`` for Peiret 2016's
    own Eq. (7) scheme, see :mod:`lcpdyn.stepper`; the gyroscopic treatment follows it).
    Energy gains are flagged per step in each run's ``health`` (an
    :class:`~lcpdyn.stepper.EnergyWarning` per flagged run). Returns a dict with
    ``runs`` (name -> Trajectory), ``metrics`` (name -> summary against the fine Coulomb run),
    ``metrics_same_step`` (against Coulomb at the scene's step), ``timing`` (s) and
    ``parameters``."""
    scene = scene_module.build(**parameters)
    mu = scene.model.contacts[0].mu
    threshold = scene.contact_model.get("velocity_threshold", 0.01)
    runs, timing = {}, {}
    plan = [(name, scene.dt) for name in models] + [("coulomb-reference", reference_dt)]
    for name, dt in plan:
        model_name = "coulomb" if name == "coulomb-reference" else name
        sim = Simulation(scene.model, scene.friction(model_name), dt,  # one model, compiled once
                         position_update=position_update)
        start = time.perf_counter()
        runs[name] = sim.run(scene.t_end, progress=progress)
        timing[name] = time.perf_counter() - start
    reference = runs["coulomb-reference"]
    out_metrics = {name: metrics.summary(runs[name], reference, mu, threshold)
                   for name in models}
    same_step = {name: metrics.summary(runs[name], runs["coulomb"], mu, threshold)
                 for name in models if name != "coulomb"} if "coulomb" in models else {}
    transitions = {name: metrics.slip_transitions(run, threshold) for name, run in runs.items()}
    return {"scene": scene.name, "parameters": scene.parameters, "reference_dt": reference_dt, "dt": scene.dt,
            "transitions": transitions,
            "position_update": position_update,
            "t_end": scene.t_end, "mu": mu, "velocity_threshold": threshold, "runs": runs,
            "metrics": out_metrics, "metrics_same_step": same_step, "timing": timing,
            "run_parameters": {name: run.parameters for name, run in runs.items()}}


def format_table(result: dict) -> str:
    m, same = result["metrics"], result["metrics_same_step"]
    lines = [f"{result['scene']}: friction models against exact Coulomb at h = {result['reference_dt']:g} s "
             f"(models at h = {result['dt']:g} s, t_end = {result['t_end']:g} s, position update "
             f"'{result['position_update']}')", ""]
    head = (f"{'model':12s} {'force RMS dev %':>16s} {'paper %':>8s} {'(sliding) %':>12s} {'misalign RMS °':>15s} "
            f"{'paper °':>8s} {'pos err end':>12s} {'pos err max':>12s} {'energy err end J':>17s} "
            f"{'vs Coulomb@h: force %':>22s} {'slide->roll s':>14s} {'wall s':>8s}")
    lines.append(head)
    lines.append("-" * len(head))
    for name, row in m.items():
        paper = PAPER.get(name, {})
        cell = lambda key: f"{paper[key]:.2f}" if key in paper else "-"
        vs = same.get(name, {}).get("force_rms_deviation_percent", float("nan"))
        lines.append(f"{name:12s} {row['force_rms_deviation_percent']:16.2f} {cell('force_rms_deviation_percent'):>8s} "
                     f"{row['force_rms_deviation_sliding_percent']:12.2f} {row['misalignment_rms_deg']:15.2f} "
                     f"{cell('misalignment_rms_deg'):>8s} {row['position_error_final']:12.2e} "
                     f"{row['position_error_max']:12.2e} {row['energy_error_final_J']:17.3e} {vs:22.2f} "
                     f"{_transition_cell(result['transitions'][name]):>14s} {result['timing'][name]:8.2f}")
    reference = result["transitions"]["coulomb-reference"]
    lines.append(f"{'(Coulomb, reference step)':>28s}: slide->roll at {_transition_cell(reference)} s")
    gains = {name: int(np.count_nonzero(run.health & int(Health.ENERGY_GAIN))) for name, run in result["runs"].items()}
    if any(gains.values()):
        lines.append("Steps flagged with an energy gain (Health.ENERGY_GAIN): "
                     + ", ".join(f"{name} {count}" for name, count in gains.items()))
    lines.append("")
    lines.append("Paper values: Peiret 2016, 'Example' (1 kHz models, 10 kHz Coulomb reference).")
    return "\n".join(lines)


def _transition_cell(transitions: dict) -> str:
    """First slide-to-roll time, with the number of later returns to sliding."""
    first = transitions["first_roll"]
    if not np.isfinite(first):
        return "never"
    again = sum(1 for t in transitions["to_slide"] if t > first)
    return f"{first:.3f}" + (f" (+{again} slip)" if again else "")


def _jsonable(value):
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (np.floating, float)):
        return None if not np.isfinite(value) else float(value)
    if isinstance(value, np.integer):
        return int(value)
    return value


def write_json(result: dict, path) -> None:
    payload = {key: value for key, value in result.items() if key != "runs"}
    payload["paper"] = PAPER
    payload["lcpdyn_version"] = __version__
    payload["solver_status_counts"] = {name: {str(s): int(c) for s, c in zip(*np.unique(run.solver_status, return_counts=True))}
                                       for name, run in result["runs"].items()}
    payload["solver_fallbacks"] = {name: int(run.solver_fallback.sum()) for name, run in result["runs"].items()}
    payload["energy_gain_steps"] = {name: int(np.count_nonzero(run.health & int(Health.ENERGY_GAIN)))
                                    for name, run in result["runs"].items()}
    with open(path, "w") as handle:
        json.dump(_jsonable(payload), handle, indent=2, sort_keys=True)


def write_figures(result: dict, prefix) -> list[str]:
    """Fig. 4 (``prefix``-fig4-normalized-force.png) and Fig. 5 (``prefix``-fig5-errors.png)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs, mu, threshold = result["runs"], result["mu"], result["velocity_threshold"]
    reference = runs["coulomb-reference"]
    styles = {"coulomb-reference": ("k", "Coulomb (reference)"), "coulomb": ("0.5", "Coulomb, model step"),
              "regularized": ("C0", "regularized"), "polygonal": ("C1", "polygonal"), "box": ("C2", "box")}
    paths = []
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for name in ("coulomb-reference", "regularized", "polygonal", "box"):
        if name in runs:
            color, label = styles[name]
            ax.plot(runs[name].t, metrics.normalized_friction_force(runs[name], mu), color=color, lw=1, label=label)
    ax.set_xlabel("t (s)")
    ax.set_ylabel(r"$|\lambda_T| / (\mu \lambda_N)$")
    ax.set_title(f"{result['scene']}: normalized friction force (cf. Peiret 2016 Fig. 4)")
    ax.set_ylim(0, 1.6)
    ax.legend()
    ax.grid(alpha=0.3)
    path = f"{prefix}-fig4-normalized-force.png"
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    paths.append(path)

    fig, axes = plt.subplots(3, 1, figsize=(8, 9), sharex=True)
    for name in ("regularized", "polygonal", "box", "coulomb"):
        if name not in runs:
            continue
        color, label = styles[name]
        t, error = metrics.position_error(runs[name], reference)
        axes[0].plot(t, error, color=color, lw=1, label=label)
        t, energy, _ = metrics.energy_error(runs[name], reference)
        axes[1].plot(t, energy, color=color, lw=1, label=label)
        t, angle = metrics.misalignment_angles(runs[name], threshold)
        axes[2].plot(t, angle, ".", color=color, ms=1.5, label=label)
    axes[0].set_ylabel("position error / distance")
    axes[0].set_yscale("log")
    axes[1].set_ylabel(r"$E - E_{Coulomb}$ (J)")
    axes[2].set_ylabel("misalignment (deg)")
    axes[2].set_xlabel("t (s)")
    axes[0].set_title(f"{result['scene']}: errors against Coulomb (cf. Peiret 2016 Fig. 5)")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    path = f"{prefix}-fig5-errors.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    paths.append(path)
    return paths
