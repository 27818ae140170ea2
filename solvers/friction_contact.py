"""The exact Coulomb friction-contact problem (3D, velocity level) and its solvers.

This is the reference model for frictional contact: the exact Coulomb cone with maximal
dissipation, against which the regularized / linearized friction models of the engine are
judged (Peiret 2016 uses it in this role, as the exact Coulomb reference). It is *not* a
(bounded) LCP: it is posed as a :class:`FrictionContactProblem` and solved through the same
front door, ``solvers.solve(FrictionContactProblem.make(W, b, mu), method="nsgs")``, which hands
it to :func:`solve_friction_contact`; the answer is a :class:`FrictionContactResult` (reactions
r and velocities u instead of z and w) with the one :class:`~solvers.result.Status`.

Problem
-------
``nc`` contacts, unknowns ordered per contact (normal, tangent 1, tangent 2) -- the layout of
Siconos' ``FrictionContactProblem(3, nc, W, q, mu)``::

    u = W r + b,        W (3nc x 3nc) symmetric positive semidefinite (a Delassus matrix),

and for every contact ``i`` (``r_i = (r_N, r_T)``, ``u_i = (u_N, u_T)``, friction coefficient
``mu_i >= 0``, friction cone ``K_i = {r_N >= 0, |r_T| <= mu_i r_N}``) one of

* separation: ``r_i = 0``, ``u_N >= 0``;
* stick:      ``r_i`` in ``K_i``, ``u_i = 0``;
* slide:      ``r_N > 0``, ``|r_T| = mu_i r_N``, ``u_N = 0``, ``u_T = -s r_T`` with ``s > 0``
  (friction opposes slip; maximal dissipation).

Equivalently (De Saxcé's bipotential formulation), with the modified velocity
``û_i = u_i + mu_i |u_T| e_N``::

    K_i ∋ r_i  ⟂  û_i ∈ K_i*,      K_i* = {v_N >= mu_i |v_T|}  (the dual cone).

``mu_i = 0`` is frictionless contact (``r_T = 0``, a plain complementarity in the normal).

Residual (computed here, never trusted from a method)
-----------------------------------------------------
The natural map of De Saxcé's formulation, per contact ``||r_i - proj_{K_i}(r_i - û_i)||_2``
(zero exactly at a solution), together with the cone violation ``||r_i - proj_{K_i}(r_i)||_2``,
each measured per contact against that contact's own scales -- ``r_i`` against its reaction
scale, ``u_i`` against its velocity scale, the scales of :mod:`solvers.result` taken per contact
-- and combined as the maximum over contacts. A problem and its rescaling by one positive factor
per contact (``D W D``, ``D b``: the same physics in other units) are judged alike. The
projection onto ``K = K_mu`` is in closed form: for ``x = (x_N, x_T)``,
``t = |x_T|``: ``x`` if ``t <= mu x_N``; ``0`` if ``mu t <= -x_N`` (the polar cone); otherwise
``p (1, mu x_T / t)`` with ``p = (x_N + mu t) / (1 + mu^2)``.

Methods
-------
``"nsgs"`` (ours): nonsmooth block Gauss–Seidel over contacts. Contact ``i`` sees the local
problem ``u = A r + c`` with ``A = W_ii`` and ``c = b_i + sum_{j != i} W_ij r_j``; it is solved
*exactly* by enumerating the cases:

1. separation, ``r = 0``, if ``c_N >= 0``;
2. stick, ``r = -A^{-1} c``, if that lies in the cone (strictly inside: accepted at once);
3. slide: ``r = r_N g(φ)``, ``g(φ) = (1, -mu cos φ, -mu sin φ)``; ``u_N = 0`` gives
   ``r_N = -c_N / D(φ)`` with ``D(φ) = A_N · g(φ)`` (``A_N`` the normal row of ``A``), and the
   slip direction condition is that ``u_T`` be parallel to ``d = (cos φ, sin φ)`` with a
   positive factor. Multiplying by ``D(φ)`` removes the poles:
   ``v(φ) = D(φ) u_T(φ) = -c_N A_T g(φ) + c_T D(φ)``, and the roots of the 2D cross product
   ``F(φ) = v(φ) × d(φ)`` (a trigonometric polynomial of degree 2, so at most four roots) are
   bracketed by sign changes on a grid of ``grid_points`` angles and refined by Brent's method to
   machine precision. A root is a candidate only if ``D > 0`` (so ``r_N > 0``, as ``c_N < 0``) and
   ``v · d >= 0`` (``s >= 0``: friction opposes slip; the other roots are anti-parallel).

All candidates (the stick solution projected onto the cone -- which covers stick on the cone's
boundary, where ``s = 0`` -- and each sliding root) are scored by the local De Saxcé
natural-map residual; exact ones (residual below 1e-12 of the candidate's own scale
``1 + |c| + |A| |r|``) are preferred, and among several exact ones the one closest to the
contact's previous reaction is kept (so the sweep does not hop between solutions when the local
problem has several). If no exact candidate shows up (only possible at a double root, where
``F`` touches zero without changing sign, or when two roots share a grid cell), the search is
repeated on a 2048-angle grid, with local minima of ``|F|`` refined by golden-section search;
if even that finds nothing exact, the best candidate is used and counted in
``info["local_failures"]``.

Uniqueness: with a rank-deficient ``W`` (already two contact points on one rigid body leave
the rotation about the line through them free) ``r`` need not be unique,
and when the friction torque depends on how the normal impulses are shared (a box sliding
*and spinning* on four corners) neither is ``u``. Even a single contact can have two solutions
when ``mu`` is large and ``W`` couples normal and tangential directions (a stick and a slide);
the cases are tried in the order separation, stick, slide, so ours returns the first.

A singular or nearly singular block ``W_ii`` is handled by a proximal term. It is flagged when
``det W_ii <= singular_ratio ||W_ii||_F^3``, which holds whenever its smallest eigenvalue is at
most ``singular_ratio ||W_ii||_F`` (and for some merely ill-conditioned blocks, which is
harmless): the local problem is then solved with ``A + ρ I`` and ``c - ρ r_i^old``,
``ρ = proximal * ||W_ii||_F`` (``ρ = proximal`` for a zero block). At a fixed point of the sweep
``r_i = r_i^old``, so the proximal term vanishes and the converged answer is exact; it only damps
the update along the block's null space. Sweeps stop as soon as the framework's relative
residual is ``<= tolerance`` (checked before the first sweep too, so a warm start that already
solves the problem costs no sweep). NSGS converges linearly: a few sweeps when the contacts are
weakly coupled, up to ~10^3 for a body resting on many contacts (see ``relaxation`` in
:class:`Options`). On a problem without solution (an approaching contact that ``W`` cannot push
apart) ``r`` diverges; the per-contact measure does not decay with ``|r|`` (the velocity of such a
contact stays a full row scale wrong), so the run ends with ``MAX_ITERATIONS``, never a success.

``"newton"`` (ours): semismooth Newton on the Alart–Curnier function with an Armijo line search,
dense (compiled, LAPACK) or sparse (SuperLU) linear algebra -- :mod:`solvers.alart_curnier`.
Quadratic near a nondegenerate solution; stalls where ``W`` is rank deficient on the stuck
contacts.

``"prox"`` (ours): the proximal-point loop ``W + Λ``, ``b − Λ r_k`` around that Newton method
(Rockafellar 1976; Acary–Brémond–Huber 2017 §5) -- :mod:`solvers.proximal_point`. Converges on
the hyperstatic, rank-deficient problems where NSGS and Newton stall.

``"auto"`` (ours): Newton for a few iterations, then ``prox`` -- :mod:`solvers.auto_choice`.

``"siconos-nsgs"`` / ``"siconos-nsn-ac"`` / ``"siconos-prox"``: the same problem posed to Siconos numerics,
``FrictionContactProblem(3, nc, W, b, mu)`` + ``fc3d_driver`` with ``SICONOS_FRICTION_3D_NSGS``
(500), ``SICONOS_FRICTION_3D_NSN_AC`` (504, the Alart–Curnier semismooth Newton method) or
``SICONOS_FRICTION_3D_PROX`` (502, proximal point). Siconos' own error divides by
``max(|q|, |r|, |u|)``, so with large reactions it reports success far from a solution by
``|F_nat| / |q|`` (measured on Confeti-ex13: 1e-9 reported, 5e-6 by ``|q|``). As
everywhere in :mod:`solvers`, Siconos' ``info == 0`` is not taken as success: the framework's
residual decides. Siconos is imported lazily (:func:`solvers.siconos_route.import_siconos`).
Siconos is not called when some ``W[3i, 3i] <= 0`` (``NUMERICAL_ERROR`` instead): NSGS' local
Alart–Curnier solver then fails a C assertion that aborts the Python process. NSN_AC prints
``NM_LU_factorize: ... DGETRF failed`` to the C stderr on rank-deficient ``W`` (harmless; it
usually converges anyway).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from .options import build_options, check_count, check_positive
from .result import SolverFailure, Status, finite_scales_given, normalized, static_scales

__all__ = [
    "FrictionContactProblem",
    "solve_friction_contact",
    "FrictionContactResult",
    "Options",
    "SiconosOptions",
    "METHODS",
    "UnknownOptionError",
    "measure_friction_contact",
    "project_on_cone",
]

NSGS = "nsgs"
SICONOS_SOLVERS = {  # method name -> constant name in siconos.numerics
    "siconos-nsgs": "SICONOS_FRICTION_3D_NSGS",
    "siconos-nsn-ac": "SICONOS_FRICTION_3D_NSN_AC",
    "siconos-prox": "SICONOS_FRICTION_3D_PROX",
}
NEWTON, PROX, AUTO = "newton", "prox", "auto"
METHODS = (NSGS, NEWTON, PROX, AUTO) + tuple(SICONOS_SOLVERS)

# Local-solve outcome codes (counted in ``info``).
_SEPARATE, _STICK, _SLIDE, _INEXACT = 0, 1, 2, -1
_DENSE_GRID = 2048
_EPS = float(np.finfo(np.float64).eps)
_EXACT = 1e-12  # a local candidate is "exact" when its residual is below _EXACT x local scale


class UnknownOptionError(TypeError, ValueError):
    """An option name the method does not know. A ``TypeError`` like an unexpected keyword
    argument (and like :func:`solvers.solve`), and a ``ValueError`` like every other bad input
    of :func:`solve_friction_contact`."""


@dataclass(frozen=True)
class Options:
    """Options of ``method="nsgs"``.

    max_sweeps : sweep limit (a sweep visits every contact once).
    grid_points : angles in the first bracketing grid of the sliding-direction search (>= 8).
    proximal : relative proximal weight used for singular diagonal blocks (in (0, 1]).
    singular_ratio : a block counts as singular when ``det W_ii <= singular_ratio ||W_ii||_F^3``
        (roughly: its smallest eigenvalue is below ``singular_ratio`` times its largest).
    relaxation : ω in (0, 2); each contact's new reaction is ``proj_K(r_old + ω (r_local - r_old))``.
        1 (default) is plain Gauss–Seidel. Over-relaxation (ω ≈ 1.3) can cut the sweep count
        several-fold on slowly converging rank-deficient problems (a body resting on many
        contacts) but slows easy ones; a heuristic without convergence guarantee.
    """

    max_sweeps: int = 1000
    grid_points: int = 64
    proximal: float = 1e-6
    singular_ratio: float = 1e-10
    relaxation: float = 1.0

    def __post_init__(self):
        check_count("max_sweeps", self.max_sweeps)
        check_count("grid_points", self.grid_points, minimum=8)
        check_positive("proximal", self.proximal)
        if not self.proximal <= 1.0:
            raise ValueError(f"option proximal must be in (0, 1], got {self.proximal!r}")
        check_positive("singular_ratio", self.singular_ratio)
        if not self.singular_ratio < 1.0:
            raise ValueError(f"option singular_ratio must be in (0, 1), got {self.singular_ratio!r}")
        check_positive("relaxation", self.relaxation)
        if not self.relaxation < 2.0:
            raise ValueError(f"option relaxation must be in (0, 2), got {self.relaxation!r}")


@dataclass(frozen=True)
class SiconosOptions:
    """Options of ``method="siconos-nsgs"`` and ``"siconos-nsn-ac"``.

    max_iterations : Siconos ``iparam[0]``.
    siconos_tolerance : Siconos ``dparam[0]`` (Siconos' own error measure, normalized by
        ``||b||``); ``None`` means ``0.01 x tolerance``, which lands the framework's residual
        within ``tolerance`` on the problems tested.
    """

    max_iterations: int = 10_000
    siconos_tolerance: float | None = None

    def __post_init__(self):
        check_count("max_iterations", self.max_iterations)
        if self.siconos_tolerance is not None:
            check_positive("siconos_tolerance", self.siconos_tolerance)


@dataclass(frozen=True, eq=False)
class FrictionContactProblem:
    """A validated 3D friction-contact problem u = W r + b, r_i in the Coulomb cone of mu_i
    (module docstring). Build it with :meth:`make`, which checks the input.

    Attributes
    ----------
    W : (3nc, 3nc) float64 Delassus matrix, unknowns per contact ordered (normal, t1, t2).
    b : (3nc,) float64 free velocity.
    mu : (nc,) float64 friction coefficients, >= 0.
    """

    W: np.ndarray
    b: np.ndarray
    mu: np.ndarray

    @property
    def contacts(self) -> int:
        return self.mu.shape[0]

    @classmethod
    def make(cls, W, b, mu) -> FrictionContactProblem:
        """The checked problem: shapes, finiteness and mu >= 0 (a scalar mu is one per contact);
        a ``ValueError`` names the culprit."""
        W, b, mu, _, _ = _validate(W, b, mu, 1.0, None)
        return cls(W, b, mu)


def _options_classes():
    from .alart_curnier import NewtonOptions
    from .auto_choice import AutoOptions
    from .proximal_point import ProxOptions

    return {NSGS: Options, NEWTON: NewtonOptions, PROX: ProxOptions, AUTO: AutoOptions}


_OPTIONS = {name: SiconosOptions for name in SICONOS_SOLVERS}
_DEFAULTS = {name: cls() for name, cls in _OPTIONS.items()}


@dataclass(frozen=True, eq=False)
class FrictionContactResult:
    """What :func:`solve_friction_contact` returns.

    Attributes
    ----------
    r, u : (3nc,) reactions and velocities; ``u`` is recomputed by the framework as ``W r + b``.
    status : :class:`~solvers.result.Status`.
    success : ``status == SOLVED`` (implies ``relative_residual <= tolerance``).
    iterations : sweeps (``nsgs``) or Siconos' iteration count.
    residual : ``max_i ||r_i - proj_{K_i}(r_i - û_i)||_2`` (absolute; De Saxcé natural map;
        information).
    cone_violation : ``max_i ||r_i - proj_{K_i}(r_i)||_2`` (absolute; information).
    relative_residual : the acceptance measure: the largest per-contact error in the contact's
        own scales (module docstring; invariant under one positive scale per contact).
    worst_contact : the contact where it is attained (-1 if none).
    tolerance : the bound ``relative_residual`` was judged against.
    message : human-readable account.
    method : the method name used.
    info : method-specific details (local-solve counts, regularized blocks, Siconos codes).
    """

    r: np.ndarray
    u: np.ndarray
    status: Status
    iterations: int
    residual: float
    cone_violation: float
    relative_residual: float
    worst_contact: int
    tolerance: float
    message: str
    method: str
    info: dict = field(default_factory=dict)

    @property
    def success(self) -> bool:
        return self.status == Status.SOLVED

    def __repr__(self) -> str:
        return (
            f"FrictionContactResult(method={self.method!r}, status={self.status.name}, "
            f"contacts={self.r.shape[0] // 3}, iterations={self.iterations}, "
            f"relative_residual={self.relative_residual:.3g}, message={self.message!r})"
        )


# --- cone geometry and the framework's residual ----------------------------------------------


@njit(cache=True, error_model="numpy")
def _project3(mu, xn, x1, x2, out):
    """out <- projection of (xn, x1, x2) onto K_mu = {|x_T| <= mu x_N} (closed form)."""
    t = math.sqrt(x1 * x1 + x2 * x2)
    if t <= mu * xn and xn >= 0.0:  # (xn >= 0 matters for mu = 0, where the cone is a ray)
        out[0], out[1], out[2] = xn, x1, x2
    elif mu * t <= -xn:
        out[0], out[1], out[2] = 0.0, 0.0, 0.0
    else:  # t > 0 here
        p = (xn + mu * t) / (1.0 + mu * mu)
        out[0], out[1], out[2] = p, mu * p * x1 / t, mu * p * x2 / t


@njit(cache=True, error_model="numpy")
def _contact_errors(mu, r0, r1, r2, u0, u1, u2, tmp):
    """(natural-map residual, cone distance) of one contact."""
    un_hat = u0 + mu * math.sqrt(u1 * u1 + u2 * u2)
    _project3(mu, r0 - un_hat, r1 - u1, r2 - u2, tmp)
    residual = math.sqrt((r0 - tmp[0]) ** 2 + (r1 - tmp[1]) ** 2 + (r2 - tmp[2]) ** 2)
    _project3(mu, r0, r1, r2, tmp)
    violation = math.sqrt((r0 - tmp[0]) ** 2 + (r1 - tmp[1]) ** 2 + (r2 - tmp[2]) ** 2)
    return residual, violation


@njit(cache=True)
def _measure_statics(W, b):
    """The parts of :func:`_measure_kernel` that do not depend on ``r``
    (:func:`~solvers.result.static_scales` with no bounds): ``(|W|, d0, velocity, lo, hi)``,
    computed once by the solvers that measure many iterates of one problem."""
    n = b.shape[0]
    hi = np.full(n, np.inf)
    lo = -hi
    abs_w, d0, velocity = static_scales(W, b, lo, hi)
    return abs_w, d0, velocity, lo, hi


@njit(cache=True)
def _measure_kernel(W, b, mu, r, u):
    """:func:`_measure_given` with the static parts computed here."""
    return _measure_given(W, b, mu, r, u, _measure_statics(W, b))


@njit(cache=True, error_model="numpy")
def _measure_given(W, b, mu, r, u, statics):
    """u <- W r + b; returns (relative residual, worst contact, absolute residual, absolute cone
    violation), NaN (worst -1) if r or u is not finite. Per contact c the scales of
    :mod:`solvers.result` (one implementation, :func:`~solvers.result.finite_scales`): velocity
    scale ``s_c = max`` of its three row scales, reaction scale
    ``zeta_c = max(min`` of its three variable scales, ``|r_c|_inf)``; the error is De Saxcé's
    natural map in ``r~ = r / zeta_c``, ``u~ = u / s_c`` (2-norm over the contact), with the
    cone violation of ``r~`` and the normal complementarity ``|r~_N - max(r~_N - u_N / s_N, 0)|``
    against the normal row's own scale ``s_N``."""
    n = b.shape[0]
    s = np.empty(n)
    zeta = np.empty(n)
    abs_w, d0, velocity, lo, hi = statics
    growth = finite_scales_given(W, b, lo, hi, r, u, s, zeta, abs_w, d0, velocity)
    if growth != growth:
        return np.nan, -1, np.nan, np.nan
    relative, worst, residual, violation = contact_errors(mu, r, u, s, zeta)
    return max(relative, _EPS * growth), worst, residual, violation


