"""Block Gauss–Seidel (solvers.block_gs): the exact local solve against brute force and against
Júdice–Pires, the block method on problems with a unique answer, redundant contacts, Peiret's
Eq. (30) with one block per contact, warm starts and bad options. Every success is also checked
by the independent residual of tests/independent_check.py."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from solvers import Status, solve
from solvers import library as L
from solvers.block_gs import MAX_BLOCK, contact_blocks, local_blcp

from .independent_check import check_answer

TOL = 1e-9


def _solved(case, **options):
    result = solve(*case.args, method="block-gs", **options)
    assert result.success, f"{case.name}: {result.status.name}: {result.message}"
    assert check_answer(*case.args, result.z) == []
    return result


def _brute_force(A, s, lo, hi):
    """Every active set's answer that satisfies the bounds and signs to 1e-12 (relative)."""
    b = s.shape[0]
    found = []
    for codes in itertools.product((0, 1, 2), repeat=b):
        z = np.where(np.array(codes) == 0, lo, hi).astype(float)
        free = [i for i in range(b) if codes[i] == 2]
        if any(not np.isfinite(z[i]) for i in range(b) if codes[i] != 2):
            continue
        if free:
            rest = [i for i in range(b) if codes[i] != 2]
            rhs = -(s[free] + A[np.ix_(free, rest)] @ z[rest])
            z[free] = np.linalg.solve(A[np.ix_(free, free)], rhs)
        w = A @ z + s
        scale = 1.0 + np.abs(s) + np.abs(A) @ np.abs(z)
        ok = all(lo[i] - 1e-12 * scale[i] <= z[i] <= hi[i] + 1e-12 * scale[i] for i in free)
        ok &= all(w[i] >= -1e-12 * scale[i] for i in range(b) if codes[i] == 0)
        ok &= all(w[i] <= 1e-12 * scale[i] for i in range(b) if codes[i] == 1)
        if ok:
            found.append(z)
    return found


@pytest.mark.parametrize("seed", range(40))
def test_local_solve_is_the_unique_solution(seed):
    """Random SPD local problems of 1-4 variables with mixed bounds (a contact's normal >= 0 and
    friction boxes, one-sided and free rows): the enumeration's answer is the unique solution
    brute force finds, with violation 0."""
    rng = np.random.default_rng(seed)
    b = 1 + seed % MAX_BLOCK
    G = rng.standard_normal((b, b))
    A = G @ G.T + 0.1 * np.eye(b)
    s = rng.standard_normal(b) * 10.0 ** rng.integers(-3, 4)
    lo = np.where(rng.random(b) < 0.2, -np.inf, -rng.uniform(0, 1, b))
    hi = np.where(rng.random(b) < 0.2, np.inf, rng.uniform(0, 1, b))
    lo[0], hi[0] = 0.0, np.inf  # a normal row
    z = np.zeros(b)
    violation = local_blcp(A, s, lo, hi, z)
    expected = _brute_force(A, s, lo, hi)
    assert len(expected) >= 1
    np.testing.assert_allclose(z, expected[0], rtol=1e-10, atol=1e-12)
    assert violation == pytest.approx(0.0, abs=1e-13)


def test_local_solve_fixed_and_zero_bounds():
    """A fixed variable (lo = hi, the regularized model's friction with no previous load) stays
    at its value whatever its row says; the rest is solved around it."""
    A = np.array([[2.0, 0.5, 0.0], [0.5, 1.0, 0.0], [0.0, 0.0, 1.0]])
    s = np.array([-1.0, -5.0, 3.0])
    lo = np.array([0.0, 0.0, -1.0])
    hi = np.array([np.inf, 0.0, 1.0])
    z = np.zeros(3)
    assert local_blcp(A, s, lo, hi, z) == 0.0
    np.testing.assert_allclose(z, [0.5, 0.0, -1.0])


