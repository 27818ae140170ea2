"""The wheel–rail contact element of Schwab & Meijaard 2002 §3: a body-fixed surface of
revolution (the wheel, from its meridional :class:`~lcpdyn.profiles.Profile`) against a fixed
rail (a profile extruded along a straight track), as a contact geometry of the engine
(:class:`lcpdyn.contact.Contact`: gap, contact point, normal and tangents from JAX, so the
Jacobians N and D and every friction model, ideal rolling included, come with it).

The derivations, the choices made and what they were measured against: ``docs/theory/wheel-rail.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from .contact import Contact
from .profiles import Profile, evaluate
from .validation import finite_number, unit_vector

__all__ = ["WheelRailContact", "FlangeContact", "rail_envelope", "wheel_rail_frame", "contact_at", "flange_split"]

NEWTON_ITERATIONS = 16
MORE_ITERATIONS = 48  # the most a search that could touch (clearance <= CLEAR) takes: see newton()
SLOPE_TOLERANCE = 1e-9  # |r'(s) - n_r . e| at the contact point found
DISTANCE_TOLERANCE = 1e-10  # |(P - Q) . t_r| (m)
ENVELOPE_POINTS = 512
RAIL_SAMPLES = 256  # rail profile points of the flange's start (a polyline)
NEAREST_WINDOW = 5e-3  # m: rail samples considered by the flange's start
HALVINGS = 7  # of each Newton step: the whole step and 7 halvings are tried
CLEAR = 1e-3  # m: a contact whose point is not found counts as apart beyond this clearance


@dataclass(eq=False)
class WheelRailContact(Contact):
    """A wheel (surface of revolution about the body axis ``axis``, meridional profile
    ``wheel`` with its y = 0 at ``tape`` along the axle, m) on a straight rail (cross-section
    ``rail`` in the track frame of ``plane``), docs/theory/wheel-rail.md. ``grid``: wheel profile points
    of the starting search; ``rolling``: ``"friction"`` or ``"ideal"`` (:attr:`ideal_rolling`)."""

    wheel: Profile | None = None
    rail: Profile | None = None
    axis: object = (0.0, 1.0, 0.0)
    tape: float = 0.0
    grid: int = 96
    rolling: str = "friction"
    wheel_range: tuple | None = None

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
        self.wheel_range = profile_range(label, self.wheel, self.wheel_range)

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
            "wheel_grid": np.linspace(*self.wheel_range, self.grid),
            "wheel_range": np.asarray(self.wheel_range, np.float64),
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


@dataclass(eq=False)
class FlangeContact(WheelRailContact):
    """A wheel's flange against its rail: :class:`WheelRailContact` limited by ``wheel_range`` to
    the flange's side of :func:`flange_split`, searching from the start nearest to the rail's
    polyline (docs/theory/wheel-rail.md) -- the second contact pair of Schwab–Meijaard 2002 §1, usually
    with a compliant ``normal_law``. A class of its own so that the start is chosen when the
    kinematics are traced (contacts are grouped by class), not computed both ways."""

    def geometry(self) -> dict:
        u = np.linspace(0.0, self.rail.length, RAIL_SAMPLES)
        return {
            **super().geometry(),
            "rail_samples": self.rail.point(u),
            "rail_sample_normals": self.rail.normal(u),
            "rail_sample_u": u,
        }

    @staticmethod
    def frame_of(p, x, R, compliant):
        return wheel_rail_frame(p, x, R, start="nearest")[:5]


def contact_at(p, x, R, s, u):
    """The contact conditions and frame at wheel arc length ``s`` and rail arc length ``u`` for
    numbers ``p`` and the wheel's pose (x, R) (docs/theory/wheel-rail.md): (slope residual r'(s) - n_r . e,
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


def _envelope_start(p, grid, across, height):
    """The default start: each grid point at its circle's lowest point along n0 against the
    rail's upper envelope; the vertex of the parabola through the three lowest. Returns ((s, u),
    clearance estimate, the index of the lowest grid point)."""
    vertical_gap = height - jnp.interp(across, p["envelope_y"], p["envelope_z"], left=-jnp.inf, right=-jnp.inf)
    low = jnp.argmin(vertical_gap)
    k = jnp.clip(low, 1, grid.shape[0] - 2)
    g0, g1, g2 = vertical_gap[k - 1], vertical_gap[k], vertical_gap[k + 1]
    curvature = g0 - 2 * g1 + g2
    shift = jnp.where(jnp.isfinite(curvature) & (curvature > 0), 0.5 * (g0 - g2) / curvature, 0.0)
    shift = jnp.clip(shift, -1.0, 1.0)  # the parabola's vertex through the three best grid points
    s0 = grid[k] + shift * (grid[1] - grid[0])
    a0 = across[k] + shift * jnp.where(shift > 0, across[k + 1] - across[k], across[k] - across[k - 1])
    return jnp.array([s0, jnp.interp(a0, p["envelope_y"], p["envelope_u"])]), jnp.min(vertical_gap), low


