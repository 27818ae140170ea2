"""Root loci: eigenvalues of Schwab–Meijaard 2003 Eq. (29) over a parameter sweep.

A stability scene (see :mod:`scenes`) provides ``system()`` (a :class:`MinimalSystem`),
``nominal(p) -> x0`` (the steady motion for parameters p) and ``SWEEP`` (the default parameter
and range). :func:`root_locus` linearizes at every value (one JAX compilation for the sweep);
:func:`critical_values` finds where the sweep crosses the stability boundary (the largest real
part of the eigenvalues through zero); :func:`plot_root_locus` draws the locus with those values
and, for the scenes of the source papers, the published ones (:func:`published_values`).
"""

from __future__ import annotations

import json
import math
import textwrap

import numpy as np

from . import __version__

__all__ = [
    "root_locus",
    "parse_sweep",
    "critical_values",
    "published_values",
    "axis_labels",
    "plot_root_locus",
    "write_root_locus",
]


def parse_sweep(text: str) -> tuple[str, np.ndarray]:
    """``"name=start:stop:count"`` -> (name, values)."""
    try:
        name, spec = text.split("=", 1)
        start, stop, count = spec.split(":")
        start, stop, count = float(start), float(stop), int(count)
    except ValueError:
        raise ValueError(f"--param expects NAME=START:STOP:COUNT, got {text!r}") from None
    if count < 2 or not (np.isfinite(start) and np.isfinite(stop)):
        raise ValueError(f"--param needs finite bounds and COUNT >= 2, got {text!r}")
    return name.strip(), np.linspace(start, stop, count)


def root_locus(module, name: str, values, **fixed) -> dict:
    """Eigenvalues (len(values), state size) at each value of parameter ``name``, sorted by
    real part then imaginary part; plus the parameters used."""
    system = module.system()
    rows = []
    for value in values:
        p = dict(fixed, **{name: float(value)})
        linear = system.linearize(module.nominal(system.params(**p)), **p)
        rows.append(np.array(sorted(linear.eigenvalues, key=lambda z: (round(z.real, 12), z.imag))))
    return {
        "scene": module.NAME,
        "parameter": name,
        "values": np.asarray(values, float),
        "eigenvalues": np.array(rows),
        "fixed": fixed,
        "defaults": system.parameters,
    }


# --- the stability boundary ---------------------------------------------------------------------
def _tolerance(eigenvalues: np.ndarray, rtol: float) -> float:
    """Real parts within this of zero count as zero (rounding of marginal eigenvalues)."""
    scale = float(np.max(np.abs(eigenvalues))) if eigenvalues.size else 0.0
    return rtol * scale if scale > 0 else rtol


def _without_structural_zeros(eigenvalues: np.ndarray, tol: float) -> tuple[np.ndarray, int]:
    """The eigenvalues without those that vanish at every sweep value (cyclic and kinematic
    coordinates, Schwab–Meijaard 2003 Sec. 3.2): the k smallest in modulus of each row, k the
    fewest zeros (|lambda| <= tol) of any row. Returns (rows, k)."""
    if eigenvalues.size == 0:
        return eigenvalues, 0
    count = int(np.min(np.sum(np.abs(eigenvalues) <= tol, axis=1)))
    rows = [np.delete(row, np.argsort(np.abs(row), kind="stable")[:count]) for row in eigenvalues]
    return np.array(rows).reshape(len(eigenvalues), -1), count


