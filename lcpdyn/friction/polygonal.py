"""Anitescu-Potra's polyhedral friction cone."""

from __future__ import annotations

import numpy as np

from .base import BOUNDED_LCP, CompiledRows, FrictionBlock

__all__ = ["Polygonal", "cone_directions"]


def cone_directions(k: int) -> np.ndarray:
    """The k unit directions (cos 2 pi j/k, sin 2 pi j/k), j = 0 .. k-1, in a contact's base
    tangent basis (t1, t2): (k, 2). The host block and the compiled step take the same numbers."""
    angles = 2 * np.pi * np.arange(k) / k
    return np.stack([np.cos(angles), np.sin(angles)], axis=1)


class Polygonal:
    """Anitescu-Potra (1997) polyhedral cone with ``directions`` = k unit vectors
    d_j = cos(2 pi j/k) t1 + sin(2 pi j/k) t2 inscribed in the circle of radius mu lam_N.

    Unknowns per contact: h beta (k, >= 0) and gamma (>= 0, the slip speed estimate):

        D_k v+ + e gamma = w_beta >= 0  _|_  h beta >= 0
        mu h lam_N+ - e^T h beta = w_gamma >= 0  _|_  gamma >= 0

    so the cone uses the *current* normal impulse. Friction force sum_j beta_j d_j. Default
    k = 8: the friction force lies on a vertex, so its misalignment with the slip is spread
    over +-pi/k, an RMS of (pi/k)/sqrt(3) = 13.0 deg for k = 8 -- the magnitude of Peiret 2016's
    14.0 deg for its polygonal model (k is not stated in the paper). With k = 4 the pyramid's
    facets lie at 0.707 mu lam_N. Default solver ``lemke``: this LCP is copositive-plus but not
    a P-matrix, which is what Lemke's method is guaranteed to process (Anitescu-Potra 1997).
    """

    name = "polygonal"
    default_method = "lemke"
    largest_mu = 1e8
    """The block's rows carry mu lam_N beside lam_N: in double precision the answer errs by about
    mu eps relative (measured on a sliding sphere: a spurious sideways slip of 3e-4 m/s at mu = 1e14,
    0.016 m/s and an energy gain at 1e16, none at 1e12). Contacts above 1e8 (errors below 2e-8)
    are refused when the simulation is built."""
    formulation = BOUNDED_LCP
    chooses_static_coefficient = False

    def __init__(self, directions: int = 8):
        if isinstance(directions, bool) or not isinstance(directions, int) or directions < 3:
            raise ValueError(f"polygonal directions must be an integer >= 3, got {directions!r}")
        self.directions = directions
        self._cos_sin = cone_directions(directions)  # (k, 2)

    def parameters(self) -> dict:
        """The model's name and its number of friction directions."""
        return {"model": self.name, "directions": self.directions}

    def compiled_rows(self, h: float) -> CompiledRows:
        """The polygonal rows for the compiled step (:mod:`lcpdyn.compiled_step`): k directions, no
        compliance, no threshold."""
        return CompiledRows(0.0, 0.0, False, False, self.directions)

    def block(self, D, v, h, mu, normal_force, friction_force, tangent, mu_static=None) -> FrictionBlock:
        """The polygonal cone's block: ``directions`` friction directions per contact with their impulses beta >= 0
        and the slip-speed unknown (Peiret 2016 Eqs. 13-16), coupled to the lagged normal force by mu lam_N - sum
        beta >= 0."""
        r, k = mu.shape[0], self.directions
        n = D.shape[1]
        D2 = D.reshape(r, 2, n)
        Dk = np.einsum("jd,rdn->rjn", self._cos_sin, D2).reshape(r * k, n)
        nf = r * k + r
        F = np.zeros((nf, n))
        F[: r * k] = Dk
        C = np.zeros((nf, nf))
        P = np.zeros((nf, r))
        for i in range(r):
            C[i * k : (i + 1) * k, r * k + i] = 1.0
            C[r * k + i, i * k : (i + 1) * k] = -1.0
            P[r * k + i, i] = mu[i]
        identity = np.tile(np.eye(2), (r, 1, 1))  # the directions are in the base basis
        return FrictionBlock(F, F, P, C, np.zeros(nf), np.zeros(nf), np.full(nf, np.inf), identity, np.zeros(r, bool))

    def world_force(self, x, block, tangent, h):
        """The friction forces (r, 3) (N, world): sum_j beta_j d_j / h over each contact's directions."""
        r, k = tangent.shape[0], self.directions
        base = x[: r * k].reshape(r, k) @ self._cos_sin / h
        return base[:, 0, None] * tangent[:, 0] + base[:, 1, None] * tangent[:, 1]
