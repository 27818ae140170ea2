"""The contact geometry of a wheelset on straight track, in the track's cross-section: where
the two wheels touch their rails as the wheelset shifts sideways, and the quantities the
kinematic (Klingel) motion and the linear wheelset theory are made of -- rolling radii, contact
angles, profile radii at the contact points, the rolling-radius difference and the equivalent
conicity -- and the Klingel wavelength of Schwab & Meijaard 2002, Eq. (9).

Frames (m): track frame x along the track, y to the left, z up; the wheelset's centre is at
(y, z) with roll φ about x, no yaw. With no yaw each contact lies in the vertical plane through
the axle (the plane of symmetry of every circle of the wheel about it), so the problem is
planar and exact: the wheel's meridional profile, rolled and placed, against the rail's profile.

Placement (:class:`TrackPlacement`; the paper's §5 values and the Manchester benchmark's
conventions by default): the wheels' flange backs ``flange_back_distance`` apart (1.360 m), each
wheel's tape circle ``tape_offset`` (0.070 m) outside its flange back, so the tape circles are
1.500 m apart (the paper's "track width"); the gauge ``gauge`` (1.435 m) measured between the
rails' gauge points ``gauge_height`` (14 mm) below their crowns; the rails canted ``cant`` (tan
of the slant, 1/40) towards the track centre about their profile's origin, the profile's own
cant ``profile_cant`` (UIC60's file is already canted 1/40) taken out first; the crowns at
z = 0. The left wheel and rail are the profiles as given (their +y is the field side), the
right ones their mirror images.

The contact between a wheel curve P(s) and a rail curve Q(u) is the pair with collinear
normals and extremal distance -- the planar form of the paper's conditions (Eq. 7: the point on
both surfaces, ε₁ = ε₂ = 0 in rigid contact, and normals collinear, ε₃ = ε₄ = 0): found by the
nearest rail point of each of a dense set of wheel points (a k-d tree), then Newton on (s, u).
The gap is (P − Q) · n_r (positive when apart). :meth:`WheelsetGeometry.equilibrium` finds, for
a lateral shift y, the height z and roll φ at which both gaps vanish (rigid contact on both
rails), by Newton: dg/dz = n_r,z and dg/dφ = n_r · (e_x × (P − c)), exact because the contact
point is stationary (the envelope theorem; Bauchau 2002 §3 for the disk).

Eq. (9): λ = 2π √( (b r₀/γ) · ((ρ_w − ρ_r)/ρ_w) · (b/(b + ρ_r sin α)) ), with γ = tan α the
contact angle's tangent, b half the lateral distance between the contact points, r₀ the rolling
radius, ρ_w the wheel's profile radius at the contact (concave positive) and ρ_r the rail's
(convex positive), all at the centred wheelset. Written with the wheel's curvature κ_w = 1/ρ_w
so that a cone (κ_w = 0) needs no infinity. The kinematic alternative is the equivalent
conicity λ_e = (r_L − r_R)/(2y) for a small shift y and Klingel's λ = 2π √(b r₀/λ_e)
(Wickens' circular-profile closed form of λ_e has (b − r₀ γ) where Eq. (9) has b: the two differ
by that factor, ~1.5 % at γ = 0.025).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree

from .profiles import Profile

__all__ = ["TrackPlacement", "ContactPoint", "WheelsetGeometry", "eq9_wavelength", "klingel_wavelength"]


@dataclass(frozen=True)
class TrackPlacement:
    """Where the profiles sit (module docstring); lengths in m, cants as tan of the slant."""

    gauge: float = 1.435
    gauge_height: float = 0.014
    flange_back_distance: float = 1.360
    tape_offset: float = 0.070
    nominal_radius: float = 0.46
    cant: float = 1 / 40
    profile_cant: float = 1 / 40

    def __post_init__(self):
        for name in ("gauge", "flange_back_distance", "nominal_radius"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be positive, got {value!r}")
        for name in ("gauge_height", "tape_offset", "cant", "profile_cant"):
            if not math.isfinite(getattr(self, name)):
                raise ValueError(f"{name} must be finite, got {getattr(self, name)!r}")


@dataclass(frozen=True)
class ContactPoint:
    """One wheel's contact (track frame, m): ``gap`` (positive apart), ``point`` (2,) on the
    rail, ``normal`` (2,) the rail's outward unit normal, ``s`` and ``u`` the arc lengths on the
    wheel and rail profiles, ``radius`` the wheel's rolling radius there, ``angle`` the contact
    angle (rad, the normal's tilt from vertical, positive when it leans towards the track
    centre: the flange side), ``wheel_radius`` ρ_w (concave positive; inf on a cone) and
    ``rail_radius`` ρ_r (convex positive), ``wheel_curvature`` κ_w = 1/ρ_w."""

    gap: float
    point: np.ndarray
    normal: np.ndarray
    s: float
    u: float
    radius: float
    angle: float
    wheel_curvature: float
    rail_radius: float

    @property
    def wheel_radius(self) -> float:
        """The wheel's rolling radius at the contact (m; inf for zero curvature)."""
        return math.inf if self.wheel_curvature == 0 else 1.0 / self.wheel_curvature


