"""Solver correctness on the shared problem library: every success is checked by an
independent residual computed here (not by solvers.result), closed forms where known, and
agreement between methods where the solution is unique."""

import numpy as np
import pytest

from solvers import AT_LOWER, AT_UPPER, BASIC, FIXED, SolverFailure, Status, solve
from solvers import library as L
from solvers.lemke import lemke as lemke_kernel

OWN_METHODS = ("judice-pires", "lemke", "pgs")
TOL = 1e-9


def independent_check(case, result, tol=TOL):
    """Natural-map residual recomputed from scratch, relative to 1 + |q| + |M||z|."""
    M, q, lo, hi = case.args
    z = result.z
    w = M @ z + q
    np.testing.assert_allclose(result.w, w, rtol=0, atol=1e-12 * (1 + np.abs(w).max(initial=0)))
    scale = 1 + np.abs(q).max(initial=0) + np.abs(M).sum(axis=1).max(initial=0) * np.abs(z).max(initial=0)
    natural = np.abs(z - np.clip(z - w, lo, hi)).max(initial=0)
    violation = np.maximum(np.maximum(lo - z, z - hi), 0).max(initial=0)
    assert natural <= tol * scale, f"{case.name}: natural-map residual {natural:.3g} (scale {scale:.3g})"
    assert violation <= tol * scale, f"{case.name}: bound violation {violation:.3g}"


def solve_ok(case, method, **options):
    result = solve(*case.args, method=method, **options)
    assert result.success, f"{case.name} with {method}: {result.status.name}: {result.message}"
    independent_check(case, result)
    return result


@pytest.mark.parametrize("method", OWN_METHODS)
@pytest.mark.parametrize("case", L.hand_cases(), ids=lambda c: c.name)
def test_hand_cases(case, method):
    result = solve_ok(case, method)
    atol = 1e-12 if method != "pgs" else 1e-8
    np.testing.assert_allclose(result.z, case.z_expected, rtol=0, atol=atol)


@pytest.mark.parametrize("method", ["judice-pires", "lemke"])
@pytest.mark.parametrize("n", [3, 6, 10])
def test_murty_example(n, method):
    case = L.murty(n)
    result = solve_ok(case, method)
    np.testing.assert_array_equal(result.z, case.z_expected)
    if method == "lemke":
        # the front door equilibrates (solvers.scaling), which shortens Murty's path; the kernel on
        # the raw data is the textbook method: 2^n pivots, counting z0's entry
        _, code, pivots = lemke_kernel(case.M, case.q, 10**6, 1e-12)
        assert code == 0 and pivots == 2**n
        assert result.iterations <= 2**n
    else:
        assert result.iterations <= 2 * n + 1


def test_lemke_pivot_limit_on_murty_is_reported():
    assert solve(*L.murty(12).args, method="lemke").iterations > 1
    result = solve(*L.murty(12).args, method="lemke", max_pivots=1)
    assert result.status == Status.MAX_ITERATIONS and not result.success
    with pytest.raises(SolverFailure, match="MAX_ITERATIONS"):
        solve(*L.murty(12).args, method="lemke", max_pivots=1, raise_on_failure=True)


SPD = [
    L.random_spd(n, seed, bounds) for n in (5, 30, 100, 300) for seed in (0, 1) for bounds in ("lcp", "box", "mixed")
]


@pytest.mark.parametrize("case", SPD, ids=lambda c: c.name)
def test_random_spd_all_methods_agree(case):
    reference = solve_ok(case, "judice-pires")
    for method in ("lemke", "pgs"):
        if method == "lemke" and case.q.size > 100:
            continue  # O(n^3) tableau pivots: covered by n <= 100 and by the Siconos check
        other = solve_ok(case, method)
        atol = 1e-8 if method != "pgs" else 1e-6
        np.testing.assert_allclose(other.z, reference.z, rtol=0, atol=atol * (1 + np.abs(reference.z).max()))


