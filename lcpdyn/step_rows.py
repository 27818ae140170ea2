"""The scheme-dependent parts of a step's rows: the friction coefficients of this step, compliant
contacts' rows, and the gap and holonomic rows of Moreau's midpoint scheme (docs/theory/step.md),
as functions of the simulation's numbers and the step's state; they change neither."""

from __future__ import annotations

import numpy as np

from .compliance import compliant_rows
from .kernels import block_rows, update_positions
from .run.errors import step_error
from .step_checks import nonfinite_kinematics

__all__ = ["coefficients_now", "compliant_contact_rows", "midpoint_rows"]


def midpoint_rows(sim, state, k, q_mid, guess):
    """Moreau's midpoint scheme (docs/theory/step.md): the gap rows' e_N and the holonomic rows'
    right-hand sides in terms of v_m, from the constraints at the next midpoint
    q_m' = q_m + h v+, predicted at q_m + h v^ (``guess`` v^ of v+: the known v in the first
    pass, the first pass's v+ in the second) and linearized about it with the N at q_m:
    Phi(q_m') = Phi^ + h N (v+ - v^), v+ = 2 v_m - v, so Phi(q_m') >= 0 reads
    N v_m - N (v + v^)/2 + Phi^/(2h) >= 0 (scaled by 1/2; the same with A, g for the holonomic
    rows, whose predicted g^ holds the rheonomic motion up to t + 3h/2). The linearization
    errs by h (N(q^) - N(q_m)) (v+ - v^) = O(h^2 |v+ - v^|): O(h^3) in the first pass, O(h^4)
    in the second -- what a local error O(h^3) needs. Of the penetration or drift at q_m only
    the fraction ``stabilization`` is removed."""
    h, v = sim.dt, state.v
    beta = sim.stabilization
    ahead_q = update_positions(update_positions(q_mid, guess, 0.5 * h), guess, 0.5 * h)  # as q_m' is made
    ahead = sim.evaluate(ahead_q, guess, state.t + 1.5 * h)
    if not ahead.finite:
        raise step_error(
            state, "the midpoint scheme's predicted configuration: " + nonfinite_kinematics(sim, state, ahead)
        )
    both = (v + guess).reshape(-1, 6)
    closing = 0.5 * np.einsum("ij,ij->i", k.N_block, both[k.contact_body])
    target = ahead.gap - (1.0 - beta) * np.minimum(k.gap, 0.0)
    e_N = target / (2.0 * h) - closing
    g = k.holonomic_error
    if g.size:
        A_v = 0.5 * np.einsum("mkj,mkj->m", k.A_block[: g.size], both[k.A_body[: g.size]])  # pads are 0
        g = A_v - (ahead.holonomic_error - (1.0 - beta) * g) / (2.0 * h)
    return e_N, g


def compliant_contact_rows(sim, k, v, h, paper, e_N, compliance):
    """Compliant contacts (:mod:`lcpdyn.compliance`): their rows become
    N v+ + C_N h lam_N+ - F(a~)/(F' h + c) >= 0 at the predicted approach a~ = -Phi~; C_N is
    written into ``compliance`` (the step's :class:`~lcpdyn.step_work.StepWork`)."""
    e_N = e_N.copy()
    for law, members in sim._compliant:  # one call per law over its contacts
        approach = -np.array([
            k.gap[i] + h * (k.N_block[i] @ v[6 * k.contact_body[i] : 6 * k.contact_body[i] + 6]) if paper else k.gap[i]
            for i in members
        ])  # fmt: skip
        compliance[members], e_N[members] = compliant_rows(law, approach, h)
    return e_N


def coefficients_now(sim, state, k):
    """(mu, mu_s) per contact for this step: friction profiles mu(t) first; then, with
    mu_s > mu_k, mu is mu_k where the contact slid in the previous step (|D v| >
    ``static_threshold``) and mu_s where it stuck -- unless the friction model
    ``chooses_static_coefficient`` (:mod:`lcpdyn.friction.base`): then it gets mu_k and mu_s
    as they are (the regularized model applies mu_s in its own static branch)."""
    mu, mu_static = sim.mu, sim.mu_static
    if sim._profiles:
        mu, mu_static = mu.copy(), mu_static.copy()
        for i, profile in sim._profiles:
            try:
                value = float(profile(state.t))
            except Exception as exc:  # a user function: report it as the step's failure, keep the run
                raise step_error(
                    state,
                    f"friction_profile of {sim.model.describe_contact(i)} raised {type(exc).__name__}: {exc}",
                ) from exc
            if not (np.isfinite(value) and value >= 0):
                raise step_error(
                    state,
                    f"friction_profile of {sim.model.describe_contact(i)} gave mu = {value!r} "
                    "(must be finite and >= 0)",
                )
            mu[i] = mu_static[i] = value
    if not sim._two_coefficients or sim.friction.chooses_static_coefficient:
        return mu, mu_static
    slip = block_rows(k.D_block, k.contact_body, state.v)
    sliding = np.sqrt((slip**2).sum(axis=1)) > sim.static_threshold
    return np.where(sliding, mu, mu_static), mu_static
