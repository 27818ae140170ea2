"""Input checks shared by the engine: every message names the culprit."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["finite_vector", "positive", "nonnegative", "finite_number", "unit_vector"]


def finite_number(name: str, value) -> float:
    """``value`` as a float; a ValueError naming ``name`` if it is not a finite real number (a bool is not one)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return value


def positive(name: str, value, allow_inf: bool = False) -> float:
    """``value`` as a float > 0 (or inf where ``allow_inf``); a ValueError naming ``name`` otherwise."""
    if allow_inf and isinstance(value, (int, float)) and value == math.inf:
        return math.inf
    value = finite_number(name, value)
    if not value > 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return value


def nonnegative(name: str, value) -> float:
    """``value`` as a float >= 0; a ValueError naming ``name`` otherwise."""
    value = finite_number(name, value)
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return value


def finite_vector(name: str, value, size: int | None = None, shape: tuple | None = None) -> np.ndarray:
    """A float64 copy of ``value``, checked for shape and finiteness."""
    try:
        array = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric, got {value!r}") from exc
    want = shape if shape is not None else ((size,) if size is not None else None)
    if want is not None and array.shape != want:
        raise ValueError(f"{name} must have shape {want}, got {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return array


def unit_vector(name: str, value, size: int) -> np.ndarray:
    """``value`` (finite, nonzero, shape (size,)) scaled to unit length. It is divided by its
    largest |entry| before the norm is taken, so entries as large as 1e308 or as small as
    subnormals normalize correctly instead of overflowing (or underflowing) the norm. A vector of
    unit length to rounding (abs(1 - norm(u)) <= 4 eps) is returned as it is, so that checking a value
    again (a model's members before a run) does not move its last bits."""
    array = finite_vector(name, value, size)
    if abs(1.0 - np.linalg.norm(array)) <= 4.0 * np.finfo(float).eps:
        return array
    largest = np.max(np.abs(array))
    if largest == 0.0:
        raise ValueError(f"{name} must be nonzero, got {value!r}")
    array = array / largest
    return array / np.linalg.norm(array)
