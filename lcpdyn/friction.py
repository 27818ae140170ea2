"""Friction models, selected by name: ``regularized``, ``polygonal``, ``box``, ``coulomb`` and
``continuous`` (Bauchau 2002 Eq. 28, for comparison).

Every model except ``coulomb`` contributes a block of unknowns and rows to the bounded mixed
LCP of Peiret 2016 Eq. (30) (see :mod:`lcpdyn.stepper`)::

    [ M       -A^T  -N^T  -G^T ] [ v+     ]   [ -(M v + h f) ]   [ 0     ]
    [ A        0     0     0   ] [ h lam  ] + [ -u           ] = [ 0     ]
    [ N        0     0     0   ] [ h lamN ]   [  e_N         ]   [ wN    ]
    [ F        0     P     C   ] [ x_F    ]   [  c           ]   [ sigma ]

with x_F the model's friction unknowns in [lo, hi]: F (rows) and G (generalized-force map)
are D rotated or expanded per model, C its compliance block, P its coupling to the normal
impulses (Anitescu-Potra only) and c a constant. :class:`FrictionBlock` holds these.

Conventions: r contacts; D (2r x n) in each contact's *base* tangent basis (t1, t2) from the
geometry; ``normal_force`` lamN (r,) is the previous step's (or the fixed-point iterate's)
normal force in N; ``friction_force`` (r, 3) the previous world friction force in N.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from .validation import nonnegative, positive

__all__ = ["FrictionBlock", "Regularized", "Polygonal", "Box", "Coulomb", "Continuous", "make_friction", "MODELS"]


@dataclass
class FrictionBlock:
    F: np.ndarray  # (nf, n) rows of the friction unknowns
    G: np.ndarray  # (nf, n) generalized force map (enters the dynamics rows as -G^T)
    P: np.ndarray | None  # (nf, r) coupling to h lamN, or None
    C: np.ndarray  # (nf, nf)
    c: np.ndarray  # (nf,)
    lo: np.ndarray
    hi: np.ndarray
    basis: np.ndarray  # (r, 2, 2): columns are the model's directions in base (t1, t2) coordinates
    kinetic: np.ndarray  # (r,) bool, the regularized model's branch (False for the others)


@njit(cache=True)
def row_buffers(r, n):
    """Uninitialized (F (2r, n), C (2r), c (2r), hi (2r), basis (r, 2, 2), kinetic (r)) for the
    two-rows-per-contact models, filled by :func:`regularized_block` or :func:`box_block`."""
    return (
        np.empty((2 * r, n)),
        np.empty(2 * r),
        np.empty(2 * r),
        np.empty(2 * r),
        np.empty((r, 2, 2)),
        np.empty(r, np.bool_),
    )


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


@njit(cache=True)
def box_block(D, h, mu, normal_force, F, C, c, hi, basis, kinetic):
    """Box friction rows (see :class:`lcpdyn.friction.Box`): F = D, C = 0, bounds h mu lam_N."""
    for i in range(mu.shape[0]):
        for k in range(2):
            C[2 * i + k] = 0.0
            c[2 * i + k] = 0.0
            hi[2 * i + k] = h * mu[i] * normal_force[i]
            for j in range(D.shape[1]):
                F[2 * i + k, j] = D[2 * i + k, j]
        basis[i, 0, 0], basis[i, 1, 0], basis[i, 0, 1], basis[i, 1, 1] = 1.0, 0.0, 0.0, 1.0
        kinetic[i] = False


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

    def __init__(self, tangential_stiffness: float = 1e10, velocity_threshold: float = 0.01):
        self.tangential_stiffness = positive("tangential_stiffness k_T", tangential_stiffness, allow_inf=True)
        self.velocity_threshold = nonnegative("velocity_threshold v_th", velocity_threshold)

    def parameters(self) -> dict:
        return {
            "model": self.name,
            "tangential_stiffness": self.tangential_stiffness,
            "velocity_threshold": self.velocity_threshold,
        }

    def block(self, D, v, h, mu, normal_force, friction_force, tangent, mu_static=None) -> FrictionBlock:
        r, n = D.shape[0] // 2, D.shape[1]
        mu_static = mu if mu_static is None else mu_static
        compliance = 0.0 if math.isinf(self.tangential_stiffness) else 1.0 / (self.tangential_stiffness * h * h)
        F, C, c, hi, basis, kinetic = row_buffers(r, n)
        regularized_block(
            D,
            v,
            h,
            mu,
            mu_static,
            normal_force,
            friction_force,
            tangent,
            compliance,
            self.velocity_threshold,
            F,
            C,
            c,
            hi,
            basis,
            kinetic,
        )
        return FrictionBlock(F, F, None, np.diag(C), c, -hi, hi, basis, kinetic)

    def world_force(self, x, block, tangent, h):
        return _world(x.reshape(-1, 2), block, tangent, h)


def _world(components, block, tangent, h):
    """World friction force (r, 3) from impulses h*lam in the block's per-contact basis."""
    out = np.empty((tangent.shape[0], 3))
    _world_kernel(np.ascontiguousarray(components), block.basis, tangent, h, out)
    return out


