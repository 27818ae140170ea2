"""The exact-Coulomb 3D friction-contact solvers on 34 third-party problems (Siconos' test set).

Problems: ``../shared/problems/fc3d/*.dat`` beside the clone (``--data``, or
``$LCPDYN_FC3D_PROBLEMS``), Siconos' plain-text dumps of local
problems u = W r + q, r in the Coulomb cone per contact -- capsules and boxes piling up, a Kapla
tower (570 contacts), a rock pile (463), a Mars rover's wheels, spheres, confetti, small
hand-made cases (provenance, licence and format: that folder's README.md). Each is read with
``solvers.read_siconos_dat`` and solved through the front door ``solvers.solve``.

Solvers (``--methods``; default: every lcpdyn method in ``solvers.FRICTION_CONTACT_METHODS``,
i.e. the names not starting with ``siconos-``, picked up as they are added, then
``siconos-nsgs``, ``siconos-nsn-ac``, ``siconos-prox``). Iteration caps: ``nsgs`` max_sweeps
20000, ``siconos-nsgs`` max_iterations 20000, the other Siconos methods 1000; the other lcpdyn
methods get their defaults (only ``tolerance`` is passed).

Scoring (Acary, Brémond, Huber, INRIA RR-9118, 2017), recomputed here for every solver, never
taken from it: the relative natural-map error ``||F_nat(r)||_2 / ||q||_2`` (1 if q = 0), with
``F_nat(r)_a = r_a - P_K(r_a - û_a)`` per contact, ``û = W r + q + [mu ||u_T||, 0, 0]`` and K
the cone ``{||r_T|| <= mu r_N}`` (closed-form projection, as ``_project3`` in
solvers/friction_contact.py). Target 1e-8. The same tolerance rule for every solver: solve with
tolerance 1e-8 (Siconos: front-door ``tolerance`` and ``siconos_tolerance`` both 1e-8); if the
recomputed error exceeds 1e-8, solve again from scratch with 1e-10, then 1e-12, and keep the
last run. (|F_nat| / |q| compares reactions with velocities, so it is not invariant under a change
of units, while the solvers' own criteria are: when the reactions are large against |q|, 1e-8 by
it asks for a tighter solver tolerance -- Confeti-ex03: reactions 4e5, |q| = 52.) A problem
counts as solved by a solver when the kept run's recomputed error is <= 1e-8 and the time of the
run(s) needed (their sum when retries were needed) is within ``--time-limit``
(default 60 s), whatever status the solver reported (its status and the framework's
``relative_residual`` are recorded beside). Siconos' own error divides by max(||q||, ||r||, ||u||),
so it can read far below this measure when the reactions are large (``info["siconos_error"]``).

Timing: every (solver, problem) pair runs in its own worker process (this file with
``--worker``), one at a time, with BLAS on one thread (OPENBLAS/OMP/MKL_NUM_THREADS=1 and
threadpoolctl). The worker reads the problem (not timed), warms the method up once on the
1-contact ``FrictionContact3D_1c.dat`` (JIT compilation for lcpdyn's methods, loading Siconos
for its own; reported apart as ``warmup_s``, never in the times), then times ``solvers.solve``
with ``time.perf_counter``: when a solve takes under 1 s it is repeated while the solves total
under 1 s, up to 201 solves in all, and the median is taken (a 50 µs solve is timed 201 times:
with 5, machine noise of +-30 % decided which of two solvers within a few per cent was
fastest). A solve still running at the time limit is ended by SIGALRM (the pair is a timeout);
a worker that dies (Siconos can abort the process) is recorded as a crash and the benchmark goes
on.

Interleaved timing (the times of record; ``--no-interleave`` skips it): the solvers that solved a
problem in their own process in under 1 s are then timed again together, in one more worker
process per problem: each is warmed up as above and solves the problem once untimed (its answer
judged again against the target), then rounds follow, every solver once per round in a new
random order (seeded), for up to 201 rounds and at least 3, while the solves total under 1 s per
solver; a solver's time is the median of its rounds (a retried pair solves the same tolerance
sequence per round). Timed side by side, the solvers share whatever the machine does meanwhile
(frequency, other tenants), which separate processes minutes apart do not: on this machine two
processes timing the same sub-millisecond solve differed by up to 130 %, the same solve
interleaved with itself by a few per cent. The slower pairs keep the time of their own process.
Both sets of times are in the JSON (``seconds`` of record, ``seconds_isolated``), and the
report gives rho_s(1) by either.

Timing resolution (the A/A control): the judged method (``--replicate``, default ``auto``) solves
every problem a second time, in another worker process right after the first, like any other
pair, and enters the interleaved rounds a second time as ``"auto (A/A)"``. Two runs of the same
computation differ only by what the machine adds; the run's timing resolution ``eps`` is the
90th percentile over the problems of ``|t1 - t2| / min(t1, t2)``, reported for the times of
record and for the isolated ones. Times closer than that are not told apart by this run, so
beside the strict rho_s(1) the report gives rho_s(1 + eps), ties within the resolution counted
for both -- which matters for ``auto``, whose stages are the other lcpdyn methods: where it runs
``newton``'s computation the strict comparison of the two is decided by noise and by auto's
dispatch (a few microseconds). The replicate never enters the profiles.

Outputs (``--out``, default ``results/``): ``bench_fc3d.json`` (versions, machine, parameters,
one record per pair, summary), ``bench_fc3d.txt`` (the table), ``bench_fc3d_profiles.png``
(Dolan--Moré performance profiles: rho_s(tau) = share of the problems that s solves within tau
times the fastest solver's time on that problem) and ``bench_fc3d_profiles_peers.png`` (the same
for the replicated method against Siconos' solvers alone). The table, rho_s(1) and each solver's
unsolved problems (timeout, error not reached, crash) are printed.

Usage: ``python benchmarks/bench_fc3d.py [--problems Rover11035,FC3D_Example1,'Capsules-*']
[--methods nsgs,siconos-prox] [--time-limit 60] [--out results] [--data DIR]``. A pattern in
``--problems`` with ``*?[`` is a glob on the file name, otherwise a substring of it.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import fnmatch  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import numbers  # noqa: E402
import platform  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DATA = Path(os.environ.get("LCPDYN_FC3D_PROBLEMS", ROOT.parent / "shared" / "problems" / "fc3d"))
WARMUP_PROBLEM = "FrictionContact3D_1c.dat"
TARGET = 1e-8  # on the recomputed ||F_nat|| / ||q||
TOLERANCES = (1e-8, 1e-10, 1e-12)  # the run, and the retries while the recomputed error misses TARGET
SICONOS_DEFAULT = ("siconos-nsgs", "siconos-nsn-ac", "siconos-prox")
CAPS = {"nsgs": {"max_sweeps": 20000}, "siconos-nsgs": {"max_iterations": 20000}}
SICONOS_CAP = {"max_iterations": 1000}  # every other siconos-* method
REPEAT_BELOW_S = 1.0  # a solve shorter than this is repeated ...
MAX_SOLVES = 201  # ... up to this many solves in all ...
REPEAT_BUDGET_S = 1.0  # ... while the solves so far total less than this
INTERLEAVE_BELOW_S = 1.0  # the pairs solved in under this are timed again, interleaved ...
INTERLEAVE_ROUNDS = 201  # ... for up to this many rounds ...
INTERLEAVE_MIN_ROUNDS = 3  # ... and at least this many ...
INTERLEAVE_BUDGET_S = 1.0  # ... while the solves total under this per solver
INTERLEAVE_SEED = 20171  # of the rounds' random orders
WORKER_SETUP_S = 300.0  # allowance for imports, reading and warm-up before the parent kills a worker
MARK = "BENCH_FC3D "  # prefix of the worker's JSON lines (Siconos may print on stdout too)


# --- the error measure -----------------------------------------------------------------------


def project_on_cones(x, mu):
    """Row-wise projection of ``x`` (nc, 3), rows (normal, t1, t2), onto ``{|x_T| <= mu x_N}``:
    the closed form of ``solvers.friction_contact._project3``, vectorized."""
    import numpy as np

    xn, x1, x2 = x[:, 0], x[:, 1], x[:, 2]
    t = np.hypot(x1, x2)
    inside = (t <= mu * xn) & (xn >= 0.0)  # (xn >= 0 matters for mu = 0, where the cone is a ray)
    polar = ~inside & (mu * t <= -xn)
    side = ~(inside | polar)  # t > 0 here
    out = np.zeros_like(x)
    out[inside] = x[inside]
    p = (xn[side] + mu[side] * t[side]) / (1.0 + mu[side] ** 2)
    out[side, 0] = p
    out[side, 1] = mu[side] * p * x1[side] / t[side]
    out[side, 2] = mu[side] * p * x2[side] / t[side]
    return out


def natural_map_error(W, q, mu, r) -> float:
    """``||F_nat(r)||_2 / ||q||_2`` (``||q||`` = 0 counts as 1); inf if r is not finite."""
    import numpy as np

    r = np.asarray(r, dtype=np.float64)
    if r.shape != q.shape or not np.all(np.isfinite(r)):
        return math.inf
    u = (W @ r + q).reshape(-1, 3)
    R = r.reshape(-1, 3)
    u_hat = u.copy()
    u_hat[:, 0] += mu * np.hypot(u[:, 1], u[:, 2])
    F = R - project_on_cones(R - u_hat, mu)
    scale = float(np.linalg.norm(q)) or 1.0
    error = float(np.linalg.norm(F)) / scale
    return error if math.isfinite(error) else math.inf


# --- one (solver, problem) pair, in a worker process -----------------------------------------


def method_options(method: str, tolerance: float) -> dict:
    """The options passed with ``tolerance`` (module docstring: caps; none for lcpdyn's others)."""
    if method in CAPS:
        options = dict(CAPS[method])
    elif method.startswith("siconos-"):
        options = dict(SICONOS_CAP)
    else:
        options = {}
    if method.startswith("siconos-"):
        options["siconos_tolerance"] = tolerance
    return options


def _jsonable(value):
    """Numbers, strings and containers of them as JSON can hold them (non-finite -> None)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (bool, str)) or value is None:
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value) if math.isfinite(value) else None
    if hasattr(value, "tolist"):  # NumPy arrays and scalars (np.bool_ is not a numbers.Integral)
        return _jsonable(value.tolist())
    return str(value)


def _warm_up(solvers, warm, method: str) -> None:
    """Compile (lcpdyn) or load (Siconos) ``method`` on the 1-contact problem ``warm``."""
    solvers.solve(warm, method=method, tolerance=TOLERANCES[0], **method_options(method, TOLERANCES[0]))
    if "dense_limit" in solvers.friction_contact.options_fields(method):
        # every stage and both linear algebras are compiled separately (auto may finish the
        # 1-contact problem in its first stage): warm each of them up
        for stage in ("newton", "prox"):
            solvers.solve(warm, method=stage, tolerance=TOLERANCES[0])
            solvers.solve(warm, method=stage, tolerance=TOLERANCES[0], dense_limit=0)


def _emitter(out):
    """``emit(record)``: one JSON line on the worker's channel ``out``, flushed (so that what was
    measured before a timeout or a crash reaches the parent)."""

    def emit(record):
        out.write(MARK + json.dumps(_jsonable(record)) + "\n")
        out.flush()

    return emit


def _worker_inputs(path: str):
    """In a worker: BLAS on one thread, then (the ``solvers`` package, the problem at ``path``,
    the warm-up problem beside it)."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    import solvers

    warm = Path(path).with_name(WARMUP_PROBLEM)
    return solvers, solvers.read_siconos_dat(path), solvers.read_siconos_dat(warm)


