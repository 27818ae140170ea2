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
    """One bounded LCP of the library.

    The fields after ``unique`` describe cases built by :func:`rescale` and
    :func:`infeasible_cases`; their defaults describe an ordinary, solvable, unscaled case.
    For a rescaled case, ``original`` is the unscaled case and ``row_scale``, ``col_scale``
    are the diagonals of E and D with M = E M_orig D, q = E q_orig, lo = lo_orig / D,
    hi = hi_orig / D (so a solution maps back as z_orig = D z and w_orig = E^{-1} w).
    ``certificate`` is the vector y of :func:`infeasible_base_cases` proving a case infeasible.
    """

    name: str
    M: np.ndarray
    q: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    z_expected: np.ndarray | None = None
    unique: bool = True  # the solution z is unique (so methods must agree on z)
    feasible: bool | None = True  # True: has a solution; False: proved to have none; None: unknown
    original: Case | None = None  # the unscaled case this one is an exact rescaling of
    row_scale: np.ndarray | None = None  # diagonal of E (None: not rescaled)
    col_scale: np.ndarray | None = None  # diagonal of D (None: not rescaled)
    rescaling: str = ""  # kind of rescaling: "symmetric", "general", "rows", "uniform", "columns"
    certificate: np.ndarray | None = None  # for feasible=False: a vector y proving it (infeasible_base_cases)

    @property
    def args(self):
        """(M, q, lo, hi): the case's problem as the solvers take it."""
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


def rigid_body_contacts(
    points,
    mass,
    inertia,
    velocity,
    angular_velocity,
    mu,
    h=1e-3,
    g=9.81,
    friction_compliance=0.0,
    normal_impulse_guess=None,
    name="rigid-body",
):
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
    M[:6, 6 : 6 + k] = -N.T
    M[:6, 6 + k :] = -D.T
    M[6 : 6 + k, :6] = N
    M[6 + k :, :6] = D
    M[6 + k :, 6 + k :] = friction_compliance * np.eye(2 * k)
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
    return rigid_body_contacts(
        [[0.0, 0.0, -0.5]],
        1.0,
        [0.3, 0.6, 0.3],
        [6.0, 0.0, 0.0],
        [0.0, spin, -2.0],
        0.3,
        name="wheel-one-contact" + ("" if sliding else "-rolling"),
    )


def box_resting(corners: int = 4, mu: float = 0.5) -> Case:
    """A 1 kg cube (side 0.2 m) at rest on the ground with ``corners`` coplanar contacts: the
    normal rows are linearly dependent (rank 3 of 4), the basic systems singular. Known: v+ = 0
    and the normal impulses sum to m g h (not unique individually)."""
    half = 0.1
    pts = [[half, half, -half], [-half, half, -half], [-half, -half, -half], [half, -half, -half]][:corners]
    inertia = np.full(3, 1.0 * (0.2**2) / 6)
    case = rigid_body_contacts(pts, 1.0, inertia, np.zeros(3), np.zeros(3), mu, name=f"box-{corners}-corners")
    return Case(case.name, case.M, case.q, case.lo, case.hi, None, unique=False)


# --- exact rescalings -------------------------------------------------------------------------