@njit(cache=True)
def _world_kernel(components, basis, tangent, h, out):
    for i in range(components.shape[0]):
        b1 = (basis[i, 0, 0] * components[i, 0] + basis[i, 0, 1] * components[i, 1]) / h
        b2 = (basis[i, 1, 0] * components[i, 0] + basis[i, 1, 1] * components[i, 1]) / h
        for j in range(3):
            out[i, j] = b1 * tangent[i, 0, j] + b2 * tangent[i, 1, j]


class Box:
    """Lacoursière's box friction (Peiret 2016 ref. [10]): each component of lam_T in the
    contact's base tangent basis independently in [-mu lam_N, mu lam_N] (lam_N of the previous
    step), with rigid stiction D v+ = sigma (C_T = 0). Its friction force reaches
    sqrt(2) mu lam_N when the slip is diagonal to the basis."""

    name = "box"
    default_method = "judice-pires"

    def parameters(self) -> dict:
        return {"model": self.name}

    def block(self, D, v, h, mu, normal_force, friction_force, tangent, mu_static=None) -> FrictionBlock:
        r, n = D.shape[0] // 2, D.shape[1]
        F, C, c, hi, basis, kinetic = row_buffers(r, n)
        box_block(D, h, mu, normal_force, F, C, c, hi, basis, kinetic)
        return FrictionBlock(F, F, None, np.diag(C), c, -hi, hi, basis, kinetic)

    def world_force(self, x, block, tangent, h):
        return _world(x.reshape(-1, 2), block, tangent, h)


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

    def __init__(self, directions: int = 8):
        if isinstance(directions, bool) or not isinstance(directions, int) or directions < 3:
            raise ValueError(f"polygonal directions must be an integer >= 3, got {directions!r}")
        self.directions = directions
        angles = 2 * np.pi * np.arange(directions) / directions
        self._cos_sin = np.stack([np.cos(angles), np.sin(angles)], axis=1)  # (k, 2)

    def parameters(self) -> dict:
        return {"model": self.name, "directions": self.directions}

    def block(self, D, v, h, mu, normal_force, friction_force, tangent, mu_static=None) -> FrictionBlock:
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
        r, k = tangent.shape[0], self.directions
        base = x[: r * k].reshape(r, k) @ self._cos_sin / h
        return base[:, 0, None] * tangent[:, 0] + base[:, 1, None] * tangent[:, 1]


class Coulomb:
    """The exact Coulomb cone with maximal dissipation, the reference of Peiret 2016: per
    contact lam in {lam_N >= 0, |lam_T| <= mu lam_N}, stick (slip 0) inside, slide with
    lam_T = -mu lam_N v_T/|v_T| on the boundary, normal complementarity with the normal
    velocity. Solved every step to ``tolerance`` on the Delassus problem u = W r + b obtained by
    eliminating v+ and the bilateral multipliers (:func:`solvers.friction_contact.solve_friction_contact`,
    method ``nsgs`` with exact local solves by default, ``siconos-nsgs`` or ``siconos-nsn-ac``
    for Siconos' fc3d)."""

    name = "coulomb"
    default_method = "nsgs"

    def parameters(self) -> dict:
        return {"model": self.name}


class Continuous:
    """Bauchau 2002's continuous friction law (Eq. 28), for comparison:

        lam_T = -mu_k lam_N (v_T / |v_T|) (1 - exp(-|v_T| / v0)),

    with the characteristic velocity v0 (``characteristic_velocity``). Sticking is replaced by
    creep: a tangential load f < mu_k lam_N is carried at the slip speed -v0 ln(1 - f/(mu_k lam_N)).

    In the step it is linearized implicitly about the known slip v^ = D v (lam_N from the previous
    step, as the other models' bounds): with g(v) = v/|v| (1 - exp(-|v|/v0)) and G = dg/dv =
    (1 - exp(-s/v0))/s (I - u u^T) + exp(-s/v0)/v0 u u^T (s = |v^|, u = v^/s; G = I/v0 at s = 0),

        h lam_T+ + mu_k lam_N h G D v+ + mu_k lam_N h (g(v^) - G v^) = 0,

    two free (unbounded) unknowns per contact in the contact's base basis.
    """

    name = "continuous"
    default_method = "judice-pires"

    def __init__(self, characteristic_velocity: float = 0.01):
        self.characteristic_velocity = positive("characteristic_velocity v0", characteristic_velocity)

    def parameters(self) -> dict:
        return {"model": self.name, "characteristic_velocity": self.characteristic_velocity}

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
        return FrictionBlock(
            F, D, None, np.eye(2 * r), c, np.full(2 * r, -np.inf), np.full(2 * r, np.inf), identity, kinetic
        )

    def world_force(self, x, block, tangent, h):
        return _world(x.reshape(-1, 2), block, tangent, h)


MODELS = {"regularized": Regularized, "polygonal": Polygonal, "box": Box, "coulomb": Coulomb, "continuous": Continuous}


def make_friction(model, **parameters):
    """A friction model from a name (with parameters) or an existing model object."""
    if isinstance(model, (Regularized, Polygonal, Box, Coulomb, Continuous)):
        if parameters:
            raise TypeError("pass parameters only with a model name")
        return model
    if not isinstance(model, str) or model not in MODELS:
        raise ValueError(f"unknown friction model {model!r}; choose one of {sorted(MODELS)}")
    try:
        return MODELS[model](**parameters)
    except TypeError as exc:
        raise TypeError(f"friction model {model!r}: {exc}") from None
