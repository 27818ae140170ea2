"""The explicit state one time step starts from: :class:`StepState`, the input and output of
:meth:`lcpdyn.stepper.Simulation.advance`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["StepState"]


@dataclass(frozen=True, eq=False)
class StepState:
    """Everything a step reads that earlier steps wrote (nb bodies, r contacts). The model, the
    friction model and the step's options are the :class:`~lcpdyn.stepper.Simulation`'s; with
    them, a step is a function of this state alone: ``Simulation.advance(state)`` returns the next
    state and the step's :class:`~lcpdyn.step_result.StepResult` and changes nothing else.

    Attributes
    ----------
    q : (7 nb,) positions and unit quaternions.
    v : (6 nb,) world centre-of-mass velocities and body-frame angular velocities.
    t : time (s); ``steps_done`` the steps since the start (t = steps_done h).
    normal_force : (r,) the previous step's lam_N (N): the friction bounds of Peiret 2016 Eq. (12).
    friction_force : (r, 3) the previous step's world friction force (N): the bristle state of
        Eqs. (11-15).
    active_set : the previous bounded-LCP solve's active set (the warm start), or None.
    impulse_guess : (3r,) the previous friction-contact reactions (the warm start), or None.
    contacts : the contacts the model's colliders made in the previous step
        (:class:`~lcpdyn.collision.Contacts`), or None; ``contact_impulse`` (k, 3) their world
        impulses (N s) and ``contact_tangent`` (k, 2, 3) their tangents t1, t2: what a contact
        that persists keeps (:mod:`lcpdyn.detected_contacts`).
    """

    q: np.ndarray
    v: np.ndarray
    t: float
    steps_done: int
    normal_force: np.ndarray
    friction_force: np.ndarray
    active_set: np.ndarray | None = None
    impulse_guess: np.ndarray | None = None
    contacts: object = None
    contact_impulse: np.ndarray | None = None
    contact_tangent: np.ndarray | None = None
