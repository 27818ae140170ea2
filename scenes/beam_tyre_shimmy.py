"""Bauchau 2002 Sec. 8.3: shimmy of a wheel with Moreland's tyre on a flexible beam (Figs. 16-20).

A wheel (M = 20 kg, uniform disk of radius rho = 0.25 m) with Moreland's elastic tyre (Table 2,
:mod:`lcpdyn.tyre`) turns on a revolute axle at the tip of a uniform beam of length l = 0.5 m
(Table 1, set 3: EI = 11.6 kN m^2, GJ = 281 kN m^2, GA = 2.8 MN, 1.61 kg/m, damping 0.001 s)
clamped to a cart that moves at constant speed V. Case 1, V = 15 m/s, is stable; case 2,
V = 30 m/s, shimmies: it grows in bending and in torsion.

Configuration (Bauchau 2002 Fig. 16 is a drawing the text does not describe): "due to the
flexibility of the beam in both bending and torsion, the wheel can rotate about axes
perpendicular to the road and parallel to its driving direction" -- so the beam lies horizontal
along the driving direction at the height of the axle, the wheel trailing behind the clamp (a
caster with trail l): the beam's lateral bending yaws the wheel and its torsion cambers it. With
the wheel ahead of the clamp the linearized motion diverges at every speed, and with a vertical
beam it is stable at every speed (both checked with :func:`system`); the trailing beam has a
shimmy (Hopf) boundary between the paper's two speeds.

Frame: the road's, the fixed plane z = 0; the cart (the beam's clamp, a weld joint) moves at -V
along x and the wheel rolls along its driving direction d_2 = n x e_3 = -x (Moreland's law,
Eq. 38, is written for that rolling direction). A sideways ``lateral_kick`` (m/s; default 0.01,
small enough that the tyre's cornering force stays below mu N while the linear rates are
measured) of the wheel and the beam's tip starts the motion.

Two models of the same system:

* :func:`build` -- the time stepper: the beam of ``beam_elements`` geometrically exact elements
  (:mod:`lcpdyn.beam`), gravity, the rigid unilateral contact of the tyre's footprint wheel with
  the road and a friction law (``mu``) -- the paper's simulation;
* :func:`system` -- the linearization (``lcpdyn stability beam-tyre-shimmy``): the same beam
  elements, masses and tyre in minimal coordinates (Schwab–Meijaard 2003; :mod:`lcpdyn.nonholonomic`):
  the lateral deflection, the bending rotation (about z) and the twist (about x) of each node
  are the degrees of freedom; the wheel's spin, Delta and Psi are kinematic coordinates of the
  footprint's two rolling conditions and of Eq. (38). In-plane motion (axial, vertical bending)
  decouples from these at first order by the system's symmetry and is left out, and so is
  gravity: the wheel's weight, carried by the normal force, adds a geometric stiffness N rho
  ~ 50 N m/rad to the twist, 1e-4 of GJ / l.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from lcpdyn.beam import TABLE_1, WeldJoint, add_beam, element_strains
from lcpdyn.body import RigidBody
from lcpdyn.constraints import RevoluteJoint
from lcpdyn.contact import DiskContact, Plane
from lcpdyn.model import Model
from lcpdyn.nonholonomic import MinimalSystem
from lcpdyn.plotting import finish
from lcpdyn.precision import float64
from lcpdyn.rotation import quaternion_multiply, rot_x, rot_y, rot_z, rotation_matrix, rotation_vector
from lcpdyn.tyre import TABLE_2, MorelandTyre, deformation

from .scene import Scene, beam_defaults, flexible_beam, override

NAME = "beam-tyre-shimmy"
SWEEP = ("speed", 10.0, 40.0, 61)
PAPER = {"stable_speed_m_per_s": 15.0, "unstable_speed_m_per_s": 30.0}
"""Bauchau 2002 Sec. 8.3: case 1 (15 m/s) decays, case 2 (30 m/s) grows in bending and torsion."""

_TYRE_KEYS = {
    "lateral_stiffness": "k1",
    "yaw_stiffness": "k2",
    "lateral_damping": "mu1",
    "yaw_damping": "mu2",
    "yaw_compliance": "C_psi",
    "yaw_time_constant": "c1",
}
_SET3 = TABLE_1[3]
DEFAULTS = {
    "speed": 15.0,
    "beam_length": _SET3["length"],
    "beam_mass_per_length": _SET3["mass_per_length"],
    "wheel_mass": 20.0,
    "wheel_radius": 0.25,
    **{key: TABLE_2[name] for key, name in _TYRE_KEYS.items()},
    "mu": 1.0,
    "lateral_kick": 0.01,
    "gravity": 9.81,
    "dt": 5e-5,
    "t_end": 2.0,
    "tangential_stiffness": 1e10,
    "velocity_threshold": 1e-3,
    **beam_defaults(3),
    "beam_elements": 4,
}


def tyre_of(p) -> MorelandTyre:
    """Moreland's tyre of the scene's parameters ``p``."""
    return MorelandTyre(**{name: p[key] for key, name in _TYRE_KEYS.items()})


def build(**parameters) -> Scene:
    """The beam--tyre shimmy scene (module docstring) with ``parameters`` overriding its defaults."""
    p = override(DEFAULTS, parameters, NAME)
    elements, section = flexible_beam(p, NAME, p["beam_mass_per_length"])
    if not elements:
        raise ValueError(f"scene {NAME!r}: the shimmy needs the flexible beam, beam_elements >= 1")
    l, rho, M, V = p["beam_length"], p["wheel_radius"], p["wheel_mass"], p["speed"]
    if not (l > 0 and rho > 0):
        raise ValueError(f"scene {NAME!r}: need beam_length > 0 and wheel_radius > 0")
    model = Model(gravity=(0.0, 0.0, -p["gravity"]))
    beam = add_beam(model, "beam", section, (0.0, 0.0, rho), (l, 0.0, rho), elements, velocity=(-V, 0.0, 0.0))
    kick = np.array([0.0, p["lateral_kick"], 0.0])
    beam.tip.velocity = beam.tip.velocity + kick
    wheel = model.add_body(
        RigidBody(
            "wheel",
            M,
            (M * rho * rho / 4, M * rho * rho / 2, M * rho * rho / 4) if M > 0 else (-1.0, -1.0, -1.0),
            position=(l, 0.0, rho),
            velocity=np.array([-V, 0.0, 0.0]) + kick,
            angular_velocity=(0.0, -V / rho, 0.0),  # rolling along -x
        )
    )
    model.add_constraint(WeldJoint(body_a=beam.root, offset_b=(0.0, 0.0, rho), anchor_velocity=(-V, 0.0, 0.0)))
    model.add_constraint(RevoluteJoint(body_a=wheel, body_b=beam.tip, name="axle"))
    model.add_contact(DiskContact(wheel, Plane(), p["mu"], radius=rho), tyre=tyre_of(p))
    return Scene.from_parameters(NAME, model, p, __doc__)


# --- what the figures show ------------------------------------------------------------------------
def histories(trajectory, scene) -> dict:
    """Figs. 17-20 of a run: the beam tip's lateral displacement (m), its rotations in bending
    (about the vertical) and torsion (about the beam), the root's bending and twisting moments
    (N m; the first element's elastic stress resultants M_3 and T) and the tyre's Delta (m) and
    Psi (rad), each (steps,)."""
    names = trajectory.body_names
    tip = names.index(f"beam[{scene.parameters['beam_elements']}]")
    wheel, footprint = names.index("wheel"), names.index("wheel/footprint")

    def coordinates(i):
        return np.concatenate([trajectory.position[:, i], trajectory.quaternion[:, i]], axis=1)

    element = next(c for c in scene.model.holonomic if getattr(c, "node_a", None) is not None)
    root, first = names.index(element.node_a.name), names.index(element.node_b.name)
    a, b = coordinates(root), coordinates(first)
    tip_quaternions = trajectory.quaternion[:, tip] * np.where(trajectory.quaternion[:, tip, :1] < 0, -1.0, 1.0)
    with float64():
        strains = jax.jit(jax.vmap(element_strains, in_axes=(0, 0, 0, 0, None)))(
            a[:, :3], a[:, 3:], b[:, :3], b[:, 3:], element.rest_length
        )
        rotations = np.asarray(jax.jit(jax.vmap(rotation_vector))(tip_quaternions))  # w >= 0
    # the elastic stress resultants S (e - e_0), as BeamElement.stress_resultants gives them per step
    moments = element.section.stiffness * (np.asarray(strains) - element.reference)
    tyre = deformation((0.0, 0.0, 1.0), (0.0, 1.0, 0.0), coordinates(wheel), coordinates(footprint))
    return {
        "t": np.asarray(trajectory.t),
        "tip_lateral_m": trajectory.position[:, tip, 1],
        "tip_bending_rad": rotations[:, 2],
        "tip_torsion_rad": rotations[:, 0],
        "root_bending_moment_Nm": moments[:, 5],
        "root_torsion_moment_Nm": moments[:, 3],
        "delta_m": tyre[:, 0],
        "psi_rad": tyre[:, 1],
    }


def growth_rate(t, signal, skip: float = 0.0) -> float:
    """Exponential rate sigma (1/s) of a signal's oscillation envelope: the least-squares slope of
    log |peak| against the peaks' times after ``skip`` seconds (> 0 grows, < 0 decays)."""
    t, signal = np.asarray(t), np.asarray(signal)
    keep = t >= skip
    t, y = t[keep], signal[keep]
    peaks = np.flatnonzero((np.abs(y[1:-1]) >= np.abs(y[:-2])) & (np.abs(y[1:-1]) > np.abs(y[2:]))) + 1
    peaks = peaks[np.abs(y[peaks]) > 0]
    if peaks.size < 4:
        return math.nan
    return float(np.polyfit(t[peaks], np.log(np.abs(y[peaks])), 1)[0])


# --- the linearization in minimal coordinates ------------------------------------------------------
LINEAR_ELEMENTS = 8
"""Beam elements of :func:`system` (the critical speed changes by < 0.1 % from 4 to 8)."""


def _quaternion(axis, angle):
    return jnp.concatenate([jnp.stack([jnp.cos(angle / 2)]), jnp.sin(angle / 2) * jnp.asarray(axis, float)])


SYSTEM_PARAMETERS = {
    key: DEFAULTS[key]
    for key in ("speed", "beam_length", "beam_mass_per_length", "wheel_mass", "wheel_radius", *_TYRE_KEYS,
                "axial_stiffness", "shear_stiffness", "torsional_stiffness", "bending_stiffness",
                "beam_inertia_per_length", "beam_damping")
}  # fmt: skip
"""The linearization's parameters and their defaults (what :func:`system` takes; listed by
`lcpdyn scenes` without building the system)."""


@functools.cache
@functools.lru_cache(maxsize=8)  # one system per structure: its compiled functions are kept (a sweep compiles once)
def system(elements: int = LINEAR_ELEMENTS) -> MinimalSystem:
    """The linearization model (module docstring): q_d = (y_i, bend_i, twist_i) of nodes
    i = 1..N (node pose: x = (-V t + i l / N, y_i, rho), R = Rz(bend_i) Rx(twist_i)), q_k = (spin
    beta, Delta, Psi); the wheel's pose is the tip's with Ry(beta). Parameters: the scene's
    (speed, beam and tyre constants)."""
    n = elements

    def nodes(q, t, p):
        l, rho = p["beam_length"], p["wheel_radius"]
        y, twist, bend = q[0 : 3 * n : 3], q[1 : 3 * n : 3], q[2 : 3 * n : 3]
        x = -p["speed"] * t + l * jnp.arange(1, n + 1) / n
        positions = jnp.stack([x, y, jnp.full(n, rho)], axis=1)
        quaternions = jax.vmap(
            lambda a, b: quaternion_multiply(_quaternion((0, 0, 1.0), b), _quaternion((1.0, 0, 0), a))
        )(twist, bend)
        root = (jnp.array([-p["speed"] * t, 0.0, rho]), jnp.array([1.0, 0.0, 0.0, 0.0]))
        return positions, quaternions, root

    def wheel_pose(q, t, p):
        positions, _, _ = nodes(q, t, p)
        return positions[-1], rot_z(q[3 * n - 1]) @ rot_x(q[3 * n - 2]) @ rot_y(q[3 * n])

    def pose(q, t, p):
        positions, quaternions, _ = nodes(q, t, p)
        x_w, R_w = wheel_pose(q, t, p)
        return jnp.concatenate([positions, x_w[None]]), jnp.concatenate(
            [jax.vmap(rotation_matrix)(quaternions), R_w[None]]
        )

    def strains(q, t, p):
        positions, quaternions, (x0, q0) = nodes(q, t, p)
        x_a = jnp.concatenate([x0[None], positions[:-1]])
        q_a = jnp.concatenate([q0[None], quaternions[:-1]])
        length = p["beam_length"] / n
        return jax.vmap(lambda a, b, c, d: element_strains(a, b, c, d, length))(x_a, q_a, positions, quaternions)

    def section(p):
        return jnp.array(
            [p["axial_stiffness"], p["shear_stiffness"], p["shear_stiffness"], p["torsional_stiffness"],
             p["bending_stiffness"], p["bending_stiffness"]]
        )  # fmt: skip

    def force(q, qdot, t, p):
        e, e_dot = jax.jvp(lambda q_: strains(q_, t, p), (q,), (qdot,))
        stress = p["beam_length"] / n * section(p) * (e + p["beam_damping"] * e_dot)
        _, pullback = jax.vjp(lambda q_: strains(q_, t, p), q)
        f = -pullback(stress)[0]
        f = f.at[3 * n + 1].add(-(p["lateral_stiffness"] * q[3 * n + 1] + p["lateral_damping"] * qdot[3 * n + 1]))
        return f.at[3 * n + 2].add(-(p["yaw_stiffness"] * q[3 * n + 2] + p["yaw_damping"] * qdot[3 * n + 2]))

    def footprint(q, t, p):
        x_w, R_w = wheel_pose(q, t, p)
        delta, psi = q[3 * n + 1], q[3 * n + 2]
        up = jnp.array([0.0, 0.0, 1.0])
        e3 = R_w[:, 1]
        d2 = jnp.cross(up, e3)
        d2 = d2 / jnp.sqrt(d2 @ d2)
        c3 = jnp.cos(psi) * e3 - jnp.sin(psi) * d2
        c2 = jnp.cross(up, c3)
        c2 = c2 / jnp.sqrt(c2 @ c2)
        return x_w + delta * e3, e3, jnp.cross(d2, e3), c3, c2, jnp.cross(c2, c3)

    def slip(q, qdot, t, p):
        (_, e3, d1, c3, c2, c1), (centre_rate, *_) = jax.jvp(
            lambda q_, t_: footprint(q_, t_, p), (q, t), (qdot, jnp.ones_like(t))
        )
        omega = shimmy.body_velocities(q, qdot, t, p)[1][-1]
        spin = omega @ e3
        psi_dot = qdot[3 * n + 2]
        omega_f = omega - spin * e3 + spin * c3 + psi_dot * d1  # Bauchau 2002 Eq. (36)
        contact = centre_rate + jnp.cross(omega_f, p["wheel_radius"] * c1)  # Eq. (40)
        eq38 = (
            p["yaw_compliance"] * (p["lateral_stiffness"] * q[3 * n + 1] + p["lateral_damping"] * qdot[3 * n + 1])
            + q[3 * n + 2]
            + p["yaw_time_constant"] * psi_dot
        )
        return jnp.array([contact @ c2, contact @ jnp.cross(jnp.array([0.0, 0.0, 1.0]), c2), eq38])

    def masses(p):
        share = jnp.where(jnp.arange(1, n + 1) == n, 0.5, 1.0) * p["beam_length"] / n
        return jnp.concatenate([share * p["beam_mass_per_length"], jnp.stack([p["wheel_mass"]])])

    def inertias(p):
        share = jnp.where(jnp.arange(1, n + 1) == n, 0.5, 1.0) * p["beam_length"] / n
        node = p["beam_inertia_per_length"] * jnp.diag(jnp.array([1.0, 0.5, 0.5]))
        M, rho = p["wheel_mass"], p["wheel_radius"]
        wheel = jnp.diag(jnp.array([M * rho * rho / 4, M * rho * rho / 2, M * rho * rho / 4]))
        return jnp.concatenate([share[:, None, None] * node, wheel[None]])

    shimmy = MinimalSystem(
        NAME,
        tuple(f"{kind}{i}" for i in range(1, n + 1) for kind in ("y", "twist", "bend")),
        ("spin", "delta", "psi"),
        pose,
        slip,
        masses,
        inertias,
        force=force,
        gravity=(0.0, 0.0, 0.0),
        parameters=dict(SYSTEM_PARAMETERS),
    )
    return shimmy


def nominal(p) -> np.ndarray:
    """Straight running: every deflection, rate and tyre deformation zero."""
    return np.zeros(6 * LINEAR_ELEMENTS + 3)


def least_stable(speed: float, elements: int = LINEAR_ELEMENTS, **parameters) -> complex:
    """The eigenvalue of largest real part at cart ``speed`` (1/s), leaving out the spin angle's
    zero eigenvalue (a cyclic coordinate)."""
    values = system(elements).linearize(np.zeros(6 * elements + 3), **{**parameters, "speed": speed}).eigenvalues
    values = values[np.abs(values) > 1e-8]
    return complex(values[np.argmax(values.real)])


def stepped_rate(eigenvalue: complex, dt: float) -> float:
    """The growth rate (1/s) the time stepper gives a linear mode of eigenvalue lambda: its step is
    backward Euler on the beam's and the tyre's forces (compliant rows, :mod:`lcpdyn.stepper`), so
    the mode is multiplied by 1 / (1 - h lambda) per step: rate ln|1 / (1 - h lambda)| / h, which is
    Re(lambda) - h |lambda|^2 / 2 + O(h^2) (the numerical damping of the shimmy mode)."""
    return float(-math.log(abs(1.0 - dt * eigenvalue)) / dt)


def critical_speed(
    low: float = 15.0, high: float = 30.0, tol: float = 1e-6, elements: int = LINEAR_ELEMENTS, **parameters
) -> dict:
    """The speed where the least stable eigenvalue's real part crosses zero between ``low`` and
    ``high`` (bisection on the linearization), with the mode's angular frequency there."""

    def least(v):
        return least_stable(v, elements, **parameters)

    a, b = least(low).real, least(high).real
    if not (a < 0 < b):
        raise ValueError(f"no shimmy boundary between {low} and {high} m/s: max Re = {a:.4g}, {b:.4g}")
    while high - low > tol * high:
        middle = 0.5 * (low + high)
        if least(middle).real < 0:
            low = middle
        else:
            high = middle
    speed = 0.5 * (low + high)
    return {"speed_m_per_s": speed, "frequency_rad_per_s": abs(least(speed).imag)}


# --- the report (``lcpdyn reproduce beam-tyre-shimmy``) ------------------------------------------------
REPORT_ELEMENTS = 8
"""Beam elements of the report's runs and linearization."""
RATE_WINDOW = (0.2, 1.0)
"""Seconds of a run over which its envelope's rate is fitted: after the kick's faster modes have
died out, before a growing shimmy could make the footprint slide."""


def _run(speed: float, t_end: float, elements: int = REPORT_ELEMENTS, **parameters):
    import time

    scene = build(speed=speed, beam_elements=elements, **parameters)
    start = time.process_time()
    run = scene.simulation("coulomb").run(t_end)
    return scene, run, time.process_time() - start


def _rates(history) -> dict:
    window = history["t"] <= RATE_WINDOW[1]
    t = history["t"][window]
    return {
        key: growth_rate(t, history[key][window], skip=RATE_WINDOW[0])
        for key in ("tip_lateral_m", "tip_bending_rad", "tip_torsion_rad", "psi_rad", "delta_m")
    }


def report(out_dir) -> dict:
    """Cases 1 and 2 (15 and 30 m/s) stepped over ``t_end`` with the paper's beam (Table 1 set 3,
    :data:`REPORT_ELEMENTS` elements) and tyre (Table 2); the linearization's critical speed and
    root locus over 10-40 m/s; runs at 0.9 and 1.1 times the critical speed; each run's envelope
    rate against the linear mode's rate under the step (:func:`stepped_rate`). Writes
    ``beam-tyre-shimmy-history.png`` (cf. Figs. 17-20) and ``beam-tyre-shimmy-stability.png``."""
    import os

    dt = DEFAULTS["dt"]
    critical = critical_speed(elements=REPORT_ELEMENTS)
    v_c = critical["speed_m_per_s"]
    speeds = np.linspace(10.0, 40.0, 61)
    locus = np.array([least_stable(v, REPORT_ELEMENTS) for v in speeds])
    numbers = {
        "beam_elements": REPORT_ELEMENTS,
        "dt_s": dt,
        "lateral_kick_m_per_s": DEFAULTS["lateral_kick"],
        "friction": "coulomb",
        "critical_speed_m_per_s": v_c,
        "critical_frequency_rad_per_s": critical["frequency_rad_per_s"],
        "critical_speed_4_elements_m_per_s": critical_speed(elements=4)["speed_m_per_s"],
        "paper": PAPER,
        "cases": {},
    }
    runs, checks, rates = {}, [], {}
    for label, speed, t_end in (
        ("case 1", 15.0, DEFAULTS["t_end"]),
        ("case 2", 30.0, DEFAULTS["t_end"]),
        ("0.9 critical", 0.9 * v_c, 1.0),
        ("1.1 critical", 1.1 * v_c, 1.0),
    ):
        scene, run, cpu = _run(speed, t_end)
        history = histories(run, scene)
        eigenvalue = least_stable(speed, REPORT_ELEMENTS)
        measured = _rates(history)
        slip = np.linalg.norm(run.contact_slip_velocity[:, 0], axis=1)
        sliding = np.flatnonzero(slip > 1e-6)
        numbers["cases"][label] = {
            "speed_m_per_s": speed,
            "t_end_s": t_end,
            "measured_rate_per_s": measured,
            "linear_eigenvalue": [eigenvalue.real, eigenvalue.imag],
            "linear_rate_per_s": eigenvalue.real,
            "linear_rate_under_the_step_per_s": stepped_rate(eigenvalue, dt),
            "verdict": "grows" if measured["tip_lateral_m"] > 0 else "decays",
            "footprint_slides_from_s": float(run.t[sliding[0]]) if sliding.size else None,
            "final_tip_lateral_amplitude_m": float(np.abs(history["tip_lateral_m"][run.t > run.t[-1] - 0.1]).max()),
            "cpu_s": cpu,
        }
        if label.startswith("case"):
            runs[label] = (speed, history, numbers["cases"][label]["footprint_slides_from_s"])
            rates[label] = numbers["cases"][label]["linear_rate_under_the_step_per_s"]
        checks.append((speed, measured["tip_lateral_m"]))
    plot_history(runs, os.path.join(out_dir, "beam-tyre-shimmy-history.png"), rates)
    plot_stability(speeds, locus, critical, checks, dt, os.path.join(out_dir, "beam-tyre-shimmy-stability.png"))
    return numbers


def plot_history(runs: dict, path, rates: dict | None = None):
    """Figs. 17-20 of Bauchau 2002 from our runs (label -> (speed, :func:`histories`, time the
    footprint starts sliding or None)): tip lateral displacement, tip rotations in bending and
    torsion, root moments in bending and torsion, the tyre's Delta and Psi -- case 1 solid, case 2
    dashed as in the paper -- and the tip's |lateral displacement| on a log scale with the slopes
    ``rates`` (label -> the linear mode's rate under the step, 1/s). Writes ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = (
        ("tip_lateral_m", 1e3, "tip lateral displacement (mm)", "Fig. 17"),
        ("root_bending_moment_Nm", 1.0, "root bending moment M₃ (N m)", "Fig. 19, top"),
        ("tip_bending_rad", 1e3, "tip rotation in bending, about z (mrad)", "Fig. 18, top"),
        ("root_torsion_moment_Nm", 1.0, "root twisting moment T (N m)", "Fig. 19, bottom"),
        ("tip_torsion_rad", 1e3, "tip rotation in torsion, about x (mrad)", "Fig. 18, bottom"),
        ("delta_m", 1e3, "tyre lateral deformation Δ (mm)", "Fig. 20, top"),
        (None, None, "|tip lateral displacement| (m), log scale", "envelope"),
        ("psi_rad", 1e3, "tyre yaw deformation Ψ (mrad)", "Fig. 20, bottom"),
    )
    fig, axes = plt.subplots(4, 2, figsize=(14, 13), sharex=True)
    for ax, (key, scale, label, figure) in zip(axes.flat, panels, strict=True):
        for k, (case, (speed, history, slides)) in enumerate(runs.items()):
            style = dict(ls="-" if k == 0 else "--", color=f"C{k}", lw=1.0)
            text = f"{case}, V = {speed:g} m/s"
            if key is None:
                ax.semilogy(history["t"], np.abs(history["tip_lateral_m"]), **style, label=text)
                if rates and case in rates:
                    t = history["t"][history["t"] >= RATE_WINDOW[0]]
                    near = (history["t"] >= RATE_WINDOW[0]) & (history["t"] <= RATE_WINDOW[0] + 0.05)
                    start = np.abs(history["tip_lateral_m"][near]).max()  # the envelope there
                    ax.semilogy(t, start * np.exp(rates[case] * (t - t[0])), color="k", lw=0.8, ls=":",
                                label=f"linear mode under the step: {rates[case]:+.2f} 1/s" if k == 0 else
                                f"{rates[case]:+.2f} 1/s")  # fmt: skip
            else:
                ax.plot(history["t"], scale * history[key], **style, label=text)
            if slides is not None:
                ax.axvline(slides, color="C3", lw=0.8, ls="-.",
                           label=f"{case}: footprint slides from {slides:.2f} s (μN reached)")  # fmt: skip
        ax.set_title(f"{label}  [cf. {figure}]" if key else label, fontsize=9.5)
        ax.grid(alpha=0.3)
        if key is not None:
            ax.axhline(0.0, color="k", lw=0.5)
        else:
            ax.set_ylim(1e-9, 1e-2)
        if ax in (axes[0, 0], axes[3, 0]):
            ax.legend(fontsize=7.5, loc="lower right" if key is None else "upper left")
    for ax in axes[-1]:
        ax.set_xlabel("time t (s)")
    return finish(
        fig,
        path,
        "beam–tyre shimmy (Bauchau 2002 Sec. 8.3): a wheel on Moreland's tyre trailing a 0.5 m beam "
        "(Table 1 set 3) clamped to a cart\n"
        "case 1 (15 m/s, solid) decays; case 2 (30 m/s, dashed) grows in bending and torsion until the "
        "tyre's footprint slides\n"
        f"{REPORT_ELEMENTS} beam elements, h = {DEFAULTS['dt'] * 1e6:g} µs, Coulomb friction μ = {DEFAULTS['mu']:g}, "
        f"a sideways kick of {DEFAULTS['lateral_kick']:g} m/s at t = 0",
    )


def plot_stability(speeds, locus, critical, checks, dt, path):
    """The least stable mode's growth rate against cart speed -- the linearization's Re(lambda) and
    its rate under the step -- with the stepped runs' measured rates and the critical speed.
    Writes ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(13, 5))
    ax.plot(speeds, locus.real, color="C0", lw=1.5, label="linearization: max Re λ (minimal coordinates, JAX)")
    ax.plot(speeds, [stepped_rate(z, dt) for z in locus], color="C0", ls="--", lw=1.0,
            label=f"the same mode under the step's backward Euler, h = {dt * 1e6:g} µs")  # fmt: skip
    ax.plot(*zip(*checks, strict=True), "o", mfc="none", color="C3", ms=9, mew=1.5,
            label="time stepper: measured envelope rate (tip lateral)")  # fmt: skip
    v_c = critical["speed_m_per_s"]
    ax.axvline(v_c, color="k", ls=":", lw=1.0, label=f"critical speed {v_c:.2f} m/s")
    for v in (15.0, 30.0):
        ax.axvline(v, color="C2", ls="-.", lw=0.8)
    ax.text(15.2, ax.get_ylim()[1] * 0.9, "paper: case 1\n(stable)", fontsize=8, color="C2")
    ax.text(30.2, ax.get_ylim()[1] * 0.9, "paper: case 2\n(unstable)", fontsize=8, color="C2")
    ax.axhline(0.0, color="k", lw=0.5)
    ax.set_xlabel("cart speed V (m/s)")
    ax.set_ylabel("growth rate of the least stable mode (1/s)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    bx.plot(speeds, np.abs(locus.imag) / (2 * np.pi), color="C1")
    bx.axvline(v_c, color="k", ls=":", lw=1.0)
    bx.set_xlabel("cart speed V (m/s)")
    bx.set_ylabel("frequency of the least stable mode (Hz)")
    bx.grid(alpha=0.3)
    return finish(
        fig,
        path,
        f"beam–tyre shimmy: stability against cart speed ({REPORT_ELEMENTS} beam elements, Moreland's tyre, "
        "Bauchau 2002 Tables 1–2)",
        fontsize=11,
    )
