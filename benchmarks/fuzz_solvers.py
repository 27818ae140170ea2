"""Fuzz the bounded-LCP solvers: generated problems and exact rescalings of them, through every
method of ``solvers.METHODS``, each answer judged by the independent check of
``tests/independent_check.py`` (plain NumPy, not ``solvers.result``).

Every generated problem (the *original*, entries of M, q and the finite bounds of order one)
is run as it is and once more after an exact power-of-two rescaling M' = E M D, q' = E q,
lo' = lo / D, hi' = hi / D (entries 2^-40 ... 2^33; a kind drawn among symmetric D M D,
general E M D, rows E M, uniform a M, columns M d: ``solvers.library.random_rescaling``).
Answers of the rescaled problem are mapped back (z = D z') and checked on the original.

The mix (problem ``index`` is generated from ``default_rng([seed, index])`` alone, so any one
can be regenerated): sizes n = 1 ... 30; bounds per index free, lower-only, upper-only, boxed or
fixed (lo = hi) in random proportions, or all [0, inf);

* ``planted-*``: a solution (z*, w*) is drawn first -- z* at a bound with w* of the right sign
  (sometimes 0: degenerate), or interior with w* = 0, or fixed with any w* -- and
  q = w* - M z*, so the problem is solvable whatever M is. M: ``spd`` (A A^T / n + delta I),
  ``psd`` (J J^T, rank < n), ``p`` (positive definite symmetric part plus a skew part: a
  P-matrix), ``nonsym`` (Gaussian with one diagonal entry made <= 0: not a P-matrix),
  ``zero-rows`` (SPD with some rows, sometimes also their columns, zeroed), ``duplicated``
  (rows of M copied onto others: J J^T with repeated rows of J, or a Gaussian M);
* ``randq-*``: the same matrices with q ~ N(0, 1). Solvable (uniquely) for ``spd`` and ``p``
  (P-matrices: every BLCP has exactly one solution); for ``psd``, ``nonsym``, ``duplicated``
  whether a solution exists is not known -- a SOLVED there is only checked;
* ``infeasible-*``: problems proved to have no solution (proofs in :func:`_infeasible`):
  ``zero-row`` (w_r = q_r of the wrong sign for z_r's bounds), ``nonpositive`` (M_R <= 0,
  z >= 0, q_R < 0, so w_R < 0 where w_R >= 0 is needed), ``left-null`` (y^T M = 0 with
  y_i w_i >= 0 forced by the bounds and y^T q < 0), ``free-rows`` (dependent free rows with
  inconsistent q). The certificate rows hold small integers (and y powers of two), so the
  proofs hold exactly for the stored numbers and for their power-of-two rescalings.

Verdicts per (problem, method): ``solved`` (SOLVED and passes the independent check),
``failure`` (any other status: honest), ``wrong`` (SOLVED but fails the check, or SOLVED on a
problem proved infeasible), ``crash`` (``solve`` raised on valid input).

Usage: ``python benchmarks/fuzz_solvers.py [--count 10000 | --quick] [--seed 0] [--methods a,b]
[--jobs N] [--out results/fuzz-solvers.json]``. Siconos runs only where it is importable. One
problem is reproduced with ``instances(seed, index)`` (the JSON lists the indices of every
wrong answer and crash, up to 200 per method).
"""

from __future__ import annotations

import os

if __name__ == "__main__":  # one BLAS thread per worker process (set before NumPy loads)
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
import warnings  # noqa: E402
from collections import Counter, defaultdict  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from solvers import METHODS, solve  # noqa: E402
from solvers.library import Case, random_rescaling  # noqa: E402
from solvers.siconos_route import available as siconos_available  # noqa: E402
from tests.independent_check import CRASH, VERDICTS, WRONG, classify  # noqa: E402