def rescale(case: Case, row_scale, col_scale, name: str | None = None, rescaling: str = "general") -> Case:
    """The exact diagonal rescaling of ``case``: with E = diag(row_scale), D = diag(col_scale)
    (all entries positive and finite),

        M' = E M D,   q' = E q,   lo' = D^{-1} lo,   hi' = D^{-1} hi,   z_expected' = D^{-1} z_expected.

    z solves the original problem iff z' = D^{-1} z solves the rescaled one, and then
    w' = M' z' + q' = E w: D > 0 keeps the bounds' order and their infinities, and E > 0 keeps
    the sign of every w_i, so each complementarity implication holds for (z', w') iff it holds
    for (z, w). Feasibility and uniqueness are therefore unchanged.

    The data are computed in floating point; they are *exact* (bit for bit the scaled
    numbers) when every scale entry is a power of two and nothing overflows or underflows --
    :func:`rescaling_family` uses only powers of two for that reason. Rescaling an
    already rescaled case composes the scalings, so ``original``, ``row_scale`` and
    ``col_scale`` of the result always refer to the unscaled case.
    """
    n = case.q.shape[0]
    E = np.broadcast_to(np.asarray(row_scale, float), (n,)).copy()
    D = np.broadcast_to(np.asarray(col_scale, float), (n,)).copy()
    if not (np.all(np.isfinite(E)) and np.all(E > 0) and np.all(np.isfinite(D)) and np.all(D > 0)):
        raise ValueError("rescale needs positive, finite row and column scales")
    M = E[:, None] * case.M * D[None, :]
    z = None if case.z_expected is None else case.z_expected / D
    certificate = None if case.certificate is None else case.certificate / E  # y'^T M' = y^T M D
    if case.original is None:
        original, E_total, D_total = case, E, D
    else:
        original, E_total, D_total = case.original, case.row_scale * E, case.col_scale * D
    return Case(
        name or f"{case.name}|rescaled",
        M,
        E * case.q,
        case.lo / D,
        case.hi / D,
        z,
        case.unique,
        case.feasible,
        original,
        E_total,
        D_total,
        rescaling,
        certificate,
    )


_LOWEST_POWER, _HIGHEST_POWER = -40, 33  # scale entries 2^-40 ~ 9.1e-13 ... 2^33 ~ 8.6e9


def powers_of_two(rng, n, low=_LOWEST_POWER, high=_HIGHEST_POWER, extremes=True) -> np.ndarray:
    """n random powers of two 2^k, k uniform in [low, high]; with ``extremes`` (and n >= 2) two
    random entries are set to 2^low and 2^high so that every draw spans the whole range."""
    k = rng.integers(low, high + 1, n)
    if extremes and n >= 2:
        i, j = rng.choice(n, 2, replace=False)
        k[i], k[j] = low, high
    return np.ldexp(1.0, k)


def _rescalings(case: Case, rng, symmetric_mild: bool = True) -> list[Case]:
    """The exact rescalings of one case used by the families below (see
    :func:`rescaling_family`)."""
    n = case.q.shape[0]
    one = np.ones(n)
    low, high = np.ldexp(1.0, _LOWEST_POWER), np.ldexp(1.0, _HIGHEST_POWER)
    D = powers_of_two(rng, n)
    out = [rescale(case, D, D, f"{case.name}|sym-wide", "symmetric")]
    if symmetric_mild:
        D = powers_of_two(rng, n, -10, 10)
        out.append(rescale(case, D, D, f"{case.name}|sym-mild", "symmetric"))
    out += [
        rescale(case, powers_of_two(rng, n), powers_of_two(rng, n), f"{case.name}|general", "general"),
        rescale(case, powers_of_two(rng, n), one, f"{case.name}|rows", "rows"),
        rescale(case, low * one, one, f"{case.name}|uniform-2^{_LOWEST_POWER}", "uniform"),
        rescale(case, high * one, one, f"{case.name}|uniform-2^{_HIGHEST_POWER}", "uniform"),
        rescale(case, one, low * one, f"{case.name}|columns-2^{_LOWEST_POWER}", "columns"),
        rescale(case, one, high * one, f"{case.name}|columns-2^{_HIGHEST_POWER}", "columns"),
    ]
    return out


def random_rescaling(case: Case, rng) -> Case:
    """One exact power-of-two rescaling of ``case`` (entries 2^-40 ... 2^33), of a kind drawn
    from ``rng``: symmetric D M D, general E M D, rows E M, uniform a M (a = 2^-40 or 2^33) or
    columns M d (d = 2^-40 or 2^33)."""
    n = case.q.shape[0]
    one = np.ones(n)
    kind = ("symmetric", "general", "rows", "uniform", "columns")[rng.integers(5)]
    if kind == "symmetric":
        D = powers_of_two(rng, n)
        return rescale(case, D, D, f"{case.name}|sym-wide", kind)
    if kind == "general":
        return rescale(case, powers_of_two(rng, n), powers_of_two(rng, n), f"{case.name}|general", kind)
    if kind == "rows":
        return rescale(case, powers_of_two(rng, n), one, f"{case.name}|rows", kind)
    power = (_LOWEST_POWER, _HIGHEST_POWER)[rng.integers(2)]
    a = np.ldexp(1.0, power) * one
    if kind == "uniform":
        return rescale(case, a, one, f"{case.name}|uniform-2^{power}", kind)
    return rescale(case, one, a, f"{case.name}|columns-2^{power}", kind)


