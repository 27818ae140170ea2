"""The friction approximations of :mod:`solvers.friction_approximations` -- box, polygonal (the
k-gon, or its zonotope form) and regularized -- as objects with checked parameters, and how each
poses its LCP on a friction-contact problem in Delassus form (the :class:`Posing` protocol), with
the geometry they share; derivations in docs/theory/friction-approximations.md."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from .friction_contact import FrictionContactProblem

__all__ = [
    "Box",
    "Polygonal",
    "Regularized",
    "model_from_label",
    "polygon_vertices",
    "zonotope_generators",
    "velocity_scale",
    "ZONOTOPE",
    "ANITESCU_POTRA",
    "DelassusContext",
    "PosedLCP",
    "Posing",
]

ZONOTOPE = "zonotope"
ANITESCU_POTRA = "anitescu-potra"


# --- models --------------------------------------------------------------------------------------
def _real(name: str, value, minimum: float, *, strict: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    value = float(value)
    if not math.isfinite(value) or value < minimum or (strict and value == minimum):
        relation = ">" if strict else ">="
        raise ValueError(f"{name} must be a finite number {relation} {minimum:g}, got {value!r}")
    return value


def _count(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class Box:
    """Lacoursiere's box (``lcpdyn/friction/box.py``): r_T1, r_T2 in [-mu r_N, mu r_N] each."""

    @property
    def label(self) -> str:
        """The model's name in tables: "box"."""
        return "box"

    def parameters(self) -> dict:
        """{"model": "box"}: no numbers of its own."""
        return {"model": "box"}

    def posing(self, context: DelassusContext) -> Posing:
        """The box model posed on ``context``'s problem: two fixed tangent rows per contact, each bounded by +-mu
        r_N."""
        blocks = np.broadcast_to(np.eye(3), (context.contacts, 3, 3)).copy()
        return _FixedBasisPosing(context, blocks, 1.0, self.parameters())


@dataclass(frozen=True)
class Polygonal:
    """Anitescu-Potra's k-gon inscribed in the Coulomb circle (``lcpdyn/friction/polygonal.py``).

    directions : k >= 3, the vertices d_j = cos(2 pi j/k) t1 + sin(2 pi j/k) t2.
    formulation : ``"zonotope"`` (bounded LCP with bounds mu r_N sin(pi/k), even k only),
        ``"anitescu-potra"`` (the engine's LCP, any k, small problems) or ``"auto"`` (zonotope
        for even k). See docs/theory/friction-approximations.md.
    """

    directions: int = 8
    formulation: str = "auto"

    def __post_init__(self):
        k = _count("polygonal directions k", self.directions, 3)
        if self.formulation not in ("auto", ZONOTOPE, ANITESCU_POTRA):
            raise ValueError(
                f"polygonal formulation must be 'auto', {ZONOTOPE!r} or {ANITESCU_POTRA!r}, got {self.formulation!r}"
            )
        if self.formulation == ZONOTOPE and k % 2:
            raise ValueError(f"polygonal formulation {ZONOTOPE!r} needs an even number of directions, got k = {k}")

    @property
    def resolved_formulation(self) -> str:
        """The formulation used: the one asked for, or under "auto" the zonotope for an even number of directions
        and Anitescu--Potra's for an odd one."""
        if self.formulation == "auto":
            return ZONOTOPE if self.directions % 2 == 0 else ANITESCU_POTRA
        return self.formulation

    @property
    def label(self) -> str:
        """The model's name in tables: "polygonal-k", k the number of directions."""
        return f"polygonal-{self.directions}"

    def parameters(self) -> dict:
        """The model's name, directions and resolved formulation."""
        return {"model": "polygonal", "directions": self.directions, "formulation": self.resolved_formulation}

    def posing(self, context: DelassusContext) -> Posing:
        """The polygonal cone posed on ``context``'s problem in its resolved formulation."""
        parameters = self.parameters()
        if self.resolved_formulation == ANITESCU_POTRA:
            return _AnitescuPotraPosing(context, self.directions, parameters)
        E, half = zonotope_generators(self.directions)
        blocks = np.zeros((context.contacts, 3, 1 + E.shape[1]))
        blocks[:, 0, 0] = 1.0
        blocks[:, 1:, 1:] = E
        parameters["bound_factor"] = half
        return _FixedBasisPosing(context, blocks, half, parameters)


