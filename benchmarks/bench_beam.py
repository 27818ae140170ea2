"""Cost per step of a geometrically exact beam as it grows (issue 18, item 6), against MuJoCo on
the same scenes in the same run.

Two scenes, each for 4 ... 256 elements (:func:`build`):

* ``free``: a free beam (Bauchau 2002 Table 1, set 3's section, 0.5 m) falling and vibrating
  under gravity, no contact -- the elements' compliant rows alone;
* ``clamped-wheel``: the same beam hanging from a cart that moves at 5 m/s (a clamp whose anchor
  moves), a wheel (20 kg, 0.25 m: Sec. 8.3's) on a revolute joint at its lower end, rolling on the
  ground (rigid contact, regularized friction, mu = 0.8).

Each runs at h = 1 ms on the condensed path (``sparse="condensed"``: velocities and bilateral
multipliers eliminated by the sparse KKT factorization, the contacts' bounded LCP solved alone)
and, up to 64 elements, on the dense path (the whole Eq. (30) pivoted) for comparison; the two
agree to rounding. Reported per (scene, path, size): median ms per step over ``--repeats`` runs
of ``--steps`` steps, after a first run that traces and compiles the kinematics (its time reported
apart), and the growth exponent p of time ~ N^p fitted over 16 ... 256 elements (goal <= 1.1).

Peer: MuJoCo (``pip install ".[bench]"``; optional: skipped with a note in the JSON and the
printout if ``import mujoco`` fails), the same two scenes and sizes in MJCF (:func:`mjcf`), timed
like ours: the same h, steps and repeats, ``mj_step`` in a loop, median ms per step, a first run
(model compile + ``steps`` steps) reported apart; its growth exponent over 16 ... 256 elements and
the ratios lcpdyn / MuJoCo per size. The beam is a chain of N + 1 bodies carrying lcpdyn's lumped
masses and rotary inertias (rho A L_e per node, half at the ends; i_p diag(1, 1/2, 1/2) L_e, polar
axis along the beam), each body joined to the previous one by three hinges at the node (twist
about e_1, bending about e_2 and e_3; stiffness GJ / L_e, EI_2 / L_e, EI_3 / L_e, damping 1 ms
times those: Table 1's stiffness-proportional damping) and one slide along e_1 (EA / L_e, damping
likewise). Not MuJoCo's elastic rod: the ``cable`` plugin the issue suggested was removed in
MuJoCo 4.0.0 (its changelog, item 9; no ``libelasticity`` ships), and its successor, a 1D
``flexcomp`` with ``<elasticity>``, is a discrete elastic rod of point-mass vertices (no nodal
rotary inertia, no axial or shear compliance, no mocap attachment) whose material frames live in
per-edge twist bodies under the world, so lcpdyn's revolute wheel at the tip has no body to hang
from. The slide is ours, beyond the hinges: with an axially rigid chain the beam holds the wheel
up and its contact carries nothing; with it the ground carries the wheel as lcpdyn's does
(193-200 N of lcpdyn's 200 N). Shear stays rigid (4 dofs per node, lcpdyn's nodes have 6). The
elements' stiffness is taken implicitly, as lcpdyn's backward Euler does: MuJoCo's
``discrete`` integrator (``implicitfast`` where a MuJoCo older than 4.0 lacks it), its default
Newton solver, elliptic cones. ``clamped-wheel``: the root slides along x (its orientation held,
as the clamp's), driven at 5 m/s by a velocity actuator (kv = 1e6, implicit); the wheel is a
cylinder geom on a hinge at the tip, on a plane, friction 0.8 on both geoms. Both carry solref
(2 h, 1): MuJoCo's default 20 ms time constant lets the ground carry 67 N only, the rest hanging
on the axially stiff beam (EA / L = 8.8e7 N/m against the soft contact). MuJoCo's cylinder on a
plane touches at two points (the rims), lcpdyn's disk at one. Checks per entry: finite state and
no MuJoCo warning, the contacts' normal force (median over the first run), the wheel's spin over
v / r at the end, and the wheel spun up from rest by friction alone in 0.3 s
(``spin_up_over_v_r``); the nodes' and wheel's final positions against lcpdyn's condensed run.
A serial chain gives MuJoCo a dense joint-space mass matrix (nv^2 / 2 entries: every joint is an
ancestor of the ones below it), whose factorization makes its cost grow like N^3 from ~64 elements.

Usage: ``python benchmarks/bench_beam.py [--repeats 3] [--steps 200] [--out results/bench_beam.json]``
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

from lcpdyn import __version__  # noqa: E402
from lcpdyn.beam import BeamSection, WeldJoint, add_beam  # noqa: E402
from lcpdyn.body import RigidBody  # noqa: E402
from lcpdyn.constraints import RevoluteJoint  # noqa: E402
from lcpdyn.contact import DiskContact, Plane  # noqa: E402
from lcpdyn.model import Model  # noqa: E402
from lcpdyn.stepper import Simulation  # noqa: E402

SIZES = (4, 8, 16, 32, 64, 128, 256)
DENSE_UP_TO = 64
SPEED, WHEEL_MASS, WHEEL_RADIUS = 5.0, 20.0, 0.25
MUJOCO_SOLREF = (2e-3, 1.0)  # the wheel's and the ground's contact time constant (2 h) and damping ratio
MUJOCO_CART_GAIN = 1e6  # the velocity actuator that drives the clamp (N s/m)
SPIN_UP_SECONDS = 0.3  # the MuJoCo wheel's spin-up from rest (module docstring)


def build(scene: str, elements: int) -> Model:
    """The ``free`` or ``clamped-wheel`` model with a beam of ``elements`` elements."""
    section, length = BeamSection.bauchau_2002(3)
    model = Model(gravity=(0.0, 0.0, -9.81))
    if scene == "free":
        add_beam(model, "beam", section, (0.0, 0.0, 1.0), (length, 0.0, 1.0), elements, velocity=(0.0, 0.0, 0.1))
        return model
    if scene != "clamped-wheel":
        raise ValueError(f"scene must be 'free' or 'clamped-wheel', got {scene!r}")
    top = WHEEL_RADIUS + length
    velocity = (SPEED, 0.0, 0.0)
    beam = add_beam(
        model, "beam", section, (0.0, 0.0, top), (0.0, 0.0, WHEEL_RADIUS), elements, normal=(1.0, 0.0, 0.0),
        velocity=velocity,
    )  # fmt: skip
    model.add_constraint(
        WeldJoint(body_a=beam.root, offset_b=(0.0, 0.0, top), anchor_velocity=velocity, name="cart clamp")
    )
    inertia = (WHEEL_MASS * WHEEL_RADIUS**2 / 4, WHEEL_MASS * WHEEL_RADIUS**2 / 2, WHEEL_MASS * WHEEL_RADIUS**2 / 4)
    wheel = model.add_body(
        RigidBody(
            "wheel", WHEEL_MASS, inertia, position=(0.0, 0.0, WHEEL_RADIUS), velocity=velocity,
            angular_velocity=(0.0, SPEED / WHEEL_RADIUS, 0.0),
        )
    )  # fmt: skip
    # the node frame's e3 is world x, e2 = e3 x e1 = world y: the axle is the node's y axis too
    model.add_constraint(RevoluteJoint(body_a=wheel, body_b=beam.tip, name="axle"))
    model.add_contact(DiskContact(wheel, Plane(), 0.8, radius=WHEEL_RADIUS))
    return model


def measure(scene: str, elements: int, sparse, steps: int, repeats: int, dt: float = 1e-3) -> dict:
    """Compile-inclusive first run, then ``repeats`` timed runs of ``steps`` steps each."""
    model = build(scene, elements)
    start = time.perf_counter()
    sim = Simulation(model, "regularized", dt, sparse=sparse)
    first = sim.run(steps * dt)
    compile_and_first = time.perf_counter() - start
    times = []
    for _ in range(repeats):
        sim.reset()
        start = time.perf_counter()
        trajectory = sim.run(steps * dt)
        times.append((time.perf_counter() - start) / steps * 1e3)
    return {
        "scene": scene,
        "elements": elements,
        "path": "condensed" if sparse == "condensed" else "dense",
        "unknowns": model.n_velocities + model.n_bilateral + 3 * len(model.contacts),
        "ms_per_step": float(np.median(times)),
        "ms_per_step_runs": times,
        "first_run_s": compile_and_first,
        "all_solved": bool(np.all(trajectory.solver_status == 0) and np.all(first.solver_status == 0)),
        "health_flags": int(trajectory.health.max()),
        "final_position": trajectory.position[-1].tolist(),
        "normal_force_n": (float(np.median(trajectory.contact_normal_force.sum(axis=1))) if model.contacts else None),
    }


def growth_exponent(rows: list, smallest: int = 16) -> float:
    """p of ms ~ N^p, least squares in log-log over N >= ``smallest``."""
    points = [(r["elements"], r["ms_per_step"]) for r in rows if r["elements"] >= smallest]
    if len(points) < 2:
        return float("nan")
    x, y = np.log([p[0] for p in points]), np.log([p[1] for p in points])
    return float(np.polyfit(x, y, 1)[0])


def _number(x) -> str:
    return repr(float(x))


def _mujoco_integrator(mujoco) -> str:
    """``discrete`` (implicit in position, MuJoCo >= 4.0), else ``implicitfast``."""
    return "discrete" if hasattr(mujoco.mjtIntegrator, "mjINT_DISCRETE") else "implicitfast"


def mjcf(scene: str, elements: int, integrator: str = "discrete") -> str:
    """The ``free`` or ``clamped-wheel`` scene in MuJoCo's MJCF: the beam as a chain of
    ``elements`` + 1 bodies (node i is body ``node{i}``, its frame lcpdyn's node frame), joined by
    springs and dampers with the section's stiffness (module docstring)."""
    if scene not in ("free", "clamped-wheel"):
        raise ValueError(f"scene must be 'free' or 'clamped-wheel', got {scene!r}")
    section, length = BeamSection.bauchau_2002(3)
    step = length / elements
    axial, _, _, torsion, bend_2, bend_3 = section.stiffness
    joints = "".join(
        f'<joint type="{kind}" axis="{axis}" stiffness="{_number(k / step)}" '
        f'damping="{_number(section.proportional_damping * k / step)}"/>'
        for kind, axis, k in (
            ("slide", "1 0 0", axial), ("hinge", "1 0 0", torsion), ("hinge", "0 1 0", bend_2),
            ("hinge", "0 0 1", bend_3),
        )
    )  # fmt: skip

    def inertial(i: int) -> str:
        share = 0.5 if i in (0, elements) else 1.0
        mass = share * step * section.mass_per_length
        polar = share * step * section.polar_inertia_per_length
        return (
            f'<inertial pos="0 0 0" mass="{_number(mass)}" '
            f'diaginertia="{_number(polar)} {_number(polar / 2)} {_number(polar / 2)}"/>'
        )

    solref = f'solref="{_number(MUJOCO_SOLREF[0])} {_number(MUJOCO_SOLREF[1])}"'
    if scene == "free":  # e_1 world x, e_3 world z: the node frame is the world's
        chain, ground, actuator = '<body name="node0" pos="0 0 1"><freejoint name="root"/>', "", ""
    else:  # e_1 = -z, e_2 = y, e_3 = x; the cart's slide is world x, the node's e_3
        top = WHEEL_RADIUS + length
        chain = (
            f'<body name="node0" pos="0 0 {_number(top)}" xyaxes="0 0 -1 0 1 0">'
            '<joint name="cart" type="slide" axis="0 0 1"/>'
        )
        ground = f'<geom name="ground" type="plane" size="0 0 1" friction="0.8 0 0" {solref}/>'
        actuator = f'<actuator><velocity name="cart" joint="cart" kv="{_number(MUJOCO_CART_GAIN)}"/></actuator>'
    chain += inertial(0)
    for i in range(1, elements + 1):
        chain += f'<body name="node{i}" pos="{_number(step)} 0 0">{joints}{inertial(i)}'
    if scene == "clamped-wheel":  # the wheel's frame is the world's: its axle, the node's e_2, is world y
        inertia = " ".join(_number(WHEEL_MASS * WHEEL_RADIUS**2 * k) for k in (0.25, 0.5, 0.25))
        chain += (
            '<body name="wheel" xyaxes="0 0 1 0 1 0"><joint name="axle" type="hinge" axis="0 1 0"/>'
            f'<inertial pos="0 0 0" mass="{_number(WHEEL_MASS)}" diaginertia="{inertia}"/>'
            f'<geom name="wheel" type="cylinder" size="{_number(WHEEL_RADIUS)} 0.02" zaxis="0 1 0" mass="0" '
            f'friction="0.8 0 0" {solref}/></body>'
        )
    chain += "</body>" * (elements + 1)
    return (
        f'<mujoco model="bench_beam {scene} {elements}"><option timestep="0.001" gravity="0 0 -9.81" '
        f'integrator="{integrator}" cone="elliptic"/><worldbody>{ground}{chain}</worldbody>{actuator}</mujoco>'
    )


def _mujoco_start(mujoco, model, data, scene: str, spin: float = SPEED / WHEEL_RADIUS) -> None:
    """lcpdyn's initial state: ``free``, every node at 0.1 m/s upwards; ``clamped-wheel``, every
    node at 5 m/s along x and the wheel spinning at ``spin`` (v / r: rolling)."""
    mujoco.mj_resetData(model, data)
    if scene == "free":
        data.qvel[2] = 0.1  # the root's free joint: linear velocity (world) first
    else:
        data.qvel[model.jnt_dofadr[model.joint("cart").id]] = SPEED
        data.qvel[model.jnt_dofadr[model.joint("axle").id]] = spin
        data.ctrl[:] = SPEED


def _wheel_spin(mujoco, model, data) -> float:
    """The wheel's angular velocity about world y (rad/s)."""
    velocity = np.zeros(6)
    mujoco.mj_objectVelocity(model, data, mujoco.mjtObj.mjOBJ_BODY, model.body("wheel").id, velocity, 0)
    return float(velocity[1])


def _normal_force(mujoco, model, data) -> float:
    """The contacts' normal force, summed (N)."""
    force, total = np.zeros(6), 0.0
    for i in range(data.ncon):
        mujoco.mj_contactForce(model, data, i, force)
        total += force[0]
    return total


def measure_mujoco(scene: str, elements: int, steps: int, repeats: int) -> dict:
    """MuJoCo's entry, timed as :func:`measure`: a first run (model compile + ``steps`` steps,
    recording the contacts), then ``repeats`` timed runs of ``steps`` ``mj_step`` calls each
    from the initial state."""
    import mujoco

    start = time.perf_counter()
    integrator = _mujoco_integrator(mujoco)
    model = mujoco.MjModel.from_xml_string(mjcf(scene, elements, integrator))
    data = mujoco.MjData(model)
    _mujoco_start(mujoco, model, data, scene)
    contacts, normal = [], []
    for _ in range(steps):
        mujoco.mj_step(model, data)
        contacts.append(data.ncon)
        normal.append(_normal_force(mujoco, model, data))
    compile_and_first = time.perf_counter() - start
    warnings = sum(int(w.number) for w in data.warning)
    times = []
    for _ in range(repeats):
        _mujoco_start(mujoco, model, data, scene)
        start = time.perf_counter()
        for _ in range(steps):
            mujoco.mj_step(model, data)
        times.append((time.perf_counter() - start) / steps * 1e3)
        warnings += sum(int(w.number) for w in data.warning)
    mujoco.mj_kinematics(model, data)
    row = {
        "scene": scene,
        "elements": elements,
        "path": "mujoco",
        "version": mujoco.__version__,
        "integrator": integrator,
        "dofs": int(model.nv),
        "ms_per_step": float(np.median(times)),
        "ms_per_step_runs": times,
        "first_run_s": compile_and_first,
        "finite": bool(np.all(np.isfinite(data.qpos)) and np.all(np.isfinite(data.qvel))),
        "warnings": warnings,
        "final_position": data.xpos[1:].tolist(),  # node0 ... nodeN (, wheel): lcpdyn's bodies, in order
    }
    if scene == "clamped-wheel":
        row.update(
            contacts=float(np.median(contacts)),
            normal_force_n=float(np.median(normal)),
            spin_over_v_r=_wheel_spin(mujoco, model, data) * WHEEL_RADIUS / SPEED,
            cart_speed=float(data.qvel[model.jnt_dofadr[model.joint("cart").id]]),
        )
        _mujoco_start(mujoco, model, data, scene, spin=0.0)  # friction alone must make it roll
        for _ in range(int(round(SPIN_UP_SECONDS / model.opt.timestep))):
            mujoco.mj_step(model, data)
        row["spin_up_over_v_r"] = _wheel_spin(mujoco, model, data) * WHEEL_RADIUS / SPEED
        row["finite"] = row["finite"] and bool(np.all(np.isfinite(data.qpos)))
        row["warnings"] += sum(int(w.number) for w in data.warning)
    return row


def _mujoco_version():
    try:
        import mujoco
    except ImportError:
        return None
    return mujoco.__version__


def _cell(value, width: int, digits: int) -> str:
    return f"{'-':>{width}s}" if value is None else f"{value:{width}.{digits}g}"


def table(report: dict) -> str:
    """ms per step (median) per scene and size: lcpdyn condensed, dense, MuJoCo and the ratios
    lcpdyn / MuJoCo; the growth exponents."""
    rows = report["rows"] + report["mujoco"].get("rows", [])
    lines = [
        f"{'scene':14s} {'N':>4s} {'condensed ms':>12s} {'dense ms':>9s} {'MuJoCo ms':>10s} "
        f"{'condensed/MuJoCo':>16s} {'dense/MuJoCo':>12s}"
    ]
    for scene in ("free", "clamped-wheel"):
        for n in sorted({r["elements"] for r in rows if r["scene"] == scene}):
            ms = {r["path"]: r["ms_per_step"] for r in rows if r["scene"] == scene and r["elements"] == n}
            peer = ms.get("mujoco")
            ratio = {path: ms[path] / peer if peer and path in ms else None for path in ("condensed", "dense")}
            lines.append(
                f"{scene:14s} {n:4d} {_cell(ms.get('condensed'), 12, 4)} {_cell(ms.get('dense'), 9, 4)} "
                f"{_cell(peer, 10, 4)} {_cell(ratio['condensed'], 16, 3)} {_cell(ratio['dense'], 12, 3)}"
            )
    exponents = dict(report["growth_exponent_16_to_256"])
    exponents.update({f"{k}/mujoco": v for k, v in report["mujoco"].get("growth_exponent_16_to_256", {}).items()})
    lines += [f"growth exponent {key}: {value:.2f}" for key, value in exponents.items()]
    if "skipped" in report["mujoco"]:
        lines.append(f"MuJoCo: {report['mujoco']['skipped']}")
    return "\n".join(lines)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per entry (default 3)")
    parser.add_argument("--steps", type=int, default=200, help="steps per run (default 200)")
    parser.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=list(SIZES),
        help=f"element counts (default {' '.join(map(str, SIZES))})",
    )
    parser.add_argument("--out", default="results/bench_beam.json", help="JSON file (default results/bench_beam.json)")
    args = parser.parse_args(argv)
    rows, exponents, agreement = [], {}, {}
    version = _mujoco_version()
    if version is None:
        peer = {"skipped": "MuJoCo is not installed (pip install '.[bench]'): no peer in this run."}
    else:
        peer = {
            "version": version,
            "model": "chain of N + 1 bodies: 3 hinges + 1 axial slide per node, springs and dampers (module docstring)",
            "contact_solref": list(MUJOCO_SOLREF),
            "rows": [],
            "growth_exponent_16_to_256": {},
            "lcpdyn_over_mujoco": {},
            "largest_position_difference_vs_lcpdyn_condensed_m": {},
        }
    for scene in ("free", "clamped-wheel"):
        for path in ("condensed", "dense"):
            entry = []
            for elements in args.sizes:
                if path == "dense" and elements > DENSE_UP_TO:
                    continue
                row = measure(scene, elements, "condensed" if path == "condensed" else False, args.steps, args.repeats)
                entry.append(row)
                print(
                    f"{scene:14s} {path:9s} N = {elements:4d}: {row['ms_per_step']:8.3f} ms/step "
                    f"(first run {row['first_run_s']:.1f} s, {row['unknowns']} unknowns)",
                    flush=True,
                )
            rows += entry
            exponents[f"{scene}/{path}"] = growth_exponent(entry)
        by_size = {}
        for row in rows:
            if row["scene"] == scene:
                by_size.setdefault(row["elements"], {})[row["path"]] = row
        agreement[scene] = {
            str(n): float(np.max(np.abs(np.subtract(p["condensed"]["final_position"], p["dense"]["final_position"]))))
            for n, p in by_size.items()
            if len(p) == 2
        }
        if version is not None:
            entry = []
            for elements in args.sizes:
                row = measure_mujoco(scene, elements, args.steps, args.repeats)
                entry.append(row)
                ours = by_size.get(elements, {}).get("condensed")
                if ours is not None:
                    difference = np.max(np.abs(np.subtract(row["final_position"], ours["final_position"])))
                    peer["largest_position_difference_vs_lcpdyn_condensed_m"].setdefault(scene, {})[str(elements)] = (
                        float(difference)
                    )
                    peer["lcpdyn_over_mujoco"][f"{scene}/N={elements}"] = {
                        path: by_size[elements][path]["ms_per_step"] / row["ms_per_step"]
                        for path in ("condensed", "dense")
                        if path in by_size[elements]
                    }
                rolling = (
                    f", {row['contacts']:.0f} contacts, {row['normal_force_n']:.1f} N, spin {row['spin_over_v_r']:.4f} "
                    f"v/r, from rest {row['spin_up_over_v_r']:.4f} v/r"
                    if scene == "clamped-wheel"
                    else ""
                )
                print(
                    f"{scene:14s} {'mujoco':9s} N = {elements:4d}: {row['ms_per_step']:8.3f} ms/step "
                    f"(first run {row['first_run_s']:.1f} s, {row['dofs']} dofs{rolling})",
                    flush=True,
                )
            peer["rows"] += entry
            peer["growth_exponent_16_to_256"][scene] = growth_exponent(entry)
    ratios = {
        f"{r['scene']}/N={r['elements']}": next(
            d["ms_per_step"] / r["ms_per_step"]
            for d in rows
            if d["path"] == "dense" and d["scene"] == r["scene"] and d["elements"] == r["elements"]
        )
        for r in rows
        if r["path"] == "condensed" and r["elements"] <= DENSE_UP_TO
    }
    report = {
        "lcpdyn_version": __version__,
        "machine": {"python": platform.python_version(), "processor": platform.processor(), "cpus": os.cpu_count()},
        "parameters": {"steps": args.steps, "repeats": args.repeats, "dt": 1e-3, "sizes": args.sizes},
        "rows": rows,
        "growth_exponent_16_to_256": exponents,
        "dense_over_condensed": ratios,
        "largest_position_difference_condensed_vs_dense_m": agreement,
        "mujoco": peer,
    }
    print(table(report))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    temporary = out.with_suffix(".json.tmp")
    temporary.write_text(json.dumps(report, indent=2))
    temporary.replace(out)
    return report


if __name__ == "__main__":
    main()
