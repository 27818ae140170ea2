"""Hunting of a railway wheelset under creep forces, S1002 on UIC60 (Schwab & Meijaard 2002 §5.2).

The paper's wheelset (1887 kg, inertias 1000, 100, 1000 kg m², total vertical load 173,226 N)
in the moving frame of :mod:`scenes.wheelset_klingel` -- the same placed profiles, the forward
speed held at ``speed`` by a non-holonomic constraint -- but with the tangential rows of its two
:class:`~lcpdyn.wheel_rail.WheelRailContact` elements carrying the creep law
(:class:`~lcpdyn.friction.Creep`: Kalker's linear coefficients f11 = f22 = 12 MN and the
spin-lateral coupling f23 = 20 kN m, Vermeulen–Johnson saturation at ``mu``), the load beyond the
wheelset's weight applied at its centre, and an optional yaw spring ``yaw_stiffness`` to the
moving frame (816 kN m/rad in the paper). It starts shifted sideways by ``amplitude`` at rest on
both rails and rolls; the lateral motion grows (hunting) above the critical speed and decays
below it.

The paper: V_cr = 30.4 m/s at slant 1/40 without springs, 55.5 m/s with the yaw spring, 130.0
m/s at slant 1/20 with it (the free wheelset at 1/20 is unstable at low speed, its gravitational
stiffness being negative). :func:`growth_rate` measures the growth of a run's lateral motion;
:func:`report` finds V_cr by simulation and by linearization (:func:`system`) and compares them
with the paper. Run it under the creep law: ``lcpdyn run wheelset-hunting --friction creep``.

Flange contact (``flange_stiffness`` > 0, N/m, with ``flange_damping``, N s/m): each wheel gets the
paper's second contact pair (§1), its flange and root as a compliant element beside its rigid
tread (:func:`scenes.wheelset_klingel.wheelset` with a flange law; :mod:`lcpdyn.wheel_rail`, "Two
contact pairs per wheel"). The paper gives no values. Without it (the default) a motion growing
into flange contact stops the run where the single-point element finds no contact point
(:func:`run` keeps the steps before it). With it, :func:`limit_cycle` runs the paper's Figs.
9-10 (:data:`LIMIT_CYCLE`: slant 1/20, the yaw spring, 131 m/s, a 5 mm start, 1e9 N/m and 1e5 N
s/m, a Hertzian contact's stiffness): the wheelset hunts from flange to flange, the lateral
motion bounded by the flange pairs. A soft flange pair (2e7 N/m) let the wheel sink into it and
derailed the wheelset at its first flange contact.

Differences from the paper: the tread contact is rigid (complementarity); ``mu`` = 0.3
is assumed (the paper does not give the friction coefficient of its saturation); the creep law
has no spin moment. Cost: ~1.7 ms per 1 ms step on one core (regularized friction: 1.1 ms),
after ~9-11 s of compilation; with the flange pairs 3.8 ms after 18 s; the linearization
compiles in ~80-100 s, then ~4 ms per speed.
"""

from __future__ import annotations

import functools
import math
import sys

import jax
import jax.numpy as jnp
import numpy as np

from lcpdyn.compliance import SpringDamperLaw
from lcpdyn.forces import BodyForce
from lcpdyn.friction.creep import saturation
from lcpdyn.nonholonomic import MinimalSystem
from lcpdyn.precision import float64
from lcpdyn.rotation import rot_x, rot_y, rot_z
from lcpdyn.wheel_rail import contact_at, wheel_rail_frame

from . import wheelset_klingel
from .scene import Scene, override

NAME = "wheelset-hunting"
SWEEP = ("speed", 5.0, 80.0, 76)  # lcpdyn stability wheelset-hunting (slant 1/40)
DEFAULTS = {
    "cant": 1 / 40,
    "gauge": 1.435,
    "flange_back_distance": 1.360,
    "nominal_radius": 0.46,
    "amplitude": 1e-3,
    "speed": 30.0,
    "mass": 1887.0,
    "load": 173226.0,
    "yaw_stiffness": 0.0,
    "mu": 0.3,
    "f11": 12e6,
    "f22": 12e6,
    "f23": 20e3,
    "flange_stiffness": 0.0,
    "flange_damping": 0.0,
    "dt": 1e-3,
    "t_end": 2.0,
}
PAPER_CRITICAL_SPEED = {("1/40", 0.0): 30.4, ("1/40", 816e3): 55.5, ("1/20", 816e3): 130.0}  # m/s, §5.2
GRAVITY = 9.81


