"""The wheel–rail contact element of Schwab & Meijaard 2002 §3: a body-fixed surface of
revolution (the wheel, from its meridional :class:`~lcpdyn.profiles.Profile`) against a fixed
rail (a profile extruded along a straight track), as a contact geometry of the engine
(:class:`lcpdyn.contact.Contact`: gap, contact point, normal and tangents from JAX, so the
Jacobians N and D and every friction model, ideal rolling included, come with it).

Frames: the track is ``plane`` -- its normal n₀ is the track's "up", its t1 the track direction
a_r (the paper's a_r), its t2 = n₀ × t1 the lateral direction; the rail profile's (y, z) are
lateral and up from ``plane.point`` (placed as :class:`lcpdyn.wheelset_geometry.WheelsetGeometry`
places it: ``rails[0]``, ``rails[1]``). The wheel's axle is the body-frame unit vector ``axis``
through the body's centre of mass; a profile point (y_w(s), r(s)) lies at ``tape + y_w(s)``
along the axle and at radius r(s) from it (``tape``: where the profile's y = 0, the tape circle,
sits on the axle; the left wheel's field side is +axis, the right wheel takes the mirrored
profile with a negative ``tape``).

The contact point (the paper's Eq. 7 conditions, solved inside the compiled kinematics rather
than carried as extra coordinates -- so the state stays the bodies' and the contact point follows
the profiles at every step without a drift to correct): the wheel point P(s, d) = x + (tape +
y_w(s)) e + r(s) d, e = R axis, and the rail point Q(u) (the rail profile at arc length u, at
P's position along the track) with collinear outward normals, n_w = −n_r (ε₃ = ε₄ = 0):

* the circle of radius r(s) touches in the direction d = unit(−n_r + (n_r · e) e), the
  projection of −n_r on the wheel's mid-plane (as Bauchau 2002 Eq. 2 does for a disk);
* the meridional slope matches: r′(s) = n_r(u) · e (the wheel normal −r′ e + y_w′ d is −n_r);
* P − Q is normal to the rail: (P − Q) · t_r(u) = 0, t_r the rail profile's tangent.

These two equations in (s, u) are solved by ``NEWTON_ITERATIONS`` Newton iterations (Jacobian by
JAX; a step moves at most four grid spacings) from the vertex of the parabola through the three
best points of a grid of ``grid`` wheel profile points, each taken at the circle's lowest point
along n₀ and compared with the rail's upper envelope (tabulated in ``geometry()``). The gap is
(P − Q) · n_r (the paper's ε₂ in rigid contact; positive apart) -- NaN if the Newton iterations
end with either equation above its tolerance (``SLOPE_TOLERANCE`` 1e-9, ``DISTANCE_TOLERANCE``
1e-10 m) or the point off either profile, so that the engine stops on non-finite kinematics
naming the contact rather than step on a wrong point -- the normal n_r, the tangents
t1 = a_r and t2 = n_r × a_r (the paper's b_r), so the slips of Eq. (8) are D v and the spin
n_r · ω. Because the point is stationary, the gap's rate is the normal component of P's material
velocity (what the engine's N is): tested against finite differences.

Differences from the paper: the contact point is not an extra node with its own coordinates and
holonomic constraints but a function of the wheel's pose, found by Newton in the kinematics; the
rail is straight (extruded), not a general surface g_r(c) = 0; a wheel with two touching points
(tread and flange) reports the one the grid ranks lowest -- a second element on the same wheel,
limited to the flange's part of the profile, gives the second contact (issue 14, item 3).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from .contact import Contact
from .profiles import Profile, evaluate
from .validation import finite_number, unit_vector

__all__ = ["WheelRailContact", "rail_envelope", "wheel_rail_frame", "contact_at"]

NEWTON_ITERATIONS = 8
SLOPE_TOLERANCE = 1e-9  # |r'(s) - n_r . e| at the contact point found
DISTANCE_TOLERANCE = 1e-10  # |(P - Q) . t_r| (m)
ENVELOPE_POINTS = 512


@dataclass(eq=False)
class WheelRailContact(Contact):
    """A wheel (surface of revolution about the body axis ``axis``, meridional profile
    ``wheel`` with its y = 0 at ``tape`` along the axle, m) on a straight rail (cross-section
    ``rail`` in the track frame of ``plane``), module docstring. ``grid``: wheel profile points
    of the starting search; ``rolling``: ``"friction"`` or ``"ideal"`` (:attr:`ideal_rolling`)."""

    wheel: Profile | None = None
    rail: Profile | None = None
    axis: object = (0.0, 1.0, 0.0)
    tape: float = 0.0
    grid: int = 96
    rolling: str = "friction"

    def __post_init__(self):
        self._check()
        label = f"wheel-rail contact on {self.body.name!r}"
        if self.rolling not in ("friction", "ideal"):
            raise ValueError(f"{label}: rolling must be 'friction' or 'ideal', got {self.rolling!r}")
        if not isinstance(self.wheel, Profile) or not isinstance(self.rail, Profile):
            raise TypeError(f"{label}: wheel and rail must be lcpdyn.profiles.Profile objects")
        self.axis = unit_vector(f"{label}: axis", self.axis, 3)
        self.tape = finite_number(f"{label}: tape", self.tape)
        if not isinstance(self.grid, int) or self.grid < 8:
            raise ValueError(f"{label}: grid must be an integer >= 8, got {self.grid!r}")

    def geometry(self) -> dict:
        y, z, u = rail_envelope(self.rail)
        return {
            **super().geometry(),
            "axis": self.axis,
            "tape": np.float64(self.tape),
            "wheel_knots": self.wheel.knots,
            "wheel_coefficients": self.wheel.coefficients,
            "rail_knots": self.rail.knots,
            "rail_coefficients": self.rail.coefficients,
            "envelope_y": y,
            "envelope_z": z,
            "envelope_u": u,
            "wheel_grid": np.linspace(0.0, self.wheel.length, self.grid),
        }

    def geometry_key(self) -> tuple:
        """Contacts stack when their arrays have equal shapes: the profiles' knot counts and
        the grid are part of the key."""
        return (*super().geometry_key(), self.wheel.knots.shape[0], self.rail.knots.shape[0], self.grid)

    @staticmethod
    def frame_of(p, x, R, compliant):
        return wheel_rail_frame(p, x, R)[:5]

    @property
    def ideal_rolling(self) -> bool:
        """``rolling="ideal"``: the slips s1 = a_r · v_c and s2 = b_r · v_c of Eq. (8) are held
        at zero by bilateral rows (the paper's pure rolling, §5.1); ``"friction"``: they are the
        friction model's rows."""
        return self.rolling == "ideal"


def contact_at(p, x, R, s, u):
    """The contact conditions and frame at wheel arc length ``s`` and rail arc length ``u`` for
    numbers ``p`` and the wheel's pose (x, R) (module docstring): (slope residual r'(s) - n_r . e,
    distance residual (P - Q) . t_r (m), gap (P - Q) . n_r (m), P, n_r, t1, t2). Zero residuals
    make (s, u) the contact point; :func:`wheel_rail_frame` finds them, and a linearization that
    carries (s, u) as unknowns of its own (scenes.wheelset_hunting) solves them with the pose."""
    n0, along, lateral, origin = p["plane_normal"], p["plane_t1"], p["plane_t2"], p["plane_point"]
    e = R @ p["axis"]
    q = evaluate(p["rail_knots"], p["rail_coefficients"], u, 0, jnp)
    dq = evaluate(p["rail_knots"], p["rail_coefficients"], u, 1, jnp)
    t_r = lateral * dq[0] + n0 * dq[1]
    t_r = t_r / jnp.linalg.norm(t_r)
    n_r = jnp.cross(along, t_r)  # (-z', y') in (lateral, up): the profile's left normal, out of the rail
    d = -n_r + (n_r @ e) * e  # the circle of radius r(s) touches along d
    d = d / jnp.linalg.norm(d)
    w = evaluate(p["wheel_knots"], p["wheel_coefficients"], s, 0, jnp)
    slope = evaluate(p["wheel_knots"], p["wheel_coefficients"], s, 1, jnp)
    P = x + (p["tape"] + w[0]) * e + w[1] * d
    Q = origin + along * ((P - origin) @ along) + lateral * q[0] + n0 * q[1]
    t1 = along - (along @ n_r) * n_r  # a_r: already normal to n_r on a straight rail
    t1 = t1 / jnp.linalg.norm(t1)
    return slope[1] - n_r @ e, (P - Q) @ t_r, (P - Q) @ n_r, P, n_r, t1, jnp.cross(n_r, t1)


def wheel_rail_frame(p, x, R):
    """(gap, point, normal, t1, t2, s, u) of the module docstring for numbers ``p`` and the
    wheel's pose (x, R); s and u are the contact's arc lengths on the wheel and rail profiles."""
    n0, lateral, origin = p["plane_normal"], p["plane_t2"], p["plane_point"]
    e = R @ p["axis"]
    wk, wc, rk = p["wheel_knots"], p["wheel_coefficients"], p["rail_knots"]

    def equations(z):
        return jnp.stack(contact_at(p, x, R, z[0], z[1])[:2])

    # start: each grid point at its circle's lowest point along n0, against the rail's upper envelope
    d0 = -n0 + (n0 @ e) * e
    d0 = d0 / jnp.linalg.norm(d0)
    grid = p["wheel_grid"]
    profile = jax.vmap(lambda s: evaluate(wk, wc, s, 0, jnp))(grid)
    points = x + (p["tape"] + profile[:, :1]) * e + profile[:, 1:] * d0
    across = (points - origin) @ lateral
    height = (points - origin) @ n0
    vertical_gap = height - jnp.interp(across, p["envelope_y"], p["envelope_z"], left=-jnp.inf, right=-jnp.inf)
    k = jnp.clip(jnp.argmin(vertical_gap), 1, grid.shape[0] - 2)
    g0, g1, g2 = vertical_gap[k - 1], vertical_gap[k], vertical_gap[k + 1]
    curvature = g0 - 2 * g1 + g2
    shift = jnp.where(jnp.isfinite(curvature) & (curvature > 0), 0.5 * (g0 - g2) / curvature, 0.0)
    shift = jnp.clip(shift, -1.0, 1.0)  # the parabola's vertex through the three best grid points
    s0 = grid[k] + shift * (grid[1] - grid[0])
    a0 = across[k] + shift * jnp.where(shift > 0, across[k + 1] - across[k], across[k] - across[k - 1])
    z = jnp.array([s0, jnp.interp(a0, p["envelope_y"], p["envelope_u"])])
    jacobian = jax.jacfwd(equations)
    limit = 4.0 * (grid[1] - grid[0])  # a Newton step moves at most four grid spacings
    for _ in range(NEWTON_ITERATIONS):
        step = jnp.linalg.solve(jacobian(z), equations(z))
        step = jnp.where(jnp.all(jnp.isfinite(step)), step, 0.0)
        z = z - step * jnp.minimum(1.0, limit / (jnp.max(jnp.abs(step)) + 1e-300))
    s, u = z[0], z[1]
    slope, distance, gap, P, n_r, t1, t2 = contact_at(p, x, R, s, u)
    found = ((jnp.abs(slope) <= SLOPE_TOLERANCE) & (jnp.abs(distance) <= DISTANCE_TOLERANCE)
             & (s > wk[0]) & (s < wk[-1]) & (u > rk[0]) & (u < rk[-1]))  # fmt: skip
    gap = jnp.where(found, gap, jnp.nan)  # no contact point found: the engine stops, naming the contact
    return gap, P, n_r, t1, t2, s, u


def rail_envelope(rail: Profile, points: int = ENVELOPE_POINTS, samples: int = 20000):
    """The rail profile's upper envelope on a uniform grid of ``points`` lateral positions:
    (y, z, u) -- for each y the highest crossing of the profile and its arc length u (what a
    wheel coming down vertically meets first; the starting guess of the contact search)."""
    u = np.linspace(0.0, rail.length, samples)
    q = rail.point(u)
    y = np.linspace(q[:, 0].min(), q[:, 0].max(), points)
    z = np.full(points, -np.inf)
    at = np.zeros(points)
    a, b = q[:-1], q[1:]
    lo, hi = np.minimum(a[:, 0], b[:, 0]), np.maximum(a[:, 0], b[:, 0])
    for j, yj in enumerate(y):
        hit = np.flatnonzero((lo <= yj) & (yj <= hi))
        if hit.size == 0:
            continue
        span = b[hit, 0] - a[hit, 0]
        w = np.where(span != 0, (yj - a[hit, 0]) / np.where(span != 0, span, 1.0), 0.0)
        zz = a[hit, 1] + w * (b[hit, 1] - a[hit, 1])
        best = int(np.argmax(zz))
        z[j] = zz[best]
        at[j] = u[hit[best]] + w[best] * (u[hit[best] + 1] - u[hit[best]])
    z[~np.isfinite(z)] = np.min(z[np.isfinite(z)])
    return y, z, at
