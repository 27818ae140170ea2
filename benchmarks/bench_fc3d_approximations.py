"""lcpdyn's friction approximations (box, polygonal k = 4, 8, 16, regularized) scored against exact
Coulomb friction on the 34 third-party 3D friction-contact problems (Siconos' test set).

Problems: ``../shared/problems/fc3d/*.dat`` beside the clone (``--data``, or
``$LCPDYN_FC3D_PROBLEMS``; provenance, licence and format in that folder's README.md), local
(Delassus) problems u = W r + q read with ``solvers.read_siconos_dat``.

Exact reference: ``solvers.solve(problem, method=m, tolerance=1e-8)`` with m = ``"auto"`` when
it is in ``solvers.FRICTION_CONTACT_METHODS``, else ``"siconos-prox"`` then ``"nsgs"``
(``--exact-methods`` overrides), each within ``--exact-time-limit`` seconds. Only answers with
``success`` (the framework's own Coulomb residual within 1e-8) are kept; problems without one
are listed and skipped.

Approximations: ``solvers.friction_approximations.approximate`` -- each model posed as bounded
LCPs on the same W, q, mu, its lagged normal force (and, for the regularized model, its lagged
friction force and slip) iterated to a self-consistent fixed point from a frictionless start;
the mapping from the engine's rows, the regularized model's constants and the iteration are
documented in that module. Only converged answers are scored; the others count as failures
with their reason (not self-consistent within ``max_iterations``, inner solver failure, time
limit ``--time-limit`` per model and problem, crash).

Metrics (``solvers.friction_approximations.contact_metrics``, after ``lcpdyn.metrics``), per
contact: force deviation |r_a - r_exact,a| / |r_exact,a| (contacts with r_exact,a = 0 --
|r_exact,a| <= 1e-8 max|r_exact| -- left out and reported as "spurious" force |r_a| / max|r_exact|),
and the same against the exact answer *nearest the model's* ("near", ``prox`` started from the
model's answer: where W is rank-deficient the exact r is not unique, and this column leaves the
choice among exact answers out of the model's error);
misalignment, the angle between r_T and -u_T where the model's own answer slides
(|u_T| > 1e-4 V, V = ||q||_2 / sqrt(nc) the problem's velocity scale); cone excess
max(|r_T| / (mu r_N) - 1, 0). Per problem: the normal-force-weighted RMS misalignment (lcpdyn.metrics'
per-step value), the aggregate normalized friction force F = sum |r_T| / mu / sum r_N (lcpdyn.metrics'
aggregate; indifferent to how redundant contacts share the load only where they all slide) and
its deviation from the exact F and from the nearest exact answer's F, and the framework's
Coulomb residual of the model's answer (how far it is from being *any* exact solution). Per
family (name prefix: Capsules, Rover, BoxesStack1, OneObject, KaplasTower, RockPile, NESpheres,
Confeti; the small FC3D_* / FrictionContact3D_* examples together): median and 95th
percentile of the force deviation pooled over the family's contacts, RMS over problems of the
deviation of F in percent (lcpdyn.metrics' force RMS deviation with problems for steps), RMS
over problems of the per-problem misalignment and its maximum over contacts (deg), the
largest cone excess, the median Coulomb residual, and the failures.

Caution: most families are hyperstatic (W rank-deficient: Capsules 553 of 828, KaplasTower 504
of 1710), so r is not unique -- neither the exact answer nor the models'. There the per-contact
force deviation (and, with sticking contacts, F) mixes model error with the choice among
equally exact answers; the regularized model, whose converged answers are exact Coulomb
solutions, shows the size of that floor, and the "near" columns leave it out.

Every (problem, stage) runs in its own worker process (this file with ``--worker``), one at a
time, BLAS on one thread; a stage outlasting its limit (+60 s) is ended by SIGALRM.

Outputs (``--out``, default ``results/``, written atomically): ``fc3d_approximations.json``
(versions, machine, parameters, one record per exact solve and per (problem, model), the
family summaries) and ``fc3d_approximations.md`` (the tables, also printed). While it runs,
every finished solve is streamed to ``fc3d_approximations.partial.jsonl`` (exact answers in
``fc3d_approximations.cache/``); after Ctrl-C, SIGTERM or a crash, ``--resume`` goes on from
there (same parameters only).

Usage: ``python benchmarks/bench_fc3d_approximations.py [--problems 'Rover*,FC3D_Example1']
[--models box,polygonal-8,regularized] [--time-limit 600] [--exact-time-limit 120] [--out results]
[--resume]``.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
# the fc3d benchmark's file handling, JSON and provenance helpers (it also puts the repo on sys.path)
from bench_fc3d import (  # noqa: E402
    DATA,
    ROOT,
    _jsonable,
    _machine,
    _positive_float,
    _versions,
    _write_atomically,
    problem_name,
    select_problems,
)

MODELS = ("box", "polygonal-4", "polygonal-8", "polygonal-16", "regularized")
FAMILIES = ("Capsules", "Rover", "BoxesStack1", "OneObject", "KaplasTower", "RockPile", "NESpheres", "Confeti")
EXAMPLES = "FC3D/FrictionContact3D examples"
ALL = "All problems"
EXACT_TOLERANCE = 1e-8
MARK = "@@fc3d-approx "
GRACE_S = 60.0
NEAR_METHOD = "prox"  # exact answer started from the model's (force_deviation_near)


def family(name: str) -> str:
    for prefix in FAMILIES:
        if name.startswith(prefix):
            return prefix
    return EXAMPLES


def _array(values) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in values], dtype=float)


# --- workers -------------------------------------------------------------------------------------
def _emit(record) -> None:
    sys.stdout.write(MARK + json.dumps(_jsonable(record)) + "\n")
    sys.stdout.flush()


def _worker_exact(path: str, methods: list[str], time_limit: float, store: str) -> None:
    import solvers

    problem = solvers.read_siconos_dat(path)
    W = problem.W
    rank = int(np.linalg.matrix_rank(W, tol=1e-10 * np.linalg.norm(W, 2))) if W.size else 0
    _emit({"event": "setup", "contacts": problem.contacts, "rank": rank, "size": int(W.shape[0])})
    for method in methods:
        signal.setitimer(signal.ITIMER_REAL, time_limit)
        start = time.perf_counter()
        result = solvers.solve(problem, method=method, tolerance=EXACT_TOLERANCE)
        seconds = time.perf_counter() - start
        signal.setitimer(signal.ITIMER_REAL, 0)
        record = {
            "event": "attempt",
            "method": method,
            "success": bool(result.success),
            "status": result.status.name,
            "relative_residual": result.relative_residual,
            "iterations": result.iterations,
            "seconds": seconds,
            "message": result.message[:300],
        }
        if result.success:
            np.save(store, result.r)
            from solvers.friction_approximations import contact_metrics

            check = contact_metrics(problem, result.r, result.r)
            record["misalignment_rms_deg"] = check.misalignment_rms_deg
            record["sliding"] = int(check.sliding.sum())
            record["max_cone_excess"] = (
                float(np.nanmax(check.cone_excess)) if np.isfinite(check.cone_excess).any() else 0.0
            )
            _emit(record)
            break
        _emit(record)
    _emit({"event": "done"})


def _alarm(signum, frame):
    raise TimeoutError("time limit")


def _worker_model(path: str, label: str, time_limit: float, store: str) -> None:
    import solvers
    from solvers import friction_approximations as fa

    problem = solvers.read_siconos_dat(path)
    r_exact = np.load(store)
    model = fa.model_from_label(label)
    options = fa.FixedPointOptions(time_limit=time_limit)
    signal.setitimer(signal.ITIMER_REAL, time_limit + GRACE_S)
    result = fa.approximate(problem, model, options)
    signal.setitimer(signal.ITIMER_REAL, 0)
    metrics = fa.contact_metrics(problem, result.r, r_exact)
    # the exact answer nearest the model's: the proximal-point loop started from it (on
    # hyperstatic sets the exact r is not unique; this separates model error from that choice)
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, time_limit)
    try:
        near = solvers.solve(problem, method=NEAR_METHOD, tolerance=EXACT_TOLERANCE, initial_guess=result.r)
        near_success, near_residual, near_r = near.success, near.relative_residual, near.r
    except TimeoutError:
        near_success, near_residual, near_r = False, None, None
    signal.setitimer(signal.ITIMER_REAL, 0)
    near_metrics = fa.contact_metrics(problem, result.r, near_r) if near_success else None
    near_deviation = near_metrics.force_deviation if near_success else None
    near_F = near_metrics.normalized_friction_force_exact if near_success else None
    parameters = dict(result.parameters)
    parameters.pop("compliance_absolute", None)  # one per contact: not needed in the record
    _emit(
        {
            "event": "result",
            "parameters": parameters,
            "options": {k: getattr(options, k) for k in options.__dataclass_fields__},
            "converged": result.converged,
            "iterations": result.iterations,
            "inner_iterations": result.inner_iterations,
            "residual": result.residual,
            "coulomb_residual": result.coulomb_residual,
            "relaxation": result.relaxation,
            "proximal": result.proximal,
            "seconds": result.seconds,
            "message": result.message,
            "force_deviation": metrics.force_deviation,
            "near_exact_solved": bool(near_success),
            "near_exact_residual": near_residual,
            "force_deviation_near": near_deviation,
            "normalized_friction_force_near": near_F,
            "spurious_force": metrics.spurious_force[metrics.exact_zero],
            "misalignment_deg": metrics.misalignment_deg[metrics.sliding],
            "sliding": int(metrics.sliding.sum()),
            "cone_excess": metrics.cone_excess,
            "friction_without_normal": metrics.friction_without_normal,
            "misalignment_rms_deg": metrics.misalignment_rms_deg,
            "normalized_friction_force": metrics.normalized_friction_force,
            "normalized_friction_force_exact": metrics.normalized_friction_force_exact,
            "velocity_scale": metrics.velocity_scale,
            "force_scale": metrics.force_scale,
            "slip_velocity": metrics.slip_velocity,
        }
    )


def _run_worker(arguments: list, limit: float) -> tuple[list[dict], str | None]:
    """Events of one worker; the reason it ended abnormally (or None)."""
    command = [sys.executable, __file__, "--worker", json.dumps(arguments)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=limit + 2 * GRACE_S, cwd=ROOT)
        stdout, stderr, code = done.stdout, done.stderr, done.returncode
    except subprocess.TimeoutExpired as exc:
        stdout = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        stderr, code = "", None
    events = [json.loads(line[len(MARK) :]) for line in stdout.splitlines() if line.startswith(MARK)]
    if code == 0:
        return events, None
    if code is None or code == -signal.SIGALRM:
        return events, "timeout"
    tail = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    return events, f"crash (exit {code}): {tail[-1][:200] if tail else ''}"


# --- aggregation ---------------------------------------------------------------------------------
def _finite(values) -> np.ndarray:
    array = _array(values)
    return array[np.isfinite(array)]


def _rms(values) -> float:
    array = _finite(values)
    return float(np.sqrt(np.mean(array**2))) if array.size else float("nan")


def summarize(records: list[dict], problems: list[str]) -> dict:
    """Per model over the given problems: the family row of the module docstring."""
    out = {}
    models = list(dict.fromkeys(r["model"] for r in records))
    for model in models:
        rows = [r for r in records if r["model"] == model and r["problem"] in problems]
        good = [r for r in rows if r["outcome"] == "converged"]
        deviation = np.concatenate([_finite(r["force_deviation"]) for r in good]) if good else np.zeros(0)
        with_near = [r for r in good if r.get("force_deviation_near") is not None]
        near = np.concatenate([_finite(r["force_deviation_near"]) for r in with_near]) if with_near else np.zeros(0)
        angles = np.concatenate([_finite(r["misalignment_deg"]) for r in good]) if good else np.zeros(0)
        excess = np.concatenate([_finite(r["cone_excess"]) for r in good]) if good else np.zeros(0)
        spurious = np.concatenate([_finite(r["spurious_force"]) for r in good]) if good else np.zeros(0)
        F = [
            100.0 * (r["normalized_friction_force"] - r["normalized_friction_force_exact"])
            for r in good
            if r["normalized_friction_force"] is not None and r["normalized_friction_force_exact"] is not None
        ]
        F_near = [
            100.0 * (r["normalized_friction_force"] - r["normalized_friction_force_near"])
            for r in good
            if r["normalized_friction_force"] is not None and r.get("normalized_friction_force_near") is not None
        ]
        out[model] = {
            "attempted": len(rows),
            "converged": len(good),
            "contacts": int(sum(len(r["force_deviation"]) for r in good)),
            "force_deviation_median": float(np.median(deviation)) if deviation.size else None,
            "force_deviation_p95": float(np.percentile(deviation, 95)) if deviation.size else None,
            "near_deviation_median": float(np.median(near)) if near.size else None,
            "near_deviation_p95": float(np.percentile(near, 95)) if near.size else None,
            "near_missing": len(good) - len(with_near),
            "spurious_force_max": float(spurious.max()) if spurious.size else None,
            "friction_force_rms_deviation_percent": _rms(F),
            "friction_force_rms_deviation_near_percent": _rms(F_near),
            "misalignment_rms_deg": _rms([r["misalignment_rms_deg"] for r in good]),
            "misalignment_max_deg": float(angles.max()) if angles.size else None,
            "sliding_contacts": int(angles.size),
            "cone_excess_max": float(excess.max()) if excess.size else None,
            "coulomb_residual_median": float(np.median([r["coulomb_residual"] for r in good])) if good else None,
            "failures": [f"{r['problem']}: {r['reason']}" for r in rows if r["outcome"] != "converged"],
            "iterations_median": float(np.median([r["iterations"] for r in good])) if good else None,
            "seconds_total": float(sum(r.get("seconds") or 0.0 for r in rows)),
        }
    return out


def _fmt(value, spec: str, none: str = "-") -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return none
    return format(value, spec)


def markdown(report: dict) -> str:
    p = report["parameters"]
    lines = [
        "# lcpdyn's friction approximations against exact Coulomb on 34 third-party problems",
        "",
        f"Generated by `benchmarks/bench_fc3d_approximations.py` (lcpdyn {report['versions'].get('lcpdyn')}, "
        f"git {report['versions'].get('git')}); wall time {report['wall_s']:.0f} s. Models posed as bounded LCPs "
        "on the Delassus form and iterated to a self-consistent fixed point from a frictionless start "
        "(`solvers/friction_approximations.py`); exact answers from "
        f"{', '.join(p['exact_methods'])} at tolerance {p['exact_tolerance']:g}. Fixed-point tolerance "
        f"{p['fixed_point']['tolerance']:g}, at most {p['fixed_point']['max_iterations']} iterations and "
        f"{p['time_limit_s']:g} s per model and problem. Sliding: |u_T| > {p['metrics']['slip_threshold']:g} V, "
        "V = ||q||/sqrt(nc); zero force: |r| <= "
        f"{p['metrics']['zero_force']:g} max|r_exact|. Regularized: C_T = {p['regularized']['compliance_relative']:g} "
        f"tr(W_aa)/3, v_th = {p['regularized']['velocity_threshold_relative']:g} V.",
        "",
        "Columns: problems converged / attempted; contacts scored; force deviation |r - r_ex| / |r_ex| per "
        "contact (median, 95th percentile, pooled); near dev: the same against the exact answer nearest the "
        f"model's ({NEAR_METHOD} started from the model's answer; on hyperstatic sets the exact r is not unique, "
        "and this leaves that choice out); dF: RMS over problems of 100 (F - F_ex), F = sum |r_T| / mu "
        "/ sum r_N (near dF: against the nearest exact answer's F -- with sticking contacts F itself depends "
        "on the choice); misalignment of r_T against -u_T on sliding contacts (RMS over problems of the "
        "normal-force-weighted per-problem RMS; max over contacts; number of sliding contacts); largest cone "
        "excess |r_T| / (mu r_N) - 1; median Coulomb residual of the model's answer (framework's fc3d measure); "
        "failures.",
        "",
    ]
    skipped = report["skipped"]
    if skipped:
        lines.append("No exact solution (skipped): " + "; ".join(f"{s['problem']} ({s['reason']})" for s in skipped))
        lines.append("")
    header = (
        "| model | solved | contacts | dev median | dev p95 | near dev median | near dev p95 | dF RMS % "
        "| near dF RMS % | misalign RMS ° | misalign max ° | sliding | max cone excess | Coulomb res. median "
        "| failures |"
    )
    rule = "|" + "---|" * 15
    for name, block in report["families"].items():
        members = block["problems"]
        ranks = ", ".join(f"{m['problem']} {m['rank']}/{m['size']}" for m in members)
        lines += [f"## {name}", ""]
        if not members:
            lines += ["No problem of this family has an exact solution.", ""]
            continue
        if name == ALL:
            lines += [f"The {len(members)} problems with an exact answer, pooled.", "", header, rule]
        else:
            lines += [f"Problems (rank of W / size): {ranks}.", "", header, rule]
        for model, row in block["models"].items():
            lines.append(
                f"| {model} | {row['converged']}/{row['attempted']} | {row['contacts']} "
                f"| {_fmt(row['force_deviation_median'], '.3g')} | {_fmt(row['force_deviation_p95'], '.3g')} "
                f"| {_fmt(row['near_deviation_median'], '.3g')} | {_fmt(row['near_deviation_p95'], '.3g')} "
                f"| {_fmt(row['friction_force_rms_deviation_percent'], '.2f')} "
                f"| {_fmt(row['friction_force_rms_deviation_near_percent'], '.2f')} "
                f"| {_fmt(row['misalignment_rms_deg'], '.2f')} | {_fmt(row['misalignment_max_deg'], '.1f')} "
                f"| {row['sliding_contacts']} | {_fmt(row['cone_excess_max'], '.3f')} "
                f"| {_fmt(row['coulomb_residual_median'], '.1e')} | {len(row['failures'])} |"
            )
        failures = [f"{model}: {f}" for model, row in block["models"].items() for f in row["failures"]]
        if failures:
            lines += ["", "Failures: " + "; ".join(failures) + "."]
        lines.append("")
    lines += [
        "## Exact solutions",
        "",
        "| problem | contacts | method | relative residual | seconds |",
        "|---|---|---|---|---|",
    ]
    for e in report["exact"]:
        kept = next((a for a in e["attempts"] if a["success"]), None)
        if kept is None:
            continue
        lines.append(
            f"| {e['problem']} | {e['contacts']} | {kept['method']} | {kept['relative_residual']:.1e} "
            f"| {kept['seconds']:.2f} |"
        )
    return "\n".join(lines) + "\n"


# --- main ----------------------------------------------------------------------------------------
class _Journal:
    """Results streamed as they come (``<out>/fc3d_approximations.partial.jsonl``, one JSON line
    per exact solve and per (problem, model), flushed) with the exact answers beside them
    (``<out>/fc3d_approximations.cache/``): a run stopped by Ctrl-C, SIGTERM or a crash keeps
    what it finished, and ``--resume`` goes on from there when the parameters are the same. The
    journal is removed once the final files are written."""

    def __init__(self, out: Path, parameters: dict, resume: bool):
        self.path = out / "fc3d_approximations.partial.jsonl"
        self.cache = out / "fc3d_approximations.cache"
        self.exact: dict[str, dict] = {}
        self.records: dict[tuple, dict] = {}
        self.earlier_s = 0.0
        self.started = time.perf_counter()
        if resume and self.path.exists():
            lines = self.path.read_text().splitlines()
            try:
                events = [json.loads(line) for line in lines if line.strip()]
            except json.JSONDecodeError as exc:
                raise SystemExit(f"{self.path}: corrupt journal ({exc}); remove it to start again") from None
            if not events or events[0].get("kind") != "header" or events[0].get("parameters") != parameters:
                raise SystemExit(f"{self.path} was written with other parameters; run without --resume to start again")
            for event in events[1:]:
                if event["kind"] == "exact":
                    solved = any(a["success"] for a in event["entry"]["attempts"])
                    if not solved or (self.cache / f"{event['entry']['problem']}.npy").exists():
                        self.exact[event["entry"]["problem"]] = event["entry"]
                elif event["kind"] == "record" and event["entry"]["problem"] in self.exact:
                    self.records[(event["entry"]["problem"], event["entry"]["model"])] = event["entry"]
                elif event["kind"] == "time":
                    self.earlier_s += event["seconds"]
            print(
                f"resuming: {len(self.exact)} exact solves and {len(self.records)} model results from {self.path}",
                file=sys.stderr,
            )
            self.file = self.path.open("a")
        else:
            if self.cache.exists():
                for stale in self.cache.glob("*.npy"):
                    stale.unlink()
            self.file = self.path.open("w")
            self._line({"kind": "header", "parameters": parameters})
        self.cache.mkdir(exist_ok=True)

    def _line(self, event: dict) -> None:
        self.file.write(json.dumps(_jsonable(event)) + "\n")
        self.file.flush()
        os.fsync(self.file.fileno())

    def write(self, kind: str, entry: dict) -> None:
        self._line({"kind": kind, "entry": entry})
        self._line({"kind": "time", "seconds": time.perf_counter() - self.started})
        self.started = time.perf_counter()

    def close(self) -> None:
        self.file.close()
        self.path.unlink()
        for stale in self.cache.glob("*.npy"):
            stale.unlink()
        self.cache.rmdir()


def _terminate(signum, frame):
    raise KeyboardInterrupt(f"stopped by signal {signum}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", help="comma list of globs or substrings of the file names (default: all)")
    parser.add_argument("--models", default=",".join(MODELS), help="comma list (default %(default)s)")
    parser.add_argument("--exact-methods", help="comma list (default: auto, else siconos-prox,nsgs)")
    parser.add_argument("--time-limit", type=_positive_float, default=600.0, help="seconds per model and problem")
    parser.add_argument("--exact-time-limit", type=_positive_float, default=120.0, help="seconds per exact method")
    parser.add_argument("--out", default="results", help="results directory (default %(default)s)")
    parser.add_argument("--data", default=str(DATA), help="folder of the .dat problems (default %(default)s)")
    parser.add_argument("--resume", action="store_true", help="go on from an interrupted run's journal in --out")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        kind, *rest = json.loads(args.worker)
        (_worker_exact if kind == "exact" else _worker_model)(*rest)
        return 0
    signal.signal(signal.SIGTERM, _terminate)

    import solvers
    from solvers import friction_approximations as fa

    for label in args.models.split(","):
        try:
            fa.model_from_label(label)  # a bad label fails here, before any work
        except ValueError as exc:
            parser.error(f"--models: {exc}")
    models = args.models.split(",")
    if args.exact_methods:
        exact_methods = args.exact_methods.split(",")
    elif "auto" in solvers.FRICTION_CONTACT_METHODS:
        exact_methods = ["auto"]
    else:
        exact_methods = ["siconos-prox", "nsgs"]
    unknown = [m for m in exact_methods if m not in solvers.FRICTION_CONTACT_METHODS]
    if unknown:
        parser.error(f"--exact-methods: unknown {unknown}; choose from {list(solvers.FRICTION_CONTACT_METHODS)}")
    data = Path(args.data)
    problems = select_problems(data, args.problems.split(",") if args.problems else None)
    if not problems:
        parser.error(f"no problem files selected in {data}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    options = fa.FixedPointOptions()
    parameters = {
        "models": models,
        "exact_methods": exact_methods,
        "exact_tolerance": EXACT_TOLERANCE,
        "exact_time_limit_s": args.exact_time_limit,
        "time_limit_s": args.time_limit,
        "near_method": NEAR_METHOD,
        "fixed_point": {k: getattr(options, k) for k in options.__dataclass_fields__},
        "metrics": {k: getattr(fa.MetricOptions(), k) for k in fa.MetricOptions.__dataclass_fields__},
        "regularized": fa.Regularized().parameters(),
        "problems": [problem_name(p) for p in problems],
    }
    parameters = _jsonable(parameters)
    journal = _Journal(out, parameters, args.resume)

    started = time.perf_counter()
    exact, skipped, records = [], [], []
    interrupted = None
    try:
        for path in problems:
            name = problem_name(path)
            store = str(journal.cache / f"{name}.npy")
            entry = journal.exact.get(name)
            if entry is None:
                setup, attempts, abnormal = {}, [], None
                for method in exact_methods:  # one worker per method: a timeout does not end the chain
                    events, ended = _run_worker(
                        ["exact", str(path), [method], args.exact_time_limit, store], args.exact_time_limit
                    )
                    setup = setup or next((e for e in events if e["event"] == "setup"), {})
                    attempts += [e for e in events if e["event"] == "attempt"]
                    if ended:
                        attempts.append(
                            {"method": method, "success": False, "status": ended, "relative_residual": None}
                        )
                        abnormal = ended
                    if any(a["success"] for a in attempts):
                        break
                entry = {"problem": name, "family": family(name), "contacts": setup.get("contacts")}
                entry.update(attempts=attempts, rank=setup.get("rank"), size=setup.get("size"), abnormal=abnormal)
                journal.write("exact", entry)
            exact.append(entry)
            if not any(a["success"] for a in entry["attempts"]):
                tried = ", ".join(
                    f"{a['method']} {a['status']}"
                    + (f" {a['relative_residual']:.1e}" if a["relative_residual"] is not None else "")
                    + (f" (> {args.exact_time_limit:g} s)" if a["status"] == "timeout" else "")
                    for a in entry["attempts"]
                )
                reason = tried or entry.get("abnormal") or "no answer"
                skipped.append({"problem": name, "reason": reason})
                print(f"{name}: no exact solution ({reason})", file=sys.stderr, flush=True)
                continue
            for label in models:
                record = journal.records.get((name, label))
                if record is None:
                    events, abnormal = _run_worker(["model", str(path), label, args.time_limit, store], args.time_limit)
                    result = next((e for e in events if e["event"] == "result"), None)
                    record = {"problem": name, "family": family(name), "model": label}
                    if result is None:
                        record.update(outcome=abnormal or "crash", reason=abnormal or "no result", seconds=None)
                    else:
                        record.update(result)
                        record["outcome"] = "converged" if result["converged"] else "not converged"
                        if not result["converged"]:
                            record["reason"] = result["message"]
                    journal.write("record", record)
                records.append(record)
                print(
                    f"{name} {label}: {record['outcome']}"
                    + (
                        f", {record['iterations']} iterations, {record['seconds']:.1f} s"
                        if "iterations" in record
                        else ""
                    )
                    + (f" ({record.get('reason')})" if record["outcome"] != "converged" else ""),
                    file=sys.stderr,
                    flush=True,
                )
    except KeyboardInterrupt as exc:
        interrupted = str(exc) or "interrupted (Ctrl-C)"
    if interrupted:
        print(
            f"{interrupted}: {len(records)} results kept in {journal.path}; run again with --resume to go on",
            file=sys.stderr,
        )
        return 130
    families = {}
    for name in (*FAMILIES, EXAMPLES):
        members = [e for e in exact if e["family"] == name and e["problem"] not in {s["problem"] for s in skipped}]
        if not any(e["family"] == name for e in exact):
            continue
        families[name] = {
            "problems": [{"problem": e["problem"], "rank": e["rank"], "size": e["size"]} for e in members],
            "models": summarize(records, [e["problem"] for e in members]),
        }
    solved = [e for e in exact if e["problem"] not in {s["problem"] for s in skipped}]
    if len(families) > 1:
        families[ALL] = {
            "problems": [{"problem": e["problem"], "rank": e["rank"], "size": e["size"]} for e in solved],
            "models": summarize(records, [e["problem"] for e in solved]),
        }
    report = {
        "benchmark": "bench_fc3d_approximations",
        "versions": _versions(),
        "machine": _machine(),
        "parameters": parameters,
        "wall_s": time.perf_counter() - started + journal.earlier_s,
        "skipped": skipped,
        "exact": exact,
        "families": families,
        "records": records,
    }
    report = _jsonable(report)
    text = markdown(report)
    _write_atomically(out / "fc3d_approximations.json", json.dumps(report, indent=1))
    _write_atomically(out / "fc3d_approximations.md", text)
    journal.close()
    print(text)
    print(f"written {out / 'fc3d_approximations.json'} and {out / 'fc3d_approximations.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
