"""What a model file says about a model's start and its drives, taken by :func:`lcpdyn.load_model`:

* the start pose -- a keyframe of an MJCF (``<key qpos=... qvel=...>``) or joint values given by
  name (rad or m, in the file's own coordinates, as MuJoCo's ``qpos``): the bodies are placed
  where MuJoCo's forward kinematics puts them at that ``qpos`` (``xipos``, ``ximat``), with the
  keyframe's velocities (``mj_objectVelocity``: a body's is at its centre of mass, world axes). The joints, their limits
  and the joint coordinates of :mod:`lcpdyn.actuators` stay measured from ``qpos0``, as the
  file's ranges are.
* the actuators on a single hinge or slide (joint transmission, no activation dynamics, a fixed
  gain): MuJoCo's actuator force is g0 ctrl + b0 + b1 L + b2 L' on the length L = gear q, and the
  joint feels gear times it. A ``motor`` (b = 0) is a :class:`~lcpdyn.actuators.JointMotor` with
  the file's gear and the effort g0 ctrl(t) (``ctrlrange`` and ``forcerange`` clamp it, as
  MuJoCo does); a ``position`` actuator (b1 < 0) is the implicit PD servo
  :func:`~lcpdyn.actuators.position_servo` with k_p = -gear^2 b1, k_d = -gear^2 b2 and the target
  q_T = gear (g0 ctrl + b0) / k_p (from ``qpos0``), its ``forcerange`` not taken (the servo does
  not saturate: named). The controls are given by actuator name, a number or a JAX-traceable
  function of t (default 0, MuJoCo's ``ctrl`` at start). Every other actuator (a velocity
  actuator, a tendon's or a site's, one with activation dynamics or a muscle) is named as not
  taken.
"""

from __future__ import annotations

import numpy as np

from .actuators import JointMotor, position_servo
from .constraints import RevoluteJoint
from .joints import PrismaticJoint
from .rotation import np_quaternion_from_matrix

__all__ = ["set_pose", "take_actuators"]


def _names(mujoco, m, kind, count):
    return [mujoco.mj_id2name(m, kind, i) for i in range(count)]


def set_pose(mujoco, m, moving, label, pose) -> None:
    """Places the ``moving`` bodies (MuJoCo body index -> RigidBody) at ``pose``: a keyframe's
    name, or joint name -> value (a scalar for a hinge or slide, 4 numbers for a ball, 7 for a
    free joint; the file's own coordinates). A ValueError names an unknown keyframe or joint or a
    value of the wrong size."""
    d = mujoco.MjData(m)
    d.qpos[:] = m.qpos0
    if isinstance(pose, str):
        keys = _names(mujoco, m, mujoco.mjtObj.mjOBJ_KEY, m.nkey)
        if pose not in keys:
            raise ValueError(f"{label}: no keyframe named {pose!r} (the file has {[k for k in keys if k]})")
        k = keys.index(pose)
        d.qpos[:], d.qvel[:] = m.key_qpos[k], m.key_qvel[k]
    else:
        joints = _names(mujoco, m, mujoco.mjtObj.mjOBJ_JOINT, m.njnt)
        for name, value in dict(pose).items():
            if name not in joints:
                raise ValueError(f"{label}: pose names joint {name!r}, which the file does not have ({joints})")
            j = joints.index(name)
            width = {0: 7, 1: 4}.get(int(m.jnt_type[j]), 1)
            value = np.asarray(value, float).reshape(-1)
            if value.size != width or not np.all(np.isfinite(value)):
                raise ValueError(f"{label}: pose of joint {name!r} needs {width} finite number(s), "
                                 f"got {value.tolist()}")  # fmt: skip
            start = int(m.jnt_qposadr[j])
            d.qpos[start : start + width] = value
    mujoco.mj_forward(m, d)
    twist = np.zeros(6)
    for b, body in moving.items():
        R = d.ximat[b].reshape(3, 3)
        body.position = d.xipos[b].copy()
        body.orientation = np_quaternion_from_matrix(R)
        mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_BODY, b, twist, 0)  # (angular, linear) at xipos, world
        body.angular_velocity = twist[:3].copy()
        body.velocity = twist[3:].copy()
        body.validate()


