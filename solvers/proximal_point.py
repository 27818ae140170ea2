"""The proximal-point outer loop: ``method="prox"`` for the exact 3D friction-contact problem
(:mod:`solvers.friction_contact`), with the semismooth Newton method of
:mod:`solvers.alart_curnier` as the inner solver.

Iteration (Rockafellar 1976, "Monotone operators and the proximal point algorithm"; for
frictional contact Acary, Brémond & Huber 2017, INRIA RR-9118, §5 "proximal point
algorithm", Siconos' ``FC3D_PROX``): from ``r_k`` solve the friction-contact problem

    u = (W + Λ) r + (b − Λ r_k),      Coulomb conditions on u and r as before,

whose solution is ``r_{k+1}``. At a fixed point ``r_{k+1} = r_k`` the two problems coincide, so
the limit solves the original problem. ``Λ = σ diag(s_α I_3)`` with ``s_α = |W_αα|_F`` the
contact's own scale (a diagonal proximal metric, one scalar per contact so the cones are kept;
ABH use ``α I``): the regularized problem has a positive definite operator even when ``W`` is
rank deficient (hyperstatic contact sets, a body on many contacts), so the inner Newton
Jacobian is nonsingular and its iterations converge fast.

How σ adapts, when the inner and outer loops stop, the linear algebra, the measured defaults and
the differences from the references: the documentation's ``docs/theory/proximal-point.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .alart_curnier import _CODE_STATUS as CODE_STATUS
from .alart_curnier import _natural_map_error, newton_kernel, prox_dense
from .contact_measure import framework_residual
from .contact_result import PROX, FrictionContactResult, measure_friction_contact
from .newton_operator import Operator, contact_rho, contact_rho_csr
from .options import check_count, check_positive
from .result import Status

__all__ = ["ProxOptions", "NAME", "proximal_point"]

NAME = "prox"


@dataclass(frozen=True)
class ProxOptions:
    """Options of ``method="prox"`` (module docstring).

    max_outer : proximal iterations.
    max_inner : Newton iterations per inner solve.
    sigma, sigma_min : initial and smallest relative proximal weight (Λ = σ s_α per contact).
    sigma_decrease, sigma_increase : factors applied to σ after a fast inner solve / a failure.
    fast_inner : inner iteration count up to which an inner solve counts as fast.
    inner_ratio : inner stopping ratio η of ``|Φ| <= η |Λ (r − r_k)|``.
    dense_limit : unknowns up to which the inner Jacobian is factorized dense.
    polish_outer : after the framework's residual passes, at most this many more outer
        iterations while the collection's measure ||F_nat|| / ||q|| (Acary, Bremond, Huber,
        INRIA RR-9118) still exceeds the tolerance -- it can when reactions dwarf ||q||; the last
        iterate that passes the framework's residual is returned (0: stop at the first pass).
        6: BoxesStack1 from the iterate Newton leaves after 25 iterations (auto) needs 4,
        where 3 left ||F_nat|| / ||q|| at 1.5e-8 against 1e-8.
    """

    max_outer: int = 1000
    max_inner: int = 30
    sigma: float = 1.0
    sigma_min: float = 1e-6
    sigma_decrease: float = 4.0
    sigma_increase: float = 10.0
    fast_inner: int = 4
    inner_ratio: float = 0.1
    dense_limit: int = 600
    polish_outer: int = 6

    def __post_init__(self):
        check_count("max_outer", self.max_outer)
        check_count("max_inner", self.max_inner)
        check_positive("sigma", self.sigma)
        check_positive("sigma_min", self.sigma_min)
        if self.sigma_min > self.sigma:
            raise ValueError(f"option sigma_min ({self.sigma_min!r}) must be <= sigma ({self.sigma!r})")
        for name in ("sigma_decrease", "sigma_increase"):
            value = getattr(self, name)
            check_positive(name, value)
            if not value > 1.0:
                raise ValueError(f"option {name} must be > 1, got {value!r}")
        check_count("fast_inner", self.fast_inner)
        check_positive("inner_ratio", self.inner_ratio)
        check_count("dense_limit", self.dense_limit, minimum=0)
        check_count("polish_outer", self.polish_outer, minimum=0)


def proximal_point(W, b, mu, r, options: ProxOptions, outer_residual, tolerance):
    """The loop of the module docstring, in place on ``r``; ``W`` dense, or scipy sparse (then
    the inner Jacobians are sparse whatever ``dense_limit``). ``outer_residual(r)`` is the
    framework's relative residual on the original problem. Returns (status, outer iterations,
    info)."""

    if sp.issparse(W):  # a Delassus operator too large to hold dense (a pile): sparse Newton throughout
        operator = Operator.from_csr(W)
        scale = 1.0 / contact_rho_csr(operator)
    else:
        scale = 1.0 / contact_rho(W)  # s_alpha = |W_aa|_F
        operator = Operator(W, None, options.dense_limit)
    inner_total = failures = 0
    relative = outer_residual(r)
    sigma = options.sigma
    outer = polished = 0
    saved = r.copy()
    eps = np.finfo(np.float64).eps
    while True:
        if polished > 0 and not relative <= tolerance:  # the polishing iteration lost the pass
            r[:] = saved
            return Status.SOLVED, outer, _info(inner_total, failures, sigma, polished=polished)
        if not math.isfinite(relative):
            return Status.NUMERICAL_ERROR, outer, _info(inner_total, failures, sigma)
        if relative <= tolerance:
            if polished >= options.polish_outer or _natural_map_error(b, mu, r, W @ r + b) <= tolerance:
                return Status.SOLVED, outer, _info(inner_total, failures, sigma, polished=polished)
            saved[:] = r
            polished += 1
        elif outer >= options.max_outer:
            return Status.MAX_ITERATIONS, outer, _info(inner_total, failures, sigma)
        outer += 1
        shift = np.repeat(sigma * scale, 3)
        operator.set_shift(shift)
        rho = 1.0 / (scale * (1.0 + sigma))  # 1 / |W_aa + Lambda_a|_2, contact by contact
        r_k = r.copy()
        b_k = b - shift * r_k
        floor = 64.0 * eps * (float(np.abs(shift * r_k).max()) + float(np.abs(b).max()) * float(rho.min()) + 1e-300)

        def converged(r_now, u_now, phi, merit, r_k=r_k, shift=shift, floor=floor):
            size = math.sqrt(2.0 * merit)
            if size <= floor:
                return True
            step = float(np.linalg.norm(shift * (r_now - r_k)))
            return step > 0.0 and size <= options.inner_ratio * step

        status, iterations, _ = newton_kernel(operator, b_k, mu, rho, r, options.max_inner, 1e-4, 30, converged)
        inner_total += iterations
        if status != Status.SOLVED:
            failures += 1
            r[:] = r_k
            sigma = sigma * options.sigma_increase
            continue
        if iterations == 0:  # r_k solves the proximal problem, hence the original one, to rounding
            if polished > 0:
                return Status.SOLVED, outer, _info(inner_total, failures, sigma, polished=polished)
            return Status.MAX_ITERATIONS, outer, _info(inner_total, failures, sigma, stalled=True)
        relative = outer_residual(r)
        if iterations <= options.fast_inner:
            sigma = max(sigma / options.sigma_decrease, options.sigma_min)


def _info(inner_total, failures, sigma, stalled=False, polished=0):
    return {
        "stalled": stalled,
        "inner_iterations": int(inner_total),
        "inner_failures": int(failures),
        "final_sigma": float(sigma),
        "polishing_iterations": int(polished),
    }


def run_prox(W, b, mu, r, options, tolerance: float) -> FrictionContactResult:
    """The proximal-point Newton loop on (W, b, mu) from ``r`` (dense or sparse by the problem's size), judged by
    the framework's measure at ``tolerance``."""
    if b.shape[0] <= options.dense_limit:
        stats = np.zeros(6)
        code, outer = prox_dense(
            W, b, mu, r, 1.0 / contact_rho(W), options.sigma, options.sigma_min, options.sigma_decrease,
            options.sigma_increase, options.fast_inner, options.inner_ratio, options.max_outer, options.max_inner,
            tolerance, stats, options.polish_outer,
        )  # fmt: skip
        status = CODE_STATUS[code]
        info = {
            "stalled": code == 3,
            "inner_iterations": int(stats[0]),
            "inner_failures": int(stats[1]),
            "final_sigma": float(stats[2]),
            "polishing_iterations": int(stats[5]),
            "linear_algebra": "dense LU (compiled loop)",
        }
    else:
        status, outer, info = proximal_point(W, b, mu, r, options, framework_residual(W, b, mu), tolerance)
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
