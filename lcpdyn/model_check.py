"""What a :class:`~lcpdyn.stepper.Simulation` was built from, so that a model changed afterwards is
named rather than silently ignored or met by a shape error deep in a step.

A simulation takes the model's numbers when it is built -- masses and inertias (the blocks of M),
friction coefficients, the initial state -- and compiles its kinematics for the bodies, contacts,
forces, constraints and colliders it has then. A body added later, or a mass, an inertia, a
coefficient or an initial pose set on a body or contact afterwards, would be ignored (or, for an
added member, break the step with an unrelated error). :meth:`ModelRecord.check` compares the model
with the record and names what changed; the members' own checks run again first, so a value set
out of its range is named as at construction."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "ModelRecord", "validate_members", "check_coefficients", "check_turn", "check_start_gaps", "MAX_TURN",
    "MAX_START_PENETRATION",
]  # fmt: skip

MAX_START_PENETRATION = 0.1
"""Largest depth a body may start inside the plane of a rigid contact, as a fraction of its size
l = sqrt(tr I / m): deeper, the start is a modelling error, and drift correction would launch the
body (a sphere started 0.9 m inside its plane flew to 498 m in 0.5 s, flagged only at the end).
Shallower penetrations are pushed out, the energy they give flagged (docs/theory/step.md)."""

MAX_TURN = 0.5 * np.pi
"""Largest rotation h |omega| (rad) a body that touches something -- a contact, a collider, a
joint or a rolling constraint -- may make in one step: beyond a quarter turn the step's rows,
taken at its start, describe nothing of the motion (a wheel at omega = 1e10 rad/s and h = 1 ms rose
183 m in 0.05 s, unflagged). A free body is not limited: the midpoint gyroscopic step keeps its
energy and momentum at any h |omega| (tests/test_run_health.py)."""

MEMBERS = ("bodies", "contacts", "forces", "holonomic", "nonholonomic", "colliders")


def validate_members(model) -> None:
    """Run the bodies' and contacts' construction checks again (values set after construction)."""
    for body in model.bodies:
        body.validate()
    for contact in model.contacts:
        contact.validate()


@dataclass(frozen=True)
class ModelRecord:
    """The model's members (their count and the model's revision) and numbers at build time."""

    revision: int
    counts: tuple
    numbers: dict

    @staticmethod
    def numbers_of(model) -> dict:
        """The model's numbers a simulation is built from: the bodies' masses and inertias and the initial state
        (q0, v0)."""
        mass, inertia = model.body_masses()
        q, v = model.initial_state()
        return {
            "mass": mass,
            "inertia": inertia,
            "initial pose": q,
            "initial velocity": v,
            "mu": model.friction_coefficients(),
            "mu_static": model.friction_coefficients(static=True),
        }

    @classmethod
    def of(cls, model) -> ModelRecord:
        """The record of ``model`` now (its members checked first): what a simulation compares at each run to name a
        change made after it was built."""
        validate_members(model)
        counts = tuple(len(getattr(model, name)) for name in MEMBERS)
        return cls(model.revision, counts, {k: v.copy() for k, v in cls.numbers_of(model).items()})

    def members_changed(self, model) -> str | None:
        """What was added to (or removed from) the model since, or None. Cheap: every step asks."""
        counts = tuple(len(getattr(model, name)) for name in MEMBERS)
        if model.revision == self.revision and counts == self.counts:
            return None
        changed = [
            f"{name} {before} -> {after}"
            for name, before, after in zip(MEMBERS, self.counts, counts)
            if before != after
        ]
        return (
            "the model changed after this simulation was built ("
            + (", ".join(changed) if changed else "a member was added or replaced")
            + "): the simulation compiled the model it had then; build a new Simulation from the model"
        )

    def check(self, model) -> None:
        """Raise ValueError naming what changed since the simulation was built: a member added, or
        a number set on a body or contact (each value checked again first)."""
        problem = self.members_changed(model)
        if problem is not None:
            raise ValueError(problem)
        validate_members(model)
        now = self.numbers_of(model)
        for name, before in self.numbers.items():
            after = now[name]
            if before.shape == after.shape and np.array_equal(before, after):
                continue
            where = self._where(model, name, before, after)
            raise ValueError(
                f"{where}: {name} changed after this simulation was built{self._values(before, after)}; "
                "the simulation keeps the numbers "
                "and initial state it was built with (its state is Simulation.state): build a new Simulation "
                "from the model to use the new value"
            )

    @staticmethod
    def _values(before, after) -> str:
        if before.shape != after.shape or before.ndim != 1:
            return ""
        i = int(np.flatnonzero(before != after)[0])
        return f" (from {float(before[i])!r} to {float(after[i])!r})"

    @staticmethod
    def _where(model, name, before, after) -> str:
        if before.shape != after.shape:
            return "the model"
        index = int(np.flatnonzero(np.any((before != after).reshape(before.shape[0], -1), axis=1))[0])
        if name in ("mu", "mu_static"):
            return f"contact {index} (on body {model.contacts[index].body.name!r})"
        per_body = {"initial pose": 7, "initial velocity": 6}.get(name, 1)
        return f"body {model.bodies[index // per_body].name!r}"


def check_coefficients(model, friction) -> None:
    """A friction model may state the largest coefficient its arithmetic resolves
    (``largest_mu``, optional member of the protocol): a contact above it is refused, named."""
    limit = getattr(friction, "largest_mu", None)
    if limit is None:
        return
    for kind, values in (("mu", model.friction_coefficients()), ("mu_static", model.friction_coefficients(True))):
        if values.size and values.max() > limit:
            i = int(np.argmax(values))
            raise ValueError(
                f"contact {i} (on body {model.contacts[i].body.name!r}): {kind} = {float(values[i])!r} is above the "
                f"{friction.name} model's largest_mu = {limit:g} (see its docstring); a contact sticks for any "
                "mu above |lam_T|/lam_N, so a smaller value describes the same contact"
            )


def check_turn(model, v, dt) -> None:
    """Refuse a state in which a body that touches something turns more than :data:`MAX_TURN` in
    one step of ``dt``."""
    omega = np.linalg.norm(np.asarray(v).reshape(-1, 6)[:, 3:], axis=1)
    touching = {id(c.body) for c in model.contacts} | {id(c.body) for c in model.colliders if c.body is not None}
    for constraint in (*model.holonomic, *model.nonholonomic):
        touching |= {id(body) for body in (constraint.bodies or ())}
    turn = dt * omega * np.array([id(b) in touching for b in model.bodies], bool)
    if turn.size and turn.max() > MAX_TURN:
        b = int(np.argmax(turn))
        raise ValueError(
            f"body {model.bodies[b].name!r}: |omega| = {omega[b]:.6g} rad/s turns it by h |omega| = {turn[b]:.4g} "
            f"rad in one step of dt = {dt:g} s, more than MAX_TURN = pi/2 (lcpdyn.model_check): take "
            f"dt <= {MAX_TURN / omega[b]:.3g} s"
        )


def check_start_gaps(model, gaps) -> None:
    """Refuse a run from the start in which a body lies deeper than :data:`MAX_START_PENETRATION`
    of its size inside the plane of a rigid declared contact (``gaps``: Phi at the start, m)."""
    for i, contact in enumerate(model.contacts):
        if contact.normal_law is not None:  # compliant: its approach is its force
            continue
        body = contact.body
        size = float(np.sqrt(np.trace(body.inertia_matrix) / body.mass))
        if gaps[i] < -MAX_START_PENETRATION * size:
            raise ValueError(
                f"contact {i} (on body {body.name!r}): the body starts {-float(gaps[i]):.4g} m inside the contact's "
                f"plane, more than MAX_START_PENETRATION = {MAX_START_PENETRATION:g} of its size {size:.3g} m "
                "(lcpdyn.model_check); move it out of the plane (drift correction would launch it)"
            )