def yaw_angle(R):
    """The yaw psi (rad) of the axle e = R e_y about the vertical: psi = atan2(-e_x, e_y)."""
    e = R[:, 1]
    return jnp.arctan2(-e[0], e[1])


class YawSpring(BodyForce):
    """A yaw spring from the wheelset to the moving frame: potential k psi^2 / 2 in the axle's
    yaw psi (:func:`yaw_angle`), so the torque is -k psi (e x d psi/d e) (world), exact at any
    roll. It is measured on the axle, not on body axes across it, which turn with the wheel's
    spin (a :class:`~lcpdyn.forces.TorsionalSpringDamper` about body z would wind up)."""

    def __init__(self, body, stiffness: float):
        self.stiffness = float(stiffness)
        super().__init__(body, self._wrench)

    def _wrench(self, t, state):
        R = state.rotation(self.body)
        e, psi = R[:, 1], yaw_angle(R)
        gradient = jnp.array([-e[1], e[0], 0.0]) / (e[0] ** 2 + e[1] ** 2)
        return jnp.zeros(3), -self.stiffness * psi * jnp.cross(e, gradient)

    def nonconservative_wrenches(self, t, state):
        return []  # a spring: its work is in the potential

    def potential(self, state):
        return 0.5 * self.stiffness * yaw_angle(state.rotation(self.body)) ** 2


def build(**parameters) -> Scene:
    """The hunting wheelset (module docstring) with ``parameters`` overriding its defaults."""
    p = override(DEFAULTS, parameters, NAME)
    for key in ("speed", "mass", "nominal_radius"):
        if not p[key] > 0:
            raise ValueError(f"scene {NAME!r}: {key} must be positive, got {p[key]!r}")
    if p["load"] < p["mass"] * GRAVITY:
        raise ValueError(
            f"scene {NAME!r}: the total vertical load {p['load']!r} N is below the wheelset's weight "
            f"{p['mass'] * GRAVITY:.1f} N"
        )
    if p["yaw_stiffness"] < 0:
        raise ValueError(f"scene {NAME!r}: yaw_stiffness must be >= 0, got {p['yaw_stiffness']!r}")
    if p["flange_stiffness"] < 0 or p["flange_damping"] < 0:
        raise ValueError(
            f"scene {NAME!r}: flange_stiffness and flange_damping must be >= 0, got "
            f"{p['flange_stiffness']!r}, {p['flange_damping']!r}"
        )
    law = SpringDamperLaw(p["flange_stiffness"], p["flange_damping"]) if p["flange_stiffness"] > 0 else None
    model = wheelset_klingel.wheelset(wheelset_klingel.geometry(p), p, flange_law=law)
    body = model.bodies[0]
    extra = p["load"] - p["mass"] * GRAVITY
    model.add_force(BodyForce(body, lambda t, state: (jnp.array([0.0, 0.0, -extra]), jnp.zeros(3))))
    if p["yaw_stiffness"] > 0:
        model.add_force(YawSpring(body, p["yaw_stiffness"]))
    return Scene.from_parameters(NAME, model, p, __doc__)


def half_cycle_extrema(y) -> list:
    """Indices of an oscillation's extrema, one per half-cycle: the largest |y| between sign
    changes (the last half-cycle, not closed by a sign change, left out)."""
    peaks = [i for i in range(1, len(y) - 1) if abs(y[i]) >= abs(y[i - 1]) and abs(y[i]) > abs(y[i + 1])
             and np.sign(y[i]) != 0]  # fmt: skip
    halves, current = [], []
    for i in peaks:
        if current and np.sign(y[i]) != np.sign(y[current[-1]]):
            halves.append(max(current, key=lambda j: abs(y[j])))
            current = []
        current.append(i)
    return halves


