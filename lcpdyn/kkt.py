"""The bilateral (KKT) system of a step, solved with the block-diagonal mass matrix.

The exact-cone path of :mod:`lcpdyn.stepper` eliminates the velocities and the bilateral
multipliers of Peiret 2016 Eq. (30) before the friction-contact solver sees the contacts:

    [ M  -A^T ] [ x_v ]   [ r_v ]
    [ A   C_A ] [ x_l ] = [ r_u ]        (n + m unknowns, one or many right-hand sides)

with M = diag(m_b I3, I_b) (Eq. 1, constant, per body), A (m, n) the rows a_j^T v = u_j of
Eq. (2) and C_A = diag(c_j) >= 0 the compliance of compliant rows (0 on rigid ones; see
"Compliant bilateral rows" in :mod:`lcpdyn.stepper`). :func:`solve_kkt` returns x for
right-hand sides (n + m, k):

* small systems (n + m <= :data:`SPARSE_SIZE`) -- one dense LU of the KKT matrix (LAPACK);
* larger ones -- the Schur complement through the blocks of M:
  S = A M^-1 A^T + C_A (m x m, sparse: rows couple only through shared bodies, so a chain of joints
  gives a block-tridiagonal S), factorized once by a sparse LU (SuperLU, :mod:`scipy.sparse`),
  x_l = S^-1 (r_u - A M^-1 r_v), x_v = M^-1 (r_v + A^T x_l). The cost grows with the number of
  nonzeros of A and of S's factors instead of with (n + m)^3.

Both need independent rows (A of full row rank: S positive definite); a singular system raises
:class:`numpy.linalg.LinAlgError` from either branch, with the same message.

Differences from the paper: none in the equations; Peiret solves Eq. (30) whole.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

__all__ = ["SPARSE_SIZE", "solve_kkt"]

SPARSE_SIZE = 200  #: n + m above which the Schur complement is factorized sparsely


def solve_kkt(
    mass: np.ndarray, inertia: np.ndarray, A: np.ndarray, right: np.ndarray, compliance: np.ndarray | None = None
) -> np.ndarray:
    """x (n + m, k) of the KKT system above for ``mass`` (nb,), ``inertia`` (nb, 3, 3) the
    blocks of M, ``A`` (m, 6 nb; dense or a SciPy sparse matrix), ``right`` (n + m, k) and
    ``compliance`` C_A (m,) (None: rigid rows)."""
    n, m = 6 * mass.shape[0], A.shape[0]
    compliance = np.zeros(m) if compliance is None else compliance
    if n + m <= SPARSE_SIZE:
        A = A.toarray() if sp.issparse(A) else A
        KKT = np.zeros((n + m, n + m))
        for b in range(mass.shape[0]):
            KKT[6 * b : 6 * b + 3, 6 * b : 6 * b + 3] = mass[b] * np.eye(3)
            KKT[6 * b + 3 : 6 * b + 6, 6 * b + 3 : 6 * b + 6] = inertia[b]
        KKT[:n, n:] = -A.T
        KKT[n:, :n] = A
        KKT[n:, n:] = np.diag(compliance)
        try:
            return np.linalg.solve(KKT, right)
        except np.linalg.LinAlgError as exc:
            raise np.linalg.LinAlgError(_SINGULAR) from exc
    inverse = _inverse_mass(mass, inertia)  # block-diagonal CSR
    A_sparse = A.tocsr() if sp.issparse(A) else sp.csr_matrix(A)
    MinvAT = inverse @ A_sparse.T.tocsc()  # (n, m), sparse
    S = (A_sparse @ MinvAT + sp.diags(compliance)).tocsc()
    free = inverse @ right[:n]  # M^-1 r_v
    try:
        lu = spla.splu(S)
    except RuntimeError as exc:  # SuperLU: "Factor is exactly singular"
        raise np.linalg.LinAlgError(_SINGULAR) from exc
    multipliers = lu.solve(np.ascontiguousarray(right[n:] - A_sparse @ free))
    if not np.all(np.isfinite(multipliers)):
        raise np.linalg.LinAlgError(_SINGULAR)
    return np.concatenate([free + MinvAT @ multipliers, multipliers])


_SINGULAR = "the bilateral system [M -A^T; A 0] is singular (dependent bilateral rows)"


def _inverse_mass(mass, inertia):
    """M^-1 as a sparse block-diagonal matrix (1/m_b I3, I_b^-1 per body)."""
    nb = mass.shape[0]
    blocks = np.zeros((nb, 6, 6))
    blocks[:, [0, 1, 2], [0, 1, 2]] = (1.0 / mass)[:, None]
    blocks[:, 3:, 3:] = np.linalg.inv(inertia)
    return sp.bsr_matrix((blocks, np.arange(nb), np.arange(nb + 1)), shape=(6 * nb, 6 * nb)).tocsr()
