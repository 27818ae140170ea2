"""The 3D wheel of Peiret 2016 (Table 1, Fig. 3): a tilted disk launched sliding.

Parameters (Table 1): radius R = 0.5 m, mass m = 1 kg, axial moment of inertia I_a = 0.6,
transversal I_t = 0.3 kg m^2, friction coefficient mu = 0.3, tangential stiffness
k_T = 1e10 N/m, sliding velocity threshold v_th = 0.01 m/s; gap Phi = 0; Euler angles
psi = 0, theta = 20 deg, phi = 0 applied as Rz(psi) Rx(theta) Ry(phi), the wheel axis being
the body y axis (parallel to world y at psi = theta = 0); centre-of-mass velocity 6 m/s along
world x; yaw rate psi_dot = -2 rad/s (angular velocity -2 e_z); every other generalized
velocity zero; g = 9.81 m/s^2. The paper simulates at 1 kHz (Coulomb at 10 kHz) and reports
that the wheel slides for about the first two seconds.

Notes: I_a = 0.6 and I_t = 0.3 are the paper's values (a uniform thin disk of this mass and
radius would have 0.125 and 0.0625); with them I_a = 2 I_t still holds, as for any flat disk.
The run length is not given in the paper; ``t_end`` defaults to 4 s (two seconds of sliding,
two of rolling).

``static_bound`` (default ``"auto"``) is the regularized model's static bound for this scene:
``"auto"`` takes the paper's Eq. 12 box under the symplectic and the paper's updates, so that its
tables reproduce, and Coulomb's cone under the midpoint scheme; ``"box"`` and ``"cone"`` name one
(:class:`lcpdyn.friction.Regularized`).
"""

from __future__ import annotations

import math

import numpy as np

from lcpdyn.body import RigidBody
from lcpdyn.contact import DiskContact, Plane
from lcpdyn.friction.regularized import STATIC_BOUNDS
from lcpdyn.model import Model
from lcpdyn.rotation import euler_zxy

from .scene import Scene, override

DEFAULTS = {
    "radius": 0.5,
    "mass": 1.0,
    "axial_inertia": 0.6,
    "transverse_inertia": 0.3,
    "mu": 0.3,
    "tangential_stiffness": 1e10,
    "velocity_threshold": 0.01,
    "static_bound": "auto",  # the box (Eq. 12, the paper's tables) except under the midpoint scheme
    "psi_deg": 0.0,
    "theta_deg": 20.0,
    "phi_deg": 0.0,
    "speed": 6.0,
    "yaw_rate": -2.0,
    "gravity": 9.81,
    "dt": 1e-3,
    "t_end": 4.0,
}


def build(**parameters) -> Scene:
    """The Peiret 2016 wheel (module docstring) with ``parameters`` overriding Table 1's values."""
    p = override(DEFAULTS, parameters, "wheel")
    psi, theta, phi = (math.radians(p[k]) for k in ("psi_deg", "theta_deg", "phi_deg"))
    if not abs(theta) < math.pi / 2:
        raise ValueError(f"scene 'wheel': theta_deg must be in (-90, 90), got {p['theta_deg']}")
    quaternion = euler_zxy(psi, theta, phi)
    axis_world = np.array([-math.sin(psi) * math.cos(theta), math.cos(psi) * math.cos(theta), math.sin(theta)])
    height = p["radius"] * math.sqrt(1.0 - axis_world[2] ** 2)  # Phi = 0 (Bauchau 2002 Eq. 4)
    model = Model(gravity=(0.0, 0.0, -p["gravity"]))
    wheel = model.add_body(
        RigidBody(
            "wheel",
            p["mass"],
            (p["transverse_inertia"], p["axial_inertia"], p["transverse_inertia"]),
            position=(0.0, 0.0, height),
            orientation=quaternion,
            velocity=(p["speed"], 0.0, 0.0),
            angular_velocity=(0.0, 0.0, p["yaw_rate"]),
        )
    )
    model.add_contact(DiskContact(wheel, Plane(), p["mu"], radius=p["radius"], axis=(0.0, 1.0, 0.0)))
    if not p["tangential_stiffness"] > 0:
        raise ValueError(f"scene 'wheel': tangential_stiffness must be > 0, got {p['tangential_stiffness']}")
    if not p["velocity_threshold"] >= 0:
        raise ValueError(f"scene 'wheel': velocity_threshold must be >= 0, got {p['velocity_threshold']}")
    if p["static_bound"] not in STATIC_BOUNDS:
        raise ValueError(f"scene 'wheel': static_bound must be one of {STATIC_BOUNDS}, got {p['static_bound']!r}")
    return Scene.from_parameters("wheel", model, p, __doc__)
