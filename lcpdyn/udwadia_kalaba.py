"""Udwadia–Kalaba equations with constraint relaxation (Ikoki 2022 Sec. 2), as an alternative to
the complementarity formulation.

For an unconstrained system M(q) q_ddot = Q(q, q_dot, t) -- here a :class:`MinimalSystem` without
kinematic coordinates supplies M = dR/dq_ddot and Q = -R(q, q_dot, 0) from JAX -- and velocity
constraints h(q, q_dot, t) = A(q) q_dot = 0 (e.g. rolling, Ikoki Eq. 29), Udwadia and Kalaba's
explicit equations are (Eqs. 1, 6-8)

    q_ddot = a + X (b - A a) + (I - X A) M^-1 C,   a = M^-1 Q,
    b = -(dh/dq) q_dot - gamma h              (Eqs. 3, 31, with Baumgarte's term, Eq. 4 / Sec. 2.3)

with C the generalized force of the non-ideal (sliding friction) contribution. Relaxation
(Eqs. 9-12, 32): each constraint i carries a weight s_i in [0, 1] computed from the state without
branching (Eq. 32): s_i = 1 imposes it, s_i = 0 releases it. Our reading, chosen because it is
well defined for every s and smooth in it: q_ddot minimizes Gauss' function
||q_ddot - a||_M^2 + sum_i w_i (A_i q_ddot - b_i)^2 with w_i = m s_i^2 / (1 - s_i^2) (m =
``weight_scale``, a mass that makes the two terms commensurate), i.e.

    X = M^-1 A^T (A M^-1 A^T + W^-1)^-1,  W = diag(w_i)  (W^-1 entries 1/w_i -> 0 as s_i -> 1),

which is the classic Udwadia–Kalaba X (Moore-Penrose, Eqs. 14/17) for s = 1, drops constraint i
for s_i = 0, and blends in between.

Differences from the paper: Eq. 9's weighted semi-least-squares inverse is replaced by this
penalty form (identical at s = 0 and s = 1); the sliding friction C acts at the contact point
(generalized force J_c^T F, on the chassis and on the wheel's spin), not on the chassis
coordinate alone; the normal contact is the compliant tyre force, so only the longitudinal
rolling constraints (29a, 29c) are imposed.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from .compilation import jit
from .nonholonomic import MinimalSystem
from .precision import float64

__all__ = ["UdwadiaKalaba"]


@dataclass(eq=False)
class UdwadiaKalaba:
    """``system``: a :class:`MinimalSystem` with no kinematic coordinates (the unconstrained
    dynamics); ``constraint(q, qdot, t, p) -> (m,)`` linear in qdot; ``weights(q, qdot, t, p) ->
    (m,)`` in [0, 1]; ``nonideal(q, qdot, t, p) -> (n,)`` the generalized force C; ``gamma`` the
    Baumgarte rate (1/s); ``weight_scale`` the mass m of the penalty weights (kg)."""

    system: MinimalSystem
    constraint: object
    weights: object
    nonideal: object
    gamma: float = 10.0
    weight_scale: float = 1.0

    def __post_init__(self):
        if self.system.n_k != 0:
            raise ValueError("UdwadiaKalaba expects a MinimalSystem without kinematic coordinates")
        self._compiled = None

    def acceleration(self, q, qdot, t, p):
        """The constrained accelerations q_ddot: the unconstrained M^-1 Q corrected, in M's metric, towards the
        constraints' acceleration equations A q_ddot = -drift - gamma h (Udwadia--Kalaba), each row imposed
        where its weight is 1 and relaxed as its weight falls (the module docstring)."""
        system = self.system
        zero = jnp.zeros_like(q)
        M = jax.jacfwd(lambda a: system.residual(q, qdot, a, t, p))(zero)
        Q = -system.residual(q, qdot, zero, t, p)
        a = jnp.linalg.solve(M, Q)
        A = jax.jacfwd(lambda v: self.constraint(q, v, t, p))(qdot)
        h = self.constraint(q, qdot, t, p)
        drift = jax.jvp(lambda q_: self.constraint(q_, qdot, t, p), (q,), (qdot,))[1]
        b = -drift - self.gamma * h
        s = jnp.clip(self.weights(q, qdot, t, p), 0.0, 1.0)
        inverse_weight = (1.0 - s * s) / jnp.maximum(self.weight_scale * s * s, 1e-300)  # 1/w_i, 0 if imposed
        MinvAt = jnp.linalg.solve(M, A.T)
        S = A @ MinvAt + jnp.diag(inverse_weight)
        X = MinvAt @ jnp.linalg.pinv(S, hermitian=True)
        C = self.nonideal(q, qdot, t, p)
        MinvC = jnp.linalg.solve(M, C)
        return a + X @ (b - A @ a) + MinvC - X @ (A @ MinvC)

    def multipliers(self, x, t, p):
        """(lambda, C): the constraint forces lambda = S^-1 (b - A a) of the rows (for rolling rows
        in m/s of contact-point velocity: the traction forces, N) and the non-ideal force C."""
        n = x.shape[0] // 2
        q, qdot = x[:n], x[n:]
        system = self.system
        zero = jnp.zeros_like(q)
        M = jax.jacfwd(lambda a: system.residual(q, qdot, a, t, p))(zero)
        a = jnp.linalg.solve(M, -system.residual(q, qdot, zero, t, p))
        A = jax.jacfwd(lambda v: self.constraint(q, v, t, p))(qdot)
        drift = jax.jvp(lambda q_: self.constraint(q_, qdot, t, p), (q,), (qdot,))[1]
        b = -drift - self.gamma * self.constraint(q, qdot, t, p)
        s = jnp.clip(self.weights(q, qdot, t, p), 0.0, 1.0)
        inverse_weight = (1.0 - s * s) / jnp.maximum(self.weight_scale * s * s, 1e-300)
        C = self.nonideal(q, qdot, t, p)
        S = A @ jnp.linalg.solve(M, A.T) + jnp.diag(inverse_weight)
        rhs = b - A @ a - A @ jnp.linalg.solve(M, C)
        return jnp.linalg.pinv(S, hermitian=True) @ rhs, C

    def derivative(self, x, t, p):
        """d/dt (q, q_dot) = (q_dot, q_ddot) for an ODE solver, x = (q, q_dot)."""
        n = x.shape[0] // 2
        q, qdot = x[:n], x[n:]
        return jnp.concatenate([qdot, self.acceleration(q, qdot, t, p)])

    def simulate(self, x0, t_end, samples=1201, rtol=1e-8, atol=1e-10, max_step=1e-3, **parameters):
        """Integrate the explicit ODE (SciPy RK45 on the compiled JAX derivative); returns (t, x)."""
        from scipy.integrate import solve_ivp

        p = self.system.params(**parameters)
        if self._compiled is None:
            with float64():
                self._compiled = jit(self.derivative)
        function = self._compiled

        def rhs(t, x):
            with float64():
                return np.asarray(function(x, np.float64(t), p))

        times = np.linspace(0.0, t_end, samples)
        solution = solve_ivp(
            rhs,
            (0.0, t_end),
            np.asarray(x0, float),
            method="RK45",
            t_eval=times,
            rtol=rtol,
            atol=atol,
            max_step=max_step,
        )
        if not solution.success:
            raise RuntimeError(f"Udwadia-Kalaba integration failed: {solution.message}")
        return solution.t, solution.y.T
