"""``method="nsgs"`` (ours): nonsmooth block Gauss–Seidel over contacts, each contact's local
problem solved exactly (:mod:`solvers.local_coulomb`).

Contact ``i`` sees the local problem ``u = A r + c`` with ``A = W_ii`` and
``c = b_i + sum_{j != i} W_ij r_j``; it is solved *exactly* by enumerating its cases
(:mod:`solvers.local_coulomb`).

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
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from .contact_measure import _measure_given, _measure_statics, _project3
from .contact_result import NSGS, FrictionContactResult, measure_friction_contact
from .local_coulomb import _grid, _inverse3, _solve_local
from .options import check_count, check_positive
from .result import Status

__all__ = ["Options", "run_nsgs"]


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


def run_nsgs(W, b, mu, r, options: Options, tolerance: float) -> FrictionContactResult:
    """NSGS on (W, b, mu) from ``r`` with ``options``, judged by the framework's measure at ``tolerance``."""
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