def _classify(eigenvalues: np.ndarray, rtol: float):
    """(eigenvalues without the structural zeros, unstable per row (bool), the rounding floor).

    An eigenvalue counts as unstable when Re(lambda) > rtol |lambda| + floor, its own modulus
    setting its threshold, with floor = 1e-12 max|lambda| over the sweep (rounding of the whole
    state matrix). A global threshold rtol max|lambda| would let a stiff system's fast modes
    decide for its slow ones (the beam-tyre shimmy: |lambda| up to 3e8 against a 165 rad/s shimmy
    mode growing at 2 1/s)."""
    floor = _tolerance(eigenvalues, 1e-12)
    eigenvalues, _ = _without_structural_zeros(eigenvalues, _tolerance(eigenvalues, rtol))
    if eigenvalues.shape[1] == 0:
        return eigenvalues, np.zeros(len(eigenvalues), bool), floor
    unstable = np.any(eigenvalues.real > rtol * np.abs(eigenvalues) + floor, axis=1)
    return eigenvalues, unstable, floor


def unstable_values(result: dict, rtol: float = 1e-8) -> np.ndarray:
    """Per sweep value of a :func:`root_locus` result, whether the motion is unstable (the
    criterion of :func:`critical_values`)."""
    eigenvalues = np.asarray(result["eigenvalues"], complex)
    if eigenvalues.size == 0:
        return np.zeros(len(eigenvalues), bool)
    return _classify(eigenvalues, rtol)[1]


def critical_values(result: dict, rtol: float = 1e-8) -> list[dict]:
    """Every crossing of the stability boundary in a :func:`root_locus` sweep.

    Eigenvalues that vanish at every value of the sweep (cyclic and kinematic coordinates, e.g.
    the rolling disk's six) are set aside first: they would pin max Re at zero. At each sweep
    value the motion then counts as *unstable* where a remaining eigenvalue has
    Re(lambda) > rtol |lambda| + floor (its own modulus sets its threshold; floor = 1e-12
    max|lambda| over the sweep is the rounding of the state matrix), and as not unstable otherwise
    (asymptotically stable, or marginal within that threshold -- e.g. the undamped slalom pair of
    the rolling disk). g = max Re(lambda) of the remaining eigenvalues. A crossing lies between
    two successive values whose classes differ; its parameter value is found by linear
    interpolation between them:

    * of g itself, where g changes sign (a complex pair or a real eigenvalue crossing the
      imaginary axis transversally; Hopf or divergence boundary) or where the unstable mode is
      complex;
    * of lambda^2 of the critical mode, where a real pair +-sigma on the unstable side meets at the
      origin and leaves as an imaginary pair +-i omega on the marginal side (the rolling disk at
      its critical speed): g ~ sqrt(v_c - v) there, but lambda^2 (sigma^2 > 0, then -omega^2 < 0)
      is smooth and crosses zero linearly.

    Returns one dict per crossing, in the order of the sweep (increasing index):

    * ``parameter``: the swept parameter's name; ``value``: the interpolated critical value;
    * ``direction``: ``"destabilizing"`` (stable or marginal before, unstable after, following the
      sweep's order) or ``"stabilizing"``;
    * ``frequency``: |Im lambda| of the critical mode at the crossing (angular frequency, 1/time
      unit of the scene; 0 for a non-oscillatory crossing); ``kind``: ``"oscillatory"`` or
      ``"non-oscillatory"``;
    * ``bracket``: the two sweep values; ``max_real``: g at them; ``interpolated``: ``"max Re"`` or
      ``"lambda^2"`` (which quantity was interpolated).
    """
    values = np.asarray(result["values"], float)
    eigenvalues = np.asarray(result["eigenvalues"], complex)
    if values.size < 2:
        return []
    eigenvalues, unstable, floor = _classify(eigenvalues, rtol)
    if eigenvalues.shape[1] == 0:
        return []
    g = eigenvalues.real.max(axis=1)

    def zero(z):  # within the classification's threshold of zero
        return np.abs(np.real(z)) <= rtol * np.abs(z) + floor

    out = []
    for k in np.flatnonzero(unstable[:-1] != unstable[1:]):
        a, b = k, k + 1
        u, m = (a, b) if unstable[a] else (b, a)  # index on the unstable side, on the other side
        lead = eigenvalues[u][np.argmax(eigenvalues[u].real)]
        method, value, frequency = "max Re", None, 0.0
        paired = np.any(np.abs(eigenvalues[u] + lead.real) <= 1e-6 * abs(lead))  # -sigma is there too
        lead_m = eigenvalues[m][np.argmax(eigenvalues[m].real)]
        if zero(lead_m) and abs(lead.imag) <= rtol * abs(lead) + floor and paired:
            # a real pair +-sigma turning into +-i omega through the origin: interpolate lambda^2
            others = eigenvalues[m]
            candidates = others[zero(others) & (others.imag > floor)]
            if candidates.size:
                partner = candidates[np.argmin(np.abs(candidates - lead))]
                s_u, s_m = lead.real**2, -(partner.imag**2)
                fraction = s_u / (s_u - s_m)  # from the unstable point towards the other one
                value = values[u] + fraction * (values[m] - values[u])
                method = "lambda^2"
        if value is None:
            fraction = (0.0 - g[a]) / (g[b] - g[a]) if g[b] != g[a] else 0.5
            value = values[a] + fraction * (values[b] - values[a])
            lead_a = eigenvalues[a][np.argmax(eigenvalues[a].real)]
            lead_b = eigenvalues[b][np.argmax(eigenvalues[b].real)]
            frequency = abs(lead_a.imag) + fraction * (abs(lead_b.imag) - abs(lead_a.imag))
        frequency = float(frequency)
        if frequency <= floor:
            frequency = 0.0
        out.append(
            {
                "parameter": result["parameter"],
                "value": float(value),
                "direction": "destabilizing" if unstable[b] else "stabilizing",
                "frequency": frequency,
                "kind": "oscillatory" if frequency > 0 else "non-oscillatory",
                "bracket": [float(values[a]), float(values[b])],
                "max_real": [float(g[a]), float(g[b])],
                "interpolated": method,
            }
        )
    return out


