"""The rows of the friction laws that the step linearizes implicitly about the known slip, traced in
JAX for the compiled step (:mod:`lcpdyn.compiled_step`): Bauchau's continuous law
(:class:`lcpdyn.friction.continuous.Continuous`) and Kalker's creep with Vermeulen–Johnson
saturation (:class:`lcpdyn.friction.creep.Creep`). Each gives the rows that its model's ``block``
gives the ordinary step (the same equations; the motion agrees to rounding): two free unknowns per contact
(fixed at zero on an unloaded contact), the row C y + F v+ + c = 0 with C = 1, and the impulses
acting along the slip rows D."""

from __future__ import annotations

import jax.numpy as jnp

from .friction.creep import saturation

__all__ = ["continuous_rows", "creep_rows", "length"]


def length(x, y):
    """sqrt(x² + y²), with a derivative at 0 (that of |.| at 0 is 0 here: no NaN)."""
    square = x * x + y * y
    positive = square > 0.0
    return jnp.where(positive, jnp.sqrt(jnp.where(positive, square, 1.0)), 0.0)


def continuous_rows(slip, D_block, normal_force, mu, v0, h):
    """Bauchau 2002 Eq. (28) linearized about the slip s (r, 2) (m/s) of the known state,
    characteristic velocity ``v0`` (m/s): lam_T h = -mu lam_N h (g(s) + G(s) (D v+ - s)), g(s) =
    (1 - exp(-|s|/v0)) s/|s|. Returns (F_block (r, 2, 6), C, c, bound, basis, kinetic), kinetic
    where |s| > v0."""
    r = slip.shape[0]
    speed = length(slip[:, 0], slip[:, 1])
    small = speed < 1e-12 * v0
    safe = jnp.where(small, 1.0, speed)
    u = slip / safe[:, None]
    decay = jnp.exp(-speed / v0)
    g = jnp.where(small[:, None], slip / v0, u * (1.0 - decay)[:, None])
    outer = u[:, :, None] * u[:, None, :]
    eye = jnp.eye(2)
    G = jnp.where(
        small[:, None, None],
        eye / v0,
        ((1.0 - decay) / safe)[:, None, None] * (eye - outer) + (decay / v0)[:, None, None] * outer,
    )
    weight = mu * normal_force * h
    F_block = weight[:, None, None] * jnp.einsum("rij,rjc->ric", G, D_block)
    c = weight[:, None] * (g - jnp.einsum("rij,rj->ri", G, slip))
    bound = jnp.where(mu * normal_force > 0.0, jnp.inf, 0.0).repeat(2)
    return F_block, jnp.ones(2 * r), c.reshape(2 * r), bound, jnp.broadcast_to(eye, (r, 2, 2)), speed > v0


def creep_rows(vb, D_block, spin_block, tangent, normal_force, mu, coefficients, min_speed, saturate, h):
    """Kalker's linear creep forces saturated after Vermeulen & Johnson (Schwab–Meijaard 2002 §5.2;
    :func:`lcpdyn.friction.creep.creep_force`), linearized about the known slips s = (s1, s2, s3):
    h lam_T+ - h J W v+ - h (F(s) - J s) = 0, W = [D; S] the slip and spin rows. ``vb`` (r, 6)
    each contact's body velocities, ``D_block`` (r, 2, 6), ``spin_block`` (r, 6) the spin rows
    s3 = (R_b^T n) . omega_b, ``tangent`` (r, 2, 3) the world tangents (the rolling speed
    V = |P_T (v_b - v_c/2)|, floored at ``min_speed`` m/s, as
    :func:`lcpdyn.strategies.assembly.rolling_kinematics`), ``coefficients`` (f11, f22, f23) in
    (N, N, N m), ``saturate`` (static). Returns (F_block (r, 2, 6), C, c, bound, basis, kinetic),
    kinetic where the force is saturated (beta >= 3)."""
    r = vb.shape[0]
    f11, f22, f23 = coefficients
    slip = jnp.einsum("rkj,rj->rk", D_block, vb)
    s = jnp.concatenate([slip, jnp.einsum("rj,rj->r", spin_block, vb)[:, None]], axis=1)  # (r, 3)
    along = jnp.einsum("rkj,rj->rk", tangent, vb[:, :3]) - 0.5 * slip
    speed = jnp.maximum(length(along[:, 0], along[:, 1]), min_speed)
    zero = jnp.zeros(r)
    A = (
        jnp.stack(
            [jnp.stack([zero + f11, zero, zero], axis=1), jnp.stack([zero, zero + f22, zero + f23], axis=1)], axis=1
        )
        / speed[:, None, None]
    )  # (r, 2, 3): F_lin = -A s
    linear = -jnp.einsum("rij,rj->ri", A, s)
    if saturate:
        limit = mu * normal_force
        positive = limit > 0.0
        safe_limit = jnp.where(positive, limit, 1.0)
        magnitude = length(linear[:, 0], linear[:, 1])
        eps, slope = saturation(magnitude / safe_limit, xp=jnp)
        unit = linear / jnp.where(magnitude > 0.0, magnitude, 1.0)[:, None]
        J = (
            -eps[:, None, None] * A
            + linear[:, :, None] * jnp.einsum("ri,rij->rj", unit, -A)[:, None, :] * (slope / safe_limit)[:, None, None]
        )  # (the second term is 0 where the force is: unit = 0 there)
        force = eps[:, None] * linear
        loaded = (normal_force > 0.0) & positive
        kinetic = loaded & (length(force[:, 0], force[:, 1]) >= limit * (1.0 - 1e-12))
    else:
        J, force, loaded, kinetic = -A, linear, normal_force > 0.0, jnp.zeros(r, bool)
    J = jnp.where(loaded[:, None, None], J, 0.0)
    force = jnp.where(loaded[:, None], force, 0.0)
    W = jnp.concatenate([D_block, spin_block[:, None, :]], axis=1)  # (r, 3, 6)
    F_block = -h * jnp.einsum("rij,rjc->ric", J, W)
    c = -h * (force - jnp.einsum("rij,rj->ri", J, s))
    bound = jnp.where(loaded, jnp.inf, 0.0).repeat(2)
    return F_block, jnp.ones(2 * r), c.reshape(2 * r), bound, jnp.broadcast_to(jnp.eye(2), (r, 2, 2)), kinetic
