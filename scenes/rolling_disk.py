"""A uniform thin disk rolling on a horizontal plane (Schwab–Meijaard 2003 Sec. 3.2, Figs. 3-6).

Units: m = r = g = 1 (speed in sqrt(g r), time in sqrt(r / g)). Inertia of a uniform thin disk:
axial m r^2 / 2, diametral m r^2 / 4 (the wheel axis is the body y axis).

* Linearization (:func:`system`, :func:`nominal`): degrees of freedom q_d = (yaw psi, roll theta,
  spin phi) with R = Rz(psi) Rx(theta) Ry(phi), kinematic coordinates q_k = (x, y) of the contact
  point; the centre is the contact point minus r d1 (Bauchau 2002 Eqs. 2-4), so the contact
  condition holds by construction; two non-holonomic conditions: zero slip of the material
  contact point in x and y. State dimension 8 (six zero eigenvalues). Upright rolling at speed v
  is unstable below the critical speed 1/sqrt(3) (real pair) and neutrally stable above it
  (imaginary pair, the slalom mode).
* Transient (:func:`transient`): upright, forward speed 0.4116, roll rate -0.01, zero yaw rate,
  87 time units: the disk wobbles forward on an alternately turning path (Fig. 5); the ratio of
  in-plane to normal contact force stays at most ~0.52 (Fig. 6).
* Time-stepper scene (:func:`build`, ``lcpdyn run rolling-disk``): the same initial state as a
  :class:`~lcpdyn.model.Model` with a :class:`~lcpdyn.contact.DiskContact`, rolling ``"ideal"``
  (default) or ``"friction"`` (coefficient ``mu``).
"""

from __future__ import annotations

import functools
import math
import sys

import jax.numpy as jnp
import numpy as np
from scipy.optimize import brentq

from lcpdyn.body import RigidBody
from lcpdyn.contact import DiskContact, Plane
from lcpdyn.model import Model
from lcpdyn.nonholonomic import MinimalSystem
from lcpdyn.rotation import rot_x, rot_y, rot_z

from .scene import Scene, override

NAME = "rolling-disk"
SWEEP = ("speed", 0.0, 1.0, 101)
DEFAULTS = {
    "mass": 1.0,
    "radius": 1.0,
    "gravity": 1.0,
    "speed": 0.4116,
    "roll_rate": -0.01,
    "mu": 0.6,
    "rolling": "ideal",
    "dt": 1e-3,
    "t_end": 87.0,
    "tangential_stiffness": 1e10,
    "velocity_threshold": 1e-3,
}


def _pose(q, t, p):
    psi, theta, phi, x, y = q
    R = rot_z(psi) @ rot_x(theta) @ rot_y(phi)
    axis = R[:, 1]
    c = jnp.cross(jnp.array([0.0, 0.0, 1.0]), axis)
    d2 = c / jnp.sqrt(c @ c)
    d1 = jnp.cross(d2, axis)  # from the centre to the contact point (Bauchau 2002 Eq. 2)
    centre = jnp.array([x, y, 0.0]) - p["radius"] * d1
    return centre[None, :], R[None]


SYSTEM_PARAMETERS = {"mass": 1.0, "radius": 1.0, "gravity": 1.0, "speed": 0.5}
"""The linearization's parameters and their defaults (what :func:`system` takes; listed by
`lcpdyn scenes` without building the system)."""


@functools.cache
@functools.lru_cache(maxsize=8)  # one system per structure: its compiled functions are kept (a sweep compiles once)
def system() -> MinimalSystem:
    """The disk in minimal coordinates (module docstring); parameters mass, radius, gravity, speed."""

    def slip(q, qdot, t, p):
        velocity, omega = disk.body_velocities(q, qdot, t, p)
        centre = _pose(q, t, p)[0][0]
        contact = jnp.array([q[3], q[4], 0.0])
        return (velocity[0] + jnp.cross(omega[0], contact - centre))[:2]

    disk = MinimalSystem(
        NAME,
        ("yaw", "roll", "spin"),
        ("x", "y"),
        _pose,
        slip,
        masses=lambda p: jnp.array([p["mass"]]),
        inertias=lambda p: (p["mass"] * p["radius"] ** 2 * jnp.diag(jnp.array([0.25, 0.5, 0.25])))[None],
        gravity=lambda p: jnp.array([0.0, 0.0, -p["gravity"]]),
        parameters=dict(SYSTEM_PARAMETERS),
    )
    return disk