def _nearest_start(p, grid, across, height, tangent_at):
    """The flange's start (it meets the rail's side, not its top): the grid point at the nearest
    interior local minimum of the distance to the rail's polyline (one at an end of the part is
    the neighbouring part's contact -- the tread's, at a flange root -- not this part's), and of
    the rail samples within NEAREST_WINDOW of it the one whose tangent is most nearly parallel to
    the wheel's there (not simply the nearest: that may lie on a straight part of the gauge face
    steeper than any point of the flange, where Newton's Jacobian is singular). Distances to the
    polyline, not to the samples alone: those carried an error of the spacing's order, enough to
    fake a minimum near a sub-millimetre clearance. ``tangent_at(s)``: the wheel profile's
    tangent at the grid point's place in the cross-section. Returns ((s, u), clearance estimate,
    the index of the nearest grid point, whether there is an interior minimum)."""
    plane_points = jnp.stack([across, height], axis=1)
    a, b = p["rail_samples"][:-1], p["rail_samples"][1:]
    ab = b - a
    along_segment = jnp.clip(
        jnp.sum((plane_points[:, None, :] - a[None]) * ab[None], axis=2) / jnp.sum(ab * ab, axis=1)[None], 0.0, 1.0
    )
    foot = a[None] + along_segment[..., None] * ab[None]
    squared = jnp.sum((plane_points[:, None, :] - foot) ** 2, axis=2)
    nearest = jnp.argmin(squared, axis=1)  # the segment nearest to each grid point
    normals = p["rail_sample_normals"][:-1]  # at the segments' first samples
    side = jnp.sum((plane_points - foot[jnp.arange(foot.shape[0]), nearest]) * normals[nearest], axis=1)
    signed = jnp.sign(side) * jnp.sqrt(jnp.min(squared, axis=1))
    inner = jnp.arange(signed.shape[0])
    dip = (inner > 0) & (inner < signed.shape[0] - 1)
    dip = dip & (signed <= jnp.roll(signed, 1)) & (signed <= jnp.roll(signed, -1))
    k = jnp.argmin(jnp.where(dip, signed, jnp.inf))
    tangent = tangent_at(grid[k])  # the wheel's, in the cross-section
    misalignment = jnp.abs(tangent[0] * normals[:, 0] + tangent[1] * normals[:, 1])  # |t_w . n_r|
    window = jnp.sqrt(squared[k]) <= jnp.abs(signed[k]) + NEAREST_WINDOW
    j = jnp.argmin(jnp.where(window, misalignment, jnp.inf))
    return jnp.array([grid[k], p["rail_sample_u"][j]]), jnp.min(signed), jnp.argmin(signed), jnp.any(dip)


