"""How the step cost grows with the scene: N spheres on a plane, N boxes on four corners each and
N/2 dumbbells (two spheres joined by a ball joint: bilateral rows that couple bodies into
islands) (``scenes.scale``), under regularized, box and coulomb, against MuJoCo on the same
scenes in the same run.

Every (scene, N, model) entry runs in a fresh process, so that its start-up and memory are its
own: ``startup_s`` is building the scene plus the first step (JAX trace and compile of the
kinematics, Numba kernels loaded from cache; compilation is reported here, never mixed into the
step times), ``peak_rss_mb`` the process's peak resident memory, ``step_ms`` the median wall
time of the following ``--steps`` steps (Simulation.timing: kinematics, assembly, solve, rest and
recording), ``iterations`` the mean pivots (judice-pires) or sweeps (nsgs) per step -- summed
over the islands when the step is split by body (``path`` "islands", ``islands`` of them;
lcpdyn.islands), and
``fallbacks`` the steps whose first method failed. An entry whose predicted cost (from the
previous size and the growth so far) exceeds ``--budget`` seconds is skipped and says so.

MuJoCo (``pip install ".[bench]"``; optional, skipped with a note if absent): the same bodies,
masses, inertias, sizes, friction coefficient and initial velocities in MJCF -- spheres as
sphere geoms, boxes as box geoms (MuJoCo's box--plane collision gives the four corners), a
dumbbell's joint as a ``connect`` equality (MuJoCo's soft constraint, default solref), the
elliptic cone, h = 1 ms, default solver settings; ``step_ms`` is the median of ``mj_step`` over
the same steps. Ratios ours / MuJoCo are per N. The growth exponent is the least-squares slope
of log(step_ms) against log(contacts) over the sizes with at least 64 contacts.

Usage: ``python benchmarks/bench_scale.py [--quick] [--sizes 1,4,16,64,256,1000] [--steps 20]
[--budget 600] [--out results/bench_scale.json]`` (also writes ``.txt`` and ``.png``).
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import resource  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
MODELS = ("regularized", "box", "coulomb")
SCENES = {"spheres": 1, "boxes": 4, "dumbbells": 2}  # contacts per counted item (sphere, box, dumbbell)
PEER = "mujoco"


def _scene(kind: str, contacts: int):
    import scenes

    return scenes.SCENES[kind].build(count=max(1, contacts // SCENES[kind]))


def _worker(kind: str, contacts: int, model: str, steps: int) -> dict:
    """One entry, in this (fresh) process."""
    import numpy as np

    start = time.perf_counter()
    if model == PEER:
        return _mujoco(kind, contacts, steps, start)
    from lcpdyn.stepper import Simulation

    scene = _scene(kind, contacts)
    sim = Simulation(scene.model, scene.friction(model), scene.dt)
    sim.run(scene.dt)  # build, trace, compile, first step
    startup = time.perf_counter() - start
    run = sim.run(scene.dt * (steps + 1))
    per_step = np.asarray(sim.timing).sum(axis=1)
    islands = 0 if sim._islands is None else len(sim._islands)
    return {
        "contacts": len(scene.model.contacts),
        "bodies": len(scene.model.bodies),
        "path": "islands" if islands else "dense",
        "islands": islands,
        "startup_s": startup,
        "step_ms": float(np.median(per_step) * 1e3),
        "iterations": float(np.mean(run.solver_iterations)),
        "fallbacks": int(np.sum(run.solver_fallback)),
        "all_solved": bool(np.all(run.solver_status == 0)),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
    }


def _num(value) -> str:
    """A number as MJCF text: the shortest repr of the float (NumPy 2 reprs are ``np.float64(...)``)."""
    return repr(float(value))


def mjcf(scene, kind: str) -> str:
    """The scene in MuJoCo's MJCF: free bodies with the same mass, inertia, size and initial
    state; the plane z = 0; friction mu (sliding), elliptic cone, h = the scene's step."""
    p = {key: value for key, value in scene.parameters.items() if isinstance(value, (int, float))}
    p = {key: _num(value) for key, value in p.items()}
    bodies = []
    for body in scene.model.bodies:
        x, y, z = (_num(c) for c in body.position)
        inertia = " ".join(_num(v) for v in body.inertia_matrix.diagonal())
        if kind in ("spheres", "dumbbells"):
            geom = f'<geom type="sphere" size="{p["radius"]}" mass="0" friction="{p["mu"]} 0 0"/>'
        else:
            half = _num(scene.parameters["side"] / 2)
            geom = f'<geom type="box" size="{half} {half} {half}" mass="0" friction="{p["mu"]} 0 0"/>'
        bodies.append(
            f'<body name="{body.name}" pos="{x} {y} {z}"><freejoint/>'
            f'<inertial pos="0 0 0" mass="{_num(body.mass)}" diaginertia="{inertia}"/>{geom}</body>'
        )
    joints = "".join(  # a ball joint between free bodies: MuJoCo's (soft) connect equality
        f'<connect body1="{c.body_a.name}" body2="{c.body_b.name}" anchor="{" ".join(_num(x) for x in c.offset_a)}"/>'
        for c in scene.model.holonomic
    )
    return (
        f'<mujoco><option timestep="{_num(scene.dt)}" gravity="0 0 {_num(-scene.parameters["gravity"])}" '
        'cone="elliptic"/>'
        f'<worldbody><geom type="plane" size="0 0 1" friction="{p["mu"]} 0 0"/>{"".join(bodies)}</worldbody>'
        + (f"<equality>{joints}</equality>" if joints else "")
        + (  # joined bodies do not collide with each other (lcpdyn has no body-body contact)
            "<contact>"
            + "".join(f'<exclude body1="{c.body_a.name}" body2="{c.body_b.name}"/>' for c in scene.model.holonomic)
            + "</contact>"
            if joints
            else ""
        )
        + "</mujoco>"
    )


