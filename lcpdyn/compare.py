"""The friction-model comparison of Peiret 2016 (Figs. 4-5 and the numbers quoted in its text),
for any scene and every contact.

:func:`compare` runs a scene under every friction model at the scene's step h (1 kHz for the
wheel) and the exact Coulomb model also at ``reference_dt`` (10 kHz, as the paper did), then
scores each run against the fine Coulomb run (and against the Coulomb run at the same step) with
:mod:`lcpdyn.metrics`: aggregated over all contacts (normal-impulse weighted, see
:mod:`lcpdyn.metrics`) and per contact. :func:`format_table` prints both;
:func:`lcpdyn.compare_figures.write_figures` draws Fig. 4 (normalized friction force), Fig. 5
(position error, energy error, misalignment) and, for scenes with several contacts, the normal
force and normalized friction force of each contact; :func:`write_json` writes the numbers with
the lcpdyn version and every parameter.

Peiret 2016's published values (:data:`PAPER`) belong to its wheel (Table 1, ``scenes.wheel``):
they are shown, in the table, the JSON and the figures, only for that scene with the Table 1
parameters (any run length ``t_end``; the paper does not state its own).
"""

from __future__ import annotations

import json
import math
import time
import warnings

import numpy as np

from . import __version__, metrics
from .plotting import POSITION_UPDATE_LABELS
from .stepper import Simulation
from .trajectory import Health

__all__ = [
    "PAPER",
    "PAPER_SCENE",
    "UPDATE_LABELS",
    "REFERENCE_ERROR_FRACTION",
    "ReferenceErrorWarning",
    "reference_error",
    "compare",
    "published_values",
    "format_table",
    "write_json",
]

# Peiret 2016, section "Example": RMS deviation of |lam_T|/(mu lam_N) from Coulomb, and RMS
# misalignment between friction force and sliding velocity, for its wheel (Table 1).
PAPER = {
    "regularized": {"force_rms_deviation_percent": 1.67, "misalignment_rms_deg": 0.7},
    "polygonal": {"force_rms_deviation_percent": 3.76, "misalignment_rms_deg": 14.0},
    "box": {"force_rms_deviation_percent": 9.70, "misalignment_rms_deg": 12.6},
}
PAPER_SCENE = "wheel"  #: the scene PAPER belongs to
PAPER_FREE_PARAMETERS = ("t_end",)  #: parameters the paper does not fix: PAPER still applies when they change
PAPER_STEPS = {"dt": 1e-3, "reference_dt": 1e-4}  #: 1 kHz models, 10 kHz Coulomb (paper, "Example")
MODELS = ("regularized", "polygonal", "box", "coulomb")
UPDATE_LABELS = POSITION_UPDATE_LABELS
REFERENCE_ERROR_FRACTION = 0.2
"""``compare`` warns where the reference's own error estimate exceeds this fraction of the smallest
deviation from the reference it reports in the same column (that column cannot rank the models)."""
ESTIMATED_METRICS = {
    "force_rms_deviation_percent": ("force RMS dev", "%", ".3g"),
    "force_rms_deviation_sliding_percent": ("force RMS dev (sliding)", "%", ".3g"),
    "position_error_final": ("pos err end", " (relative)", ".2e"),
    "position_error_max": ("pos err max", " (relative)", ".2e"),
    "energy_error_final_J": ("energy err end", " J", ".2e"),
}
"""The :func:`lcpdyn.metrics.summary` columns the reference's own error is estimated for: (label,
unit, format)."""
ROUNDING = 1e-9  #: relative to a column's largest deviation: below it, agreement to rounding
EXACT_RTOL = 1e-11  #: the event-driven reference's ODE tolerance
ESTIMATE_RTOL = 1e-9  #: its error estimate's looser run: 100x, written out (100 * 1e-11 is 1.0000000000000001e-9)


def published_values(scene_name: str, parameters: dict, defaults: dict | None) -> dict | None:
    """:data:`PAPER` if the scene is Peiret 2016's wheel with its Table 1 parameters (every
    parameter but :data:`PAPER_FREE_PARAMETERS` at ``defaults``), else ``None``."""
    if scene_name != PAPER_SCENE or defaults is None:
        return None
    for key, value in defaults.items():
        if key not in PAPER_FREE_PARAMETERS and parameters.get(key, value) != value:
            return None
    return PAPER


