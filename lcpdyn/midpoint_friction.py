"""Where Moreau's midpoint scheme writes each declared contact's friction law
(docs/theory/step.md, "Friction in the midpoint scheme"): :class:`FrictionPoint`.

The scheme solves Eq. (30) for the midpoint velocity v_m = (v + v+)/2 over h/2 at q_m = q + h/2 v.
A contact's friction law is written on one of two slips, chosen per contact and per step:

* a contact that slides through the step: on the midpoint slip J(q_m) v_m -- the force opposes
  the slip at the step's middle, the second-order choice (the slip at v+ made the sliding phases
  first order: the wheel's slip 8e-4 m/s off after 1 s at h = 1 ms, halving with h);
* a contact that may stop within the step, or sticks through it (its slip at the start no more
  than full friction changes in one step, h mu lam_N |W_ii|): on the slip at the step's end,
  J(q+) v+ ~ 2 J(q_m) v_m - J(q) v, the end configuration's Jacobian extrapolated from q and q_m.
  A sticking contact then holds J(q+) v+ = 0 at every step's end as RATTLE holds a velocity
  constraint (second order), and a stopping one stops at the end of its step instead of reversing
  (v_m = 0 would give v+ = -v: the +-1.2e-3 m/s creep of a stopped block).

A contact given the midpoint law whose slip reversed within the step (it stopped after all) takes
the end law in the step's second solve (:func:`stops`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .kernels import block_rows, slip_world_blocks

__all__ = ["FrictionPoint", "friction_point", "midpoint_block", "stops"]


@dataclass(frozen=True, eq=False)
class FrictionPoint:
    """Per declared contact (r of them), in the base tangent basis (t1, t2) at q_m:

    start : (r, 2) the slip at the step's start, J(q) v (m/s).
    at_end : (r,) bool, the law on the end slip (True) or on the midpoint slip (False)."""

    start: np.ndarray
    at_end: np.ndarray

    @property
    def law_slip(self) -> np.ndarray:
        """(r, 2) what the law's slip subtracts from J(q_m) v_m, doubled: J(q) v where the law is
        at the step's end, 0 where it is at the middle (the law is on J(q_m) v_m - law_slip / 2)."""
        return np.where(self.at_end[:, None], self.start, 0.0)

    def end_slip(self, k, v_mid) -> np.ndarray:
        """(r, 2) the slip at the step's end, J(q+) v+ ~ 2 J(q_m) v_m - J(q) v (m/s)."""
        return 2.0 * block_rows(k.D_block, k.contact_body, v_mid) - self.start

    def with_end(self, contacts) -> FrictionPoint:
        """The same with the end law also at ``contacts`` (bool (r,))."""
        return FrictionPoint(self.start, self.at_end | contacts)


def friction_point(sim, state, k, mu) -> FrictionPoint:
    """The step's :class:`FrictionPoint`: the start slip from the kinematics at the step's start
    q (``k`` holds those at q_m), ``mu`` (r,) the largest coefficient a contact may take this step."""
    start_k = sim.evaluate(state.q, state.v, state.t)
    world = slip_world_blocks(start_k.D_block, start_k.contact_body, state.v, start_k.tangent)
    start = np.einsum("rkj,rj->rk", k.tangent, world)
    reach = sim.dt * mu * np.maximum(state.normal_force, 0.0) * _largest_mobility(sim, k)
    return FrictionPoint(start, np.sqrt((start**2).sum(axis=1)) <= reach)


def stops(point: FrictionPoint, k, v_mid) -> np.ndarray:
    """(r,) bool: the contacts given the midpoint law whose slip reversed within the step
    (end slip . start slip <= 0): they stopped, and take the end law in a second solve."""
    end = point.end_slip(k, v_mid)
    return ~point.at_end & ((end * point.start).sum(axis=1) <= 0.0)


