"""Models from MJCF and URDF files (lcpdyn.model_files, read by MuJoCo's compiler), and the same
file run by lcpdyn and by MuJoCo (issue 47, items 4 and 6)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from lcpdyn import Simulation
from lcpdyn.constraints import BallJoint, RevoluteJoint
from lcpdyn.joints import CylindricalJoint, FixedJoint, PrismaticJoint, UniversalJoint
from lcpdyn.model_files import ModelFileError, ModelFileWarning, load_model

mujoco = pytest.importorskip("mujoco", reason="the models extra (MuJoCo's compiler) is not installed")

CHAIN = """
<mujoco>
  <option gravity="0 0 -9.81" integrator="RK4" timestep="1e-5"><flag contact="disable"/></option>
  <worldbody>
    <geom type="plane" size="2 2 0.1"/>
    <body name="l1" pos="0 0 1">
      <joint name="j1" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
      <body name="l2" pos="0.3 0 0" euler="0 30 20">
        <joint name="j2" type="hinge" axis="0 0.6 0.8"/>
        <geom type="box" pos="0.15 0 0" size="0.15 0.02 0.02"/>
        <body name="l3" pos="0.3 0 0">
          <joint name="j3" type="slide" axis="1 0 0"/>
          <geom type="sphere" pos="0.05 0 0.02" size="0.04"/>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def _reference(t_end):
    """MuJoCo's RK4 at h = 1e-5 on the same file: the bodies' centres of mass at t_end."""
    m = mujoco.MjModel.from_xml_string(CHAIN)
    d = mujoco.MjData(m)
    for _ in range(int(round(t_end / m.opt.timestep))):
        mujoco.mj_step(m, d)
    return d.xipos[1:].copy()


def test_a_chain_without_contacts_moves_as_mujoco_moves_it_first_order_in_h():
    """Hinge, skewed hinge and slide in a chain swinging under gravity for 0.5 s: lcpdyn's
    centres of mass against MuJoCo's RK4 at 1e-5 s; the error falls as h (symplectic Euler),
    the slope of log error against log h within [0.8, 1.2]."""
    t_end = 0.5
    reference = _reference(t_end)
    errors = []
    steps = (4e-3, 2e-3, 1e-3, 5e-4)
    for h in steps:
        loaded = load_model(CHAIN)
        assert loaded.colliders == [] and "contacts disabled" in loaded.notes[0]
        run = Simulation(loaded.model, "regularized", h).run(t_end)
        assert run.t[-1] == pytest.approx(t_end)
        errors.append(np.abs(run.position[-1] - reference).max())
    slopes = np.diff(np.log(errors)) / np.diff(np.log(steps))
    assert np.all((slopes > 0.8) & (slopes < 1.2)), (errors, slopes)
    assert errors[-1] < 5e-3  # m, after 0.5 s of a 1 m swing


def test_joints_of_the_file_become_lcpdyn_joints():
    xml = """
    <mujoco><worldbody>
      <body name="base" pos="0 0 1"><freejoint/><geom type="box" size="0.1 0.1 0.1"/>
        <body name="cross" pos="0.2 0 0">
          <joint name="a" type="hinge" axis="0 0 1"/><joint name="b" type="hinge" axis="0 1 0"/>
          <geom type="sphere" size="0.05"/>
        </body>
        <body name="sleeve" pos="0 0.2 0">
          <joint name="c" type="slide" axis="1 0 0"/><joint name="d" type="hinge" axis="1 0 0"/>
          <geom type="cylinder" size="0.03 0.1" euler="0 90 0"/>
        </body>
        <body name="socket" pos="0 -0.2 0"><joint name="e" type="ball"/><geom type="sphere" size="0.04"/></body>
        <body name="welded" pos="0 0 0.2"><geom type="sphere" size="0.04"/></body>
      </body>
    </worldbody></mujoco>"""
    loaded = load_model(xml)
    kinds = {name: type(joint) for name, joint in loaded.joints.items()}
    assert kinds == {"a": UniversalJoint, "b": UniversalJoint, "c": CylindricalJoint, "d": CylindricalJoint,
                     "e": BallJoint}  # fmt: skip
    assert sum(isinstance(c, FixedJoint) for c in loaded.model.holonomic) == 1
    assert set(loaded.bodies) == {"base", "cross", "sleeve", "socket", "welded"}
    assert len(loaded.colliders) == 5
    run = Simulation(loaded.model, "box", 1e-3).run(0.05)  # the whole tree falls together, joints held
    assert np.all(np.isfinite(run.position))


