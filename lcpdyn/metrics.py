"""Accuracy metrics of a friction model against a Coulomb reference run (Peiret 2016, Figs. 4-5).

All functions take :class:`~lcpdyn.trajectory.Trajectory` objects (or their arrays) of one
contact ``contact`` (default 0) and body ``body`` (default 0). A reference run with a different
step is interpolated linearly in time onto the model's time grid (``t`` of the model run must lie
within the reference's). Definitions:

* normalized friction force (Fig. 4): f = |lam_T| / (mu lam_N), dimensionless; NaN where
  lam_N = 0 (no contact).
* force RMS deviation (%, Peiret's 1.67 / 3.76 / 9.70 %): 100 sqrt(mean_k (f_k - f_ref,k)^2)
  over the steps where both are defined; ``phase="sliding"`` restricts it to the steps where the
  *reference* slides, |v_T,ref| > v_th.
* misalignment angle (Fig. 5c): the angle (deg) between lam_T and -v_T of the *same* run, at the
  steps where that run slides (|v_T| > v_th) and |lam_T| > 0; v_T is the step's slip velocity
  D v+ (the velocity the friction impulse acted against). Reported as its RMS (Peiret's 0.7 /
  14.0 / 12.6 deg).
* position error (Fig. 5a): |x(t) - x_ref(t)| / |x_ref(t) - x_ref(0)| of the body's centre,
  normalized by the reference's distance from the starting point (the paper's wording);
  ``normalize="path"`` divides by the reference's path length travelled up to t instead.
  Reported as the final value and the maximum after the first ``settle`` seconds (default
  0.1 s, where the distance is small), and the final value per path length.
* energy error (Fig. 5b): E(t) - E_ref(t) in J, and relative to the initial energy.
* slip transitions: the times a contact passes from sliding (|v_T| > v_th) to rolling/sticking
  (|v_T| <= v_th) and back.
"""
from __future__ import annotations

import numpy as np

__all__ = ["slip_transitions", "normalized_friction_force", "force_rms_deviation", "misalignment_angles", "misalignment_rms",
           "position_error", "energy_error", "on_grid", "summary"]


def normalized_friction_force(trajectory, mu: float, contact: int = 0) -> np.ndarray:
    """|lam_T| / (mu lam_N) per step (NaN where lam_N <= 0)."""
    friction = np.linalg.norm(trajectory.contact_friction_force[:, contact], axis=1)
    normal = trajectory.contact_normal_force[:, contact]
    out = np.full(normal.shape, np.nan)
    ok = normal > 0
    out[ok] = friction[ok] / (mu * normal[ok])
    return out


def on_grid(t, reference_t, values) -> np.ndarray:
    """``values`` (sampled at ``reference_t``) interpolated linearly at times ``t``; per column."""
    t, reference_t = np.asarray(t), np.asarray(reference_t)
    if t[0] < reference_t[0] - 1e-12 or t[-1] > reference_t[-1] + 1e-12:
        raise ValueError("the model run's times must lie within the reference run's times")
    values = np.asarray(values, float)
    if values.ndim == 1:
        return np.interp(t, reference_t, values)
    flat = values.reshape(values.shape[0], -1)
    out = np.stack([np.interp(t, reference_t, flat[:, j]) for j in range(flat.shape[1])], axis=1)
    return out.reshape((t.shape[0],) + values.shape[1:])


def force_rms_deviation(model, reference, mu: float, velocity_threshold: float = 0.01, contact: int = 0,
                        phase: str = "all") -> float:
    """RMS of f - f_ref in percent (see module docstring); ``phase`` is "all" or "sliding"."""
    if phase not in ("all", "sliding"):
        raise ValueError(f"phase must be 'all' or 'sliding', got {phase!r}")
    f = normalized_friction_force(model, mu, contact)
    f_ref = on_grid(model.t, reference.t, normalized_friction_force(reference, mu, contact))
    mask = np.isfinite(f) & np.isfinite(f_ref)
    if phase == "sliding":
        slip_ref = on_grid(model.t, reference.t, np.linalg.norm(reference.contact_slip_velocity[:, contact], axis=1))
        mask &= slip_ref > velocity_threshold
    if not mask.any():
        return float("nan")
    return float(100.0 * np.sqrt(np.mean((f[mask] - f_ref[mask]) ** 2)))


