"""The compiled kinematics of a model (Peiret 2016 Eqs. 1-4): its output type :class:`Kinematics`,
the static structure ``_Layout`` (contact groups, packed numbers, the bodies of every bilateral
row), the bilateral rows' Jacobians from ``jax.jacfwd``, and the one trace and compilation per
structure that :meth:`lcpdyn.model.Model.compile` shares between models."""

from __future__ import annotations

import copy
from collections import OrderedDict
from dataclasses import dataclass
from functools import cached_property

import jax
import jax.numpy as jnp
import numpy as np

from .bounded_rows import compliant_stops
from .compilation import jit
from .compliance import elastic_energy
from .precision import float64
from .rotation import quaternion_rate_matrix, rotation_matrix
from .state_view import StateView

__all__ = ["Kinematics", "HolonomicError", "COMPILATIONS"]


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


_CACHE_SIZE = 16
_COMPILED: OrderedDict = OrderedDict()  # structure key -> (executable, output slices)

COMPILATIONS = [0]
"""How many times the kinematics has been traced and compiled in this process (``COMPILATIONS[0]``):
models of one structure share a compilation (:meth:`Model.compile`)."""


class _Layout:
    """The static structure of a model's kinematics and where its numbers sit in the packed
    inputs: ``floats`` = (gravity (3), masses (nb), inertias (nb, 3, 3), then per contact group
    and per geometry number the stacked values, then per compliant contact its normal law's
    coefficients k_1..k_K and damping c: ``laws``) and ``ints`` = the body of every contact, in
    group order. Groups are the contacts of one ``geometry_key`` in order of first appearance;
    ``order`` takes the concatenated group outputs back to the model's contact order."""

    def __init__(self, model):
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
        self.laws = []  # (contact, start in floats, K) of each compliant contact's law (lcpdyn.compliance)
        for i, c in enumerate(model.contacts):
            if c.normal_law is not None:
                order = len(c.normal_law.coefficients)
                self.laws.append((i, offset, order))
                offset += order + 1
        self.laws = tuple(self.laws)
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
            tuple((i, order) for i, _, order in self.laws),
        )

    def pack(self, model) -> tuple[np.ndarray, np.ndarray]:
        floats = np.empty(self.n_floats)
        mass, inertia = model.body_masses()
        floats[:3] = model.gravity
        floats[3 : 3 + self.nb] = mass
        floats[3 + self.nb : 3 + 10 * self.nb] = inertia.reshape(-1)
        for _, _, _, members, fields in self.groups:
            numbers = [model.contacts[i].geometry() for i in members]
            for name, _, start, end in fields:
                floats[start:end] = np.concatenate([np.ravel(np.asarray(p[name], float)) for p in numbers])
        for i, start, order in self.laws:
            law = model.contacts[i].normal_law
            floats[start : start + order] = law.coefficients
            floats[start + order] = law.damping
        return floats, self.grouped_body.copy()

    def law(self, floats, i):
        """(coefficients (K,), damping) of compliant contact ``i``'s normal law in ``floats``."""
        for contact, start, order in self.laws:
            if contact == i:
                return floats[start : start + order], floats[start + order]
        raise KeyError(f"contact {i} is rigid")

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
        holonomic residual ``holonomic`` (m_h,); a compliant stop's k min(g, 0)^2 / 2)."""
        gravity, mass, _ = self.bodies(floats)
        positions = q.reshape(self.nb, 7)[:, :3]
        energy = -jnp.sum(mass * (positions @ gravity))
        stiffness, _ = model.holonomic_compliance()
        soft = np.flatnonzero(np.isfinite(stiffness))
        if soft.size:
            stop = np.isin(soft, compliant_stops(model))
            g = jnp.where(stop, jnp.minimum(holonomic[soft], 0.0), holonomic[soft])  # a soft stop stores only past it
            energy = energy + 0.5 * jnp.sum(jnp.asarray(stiffness[soft]) * g**2)
        for i, _, _ in self.laws:  # the laws' numbers from floats: traced, differentiable
            coefficients, _ = self.law(floats, i)
            energy = energy + elastic_energy(coefficients, -gap[i])
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
    """g, A = dg/dq Gamma and dg/dt of one group of holonomic constraints (``_constraint_groups``)
    written into their rows: a single constraint as ``_holonomic_rows``; a stacked group
    ``vmap``ped over its members' numbers and their bodies' coordinates, each member's Jacobian a
    block over its bodies' 6 velocities each."""
    members, rows = group
    first = members[0]
    if _alone(group):
        blocks, rate = _holonomic_rows(model, first, q, t, nb)
        value = first.residual(StateView(model.index(), q), t)
        return g.at[rows[0]].set(value), A.at[rows[0], : blocks.shape[1]].set(blocks), g_t.at[rows[0]].set(rate)
    residual, numbers, q_own, k = _stacked(model, group, q)
    value = jax.vmap(residual, in_axes=(0, 0, None))(numbers, q_own, t)
    J = jax.vmap(jax.jacfwd(residual, argnums=1), in_axes=(0, 0, None))(numbers, q_own, t)  # (G, size, 7 k)
    rate = jax.vmap(jax.jacfwd(residual, argnums=2), in_axes=(0, 0, None))(numbers, q_own, t)
    blocks = jax.vmap(lambda J_, q_: _per_body_gamma(J_, q_, k))(J, q_own)  # (G, size, 6 k)
    return (
        g.at[rows].set(value),
        A.at[rows, :k].set(blocks.reshape(len(members), first.size, k, 6)),
        g_t.at[rows].set(rate),
    )


