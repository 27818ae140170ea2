"""Contact geometry: gap functions Phi(q) and contact frames, written once as JAX functions.

Each contact pairs a point set of one rigid body with a fixed :class:`Plane` and gives, for a
body pose (x, R),

* ``gap``: the signed distance Phi (m) between the candidate contact points (Peiret 2016
  Eq. 3; Bauchau 2002 Eq. 4), positive when separated;
* ``point``: the candidate contact point on the body (world), whose material velocity defines
  the slip velocity v_T = D v (Peiret 2016 Eq. 4);
* ``normal`` n (the plane's unit normal) and the tangent basis (t1, t2), right-handed with n:
  t1 x t2 = n.

The Jacobians N = dPhi/dq Gamma and D are produced from these functions by JAX
(:mod:`lcpdyn.model`); nothing here is differentiated by hand.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import jax.numpy as jnp
import numpy as np

from .body import RigidBody
from .rotation import np_rotation_matrix
from .validation import finite_number, finite_vector, nonnegative, positive, unit_vector

__all__ = ["Plane", "PointContact", "SphereContact", "DiskContact", "Contact"]


@dataclass(eq=False)
class Plane:
    """A fixed plane through ``point`` with unit ``normal`` (normalized here).

    ``tangent`` fixes t1 of the plane's own tangent basis (projected onto the plane); by default
    the world x axis projected, or y if x is (nearly) normal. t2 = n x t1.
    """

    point: object = (0.0, 0.0, 0.0)
    normal: object = (0.0, 0.0, 1.0)
    tangent: object = None
    t1: np.ndarray = field(init=False, repr=False)
    t2: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        self.point = finite_vector("plane point", self.point, 3)
        self.normal = unit_vector("plane normal", self.normal, 3)
        guess = np.array([1.0, 0.0, 0.0]) if self.tangent is None else unit_vector("plane tangent", self.tangent, 3)
        t1 = guess - self.normal * (guess @ self.normal)
        if np.linalg.norm(t1) < 1e-9:
            if self.tangent is not None:
                raise ValueError("plane tangent must not be parallel to the normal")
            guess = np.array([0.0, 1.0, 0.0])
            t1 = guess - self.normal * (guess @ self.normal)
        self.t1 = t1 / np.linalg.norm(t1)
        self.t2 = np.cross(self.normal, self.t1)

    @classmethod
    def inclined(cls, angle: float, point=(0.0, 0.0, 0.0)) -> Plane:
        """A plane through ``point`` tilted by ``angle`` (rad) about the world y axis, descending
        along +x: n = (sin a, 0, cos a), t1 = (cos a, 0, -sin a) points downhill, t2 = +y."""
        angle = float(angle)
        if not (math.isfinite(angle) and abs(angle) < math.pi / 2):
            raise ValueError(f"incline angle must be finite with |angle| < pi/2, got {angle!r}")
        return cls(point, (math.sin(angle), 0.0, math.cos(angle)), (math.cos(angle), 0.0, -math.sin(angle)))


@dataclass(eq=False)
class Contact:
    """Base class: a contact of ``body`` with ``plane``.

    ``mu`` (>= 0) is the kinetic Coulomb coefficient; ``mu_static`` (default ``mu``) the static one,
    which must not be below ``mu`` (Bauchau 2002 Eqs. 26-27: sliding |F_f| = mu_k F_n, sticking
    |F_f| <= mu_s F_n). ``normal_law`` makes the contact compliant (a
    :class:`~lcpdyn.compliance.SpringDamperLaw` or :class:`~lcpdyn.compliance.PolynomialLaw` of the
    approach a = -Phi); ``None`` is the rigid contact Phi >= 0. ``friction_profile``, a function
    t -> mu (plain Python, evaluated at the start of each step), replaces both coefficients by a
    road whose grip varies in time (Ikoki 2022 Eq. 36)."""

    body: RigidBody
    plane: Plane
    mu: float
    mu_static: float | None = None
    normal_law: object = None  # None: rigid; else a law of lcpdyn.compliance
    friction_profile: object = None  # optional mu(t) (both coefficients), e.g. a slippery stretch

    def _check(self):
        if not isinstance(self.body, RigidBody):
            raise TypeError(f"contact body must be a RigidBody, got {type(self.body).__name__}")
        if not isinstance(self.plane, Plane):
            raise TypeError(f"contact plane must be a Plane, got {type(self.plane).__name__}")
        label = f"contact on body {self.body.name!r}"
        self.mu = nonnegative(f"{label}: friction coefficient mu", self.mu)
        followed = getattr(self, "_followed_mu", None)  # the value mu_static took from mu, if not given
        if self.mu_static is None or (followed is not None and self.mu_static == followed):
            self.mu_static = self._followed_mu = self.mu  # not given (or not set since): it follows mu
        self.mu_static = nonnegative(f"{label}: static friction coefficient mu_static", self.mu_static)
        if self.friction_profile is not None and not callable(self.friction_profile):
            raise TypeError(f"{label}: friction_profile must be a function of t")
        from .compliance import check_law

        check_law(label, self.normal_law)
        if self.mu_static < self.mu:
            raise ValueError(
                f"{label}: static friction coefficient mu_static = {self.mu_static!r} is below the "
                f"kinetic mu = {self.mu!r} (mu_s >= mu_k is required)"
            )

    def validate(self) -> None:
        """Check the contact's values again as at construction (a coefficient set afterwards is
        named when a simulation is built or run)."""
        post_init = getattr(self, "__post_init__", None)  # a geometry of a user's may have none
        post_init() if post_init is not None else self._check()

    # --- the contact-geometry protocol (what the compiled kinematics calls) ---------------
    # A geometry gives its numbers as ``geometry()`` (a dict of float arrays, fixed shapes per
    # class) and its frame as the pure ``frame_of(p, x, R, compliant)`` of one contact's numbers
    # p: the model stacks the numbers of all contacts of one class and ``vmap``s ``frame_of`` over
    # them, so the numbers are inputs of the compiled kinematics (a parameter sweep compiles
    # once) and the trace does not grow with the number of contacts. A new geometry is a
    # subclass with these two members; nothing in the model or the stepper changes.
    tilt_of = None  # optional staticmethod (p, R) -> h, a validity measure checked against min_sin_tilt

    def geometry(self) -> dict:
        """The plane's numbers (every geometry here is against a fixed plane) plus the class's."""
        return {
            "plane_point": self.plane.point,
            "plane_normal": self.plane.normal,
            "plane_t1": self.plane.t1,
            "plane_t2": self.plane.t2,
        }

    def geometry_key(self) -> tuple:
        """What the traced code depends on besides the numbers: the class and whether the contact
        is compliant (contacts of one key are evaluated together)."""
        return (type(self), self.normal_law is not None)

    @staticmethod
    def frame_of(p, x, R, compliant):
        """(gap, point, normal, t1, t2) of one contact with numbers ``p`` for a body at position
        x with rotation R (JAX, traceable, vmapped over contacts)."""
        raise NotImplementedError

    def frame(self, x, R):
        """(gap, point, normal, t1, t2) for a body at position x with rotation R (JAX)."""
        p = {name: jnp.asarray(value) for name, value in self.geometry().items()}
        return self.frame_of(p, x, R, self.normal_law is not None)

    def outline(self) -> list:
        """Polylines (each (k, 3), m, body frame about the centre of mass) that draw this
        contact's side of the body in pictures and animations (:mod:`lcpdyn.animation`); a
        geometry without one returns [] (the body is then drawn as its axes)."""
        return []

    @property
    def ideal_rolling(self) -> bool:
        """Whether the two tangential rows are bilateral (no slip, no friction law)."""
        return False

    @property
    def ideal_spin(self) -> bool:
        """Whether the contact adds the zero-spin row n . omega = 0."""
        return False

    @property
    def bilateral_rows(self) -> int:
        """Bilateral rows this contact adds to A (ideal rolling: 2, zero spin: 1)."""
        return (2 if self.ideal_rolling else 0) + (1 if self.ideal_spin else 0)


def _circles(axes) -> list:
    """Unit circles (49 points each) about each of the rows of ``axes``."""
    angles = np.linspace(0.0, 2.0 * np.pi, 49)
    out = []
    for k in range(3):
        u, w = axes[(k + 1) % 3], axes[(k + 2) % 3]
        out.append(np.cos(angles)[:, None] * u + np.sin(angles)[:, None] * w)
    return out


@dataclass(eq=False)
class PointContact(Contact):
    """A body-fixed point ``offset`` (body frame, m) against the plane, e.g. a box corner.
    Phi = n . (x + R offset - P); tangent basis: the plane's (t1, t2)."""

    offset: object = (0.0, 0.0, 0.0)

    def __post_init__(self):
        self._check()
        self.offset = finite_vector(f"point contact on {self.body.name!r}: offset", self.offset, 3)

    def geometry(self) -> dict:
        return {**super().geometry(), "offset": self.offset}

    def outline(self) -> list:
        return [np.asarray([np.zeros(3), self.offset])]  # a line from the centre of mass to the point

    @staticmethod
    def frame_of(p, x, R, compliant):
        n = p["plane_normal"]
        point = x + R @ p["offset"]
        gap = n @ (point - p["plane_point"])
        return gap, point, n, p["plane_t1"], p["plane_t2"]


