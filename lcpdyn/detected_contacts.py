"""Detected contacts as a contact source of the one step: the model's colliders
(:meth:`lcpdyn.model.Model.add_collider`), found anew at every step by
:class:`~lcpdyn.collision.CollisionWorld` and given rows beside the declared contacts, joints and
rolling constraints of the same :class:`~lcpdyn.stepper.Simulation` step.

Per step (``docs/theory/detected-contacts.md`` derives each part):

* **rows**: the two-body blocks of Peiret 2016 Eqs. (3)-(4) (:mod:`lcpdyn.contact_rows`),
  scattered over the model's velocities: N (c, n), D (2c, n), the tangents (c, 2, 3);
* **normal rows** e_N = g/h for g >= 0 and beta g/h in penetration (the declared contacts' rule
  under ``position_update="symplectic"``; with ``"paper"``, Eq. (7)'s predicted gap g + h N v);
  a contact closing faster than ``restitution_threshold`` that closes within the step impacts,
  and its row becomes u_N+ >= -e u_N- (Newton's law with the pair's restitution e);
* **history**: a contact that persists (same collider pair, witness point within
  ``match_tolerance`` in its first body's frame: :meth:`~lcpdyn.collision.Contacts.match`) keeps
  its previous impulse -- the friction bound mu lam_N of Eq. (12), the bristle state of
  Eqs. (11)-(15), the warm start -- and its tangent t1; a new one starts from none;
* **coefficients** per collider pair (:class:`ContactProperties`): mu, mu_s and e.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .collision import Collider, CollisionWorld, Contacts
from .compliance import by_law, check_law, compliant_rows, elastic_energy, law_record
from .contact_rows import ContactRows, carried_basis, contact_rows
from .rotation import np_rotation_matrices
from .validation import finite_number, nonnegative

__all__ = [
    "ContactProperties",
    "CollisionSettings",
    "CollisionSource",
    "DetectedSet",
    "bounds_moved",
    "contacts_to_arrays",
    "contacts_from_arrays",
]


@dataclass(frozen=True)
class ContactProperties:
    """What a pair of colliders does on contact: kinetic friction ``mu`` >= 0, static
    ``mu_static`` >= mu (default mu), the restitution coefficient ``restitution`` e in [0, 1]
    of the Newton impact law (module docstring), and ``normal_law``: None (rigid, the default) or
    a :class:`~lcpdyn.compliance.SpringDamperLaw` / :class:`~lcpdyn.compliance.PolynomialLaw`
    F(a) + c a_dot of the approach a = -gap (Bauchau 2002 Sec. 4.2), linearized in the step as
    the declared compliant contacts are (:mod:`lcpdyn.compliance`): the normal row gains the
    compliance C_N = 1 / (h (F' h + c)) that makes the step's problem strictly convex in lam_N
    (docs/theory/detected-contacts.md, "Compliant contacts"). A compliant contact's bounce is its
    damper's, so it takes restitution 0."""

    mu: float = 0.5
    mu_static: float | None = None
    restitution: float = 0.0
    normal_law: object = None

    def __post_init__(self):
        mu = nonnegative("friction coefficient mu", self.mu)
        static = mu if self.mu_static is None else nonnegative("static friction coefficient mu_static", self.mu_static)
        if static < mu:
            raise ValueError(f"static friction coefficient mu_static = {static!r} is below the kinetic mu = {mu!r}")
        e = finite_number("restitution", self.restitution)
        if not 0.0 <= e <= 1.0:
            raise ValueError(f"restitution must be in [0, 1], got {self.restitution!r}")
        object.__setattr__(self, "mu", mu)
        object.__setattr__(self, "mu_static", static)
        object.__setattr__(self, "restitution", e)
        if check_law("contact properties", self.normal_law) is not None and e > 0.0:
            raise ValueError(f"restitution = {e!r} with a normal_law: a compliant contact's bounce is its damper's "
                             "(give restitution=0, or a rigid contact)")  # fmt: skip


def properties_of(label, value) -> ContactProperties:
    """``value`` as :class:`ContactProperties` (itself, or a dict of its fields); errors name ``label``."""
    if isinstance(value, ContactProperties):
        return value
    if isinstance(value, dict):
        try:
            return ContactProperties(**value)
        except TypeError as exc:
            raise ValueError(f"{label}: {exc}") from None
    raise TypeError(f"{label} must be ContactProperties or a dict of its fields, got {type(value).__name__}")


@dataclass(frozen=True)
class CollisionSettings:
    """How a model's colliders touch (:meth:`lcpdyn.model.Model.set_collisions`).

    margin : contacts are rows while their signed distance is at most ``margin`` (m, >= 0).
    contact : the default :class:`ContactProperties` of a pair.
    pairs : ``((x, y), ContactProperties)`` overrides, each of x, y a collider, a body or None
        (the world); a pair of colliders wins over a pair of bodies.
    exclude : pairs of bodies never tested against each other; ``(body, None)``: the body never
        against the world's colliders. Bodies joined by a joint (a
        holonomic constraint on exactly two bodies) are excluded as well, as in MuJoCo.
    restitution_threshold : v_e (m/s): impacts slower than it are plastic.
    match_tolerance : how far (m) a witness point may move in its body's frame and still be the
        same contact (default: the margin, at least 1 mm).
    """

    margin: float = 0.0
    contact: ContactProperties = ContactProperties()
    pairs: tuple = ()
    exclude: tuple = ()
    restitution_threshold: float = 0.01
    match_tolerance: float | None = None

    def __post_init__(self):
        object.__setattr__(self, "margin", nonnegative("collision margin", self.margin))
        object.__setattr__(self, "contact", properties_of("contact", self.contact))
        threshold = nonnegative("restitution_threshold", self.restitution_threshold)
        object.__setattr__(self, "restitution_threshold", threshold)
        if self.match_tolerance is not None:
            object.__setattr__(self, "match_tolerance", nonnegative("match_tolerance", self.match_tolerance))

    @property
    def compliant(self) -> bool:
        """Whether any pair's contacts are compliant (a ``normal_law``)."""
        return self.contact.normal_law is not None or any(p.normal_law is not None for _, p in self.pairs)

    @property
    def matching(self) -> float:
        """The match tolerance in use (m): ``match_tolerance``, or the margin, at least 1 mm."""
        return max(self.margin, 1e-3) if self.match_tolerance is None else self.match_tolerance

    def record(self) -> dict:
        """Plain data for a run's parameters (the pairs by their names)."""

        def name(x):
            return None if x is None else x.name

        return {
            "margin": self.margin,
            "contact": _properties_record(self.contact),
            "pairs": [[name(x), name(y), _properties_record(p)] for (x, y), p in self.pairs],
            "exclude": [[getattr(a, "name", None), getattr(b, "name", None)] for a, b in self.exclude],
            "restitution_threshold": self.restitution_threshold,
            "match_tolerance": self.matching,
        }


def _properties_record(properties: ContactProperties) -> dict:
    """A pair's :class:`ContactProperties` as plain data (its normal law by :func:`~lcpdyn.compliance.law_record`)."""
    return {**vars(properties), "normal_law": law_record(properties.normal_law)}


@dataclass(frozen=True, eq=False)
class DetectedSet:
    """The c detected contacts of one step, as rows over the model's n velocities.

    contacts : what detection found (:class:`~lcpdyn.collision.Contacts`); rows its
        :class:`~lcpdyn.contact_rows.ContactRows`.
    H : (3c, n) CSR, per contact its normal, t1 and t2 rows over the model's velocities; ``N``
        (c, n) and ``D`` (2c, n, rows 2i, 2i+1: t1, t2 of contact i) the same rows as dense
        arrays, made on first use (a large step's islands take their rows from H).
    tangent : (c, 2, 3) t1, t2 (world).
    e_N : (c,) the normal rows' right-hand side (module docstring); impact (c,) bool;
        compliance (c,) C_N of the compliant contacts' rows (:class:`ContactProperties`'
        ``normal_law``), 0 for a rigid one.
    mu, mu_static : (c,) the coefficients this step applies (mu_s where a model whose coefficient
        the stepper chooses stuck in the last step) and the pair's mu_s; mu_kinetic (c,) the
        pair's mu_k (what a contact that slides all the same gets, :mod:`lcpdyn.friction_switches`).
    normal_force, friction_force : (c,), (c, 3) the previous step's lam_N and world friction force
        of a persisting contact (0 for a new one).
    impulse_guess : (c, 3) the previous impulse in this step's contact frame (n, t1, t2).
    previous : (c,) the index of each contact in the previous step's set, -1 for a new one.
    """

    contacts: Contacts
    rows: ContactRows
    H: sp.csr_matrix
    tangent: np.ndarray
    e_N: np.ndarray
    impact: np.ndarray
    compliance: np.ndarray
    mu: np.ndarray
    mu_static: np.ndarray
    mu_kinetic: np.ndarray
    normal_force: np.ndarray
    friction_force: np.ndarray
    impulse_guess: np.ndarray
    previous: np.ndarray

    def __len__(self) -> int:
        return len(self.contacts)

    @functools.cached_property
    def N(self) -> np.ndarray:
        return self.H[0::3].toarray()

    @functools.cached_property
    def D(self) -> np.ndarray:
        D = np.empty((2 * len(self), self.H.shape[1]))
        D[0::2], D[1::2] = self.H[1::3].toarray(), self.H[2::3].toarray()
        return D


def contact_matrix(rows: ContactRows, n: int) -> sp.csr_matrix:
    """H (3c, n) CSR of c contacts' rows (:class:`~lcpdyn.contact_rows.ContactRows`: per contact
    and side a (3, 6) block over a body's six velocities, -1 the world) over n velocities."""
    c = rows.body.shape[0]
    data, row_index, col_index = [], [], []
    for side in range(2):
        body = rows.body[:, side]
        on = np.flatnonzero(body >= 0)
        r_idx = np.broadcast_to(3 * on[:, None, None] + np.arange(3)[None, :, None], (on.size, 3, 6))
        c_idx = np.broadcast_to(6 * body[on][:, None, None] + np.arange(6)[None, None, :], (on.size, 3, 6))
        data.append(rows.blocks[on, side].reshape(-1))
        row_index.append(r_idx.reshape(-1))
        col_index.append(c_idx.reshape(-1))
    entries = (np.concatenate(data), (np.concatenate(row_index), np.concatenate(col_index)))
    return sp.csr_matrix(entries, shape=(3 * c, n))


class CollisionSource:
    """A model's colliders as a source of contact rows (module docstring); built by
    :class:`~lcpdyn.stepper.Simulation` from ``model.colliders`` and ``model.collisions``."""

    def __init__(self, model):
        settings = model.collisions
        self.settings = settings
        exclude = list(settings.exclude)
        for constraint in model.holonomic:  # bodies joined by a joint do not collide
            bodies = [b for b in (constraint.bodies or ()) if b is not None]
            if len(bodies) == 2 and bodies[0] is not bodies[1]:
                exclude.append((bodies[0], bodies[1]))
        self.world = CollisionWorld(model.colliders, model.bodies, settings.margin, exclude)
        self.n_bodies = len(model.bodies)
        self._pairs = {}
        for (x, y), value in settings.pairs:
            self._pairs[frozenset((id(x), id(y)))] = value
        self._cache: dict = {}
        self._detected = (None, None)  # the last detection: (positions and orientations as bytes, Contacts)

    def record(self) -> dict:
        """The colliders and the collision settings as plain data (a run's parameters)."""

        def shape(x):
            if dataclasses.is_dataclass(x):
                fields = {f.name: np.asarray(getattr(x, f.name)).tolist() for f in dataclasses.fields(x)}
            else:
                fields = {}
            return {"type": type(x).__name__, **fields}

        colliders = [
            {
                "name": c.name,
                "body": None if c.body is None else c.body.name,
                "shape": shape(c.shape),
                "position": c.position.tolist(),
                "rotation": c.rotation.tolist(),
            }
            for c in self.world.colliders
        ]
        return {"colliders": colliders, **self.settings.record()}

    def properties(self, a: int, b: int) -> ContactProperties:
        """The :class:`ContactProperties` of a contact between colliders ``a`` and ``b``
        (indices into ``model.colliders``)."""
        found = self._cache.get((a, b))
        if found is None:
            ca, cb = self.world.colliders[a], self.world.colliders[b]
            found = self._pairs.get(frozenset((id(ca), id(cb))))
            if found is None:
                found = self._pairs.get(frozenset((id(ca.body), id(cb.body))), self.settings.contact)
            self._cache[(a, b)] = found
        return found

    def _coefficients(self, collider):
        """(mu, mu_s, e) (c,) of contacts between the colliders ``collider`` (c, 2), and the
        compliant ones as [(normal law, its contacts' indices)]: each distinct pair asked once."""
        c = collider.shape[0]
        if not self._pairs:  # every contact has the default properties
            p = self.settings.contact
            found, index = [p], np.zeros(c, np.int64)
        else:
            pairs, index = np.unique(collider, axis=0, return_inverse=True)
            found, index = [self.properties(int(a), int(b)) for a, b in pairs], index.reshape(-1)
        table = np.array([[p.mu, p.mu_static, p.restitution] for p in found]).reshape(-1, 3)
        mu, mu_static, e = (table[index, k] for k in range(3))
        laws = by_law(p.normal_law for p in found)  # the laws and their places in ``found``
        return mu, mu_static, e, [(law, np.flatnonzero(np.isin(index, members))) for law, members in laws]

    def _detect(self, Q):
        """Detection at the bodies' positions and quaternions Q (nb, 7); the last one is kept, so
        that the energy budget's detection at a step's end (:meth:`elastic_energy`) is the next
        step's own."""
        key = Q.tobytes()
        if self._detected[0] != key:
            self._detected = (key, self.world.detect(Q[:, :3].copy(), np_rotation_matrices(Q[:, 3:])))
        return self._detected[1]

    def elastic_energy(self, q) -> float:
        """The elastic energy (J) stored in the compliant contacts at positions q (7 nb,): the sum of
        U(a) = sum_i k_i a^(i+1)/(i+1) over the detected contacts with a ``normal_law``, a = -gap."""
        if not self.settings.compliant:
            return 0.0
        contacts = self._detect(np.asarray(q, np.float64).reshape(-1, 7))
        laws = self._coefficients(contacts.collider)[3]
        return float(sum(np.sum(elastic_energy(law, -contacts.gap[members], np)) for law, members in laws))

    def gather(self, q, v, h, previous, *, beta, paper, choose_static, static_threshold, midpoint=False):
        """The step's :class:`DetectedSet` at positions q (7 nb,) and velocities v (6 nb,), with
        ``previous`` the step's start (a :class:`~lcpdyn.step_state.StepState`: the previous
        step's contacts, their world impulses (k, 3) and tangents (k, 2, 3), or None); ``beta`` the
        stabilization, ``paper`` Eq. (7)'s predicted gap, ``choose_static`` whether the stepper
        chooses mu_s where a contact stuck (slip <= ``static_threshold``, m/s). ``h`` is the whole
        step; with ``midpoint`` (Moreau's midpoint scheme, q the step's midpoint q_m) each normal row
        N v+ + e_N >= 0 is written in v_m = (v + v+)/2 and halved, N v_m + (e_N - N v)/2 >= 0 --
        Phi(q_m') = Phi + h N v+ linearized with the N at q_m, as :func:`lcpdyn.step_rows.midpoint_rows`
        with a linear prediction -- and the impulse guesses are over h/2."""
        Q = np.asarray(q, np.float64).reshape(-1, 7)
        positions = Q[:, :3].copy()
        rotations = np_rotation_matrices(Q[:, 3:])
        contacts = self._detect(Q)
        c, n = len(contacts), 6 * self.n_bodies
        index = np.full(c, -1, np.int64)
        impulse = np.zeros((c, 3))
        tangent = None
        if previous.contacts is not None and len(previous.contacts) and c:
            index = contacts.match(previous.contacts, self.settings.matching)
            kept = index >= 0
            impulse[kept] = previous.contact_impulse[index[kept]]
            if kept.any():  # a persisting contact keeps its t1, projected: its friction basis does not jump
                t1 = np.zeros((c, 3))
                t1[kept] = previous.contact_tangent[index[kept], 0]
                tangent = carried_basis(contacts.normal, t1)
        rows = contact_rows(contacts, positions, rotations, tangent)
        H = contact_matrix(rows, n)
        before = (H @ np.asarray(v, np.float64)).reshape(c, 3)
        mu, mu_static, e, laws = self._coefficients(contacts.collider)
        gap = contacts.gap
        predicted = gap + h * before[:, 0] if paper else gap
        e_N = np.where(predicted >= 0.0, predicted / h, beta * predicted / h)
        compliance = np.zeros(c)
        for law, members in laws:  # compliant rows at the predicted approach -Phi~
            compliance[members], e_N[members] = compliant_rows(law, -predicted[members], h)
        impact = (e > 0.0) & (before[:, 0] < -self.settings.restitution_threshold) & (gap + h * before[:, 0] < 0.0)
        e_N = np.where(impact, np.minimum(e_N, e * before[:, 0]), e_N)
        guess = np.einsum("kj,krj->kr", impulse, rows.frame)
        if midpoint:
            e_N = 0.5 * (e_N - before[:, 0])
            guess = 0.5 * guess
        kinetic_mu = mu
        if choose_static:  # box, polygonal, coulomb: mu_s where the contact stuck
            stuck = (index >= 0) & (np.hypot(before[:, 1], before[:, 2]) <= static_threshold)
            mu = np.where(stuck, mu_static, mu)
        frame = rows.frame
        along = np.einsum("kj,kj->k", impulse, frame[:, 0])
        return DetectedSet(
            contacts=contacts,
            rows=rows,
            H=H,
            tangent=frame[:, 1:].copy(),
            e_N=e_N,
            impact=impact,
            compliance=compliance,
            mu=mu,
            mu_static=mu_static,
            mu_kinetic=kinetic_mu,
            normal_force=np.maximum(along, 0.0) / h,
            friction_force=(impulse - along[:, None] * frame[:, 0]) / h,
            impulse_guess=guess,
            previous=index,
        )


STATE_FIELDS = ("collider", "body", "point_a", "point_b", "normal", "gap", "local_a", "feature")
"""The arrays of a :class:`~lcpdyn.collision.Contacts` a run's saved state holds (as ``contacts_<name>``)."""


def contacts_to_arrays(contacts, impulse, tangent) -> dict:
    """A step's detected contacts, their world impulses and tangents as named arrays (None where
    there are none): what :meth:`lcpdyn.stepper.Simulation.snapshot` saves."""
    out = {f"contacts_{name}": None if contacts is None else np.array(getattr(contacts, name)) for name in STATE_FIELDS}
    out["contacts_candidates"] = None if contacts is None else np.int64(contacts.candidates)
    out["contact_impulse"] = None if impulse is None else np.array(impulse)
    out["contact_tangent"] = None if tangent is None else np.array(tangent)
    return out


def contacts_from_arrays(saved: dict):
    """(contacts, impulse, tangent) from :func:`contacts_to_arrays`' arrays."""
    if saved.get("contacts_gap") is None:
        return None, None, None
    fields = {name: np.array(saved[f"contacts_{name}"]) for name in STATE_FIELDS}
    for name in ("collider", "body", "feature"):
        fields[name] = fields[name].astype(np.int64)
    contacts = Contacts(**fields, candidates=int(saved["contacts_candidates"]))
    return contacts, np.array(saved["contact_impulse"], np.float64), np.array(saved["contact_tangent"], np.float64)


def pair_entries(pairs, known) -> tuple:
    """``pairs`` ``{(x, y): properties}`` as ``((x, y), ContactProperties)`` entries, each of x, y
    None (the world) or an object whose id is in ``known`` (the colliders and bodies)."""
    if not isinstance(pairs, dict):
        raise TypeError(f"pairs must be a dict {{(x, y): ContactProperties}}, got {type(pairs).__name__}")
    entries = []
    for key, value in pairs.items():
        try:
            x, y = key
        except (TypeError, ValueError):
            raise ValueError(f"pairs keys must be pairs (x, y), got {key!r}") from None
        for item in (x, y):
            if item is not None and id(item) not in known:
                raise ValueError(f"pairs key {key!r}: {item!r} is not a collider of the world, a body or None")
        entries.append(((x, y), properties_of(f"pairs[{key!r}]", value)))
    return tuple(entries)


def bounds_moved(lagged, latest, change, friction=None, lower=None, upper=None, patch=None) -> np.ndarray:
    """The contacts (boolean, (c,)) whose friction bounds mu lam_N, taken from ``lagged`` normal
    forces, are off the ones the new normal forces ``latest`` give by more than the share
    ``change`` of the larger where that matters (``docs/theory/detected-contacts.md``, "Friction
    bounds"). With the friction unknowns ``friction`` (c, k) and their bounds ``lower``, ``upper``
    (c, k) of this pass, it matters only at a contact whose friction is at a bound (sliding, or a
    new contact whose bound was 0) or beyond the bound scaled to the new normal force: elsewhere
    the answer solves the problem with the new bounds as it is. Without ``friction`` every
    contact that moved counts.

    ``patch`` ((c, 2) body pairs): where one contact of a pair of bodies moved, every contact of
    that pair whose normal force changed counts. Redundant contacts (a box on four corners) share
    a load that may move between them as a whole -- 466 N to 281 N at one corner, 24 N to 209 N
    at the next -- and a corner that kept its lagged bound would keep friction of a load it no
    longer carries: the patch's friction above mu times its normal force."""
    scale = np.maximum(lagged, latest)
    moved = np.abs(latest - lagged) > change * scale
    if patch is not None and moved.any():
        _, ids = np.unique(np.asarray(patch).reshape(-1, 2), axis=0, return_inverse=True)
        ids = ids.reshape(-1)
        hit = np.zeros(ids.max() + 1, bool)
        hit[ids[moved]] = True
        moved = hit[ids] & (latest != lagged)
    if friction is None or not moved.any():
        return moved
    has_lo, has_hi = np.isfinite(lower), np.isfinite(upper)  # an infinite bound (a free row) is never reached
    lo, hi = np.where(has_lo, lower, 0.0), np.where(has_hi, upper, 0.0)
    width = 1e-9 * np.maximum(np.abs(lo), np.abs(hi))
    at_bound = np.any((has_hi & (friction >= hi - width)) | (has_lo & (friction <= lo + width)), axis=1)
    ratio = np.divide(latest, lagged, out=np.zeros_like(latest), where=lagged > 0)[:, None]
    beyond = np.any((has_hi & (friction > hi * ratio + width)) | (has_lo & (friction < lo * ratio - width)), axis=1)
    return moved & (at_bound | beyond)


def check_collider(model, collider) -> Collider:
    """``collider`` if it can join ``model`` (a :class:`~lcpdyn.collision.Collider` on one of its
    bodies or the world), else a clear error."""
    if not isinstance(collider, Collider):
        raise TypeError(f"add_collider expects a Collider, got {type(collider).__name__}")
    if collider.body is not None and all(collider.body is not b for b in model.bodies):
        raise ValueError(f"collider {collider.name}: body {collider.body.name!r} has not been added to the model")
    if any(collider is c for c in model.colliders):
        raise ValueError(f"collider {collider.name} is already in the model")
    return collider
