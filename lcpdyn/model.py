"""The multibody model: bodies, forces, bilateral constraints and contacts, and its JAX
kinematics (Peiret 2016 Eqs. 1-4).

Generalized coordinates q (7 per body: position, unit quaternion) and velocities v (6 per body:
world centre-of-mass velocity, body-frame angular velocity), with q_dot = Gamma(q) v.
:meth:`Model.compile` traces, once per model, one function

    evaluate(q, v, t) -> Kinematics

returning everything the time stepper needs at the known state (q, v): the generalized force
f_app - c (gravity, body forces, springs, minus the gyroscopic term omega_b x I omega_b), the gaps
Phi, the contact Jacobians N = n^T J_p (Eq. 3) and D = [t1 t2]^T J_p in each contact's base
tangent basis (Eq. 4), J_p = d(v_p)/dv being the Jacobian of the material velocity of the
candidate contact point (equal to dPhi/dq Gamma, see :meth:`Model.gap_jacobian`), the bilateral Jacobian
A (Eq. 2) with the holonomic residual g(q) and the non-holonomic right-hand side u, the contact
frames, and the potential energy. All Jacobians come from ``jax.jacfwd``.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from .body import RigidBody
from .compliance import elastic_energy
from .constraints import Holonomic, Nonholonomic
from .contact import Contact, DiskContact
from .forces import BodyForce, SpringDamper, TorsionalSpringDamper
from .precision import float64
from .rotation import quaternion_rate_matrix
from .state_view import StateView
from .validation import finite_vector

__all__ = ["Model", "Kinematics"]


@dataclass(frozen=True)
class Kinematics:
    """NumPy arrays evaluated at one state; r contacts, m bilateral rows, n velocities."""

    force: np.ndarray  # (n,) f_app - c
    gap: np.ndarray  # (r,) Phi
    N: np.ndarray  # (r, n)
    D: np.ndarray  # (2r, n) rows 2i, 2i+1: t1, t2 of contact i
    A: np.ndarray  # (m, n) holonomic rows first, then non-holonomic
    holonomic_error: np.ndarray  # (m_h,) g(q)
    nonholonomic_rhs: np.ndarray  # (m_nh,) u(q, t)
    point: np.ndarray  # (r, 3) candidate contact points (world)
    normal: np.ndarray  # (r, 3)
    tangent: np.ndarray  # (r, 2, 3) base tangent basis (t1, t2) per contact
    sin_tilt: np.ndarray  # (d,) |n x e| of each disk contact, in the order of the model's disk contacts
    tilt_margin: float  # min over disks of |n x e| - min_sin_tilt (< 0: a disk lies flat; 1 if none)
    potential_energy: float
    holonomic_rate: np.ndarray  # (m_h,) dg/dt (rheonomic constraints; zeros otherwise)
    nonconservative_force: np.ndarray  # (n,) the part of f_app without a potential (body forces, dampers)
    conservative_power: float  # (f_app - f_nc) . v: power of gravity and springs
    finite: bool  # every entry above is finite


class Model:
    """A multibody scene. Build it with ``add_body``, ``add_contact``, ``add_force`` and
    ``add_constraint``; ``gravity`` is a world vector (m/s^2)."""

    def __init__(self, gravity=(0.0, 0.0, -9.81)):
        self.gravity = finite_vector("gravity", gravity, 3)
        self.bodies: list[RigidBody] = []
        self.contacts: list[Contact] = []
        self.forces: list = []
        self.holonomic: list[Holonomic] = []
        self.nonholonomic: list[Nonholonomic] = []
        self._compiled = None

    # --- building -----------------------------------------------------------------------
    def add_body(self, body: RigidBody) -> RigidBody:
        if not isinstance(body, RigidBody):
            raise TypeError(f"add_body expects a RigidBody, got {type(body).__name__}")
        if any(b.name == body.name for b in self.bodies):
            raise ValueError(f"a body named {body.name!r} already exists")
        self.bodies.append(body)
        self._compiled = None
        return body

    def _check_member(self, body, what):
        if body is not None and all(body is not b for b in self.bodies):
            raise ValueError(f"{what}: body {body.name!r} has not been added to the model")

    def add_contact(self, contact: Contact) -> Contact:
        if not isinstance(contact, Contact):
            raise TypeError(f"add_contact expects a Contact, got {type(contact).__name__}")
        self._check_member(contact.body, "contact")
        self.contacts.append(contact)
        self._compiled = None
        return contact

    def add_force(self, force):
        if not isinstance(force, (BodyForce, SpringDamper, TorsionalSpringDamper)):
            raise TypeError(
                f"add_force expects a BodyForce, SpringDamper or TorsionalSpringDamper, got {type(force).__name__}"
            )
        for name in ("body", "body_a", "body_b"):
            self._check_member(getattr(force, name, None), "force")
        self.forces.append(force)
        self._compiled = None
        return force

    def add_constraint(self, constraint):
        if isinstance(constraint, Holonomic):
            for name in ("body_a", "body_b"):
                self._check_member(getattr(constraint, name, None), "constraint")
            self.holonomic.append(constraint)
        elif isinstance(constraint, Nonholonomic):
            self.nonholonomic.append(constraint)
        else:
            raise TypeError(f"add_constraint expects Holonomic or Nonholonomic, got {type(constraint).__name__}")
        self._compiled = None
        return constraint

    # --- layout -------------------------------------------------------------------------
    @property
    def n_velocities(self) -> int:
        return 6 * len(self.bodies)

    @property
    def n_coordinates(self) -> int:
        return 7 * len(self.bodies)

    @property
    def n_bilateral(self) -> int:
        return (
            sum(c.size for c in self.holonomic)
            + sum(c.size for c in self.nonholonomic)
            + sum(self._rolling_rows(c) for c in self.contacts)
        )

    @staticmethod
    def _rolling_rows(contact) -> int:
        """Bilateral rows an ideally rolling disk adds (2 slip rows, plus 1 for zero spin)."""
        if not isinstance(contact, DiskContact):
            return 0
        return (2 if contact.rolling == "ideal" else 0) + (1 if contact.spin == "ideal" else 0)

    def friction_coefficients(self, static: bool = False) -> np.ndarray:
        """Kinetic (or, with ``static=True``, static) mu per contact; 0 for ideally rolling disks,
        whose tangential rows are bilateral."""
        return np.array(
            [
                0.0 if isinstance(c, DiskContact) and c.rolling == "ideal" else (c.mu_static if static else c.mu)
                for c in self.contacts
            ]
        )

    def index(self) -> dict:
        return {id(b): i for i, b in enumerate(self.bodies)}

    def initial_state(self) -> tuple[np.ndarray, np.ndarray]:
        """(q0, v0) from the bodies' initial poses and velocities."""
        q = np.concatenate([np.concatenate([b.position, b.orientation]) for b in self.bodies])
        v = np.concatenate([np.concatenate([b.velocity, b.body_angular_velocity]) for b in self.bodies])
        return q, v

    def mass_matrix(self) -> np.ndarray:
        """M (n x n), constant: blocks diag(m I3, I_body)."""
        n = self.n_velocities
        M = np.zeros((n, n))
        for i, b in enumerate(self.bodies):
            M[6 * i : 6 * i + 3, 6 * i : 6 * i + 3] = b.mass * np.eye(3)
            M[6 * i + 3 : 6 * i + 6, 6 * i + 3 : 6 * i + 6] = b.inertia_matrix
        return M

    # --- JAX functions (traceable) --------------------------------------------------------
    def gamma_v(self, q, v):
        """q_dot = Gamma(q) v."""
        parts = []
        for i in range(len(self.bodies)):
            parts.append(v[6 * i : 6 * i + 3])
            parts.append(quaternion_rate_matrix(q[7 * i + 3 : 7 * i + 7]) @ v[6 * i + 3 : 6 * i + 6])
        return jnp.concatenate(parts)

    def contact_frames(self, q):
        """Per contact (gap, point, normal, t1, t2) stacked: (r,), (r,3), (r,3), (r,3), (r,3)."""
        view = StateView(self.index(), q)
        frames = [c.frame(view.position(c.body), view.rotation(c.body)) for c in self.contacts]
        return tuple(jnp.stack([f[k] for f in frames]) for k in range(5))

    def gaps(self, q):
        return self.contact_frames(q)[0]

    def contact_velocities(self, q, v):
        """World velocities (r, 3) of the material points at the candidate contact points."""
        view = StateView(self.index(), q, v)
        _, points, _, _, _ = self.contact_frames(q)
        return jnp.stack([view.point_velocity(c.body, points[k]) for k, c in enumerate(self.contacts)])

    def slip_velocity(self, q, v):
        """(2r,) components (t1, t2) of each contact's slip velocity: v_T = D v (Eq. 4)."""
        _, _, _, t1, t2 = self.contact_frames(q)
        velocity = self.contact_velocities(q, v)
        return jnp.stack([jnp.sum(t1 * velocity, axis=1), jnp.sum(t2 * velocity, axis=1)], axis=1).reshape(-1)

    def holonomic_residual(self, q, t=0.0):
        view = StateView(self.index(), q)
        return jnp.concatenate([c.residual(view, t) for c in self.holonomic]) if self.holonomic else jnp.zeros(0)

    def nonholonomic_velocity(self, q, v):
        view = StateView(self.index(), q, v)
        return (
            jnp.concatenate([c.velocity_residual(view) for c in self.nonholonomic])
            if self.nonholonomic
            else jnp.zeros(0)
        )

    def nonholonomic_target(self, q, t):
        view = StateView(self.index(), q)
        return jnp.concatenate([c.target(view, t) for c in self.nonholonomic]) if self.nonholonomic else jnp.zeros(0)

    def generalized_force(self, q, v, t):
        """f_app - c (n,): gravity, body forces and springs, minus omega_b x (I omega_b)."""
        view = StateView(self.index(), q, v)
        index = self.index()
        blocks = []
        for b in self.bodies:
            omega = view.body_angular_velocity(b)
            inertia = jnp.asarray(b.inertia_matrix)
            blocks.append([b.mass * jnp.asarray(self.gravity), -jnp.cross(omega, inertia @ omega)])
        for force in self.forces:
            for body, f, torque_world in force.wrenches(t, view):
                i = index[id(body)]
                blocks[i][0] = blocks[i][0] + f
                blocks[i][1] = blocks[i][1] + view.rotation(body).T @ torque_world
        return jnp.concatenate([jnp.concatenate(b) for b in blocks])

    def nonconservative_force(self, q, v, t):
        """The generalized force (n,) of the applied loads that have no potential: every
        :class:`~lcpdyn.forces.BodyForce` and the dampers of springs (their elastic parts are in
        :meth:`potential_energy`). The stepper's energy check counts its work h f_nc . (v + v+)/2
        as energy put in from outside (see :mod:`lcpdyn.stepper`, "Run health")."""
        view = StateView(self.index(), q, v)
        index = self.index()
        out = [jnp.zeros(6) for _ in self.bodies]
        for force in self.forces:
            for body, f, torque_world in force.nonconservative_wrenches(t, view):
                i = index[id(body)]
                out[i] = out[i] + jnp.concatenate([f, view.rotation(body).T @ torque_world])
        return jnp.concatenate(out) if out else jnp.zeros(0)

    def potential_energy(self, q):
        """Gravity, springs and the elastic energy of compliant contacts (J)."""
        view = StateView(self.index(), q)
        energy = 0.0
        compliant = [(i, c) for i, c in enumerate(self.contacts) if c.normal_law is not None]
        if compliant:
            gaps = self.gaps(q)
            for i, c in compliant:
                energy = energy + elastic_energy(c.normal_law, -gaps[i])
        for b in self.bodies:
            energy = energy - b.mass * (jnp.asarray(self.gravity) @ view.position(b))
        for force in self.forces:
            energy = energy + force.potential(view)
        return energy

    def _evaluate(self, q, v, t):
        n = self.n_velocities
        if self.contacts:
            gap, point, normal, t1, t2 = self.contact_frames(q)
            # J (r, 3, n): material velocity of each candidate contact point, linear in v
            J = jax.jacfwd(self.contact_velocities, argnums=1)(q, v)
            N = jnp.einsum("rk,rkn->rn", normal, J)
            D = jnp.stack([jnp.einsum("rk,rkn->rn", t1, J), jnp.einsum("rk,rkn->rn", t2, J)], axis=1).reshape(-1, n)
            tangent = jnp.stack([t1, t2], axis=1)
        else:
            gap, N, D = jnp.zeros(0), jnp.zeros((0, n)), jnp.zeros((0, n))
            point = normal = jnp.zeros((0, 3))
            tangent = jnp.zeros((0, 2, 3))
        g = self.holonomic_residual(q, t)
        if self.holonomic:
            Gamma = jax.jacfwd(self.gamma_v, argnums=1)(q, v)  # (p, n); gamma_v is linear in v
            A_h = jax.jacfwd(self.holonomic_residual)(q, t) @ Gamma
            g_t = jax.jacfwd(self.holonomic_residual, argnums=1)(q, t)  # rheonomic rate dg/dt
        else:
            A_h = jnp.zeros((0, n))
            g_t = jnp.zeros(0)
        A_nh = jax.jacfwd(self.nonholonomic_velocity, argnums=1)(q, v) if self.nonholonomic else jnp.zeros((0, n))
        rolling = []  # ideal rolling and zero spin: bilateral rows from the same JAX Jacobians
        for i, c in enumerate(self.contacts):
            if isinstance(c, DiskContact) and c.rolling == "ideal":
                rolling.append(D[2 * i : 2 * i + 2])
            if isinstance(c, DiskContact) and c.spin == "ideal":  # n . omega = 0 (the plane is fixed)
                spin = jax.jacfwd(
                    lambda w, c=c, i=i: StateView(self.index(), q, w).angular_velocity(c.body) @ normal[i]
                )(v)
                rolling.append(spin[None, :])
        A_roll = jnp.concatenate(rolling) if rolling else jnp.zeros((0, n))
        u_roll = jnp.zeros(A_roll.shape[0])
        view = StateView(self.index(), q)
        disks = [c for c in self.contacts if isinstance(c, DiskContact)]
        tilts = jnp.stack([c.sin_tilt(view.rotation(c.body)) for c in disks]) if disks else jnp.zeros(0)
        margin = jnp.min(tilts - jnp.asarray([c.min_sin_tilt for c in disks])) if disks else jnp.asarray(1.0)
        force, nonconservative = self.generalized_force(q, v, t), self.nonconservative_force(q, v, t)
        minus_c = []  # -c = -omega x I omega per body, the part of force that does no work
        for i, b in enumerate(self.bodies):
            omega = v[6 * i + 3 : 6 * i + 6]
            minus_c += [jnp.zeros(3), -jnp.cross(omega, jnp.asarray(b.inertia_matrix) @ omega)]
        # power of gravity and springs, P_c = (f_app - f_nc) . v: c . v = 0 exactly, but not in rounding or overflow
        power = (force - jnp.concatenate(minus_c) - nonconservative) @ v
        return (
            force,
            gap,
            N,
            D,
            jnp.concatenate([A_h, A_nh, A_roll]),
            g,
            jnp.concatenate([self.nonholonomic_target(q, t), u_roll]),
            point,
            normal,
            tangent,
            tilts,
            margin,
            self.potential_energy(q),
            g_t,
            nonconservative,
            power,
        )

    def gap_jacobian(self, q):
        """dPhi/dq Gamma(q) (r, n) by differentiating the gap functions themselves. The engine's
        N is instead n^T J_p from the candidate point's material velocity (3.5x cheaper to
        evaluate); the two are equal because the candidate point is stationary on the contact
        curve (Bauchau 2002 Sec. 3) -- :mod:`tests.test_kinematics` checks it."""
        v = jnp.zeros(self.n_velocities)
        Gamma = jax.jacfwd(self.gamma_v, argnums=1)(q, v)
        return jax.jacfwd(self.gaps)(q) @ Gamma

    def compile(self):
        """Trace and compile :meth:`_evaluate` (once per model; cached until the model changes).
        Returns a function ``(q, v, t) -> Kinematics`` working in float64.

        The outputs are packed into one flat vector and the ahead-of-time compiled executable is
        called directly: this halves the per-call cost against ``jax.jit``'s dispatch with twelve
        outputs (measured ~37 µs against ~73 µs per call on the wheel).
        """
        if self._compiled is not None:
            return self._compiled
        if not self.bodies:
            raise ValueError("the model has no bodies")
        q0, v0 = self.initial_state()
        with float64():
            shapes = [tuple(x.shape) for x in jax.eval_shape(self._evaluate, q0, v0, np.float64(0.0))]

            def packed(q, v, t):
                flat = jnp.concatenate([jnp.ravel(x) for x in self._evaluate(q, v, t)])
                return jnp.concatenate([flat, jnp.all(jnp.isfinite(flat)).astype(flat.dtype)[None]])

            executable = jax.jit(packed).lower(q0, v0, np.float64(0.0)).compile()
        slices, start = [], 0
        for shape in shapes:
            size = int(np.prod(shape))
            slices.append((start, start + size, shape))
            start += size

        def unscoped(q, v, t) -> Kinematics:
            flat = np.asarray(executable(q, v, np.float64(t)))
            a = [flat[i:j].reshape(shape) for i, j, shape in slices]
            return Kinematics(
                a[0],
                a[1],
                a[2],
                a[3],
                a[4],
                a[5],
                a[6],
                a[7],
                a[8],
                a[9],
                a[10],
                float(a[11]),
                float(a[12]),
                a[13],
                a[14],
                float(a[15]),
                bool(flat[-1] == 1.0),
            )

        def evaluate(q, v, t) -> Kinematics:
            with float64():
                return unscoped(np.asarray(q, np.float64), np.asarray(v, np.float64), t)

        # For loops that already hold the float64 scope (Simulation.run) and pass float64 arrays:
        # entering the scope costs ~10 us per call, a third of the whole evaluation.
        evaluate.unscoped = unscoped
        self._compiled = evaluate
        return evaluate

    def describe_force(self, i: int) -> str:
        """A readable name of ``self.forces[i]`` for error messages."""
        force = self.forces[i]
        bodies = [getattr(force, k, None) for k in ("body", "body_a", "body_b")]
        names = " and ".join(repr(b.name) for b in bodies if b is not None) or "the world"
        function = getattr(force, "function", None)
        extra = f" (function {getattr(function, '__name__', repr(function))!r})" if function is not None else ""
        return f"force {i} ({type(force).__name__} on body {names}){extra}"

    def describe_contact(self, i: int) -> str:
        contact = self.contacts[i]
        return f"contact {i} ({type(contact).__name__} on body {contact.body.name!r})"

    def diagnose(self, q, v, t) -> list[str]:
        """The pieces of the model that give a NaN or infinite value at (q, v, t), each named
        (body, force, contact or constraint, and which quantity). Evaluates every user function
        eagerly, one by one -- slow, meant for error messages only."""
        found = []

        def bad(value):
            return not np.all(np.isfinite(np.asarray(value, dtype=float)))

        def show(value):
            return np.array2string(np.asarray(value, dtype=float), precision=4)

        q = np.asarray(q, np.float64)
        v = np.asarray(v, np.float64)
        with float64(), np.errstate(all="ignore"):
            view = StateView(self.index(), jnp.asarray(q), jnp.asarray(v))
            for i, b in enumerate(self.bodies):
                for name, value in (
                    ("position", q[7 * i : 7 * i + 3]),
                    ("orientation quaternion", q[7 * i + 3 : 7 * i + 7]),
                    ("velocity", v[6 * i : 6 * i + 3]),
                    ("angular velocity", v[6 * i + 3 : 6 * i + 6]),
                ):
                    if bad(value):
                        found.append(f"body {b.name!r}: {name} = {show(value)}")
                omega = v[6 * i + 3 : 6 * i + 6]
                gyroscopic = np.cross(omega, b.inertia_matrix @ omega)
                if not bad(omega) and bad(gyroscopic):
                    found.append(f"body {b.name!r}: gyroscopic term omega x I omega = {show(gyroscopic)} overflows")
            for b in self.bodies:
                gravity = -b.mass * float(self.gravity @ np.asarray(view.position(b)))
                if not bad(view.position(b)) and bad(gravity):
                    found.append(f"body {b.name!r}: gravity's potential energy -m g . x = {gravity!r} J overflows")
            compliant = [(i, c) for i, c in enumerate(self.contacts) if c.normal_law is not None]
            for i, c in compliant:
                gap = c.frame(view.position(c.body), view.rotation(c.body))[0]
                energy = float(elastic_energy(c.normal_law, -gap))
                if not bad(gap) and bad(energy):
                    found.append(
                        f"{self.describe_contact(i)}: elastic energy of its {type(c.normal_law).__name__} "
                        f"= {energy!r} J at the approach {-float(gap)!r} m"
                    )
            for i, force in enumerate(self.forces):
                for body, f, torque in force.wrenches(t, view):
                    if bad(f) or bad(torque):
                        found.append(
                            f"{self.describe_force(i)} gave force = {show(f)}, torque = {show(torque)} "
                            f"on body {body.name!r}"
                        )
                if bad(force.potential(view)):
                    found.append(f"{self.describe_force(i)} gave potential energy {float(force.potential(view))!r}")
            for i, c in enumerate(self.contacts):
                labels = ("gap", "contact point", "normal", "tangent t1", "tangent t2")
                for label, value in zip(labels, c.frame(view.position(c.body), view.rotation(c.body))):
                    if bad(value):
                        found.append(f"{self.describe_contact(i)}: {label} = {show(value)}")
            for c in self.holonomic:
                if bad(c.residual(view, t)):
                    found.append(f"constraint {c.name!r}: residual g = {show(c.residual(view, t))}")
            for c in self.nonholonomic:
                if bad(c.velocity_residual(view)):
                    found.append(f"constraint {c.name!r}: velocity map a(q, v) = {show(c.velocity_residual(view))}")
                if bad(c.target(view, t)):
                    found.append(f"constraint {c.name!r}: right-hand side u(q, t) = {show(c.target(view, t))}")
        return found

    def kinetic_energy(self, v) -> float:
        v = np.asarray(v)
        return 0.5 * float(v @ (self.mass_matrix() @ v))