def _run_worker(mode: str, arguments: list, timeout: float) -> subprocess.CompletedProcess:
    """This file as a worker process (``--worker`` or ``--interleave-worker``) with BLAS on one
    thread; raises :class:`subprocess.TimeoutExpired` after ``timeout`` s."""
    command = [sys.executable, __file__, mode, json.dumps(arguments)]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)


def _events(stdout: str) -> list[dict]:
    """The worker's JSON lines (``MARK``-prefixed) in ``stdout``, in order."""
    return [json.loads(line[len(MARK) :]) for line in stdout.splitlines() if line.startswith(MARK)]


def _worker(method: str, path: str, time_limit: float, out) -> None:
    """Solve one problem with one method under the tolerance rule; each step is one JSON line on
    ``out`` (:func:`_emitter`)."""
    import numpy as np

    emit = _emitter(out)
    solvers, problem, warm = _worker_inputs(path)
    start = time.perf_counter()
    _warm_up(solvers, warm, method)
    emit({"event": "setup", "contacts": problem.contacts, "warmup_s": time.perf_counter() - start})

    spent = 0.0  # the reported time of the attempts so far
    for tolerance in TOLERANCES:
        options = method_options(method, tolerance)
        remaining = time_limit - spent
        # ends the process (SIGALRM's default action) if this solve outlasts the budget left
        signal.setitimer(signal.ITIMER_REAL, remaining + 0.5)
        times = []
        while True:
            start = time.perf_counter()
            result = solvers.solve(problem, method=method, tolerance=tolerance, **options)
            times.append(time.perf_counter() - start)
            signal.setitimer(signal.ITIMER_REAL, 0)
            if len(times) == 1:
                first = result
            if times[0] >= REPEAT_BELOW_S or len(times) >= MAX_SOLVES or sum(times) >= REPEAT_BUDGET_S:
                break
        seconds = float(np.median(times))
        spent += seconds
        error = natural_map_error(problem.W, problem.b, problem.mu, first.r)
        emit(
            {
                "event": "attempt",
                "tolerance": tolerance,
                "options": options,
                "seconds": seconds,
                "solves": len(times),
                "times": times,
                "error": error,
                "status": first.status.name,
                "success": bool(first.success),
                "iterations": first.iterations,
                "relative_residual": first.relative_residual,
                "message": first.message,
                "info": first.info,
            }
        )
        if error <= TARGET or spent > time_limit:
            break
    emit({"event": "done"})


