"""One large island of contacts between free rigid bodies (a pile) solved on its sparse Delassus form:
Peiret 2016 Eq. (30) with the velocities eliminated, never assembled dense, for the bounded-LCP models
whose block has two friction rows per contact and no coupling P (regularized, box), judged by the
framework's residual of Eq. (30) itself computed on the sparse problem (:mod:`solvers.sparse_measure`).

With W = B M^-1 B^T over B = [N; F] (and B_G = [N; G]), the island's problem in (h lam_N, x_F) is

    [ N M^-1 N^T + C_N   N M^-1 G^T     ] [ h lam_N ]   [ N v* + e_N ]
    [ F M^-1 N^T         F M^-1 G^T + C ] [ x_F     ] + [ F v* + c   ]  complementary to the bounds,

v+ = v* + M^-1 B_G^T (h lam_N, x_F). Where its matrix is symmetric (F = G and symmetric C: tested on
the model's rows, not on its name; :func:`symmetric_rows`) it is the optimality condition of a
convex quadratic program in the bounds of this pass, solved by Bertsekas' projected Newton method
(:func:`solvers.sparse_newton.projected_newton_csr`); otherwise, or if that does not converge, the
primal-dual active-set iteration alternating with block Gauss–Seidel sweeps over the contacts
(:mod:`solvers.sparse_gauss_seidel`). The friction bounds follow the normal forces that jump as in the
dense step (docs/theory/detected-contacts.md, "Friction bounds"). The model's block is asked for with
D = I over the island's slip rows and the known slips D v and multiplied by the island's D (every model
whose rows of a contact are combinations of that contact's two slip rows gives exactly the block it
gives for the full D)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
from scipy.sparse import bmat, bsr_matrix, csr_matrix

from solvers.sparse_delassus import block_diagonal_csr, contact_rows, delassus_blocks, transformed_csr, transformed_rows
from solvers.sparse_gauss_seidel import active_set_csr, block_gs_csr, nsgs_csr
from solvers.sparse_measure import (
    csr_arrays,
    csr_friction_contact_measure_scaled,
    csr_friction_contact_scales,
    csr_lcp_measure_scaled,
    csr_lcp_scales,
)
from solvers.sparse_newton import projected_newton_csr, proximal_point_csr

from ..detected_contacts import bounds_moved
from ..friction.base import basis_settled
from ..run.errors import step_error

__all__ = [
    "SPARSE_CONTACTS",
    "DENSE_LIMIT",
    "SparseSettings",
    "SparseAnswer",
    "answer_codes",
    "body_matrices",
    "contact_friction",
    "definite_compliance",
    "dense_fallback_allowed",
    "island_delassus",
    "solve_sparse_coulomb",
    "solve_sparse_island",
    "symmetric_rows",
    "sparse_applies",
    "two_rows",
]

CHUNK = 32  #: contacts per call of a friction model's block (its matrices are dense in them)
SPARSE_CONTACTS = 64
"""An island (or a whole step) of more detected contacts than this, between free bodies (no bilateral
row, no declared contact), is solved on its sparse Delassus form (:func:`sparse_applies`)."""
DENSE_LIMIT = 2000
"""Where the sparse solve of an island fails, its dense Eq. (30) is solved instead (a recorded
fallback) up to this many unknowns; beyond, the step stops with the island named."""


@dataclass(frozen=True)
class SparseSettings:
    """The sparse island solve's limits: ``newton_iterations`` of projected Newton, ``max_sweeps``
    Gauss–Seidel sweeps (measured every ``check_every``), ``proximal_iterations`` outer iterations
    of the exact cone's proximal-point Newton, the tolerance of the framework's relative residual,
    and the friction-bound passes (``bound_passes``, ``bound_change``); ``bounded``: a bounded-LCP
    model's block has two friction rows per contact without P (else its islands stay dense);
    ``basis_passes``: the model's passes over its static basis (the regularized model's cone)."""

    tolerance: float
    bound_passes: int = 2
    bound_change: float = 0.5
    newton_iterations: int = 500
    max_sweeps: int = 2000
    check_every: int = 10
    proximal_iterations: int = 50
    bounded: bool = True
    basis_passes: int = 0


@dataclass(frozen=True, eq=False)
class SparseAnswer:
    """The island's answer: ``v`` v+ (n_g,), ``normal`` h lam_N (c,), ``tangential`` (c, 2) the
    friction impulse along (t1, t2) (N s), ``x_F`` the model's friction unknowns and their bounds
    ``lo``, ``hi``, ``kinetic`` (c,) the regularized model's branch; ``iterations``, the framework's
    ``relative`` residual of Eq. (30), ``converged`` (relative <= tolerance), ``methods`` tried;
    ``bound_normal`` (c,) the lam_N the last pass's friction bounds were taken from and
    ``bound_passes`` the bound passes taken (what a second solve of the step goes on from)."""

    v: np.ndarray
    normal: np.ndarray
    tangential: np.ndarray
    x_F: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    kinetic: np.ndarray
    iterations: int
    relative: float
    converged: bool
    methods: str
    bound_normal: np.ndarray | None = None
    bound_passes: int = 0


def sparse_applies(sim, bilateral_rows: int, contacts: np.ndarray, declared: int) -> bool:
    """Whether one part of a step with detected contacts (``contacts``: its indices among the
    ``declared`` then detected contacts, sorted) goes to the sparse solve: the simulation allows it
    (``sim._sparse_settings``: colliders, ``sparse`` not False; the exact cone, or a model of
    two friction rows per contact without P), the part has no bilateral row and no declared contact,
    and more than :data:`SPARSE_CONTACTS` contacts."""
    settings = sim._sparse_settings
    return (
        settings is not None
        and (sim.coulomb or settings.bounded)
        and bilateral_rows == 0
        and contacts.size > SPARSE_CONTACTS
        and contacts[0] >= declared
    )


def answer_codes(answer: SparseAnswer) -> np.ndarray:
    """Active-set codes of an island's answer in the layout of Eq. (30) (velocities basic, then
    per contact its normal unknown, then its two friction unknowns): a warm start for the next step."""
    n, c = answer.v.shape[0], answer.normal.shape[0]
    codes = np.zeros(n + 3 * c, np.int8)
    codes[n : n + c] = np.where(answer.normal > 0.0, 0, -1)
    width = 1e-12 * np.maximum(np.abs(answer.lo), np.abs(answer.hi))
    codes[n + c :] = np.where(answer.x_F <= answer.lo + width, -1, np.where(answer.x_F >= answer.hi - width, 1, 0))
    return codes


def dense_fallback_allowed(sim, state, part, why: str, answer_finite: bool = True) -> bool:
    """Whether an island whose sparse solve failed (``why``: the methods tried and the residual
    they reached) goes to its dense fallback: True within :data:`DENSE_LIMIT` unknowns (beyond it
    the dense matrix and pivoting would take minutes); beyond it False under
    ``on_unsolved="flag"`` (the sparse answer, if ``answer_finite``, is kept and the step is marked
    not solved), else the step's error."""
    size = part.columns.size + 3 * part.contacts.size
    if size <= DENSE_LIMIT:
        return True
    if sim.on_unsolved == "flag" and answer_finite:
        return False
    raise step_error(
        state,
        f"the sparse solve of an island of {part.contacts.size} detected contacts did not converge "
        f"({why}) and its dense fallback ({size} unknowns) exceeds DENSE_LIMIT = {DENSE_LIMIT} "
        "(on_unsolved='flag' keeps such steps, marked)",
    )