# --- labels and published values of the scenes of the source papers ------------------------------
_SI = {
    "rolling-disk": {
        "speed": ("forward speed v", "m/s"),
        "radius": ("disk radius r", "m"),
        "mass": ("disk mass m", "kg"),
        "gravity": ("gravity g", "m/s²"),
    },
    "swivel-shimmy": {
        "a_over_l": ("centre-of-mass position a/l", "–"),
        "speed": ("forward speed v", "m/s"),
        "mass": ("mass m", "kg"),
        "length": ("swivel-arm length l", "m"),
        "stiffness": ("lateral strut stiffness k", "N/m"),
        "gyration": ("I/(m l²) = r²/l²", "–"),
    },
    "caster-shimmy": {
        "yoke_length": ("yoke length l", "m"),
        "radius": ("wheel radius r", "m"),
        "speed": ("forward speed v", "m/s"),
        "flexible": ("yoke flexibility (0 rigid, 1 flexible)", "–"),
    },
    "wheelset-hunting": {
        "speed": ("forward speed V", "m/s"),
        "yaw_stiffness": ("yaw spring k_psi", "N m/rad"),
        "load": ("total vertical load", "N"),
        "f11": ("creep coefficient f11", "N"),
        "f22": ("creep coefficient f22", "N"),
        "f23": ("spin-lateral creep coefficient f23", "N m"),
        "saturation": ("saturation (1 on, 0 off)", "–"),
    },
}


def _parameters(result: dict) -> dict:
    return {**{k: float(v) for k, v in result["defaults"].items()}, **{k: float(v) for k, v in result["fixed"].items()}}


