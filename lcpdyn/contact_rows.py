"""Velocity rows of body–body contacts: the two-body Jacobian blocks of Peiret 2016 Eqs. (3)-(4).

A contact found by :class:`~lcpdyn.collision.CollisionWorld` joins body a (its first collider)
and body b (its second, or the world) at witness points p_a on a and p_b on b, with the unit
normal n from a to b and gap g = n . (p_b - p_a). Its contact frame is (n, t1, t2), a right-handed
orthonormal basis (:func:`tangent_basis`). The relative velocity of the two bodies' material
points at the contact point p = (p_a + p_b) / 2,

    u = v_b(p) - v_a(p),   v_k(p) = v_k + (R_k omega_k) x (p - x_k) = J_k(p) nu_k,

with nu_k = (v_k, omega_k) the body's 6 velocities (world centre-of-mass velocity, body-frame
angular velocity, as :class:`~lcpdyn.model.Model`) and J_k(p) = [I, -[p - x_k]x R_k], gives the
contact's three rows

    (u_N, u_T1, u_T2) = [n t1 t2]^T u = H_b nu_b - H_a nu_a,   H_k = [n t1 t2]^T J_k(p)   (3 x 6),

u_N > 0 separating and (u_T1, u_T2) the slip (Peiret 2016 Eq. 4: D v). The normal row is the gap
rate (Eq. 3: N v = dPhi/dt for smooth convex shapes) exactly: it equals n . (v_b(p_b) - v_a(p_a)),
the witness points' material velocities, because p - p_b = -g n / 2 and n . (omega x n) = 0. A
reaction r = (r_N, r_T1, r_T2) in the contact frame acts on b as +[n t1 t2] r and on a as its
opposite, both at p: the generalized impulse is H^T r, block-sparse over the two bodies (12
columns per contact instead of 6 nb). Difference from taking each body's witness point for the
tangential rows too: there action and reaction would act g apart and form a couple g n x r_T,
changing the angular momentum by it at every impact taken at a gap; at p the contact impulses
conserve linear and angular momentum exactly.

J_k comes from JAX (``jax.jacfwd`` of the material velocity, as the model's kinematics), vmapped
over the contacts and compiled once per *bucket* of contact counts (the next power of two, at
least 8): the number of contacts changes from step to step, the compiled code does not.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from .compilation import jit
from .precision import float64

__all__ = ["ContactRows", "contact_rows", "tangent_basis", "carried_basis", "COMPILED_BUCKETS"]

COMPILED_BUCKETS: dict[int, object] = {}
"""Compiled row functions by bucket size (contacts padded to the next power of two, >= 8)."""


def tangent_basis(normal: np.ndarray) -> np.ndarray:
    """(k, 2, 3) tangents (t1, t2) with (n, t1, t2) right-handed and orthonormal (t1 x t2 = n)
    (Duff et al. 2017, "Building an orthonormal basis, revisited", JCGT 6(1), Listing 3: no
    singularity, but a jump where n_z changes sign). A contact that persists keeps its previous
    t1 projected instead (:func:`carried_basis`), so its friction directions do not jump."""
    n = np.asarray(normal, np.float64).reshape(-1, 3)
    x, y, z = n[:, 0], n[:, 1], n[:, 2]
    sign = np.where(z >= 0.0, 1.0, -1.0)
    a = -1.0 / (sign + z)
    b = x * y * a
    t1 = np.stack([1.0 + sign * x * x * a, sign * b, -sign * x], axis=1)
    t2 = np.stack([b, sign + y * y * a, -y], axis=1)
    return np.stack([t1, t2], axis=1)


@dataclass(frozen=True)
class ContactRows:
    """The rows of k contacts (module docstring).

    blocks : (k, 2, 3, 6) ``blocks[i, 0] = -H_a``, ``blocks[i, 1] = +H_b``: contact i's rows
        (n, t1, t2) over the 6 velocities of body a and of body b (zeros for the world).
    body : (k, 2) int, bodies a and b (-1: the world).
    frame : (k, 3, 3) rows n, t1, t2 (world).
    """

    blocks: np.ndarray
    body: np.ndarray
    frame: np.ndarray

    def __len__(self) -> int:
        return int(self.body.shape[0])

    def velocity(self, v: np.ndarray) -> np.ndarray:
        """(k, 3) contact-frame relative velocities (u_N, u_T1, u_T2) for the velocities v (6 nb,)."""
        nu = np.asarray(v).reshape(-1, 6)
        out = np.zeros((len(self), 3))
        for side in range(2):
            body = self.body[:, side]
            on = body >= 0
            out[on] += np.einsum("krj,kj->kr", self.blocks[on, side], nu[body[on]])
        return out

    def impulse(self, reaction: np.ndarray, n_bodies: int) -> np.ndarray:
        """The generalized impulse H^T r (6 nb,) of contact-frame reactions ``reaction`` (k, 3)."""
        out = np.zeros((n_bodies, 6))
        for side in range(2):
            body = self.body[:, side]
            on = body >= 0
            np.add.at(out, body[on], np.einsum("krj,kr->kj", self.blocks[on, side], reaction[on]))
        return out.reshape(-1)


def _material_velocity(nu, point, x, R):
    """v_k(p) = v + (R omega_b) x (p - x) of body velocities nu = (v, omega_b)."""
    return nu[:3] + jnp.cross(R @ nu[3:], point - x)


def _rows(point_a, point_b, frame, x_a, R_a, x_b, R_b, world_b):
    jacobian = jax.jacfwd(_material_velocity)
    zero = jnp.zeros(6)

    def one(pa, pb, f, xa, Ra, xb, Rb, world):
        Ha = f @ jacobian(zero, pa, xa, Ra)
        Hb = f @ jacobian(zero, pb, xb, Rb)
        return jnp.stack([-Ha, jnp.where(world, 0.0, Hb)])

    return jax.vmap(one)(point_a, point_b, frame, x_a, R_a, x_b, R_b, world_b)


def _compiled(bucket: int):
    entry = COMPILED_BUCKETS.get(bucket)
    if entry is None:
        with float64():
            vec = jax.ShapeDtypeStruct((bucket, 3), jnp.float64)
            mat = jax.ShapeDtypeStruct((bucket, 3, 3), jnp.float64)
            flag = jax.ShapeDtypeStruct((bucket,), jnp.bool_)
            entry = jit(_rows).lower(vec, vec, mat, vec, mat, vec, mat, flag).compile()
        COMPILED_BUCKETS[bucket] = entry
    return entry


def _bucket(k: int) -> int:
    return max(8, 1 << (k - 1).bit_length())


def carried_basis(normal: np.ndarray, previous_t1: np.ndarray) -> np.ndarray:
    """(k, 2, 3) tangents (t1, t2) for the normals ``normal`` (k, 3) with t1 the previous t1
    projected onto the tangent plane (Duff's basis where the projection degenerates)."""
    n = np.asarray(normal, np.float64)
    t1 = previous_t1 - n * np.einsum("kj,kj->k", previous_t1, n)[:, None]
    length = np.linalg.norm(t1, axis=1)
    out = tangent_basis(n)
    ok = length > 0.5
    t1 = t1[ok] / length[ok, None]
    out[ok, 0] = t1
    out[ok, 1] = np.cross(n[ok], t1)
    return out


def contact_rows(contacts, positions: np.ndarray, rotations: np.ndarray, tangent=None) -> ContactRows:
    """The rows of every contact of ``contacts`` (a :class:`~lcpdyn.collision.Contacts`) at the
    body poses ``positions`` (nb, 3) and ``rotations`` (nb, 3, 3) the contacts were found at;
    ``tangent`` (k, 2, 3) the contact tangents (default :func:`tangent_basis` of the normals)."""
    k = len(contacts)
    body = np.asarray(contacts.body, np.int64)
    tangent = tangent_basis(contacts.normal) if tangent is None else np.asarray(tangent, np.float64)
    frame = np.concatenate([np.asarray(contacts.normal, np.float64)[:, None], tangent], axis=1)
    if k == 0:
        return ContactRows(np.zeros((0, 2, 3, 6)), body.reshape(0, 2), frame.reshape(0, 3, 3))
    bucket = _bucket(k)
    world = body[:, 1] < 0
    b = np.where(world, 0, body[:, 1])
    point = 0.5 * (np.asarray(contacts.point_a) + np.asarray(contacts.point_b))
    args = [point, point, frame, positions[body[:, 0]], rotations[body[:, 0]]]
    args += [positions[b], rotations[b]]

    def pad(a):
        a = np.ascontiguousarray(a, np.float64)
        out = np.zeros((bucket, *a.shape[1:]))
        out[:k] = a
        if a.ndim == 3:
            out[k:] = np.eye(3)
        return out

    padded = [pad(a) for a in args]
    flags = np.ones(bucket, bool)
    flags[:k] = world
    with float64():
        blocks = np.asarray(_compiled(bucket)(*padded, flags))[:k]
    return ContactRows(blocks, body, frame)
