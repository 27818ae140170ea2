"""Root loci: eigenvalues of Schwab–Meijaard 2003 Eq. (29) over a parameter sweep.

A stability scene (see :mod:`scenes`) provides ``system()`` (a :class:`MinimalSystem`),
``nominal(p) -> x0`` (the steady motion for parameters p) and ``SWEEP`` (the default parameter
and range). :func:`root_locus` linearizes at every value (one JAX compilation for the sweep).
"""
from __future__ import annotations

import json

import numpy as np

from . import __version__

__all__ = ["root_locus", "parse_sweep", "plot_root_locus", "write_root_locus"]


def parse_sweep(text: str) -> tuple[str, np.ndarray]:
    """``"name=start:stop:count"`` -> (name, values)."""
    try:
        name, spec = text.split("=", 1)
        start, stop, count = spec.split(":")
        start, stop, count = float(start), float(stop), int(count)
    except ValueError:
        raise ValueError(f"--param expects NAME=START:STOP:COUNT, got {text!r}") from None
    if count < 2 or not (np.isfinite(start) and np.isfinite(stop)):
        raise ValueError(f"--param needs finite bounds and COUNT >= 2, got {text!r}")
    return name.strip(), np.linspace(start, stop, count)


def root_locus(module, name: str, values, **fixed) -> dict:
    """Eigenvalues (len(values), state size) at each value of parameter ``name``, sorted by
    real part then imaginary part; plus the parameters used."""
    system = module.system()
    rows = []
    for value in values:
        p = dict(fixed, **{name: float(value)})
        linear = system.linearize(module.nominal(system.params(**p)), **p)
        rows.append(np.array(sorted(linear.eigenvalues, key=lambda z: (round(z.real, 12), z.imag))))
    return {"scene": module.NAME, "parameter": name, "values": np.asarray(values, float),
            "eigenvalues": np.array(rows), "fixed": fixed, "defaults": system.parameters}


def plot_root_locus(result: dict, path, scale: float = 1.0) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    values, eigenvalues = result["values"], result["eigenvalues"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    for j in range(eigenvalues.shape[1]):
        axes[0].plot(values, eigenvalues[:, j].real / scale, "b.", ms=2)
        axes[0].plot(values, eigenvalues[:, j].imag / scale, "r.", ms=2)
    axes[0].set_xlabel(result["parameter"])
    axes[0].set_ylabel("eigenvalue (blue: real, red: imaginary)")
    axes[0].axhline(0, color="k", lw=0.5)
    sc = axes[1].scatter(eigenvalues.real.ravel() / scale, eigenvalues.imag.ravel() / scale,
                         c=np.repeat(values, eigenvalues.shape[1]), s=4, cmap="viridis")
    fig.colorbar(sc, ax=axes[1], label=result["parameter"])
    axes[1].set_xlabel("Re")
    axes[1].set_ylabel("Im")
    axes[1].axvline(0, color="k", lw=0.5)
    fig.suptitle(f"{result['scene']}: root locus over {result['parameter']}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_root_locus(result: dict, path, extra: dict | None = None) -> None:
    payload = {"lcpdyn_version": __version__, "scene": result["scene"], "parameter": result["parameter"],
               "values": result["values"].tolist(), "fixed": result["fixed"],
               "defaults": {k: float(v) for k, v in result["defaults"].items()},
               "eigenvalues_real": result["eigenvalues"].real.tolist(),
               "eigenvalues_imag": result["eigenvalues"].imag.tolist(), **(extra or {})}
    with open(path, "w") as handle:
        json.dump(payload, handle, indent=1)