def growth_rate(t, y) -> dict:
    """The exponential growth rate sigma (1/s, negative: decay) of an oscillation y(t): a
    least-squares line through log |y| at its extrema (one per half-cycle, the first dropped as
    the start's transient), and the mean frequency (Hz) from their spacing; NaN with fewer than
    four extrema."""
    halves = half_cycle_extrema(y)
    if len(halves) < 4:
        return {"sigma": float("nan"), "frequency": float("nan"), "extrema": len(halves)}
    halves = np.array(halves[1:])
    times, logs = t[halves], np.log(np.abs(y[halves]))
    sigma = float(np.polyfit(times, logs, 1)[0])
    return {"sigma": sigma, "frequency": float(0.5 / np.mean(np.diff(times))), "extrema": int(halves.size)}


def _simulate(scene, friction="creep"):
    """(trajectory, why it stopped or None, stepping wall time s, compile time s) of one run; a
    run that stops keeps its steps so far."""
    import time

    from lcpdyn.stepper import SimulationError

    start = time.perf_counter()
    simulation = scene.simulation(friction)  # compiles the kinematics
    compiled = time.perf_counter()
    stopped = None
    try:
        trajectory = simulation.run(scene.t_end)
    except SimulationError as exc:
        trajectory, stopped = exc.trajectory, str(exc)
    return trajectory, stopped, time.perf_counter() - compiled, compiled - start


def run(friction="creep", **parameters) -> dict:
    """One run: lateral displacement y(t) against time and distance, its growth rate
    (:func:`growth_rate`) and the contact forces. A run that stops (a growing motion reaching
    the flange, where the single-point element finds no contact point) keeps its steps so far
    and says why in ``stopped``."""
    trajectory, stopped, wall, compile_s = _simulate(build(**parameters), friction)
    t, y = trajectory.t, trajectory.position[:, 0, 1]
    return {"t": t, "y": y, "x": trajectory.position[:, 0, 0], **growth_rate(t, y), "wall_s": wall,
            "compile_s": compile_s,
            "steps": len(t) - 1, "solved": bool(np.all(trajectory.solver_status == 0)), "stopped": stopped,
            "lateral_force": trajectory.contact_friction_force[:, :, 1],
            "normal_force": trajectory.contact_normal_force}  # fmt: skip


def critical_speed(speeds, sigmas) -> float:
    """Where the growth rate sigma(V) crosses zero (linear interpolation between the bracketing
    speeds), NaN if it does not change sign."""
    speeds, sigmas = np.asarray(speeds, float), np.asarray(sigmas, float)
    for a in range(len(speeds) - 1):
        if np.isfinite(sigmas[a]) and np.isfinite(sigmas[a + 1]) and sigmas[a] < 0 <= sigmas[a + 1]:
            return float(speeds[a] - sigmas[a] * (speeds[a + 1] - speeds[a]) / (sigmas[a + 1] - sigmas[a]))
    return float("nan")


# (slant, yaw stiffness N m/rad, starting shift m, speeds m/s) of the report's runs: the shift
# small enough for the linear range (at 1/40 the contact reaches the flange root by 0.4 mm)
REPORT_CASES = (
    ("1/40", 0.0, 1e-4, (22.0, 26.0, 30.0, 34.0)),
    ("1/40", 816e3, 1e-4, (36.0, 40.0, 44.0, 48.0)),
    ("1/20", 816e3, 1e-3, (120.0, 126.0, 132.0, 138.0)),
)


#: the limit cycle of Figs. 9-10: slant 1/20, yaw spring, 131 m/s (V_cr = 130.0 in the paper),
#: started 5 mm off centre, with flange pairs of a Hertzian contact's stiffness (the paper gives none)
LIMIT_CYCLE = {"cant": 1 / 20, "yaw_stiffness": 816e3, "speed": 131.0, "amplitude": 5e-3,
               "flange_stiffness": 1e9, "flange_damping": 1e5, "dt": DEFAULTS["dt"], "t_end": 2.0}  # fmt: skip
NADAL_MU = 0.3  #: the friction coefficient of Nadal's limit on the flange face's steepest angle


def nadal_limit(angle_deg: float, mu: float = NADAL_MU) -> float:
    """Nadal's flange-climb limit of Y/Q: (tan delta - mu) / (1 + mu tan delta)."""
    t = math.tan(math.radians(angle_deg))
    return (t - mu) / (1.0 + mu * t)


