"""Scenes that need one engine (issue 43, item 5): bodies on rolling constraints, joints and
compliant suspensions meeting loose bodies found by collision detection, in one problem per step."""

from __future__ import annotations

import numpy as np
import pytest

import scenes
from scenes import ball_on_beam, crate_on_half_car, wheel_into_boxes

pytestmark = [pytest.mark.filterwarnings("ignore::lcpdyn.stepper.EnergyWarning"), pytest.mark.one_leg(leg="siconos")]


def _speeds(sim):
    return sim.v.reshape(-1, 6)


@pytest.mark.parametrize("restitution", [0.0, 1.0])
def test_a_rolling_wheel_strikes_a_box_as_newtons_law_says(restitution):
    """One box, no friction: the wheel's rolling rows make it strike as the mass m + I/r^2, and
    Newton's law with e = 0 or 1 gives both speeds after the impact (the scene's docstring);
    the wheel still rolls, upright, and the box does not turn."""
    scene = wheel_into_boxes.build(boxes=1, mu=0.0, mu_wheel=0.0, restitution=restitution)
    sim = scene.simulation("regularized")
    for _ in range(60):  # the impact comes at t = gap / speed = 0.025 s
        out = sim.step()
    wheel, box = _speeds(sim)
    expected = wheel_into_boxes.first_impact(scene.parameters)
    assert (wheel[0], box[0]) == pytest.approx(expected, abs=1e-12 * scene.parameters["speed"])
    r = scene.parameters["wheel_radius"]
    assert wheel[4] * r == pytest.approx(wheel[0], abs=1e-12)  # rolling: omega_y r = v
    assert np.abs(wheel[[1, 2, 3, 5]]).max() < 1e-12  # upright, in its plane
    assert np.abs(box[1:]).max() < 1e-5  # no turn (the rim's two contact points: coal's normals)
    assert out.bilateral.shape == (4,) and len(out.detected) > 0  # rolling rows and contacts, one problem


@pytest.mark.parametrize("friction", ["regularized", "coulomb"])
def test_the_wheel_pushes_the_row_of_boxes_until_friction_stops_them(friction):
    """Three boxes, mu = 0.3 on the ground and at the rim: the wheel catches the row and pushes it
    whole at the deceleration of the scene's docstring (the rim slides down the first box's face,
    pressing it onto the ground); then everything stops, the wheel against the row. Energy only
    leaves; nothing sinks into the ground or into another body."""
    scene = wheel_into_boxes.build()
    sim = scene.simulation(friction)
    h = sim.dt
    energies, speeds, deepest = [sim.energy()], [], 0.0
    for _ in range(560):  # the row stops near t = 0.5 s
        out = sim.step()
        energies.append(sim.energy())
        speeds.append(_speeds(sim)[:, 0].copy())
        deepest = min(deepest, float(out.detected.contacts.gap.min()))
    speeds = np.array(speeds)
    together = speeds[150:350]
    assert np.ptp(together, axis=1).max() < 1e-9  # the wheel and the three boxes move as one
    a = np.diff(together[:, 0]) / h
    assert a == pytest.approx(wheel_into_boxes.pushing_deceleration(scene.parameters), rel=1e-6)
    assert np.abs(speeds[-1]).max() < 1e-6  # stopped (the bristles' elastic creep: 1e-7 m/s)
    assert np.diff(energies).max() <= 1e-9 * energies[0]
    assert deepest > -1e-4
    x = sim.q.reshape(-1, 7)[:, 0]
    side, r = scene.parameters["side"], scene.parameters["wheel_radius"]
    assert np.diff(x[1:]) == pytest.approx(side, abs=2e-4)  # the boxes pushed together, face to face
    assert x[1] - x[0] == pytest.approx(r + side / 2, abs=2e-4)  # the rim against the first box