def axis_labels(result: dict) -> dict:
    """``{"parameter": axis label with unit, "rate": unit of the eigenvalues, "units": note}`` for
    a :func:`root_locus` result. The rolling disk is in the paper's units m = r = g = 1 (speed in
    sqrt(g r), eigenvalues in sqrt(g/r)) unless radius or gravity are set or swept; the shimmy
    scenes are read in SI units; other scenes get the bare parameter name and "1/time unit"."""
    scene, name = result["scene"], result["parameter"]
    p = _parameters(result)
    if (
        scene == "rolling-disk"
        and name not in ("radius", "gravity", "mass")
        and p.get("radius") == 1.0
        and p.get("gravity") == 1.0
        and p.get("mass") == 1.0
    ):
        names = {"speed": ("forward speed v", "√(g r)")}
        label, unit = names.get(name, (name, "–"))
        return {
            "parameter": f"{label} ({unit})",
            "rate": "√(g/r)",
            "units": "units m = r = g = 1 (time in √(r/g), Schwab–Meijaard 2003 Sec. 3.2)",
        }
    if scene in _SI:
        label, unit = _SI[scene].get(name, (name, "SI"))
        return {"parameter": f"{label} ({unit})", "rate": "1/s", "units": "SI units"}
    return {"parameter": f"{name} (scene units)", "rate": "1/time unit", "units": "the scene's units"}


def _swivel_eq31(p: dict) -> np.ndarray:
    """Roots of Schwab–Meijaard 2003 Eq. (31)."""
    l, a = p["length"], p["a_over_l"] * p["length"]
    r2 = p["gyration"] * l * l
    omega, omega_n2 = p["speed"] / l, p["stiffness"] * l * l / (p["mass"] * (a * a + r2))
    mu = (a * (l - a) - r2) / (a * a + r2)
    return np.roots([1.0, (1.0 + mu) * omega, omega_n2, omega_n2 * omega])


