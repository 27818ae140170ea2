"""Scenes that grow: N spheres on a plane, N boxes on four corners each, N dumbbells (two spheres
joined by a ball joint) -- issue 11's scale tests.

Both are many independent bodies on one plane, so every body's motion has the closed form of
its single-body scene (:class:`scenes.blocks.SlidingSphere`, :class:`scenes.blocks.SlidingBlock`)
-- the tests check that -- while the step's complementarity problem grows with N: 6N velocities,
N (spheres) or 4N (boxes, redundant: four coplanar corners, rank 3) contacts. The bodies sit on
a square grid ``spacing`` apart; initial velocities and spins come from ``seed`` (NumPy's
``default_rng``), so a scene is reproduced from its parameters alone.
"""

from __future__ import annotations

import math

import numpy as np

from lcpdyn.body import RigidBody
from lcpdyn.constraints import BallJoint
from lcpdyn.contact import Plane, PointContact, SphereContact
from lcpdyn.model import Model
from lcpdyn.validation import positive

from .scene import Scene, override

__all__ = ["Spheres", "Boxes", "Dumbbells"]


def _integer(scene: str, key: str, value, minimum: int) -> int:
    """A whole-number parameter (``override`` makes numbers floats) >= ``minimum``."""
    if isinstance(value, bool) or not float(value).is_integer() or value < minimum:
        raise ValueError(f"scene {scene!r}: parameter {key} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _grid(count: int, spacing: float) -> list[tuple[float, float]]:
    """``count`` (x, y) points on a square grid, row by row, centred near the origin."""
    side = math.ceil(math.sqrt(count))
    offset = 0.5 * (side - 1) * spacing
    return [((k % side) * spacing - offset, (k // side) * spacing - offset) for k in range(count)]


class Spheres:
    """N solid spheres on a plane, launched with varied velocities and spins: each slides, then rolls.

    Sphere k (mass m, radius r, I = 2/5 m r^2) starts at height r with a horizontal velocity of
    speed in [0, ``speed``] in a random direction and a random spin about the vertical and the
    horizontal axes (|omega| <= ``speed`` / r). The contact point's slip decays at 7/2 mu g along
    a fixed direction until it vanishes (the single-sphere closed form, per sphere); the spin
    about the vertical is untouched by point friction.
    """

    DEFAULTS = {
        "count": 64,
        "radius": 0.05,
        "mass": 1.0,
        "mu": 0.5,
        "speed": 1.0,
        "spacing": 0.25,
        "seed": 0,
        "gravity": 9.81,
        "dt": 1e-3,
        "t_end": 0.5,
        "tangential_stiffness": 1e10,
        "velocity_threshold": 0.01,
    }

    @staticmethod
    def build(**parameters) -> Scene:
        """N spheres on a plane (the class docstring) with ``parameters`` overriding its defaults."""
        p = override(Spheres.DEFAULTS, parameters, "spheres")
        count = _integer("spheres", "count", p["count"], 1)
        r = positive("scene 'spheres': radius", p["radius"])
        spacing = positive("scene 'spheres': spacing", p["spacing"])
        if spacing <= 2 * r:
            raise ValueError(f"scene 'spheres': spacing {spacing!r} m must exceed the diameter {2 * r!r} m")
        rng = np.random.default_rng(_integer("spheres", "seed", p["seed"], 0))
        model = Model(gravity=(0.0, 0.0, -p["gravity"]))
        mass = p["mass"]
        inertia = 0.4 * mass * r * r if mass > 0 else -1.0  # bad input: RigidBody names it
        for k, (x, y) in enumerate(_grid(count, spacing)):
            heading = rng.uniform(0.0, 2.0 * math.pi)
            speed = p["speed"] * rng.uniform()
            spin = rng.uniform(-1.0, 1.0, 3) * p["speed"] / r
            body = model.add_body(
                RigidBody(
                    f"sphere{k}",
                    mass,
                    (inertia,) * 3,
                    position=(x, y, r),
                    velocity=(speed * math.cos(heading), speed * math.sin(heading), 0.0),
                    angular_velocity=tuple(float(w) for w in spin),
                )
            )
            model.add_contact(SphereContact(body, Plane(), p["mu"], radius=r))
        return Scene.from_parameters("spheres", model, p, Spheres.__doc__)


class Boxes:
    """N cubes on four bottom corners each (redundant contacts): every other one slides to rest, the rest stay at rest.

    Box k (side a, mass m) rests on the plane; boxes with odd k are launched along a random
    horizontal direction at speed in [``speed``/2, ``speed``] and decelerate at mu g to rest after
    v0 / (mu g) (the single-block closed form, per box); even boxes rest throughout. The four
    coplanar corners make the normal rows of each box linearly dependent (rank 3 of 4) -- the
    redundancy Peiret 2016's regularized model is made for.
    """

    DEFAULTS = {
        "count": 16,
        "side": 0.2,
        "mass": 1.0,
        "mu": 0.5,
        "speed": 1.0,
        "spacing": 0.6,
        "seed": 0,
        "gravity": 9.81,
        "dt": 1e-3,
        "t_end": 0.3,
        "tangential_stiffness": 1e10,
        "velocity_threshold": 0.01,
    }

    @staticmethod
    def build(**parameters) -> Scene:
        """N boxes on their corners (the class docstring) with ``parameters`` overriding its defaults."""
        p = override(Boxes.DEFAULTS, parameters, "boxes")
        count = _integer("boxes", "count", p["count"], 1)
        a = positive("scene 'boxes': side", p["side"])
        spacing = positive("scene 'boxes': spacing", p["spacing"])
        reach = a / 2 + p["speed"] ** 2 / (2 * p["mu"] * p["gravity"]) if p["mu"] > 0 else math.inf
        if spacing <= 2 * reach * math.sqrt(2):
            raise ValueError(
                f"scene 'boxes': spacing {spacing!r} m lets sliding boxes meet (each travels up to "
                f"{reach - a / 2:.3g} m); use more than {2 * reach * math.sqrt(2):.3g} m"
            )
        rng = np.random.default_rng(_integer("boxes", "seed", p["seed"], 0))
        model = Model(gravity=(0.0, 0.0, -p["gravity"]))
        mass = p["mass"]
        inertia = mass * a * a / 6.0 if mass > 0 else -1.0
        for k, (x, y) in enumerate(_grid(count, spacing)):
            heading = rng.uniform(0.0, 2.0 * math.pi)
            speed = p["speed"] * rng.uniform(0.5, 1.0) if k % 2 else 0.0
            body = model.add_body(
                RigidBody(
                    f"box{k}",
                    mass,
                    (inertia,) * 3,
                    position=(x, y, a / 2),
                    velocity=(speed * math.cos(heading), speed * math.sin(heading), 0.0),
                )
            )
            for sx in (-1, 1):
                for sy in (-1, 1):
                    model.add_contact(PointContact(body, Plane(), p["mu"], offset=(sx * a / 2, sy * a / 2, -a / 2)))
        return Scene.from_parameters("boxes", model, p, Boxes.__doc__)


class Dumbbells:
    """N dumbbells on a plane: two solid spheres joined by a ball joint at their touching point.

    Each dumbbell's spheres (mass m, radius r) touch at the joint, their centres 2r apart along
    a random horizontal axis; both are launched with the dumbbell's common velocity (speed in
    [0, ``speed``], a random heading, or across the axis with ``across`` = 1) and each with its
    own random spin (|omega| <= ``spin`` ``speed`` / r), so the joint transmits forces between
    them. Bilateral rows (3 per dumbbell) couple the two spheres' velocities: the step splits
    into one island per dumbbell (lcpdyn.islands.BodyGroups). Launched across the axis without
    spin, a dumbbell rolls like an axle: friction spins both spheres about the axis, the joint
    points (on it) keep a common velocity, the joint carries no force, and each sphere has the
    single-sphere closed form (slides, then rolls at 5/7 of its launch speed).
    """

    DEFAULTS = {
        "count": 16,
        "radius": 0.05,
        "mass": 1.0,
        "mu": 0.5,
        "speed": 1.0,
        "spin": 1.0,
        "across": 0,
        "spacing": 0.4,
        "seed": 0,
        "gravity": 9.81,
        "dt": 1e-3,
        "t_end": 0.5,
        "tangential_stiffness": 1e10,
        "velocity_threshold": 0.01,
    }

    @staticmethod
    def build(**parameters) -> Scene:
        """N dumbbells (the class docstring) with ``parameters`` overriding its defaults."""
        p = override(Dumbbells.DEFAULTS, parameters, "dumbbells")
        count = _integer("dumbbells", "count", p["count"], 1)
        r = positive("scene 'dumbbells': radius", p["radius"])
        spacing = positive("scene 'dumbbells': spacing", p["spacing"])
        if p["spin"] < 0 or not math.isfinite(p["spin"]):
            raise ValueError(f"scene 'dumbbells': spin must be finite and >= 0, got {p['spin']!r}")
        if spacing <= 4 * r * math.sqrt(2):
            raise ValueError(
                f"scene 'dumbbells': spacing {spacing!r} m lets neighbouring dumbbells (4 r = {4 * r!r} m "
                f"long) overlap; use more than {4 * r * math.sqrt(2):.3g} m"
            )
        rng = np.random.default_rng(_integer("dumbbells", "seed", p["seed"], 0))
        model = Model(gravity=(0.0, 0.0, -p["gravity"]))
        mass = p["mass"]
        inertia = 0.4 * mass * r * r if mass > 0 else -1.0
        for k, (x, y) in enumerate(_grid(count, spacing)):
            axis = rng.uniform(0.0, 2.0 * math.pi)
            heading = rng.uniform(0.0, 2.0 * math.pi)
            if p["across"]:
                heading = axis + 0.5 * math.pi
            speed = p["speed"] * rng.uniform()
            velocity = (speed * math.cos(heading), speed * math.sin(heading), 0.0)
            e = np.array([math.cos(axis), math.sin(axis), 0.0])
            spheres = []
            for side in (-1.0, 1.0):
                spin = rng.uniform(-1.0, 1.0, 3) * p["spin"] * p["speed"] / r
                spheres.append(
                    model.add_body(
                        RigidBody(
                            f"dumbbell{k}{'ab'[side > 0]}",
                            mass,
                            (inertia,) * 3,
                            position=(x + side * r * e[0], y + side * r * e[1], r),
                            velocity=velocity,
                            angular_velocity=tuple(float(w) for w in spin),
                        )
                    )
                )
                model.add_contact(SphereContact(spheres[-1], Plane(), p["mu"], radius=r))
            model.add_constraint(
                BallJoint(
                    body_a=spheres[0],
                    offset_a=tuple(r * e),
                    body_b=spheres[1],
                    offset_b=tuple(-r * e),
                    name=f"dumbbell{k} joint",
                )  # fmt: skip
            )
        return Scene.from_parameters("dumbbells", model, p, Dumbbells.__doc__)
