"""A quick-look figure of one run (``lcpdyn run ... --plot FILE.png``)."""

from __future__ import annotations

import re

import numpy as np

__all__ = ["plot_run", "run_settings", "contact_names", "group_identical", "finish", "POSITION_UPDATE_LABELS"]

POSITION_UPDATE_LABELS = {"symplectic": "symplectic (default)", "paper": "paper Eq. (7)", "midpoint": "Moreau midpoint"}
"""How figures and tables name the schemes of ``position_update`` (:class:`lcpdyn.stepper.Simulation`)."""
_CONTACT_KINDS = {"PointContact": "point", "DiskContact": "disk rim", "SphereContact": "sphere"}
_STYLES = ("-", "--", "-.", ":")


def finish(fig, path, title: str, fontsize: float = 10.5, dpi: int = 110):
    """Title ``fig``, lay it out, write it to ``path`` and close it; returns the (closed) figure."""
    import matplotlib.pyplot as plt

    fig.suptitle(title, fontsize=fontsize)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return fig


def run_settings(
    parameters: dict, include_step: bool = True, include_friction: bool = True, time_unit: str = "s"
) -> str:
    """One line with the run's step size, position update, gyroscopic term and friction model,
    from ``trajectory.parameters`` (as the stepper stores them). ``time_unit`` names the unit of
    the step for scenes in other units than seconds (e.g. "√(r/g)")."""
    parts = []
    dt = parameters.get("dt")
    if include_step and dt is not None:
        if time_unit == "s":
            parts.append(f"h = {dt * 1e3:g} ms" if dt < 0.1 else f"h = {dt:g} s")
        else:
            parts.append(f"h = {dt:g} {time_unit}")
    update = parameters.get("position_update")
    if update:
        parts.append(f"position update: {POSITION_UPDATE_LABELS.get(update, update)}")
    if parameters.get("gyroscopic"):
        parts.append(f"gyroscopic term: {parameters['gyroscopic']}")
    friction = parameters.get("friction")
    if include_friction and isinstance(friction, dict) and friction.get("model"):
        parts.append(f"friction: {friction['model']}")
    return ", ".join(parts)


def contact_names(parameters: dict, count: int) -> list[str]:
    """``"contact 1 (block, point)"``, ... from the contacts recorded in ``parameters``."""
    contacts = parameters.get("contacts") or []
    names = []
    for c in range(count):
        if c < len(contacts):
            kind = _CONTACT_KINDS.get(contacts[c].get("type"), contacts[c].get("type", ""))
            names.append(f"contact {c + 1} ({contacts[c].get('body', '?')}, {kind})")
        else:
            names.append(f"contact {c + 1}")
    return names


def group_identical(series: list[np.ndarray], rtol: float = 1e-3) -> list[list[int]]:
    """Indices of ``series`` grouped where curves coincide to ``rtol`` of the largest |value| (at
    that distance they are indistinguishable in a figure), so that coinciding curves are drawn
    once with a note naming all of them."""
    scale = max((float(np.nanmax(np.abs(s))) for s in series if s.size), default=0.0)
    atol = rtol * scale if scale > 0 else rtol
    groups: list[list[int]] = []
    for i, s in enumerate(series):
        for group in groups:
            if np.allclose(series[group[0]], s, rtol=0.0, atol=atol, equal_nan=True):
                group.append(i)
                break
        else:
            groups.append([i])
    return groups


FEW = 6
"""Bodies or contacts a run figure draws one by one, each named in a legend; beyond it the figure
draws aggregates (every path in grey, bands and percentiles over the contacts) and names the
few that stand out."""
NAMED = 3
"""Bodies or contacts named in a figure of many: those that travelled furthest, or whose curve
reaches the largest value."""


def _contact_style(c: int) -> dict:
    """Colour and dash of contact ``c`` (the same in every panel: one legend serves them all)."""
    return {"color": f"C{c % 10}", "ls": _STYLES[c % len(_STYLES)], "lw": 1.7 - 0.25 * (c % len(_STYLES))}


def _wrapped(text: str, width: int = 62) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(text, width)) if text else ""