def nominal(p) -> np.ndarray:
    """Upright rolling along x at ``speed``: spin rate speed / radius, everything else zero."""
    return np.array([0.0, 0.0, p["speed"] / p["radius"], 0.0, 0.0, 0.0, 0.0, 0.0])


def oscillation_square(speed: float, **parameters) -> float:
    """s = lambda^2 of the non-zero eigenvalue pair (+-sqrt(s)): > 0 unstable, < 0 oscillatory."""
    disk = system()
    p = disk.params(speed=speed, **parameters)
    eigenvalues = disk.linearize(nominal(p), speed=speed, **parameters).eigenvalues
    largest = eigenvalues[np.argmax(np.abs(eigenvalues))]
    return float((largest**2).real)


def critical_speed(**parameters) -> float:
    """The speed where the pair turns from real to imaginary (Neimark-Fufaev: sqrt(g r / 3))."""
    return brentq(lambda v: oscillation_square(v, **parameters), 0.05, 2.0, xtol=1e-14, rtol=1e-14)


def transient_path(t_end: float = 87.0, speed: float = 0.4116, roll_rate: float = -0.01, samples: int = 8701) -> dict:
    """The path part of :func:`transient` (times, states, the centre's and the contact point's
    paths), the same numbers, without the contact force: where only the path is wanted this
    leaves out compiling the force for another number of samples."""
    disk = system()
    p = disk.params()
    x0 = np.array([0.0, roll_rate, speed / p["radius"], 0.0, 0.0, 0.0, 0.0, 0.0])
    t, states = disk.simulate(x0, t_end, samples=samples)
    return {"t": t, "states": states, "centre": disk.poses_along(t, states)[0][:, 0], "contact": states[:, 6:8]}


def transient(t_end: float = 87.0, speed: float = 0.4116, roll_rate: float = -0.01, samples: int = 8701) -> dict:
    """The Fig. 5-6 transient by integrating the state equations (Eq. 22): paths of the centre
    and the contact point, contact force (= m (a_c - g)) and its in-plane / normal ratio."""
    path = transient_path(t_end, speed, roll_rate, samples)
    t, states = path["t"], path["states"]
    forces = system().forces_along(t, states)[:, 0]
    ratio = np.linalg.norm(forces[:, :2], axis=1) / forces[:, 2]
    return {
        **path,
        "force": forces,
        "force_ratio": ratio,
        "max_force_ratio": float(ratio.max()),
    }


def build(**parameters) -> Scene:
    """The transient's initial state for the time stepper (module docstring)."""
    p = override(DEFAULTS, parameters, NAME)
    if p["rolling"] not in ("ideal", "friction"):
        raise ValueError(f"scene {NAME!r}: rolling must be 'ideal' or 'friction', got {p['rolling']!r}")
    model = Model(gravity=(0.0, 0.0, -p["gravity"]))
    r, m = p["radius"], p["mass"]
    disk = model.add_body(
        RigidBody(
            "disk",
            m,
            (0.25 * m * r * r, 0.5 * m * r * r, 0.25 * m * r * r) if m > 0 and r > 0 else (-1.0, -1.0, -1.0),
            position=(0.0, 0.0, r),
            # rolling-consistent: v_c = omega x (r e_z) = (v, -roll_rate r, 0)
            velocity=(p["speed"], -p["roll_rate"] * r, 0.0),
            angular_velocity=(p["roll_rate"], p["speed"] / r if r > 0 else 0.0, 0.0),
        )
    )
    model.add_contact(DiskContact(disk, Plane(), p["mu"], radius=r, rolling=p["rolling"]))
    return Scene.from_parameters(NAME, model, p, __doc__)


