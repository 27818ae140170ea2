"""The reformulations used by the Lemke, PGS and Siconos routes are exact."""

import numpy as np

from solvers import library as L
from solvers import solve
from solvers.problem import make_problem
from solvers.reformulate import eliminate_free, split_boxes


def test_schur_elimination_and_box_split_reproduce_the_solution():
    case = L.random_spd(40, 7, "mixed")
    problem = make_problem(*case.args)
    z = solve(problem).z
    elimination = eliminate_free(problem)
    assert elimination.reduced.n == int((~problem.free).sum())
    # the reduced problem's solution is the bounded part of z
    reduced = solve(elimination.reduced)
    np.testing.assert_allclose(reduced.z, z[elimination.bounded], atol=1e-10)
    np.testing.assert_allclose(elimination.recover(reduced.z), z, atol=1e-10)
    # the split LCP: x = S (z - z0), y = max(-w, 0) on boxes satisfies it
    split = split_boxes(elimination.reduced)
    zb, wb = reduced.z, reduced.w
    x = split.sign[split.moving] * (zb - split.z0)[split.moving]
    boxed = np.isfinite(elimination.reduced.lo) & np.isfinite(elimination.reduced.hi)
    y = np.maximum(-wb[boxed], 0.0)
    xi = np.concatenate([x, y])
    slack = split.M @ xi + split.q
    assert xi.min() >= -1e-12 and slack.min() >= -1e-9
    assert abs(xi @ slack) <= 1e-9 * (1 + np.abs(split.q).max())
    np.testing.assert_allclose(split.recover(x), zb, atol=1e-12)


def test_split_handles_fixed_and_upper_only():
    problem = make_problem(np.eye(3), [1.0, -5.0, 0.0], [0.3, -np.inf, 0.0], [0.3, 2.0, np.inf])
    split = split_boxes(problem)
    assert split.moving.tolist() == [1, 2] and split.sign.tolist() == [0.0, -1.0, 1.0]
    assert solve(problem, method="lemke").z.tolist() == [0.3, 2.0, 0.0]


def test_the_free_variables_are_recovered_to_each_rows_own_rounding():
    """The free block of the Solo-12's step in the air (its 78 velocities and 72 joint and servo
    rows, nothing bounded; tests/data/solo12-free-block-row-scales.npz): one LU solve leaves a
    residual of 6e-17 in a row whose own scale is 6e-16, 0.1 by the framework's row-relative
    measure; iterative refinement brings every row to rounding, so Lemke (which eliminates the
    free variables and pivots on nothing) reports it solved instead of leaving it to the fallback."""
    import os

    from solvers.result import relative_residual

    data = np.load(os.path.join(os.path.dirname(__file__), "data", "solo12-free-block-row-scales.npz"))
    n = data["q"].size
    M = np.zeros((n, n))
    M[data["rows"], data["cols"]] = data["values"]
    lo, hi = np.full(n, -np.inf), np.full(n, np.inf)
    z = eliminate_free(make_problem(M, data["q"], lo, hi)).recover(np.zeros(0))
    assert relative_residual(M, data["q"], lo, hi, z) < 1e-14
    result = solve(make_problem(M, data["q"], lo, hi), method="lemke", tolerance=1e-9)
    assert result.status.name == "SOLVED" and result.relative_residual < 1e-14
