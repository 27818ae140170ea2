"""Bodies that touch bodies in the one step (colliders in the model; lcpdyn.detected_contacts,
lcpdyn.contact_rows, lcpdyn.shape_pairs): the two-body contact rows against their closed form and
finite differences, the closed-form narrow phase against coal, impacts against Newton's law in
closed form (momentum, kinetic energy, friction that sticks and that slides), stacks that must
stand still, Newton's cradle, the sparse path of large islands, and bad input named."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.sparse import block_diag

from lcpdyn import Model, RigidBody, Simulation
from lcpdyn.collision import Box, Collider, CollisionWorld, HalfSpace, Sphere
from lcpdyn.contact_rows import carried_basis, contact_rows, tangent_basis
from lcpdyn.detected_contacts import ContactProperties
from lcpdyn.friction import make_friction
from lcpdyn.stepper import SimulationError
from lcpdyn.strategies.sparse_island import contact_friction as _contact_friction

pytestmark = pytest.mark.filterwarnings("ignore::lcpdyn.stepper.EnergyWarning")

BOUNDED = ("regularized", "box", "polygonal", "continuous")


def _rotation(axis, angle):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


def _skew(a):
    return np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])


def _sphere_body(name, mass, radius, position, velocity=(0, 0, 0), angular_velocity=(0, 0, 0)):
    inertia = 0.4 * mass * radius**2
    return RigidBody(name, mass, (inertia,) * 3, position, velocity=velocity, angular_velocity=angular_velocity)


def _box_body(name, mass, size, position, orientation=(1, 0, 0, 0)):
    a, b, c = size
    inertia = (mass * (b * b + c * c) / 12, mass * (a * a + c * c) / 12, mass * (a * a + b * b) / 12)
    return RigidBody(name, mass, inertia, position, orientation)


def _simulation(model, colliders, friction="regularized", dt=1e-3, *, margin, contact=None, pairs=None, **options):
    """The one step of ``model`` with ``colliders`` added, the detection ``margin`` and the contact
    properties (default and per pair)."""
    for collider in colliders:
        model.add_collider(collider)
    model.set_collisions(margin=margin, contact=contact or ContactProperties(), pairs=pairs or {})
    return Simulation(model, friction, dt, **options)


def _still(sim, run):
    """The largest change of any body's position and quaternion over the run, from the start."""
    q0 = sim.model.initial_state()[0].reshape(-1, 7)
    return max(np.abs(run.position - q0[:, :3]).max(), np.abs(run.quaternion - q0[:, 3:]).max())


def _penetration(run) -> float:
    """The deepest penetration any step started from (m, >= 0)."""
    return max(0.0, -float(run.detected_gap.min())) if run.detected_gap.size else 0.0


# --- rows --------------------------------------------------------------------------------------


def test_tangent_bases_are_orthonormal_right_handed_and_carried(coal):
    rng = np.random.default_rng(0)
    n = rng.normal(size=(200, 3))
    n[:3] = [[0, 0, 1], [0, 0, -1], [1, 0, 0]]
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    t = tangent_basis(n)
    frame = np.concatenate([n[:, None], t], axis=1)
    assert np.abs(np.einsum("kij,klj->kil", frame, frame) - np.eye(3)).max() < 1e-14
    assert np.abs(np.cross(t[:, 0], t[:, 1]) - n).max() < 1e-14
    # a slightly turned normal keeps t1 (projected), where Duff's basis would jump across n_z = 0
    n0 = np.array([[1.0, 0.0, 1e-12]])
    n1 = np.array([[1.0, 0.0, -1e-12]])
    carried = carried_basis(n1, tangent_basis(n0)[:, 0])
    assert np.abs(carried[0, 0] - tangent_basis(n0)[0, 0]).max() < 1e-11
    assert np.abs(tangent_basis(n1)[0, 0] - tangent_basis(n0)[0, 0]).max() > 1.0  # the jump avoided