def run_pair(method: str, path: Path, time_limit: float) -> dict:
    """One (solver, problem) pair in a fresh worker process; the record of the pair."""
    started = time.perf_counter()
    killed = False
    try:
        done = _run_worker("--worker", [method, str(path), time_limit], time_limit + WORKER_SETUP_S)
        stdout, stderr, code = done.stdout, done.stderr, done.returncode
    except subprocess.TimeoutExpired as exc:  # the safety net: the worker's own alarm should come first
        stdout, stderr, code, killed = exc.stdout or "", exc.stderr or "", None, True
        stdout = stdout.decode(errors="replace") if isinstance(stdout, bytes) else stdout
        stderr = stderr.decode(errors="replace") if isinstance(stderr, bytes) else stderr
    events = _events(stdout)
    record = {"method": method, "problem": problem_name(path), "file": path.name}
    record["wall_s"] = time.perf_counter() - started
    setup = next((e for e in events if e["event"] == "setup"), {})
    attempts = [e for e in events if e["event"] == "attempt"]
    record["contacts"] = setup.get("contacts", header_contacts(path))
    record["warmup_s"] = setup.get("warmup_s")
    record["attempts"] = attempts
    finished = any(e["event"] == "done" for e in events)
    kept = attempts[-1] if attempts else None
    seconds = sum(a["seconds"] for a in attempts) if attempts else None
    error = None if kept is None else kept["error"]
    record.update(
        seconds=seconds,
        error=error,
        retried=len(attempts) > 1,
        iterations=None if kept is None else kept["iterations"],
        status=None if kept is None else kept["status"],
        relative_residual=None if kept is None else kept["relative_residual"],
        message=None if kept is None else kept["message"],
    )
    within = seconds is not None and seconds <= time_limit
    record["solved"] = bool(finished and within and error is not None and error <= TARGET)
    if record["solved"]:
        record["outcome"] = "solved"
    elif killed or code == -signal.SIGALRM or (finished and not within):
        record["outcome"] = "timeout"
        record["seconds_finished_runs"], record["seconds"] = seconds, None  # no time counts
        record["reason"] = f"time limit {time_limit:g} s" + (
            f" (error {error:.1e} after {seconds:.1f} s)" if error is not None else ""
        )
    elif finished:
        record["outcome"] = "error not reached"
        record["reason"] = f"error {error:.1e} > {TARGET:g}" if error is not None else "non-finite reactions"
        record["reason"] += f" ({kept['status']}, {kept['iterations']} iterations)"
    else:
        record["outcome"] = "crash"
        record["reason"] = _crash_reason(code, stderr)
    return record


