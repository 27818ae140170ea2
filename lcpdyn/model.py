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

import jax
import jax.numpy as jnp
import numpy as np

from .body import RigidBody
from .compiled_kinematics import _CACHE_SIZE, _COMPILED, COMPILATIONS, HolonomicError, Kinematics, _compile, _Layout
from .compliance import elastic_energy, law_record
from .constraints import Holonomic, Nonholonomic
from .contact import Contact
from .detected_contacts import CollisionSettings, check_collider, pair_entries
from .forces import BodyForce, SpringDamper, TorsionalSpringDamper
from .kernels import kinetic_energy
from .precision import float64
from .rotation import quaternion_rate_matrix
from .state_view import StateView
from .validation import finite_vector

__all__ = ["Model", "Kinematics", "COMPILATIONS"]


FORCE_PROTOCOL = ("wrenches", "nonconservative_wrenches", "potential")
"""What :meth:`Model.add_force` asks of an applied load."""


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
        self.colliders: list = []  # lcpdyn.collision.Collider: shapes whose contacts are detected each step
        self.collisions = CollisionSettings()
        self._compiled = None
        self.revision = 0  # bumped by every add_*: a simulation built before refuses to step (lcpdyn.model_check)

    # --- building -----------------------------------------------------------------------
    def add_body(self, body: RigidBody) -> RigidBody:
        """Adds ``body`` (a RigidBody whose name no other body has) and returns it."""
        if not isinstance(body, RigidBody):
            raise TypeError(f"add_body expects a RigidBody, got {type(body).__name__}")
        if any(b.name == body.name for b in self.bodies):
            raise ValueError(f"a body named {body.name!r} already exists")
        self.bodies.append(body)
        self._compiled = None
        self.revision += 1
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
        self.revision += 1
        return contact

    def add_force(self, force):
        """An applied load: a BodyForce, SpringDamper, TorsionalSpringDamper, JointMotor or any
        object of their protocol -- ``wrenches(t, state)`` and ``nonconservative_wrenches(t, state)``
        (lists of (body, world force, world torque), JAX-traceable) and ``potential(state)`` -- whose
        bodies are its ``body``, ``body_a`` and ``body_b`` attributes."""
        if not isinstance(force, (BodyForce, SpringDamper, TorsionalSpringDamper)):
            missing = [name for name in FORCE_PROTOCOL if not callable(getattr(force, name, None))]
            if missing:
                raise TypeError(
                    "add_force expects a BodyForce, SpringDamper, TorsionalSpringDamper or an object with "
                    f"{', '.join(FORCE_PROTOCOL)}; {type(force).__name__} lacks {', '.join(missing)}"
                )
        for name in ("body", "body_a", "body_b"):
            self._check_member(getattr(force, name, None), "force")
        self.forces.append(force)
        self._compiled = None
        self.revision += 1
        return force

    def add_constraint(self, constraint):
        """Adds a bilateral constraint (a :class:`~lcpdyn.constraints.Holonomic` row source: joints, limits, servos;
        or a :class:`~lcpdyn.constraints.Nonholonomic` one) on bodies of this model."""
        if not isinstance(constraint, (Holonomic, Nonholonomic)):
            raise TypeError(f"add_constraint expects Holonomic or Nonholonomic, got {type(constraint).__name__}")
        for body in constraint.bodies or ():
            self._check_member(body, f"constraint {constraint.name!r}")
        (self.holonomic if isinstance(constraint, Holonomic) else self.nonholonomic).append(constraint)
        self._compiled = None
        self.revision += 1
        return constraint

    def add_collider(self, collider):
        """Add a :class:`~lcpdyn.collision.Collider` (a shape on one of the model's bodies, or
        fixed in the world); returns it. Its contacts with every other collider are found at each
        step and join the step's problem beside the declared contacts, joints and rolling
        constraints (:mod:`lcpdyn.detected_contacts`); :meth:`set_collisions` says how they touch."""
        self.colliders.append(check_collider(self, collider))
        self.revision += 1
        return collider

    def set_collisions(self, *, margin=None, contact=None, pairs=None, exclude=None, restitution_threshold=None,
                       match_tolerance=None):  # fmt: skip
        """How the colliders touch (:class:`~lcpdyn.detected_contacts.CollisionSettings`): the
        detection ``margin`` (m), the default ``contact`` properties (a
        :class:`~lcpdyn.detected_contacts.ContactProperties` or a dict of its fields), ``pairs``
        ``{(x, y): properties}`` with x, y a collider, a body or None (the world), body pairs to
        ``exclude`` (``(body, None)``: the body never against the world's colliders), the
        ``restitution_threshold`` (m/s) and the ``match_tolerance`` (m). Fields
        not given keep their values."""
        old = self.collisions
        table = old.pairs
        if pairs is not None:
            table = pair_entries(pairs, {id(b) for b in self.bodies} | {id(c) for c in self.colliders})
        if exclude is not None:
            exclude = tuple(tuple(pair) for pair in exclude)
            for pair in exclude:
                if len(pair) != 2:
                    raise ValueError(f"exclude entries must be pairs of bodies, got {pair!r}")
                for body in pair:
                    self._check_member(body, "excluded pair")
        self.collisions = CollisionSettings(
            margin=old.margin if margin is None else margin,
            contact=old.contact if contact is None else contact,
            pairs=table,
            exclude=old.exclude if exclude is None else exclude,
            restitution_threshold=old.restitution_threshold if restitution_threshold is None else restitution_threshold,
            match_tolerance=old.match_tolerance if match_tolerance is None else match_tolerance,
        )
        return self.collisions

    # --- layout -------------------------------------------------------------------------
    @property
    def n_velocities(self) -> int:
        """n = 6 nb: the generalized velocities (each body's centre-of-mass velocity and body-frame angular
        velocity)."""
        return 6 * len(self.bodies)

    @property
    def n_coordinates(self) -> int:
        """7 nb: the coordinates (each body's centre of mass and unit quaternion)."""
        return 7 * len(self.bodies)

    @property
    def n_bilateral(self) -> int:
        """m: the bilateral rows (holonomic, non-holonomic, and the contacts' ideal-rolling rows)."""
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
        """{id(body): its index}: where each body's numbers sit in q and v (for a
        :class:`~lcpdyn.state_view.StateView`)."""
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
        """The contacts' gaps Phi(q) (r,) (m; negative in penetration)."""
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
        """g(q, t) of every holonomic row, concatenated in the model's order (zero where the constraints hold)."""
        view = StateView(self.index(), q)
        return jnp.concatenate([c.residual(view, t) for c in self.holonomic]) if self.holonomic else jnp.zeros(0)

    def nonholonomic_velocity(self, q, v):
        """a(q) v of every non-holonomic row, concatenated in the model's order."""
        view = StateView(self.index(), q, v)
        return (
            jnp.concatenate([c.velocity_residual(view) for c in self.nonholonomic])
            if self.nonholonomic
            else jnp.zeros(0)
        )

    def nonholonomic_target(self, q, t):
        """The non-holonomic rows' right-hand sides u(q, t), concatenated in the model's order."""
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
        curve (Bauchau 2002 Sec. 3) -- ``tests/test_kinematics.py`` checks it."""
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
        evaluate.holonomic_error = HolonomicError(self)  # g(q, t) alone, compiled at its first call
        self._compiled = evaluate
        return evaluate

    def record(self) -> dict:
        """The model as plain data, as every output file records it: its bodies (name, mass,
        inertia, initial pose and velocities), declared contacts (type, body, mu, mu_s, the normal
        law's coefficients, whether a friction profile is set, the plane, the radius) and gravity."""
        return {
            "bodies": [
                {
                    "name": b.name,
                    "mass": b.mass,
                    "inertia": b.inertia_matrix.tolist(),
                    "position": b.position.tolist(),
                    "orientation": b.orientation.tolist(),
                    "velocity": b.velocity.tolist(),
                    "angular_velocity": b.angular_velocity.tolist(),
                }
                for b in self.bodies
            ],
            "contacts": [
                {
                    "type": type(c).__name__,
                    "body": c.body.name,
                    "mu": c.mu,
                    "mu_static": c.mu_static,
                    "normal_law": law_record(c.normal_law),
                    "friction_profile": c.friction_profile is not None,
                    "plane_normal": c.plane.normal.tolist(),
                    "plane_point": c.plane.point.tolist(),
                    **({"radius": c.radius} if hasattr(c, "radius") else {}),
                }
                for c in self.contacts
            ],
            "gravity": self.gravity.tolist(),
        }

    def _shareable(self) -> bool:
        """Whether everything the kinematics traces is in the packed numbers (no user functions;
        a compliant contact's law is among the numbers)."""
        return not (self.forces or self.holonomic or self.nonholonomic)

    def describe_force(self, i: int) -> str:
        """A readable name of ``self.forces[i]`` for error messages."""
        force = self.forces[i]
        bodies = [getattr(force, k, None) for k in ("body", "body_a", "body_b")]
        names = " and ".join(repr(b.name) for b in bodies if b is not None) or "the world"
        function = getattr(force, "function", None)
        extra = f" (function {getattr(function, '__name__', repr(function))!r})" if function is not None else ""
        return f"force {i} ({type(force).__name__} on body {names}){extra}"

    def describe_contact(self, i: int) -> str:
        """How messages name contact ``i``: "contact i (its class on body 'name')"."""
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
        """(m |v_c|^2 + omega . I omega) / 2 summed over the bodies (J) at velocities ``v``."""
        mass, inertia = self.body_masses()
        return kinetic_energy(mass, inertia, np.asarray(v, float))


# --- the compiled kinematics ---------------------------------------------------------------