@njit(cache=True, error_model="numpy")
def contact_errors(mu, r, u, s, zeta):
    """(relative residual, worst contact, absolute residual, absolute cone violation) of the
    reactions r and velocities u = W r + b given the row scales s and variable scales zeta
    (:func:`_measure_given`; shared with :func:`solvers.sparse_measure.csr_friction_contact_measure`)."""
    n = r.shape[0]
    residual = 0.0
    violation = 0.0
    relative = 0.0
    worst = -1
    tmp = np.empty(3)
    for c in range(n // 3):
        k = 3 * c
        res, vio = _contact_errors(mu[c], r[k], r[k + 1], r[k + 2], u[k], u[k + 1], u[k + 2], tmp)
        residual = max(residual, res)
        violation = max(violation, vio)
        sc = max(s[k], s[k + 1], s[k + 2])
        zc = max(min(zeta[k], zeta[k + 1], zeta[k + 2]), abs(r[k]), abs(r[k + 1]), abs(r[k + 2]))
        ur0 = normalized(u[k], sc) if sc > 0.0 else 0.0
        ur1 = normalized(u[k + 1], sc) if sc > 0.0 else 0.0
        ur2 = normalized(u[k + 2], sc) if sc > 0.0 else 0.0
        rn = normalized(r[k], zc)
        res, vio = _contact_errors(mu[c], rn, normalized(r[k + 1], zc), normalized(r[k + 2], zc), ur0, ur1, ur2, tmp)
        # the normal complementarity r_N >= 0 _|_ u_N >= 0 alone, against the normal row's own scale
        # (a necessary condition in every case -- separation, stick, slide -- which the common
        # contact scale, set by a large slip, would judge too loosely)
        un = normalized(u[k], s[k]) if s[k] > 0.0 else 0.0
        normal = abs(rn - max(rn - un, 0.0))
        error = max(res, vio, normal)
        if error != error:  # NaN
            error = np.inf
        if not error <= relative:
            relative = error
            worst = c
    return relative, worst, residual, violation


def project_on_cone(x, mu):
    """Projection of the 3-vector ``x = (x_N, x_T1, x_T2)`` onto ``{|x_T| <= mu x_N}``."""
    out = np.empty(3)
    x = np.asarray(x, dtype=np.float64)
    _project3(float(mu), float(x[0]), float(x[1]), float(x[2]), out)
    return out


# --- the exact local (one-contact) solve -----------------------------------------------------


@njit(cache=True, error_model="numpy")
def _local_residual(A, c, mu, r, tmp):
    u0 = c[0] + A[0, 0] * r[0] + A[0, 1] * r[1] + A[0, 2] * r[2]
    u1 = c[1] + A[1, 0] * r[0] + A[1, 1] * r[1] + A[1, 2] * r[2]
    u2 = c[2] + A[2, 0] * r[0] + A[2, 1] * r[1] + A[2, 2] * r[2]
    res, vio = _contact_errors(mu, r[0], r[1], r[2], u0, u1, u2, tmp)
    return max(res, vio)


@njit(cache=True, error_model="numpy")
def _cross(A, c, mu, phi):
    """F(φ) = v(φ) × d(φ), v = D(φ) u_T(φ) (see the module docstring)."""
    return _cross_cs(A, c, mu, math.cos(phi), math.sin(phi))


@njit(cache=True, error_model="numpy")
def _cross_cs(A, c, mu, cp, sp):
    """_cross from cos φ, sin φ."""
    d = A[0, 0] - mu * (A[0, 1] * cp + A[0, 2] * sp)
    v1 = -c[0] * (A[1, 0] - mu * (A[1, 1] * cp + A[1, 2] * sp)) + c[1] * d
    v2 = -c[0] * (A[2, 0] - mu * (A[2, 1] * cp + A[2, 2] * sp)) + c[2] * d
    return v1 * sp - v2 * cp


@njit(cache=True, error_model="numpy")
def _brent(A, c, mu, a, b, fa, fb):
    """Root of _cross in [a, b] with fa * fb <= 0 (Brent's zeroin), to machine precision."""
    if fa == 0.0:
        return a
    if fb == 0.0:
        return b
    cc, fc = a, fa
    d = b - a
    e = d
    for _ in range(200):
        if (fb > 0.0) == (fc > 0.0):
            cc, fc = a, fa
            d = b - a
            e = d
        if abs(fc) < abs(fb):
            a, b, cc = b, cc, b
            fa, fb, fc = fb, fc, fb
        tol1 = 2.0 * 2.220446049250313e-16 * abs(b) + 1e-300
        xm = 0.5 * (cc - b)
        if abs(xm) <= tol1 or fb == 0.0:
            return b
        if abs(e) >= tol1 and abs(fa) > abs(fb):
            s = fb / fa
            if a == cc:
                p = 2.0 * xm * s
                q = 1.0 - s
            else:
                q = fa / fc
                rr = fb / fc
                p = s * (2.0 * xm * q * (q - rr) - (b - a) * (rr - 1.0))
                q = (q - 1.0) * (rr - 1.0) * (s - 1.0)
            if p > 0.0:
                q = -q
            p = abs(p)
            if 2.0 * p < min(3.0 * xm * q - abs(tol1 * q), abs(e * q)):
                e = d
                d = p / q
            else:
                d = xm
                e = d
        else:
            d = xm
            e = d
        a, fa = b, fb
        if abs(d) > tol1:
            b += d
        else:
            b += tol1 if xm > 0.0 else -tol1
        fb = _cross(A, c, mu, b)
    return b


@njit(cache=True, error_model="numpy")
def _golden_min_abs(A, c, mu, a, b):
    """Minimizer of |F| on [a, b] by golden-section search (for double roots)."""
    g = 0.6180339887498949
    x1 = b - g * (b - a)
    x2 = a + g * (b - a)
    f1 = abs(_cross(A, c, mu, x1))
    f2 = abs(_cross(A, c, mu, x2))
    for _ in range(80):
        if f1 < f2:
            b, x2, f2 = x2, x1, f1
            x1 = b - g * (b - a)
            f1 = abs(_cross(A, c, mu, x1))
        else:
            a, x1, f1 = x1, x2, f2
            x2 = a + g * (b - a)
            f2 = abs(_cross(A, c, mu, x2))
    return 0.5 * (a + b)


@njit(cache=True, error_model="numpy")
def _slide_candidate(A, c, mu, phi, cand):
    """cand <- sliding reaction at angle φ. False unless it is a genuine slide: r_N > 0
    (D(φ) > 0, as c_N < 0) and slip along +d, so that friction opposes it (v · d >= 0)."""
    cp = math.cos(phi)
    sp = math.sin(phi)
    d = A[0, 0] - mu * (A[0, 1] * cp + A[0, 2] * sp)
    if not d > 0.0:
        return False
    rn = -c[0] / d
    if not rn > 0.0:
        return False
    v1 = -c[0] * (A[1, 0] - mu * (A[1, 1] * cp + A[1, 2] * sp)) + c[1] * d
    v2 = -c[0] * (A[2, 0] - mu * (A[2, 1] * cp + A[2, 2] * sp)) + c[2] * d
    if v1 * cp + v2 * sp < 0.0:
        return False
    cand[0] = rn
    cand[1] = -mu * rn * cp
    cand[2] = -mu * rn * sp
    return True


@njit(cache=True, error_model="numpy")
def _local_relative_residual(A, c, mu, r, a_norm, tmp):
    """The local residual in the contact's own scales (as :func:`_measure_kernel` measures a
    contact): u = A r + c against sigma = max_k (|c_k| + sum_j |A_kj r_j|), r against
    max(|r|_inf, sigma / max|A|)."""
    u = np.empty(3)
    sigma = 0.0
    a_max = 0.0
    for k in range(3):
        acc = c[k]
        size = abs(c[k])
        for j in range(3):
            t = A[k, j] * r[j]
            acc += t
            size += abs(t)
            a_max = max(a_max, abs(A[k, j]))
        u[k] = acc
        sigma = max(sigma, size)
    if sigma == 0.0:
        return 0.0
    zeta = max(abs(r[0]), abs(r[1]), abs(r[2]), sigma / a_max if a_max > 0.0 else 0.0)
    if zeta == 0.0:
        zeta = 1.0  # r = 0 with a zero block: only the sign of u matters
    res, vio = _contact_errors(mu, r[0] / zeta, r[1] / zeta, r[2] / zeta, u[0] / sigma, u[1] / sigma, u[2] / sigma, tmp)
    return max(res, vio)


@njit(cache=True, error_model="numpy")
def _consider(A, c, mu, cand, rp, a_norm, best, state, tmp):
    """Keep cand in best if it beats the current best. A candidate is exact when its local
    residual, in the contact's own scales (:func:`_local_relative_residual`), is at rounding
    level. state = [best residual, best distance to r_prev, best-is-exact flag]; exact beats
    inexact, then closest to r_prev."""
    res = _local_relative_residual(A, c, mu, cand, a_norm, tmp)
    if not np.isfinite(res):
        return
    dist = (cand[0] - rp[0]) ** 2 + (cand[1] - rp[1]) ** 2 + (cand[2] - rp[2]) ** 2
    exact = res <= _EXACT
    take = False
    if exact:
        take = state[2] == 0.0 or dist < state[1]
    elif state[2] == 0.0:
        take = res < state[0]
    if take:
        best[0], best[1], best[2] = cand[0], cand[1], cand[2]
        state[0] = res
        state[1] = dist
        state[2] = 1.0 if exact else 0.0


@njit(cache=True, error_model="numpy")
def _scan(A, c, mu, phis, fs, rp, a_norm, best, state, cand, tmp, with_minima):
    """Bracket sign changes of F on the closed grid (phis, fs), refine, consider the candidates;
    optionally also the local minima of |F| (double roots)."""
    m = phis.shape[0]
    for k in range(m):
        k1 = (k + 1) % m
        a = phis[k]
        b = phis[k1] if k1 > 0 else phis[0] + 2.0 * math.pi
        fa, fb = fs[k], fs[k1]
        if fa == 0.0 or (fa > 0.0) != (fb > 0.0):
            if fb == 0.0 and fa != 0.0:
                continue  # the root at b is the next cell's left end
            phi = _brent(A, c, mu, a, b, fa, fb)
            if _slide_candidate(A, c, mu, phi, cand):
                _consider(A, c, mu, cand, rp, a_norm, best, state, tmp)
        elif with_minima:
            km = (k - 1) % m
            if abs(fa) <= abs(fs[km]) and abs(fa) <= abs(fb):
                a0 = phis[km] if km < k else phis[km] - 2.0 * math.pi
                phi = _golden_min_abs(A, c, mu, a0, b)
                if _slide_candidate(A, c, mu, phi, cand):
                    _consider(A, c, mu, cand, rp, a_norm, best, state, tmp)


@njit(cache=True, error_model="numpy")
def _solve_local(A, Ainv, c, mu, rp, phis, grid_cos, grid_sin, out):
    """Exact solution of the one-contact problem u = A r + c (A positive definite here, after
    any proximal regularization). out <- r. Returns a _SEPARATE/_STICK/_SLIDE/_INEXACT code."""
    if c[0] >= 0.0:  # (1) separation
        out[0], out[1], out[2] = 0.0, 0.0, 0.0
        return _SEPARATE
    if mu == 0.0:  # frictionless: r_T = 0, u_N = 0
        out[0], out[1], out[2] = (-c[0] / A[0, 0] if A[0, 0] > 0.0 else 0.0), 0.0, 0.0
        return _STICK if out[0] > 0.0 else _INEXACT
    # (2) stick
    s0 = -(Ainv[0, 0] * c[0] + Ainv[0, 1] * c[1] + Ainv[0, 2] * c[2])
    s1 = -(Ainv[1, 0] * c[0] + Ainv[1, 1] * c[1] + Ainv[1, 2] * c[2])
    s2 = -(Ainv[2, 0] * c[0] + Ainv[2, 1] * c[1] + Ainv[2, 2] * c[2])
    if math.sqrt(s1 * s1 + s2 * s2) < mu * s0:
        out[0], out[1], out[2] = s0, s1, s2
        return _STICK
    # (3) slide: candidates scored by the local residual
    tmp = np.empty(3)
    cand = np.empty(3)
    state = np.array([np.inf, np.inf, 0.0])
    a_norm = 0.0
    for i in range(3):
        a_norm = max(a_norm, abs(A[i, 0]) + abs(A[i, 1]) + abs(A[i, 2]))
    _project3(mu, s0, s1, s2, cand)  # stick projected (covers stick on the cone's boundary)
    _consider(A, c, mu, cand, rp, a_norm, out, state, tmp)
    m = phis.shape[0]
    fs = np.empty(m)
    for k in range(m):
        fs[k] = _cross_cs(A, c, mu, grid_cos[k], grid_sin[k])
    _scan(A, c, mu, phis, fs, rp, a_norm, out, state, cand, tmp, False)
    if state[2] == 0.0:  # no exact candidate yet: double root? dense grid with minima
        dense = np.empty(_DENSE_GRID)
        fd = np.empty(_DENSE_GRID)
        for k in range(_DENSE_GRID):
            dense[k] = 2.0 * math.pi * k / _DENSE_GRID
            fd[k] = _cross(A, c, mu, dense[k])
        _scan(A, c, mu, dense, fd, rp, a_norm, out, state, cand, tmp, True)
    if state[2] == 0.0:
        if not np.isfinite(state[0]):
            out[0], out[1], out[2] = rp[0], rp[1], rp[2]
        return _INEXACT
    return _SLIDE if out[0] > 0.0 and math.sqrt(out[1] ** 2 + out[2] ** 2) >= mu * out[0] * (1 - 1e-12) else _STICK


# --- the sweep --------------------------------------------------------------------------------


@njit(cache=True, error_model="numpy")
def _inverse3(A, out):
    """out <- A^{-1} by cofactors (NaN if singular); returns det."""
    c00 = A[1, 1] * A[2, 2] - A[1, 2] * A[2, 1]
    c01 = A[1, 2] * A[2, 0] - A[1, 0] * A[2, 2]
    c02 = A[1, 0] * A[2, 1] - A[1, 1] * A[2, 0]
    det = A[0, 0] * c00 + A[0, 1] * c01 + A[0, 2] * c02
    if det == 0.0:
        out[:, :] = np.nan
        return det
    out[0, 0] = c00 / det
    out[1, 0] = c01 / det
    out[2, 0] = c02 / det
    out[0, 1] = (A[0, 2] * A[2, 1] - A[0, 1] * A[2, 2]) / det
    out[1, 1] = (A[0, 0] * A[2, 2] - A[0, 2] * A[2, 0]) / det
    out[2, 1] = (A[0, 1] * A[2, 0] - A[0, 0] * A[2, 1]) / det
    out[0, 2] = (A[0, 1] * A[1, 2] - A[0, 2] * A[1, 1]) / det
    out[1, 2] = (A[0, 2] * A[1, 0] - A[0, 0] * A[1, 2]) / det
    out[2, 2] = (A[0, 0] * A[1, 1] - A[0, 1] * A[1, 0]) / det
    return det


@njit(cache=True, error_model="numpy")
def _nsgs_kernel(
    W, b, mu, r, max_sweeps, tolerance, proximal, singular_ratio, relaxation, phis, grid_cos, grid_sin, counts
):
    """Nonsmooth Gauss–Seidel in place on r. Returns (sweeps, relative residual, regularized
    blocks). counts[0..3] <- local outcomes (separate, stick, slide, inexact) of the last sweep."""
    nc = mu.shape[0]
    n = 3 * nc
    blocks = np.empty((nc, 3, 3))
    inverses = np.empty((nc, 3, 3))
    rho = np.zeros(nc)
    regularized = 0
    for i in range(nc):
        k = 3 * i
        fro2 = 0.0
        for a in range(3):
            for bb in range(3):
                blocks[i, a, bb] = W[k + a, k + bb]
                fro2 += W[k + a, k + bb] ** 2
        fro = math.sqrt(fro2)
        det = _inverse3(blocks[i], inverses[i])
        if not (np.isfinite(det) and det > singular_ratio * fro * fro * fro and fro > 0.0):
            rho[i] = proximal * fro if fro > 0.0 else proximal
            for a in range(3):
                blocks[i, a, a] += rho[i]
            _inverse3(blocks[i], inverses[i])
            regularized += 1
    u = np.empty(n)
    statics = _measure_statics(W, b)
    relative, _, _, _ = _measure_given(W, b, mu, r, u, statics)
    c = np.empty(3)
    rp = np.empty(3)
    out = np.empty(3)
    sweeps = 0
    while not (relative <= tolerance) and sweeps < max_sweeps and np.isfinite(relative):
        sweeps += 1
        for j in range(4):
            counts[j] = 0
        for i in range(nc):
            k = 3 * i
            for a in range(3):
                s = b[k + a]
                for j in range(n):
                    s += W[k + a, j] * r[j]
                for j in range(3):
                    s -= W[k + a, k + j] * r[k + j]
                rp[a] = r[k + a]
                c[a] = s - rho[i] * rp[a]
            code = _solve_local(blocks[i], inverses[i], c, mu[i], rp, phis, grid_cos, grid_sin, out)
            counts[3 if code < 0 else code] += 1
            if relaxation != 1.0:
                _project3(
                    mu[i],
                    rp[0] + relaxation * (out[0] - rp[0]),
                    rp[1] + relaxation * (out[1] - rp[1]),
                    rp[2] + relaxation * (out[2] - rp[2]),
                    out,
                )
            r[k], r[k + 1], r[k + 2] = out[0], out[1], out[2]
        relative, _, _, _ = _measure_given(W, b, mu, r, u, statics)
    return sweeps, relative, regularized


_GRIDS: dict[int, tuple] = {}


def _grid(points: int) -> tuple:
    """(φ, cos φ, sin φ) on ``points`` equally spaced angles in [0, 2π)."""
    grid = _GRIDS.get(points)
    if grid is None:
        phis = 2.0 * np.pi * np.arange(points) / points
        grid = _GRIDS[points] = (phis, np.cos(phis), np.sin(phis))
    return grid


# --- front door ------------------------------------------------------------------------------


def measure_friction_contact(
    W, b, mu, r, status: Status, iterations: int, message: str, method: str, tolerance: float, info: dict | None = None
) -> FrictionContactResult:
    """Build a :class:`FrictionContactResult` for ``r``, recomputing ``u`` and the residual here
    (``W, b, mu`` as validated by :func:`solve_friction_contact`: float64, C-contiguous, ``mu``
    of shape (nc,)). A claim of ``SOLVED`` beyond ``tolerance`` becomes ``INACCURATE``; a
    non-finite ``r`` becomes ``NUMERICAL_ERROR``."""
    r = np.ascontiguousarray(r, dtype=np.float64)
    n = b.shape[0]
    u = np.empty(n)
    relative, worst, residual, violation = _measure_kernel(W, b, mu, r, u)
    if not np.isfinite(relative):
        nan = float("nan")
        return FrictionContactResult(
            r,
            np.full(n, nan),
            Status.NUMERICAL_ERROR,
            int(iterations),
            nan,
            nan,
            nan,
            -1,
            tolerance,
            f"non-finite solution; {message}",
            method,
            info or {},
        )
    if status == Status.SOLVED and not relative <= tolerance:
        status = Status.INACCURATE
        message = f"{message}; framework residual {relative:.3g} (contact {worst}) exceeds tolerance {tolerance:.3g}"
    return FrictionContactResult(
        r,
        u,
        status,
        int(iterations),
        float(residual),
        float(violation),
        float(relative),
        int(worst),
        float(tolerance),
        message,
        method,
        info or {},
    )


def _as_array(name, value, ndim):
    """``value`` as a float64 array with ``ndim`` dimensions (C-contiguous), else ValueError."""
    if type(value) is np.ndarray and value.dtype == np.float64:
        arr = value
    else:
        try:
            arr = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name} must be a real array, got {type(value).__name__}: {exc}") from None
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    return arr if arr.flags.c_contiguous else np.ascontiguousarray(arr)