def two_rows(model, h) -> bool:
    """Whether ``model``'s block has two friction rows per contact and no P (the sparse path's
    contact-major blocks of three unknowns), probed on one contact."""
    probe = model.block(
        np.eye(2), np.zeros(2), h, np.ones(1), np.ones(1), np.zeros((1, 3)), np.array([[[1.0, 0, 0], [0, 1.0, 0]]]),
        mu_static=np.ones(1),
    )  # fmt: skip
    return probe.F.shape[0] == 2 and probe.P is None


def body_matrices(mass, inertia, inverse_inertia):
    """(M^-1, M) of free rigid bodies (masses (nb,), inertias and their inverses (nb, 3, 3)) as
    block-diagonal CSR matrices over their six velocities each."""
    nb = mass.shape[0]
    inverse = np.zeros((nb, 6, 6))
    full = np.zeros((nb, 6, 6))
    diagonal = np.arange(3)
    inverse[:, diagonal, diagonal] = 1.0 / mass[:, None]
    inverse[:, 3:, 3:] = inverse_inertia
    full[:, diagonal, diagonal] = mass[:, None]
    full[:, 3:, 3:] = inertia
    blocks = np.arange(nb + 1)
    return (bsr_matrix((inverse, blocks[:-1], blocks), shape=(6 * nb, 6 * nb)).tocsr(),
            bsr_matrix((full, blocks[:-1], blocks), shape=(6 * nb, 6 * nb)).tocsr())  # fmt: skip


