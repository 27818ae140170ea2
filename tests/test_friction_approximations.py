"""solvers.friction_approximations: lcpdyn's box, polygonal and regularized friction posed on a
Delassus problem, against answers known in closed form (one contact with W = I, where every
model is a projection of -q_T onto its friction set) and against the exact Coulomb solution."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import solvers
from solvers import FrictionContactProblem
from solvers import friction_approximations as fa

from .test_problem_files import _whole_set

MU = 0.5
TIGHT = fa.FixedPointOptions(tolerance=1e-13)  # closed-form answers: iterate to rounding level


def one_contact(q, mu=MU, W=None):
    return FrictionContactProblem.make(np.eye(3) if W is None else W, np.asarray(q, float), [mu])


def sliding(angle, speed=4.0):
    """One contact, W = I, pressed (q_N = -1, so r_N = 1) and sliding with free slip ``speed``
    in direction ``angle``: exact r_T = -mu (cos, sin)."""
    return one_contact([-1.0, speed * math.cos(angle), speed * math.sin(angle)])


def exact(problem):
    result = solvers.solve(problem, method="nsgs", tolerance=1e-12)
    assert result.success, result.message
    return result.r


def coupled(seed, contacts=3, mu=0.6, tangential=1.0):
    """A random SPD Delassus matrix coupling normal and tangential directions."""
    rng = np.random.default_rng(seed)
    n = 3 * contacts
    A = rng.normal(size=(n, n))
    W = A @ A.T / n + 0.5 * np.eye(n)
    q = np.zeros(n)
    q[0::3] = -rng.uniform(0.5, 1.5, contacts)
    q[1::3] = tangential * rng.normal(size=contacts)
    q[2::3] = tangential * rng.normal(size=contacts)
    return FrictionContactProblem.make(W, q, mu)


MODELS = [fa.Box(), fa.Polygonal(4), fa.Polygonal(8), fa.Polygonal(16), fa.Regularized()]


# --- one contact, W = I: closed-form answers -----------------------------------------------------
def test_box_at_45_degrees_reaches_sqrt2_mu_rn_aligned():
    problem = sliding(math.pi / 4)
    result = fa.approximate(problem, fa.Box(), TIGHT)
    assert result.converged, result.message
    r = result.r
    assert r[0] == pytest.approx(1.0, abs=1e-9)
    np.testing.assert_allclose(r[1:], [-MU, -MU], atol=1e-9)  # both components on their bounds
    assert np.linalg.norm(r[1:]) == pytest.approx(math.sqrt(2) * MU * r[0], rel=1e-9)
    metrics = fa.contact_metrics(problem, r, exact(problem))
    assert metrics.cone_excess[0] == pytest.approx(math.sqrt(2) - 1, rel=1e-8)
    assert metrics.misalignment_deg[0] == pytest.approx(0.0, abs=1e-6)  # the diagonal is symmetric
    assert metrics.force_deviation[0] == pytest.approx(
        MU * (math.sqrt(2) - 1) / math.sqrt(1 + MU**2), rel=1e-7
    )  # |r - r_exact| = mu (sqrt 2 - 1) along the slip


@pytest.mark.parametrize("angle", [0.0, math.pi / 2, math.pi, 3 * math.pi / 2])
def test_box_along_an_axis_is_exact(angle):
    problem = sliding(angle)
    result = fa.approximate(problem, fa.Box(), TIGHT)
    metrics = fa.contact_metrics(problem, result.r, exact(problem))
    assert metrics.force_deviation[0] < 1e-8
    assert metrics.misalignment_deg[0] < 1e-5
    assert metrics.cone_excess[0] < 1e-8


def test_box_misaligned_between_axis_and_diagonal():
    angle = math.radians(30.0)
    problem = sliding(angle)
    result = fa.approximate(problem, fa.Box(), TIGHT)
    np.testing.assert_allclose(result.r[1:], [-MU, -MU], atol=1e-9)
    slip = 4.0 * np.array([math.cos(angle), math.sin(angle)]) - MU  # u_T = q_T + r_T
    expected = 45.0 - math.degrees(math.atan2(slip[1], slip[0]))
    metrics = fa.contact_metrics(problem, result.r, exact(problem))
    assert metrics.misalignment_deg[0] == pytest.approx(expected, rel=1e-7)
    assert metrics.misalignment_deg[0] > 15.0


def test_polygonal_error_is_order_one_over_k_squared():
    """Slip towards the middle of a facet: the k-gon's force is mu r_N cos(pi/k), aligned, so the
    deviation is mu (1 - cos(pi/k)) / sqrt(1 + mu^2) ~ pi^2 mu / (2 k^2 sqrt(1 + mu^2))."""
    deviations = []
    for k in (4, 8, 16, 32, 64):
        problem = sliding(math.pi + math.pi / k)  # -q_T points at the facet midpoint angle pi/k
        result = fa.approximate(problem, fa.Polygonal(k), TIGHT)
        assert result.converged, result.message
        assert np.linalg.norm(result.r[1:]) == pytest.approx(MU * math.cos(math.pi / k), rel=1e-8)
        metrics = fa.contact_metrics(problem, result.r, exact(problem))
        assert metrics.misalignment_deg[0] < 1e-5
        assert metrics.cone_excess[0] == 0.0
        expected = MU * (1 - math.cos(math.pi / k)) / math.sqrt(1 + MU**2)
        assert metrics.force_deviation[0] == pytest.approx(expected, rel=1e-6)
        deviations.append(metrics.force_deviation[0])
    ratios = np.array(deviations[:-1]) / np.array(deviations[1:])
    assert np.all(ratios > 3.7) and np.all(ratios < 4.01)  # halving 1/k quarters the error
    assert deviations[-1] * 64**2 == pytest.approx(math.pi**2 / 2 * MU / math.sqrt(1 + MU**2), rel=1e-3)


def test_polygonal_vertex_direction_is_exact():
    problem = sliding(math.pi + 2 * math.pi * 3 / 8)  # -q_T along the vertex d_3 of the octagon
    result = fa.approximate(problem, fa.Polygonal(8), TIGHT)
    metrics = fa.contact_metrics(problem, result.r, exact(problem))
    assert metrics.force_deviation[0] < 1e-8


@pytest.mark.parametrize("angle_deg", [0.0, 17.0, 45.0, 100.0, 222.0])
def test_regularized_matches_exact_sliding(angle_deg):
    problem = sliding(math.radians(angle_deg))
    result = fa.approximate(problem, fa.Regularized(), TIGHT)
    assert result.converged, result.message
    np.testing.assert_allclose(result.r, exact(problem), atol=1e-7)


def test_stick_every_model_equals_exact_single_contact():
    problem = one_contact([-1.0, 0.1, 0.05])  # |q_T| = 0.11 < mu cos(pi/4): inside every polygon
    reference = exact(problem)
    np.testing.assert_allclose(reference, [1.0, -0.1, -0.05], atol=1e-12)
    for model in MODELS:
        result = fa.approximate(problem, model)
        assert result.converged, (model, result.message)
        np.testing.assert_allclose(result.r, reference, atol=1e-8, err_msg=model.label)
        metrics = fa.contact_metrics(problem, result.r, reference)
        assert not metrics.sliding.any()


def test_stick_every_model_equals_exact_coupled():
    problem = coupled(seed=2, mu=2.0, tangential=0.05)
    reference = exact(problem)
    u = problem.W @ reference + problem.b
    assert np.abs(u.reshape(-1, 3)[:, 1:]).max() < 1e-9  # every contact sticks
    rr = reference.reshape(-1, 3)
    assert np.all(rr[:, 0] > 0.5)
    assert np.all(np.linalg.norm(rr[:, 1:], axis=1) < 2.0 * rr[:, 0] * math.cos(math.pi / 4))
    for model in MODELS:
        result = fa.approximate(problem, model)
        assert result.converged, (model, result.message)
        np.testing.assert_allclose(result.r, reference, atol=1e-7, err_msg=model.label)


# --- the fixed point -----------------------------------------------------------------------------
@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.label)
def test_fixed_point_converges_on_coupled_sliding_problem(model):
    problem = coupled(seed=7, mu=0.8, tangential=2.0)
    result = fa.approximate(problem, model)
    assert result.converged, result.message
    assert result.iterations > 2  # the normal force really had to be found
    assert result.residual <= 1e-8
    assert result.history[-1] == result.residual and result.history[0] > 1e-4
    rr = result.r.reshape(-1, 3)
    ratio = np.linalg.norm(rr[:, 1:], axis=1) / (problem.mu * rr[:, 0])
    limit = math.sqrt(2) if isinstance(model, fa.Box) else 1.0
    assert ratio.max() <= limit * (1 + 1e-7)  # its own friction set, with bounds from its own r_N


def test_regularized_fixed_point_is_an_exact_coulomb_solution():
    problem = coupled(seed=11, mu=0.4, tangential=2.0)
    result = fa.approximate(problem, fa.Regularized())
    assert result.converged
    assert result.coulomb_residual < 1e-6
    np.testing.assert_allclose(result.r, exact(problem), atol=1e-6)
    box = fa.approximate(problem, fa.Box())
    assert box.coulomb_residual > 1e-3  # the box is not Coulomb


def test_unconverged_is_reported_as_such():
    problem = coupled(seed=7, mu=0.8, tangential=2.0)
    result = fa.approximate(problem, fa.Box(), fa.FixedPointOptions(max_iterations=2))
    assert not result.converged
    assert result.iterations == 2
    assert result.residual > 1e-8
    assert "not self-consistent after 2 iterations" in result.message


def test_zonotope_and_anitescu_potra_posings_agree():
    problem = coupled(seed=5, contacts=2, mu=0.7, tangential=1.5)
    zonotope = fa.approximate(problem, fa.Polygonal(6, formulation=fa.ZONOTOPE))
    engine = fa.approximate(problem, fa.Polygonal(6, formulation=fa.ANITESCU_POTRA))
    assert zonotope.converged and engine.converged, (zonotope.message, engine.message)
    np.testing.assert_allclose(zonotope.r, engine.r, atol=1e-7)
    odd = fa.approximate(problem, fa.Polygonal(5))
    assert odd.parameters["formulation"] == fa.ANITESCU_POTRA and odd.converged


@pytest.mark.parametrize("k", [4, 6, 8, 16])
def test_zonotope_is_the_engine_polygon(k):
    generators, half = fa.zonotope_generators(k)
    vertices = fa.polygon_vertices(k)
    for angle in np.linspace(0.0, 2 * math.pi, 97):
        direction = np.array([math.cos(angle), math.sin(angle)])
        support_zonotope = half * np.abs(direction @ generators).sum()
        support_polygon = (direction @ vertices).max()
        assert support_zonotope == pytest.approx(support_polygon, abs=1e-12)


# --- metrics -------------------------------------------------------------------------------------
def test_metrics_handle_contacts_without_exact_force():
    W = np.eye(6)
    q = np.array([-1.0, 2.0, 0.0, 1.0, 0.0, 0.0])  # contact 1 separates (q_N > 0)
    problem = FrictionContactProblem.make(W, q, MU)
    reference = exact(problem)
    assert np.all(reference[3:] == 0.0)
    r = reference.copy()
    r[3] = 0.25  # a spurious normal impulse where the exact answer has none
    metrics = fa.contact_metrics(problem, r, reference)
    assert metrics.exact_zero.tolist() == [False, True]
    assert np.isnan(metrics.force_deviation[1]) and metrics.force_deviation[0] < 1e-12
    assert metrics.spurious_force[1] == pytest.approx(0.25 / np.linalg.norm(reference[:3]))
    assert np.isnan(metrics.spurious_force[0])
    assert metrics.normalized_friction_force_exact == pytest.approx(1.0, rel=1e-9)  # sliding: |r_T| = mu r_N


def test_metrics_thresholds_scale_with_the_problem():
    problem = sliding(0.3)
    scaled = FrictionContactProblem.make(problem.W, 1000.0 * problem.b, problem.mu)
    a = fa.contact_metrics(problem, exact(problem), exact(problem))
    b = fa.contact_metrics(scaled, exact(scaled), exact(scaled))
    assert b.slip_velocity == pytest.approx(1000.0 * a.slip_velocity)
    assert a.sliding.tolist() == b.sliding.tolist() == [True]
    assert a.misalignment_rms_deg < 1e-6 and b.misalignment_rms_deg < 1e-6


# --- bad input -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "make, words",
    [
        (lambda: fa.Polygonal(2), "directions k"),
        (lambda: fa.Polygonal(True), "directions k"),
        (lambda: fa.Polygonal(4.0), "directions k"),
        (lambda: fa.Polygonal(5, formulation="zonotope"), "even number"),
        (lambda: fa.Polygonal(8, formulation="hexagon"), "formulation"),
        (lambda: fa.Regularized(compliance=-1.0), "compliance"),
        (lambda: fa.Regularized(velocity_threshold=math.nan), "velocity_threshold"),
        (lambda: fa.FixedPointOptions(tolerance=0.0), "tolerance"),
        (lambda: fa.FixedPointOptions(relaxation=1.5), "relaxation"),
        (lambda: fa.FixedPointOptions(max_iterations=0), "max_iterations"),
        (lambda: fa.MetricOptions(slip_threshold=-1.0), "slip_threshold"),
        (lambda: fa.model_from_label("cone"), "unknown model label"),
        (lambda: fa.model_from_label("polygonal-x"), "not an integer"),
    ],
)
def test_bad_input_names_the_culprit(make, words):
    with pytest.raises(ValueError, match=words):
        make()


def test_negative_mu_is_refused():
    with pytest.raises(ValueError, match="mu"):
        fa.approximate(FrictionContactProblem.make(np.eye(3), [-1.0, 1.0, 0.0], [-0.1]), fa.Box())
    bypass = FrictionContactProblem(np.eye(3), np.array([-1.0, 1.0, 0.0]), np.array([-0.1]))
    with pytest.raises(ValueError, match=r"mu\[0\] = -0.1"):
        fa.approximate(bypass, fa.Box())


def test_wrong_types_and_shapes_are_refused():
    problem = sliding(0.0)
    with pytest.raises(TypeError, match="FrictionContactProblem"):
        fa.approximate((np.eye(3), np.zeros(3), [0.5]), fa.Box())
    with pytest.raises(TypeError, match="model"):
        fa.approximate(problem, "box")
    with pytest.raises(ValueError, match="initial_guess"):
        fa.approximate(problem, fa.Box(), initial_guess=np.zeros(4))
    with pytest.raises(ValueError, match="r_exact"):
        fa.contact_metrics(problem, np.zeros(3), np.zeros(6))
    with pytest.raises(ValueError, match="non-finite"):
        fa.contact_metrics(problem, np.array([np.nan, 0.0, 0.0]), np.zeros(3))


def test_regularized_with_bristle_compliance_reaches_the_same_answer():
    """A positive C_T = 1/(k_T h^2) (Eq. 26) changes the iteration, not the fixed point."""
    problem = coupled(seed=11, mu=0.4, tangential=2.0)
    rigid = fa.approximate(problem, fa.Regularized())
    soft = fa.approximate(problem, fa.Regularized(compliance=1e-3))
    assert rigid.converged and soft.converged, (rigid.message, soft.message)
    assert soft.parameters["compliance_absolute"][0] > 0.0
    np.testing.assert_allclose(soft.r, rigid.r, atol=1e-6)


def test_time_limit_stops_without_claiming_convergence():
    problem = coupled(seed=7, mu=0.8, tangential=2.0)
    result = fa.approximate(problem, fa.Box(), fa.FixedPointOptions(time_limit=1e-9))
    assert not result.converged and result.iterations == 1
    assert "time limit" in result.message


# --- extension point -----------------------------------------------------------------------------
class _TurnedSquare:
    """A user's model written against the Posing protocol alone: the square of half-width
    mu r_N / sqrt(2) turned by 45 degrees, i.e. the polygon with k = 4 (vertices on t1, t2)."""

    label = "turned-square"

    def parameters(self):
        return {"model": self.label}

    def posing(self, context):
        return _TurnedSquarePosing(context)


class _TurnedSquarePosing:
    unknowns = 3
    lagged = True
    default_method = "judice-pires"
    parameters = {"model": "turned-square"}

    def __init__(self, context):
        self.context = context
        nc = context.contacts
        c = 1.0 / math.sqrt(2.0)
        self.blocks = np.zeros((nc, 3, 3))
        self.blocks[:, 0, 0] = 1.0
        self.blocks[:, 1:, 1:] = [[c, -c], [c, c]]
        T = np.zeros((3 * nc, 3 * nc))
        for a in range(nc):
            T[3 * a : 3 * a + 3, 3 * a : 3 * a + 3] = self.blocks[a]
        self.M = T.T @ context.W @ T
        self.q = T.T @ context.q
        self.T = T

    def pose(self, r, u):
        bound = self.context.mu * np.clip(r[0::3], 0.0, None) / math.sqrt(2.0)
        lo, hi = np.repeat(-bound, 3), np.repeat(bound, 3)
        lo[0::3], hi[0::3] = 0.0, np.inf
        return fa.PosedLCP(self.M, self.q, lo, hi, self.blocks, np.ones(self.q.size))

    def unknowns_of(self, posed, r, z):
        return z

    def center(self, posed, r, z):
        return self.T.T @ r if z is None else z


def test_a_users_model_plugs_in_through_the_posing_protocol():
    problem = coupled(seed=11, contacts=3, mu=0.5, tangential=2.0)
    mine = fa.approximate(problem, _TurnedSquare())
    builtin = fa.approximate(problem, fa.Polygonal(4))
    assert mine.converged and builtin.converged, (mine.message, builtin.message)
    assert mine.model == "turned-square"
    np.testing.assert_allclose(mine.r, builtin.r, atol=1e-7 * np.abs(builtin.r).max())
    with pytest.raises(TypeError, match="posing"):
        fa.approximate(problem, object())


# --- third-party contacts: the 19 small files of the fc3d set ------------------------------------
SMALL_FILES = sorted((Path(__file__).parent / "data" / "fc3d").glob("*.dat"))


def test_approximations_on_the_small_third_party_problems():
    """Every model reaches its fixed point on each of the 19 small Rover/FC3D/Confeti files;
    the inscribed polygons never leave the Coulomb cone, the box leaves it by at most sqrt(2) - 1;
    the regularized model's fixed point is the exact Coulomb answer (these have unique
    solutions); and over the set the polygon's force error falls as k grows."""
    assert len(SMALL_FILES) == 19
    pooled = {model.label: [] for model in MODELS}
    for path in SMALL_FILES:
        problem = solvers.read_siconos_dat(path)
        exact_answer = solvers.solve(problem, method="auto", tolerance=1e-12)
        assert exact_answer.success, (path.name, exact_answer.message)
        for model in MODELS:
            # the regularized answer is compared to 1e-6: both solved to rounding level, as
            # W's conditioning amplifies a 1e-8 residual (to 2e-6 on Confeti-ex13-4contact)
            result = fa.approximate(problem, model, TIGHT if model.label == "regularized" else None)
            assert result.converged, (path.name, model.label, result.message)
            metrics = fa.contact_metrics(problem, result.r, exact_answer.r)
            excess = metrics.cone_excess[np.isfinite(metrics.cone_excess)]
            limit = math.sqrt(2.0) - 1.0 if model.label == "box" else 0.0
            # (at the 1e-8 fixed point the lagged bound mu r_N differs from the answer's by ~1e-8)
            assert excess.max(initial=0.0) <= limit + 1e-6, (path.name, model.label, excess.max())
            deviation = metrics.force_deviation[np.isfinite(metrics.force_deviation)]
            pooled[model.label].extend(deviation)
            if model.label == "regularized":
                assert result.coulomb_residual <= 1e-7, (path.name, result.coulomb_residual)
                assert deviation.max(initial=0.0) <= 1e-6, (path.name, deviation.max())
    medians = {label: float(np.median(values)) for label, values in pooled.items()}
    assert medians["polygonal-16"] < medians["polygonal-8"] < medians["polygonal-4"], medians
    assert medians["regularized"] < 1e-7 < 1e-3 < medians["polygonal-16"], medians


def test_a_drift_along_a_hyperstatic_solution_set_is_sped_up():
    """Capsules-i103-990 (275 contacts, W of rank 553 of 825): with the box model two contacts
    of one capsule trade 3.8e-8 of normal load per iteration and the residual stays at 4.3e-8;
    with omega halving alone the run ended unconverged after 1000 iterations. Dividing the
    proximal weight when the steps keep their direction reaches the fixed point."""
    whole = _whole_set()
    if whole is None:
        pytest.skip("the 34-problem fc3d set is not here (set LCPDYN_FC3D_PROBLEMS or ../shared/problems/fc3d)")
    problem = solvers.read_siconos_dat(whole / "Capsules-i103-990.dat")
    result = fa.approximate(problem, fa.Box(), fa.FixedPointOptions(max_iterations=400))
    assert result.converged, result.message
    assert result.iterations > 100  # the drift was there to be sped up