def _alone(group) -> bool:
    """Whether a group of ``_constraint_groups`` is one constraint evaluated alone."""
    members, _ = group
    first = members[0]
    return len(members) == 1 and not (getattr(type(first), "stack_fields", None) and first.bodies is not None)


def _stacked(model, group, q):
    """(residual(numbers, q_own, t), the members' stacked numbers, their bodies' coordinates
    (G, 7 k), k) of a stacked group: ``residual`` is the first member's with another member's
    numbers, over that member's bodies."""
    members, _ = group
    first = members[0]
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

    return residual, numbers, q[coordinates], k


def _holonomic_values(model, group, q, t, g):
    """g(q, t) of one group of ``_constraint_groups`` written into its rows (no Jacobians)."""
    members, rows = group
    if _alone(group):
        return g.at[rows[0]].set(members[0].residual(StateView(model.index(), q), t))
    residual, numbers, q_own, _ = _stacked(model, group, q)
    return g.at[rows].set(jax.vmap(residual, in_axes=(0, 0, None))(numbers, q_own, t))


class HolonomicError:
    """``(q, t) -> (g (m_h,), finite)``: the holonomic constraints' values g(q, t) alone, compiled
    at the first call (float64). The step's compliant rows ask for g at a
    predicted configuration, where the whole kinematics (every Jacobian) would be wasted work."""

    def __init__(self, model):
        self._model, self._executable = model, None

    def _compile(self):
        model = self._model
        groups = _constraint_groups(model)
        m_h = sum(c.size for c in model.holonomic)

        def values(q, t):
            g = jnp.zeros(m_h)
            for group in groups:
                g = _holonomic_values(model, group, q, t, g)
            return jnp.concatenate([g, jnp.all(jnp.isfinite(g)).astype(g.dtype)[None]])

        COMPILATIONS[0] += 1
        with float64():
            self._executable = jit(values).lower(model.initial_state()[0], np.float64(0.0)).compile()

    def __call__(self, q, t):
        if self._executable is None:
            self._compile()
        with float64():
            out = np.asarray(self._executable(np.asarray(q, np.float64), np.float64(t)))
        return out[:-1], bool(out[-1] == 1.0)


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


def _compile(model, layout: _Layout, floats, ints):
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

        executable = jit(packed).lower(*args).compile()
    slices, start = [], 0
    for shape in shapes:
        size = int(np.prod(shape))
        slices.append((start, start + size, shape))
        start += size
    return executable, slices
