"""Bilateral constraints (Peiret 2016 Eq. 2: u = A v).

* :class:`Holonomic` -- g(q, t) = 0 (m equations). A = dg/dq Gamma(q) and the rheonomic rate
  dg/dt come from JAX; the stepper imposes A v+ = -dg/dt plus drift stabilization through u
  (see :mod:`lcpdyn.stepper`). With ``stiffness`` the rows are *compliant* instead of rigid:
  the multiplier is the elastic force lam = -k g - c dg/dt of a potential k g^2 / 2 with a
  damper c, taken implicitly in the step ("Compliant bilateral rows" in :mod:`lcpdyn.stepper`;
  the elements of :mod:`lcpdyn.beam` are such rows).
* :class:`BallJoint` -- a holonomic spherical joint: two body points (or a body point and a
  world point, which may move at a constant ``anchor_velocity``) coincide.
* :class:`RevoluteJoint` -- a ball joint whose two axes also stay parallel (5 equations).
* :class:`Nonholonomic` -- a(q, v) = u(q, t) with a linear in v; A = da/dv comes from JAX.

Functions receive a :class:`~lcpdyn.state_view.StateView` and must be JAX-traceable.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from .body import RigidBody
from .validation import finite_vector, nonnegative, positive

__all__ = ["Holonomic", "BallJoint", "RevoluteJoint", "Nonholonomic"]


def _row_values(label, value, size, check):
    """A scalar or (size,) sequence as a (size,) float array, each entry passed through ``check``."""
    array = np.atleast_1d(np.array(value, dtype=object))
    if array.ndim != 1 or array.shape[0] not in (1, size):
        raise ValueError(f"{label} must be a number or {size} numbers (one per row), got {value!r}")
    values = np.array([check(label, x) for x in array], float)
    return np.broadcast_to(values, (size,)).copy()


def _bound(label, value):
    """A row's force bound: a number, ±inf allowed, not NaN."""
    value = float(value)
    if math.isnan(value):
        raise ValueError(f"{label} must be a number or ±inf, got {value!r}")
    return value


def _declared_bodies(name, bodies):
    """``bodies`` checked: None (the constraint may touch every body) or a non-empty sequence of
    distinct RigidBody."""
    if bodies is None:
        return None
    if isinstance(bodies, RigidBody):
        bodies = (bodies,)
    bodies = tuple(bodies)
    if not bodies or not all(isinstance(b, RigidBody) for b in bodies):
        raise TypeError(f"constraint {name!r}: bodies must be None or a non-empty sequence of RigidBody")
    if len({id(b) for b in bodies}) != len(bodies):
        raise ValueError(f"constraint {name!r}: bodies lists a body twice")
    return bodies