@njit(cache=True)
def _first_nonfinite(W, b, mu, r0):
    """0 if all finite, else 1 (W), 2 (b), 3 (mu), 4 (initial guess)."""
    for i in range(W.shape[0]):
        for j in range(W.shape[1]):
            if not np.isfinite(W[i, j]):
                return 1
    for k, v in enumerate((b, mu, r0)):
        for i in range(v.shape[0]):
            if not np.isfinite(v[i]):
                return k + 2
    return 0


def _nonfinite_error(name, arr):
    bad = np.argwhere(~np.isfinite(arr))[0]
    index = ", ".join(str(int(i)) for i in bad)
    return ValueError(f"{name} must be finite; {name}[{index}] = {arr[tuple(bad)]}")


def _validate(W, b, mu, tolerance, initial_guess):
    if (
        isinstance(tolerance, bool)
        or not isinstance(tolerance, (int, float, np.integer, np.floating))
        or not (math.isfinite(tolerance) and tolerance > 0)
    ):
        raise ValueError(f"tolerance must be a finite number > 0, got {tolerance!r}")
    b = _as_array("b", b, 1)
    n = b.shape[0]
    if n % 3:
        raise ValueError(f"b must have length 3 * (number of contacts), got length {n}")
    nc = n // 3
    W = _as_array("W", W, 2)
    if W.shape != (n, n):
        raise ValueError(f"W must be square of shape ({n}, {n}) = 3 x {nc} contacts to match b, got {W.shape}")
    scalar_mu = isinstance(mu, (int, float, np.integer, np.floating)) and not isinstance(mu, bool)
    if scalar_mu:
        mu_arr = np.empty(nc)
        mu_arr.fill(mu)
    else:
        if np.ndim(mu) == 0:
            mu_arr = _as_array("mu", mu, 0).reshape(1).repeat(nc)
        else:
            mu_arr = _as_array("mu", mu, 1)
            if mu_arr.shape != (nc,):
                raise ValueError(
                    f"mu must be a scalar or an array of shape ({nc},) (one per contact), got shape {mu_arr.shape}"
                )
    if initial_guess is None:
        r0 = np.zeros(n)
    else:
        r0 = _as_array("initial_guess", initial_guess, 1)
        if r0.shape != (n,):
            raise ValueError(f"initial_guess must have shape ({n},), got {r0.shape}")
        r0 = r0.copy()
    culprit = _first_nonfinite(W, b, mu_arr, r0)
    if culprit:
        if culprit == 3 and (scalar_mu or np.ndim(mu) == 0):
            raise ValueError(f"mu must be finite, got {mu}")
        name, arr = (("W", W), ("b", b), ("mu", mu_arr), ("initial_guess", r0))[culprit - 1]
        raise _nonfinite_error(name, arr)
    if nc and mu_arr.min() < 0:
        if scalar_mu or np.ndim(mu) == 0:
            raise ValueError(f"mu must be >= 0, got {mu}")
        i = int(np.flatnonzero(mu_arr < 0)[0])
        raise ValueError(f"mu must be >= 0; mu[{i}] = {mu_arr[i]}")
    return W, b, mu_arr, float(tolerance), r0