def _crash_reason(code, stderr: str) -> str:
    if code is not None and code < 0:
        try:
            what = f"killed by {signal.Signals(-code).name}"
        except ValueError:
            what = f"killed by signal {-code}"
    else:
        what = f"exit {code}"
    tail = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    return f"{what}: {tail[-1][:200]}" if tail else what


# --- interleaved timing: the solvers of one problem in one process, round after round -----------


def entrants_of(records: list[dict], replicate: str | None) -> list[dict]:
    """The solvers timed again in one process (module docstring, "Interleaved timing"): those
    that solved the problem in their own process in under ``INTERLEAVE_BELOW_S``, each with the
    tolerances of its attempts (a retried solve is timed as the same sequence), and the
    replicate's second entry ``"<method> (A/A)"`` when the replicate is one of them."""
    chosen = []
    for r in records:
        if r["solved"] and r["seconds"] < INTERLEAVE_BELOW_S:
            chosen.append(
                {"label": r["method"], "method": r["method"], "tolerances": [a["tolerance"] for a in r["attempts"]]}
            )
    if replicate and any(e["method"] == replicate for e in chosen):
        first = next(e for e in chosen if e["method"] == replicate)
        chosen.append(dict(first, label=f"{replicate} (A/A)"))
    return chosen


def _interleave_worker(path: str, entrants: list[dict], out) -> None:
    """Time ``entrants`` on one problem in this one process (module docstring); one JSON line
    per phase on ``out`` (:func:`_emitter`)."""
    import numpy as np

    emit = _emitter(out)
    solvers, problem, warm = _worker_inputs(path)
    for method in dict.fromkeys(e["method"] for e in entrants):
        _warm_up(solvers, warm, method)

    def run(entrant):
        for tolerance in entrant["tolerances"]:
            result = solvers.solve(problem, method=entrant["method"], tolerance=tolerance,
                                   **method_options(entrant["method"], tolerance))  # fmt: skip
        return result

    # one untimed solve each: the answer is judged again (the same computation as in the pair's
    # own process), and the problem's data are in the caches for every entrant alike
    errors = {}
    for entrant in entrants:
        result = run(entrant)
        errors[entrant["label"]] = natural_map_error(problem.W, problem.b, problem.mu, result.r)
    emit({"event": "checked", "errors": errors})
    times = {e["label"]: [] for e in entrants}
    budget = INTERLEAVE_BUDGET_S * len(entrants)
    spent, rounds = 0.0, 0
    # each round in a new order (seeded: the same orders in every run), so that no entrant always
    # comes first or always follows the same one (whose memory traffic it would inherit)
    orders = np.random.default_rng(INTERLEAVE_SEED)
    while rounds < INTERLEAVE_ROUNDS and (rounds < INTERLEAVE_MIN_ROUNDS or spent < budget):
        for k in orders.permutation(len(entrants)):
            entrant = entrants[k]
            start = time.perf_counter()
            run(entrant)
            elapsed = time.perf_counter() - start
            times[entrant["label"]].append(elapsed)
            spent += elapsed
        rounds += 1
    emit({"event": "interleaved", "rounds": rounds, "medians": {k: float(np.median(v)) for k, v in times.items()},
          "times": times})  # fmt: skip


def run_interleaved(path: Path, entrants: list[dict]) -> dict:
    """The interleaved timing of ``entrants`` on ``path`` in one worker process:
    ``{"ok": True, "rounds", "medians", "errors"}`` or ``{"ok": False, "reason"}``."""
    if len(entrants) < 2:
        return {"ok": False, "reason": "fewer than two solvers to compare"}
    timeout = WORKER_SETUP_S + 4.0 * INTERLEAVE_BUDGET_S * len(entrants) + 60.0
    try:
        done = _run_worker("--interleave-worker", [str(path), entrants], timeout)
    except subprocess.TimeoutExpired:
        return {"ok": False, "reason": f"not finished in {timeout:.0f} s"}
    events = {event["event"]: event for event in _events(done.stdout)}
    if "interleaved" not in events:
        return {"ok": False, "reason": _crash_reason(done.returncode, done.stderr)}
    errors = events["checked"]["errors"]
    out = {"ok": True, "rounds": events["interleaved"]["rounds"], "medians": events["interleaved"]["medians"]}
    out["errors"] = errors
    out["times"] = events["interleaved"]["times"]
    return out


