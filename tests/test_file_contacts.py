"""Contacts of a model file, in lcpdyn and in MuJoCo on the same file (issue 47, item 6): a box
sliding to rest and a cylinder rolling down an incline, against their closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lcpdyn import Simulation
from lcpdyn.model_files import load_model

mujoco = pytest.importorskip("mujoco", reason="the models extra (MuJoCo's compiler) is not installed")

G, MU, SPEED = 9.81, 0.4, 2.0

BOX = f"""
<mujoco>
  <option timestep="0.001" cone="elliptic" integrator="implicitfast"/>
  <default><geom solref="0.002 1" friction="{MU} 0 0"/></default>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <body name="box" pos="0 0 0.05"><freejoint/><geom type="box" size="0.1 0.1 0.05" mass="2"/></body>
  </worldbody>
</mujoco>"""

ANGLE = math.radians(15.0)
CYLINDER = f"""
<mujoco>
  <option timestep="0.001" cone="elliptic" integrator="implicitfast"/>
  <default><geom solref="0.002 1" friction="0.9 0 0"/></default>
  <worldbody>
    <geom name="ramp" type="plane" size="5 5 0.1" euler="0 {math.degrees(ANGLE)} 0"/>
    <body name="roller" pos="{0.1 * math.sin(ANGLE)} 0 {0.1 * math.cos(ANGLE)}" euler="0 {math.degrees(ANGLE)} 0">
      <freejoint/><geom type="cylinder" size="0.1 0.05" euler="90 0 0" mass="3"/>
    </body>
  </worldbody>
</mujoco>"""


def _mujoco_run(xml, t_end, velocity=None):
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    if velocity is not None:
        d.qvel[:3] = velocity
    for _ in range(int(round(t_end / m.opt.timestep))):
        mujoco.mj_step(m, d)
    return d.qpos[:3].copy(), d.qvel[:3].copy()


@pytest.mark.parametrize("friction", ["regularized", "box", "coulomb"])
def test_a_box_slides_to_rest_at_the_closed_form_distance(friction):
    """Launched at 2 m/s on its face: it stops after v0^2 / (2 mu g) = 0.510 m; MuJoCo on the
    same file (stiff contacts, elliptic cone) agrees to 1 %."""
    loaded = load_model(BOX)
    box = loaded.bodies["box"]
    box.velocity = np.array([SPEED, 0.0, 0.0])
    run = Simulation(loaded.model, friction, 1e-3).run(0.7)
    distance = SPEED**2 / (2 * MU * G)
    travelled = run.position[-1, 0, 0] - box.position[0]
    h_error = SPEED * 1e-3  # the step's first-order error in the distance
    assert travelled == pytest.approx(distance, abs=h_error)
    assert abs(run.velocity[-1, 0, 0]) < (1e-2 if friction == "regularized" else 1e-9)  # below v_th: static
    peer, _ = _mujoco_run(BOX, 0.7, (SPEED, 0.0, 0.0))
    assert peer[0] == pytest.approx(distance, rel=0.01)


@pytest.mark.parametrize("friction", ["regularized", "box", "coulomb"])
def test_a_cylinder_rolls_down_an_incline_at_two_thirds_of_g_sin(friction):
    """A solid cylinder rolling without slipping (mu = 0.9 > tan(15 deg) / 3): its centre
    accelerates at (2/3) g sin(15 deg) down the slope, as in MuJoCo on the same file."""
    loaded = load_model(CYLINDER)
    t_end = 0.4
    run = Simulation(loaded.model, friction, 1e-3).run(t_end)
    down = np.array([math.cos(ANGLE), 0.0, -math.sin(ANGLE)])
    speed = run.velocity[:, 0] @ down
    expected = 2.0 / 3.0 * G * math.sin(ANGLE)
    late = run.t > 0.1  # after the first contact settles
    rate = np.polyfit(run.t[late], speed[late], 1)[0]
    assert rate == pytest.approx(expected, rel=5e-3)
    _, peer = _mujoco_run(CYLINDER, t_end)
    assert peer @ down / t_end == pytest.approx(expected, rel=0.02)
