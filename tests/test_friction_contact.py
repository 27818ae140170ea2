"""The exact Coulomb friction-contact problem (solvers.friction_contact): closed forms, the Coulomb
conditions checked independently of the module's residual, rigid-body Delassus problems, and the
Siconos cross-check (mandatory under CI=true, see conftest)."""

import math

import numpy as np
import pytest

from solvers.friction_contact import (
    FrictionContactResult,
    Options,
    UnknownOptionError,
    project_on_cone,
    solve_friction_contact,
)
from solvers.result import SolverFailure, Status

TOL = 1e-10
SICONOS_METHODS = ("siconos-nsgs", "siconos-nsn-ac")


# --- independent checks -----------------------------------------------------------------------


def coulomb_check(W, b, mu, result, tol=1e-9):
    """The Coulomb law with maximal dissipation checked from scratch, contact by contact:
    r in the cone, u_N >= 0, r_N u_N = 0 and r_T . u_T = -mu r_N |u_T| (friction opposes slip
    at full strength whenever there is slip). Together these are De Saxcé's r ⟂ û."""
    r = result.r
    u = W @ r + b
    np.testing.assert_allclose(result.u, u, rtol=0, atol=1e-12 * (1 + np.abs(u).max(initial=0)))
    nc = b.size // 3
    mu = np.broadcast_to(np.asarray(mu, dtype=float), (nc,))
    scale = 1 + np.abs(b).max(initial=0) + np.abs(W).sum(axis=1).max(initial=0) * np.abs(r).max(initial=0)
    eps = tol * scale
    for i in range(nc):
        rn, rt = r[3 * i], r[3 * i + 1 : 3 * i + 3]
        un, ut = u[3 * i], u[3 * i + 1 : 3 * i + 3]
        assert rn >= -eps, f"contact {i}: r_N = {rn}"
        assert np.linalg.norm(rt) <= mu[i] * rn + eps, f"contact {i}: |r_T| = {np.linalg.norm(rt)} > mu r_N"
        assert un >= -eps, f"contact {i}: u_N = {un}"
        assert abs(rn * un) <= eps * (1 + abs(rn) + abs(un)), f"contact {i}: r_N u_N = {rn * un}"
        dissipation = rt @ ut + mu[i] * rn * np.linalg.norm(ut)
        assert abs(dissipation) <= eps * (1 + np.abs(r).max() + np.abs(u).max()), (
            f"contact {i}: r_T.u_T + mu r_N |u_T| = {dissipation}"
        )


def solve_ok(W, b, mu, method="nsgs", **kw):
    result = solve_friction_contact(W, b, mu, method, tolerance=TOL, **kw)
    assert isinstance(result, FrictionContactResult)
    assert result.success, f"{method}: {result.status.name}: {result.message}"
    assert result.relative_residual <= TOL
    assert result.cone_violation <= TOL * np.abs(result.r).max(initial=0)  # relative to the reactions
    coulomb_check(W, b, mu, result)
    return result


# --- problem builders -------------------------------------------------------------------------


def _skew(p):
    return np.array([[0.0, -p[2], p[1]], [p[2], 0.0, -p[0]], [-p[1], p[0], 0.0]])


