"""Bauchau 2002's continuous friction law, linearized implicitly in the step."""

from __future__ import annotations

import math

import numpy as np

from ..validation import positive
from .base import BOUNDED_LCP, CompiledRows, FrictionBlock, world_force_in_bases

__all__ = ["Continuous"]


class Continuous:
    """Bauchau 2002's continuous friction law (Eq. 28), for comparison:

        lam_T = -mu_k lam_N (v_T / |v_T|) (1 - exp(-|v_T| / v0)),

    with the characteristic velocity v0 (``characteristic_velocity``). Sticking is replaced by
    creep: a tangential load f < mu_k lam_N is carried at the slip speed -v0 ln(1 - f/(mu_k lam_N)),
    so mu_s has no role (``chooses_static_coefficient``: the law takes mu_k alone).

    In the step it is linearized implicitly about the known slip v^ = D v (lam_N from the previous
    step, as the other models' bounds): with g(v) = v/|v| (1 - exp(-|v|/v0)) and G = dg/dv =
    (1 - exp(-s/v0))/s (I - u u^T) + exp(-s/v0)/v0 u u^T (s = |v^|, u = v^/s; G = I/v0 at s = 0),

        h lam_T+ + mu_k lam_N h G D v+ + mu_k lam_N h (g(v^) - G v^) = 0,

    two free (unbounded) unknowns per contact in the contact's base basis -- fixed at zero where
    mu lam_N = 0 (no normal force, no friction; as the regularized model's bounds do).
    """

    name = "continuous"
    default_method = "judice-pires"
    formulation = BOUNDED_LCP
    chooses_static_coefficient = True

    def __init__(self, characteristic_velocity: float = 0.01):
        self.characteristic_velocity = positive("characteristic_velocity v0", characteristic_velocity)

    def parameters(self) -> dict:
        """The model's name and its characteristic velocity (m/s)."""
        return {"model": self.name, "characteristic_velocity": self.characteristic_velocity}

    def compiled_rows(self, h: float) -> CompiledRows:
        """The continuous law's rows for the compiled step (:mod:`lcpdyn.compiled_step`): v0 in
        ``velocity_threshold``."""
        return CompiledRows(0.0, self.characteristic_velocity, False, continuous=True)

    def law(self, slip):
        """(g(v), G(v)) for one slip vector (2,)."""
        v0 = self.characteristic_velocity
        s = float(np.hypot(slip[0], slip[1]))
        if s < 1e-12 * v0:
            return slip / v0, np.eye(2) / v0
        u = slip / s
        decay = math.exp(-s / v0)
        outer = np.outer(u, u)
        return u * (1.0 - decay), (1.0 - decay) / s * (np.eye(2) - outer) + decay / v0 * outer

    def block(self, D, v, h, mu, normal_force, friction_force, tangent, mu_static=None) -> FrictionBlock:
        """The continuous law's block: its friction impulse mu h lam_N g(slip) linearized about the slip at the step's
        start, g + G (D v+ - slip), as rows of the step's problem in v+ (no bounds), on each contact's slip basis."""
        r, n = D.shape[0] // 2, D.shape[1]
        slip = (D @ v).reshape(r, 2)
        F = np.zeros((2 * r, n))
        c = np.zeros(2 * r)
        kinetic = np.zeros(r, bool)
        for i in range(r):
            g, G = self.law(slip[i])
            weight = mu[i] * normal_force[i] * h
            F[2 * i : 2 * i + 2] = weight * (G @ D[2 * i : 2 * i + 2])
            c[2 * i : 2 * i + 2] = weight * (g - G @ slip[i])
            kinetic[i] = np.hypot(*slip[i]) > self.characteristic_velocity
        identity = np.tile(np.eye(2), (r, 1, 1))
        # no normal force, no friction force: those unknowns are fixed at zero (bounds 0, 0) rather
        # than free rows "x = 0" with no data -- whose only scale would be x's own rounding
        loaded = np.repeat(mu * normal_force > 0.0, 2)
        bound = np.where(loaded, np.inf, 0.0)
        return FrictionBlock(F, D, None, np.eye(2 * r), c, -bound, bound, identity, kinetic)

    def world_force(self, x, block, tangent, h):
        """The friction forces (r, 3) (N, world) of the solved unknowns ``x`` over the step h."""
        return world_force_in_bases(x.reshape(-1, 2), block.basis, tangent, h)
