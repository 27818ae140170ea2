"""The figures of a friction-model comparison (:func:`lcpdyn.compare.compare`): Peiret 2016's
Figs. 4-5 -- the force deviation and misalignment against the exact reference over time, the
energies, the slip and the contact forces -- one PNG per figure, with the overlapping curves
named where they coincide."""

from __future__ import annotations

import math

import numpy as np

from . import metrics
from .compare import UPDATE_LABELS, _indeterminate_steps, _reference_name

__all__ = ["write_figures"]


# --- figures -----------------------------------------------------------------------------------
def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:g} ms"


def _names(result: dict) -> dict:
    """Legend names of the runs: the physical model and its step."""
    runs = result["runs"]
    directions = runs["polygonal"].parameters.get("friction", {}).get("directions") if "polygonal" in runs else None
    h, h_ref = _ms(result["dt"]), _ms(result["reference_dt"])
    return {
        "coulomb-reference": f"{_reference_name(result, h_ref)} (reference)",
        "coulomb": f"exact Coulomb, h = {h}",
        "regularized": f"regularized (Peiret 2016), h = {h}",
        "polygonal": (f"polygonal cone{'' if directions is None else f', k = {directions}'} (Anitescu-Potra), h = {h}"),
        "box": f"box (Lacoursière), h = {h}",
    }


_SHORT = {
    "coulomb-reference": "Coulomb ref.",
    "coulomb": "Coulomb h",
    "regularized": "regularized",
    "polygonal": "polygonal",
    "box": "box",
}
# colour, line width, dash pattern, z-order, alpha. The reference is a wide translucent band at the
# bottom; the models are drawn above it in the order polygonal (often chattering), box,
# regularized, Coulomb at the model step, and the upper ones are dashed or dotted so that a curve
# lying on another leaves it visible between the dashes.
_STYLES = {
    "coulomb-reference": ("k", 3.5, "-", 1, 0.28),
    "polygonal": ("C1", 1.0, "-", 2, 0.75),
    "box": ("C2", 1.2, (0, (5, 2)), 3, 0.9),
    "regularized": ("C0", 1.2, (0, (1.5, 1.5)), 4, 1.0),
    "coulomb": ("k", 0.9, (0, (6, 2, 1, 2)), 5, 0.9),
}
_MARKERS = {"coulomb": "x", "regularized": "o", "polygonal": "s", "box": "^"}
_ORDER = ("regularized", "polygonal", "box", "coulomb")


def _suptitle(result: dict, what: str) -> str:
    contacts = result.get("contacts") or [None]
    where = (
        f"\nfriction: aggregate of {len(contacts)} contacts, weighted by normal impulse $h\\lambda_N$"
        if len(contacts) > 1
        else ""
    )
    return (
        f"{result['scene']}: {what}\nposition update: {UPDATE_LABELS.get(result['position_update'])}; "
        f"reference: {_reference_name(result, _ms(result['reference_dt']))}; models: h = {_ms(result['dt'])}; "
        f"t_end = {result['t_end']:g} s{where}"
    )


def _overlaps(series: dict, span: float, tolerance: float = 0.005) -> list[tuple[list[str], float]]:
    """Curves lying on top of each other: (names, fraction) for every group of curves (name -> values
    on one common time grid, NaN where undefined) that stay within ``tolerance`` times the axis
    ``span`` of each other in a ``fraction`` >= 1/2 of the steps where all of them are defined;
    nested groups are listed from the most to the least often coinciding."""
    names = list(series)
    pairs = {}
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            both = np.isfinite(series[a]) & np.isfinite(series[b])
            if both.any():
                pairs[a, b] = float(np.mean(np.abs(series[a][both] - series[b][both]) <= tolerance * span))
    out, seen = [], set()
    for level in sorted({f for f in pairs.values() if f >= 0.5}, reverse=True):
        parent = {n: n for n in names}

        def root(n):
            while parent[n] != n:
                n = parent[n]
            return n

        for (a, b), fraction in pairs.items():
            if fraction >= level:
                parent[root(b)] = root(a)
        groups = {}
        for n in names:
            groups.setdefault(root(n), []).append(n)
        for group in groups.values():
            if len(group) < 2 or frozenset(group) in seen:
                continue
            seen.add(frozenset(group))
            stack = np.stack([series[n] for n in group])
            defined = np.all(np.isfinite(stack), axis=0)
            spread = np.ptp(stack[:, defined], axis=0)
            out.append((group, float(np.mean(spread <= tolerance * span)) if spread.size else 0.0))
    return out


