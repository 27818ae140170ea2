"""Geometrically exact beams: nodes as bodies, elements as compliant bilateral rows.

A beam of length L is cut into N two-node elements. Node i is a :class:`~lcpdyn.body.RigidBody`
of the model (position x_i, finite rotation R_i given by its unit quaternion, no small-rotation
assumption), so joints, forces, contacts and rolling constraints attach to a node as to any body.
The nodes carry the beam's lumped mass. Each element is a :class:`~lcpdyn.constraints.Holonomic`
constraint of six compliant rows on the Simo--Reissner strains (gamma, kappa) at its midpoint,
stiffness L_0 S and damping mu L_0 S (Table 1's "proportional damping" mu, in seconds), taken
implicitly by the step, so the papers' stiffnesses run at h = 1 ms; elements of a model are
evaluated together (one ``vmap``). The strains, why one-point integration, the element's error
against the closed forms, and the differences from Bauchau 2002: the documentation's
``docs/theory/beams.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from .body import RigidBody
from .constraints import BallJoint, Holonomic
from .precision import float64
from .rotation import (
    np_quaternion_from_matrix,
    np_quaternion_multiply,
    quaternion_multiply,
    rotation_matrix,
    rotation_vector,
)
from .validation import finite_vector, nonnegative, positive

__all__ = ["BeamSection", "BeamElement", "Beam", "add_beam", "WeldJoint", "TABLE_1"]


@dataclass(frozen=True)
class BeamSection:
    """Sectional properties of a uniform beam (SI units).

    axial_stiffness EA (N), shear_stiffness GA_2 = GA_3 (N; or a pair), torsional_stiffness GJ
    (N m^2), bending_stiffness EI_2 = EI_3 (N m^2; or a pair), mass_per_length rho A (kg/m),
    polar_inertia_per_length i_p = rho J (kg m; I_2 = I_3 = i_p / 2) and proportional_damping mu
    (s): damping forces mu S (d e / dt)."""

    axial_stiffness: float
    shear_stiffness: object
    torsional_stiffness: float
    bending_stiffness: object
    mass_per_length: float
    polar_inertia_per_length: float
    proportional_damping: float = 0.0

    def __post_init__(self):
        for name in ("axial_stiffness", "torsional_stiffness", "mass_per_length", "polar_inertia_per_length"):
            object.__setattr__(self, name, positive(f"beam section {name}", getattr(self, name)))
        for name in ("shear_stiffness", "bending_stiffness"):
            pair = np.broadcast_to(finite_vector(f"beam section {name}", getattr(self, name)), (2,))
            for value in pair:
                positive(f"beam section {name}", float(value))
            object.__setattr__(self, name, (float(pair[0]), float(pair[1])))
        object.__setattr__(
            self, "proportional_damping", nonnegative("beam section proportional_damping", self.proportional_damping)
        )

    @property
    def stiffness(self) -> np.ndarray:
        """S = (EA, GA_2, GA_3, GJ, EI_2, EI_3), per unit length."""
        return np.array(
            [self.axial_stiffness, *self.shear_stiffness, self.torsional_stiffness, *self.bending_stiffness]
        )

    @classmethod
    def bauchau_2002(cls, set_number: int) -> tuple[BeamSection, float]:
        """(section, length in m) of Bauchau 2002 Table 1, set 1, 2 or 3."""
        if set_number not in TABLE_1:
            raise ValueError(f"Bauchau 2002 Table 1 has sets 1, 2 and 3, got {set_number!r}")
        row = dict(TABLE_1[set_number])
        length = row.pop("length")
        return cls(**row), length


TABLE_1 = {
    n: {
        "axial_stiffness": 44.0e6,
        "bending_stiffness": bending,
        "torsional_stiffness": torsion,
        "shear_stiffness": shear,
        "mass_per_length": mass,
        "polar_inertia_per_length": inertia,
        "proportional_damping": 0.001,
        "length": length,
    }
    for n, bending, torsion, shear, mass, inertia, length in (
        (1, 29.9e3, 23.1e3, 14.0e6, 1.61, 11.0e-3, 3.75),
        (2, 29.9e3, 23.1e3, 2.8e6, 4.16, 0.86e-3, 4.0),
        (3, 11.6e3, 281.0e3, 2.8e6, 1.61, 0.86e-3, 0.5),
    )
}
"""Bauchau 2002 Table 1 in SI units (the "mg.m" inertias read as 1e-3 kg m, module docstring)."""


def _conjugate(a):
    return a * jnp.array([1.0, -1.0, -1.0, -1.0])


def element_strains(x_a, q_a, x_b, q_b, rest_length):
    """e = (gamma, kappa) (6,) of the element between nodes (x_a, q_a) and (x_b, q_b) (module
    docstring)."""
    q_a = q_a / jnp.sqrt(q_a @ q_a)
    q_b = q_b / jnp.sqrt(q_b @ q_b)
    relative = quaternion_multiply(_conjugate(q_a), q_b)
    relative = jnp.where(relative[0] < 0.0, -relative, relative)  # the shorter of the two rotations
    half = relative + jnp.array([1.0, 0.0, 0.0, 0.0])  # sqrt(r) = (1 + r) / |1 + r| for w >= 0
    middle = quaternion_multiply(q_a, half / jnp.sqrt(half @ half))
    gamma = rotation_matrix(middle).T @ (x_b - x_a) / rest_length - jnp.array([1.0, 0.0, 0.0])
    kappa = rotation_vector(relative) / rest_length
    return jnp.concatenate([gamma, kappa])


@dataclass(eq=False)
class BeamElement(Holonomic):
    """One two-node element: six compliant rows g = e - e_0 between ``node_a`` and ``node_b``
    (module docstring) with stiffness L_0 S and damping mu L_0 S. Built by :func:`add_beam`."""

    function: object = None
    size: int = 6
    name: str = "beam element"
    node_a: RigidBody = None
    node_b: RigidBody = None
    section: BeamSection = None
    rest_length: float = 1.0
    reference: object = (0.0,) * 6

    stack_fields = ("rest_length", "reference")

    def __post_init__(self):
        if not isinstance(self.node_a, RigidBody) or not isinstance(self.node_b, RigidBody):
            raise TypeError(f"{self.name}: node_a and node_b must be RigidBody nodes")
        if not isinstance(self.section, BeamSection):
            raise TypeError(f"{self.name}: section must be a BeamSection")
        self.rest_length = positive(f"{self.name}: rest_length", self.rest_length)
        self.reference = finite_vector(f"{self.name}: reference strains", self.reference, 6)
        self.size = 6
        self.time_dependent = False
        self.bodies = (self.node_a, self.node_b)
        self.stiffness = self.rest_length * self.section.stiffness
        self.damping = self.section.proportional_damping * self.stiffness
        self._check_compliance()

    def residual(self, state, t=0.0):
        strains = element_strains(
            state.position(self.node_a),
            state.quaternion(self.node_a),
            state.position(self.node_b),
            state.quaternion(self.node_b),
            self.rest_length,
        )
        return strains - jnp.asarray(self.reference)

    def strains(self, q_a, q_b) -> np.ndarray:
        """e - e_0 (6,) from the nodes' coordinates (7,) each (NumPy in, NumPy out)."""
        q_a, q_b = np.asarray(q_a, float), np.asarray(q_b, float)
        with float64():
            value = np.asarray(element_strains(q_a[:3], q_a[3:], q_b[:3], q_b[3:], self.rest_length))
        return value - self.reference

    def stress_resultants(self, q_a, q_b) -> np.ndarray:
        """(N, V_2, V_3, T, M_2, M_3) (N and N m, in the element's frame R_m): S (e - e_0), the
        elastic part."""
        return self.section.stiffness * self.strains(q_a, q_b)