def contact_friction(model, slips, h, mu, mu_static, normal_force, friction_force, tangent, switches=None,
                     basis_force=None):  # fmt: skip
    """The model's rows per contact, for a model of two friction rows per contact without P
    (:func:`two_rows`), asked for with D = I over the contacts' slip rows in chunks of
    :data:`CHUNK` contacts (a contact's rows are combinations of its own two slip rows, so they
    are the same as for the full D, multiplied by it afterwards): (F, G, C (c, 2, 2) each
    contact's maps of its two slip rows and its compliance, c, lo, hi (2c,), basis (c, 2, 2),
    kinetic (c,)). A ValueError names the model if its rows of one contact reach another
    contact's slip rows."""
    c = mu.shape[0]
    out = [np.empty((c, 2, 2)) for _ in range(3)]
    vectors = [np.empty(2 * c) for _ in range(3)]
    basis, kinetic = np.empty((c, 2, 2)), np.empty(c, bool)
    for a in range(0, c, CHUNK):
        b = min(c, a + CHUNK)
        k = b - a
        extra = {} if switches is None else {name: value[a:b] for name, value in switches.items()}
        if basis_force is not None:
            extra["basis_force"] = basis_force[a:b]
        block = model.block(
            np.eye(2 * k), slips[2 * a : 2 * b], h, mu[a:b], normal_force[a:b], friction_force[a:b], tangent[a:b],
            mu_static=mu_static[a:b], **extra,
        )  # fmt: skip
        if block.P is not None and np.any(block.P):
            raise ValueError(f"friction model {model.name!r}: its block has a coupling P, which the sparse path lacks")
        for target, matrix in zip(out, (block.F, block.G, block.C)):
            matrix = np.asarray(matrix, np.float64)
            if matrix.shape != (2 * k, 2 * k):
                raise ValueError(f"friction model {model.name!r}: a block of shape {matrix.shape}, expected "
                                 f"{(2 * k, 2 * k)} for {k} contacts of two friction rows")  # fmt: skip
            blocks = matrix.reshape(k, 2, k, 2)
            diagonal = blocks[np.arange(k), :, np.arange(k), :]
            if np.count_nonzero(matrix) != np.count_nonzero(diagonal):
                raise ValueError(f"friction model {model.name!r}: a contact's friction rows reach another "
                                 "contact's slip rows, which the sparse path lacks")  # fmt: skip
            target[a:b] = diagonal
        for target, vector in zip(vectors, (block.c, block.lo, block.hi)):
            target[2 * a : 2 * b] = vector
        basis[a:b], kinetic[a:b] = block.basis, block.kinetic
    return (*out, *vectors, basis, kinetic)


def _renew_rows(rows, renewed, model, slips, h, mu, mu_static, normal_force, friction_force, tangent, switches,
                basis_force):  # fmt: skip
    """:func:`contact_friction`'s ``rows`` with the contacts ``renewed`` (indices) asked for again
    (their lam_N changed; every other input is the same). The same numbers as asking for all:
    contact_friction has checked that each contact's rows read its own slip rows alone."""
    if renewed.size == 0:
        return rows
    two = np.stack([2 * renewed, 2 * renewed + 1], axis=1).reshape(-1)
    extra = None if switches is None else {name: np.asarray(value)[renewed] for name, value in switches.items()}
    fresh = contact_friction(
        model, slips[renewed].reshape(-1), h, mu[renewed], mu_static[renewed], normal_force[renewed],
        friction_force[renewed], tangent[renewed], extra, None if basis_force is None else basis_force[renewed],
    )  # fmt: skip
    c = rows[-1].shape[0]  # kinetic (c,); c, lo, hi are per friction row (2c,), the rest per contact
    out = []
    for old, new in zip(rows, fresh):
        old = old.copy()
        old[two if old.shape[0] == 2 * c else renewed] = new
        out.append(old)
    return tuple(out)