def test_contact_rows_are_the_material_velocity_jacobians(coal):
    """H_b nu_b - H_a nu_a = [n t1 t2]^T (v_b(p_b) - v_a(p_a)) with v_k(p) = v_k + (R_k w_k) x
    (p - x_k): the blocks against the closed form J_k = [I, -[p - x_k]x R_k], and the relative
    velocity against a finite difference of the witness points carried by the bodies."""
    rng = np.random.default_rng(1)
    bodies = [_sphere_body(f"s{i}", 1.0, 0.3, (0.5 * i, 0.1 * i, 0.0)) for i in range(3)]
    colliders = [Collider(b, Sphere(0.3)) for b in bodies] + [Collider(None, HalfSpace())]
    world = CollisionWorld(colliders, bodies, margin=1.0)
    positions = np.array([[0, 0, 0.35], [0.55, 0.05, 0.3], [0.2, 0.5, 0.32]])
    rotations = np.stack([_rotation(rng.normal(size=3), rng.uniform(0, 3)) for _ in range(3)])
    contacts = world.detect(positions, rotations)
    assert {tuple(b) for b in contacts.body} >= {(0, 1), (0, -1), (1, -1), (0, 2)}
    rows = contact_rows(contacts, positions, rotations)
    for i in range(len(contacts)):
        for side in range(2):
            point = 0.5 * (contacts.point_a[i] + contacts.point_b[i])
            body = contacts.body[i, side]
            if body < 0:
                assert not rows.blocks[i, side].any()
                continue
            J = np.hstack([np.eye(3), -_skew(point - positions[body]) @ rotations[body]])
            expected = (1.0 if side else -1.0) * rows.frame[i] @ J
            assert np.abs(rows.blocks[i, side] - expected).max() < 1e-14
    # finite differences: the bodies moved for dt with velocities nu; the material points at p
    # give all three rows, and the normal row is also the rate of the gap found by detection
    nu = rng.normal(size=(3, 6))
    dt = 1e-7
    u = rows.velocity(nu.reshape(-1))
    moved_R = np.stack([_rotation(R @ w, dt * np.linalg.norm(w)) @ R for R, w in zip(rotations, nu[:, 3:])])
    moved_x = positions + dt * nu[:, :3]
    later = world.detect(moved_x, moved_R)
    for i in range(len(contacts)):
        moved = []
        point = 0.5 * (contacts.point_a[i] + contacts.point_b[i])
        for side in range(2):
            body = contacts.body[i, side]
            if body < 0:
                moved.append(point)
                continue
            moved.append(moved_x[body] + moved_R[body] @ rotations[body].T @ (point - positions[body]))
        rate = (moved[1] - moved[0]) / dt
        assert np.abs(rows.frame[i] @ rate - u[i]).max() < 1e-5 * (1 + np.abs(u[i]).max())
        same = np.flatnonzero((later.collider == contacts.collider[i]).all(axis=1))
        assert abs((later.gap[same[0]] - contacts.gap[i]) / dt - u[i, 0]) < 1e-5 * (1 + np.abs(u[i]).max())
    # the impulse map is the transpose of the velocity map
    reaction = rng.normal(size=(len(contacts), 3))
    assert abs(rows.impulse(reaction, 3) @ nu.reshape(-1) - np.sum(reaction * u)) < 1e-12


@pytest.mark.parametrize("name", ["regularized", "box", "continuous"])
def test_contact_friction_over_identity_slip_rows_is_the_full_block(name):
    """contact_friction (lcpdyn.strategies.sparse_island) asks a model of two friction rows per
    contact for its rows with D = I over the slip rows, contact by contact; multiplied by D they
    are the block the model gives for the full D (the polygonal model, with its slack rows, stays
    on the dense path)."""
    rng = np.random.default_rng(2)
    model = make_friction(name)
    r, n, h = 40, 30, 1e-3  # more contacts than one chunk
    D = rng.normal(size=(2 * r, n))
    v = rng.normal(size=n)
    mu = rng.uniform(0.1, 0.8, r)
    mu_static = mu * 1.2
    normal_force = rng.uniform(0, 10, r)
    normal_force[:3] = 0.0
    friction_force = rng.normal(size=(r, 3))
    tangent = tangent_basis(rng.normal(size=(r, 3)))
    full = model.block(D, v, h, mu, normal_force, friction_force, tangent, mu_static=mu_static)
    F, G, C, c, lo, hi, basis, kinetic = _contact_friction(
        model, D @ v, h, mu, mu_static, normal_force, friction_force, tangent
    )
    F, G, C = (block_diag(list(x)).toarray() for x in (F, G, C))
    assert full.P is None
    assert np.abs(F @ D - full.F).max() < 1e-12 * (1 + np.abs(full.F).max())
    assert np.abs(G @ D - full.G).max() < 1e-12 * (1 + np.abs(full.G).max())
    for got, want in ((C, full.C), (c, full.c), (lo, full.lo), (hi, full.hi)):
        assert np.array_equal(np.isinf(got), np.isinf(want))
        finite = np.isfinite(want)
        assert np.abs(got[finite] - want[finite]).max(initial=0.0) < 1e-12 * (1 + np.abs(want[finite]).max(initial=0))
    assert np.array_equal(kinetic, full.kinetic)


# --- closed-form narrow phase ------------------------------------------------------------------