def take_actuators(mujoco, m, out, controls, label) -> None:
    """The file's actuators as motors and servos on ``out``'s joints (module docstring); the rest
    named in ``out.skipped``. ``controls``: actuator name -> a number or a function of t."""
    names = _names(mujoco, m, mujoco.mjtObj.mjOBJ_ACTUATOR, m.nu)
    unknown = sorted(set(controls) - set(names))
    if unknown:
        raise ValueError(f"{label}: controls name actuators the file does not have: {unknown} (it has {names})")
    joints = _names(mujoco, m, mujoco.mjtObj.mjOBJ_JOINT, m.njnt)
    for i, name in enumerate(names):
        label_i = f"actuator {name!r}"
        j = int(m.actuator_trnid[i, 0])
        joint_name = joints[j] if int(m.actuator_trntype[i]) == 0 else None
        joint = out.joints.get(joint_name)
        why = None
        if joint_name is None:
            why = "its transmission is not a joint's"
        elif not isinstance(joint, (RevoluteJoint, PrismaticJoint)):
            why = f"joint {joint_name!r} is not a single hinge or slide of lcpdyn's"
        elif int(m.actuator_dyntype[i]) != 0 or int(m.actuator_gaintype[i]) != 0:
            why = "it has activation dynamics or a gain that is not fixed"
        elif int(m.actuator_biastype[i]) not in (0, 1):
            why = "its bias is not affine"
        gear = float(m.actuator_gear[i, 0])
        gain = float(m.actuator_gainprm[i, 0])
        bias = [float(x) for x in m.actuator_biasprm[i, :3]] if int(m.actuator_biastype[i]) == 1 else [0.0] * 3
        if why is None and bias[1] == 0.0 and bias[2] != 0.0:
            why = "a velocity actuator (a damper towards a target rate; lcpdyn's velocity_servo is a rigid row)"
        elif why is None and (bias[1] > 0.0 or bias[2] > 0.0):
            why = "its bias pushes away from its target"
        if why is not None:
            out.skipped.append(f"{label_i}: not taken ({why})")
            continue
        control = controls.get(name, 0.0)
        low, high = (float(x) for x in m.actuator_ctrlrange[i]) if m.actuator_ctrllimited[i] else (-np.inf, np.inf)
        force_range = tuple(float(x) for x in m.actuator_forcerange[i]) if m.actuator_forcelimited[i] else None
        offset = float(m.qpos0[int(m.jnt_qposadr[j])])
        if bias[1] == 0.0:  # a motor: force g0 ctrl + b0, clamped
            out.model.add_force(JointMotor(joint, _motor_effort(control, gain, bias[0], low, high, force_range), gear))
            out.actuators[name] = out.model.forces[-1]
            continue
        kp, kd = -gear * gear * bias[1], -gear * gear * bias[2]
        target = _servo_target(control, gear, gain, bias[0], kp, offset, low, high)
        servo = position_servo(joint, target, kp, kd, name=f"actuator {name}")
        out.model.add_constraint(servo)
        out.actuators[name] = servo
        if force_range is not None:
            out.skipped.append(f"{label_i}: its forcerange {list(force_range)} (the position servo does not saturate)")


def _value(control, low, high):
    """ctrl(t) clamped to the control range: a function of t, or a number."""
    import jax.numpy as jnp

    if callable(control):
        return lambda t: jnp.clip(jnp.asarray(control(t), dtype=float), low, high)
    value = float(control)
    if not np.isfinite(value):
        raise ValueError(f"a control must be finite, got {control!r}")
    return float(np.clip(value, low, high))


def _motor_effort(control, gain, b0, low, high, force_range):
    import jax.numpy as jnp

    ctrl = _value(control, low, high)
    lo, hi = (-np.inf, np.inf) if force_range is None else force_range

    def effort(t, state):
        value = ctrl(t) if callable(ctrl) else ctrl
        return jnp.clip(gain * value + b0, lo, hi)

    return effort


def _servo_target(control, gear, gain, b0, kp, offset, low, high):
    ctrl = _value(control, low, high)
    if callable(ctrl):
        return lambda t: gear * (gain * ctrl(t) + b0) / kp - offset
    return gear * (gain * ctrl + b0) / kp - offset
