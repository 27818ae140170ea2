"""Den Hartog's swivel wheel (Schwab–Meijaard 2003 Sec. 3.1, Fig. 1-2, Eqs. 30-32).

Plan view: the strut's attachment C moves forward at constant speed v; the strut's bottom point B
deflects sideways by u against a lateral stiffness k; the swivel (castor) arm of length l trails
from B to the wheel centre A at the shimmy angle delta; the centre of mass G lies on the arm at
distance a from A (b = l - a from B; their reduced mass m (a^2 + r^2)/l^2 fixes this reading), with
moment of inertia I = m r^2 about G; the rigid tyre has zero lateral slip at A
(the non-holonomic condition). Degree of freedom q_d = (u), kinematic coordinate q_k = (delta).

Closed forms (their Eqs. 30-32): with omega = v/l, omega_n^2 = k l^2 / (m (a^2 + r^2)) and
mu = (a b - r^2)/(a^2 + r^2), b = l - a, the characteristic equation is
lambda^3 + (1 + mu) omega lambda^2 + omega_n^2 lambda + omega_n^2 omega = 0 and the motion is
asymptotically stable iff v > 0 and a (l - a) > r^2 -- for I = 0.21 m l^2, 0.3 l < a < 0.7 l.
"""

from __future__ import annotations

import functools
import sys

import jax.numpy as jnp
import numpy as np
from scipy.optimize import brentq

from lcpdyn.nonholonomic import MinimalSystem

NAME = "swivel-shimmy"
SWEEP = ("a_over_l", 0.0, 1.0, 201)


def _pose(q, t, p):
    u, delta = q
    direction = jnp.array([jnp.cos(delta), jnp.sin(delta), 0.0])
    B = jnp.array([p["speed"] * t, u, 0.0])
    centre = B - (1.0 - p["a_over_l"]) * p["length"] * direction  # G lies a = a_over_l * l ahead of A
    c, s = jnp.cos(delta), jnp.sin(delta)
    R = jnp.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    return centre[None, :], R[None]


SYSTEM_PARAMETERS = {"mass": 1.0, "length": 1.0, "stiffness": 1.0, "speed": 1.0, "a_over_l": 0.5, "gyration": 0.21}
"""The linearization's parameters and their defaults (what :func:`system` takes; listed by
`lcpdyn scenes` without building the system)."""


@functools.cache
@functools.lru_cache(maxsize=8)  # one system per structure: its compiled functions are kept (a sweep compiles once)
def system() -> MinimalSystem:
    """Parameters: mass m, length l, stiffness k, speed v, a_over_l = a/l, gyration = r^2/l^2."""

    def slip(q, qdot, t, p):
        velocity, omega = swivel.body_velocities(q, qdot, t, p)
        centre = _pose(q, t, p)[0][0]
        u, delta = q
        wheel = jnp.array([p["speed"] * t, u, 0.0]) - p["length"] * jnp.array([jnp.cos(delta), jnp.sin(delta), 0.0])
        v_wheel = velocity[0] + jnp.cross(omega[0], wheel - centre)
        return jnp.array([v_wheel @ jnp.array([-jnp.sin(delta), jnp.cos(delta), 0.0])])

    def spring(q, qdot, t, p):
        return jnp.array([-p["stiffness"] * q[0], 0.0])

    def inertias(p):
        moment = p["gyration"] * p["mass"] * p["length"] ** 2
        return (moment * jnp.eye(3))[None]

    swivel = MinimalSystem(
        NAME,
        ("u",),
        ("delta",),
        _pose,
        slip,
        masses=lambda p: jnp.array([p["mass"]]),
        inertias=inertias,
        force=spring,
        gravity=(0.0, 0.0, 0.0),
        parameters=dict(SYSTEM_PARAMETERS),
    )
    return swivel


def nominal(p) -> np.ndarray:
    """Straight running: u = u_dot = delta = 0."""
    return np.zeros(3)


def characteristic_polynomial(**parameters) -> np.ndarray:
    """Coefficients (1, (1+mu) omega, omega_n^2, omega_n^2 omega) of their Eq. (31)."""
    p = system().params(**parameters)
    m, l, k, v = p["mass"], p["length"], p["stiffness"], p["speed"]
    a = p["a_over_l"] * l
    b = l - a
    r2 = p["gyration"] * l * l
    omega, omega_n2 = v / l, k * l * l / (m * (a * a + r2))
    mu = (a * b - r2) / (a * a + r2)
    return np.array([1.0, (1.0 + mu) * omega, omega_n2, omega_n2 * omega])


def growth_rate(a_over_l: float, **parameters) -> float:
    """Largest real part of the eigenvalues at a/l."""
    swivel = system()
    p = swivel.params(a_over_l=a_over_l, **parameters)
    return float(swivel.linearize(nominal(p), a_over_l=a_over_l, **parameters).eigenvalues.real.max())


def stability_boundaries(**parameters) -> tuple[float, float]:
    """The two a/l where the largest real part crosses zero (0.3 and 0.7 for r^2 = 0.21 l^2)."""
    low = brentq(lambda x: growth_rate(x, **parameters), 0.05, 0.5, xtol=1e-12)
    high = brentq(lambda x: growth_rate(x, **parameters), 0.5, 0.95, xtol=1e-12)
    return low, high


def report(out_dir) -> dict:
    """Root loci over a/l in [0, 1] for I = 0.21 m l^2 (Fig. 2), stability boundaries and the
    comparison of the linearized characteristic polynomial with Eq. (31)."""
    import os

    from lcpdyn.stability import plot_root_locus, root_locus

    locus = root_locus(sys.modules[__name__], "a_over_l", np.linspace(0.0, 1.0, 201))
    plot_root_locus(
        locus,
        os.path.join(out_dir, "swivel-shimmy-root-locus.png"),
        title="Den Hartog's swivel wheel, I = 0.21 m l²: root locus over the centre-of-mass position "
        "(cf. Schwab–Meijaard 2003 Fig. 2)",
    )
    low, high = stability_boundaries()
    worst = 0.0
    for a in np.linspace(0.05, 0.95, 19):
        ours = np.poly(system().linearize(nominal(None), a_over_l=a).state_matrix)
        worst = max(worst, float(np.max(np.abs(ours - characteristic_polynomial(a_over_l=a)))))
    return {
        "stability_boundaries_a_over_l": [low, high],
        "expected": [0.3, 0.7],
        "max_coefficient_difference_vs_eq31": worst,
    }
