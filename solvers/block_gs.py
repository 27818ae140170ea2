"""Block (per-contact) projected Gauss–Seidel for large bounded LCPs, each block solved exactly.

After the free variables are eliminated (:func:`solvers.reformulate.eliminate_free`: the
velocity and bilateral rows of Peiret 2016 Eq. (30) give the Delassus form
W = J M^-1 J^T + C of the contact unknowns), the bounded variables are grouped into blocks --
one contact's normal and friction unknowns, ``blocks[i]`` the label of variable i -- and each
sweep visits the blocks in the order their labels first appear, solving for block I

    lo_I <= z_I <= hi_I  complementary to  w_I = W_II z_I + s_I,   s_I = q_I + sum_{J != I} W_IJ z_J

exactly with the latest z of the other blocks (Jourdan, Alart & Jean 1998's NSGS structure,
with the local problem the bounded LCP of the regularized, box or continuous model's contact
instead of the Coulomb cone; Cottle, Pang & Stone 1992, Sec. 5.2 for the projected iteration).
For symmetric positive semidefinite W -- every Delassus matrix, the regularized model's compliance
1/(k_T h^2) adding to its friction diagonal -- a sweep is an exact block coordinate descent on the
convex quadratic 1/2 z^T W z + q^T z over the box, which decreases monotonically and converges
to a solution (Luo & Tseng 1992); redundant contacts (a singular W_NN) slow it, they do not stop
it. It is not a direct method: ``max_sweeps`` bounds the work and an unconverged run reports
``MAX_ITERATIONS`` with its last iterate.

The local problem (at most ``MAX_BLOCK`` = 4 variables: a contact's normal and two friction
unknowns) is solved by enumerating the 3^b active sets -- each variable at its lower bound, at
its upper bound or free -- solving W_FF z_F = -(s_F + W_FB z_B) by Gaussian elimination with
partial pivoting, and taking the set whose answer violates its bounds and signs least, each
violation measured against its own row's scale; an exact solution ends the search. Every
``check_every`` sweeps the framework's relative residual of the reduced problem
(:func:`solvers.result.relative_residual`) is measured; the solve stops at ``0.1 x tolerance``
and the answer is then judged on the whole problem as every method's is.

Differences from the papers: blocks hold bounded-LCP variables with fixed bounds (the
regularized model's bounds mu lam_N come from the previous step, Peiret 2016 Eq. 12), not the
second-order cone of NSGS.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from .options import check_count
from .reformulate import eliminate_free_or_report
from .result import relative_residual

NAME = "block-gs"
MAX_BLOCK = 4
_EPS = np.finfo(np.float64).eps
_ACCEPT = 64.0 * _EPS  # a local answer within this of every row's scale ends the enumeration


@dataclass(frozen=True)
class Options:
    """Options of ``method="block-gs"``.

    blocks : (n,) integer labels, variables with equal labels form one block (free variables'
        labels are ignored: they are eliminated); None makes every variable its own block
        (projected Gauss–Seidel with exact scalar solves). A block holds at most ``MAX_BLOCK``
        bounded variables. For Eq. (30) with n velocities, m bilateral rows and r contacts,
        :func:`contact_blocks` gives one block per contact.
    max_sweeps : sweep limit.  check_every : sweeps between residual checks.
    initial_guess : starting z (length n), e.g. the previous step's solution.
    """

    blocks: object = None
    max_sweeps: int = 100_000
    check_every: int = 5
    initial_guess: object = None

    def __post_init__(self):
        check_count("max_sweeps", self.max_sweeps)
        check_count("check_every", self.check_every)


def contact_blocks(n: int, m: int, r: int, friction_rows: int = 2) -> np.ndarray:
    """Block labels for the unknowns of Peiret 2016 Eq. (30), (v+, h lam, h lam_N, h lam_T):
    contact i's normal unknown and its ``friction_rows`` friction unknowns share label i; the
    velocities and bilateral multipliers (free, eliminated) get -1."""
    for name, value in (("n", n), ("m", m), ("r", r), ("friction_rows", friction_rows)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ValueError(f"contact_blocks: {name} must be an integer >= 0, got {value!r}")
    contact = np.arange(r)
    return np.concatenate([np.full(n + m, -1), contact, np.repeat(contact, friction_rows)]).astype(np.int64)


def _block_structure(blocks, n: int, bounded: np.ndarray):
    """(starts, members) of the blocks over the reduced problem's variables (indices into
    ``bounded``), in order of first appearance; a clear error for bad labels or a block too big."""
    if blocks is None:
        k = bounded.shape[0]
        return np.arange(k + 1, dtype=np.int64), np.arange(k, dtype=np.int64)
    labels = np.asarray(blocks)
    if labels.shape != (n,):
        raise ValueError(f"option blocks must have shape ({n},) (one label per variable), got {labels.shape}")
    if not np.issubdtype(labels.dtype, np.integer):
        raise TypeError(f"option blocks must hold integer labels, got dtype {labels.dtype}")
    reduced = labels[bounded]
    _, first, inverse, counts = np.unique(reduced, return_index=True, return_inverse=True, return_counts=True)
    if counts.size and counts.max() > MAX_BLOCK:
        big = int(np.argmax(counts))
        label = reduced[first[big]]
        raise ValueError(
            f"option blocks: block {label} holds {counts[big]} bounded variables; block-gs solves blocks of at "
            f"most {MAX_BLOCK} exactly"
        )
    order = np.argsort(first, kind="stable")  # blocks in order of first appearance
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    block_of = rank[inverse.reshape(-1)]
    members = np.argsort(block_of, kind="stable").astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(np.bincount(block_of, minlength=order.size))]).astype(np.int64)
    return starts, members


@njit(cache=True)
def _dense_solve(A, b, x):
    """x = A^-1 b by Gaussian elimination with partial pivoting on copies (size <= MAX_BLOCK);
    False if a pivot falls below 1e3 eps x max |A| (numerically singular)."""
    k = b.shape[0]
    if k == 0:
        return True
    T = A.copy()
    y = b.copy()
    scale = 0.0
    for i in range(k):
        for j in range(k):
            scale = max(scale, abs(T[i, j]))
    if not scale > 0.0:
        return False
    for c in range(k):
        p = c
        for i in range(c + 1, k):
            if abs(T[i, c]) > abs(T[p, c]):
                p = i
        if not abs(T[p, c]) > 1e3 * _EPS * scale:
            return False
        if p != c:
            for j in range(k):
                T[c, j], T[p, j] = T[p, j], T[c, j]
            y[c], y[p] = y[p], y[c]
        for i in range(c + 1, k):
            f = T[i, c] / T[c, c]
            if f != 0.0:
                for j in range(c, k):
                    T[i, j] -= f * T[c, j]
                y[i] -= f * y[c]
    for c in range(k - 1, -1, -1):
        acc = y[c]
        for j in range(c + 1, k):
            acc -= T[c, j] * x[j]
        x[c] = acc / T[c, c]
    return True


@njit(cache=True)
def local_blcp(A, s, lo, hi, z):
    """The exact solution of the local bounded LCP lo <= z <= hi complementary to w = A z + s
    (b <= MAX_BLOCK variables) by enumeration of the 3^b active sets, into ``z`` (left unchanged
    if no active set gives a finite answer). Returns the answer's violation: the largest bound or
    sign violation, each against its own scale (|z_i| + the bound's size for a variable, |s_i| +
    sum_j |A_ij z_j| for a row); 0 for an exact solution."""
    b = s.shape[0]
    total = 1
    for _ in range(b):
        total *= 3
    codes = np.empty(b, np.int64)  # 0 at lower, 1 at upper, 2 free
    trial = np.empty(b)
    best = np.inf
    best_z = z.copy()
    free = np.empty(b, np.int64)
    for combo in range(total):
        rest = combo
        usable = True
        nf = 0
        for i in range(b):
            codes[i] = rest % 3
            rest //= 3
            if codes[i] == 0 and not np.isfinite(lo[i]):
                usable = False
            elif codes[i] == 1 and (not np.isfinite(hi[i]) or hi[i] == lo[i]):
                usable = False  # a fixed variable (lo = hi) is enumerated once, at its lower bound
            elif codes[i] == 2 and lo[i] == hi[i]:
                usable = False
            if codes[i] == 2:
                free[nf] = i
                nf += 1
        if not usable:
            continue
        for i in range(b):
            if codes[i] == 0:
                trial[i] = lo[i]
            elif codes[i] == 1:
                trial[i] = hi[i]
        if nf > 0:
            Aff = np.empty((nf, nf))
            rhs = np.empty(nf)
            for a in range(nf):
                i = free[a]
                acc = -s[i]
                for j in range(b):
                    if codes[j] != 2:
                        acc -= A[i, j] * trial[j]
                rhs[a] = acc
                for c in range(nf):
                    Aff[a, c] = A[i, free[c]]
            xf = np.empty(nf)
            if not _dense_solve(Aff, rhs, xf):
                continue
            for a in range(nf):
                trial[free[a]] = xf[a]
        violation = 0.0
        finite = True
        for i in range(b):
            if not np.isfinite(trial[i]):
                finite = False
                break
            w = s[i]
            size = abs(s[i])
            for j in range(b):
                w += A[i, j] * trial[j]
                size += abs(A[i, j] * trial[j])
            if codes[i] == 2:
                bound = 0.0
                if np.isfinite(lo[i]):
                    bound = max(bound, abs(lo[i]))
                if np.isfinite(hi[i]):
                    bound = max(bound, abs(hi[i]))
                zscale = abs(trial[i]) + bound
                excess = max(lo[i] - trial[i], trial[i] - hi[i], 0.0)
                if excess > 0.0:
                    violation = max(violation, excess / zscale if zscale > 0.0 else np.inf)
            else:
                wrong = -w if codes[i] == 0 else w  # at lower: w >= 0; at upper: w <= 0
                if lo[i] == hi[i]:
                    wrong = 0.0  # a fixed variable takes any w
                if wrong > 0.0:
                    violation = max(violation, wrong / size if size > 0.0 else np.inf)
        if not finite:
            continue
        if violation < best:
            best = violation
            best_z[:] = trial
            if violation <= _ACCEPT:
                break
    if np.isfinite(best):
        z[:] = best_z
    return best


@njit(cache=True)
def block_sweeps(M, q, lo, hi, z, starts, members, max_sweeps, check_every, stop):
    """Block Gauss–Seidel sweeps in place on z. Returns (sweeps, converged, relative residual)."""
    n_blocks = starts.shape[0] - 1
    n = q.shape[0]
    sweeps = 0
    residual = relative_residual(M, q, lo, hi, z)
    while residual > stop and sweeps < max_sweeps:
        for _ in range(min(check_every, max_sweeps - sweeps)):
            sweeps += 1
            for k in range(n_blocks):
                a, e = starts[k], starts[k + 1]
                b = e - a
                A = np.empty((b, b))
                s = np.empty(b)
                lo_b = np.empty(b)
                hi_b = np.empty(b)
                z_b = np.empty(b)
                for x in range(b):
                    i = members[a + x]
                    acc = q[i]
                    for j in range(n):
                        acc += M[i, j] * z[j]
                    for y in range(b):
                        A[x, y] = M[i, members[a + y]]
                        acc -= A[x, y] * z[members[a + y]]
                    s[x] = acc
                    lo_b[x], hi_b[x], z_b[x] = lo[i], hi[i], z[i]
                local_blcp(A, s, lo_b, hi_b, z_b)
                for x in range(b):
                    z[members[a + x]] = z_b[x]
        residual = relative_residual(M, q, lo, hi, z)
    return sweeps, residual <= stop, residual


def run(problem, options: Options, tolerance: float):
    """Block Gauss–Seidel on the problem with its free variables eliminated."""
    n = problem.n
    elimination, failure = eliminate_free_or_report(problem, NAME, tolerance)
    if failure is not None:
        return failure
    reduced = elimination.reduced
    starts, members = _block_structure(options.blocks, n, elimination.bounded)
    z = elimination.starting_point(options.initial_guess)
    sweeps, converged, residual = block_sweeps(
        reduced.M,
        reduced.q,
        reduced.lo,
        reduced.hi,
        z,
        starts,
        members,
        options.max_sweeps,
        options.check_every,
        0.1 * tolerance,
    )
    blocks = f"block Gauss–Seidel ({starts.shape[0] - 1} blocks, largest {int(np.diff(starts).max(initial=0))})"
    return elimination.sweep_result(problem, z, sweeps, converged, residual, blocks, NAME, tolerance)
