"""A friction-model study end to end (docs/guide/sweeps.md): the Peiret 2016 wheel over
mu in {0.1, ..., 0.5} x theta in {10, 20, 30} deg under the regularized, polygonal and box models
at h = 1 ms, each against exact Coulomb at h = 1e-4 s, with heat maps of the force RMS deviation
and the misalignment, and the table and its figures in ``results/friction-study/``.

    python benchmarks/study_friction_models.py                 # embedded local cluster
    python benchmarks/study_friction_models.py --scheduler tcp://host:8786
    python benchmarks/study_friction_models.py --t-end 1       # a shorter study

Interrupted (Ctrl-C), it keeps its finished runs; the same command resumes. The same study from
the shell: ``lcpdyn sweep wheel --grid mu=0.1:0.5:5 --grid theta_deg=10,20,30 --friction
regularized,polygonal,box --dt 1e-3 --reference coulomb@1e-4 --out results/friction-study --plot
force_rms_deviation_percent --plot misalignment_rms_deg``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from lcpdyn.sweep import plot_sweep, sweep

MU = [0.1, 0.2, 0.3, 0.4, 0.5]
THETA_DEG = [10.0, 20.0, 30.0]
MODELS = ["regularized", "polygonal", "box"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="results/friction-study", help="results directory (default: %(default)s)")
    parser.add_argument("--scheduler", default=None, help="a running dask scheduler's address (default: local)")
    parser.add_argument("--workers", type=int, default=None, help="local worker processes (default: one per CPU)")
    parser.add_argument("--t-end", type=float, default=4.0, help="run length, s (default: %(default)s)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    table = sweep(
        "wheel",
        grid={"mu": MU, "theta_deg": THETA_DEG},
        friction=MODELS,
        dt=[1e-3],
        reference="coulomb@1e-4",
        t_end=args.t_end,
        out=out,
        scheduler=args.scheduler,
        workers=args.workers,
    )
    print(f"{table.attrs['completed']} of {table.attrs['runs']} runs completed, {table.attrs['failed']} failed")
    for metric in ("force_rms_deviation_percent", "misalignment_rms_deg"):
        print(f"\n{metric} (rows: mu; columns: theta_deg {THETA_DEG})")
        for model in MODELS:
            block = table[metric].sel(friction=model, dt=1e-3).transpose("mu", "theta_deg").values
            print(f"  {model}")
            for mu, row in zip(MU, block):
                print(f"    mu = {mu:.1f}: " + "  ".join(f"{v:9.4g}" for v in row))
        own = table[f"reference_error_{metric}"] if f"reference_error_{metric}" in table else None
        if own is not None:
            print(f"  the reference's own error estimate: up to {float(np.nanmax(own.values)):.3g}")
        path = out / f"{metric}.png"
        plot_sweep(table, metric, "mu", "theta_deg", path, select={"dt": 1e-3})
        print(f"wrote {path}")
    wall = table["wall_s"].values
    print(f"\nwall time per run: median {np.nanmedian(wall):.2f} s; references: "
          f"median {np.nanmedian(table['reference_wall_s'].values):.2f} s")  # fmt: skip
    return 1 if table.attrs["failed"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
