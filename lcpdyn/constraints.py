"""Bilateral constraints (Peiret 2016 Eq. 2: u = A v).

* :class:`Holonomic` -- g(q) = 0 (m equations). A = dg/dq Gamma(q) comes from JAX; the
  stepper adds drift stabilization through u (see :mod:`lcpdyn.stepper`).
* :class:`BallJoint` -- a holonomic spherical joint: two body points (or a body point and a
  world point) coincide.
* :class:`Nonholonomic` -- a(q, v) = u(q, t) with a linear in v; A = da/dv comes from JAX.

Functions receive a :class:`~lcpdyn.state_view.StateView` and must be JAX-traceable.
"""
from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp

from .body import RigidBody
from .validation import finite_vector

__all__ = ["Holonomic", "BallJoint", "Nonholonomic"]


@dataclass(eq=False)
class Holonomic:
    """g(q) = 0: ``function(state) -> (m,)`` array, using positions and rotations only."""

    function: object
    size: int
    name: str = "holonomic"

    def __post_init__(self):
        if not callable(self.function):
            raise TypeError(f"constraint {self.name!r}: function must be callable as function(state)")
        if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 1:
            raise ValueError(f"constraint {self.name!r}: size must be an integer >= 1, got {self.size!r}")

    def residual(self, state):
        return jnp.reshape(jnp.asarray(self.function(state), dtype=float), (self.size,))


@dataclass(eq=False)
class BallJoint(Holonomic):
    """p_a = p_b: point ``offset_a`` of ``body_a`` coincides with point ``offset_b`` of ``body_b``
    (or with the fixed world point ``offset_b`` if ``body_b`` is None). Three equations."""

    function: object = None
    size: int = 3
    name: str = "ball joint"
    body_a: RigidBody = None
    offset_a: object = (0.0, 0.0, 0.0)
    body_b: RigidBody | None = None
    offset_b: object = (0.0, 0.0, 0.0)

    def __post_init__(self):
        if not isinstance(self.body_a, RigidBody) or not (self.body_b is None or isinstance(self.body_b, RigidBody)):
            raise TypeError("BallJoint needs body_a (RigidBody) and body_b (RigidBody or None for the world)")
        self.offset_a = finite_vector("ball joint offset_a", self.offset_a, 3)
        self.offset_b = finite_vector("ball joint offset_b", self.offset_b, 3)
        self.size = 3

    def residual(self, state):
        pa = state.point(self.body_a, self.offset_a)
        pb = jnp.asarray(self.offset_b) if self.body_b is None else state.point(self.body_b, self.offset_b)
        return pa - pb


@dataclass(eq=False)
class Nonholonomic:
    """a(q, v) = u(q, t): ``function(state) -> (m,)`` linear in the velocities,
    ``rhs(state, t) -> (m,)`` (default zero)."""

    function: object
    size: int
    rhs: object = None
    name: str = "nonholonomic"

    def __post_init__(self):
        if not callable(self.function):
            raise TypeError(f"constraint {self.name!r}: function must be callable as function(state)")
        if self.rhs is not None and not callable(self.rhs):
            raise TypeError(f"constraint {self.name!r}: rhs must be callable as rhs(state, t)")
        if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 1:
            raise ValueError(f"constraint {self.name!r}: size must be an integer >= 1, got {self.size!r}")

    def velocity_residual(self, state):
        return jnp.reshape(jnp.asarray(self.function(state), dtype=float), (self.size,))

    def target(self, state, t):
        if self.rhs is None:
            return jnp.zeros(self.size)
        return jnp.reshape(jnp.asarray(self.rhs(state, t), dtype=float), (self.size,))
