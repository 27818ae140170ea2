"""Analytic friction scenes: a block sliding on four corners, a point block on an incline, a puck.

Each class is a scene module in the sense of :mod:`scenes` (``build(**parameters)``) and
carries the closed-form answer its tests check.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from lcpdyn.body import RigidBody
from lcpdyn.contact import Plane, PointContact, SphereContact
from lcpdyn.forces import BodyForce
from lcpdyn.model import Model
from lcpdyn.validation import positive

from .scene import Scene, override


class SlidingBlock:
    """A cube (side a) launched along x on four bottom corners: decelerates at mu g, stops after v0^2/(2 mu g)."""

    DEFAULTS = {
        "side": 0.2,
        "mass": 1.0,
        "mu": 0.5,
        "speed": 2.0,
        "gravity": 9.81,
        "dt": 1e-3,
        "t_end": 0.6,
        "tangential_stiffness": 1e10,
        "velocity_threshold": 0.01,
    }

    @staticmethod
    def build(**parameters) -> Scene:
        """The sliding block with ``parameters`` overriding its defaults (the class docstring)."""
        p = override(SlidingBlock.DEFAULTS, parameters, "sliding-block")
        a = p["side"]
        model = Model(gravity=(0.0, 0.0, -p["gravity"]))
        inertia = p["mass"] * a * a / 6.0 if p["mass"] > 0 and a > 0 else -1.0
        block = model.add_body(
            RigidBody("block", p["mass"], (inertia,) * 3, position=(0.0, 0.0, a / 2), velocity=(p["speed"], 0.0, 0.0))
        )
        for sx in (-1, 1):
            for sy in (-1, 1):
                model.add_contact(PointContact(block, Plane(), p["mu"], offset=(sx * a / 2, sy * a / 2, -a / 2)))
        return Scene.from_parameters("sliding-block", model, p, SlidingBlock.__doc__)

    @staticmethod
    def stopping(p: dict) -> tuple[float, float]:
        """(stopping time v0/(mu g), stopping distance v0^2/(2 mu g))."""
        deceleration = p["mu"] * p["gravity"]
        return p["speed"] / deceleration, p["speed"] ** 2 / (2 * deceleration)


class InclineBlock:
    """A block released on a plane tilted by angle_deg: sticks iff tan(angle) <= mu_s, else slides at g(sin - mu_k cos).

    ``mu`` is the kinetic coefficient mu_k, ``mu_static`` the static one (NaN: equal to mu).
    ``pull_rate`` c (N/s, default 0) adds a pull test: a force c t down the slope (a tensile
    tester's ramp), so that a block that sticks at first breaks away at
    t_b = m g (mu_s cos - sin) / c and then slides under m g (sin - mu_k cos) + c t
    (:meth:`distance`)."""

    DEFAULTS = {
        "angle_deg": 20.0,
        "mass": 1.0,
        "mu": 0.5,
        "mu_static": math.nan,
        "gravity": 9.81,
        "dt": 1e-3,
        "t_end": 0.5,
        "tangential_stiffness": 1e10,
        "velocity_threshold": 0.01,
        "pull_rate": 0.0,
    }

    @staticmethod
    def build(**parameters) -> Scene:
        """The incline block with ``parameters`` overriding its defaults (the class docstring)."""
        p = override(InclineBlock.DEFAULTS, parameters, "incline-block")
        angle = math.radians(p["angle_deg"])
        plane = Plane.inclined(angle)
        model = Model(gravity=(0.0, 0.0, -p["gravity"]))
        block = model.add_body(RigidBody("block", p["mass"], (0.01, 0.01, 0.01)))
        mu_static = None if math.isnan(p["mu_static"]) else p["mu_static"]
        model.add_contact(PointContact(block, plane, p["mu"], mu_static))
        rate = float(p["pull_rate"])
        if not (math.isfinite(rate) and rate >= 0.0):
            raise ValueError(f"scene 'incline-block': pull_rate must be finite and >= 0 (N/s), got {rate!r}")
        if rate:
            downhill = jnp.asarray([math.cos(angle), 0.0, -math.sin(angle)])  # the plane's t1
            model.add_force(BodyForce(block, lambda t, state: (rate * t * downhill, jnp.zeros(3))))
        return Scene.from_parameters("incline-block", model, p, InclineBlock.__doc__)

    @staticmethod
    def breakaway_time(p: dict) -> float:
        """t_b (s): when the pull and gravity's downhill part reach mu_s m g cos (0: at once;
        inf: never, without a pull)."""
        angle = math.radians(p["angle_deg"])
        mu_static = p["mu"] if math.isnan(p["mu_static"]) else p["mu_static"]
        short = p["mass"] * p["gravity"] * (mu_static * math.cos(angle) - math.sin(angle))  # N still held
        if short <= 0.0:
            return 0.0
        return short / p["pull_rate"] if p.get("pull_rate", 0.0) > 0.0 else math.inf

    @staticmethod
    def distance(p: dict, t):
        """Distance slid down the slope (m) at times ``t`` (s), rigid contact: 0 until t_b, then
        x'' = g (sin - mu_k cos) + c t / m integrated from rest at t_b."""
        t = np.asarray(t, float)
        angle, c, m = math.radians(p["angle_deg"]), p.get("pull_rate", 0.0), p["mass"]
        t_b = InclineBlock.breakaway_time(p)
        if not math.isfinite(t_b):
            return np.zeros_like(t)
        a0 = p["gravity"] * (math.sin(angle) - p["mu"] * math.cos(angle))
        s = np.maximum(t - t_b, 0.0)
        return 0.5 * a0 * s**2 + c / (6.0 * m) * s**2 * (s + 3.0 * t_b)

    @staticmethod
    def acceleration(p: dict) -> float:
        """Downhill acceleration from rest: 0 if tan(angle) <= mu_s, else g (sin - mu_k cos)."""
        angle = math.radians(p["angle_deg"])
        mu_static = p["mu"] if math.isnan(p["mu_static"]) else p["mu_static"]
        if math.tan(angle) <= mu_static:
            return 0.0
        return p["gravity"] * (math.sin(angle) - p["mu"] * math.cos(angle))


class Puck:
    """A point mass sliding at heading_deg to the contact basis: exact Coulomb keeps the heading, |lam_T| = mu lam_N."""

    DEFAULTS = {
        "heading_deg": 22.5,
        "mass": 1.0,
        "mu": 0.4,
        "speed": 2.0,
        "gravity": 9.81,
        "dt": 1e-3,
        "t_end": 0.3,
        "tangential_stiffness": 1e10,
        "velocity_threshold": 0.01,
    }

    @staticmethod
    def build(**parameters) -> Scene:
        """The puck with ``parameters`` overriding its defaults (the class docstring)."""
        p = override(Puck.DEFAULTS, parameters, "puck")
        heading = math.radians(p["heading_deg"])
        model = Model(gravity=(0.0, 0.0, -p["gravity"]))
        puck = model.add_body(
            RigidBody(
                "puck",
                p["mass"],
                (0.01, 0.01, 0.01),
                velocity=(p["speed"] * math.cos(heading), p["speed"] * math.sin(heading), 0.0),
            )
        )
        model.add_contact(PointContact(puck, Plane(), p["mu"]))
        return Scene.from_parameters("puck", model, p, Puck.__doc__)


class SlidingSphere:
    """A solid sphere launched without spin slides, then rolls at 5/7 of its speed: t* = 2 v0/(7 mu g).

    With ``second_mass`` > 0 a second, identical-size sphere of that mass runs beside the first
    (1 m apart in y, same launch): one scene with a light and a heavy body, whose contact problem
    spans their mass ratio. Closed form (each sphere, I = 2/5 m r^2): sliding decelerates at
    mu g while the spin grows at 5 mu g / (2 r); the slip v - r omega falls at 7/2 mu g and
    vanishes at t* = 2 v0 / (7 mu g); then v = 5/7 v0, omega = v / r. Mass does not enter.
    """

    DEFAULTS = {
        "mass": 1.0,
        "second_mass": 0.0,
        "radius": 0.1,
        "mu": 0.5,
        "speed": 2.0,
        "gravity": 9.81,
        "dt": 1e-3,
        "t_end": 1.0,
        "tangential_stiffness": 1e10,
        "velocity_threshold": 0.01,
    }

    @staticmethod
    def build(**parameters) -> Scene:
        """The sliding sphere with ``parameters`` overriding its defaults (the class docstring)."""
        p = override(SlidingSphere.DEFAULTS, parameters, "sliding-sphere")
        r = positive("scene 'sliding-sphere': radius", p["radius"])
        model = Model(gravity=(0.0, 0.0, -p["gravity"]))
        masses = [p["mass"]] + ([p["second_mass"]] if p["second_mass"] != 0.0 else [])
        for k, mass in enumerate(masses):
            inertia = 0.4 * mass * r * r if mass > 0 and r > 0 else -1.0  # bad input: RigidBody names it
            body = model.add_body(
                RigidBody(
                    f"sphere{k}", mass, (inertia,) * 3, position=(0.0, float(k), r), velocity=(p["speed"], 0.0, 0.0)
                )
            )
            model.add_contact(SphereContact(body, Plane(), p["mu"], radius=r))
        return Scene.from_parameters("sliding-sphere", model, p, SlidingSphere.__doc__)

    @staticmethod
    def analytic(p: dict, t):
        """(v_x, omega_y, x) at times ``t`` (arrays): the closed form of the class docstring."""
        import numpy as np

        t = np.asarray(t, dtype=float)
        mu_g, v0, r = p["mu"] * p["gravity"], p["speed"], p["radius"]
        t_star = 2.0 * v0 / (7.0 * mu_g)
        sliding = t < t_star
        ts = np.minimum(t, t_star)
        v = np.where(sliding, v0 - mu_g * ts, 5.0 / 7.0 * v0)
        omega = np.where(sliding, 2.5 * mu_g * ts / r, 5.0 / 7.0 * v0 / r)
        x = v0 * ts - 0.5 * mu_g * ts**2 + 5.0 / 7.0 * v0 * (t - ts)
        return v, omega, x
