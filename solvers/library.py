"""A library of bounded LCPs with known answers or known structure, shared by the tests and
the benchmarks.

Each generator returns a :class:`Case`: the problem data and, where it is known in closed
form, the solution ``z_expected`` (``None`` where only uniqueness or structure is known).
Random families take a ``seed`` and are reproducible.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

INF = np.inf


@dataclass(frozen=True, eq=False)
class Case:
    name: str
    M: np.ndarray
    q: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    z_expected: np.ndarray | None = None
    unique: bool = True  # the solution z is unique (so methods must agree on z)

    @property
    def args(self):
        return self.M, self.q, self.lo, self.hi


def _case(name, M, q, lo, hi, z=None, unique=True):
    M = np.asarray(M, float)
    n = M.shape[0]
    lo = np.broadcast_to(np.asarray(lo, float), (n,)).copy()
    hi = np.broadcast_to(np.asarray(hi, float), (n,)).copy()
    return Case(name, M, np.asarray(q, float), lo, hi, None if z is None else np.asarray(z, float), unique)


# --- hand cases with closed-form solutions -------------------------------------------------

def hand_cases() -> list[Case]:
    """Small problems solved by hand (the expected z is derived in each comment)."""
    return [
        # 2 z - 4 = 0 -> z = 2 inside [0, inf)
        _case("scalar-interior", [[2.0]], [-4.0], 0.0, INF, [2.0]),
        # q >= 0: z = 0, w = q
        _case("trivial", [[2.0, 1.0], [1.0, 2.0]], [1.0, 3.0], 0.0, INF, [0.0, 0.0]),
        # both basic: [[2,1],[1,2]] z = (5, 6) -> z = (4/3, 7/3)
        _case("both-basic", [[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0], 0.0, INF, [4 / 3, 7 / 3]),
        # one basic: z2 = 0 with w2 = z1 + 1 >= 0; 2 z1 - 2 = 0 -> z1 = 1, w2 = 2
        _case("one-basic", [[2.0, 1.0], [1.0, 2.0]], [-2.0, 1.0], 0.0, INF, [1.0, 0.0]),
        # M = I boxes: z = clip(-q, -1, 1) = (1, -1, -0.5); w = (-2, 2, 0)
        _case("identity-box", np.eye(3), [-3.0, 3.0, 0.5], -1.0, 1.0, [1.0, -1.0, -0.5]),
        # degenerate: z1 = 0 at its bound with w1 = 0; z2 = 1
        _case("degenerate", np.eye(2), [0.0, -1.0], 0.0, INF, [0.0, 1.0]),
        # zero-width box fixes z1 = 0.3 whatever w1 is; z2 solves 2 z2 + 0.3 - 1 = 0 -> 0.35
        _case("zero-width-box", [[1.0, 0.0], [1.0, 2.0]], [5.0, -1.0], [0.3, -INF], [0.3, INF], [0.3, 0.35]),
        # upper bound only: z <= 1, z - 3 = 0 wants 3 -> z = 1, w = -2 <= 0
        _case("upper-only", [[1.0]], [-3.0], -INF, 1.0, [1.0]),
        # particle of mass 2 hitting the ground (v free, lambda_N >= 0), Peiret 2016 Eq. 30 shape:
        # 2 v - lambda + 2.2 = 0, v >= 0 complementary to lambda -> v = 0, lambda = 2.2
        _case("particle-impact", [[2.0, -1.0], [1.0, 0.0]], [2.2, 0.0], [-INF, 0.0], [INF, INF], [0.0, 2.2]),
        # same particle moving away: lambda = 0, v = -q/2 = 0.5 > 0
        _case("particle-separating", [[2.0, -1.0], [1.0, 0.0]], [-1.0, 0.0], [-INF, 0.0], [INF, INF], [0.5, 0.0]),
        # free equations only: [[4,1],[1,3]] z = (1, 2) -> z = (1/11, 7/11)
        _case("all-free", [[4.0, 1.0], [1.0, 3.0]], [-1.0, -2.0], -INF, INF, [1 / 11, 7 / 11]),
        # box at the upper bound in a coupled problem: z1 in [-1, 1], z2 >= 0
        # z1 = 1 (w1 = 2 + 1 z2 - 4 <= 0), z2: 2 z2 + 1 - 3 = 0 -> 1 -> w1 = -1
        _case("coupled-box", [[2.0, 1.0], [1.0, 2.0]], [-4.0, -3.0], [-1.0, 0.0], [1.0, INF], [1.0, 1.0]),
    ]


def murty(n: int) -> Case:
    """Murty's example (Murty 1978, "Computational complexity of complementary pivot methods"):
    M lower triangular with 1 on the diagonal and 2 below it, q = -1. Forward substitution:
    w_1 = z_1 - 1 = 0 gives z_1 = 1, then w_i = z_i + 2 - 1 > 0 forces z_i = 0 for i > 1, so
    z = (1, 0, ..., 0), unique (M is a P-matrix). Lemke's method with covering vector 1 visits
    2^n bases on it (2^n pivots counting the artificial variable's entry, 2^n - 1 after it)."""
    M = np.eye(n) + 2.0 * np.tril(np.ones((n, n)), -1)
    z = np.zeros(n)
    z[0] = 1.0
    return _case(f"murty-{n}", M, -np.ones(n), 0.0, INF, z)


# --- random families ------------------------------------------------------------------------

def _mixed_bounds(rng, n, free_fraction=1 / 3, box_fraction=1 / 3):
    u = rng.random(n)
    lo = np.where(u < free_fraction, -INF, np.where(u < free_fraction + box_fraction, -rng.uniform(0.5, 2, n), 0.0))
    hi = np.where(u < free_fraction, INF, np.where(u < free_fraction + box_fraction, rng.uniform(0.5, 2, n), INF))
    return lo, hi


def random_spd(n: int, seed: int, bounds: str = "mixed") -> Case:
    """Random symmetric positive definite M (condition ~ 1e2-1e3); ``bounds`` is ``"lcp"``
    ([0, inf)), ``"box"`` (finite boxes around 0) or ``"mixed"`` (free, one-sided and boxed)."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, n))
    M = A @ A.T / n + 0.05 * np.eye(n)
    q = rng.standard_normal(n)
    if bounds == "lcp":
        lo, hi = np.zeros(n), np.full(n, INF)
    elif bounds == "box":
        lo, hi = -rng.uniform(0.1, 1, n), rng.uniform(0.1, 1, n)
    else:
        lo, hi = _mixed_bounds(rng, n)
    return _case(f"spd-{bounds}-{n}-s{seed}", M, q, lo, hi)


def random_psd_duplicated(n: int, seed: int, duplicates: int = 3, bounds: str = "lcp") -> Case:
    """Singular positive semidefinite M as redundant contacts give: a Delassus-type matrix
    J J^T whose Jacobian J (full row rank before duplication) has ``duplicates`` of its rows
    repeated, with the matching q entries repeated too (a redundant contact sees the same
    gap). rank(M) = n - duplicates; w is unique, z generally is not."""
    rng = np.random.default_rng(seed)
    base = n - duplicates
    J = rng.standard_normal((base, base + 2))
    copies = rng.choice(base, duplicates, replace=False)
    J = np.vstack([J, J[copies]])
    q = rng.standard_normal(base)
    q = np.concatenate([q, q[copies]])
    M = J @ J.T / base
    if bounds == "lcp":
        lo, hi = np.zeros(n), np.full(n, INF)
    else:
        lo, hi = -rng.uniform(0.1, 1, n), rng.uniform(0.1, 1, n)
    return _case(f"psd-dup-{bounds}-{n}-s{seed}", M, q, lo, hi, unique=False)


def delassus_rigid_body(contacts: int, seed: int, mu: float = 0.5) -> Case:
    """The Delassus matrix W = J M^{-1} J^T of one rigid body (6 DOF) touching at ``contacts``
    random points with a normal and two tangent rows each, as PGS-type engines pose it:
    rank 6 whatever the size, normal impulses >= 0, friction in fixed boxes +-mu (the box
    model). A hard singular PSD problem; z is not unique."""
    rng = np.random.default_rng(seed)
    points = rng.uniform(-0.5, 0.5, (contacts, 3))
    rows = []
    for r in points:
        rows.append(np.hstack([np.eye(3), -_skew(r)]))
    J = np.vstack([G[[2, 0, 1]] for G in rows])
    inverse_mass = np.diag([1.0, 1.0, 1.0, 12.0, 12.0, 12.0])
    W = J @ inverse_mass @ J.T
    q = np.tile([-1.0, 0.3, -0.2], contacts) + 0.1 * rng.standard_normal(3 * contacts)
    lo = np.tile([0.0, -mu, -mu], contacts)
    hi = np.tile([INF, mu, mu], contacts)
    return _case(f"delassus-{contacts}-s{seed}", W, q, lo, hi, unique=False)


def random_p_matrix(n: int, seed: int, bounds: str = "lcp") -> Case:
    """Nonsymmetric P-matrix: positive definite symmetric part plus a skew-symmetric part
    (x^T M x > 0 for x != 0 implies P). The solution is unique."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, n))
    S = rng.standard_normal((n, n))
    M = A @ A.T / n + 0.1 * np.eye(n) + (S - S.T)
    q = rng.standard_normal(n) * 2
    if bounds == "lcp":
        lo, hi = np.zeros(n), np.full(n, INF)
    else:
        lo, hi = _mixed_bounds(rng, n)
    return _case(f"p-{bounds}-{n}-s{seed}", M, q, lo, hi)


# --- contact problems built from rigid bodies ----------------------------------------------

def _skew(r):
    return np.array([[0.0, -r[2], r[1]], [r[2], 0.0, -r[0]], [-r[1], r[0], 0.0]])


def rigid_body_contacts(points, mass, inertia, velocity, angular_velocity, mu, h=1e-3, g=9.81,
                        friction_compliance=0.0, normal_impulse_guess=None, name="rigid-body"):
    """Peiret 2016 Eq. (30) for one free rigid body touching the ground plane z = 0 at
    ``points`` (body-frame offsets from the centre of mass, world-aligned body frame).

    Unknowns (6 + 3 k): v+ (linear, angular; free), h lambda_N (k, >= 0),
    h lambda_T (2k, box +-mu h lambda_N with lambda_N from ``normal_impulse_guess``, default
    the static share m g h / k). Tangent basis: world x and y. ``friction_compliance`` is
    the C_T diagonal of Eq. (26) (0 for k_T -> infinity, Eq. 29).
    """
    points = np.atleast_2d(np.asarray(points, float))
    k = points.shape[0]
    Mass = np.zeros((6, 6))
    Mass[:3, :3] = mass * np.eye(3)
    Mass[3:, 3:] = np.diag(inertia)
    # velocity of a point: v + omega x r = v - [r]x omega
    rows = []
    for r in points:
        G = np.hstack([np.eye(3), -_skew(r)])  # 3 x 6, world contact-point velocity
        rows.append(G)
    N = np.array([G[2] for G in rows])
    D = np.vstack([np.array([G[0], G[1]]) for G in rows])
    m = 6 + 3 * k
    M = np.zeros((m, m))
    M[:6, :6] = Mass
    M[:6, 6:6 + k] = -N.T
    M[:6, 6 + k:] = -D.T
    M[6:6 + k, :6] = N
    M[6 + k:, :6] = D
    M[6 + k:, 6 + k:] = friction_compliance * np.eye(2 * k)
    v0 = np.concatenate([velocity, angular_velocity])
    force = np.array([0.0, 0.0, -mass * g, 0.0, 0.0, 0.0])
    q = np.zeros(m)
    q[:6] = -(Mass @ v0 + h * force)
    impulse = np.full(k, mass * g * h / k) if normal_impulse_guess is None else np.asarray(normal_impulse_guess, float)
    bound = np.repeat(mu * impulse, 2)
    lo = np.concatenate([np.full(6, -INF), np.zeros(k), -bound])
    hi = np.concatenate([np.full(6, INF), np.full(k, INF), bound])
    return _case(name, M, q, lo, hi)


def wheel_one_contact(sliding: bool = True) -> Case:
    """The Peiret 2016 Table 1 wheel (m = 1 kg, I_a = 0.6, I_t = 0.3 kg m^2, R = 0.5 m,
    mu = 0.3), upright, one rim contact, 6 m/s forward: 6 velocities + 1 normal + 2 friction
    unknowns. ``sliding=False`` gives it the rolling spin 12 rad/s."""
    spin = 12.0 if not sliding else 0.0
    return rigid_body_contacts([[0.0, 0.0, -0.5]], 1.0, [0.3, 0.6, 0.3], [6.0, 0.0, 0.0],
                               [0.0, spin, -2.0], 0.3, name="wheel-one-contact" + ("" if sliding else "-rolling"))


def box_resting(corners: int = 4, mu: float = 0.5) -> Case:
    """A 1 kg cube (side 0.2 m) at rest on the ground with ``corners`` coplanar contacts: the
    normal rows are linearly dependent (rank 3 of 4), the basic systems singular. Known: v+ = 0
    and the normal impulses sum to m g h (not unique individually)."""
    half = 0.1
    pts = [[half, half, -half], [-half, half, -half], [-half, -half, -half], [half, -half, -half]][:corners]
    inertia = np.full(3, 1.0 * (0.2 ** 2) / 6)
    case = rigid_body_contacts(pts, 1.0, inertia, np.zeros(3), np.zeros(3), mu, name=f"box-{corners}-corners")
    return Case(case.name, case.M, case.q, case.lo, case.hi, None, unique=False)
