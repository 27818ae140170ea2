"""A step's second solve after a friction switch (:mod:`lcpdyn.friction_switches`), island by island.

Islands are independent given the step's momentum rows, so a second solve repeats, bit for bit, the
first solve's answer of every island that holds no switched contact (same rows, same warm start,
same passes). The island strategies therefore solve again only the islands that hold a switched
contact and keep the first answer elsewhere: a step of a thousand islands in which three contacts
switched solves three islands twice, not a thousand."""

from __future__ import annotations

import dataclasses

import numpy as np

__all__ = ["islands_to_solve", "kept_answer"]


def islands_to_solve(work, contacts, starts=None) -> np.ndarray | None:
    """Per island, True where it is solved: None (every island) unless this is the second solve
    of a step (``work.first``). ``contacts``: the islands' contacts, a list of index arrays, or
    (with ``starts``) one array of them all, island j's from ``starts[j]`` to ``starts[j + 1]``."""
    if work.first is None or work.switched is None:
        return None
    if starts is not None:
        switched = work.switched[contacts].astype(np.int64)
        counts = np.add.reduceat(switched, starts[:-1]) if switched.size else np.zeros(0, np.int64)
        return (counts > 0) & (np.diff(starts) > 0)
    return np.array([bool(work.switched[c].any()) for c in contacts], bool)


def kept_answer(work, out, *, columns, contacts, rows=None, active=None, impulse=None):
    """``out``, the second solve of some islands, completed with the first solve's answer
    (``work.first``) everywhere else: ``columns`` the velocities, ``contacts`` the contacts,
    ``rows`` the bilateral rows, ``active`` the entries of the stacked active set and
    ``impulse`` the entries of the impulse guess (3 per contact) the second solve gave."""
    first = work.first

    def merged(before, now, index):
        if before is None or now is None or index is None:
            return now
        whole = np.array(before, copy=True)
        whole[index] = now[index] if now.shape == before.shape else now
        return whole

    return dataclasses.replace(
        out,
        v=merged(first.v, out.v, columns),
        normal_force=merged(first.normal_force, out.normal_force, contacts),
        friction_force=merged(first.friction_force, out.friction_force, contacts),
        kinetic=merged(first.kinetic, out.kinetic, contacts),
        bilateral=merged(first.bilateral, out.bilateral, rows),
        active_set=merged(first.active_set, out.active_set, active),
        impulse_guess=merged(first.impulse_guess, out.impulse_guess, impulse),
    )