def wheel_forces(scene, trajectory) -> np.ndarray:
    """The rail's force on each wheel (tread and flange pair summed), (steps, 2, 2): lateral Y
    (along the track's t2, N) and vertical Q (along its normal, N), left wheel first. The normal
    force of step i acts along the normal at the step's starting pose (where its gap row was
    posed); the creep force is recorded in world axes."""
    model = scene.model
    kinematics = model.compile()
    plane = model.contacts[0].plane
    lateral, up = np.asarray(plane.t2, float), np.asarray(plane.normal, float)
    q0, v0 = model.initial_state()
    positions = np.concatenate([q0[None, :3], trajectory.position[:-1, 0]])
    quaternions = np.concatenate([q0[None, 3:7], trajectory.quaternion[:-1, 0]])
    forces = []
    for x, q in zip(positions, quaternions):
        normal = np.asarray(kinematics(np.concatenate([x, q]), v0, 0.0).normal)
        forces.append(normal)
    normal = np.asarray(forces)  # (steps, contacts, 3)
    total = trajectory.contact_normal_force[:, :, None] * normal + trajectory.contact_friction_force
    pairs = [[0, 2], [1, 3]] if total.shape[1] == 4 else [[0], [1]]
    per_wheel = np.stack([total[:, pair].sum(axis=1) for pair in pairs], axis=1)  # (steps, 2, 3)
    return np.stack([per_wheel @ lateral, per_wheel @ up], axis=2)


