"""Body–body contact detection (lcpdyn.collision): the broad phase against brute force, coal's
narrow phase against closed-form distances, exclusions, matching, and bad input named."""

from __future__ import annotations

import numpy as np
import pytest

from lcpdyn.body import RigidBody
from lcpdyn.collision import (
    Box,
    Capsule,
    Collider,
    CollisionWorld,
    Contacts,
    ConvexMesh,
    Cylinder,
    HalfSpace,
    Sphere,
    sweep_and_prune,
)
from tests.engine_helpers import readme_example


def _rotation(axis, angle):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


def _bodies(n):
    return [RigidBody(f"b{i}", 1.0, (0.1, 0.1, 0.1)) for i in range(n)]


@pytest.mark.parametrize("seed", range(5))
def test_sweep_and_prune_finds_exactly_the_overlapping_boxes(seed):
    rng = np.random.default_rng(seed)
    m = 60
    lower = rng.uniform(0, 10, (m, 3))
    upper = lower + rng.uniform(0.1, 2.0, (m, 3))
    upper[5] = lower[5]  # a degenerate box: touching counts
    pairs = sweep_and_prune(lower, upper)
    expected = [
        (i, j)
        for i in range(m)
        for j in range(i + 1, m)
        if (lower[i] <= upper[j]).all() and (lower[j] <= upper[i]).all()
    ]
    assert [tuple(p) for p in pairs] == expected


def test_sweep_and_prune_on_no_or_one_box():
    assert sweep_and_prune(np.zeros((0, 3)), np.zeros((0, 3))).shape == (0, 2)
    assert sweep_and_prune(np.zeros((1, 3)), np.ones((1, 3))).shape == (0, 2)


def test_two_spheres_closed_form(coal):
    """Gap |c_b - c_a| - r_a - r_b along the line of centres; witness points on the surfaces;
    reported within the margin only, separated or penetrating."""
    a, b = _bodies(2)
    world = CollisionWorld([Collider(a, Sphere(0.5)), Collider(b, Sphere(0.3))], [a, b], margin=0.05)
    R = np.stack([np.eye(3)] * 2)
    direction = np.array([2.0, -1.0, 2.0]) / 3.0
    for gap in (0.04, -0.02, 0.0):
        centres = np.stack([np.zeros(3), (0.8 + gap) * direction])
        contacts = world.detect(centres, R)
        assert len(contacts) == 1
        np.testing.assert_allclose(contacts.gap, [gap], atol=1e-9)
        np.testing.assert_allclose(contacts.normal[0], direction, atol=1e-9)
        np.testing.assert_allclose(contacts.point_a[0], 0.5 * direction, atol=1e-8)
        np.testing.assert_allclose(contacts.point_b[0], centres[1] - 0.3 * direction, atol=1e-8)
        assert contacts.body.tolist() == [[0, 1]]
    assert len(world.detect(np.stack([np.zeros(3), 0.86 * direction]), R)) == 0


def test_sphere_on_the_ground_and_a_box_on_a_box(coal):
    """A sphere over a half-space: one point, gap z - r, normal from the sphere into the ground.
    A unit box resting on a larger one, offset: the patch is the four corners of the smaller
    face, each at the gap."""
    ball, top = _bodies(2)
    ground = Collider(None, HalfSpace((0, 0, 1), 0.0))
    base = Collider(None, Box((2.0, 2.0, 1.0)), position=(0, 0, 0.5))
    colliders = [ground, Collider(ball, Sphere(0.25)), base, Collider(top, Box((1, 1, 1)))]
    world = CollisionWorld(colliders, [ball, top], 0.02)
    R = np.stack([np.eye(3)] * 2)
    contacts = world.detect(np.array([[5.0, 0, 0.26], [0.2, 0.1, 1.51]]), R)
    by_body = {int(b[0]): i for i, b in enumerate(contacts.body)}
    ball_rows = np.flatnonzero(contacts.body[:, 0] == 0)
    assert ball_rows.size == 1 and contacts.body[ball_rows[0], 1] == -1
    np.testing.assert_allclose(contacts.gap[ball_rows], [0.01], atol=1e-9)
    np.testing.assert_allclose(contacts.normal[ball_rows[0]], [0, 0, -1], atol=1e-9)
    box_rows = np.flatnonzero(contacts.body[:, 0] == 1)
    assert box_rows.size == 4, by_body
    np.testing.assert_allclose(contacts.gap[box_rows], 0.01, atol=1e-9)
    corners = sorted(map(tuple, np.round(contacts.point_a[box_rows][:, :2], 9)))
    assert corners == [(-0.3, -0.4), (-0.3, 0.6), (0.7, -0.4), (0.7, 0.6)]
    # normal from the top box (first: the world collider is always second) down into the base
    np.testing.assert_allclose(contacts.normal[box_rows], np.tile([0, 0, -1.0], (4, 1)), atol=1e-9)


