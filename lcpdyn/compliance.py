"""Compliant normal contact: a force law of the approach a (Bauchau 2002 Sec. 4.2, Sec. 8).

The approach a = -Phi is the distance the wheel centre comes closer to the plane than a rigid
wheel could (a > 0 when the tyre deflects). A law gives F(a) for a > 0 plus viscous damping
c a_dot; separation is still possible: the normal force is never negative.

Inside the time step (see :mod:`lcpdyn.stepper`) the law is linearized at the predicted approach
a~ (the approach at the configuration v+ will move, like the gap rows):

    lam_N+ = max(0, F(a~) + (F'(a~) h + c) a_dot+),  a_dot+ = -N v+,

which is the complementarity row  N v+ + C_N h lam_N+ - F(a~)/(F' h + c) >= 0  _|_  h lam_N+ >= 0
with the compliance C_N = 1 / (h (F' h + c)). For a~ <= 0 the elastic law is continued linearly
with F'(0) and the damper is left out (c = 0 there), so a contact that is about to touch is caught
within the step by the spring alone and no force acts before the surfaces touch.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from .validation import nonnegative, positive

__all__ = ["SpringDamperLaw", "PolynomialLaw", "compliant_rows", "by_law", "law_record", "check_law"]


@dataclass(frozen=True)
class SpringDamperLaw:
    """F = k a + c a_dot (N; k in N/m, c in N s/m), as in Bauchau 2002 Sec. 8.2."""

    stiffness: float
    damping: float = 0.0

    def __post_init__(self):
        object.__setattr__(self, "stiffness", positive("normal law stiffness k", self.stiffness))
        object.__setattr__(self, "damping", nonnegative("normal law damping c", self.damping))

    @classmethod
    def from_time_constant(cls, mass: float, time_constant: float, damping_ratio: float = 1.0) -> SpringDamperLaw:
        """The law whose mass-spring-damper with ``mass`` m (kg) has the time constant tau (s) and
        damping ratio zeta of MuJoCo's ``solref="tau zeta"`` (its impedance d_max taken as 1):
        k = m / (tau zeta)^2, c = 2 m / tau, so that omega_n = 1 / (tau zeta) and c / (2 sqrt(k m)) = zeta."""
        m = positive("mass", mass)
        tau = positive("time constant", time_constant)
        zeta = positive("damping ratio", damping_ratio)
        return cls(stiffness=m / (tau * zeta) ** 2, damping=2.0 * m / tau)

    @property
    def coefficients(self) -> tuple:
        """The law's numbers for the compiled kinematics: (stiffness,) (N/m)."""
        return (self.stiffness,)


@dataclass(frozen=True)
class PolynomialLaw:
    """F = sum_i k_i a^i, i = 1, 2, ... (``coefficients`` = (k_1, k_2, ...), SI units N/m^i),
    plus c a_dot -- Bauchau 2002 Sec. 8.1's tyre: k_1 = 1.755e6, k_2 = 463.5e6, k_3 = -18.560e9,
    k_4 = 303.750e9. k_1 must be > 0 (the linear continuation for a <= 0 uses it)."""

    coefficients: tuple
    damping: float = 0.0

    def __post_init__(self):
        coefficients = tuple(float(k) for k in self.coefficients)
        if not coefficients:
            raise ValueError("polynomial normal law needs at least k_1")
        positive("polynomial normal law k_1", coefficients[0])
        for i, k in enumerate(coefficients):
            if k != k or k in (float("inf"), float("-inf")):
                raise ValueError(f"polynomial normal law k_{i + 1} must be finite, got {k!r}")
        object.__setattr__(self, "coefficients", coefficients)
        object.__setattr__(self, "damping", nonnegative("normal law damping c", self.damping))


def compliant_rows(law, approach, h):
    """The linearized rows of contacts under one ``law`` at predicted approaches ``approach``
    (array, m) over a step h (s): (C_N, e_N) with N v+ + C_N h lam_N+ + e_N >= 0 _|_ h lam_N+ >= 0,
    C_N = 1 / (h (F'(a~) h + c)) and e_N = -F(a~) / (F'(a~) h + c) (module docstring); the damper c
    only where a~ > 0, so that no force acts before the surfaces touch."""
    a = np.asarray(approach, np.float64)
    k = law.coefficients
    inside = a > 0.0
    force = np.where(inside, 0.0, k[0] * a)
    slope = np.full(a.shape, float(k[0]))
    if inside.any():
        ai = a[inside]
        force[inside] = sum(ki * ai ** (i + 1) for i, ki in enumerate(k))
        slope[inside] = sum((i + 1) * ki * ai**i for i, ki in enumerate(k))
    effective = slope * h + np.where(inside, law.damping, 0.0)
    return 1.0 / (h * effective), -force / effective


def by_law(laws) -> list:
    """[(law, indices (k,))]: the positions of a sequence of normal laws (None for a rigid contact)
    grouped by law object, in order of first appearance -- one :func:`compliant_rows` call each."""
    groups: dict = {}
    for i, law in enumerate(laws):
        if law is not None:
            groups.setdefault(id(law), (law, []))[1].append(i)
    return [(law, np.array(members, np.int64)) for law, members in groups.values()]


def law_record(law) -> dict | None:
    """A normal law as plain data (a run's parameters): its type, coefficients and damping."""
    if law is None:
        return None
    return {"type": type(law).__name__, "coefficients": list(law.coefficients), "damping": law.damping}


def check_law(label: str, law):
    """``law`` if it is None (rigid), a :class:`SpringDamperLaw` or a :class:`PolynomialLaw`; else a
    TypeError naming ``label``."""
    if law is not None and not isinstance(law, (SpringDamperLaw, PolynomialLaw)):
        raise TypeError(f"{label}: normal_law must be a SpringDamperLaw, a PolynomialLaw or None, "
                        f"got {type(law).__name__}")  # fmt: skip
    return law


def elastic_energy(law, approach, xp=jnp):
    """U(a) = sum_i k_i a^(i+1)/(i+1) for a > 0, 0 otherwise (JAX-traceable; ``xp=np`` for NumPy
    arrays in float64 outside JAX); ``law`` a law or its coefficients (k_1, ..., k_K)."""
    a = xp.maximum(approach, 0.0)
    coefficients = getattr(law, "coefficients", law)
    return sum(coefficients[i] * a ** (i + 2) / (i + 2) for i in range(len(coefficients)))