def limit_cycle(**parameters) -> dict:
    """The paper's limit cycle (Figs. 9-10; :data:`LIMIT_CYCLE` with ``parameters`` over it): the
    run's lateral motion and, over its second half (the cycle settled), the amplitude (mean and
    spread of |y| at the extrema, one per half-cycle: :func:`half_cycle_extrema`), frequency and
    wavelength, the wheels' forces (:func:`wheel_forces`: largest |Y|, largest Y/Q against
    Nadal's limit), the flange pairs' share of steps in contact and largest force, the largest
    lift of the axle, the cost per step."""
    p = {**LIMIT_CYCLE, **parameters}
    scene = build(**p)
    trajectory, stopped, wall, compile_s = _simulate(scene)
    t, y = trajectory.t, trajectory.position[:, 0, 1]
    YQ = wheel_forces(scene, trajectory)
    settled = t >= 0.5 * t[-1]
    extrema = [i for i in half_cycle_extrema(y) if settled[i]]
    peaks = np.abs(y[extrema]) if extrema else np.array([np.nan])
    half = growth_rate(t[settled], y[settled])
    normal = trajectory.contact_normal_force
    lift = trajectory.position[:, 0, 2] - trajectory.position[0, 0, 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(YQ[settled, :, 1] > 1e3, np.abs(YQ[settled, :, 0]) / YQ[settled, :, 1], 0.0)
    return {
        "t": t, "x": trajectory.position[:, 0, 0], "y": y, "wheel_forces": YQ, "lift": lift,
        "stopped": stopped, "solved": bool(np.all(trajectory.solver_status == 0)), "simulated_s": float(t[-1]),
        "amplitude_mm": float(1e3 * np.mean(peaks)), "amplitude_spread_mm": float(1e3 * (peaks.max() - peaks.min())),
        "frequency_hz": half["frequency"], "wavelength_m": p["speed"] / half["frequency"],
        "largest_lateral_force_kN": float(np.abs(YQ[settled, :, 0]).max() / 1e3),
        "largest_Y_over_Q": float(ratio.max()), "nadal_limit_70deg": nadal_limit(70.0),
        "flange_contact_share": [float(np.mean(normal[:, c] > 0)) for c in (2, 3)],
        "largest_flange_force_kN": float(normal[:, 2:].max() / 1e3),
        "largest_lift_mm": float(1e3 * lift.max()),
        "step_ms": 1e3 * wall / max(len(t) - 1, 1), "compile_s": compile_s,
        "parameters": {k: p[k] for k in LIMIT_CYCLE},
    }  # fmt: skip


def report(out_dir) -> dict:
    """The critical speed of the paper's three cases, by linearization (:func:`system`, with and
    without saturation) and by simulation (the growth rate of a small lateral shift at speeds
    around it, V_cr where it crosses zero), against the paper; the free wheelset at 1/20 by
    linearization; the limit cycle at 131 m/s (:func:`limit_cycle`, and again at half the time
    step). Writes ``wheelset-hunting-growth.png`` (y against distance at each speed; the growth
    rates, simulated and linear, against speed), ``wheelset-hunting-limit-cycle.png`` (Figs.
    9-10: y and the wheels' lateral and vertical forces against distance) and
    ``wheelset-hunting-root-locus.png`` (slant 1/40, no springs: eigenvalues against speed with
    V_cr marked)."""
    import os

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from lcpdyn.stability import critical_values, plot_root_locus, root_locus

    numbers, curves, loci = {}, {}, {}
    grid = np.linspace(5.0, 160.0, 156)
    for slant, stiffness, amplitude, speeds in REPORT_CASES:
        cant = 1 / 40 if slant == "1/40" else 1 / 20
        label = f"{slant}, yaw spring {stiffness / 1e3:g} kN m/rad"
        runs = []
        for speed in speeds:
            result = run(cant=cant, yaw_stiffness=stiffness, amplitude=amplitude, speed=speed, t_end=2.0)
            curves[(label, speed)] = (result["x"], result["y"])
            runs.append({"speed": speed, "sigma": result["sigma"], "frequency": result["frequency"],
                         "wavelength": speed / result["frequency"], "extrema": result["extrema"],
                         "simulated_s": float(result["t"][-1]), "stopped": result["stopped"],
                         "solved": result["solved"],
                         "step_ms": 1e3 * result["wall_s"] / max(result["steps"], 1),
                         "compile_s": result["compile_s"]})  # fmt: skip
        loci[label] = [linear_growth(v, cant, yaw_stiffness=stiffness) for v in grid]
        numbers[label] = {
            "slant": slant, "yaw_stiffness": stiffness, "amplitude": amplitude, "runs": runs,
            "critical_speed_simulated": critical_speed(speeds, [r["sigma"] for r in runs]),
            "critical_speed_linear": linear_critical_speed(cant, yaw_stiffness=stiffness),
            "critical_speed_linear_without_saturation": linear_critical_speed(cant, yaw_stiffness=stiffness,
                                                                              saturation=0.0),
            "paper_critical_speed": PAPER_CRITICAL_SPEED[(slant, stiffness)],
        }  # fmt: skip
    numbers["1/20, no springs"] = {
        "critical_speed_linear": linear_critical_speed(1 / 20),
        "largest_real_part_at": {f"{v:g}": linear_growth(v, 1 / 20) for v in (2.0, 5.0, 10.0, 20.0)},
        "paper": "unstable at low speeds (negative gravitational stiffness)",
    }
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    for ax, label in zip(axes.flat, loci):
        for (which, speed), (x, y) in curves.items():
            if which == label:
                ax.plot(x, y * 1e3, lw=0.9, label=f"{speed:g} m/s")
        e = numbers[label]
        title = f"{label}: V_cr {e['critical_speed_simulated']:.1f} simulated, {e['critical_speed_linear']:.1f} linear"
        ax.set_title(f"{title} (paper {e['paper_critical_speed']})", fontsize=9)
        ax.set_xlabel("distance x (m)")
        ax.set_ylabel("lateral displacement y (mm)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
    ax = axes.flat[3]
    for label, growth in loci.items():
        e = numbers[label]
        line = ax.plot(grid, growth, lw=1, label=f"{label}, linear")[0]
        ax.plot([r["speed"] for r in e["runs"]], [r["sigma"] for r in e["runs"]], "o", color=line.get_color(),
                ms=4, label="simulated")  # fmt: skip
        ax.axvline(e["paper_critical_speed"], color=line.get_color(), ls=":", lw=1)
    ax.axhline(0.0, color="k", lw=0.8)
    ax.set_ylim(-2.0, 2.0)
    ax.set_xlabel("speed V (m/s); lines: largest Re λ, dots: simulated σ, dotted: paper V_cr")
    ax.set_ylabel("growth rate (1/s)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6, loc="upper left")
    fig.suptitle("wheelset hunting under Kalker creep with saturation, S1002 on UIC60 (cf. Schwab–Meijaard 2002 §5.2)",
                 fontsize=10)  # fmt: skip
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "wheelset-hunting-growth.png"), dpi=120)
    plt.close(fig)
    numbers["limit_cycle"], numbers["limit_cycle_half_step"] = _limit_cycle_figure(out_dir)
    locus = root_locus(sys.modules[__name__], "speed", np.linspace(5.0, 60.0, 56))
    numbers["root_locus_1/40"] = [
        {"value": float(c["value"]), "direction": c["direction"], "frequency_rad_s": float(c["frequency"])}
        for c in critical_values(locus)
    ]
    plot_root_locus(locus, os.path.join(out_dir, "wheelset-hunting-root-locus.png"),
                    title="wheelset, S1002/UIC60 slant 1/40, no springs: eigenvalues against speed")  # fmt: skip
    return numbers


def _limit_cycle_figure(out_dir) -> tuple:
    """The limit cycle at dt and dt / 2 (the JSON's numbers without the arrays) and its figure."""
    import os

    import matplotlib.pyplot as plt

    runs = [limit_cycle(), limit_cycle(dt=0.5 * DEFAULTS["dt"])]
    fig, axes = plt.subplots(3, 1, figsize=(10, 8.5), sharex=True)
    for r, style in zip(runs, ("-", ":")):
        dt = r["parameters"]["dt"] * 1e3
        label = f"dt {dt:g} ms: amplitude {r['amplitude_mm']:.2f} mm, {r['frequency_hz']:.2f} Hz"
        axes[0].plot(r["x"], r["y"] * 1e3, style, lw=0.9, color="k" if style == "-" else "tab:red", label=label)
        if style == "-":
            for w, (name, color) in enumerate((("left", "tab:blue"), ("right", "tab:orange"))):
                axes[1].plot(r["x"], r["wheel_forces"][:, w, 0] / 1e3, lw=0.8, color=color, label=f"{name} wheel")
                axes[2].plot(r["x"], r["wheel_forces"][:, w, 1] / 1e3, lw=0.8, color=color, label=f"{name} wheel")
    first = runs[0]
    axes[0].set_ylabel("lateral displacement y (mm)")
    axes[0].legend(fontsize=8, loc="upper right")
    axes[1].set_ylabel("lateral force Y on the wheel (kN)")
    axes[1].legend(fontsize=8, loc="upper right")
    axes[2].set_ylabel("vertical force Q on the wheel (kN)")
    axes[2].set_xlabel("distance x (m)")
    for ax in axes:
        ax.grid(alpha=0.3)
    p = first["parameters"]
    fig.suptitle(f"limit cycle at {p['speed']:g} m/s, slant 1/20, yaw spring {p['yaw_stiffness'] / 1e3:g} kN m/rad, "
                 f"flange pairs {p['flange_stiffness']:.0e} N/m, {p['flange_damping']:.0e} N s/m "
                 "(cf. Schwab–Meijaard 2002 Figs. 9-10)", fontsize=9)  # fmt: skip
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "wheelset-hunting-limit-cycle.png"), dpi=120)
    plt.close(fig)
    return tuple({k: v for k, v in r.items() if not isinstance(v, np.ndarray)} for r in runs)


