"""The state of a run that earlier steps wrote, as plain arrays: :func:`snapshot` takes it from a
:class:`~lcpdyn.stepper.Simulation`, :func:`restore` puts it back, so that a run continued from it
(in the same process, or from a stopped run's file) equals the run never stopped, bit for bit."""

from __future__ import annotations

import numpy as np

__all__ = ["STATE", "snapshot", "restore"]

STATE = (
    "q",
    "v",
    "t",
    "steps_done",
    "normal_force",
    "friction_force",
    "active_set",
    "impulse_guess",
    "_potential_start",
    "_work",
    "_lowest",
    "_scale",
)
"""Everything a step reads that earlier steps wrote: the state (q, v, t, the step count), the previous
step's forces (the bristle state), the warm starts and the energy budget ("Run health",
docs/theory/step.md). With colliders also the last step's detected contacts, and with the compiled
loop its retry schedule."""


def snapshot(sim) -> dict:
    """The mutable state of ``sim``'s run (copies): :data:`STATE`, with colliders the last step's
    detected contacts (:func:`lcpdyn.detected_contacts.contacts_to_arrays`), with the compiled
    loop ``loop_retry``."""
    out = {name: (None if getattr(sim, name) is None else np.array(getattr(sim, name), copy=True)) for name in STATE}
    if sim._collisions is not None:
        from ..detected_contacts import contacts_to_arrays

        out.update(contacts_to_arrays(sim.contacts, sim.contact_impulse, sim.contact_tangent))
    if sim._loop is not None:
        out["loop_retry"] = np.array(sim.loop_retry, np.int64)
    return out


def restore(sim, state: dict) -> None:
    """Puts a :func:`snapshot` (or a stopped run's saved state) back into ``sim``; a missing field
    is a ValueError naming it."""
    missing = [name for name in STATE if name not in state]
    if missing:
        raise ValueError(f"the state to restore lacks {missing}")
    for name in STATE:
        value = state[name]
        if value is None:
            setattr(sim, name, None)
        elif name in ("t", "_potential_start", "_work", "_lowest", "_scale"):
            setattr(sim, name, float(value))
        elif name == "steps_done":
            setattr(sim, name, int(value))
        else:
            value = np.array(value, copy=True)
            if name == "active_set":
                value = value.astype(np.int8)
            setattr(sim, name, value)
    if sim._collisions is not None:
        from ..detected_contacts import contacts_from_arrays

        if "contacts_gap" not in state:
            raise ValueError("the state to restore lacks the detected contacts (contacts_gap, ...)")
        sim.contacts, sim.contact_impulse, sim.contact_tangent = contacts_from_arrays(state)
    sim._pending_health = int(state.get("pending_health", 0))
    retry = state.get("loop_retry")  # absent: a state from before the schedule was kept, or no loop
    sim.loop_retry = (0, 1) if retry is None else (int(retry[0]), int(retry[1]))
