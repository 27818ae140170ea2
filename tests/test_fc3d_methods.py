"""The exact-Coulomb methods beyond NSGS: semismooth Newton on the Alart–Curnier function
(``newton``), the proximal-point loop around it (``prox``) and ``auto``.

Checked independently of the methods: the Coulomb law contact by contact (``coulomb_check`` of
tests/test_friction_contact.py), De Saxcé's natural map recomputed here and scaled by |q| as in
Acary–Brémond–Huber (INRIA RR-9118), the answers of NSGS where all converge, the dense and the
sparse linear algebra against each other, and the third-party problems of
tests/data/fc3d (and of the whole 34-problem set when it is present)."""

from __future__ import annotations

import numpy as np
import pytest

import solvers
from solvers import alart_curnier, friction_contact, newton_operator
from solvers.friction_contact import solve_friction_contact
from solvers.result import Status

from .test_friction_contact import (
    SINGLE,
    box_on_corners,
    coulomb_check,
    random_bodies,
    solve_ok,
)
from .test_problem_files import SMALL_FILES, WHOLE, needs_whole_set

NEW = ("newton", "prox", "auto")
TOL = 1e-10


def natural_map_error(W, q, mu, r):
    """|F_nat(r)|_2 / |q|_2 with F_nat(r)_a = r_a - P_K(r_a - û_a) (written out here, not the
    module's kernel)."""
    nc = q.size // 3
    u = (W @ r + q).reshape(nc, 3)
    R = r.reshape(nc, 3)
    x = R.copy()
    x[:, 0] -= u[:, 0] + mu * np.linalg.norm(u[:, 1:], axis=1)
    x[:, 1:] -= u[:, 1:]
    p = np.empty_like(x)
    for i in range(nc):
        xn, xt = x[i, 0], x[i, 1:]
        t = np.linalg.norm(xt)
        if t <= mu[i] * xn:
            p[i] = x[i]
        elif mu[i] * t <= -xn:
            p[i] = 0.0
        else:
            s = (xn + mu[i] * t) / (1.0 + mu[i] ** 2)
            p[i, 0], p[i, 1:] = s, mu[i] * s * xt / t
    return np.linalg.norm(R - p) / max(np.linalg.norm(q), 1e-300)


# --- closed forms and known answers --------------------------------------------------------------


@pytest.mark.parametrize("method", NEW)
@pytest.mark.parametrize("case", range(len(SINGLE)))
def test_single_contacts_agree_with_nsgs(case, method):
    """One contact: separation, stick, slide on identity and coupled W, frictionless; the
    solution is unique on these (NSGS' exact enumeration finds it)."""
    W, b, mu = SINGLE[case]
    ours = solve_ok(W, b, mu, method)
    exact = solve_ok(W, b, mu, "nsgs")
    np.testing.assert_allclose(ours.r, exact.r, rtol=0, atol=1e-8 * max(1.0, np.abs(exact.r).max()))


@pytest.mark.parametrize("method", NEW)
def test_slide_in_closed_form(method):
    """W = I, b = (-1, 2, 0), mu = 0.3: the contact slides along t1 with r = (1, -0.3, 0) and
    u = (0, 1.7, 0)."""
    result = solve_ok(np.eye(3), np.array([-1.0, 2.0, 0.0]), 0.3, method)
    np.testing.assert_allclose(result.r, [1.0, -0.3, 0.0], atol=1e-10)
    np.testing.assert_allclose(result.u, [0.0, 1.7, 0.0], atol=1e-10)


@pytest.mark.parametrize("method", NEW)
@pytest.mark.parametrize("nc", [2, 4, 6, 10])
@pytest.mark.parametrize("seed", range(3))
def test_full_rank_bodies_agree_with_nsgs(nc, seed, method):
    """Chains of rigid bodies (W nonsingular, so r and u are unique): all methods agree."""
    W, b, mu = random_bodies(nc, seed, unique=True)
    ours = solve_ok(W, b, mu, method)
    exact = solve_ok(W, b, mu, "nsgs")
    scale = max(1.0, np.abs(exact.r).max())
    np.testing.assert_allclose(ours.r, exact.r, rtol=0, atol=1e-7 * scale)
    np.testing.assert_allclose(ours.u, exact.u, rtol=0, atol=1e-7 * max(1.0, np.abs(exact.u).max()))


