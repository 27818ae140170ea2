"""Bauchau 2002 Sec. 8.2: a wheel-mounted pendulum on an incline (Figs. 10-15).

A uniform wheel (M = 125 kg, rho = 0.25 m) on a plane inclined at 25 deg carries, through a
revolute joint with a torsional spring k = 500 N m/rad, a uniform bar (4.0 m, 4.16 kg/m) hanging
from its axle: a rigid bar by default (``beam_elements = 0``), or with ``beam_elements = N`` the
paper's flexible beam, N geometrically exact elements (:mod:`lcpdyn.beam`) with Table 1's set 2
(EA = 44 MN, EI = 29.9 kN m^2, GJ = 23.1 kN m^2, GA = 2.8 MN, 4.16 kg/m, i_p = 0.86e-3 kg m,
proportional damping 0.001 s). Contact: F = k1 a + c1 a_dot with
k1 = 1 MN/m, c1 = 5 kN s/m; mu_s = 0.8, mu_k = 0.4. At the start the bar is parallel to the
incline (``bar_direction``: uphill from the axle by default -- the paper's figure is not
available; "downhill" is the other reading) and everything is at rest; the bar swings like a
pendulum while the wheel rolls down, and the spring makes the motion oscillate. Only the wheel
touches the plane.

The paper (with Coulomb friction and rolling constraints) finds five distinct rolling events
separated by sliding phases of increasing length; with the continuous law (v0 = 5 mm/s) rolling
is replaced by creep that gives way to sliding at all later times. :func:`rolling_events` counts
the events of a run.
"""

from __future__ import annotations

import math

import numpy as np

from lcpdyn.beam import add_beam
from lcpdyn.body import RigidBody
from lcpdyn.compliance import SpringDamperLaw
from lcpdyn.constraints import RevoluteJoint
from lcpdyn.contact import DiskContact, Plane
from lcpdyn.forces import TorsionalSpringDamper
from lcpdyn.model import Model

from .scene import Scene, beam_defaults, flexible_beam, override

NAME = "incline-pendulum"
DEFAULTS = {
    "wheel_mass": 125.0,
    "wheel_radius": 0.25,
    "bar_length": 4.0,
    "bar_mass_per_length": 4.16,
    "spring_stiffness": 500.0,
    "incline_deg": 25.0,
    "mu": 0.4,
    "mu_static": 0.8,
    "k1": 1e6,
    "c1": 5e3,
    "bar_direction": "uphill",
    "gravity": 9.81,
    "dt": 2e-4,
    "t_end": 3.0,
    "tangential_stiffness": 1e10,
    "velocity_threshold": 0.005,
    "characteristic_velocity": 0.005,
    **beam_defaults(2),
}


def build(**parameters) -> Scene:
    """The wheel-mounted pendulum on the incline (module docstring) with ``parameters`` overriding its defaults."""
    p = override(DEFAULTS, parameters, NAME)
    angle = math.radians(p["incline_deg"])
    plane = Plane.inclined(angle)
    M, rho, L = p["wheel_mass"], p["wheel_radius"], p["bar_length"]
    m_bar = p["bar_mass_per_length"] * L
    if not (rho > 0 and L > 0):
        raise ValueError(f"scene {NAME!r}: wheel_radius and bar_length must be > 0")
    model = Model(gravity=(0.0, 0.0, -p["gravity"]))
    if p["bar_direction"] not in ("uphill", "downhill"):
        raise ValueError(f"scene {NAME!r}: bar_direction must be 'uphill' or 'downhill', got {p['bar_direction']!r}")
    sign = 1.0 if p["bar_direction"] == "downhill" else -1.0
    centre = rho * plane.normal
    # body frames: the wheel's axis is body y; the bar lies along its body x, rotated into t1
    tilt = (math.cos(angle / 2), 0.0, math.sin(angle / 2), 0.0)  # rotation by +angle about y: x -> t1
    wheel = model.add_body(
        RigidBody(
            "wheel",
            M,
            (M * rho * rho / 4, M * rho * rho / 2, M * rho * rho / 4) if M > 0 else (-1.0, -1.0, -1.0),
            position=centre,
            orientation=tilt,
        )
    )
    elements, section = flexible_beam(p, NAME, p["bar_mass_per_length"])
    if elements:
        # laid out along +t1 whichever side the bar is on, so that its nodes' frames are the wheel's
        # (e1 = t1, e3 = the plane's normal, e2 = y) and the spring starts at theta = 0
        far = centre + sign * L * plane.t1
        start, end = (centre, far) if sign > 0 else (far, centre)
        beam = add_beam(model, "bar", section, start, end, elements, normal=plane.normal)
        bar, offset = (beam.root if sign > 0 else beam.tip), (0.0, 0.0, 0.0)
    else:
        slender = m_bar * L * L / 12 if m_bar > 0 else -1.0
        bar = model.add_body(
            RigidBody(
                "bar",
                m_bar,
                (1e-3 * slender, slender, slender),
                position=centre + sign * 0.5 * L * plane.t1,
                orientation=tilt,
            )
        )
        offset = (-sign * L / 2, 0.0, 0.0)
    model.add_constraint(RevoluteJoint(body_a=bar, offset_a=offset, body_b=wheel, name="axle"))
    model.add_force(TorsionalSpringDamper(bar, wheel, stiffness=p["spring_stiffness"]))
    model.add_contact(DiskContact(wheel, plane, p["mu"], p["mu_static"], SpringDamperLaw(p["k1"], p["c1"]), radius=rho))
    return Scene.from_parameters(NAME, model, p, __doc__)


