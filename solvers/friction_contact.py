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

Residual
--------
Every answer is judged by the framework's own measure (:mod:`solvers.contact_measure`): the
natural map of De Saxcé's formulation and the cone violation per contact, in that contact's own
scales, the maximum over contacts.

Methods: ``method`` of :func:`solve_friction_contact`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from .alart_curnier import NewtonOptions, run_newton
from .auto_choice import AutoOptions, run_auto
from .contact_measure import project_on_cone
from .contact_result import AUTO, NEWTON, NSGS, PROX, FrictionContactResult, measure_friction_contact
from .nsgs import Options, run_nsgs
from .options import build_options, check_count, check_positive
from .proximal_point import ProxOptions, run_prox
from .result import SolverFailure, Status

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

SICONOS_SOLVERS = {  # method name -> constant name in siconos.numerics
    "siconos-nsgs": "SICONOS_FRICTION_3D_NSGS",
    "siconos-nsn-ac": "SICONOS_FRICTION_3D_NSN_AC",
    "siconos-prox": "SICONOS_FRICTION_3D_PROX",
}

METHODS = (NSGS, NEWTON, PROX, AUTO) + tuple(SICONOS_SOLVERS)
"""The friction-contact methods' names (:data:`solvers.FRICTION_CONTACT_METHODS`)."""


class UnknownOptionError(TypeError, ValueError):
    """An option name the method does not know. A ``TypeError`` like an unexpected keyword
    argument (and like :func:`solvers.solve`), and a ``ValueError`` like every other bad input
    of :func:`solve_friction_contact`."""


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
        """nc, the number of contacts."""
        return self.mu.shape[0]

    @classmethod
    def make(cls, W, b, mu) -> FrictionContactProblem:
        """The checked problem: shapes, finiteness and mu >= 0 (a scalar mu is one per contact);
        a ``ValueError`` names the culprit."""
        W, b, mu, _, _ = _validate(W, b, mu, 1.0, None)
        return cls(W, b, mu)


_OPTIONS = {NSGS: Options, NEWTON: NewtonOptions, PROX: ProxOptions, AUTO: AutoOptions}
_OPTIONS.update({name: SiconosOptions for name in SICONOS_SOLVERS})
_DEFAULTS = {name: cls() for name, cls in _OPTIONS.items()}
_RUNNERS = {NSGS: run_nsgs, NEWTON: run_newton, PROX: run_prox, AUTO: run_auto}


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
    """0 if all finite, else 1 (W), 2 (b), 3 (mu), 4 (initial guess). Each vector by itself: a
    tuple of them would ask all to be of one type, and a read-only array (NumPy's view of a JAX
    array, a memory map) is not the type of a writable one."""
    for i in range(W.shape[0]):
        for j in range(W.shape[1]):
            if not np.isfinite(W[i, j]):
                return 1
    if not _all_finite(b):
        return 2
    if not _all_finite(mu):
        return 3
    if not _all_finite(r0):
        return 4
    return 0


@njit(cache=True)
def _all_finite(v):
    for i in range(v.shape[0]):
        if not np.isfinite(v[i]):
            return False
    return True


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
        ``"siconos-nsgs"``, ``"siconos-nsn-ac"``, ``"siconos-prox"`` (the notes below).
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

    .. rubric:: Methods

    ``"nsgs"`` (ours): nonsmooth block Gauss–Seidel over contacts with exact local solves --
    :mod:`solvers.nsgs` (the local solve: :mod:`solvers.local_coulomb`).

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
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {list(METHODS)}")
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


def options_fields(method: str) -> tuple[str, ...]:
    """The option names ``method`` accepts (those of its options class)."""
    import dataclasses

    if method not in _OPTIONS:
        raise ValueError(f"unknown method {method!r}; choose one of {list(METHODS)}")
    return tuple(f.name for f in dataclasses.fields(_OPTIONS[method]))


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
