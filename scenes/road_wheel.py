"""Bauchau 2002 Sec. 8.1: a wheel on a beam swinging down onto a moving road (Fig. 3-9).

A uniform beam (length 3.75 m, 1.61 kg/m; rigid here -- the paper's is flexible) is pinned at a
support h = 3.995 m above a road that moves at V = 8 m/s; at its tip a wheel (M = 15 kg, uniform
disk of radius rho = 0.25 m) turns on a revolute joint with a torsional damper C = 0.01 N m s.
The tyre is the polynomial law F = k1 a + k2 a^2 + k3 a^3 + k4 a^4 of the approach a
(k1 = 1.755 MN/m, k2 = 463.5 MN/m^2, k3 = -18.560 GN/m^3, k4 = 303.750 GN/m^4), undamped;
mu_s = mu_k = 0.4. The beam is released horizontal, on the side from which its tip meets the
road moving with it (the paper: a small relative velocity at the first contact).

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

from lcpdyn.body import RigidBody
from lcpdyn.compliance import PolynomialLaw
from lcpdyn.constraints import RevoluteJoint
from lcpdyn.contact import DiskContact, Plane
from lcpdyn.forces import TorsionalSpringDamper
from lcpdyn.model import Model

from .scene import Scene, override

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
}


def build(**parameters) -> Scene:
    p = override(DEFAULTS, parameters, NAME)
    l, h, V = p["beam_length"], p["support_height"], p["road_speed"]
    m_beam, M, rho = p["beam_mass_per_length"] * l, p["wheel_mass"], p["wheel_radius"]
    if not (l > 0 and rho > 0 and h > rho):
        raise ValueError(f"scene {NAME!r}: need beam_length > 0, wheel_radius > 0 and support_height > wheel_radius")
    model = Model(gravity=(0.0, 0.0, -p["gravity"]))
    slender = m_beam * l * l / 12.0 if m_beam > 0 else -1.0
    beam = model.add_body(
        RigidBody(
            "beam", m_beam, (1e-3 * slender, slender, slender), position=(-l / 2, 0.0, h), velocity=(-V, 0.0, 0.0)
        )
    )
    wheel = model.add_body(
        RigidBody(
            "wheel",
            M,
            (M * rho * rho / 4, M * rho * rho / 2, M * rho * rho / 4) if M > 0 else (-1.0, -1.0, -1.0),
            position=(-l, 0.0, h),
            velocity=(-V, 0.0, 0.0),
        )
    )
    model.add_constraint(
        RevoluteJoint(
            body_a=beam,
            offset_a=(l / 2, 0.0, 0.0),
            offset_b=(0.0, 0.0, h),
            anchor_velocity=(-V, 0.0, 0.0),
            name="support",
        )
    )
    model.add_constraint(RevoluteJoint(body_a=wheel, body_b=beam, offset_b=(-l / 2, 0.0, 0.0), name="axle"))
    model.add_force(TorsionalSpringDamper(wheel, beam, damping=p["joint_damping"]))
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
    turns about -y)."""
    q = trajectory.quaternion[:, 0]
    return np.degrees(-2.0 * np.arctan2(q[:, 2], q[:, 0]))


def summary(trajectory, scene) -> dict:
    """First contact time; wheel spin over the last 0.5 s; the time after which the wheel's slip
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
    return {
        "first_contact_s": float(trajectory.t[touching[0]]) if touching.size else float("nan"),
        "final_spin_rad_per_s": float(np.abs(trajectory.angular_velocity[tail, 1, 1]).mean()),
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

_STYLES = {"coulomb": ("C0", "-", 1.7), "regularized": ("C1", "--", 1.3), "continuous": ("C2", ":", 1.6)}


def plot_history(runs: dict, scene, path):
    """Root rotation, wheel spin, relative velocity and relative distance of each run (friction
    model -> trajectory), with Bauchau 2002's values (:data:`PAPER`) beside ours (cf. Figs. 4-7).
    Writes ``path``; returns the (closed) Figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from lcpdyn.plotting import run_settings

    p = scene.parameters
    t1, t2, t3 = PAPER["contact_times_s"]
    fig, axes = plt.subplots(4, 1, figsize=(12, 12), sharex=True)
    for k, (name, run) in enumerate(runs.items()):
        color, style, width = _STYLES.get(name, (f"C{k}", "-", 1.2))
        kw = dict(color=color, ls=style, lw=width, zorder=3 + k)  # labelled once, in the top panel
        axes[0].plot(run.t, root_rotation(run), **kw, label=f"{name} friction (ours)")
        axes[1].plot(run.t, -run.angular_velocity[:, 1, 1], **kw)
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
    fig.suptitle(
        f"wheel on a rigid beam swinging onto a road moving at V = {p['road_speed']:g} m/s, "
        "in the road's frame "
        "(cf. Bauchau 2002 Sec. 8.1, Figs. 4–7; his beam is flexible)\n"
        + run_settings(any_run.parameters, include_friction=False)
        + "\nthe three friction laws nearly coincide (as in the paper): solid, dashed and dotted lines are "
        "drawn over one another",
        fontsize=10.5,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return fig


def report(out_dir, models=("coulomb", "regularized", "continuous")) -> dict:
    """The three friction treatments on the scene (cf. Figs. 4, 5, 7): first contact, spin-up to
    V/rho, CPU time; writes ``road-wheel-history.png``."""
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
    plot_history(runs, scene, os.path.join(out_dir, "road-wheel-history.png"))
    return numbers
