"""A sweep's table (:mod:`lcpdyn.sweep`): its records as an xarray Dataset over the grid, saved as
netCDF, loaded back, and drawn as heat maps or lines."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

from . import __version__
from .sweep_spec import METRICS, NOT_RUN, REFERENCE_METRICS, RUN_FIELDS, SweepSpec, _reference_label


# --- the table ------------------------------------------------------------------------------------
def _dataset(spec: SweepSpec, records: dict, references: dict):
    """The ``xarray.Dataset`` of a sweep from its records (missing runs ``not run``)."""
    import xarray as xr

    option_keys = list(spec.options)
    run_dims = ["friction", "dt", *option_keys]
    coords = {"friction": list(spec.friction), "dt": list(spec.dt)}
    coords.update({k: list(v) for k, v in spec.options.items()})
    points = spec.scene_points()
    if spec.points is not None:
        point_dims = ["point"]
        coords["point"] = np.arange(len(points))
        point_coords = {k: ("point", [p[k] for p in points]) for k in points[0]}
        point_index = {i: (i,) for i in range(len(points))}
    else:
        point_dims = list(spec.grid)
        coords.update({k: list(v) for k, v in spec.grid.items()})
        point_coords = {}
        point_index = {i: tuple(spec.grid[k].index(p[k]) for k in point_dims) for i, p in enumerate(points)}
    shape = tuple(len(coords[d]) for d in run_dims + point_dims)
    point_shape = tuple(len(coords[d]) for d in point_dims)
    data = {name: np.full(shape, np.nan) for name in (*METRICS, "wall_s")}
    counts = {name: np.full(shape, -1, np.int64) for name in RUN_FIELDS if name != "wall_s"}
    text = {
        name: np.full(shape, "" if name != "status" else NOT_RUN, dtype=object)
        for name in ("status", "reason", "worker")
    }
    for run in spec.runs():
        record = records.get(spec.run_key(run))
        if record is None:
            continue
        where = (
            spec.friction.index(run["friction"]),
            spec.dt.index(run["dt"]),
            *(spec.options[k].index(run[k]) for k in option_keys),
            *point_index[run["point"]],
        )
        for name, value in record.get("metrics", {}).items():
            if name in data:
                data[name][where] = value
        data["wall_s"][where] = record.get("wall_s", np.nan)
        for name in counts:
            counts[name][where] = record.get(name, -1)
        for name in text:
            text[name][where] = record.get(name, "")
    dims = run_dims + point_dims
    variables = {name: (dims, values) for name, values in data.items()}
    variables.update({name: (dims, values) for name, values in counts.items()})
    variables.update({name: (dims, values.astype(str)) for name, values in text.items()})
    reference_data = {f"reference_error_{name}": np.full(point_shape, np.nan) for name in REFERENCE_METRICS}
    reference_status = np.full(point_shape, NOT_RUN, dtype=object)
    reference_wall = np.full(point_shape, np.nan)
    for i, entry in references.items():
        if i >= len(points):
            continue
        reference_status[point_index[i]] = entry.get("status", NOT_RUN) if entry.get("status") else NOT_RUN
        reference_wall[point_index[i]] = entry.get("wall_s", np.nan)
        for name in REFERENCE_METRICS:
            reference_data[f"reference_error_{name}"][point_index[i]] = entry.get("error", {}).get(name, np.nan)
    variables.update({name: (point_dims, values) for name, values in reference_data.items()})
    variables["reference_status"] = (point_dims, reference_status.astype(str))
    variables["reference_wall_s"] = (point_dims, reference_wall)
    dataset = xr.Dataset(variables, coords={**coords, **point_coords})
    dataset.attrs.update(
        {
            "scene": spec.scene,
            "reference": _reference_label(spec.reference),
            "t_end": spec.t_end,
            "sweep": spec.to_json(),
            "lcpdyn_version": __version__,
            "runs": len(spec.runs()),
            "completed": int(np.count_nonzero(text["status"] == "completed")),
            "failed": int(np.count_nonzero(text["status"] == "failed")),
        }
    )
    for name in METRICS:
        dataset[name].attrs["description"] = "lcpdyn.metrics.summary against the reference (lcpdyn.sweep)"
    return dataset


def _save(dataset, directory) -> Path | None:
    """``directory/sweep.nc`` written atomically (a temporary file renamed onto it)."""
    if directory is None:
        return None
    path = Path(directory) / "sweep.nc"
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=".sweep.nc.", suffix=".tmp")
    os.close(handle)
    try:
        dataset.to_netcdf(temporary, engine="h5netcdf")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def load_sweep(path):
    """A saved sweep table (``sweep.nc``, or the results directory holding it), loaded into memory."""
    import xarray as xr

    path = Path(path)
    if path.is_dir():
        path = path / "sweep.nc"
    if not path.is_file():
        raise ValueError(f"sweep: no sweep table at {str(path)!r}")
    try:
        with xr.open_dataset(path, engine="h5netcdf") as dataset:
            loaded = dataset.load()
    except (OSError, ValueError) as exc:
        raise ValueError(f"sweep: {str(path)!r} is not a readable sweep table: {exc}") from None
    if "sweep" not in loaded.attrs:
        raise ValueError(f"sweep: {str(path)!r} is a netCDF file but not an lcpdyn sweep table (no 'sweep' attribute)")
    return loaded


# --- figures --------------------------------------------------------------------------------------
METRIC_LABELS = {
    "force_rms_deviation_percent": "force RMS deviation (% of mu lam_N)",
    "force_rms_deviation_sliding_percent": "force RMS deviation, sliding (% of mu lam_N)",
    "misalignment_rms_deg": "RMS misalignment of friction and slip (deg)",
    "static_force_ratio_max": "largest static |lam_T| / (mu_s lam_N)",
    "position_error_final": "final position error (relative)",
    "position_error_max": "largest position error (relative)",
    "position_error_final_per_path": "final position error / path length",
    "energy_error_final_J": "final energy error (J)",
    "energy_error_max_abs_J": "largest |energy error| (J)",
    "energy_error_max_relative": "largest |energy error| (relative)",
    "first_roll_s": "first slide-to-roll time (s)",
    "first_roll_error_s": "|first slide-to-roll time - reference's| (s)",
    "wall_s": "wall time per run (s)",
}


def _tick(value) -> str:
    return f"{value:g}" if isinstance(value, (float, np.floating)) else str(value)


def plot_sweep(dataset, metric: str, x: str, y: str | None = None, path=None, select: dict | None = None):
    """A figure of ``metric`` over swept parameters, one panel per friction model: a heat map over
    ``x`` and ``y`` (the value written in each cell, one colour scale for all panels; runs that
    failed or did not run hatched in red and labelled), or, with ``y=None``, a line over ``x``
    (one line per value of one more swept dimension, if there is one; failed runs marked x). A
    cell is starred where the reference's own error estimate (``reference_error_<metric>``)
    exceeds :data:`lcpdyn.compare.REFERENCE_ERROR_FRACTION` of its value (the comparison's own
    rule): the reference does not resolve it.
    Every other swept dimension must have one value or be fixed by ``select`` (dimension ->
    value). Returns the figure; saved to ``path`` if given."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    from .compare import REFERENCE_ERROR_FRACTION as REFERENCE_FRACTION

    if metric not in dataset.data_vars:
        raise ValueError(f"plot_sweep: unknown metric {metric!r}; choose from {sorted(dataset.data_vars)}")
    values, status = dataset[metric], dataset["status"]
    if select:
        unknown = sorted(set(select) - set(values.dims))
        if unknown:
            raise ValueError(f"plot_sweep: select names {unknown}, not dimensions of {metric}: {values.dims}")
        values, status = values.sel(select), status.sel(select)
    wanted = [d for d in (x, y) if d is not None]
    for d in wanted:
        if d not in values.dims or d == "friction":
            raise ValueError(f"plot_sweep: {d!r} is not a swept dimension of {metric}: {values.dims}")
    extra = [d for d in values.dims if d not in (*wanted, "friction") and values.sizes[d] > 1]
    group = None
    if y is None and len(extra) == 1:
        group = extra.pop()
    if extra:
        raise ValueError(f"plot_sweep: fix the other swept dimensions {extra} with select= (dimension -> value)")
    keep = (*wanted, "friction") + ((group,) if group else ())
    values = values.squeeze([d for d in values.dims if d not in keep], drop=True)
    status = status.squeeze([d for d in status.dims if d not in keep], drop=True)
    label = METRIC_LABELS.get(metric, metric)
    models = list(values["friction"].values)
    fig, axes = plt.subplots(1, len(models), figsize=(4.4 * len(models) + 1.2, 3.9), squeeze=False, sharey=True)
    finite = np.asarray(values.values, float)
    finite = finite[np.isfinite(finite)]
    low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    image, unresolved = None, 0
    for ax, model in zip(axes[0], models):
        v, s = values.sel(friction=model), status.sel(friction=model)
        if y is None:
            lines = (
                [(None, v, s)]
                if group is None
                else [(g, v.sel({group: g}), s.sel({group: g})) for g in v[group].values]
            )
            for g, vv, ss in lines:
                xs = np.asarray(vv[x].values)
                (line,) = ax.plot(xs, vv.values, "o-", label=None if g is None else f"{group} = {_tick(g)}")
                bad = ss.values != "completed"
                if bad.any():
                    ax.plot(xs[bad], np.full(bad.sum(), low), "x", color="red", ms=9, mew=2)
            if group is not None:
                ax.legend(fontsize=8)
            ax.grid(alpha=0.3)
        else:
            v, s = v.transpose(y, x), s.transpose(y, x)
            own = None
            if f"reference_error_{metric}" in dataset.data_vars:
                own = dataset[f"reference_error_{metric}"]
                own = own.sel({k: val for k, val in (select or {}).items() if k in own.dims})
                own = own.squeeze([d for d in own.dims if d not in (x, y)], drop=True)
                own = own.broadcast_like(v).transpose(y, x)
            grid = np.asarray(v.values, float)
            image = ax.imshow(grid, origin="lower", aspect="auto", vmin=low, vmax=high, cmap="viridis")
            ax.set_xticks(range(v.sizes[x]), [_tick(c) for c in v[x].values])
            ax.set_yticks(range(v.sizes[y]), [_tick(c) for c in v[y].values])
            for (j, i), value in np.ndenumerate(grid):
                if s.values[j, i] != "completed":
                    ax.add_patch(plt.Rectangle((i - 0.5, j - 0.5), 1, 1, fill=False, hatch="xx", color="red", lw=0))
                    ax.text(i, j, s.values[j, i], ha="center", va="center", fontsize=8, color="red",
                            bbox={"facecolor": "white", "edgecolor": "none", "pad": 1})  # fmt: skip
                else:
                    shade = (value - low) / (high - low) if high > low else 0.0
                    mark = "*" if own is not None and own.values[j, i] > REFERENCE_FRACTION * abs(value) else ""
                    unresolved += bool(mark)
                    ax.text(i, j, f"{value:.3g}{mark}", ha="center", va="center", fontsize=8,
                            color="black" if shade > 0.6 else "white")  # fmt: skip
        ax.set_xlabel(x)
        ax.set_title(model)
    axes[0][0].set_ylabel(label if y is None else y)
    if image is not None:
        fig.colorbar(image, ax=list(axes[0]), label=label, shrink=0.9)
    fig.suptitle(
        f"{dataset.attrs.get('scene', '')}: {label}, against {dataset.attrs.get('reference', '')}"
        + ("" if not select else " (" + ", ".join(f"{k} = {_tick(v)}" for k, v in select.items()) + ")"),
        y=1.03,
    )
    if unresolved:
        fig.text(
            0.5, -0.04, f"* the reference's own error estimate exceeds {100 * REFERENCE_FRACTION:g} % of the value: "
            "the reference does not resolve it (lcpdyn.compare.reference_error)", ha="center", fontsize=8,
        )  # fmt: skip
    if path is not None:
        fig.savefig(path, dpi=120, bbox_inches="tight")
    return fig
