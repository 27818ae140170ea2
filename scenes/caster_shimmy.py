"""Kinematic shimmy of a caster wheel (Schwab–Meijaard 2003 Sec. 3.3, Figs. 7-8, Eqs. 34-35).

The yoke's hinge B moves forward at constant speed v; zero trail and rake: the wheel centre A
hangs a yoke length l below B and the contact point C below A. Three non-holonomic conditions at
C: zero longitudinal slip, zero lateral slip and zero spin (a finite contact patch); the radial
deflection of the tyre is released. No degrees of freedom; kinematic coordinates q_k = (yaw psi,
roll theta, pitch phi), R = Rz(psi) Rx(theta) Ry(phi).

Rigid yoke: the linearized state equations have the eigenvalues 0, +-i v/r -- a sinusoidal path of
the contact point with wavelength 2 pi r.

Flexible yoke, modelled as simply as the check allows: a massless, inextensible cantilever that
bends in the yoke's lateral plane, loaded quasi-statically at A by the lateral contact force F and
the moment F r it makes about A: tip deflection w = F (l^3/3 + r l^2/2)/EI and tip rotation (the
wheel's roll theta) F (l^2/2 + r l)/EI, so w = kappa r theta with kappa = (2 L^2 + 3 L) / (3 L + 6),
L = l/r (their text after Eq. 35, where with their roll sign y = -r theta it reads -kappa r theta;
kappa = 5/9 at L = 1). Hence A = B - l e_z + w (lateral unit vector of the yawed yoke). The
wavelength becomes 2 pi r sqrt(1 + kappa): 7.836 at r = l = 1 (their simulation with a beam of
bending stiffness 10: 7.83). ``flexible=0`` gives the rigid yoke.
"""

from __future__ import annotations

import functools
import math
import sys

import jax.numpy as jnp
import numpy as np

from lcpdyn.nonholonomic import MinimalSystem
from lcpdyn.rotation import rot_x, rot_y, rot_z

NAME = "caster-shimmy"
SWEEP = ("yoke_length", 0.25, 4.0, 61)


def bending_factor(length_over_radius: float) -> float:
    """kappa(L) = (2 L^2 + 3 L) / (3 L + 6) of the quasi-static cantilever (module docstring)."""
    L = length_over_radius
    return (2 * L * L + 3 * L) / (3 * L + 6)


def _pose(q, t, p):
    psi, theta, phi = q
    r, l = p["radius"], p["yoke_length"]
    kappa = p["flexible"] * (2 * (l / r) ** 2 + 3 * (l / r)) / (3 * (l / r) + 6)
    lateral = jnp.array([-jnp.sin(psi), jnp.cos(psi), 0.0])
    # the tip deflects to the same side as the roll moves the contact point (both from F_y)
    centre = jnp.array([p["speed"] * t, 0.0, r]) + kappa * r * theta * lateral
    return centre[None, :], (rot_z(psi) @ rot_x(theta) @ rot_y(phi))[None]


def _contact_point(q, t, p):
    (centre,), (R,) = _pose(q, t, p)
    axis = R[:, 1]
    c = jnp.cross(jnp.array([0.0, 0.0, 1.0]), axis)
    d2 = c / jnp.sqrt(c @ c)
    return centre + p["radius"] * jnp.cross(d2, axis)


SYSTEM_PARAMETERS = {"radius": 1.0, "yoke_length": 1.0, "speed": 1.0, "flexible": 1.0}
"""The linearization's parameters and their defaults (what :func:`system` takes; listed by
`lcpdyn scenes` without building the system)."""


@functools.cache
@functools.lru_cache(maxsize=8)  # one system per structure: its compiled functions are kept (a sweep compiles once)
def system() -> MinimalSystem:
    """Parameters: radius r, yoke_length l, speed v, flexible (0 rigid, 1 quasi-static cantilever)."""

    def slip(q, qdot, t, p):
        velocity, omega = caster.body_velocities(q, qdot, t, p)
        centre = _pose(q, t, p)[0][0]
        material = velocity[0] + jnp.cross(omega[0], _contact_point(q, t, p) - centre)
        return jnp.array([material[0], material[1], omega[0][2]])

    caster = MinimalSystem(
        NAME,
        (),
        ("yaw", "roll", "pitch"),
        _pose,
        slip,
        masses=jnp.array([1.0]),
        inertias=(jnp.diag(jnp.array([0.25, 0.5, 0.25])))[None],
        gravity=(0.0, 0.0, -1.0),
        parameters=dict(SYSTEM_PARAMETERS),
    )
    return caster


def nominal(p) -> np.ndarray:
    """The nominal motion's degrees of freedom at parameters ``p``: zero (the caster runs straight)."""
    return np.zeros(3)


def wavelength_linear(**parameters) -> float:
    """2 pi v / Im(lambda) of the oscillatory eigenvalue pair."""
    caster = system()
    eigenvalues = caster.linearize(np.zeros(3), **parameters).eigenvalues
    p = caster.params(**parameters)
    return 2 * math.pi * p["speed"] / float(np.max(np.abs(eigenvalues.imag)))