def apply_interleaved(records: list[dict], replicates: list[dict], timing: dict) -> None:
    """Make the interleaved medians the records' times (``seconds``; the pair's own time stays
    as ``seconds_isolated``), for the entrants whose answer was judged solved again; the others
    keep their isolated time (``timing``: ``"interleaved"`` or ``"isolated"``)."""
    for group, suffix in ((records, ""), (replicates, " (A/A)")):
        for r in group:
            r.setdefault("seconds_isolated", r["seconds"])
            r["timing"] = "isolated"
            label = r["method"] + suffix
            if not timing.get("ok") or label not in timing["medians"]:
                continue
            error = timing["errors"][label]
            if error is None or error > TARGET:  # the same computation should give the same answer
                r["interleave_note"] = f"answer in the interleaved run: error {error} > {TARGET:g}; isolated time kept"
                continue
            r["seconds"] = timing["medians"][label]
            r["timing"] = "interleaved"


# --- problems, methods -----------------------------------------------------------------------


def problem_name(path: Path) -> str:
    name = path.name
    for suffix in (".dat", ".hdf5"):
        name = name.removesuffix(suffix)
    return name


def header_contacts(path: Path) -> int | None:
    """nc from the file's first two numbers (d, nc), without reading the rest."""
    try:
        with open(path) as handle:
            tokens = handle.read(256).split()
        return int(tokens[1])
    except (OSError, IndexError, ValueError):
        return None


def select_problems(data: Path, patterns: list[str] | None) -> list[Path]:
    files = sorted(data.glob("*.dat"))
    if not patterns:
        return files
    chosen = []
    for path in files:
        for pattern in patterns:
            glob = any(c in pattern for c in "*?[")
            if (glob and fnmatch.fnmatch(path.name, pattern)) or (not glob and pattern in path.name):
                chosen.append(path)
                break
    return chosen


def default_methods(available) -> list[str]:
    ours = [m for m in available if not m.startswith("siconos-")]
    return ours + [m for m in SICONOS_DEFAULT if m in available]


# --- performance profiles --------------------------------------------------------------------


def performance_ratios(records: list[dict], methods: list[str], problems: list[str], key: str = "seconds") -> dict:
    """ratio[method][problem] = time / fastest solved time on that problem (inf if not solved);
    the times are the records' ``key``."""
    times = {(r["method"], r["problem"]): r[key] for r in records if r["solved"]}
    ratios = {m: {} for m in methods}
    for problem in problems:
        solved = [times[(m, problem)] for m in methods if (m, problem) in times]
        best = min(solved) if solved else None
        for m in methods:
            t = times.get((m, problem))
            ratios[m][problem] = math.inf if t is None else t / max(best, 1e-12)
    return ratios


def peer_rho(records: list[dict], methods: list[str], problems: list[str], key: str = "seconds") -> dict:
    """rho_s(1) of each lcpdyn method against Siconos' solvers alone (its own stages -- auto's
    Newton -- are not its rivals there), and of ``lcpdyn (best)``, the fastest lcpdyn method per
    problem; empty when no Siconos solver ran."""
    peers = [m for m in methods if m.startswith("siconos-")]
    ours = [m for m in methods if not m.startswith("siconos-")]
    if not peers or not ours:
        return {}
    times = {(r["method"], r["problem"]): r[key] for r in records if r["solved"]}
    out = {}
    for m in ours + ["lcpdyn (best)"]:
        members = ours if m == "lcpdyn (best)" else [m]
        wins = 0
        for problem in problems:
            mine = [times[(x, problem)] for x in members if (x, problem) in times]
            theirs = [times[(x, problem)] for x in peers if (x, problem) in times]
            wins += bool(mine) and (not theirs or min(mine) <= min(theirs))
        out[m] = wins / len(problems) if problems else 0.0
    return out


RESOLUTION_QUANTILE = 0.9


def timing_resolution(records: list[dict], replicates: list[dict], key: str = "seconds") -> dict:
    """The A/A control: per problem solved in both runs of the replicated method,
    ``|t1 - t2| / min(t1, t2)`` of the records' ``key``, and ``resolution``, their
    ``RESOLUTION_QUANTILE`` quantile (None when no problem was solved twice)."""
    first = {(r["method"], r["problem"]): r for r in records}
    spread = {}
    for again in replicates:
        once = first.get((again["method"], again["problem"]))
        if once and once["solved"] and again["solved"]:
            t1, t2 = once[key], again[key]
            spread[again["problem"]] = abs(t1 - t2) / max(min(t1, t2), 1e-12)
    if not spread:
        return {"per_problem": spread, "resolution": None}
    values = sorted(spread.values())
    # the quantile by the nearest-rank rule: one of the measured spreads, never an interpolation
    rank = max(math.ceil(RESOLUTION_QUANTILE * len(values)), 1)
    return {"per_problem": spread, "resolution": values[rank - 1], "quantile": RESOLUTION_QUANTILE}