def frame(normal, angle=0.0):
    """Rows (n, t1, t2): an orthonormal contact frame, the tangents turned by ``angle``."""
    n = np.asarray(normal, dtype=float)
    n = n / np.linalg.norm(n)
    helper = np.array([1.0, 0.0, 0.0]) if abs(n[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    t1 = helper - (helper @ n) * n
    t1 /= np.linalg.norm(t1)
    t2 = np.cross(n, t1)
    c, s = math.cos(angle), math.sin(angle)
    return np.array([n, c * t1 + s * t2, -s * t1 + c * t2])


def contact_rows(point, frame_rows):
    """Jacobian rows (3 x 6, body twist (v, ω)) of the velocity of a body point in a frame."""
    return np.array([np.concatenate([e, np.cross(point, e)]) for e in frame_rows])


def delassus(bodies, contacts, velocities):
    """W = H M^{-1} H^T and b = H v for rigid bodies; ``bodies`` = [(mass, inertia diag)],
    ``contacts`` = [(body_a, point_a, body_b or None, point_b, frame rows)], normals from b to a."""
    nb = len(bodies)
    H = np.zeros((3 * len(contacts), 6 * nb))
    for i, (a, pa, bb, pb, rows) in enumerate(contacts):
        H[3 * i : 3 * i + 3, 6 * a : 6 * a + 6] += contact_rows(pa, rows)
        if bb is not None:
            H[3 * i : 3 * i + 3, 6 * bb : 6 * bb + 6] -= contact_rows(pb, rows)
    inverse_mass = np.concatenate([np.concatenate([np.full(3, 1.0 / m), 1.0 / np.asarray(j)]) for m, j in bodies])
    W = H @ (inverse_mass[:, None] * H.T)
    return 0.5 * (W + W.T), H @ np.concatenate(velocities)


BOX_INERTIA = (0.1, 0.2, 0.3)


def box_on_corners(velocity, angular_velocity=(0.0, 0.0, 0.0)):
    """A box (mass 1, inertia diag(0.1, 0.2, 0.3)) touching the ground with its four bottom
    corners: 12 x 12 W of rank 6, r not unique."""
    corners = [np.array([x, y, -0.2]) for x in (-0.5, 0.5) for y in (-0.3, 0.3)]
    up = frame([0.0, 0.0, 1.0])
    contacts = [(0, p, None, None, up) for p in corners]
    return delassus([(1.0, BOX_INERTIA)], contacts, [np.concatenate([velocity, angular_velocity])])


def random_bodies(nc, seed, unique):
    """``nc`` random contacts on random rigid bodies. ``unique``: a chain of ``nc`` bodies,
    contact k between body k and the ground or body k-1 (H block triangular with full-rank
    diagonal blocks, so W is nonsingular); otherwise all contacts on one body (W of rank 6)."""
    rng = np.random.default_rng(seed)
    nb = nc if unique else 1
    bodies = [(rng.uniform(0.5, 2.0), rng.uniform(0.05, 0.3, 3)) for _ in range(nb)]
    contacts = []
    for i in range(nc):
        a = i if unique else 0
        normal = np.array([0.0, 0.0, 1.0]) + 0.3 * rng.standard_normal(3)
        rows = frame(normal, rng.uniform(0, 2 * np.pi))
        pa = rng.uniform(-0.5, 0.5, 3)
        if unique and a > 0 and rng.uniform() < 0.6:
            contacts.append((a, pa, a - 1, rng.uniform(-0.5, 0.5, 3), rows))  # body on body
        else:
            contacts.append((a, pa, None, None, rows))
    velocities = [
        np.concatenate([rng.uniform(-1, 1, 2), [rng.uniform(-2, 0.3)], 0.5 * rng.standard_normal(3)]) for _ in range(nb)
    ]
    W, b = delassus(bodies, contacts, velocities)
    mu = rng.uniform(0.1, 0.5, nc) if unique else rng.uniform(0.2, 1.0, nc)
    return W, b, mu


def random_spd3(seed, condition=10.0):
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal((3, 3)))
    return q @ np.diag(np.geomspace(1.0, condition, 3)) @ q.T


# --- closed-form single contacts --------------------------------------------------------------


@pytest.mark.parametrize("W", [np.eye(3), random_spd3(0)], ids=["identity", "spd"])
def test_separation(W):
    b = np.array([0.4, 1.0, -2.0])
    result = solve_ok(W, b, 0.5)
    np.testing.assert_array_equal(result.r, 0.0)
    np.testing.assert_array_equal(result.u, b)


def test_read_only_arrays_are_taken():
    """Read-only inputs (NumPy's view of a JAX array, a memory map) with a writable initial guess:
    before, the finiteness check asked them to be of one type and Numba failed to type it."""
    W, b, mu = np.eye(3), np.array([-1.0, 0.05, -0.02]), np.array([0.8])
    for a in (W, b, mu):
        a.flags.writeable = False
    expected = solve_ok(np.eye(3), np.array([-1.0, 0.05, -0.02]), 0.8).r
    np.testing.assert_array_equal(solve_friction_contact(W, b, mu, initial_guess=np.zeros(3)).r, expected)


@pytest.mark.parametrize("W", [np.eye(3), random_spd3(1)], ids=["identity", "spd"])
def test_stick(W):
    b = np.array([-1.0, 0.05, -0.02])
    result = solve_ok(W, b, 0.8)
    np.testing.assert_allclose(result.r, -np.linalg.solve(W, b), rtol=0, atol=1e-14)
    np.testing.assert_allclose(result.u, 0.0, rtol=0, atol=1e-14)
    assert np.linalg.norm(result.r[1:]) < 0.8 * result.r[0]


@pytest.mark.parametrize(
    "mu, bt",
    [
        (mu, bt)
        for mu in (0.1, 0.5, 2.0)
        for bt in ((1.0, 0.5), (-3.0, 0.0), (0.0, -0.2), (0.3, -4.0))
        if math.hypot(*bt) > 1.5 * mu
    ],
)  # |b_T| > mu |b_N|: it slides
def test_slide_identity(mu, bt):
    b = np.array([-1.5, *bt])
    bt = np.array(bt)
    result = solve_ok(np.eye(3), b, mu)
    expected = np.concatenate([[1.5], -mu * 1.5 * bt / np.linalg.norm(bt)])
    np.testing.assert_allclose(result.r, expected, rtol=0, atol=1e-14)
    assert result.info["slide"] == 1


@pytest.mark.parametrize("seed", range(6))
def test_slide_general_w(seed):
    """Non-diagonal W: the Coulomb conditions directly, u_N = 0, |r_T| = mu r_N, u_T = -s r_T, s > 0."""
    W = random_spd3(seed, condition=30.0)
    rng = np.random.default_rng(100 + seed)
    mu = 0.6
    b = np.array([-1.0, *(3.0 * rng.standard_normal(2) + 2.0)])
    result = solve_ok(W, b, mu)
    r, u = result.r, result.u
    assert r[0] > 0
    assert abs(u[0]) <= 1e-14 * (1 + np.abs(b).max())
    assert abs(np.linalg.norm(r[1:]) - mu * r[0]) <= 1e-14 * r[0]
    assert np.linalg.norm(u[1:]) > 1e-3  # it does slide
    cross = r[1] * u[2] - r[2] * u[1]
    assert abs(cross) <= 1e-13 * np.linalg.norm(r[1:]) * np.linalg.norm(u[1:])
    assert r[1:] @ u[1:] < 0  # u_T = -s r_T with s > 0


def test_frictionless():
    W = random_spd3(3)
    b = np.array([-1.0, 2.0, -1.0])
    result = solve_ok(W, b, 0.0)
    assert result.r[1] == 0.0 and result.r[2] == 0.0
    np.testing.assert_allclose(result.r[0], -b[0] / W[0, 0], rtol=1e-15)
    assert abs(result.u[0]) <= 1e-15


@pytest.mark.parametrize("degrees", [0.0, 22.5, 45.0])
def test_puck_slides_against_its_velocity(degrees):
    """A puck (I_xx = I_yy) sliding at an angle to the tangent basis: the tangential block of W
    is isotropic, so friction is exactly mu r_N, anti-parallel to b_T."""
    angle = math.radians(degrees)
    mu, speed = 0.4, 2.0
    contacts = [(0, np.array([0.0, 0.0, -0.05]), None, None, frame([0.0, 0.0, 1.0]))]
    velocity = np.array([speed * math.cos(angle), speed * math.sin(angle), -1.0, 0.0, 0.0, 0.0])
    W, b = delassus([(0.5, (2e-3, 2e-3, 3e-3))], contacts, [velocity])
    result = solve_ok(W, b, mu)
    r = result.r
    assert abs(np.linalg.norm(r[1:]) - mu * r[0]) <= 1e-15 * r[0]
    direction = -b[1:] / np.linalg.norm(b[1:])
    np.testing.assert_allclose(r[1:] / np.linalg.norm(r[1:]), direction, rtol=0, atol=1e-14)
    np.testing.assert_allclose(b[1:] / np.linalg.norm(b[1:]), [math.cos(angle), math.sin(angle)], atol=1e-15)
    np.testing.assert_allclose(r[0], -b[0] / W[0, 0], rtol=1e-14)


def test_cone_projection_closed_form():
    mu = 0.5
    np.testing.assert_array_equal(project_on_cone([1.0, 0.2, 0.1], mu), [1.0, 0.2, 0.1])  # inside
    np.testing.assert_array_equal(project_on_cone([-1.0, 0.2, 0.1], mu), 0.0)  # polar cone
    x = np.array([1.0, 3.0, 4.0])
    p = project_on_cone(x, mu)
    assert abs(np.linalg.norm(p[1:]) - mu * p[0]) < 1e-15  # on the boundary
    assert abs((x - p) @ p) < 1e-14  # orthogonal residual
    np.testing.assert_array_equal(project_on_cone([2.0, 1.0, -1.0], 0.0), [2.0, 0.0, 0.0])


def test_singular_block_uses_proximal_term_and_is_exact():
    """W_ii of rank 1 (only the normal direction acts): stick is impossible to solve by inversion,
    the proximal fixed point still gives an exact answer."""
    W = np.diag([1.0, 0.0, 0.0])
    b = np.array([-1.0, 0.3, 0.0])
    result = solve_ok(W, b, 0.5)
    assert result.info["regularized_blocks"] == 1
    np.testing.assert_allclose(result.r, [1.0, -0.5, 0.0], atol=1e-12)


def test_coarse_grid_falls_back_to_the_dense_search():
    """With 8 grid angles two roots of the slip-direction equation share a cell here, so no sign
    change brackets the solution; the dense fallback search must still find it exactly."""
    W = np.array([[134.987, 62.097, 35.636], [62.097, 40.957, 11.611], [35.636, 11.611, 12.631]])
    b = np.array([-0.14, 0.897, -0.863])
    coarse = solve_ok(W, b, 3.0, grid_points=8)
    fine = solve_ok(W, b, 3.0)
    assert coarse.iterations == 1 and coarse.info["local_failures"] == 0
    np.testing.assert_allclose(coarse.r, fine.r, rtol=0, atol=1e-15)


# --- multi-contact rigid-body problems --------------------------------------------------------


@pytest.mark.parametrize("motion", ["resting", "sliding", "sliding-spinning", "lifting"])
def test_box_on_four_corners(motion):
    g_h = 9.81e-2
    v, w = {
        "resting": ((0, 0, -g_h), (0, 0, 0)),
        "sliding": ((1.0, 0.3, -g_h), (0, 0, 0)),
        "sliding-spinning": ((0.5, 0.0, -g_h), (0, 0, 2.0)),
        "lifting": ((0.2, 0, -g_h), (1.5, 0, 0)),
    }[motion]
    W, b = box_on_corners(np.array(v, float), np.array(w, float))
    assert np.linalg.matrix_rank(W) == 6
    result = solve_ok(W, b, 0.5)
    u = result.u
    if motion == "resting":
        np.testing.assert_allclose(u, 0.0, atol=1e-9)
        np.testing.assert_allclose(result.r[0::3].sum(), g_h, rtol=1e-9)  # the normal impulses carry the weight
    if motion == "sliding":
        ut = u.reshape(4, 3)[:, 1:]
        assert np.all(np.linalg.norm(ut, axis=1) > 0.1)
        np.testing.assert_allclose(result.r[0::3].sum(), g_h, rtol=1e-9)


@pytest.mark.parametrize("nc", [2, 3, 4, 6, 8, 10])
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("unique", [True, False], ids=["full-rank", "one-body"])
def test_random_rigid_bodies(nc, seed, unique):
    W, b, mu = random_bodies(nc, seed, unique)
    # One body on many contacts converges linearly and slowly (~1500 sweeps for one-body-1-6;
    # Siconos' NSGS needs ~2400 there): allow more sweeps than the default.
    result = solve_ok(W, b, mu, max_sweeps=1000 if unique else 5000)
    warm = solve_ok(W, b, mu, initial_guess=result.r)
    assert warm.iterations == 0


def test_over_relaxation_on_a_slow_problem():
    W, b, mu = random_bodies(6, 1, unique=False)
    plain = solve_ok(W, b, mu, max_sweeps=5000)
    relaxed = solve_ok(W, b, mu, max_sweeps=5000, relaxation=1.3)
    assert relaxed.iterations < plain.iterations / 1.5
    np.testing.assert_allclose(relaxed.u, plain.u, rtol=0, atol=1e-6)


def test_mu_per_contact_and_warm_start_shape():
    W, b = box_on_corners(np.array([1.0, 0.0, -0.1]))
    mu = np.array([0.0, 0.2, 0.5, 1.0])
    solve_ok(W, b, mu)
    solve_ok(W, b, mu, initial_guess=np.ones(12))


def test_no_contacts():
    result = solve_friction_contact(np.zeros((0, 0)), np.zeros(0), 0.5)
    assert result.success and result.r.shape == (0,)


# --- failures and bad input -------------------------------------------------------------------


def test_sweep_limit_is_not_solved():
    W, b = box_on_corners(np.array([0.5, 0.0, -0.1]), np.array([0.0, 0.0, 2.0]))
    result = solve_friction_contact(W, b, 0.5, max_sweeps=1)
    assert result.status == Status.MAX_ITERATIONS and not result.success
    assert result.iterations == 1 and result.relative_residual > TOL
    with pytest.raises(SolverFailure, match="MAX_ITERATIONS"):
        solve_friction_contact(W, b, 0.5, max_sweeps=1, raise_on_failure=True)


def test_infeasible_is_not_solved():
    """A zero block cannot stop an approaching contact: no solution exists."""
    result = solve_friction_contact(np.zeros((3, 3)), np.array([-1.0, 0.0, 0.0]), 0.5, max_sweeps=20)
    assert not result.success
    assert result.status in (Status.MAX_ITERATIONS, Status.NUMERICAL_ERROR)


@pytest.mark.parametrize(
    "kwargs, culprit",
    [
        (dict(W=np.eye(4), b=np.zeros(3), mu=0.5), "W"),
        (dict(W=np.eye(3)[:, :2], b=np.zeros(3), mu=0.5), "W"),
        (dict(W=np.eye(3), b=np.zeros(4), mu=0.5), "b"),
        (dict(W=np.eye(6), b=np.zeros(3), mu=0.5), "W"),
        (dict(W=np.eye(3), b=np.zeros((3, 1)), mu=0.5), "b"),
        (dict(W=np.full((3, 3), np.nan), b=np.zeros(3), mu=0.5), "W"),
        (dict(W=np.eye(3), b=np.array([0.0, np.inf, 0.0]), mu=0.5), "b"),
        (dict(W=np.eye(3), b=np.zeros(3), mu=-0.1), "mu"),
        (dict(W=np.eye(6), b=np.zeros(6), mu=[0.1, -0.1]), "mu"),
        (dict(W=np.eye(6), b=np.zeros(6), mu=[0.1, 0.2, 0.3]), "mu"),
        (dict(W=np.eye(3), b=np.zeros(3), mu=np.nan), "mu"),
        (dict(W=np.eye(3), b=np.zeros(3), mu=0.5, tolerance=0.0), "tolerance"),
        (dict(W=np.eye(3), b=np.zeros(3), mu=0.5, tolerance=-1e-3), "tolerance"),
        (dict(W=np.eye(3), b=np.zeros(3), mu=0.5, method="pgs"), "method"),
        (dict(W=np.eye(3), b=np.zeros(3), mu=0.5, sweeps=3), "sweeps"),
        (dict(W=np.eye(3), b=np.zeros(3), mu=0.5, max_sweeps=0), "max_sweeps"),
        (dict(W=np.eye(3), b=np.zeros(3), mu=0.5, grid_points=4), "grid_points"),
        (dict(W=np.eye(3), b=np.zeros(3), mu=0.5, proximal=0.0), "proximal"),
        (dict(W=np.eye(3), b=np.zeros(3), mu=0.5, relaxation=2.0), "relaxation"),
        (dict(W=[[1, 0, 0], [0, 1, 0], ["a", 0, 1]], b=np.zeros(3), mu=0.5), "W"),
        (dict(W=np.eye(3), b=np.zeros(3), mu=0.5, initial_guess=np.zeros(6)), "initial_guess"),
        (dict(W=np.eye(3), b=np.zeros(3), mu=0.5, initial_guess=[np.nan, 0, 0]), "initial_guess"),
        (dict(W=np.eye(3), b=np.zeros(3), mu=0.5, method="siconos-nsgs", max_sweeps=3), "max_sweeps"),
    ],
)
def test_bad_input_names_the_culprit(kwargs, culprit):
    with pytest.raises(ValueError, match=culprit):
        solve_friction_contact(**kwargs)


def test_unknown_option_is_also_a_type_error():
    with pytest.raises(TypeError, match="sweeps"):
        solve_friction_contact(np.eye(3), np.zeros(3), 0.5, sweeps=3)
    assert issubclass(UnknownOptionError, ValueError)


def test_options_are_frozen_and_checked():
    options = Options()
    assert options.max_sweeps == 1000
    with pytest.raises(AttributeError):
        options.max_sweeps = 3  # type: ignore[misc]


# --- Siconos cross-check ----------------------------------------------------------------------

SINGLE = [
    (np.eye(3), np.array([-1.0, 1.0, 0.5]), 0.3),
    (np.eye(3), np.array([-1.0, 0.1, 0.05]), 0.3),
    (np.eye(3), np.array([0.5, 0.1, 0.05]), 0.3),
    (random_spd3(0, 30.0), np.array([-1.0, 2.0, -1.0]), 0.6),
    (random_spd3(1, 30.0), np.array([-0.3, 0.1, 0.4]), 1.2),
    (random_spd3(2, 5.0), np.array([-2.0, -3.0, 0.5]), 0.0),
]


def _close(ours, theirs, tol=1e-7):
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=tol * max(1.0, np.abs(theirs).max(initial=0)))