@pytest.mark.parametrize("shape", [Capsule(0.2, 1.0), Cylinder(0.3, 0.8), Box((0.4, 0.6, 1.0))])
def test_turned_shapes_over_the_ground(coal, shape):
    """Shapes turned about an oblique axis, at height 1: the gap to the ground is 1 minus the
    shape's half extent along world z -- r + |R_zz| L / 2 for the capsule, r sqrt(1 - R_zz^2)
    + |R_zz| L / 2 for the cylinder, sum_i |R_zi| h_i for the box."""
    body = _bodies(1)[0]
    R = _rotation((1.0, 2.0, 0.5), 0.7)
    axis_z = abs(R[2, 2])
    if isinstance(shape, Capsule):
        extent = shape.radius + axis_z * shape.length / 2
    elif isinstance(shape, Cylinder):
        extent = shape.radius * np.sqrt(1 - axis_z**2) + axis_z * shape.length / 2
    else:
        extent = np.abs(R[2]) @ (np.array(shape.size) / 2)
    world = CollisionWorld([Collider(body, shape, rotation=R), Collider(None, HalfSpace())], [body], margin=2.0)
    contacts = world.detect(np.array([[0.0, 0.0, 1.0]]), np.eye(3)[None])
    assert len(contacts) >= 1
    assert abs(contacts.gap.min() - (1.0 - extent)) <= 1e-6
    np.testing.assert_allclose(contacts.normal, np.tile([0, 0, -1.0], (len(contacts), 1)), atol=1e-9)


def test_convex_mesh_hull_and_body_rotation(coal):
    """A tetrahedron's hull (with an interior point dropped by qhull), on a body turned by 180
    degrees about x: its apex points down, the gap is the apex height."""
    body = _bodies(1)[0]
    vertices = np.array([[0, 0, 1.0], [1, 0, 0], [-0.5, 0.8, 0], [-0.5, -0.8, 0], [0, 0, 0.2]])
    world = CollisionWorld([Collider(body, ConvexMesh(vertices)), Collider(None, HalfSpace())], [body], margin=0.5)
    contacts = world.detect(np.array([[0.0, 0.0, 1.3]]), _rotation((1, 0, 0), np.pi)[None])
    assert len(contacts) == 1
    np.testing.assert_allclose(contacts.gap, [0.3], atol=1e-8)
    np.testing.assert_allclose(contacts.point_a[0], [0, 0, 0.3], atol=1e-8)


def test_pairs_on_one_body_excluded_pairs_and_world_pairs_are_not_tested(coal):
    a, b, c = _bodies(3)
    colliders = [
        Collider(a, Sphere(0.5)),
        Collider(a, Sphere(0.5), position=(0.5, 0, 0)),  # overlaps its sibling: same body
        Collider(b, Sphere(0.5), position=(0, 0, 0)),
        Collider(c, Sphere(0.5)),
        Collider(None, Box((1, 1, 1))),
        Collider(None, Box((1, 1, 1)), position=(0.5, 0, 0)),  # overlaps the other world box
    ]
    positions = np.array([[0.0, 0, 3], [0.9, 0, 3], [1.8, 0, 3]])
    R = np.stack([np.eye(3)] * 3)
    pairs = {tuple(p) for p in CollisionWorld(colliders, [a, b, c]).detect(positions, R).body.tolist()}
    assert pairs == {(0, 1), (1, 2)}
    excluded = CollisionWorld(colliders, [a, b, c], exclude=[(b, a)]).detect(positions, R)
    assert {tuple(p) for p in excluded.body.tolist()} == {(1, 2)}