P_MATRICES = [
    L.random_p_matrix(n, seed, bounds) for n in (10, 40, 120) for seed in (0, 1, 2) for bounds in ("lcp", "mixed")
]


@pytest.mark.parametrize("case", P_MATRICES, ids=lambda c: c.name)
def test_nonsymmetric_p_matrices(case):
    reference = solve_ok(case, "judice-pires")
    assert reference.info["regularization"] is None  # solved by pivoting alone
    lemke = solve_ok(case, "lemke")
    np.testing.assert_allclose(lemke.z, reference.z, rtol=0, atol=1e-8 * (1 + np.abs(reference.z).max()))


SINGULAR = (
    [L.random_psd_duplicated(n, seed, bounds=b) for n in (10, 50, 150) for seed in (0, 1) for b in ("lcp", "box")]
    + [L.delassus_rigid_body(k, seed) for k in (2, 4, 10, 30, 60) for seed in (0, 1, 2)]
    + [L.box_resting(4), L.box_resting(3)]
)


@pytest.mark.parametrize("case", SINGULAR, ids=lambda c: c.name)
def test_singular_psd_problems(case):
    """Redundant contacts: z is not unique but w is (M PSD); all methods must agree on w."""
    results = [solve_ok(case, method) for method in ("judice-pires", "lemke")]
    scale = 1 + np.abs(case.q).max()
    np.testing.assert_allclose(results[0].w, results[1].w, rtol=0, atol=1e-7 * scale)


def test_box_resting_physics():
    """Cube at rest on four coplanar corners: v+ = 0, normal impulses sum to m g h."""
    case = L.box_resting(4)
    result = solve_ok(case, "judice-pires")
    np.testing.assert_allclose(result.z[:6], 0.0, atol=1e-10)
    assert result.z[6:10].sum() == pytest.approx(9.81e-3, rel=1e-9)
    assert np.all(result.z[6:10] >= 0)
    np.testing.assert_allclose(result.z[10:], 0.0, atol=1e-12)


def test_redundant_corners_are_solved_by_pivoting_without_the_proximal_fallback():
    """Four coplanar corners (rank 3 of 4) with the regularized model's bristle compliance
    C_T = 1/(k_T h^2) = 1e-4 on the friction rows (Peiret 2016 Eq. 26, k_T = 1e10 N/m, h = 1 ms;
    it makes the friction block positive definite): the singular basic system is solved for its
    minimum-norm solution and the pivoting finishes in a few iterations, no regularized solve;
    of the solution family lam_N = m g h / 4 + t (1, -1, 1, -1) it is the symmetric member
    t = 0, a quarter of the weight on each corner, checked independently. (With rigid box
    friction the friction rows are redundant too: test_fallback_is_recorded.)"""
    box = L.box_resting(4)
    M = box.M.copy()
    M[10:, 10:] += 1e-4 * np.eye(8)
    case = L.Case("box-4-corners-bristles", M, box.q, box.lo, box.hi, None, unique=False)
    result = solve_ok(case, "judice-pires")
    assert result.info.get("regularization") is None, result.message
    assert result.iterations <= 4
    np.testing.assert_allclose(result.z[6:10], 9.81e-3 / 4, rtol=1e-9)
    np.testing.assert_allclose(result.z[:6], 0.0, atol=1e-12)


def test_one_contact_wheel_sliding_step():
    """Upright wheel sliding at 6 m/s for one 1 ms step, friction box +-mu*m*g*h: the contact
    keeps sliding, so the friction impulse saturates at -mu m g h along x, the normal impulse
    carries the weight, and the forward speed drops by mu g h."""
    case = L.wheel_one_contact()
    for method in OWN_METHODS:
        z = solve_ok(case, method).z
        assert z[6] == pytest.approx(9.81e-3, rel=1e-9)
        assert z[7] == pytest.approx(-0.3 * 9.81e-3, rel=1e-9)
        assert z[0] == pytest.approx(6.0 - 0.3 * 9.81e-3, rel=1e-12)
        assert z[2] == pytest.approx(0.0, abs=1e-12)