@pytest.mark.siconos
@pytest.mark.parametrize("method", SICONOS_METHODS)
@pytest.mark.parametrize("case", range(len(SINGLE)))
def test_single_contact_matches_siconos(case, method, siconos):
    W, b, mu = SINGLE[case]
    ours = solve_ok(W, b, mu)
    theirs = solve_ok(W, b, mu, method)
    _close(ours.r, theirs.r)


@pytest.mark.siconos
@pytest.mark.parametrize("method", SICONOS_METHODS)
def test_single_contact_with_two_solutions(method, siconos):
    """Large friction (mu = 1) with strong normal-tangent coupling in W: a stick and a slide
    solution both exist. Ours takes stick (the cases are tried in order separation, stick,
    slide); Siconos finds the slide. Both satisfy the Coulomb law."""
    W = np.array([[0.618, -0.7811, 0.5403], [-0.7811, 1.0, -0.6887], [0.5403, -0.6887, 0.6089]])
    b = np.array([-0.4583, -0.0781, -1.0])
    ours = solve_ok(W, b, 1.0)
    theirs = solve_ok(W, b, 1.0, method)
    np.testing.assert_allclose(ours.u, 0.0, atol=1e-12)  # stick
    assert abs(np.linalg.norm(theirs.r[1:]) - theirs.r[0]) <= 1e-9 * theirs.r[0]  # slide
    assert np.linalg.norm(theirs.u[1:]) > 0.1
    again = solve_ok(W, b, 1.0, initial_guess=theirs.r)  # ours accepts the other solution too
    assert again.iterations == 0