def solve_friction_contact(
    W,
    b,
    mu,
    method: str = NSGS,
    *,
    tolerance: float = 1e-10,
    initial_guess=None,
    raise_on_failure: bool = False,
    **options,
) -> FrictionContactResult:
    """Solve the exact 3D Coulomb friction-contact problem ``u = W r + b`` (module docstring).

    Parameters
    ----------
    W : (3nc, 3nc) Delassus matrix (symmetric positive semidefinite), unknowns per contact
        ordered (normal, tangent 1, tangent 2).
    b : (3nc,) free velocity.
    mu : friction coefficient(s) >= 0, a scalar or one per contact (shape (nc,)).
    method : ``"nsgs"`` (ours, default), ``"newton"``, ``"prox"``, ``"auto"`` (ours) or
        ``"siconos-nsgs"``, ``"siconos-nsn-ac"``, ``"siconos-prox"``.
    tolerance : bound on the framework's relative residual for ``SOLVED``.
    initial_guess : (3nc,) starting reactions (warm start), default zero.
    raise_on_failure : raise :class:`~solvers.result.SolverFailure` unless ``SOLVED``.
    **options : see :class:`Options` (``nsgs``), :class:`~solvers.alart_curnier.NewtonOptions`,
        :class:`~solvers.proximal_point.ProxOptions`, :class:`~solvers.auto_choice.AutoOptions`
        and :class:`SiconosOptions`; unknown names raise
        :class:`UnknownOptionError` (both a ``TypeError`` and a ``ValueError``).

    Returns
    -------
    :class:`FrictionContactResult`. Its ``info``: for ``nsgs``, ``separated`` / ``stick`` /
    ``slide`` (how the contacts' local problems were solved in the last sweep),
    ``local_failures`` (local solves without an exact candidate, last sweep) and
    ``regularized_blocks`` (blocks given the proximal term); for ``newton``,
    ``regularized_steps`` (shifted factorizations), ``failed_line_searches``, ``merit`` and
    ``linear_algebra``; for ``prox``, ``inner_iterations``, ``inner_failures``, ``final_sigma``,
    ``stalled`` and ``linear_algebra``; for ``auto`` those of its last stage with ``route`` and
    ``newton_iterations``; for Siconos, ``siconos_info``,
    ``siconos_error`` (Siconos' own measure) and ``siconos_tolerance``.
    """
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {list(METHODS)}")
    if len(_DEFAULTS) < len(METHODS):
        _complete_tables()
    if options:
        try:
            method_options = build_options(_OPTIONS[method], method, options)
        except TypeError as exc:
            raise UnknownOptionError(str(exc)) from None
    else:
        method_options = _DEFAULTS[method]
    W, b, mu, tolerance, r = _validate(W, b, mu, tolerance, initial_guess)
    if method in SICONOS_SOLVERS:
        result = _run_siconos(W, b, mu, r, method_options, tolerance, method)
    else:
        result = _RUNNERS[method](W, b, mu, r, method_options, tolerance)
    if raise_on_failure and not result.success:
        raise SolverFailure(result)
    return result