@dataclass(frozen=True)
class Regularized:
    """Peiret 2016's regularized model (``lcpdyn/friction/regularized.py``), constants made
    relative to the Delassus problem (docs/theory/friction-approximations.md).

    compliance : C_T = 1/(k_T h^2) per contact as a multiple of tr(W_aa)/3 (>= 0; 0 is Eq. 29).
    velocity_threshold : v_th as a multiple of the problem's velocity scale ||q||_2 / sqrt(nc).
    """

    compliance: float = 0.0
    velocity_threshold: float = 1e-4

    def __post_init__(self):
        _real("regularized compliance", self.compliance, 0.0)
        _real("regularized velocity_threshold", self.velocity_threshold, 0.0)

    @property
    def label(self) -> str:
        """The model's name in tables: "regularized"."""
        return "regularized"

    def parameters(self) -> dict:
        """The model's name and its compliance and velocity threshold, relative to the problem's scales."""
        return {
            "model": "regularized",
            "compliance_relative": self.compliance,
            "velocity_threshold_relative": self.velocity_threshold,
        }

    def posing(self, context: DelassusContext) -> Posing:
        """The regularized model posed on ``context``'s problem with its relative compliance and velocity threshold."""
        return _RegularizedPosing(context, self.compliance, self.velocity_threshold, self.parameters())


def model_from_label(label: str):
    """``"box"``, ``"polygonal-<k>"`` or ``"regularized"`` as a model object (defaults otherwise)."""
    if label == "box":
        return Box()
    if label == "regularized":
        return Regularized()
    if isinstance(label, str) and label.startswith("polygonal-"):
        try:
            k = int(label.split("-", 1)[1])
        except ValueError:
            raise ValueError(f"model label {label!r}: the number of directions is not an integer") from None
        return Polygonal(k)
    raise ValueError(f"unknown model label {label!r}; use 'box', 'polygonal-<k>' or 'regularized'")


# --- geometry of the models --------------------------------------------------------------------
def polygon_vertices(k: int) -> np.ndarray:
    """(2, k) unit vertex directions d_j = (cos 2 pi j/k, sin 2 pi j/k), as the engine's."""
    angles = 2.0 * np.pi * np.arange(k) / k
    return np.stack([np.cos(angles), np.sin(angles)])


def zonotope_generators(k: int) -> tuple[np.ndarray, float]:
    """(2, k/2) edge directions e_i of the regular k-gon (even k) and the relative half-length
    sin(pi/k): the k-gon of radius R is {sum_i s_i e_i : |s_i| <= R sin(pi/k)}."""
    m = k // 2
    angles = (2.0 * np.arange(m) + 1.0) * np.pi / k + np.pi / 2.0
    return np.stack([np.cos(angles), np.sin(angles)]), math.sin(math.pi / k)


def velocity_scale(problem: FrictionContactProblem) -> float:
    """V = ||q||_2 / sqrt(nc): the RMS free velocity per contact (0 without contacts)."""
    nc = problem.contacts
    return float(np.linalg.norm(problem.b) / math.sqrt(nc)) if nc else 0.0


def _diagonal_scale(W: np.ndarray, nc: int) -> np.ndarray:
    """tr(W_aa)/3 per contact; non-positive entries replaced by the mean of the positive ones."""
    d = np.einsum("aiai->a", W.reshape(nc, 3, nc, 3)) / 3.0
    positive = d > 0
    fill = float(d[positive].mean()) if positive.any() else 1.0
    return np.where(positive, d, fill)


def _congruence(W: np.ndarray, blocks: np.ndarray) -> np.ndarray:
    """T^T W T for block-diagonal T with blocks (nc, 3, p), without forming T."""
    nc, _, p = blocks.shape
    WT = np.einsum("xbj,bjq->xbq", W.reshape(3 * nc, nc, 3), blocks).reshape(nc, 3, nc * p)
    return np.einsum("aip,aiy->apy", blocks, WT).reshape(nc * p, nc * p)


@dataclass(frozen=True, eq=False)
class PosedLCP:
    """One bounded LCP of a model: lo <= z <= hi, w = M z + q, r_alpha = blocks[alpha] @ z_alpha.

    M (n, n), q, lo, hi (n,) with n = nc p; blocks (nc, 3, p); prox (n,) 1 on the unknowns that
    take the proximal term (impulses), 0 elsewhere (e.g. the polygon's gamma, a velocity)."""

    M: np.ndarray
    q: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    blocks: np.ndarray  # (nc, 3, p): r_alpha = blocks[alpha] @ z_alpha
    prox: np.ndarray  # (nc p,) 1 where the proximal term applies, 0 elsewhere (gamma)

    def r_of(self, z: np.ndarray) -> np.ndarray:
        """The reactions r (3 nc,) that the unknowns ``z`` represent (each contact's block times its unknowns)."""
        nc, _, p = self.blocks.shape
        return np.einsum("aip,ap->ai", self.blocks, z.reshape(nc, p)).reshape(3 * nc)


