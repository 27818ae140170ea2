"""Array copies for compiled (Numba) code, as element loops.

A slice assignment ``a[:] = b`` in compiled code carries Numba's broadcasting check, whose error
message (the two shapes formatted into a string) is compiled with it: ~2–3 s of string machinery
per array rank, paid by every fresh installation's first solve. These loops copy the same numbers
without it; the caller's shapes match by construction."""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["copy_into", "fortran_copy"]


@njit(cache=True)
def copy_into(source, target):
    """target[i] = source[i] for every i of the 1-D ``target`` (``source`` at least as long)."""
    for i in range(target.shape[0]):
        target[i] = source[i]


@njit(cache=True)
def fortran_copy(A):
    """A copy of the square (n, n) ``A`` in Fortran order (what LAPACK overwrites), whatever
    ``A``'s layout."""
    n = A.shape[0]
    a = np.empty((n, n)).T
    for j in range(n):
        for i in range(n):
            a[i, j] = A[i, j]
    return a