def transient(yaw0: float = 0.1, distance: float = 40.0, **parameters) -> dict:
    """Integrate q_k_dot = b(q_k, t) from yaw ``yaw0``; the contact-point path and its wavelength
    (mean distance between successive upward zero crossings of the lateral position)."""
    caster = system()
    p = caster.params(**parameters)
    t_end = distance / p["speed"]
    t, states = caster.simulate(np.array([yaw0, 0.0, 0.0]), t_end, samples=int(200 * distance) + 1, **parameters)
    positions, rotations = caster.poses_along(t, states, **parameters)
    points, crossings, wavelength = _contact_path(positions[:, 0], rotations[:, 0, :, 1], p["radius"])
    return {"t": t, "states": states, "contact": points, "wavelength": wavelength, "crossings": crossings}


def _contact_path(centres, axes, radius):
    """(contact points (k, 3), upward zero crossings of their lateral position, the wavelength =
    the mean distance between successive crossings) from the wheel's centres and world axle
    directions along a run: the point centre + r d1 (Bauchau 2002 Eq. 2)."""
    c = np.cross([0.0, 0.0, 1.0], axes)
    d2 = c / np.linalg.norm(c, axis=1)[:, None]
    points = centres + radius * np.cross(d2, axes)
    x, y = points[:, 0], points[:, 1]
    up = np.flatnonzero((y[:-1] < 0) & (y[1:] >= 0))
    crossings = x[up] - y[up] * (x[up + 1] - x[up]) / (y[up + 1] - y[up])
    wavelength = float(np.mean(np.diff(crossings))) if crossings.size > 1 else math.nan
    return points, crossings, wavelength


def beam_model(elements: int = 4, yaw0: float = 0.1, bending_stiffness: float = 10.0, damping_ratio: float = 0.01):
    """The caster as Schwab–Meijaard 2003 Sec. 3.3 simulated it, in the time stepper: unit radius,
    length, speed and wheel mass (uniform disk); the yoke a beam of ``elements`` geometrically
    exact elements (:mod:`lcpdyn.beam`) bending in the lateral plane with EI = 10 and stiff
    otherwise (EA, GA, GJ and the other EI 1e5: inextensible, rigid in the xz-plane), nearly
    massless (1e-3 per unit length), with stiffness-proportional damping giving ``damping_ratio``
    in the wheel-on-yoke lateral mode (omega = sqrt(3 EI / l^3)); hinged at B about the vertical to
    a point moving at v; the wheel on a revolute axle at the tip, with ideal rolling and zero spin
    (bilateral rows) on the ground, no gravity (the radial deflection is released: no load);
    started at yaw ``yaw0``."""
    from lcpdyn.beam import BeamSection, add_beam
    from lcpdyn.body import RigidBody
    from lcpdyn.constraints import RevoluteJoint
    from lcpdyn.contact import DiskContact, Plane
    from lcpdyn.model import Model
    from lcpdyn.rotation import np_axis_angle

    r = l = v = 1.0
    stiff = 1e5
    omega = math.sqrt(3.0 * bending_stiffness / l**3)
    section = BeamSection(stiff, stiff, stiff, (stiff, bending_stiffness), 1e-3, 1e-6, 2.0 * damping_ratio / omega)
    model = Model(gravity=(0.0, 0.0, 0.0))
    lateral = (math.cos(yaw0), math.sin(yaw0), 0.0)  # e3 of the nodes: bending about it moves A sideways
    yoke = add_beam(
        model, "yoke", section, (0.0, 0.0, r + l), (0.0, 0.0, r), elements, normal=lateral, velocity=(v, 0, 0)
    )
    axle = np.array([-math.sin(yaw0), math.cos(yaw0), 0.0])
    wheel = model.add_body(
        RigidBody(
            "wheel", 1.0, (0.25, 0.5, 0.25), position=(0.0, 0.0, r), orientation=np_axis_angle((0, 0, 1), yaw0),
            velocity=(v, 0.0, 0.0), angular_velocity=axle * v / r,
        )
    )  # fmt: skip
    model.add_constraint(
        RevoluteJoint(
            body_a=yoke.root, offset_b=(0.0, 0.0, r + l), anchor_velocity=(v, 0.0, 0.0), axis_a=(1.0, 0.0, 0.0),
            axis_b=(0.0, 0.0, 1.0), name="hinge B",
        )
    )  # fmt: skip
    model.add_constraint(RevoluteJoint(body_a=wheel, body_b=yoke.tip, name="axle"))
    model.add_contact(DiskContact(wheel, Plane(), 1.0, radius=r, rolling="ideal", spin="ideal"))
    return model


def beam_transient(elements: int = 4, dt: float = 1e-3, distance: float = 40.0, **options) -> dict:
    """:func:`beam_model` run by the time stepper over ``distance``; the contact-point path and
    its wavelength as :func:`transient` measures it."""
    from lcpdyn.rotation import np_rotation_matrix
    from lcpdyn.stepper import Simulation

    run = Simulation(beam_model(elements, **options), "regularized", dt).run(distance)
    wheel = run.body_names.index("wheel")
    axes = np.array([np_rotation_matrix(q)[:, 1] for q in run.quaternion[:, wheel]])
    points, crossings, wavelength = _contact_path(run.position[:, wheel], axes, 1.0)  # unit radius
    return {"run": run, "contact": points, "wavelength": wavelength, "crossings": crossings}


