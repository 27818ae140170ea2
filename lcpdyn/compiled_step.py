"""The compiled loop's traced step (:mod:`lcpdyn.compiled_loop`): many steps of a small scene
as one JAX function -- the model's kinematics, the gap terms, the gyroscopic midpoint step, the
friction model's rows (regularized, Peiret 2016 Eqs. 9-20 and 25-27; box; the polygonal cone,
Eqs. 13-16), the bounded MLCP of Eq. (30) solved by Júdice–Pires' basic-set pivoting, the step's
second solve after a friction switch inside it (:mod:`lcpdyn.friction_switches`' tests on the
same numbers), and the position update. :func:`chunk_function` builds it for a structure; the compiled loop, its batches
(:mod:`lcpdyn.batch`) and the differentiable run (:mod:`lcpdyn.differentiable_run`) trace it."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .compiled_laws import continuous_rows, creep_rows
from .compiled_laws import length as _length
from .compiled_pivoting import inverse3 as _inverse3
from .compiled_pivoting import midpoint as _midpoint
from .compiled_pivoting import pivot as _pivot
from .differentiable_coulomb import step_solution
from .friction.polygonal import cone_directions
from .friction_switches import BREAKAWAY
from .rotation import rotation_matrix

__all__ = ["chunk_function"]

CHUNK_STEPS = 512
"""Steps per compiled call (the outputs of a chunk are kept until the host has checked them)."""


def chunk_function(model, layout, static, newton_tolerance, differentiable=False):
    """The traced chunk (module docstring): ``(q, v, steps_done, normal_force, friction_force,
    codes, steps, floats, ints, mu, mu_static, constants) -> (done, per-step outputs...)``.
    ``differentiable``: the step's second solve after a switch inside it is taken in a form
    reverse mode differentiates (the first solve, then a cond on the second) instead of a while loop
    (which runs the solve's program a second time only where a step switched, also under vmap)."""
    nb, r, rigid_box, paper, midpoint, two_coefficients, nonconservative, passes, k, coulomb, continuous, creep = static
    # the laws linearized about the known slip (compiled_laws): two free unknowns per contact acting along D, no stick
    implicit = continuous or creep > 0
    cone = passes > 1
    polygonal = k > 0  # k directions and a slip-speed unknown per contact (Polygonal)
    by_coefficient = rigid_box or polygonal or coulomb  # a switch inside the step changes mu, not a branch
    n = 6 * nb
    body = layout.contact_body  # static: the structure
    columns = 6 * body[:, None] + np.arange(6)
    nf = r * (k + 1) if polygonal else 2 * r
    size = n + r + nf
    if polygonal:  # the constant rows of lcpdyn.friction.polygonal.Polygonal.block
        cos_sin = cone_directions(k)
        coupling = np.zeros((nf, nf))
        for i in range(r):
            coupling[i * k : (i + 1) * k, r * k + i] = 1.0
            coupling[r * k + i, i * k : (i + 1) * k] = -1.0
    max_iterations = 10 * size + 50
    # the facet unknowns beta (compiled_pivoting.pivot's facets): the first r k friction unknowns
    facets = np.zeros(r + nf, bool)
    if polygonal:
        facets[r : r + r * k] = True
    contact_rows = np.arange(r)
    # singular basic systems are solved for their minimum-norm member (compiled_pivoting.pivot): the
    # polygonal cone's sticking contacts (more directions basic than the tangent plane has) and a body
    # on several rigid contacts (a box on its four corners: redundant normal rows, and two sticking
    # contacts' four friction rows on the body's three in-plane motions)
    singular = polygonal or bool(r and np.max(np.bincount(body)) > 1)

    def kinematics(q, v, t, floats, ints):
        return layout.evaluate(model, q, v, t, floats, ints)

    def one_step(q, v, t, kin, normal_force, friction_force, codes, floats, ints, mu, mu_static, constants):
        h, compliance, v_th, beta, threshold, tolerance = (constants[i] for i in range(6))
        force, gap, N_block, D_block, _, _, _, _, world_normal, tangent, _, margin, _, _, f_nc, _ = kin
        _, mass, inertia = layout.bodies(floats)
        vb = v.reshape(nb, 6)[body]  # (r, 6) the velocities of each contact's body
        slip = jnp.einsum("rkj,rj->rk", D_block, vb)  # (r, 2) D v in the base bases
        if two_coefficients:
            mu_now = jnp.where(jnp.sqrt(jnp.sum(slip**2, axis=1)) > threshold, mu, mu_static)
        else:
            mu_now = mu
        predicted = gap + (h * jnp.einsum("rj,rj->r", N_block, vb) if paper else 0.0)
        e_N = jnp.where(predicted >= 0.0, predicted, beta * predicted) / h
        compliance_N = jnp.zeros(r)  # C_N of the compliant contacts (lcpdyn.step_rows.compliant_contact_rows)
        for i, start, order in layout.laws:
            e_i, c_i = _compliant_row(floats[start : start + order], floats[start + order], -predicted[i], h)
            e_N, compliance_N = e_N.at[i].set(e_i), compliance_N.at[i].set(c_i)
        linear = mass[:, None] * v.reshape(nb, 6)[:, :3] + h * force.reshape(nb, 6)[:, :3]
        omega = v.reshape(nb, 6)[:, 3:]
        torque = force.reshape(nb, 6)[:, 3:]
        if midpoint:
            angular, converged = jax.vmap(lambda I, w, tau: _midpoint(I, w, tau, h, newton_tolerance))(
                inertia, omega, torque
            )
            newton_ok = jnp.all(converged)
        else:
            angular = jnp.einsum("bij,bj->bi", inertia, omega) + h * torque
            newton_ok = True
        momentum = jnp.concatenate([linear, angular], axis=1).reshape(n)
        previous = jnp.einsum("rkj,rj->rk", tangent, friction_force)  # the previous force, base basis
        M = jnp.zeros((n, n))
        inverse = jnp.zeros((n, n))
        for b in range(nb):
            M = M.at[6 * b : 6 * b + 3, 6 * b : 6 * b + 3].set(mass[b] * jnp.eye(3))
            M = M.at[6 * b + 3 : 6 * b + 6, 6 * b + 3 : 6 * b + 6].set(inertia[b])
            inverse = inverse.at[6 * b : 6 * b + 3, 6 * b : 6 * b + 3].set(jnp.eye(3) / mass[b])
            inverse = inverse.at[6 * b + 3 : 6 * b + 6, 6 * b + 3 : 6 * b + 6].set(_inverse3(inertia[b]))
        N = jnp.zeros((r, n)).at[contact_rows[:, None], columns].set(N_block)

        def friction_rows(normal_force, basis_force, mu_now, branch, guess):
            """(F_block (r, 2, 6), C, c, bound (2r,), basis, kinetic): lcpdyn.friction.regularized.regularized_block,
            lcpdyn.friction.box.box_block; ``basis_force`` (r, 2) in the base basis (static_bound="cone");
            ``mu_now`` the coefficients applied, ``branch`` and ``guess`` a switch inside the step (as the
            ordinary block takes them: 0 the slip's branch, 1 kinetic about ``guess``, -1 static)."""
            if rigid_box:
                bound = h * mu_now * normal_force
                return (D_block, jnp.zeros(2 * r), jnp.zeros(2 * r), bound.repeat(2),
                        jnp.broadcast_to(jnp.eye(2), (r, 2, 2)), jnp.zeros(r, bool))  # fmt: skip
            if continuous:  # lcpdyn.friction.continuous.Continuous.block, v0 in v_th
                return continuous_rows(slip, D_block, normal_force, mu_now, v_th, h)
            if creep:  # lcpdyn.friction.creep.Creep.block, (f11, f22, f23, min_speed) in the constants
                R = jax.vmap(rotation_matrix)(q.reshape(nb, 7)[body, 3:])  # (r, 3, 3)
                spin_block = jnp.concatenate([jnp.zeros((r, 3)), jnp.einsum("rji,rj->ri", R, world_normal)], axis=1)
                return creep_rows(vb, D_block, spin_block, tangent, normal_force, mu_now, constants[6:9],
                                  constants[9], creep == 2, h)  # fmt: skip
            chosen = jnp.where((branch == 1)[:, None], guess, slip)  # the slip the branch is chosen by
            speed = _length(chosen[:, 0], chosen[:, 1])
            magnitude = _length(previous[:, 0], previous[:, 1])
            kinetic = jnp.where(branch == 0, speed > v_th, (branch == 1) & (speed > 0.0))
            kinetic_bound = mu_now * normal_force
            static_bound = mu_static * normal_force
            safe_speed = jnp.where(kinetic, speed, 1.0)
            safe_magnitude = jnp.where(magnitude > 0.0, magnitude, 1.0)
            s1 = jnp.where(magnitude > 0.0, -previous[:, 0] / safe_magnitude, 1.0)  # static: against lam_T
            s2 = jnp.where(magnitude > 0.0, -previous[:, 1] / safe_magnitude, 0.0)
            target = -magnitude
            second_c = jnp.zeros(r)
            transverse = h * static_bound
            if cone:  # the basis of the force to keep in the cone; the bristle still pulls toward lam_T
                along = _length(basis_force[:, 0], basis_force[:, 1])
                safe_along = jnp.where(along > 0.0, along, 1.0)
                s1 = jnp.where(along > 0.0, -basis_force[:, 0] / safe_along, s1)
                s2 = jnp.where(along > 0.0, -basis_force[:, 1] / safe_along, s2)
                target = previous[:, 0] * s1 + previous[:, 1] * s2
                anchor = -previous[:, 0] * s2 + previous[:, 1] * s1
                second_c = -compliance * h * anchor
                transverse = h * jnp.sqrt(jnp.maximum(static_bound**2 - along**2, 0.0))
            e1 = jnp.where(kinetic, chosen[:, 0] / safe_speed, s1)
            e2 = jnp.where(kinetic, chosen[:, 1] / safe_speed, s2)
            target = jnp.where(kinetic, -kinetic_bound, target)
            second = jnp.where(
                kinetic & (kinetic_bound > 0.0),
                speed / (jnp.where(kinetic_bound > 0.0, kinetic_bound, 1.0) * h),
                compliance,
            )
            C = jnp.stack([jnp.full(r, compliance), second], axis=1).reshape(2 * r)
            c = jnp.stack([-compliance * h * target, jnp.where(kinetic, 0.0, second_c)], axis=1).reshape(2 * r)
            first_bound = h * jnp.where(kinetic, kinetic_bound, static_bound)
            bound = jnp.stack([first_bound, jnp.where(kinetic, first_bound, transverse)], axis=1).reshape(2 * r)
            F_block = jnp.stack(
                [
                    e1[:, None] * D_block[:, 0] + e2[:, None] * D_block[:, 1],
                    -e2[:, None] * D_block[:, 0] + e1[:, None] * D_block[:, 1],
                ],
                axis=1,
            )
            basis = jnp.stack([jnp.stack([e1, -e2], axis=1), jnp.stack([e2, e1], axis=1)], axis=1)
            return F_block, C, c, bound, basis, kinetic

        def all_rows(normal_force, basis_force, mu_now, branch, guess):
            """The friction block of Eq. (30) as the host's FrictionBlock: (F (nf, n), P (nf, r), C
            (nf, nf), c, lo, hi (nf,), kinetic (r,), the unknowns' force in the base basis times h)."""
            if polygonal:  # D_k v+ + e gamma >= 0 _|_ h beta >= 0; mu h lam_N - e^T h beta >= 0 _|_ gamma >= 0
                rows = jnp.einsum("jd,rdc->rjc", cos_sin, D_block)
                at = (contact_rows[:, None, None], np.arange(k)[None, :, None], columns[:, None, :])
                F = jnp.zeros((r, k, n)).at[at].set(rows).reshape(r * k, n)
                F = jnp.concatenate([F, jnp.zeros((r, n))])
                P = jnp.zeros((nf, r)).at[r * k + contact_rows, contact_rows].set(mu_now)
                zero = jnp.zeros(nf)
                return (F, F, P, jnp.asarray(coupling), zero, zero, jnp.full(nf, jnp.inf), jnp.zeros(r, bool),
                        lambda y: y[: r * k].reshape(r, k) @ cos_sin)  # fmt: skip
            F_block, C, c, bound, basis, kinetic = friction_rows(normal_force, basis_force, mu_now, branch, guess)
            at = (contact_rows[:, None, None], np.arange(2)[None, :, None], columns[:, None, :])
            F = jnp.zeros((r, 2, n)).at[at].set(F_block).reshape(2 * r, n)
            # the impulses' directions in the momentum rows: the rows' own, but for the laws linearized
            # about the slip (compiled_laws), whose rows are their linearized laws and whose impulses act along D
            along = jnp.zeros((r, 2, n)).at[at].set(D_block).reshape(2 * r, n) if implicit else F
            return (F, along, jnp.zeros((nf, r)), jnp.diag(C), c, -bound, bound, kinetic,
                    lambda y: jnp.einsum("rij,rj->ri", basis, y.reshape(r, 2)))  # fmt: skip

        def solve(normal_force, basis_force, codes, switch):
            """One pass of Eq. (30): K = [[M, -N^T, -F^T], [N, 0, 0], [F, P, C]], the velocities
            eliminated, v+ = M^-1 (M v* + h f + J^T y), J = [N; F], y the contact unknowns;
            ``switch`` = (mu_now, branch, guess) of :func:`friction_rows`."""
            F, along, P, C, c, low, high, kinetic, in_base_of = all_rows(normal_force, basis_force, *switch)
            K = jnp.block([[M, -N.T, -along.T], [N, jnp.diag(compliance_N), jnp.zeros((r, nf))], [F, P, C]])
            rhs = jnp.concatenate([-momentum, e_N, c])
            lo = jnp.concatenate([jnp.full(n, -jnp.inf), jnp.zeros(r), low])
            hi = jnp.concatenate([jnp.full(n, jnp.inf), jnp.full(r, jnp.inf), high])
            J = jnp.concatenate([N, F])
            response = inverse @ jnp.concatenate([N, along]).T
            free = inverse @ momentum
            W = J @ response + jnp.block([[jnp.diag(compliance_N), jnp.zeros((r, nf))], [P, C]])
            free_rhs = J @ free + rhs[n:]
            sizes = jax.lax.stop_gradient(jnp.abs(J) @ jnp.abs(free))
            y, iterations, solved, _ = _pivot(
                W, free_rhs, lo[n:], hi[n:], codes[n:], sizes, facets, max_iterations, singular
            )
            # the next step (or pass) starts from this answer's active set, exactly as the host derives it
            # from the measured active set (compiled_loop.initial_set): a step's result does not depend on where a
            # chunk begins, and a restored run continues bit for bit
            codes = codes.at[n:].set(jnp.where(y <= lo[n:], -1, jnp.where(y >= hi[n:], 1, 0)).astype(jnp.int8))
            z = jnp.concatenate([free + response @ y, y])
            in_base = in_base_of(z[n + r :]) / h
            return z, codes, iterations, solved, K, rhs, lo, hi, kinetic, in_base

        def exact_cone(mu_now, codes):
            """The exact cone's step (lcpdyn.strategies.coulomb.solve_coulomb): the velocities
            eliminated, u = W r + b with H = (N, t1, t2 rows per contact), W = H M^-1 H^T
            (symmetrized, as the host's), b = H M^-1 (M v* + h f) + e_N on the normal rows, r solved
            on the host and differentiated on its contact modes (lcpdyn.differentiable_coulomb), in
            the outputs of :func:`solve` (its problem entries zero: a run does not measure them)."""
            at = (contact_rows[:, None, None], np.arange(3)[None, :, None], columns[:, None, :])
            rows = jnp.concatenate([N_block[:, None, :], D_block], axis=1)
            H = jnp.zeros((r, 3, n)).at[at].set(rows).reshape(3 * r, n)
            response = inverse @ H.T
            free = inverse @ momentum
            W = H @ response
            W = 0.5 * (W + W.T)
            W = W.at[0::3, 0::3].add(jnp.diag(compliance_N))
            b = (H @ free).at[0::3].add(e_N)
            y = step_solution(W, b, mu_now)
            solved = jnp.all(jnp.isfinite(y))
            y = y.reshape(r, 3)
            z = jnp.concatenate([free + response @ y.reshape(3 * r), y[:, 0], y[:, 1:].reshape(2 * r)])
            blank = jnp.zeros(size)
            return (z, codes, jnp.asarray(0), solved, jnp.zeros((size, size)), blank, blank, blank,
                    jnp.zeros(r, bool), y[:, 1:] / h)  # fmt: skip

        def passes_of(switch, codes):
            """The step's solve with ``switch``: one pass, and the cone's passes
            (lcpdyn.strategies.dense) each from the last pass's force and lam_N, until a pass's force
            settles on the force its basis was built on (basis_settled)."""
            if coulomb:
                return exact_cone(switch[0], codes)
            first = solve(normal_force, previous, codes, switch)
            if not cone:
                return first

            def settled(force, used, z, bounded, kinetic):  # lcpdyn.friction.base.basis_settled
                normal, bounded = jnp.maximum(z[n : n + r] / h, 0.0), jnp.maximum(bounded, 0.0)
                scale = jnp.maximum(jnp.sqrt(jnp.sum(force**2, axis=1)), mu_static * normal)
                moved = jnp.sqrt(jnp.sum((force - used) ** 2, axis=1)) <= tolerance * scale
                held = jnp.abs(normal - bounded) <= tolerance * jnp.maximum(normal, bounded)
                return jnp.all(held) & jnp.all(kinetic | moved)

            def going(carry):
                return (carry[0] < passes) & ~carry[1]

            def one_pass(carry):
                done, _, last, total, all_solved = carry
                z, codes, *_, in_base = last
                bounded = z[n : n + r] / h
                out = solve(bounded, in_base, codes, switch)
                return (
                    done + 1,
                    settled(out[-1], in_base, out[0], bounded, out[-2]),
                    out,
                    total + out[2],
                    all_solved & out[3],
                )

            z, _, iterations, solved, *_, kinetic, in_base = first
            start = (1, settled(in_base, previous, z, normal_force, kinetic), first, iterations, solved)
            _, _, last, iterations, solved = jax.lax.while_loop(going, one_pass, start)
            return (*last[:2], iterations, solved, *last[4:])

        def switches(out, switch):
            """The switches inside the step from its first solve ``out`` (lcpdyn.friction_switches,
            the same tests on the same numbers): (whether to solve again, the second solve's switch).
            Regularized: a kinetic contact whose slip reversed takes the static branch; with
            mu_s > mu_k a static contact that slid beyond its bristle, the kinetic branch about its
            slip. Box, polygonal and exact Coulomb: a contact given mu_s that slid all the same takes mu_k."""
            z, kinetic, in_base = out[0], out[8], out[9]
            end = jnp.einsum("rkj,rj->rk", D_block, z[:n].reshape(nb, 6)[body])  # D v+, base bases
            end_size = _length(end[:, 0], end[:, 1])
            size_of_free = jnp.einsum("rkj,rj->rk", jnp.abs(D_block), jnp.abs(inverse @ momentum).reshape(nb, 6)[body])
            scale = BREAKAWAY * _length(size_of_free[:, 0], size_of_free[:, 1])  # |D| |v*|
            if by_coefficient:
                slid = (switch[0] == mu_static) & (mu_static > mu) & (end_size > scale)
                return jnp.any(slid), (jnp.where(slid, mu, switch[0]), switch[1], switch[2])
            reversed_ = kinetic & (jnp.sum(slip * end, axis=1) <= 0.0)
            sigma = end + (in_base - previous) * (compliance * h)  # D v+ + (lam_T+ - lam_T) / (h k_T)
            slid = ~kinetic & (mu_static > mu) & (_length(sigma[:, 0], sigma[:, 1]) > scale) & (end_size > 0.0)
            branch = jnp.where(slid, 1, jnp.where(reversed_, -1, 0)).astype(jnp.int8)
            return jnp.any(branch != 0), (switch[0], branch, jnp.where(slid[:, None], end, 0.0))

        def solves(passes_of, unswitched, codes):
            """The step's first solve and, after a switch inside it, its second (from the step's own
            start, as the ordinary step's): (the last solve's outputs, iterations of both added;
            the switch it took). One solve in the program, run once or twice by a while loop; for
            reverse mode the first solve and a cond on the second (two solves in the program: a
            scan of two turns, each a cond, cost reverse mode 3.8x the time on the Peiret wheel)."""
            if differentiable:
                first = passes_of(unswitched, codes)
                again, switched = switches(first, unswitched)

                def second():
                    out = passes_of(switched, codes)
                    return (*out[:2], first[2] + out[2], *out[3:]), switched

                return jax.lax.cond(again, second, lambda: (first, unswitched))

            def turn(carry):
                count, _, last, total, switch = carry
                out = passes_of(switch, codes)
                again, switched = switches(out, switch)
                again = again & (count == 0)
                switch = jax.tree_util.tree_map(lambda a, b: jnp.where(again, a, b), switched, switch)
                return count + 1, again, out, total + out[2], switch

            blank = jax.eval_shape(lambda: passes_of(unswitched, codes))
            blank = jax.tree_util.tree_map(lambda a: jnp.zeros(a.shape, a.dtype), blank)
            start = (jnp.asarray(0), jnp.asarray(True), blank, jnp.asarray(0, blank[2].dtype), unswitched)
            carry = jax.lax.while_loop(lambda c: c[1], turn, start)
            _, _, out, total, switch = carry
            return (*out[:2], total, *out[3:]), switch

        unswitched = (mu_now, jnp.zeros(r, jnp.int8), jnp.zeros((r, 2)))
        if (by_coefficient and not two_coefficients) or implicit:  # one coefficient, or no stick: no switch inside
            z, codes, iterations, solved, K, rhs, lo, hi, kinetic, in_base = passes_of(unswitched, codes)
            switch = unswitched
        else:
            (z, codes, iterations, solved, K, rhs, lo, hi, kinetic, in_base), switch = solves(
                passes_of, unswitched, codes
            )
        mu_now = switch[0]
        v_new = z[:n]
        impulse_N = z[n : n + r]
        friction_world = jnp.einsum("rk,rkj->rj", in_base, tangent)
        slip_new = jnp.einsum("rkj,rj->rk", D_block, v_new.reshape(nb, 6)[body])
        slip_world = jnp.einsum("rk,rkj->rj", slip_new, tangent)
        q_new = _update_positions(q, v if paper else v_new, h, nb)
        work = 0.5 * h * f_nc @ (v + v_new) if nonconservative else jnp.asarray(0.0)
        ok = solved & newton_ok & (margin >= 0.0) & jnp.all(jnp.isfinite(rhs))
        outputs = (
            q_new, v_new, impulse_N / h, friction_world, slip_world, gap, kinetic, mu_now, iterations,
            K, rhs, lo, hi, z, work,
        )  # fmt: skip
        return outputs, codes, ok

    def chunk(q, v, steps_done, normal_force, friction_force, codes, steps, floats, ints, mu, mu_static, constants):
        h = constants[0]
        kin = kinematics(q, v, steps_done * h, floats, ints)
        length = CHUNK_STEPS
        blank = (
            jnp.zeros((length, 7 * nb)), jnp.zeros((length, n)), jnp.zeros((length, r)), jnp.zeros((length, r, 3)),
            jnp.zeros((length, r, 3)), jnp.zeros((length, r)), jnp.zeros((length, r), bool), jnp.zeros((length, r)),
            jnp.zeros(length, jnp.int64), jnp.zeros((length, size, size)), jnp.zeros((length, size)),
            jnp.zeros((length, size)), jnp.zeros((length, size)), jnp.zeros((length, size)), jnp.zeros(length),
            jnp.zeros(length), jnp.zeros(length), jnp.zeros(length),
        )  # fmt: skip

        def going(c):
            i, ok = c[0], c[1]
            return ok & (i < steps)

        def body_fn(c):
            i, _, q, v, kin, normal_force, friction_force, codes, buffers = c
            ok, state, row = advance(
                steps_done + i, q, v, kin, normal_force, friction_force, codes, floats, ints, mu, mu_static, constants
            )
            buffers = tuple(b.at[i].set(x) for b, x in zip(buffers, row, strict=True))
            return (i + jnp.where(ok, 1, 0), ok, *state, buffers)

        start = (jnp.asarray(0), jnp.asarray(True), q, v, kin, normal_force, friction_force, codes, blank)
        done, _, _, _, _, _, _, _, buffers = jax.lax.while_loop(going, body_fn, start)
        return (done, *buffers)

    def advance(number, q, v, kin, normal_force, friction_force, codes, floats, ints, mu, mu_static, constants):
        """Step ``number`` (counted from the run's start) from (q, v) with kinematics ``kin``:
        (ok, (q+, v+, kin+, lam_N, lam_T, codes+), the step's row of per-step outputs)."""
        h = constants[0]
        _, mass, inertia = layout.bodies(floats)
        outputs, codes, ok = one_step(
            q, v, number * h, kin, normal_force, friction_force, codes, floats, ints, mu, mu_static, constants
        )
        q_new, v_new, lam_N, lam_T = outputs[0], outputs[1], outputs[2], outputs[3]
        kin_new = kinematics(q_new, v_new, (number + 1) * h, floats, ints)
        vb = v_new.reshape(nb, 6)
        # for the finiteness check: the recorded energy is the host's (kinetic_energies)
        kinetic_energy = 0.5 * (
            jnp.sum(mass * jnp.sum(vb[:, :3] ** 2, axis=1))
            + jnp.sum(vb[:, 3:] * jnp.einsum("bij,bj->bi", inertia, vb[:, 3:]))
        )
        potential, power = kin_new[12], kin_new[15]
        finite = jnp.all(jnp.isfinite(jnp.concatenate([jnp.ravel(x) for x in kin_new])))
        finite = finite & jnp.isfinite(kinetic_energy) & jnp.all(jnp.isfinite(q_new)) & jnp.all(jnp.isfinite(v_new))
        ok = ok & finite & jnp.all(jnp.isfinite(lam_N)) & jnp.all(jnp.isfinite(lam_T))
        row = (*outputs[:-1], kinetic_energy, potential, power, outputs[-1])
        return ok, (q_new, v_new, kin_new, lam_N, lam_T, codes), row

    chunk.kinematics, chunk.advance = kinematics, advance  # the batch's scan (lcpdyn.batch) steps with these
    return chunk


def _compliant_row(coefficients, damping, approach, h):
    """(e_N, C_N) of a compliant contact's row N v+ + C_N h lam_N+ + e_N >= 0 _|_ h lam_N+ >= 0
    (:mod:`lcpdyn.compliance`): the law F = sum k_i a^i (``coefficients``, N/m^i) linearized at the
    predicted ``approach`` a (m; for a <= 0 its linear continuation k_1 a, and no damping),
    C_N = 1 / (h (F' h + c)) and e_N = -F / (F' h + c) -- :func:`lcpdyn.step_rows.compliant_contact_rows`."""
    touching = approach > 0.0
    powers = jnp.where(touching, approach, 0.0) ** jnp.arange(coefficients.shape[0])  # a^(i-1)
    force = jnp.where(touching, approach * (coefficients @ powers), coefficients[0] * approach)
    slope = jnp.where(touching, (jnp.arange(1, coefficients.shape[0] + 1) * coefficients) @ powers, coefficients[0])
    effective = slope * h + jnp.where(touching, damping, 0.0)
    return -force / effective, 1.0 / (h * effective)


def _update_positions(q, v, h, nb):
    """q+ = q + h Gamma(q) v with the quaternions renormalized (:func:`lcpdyn.kernels.update_positions`)."""
    q = q.reshape(nb, 7)
    v = v.reshape(nb, 6)
    position = q[:, :3] + h * v[:, :3]
    w, a, b, c = q[:, 3], q[:, 4], q[:, 5], q[:, 6]
    ox, oy, oz = v[:, 3], v[:, 4], v[:, 5]
    w1 = w + 0.5 * h * (-a * ox - b * oy - c * oz)
    a1 = a + 0.5 * h * (w * ox - c * oy + b * oz)
    b1 = b + 0.5 * h * (c * ox + w * oy - a * oz)
    c1 = c + 0.5 * h * (-b * ox + a * oy + w * oz)
    norm = jnp.sqrt(w1 * w1 + a1 * a1 + b1 * b1 + c1 * c1)
    quaternion = jnp.stack([w1, a1, b1, c1], axis=1) / norm[:, None]
    return jnp.concatenate([position, quaternion], axis=1).reshape(7 * nb)
