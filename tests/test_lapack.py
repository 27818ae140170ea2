"""solvers.lapack: LAPACK's LU solve for compiled code, with an exactly singular matrix reported, not
raised -- a compiled function that raises leaks the arrays it allocated."""

from __future__ import annotations

import tracemalloc

import numpy as np

from solvers.basic_systems import basic_solve
from solvers.lapack import lu_inverse, lu_solve


def test_lu_solve_and_inverse_are_numbas_and_report_a_singular_matrix():
    """lu_solve calls the LAPACK entry Numba's compiled np.linalg.solve calls (SciPy's LAPACK):
    the same answer bit for bit. NumPy's own np.linalg.solve uses NumPy's OpenBLAS, whose kernels
    may differ in the last bits (3.7e-14 here on an AMD EPYC core with AVX-512, NumPy 2.4's
    OpenBLAS 0.3.31 against SciPy 1.17's): it agrees to rounding."""
    from numba import njit

    @njit
    def numba_solve(A, b):
        return np.linalg.solve(A, b)

    rng = np.random.default_rng(3)
    A = rng.normal(size=(7, 7))
    b = rng.normal(size=7)
    x, ok = lu_solve(A, b)
    assert ok and np.allclose(A @ x, b, rtol=0, atol=1e-13) and np.array_equal(x, numba_solve(A, b))
    np.testing.assert_allclose(x, np.linalg.solve(A, b), rtol=1e-12)
    inverse, ok = lu_inverse(np.asfortranarray(A))  # any layout; A is not overwritten
    assert ok and np.allclose(inverse @ A, np.eye(7), atol=1e-13) and np.array_equal(A, np.asfortranarray(A))
    singular = A.copy()
    singular[:, 3] = 0.0  # a zero column: an exactly zero pivot
    assert not lu_solve(singular, b)[1] and not lu_inverse(singular)[1]
    assert lu_solve(np.zeros((0, 0)), np.zeros(0))[1]


def test_an_exactly_singular_basic_system_leaks_nothing():
    """The box on four coplanar corners makes the basic system exactly singular at every step; each
    such solve used to leak the LU's copies (260 kB at 180 unknowns)."""
    n = 180
    rng = np.random.default_rng(4)
    A = rng.normal(size=(n, n))
    A[:, 5] = 0.0
    r = rng.normal(size=n)
    basic_solve(A, r)  # compiled and warmed
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(200):
            assert not basic_solve(A, r)[1]
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 1_000_000  # 200 leaked copies would be 52 MB