def plot_paths(rigid: dict, flexible: dict, path, speed: float = 1.0, radius: float = 1.0, beam: dict | None = None):
    """Contact-point paths of :func:`transient` for the rigid and the flexible yoke (cf. Fig. 8a),
    with the published wavelengths marked where our paths should cross zero upwards: 2 pi r
    (rigid, Schwab–Meijaard 2003 Eq. 34) and 7.83 r (their flexible-yoke simulation, l = r).
    ``beam``: a :func:`beam_transient` drawn as well (the yoke as a beam in the time stepper).
    Writes ``path``; returns the (closed) Figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(12, 5.6))
    cases = (
        (rigid, "C0", "-", "rigid yoke", 2 * math.pi, "2πr (Schwab–Meijaard 2003 Eq. 34, rigid yoke)", "|"),
        (
            flexible,
            "C1",
            "--",
            "flexible yoke, l = r",
            7.83,
            "7.83 r (Schwab–Meijaard 2003 Sec. 3.3, FE simulation, l = r)",
            "x",
        ),
    )
    if beam is not None:
        cases += (
            (
                beam,
                "C2",
                ":",
                "flexible yoke as a beam (time stepper)",
                7.83,
                "7.83 r (Schwab–Meijaard 2003 Sec. 3.3, FE simulation, l = r)",
                "+",
            ),
        )
    for k, (case, color, style, name, published, text, marker) in enumerate(cases):
        ax.plot(
            case["contact"][:, 0],
            case["contact"][:, 1],
            color=color,
            ls=style,
            lw=1.4,
            zorder=3 + k,
            label=f"{name} (ours): mean wavelength {case['wavelength']:.4f} r between upward zero crossings",
        )
        x_end = case["contact"][-1, 0]
        ticks = np.arange(0.0, x_end + 1e-9, published * radius)
        y_tick = -0.02 - 0.02 * k  # the two sets of marks on separate rows below the axis
        ax.plot(
            ticks,
            np.full(ticks.shape, y_tick),
            ls="none",
            marker=marker,
            ms=11,
            mew=1.8,
            color=color,
            zorder=6,
            label=f"multiples of the published wavelength {text}",
        )
        ax.plot(
            case["crossings"],
            np.zeros(case["crossings"].shape),
            "o",
            color=color,
            mfc="none",
            ms=7,
            zorder=5,
            label=f"{name}: our upward zero crossings",
        )
    ax.axhline(0.0, color="k", lw=0.6, zorder=1)
    ax.set_xlabel("longitudinal contact-point position x/r (–)")
    ax.set_ylabel("lateral contact-point position y/r (–)")
    ax.set_ylim(-0.2, 0.2)
    ax.set_title(
        f"caster wheel, kinematic shimmy from yaw 0.1 rad at speed v = {speed:g}, radius r = {radius:g}, "
        "state equations"
        + (" and the beam model in the time stepper" if beam is not None else "")
        + " (cf. Schwab–Meijaard 2003 Fig. 8a)",
        fontsize=10.5,
    )
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)
    ax.grid(alpha=0.3)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return fig


BEAM_ELEMENTS = 4
"""Elements of the yoke in :func:`report`'s time-stepper run."""


def report(out_dir) -> dict:
    """Wavelengths (linearized and from the transient) for the rigid and the flexible yoke, the
    contact-point paths (cf. Fig. 8a) and the root locus over the yoke length."""
    import os

    from lcpdyn.stability import plot_root_locus, root_locus

    locus = root_locus(sys.modules[__name__], "yoke_length", np.linspace(0.25, 4.0, 61))
    plot_root_locus(
        locus,
        os.path.join(out_dir, "caster-shimmy-root-locus.png"),
        title="caster wheel, flexible yoke: root locus over the yoke length (cf. Schwab–Meijaard 2003 "
        "Sec. 3.3, Eq. 35)",
    )
    rigid, flexible = transient(flexible=0.0), transient(flexible=1.0)
    beam = beam_transient(BEAM_ELEMENTS)
    p = system().params()
    plot_paths(rigid, flexible, os.path.join(out_dir, "caster-shimmy-path.png"), p["speed"], p["radius"], beam)
    return {
        "wavelength_flexible_beam_time_stepper": beam["wavelength"],
        "beam_elements": BEAM_ELEMENTS,
        "wavelength_rigid_linear": wavelength_linear(flexible=0.0),
        "wavelength_rigid_transient": rigid["wavelength"],
        "expected_rigid": 2 * math.pi,
        "wavelength_flexible_linear": wavelength_linear(flexible=1.0),
        "wavelength_flexible_transient": flexible["wavelength"],
        "expected_flexible": 2 * math.pi * math.sqrt(1 + bending_factor(1.0)),
        "paper_simulation": 7.83,
    }