def _coal_distance(coal, shape_a, Ra, xa, shape_b, Rb, xb):
    ta, tb = coal.Transform3s(), coal.Transform3s()
    ta.setRotation(Ra)
    ta.setTranslation(xa)
    tb.setRotation(Rb)
    tb.setTranslation(xb)
    request = coal.DistanceRequest()
    result = coal.DistanceResult()
    coal.distance(shape_a.geometry(), ta, shape_b.geometry(), tb, request, result)
    return result.min_distance


@pytest.mark.parametrize("kinds", [("sphere", "box"), ("box", "box"), ("box", "sphere"), ("sphere", "sphere")])
def test_closed_form_pairs_agree_with_coal(coal, kinds):
    """Pairs separated by less than the margin: every contact satisfies gap = n . (p_b - p_a)
    with |n| = 1; the smallest gap is coal's distance for a sphere, and for two boxes the
    separating-axis gap, which equals the distance when a face is one of the closest features and
    is below it otherwise (a vertex or an edge facing a vertex: the contact is taken early, never
    late), at least distance / sqrt(3)."""
    rng = np.random.default_rng(3)
    shapes = {"sphere": lambda: Sphere(rng.uniform(0.1, 0.3)), "box": lambda: Box(rng.uniform(0.1, 0.5, 3))}
    a, b = RigidBody("a", 1.0, (1, 1, 1)), RigidBody("b", 1.0, (1, 1, 1))
    exact = checked = 0
    for _ in range(40):
        sa, sb = shapes[kinds[0]](), shapes[kinds[1]]()
        world = CollisionWorld([Collider(a, sa), Collider(b, sb)], [a, b], margin=0.05)
        Ra, Rb = _rotation(rng.normal(size=3), rng.uniform(0, 3)), _rotation(rng.normal(size=3), rng.uniform(0, 3))
        direction = rng.normal(size=3)
        direction /= np.linalg.norm(direction)
        target = rng.uniform(1e-3, 0.04)
        xb = direction * 1.5
        for _ in range(6):  # walk along the direction to the target distance
            xb = xb + (target - _coal_distance(coal, sa, Ra, np.zeros(3), sb, Rb, xb)) * direction
        distance = _coal_distance(coal, sa, Ra, np.zeros(3), sb, Rb, xb)
        if not 5e-4 < distance < 0.045:
            continue
        found = world.detect(np.stack([np.zeros(3), xb]), np.stack([Ra, Rb]))
        assert len(found) >= 1
        assert np.abs(np.linalg.norm(found.normal, axis=1) - 1).max() < 1e-12
        assert np.abs(np.einsum("ij,ij->i", found.normal, found.point_b - found.point_a) - found.gap).max() < 1e-12
        smallest = found.gap.min()
        assert distance / math.sqrt(3) - 2e-6 <= smallest <= distance + 2e-6
        exact += abs(smallest - distance) < 2e-6
        checked += 1
    assert checked >= 20
    if "sphere" in kinds:
        assert exact == checked
    else:
        assert exact >= checked // 2


def test_resting_boxes_keep_all_four_corners(coal):
    """Flat on flat at zero gap (where GJK's normal is undefined): the separating-axis manifold
    gives the face normal and all four corners, whatever rounding the poses carry."""
    a, b = RigidBody("a", 1.0, (1, 1, 1)), RigidBody("b", 1.0, (1, 1, 1))
    world = CollisionWorld([Collider(a, Box((0.2, 0.2, 0.2))), Collider(b, Box((0.2, 0.2, 0.2))),
                            Collider(None, HalfSpace())], [a, b], margin=0.005)  # fmt: skip
    for dz in (0.0, 1e-13, -1e-13, 1e-9):
        for tilt in (0.0, 1e-12, 1e-6):
            found = world.detect(np.array([[0, 0, 0.1], [1e-12, 0, 0.3 + dz]]),
                                 np.stack([_rotation((1, 0, 0), tilt), np.eye(3)]))  # fmt: skip
            assert len(found) == 8
            assert np.abs(np.abs(found.normal[:, 2]) - 1).max() < 1e-5
            assert np.abs(found.gap).max() < 2e-7


# --- impacts -----------------------------------------------------------------------------------


def _two_spheres(friction, mu, e, offset, method=None, v_a=1.0, v_b=-0.5):
    model = Model(gravity=(0, 0, 0))
    a = model.add_body(_sphere_body("a", 1.0, 0.1, (-0.3, 0, 0), velocity=(v_a, 0, 0)))
    b = model.add_body(_sphere_body("b", 2.0, 0.1, (0.3, offset, 0), velocity=(v_b, 0, 0)))
    sim = _simulation(model, [Collider(a, Sphere(0.1)), Collider(b, Sphere(0.1))], friction, margin=0.01,
                      contact=ContactProperties(mu=mu, restitution=e), method=method)  # fmt: skip
    return sim, sim.run(0.6)


