"""``method="auto"`` for the exact 3D friction-contact problem: one NSGS sweep on larger
problems, then semismooth Newton, then the proximal-point loop when Newton does not finish
quickly.

1. One NSGS sweep (:mod:`solvers.friction_contact`, exact local solves) where it can finish:
   a single contact; contacts that ``W`` does not couple (no nonzero entry off its 3 x 3
   diagonal blocks: the sweep is then the exact solution); and, from ``first_sweep_contacts``
   contacts on, problems where at most a share ``first_sweep_closing`` of the contacts close
   under the free velocity (``b_N < 0``), weakly coupled ones where most candidate contacts stay
   open (a pile of spheres). These end here, to rounding, for less than one factorization. Where
   most contacts close (a box on many contacts, a stack) one sweep does not finish and is
   skipped.
2. Semismooth Newton on the Alart–Curnier function (:mod:`solvers.alart_curnier`), from the
   caller's guess, for at most ``newton_iterations`` iterations, finishing with one polishing
   step where ||F_nat|| / ||q|| is still above the tolerance (``NewtonOptions.polish``): it
   converges in a handful of iterations when the Delassus matrix ``W`` is nonsingular on the
   active set (a few contacts on separate bodies, a wheel, the rover), but its Jacobian
   is singular on hyperstatic, rank-deficient problems (a box on many contacts, stacks, piles),
   where it stalls. Skipped, like step 1, when ``3nc > dense_limit``: the large third-party
   problems are all rank deficient.
3. The proximal-point loop (:mod:`solvers.proximal_point`), which regularizes exactly those,
   from the caller's guess. Not from Newton's last iterate, even when it is closer: on
   OneObject-i100000-499, 25 Newton iterations reach a natural-map merit of 8.5e-9, and the
   loop from there took 33 outer and 270 inner iterations (31 ms), against 10 and 15 (1.3 ms)
   from zero -- Newton's stalled iterate lies along the null space of the singular Jacobian,
   which the regularized problems then have to undo.

The result records the route in ``info["route"]`` (``nsgs``, ``newton``, ``newton+prox`` or
``prox``) and the Newton iterations spent in ``info["newton_iterations"]``; ``iterations``
counts the stages' iterations together. Measured on the 34 third-party problems
(``benchmarks/bench_fc3d.py``, ``docs/benchmarks.md``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import numpy as np
from numba import njit

from .alart_curnier import NewtonOptions, run_newton
from .contact_result import AUTO, measure_friction_contact
from .local_coulomb import _grid
from .nsgs import Options, _nsgs_kernel
from .options import check_count, check_nonnegative
from .proximal_point import ProxOptions, run_prox
from .result import Status

__all__ = ["AutoOptions", "run_auto"]


@dataclass(frozen=True)
class AutoOptions:
    """Options of ``method="auto"``.

    newton_iterations : Newton iterations before switching to the proximal-point loop.
    max_outer : proximal iterations of the second stage.
    dense_limit : unknowns (3nc) up to which the first stages are tried and factorizations are
        dense.
    first_sweep_contacts : from this many contacts on, begin with one NSGS sweep (exact local
        solves) where at most a share ``first_sweep_closing`` close: it finishes weakly coupled
        problems (a pile of spheres, one closing contact of four) to rounding for less than one
        factorization. One contact, and contacts W does not couple, always begin with it: there
        the sweep is the exact solution. If the sweep does not finish, Newton starts from the
        caller's guess (from the sweep's iterate it needed up to twice the iterations on the
        OneObject problems).
    first_sweep_closing : the largest share of contacts with ``b_N < 0`` for that sweep (the
        sphere pile NESpheres_30 closes 3 of 44; the problems where one sweep never finished
        close 1/3 or more: BoxesStack 18 of 52, OneObject 9 to 17 of 23 to 25, Confeti 28 of
        54 and 35 of 107).
    """

    newton_iterations: int = 25
    max_outer: int = 1000
    dense_limit: int = 600
    first_sweep_contacts: int = 2
    first_sweep_closing: float = 0.25

    def __post_init__(self):
        check_count("first_sweep_contacts", self.first_sweep_contacts, minimum=0)
        check_nonnegative("first_sweep_closing", self.first_sweep_closing)
        check_count("newton_iterations", self.newton_iterations)
        check_count("max_outer", self.max_outer)
        check_count("dense_limit", self.dense_limit, minimum=0)


@functools.lru_cache(maxsize=16)
def _stage_options(options: AutoOptions):
    """The options of the two stages (built once per AutoOptions: small problems are solved in
    tens of microseconds, where building dataclasses shows)."""
    return (
        NewtonOptions(max_iterations=options.newton_iterations, dense_limit=options.dense_limit),
        ProxOptions(max_outer=options.max_outer, dense_limit=options.dense_limit),
    )


@njit(cache=True)
def _uncoupled(W):
    """True when W has no nonzero entry outside its 3 x 3 diagonal blocks (the contacts do not
    couple; always for one contact). Returns at the first coupling entry: a coupled W is usually
    told in a few reads."""
    n = W.shape[0]
    for i in range(n):
        block = i - i % 3
        for j in range(n):
            if (j < block or j >= block + 3) and W[i, j] != 0.0:
                return False
    return True


@njit(cache=True)
def _sweep_first(W, b, first_sweep_contacts, first_sweep_closing):
    """Whether auto begins with one NSGS sweep (module docstring, step 1): W couples no two
    contacts, or there are at least ``first_sweep_contacts`` contacts and at most a share
    ``first_sweep_closing`` of them close (``b_N < 0``). One compiled call: on a few contacts,
    where Newton takes tens of microseconds, the same test in NumPy cost 7 µs."""
    if _uncoupled(W):
        return True
    nc = b.shape[0] // 3
    if nc < first_sweep_contacts:
        return False
    closing = 0
    for c in range(nc):
        if b[3 * c] < 0.0:
            closing += 1
    return closing <= first_sweep_closing * nc


@functools.lru_cache(maxsize=1)
def _nsgs_defaults():
    return Options()


def run_auto(W, b, mu, r, options: AutoOptions, tolerance: float):
    """The ``auto`` friction-contact method on (W, b, mu) from ``r``: Newton for a few iterations, then the
    proximal-point loop (module docstring)."""
    newton_options, prox_options = _stage_options(options)
    start = r.copy()
    spent = 0
    if b.shape[0] <= options.dense_limit and _sweep_first(
        W, b, options.first_sweep_contacts, options.first_sweep_closing
    ):
        counts = np.zeros(4, dtype=np.int64)
        defaults = _nsgs_defaults()
        sweeps, relative, regularized = _nsgs_kernel(
            W, b, mu, r, 1, tolerance, defaults.proximal, defaults.singular_ratio, 1.0,
            *_grid(defaults.grid_points), counts,
        )  # fmt: skip
        if relative <= tolerance:
            info = dict(zip(("separated", "stick", "slide", "local_failures"), counts.tolist()))
            info.update(route="nsgs", newton_iterations=0, regularized_blocks=int(regularized))
            return measure_friction_contact(
                W, b, mu, r, Status.SOLVED, sweeps, f"auto: NSGS, converged in {sweeps} sweep(s)", AUTO,
                tolerance, info,
            )  # fmt: skip
        r[:] = start  # Newton from the sweep's iterate took more iterations on the rank-deficient sets
    if b.shape[0] <= options.dense_limit:
        first = run_newton(W, b, mu, r, newton_options, tolerance, as_auto=True)
        if first.success:
            return first
        spent = first.iterations
    second = run_prox(W, b, mu, start, prox_options, tolerance)
    info = dict(second.info, route="newton+prox" if spent else "prox", newton_iterations=spent)
    prefix = f"auto: {spent} Newton iterations without convergence, then " if spent else "auto: "
    return replace(second, method=AUTO, iterations=spent + second.iterations, info=info,
                   message=prefix + second.message)  # fmt: skip