def _key(H, Minv):
    """A fingerprint of an island's rows and masses: its Delassus operator is built once a step."""
    digest = hashlib.blake2b(digest_size=16)
    for array in (H.indptr, H.indices, H.data, Minv.data):
        digest.update(np.ascontiguousarray(array).view(np.uint8))
    return (H.shape, digest.hexdigest())


def island_delassus(H, Minv, cache=None):
    """(bodies (c, 2), rows (c, 2, 3, 6), W's block rows (ptr, index, blocks)) of an island's rows H
    (3c, 6 nb) CSR and its block-diagonal M^-1 (:mod:`solvers.sparse_delassus`); ``cache`` a dict
    (the step's, ``delassus`` of :class:`lcpdyn.step_work.StepWork`) that keeps them for a second solve of
    the same rows."""
    key = _key(H, Minv) if cache is not None else None
    if key is not None and key in cache:
        return cache[key]
    c, nb = H.shape[0] // 3, H.shape[1] // 6
    indptr, indices, data = csr_arrays(H)
    bodies, rows, ok = contact_rows(indptr, indices, data, c)
    if not ok:
        raise ValueError("a detected contact's rows reach more than two bodies")
    blocks = Minv.tobsr(blocksize=(6, 6))
    blocks.sum_duplicates()
    if not (np.array_equal(blocks.indptr, np.arange(nb + 1)) and np.array_equal(blocks.indices, np.arange(nb))):
        raise ValueError("the island's M^-1 is not block-diagonal over its bodies' six velocities")
    inverse = np.ascontiguousarray(blocks.data, dtype=np.float64)
    found = (bodies, rows, delassus_blocks(bodies, rows, inverse, nb))
    if cache is not None:
        cache.clear()  # one island's at a time: a step's islands are solved one after the other
        cache[key] = found
    return found


def symmetric_rows(F, G, C, tolerance: float = 1e-12) -> bool:
    """Whether the pass's matrix K = T W T'^T + C (T = diag(1, F_i), T' = diag(1, G_i), W symmetric
    bit for bit) is symmetric: each contact's friction rows F_i equal its force columns G_i and its
    compliance C_i is symmetric, to ``tolerance`` of their largest entry -- tested on the model's
    rows, not on its name, and without forming K - K^T."""
    top = max(np.abs(F).max(initial=0.0), np.abs(G).max(initial=0.0))
    if np.abs(F - G).max(initial=0.0) > tolerance * top:
        return False
    return bool(np.abs(C - C.transpose(0, 2, 1)).max(initial=0.0) <= tolerance * np.abs(C).max(initial=0.0))


CG_SIZE = 10_000
"""Conjugate gradients solve a pass's faces only on islands of more unknowns than this: on the compliant
500-sphere pile (4,458 unknowns) sparse LU was faster (52-58 against 69-73 ms a step), on 2,000
spheres (~18,000) CG (1.07-1.35 against 1.27-1.62 s; two interleaved runs each, the machine loaded);
the crossover lies between, not measured closer."""
CG_CONDITION = 1e3
"""Conjugate gradients solve a pass's faces where the compliance bounds K's condition number by this
(:func:`definite_compliance`): ~1e2 CG iterations a face on the compliant 500-sphere pile."""


def definite_compliance(C_N, C, top=None) -> bool:
    """Whether the island's compliance makes K = T W T'^T + C positive definite on the faces
    projected Newton meets (C_N (c,) the normal rows', C (c, 2, 2) the friction rows', symmetric):
    every normal row compliant, and each contact's friction compliance either definite (the
    bristles' static branch) or singular only along a sliding contact's slip (the kinetic branch,
    diag(0, 1/(b_mu h)): that row sits at its bound while it slides). With ``top`` (the largest
    diagonal entry of T W T'^T) every positive eigenvalue must also be at least 1 / :data:`CG_CONDITION` of it
    (the stiff bristles of k_T = 1e10 are not: 1e-4 against Delassus entries of ~300). The faces are
    then solved by conjugate gradients (:mod:`solvers.sparse_cg`), which report a face they cannot
    solve (the direct solves take over)."""
    trace, det = C[:, 0, 0] + C[:, 1, 1], C[:, 0, 0] * C[:, 1, 1] - C[:, 0, 1] * C[:, 1, 0]
    root = np.sqrt(np.maximum(trace * trace - 4.0 * det, 0.0))
    low, high = 0.5 * (trace - root), 0.5 * (trace + root)  # the eigenvalues of each C_i
    floor = 0.0 if top is None else top / CG_CONDITION
    if not (C_N.size and np.all(C_N > 0.0) and C_N.min() >= floor and np.all(high >= floor) and np.all(high > 0.0)):
        return False
    return bool(np.all((low >= floor) | (np.abs(low) <= 1e-12 * high)))


