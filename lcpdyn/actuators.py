"""Actuators, friction and limits on joints: a joint's coordinate, an effort input
(:class:`JointMotor`), a position servo (:func:`position_servo`, an implicit PD controller as a
compliant row), a velocity servo whose effort saturates (:func:`velocity_servo`), dry friction in
a joint (:func:`joint_friction`) and limit stops (:func:`joint_limit`), the last three bounded
and unilateral rows of the step (:mod:`lcpdyn.bounded_rows`).

A joint's coordinates (:class:`JointCoordinate`) are measured from the bodies' poses when the
joint was made (the model's assembly, where they are zero, as URDF's and MJCF's joint values are
at ``qpos0``; a model may start elsewhere, e.g. at a file's keyframe):

* ``"angle"`` of a :class:`~lcpdyn.constraints.RevoluteJoint` or
  :class:`~lcpdyn.joints.CylindricalJoint`: theta = atan2((r_b x r_a) . u_b, r_b . r_a) in
  (-pi, pi] (rad), the turn of body a relative to body b about u_b = R_b axis_b, between the
  reference vector r_b = R_b n_1 (n_1 orthogonal to axis_b) and the body-a vector that coincided
  with it initially; rate (omega_a - omega_b) . u_b.
* ``"slide"`` of a :class:`~lcpdyn.joints.PrismaticJoint` or cylindrical joint:
  s = (p_a - p_b) . u_b - s_0 (m), s_0 its initial value; rate the points' relative velocity
  along u_b.

A :class:`JointMotor` applies the effort tau = gear * effort(t, state) (N m about u_b, or N along
u_b) to body a and its reaction to body b, as an applied load of the step (its work counts as
energy put in). A :func:`position_servo` is the holonomic row g = q_j - q_target(t) made compliant
with stiffness k_p and damping k_d: its multiplier is the PD effort -k_p g - k_d g', taken
implicitly in the step as every compliant row ("Compliant bilateral rows", :mod:`lcpdyn.stepper`),
so stiff gains stay stable at the step size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from .constraints import Holonomic, Nonholonomic, RevoluteJoint
from .joints import CylindricalJoint, PrismaticJoint
from .rotation import np_rotation_matrix
from .validation import finite_number, positive

__all__ = [
    "JointCoordinate", "JointMotor", "position_servo", "velocity_servo", "joint_friction", "joint_limit", "COORDINATES",
]  # fmt: skip

COORDINATES = {
    "angle": (RevoluteJoint, CylindricalJoint),
    "slide": (PrismaticJoint, CylindricalJoint),
}
"""The joint classes each coordinate applies to."""


def _kind_of(joint, kind):
    """The coordinate asked for, or the joint's only one; a ValueError names the joint otherwise."""
    if kind is None:
        kinds = [name for name, classes in COORDINATES.items() if isinstance(joint, classes)]
        if len(kinds) != 1:
            choice = "has none" if not kinds else f"has {kinds}: name one with kind="
            raise ValueError(f"{getattr(joint, 'name', joint)!r}: a joint coordinate is needed and the joint {choice}")
        return kinds[0]
    if kind not in COORDINATES:
        raise ValueError(f"unknown joint coordinate {kind!r}: choose from {sorted(COORDINATES)}")
    if not isinstance(joint, COORDINATES[kind]):
        names = ", ".join(c.__name__ for c in COORDINATES[kind])
        raise ValueError(f"{getattr(joint, 'name', joint)!r} ({type(joint).__name__}) has no {kind!r} coordinate "
                         f"(joints that have one: {names})")  # fmt: skip
    return kind


