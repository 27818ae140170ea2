"""Klingel motion of a railway wheelset, S1002 on UIC60, at constant speed (Schwab & Meijaard 2002 §5.1).

The paper's Eq. (9) and Figs. 7-8.

A rigid wheelset (the paper's 1887 kg, inertias 1000, 100, 1000 kg m²) carries its weight on
two :class:`~lcpdyn.wheel_rail.WheelRailContact` elements, placed by
:class:`~lcpdyn.wheelset_geometry.TrackPlacement` (gauge 1.435 m measured 14 mm below the
crowns, flange backs 1.360 m apart, tape circles 70 mm outside them, nominal radius 0.46 m,
rails canted ``cant`` about their profile's origin). A non-holonomic constraint holds its forward
speed at ``speed`` (the paper's moving frame); it starts shifted sideways by ``amplitude`` at rest
on both rails (height and roll from the contact geometry) and rolls.

Differences from the paper: the paper sets every slip to zero (ideal rolling) and, the rigid
wheelset being overconstrained then, lets the axle deform axially. Here the wheelset is rigid and
the tangential rows carry a friction model: with the regularized model (the default) the
contacts stick through their bristles (Peiret 2016) -- the redundancy is exactly what that
model resolves -- so the wheelset rolls without sliding and its lateral motion is the kinematic
one. (Ideal rolling rows on the rigid wheelset, ``wheelset(..., rolling="ideal")``, are
redundant, as the paper says: they are solved while they stay consistent, and the run stops with
a SimulationError once they do not -- after 0.2-1.0 s at 10 m/s from a 1 mm shift.)
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from lcpdyn import Model, RigidBody
from lcpdyn.constraints import Nonholonomic
from lcpdyn.contact import Plane
from lcpdyn.profiles import s1002, uic60
from lcpdyn.wheel_rail import FlangeContact, WheelRailContact, flange_split
from lcpdyn.wheelset_geometry import TrackPlacement, WheelsetGeometry

from .scene import Scene, override

NAME = "wheelset-klingel"
DEFAULTS = {
    "cant": 1 / 40,
    "gauge": 1.435,
    "flange_back_distance": 1.360,
    "nominal_radius": 0.46,
    "amplitude": 1e-4,
    "speed": 10.0,
    "mass": 1887.0,
    "mu": 0.3,
    "dt": 1e-3,
    "t_end": 2.5,
}
PAPER_WAVELENGTH = {1 / 40: 14.463, 1 / 20: 39.589}  # m, §5.1
REPORT_AMPLITUDES = {1 / 40: (5e-5, 1e-4, 2e-4, 4e-4), 1 / 20: (1e-3, 3e-3, 5e-3)}  # m


def geometry(p) -> WheelsetGeometry:
    """The wheelset's contact geometry: S1002 wheels of the nominal radius on UIC60 rails, placed by gauge, flange-
    back distance and cant."""
    placement = TrackPlacement(gauge=p["gauge"], flange_back_distance=p["flange_back_distance"],
                               nominal_radius=p["nominal_radius"], cant=p["cant"])  # fmt: skip
    return WheelsetGeometry(s1002(p["nominal_radius"]), uic60(), placement)


def wheelset(track: WheelsetGeometry, p, rolling: str = "friction", flange_law=None) -> Model:
    """The driven wheelset on ``track`` (module docstring), shifted by ``p["amplitude"]``;
    ``rolling`` of its contacts (:class:`~lcpdyn.wheel_rail.WheelRailContact`). With a
    ``flange_law`` (:mod:`lcpdyn.compliance`) each wheel has two contact pairs (Schwab & Meijaard
    2002 §1): its tread, rigid, limited to the profile on the tread side of
    :func:`~lcpdyn.wheel_rail.flange_split`, and its flange, compliant under ``flange_law``, on the
    other side (contacts 0, 1: the treads, left and right; 2, 3: the flanges)."""
    y0, speed = p["amplitude"], p["speed"]
    z, roll, (left, right) = track.equilibrium(y0)
    spin = speed / (0.5 * (left.radius + right.radius))
    model = Model()
    body = model.add_body(
        RigidBody(
            "wheelset",
            p["mass"],
            (1000.0, 100.0, 1000.0),
            position=(0.0, y0, z),
            orientation=(math.cos(roll / 2), math.sin(roll / 2), 0.0, 0.0),
            velocity=(speed, 0.0, 0.0),
            angular_velocity=(0.0, spin, 0.0),
        )  # fmt: skip
    )
    ranges = [(None, None), (None, None)]
    if flange_law is not None:
        for side in (0, 1):
            wheel = track.wheels[side]
            split, flange_side = flange_split(wheel)
            lower, upper = (0.0, split), (split, wheel.length)
            ranges[side] = (upper, lower) if flange_side == -1 else (lower, upper)  # (tread, flange)
    for side, sign in ((0, 1.0), (1, -1.0)):
        model.add_contact(WheelRailContact(body, Plane(), p["mu"], wheel=track.wheels[side], rail=track.rails[side],
                                           tape=sign * track.tape, rolling=rolling,
                                           wheel_range=ranges[side][0]))  # fmt: skip
    if flange_law is not None:
        for side, sign in ((0, 1.0), (1, -1.0)):
            model.add_contact(FlangeContact(body, Plane(), p["mu"], wheel=track.wheels[side], rail=track.rails[side],
                                            tape=sign * track.tape, rolling=rolling, wheel_range=ranges[side][1],
                                            normal_law=flange_law))  # fmt: skip
    model.add_constraint(Nonholonomic(lambda state: state.velocity(body)[:1], 1,
                                      rhs=lambda state, t: jnp.array([speed]), name="forward speed"))  # fmt: skip
    return model


def build(**parameters) -> Scene:
    """The wheelset in Klingel motion (module docstring) with ``parameters`` overriding its defaults."""
    p = override(DEFAULTS, parameters, NAME)
    for key in ("speed", "mass", "nominal_radius"):
        if not p[key] > 0:
            raise ValueError(f"scene {NAME!r}: {key} must be positive, got {p[key]!r}")
    return Scene.from_parameters(NAME, wheelset(geometry(p), p), p, __doc__)


def wavelength(x, y) -> float:
    """Twice the mean distance between the zero crossings of the lateral displacement y(x) (m);
    NaN with fewer than three crossings (less than a wavelength)."""
    crossings = np.flatnonzero(np.sign(y[:-1]) * np.sign(y[1:]) < 0)
    if crossings.size < 3:
        return float("nan")
    at = x[crossings] - y[crossings] * (x[crossings + 1] - x[crossings]) / (y[crossings + 1] - y[crossings])
    return float(2 * np.mean(np.diff(at)))


def run(friction: str = "regularized", **parameters) -> dict:
    """One run: the lateral displacement against the distance rolled and its wavelength."""
    import time

    scene = build(**parameters)
    start = time.perf_counter()
    trajectory = scene.simulation(friction).run(scene.t_end)
    wall = time.perf_counter() - start
    x, y = trajectory.position[:, 0, 0], trajectory.position[:, 0, 1]
    return {"x": x, "y": y, "wavelength": wavelength(x, y), "wall_s": wall, "steps": len(trajectory.t) - 1,
            "solved": bool(np.all(trajectory.solver_status == 0))}  # fmt: skip


def report(out_dir) -> dict:
    """Wavelengths for several amplitudes at slants 1/40 and 1/20 against Eq. (9) from the
    placed profiles and against the paper's values; writes ``wheelset-klingel-wavelength.png`` (lateral
    displacement against distance, cf. the paper's Figs. 7-8)."""
    import os

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    numbers, curves = {}, {}
    for cant, amplitudes in REPORT_AMPLITUDES.items():
        track = geometry({**DEFAULTS, "cant": cant})
        k = track.klingel(1e-6)
        label = f"1/{round(1 / cant)}"
        keys = ("gamma", "r0", "b", "rho_w", "rho_r", "wheel_contact_y", "rail_contact_y", "wavelength_eq9",
                "wavelength_kinematic")  # fmt: skip
        entry = {key: float(k[key]) for key in keys}
        entry["paper_wavelength"] = PAPER_WAVELENGTH[cant]
        t_end = 1.6 * k["wavelength_eq9"] / DEFAULTS["speed"]
        runs = []
        for amplitude in amplitudes:
            result = run(cant=cant, amplitude=amplitude, t_end=t_end)
            curves[(label, amplitude)] = (result["x"], result["y"])
            runs.append({"amplitude": amplitude, "wavelength": result["wavelength"],
                         "relative_to_eq9": result["wavelength"] / k["wavelength_eq9"] - 1,
                         "step_ms": 1e3 * result["wall_s"] / result["steps"], "solved": result["solved"]})  # fmt: skip
        entry["runs"] = runs
        numbers[label] = entry
    fig, axes = plt.subplots(2, 1, figsize=(9, 7))
    for ax, label in zip(axes, numbers):
        for (which, amplitude), (x, y) in curves.items():
            if which == label:
                ax.plot(x, y * 1e3, label=f"y0 = {amplitude * 1e3:g} mm")
        e = numbers[label]
        ax.set_title(f"slant {label}: Eq. 9 λ = {e['wavelength_eq9']:.2f} m (paper {e['paper_wavelength']} m)",
                     fontsize=10)  # fmt: skip
        ax.set_xlabel("distance rolled x (m)")
        ax.set_ylabel("lateral displacement y (mm)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper right")
    fig.suptitle("wheelset Klingel motion, S1002 on UIC60, 10 m/s (cf. Schwab–Meijaard 2002 Figs. 7–8)", fontsize=11)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "wheelset-klingel-wavelength.png"), dpi=120)
    plt.close(fig)
    return numbers