@dataclass(eq=False)
class Holonomic:
    """g(q, t) = 0: ``function(state) -> (m,)`` using positions and rotations only, or
    ``function(state, t)`` with ``time_dependent=True`` (rheonomic).

    ``bodies`` (optional): the bodies the function reads. Declared, the Jacobian A = dg/dq Gamma
    is differentiated over their coordinates only (its cost no longer grows with the model's
    body count; the function sees a state holding just those bodies and reading another is an
    error naming it); None (the default) differentiates over every body.

    ``stiffness`` (optional; a number or one per row, > 0, in N per unit of g): the rows are
    compliant -- the row's multiplier is lam = -k g - c dg/dt (potential energy k g^2 / 2,
    counted in the model's potential energy), with ``damping`` c >= 0 (N s per unit of g, a
    number or one per row). None (the default): rigid rows, g = 0 enforced.

    ``unilateral=True``: g(q) >= 0 instead (a joint limit, a stop), each row's multiplier
    lam >= 0 complementary to it as a contact's normal force is (:mod:`lcpdyn.bounded_rows`);
    with ``restitution`` e in [0, 1] a row closing within the step leaves at e times its approach
    rate (Newton's impact law). Rigid rows only."""

    function: object
    size: int
    name: str = "holonomic"
    time_dependent: bool = False
    bodies: object = None
    stiffness: object = None
    damping: object = 0.0
    unilateral: bool = False
    restitution: float = 0.0

    def __post_init__(self):
        if not callable(self.function):
            raise TypeError(f"constraint {self.name!r}: function must be callable as function(state)")
        if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 1:
            raise ValueError(f"constraint {self.name!r}: size must be an integer >= 1, got {self.size!r}")
        self.bodies = _declared_bodies(self.name, self.bodies)
        self._check_compliance()
        self._check_unilateral()

    def _check_unilateral(self):
        self.unilateral = bool(self.unilateral)
        e = nonnegative(f"constraint {self.name!r}: restitution", self.restitution)
        if e > 1.0:
            raise ValueError(f"constraint {self.name!r}: restitution must be in [0, 1], got {self.restitution!r}")
        if e and not self.unilateral:
            raise ValueError(f"constraint {self.name!r}: restitution applies to unilateral rows (unilateral=True)")
        if e and self.stiffness is not None:
            raise ValueError(
                f"constraint {self.name!r}: restitution is for rigid rows; a compliant stop's rebound is its damping's"
            )
        self.restitution = e

    def _check_compliance(self):
        """``stiffness`` and ``damping`` as (size,) arrays (stiffness None: rigid rows)."""
        if self.stiffness is None:
            if np.any(np.asarray(self.damping, dtype=float) != 0.0):
                raise ValueError(f"constraint {self.name!r}: damping needs a stiffness (rigid rows have none)")
            self.damping = np.zeros(self.size)
            return
        self.stiffness = _row_values(f"constraint {self.name!r}: stiffness", self.stiffness, self.size, positive)
        self.damping = _row_values(f"constraint {self.name!r}: damping", self.damping, self.size, nonnegative)

    def residual(self, state, t=0.0):
        """g(q, t) (size,) at ``state`` and time ``t`` (s): the row's position-level residual, zero where the
        constraint holds (Peiret 2016 Eq. 2). Joints evaluate their own equations here; the model differentiates
        it with JAX for the rows A."""
        value = self.function(state, t) if self.time_dependent else self.function(state)
        return jnp.reshape(jnp.asarray(value, dtype=float), (self.size,))


@dataclass(eq=False)
class BallJoint(Holonomic):
    """p_a = p_b: point ``offset_a`` of ``body_a`` coincides with point ``offset_b`` of ``body_b``
    (or with the world point ``offset_b + anchor_velocity t`` if ``body_b`` is None). Three
    equations."""

    function: object = None
    size: int = 3
    name: str = "ball joint"
    body_a: RigidBody = None
    offset_a: object = (0.0, 0.0, 0.0)
    body_b: RigidBody | None = None
    offset_b: object = (0.0, 0.0, 0.0)
    anchor_velocity: object = (0.0, 0.0, 0.0)

    # the numbers a joint's residual reads (arrays): joints of one class, size, anchoring (body or
    # world) and time dependence are evaluated together by the model, vmapped over these
    stack_fields = ("offset_a", "offset_b", "anchor_velocity")
    joint_rows = 3  # equations of the joint (a subclass adding equations says how many)

    def __post_init__(self):
        if not isinstance(self.body_a, RigidBody) or not (self.body_b is None or isinstance(self.body_b, RigidBody)):
            raise TypeError(
                f"{type(self).__name__} needs body_a (RigidBody) and body_b (RigidBody or None for the world)"
            )
        self.offset_a = finite_vector(f"{self.name} offset_a", self.offset_a, 3)
        self.offset_b = finite_vector(f"{self.name} offset_b", self.offset_b, 3)
        self.anchor_velocity = finite_vector(f"{self.name} anchor_velocity", self.anchor_velocity, 3)
        if self.body_b is not None and np.any(self.anchor_velocity != 0):
            raise ValueError(f"{self.name}: anchor_velocity applies only to a world anchor (body_b=None)")
        self.time_dependent = bool(np.any(self.anchor_velocity != 0))
        self.size = self.joint_rows
        self.bodies = (self.body_a,) if self.body_b is None else (self.body_a, self.body_b)
        # the bodies' poses at the joint's assembly, from which its coordinates are measured
        # (lcpdyn.actuators.JointCoordinate), whatever pose the model starts from later
        self.assembly = tuple(
            (np.array(b.position, float), np.array(b.orientation, float)) if b is not None else None
            for b in (self.body_a, self.body_b)
        )
        self._check_compliance()
        self._check_unilateral()

    def _points(self, state, t):
        pa = state.point(self.body_a, self.offset_a)
        if self.body_b is None:
            pb = jnp.asarray(self.offset_b) + jnp.asarray(self.anchor_velocity) * t
        else:
            pb = state.point(self.body_b, self.offset_b)
        return pa, pb

    def residual(self, state, t=0.0):
        pa, pb = self._points(state, t)
        return pa - pb