def _contact_label(contact) -> str:
    """Short physical name of a contact, e.g. "corner (-0.1, -0.1, -0.1) m of 'block'"."""
    body = contact.body.name
    kind = type(contact).__name__
    if kind == "PointContact":
        offset = ", ".join(f"{float(x):+.3g}" for x in np.asarray(contact.offset))
        return f"point ({offset}) m of '{body}'"
    if kind == "DiskContact":
        return f"rim of disk '{body}' (R = {contact.radius:g} m)"
    if kind == "SphereContact":
        return f"sphere '{body}' (r = {contact.radius:g} m)"
    return f"{kind} of '{body}'"


def compare(
    scene_module,
    reference_dt: float = 1e-4,
    models=MODELS,
    progress: bool = False,
    position_update: str = "symplectic",
    reference: str = "stepper",
    **parameters,
) -> dict:
    """Run ``scene_module.build(**parameters)`` under each model (every run with the same
    ``position_update``: the engine's default ``"symplectic"``, or ``"paper"`` for Peiret 2016's
    own Eq. (7) scheme, see :mod:`lcpdyn.stepper`; the gyroscopic treatment follows it) at the
    scene's step, and exact Coulomb also at ``reference_dt`` (s). Energy gains are flagged per
    step in each run's ``health`` (an :class:`~lcpdyn.stepper.EnergyWarning` per flagged run).

    Every contact is scored; mu is read from each run (:func:`lcpdyn.metrics.friction_coefficients`).
    Returns a dict with ``runs`` (name -> Trajectory; the fine Coulomb run is
    ``"coulomb-reference"``), ``metrics`` (name -> :func:`lcpdyn.metrics.summary` against the fine
    Coulomb run, friction metrics aggregated over all contacts), ``metrics_same_step`` (against
    Coulomb at the scene's step), ``metrics_per_contact`` / ``metrics_same_step_per_contact``
    (name -> :func:`lcpdyn.metrics.contact_summary`, one dict per contact), ``transitions`` (any
    contact sliding) and ``transitions_per_contact``, ``static_force_ratio`` (name ->
    :func:`lcpdyn.metrics.static_force_ratio`, the reference included), ``contacts`` (index, label, type, body, mu,
    mu_static of each), ``mu`` (the common kinetic coefficient, ``None`` if contacts differ),
    ``paper`` (:data:`PAPER` or ``None``, see :func:`published_values`), ``timing`` (wall s),
    ``parameters``/``run_parameters`` and ``reference_error``: the reference's own error estimate
    (:func:`reference_error`: a step-halving run, or the event-driven solution at a looser
    tolerance) with ``warnings``, one per column where that estimate exceeds
    :data:`REFERENCE_ERROR_FRACTION` of the smallest deviation reported in it (each also issued as
    a :class:`ReferenceErrorWarning`).

    ``reference="exact"``: the reference is :func:`lcpdyn.reference.exact_coulomb` (event-driven,
    its own error the ODE tolerance) sampled every ``reference_dt`` instead of the stepper's
    exact cone at ``reference_dt``; for scenes it takes (one rigid body, rigid contacts, gravity),
    else its ``ValueError`` names what it does not take."""
    if reference not in ("stepper", "exact"):
        raise ValueError(f"reference must be 'stepper' or 'exact', got {reference!r}")
    if position_update not in UPDATE_LABELS:
        raise ValueError(f"position_update must be one of {sorted(UPDATE_LABELS)}, got {position_update!r}")
    scene = scene_module.build(**parameters)
    contacts = [
        {
            "index": i,
            "label": _contact_label(c),
            "type": type(c).__name__,
            "body": c.body.name,
            "mu": float(c.mu),
            "mu_static": float(c.mu_static),
        }
        for i, c in enumerate(scene.model.contacts)
    ]
    if not contacts:
        raise ValueError(f"scene {scene.name!r} has no contact: nothing to compare")
    coefficients = {c["mu"] for c in contacts}
    threshold = scene.contact_model.get("velocity_threshold", 0.01)
    runs, timing = {}, {}
    plan = [(name, scene.dt) for name in models] + (
        [("coulomb-reference", reference_dt)] if reference == "stepper" else []
    )
    if reference == "exact":
        from .reference import exact_coulomb

        samples = reference_dt * np.arange(1, int(round(scene.t_end / reference_dt)) + 1)
        start = time.perf_counter()
        solution = exact_coulomb(scene.model, scene.t_end, samples, rtol=EXACT_RTOL)
        runs["coulomb-reference"] = solution.as_trajectory(scene.model)
        timing["coulomb-reference"] = time.perf_counter() - start
    for name, dt in plan:
        model_name = "coulomb" if name == "coulomb-reference" else name
        sim = Simulation(
            scene.model,
            scene.friction(model_name),
            dt,  # one model, compiled once
            position_update=position_update,
        )
        start = time.perf_counter()
        runs[name] = sim.run(scene.t_end, progress=progress)
        timing[name] = time.perf_counter() - start
    reference_run = runs["coulomb-reference"]
    same = runs.get("coulomb")
    others = [name for name in models if name != "coulomb"] if same is not None else []
    scores = {name: metrics.summary(runs[name], reference_run, velocity_threshold=threshold) for name in models}
    start = time.perf_counter()
    own_error = reference_error(scene, reference, reference_dt, reference_run, threshold, position_update, progress)
    own_error["warnings"] = reference_error_warnings(own_error, scores)
    timing["reference-error"] = time.perf_counter() - start
    for text in own_error["warnings"]:
        warnings.warn(text, ReferenceErrorWarning, stacklevel=2)
    return {
        "scene": scene.name,
        "parameters": scene.parameters,
        "reference_dt": reference_dt,
        "reference": reference,
        "dt": scene.dt,
        "position_update": position_update,
        "t_end": scene.t_end,
        "mu": coefficients.pop() if len(coefficients) == 1 else None,
        "contacts": contacts,
        "velocity_threshold": threshold,
        "runs": runs,
        "metrics": scores,
        "reference_error": own_error,
        "metrics_same_step": {name: metrics.summary(runs[name], same, velocity_threshold=threshold) for name in others},
        "metrics_per_contact": {
            name: metrics.contact_summary(runs[name], reference_run, velocity_threshold=threshold) for name in models
        },
        "metrics_same_step_per_contact": {
            name: metrics.contact_summary(runs[name], same, velocity_threshold=threshold) for name in others
        },
        "transitions": {name: metrics.slip_transitions(run, threshold) for name, run in runs.items()},
        "static_force_ratio": {name: metrics.static_force_ratio(run, threshold) for name, run in runs.items()},
        "transitions_per_contact": {
            name: [metrics.slip_transitions(run, threshold, i) for i in range(len(contacts))]
            for name, run in runs.items()
        },
        "paper": published_values(scene.name, scene.parameters, getattr(scene_module, "DEFAULTS", None)),
        "timing": timing,
        "run_parameters": {name: run.parameters for name, run in runs.items()},
    }


