"""Scenes of bodies touching bodies: each builder returns a :class:`~lcpdyn.model.Model` -- the
bodies with gravity, their colliders and the world's, and the detection margin
(:meth:`~lcpdyn.model.Model.set_collisions`; the contact properties are the caller's) -- with every
number a parameter, for :class:`lcpdyn.stepper.Simulation` (detected contacts in the one step).
:func:`collision_world` gives the same colliders as a :class:`~lcpdyn.collision.CollisionWorld`.

* :func:`sphere_pile`: ``count`` spheres poured into a box-shaped bin (a floor and four walls, as
  half-spaces) from a jittered grid above it;
* :func:`box_tower`: ``count`` equal cubes stacked face on face on the ground;
* :func:`newtons_cradle`: a row of equal balls in zero gravity, the first moving towards the
  others, touching or ``gap`` apart;
* :func:`wheel_over_curb`: a wheel (a cylinder, axis along y) rolling along x towards a curb (a
  box step of ``height`` fixed in the world).

Masses and inertias are those of solids of ``density`` (kg/m^3).
"""

from __future__ import annotations

import math

import numpy as np

from lcpdyn import Model, RigidBody
from lcpdyn.collision import Box, Collider, CollisionWorld, Cylinder, HalfSpace, Sphere

__all__ = [
    "sphere_pile",
    "box_tower",
    "newtons_cradle",
    "wheel_over_curb",
    "solid_sphere",
    "solid_box",
    "collision_world",
]


def _with_colliders(model: Model, colliders, margin) -> Model:
    for collider in colliders:
        model.add_collider(collider)
    model.set_collisions(margin=margin)
    return model


def collision_world(model: Model) -> CollisionWorld:
    """The model's colliders, bodies and margin as a :class:`~lcpdyn.collision.CollisionWorld`:
    detection alone, without a step (``world.detect(positions, rotations)``)."""
    return CollisionWorld(model.colliders, model.bodies, margin=model.collisions.margin)


def solid_sphere(name, radius, density, position, velocity=(0.0, 0.0, 0.0)) -> RigidBody:
    """A uniform solid sphere (kg from ``density`` in kg/m^3, inertia 2/5 m r^2) at ``position``."""
    mass = density * 4.0 / 3.0 * math.pi * radius**3
    inertia = 0.4 * mass * radius**2
    return RigidBody(name, mass, (inertia,) * 3, position, velocity=velocity)


def solid_box(name, size, density, position) -> RigidBody:
    """A uniform solid box of side lengths ``size`` (m) and ``density`` (kg/m^3) at ``position``."""
    a, b, c = size
    mass = density * a * b * c
    inertia = (mass * (b * b + c * c) / 12, mass * (a * a + c * c) / 12, mass * (a * a + b * b) / 12)
    return RigidBody(name, mass, inertia, position)


def bin_walls(half_width: float) -> list[Collider]:
    """The floor z >= 0 and the walls |x|, |y| <= half_width of a bin, solid outside."""
    h = float(half_width)
    return [
        Collider(None, HalfSpace((0, 0, 1), 0.0), name="floor"),
        Collider(None, HalfSpace((1, 0, 0), -h), name="wall -x"),
        Collider(None, HalfSpace((-1, 0, 0), -h), name="wall +x"),
        Collider(None, HalfSpace((0, 1, 0), -h), name="wall -y"),
        Collider(None, HalfSpace((0, -1, 0), -h), name="wall +y"),
    ]


def sphere_pile(count=500, radius=0.025, half_width=0.25, density=1000.0, drop=0.1, jitter=0.1, seed=0, margin=None):
    """``count`` spheres on a grid of spacing 2.4 radius above a bin of inner width 2 half_width,
    the lowest layer ``drop`` (m) above the floor, each moved by up to ``jitter`` radius in x and y
    (seeded): they fall, collide and settle into a pile of about count / (half_width / 1.2 r)^2
    layers. ``margin`` defaults to 0.1 radius."""
    rng = np.random.default_rng(seed)
    per = int(math.floor(2 * half_width / (2.4 * radius)))
    if per < 1:
        raise ValueError(f"the bin (half width {half_width!r} m) is narrower than one sphere of radius {radius!r} m")
    model = Model()
    bodies = []
    for i in range(int(count)):
        layer, k = divmod(i, per * per)
        a, b = divmod(k, per)
        x = -half_width + 1.2 * radius + a * 2.4 * radius + rng.uniform(-jitter, jitter) * radius
        y = -half_width + 1.2 * radius + b * 2.4 * radius + rng.uniform(-jitter, jitter) * radius
        z = drop + radius + layer * 2.4 * radius
        bodies.append(model.add_body(solid_sphere(f"sphere {i}", radius, density, (x, y, z))))
    colliders = [Collider(b, Sphere(radius)) for b in bodies] + bin_walls(half_width)
    return _with_colliders(model, colliders, 0.1 * radius if margin is None else margin)


def box_tower(count=10, size=0.2, density=125.0, margin=0.005):
    """``count`` cubes of edge ``size`` stacked exactly face on face from the ground (1 kg each at
    the defaults)."""
    model = Model()
    bodies = [model.add_body(solid_box(f"box {i}", (size,) * 3, density, (0.0, 0.0, size / 2 + i * size)))
              for i in range(int(count))]  # fmt: skip
    colliders = [Collider(b, Box((size,) * 3)) for b in bodies] + [Collider(None, HalfSpace(), name="ground")]
    return _with_colliders(model, colliders, margin)


def newtons_cradle(count=3, radius=0.05, gap=0.0, speed=1.0, density=955.0, margin=0.002):
    """``count`` balls in a row along x in zero gravity, ``gap`` (m) apart, the first 0.1 m (its
    centre) before the row, moving at ``speed`` towards it."""
    model = Model(gravity=(0.0, 0.0, 0.0))
    bodies = [model.add_body(solid_sphere("ball 0", radius, density, (-2 * radius - 0.05, 0, 0), (speed, 0, 0)))]
    for i in range(1, int(count)):
        bodies.append(model.add_body(solid_sphere(f"ball {i}", radius, density, ((2 * radius + gap) * (i - 1), 0, 0))))
    return _with_colliders(model, [Collider(b, Sphere(radius)) for b in bodies], margin)


def wheel_over_curb(radius=0.3, width=0.1, mass=10.0, speed=3.0, height=0.05, distance=1.0, margin=0.005):
    """A wheel (solid cylinder of ``radius``, ``width``, ``mass``; axis along y) on the ground
    rolling at ``speed`` along +x towards a curb of ``height`` whose face is ``distance`` ahead of
    the wheel's centre (the curb: a box 1 m long, fixed in the world; the cylinder against it and
    the ground goes through coal)."""
    axial = 0.5 * mass * radius**2
    transverse = mass * (3 * radius**2 + width**2) / 12
    model = Model()
    wheel = model.add_body(
        RigidBody(
            "wheel",
            mass,
            (transverse, axial, transverse),
            (0.0, 0.0, radius),
            velocity=(speed, 0, 0),
            angular_velocity=(0.0, speed / radius, 0.0),
        )  # fmt: skip
    )
    axis_to_y = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])  # the cylinder's z along world y
    colliders = [
        Collider(wheel, Cylinder(radius, width), rotation=axis_to_y),
        Collider(None, HalfSpace(), name="ground"),
        Collider(None, Box((1.0, 1.0, 2 * height)), position=(distance + 0.5, 0.0, 0.0), name="curb"),
    ]
    return _with_colliders(model, colliders, margin)