INF = np.inf
MAX_N = 30
PLANTED = ("spd", "psd", "p", "nonsym", "zero-rows", "duplicated")
RANDOM_Q = ("spd", "p", "psd", "nonsym", "duplicated")
INFEASIBLE = ("zero-row", "nonpositive", "left-null", "free-rows")
KINDS = [f"planted-{k}" for k in PLANTED] + [f"randq-{k}" for k in RANDOM_Q] + [f"infeasible-{k}" for k in INFEASIBLE]
# share of each family: planted 45 %, random q 30 %, infeasible 25 %
WEIGHTS = np.array(
    [0.45 / len(PLANTED)] * len(PLANTED)
    + [0.30 / len(RANDOM_Q)] * len(RANDOM_Q)
    + [0.25 / len(INFEASIBLE)] * len(INFEASIBLE)
)
FREE, LOWER, UPPER, BOX, FIXED = range(5)
QUICK_COUNT = 500  # tests/test_rescaling.py runs this many in CI


# --- generator ----------------------------------------------------------------------------------


def _bound_types(rng, n):
    """Per index one of FREE, LOWER, UPPER, BOX, FIXED: all LOWER (an LCP) a quarter of the
    time, else random proportions."""
    if rng.random() < 0.25:
        return np.full(n, LOWER)
    return rng.choice(5, n, p=rng.dirichlet(np.ones(5)))


def _bounds(rng, types, nonnegative=False):
    """lo, hi for the given types; order-one values, 0 often; ``nonnegative``: every lo >= 0
    finite (hi may be +inf)."""
    n = types.size
    lo = np.full(n, -INF)
    hi = np.full(n, INF)
    for i, t in enumerate(types):
        base = 0.0 if rng.random() < 0.5 else rng.uniform(-2, 2)
        if nonnegative:
            base = abs(base)
        if t == LOWER:
            lo[i] = base
        elif t == UPPER:
            hi[i] = base
        elif t == BOX:
            lo[i] = base if nonnegative else base - rng.uniform(0.1, 2)
            hi[i] = lo[i] + rng.uniform(0.1, 2)
        elif t == FIXED:
            lo[i] = hi[i] = base
    return lo, hi