class ReferenceErrorWarning(UserWarning):
    """The reference's own error estimate is not small against a deviation the comparison reports."""


def reference_error(
    scene, reference, reference_dt, reference_run, threshold, position_update, progress=False, friction="coulomb"
) -> dict:
    """An estimate of the reference run's own error, in the columns of :data:`ESTIMATED_METRICS`
    and the first slide->roll time: the same metrics of a cruder reference against it. The
    stepper's reference (first order; friction model ``friction``, exact Coulomb unless a sweep
    chose another) is compared with its run at 2 ``reference_dt``: for an error
    C h, the two differ by C h, the finer run's own error (step halving). The event-driven
    reference is compared with its solution at :data:`ESTIMATE_RTOL`, 100 times its ODE tolerance,
    an upper bound of its error at :data:`EXACT_RTOL` (:func:`lcpdyn.reference.error_estimate`
    checks that bound against a run 100 times tighter). Returns {"method": text, "estimate": {metric: value},
    "first_roll_s": |difference|}."""
    if reference == "exact":
        from .reference import exact_coulomb

        samples = reference_dt * np.arange(1, int(round(scene.t_end / reference_dt)) + 1)
        crude = exact_coulomb(scene.model, scene.t_end, samples, rtol=ESTIMATE_RTOL).as_trajectory(scene.model)
        method = f"the event-driven solution at rtol {ESTIMATE_RTOL:g} against the reference's {EXACT_RTOL:g}"
    else:
        crude_dt = 2.0 * reference_dt
        sim = Simulation(scene.model, scene.friction(friction), crude_dt, position_update=position_update)
        crude = sim.run(scene.t_end, progress=progress)
        method = f"step halving: {friction} at h = {crude_dt:g} s against the reference at {reference_dt:g} s"
    score = metrics.summary(crude, reference_run, velocity_threshold=threshold)
    rolls = [metrics.slip_transitions(run, threshold)["first_roll"] for run in (crude, reference_run)]
    return {
        "method": method,
        "estimate": {key: abs(score[key]) for key in ESTIMATED_METRICS},
        "first_roll_s": abs(rolls[0] - rolls[1]),
    }


