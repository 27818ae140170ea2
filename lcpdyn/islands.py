"""The step's complementarity problem split into independent islands (one per body, or one per
group of bodies joined by bilateral rows: :class:`BodyGroups`).

Every contact of the engine joins one body to a fixed surface, the mass matrix M of Peiret 2016
Eq. (1) is block-diagonal and constant (diag(m_b I3, I_b) per body), and each contact's
Jacobian rows N_i = n_i^T J_p and D_i (Eqs. 3-4) are nonzero only over the 6 velocities of its
body. Without bilateral rows (A empty) the bounded MLCP of Eq. (30) is therefore
block-diagonal after a permutation: body b's velocities v_b+ and its contacts' unknowns
(h lam_N, the friction block) form an island

    [ M_b   -N_b^T  -F_b^T ] [ v_b+    ]   [ -(M_b v_b + h f_b) ]   [ 0     ]
    [ N_b   C_N,b    0     ] [ h lam_N ] + [  e_N,b             ] = [ w_N   ]
    [ F_b    0      C_T,b  ] [ x_F     ]   [  c_b               ]   [ sigma ]

of size 6 + 3 c_b (c_b its contacts) that no other island sees, and a body without contacts
moves freely, v_b+ = M_b^-1 (M_b v_b + h f_b). The islands are solved one after the other in
one compiled loop (:func:`lcp_islands` for the regularized and box models with Júdice–Pires,
:func:`coulomb_islands` for the exact cone with NSGS on each island's Delassus matrix
W_b = H_b M_b^-1 H_b^T, H_b = [N; D] of its contacts), so the step's cost grows linearly with
the number of bodies and contacts instead of with the cube of the whole system (what the dense
path of :mod:`lcpdyn.stepper` pays).

The rows of an island are the whole problem's rows restricted to it: the same entries, the same
bounds, and -- since each row's scale (:mod:`solvers.result`) is built from that row's own
entries and the variables it couples -- the same per-row residual; the step's residual is the
largest over the islands. An island whose pivoting fails is handed to the full method with its
fallbacks by the stepper, like the dense problem.

Bilateral rows (joints, ideal rolling; Eq. 2) couple the velocities of the bodies they touch:
:class:`BodyGroups` merges those bodies into one island (union-find over the rows' structural
pattern), whose Eq. (30) holds its bodies' velocities, its rows and its contacts. The stepper
solves such islands one by one with the method and its fallback (any bounded-LCP model), or for
the exact cone eliminates each island's velocities and multipliers (:mod:`lcpdyn.kkt`, a sparse
Schur factorization for large islands) and runs NSGS on its Delassus problem.

Differences from the dense path: none in the problem; the pivoting runs on each island instead
of the whole matrix, so the iterates (not the solution, which is unique for the regularized
model's positive definite friction block) may differ in rounding. A model with one body is
solved exactly as the dense path solves it (one island, the same matrix in the same order).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from solvers.contact_measure import _measure_kernel as _measure_friction_contact
from solvers.judice_pires import pivot_and_measure
from solvers.nsgs import _nsgs_kernel

from .friction.base import row_buffers
from .friction.box import box_block
from .friction.regularized import regularized_block

__all__ = ["Islands", "Group", "BodyGroups", "row_bodies", "lcp_islands", "coulomb_islands", "free_velocity"]


class Islands:
    """The partition of contacts by body: ``order`` (r,) the contacts sorted by body (stable),
    ``starts`` (B + 1,) where island k's contacts begin in ``order``, ``bodies`` (B,) the body of
    island k; ``offsets`` (B + 1,) where island k's rows begin in the stacked island vectors (6
    velocities + 3 rows per contact); ``matrix_offsets`` likewise for the stacked island
    matrices (size^2 each)."""

    def __init__(self, contact_body: np.ndarray, extra_rows: int = 2):
        contact_body = np.asarray(contact_body, np.int64)
        self.order = np.argsort(contact_body, kind="stable").astype(np.int64)
        bodies, counts = np.unique(contact_body, return_counts=True)
        self.bodies = bodies.astype(np.int64)
        self.starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        sizes = 6 + (1 + extra_rows) * counts
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.matrix_offsets = np.concatenate([[0], np.cumsum(sizes * sizes)]).astype(np.int64)
        self.size = int(self.offsets[-1])

    def __len__(self):
        return len(self.bodies)

    def subset(self, keep: np.ndarray) -> tuple[Islands, np.ndarray]:
        """(the islands ``keep`` (bool per island) as islands of their own, the indices of their rows
        in this partition's stacked island vectors): a step's second solve of the islands whose
        friction switched (:mod:`lcpdyn.strategies.second_solve`)."""
        keep = np.asarray(keep, bool)
        counts, sizes = np.diff(self.starts), np.diff(self.offsets)
        part = object.__new__(Islands)
        part.order = self.order[np.repeat(keep, counts)]
        part.bodies = self.bodies[keep]
        part.starts = np.concatenate([[0], np.cumsum(counts[keep])]).astype(np.int64)
        part.offsets = np.concatenate([[0], np.cumsum(sizes[keep])]).astype(np.int64)
        part.matrix_offsets = np.concatenate([[0], np.cumsum(sizes[keep] ** 2)]).astype(np.int64)
        part.size = int(part.offsets[-1])
        rows = np.flatnonzero(np.repeat(keep, sizes)).astype(np.int64)
        return part, rows


def row_bodies(A_block: np.ndarray, A_body: np.ndarray, n_bodies: int) -> np.ndarray:
    """(m, nb) bool: which bodies each bilateral row touches -- a nonzero or non-finite entry
    in its block (``A_block`` (m, k, 6)) over body ``A_body`` (m, k; -1 padding), the row-block
    form of :class:`lcpdyn.model.Kinematics`."""
    m = A_body.shape[0]
    out = np.zeros((m, n_bodies), bool)
    touched = ~(A_block == 0).all(axis=2) & (A_body >= 0)
    rows, slots = np.nonzero(touched)
    out[rows, A_body[rows, slots]] = True
    return out


@dataclass(frozen=True, eq=False)
class Group:
    """One island of coupled bodies: ``bodies`` (nb_g,) ascending, ``columns`` (6 nb_g,) their
    velocities in the whole v, ``contacts`` (r_g,) ascending, ``slot`` (r_g,) each contact's
    body as a position in ``bodies``, ``rows`` (m_g,) its bilateral rows of A (ascending)."""

    bodies: np.ndarray
    columns: np.ndarray
    contacts: np.ndarray
    slot: np.ndarray
    rows: np.ndarray


class BodyGroups:
    """The bodies partitioned into islands coupled by bilateral rows.

    A bilateral row of Peiret 2016 Eq. (2), a_j^T v = u_j, couples the velocities of every body
    it touches (a ball joint: two; an ideally rolling disk's rows: one), so those bodies and
    their contacts share one island of Eq. (30): with ``row_pattern`` (m, nb) the bodies each
    row touches, the islands are the connected components of the bodies linked through rows
    (union-find), each with its contacts and rows. Bodies without contacts or rows are in no
    island (they move freely, v+ = M_b^-1 (M_b v_b + h f_b)). The island's problem is Eq. (30)
    restricted to its velocities, rows and contacts -- the same entries, so the same per-row
    residual -- and the whole step's matrix is block-diagonal over the islands after a
    permutation: a block (sparse) factorization of the whole problem.

    ``row_pattern`` is the *structural* pattern (the stepper takes it from A at the initial state
    and at random states, so a user's constraint needs no declaration); :meth:`conforms` checks
    a step's A against it (a row that reaches a body outside its island sends that step to the
    dense path). ``sparsity_error`` names a row that touches no body (its island would be
    singular), else None."""

    def __init__(self, n_bodies: int, contact_body: np.ndarray, row_pattern: np.ndarray):
        contact_body = np.asarray(contact_body, np.int64)
        row_pattern = np.asarray(row_pattern, bool).reshape(-1, n_bodies)
        parent = list(range(n_bodies))

        def root(b):
            while parent[b] != b:
                parent[b] = parent[parent[b]]
                b = parent[b]
            return b

        self.sparsity_error = None
        for j, touched in enumerate(row_pattern):
            bodies = np.flatnonzero(touched)
            if bodies.size == 0:
                self.sparsity_error = j
                continue
            first = root(int(bodies[0]))
            for b in bodies[1:]:
                other = root(int(b))
                if other != first:
                    parent[max(first, other)] = min(first, other)
                    first = min(first, other)
        roots = np.array([root(b) for b in range(n_bodies)], np.int64)
        used = np.zeros(n_bodies, bool)
        used[contact_body] = True
        used[np.flatnonzero(row_pattern.any(axis=0))] = True
        row_root = np.array([roots[np.flatnonzero(t)[0]] if t.any() else -1 for t in row_pattern], np.int64)
        self.groups = []
        self.allowed = np.zeros(row_pattern.shape, bool)
        for group_root in np.unique(roots[used]):
            bodies = np.flatnonzero(roots == group_root)
            contacts = np.flatnonzero(roots[contact_body] == group_root)
            rows = np.flatnonzero(row_root == group_root)
            self.allowed[np.ix_(rows, bodies)] = True
            self.groups.append(
                Group(
                    bodies=bodies,
                    columns=(6 * bodies[:, None] + np.arange(6)).reshape(-1),
                    contacts=contacts,
                    slot=np.searchsorted(bodies, contact_body[contacts]).astype(np.int64),
                    rows=rows,
                )
            )
        self.n_bodies = n_bodies
        self.free_bodies = np.flatnonzero(~used)

    def __len__(self):
        return len(self.groups)

    @property
    def splits(self) -> bool:
        """True when the step falls into more than one piece (islands or free bodies)."""
        return len(self.groups) + self.free_bodies.size > 1

    @property
    def largest(self) -> int:
        """The most unknowns of the free part (velocities and bilateral rows) of any island."""
        return max((g.columns.size + g.rows.size for g in self.groups), default=0)

    def conforms(self, A_block: np.ndarray, A_body: np.ndarray) -> bool:
        """Whether every row of this step's A (row blocks, :func:`row_bodies`) stays within its
        island's bodies."""
        if A_body.shape[0] == 0:
            return True
        touched = ~(A_block == 0).all(axis=2) & (A_body >= 0)
        inside = self.allowed[np.arange(A_body.shape[0])[:, None], np.maximum(A_body, 0)]
        return bool(np.all(inside | ~touched))

    def rows_matrix(self, j: int, A_block: np.ndarray, A_body: np.ndarray) -> np.ndarray:
        """Island j's rows of A over its own velocities, (m_g, 6 nb_g), from the row blocks
        (entries over bodies outside the island are not there: :meth:`conforms`)."""
        g = self.groups[j]
        bodies = A_body[g.rows]
        local = np.searchsorted(g.bodies, bodies)
        valid = (bodies >= 0) & (g.bodies[np.minimum(local, g.bodies.size - 1)] == bodies)
        rows, slots = np.nonzero(valid)
        out = np.zeros((g.rows.size, g.columns.size))
        out[rows[:, None], 6 * local[rows, slots][:, None] + np.arange(6)] = A_block[g.rows[rows], slots]
        return out


@njit(cache=True)
def free_velocity(mass, inertia, rhs):
    """v = M^-1 rhs for every body (the islands overwrite the bodies with contacts)."""
    v = np.empty(rhs.shape[0])
    for b in range(mass.shape[0]):
        o = 6 * b
        for j in range(3):
            v[o + j] = rhs[o + j] / mass[b]
        v[o + 3 : o + 6] = np.linalg.solve(inertia[b], rhs[o + 3 : o + 6].copy())
    return v


@njit(cache=True)
def _body_matrix(mass, inertia, b, out):
    """The 6 x 6 block of M of body b into ``out``."""
    for i in range(6):
        for j in range(6):
            out[i, j] = 0.0
    for j in range(3):
        out[j, j] = mass[b]
        for k in range(3):
            out[3 + j, 3 + k] = inertia[b, j, k]


@njit(cache=True)
def lcp_islands(
    mass,
    inertia,
    rhs,
    e_N,
    CN,
    N_block,
    D_block,
    tangent,
    v,
    h,
    mu,
    mu_static,
    normal_force,
    friction_force,
    compliance,
    v_th,
    box,
    cone,
    basis_force,
    branch,
    guess,
    order,
    starts,
    bodies,
    offsets,
    matrix_offsets,
    warm,
    use_warm,
    max_iterations,
    max_stall,
    pivot_tolerance,
):
    """Each island's rows (module docstring) with the regularized (or, ``box``, the box) friction
    block (``cone``: its static branch in the cone about ``basis_force`` (r, 3)), and one
    Júdice–Pires run with the framework's residual on each, as
    :func:`lcpdyn.kernels.fused_step` does for the whole problem.

    Returns (v+ (n,), h lam_N (r,), friction impulses (r, 2) in each contact's basis, basis (r, 2, 2),
    kinetic (r,), active set (stacked), K (stacked matrices), q, lo, hi (stacked), per island:
    code, iterations, relative, worst, residual, violation). ``max_iterations`` 0 means the
    solver's default for each island's size."""
    r = e_N.shape[0]
    B = bodies.shape[0]
    v_new = free_velocity(mass, inertia, rhs)
    impulse_N = np.zeros(r)
    impulse_T = np.zeros((r, 2))
    basis = np.zeros((r, 2, 2))
    kinetic = np.zeros(r, np.bool_)
    total = offsets[B]
    active = np.zeros(total, np.int8)
    K_all = np.zeros(matrix_offsets[B])
    q_all = np.empty(total)
    lo_all = np.empty(total)
    hi_all = np.empty(total)
    codes = np.zeros(B, np.int64)
    iterations = np.zeros(B, np.int64)
    relatives = np.zeros(B)
    worsts = np.zeros(B, np.int64)
    residuals = np.zeros(B)
    violations = np.zeros(B)
    Mb = np.empty((6, 6))
    u = np.zeros(0)
    for k in range(B):
        c0, c1 = starts[k], starts[k + 1]
        nc = c1 - c0
        s = 6 + 3 * nc
        o = 6 * bodies[k]
        Dl = np.empty((2 * nc, 6))
        Nl = np.empty((nc, 6))
        tl = np.empty((nc, 2, 3))
        mul = np.empty(nc)
        musl = np.empty(nc)
        brl = np.empty(nc, np.int8)
        gl = np.empty((nc, 2))
        nfl = np.empty(nc)
        ffl = np.empty((nc, 3))
        bfl = np.empty((nc, 3))
        CNl = np.empty(nc)
        eNl = np.empty(nc)
        for a in range(nc):
            i = order[c0 + a]
            for j in range(6):
                Nl[a, j] = N_block[i, j]
                Dl[2 * a, j] = D_block[i, 0, j]
                Dl[2 * a + 1, j] = D_block[i, 1, j]
            for j in range(3):
                tl[a, 0, j] = tangent[i, 0, j]
                tl[a, 1, j] = tangent[i, 1, j]
                ffl[a, j] = friction_force[i, j]
                bfl[a, j] = basis_force[i, j]
            mul[a] = mu[i]
            musl[a] = mu_static[i]
            brl[a] = branch[i]
            gl[a, 0] = guess[i, 0]
            gl[a, 1] = guess[i, 1]
            nfl[a] = normal_force[i]
            CNl[a] = CN[i]
            eNl[a] = e_N[i]
        vl = v[o : o + 6].copy()
        F, C, c, bound, bl, kl = row_buffers(nc, 6)
        if box:
            box_block(Dl, h, mul, nfl, F, C, c, bound, bl, kl)
        else:
            regularized_block(
                Dl, vl, h, mul, musl, nfl, ffl, tl, compliance, v_th, F, C, c, bound, bl, kl, cone, bfl, brl, gl
            )
        _body_matrix(mass, inertia, bodies[k], Mb)
        K = np.zeros((s, s))
        Cb = np.zeros((2 * nc, 2 * nc))
        for j in range(2 * nc):
            Cb[j, j] = C[j]
        _fill(K, Mb, Nl, F, Cb, CNl)
        ql = np.empty(s)
        lol = np.empty(s)
        hil = np.empty(s)
        _bounded(rhs[o : o + 6], u, eNl, c, bound, ql, lol, hil)
        p0 = offsets[k]
        warm_l = warm[p0 : p0 + s].copy()
        limit = max_iterations if max_iterations > 0 else 50 + 50 * s
        z, w, act, code, its, relative, worst, residual, violation = pivot_and_measure(
            K, ql, lol, hil, warm_l, use_warm, limit, max_stall, pivot_tolerance
        )
        m0 = matrix_offsets[k]
        for i in range(s):
            for j in range(s):
                K_all[m0 + i * s + j] = K[i, j]
            q_all[p0 + i] = ql[i]
            lo_all[p0 + i] = lol[i]
            hi_all[p0 + i] = hil[i]
            active[p0 + i] = act[i]
        for j in range(6):
            v_new[o + j] = z[j]
        for a in range(nc):
            i = order[c0 + a]
            impulse_N[i] = z[6 + a]
            impulse_T[i, 0] = z[6 + nc + 2 * a]
            impulse_T[i, 1] = z[6 + nc + 2 * a + 1]
            for x in range(2):
                for y in range(2):
                    basis[i, x, y] = bl[a, x, y]
            kinetic[i] = kl[a]
        codes[k] = code
        iterations[k] = its
        relatives[k] = relative
        worsts[k] = worst
        residuals[k] = residual
        violations[k] = violation
    return (
        v_new,
        impulse_N,
        impulse_T,
        basis,
        kinetic,
        active,
        K_all,
        q_all,
        lo_all,
        hi_all,
        codes,
        iterations,
        relatives,
        worsts,
        residuals,
        violations,
    )


@njit(cache=True)
def _fill(K, M, N, F, C, CN):
    """K = [[M, -N^T, -F^T], [N, diag(CN), 0], [F, 0, C]] (:func:`lcpdyn.kernels.fill_matrix` with
    m = 0 and G = F, P = 0) into a zeroed K."""
    n, r, nf = M.shape[0], N.shape[0], F.shape[0]
    c = n + r
    for i in range(r):
        K[n + i, n + i] = CN[i]
    for i in range(n):
        for j in range(n):
            K[i, j] = M[i, j]
        for j in range(r):
            K[i, n + j] = -N[j, i]
            K[n + j, i] = N[j, i]
        for j in range(nf):
            K[i, c + j] = -F[j, i]
            K[c + j, i] = F[j, i]
    for i in range(nf):
        for j in range(nf):
            K[c + i, c + j] = C[i, j]


@njit(cache=True)
def _bounded(rhs, u, e_N, c, bound, q, lo, hi):
    """q, lo, hi of an island (:func:`lcpdyn.kernels.bounded_vectors` with m = 0)."""
    n, r, nf = rhs.shape[0], e_N.shape[0], c.shape[0]
    for i in range(n):
        q[i], lo[i], hi[i] = -rhs[i], -np.inf, np.inf
    for i in range(r):
        q[n + i], lo[n + i], hi[n + i] = e_N[i], 0.0, np.inf
    for i in range(nf):
        q[n + r + i], lo[n + r + i], hi[n + r + i] = c[i], -bound[i], bound[i]


@njit(cache=True)
def coulomb_islands(
    mass,
    inertia,
    rhs,
    e_N,
    CN,
    N_block,
    D_block,
    mu,
    order,
    starts,
    bodies,
    guess,
    max_sweeps,
    tolerance,
    proximal,
    singular_ratio,
    relaxation,
    phis,
    grid_cos,
    grid_sin,
):
    """Each island's Delassus problem u = W_b r + b_b (W_b = H_b M_b^-1 H_b^T + diag(C_N, 0, 0),
    b_b = H_b M_b^-1 (M_b v_b + h f_b) + (e_N, 0, 0) per contact, unknowns per contact (normal,
    t1, t2) as in :mod:`solvers.friction_contact`) solved by NSGS with exact local solves from
    ``guess`` (3r,), in contact order, and measured by that module's residual.

    Returns (r (3r,) impulses in contact order, v+ (n,), the free velocity M^-1 rhs (n,), response
    M_b^-1 H_b^T per island stacked (sum 6 x 3 c_b), W and b stacked (sum (3 c_b)^2, sum 3 c_b),
    per island: sweeps, relative, worst, residual, violation)."""
    r = e_N.shape[0]
    B = bodies.shape[0]
    free = free_velocity(mass, inertia, rhs)
    velocity = free.copy()
    impulse = np.zeros(3 * r)
    total_w = 0
    total_b = 0
    for k in range(B):
        nc = starts[k + 1] - starts[k]
        total_w += 9 * nc * nc
        total_b += 3 * nc
    W_all = np.zeros(total_w)
    b_all = np.zeros(total_b)
    response_all = np.zeros(6 * total_b)
    sweeps = np.zeros(B, np.int64)
    relatives = np.zeros(B)
    worsts = np.zeros(B, np.int64)
    residuals = np.zeros(B)
    violations = np.zeros(B)
    counts = np.zeros(4, np.int64)
    pw = 0
    pb = 0
    for k in range(B):
        c0, c1 = starts[k], starts[k + 1]
        nc = c1 - c0
        body = bodies[k]
        o = 6 * body
        H = np.empty((3 * nc, 6))
        for a in range(nc):
            i = order[c0 + a]
            for j in range(6):
                H[3 * a, j] = N_block[i, j]
                H[3 * a + 1, j] = D_block[i, 0, j]
                H[3 * a + 2, j] = D_block[i, 1, j]
        # response = M_b^-1 H^T (6 x 3nc): translational rows / m, rotational rows I^-1
        response = np.empty((6, 3 * nc))
        rotational = np.linalg.solve(inertia[body], np.ascontiguousarray(H[:, 3:].T))
        for col in range(3 * nc):
            for j in range(3):
                response[j, col] = H[col, j] / mass[body]
                response[3 + j, col] = rotational[j, col]
        W = H @ response
        for i in range(3 * nc):
            for j in range(i + 1, 3 * nc):
                average = 0.5 * (W[i, j] + W[j, i])
                W[i, j] = average
                W[j, i] = average
        bb = H @ free[o : o + 6]
        mul = np.empty(nc)
        rl = np.empty(3 * nc)
        for a in range(nc):
            i = order[c0 + a]
            W[3 * a, 3 * a] += CN[i]
            bb[3 * a] += e_N[i]
            mul[a] = mu[i]
            for j in range(3):
                rl[3 * a + j] = guess[3 * i + j]
        its, relative, _ = _nsgs_kernel(
            W,
            bb,
            mul,
            rl,
            max_sweeps,
            tolerance,
            proximal,
            singular_ratio,
            relaxation,
            phis,
            grid_cos,
            grid_sin,
            counts,
        )
        ul = np.empty(3 * nc)
        relative, worst, residual, violation = _measure_friction_contact(W, bb, mul, rl, ul)
        for a in range(nc):
            i = order[c0 + a]
            for j in range(3):
                impulse[3 * i + j] = rl[3 * a + j]
        for j in range(6):  # v+ = M^-1 rhs + M^-1 H^T r
            s = 0.0
            for i in range(3 * nc):
                s += response[j, i] * rl[i]
            velocity[o + j] = free[o + j] + s
        for i in range(3 * nc):
            b_all[pb + i] = bb[i]
            for j in range(3 * nc):
                W_all[pw + i * 3 * nc + j] = W[i, j]
            for j in range(6):
                response_all[6 * pb + j * 3 * nc + i] = response[j, i]
        pw += 9 * nc * nc
        pb += 3 * nc
        sweeps[k] = its
        relatives[k] = relative
        worsts[k] = worst
        residuals[k] = residual
        violations[k] = violation
    return impulse, velocity, free, response_all, W_all, b_all, sweeps, relatives, worsts, residuals, violations