@dataclass(frozen=True, eq=False)
class DelassusContext:
    """What a model's posing may use of the problem: W (3nc, 3nc), q (3nc,), mu (nc,), the
    contact count, the per-contact Delassus scales tr(W_aa)/3 (nc,) and the velocity scale V."""

    W: np.ndarray
    q: np.ndarray
    mu: np.ndarray
    contacts: int
    scale: np.ndarray
    velocity_scale: float


class Posing(Protocol):
    """A model posed on one problem (returned by ``model.posing(context)``): the extension point
    through which :func:`approximate` reaches a model, without knowing which one it is.

    unknowns : p, unknowns per contact.
    lagged : the posed LCP depends on the lagged state (r, u) (False: one LCP, no fixed point
        needed).
    default_method : inner :func:`solvers.solve` method.
    parameters : the model's parameters with the absolute constants used.
    pose(r, u) : the bounded LCP at lagged impulses r and velocities u (3 nc,).
    unknowns_of(posed, r, z) : the unknowns of ``posed`` representing r, given the solved z (z
        itself where the layout does not depend on the state).
    center(posed, r, z) : the proximal center for the next solve at lagged impulses r, given the
        relaxed unknowns z (None before the first solve).
    """

    unknowns: int
    lagged: bool
    default_method: str
    parameters: dict

    def pose(self, r: np.ndarray, u: np.ndarray) -> PosedLCP:
        """The bounded LCP at lagged impulses ``r`` and velocities ``u`` (3 nc,)."""
        ...

    def unknowns_of(self, posed: PosedLCP, r: np.ndarray, z: np.ndarray) -> np.ndarray:
        """The unknowns of ``posed`` that represent ``r``, given the solved ``z``."""
        ...

    def center(self, posed: PosedLCP, r: np.ndarray, z: np.ndarray | None) -> np.ndarray:
        """The proximal centre of the next solve at lagged impulses ``r``, given the relaxed ``z`` (None at first)."""
        ...


class _FixedBasisPosing:
    """Box and zonotope polygon: r_alpha = T z_alpha with a fixed T, friction bounds
    +-factor mu rbar_N on every friction unknown."""

    lagged = True
    default_method = "judice-pires"

    def __init__(self, context: DelassusContext, blocks: np.ndarray, factor: float, parameters: dict):
        nc = context.contacts
        self.context, self.blocks, self.factor = context, blocks, factor
        self.unknowns = blocks.shape[2]
        self.parameters = parameters
        self.M = _congruence(context.W, blocks)
        self.q = np.einsum("aip,ai->ap", blocks, context.q.reshape(nc, 3)).reshape(-1)
        self.prox = np.ones(nc * self.unknowns)

    def pose(self, r, u) -> PosedLCP:
        nc, p = self.context.contacts, self.unknowns
        bound = self.factor * self.context.mu * np.clip(r[0::3], 0.0, None)
        lo = np.zeros((nc, p))
        hi = np.full((nc, p), np.inf)
        lo[:, 1:] = -bound[:, None]
        hi[:, 1:] = bound[:, None]
        return PosedLCP(self.M, self.q, lo.reshape(-1), hi.reshape(-1), self.blocks, self.prox)

    def unknowns_of(self, posed, r, z):
        return z

    def center(self, posed, r, z):
        if z is not None:
            return z
        nc = self.context.contacts  # least-squares representative of r per contact
        return np.einsum("api,ai->ap", np.linalg.pinv(self.blocks), r.reshape(nc, 3)).reshape(-1)