def _mujoco(kind: str, contacts: int, steps: int, start: float) -> dict:
    import mujoco
    import numpy as np

    scene = _scene(kind, contacts)
    model = mujoco.MjModel.from_xml_string(mjcf(scene, kind))
    data = mujoco.MjData(model)
    for i, body in enumerate(scene.model.bodies):  # free joint: qvel = (v world, omega body)
        rotation = np.asarray(body.orientation) if np.ndim(body.orientation) == 2 else np.eye(3)
        data.qvel[6 * i : 6 * i + 3] = body.velocity
        data.qvel[6 * i + 3 : 6 * i + 6] = rotation.T @ np.asarray(body.angular_velocity)
    mujoco.mj_step(model, data)
    startup = time.perf_counter() - start
    samples = []
    for _ in range(max(steps, 200)):
        t0 = time.perf_counter()
        mujoco.mj_step(model, data)
        samples.append(time.perf_counter() - t0)
    return {
        "contacts": int(data.ncon),
        "bodies": len(scene.model.bodies),
        "startup_s": startup,
        "step_ms": float(np.median(samples) * 1e3),
        "iterations": float(data.solver_niter[0]),
        "fallbacks": 0,
        "all_solved": True,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "mujoco_version": mujoco.__version__,
    }


def _run_entry(kind, contacts, model, steps, timeout):
    command = [sys.executable, __file__, "--worker", json.dumps([kind, contacts, model, steps])]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"skipped": f"over the budget ({timeout:.0f} s)"}
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        return {"failed": f"exit {done.returncode}: {tail[0]}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _growth(entries: list[dict]) -> float | None:
    points = [(e["contacts"], e["step_ms"]) for e in entries if "step_ms" in e and e["contacts"] >= 64]
    if len(points) < 2:
        return None
    xs = [math.log(c) for c, _ in points]
    ys = [math.log(t) for _, t in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def _predicted_seconds(previous: dict | None, contacts: int, steps: int) -> float:
    """Start-up plus steps of the next size, extrapolated with exponent 3 (a dense core)."""
    if previous is None or "step_ms" not in previous:
        return 0.0
    ratio = contacts / max(previous["contacts"], 1)
    return previous["startup_s"] * ratio + previous["step_ms"] * 1e-3 * ratio**3 * (steps + 1)


def _positive_list(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",")]
    except ValueError:
        values = []
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected contact counts >= 1 separated by commas, got {text!r}")
    return values


def _positive(kind):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not value > 0:
            raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
        return value

    return parse


def _choices(allowed):
    def parse(text: str) -> list[str]:
        values = text.split(",")
        unknown = [v for v in values if v not in allowed]
        if unknown:
            raise argparse.ArgumentTypeError(f"unknown {unknown}; choose from {list(allowed)}")
        return values

    return parse


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", type=_positive_list, default="1,4,16,64,256,1000", help="contacts per scene (default %(default)s)"
    )
    parser.add_argument("--steps", type=_positive(int), default=20, help="timed steps per entry (default %(default)s)")
    parser.add_argument(
        "--budget", type=_positive(float), default=600.0, help="seconds per entry (default %(default)s)"
    )
    parser.add_argument("--scenes", type=_choices(tuple(SCENES)), default="spheres,boxes")
    parser.add_argument("--models", type=_choices((*MODELS, PEER)), default=",".join((*MODELS, PEER)))
    parser.add_argument("--quick", action="store_true", help="sizes 1,4,16 and 5 steps (a smoke test)")
    parser.add_argument("--out", default="results/bench_scale.json")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(_worker(*json.loads(args.worker))))
        return 0
    out = Path(args.out)
    if out.suffix != ".json":
        parser.error(f"--out {out}: expected a .json path (the .txt and .png go beside it)")
    try:  # before the ~12 minutes of runs, not after
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        parser.error(f"--out {out}: cannot create its directory ({exc.strerror})")
    if not os.access(out.parent, os.W_OK):
        parser.error(f"--out {out}: directory {out.parent} is not writable")
    sizes = [1, 4, 16] if args.quick else args.sizes
    steps = 5 if args.quick else args.steps
    models = list(args.models)
    if PEER in models:
        try:
            import mujoco  # noqa: F401
        except ImportError:
            print("bench_scale: MuJoCo not installed (pip install '.[bench]'); its column is skipped", file=sys.stderr)
            models.remove(PEER)
    results = {}
    interrupted = False
    try:
        for kind in args.scenes:
            for model in models:
                rows, previous = [], None
                results[f"{kind}/{model}"] = {"entries": rows, "growth_exponent": None}
                for contacts in sizes:
                    if contacts % SCENES[kind]:
                        continue
                    predicted = _predicted_seconds(previous, contacts, steps)
                    if predicted > args.budget:
                        entry = {
                            "contacts": contacts,
                            "skipped": f"predicted {predicted:.0f} s > budget {args.budget:.0f} s",
                        }
                    else:
                        run = _run_entry(kind, contacts, model, steps, args.budget)
                        entry = {"requested_contacts": contacts, **run}
                        entry.setdefault("contacts", contacts)
                    rows.append(entry)
                    print(f"  {kind} {model} {contacts}: {entry}", file=sys.stderr)
                    previous = entry if "step_ms" in entry else None
                results[f"{kind}/{model}"]["growth_exponent"] = _growth(rows)
    except KeyboardInterrupt:  # keep what was measured
        interrupted = True
        print("bench_scale: interrupted; writing the entries measured so far", file=sys.stderr)
    report = {
        "machine": {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count()},
        "sizes": sizes,
        "steps": steps,
        "budget_s": args.budget,
        "interrupted": interrupted,
        "results": results,
    }
    text = _table(report)
    _write_atomically(out, json.dumps(report, indent=1))
    _write_atomically(out.with_suffix(".txt"), text + "\n")
    print(text)
    _figure(report, out.with_suffix(".png"))
    print(f"written {out}, {out.with_suffix('.txt')} and {out.with_suffix('.png')}")
    return 130 if interrupted else 0