def _crate_run(steps, **parameters):
    """The crate scene run ``steps`` steps: (sim, step results, the scene's vertical momentum
    before and after each step)."""
    sim = crate_on_half_car.build(**parameters).simulation("regularized")
    masses = np.array([b.mass for b in sim.model.bodies])
    outs, momentum = [], [masses @ _speeds(sim)[:, 2]]
    for _ in range(steps):
        outs.append(sim.step())
        momentum.append(masses @ _speeds(sim)[:, 2])
    return sim, outs, np.array(momentum)


def test_the_half_car_carries_the_crate_through_its_suspension_and_tyres():
    """The car stands (no torque): the crate drops onto the bed and the car sinks on its
    suspension. Step by step, the vertical momentum of the car and the crate changes by the tyres'
    impulse and gravity's alone -- the crate's contacts with the bed, the joints and the springs
    are internal, solved in one problem -- and once the bounce has died away the tyres carry
    (m_car + m_crate) g, shared between the axles as the bodies' positions say (the lever rule)."""
    sim, outs, momentum = _crate_run(1200, torque_max=0.0, brake_torque=0.0)
    h, g = sim.dt, -sim.model.gravity[2]
    masses = np.array([b.mass for b in sim.model.bodies])
    weight = masses.sum() * g
    tyres = np.array([out.normal_force for out in outs])
    assert np.diff(momentum) == pytest.approx((tyres.sum(axis=1) - weight) * h, abs=1e-12 * weight * h)
    assert all(len(out.detected) == 4 for out in outs[100:])  # the crate's four corners on the bed
    x = sim.q.reshape(-1, 7)[:, 0]
    names = [b.name for b in sim.model.bodies]
    front, rear = x[names.index("front wheel")], x[names.index("rear wheel")]
    on_front = (masses @ x * g - weight * rear) / (front - rear)
    assert tyres[-1] == pytest.approx([on_front, weight - on_front], abs=1e-3 * weight)
    crate = sim.model.bodies[-1]
    assert crate.name == "crate"
    assert outs[-1].detected.normal_force.sum() == pytest.approx(crate.mass * g, rel=1e-2)


@pytest.mark.parametrize("mu", [0.5, 0.05])
def test_the_crate_rides_or_slides_off_as_mu_says(mu):
    """The car pulls away (Eq. 34, a up to about 0.9 m/s^2 in the first second). With mu = 0.5 the
    bed carries the crate along (mu g = 4.9 m/s^2 > a); with mu = 0.05 (mu g = 0.49 m/s^2) it slides
    back along the bed at about mu g, every corner on the regularized law's kinetic branch, falls
    off the back onto the road, and slides there at mu g to rest."""
    steps = 1000 if mu == 0.5 else 3100  # at mu = 0.05 the crate stops near t = 3.0 s
    sim, outs, _ = _crate_run(steps, mu=mu)
    h, g = sim.dt, -sim.model.gravity[2]
    crate = len(sim.model.bodies) - 1
    q = sim.q.reshape(-1, 7)
    if mu == 0.5:
        assert q[crate, 0] - q[0, 0] == pytest.approx(-0.8, abs=5e-3)  # where it landed, behind the chassis centre
        assert _speeds(sim)[0, 0] > 0.5  # the car has pulled away, the crate with it
        return
    velocity = np.array([out.v.reshape(-1, 6)[crate, 0] for out in outs])
    speed = np.array([np.linalg.norm(out.v.reshape(-1, 6)[crate, :2]) for out in outs])  # on the road
    for out in outs[600:1500]:  # sliding on the bed: every corner kinetic, and the four corners'
        d = out.detected  # friction mu times their normal force, though that load jumps between them
        assert d.kinetic.all()  # (bounds_moved's patch rule; measured within 4e-5)
        assert np.linalg.norm(d.friction_force.sum(axis=0)) == pytest.approx(mu * d.normal_force.sum(), rel=1e-3)
    bed = (velocity[1500] - velocity[600]) / (900 * h)  # the squatting car tilts the bed nose-up by
    assert bed == pytest.approx(mu * g, rel=0.05)  # ~0.1 degree: N sin(theta) pulls back, 0.472 against 0.4905
    road = np.diff(speed[2300:2800]) / h  # off the back, sliding on the road (2.6 degrees off x: it fell askew)
    assert road == pytest.approx(-mu * g, rel=1e-3)  # measured 1e-4: its redundant corners rock it a little
    side = crate_on_half_car.DEFAULTS["crate_side"]
    assert q[crate, 2] == pytest.approx(side / 2, abs=1e-4)  # on the road
    assert abs(velocity[-1]) < 1e-6  # at rest
    names = [b.name for b in sim.model.bodies]
    assert q[crate, 0] < q[names.index("rear wheel"), 0] - 1.0  # left behind