def _impact_prediction(run, mu, e, ma=1.0, mb=2.0, r=0.1):
    """Kinetic energy after the impact by Newton's law with Coulomb friction in closed form: the
    normal and contact point at the impact step (from the recorded contact), the normal impulse
    (1 + e) m_N |u_N| and the tangential one sticking (m_T |u_T|) or sliding (mu P_N), with
    m_N = 1/(1/ma + 1/mb) and 1/m_T = 1/ma + 1/mb + l_a^2/I_a + l_b^2/I_b, l the distances from
    the centres to the contact point (on the line of centres: normal and tangent decouple; l = r
    for an impact at zero gap). Zero gravity: the energy is the kinetic energy."""
    record = int(np.flatnonzero(run.detected_normal_force > 0)[0])
    s = int(np.searchsorted(run.detected_start, record, side="right") - 1)  # its step; the state before it
    n = run.detected_normal[record]
    relative = run.velocity[s - 1, 1] - run.velocity[s - 1, 0]
    u_N = relative @ n
    u_T = np.linalg.norm(relative - u_N * n)
    m_N = 1.0 / (1 / ma + 1 / mb)
    point = run.detected_point[record]
    l_a, l_b = (np.linalg.norm(point - run.position[s - 1, j]) for j in (0, 1))
    m_T = 1.0 / (1 / ma + 1 / mb + l_a**2 / (0.4 * ma * r * r) + l_b**2 / (0.4 * mb * r * r))
    P_N = (1 + e) * m_N * -u_N
    loss = 0.5 * (1 - e * e) * m_N * u_N**2
    if mu * P_N >= m_T * u_T:
        loss += 0.5 * m_T * u_T**2
    else:
        P_T = mu * P_N
        after = u_T - P_T / m_T
        loss += P_T * (u_T + after) / 2
    return run.initial_energy - loss, P_N


@pytest.mark.parametrize("friction", ["coulomb", "regularized", "box", "polygonal"])
@pytest.mark.parametrize("e", [1.0, 0.5, 0.0])
def test_head_on_spheres_keep_momentum_and_lose_what_newton_predicts(coal, friction, e):
    sim, run = _two_spheres(friction, 0.3, e, 0.0)
    momentum = run.velocity[:, 0] * 1.0 + run.velocity[:, 1] * 2.0
    assert np.abs(momentum - np.array([0.0, 0, 0])).max() < 1e-12  # 1 kg at 1 m/s, 2 kg at -0.5 m/s
    # frictionless in effect (head on): u_N = -1.5 m/s, m_N = 2/3 kg
    expected = 0.75 - 0.5 * (1 - e * e) * (2 / 3) * 1.5**2
    assert abs(run.energy[-1] - expected) < 1e-9
    assert run.solver_status.max() == 0 and _penetration(run) < 1e-9
    vx = run.velocity[-1, :, 0]
    assert abs((vx[1] - vx[0]) - 1.5 * e) < 1e-9  # Newton: separation speed e times the approach


@pytest.mark.parametrize("friction,tolerance", [("coulomb", 1e-9), ("regularized", 1e-4), ("box", 1e-9)])
@pytest.mark.parametrize("mu", [0.3, 0.01])  # the contact sticks / slides through the impact
@pytest.mark.parametrize("e", [1.0, 0.5])
def test_off_centre_spheres_with_friction(coal, friction, tolerance, mu, e):
    sim, run = _two_spheres(friction, mu, e, 0.05)
    momentum = run.velocity[:, 0] * 1.0 + run.velocity[:, 1] * 2.0
    assert np.abs(momentum).max() < 1e-12
    x = run.position
    angular = (  # about the origin: r x m v + I w (a sphere's inertia is isotropic)
        np.cross(x[:, 0], 1.0 * run.velocity[:, 0])
        + np.cross(x[:, 1], 2.0 * run.velocity[:, 1])
        + 0.004 * run.angular_velocity[:, 0]
        + 0.008 * run.angular_velocity[:, 1]
    )
    start = np.cross([0.3, 0.05, 0.0], [-1.0, 0.0, 0.0])  # b's r x m v at the start; a's is zero
    assert np.abs(angular - start).max() < 1e-12  # action and reaction at one point
    expected, _ = _impact_prediction(run, mu, e)
    if friction == "box" and mu < 0.1:  # sliding: the box bounds each base component, not the cone
        pytest.skip("box friction slides differently from the cone by design")
    assert abs(run.energy[-1] - expected) < tolerance * run.initial_energy


