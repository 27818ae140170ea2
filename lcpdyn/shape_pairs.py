"""Closed-form narrow phase for the shape pairs whose contacts have one (spheres, boxes and
half-spaces), batched over all pairs of a kind; every other pair goes through coal.

Why not coal for these too. For a box resting flat on a box or on the ground -- the gap at the
level of rounding -- the normal of GJK/EPA is not defined (any direction of the touching faces'
edges is as good), and coal's contact patch built around a tilted normal keeps two of the four
corners: a stack of boxes resting exactly on each other then loses corners from step to step and
tips. The separating-axis test below picks the face normal, and the reference-face clipping gives
every corner of the touching faces with its own gap. Spheres are a few vector operations; doing
hundreds of them in one NumPy call instead of a coal call each is what keeps detection a small
part of a 500-sphere pile's step.

Every routine takes the pairs of one kind in a batch -- shapes ``A`` and ``B`` (lists), their
world poses ``Ra, Rb`` (m, 3, 3) and ``xa, xb`` (m, 3), and the margin -- and returns
``(pair, point_a, point_b, normal, feature)``: for each contact found (gap <= margin) the index
of its pair in the batch, the witness points on A and on B (world), the unit normal from A to B
and an index of the feature (corner, face point) within the pair. The gap is
``normal . (point_b - point_a)``.

* sphere--sphere: along the line of centres (any fixed direction for coincident centres);
* sphere--half-space, box--half-space: the sphere's lowest point; every box corner within the
  margin (four for a box resting on a face);
* sphere--box: the box point nearest to the centre; for a centre inside the box, the face of
  least penetration;
* box--box: the separating-axis test over the 15 axes (3 + 3 face normals, 9 edge cross
  products; Gottschalk, Lin & Manocha 1996), the face axes preferred unless an edge axis
  separates more by ``1e-6`` of the smaller box (so that resting faces keep their face normal);
  on a face axis the incident face of the other box is clipped against the reference face's side
  planes (Sutherland--Hodgman), each clipped vertex a contact with its own gap (up to 8 points,
  the manifold of ODE's ``dBoxBox``; vertices within 1e-9 of the smaller half size of another
  vertex, or of the segment joining their neighbours, dropped, so two aligned faces a rounding
  error apart give their four corners, not six or eight); on an edge axis the closest points of
  the two edges.
"""

from __future__ import annotations

import numpy as np
from numba import njit

import solvers  # noqa: F401  (before the compiled functions: Numba's cache locators, solvers.compiled_cache)

from .shapes import Box, HalfSpace, Sphere

__all__ = ["PAIR_ROUTINES", "register_pair", "half_extents"]


def half_extents(shapes, R: np.ndarray) -> np.ndarray | None:
    """(m, 3) half sizes of the world axis-aligned boxes of ``shapes`` (m, all of one class) at
    rotations R (m, 3, 3), or None when the class has no closed form here (coal computes it)."""
    if isinstance(shapes[0], Sphere):
        return np.repeat(np.array([s.radius for s in shapes])[:, None], 3, axis=1)
    if isinstance(shapes[0], Box):
        return np.einsum("mij,mj->mi", np.abs(R), 0.5 * np.array([s.size for s in shapes]))
    return None


def _empty():
    return np.zeros(0, np.int64), np.zeros((0, 3)), np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0, np.int64)


def sphere_sphere(A, B, Ra, xa, Rb, xb, margin):
    """Sphere--sphere contacts of a batch (module docstring): along the line of centres."""
    ra = np.array([s.radius for s in A])
    rb = np.array([s.radius for s in B])
    d = xb - xa
    distance = np.linalg.norm(d, axis=1)
    normal = np.where(distance[:, None] > 0.0, d / np.where(distance > 0.0, distance, 1.0)[:, None], [0.0, 0.0, 1.0])
    keep = np.flatnonzero(distance - ra - rb <= margin)
    n = normal[keep]
    return keep, xa[keep] + ra[keep, None] * n, xb[keep] - rb[keep, None] * n, n, np.zeros(keep.size, np.int64)


def _plane(B, Rb, xb):
    """World normal and offset of half-spaces B: {x : n . x <= offset}."""
    n = np.einsum("mij,mj->mi", Rb, np.array([s.normal for s in B]))
    offset = np.array([s.offset for s in B]) + np.einsum("mi,mi->m", n, xb)
    return n, offset