@pytest.mark.parametrize("restitution", [1.0, 0.5])
def test_a_ball_strikes_the_rigid_bar_as_newtons_law_says(restitution):
    """The bar (beam_elements = 0) struck off its centre: the impact is one between the ball and
    the bar's mass at the struck point (the scene's docstring), to rounding."""
    scene = ball_on_beam.build(beam_elements=0, restitution=restitution)
    sim = scene.simulation("regularized")
    for _ in range(80):  # the impact comes at t = gap / speed = 5 ms
        sim.step()
    bar, ball = _speeds(sim)
    d = ball_on_beam.strike_point(scene.parameters) - scene.parameters["beam_length"] / 2
    struck = bar[2] - bar[4] * d  # v_z of the bar's point at x = d: v + omega x (d, 0, 0)
    assert (ball[2], struck) == pytest.approx(ball_on_beam.rigid_bar_rebound(scene.parameters), abs=1e-12)


def test_a_ball_strikes_the_flexible_beam():
    """Ten elements of Table 1's set 1, free-floating, no gravity: the linear momentum stays the
    ball's through the impact, step by step; at the impact step the normal relative speed at the
    contact reverses exactly (e = 1, Newton's law); the ball's lost energy goes into the beam --
    its motion and strain -- or is dissipated (Table 1's damping, the step's own), never created."""
    from lcpdyn.rotation import np_rotation_matrix

    scene = ball_on_beam.build()
    sim = scene.simulation("regularized")
    masses = np.array([b.mass for b in sim.model.bodies])
    momentum = masses @ _speeds(sim)[:, :3]
    energies = [sim.energy()]
    struck = None
    for _ in range(200):
        before, start = sim.v.copy(), sim.q.copy()
        out = sim.step()
        energies.append(sim.energy())
        assert masses @ _speeds(sim)[:, :3] == pytest.approx(momentum, abs=1e-12)
        if struck is None and len(out.detected) and out.detected.impact.any():
            struck = (before, start, sim.v.copy(), out.detected.contacts)  # rows at the step's start
    before, q, after, contacts = struck
    assert contacts.collider.tolist() == [[8, 11]]  # node 8 (the beam's colliders, then the ball's)
    node, ball = 8, 11
    normal = contacts.normal[0]

    def relative(v):  # the ball's velocity relative to node 8's material point, along the normal
        v = v.reshape(-1, 6)
        x, R = q.reshape(-1, 7)[node, :3], np_rotation_matrix(q.reshape(-1, 7)[node, 3:])
        point = x + R @ contacts.local_a[0]
        return (v[ball, :3] - v[node, :3] - np.cross(v[node, 3:], point - x)) @ normal

    assert relative(after) == pytest.approx(-relative(before), rel=1e-9)
    energies = np.array(energies)
    assert np.diff(energies).max() <= 1e-12 * energies[0]
    ball_energy = 0.5 * masses[-1] * _speeds(sim)[-1, :3] @ _speeds(sim)[-1, :3]
    assert ball_energy < 0.5 * energies[0]  # the ball has given the beam much of its energy
    assert energies[-1] - ball_energy > 0.2 * energies[0]  # and the beam keeps a good part of it


def test_the_scenes_are_listed():
    assert scenes.SCENES["wheel-into-boxes"] is wheel_into_boxes
    assert scenes.SCENES["crate-on-half-car"] is crate_on_half_car
    assert scenes.SCENES["ball-on-beam"] is ball_on_beam