def wobble_period(result: dict) -> float:
    """Mean time between the sharp turns (peaks of the yaw rate magnitude) of a transient."""
    yaw_rate = np.abs(result["states"][:, 0])
    t = result["t"]
    peaks = [
        i
        for i in range(1, len(t) - 1)
        if yaw_rate[i] > yaw_rate[i - 1] and yaw_rate[i] >= yaw_rate[i + 1] and yaw_rate[i] > 0.5 * yaw_rate.max()
    ]
    return float(np.mean(np.diff(t[peaks]))) if len(peaks) > 1 else math.nan


def path_length(result: dict) -> np.ndarray:
    """Arc length of the centre's path on the plane from the start, at the transient's samples."""
    steps = np.linalg.norm(np.diff(result["centre"][:, :2], axis=0), axis=1)
    return np.concatenate([[0.0], np.cumsum(steps)])


def departure(result: dict, stepped, fraction: float = 0.01) -> dict:
    """How a stepped run of :func:`build` follows the transient's centre: the distance at the end
    and the largest, and the first time the distance exceeds ``fraction`` of the whole path
    length (None if never), all in units of r."""
    t = result["t"]
    reference = np.array([np.interp(stepped.t, t, result["centre"][:, j]) for j in range(3)]).T
    distance = np.linalg.norm(stepped.position[:, 0] - reference, axis=1)
    length = float(path_length(result)[-1])
    apart = np.flatnonzero(distance > fraction * length)
    return {
        "end_distance": float(distance[-1]),
        "max_distance": float(distance.max()),
        "path_length": length,
        f"leaves_{fraction:g}_of_path_at": float(stepped.t[apart[0]]) if apart.size else None,
    }


