"""The checks of one step (docs/theory/step.md, "Run health"): non-finite kinematics, inputs of Eq. (30)
and new states, and a disk lying flat, each turned into a message naming the body, contact, constraint or
quantity at fault."""

from __future__ import annotations

import numpy as np

from .kernels import all_finite, first_nonfinite
from .run.errors import step_error

_EMPTY = np.zeros(0)


def nonfinite_kinematics(sim, state, k) -> str:
    """Names what gave a NaN or inf in the kinematics at the current state."""
    culprits = sim.model.diagnose(state.q, state.v, state.t)
    fields = [
        name
        for name in (
            "force",
            "gap",
            "N",
            "D",
            "A",
            "holonomic_error",
            "nonholonomic_rhs",
            "point",
            "normal",
            "tangent",
            "sin_tilt",
            "tilt_margin",
            "potential_energy",
            "holonomic_rate",
            "nonconservative_force",
            "conservative_power",
        )
        if not np.all(np.isfinite(getattr(k, name)))
    ]
    where = f"NaN or inf in the kinematics ({', '.join(fields)}) at t = {state.t:.6g} s"
    if culprits:
        return f"{where}: " + "; ".join(culprits)
    if "force" in fields:
        j = first_nonfinite(k.force)
        body = sim.model.bodies[j // 6].name
        return f"{where}: the generalized force f_app - c of body {body!r} (entry {j}) = {float(k.force[j])!r}"
    return where


def flat_disk(sim, k) -> str:
    """The message naming the disk contact that lies flat on its plane (its tilt below ``min_sin_tilt``), where the
    single-point disk contact is undefined."""
    thresholds = np.array([sim.model.contacts[i].min_sin_tilt for i in sim._disks])
    j = int(np.argmin(k.sin_tilt - thresholds))
    return (
        f"{sim.model.describe_contact(sim._disks[j])} lies flat on its plane (|n x axis| = "
        f"{k.sin_tilt[j]:.3g} < min_sin_tilt = {thresholds[j]:g}): the single-point disk contact is undefined"
    )


def check_inputs(sim, state, rhs, e_N, u):
    """The right-hand sides of Eq. (30) must be finite before any solver sees them."""
    if all_finite(rhs, e_N, u, _EMPTY):
        return
    j = first_nonfinite(rhs)
    if j >= 0:
        body = sim.model.bodies[j // 6].name
        raise step_error(
            state,
            f"body {body!r}: the momentum M v + h f of the step is not finite (entry {j} = {float(rhs[j])!r})",
        )
    j = first_nonfinite(e_N)
    if j >= 0:
        law = sim.model.contacts[j].normal_law
        what = "gap term Phi~/h" if law is None else f"compliant row of its {type(law).__name__}"
        raise step_error(state, f"{sim.model.describe_contact(j)}: the {what} is not finite ({float(e_N[j])!r})")
    j = first_nonfinite(u)
    if j >= 0:
        raise step_error(
            state,
            f"constraint {sim._bilateral_rows[j]!r}: the right-hand side u of its row is not finite ({float(u[j])!r})",
        )


def check_state(sim, state, q, v, out):
    """The new state and contact forces must be finite (names the body or contact)."""
    if all_finite(q, v, out.normal_force, out.friction_force.reshape(-1)):
        return
    for array, size, names in (
        (q, 7, ("position", "position", "position", "orientation", "orientation", "orientation", "orientation")),
        (v, 6, ("velocity",) * 3 + ("angular velocity",) * 3),
    ):
        j = first_nonfinite(array)
        if j >= 0:
            body = sim.model.bodies[j // size].name
            raise step_error(
                state,
                f"body {body!r}: the {names[j % size]} became non-finite in the step "
                f"({float(array[j])!r}); the solve returned v+ = {out.v.tolist()}",
            )
    for key in ("normal_force", "friction_force"):
        j = first_nonfinite(getattr(out, key).reshape(-1))
        if j >= 0:
            contact = j if key == "normal_force" else j // 3
            raise step_error(
                state,
                f"{sim.model.describe_contact(contact)}: the {key.replace('_', ' ')} is not "
                f"finite ({float(getattr(out, key).reshape(-1)[j])!r})",
            )
