"""MuJoCo stepping the Peiret 2016 wheel of ``scenes.wheel``: the peer that ``bench_wheel`` and
``bench_sweep`` measure in the same run as lcpdyn.

The wheel is a thin cylinder (half-width 5 mm, the rim's edge on the ground) with the scene's mass,
inertia, pose and velocities, on a plane with the scene's mu, elliptic cone, h = 1 ms, MuJoCo's
default solver and contact softness. It is the same mechanical problem, not the same numbers:
MuJoCo's contacts are soft (solref) and its cylinder--plane contact is its own.
"""

from __future__ import annotations

import math
import time

import numpy as np


def available() -> bool:
    try:
        import mujoco  # noqa: F401
    except ImportError:
        return False
    return True


def mjcf(scene) -> str:
    """The MJCF text of ``scene`` (a built ``scenes.wheel`` scene)."""
    p = scene.parameters
    body = scene.model.bodies[0]
    x, y, z = (float(c) for c in body.position)
    half = 0.005
    z += half * math.sin(math.radians(p["theta_deg"]))  # the rim's edge, not its mid-plane, on the ground
    w, a, b, c = (float(v) for v in body.orientation)
    inertia = " ".join(f"{v:.17g}" for v in body.inertia_matrix.diagonal())
    return (
        f'<mujoco><option timestep="{scene.dt:.17g}" gravity="0 0 {-p["gravity"]}" cone="elliptic"/>'
        f'<worldbody><geom type="plane" size="0 0 1" friction="{p["mu"]} 0 0"/>'
        f'<body name="wheel" pos="{x} {y} {z}" quat="{w} {a} {b} {c}"><freejoint/>'
        f'<inertial pos="0 0 0" mass="{p["mass"]}" diaginertia="{inertia}"/>'
        f'<geom type="cylinder" size="{p["radius"]} {half}" zaxis="0 1 0" mass="0" friction="{p["mu"]} 0 0"/>'
        "</body></worldbody></mujoco>"
    )


def build(scene):
    """(MjModel, MjData) of ``scene`` at its initial state."""
    import mujoco

    from lcpdyn.rotation import np_rotation_matrix

    model = mujoco.MjModel.from_xml_string(mjcf(scene))
    data = mujoco.MjData(model)
    body = scene.model.bodies[0]
    R = np_rotation_matrix(body.orientation)
    data.qvel[:3] = body.velocity
    data.qvel[3:] = R.T @ np.asarray(body.angular_velocity)  # its free joint: angular velocity in the body frame
    return model, data


def run(scene, steps: int) -> dict:
    """Steps ``steps`` of ``scene`` in MuJoCo: wall and CPU seconds of the stepping alone (the
    build apart), and whether the state stayed finite."""
    import mujoco

    start = time.perf_counter()
    model, data = build(scene)
    built = time.perf_counter() - start
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(steps):
        mujoco.mj_step(model, data)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {
        "version": mujoco.__version__,
        "build_s": built,
        "wall_s": wall,
        "cpu_s": cpu,
        "finite": bool(np.all(np.isfinite(data.qpos))),
    }