def _overlap_text(series: dict, span: float, log: bool = False, width: int | None = None, short: bool = False) -> str:
    """'on top of each other ...: A = B everywhere; ...' for ``_overlaps``, '' if none."""
    if log:
        series = {k: np.log10(np.where(v > 0, v, np.nan)) for k, v in series.items()}
    groups = _overlaps(series, span)
    if not groups:
        return ""
    parts = [
        " = ".join(_SHORT[n] for n in group)
        + (" everywhere" if fraction == 1.0 else f" in {min(100 * fraction, 99.9):.3g} % of steps")
        for group, fraction in groups
    ]
    text = (
        "on top of each other (within 0.5 % of the axis): "
        if short
        else "on top of each other (within 0.5 % of the axis; the dashes show the lower ones): "
    ) + "; ".join(parts)
    if width:
        import textwrap

        text = "\n".join(textwrap.wrap(text, width))
    return text


def _note_overlaps(ax, series: dict, span: float, log: bool = False) -> None:
    """Name, above ``ax``, the curves that lie on top of each other."""
    text = _overlap_text(series, span, log, width=125)
    if text:
        ax.set_title(text, loc="left", fontsize=7, color="0.25")


def _shade_indeterminate(ax, result: dict, label: bool) -> None:
    """Grey bands where the reference sticks on redundant loaded contacts (``_indeterminate_steps``)."""
    if len(result.get("contacts") or []) < 2:
        return
    mask = _indeterminate_steps(result)
    if not mask.any():
        return
    t = result["runs"]["coulomb-reference"].t
    h = result["reference_dt"]
    edges = np.flatnonzero(np.diff(np.concatenate([[0], mask.astype(int), [0]])))
    for k, (start, stop) in enumerate(zip(edges[::2], edges[1::2])):
        ax.axvspan(
            t[start] - h,
            t[stop - 1],
            color="0.88",
            zorder=0,
            lw=0,
            label="all contacts stick on redundant supports:\nfriction statically indeterminate"
            if label and k == 0
            else None,
        )