def rho(ratios: dict, tau: float) -> float:
    values = list(ratios.values())
    return sum(v <= tau for v in values) / len(values) if values else 0.0


def figure(ratios: dict, resolution: float | None, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    finite = [v for per in ratios.values() for v in per.values() if math.isfinite(v)]
    tau_max = max(2.0, 1.5 * max(finite, default=2.0))
    fig, ax = plt.subplots(figsize=(8, 5))
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (method, per) in enumerate(ratios.items()):
        values = np.sort([v for v in per.values() if math.isfinite(v)])
        n = len(per)
        xs = np.concatenate(([1.0], values, [tau_max]))
        ys = np.concatenate(([0.0], np.arange(1, values.size + 1) / n, [values.size / n]))
        ax.step(
            xs,
            ys,
            where="post",
            lw=2,
            color=cycle[i % len(cycle)],
            ls="--" if method.startswith("siconos-") else "-",
            label=f"{method}: {values.size}/{n} solved, ρ(1) = {rho(per, 1.0):.2f}"
            + ("" if resolution is None else f", ρ(1 + ε) = {rho(per, 1.0 + resolution):.2f}"),
        )
    if resolution is not None:
        ax.axvline(
            1.0 + resolution,
            color="0.4",
            ls=":",
            lw=1,
            label=f"1 + ε, the run's timing resolution (A/A): {resolution:.1%}",
        )
    ax.set_xscale("log")
    ax.set_xlim(1.0, tau_max)
    ax.set_ylim(0.0, 1.02)
    ax.set_xlabel("τ (time / fastest solver's time on the problem)")
    ax.set_ylabel("ρ(τ): share of problems solved within τ × fastest")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# --- report ----------------------------------------------------------------------------------


def _seconds(value) -> str:
    if value is None:
        return "-"
    if value < 1e-3:
        return f"{value * 1e6:.0f}us"
    if value < 1.0:
        return f"{value * 1e3:.1f}ms"
    return f"{value:.2f}s"


_MARKS = {"solved": "y", "timeout": "T", "error not reached": "n", "crash": "X"}


def table(records: list[dict], methods: list[str], problems: list[tuple[str, int | None]], time_limit) -> str:
    by_pair = {(r["method"], r["problem"]): r for r in records}
    width = 25
    lines = [
        f"fc3d benchmark: recomputed ||F_nat||/||q|| (target {TARGET:g}), time (median, both runs summed "
        f"when retried at {', '.join(f'{t:g}' for t in TOLERANCES[1:])}: '*'), iterations, solved? "
        f"(y, n = error not reached, T = timeout {time_limit:g} s: error and iterations of the run that "
        "finished, if one did; X = crash); BLAS 1 thread",
        f"{'problem':30s} {'nc':>4s} " + " ".join(f"{m:>{width}s}" for m in methods),
    ]
    for name, contacts in problems:
        cells = []
        for m in methods:
            r = by_pair.get((m, name))
            if r is None:
                cells.append(f"{'(not run)':>{width}s}")
                continue
            error = "-" if r["error"] is None else f"{r['error']:.1e}"
            iterations = "-" if r["iterations"] is None else str(r["iterations"])
            mark = _MARKS[r["outcome"]] + ("*" if r["retried"] else " ")
            seconds = f">{time_limit:g}s" if r["outcome"] == "timeout" else _seconds(r["seconds"])
            cells.append(f"{error:>7s} {seconds:>8s} {iterations:>5s} {mark:<2s}")
        nc = "-" if contacts is None else str(contacts)
        lines.append(f"{name:30s} {nc:>4s} " + " ".join(f"{c:>{width}s}" for c in cells))
    return "\n".join(lines)


def _write_atomically(path: Path, data) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    if isinstance(data, bytes):
        temporary.write_bytes(data)
    else:
        temporary.write_text(data)
    os.replace(temporary, path)


def _versions() -> dict:
    import importlib.metadata

    import numpy
    import scipy

    import lcpdyn

    versions = {"python": platform.python_version(), "numpy": numpy.__version__, "scipy": scipy.__version__}
    versions["lcpdyn"] = getattr(lcpdyn, "__version__", None)
    try:
        versions["siconos"] = importlib.metadata.version("siconos")
    except importlib.metadata.PackageNotFoundError:
        try:
            import siconos

            versions["siconos"] = str(getattr(siconos, "version", None))
        except ImportError:
            versions["siconos"] = None
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
        dirty = subprocess.run(["git", "status", "--porcelain"], capture_output=True, text=True, cwd=ROOT)
        versions["git"] = head.stdout.strip() + (" (modified)" if dirty.stdout.strip() else "")
    except OSError:
        versions["git"] = None
    return versions


def _machine() -> dict:
    model = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"platform": platform.platform(), "cpu": model, "cpu_count": os.cpu_count()}


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not value > 0 or not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return value


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", help="comma list of globs or substrings of the file names (default: all)")
    parser.add_argument("--methods", help="comma list (default: lcpdyn's methods + siconos-nsgs, -nsn-ac, -prox)")
    parser.add_argument("--time-limit", type=_positive_float, default=60.0, help="seconds per pair (%(default)s)")
    parser.add_argument("--out", default="results", help="results directory (default %(default)s)")
    parser.add_argument("--data", default=str(DATA), help="folder of the .dat problems (default %(default)s)")
    parser.add_argument(
        "--replicate",
        default="auto",
        help="the method solved twice per problem for the timing resolution (A/A control); 'none' to skip "
        "(default %(default)s, skipped when not among --methods)",
    )
    parser.add_argument(
        "--no-interleave",
        action="store_true",
        help="time each pair in its own process only (skip the interleaved timing; module docstring)",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--interleave-worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker or args.interleave_worker:
        out = os.fdopen(os.dup(1), "w")  # our channel; C code printing on fd 1 goes to stderr
        os.dup2(2, 1)
        if args.worker:
            _worker(*json.loads(args.worker), out)
        else:
            _interleave_worker(*json.loads(args.interleave_worker), out)
        return 0

    import solvers

    available = tuple(solvers.FRICTION_CONTACT_METHODS)
    if args.methods:
        methods = [m.strip() for m in args.methods.split(",") if m.strip()]
        unknown = [m for m in methods if m not in available]
        if unknown:
            parser.error(f"--methods: unknown {unknown}; choose from {list(available)}")
    else:
        methods = default_methods(available)
    if args.replicate != "none" and args.replicate not in available:
        parser.error(f"--replicate: unknown method {args.replicate!r}; choose from {list(available)} or 'none'")
    replicate = None if args.replicate == "none" or args.replicate not in methods else args.replicate
    data = Path(args.data)
    if not (data / WARMUP_PROBLEM).is_file():
        parser.error(f"--data {data}: no {WARMUP_PROBLEM} there (needed for the warm-up)")
    patterns = [p.strip() for p in args.problems.split(",") if p.strip()] if args.problems else None
    paths = select_problems(data, patterns)
    if not paths:
        parser.error(f"--problems {args.problems!r}: no file in {data} matches")
    out = Path(args.out)
    try:  # before the runs, not after
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        parser.error(f"--out {out}: cannot create it ({exc.strerror})")
    if not os.access(out, os.W_OK):
        parser.error(f"--out {out}: not writable")

    print(f"bench_fc3d: {len(paths)} problems x {len(methods)} solvers {methods}, "
          f"time limit {args.time_limit:g} s per pair", file=sys.stderr)  # fmt: skip
    records, replicates, interleaved = [], [], {}
    interrupted = False
    started = time.perf_counter()
    try:
        for path in paths:
            mine, again = [], []
            for i, method in enumerate(methods + ([replicate] if replicate else [])):
                record = run_pair(method, path, args.time_limit)
                (mine if i < len(methods) else again).append(record)
                label = method if i < len(methods) else f"{method} (A/A)"
                error = "-" if record["error"] is None else f"{record['error']:.1e}"
                print(
                    f"  {record['problem']:30s} {label:15s} {record['outcome']:18s} error {error:>8s} "
                    f"time {_seconds(record['seconds']):>9s} (wall {record['wall_s']:.1f} s)",
                    file=sys.stderr,
                )
            records.extend(mine)
            replicates.extend(again)
            if not args.no_interleave:
                entrants = entrants_of(mine, replicate)
                timing = run_interleaved(path, entrants)
                apply_interleaved(mine, again, timing)
                interleaved[problem_name(path)] = {k: v for k, v in timing.items() if k != "times"}
                interleaved[problem_name(path)]["entrants"] = [e["label"] for e in entrants]
                print(
                    f"  {problem_name(path):30s} interleaved: "
                    + (
                        f"{timing['rounds']} rounds, "
                        + ", ".join(f"{k} {_seconds(v)}" for k, v in timing["medians"].items())
                        if timing["ok"]
                        else timing["reason"]
                    ),
                    file=sys.stderr,
                )
    except KeyboardInterrupt:  # keep what was measured
        interrupted = True
        print("bench_fc3d: interrupted; reporting the pairs measured so far", file=sys.stderr)
    for r in records + replicates:  # pairs of a problem whose interleaved timing did not happen
        r.setdefault("seconds_isolated", r["seconds"])
        r.setdefault("timing", "isolated")
    wall = time.perf_counter() - started

    contacts = {}
    for r in records:
        contacts.setdefault(r["problem"], r["contacts"])
    problems = [(problem_name(p), contacts.get(problem_name(p), header_contacts(p))) for p in paths]
    names = [name for name, _ in problems if name in contacts]
    ratios = performance_ratios(records, methods, names)
    aa = timing_resolution(records, replicates)
    eps = aa["resolution"]
    aa_isolated = timing_resolution(records, replicates, key="seconds_isolated")
    ratios_isolated = performance_ratios(records, methods, names, key="seconds_isolated")
    summary = {}
    for m in methods:
        mine = [r for r in records if r["method"] == m]
        summary[m] = {
            "solved": sum(r["solved"] for r in mine),
            "problems": len(mine),
            "rho_1": rho(ratios[m], 1.0),
            "rho_1_plus_resolution": None if eps is None else rho(ratios[m], 1.0 + eps),
            "rho_1_isolated": rho(ratios_isolated[m], 1.0),
            "warmup_s": max((r["warmup_s"] for r in mine if r["warmup_s"] is not None), default=None),
            "unsolved": {r["problem"]: f"{r['outcome']}: {r['reason']}" for r in mine if not r["solved"]},
        }
    text = table(records, methods, problems, args.time_limit)
    lines = [text, ""]
    timed = sum(r["timing"] == "interleaved" for r in records)
    lines.append(
        f"times: {timed} of {sum(r['solved'] for r in records)} solved pairs timed interleaved (the solvers "
        f"of a problem that solved it in under {INTERLEAVE_BELOW_S:g} s, in one process, round after round), "
        "the others in their own process"
    )
    for label, res in (("times of record", aa), ("each pair in its own process", aa_isolated)):
        if res["resolution"] is not None:
            lines.append(
                f"timing resolution (A/A: {replicate} solved twice; {label}): ε = {res['resolution']:.1%}, the "
                f"{RESOLUTION_QUANTILE:.0%} quantile of |t1 - t2| / min over {len(res['per_problem'])} problems "
                f"(largest {max(res['per_problem'].values()):.1%})"
            )
    lines.append(
        "ρ(1) (share of problems where the solver is the fastest to solve)"
        + (", ρ(1 + ε) (ties within the resolution count for both)" if eps is not None else "")
        + ", solved, warm-up:"
    )
    for m in methods:
        s = summary[m]
        warm = "-" if s["warmup_s"] is None else f"{s['warmup_s']:.2f} s"
        within = "" if eps is None else f"   ρ(1 + ε) = {s['rho_1_plus_resolution']:.2f}"
        lines.append(
            f"  {m:15s} ρ(1) = {s['rho_1']:.2f}{within}   solved {s['solved']}/{s['problems']}   warm-up {warm}"
            f"   (isolated times: ρ(1) = {s['rho_1_isolated']:.2f})"
        )
    against = peer_rho(records, methods, names)
    if against:
        lines.append("ρ(1) against Siconos' solvers alone (each lcpdyn method; the fastest lcpdyn method per problem):")
        lines.extend(f"  {m:15s} ρ(1) = {value:.2f}" for m, value in against.items())
    lines.append("not solved:")
    for m in methods:
        for problem, why in summary[m]["unsolved"].items():
            lines.append(f"  {m:15s} {problem:30s} {why}")
    lines.append(f"total wall time {wall:.0f} s" + (" (interrupted)" if interrupted else ""))
    report_text = "\n".join(lines)
    print(report_text)

    report = {
        "benchmark": "bench_fc3d",
        "versions": _versions(),
        "machine": _machine(),
        "parameters": {
            "data": str(data),
            "problems": [p.name for p in paths],
            "methods": methods,
            "time_limit_s": args.time_limit,
            "target": TARGET,
            "tolerances": list(TOLERANCES),
            "method_options": {m: method_options(m, TOLERANCES[0]) for m in methods},
            "warmup_problem": WARMUP_PROBLEM,
            "repeats": {"below_s": REPEAT_BELOW_S, "max_solves": MAX_SOLVES, "budget_s": REPEAT_BUDGET_S},
            "blas_threads": 1,
            "replicate": replicate,
            "interleave": None
            if args.no_interleave
            else {
                "below_s": INTERLEAVE_BELOW_S,
                "max_rounds": INTERLEAVE_ROUNDS,
                "min_rounds": INTERLEAVE_MIN_ROUNDS,
                "budget_s_per_solver": INTERLEAVE_BUDGET_S,
            },
        },
        "interrupted": interrupted,
        "wall_s": wall,
        "summary": summary,
        "rho_1_against_siconos": against,
        "timing_resolution": aa,
        "timing_resolution_isolated": aa_isolated,
        "interleaved": interleaved,
        "performance_ratios_isolated": ratios_isolated,
        "replicates": replicates,
        "performance_ratios": ratios,
        "records": records,
        "table": report_text,
    }
    _write_atomically(out / "bench_fc3d.json", json.dumps(_jsonable(report), indent=1))
    _write_atomically(out / "bench_fc3d.txt", report_text + "\n")
    timing = "isolated times" if args.no_interleave else "times interleaved where under 1 s"
    title = (
        f"{len(names)} Siconos fc3d problems: "
        rf"$\|F_{{nat}}\|\,/\,\|q\| \leq$ {TARGET:g}, limit {args.time_limit:g} s, {timing}"
    )
    figures = [(out / "bench_fc3d_profiles.png", ratios, "Performance profiles, " + title)]
    peers = [m for m in methods if m.startswith("siconos-")]
    if replicate and peers:  # the judged method against Siconos' solvers alone (its stages are not rivals)
        own = performance_ratios(records, [replicate] + peers, names)
        figures.append((out / "bench_fc3d_profiles_peers.png", own, f"{replicate} against Siconos, " + title))
    for png, these, heading in figures:
        temporary = png.with_name(f".{png.stem}.tmp.png")
        figure(these, eps, temporary, heading)
        os.replace(temporary, png)
    print(f"written {out / 'bench_fc3d.json'}, {out / 'bench_fc3d.txt'} and " + ", ".join(str(f[0]) for f in figures))
    return 130 if interrupted else 0


if __name__ == "__main__":
    sys.exit(main())
