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
from .validation import finite_vector, positive, unit_vector

__all__ = ["RigidBody"]


MASS_RANGE = (1e-100, 1e100)
"""Masses (kg) and principal moments of inertia (kg m^2) a body may have: the step forms products
of up to three of them or their inverses (the Delassus operator J M^-1 J^T h^2, the gyroscopic
Newton step's |I omega|^2), which stay normal float64 numbers in this range; at 1e-200 kg the
gyroscopic step divided by an underflowed zero."""

MAX_POSITION = 1e8
"""Largest |coordinate| (m) of a body's initial position: float64 resolves 1.5e-8 m at 1e8 m (the
scale of contact gaps and tolerances), and a body at 1e16 m moving at 2 m/s never moves at all
(its steps of 2 mm are below the 2 m spacing of floats there)."""


@dataclass(eq=False)
class RigidBody:
    """A rigid body.

    Parameters
    ----------
    name : unique name within a model.
    mass : kg, > 0.
    inertia : body-frame inertia about the centre of mass (kg m^2): 3 principal moments or a
        symmetric positive definite 3 x 3 matrix. The principal moments (the matrix's
        eigenvalues) must satisfy the triangle inequalities I1 + I2 >= I3 (and permutations) that
        every real mass distribution does (I1 + I2 - I3 = 2 * integral of z^2 dm >= 0 in principal
        axes); equality is a flat lamina such as Peiret 2016's wheel (0.3 + 0.3 = 0.6). A relative
        slack of 1e-10 absorbs rounding.
    position : initial centre of mass (m, world).
    orientation : initial quaternion (w, x, y, z), any finite nonzero scale: normalized here after
        dividing by its largest entry, so (1e300, 1e300, 0, 0) is the 90-degree turn about x it
        denotes rather than an overflow.
    velocity : initial centre-of-mass velocity (m/s, world).
    angular_velocity : initial angular velocity (rad/s) in the *world* frame (converted to the
        body frame internally).

    The initial kinetic energy, m |v|^2 / 2 + omega . I omega / 2, must be finite (velocities of
    1e200 m/s overflow it): the stepper's energy and its solves would be meaningless.
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
        if not MASS_RANGE[0] <= self.mass <= MASS_RANGE[1]:
            raise ValueError(
                f"{label}: mass {self.mass!r} kg is outside MASS_RANGE = {MASS_RANGE} (lcpdyn.body): products of "
                "masses in the step would underflow or overflow float64; choose units that bring it nearer 1"
            )
        inertia = finite_vector(f"{label}: inertia", self.inertia)
        if inertia.shape == (3,):
            if np.any(inertia <= 0):
                raise ValueError(f"{label}: principal moments of inertia must be > 0, got {inertia.tolist()}")
            matrix, moments = np.diag(inertia), inertia
        elif inertia.shape == (3, 3):
            if not np.allclose(inertia, inertia.T, rtol=0, atol=1e-12 * np.abs(inertia).max()):
                raise ValueError(f"{label}: inertia matrix must be symmetric")
            moments = np.linalg.eigvalsh(inertia)
            if moments.min() <= 0:
                raise ValueError(f"{label}: inertia matrix must be positive definite")
            matrix = inertia
        else:
            raise ValueError(f"{label}: inertia must have shape (3,) or (3, 3), got {inertia.shape}")
        if moments.min() < MASS_RANGE[0] or moments.max() > MASS_RANGE[1]:
            raise ValueError(
                f"{label}: principal moments of inertia {moments.tolist()} kg m^2 leave MASS_RANGE = {MASS_RANGE} "
                "(lcpdyn.body): products of inertias in the step would underflow or overflow float64"
            )
        largest = int(np.argmax(moments))
        if moments.sum() - 2.0 * moments[largest] < -1e-10 * moments[largest]:
            raise ValueError(
                f"{label}: principal moments of inertia {moments.tolist()} violate the triangle "
                f"inequality: {float(moments[largest])!r} > the sum of the other two "
                f"{float(moments.sum() - moments[largest])!r} (no mass distribution has them)"
            )
        self.inertia_matrix = matrix
        self.position = finite_vector(f"{label}: position", self.position, 3)
        if np.abs(self.position).max() > MAX_POSITION:
            raise ValueError(
                f"{label}: position {self.position.tolist()} m lies beyond MAX_POSITION = {MAX_POSITION:g} m from the "
                f"origin: float64 resolves {float(np.spacing(np.abs(self.position).max())):.3g} m there, coarser than "
                "the gaps and steps of a contact; put the origin near the scene"
            )
        self.orientation = unit_vector(f"{label}: orientation", self.orientation, 4)
        self.velocity = finite_vector(f"{label}: velocity", self.velocity, 3)
        self.angular_velocity = finite_vector(f"{label}: angular_velocity", self.angular_velocity, 3)
        with np.errstate(over="ignore"):
            translational = 0.5 * self.mass * float(self.velocity @ self.velocity)
            omega = self.body_angular_velocity
            rotational = 0.5 * float(omega @ matrix @ omega)
        for name, term, value in (
            ("velocity", "m |v|^2 / 2", translational),
            ("angular_velocity", "omega . I omega / 2", rotational),
        ):
            if not np.isfinite(value):
                raise ValueError(f"{label}: {name} overflows the kinetic energy ({term} = {value!r} J)")

    def validate(self) -> None:
        """Check the body's values again (and normalize them) as at construction: a value set
        after construction is named here when a simulation is built or run."""
        self.__post_init__()

    @property
    def body_angular_velocity(self) -> np.ndarray:
        """Initial omega_b = R^T omega_world."""
        return np_rotation_matrix(self.orientation).T @ self.angular_velocity
