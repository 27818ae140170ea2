"""
UR5 arm: servos holding gravity, against MuJoCo
===============================================

Universal Robots' UR5 from its URDF (example-robot-data), each of its six joints on an
implicit PD servo (a compliant row of the step's problem) towards a pose. At rest the servos
hold gravity: k_p (q − q_target) = −g(q), where g is the generalized gravity force. The script
takes g from MuJoCo's inverse dynamics of the same file at lcpdyn's final angles and prints both
sides. Scene ``ur5-servo`` (the ``models`` and ``robots`` extras).
"""

import mujoco
import numpy as np

from lcpdyn.actuators import JointCoordinate
from lcpdyn.plotting import plot_run
from lcpdyn.precision import float64
from lcpdyn.state_view import StateView
from scenes import build_scene

scene = build_scene("ur5-servo")
sim = scene.simulation("regularized")
run = sim.run(1.5)
with float64():
    view = StateView(scene.model.index(), sim.q, sim.v)
    angles = {name: float(JointCoordinate(joint).value(view)) for name, joint in scene.loaded.joints.items()}

m = scene.loaded.mujoco_model  # MuJoCo's model of the same URDF
d = mujoco.MjData(m)
for name, angle in angles.items():
    j = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, name)
    d.qpos[m.jnt_qposadr[j]] = m.qpos0[m.jnt_qposadr[j]] + angle
mujoco.mj_forward(m, d)
kp = scene.parameters["servo_stiffness"]
print(f"at rest: largest speed {np.abs(sim.v).max():.1e}; k_p = {kp} N m/rad")
print(f"{'joint':>22} {'k_p (q - q_target)':>19} {'-g(q), MuJoCo':>15}")
for name, angle in angles.items():
    dof = m.jnt_dofadr[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, name)]
    held, gravity = kp * (angle - scene.targets[name]), -d.qfrc_bias[dof]
    print(f"{name:>22} {held:>19.5f} {gravity:>15.5f}")
    assert abs(held - gravity) < kp * 1e-4 + 1e-3 * abs(gravity)
plot_run(run, "ur5-servo.png", title="UR5 servoed to a pose, regularized model")
