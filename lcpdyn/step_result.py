"""What one time step solved: :class:`StepResult`, returned by :meth:`lcpdyn.stepper.Simulation.step`
and recorded by :meth:`~lcpdyn.stepper.Simulation.run`."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["StepResult"]


@dataclass(eq=False)
class StepResult:
    """One step's answer; r contacts, n velocities, m bilateral rows.

    Attributes
    ----------
    v : (n,) the new velocities v+ (world centre-of-mass velocity and body-frame angular
        velocity per body, m/s and rad/s).
    normal_force : (r,) lam_N+ in N (the impulse over h).
    friction_force : (r, 3) world friction force in N.
    status : the solve's :class:`solvers.result.Status` (as int): SOLVED, or -- kept under
        ``on_unsolved="flag"`` -- the failure (INACCURATE when the residual alone misses the tolerance).
    iterations : pivots or sweeps, summed over the step's passes and islands.
    residual : the framework's relative residual of the answer (largest over the islands).
    fallback : True when the first method failed on this step and ``fallback_method`` solved it.
    kinetic : (r,) bool, the regularized model's kinetic branch per contact.
    bilateral : (m,) impulses h lam of the bilateral rows (holonomic, then non-holonomic).
    problem : the step's whole complementarity problem when it was posed as one -- a
        :class:`solvers.BoundedLCP` (Peiret 2016 Eq. 30) or a :class:`solvers.FrictionContactProblem`
        (the exact cone's Delassus problem) -- so it can be handed to another method through
        :func:`solvers.solve`; None when the step was solved island by island.
    slip_world : (r, 3) slip velocity of each contact at v+ (m/s, world).
    gap : (r,) the gaps Phi at the start of the step (m).
    work : work of non-conservative loads and driven constraints in the step (J).
    timing : (assembly, solve, rest) wall time in s.
    active_set, impulse_guess : the warm start this step leaves for the next (the bounded-LCP
        active set, or the friction-contact reactions), or None.
    detected : what the step did at the contacts the model's colliders made
        (:class:`~lcpdyn.strategies.detected.DetectedResult`), or None for a model without colliders.
    mu : (r,) the friction coefficient each declared contact had in the step (mu(t) of a friction
        profile; mu_k or mu_s as the contact slid or stuck), or None where no step set it.
    """

    v: np.ndarray
    normal_force: np.ndarray
    friction_force: np.ndarray
    status: int
    iterations: int
    residual: float
    fallback: bool
    kinetic: np.ndarray
    bilateral: np.ndarray
    problem: object = None
    slip_world: np.ndarray | None = None
    gap: np.ndarray | None = None
    work: float = 0.0
    timing: tuple = field(default=(0.0, 0.0, 0.0))
    active_set: np.ndarray | None = None
    impulse_guess: np.ndarray | None = None
    detected: object = None
    mu: np.ndarray | None = None
