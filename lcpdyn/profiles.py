"""Wheel and rail profiles: smooth planar curves with continuous curvature, from parametric
shapes or from tabulated points (CSV or SIMPACK ``.prw``/``.prr`` files), for the wheel–rail
contact element (Schwab & Meijaard 2002 §3, §5).

A :class:`Profile` is a curve ``(y(s), z(s))`` in its own plane, parametrized by arc length s
(m), stored as a C² cubic spline (a piecewise cubic per coordinate: continuous position, slope
and curvature). Its two uses:

* a **wheel profile** is the wheel's meridional section: y along the axle from the wheel's
  reference point (the tape circle; +y towards the field side, the flange at −y, towards the
  track centre), z the radius about the axle (m);
* a **rail profile** is the rail head's cross-section: y across the track from the rail's
  reference point (+y towards the field side), z the height, up (m).

Both describe one side (the right-hand wheel on the right-hand rail seen in the direction of
travel, with the track centre at −y); the other side is the mirror image (:meth:`Profile.mirrored`).

Tabulated data: the points are joined by an interpolating cubic spline in cumulative chord
length (``smoothing=0``: through every point) or a smoothing spline (``smoothing > 0``: the
penalty λ of :func:`scipy.interpolate.make_smoothing_spline` over the chord length in metres,
for measured data: 1e-8 takes 1 µm of noise on points 0.5 mm apart from a curvature error of
470 % to 6 %, tested), then
re-parametrized by arc length. Points closer than ``min_spacing`` (1 µm) to the previous one are
dropped (the UIC60 file repeats its first point to 1e-9 m). A profile with a vertical part (a
rail's flank, a flange's back) is fine: nothing assumes z is a function of y.

SIMPACK profile files (``MBench_S1002_v3.prw``, ``MBench_UIC60_v3.prr``; format in
``shared/profiles/README.md``): a ``spline.begin`` block of ``key = value ! comment`` lines,
then ``y z [weight]`` rows (``units.len.f`` per metre) between ``point.begin`` and
``point.end``; z points down. :func:`read_simpack` applies ``shift.y``, ``shift.z``, ``rotate``
(about x), ``mirror.y``, ``mirror.z`` and ``inversion`` (the data order) as SIMPACK does, in that
order, then turns z up (a rail: height = −z) or into a radius (a wheel: z = nominal radius + z,
the file's z being the radius offset, positive towards the rail). Checked against the published
shapes in ``tests/test_profiles.py`` (S1002's standard piecewise definition, UIC60's head radii
300, 80 and 13 mm, S1002's flange height 28 mm and 70° flank).

Differences from the paper: Schwab & Meijaard give the surfaces implicitly, g_w(r̄) = 0 and
g_r(c) = 0; here they are given by their profiles (the wheel a surface of revolution, the rail a
profile extruded along the track), from which such functions follow.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.interpolate import CubicSpline, make_smoothing_spline

__all__ = ["Profile", "read_csv", "read_simpack", "s1002", "uic60", "conical_wheel", "circular_wheel", "circular_rail"]

DATA = Path(__file__).resolve().parent / "data" / "profiles"  # S1002 and UIC60, with their NOTICE


@dataclass(frozen=True, eq=False)
class Profile:
    """A smooth planar curve (module docstring) parametrized by arc length.

    knots : (n + 1,) arc length at the spline's breakpoints, 0 ... length (m).
    coefficients : (4, n, 2) the cubic on each interval for (y, z), highest power first, in
        s − knots[i] (scipy's ``PPoly`` layout).
    name, source : what it is and where it came from (recorded with a run).
    """

    knots: np.ndarray
    coefficients: np.ndarray
    name: str = ""
    source: str = ""

    def __post_init__(self):
        knots = np.asarray(self.knots, np.float64)
        c = np.asarray(self.coefficients, np.float64)
        if knots.ndim != 1 or knots.shape[0] < 2 or not np.all(np.diff(knots) > 0) or knots[0] != 0.0:
            raise ValueError("a profile's knots must be increasing arc lengths from 0, at least two")
        if c.shape != (4, knots.shape[0] - 1, 2):
            raise ValueError(f"coefficients must have shape (4, {knots.shape[0] - 1}, 2), got {c.shape}")
        if not (np.all(np.isfinite(knots)) and np.all(np.isfinite(c))):
            raise ValueError("a profile's knots and coefficients must be finite")
        object.__setattr__(self, "knots", knots)
        object.__setattr__(self, "coefficients", c)

    # --- construction ---
    @classmethod
    def from_points(cls, y, z, smoothing: float = 0.0, name: str = "", source: str = "",
                    min_spacing: float = 1e-6, samples: int | None = None) -> Profile:  # fmt: skip
        """The curve through (``smoothing=0``) or near (``smoothing`` > 0) the points (y, z) in
        metres, in their order (module docstring). ``samples``: breakpoints of the arc-length
        spline (default: 4 per input point, at least 64)."""
        y = _finite_vector("y", y)
        z = _finite_vector("z", z)
        if y.shape != z.shape:
            raise ValueError(f"y and z must have the same length, got {y.shape[0]} and {z.shape[0]}")
        if not (math.isfinite(smoothing) and smoothing >= 0):
            raise ValueError(f"smoothing must be >= 0, got {smoothing!r}")
        points = np.column_stack([y, z])
        keep = [0]
        for i in range(1, points.shape[0]):
            if np.linalg.norm(points[i] - points[keep[-1]]) >= min_spacing:
                keep.append(i)
        points = points[keep]
        if points.shape[0] < 4:
            raise ValueError(f"a profile needs at least 4 distinct points (>= {min_spacing} m apart), got {len(keep)}")
        chord = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(points, axis=0), axis=1))])
        if smoothing > 0:
            fits = [make_smoothing_spline(chord, points[:, k], lam=smoothing) for k in range(2)]

            def curve(t, nu=0):
                return np.column_stack([f(t, nu) for f in fits])

        else:
            spline = CubicSpline(chord, points, bc_type="not-a-knot")

            def curve(t, nu=0):
                return spline(t, nu)

        # re-parametrize by arc length: s(t) by Gauss-Legendre quadrature of |curve'(t)| per interval
        count = samples or max(64, 4 * points.shape[0])
        t = np.linspace(0.0, chord[-1], 8 * count + 1)
        nodes, weights = np.polynomial.legendre.leggauss(6)
        middle, half = 0.5 * (t[1:] + t[:-1]), 0.5 * np.diff(t)
        speed = np.linalg.norm(curve((middle[:, None] + half[:, None] * nodes).ravel(), 1), axis=1).reshape(-1, 6)
        s_of_t = np.concatenate([[0.0], np.cumsum(half * (speed @ weights))])
        s = np.linspace(0.0, s_of_t[-1], count + 1)
        t_of_s = np.interp(s, s_of_t, t)
        for _ in range(3):  # Newton on s(t) = s: t' = 1/|curve'|
            here = np.interp(t_of_s, t, s_of_t)
            t_of_s -= (here - s) / np.linalg.norm(curve(t_of_s, 1), axis=1)
        fitted = CubicSpline(s, curve(t_of_s), bc_type="not-a-knot")
        return cls(fitted.x - fitted.x[0], fitted.c, name, source)

    # --- evaluation (NumPy; :func:`evaluate` takes any array namespace, e.g. jax.numpy) ---
    @property
    def length(self) -> float:
        """The profile's arc length (m): s runs over [0, length]."""
        return float(self.knots[-1])

    def point(self, s) -> np.ndarray:
        """(..., 2) the point (y, z) at arc length s (m); s is clipped to [0, length]."""
        return evaluate(self.knots, self.coefficients, s, 0, np)

    def derivative(self, s, order: int = 1) -> np.ndarray:
        """(..., 2) d^order (y, z) / ds^order at s (order 1: the unit tangent)."""
        return evaluate(self.knots, self.coefficients, s, order, np)

    def tangent(self, s) -> np.ndarray:
        """The unit tangent (dy/ds, dz/ds) at arc lengths ``s``."""
        d = self.derivative(s, 1)
        return d / np.linalg.norm(d, axis=-1, keepdims=True)

    def normal(self, s) -> np.ndarray:
        """The unit normal (−z', y'): the tangent turned +90°, to the left of the direction of s."""
        t = self.tangent(s)
        return np.stack([-t[..., 1], t[..., 0]], axis=-1)

    def curvature(self, s) -> np.ndarray:
        """Signed curvature κ = y' z'' − z' y'' (1/m; > 0 where the curve turns left)."""
        d1, d2 = self.derivative(s, 1), self.derivative(s, 2)
        return (d1[..., 0] * d2[..., 1] - d1[..., 1] * d2[..., 0]) / np.linalg.norm(d1, axis=-1) ** 3

    def sample(self, count: int = 400) -> tuple[np.ndarray, np.ndarray]:
        """(y, z) at ``count`` points equally spaced in arc length."""
        p = self.point(np.linspace(0.0, self.length, count))
        return p[:, 0], p[:, 1]

    def at_y(self, y) -> np.ndarray:
        """Arc length s where the curve crosses the lateral position y (m), for a profile whose y
        is monotonic there (a tread, a rail's crown): the first crossing in the curve's order,
        found by bisection then Newton; NaN outside the profile."""
        scalar = np.ndim(y) == 0
        y = np.atleast_1d(np.asarray(y, np.float64))
        grid = np.linspace(0.0, self.length, 8 * self.knots.shape[0] + 1)
        values = self.point(grid)[:, 0]
        out = np.full(y.shape, np.nan)
        for k, target in enumerate(y.ravel()):
            sign = np.sign(values - target)
            cross = np.flatnonzero(sign[:-1] * sign[1:] <= 0)
            if cross.size == 0:
                continue
            a, b = grid[cross[0]], grid[cross[0] + 1]
            s = 0.5 * (a + b)
            for _ in range(50):
                f = self.point(s)[0] - target
                d = self.derivative(s)[0]
                step = f / d if d != 0 else 0.0
                s_new = s - step
                if not a <= s_new <= b:
                    s_new = 0.5 * (a + b)
                if (self.point(a)[0] - target) * (self.point(s_new)[0] - target) <= 0:
                    b = s_new
                else:
                    a = s_new
                if abs(s_new - s) < 1e-15 * max(1.0, self.length):
                    s = s_new
                    break
                s = s_new
            out.ravel()[k] = s
        return float(out[0]) if scalar else out

    # --- transformations ---
    def transformed(self, rotation: float = 0.0, shift=(0.0, 0.0), name: str | None = None) -> Profile:
        """The curve rotated by ``rotation`` (rad, counter-clockwise in the (y, z) plane, about
        the origin), then shifted by ``shift`` (m): exact (the cubics are mapped, not refitted)."""
        c, sn = math.cos(rotation), math.sin(rotation)
        matrix = np.array([[c, -sn], [sn, c]])
        coefficients = np.einsum("ij,kmj->kmi", matrix, self.coefficients)
        coefficients[3] += np.asarray(shift, np.float64)
        return Profile(self.knots, coefficients, self.name if name is None else name, self.source)

    def mirrored(self) -> Profile:
        """The other side's profile: y → −y, traversed in the opposite direction so that the
        normal keeps pointing to the same (outer) side."""
        length = self.length
        knots = length - self.knots[::-1]
        c = self.coefficients[:, ::-1, :].copy()
        n = self.knots.shape[0] - 1
        # the cubic on [a, b] in u = s - a becomes, with s' = L - s on [L - b, L - a] and
        # u' = s' - (L - b) = b - s = h - u, a cubic in u'; y changes sign
        h = np.diff(self.knots)[::-1]
        out = np.empty_like(c)
        for i in range(n):
            a3, a2, a1, a0 = c[:, i, :]
            hh = h[i]
            # p(u) with u = hh - u'
            b3 = -a3
            b2 = 3 * a3 * hh + a2
            b1 = -(3 * a3 * hh * hh + 2 * a2 * hh + a1)
            b0 = a3 * hh**3 + a2 * hh * hh + a1 * hh + a0
            out[:, i, :] = np.stack([b3, b2, b1, b0])
        out[:, :, 0] *= -1.0
        return Profile(knots, out, self.name, self.source)


def evaluate(knots, coefficients, s, order, xp):
    """(..., 2) the order-th arc-length derivative (0: the point) of the spline (``knots``,
    ``coefficients``) at s, in the array namespace ``xp`` (``numpy`` or ``jax.numpy``; traceable,
    s clipped to the curve)."""
    s = xp.clip(xp.asarray(s, dtype=knots.dtype), knots[0], knots[-1])
    index = xp.clip(xp.searchsorted(knots, s, side="right") - 1, 0, knots.shape[0] - 2)
    u = (s - knots[index])[..., None]
    c3, c2, c1, c0 = (coefficients[k][index] for k in range(4))
    if order == 0:
        return ((c3 * u + c2) * u + c1) * u + c0
    if order == 1:
        return (3 * c3 * u + 2 * c2) * u + c1
    if order == 2:
        return 6 * c3 * u + 2 * c2
    if order == 3:
        return 6 * c3 + 0 * u
    raise ValueError(f"order must be 0, 1, 2 or 3, got {order!r}")


def _finite_vector(name, value) -> np.ndarray:
    try:
        array = np.asarray(value, np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be numbers") from None
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {array.shape}")
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        raise ValueError(f"{name}[{bad[0]}] is {float(array[bad[0]])}: profile points must be finite")
    return array


# --- parametric profiles ----------------------------------------------------------------------


def conical_wheel(nominal_radius: float, conicity: float, half_width: float = 0.07, points: int = 65) -> Profile:
    """A coned tread: radius r0 − γ y over |y| <= half_width (m), conicity γ = tan of the cone's
    half-angle complement (the tread slope), no flange."""
    _positive("nominal_radius", nominal_radius)
    _positive("half_width", half_width)
    if not math.isfinite(conicity):
        raise ValueError(f"conicity must be finite, got {conicity!r}")
    y = np.linspace(-half_width, half_width, points)
    return Profile.from_points(y, nominal_radius - conicity * y, name=f"cone r0={nominal_radius} gamma={conicity}",
                               source="parametric")  # fmt: skip


def circular_wheel(nominal_radius: float, profile_radius: float, contact_angle: float = 0.0,
                   half_width: float = 0.05, points: int = 201) -> Profile:  # fmt: skip
    """A hollow (concave) circular tread: the meridional section is a circle of radius ρ_w
    (``profile_radius``, m) through (0, r0) with slope −tan α there (α = ``contact_angle``,
    rad; conicity γ = tan α), centre on the rail's side: r(y) = r_c − √(ρ_w² − (y − y_c)²),
    (y_c, r_c) = (ρ_w sin α, r0 + ρ_w cos α)."""
    _positive("nominal_radius", nominal_radius)
    _positive("profile_radius", profile_radius)
    _positive("half_width", half_width)
    if half_width >= profile_radius * (1 - abs(math.sin(contact_angle))):
        raise ValueError("half_width must stay inside the tread circle")
    yc, rc = profile_radius * math.sin(contact_angle), nominal_radius + profile_radius * math.cos(contact_angle)
    y = np.linspace(-half_width, half_width, points)
    r = rc - np.sqrt(profile_radius**2 - (y - yc) ** 2)
    return Profile.from_points(y, r, name=f"circular wheel r0={nominal_radius} rho_w={profile_radius}",
                               source="parametric")  # fmt: skip


def circular_rail(head_radius: float, half_width: float = 0.03, points: int = 201) -> Profile:
    """A rail head that is one circular arc of radius ρ_r (``head_radius``, m), crown at the
    origin: z(y) = √(ρ_r² − y²) − ρ_r over |y| <= half_width."""
    _positive("head_radius", head_radius)
    _positive("half_width", half_width)
    if half_width >= head_radius:
        raise ValueError("half_width must be below the head radius")
    y = np.linspace(-half_width, half_width, points)
    return Profile.from_points(y, np.sqrt(head_radius**2 - y * y) - head_radius,
                               name=f"circular rail rho_r={head_radius}", source="parametric")  # fmt: skip


def _positive(name, value):
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")


# --- files -------------------------------------------------------------------------------------


def _path(path) -> Path:
    path = Path(os.fspath(path))
    if not path.is_file():
        raise FileNotFoundError(f"profile file {path} does not exist (or is not a file)")
    return path


def read_csv(path, kind: str, nominal_radius: float | None = None, smoothing: float = 0.0,
             unit: float = 1.0) -> Profile:  # fmt: skip
    """A profile from a CSV file of (y, z) rows (a header line and ``#`` comments allowed; comma,
    semicolon, tab or space separated), in metres times ``unit`` (1000 for millimetres), already
    in this module's frame: for ``kind="rail"`` z is the height (up), for ``kind="wheel"`` z is
    the radius offset from ``nominal_radius`` (m), positive away from the axle."""
    if kind not in ("wheel", "rail"):
        raise ValueError(f"kind must be 'wheel' or 'rail', got {kind!r}")
    if kind == "wheel" and nominal_radius is None:
        raise ValueError("a wheel profile needs its nominal_radius (m): the file gives radius offsets")
    path = _path(path)
    rows = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        fields = [f for f in text.replace(",", " ").replace(";", " ").split() if f]
        try:
            values = [float(f) for f in fields[:2]]
        except ValueError:
            if not rows:  # a header line
                continue
            raise ValueError(f"{path}, line {number}: {line.strip()!r} is not two numbers") from None
        if len(values) < 2:
            raise ValueError(f"{path}, line {number}: {line.strip()!r} has fewer than two numbers")
        rows.append(values)
    if not rows:
        raise ValueError(f"{path}: no (y, z) rows")
    data = np.array(rows) / unit
    return _oriented(data[:, 0], data[:, 1], kind, nominal_radius, smoothing, path.stem, str(path))


def read_simpack(path, nominal_radius: float | None = None, smoothing: float = 0.0) -> Profile:
    """A profile from a SIMPACK ``.prw`` (wheel: give ``nominal_radius``, m) or ``.prr`` (rail)
    file (module docstring)."""
    path = _path(path)
    header, rows, kind = {}, [], None
    inside = in_header = False
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        text = line.split("!", 1)[0].strip()
        if not text:
            continue
        if text in ("header.begin", "header.end"):
            in_header = text == "header.begin"
            continue
        if text == "point.begin":
            inside = True
            continue
        if text == "point.end":
            inside = False
            continue
        if inside:
            try:
                rows.append([float(f) for f in text.split()[:2]])
            except ValueError:
                raise ValueError(f"{path}, line {number}: {text!r} is not a 'y z' pair") from None
            if len(rows[-1]) < 2:
                raise ValueError(f"{path}, line {number}: {text!r} is not a 'y z' pair")
        elif "=" in text:
            key, value = (part.strip() for part in text.split("=", 1))
            if in_header:  # the profile's type; the spline block has a 'type' of its own (the data file's)
                key = f"header.{key}"
            header[key] = value.strip("'\"")
    if "header.type" in header:
        kind = {"0": "rail", "1": "wheel"}.get(header["header.type"])
    if kind is None:
        raise ValueError(f"{path}: no 'type = 0' (rail) or 'type = 1' (wheel) in the header")
    if len(rows) < 4:
        raise ValueError(f"{path}: {len(rows)} points between point.begin and point.end, need at least 4")

    def number(key, default):
        try:
            return float(header.get(key, default))
        except ValueError:
            raise ValueError(f"{path}: header key {key} = {header[key]!r} is not a number") from None

    data = np.array(rows)
    unit = number("units.len.f", 1.0)
    if not unit > 0:
        raise ValueError(f"{path}: units.len.f must be positive, got {unit}")
    data = data + [number("shift.y", 0.0), number("shift.z", 0.0)]
    angle = number("rotate", 0.0) / number("units.ang.f", 1.0)
    if angle:
        c, s = math.cos(angle), math.sin(angle)
        data = data @ np.array([[c, s], [-s, c]])
    if number("mirror.y", 0) == 1:
        data[:, 0] *= -1.0
    if number("mirror.z", 0) == 1:
        data[:, 1] *= -1.0
    if number("inversion", 0) == 1:
        data = data[::-1]
    data /= unit
    y, z_down = data[:, 0], data[:, 1]
    return _oriented(y, z_down if kind == "wheel" else -z_down, kind, nominal_radius, smoothing,
                     header.get("comment", path.stem), str(path))  # fmt: skip


def s1002(nominal_radius: float = 0.46) -> Profile:
    """The S1002 wheel profile shipped with lcpdyn (``lcpdyn/data/profiles``, the Manchester
    Contact Benchmark's, from the CONTACT program: see its NOTICE), about the nominal radius r0
    (m) at the tape circle, 70 mm from the flange back; y from the tape circle, flange at −y."""
    return read_simpack(DATA / "MBench_S1002_v3.prw", nominal_radius=nominal_radius)


def uic60() -> Profile:
    """The UIC60 rail head shipped with lcpdyn (the Manchester Contact Benchmark's): as in its
    file, already canted 1:40 towards the track centre (−y), origin at the canted head's highest
    point. The gauge is measured 14 mm below the crown (y = −43.04 mm here)."""
    return read_simpack(DATA / "MBench_UIC60_v3.prr")


def _oriented(y, z, kind, nominal_radius, smoothing, name, source) -> Profile:
    """(y, z) in this module's frame as a profile: a wheel's z is the radius offset, a rail's
    the height; both are traversed with y increasing overall (the gauge side first)."""
    if kind == "wheel":
        if nominal_radius is None:
            raise ValueError("a wheel profile needs its nominal_radius (m): the file gives radius offsets")
        _positive("nominal_radius", nominal_radius)
        z = nominal_radius + z
    if y[-1] < y[0]:
        y, z = y[::-1], z[::-1]
    return Profile.from_points(y, z, smoothing=smoothing, name=name, source=source)
