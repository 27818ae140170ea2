"""A crate dropped onto the load bed of the moving half car: suspension, tyres, joints and the
crate's detected contacts in one problem.

The car is :mod:`scenes.half_car` (Ikoki 2022; every parameter of that scene is a parameter here)
with a load bed -- a thin box collider (``bed_length`` x 1 m x 0.1 m) fixed on the chassis
``bed_height`` above its centre of mass, from ``bed_front`` back. A crate (a cube of
``crate_side``, ``crate_mass``) starts ``drop`` above the bed, its centre ``crate_position``
behind the bed's front edge, at rest while the car pulls away under the driving torque of
Eq. (34). The crate touches the bed and the road (a half-space collider; the wheels keep their
declared tyre contacts, the chassis never meets the road), with friction ``mu`` and Newton's
``restitution``.

What the physics says (tests/test_one_engine_scenes.py): once the suspension has settled, the
tyres carry the car and the crate, (m_car + m_crate) g; the crate rides on the bed while the car's
acceleration a stays below mu g, and slides back otherwise, at the acceleration mu g (the bed
pulls it forward with mu N, N = m_crate g on a level bed) -- then it falls off the back onto the
road.
"""

from __future__ import annotations

from lcpdyn.body import RigidBody
from lcpdyn.collision import Box, Collider, HalfSpace

from . import half_car
from .scene import Scene, override

NAME = "crate-on-half-car"
DEFAULTS = {
    **half_car.DEFAULTS,
    "crate_mass": 100.0,
    "crate_side": 0.5,
    "crate_position": 1.6,
    "drop": 0.02,
    "bed_length": 2.4,
    "bed_front": 0.8,
    "bed_height": 0.35,
    "mu": 0.5,
    "restitution": 0.0,
    "margin": 0.005,
    "t_end": 3.2,
}
_BED_THICKNESS = 0.1
_BED_WIDTH = 1.0


def build(**parameters) -> Scene:
    """The half car with a load bed and a crate dropped onto it as the car pulls away."""
    p = override(DEFAULTS, parameters, NAME)
    side, length = p["crate_side"], p["bed_length"]
    if min(side, p["crate_mass"], length) <= 0 or p["drop"] < 0:
        raise ValueError(f"scene {NAME!r}: crate_side, crate_mass and bed_length must be > 0, drop >= 0")
    if not side / 2 <= p["crate_position"] <= length - side / 2:
        raise ValueError(
            f"scene {NAME!r}: crate_position {p['crate_position']} m puts the crate off the bed "
            f"(it must lie in [{side / 2}, {length - side / 2}] m behind the bed's front edge)"
        )
    car = half_car.build(**{key: p[key] for key in half_car.DEFAULTS})
    model = car.model
    chassis = model.bodies[0]
    bed_centre = (p["bed_front"] - length / 2, 0.0, p["bed_height"])
    model.add_collider(Collider(chassis, Box((length, _BED_WIDTH, _BED_THICKNESS)), position=bed_centre, name="bed"))
    top = chassis.position[2] + p["bed_height"] + _BED_THICKNESS / 2
    crate = model.add_body(
        RigidBody(
            "crate",
            p["crate_mass"],
            (p["crate_mass"] * side * side / 6.0,) * 3,
            position=(chassis.position[0] + p["bed_front"] - p["crate_position"], 0.0, top + p["drop"] + side / 2),
        )
    )
    model.add_collider(Collider(crate, Box((side, side, side)), name="crate"))
    model.add_collider(Collider(None, HalfSpace(), name="road"))
    model.set_collisions(
        margin=p["margin"], contact={"mu": p["mu"], "restitution": p["restitution"]}, exclude=((chassis, None),)
    )
    return Scene.from_parameters(NAME, model, p, __doc__)
