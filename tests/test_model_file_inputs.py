"""A file's start pose (keyframes, joint values) and its actuators (motors and position actuators
with gear, control and force ranges), lcpdyn.model_file_inputs: against closed forms and MuJoCo
on the same file (issue 47, items 3 and 4)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from lcpdyn import Simulation
from lcpdyn.actuators import JointCoordinate, JointMotor
from lcpdyn.model_files import ModelFileWarning, load_model
from lcpdyn.precision import float64
from lcpdyn.state_view import StateView

mujoco = pytest.importorskip("mujoco", reason="the models extra (MuJoCo's compiler) is not installed")

ARM = """
<mujoco><compiler angle="radian"/><option gravity="0 0 {g}" timestep="{dt}" integrator="{integrator}"/>
  <worldbody>
    <body name="arm" pos="0 0 1">
      <joint name="shoulder" type="hinge" axis="0 1 0" ref="{ref}"/>
      <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.03" mass="2"/>
      <body name="hand" pos="0.4 0 0">
        <joint name="wrist" type="slide" axis="1 0 0"/>
        <geom type="sphere" size="0.05" mass="0.5"/>
      </body>
    </body>
  </worldbody>
  <actuator>{actuators}</actuator>
  <keyframe><key name="raised" qpos="0.7 0.05" qvel="-1.5 0.2"/></keyframe>
