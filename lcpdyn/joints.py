"""The lower-pair joints beyond the ball and revolute joints (:mod:`lcpdyn.constraints`) and the
weld (:mod:`lcpdyn.beam`): prismatic, cylindrical, universal and planar joints, and the fixed
joint. Each is a holonomic constraint g(q) = 0 between ``body_a`` and ``body_b`` (or the world,
``body_b=None``) whose rows, Jacobian (from JAX) and multipliers are those of every holonomic
constraint (Peiret 2016 Eq. 2); joints of one class are evaluated together (one ``vmap``).

Notation: p_a, p_b the joint's points (``offset_a`` in body a's frame, ``offset_b`` in body b's or
the world's), d = p_a - p_b; R_a, R_b the bodies' rotations (R_b = I for the world); the unit axes
``axis_a`` (body a's frame) and ``axis_b`` (body b's or the world's), u_a = R_a axis_a,
u_b = R_b axis_b, and n_1, n_2 = R_b (two unit vectors orthogonal to axis_b). Multipliers are
forces (N) on the rows of lengths and moments (N m) on the rows of direction cosines.

==========================  ====  ============================================  ========================
joint                       rows  equations                                     free motion
==========================  ====  ============================================  ========================
:class:`PrismaticJoint`     5     d.n_1 = d.n_2 = 0, relative rotation locked   slide along u_b
:class:`CylindricalJoint`   4     d.n_1 = d.n_2 = 0, u_a.n_1 = u_a.n_2 = 0      slide along and turn
                                                                                about u_b
:class:`UniversalJoint`     4     d = 0, u_a.u_b = 0                            turn about u_a and u_b
:class:`PlanarJoint`        3     d.u_b = 0, u_a.n_1 = u_a.n_2 = 0              move in the plane
                                                                                normal to u_b, turn
                                                                                about it
:class:`FixedJoint`         6     d = 0, relative rotation locked               none
==========================  ====  ============================================  ========================

The locked relative rotation is the weld's: 2 vec(r_0^* (q_b^* q_a)) = 0 with r_0 the bodies'
relative quaternion at their initial orientations. Axes that the equations need aligned (or, for
the universal joint, orthogonal) at the bodies' initial orientations are checked when the joint
is made, and a misaligned pair is a ValueError naming the joint.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from .beam import WeldJoint
from .constraints import BallJoint
from .rotation import np_quaternion_multiply, np_rotation_matrix, quaternion_multiply
from .validation import finite_vector

__all__ = ["PrismaticJoint", "CylindricalJoint", "UniversalJoint", "PlanarJoint", "FixedJoint"]

ALIGNMENT = 1e-9
"""How far from aligned (or, for the universal joint, orthogonal) two axes may start: the sine (or
cosine) of the angle between them."""


def _unit(joint, label, value):
    axis = finite_vector(f"{joint.name} {label}", value, 3)
    size = float(np.linalg.norm(axis))
    if size < 1e-12:
        raise ValueError(f"{joint.name}: {label} must be nonzero")
    return axis / size


def _conjugate(q):
    return q * jnp.array([1.0, -1.0, -1.0, -1.0])


@dataclass(eq=False)
class _AxisJoint(BallJoint):
    """A joint with the unit axes ``axis_a`` (body a's frame) and ``axis_b`` (body b's frame or the
    world) and two unit vectors orthogonal to axis_b (``_normals``, in the same frame)."""

    axis_a: object = (0.0, 0.0, 1.0)
    axis_b: object = (0.0, 0.0, 1.0)
    stack_fields = ("offset_a", "offset_b", "anchor_velocity", "axis_a", "axis_b", "_normals")
    parallel_axes = False  # the class's equations need axis_a and axis_b parallel at the start

    def __post_init__(self):
        super().__post_init__()
        self.axis_a = _unit(self, "axis_a", self.axis_a)
        self.axis_b = _unit(self, "axis_b", self.axis_b)
        helper = np.eye(3)[int(np.argmin(np.abs(self.axis_b)))]
        first = np.cross(self.axis_b, helper)
        first /= np.linalg.norm(first)
        self._normals = np.array([first, np.cross(self.axis_b, first)])
        if self.parallel_axes:
            self._require_parallel()

    def _initial_axes(self):
        """(u_a, u_b) at the bodies' initial orientations (world)."""
        Ra = np_rotation_matrix(self.body_a.orientation)
        Rb = np.eye(3) if self.body_b is None else np_rotation_matrix(self.body_b.orientation)
        return Ra @ self.axis_a, Rb @ self.axis_b

    def _require_parallel(self):
        u_a, u_b = self._initial_axes()
        sine = float(np.linalg.norm(np.cross(u_a, u_b)))
        if sine > ALIGNMENT:
            raise ValueError(
                f"{self.name}: axis_a and axis_b must be parallel at the bodies' initial orientations "
                f"(the sine of the angle between them is {sine:.3g})"
            )

    def _frame(self, state):
        """(u_a, u_b, n_1, n_2) in the world."""
        Ra = state.rotation(self.body_a)
        Rb = jnp.eye(3) if self.body_b is None else state.rotation(self.body_b)
        normals = jnp.asarray(self._normals)
        return Ra @ jnp.asarray(self.axis_a), Rb @ jnp.asarray(self.axis_b), Rb @ normals[0], Rb @ normals[1]


