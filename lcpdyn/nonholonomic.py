"""Non-holonomic systems in minimal coordinates and their linearization (Schwab–Meijaard 2003).

A :class:`MinimalSystem` is described, as in Schwab–Meijaard 2003 Sec. 2, by generalized
coordinates q = (q_d, q_k) -- the degrees of freedom q_d and the kinematic coordinates q_k, as many
as there are non-holonomic constraints -- and JAX functions of (q, t, p) with p a dict of
parameters (so a parameter sweep reuses one compilation):

* ``pose(q, t, p) -> (positions (nb, 3), rotations (nb, 3, 3))``: the transfer function
  x = F(q, t) (their Eq. 2) from the coordinates to the rigid bodies' poses; holonomic constraints
  are satisfied by construction;
* ``slip(q, qdot, t, p) -> (m,)``: the zero-slip conditions s = V(x) x_dot = 0 (Eq. 3), linear in
  qdot;
* ``force(q, qdot, t, p) -> (n,)``: generalized applied forces besides gravity (springs, dampers).

Everything else comes from JAX derivatives:

* q_k_dot = A q_d_dot + b with A = -(V F_k)^-1 V F_d, b = -(V F_k)^-1 V F_t (Eqs. 7, 20-21), from
  the Jacobian of ``slip`` with respect to qdot;
* the first-order transfer function H (Eq. 8) = d(qdot)/d(q_d_dot) and the reduced equations of
  motion M_bar q_d_ddot = f_bar (Eqs. 17-19), written through the principle of virtual power:
  R(q, q_d_dot, q_d_ddot, t) = H^T [sum_bodies J_c^T (m a_c - m g) + J_w^T (I_w alpha + w x I_w w) - Q],
  with body velocities and accelerations from forward-mode derivatives of ``pose``;
* the state equations d/dt (q_d_dot, q_d, q_k) = (M_bar^-1 f_bar, q_d_dot, A q_d_dot + b) (Eq. 22);
* their linearization about a steady motion in the form of Eq. (29):
  diag(M_bar, I, I) d/dt dx + [[C_bar, K_d, K_k], [-I, 0, 0], [-A, -B_d, -B_k]] dx = (-f_d, 0, 0),
  with C_bar = dR/dq_d_dot, K_d = dR/dq_d, K_k = dR/dq_k, B_d = db~/dq_d, B_k = db~/dq_k
  (b~ = A q_d_dot + b), f_d = -R at the nominal state (Eq. 24).

Differences from the paper: the mass matrix and forces are those of rigid bodies (no finite
elements); flexibility enters through the coordinates and ``force`` (e.g. springs) or through
``pose`` (quasi-static deflections, see :mod:`scenes.caster_shimmy`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np

from .compilation import jit
from .precision import float64
from .validation import positive

__all__ = ["MinimalSystem", "Linearization"]


def _vee(S):
    """Axial vector of a skew-symmetric matrix."""
    return jnp.array([S[2, 1] - S[1, 2], S[0, 2] - S[2, 0], S[1, 0] - S[0, 1]]) / 2.0


@dataclass(frozen=True)
class Linearization:
    """Schwab–Meijaard 2003 Eq. (29) at a nominal state, plus the state matrix and eigenvalues.

    Blocks: ``M`` (M_bar), ``C`` (C_bar), ``K_d``, ``K_k``, ``A``, ``B_d``, ``B_k``, ``f_d``;
    ``state_matrix`` J = -E^-1 P with d/dt dx = J dx for dx = (dq_d_dot, dq_d, dq_k) (the
    homogeneous part of Eq. 29; at a steady motion, f_d = 0, it is the Jacobian of Eq. 22);
    ``eigenvalues`` of J.
    """

    M: np.ndarray
    C: np.ndarray
    K_d: np.ndarray
    K_k: np.ndarray
    A: np.ndarray
    B_d: np.ndarray
    B_k: np.ndarray
    f_d: np.ndarray
    state_matrix: np.ndarray
    eigenvalues: np.ndarray


@dataclass(eq=False)
class MinimalSystem:
    """A rigid multibody system with non-holonomic constraints in minimal coordinates (module
    docstring). ``masses`` (nb,) and ``inertias`` (nb, 3, 3, body frame) may be arrays or
    functions of p; ``parameters`` are the defaults of p."""

    name: str
    dof: tuple
    kinematic: tuple
    pose: object
    slip: object
    masses: object
    inertias: object
    force: object = None
    gravity: tuple = (0.0, 0.0, -9.81)
    parameters: dict = field(default_factory=dict)

    def __post_init__(self):
        self.dof, self.kinematic = tuple(self.dof), tuple(self.kinematic)
        self.n_d, self.n_k = len(self.dof), len(self.kinematic)
        self._jit = {}

    # --- parameters and layout ------------------------------------------------------------
    def params(self, **overrides) -> dict:
        """The system's parameters with ``overrides`` (each finite; an unknown name is a ValueError listing the
        known ones), as float64."""
        unknown = sorted(set(overrides) - set(self.parameters))
        if unknown:
            raise ValueError(f"{self.name}: unknown parameter(s) {unknown}; known: {sorted(self.parameters)}")
        p = dict(self.parameters)
        for key, value in overrides.items():
            value = float(value)
            if not np.isfinite(value):
                raise ValueError(f"{self.name}: parameter {key} must be finite, got {value!r}")
            p[key] = value
        p = {k: np.float64(v) for k, v in p.items()}
        self._check_bodies(p, overrides)
        return p

    def _check_bodies(self, p, overrides) -> None:
        """ValueError, naming the parameters given, if p gives a body a mass that is not > 0 or an
        inertia that is not symmetric positive definite (a linearization of such a system would
        be computed, and wrong, without a word)."""
        given = ", ".join(f"{k}={float(v):g}" for k, v in overrides.items()) or "the defaults"
        masses = np.atleast_1d(np.asarray(self.masses(p) if callable(self.masses) else self.masses, dtype=float))
        for i, m in enumerate(masses):
            positive(f"{self.name}: with {given}, body {i}'s mass (kg)", float(m))
        inertias = np.asarray(self.inertias(p) if callable(self.inertias) else self.inertias, dtype=float)
        for i, J in enumerate(inertias.reshape(-1, 3, 3)):
            symmetric = np.all(np.isfinite(J)) and np.allclose(J, J.T, rtol=1e-12, atol=0.0)
            if not (symmetric and np.linalg.eigvalsh(0.5 * (J + J.T)).min() > 0.0):
                raise ValueError(
                    f"{self.name}: with {given}, body {i}'s inertia {J.tolist()} kg m^2 is not symmetric "
                    "positive definite"
                )

    def _value(self, item, p):
        return jnp.asarray(item(p) if callable(item) else item, dtype=float)

    def split(self, x):
        """(q_d_dot, q_d, q_k) of a state vector."""
        nd = self.n_d
        return x[:nd], x[nd : 2 * nd], x[2 * nd :]

    # --- kinematics (JAX) -----------------------------------------------------------------
    def body_velocities(self, q, qdot, t, p):
        """(v_c (nb, 3), omega (nb, 3)) in the world frame for coordinate rates qdot."""
        (x, R), (x_dot, R_dot) = jax.jvp(lambda q_, t_: self.pose(q_, t_, p), (q, t), (qdot, jnp.ones_like(t)))
        omega = jax.vmap(lambda Rd, R_: _vee(Rd @ R_.T))(R_dot, R)
        return x_dot, omega

    def kinematic_rates(self, q, qd_dot, t, p):
        """q_k_dot = A q_d_dot + b from slip(q, qdot) = 0 (Eqs. 7, 20)."""
        nd = self.n_d
        if self.n_k == 0:  # no non-holonomic constraints: every coordinate is a degree of freedom
            return jnp.zeros(0)
        zero = jnp.zeros(nd + self.n_k)
        S = jax.jacfwd(lambda v: self.slip(q, v, t, p))(zero)
        s0 = self.slip(q, zero, t, p)
        return -jnp.linalg.solve(S[:, nd:], S[:, :nd] @ qd_dot + s0)

    def rates(self, q, qd_dot, t, p):
        """(q_d_dot, q_k_dot): every coordinate's rate, the kinematic ones from the non-holonomic constraints
        (:meth:`kinematic_rates`)."""
        return jnp.concatenate([qd_dot, self.kinematic_rates(q, qd_dot, t, p)])

    def residual(self, q, qd_dot, qd_ddot, t, p):
        """R of the reduced equations: R = M_bar q_d_ddot - f_bar (module docstring)."""
        qdot = self.rates(q, qd_dot, t, p)
        qk_ddot = jax.jvp(
            lambda q_, v_, t_: self.kinematic_rates(q_, v_, t_, p), (q, qd_dot, t), (qdot, qd_ddot, jnp.ones_like(t))
        )[1]
        qddot = jnp.concatenate([qd_ddot, qk_ddot])

        def velocity(q_, v_, t_):
            return self.body_velocities(q_, v_, t_, p)

        (v_c, omega), (a_c, alpha) = jax.jvp(velocity, (q, qdot, t), (qdot, qddot, jnp.ones_like(t)))
        _, R = self.pose(q, t, p)
        masses, inertias = self._value(self.masses, p), self._value(self.inertias, p)
        gravity = self._value(self.gravity, p)
        inertia_world = jnp.einsum("bij,bjk,blk->bil", R, inertias, R)
        forces = masses[:, None] * (a_c - gravity)
        torques = jnp.einsum("bij,bj->bi", inertia_world, alpha) + jnp.cross(
            omega, jnp.einsum("bij,bj->bi", inertia_world, omega)
        )
        # virtual power: the admissible virtual velocities are delta v = J H delta q_d_dot (the
        # rheonomic terms b and dF/dt are affine offsets), so the reduced residual is H^T J^T of the
        # inertial-minus-applied wrenches: the transpose of the linear part, which is what vjp gives
        _, pullback = jax.vjp(lambda vd: self.body_velocities(q, self.rates(q, vd, t, p), t, p), qd_dot)
        reduced = pullback((forces, torques))[0]
        if self.force is not None:
            H = jax.jacfwd(lambda vd: self.rates(q, vd, t, p))(qd_dot)
            reduced = reduced - H.T @ jnp.asarray(self.force(q, qdot, t, p), dtype=float)
        return reduced

    def inertial_forces(self, x, t, p):
        """(nb, 3): m (a_c - g) of each body along the motion -- for a single body the resultant of
        every non-gravity force on it (e.g. the contact force on a rolling disk)."""
        qd_dot, qd, qk = self.split(x)
        q = jnp.concatenate([qd, qk])
        qd_ddot = self.state_derivative(x, t, p)[: self.n_d]
        qdot = self.rates(q, qd_dot, t, p)
        qk_ddot = jax.jvp(
            lambda q_, v_, t_: self.kinematic_rates(q_, v_, t_, p), (q, qd_dot, t), (qdot, qd_ddot, jnp.ones_like(t))
        )[1]

        def velocity(q_, v_, t_):
            return self.body_velocities(q_, v_, t_, p)[0]

        a_c = jax.jvp(velocity, (q, qdot, t), (qdot, jnp.concatenate([qd_ddot, qk_ddot]), jnp.ones_like(t)))[1]
        return self._value(self.masses, p)[:, None] * (a_c - self._value(self.gravity, p))

    def forces_along(self, times, states, **parameters) -> np.ndarray:
        """:meth:`inertial_forces` at each sampled state (steps, nb, 3), in one vectorized call."""
        p = self.params(**parameters)
        function = self._compiled("inertial_forces_batch", jax.vmap(self.inertial_forces, in_axes=(0, 0, None)))
        with float64():
            return np.asarray(function(np.asarray(states, np.float64), np.asarray(times, np.float64), p))

    def poses_along(self, times, states, **parameters):
        """Body positions (steps, nb, 3) and rotations (steps, nb, 3, 3) at sampled states."""
        p = self.params(**parameters)
        nd = self.n_d

        def one(x, t, p):
            return self.pose(jnp.concatenate([x[nd : 2 * nd], x[2 * nd :]]), t, p)

        function = self._compiled("poses_batch", jax.vmap(one, in_axes=(0, 0, None)))
        with float64():
            positions, rotations = function(np.asarray(states, np.float64), np.asarray(times, np.float64), p)
        return np.asarray(positions), np.asarray(rotations)

    def state_derivative(self, x, t, p):
        """Eq. (22): d/dt (q_d_dot, q_d, q_k)."""
        qd_dot, qd, qk = self.split(x)
        q = jnp.concatenate([qd, qk])
        zero = jnp.zeros(self.n_d)
        M = jax.jacfwd(lambda a: self.residual(q, qd_dot, a, t, p))(zero)
        f = -self.residual(q, qd_dot, zero, t, p)
        qd_ddot = jnp.linalg.solve(M, f) if self.n_d else jnp.zeros(0)
        return jnp.concatenate([qd_ddot, qd_dot, self.kinematic_rates(q, qd_dot, t, p)])

    # --- compiled entry points --------------------------------------------------------------
    def _compiled(self, name, function):
        if name not in self._jit:
            with float64():
                self._jit[name] = jit(function)
        return self._jit[name]

    def derivative(self, x, t=0.0, **parameters):
        """NumPy d/dt x at (x, t)."""
        p = self.params(**parameters)
        with float64():
            return np.asarray(
                self._compiled("derivative", self.state_derivative)(np.asarray(x, np.float64), np.float64(t), p)
            )

    def linearize(self, x0, t=0.0, **parameters) -> Linearization:
        """Eq. (29) at the nominal state x0 = (q_d_dot, q_d, q_k) (steady: q_d_ddot = 0 there)."""
        p = self.params(**parameters)
        with float64():
            blocks = self._compiled("linearize", self._linearize)(np.asarray(x0, np.float64), np.float64(t), p)
        M, C, K_d, K_k, A, B_d, B_k, f_d = (np.asarray(b) for b in blocks)
        nd, nk = self.n_d, self.n_k
        E = np.eye(2 * nd + nk)
        E[:nd, :nd] = M
        P = np.zeros((2 * nd + nk, 2 * nd + nk))
        P[:nd, :nd], P[:nd, nd : 2 * nd], P[:nd, 2 * nd :] = C, K_d, K_k
        P[nd : 2 * nd, :nd] = -np.eye(nd)
        P[2 * nd :, :nd], P[2 * nd :, nd : 2 * nd], P[2 * nd :, 2 * nd :] = -A, -B_d, -B_k
        J = -np.linalg.solve(E, P)
        return Linearization(M, C, K_d, K_k, A, B_d, B_k, f_d, J, np.linalg.eigvals(J))

    def _linearize(self, x0, t, p):
        qd_dot, qd, qk = self.split(x0)
        nd = self.n_d
        accel = jnp.zeros(nd)

        def residual_and_rates(v, d, k, a):
            q = jnp.concatenate([d, k])
            return self.residual(q, v, a, t, p), self.kinematic_rates(q, v, t, p)

        # one forward-mode pass over all four arguments (a single batched trace of the residual,
        # not one per block: the trace and its compilation are most of a linearization's cost)
        (C, K_d, K_k, M), (A, B_d, B_k, _) = jax.jacfwd(residual_and_rates, argnums=(0, 1, 2, 3))(qd_dot, qd, qk, accel)
        f_d = -self.residual(jnp.concatenate([qd, qk]), qd_dot, accel, t, p)
        return M, C, K_d, K_k, A, B_d, B_k, f_d

    def simulate(self, x0, t_end, samples=2001, rtol=1e-10, atol=1e-12, **parameters):
        """Integrate Eq. (22) from x0 (SciPy DOP853, the compiled JAX derivative);
        returns (t (samples,), x (samples, 2 n_d + n_k))."""
        from scipy.integrate import solve_ivp

        p = self.params(**parameters)
        function = self._compiled("derivative", self.state_derivative)

        def rhs(t, x):
            with float64():
                return np.asarray(function(x, np.float64(t), p))

        times = np.linspace(0.0, t_end, samples)
        solution = solve_ivp(
            rhs, (0.0, t_end), np.asarray(x0, float), method="DOP853", t_eval=times, rtol=rtol, atol=atol
        )
        if not solution.success:
            raise RuntimeError(f"{self.name}: integration failed: {solution.message}")
        return solution.t, solution.y.T
