"""Friction switches inside a step (docs/theory/step.md, "Friction switches inside the step"):
from a step's first solve, the contacts whose friction switched within it -- a breakaway from
static friction, a kinetic slip that reversed -- and what the step's second solve takes, at the
declared contacts and at the detected ones alike."""

from __future__ import annotations

import numpy as np

from .kernels import block_rows, free_velocity

__all__ = ["BREAKAWAY", "friction_switches"]

BREAKAWAY = 1e-6
"""Slip at the end of a step, relative to the slip its loads alone would give, beyond which a
contact that took its static rows has slid (:func:`friction_switches`): far above the solvers' rounding
and tolerance (a resting contact's slip is 1e-12 of it or less), far below a real breakaway (a
block 0.02 degrees past atan mu_s slides 8e-4 of it in its first millisecond)."""


def friction_switches(sim, work, state, k, rhs, v_end, out, detected=None, slips=None) -> bool:
    """Sets what the step's second solve takes on ``work`` (the step's
    :class:`~lcpdyn.step_work.StepWork`) and returns True, or returns False; ``state`` the step's
    start, ``k`` its kinematics, ``rhs`` Eq. (30)'s momentum rows, ``v_end`` the first solve's end
    velocity, ``out`` its :class:`~lcpdyn.step_result.StepResult`, ``detected`` the step's
    :class:`~lcpdyn.detected_contacts.DetectedSet` (its answer in ``out.detected``) or None.

    * A model whose coefficient the stepper chooses (coulomb, box, polygonal): a contact given
      mu_s that slid all the same -- static friction cannot hold it -- gets mu_k.
    * A model with ``switches`` (the regularized model): its own verdict per contact, a branch
      to take (:meth:`lcpdyn.friction.Regularized.switches`).

    Slid: more than :data:`BREAKAWAY` of the slip's scale, the componentwise size |D| |v*| of the
    free velocity v* = M^-1 rhs (what the step's loads alone would give; a resting contact's slip
    is rounding against it). ``work.switched`` marks the switched contacts, declared then detected.
    ``slips``: the declared contacts' (start, end) slips (r, 2) where the scheme gives them (the
    midpoint scheme's :class:`~lcpdyn.midpoint_friction.FrictionPoint`), else D v and D v_end."""
    r, c = k.gap.shape[0], 0 if detected is None else len(detected)
    if not r + c:
        return False
    free = None

    def scale_of(rows):
        nonlocal free
        if free is None:
            free = free_velocity(sim._mass, sim._inertia, rhs)
        return BREAKAWAY * rows(np.abs(free))

    declared = _declared(sim, work, state, k, v_end, out, scale_of, slips) if r else None
    found = _detected(sim, work, state, detected, v_end, out.detected, scale_of) if c else None
    if declared is None and found is None:
        return False
    work.switched = np.concatenate(
        [np.zeros(r, bool) if declared is None else declared, np.zeros(c, bool) if found is None else found]
    )
    return True


def _declared(sim, work, state, k, v_end, out, scale_of, slips=None):
    """The declared contacts' switches, set on ``work``; the switched contacts (r,) or None."""
    if getattr(sim.friction, "switches", None) is None and not sim._two_coefficients:
        return None

    def scale(free):  # |D| |v*| per contact
        return _norm(np.einsum("rkj,rj->rk", np.abs(k.D_block), free.reshape(-1, 6)[k.contact_body]))

    decided = _decide(
        sim,
        (work.mu, sim.mu_static, sim.mu, work.mu_static > work.mu, out.kinetic),
        (lambda v: block_rows(k.D_block, k.contact_body, v)) if slips is None else (lambda slip: slip),
        (state.v, v_end) if slips is None else slips,
        lambda: np.einsum("rkj,rj->rk", k.tangent, out.friction_force - state.friction_force),  # base basis
        lambda: scale_of(scale),
    )
    if decided is None:
        return None
    kind, value, switched = decided
    if kind == "mu":
        work.mu = value
    else:
        work.branch, work.guess = value
    return switched


def _detected(sim, work, state, det, v_end, answer, scale_of):
    """The detected contacts' switches (``answer`` the first solve's
    :class:`~lcpdyn.strategies.detected.DetectedResult`), set on ``work``; the switched contacts
    (c,) or None. Their slips are the tangential rows of the step's H over both bodies."""
    c = len(det)
    decided = _decide(
        sim,
        (det.mu, det.mu_static, det.mu_kinetic, det.mu_static > det.mu, answer.kinetic),
        lambda v: (det.H @ v).reshape(c, 3)[:, 1:],
        (state.v, v_end),
        lambda: np.einsum("ckj,cj->ck", det.tangent, answer.friction_force - det.friction_force),
        lambda: scale_of(lambda free: _norm((abs(det.H) @ free).reshape(c, 3)[:, 1:])),  # |H_T| |v*|
    )
    if decided is None:
        return None
    kind, value, switched = decided
    if kind == "mu":
        work.detected_mu = value
    else:
        work.detected_branch, work.detected_guess = value
    return switched


def _decide(sim, coefficients, slip, velocities, change, scale):
    """The switches of one set of contacts, whoever found them: None, ("mu", the coefficients
    with mu_k where a contact given mu_s slid, slid) or ("branch", (branch, guess) of the model's
    ``switches``, switched). ``coefficients``: (applied mu, mu_s, mu_k, the contacts with
    mu_s > mu_k for the model's verdict, the first solve's kinetic branch); ``slip(v)`` the
    contacts' slips (k, 2) at velocities v; ``velocities`` (the step's start, the first solve's
    end); ``change()`` lam_T+ - lam_T in the base basis; ``scale()`` the slip scale of
    :data:`BREAKAWAY`. The cheap gates come first: this runs after every step's solve."""
    switches = getattr(sim.friction, "switches", None)
    if switches is None and sim.friction.chooses_static_coefficient:
        return None
    applied, static, kinetic_mu, two, kinetic = coefficients
    if switches is None:
        candidates = (applied == static) & (static > kinetic_mu)  # given mu_s
    else:
        candidates = two | kinetic  # a breakaway needs mu_s > mu_k, a reversal a kinetic branch
    if not candidates.any():
        return None
    start, end = velocities
    end = slip(end)
    if switches is None:
        slid = candidates & (_norm(end) > scale())
        if not slid.any():
            return None
        return "mu", np.where(slid, kinetic_mu, applied), slid
    verdict = switches(slip(start), end, kinetic, change(), sim.dt, two, scale() if two.any() else np.zeros(len(two)))
    if verdict is None:
        return None
    return "branch", verdict, verdict[0] != 0


def _norm(slip):
    """|slip| per contact of (k, 2) components."""
    return np.sqrt((slip**2).sum(axis=1))