@pytest.mark.parametrize("method", ["prox", "auto"])
@pytest.mark.parametrize("motion", ["resting", "sliding", "lifting"])
def test_box_on_four_corners(method, motion):
    """Rank 6 W on 12 unknowns: the reactions are not unique, the velocities are (except when
    the box spins); prox gets them, and the normal impulses carry the weight at rest."""
    v = {"resting": (0, 0, -0.0981), "sliding": (1.0, 0.3, -0.0981), "lifting": (0.2, 0, -0.0981)}[motion]
    w = (1.5, 0, 0) if motion == "lifting" else (0, 0, 0)
    W, b = box_on_corners(np.array(v, float), np.array(w, float))
    result = solve_ok(W, b, 0.5, method)
    reference = solve_ok(W, b, 0.5, "nsgs", max_sweeps=5000)
    np.testing.assert_allclose(result.u, reference.u, rtol=0, atol=1e-7)
    if motion == "resting":
        np.testing.assert_allclose(result.r[0::3].sum(), 0.0981, rtol=1e-9)


@pytest.mark.parametrize("method", ["prox", "auto"])
@pytest.mark.parametrize("nc", [5, 8])
def test_one_body_on_many_contacts(method, nc):
    """All contacts on one body (rank 6): NSGS needs thousands of sweeps here, the proximal
    loop a few dozen Newton iterations; the velocities are the same."""
    W, b, mu = random_bodies(nc, 0, unique=False)
    result = solve_ok(W, b, mu, method)
    reference = solve_ok(W, b, mu, "nsgs", max_sweeps=20000)
    np.testing.assert_allclose(result.u, reference.u, rtol=0, atol=1e-6)
    assert result.info.get("inner_iterations", result.iterations) < 500  # auto may finish with Newton alone


def test_newton_alone_stalls_on_a_rank_deficient_problem_and_says_so():
    W, b = box_on_corners(np.array([0.5, 0.0, -0.1]), np.array([0.0, 0.0, 2.0]))
    result = solve_friction_contact(W, b, 0.5, "newton", tolerance=TOL, max_iterations=3)
    assert not result.success and result.status == Status.MAX_ITERATIONS
    assert result.relative_residual > TOL and "no convergence in 3 iterations" in result.message


# --- linear algebra, warm starts, scaling ------------------------------------------------------


@pytest.mark.parametrize("method", ["newton", "prox"])
def test_sparse_path_equals_dense_path(method):
    """The sparse (SuperLU, block-row pattern of W) and the dense (compiled LAPACK) Newton
    iterations reach the same unique solution; the caller's W is not written by either."""
    W, b, mu = random_bodies(10, 2, unique=True)
    W_before = W.copy()
    dense = solve_ok(W, b, mu, method)
    sparse = solve_ok(W, b, mu, method, dense_limit=0)
    assert "dense" in dense.info["linear_algebra"] and "sparse" in sparse.info["linear_algebra"]
    np.testing.assert_array_equal(W, W_before)
    np.testing.assert_allclose(sparse.r, dense.r, rtol=0, atol=1e-8 * np.abs(dense.r).max())


