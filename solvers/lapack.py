"""LAPACK's LU solve (dgesv) for compiled code that reports an exactly singular matrix instead of
raising.

A compiled (Numba) function that raises does not release the arrays it and the functions it called
had allocated: ``np.linalg.solve`` inside ``try``/``except`` leaked its copies of the matrix each time
a basic system was exactly singular -- at every step of a stack with redundant contacts, about 260 kB
for 180 unknowns, so that a 10 s run of the 10-box tower grew by 2.5 GB. These functions call the
LAPACK binding Numba's own ``np.linalg.solve`` calls (``numba.np.linalg._LAPACK``, the same
``numba_xgesv`` entry, cached like any compiled code) and return LAPACK's answer with a flag."""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.np.linalg import _LAPACK, F_INT_nptype

from .compiled_copy import fortran_copy as _fortran_copy

__all__ = ["lu_solve", "lu_inverse"]

_XGESV = _LAPACK().numba_xgesv(types.float64)
_KIND = ord("d")


@njit(cache=True)
def lu_solve(A, b):
    """(x, ok): x with A x = b by LU with partial pivoting (LAPACK dgesv) on copies of A (n, n) and
    b (n,); ok is False where U has an exactly zero pivot (x is then meaningless). Non-finite
    entries are not checked: they give a non-finite x, which callers test."""
    n = b.shape[0]
    if n == 0:
        return b.copy(), True
    a = _fortran_copy(A)  # dgesv overwrites it
    x = b.copy()
    pivots = np.empty(n, dtype=F_INT_nptype)
    info = _XGESV(_KIND, n, 1, a.ctypes, n, pivots.ctypes, x.ctypes, n)
    return x, info == 0


@njit(cache=True)
def lu_inverse(A):
    """(A^-1, ok) by LU with partial pivoting (LAPACK dgesv on the identity); ok is False where U
    has an exactly zero pivot."""
    n = A.shape[0]
    if n == 0:
        return np.zeros((0, 0)), True
    a = _fortran_copy(A)
    x = np.eye(n)  # symmetric: the same numbers in Fortran order
    pivots = np.empty(n, dtype=F_INT_nptype)
    info = _XGESV(_KIND, n, n, a.ctypes, n, pivots.ctypes, x.ctypes, n)
    return x.T, info == 0  # the solution in Fortran order, read as C order: its transpose
