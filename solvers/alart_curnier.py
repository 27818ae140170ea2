"""Semismooth Newton on the Alart–Curnier function: ``method="newton"`` for the exact 3D
friction-contact problem (:mod:`solvers.friction_contact`).

Alart & Curnier 1991 (CMAME 92), in the notation of Acary, Brémond & Huber 2017 (INRIA RR-9118,
§3--4): with ``u = W r + b`` and per contact ``α`` (unknowns normal, t1, t2),
``Φ_N(r) = r_N − max(0, r_N − ρ_N u_N)``, ``Φ_T(r) = r_T − P_{D(μ max(0, r_N − ρ_N u_N))}(r_T − ρ_T u_T)``,
zero exactly at a solution of the Coulomb problem; Newton directions ``J d = −Φ`` with
``J = A + B W`` (generalized Jacobian, 3 x 3 blocks per contact), an Armijo line search on
``½ |Φ|²``, ``ρ_α = 1 / |W_αα|_F``. Dense ``J`` (LAPACK, one compiled loop, separated contacts
eliminated) up to ``dense_limit`` unknowns, sparse above (:class:`solvers.newton_operator.Operator`,
SuperLU). The answer is judged by the framework's per-contact residual, never by ``|Φ|``.
No global guarantee: for rank-deficient (hyperstatic) problems use :mod:`solvers.proximal_point`.

The derivation, the derivative blocks case by case, the scaling, the singular-J shift and the
differences from Siconos' NSN-AC: docs/theory/alart-curnier.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from .contact_measure import _contact_errors, _measure_given, _measure_statics, framework_residual
from .contact_result import AUTO, NEWTON, FrictionContactResult, measure_friction_contact
from .lapack import lu_solve
from .newton_operator import Operator, _assemble_dense, _matvec, contact_rho
from .options import check_count, check_positive
from .result import Status

__all__ = ["NewtonOptions", "NAME", "newton_kernel", "contact_rho"]

NAME = "newton"


@dataclass(frozen=True)
class NewtonOptions:
    """Options of ``method="newton"``.

    max_iterations : Newton iterations.
    armijo : sufficient-decrease constant σ of the line search, in (0, 0.5).
    line_search_steps : halvings of the step before the line search gives up (the smallest step
        is then taken and counted).
    dense_limit : unknowns (3nc) up to which J is factorized dense; above it, sparse (SuperLU).
    polish : after the framework's residual first passes, take one more Newton step if the
        answer is still coarse by the collection's measure ||F_nat|| / ||q|| (Acary, Bremond,
        Huber, INRIA RR-9118) -- it can be when reactions dwarf ||q|| -- kept only if the
        framework's residual still passes (dense path). Near a solution the step is quadratic, so
        the answer gains digits for the price of one factorization; an answer already within
        the tolerance by both measures does not pay it.
    """

    max_iterations: int = 200
    armijo: float = 1e-4
    line_search_steps: int = 30
    dense_limit: int = 600
    polish: bool = True

    def __post_init__(self):
        check_count("max_iterations", self.max_iterations)
        if not isinstance(self.polish, bool):
            raise ValueError(f"option polish must be True or False, got {self.polish!r}")
        check_positive("armijo", self.armijo)
        if not self.armijo < 0.5:
            raise ValueError(f"option armijo must be in (0, 0.5), got {self.armijo!r}")
        check_count("line_search_steps", self.line_search_steps)
        check_count("dense_limit", self.dense_limit, minimum=0)


@njit(cache=True, error_model="numpy")
def _ac_function(u, r, mu, rho, phi):
    """phi <- Φ(r) (docs/theory/alart-curnier.md) (u = W r + b given); returns ½|Φ|²."""
    nc = mu.shape[0]
    merit = 0.0
    for c in range(nc):
        k = 3 * c
        tn = r[k] - rho[c] * u[k]
        phi[k] = r[k] - max(0.0, tn)
        radius = mu[c] * max(0.0, tn)
        t1 = r[k + 1] - rho[c] * u[k + 1]
        t2 = r[k + 2] - rho[c] * u[k + 2]
        norm = math.sqrt(t1 * t1 + t2 * t2)
        if norm <= radius:
            phi[k + 1] = r[k + 1] - t1
            phi[k + 2] = r[k + 2] - t2
        else:
            phi[k + 1] = r[k + 1] - radius * t1 / norm
            phi[k + 2] = r[k + 2] - radius * t2 / norm
        merit += phi[k] * phi[k] + phi[k + 1] * phi[k + 1] + phi[k + 2] * phi[k + 2]
    return 0.5 * merit


@njit(cache=True, error_model="numpy")
def _ac_blocks(u, r, mu, rho, A, B):
    """A, B <- the per-contact blocks ∂Φ/∂r, ∂Φ/∂u, shape (nc, 3, 3) (docs/theory/alart-curnier.md,
    "Per-contact derivative blocks")."""
    nc = mu.shape[0]
    A[:] = 0.0
    B[:] = 0.0
    for c in range(nc):
        k = 3 * c
        rh = rho[c]
        tn = r[k] - rh * u[k]
        if tn > 0.0:
            B[c, 0, 0] = rh
        else:
            A[c, 0, 0] = 1.0
        radius = mu[c] * max(0.0, tn)
        t1 = r[k + 1] - rh * u[k + 1]
        t2 = r[k + 2] - rh * u[k + 2]
        norm = math.sqrt(t1 * t1 + t2 * t2)
        if norm <= radius:
            B[c, 1, 1] = rh
            B[c, 2, 2] = rh
        elif norm == 0.0:  # radius 0 and t_T = 0: Φ_T = r_T
            A[c, 1, 1] = 1.0
            A[c, 2, 2] = 1.0
        else:
            n1 = t1 / norm
            n2 = t2 / norm
            f = radius / norm
            p11 = 1.0 - n1 * n1
            p12 = -n1 * n2
            p22 = 1.0 - n2 * n2
            A[c, 1, 1] = 1.0 - f * p11
            A[c, 1, 2] = -f * p12
            A[c, 2, 1] = -f * p12
            A[c, 2, 2] = 1.0 - f * p22
            B[c, 1, 1] = rh * f * p11
            B[c, 1, 2] = rh * f * p12
            B[c, 2, 1] = rh * f * p12
            B[c, 2, 2] = rh * f * p22
            if tn > 0.0:
                A[c, 1, 0] = -mu[c] * n1
                A[c, 2, 0] = -mu[c] * n2
                B[c, 1, 0] = mu[c] * rh * n1
                B[c, 2, 0] = mu[c] * rh * n2


def newton_kernel(operator, b, mu, rho, r, max_iterations, armijo, line_search_steps, converged):
    """Semismooth Newton in place on ``r`` for ``u = operator.W r + b``. ``converged(r, u, phi,
    merit)`` decides when to stop (checked before each iteration). Returns (status, iterations,
    info dict)."""
    n = b.shape[0]
    nc = mu.shape[0]
    u = np.empty(n)
    phi = np.empty(n)
    trial_r = np.empty(n)
    trial_u = np.empty(n)
    trial_phi = np.empty(n)
    A = np.empty((nc, 3, 3))
    B = np.empty((nc, 3, 3))
    operator.velocity(r, b, u)
    merit = _ac_function(u, r, mu, rho, phi)
    regularized = failed_searches = 0
    iteration = 0
    while True:
        if not math.isfinite(merit):
            return Status.NUMERICAL_ERROR, iteration, _info(regularized, failed_searches, merit)
        if converged(r, u, phi, merit):
            return Status.SOLVED, iteration, _info(regularized, failed_searches, merit)
        if iteration >= max_iterations:
            return Status.MAX_ITERATIONS, iteration, _info(regularized, failed_searches, merit)
        iteration += 1
        _ac_blocks(u, r, mu, rho, A, B)
        d, shifted = operator.direction(A, B, phi)
        regularized += bool(shifted)
        if d is None:
            return Status.NUMERICAL_ERROR, iteration, _info(regularized, failed_searches, merit)
        t = 1.0
        for _ in range(line_search_steps):
            np.add(r, t * d, out=trial_r)
            operator.velocity(trial_r, b, trial_u)
            trial = _ac_function(trial_u, trial_r, mu, rho, trial_phi)
            if trial <= (1.0 - 2.0 * armijo * t) * merit:
                break
            t *= 0.5
        else:
            failed_searches += 1
        r[:] = trial_r
        u[:] = trial_u
        phi[:] = trial_phi
        merit = trial


def _info(regularized, failed_searches, merit):
    return {
        "regularized_steps": int(regularized),
        "failed_line_searches": int(failed_searches),
        "merit": float(merit),
    }


# --- the dense path, compiled whole ------------------------------------------------------------
# (no Python between iterations: for small problems the interpreter, not the arithmetic, would
# set the cost.) Codes returned: SOLVED_CODE, MAX_CODE, ERROR_CODE, STALLED_CODE.
SOLVED_CODE, MAX_CODE, ERROR_CODE, STALLED_CODE = 0, 1, 2, 3


@njit(cache=True)
def _dense_direction(J, phi, scale):
    """d with J d = −Φ (LAPACK through NumPy), retried with the shifts 1e-12 and 1e-8 of
    ``scale`` when J is singular or the answer is not finite. Returns (d, attempt), attempt -1
    if no finite d was found."""
    n = phi.shape[0]
    rhs = -phi
    for attempt in range(3):
        M = J.copy()
        if attempt:
            shift = (10.0 ** (attempt * 4 - 16)) * scale
            for i in range(n):
                M[i, i] += shift
        d, ok = lu_solve(M, rhs)
        if not ok:  # an exactly singular J (lu_solve: no exception, which would leak in compiled code)
            continue
        if np.all(np.isfinite(d)):
            return d, attempt
    return np.zeros(n), -1


@njit(cache=True)
def _separated(A, B, c):
    """Whether contact c's blocks are those of a separated contact, ``A_c = I``, ``B_c = 0``
    (``r_N − ρ u_N <= 0``: ``Φ_c = r_c``, whatever ``u``)."""
    for a in range(3):
        for bb in range(3):
            if B[c, a, bb] != 0.0 or A[c, a, bb] != (1.0 if a == bb else 0.0):
                return False
    return True


@njit(cache=True)
def _reduced_direction(W, A, B, phi, scale, J):
    """The Newton direction ``d`` with ``J d = −Φ``, ``J = blockdiag(A) + blockdiag(B) W``,
    solved on the contacts that are not separated only (Schur elimination of exact rows).

    A separated contact's rows of ``J`` are those of the identity (``_separated``), so
    ``d_S = −Φ_S`` exactly, and the others solve ``J_RR d_R = −Φ_R − B_R W_RS d_S`` with
    ``J_RR = A_R + B_R W_RR``: the same direction as the full system (the same shifts of the
    diagonal on retry, ``_dense_direction``) for a factorization of the active contacts
    alone -- a pile or a scene where most candidate contacts are open costs what its closed
    contacts cost. ``J`` (n, n) is the workspace of the full system, used when no contact is
    separated. Returns (d, attempt) as ``_dense_direction``."""
    n = phi.shape[0]
    nc = n // 3
    keep = np.empty(nc, np.int64)
    separated = np.zeros(nc, np.bool_)
    m = 0
    for c in range(nc):
        separated[c] = _separated(A, B, c)
        if not separated[c]:
            keep[m] = c
            m += 1
    if m == nc:
        _assemble_dense(W, A, B, J)
        return _dense_direction(J, phi, scale)
    if m == 0:  # every contact separated: J = I
        return -phi, 0
    d = np.empty(n)
    rows = np.empty(3 * m, np.int64)
    for t in range(m):
        for a in range(3):
            rows[3 * t + a] = 3 * keep[t] + a
    # J_RR and v = W_RS Φ_S (the coupling of the kept rows to the separated unknowns)
    JR = np.empty((3 * m, 3 * m))
    v = np.zeros(3 * m)
    for i in range(3 * m):
        row = rows[i]
        acc = 0.0
        for c in range(nc):
            if not separated[c]:
                continue
            k = 3 * c
            acc += W[row, k] * phi[k] + W[row, k + 1] * phi[k + 1] + W[row, k + 2] * phi[k + 2]
        v[i] = acc
    for t in range(m):
        c = keep[t]
        for a in range(3):
            i = 3 * t + a
            for j in range(3 * m):
                col = rows[j]
                JR[i, j] = B[c, a, 0] * W[3 * c, col] + B[c, a, 1] * W[3 * c + 1, col] + B[c, a, 2] * W[3 * c + 2, col]
            for bb in range(3):
                JR[i, 3 * t + bb] += A[c, a, bb]
    for attempt in range(3):
        shift = (10.0 ** (attempt * 4 - 16)) * scale if attempt else 0.0
        # d_S = −Φ_S / (1 + shift): the separated rows of the (shifted) full system
        factor = 1.0 / (1.0 + shift)
        rhs = np.empty(3 * m)
        for t in range(m):
            c = keep[t]
            for a in range(3):
                i = 3 * t + a
                # −Φ_R − B_R W_RS d_S with d_S = −factor Φ_S
                rhs[i] = -phi[rows[i]] + factor * (
                    B[c, a, 0] * v[3 * t] + B[c, a, 1] * v[3 * t + 1] + B[c, a, 2] * v[3 * t + 2]
                )
        M = JR.copy()
        for i in range(3 * m):
            M[i, i] += shift
        dR, ok = lu_solve(M, rhs)
        if not ok:  # an exactly singular J
            continue
        if not np.all(np.isfinite(dR)):
            continue
        for c in range(nc):
            for a in range(3):
                d[3 * c + a] = -factor * phi[3 * c + a]
        for i in range(3 * m):
            d[rows[i]] = dR[i]
        return d, attempt
    return np.zeros(n), -1


@njit(cache=True, error_model="numpy")
def _natural_map_error(b, mu, r, u):
    """||F_nat(r)||_2 / ||b||_2 (||b|| = 0 counts as 1) at u = W r + b, F_nat(r)_a = r_a -
    P_K(r_a - u_a - [mu_a ||u_T,a||, 0, 0]) (Acary, Bremond, Huber, INRIA RR-9118, 2017)."""
    tmp = np.empty(3)
    total = 0.0
    norm_b = 0.0
    for a in range(mu.shape[0]):
        k = 3 * a
        residual, _ = _contact_errors(mu[a], r[k], r[k + 1], r[k + 2], u[k], u[k + 1], u[k + 2], tmp)
        total += residual * residual
        norm_b += b[k] * b[k] + b[k + 1] * b[k + 1] + b[k + 2] * b[k + 2]
    return math.sqrt(total) / (math.sqrt(norm_b) if norm_b > 0.0 else 1.0)


@njit(cache=True)
def newton_dense(Wop, b, mu, rho, r, max_iterations, armijo, line_search_steps, mode, tolerance, W0, b0, r_k, shift,
                 inner_ratio, floor, stats, polish=False):  # fmt: skip
    """Semismooth Newton in place on ``r`` for ``u = Wop r + b`` (dense), compiled whole.

    ``mode`` 0: stop when the framework's residual of ``(W0, b0)`` at ``r`` is ``<= tolerance``
    (plain Newton, ``Wop = W0``); ``mode`` 1: stop on the proximal loop's inner test
    ``|Φ| <= max(floor, inner_ratio |shift (r − r_k)|)``. ``stats`` (3,) accumulates the shifted
    factorizations, failed line searches and the final merit. ``polish`` (mode 0): after the
    residual first passes, take one more Newton step if ||F_nat|| / ||b0|| still exceeds the
    tolerance, kept if the residual still passes.
    Returns (code, iterations)."""
    n = b.shape[0]
    nc = mu.shape[0]
    u = np.empty(n)
    u0 = np.empty(n)
    phi = np.empty(n)
    trial_r = np.empty(n)
    trial_u = np.empty(n)
    trial_phi = np.empty(n)
    A = np.empty((nc, 3, 3))
    B = np.empty((nc, 3, 3))
    J = np.empty((n, n))
    _matvec(Wop, r, b, u)
    merit = _ac_function(u, r, mu, rho, phi)
    scale = 1.0
    for i in range(n):
        for j in range(n):
            scale = max(scale, abs(Wop[i, j]))
    # the framework's measure (mode 0) of (W0, b0): its parts that do not depend on r, once
    statics = _measure_statics(W0 if mode == 0 else W0[:0, :0], b0 if mode == 0 else b0[:0])
    iteration = 0
    full_step = True
    polishing = False
    saved = r.copy()
    saved_merit = merit
    while True:
        stats[2] = merit
        if not np.isfinite(merit):
            return ERROR_CODE, iteration
        if mode == 0:
            # the framework's residual costs a pass over W: checked at the start and after full
            # Newton steps (near a solution the line search takes the whole step)
            if polishing:  # the extra step is kept only if the answer still passes
                if not _measure_given(W0, b0, mu, r, u0, statics)[0] <= tolerance:
                    r[:] = saved
                    stats[2] = saved_merit
                return SOLVED_CODE, iteration
            if (iteration == 0 or full_step) and _measure_given(W0, b0, mu, r, u0, statics)[0] <= tolerance:
                if iteration == 0 or not polish or merit == 0.0 or _natural_map_error(b0, mu, r, u0) <= tolerance:
                    return SOLVED_CODE, iteration
                # one more (quadratic) step: the framework's per-contact measure passes an
                # answer that |F_nat|/|q| can still find coarse when reactions dwarf |q|
                if iteration >= max_iterations:
                    return SOLVED_CODE, iteration
                polishing = True
                saved = r.copy()
                saved_merit = merit
        else:
            size = math.sqrt(2.0 * merit)
            if size <= floor:
                return SOLVED_CODE, iteration
            step = 0.0
            for i in range(n):
                step += (shift[i] * (r[i] - r_k[i])) ** 2
            if step > 0.0 and size <= inner_ratio * math.sqrt(step):
                return SOLVED_CODE, iteration
        if iteration >= max_iterations:
            return MAX_CODE, iteration
        iteration += 1
        _ac_blocks(u, r, mu, rho, A, B)
        d, attempt = _reduced_direction(Wop, A, B, phi, scale * max(1.0, rho.max()), J)
        if attempt < 0:
            return ERROR_CODE, iteration
        if attempt > 0:
            stats[0] += 1
        t = 1.0
        accepted = False
        for _ in range(line_search_steps):
            for i in range(n):
                trial_r[i] = r[i] + t * d[i]
            _matvec(Wop, trial_r, b, trial_u)
            trial = _ac_function(trial_u, trial_r, mu, rho, trial_phi)
            if trial <= (1.0 - 2.0 * armijo * t) * merit:
                accepted = True
                break
            t *= 0.5
        if not accepted:
            stats[1] += 1
        full_step = accepted and t == 1.0
        r[:] = trial_r
        u[:] = trial_u
        phi[:] = trial_phi
        merit = trial


@njit(cache=True)
def prox_dense(W, b, mu, r, scale, sigma, sigma_min, sigma_decrease, sigma_increase, fast_inner, inner_ratio,
               max_outer, max_inner, tolerance, stats, polish_outer=0):  # fmt: skip
    """The proximal-point loop of :mod:`solvers.proximal_point` on a dense ``W``, compiled whole,
    in place on ``r``. ``stats`` (6,): inner iterations, inner failures, final σ, shifted
    factorizations, failed line searches, polishing outer iterations. After the framework's
    residual passes, up to ``polish_outer`` more outer iterations while ||F_nat|| / ||b|| exceeds
    the tolerance; the last iterate that passes is returned. Returns (code, outer iterations)."""
    n = b.shape[0]
    nc = mu.shape[0]
    eps = np.finfo(np.float64).eps
    Wop = W.copy()
    u0 = np.empty(n)
    shift = np.empty(n)
    b_k = np.empty(n)
    r_k = np.empty(n)
    rho = np.empty(nc)
    inner_stats = np.zeros(3)
    statics = _measure_statics(W, b)
    relative = _measure_given(W, b, mu, r, u0, statics)[0]
    b_max = 0.0
    for i in range(n):
        b_max = max(b_max, abs(b[i]))
    outer = 0
    polished = 0
    saved = r.copy()
    while True:
        stats[2] = sigma
        stats[3] = inner_stats[0]
        stats[4] = inner_stats[1]
        if not np.isfinite(relative) or not relative <= tolerance:
            if polished > 0:  # the polishing iteration lost the pass: back to the last answer
                r[:] = saved
                return SOLVED_CODE, outer
        if not np.isfinite(relative):
            return ERROR_CODE, outer
        if relative <= tolerance:
            if polished >= polish_outer or _natural_map_error(b, mu, r, u0) <= tolerance:
                return SOLVED_CODE, outer
            saved[:] = r
            polished += 1
            stats[5] = polished
        elif outer >= max_outer:
            return MAX_CODE, outer
        outer += 1
        shifted_max = 0.0
        for c in range(nc):
            rho[c] = 1.0 / (scale[c] * (1.0 + sigma))
            for a in range(3):
                k = 3 * c + a
                shift[k] = sigma * scale[c]
                Wop[k, k] = W[k, k] + shift[k]
                r_k[k] = r[k]
                b_k[k] = b[k] - shift[k] * r[k]
                shifted_max = max(shifted_max, abs(shift[k] * r[k]))
        floor = 64.0 * eps * (shifted_max + b_max * rho.min() + 1e-300)
        code, iterations = newton_dense(Wop, b_k, mu, rho, r, max_inner, 1e-4, 30, 1, tolerance, W, b, r_k, shift,
                                        inner_ratio, floor, inner_stats)  # fmt: skip
        stats[0] += iterations
        if code != SOLVED_CODE:
            stats[1] += 1
            r[:] = r_k
            sigma = sigma * sigma_increase
            continue
        if iterations == 0:  # r_k solves the proximal problem, hence the original one, to rounding
            stats[2] = sigma
            return (SOLVED_CODE if polished > 0 else STALLED_CODE), outer
        relative = _measure_given(W, b, mu, r, u0, statics)[0]
        if iterations <= fast_inner:
            sigma = max(sigma / sigma_decrease, sigma_min)


# --- the runner of method="newton" ---------------------------------------------------------


_CODE_STATUS = {0: Status.SOLVED, 1: Status.MAX_ITERATIONS, 2: Status.NUMERICAL_ERROR, 3: Status.MAX_ITERATIONS}


def run_newton(W, b, mu, r, options, tolerance: float, as_auto: bool = False) -> FrictionContactResult:
    """``newton``; with ``as_auto`` the result is labelled as the first stage of ``auto``."""
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
        residual = framework_residual(W, b, mu)

        def converged(r_now, u_now, phi, merit):
            return residual(r_now) <= tolerance

        operator = Operator(W, None, options.dense_limit)
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
