"""``python -m lcpdyn``: the main job.

Until the time stepper lands, this is the solver demonstration: every method on the
one-contact Peiret wheel problem and on representative problems of the shared library, with
the framework's residual for each answer. See ``benchmarks/bench_solvers.py`` for timings.
"""
from __future__ import annotations

import sys

import numpy as np

import solvers
from solvers import library
from solvers.siconos_route import available as siconos_available

from . import __version__


def main(argv=None) -> int:
    methods = [m for m in solvers.METHODS if m != "siconos" or siconos_available()]
    cases = [library.wheel_one_contact(), library.wheel_one_contact(sliding=False), library.box_resting(),
             library.murty(8), library.random_spd(100, seed=1), library.random_psd_duplicated(60, seed=2),
             library.delassus_rigid_body(20, seed=3)]
    print(f"lcpdyn {__version__}: bounded-LCP solvers on the shared problem library")
    print(f"{'problem':28s} {'n':>4s} " + " ".join(f"{m:>26s}" for m in methods))
    for case in cases:
        cells = []
        for method in methods:
            r = solvers.solve(*case.args, method=method)
            cells.append(f"{r.status.name[:8]:>8s} it={r.iterations:<5d} res={r.relative_residual:7.1e}")
        print(f"{case.name:28s} {case.q.size:4d} " + " ".join(f"{c:>26s}" for c in cells))
    wheel = library.wheel_one_contact()
    r = solvers.solve(*wheel.args)
    v, impulses = r.z[:6], r.z[6:]
    print("\nPeiret 2016 wheel, one step h = 1 ms, sliding at 6 m/s (judice-pires):")
    print(f"  v+ = {np.array2string(v, precision=5)}")
    print(f"  h*lambda_N = {impulses[0]:.6e} N s, h*lambda_T = {np.array2string(impulses[1:], precision=6)} N s")
    print(f"  |lambda_T| / (mu lambda_N) = {np.linalg.norm(impulses[1:]) / (0.3 * 9.81e-3):.4f} "
          "(box friction: each component saturates separately)")
    if "siconos" not in methods:
        print("\n(Siconos not importable here: the cross-check column is missing.)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