def test_newtons_cradle(coal):
    """Touching balls take a simultaneous impact as one rigid row (the striker m against the
    row's mass): 3 balls end at (-1/3, 2/3, 2/3) v, 5 balls at (-3/5, 2/5, ...) v, energy kept --
    not the experiment's (0, ..., 0, v). A gap wider than one step's travel between the balls
    makes it a sequence of two-body impacts, each exact: (0, ..., 0, v)."""

    def cradle(n, gap, friction):
        model = Model(gravity=(0, 0, 0))
        bodies = [model.add_body(_sphere_body("s0", 0.5, 0.05, (-0.1, 0, 0), velocity=(1, 0, 0)))]
        for i in range(1, n):
            bodies.append(model.add_body(_sphere_body(f"s{i}", 0.5, 0.05, ((0.1 + gap) * (i - 1), 0, 0))))
        contact = ContactProperties(mu=0.0, restitution=1.0)
        sim = _simulation(model, [Collider(b, Sphere(0.05)) for b in bodies], friction, margin=0.002,
                          contact=contact, tolerance=1e-13)  # fmt: skip
        run = sim.run(0.3)
        return run.velocity[-1, :, 0], run.energy[-1] - run.initial_energy

    for friction in ("coulomb", "regularized"):
        v, gained = cradle(3, 0.0, friction)
        assert np.abs(v - [-1 / 3, 2 / 3, 2 / 3]).max() < 1e-9
        assert abs(gained) < 1e-9
        v, _ = cradle(5, 0.0, friction)
        assert np.abs(v - [-0.6, 0.4, 0.4, 0.4, 0.4]).max() < 1e-9
    v, gained = cradle(5, 0.005, "coulomb")
    assert np.abs(v - [0, 0, 0, 0, 1]).max() < 1e-9
    assert abs(gained) < 1e-9


# --- resting contact ---------------------------------------------------------------------------


@pytest.mark.parametrize("friction", ["coulomb", "regularized", "box", "polygonal", "continuous"])
def test_box_resting_on_a_box(coal, friction):
    """No drift, no creep; the ground carries both weights and the upper face the top box's; the
    friction forces of each face cancel (four corners are statically indeterminate: the exact cone
    may leave self-equilibrated friction between them, the sum is what equilibrium fixes)."""
    model = Model()
    size = (0.4, 0.3, 0.2)
    lower = model.add_body(_box_body("lower", 2.0, size, (0, 0, 0.1)))
    upper = model.add_body(_box_body("upper", 1.0, (0.2, 0.2, 0.2), (0.05, 0.02, 0.3)))
    method = "auto" if friction == "coulomb" else None
    sim = _simulation(model, [Collider(lower, Box(size)), Collider(upper, Box((0.2, 0.2, 0.2))),
                              Collider(None, HalfSpace())], friction, margin=0.005,
                      contact=ContactProperties(mu=0.5), method=method)  # fmt: skip
    run = sim.run(0.5)
    assert _still(sim, run) < 1e-9
    last = run.detected_at(-1)
    ground = last["body"][:, 1] < 0
    g = 9.81
    assert abs(last["normal_force"][ground].sum() - 3.0 * g) < 1e-6 * 3 * g
    assert abs(last["normal_force"][~ground].sum() - 1.0 * g) < 1e-6 * g
    assert np.abs(last["friction_force"][ground].sum(axis=0)).max() < 1e-6
    assert np.abs(last["friction_force"][~ground].sum(axis=0)).max() < 1e-6
    assert ground.sum() == 4 and (~ground).sum() == 4


def test_ball_dropped_on_a_ball_resting_on_the_ground(coal):
    model = Model()
    low = model.add_body(_sphere_body("low", 1.0, 0.1, (0, 0, 0.1)))
    high = model.add_body(_sphere_body("high", 0.5, 0.08, (0, 0, 0.5)))
    colliders = [Collider(low, Sphere(0.1)), Collider(high, Sphere(0.08)), Collider(None, HalfSpace())]
    sim = _simulation(model, colliders, "coulomb", margin=0.005, contact=ContactProperties(mu=0.5, restitution=0.5))
    run = sim.run(1.5)
    # it bounced: the upper ball rose again after the first impact
    z = run.position[:, 1, 2]
    first = int(np.argmax(run.detected_count == 2))
    assert z[first:].max() > 0.28 + 0.02
    # at rest on top, loads passed down
    last = run.detected_at(-1)
    ground = last["body"][:, 1] < 0
    assert abs(last["normal_force"][ground].sum() - 1.5 * 9.81) < 1e-6 * 15
    assert abs(last["normal_force"][~ground].sum() - 0.5 * 9.81) < 1e-6 * 5
    assert abs(z[-1] - 0.28) < 1e-6 and _penetration(run) < 1e-6
    assert np.abs(run.velocity[-1]).max() < 1e-6 and np.abs(run.angular_velocity[-1]).max() < 1e-6


