"""Peiret 2016's regularized friction model: bristle (static) and hybrid dry/viscous (kinetic)."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..validation import nonnegative, positive
from .base import BOUNDED_LCP, CompiledRows, FrictionBlock, bristle_compliance, row_buffers, world_force_in_bases

__all__ = ["Regularized", "regularized_block", "STATIC_BOUNDS"]

CONE_PASSES = 3
"""The extra passes of ``static_bound="cone"`` (:attr:`Regularized.basis_passes`)."""
STATIC_BOUNDS = ("auto", "box", "cone")
"""The static branch's bounds of :class:`Regularized` (its ``static_bound``); ``"auto"`` is the
cone under Moreau's midpoint scheme and the box under the other position updates
(:meth:`Regularized.for_scheme`)."""


@njit(cache=True)
def regularized_block(
    D, v, h, mu, mu_static, normal_force, friction_force, tangent, compliance, v_th, F, C, c, hi, basis, kinetic, cone,
    basis_force, branch, guess,
):  # fmt: skip
    """Fills the regularized model's rows (see :class:`Regularized`) contact by contact; ``cone``:
    the static branch of ``static_bound="cone"``, its basis and transverse bound from
    ``basis_force`` (r, 3) (world; ``friction_force`` in the first pass). ``branch`` (r,) int8:
    0 the branch the slip D v chooses (|D v| > v_th: kinetic), 1 kinetic about the slip
    ``guess`` (r, 2) (base basis), -1 static (a switch inside the step, :meth:`Regularized.switches`)."""
    r, n = D.shape[0] // 2, D.shape[1]
    for i in range(r):
        s1 = 0.0
        s2 = 0.0
        for j in range(n):
            s1 += D[2 * i, j] * v[j]
            s2 += D[2 * i + 1, j] * v[j]
        if branch[i] == 1:
            s1, s2 = guess[i, 0], guess[i, 1]
        speed = math.sqrt(s1 * s1 + s2 * s2)
        if branch[i] == 0:
            moving = speed > v_th
        else:
            moving = branch[i] == 1 and speed > 0.0
        p1 = 0.0
        p2 = 0.0
        for j in range(3):  # previous friction force in the base basis
            p1 += tangent[i, 0, j] * friction_force[i, j]
            p2 += tangent[i, 1, j] * friction_force[i, j]
        magnitude = math.sqrt(p1 * p1 + p2 * p2)
        bound = mu[i] * normal_force[i]  # kinetic branch: mu_k (replaced by mu_s when static)
        C[2 * i] = compliance
        C[2 * i + 1] = compliance
        if moving:  # kinetic, Eqs. 16-20 and 27
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
            if cone:  # the basis of the force to keep in the cone; the bristle still pulls toward lam_T
                b1 = 0.0
                b2 = 0.0
                for j in range(3):
                    b1 += tangent[i, 0, j] * basis_force[i, j]
                    b2 += tangent[i, 1, j] * basis_force[i, j]
                along = math.sqrt(b1 * b1 + b2 * b2)
                if along > 0.0:
                    e1, e2 = -b1 / along, -b2 / along
                target = p1 * e1 + p2 * e2  # lam_T in that basis: (target, anchor)
                anchor = -p1 * e2 + p2 * e1
        for j in range(n):
            F[2 * i, j] = e1 * D[2 * i, j] + e2 * D[2 * i + 1, j]
            F[2 * i + 1, j] = -e2 * D[2 * i, j] + e1 * D[2 * i + 1, j]
        c[2 * i] = -C[2 * i] * h * target
        c[2 * i + 1] = 0.0
        hi[2 * i] = h * bound  # bounds on the impulses h lam_T
        hi[2 * i + 1] = h * bound
        if cone and not kinetic[i]:  # the box's corner at the basis force's level on the cone
            c[2 * i + 1] = -C[2 * i + 1] * h * anchor
            hi[2 * i + 1] = h * math.sqrt(max(bound * bound - along * along, 0.0))
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
    * switches inside the step (:meth:`switches`; not in the paper): a kinetic contact whose slip
      reverses is solved again in the static branch, and, with mu_s > mu_k, a static contact
      that slides beyond its bristle in the kinetic branch (docs/theory/step.md).
    * ``tangential_stiffness=math.inf`` gives Eq. (29): C_T = 0 (static) and
      diag(0, 1/(b_mu h)) (kinetic).
    * ``static_bound``: ``"auto"`` (default), ``"box"`` (the paper's Eq. 12) or ``"cone"``.
      ``"auto"`` is resolved by the :class:`~lcpdyn.stepper.Simulation` that takes the model
      (:meth:`for_scheme`): the cone under ``position_update="midpoint"``, the scheme a user takes
      for Coulomb's event times at second order; the box under the symplectic and the paper's
      updates, Peiret 2016's step and the one that settles in one pass on redundant contact sets
      (piles, boxes on their faces), where the cone's passes can end unsettled (the
      guide's ``wheel-comparison.md``, "Which static bound"). The run's file records the bound
      taken; outside a simulation ``"auto"`` builds the box's rows. The box bounds
      both static components by mu_s lam_N, so the static force can reach the box's corner,
      |lam_T| = sqrt(2) mu_s lam_N (measured by :func:`lcpdyn.metrics.static_force_ratio`:
      1.43 mu_s lam_N on the mu = 0.2 wheel at h = 1 ms, 1.17 on the default wheel), and a
      contact sticks where Coulomb's would slip (6-15 ms early on the mu = 0.2 wheel).
      ``"cone"`` keeps the static force in the cone with the LCP's box bounds: in a basis
      (e1, e2) aligned with a force lam_b, e1 = -lam_b/|lam_b|, the longitudinal bound stays
      mu_s lam_N and the transverse one becomes sqrt((mu_s lam_N)^2 - |lam_b|^2) (0 once
      |lam_b| >= mu_s lam_N): the box's corner at lam_b's level lies on the cone. The step is
      solved up to ``basis_passes`` = :data:`CONE_PASSES` more times with lam_b and the bounds'
      lam_N the last pass's (the first pass takes the previous step's, as the box does), until
      a pass settles (:func:`lcpdyn.friction.base.basis_settled`); at a fixed point the force is
      (-|lam|, 0) in its own basis with |lam| <= mu_s lam_N, inside the cone. The bristle keeps
      pulling toward the previous step's force lam_T, written in that basis (both rows of
      Eq. 26's lam~). Measured (h = 1 ms): the largest static ratio 1.0002 on the mu = 0.2 wheel
      (1.0004 on the default one; what remains is Eq. 12's lag of lam_N), and the five
      stick/slip switch times within 0.35 ms of the exact reference's under the midpoint scheme
      at h = 1 ms. The compiled kernels build it too; its passes cost 1.2-1.4x the box's step.

    Differences from the paper: Eq. (27) prints the kinetic transversal entry as
    "h b_mu^-1 h^-2"; we use 1/(b_mu h), which is what Eq. (19) requires and what Eq. (29)
    prints. If mu lam_N = 0 (no previous normal force) the bounds are zero and b_mu is not
    defined; the friction unknowns are then fixed at zero.
    """

    name = "regularized"
    default_method = "judice-pires"
    formulation = BOUNDED_LCP
    chooses_static_coefficient = True  # its static branch takes mu_s, its kinetic one mu_k

    @property
    def basis_passes(self) -> int:
        """Extra passes of the step with the static basis from the last pass's force (cone only)."""
        return CONE_PASSES if self.static_bound == "cone" else 0

    def __init__(
        self, tangential_stiffness: float = 1e10, velocity_threshold: float = 0.01, static_bound: str = "auto"
    ):
        self.tangential_stiffness = positive("tangential_stiffness k_T", tangential_stiffness, allow_inf=True)
        self.velocity_threshold = nonnegative("velocity_threshold v_th", velocity_threshold)
        if static_bound not in STATIC_BOUNDS:
            raise ValueError(f"static_bound must be one of {STATIC_BOUNDS}, got {static_bound!r}")
        self.static_bound = static_bound

    def for_scheme(self, position_update: str) -> Regularized:
        """The model a simulation with ``position_update`` runs: ``static_bound="auto"`` resolved
        (the cone under ``"midpoint"``, the box otherwise); the model itself when its bound is named."""
        if self.static_bound != "auto":
            return self
        bound = "cone" if position_update == "midpoint" else "box"
        return Regularized(self.tangential_stiffness, self.velocity_threshold, static_bound=bound)

    def parameters(self) -> dict:
        """The model's name and numbers: k_T (N/m), v_th (m/s) and the static bound."""
        return {
            "model": self.name,
            "tangential_stiffness": self.tangential_stiffness,
            "velocity_threshold": self.velocity_threshold,
            "static_bound": self.static_bound,
        }

    def compiled_rows(self, h: float) -> CompiledRows:
        """The regularized rows for the compiled step: the bristle compliance 1/(k_T h^2) at step h, v_th, and
        whether the static bound is the cone."""
        cone = self.static_bound == "cone"
        return CompiledRows(bristle_compliance(self.tangential_stiffness, h), self.velocity_threshold, False, cone)

    def block(
        self, D, v, h, mu, normal_force, friction_force, tangent, mu_static=None, basis_force=None, branch=None,
        guess=None,
    ) -> FrictionBlock:  # fmt: skip
        """The rows (class docstring); ``branch``, ``guess``: a switch inside the step
        (:meth:`switches`; None: every contact's branch from its slip D v)."""
        r, n = D.shape[0] // 2, D.shape[1]
        mu_static = mu if mu_static is None else mu_static
        branch = np.zeros(r, np.int8) if branch is None else branch
        guess = np.zeros((r, 2)) if guess is None else guess
        F, C, c, hi, basis, kinetic = row_buffers(r, n)
        regularized_block(
            D, v, h, mu, mu_static, normal_force, friction_force, tangent,
            bristle_compliance(self.tangential_stiffness, h), self.velocity_threshold, F, C, c, hi, basis, kinetic,
            self.static_bound == "cone", friction_force if basis_force is None else basis_force, branch, guess,
        )  # fmt: skip
        return FrictionBlock(F, F, None, np.diag(C), c, -hi, hi, basis, kinetic)

    def switches(self, start, end, kinetic, change, h, two_coefficients, scale):
        """Switches of branch inside the step, from its first solve: ``(branch, guess)`` for
        :func:`regularized_block` to solve the step again with, or None. Per contact, with
        ``start``/``end`` the slip D v, D v+ (r, 2) in the base basis, ``kinetic`` the branch taken,
        ``change`` lam_T+ - lam_T (r, 2) in the base basis, ``scale`` the slip below which the
        contact did not slide (m/s):

        * a kinetic contact whose slip reversed (D v+ . D v <= 0: it stopped within the step and
          the full mu_k lam_N impulse drove it back) -> static: the bristle law, which holds it
          if mu_s lam_N can (otherwise it breaks away in the next step);
        * with ``two_coefficients`` (mu_s > mu_k), a static contact that slid beyond its bristle
          (sigma = D v+ + (lam_T+ - lam_T) / (h k_T), zero while static friction holds, larger than
          ``scale``) -> kinetic about the slip it took, so mu_k acts in the step where static
          friction gave way."""
        r = start.shape[0]
        branch = np.zeros(r, np.int8)
        reversed_ = kinetic & ((start * end).sum(axis=1) <= 0.0)
        branch[reversed_] = -1
        if two_coefficients.any():
            stiffness = self.tangential_stiffness
            sigma = end if math.isinf(stiffness) else end + change / (h * stiffness)
            slid = ~kinetic & two_coefficients & (np.sqrt((sigma**2).sum(axis=1)) > scale)
            slid &= np.sqrt((end**2).sum(axis=1)) > 0.0
            branch[slid] = 1
        if not branch.any():
            return None
        return branch, np.where(branch[:, None] == 1, end, 0.0)

    def world_force(self, x, block, tangent, h):
        """The friction forces (r, 3) (N, world) of the solved unknowns ``x`` over the step h."""
        return world_force_in_bases(x.reshape(-1, 2), block.basis, tangent, h)