def misalignment_angles(trajectory, velocity_threshold: float = 0.01, contact: int = 0):
    """(times, angles in deg) between lam_T and -v_T where the run slides."""
    friction = trajectory.contact_friction_force[:, contact]
    slip = trajectory.contact_slip_velocity[:, contact]
    speed = np.linalg.norm(slip, axis=1)
    magnitude = np.linalg.norm(friction, axis=1)
    mask = (speed > velocity_threshold) & (magnitude > 0)
    cosine = -np.einsum("ij,ij->i", friction[mask], slip[mask]) / (magnitude[mask] * speed[mask])
    return trajectory.t[mask], np.degrees(np.arccos(np.clip(cosine, -1.0, 1.0)))


def misalignment_rms(trajectory, velocity_threshold: float = 0.01, contact: int = 0) -> float:
    _, angles = misalignment_angles(trajectory, velocity_threshold, contact)
    return float(np.sqrt(np.mean(angles ** 2))) if angles.size else float("nan")


def position_error(model, reference, body: int = 0, normalize: str = "start"):
    """(t, relative error) of the body's centre against the reference, see module docstring."""
    if normalize not in ("start", "path"):
        raise ValueError(f"normalize must be 'start' or 'path', got {normalize!r}")
    x = model.position[:, body]
    x_ref = on_grid(model.t, reference.t, reference.position[:, body])
    start = reference.initial_position[body]
    if normalize == "start":
        distance = np.linalg.norm(x_ref - start, axis=1)
    else:
        path = np.vstack([start, reference.position[:, body]])
        travelled = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(path, axis=0), axis=1))])
        distance = np.interp(model.t, np.concatenate([[0.0], reference.t]), travelled)
    error = np.linalg.norm(x - x_ref, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return model.t, np.where(distance > 0, error / distance, np.nan)


def energy_error(model, reference):
    """(t, E - E_ref in J, (E - E_ref) / E_ref(0))."""
    e_ref = on_grid(model.t, reference.t, reference.energy)
    difference = model.energy - e_ref
    return model.t, difference, difference / float(reference.initial_energy)


def summary(model, reference, mu: float, velocity_threshold: float = 0.01, settle: float = 0.1) -> dict:
    """Every metric of the module for one model run against a reference run."""
    t, position = position_error(model, reference)
    _, position_path = position_error(model, reference, normalize="path")
    _, energy, energy_relative = energy_error(model, reference)
    late = t >= settle
    return {
        "force_rms_deviation_percent": force_rms_deviation(model, reference, mu, velocity_threshold),
        "force_rms_deviation_sliding_percent": force_rms_deviation(model, reference, mu, velocity_threshold,
                                                                   phase="sliding"),
        "misalignment_rms_deg": misalignment_rms(model, velocity_threshold),
        "position_error_final": float(position[-1]),
        "position_error_max": float(np.nanmax(position[late])) if late.any() else float("nan"),
        "position_error_final_per_path": float(position_path[-1]),
        "energy_error_final_J": float(energy[-1]),
        "energy_error_max_abs_J": float(np.max(np.abs(energy))),
        "energy_error_max_relative": float(np.max(np.abs(energy_relative))),
    }


def slip_transitions(trajectory, velocity_threshold: float = 0.01, contact: int = 0) -> dict:
    """Times (s) of slide-to-roll (``to_roll``) and roll-to-slide (``to_slide``) transitions of
    ``contact``, judged by |v_T| against ``velocity_threshold`` at the end of each step; the time
    is that of the first step in the new state. ``first_roll`` is the first slide-to-roll time
    (NaN if the contact never stops sliding)."""
    sliding = np.linalg.norm(trajectory.contact_slip_velocity[:, contact], axis=1) > velocity_threshold
    change = np.flatnonzero(sliding[1:] != sliding[:-1]) + 1
    to_roll = [float(trajectory.t[i]) for i in change if not sliding[i]]
    to_slide = [float(trajectory.t[i]) for i in change if sliding[i]]
    return {"to_roll": to_roll, "to_slide": to_slide,
            "first_roll": to_roll[0] if to_roll else float("nan"),
            "sliding_at_start": bool(sliding[0]), "sliding_at_end": bool(sliding[-1])}