def rescaling_base_cases() -> list[Case]:
    """One or a few small members of every case class of this module, well scaled (entries of
    order one): the originals of :func:`rescaling_family`."""
    return (
        hand_cases()
        + [murty(5)]
        + [random_spd(6, 0, b) for b in ("lcp", "box", "mixed")]
        + [random_spd(12, 1, "mixed")]
        + [random_psd_duplicated(10, 0, bounds=b) for b in ("lcp", "box")]
        + [delassus_rigid_body(3, 0)]
        + [random_p_matrix(8, 0, b) for b in ("lcp", "mixed")]
        + [wheel_one_contact(True), wheel_one_contact(False), box_resting(4), box_resting(3)]
    )


def rescaling_family(seed: int = 0) -> list[Case]:
    """Exact rescalings of every case class of this module (:func:`rescaling_base_cases`).

    For each original, eight rescalings (:func:`rescale`), all scale entries powers of two
    between 2^-40 (~1e-12) and 2^33 (~1e10), so the rescaled data are exact:

    * ``sym-wide``, ``sym-mild``: symmetric D M D, q' = D q (E = D) -- the same physics in other
      units, z' = D^{-1} z and w' = D w power-conjugate (z'_i w'_i = z_i w_i). ``wide`` draws
      D from the whole range (and always hits both ends), ``mild`` from 2^-10 ... 2^10.
    * ``general``: independent row and column scales E M D.
    * ``rows``: E M (D = I; z is unchanged, only the rows' units change).
    * ``uniform-2^k``: a M, a q with a = 2^-40 and 2^33 (E = a I, D = I).
    * ``columns-2^k``: M d, lo / d, hi / d with d = 2^-40 and 2^33 (E = I, D = d I).

    Every case records its ``original`` and the total (``row_scale``, ``col_scale``) so an
    answer z' maps back as z = D z'. Reproducible for a given ``seed``.
    """
    family = []
    for index, case in enumerate(rescaling_base_cases()):
        family += _rescalings(case, np.random.default_rng([seed, index]))
    return family


# --- problems without solution ----------------------------------------------------------------


def _infeasible(name, M, q, lo, hi, y):
    case = _case(name, M, q, lo, hi, unique=False)
    return Case(
        case.name, case.M, case.q, case.lo, case.hi, None, False, feasible=False, certificate=np.asarray(y, float)
    )


