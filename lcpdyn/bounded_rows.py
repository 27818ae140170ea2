"""Bilateral rows that are not equalities: unilateral holonomic rows (joint limits, stops) and
bounded rows (a velocity servo whose effort saturates, dry friction in a joint).

In Peiret 2016 Eq. (30) a bilateral row reads w = A v+ + C_A h lam - u with its impulse h lam
free (w = 0). Here some rows' impulses get bounds, lo <= h lam <= hi, with the complementarity of
the bounded LCP -- the same as a friction model's rows (w >= 0 at lo, w <= 0 at hi, w = 0
between):

* a unilateral row g(q) >= 0 (:class:`~lcpdyn.constraints.Holonomic` ``unilateral=True``):
  h lam in [0, inf) and, as a contact's normal row, g + h A v+ >= 0 written u = -g/h where the
  row is open (g > 0) and u = -beta g/h where it is violated (the drift correction of every
  rigid row); with restitution e, a row closing within the step (A v < 0 and g + h A v <= 0)
  takes Newton's impact law A v+ >= -e A v instead; a compliant one (a soft stop, ``stiffness``
  k and ``damping`` c) keeps its compliant row's target and pushes back with -k g - c g' past
  its bound only: in a step whose row is open at q + h Gamma v its impulse is fixed at zero;
* a bounded row (:class:`~lcpdyn.constraints.Nonholonomic` ``bounds=(lower, upper)``, forces
  in N or N m): h lam in [h lower, h upper] -- the row's equation A v+ = u holds while its force
  stays inside, and gives way at a bound.

Every bounded-LCP strategy that keeps the bilateral rows in its problem takes them (the dense
step, islands, detected contacts); the exact cone's Delassus problem takes each of them as a
contact of its own (:mod:`lcpdyn.strategies.coulomb_rows`); :func:`check` names the combinations
that eliminate bilateral rows as equalities and so cannot (the condensed strategy, Moreau's
midpoint scheme's second pass).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "row_bounds", "unilateral_rows", "unilateral_targets", "check", "setup", "targets", "impulse_bounds",
    "compliant_stops",
]  # fmt: skip


def row_bounds(model) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) (m,) force bounds of the model's bilateral rows in their order (holonomic,
    nonholonomic, the contacts' ideal-rolling rows): (0, inf) on unilateral rows, the given
    bounds on bounded ones, (-inf, inf) elsewhere."""
    lower, upper = [], []
    for c in model.holonomic:
        lower.append(np.full(c.size, 0.0 if c.unilateral else -np.inf))
        upper.append(np.full(c.size, np.inf))
    for c in model.nonholonomic:
        bounds = getattr(c, "bounds", None)
        lower.append(np.full(c.size, -np.inf) if bounds is None else bounds[0])
        upper.append(np.full(c.size, np.inf) if bounds is None else bounds[1])
    rolling = model.n_bilateral - sum(x.size for x in lower)
    lower.append(np.full(rolling, -np.inf))
    upper.append(np.full(rolling, np.inf))
    return np.concatenate(lower), np.concatenate(upper)


def _holonomic_rows(model, chosen) -> tuple[np.ndarray, list]:
    """(rows (k,), their constraints (k,)): the rows, among the holonomic ones, of the
    constraints ``chosen(c)`` picks."""
    rows, owners, start = [], [], 0
    for c in model.holonomic:
        if chosen(c):
            rows.extend(range(start, start + c.size))
            owners.extend([c] * c.size)
        start += c.size
    return np.array(rows, np.int64), owners


def unilateral_rows(model) -> tuple[np.ndarray, np.ndarray]:
    """(rows (k,), restitution (k,)): the rigid unilateral rows among the holonomic ones (a
    compliant stop's target is its spring's, :func:`compliant_stops`)."""
    rows, owners = _holonomic_rows(model, lambda c: c.unilateral and c.stiffness is None)
    return rows, np.array([c.restitution for c in owners], float)


def unilateral_targets(g, A_v, rate, h, beta, restitution) -> np.ndarray:
    """u of unilateral rows (module docstring) from their values g, rates A v and rheonomic
    rates dg/dt at the step's start."""
    u = np.where(g > 0.0, -g / h, -beta * g / h) - rate
    closing = (restitution > 0.0) & (A_v + rate < 0.0) & (g + h * (A_v + rate) <= 0.0)
    return np.where(closing, np.maximum(u, -restitution * (A_v + rate) - rate), u)


def check(sim) -> None:
    """A ValueError naming the row and the reason where ``sim`` has bounded or unilateral rows
    that its formulation cannot take (module docstring)."""
    lower, upper = row_bounds(sim.model)
    bounded = np.flatnonzero(np.isfinite(lower) | np.isfinite(upper))
    if not bounded.size:
        return
    name = sim._bilateral_rows[int(bounded[0])]
    if sim.position_update == "midpoint":
        raise ValueError(
            f"row {name!r} is bounded or unilateral (a limit, a servo's effort bound, joint friction) and "
            "position_update='midpoint' writes bilateral rows at the step's midpoint as equalities; these rows are "
            "taken with position_update='symplectic' or 'paper' (a model file's limits and joint friction are left "
            "out by load_model(..., limits=False), a robot scene's by --set limits=0)"
        )


def setup(sim) -> None:
    """The simulation's bounded rows: ``sim._row_bounds`` (lower, upper) force bounds or None
    (every row an equality), ``sim._unilateral`` rows and their ``sim._restitution``; checked
    (:func:`check`), and the fused kernel (whose rows are equalities) turned off where they exist."""
    lower, upper = row_bounds(sim.model)
    sim._row_bounds = (lower, upper) if np.any(np.isfinite(lower) | np.isfinite(upper)) else None
    sim._unilateral, sim._restitution = unilateral_rows(sim.model)
    sim._soft_stops = compliant_stops(sim.model)
    check(sim)
    sim._fused = sim._fused and sim._row_bounds is None


def targets(sim, k, g, A_v, h) -> None:
    """Writes the unilateral rows' u (:func:`unilateral_targets`) into the holonomic rows' ``g``
    of a step (Kinematics ``k``, A v ``A_v`` at its start)."""
    x = sim._unilateral
    if x.size:
        g[x] = unilateral_targets(k.holonomic_error[x], A_v[x], k.holonomic_rate[x], h, sim.stabilization,
                                  sim._restitution)  # fmt: skip


def compliant_stops(model) -> np.ndarray:
    """The compliant unilateral rows (soft stops) among the holonomic ones, by row."""
    return _holonomic_rows(model, lambda c: c.unilateral and c.stiffness is not None)[0]


def impulse_bounds(sim, h, g_ahead=None):
    """(lower, upper) impulse bounds h times the force bounds, or None (every row free); a
    compliant stop whose row ``g_ahead`` (the holonomic rows at q + h Gamma v, the configuration
    the compliant rows are linearized about) is open is fixed at zero for the step: a soft stop
    pushes only past its bound, not on the damping of an approach."""
    if sim._row_bounds is None:
        return None
    lower, upper = h * sim._row_bounds[0], h * sim._row_bounds[1]
    stops = sim._soft_stops
    if g_ahead is not None and stops.size:
        open_ = stops[np.asarray(g_ahead)[stops] > 0.0]
        if open_.size:
            upper = upper.copy()
            upper[open_] = 0.0
    return lower, upper