@dataclass(eq=False)
class PrismaticJoint(_AxisJoint):
    """A slider: body a translates along ``axis_b`` (body b's frame, or the world) without
    turning relative to body b -- d.n_1 = d.n_2 = 0 and the relative rotation locked (5
    equations). ``axis_a`` is not read. The joint's coordinate is d.u_b (m)."""

    name: str = "prismatic joint"
    stack_fields = ("offset_a", "offset_b", "anchor_velocity", "axis_a", "axis_b", "_normals", "_initial")
    joint_rows = 5

    def __post_init__(self):
        super().__post_init__()
        q_b = np.array([1.0, 0.0, 0.0, 0.0]) if self.body_b is None else self.body_b.orientation
        self._initial = np_quaternion_multiply(q_b * np.array([1.0, -1.0, -1.0, -1.0]), self.body_a.orientation)

    def residual(self, state, t=0.0):
        pa, pb = self._points(state, t)
        d = pa - pb
        _, _, n1, n2 = self._frame(state)
        q_a = state.quaternion(self.body_a)
        q_b = jnp.array([1.0, 0.0, 0.0, 0.0]) if self.body_b is None else state.quaternion(self.body_b)
        error = quaternion_multiply(_conjugate(jnp.asarray(self._initial)), quaternion_multiply(_conjugate(q_b), q_a))
        return jnp.concatenate([jnp.stack([d @ n1, d @ n2]), 2.0 * jnp.sign(error[0] + 1e-300) * error[1:]])


@dataclass(eq=False)
class CylindricalJoint(_AxisJoint):
    """A slider that also turns: body a translates along and rotates about the common axis
    ``axis_a`` = ``axis_b`` -- d.n_1 = d.n_2 = 0, u_a.n_1 = u_a.n_2 = 0 (4 equations). The axes
    must be parallel at the bodies' initial orientations."""

    name: str = "cylindrical joint"
    joint_rows = 4
    parallel_axes = True

    def residual(self, state, t=0.0):
        pa, pb = self._points(state, t)
        d = pa - pb
        u_a, _, n1, n2 = self._frame(state)
        return jnp.stack([d @ n1, d @ n2, u_a @ n1, u_a @ n2])


@dataclass(eq=False)
class UniversalJoint(_AxisJoint):
    """A Hooke (Cardan) joint: the points coincide and the cross's two arms, ``axis_a`` on body a
    and ``axis_b`` on body b, stay orthogonal -- d = 0, u_a.u_b = 0 (4 equations); body a turns
    relative to body b about u_a and u_b, not about u_a x u_b. The axes must be orthogonal at the
    bodies' initial orientations."""

    name: str = "universal joint"
    joint_rows = 4

    def __post_init__(self):
        super().__post_init__()
        u_a, u_b = self._initial_axes()
        cosine = abs(float(u_a @ u_b))
        if cosine > ALIGNMENT:
            raise ValueError(
                f"{self.name}: axis_a and axis_b must be orthogonal at the bodies' initial orientations "
                f"(the cosine of the angle between them is {cosine:.3g})"
            )

    def residual(self, state, t=0.0):
        pa, pb = self._points(state, t)
        u_a, u_b, _, _ = self._frame(state)
        return jnp.concatenate([pa - pb, jnp.reshape(u_a @ u_b, (1,))])


@dataclass(eq=False)
class PlanarJoint(_AxisJoint):
    """Body a slides on the plane through p_b normal to ``axis_b`` and turns about that normal:
    d.u_b = 0, u_a.n_1 = u_a.n_2 = 0 (3 equations), ``axis_a`` body a's normal, parallel to
    ``axis_b`` at the bodies' initial orientations."""

    name: str = "planar joint"
    joint_rows = 3
    parallel_axes = True

    def residual(self, state, t=0.0):
        pa, pb = self._points(state, t)
        u_a, u_b, n1, n2 = self._frame(state)
        return jnp.stack([(pa - pb) @ u_b, u_a @ n1, u_a @ n2])


@dataclass(eq=False)
class FixedJoint(WeldJoint):
    """URDF's and MJCF's fixed joint: the weld (:class:`lcpdyn.beam.WeldJoint`), points coincident
    and the relative rotation locked at its initial value (6 equations)."""

    name: str = "fixed joint"
