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

Structure (issue 11). Contacts of one geometry class are evaluated together: their numbers
(:meth:`lcpdyn.contact.Contact.geometry`) are stacked and the class's pure ``frame_of`` is
``vmap``ped over them, so the trace does not grow with the number of contacts. Each contact's
Jacobians are blocks over the 6 velocities of its body, N_i = n_i^T J_p,i (1 x 6) and
D_i = [t1 t2]^T J_p,i (2 x 6) with J_p,i the (3 x 6) ``jacfwd`` of the material velocity of its
candidate point; :class:`Kinematics` carries the blocks and builds the dense (r, n) N and D only
when asked. The numbers (gravity, masses, inertias, contact geometry) are inputs of the compiled
function, not constants: models of one structure share a compilation.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from dataclasses import dataclass
from functools import cached_property

import jax
import jax.numpy as jnp
import numpy as np

from .body import RigidBody
from .compliance import elastic_energy
from .constraints import Holonomic, Nonholonomic
from .contact import Contact
from .forces import BodyForce, SpringDamper, TorsionalSpringDamper
from .kernels import kinetic_energy
from .precision import float64
from .rotation import quaternion_rate_matrix, rotation_matrix
from .state_view import StateView
from .validation import finite_vector

__all__ = ["Model", "Kinematics", "COMPILATIONS"]


@dataclass(frozen=True)
class Kinematics:
    """NumPy arrays evaluated at one state; r contacts, m bilateral rows, n velocities."""

    force: np.ndarray  # (n,) f_app - c
    gap: np.ndarray  # (r,) Phi
    N_block: np.ndarray  # (r, 6) n^T J_p of each contact over the 6 velocities of its body
    D_block: np.ndarray  # (r, 2, 6) [t1 t2]^T J_p likewise
    contact_body: np.ndarray  # (r,) the body of each contact (its columns 6b .. 6b + 5)
    n_velocities: int
    A_block: np.ndarray  # (m, k, 6) each bilateral row over the 6 velocities of each of its k bodies
    A_body: np.ndarray  # (m, k) those bodies (-1: padding); rows: holonomic, non-holonomic, rolling
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

    @cached_property
    def N(self) -> np.ndarray:
        """(r, n) dense N = n^T J_p (Eq. 3), scattered from the blocks."""
        return _scatter(self.N_block, self.contact_body, self.n_velocities)

    @cached_property
    def A(self) -> np.ndarray:
        """(m, n) dense A (Eq. 2), scattered from the row blocks (holonomic rows first, then
        non-holonomic, then ideal rolling)."""
        out = np.zeros((self.A_body.shape[0], self.n_velocities))
        rows, slots = np.nonzero(self.A_body >= 0)
        out[rows[:, None], 6 * self.A_body[rows, slots][:, None] + np.arange(6)] = self.A_block[rows, slots]
        return out

    @cached_property
    def D(self) -> np.ndarray:
        """(2r, n) dense D, rows 2i, 2i+1: t1, t2 of contact i (Eq. 4), scattered from the blocks."""
        r = self.D_block.shape[0]
        return _scatter(self.D_block.reshape(2 * r, 6), np.repeat(self.contact_body, 2), self.n_velocities)