def _matrix(rng, n, kind):
    if kind == "spd":
        A = rng.standard_normal((n, n))
        return A @ A.T / n + 10.0 ** rng.uniform(-3, 0) * np.eye(n)
    if kind == "psd":  # rank r < n (r = 0: M = 0)
        r = int(rng.integers(0, n))
        J = rng.standard_normal((n, r))
        return J @ J.T / max(r, 1)
    if kind == "p":  # x^T M x > 0 for x != 0, hence a P-matrix
        A = rng.standard_normal((n, n))
        S = rng.standard_normal((n, n))
        return A @ A.T / n + 0.1 * np.eye(n) + rng.uniform(0, 1) * (S - S.T)
    if kind == "nonsym":  # a diagonal entry <= 0 is a nonpositive principal minor: not P
        M = rng.standard_normal((n, n))
        i = rng.integers(n)
        M[i, i] = -abs(M[i, i]) * rng.integers(0, 2)
        return M
    if kind == "zero-rows":
        M = _matrix(rng, n, "spd")
        rows = rng.choice(n, int(rng.integers(1, max(1, n // 3) + 1)), replace=False)
        M[rows] = 0.0
        if rng.random() < 0.5:
            M[:, rows] = 0.0
        return M
    if kind == "duplicated":
        copies = int(rng.integers(1, max(1, n // 3) + 1)) if n > 1 else 0
        source = rng.integers(0, n, copies)
        target = rng.choice(n, copies, replace=False)
        if rng.random() < 0.5:  # redundant contacts: J J^T with rows of J repeated
            J = rng.standard_normal((n, n + 2))
            J[target] = J[source]
            return J @ J.T / n
        M = rng.standard_normal((n, n))
        M[target] = M[source]
        return M
    raise ValueError(kind)


def _plant(rng, types, lo, hi, M):
    """q = w* - M z* for a drawn solution (z*, w*) of the given bounds."""
    n = types.size
    z = np.empty(n)
    w = np.zeros(n)
    for i, t in enumerate(types):
        size = abs(rng.standard_normal()) * (rng.random() > 0.15)  # 0 now and then: degenerate
        where = rng.random()
        if t == FREE:
            z[i] = rng.standard_normal()
        elif t == FIXED:
            z[i], w[i] = lo[i], rng.standard_normal()
        elif t == LOWER:
            z[i], w[i] = (lo[i], size) if where < 0.5 else (lo[i] + abs(rng.standard_normal()) + 0.01, 0.0)
        elif t == UPPER:
            z[i], w[i] = (hi[i], -size) if where < 0.5 else (hi[i] - abs(rng.standard_normal()) - 0.01, 0.0)
        elif where < 1 / 3:
            z[i], w[i] = lo[i], size
        elif where < 2 / 3:
            z[i], w[i] = hi[i], -size
        else:
            z[i] = rng.uniform(lo[i], hi[i])
    return w - M @ z


def _infeasible(rng, n, kind):
    """(M, q, lo, hi, y): a problem with no solution and its certificate y (verified exactly by
    ``tests/independent_check.certificate_holds``). Every proof uses: a solution needs
    w_i >= 0 where hi_i = +inf > lo_i (z_i at its lower bound or interior), w_i <= 0 where
    lo_i = -inf < hi_i, so w_i = 0 for a free variable. Rows outside the certificate are random."""
    M = rng.standard_normal((n, n))
    q = rng.standard_normal(n)
    types = _bound_types(rng, n)
    if kind == "zero-row":
        # M_r = 0, so w_r = q_r for every z: q_r < 0 with hi_r = inf, or q_r > 0 with lo_r = -inf.
        r = rng.integers(n)
        M[r] = 0.0
        if rng.random() < 0.5:
            q[r] = -rng.uniform(0.1, 2)
            types[r] = (LOWER, FREE)[rng.integers(2)]
        else:
            q[r] = rng.uniform(0.1, 2)
            types[r] = (UPPER, FREE)[rng.integers(2)]
        lo, hi = _bounds(rng, types)
        return M, q, lo, hi, np.eye(n)[r] * -np.sign(q[r])
    if kind == "nonpositive":
        # every lo_j >= 0 (finite) so z >= 0; rows R have M_R <= 0, q_R < 0 and hi = inf:
        # w_R = M_R z + q_R <= q_R < 0 where w_R >= 0 is needed.
        types = np.where(types == FREE, LOWER, np.where(types == UPPER, BOX, types))
        R = rng.choice(n, int(rng.integers(1, n + 1)), replace=False)
        M[R] = -np.abs(M[R]) * (rng.random((R.size, n)) < 0.8)
        q[R] = -rng.uniform(0.1, 2, R.size)
        types[R] = LOWER
        lo, hi = _bounds(rng, types, nonnegative=True)
        y = np.zeros(n)
        y[R] = 1.0
        return M, q, lo, hi, y
    # left-null / free-rows: rows R (|R| >= 2) of small integers, y of powers of two with
    # y_last = +-1, the last row of R set to -y_last * sum_{others} y_i M_i, so y^T M_R = 0
    # exactly; q_last likewise so that y^T q_R = -k < 0 (k = 1, 2, 3). Bounds of R: y_i > 0 ->
    # [lo, inf) or free, y_i < 0 -> (-inf, hi] or free (``free-rows``: all free), which force
    # y_i w_i >= 0; then y^T w = y^T q < 0 is impossible.
    if n < 2:
        return _infeasible(rng, n, "zero-row")
    R = rng.choice(n, int(rng.integers(2, min(n, 6) + 1)), replace=False)
    y = rng.choice([-4.0, -2.0, -1.0, 1.0, 2.0, 4.0], R.size)
    y[-1] = rng.choice([-1.0, 1.0])
    M[R[:-1]] = rng.integers(-5, 6, (R.size - 1, n))
    q[R[:-1]] = rng.integers(-5, 6, R.size - 1)
    M[R[-1]] = -y[-1] * (y[:-1] @ M[R[:-1]])
    q[R[-1]] = y[-1] * (-(y[:-1] @ q[R[:-1]]) - rng.integers(1, 4))
    if kind == "free-rows":
        types[R] = FREE
    else:
        types[R] = np.where(rng.random(R.size) < 0.25, FREE, np.where(y > 0, LOWER, UPPER))
    lo, hi = _bounds(rng, types)
    certificate = np.zeros(n)
    certificate[R] = y
    return M, q, lo, hi, certificate


def generate(seed: int, index: int) -> tuple[Case, str]:
    """Problem ``index`` of the fuzz run with ``seed``: ``(case, kind)``. ``case.feasible`` is
    True (solvable), False (proved infeasible) or None (unknown)."""
    rng = np.random.default_rng([seed, index])
    kind = KINDS[rng.choice(len(KINDS), p=WEIGHTS)]
    n = int(rng.integers(1, MAX_N + 1))
    family, matrix = kind.split("-", 1)
    certificate = None
    if family == "infeasible":
        M, q, lo, hi, certificate = _infeasible(rng, n, matrix)
        feasible, unique = False, False
    else:
        M = _matrix(rng, n, matrix)
        types = _bound_types(rng, n)
        lo, hi = _bounds(rng, types)
        if family == "planted":
            q = _plant(rng, types, lo, hi, M)
            feasible = True
        else:
            q = rng.standard_normal(n)
            feasible = True if matrix in ("spd", "p") else None
        unique = matrix in ("spd", "p")
    case = Case(
        f"fuzz-s{seed}-{index}-{kind}-n{n}",
        np.ascontiguousarray(M, float),
        np.asarray(q, float),
        np.asarray(lo, float),
        np.asarray(hi, float),
        None,
        unique,
        feasible,
        certificate=certificate,
    )
    return case, kind


def instances(seed: int, index: int) -> list[tuple[Case, str, str]]:
    """``[(original, kind, "original"), (rescaled, kind, rescaling kind)]`` for one index."""
    case, kind = generate(seed, index)
    scaled = random_rescaling(case, np.random.default_rng([seed, index, 1]))
    return [(case, kind, "original"), (scaled, kind, scaled.rescaling)]


# --- running ------------------------------------------------------------------------------------


def judge(case, method, options=None):
    """(verdict, status name, reason) of one solve (``options``: the method's keyword options)."""
    try:
        result = solve(*case.args, method=method, **(options or {}))
    except Exception as exc:  # any exception on valid input is a crash
        lines = traceback.format_exc().strip().splitlines()
        return CRASH, type(exc).__name__, f"{type(exc).__name__}: {exc} | at {' / '.join(lines[-4:-1])}"
    verdict, reason = classify(case, result.success, result.z)
    return verdict, result.status.name, reason


def _run_chunk(task):
    seed, indices, methods, options = task
    records = []
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for index in indices:
            for case, kind, scaling in instances(seed, index):
                for method in methods:
                    verdict, status, reason = judge(case, method, options.get(method))
                    records.append(
                        (
                            index,
                            kind,
                            scaling,
                            case.q.shape[0],
                            method,
                            verdict,
                            status,
                            reason if verdict in (WRONG, CRASH) else "",
                        )
                    )
    return records


def default_methods() -> list[str]:
    return [m for m in METHODS if m != "siconos" or siconos_available()]


def run_fuzz(count: int = 10_000, seed: int = 0, methods=None, jobs: int = 1, chunk: int = 100, options=None) -> dict:
    """Run problems ``0 .. count-1`` (each as generated and rescaled) through ``methods``;
    returns the summary that ``main`` prints and writes. ``options``: ``{method: {name: value}}``,
    keyword options of a method's solves (default: none, the method's defaults)."""
    methods = list(methods or default_methods())
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        raise ValueError(f"unknown method(s) {unknown}; choose from {sorted(METHODS)}")
    options = dict(options or {})
    tasks = [(seed, range(start, min(start + chunk, count)), methods, options) for start in range(0, count, chunk)]
    start = time.perf_counter()
    if jobs > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(jobs) as pool:
            chunks = list(pool.map(_run_chunk, tasks))
    else:
        chunks = [_run_chunk(task) for task in tasks]
    elapsed = time.perf_counter() - start
    counts = {m: Counter({v: 0 for v in VERDICTS}) for m in methods}
    by_kind = {m: defaultdict(Counter) for m in methods}
    by_scaling = {m: defaultdict(Counter) for m in methods}
    examples = {m: [] for m in methods}
    for records in chunks:
        for index, kind, scaling, n, method, verdict, status, reason in records:
            counts[method][verdict] += 1
            by_kind[method][kind][verdict] += 1
            by_scaling[method][scaling][verdict] += 1
            if verdict in (WRONG, CRASH):
                examples[method].append(
                    {
                        "index": index,
                        "kind": kind,
                        "rescaling": scaling,
                        "n": n,
                        "verdict": verdict,
                        "status": status,
                        "reason": reason[:600],
                    }
                )
    return {
        "seed": seed,
        "count": count,
        "instances_per_method": 2 * count,
        "methods": methods,
        "options": options,
        "elapsed_seconds": round(elapsed, 1),
        "counts": {m: dict(c) for m, c in counts.items()},
        "by_kind": {m: {k: dict(c) for k, c in sorted(d.items())} for m, d in by_kind.items()},
        "by_rescaling": {m: {k: dict(c) for k, c in sorted(d.items())} for m, d in by_scaling.items()},
        "wrong_and_crash_examples": {m: e[:200] for m, e in examples.items()},
        "wrong_and_crash_total": {m: len(e) for m, e in examples.items()},
    }


def format_table(summary: dict) -> str:
    header = f"{'method':14s}" + "".join(f"{v:>10s}" for v in VERDICTS)
    lines = [header, "-" * len(header)]
    for method, c in summary["counts"].items():
        lines.append(f"{method:14s}" + "".join(f"{c.get(v, 0):10d}" for v in VERDICTS))
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=10_000, help="generated problems (each also rescaled)")
    parser.add_argument("--quick", action="store_true", help=f"--count {QUICK_COUNT} (the CI test's run)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--methods", default=None, help="comma-separated (default: all; siconos if importable)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes")
    parser.add_argument("--out", default=str(ROOT / "results" / "fuzz-solvers.json"))
    parser.add_argument("--show", type=int, default=5, help="wrong/crash examples printed per method")
    args = parser.parse_args(argv)
    if args.quick:
        args.count = QUICK_COUNT
    methods = args.methods.split(",") if args.methods else default_methods()
    if "siconos" in methods and not siconos_available():
        print("fuzz: siconos is not importable here; skipping it", file=sys.stderr)
        methods.remove("siconos")
    summary = run_fuzz(args.count, args.seed, methods, args.jobs)
    print(
        f"fuzz: {args.count} problems x (original + rescaled) = {2 * args.count} instances per method, "
        f"seed {args.seed}, {summary['elapsed_seconds']} s"
    )
    print(format_table(summary))
    for method, examples in summary["wrong_and_crash_examples"].items():
        for e in examples[: args.show]:
            print(
                f"  {method}: #{e['index']} {e['kind']} n={e['n']} [{e['rescaling']}] {e['verdict'].upper()} "
                f"{e['status']}: {e['reason'][:300]}"
            )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=2))
    print(f"written {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
