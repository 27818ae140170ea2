"""Friction switches inside a step (docs/theory/step.md, "Friction switches inside the step"):
from a step's first solve, the contacts whose friction switched within it -- a breakaway from
static friction, a kinetic slip that reversed -- and what the step's second solve takes."""

from __future__ import annotations

import numpy as np

from .kernels import block_rows, free_velocity

__all__ = ["BREAKAWAY", "friction_switches"]

BREAKAWAY = 1e-6
"""Slip at the end of a step, relative to the slip its loads alone would give, beyond which a
contact that took its static rows has slid (:func:`friction_switches`): far above the solvers' rounding
and tolerance (a resting contact's slip is 1e-12 of it or less), far below a real breakaway (a
block 0.02 degrees past atan mu_s slides 8e-4 of it in its first millisecond)."""


def friction_switches(sim, work, state, k, rhs, v_end, out) -> bool:
    """Sets what the step's second solve takes on ``work`` (the step's
    :class:`~lcpdyn.step_work.StepWork`) and returns True, or returns False; ``state`` the step's
    start, ``k`` its kinematics, ``rhs`` Eq. (30)'s momentum rows, ``v_end`` the first solve's end
    velocity, ``out`` its :class:`~lcpdyn.step_result.StepResult`.

    * A model whose coefficient the stepper chooses (coulomb, box, polygonal): a contact given
      mu_s that slid all the same -- static friction cannot hold it -- gets mu_k.
    * A model with ``switches`` (the regularized model): its own verdict per contact, a branch
      to take (:meth:`lcpdyn.friction.Regularized.switches`).

    Slid: more than :data:`BREAKAWAY` of the slip's scale, the componentwise size |D| |v*| of the
    free velocity v* = M^-1 rhs (what the step's loads alone would give; a resting contact's slip
    is rounding against it)."""
    switches = getattr(sim.friction, "switches", None)
    if not k.gap.size or (switches is None and (not sim._two_coefficients or sim.friction.chooses_static_coefficient)):
        return False
    # the cheap gates first: this runs after every step's solve (the regularized model's included)
    if switches is None:
        candidates = (work.mu == sim.mu_static) & (sim.mu_static > sim.mu)  # given mu_s
    else:
        two = work.mu_static > work.mu
        candidates = two | out.kinetic  # a breakaway needs mu_s > mu_k, a reversal a kinetic branch
    if not candidates.any():
        return False
    end = block_rows(k.D_block, k.contact_body, v_end)
    if switches is None:
        slid = candidates & (np.sqrt((end**2).sum(axis=1)) > _scale(sim, k, rhs))
        if not slid.any():
            return False
        work.mu = np.where(slid, sim.mu, work.mu)
        work.switched = slid
        return True
    scale = _scale(sim, k, rhs) if two.any() else np.zeros(k.gap.size)  # (a reversal needs none)
    start = block_rows(k.D_block, k.contact_body, state.v)
    change = np.einsum("rkj,rj->rk", k.tangent, out.friction_force - state.friction_force)  # base basis
    decided = switches(start, end, out.kinetic, change, sim.dt, two, scale)
    if decided is None:
        return False
    work.branch, work.guess = decided
    work.switched = work.branch != 0
    return True


def _scale(sim, k, rhs):
    """:data:`BREAKAWAY` times the slip's scale |D| |v*| per contact, v* = M^-1 rhs (m/s)."""
    free = free_velocity(sim._mass, sim._inertia, rhs).reshape(-1, 6)[k.contact_body]  # (r, 6)
    return BREAKAWAY * np.sqrt((np.einsum("rkj,rj->rk", np.abs(k.D_block), np.abs(free)) ** 2).sum(axis=1))