@dataclass(eq=False)
class WeldJoint(BallJoint):
    """A clamp: the ball joint's points coincide and the relative rotation of ``body_a`` to
    ``body_b`` (or to the world) keeps its initial value -- three more equations,
    2 vec(r_0^* (q_b^* q_a)) = 0 (the rotation error's vector, ~ its rotation vector for small
    errors), with r_0 the relative quaternion at the bodies' initial orientations."""

    name: str = "weld joint"
    stack_fields = ("offset_a", "offset_b", "anchor_velocity", "_initial")
    joint_rows = 6

    def __post_init__(self):
        super().__post_init__()
        q_b = np.array([1.0, 0.0, 0.0, 0.0]) if self.body_b is None else self.body_b.orientation
        conjugate = q_b * np.array([1.0, -1.0, -1.0, -1.0])
        self._initial = np_quaternion_multiply(conjugate, self.body_a.orientation)

    def residual(self, state, t=0.0):
        pa, pb = self._points(state, t)
        q_a = state.quaternion(self.body_a)
        q_b = jnp.array([1.0, 0.0, 0.0, 0.0]) if self.body_b is None else state.quaternion(self.body_b)
        error = quaternion_multiply(_conjugate(jnp.asarray(self._initial)), quaternion_multiply(_conjugate(q_b), q_a))
        return jnp.concatenate([pa - pb, 2.0 * jnp.sign(error[0] + 1e-300) * error[1:]])