def _run_nsgs(W, b, mu, r, options: Options, tolerance: float) -> FrictionContactResult:
    counts = np.zeros(4, dtype=np.int64)
    phis, grid_cos, grid_sin = _grid(options.grid_points)
    sweeps, relative, regularized = _nsgs_kernel(
        W,
        b,
        mu,
        r,
        options.max_sweeps,
        tolerance,
        options.proximal,
        options.singular_ratio,
        options.relaxation,
        phis,
        grid_cos,
        grid_sin,
        counts,
    )
    if not np.isfinite(relative):
        status = Status.NUMERICAL_ERROR
        text = f"non-finite iterate after {sweeps} sweeps"
    elif relative <= tolerance:
        status = Status.SOLVED
        text = f"converged in {sweeps} sweeps"
    else:
        status = Status.MAX_ITERATIONS
        text = f"no convergence in {sweeps} sweeps (max_sweeps={options.max_sweeps})"
    info = {
        "separated": int(counts[0]),
        "stick": int(counts[1]),
        "slide": int(counts[2]),
        "local_failures": int(counts[3]),
        "regularized_blocks": int(regularized),
    }
    return measure_friction_contact(
        W, b, mu, r, status, sweeps, f"NSGS (exact local solves): {text}", NSGS, tolerance, info
    )


