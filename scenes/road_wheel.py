"""Bauchau 2002 Sec. 8.1: a wheel on a beam swinging down onto a moving road (Fig. 3-9).

A uniform beam (length 3.75 m, 1.61 kg/m) is pinned at a support h = 3.995 m above a road that
moves at V = 8 m/s; at its tip a wheel (M = 15 kg, uniform
disk of radius rho = 0.25 m) turns on a revolute joint with a torsional damper C = 0.01 N m s.
The tyre is the polynomial law F = k1 a + k2 a^2 + k3 a^3 + k4 a^4 of the approach a
(k1 = 1.755 MN/m, k2 = 463.5 MN/m^2, k3 = -18.560 GN/m^3, k4 = 303.750 GN/m^4), undamped;
mu_s = mu_k = 0.4. The beam is released horizontal, on the side from which its tip meets the
road moving with it (the paper: a small relative velocity at the first contact).

The beam is a rigid bar by default (``beam_elements = 0``); with ``beam_elements = N`` it is the
paper's flexible beam, N geometrically exact elements (:mod:`lcpdyn.beam`) with Table 1's set 1
(EA = 44 MN, EI = 29.9 kN m^2, GJ = 23.1 kN m^2, GA = 14 MN, 1.61 kg/m, i_p = 11e-3 kg m,
proportional damping 0.001 s), pinned at its root node, the wheel's axle at its tip node.

Frame: the road's. By Galilean invariance the road is the fixed plane z = 0 and the support moves
at -V along x (a rheonomic revolute joint); speeds relative to the road are what the paper plots.

Checks: the first contact time, against the rigid compound pendulum (the beam swinging with the
wheel's mass at its tip; the wheel's spin is not excited before contact) -- the paper's flexible
beam: 1.092 s; and the wheel's spin approaching V / rho = 32 rad/s once it rolls continuously.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.integrate import quad

from lcpdyn.beam import add_beam
from lcpdyn.body import RigidBody
from lcpdyn.compliance import PolynomialLaw
from lcpdyn.constraints import RevoluteJoint
from lcpdyn.contact import DiskContact, Plane
from lcpdyn.forces import TorsionalSpringDamper
from lcpdyn.model import Model

from .scene import Scene, beam_defaults, flexible_beam, override

NAME = "road-wheel"
DEFAULTS = {
    "beam_length": 3.75,
    "beam_mass_per_length": 1.61,
    "support_height": 3.995,
    "road_speed": 8.0,
    "wheel_mass": 15.0,
    "wheel_radius": 0.25,
    "joint_damping": 0.01,
    "mu": 0.4,
    "mu_static": 0.4,
    "k1": 1.755e6,
    "k2": 463.5e6,
    "k3": -18.560e9,
    "k4": 303.750e9,
    "tyre_damping": 0.0,
    "gravity": 9.81,
    "dt": 2e-4,
    "t_end": 16.0,
    "tangential_stiffness": 1e10,
    "velocity_threshold": 0.05,
    "characteristic_velocity": 0.05,
    **beam_defaults(1),
}


def build(**parameters) -> Scene:
    """The wheel on a beam swinging onto the road (module docstring) with ``parameters`` overriding its defaults."""
    p = override(DEFAULTS, parameters, NAME)
    l, h, V = p["beam_length"], p["support_height"], p["road_speed"]
    m_beam, M, rho = p["beam_mass_per_length"] * l, p["wheel_mass"], p["wheel_radius"]
    if not (l > 0 and rho > 0 and h > rho):
        raise ValueError(f"scene {NAME!r}: need beam_length > 0, wheel_radius > 0 and support_height > wheel_radius")
    elements, section = flexible_beam(p, NAME, p["beam_mass_per_length"])
    model = Model(gravity=(0.0, 0.0, -p["gravity"]))
    if elements:
        flexible = add_beam(model, "beam", section, (0.0, 0.0, h), (-l, 0.0, h), elements, velocity=(-V, 0.0, 0.0))
        root, root_offset, tip, tip_offset = flexible.root, (0.0, 0.0, 0.0), flexible.tip, (0.0, 0.0, 0.0)
    else:
        slender = m_beam * l * l / 12.0 if m_beam > 0 else -1.0
        root = tip = model.add_body(
            RigidBody(
                "beam", m_beam, (1e-3 * slender, slender, slender), position=(-l / 2, 0.0, h), velocity=(-V, 0.0, 0.0)
            )
        )
        root_offset, tip_offset = (l / 2, 0.0, 0.0), (-l / 2, 0.0, 0.0)
    wheel = model.add_body(
        RigidBody(
            "wheel",
            M,
            (M * rho * rho / 4, M * rho * rho / 2, M * rho * rho / 4) if M > 0 else (-1.0, -1.0, -1.0),
            position=(-l, 0.0, h),
            velocity=(-V, 0.0, 0.0),
        )
    )
    # a node's frame has e1 along the beam (-x) and e2 = -y: its y axis is the hinge axis as well
    model.add_constraint(
        RevoluteJoint(
            body_a=root, offset_a=root_offset, offset_b=(0.0, 0.0, h), anchor_velocity=(-V, 0.0, 0.0), name="support"
        )
    )
    model.add_constraint(RevoluteJoint(body_a=wheel, body_b=tip, offset_b=tip_offset, name="axle"))
    model.add_force(TorsionalSpringDamper(wheel, tip, damping=p["joint_damping"]))
    law = PolynomialLaw((p["k1"], p["k2"], p["k3"], p["k4"]), damping=p["tyre_damping"])
    model.add_contact(DiskContact(wheel, Plane(), p["mu"], p["mu_static"], law, radius=rho))
    return Scene.from_parameters(NAME, model, p, __doc__)


def first_contact_rigid(**parameters) -> float:
    """Time for the rigid compound pendulum (beam + wheel mass at the tip) to swing from
    horizontal to the angle where the undeformed wheel touches the road:
    t = int_0^phi_c dphi / sqrt(2 G sin(phi) / I_R), G = (m_b/2 + M) l g, I_R = m_b l^2/3 + M l^2,
    sin(phi_c) = (h - rho) / l."""
    p = override(DEFAULTS, parameters, NAME)
    l, M, g = p["beam_length"], p["wheel_mass"], p["gravity"]
    m_beam = p["beam_mass_per_length"] * l
    G = (m_beam / 2 + M) * l * g
    I_R = m_beam * l * l / 3 + M * l * l
    phi_c = math.asin((p["support_height"] - p["wheel_radius"]) / l)
    value, _ = quad(lambda phi: 1.0 / math.sqrt(2 * G * math.sin(phi) / I_R), 0.0, phi_c, limit=200)
    return value


def root_rotation(trajectory) -> np.ndarray:
    """Beam root rotation phi_R (deg): 0 horizontal at release, 90 hanging vertically (the beam
    turns about -y) -- the rotation of body 0 (the bar, or the flexible beam's root node) from its
    initial orientation, unwrapped."""
    q = trajectory.quaternion[:, 0]
    start = trajectory.quaternion[0, 0] * np.array([1.0, -1.0, -1.0, -1.0])  # q(0)^*, world-frame change q q0^*
    w = q[:, 0] * start[0] - q[:, 1:] @ start[1:]
    y = q[:, 0] * start[2] + start[0] * q[:, 2] + q[:, 3] * start[1] - q[:, 1] * start[3]
    return np.degrees(np.unwrap(-2.0 * np.arctan2(y, w)))


def wheel_index(trajectory) -> int:
    """The wheel's body index (1 with the rigid bar; after the N + 1 nodes of a flexible beam)."""
    return trajectory.body_names.index("wheel")


def contact_events(trajectory, flight: float = 0.05) -> list[float]:
    """Start times (s) of the contact events: the first step with gap <= 0 after at least
    ``flight`` seconds without contact (a micro-hop shorter than that belongs to its event)."""
    touching = trajectory.contact_gap[:, 0] <= 0
    starts, last = [], None
    for t, flag in zip(trajectory.t, touching):
        if flag:
            if last is None or t - last > flight:
                starts.append(float(t))
            last = t
    return starts


def summary(trajectory, scene) -> dict:
    """First contact time, the first three contact events (:func:`contact_events`), the root
    rotation at the first contact and the minimum relative distance during it; wheel spin over the
    last 0.5 s; the time after which the wheel's slip
    relative to the road stays <= v_th (it rolls; with the undamped tyre and a rigid beam it keeps
    making micro-hops of some micrometres, during which its rim speed still matches the road);
    the share of the last 2 s in contact and the largest gap then."""
    gap = trajectory.contact_gap[:, 0]
    touching = np.flatnonzero(gap <= 0)
    slip = np.linalg.norm(trajectory.contact_slip_velocity[:, 0], axis=1)
    sliding = np.flatnonzero(slip > scene.parameters["velocity_threshold"])
    settled = (
        float(trajectory.t[sliding[-1] + 1]) if sliding.size and sliding[-1] + 1 < len(trajectory.t) else float("nan")
    )
    tail = trajectory.t > trajectory.t[-1] - 0.5
    late = trajectory.t > trajectory.t[-1] - 2.0
    first_event = np.zeros(gap.shape, bool)
    if touching.size:  # the first event's 0.2 s (the minimum relative distance of Fig. 6)
        first_event = (trajectory.t >= trajectory.t[touching[0]]) & (trajectory.t < trajectory.t[touching[0]] + 0.2)
    return {
        "first_contact_s": float(trajectory.t[touching[0]]) if touching.size else float("nan"),
        "contact_events_s": contact_events(trajectory)[:3],
        "root_rotation_at_first_contact_deg": float(root_rotation(trajectory)[touching[0]])
        if touching.size
        else float("nan"),
        "minimum_gap_first_contact_m": float(gap[first_event].min()) if touching.size else float("nan"),
        "final_spin_rad_per_s": float(np.abs(trajectory.angular_velocity[tail, wheel_index(trajectory), 1]).mean()),
        "rolling_from_s": settled,
        "contact_share_last_2s": float((trajectory.contact_normal_force[late, 0] > 0).mean()),
        "largest_gap_last_2s_m": float(gap[late].max()),
    }


# Bauchau 2002 Sec. 8.1 (flexible beam): contact events, spin after the second contact, relative
# velocity and distance (drawn beside ours by plot_history)
PAPER = {
    "contact_times_s": (1.092, 3.289, 5.195),
    "spin_after_second_contact_rad_per_s": 46.0,
    "relative_velocity_before_second_contact_m_per_s": -16.9,
    "second_contact_duration_s": 0.026,
    "minimum_relative_distance_m": -0.004,
}

_STYLES = {
    "coulomb": ("C0", "-", 1.7),
    "regularized": ("C1", "--", 1.3),
    "continuous": ("C2", ":", 1.6),
    "regularized, flexible beam": ("C4", "-", 1.0),
}
FLEXIBLE_ELEMENTS = 8
"""Elements of the flexible beam in :func:`report` (Table 1, set 1)."""


def plot_history(runs: dict, scene, path):
    """Root rotation, wheel spin, relative velocity and relative distance of each run (friction
    model -> trajectory), with Bauchau 2002's values (:data:`PAPER`) beside ours (cf. Figs. 4-7).
    Writes ``path``; returns the (closed) Figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from lcpdyn.plotting import finish, run_settings

    p = scene.parameters
    t1, t2, t3 = PAPER["contact_times_s"]
    fig, axes = plt.subplots(4, 1, figsize=(12, 12), sharex=True)
    for k, (name, run) in enumerate(runs.items()):
        color, style, width = _STYLES.get(name, (f"C{k}", "-", 1.2))
        kw = dict(color=color, ls=style, lw=width, zorder=3 + k)  # labelled once, in the top panel
        label = name.replace(",", " friction,", 1) if "," in name else f"{name} friction"
        axes[0].plot(run.t, root_rotation(run), **kw, label=f"{label} (ours)")
        axes[1].plot(run.t, -run.angular_velocity[:, wheel_index(run), 1], **kw)
        axes[2].plot(run.t, run.contact_slip_velocity[:, 0, 0], **kw)
        axes[3].plot(run.t, run.contact_gap[:, 0], **kw)
    paper = dict(ls="none", mfc="none", mew=1.6, ms=10, color="C3", zorder=10)
    for ax in axes:
        for i, tc in enumerate((t1, t2, t3)):
            ax.axvline(
                tc,
                color="C3",
                ls="-.",
                lw=0.9,
                zorder=1,
                label="Bauchau 2002 Sec. 8.1: contact events t₁, t₂, t₃ = 1.092, 3.289, 5.195 s"
                if i == 0 and ax is axes[0]
                else None,
            )
    axes[0].plot([t1], [90.0], marker="o", **paper, label="Bauchau 2002: φ_R ≈ 90° at t₁")
    axes[0].set_ylabel("beam root rotation φ_R (deg)")
    spin = p["road_speed"] / p["wheel_radius"]
    axes[1].axhline(
        spin, color="C3", ls="--", lw=1.1, zorder=9, label=f"Bauchau 2002: continuous rolling at V/ρ = {spin:g} rad/s"
    )
    axes[1].plot(
        [t2 + PAPER["second_contact_duration_s"]],
        [PAPER["spin_after_second_contact_rad_per_s"]],
        marker="o",
        **paper,
        label="Bauchau 2002 (Fig. 5): about 46 rad/s after the 2nd contact",
    )
    axes[1].set_ylabel("wheel angular velocity ω (rad/s)")
    axes[2].plot(
        [0.0, t2],
        [-p["road_speed"], PAPER["relative_velocity_before_second_contact_m_per_s"]],
        marker="o",
        **paper,
        label="Bauchau 2002 (Fig. 7): V_r = −8 m/s at t = 0, ≈ −16.9 m/s at t₂",
    )
    axes[2].plot(
        [t2 + PAPER["second_contact_duration_s"]],
        [0.0],
        marker="s",
        **paper,
        label="Bauchau 2002: V_r = 0 within 0.026 s of t₂",
    )
    axes[2].set_ylabel("relative velocity V_r (m/s)")
    axes[3].plot(
        [t1],
        [PAPER["minimum_relative_distance_m"]],
        marker="o",
        **paper,
        label="Bauchau 2002 (Fig. 6): minimum q ≈ −0.004 m at t₁",
    )
    axes[3].set_yscale("symlog", linthresh=1e-3, linscale=1.0)
    axes[3].set_ylabel("relative distance q (m; linear within ±1 mm)")
    axes[3].set_xlabel("time t (s)")
    for ax in axes:
        ax.axhline(0.0, color="k", lw=0.5, zorder=1)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7.5, loc="best", framealpha=0.9)
    any_run = next(iter(runs.values()))
    return finish(
        fig,
        path,
        f"wheel on a beam swinging onto a road moving at V = {p['road_speed']:g} m/s, "
        "in the road's frame (cf. Bauchau 2002 Sec. 8.1, Figs. 4–7)\n"
        f"a rigid bar, and his flexible beam (Table 1 set 1, {FLEXIBLE_ELEMENTS} elements) where labelled\n"
        + run_settings(any_run.parameters, include_friction=False)
        + "\non the rigid bar the three friction laws nearly coincide (as in the paper): solid, dashed and "
        "dotted lines are drawn over one another",
        dpi=120,
    )


def report(out_dir, models=("coulomb", "regularized", "continuous")) -> dict:
    """The three friction treatments on the scene with the rigid bar, and the regularized model on
    the paper's flexible beam (cf. Figs. 4-7): contact events, root rotation and minimum distance
    at the first contact, spin-up to V/rho, CPU time; writes ``road-wheel-history.png``."""
    import os
    import time

    from lcpdyn.stepper import Simulation

    scene = build()
    numbers = {
        "first_contact_rigid_pendulum_s": first_contact_rigid(),
        "paper_first_contact_flexible_s": 1.092,
        "rolling_spin_expected_rad_per_s": scene.parameters["road_speed"] / scene.parameters["wheel_radius"],
    }
    runs = {}
    for name in models:
        start = time.process_time()
        run = Simulation(scene.model, scene.friction(name), scene.dt, position_update="symplectic").run(scene.t_end)
        numbers[name] = {**summary(run, scene), "cpu_s": time.process_time() - start}
        runs[name] = run
    flexible = build(beam_elements=FLEXIBLE_ELEMENTS)
    start = time.process_time()
    run = Simulation(flexible.model, flexible.friction("regularized"), flexible.dt).run(flexible.t_end)
    numbers["regularized, flexible beam"] = {
        **summary(run, flexible),
        "beam_elements": FLEXIBLE_ELEMENTS,
        "cpu_s": time.process_time() - start,
    }
    runs["regularized, flexible beam"] = run
    numbers["paper"] = PAPER
    plot_history(runs, scene, os.path.join(out_dir, "road-wheel-history.png"))
    return numbers
