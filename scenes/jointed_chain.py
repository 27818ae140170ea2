"""A chain of ball-jointed links dropped onto a box: joints and detected contacts in one step.

``links`` capsules (``length`` between their end spheres' centres, ``radius``, ``mass`` each) are
joined end to end by ball joints (:class:`lcpdyn.constraints.BallJoint`) and released level,
along x, ``drop`` (m) above a box (``side``, ``box_mass``) that rests on the ground. The links
touch the box, the ground and each other (not their neighbours: bodies joined by a joint do not
collide), found at every step by collision detection (:meth:`lcpdyn.model.Model.add_collider`)
and solved in one problem with the joints' rows (:mod:`lcpdyn.detected_contacts`).

What the tests check (``tests/test_detected_contacts.py``): the joints hold; the scene's vertical
momentum changes at every step by gravity's impulse and the ground's alone; with the default six
links the free ends swing on without damping and the energy stays put; with ten the ends lie on
the ground and, at rest, the ground carries the whole weight, (box_mass + links mass) g.
"""

from __future__ import annotations

from lcpdyn.body import RigidBody
from lcpdyn.collision import Box, Capsule, Collider, HalfSpace
from lcpdyn.constraints import BallJoint
from lcpdyn.model import Model

from .scene import Scene, override

DEFAULTS = {
    "links": 6,
    "length": 0.1,
    "radius": 0.01,
    "mass": 0.1,
    "side": 0.2,
    "box_mass": 2.0,
    "drop": 0.05,
    "mu": 0.5,
    "restitution": 0.0,
    "margin": 0.005,
    "gravity": 9.81,
    "dt": 1e-3,
    "t_end": 1.5,
}


def build(**parameters) -> Scene:
    """A chain of ball-jointed capsules dropped onto a box resting on the ground."""
    p = override(DEFAULTS, parameters, "chain-on-box")
    links, length, radius, mass, side = int(p["links"]), p["length"], p["radius"], p["mass"], p["side"]
    if links < 1 or links != p["links"]:
        raise ValueError(f"chain-on-box: links must be a whole number >= 1, got {p['links']!r}")
    model = Model(gravity=(0.0, 0.0, -p["gravity"]))
    box = model.add_body(
        RigidBody("box", p["box_mass"], (p["box_mass"] * side * side / 6.0,) * 3, position=(0.0, 0.0, side / 2))
    )
    model.add_collider(Collider(box, Box((side, side, side)), name="box"))
    model.add_collider(Collider(None, HalfSpace(), name="ground"))
    height = side + p["drop"] + radius
    start = -0.5 * links * length + 0.25 * length  # the chain's middle a quarter link off the box's centre
    axial = 0.5 * mass * radius**2
    transverse = mass * (3.0 * radius**2 + length**2) / 12.0
    along_x = ((0.0, 0.0, 1.0), (0.0, 1.0, 0.0), (-1.0, 0.0, 0.0))  # the capsule's axis (its z) along world x
    previous = None
    for i in range(links):
        link = model.add_body(
            RigidBody(
                f"link {i}", mass, (axial, transverse, transverse), position=(start + (i + 0.5) * length, 0.0, height)
            )  # fmt: skip
        )
        model.add_collider(Collider(link, Capsule(radius, length), rotation=along_x, name=f"link {i}"))
        if previous is not None:
            model.add_constraint(
                BallJoint(
                    body_a=previous,
                    offset_a=(0.5 * length, 0.0, 0.0),
                    body_b=link,
                    offset_b=(-0.5 * length, 0.0, 0.0),
                    name=f"joint {i - 1}-{i}",
                )  # fmt: skip
            )
        previous = link
    model.set_collisions(margin=p["margin"], contact={"mu": p["mu"], "restitution": p["restitution"]})
    return Scene.from_parameters("chain-on-box", model, p, build.__doc__)