@pytest.mark.siconos
@pytest.mark.parametrize("method", SICONOS_METHODS)
@pytest.mark.parametrize("nc", [2, 4, 6, 10])
@pytest.mark.parametrize("seed", range(3))
def test_full_rank_multi_contact_matches_siconos(nc, seed, method, siconos):
    W, b, mu = random_bodies(nc, seed, unique=True)
    assert np.linalg.eigvalsh(W).min() > 1e-6 * np.linalg.eigvalsh(W).max()
    ours = solve_ok(W, b, mu)
    theirs = solve_ok(W, b, mu, method)
    _close(ours.r, theirs.r)
    _close(ours.u, theirs.u)


BOX_MOTIONS = {
    "box-resting": ((0, 0, -0.1), (0, 0, 0)),
    "box-sliding": ((1.0, 0.3, -0.1), (0, 0, 0)),
    "box-spinning": ((0.5, 0, -0.1), (0, 0, 2.0)),
}


def _rank_deficient(problem):
    if problem.startswith("box"):
        v, w = BOX_MOTIONS[problem]
        return (*box_on_corners(np.array(v, float), np.array(w, float)), 0.5)
    return random_bodies(int(problem.split("-")[-1]), 0, unique=False)


@pytest.mark.siconos
@pytest.mark.parametrize("method", SICONOS_METHODS)
@pytest.mark.parametrize("problem", ["box-resting", "box-sliding", "one-body-5", "one-body-8"])
def test_rank_deficient_same_velocities_as_siconos(problem, method, siconos):
    """r is not unique here (four corners, three equations for the normal impulses); on these
    problems the velocities are, and they must agree."""
    W, b, mu = _rank_deficient(problem)
    ours = solve_ok(W, b, mu, max_sweeps=5000)
    theirs = solve_ok(W, b, mu, method)
    _close(ours.u, theirs.u)


