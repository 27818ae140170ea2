"""The exact Coulomb friction-contact problem's solution as a differentiable JAX function, by
implicit differentiation on its contact modes (issue 49, item 1).

``friction_contact_solution(W, b, mu)`` solves u = W r + b with r_i in the Coulomb cone K_i and
De Saxcé's complementarity (:mod:`solvers.friction_contact`) on the host, with lcpdyn's own
methods, the answer checked by the framework's residual like every solve. On the solution each
contact is in one of three modes, and there the solution satisfies smooth equations:

* apart (r_N = 0): r_i = 0;
* sticking (u_i = 0): W_i r + b_i = 0 (three rows);
* sliding (r_N > 0, u_N = 0, |r_T| = mu r_N opposite the slip): u_N = 0 and
  r_T + mu r_N u_T / |u_T| = 0.

Their derivative with respect to r, W, b and mu gives the solution's: dr = -(dF/dr)^-1 dF/d(W, b,
mu) · (dW, db, dmu), one linear solve with the modes' Jacobian (the analogue of the bounded LCP's
interior block, :mod:`lcpdyn.differentiable`), by its pseudo-inverse: redundant contacts (a box on
its four corners) make that Jacobian singular, r is then not unique along its null space, and
the minimum-norm dr is taken -- the motion, M^-1 H^T r, does not move along it. It is a
``jax.custom_jvp`` function whose tangent rule is linear in the tangents, so ``jax.jvp``,
``jax.vjp``, ``jax.grad`` and ``jax.jacobian`` take it (inside ``jax.jit`` and ``jax.vmap`` too;
the solve is a host callback).

Where a contact is on the verge of another mode -- touching with no force (r_N = 0, u_N = 0),
sticking on the cone's edge (|r_T| = mu r_N, u_T = 0) -- the solution has one-sided derivatives
only; the derivative given is that of the modes found, and :func:`modes` says which contacts are
on such an edge. Float64 throughout (inside :func:`lcpdyn.precision.float64`).
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.ad_checkpoint import checkpoint_name

from solvers.friction_contact import solve_friction_contact

from .precision import float64_arrays, float64_callback

__all__ = [
    "friction_contact_solution", "step_solution", "modes", "APART", "STICKING", "SLIDING", "METHOD", "TOLERANCE",
    "EDGE", "SAVED",
]  # fmt: skip

APART = 0
"""A contact's mode: apart, r_i = 0 (and u_N >= 0)."""
STICKING = 1
"""A contact's mode: sticking, u_i = 0 (r_i in the cone)."""
SLIDING = 2
"""A contact's mode: sliding, u_N = 0, r_T = -mu r_N u_T/|u_T|."""
#: The host solve (its residual, per contact against the contact's own scales, judges the answer).
METHOD = "auto"
TOLERANCE = 1e-12
#: A contact's force or slip below this fraction of its scale is zero for its mode; on the edge
#: of another mode within it, the contact is reported as a switch (:func:`modes`).
EDGE = 1e-8
#: The names (``jax.ad_checkpoint.checkpoint_name``) of a differentiated solution's r and modes,
#: for a checkpoint policy that keeps them: reverse mode's recomputation of a checkpointed step
#: then does not call the host again (:class:`lcpdyn.differentiable_run.DifferentiableRun`).
SAVED = ("coulomb-answer", "coulomb-modes")


def _host_solve(W, b, mu, strict=True):
    W, b, mu = (np.array(a, dtype=np.float64) for a in (W, b, mu))
    result = solve_friction_contact(W, b, mu, METHOD, tolerance=TOLERANCE)
    if result.success:
        return np.asarray(result.r, dtype=np.float64)
    if not strict:  # a run's step: NaN, which its check names (lcpdyn.differentiable_run)
        return np.full(np.shape(b), np.nan)
    raise ArithmeticError(
        f"friction_contact_solution: {METHOD} did not solve the problem to {TOLERANCE:g} ({result.status.name}, "
        f"relative residual {result.relative_residual:.2e}): no derivative of an unsolved problem is given"
    )


