"""The answer of a friction-contact solve (:class:`FrictionContactResult`), built by every method
through :func:`measure_friction_contact`, which recomputes ``u`` and the residual itself
(:mod:`solvers.contact_measure`), and the method names results carry."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .contact_measure import _measure_kernel
from .result import Status

__all__ = ["FrictionContactResult", "measure_friction_contact", "NSGS", "NEWTON", "PROX", "AUTO"]

NSGS = "nsgs"
NEWTON, PROX, AUTO = "newton", "prox", "auto"


@dataclass(frozen=True, eq=False)
class FrictionContactResult:
    """What :func:`solve_friction_contact` returns.

    Attributes
    ----------
    r, u : (3nc,) reactions and velocities; ``u`` is recomputed by the framework as ``W r + b``.
    status : :class:`~solvers.result.Status`.
    success : ``status == SOLVED`` (implies ``relative_residual <= tolerance``).
    iterations : sweeps (``nsgs``) or Siconos' iteration count.
    residual : ``max_i ||r_i - proj_{K_i}(r_i - û_i)||_2`` (absolute; De Saxcé natural map;
        information).
    cone_violation : ``max_i ||r_i - proj_{K_i}(r_i)||_2`` (absolute; information).
    relative_residual : the acceptance measure: the largest per-contact error in the contact's
        own scales (module docstring; invariant under one positive scale per contact).
    worst_contact : the contact where it is attained (-1 if none).
    tolerance : the bound ``relative_residual`` was judged against.
    message : human-readable account.
    method : the method name used.
    info : method-specific details (local-solve counts, regularized blocks, Siconos codes).
    """

    r: np.ndarray
    u: np.ndarray
    status: Status
    iterations: int
    residual: float
    cone_violation: float
    relative_residual: float
    worst_contact: int
    tolerance: float
    message: str
    method: str
    info: dict = field(default_factory=dict)

    @property
    def success(self) -> bool:
        """Whether the status is SOLVED (the framework's residual within the tolerance)."""
        return self.status == Status.SOLVED

    def __repr__(self) -> str:
        return (
            f"FrictionContactResult(method={self.method!r}, status={self.status.name}, "
            f"contacts={self.r.shape[0] // 3}, iterations={self.iterations}, "
            f"relative_residual={self.relative_residual:.3g}, message={self.message!r})"
        )


def measure_friction_contact(
    W, b, mu, r, status: Status, iterations: int, message: str, method: str, tolerance: float, info: dict | None = None
) -> FrictionContactResult:
    """Build a :class:`FrictionContactResult` for ``r``, recomputing ``u`` and the residual here
    (``W, b, mu`` as validated by :func:`solve_friction_contact`: float64, C-contiguous, ``mu``
    of shape (nc,)). A claim of ``SOLVED`` beyond ``tolerance`` becomes ``INACCURATE``; a
    non-finite ``r`` becomes ``NUMERICAL_ERROR``."""
    r = np.ascontiguousarray(r, dtype=np.float64)
    n = b.shape[0]
    u = np.empty(n)
    relative, worst, residual, violation = _measure_kernel(W, b, mu, r, u)
    if not np.isfinite(relative):
        nan = float("nan")
        return FrictionContactResult(
            r,
            np.full(n, nan),
            Status.NUMERICAL_ERROR,
            int(iterations),
            nan,
            nan,
            nan,
            -1,
            tolerance,
            f"non-finite solution; {message}",
            method,
            info or {},
        )
    if status == Status.SOLVED and not relative <= tolerance:
        status = Status.INACCURATE
        message = f"{message}; framework residual {relative:.3g} (contact {worst}) exceeds tolerance {tolerance:.3g}"
    return FrictionContactResult(
        r,
        u,
        status,
        int(iterations),
        float(residual),
        float(violation),
        float(relative),
        int(worst),
        float(tolerance),
        message,
        method,
        info or {},
    )
