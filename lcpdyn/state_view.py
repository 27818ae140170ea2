"""Named access to body poses and velocities inside JAX traces.

User force and constraint functions receive a :class:`StateView` instead of raw q and v, so
they can be written as ``state.position(wheel)`` rather than with index arithmetic.
"""

from __future__ import annotations

import jax.numpy as jnp

from .rotation import rotation_matrix

__all__ = ["StateView"]


class StateView:
    """Poses and velocities of every body for generalized coordinates q and velocities v.

    ``index`` maps a body (object) to its position in the model's body list. Velocities are
    available only when v was given.
    """

    def __init__(self, index: dict, q, v=None):
        self._index = index
        self.q = q
        self.v = v

    def _i(self, body) -> int:
        try:
            return self._index[id(body)]
        except KeyError:
            raise KeyError(f"body {getattr(body, 'name', body)!r} is not part of this model") from None

    def position(self, body):
        """Centre of mass (world)."""
        i = self._i(body)
        return self.q[7 * i : 7 * i + 3]

    def quaternion(self, body):
        """The body's orientation quaternion (w, x, y, z) (4,)."""
        i = self._i(body)
        return self.q[7 * i + 3 : 7 * i + 7]

    def rotation(self, body):
        """R (body -> world)."""
        return rotation_matrix(self.quaternion(body))

    def point(self, body, offset):
        """World position of the body-fixed point ``offset`` (body frame)."""
        return self.position(body) + self.rotation(body) @ jnp.asarray(offset)

    def velocity(self, body):
        """Centre-of-mass velocity (world)."""
        i = self._i(body)
        return self.v[6 * i : 6 * i + 3]

    def body_angular_velocity(self, body):
        """The body's angular velocity in its own frame (rad/s) (3,): the velocity coordinates' own."""
        i = self._i(body)
        return self.v[6 * i + 3 : 6 * i + 6]

    def angular_velocity(self, body):
        """Angular velocity (world)."""
        return self.rotation(body) @ self.body_angular_velocity(body)

    def point_velocity(self, body, world_point):
        """Velocity of the material point of ``body`` at ``world_point``: v + omega x (p - x)."""
        return self.velocity(body) + jnp.cross(self.angular_velocity(body), world_point - self.position(body))