def _classify(W, b, mu, r):
    """(modes (nc,) int32, on an edge (nc,) bool) of the solution r (module docstring)."""
    W, b, mu, r = (np.asarray(a, dtype=float) for a in (W, b, mu, r))
    u = W @ r + b
    R, U = r.reshape(-1, 3), u.reshape(-1, 3)
    force_scale = max(float(np.max(np.abs(r))), np.finfo(float).tiny)  # the problem's reactions
    speed_scale = (np.abs(W) @ np.abs(r) + np.abs(b)).reshape(-1, 3).max(axis=1)  # each contact's velocities
    pressed = R[:, 0] > EDGE * force_scale
    slip = np.linalg.norm(U[:, 1:], axis=1)
    sliding = pressed & (slip > EDGE * speed_scale)
    mode = np.where(~pressed, APART, np.where(sliding, SLIDING, STICKING)).astype(np.int32)
    touching = ~pressed & (U[:, 0] <= EDGE * speed_scale)  # no force, no gap velocity: about to press
    edge = mode == STICKING
    edge &= np.linalg.norm(R[:, 1:], axis=1) >= (1.0 - EDGE) * mu * R[:, 0]  # at the cone's edge: about to slide
    return mode, touching | edge


def _host_modes(W, b, mu, r):
    return _classify(W, b, mu, r)[0]


def modes(W, b, mu, r=None) -> tuple[np.ndarray, np.ndarray]:
    """(each contact's mode: :data:`APART`, :data:`STICKING` or :data:`SLIDING`; whether it is on
    the edge of another mode, where the derivative is one-sided) of the problem's solution ``r``
    (solved here if None)."""
    W, b, mu = (np.asarray(a, dtype=float) for a in (W, b, mu))
    r = _host_solve(W, b, mu) if r is None else np.asarray(r, dtype=float)
    return _classify(W, b, mu, r)


def friction_contact_solution(W, b, mu):
    """r solving the exact Coulomb friction-contact problem u = W r + b: W (3nc, 3nc) a Delassus
    matrix, b (3nc,), mu (nc,), unknowns per contact (normal, tangent 1, tangent 2); float64.
    Differentiable in all three on the solution's contact modes (module docstring); an unsolved
    problem raises ``ArithmeticError`` from the callback."""
    W, b, mu = float64_arrays("friction_contact_solution", W=W, b=b, mu=mu)
    if W.ndim != 2 or W.shape[0] != W.shape[1] or b.shape != (W.shape[0],) or W.shape[0] % 3:
        raise ValueError(f"friction_contact_solution: W must be (3nc, 3nc) and b (3nc,), got {W.shape} and {b.shape}")
    if mu.shape != (W.shape[0] // 3,):
        raise ValueError(
            f"friction_contact_solution: mu must have one entry per contact ({W.shape[0] // 3}), got {mu.shape}"
        )
    return _solution(W, b, mu)


def step_solution(W, b, mu):
    """:func:`friction_contact_solution` for a traced step (no checks of the arrays; an unsolved
    problem gives NaN, which the run's ``ok`` reports, instead of raising inside the program)."""
    return _solution(W, b, mu, False)


def _mode_equations(r, W, b, mu, mode):
    """F(r; W, b, mu) = 0 on the contacts' modes (module docstring), (3nc,)."""
    u = (W @ r + b).reshape(-1, 3)
    R = r.reshape(-1, 3)
    slip = u[:, 1:]
    square = jnp.sum(slip * slip, axis=1)
    speed = jnp.sqrt(jnp.where(square > 0.0, square, 1.0))  # a sliding contact's slip is not zero
    sliding = jnp.concatenate([u[:, :1], R[:, 1:] + (mu * R[:, 0] / speed)[:, None] * slip], axis=1)
    F = jnp.where((mode == APART)[:, None], R, jnp.where((mode == STICKING)[:, None], u, sliding))
    return F.reshape(-1)


@partial(jax.custom_jvp, nondiff_argnums=(3,))
def _solution(W, b, mu, strict=True):
    return float64_callback(partial(_host_solve, strict=strict), b.shape, W, b, mu)


@_solution.defjvp
def _tangent(strict, primals, tangents):
    W, b, mu = primals
    r = checkpoint_name(_solution(W, b, mu, strict), SAVED[0])
    mode = checkpoint_name(float64_callback(_host_modes, mu.shape, W, b, mu, r, dtype=np.int32), SAVED[1])
    A = jax.jacfwd(_mode_equations)(r, W, b, mu, mode)
    _, dF = jax.jvp(lambda W_, b_, mu_: _mode_equations(r, W_, b_, mu_, mode), (W, b, mu), tangents)
    # the minimum-norm tangent: redundant contacts (a box on its four corners) make A singular, and
    # r is not unique along its null space, where the motion (M^-1 H^T r) does not move
    return r, -jnp.linalg.pinv(A) @ dF