def published_values(result: dict) -> dict:
    """What the source papers give for a :func:`root_locus` result of one of their scenes:
    ``{"critical": [{"value", "label"}, ...], "curves": [{"values", "eigenvalues", "label"}],
    "points": [{"value", "eigenvalue", "label"}]}`` (critical parameter values; eigenvalues from
    published closed forms at the sweep values; single published eigenvalues).
    Empty lists for other scenes and parameters."""
    scene, name = result["scene"], result["parameter"]
    values = np.asarray(result["values"], float)
    p = _parameters(result)
    critical, curves, points = [], [], []
    if scene == "rolling-disk" and name in ("speed", "radius", "gravity"):
        # upright rolling is unstable below v^2 = g r / 3 (Neimark-Fufaev; Schwab-Meijaard 2003 Sec. 3.2)
        v, r, g = p["speed"], p["radius"], p["gravity"]
        value = {
            "speed": math.sqrt(g * r / 3),
            "radius": 3 * v * v / g if g else math.nan,
            "gravity": 3 * v * v / r if r else math.nan,
        }[name]
        formula = {"speed": "v_c = √(g r/3)", "radius": "r_c = 3v²/g", "gravity": "g_c = 3v²/r"}[name]
        if math.isfinite(value):
            critical.append({"value": value, "label": f"Schwab–Meijaard 2003 Sec. 3.2: {formula} = {value:.5g}"})
    elif scene == "swivel-shimmy":
        if name == "a_over_l" and p["gyration"] < 0.25:
            # Eq. (32): stable iff a (l - a) > r^2
            half = math.sqrt(0.25 - p["gyration"])
            for value in (0.5 - half, 0.5 + half):
                critical.append(
                    {"value": value, "label": f"Schwab–Meijaard 2003 Eq. (32): a(l − a) = r², a/l = {value:.4g}"}
                )
                # the critical case (their text after Eq. 32): lambda_1 = -omega, lambda_2,3 = +-i omega_n
                a_ = value * p["length"]
                omega_n = math.sqrt(
                    p["stiffness"] * p["length"] ** 2 / (p["mass"] * (a_ * a_ + p["gyration"] * p["length"] ** 2))
                )
                label = "Schwab–Meijaard 2003, text after Eq. (32): λ = −v/l, ±iω_n where a(l − a) = r²"
                points.append({"value": value, "eigenvalue": 1j * omega_n, "label": label})
                points.append({"value": value, "eigenvalue": -p["speed"] / p["length"] + 0j, "label": label})
        if name == "speed":
            critical.append({"value": 0.0, "label": "Schwab–Meijaard 2003 Eq. (32): v = 0"})
        roots = np.array([np.sort_complex(_swivel_eq31({**p, name: v})) for v in values])
        curves.append({"values": values, "eigenvalues": roots, "label": "Schwab–Meijaard 2003 Eq. (31), roots"})
    elif scene == "caster-shimmy" and name != "flexible" and p["flexible"] in (0.0, 1.0):
        # Eq. (34) (rigid yoke): lambda = 0, +-i v/r; Eq. (35) (flexible): +-i v / (r sqrt(1 + kappa))
        rows = []
        for v in values:
            q = {**p, name: v}
            L = q["yoke_length"] / q["radius"]
            kappa = q["flexible"] * (2 * L * L + 3 * L) / (3 * L + 6)
            omega = q["speed"] / (q["radius"] * math.sqrt(1 + kappa))
            rows.append([-1j * omega, 0.0, 1j * omega])
        which = "Eq. (35), flexible yoke" if p["flexible"] else "Eq. (34), rigid yoke"
        curves.append({"values": values, "eigenvalues": np.array(rows), "label": f"Schwab–Meijaard 2003 {which}"})
        if name == "yoke_length" and p["flexible"] == 1.0:
            # their finite-element simulation (EI = 10, l = r = 1): wavelength 7.83, i.e. omega = 2 pi v / 7.83
            omega = 2 * math.pi * p["speed"] / (7.83 * p["radius"])
            points.append(
                {
                    "value": p["radius"],
                    "eigenvalue": 1j * omega,
                    "label": f"Schwab–Meijaard 2003 Sec. 3.3, FE simulation at l = r: wavelength 7.83 r, "
                    f"Im λ = 2πv/(7.83 r) = {omega:.4g}",
                }
            )
    elif scene == "wheelset-hunting" and name == "speed" and p["yaw_stiffness"] in (0.0, 816e3):
        # slant 1/40 (the stability scene's): Schwab-Meijaard 2002 Sec. 5.2
        value = 30.4 if p["yaw_stiffness"] == 0.0 else 55.5
        spring = "no springs" if p["yaw_stiffness"] == 0.0 else "yaw spring 816 kN m/rad"
        label = f"Schwab–Meijaard 2002 §5.2, slant 1/40, {spring}: V_cr = {value} m/s"
        critical.append({"value": value, "label": label})
    return {"critical": critical, "curves": curves, "points": points}


