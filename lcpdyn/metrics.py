"""Accuracy metrics of a friction model against a Coulomb reference run (Peiret 2016, Figs. 4-5),
for every contact of any scene: per contact, and aggregated over contacts.

All functions take :class:`~lcpdyn.trajectory.Trajectory` objects (or objects with the same
arrays and ``parameters``). A reference run with a different step is interpolated linearly in
time onto the model's time grid (``t`` of the model run must lie within the reference's). The
friction coefficient is read from the trajectory (:func:`friction_coefficients`); ``contact``
selects an index, a sequence of indices or every contact (``None``), aggregated with the normal
impulses as weights. The definitions of every metric -- normalized friction force, force RMS
deviation, misalignment, position and energy errors, slip transitions, static force ratio -- and
of their aggregation over contacts are in the documentation's theory pages
(``docs/theory/metrics.md``).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

__all__ = [
    "friction_coefficients",
    "normal_impulse",
    "slip_transitions",
    "static_coefficients",
    "static_force_ratio",
    "normalized_friction_force",
    "force_rms_deviation",
    "misalignment_angles",
    "misalignment_rms",
    "position_error",
    "energy_error",
    "on_grid",
    "summary",
    "contact_summary",
]


# --- friction coefficient and contact selection ------------------------------------------------
def _contact_count(trajectory) -> int:
    for name in ("contact_normal_force", "contact_friction_force", "contact_slip_velocity"):
        value = getattr(trajectory, name, None)
        if value is not None:
            return int(np.shape(value)[1])
    raise ValueError("the trajectory has no contact arrays")


def friction_coefficients(trajectory, mu=None) -> np.ndarray:
    """mu_i per step and contact, shape (steps, contacts), as the trajectory records it.

    Order: the per-step array ``contact_mu`` (steps x contacts) if the run recorded one; else
    ``trajectory.parameters["contacts"][i]["mu"]`` (constant in time; refused with a
    ``ValueError`` if a contact records ``"friction_profile"`` -- then mu varies in time and only
    ``contact_mu`` holds it); else the fallback ``mu`` (a number, or one per contact). An explicit
    ``mu`` that disagrees with the recorded value raises ``ValueError``, as does a trajectory
    that records no coefficient when ``mu`` is not given."""
    steps, contacts = np.shape(trajectory.t)[0], _contact_count(trajectory)
    recorded, source = None, None
    per_step = getattr(trajectory, "contact_mu", None)
    if per_step is not None:
        recorded = np.broadcast_to(np.asarray(per_step, float), (steps, contacts))
        source = "its contact_mu array"
    else:
        entries = (getattr(trajectory, "parameters", None) or {}).get("contacts")
        if entries is not None:
            if len(entries) != contacts:
                raise ValueError(
                    f"the trajectory's parameters list {len(entries)} contacts but its arrays hold {contacts}"
                )
            profiled = [i for i, entry in enumerate(entries) if entry.get("friction_profile")]
            if profiled:
                raise ValueError(
                    f"contacts {profiled} have a friction_profile (mu varies in time) but the "
                    "trajectory records no per-step contact_mu array; their normalized friction "
                    "force cannot be computed from the nominal mu"
                )
            if all("mu" in entry for entry in entries):
                recorded = np.broadcast_to(np.array([float(e["mu"]) for e in entries]), (steps, contacts))
                source = 'parameters["contacts"][i]["mu"]'
    if mu is not None:
        given = np.asarray(mu, float)
        if given.ndim > 1 or (given.ndim == 1 and given.shape[0] != contacts):
            raise ValueError(f"mu must be a number or one value per contact ({contacts}), got shape {given.shape}")
        given = np.broadcast_to(given, (steps, contacts))
        if recorded is not None and not np.allclose(given, recorded, rtol=1e-12, atol=0.0):
            raise ValueError(
                f"mu = {np.asarray(mu).tolist()} disagrees with the trajectory's own friction "
                f"coefficient (from {source}: {np.unique(recorded).tolist()}); leave mu out"
            )
        return given if recorded is None else recorded
    if recorded is None:
        raise ValueError(
            "the trajectory records no friction coefficient (no contact_mu array and no "
            'parameters["contacts"][i]["mu"]); pass mu= (a number or one per contact)'
        )
    return recorded


def _selection(trajectory, contact) -> list[int]:
    """Indices of the selected contacts (``None``: all)."""
    count = _contact_count(trajectory)
    if contact is None:
        return list(range(count))
    indices = [int(i) for i in contact] if isinstance(contact, Iterable) else [int(contact)]
    if not indices:
        raise ValueError("contact selects no contact")
    for i in indices:
        if not -count <= i < count:
            raise IndexError(f"contact {i} out of range: the trajectory has {count} contacts")
    return [i % count for i in indices]


def _step_lengths(trajectory) -> np.ndarray:
    """h per step (s): ``parameters["dt"]`` if recorded, else the spacing of ``t``."""
    t = np.asarray(trajectory.t, float)
    dt = (getattr(trajectory, "parameters", None) or {}).get("dt")
    if dt is not None:
        return np.full(t.shape, float(dt))
    if t.size == 1:
        return t.copy()
    return np.diff(t, prepend=t[0] - (t[1] - t[0]))


def normal_impulse(trajectory) -> np.ndarray:
    """h lam_N,i^+ per step and contact (N s), shape (steps, contacts): the aggregation weights."""
    normal = np.clip(np.asarray(trajectory.contact_normal_force, float), 0.0, None)
    return _step_lengths(trajectory)[:, None] * normal


def _force_terms(trajectory, mu=None):
    """(|lam_T,i| / mu_i, lam_N,i^+) per step and contact; 0 and 0 where mu_i = 0 (frictionless)."""
    coefficient = friction_coefficients(trajectory, mu)
    friction = np.linalg.norm(trajectory.contact_friction_force, axis=2)
    normal = np.clip(np.asarray(trajectory.contact_normal_force, float), 0.0, None)
    has_friction = coefficient > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        numerator = np.where(has_friction, friction / np.where(has_friction, coefficient, 1.0), 0.0)
    return numerator, np.where(has_friction, normal, 0.0)


def _ratio(numerator, denominator, mask=None) -> np.ndarray:
    """sum_i numerator / sum_i denominator over the contacts in ``mask`` (all if None); NaN where the
    denominator sum is not positive."""
    if mask is not None:
        numerator, denominator = np.where(mask, numerator, 0.0), np.where(mask, denominator, 0.0)
    top, bottom = numerator.sum(axis=1), denominator.sum(axis=1)
    out = np.full(bottom.shape, np.nan)
    ok = bottom > 0
    out[ok] = top[ok] / bottom[ok]
    return out


# --- the metrics -------------------------------------------------------------------------------
def normalized_friction_force(trajectory, mu=None, contact=None) -> np.ndarray:
    """F_k per step (dimensionless): |lam_T| / (mu lam_N) of one contact, or the normal-impulse
    weighted aggregate sum_i |lam_T,i| / mu_i / sum_i lam_N,i^+ of several (module docstring);
    NaN where the selected contacts carry no normal force. ``mu``: fallback only, see
    :func:`friction_coefficients`."""
    numerator, denominator = _force_terms(trajectory, mu)
    chosen = _selection(trajectory, contact)
    return _ratio(numerator[:, chosen], denominator[:, chosen])


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


def force_rms_deviation(
    model, reference, mu=None, velocity_threshold: float = 0.01, contact=None, phase: str = "all"
) -> float:
    """RMS of F - F_ref in percent over the selected contacts (module docstring); ``phase`` is
    "all" or "sliding" (only the contacts and steps where the reference slides, |v_T,ref| > v_th
    in m/s). ``mu``: fallback for both runs, see :func:`friction_coefficients`. NaN if no step
    qualifies."""
    if phase not in ("all", "sliding"):
        raise ValueError(f"phase must be 'all' or 'sliding', got {phase!r}")
    chosen = _selection(model, contact)
    if _selection(reference, chosen) != chosen or _contact_count(reference) != _contact_count(model):
        raise ValueError("the model and reference runs have different contacts")
    numerator, denominator = (a[:, chosen] for a in _force_terms(model, mu))
    ref_numerator, ref_denominator = (a[:, chosen] for a in _force_terms(reference, mu))
    if phase == "all":
        f = _ratio(numerator, denominator)
        f_ref = on_grid(model.t, reference.t, _ratio(ref_numerator, ref_denominator))
    else:
        slip_ref = on_grid(model.t, reference.t, np.linalg.norm(reference.contact_slip_velocity[:, chosen], axis=2))
        sliding = slip_ref > velocity_threshold  # (model steps, selected contacts)
        f = _ratio(numerator, denominator, sliding)
        f_ref = np.full(f.shape, np.nan)
        # the reference's aggregate over each set of contacts that occurs, on its own grid, then in time
        patterns, which = np.unique(sliding, axis=0, return_inverse=True)
        which = np.asarray(which).reshape(-1)
        for p, pattern in enumerate(patterns):
            if not pattern.any():
                continue
            steps = which == p
            f_ref[steps] = on_grid(
                model.t[steps], reference.t, _ratio(ref_numerator[:, pattern], ref_denominator[:, pattern])
            )
    mask = np.isfinite(f) & np.isfinite(f_ref)
    if not mask.any():
        return float("nan")
    return float(100.0 * np.sqrt(np.mean((f[mask] - f_ref[mask]) ** 2)))


def misalignment_angles(trajectory, velocity_threshold: float = 0.01, contact=None):
    """(times in s, angles in deg) between lam_T and -v_T at the steps where a selected contact
    slides (|v_T| > v_th, m/s) with |lam_T| > 0; with several contacts, the per-step normal-impulse
    weighted RMS over them (module docstring)."""
    chosen = _selection(trajectory, contact)
    friction = np.asarray(trajectory.contact_friction_force, float)[:, chosen]
    slip = np.asarray(trajectory.contact_slip_velocity, float)[:, chosen]
    speed = np.linalg.norm(slip, axis=2)
    magnitude = np.linalg.norm(friction, axis=2)
    mask = (speed > velocity_threshold) & (magnitude > 0)  # (steps, selected)
    rows = mask.any(axis=1)
    cosine = np.zeros(mask.shape)
    cosine[mask] = -np.einsum("ij,ij->i", friction[mask], slip[mask]) / (magnitude[mask] * speed[mask])
    angle = np.degrees(np.arccos(np.clip(cosine, -1.0, 1.0)))
    normal = getattr(trajectory, "contact_normal_force", None)  # absent: equal weights
    normal = np.ones(mask.shape) if normal is None else np.asarray(normal, float)[:, chosen]
    weight = np.where(mask, np.clip(normal, 0.0, None), 0.0)
    total = weight.sum(axis=1)
    weight = np.where((total > 0)[:, None], weight, mask.astype(float))  # no normal impulse: equal weights
    weight = weight[rows] / weight[rows].sum(axis=1, keepdims=True)
    squared = np.sum(weight * np.where(mask[rows], angle[rows], 0.0) ** 2, axis=1)
    return np.asarray(trajectory.t)[rows], np.sqrt(squared)


def misalignment_rms(trajectory, velocity_threshold: float = 0.01, contact=None) -> float:
    """sqrt(mean_k theta_k^2) in deg over the steps of :func:`misalignment_angles`; NaN if none."""
    _, angles = misalignment_angles(trajectory, velocity_threshold, contact)
    return float(np.sqrt(np.mean(angles**2))) if angles.size else float("nan")


def position_error(model, reference, body: int = 0, normalize: str = "start"):
    """(t in s, relative error, dimensionless) of the body's centre against the reference, see
    module docstring."""
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
    """(t in s, E - E_ref in J, (E - E_ref) / E_ref(0) dimensionless)."""
    e_ref = on_grid(model.t, reference.t, reference.energy)
    difference = model.energy - e_ref
    return model.t, difference, difference / float(reference.initial_energy)


def summary(
    model, reference, mu=None, velocity_threshold: float = 0.01, settle: float = 0.1, contact=None, body: int = 0
) -> dict:
    """Every metric of the module for one model run against a reference run: the friction
    metrics over the selected contacts (default all, aggregated), position error of ``body``,
    energy error of the run. ``mu``: fallback, see :func:`friction_coefficients`; ``settle`` in s."""
    t, position = position_error(model, reference, body)
    _, position_path = position_error(model, reference, body, normalize="path")
    _, energy, energy_relative = energy_error(model, reference)
    late = t >= settle
    return {
        "force_rms_deviation_percent": force_rms_deviation(model, reference, mu, velocity_threshold, contact),
        "force_rms_deviation_sliding_percent": force_rms_deviation(
            model, reference, mu, velocity_threshold, contact, phase="sliding"
        ),
        "misalignment_rms_deg": misalignment_rms(model, velocity_threshold, contact),
        "static_force_ratio_max": static_force_ratio(model, velocity_threshold, contact, mu)["max"],
        "position_error_final": float(position[-1]),
        "position_error_max": float(np.nanmax(position[late])) if late.any() else float("nan"),
        "position_error_final_per_path": float(position_path[-1]),
        "energy_error_final_J": float(energy[-1]),
        "energy_error_max_abs_J": float(np.max(np.abs(energy))),
        "energy_error_max_relative": float(np.max(np.abs(energy_relative))),
    }


def contact_summary(model, reference, mu=None, velocity_threshold: float = 0.01) -> list[dict]:
    """The friction metrics of each contact alone, one dict per contact: ``contact`` (index),
    ``normal_impulse_Ns`` (sum_k h lam_N,i^+ of the model run, N s), ``normal_impulse_share`` (its
    fraction of all contacts' normal impulse; the contact's weight in the aggregate, NaN if no
    contact carries load), ``force_rms_deviation_percent``, ``force_rms_deviation_sliding_percent``,
    ``misalignment_rms_deg``, ``static_force_ratio_max``. ``mu``: fallback, see
    :func:`friction_coefficients`."""
    impulse = normal_impulse(model).sum(axis=0)
    total = float(impulse.sum())
    out = []
    for i in range(_contact_count(model)):
        out.append(
            {
                "contact": i,
                "normal_impulse_Ns": float(impulse[i]),
                "normal_impulse_share": float(impulse[i] / total) if total > 0 else float("nan"),
                "force_rms_deviation_percent": force_rms_deviation(model, reference, mu, velocity_threshold, i),
                "force_rms_deviation_sliding_percent": force_rms_deviation(
                    model, reference, mu, velocity_threshold, i, phase="sliding"
                ),
                "misalignment_rms_deg": misalignment_rms(model, velocity_threshold, i),
                "static_force_ratio_max": static_force_ratio(model, velocity_threshold, i, mu)["max"],
            }
        )
    return out


def static_coefficients(trajectory, mu=None) -> np.ndarray:
    """mu_s,i per step and contact, (steps, contacts): ``parameters["contacts"][i]["mu_static"]``
    where the trajectory records it -- for a contact with a friction profile, which sets mu and
    mu_s alike (:meth:`lcpdyn.stepper.Simulation`), the per-step coefficient of
    :func:`friction_coefficients` -- else those kinetic coefficients. Not the recorded
    ``contact_mu`` itself: it holds mu_s only where a box, polygonal or Coulomb contact stuck."""
    kinetic = friction_coefficients(trajectory, mu)
    entries = (getattr(trajectory, "parameters", None) or {}).get("contacts")
    if not entries or not all("mu_static" in e for e in entries):
        return kinetic
    static = np.broadcast_to(np.array([float(e["mu_static"]) for e in entries]), kinetic.shape).copy()
    for i, entry in enumerate(entries):
        if entry.get("friction_profile"):
            static[:, i] = kinetic[:, i]
    return static


def static_force_ratio(trajectory, velocity_threshold: float = 0.01, contact=None, mu=None) -> dict:
    """How far a sticking contact's friction force reaches against its cone: r_k,i =
    |lam_T,i| / (mu_s,i lam_N,i) over the steps where contact i sticks (|v_T,i| <= v_th), carries
    normal force and has mu_s,i > 0 (:func:`static_coefficients`). Coulomb keeps r <= 1; Peiret's
    regularized static branch bounds each component of lam_T in the previous force's basis by mu
    lam_N (Eq. 12, a box), which lets r reach sqrt(2). Returns ``max`` (NaN if no contact ever
    sticks), the step time ``t_max`` and contact ``contact_max`` where it occurs, and
    ``steps_outside`` (sticking steps and contacts with r > 1 + 1e-9)."""
    chosen = _selection(trajectory, contact)
    speed = np.linalg.norm(np.asarray(trajectory.contact_slip_velocity, float)[:, chosen], axis=2)
    normal = np.asarray(trajectory.contact_normal_force, float)[:, chosen]
    friction = np.linalg.norm(np.asarray(trajectory.contact_friction_force, float)[:, chosen], axis=2)
    static = static_coefficients(trajectory, mu)[:, chosen]
    sticking = (speed <= velocity_threshold) & (normal > 0) & (static > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(sticking, friction / np.where(sticking, static * normal, 1.0), np.nan)
    if not sticking.any():
        return {"max": float("nan"), "t_max": float("nan"), "contact_max": -1, "steps_outside": 0}
    k, i = np.unravel_index(int(np.nanargmax(ratio)), ratio.shape)
    return {
        "max": float(ratio[k, i]),
        "t_max": float(trajectory.t[k]),
        "contact_max": int(chosen[i]),
        "steps_outside": int(np.sum(ratio > 1.0 + 1e-9)),
    }


def slip_transitions(trajectory, velocity_threshold: float = 0.01, contact=None, locate: bool = False) -> dict:
    """Times (s) of slide-to-roll (``to_roll``) and roll-to-slide (``to_slide``) transitions of the
    selected contacts (default all), judged by |v_T| against ``velocity_threshold`` (m/s) at the
    end of each step; a step counts as sliding when any selected contact slides, so with several
    contacts ``to_roll`` is when the last one stops. The time is that of the first step in the new
    state, or with ``locate`` the time inside the step at which the largest |v_T| crosses the
    threshold: to_slide by linear interpolation between the step's two ends, to_roll by the
    linear extrapolation of the two steps before (a stop ends the step at rest, so the step's own
    end says only that the crossing came before it), kept within the step. ``first_roll`` is the
    first slide-to-roll time (NaN if the contacts never stop sliding)."""
    chosen = _selection(trajectory, contact)
    speed = np.linalg.norm(np.asarray(trajectory.contact_slip_velocity)[:, chosen], axis=2)
    sliding = (speed > velocity_threshold).any(axis=1)
    change = np.flatnonzero(sliding[1:] != sliding[:-1]) + 1
    t = np.asarray(trajectory.t, float)
    times = t[change]
    if locate and change.size:
        times = _located(t, speed.max(axis=1), change, sliding, velocity_threshold)
    to_roll = [float(x) for x, i in zip(times, change) if not sliding[i]]
    to_slide = [float(x) for x, i in zip(times, change) if sliding[i]]
    return {
        "to_roll": to_roll,
        "to_slide": to_slide,
        "first_roll": to_roll[0] if to_roll else float("nan"),
        "sliding_at_start": bool(sliding[0]),
        "sliding_at_end": bool(sliding[-1]),
    }


def _located(t, speed, change, sliding, threshold):
    """The threshold crossings of ``speed`` inside the steps ending at ``change`` (slip_transitions)."""
    out = t[change].copy()
    for j, i in enumerate(change):
        if sliding[i]:  # rising through the threshold between steps i - 1 and i
            a, b = speed[i - 1], speed[i]
            x = t[i - 1] + (t[i] - t[i - 1]) * (threshold - a) / (b - a)
        elif i >= 2 and speed[i - 2] > speed[i - 1]:  # falling: the slip's trend before the stop
            a, b = speed[i - 2], speed[i - 1]
            x = t[i - 1] + (t[i - 1] - t[i - 2]) * (b - threshold) / (a - b)
        else:
            continue
        out[j] = min(max(x, t[i - 1]), t[i])
    return out