@pytest.mark.parametrize(
    "friction,seconds",
    [
        pytest.param("regularized", 10.0, marks=pytest.mark.one_leg(leg="siconos")),
        pytest.param("coulomb", 2.0, marks=pytest.mark.one_leg(leg="current")),
    ],
)
def test_tower_of_ten_boxes_stands_still(coal, friction, seconds):
    """Ten boxes stacked on the ground (40 redundant corner contacts) stay where they were put, to
    1e-8 m and rad, with every contact held and no penetration: the regularized model for 10 s
    (its bristles could creep), exact Coulomb for 2 s. The regularized run (10,000 steps, ~70 s)
    is the Siconos leg's, the exact-Coulomb one the current-stack leg's (conftest.dealt_leg)."""
    model = Model()
    s = 0.2
    bodies = [model.add_body(_box_body(f"b{i}", 1.0, (s, s, s), (0, 0, s / 2 + i * s))) for i in range(10)]
    colliders = [Collider(b, Box((s, s, s))) for b in bodies] + [Collider(None, HalfSpace())]
    method = "auto" if friction == "coulomb" else None
    sim = _simulation(model, colliders, friction, margin=0.005, contact=ContactProperties(mu=0.5), method=method)
    run = sim.run(seconds)
    assert _still(sim, run) < 1e-8
    assert (run.detected_count == 40).all() and _penetration(run) < 1e-9
    assert run.solver_status.max() == 0


# --- failures and bad input --------------------------------------------------------------------


def test_a_failed_solve_keeps_the_trajectory(coal):
    """Four coupled corners, one NSGS sweep allowed, no fallback: the first contact step fails,
    the error says so and carries the fall before it."""
    model = Model()
    box = model.add_body(_box_body("box", 1.0, (0.2, 0.2, 0.2), (0, 0, 0.2), (0.99, 0.1, 0.05, 0)))
    sim = _simulation(model, [Collider(box, Box((0.2, 0.2, 0.2))), Collider(None, HalfSpace())], "coulomb",
                      margin=0.01, method="nsgs", fallback_method=None, solver_options={"max_sweeps": 1})  # fmt: skip
    with pytest.raises(SimulationError, match="nsgs") as info:
        sim.run(1.0)
    run = info.value.trajectory
    assert run.parameters["status"].startswith("failed") and 10 < len(run.t) < 1000
    assert run.position[-1, 0, 2] < 0.2  # it fell before it touched
    assert run.detected_count[-1] > 0 and run.detected_count[0] == 0


def test_bad_input_is_named(coal):
    with pytest.raises(ValueError, match="restitution must be in"):
        ContactProperties(restitution=1.5)
    with pytest.raises(ValueError, match="mu_static"):
        ContactProperties(mu=0.5, mu_static=0.3)
    with pytest.raises(ValueError, match="friction coefficient mu must be >= 0"):
        ContactProperties(mu=-1)
    model = Model()
    ball = model.add_body(_sphere_body("ball", 1.0, 0.1, (0, 0, 0.2)))
    with pytest.raises(ValueError, match=r"unknown solver_options \['max_sweeps'\] for method 'auto'"):
        _simulation(model, [Collider(ball, Sphere(0.1)), Collider(None, HalfSpace())], "coulomb", margin=0.01,
                    method="auto", solver_options={"max_sweeps": 1})  # fmt: skip


def test_pair_properties_override_the_default(coal):
    model = Model()
    a = model.add_body(_sphere_body("a", 1.0, 0.1, (0, 0, 0.1)))
    b = model.add_body(_sphere_body("b", 1.0, 0.1, (0.5, 0, 0.1)))
    ca, cb, ground = Collider(a, Sphere(0.1)), Collider(b, Sphere(0.1)), Collider(None, HalfSpace())
    for collider in (ca, cb, ground):
        model.add_collider(collider)
    model.set_collisions(
        margin=0.01,
        contact={"mu": 0.5},
        pairs={(b, None): ContactProperties(mu=0.1, restitution=0.3), (ca, ground): {"mu": 0.9}},
    )
    sim = Simulation(model, "regularized", 1e-3)
    properties = sim._collisions.properties  # a pair of colliders wins over a pair of bodies, that over the default
    assert properties(0, 2).mu == 0.9
    assert properties(1, 2) == ContactProperties(mu=0.1, restitution=0.3)
    assert properties(0, 1).mu == 0.5
    assert math.isclose(model.collisions.contact.mu_static, 0.5)


# --- large islands: the sparse path ------------------------------------------------------------