@pytest.mark.siconos
@pytest.mark.parametrize("method", SICONOS_METHODS)
def test_spinning_box_velocities_are_not_unique(method, siconos):
    """A box sliding and spinning on four corners: how the (indeterminate) normal impulses are
    shared decides the friction torque, so even u is not unique under exact Coulomb friction.
    Both answers must satisfy the Coulomb law; they need not agree."""
    W, b, mu = _rank_deficient("box-spinning")
    ours = solve_ok(W, b, mu)
    theirs = solve_ok(W, b, mu, method)
    np.testing.assert_allclose(ours.r[0::3].sum(), theirs.r[0::3].sum(), rtol=1e-8)  # total normal impulse


@pytest.mark.siconos
@pytest.mark.parametrize("method", SICONOS_METHODS)
def test_siconos_not_called_on_zero_normal_diagonal(method, siconos):
    """Siconos' NSGS aborts the process (C assertion) when W[3i, 3i] = 0 and the contact
    approaches; the route refuses such problems instead."""
    result = solve_friction_contact(np.diag([0.0, 1.0, 1.0]), np.array([-1.0, 0.0, 0.0]), 0.5, method)
    assert result.status == Status.NUMERICAL_ERROR and "W[0, 0]" in result.message


@pytest.mark.siconos
def test_siconos_info_is_not_trusted(siconos):
    """One Siconos iteration on a hard problem: the framework's residual decides."""
    W, b = box_on_corners(np.array([0.5, 0.0, -0.1]), np.array([0.0, 0.0, 2.0]))
    result = solve_friction_contact(W, b, 0.5, "siconos-nsgs", max_iterations=1)
    assert not result.success
    assert result.status in (Status.EXTERNAL_FAILURE, Status.INACCURATE)


