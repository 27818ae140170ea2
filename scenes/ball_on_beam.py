"""A ball strikes the flexible beam of Bauchau 2002 Sec. 8.1: beam nodes and a free body meet in a
detected contact.

The beam is that of :mod:`scenes.road_wheel` (3.75 m, 1.61 kg/m, Table 1's set 1 section; a rigid
bar with ``beam_elements = 0``, else that many geometrically exact elements, :mod:`lcpdyn.beam`),
here floating free and level along x, without gravity by default, so that nothing but the impact
moves it. A ball (``ball_mass``, ``ball_radius``) flies at ``speed`` straight down onto the beam
above node ``strike_node`` (of the flexible beam; the same point of the bar). The beam's surface
is one capsule collider of ``beam_radius`` per node, centred on it and reaching half way to each
neighbour, so that a ball striking above a node meets that node alone; neighbouring nodes never
collide (their element is a two-body constraint, excluded as a joint is).

What the physics says (tests/test_one_engine_scenes.py): the scene's linear momentum stays what
the ball brought, through the impact; at the impact step the contact's normal relative speed
reverses to ``restitution`` times its approach (Newton's law); the energy the ball loses goes into
the beam -- its rigid motion and, for the flexible beam, its vibration (kinetic and strain
energy) -- and nothing is created. On the rigid bar, struck at d from its centre, the impact is
one between the ball and the bar's mass at that point, m_b I / (I + m_b d^2) with I = m_b l^2/12.
"""

from __future__ import annotations

from lcpdyn.beam import add_beam
from lcpdyn.body import RigidBody
from lcpdyn.collision import Capsule, Collider, Sphere
from lcpdyn.model import Model

from .scene import Scene, beam_defaults, flexible_beam, override

NAME = "ball-on-beam"
DEFAULTS = {
    "beam_length": 3.75,
    "beam_mass_per_length": 1.61,
    "beam_radius": 0.02,
    "ball_mass": 1.0,
    "ball_radius": 0.05,
    "speed": 2.0,
    "gap": 0.01,
    "strike_node": 8,
    "restitution": 1.0,
    "margin": 0.005,
    "gravity": 0.0,
    "dt": 1e-4,
    "t_end": 0.1,
    **beam_defaults(1),
    "beam_elements": 10,
}
_ALONG_X = ((0.0, 0.0, 1.0), (0.0, 1.0, 0.0), (-1.0, 0.0, 0.0))  # a capsule's axis (its z) along body x


def strike_point(p: dict) -> float:
    """x (m) of the struck point: node ``strike_node`` of the flexible beam (the bar: of 10 elements)."""
    elements = p["beam_elements"] or 10
    return p["beam_length"] * p["strike_node"] / elements


def rigid_bar_rebound(p: dict) -> tuple[float, float]:
    """(ball, struck point) vertical speeds (m/s) after the impact on the rigid bar (docstring)."""
    l, m_b = p["beam_length"], p["beam_mass_per_length"] * p["beam_length"]
    inertia, d = m_b * l * l / 12.0, strike_point(p) - l / 2
    m_eff = m_b * inertia / (inertia + m_b * d * d)
    m, e, v0 = p["ball_mass"], p["restitution"], -p["speed"]
    return (m - e * m_eff) / (m + m_eff) * v0, (1.0 + e) * m / (m + m_eff) * v0


def build(**parameters) -> Scene:
    """A ball flying onto the free-floating flexible beam of Bauchau 2002 Sec. 8.1."""
    p = override(DEFAULTS, parameters, NAME)
    l, radius = p["beam_length"], p["beam_radius"]
    elements, section = flexible_beam(p, NAME, p["beam_mass_per_length"])
    spans = elements or 10
    node = p["strike_node"]
    if node != int(node) or not 0 < node < spans:
        raise ValueError(f"scene {NAME!r}: strike_node must be an interior node, 1 .. {spans - 1}, got {node!r}")
    if min(l, radius, p["ball_mass"], p["ball_radius"], p["beam_mass_per_length"]) <= 0 or p["gap"] < 0:
        raise ValueError(f"scene {NAME!r}: lengths, radii and masses must be > 0, gap >= 0")
    model = Model(gravity=(0.0, 0.0, -p["gravity"]))
    if elements:
        beam = add_beam(model, "beam", section, (0.0, 0.0, 0.0), (l, 0.0, 0.0), elements)
        step = l / elements
        for i, body in enumerate(beam.nodes):
            low, high = (0.0 if i == 0 else -step / 2), (0.0 if i == elements else step / 2)
            model.add_collider(
                Collider(
                    body,
                    Capsule(radius, high - low),
                    position=((low + high) / 2, 0.0, 0.0),
                    rotation=_ALONG_X,
                    name=f"beam[{i}]",
                )
            )
    else:
        m_b = p["beam_mass_per_length"] * l
        slender = m_b * l * l / 12.0
        bar = model.add_body(RigidBody("beam", m_b, (1e-3 * slender, slender, slender), position=(l / 2, 0.0, 0.0)))
        model.add_collider(Collider(bar, Capsule(radius, l), rotation=_ALONG_X, name="beam"))
    ball = model.add_body(
        RigidBody(
            "ball",
            p["ball_mass"],
            (0.4 * p["ball_mass"] * p["ball_radius"] ** 2,) * 3,
            position=(strike_point(p), 0.0, radius + p["ball_radius"] + p["gap"]),
            velocity=(0.0, 0.0, -p["speed"]),
        )
    )
    model.add_collider(Collider(ball, Sphere(p["ball_radius"]), name="ball"))
    model.set_collisions(margin=p["margin"], contact={"mu": 0.0, "restitution": p["restitution"]})
    return Scene.from_parameters(NAME, model, p, build.__doc__)
