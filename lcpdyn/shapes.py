"""The convex shapes of body–body contact, each in its local frame (the shape's centre at the
origin, axes of revolution along z), with its coal geometry for the narrow phase.

A shape is a frozen dataclass that validates its dimensions (m) and builds its coal collision
object in its ``geometry()``; :class:`~lcpdyn.collision.Collider` attaches one to a body or fixes it
in the world. :mod:`lcpdyn.shape_pairs` has closed forms for some pairs of them; a user shape is
any object with ``geometry()`` returning a coal ``CollisionGeometry`` (and ``bounded = False``
for one without a finite bounding box).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .validation import finite_vector, nonnegative, positive, unit_vector

__all__ = ["Sphere", "Capsule", "Cylinder", "Box", "ConvexMesh", "HalfSpace"]


def _coal():
    try:
        import coal
    except ImportError as exc:  # an optional dependency: say how to get it
        raise ImportError(
            "body-body contact needs the collision library coal: pip install 'lcpdyn[collision]' "
            f"(or pip install coal); import failed: {exc}"
        ) from None
    return coal


@dataclass(frozen=True)
class Sphere:
    """A sphere of ``radius`` (m) about the collider's origin."""

    radius: float

    def __post_init__(self):
        object.__setattr__(self, "radius", positive("sphere radius", self.radius))

    def geometry(self):
        """coal's sphere of this radius (the ``collision`` extra)."""
        return _coal().Sphere(self.radius)


@dataclass(frozen=True)
class Capsule:
    """A capsule: the points within ``radius`` of the segment of ``length`` (m) along the local
    z axis, centred at the origin (total length ``length + 2 radius``)."""

    radius: float
    length: float

    def __post_init__(self):
        object.__setattr__(self, "radius", positive("capsule radius", self.radius))
        object.__setattr__(self, "length", nonnegative("capsule length", self.length))

    def geometry(self):
        """coal's capsule of this radius and length (the ``collision`` extra)."""
        return _coal().Capsule(self.radius, self.length)


@dataclass(frozen=True)
class Cylinder:
    """A solid cylinder of ``radius`` and ``length`` (m) along the local z axis, centred."""

    radius: float
    length: float

    def __post_init__(self):
        object.__setattr__(self, "radius", positive("cylinder radius", self.radius))
        object.__setattr__(self, "length", positive("cylinder length", self.length))

    def geometry(self):
        """coal's cylinder of this radius and length (the ``collision`` extra)."""
        return _coal().Cylinder(self.radius, self.length)


@dataclass(frozen=True)
class Box:
    """A box with full edge lengths ``size = (lx, ly, lz)`` (m), centred on the origin."""

    size: tuple

    def __post_init__(self):
        size = finite_vector("box size", self.size, 3)
        if not (size > 0).all():
            raise ValueError(f"box size must be > 0 along every axis, got {tuple(size)}")
        object.__setattr__(self, "size", tuple(float(s) for s in size))

    def geometry(self):
        """coal's box of these side lengths (the ``collision`` extra)."""
        return _coal().Box(*self.size)


@dataclass(frozen=True)
class ConvexMesh:
    """The convex hull of ``vertices`` ((k, 3), m, k >= 4, not all in one plane), computed by
    coal (qhull)."""

    vertices: np.ndarray = field(repr=False)

    def __post_init__(self):
        vertices = np.array(self.vertices, dtype=np.float64)
        if vertices.ndim != 2 or vertices.shape[1] != 3 or vertices.shape[0] < 4:
            raise ValueError(f"convex mesh vertices must have shape (k, 3) with k >= 4, got {vertices.shape}")
        if not np.isfinite(vertices).all():
            raise ValueError("convex mesh vertices must be finite")
        centred = vertices - vertices.mean(axis=0)
        if np.linalg.matrix_rank(centred, tol=1e-12 * max(np.abs(centred).max(), 1e-300)) < 3:
            raise ValueError("convex mesh vertices lie in one plane (or line): the hull has no volume")
        vertices.setflags(write=False)
        object.__setattr__(self, "vertices", vertices)

    def geometry(self):
        """coal's convex hull of the vertices (the ``collision`` extra)."""
        coal = _coal()
        points = coal.StdVec_Vec3s()
        for vertex in self.vertices:
            points.append(np.array(vertex))
        return coal.Convex.convexHull(points, False, None)


@dataclass(frozen=True)
class HalfSpace:
    """The half-space ``{x : n · x <= offset}`` (world; ``normal`` n normalized here): the
    ground when n = (0, 0, 1), offset = 0. Only fixed in the world (``Collider(None, ...)``)."""

    normal: tuple = (0.0, 0.0, 1.0)
    offset: float = 0.0

    def __post_init__(self):
        object.__setattr__(self, "normal", tuple(unit_vector("half-space normal", self.normal, 3)))
        object.__setattr__(self, "offset", float(finite_vector("half-space offset", self.offset, shape=())))

    def geometry(self):
        """coal's half-space n . x <= offset (the ``collision`` extra)."""
        return _coal().Halfspace(np.array(self.normal), self.offset)

    bounded = False  # no finite bounding box: paired with every collider on a body