@dataclass(eq=False)
class JointCoordinate:
    """One coordinate of ``joint`` (module docstring): ``kind`` ``"angle"`` or ``"slide"`` (None:
    the joint's only one). ``value(state)`` and ``rate(state)`` are JAX-traceable; ``axis(state)``
    is u_b (world)."""

    joint: object
    kind: str | None = None

    def __post_init__(self):
        self.kind = _kind_of(self.joint, self.kind)
        joint = self.joint
        (xa, qa), b = joint.assembly  # the bodies' poses at the joint's assembly
        Ra = np_rotation_matrix(qa)
        Rb = np.eye(3) if b is None else np_rotation_matrix(b[1])
        self._reference_b = np.asarray(joint._normals[0], float)
        self._reference_a = Ra.T @ (Rb @ self._reference_b)  # body a's vector on r_b at the assembly
        if self.kind == "slide":
            pa = xa + Ra @ joint.offset_a
            pb = joint.offset_b if b is None else b[0] + Rb @ joint.offset_b
            self._start = float((pa - pb) @ (Rb @ joint.axis_b))
        self.bodies = (joint.body_a,) if joint.body_b is None else (joint.body_a, joint.body_b)

    def axis(self, state):
        """u_b = R_b axis_b (world): the joint's axis on body b, about or along which the coordinate is measured."""
        joint = self.joint
        Rb = jnp.eye(3) if joint.body_b is None else state.rotation(joint.body_b)
        return Rb @ jnp.asarray(joint.axis_b)

    def sine_cosine(self, state):
        """(y, x) with theta = atan2(y, x) (``"angle"``)."""
        joint = self.joint
        Rb = jnp.eye(3) if joint.body_b is None else state.rotation(joint.body_b)
        rb = Rb @ jnp.asarray(self._reference_b)
        ra = state.rotation(joint.body_a) @ jnp.asarray(self._reference_a)
        return jnp.cross(rb, ra) @ (Rb @ jnp.asarray(joint.axis_b)), rb @ ra

    def value(self, state):
        """The coordinate at ``state``: the angle theta in (-pi, pi] (rad) or the slide s (m), zero at the joint's
        assembly (module docstring)."""
        if self.kind == "angle":
            y, x = self.sine_cosine(state)
            return jnp.arctan2(y, x)
        joint = self.joint
        pa, pb = joint._points(state, 0.0)
        return (pa - pb) @ self.axis(state) - self._start

    def rate(self, state):
        """The coordinate's rate at ``state``: (omega_a - omega_b) . u_b (rad/s), or the points' relative velocity
        along u_b (m/s)."""
        joint = self.joint
        if self.kind == "angle":
            omega_b = jnp.zeros(3) if joint.body_b is None else state.angular_velocity(joint.body_b)
            return (state.angular_velocity(joint.body_a) - omega_b) @ self.axis(state)
        pa, _ = joint._points(state, 0.0)
        vb = jnp.zeros(3) if joint.body_b is None else state.point_velocity(joint.body_b, pa)
        return (state.point_velocity(joint.body_a, pa) - vb) @ self.axis(state)


@dataclass(eq=False)
class JointMotor:
    """An effort on a joint: ``effort(t, state)`` (JAX-traceable; N m for an angle, N for a slide)
    times ``gear``, about or along u_b on body a at the joint's point p_a, and its reaction on body
    b at the same point (so the pair feels no net force or moment). ``kind``: the coordinate it
    drives (None: the joint's only one). A number is a constant effort."""

    joint: object
    effort: object
    gear: float = 1.0
    kind: str | None = None

    def __post_init__(self):
        self.coordinate = JointCoordinate(self.joint, self.kind)
        self.kind = self.coordinate.kind
        if not callable(self.effort):
            constant = finite_number(f"motor on {self.joint.name!r}: effort", self.effort)
            self.effort = lambda t, state: constant
        gear = float(self.gear)
        if not math.isfinite(gear) or gear == 0.0:
            raise ValueError(f"motor on {self.joint.name!r}: gear must be finite and nonzero, got {self.gear!r}")
        self.gear = gear
        self.body_a, self.body_b = self.joint.body_a, self.joint.body_b  # the bodies it loads

    def wrenches(self, t, state):
        """[(body, force, torque)] (N, N m, world) at time ``t``: tau = gear * effort(t, state) on body a about (or
        along) u_b, its reaction on body b."""
        u = self.coordinate.axis(state)
        tau = self.gear * jnp.asarray(self.effort(t, state), dtype=float).reshape(())
        joint = self.joint
        if self.kind == "angle":
            out = [(joint.body_a, jnp.zeros(3), tau * u)]
            if joint.body_b is not None:
                out.append((joint.body_b, jnp.zeros(3), -tau * u))
            return out
        pa, _ = joint._points(state, 0.0)
        force = tau * u
        out = [(joint.body_a, force, jnp.cross(pa - state.position(joint.body_a), force))]
        if joint.body_b is not None:
            out.append((joint.body_b, -force, jnp.cross(pa - state.position(joint.body_b), -force)))
        return out

    def nonconservative_wrenches(self, t, state):
        """All of it: a motor has no potential, its work is energy put in."""
        return self.wrenches(t, state)

    def potential(self, state):
        """0: a motor has no potential energy; its work counts as energy put in."""
        return 0.0