class WheelsetGeometry:
    """The wheelset's contact geometry on straight track (module docstring) for a wheel and a
    rail :class:`~lcpdyn.profiles.Profile` (left side; the right is mirrored) and a
    :class:`TrackPlacement`."""

    def __init__(self, wheel: Profile, rail: Profile, placement: TrackPlacement = TrackPlacement(),
                 samples: int = 4000):  # fmt: skip
        self.placement = p = placement
        self.wheel_profile, self.rail_profile = wheel, rail
        # rails: cant, crown at z = 0, gauge point at y = +-gauge/2
        turn = math.atan(p.cant) - math.atan(p.profile_cant)  # more cant: the head turns towards -y (the centre)
        left = rail.transformed(turn)
        crown = _highest(left)
        left = left.transformed(0.0, (-crown[0], -crown[1]))
        gauge_y = _gauge_point(left, p.gauge_height)
        left = left.transformed(0.0, (p.gauge / 2 - gauge_y, 0.0))
        self.rails = (left, left.mirrored())
        # wheels in the wheelset frame (axle along y through the origin): (y, -r)
        tape = p.flange_back_distance / 2 + p.tape_offset
        self.tape = tape
        self.wheels = (wheel, wheel.mirrored())
        self._wheel_offset = (tape, -tape)
        u = [np.linspace(0.0, r.length, samples) for r in self.rails]
        self._rail_samples = [(ui, r.point(ui)) for ui, r in zip(u, self.rails)]
        self._trees = [cKDTree(points) for _, points in self._rail_samples]
        self._wheel_s = [np.linspace(0.0, w.length, samples) for w in self.wheels]

    # --- one wheel ---
    def _wheel_point(self, side, s, centre, roll, order=0):
        """The wheel profile's point (order 0) or its s-derivatives in the track frame."""
        y_r = self.wheels[side].derivative(s, order) if order else self.wheels[side].point(s)
        local = np.stack([y_r[..., 0] + (self._wheel_offset[side] if order == 0 else 0.0), -y_r[..., 1]], axis=-1)
        c, sn = math.cos(roll), math.sin(roll)
        world = local @ np.array([[c, sn], [-sn, c]])
        return world + (np.asarray(centre) if order == 0 else 0.0)

    def contact(self, side: int, centre, roll: float) -> ContactPoint:
        """The contact of wheel ``side`` (0 left, 1 right) with its rail for the wheelset's
        centre (y, z) and roll φ (rad)."""
        rail = self.rails[side]
        wheel_points = self._wheel_point(side, self._wheel_s[side], centre, roll)
        distance, index = self._trees[side].query(wheel_points)
        u_near = self._rail_samples[side][0][index]
        signed = np.einsum("ij,ij->i", wheel_points - rail.point(u_near), rail.normal(u_near))
        k = int(np.argmin(np.where(signed < 0, signed, distance)))
        s, u = float(self._wheel_s[side][k]), float(u_near[k])
        for _ in range(30):  # Newton on (P - Q).t_r = 0 and t_w x t_r = 0
            P, dP, ddP = (self._wheel_point(side, s, centre, roll, order) for order in (0, 1, 2))
            Q, dQ, ddQ = rail.point(u), rail.derivative(u), rail.derivative(u, 2)
            d = P - Q
            F = np.array([d @ dQ, dP[0] * dQ[1] - dP[1] * dQ[0]])
            J = np.array([[dP @ dQ, -dQ @ dQ + d @ ddQ],
                          [ddP[0] * dQ[1] - ddP[1] * dQ[0], dP[0] * ddQ[1] - dP[1] * ddQ[0]]])  # fmt: skip
            step = np.linalg.solve(J, -F)
            s = float(np.clip(s + step[0], 0.0, self.wheels[side].length))
            u = float(np.clip(u + step[1], 0.0, rail.length))
            if np.abs(step).max() < 1e-14:
                break
        ends = [name for name, value, length in (("wheel", s, self.wheels[side].length), ("rail", u, rail.length))
                if not 0.0 < value < length]  # fmt: skip
        if ends:
            raise ValueError(f"the {'left' if side == 0 else 'right'} contact runs off the end of the "
                             f"{' and '.join(ends)} profile at the wheelset's centre {tuple(centre)}, roll {roll}: "
                             "widen the profiles or check the placement")  # fmt: skip
        n = rail.normal(u)
        Q = rail.point(u)
        gap = float((self._wheel_point(side, s, centre, roll) - Q) @ n)
        toward_centre = -1.0 if side == 0 else 1.0  # the track centre is at -y for the left rail
        angle = math.atan2(n[0] * toward_centre, n[1])
        radius = float(self.wheels[side].point(s)[1])
        kappa_w = float(self.wheels[side].curvature(s))
        kappa_r = float(rail.curvature(u))
        return ContactPoint(gap, Q, n, s, u, radius, angle, kappa_w, -1.0 / kappa_r if kappa_r else math.inf)

    # --- both wheels ---
    def equilibrium(self, y: float, z0: float | None = None, roll0: float = 0.0):
        """(z, roll, (left, right) :class:`ContactPoint`) for the wheelset shifted by y (m) with
        both wheels touching their rails (gaps 0 to 1e-13 m), by Newton (module docstring)."""
        z = self.placement.nominal_radius if z0 is None else z0
        roll = roll0
        for _ in range(50):
            contacts = [self.contact(side, (y, z), roll) for side in (0, 1)]
            gaps = np.array([c.gap for c in contacts])
            J = np.empty((2, 2))
            for i, c in enumerate(contacts):
                arm = c.point - np.array([y, z])
                J[i] = [c.normal[1], c.normal @ np.array([-arm[1], arm[0]])]
            step = np.linalg.solve(J, -gaps)
            z, roll = z + step[0], roll + step[1]
            if np.abs(gaps).max() < 1e-13:
                break
        else:
            raise RuntimeError(f"no two-point contact found at y = {y} m (gaps {gaps})")
        return z, roll, tuple(contacts)

    def rolling_radius_difference(self, y: float) -> float:
        """r_L − r_R (m) at the lateral shift y."""
        _, _, (left, right) = self.equilibrium(y)
        return left.radius - right.radius

    def table(self, shifts) -> dict:
        """The contact table over lateral shifts (m): arrays of z, roll, and per side (L, R) the
        rolling radius, contact angle, wheel and rail profile positions (y of the contact point
        in the profile's own frame) and radii; the rolling-radius difference."""
        rows = []
        z, roll = None, 0.0
        for y in np.asarray(shifts, float):
            z, roll, (left, right) = self.equilibrium(float(y), z, roll)
            rows.append((y, z, roll, left.radius, right.radius, left.angle, right.angle,
                         float(self.wheels[0].point(left.s)[0]), float(self.wheels[1].point(right.s)[0]),
                         left.point[1], right.point[1], left.wheel_radius, right.wheel_radius,
                         left.rail_radius, right.rail_radius))  # fmt: skip
        names = ("y", "z", "roll", "r_left", "r_right", "angle_left", "angle_right", "wheel_y_left", "wheel_y_right",
                 "rail_y_left", "rail_y_right", "rho_w_left", "rho_w_right", "rho_r_left", "rho_r_right")  # fmt: skip
        out = {name: np.array(col) for name, col in zip(names, zip(*rows))}
        out["delta_r"] = out["r_left"] - out["r_right"]
        return out

    def klingel(self, amplitude: float = 1e-5) -> dict:
        """The centred wheelset's Eq. (9) quantities and wavelengths: ``gamma``, ``alpha``,
        ``r0``, ``b``, ``rho_w``, ``rho_r``, ``wavelength_eq9`` (Eq. 9 at the centred contact) and,
        from the rolling-radius difference at ±``amplitude``, ``equivalent_conicity`` and
        ``wavelength_kinematic`` = 2π √(b r₀/λ_e)."""
        _, _, (left, _) = self.equilibrium(0.0)
        b = left.point[0]
        alpha = left.angle
        gamma = math.tan(alpha)
        r0 = left.radius
        lam_e = (self.rolling_radius_difference(amplitude) - self.rolling_radius_difference(-amplitude)) / (
            4 * amplitude
        )
        return {
            "gamma": gamma,
            "alpha": alpha,
            "r0": r0,
            "b": b,
            "rho_w": left.wheel_radius,
            "rho_r": left.rail_radius,
            "wheel_contact_y": float(self.wheel_profile.point(left.s)[0]),  # from the tape circle
            "rail_contact_y": float(self.rail_profile.point(left.u)[0]),  # in the rail profile's own frame
            "wavelength_eq9": eq9_wavelength(b, r0, gamma, left.wheel_curvature, left.rail_radius),
            "equivalent_conicity": lam_e,
            "wavelength_kinematic": klingel_wavelength(b, r0, lam_e),
        }