@dataclass(eq=False)
class RevoluteJoint(BallJoint):
    """A hinge: the ball joint's points coincide and the unit axes ``axis_a`` (body a frame) and
    ``axis_b`` (body b frame, or world) stay parallel -- two more equations,
    (R_a axis_a) . (R_b n_1) = (R_a axis_a) . (R_b n_2) = 0 with n_1, n_2 orthonormal to axis_b."""

    name: str = "revolute joint"
    axis_a: object = (0.0, 1.0, 0.0)
    axis_b: object = (0.0, 1.0, 0.0)
    stack_fields = ("offset_a", "offset_b", "anchor_velocity", "axis_a", "_normals")
    joint_rows = 5

    def __post_init__(self):
        super().__post_init__()
        axes = []
        for label in ("axis_a", "axis_b"):
            axis = finite_vector(f"{self.name} {label}", getattr(self, label), 3)
            if np.linalg.norm(axis) < 1e-12:
                raise ValueError(f"{self.name}: {label} must be nonzero")
            axes.append(axis / np.linalg.norm(axis))
        self.axis_a, self.axis_b = axes
        helper = np.eye(3)[int(np.argmin(np.abs(self.axis_b)))]
        first = np.cross(self.axis_b, helper)
        first /= np.linalg.norm(first)
        self._normals = np.array([first, np.cross(self.axis_b, first)])

    def residual(self, state, t=0.0):
        pa, pb = self._points(state, t)
        axis = state.rotation(self.body_a) @ jnp.asarray(self.axis_a)
        Rb = jnp.eye(3) if self.body_b is None else state.rotation(self.body_b)
        return jnp.concatenate([pa - pb, jnp.stack([axis @ (Rb @ jnp.asarray(n)) for n in self._normals])])


@dataclass(eq=False)
class Nonholonomic:
    """a(q, v) = u(q, t): ``function(state) -> (m,)`` linear in the velocities,
    ``rhs(state, t) -> (m,)`` (default zero). ``bodies``: as for :class:`Holonomic` (A = da/dv
    over the declared bodies' velocities only). ``bounds`` = (lower, upper), numbers or one per
    row (N or N m, ±inf allowed): the row's multiplier is kept within them, and where it reaches
    one the row's equation gives way -- a velocity servo whose effort saturates, dry friction
    in a joint (a bounded block of Peiret 2016 Eq. 30, as a friction model's rows;
    :mod:`lcpdyn.bounded_rows`)."""

    function: object
    size: int
    rhs: object = None
    name: str = "nonholonomic"
    bodies: object = None
    bounds: object = None

    def __post_init__(self):
        if not callable(self.function):
            raise TypeError(f"constraint {self.name!r}: function must be callable as function(state)")
        if self.rhs is not None and not callable(self.rhs):
            raise TypeError(f"constraint {self.name!r}: rhs must be callable as rhs(state, t)")
        if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 1:
            raise ValueError(f"constraint {self.name!r}: size must be an integer >= 1, got {self.size!r}")
        self.bodies = _declared_bodies(self.name, self.bodies)
        if self.bounds is not None:
            if not (isinstance(self.bounds, (tuple, list)) and len(self.bounds) == 2):
                raise ValueError(f"constraint {self.name!r}: bounds must be (lower, upper), got {self.bounds!r}")
            lower, upper = (_row_values(f"constraint {self.name!r}: bounds", x, self.size, _bound) for x in self.bounds)
            if np.any(lower > upper) or np.any(lower == np.inf) or np.any(upper == -np.inf):
                raise ValueError(f"constraint {self.name!r}: bounds need lower <= upper, got {self.bounds!r}")
            self.bounds = (lower, upper)

    def velocity_residual(self, state):
        """a(q) v (size,) at ``state``: the velocity the row constrains (its target is :meth:`target`)."""
        return jnp.reshape(jnp.asarray(self.function(state), dtype=float), (self.size,))

    def target(self, state, t):
        """The row's right-hand side u(q, t) (size,): ``rhs(state, t)``, or zeros without one."""
        if self.rhs is None:
            return jnp.zeros(self.size)
        return jnp.reshape(jnp.asarray(self.rhs(state, t), dtype=float), (self.size,))
