"""Checking of solver options: one helper so every method rejects bad options the same way."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .result import AT_LOWER, FIXED

__all__ = ["build_options", "check_positive", "check_nonnegative", "check_count", "check_warm_start"]


def build_options(options_class, method: str, options: dict):
    """Instantiate ``options_class`` from keyword ``options``; unknown names raise ``TypeError``."""
    known = {f.name for f in dataclasses.fields(options_class)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(f"unknown option(s) {unknown} for method {method!r}; known: {sorted(known)}")
    return options_class(**options)


def _is_real(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


def check_positive(name: str, value) -> None:
    """A ValueError naming option ``name`` unless ``value`` is a finite number > 0."""
    if not _is_real(value) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"option {name} must be a finite number > 0, got {value!r}")


def check_nonnegative(name: str, value) -> None:
    """A ValueError naming option ``name`` unless ``value`` is a finite number >= 0."""
    if not _is_real(value) or not math.isfinite(value) or value < 0:
        raise ValueError(f"option {name} must be a finite number >= 0, got {value!r}")


def check_count(name: str, value, minimum: int = 1) -> None:
    """A ValueError naming option ``name`` unless ``value`` is an integer >= ``minimum``."""
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"option {name} must be an integer >= {minimum}, got {value!r}")


def check_warm_start(warm_start, n: int) -> np.ndarray | None:
    """Validate an active-set warm start (codes of :mod:`solvers.result`) of length ``n``."""
    if warm_start is None:
        return None
    arr = np.asarray(warm_start)
    if arr.shape != (n,):
        raise ValueError(f"warm_start must have shape ({n},), got {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"warm_start must hold integer active-set codes, got dtype {arr.dtype}")
    bad = (arr < AT_LOWER) | (arr > FIXED)  # the codes are the consecutive integers -1..2
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"warm_start[{i}] = {arr[i]} is not an active-set code (-1, 0, 1 or 2)")
    return arr.astype(np.int8)