def _complete_tables():
    """Add the options classes of the methods in their own modules (imported on first use)."""
    if not _DEFAULTS.keys() >= set(METHODS):
        _OPTIONS.update(_options_classes())
        _DEFAULTS.update({name: cls() for name, cls in _OPTIONS.items()})


def options_fields(method: str) -> tuple[str, ...]:
    """The option names ``method`` accepts (those of its options class)."""
    import dataclasses

    _complete_tables()
    if method not in _OPTIONS:
        raise ValueError(f"unknown method {method!r}; choose one of {list(METHODS)}")
    return tuple(f.name for f in dataclasses.fields(_OPTIONS[method]))


def _framework_residual(W, b, mu):
    """``r -> relative residual`` of the framework on the problem (W, b, mu)."""
    u = np.empty(b.shape[0])
    statics = _measure_statics(W, b)

    def residual(r):
        return float(_measure_given(W, b, mu, r, u, statics)[0])

    return residual


_CODE_STATUS = {0: Status.SOLVED, 1: Status.MAX_ITERATIONS, 2: Status.NUMERICAL_ERROR, 3: Status.MAX_ITERATIONS}


def _run_newton(W, b, mu, r, options, tolerance: float, as_auto: bool = False) -> FrictionContactResult:
    """``newton``; with ``as_auto`` the result is labelled as the first stage of ``auto``."""
    from .alart_curnier import _Operator, contact_rho, newton_dense, newton_kernel

    rho = contact_rho(W)
    n = b.shape[0]
    if n <= options.dense_limit:
        stats = np.zeros(3)
        code, iterations = newton_dense(
            W, b, mu, rho, r, options.max_iterations, options.armijo, options.line_search_steps, 0, tolerance, W, b,
            r, np.zeros(n), 0.1, 0.0, stats, options.polish,
        )  # fmt: skip
        status = _CODE_STATUS[code]
        info = {
            "regularized_steps": int(stats[0]),
            "failed_line_searches": int(stats[1]),
            "merit": float(stats[2]),
            "linear_algebra": "dense LU (compiled loop)",
        }
    else:
        residual = _framework_residual(W, b, mu)

        def converged(r_now, u_now, phi, merit):
            return residual(r_now) <= tolerance

        operator = _Operator(W, None, options.dense_limit)
        status, iterations, info = newton_kernel(
            operator, b, mu, rho, r, options.max_iterations, options.armijo, options.line_search_steps, converged
        )
        info["linear_algebra"] = "sparse LU (SuperLU)"
    text = {
        Status.SOLVED: f"converged in {iterations} iterations",
        Status.MAX_ITERATIONS: f"no convergence in {iterations} iterations (max_iterations={options.max_iterations})",
        Status.NUMERICAL_ERROR: f"non-finite iterate or no Newton direction after {iterations} iterations",
    }[status]
    message = f"semismooth Newton (Alart–Curnier): {text}"
    if as_auto:
        info.update(route="newton", newton_iterations=iterations)
        return measure_friction_contact(W, b, mu, r, status, iterations, f"auto: {message}", AUTO, tolerance, info)
    return measure_friction_contact(W, b, mu, r, status, iterations, message, NEWTON, tolerance, info)