@pytest.mark.parametrize("bounds", ["lcp", "box", "mixed"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_block_gs_agrees_with_judice_pires_where_the_answer_is_unique(bounds, seed):
    """SPD problems have one solution: block-gs with blocks of three (and of one) reaches
    Júdice–Pires' answer."""
    case = L.random_spd(24, seed, bounds)
    reference = solve(*case.args, method="judice-pires")
    assert reference.success
    for blocks in (np.arange(24) // 3, None):
        result = _solved(case, blocks=blocks)
        np.testing.assert_allclose(result.z, reference.z, rtol=0, atol=1e-7 * (1 + np.abs(reference.z).max()))


@pytest.mark.parametrize("contacts", [1, 4, 12])
def test_block_gs_on_a_delassus_matrix_of_redundant_contacts(contacts):
    """One rigid body on many contacts (W = J M^-1 J^T of rank 6, the box model's fixed
    friction boxes), one block per contact: solved (z is not unique, w is)."""
    case = L.delassus_rigid_body(contacts, seed=contacts)
    result = _solved(case, blocks=np.repeat(np.arange(contacts), 3))
    reference = solve(*case.args, method="judice-pires")
    if reference.success:
        np.testing.assert_allclose(result.w, reference.w, rtol=0, atol=1e-7)


def _box_on_corners(compliance):
    return L.rigid_body_contacts(
        [[0.1, 0.1, -0.1], [-0.1, 0.1, -0.1], [-0.1, -0.1, -0.1], [0.1, -0.1, -0.1]],
        1.0, np.full(3, 0.2**2 / 6), np.zeros(3), np.zeros(3), 0.5, friction_compliance=compliance,
    )  # fmt: skip


@pytest.mark.parametrize("compliance", [0.0, 1e-2, 1.0])
def test_block_gs_on_peirets_eq30_box_on_four_corners(compliance):
    """Eq. (30) of a cube resting on four coplanar corners, the velocities eliminated, one
    block per contact (contact_blocks): v+ = 0 and the normal impulses carry m g h (the corner
    shares are not unique); rigid friction (Eq. 29) and compliant friction C_T."""
    result = _solved(_box_on_corners(compliance), blocks=contact_blocks(6, 0, 4))
    np.testing.assert_allclose(result.z[:6], 0.0, atol=1e-9)
    assert result.z[6:10].sum() == pytest.approx(9.81e-3, rel=1e-8)


def test_block_gs_is_slow_on_stiff_bristles_and_says_so():
    """The limit of a Gauss–Seidel method on redundant contacts: with the engine's default
    bristles, C_T = 1/(k_T h^2) = 1e-4 (k_T = 1e10 N/m, h = 1 ms) against Delassus entries of
    order 1, the sweep contracts the coupled shear/moment mode by about 1 - 1e-4, so 1,000
    sweeps leave a residual near 1e-5 (measured 7e-6; Júdice–Pires with its minimum-norm solve
    needs 2 pivots). The answer is reported MAX_ITERATIONS, not solved."""
    case = _box_on_corners(1e-4)
    result = solve(*case.args, method="block-gs", blocks=contact_blocks(6, 0, 4), max_sweeps=1000)
    assert result.status == Status.MAX_ITERATIONS and not result.success
    assert 1e-7 < result.relative_residual < 1e-3
    assert solve(*case.args, method="judice-pires").success


def test_one_contact_wheel_step_is_exact():
    """The sliding wheel's step (one contact: one block holds the whole reduced problem): the
    exact local solve is the answer after one sweep."""
    case = L.wheel_one_contact()
    result = _solved(case, blocks=contact_blocks(6, 0, 1), check_every=1)
    assert result.z[6] == pytest.approx(9.81e-3, rel=1e-9)
    assert result.z[7] == pytest.approx(-0.3 * 9.81e-3, rel=1e-9)
    assert result.iterations == 1


def test_warm_start_from_the_solution_takes_no_sweep():
    case = L.random_spd(18, 5, "mixed")
    first = _solved(case, blocks=np.arange(18) // 3)
    assert first.iterations > 0
    again = _solved(case, blocks=np.arange(18) // 3, initial_guess=first.z)
    assert again.iterations == 0


def test_sweep_limit_is_reported_not_solved():
    case = L.delassus_rigid_body(12, seed=3)
    result = solve(*case.args, method="block-gs", blocks=np.repeat(np.arange(12), 3), max_sweeps=1, check_every=1)
    assert not result.success and result.status == Status.MAX_ITERATIONS


def test_bad_block_options_are_named():
    case = L.random_spd(6, 0, "lcp")
    with pytest.raises(ValueError, match=r"blocks must have shape \(6,\)"):
        solve(*case.args, method="block-gs", blocks=np.zeros(5, int))
    with pytest.raises(TypeError, match="integer labels"):
        solve(*case.args, method="block-gs", blocks=np.zeros(6))
    with pytest.raises(ValueError, match="block 0 holds 6 bounded variables"):
        solve(*case.args, method="block-gs", blocks=np.zeros(6, int))
    with pytest.raises(ValueError, match="max_sweeps"):
        solve(*case.args, method="block-gs", max_sweeps=0)
    with pytest.raises(ValueError, match="contact_blocks: r"):
        contact_blocks(6, 0, -1)


def test_contact_blocks_layout():
    labels = contact_blocks(6, 1, 2)
    np.testing.assert_array_equal(labels, [-1] * 7 + [0, 1, 0, 0, 1, 1])


@pytest.mark.parametrize("scene_name", ["wheel", "spheres-dense", "spheres-islands"])
def test_the_stepper_gives_block_gs_one_block_per_contact(scene_name):
    """Simulation(method="block-gs"): the stepper passes one block per contact (Eq. 30's layout),
    so each contact is solved exactly in one sweep -- the same motion as Júdice–Pires, without a
    fallback, on the dense problem and island by island. The tilted Peiret wheel couples its
    contact's normal and friction rows (W_NT != 0): with scalar blocks it takes 3 sweeps."""
    import scenes
    from lcpdyn.stepper import Simulation
    from scenes.scale import Spheres

    if scene_name == "wheel":
        scene, t_end, sparse = scenes.SCENES["wheel"].build(), 0.3, "auto"
    else:
        scene, t_end, sparse = Spheres.build(count=6, seed=4, speed=2.0), 0.15, scene_name.endswith("islands")
    import lcpdyn.stepper

    switched = []  # per step: the contacts solved twice, for a friction switch inside it (lcpdyn.friction_switches)

    def recording(sim, work, *args):
        again = lcpdyn.friction_switches.friction_switches(sim, work, *args)
        switched.append(int(work.switched.sum()) if again else 0)
        return again

    # the paper's box static bound (named): one solve per step and one more for a switch; the
    # cone's basis passes solve some steps again (test_block_gs_takes_the_cones_passes)
    friction = scene.friction("regularized")
    friction = type(friction)(friction.tangential_stiffness, friction.velocity_threshold, static_bound="box")
    runs = {}
    for method, options in (("judice-pires", {}), ("block-gs", {"check_every": 1})):
        sim = Simulation(scene.model, friction, scene.dt, method=method, sparse=sparse, solver_options=options)
        switched.clear()
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(lcpdyn.stepper, "friction_switches", recording)
            runs[method] = sim.run(t_end)
    block, pivot = runs["block-gs"], runs["judice-pires"]
    assert np.all(block.solver_status == 0) and not block.solver_fallback.any()
    # one sweep per solve, summed over the islands (one per sphere); a step solved again for a switch
    # (a sphere's slip stopping within it) takes one more: of the whole problem, or of each island
    # that holds a switched contact (lcpdyn.strategies.second_solve)
    again = np.array(switched[1:])
    if scene_name == "spheres-islands":
        assert again.max() >= 1
        np.testing.assert_array_equal(block.solver_iterations[1:], 6 + again)
    else:
        np.testing.assert_array_equal(block.solver_iterations[1:], 1 + (again > 0))
    np.testing.assert_allclose(block.velocity, pivot.velocity, rtol=0, atol=1e-8)
    np.testing.assert_allclose(block.contact_friction_force, pivot.contact_friction_force, rtol=0, atol=1e-6)
    if scene_name == "wheel":
        scalar = Simulation(
            scene.model, friction, scene.dt, method="block-gs",
            solver_options={"check_every": 1, "blocks": None},
        ).run(t_end)  # fmt: skip
        assert scalar.solver_iterations[1:].min() >= 2


@pytest.mark.parametrize("sparse", [False, True])
def test_block_gs_takes_the_cones_passes(sparse):
    """The regularized model's static bound in the cone solves a step again from the last pass's
    force until it settles: block-GS follows Júdice–Pires through those passes, dense and
    island by island, to the same motion."""
    from lcpdyn.friction import Regularized
    from lcpdyn.stepper import Simulation
    from scenes.scale import Spheres

    scene = Spheres.build(count=6, seed=4, speed=2.0)
    cone = Regularized(static_bound="cone")
    runs = [
        Simulation(scene.model, cone, scene.dt, method=method, sparse=sparse, solver_options=options).run(0.15)
        for method, options in (("judice-pires", {}), ("block-gs", {"check_every": 1}))
    ]
    assert np.all(runs[1].solver_status == 0) and not runs[1].solver_fallback.any()
    np.testing.assert_allclose(runs[1].velocity, runs[0].velocity, rtol=0, atol=1e-8)
    np.testing.assert_allclose(runs[1].contact_friction_force, runs[0].contact_friction_force, rtol=0, atol=1e-6)


def test_nsgs_measures_where_its_rate_predicts_the_tolerance():
    """NSGS's measure is taken every ``check_every`` sweeps until two measures show a linear rate,
    then at nine tenths of the sweeps that rate predicts to the tolerance (clamped to 1-10 times
    ``check_every``); a residual that did not fall goes back to ``check_every``."""
    from solvers.sparse_gauss_seidel import sweeps_to_measure

    assert sweeps_to_measure(10, 0, 1e-2, None, 1e-6) == 10
    # 1e-2 -> 1e-3 in 10 sweeps: 1e-6 is 30 sweeps on, 27 asked
    assert sweeps_to_measure(10, 10, 1e-3, (0, 1e-2), 1e-6) == 27
    assert sweeps_to_measure(10, 10, 1e-3, (0, 1.1e-3), 1e-6) == 100  # a slow rate: at most 10 x check_every
    assert sweeps_to_measure(10, 10, 2e-6, (0, 1e-2), 1e-6) == 10  # nearly there: at least check_every
    assert sweeps_to_measure(10, 10, 1e-3, (0, 1e-3), 1e-6) == 10  # no progress: no prediction
    assert sweeps_to_measure(10, 10, float("nan"), (0, 1e-3), 1e-6) == 10
