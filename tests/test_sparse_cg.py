"""solvers.sparse_cg: Jacobi-preconditioned conjugate gradients on the faces of projected Newton for a
symmetric positive definite bounded LCP, against the dense solve, the direct face solves and the
independent check; and the test that picks it on a pile's island (lcpdyn.strategies.sparse_island)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from lcpdyn.strategies.sparse_island import definite_compliance
from solvers import Status, solve
from solvers import library as L
from solvers.sparse_cg import RELATIVE, CGFaceSolver, pcg_csr
from solvers.sparse_measure import csr_arrays, csr_lcp_measure
from solvers.sparse_newton import projected_newton_csr

from .independent_check import check_answer


def _spd(n, seed):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, n))
    return A @ A.T + 0.5 * np.eye(n)


def test_pcg_solves_a_definite_system_to_its_tolerance():
    A, b = _spd(60, 1), np.random.default_rng(2).standard_normal(60)
    x, iterations, ratio = pcg_csr(*csr_arrays(sp.csr_matrix(A)), b, RELATIVE, 500)
    assert ratio <= RELATIVE and 0 < iterations <= 200
    np.testing.assert_allclose(x, np.linalg.solve(A, b), rtol=0, atol=1e-8 * np.abs(np.linalg.solve(A, b)).max())


def test_pcg_stops_on_an_indefinite_face_and_the_face_solver_says_so():
    """A face that is not positive definite (negative curvature) gives None: the caller goes on
    with the direct face solves instead of a wrong direction."""
    A = np.diag([1.0, -1.0, 2.0])
    _, _, ratio = pcg_csr(*csr_arrays(sp.csr_matrix(A)), np.array([1.0, 1.0, 1.0]), RELATIVE, 50)
    assert np.isnan(ratio)
    assert CGFaceSolver(sp.csr_matrix(A)).solve(np.arange(3), np.ones(3)) is None
    assert CGFaceSolver(sp.csr_matrix(A)).solve(np.array([0, 2]), np.ones(2)) is not None  # the definite face


@pytest.mark.parametrize("bounds", ["lcp", "box", "mixed"])
@pytest.mark.parametrize("seed", range(3))
def test_projected_newton_with_cg_faces_gives_the_unique_answer(bounds, seed):
    """On definite bounded LCPs, projected Newton with CG faces converges by the framework's
    residual, passes the independent check and gives the direct faces' (and the pivoting
    solver's) unique answer."""
    case = L.random_spd(40, seed, bounds)
    M = sp.csr_matrix(case.M)
    arrays = csr_arrays(M)
    w, codes = np.empty(40), np.empty(40, np.int8)

    def measure(z):
        return csr_lcp_measure(*arrays, case.q, case.lo, case.hi, z, w, codes)[0]

    answers = []
    for linear in ("cg", "direct"):
        z = np.zeros(40)
        steps, relative, converged = projected_newton_csr(M, case.q, case.lo, case.hi, z, 100, 1e-12, measure,
                                                          linear=linear)  # fmt: skip
        assert converged, (linear, steps, relative)
        answers.append(z)
    reference = solve(*case.args)
    assert reference.status == Status.SOLVED
    assert check_answer(*case.args, answers[0], z_expected=reference.z, unique=True) == []
    np.testing.assert_allclose(answers[0], answers[1], rtol=0, atol=1e-9 * np.abs(answers[1]).max())
    with pytest.raises(ValueError, match="linear must be 'direct' or 'cg'"):
        projected_newton_csr(M, case.q, case.lo, case.hi, np.zeros(40), 1, 1e-12, measure, linear="lu")


def test_the_island_takes_cg_only_where_every_contacts_compliance_is_definite():
    C = np.tile(np.eye(2), (3, 1, 1))
    assert definite_compliance(np.ones(3), C)
    assert not definite_compliance(np.array([1.0, 0.0, 1.0]), C)  # a rigid normal row: K may be singular
    assert not definite_compliance(np.ones(3), np.zeros((3, 2, 2)))  # the box model's rigid friction rows
    sliding = C.copy()
    sliding[0] = [[0.0, 0.0], [0.0, 5.0]]  # the kinetic branch: no compliance along the slip, whose row is at its bound
    assert definite_compliance(np.ones(3), sliding)
    assert definite_compliance(np.ones(3), C, top=1e3) and not definite_compliance(np.ones(3), 1e-4 * C, top=300.0)
