"""``method="auto"`` for the exact 3D friction-contact problem: semismooth Newton first, the
proximal-point loop when Newton does not finish quickly.

Semismooth Newton on the Alart–Curnier function (:mod:`solvers.alart_curnier`) converges in a
handful of iterations when the contacts' Delassus matrix ``W`` is nonsingular on the active set
(a few contacts on separate bodies, a wheel, a sphere pile), but its Jacobian is singular on
hyperstatic, rank-deficient problems (a box on many contacts, stacks, piles), where it stalls.
The proximal-point loop (:mod:`solvers.proximal_point`) regularizes exactly those. So ``auto``
runs Newton for at most ``newton_iterations`` iterations (none if the problem is too large for
the dense factorization, ``3nc > dense_limit``: the large third-party problems are all rank
deficient) and, if it has not converged, continues with ``prox`` from Newton's iterate when the
framework's residual says it is better than the caller's initial guess, else from that guess
(after a stall Newton's iterate can be worse than where it started). The result records the
route in ``info["route"]`` and the Newton iterations spent first in
``info["newton_iterations"]``; ``iterations`` counts both stages.

Measured on the 34 third-party problems (``benchmarks/bench_fc3d.py``): the first stage
finishes the full-rank ones (Rover, FC3D examples, NESpheres, Confeti); the second the others.
NSGS is not used: its exact local solves cost more per sweep than a small factorization, and it
stalls on the same problems as Newton.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import numpy as np

from .options import check_count

__all__ = ["AutoOptions", "run_auto"]


@dataclass(frozen=True)
class AutoOptions:
    """Options of ``method="auto"``.

    newton_iterations : Newton iterations before switching to the proximal-point loop.
    max_outer : proximal iterations of the second stage.
    dense_limit : unknowns (3nc) up to which the first stage is tried and factorizations are
        dense.
    """

    newton_iterations: int = 25
    max_outer: int = 1000
    dense_limit: int = 600

    def __post_init__(self):
        check_count("newton_iterations", self.newton_iterations)
        check_count("max_outer", self.max_outer)
        check_count("dense_limit", self.dense_limit, minimum=0)


@functools.lru_cache(maxsize=16)
def _stage_options(options: AutoOptions):
    """The options of the two stages (built once per AutoOptions: small problems are solved in
    tens of microseconds, where building dataclasses shows)."""
    from .alart_curnier import NewtonOptions
    from .proximal_point import ProxOptions

    return (
        NewtonOptions(max_iterations=options.newton_iterations, dense_limit=options.dense_limit),
        ProxOptions(max_outer=options.max_outer, dense_limit=options.dense_limit),
    )


def run_auto(W, b, mu, r, options: AutoOptions, tolerance: float):
    from . import friction_contact as fc

    newton_options, prox_options = _stage_options(options)
    start = r.copy()
    spent = 0
    if b.shape[0] <= options.dense_limit:
        first = fc._run_newton(W, b, mu, r, newton_options, tolerance)
        if first.success:
            info = dict(first.info, route="newton", newton_iterations=first.iterations)
            return replace(first, method=fc.AUTO, info=info, message=f"auto: {first.message}")
        spent = first.iterations
        if np.isfinite(first.relative_residual) and first.relative_residual < fc._framework_residual(W, b, mu)(start):
            start = first.r.copy()
    second = fc._run_prox(W, b, mu, start, prox_options, tolerance)
    info = dict(second.info, route="newton+prox" if spent else "prox", newton_iterations=spent)
    prefix = f"auto: {spent} Newton iterations without convergence, then " if spent else "auto: "
    return replace(second, method=fc.AUTO, iterations=spent + second.iterations, info=info,
                   message=prefix + second.message)  # fmt: skip