def reference_error_warnings(error: dict, scores: dict) -> list[str]:
    """One sentence per column of :data:`ESTIMATED_METRICS` where the reference's own error
    estimate exceeds :data:`REFERENCE_ERROR_FRACTION` of the smallest deviation a model shows in
    it (``scores``: name -> :func:`lcpdyn.metrics.summary`). Deviations and estimates within
    ``ROUNDING`` of the column's largest are rounding (coulomb against the reference in the
    sliding phase: both exactly mu lam_N) and are left out."""
    out = []
    for key, (label, unit, spec) in ESTIMATED_METRICS.items():
        own = error["estimate"][key]
        shown = {name: abs(score[key]) for name, score in scores.items() if np.isfinite(score[key])}
        if not shown or not np.isfinite(own):
            continue
        noise = ROUNDING * max(shown.values())  # a model that agrees with the reference to rounding ranks nothing
        shown = {name: value for name, value in shown.items() if value > noise}
        if not shown or own <= noise:
            continue
        name = min(shown, key=shown.get)
        if own > REFERENCE_ERROR_FRACTION * shown[name]:
            out.append(
                f"{label}: the reference's own error ({format(own, spec)}{unit}, {error['method']}) exceeds "
                f"{100 * REFERENCE_ERROR_FRACTION:g} % of the smallest deviation compared ({name}: "
                f"{format(shown[name], spec)}{unit}); this column cannot rank the models below that level"
            )
    return out


# --- table -------------------------------------------------------------------------------------
def _f(value, spec: str) -> str:
    return "-" if value is None or not np.isfinite(value) else format(value, spec)