def test_a_body_excluded_from_the_world_meets_only_bodies(coal):
    """``(body, None)``: the body never against the world's colliders (a wheel whose ground
    contact is declared), still against other bodies; ``(None, None)`` is refused, named."""
    a, b = _bodies(2)
    colliders = [Collider(a, Sphere(0.5)), Collider(b, Sphere(0.5)), Collider(None, HalfSpace())]
    positions = np.array([[0.0, 0, 0.4], [0.9, 0, 0.6]])
    R = np.stack([np.eye(3)] * 2)
    touching = CollisionWorld(colliders, [a, b]).detect(positions, R)
    assert {tuple(p) for p in touching.body.tolist()} == {(0, -1), (0, 1)}
    excluded = CollisionWorld(colliders, [a, b], exclude=[(a, None)]).detect(positions, R)
    assert {tuple(p) for p in excluded.body.tolist()} == {(0, 1)}
    with pytest.raises(ValueError, match="None, None"):
        CollisionWorld(colliders, [a, b], exclude=[(None, None)])


def test_broad_phase_passes_only_neighbours_of_a_grid(coal):
    """400 spheres on a 20 x 20 grid, spacing 1.1 diameters: with a margin of 0.1 diameter every
    sphere touches its four neighbours' margins. The candidates are the 760 neighbour pairs and
    the 722 diagonal ones (their grown boxes, 1.1 wide at spacing 1.1, touch at a corner), not
    the 79,800 pairs of all; the contacts are the 760 neighbours, at gap 0.1."""
    bodies = _bodies(400)
    world = CollisionWorld([Collider(body, Sphere(0.5)) for body in bodies], bodies, margin=0.1 + 1e-9)
    grid = np.stack(np.meshgrid(np.arange(20), np.arange(20), indexing="ij"), -1).reshape(-1, 2) * 1.1
    positions = np.column_stack([grid, np.zeros(400)])
    contacts = world.detect(positions, np.broadcast_to(np.eye(3), (400, 3, 3)))
    assert contacts.candidates == 2 * 20 * 19 + 2 * 19 * 19
    assert len(contacts) == 2 * 20 * 19
    np.testing.assert_allclose(contacts.gap, 0.1, atol=1e-9)


def test_persisting_contacts_are_matched(coal):
    a, b = _bodies(2)
    world = CollisionWorld([Collider(a, Box((1, 1, 1))), Collider(b, Box((1, 1, 1)))], [a, b], margin=0.02)
    R = np.stack([np.eye(3)] * 2)
    before = world.detect(np.array([[0, 0, 0], [0.1, 0, 1.01]]), R)
    after = world.detect(np.array([[0, 0, 0], [0.1005, 0, 1.005]]), R)
    assert len(before) == len(after) == 4
    index = after.match(before, tolerance=1e-3)
    assert sorted(index.tolist()) == [0, 1, 2, 3]
    np.testing.assert_allclose(before.local_a[index], after.local_a, atol=1e-3)
    # the lower box turned by 0.3 rad about z: its witness points lie elsewhere on its body
    turned = world.detect(np.array([[0, 0, 0], [0.1005, 0, 1.005]]), np.stack([_rotation((0, 0, 1), 0.3), np.eye(3)]))
    assert (turned.match(before, tolerance=1e-3) == -1).all()