def eq9_wavelength(b, r0, gamma, wheel_curvature, rail_radius) -> float:
    """Schwab & Meijaard 2002 Eq. (9) with ρ_w = 1/κ_w: λ = 2π √((b r₀/γ)(1 − ρ_r κ_w) b/(b + ρ_r sin α)),
    α = atan γ (m)."""
    alpha = math.atan(gamma)
    return (
        2
        * math.pi
        * math.sqrt(b * r0 / gamma * (1 - rail_radius * wheel_curvature) * b / (b + rail_radius * math.sin(alpha)))
    )


def klingel_wavelength(b, r0, conicity) -> float:
    """Klingel's λ = 2π √(b r₀/γ) (m) for a conicity (or equivalent conicity) γ."""
    return 2 * math.pi * math.sqrt(b * r0 / conicity)


def _highest(profile: Profile) -> np.ndarray:
    s = np.linspace(0.0, profile.length, 20001)
    z = profile.point(s)[:, 1]
    k = int(np.argmax(z))
    lo, hi = s[max(k - 1, 0)], s[min(k + 1, s.size - 1)]
    for _ in range(60):  # golden-section-like bisection on z' = 0
        mid = 0.5 * (lo + hi)
        if profile.derivative(mid)[1] > 0:
            lo = mid
        else:
            hi = mid
    return profile.point(0.5 * (lo + hi))


def _gauge_point(profile: Profile, depth: float) -> float:
    """y of the gauge point: the profile's first point (from its gauge end, s = 0) at ``depth``
    below its crown (z = 0)."""
    s = np.linspace(0.0, profile.length, 20001)
    z = profile.point(s)[:, 1] + depth
    above = np.flatnonzero(z >= 0)
    if above.size == 0 or above[0] == 0:
        raise ValueError(f"the rail profile does not reach {depth} m below its crown on its gauge side")
    k = above[0]
    lo, hi = s[k - 1], s[k]
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if profile.point(mid)[1] + depth >= 0:
            hi = mid
        else:
            lo = mid
    return float(profile.point(0.5 * (lo + hi))[0])
