"""Body–body contact detection: shapes attached to bodies, a broad phase, and coal's narrow phase.

A :class:`Collider` attaches one convex :mod:`shape <lcpdyn.shapes>` (``Sphere``, ``Capsule``,
``Cylinder``, ``Box``, ``ConvexMesh``) to a rigid body at a fixed offset, or fixes a shape or a
``HalfSpace`` in the world (``body=None``). A :class:`CollisionWorld` finds, for given body
poses, every pair of colliders whose signed distance is at most ``margin``:

1. **Broad phase** (here, NumPy): each collider's world axis-aligned bounding box from coal,
   grown by ``margin / 2`` on every side, sorted along x and swept (sort and sweep): the pairs
   whose boxes overlap on all three axes are the candidates, O(N log N + K) for N colliders and
   K overlaps instead of N² pairs. Half-spaces have no finite box and are paired with every
   collider on a body. Pairs on one body, pairs of two world colliders and the user's excluded
   body pairs (bodies joined by a joint) are dropped here.
2. **Narrow phase** (coal, the maintained successor of hpp-fcl used by Pinocchio): GJK/EPA with
   ``security_margin = margin`` gives the signed distance ``g`` (m, negative in penetration), the
   unit normal ``n`` from the first collider to the second and the witness points; coal's contact
   patch then gives the support polygon of the two shapes along ``n`` (four corners for a box on
   a box, a sampled rim for a cylinder on its base), each point with its witness on both shapes.

Each contact has witness points ``p_a`` (on the first collider) and ``p_b`` (on the second),
both in world coordinates, with gap ``g = n · (p_b − p_a)``; the velocity-level contact rows use
the material velocities of both witness points (Peiret 2016 Eq. 3–4 with a second body).
Contacts are keyed by (collider pair, patch point), so a persisting contact can be matched to its
predecessor for a warm start (:meth:`Contacts.match`, by the witness point in the body frame).

Units: metres; poses are centre-of-mass positions (nb, 3) and rotation matrices (nb, 3, 3),
as :class:`~lcpdyn.body.RigidBody` (q: position and quaternion).

Differences from other engines: MuJoCo's margin contacts and Bullet's persistent manifolds are
built per shape pair by hand-written routines; here the manifold is coal's contact patch, whose
points share one support plane, so a face resting slightly tilted on another is represented by
the points within coal's patch tolerance of the deepest one (two of four corners at a tilt of
2 mrad on a unit box): the missing corners enter as they come within tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .body import RigidBody
from .shape_pairs import _register_builtins, half_extents, routine_for
from .shapes import Box, Capsule, ConvexMesh, Cylinder, HalfSpace, Sphere, _coal
from .validation import finite_vector, nonnegative

__all__ = [
    "Sphere",
    "Capsule",
    "Cylinder",
    "Box",
    "ConvexMesh",
    "HalfSpace",
    "Collider",
    "CollisionWorld",
    "Contacts",
]


# --- colliders --------------------------------------------------------------------------------


@dataclass(eq=False)
class Collider:
    """One shape on one body.

    body : the :class:`~lcpdyn.body.RigidBody` carrying the shape, or ``None`` for a shape
        fixed in the world (the ground, a bin's walls, a curb).
    shape : any object with ``geometry()`` returning a coal collision geometry (the shapes of
        this module, or a user's own), and optionally ``bounded = False`` for an unbounded one.
    position : the shape's origin in the body frame, relative to the centre of mass (m); in the
        world for a world collider.
    rotation : the shape's axes in the body frame (3 x 3 rotation), default identity.
    name : for messages (default: the body's name and the shape's class).
    """

    body: RigidBody | None
    shape: object
    position: object = (0.0, 0.0, 0.0)
    rotation: object = None
    name: str | None = None

    def __post_init__(self):
        if self.body is not None and not isinstance(self.body, RigidBody):
            raise TypeError(f"collider body must be a RigidBody or None, got {type(self.body).__name__}")
        if not callable(getattr(self.shape, "geometry", None)):
            raise TypeError(f"collider shape must have a geometry() method, got {type(self.shape).__name__}")
        owner = "world" if self.body is None else repr(self.body.name)
        label = self.name if self.name is not None else f"{type(self.shape).__name__} on {owner}"
        self.name = label
        if self.body is not None and not getattr(self.shape, "bounded", True):
            raise ValueError(f"collider {label}: an unbounded shape (a half-space) can only be fixed in the world")
        self.position = finite_vector(f"collider {label}: position", self.position, 3)
        rotation = np.eye(3) if self.rotation is None else self.rotation
        R = finite_vector(f"collider {label}: rotation", rotation, shape=(3, 3))
        if not (np.abs(R @ R.T - np.eye(3)).max() <= 1e-9 and np.linalg.det(R) > 0):
            raise ValueError(f"collider {label}: rotation must be a proper rotation matrix (R R^T = I, det R = 1)")
        self.rotation = R


# --- what detection returns ---------------------------------------------------------------------


@dataclass(frozen=True)
class Contacts:
    """The contacts found at one set of poses (k of them), each between the colliders
    ``collider[i] = (a, b)`` of the world's list: a before b in the list, except that a world
    collider (``body=None``) is always second, so the first is always on a body.

    Attributes
    ----------
    collider : (k, 2) int, the two colliders.
    body : (k, 2) int, their bodies' indices in the world's body list, -1 for the world.
    point_a, point_b : (k, 3) witness points on the first and second collider (world, m).
    normal : (k, 3) unit normal from the first collider to the second (world).
    gap : (k,) signed distance ``n · (p_b − p_a)`` (m), negative in penetration.
    local_a : (k, 3) ``p_a`` in the first collider's body frame, relative to its centre of
        mass (the first collider is always on a body): what :meth:`match` compares.
    feature : (k,) int, the point's index in its pair's contact patch.
    candidates : pairs the broad phase passed to the narrow phase.
    """

    collider: np.ndarray
    body: np.ndarray
    point_a: np.ndarray
    point_b: np.ndarray
    normal: np.ndarray
    gap: np.ndarray
    local_a: np.ndarray
    feature: np.ndarray
    candidates: int

    def __len__(self) -> int:
        return int(self.gap.shape[0])

    def match(self, previous: Contacts, tolerance: float) -> np.ndarray:
        """For each contact, the index of the contact of ``previous`` with the same collider
        pair whose witness point on the first collider, in that collider's body frame
        (``local_a``), is nearest and within ``tolerance`` (m); -1 where none is: a persisting
        contact and its predecessor, for warm starts (the body-fixed point moves with the body,
        so a box resting on a box keeps its four corners from step to step)."""
        tolerance = nonnegative("match tolerance", tolerance)
        out = np.full(len(self), -1, np.int64)
        if len(previous) == 0 or len(self) == 0:
            return out
        # the previous contacts of each contact's pair (sorted by pair, stably: in their own order)
        width = int(max(self.collider.max(), previous.collider.max())) + 1
        before = previous.collider[:, 0] * width + previous.collider[:, 1]
        order = np.argsort(before, kind="stable")
        now = self.collider[:, 0] * width + self.collider[:, 1]
        start = np.searchsorted(before[order], now, "left")
        counts = np.searchsorted(before[order], now, "right") - start
        total = int(counts.sum())
        if total == 0:
            return out
        ends = np.cumsum(counts)
        owner = np.repeat(np.arange(len(self)), counts)  # the contact each candidate is for
        candidate = order[np.arange(total) - np.repeat(ends - counts, counts) + np.repeat(start, counts)]
        distance = np.linalg.norm(previous.local_a[candidate] - self.local_a[owner], axis=1)
        # per contact the nearest candidate, the first of equals (its smallest previous index)
        has = np.flatnonzero(counts)
        nearest = np.minimum.reduceat(distance, (ends - counts)[has])
        at = np.flatnonzero(distance == np.repeat(nearest, counts[has]))
        _, first = np.unique(owner[at], return_index=True)
        chosen = at[first]
        kept = distance[chosen] <= tolerance
        out[owner[chosen[kept]]] = candidate[chosen[kept]]
        return out


def _empty_contacts(candidates: int) -> Contacts:
    return Contacts(
        np.zeros((0, 2), np.int64),
        np.zeros((0, 2), np.int64),
        np.zeros((0, 3)),
        np.zeros((0, 3)),
        np.zeros((0, 3)),
        np.zeros(0),
        np.zeros((0, 3)),
        np.zeros(0, np.int64),
        candidates,
    )


def sweep_and_prune(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """The pairs (i, j), i < j, of boxes ``[lower_i, upper_i]`` ((m, 3) each) that overlap on
    all three axes (touching counts), by sorting the lower x bounds and, for each box, taking the
    boxes whose lower x bound lies within its x interval. Returns (K, 2) int, each pair in
    increasing index order, sorted."""
    m = lower.shape[0]
    if m < 2:
        return np.zeros((0, 2), np.int64)
    order = np.argsort(lower[:, 0], kind="stable")
    lo = lower[order]
    hi = upper[order]
    ends = np.searchsorted(lo[:, 0], hi[:, 0], side="right")
    counts = np.maximum(ends - np.arange(1, m + 1), 0)
    total = int(counts.sum())
    if total == 0:
        return np.zeros((0, 2), np.int64)
    first = np.repeat(np.arange(m), counts)
    offsets = np.repeat(np.cumsum(counts) - counts, counts)
    second = first + 1 + (np.arange(total) - offsets)
    overlap = (lo[second, 1:] <= hi[first, 1:]).all(axis=1) & (lo[first, 1:] <= hi[second, 1:]).all(axis=1)
    pairs = np.stack([order[first[overlap]], order[second[overlap]]], axis=1)
    pairs.sort(axis=1)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]


class CollisionWorld:
    """The colliders of a scene and the detection of their contacts.

    Parameters
    ----------
    colliders : the :class:`Collider` list (order fixes the indices in :class:`Contacts`).
    bodies : the bodies whose poses :meth:`detect` receives, in that order (a model's
        ``bodies``); every collider's body must be among them.
    margin : contacts are reported while the signed distance is at most ``margin`` (m, >= 0):
        the nearly active pairs whose constraint rows let the time step stop an approach before
        it penetrates (Peiret 2016 Eq. 7 uses the predicted gap ``g + h N v``).
    exclude : pairs of bodies ``(a, b)`` never tested against each other (bodies joined by a
        joint); ``(a, None)``: body a never against the world's colliders (a wheel whose ground
        contact is a declared one). Colliders on one body never are.
    """

    def __init__(self, colliders, bodies, margin: float = 0.0, exclude=()):
        self.colliders = list(colliders)
        for c in self.colliders:
            if not isinstance(c, Collider):
                raise TypeError(f"colliders must be Collider objects, got {type(c).__name__}")
        self.bodies = list(bodies)
        index = {id(b): i for i, b in enumerate(self.bodies)}
        self.margin = nonnegative("collision margin", margin)
        owner = []
        for c in self.colliders:
            if c.body is None:
                owner.append(-1)
            elif id(c.body) in index:
                owner.append(index[id(c.body)])
            else:
                raise ValueError(f"collider {c.name}: its body {c.body.name!r} is not in the bodies list")
        self.owner = np.array(owner, np.int64)
        self._excluded = set()
        for pair in exclude:
            try:
                a, b = pair
            except (TypeError, ValueError):
                raise ValueError(f"exclude entries must be pairs of bodies, got {pair!r}") from None
            for body in (a, b):
                if body is not None and id(body) not in index:
                    name = getattr(body, "name", repr(body))
                    raise ValueError(f"excluded pair {name!r}: not a body of this world")
            if a is None and b is None:
                raise ValueError("excluded pair (None, None): world colliders never touch each other anyway")
            i, j = sorted((-1 if a is None else index[id(a)], -1 if b is None else index[id(b)]))
            self._excluded.add((i, j))
        self._geometry = [c.shape.geometry() for c in self.colliders]
        self._bounded = np.array([getattr(c.shape, "bounded", True) for c in self.colliders], bool)
        self._local_R = np.array([c.rotation for c in self.colliders]).reshape(-1, 3, 3)
        self._local_x = np.array([c.position for c in self.colliders]).reshape(-1, 3)
        self._classes = []  # the shape classes present; _kind_of[i]: collider i's index among them
        for c in self.colliders:
            if type(c.shape) not in self._classes:
                self._classes.append(type(c.shape))
        self._kind_of = np.array([self._classes.index(type(c.shape)) for c in self.colliders], np.int64)
        self._kinds = [np.flatnonzero(self._kind_of == k) for k in range(len(self._classes))]
        _register_builtins()

    def poses(self, positions, rotations) -> tuple[np.ndarray, np.ndarray]:
        """World rotations (m, 3, 3) and origins (m, 3) of every collider at the body poses."""
        R = np.empty((len(self.colliders), 3, 3))
        x = np.empty((len(self.colliders), 3))
        on = self.owner >= 0
        b = self.owner[on]
        R[on] = np.einsum("mij,mjk->mik", rotations[b], self._local_R[on])
        x[on] = positions[b] + np.einsum("mij,mj->mi", rotations[b], self._local_x[on])
        R[~on] = self._local_R[~on]
        x[~on] = self._local_x[~on]
        return R, x

    def _transforms(self, R, x, which) -> dict:
        coal = _coal()
        out = {}
        for i in which:
            t = coal.Transform3s()
            t.setRotation(np.ascontiguousarray(R[i]))
            t.setTranslation(np.ascontiguousarray(x[i]))
            out[int(i)] = t
        return out

    def candidate_pairs(self, R, x) -> np.ndarray:
        """The broad phase (module docstring) at collider poses R (m, 3, 3), x (m, 3)
        (:meth:`poses`): (K, 2) collider pairs for the narrow phase, a world collider always
        second."""
        m = len(self.colliders)
        lower = np.empty((m, 3))
        upper = np.empty((m, 3))
        for members in self._kinds:
            members = members[self._bounded[members]]
            if members.size == 0:
                continue
            extent = half_extents([self.colliders[i].shape for i in members], R[members])
            if extent is None:  # coal's box
                coal = _coal()
                transforms = self._transforms(R, x, members)
                for i in members:
                    obj = coal.CollisionObject(self._geometry[i], transforms[int(i)])
                    obj.computeAABB()
                    box = obj.getAABB()
                    lower[i] = np.asarray(box.min_)
                    upper[i] = np.asarray(box.max_)
            else:
                lower[members] = x[members] - extent
                upper[members] = x[members] + extent
        bounded = np.flatnonzero(self._bounded)
        half = 0.5 * self.margin
        lower, upper = lower[bounded] - half, upper[bounded] + half
        pairs = bounded[sweep_and_prune(lower, upper)] if bounded.size else np.zeros((0, 2), np.int64)
        unbounded = np.flatnonzero(~self._bounded)
        on_body = np.flatnonzero(self.owner >= 0)
        if unbounded.size and on_body.size:
            extra = np.stack(np.meshgrid(on_body, unbounded, indexing="ij"), axis=-1).reshape(-1, 2)
            pairs = np.concatenate([pairs, extra])
        if pairs.size == 0:
            return pairs.reshape(0, 2)
        # a world collider second; then drop world-world, same-body and excluded pairs
        swap = self.owner[pairs[:, 0]] < 0
        pairs[swap] = pairs[swap][:, ::-1]
        ba, bb = self.owner[pairs[:, 0]], self.owner[pairs[:, 1]]
        keep = (ba >= 0) & (ba != bb)
        if self._excluded:
            low, high = np.minimum(ba, bb), np.maximum(ba, bb)
            keep &= np.array([(int(x), int(y)) not in self._excluded for x, y in zip(low, high)], bool)
        return pairs[keep]

    def detect(self, positions, rotations) -> Contacts:
        """The contacts at the given poses: ``positions`` (nb, 3) centres of mass (m) and
        ``rotations`` (nb, 3, 3), in the order of ``bodies``."""
        nb = len(self.bodies)
        positions = finite_vector("body positions", positions, shape=(nb, 3))
        rotations = finite_vector("body rotations", rotations, shape=(nb, 3, 3))
        if nb:
            error = np.abs(np.einsum("kji,kjl->kil", rotations, rotations) - np.eye(3)).max(axis=(1, 2))
            bad = np.flatnonzero(~(error <= 1e-9) | ~(np.linalg.det(rotations) > 0))
            if bad.size:
                k = int(bad[0])
                raise ValueError(f"body rotations[{k}] (body {self.bodies[k].name!r}) is not a rotation matrix")
        R, x = self.poses(positions, rotations)
        pairs = self.candidate_pairs(R, x)
        parts = []
        if pairs.shape[0]:
            classes = len(self._classes)
            code = self._kind_of[pairs[:, 0]] * classes + self._kind_of[pairs[:, 1]]  # the pair's two shape classes
            for value in np.unique(code):  # the output is sorted by pair below: the groups' order does not matter
                members = np.flatnonzero(code == value)
                ka, kb = divmod(int(value), classes)
                routine, swapped = routine_for(self._classes[ka], self._classes[kb])
                if routine is None:
                    parts.append(self._coal_pairs(pairs[members], R, x))
                    continue
                ia, ib = pairs[members, 0], pairs[members, 1]
                if swapped:
                    ia, ib = ib, ia
                shapes_a = [self.colliders[i].shape for i in ia]
                shapes_b = [self.colliders[i].shape for i in ib]
                index, pa, pb, n, feature = routine(shapes_a, shapes_b, R[ia], x[ia], R[ib], x[ib], self.margin)
                if swapped:
                    pa, pb, n = pb, pa, -n
                parts.append((pairs[members][index], pa, pb, n, feature))
        parts = [p for p in parts if len(p[0])]
        if not parts:
            return _empty_contacts(len(pairs))
        collider = np.concatenate([p[0] for p in parts]).reshape(-1, 2)
        point_a = np.concatenate([p[1] for p in parts])
        point_b = np.concatenate([p[2] for p in parts])
        normal = np.concatenate([p[3] for p in parts])
        feature = np.concatenate([p[4] for p in parts]).astype(np.int64)
        normal = normal / np.linalg.norm(normal, axis=1, keepdims=True)
        gap = np.einsum("ij,ij->i", normal, point_b - point_a)
        keep = np.flatnonzero(gap <= self.margin)
        keep = keep[np.lexsort((feature[keep], collider[keep, 1], collider[keep, 0]))]  # by pair, then feature
        collider = collider[keep]
        point_a = point_a[keep]
        body_a = self.owner[collider[:, 0]]
        local_a = np.einsum("kji,kj->ki", rotations[body_a], point_a - positions[body_a])
        return Contacts(
            collider, self.owner[collider], point_a, point_b[keep], normal[keep], gap[keep], local_a, feature[keep],
            len(pairs),
        )  # fmt: skip

    def _coal_pairs(self, pairs, R, x):
        """coal's narrow phase (GJK/EPA and the contact patch) on ``pairs``: (the contacts'
        pairs (k, 2), point_a, point_b, normal, feature)."""
        coal = _coal()
        transforms = self._transforms(R, x, np.unique(pairs))
        request = coal.CollisionRequest()
        request.security_margin = self.margin
        request.num_max_contacts = 1
        patch_request = coal.ContactPatchRequest()
        rows = []
        for a, b in pairs:
            ta, tb = transforms[int(a)], transforms[int(b)]
            result = coal.CollisionResult()
            coal.collide(self._geometry[a], ta, self._geometry[b], tb, request, result)
            if not result.isCollision():
                continue
            patches = coal.ContactPatchResult(patch_request)
            coal.computeContactPatch(self._geometry[a], ta, self._geometry[b], tb, result, patch_request, patches)
            if patches.numContactPatches() == 0:  # coal gives a patch per contact; keep its witness pair
                contact = result.getContact(0)
                normal = np.array(contact.normal)
                pa, pb = np.array(contact.getNearestPoint1()), np.array(contact.getNearestPoint2())
                rows.append((a, b, pa, pb, normal, 0))
                continue
            patch = patches.getContactPatch(0)
            normal = np.array(patch.getNormal())
            for k in range(patch.size()):
                pa, pb = np.array(patch.getPointShape1(k)), np.array(patch.getPointShape2(k))
                rows.append((a, b, pa, pb, normal, k))
        if not rows:
            empty = _empty_contacts(0)
            return empty.collider, empty.point_a, empty.point_b, empty.normal, empty.feature
        return (
            np.array([(r[0], r[1]) for r in rows], np.int64),
            np.array([r[2] for r in rows]),
            np.array([r[3] for r in rows]),
            np.array([r[4] for r in rows]),
            np.array([r[5] for r in rows], np.int64),
        )