def infeasible_base_cases() -> list[Case]:
    """Bounded LCPs with no solution, each with its proof. Every proof uses one fact: a
    solution needs w_i >= 0 wherever hi_i = +inf and lo_i < hi_i (z_i at its lower bound or
    interior), w_i <= 0 wherever lo_i = -inf and lo_i < hi_i, hence w_i = 0 for a free
    variable. The proofs hold for the stored floating-point numbers (exact arithmetic on
    them), not just for nearby real data.

    Each case also carries its proof as a ``certificate`` y: y_i > 0 only where
    hi_i = +inf > lo_i and y_i < 0 only where lo_i = -inf < hi_i, so every solution has
    y^T w >= 0; but y^T w = (M^T y)^T z + y^T q <= sum_j max((M^T y)_j lo_j, (M^T y)_j hi_j) + y^T q,
    which is < 0 (``tests/independent_check.certificate_holds`` verifies this in exact
    arithmetic).

    Two of them (``psd-sum``, ``free-rows``) are infeasible through an exact cancellation,
    y^T M = 0: a relative perturbation of M of size eps makes them feasible with |z| ~ 1/eps,
    so an answer with |z| ~ 1e16 can have a tiny componentwise backward error. They are
    infeasible as stored all the same, and a method must not report them solved."""
    spd = random_spd(8, 3, "mixed")
    M_zero_row = spd.M.copy()
    M_zero_row[5] = 0.0
    q_zero_row, lo_zero_row, hi_zero_row = spd.q.copy(), spd.lo.copy(), spd.hi.copy()
    q_zero_row[5], lo_zero_row[5], hi_zero_row[5] = -1.0, 0.0, INF
    return [
        # M = 0, z >= 0: w = q whatever z is, and w_2 = -0.2 < 0 where a solution needs w_2 >= 0
        # (z_2 at its lower bound 0) or w_2 = 0 (z_2 interior); z_2 has no upper bound.
        _infeasible("infeasible-zero-M", np.zeros((2, 2)), [1.0, -0.2], 0.0, INF, [0.0, 1.0]),
        # the mirror: z <= 1 with no lower bound and w = 0.5 > 0 constant; a solution needs
        # w <= 0 (z at its upper bound) or w = 0.
        _infeasible("infeasible-zero-M-upper", [[0.0]], [0.5], -INF, 1.0, [-1.0]),
        # a free variable whose equation is 0 z + 1 = 0: w = 1 != 0 for every z.
        _infeasible("infeasible-zero-M-free", [[0.0]], [1.0], -INF, INF, [-1.0]),
        # M = -I, q < 0, z >= 0: w_i = -z_i + q_i <= q_i < 0, but w_i >= 0 is needed.
        _infeasible("infeasible-minus-identity", -np.eye(3), [-1.0, -2.0, -0.5], 0.0, INF, [1.0, 1.0, 1.0]),
        # PSD M = [[1, -1], [-1, 1]], q = (-1, -1), z >= 0: w_1 + w_2 = q_1 + q_2 = -2 for every
        # z (the rows of M sum to zero), but a solution needs w_1, w_2 >= 0.
        _infeasible("infeasible-psd-sum", [[1.0, -1.0], [-1.0, 1.0]], [-1.0, -1.0], 0.0, INF, [1.0, 1.0]),
        # a random SPD problem (n = 8, mixed bounds) whose row 5 is zeroed with q_5 = -1 and
        # z_5 in [0, inf): w_5 = -1 < 0 whatever z is, but w_5 >= 0 is needed.
        _infeasible("infeasible-zero-row-in-spd-8", M_zero_row, q_zero_row, lo_zero_row, hi_zero_row, np.eye(8)[5]),
        # z_0, z_1 free, z_2 in [-1, 1], z_3 >= 0. Rows 0 and 1 of M are equal over all columns
        # (so M_ff = [[1, 2], [1, 2]] is singular), q_0 = 0, q_1 = 1: w_1 - w_0 = 1 for every z,
        # but both free rows need w = 0. q_f = (0, 1) is not in the range of M_ff (nor of the
        # whole free rows [M_ff M_fb], spanned by (1, 1)).
        _infeasible(
            "infeasible-free-rows",
            [[1.0, 2.0, 1.0, -1.0], [1.0, 2.0, 1.0, -1.0], [-1.0, -1.0, 2.0, 0.0], [1.0, 1.0, 0.0, 1.0]],
            [0.0, 1.0, 0.5, -1.0],
            [-INF, -INF, -1.0, 0.0],
            [INF, INF, 1.0, INF],
            [1.0, -1.0, 0.0, 0.0],
        ),
        # infeasible through a box: z_0 in [-1, 1], z_1 >= 0, w_1 = z_0 - 2 <= -1 < 0 on the box,
        # but w_1 >= 0 is needed (z_1 has no upper bound).
        _infeasible(
            "infeasible-through-box", [[1.0, 0.0], [1.0, 0.0]], [0.0, -2.0], [-1.0, 0.0], [1.0, INF], [0.0, 1.0]
        ),
    ]


def infeasible_cases(seed: int = 0) -> list[Case]:
    """Problems with NO solution (``feasible=False``): :func:`infeasible_base_cases` and exact
    power-of-two rescalings of each (symmetric, general, rows, uniform 2^-40 and 2^33, columns
    2^-40 and 2^33). A positive diagonal rescaling maps solutions to solutions both ways (see
    :func:`rescale`), so the rescaled problems have none either. A method must never report
    one of these as solved."""
    cases = []
    for index, case in enumerate(infeasible_base_cases()):
        cases += [case] + _rescalings(case, np.random.default_rng([seed, 1000 + index]), symmetric_mild=False)
    return cases
