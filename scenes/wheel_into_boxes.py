"""A wheel on its rolling constraints rolls into a row of loose boxes: rolling rows and detected
contacts in one problem.

The wheel (a uniform disk: ``wheel_mass``, ``wheel_radius``, rim ``wheel_width``) stands upright
on the ground, held there by a holonomic pair (its axis stays along world y), and rolls without
slip on a :class:`~lcpdyn.contact.DiskContact` with ``rolling="ideal"`` -- the two non-holonomic
rows of Bauchau 2002 Eq. (19) / Peiret 2016 Eq. (2). It starts at ``speed`` (m/s, along x) a
``gap`` (m) short of a row of ``boxes`` cubes (``side``, ``box_mass``, ``spacing`` between them)
resting on the ground. The wheel's rim (a cylinder collider) and the boxes touch each other and
the ground (a half-space collider; the wheel's own ground contact is the declared one, so that
pair is excluded), found at every step by collision detection and solved with the rolling rows
(:mod:`lcpdyn.detected_contacts`).

The boxes are taller than the wheel's radius, so the rim strikes a box face at the wheel's
centre height, horizontally; at the default side 2r that push goes through the box's centre, so
the box does not turn (the closed forms below assume it). Rolling without slip, the wheel then
resists a horizontal push at its centre with the mass m_eff = m + I/r^2 = 3m/2 (the ground's
rolling rows supply the rest), so without friction the first impact is one between m_eff and the
box: Newton's law with coefficient e gives

    wheel  (m_eff - e m_b)/(m_eff + m_b) v0,    box  (1 + e) m_eff/(m_eff + m_b) v0.

With friction (mu on the ground, mu_w between rim and box) the wheel soon pushes the n boxes as
one row. The rim's front point then slides down the first box's face at the row's speed, so the
box is pressed down by mu_w P as the wheel is lifted (P the push), the wheel's spin is braked by
the same force's moment, and the row decelerates at

    a = -n mu g m_b / (n m_b + m_eff (1 - mu mu_w) / (1 + mu_w))

until it stops, the wheel against the boxes; energy only leaves. Before that, the first impact's
rim friction kicks the wheel up (with the defaults, a 5.7 mm hop of 85 ms): the ideal rolling
rows, bilateral as Peiret 2016 Eq. (2) has them, keep holding in the air, so during the hop the
wheel turns as if it rolled. ``rolling="friction"`` would release them there, but a wheel struck
at its centre then slips at the impact, as the ground gives no impulsive friction without an
impulsive normal force.
"""

from __future__ import annotations

import jax.numpy as jnp

from lcpdyn.body import RigidBody
from lcpdyn.collision import Box, Collider, Cylinder, HalfSpace
from lcpdyn.constraints import Holonomic
from lcpdyn.contact import DiskContact, Plane
from lcpdyn.model import Model

from .scene import Scene, override

NAME = "wheel-into-boxes"
DEFAULTS = {
    "wheel_mass": 2.0,
    "wheel_radius": 0.3,
    "wheel_width": 0.06,
    "speed": 2.0,
    "gap": 0.05,
    "boxes": 3,
    "side": 0.6,
    "box_mass": 1.0,
    "spacing": 0.02,
    "mu": 0.3,
    "mu_wheel": 0.3,
    "restitution": 0.0,
    "margin": 0.005,
    "gravity": 9.81,
    "dt": 1e-3,
    "t_end": 1.0,
}

_AXIS_Y = ((1.0, 0.0, 0.0), (0.0, 0.0, 1.0), (0.0, -1.0, 0.0))  # a cylinder's axis (its z) along body y


def effective_mass(p: dict) -> float:
    """m + I/r^2 of the rolling wheel (kg): what a horizontal push at its centre moves."""
    return 1.5 * p["wheel_mass"]


def first_impact(p: dict) -> tuple[float, float]:
    """(wheel, box) speeds (m/s) just after the first, frictionless impact (module docstring)."""
    m, mb, e, v0 = effective_mass(p), p["box_mass"], p["restitution"], p["speed"]
    return (m - e * mb) / (m + mb) * v0, (1.0 + e) * m / (m + mb) * v0


def pushing_deceleration(p: dict) -> float:
    """a (m/s^2, < 0) of the wheel pushing the whole row on the ground (module docstring)."""
    n, mb, mu, mu_w = p["boxes"], p["box_mass"], p["mu"], p["mu_wheel"]
    return -n * mu * p["gravity"] * mb / (n * mb + effective_mass(p) * (1.0 - mu * mu_w) / (1.0 + mu_w))


def build(**parameters) -> Scene:
    """A wheel held upright, rolling without slip into a row of loose boxes on the ground."""
    p = override(DEFAULTS, parameters, NAME)
    m, r, width, side = p["wheel_mass"], p["wheel_radius"], p["wheel_width"], p["side"]
    boxes = int(p["boxes"])
    if boxes < 1 or boxes != p["boxes"]:
        raise ValueError(f"scene {NAME!r}: boxes must be a whole number >= 1, got {p['boxes']!r}")
    if min(m, r, width, side, p["box_mass"]) <= 0 or min(p["gap"], p["spacing"]) < 0:
        raise ValueError(f"scene {NAME!r}: masses and sizes must be > 0, gap and spacing >= 0")
    if side <= r:
        raise ValueError(f"scene {NAME!r}: the boxes (side {side} m) must stand taller than the wheel's radius {r} m")
    model = Model(gravity=(0.0, 0.0, -p["gravity"]))
    wheel = model.add_body(
        RigidBody(
            "wheel",
            m,
            (m * r * r / 4, m * r * r / 2, m * r * r / 4),
            position=(0.0, 0.0, r),
            velocity=(p["speed"], 0.0, 0.0),
            angular_velocity=(0.0, p["speed"] / r, 0.0),
        )
    )

    def upright(state):  # the wheel's axis stays along world y
        R = state.rotation(wheel)
        return jnp.stack([R[0, 1], R[2, 1]])

    model.add_constraint(Holonomic(upright, 2, name="upright wheel", bodies=(wheel,)))
    model.add_contact(DiskContact(wheel, Plane(), 0.0, radius=r, rolling="ideal"))
    model.add_collider(Collider(wheel, Cylinder(r, width), rotation=_AXIS_Y, name="rim"))
    model.add_collider(Collider(None, HalfSpace(), name="ground"))
    front = r + p["gap"]
    for i in range(boxes):
        box = model.add_body(
            RigidBody(
                f"box {i}",
                p["box_mass"],
                (p["box_mass"] * side * side / 6.0,) * 3,
                position=(front + i * (side + p["spacing"]) + side / 2, 0.0, side / 2),
            )
        )
        model.add_collider(Collider(box, Box((side, side, side)), name=f"box {i}"))
    model.set_collisions(
        margin=p["margin"],
        contact={"mu": p["mu"], "restitution": p["restitution"]},
        exclude=((wheel, None),),
    )
    if p["mu_wheel"] != p["mu"]:
        model.set_collisions(
            pairs={(wheel, box): {"mu": p["mu_wheel"], "restitution": p["restitution"]} for box in model.bodies[1:]}
        )
    return Scene.from_parameters(NAME, model, p, build.__doc__)
