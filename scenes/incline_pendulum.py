"""Bauchau 2002 Sec. 8.2: a wheel-mounted pendulum on an incline (Figs. 10-15).

A uniform wheel (M = 125 kg, rho = 0.25 m) on a plane inclined at 25 deg carries, through a
revolute joint with a torsional spring k = 500 N m/rad, a uniform bar (4.0 m, 4.16 kg/m; rigid
here -- the paper's is flexible) hanging from its axle. Contact: F = k1 a + c1 a_dot with
k1 = 1 MN/m, c1 = 5 kN s/m; mu_s = 0.8, mu_k = 0.4. At the start the bar is parallel to the
incline (``bar_direction``: uphill from the axle by default -- the paper's figure is not
available; "downhill" is the other reading) and everything is at rest; the bar swings like a
pendulum while the wheel rolls down, and the spring makes the motion oscillate. Only the wheel
touches the plane.

The paper (with Coulomb friction and rolling constraints) finds five distinct rolling events
separated by sliding phases of increasing length; with the continuous law (v0 = 5 mm/s) rolling
is replaced by creep that gives way to sliding at all later times. :func:`rolling_events` counts
the events of a run.
"""
from __future__ import annotations

import math

import numpy as np

from lcpdyn.body import RigidBody
from lcpdyn.compliance import SpringDamperLaw
from lcpdyn.constraints import RevoluteJoint
from lcpdyn.contact import DiskContact, Plane
from lcpdyn.forces import TorsionalSpringDamper
from lcpdyn.model import Model

from .scene import Scene, override

NAME = "incline-pendulum"
DEFAULTS = {
    "wheel_mass": 125.0, "wheel_radius": 0.25, "bar_length": 4.0, "bar_mass_per_length": 4.16,
    "spring_stiffness": 500.0, "incline_deg": 25.0, "mu": 0.4, "mu_static": 0.8, "k1": 1e6, "c1": 5e3,
    "bar_direction": "uphill", "gravity": 9.81, "dt": 2e-4, "t_end": 4.0, "tangential_stiffness": 1e10, "velocity_threshold": 0.005,
    "characteristic_velocity": 0.005,
}


def build(**parameters) -> Scene:
    p = override(DEFAULTS, parameters, NAME)
    angle = math.radians(p["incline_deg"])
    plane = Plane.inclined(angle)
    M, rho, L = p["wheel_mass"], p["wheel_radius"], p["bar_length"]
    m_bar = p["bar_mass_per_length"] * L
    if not (rho > 0 and L > 0):
        raise ValueError(f"scene {NAME!r}: wheel_radius and bar_length must be > 0")
    model = Model(gravity=(0.0, 0.0, -p["gravity"]))
    if p["bar_direction"] not in ("uphill", "downhill"):
        raise ValueError(f"scene {NAME!r}: bar_direction must be 'uphill' or 'downhill', got {p['bar_direction']!r}")
    sign = 1.0 if p["bar_direction"] == "downhill" else -1.0
    centre = rho * plane.normal
    # body frames: the wheel's axis is body y; the bar lies along its body x, rotated into t1
    tilt = (math.cos(angle / 2), 0.0, math.sin(angle / 2), 0.0)  # rotation by +angle about y: x -> t1
    wheel = model.add_body(RigidBody("wheel", M, (M * rho * rho / 4, M * rho * rho / 2, M * rho * rho / 4)
                                     if M > 0 else (-1.0, -1.0, -1.0), position=centre, orientation=tilt))
    slender = m_bar * L * L / 12 if m_bar > 0 else -1.0
    bar = model.add_body(RigidBody("bar", m_bar, (1e-3 * slender, slender, slender),
                                   position=centre + sign * 0.5 * L * plane.t1, orientation=tilt))
    model.add_constraint(RevoluteJoint(body_a=bar, offset_a=(-sign * L / 2, 0.0, 0.0), body_b=wheel, name="axle"))
    model.add_force(TorsionalSpringDamper(bar, wheel, stiffness=p["spring_stiffness"]))
    model.add_contact(DiskContact(wheel, plane, p["mu"], p["mu_static"], SpringDamperLaw(p["k1"], p["c1"]),
                                  radius=rho))
    return Scene(NAME, model, p, p["dt"], p["t_end"], __doc__.splitlines()[0],
                 {"tangential_stiffness": p["tangential_stiffness"], "velocity_threshold": p["velocity_threshold"],
                  "characteristic_velocity": p["characteristic_velocity"]})


def rolling_events(trajectory, threshold: float, minimum_duration: float = 0.01) -> list[tuple[float, float]]:
    """(start, end) times of the intervals where the contact's slip stays <= ``threshold`` for at
    least ``minimum_duration`` (rolling, or creeping under the continuous law)."""
    rolling = np.linalg.norm(trajectory.contact_slip_velocity[:, 0], axis=1) <= threshold
    events, start = [], None
    for t, flag in zip(trajectory.t, rolling):
        if flag and start is None:
            start = t
        elif not flag and start is not None:
            if t - start >= minimum_duration:
                events.append((float(start), float(t)))
            start = None
    if start is not None and trajectory.t[-1] - start >= minimum_duration:
        events.append((float(start), float(trajectory.t[-1])))
    return events
