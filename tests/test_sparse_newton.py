"""solvers.sparse_newton: the projected Newton method for symmetric PSD bounded LCPs and the
proximal-point loop on a CSR Delassus operator, each judged by the independent check or the
dense solvers' answers."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from solvers import Status, newton_operator, solve
from solvers import library as L
from solvers.friction_contact import solve_friction_contact
from solvers.sparse_measure import csr_arrays, csr_friction_contact_measure, csr_lcp_measure
from solvers.sparse_newton import is_symmetric, projected_newton_csr, proximal_point_csr

from .independent_check import check_answer
from .test_friction_contact import random_bodies


def _lcp_measure(M, q, lo, hi):
    arrays = csr_arrays(sp.csr_matrix(M))
    w, codes = np.empty(q.shape[0]), np.empty(q.shape[0], np.int8)
    return lambda z: csr_lcp_measure(*arrays, q, lo, hi, z, w, codes)[0]


def _symmetric_cases():
    cases = [L.random_spd(n, seed, bounds) for n in (8, 40) for seed in range(3) for bounds in ("lcp", "box", "mixed")]
    cases += [L.random_psd_duplicated(30, seed, 4, bounds) for seed in range(3) for bounds in ("lcp", "box")]
    cases += [L.delassus_rigid_body(contacts, seed) for contacts in (4, 12) for seed in range(2)]
    return cases


@pytest.mark.parametrize("case", _symmetric_cases(), ids=lambda c: c.name)
def test_projected_newton_solves_symmetric_psd_problems(case):
    """Definite, singular (duplicated rows) and rank-6 Delassus problems with one-sided, boxed and
    free variables: converged by the framework's residual, passed by the independent check, and
    the unique answer where there is one."""
    M = sp.csr_matrix(case.M)
    assert is_symmetric(M)
    z = np.zeros(case.q.shape[0])
    steps, relative, converged = projected_newton_csr(M, case.q, case.lo, case.hi, z, 100, 1e-12,
                                                      _lcp_measure(case.M, case.q, case.lo, case.hi))  # fmt: skip
    assert converged, (case.name, steps, relative)
    expected = case.z_expected
    if case.unique and expected is None:  # the unique answer, by the dense pivoting solver
        reference = solve(*case.args)
        assert reference.status == Status.SOLVED
        expected = reference.z
    assert check_answer(*case.args, z, z_expected=expected, unique=case.unique) == []


def test_projected_newton_from_the_solution_takes_at_most_one_step():
    case = L.random_spd(40, 5, "mixed")
    M = sp.csr_matrix(case.M)
    measure = _lcp_measure(case.M, case.q, case.lo, case.hi)
    z = np.zeros(40)
    projected_newton_csr(M, case.q, case.lo, case.hi, z, 100, 1e-13, measure)
    steps, relative, converged = projected_newton_csr(M, case.q, case.lo, case.hi, z.copy(), 100, 1e-13, measure)
    assert converged and steps <= 1


def test_projected_newton_reports_an_unconverged_run_at_its_best_iterate():
    """One iteration on a problem that needs several: not converged, z is the best measured."""
    case = L.random_spd(40, 2, "box")
    measure = _lcp_measure(case.M, case.q, case.lo, case.hi)
    z = np.zeros(40)
    start = measure(z)
    steps, relative, converged = projected_newton_csr(sp.csr_matrix(case.M), case.q, case.lo, case.hi, z, 1, 1e-14,
                                                      measure)  # fmt: skip
    assert steps == 1 and not converged and relative <= start and relative == measure(z)


def test_is_symmetric_tells_the_models_apart():
    assert not is_symmetric(sp.csr_matrix(L.random_p_matrix(10, 0).M))
    assert is_symmetric(sp.csr_matrix(L.random_spd(10, 0).M))
    assert not is_symmetric(sp.csr_matrix(np.ones((2, 3))))


@pytest.mark.parametrize("seed", range(3))
def test_the_operator_from_csr_is_the_operator_from_the_dense_matrix(seed):
    """_Operator.from_csr builds the same pattern and row values as the dense constructor."""
    W, b, mu = random_bodies(20, seed, unique=True)
    W[np.abs(W) < 1e-3] = 0.0  # some structural zeros
    W = 0.5 * (W + W.T)
    dense = newton_operator.Operator(W, None, 0)
    sparse = newton_operator.Operator.from_csr(sp.csr_matrix(W))
    np.testing.assert_array_equal(dense._offsets, sparse._offsets)
    np.testing.assert_array_equal(dense._columns, sparse._columns)
    np.testing.assert_array_equal(dense._rows, sparse._rows)
    np.testing.assert_allclose(newton_operator.contact_rho_csr(sparse), newton_operator.contact_rho(W), rtol=1e-15)


def test_the_sparse_operator_stores_a_zero_diagonal_for_its_shift():
    """A W with zeros on its diagonal (scipy's sparse sum would drop them): both constructors
    store every diagonal entry, and the shift lands on it."""
    W = np.diag([1.0, 0.0, 2.0, 3.0, 0.0, 1.0])
    W[0, 3] = W[3, 0] = 0.5
    shift = np.arange(1.0, 7.0)
    r, b, out = np.ones(6), np.zeros(6), np.empty(6)
    for operator in (newton_operator.Operator(W, None, 0), newton_operator.Operator.from_csr(sp.csr_matrix(W))):
        assert (operator._w_diagonal >= 0).all()
        operator.set_shift(shift)
        np.testing.assert_allclose(operator.velocity(r, b, out), (W + np.diag(shift)) @ r, rtol=0, atol=1e-15)


@pytest.mark.parametrize("unique", [True, False])
@pytest.mark.parametrize("seed", range(3))
def test_proximal_point_on_a_csr_operator_matches_the_dense_solver(seed, unique):
    """The proximal-point loop on W in CSR solves what the dense "prox" method solves (a chain of
    bodies, W nonsingular; all contacts on one body, W of rank 6), by the framework's residual on
    the sparse problem, and the same reactions where the answer is unique."""
    W, b, mu = random_bodies(16, seed, unique=unique)
    Ws = sp.csr_matrix(W)
    arrays = csr_arrays(Ws)
    u = np.empty(b.shape[0])

    def measure(r):
        return csr_friction_contact_measure(*arrays, b, mu, r, u)[0]

    r = np.zeros(b.shape[0])
    steps, relative, converged = proximal_point_csr(Ws, b, mu, r, 1000, 1e-10, measure)
    assert converged and relative <= 1e-10 and steps > 0
    dense = solve_friction_contact(W, b, mu, method="prox", tolerance=1e-10)
    assert dense.status.name == "SOLVED"
    if unique:
        np.testing.assert_allclose(r, dense.r, rtol=0, atol=1e-6 * np.abs(dense.r).max())


@pytest.mark.parametrize("seed", range(5))
def test_projected_search_finds_the_first_minimizer_along_the_arc(seed):
    """_projected_search against a fine grid of f(P(z + t p)) on [0, 1]: the same first local
    minimizer (to the grid's resolution) and no larger f there."""
    from solvers.sparse_newton import _projected_search

    rng = np.random.default_rng(seed)
    n = 30
    A = sp.random(n, n, density=0.15, random_state=seed).toarray()
    K = A @ A.T + 0.05 * np.eye(n)
    q = rng.normal(size=n)
    lo, hi = -rng.uniform(0.1, 1.0, n), rng.uniform(0.1, 1.0, n)
    lo[::5], hi[::7] = -np.inf, np.inf
    z = np.clip(rng.normal(scale=0.5, size=n), lo, hi)
    g = K @ z + q
    p = -3.0 * g  # a long descent step: the arc bends at many bounds before t = 1
    out = np.empty(n)
    t, change = _projected_search(*csr_arrays(sp.csr_matrix(K)), q, lo, hi, z, p, g, out)

    def f(x):
        return 0.5 * x @ K @ x + q @ x

    grid = np.linspace(0.0, 1.0, 20001)
    values = np.array([f(np.clip(z + s * p, lo, hi)) for s in grid])
    rises = np.flatnonzero(np.diff(values) > 0)
    first = grid[rises[0]] if rises.size else 1.0
    np.testing.assert_allclose(out, np.clip(z + t * p, lo, hi), rtol=0, atol=1e-14)
    assert abs(t - first) <= 1e-4 and f(out) <= values[: rises[0] + 1 if rises.size else None].min() + 1e-12
    assert f(out) < f(z) and change == pytest.approx(f(out) - f(z), rel=1e-9)


def _face_sequence(n, seed):
    """Faces (sorted index arrays) of a walk that drops and gains a few variables per step, with
    one jump that changes most of them."""
    rng = np.random.default_rng(seed)
    free = rng.uniform(size=n) < 0.7
    faces = []
    for step in range(12):
        flip = rng.choice(n, size=n // 2 if step == 6 else int(rng.integers(0, 5)), replace=False)
        free[flip] = ~free[flip]
        faces.append(np.flatnonzero(free))
    return faces


@pytest.mark.parametrize("seed", range(3))
def test_face_solver_matches_a_factorization_of_each_face(seed):
    """FaceSolver's bordered Schur complement gives the solution of every face system that a
    factorization of that face gives, on a positive definite and on a singular (duplicated rows,
    shifted) matrix; it factorizes only when a face differs from the base in more than
    ``border`` variables, and every new face with ``border=0``."""
    import scipy.sparse.linalg as spla

    from solvers.sparse_newton import FaceSolver

    for case in (L.random_spd(60, seed, "box"), L.random_psd_duplicated(60, seed, 6, "box")):
        K = sp.csr_matrix(case.M)
        shift = 1e-8 * K.diagonal()
        faces = _face_sequence(60, seed)
        bordered, plain = FaceSolver(K, shift, border=10), FaceSolver(K, shift, border=0)
        rng = np.random.default_rng(seed + 10)
        for free in faces:
            rhs = K[free] @ rng.normal(size=60)  # in the range of the face, as a Newton step's is
            A = (K[free][:, free] + sp.diags(shift[free])).toarray()
            once = spla.spsolve(sp.csc_matrix(A), rhs)  # one solve with the shifted face
            for solver in (bordered, plain):
                x = solver.solve(free, rhs, 1)
                assert np.abs(x - once).max() <= 1e-6 * np.abs(once).max()
                x = solver.solve(free, rhs, 8)  # refined on the residual of the face itself
                scale = np.abs(A).sum(axis=1).max() * np.abs(x).max() + np.abs(rhs).max()
                assert np.abs(K[free][:, free] @ x - rhs).max() <= 1e-12 * scale
        changed = 1 + sum(not np.array_equal(a, b) for a, b in zip(faces, faces[1:]))
        assert plain.factorizations == changed  # a face equal to the last one is not factorized again
        assert 2 <= bordered.factorizations < changed and bordered.column_solves > 0


def test_projected_newton_takes_the_same_steps_with_and_without_the_bordered_solves():
    """The face solver changes the cost of a step, not the step: the same iterations and the
    same converged answer with ``border=0`` (a factorization per face) and the default."""
    case = L.random_psd_duplicated(80, 1, 6, "box")
    M = sp.csr_matrix(case.M)
    measure = _lcp_measure(case.M, case.q, case.lo, case.hi)
    runs = []
    for border in (0, 40):
        z = np.zeros(80)
        steps, relative, converged = projected_newton_csr(M, case.q, case.lo, case.hi, z, 100, 1e-12, measure,
                                                          border=border)  # fmt: skip
        assert converged
        runs.append((steps, z))
    assert runs[0][0] == runs[1][0] and runs[0][0] > 2
    assert check_answer(*case.args, runs[1][1], unique=case.unique) == []


def test_the_submatrix_kernel_is_scipys_fancy_indexing():
    """FaceSolver's blocks K[rows][:, cols] (columns renumbered by their place) are scipy's, entry
    for entry and in the same order, so the factorizations and answers are unchanged by it."""
    from solvers.sparse_cg import face_csr

    rng = np.random.default_rng(3)
    K = sp.random(50, 50, density=0.2, random_state=4, format="csr")
    K = (K + K.T).tocsr()
    K.sort_indices()
    arrays = csr_arrays(K)
    for _ in range(5):
        rows = np.flatnonzero(rng.random(50) < 0.5)
        cols = np.flatnonzero(rng.random(50) < 0.6)
        place = np.full(50, -1, np.int64)
        place[cols] = np.arange(cols.size)
        ptr, idx, val = face_csr(*arrays, rows, place)
        expected = K[rows][:, cols]
        assert np.array_equal(ptr, expected.indptr) and np.array_equal(idx, expected.indices)
        assert np.array_equal(val, expected.data)


def test_projected_newton_measures_where_it_may_have_ended():
    """The framework's measure (costly on a pile: Eq. 30 recomputed) is taken after full steps,
    steps on an unchanged face, every ``measure_every`` iterations and at the last iterate -- not
    at every iteration -- and the answer is the same converged one as when every iterate is
    measured."""
    case = L.random_psd_duplicated(80, 1, 6, "box")
    M = sp.csr_matrix(case.M)
    inner = _lcp_measure(case.M, case.q, case.lo, case.hi)
    answers = []
    for every in (1, 8):
        calls = []

        def measure(z):
            calls.append(1)
            return inner(z)

        z = np.zeros(80)
        steps, relative, converged = projected_newton_csr(M, case.q, case.lo, case.hi, z, 100, 1e-12, measure,
                                                          measure_every=every)  # fmt: skip
        assert converged and relative <= 1e-12 and relative == inner(z)
        answers.append(z)
        if every == 1:
            assert len(calls) == steps + 1
        else:
            assert len(calls) < steps + 1
    assert np.abs(answers[0] - answers[1]).max() <= 1e-9 * np.abs(answers[0]).max()
    assert check_answer(*case.args, answers[1], unique=case.unique) == []