def test_sparse_measures_equal_the_dense_ones():
    """The CSR measures of solvers.sparse_measure against solvers.result and friction_contact's
    dense ones, on random problems and on solved ones (where the residual is at rounding, and the
    order of summation may move it by a few units of rounding: 1e-14 in normalized units)."""
    import scipy.sparse as sp

    import solvers
    from solvers.contact_measure import _measure_kernel as fc_dense
    from solvers.result import _measure_kernel as lcp_dense
    from solvers.sparse_measure import (
        csr_arrays,
        csr_friction_contact_measure,
        csr_friction_contact_measure_scaled,
        csr_friction_contact_scales,
        csr_lcp_measure,
        csr_lcp_measure_scaled,
        csr_lcp_scales,
    )

    rng = np.random.default_rng(5)
    for trial in range(12):
        n = 24
        A = sp.random(n, n, density=0.2, random_state=trial).toarray()
        M = A @ A.T + np.diag(rng.uniform(0.1, 1, n))
        M[:4, 4:8] += rng.normal(size=(4, 4))  # not symmetric
        q = rng.normal(size=n)
        lo = np.where(rng.uniform(size=n) < 0.3, -np.inf, -rng.uniform(0, 1, n) * (rng.uniform(size=n) < 0.5))
        hi = np.where(rng.uniform(size=n) < 0.5, np.inf, np.maximum(lo, 0) + rng.uniform(0, 1, n))
        z = solvers.solve(M, q, lo, hi).z if trial % 2 else np.clip(rng.normal(size=n) * 10.0**trial, lo, hi)
        w1, w2 = np.empty(n), np.empty(n)
        c1, c2 = np.empty(n, np.int8), np.empty(n, np.int8)
        dense = lcp_dense(M, q, lo, hi, z, w1, c1)
        sparse = csr_lcp_measure(*csr_arrays(sp.csr_matrix(M)), q, lo, hi, z, w2, c2)
        assert math.isclose(dense[0], sparse[0], rel_tol=1e-12, abs_tol=1e-14)
        assert np.array_equal(c1, c2) and np.allclose(w1, w2, rtol=1e-12, atol=1e-14 * np.abs(q).max())
        W = (A @ A.T)[:18, :18] + 1e-3 * np.eye(18)
        b = rng.normal(size=18)
        mu = rng.uniform(0, 1, 6)
        r = solvers.solve(solvers.FrictionContactProblem(W, b, mu)).r if trial % 2 else rng.normal(size=18)
        dense = fc_dense(W, b, mu, r, np.empty(18))
        sparse = csr_friction_contact_measure(*csr_arrays(sp.csr_matrix(W)), b, mu, r, np.empty(18))
        assert math.isclose(dense[0], sparse[0], rel_tol=1e-12, abs_tol=1e-14)
        # the problem's scales computed once and reused for every answer (an iterative solver's
        # iterates): the same numbers, bit for bit
        arrays = csr_arrays(sp.csr_matrix(M))
        scales = csr_lcp_scales(*arrays, q, lo, hi)
        for answer in (z, np.clip(z + rng.normal(size=n), lo, hi)):
            once = csr_lcp_measure(*arrays, q, lo, hi, answer, np.empty(n), np.empty(n, np.int8))
            again = csr_lcp_measure_scaled(*arrays, q, lo, hi, answer, np.empty(n), np.empty(n, np.int8), *scales)
            assert once == again
        arrays = csr_arrays(sp.csr_matrix(W))
        scales = csr_friction_contact_scales(*arrays, b)
        for answer in (r, r + rng.normal(size=18), np.full(18, np.nan)):
            once = csr_friction_contact_measure(*arrays, b, mu, answer, np.empty(18))
            again = csr_friction_contact_measure_scaled(*arrays, b, mu, answer, np.empty(18), *scales)
            assert np.array_equal(once, again, equal_nan=True)


def _column(friction, sparse, monkeypatch, steps=150):
    """Five spheres stacked in a slightly leaning column on the ground: one island of 5 contacts,
    on the sparse path (SPARSE_CONTACTS set to 0) or dense (``sparse=False``)."""
    import lcpdyn.strategies.sparse_island as sparse_island

    model = Model()
    bodies = [model.add_body(_sphere_body(f"s{i}", 1.0, 0.05, (0.004 * i, 0.002 * i, 0.05 + 0.1 * i)))
              for i in range(5)]  # fmt: skip
    sim = _simulation(model, [Collider(b, Sphere(0.05)) for b in bodies] + [Collider(None, HalfSpace())], friction,
                      margin=0.005, contact=ContactProperties(mu=0.6), tolerance=1e-10, sparse=sparse)  # fmt: skip
    with monkeypatch.context() as patch:
        patch.setattr(sparse_island, "SPARSE_CONTACTS", 0)
        outs = [sim.step() for _ in range(steps)]
    return sim, outs


