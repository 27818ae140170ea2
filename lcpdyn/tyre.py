"""Moreland's deformable tyre (Bauchau 2002 Sec. 7, Eqs. 35-43; Table 2).

The tyre's lateral and yaw deformations are described by two wheels (Bauchau 2002 Fig. 2): the
actual wheel, which carries the mass, and a *fictitious* wheel aligned with the tyre's footprint,
displaced by Delta along the actual wheel's axle and yawed by Psi. The tyre's law gives the
cornering force F = k_1 Delta + mu_1 Delta_dot and the aligning torque M = k_2 Psi + mu_2 Psi_dot
(Eq. 37), and Eq. (38) ties them to the yaw's cornering force.

:meth:`MorelandTyre.attach` (reached as ``model.add_contact(DiskContact(wheel, ...),
tyre=MorelandTyre(...))``) makes the fictitious wheel a body of the model, ``{wheel}/footprint``,
with ``mass_fraction`` (default 1e-3) of the wheel's mass (Bauchau's is massless), and writes
every relation as a constraint of the existing kinds -- three rigid holonomic rows, a spin row,
two compliant rows for Delta and Psi, Eq. (38) as a non-holonomic row, the disk contact on the
footprint -- so the stepper is unchanged. The equations and each row: the documentation's
``docs/theory/tyre.md``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from .body import RigidBody
from .compilation import jit
from .constraints import Holonomic, Nonholonomic
from .precision import float64
from .rotation import np_rotation_matrix, rotation_matrix
from .validation import positive

__all__ = ["MorelandTyre", "TABLE_2", "deformation"]

TABLE_2 = {"k1": 0.3e6, "k2": 0.8e3, "mu1": 0.6e3, "mu2": 2.5, "C_psi": 9.5e-6, "c1": 0.04}
"""Bauchau 2002 Table 2 in SI units: k_1 (N/m), k_2 (N m/rad), mu_1 (N s/m), mu_2 (N m s/rad),
C_Psi (1/N), c_1 (s)."""


def _frames(n, x_l, R_l, axis, x_f, R_f):
    """(e_3^l, d_1, d_2, c_3, Delta, Psi) of a wheel pair (JAX; module docstring)."""
    e3 = R_l @ axis
    c = jnp.cross(n, e3)
    d2 = c / jnp.sqrt(c @ c)
    d1 = jnp.cross(d2, e3)
    c3 = R_f @ axis
    delta = (x_f - x_l) @ e3
    psi = jnp.arctan2(-(c3 @ d2), c3 @ e3)
    return e3, d1, d2, c3, delta, psi


def deformation(normal, axis, q_wheel, q_footprint):
    """(Delta (m), Psi (rad)), shape (steps, 2), from the coordinates (steps, 7) -- position and
    quaternion, e.g. a trajectory's ``position[:, i]`` and ``quaternion[:, i]`` side by side -- of
    the wheel and of its footprint wheel, for the plane ``normal`` and the wheel's body-frame
    ``axis`` (NumPy)."""
    q_wheel, q_footprint = np.atleast_2d(q_wheel), np.atleast_2d(q_footprint)
    n, axis = jnp.asarray(normal, float), jnp.asarray(axis, float)

    def one(a, b):
        *_, delta, psi = _frames(n, a[:3], rotation_matrix(a[3:]), axis, b[:3], rotation_matrix(b[3:]))
        return jnp.stack([delta, psi])

    with float64():
        return np.asarray(jit(jax.vmap(one))(q_wheel, q_footprint))


@dataclass(frozen=True)
class MorelandTyre:
    """Moreland's tyre constants (Bauchau 2002 Eqs. 37-38, SI units): lateral stiffness ``k1``
    (N/m) and damping ``mu1`` (N s/m), yaw stiffness ``k2`` (N m/rad) and damping ``mu2``
    (N m s/rad), yaw compliance ``C_psi`` (1/N) and yaw time constant ``c1`` (s); all > 0 but
    ``mu1``, ``mu2`` (>= 0). ``mass_fraction``: the footprint wheel's mass and inertia as a
    fraction of the wheel's (module docstring), in (0, 0.1]."""

    k1: float = TABLE_2["k1"]
    k2: float = TABLE_2["k2"]
    mu1: float = TABLE_2["mu1"]
    mu2: float = TABLE_2["mu2"]
    C_psi: float = TABLE_2["C_psi"]
    c1: float = TABLE_2["c1"]
    mass_fraction: float = 1e-3

    def __post_init__(self):
        for name in ("k1", "k2", "C_psi", "c1", "mass_fraction"):
            object.__setattr__(self, name, positive(f"Moreland tyre {name}", getattr(self, name)))
        for name in ("mu1", "mu2"):
            value = float(getattr(self, name))
            if not (math.isfinite(value) and value >= 0.0):
                raise ValueError(f"Moreland tyre {name} must be finite and >= 0, got {getattr(self, name)!r}")
            object.__setattr__(self, name, value)
        if self.mass_fraction > 0.1:
            raise ValueError(
                f"Moreland tyre mass_fraction must be at most 0.1 (the footprint wheel stands for a massless "
                f"one), got {self.mass_fraction!r}"
            )

    def attach(self, model, contact):
        """Add the footprint wheel of ``contact`` (a :class:`~lcpdyn.contact.DiskContact` on the
        actual wheel, not yet in the model) and the tyre's constraints to ``model``; returns the
        disk contact on the footprint wheel (module docstring). Reached through
        ``model.add_contact(contact, tyre=self)``."""
        wheel = contact.body
        if getattr(contact, "radius", None) is None or not hasattr(contact, "axis"):
            raise TypeError(f"a tyre needs a disk contact (radius and axis), got {type(contact).__name__}")
        fraction = self.mass_fraction
        footprint = model.add_body(
            RigidBody(
                f"{wheel.name}/footprint",
                fraction * wheel.mass,
                fraction * wheel.inertia_matrix,
                position=wheel.position,
                orientation=wheel.orientation,
                velocity=wheel.velocity,
                angular_velocity=np_rotation_matrix(wheel.orientation) @ wheel.body_angular_velocity,
            )
        )
        n = jnp.asarray(contact.plane.normal)
        axis = jnp.asarray(contact.axis)
        pair = (wheel, footprint)

        def frames(state):
            return _frames(
                n,
                state.position(wheel),
                state.rotation(wheel),
                axis,
                state.position(footprint),
                state.rotation(footprint),
            )

        def joint(state):
            _, d1, d2, c3, _, _ = frames(state)
            offset = state.position(footprint) - state.position(wheel)
            return jnp.stack([offset @ d1, offset @ d2, c3 @ d1])

        def spin(state):
            e3, _, _, c3, _, _ = frames(state)
            return jnp.stack([state.angular_velocity(footprint) @ c3 - state.angular_velocity(wheel) @ e3])

        def springs(state):
            *_, delta, psi = frames(state)
            return jnp.stack([delta, psi])

        C_psi, c1, k1, mu1 = self.C_psi, self.c1, self.k1, self.mu1

        def eq38(state):
            e3, d1, _, _, _, _ = frames(state)
            offset = state.position(footprint) - state.position(wheel)
            w_l = state.angular_velocity(wheel)
            delta_dot = (state.velocity(footprint) - state.velocity(wheel)) @ e3 + offset @ jnp.cross(w_l, e3)
            psi_dot = (state.angular_velocity(footprint) - w_l) @ d1
            return jnp.stack([C_psi * mu1 * delta_dot + c1 * psi_dot])

        def eq38_rhs(state, t):
            *_, delta, psi = frames(state)
            return jnp.stack([-(C_psi * k1 * delta + psi)])

        label = f"tyre {wheel.name!r}"
        model.add_constraint(Holonomic(joint, 3, name=f"{label}: footprint joint", bodies=pair))
        model.add_constraint(Nonholonomic(spin, 1, name=f"{label}: common spin", bodies=pair))
        model.add_constraint(
            Holonomic(
                springs,
                2,
                name=f"{label}: Eq. 37 springs",
                bodies=pair,
                stiffness=(self.k1, self.k2),
                damping=(self.mu1, self.mu2),
            )
        )
        model.add_constraint(Nonholonomic(eq38, 1, rhs=eq38_rhs, name=f"{label}: Eq. 38", bodies=pair))
        return model.add_contact(dataclasses.replace(contact, body=footprint))