def _write_atomically(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def _table(report) -> str:
    lines = [
        "lcpdyn scale benchmark: ms per step (median), start-up s, peak MB, iterations per step, "
        f"{report['steps']} steps, h = 1 ms, BLAS 1 thread",
        f"{'scene/model':22s} {'contacts':>8s} {'step ms':>10s} {'× MuJoCo':>9s} {'start-up s':>10s} {'peak MB':>8s} "
        f"{'iters':>7s} {'fallbacks':>9s}",
    ]
    if report.get("interrupted"):
        lines.append("(interrupted: the entries measured before Ctrl-C)")
    results = report["results"]
    for name, result in results.items():
        kind = name.split("/")[0]
        peer = {
            e["requested_contacts"]: e for e in results.get(f"{kind}/{PEER}", {}).get("entries", []) if "step_ms" in e
        }
        for e in result["entries"]:
            if "step_ms" not in e:
                lines.append(f"{name:22s} {e['contacts']:8d} {e.get('skipped') or e.get('failed')}")
                continue
            other = peer.get(e.get("requested_contacts"))
            ratio = f"{e['step_ms'] / other['step_ms']:9.1f}" if other and not name.endswith(PEER) else f"{'':9s}"
            per_island = f" ({e['iterations'] / e['islands']:.1f} per island)" if e.get("islands") else ""
            lines.append(
                f"{name:22s} {e['contacts']:8d} {e['step_ms']:10.3f} {ratio} {e['startup_s']:10.2f} "
                f"{e['peak_rss_mb']:8.0f} {e['iterations']:7.1f} {e['fallbacks']:9d}{per_island}"
            )
        exponent = result["growth_exponent"]
        lines.append(
            f"{name:22s} growth exponent (>= 64 contacts): " + ("-" if exponent is None else f"{exponent:.2f}")
        )
    return "\n".join(lines)


def _figure(report, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kinds = [kind for kind in SCENES if any(name.startswith(kind + "/") for name in report["results"])]
    fig, axes = plt.subplots(1, max(len(kinds), 1), figsize=(5.5 * max(len(kinds), 1), 4.5), sharey=True, squeeze=False)
    axes = axes[0]
    for ax, kind in zip(axes, kinds):
        for name, result in report["results"].items():
            if not name.startswith(kind + "/"):
                continue
            points = [(e["contacts"], e["step_ms"]) for e in result["entries"] if "step_ms" in e]
            if points:
                xs, ys = zip(*points)
                peer = name.endswith(PEER)
                ax.loglog(
                    xs,
                    ys,
                    "--" if peer else "-",
                    color="k" if peer else None,
                    marker="o",
                    ms=4,
                    label="MuJoCo (elliptic cone)" if peer else name.split("/")[1],
                )
        ax.set_title(f"{kind}: step time against contacts (h = 1 ms)")
        ax.set_xlabel("contacts")
        ax.grid(True, which="both", alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=8)
    axes[0].set_ylabel("wall time per step (ms, median)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    sys.exit(main())
