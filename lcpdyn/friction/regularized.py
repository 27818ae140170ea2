"""Peiret 2016's regularized friction model: bristle (static) and hybrid dry/viscous (kinetic)."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..validation import nonnegative, positive
from .base import BOUNDED_LCP, CompiledRows, FrictionBlock, bristle_compliance, row_buffers, world_force_in_bases

__all__ = ["Regularized", "regularized_block"]


@njit(cache=True)
def regularized_block(
    D, v, h, mu, mu_static, normal_force, friction_force, tangent, compliance, v_th, F, C, c, hi, basis, kinetic
):
    """Fills the regularized model's rows (see :class:`Regularized`) contact by contact."""
    r, n = D.shape[0] // 2, D.shape[1]
    for i in range(r):
        s1 = 0.0
        s2 = 0.0
        for j in range(n):
            s1 += D[2 * i, j] * v[j]
            s2 += D[2 * i + 1, j] * v[j]
        speed = math.sqrt(s1 * s1 + s2 * s2)
        p1 = 0.0
        p2 = 0.0
        for j in range(3):  # previous friction force in the base basis
            p1 += tangent[i, 0, j] * friction_force[i, j]
            p2 += tangent[i, 1, j] * friction_force[i, j]
        magnitude = math.sqrt(p1 * p1 + p2 * p2)
        bound = mu[i] * normal_force[i]  # kinetic branch: mu_k (replaced by mu_s when static)
        C[2 * i] = compliance
        C[2 * i + 1] = compliance
        if speed > v_th:  # kinetic, Eqs. 16-20 and 27
            kinetic[i] = True
            e1, e2 = s1 / speed, s2 / speed
            target = -bound
            if bound > 0.0:
                C[2 * i + 1] = speed / (bound * h)  # 1 / (b_mu h), b_mu = mu lam_N / |v_T|
        else:  # static, Eqs. 9-15 and 26
            kinetic[i] = False
            if magnitude > 0.0:
                e1, e2 = -p1 / magnitude, -p2 / magnitude
            else:
                e1, e2 = 1.0, 0.0
            target = -magnitude
            bound = mu_static[i] * normal_force[i]  # sticking: the static coefficient
        for j in range(n):
            F[2 * i, j] = e1 * D[2 * i, j] + e2 * D[2 * i + 1, j]
            F[2 * i + 1, j] = -e2 * D[2 * i, j] + e1 * D[2 * i + 1, j]
        c[2 * i] = -C[2 * i] * h * target
        c[2 * i + 1] = 0.0
        hi[2 * i] = h * bound  # bounds on the impulses h lam_T
        hi[2 * i + 1] = h * bound
        basis[i, 0, 0] = e1
        basis[i, 1, 0] = e2
        basis[i, 0, 1] = -e2
        basis[i, 1, 1] = e1


class Regularized:
    """Peiret 2016's regularized friction: bristle (static) and hybrid dry/viscous (kinetic).

    Per contact, with v_T = D v the slip at the known state (Eq. 4) and lam_N, lam_T the
    previous normal and friction forces:

    * static (|v_T| <= v_th): basis aligned so the previous force is lam_T = (-|lam_T|, 0)
      (Eqs. 13-15; the base basis if lam_T = 0); bristle law lam_T+ = lam_T - h k_T D v+
      (Eq. 11), i.e. C_T = diag(1, 1)/(k_T h^2), lam~ = lam_T (Eq. 26).
    * kinetic (|v_T| > v_th): basis aligned with the slip, v_T = (v_T1, 0) (Eqs. 16-17);
      lam_T1+ = -mu lam_N - h k_T v_T1+ (Eq. 18) and lam_T2+ = -b_mu v_T2+ (Eq. 19) with the
      drift viscous coefficient b_mu = mu lam_N / v_T1 (Eq. 20): C_T = diag(1/(k_T h^2),
      1/(b_mu h)), lam~ = (-mu lam_N, 0) (Eq. 27).
    * both: unified row D v+ + C_T h lam_T+ - C_T h lam~ = sigma (Eq. 25), bounds
      -mu lam_N <= lam_T+ <= mu lam_N per component (Eq. 12), complementarity Eq. (28).
    * static and kinetic coefficients (Bauchau 2002 Eqs. 26-27): the static branch's bounds use
      the contact's ``mu_static`` (mu_s), the kinetic branch mu_k (``mu``): -mu_k lam_N in
      lam~ and b_mu = mu_k lam_N / v_T1.
    * ``tangential_stiffness=math.inf`` gives Eq. (29): C_T = 0 (static) and
      diag(0, 1/(b_mu h)) (kinetic).

    Differences from the paper: Eq. (27) prints the kinetic transversal entry as
    "h b_mu^-1 h^-2"; we use 1/(b_mu h), which is what Eq. (19) requires and what Eq. (29)
    prints. If mu lam_N = 0 (no previous normal force) the bounds are zero and b_mu is not
    defined; the friction unknowns are then fixed at zero.
    """

    name = "regularized"
    default_method = "judice-pires"
    formulation = BOUNDED_LCP
    chooses_static_coefficient = True  # its static branch takes mu_s, its kinetic one mu_k

    def __init__(self, tangential_stiffness: float = 1e10, velocity_threshold: float = 0.01):
        self.tangential_stiffness = positive("tangential_stiffness k_T", tangential_stiffness, allow_inf=True)
        self.velocity_threshold = nonnegative("velocity_threshold v_th", velocity_threshold)

    def parameters(self) -> dict:
        return {
            "model": self.name,
            "tangential_stiffness": self.tangential_stiffness,
            "velocity_threshold": self.velocity_threshold,
        }

    def compiled_rows(self, h: float) -> CompiledRows:
        return CompiledRows(bristle_compliance(self.tangential_stiffness, h), self.velocity_threshold, False)

    def block(self, D, v, h, mu, normal_force, friction_force, tangent, mu_static=None) -> FrictionBlock:
        r, n = D.shape[0] // 2, D.shape[1]
        mu_static = mu if mu_static is None else mu_static
        rows = self.compiled_rows(h)
        F, C, c, hi, basis, kinetic = row_buffers(r, n)
        regularized_block(
            D, v, h, mu, mu_static, normal_force, friction_force, tangent, rows.compliance,
            rows.velocity_threshold, F, C, c, hi, basis, kinetic,
        )  # fmt: skip
        return FrictionBlock(F, F, None, np.diag(C), c, -hi, hi, basis, kinetic)

    def world_force(self, x, block, tangent, h):
        return world_force_in_bases(x.reshape(-1, 2), block.basis, tangent, h)