def sphere_halfspace(A, B, Ra, xa, Rb, xb, margin):
    """Sphere--half-space contacts of a batch (module docstring): the sphere's lowest point."""
    r = np.array([s.radius for s in A])
    n, offset = _plane(B, Rb, xb)
    height = np.einsum("mi,mi->m", n, xa) - offset  # of the centre above the plane
    keep = np.flatnonzero(height - r <= margin)
    nk = n[keep]
    point_a = xa[keep] - r[keep, None] * nk
    point_b = xa[keep] - height[keep, None] * nk
    return keep, point_a, point_b, -nk, np.zeros(keep.size, np.int64)


_CORNERS = np.array([[i, j, k] for i in (-1, 1) for j in (-1, 1) for k in (-1, 1)], float)


def box_halfspace(A, B, Ra, xa, Rb, xb, margin):
    """Box--half-space contacts of a batch (module docstring): every corner within the margin."""
    half = 0.5 * np.array([s.size for s in A])
    n, offset = _plane(B, Rb, xb)
    corners = xa[:, None] + np.einsum("mij,mcj->mci", Ra, _CORNERS[None] * half[:, None])  # (m, 8, 3)
    height = np.einsum("mci,mi->mc", corners, n) - offset[:, None]
    pair, corner = np.nonzero(height <= margin)
    nk = n[pair]
    point_a = corners[pair, corner]
    return pair, point_a, point_a - height[pair, corner, None] * nk, -nk, corner.astype(np.int64)


def sphere_box(A, B, Ra, xa, Rb, xb, margin):
    """Sphere--box contacts of a batch (module docstring): the box point nearest to the centre, or the face of least
    penetration."""
    r = np.array([s.radius for s in A])
    half = 0.5 * np.array([s.size for s in B])
    local = np.einsum("mji,mj->mi", Rb, xa - xb)  # sphere centre in the box frame
    nearest = np.clip(local, -half, half)
    offset = local - nearest
    distance = np.linalg.norm(offset, axis=1)
    inside = distance == 0.0
    # a centre inside the box: the face of least penetration
    depth = half - np.abs(local)
    axis = np.argmin(depth, axis=1)
    rows = np.arange(local.shape[0])
    sign = np.where(local[rows, axis] >= 0.0, 1.0, -1.0)
    surface = local.copy()
    surface[rows, axis] = sign * half[rows, axis]
    outward = np.zeros_like(local)  # from the box towards the sphere centre, box frame
    outward[rows, axis] = sign
    safe = np.where(inside, 1.0, distance)
    outward = np.where(inside[:, None], outward, offset / safe[:, None])
    surface = np.where(inside[:, None], surface, nearest)
    centre_gap = np.where(inside, -depth[rows, axis], distance)
    keep = np.flatnonzero(centre_gap - r <= margin)
    n_world = np.einsum("mij,mj->mi", Rb, outward)[keep]  # box -> sphere
    point_b = xb[keep] + np.einsum("mij,mj->mi", Rb[keep], surface[keep])
    point_a = xa[keep] - r[keep, None] * n_world
    return keep, point_a, point_b, -n_world, np.zeros(keep.size, np.int64)


@njit(cache=True)
def _clip(polygon, count, axis, limit, out):
    """Sutherland--Hodgman: the part of ``polygon[:count]`` with axis . x <= limit into ``out``;
    returns its vertex count."""
    m = 0
    for i in range(count):
        j = (i + 1) % count
        dp = axis[0] * polygon[i, 0] + axis[1] * polygon[i, 1] + axis[2] * polygon[i, 2] - limit
        dq = axis[0] * polygon[j, 0] + axis[1] * polygon[j, 1] + axis[2] * polygon[j, 2] - limit
        if dp <= 0.0:
            out[m] = polygon[i]
            m += 1
        if (dp < 0.0 < dq) or (dq < 0.0 < dp):
            out[m] = polygon[i] + (dp / (dp - dq)) * (polygon[j] - polygon[i])
            m += 1
    return m


@njit(cache=True)
def _simplify(polygon, count, tolerance, scratch):
    """Drops from the convex ``polygon[:count]`` every vertex within ``tolerance`` of the segment
    joining its neighbours (clipping two aligned faces a rounding error apart puts vertices on the
    edges: points collinear with the corners add no support); returns the new count."""
    changed = True
    while changed and count > 3:
        changed = False
        for i in range(count):
            p, a, b = polygon[i], polygon[(i - 1) % count], polygon[(i + 1) % count]
            edge = b - a
            length2 = _dot(edge, edge)
            offset = p - a
            if length2 > 0.0:
                t = _dot(offset, edge) / length2
                offset = offset - t * edge
            if _dot(offset, offset) <= tolerance * tolerance:
                m = 0
                for j in range(count):
                    if j != i:
                        scratch[m] = polygon[j]
                        m += 1
                for j in range(m):
                    polygon[j] = scratch[j]
                count = m
                changed = True
                break
    return count