def plot_transient(result: dict, stepped: dict, path):
    """The Figs. 5-6 transient: paths of the centre and the contact point (state equations) with
    the LCP stepper's centre paths; the contact-force components; their in-plane / normal ratio
    against the paper's bound 0.52. ``result`` from :func:`transient`, ``stepped`` {label:
    trajectory of :func:`build`}. Writes ``path``; returns the (closed) Figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from lcpdyn.plotting import run_settings

    t = result["t"]

    fig = plt.figure(figsize=(15, 7.2))
    grid = fig.add_gridspec(2, 2, width_ratios=(1.1, 1.0), hspace=0.32, wspace=0.18)
    ax = fig.add_subplot(grid[:, 0])
    ax.plot(
        result["centre"][:, 0],
        result["centre"][:, 1],
        color="k",
        lw=1.3,
        zorder=3,
        label="centre, state equations (Eq. 22)",
    )
    ax.plot(
        result["contact"][:, 0],
        result["contact"][:, 1],
        color="C1",
        lw=0.9,
        zorder=2,
        label="contact point, state equations",
    )
    for k, (label, run) in enumerate(stepped.items()):
        gone = departure(result, run)["leaves_0.01_of_path_at"]
        departs = (
            f"leaves 1 % of the path at t = {gone:.1f}" if gone is not None else "within 1 % of the path throughout"
        )
        ax.plot(
            run.position[:, 0, 0],
            run.position[:, 0, 1],
            color=("C0", "C2", "C4")[k % 3],
            ls=("--", ":", "-.")[k % 3],
            lw=1.2,
            zorder=4 + k,
            label=f"centre, LCP stepper, {label} ({departs})",
        )
    ax.plot(result["centre"][0, 0], result["centre"][0, 1], "o", color="k", mfc="none", ms=9, zorder=8, label="start")
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("x/r (–)")
    ax.set_ylabel("y/r (–)")
    first = next(iter(stepped.values()))
    settings = run_settings(first.parameters, include_friction=False, time_unit="√(r/g)")
    settings = ", ".join(part for part in settings.split(", ") if not part.startswith("position update"))
    ax.set_title(f"paths on the plane (cf. Schwab–Meijaard 2003 Fig. 5)\nstepper: {settings}", fontsize=10)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.09), ncol=2, frameon=False)

    force = result["force"]
    ax = fig.add_subplot(grid[0, 1])
    for k, (label, style) in enumerate(
        (("F_x (world x, initial heading)", "-"), ("F_y (world y, lateral)", "--"), ("F_z (normal)", "-"))
    ):
        ax.plot(t, force[:, k], ls=style, lw=0.9, color=f"C{k}", label=label, zorder=3 - k)
    ax.set_xlabel("time t (√(r/g))")
    ax.set_ylabel("contact force on the disk (mg)")
    ax.set_title("contact force, state equations (cf. Fig. 6: there the opposite force, on the plane)", fontsize=9.5)
    ax.set_ylim(-0.75, 1.75)
    ax.legend(fontsize=8, loc="upper center", ncol=3, framealpha=0.9)

    ax = fig.add_subplot(grid[1, 1])
    ax.plot(t, result["force_ratio"], color="k", lw=0.9, label="|F_xy| / F_z, state equations")
    k = int(np.argmax(result["force_ratio"]))
    ax.plot(
        t[k],
        result["force_ratio"][k],
        "v",
        color="C3",
        ms=8,
        zorder=5,
        label=f"our maximum: {result['max_force_ratio']:.4f} (t = {t[k]:.1f})",
    )
    ax.axhline(0.52, color="C3", ls="--", lw=1.2, label="Schwab–Meijaard 2003 Sec. 3.2, Fig. 6: at most 0.52")
    ax.set_ylim(0.0, 1.0)
    ax.set_xlabel("time t (√(r/g))")
    ax.set_ylabel("|F_xy| / F_z (–)")
    ax.set_title("in-plane / normal contact force: the friction coefficient needed to roll", fontsize=9.5)
    ax.legend(fontsize=8, loc="upper right", framealpha=0.9)
    for ax in fig.axes:
        ax.grid(alpha=0.3)
    fig.suptitle(
        "rolling disk, upright start: forward speed v = 0.4116 √(g r), roll rate −0.01 √(g/r), "
        f"{t[-1]:g} time units √(r/g); units m = r = g = 1",
        fontsize=11,
    )
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return fig


def report(out_dir, stepper_dt: float = 2e-3) -> dict:
    """Root locus over speed 0..1 (Fig. 4), critical speed, the 87-unit transient from the state
    equations (Figs. 5-6) and the same transient in the LCP time stepper with ideal rolling;
    writes ``rolling-disk-*.png`` and returns the numbers."""
    import os

    from lcpdyn.stability import plot_root_locus, root_locus
    from lcpdyn.stepper import Simulation

    locus = root_locus(sys.modules[__name__], "speed", np.linspace(0.0, 1.0, 101))
    plot_root_locus(
        locus,
        os.path.join(out_dir, "rolling-disk-root-locus.png"),
        title="rolling disk: root locus over the forward speed (cf. Schwab–Meijaard 2003 Fig. 4)",
    )
    result = transient()
    stepped = {}
    for update, label in (("symplectic", "first order (default)"), ("midpoint", "Moreau midpoint, second order")):
        scene = build(dt=stepper_dt)
        stepped[label] = Simulation(scene.model, "regularized", stepper_dt, position_update=update).run(scene.t_end)
    plot_transient(result, stepped, os.path.join(out_dir, "rolling-disk-transient.png"))
    numbers = {
        "critical_speed": critical_speed(),
        "critical_speed_exact": 1 / math.sqrt(3),
        "max_force_ratio": result["max_force_ratio"],
        "paper_max_force_ratio": 0.52,
        "wobble_period": wobble_period(result),
        "stepper_dt": stepper_dt,
        "transient_time_units": float(result["t"][-1]),
    }
    for update, run in zip(("symplectic", "midpoint"), stepped.values()):  # the whole 87 units, in units of r
        numbers.update({f"stepper_{update}_{key}": value for key, value in departure(result, run).items()})
    return numbers