def wheel_rail_frame(p, x, R, start: str = "envelope"):
    """(gap, point, normal, t1, t2, s, u) of docs/theory/wheel-rail.md for numbers ``p`` and the
    wheel's pose (x, R); s and u are the contact's arc lengths on the wheel and rail profiles.
    ``start`` (static): ``"envelope"`` (:class:`WheelRailContact`) or ``"nearest"``
    (:class:`FlangeContact`)."""
    if start not in ("envelope", "nearest"):
        raise ValueError(f"start must be 'envelope' or 'nearest', got {start!r}")
    n0, lateral, origin = p["plane_normal"], p["plane_t2"], p["plane_point"]
    e = R @ p["axis"]
    wk, wc, rk = p["wheel_knots"], p["wheel_coefficients"], p["rail_knots"]

    def equations(z):
        return jnp.stack(contact_at(p, x, R, z[0], z[1])[:2])

    # the grid points at their circles' lowest points along n0, in the track's cross-section
    d0 = -n0 + (n0 @ e) * e
    d0 = d0 / jnp.linalg.norm(d0)
    grid = p["wheel_grid"]
    profile = jax.vmap(lambda s: evaluate(wk, wc, s, 0, jnp))(grid)
    points = x + (p["tape"] + profile[:, :1]) * e + profile[:, 1:] * d0
    across = (points - origin) @ lateral
    height = (points - origin) @ n0
    lo, hi = p["wheel_range"][0], p["wheel_range"][1]
    last = grid.shape[0] - 1
    # no point of its own: the part is nearest to the rail at an end of its range that is not an
    # end of the profile (a split, whose other side is the neighbouring part's)
    split_lo, split_hi = lo > wk[0], hi < wk[-1]

    def at_split(k):
        return ((k == 0) & split_lo) | ((k == last) & split_hi)

    envelope_z, envelope_clearance, envelope_low = _envelope_start(p, grid, across, height)
    if start == "nearest":

        def tangent_at(s):
            slope = evaluate(wk, wc, s, 1, jnp)
            tangent = slope[0] * e + slope[1] * d0
            return jnp.array([tangent @ lateral, tangent @ n0])

        z, clearance, k_low, interior = _nearest_start(p, grid, across, height, tangent_at)
        at_edge = ~interior & at_split(k_low)
        starts = jnp.stack([z, envelope_z])  # the envelope's start as well (see below)
    else:
        z, clearance, k_low = envelope_z, envelope_clearance, envelope_low
        at_edge = at_split(k_low)
        starts = z[None]
    start_point = z
    jacobian = jax.jacfwd(equations)
    limit = 4.0 * (grid[1] - grid[0])  # a Newton step moves at most four grid spacings
    scales = jnp.array([SLOPE_TOLERANCE, DISTANCE_TOLERANCE])

    def misfit(z):
        return jnp.max(jnp.abs(equations(z)) / scales)

    fractions = 0.5 ** jnp.arange(HALVINGS + 1.0)

    def iteration(_, carry):
        z, best, best_misfit = carry
        step = jnp.linalg.solve(jacobian(z), equations(z))
        step = jnp.where(jnp.all(jnp.isfinite(step)), step, 0.0)
        step = step * jnp.minimum(1.0, limit / (jnp.max(jnp.abs(step)) + 1e-300))
        # damped: of the whole step and HALVINGS halvings the one with the smallest misfit (near a
        # conformal contact, where the slope equation is nearly flat in s, a whole step overshoots)
        trials = z[None, :] - fractions[:, None] * step[None, :]
        trials = jnp.stack([jnp.clip(trials[:, 0], lo, hi), trials[:, 1]], axis=1)  # kept on the wheel's part
        misfits = jax.vmap(misfit)(trials)
        z = trials[jnp.argmin(misfits)]
        now = jnp.min(misfits)
        better = now < best_misfit  # the best iterate is kept
        return z, jnp.where(better, z, best), jnp.where(better, now, best_misfit)

    # NEWTON_ITERATIONS steps, and more (up to MORE_ITERATIONS in all) while the best iterate
    # misses the tolerances of a point found and the contact could be touching: a near-conformal
    # tread contact by the flange root, its start a few grid spacings away, can need ~30 damped
    # steps (found at 32 where 16 left the search 5e-6 m short, so that the engine stopped on
    # the gap it could not give). One loop body compiled once (an unrolled loop multiplied the
    # compile time of a scene); a search that meets the tolerances in 16 steps is unchanged.
    touching = jnp.isfinite(clearance) & (clearance <= CLEAR) & ~at_edge

    def newton(z):
        def going(carry):
            i, (_, _, best_misfit) = carry
            return (i < NEWTON_ITERATIONS) | (touching & (best_misfit > 1.0) & (i < MORE_ITERATIONS))

        def step(carry):
            i, state = carry
            return i + 1, iteration(i, state)

        return jax.lax.while_loop(going, step, (0, (z, z, misfit(z))))[1][1]

    def judged(z):
        s, u = z[0], z[1]
        slope, distance, gap = contact_at(p, x, R, s, u)[:3]
        found = ((jnp.abs(slope) <= SLOPE_TOLERANCE) & (jnp.abs(distance) <= DISTANCE_TOLERANCE)
                 & (s >= lo) & (s <= hi) & (s > wk[0]) & (s < wk[-1]) & (u > rk[0]) & (u < rk[-1]))  # fmt: skip
        return found, gap

    # the flange's Newton also runs from the envelope's start: on a flange root, where the
    # profile's curvature changes within a grid spacing, the nearest start (one spacing from the
    # point in s and u) can lie outside Newton's basin when the envelope's does not, and the
    # reverse on the flange face. Of the points found the one with the smallest gap is the
    # contact (both are stationary points of the distance; the deeper one touches first)
    bests = jax.vmap(newton)(starts)  # one loop body for the starts: compiled once
    founds, gaps = jax.vmap(judged)(bests)
    pick = jnp.argmin(jnp.where(founds, gaps, jnp.inf))  # the first start when none is found
    best, found = bests[pick], founds[pick]
    s, u = best[0], best[1]
    at_edge = at_edge | ((s == lo) & split_lo) | ((s == hi) & split_hi)
    slope, distance, gap, P, n_r, t1, t2 = contact_at(p, x, R, s, u)
    # no contact point found: apart by more than CLEAR (the start's estimate), or nearest to the
    # rail at an end of its part of the profile (a part limited by ``wheel_range`` whose
    # neighbour carries the contact there: no point of its own), the contact is inactive -- its
    # gap that estimate, at least CLEAR, its frame the start's; otherwise the engine stops on
    # the non-finite gap, naming the contact, rather than step on a wrong point
    apart = ~found & jnp.isfinite(clearance) & ((clearance > CLEAR) | at_edge)  # (inf: off the rail)
    fallback = contact_at(p, x, R, start_point[0], start_point[1])
    gap = jnp.where(found, gap, jnp.where(apart, jnp.maximum(clearance, CLEAR), jnp.nan))
    P, n_r, t1, t2 = (jnp.where(apart, b, a) for a, b in zip((P, n_r, t1, t2), fallback[3:]))
    s, u = jnp.where(apart, start_point[0], s), jnp.where(apart, start_point[1], u)
    return gap, P, n_r, t1, t2, s, u


