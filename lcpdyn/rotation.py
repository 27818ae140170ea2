"""Unit quaternions (scalar first, q = [w, x, y, z]) and the Euler angles of Peiret 2016.

Conventions used throughout lcpdyn:

* ``R(q)`` maps body-frame components to world components: a_world = R a_body.
* Angular velocity is a generalized velocity in the *body* frame, omega_b, so the mass matrix
  of a rigid body is constant (diag(m, m, m) and the body inertia tensor).
* Kinematics (the quaternion rows of Gamma in q_dot = Gamma(q) v, Peiret 2016 Sec. "Multibody
  system dynamics"): q_dot = 1/2 q (x) [0, omega_b] = L(q) omega_b.

Functions prefixed ``np_`` are NumPy versions used outside JAX traces.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

__all__ = [
    "rotation_matrix",
    "quaternion_rate_matrix",
    "quaternion_multiply",
    "rotation_vector",
    "rot_x",
    "rot_y",
    "rot_z",
    "np_rotation_matrix",
    "np_quaternion_multiply",
    "np_axis_angle",
    "euler_zxy",
    "np_quaternion_from_matrix",
    "skew",
]


def rotation_matrix(q):
    """R(q) (3 x 3) of a unit quaternion, JAX-traceable."""
    w, x, y, z = q[0], q[1], q[2], q[3]
    return jnp.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def quaternion_multiply(a, b):
    """Quaternion product a b, (w, x, y, z) (JAX)."""
    w1, v1, w2, v2 = a[0], a[1:], b[0], b[1:]
    return jnp.concatenate([jnp.stack([w1 * w2 - v1 @ v2]), w1 * v2 + w2 * v1 + jnp.cross(v1, v2)])


def rotation_vector(r):
    """phi of the unit quaternion r = (w, v) with w >= 0: 2 atan2(|v|, w) v / |v|, smooth at 0
    (JAX)."""
    w, v = r[0], r[1:]
    s2 = v @ v
    small = s2 < 1e-12
    s = jnp.sqrt(jnp.where(small, 1.0, s2))
    factor = jnp.where(small, 2.0 / w * (1.0 - s2 / (3.0 * w * w)), 2.0 * jnp.arctan2(s, w) / s)
    return factor * v


def quaternion_rate_matrix(q):
    """L(q) (4 x 3) with q_dot = L(q) omega_b (omega_b in the body frame)."""
    w, x, y, z = q[0], q[1], q[2], q[3]
    return 0.5 * jnp.array([[-x, -y, -z], [w, -z, y], [z, w, -x], [-y, x, w]])


def rot_x(angle):
    """Rotation by ``angle`` about the x axis (JAX)."""
    c, s = jnp.cos(angle), jnp.sin(angle)
    return jnp.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def rot_y(angle):
    """Rotation by ``angle`` about the y axis (JAX)."""
    c, s = jnp.cos(angle), jnp.sin(angle)
    return jnp.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def rot_z(angle):
    """Rotation by ``angle`` about the z axis (JAX)."""
    c, s = jnp.cos(angle), jnp.sin(angle)
    return jnp.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def skew(a):
    """[a]x such that skew(a) @ b = a x b (JAX)."""
    return jnp.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def np_rotation_matrix(q) -> np.ndarray:
    """R (3, 3) of the unit quaternion q = (w, x, y, z) (NumPy): body frame to world."""
    w, x, y, z = q
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def np_rotation_matrices(quaternions) -> np.ndarray:
    """(nb, 3, 3) rotation matrices of unit quaternions (w, x, y, z), (nb, 4): :func:`np_rotation_matrix`
    over a batch."""
    return np.ascontiguousarray(np.moveaxis(np_rotation_matrix(np.asarray(quaternions, np.float64).T), -1, 0))


def np_quaternion_multiply(a, b) -> np.ndarray:
    """The Hamilton product a b of quaternions (w, x, y, z) (NumPy): the rotation b followed by a."""
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return np.array(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ]
    )


def np_axis_angle(axis, angle: float) -> np.ndarray:
    """The unit quaternion (w, x, y, z) of a turn by ``angle`` (rad) about ``axis`` (any nonzero length)."""
    axis = np.asarray(axis, float)
    axis = axis / np.linalg.norm(axis)
    return np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * axis])


def euler_zxy(psi: float, theta: float, phi: float) -> np.ndarray:
    """Quaternion of R = Rz(psi) Rx(theta) Ry(phi) (Peiret 2016 Table 1: psi about the vertical
    axis, theta about the horizontal diameter, phi about the wheel axis, which is the body y
    axis)."""
    q = np_quaternion_multiply(np_axis_angle([0, 0, 1], psi), np_axis_angle([1, 0, 0], theta))
    return np_quaternion_multiply(q, np_axis_angle([0, 1, 0], phi))


def np_quaternion_from_matrix(R) -> np.ndarray:
    """Unit quaternion (w >= 0) of a rotation matrix (Shepperd's method)."""
    R = np.asarray(R, float)
    trace = np.trace(R)
    if trace > 0:
        s = 2.0 * np.sqrt(1.0 + trace)
        q = [0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s]
    else:
        i = int(np.argmax(np.diag(R)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * np.sqrt(1.0 + R[i, i] - R[j, j] - R[k, k])
        q = np.zeros(4)
        q[0] = (R[k, j] - R[j, k]) / s
        q[1 + i] = 0.25 * s
        q[1 + j] = (R[j, i] + R[i, j]) / s
        q[1 + k] = (R[k, i] + R[i, k]) / s
    q = np.asarray(q, float)
    return q if q[0] >= 0 else -q
