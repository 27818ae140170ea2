"""Lacoursière's box friction (Peiret 2016 ref. [10])."""

from __future__ import annotations

import numpy as np
from numba import njit

from .base import BOUNDED_LCP, CompiledRows, FrictionBlock, row_buffers, world_force_in_bases

__all__ = ["Box", "box_block"]


@njit(cache=True)
def box_block(D, h, mu, normal_force, F, C, c, hi, basis, kinetic):
    """Box friction rows (see :class:`Box`): F = D, C = 0, bounds h mu lam_N."""
    for i in range(mu.shape[0]):
        for k in range(2):
            C[2 * i + k] = 0.0
            c[2 * i + k] = 0.0
            hi[2 * i + k] = h * mu[i] * normal_force[i]
            for j in range(D.shape[1]):
                F[2 * i + k, j] = D[2 * i + k, j]
        basis[i, 0, 0], basis[i, 1, 0], basis[i, 0, 1], basis[i, 1, 1] = 1.0, 0.0, 0.0, 1.0
        kinetic[i] = False


class Box:
    """Lacoursière's box friction (Peiret 2016 ref. [10]): each component of lam_T in the
    contact's base tangent basis independently in [-mu lam_N, mu lam_N] (lam_N of the previous
    step), with rigid stiction D v+ = sigma (C_T = 0). Its friction force reaches
    sqrt(2) mu lam_N when the slip is diagonal to the basis."""

    name = "box"
    default_method = "judice-pires"
    formulation = BOUNDED_LCP
    chooses_static_coefficient = False

    def parameters(self) -> dict:
        """{"model": "box"}: the box model has no numbers of its own."""
        return {"model": self.name}

    def compiled_rows(self, h: float) -> CompiledRows:
        """The box rows for the compiled step: no bristle compliance, no velocity threshold, rigid bounds +-mu lam_N."""
        return CompiledRows(0.0, 0.0, True)

    def block(self, D, v, h, mu, normal_force, friction_force, tangent, mu_static=None) -> FrictionBlock:
        """The box model's friction block for the contacts' rows D (2 r, n): two rows per contact on a fixed basis,
        each impulse bounded by +-mu h lam_N with the lagged normal force (Peiret 2016 Eq. 12)."""
        r, n = D.shape[0] // 2, D.shape[1]
        F, C, c, hi, basis, kinetic = row_buffers(r, n)
        box_block(D, h, mu, normal_force, F, C, c, hi, basis, kinetic)
        return FrictionBlock(F, F, None, np.diag(C), c, -hi, hi, basis, kinetic)

    def world_force(self, x, block, tangent, h):
        """The friction forces (r, 3) (N, world) of the solved unknowns ``x`` over the step h."""
        return world_force_in_bases(x.reshape(-1, 2), block.basis, tangent, h)