def test_sparse_operator_keeps_the_pattern_and_shift():
    """newton_operator.Operator: J = blockdiag(A) + blockdiag(B)(W + diag(shift)) assembled sparse equals the
    dense product; changing the shift replaces (not adds to) the previous one."""
    rng = np.random.default_rng(0)
    W, _, _ = random_bodies(6, 1, unique=True)
    W[0, 5] = W[5, 0] = 0.0  # a structural zero the pattern must tolerate
    n = W.shape[0]
    A = rng.standard_normal((n // 3, 3, 3))
    B = rng.standard_normal((n // 3, 3, 3))
    sparse = newton_operator.Operator(W, np.full(n, 0.5), dense_limit=0)
    sparse.set_shift(np.full(n, 0.25))
    dense_A = np.zeros((n, n))
    dense_B = np.zeros((n, n))
    for c in range(n // 3):
        dense_A[3 * c : 3 * c + 3, 3 * c : 3 * c + 3] = A[c]
        dense_B[3 * c : 3 * c + 3, 3 * c : 3 * c + 3] = B[c]
    expected_J = dense_A + dense_B @ (W + 0.25 * np.eye(n))
    phi = rng.standard_normal(n)
    d, shifted = sparse.direction(A, B, phi)
    assert not shifted
    np.testing.assert_allclose(expected_J @ d, -phi, atol=1e-9)
    r = rng.standard_normal(n)
    out = np.empty(n)
    np.testing.assert_allclose(sparse.velocity(r, np.ones(n), out), (W + 0.25 * np.eye(n)) @ r + 1.0, atol=1e-12)


@pytest.mark.parametrize("method", NEW)
def test_warm_start_from_the_solution_costs_nothing(method):
    W, b, mu = random_bodies(6, 0, unique=True)
    first = solve_ok(W, b, mu, method)
    again = solve_ok(W, b, mu, method, initial_guess=first.r)
    assert again.iterations == 0


@pytest.mark.parametrize("method", NEW)
def test_rescaled_contacts_are_judged_alike(method):
    """D W D, D b with one positive factor per contact (other units per contact) is the same
    problem: the same status, and r scaled by 1/D."""
    W, b, mu = random_bodies(6, 1, unique=True)
    d = np.repeat(np.array([1e-3, 1.0, 1e3, 10.0, 1e-2, 1e2]), 3)
    base = solve_ok(W, b, mu, method)
    scaled = solve_ok(d[:, None] * W * d[None, :], d * b, mu, method)
    np.testing.assert_allclose(scaled.r * d, base.r, rtol=0, atol=1e-7 * np.abs(base.r).max())


# --- failures are reported ---------------------------------------------------------------------


@pytest.mark.parametrize("method", NEW)
def test_infeasible_problem_is_not_solved(method):
    """A zero block cannot stop an approaching contact: no solution exists."""
    limit = {"newton": dict(max_iterations=20), "prox": dict(max_outer=20), "auto": dict(max_outer=20)}[method]
    result = solve_friction_contact(np.zeros((3, 3)), np.array([-1.0, 0.0, 0.0]), 0.5, method, **limit)
    assert not result.success and result.status in (Status.MAX_ITERATIONS, Status.NUMERICAL_ERROR)


@pytest.mark.parametrize(
    "method, options, culprit",
    [
        ("newton", dict(max_iterations=0), "max_iterations"),
        ("newton", dict(armijo=0.5), "armijo"),
        ("newton", dict(dense_limit=-1), "dense_limit"),
        ("prox", dict(sigma=0.0), "sigma"),
        ("prox", dict(sigma=1e-3, sigma_min=1e-2), "sigma_min"),
        ("prox", dict(sigma_decrease=1.0), "sigma_decrease"),
        ("prox", dict(inner_ratio=-1.0), "inner_ratio"),
        ("auto", dict(newton_iterations=0), "newton_iterations"),
        ("auto", dict(first_sweep_closing=-0.1), "first_sweep_closing"),
        ("auto", dict(max_sweeps=3), "max_sweeps"),
    ],
)
def test_bad_options_name_the_culprit(method, options, culprit):
    with pytest.raises(ValueError, match=culprit):
        solve_friction_contact(np.eye(3), np.zeros(3), 0.5, method, **options)


def test_methods_are_listed_at_the_front_door():
    for name in NEW + ("siconos-prox",):
        assert name in solvers.FRICTION_CONTACT_METHODS
    problem = solvers.FrictionContactProblem.make(np.eye(3), np.array([-1.0, 0.2, 0.0]), 0.5)
    result = solvers.solve(problem, method="auto")  # one contact: the exact local solve
    assert result.success and result.method == "auto" and result.info["route"] == "nsgs"
    assert result.iterations == 1
    np.testing.assert_allclose(result.r, [1.0, -0.2, 0.0], atol=1e-12)
    two = solvers.FrictionContactProblem.make(np.eye(6), np.array([-1.0, 0.2, 0.0, -1.0, 0.0, 0.9]), 0.5)
    result = solvers.solve(two, method="auto")  # uncoupled: one sweep is exact
    assert result.success and result.info["route"] == "nsgs" and result.iterations == 1
    np.testing.assert_allclose(result.r, [1.0, -0.2, 0.0, 1.0, 0.0, -0.5], atol=1e-10)
    W = np.eye(6) + 0.1 * np.kron(np.ones((2, 2)), np.eye(3))  # coupled, both closing
    result = solvers.solve(solvers.FrictionContactProblem.make(W, two.b, 0.5), method="auto")
    assert result.success and result.info["route"] == "newton"
    coulomb_check(W, two.b, two.mu, result, tol=1e-9)


# --- third-party problems ----------------------------------------------------------------------


@pytest.mark.parametrize("method", NEW)
@pytest.mark.parametrize("path", SMALL_FILES, ids=[p.stem for p in SMALL_FILES])
def test_small_third_party_problems(path, method):
    """The 19 small files of the set: solved, the Coulomb law holds contact by contact, and the
    natural-map error scaled by |q| is <= 1e-8 (the scoring of Acary–Brémond–Huber)."""
    p = solvers.read_siconos_dat(path)
    result = solvers.solve(p, method=method, tolerance=TOL)
    assert result.success, result.message
    coulomb_check(p.W, p.b, p.mu, result, tol=1e-7)
    assert natural_map_error(p.W, p.b, p.mu, result.r) <= 1e-8


HARD = [
    "BoxesStack1-i100000-32.hdf5",
    "OneObject-i100000-316.hdf5",
    "OneObject-i100000-499.hdf5",
    "Confeti-ex03-Fc3D-SBM",
]


@needs_whole_set
@pytest.mark.parametrize("name", HARD)
def test_hyperstatic_third_party_problems(name):
    """Where NSGS (ours and Siconos') stalls at 1e-3..1e-5: the proximal loop reaches 1e-8.
    |F_nat| / |q| is not invariant under a change of units (it compares reactions with
    velocities): on Confeti-ex03 the reactions reach 4e5 against |q| = 52, so 1e-8 by it asks
    for r to ~1e-13 relative, which the framework's per-contact measure calls 1e-12."""
    p = solvers.read_siconos_dat(WHOLE / f"{name}.dat")
    stalled = solvers.solve(p, method="nsgs", tolerance=1e-8, max_sweeps=200)
    result = solvers.solve(p, method="auto", tolerance=1e-12)
    assert result.success, result.message
    assert natural_map_error(p.W, p.b, p.mu, result.r) <= 1e-8
    if name != "Confeti-ex03-Fc3D-SBM":
        assert not stalled.success
    assert friction_contact.AUTO == result.method


def test_auto_begins_with_one_sweep_where_it_can_finish():
    """Twelve contacts, three closing (b_N < 0). W block diagonal (the contacts do not couple):
    one NSGS sweep solves each exactly, however many close, and auto stops there. W coupling two
    open contacts: the sweep is still tried where at most a quarter close (first_sweep_closing),
    from first_sweep_contacts contacts on, and finishes; with fewer contacts than that, or with
    every contact closing, auto goes to Newton directly. Every answer is the exact one."""
    from .test_friction_contact import random_spd3

    blocks = [random_spd3(seed, 20.0) for seed in range(12)]
    W = np.zeros((36, 36))
    for i, block in enumerate(blocks):
        W[3 * i : 3 * i + 3, 3 * i : 3 * i + 3] = block
    b = np.tile([0.5, 0.4, -0.2], 12)
    b[[0, 15, 33]] = -1.0
    mu = np.linspace(0.1, 1.2, 12)
    swept = solve_ok(W, b, mu, "auto")
    assert swept.info["route"] == "nsgs" and swept.iterations == 1
    assert np.count_nonzero(swept.r[0::3]) == 3
    closing = b.copy()
    closing[0::3] = -1.0
    every = solve_ok(W, closing, mu, "auto")
    assert every.info["route"] == "nsgs" and every.iterations == 1 and np.count_nonzero(every.r[0::3]) == 12
    coupled = W.copy()  # contacts 1 and 2 (open) coupled by a positive semidefinite term
    coupled[3:9, 3:9] += 0.5 * np.kron(np.ones((2, 2)), np.eye(3))
    weak = solve_ok(coupled, b, mu, "auto")
    assert weak.info["route"] == "nsgs" and weak.iterations == 1
    np.testing.assert_array_equal(weak.r, swept.r)
    newton = solve_ok(coupled, b, mu, "auto", first_sweep_contacts=13)
    assert newton.info["route"] == "newton"
    np.testing.assert_allclose(newton.r, swept.r, rtol=0, atol=1e-9 * np.abs(swept.r).max())
    assert solve_ok(coupled, closing, mu, "auto").info["route"] == "newton"


def test_polishing_step_only_where_the_natural_map_error_is_still_coarse():
    """polish=True takes one Newton step after the framework's residual first passes, but only
    while |F_nat| / |q| is above the tolerance: with W = 1e-6 of a unit-scale one, reactions are
    1e6 |q| and an answer that passes per contact can be coarse by |F_nat| / |q|; the extra step
    keeps the answer solved and brings |F_nat| / |q| no higher. At unit scale, where both
    measures pass at once, no step is added."""
    W, b, mu = random_bodies(8, 1, unique=True)
    for scale, added in ((1.0, 0), (1e-6, 1)):
        # (coulomb_check's absolute tolerance is in velocity units: it does not apply at 1e-6)
        plain = solve_friction_contact(W * scale, b, mu, "newton", polish=False, tolerance=1e-8)
        polished = solve_friction_contact(W * scale, b, mu, "newton", tolerance=1e-8)
        assert plain.success and polished.success, (plain.message, polished.message)
        before = natural_map_error(W * scale, b, mu, plain.r)
        assert (before > 1e-8) == bool(added), (scale, before)
        assert polished.iterations == plain.iterations + added
        assert natural_map_error(W * scale, b, mu, polished.r) <= max(before, 1e-15)
        if added:
            assert natural_map_error(W * scale, b, mu, polished.r) <= 1e-8
    with pytest.raises(ValueError, match="polish"):
        solve_friction_contact(W, b, mu, "newton", polish=1)


@pytest.mark.parametrize(
    "contacts, bodies, tolerance",
    [(8, 2, 1e-10), (240, 1, 1e-8)],  # dense compiled loop; sparse Python loop
)
def test_prox_polishes_until_the_natural_map_error_passes(contacts, bodies, tolerance):
    """ProxOptions.polish_outer: after the framework's residual passes, more outer iterations
    while |F_nat| / |q| is above the tolerance -- needed with W = 1e-6 of a unit-scale one
    (reactions 1e6 |q|) -- and none where it already passes; the answer stays solved."""
    W, b, mu = random_bodies(contacts, bodies, unique=False)
    for scale in (1.0, 1e-6):
        plain = solve_friction_contact(W * scale, b, mu, "prox", polish_outer=0, tolerance=tolerance)
        polished = solve_friction_contact(W * scale, b, mu, "prox", tolerance=tolerance)
        assert plain.success and polished.success, (plain.message, polished.message)
        assert plain.info["polishing_iterations"] == 0
        before = natural_map_error(W * scale, b, mu, plain.r)
        after = natural_map_error(W * scale, b, mu, polished.r)
        if before > tolerance:
            assert 1 <= polished.info["polishing_iterations"] <= 3
            assert polished.iterations > plain.iterations
            assert after <= tolerance < before
        else:
            assert polished.info["polishing_iterations"] == 0
            np.testing.assert_array_equal(polished.r, plain.r)
    assert before > tolerance, "the scaled problem must need polishing for this test to test it"
    with pytest.raises(ValueError, match="polish_outer"):
        solve_friction_contact(W, b, mu, "prox", polish_outer=-1)


@pytest.mark.parametrize("method", NEW)
def test_the_coulomb_stepper_takes_the_new_methods(method):
    """Simulation(..., "coulomb", method=...) with three spheres falling onto the ground: the
    same motion as with NSGS, and the fallback the table gives (prox after newton, nsgs after
    prox and auto)."""
    from lcpdyn import Simulation
    from scenes.scale import Spheres

    reference = Simulation(Spheres.build(count=3).model, "coulomb", method="nsgs").run(0.05)
    sim = Simulation(Spheres.build(count=3).model, "coulomb", method=method)
    run = sim.run(0.05)
    assert sim.fallback_method == {"newton": "prox", "prox": "nsgs", "auto": "nsgs"}[method]
    np.testing.assert_allclose(run.position, reference.position, rtol=0, atol=1e-9)
    np.testing.assert_allclose(run.velocity, reference.velocity, rtol=0, atol=1e-8)
    assert not np.any(run.solver_fallback)


@pytest.mark.parametrize("seed", range(4))
def test_newton_direction_on_the_contacts_that_are_not_separated(seed):
    """The Newton direction solved on the contacts that are not separated (Schur elimination
    of their identity rows, alart_curnier._reduced_direction) is the full system's direction
    where J is nonsingular: a chain of 12 bodies (W nonsingular), states with separated,
    sticking and sliding contacts, against the LU of the whole J."""
    W, b, mu = random_bodies(12, seed, unique=True)
    rng = np.random.default_rng(seed)
    n = b.shape[0]
    nc = n // 3
    rho = newton_operator.contact_rho(W)
    r = rng.uniform(-0.5, 1.0, n)
    r[0::3][rng.permutation(nc)[: nc // 2]] = -1.0  # r_N - rho u_N < 0: separated blocks
    u = W @ r + b
    phi = np.empty(n)
    alart_curnier._ac_function(u, r, mu, rho, phi)
    A = np.empty((nc, 3, 3))
    B = np.empty((nc, 3, 3))
    alart_curnier._ac_blocks(u, r, mu, rho, A, B)
    separated = sum(alart_curnier._separated(A, B, c) for c in range(nc))
    assert 0 < separated < nc
    J = np.empty((n, n))
    newton_operator._assemble_dense(W, A, B, J)
    full, attempt_full = alart_curnier._dense_direction(J, phi, 1.0)
    reduced, attempt = alart_curnier._reduced_direction(W, A, B, phi, 1.0, np.empty((n, n)))
    assert attempt == attempt_full == 0
    np.testing.assert_allclose(reduced, full, rtol=0, atol=1e-9 * np.abs(full).max())
    assert np.abs(J @ reduced + phi).max() <= 1e-10 * (np.abs(J).max() * np.abs(reduced).max() + np.abs(phi).max())


@pytest.mark.parametrize("method", ["newton", "prox", "auto"])
def test_a_warm_start_on_contacts_that_all_separate(method):
    """Reactions guessed on two contacts that both open (b_N > 0): every contact's Newton block
    is the identity's (no system left to factorize), one step lands on r = 0, the exact answer."""
    W = 2.0 * np.eye(6)
    W[0, 3] = W[3, 0] = 0.3
    b = np.array([1.0, 0.2, 0.1, 0.5, -0.1, 0.3])
    guess = np.array([0.2, 0.01, 0.0, 0.1, 0.0, 0.02])
    result = solve_friction_contact(W, b, 0.5, method, initial_guess=guess)
    assert result.success, result.message
    assert np.all(result.r == 0.0)


def test_contact_rho_is_the_inverse_block_norm_with_the_mean_where_a_block_is_zero():
    """ρ_α = 1 / |W_αα|_F per contact (alart_curnier's docstring), written out here; zero and
    non-finite blocks get the mean of the others' ρ, 1 when there are none; the sparse operator
    gives the same."""
    import scipy.sparse as sp

    rng = np.random.default_rng(3)
    A = rng.normal(size=(12, 12))
    W = A @ A.T
    W[3:6, :] = 0.0  # contact 1: zero block (and row)
    W[:, 3:6] = 0.0
    expected = np.array([1.0 / np.linalg.norm(W[3 * c : 3 * c + 3, 3 * c : 3 * c + 3]) for c in (0, 2, 3)])
    rho = newton_operator.contact_rho(W)
    np.testing.assert_allclose(rho[[0, 2, 3]], expected, rtol=1e-14)
    assert rho[1] == pytest.approx(expected.mean(), rel=1e-14)
    sparse = newton_operator.Operator.from_csr(sp.csr_matrix(W))
    np.testing.assert_allclose(newton_operator.contact_rho_csr(sparse), rho, rtol=1e-15)
    W[6, 7] = np.inf  # contact 2: non-finite block
    rho = newton_operator.contact_rho(W)
    assert rho[2] == pytest.approx(expected[[0, 2]].mean(), rel=1e-14)
    np.testing.assert_array_equal(newton_operator.contact_rho(np.zeros((6, 6))), [1.0, 1.0])
    assert newton_operator.contact_rho(np.zeros((0, 0))).shape == (0,)
