"""Cross-checks against Siconos numerics (mandatory under CI=true, see conftest)."""

import numpy as np
import pytest

from solvers import Status, solve
from solvers import library as L

from .test_solvers import independent_check

UNIQUE = (
    L.hand_cases()
    + [L.murty(8), L.wheel_one_contact(), L.wheel_one_contact(False)]
    + [L.random_spd(n, s, b) for n in (10, 60, 300) for s in (0, 1) for b in ("lcp", "box", "mixed")]
    + [L.random_p_matrix(n, s, "lcp") for n in (10, 50) for s in (0, 1)]
)


@pytest.mark.siconos
@pytest.mark.parametrize("case", UNIQUE, ids=lambda c: c.name)
def test_agrees_with_siconos_where_unique(case, siconos):
    ours = solve(*case.args)
    theirs = solve(*case.args, method="siconos")
    assert ours.success, ours.message
    assert theirs.success, theirs.message
    independent_check(case, theirs)
    np.testing.assert_allclose(ours.z, theirs.z, rtol=0, atol=1e-8 * (1 + np.abs(theirs.z).max()))


@pytest.mark.siconos
@pytest.mark.parametrize("solver", ["lemke", "pivot", "newton-fb"])
def test_siconos_solvers_selectable(solver, siconos):
    case = L.random_spd(30, 3, "mixed")
    result = solve(*case.args, method="siconos", solver=solver)
    assert result.success and result.info["siconos_info"] == 0
    independent_check(case, result)


@pytest.mark.siconos
def test_siconos_failure_is_not_success(siconos):
    """Siconos' Lemke on an LCP without solution: its failure must surface as a status."""
    result = solve(np.array([[-1.0]]), np.array([-1.0]), method="siconos")
    assert not result.success
    assert result.status in (Status.EXTERNAL_FAILURE, Status.INACCURATE)


@pytest.mark.siconos
@pytest.mark.parametrize("case", [L.delassus_rigid_body(10, 0), L.random_psd_duplicated(50, 0)], ids=lambda c: c.name)
def test_singular_problems_same_w_as_siconos(case, siconos):
    ours = solve(*case.args)
    theirs = solve(*case.args, method="siconos")
    assert ours.success and theirs.success, (ours.message, theirs.message)
    np.testing.assert_allclose(ours.w, theirs.w, rtol=0, atol=1e-7 * (1 + np.abs(case.q).max()))