def test_frictionless_separation_is_recognized_as_solved():
    """mu = 0 with a separating normal velocity: r = 0 is the solution, and the framework's
    natural-map residual must say so (the cone K_0 is a ray: the projection of a point with
    negative normal part is 0, not the point itself)."""
    W = np.diag([1.000001e6, 1.0, 1.0])
    result = solve_friction_contact(W, np.array([99.0, 0.0, 0.0]), 0.0)
    assert result.success and result.iterations == 0
    np.testing.assert_array_equal(result.r, 0.0)
    np.testing.assert_allclose(project_on_cone(np.array([-2.0, 0.0, 0.0]), 0.0), 0.0)


# --- the one front door -------------------------------------------------------------------------


def test_the_front_door_solves_the_friction_contact_problem():
    """solvers.solve takes a FrictionContactProblem like a BoundedLCP: the same answer as the
    method runner, nsgs by default, warm start and options passed on, and a method of the other
    problem kind refused by name."""
    import solvers

    W, b, mu = random_bodies(4, 0, True)
    problem = solvers.FrictionContactProblem.make(W, b, mu)
    assert problem.contacts == 4 and problem.mu.tolist() == list(mu)
    result = solvers.solve(problem)
    direct = solve_friction_contact(W, b, mu)
    assert result.success and result.method == "nsgs" and isinstance(result, solvers.FrictionContactResult)
    np.testing.assert_array_equal(result.r, direct.r)
    warm = solvers.solve(problem, initial_guess=result.r, max_sweeps=5)
    assert warm.success and warm.iterations == 0
    with pytest.raises(ValueError, match="solves bounded LCPs"):
        solvers.solve(problem, method="judice-pires")
    with pytest.raises(ValueError, match="pass a solvers.FrictionContactProblem"):
        solvers.solve(W, b, method="nsgs")
    with pytest.raises(TypeError, match="not both"):
        solvers.solve(problem, b)
    slow = solvers.FrictionContactProblem.make(*random_bodies(6, 1, unique=False))  # ~10^3 sweeps
    with pytest.raises(solvers.SolverFailure, match="MAX_ITERATIONS"):
        solvers.solve(slow, max_sweeps=2, raise_on_failure=True)
    with pytest.raises(ValueError, match="mu"):
        solvers.FrictionContactProblem.make(W, b, -0.1)
    with pytest.raises(ValueError, match="W must be square"):
        solvers.FrictionContactProblem.make(W[:3], b, mu)
