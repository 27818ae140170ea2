"""The scale scenes (issue 11): many independent bodies on one plane, each with the closed form
of its single-body scene, so a growing problem is checked body by body."""

from __future__ import annotations

import numpy as np
import pytest

import scenes
from lcpdyn.stepper import Simulation
from scenes.scale import Boxes, Dumbbells, Spheres

MODELS = ["regularized", "box", "coulomb"]


@pytest.mark.parametrize("friction", MODELS)
def test_each_sphere_ends_rolling_at_v0_minus_two_sevenths_of_its_slip(friction):
    """A sphere (I = 2/5 m r^2) whose contact point slips at s0 = v0 + omega0 x (-r e_z) feels
    friction along -s0/|s0| until the slip vanishes; the impulse P that stops it changes the
    slip by -7 P / (2 m), so v = v0 - 2/7 s0 and the spin about the vertical is untouched --
    exact whatever the step size (the direction of friction is constant). Box friction is
    excepted from the direction (its box is axis-aligned) but not from rolling at the end."""
    scene = Spheres.build(count=9, t_end=0.3)
    run = Simulation(scene.model, scene.friction(friction), scene.dt).run(scene.t_end)
    assert np.all(run.solver_status == 0)
    r = scene.parameters["radius"]
    for k, body in enumerate(scene.model.bodies):
        v0, w0 = np.asarray(body.velocity), np.asarray(body.angular_velocity)
        slip0 = v0 + np.cross(w0, [0.0, 0.0, -r])
        v, w = run.velocity[-1, k], run.angular_velocity[-1, k]
        slip = v + np.cross(w, [0.0, 0.0, -r])
        assert np.abs(slip).max() < 1e-8, (k, slip)  # rolling
        assert abs(w[2] - w0[2]) < 1e-8  # point friction exerts no torque about the normal
        if friction != "box":
            np.testing.assert_allclose(v, v0 - 2.0 / 7.0 * slip0, rtol=0, atol=1e-8)


@pytest.mark.parametrize("friction", MODELS)
def test_sliding_boxes_stop_where_the_single_block_does_and_resting_ones_stay(friction):
    """Odd boxes slide at v0 along their heading and stop after v0 / (mu g) at v0^2 / (2 mu g)
    (to within v0 h, the first-order step); even boxes never move. Four redundant corners each."""
    scene = Boxes.build(count=6)
    run = Simulation(scene.model, scene.friction(friction), scene.dt).run(scene.t_end)
    assert np.all(run.solver_status == 0)
    mu, g, h = scene.parameters["mu"], scene.parameters["gravity"], scene.dt
    for k, body in enumerate(scene.model.bodies):
        v0 = np.asarray(body.velocity)
        speed = np.linalg.norm(v0)
        moved = run.position[-1, k] - run.initial_position[k]
        np.testing.assert_allclose(run.velocity[-1, k], 0.0, atol=1e-8)
        if speed == 0.0:
            assert k % 2 == 0
            np.testing.assert_allclose(moved, 0.0, atol=1e-9)
        else:
            assert k % 2 == 1
            expected = v0 / speed * speed**2 / (2 * mu * g)
            if friction != "box":  # the box model's friction is not along the slip
                np.testing.assert_allclose(moved[:2], expected[:2], rtol=0, atol=speed * h)
            assert abs(moved[2]) < 1e-8
    np.testing.assert_allclose(run.contact_normal_force.sum(axis=1), len(scene.model.bodies) * g, rtol=1e-7)


def test_scale_scenes_are_registered_reproducible_and_validated():
    assert scenes.SCENES["spheres"] is Spheres and scenes.SCENES["boxes"] is Boxes
    assert scenes.SCENES["dumbbells"] is Dumbbells

    def velocities(scene):
        return np.array([[*body.velocity, *body.angular_velocity] for body in scene.model.bodies])

    a, b = Spheres.build(count=5, seed=3), Spheres.build(count=5, seed=3)
    assert np.array_equal(velocities(a), velocities(b))
    assert not np.array_equal(velocities(a), velocities(Spheres.build(count=5)))
    assert len(Boxes.build(count=3).model.contacts) == 12
    for bad, match in [
        ({"count": 0}, "count"),
        ({"count": 2.5}, "count"),
        ({"seed": -1}, "seed"),
        ({"spacing": 0.05}, "spacing"),
    ]:
        with pytest.raises(ValueError, match=match):
            Spheres.build(**bad)
    with pytest.raises(ValueError, match="spacing"):
        Boxes.build(spacing=0.3)


@pytest.mark.parametrize("friction", MODELS)
def test_dumbbells_launched_without_spin_roll_like_lone_spheres_and_load_no_joint(friction):
    """Launched across their axis without spin, both spheres of a dumbbell slide alike and
    friction spins them about the axis, on which the joint points lie: the joint carries no
    force and each sphere rolls at v0 - 2/7 v0 = 5/7 v0 in the end; the centres stay 2 r apart
    and the split step (one island per dumbbell) is what runs."""
    scene = Dumbbells.build(count=4, spin=0.0, across=1, t_end=0.3)
    sim = Simulation(scene.model, scene.friction(friction), scene.dt)
    assert len(sim._islands) == 4
    run = sim.run(scene.t_end)
    assert np.all(run.solver_status == 0)
    r = scene.parameters["radius"]
    for k, body in enumerate(scene.model.bodies):
        v0 = np.asarray(body.velocity)
        v, w = run.velocity[-1, k], run.angular_velocity[-1, k]
        assert np.abs(v + np.cross(w, [0.0, 0.0, -r])).max() < 1e-8, k  # rolling
        if friction != "box":
            np.testing.assert_allclose(v, 5.0 / 7.0 * v0, rtol=0, atol=1e-8)
    if friction != "box":  # box friction is not along the slip: the spheres tilt their spin axes and load the joint
        gaps = run.position[:, 0::2] - run.position[:, 1::2]  # no joint force: no drift of the centres
        np.testing.assert_allclose(np.linalg.norm(gaps, axis=2), 2 * r, rtol=0, atol=1e-9)
    np.testing.assert_allclose(run.contact_normal_force.sum(axis=1), 8 * 9.81, rtol=1e-7)


def test_dumbbells_are_reproducible_and_validated():
    a, b = Dumbbells.build(count=3, seed=2), Dumbbells.build(count=3, seed=2)
    assert [x.velocity.tolist() for x in a.model.bodies] == [x.velocity.tolist() for x in b.model.bodies]
    assert len(a.model.bodies) == 6 and len(a.model.contacts) == 6 and a.model.n_bilateral == 9
    for bad, match in [({"count": 0}, "count"), ({"spacing": 0.2}, "spacing"), ({"spin": -1.0}, "spin")]:
        with pytest.raises(ValueError, match=match):
            Dumbbells.build(**bad)
