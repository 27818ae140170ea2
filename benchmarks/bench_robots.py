"""Imported robots against MuJoCo on the same files (issue 47, item 6): the four scenes of
``scenes.robots`` (UR5 and Panda servoed to a pose, Solo-12 and A1 landing and standing), stepped
by lcpdyn and by MuJoCo from the same URDF in the same run.

lcpdyn: the scene as built (its servos implicit PD rows, the regularized model, h = 1 ms),
timed step by step after a first step that compiles (reported apart as ``first_step_s``).
MuJoCo: the same URDF compiled by the same loader path (``lcpdyn.model_files``: package meshes,
the quadrupeds' free joints at the same height and their joints in the same start pose), a floor
plane as the scene's, and a position actuator per joint with the scene's gains (``kp``, ``kv``),
the same target, h = 1 ms, its default solver (Newton) and the ``implicitfast`` integrator (the
servos' damping implicit, as lcpdyn's rows are), timed with ``mj_step`` over the same steps.
Reported per robot and engine: the median wall and CPU time per step, and the joint targets'
largest error at the end. Runs alternate between the engines, ``--rounds`` times.

Usage: ``python benchmarks/bench_robots.py [--steps 300] [--rounds 2] [--out results/bench_robots.json]``
(needs the ``robots`` extra; also writes ``.txt``).
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ROBOTS = {"ur5-servo": "ur5", "panda-servo": "panda", "solo12-stand": "solo12", "a1-stand": "a1"}
LEGGED = ("solo12", "a1")  # a floating base, started in the pose its servos hold


def run_lcpdyn(name: str, steps: int) -> dict:
    from lcpdyn.actuators import JointCoordinate
    from lcpdyn.precision import float64
    from lcpdyn.state_view import StateView
    from scenes import SCENES

    start = time.perf_counter()
    scene = SCENES[name].build()
    sim = scene.simulation("regularized")
    sim.step()
    first = time.perf_counter() - start
    wall, cpu = [], []
    for _ in range(steps):
        t0, c0 = time.perf_counter(), time.process_time()
        sim.step()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    targets = getattr(scene, "targets", dict.fromkeys(scene.loaded.joints, 0.0))
    with float64():
        view = StateView(scene.model.index(), sim.q, sim.v)
        error = max(abs(float(JointCoordinate(j).value(view)) - targets[n]) for n, j in scene.loaded.joints.items())
    return {"engine": "lcpdyn regularized", "robot": name, "first_step_s": first,
            "step_ms": 1e3 * float(np.median(wall)), "step_cpu_ms": 1e3 * float(np.median(cpu)),
            "target_error": error, "bodies": len(scene.model.bodies)}  # fmt: skip


def run_mujoco(name: str, steps: int) -> dict:
    import mujoco

    from lcpdyn.model_files import _compile
    from scenes import SCENES
    from scenes.robots import robot_file

    scene = SCENES[name].build()
    p = scene.parameters
    robot = ROBOTS[name]
    floating = robot in LEGGED
    kp, kv = p["servo_stiffness"], p["servo_damping"]
    floor = 0.0 if floating else -p["mount"]

    def edit(spec):  # the scene's floor, a position servo per joint with its gains, implicit damping
        spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
        spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_PLANE, size=[5, 5, 0.1], pos=[0, 0, floor])
        for joint in spec.joints:
            if joint.type in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE):
                actuator = spec.add_actuator(target=joint.name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
                actuator.set_to_position(kp=kp, kv=kv)

    model, _ = _compile(robot_file(robot), (), floating, getattr(scene, "base_position", None), edit)
    data = mujoco.MjData(model)
    targets = getattr(scene, "targets", None) or dict.fromkeys(scene.loaded.joints, 0.0)
    for a in range(model.nu):
        joint = model.actuator_trnid[a, 0]
        name_j = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, joint)
        data.ctrl[a] = model.qpos0[model.jnt_qposadr[joint]] + targets[name_j]
        if floating:  # the scene starts there too
            data.qpos[model.jnt_qposadr[joint]] = data.ctrl[a]
    wall, cpu = [], []
    for _ in range(steps):
        t0, c0 = time.perf_counter(), time.process_time()
        mujoco.mj_step(model, data)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    error = max(abs(data.qpos[model.jnt_qposadr[model.actuator_trnid[a, 0]]] - data.ctrl[a]) for a in range(model.nu))
    return {"engine": "MuJoCo (position actuators, implicitfast, Newton)", "robot": name,
            "step_ms": 1e3 * float(np.median(wall)), "step_cpu_ms": 1e3 * float(np.median(cpu)),
            "target_error": float(error)}  # fmt: skip


def table(report) -> str:
    lines = ["| robot | engine | per step (wall / CPU) | target error at the end |", "| --- | --- | --- | --- |"]
    for entry in report["entries"]:
        lines.append(f"| {entry['robot']} | {entry['engine']} | {entry['step_ms']:.3g} / {entry['step_cpu_ms']:.3g} ms "
                     f"| {entry['target_error']:.3g} |")  # fmt: skip
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "bench_robots.json")
    args = parser.parse_args(argv)
    if args.steps < 1 or args.rounds < 1:
        parser.error("--steps and --rounds must be >= 1")
    import lcpdyn

    report = {"lcpdyn_version": lcpdyn.__version__, "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
              "steps": args.steps, "rounds": args.rounds, "entries": []}  # fmt: skip
    for _ in range(args.rounds):
        for name in ROBOTS:
            for run in (run_lcpdyn, run_mujoco):  # interleaved
                entry = run(name, args.steps)
                report["entries"].append(entry)
                print(json.dumps(entry), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    args.out.with_suffix(".txt").write_text(table(report) + "\n")
    print(table(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