def _run_prox(W, b, mu, r, options, tolerance: float) -> FrictionContactResult:
    from .alart_curnier import contact_rho, prox_dense
    from .proximal_point import proximal_point

    if b.shape[0] <= options.dense_limit:
        stats = np.zeros(6)
        code, outer = prox_dense(
            W, b, mu, r, 1.0 / contact_rho(W), options.sigma, options.sigma_min, options.sigma_decrease,
            options.sigma_increase, options.fast_inner, options.inner_ratio, options.max_outer, options.max_inner,
            tolerance, stats, options.polish_outer,
        )  # fmt: skip
        status = _CODE_STATUS[code]
        info = {
            "stalled": code == 3,
            "inner_iterations": int(stats[0]),
            "inner_failures": int(stats[1]),
            "final_sigma": float(stats[2]),
            "polishing_iterations": int(stats[5]),
            "linear_algebra": "dense LU (compiled loop)",
        }
    else:
        status, outer, info = proximal_point(W, b, mu, r, options, _framework_residual(W, b, mu), tolerance)
        info["linear_algebra"] = "sparse LU (SuperLU)"
    text = {
        Status.SOLVED: f"converged in {outer} proximal iterations ({info['inner_iterations']} Newton iterations)",
        Status.MAX_ITERATIONS: (
            f"stalled after {outer} proximal iterations: the iterate solves the proximal problem to rounding"
            if info["stalled"]
            else f"no convergence in {outer} proximal iterations (max_outer={options.max_outer})"
        ),
        Status.NUMERICAL_ERROR: f"non-finite iterate after {outer} proximal iterations",
    }[status]
    return measure_friction_contact(
        W, b, mu, r, status, outer, f"proximal point + Newton (Alart–Curnier): {text}", PROX, tolerance, info
    )