def _scatter(blocks, body, n):
    """Dense (rows, n) from per-row blocks (rows, 6) over the columns of ``body`` per row."""
    if n == 6:
        return blocks
    out = np.zeros((blocks.shape[0], n))
    out[np.arange(blocks.shape[0])[:, None], 6 * body[:, None] + np.arange(6)] = blocks
    return out


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

    def add_contact(self, contact: Contact, tyre=None) -> Contact:
        """Add ``contact``; returns it. ``tyre`` (optional, e.g. :class:`lcpdyn.tyre.MorelandTyre`):
        a deformable tyre between the contact's wheel and the ground -- ``tyre.attach(model,
        contact)`` adds what the tyre needs and the contact on its footprint, which is returned."""
        if not isinstance(contact, Contact):
            raise TypeError(f"add_contact expects a Contact, got {type(contact).__name__}")
        self._check_member(contact.body, "contact")
        if tyre is not None:
            if not callable(getattr(tyre, "attach", None)):
                raise TypeError(f"add_contact: tyre must have attach(model, contact), got {type(tyre).__name__}")
            return tyre.attach(self, contact)
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
        if not isinstance(constraint, (Holonomic, Nonholonomic)):
            raise TypeError(f"add_constraint expects Holonomic or Nonholonomic, got {type(constraint).__name__}")
        for body in constraint.bodies or ():
            self._check_member(body, f"constraint {constraint.name!r}")
        (self.holonomic if isinstance(constraint, Holonomic) else self.nonholonomic).append(constraint)
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
            + sum(c.bilateral_rows for c in self.contacts)
        )

    def holonomic_compliance(self) -> tuple[np.ndarray, np.ndarray]:
        """(stiffness k, damping c), each (m_h,) over the holonomic rows in order: k = inf and
        c = 0 on rigid rows (:class:`~lcpdyn.constraints.Holonomic` ``stiffness``)."""
        stiffness = [np.full(c.size, np.inf) if c.stiffness is None else c.stiffness for c in self.holonomic]
        damping = [c.damping for c in self.holonomic]
        if not stiffness:
            return np.zeros(0), np.zeros(0)
        return np.concatenate(stiffness), np.concatenate(damping)

    def friction_coefficients(self, static: bool = False) -> np.ndarray:
        """Kinetic (or, with ``static=True``, static) mu per contact; 0 for ideally rolling disks,
        whose tangential rows are bilateral."""
        return np.array([0.0 if c.ideal_rolling else (c.mu_static if static else c.mu) for c in self.contacts])

    def index(self) -> dict:
        return {id(b): i for i, b in enumerate(self.bodies)}

    def initial_state(self) -> tuple[np.ndarray, np.ndarray]:
        """(q0, v0) from the bodies' initial poses and velocities."""
        q = np.concatenate([np.concatenate([b.position, b.orientation]) for b in self.bodies])
        v = np.concatenate([np.concatenate([b.velocity, b.body_angular_velocity]) for b in self.bodies])
        return q, v

    def body_masses(self) -> tuple[np.ndarray, np.ndarray]:
        """(m (nb,), I_body (nb, 3, 3)): the blocks of the block-diagonal M."""
        return (
            np.array([b.mass for b in self.bodies], float),
            np.array([b.inertia_matrix for b in self.bodies], float).reshape(-1, 3, 3),
        )

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
        """q_dot = Gamma(q) v (all bodies at once)."""
        nb = len(self.bodies)
        Q, V = q.reshape(nb, 7), v.reshape(nb, 6)
        rates = jax.vmap(lambda quaternion, omega: quaternion_rate_matrix(quaternion) @ omega)(Q[:, 3:], V[:, 3:])
        return jnp.concatenate([V[:, :3], rates], axis=1).reshape(-1)

    def contact_frames(self, q):
        """Per contact (gap, point, normal, t1, t2) stacked: (r,), (r,3), (r,3), (r,3), (r,3)."""
        layout = _Layout(self)
        floats, ints = layout.pack(self)
        return layout.frames(q, jnp.asarray(floats), jnp.asarray(ints))[:5]

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

    def _wrenches(self, q, v, t, linear, angular, nonconservative=False):
        """Adds the forces' wrenches to the per-body (nb, 3) linear and body-frame angular parts."""
        view = StateView(self.index(), q, v)
        index = self.index()
        for force in self.forces:
            wrenches = force.nonconservative_wrenches(t, view) if nonconservative else force.wrenches(t, view)
            for body, f, torque_world in wrenches:
                i = index[id(body)]
                linear = linear.at[i].add(f)
                angular = angular.at[i].add(view.rotation(body).T @ torque_world)
        return jnp.concatenate([linear, angular], axis=1).reshape(-1)

    def generalized_force(self, q, v, t):
        """f_app - c (n,): gravity, body forces and springs, minus omega_b x (I omega_b)."""
        layout = _Layout(self)
        floats, _ = layout.pack(self)
        return layout.applied(self, q, v, t, jnp.asarray(floats))[0]

    def nonconservative_force(self, q, v, t):
        """The generalized force (n,) of the applied loads that have no potential: every
        :class:`~lcpdyn.forces.BodyForce` and the dampers of springs (their elastic parts are in
        :meth:`potential_energy`). The stepper's energy check counts its work h f_nc . (v + v+)/2
        as energy put in from outside (docs/theory/step.md, "Run health")."""
        nb = len(self.bodies)
        return self._wrenches(q, v, t, jnp.zeros((nb, 3)), jnp.zeros((nb, 3)), nonconservative=True)

    def potential_energy(self, q):
        """Gravity, springs and the elastic energy of compliant contacts and compliant bilateral
        rows (beams) (J)."""
        layout = _Layout(self)
        floats, ints = layout.pack(self)
        return layout.potential(
            self,
            q,
            jnp.asarray(floats),
            layout.frames(q, jnp.asarray(floats), jnp.asarray(ints))[0],
            self.holonomic_residual(q),
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
        """The compiled kinematics ``(q, v, t) -> Kinematics`` of this model, in float64.

        The model's numbers (gravity, masses, inertias, every contact's geometry) are *inputs* of
        the compiled function, its structure (body count, contact classes and their order,
        ideal-rolling rows) the static part: models of one structure without user forces,
        constraints or compliant laws (whose functions are traced into the code) share one
        compilation, so a parameter sweep compiles once (:data:`COMPILATIONS` counts them).
        Contacts of one class are evaluated together (``vmap`` over their stacked numbers), and
        each contact's Jacobian is a block over the 6 velocities of its body: trace and compile
        time do not grow with the number of contacts.

        The outputs are packed into one flat vector and the ahead-of-time compiled executable is
        called directly: this halves the per-call cost against ``jax.jit``'s dispatch with twelve
        outputs (measured ~37 µs against ~73 µs per call on the wheel).
        """
        if self._compiled is not None:
            return self._compiled
        if not self.bodies:
            raise ValueError("the model has no bodies")
        layout = _Layout(self)
        floats, ints = layout.pack(self)
        key = layout.key() if self._shareable() else None
        entry = _COMPILED.get(key) if key is not None else None
        if entry is None:
            entry = _compile(self, layout, floats, ints)
            if key is not None:
                _COMPILED[key] = entry
                while len(_COMPILED) > _CACHE_SIZE:
                    _COMPILED.popitem(last=False)
        else:
            _COMPILED.move_to_end(key)
        executable, slices = entry
        with float64():  # device arrays, converted once
            floats, ints = jnp.asarray(floats), jnp.asarray(ints)
        n = self.n_velocities
        body = layout.contact_body

        def unscoped(q, v, t) -> Kinematics:
            flat = np.asarray(executable(q, v, np.float64(t), floats, ints))
            a = [flat[i:j].reshape(shape) for i, j, shape in slices]
            return Kinematics(
                a[0],
                a[1],
                a[2],
                a[3],
                body,
                n,
                a[4],
                layout.A_body,
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

    def _shareable(self) -> bool:
        """Whether everything the kinematics traces is in the packed numbers (no user functions)."""
        return not (self.forces or self.holonomic or self.nonholonomic) and all(
            c.normal_law is None for c in self.contacts
        )

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
        mass, inertia = self.body_masses()
        return kinetic_energy(mass, inertia, np.asarray(v, float))


# --- the compiled kinematics ---------------------------------------------------------------
_CACHE_SIZE = 16
_COMPILED: OrderedDict = OrderedDict()  # structure key -> (executable, output slices)

COMPILATIONS = [0]
"""How many times the kinematics has been traced and compiled in this process (``COMPILATIONS[0]``):
models of one structure share a compilation (:meth:`Model.compile`)."""


class _Layout:
    """The static structure of a model's kinematics and where its numbers sit in the packed
    inputs: ``floats`` = (gravity (3), masses (nb), inertias (nb, 3, 3), then per contact group
    and per geometry number the stacked values) and ``ints`` = the body of every contact, in
    group order. Groups are the contacts of one ``geometry_key`` in order of first appearance;
    ``order`` takes the concatenated group outputs back to the model's contact order."""

    def __init__(self, model: Model):
        nb = len(model.bodies)
        self.nb = nb
        index = model.index()
        groups: dict = {}
        for i, c in enumerate(model.contacts):
            groups.setdefault(c.geometry_key(), []).append(i)
        self.groups = []
        offset = 3 + nb + 9 * nb
        for key, members in groups.items():
            first = model.contacts[members[0]]
            numbers = first.geometry()
            fields = []
            for name in sorted(numbers):
                shape = np.shape(numbers[name])
                size = len(members) * int(np.prod(shape, dtype=int))
                fields.append((name, shape, offset, offset + size))
                offset += size
            self.groups.append((key, type(first), first.normal_law is not None, tuple(members), fields))
        self.n_floats = offset
        grouped = [i for _, _, _, members, _ in self.groups for i in members]
        self.order = np.argsort(np.array(grouped, dtype=np.int64)) if grouped else np.zeros(0, np.int64)
        self.contact_body = np.array([index[id(c.body)] for c in model.contacts], dtype=np.int64)
        self.grouped_body = self.contact_body[np.array(grouped, dtype=np.int64)] if grouped else self.contact_body
        self.tilted = [i for i, c in enumerate(model.contacts) if c.tilt_of is not None]
        self.rolling = tuple(
            (i, c.ideal_rolling, c.ideal_spin) for i, c in enumerate(model.contacts) if c.bilateral_rows
        )
        self.constraint_groups = _constraint_groups(model)
        every = tuple(range(nb))
        row_bodies = []  # the bodies each bilateral row may touch (static): declared, else all
        for c in (*model.holonomic, *model.nonholonomic):
            own = every if c.bodies is None else tuple(index[id(b)] for b in c.bodies)
            row_bodies += [own] * c.size
        for i, rolling, spin in self.rolling:
            row_bodies += [(int(self.contact_body[i]),)] * (2 * rolling + spin)
        self.row_width = max((len(b) for b in row_bodies), default=1)
        self.A_body = np.full((len(row_bodies), self.row_width), -1, np.int64)
        for j, own in enumerate(row_bodies):
            self.A_body[j, : len(own)] = own

    def key(self) -> tuple:
        return (
            self.nb,
            tuple(
                (key, members, tuple((name, shape) for name, shape, _, _ in fields))
                for key, _, _, members, fields in self.groups
            ),
            self.rolling,
        )

    def pack(self, model: Model) -> tuple[np.ndarray, np.ndarray]:
        floats = np.empty(self.n_floats)
        mass, inertia = model.body_masses()
        floats[:3] = model.gravity
        floats[3 : 3 + self.nb] = mass
        floats[3 + self.nb : 3 + 10 * self.nb] = inertia.reshape(-1)
        for _, _, _, members, fields in self.groups:
            numbers = [model.contacts[i].geometry() for i in members]
            for name, _, start, end in fields:
                floats[start:end] = np.concatenate([np.ravel(np.asarray(p[name], float)) for p in numbers])
        return floats, self.grouped_body.copy()

    def bodies(self, floats):
        nb = self.nb
        return floats[:3], floats[3 : 3 + nb], floats[3 + nb : 3 + 10 * nb].reshape(nb, 3, 3)

    def frames(self, q, floats, ints):
        """(gap, point, normal, t1, t2, N_block, D_block, tilt) in contact order (tilt in the
        order of the tilted contacts): every contact group ``vmap``ped over its stacked numbers;
        J_p of each contact is the (3, 6) Jacobian of its candidate point's material velocity
        v_p = v + (R omega_b) x (p - x) over its body's 6 velocities (``jax.jacfwd``)."""
        nb = self.nb
        Q = q.reshape(nb, 7)
        positions = Q[:, :3]
        rotations = jax.vmap(rotation_matrix)(Q[:, 3:])
        parts, tilts, start = [], [], 0

        def material_velocity(body_velocity, point, x, R):
            return body_velocity[:3] + jnp.cross(R @ body_velocity[3:], point - x)

        def jacobian(point, x, R):
            return jax.jacfwd(material_velocity)(jnp.zeros(6), point, x, R)

        for _, cls, compliant, members, fields in self.groups:
            count = len(members)
            p = {name: floats[a:b].reshape((count, *shape)) for name, shape, a, b in fields}
            body = ints[start : start + count]
            start += count
            x, R = positions[body], rotations[body]
            gap, point, normal, t1, t2 = jax.vmap(lambda p, x, R, cls=cls, c=compliant: cls.frame_of(p, x, R, c))(
                p, x, R
            )
            J = jax.vmap(jacobian)(point, x, R)  # (count, 3, 6)
            N = jnp.einsum("rk,rkn->rn", normal, J)
            D = jnp.stack([jnp.einsum("rk,rkn->rn", t1, J), jnp.einsum("rk,rkn->rn", t2, J)], axis=1)
            parts.append((gap, point, normal, t1, t2, N, D))
            if cls.tilt_of is not None:
                tilts.append((members, jax.vmap(cls.tilt_of)(p, R), p["min_sin_tilt"]))
        if parts:
            order = jnp.asarray(self.order)
            out = [jnp.concatenate([part[k] for part in parts])[order] for k in range(7)]
        else:
            out = [jnp.zeros(0), jnp.zeros((0, 3)), jnp.zeros((0, 3)), jnp.zeros((0, 3)), jnp.zeros((0, 3))]
            out += [jnp.zeros((0, 6)), jnp.zeros((0, 2, 6))]
        if tilts:
            position = {c: k for k, c in enumerate(self.tilted)}
            members = [m for group, _, _ in tilts for m in group]
            back = jnp.asarray(np.argsort([position[m] for m in members]))
            tilt = jnp.concatenate([t for _, t, _ in tilts])[back]
            least = jnp.concatenate([t for _, _, t in tilts])[back]
        else:
            tilt = least = jnp.zeros(0)
        return (*out, tilt, least)

    def applied(self, model, q, v, t, floats):
        """(f_app - c, -c): gravity and the forces' wrenches, minus omega_b x I omega_b."""
        nb = self.nb
        gravity, mass, inertia = self.bodies(floats)
        omega = v.reshape(nb, 6)[:, 3:]
        minus_c = -jnp.cross(omega, jnp.einsum("bij,bj->bi", inertia, omega))
        force = model._wrenches(q, v, t, mass[:, None] * gravity, minus_c)
        return force, jnp.concatenate([jnp.zeros((nb, 3)), minus_c], axis=1).reshape(-1)

    def potential(self, model, q, floats, gap, holonomic):
        """Gravity, springs, compliant contacts and compliant bilateral rows (k g^2 / 2 over the
        holonomic residual ``holonomic`` (m_h,))."""
        gravity, mass, _ = self.bodies(floats)
        positions = q.reshape(self.nb, 7)[:, :3]
        energy = -jnp.sum(mass * (positions @ gravity))
        stiffness, _ = model.holonomic_compliance()
        soft = np.flatnonzero(np.isfinite(stiffness))
        if soft.size:
            energy = energy + 0.5 * jnp.sum(jnp.asarray(stiffness[soft]) * holonomic[soft] ** 2)
        for i, c in enumerate(model.contacts):
            if c.normal_law is not None:
                energy = energy + elastic_energy(c.normal_law, -gap[i])
        if model.forces:
            view = StateView(model.index(), q)
            for force in model.forces:
                energy = energy + force.potential(view)
        return energy

    def evaluate(self, model, q, v, t, floats, ints):
        """Everything :class:`Kinematics` holds, as JAX arrays (see the module docstring)."""
        gap, point, normal, t1, t2, N, D, tilt, least = self.frames(q, floats, ints)
        m_h = sum(c.size for c in model.holonomic)
        A = jnp.zeros((self.A_body.shape[0], self.row_width, 6))  # row blocks (Kinematics.A_block)
        g, g_t = jnp.zeros(m_h), jnp.zeros(m_h)  # g_t: rheonomic rate dg/dt
        for group in self.constraint_groups:
            g, A, g_t = _holonomic_group(model, group, q, t, self.nb, g, A, g_t)
        row = m_h
        for c in model.nonholonomic:
            blocks = _nonholonomic_rows(model, c, q, v, self.nb)
            A = A.at[row : row + c.size, : blocks.shape[1]].set(blocks)
            row += c.size
        rolling_rows = row  # ideal rolling and zero spin: bilateral rows from the contacts' blocks
        if self.rolling:
            rotations = jax.vmap(rotation_matrix)(q.reshape(self.nb, 7)[:, 3:])
        for i, rolling, spin in self.rolling:
            b = int(self.contact_body[i])
            if rolling:
                A = A.at[row : row + 2, 0].set(D[i])
                row += 2
            if spin:  # n . (R omega_b) = 0 (the plane is fixed)
                A = A.at[row, 0, 3:].set(rotations[b].T @ normal[i])
                row += 1
        margin = jnp.min(tilt - least) if self.tilted else jnp.asarray(1.0)
        force, minus_c = self.applied(model, q, v, t, floats)
        nonconservative = model.nonconservative_force(q, v, t)
        # power of gravity and springs, P_c = (f_app - f_nc) . v: c . v = 0 exactly, but not in rounding or overflow
        power = (force - minus_c - nonconservative) @ v
        return (
            force,
            gap,
            N,
            D,
            A,
            g,
            jnp.concatenate([model.nonholonomic_target(q, t), jnp.zeros(row - rolling_rows)]),
            point,
            normal,
            jnp.stack([t1, t2], axis=1),
            tilt,
            margin,
            self.potential(model, q, floats, gap, g),
            g_t,
            nonconservative,
            power,
        )


def _constraint_view(model, constraint, q, v):
    """(the constraint's bodies' indices (k,) or None, the StateView its functions see): with
    declared ``bodies`` a view of those bodies only, over the slices (7 k,) of q and (6 k,) of v
    passed in, else the whole state."""
    if constraint.bodies is None:
        return None, StateView(model.index(), q, v)
    index = model.index()
    bodies = np.array([index[id(b)] for b in constraint.bodies], np.int64)
    own = {id(b): k for k, b in enumerate(constraint.bodies)}
    return bodies, _NamedView(own, q, v, constraint.name)


class _NamedView(StateView):
    """A StateView over a constraint's declared bodies; another body is an error naming it."""

    def __init__(self, index, q, v, name):
        super().__init__(index, q, v)
        self._name = name

    def _i(self, body):
        try:
            return self._index[id(body)]
        except KeyError:
            raise KeyError(
                f"constraint {self._name!r} reads body {getattr(body, 'name', body)!r}, which is not "
                "among its declared bodies"
            ) from None


def _constraint_groups(model):
    """The holonomic constraints in evaluation groups: (members, rows (G, size)) with members
    of one class, size, time dependence and declared-body count whose class names its numbers
    (``stack_fields``: the joints) stacked together (one ``vmap``, so the trace does not grow
    with the joints), every other constraint alone. ``rows`` are the members' rows of g and A."""
    offsets = np.cumsum([0] + [c.size for c in model.holonomic])
    groups: dict = {}
    for j, c in enumerate(model.holonomic):
        fields = getattr(type(c), "stack_fields", None)
        if fields and c.bodies is not None:
            key = (type(c), c.size, c.time_dependent, len(c.bodies), getattr(c, "body_b", 0) is None)
        else:
            key = ("alone", j)
        groups.setdefault(key, []).append(j)
    out = []
    for members in groups.values():
        rows = np.array([np.arange(offsets[j], offsets[j + 1]) for j in members], np.int64)
        out.append((tuple(model.holonomic[j] for j in members), rows))
    return out


def _holonomic_group(model, group, q, t, nb, g, A, g_t):
    """g, A = dg/dq Gamma and dg/dt of one group of holonomic constraints (:func:`_constraint_groups`)
    written into their rows: a single constraint as :func:`_holonomic_rows`; a stacked group
    ``vmap``ped over its members' numbers and their bodies' coordinates, each member's Jacobian a
    block over its bodies' 6 velocities each."""
    members, rows = group
    first = members[0]
    if len(members) == 1 and not (getattr(type(first), "stack_fields", None) and first.bodies is not None):
        blocks, rate = _holonomic_rows(model, first, q, t, nb)
        value = first.residual(StateView(model.index(), q), t)
        return g.at[rows[0]].set(value), A.at[rows[0], : blocks.shape[1]].set(blocks), g_t.at[rows[0]].set(rate)
    index = model.index()
    bodies = np.array([[index[id(b)] for b in c.bodies] for c in members], np.int64)  # (G, k)
    k = bodies.shape[1]
    coordinates = (7 * bodies[:, :, None] + np.arange(7)).reshape(len(members), 7 * k)
    numbers = {
        name: jnp.asarray(np.stack([np.asarray(getattr(c, name), float) for c in members]))
        for name in type(first).stack_fields
    }
    own = {id(b): i for i, b in enumerate(first.bodies)}

    def residual(values, q_own, t_):
        proxy = copy.copy(first)  # the first member's structure with another member's numbers
        for name, value in values.items():
            setattr(proxy, name, value)
        return proxy.residual(_NamedView(own, q_own, None, first.name), t_)

    q_own = q[coordinates]  # (G, 7 k)
    value = jax.vmap(residual, in_axes=(0, 0, None))(numbers, q_own, t)
    J = jax.vmap(jax.jacfwd(residual, argnums=1), in_axes=(0, 0, None))(numbers, q_own, t)  # (G, size, 7 k)
    rate = jax.vmap(jax.jacfwd(residual, argnums=2), in_axes=(0, 0, None))(numbers, q_own, t)
    blocks = jax.vmap(lambda J_, q_: _per_body_gamma(J_, q_, k))(J, q_own)  # (G, size, 6 k)
    return (
        g.at[rows].set(value),
        A.at[rows, :k].set(blocks.reshape(len(members), first.size, k, 6)),
        g_t.at[rows].set(rate),
    )


def _per_body_gamma(J, q, k):
    """J (rows, 7 k) dg/dq over k bodies' coordinates times Gamma (block-diagonal: I3 and the
    4 x 3 quaternion-rate matrix per body) -> (rows, 6 k), applied per body."""
    J = J.reshape(-1, k, 7)
    rates = jax.vmap(quaternion_rate_matrix)(q.reshape(k, 7)[:, 3:])
    return jnp.concatenate([J[:, :, :3], jnp.einsum("mbk,bkj->mbj", J[:, :, 3:], rates)], axis=2).reshape(-1, 6 * k)


def _holonomic_rows(model, c, q, t, nb):
    """(blocks (size, k, 6), dg_c/dt (size,)) of one holonomic constraint: A_c = dg/dq Gamma
    over its k declared bodies' coordinates (all nb bodies, in order, if undeclared)."""
    bodies, _ = _constraint_view(model, c, q, None)
    if bodies is None:
        J = jax.jacfwd(lambda q_: c.residual(StateView(model.index(), q_), t))(q)
        rate = jax.jacfwd(lambda t_: c.residual(StateView(model.index(), q), t_))(t)
        return _per_body_gamma(J, q, nb).reshape(c.size, nb, 6), rate
    coordinates = (7 * bodies[:, None] + np.arange(7)).reshape(-1)
    q_own = q[coordinates]

    def residual(q_, t_):
        return c.residual(_constraint_view(model, c, q_, None)[1], t_)

    J = jax.jacfwd(residual)(q_own, t)
    rate = jax.jacfwd(residual, argnums=1)(q_own, t)
    return _per_body_gamma(J, q_own, bodies.size).reshape(c.size, bodies.size, 6), rate


def _nonholonomic_rows(model, c, q, v, nb):
    """A_c = da/dv of one non-holonomic constraint as blocks (size, k, 6) over its k declared
    bodies' velocities (all nb bodies, in order, if undeclared)."""
    bodies, _ = _constraint_view(model, c, q, v)
    if bodies is None:
        return jax.jacfwd(lambda v_: c.velocity_residual(StateView(model.index(), q, v_)))(v).reshape(c.size, nb, 6)
    coordinates = (7 * bodies[:, None] + np.arange(7)).reshape(-1)
    columns = (6 * bodies[:, None] + np.arange(6)).reshape(-1)
    q_own = q[coordinates]
    A = jax.jacfwd(lambda v_: c.velocity_residual(_constraint_view(model, c, q_own, v_)[1]))(v[columns])
    return A.reshape(c.size, bodies.size, 6)


def _compile(model: Model, layout: _Layout, floats, ints):
    """Traces and compiles ``layout.evaluate`` for ``model``'s structure; returns (executable, slices)."""
    q0, v0 = model.initial_state()
    COMPILATIONS[0] += 1
    shapes = []  # the outputs' shapes, read while tracing: one trace, not a second one by eval_shape
    with float64():
        args = (q0, v0, np.float64(0.0), floats, ints)

        def packed(q, v, t, floats, ints):
            outputs = layout.evaluate(model, q, v, t, floats, ints)
            shapes[:] = [tuple(x.shape) for x in outputs]
            flat = jnp.concatenate([jnp.ravel(x) for x in outputs])
            return jnp.concatenate([flat, jnp.all(jnp.isfinite(flat)).astype(flat.dtype)[None]])

        executable = jax.jit(packed).lower(*args).compile()
    slices, start = [], 0
    for shape in shapes:
        size = int(np.prod(shape))
        slices.append((start, start + size, shape))
        start += size
    return executable, slices