def _plot_contacts(ax, t, series, unit):
    """One line per contact, or per group of coinciding contacts (drawn once, noted in the panel's
    title with their largest difference)."""
    notes = []
    for group in group_identical(series):
        ax.plot(t, series[group[0]], zorder=2 + group[0], **_contact_style(group[0]))
        if len(group) > 1:
            gap = max(float(np.nanmax(np.abs(series[g] - series[group[0]]))) for g in group)
            notes.append(
                "contacts " + ", ".join(str(g + 1) for g in group) + f" coincide (≤ {gap:.1g} {unit} apart), drawn once"
                if gap
                else "contacts " + ", ".join(str(g + 1) for g in group) + " identical, drawn once"
            )
    if notes:
        ax.set_title(_wrapped("; ".join(notes)), fontsize=8.5)


def _aggregate_contacts(ax, t, values, names, lowest=False):
    """Many contacts (``values``: steps x contacts): the band between the smallest and largest
    value at each step, the median and the 90th percentile (10th where ``lowest``), and the
    :data:`NAMED` contacts reaching the largest value (the smallest where ``lowest``) drawn and
    named in the panel's legend."""
    count = values.shape[1]
    with np.errstate(all="ignore"):
        low, high = np.nanmin(values, axis=1), np.nanmax(values, axis=1)
        median = np.nanmedian(values, axis=1)
        tail = np.nanpercentile(values, 10 if lowest else 90, axis=1)
        peaks = np.nanmin(values, axis=0) if lowest else np.nanmax(values, axis=0)
    ax.fill_between(t, low, high, color="0.85", lw=0, label=f"all {count} contacts: min to max")
    ax.plot(t, median, color="0.25", lw=1.3, label="median")
    ax.plot(t, tail, color="0.45", lw=1.0, ls="--", label="10th percentile" if lowest else "90th percentile")
    finite = np.where(np.isfinite(peaks), peaks, np.inf if lowest else -np.inf)
    order = np.argsort(finite, kind="stable")
    for rank, c in enumerate(order[:NAMED] if lowest else order[::-1][:NAMED]):
        ax.plot(t, values[:, c], color=f"C{rank + 1}", lw=1.2, label=names[c])
    ax.legend(fontsize=7, framealpha=0.85, loc="best")


def _plot_paths(ax, trajectory):
    """Centre-of-mass paths in plan view: every body named (a handful), or every path in grey and
    the :data:`NAMED` that travelled furthest named."""
    start = getattr(trajectory, "initial_position", None)  # (bodies, 3) at t = 0: the paths start there
    xy = trajectory.position[:, :, :2]
    if start is not None:
        xy = np.concatenate([np.asarray(start)[None, :, :2], xy])
    bodies = xy.shape[1]
    if bodies <= FEW:
        for b, name in enumerate(trajectory.body_names):
            x, y = xy[:, b, 0], xy[:, b, 1]
            (line,) = ax.plot(x, y, lw=1.4, ls=_STYLES[b % len(_STYLES)], label=name, zorder=2 + b)
            ax.plot(x[0], y[0], "o", color=line.get_color(), mfc="none", ms=7, zorder=5)
            ax.plot(x[-1], y[-1], "s", color=line.get_color(), ms=5, zorder=5)
        ax.plot([], [], "o", color="0.3", mfc="none", ls="none", label="start")
        ax.plot([], [], "s", color="0.3", ls="none", label="end")
        ax.set_title("centre-of-mass paths, plan view", fontsize=10)
        return
    from matplotlib.collections import LineCollection

    ax.add_collection(LineCollection(np.swapaxes(xy, 0, 1), colors="0.6", linewidths=0.6, zorder=2))
    ax.scatter(xy[0, :, 0], xy[0, :, 1], s=8, facecolors="none", edgecolors="0.5", lw=0.6, zorder=3, label="start")
    ax.scatter(xy[-1, :, 0], xy[-1, :, 1], s=5, color="0.35", zorder=3, label="end")
    travelled = np.nansum(np.linalg.norm(np.diff(xy, axis=0), axis=2), axis=0)
    for rank, b in enumerate(np.argsort(-travelled, kind="stable")[:NAMED]):
        label = f"{trajectory.body_names[b]} ({travelled[b]:.3g} m)"
        ax.plot(xy[:, b, 0], xy[:, b, 1], color=f"C{rank + 1}", lw=1.4, zorder=4, label=label)
    ax.autoscale_view()
    ax.set_title(
        _wrapped(f"centre-of-mass paths, plan view: {bodies} bodies (grey), the {NAMED} that travelled furthest named"),
        fontsize=9.5,
    )


