"""Per-solve timings of the bounded-LCP solvers against Siconos, measured in the same run.

Problems: (a) the one-contact Peiret 2016 wheel (6 velocities + 1 normal + 2 friction
unknowns, Eq. 30, built from a rigid body: ``solvers.library.wheel_one_contact``); (b) random
SPD problems with mixed bounds (one third free, one third [0, inf), one third boxes) at
n = 30, 100, 300 (``solvers.library.random_spd``).

Timed entries (median over repeats of batches; each batch's mean is one sample):
* ``judice-pires``, ``lemke``, ``pgs``: the whole front door ``solvers.solve`` -- input
  validation, the method, and the framework's residual check.
* ``siconos-route``: ``solve(..., method="siconos")`` -- Schur elimination and box splitting
  in NumPy, Siconos' LCP Lemke, recovery, residual check.
* ``siconos-lemke-driver``: only ``linearComplementarity_driver`` (SICONOS_LCP_LEMKE) on the
  already reduced and split LCP -- the figure the issue quotes (3-4 us, ~20 ms).
* ``judice-pires-kernel``: the Júdice–Pires pivoting kernel alone on the unreduced problem,
  from a cold start -- the counterpart of the bare driver call.
Ratios are to ``siconos-lemke-driver`` and to ``siconos-route``.

BLAS runs on one thread (set below before NumPy loads) so that both sides are compared on
equal terms and the numbers match the project's Siconos notes. JIT compilation (Numba) is
excluded by a warm-up solve, and reported separately as ``first_call_seconds``.

Usage: ``python benchmarks/bench_solvers.py [--out results/bench_solvers.json] [--quick]``
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import lcpdyn  # noqa: E402
import solvers  # noqa: E402
from solvers import library  # noqa: E402
from solvers.problem import make_problem  # noqa: E402
from solvers.reformulate import eliminate_free, split_boxes  # noqa: E402
from solvers.siconos_route import available as siconos_available  # noqa: E402


def median_seconds(fn, budget: float, min_samples: int = 7) -> tuple[float, int]:
    """Median per-call time: batches sized to ~1 ms, as many as fit in ``budget`` seconds."""
    start = time.perf_counter()
    fn()
    once = max(time.perf_counter() - start, 1e-7)
    batch = max(1, int(1e-3 / once))
    samples = []
    t_end = time.perf_counter() + budget
    while len(samples) < min_samples or time.perf_counter() < t_end:
        t0 = time.perf_counter()
        for _ in range(batch):
            fn()
        samples.append((time.perf_counter() - t0) / batch)
        if len(samples) >= 2000:
            break
    return float(np.median(samples)), len(samples) * batch


def siconos_driver_call(case):
    import siconos.numerics as sn

    split = split_boxes(eliminate_free(make_problem(*case.args)).reduced)
    lcp = sn.LCP(split.M, split.q)
    options = sn.SolverOptions(sn.SICONOS_LCP_LEMKE)
    m = split.q.size

    def call():
        z, w = np.zeros(m), np.zeros(m)
        info = sn.linearComplementarity_driver(lcp, z, w, options)
        if info != 0:
            raise RuntimeError(f"Siconos Lemke failed (info={info}) in the benchmark")

    return call


def judice_pires_kernel_call(case):
    """The pivoting kernel alone (no validation, no residual check): the counterpart of the
    bare Siconos driver call."""
    from solvers import judice_pires

    problem = make_problem(*case.args)
    n = problem.n
    defaults = judice_pires.Options()  # the front door's defaults, so both entries do the same work
    start = judice_pires._initial_state(problem.lo, problem.hi, np.zeros(n, np.int8), False)
    center = np.zeros(n)

    def call():
        z, code, _ = judice_pires.pivot(
            problem.M,
            problem.q,
            problem.lo,
            problem.hi,
            start.copy(),
            judice_pires.default_max_iterations(n),
            defaults.max_stall,
            defaults.pivot_tolerance,
            0.0,
            center,
        )
        if code != 0:
            raise RuntimeError("judice-pires kernel failed in the benchmark")

    return call


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="results/bench_solvers.json")
    parser.add_argument("--quick", action="store_true", help="shorter time budget per entry")
    args = parser.parse_args(argv)
    budget = 0.3 if args.quick else 1.5

    cases = [library.wheel_one_contact()] + [library.random_spd(n, seed=11, bounds="mixed") for n in (30, 100, 300)]
    methods = ["judice-pires", "lemke", "pgs"]
    have_siconos = siconos_available()
    if have_siconos:
        methods.append("siconos")
    rows = []
    t_first = {}
    for case in cases:
        row = {"problem": case.name, "n": int(case.q.size), "times_s": {}, "iterations": {}, "calls": {}}
        for method in methods:
            t0 = time.perf_counter()
            result = solvers.solve(*case.args, method=method)
            t_first.setdefault(method, time.perf_counter() - t0)
            if not result.success:
                raise RuntimeError(f"{method} failed on {case.name}: {result.message}")
            seconds, calls = median_seconds(lambda: solvers.solve(*case.args, method=method), budget)
            key = "siconos-route" if method == "siconos" else method
            row["times_s"][key] = seconds
            row["calls"][key] = calls
            row["iterations"][key] = result.iterations
        seconds, calls = median_seconds(judice_pires_kernel_call(case), budget)
        row["times_s"]["judice-pires-kernel"] = seconds
        row["calls"]["judice-pires-kernel"] = calls
        if have_siconos:
            seconds, calls = median_seconds(siconos_driver_call(case), budget)
            row["times_s"]["siconos-lemke-driver"] = seconds
            row["calls"]["siconos-lemke-driver"] = calls
            for ref in ("siconos-lemke-driver", "siconos-route"):
                row[f"ratio_to_{ref}"] = {k: v / row["times_s"][ref] for k, v in row["times_s"].items()}
        rows.append(row)

    columns = list(rows[0]["times_s"])
    lines = [
        f"lcpdyn {lcpdyn.__version__} solver benchmark, median seconds per solve (BLAS threads = "
        f"{os.environ.get('OPENBLAS_NUM_THREADS')})",
        f"{'problem':24s} {'n':>4s} " + " ".join(f"{c:>21s}" for c in columns),
    ]
    for row in rows:
        lines.append(
            f"{row['problem']:24s} {row['n']:4d} " + " ".join(f"{_fmt(row['times_s'][c]):>21s}" for c in columns)
        )
    if have_siconos:
        lines.append("ratio to siconos-lemke-driver (lower is faster):")
        for row in rows:
            lines.append(
                f"{row['problem']:24s} {row['n']:4d} "
                + " ".join(f"{row['ratio_to_siconos-lemke-driver'][c]:21.2f}" for c in columns)
            )
        lines.append("ratio to siconos-route:")
        for row in rows:
            lines.append(
                f"{row['problem']:24s} {row['n']:4d} "
                + " ".join(f"{row['ratio_to_siconos-route'][c]:21.2f}" for c in columns)
            )
    else:
        lines.append("Siconos is not importable here: no ratios (see README, Set-up).")
    table = "\n".join(lines)
    print(table)

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "lcpdyn_version": lcpdyn.__version__,
        "benchmark": "bench_solvers",
        "parameters": {
            "budget_seconds_per_entry": budget,
            "cases": [c.name for c in cases],
            "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
            "tolerance": 1e-9,
        },
        "machine": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "platform": platform.platform(),
            "cpu_count": os.cpu_count(),
        },
        "first_call_seconds": t_first,
        "rows": rows,
        "table": table,
    }
    out.write_text(json.dumps(record, indent=2))
    out.with_suffix(".txt").write_text(table + "\n")
    print(f"written {out} and {out.with_suffix('.txt')}")
    return 0


def _fmt(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    return f"{seconds * 1e3:.2f} ms"


if __name__ == "__main__":
    sys.exit(main())
