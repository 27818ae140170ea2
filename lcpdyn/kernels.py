"""Numba kernels of the time stepper (:mod:`lcpdyn.stepper`): gap terms, matrix assembly of
Peiret 2016 Eq. (30), the fused assemble-and-solve step of the regularized and box models,
position update (Eq. 7), and recording helpers. Each is a plain loop over small arrays; they
exist because NumPy's per-call overhead (~1 us per operation) dominates at the one-contact size.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from solvers.judice_pires import pivot_and_measure

from .friction.base import row_buffers
from .friction.box import box_block
from .friction.regularized import regularized_block


def readonly(array):
    """A read-only view of ``array`` (no copy). Numba compiles a kernel once per argument type, and
    a read-only array (what JAX hands back) is another type than a writable one: a caller that
    passes either gets a second compilation of the same kernel (~5 s for :func:`fused_step`) on
    every fresh installation. Passing read-only views always keeps it to one."""
    view = np.asarray(array).view()
    view.flags.writeable = False
    return view


@njit(cache=True)
def gap_terms(gap, N, v, h, paper, beta):
    """e_N of the gap rows (module docstring): Phi~/h, or beta Phi~/h when penetrating."""
    out = np.empty(gap.shape[0])
    for i in range(gap.shape[0]):
        predicted = gap[i]
        if paper:
            for j in range(v.shape[0]):
                predicted += h * N[i, j] * v[j]
        out[i] = (predicted if predicted >= 0.0 else beta * predicted) / h
    return out


@njit(cache=True)
def block_rows(blocks, body, v):
    """(r, k) products of per-contact row blocks (r, k, 6) with the velocities of each contact's
    body: N v or D v without the dense (r, n) matrices."""
    r, k = blocks.shape[0], blocks.shape[1]
    out = np.empty((r, k))
    for i in range(r):
        o = 6 * body[i]
        for a in range(k):
            s = 0.0
            for j in range(6):
                s += blocks[i, a, j] * v[o + j]
            out[i, a] = s
    return out


@njit(cache=True)
def gap_terms_blocks(gap, N_block, body, v, h, paper, beta):
    """:func:`gap_terms` with N given by its per-contact blocks."""
    out = np.empty(gap.shape[0])
    for i in range(gap.shape[0]):
        predicted = gap[i]
        if paper:
            o = 6 * body[i]
            for j in range(6):
                predicted += h * N_block[i, j] * v[o + j]
        out[i] = (predicted if predicted >= 0.0 else beta * predicted) / h
    return out


@njit(cache=True)
def slip_world_blocks(D_block, body, v, tangent):
    """:func:`slip_world` with D given by its per-contact blocks (r, 2, 6)."""
    r = tangent.shape[0]
    out = np.empty((r, 3))
    for i in range(r):
        o = 6 * body[i]
        s1 = 0.0
        s2 = 0.0
        for j in range(6):
            s1 += D_block[i, 0, j] * v[o + j]
            s2 += D_block[i, 1, j] * v[o + j]
        for j in range(3):
            out[i, j] = s1 * tangent[i, 0, j] + s2 * tangent[i, 1, j]
    return out


@njit(cache=True)
def slip_world(D, v, tangent):
    """World slip velocity (r, 3) of the material contact points: (D v) in (t1, t2)."""
    r = tangent.shape[0]
    out = np.empty((r, 3))
    for i in range(r):
        s1 = 0.0
        s2 = 0.0
        for j in range(v.shape[0]):
            s1 += D[2 * i, j] * v[j]
            s2 += D[2 * i + 1, j] * v[j]
        for j in range(3):
            out[i, j] = s1 * tangent[i, 0, j] + s2 * tangent[i, 1, j]
    return out


@njit(cache=True)
def fill_matrix(K, M, A, N, F, G, C, P, CN, CA):
    """K = [[M, -A^T, -N^T, -G^T], [A, diag(CA), 0, 0], [N, 0, diag(CN), 0], [F, 0, P, C]] into a
    zeroed K (CN: normal compliance of compliant contacts, CA: compliance of compliant bilateral
    rows; 0 for rigid ones)."""
    n, m, r, nf = M.shape[0], A.shape[0], N.shape[0], F.shape[0]
    b, c = n + m, n + m + r
    for i in range(m):
        K[n + i, n + i] = CA[i]
    for i in range(r):
        K[b + i, b + i] = CN[i]
    for i in range(n):
        for j in range(n):
            K[i, j] = M[i, j]
        for j in range(m):
            K[i, n + j] = -A[j, i]
            K[n + j, i] = A[j, i]
        for j in range(r):
            K[i, b + j] = -N[j, i]
            K[b + j, i] = N[j, i]
        for j in range(nf):
            K[i, c + j] = -G[j, i]
            K[c + j, i] = F[j, i]
    for i in range(nf):
        for j in range(r):
            K[c + i, b + j] = P[i, j]
        for j in range(nf):
            K[c + i, c + j] = C[i, j]


@njit(cache=True)
def update_positions(q, v, h):
    """q+ = q + h Gamma(q) v (Eq. 7 with the chosen v), quaternions renormalized; a new array."""
    q = q.copy()
    nb = q.shape[0] // 7
    for i in range(nb):
        for j in range(3):
            q[7 * i + j] += h * v[6 * i + j]
        w, a, b, c = q[7 * i + 3], q[7 * i + 4], q[7 * i + 5], q[7 * i + 6]
        ox, oy, oz = v[6 * i + 3], v[6 * i + 4], v[6 * i + 5]
        w1 = w + 0.5 * h * (-a * ox - b * oy - c * oz)
        a1 = a + 0.5 * h * (w * ox - c * oy + b * oz)
        b1 = b + 0.5 * h * (c * ox + w * oy - a * oz)
        c1 = c + 0.5 * h * (-b * ox + a * oy + w * oz)
        norm = math.sqrt(w1 * w1 + a1 * a1 + b1 * b1 + c1 * c1)
        q[7 * i + 3], q[7 * i + 4], q[7 * i + 5], q[7 * i + 6] = w1 / norm, a1 / norm, b1 / norm, c1 / norm
    return q


@njit(cache=True)
def store_bodies(q, v, position, quaternion, velocity, angular_velocity):
    """Per body: position, quaternion, velocity and the *world* angular velocity R omega_b."""
    for b in range(position.shape[0]):
        w, x, y, z = q[7 * b + 3], q[7 * b + 4], q[7 * b + 5], q[7 * b + 6]
        for j in range(3):
            position[b, j] = q[7 * b + j]
            velocity[b, j] = v[6 * b + j]
        for j in range(4):
            quaternion[b, j] = q[7 * b + 3 + j]
        wx, wy, wz = _rotated(w, x, y, z, v[6 * b + 3], v[6 * b + 4], v[6 * b + 5])
        angular_velocity[b, 0], angular_velocity[b, 1], angular_velocity[b, 2] = wx, wy, wz


@njit(cache=True, inline="always")
def _rotated(w, x, y, z, ox, oy, oz):
    """R(w, x, y, z) (ox, oy, oz) for a unit quaternion: the world angular velocity."""
    return (
        (1 - 2 * (y * y + z * z)) * ox + 2 * (x * y - w * z) * oy + 2 * (x * z + w * y) * oz,
        2 * (x * y + w * z) * ox + (1 - 2 * (x * x + z * z)) * oy + 2 * (y * z - w * x) * oz,
        2 * (x * z - w * y) * ox + 2 * (y * z + w * x) * oy + (1 - 2 * (x * x + y * y)) * oz,
    )


def world_angular_velocity(quaternion, omega):
    """World angular velocities R(quaternion) omega of stacked bodies (..., 3) -- what
    :func:`store_bodies` records, for many rows at once (the same formula, in a compiled loop)."""
    quaternion = np.ascontiguousarray(quaternion, dtype=np.float64)
    omega = np.ascontiguousarray(omega, dtype=np.float64)
    out = _world_angular_velocity(quaternion.reshape(-1, 4), omega.reshape(-1, 3))
    return out.reshape(omega.shape)


@njit(cache=True)
def _world_angular_velocity(quaternion, omega):
    out = np.empty(omega.shape)
    for b in range(omega.shape[0]):
        q = quaternion[b]
        out[b] = _rotated(q[0], q[1], q[2], q[3], omega[b, 0], omega[b, 1], omega[b, 2])
    return out


@njit(cache=True)
def bounded_vectors(rhs, u, e_N, c, lo_friction, hi_friction, lo_rows, hi_rows):
    """q, lo, hi of Eq. (30): (-(M v + h f), -u, e_N, c) with v+ free, h lam in
    [lo_rows, hi_rows] (-inf, inf for equality rows; :mod:`lcpdyn.bounded_rows`), h lam_N >= 0
    and the friction unknowns in [lo_friction, hi_friction]."""
    n, m, r, nf = rhs.shape[0], u.shape[0], e_N.shape[0], c.shape[0]
    size = n + m + r + nf
    q = np.empty(size)
    lo = np.empty(size)
    hi = np.empty(size)
    for i in range(n):
        q[i], lo[i], hi[i] = -rhs[i], -np.inf, np.inf
    for i in range(m):
        q[n + i], lo[n + i], hi[n + i] = -u[i], lo_rows[i], hi_rows[i]
    for i in range(r):
        q[n + m + i], lo[n + m + i], hi[n + m + i] = e_N[i], 0.0, np.inf
    for i in range(nf):
        q[n + m + r + i], lo[n + m + r + i], hi[n + m + r + i] = c[i], lo_friction[i], hi_friction[i]
    return q, lo, hi


@njit(cache=True)
def fused_step(
    M,
    A,
    N,
    D,
    tangent,
    rhs,
    u,
    e_N,
    CN,
    CA,
    v,
    h,
    mu,
    mu_static,
    normal_force,
    friction_force,
    compliance,
    v_th,
    box,
    cone,
    basis_force,
    branch,
    guess,
    warm,
    use_warm,
    max_iterations,
    max_stall,
    pivot_tolerance,
):
    """Friction block, Eq. (30) matrix and one Júdice–Pires run with the framework's residual,
    in one compiled call (the regularized or box model with ``judice-pires``; ``cone``, the
    regularized model's static branch in the cone about ``basis_force`` (r, 3)). Returns
    (K, q, lo, hi, basis, kinetic, z, w, active_set, code, iterations, relative, worst, residual, violation)
    with the outputs of :func:`solvers.judice_pires.pivot_and_measure`."""
    n, m, r = M.shape[0], A.shape[0], N.shape[0]
    nf = 2 * r
    F, C, c, bound, basis, kinetic = row_buffers(r, n)
    if box:
        box_block(D, h, mu, normal_force, F, C, c, bound, basis, kinetic)
    else:
        regularized_block(
            D,
            v,
            h,
            mu,
            mu_static,
            normal_force,
            friction_force,
            tangent,
            compliance,
            v_th,
            F,
            C,
            c,
            bound,
            basis,
            kinetic,
            cone,
            basis_force,
            branch,
            guess,
        )
    size = n + m + r + nf
    K = np.zeros((size, size))
    compliance_block = np.zeros((nf, nf))
    for i in range(nf):
        compliance_block[i, i] = C[i]
    fill_matrix(K, M, A, N, F, F, compliance_block, np.zeros((nf, r)), CN, CA)
    free = np.full(u.shape[0], np.inf)
    q, lo, hi = bounded_vectors(rhs, u, e_N, c, -bound, bound, -free, free)
    z, w, active_set, code, iterations, relative, worst, residual, violation = pivot_and_measure(
        K, q, lo, hi, warm, use_warm, max_iterations, max_stall, pivot_tolerance
    )
    return K, q, lo, hi, basis, kinetic, z, w, active_set, code, iterations, relative, worst, residual, violation


@njit(cache=True)
def _midpoint_residual(I, x, target, h, F):
    """F = 2 I x + h x x I x - target (the gyroscopic midpoint equation); returns |F|."""
    Ix0 = I[0, 0] * x[0] + I[0, 1] * x[1] + I[0, 2] * x[2]
    Ix1 = I[1, 0] * x[0] + I[1, 1] * x[1] + I[1, 2] * x[2]
    Ix2 = I[2, 0] * x[0] + I[2, 1] * x[1] + I[2, 2] * x[2]
    F[0] = 2.0 * Ix0 + h * (x[1] * Ix2 - x[2] * Ix1) - target[0]
    F[1] = 2.0 * Ix1 + h * (x[2] * Ix0 - x[0] * Ix2) - target[1]
    F[2] = 2.0 * Ix2 + h * (x[0] * Ix1 - x[1] * Ix0) - target[2]
    return math.sqrt(F[0] * F[0] + F[1] * F[1] + F[2] * F[2])


@njit(cache=True)
def _midpoint_newton(I, x, target, h, tolerance, max_iterations, J, trial, dx, F, G):
    """Newton's method with backtracking on the midpoint equation from the given x (updated in
    place); returns the final relative residual |F| / (|target| (1 + h |x0|))."""
    scale = math.sqrt(target[0] ** 2 + target[1] ** 2 + target[2] ** 2) * (
        1.0 + h * math.sqrt(x[0] ** 2 + x[1] ** 2 + x[2] ** 2)
    )
    norm = _midpoint_residual(I, x, target, h, F)
    for _ in range(max_iterations):
        if not norm > tolerance * scale:  # converged (or NaN: the caller's finiteness check names it)
            break
        Ix0 = I[0, 0] * x[0] + I[0, 1] * x[1] + I[0, 2] * x[2]
        Ix1 = I[1, 0] * x[0] + I[1, 1] * x[1] + I[1, 2] * x[2]
        Ix2 = I[2, 0] * x[0] + I[2, 1] * x[1] + I[2, 2] * x[2]
        for c in range(3):  # J = 2 I + h (skew(x) I - skew(I x))
            J[0, c] = 2.0 * I[0, c] + h * (x[1] * I[2, c] - x[2] * I[1, c])
            J[1, c] = 2.0 * I[1, c] + h * (x[2] * I[0, c] - x[0] * I[2, c])
            J[2, c] = 2.0 * I[2, c] + h * (x[0] * I[1, c] - x[1] * I[0, c])
        J[0, 1] += h * Ix2
        J[0, 2] -= h * Ix1
        J[1, 0] -= h * Ix2
        J[1, 2] += h * Ix0
        J[2, 0] += h * Ix1
        J[2, 1] -= h * Ix0
        det = (
            J[0, 0] * (J[1, 1] * J[2, 2] - J[1, 2] * J[2, 1])
            - J[0, 1] * (J[1, 0] * J[2, 2] - J[1, 2] * J[2, 0])
            + J[0, 2] * (J[1, 0] * J[2, 1] - J[1, 1] * J[2, 0])
        )
        if det == 0.0 or not math.isfinite(det):
            break
        dx[0] = (
            F[0] * (J[1, 1] * J[2, 2] - J[1, 2] * J[2, 1])
            - J[0, 1] * (F[1] * J[2, 2] - J[1, 2] * F[2])
            + J[0, 2] * (F[1] * J[2, 1] - J[1, 1] * F[2])
        ) / det
        dx[1] = (
            J[0, 0] * (F[1] * J[2, 2] - J[1, 2] * F[2])
            - F[0] * (J[1, 0] * J[2, 2] - J[1, 2] * J[2, 0])
            + J[0, 2] * (J[1, 0] * F[2] - F[1] * J[2, 0])
        ) / det
        dx[2] = (
            J[0, 0] * (J[1, 1] * F[2] - F[1] * J[2, 1])
            - J[0, 1] * (J[1, 0] * F[2] - F[1] * J[2, 0])
            + F[0] * (J[1, 0] * J[2, 1] - J[1, 1] * J[2, 0])
        ) / det
        step = 1.0
        while True:  # backtracking: the first step length that lowers |F|
            for r in range(3):
                trial[r] = x[r] - step * dx[r]
            trial_norm = _midpoint_residual(I, trial, target, h, G)
            if trial_norm < norm or step < 1e-3:
                break
            step *= 0.5
        for r in range(3):
            x[r] = trial[r]
            F[r] = G[r]
        norm = trial_norm
    return norm / scale


@njit(cache=True)
def kinetic_energy(mass, inertia, v):
    """v . M v / 2 with the block-diagonal M = diag(m_b I3, I_b) of the bodies (J)."""
    total = 0.0
    for b in range(mass.shape[0]):
        o = 6 * b
        total += mass[b] * (v[o] * v[o] + v[o + 1] * v[o + 1] + v[o + 2] * v[o + 2])
        for r in range(3):
            s = 0.0
            for c in range(3):
                s += inertia[b, r, c] * v[o + 3 + c]
            total += v[o + 3 + r] * s
    return 0.5 * total


@njit(cache=True)
def momentum(mass, inertia, v):
    """M v (n,) with the block-diagonal M of the bodies."""
    out = np.empty(v.shape[0])
    for b in range(mass.shape[0]):
        o = 6 * b
        for r in range(3):
            out[o + r] = mass[b] * v[o + r]
            s = 0.0
            for c in range(3):
                s += inertia[b, r, c] * v[o + 3 + c]
            out[o + 3 + r] = s
    return out


def free_velocity(mass, inertia, rhs):
    """M^-1 rhs (n,) with the block-diagonal M of the bodies (per body: rhs / m and I^-1 rhs)."""
    out = rhs.reshape(-1, 6).copy()
    out[:, :3] /= mass[:, None]
    try:
        out[:, 3:] = np.linalg.solve(inertia, out[:, 3:, None])[..., 0]
    except np.linalg.LinAlgError:  # a singular inertia (a point mass): the rotations it can take
        out[:, 3:] = np.einsum("bij,bj->bi", np.linalg.pinv(inertia), out[:, 3:])
    return out.reshape(-1)


GYROSCOPIC_NEWTON_TOLERANCE = 1e-13
"""The relative residual at which :func:`gyroscopic_midpoint`'s Newton iteration stops (every
stepper and the compiled loop use this one value)."""
GYROSCOPIC_NEWTON_ITERATIONS = 50
"""Its iteration limit; a step that does not reach the tolerance within it is an error."""


@njit(cache=True)
def gyroscopic_midpoint(mass, inertia, v, force, h, tolerance, max_iterations):
    """rhs = M v* + h f_app of the step with the gyroscopic term treated by the implicit
    midpoint rule (docs/theory/step.md, "The gyroscopic term") instead of the explicit
    c = omega x I omega that ``force`` = f_app - c holds.

    Per body, with I = ``inertia[b]`` (the body's block of M; ``mass`` the translational ones)
    and omega its body-frame angular velocity,
    the free Euler equations I omega_dot = -omega x I omega are stepped by

        I (omega* - omega) = -h x x I x,   x = (omega + omega*) / 2,

    solved by Newton's method with backtracking on F(x) = 2 I x + h x x I x - 2 I omega = 0
    (Jacobian 2 I + h (skew(x) I - skew(I x)), Cramer's rule) from x = omega; should that stall
    (h |omega| of order 10 and more), by continuation in h (K = ceil(h |omega|) + 1 stages
    h k / K, each started from the last). Dotting the equation with x shows
    omega* . I omega* = omega . I omega, and with I x that |I omega*| = |I omega|, whatever h. The
    rotational rows of the right-hand side become I omega* + h (tau - c) + h c = I omega* + h tau.
    The residual is relative to |2 I omega| (1 + h |omega|) (the rounding of the h x x I x term).
    Returns (rhs, worst relative residual over the bodies, that body's index or -1) -- the
    caller judges it against ``tolerance``."""
    n = v.shape[0]
    rhs = momentum(mass, inertia, v)
    for i in range(n):
        rhs[i] += h * force[i]
    worst = 0.0
    worst_body = -1
    I = np.empty((3, 3))
    J = np.empty((3, 3))
    x = np.empty(3)
    trial = np.empty(3)
    dx = np.empty(3)
    target = np.empty(3)
    F = np.empty(3)
    G = np.empty(3)
    for b in range(n // 6):
        o = 6 * b + 3
        for r in range(3):
            for c in range(3):
                I[r, c] = inertia[b, r, c]
            x[r] = v[o + r]
        for r in range(3):
            target[r] = 2.0 * (I[r, 0] * x[0] + I[r, 1] * x[1] + I[r, 2] * x[2])
        if target[0] == 0.0 and target[1] == 0.0 and target[2] == 0.0:  # not rotating: omega* = 0
            continue
        # the explicit c = omega x I omega, which force holds with a minus sign
        c0 = 0.5 * (x[1] * target[2] - x[2] * target[1])
        c1 = 0.5 * (x[2] * target[0] - x[0] * target[2])
        c2 = 0.5 * (x[0] * target[1] - x[1] * target[0])
        relative = _midpoint_newton(I, x, target, h, tolerance, max_iterations, J, trial, dx, F, G)
        if not relative <= tolerance:  # continuation in h from omega
            speed = math.sqrt(v[o] ** 2 + v[o + 1] ** 2 + v[o + 2] ** 2)
            if math.isfinite(speed):
                stages = int(math.ceil(h * speed)) + 1
                for r in range(3):
                    x[r] = v[o + r]
                for k in range(1, stages + 1):
                    relative = _midpoint_newton(
                        I, x, target, h * k / stages, tolerance, max_iterations, J, trial, dx, F, G
                    )
        if not relative <= worst:
            worst, worst_body = relative, b
        for r in range(3):  # omega* = 2 x - omega; rows I omega* + h tau
            star = I[r, 0] * (2.0 * x[0] - v[o]) + I[r, 1] * (2.0 * x[1] - v[o + 1]) + I[r, 2] * (2.0 * x[2] - v[o + 2])
            rhs[o + r] = star + h * force[o + r]
        rhs[o] += h * c0
        rhs[o + 1] += h * c1
        rhs[o + 2] += h * c2
    return rhs, worst, worst_body


@njit(cache=True)
def first_nonfinite(a):
    """Index of the first NaN or infinite entry of the 1-D array ``a``, or -1 (the stepper's
    per-step health check: one pass, no temporaries)."""
    for i in range(a.shape[0]):
        if not math.isfinite(a[i]):
            return i
    return -1


@njit(cache=True)
def all_finite(a, b, c, d):
    """Whether the four 1-D arrays hold only finite numbers (one call for the common case; the
    caller locates the culprit with :func:`first_nonfinite` when not)."""
    for x in (a, b, c, d):
        for i in range(x.shape[0]):
            if not math.isfinite(x[i]):
                return False
    return True