# --- the linearization (lcpdyn stability wheelset-hunting) ---------------------------------------
@functools.cache
def _centred(cant: float):
    """The two contacts' numbers (as :class:`~lcpdyn.wheel_rail.WheelRailContact` gives them to
    the compiled kinematics), the centred solution w0 = (z, phi, s_L, u_L, s_R, u_R) of the
    contact conditions (``_conditions``), the rolling radius r0 and the cosine of the contact
    angle there."""
    p = {**DEFAULTS, "cant": cant, "amplitude": 0.0}
    track = wheelset_klingel.geometry(p)
    contacts = wheelset_klingel.wheelset(track, p).contacts
    z0, roll0, _ = track.equilibrium(0.0)
    with float64():
        numbers = [{k: jnp.asarray(np.asarray(v, np.float64)) for k, v in c.geometry().items()} for c in contacts]
        x0, R0 = jnp.array([0.0, 0.0, z0]), rot_x(roll0)
        w = [z0, roll0]
        for c in numbers:
            found = wheel_rail_frame(c, x0, R0)
            w += [float(found[5]), float(found[6])]
        w, centre = jnp.asarray(w), jnp.zeros(2)
        for _ in range(8):
            w = w - jnp.linalg.solve(jax.jacfwd(_conditions)(w, centre, numbers), _conditions(w, centre, numbers))
        x, R = jnp.array([0.0, 0.0, w[0]]), rot_x(w[1])
        frames = [contact_at(c, x, R, w[2 + 2 * k], w[3 + 2 * k]) for k, c in enumerate(numbers)]
        residual = float(jnp.abs(_conditions(w, centre, numbers)).max())
        radius = [float(w[0] - f[3][2]) for f in frames]
        cosine = float(frames[0][4][2])
    if not residual < 1e-12:
        raise RuntimeError(f"{NAME}: the centred contact conditions were not solved (residual {residual:.2e})")
    return numbers, np.asarray(w), 0.5 * (radius[0] + radius[1]), cosine