def midpoint_block(friction, D, v, h, mu, normal_force, friction_force, tangent, mu_static, extra, point):
    """The friction model's block in the midpoint scheme's unknowns (v_m, impulses over h/2), each
    contact's law where ``point`` says (``h`` the whole step; ``extra`` the block's other keywords):

    * at the step's end: the model's rows over h, F v+ + C x + P (h lam_N) + c = w with F v+ the
      model's rows of the end slip 2 J(q_m) v_m - J(q) v, halved in x' = x/2 (as
      :func:`lcpdyn.strategies.assembly.friction_on_end_velocity` for the slip at v+);
    * at the middle: the model's own rows for the step to the middle, h/2, written on v_m -- its
      law on the midpoint slip with its rates over the time it acts.

    The model's rows of a slip, T with F = T D, come from one call of its ``block`` over the
    velocities extended by one unknown per slip component ([D, I] over [v, 0]): for any model
    whose rows are linear in the slips D v; a row belongs to the contacts whose slips it reads."""
    end, T = _block_and_rows_of_slip(friction, D, v, h, mu, normal_force, friction_force, tangent, mu_static, extra)
    end = dataclasses.replace(end, c=0.5 * (end.c - T @ point.law_slip.reshape(-1)), lo=0.5 * end.lo, hi=0.5 * end.hi)
    middle = ~point.at_end
    if not middle.any():
        return end
    mid = friction.block(D, v, 0.5 * h, mu, normal_force, friction_force, tangent, mu_static=mu_static, **extra)
    rows = (np.abs(T) @ np.repeat(middle, 2).astype(float)) > 0.0
    if end.P is None and mid.P is None:
        P = None
    else:
        P = np.where(rows[:, None], _or_zeros(mid.P, end.F.shape[0], mu.shape[0]),
                     _or_zeros(end.P, end.F.shape[0], mu.shape[0]))  # fmt: skip
    pick = lambda a, b: np.where(rows[:, None] if a.ndim == 2 else rows, a, b)  # noqa: E731
    return dataclasses.replace(
        end, F=pick(mid.F, end.F), G=pick(mid.G, end.G), C=pick(mid.C, end.C), P=P, c=pick(mid.c, end.c),
        lo=pick(mid.lo, end.lo), hi=pick(mid.hi, end.hi),
    )  # fmt: skip


def _or_zeros(P, nf, r):
    return np.zeros((nf, r)) if P is None else P


def _block_and_rows_of_slip(friction, D, v, h, mu, normal_force, friction_force, tangent, mu_static, extra):
    """The model's block over ``D`` and ``v`` with the (nf, 2r) map T of its rows from the slips."""
    n, slips = D.shape[1], D.shape[0]
    extended = np.hstack([D, np.eye(slips)])
    if "rolling" in extra:  # the creep law's spin rows, over the same extended velocities
        rolling = extra["rolling"]
        extra = {
            **extra,
            "rolling": rolling._replace(spin=np.hstack([rolling.spin, np.zeros((rolling.spin.shape[0], slips))])),
        }
    block = friction.block(
        extended, np.concatenate([v, np.zeros(slips)]), h, mu, normal_force, friction_force, tangent,
        mu_static=mu_static, **extra,
    )  # fmt: skip
    return dataclasses.replace(block, F=block.F[:, :n], G=block.G[:, :n]), block.F[:, n:]


def _largest_mobility(sim, k) -> np.ndarray:
    """(r,) the largest eigenvalue of each contact's tangential Delassus block
    W_ii = D_i M_b^-1 D_i^T (1/kg): the slip one unit of tangential impulse gives."""
    body = k.contact_body
    D = k.D_block  # (r, 2, 6)
    inverse = np.linalg.pinv(sim._inertia)[body]  # (r, 3, 3)
    W = np.einsum("rkj,rlj->rkl", D[:, :, :3], D[:, :, :3]) / sim._mass[body][:, None, None]
    W += np.einsum("rkj,rji,rli->rkl", D[:, :, 3:], inverse, D[:, :, 3:])
    half_trace = 0.5 * (W[:, 0, 0] + W[:, 1, 1])
    return half_trace + np.sqrt((0.5 * (W[:, 0, 0] - W[:, 1, 1])) ** 2 + W[:, 0, 1] ** 2)
