"""Bodies touching bodies at scale: a pile of spheres poured into a bin and a tower of boxes
(``scenes.touching``), stepped by the one step of ``lcpdyn.stepper.Simulation`` (the scene's
colliders in its model: detected contacts, large islands on their sparse Delassus form) under each
friction model, against MuJoCo on the same scenes in the same run.

For each scene and model: the scene is built and stepped for ``--settle`` seconds (the pour; the
first step, which compiles the row Jacobians and loads the Numba kernels, is reported apart as
``first_step_s``), then ``--steps`` more steps are timed one by one: ``step_ms`` their median wall
time (``step_cpu_ms`` CPU), ``contacts``, ``islands`` and ``sparse_islands`` per step (median),
``iterations`` (median; pivots, active-set iterations or sweeps summed over the islands),
``fallbacks`` (steps whose first method failed), ``unsolved`` (steps of the pour and of the
timed steps kept unsolved under ``--on-unsolved flag``, with the largest residual reached),
``penetration_max`` the deepest penetration over the timed steps (m and in sphere radii), the
energy at the end and whether the run completed. A model whose own pour stops (a solve that
fails; reported as ``own_pour`` with the time and the error) is then timed from the regularized
pour's state, and says so (``poured_with``). MuJoCo (``pip install ".[bench]"``; optional,
skipped with a note if absent): the same spheres (radius, density), walls, friction
coefficient, h = 1 ms, elliptic cones, its default solver (Newton) and its CG and PGS, each
timed over the same number of steps with ``mj_step`` from the scene poured for the same time
(with CG); its penetration is what its soft contacts allow. Its default contacts (solref time
constant 20 ms) let the settled pile sink 15 % of r into itself, far beyond the issue's 1 %, so
CG and PGS are also run with the time constant at 2 h (``MUJOCO_VARIANTS``), stiff enough to
meet it: the peer at the accuracy asked of us. Ratios are ours / MuJoCo per variant. With
``--siconos 1e-4,1e-8`` Siconos' own engine (Moreau-Jean, NSGS at each tolerance;
``benchmarks/siconos_pile.py``) is a further peer on the same pour, after the lcpdyn entries.

Usage: ``python benchmarks/bench_pile.py [--count 500] [--settle 1.0] [--steps 50]
[--models regularized,coulomb] [--rigid-models regularized] [--compliant 0.0007]
[--tangential-stiffness 1e10,1e6] [--tolerance 1e-6] [--on-unsolved flag]
[--siconos 1e-4,1e-8] [--quick]
[--out results/bench_pile.json]``
(also writes ``.txt``; both are rewritten after every entry, ``"complete": false`` until the last).
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RADIUS, HALF_WIDTH, DENSITY, MU = 0.025, 0.25, 1000.0, 0.5
TOWER = {"count": 10, "size": 0.2, "density": 125.0}


def _scene(kind: str, count: int):
    from scenes.touching import box_tower, sphere_pile

    if kind == "pile":
        return sphere_pile(count, RADIUS, HALF_WIDTH, DENSITY)
    return box_tower(TOWER["count"], TOWER["size"], TOWER["density"])


def run_lcpdyn(kind: str, count: int, model: str, settle: float, steps: int, tolerance: float,
               poured=None, on_unsolved: str = "stop", tangential_stiffness: float | None = None,
               timeconst: float | None = None) -> dict:  # fmt: skip
    """One model on one scene: the pour, then ``steps`` timed steps (module docstring). With
    ``poured`` (a state of the same scene, from another model's pour) the timed steps start from
    it and the pour is skipped. The entry's ``state`` (not written to the JSON) is the state after
    the pour, for another model to start from. ``tangential_stiffness``: the regularized model's
    bristle stiffness k_T (N/m; None: the model's default). ``timeconst``: rigid contacts (None) or
    compliant ones, the spring-damper of MuJoCo's solref (timeconst, 1) on one body of the scene
    (:func:`contact_law`)."""
    from lcpdyn import Simulation
    from lcpdyn.detected_contacts import ContactProperties
    from lcpdyn.friction import Regularized

    start = time.perf_counter()
    scene = _scene(kind, count)
    law = None if timeconst is None else contact_law(scene, timeconst)
    scene.set_collisions(contact=ContactProperties(mu=MU, normal_law=law))
    friction = model
    if model == "regularized" and tangential_stiffness is not None:
        friction = Regularized(tangential_stiffness=tangential_stiffness)
    sim = Simulation(scene, friction, 1e-3, tolerance=tolerance, on_unsolved=on_unsolved,
                     method="auto" if model == "coulomb" and kind == "tower" else None)  # fmt: skip
    if poured is not None:  # another model's poured positions and velocities, without its warm starts
        state = sim.snapshot()
        state.update({name: poured[name] for name in ("q", "v", "t", "steps_done")})
        sim.restore(state)
    out = {
        "scene": kind,
        "model": model,
        "bodies": len(scene.bodies),
        "tolerance": tolerance,
        "on_unsolved": on_unsolved,
        "completed": True,
        "poured_with": model if poured is None else "regularized",
        "friction": sim.friction.parameters(),  # every constant of the model, e.g. its static bound
        "timeconst": timeconst,
        "normal_law": None if law is None else {"stiffness": law.stiffness, "damping": law.damping},
    }
    unsolved = [0, 0.0]  # steps kept unsolved (on_unsolved="flag") and their largest residual

    def step():
        result = sim.step()
        if result.status:
            unsolved[0] += 1
            unsolved[1] = max(unsolved[1], result.residual)
        return result

    try:
        step()
        out["first_step_s"] = time.perf_counter() - start
        settle_start = time.perf_counter()
        if poured is None:
            for _ in range(max(0, int(round(settle / 1e-3)) - 1)):
                step()
        out["unsolved_pour"] = unsolved[0]
        out["settle_s"] = time.perf_counter() - settle_start
        out["state"] = sim.snapshot()
        records = []
        for _ in range(steps):
            t0, c0 = time.perf_counter(), time.process_time()
            result = step()
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            d = result.detected
            records.append((wall, cpu, len(d), d.islands, d.sparse, result.iterations, result.fallback,
                            float(max(0.0, -d.contacts.gap.min())) if len(d) else 0.0))  # fmt: skip
    except Exception as exc:  # a failed step is a result: reported, not hidden
        out["completed"] = False
        out["error"] = f"{type(exc).__name__}: {exc}"
        out["stopped_at"] = float(getattr(exc, "time", float("nan")))
        return out
    wall, cpu, contacts, islands, sparse, iterations, fallback, penetration = (np.array(x) for x in zip(*records))
    energy = sim.energy()
    out.update(
        step_ms=float(np.median(wall) * 1e3),
        step_ms_mean=float(np.mean(wall) * 1e3),
        step_cpu_ms=float(np.median(cpu) * 1e3),
        contacts=float(np.median(contacts)),
        islands=float(np.median(islands)),
        sparse_islands=float(np.median(sparse)),
        iterations=float(np.median(iterations)),
        fallbacks=int(fallback.sum()),
        unsolved=unsolved[0],
        unsolved_residual_max=unsolved[1],
        penetration_max=float(penetration.max()),
        penetration_in_radii=float(penetration.max() / RADIUS) if kind == "pile" else None,
        energy_end=float(energy),
        kinetic_end=float(0.5 * sim.v @ (sim.M @ sim.v)),
    )
    return out


def contact_law(scene, timeconst: float):
    """The compliant contacts matched to MuJoCo's ``solref="timeconst 1"``: the spring-damper that
    gives one of the scene's bodies (the median mass: a sphere of the pile, a box of the tower) on
    the ground the time constant and critical damping (:meth:`lcpdyn.compliance.SpringDamperLaw.from_time_constant`)."""
    from lcpdyn.compliance import SpringDamperLaw

    mass = float(np.median([b.mass for b in scene.bodies]))
    return SpringDamperLaw.from_time_constant(mass, timeconst)


def mjcf(kind: str, count: int, solver: str, timeconst: float | None = None) -> str:
    """The scene in MJCF: the same bodies (positions, sizes, densities), walls, mu; with
    ``timeconst`` every geom's ``solref`` is (timeconst, 1), critically damped (MuJoCo's default is
    (0.02, 1))."""
    scene = _scene(kind, count)
    q, _ = scene.initial_state()
    bodies = []
    for i in range(len(scene.bodies)):
        x, y, z = (float(a) for a in q[7 * i : 7 * i + 3])  # plain floats: repr of a NumPy 2 scalar is not MJCF
        if kind == "pile":
            geom = f'<geom type="sphere" size="{RADIUS}" density="{DENSITY}" friction="{MU} 0 0"/>'
        else:
            half = TOWER["size"] / 2
            geom = f'<geom type="box" size="{half} {half} {half}" density="{TOWER["density"]}" friction="{MU} 0 0"/>'
        bodies.append(f'<body pos="{x!r} {y!r} {z!r}"><freejoint/>{geom}</body>')
    h = HALF_WIDTH
    walls = f'<geom type="plane" size="2 2 0.1" friction="{MU} 0 0"/>'
    if kind == "pile":
        sides = ((f"{-h} 0 0", "1 0 0"), (f"{h} 0 0", "-1 0 0"), (f"0 {-h} 0", "0 1 0"), (f"0 {h} 0", "0 -1 0"))
        for pos, axis in sides:
            walls += f'<geom type="plane" pos="{pos}" zaxis="{axis}" size="2 2 0.1" friction="{MU} 0 0"/>'
    default = "" if timeconst is None else f'<default><geom solref="{timeconst!r} 1"/></default>'
    return (f'<mujoco><option timestep="0.001" cone="elliptic" solver="{solver}"/>{default}'
            f"<worldbody>{walls}{''.join(bodies)}</worldbody></mujoco>")  # fmt: skip


_SETTLED: dict = {}


# MuJoCo's variants: (solver, solref time constant or None for its default 0.02 s). The stiff
# variants (2 h, the smallest time constant MuJoCo's documentation advises) are the ones whose
# soft contacts meet the penetration target (1 % of r): measured 0.53-0.55 % of r on the
# settled 500-sphere pile, against 15-16 % with the default.
MUJOCO_VARIANTS = (("Newton", None), ("CG", None), ("PGS", None), ("CG", 2e-3), ("PGS", 2e-3))


def _variant(solver: str, timeconst: float | None) -> str:
    return solver if timeconst is None else f"{solver}, solref {timeconst * 1e3:g} ms"


def run_mujoco(kind: str, count: int, solver: str, settle: float, steps: int, timeconst: float | None = None) -> dict:
    """One MuJoCo variant, timed from the scene poured for ``settle`` s with CG and the same
    ``timeconst`` (CG is the fastest of its solvers here; the pour is the same for every solver,
    as ours is one pour per model)."""
    import mujoco

    key = (kind, count, settle, timeconst)
    if key not in _SETTLED:
        pour = mujoco.MjModel.from_xml_string(mjcf(kind, count, "CG", timeconst))
        poured = mujoco.MjData(pour)
        for _ in range(int(round(settle / 1e-3))):
            mujoco.mj_step(pour, poured)
        _SETTLED[key] = (poured.qpos.copy(), poured.qvel.copy())
    model = mujoco.MjModel.from_xml_string(mjcf(kind, count, solver, timeconst))
    data = mujoco.MjData(model)
    data.qpos[:], data.qvel[:] = _SETTLED[key]
    mujoco.mj_forward(model, data)
    times, contacts, penetration = [], [], 0.0
    for _ in range(steps):
        t0 = time.perf_counter()
        mujoco.mj_step(model, data)
        times.append(time.perf_counter() - t0)
        contacts.append(data.ncon)
        if data.ncon:
            penetration = max(penetration, -float(min(c.dist for c in data.contact[: data.ncon])))
    return {
        "scene": kind,
        "solver": _variant(solver, timeconst),
        "timeconst": timeconst,
        "step_ms": float(np.median(times) * 1e3),
        "contacts": float(np.median(contacts)),
        "penetration_max": penetration,
        "penetration_in_radii": penetration / RADIUS if kind == "pile" else None,
        "version": mujoco.__version__,
    }


def _write_atomically(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def save(report: dict, out: Path, complete: bool) -> None:
    """The report as it stands, JSON and table, each replaced atomically: written after every
    entry, so that a run stopped after an hour keeps what it measured (``complete`` says whether
    every entry asked for is in)."""
    report["complete"] = complete
    _write_atomically(out, json.dumps(report, indent=2))
    _write_atomically(out.with_suffix(".txt"), table(report))


def table(report: dict) -> str:
    lines = [f"bench_pile (lcpdyn {report['lcpdyn_version']}, git {report['git']}): {report['machine']}", ""]
    peers = " / ".join(_variant(*v) for v in MUJOCO_VARIANTS)
    lines.append("| scene | engine | bodies | contacts | step ms | islands (sparse) | iterations | fallbacks "
                 f"| max penetration (radii) | ratio to MuJoCo {peers} |")  # fmt: skip
    lines.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    notes = []
    for entry in report["lcpdyn"]:
        if entry.get("own_pour"):
            own = entry["own_pour"]
            notes.append(f"{entry['scene']}, lcpdyn {entry['model']}: its own pour stopped at t = "
                         f"{own['stopped_at']:.3f} s ({own['error']}); its steps are timed from the regularized "
                         "pour.")  # fmt: skip
        name = entry["model"]
        if "tangential_stiffness" in entry.get("friction", {}):
            name += f" k_T={entry['friction']['tangential_stiffness']:g}"
        if entry.get("timeconst"):
            name += f", compliant (solref {entry['timeconst'] * 1e3:g} ms)"
        if not entry["completed"]:
            failed = f"failed: {entry['error']}"
            lines.append(f"| {entry['scene']} | lcpdyn {name} | {entry['bodies']} | {failed} |")
            continue
        ratios = " / ".join(
            f"{entry['step_ms'] / m['step_ms']:.2f}" for m in report["mujoco"] if m["scene"] == entry["scene"]
        )
        pen = entry["penetration_in_radii"]
        lines.append(
            f"| {entry['scene']} | lcpdyn {name} | {entry['bodies']} | {entry['contacts']:.0f} | "
            f"{entry['step_ms']:.1f} | {entry['islands']:.0f} ({entry['sparse_islands']:.0f}) | "
            f"{entry['iterations']:.0f} | "
            f"{entry['fallbacks']}"
            + (f", {entry['unsolved']} unsolved" if entry.get("unsolved") else "")
            + f" | {entry['penetration_max']:.2e} m"
            + (f" ({pen:.2e})" if pen is not None else "")
            + f" | {ratios or 'n/a'} |"
        )
    for m in report["mujoco"]:
        pen = m["penetration_in_radii"]
        lines.append(
            f"| {m['scene']} | MuJoCo {m['solver']} | | {m['contacts']:.0f} | {m['step_ms']:.2f} | | | | "
            f"{m['penetration_max']:.2e} m" + (f" ({pen:.2e})" if pen is not None else "") + " | |"
        )
    for e in report.get("siconos", []):
        name = f"Siconos NSGS tol={e['tolerance']:g}"
        if not e["completed"]:
            lines.append(f"| {e['scene']} | {name} | {e['bodies']} | failed: {e['error_message']} |")
            continue
        capped = f" ({e['iterations_capped']} capped)" if e["iterations_capped"] else ""
        lines.append(
            f"| {e['scene']} | {name} | {e['bodies']} | {e['contacts']:.0f} | {e['step_ms']:.1f} | | "
            f"{e['iterations']:.0f}{capped} | | {e['penetration_max']:.2e} m ({e['penetration_max_radii']:.2e}) | |"
        )
        judged = (f"lcpdyn's residual of its answers (median / max) {e['lcpdyn_residual']:.1e} / "
                  f"{e['lcpdyn_residual_max']:.1e}, " if "lcpdyn_residual" in e else "")  # fmt: skip
        notes.append(f"{name}: its own error (median) {e['error']:.1e}, {judged}bin force / weight "
                     f"{e['bin_force_ratio']:.4f}, pour {e['pour_s']:.1f} s.")  # fmt: skip
    lines += [""] + notes if notes else []
    for key in ("note", "siconos_note"):
        if report.get(key):
            lines += ["", report[key]]
    if not report.get("complete", True):
        lines += ["", "Partial: the run was stopped, or is still going, before every entry was measured."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=500)
    parser.add_argument("--settle", type=float, default=1.0)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--models", default="regularized,coulomb")
    parser.add_argument("--scenes", default="pile,tower")
    parser.add_argument(
        "--tolerance",
        type=float,
        default=1e-6,
        help="lcpdyn's acceptance tolerance (the issue's 1e-6 for piles; 1e-9 is the engine's default)",
    )
    parser.add_argument(
        "--on-unsolved",
        choices=("stop", "flag"),
        default="flag",
        help="a step that misses the tolerance: stop that entry, or keep it counted (unsolved)",
    )
    parser.add_argument("--siconos", default="", help="NSGS tolerances of Siconos' own engine on the pile, e.g. "
                        "1e-4,1e-8 (default: no Siconos peer)")  # fmt: skip
    parser.add_argument("--tangential-stiffness", default="", metavar="K_T[,K_T...]",
                        help="the regularized model's bristle stiffness k_T in N/m, one entry per value (default: "
                        "the model's 1e10; the Mindlin stiffness of the benchmark's spheres is 1e5-1e7, "
                        "docs/known-limits.md)")  # fmt: skip
    parser.add_argument("--rigid-models", default=None, metavar="MODEL[,MODEL...]",
                        help="the models run with rigid contacts (default: every one of --models; '' none, e.g. "
                        "with --compliant alone)")  # fmt: skip
    parser.add_argument("--compliant", default="", metavar="TAU[,TAU...]",
                        help="also run each lcpdyn model with compliant contacts, the spring-damper of MuJoCo's "
                        "solref (TAU, 1) on one body (seconds, e.g. 0.002; default: rigid contacts only)")  # fmt: skip
    parser.add_argument("--quick", action="store_true", help="50 spheres, 0.3 s pour, 10 timed steps")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "bench_pile.json")
    args = parser.parse_args(argv)
    if args.quick:
        args.count, args.settle, args.steps = 50, 0.3, 10
    for name in ("count", "steps"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1")
    if not (math.isfinite(args.settle) and args.settle >= 0):
        parser.error("--settle must be >= 0")
    try:
        stiffnesses = [float(k) for k in args.tangential_stiffness.split(",") if k] or [None]
    except ValueError:
        parser.error(f"--tangential-stiffness: values separated by commas, not {args.tangential_stiffness!r}")
    if not all(k is None or k > 0 for k in stiffnesses):  # inf is Eq. (29), the rigid bristle
        parser.error(f"--tangential-stiffness: every k_T must be > 0, got {args.tangential_stiffness!r}")
    try:
        timeconsts = [None] + [float(t) for t in args.compliant.split(",") if t]
    except ValueError:
        parser.error(f"--compliant: time constants separated by commas, not {args.compliant!r}")
    if not all(t is None or (math.isfinite(t) and t > 0) for t in timeconsts):
        parser.error(f"--compliant: every time constant must be finite and > 0, got {args.compliant!r}")
    try:
        siconos_tolerances = [float(t) for t in args.siconos.split(",") if t]
    except ValueError:
        parser.error(f"--siconos: tolerances separated by commas, not {args.siconos!r}")
    if not all(math.isfinite(t) and t > 0 for t in siconos_tolerances):
        parser.error(f"--siconos: every tolerance must be finite and > 0, got {args.siconos!r}")
    models = [m for m in args.models.split(",") if m]
    rigid = models if args.rigid_models is None else [m for m in args.rigid_models.split(",") if m]
    if not set(rigid) <= set(models):
        parser.error(f"--rigid-models: {sorted(set(rigid) - set(models))} not among --models {args.models!r}")
    scenes = [s for s in args.scenes.split(",") if s]
    for s in scenes:
        if s not in ("pile", "tower"):
            parser.error(f"unknown scene {s!r}: choose pile, tower")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    import subprocess

    import lcpdyn

    try:
        git = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, check=True).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        git = "unknown"
    report = {
        "lcpdyn_version": lcpdyn.__version__,
        "git": git,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "parameters": {
            "count": args.count,
            "settle": args.settle,
            "steps": args.steps,
            "radius": RADIUS,
            "half_width": HALF_WIDTH,
            "density": DENSITY,
            "mu": MU,
            "tower": TOWER,
            "h": 1e-3,
            "tangential_stiffness": stiffnesses,
            "compliant": timeconsts[1:],
            "rigid_models": rigid,
        },  # fmt: skip
        "lcpdyn": [],
        "mujoco": [],
    }
    for kind in scenes:
        poured = None  # the regularized pour's state: where a model whose own pour stopped is timed from
        runs = [
            (m, k, t)
            for t in timeconsts
            for m in (rigid if t is None else models)
            for k in (stiffnesses if m == "regularized" else [None])
        ]
        for model, stiffness, timeconst in runs:
            entry = run_lcpdyn(
                kind, args.count, model, args.settle, args.steps, args.tolerance, on_unsolved=args.on_unsolved,
                tangential_stiffness=stiffness, timeconst=timeconst,
            )  # fmt: skip
            state = entry.pop("state", None)
            if timeconst is not None:  # compliant: its own pour, never the rigid one's (the contacts sink in)
                report["lcpdyn"].append(entry)
                save(report, args.out, complete=False)
                print(json.dumps(entry), flush=True)
                continue
            if model == "regularized" and entry["completed"] and poured is None:
                poured = state
            elif not entry["completed"] and poured is not None and "first_step_s" in entry:
                own = {key: entry[key] for key in ("completed", "error", "stopped_at") if key in entry}
                entry = run_lcpdyn(
                    kind,
                    args.count,
                    model,
                    args.settle,
                    args.steps,
                    args.tolerance,
                    poured=poured,
                    on_unsolved=args.on_unsolved,
                    tangential_stiffness=stiffness,
                )
                entry.pop("state", None)
                entry["own_pour"] = own
            report["lcpdyn"].append(entry)
            save(report, args.out, complete=False)
            print(json.dumps(entry), flush=True)
        if kind == "pile" and siconos_tolerances:
            report["siconos"] = []
            sys.path.insert(0, str(ROOT / "benchmarks"))
            from siconos_pile import import_siconos_engine, run_siconos

            try:
                import_siconos_engine()
            except ImportError as exc:  # Siconos missing: said in the report, the run goes on
                report["siconos_note"] = f"Siconos peer skipped: {exc}"
            else:
                for tolerance in siconos_tolerances:
                    entry = run_siconos(args.count, args.settle, args.steps, tolerance)
                    report["siconos"].append(entry)
                    save(report, args.out, complete=False)
                    print(json.dumps(entry), flush=True)
        try:
            for solver, timeconst in MUJOCO_VARIANTS:
                entry = run_mujoco(kind, args.count, solver, args.settle, args.steps, timeconst)
                report["mujoco"].append(entry)
                save(report, args.out, complete=False)
                print(json.dumps(entry), flush=True)
        except ImportError:
            report["note"] = "MuJoCo is not installed (pip install '.[bench]'): no peer in this run."
    save(report, args.out, complete=True)
    print(table(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