@njit(cache=True, inline="always")
def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit(cache=True)
def _separation(L, d, Ra, ea, Rb, eb):
    s = L[0] * d[0] + L[1] * d[1] + L[2] * d[2]
    for k in range(3):
        s -= ea[k] * abs(L[0] * Ra[0, k] + L[1] * Ra[1, k] + L[2] * Ra[2, k])
        s -= eb[k] * abs(L[0] * Rb[0, k] + L[1] * Rb[1, k] + L[2] * Rb[2, k])
    return s


@njit(cache=True)
def _box_box_one(ea, Ra, ca, eb, Rb, cb, margin, pa_out, pb_out, n_out, feature_out):
    """The contacts of one box pair (module docstring) into the output rows; returns their count
    (at most 8)."""
    d = cb - ca
    best_face = -np.inf
    face_axis = np.zeros(3)
    face_owner = -1
    face_index = -1
    for owner in range(2):
        R = Ra if owner == 0 else Rb
        for i in range(3):
            L = R[:, i].copy()
            if _dot(L, d) < 0.0:
                L = -L
            s = _separation(L, d, Ra, ea, Rb, eb)
            if s > margin:
                return 0
            if s > best_face + 1e-12 * (1.0 + abs(s)):
                best_face, face_axis, face_owner, face_index = s, L, owner, i
    best_edge = -np.inf
    edge_axis = np.zeros(3)
    edge_i = -1
    edge_j = -1
    for i in range(3):
        for j in range(3):
            L = np.cross(Ra[:, i], Rb[:, j])
            length = np.sqrt(_dot(L, L))
            if length < 1e-6:
                continue
            L = L / length
            if _dot(L, d) < 0.0:
                L = -L
            s = _separation(L, d, Ra, ea, Rb, eb)
            if s > margin:
                return 0
            if s > best_edge:
                best_edge, edge_axis, edge_i, edge_j = s, L, i, j
    if edge_i >= 0 and best_edge > best_face + 1e-6 * min(ea.min(), eb.min()):
        L = edge_axis
        i, j = edge_i, edge_j
        # the edges that support the axis: on A along a_i towards +L, on B along b_j towards -L
        pa0 = ca.copy()
        pb0 = cb.copy()
        for k in range(3):
            if k != i:
                pa0 += (ea[k] if _dot(L, Ra[:, k]) >= 0.0 else -ea[k]) * Ra[:, k]
            if k != j:
                pb0 += (eb[k] if _dot(L, Rb[:, k]) <= 0.0 else -eb[k]) * Rb[:, k]
        d1 = Ra[:, i].copy()
        d2 = Rb[:, j].copy()
        r = pa0 - pb0
        a, e, b = _dot(d1, d1), _dot(d2, d2), _dot(d1, d2)
        c, f = _dot(d1, r), _dot(d2, r)
        denominator = a * e - b * b
        pa_out[0] = pa0 + ((b * f - c * e) / denominator) * d1
        pb_out[0] = pb0 + ((a * f - b * c) / denominator) * d2
        n_out[0] = L
        feature_out[0] = 100 + 3 * i + j
        return 1
    # face contact: reference face on the owner of the axis, incident face on the other box
    if face_owner == 0:
        e_ref, R_ref, c_ref, e_inc, R_inc, c_inc, n = ea, Ra, ca, eb, Rb, cb, face_axis
    else:
        e_ref, R_ref, c_ref, e_inc, R_inc, c_inc, n = eb, Rb, cb, ea, Ra, ca, -face_axis
    # n: outward normal of the reference face, towards the incident box
    k = int(np.argmax(np.abs(np.array([_dot(R_inc[:, 0], n), _dot(R_inc[:, 1], n), _dot(R_inc[:, 2], n)]))))
    sign = -1.0 if _dot(R_inc[:, k], n) >= 0.0 else 1.0  # the incident face faces the reference box
    centre = c_inc + sign * e_inc[k] * R_inc[:, k]
    u = 1 if k == 0 else 0
    v = 2 if k != 2 else 1
    polygon = np.empty((8, 3))
    scratch = np.empty((8, 3))
    for q in range(4):
        su = 1.0 if q == 0 or q == 3 else -1.0
        sv = 1.0 if q < 2 else -1.0
        polygon[q] = centre + su * e_inc[u] * R_inc[:, u] + sv * e_inc[v] * R_inc[:, v]
    count = 4
    i = face_index
    for a in range(3):
        if a == i:
            continue
        axis = R_ref[:, a].copy()
        count = _clip(polygon, count, axis, _dot(axis, c_ref) + e_ref[a], scratch)
        if count == 0:
            return 0
        count = _clip(scratch, count, -axis, -(_dot(axis, c_ref)) + e_ref[a], polygon)
        if count == 0:
            return 0
    plane = _dot(n, c_ref) + e_ref[i]
    tolerance = 1e-9 * min(e_ref.min(), e_inc.min())  # clipping near a corner leaves near-duplicates
    count = _simplify(polygon, count, tolerance, scratch)
    m = 0
    for index in range(count):
        p = polygon[index]
        duplicate = False
        for earlier in range(index):
            q = polygon[earlier]
            if abs(p[0] - q[0]) <= tolerance and abs(p[1] - q[1]) <= tolerance and abs(p[2] - q[2]) <= tolerance:
                duplicate = True
        if duplicate:
            continue
        separation = _dot(n, p) - plane
        if separation > margin:
            continue
        on_reference = p - separation * n
        if face_owner == 0:  # reference on A: the normal from A to B is n
            pa_out[m], pb_out[m], n_out[m] = on_reference, p, n
        else:  # reference on B: the normal from A to B is -n
            pa_out[m], pb_out[m], n_out[m] = p, on_reference, -n
        feature_out[m] = index
        m += 1
    return m