def test_degenerate_and_active_set_codes():
    M = np.eye(4)
    q = np.array([0.0, -1.0, 2.0, 0.5])
    lo = np.array([0.0, 0.0, -1.0, 0.2])
    hi = np.array([np.inf, np.inf, 1.0, 0.2])
    result = solve(M, q, lo, hi)
    assert result.success
    np.testing.assert_allclose(result.z, [0.0, 1.0, -1.0, 0.2])
    np.testing.assert_array_equal(result.active_set, [AT_LOWER, BASIC, AT_LOWER, FIXED])
    result = solve(M, -q, -2.0, 0.5)  # z = clip(q, -2, 0.5) = (0, -1, 0.5, 0.5)
    np.testing.assert_allclose(result.z, [0.0, -1.0, 0.5, 0.5])
    np.testing.assert_array_equal(result.active_set, [BASIC, BASIC, AT_UPPER, AT_UPPER])


def test_warm_start_from_solution_takes_one_iteration():
    case = L.random_spd(200, 5, "mixed")
    cold = solve_ok(case, "judice-pires")
    warm = solve_ok(case, "judice-pires", warm_start=cold.active_set)
    assert warm.iterations == 1 < cold.iterations
    np.testing.assert_allclose(warm.z, cold.z, atol=1e-10)
    # a perturbed problem started from the old set: still correct
    perturbed = L.Case("perturbed", case.M, case.q + 1e-3, case.lo, case.hi)
    solve_ok(perturbed, "judice-pires", warm_start=cold.active_set)


def test_reproducible():
    case = L.delassus_rigid_body(10, 1)
    a = solve(*case.args)
    b = solve(*case.args)
    np.testing.assert_array_equal(a.z, b.z)
    assert a.iterations == b.iterations


# --- honest failure -------------------------------------------------------------------------


def test_unsolvable_problem_is_never_a_success():
    """w = -z - 1 >= 0 has no solution with z >= 0."""
    M, q = np.array([[-1.0]]), np.array([-1.0])
    jp = solve(M, q)
    assert not jp.success and jp.status in (Status.CYCLING, Status.MAX_ITERATIONS, Status.SINGULAR_BASIS)
    lemke = solve(M, q, method="lemke")
    assert lemke.status == Status.RAY_TERMINATION
    pgs = solve(M, q, method="pgs")
    assert pgs.status == Status.NUMERICAL_ERROR and "positive diagonal" in pgs.message
    with pytest.raises(SolverFailure, match="RAY_TERMINATION"):
        solve(M, q, method="lemke", raise_on_failure=True)


def test_iteration_limit_is_reported():
    case = L.random_spd(60, 2, "box")
    result = solve(*case.args, max_iterations=1, regularization=0.0)
    assert result.status == Status.MAX_ITERATIONS and not result.success
    result = solve(*case.args, method="pgs", max_sweeps=1, check_every=1)
    assert result.status == Status.MAX_ITERATIONS


def test_singular_basis_without_fallback_is_reported():
    """A Delassus problem of one rigid body on four contacts (rank 6 of 12): the pivoting meets
    a singular basic system that is not a consistent redundancy (the minimum-norm solve does
    not satisfy it), and without the proximal fallback that is reported. (The saddle-point form
    of a box on four corners, L.box_resting, no longer gets there: its singular systems are
    consistent and solved for their minimum-norm solution.)"""
    case = L.delassus_rigid_body(4, 0)
    result = solve(*case.args, regularization=0.0)
    assert result.status == Status.SINGULAR_BASIS and not result.success
    assert solve(*L.box_resting(4).args, regularization=0.0).success