@dataclass(eq=False)
class Beam:
    """The nodes (bodies, root first) and elements of a beam added to a model by :func:`add_beam`."""

    name: str
    section: BeamSection
    length: float
    nodes: list
    elements: list

    @property
    def root(self) -> RigidBody:
        """The beam's first node (a RigidBody): where it is clamped or jointed."""
        return self.nodes[0]

    @property
    def tip(self) -> RigidBody:
        """The beam's last node (a RigidBody)."""
        return self.nodes[-1]


def add_beam(model, name, section, start, end, elements, *, normal=(0.0, 0.0, 1.0), velocity=(0.0, 0.0, 0.0)):
    """A straight beam from ``start`` to ``end`` (world, m) in ``elements`` equal elements, added to
    ``model``: N + 1 node bodies named ``{name}[i]`` and N :class:`BeamElement` constraints.

    Node frames: e_1 along the beam, e_3 the part of ``normal`` perpendicular to it (the section's
    axis of I_3 / bending stiffness EI_3), e_2 = e_3 x e_1. ``velocity``: initial velocity of
    every node (m/s, world). Returns the :class:`Beam`."""
    if not isinstance(section, BeamSection):
        raise TypeError(f"beam {name!r}: section must be a BeamSection, got {type(section).__name__}")
    if isinstance(elements, bool) or not isinstance(elements, (int, np.integer)) or elements < 1:
        raise ValueError(f"beam {name!r}: elements must be an integer >= 1, got {elements!r}")
    start = finite_vector(f"beam {name!r}: start", start, 3)
    end = finite_vector(f"beam {name!r}: end", end, 3)
    length = float(np.linalg.norm(end - start))
    if not length > 0.0:
        raise ValueError(f"beam {name!r}: start and end coincide")
    e1 = (end - start) / length
    normal = finite_vector(f"beam {name!r}: normal", normal, 3)
    e3 = normal - (normal @ e1) * e1
    if np.linalg.norm(e3) < 1e-9 * max(np.linalg.norm(normal), 1e-300):
        raise ValueError(f"beam {name!r}: normal {normal.tolist()} is parallel to the beam")
    e3 /= np.linalg.norm(e3)
    orientation = np_quaternion_from_matrix(np.column_stack([e1, np.cross(e3, e1), e3]))
    step = length / elements
    nodes = []
    for i in range(elements + 1):
        share = 0.5 if i in (0, elements) else 1.0
        mass = share * step * section.mass_per_length
        polar = share * step * section.polar_inertia_per_length
        nodes.append(
            model.add_body(
                RigidBody(
                    f"{name}[{i}]",
                    mass,
                    (polar, 0.5 * polar, 0.5 * polar),
                    position=start + i * step * e1,
                    orientation=orientation,
                    velocity=velocity,
                )
            )
        )
    members = []
    for i in range(elements):
        element = BeamElement(
            name=f"{name} element {i}", node_a=nodes[i], node_b=nodes[i + 1], section=section, rest_length=step
        )
        element.reference = element.strains(
            np.concatenate([nodes[i].position, nodes[i].orientation]),
            np.concatenate([nodes[i + 1].position, nodes[i + 1].orientation]),
        )
        members.append(model.add_constraint(element))
    return Beam(name, section, length, nodes, members)