def box_box(A, B, Ra, xa, Rb, xb, margin):
    """Box--box contacts of a batch (module docstring): the separating-axis test, then the clipped face or the
    closest points of two edges."""
    m = len(A)
    ea = 0.5 * np.array([s.size for s in A], np.float64).reshape(m, 3)
    eb = 0.5 * np.array([s.size for s in B], np.float64).reshape(m, 3)
    pa, pb, n = np.empty((8 * m, 3)), np.empty((8 * m, 3)), np.empty((8 * m, 3))
    feature = np.empty(8 * m, np.int64)
    pair = np.empty(8 * m, np.int64)
    arrays = [np.ascontiguousarray(a, np.float64) for a in (Ra, xa, Rb, xb)]
    total = _box_box_all(ea, arrays[0], arrays[1], eb, arrays[2], arrays[3], float(margin), pa, pb, n, feature, pair)
    return pair[:total], pa[:total], pb[:total], n[:total], feature[:total]


@njit(cache=True)
def _box_box_all(ea, Ra, xa, eb, Rb, xb, margin, pa, pb, n, feature, pair):
    total = 0
    for m in range(ea.shape[0]):
        found = _box_box_one(
            ea[m], Ra[m], xa[m], eb[m], Rb[m], xb[m], margin, pa[total:], pb[total:], n[total:], feature[total:]
        )
        pair[total : total + found] = m
        total += found
    return total


PAIR_ROUTINES: dict = {}
"""Closed-form narrow phases by (shape class of A, shape class of B)."""


def register_pair(kind_a, kind_b, routine):
    """Use ``routine`` (module docstring) for the pairs of shapes of the two classes (either
    order: the reverse order is served by the same routine with the witness points swapped and
    the normal reversed)."""
    PAIR_ROUTINES[(kind_a, kind_b)] = routine


def routine_for(kind_a, kind_b):
    """(routine, swapped) for a pair of shape classes, or (None, False)."""
    found = PAIR_ROUTINES.get((kind_a, kind_b))
    if found is not None:
        return found, False
    found = PAIR_ROUTINES.get((kind_b, kind_a))
    if found is not None:
        return found, True
    return None, False


def _register_builtins():
    for kinds, routine in (
        ((Sphere, Sphere), sphere_sphere),
        ((Sphere, HalfSpace), sphere_halfspace),
        ((Box, HalfSpace), box_halfspace),
        ((Sphere, Box), sphere_box),
        ((Box, Box), box_box),
    ):
        if routine_for(*kinds)[0] is None:  # a user's registration stands
            register_pair(*kinds, routine)