def _conditions(w, lateral, numbers):
    """The six contact conditions of both wheels at the pose (y, psi) = ``lateral`` with
    w = (z, phi, s_L, u_L, s_R, u_R): per wheel the gap, the slope and the distance conditions
    of :func:`lcpdyn.wheel_rail.contact_at` (rigid contact, both wheels touching)."""
    x = jnp.array([0.0, lateral[0], w[0]])
    R = rot_z(lateral[1]) @ rot_x(w[1])
    out = []
    for k, c in enumerate(numbers):
        slope, distance, gap = contact_at(c, x, R, w[2 + 2 * k], w[3 + 2 * k])[:3]
        out += [gap, slope, distance]
    return jnp.stack(out)


def _contact_solver(numbers, w0):
    """w(y, psi): the contact conditions solved by Newton from w0 (not differentiated), with the
    derivative of the implicit function, dw = -C_w^-1 C_theta dtheta, as a ``custom_jvp`` whose
    rule calls the solver again -- so it nests to the third order the linearization needs
    (velocities, accelerations, their Jacobian), each order one linear solve rather than a
    derivative through the iterations."""

    @jax.custom_jvp
    def solve(lateral):
        lateral = jax.lax.stop_gradient(lateral)

        def newton(_, w):
            return w - jnp.linalg.solve(jax.jacfwd(_conditions)(w, lateral, numbers), _conditions(w, lateral, numbers))

        return jax.lax.fori_loop(0, 12, newton, jnp.asarray(w0))

    @solve.defjvp
    def _(primals, tangents):
        (lateral,), (direction,) = primals, tangents
        w = solve(lateral)
        change = jax.jvp(lambda a: _conditions(w, a, numbers), (lateral,), (direction,))[1]
        return w, -jnp.linalg.solve(jax.jacfwd(_conditions)(w, lateral, numbers), change)

    return solve


SYSTEM_PARAMETERS = {"speed": DEFAULTS["speed"], "yaw_stiffness": 0.0, "saturation": 1.0, "mu": DEFAULTS["mu"],
                     "load": DEFAULTS["load"], "mass": DEFAULTS["mass"], "f11": DEFAULTS["f11"],
                     "f22": DEFAULTS["f22"], "f23": DEFAULTS["f23"]}  # fmt: skip
"""The linearization's parameters and their defaults (what :func:`system` takes; listed by
`lcpdyn scenes` without building the system, which solves the centred contact first: 11 s)."""