def test_fallback_is_recorded():
    result = solve(*L.delassus_rigid_body(4, 0).args)
    assert result.success
    assert result.info["regularization"] > 0 and result.info["first_attempt"] == "singular_basis"
    assert "proximal-point fallback" in result.message


def test_singular_free_block_is_reported():
    M = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    q = np.array([1.0, 2.0, -1.0])
    lo = np.array([-np.inf, -np.inf, 0.0])
    hi = np.array([np.inf, np.inf, np.inf])
    for method in ("lemke", "pgs"):
        result = solve(M, q, lo, hi, method=method)
        assert result.status == Status.SINGULAR_BASIS and "free variables is singular" in result.message
    assert not solve(M, q, lo, hi).success  # inconsistent equations: no solution exists


def test_inaccurate_answer_is_downgraded():
    """PGS stopped early on a slow problem: its answer must not pass the framework check."""
    case = L.random_spd(80, 4, "lcp")
    result = solve(*case.args, method="pgs", max_sweeps=2, check_every=1)
    assert not result.success
    assert result.relative_residual > TOL


def test_non_finite_answer_is_a_numerical_error():
    from solvers.problem import make_problem
    from solvers.result import measure

    problem = make_problem(np.eye(2), np.ones(2))
    for bad in (np.nan, np.inf):
        result = measure(problem, np.array([0.0, bad]), Status.SOLVED, 1, "test", "test", TOL)
        assert result.status == Status.NUMERICAL_ERROR and not result.success