def rolling_events(trajectory, threshold: float, minimum_duration: float = 0.01) -> list[tuple[float, float]]:
    """(start, end) times of the intervals where the contact's slip stays <= ``threshold`` for at
    least ``minimum_duration`` (rolling, or creeping under the continuous law)."""
    rolling = np.linalg.norm(trajectory.contact_slip_velocity[:, 0], axis=1) <= threshold
    events, start = [], None
    for t, flag in zip(trajectory.t, rolling):
        if flag and start is None:
            start = t
        elif not flag and start is not None:
            if t - start >= minimum_duration:
                events.append((float(start), float(t)))
            start = None
    if start is not None and trajectory.t[-1] - start >= minimum_duration:
        events.append((float(start), float(trajectory.t[-1])))
    return events


def compare_models(
    t_end: float = 3.0, dt: float = 2e-4, models=("coulomb", "regularized", "continuous"), beam_elements: int = 0
) -> dict:
    """Each friction model on the scene: rolling events, the median slip inside them (the creep
    velocity of the continuous law; ~0 for true rolling), CPU time, and the runs; with
    ``beam_elements`` > 0 on the paper's flexible beam."""
    import time

    from lcpdyn.stepper import Simulation

    out = {}
    for name in models:
        scene = build(t_end=t_end, dt=dt, beam_elements=beam_elements)
        threshold = scene.parameters["velocity_threshold"]
        start = time.process_time()
        run = Simulation(scene.model, scene.friction(name), dt, position_update="symplectic").run(t_end)
        cpu = time.process_time() - start
        events = rolling_events(run, threshold)
        slip = np.linalg.norm(run.contact_slip_velocity[:, 0], axis=1)
        inside = np.zeros(run.t.shape, bool)
        for a, b in events:
            inside |= (run.t >= a) & (run.t < b)
        creep = float(np.median(slip[inside])) if inside.any() else float("nan")
        out[name] = {"events": events, "count": len(events), "median_slip_in_events": creep, "cpu_s": cpu, "run": run}
    return out


def accuracy_cost(
    models=("coulomb", "regularized", "continuous"), steps=(4e-4, 2e-4, 1e-4), reference=2.5e-5, t_end: float = 3.0
) -> dict:
    """CPU time against accuracy: the wheel-centre position at t_end of runs with each step, against
    the same model at the ``reference`` step (its own converged answer)."""
    import time

    from lcpdyn.stepper import Simulation

    table = {}
    for name in models:
        rows = []
        scene = build(t_end=t_end, dt=reference)
        final = (
            Simulation(scene.model, scene.friction(name), reference, position_update="symplectic")
            .run(t_end)
            .position[-1, 0]
        )
        for h in steps:
            scene = build(t_end=t_end, dt=h)
            start = time.process_time()
            run = Simulation(scene.model, scene.friction(name), h, position_update="symplectic").run(t_end)
            rows.append(
                {
                    "dt": h,
                    "cpu_s": time.process_time() - start,
                    "position_error_m": float(np.linalg.norm(run.position[-1, 0] - final)),
                }
            )
        table[name] = rows
    return table


# Bauchau 2002 Sec. 8.2 (flexible beam; drawn beside ours by plot_slip_forces)
PAPER = {"rolling_events_coulomb": 5, "creep_ends_continuous_s": 0.2}

_STYLES = {
    "coulomb": ("C0", "-", 1.6),
    "regularized": ("C1", "--", 1.2),
    "continuous": ("C2", ":", 1.6),
    "coulomb, flexible beam": ("C4", "-", 1.0),
    "regularized, flexible beam": ("C5", "--", 1.0),
}
FLEXIBLE_ELEMENTS = 8
"""Elements of the flexible beam in :func:`report` (Table 1, set 2)."""