def _run_auto(W, b, mu, r, options, tolerance: float) -> FrictionContactResult:
    from .auto_choice import run_auto

    return run_auto(W, b, mu, r, options, tolerance)


_RUNNERS = {NSGS: _run_nsgs, NEWTON: _run_newton, PROX: _run_prox, AUTO: _run_auto}


def _run_siconos(W, b, mu, r, options: SiconosOptions, tolerance: float, method: str) -> FrictionContactResult:
    from .siconos_route import import_siconos

    sn = import_siconos()
    n = b.shape[0]
    nc = n // 3
    constant = SICONOS_SOLVERS[method]
    if nc == 0:
        return measure_friction_contact(
            W, b, mu, r, Status.SOLVED, 0, "no contacts", method, tolerance, {"siconos_info": 0}
        )
    normal_diagonal = W.diagonal()[0::3]
    if not (normal_diagonal > 0).all():
        # Siconos' local Alart–Curnier solver (used by NSGS) asserts W_ii[0, 0] > 0 and aborts the
        # whole process when it is not (measured); NSN_AC returns NaN there. Refuse instead.
        i = int(np.flatnonzero(~(normal_diagonal > 0))[0])
        return measure_friction_contact(
            W,
            b,
            mu,
            r,
            Status.NUMERICAL_ERROR,
            0,
            f"Siconos needs W[3i, 3i] > 0 for every contact; W[{3 * i}, {3 * i}] = {normal_diagonal[i]:.3g} "
            "(not called: its local solver would abort the process)",
            method,
            tolerance,
            {"siconos_info": None},
        )
    siconos_tolerance = options.siconos_tolerance if options.siconos_tolerance is not None else 0.01 * tolerance
    # Siconos copies W, b and mu into its own NumericsMatrix (checked); r is the initial guess.
    problem = sn.FrictionContactProblem(3, nc, W, b, mu)
    solver_options = sn.SolverOptions(getattr(sn, constant))
    solver_options.iparam[0] = options.max_iterations
    solver_options.dparam[0] = siconos_tolerance
    u = np.zeros(n)
    info_code = int(sn.fc3d_driver(problem, r, u, solver_options))
    iterations, error = int(solver_options.iparam[1]), float(solver_options.dparam[1])
    status = Status.SOLVED if info_code == 0 else Status.EXTERNAL_FAILURE
    return measure_friction_contact(
        W,
        b,
        mu,
        r,
        status,
        iterations,
        f"Siconos {constant} on {nc} contacts: info={info_code}, Siconos error {error:.3g}",
        method,
        tolerance,
        {"siconos_info": info_code, "siconos_error": error, "siconos_tolerance": siconos_tolerance},
    )