def plot_run(trajectory, path, title: str = ""):
    """Six panels of a run: centre-of-mass paths (plan view), normal force, friction force, slip
    speed and gap per contact, and the mechanical energy; the title carries ``title`` (e.g. the
    scene and friction model) and the run's step size and position update from
    ``trajectory.parameters``. Up to :data:`FEW` bodies and contacts each is drawn and named;
    beyond, aggregates (grey paths; min-max bands, median and a percentile over the contacts)
    with the :data:`NAMED` that stand out named, so the figure reads the same for 4 bodies or
    1,000. Writes ``path``; returns the (closed) matplotlib Figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = trajectory.t
    parameters = trajectory.parameters or {}
    count = trajectory.contact_normal_force.shape[1] if trajectory.contact_normal_force.ndim == 2 else 0
    names = contact_names(parameters, count)
    fig, axes = plt.subplots(2, 3, figsize=(14, 7.6), layout="constrained")
    ax_path, ax_normal, ax_friction = axes[0]
    ax_slip, ax_energy, ax_gap = axes[1]

    _plot_paths(ax_path, trajectory)
    ax_path.set_xlabel("x (m)")
    ax_path.set_ylabel("y (m)")
    ax_path.set_aspect("equal", adjustable="datalim")

    panels = [
        (ax_normal, trajectory.contact_normal_force if count else None, "N", False),
        (ax_friction, np.linalg.norm(trajectory.contact_friction_force, axis=2) if count else None, "N", False),
        (ax_slip, np.linalg.norm(trajectory.contact_slip_velocity, axis=2) if count else None, "m/s", False),
        (ax_gap, trajectory.contact_gap if count else None, "m", True),
    ]
    for ax, values, unit, lowest in panels:
        if not count:
            continue
        if count <= FEW:
            _plot_contacts(ax, t, [values[:, c] for c in range(count)], unit)
        else:
            _aggregate_contacts(ax, t, values, names, lowest)
            what = "the 3 deepest" if lowest else f"the {NAMED} largest"
            ax.set_title(f"{count} contacts: band, median, percentile; {what} named", fontsize=8.5)
    ax_normal.set_ylabel("normal force λ_N (N)")
    ax_friction.set_ylabel("friction force |λ_T| (N)")
    ax_slip.set_ylabel("slip speed |v_T| (m/s)")
    ax_gap.set_ylabel("gap Φ at the step start (m)")
    ax_gap.axhline(0.0, color="k", lw=0.6, zorder=1)

    ax_energy.plot(t, trajectory.energy, color="C0", lw=1.5, label="mechanical energy E")
    initial = getattr(trajectory, "initial_energy", None)
    if initial is not None and np.size(initial) == 1 and np.isfinite(float(initial)):
        ax_energy.axhline(float(initial), color="0.4", ls=":", lw=1.2, label=f"E(0) = {float(initial):.4g} J")
    ax_energy.set_ylabel("mechanical energy E (J)")

    for ax in axes.flat:
        ax.grid(alpha=0.3)
        ax.ticklabel_format(axis="both", style="sci", scilimits=(-3, 4), useOffset=False)  # no "+1.127" offsets
        if ax is not ax_path:
            ax.set_xlabel("time t (s)")
    ax_path.legend(fontsize=8, framealpha=0.9)
    ax_energy.legend(fontsize=8, framealpha=0.9)
    if 0 < count <= FEW:  # one legend for the four contact panels, below the figure
        from matplotlib.lines import Line2D

        handles = [Line2D([], [], **_contact_style(c)) for c in range(count)]
        fig.legend(
            handles,
            names,
            loc="outside lower center",
            ncol=min(count, 4),
            fontsize=9,
            frameon=False,
            title="normal force, friction force, slip speed and gap of each contact "
            "(where curves overlap, later contacts are drawn on top):",
            title_fontsize=9,
        )
    scene = parameters.get("scene", {}).get("name") if isinstance(parameters.get("scene"), dict) else None
    heading = title or (scene or "")
    model = (parameters.get("friction") or {}).get("model", "") if isinstance(parameters.get("friction"), dict) else ""
    settings = run_settings(
        parameters, include_step=not re.search(r"\bh\s*=", heading), include_friction=not (model and model in heading)
    )
    fig.suptitle("\n".join(line for line in (heading, settings) if line), fontsize=11)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return fig
