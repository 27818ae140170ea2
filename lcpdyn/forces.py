"""Applied forces: gravity (set on the model), body forces depending on (t, q, v), and
spring-dampers. Each returns generalized forces for the model's velocity layout: for body i a
world force F at world point p contributes [F, R_i^T ((p - x_i) x F)] (force, body-frame
torque), i.e. J_p^T F with J_p the point-velocity Jacobian.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from .body import RigidBody
from .validation import finite_vector, nonnegative

__all__ = ["BodyForce", "SpringDamper", "TorsionalSpringDamper"]


@dataclass(eq=False)
class BodyForce:
    """A force and torque on ``body``: ``function(t, state) -> (force_world, torque_world)``,
    JAX-traceable (``state`` is a :class:`~lcpdyn.state_view.StateView`; the force acts at the
    centre of mass). Example: a driving torque ``lambda t, s: (jnp.zeros(3), T(t) * axis)``."""

    body: RigidBody
    function: object

    def __post_init__(self):
        if not isinstance(self.body, RigidBody):
            raise TypeError("BodyForce body must be a RigidBody")
        if not callable(self.function):
            raise TypeError("BodyForce function must be callable as function(t, state)")

    def wrenches(self, t, state):
        """[(body, force, torque)] (N, N m, world) of ``function(t, state)`` on the body, checked for shape and
        finiteness."""
        returned = self.function(t, state)
        where = f"BodyForce on body {self.body.name!r}: function(t, state)"
        if isinstance(returned, (tuple, list)) and len(returned) == 2:
            force, torque = (jnp.asarray(x, dtype=float) for x in returned)
        elif getattr(returned, "shape", None) == (2, 3):  # one (2, 3) array: its rows
            force, torque = jnp.asarray(returned, dtype=float)
        else:
            shape = getattr(returned, "shape", None)
            got = type(returned).__name__ if shape is None else f"an array of shape {tuple(shape)}"
            raise ValueError(f"{where} must return (force, torque), got {got}")
        if force.shape != (3,) or torque.shape != (3,):  # static under tracing: checked once, at compile time
            raise ValueError(
                f"{where} must return (force, torque), each of shape (3,) (N, N m, world frame), got shapes "
                f"{force.shape} and {torque.shape}"
            )
        return [(self.body, force, torque)]

    def nonconservative_wrenches(self, t, state):
        """All of it: a body force has no potential, so its work counts as energy put in."""
        return self.wrenches(t, state)

    def potential(self, state):
        """0: an applied load has no potential here; its work counts as energy put in."""
        return 0.0


@dataclass(eq=False)
class SpringDamper:
    """A linear spring-damper between body-fixed point ``offset_a`` of ``body_a`` and point
    ``offset_b`` of ``body_b`` (or the fixed world point ``offset_b`` if ``body_b`` is None).

    Force on a: F_a = -(k (l - l0) + c dl/dt) e, e = (p_a - p_b)/l, and -F_a on b.
    Potential energy k (l - l0)^2 / 2. Units: k in N/m, c in N s/m, l0 in m.
    """

    body_a: RigidBody
    offset_a: object
    body_b: RigidBody | None
    offset_b: object
    stiffness: float
    damping: float = 0.0
    rest_length: float = 0.0

    def __post_init__(self):
        if not isinstance(self.body_a, RigidBody) or not (self.body_b is None or isinstance(self.body_b, RigidBody)):
            raise TypeError("SpringDamper bodies must be RigidBody (body_b may be None for the world)")
        self.offset_a = finite_vector("spring offset_a", self.offset_a, 3)
        self.offset_b = finite_vector("spring offset_b", self.offset_b, 3)
        self.stiffness = nonnegative("spring stiffness", self.stiffness)
        self.damping = nonnegative("spring damping", self.damping)
        self.rest_length = nonnegative("spring rest_length", self.rest_length)

    def _points(self, state):
        pa = state.point(self.body_a, self.offset_a)
        pb = jnp.asarray(self.offset_b) if self.body_b is None else state.point(self.body_b, self.offset_b)
        return pa, pb

    def _geometry(self, state):
        """(pa, pb, length, unit direction e from b to a, rate dl/dt)."""
        pa, pb = self._points(state)
        d = pa - pb
        length = jnp.sqrt(d @ d)
        e = d / jnp.where(length > 0, length, 1.0)
        va = state.point_velocity(self.body_a, pa)
        vb = jnp.zeros(3) if self.body_b is None else state.point_velocity(self.body_b, pb)
        return pa, pb, length, e, e @ (va - vb)

    def wrenches(self, t, state):
        """[(body, force, torque)] of the spring-damper: -(k (l - l_0) + c l') e at each point, opposite on the two
        bodies (e the unit vector from b's point to a's)."""
        pa, pb, length, e, rate = self._geometry(state)
        return self._wrenches(state, pa, pb, -(self.stiffness * (length - self.rest_length) + self.damping * rate) * e)

    def nonconservative_wrenches(self, t, state):
        """The damper's part alone, -c (dl/dt) e (the elastic part has the potential below)."""
        if self.damping == 0.0:
            return []
        pa, pb, _, e, rate = self._geometry(state)
        return self._wrenches(state, pa, pb, -self.damping * rate * e)

    def _wrenches(self, state, pa, pb, force_a):
        out = [(self.body_a, force_a, jnp.cross(pa - state.position(self.body_a), force_a))]
        if self.body_b is not None:
            out.append((self.body_b, -force_a, jnp.cross(pb - state.position(self.body_b), -force_a)))
        return out

    def potential(self, state):
        """k (l - l_0)^2 / 2 (J), the spring's stored energy."""
        pa, pb = self._points(state)
        d = pa - pb
        return 0.5 * self.stiffness * (jnp.sqrt(d @ d) - self.rest_length) ** 2


@dataclass(eq=False)
class TorsionalSpringDamper:
    """A torsional spring-damper between ``body_a`` and ``body_b`` (or the world) about the unit
    ``axis`` (body a frame), e.g. across a revolute joint: torque on a

        tau_a = -(k (theta - theta_0) + c theta_dot) e,   e = R_a axis,

    and -tau_a on b; theta is the rotation of a relative to b about e, measured between the
    reference vectors ``reference_a`` (body a frame) and ``reference_b`` (body b frame, or world),
    both perpendicular to the axis: theta = atan2((r_b x r_a) . e, r_b . r_a), in (-pi, pi] --
    the spring is meant for relative rotations below half a turn (a damper alone, k = 0, has no
    such limit); theta_dot = (omega_a - omega_b) . e. Potential energy k (theta - theta_0)^2 / 2.
    Units: k in N m/rad, c in N m s/rad."""

    body_a: RigidBody
    body_b: RigidBody | None
    axis: object = (0.0, 1.0, 0.0)
    reference_a: object = (1.0, 0.0, 0.0)
    reference_b: object = (1.0, 0.0, 0.0)
    stiffness: float = 0.0
    damping: float = 0.0
    rest_angle: float = 0.0

    def __post_init__(self):
        if not isinstance(self.body_a, RigidBody) or not (self.body_b is None or isinstance(self.body_b, RigidBody)):
            raise TypeError("TorsionalSpringDamper bodies must be RigidBody (body_b may be None for the world)")
        self.axis = finite_vector("torsional spring axis", self.axis, 3)
        self.reference_a = finite_vector("torsional spring reference_a", self.reference_a, 3)
        self.reference_b = finite_vector("torsional spring reference_b", self.reference_b, 3)
        if min(np.linalg.norm(self.axis), np.linalg.norm(self.reference_a), np.linalg.norm(self.reference_b)) < 1e-12:
            raise ValueError("torsional spring axis and reference vectors must be nonzero")
        self.axis = self.axis / np.linalg.norm(self.axis)
        self.stiffness = nonnegative("torsional spring stiffness", self.stiffness)
        self.damping = nonnegative("torsional spring damping", self.damping)
        self.rest_angle = float(self.rest_angle)

    def angle(self, state):
        """(theta, e): the turn of body a relative to body b about the axis e = R_a axis (rad, from reference_b to
        reference_a), and e (world)."""
        e = state.rotation(self.body_a) @ jnp.asarray(self.axis)
        ra = state.rotation(self.body_a) @ jnp.asarray(self.reference_a)
        Rb = jnp.eye(3) if self.body_b is None else state.rotation(self.body_b)
        rb = Rb @ jnp.asarray(self.reference_b)
        return jnp.arctan2(jnp.cross(rb, ra) @ e, rb @ ra), e

    def wrenches(self, t, state):
        """[(body, force, torque)] of the torsional spring-damper: the torque -(k (theta - theta_0) + c theta') e on
        body a, its reaction on body b."""
        theta, e = self.angle(state)
        omega_b = jnp.zeros(3) if self.body_b is None else state.angular_velocity(self.body_b)
        rate = (state.angular_velocity(self.body_a) - omega_b) @ e
        return self._torques(-(self.stiffness * (theta - self.rest_angle) + self.damping * rate) * e)

    def nonconservative_wrenches(self, t, state):
        """The damper's part alone, -c theta_dot e."""
        if self.damping == 0.0:
            return []
        _, e = self.angle(state)
        omega_b = jnp.zeros(3) if self.body_b is None else state.angular_velocity(self.body_b)
        return self._torques(-self.damping * ((state.angular_velocity(self.body_a) - omega_b) @ e) * e)

    def _torques(self, torque):
        out = [(self.body_a, jnp.zeros(3), torque)]
        if self.body_b is not None:
            out.append((self.body_b, jnp.zeros(3), -torque))
        return out

    def potential(self, state):
        """k (theta - theta_0)^2 / 2 (J), the spring's stored energy."""
        theta, _ = self.angle(state)
        return 0.5 * self.stiffness * (theta - self.rest_angle) ** 2