def format_table(result: dict) -> str:
    """The comparison as a text table. One row per model with the friction metrics aggregated
    over all contacts (normal-impulse weighted) and the run's position and energy errors; for
    scenes with several contacts, one indented row per contact below it with that contact's
    friction metrics and its share of the normal impulse. The paper's columns appear only when
    :data:`PAPER` applies (``result["paper"]``)."""
    m, same = result["metrics"], result["metrics_same_step"]
    per, same_per = result.get("metrics_per_contact", {}), result.get("metrics_same_step_per_contact", {})
    paper = result.get("paper")
    contacts = result.get("contacts") or [{"index": 0, "label": "contact 0"}]
    several = len(contacts) > 1
    update = UPDATE_LABELS.get(result["position_update"], result["position_update"])
    reference_name = _reference_name(result, f"{result['reference_dt']:g} s")
    lines = [
        f"{result['scene']}: friction models against {reference_name} "
        f"(models at h = {result['dt']:g} s, t_end = {result['t_end']:g} s, position update {update})"
    ]
    if several:
        lines.append(f"{len(contacts)} contacts: " + "; ".join(f"#{c['index']} {c['label']}" for c in contacts))
        lines.append(
            "Rows 'all': friction metrics aggregated over the contacts, weighted by normal impulse h lam_N "
            "(lcpdyn.metrics), and the run's errors (position of body 0, energy of the whole system); rows "
            "'#i': contact i alone, with its share of the normal impulse. '(sliding)': only the contacts and "
            "steps where the reference slides."
        )
    lines.append("")
    columns = [("model", 12)] + ([("contact", 7), ("impulse %", 9)] if several else [])
    columns += [("force RMS dev %", 16)] + ([("paper %", 8)] if paper else [])
    columns += [("(sliding) %", 12), ("misalign RMS °", 15)] + ([("paper °", 8)] if paper else [])
    columns += [("stick |λT|/μsλN", 16)]
    columns += [
        ("pos err end", 12),
        ("pos err max", 12),
        ("energy err end J", 17),
        ("vs Coulomb@h: force %", 22),
        ("slide->roll s", 16),
        ("wall s", 8),
    ]
    head = " ".join(f"{name:{'<' if i == 0 else '>'}{width}s}" for i, (name, width) in enumerate(columns))
    lines.append(head)
    lines.append("-" * len(head))

    def row(cells):
        return " ".join(
            f"{cell:{'<' if i == 0 else '>'}{width}s}" for i, (cell, (_, width)) in enumerate(zip(cells, columns))
        ).rstrip()

    for name, metric in m.items():
        published = (paper or {}).get(name, {})
        cells = [name] + (["all", "100.0"] if several else [])
        cells += [_f(metric["force_rms_deviation_percent"], ".2f")]
        cells += [_f(published.get("force_rms_deviation_percent"), ".2f")] if paper else []
        cells += [_f(metric["force_rms_deviation_sliding_percent"], ".2f"), _f(metric["misalignment_rms_deg"], ".2f")]
        cells += [_f(published.get("misalignment_rms_deg"), ".2f")] if paper else []
        cells += [_f(metric["static_force_ratio_max"], ".3f")]
        cells += [
            _f(metric["position_error_final"], ".2e"),
            _f(metric["position_error_max"], ".2e"),
            _f(metric["energy_error_final_J"], ".3e"),
            _f(same.get(name, {}).get("force_rms_deviation_percent"), ".2f"),
            _transition_cell(result["transitions"][name]),
            f"{result['timing'][name]:.2f}",
        ]
        lines.append(row(cells))
        if not several:
            continue
        for i, contact in enumerate(per.get(name, [])):
            cells = [
                "",
                f"#{i}",
                _f(100.0 * contact["normal_impulse_share"], ".1f"),
                _f(contact["force_rms_deviation_percent"], ".2f"),
            ]
            cells += [""] if paper else []
            cells += [
                _f(contact["force_rms_deviation_sliding_percent"], ".2f"),
                _f(contact["misalignment_rms_deg"], ".2f"),
            ]
            cells += [""] if paper else []
            cells += [_f(contact["static_force_ratio_max"], ".3f")]
            same_contact = same_per.get(name, [{}] * len(per[name]))[i]
            cells += [
                "",
                "",
                "",
                _f(same_contact.get("force_rms_deviation_percent"), ".2f"),
                _transition_cell(result["transitions_per_contact"][name][i]),
                "",
            ]
            lines.append(row(cells))
    reference = _transition_cell(result["transitions"]["coulomb-reference"])
    lines.append(
        f"{'(Coulomb, reference)':>28s}: "
        + ("never stops sliding" if reference == "never" else f"slide->roll at {reference} s")
    )
    own = result.get("reference_error")
    if own:
        lines.append(
            f"Reference's own error (estimate from {own['method']}): "
            + ", ".join(
                f"{label} {format(own['estimate'][key], spec)}{unit}"
                for key, (label, unit, spec) in ESTIMATED_METRICS.items()
            )
            + f", slide->roll {_f(1e3 * own['first_roll_s'], '.2g')} ms"
        )
        lines.extend(f"WARNING: {text}" for text in own["warnings"])
    ratios = result.get("static_force_ratio", {})
    outside = {name: r for name, r in ratios.items() if np.isfinite(r["max"]) and r["max"] > 1.0 + 1e-9}
    if outside:
        lines.append(
            "Static friction outside the cone (|lam_T| > mu_s lam_N while sticking): "
            + ", ".join(
                f"{name} up to {r['max']:.3f} at t = {r['t_max']:.4g} s ({r['steps_outside']} steps)"
                for name, r in outside.items()
            )  # fmt: skip
        )
    gains = {name: int(np.count_nonzero(run.health & int(Health.ENERGY_GAIN))) for name, run in result["runs"].items()}
    if any(gains.values()):
        lines.append(
            "Steps flagged with an energy gain (Health.ENERGY_GAIN): "
            + ", ".join(f"{name} {count}" for name, count in gains.items())
        )
    if several:
        lines.append(
            "A contact's own score ('#i') also compares how the runs share the load among redundant contacts, "
            "which the rigid model leaves open; |lam_T,i| / (mu_i lam_N,i) is unbounded where lam_N,i drops to "
            "~0 while the friction bound still holds the previous step's lam_N (Eq. 12). The aggregate is "
            "free of both."
        )
        lines.append(_indeterminacy_note(result))
    lines.append("")
    if paper:
        note = "Paper values: Peiret 2016, 'Example' (1 kHz models, 10 kHz Coulomb reference)."
        differs = [
            f"{key} = {result[key]:g} s"
            for key, value in PAPER_STEPS.items()
            if not math.isclose(result[key], value, rel_tol=1e-9)
        ]
        if differs:
            note += " This run differs in its steps: " + ", ".join(differs) + "."
        lines.append(note)
    else:
        lines.append(
            f"No published values: Peiret 2016 reports them only for its wheel ('{PAPER_SCENE}', Table 1 parameters)."
        )
    return "\n".join(lines)