class _AnitescuPotraPosing:
    """The engine's polygonal LCP (``lcpdyn/friction/polygonal.py``): z_alpha = (r_N, beta_1..k,
    gamma) >= 0, one LCP with no lagged quantity."""

    lagged = False
    default_method = "lemke"

    def __init__(self, context: DelassusContext, k: int, parameters: dict):
        nc = context.contacts
        self.context = context
        self.unknowns = p = k + 2
        self.parameters = parameters
        blocks = np.zeros((nc, 3, p))
        blocks[:, 0, 0] = 1.0
        blocks[:, 1:, 1 : k + 1] = polygon_vertices(k)
        M = _congruence(context.W, blocks)
        for a in range(nc):  # the engine's C and P blocks (polygonal.py)
            beta, gamma = slice(a * p + 1, a * p + k + 1), a * p + k + 1
            M[beta, gamma] = 1.0
            M[gamma, beta] = -1.0
            M[gamma, a * p] = context.mu[a]
        q = np.einsum("aip,ai->ap", blocks, context.q.reshape(nc, 3)).reshape(-1)
        prox = np.ones((nc, p))
        prox[:, -1] = 0.0  # gamma is a velocity, not an impulse: no proximal term
        self.posed = PosedLCP(M, q, np.zeros(nc * p), np.full(nc * p, np.inf), blocks, prox.reshape(-1))

    def pose(self, r, u) -> PosedLCP:
        return self.posed

    def unknowns_of(self, posed, r, z):
        return z

    def center(self, posed, r, z):
        if z is not None:
            return z
        z = np.zeros((self.context.contacts, self.unknowns))  # beta >= 0: start from no friction
        z[:, 0] = np.clip(r[0::3], 0.0, None)
        return z.reshape(-1)


class _RegularizedPosing:
    """Peiret 2016 Eqs. (25)-(29) per contact in a basis turned to the lagged slip (kinetic) or
    the lagged friction force (static); see docs/theory/friction-approximations.md."""

    lagged = True
    default_method = "judice-pires"
    unknowns = 3

    def __init__(self, context: DelassusContext, compliance: float, threshold: float, parameters: dict):
        self.context = context
        self.C = compliance * context.scale
        self.v_th = threshold * context.velocity_scale
        self.parameters = dict(parameters)
        self.parameters["compliance_absolute"] = self.C.tolist()
        self.parameters["velocity_threshold_absolute"] = self.v_th

    def pose(self, r, u) -> PosedLCP:
        context = self.context
        nc = context.contacts
        bound = context.mu * np.clip(r[0::3], 0.0, None)
        rT = r.reshape(nc, 3)[:, 1:]
        uT = u.reshape(nc, 3)[:, 1:]
        speed = np.linalg.norm(uT, axis=1)
        magnitude = np.linalg.norm(rT, axis=1)
        kinetic = speed > self.v_th
        e = np.zeros((nc, 2))
        e[:, 0] = 1.0
        with np.errstate(invalid="ignore", divide="ignore"):
            e = np.where(kinetic[:, None], uT / np.where(speed > 0, speed, 1.0)[:, None], e)
            static_aligned = ~kinetic & (magnitude > 0)
            e = np.where(static_aligned[:, None], -rT / np.where(magnitude > 0, magnitude, 1.0)[:, None], e)
        c = np.zeros((nc, 3))
        c[:, 1] = self.C
        c[:, 2] = np.where(kinetic, np.where(bound > 0, speed / np.where(bound > 0, bound, 1.0), 0.0), self.C)
        target = np.zeros((nc, 3))
        target[:, 1] = np.where(kinetic, -bound, -magnitude)
        blocks = np.zeros((nc, 3, 3))
        blocks[:, 0, 0] = 1.0
        blocks[:, 1, 1], blocks[:, 2, 1] = e[:, 0], e[:, 1]  # column e
        blocks[:, 1, 2], blocks[:, 2, 2] = -e[:, 1], e[:, 0]  # column e_perp
        M = _congruence(context.W, blocks)
        M[np.diag_indices_from(M)] += c.reshape(-1)
        q = np.einsum("aip,ai->ap", blocks, context.q.reshape(nc, 3)).reshape(-1) - (c * target).reshape(-1)
        lo = np.zeros((nc, 3))
        hi = np.full((nc, 3), np.inf)
        lo[:, 1:] = -bound[:, None]
        hi[:, 1:] = bound[:, None]
        return PosedLCP(M, q, lo.reshape(-1), hi.reshape(-1), blocks, np.ones(nc * 3))

    def unknowns_of(self, posed, r, z):
        """Local coordinates R^T r_T (the blocks are orthogonal)."""
        return np.einsum("aip,ai->ap", posed.blocks, r.reshape(self.context.contacts, 3)).reshape(-1)

    def center(self, posed, r, z):
        return self.unknowns_of(posed, r, None)
