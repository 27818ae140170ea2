"""Wheel–rail creep forces: Kalker's linear theory with Vermeulen–Johnson saturation,
linearized implicitly in the step."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..validation import nonnegative, positive
from .base import BOUNDED_LCP, CompiledRows, FrictionBlock, world_force_in_bases

__all__ = ["Creep", "RollingKinematics", "saturation", "creep_force"]


class RollingKinematics(NamedTuple):
    """What a model with ``rolling_kinematics = True`` receives besides the slip rows D:
    ``spin`` (r, n) the rows of the spin s3 = n . omega (Schwab–Meijaard 2002 Eq. 8, rad/s) and
    ``speed`` (r,) the rolling speed V (m/s) at the known state (the paper's ||c_dot - v_c/2||,
    with the contact point's velocity c_dot taken as the body centre's tangential velocity)."""

    spin: np.ndarray
    speed: np.ndarray


def saturation(beta, xp=np):
    """Vermeulen & Johnson 1964's saturation as a factor on the linear force: F = eps(beta) F_lin,
    beta = |F_lin| / (mu N), so that |F| / (mu N) = beta - beta^2/3 + beta^3/27 for beta <= 3
    and 1 beyond (full sliding). Returns (eps, d eps / d beta); C^1 at beta = 3. ``xp``: NumPy
    or ``jax.numpy`` (traceable: the linearization of scenes.wheelset_hunting uses it)."""
    beyond = xp.maximum(beta, 3.0)
    eps = xp.where(beta < 3.0, 1.0 - beta / 3.0 + beta * beta / 27.0, 1.0 / beyond)
    slope = xp.where(beta < 3.0, -1.0 / 3.0 + 2.0 * beta / 27.0, -1.0 / (beyond * beyond))
    return (float(eps), float(slope)) if xp is np else (eps, slope)


def creep_force(slip, speed, normal_force, mu, coefficients, saturate=True):
    """(F (2,), dF/ds (2, 3)): the creep force on the wheel in the contact's (t1, t2), N, and its
    derivative in the slips s = (s1, s2, s3) (m/s, m/s, rad/s) at rolling speed ``speed`` (m/s),
    normal force ``normal_force`` N, coefficient ``mu`` and Kalker ``coefficients`` (f11, f22,
    f23) in (N, N, N m) -- :class:`Creep`. No normal force, no force."""
    f11, f22, f23 = coefficients
    A = np.array([[f11, 0.0, 0.0], [0.0, f22, f23]]) / speed  # F_lin = -A s
    linear = -A @ slip
    if normal_force <= 0.0:
        return np.zeros(2), np.zeros((2, 3))
    if not saturate:
        return linear, -A
    limit = mu * normal_force
    magnitude = float(np.hypot(linear[0], linear[1]))
    if limit <= 0.0:
        return np.zeros(2), np.zeros((2, 3))
    beta = magnitude / limit
    eps, slope = saturation(beta)
    jacobian = -eps * A
    if magnitude > 0.0:  # d beta / ds = (F_lin / |F_lin|)^T dF_lin/ds / (mu N)
        jacobian = jacobian + np.outer(linear, (linear / magnitude) @ -A) * (slope / limit)
    return eps * linear, jacobian


class Creep:
    """Creep forces of wheel–rail contact: Kalker's linear theory with Vermeulen–Johnson
    saturation (Schwab–Meijaard 2002 §5.2 and its ref. [11]), for wheel contacts whose
    tangential rows are the slips s1, s2 of Eq. (8) (:class:`~lcpdyn.wheel_rail.WheelRailContact`,
    :class:`~lcpdyn.contact.DiskContact`).

    With the creepages xi = (s1, s2, s3) / V (longitudinal, lateral, spin in 1/m; V the rolling
    speed, floored at ``min_speed``) the linear forces on the wheel in (t1, t2) are

        F1 = -f11 xi1,   F2 = -f22 xi2 - f23 xi3,

    ``f11``, ``f22`` (N) and the spin-lateral coupling ``f23`` (N m). Saturation (``saturate``):
    beta = |F_lin| / (mu N) and F = eps(beta) F_lin with |F| = mu N (beta - beta^2/3 + beta^3/27)
    for beta <= 3 and |F| = mu N beyond (:func:`saturation`); N is the previous step's normal
    force (as every model's bounds), mu the contact's kinetic coefficient.

    In the step the law is linearized implicitly about the known slips s^ (the continuous law's
    treatment, :class:`~lcpdyn.friction.Continuous`): with J = dF/ds at s^ and W = [D; S] the rows
    of (s1, s2, s3),

        h lam_T+ - h J W v+ - h (F(s^) - J s^) = 0,

    two free unknowns per contact in the base basis (fixed at zero where the contact carries no
    normal force): stable at any step however stiff the creep damping f/V is (f22/V = 400 kN s/m
    per wheel at 30 m/s).

    Differences from the paper and Kalker: the spin moment (f23 xi2 - f33 xi3) is not applied
    (the paper gives no f33); the creep coefficients are constants, not scaled with the normal
    load; a contact without normal force carries none (creep needs a loaded patch); V is floored
    at ``min_speed`` so a wheel at rest is not a division by zero (its creep is then a stiff
    viscous law).
    """

    name = "creep"
    default_method = "judice-pires"
    formulation = BOUNDED_LCP
    chooses_static_coefficient = True  # the law takes mu_k alone (saturation)
    rolling_kinematics = True

    def __init__(
        self,
        f11: float = 12e6,
        f22: float = 12e6,
        f23: float = 20e3,
        saturate: bool = True,
        min_speed: float = 0.1,
    ):
        self.f11 = nonnegative("creep coefficient f11", f11)
        self.f22 = nonnegative("creep coefficient f22", f22)
        self.f23 = float(f23)
        if not math.isfinite(self.f23):
            raise ValueError(f"creep coefficient f23 must be finite, got {f23!r}")
        if not isinstance(saturate, bool):
            raise TypeError(f"saturate must be True or False, got {saturate!r}")
        self.saturate = saturate
        self.min_speed = positive("min_speed", min_speed)

    def parameters(self) -> dict:
        """The model's name, Kalker's creep coefficients f11, f22, f23, whether it saturates and its least rolling
        speed."""
        return {
            "model": self.name,
            "f11": self.f11,
            "f22": self.f22,
            "f23": self.f23,
            "saturate": self.saturate,
            "min_speed": self.min_speed,
        }

    def compiled_rows(self, h: float) -> CompiledRows:
        """The creep law's rows for the compiled step (:mod:`lcpdyn.compiled_laws`): its coefficients
        and least rolling speed, which the step takes as traced numbers."""
        return CompiledRows(0.0, 0.0, False, creep=(self.f11, self.f22, self.f23, self.min_speed, self.saturate))

    def block(self, D, v, h, mu, normal_force, friction_force, tangent, mu_static=None, rolling=None) -> FrictionBlock:
        """The creep block: the creep forces of the contacts' creepages (``rolling`` gives their spin rows and
        rolling speeds), saturated at mu lam_N."""
        if rolling is None:
            raise ValueError(
                "friction model 'creep' needs the spin rows and rolling speeds of its contacts "
                "(rolling=RollingKinematics(...)); lcpdyn.stepper.Simulation passes them"
            )
        r, n = D.shape[0] // 2, D.shape[1]
        spin_rows = np.asarray(rolling.spin, float).reshape(r, n)
        speed = np.maximum(np.asarray(rolling.speed, float), self.min_speed)
        slip = (D @ v).reshape(r, 2)
        spin = spin_rows @ v
        F = np.zeros((2 * r, n))
        c = np.zeros(2 * r)
        kinetic = np.zeros(r, bool)
        coefficients = (self.f11, self.f22, self.f23)
        for i in range(r):
            s = np.array([slip[i, 0], slip[i, 1], spin[i]])
            force, J = creep_force(s, speed[i], normal_force[i], mu[i], coefficients, self.saturate)
            W = np.vstack([D[2 * i : 2 * i + 2], spin_rows[i]])
            F[2 * i : 2 * i + 2] = -h * (J @ W)
            c[2 * i : 2 * i + 2] = -h * (force - J @ s)
            limit = mu[i] * normal_force[i]
            kinetic[i] = self.saturate and limit > 0.0 and np.hypot(*force) >= limit * (1.0 - 1e-12)  # beta >= 3
        identity = np.tile(np.eye(2), (r, 1, 1))
        # unloaded (or mu = 0 under saturation): the force is zero, the unknowns are fixed there
        loaded = np.repeat((normal_force > 0.0) & ((mu > 0.0) | (not self.saturate)), 2)
        bound = np.where(loaded, np.inf, 0.0)
        return FrictionBlock(F, D, None, np.eye(2 * r), c, -bound, bound, identity, kinetic)

    def world_force(self, x, block, tangent, h):
        """The friction forces (r, 3) (N, world) of the solved unknowns ``x`` over the step h."""
        return world_force_in_bases(x.reshape(-1, 2), block.basis, tangent, h)