def plot_root_locus(result: dict, path, scale: float = 1.0, references: dict | None = None, title: str | None = None):
    """Root-locus figure of a :func:`root_locus` result, written to ``path``; returns the
    (closed) matplotlib Figure. Left: real parts and (upper-half) imaginary parts against the
    swept parameter; right: the complex plane coloured by the parameter. Eigenvalues that are zero
    at every value are not drawn (a legend entry says how many). The critical values of
    :func:`critical_values` are marked (solid lines, stars), and so are ``references`` (default
    :func:`published_values`): published critical values as dashed lines, published eigenvalues as
    open circles. Eigenvalues are divided by ``scale`` (the unit label says so)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    values = np.asarray(result["values"], float)
    eigenvalues = np.asarray(result["eigenvalues"], complex)
    labels = axis_labels(result)
    rate = labels["rate"] if scale == 1.0 else f"{scale:g} {labels['rate']}"
    references = published_values(result) if references is None else references
    name = labels["parameter"].rsplit(" (", 1)[0]
    tol = _tolerance(eigenvalues, 1e-8)
    crossings = critical_values(result)

    # eigenvalues that vanish at every value: drawn nowhere, counted in the legend
    kept, zero_count = _without_structural_zeros(eigenvalues, tol)
    kept = kept / scale
    pv = np.repeat(values, kept.shape[1])
    flat = kept.ravel()
    real_mask = np.abs(flat.imag) <= tol / scale
    upper = flat.imag > tol / scale

    fig = plt.figure(figsize=(12.5, 6.4))
    grid = fig.add_gridspec(2, 2, width_ratios=(1.15, 1.0), hspace=0.08, wspace=0.28)
    ax_re = fig.add_subplot(grid[0, 0])
    ax_im = fig.add_subplot(grid[1, 0], sharex=ax_re)
    ax_c = fig.add_subplot(grid[:, 1])
    if real_mask.any():
        ax_re.plot(
            pv[real_mask], flat.real[real_mask], ".", color="C0", ms=3.5, zorder=3, label="real eigenvalue (ours)"
        )
    if upper.any():
        pair = "complex pair (ours): common real part (top), Im λ > 0 (bottom; the conjugate is not drawn)"
        ax_re.plot(pv[upper], flat.real[upper], "^", color="C1", ms=3.0, zorder=3, label=pair)
        ax_im.plot(pv[upper], flat.imag[upper], "^", color="C1", ms=3.0, zorder=3, label=pair)
    if np.ptp(flat.real) <= 10 * tol / scale if flat.size else True:  # all real parts ~0: no rounding-level axis
        span = 0.1 * max(float(np.max(np.abs(flat))) if flat.size else 0.0, tol / scale, 1e-12)
        ax_re.set_ylim(-span, span)
        ax_c.set_xlim(-span, span)
    sc = ax_c.scatter(
        flat.real, flat.imag, c=pv, s=7, cmap="viridis", zorder=3, label=f"eigenvalues (ours), coloured by {name}"
    )
    fig.colorbar(sc, ax=ax_c, label=labels["parameter"], pad=0.02)
    for ax in (ax_re, ax_im):
        ax.axhline(0, color="k", lw=0.6, zorder=1)
        ax.grid(alpha=0.3)
    ax_c.axvline(0, color="k", lw=0.6, zorder=1)
    ax_c.axhline(0, color="k", lw=0.6, zorder=1)
    ax_c.grid(alpha=0.3)

    # published eigenvalues: open circles on a subsample, over our dots
    for curve in references.get("curves", []):
        step = max(1, len(curve["values"]) // 25)
        cv = np.asarray(curve["values"])[::step]
        ce = np.asarray(curve["eigenvalues"], complex)[::step] / scale
        cp = np.repeat(cv, ce.shape[1])
        cf = ce.ravel()
        nonzero = np.abs(cf) > tol / scale  # as for ours, eigenvalues at the origin are not drawn
        cp, cf = cp[nonzero], cf[nonzero]
        c_real = np.abs(cf.imag) <= tol / scale
        c_upper = cf.imag > tol / scale
        style = dict(ls="none", marker="o", mfc="none", mec="C3", ms=6.5, mew=0.8, alpha=0.9, zorder=4)
        ax_re.plot(cp[c_real | c_upper], cf.real[c_real | c_upper], **style, label=curve["label"])
        ax_im.plot(cp[c_upper], cf.imag[c_upper], **style, label=curve["label"])
        ax_c.plot(cf.real, cf.imag, **style, label=curve["label"])

    seen = set()
    for point in references.get("points", []):
        z = complex(point["eigenvalue"]) / scale
        style = dict(
            ls="none",
            marker="D",
            mfc="none",
            mec="C4",
            ms=9,
            mew=1.4,
            zorder=6,
            label=None if point["label"] in seen else point["label"],
        )
        seen.add(point["label"])
        ax_re.plot([point["value"]], [z.real], **style)
        if z.imag > 0:
            ax_im.plot([point["value"]], [z.imag], **{**style, "label": None})
        ax_c.plot([z.real, z.real], [z.imag, -z.imag], **{**style, "label": None})

    # critical values: ours solid (wide, translucent), published dashed on top
    for i, c in enumerate(crossings):
        a, b = c["bracket"]
        label = (
            f"critical value (ours), {c['direction']}: {name} = {c['value']:.5g} "
            f"(interpolated in [{a:.4g}, {b:.4g}])"
            + (f", Im λ = ±{c['frequency'] / scale:.4g} {rate}" if c["frequency"] else ", λ = 0")
        )
        for ax in (ax_re, ax_im):
            ax.axvline(c["value"], color="0.25", lw=3.0, alpha=0.45, zorder=2, label=label if ax is ax_re else None)
        omega = c["frequency"] / scale
        ax_c.plot(
            [0.0, 0.0],
            [omega, -omega],
            "*",
            color="k",
            ms=12,
            mfc="none",
            zorder=5,
            label="ours: eigenvalues at the critical value" if i == 0 else None,
        )
    for r in references.get("critical", []):
        coincide = any(abs(r["value"] - c["value"]) <= 0.01 * np.ptp(values) for c in crossings)
        for ax in (ax_re, ax_im):
            ax.axvline(
                r["value"],
                color="C3",
                lw=1.3,
                ls="--",
                zorder=6,
                label=(r["label"] + (" (drawn over ours)" if coincide else "")) if ax is ax_re else None,
            )

    ax_re.set_ylabel(f"real part Re λ ({rate})")
    ax_im.set_ylabel(f"imaginary part Im λ ({rate})")
    ax_im.set_xlabel(labels["parameter"])
    plt.setp(ax_re.get_xticklabels(), visible=False)
    ax_c.set_xlabel(f"real part Re λ ({rate})")
    ax_c.set_ylabel(f"imaginary part Im λ ({rate})")
    handles, names = [], []
    for ax in (ax_re, ax_im, ax_c):  # one legend below the panels, each entry once
        for handle, text in zip(*ax.get_legend_handles_labels()):
            if text not in names:
                handles.append(handle)
                names.append(text)
    if zero_count:
        handles.append(Line2D([], [], ls="none"))
        names.append(f"not drawn: {zero_count} eigenvalue{'s' if zero_count > 1 else ''} λ = 0 at every value")
    if not crossings:
        handles.append(Line2D([], [], ls="none"))
        names.append("no crossing of the stability boundary (max Re λ through 0) in the sweep")
    names = [textwrap.fill(text, 80, subsequent_indent="  ") for text in names]
    fig.legend(handles, names, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, 0.045), ncol=2, frameon=False)
    fixed = ", ".join(f"{k} = {v:g}" for k, v in _parameters(result).items() if k != result["parameter"])
    heading = title or f"{result['scene']}: root locus over {name}"
    fig.suptitle(
        f"{heading}\neigenvalues λ of the linearized equations (Schwab–Meijaard 2003 Eq. 29); "
        f"{labels['units']}" + (f"\nother parameters: {fixed}" if fixed else ""),
        fontsize=10.5,
    )
    fig.savefig(path, dpi=130, bbox_inches="tight")
    plt.close(fig)
    return fig


def write_root_locus(result: dict, path, extra: dict | None = None) -> None:
    """Writes a root-locus sweep's ``result`` (with ``extra`` entries) to ``path`` as JSON, with the lcpdyn version."""
    payload = {
        "lcpdyn_version": __version__,
        "scene": result["scene"],
        "parameter": result["parameter"],
        "values": result["values"].tolist(),
        "fixed": result["fixed"],
        "defaults": {k: float(v) for k, v in result["defaults"].items()},
        "eigenvalues_real": result["eigenvalues"].real.tolist(),
        "eigenvalues_imag": result["eigenvalues"].imag.tolist(),
        "critical_values": critical_values(result),
        **(extra or {}),
    }
    with open(path, "w") as handle:
        json.dump(payload, handle, indent=1)