def position_servo(joint, target, stiffness, damping, kind=None, name=None) -> Holonomic:
    """An implicit PD position servo on ``joint``: the compliant holonomic row
    g = q_j - q_target(t) (for an angle the shortest turn, atan2 of the error's sine and cosine)
    with ``stiffness`` k_p (N m/rad or N/m) and ``damping`` k_d (N m s/rad or N s/m); its
    multiplier is the servo's effort -k_p g - k_d g' (module docstring). ``target``: a number or a
    JAX-traceable function of t. Returns the :class:`~lcpdyn.constraints.Holonomic` row to add
    with ``model.add_constraint``."""
    coordinate = JointCoordinate(joint, kind)
    moving = callable(target)  # a constant target is a scleronomic row
    if not moving:
        value = finite_number(f"position servo on {joint.name!r}: target", target)
        target = lambda t: value  # noqa: E731
    goal = target

    def error(state, t=0.0):
        wanted = jnp.asarray(goal(t), dtype=float).reshape(())
        if coordinate.kind == "angle":
            y, x = coordinate.sine_cosine(state)
            c, s = jnp.cos(wanted), jnp.sin(wanted)
            return jnp.reshape(jnp.arctan2(y * c - x * s, x * c + y * s), (1,))
        return jnp.reshape(coordinate.value(state) - wanted, (1,))

    return Holonomic(
        error, 1, name=name or f"position servo on {joint.name}", time_dependent=moving, bodies=coordinate.bodies,
        stiffness=stiffness, damping=damping,
    )  # fmt: skip


def velocity_servo(joint, target, max_effort, kind=None, name=None) -> Nonholonomic:
    """A velocity servo on ``joint`` whose effort saturates: the row q_j' = target(t) (rad/s or
    m/s; a number or a JAX-traceable function of t) with its multiplier -- the motor's torque or
    force -- bounded by ``max_effort`` (N m or N): it drives the joint at the target rate while
    the effort that takes stays within the bound, and with the bound's effort otherwise (a motor
    at its torque limit). Returns the bounded :class:`~lcpdyn.constraints.Nonholonomic` row
    (:mod:`lcpdyn.bounded_rows`)."""
    coordinate = JointCoordinate(joint, kind)
    effort = positive(f"velocity servo on {joint.name!r}: max_effort", max_effort, allow_inf=True)
    if callable(target):
        rhs = lambda state, t: jnp.reshape(jnp.asarray(target(t), dtype=float), (1,))  # noqa: E731
    else:
        value = finite_number(f"velocity servo on {joint.name!r}: target", target)
        rhs = None if value == 0.0 else (lambda state, t: jnp.full(1, value))
    return Nonholonomic(
        lambda state: jnp.reshape(coordinate.rate(state), (1,)), 1, rhs=rhs,
        name=name or f"velocity servo on {joint.name}", bodies=coordinate.bodies, bounds=(-effort, effort),
    )  # fmt: skip


def joint_friction(joint, max_effort, kind=None, name=None) -> Nonholonomic:
    """Dry friction in ``joint``: the row q_j' = 0 with its multiplier bounded by ``max_effort``
    (N m or N): the joint sticks while holding it takes no more, and slides against the bound's
    effort otherwise (Coulomb's law in the joint, a bounded block as a friction model's)."""
    return velocity_servo(joint, 0.0, max_effort, kind, name or f"friction in {joint.name}")


def joint_limit(
    joint, lower=-math.inf, upper=math.inf, restitution=0.0, kind=None, name=None, stiffness=None, damping=0.0
) -> Holonomic:
    """Stops of ``joint`` at ``lower`` and ``upper`` (rad or m, from the assembly; either may be
    infinite): the unilateral rows q_j - lower >= 0 and upper - q_j >= 0 (only the finite ones),
    each pushing like a contact, with Newton's ``restitution`` on impact. An angle's limits lie
    within (-pi, pi). With ``stiffness`` k (N m/rad or N/m) and ``damping`` c a stop is compliant:
    past it the row pushes back with -k g - c g', never pulls, and is inactive in a step that ends
    short of it (:mod:`lcpdyn.bounded_rows`); its rebound is its damping's, so ``restitution`` is
    for rigid stops. Returns the :class:`~lcpdyn.constraints.Holonomic` (``unilateral=True``)."""
    coordinate = JointCoordinate(joint, kind)
    lower, upper = float(lower), float(upper)
    if math.isnan(lower) or math.isnan(upper) or not lower < upper:
        raise ValueError(f"limit of {joint.name!r}: need lower < upper, got [{lower!r}, {upper!r}]")
    if coordinate.kind == "angle" and any(math.isfinite(b) and not -math.pi < b < math.pi for b in (lower, upper)):
        raise ValueError(f"limit of {joint.name!r}: an angle's limits lie within (-pi, pi), got [{lower}, {upper}]")
    signs = [(1.0, lower)] if math.isfinite(lower) else []
    signs += [(-1.0, upper)] if math.isfinite(upper) else []
    if not signs:
        raise ValueError(f"limit of {joint.name!r}: both bounds are infinite")

    def rows(state):
        value = coordinate.value(state)
        return jnp.stack([sign * (value - bound) for sign, bound in signs])

    return Holonomic(
        rows, len(signs), name=name or f"limit of {joint.name}", bodies=coordinate.bodies, unilateral=True,
        restitution=restitution, stiffness=stiffness, damping=damping if stiffness is not None else 0.0,
    )  # fmt: skip