def _indeterminate_steps(result: dict) -> np.ndarray:
    """Steps of the reference (bool, its grid) where every contact sticks (|v_T,i| <= v_th) while
    some body rests on two or more loaded contacts (lam_N > 0): their friction forces are then
    statically indeterminate -- only the resultant is fixed, and equally exact solutions may
    carry self-equilibrated internal friction -- and so is the normalized friction force."""
    reference = result["runs"]["coulomb-reference"]
    bodies = [c["body"] for c in result["contacts"]]
    loaded = reference.contact_normal_force > 0
    sticking = ~(np.linalg.norm(reference.contact_slip_velocity, axis=2) > result["velocity_threshold"]).any(axis=1)
    redundant = np.zeros(sticking.shape, bool)
    for body in set(bodies):
        columns = [i for i, b in enumerate(bodies) if b == body]
        redundant |= loaded[:, columns].sum(axis=1) > 1
    return sticking & redundant


def _indeterminacy_note(result: dict) -> str:
    share = float(np.mean(_indeterminate_steps(result)))
    if share == 0.0:
        return "The reference never sticks on two or more loaded contacts of one body."
    return (
        f"In {100 * share:.0f} % of the reference's steps every contact sticks while a body rests on two or more "
        "loaded contacts: their friction forces are then statically indeterminate (only the resultant is fixed; "
        "solvers may carry self-equilibrated internal friction), and so is the normalized force -- compare the "
        "'(sliding)' column there."
    )


def _transition_cell(transitions: dict) -> str:
    """First slide-to-roll time, with the number of later returns to sliding."""
    first = transitions["first_roll"]
    if not np.isfinite(first):
        return "never"
    again = sum(1 for t in transitions["to_slide"] if t > first)
    return f"{first:.3f}" + (f" (+{again} slip)" if again else "")


# --- JSON --------------------------------------------------------------------------------------
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
    """Every number of ``result`` but the runs' arrays; ``paper`` is :data:`PAPER` for the paper's
    wheel and ``null`` otherwise."""
    payload = {key: value for key, value in result.items() if key != "runs"}
    payload["paper"] = result.get("paper")
    payload["lcpdyn_version"] = __version__
    payload["solver_status_counts"] = {
        name: {str(s): int(c) for s, c in zip(*np.unique(run.solver_status, return_counts=True))}
        for name, run in result["runs"].items()
    }
    payload["solver_fallbacks"] = {name: int(run.solver_fallback.sum()) for name, run in result["runs"].items()}
    payload["energy_gain_steps"] = {
        name: int(np.count_nonzero(run.health & int(Health.ENERGY_GAIN))) for name, run in result["runs"].items()
    }
    with open(path, "w") as handle:
        json.dump(_jsonable(payload), handle, indent=2, sort_keys=True)


def _reference_name(result: dict, step: str) -> str:
    """The reference run's name, ``step`` its formatted step or sampling interval."""
    if result.get("reference") == "exact":
        return f"event-driven exact Coulomb, sampled every {step}"
    return f"exact Coulomb, h = {step}"