def test_friction_bounds_are_re_solved_only_where_they_matter():
    """bounds_moved: a normal force that halves matters at a sliding contact (friction at its
    bound), at a sticking one whose friction the new bound no longer holds, and at a new
    contact (zero bound); not at a contact sticking inside both bounds."""
    from lcpdyn.detected_contacts import bounds_moved as _bounds_moved

    lagged, latest = np.array([10.0]), np.array([4.0])
    lo, hi = np.array([[-5.0, -5.0]]), np.array([[5.0, 5.0]])
    assert _bounds_moved(lagged, latest, 0.5).all()  # without the friction: every contact counts
    assert not _bounds_moved(lagged, latest, 0.5, np.array([[1.0, -1.0]]), lo, hi).any()  # inside 5 and 2
    assert _bounds_moved(lagged, latest, 0.5, np.array([[5.0, 0.0]]), lo, hi)  # sliding at its bound
    assert _bounds_moved(lagged, latest, 0.5, np.array([[0.0, -3.0]]), lo, hi)  # beyond the new bound 2
    assert not _bounds_moved(lagged, np.array([8.0]), 0.5, np.array([[5.0, 0.0]]), lo, hi)  # moved 20 %
    zero = np.zeros((1, 2))
    assert _bounds_moved(np.array([0.0]), np.array([3.0]), 0.5, zero, zero, zero)  # a new contact
    # per contact: the next pass takes the new force's bound only where it matters
    friction = np.array([[1.0, -1.0], [5.0, 0.0], [5.0, 0.0], [0.0, 0.0]])
    mask = _bounds_moved(np.array([10.0, 10.0, 10.0, 0.0]), np.array([4.0, 4.0, 8.0, 3.0]), 0.5, friction,
                         np.vstack([lo] * 3 + [zero]), np.vstack([hi] * 3 + [zero]))  # fmt: skip
    assert mask.tolist() == [False, True, False, True]
    # a row without bounds (the continuous law's) never reaches one, silently: no NaN from inf - inf
    free = np.array([[-np.inf, -np.inf]]), np.array([[np.inf, np.inf]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not _bounds_moved(lagged, latest, 0.5, np.array([[5.0, 0.0]]), *free).any()


@pytest.mark.parametrize("friction", ["regularized", "box", "coulomb"])
def test_sparse_island_path_agrees_with_the_dense_one(coal, friction, monkeypatch):
    dense, a = _column(friction, False, monkeypatch)
    sparse, b = _column(friction, "auto", monkeypatch)
    assert any(len(x.detected) == 5 for x in a) and all(x.detected.sparse == 0 for x in a)
    assert sum(x.detected.sparse for x in b) > 100 and not any(x.fallback for x in b)
    assert np.abs(sparse.q - dense.q).max() < 1e-8
    assert np.abs(sparse.v - dense.v).max() < 1e-6


def test_active_set_iteration_solves_m_matrix_problems_and_stops_on_cycles():
    """On an M-matrix box LCP the primal-dual active-set iteration converges (Hintermüller, Ito &
    Kunisch 2002) to the framework's tolerance; on any problem it stops (a repeated set) with the
    best iterate it measured."""
    import scipy.sparse as sp

    from solvers.sparse_gauss_seidel import active_set_csr
    from solvers.sparse_measure import csr_arrays, csr_lcp_measure

    rng = np.random.default_rng(7)
    n = 60
    off = -sp.random(n, n, density=0.1, random_state=1).toarray()
    off = off + off.T
    np.fill_diagonal(off, 0.0)
    M = sp.csr_matrix(off + np.diag(np.abs(off).sum(axis=1) + rng.uniform(0.1, 1.0, n)))
    q = rng.normal(size=n)
    lo = np.where(rng.uniform(size=n) < 0.5, 0.0, -rng.uniform(0, 1, n))
    hi = np.where(rng.uniform(size=n) < 0.5, np.inf, rng.uniform(0, 1, n))
    arrays = csr_arrays(M)
    w, codes = np.empty(n), np.empty(n, np.int8)

    def measure(x):
        return csr_lcp_measure(*arrays, q, lo, hi, x, w, codes)[0]

    z = np.zeros(n)
    steps, relative, converged = active_set_csr(M, q, lo, hi, z, 50, 1e-12, measure)
    assert converged and relative <= 1e-12 and steps < 20
    # a general (not M-matrix) PSD problem: whatever happens, it ends, at its best iterate
    A = rng.normal(size=(n, n // 2))
    G = sp.csr_matrix(A @ A.T)
    arrays = csr_arrays(G)
    z = np.zeros(n)
    start = measure(z)
    steps, relative, _ = active_set_csr(G, q, lo, hi, z, 50, 1e-12, measure)
    assert steps <= 50 and relative <= start and relative == measure(z)
