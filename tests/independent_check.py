"""An independent check of bounded-LCP answers, shared by ``tests/test_rescaling.py`` and
``benchmarks/fuzz_solvers.py``. Plain NumPy: nothing here comes from :mod:`solvers` (in
particular not from ``solvers.result``), so a flaw in the solvers' own acceptance test cannot
hide here.

The problem (see ``solvers/problem.py``): lo <= z <= hi, w = M z + q, z_i = lo_i => w_i >= 0,
z_i = hi_i => w_i <= 0, lo_i < z_i < hi_i => w_i = 0, lo_i = hi_i => w_i unrestricted; i.e.
the natural map z = clip(z - w, lo, hi).

The check is componentwise (Oettli–Prager-like), in normalized variables

    z^_j = z_j / c_j,   c_j = max(|z_j|, u_j, 1e-300),
    w^_i = w_i / s_i,   s_i = |q_i| + sum_j |M_ij| c_j   (w^_i = 0 where s_i = 0, hence w_i = 0),

where u_j is the unit of z_j (:func:`column_unit`). s_i is Oettli and Prager's
|q_i| + sum_j |M_ij z_j| (the size of the terms that cancel in w_i) with each |z_j| raised to
at least its unit: with |z_j| alone, a row whose terms all vanish at the solution (the gap
row N v+ of a body at rest, v+ = 0 up to rounding) has s_i ~ |w_i| ~ 1e-18 and any rounding
makes w^_i = +-1, although changing z_j by far less than the z tolerance below (RESIDUAL_TOLERANCE
c_j, which moves w_i by up to RESIDUAL_TOLERANCE |M_ij| c_j) would fix it. An answer is
accepted when

* every bound holds within ``BOUND_TOLERANCE``: max(lo_j - z_j, z_j - hi_j, 0) / c_j <= 1e-9;
* every row's normalized natural map is small:
  |z^_i - clip(z^_i - w^_i, lo_i / c_i, hi_i / c_i)| <= ``RESIDUAL_TOLERANCE`` = 1e-6
  (w_i is judged against its own row's scale s_i, and a z_i close to a bound against its
  own column's scale -- no global norm is involved);
* where the solution is known and unique, max_j |z_j - z*_j| / max(|z*_j|, u_j) <= 1e-6.

s_i transforms like w_i and c_j like z_j under an exact rescaling (M' = E M D, q' = E q,
z' = D^{-1} z, w' = E w, u' = D^{-1} u), so the verdict does not depend on the units.
Even so, rescaled answers are mapped back and checked on the well-scaled original
(:func:`check_case`), whose units are those of the library: entries of M, q and the bounds
of order one, so the unit of z_j is u_j = max(1, |finite lo_j|, |finite hi_j|, |z*_j|).
A column's scale c_j depends only on z_j itself and that unit: it is neither infinite for a
zero column (which would accept any z_j) nor inflated by huge entries of z elsewhere (which
would hide bound violations).

Limit: a problem that is infeasible only through an exact cancellation (y^T M = 0 for some y,
e.g. two equal rows with different q) is within a relative eps perturbation of M of feasible
problems with |z| ~ 1/eps, so an answer with |z| ~ 1e16 can pass this (backward-error) check.
That is why :func:`classify` judges a problem proved infeasible by its proof
(:func:`certificate_holds`), not by the check: any SOLVED there is wrong.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

BOUND_TOLERANCE = 1e-9
RESIDUAL_TOLERANCE = 1e-6
AGREEMENT_TOLERANCE = 1e-6

SOLVED_CORRECT = "solved"
HONEST_FAILURE = "failure"
WRONG = "wrong"
CRASH = "crash"
VERDICTS = (SOLVED_CORRECT, HONEST_FAILURE, WRONG, CRASH)


def column_unit(lo, hi, z_expected=None) -> np.ndarray:
    """u_j = max(1, |lo_j| if finite, |hi_j| if finite, |z*_j| if known): the size of z_j in a
    well-scaled (unit) problem, below which a z_j counts as small."""
    lo = np.asarray(lo, float)
    hi = np.asarray(hi, float)
    unit = np.maximum(
        1.0, np.maximum(np.where(np.isfinite(lo), np.abs(lo), 0.0), np.where(np.isfinite(hi), np.abs(hi), 0.0))
    )
    if z_expected is not None:
        unit = np.maximum(unit, np.abs(np.asarray(z_expected, float)))
    return unit


def _worst(values, k=3):
    order = np.argsort(-values, kind="stable")
    return [int(i) for i in order[:k] if values[i] > 0]


def check_answer(M, q, lo, hi, z, *, z_unit=None, z_expected=None, unique: bool = False) -> list[str]:
    """What is wrong with ``z`` as a solution of BLCP(M, q, lo, hi) -- an empty list if
    nothing (see the module docstring for the test). ``z_unit`` defaults to
    :func:`column_unit`; ``z_expected`` is compared only when ``unique``."""
    M = np.asarray(M, float)
    q = np.asarray(q, float)
    lo = np.asarray(lo, float)
    hi = np.asarray(hi, float)
    z = np.asarray(z, float)
    if z.shape != q.shape:
        return [f"z has shape {z.shape}, expected {q.shape}"]
    bad = np.flatnonzero(~np.isfinite(z))
    if bad.size:
        return [f"z is not finite at {bad[:5].tolist()}"]
    if z_unit is None:
        z_unit = column_unit(lo, hi, z_expected)
    c = np.maximum(np.maximum(np.abs(z), z_unit), 1e-300)
    with np.errstate(over="ignore", invalid="ignore"):
        w = M @ z + q
        s = np.abs(q) + np.abs(M) @ c
    if not (np.all(np.isfinite(w)) and np.all(np.isfinite(s))):
        return ["w = M z + q overflows"]
    issues = []

    violation = np.maximum(np.maximum(lo - z, z - hi), 0.0) / c
    if violation.max(initial=0.0) > BOUND_TOLERANCE:
        detail = ", ".join(f"z[{i}]={z[i]:.6g} not in [{lo[i]:.6g}, {hi[i]:.6g}]" for i in _worst(violation))
        issues.append(f"bound violated by {violation.max():.3g} relative: {detail}")

    w_hat = np.divide(w, s, out=np.zeros_like(w), where=s > 0)
    z_hat = z / c
    residual = np.abs(z_hat - np.clip(z_hat - w_hat, lo / c, hi / c))
    if residual.max(initial=0.0) > RESIDUAL_TOLERANCE:
        detail = ", ".join(
            f"row {i}: z={z[i]:.6g} in [{lo[i]:.6g}, {hi[i]:.6g}], w={w[i]:.6g}, s={s[i]:.3g}" for i in _worst(residual)
        )
        issues.append(f"componentwise natural-map residual {residual.max():.3g}: {detail}")

    if unique and z_expected is not None:
        z_expected = np.asarray(z_expected, float)
        error = np.abs(z - z_expected) / np.maximum(np.abs(z_expected), z_unit)
        if error.max(initial=0.0) > AGREEMENT_TOLERANCE:
            detail = ", ".join(f"z[{i}]={z[i]:.9g} vs {z_expected[i]:.9g}" for i in _worst(error))
            issues.append(f"differs from the unique known solution by {error.max():.3g} relative: {detail}")
    return issues


def certificate_holds(M, q, lo, hi, y) -> bool:
    """Whether ``y`` proves that BLCP(M, q, lo, hi) has no solution, checked in exact rational
    arithmetic on the stored floating-point numbers.

    The proof: y_i > 0 only where hi_i = +inf > lo_i, y_i < 0 only where lo_i = -inf < hi_i.
    Then every solution has y_i w_i >= 0 for each i (w_i >= 0 at a lower bound or inside the
    box, w_i <= 0 at an upper bound or inside), so y^T w >= 0. But for every z in the box,
    y^T w = c^T z + y^T q <= sum_j max(c_j lo_j, c_j hi_j) + y^T q with c = M^T y; if that bound
    is finite and negative, no solution exists."""
    M = np.asarray(M, float)
    q = np.asarray(q, float)
    lo = np.asarray(lo, float)
    hi = np.asarray(hi, float)
    y = np.asarray(y, float)
    rows = np.flatnonzero(y)
    if rows.size == 0:
        return False
    for i in rows:
        if y[i] > 0 and not (hi[i] == np.inf and lo[i] < hi[i]):
            return False
        if y[i] < 0 and not (lo[i] == -np.inf and lo[i] < hi[i]):
            return False
    weights = [(int(i), Fraction(float(y[i]))) for i in rows]
    bound = sum(yi * Fraction(float(q[i])) for i, yi in weights)
    for j in range(q.shape[0]):
        c = sum(yi * Fraction(float(M[i, j])) for i, yi in weights)
        if c == 0:
            continue
        edge = hi[j] if c > 0 else lo[j]
        if not np.isfinite(edge):
            return False
        bound += c * Fraction(float(edge))
    return bound < 0


def original_answer(case, z):
    """``(original case, z mapped back)``: z_orig = D z for a rescaled case (``case.original``
    and ``case.col_scale`` set, as by ``solvers.library.rescale``), else ``(case, z)``."""
    z = np.asarray(z, float)
    original = getattr(case, "original", None)
    if original is None:
        return case, z
    with np.errstate(over="ignore"):
        return original, np.asarray(case.col_scale, float) * z


def check_case(case, z) -> list[str]:
    """:func:`check_answer` of ``z`` (an answer of ``case``), mapped back to and judged on the
    unscaled original."""
    original, z_original = original_answer(case, z)
    return check_answer(
        original.M,
        original.q,
        original.lo,
        original.hi,
        z_original,
        z_expected=original.z_expected,
        unique=bool(original.unique),
    )


def classify(case, solved: bool, z) -> tuple[str, str]:
    """The verdict on one method's answer: ``(SOLVED_CORRECT | HONEST_FAILURE | WRONG, reason)``.

    ``solved`` is whether the method reported success (status SOLVED). A success on a case
    proved infeasible (``case.feasible is False``) is WRONG whatever the answer looks like; a
    success on any other case is WRONG when :func:`check_case` finds a problem. (CRASH, an
    exception from the solver, is decided by the caller.)"""
    if not solved:
        return HONEST_FAILURE, ""
    issues = check_case(case, z)
    if getattr(case, "feasible", True) is False:
        if not issues:
            _, z_original = original_answer(case, z)
            return WRONG, (
                "SOLVED on a problem proved to have no solution; the answer passes the "
                f"componentwise check (max |z| = {np.abs(z_original).max(initial=0.0):.3g}): "
                "the problem is infeasible through an exact cancellation, within rounding of "
                "a feasible one"
            )
        return WRONG, f"SOLVED on a problem proved to have no solution ({issues[0]})"
    if issues:
        return WRONG, "SOLVED but " + "; ".join(issues)
    return SOLVED_CORRECT, ""