def test_solvers_import_without_jax_or_siconos():
    import subprocess
    import sys

    code = (
        "import sys, solvers; solvers.solve([[2.0]], [-1.0]); "
        "assert 'jax' not in sys.modules and 'siconos' not in sys.modules, sorted(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def _saved(name):
    """The arrays of ``tests/data/<name>.npz`` (a step's problem saved from a run)."""
    from pathlib import Path

    data = np.load(Path(__file__).parent / "data" / f"{name}.npz")
    return {key: data[key] for key in data.files}


@pytest.mark.parametrize(
    "name, notes",
    [
        (
            "lemke-polygonal-block-rounding-basic",
            ("rounding-level values put on their bounds", "basis solution recomputed"),
        ),
        ("lemke-polygonal-block-ray", ("ended on a secondary ray whose basis already solves the problem",)),
    ],
)
def test_lemke_on_degenerate_polygonal_block_steps(name, notes):
    """Two steps of the polygonal four-corner block (``sliding-block``, redundant contacts, 32
    slip directions with zero slip), saved from a run (``tests/data``). In the first, Lemke's
    basis has a degenerate basic value of 6e-33 where 0 is meant, which is the whole slip row
    ``mu lambda_N - sum beta`` of a contact without load; in the second, the ray is met with the
    artificial variable at rounding level while the basis in hand already solves the problem.
    Both used to fall back to Júdice–Pires (392 of 600 steps); each answer is checked here
    independently of the solver's own measure. Which repair removes the degenerate value of the
    first depends on the LU's rounding, hence on the BLAS kernel: the recomputed basis solution
    (:func:`solvers.lemke.polish`, a -rounding basic value put at 0) on OpenBLAS 0.3.30's
    SkylakeX kernel, the rounding-level values put on their bounds where that still measured
    worse; the message must name one of them."""
    from .independent_check import check_answer

    data = _saved(name)
    M, q, lo, hi = data["M"], data["q"], data["lo"], data["hi"]
    result = solve(M, q, lo, hi, method="lemke")
    assert result.success, result.message
    assert any(note in result.message for note in notes), result.message
    assert check_answer(M, q, lo, hi, result.z) == []
    judice = solve(M, q, lo, hi, method="judice-pires")
    assert judice.success
    np.testing.assert_allclose(result.w, judice.w, atol=1e-9)  # the same velocities and gaps


@pytest.mark.parametrize("name", ["judice-pires-warm-start-cycles", "judice-pires-block-rule-cycles"])
def test_degenerate_steps_saved_from_wheel_into_boxes_are_solved_without_regularization(name):
    """Two steps of ``wheel-into-boxes`` (the wheel pushing three boxes face to face, redundant
    normals; the second where the row comes to rest), saved in ``tests/data`` with the active set
    the step before left. Which pivoting path gets there depends on the BLAS kernel's rounding:
    on OpenBLAS 0.3.30's SkylakeX kernel the warm start cycles in both and the second needs single
    pivots from the start (both Lemkes, ours and Siconos', miss the tolerance there: 1.2e-7,
    6.9e-7); on an AMD EPYC core the first is solved from its warm start in 6 iterations. On any
    kernel Júdice–Pires solves both without its proximal fallback, and the answer passes the
    independent check. (The retries themselves: the next two tests.)"""
    from .independent_check import check_answer

    data = _saved(name)
    M, q, lo, hi = data["M"], data["q"], data["lo"], data["hi"]
    result = solve(M, q, lo, hi, method="judice-pires", warm_start=data["warm"], regularization=0.0)
    assert result.success, result.message
    assert result.info["regularization"] is None
    assert check_answer(M, q, lo, hi, result.z) == []


def _failing_first(monkeypatch, failures):
    """Júdice–Pires' pivoting kernel made to report cycling on its first ``failures`` runs of a
    solve (what rounding does on a degenerate problem on some BLAS kernels); the calls it saw."""
    from solvers import judice_pires

    kernel = judice_pires.pivot_and_measure
    calls = []

    def pivoting(M, q, lo, hi, warm, use_warm, max_iterations, max_stall, pivot_tolerance):
        calls.append((use_warm, max_stall))
        out = kernel(M, q, lo, hi, warm, use_warm, max_iterations, max_stall, pivot_tolerance)
        if len(calls) <= failures:
            return (*out[:3], judice_pires._CYCLING, *out[4:])
        return out

    monkeypatch.setattr(judice_pires, "pivot_and_measure", pivoting)
    return calls


def test_a_warm_start_that_cycles_is_repeated_from_the_bounds(monkeypatch):
    """A warm start is a guess: where pivoting from it cycles (or meets a singular basis) the
    solver pivots again from the bounds before its proximal fallback, and says so."""
    from .independent_check import check_answer

    data = _saved("judice-pires-warm-start-cycles")
    M, q, lo, hi = data["M"], data["q"], data["lo"], data["hi"]
    calls = _failing_first(monkeypatch, 1)
    result = solve(M, q, lo, hi, method="judice-pires", warm_start=data["warm"])
    assert calls == [(True, 3), (False, 3)]  # the warm start, then from the bounds by the block rule
    assert result.success, result.message
    assert result.info["warm_start_failed"] == "cycling" and result.info["regularization"] is None
    assert not result.info["single_pivots"]
    assert "the warm start ended on cycling" in result.message
    assert check_answer(M, q, lo, hi, result.z) == []


def test_where_the_block_rule_cycles_single_pivots_from_the_bounds_solve(monkeypatch):
    """Where the block rule cycles from the warm start and from the bounds (a degenerate problem
    that is not a P-matrix), single pivots by the least-index rule from the start are tried
    before the proximal fallback."""
    from .independent_check import check_answer

    data = _saved("judice-pires-block-rule-cycles")
    M, q, lo, hi = data["M"], data["q"], data["lo"], data["hi"]
    calls = _failing_first(monkeypatch, 2)
    result = solve(M, q, lo, hi, method="judice-pires", warm_start=data["warm"])
    assert calls == [(True, 3), (False, 3), (False, 1)]
    assert result.success, result.message
    assert result.info["single_pivots"] and result.info["warm_start_failed"] == "cycling"
    assert result.info["regularization"] is None
    assert check_answer(M, q, lo, hi, result.z) == []


def test_lemke_on_a_singular_basis_takes_its_minimum_norm_member():
    """Redundant contacts leave Lemke on a complementary basis whose matrix is singular but
    consistent (a box on four coplanar corners): LU gives noise there, and
    :func:`solvers.lemke.polish` with ``minimum_norm`` solves the basis for its minimum-norm member,
    the even split. Here the basic system of two corners carrying one load: [[1, 1], [1, 1]] x =
    (2, 2) with a third variable off the basis."""
    from solvers.lemke import polish

    M = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    q = np.array([-2.0, -2.0, 1.0])
    x, ok = polish(M, q, np.full(3, 7.0), np.array([True, True, False]), True)
    assert ok and x == pytest.approx([1.0, 1.0, 0.0], abs=1e-15)


def test_lemke_on_a_saved_redundant_step_never_marks_a_wrong_answer_solved():
    """A step of ``chain-on-box`` under the box model (links on the box, the box on four corners;
    saved in ``tests/data``) where Júdice–Pires' block rule cycles from any start. On OpenBLAS
    0.3.30's SkylakeX kernel Lemke ends on a singular consistent basis that the minimum-norm
    polish solves; on one AMD EPYC core its degenerate ratio tests end on a basis whose solution
    misses the tolerance (1.6e-7; recomputing it measures 0.09), and it says so, and Júdice–Pires
    solves it. On another (AVX-512) Lemke solves it, and Júdice–Pires' pivoting cycles by the block
    rule and by single pivots alike; its proximal fallback stalls at 3.9e-8 (docs/known-limits.md:
    taking rho further down solved this step but called infeasible fuzz problems solved). On any
    kernel: an answer called solved passes the independent check, one that is not is reported
    failed with its residual, and the step's pair of methods -- Júdice–Pires, then Lemke, as the
    time stepper tries them -- solves it."""
    from .independent_check import check_answer

    data = _saved("lemke-redundant-contacts-singular-basis")
    M, q, lo, hi = data["M"], data["q"], data["lo"], data["hi"]
    result = solve(M, q, lo, hi, method="lemke")
    if result.success:
        assert result.info["polished"] and check_answer(M, q, lo, hi, result.z) == []
    else:
        assert result.relative_residual > 1e-9 and "exceeds tolerance" in result.message
    judice = solve(M, q, lo, hi, method="judice-pires")
    if judice.success:
        assert check_answer(M, q, lo, hi, judice.z) == []
    else:
        assert judice.relative_residual > 1e-9
    assert judice.success or result.success


def test_resting_block_with_indeterminate_friction_is_solved_not_rejected():
    """A step of the polygonal four-corner block resting under the paper's Eq. (7) update
    (``sliding-block``, t = 0.45 s, saved in ``tests/data``): two diagonal corners carry the
    weight and the answer holds friction impulses of ~1e-3 N s that equilibrate each other
    (statically indeterminate). They are two couplings away from the data (gravity -> normal
    impulse -> friction bounded by mu lambda_N), so a data-only yardstick one coupling deep put
    them 1e12 times beyond "what the data ask" and, the basis being singular (redundant
    contacts), every method's answer was rejected and the run stopped. The data-only yardstick
    now follows the couplings (``solvers.result._data_scales``); the answers are checked here
    independently."""
    from solvers.result import data_growth

    from .independent_check import check_answer

    data = _saved("polygonal-block-resting-indeterminate-friction")
    M, q, lo, hi = data["M"], data["q"], data["lo"], data["hi"]
    for method in ("lemke", "judice-pires"):
        result = solve(M, q, lo, hi, method=method)
        assert result.success, result.message
        assert check_answer(M, q, lo, hi, result.z) == []
        assert data_growth(M, q, lo, hi, result.z) < 1e3  # within what the data ask, followed far enough
        np.testing.assert_allclose(result.z[6:10].sum(), 9.81e-3, rtol=1e-9)  # m g h at the solve tolerance