@dataclass(eq=False)
class SphereContact(Contact):
    """A sphere of ``radius`` centred at the body's centre of mass.
    Phi = n . (x - P) - radius; contact point x - radius n; the plane's tangent basis."""

    radius: float = 0.0

    def __post_init__(self):
        self._check()
        self.radius = positive(f"sphere contact on {self.body.name!r}: radius", self.radius)

    def geometry(self) -> dict:
        return {**super().geometry(), "radius": np.float64(self.radius)}

    def outline(self) -> list:
        return [self.radius * c for c in _circles(np.eye(3))]  # three great circles

    @staticmethod
    def frame_of(p, x, R, compliant):
        n = p["plane_normal"]
        gap = n @ (x - p["plane_point"]) - p["radius"]
        reach = p["radius"] - jnp.maximum(-gap, 0.0) if compliant else p["radius"]
        return gap, x - reach * n, n, p["plane_t1"], p["plane_t2"]


@dataclass(eq=False)
class DiskContact(Contact):
    """A thin, sharp-edged disk (a wheel) of ``radius`` rho centred at the body's centre of
    mass, with body-frame unit ``axis`` (the wheel axis e_3^l; default body y as in Peiret 2016
    Table 1), against the plane (normal e_3^k = n).

    Bauchau 2002 Sec. 3, Eqs. (2)-(4): with e = R axis,

        d2 = (n x e)/h,  h = |n x e|,  d3 = e,  d1 = d2 x d3   (d1 points to the contact point)
        point = x + rho d1,  Phi = n . (x - P) - rho h.

    Tangent basis (Bauchau 2002 Eqs. 17-18): t1 = d2, the wheel *driving* direction, and
    t2 = n x d2, the *transverse* direction. With a compliant ``normal_law`` the tyre deflects by
    the approach a = -Phi and the contact point is x + (rho - a/h) d1, on the road (Bauchau 2002
    Eqs. 14-16 use rho - a): a rolling tyre then turns at v / (rho - a).

    The single-point model is undefined when the disk lies flat (h -> 0); the simulation stops
    with :class:`~lcpdyn.stepper.SimulationError` if h falls below this contact's ``min_sin_tilt``
    (default 1e-6; it must lie in (0, 1) and below the disk's initial h, checked here).

    Rolling (Bauchau 2002 Sec. 5, Eq. 19; Schwab–Meijaard 2002 Eq. 4): the rolling constraints are
    zero slip of the candidate contact point in the driving and transverse directions, i.e. the
    contact's two tangential rows D v+ = 0.

    * ``rolling="friction"`` (default): those rows carry the friction model's bounds -- they hold
      (rolling) while the required tangential force stays within the friction limit, are released
      into sliding when it does not, and are re-imposed when the slip falls back to the threshold
      (``regularized``: static branch at |v_T| <= v_th, Bauchau 2002 Sec. 6.3; ``coulomb``: the
      cone's stick/slide complementarity).
    * ``rolling="ideal"``: the rows are bilateral non-holonomic constraints (Peiret 2016 Eq. 2,
      u = 0) -- the wheel never slips; ``mu`` is then unused.
    * ``spin="ideal"`` adds the zero-spin condition n . (omega - 0) = 0 of a finite contact patch
      (Schwab–Meijaard 2003 Sec. 3.3) as one more bilateral row; default ``"free"``.
    """

    radius: float = 0.0
    axis: object = (0.0, 1.0, 0.0)
    min_sin_tilt: float = 1e-6
    rolling: str = "friction"
    spin: str = "free"

    def __post_init__(self):
        self._check()
        if self.rolling not in ("friction", "ideal"):
            raise ValueError(
                f"disk contact on {self.body.name!r}: rolling must be 'friction' or 'ideal', got {self.rolling!r}"
            )
        if self.spin not in ("free", "ideal"):
            raise ValueError(f"disk contact on {self.body.name!r}: spin must be 'free' or 'ideal', got {self.spin!r}")
        label = f"disk contact on {self.body.name!r}"
        self.radius = positive(f"{label}: radius", self.radius)
        self.axis = unit_vector(f"{label}: axis", self.axis, 3)
        self.min_sin_tilt = finite_number(f"{label}: min_sin_tilt", self.min_sin_tilt)
        if not 0.0 < self.min_sin_tilt < 1.0:
            raise ValueError(f"{label}: min_sin_tilt must be in (0, 1), got {self.min_sin_tilt!r}")
        tilt = float(np.linalg.norm(np.cross(self.plane.normal, np_rotation_matrix(self.body.orientation) @ self.axis)))
        if not self.min_sin_tilt < tilt:
            raise ValueError(
                f"{label}: min_sin_tilt = {self.min_sin_tilt!r} is not below the disk's initial tilt "
                f"sine |n x axis| = {tilt!r}: the disk starts (nearly) flat on the plane, where the "
                "single-point disk contact is undefined"
            )

    def geometry(self) -> dict:
        return {
            **super().geometry(),
            "radius": np.float64(self.radius),
            "axis": self.axis,
            "min_sin_tilt": np.float64(self.min_sin_tilt),
        }

    def outline(self) -> list:
        """The rim (radius rho about the axis) and two spokes, which show the wheel turn."""
        axis = self.axis
        seed = np.eye(3)[np.argmin(np.abs(axis))]
        u = np.cross(axis, seed)
        u /= np.linalg.norm(u)
        w = np.cross(axis, u)
        angles = np.linspace(0.0, 2.0 * np.pi, 49)
        rim = self.radius * (np.cos(angles)[:, None] * u + np.sin(angles)[:, None] * w)
        return [rim, self.radius * np.asarray([-u, u]), self.radius * np.asarray([-w, w])]

    @property
    def ideal_rolling(self) -> bool:
        return self.rolling == "ideal"

    @property
    def ideal_spin(self) -> bool:
        return self.spin == "ideal"

    @staticmethod
    def frame_of(p, x, R, compliant):
        n = p["plane_normal"]
        e = R @ p["axis"]
        c = jnp.cross(n, e)
        h = jnp.sqrt(c @ c)
        safe_h = jnp.where(h > p["min_sin_tilt"], h, 1.0)  # keeps the trace NaN-free; checked by the stepper
        d2 = c / safe_h
        d1 = jnp.cross(d2, e)
        gap = n @ (x - p["plane_point"]) - p["radius"] * h
        # a compliant tyre touches the road at radius rho - a (Bauchau 2002 Eq. 14), a = approach
        reach = p["radius"] - jnp.maximum(-gap, 0.0) / safe_h if compliant else p["radius"]
        point = x + reach * d1
        return gap, point, n, d2, jnp.cross(n, d2)

    @staticmethod
    def tilt_of(p, R):
        """h = |n x e| (1 when upright, 0 when lying flat)."""
        c = jnp.cross(p["plane_normal"], R @ p["axis"])
        return jnp.sqrt(c @ c)

    def sin_tilt(self, R):
        """h = |n x e| of this disk at rotation R (JAX)."""
        return self.tilt_of({"plane_normal": jnp.asarray(self.plane.normal), "axis": jnp.asarray(self.axis)}, R)
