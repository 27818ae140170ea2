"""Rigid bodies: mass, inertia, initial pose and velocities.

Coordinates of one body in the generalized coordinates q (7 entries): centre-of-mass position
x (world, m) and unit quaternion (w, x, y, z). Velocities in v (6 entries): centre-of-mass
velocity (world, m/s) and angular velocity omega_b in the *body* frame (rad/s), so that the
body's block of the mass matrix M (Peiret 2016 Eq. 1) is the constant diag(m, m, m, I_body).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .rotation import np_rotation_matrix
from .validation import finite_vector, positive

__all__ = ["RigidBody"]


@dataclass(eq=False)
class RigidBody:
    """A rigid body.

    Parameters
    ----------
    name : unique name within a model.
    mass : kg, > 0.
    inertia : body-frame inertia about the centre of mass (kg m^2): 3 principal moments or a
        symmetric positive definite 3 x 3 matrix.
    position : initial centre of mass (m, world).
    orientation : initial unit quaternion (w, x, y, z); normalized here (must not be zero).
    velocity : initial centre-of-mass velocity (m/s, world).
    angular_velocity : initial angular velocity (rad/s) in the *world* frame (converted to the
        body frame internally).
    """

    name: str
    mass: float
    inertia: object
    position: object = (0.0, 0.0, 0.0)
    orientation: object = (1.0, 0.0, 0.0, 0.0)
    velocity: object = (0.0, 0.0, 0.0)
    angular_velocity: object = (0.0, 0.0, 0.0)
    inertia_matrix: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"body name must be a non-empty string, got {self.name!r}")
        label = f"body {self.name!r}"
        self.mass = positive(f"{label}: mass", self.mass)
        inertia = finite_vector(f"{label}: inertia", self.inertia)
        if inertia.shape == (3,):
            if np.any(inertia <= 0):
                raise ValueError(f"{label}: principal moments of inertia must be > 0, got {inertia.tolist()}")
            matrix = np.diag(inertia)
        elif inertia.shape == (3, 3):
            if not np.allclose(inertia, inertia.T, rtol=0, atol=1e-12 * np.abs(inertia).max()):
                raise ValueError(f"{label}: inertia matrix must be symmetric")
            if np.linalg.eigvalsh(inertia).min() <= 0:
                raise ValueError(f"{label}: inertia matrix must be positive definite")
            matrix = inertia
        else:
            raise ValueError(f"{label}: inertia must have shape (3,) or (3, 3), got {inertia.shape}")
        self.inertia_matrix = matrix
        self.position = finite_vector(f"{label}: position", self.position, 3)
        quaternion = finite_vector(f"{label}: orientation", self.orientation, 4)
        norm = np.linalg.norm(quaternion)
        if norm < 1e-12:
            raise ValueError(f"{label}: orientation quaternion must be nonzero")
        self.orientation = quaternion / norm
        self.velocity = finite_vector(f"{label}: velocity", self.velocity, 3)
        self.angular_velocity = finite_vector(f"{label}: angular_velocity", self.angular_velocity, 3)

    @property
    def body_angular_velocity(self) -> np.ndarray:
        """Initial omega_b = R^T omega_world."""
        return np_rotation_matrix(self.orientation).T @ self.angular_velocity