def plot_slip_forces(results: dict, path):
    """Slip speed with the rolling events (thick bars, as in Bauchau 2002 Figs. 11-14), friction and
    normal force, and their ratio against mu_s and mu_k, per friction model (``results`` from
    :func:`compare_models`); the paper's findings beside ours. Writes ``path``; returns the
    (closed) Figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.transforms import blended_transform_factory

    from lcpdyn.plotting import run_settings

    fig, axes = plt.subplots(4, 1, figsize=(12, 12.5), sharex=True)
    bars = blended_transform_factory(axes[0].transData, axes[0].transAxes)
    first = None
    for k, (name, r) in enumerate(results.items()):
        run = r["run"]
        first = first or run
        color, style, width = _STYLES.get(name, (f"C{k}", "-", 1.2))
        kw = dict(color=color, ls=style, lw=width, zorder=3 + k)
        slip = np.linalg.norm(run.contact_slip_velocity[:, 0], axis=1)
        friction = np.linalg.norm(run.contact_friction_force[:, 0], axis=1)
        normal = run.contact_normal_force[:, 0]
        axes[0].plot(
            run.t,
            slip,
            **kw,
            label=(name.replace(",", " friction,", 1) if "," in name else f"{name} friction")
            + f" (ours): {r['count']} rolling event"
            + ("s" if r["count"] != 1 else "")
            + f", median slip in them {r['median_slip_in_events']:.1g} m/s",
        )
        for a, b in r["events"]:  # rolling (or creeping) events: thick bars near the top, one row per model
            axes[0].plot(
                [a, b], [0.96 - 0.05 * k] * 2, color=color, lw=5, solid_capstyle="butt", transform=bars, zorder=8
            )
        axes[1].plot(run.t, friction, **kw)
        axes[2].plot(run.t, normal, **kw)
        with np.errstate(divide="ignore", invalid="ignore"):
            axes[3].plot(run.t, np.where(normal > 0, friction / normal, np.nan), **kw)
    p = build().parameters
    axes[0].axvline(
        PAPER["creep_ends_continuous_s"],
        color="C3",
        ls="--",
        lw=1.2,
        zorder=9,
        label="Bauchau 2002 Sec. 8.2: with the continuous law, creep ends at t ≈ 0.2 s",
    )
    handles, labels = axes[0].get_legend_handles_labels()
    handles += [Line2D([], [], color="0.3", lw=5), Line2D([], [], ls="none")]
    labels += [
        f"rolling events (ours; slip ≤ v_th = {p['velocity_threshold']:g} m/s for ≥ 10 ms), one row per law",
        f"Bauchau 2002 Sec. 8.2 (Coulomb with rolling constraints): {PAPER['rolling_events_coulomb']} rolling "
        "events, separated by sliding phases of increasing length",
    ]
    fig.legend(handles, labels, fontsize=8, loc="lower center", ncol=2, frameon=False)
    axes[0].set_yscale("symlog", linthresh=1e-3)
    axes[0].set_ylim(0.0, 30.0)
    axes[0].set_ylabel("slip speed |v_T| (m/s; linear below 1 mm/s)")
    axes[1].set_ylabel("friction force |F_T| (N)")
    axes[2].set_ylabel("normal force F_N (N)")
    axes[3].axhline(
        p["mu_static"],
        color="C3",
        ls="--",
        lw=1.0,
        zorder=1,
        label=f"μ_s = {p['mu_static']:g} (Bauchau 2002 Sec. 8.2): rolling ends when the ratio reaches it",
    )
    axes[3].axhline(
        p["mu"],
        color="C3",
        ls="-.",
        lw=1.0,
        zorder=1,
        label=f"μ_k = {p['mu']:g} (Bauchau 2002 Sec. 8.2): while sliding the ratio lies on it "
        "(curves drawn over the line)",
    )
    axes[3].set_ylim(0.0, 1.0)
    axes[3].set_ylabel("|F_T| / F_N (–)")
    axes[3].set_xlabel("time t (s)")
    axes[3].legend(fontsize=8, loc="upper right", framealpha=0.92)
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.suptitle(
        f"wheel-mounted pendulum on a {p['incline_deg']:g}° incline, bar starting {p['bar_direction']} "
        "(cf. Bauchau 2002 Sec. 8.2, Figs. 13–14)\n"
        f"a rigid bar, and the paper's flexible beam (Table 1 set 2, {FLEXIBLE_ELEMENTS} elements) where labelled\n"
        + run_settings(first.parameters, include_friction=False)
        + "; line styles per friction law as in the top panel",
        fontsize=10.5,
    )
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(path, dpi=120, bbox_inches="tight")  # the legend below the axes is drawn whole
    plt.close(fig)
    return fig


def report(out_dir) -> dict:
    """Rolling events per model (cf. Figs. 11-14), the creep of the continuous law, CPU times,
    and CPU time against accuracy; writes ``incline-pendulum-*.png``."""
    import os

    results = compare_models()
    flexible = compare_models(models=("coulomb", "regularized"), beam_elements=FLEXIBLE_ELEMENTS)
    results.update({f"{name}, flexible beam": r for name, r in flexible.items()})
    plot_slip_forces(results, os.path.join(out_dir, "incline-pendulum-slip-forces.png"))
    return {
        "flexible_beam_elements": FLEXIBLE_ELEMENTS,
        "rolling_events": {k: r["events"] for k, r in results.items()},
        "rolling_event_counts": {k: r["count"] for k, r in results.items()},
        "median_slip_during_rolling_m_per_s": {k: r["median_slip_in_events"] for k, r in results.items()},
        "cpu_s": {k: r["cpu_s"] for k, r in results.items()},
        "paper": "Coulomb with rolling constraints: five rolling events separated by sliding phases of increasing "
        "duration; continuous law: creep at the beginning, then sliding at all later times",
        "accuracy_cost": accuracy_cost(),
    }