def _maps(F):
    """(c, 3, 3) per contact diag(1, F_i): the normal row kept, the slip rows mapped by F_i."""
    T = np.zeros((F.shape[0], 3, 3))
    T[:, 0, 0] = 1.0
    T[:, 1:, 1:] = F
    return T


def solve_sparse_island(
    model, H, Minv, M, v_free, rhs, e_N, C_N, slips, h, mu, mu_static, normal_force, friction_force, tangent,
    normal_start, friction_start, pair, settings: SparseSettings, switches=None, cache=None,
) -> SparseAnswer:  # fmt: skip
    """The island's Eq. (30) on the sparse Delassus form (module docstring). H (3c, n_g) CSR: per
    contact its normal, t1 and t2 rows over the island's velocities (six per body); M^-1, M
    (n_g, n_g) CSR, block-diagonal; v_free v* (n_g,) and rhs M v + h f (n_g,); e_N (c,) and C_N (c,)
    the normal rows' compliance (0 for a rigid contact, :mod:`lcpdyn.compliance`); slips (c, 2)
    D v at the step's start; mu, mu_static (c,); normal_force (c,) the lagged lam_N the bounds start
    from, friction_force (c, 3) the previous world friction force (the bristle state); tangent
    (c, 2, 3); normal_start (c,) and friction_start (c, 2) the warm start (h lam_N and the friction
    impulse along t1, t2); pair (c, 2) the contacts' bodies (the patch rule of the bound passes);
    ``switches`` a switch inside the step for the model's block (:func:`contact_friction`), or
    None; ``cache`` the step's dict for W (:func:`island_delassus`). W = H M^-1 H^T is built once;
    each pass's matrix is W with each contact's rows and columns mapped by its friction rows
    (:func:`solvers.sparse_delassus.transformed_csr`), in contact-major order (h lam_N_i, then
    contact i's two friction unknowns). With ``settings.basis_passes`` (the regularized model's
    cone) the island is solved again with the static basis and the bounds' lam_N from the last
    pass, as the dense step does, until a pass settles (:func:`lcpdyn.friction.base.basis_settled`);
    then the bound passes follow."""
    c = H.shape[0] // 3
    n = H.shape[1]
    bodies, rows, (w_ptr, w_index, w_blocks) = island_delassus(H, Minv, cache)
    Hv = (H @ v_free).reshape(c, 3)
    normal_force = normal_force.copy()
    z = np.zeros(3 * c)  # per contact: h lam_N, then its two friction unknowns
    z[0::3] = np.maximum(normal_start, 0.0)
    iterations, relative, converged, symmetric = 0, np.inf, False, False
    starts = np.arange(0, 3 * c + 1, 3)
    passes, passed, extra = 1 + settings.basis_passes, 0, 0
    basis_force, tangential = None, friction_start  # the friction impulse along t1, t2 to start from
    matrices = None  # the last pass's rows and what was built from them
    friction_rows, renewed = None, None  # the last pass's contact_friction, and the contacts a bound pass renews
    while True:
        if renewed is None:
            friction_rows = contact_friction(
                model, slips.reshape(-1), h, mu, mu_static, normal_force, friction_force, tangent, switches, basis_force
            )
        else:  # a bound pass: only the renewed contacts' lam_N changed, and a contact's rows are its own
            friction_rows = _renew_rows(friction_rows, renewed, model, slips, h, mu, mu_static, normal_force,
                                        friction_force, tangent, switches, basis_force)  # fmt: skip
        F1, G1, C1, cvec, lo, hi, basis, kinetic = friction_rows
        if tangential is not None:  # the friction impulse in this pass's row basis (columns of basis)
            warm_T = np.einsum("kji,kj->ki", basis, tangential)
            z[1::3], z[2::3] = warm_T[:, 0], warm_T[:, 1]
            tangential = None
        if matrices is None or not all(np.array_equal(a, b) for a, b in zip((F1, G1, C1), matrices[0])):
            # a new block (the first pass, a basis pass): K and Eq. (30) built anew; a bound pass
            # changes only lo, hi (and c), and keeps them
            T, TG, CC = _maps(F1), _maps(G1), np.zeros((c, 3, 3))
            CC[:, 0, 0] = C_N
            CC[:, 1:, 1:] = C1
            K_cm = csr_matrix(transformed_csr(w_ptr, w_index, w_blocks, T, TG, CC)[::-1], shape=(3 * c, 3 * c))
            B = csr_matrix(transformed_rows(bodies, rows, T)[::-1], shape=(3 * c, n))
            Bt = csr_matrix(transformed_rows(bodies, rows, TG)[::-1], shape=(3 * c, n)).T.tocsr()
            # the acceptance: Eq. (30) itself, (v+, then per contact h lam_N and x_F), v+ recovered exactly
            Cb = csr_matrix(block_diagonal_csr(CC)[::-1], shape=(3 * c, 3 * c))
            K30 = bmat([[M, -Bt], [B, Cb]], format="csr")
            Tq = np.einsum("kab,kb->ka", T, Hv)  # B v*, contact-major
            symmetric = symmetric_rows(F1, G1, C1)
            top = (K_cm.diagonal() - np.diagonal(CC, axis1=1, axis2=2).reshape(-1)).max(initial=0.0)  # T W T^T's
            definite = symmetric and 3 * c > CG_SIZE and definite_compliance(C_N, C1, top)
            matrices = ((F1, G1, C1), Bt, K_cm, csr_arrays(K_cm), symmetric, csr_arrays(K30), Tq, definite)
        _, Bt, K_cm, (indptr, indices, data), symmetric, (k_ptr, k_idx, k_data), Tq, definite = matrices
        shift = np.column_stack([e_N, cvec.reshape(c, 2)])  # (e_N, c) per contact
        q_cm = (Tq + shift).reshape(-1)
        lo_cm = np.column_stack([np.zeros(c), lo.reshape(c, 2)]).reshape(-1)
        hi_cm = np.column_stack([np.full(c, np.inf), hi.reshape(c, 2)]).reshape(-1)
        z = np.clip(z, lo_cm, hi_cm)
        q30 = np.concatenate([-rhs, shift.reshape(-1)])
        lo30 = np.concatenate([np.full(n, -np.inf), lo_cm])
        hi30 = np.concatenate([np.full(n, np.inf), hi_cm])
        w30, codes = np.empty(q30.shape[0]), np.empty(q30.shape[0], np.int8)
        scales30 = csr_lcp_scales(k_ptr, k_idx, k_data, q30, lo30, hi30)  # the problem's own: once a pass

        def full(x, Bt=Bt):
            return np.concatenate([v_free + Minv @ (Bt @ x), x])

        def measure(x, k_ptr=k_ptr, k_idx=k_idx, k_data=k_data, q30=q30, lo30=lo30, hi30=hi30, full=full,
                    scales30=scales30):  # fmt: skip
            return csr_lcp_measure_scaled(k_ptr, k_idx, k_data, q30, lo30, hi30, full(x), w30, codes, *scales30)[0]

        converged, sweeps = False, 0
        if symmetric:  # regularized, box: a convex QP for these bounds; f decreases every iteration
            for linear in ("cg", "direct") if definite else ("direct",):  # CG short of its tolerance: LU
                steps, relative, converged = projected_newton_csr(
                    K_cm, q_cm, lo_cm, hi_cm, z, settings.newton_iterations, settings.tolerance, measure, linear=linear
                )
                iterations += steps
                if converged:
                    break
        while not converged:  # active sets, smoothed by Gauss–Seidel sweeps where they cycle
            steps, relative, converged = active_set_csr(K_cm, q_cm, lo_cm, hi_cm, z, 8, settings.tolerance, measure)
            iterations += steps
            if converged or sweeps >= settings.max_sweeps:
                break
            done, relative, converged = block_gs_csr(
                indptr, indices, data, q_cm, lo_cm, hi_cm, starts, z, min(50, settings.max_sweeps - sweeps),
                settings.check_every, settings.tolerance, measure,
            )  # fmt: skip
            sweeps += done
            iterations += done
        if not converged:
            break
        latest = np.maximum(z[0::3], 0.0) / h
        passed += 1
        if settings.basis_passes:  # every further pass takes its static basis from this one's force
            along = np.einsum("kba,kb->ka", G1, z.reshape(c, 3)[:, 1:])
            following = (along[:, 0, None] * tangent[:, 0] + along[:, 1, None] * tangent[:, 1]) / h
            used = friction_force if basis_force is None else basis_force
            if passed < passes and basis_settled(
                following, used, latest, normal_force, mu_static, settings.tolerance, kinetic
            ):  # the basis passes end once one settled
                passed = passes
            basis_force, tangential = following, along
            if passed < passes:
                normal_force = latest.copy()
                continue
        if extra >= settings.bound_passes:
            break
        friction = z.reshape(c, 3)[:, 1:]
        moved = bounds_moved(normal_force, latest, settings.bound_change, friction, lo_cm.reshape(c, 3)[:, 1:],
                             hi_cm.reshape(c, 3)[:, 1:], pair)  # fmt: skip
        if not moved.any():
            break
        extra += 1
        normal_force = np.where(moved, latest, normal_force)  # only where it matters
        # with the model's basis passes every pass also moves the static basis of all contacts
        renewed = None if settings.basis_passes else np.flatnonzero(moved)
    x = full(z)
    x_F = z.reshape(c, 3)[:, 1:].reshape(-1)
    return SparseAnswer(
        v=x[:n], normal=z[0::3].copy(), tangential=np.einsum("kba,kb->ka", G1, x_F.reshape(c, 2)), x_F=x_F, lo=lo,
        hi=hi, kinetic=np.asarray(kinetic, bool), iterations=iterations, relative=float(relative),
        converged=converged,
        methods=("projected Newton (CG), active set" if definite else "projected Newton, active set") if symmetric
        else "active set",
        bound_normal=normal_force, bound_passes=extra,
    )  # fmt: skip