@functools.lru_cache(maxsize=8)  # one system per structure: its compiled functions are kept (a sweep compiles once)
def system(cant: float = 1 / 40) -> MinimalSystem:
    """The wheelset in minimal coordinates for the linear stability analysis (Schwab–Meijaard
    2003's method, :class:`~lcpdyn.nonholonomic.MinimalSystem`), rail slant ``cant``.

    Degrees of freedom q_d = (y, psi, beta): lateral shift, yaw and rotation about the axle; the
    moving frame sets x = V t. Height z and roll phi are not coordinates: with both wheels
    touching, the two gaps and the four conditions locating the contact points (Schwab–Meijaard
    2002 Eq. 7, :func:`lcpdyn.wheel_rail.contact_at`) are six equations in (z, phi, s_L, u_L, s_R,
    u_R), solved for each (y, psi) (``_contact_solver``). Applied forces: gravity, the load
    beyond the weight at the centre, the yaw spring -k psi, and at each contact point the creep
    forces of :class:`~lcpdyn.friction.Creep` -- creepages (s1, s2, s3) / V from the contact
    point's material velocity and the wheel's spin on n_r, V the forward speed, saturation (on
    for ``saturation`` = 1) with N the centred static normal load, load / (2 cos delta0).
    Parameters: speed, yaw_stiffness, saturation, mu, load, mass, f11, f22, f23. The state
    (y_dot, psi_dot, beta_dot, y, psi, beta) has one structural zero eigenvalue (beta is cyclic).

    Differences from the simulation: the normal forces in the saturation are the static ones
    (their variation multiplies creepages that vanish in centred rolling except the spin's); the
    rolling speed is V, not ||c_dot - v_c / 2|| (equal at the nominal motion)."""
    numbers, w0, _, cosine = _centred(cant)
    solve = _contact_solver(numbers, w0)

    def placed(q, t, p, w):
        x = jnp.array([p["speed"] * t, q[0], w[0]])
        return x[None], (rot_z(q[1]) @ rot_x(w[1]) @ rot_y(q[2]))[None]

    def pose(q, t, p):
        return placed(q, t, p, solve(q[:2]))

    def force(q, qdot, t, p):
        w = solve(q[:2])  # once: each call of the solver is traced again with its derivative rules
        (x,), (R,) = placed(q, t, p, w)
        frames = [contact_at(c, x, R, w[2 + 2 * k], w[3 + 2 * k])[3:] for k, c in enumerate(numbers)]

        def velocities(rates):
            v, omega = hunting.body_velocities(q, rates, t, p)
            return v[0], omega[0], [v[0] + jnp.cross(omega[0], P - x) for P, *_ in frames]

        (_, omega, material), pullback = jax.vjp(velocities, qdot)
        speed, limit = p["speed"], p["mu"] * p["load"] / (2.0 * cosine)
        forces = []
        for (_, n, t1, t2), v in zip(frames, material):
            f1 = -p["f11"] * (v @ t1) / speed
            f2 = -(p["f22"] * (v @ t2) + p["f23"] * (omega @ n)) / speed
            square = f1 * f1 + f2 * f2  # |F| has no derivative at F = 0 (e.g. f23 = 0 in centred rolling):
            size = jnp.where(square > 0.0, jnp.sqrt(jnp.where(square > 0.0, square, 1.0)), 0.0)  # take it as 0 there
            eps, _ = saturation(size / limit, jnp)
            eps = 1.0 + p["saturation"] * (eps - 1.0)
            forces.append(eps * (f1 * t1 + f2 * t2))
        extra = jnp.array([0.0, 0.0, -(p["load"] - p["mass"] * GRAVITY)])
        generalized = pullback((extra, jnp.zeros(3), forces))[0]
        return generalized - jnp.array([0.0, p["yaw_stiffness"] * q[1], 0.0])

    hunting = MinimalSystem(
        NAME, ("y", "psi", "beta"), (), pose, lambda q, qdot, t, p: jnp.zeros(0),
        masses=lambda p: jnp.array([p["mass"]]), inertias=jnp.diag(jnp.array([1000.0, 100.0, 1000.0]))[None],
        force=force, gravity=(0.0, 0.0, -GRAVITY),
        parameters=dict(SYSTEM_PARAMETERS),
    )  # fmt: skip
    return hunting


def nominal(p, cant: float = 1 / 40) -> np.ndarray:
    """Centred rolling at ``speed``: beta_dot = V / r0 (r0 the centred rolling radius)."""
    return np.array([0.0, 0.0, p["speed"] / _centred(cant)[2], 0.0, 0.0, 0.0])


def linear_growth(speed: float, cant: float = 1 / 40, **parameters) -> float:
    """The largest real part of the eigenvalues (1/s) at ``speed``, the cyclic beta's zero set aside."""
    model = system(cant)
    p = model.params(speed=speed, **parameters)
    matrix = model.linearize(nominal(p, cant), **p).state_matrix[:5, :5]  # without the row and column of beta
    return float(np.linalg.eigvals(matrix).real.max())


def linear_critical_speed(cant: float = 1 / 40, low: float = 5.0, high: float = 300.0, **parameters) -> float:
    """The lowest speed where centred rolling becomes unstable (the largest real part crossing
    zero upward), on a 5 m/s grid refined by Brent's method; NaN if none in [low, high]."""
    from scipy.optimize import brentq

    speeds = np.arange(low, high + 1e-9, 5.0)
    growth = [linear_growth(v, cant, **parameters) for v in speeds]
    for a in range(len(speeds) - 1):
        if growth[a] <= 0.0 < growth[a + 1]:
            return float(brentq(lambda v: linear_growth(v, cant, **parameters), speeds[a], speeds[a + 1], xtol=1e-6))
    return float("nan")
