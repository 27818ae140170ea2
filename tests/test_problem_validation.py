"""Every validation path of the front door, and that input is never modified."""

import numpy as np
import pytest

from solvers import solve
from solvers.problem import make_problem

INF = np.inf


def ok():
    return np.eye(2), np.array([-1.0, 1.0])


@pytest.mark.parametrize(
    "M, q, lo, hi, exc, pattern",
    [
        (np.eye(2), np.ones(3), None, None, ValueError, r"M must be square with shape \(3, 3\)"),
        (np.ones(2), np.ones(2), None, None, ValueError, r"M must be a 2-D"),
        (np.eye(2), np.ones((2, 1)), None, None, ValueError, r"q must be a 1-D vector, got shape \(2, 1\)"),
        (np.eye(2), np.ones(2), np.zeros(3), None, ValueError, r"lo must have shape \(2,\)"),
        (np.eye(2), np.ones(2), None, np.zeros((2, 2)), ValueError, r"hi must be a 1-D vector"),
        (np.array([[1.0, np.nan], [0, 1]]), np.ones(2), None, None, ValueError, r"M contains NaN at \(0, 1\)"),
        (
            np.array([[1.0, 0], [INF, 1]]),
            np.ones(2),
            None,
            None,
            ValueError,
            r"M contains an infinite entry at \(1, 0\)",
        ),
        (np.eye(2), np.array([1.0, np.nan]), None, None, ValueError, r"q contains NaN at index 1"),
        (np.eye(2), np.array([-INF, 1.0]), None, None, ValueError, r"q contains an infinite entry at index 0"),
        (np.eye(2), np.ones(2), np.array([0.0, np.nan]), None, ValueError, r"lo contains NaN at index 1"),
        (np.eye(2), np.ones(2), None, np.array([np.nan, 1.0]), ValueError, r"hi contains NaN at index 0"),
        (
            np.eye(2),
            np.ones(2),
            np.array([0.0, 2.0]),
            np.array([1.0, 1.0]),
            ValueError,
            r"lo\[1\] = 2.0 > hi\[1\] = 1.0",
        ),
        (np.eye(2), np.ones(2), np.array([INF, 0.0]), INF, ValueError, r"lo\[0\] = \+inf"),
        (np.eye(2), np.ones(2), -INF, np.array([1.0, -INF]), ValueError, r"hi\[1\] = -inf"),
        (np.eye(2) * 1j, np.ones(2), None, None, TypeError, r"M must be real"),
        (np.array([["a", "b"], ["c", "d"]]), np.ones(2), None, None, TypeError, r"M must be real numbers"),
        ([[1, 2], [3]], np.ones(2), None, None, ValueError, r"M could not be converted"),
    ],
)
def test_bad_input_is_named(M, q, lo, hi, exc, pattern):
    with pytest.raises(exc, match=pattern):
        solve(M, q, lo, hi)


def test_unknown_method_and_option():
    M, q = ok()
    with pytest.raises(ValueError, match=r"unknown method 'simplex'"):
        solve(M, q, method="simplex")
    with pytest.raises(TypeError, match=r"unknown option\(s\) \['omega'\] for method 'judice-pires'"):
        solve(M, q, omega=1.2)
    with pytest.raises(TypeError, match=r"unknown option"):
        solve(M, q, method="pgs", max_iterations=3)


@pytest.mark.parametrize(
    "method, options, pattern",
    [
        ("judice-pires", {"max_stall": 0}, r"max_stall must be an integer >= 1"),
        ("judice-pires", {"pivot_tolerance": -1.0}, r"pivot_tolerance must be a finite number > 0"),
        ("judice-pires", {"regularization": float("nan")}, r"regularization must be a finite number >= 0"),
        ("judice-pires", {"max_iterations": 2.5}, r"max_iterations must be an integer"),
        ("pgs", {"relaxation": 2.0}, r"relaxation must be in \(0, 2\)"),
        ("lemke", {"max_pivots": -1}, r"max_pivots must be an integer >= 0"),
        ("siconos", {"solver": "enum"}, r"solver must be one of"),
    ],
)
def test_bad_options(method, options, pattern):
    M, q = ok()
    with pytest.raises(ValueError, match=pattern):
        solve(M, q, method=method, **options)


def test_bad_tolerance_and_warm_start():
    M, q = ok()
    with pytest.raises(ValueError, match=r"tolerance must be a finite number > 0"):
        solve(M, q, tolerance=0.0)
    with pytest.raises(ValueError, match=r"warm_start must have shape \(2,\)"):
        solve(M, q, warm_start=[0, 0, 0])
    with pytest.raises(ValueError, match=r"warm_start\[1\] = 5 is not an active-set code"):
        solve(M, q, warm_start=[0, 5])
    with pytest.raises(TypeError, match=r"warm_start must hold integer"):
        solve(M, q, warm_start=[0.0, 1.0])
    with pytest.raises(ValueError, match=r"initial_guess must be a finite vector of shape \(2,\)"):
        solve(M, q, method="pgs", initial_guess=[np.nan, 0.0])


def test_problem_and_arrays_together_rejected():
    M, q = ok()
    problem = make_problem(M, q)
    with pytest.raises(TypeError, match="either a BoundedLCP or"):
        solve(problem, q)
    assert solve(problem).success
    with pytest.raises(TypeError, match="needs q"):
        solve(M)


def test_inputs_are_not_modified():
    rng = np.random.default_rng(3)
    A = rng.standard_normal((6, 6))
    M = A @ A.T + np.eye(6)
    q = rng.standard_normal(6)
    lo, hi = -np.ones(6), np.ones(6)
    copies = [x.copy() for x in (M, q, lo, hi)]
    for method in ("judice-pires", "lemke", "pgs"):
        solve(M, q, lo, hi, method=method)
        for before, after in zip(copies, (M, q, lo, hi)):
            np.testing.assert_array_equal(before, after)


def test_scalar_bounds_broadcast_and_empty_problem():
    r = solve(np.eye(3), [-1.0, 2.0, -3.0], -1.0, 1.0)
    np.testing.assert_allclose(r.z, [1.0, -1.0, 1.0])
    empty = solve(np.zeros((0, 0)), np.zeros(0))
    assert empty.success and empty.z.shape == (0,)