def _rms_panel(
    ax, values: dict, published: dict | None, unit: str, title: str, h: str, sliding: dict | None = None
) -> None:
    """Side panel: per model our RMS over the whole run (filled bar), over the reference's sliding
    phase (light bar, if ``sliding``) and Peiret 2016's published value (hatched, where given)."""
    from matplotlib.patches import Patch

    order = [n for n in _ORDER if n in values]
    kinds = (
        [("all", values)] + ([("sliding", sliding)] if sliding else []) + ([("paper", published)] if published else [])
    )
    width = 0.8 / len(kinds)
    numbers = [v for _, d in kinds for v in d.values() if v is not None and np.isfinite(v)]
    top = max(numbers) if numbers and max(numbers) > 1e-6 else 1.0
    for k, name in enumerate(order):
        color = _STYLES[name][0] if name != "coulomb" else "0.35"
        for j, (kind, data) in enumerate(kinds):
            value = data.get(name)
            if value is None or not np.isfinite(value):
                continue
            x = k + (j - (len(kinds) - 1) / 2) * width
            style = {
                "all": {"color": color},
                "sliding": {"color": color, "alpha": 0.4},
                "paper": {"facecolor": "white", "edgecolor": color, "hatch": "////"},
            }[kind]
            ax.bar(x, value, width, zorder=3, **style)
            ax.text(
                x,
                value + 0.02 * top,
                f"{value:.2f}" if kind != "paper" else f"{value:g}",
                ha="center",
                va="bottom",
                fontsize=6.5,
                rotation=90,
                style="italic" if kind == "paper" else "normal",
            )
    ax.set_xticks(range(len(order)))
    ax.set_xticklabels(
        [_SHORT[n] if n != "coulomb" else f"Coulomb\nh = {h}" for n in order],
        fontsize=7,
        rotation=60,
        ha="right",
        rotation_mode="anchor",
    )
    ax.set_xlim(-0.6, len(order) - 0.4)
    ax.set_ylim(0, (1.3 + 0.12 * len(kinds)) * top)
    ax.set_ylabel(f"RMS ({unit})")
    ax.set_title(title, fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    handles = [Patch(facecolor="0.35", label="this run")]
    if sliding:
        handles.append(Patch(facecolor="0.35", alpha=0.4, label="this run, sliding phase"))
    if published:
        handles.append(Patch(facecolor="white", edgecolor="0.3", hatch="////", label="Peiret 2016"))
    ax.legend(handles=handles, fontsize=6.5, loc="upper center", frameon=False)


def _energy_unit(values) -> tuple[float, str]:
    """(scale, unit) for an energy axis: J, mJ, uJ or nJ after the largest |value|."""
    largest = float(np.max(np.abs(values))) if np.size(values) else 0.0
    for scale, unit in ((1.0, "J"), (1e-3, "mJ"), (1e-6, "µJ")):
        if largest >= 0.1 * scale:
            return scale, unit
    return 1e-9, "nJ"


def write_figures(result: dict, prefix) -> list[str]:
    """Fig. 4 (``prefix``-fig4-normalized-force.png), Fig. 5 (``prefix``-fig5-errors.png) and, with
    several contacts, ``prefix``-contacts.png (normal force and normalized friction force of each
    contact). Titles name the position update, the reference's step and the models' step; side
    panels set our RMS values beside the paper's where :data:`PAPER` applies; curves that lie on
    top of each other are named above their panel."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs, threshold = result["runs"], result["velocity_threshold"]
    reference = runs["coulomb-reference"]
    names = _names(result)
    published = result.get("paper")
    h = _ms(result["dt"])
    models = [n for n in ("polygonal", "box", "regularized") if n in runs]  # drawing order, bottom to top
    several = len(result.get("contacts") or [0]) > 1
    grid_t = runs[models[0] if models else "coulomb"].t
    paths = []

    def draw(ax, name, t, y):
        color, width, dashes, order, alpha = _STYLES[name]
        return ax.plot(t, y, color=color, lw=width, ls=dashes, zorder=order, alpha=alpha, label=names[name])

    # --- Fig. 4: normalized friction force --------------------------------------------------------
    fig, (ax, side) = plt.subplots(1, 2, figsize=(10.5, 5.2), gridspec_kw={"width_ratios": [5, 1.3]})
    curves = {}
    for name in ["coulomb-reference"] + models:
        f = metrics.normalized_friction_force(runs[name])
        draw(ax, name, runs[name].t, f)
        curves[name] = f if name != "coulomb-reference" else metrics.on_grid(grid_t, reference.t, f)
    _shade_indeterminate(ax, result, label=True)
    values = np.concatenate([c[np.isfinite(c)] for c in curves.values()])
    top = float(np.clip(1.1 * np.percentile(values, 99.9), 1.6, 3.0)) if values.size else 1.6
    ax.set_ylim(0, top)
    clipped = int(np.sum(values > top))
    if clipped:
        ax.text(
            0.99,
            0.98,
            f"{clipped} value{'s' if clipped > 1 else ''} above {top:.2g} not shown",
            transform=ax.transAxes,
            ha="right",
            va="top",
            fontsize=7,
        )
    ax.axhline(1.0, color="0.45", lw=0.6, ls=":", zorder=0)
    for name in models:  # the static force outside the cone (metrics.static_force_ratio), marked
        ratio = result.get("static_force_ratio", {}).get(name)
        if ratio and np.isfinite(ratio["max"]) and ratio["max"] > 1.0 + 1e-9:
            ax.plot(
                [ratio["t_max"]], [min(ratio["max"], top)], marker="v", color=_STYLES[name][0], ms=7, ls="none",
                zorder=10, label=f"{names[name]} sticking at {ratio['max']:.3f} μ_s λ_N (t = {ratio['t_max']:.4g} s, "
                f"{ratio['steps_outside']} steps outside the cone)",
            )  # fmt: skip
    _note_overlaps(ax, curves, top)
    ax.set_xlabel("time t (s)")
    ax.set_ylabel(
        r"$\Sigma_i\,|\lambda_{T,i}|/\mu_i \;/\; \Sigma_i\,\lambda_{N,i}$ (–)"
        if several
        else r"normalized friction force $|\lambda_T| / (\mu\lambda_N)$ (–)"
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, frameon=False)
    _rms_panel(
        side,
        {n: result["metrics"][n]["force_rms_deviation_percent"] for n in result["metrics"]},
        {n: v["force_rms_deviation_percent"] for n, v in published.items()} if published else None,
        "%",
        "force RMS deviation\nvs reference",
        h,
        sliding={n: result["metrics"][n]["force_rms_deviation_sliding_percent"] for n in result["metrics"]},
    )
    fig.suptitle(_suptitle(result, "normalized friction force (cf. Peiret 2016 Fig. 4)"), fontsize=9)
    fig.tight_layout()
    path = f"{prefix}-fig4-normalized-force.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    paths.append(path)

    # --- Fig. 5: position, energy, misalignment ---------------------------------------------------
    fig = plt.figure(figsize=(10.5, 10))
    grid = fig.add_gridspec(3, 2, width_ratios=[5, 1.3])
    axes = [fig.add_subplot(grid[0, 0])]
    axes += [fig.add_subplot(grid[k, 0], sharex=axes[0]) for k in (1, 2)]
    legend_axis = fig.add_subplot(grid[0:2, 1])
    legend_axis.axis("off")
    side = fig.add_subplot(grid[2, 1])
    fifth = [n for n in ("polygonal", "box", "regularized", "coulomb") if n in runs]
    position, energy, angles, handles = {}, {}, {}, []
    for name in fifth:
        t, error = metrics.position_error(runs[name], reference)
        position[name] = error
        (line,) = draw(axes[0], name, t, error)
        t, difference, _ = metrics.energy_error(runs[name], reference)
        energy[name] = difference
        t, angle = metrics.misalignment_angles(runs[name], threshold)
        color, _, _, order, _ = _STYLES[name]
        hollow = name in ("coulomb", "regularized")
        axes[2].plot(
            t,
            angle,
            _MARKERS[name],
            color=color,
            ms=3.0 if hollow else 1.8,
            mew=0.6,
            mfc="none" if hollow else color,
            zorder=order,
            ls="none",
        )
        full = np.full(runs[name].t.shape, np.nan)
        full[np.searchsorted(runs[name].t, t)] = angle
        angles[name] = full
        line.set_marker(_MARKERS[name])
        line.set_markevery([])  # the marker shows in the legend only
        handles.append(line)
    positive = np.concatenate([v[np.isfinite(v) & (v > 0)] for v in position.values()])
    if positive.size and positive.max() > 20 * positive.min():
        axes[0].set_yscale("log")
        _note_overlaps(axes[0], position, float(np.log10(positive.max() / positive.min())), log=True)
    else:
        _note_overlaps(axes[0], position, float(np.ptp(positive)) if positive.size else 1.0)
    axes[0].set_ylabel("position error\n" + r"$|x - x_{ref}|\,/\,|x_{ref} - x_{ref}(0)|$ (–)")
    energies = np.concatenate([v[np.isfinite(v)] for v in energy.values()])
    scale, unit = _energy_unit(energies)
    energy = {name: values / scale for name, values in energy.items()}
    for name, values in energy.items():
        draw(axes[1], name, runs[name].t, values)
    energies = energies / scale
    _note_overlaps(axes[1], energy, float(np.ptp(energies)) if energies.size and np.ptp(energies) > 0 else 1.0)
    axes[1].set_ylabel(f"energy error $E - E_{{ref}}$ ({unit})")
    all_angles = np.concatenate([v[np.isfinite(v)] for v in angles.values()])
    high = max(5.0, 1.08 * float(all_angles.max())) if all_angles.size else 5.0
    axes[2].set_ylim(-0.02 * high, high)
    _note_overlaps(axes[2], angles, 1.02 * high)
    axes[2].set_ylabel("misalignment\n" + r"$\angle(\lambda_T, -v_T)$ (°)")
    axes[2].set_xlabel("time t (s)")
    for ax in axes:
        ax.grid(alpha=0.3)
        _shade_indeterminate(ax, result, label=False)
    for ax in axes[:2]:
        plt.setp(ax.get_xticklabels(), visible=False)
    labels = [names[n] for n in fifth]
    if several and _indeterminate_steps(result).any():
        from matplotlib.patches import Patch

        handles.append(Patch(color="0.88"))
        labels.append("all contacts stick on redundant supports:\nfriction statically indeterminate")
    legend_axis.legend(
        handles=handles,
        labels=labels,
        fontsize=7,
        loc="upper left",
        title="against " + names["coulomb-reference"].replace(" (reference)", ""),
        title_fontsize=7,
        frameon=False,
    )
    _rms_panel(
        side,
        {n: result["metrics"][n]["misalignment_rms_deg"] for n in result["metrics"]},
        {n: v["misalignment_rms_deg"] for n, v in published.items()} if published else None,
        "°",
        "misalignment RMS",
        h,
    )
    fig.suptitle(_suptitle(result, "errors against the reference (cf. Peiret 2016 Fig. 5)"), fontsize=9)
    fig.tight_layout()
    path = f"{prefix}-fig5-errors.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    paths.append(path)

    if several:
        paths.append(_contact_figure(result, prefix, names, draw, plt))
    return paths


def _contact_figure(result, prefix, names, draw, plt) -> str:
    """Per contact: lam_N,i (N) and f_i = |lam_T,i| / (mu_i lam_N,i) of every run."""
    runs, contacts = result["runs"], result["contacts"]
    order = ["coulomb-reference"] + [n for n in ("polygonal", "box", "regularized", "coulomb") if n in runs]
    count = len(contacts)
    columns = min(count, 4)
    rows = 2 * math.ceil(count / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(3.2 * columns + 1, 3.0 * rows + 0.8), sharex=True, squeeze=False)
    largest = max(float(np.max(runs[name].contact_normal_force)) for name in order)
    grid_t = runs[order[1] if len(order) > 1 else order[0]].t
    for i, contact in enumerate(contacts):
        top, bottom = axes[2 * (i // columns), i % columns], axes[2 * (i // columns) + 1, i % columns]
        above, curves = 0, {}
        for name in order:
            run = runs[name]
            draw(top, name, run.t, run.contact_normal_force[:, i])
            f = metrics.normalized_friction_force(run, contact=i)
            above += int(np.sum(f > 2.0))
            draw(bottom, name, run.t, f)
            curves[name] = f if run is not runs["coulomb-reference"] else metrics.on_grid(grid_t, run.t, f)
        top.set_ylim(-0.03 * largest, 1.08 * largest)
        bottom.set_ylim(0, 2.0)
        note = _overlap_text(curves, 2.0, width=52, short=True)
        if note:
            bottom.set_title(note, loc="left", fontsize=6.5, color="0.25")
        if above:
            bottom.text(
                0.98,
                0.97,
                f"{above} value{'s' if above > 1 else ''} above 2 not shown",
                transform=bottom.transAxes,
                ha="right",
                va="top",
                fontsize=7,
            )
        top.set_title(f"#{i}: {contact['label']}", fontsize=8)
        top.set_ylabel(rf"normal force $\lambda_{{N,{i}}}$ (N)", fontsize=8)
        bottom.set_ylabel(rf"$|\lambda_{{T,{i}}}| / (\mu_{{{i}}}\lambda_{{N,{i}}})$ (–)", fontsize=8)
        bottom.set_xlabel("time t (s)")
        for ax in (top, bottom):
            ax.grid(alpha=0.3)
            _shade_indeterminate(ax, result, label=False)
    for j in range(count, (rows // 2) * columns):
        axes[2 * (j // columns), j % columns].axis("off")
        axes[2 * (j // columns) + 1, j % columns].axis("off")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(
        handles,
        labels,
        fontsize=7,
        loc="lower center",
        ncol=min(len(labels), 3),
        frameon=False,
        title="upper curves dashed or dotted, so that curves beneath them show",
        title_fontsize=7,
    )
    fig.suptitle(
        f"{result['scene']}: each contact alone (the rigid model leaves the load sharing of redundant "
        f"contacts indeterminate; grey: all contacts stick)\nposition update: "
        f"{UPDATE_LABELS.get(result['position_update'])}; reference: exact Coulomb, "
        f"h = {_ms(result['reference_dt'])}; models: h = {_ms(result['dt'])}",
        fontsize=9,
    )
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    path = f"{prefix}-contacts.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
