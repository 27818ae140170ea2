"""A run's energy budget (docs/theory/step.md, "Run health"): D_n = E_n + h/2 P_c - W_n against its running
minimum, relative to the energy scale S_n; the flag, the stop and the message naming a non-finite energy."""

from __future__ import annotations

import math

import numpy as np

from ..trajectory import Health
from .errors import SimulationError


def energy_health(sim, energy: float, kinetic: float, work: float, power: float) -> tuple[int, float, float]:
    """Updates the energy budget with step n's E_n, T_n, work and conservative power P_c;
    returns (flag, gain D_n - min D, scale S_n) -- flag ``Health.ENERGY_GAIN`` or 0 (module
    docstring, "Run health")."""
    if not math.isfinite(energy):
        raise sim._error(nonfinite_energy(sim, energy, kinetic))
    sim._work += work
    budget = energy + sim._shadow * power - sim._work
    if budget < sim._lowest:
        sim._lowest = budget
    scale = max(sim._scale, kinetic, abs(energy - kinetic - sim._potential_start), abs(sim._work))
    sim._scale = scale
    gain = budget - sim._lowest
    if sim.energy_check != "off" and gain > sim.energy_tolerance * scale + 1e-12 * (abs(energy) + scale):
        return int(Health.ENERGY_GAIN), gain, scale
    return 0, gain, scale


def energy_stop(sim, gain, scale, energy) -> SimulationError:
    """The SimulationError of ``energy_check='stop'`` for an energy ``gain`` (J) beyond ``energy_tolerance`` of the
    energy ``scale``."""
    return sim._error(
        f"the energy rose {gain:.4g} J above its lowest value so far, more than "
        f"energy_tolerance = {sim.energy_tolerance:g} of the energy scale {scale:.4g} J "
        f"(E = {energy:.6g} J, work put in {sim._work:.4g} J; energy_check='stop')"
    )


def nonfinite_energy(sim, energy, kinetic) -> str:
    """The message naming the body and term whose energy overflows or is not finite."""
    if not math.isfinite(kinetic):
        for i, b in enumerate(sim.model.bodies):
            for name, part, block in (
                ("velocity", "m |v|^2 / 2", slice(6 * i, 6 * i + 3)),
                ("angular velocity", "omega . I omega / 2", slice(6 * i + 3, 6 * i + 6)),
            ):
                w = sim.v[block]
                with np.errstate(over="ignore", invalid="ignore"):
                    value = 0.5 * float(w @ sim.M[block, block] @ w)
                if not math.isfinite(value):
                    return f"body {b.name!r}: the kinetic energy overflowed ({part} = {value!r} J, {name} {w.tolist()})"
        return f"the total kinetic energy overflowed ({float(kinetic)!r} J)"
    culprits = sim.model.diagnose(sim.q, sim.v, sim.t)
    return f"the potential energy is not finite ({float(energy - kinetic)!r} J)" + (
        ": " + "; ".join(culprits) if culprits else ""
    )