</mujoco>"""


def _arm(actuators="", g=0.0, ref=0.0, dt=1e-3, integrator="Euler"):
    return ARM.format(actuators=actuators, g=g, ref=ref, dt=dt, integrator=integrator)


def _load(xml, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelFileWarning)
        return load_model(xml, **options)


def _coordinates(loaded, q, v):
    with float64():
        view = StateView(loaded.model.index(), q, v)
        return {n: (float(JointCoordinate(j).value(view)), float(JointCoordinate(j).rate(view)))
                for n, j in loaded.joints.items()}  # fmt: skip


@pytest.mark.parametrize("ref", [0.0, 0.3])
def test_a_keyframe_places_the_bodies_where_mujoco_does_with_its_velocities(ref):
    xml = _arm(ref=ref)
    loaded = _load(xml, pose="raised")
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    mujoco.mj_forward(m, d)
    later = mujoco.MjData(m)  # the bodies' velocities: MuJoCo's centres of mass a moment later
    mujoco.mj_resetDataKeyframe(m, later, 0)
    mujoco.mj_integratePos(m, later.qpos, later.qvel, 1e-7)
    mujoco.mj_forward(m, later)
    for name, body in loaded.bodies.items():
        b = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, name)
        np.testing.assert_allclose(body.position, d.xipos[b], rtol=0, atol=1e-12)
        np.testing.assert_allclose(body.velocity, (later.xipos[b] - d.xipos[b]) / 1e-7, rtol=0, atol=1e-6)
    q, v = loaded.model.initial_state()
    values = _coordinates(loaded, q, v)
    # the coordinates stay measured from qpos0 (the file's ranges are): the key's qpos less ref
    assert values["shoulder"][0] == pytest.approx(0.7 - ref, abs=1e-12)
    assert values["wrist"][0] == pytest.approx(0.05, abs=1e-12)
    assert values["shoulder"][1] == pytest.approx(-1.5, abs=1e-12)
    assert values["wrist"][1] == pytest.approx(0.2, abs=1e-12)
    # joint values by name: the same placement as the keyframe's qpos
    by_name = _load(xml, pose={"shoulder": 0.7, "wrist": 0.05})
    for name, body in by_name.bodies.items():
        np.testing.assert_allclose(body.position, loaded.bodies[name].position, rtol=0, atol=1e-14)
        assert np.all(body.velocity == 0.0)


def test_a_bad_pose_is_named():
    xml = _arm()
    with pytest.raises(ValueError, match="no keyframe named 'home'.*'raised'"):
        _load(xml, pose="home")
    with pytest.raises(ValueError, match="pose names joint 'elbow'"):
        _load(xml, pose={"elbow": 0.1})
    with pytest.raises(ValueError, match="pose of joint 'shoulder' needs 1 finite number"):
        _load(xml, pose={"shoulder": [0.1, 0.2]})
    with pytest.raises(ValueError, match="controls name actuators the file does not have: \\['pump'\\]"):
        _load(xml, controls={"pump": 1.0})


def test_a_geared_motor_clamped_by_its_ranges_spins_the_arm_as_the_closed_form():
    """tau = gear clip(g0 clip(ctrl, ctrlrange), forcerange) = 3 * min(2 * 1, 1.5) = 4.5 N m on
    the shoulder, no gravity, the hand held (its slide's own motor off): theta = tau t^2 / (2 I)
    with I the whole arm's moment about the hinge, as MuJoCo's."""
    motors = (
        '<general name="drive" joint="shoulder" gear="3" gainprm="2" ctrlrange="-1 1" ctrllimited="true" '
        'forcerange="-1.5 1.5" forcelimited="true"/><position name="hold" joint="wrist" kp="1e4" kv="200"/>'
    )
    xml = _arm(motors)
    loaded = _load(xml, controls={"drive": 5.0})
    assert isinstance(loaded.actuators["drive"], JointMotor) and loaded.actuators["drive"].gear == 3.0
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    d.ctrl[0] = 5.0
    mujoco.mj_forward(m, d)
    assert d.actuator_force[0] == pytest.approx(1.5)
    full = np.zeros((m.nv, m.nv))
    try:  # MuJoCo 3.3 on: mj_fullM(m, d, dst); before: mj_fullM(m, dst, d.qM)
        mujoco.mj_fullM(m, d, full)
    except TypeError:
        mujoco.mj_fullM(m, full, d.qM)
    inertia = float(full[0, 0])  # the shoulder's diagonal of M at qpos0 (the hand held on its slide)
    sim = Simulation(loaded.model, "regularized", 1e-4)
    sim.run(0.1)
    theta = _coordinates(loaded, sim.q, sim.v)["shoulder"][0]
    assert theta == pytest.approx(4.5 * 0.1**2 / (2.0 * inertia), rel=2e-3)


def test_a_position_actuator_holds_the_arm_where_mujoco_does():
    """Under gravity a geared position actuator (kp, kv, gear 2, ctrl 0.8 rad of length: target
    0.4 rad) rests where kp_eff (q_T - q) balances gravity's moment, kp_eff = gear^2 kp: lcpdyn's
    rest angle equals MuJoCo's (its implicit integrator run to rest)."""
    servos = (
        '<position name="lift" joint="shoulder" kp="200" kv="20" gear="2"/>'
        '<position name="hold" joint="wrist" kp="1e4" kv="200"/>'
    )
    xml = _arm(servos, g=-9.81, integrator="implicitfast")
    loaded = _load(xml, controls={"lift": 0.8})
    sim = Simulation(loaded.model, "regularized", 1e-3)
    sim.run(3.0)
    rest = _coordinates(loaded, sim.q, sim.v)["shoulder"][0]
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    d.ctrl[:] = (0.8, 0.0)
    for _ in range(3000):
        mujoco.mj_step(m, d)
    assert abs(d.qvel[0]) < 1e-6 and abs(sim.v).max() < 1e-6
    assert rest == pytest.approx(float(d.qpos[0]), abs=1e-6)
    # and the closed form: gravity's moment m g r cos(q) about +y (summed over the arm's masses, the
    # hand at its slide's rest) turns the arm down, towards +q: 4 kp (q - 0.4) balances it
    assert rest > 0.4 and 800.0 * (rest - 0.4) == pytest.approx(
        9.81 * (2.0 * 0.2 + 0.5 * (0.4 + float(d.qpos[1]))) * math.cos(rest), rel=1e-4
    )


def test_actuators_lcpdyn_does_not_take_are_named():
    xml = _arm(
        '<velocity name="spin" joint="shoulder" kv="3"/><position name="hold" joint="wrist" kp="50" '
        'forcerange="-1 1" forcelimited="true"/>'
    )
    with pytest.warns(ModelFileWarning) as caught:
        loaded = load_model(xml)
    message = str(caught[0].message)
    assert "actuator 'spin': not taken (a velocity actuator" in message
    assert "actuator 'hold': its forcerange [-1.0, 1.0]" in message
    assert set(loaded.actuators) == {"hold"}
    with pytest.warns(ModelFileWarning, match="actuator 'spin': not taken\n"):
        load_model(xml, actuators=False)


def test_the_loaded_file_gives_mujocos_model_of_it():
    """``ModelFile.mujoco_model`` is MuJoCo's compiled model of the file as lcpdyn read it: its
    joints by the same names, their coordinates from the same ``qpos0`` (the cross-check's peer)."""
    loaded = load_model(_arm(ref=0.3))
    m = loaded.mujoco_model
    assert isinstance(m, mujoco.MjModel)
    names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j) for j in range(m.njnt)]
    assert names == list(loaded.joints) == ["shoulder", "wrist"]
    assert m.qpos0[0] == pytest.approx(0.3)  # the hinge's reference: lcpdyn's coordinate is qpos - qpos0