def flange_split(wheel: Profile, angle: float = 12.0, samples: int = 20000) -> tuple:
    """Where a wheel profile's flange ends and its tread begins: ``(split, flange_side)`` with
    ``split`` the arc length (m) on the flange root where the profile's slope, coming down from
    the flange face's steepest point towards the tread, falls below ``angle`` degrees, and
    ``flange_side`` -1 if the flange lies at smaller arc lengths (a left wheel as given), +1 at
    larger (its mirror image). The flange tip is the largest radius; the tread side is the
    longer one from it.

    The default 12° puts every point a contact *jumps* to in the flange's part. With S1002 on
    UIC60 (:mod:`lcpdyn.wheelset_geometry`, centred wheelset) the tread contact climbs
    continuously to 6.8° (slant 1/40, 4.5 mm shift) or stays below 1° (1/20, 5.5 mm), then jumps
    to the root (17°, 22.5°) and on to the face (61-70°). A rigid tread element whose part held
    the root (as a 45° split did) saw such a jump as a point that was already 0.1 mm inside the
    rail, and its one-step correction threw the wheelset off the rails; with the root in the
    flange's part the second pair sees it approach (its gap) before it touches. For S1002: the
    tip at r0 + 28 mm, the steepest point at s = 45 mm (70°), the split at s = 64.7 mm."""
    s = np.linspace(0.0, wheel.length, samples)
    d = wheel.derivative(s)
    slope = np.degrees(np.arctan2(np.abs(d[:, 1]), np.abs(d[:, 0])))
    tip = int(np.argmax(wheel.point(s)[:, 1]))
    flange_side = -1 if tip < samples - 1 - tip else 1
    path = np.arange(tip, samples) if flange_side == -1 else np.arange(tip, -1, -1)  # towards the tread
    steepest = int(np.argmax(slope[path][: len(path) // 2]))
    if slope[path[steepest]] <= angle:
        raise ValueError(f"wheel profile {wheel.name!r}: no flange steeper than {angle} degrees")
    below = np.flatnonzero(slope[path[steepest:]] < angle)
    if below.size == 0:
        raise ValueError(f"wheel profile {wheel.name!r}: the slope never falls below {angle} degrees after the flange")
    return float(s[path[steepest + below[0]]]), flange_side


def profile_range(label: str, profile: Profile, bounds) -> tuple:
    """``bounds`` (arc lengths ``(lo, hi)`` on ``profile``, m) checked, or the whole profile
    when None."""
    if bounds is None:
        return (0.0, float(profile.length))
    try:
        lo, hi = (float(b) for b in bounds)
    except (TypeError, ValueError):
        raise ValueError(f"{label}: wheel_range must be two arc lengths (lo, hi) in m, got {bounds!r}") from None
    if not (0.0 <= lo < hi <= profile.length):
        raise ValueError(
            f"{label}: wheel_range must satisfy 0 <= lo < hi <= the profile's length {profile.length:.6g} m, "
            f"got {bounds!r}"
        )
    return (lo, hi)


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