def test_what_the_file_holds_and_lcpdyn_does_not_take_is_named():
    xml = """
    <mujoco><compiler angle="radian"/><worldbody>
      <body name="arm" pos="0 0 1">
        <joint name="shoulder" type="hinge" axis="0 1 0" range="-1 1" limited="true" frictionloss="0.2"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
        <geom name="egg" type="ellipsoid" size="0.05 0.04 0.03"/>
        <site name="tip" pos="0.3 0 0"/>
      </body>
    </worldbody>
    <tendon><fixed name="cable"><joint joint="shoulder" coef="1"/></fixed></tendon>
    <actuator><velocity name="drive" joint="shoulder" kv="2"/></actuator>
    <sensor><jointpos name="angle" joint="shoulder"/></sensor>
    </mujoco>"""
    with pytest.warns(ModelFileWarning) as caught:
        loaded = load_model(xml)
    message = str(caught[0].message)
    for named in ("'egg': a ellipsoid", "tendon 'cable'", "actuator 'drive'", "sensor 'angle'"):
        assert named in message
    assert len(loaded.skipped) == 4
    names = [c.name for c in loaded.model.holonomic + loaded.model.nonholonomic]
    assert "limit of shoulder" in names and "friction in shoulder" in names  # taken: a stop and joint friction
    assert loaded.ranges["shoulder"] == (-1.0, 1.0)
    with pytest.warns(ModelFileWarning, match=r"'shoulder': its limits \[-1, 1\] \(rad; limits=False\)"):
        load_model(xml, limits=False)
    with pytest.raises(ModelFileError, match="tendon 'cable'"):
        load_model(xml, strict=True)


def test_a_malformed_or_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(ModelFileError, match="refused.*invalid keyword: 'hing' Element 'joint', line 1"):
        load_model("<mujoco><worldbody><body><joint type='hing'/></body></worldbody></mujoco>")
    with pytest.raises(ModelFileError, match="does not exist"):
        load_model(tmp_path / "nowhere.xml")
    with pytest.raises(ModelFileError, match="refused.*moving bodies.*name 'ghost', id 1, line 1"):
        load_model("<mujoco><worldbody><body name='ghost'><joint type='hinge'/></body></worldbody></mujoco>")
    massless = (
        "<body name='ghost'><joint type='hinge'/><body name='shell' pos='0.2 0 0'><geom size='0.1'/></body></body>"
    )
    with pytest.raises(
        ModelFileError, match=r"body 'ghost' moves but has no mass of its own \(its mass is in \['shell'\]"
    ):
        load_model(f"<mujoco><worldbody>{massless}</worldbody></mujoco>")


def _inertial(mass, ixx, iyy, izz, origin="0 0 0"):
    return (f'<inertial><origin xyz="{origin}"/><mass value="{mass}"/>'
            f'<inertia ixx="{ixx}" iyy="{iyy}" izz="{izz}" ixy="0" ixz="0" iyz="0"/></inertial>')  # fmt: skip


def _joint(name, kind, parent, child, origin, axis=None, extra=""):
    axis = "" if axis is None else f'<axis xyz="{axis}"/>'
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{origin}"/>{axis}{extra}</joint>')  # fmt: skip


URDF = f"""<?xml version="1.0"?>
<robot name="arm">
  <link name="base">{_inertial(5, 0.1, 0.1, 0.1)}</link>
  <link name="upper">{_inertial(1, 0.02, 0.02, 0.001, "0 0 0.2")}
    <collision><origin xyz="0 0 0.2"/><geometry><cylinder radius="0.03" length="0.4"/></geometry></collision>
  </link>
  <link name="slider">{_inertial(0.5, 0.001, 0.001, 0.001)}
    <collision><geometry><box size="0.05 0.05 0.05"/></geometry></collision></link>
  <link name="tool">{_inertial(0.2, 0.0001, 0.0001, 0.0001)}</link>
  {_joint("shoulder", "continuous", "base", "upper", "0 0 0.1", "0 1 0")}
  {
    _joint(
        "extend",
        "prismatic",
        "upper",
        "slider",
        "0 0 0.4",
        "0 0 1",
        '<limit lower="0" upper="0.2" effort="10" velocity="1"/>',
    )
}
  {_joint("mount", "fixed", "slider", "tool", "0 0 0.05")}
</robot>"""


def test_a_urdf_arm_loads_with_its_masses_joints_and_colliders(tmp_path):
    path = tmp_path / "arm.urdf"
    path.write_text(URDF)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ModelFileWarning)  # all of it taken
        loaded = load_model(path)
    assert loaded.ranges["extend"] == (0.0, 0.2)
    assert [c.name for c in loaded.model.holonomic if c.unilateral] == ["limit of extend"]
    # the base is the world (URDF's root link is fixed); MuJoCo's compiler merges a link on a fixed
    # joint into its parent: the tool's mass is the slider's
    assert set(loaded.bodies) == {"upper", "slider"}
    assert loaded.bodies["upper"].mass == pytest.approx(1.0)
    assert loaded.bodies["slider"].mass == pytest.approx(0.7)
    assert isinstance(loaded.joints["shoulder"], RevoluteJoint)
    assert isinstance(loaded.joints["extend"], PrismaticJoint)
    assert len(loaded.colliders) == 2
    upper = loaded.bodies["upper"]
    np.testing.assert_allclose(upper.position, [0.0, 0.0, 0.3], atol=1e-12)  # joint origin + inertial origin
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelFileWarning)
        run = Simulation(loaded.model, "regularized", 1e-3).run(0.2)
    # the arm balances upright (unstable, at rest): its centre stays 0.2 m from the shoulder
    upper = run.position[:, 0]
    assert np.all(np.abs(np.linalg.norm(upper - [0.0, 0.0, 0.1], axis=1) - 0.2) < 1e-6)
    assert math.isfinite(float(run.position[-1, 1, 2]))