def solve_sparse_coulomb(H, Minv, v_free, e_N, C_N, mu, start, settings: SparseSettings):
    """The exact cone's island on its sparse Delassus operator W = H M^-1 H^T + diag(C_N, 0, 0)
    (C_N (c,) the normal rows' compliance, 0 for a rigid contact), u = W r + b with
    b = H v* + (e_N, 0, 0) per contact: NSGS from ``start`` (c, 3) (the previous impulses in this
    step's contact frames; a resting pile converges in a few sweeps, a pour in a few hundred), then,
    where it stalls, the proximal-point loop around the semismooth Alart–Curnier Newton with sparse
    LU from its iterate (:func:`solvers.sparse_newton.proximal_point_csr`), judged by the
    framework's friction-contact residual computed on the sparse problem. Returns (r (c, 3),
    sweeps, relative residual, converged)."""
    c = H.shape[0] // 3
    _, _, (ptr, index, blocks) = island_delassus(H, Minv)
    identity = np.tile(np.eye(3), (c, 1, 1))
    compliance = np.zeros((c, 3, 3))
    compliance[:, 0, 0] = C_N
    indptr, indices, data = transformed_csr(ptr, index, blocks, identity, identity, compliance)
    W = csr_matrix((data, indices, indptr), shape=(3 * c, 3 * c))  # symmetric bit for bit
    b = H @ v_free
    b[0::3] += e_N
    r = np.array(start, np.float64).reshape(-1)
    r[0::3] = np.maximum(r[0::3], 0.0)
    u = np.empty(3 * c)
    scales = csr_friction_contact_scales(indptr, indices, data, b)  # the problem's own: once a solve

    def measure(x):
        return csr_friction_contact_measure_scaled(indptr, indices, data, b, mu, x, u, *scales)[0]

    sweeps, relative, converged = nsgs_csr(
        indptr, indices, data, b, mu, r, settings.max_sweeps, settings.check_every, settings.tolerance, measure
    )
    if not converged and settings.proximal_iterations:
        steps, relative, converged = proximal_point_csr(
            W, b, mu, r, settings.proximal_iterations, settings.tolerance, measure
        )
        sweeps += steps
    return r.reshape(c, 3), sweeps, float(relative), converged