def test_match_takes_the_nearest_of_its_pair_and_the_first_of_equals():
    """Contacts.match against its definition, contact by contact, on random sets with ties (body
    points on a 0.1 grid), empty sets and every tolerance: the nearest previous contact of the
    same collider pair within the tolerance, the first (smallest previous index) of equally near."""

    def by_definition(now, previous, tolerance):
        out = np.full(len(now), -1, np.int64)
        for i in range(len(now)):
            same = np.flatnonzero((previous.collider == now.collider[i]).all(axis=1))
            if same.size:
                distance = np.linalg.norm(previous.local_a[same] - now.local_a[i], axis=1)
                j = int(np.argmin(distance))
                if distance[j] <= tolerance:
                    out[i] = same[j]
        return out

    rng = np.random.default_rng(7)

    def contacts(k, colliders):
        pair = np.sort(rng.integers(0, colliders, (k, 2)), axis=1)
        zero = np.zeros((k, 3))
        points = np.round(rng.normal(size=(k, 3)), 1)
        return Contacts(pair, pair, zero, zero, zero, np.zeros(k), points, np.zeros(k, np.int64), 0)

    matched = 0
    for _ in range(1500):
        colliders = int(rng.integers(1, 6))
        now, previous = contacts(int(rng.integers(0, 12)), colliders), contacts(int(rng.integers(0, 12)), colliders)
        tolerance = float(rng.choice([0.0, 0.3, 1.0, 10.0]))
        index = now.match(previous, tolerance)
        np.testing.assert_array_equal(index, by_definition(now, previous, tolerance))
        matched += int((index >= 0).sum())
    assert matched > 1000


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: Sphere(-1.0), "sphere radius must be > 0"),
        (lambda: Box((1.0, 0.0, 1.0)), "box size must be > 0"),
        (lambda: Capsule(0.1, float("nan")), "capsule length must be finite"),
        (lambda: ConvexMesh(np.zeros((3, 3))), "shape (k, 3) with k >= 4"),
        (lambda: ConvexMesh([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]]), "lie in one plane"),
        (lambda: HalfSpace((0, 0, 0)), "half-space normal must be nonzero"),
        (lambda: Collider(_bodies(1)[0], HalfSpace()), "can only be fixed in the world"),
        (lambda: Collider(_bodies(1)[0], Sphere(1.0), rotation=2 * np.eye(3)), "proper rotation"),
        (lambda: Collider("body", Sphere(1.0)), "RigidBody or None"),
        (lambda: Collider(None, "sphere"), "geometry() method"),
        (lambda: CollisionWorld([Collider(_bodies(1)[0], Sphere(1.0))], []), "is not in the bodies list"),
        (lambda: CollisionWorld([], [], margin=-0.1), "collision margin must be >= 0"),
    ],
)
def test_bad_input_names_the_culprit(build, message):
    with pytest.raises((ValueError, TypeError), match=message.replace("(", r"\(").replace(")", r"\)")):
        build()


def test_bad_poses_are_named(coal):
    body = _bodies(1)[0]
    world = CollisionWorld([Collider(body, Sphere(1.0))], [body])
    with pytest.raises(ValueError, match="body positions must have shape"):
        world.detect(np.zeros((2, 3)), np.eye(3)[None])
    with pytest.raises(ValueError, match="body rotations must be finite"):
        world.detect(np.zeros((1, 3)), np.full((1, 3, 3), np.nan))
    with pytest.raises(ValueError, match=r"body rotations\[0\] \(body 'b0'\) is not a rotation matrix"):
        world.detect(np.zeros((1, 3)), 1.1 * np.eye(3)[None])
    with pytest.raises(ValueError, match="is not a rotation matrix"):
        world.detect(np.zeros((1, 3)), np.diag([1.0, 1.0, -1.0])[None])


def test_readme_collision_example_runs_and_says_what_it_prints(coal, capsys):
    contacts = readme_example("# Body–body contact detection")["contacts"]
    ball = np.flatnonzero(contacts.body[:, 0] == 0)
    crate = np.flatnonzero((contacts.body == [1, -1]).all(axis=1))
    assert contacts.body[ball].tolist() == [[0, 1]]
    np.testing.assert_allclose(contacts.gap[ball], [0.003], atol=1e-9)
    assert crate.size == 4
    np.testing.assert_allclose(contacts.gap[crate], 0.002, atol=1e-9)
