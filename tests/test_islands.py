"""The step split into per-body islands (lcpdyn.islands) against the dense path, the vectorized
kinematics' shared compilation, and a user-defined contact geometry plugged in through the
geometry protocol (lcpdyn.contact.Contact)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from lcpdyn import kkt
from lcpdyn import model as model_module
from lcpdyn.body import RigidBody
from lcpdyn.constraints import BallJoint, Holonomic, Nonholonomic
from lcpdyn.contact import Contact, Plane, SphereContact
from lcpdyn.model import Model
from lcpdyn.stepper import Simulation
from scenes import SCENES
from scenes.scale import Boxes, Dumbbells, Spheres


def _runs(model, friction, steps, dt=1e-3, **options):
    runs = {}
    for sparse in (False, True):
        sim = Simulation(model, friction, dt, sparse=sparse, **options)
        assert (sim._islands is not None) == sparse
        runs[sparse] = sim.run(steps * dt)
    return runs[False], runs[True]


@pytest.mark.parametrize("friction", ["regularized", "coulomb"])
@pytest.mark.parametrize("seed", [1, 2])
def test_islands_give_the_dense_steps_on_random_spheres(friction, seed):
    """Random launches (slide then roll): the island path's states and forces are the dense
    path's to 1e-9 (the same problem, solved island by island)."""
    scene = Spheres.build(count=10, seed=seed, speed=2.0)
    dense, islands = _runs(scene.model, scene.friction(friction), 250)
    assert np.all(islands.solver_status == 0) and not islands.solver_fallback.any()
    for name in ("position", "quaternion", "velocity", "angular_velocity", "contact_friction_force"):
        np.testing.assert_allclose(getattr(islands, name), getattr(dense, name), rtol=0, atol=1e-9, err_msg=name)
    np.testing.assert_allclose(islands.contact_normal_force, dense.contact_normal_force, rtol=0, atol=1e-9)


@pytest.mark.one_leg  # its cells dealt between the legs (conftest.dealt_leg)
@pytest.mark.parametrize("friction", ["regularized", "box", "coulomb"])
def test_islands_give_the_dense_motion_of_redundant_boxes(friction):
    """Boxes on four coplanar corners: the corner forces are not unique (rank 3), so the paths
    may share the weight differently; the motion and each box's total normal force are
    unique and agree, and neither path needs a fallback: a redundant corner's normal impulse is
    put on its zero bound when a basis is singular (solvers.judice_pires; the dense problem of
    these 24 boxes used to fall into a singular basis at step 103 that neither the proximal
    fallback nor Lemke got out of)."""
    scene = Boxes.build(count=24, seed=3)
    dense, islands = _runs(scene.model, scene.friction(friction), 300)
    assert not dense.solver_fallback.any() and not islands.solver_fallback.any()
    # How far the unique motion can differ (m/s at a corner):
    # - coulomb: NSGS stops at the relative residual 1e-9 of the whole problem (dense) or of each
    #   island, which leaves ~1e-8 m/s;
    # - regularized: a stuck corner's bristle force lam_T+ = lam_T - h k_T D v+ (Peiret 2016
    #   Eq. 11) is bounded by mu lam_N of the previous step, and lam_N per corner is the part that
    #   is not unique: a difference dlam moves the stuck velocity by dlam / (h k_T) <= mu m g /
    #   (h k_T) = 4.9e-7 m/s (k_T = 1e10 N/m, h = 1 ms);
    # - box: rigid stiction, nothing but rounding.
    corner = {"coulomb": 1e-7, "regularized": 1e-6, "box": 1e-8}[friction]
    half_side = 0.5 * scene.parameters["side"]
    for name, atol in (("position", corner), ("quaternion", corner / half_side), ("velocity", corner)):
        np.testing.assert_allclose(getattr(islands, name), getattr(dense, name), rtol=0, atol=atol, err_msg=name)
    np.testing.assert_allclose(islands.angular_velocity, dense.angular_velocity, rtol=0, atol=corner / half_side)
    weight = scene.parameters["mass"] * scene.parameters["gravity"]  # carried by every box's four corners
    # NSGS accepts on the contact velocities u = W r + b: 2e-6 N of weight is 2e-9 m/s of a 1 kg box
    tolerance = 1e-6 if friction == "coulomb" else 1e-9
    for run in (islands, dense):
        per_box = run.contact_normal_force.reshape(len(run.t), -1, 4).sum(axis=2)
        np.testing.assert_allclose(per_box, weight, rtol=tolerance)


def test_bodies_without_contacts_fly_freely_between_islands():
    """A model whose second body has no contact (it falls and tumbles) and whose other bodies
    touch the plane: the free body's step is M^-1 (M v + h f) exactly as in the dense path."""
    model = Model()
    plane = Plane()
    a = model.add_body(RigidBody("a", 1.0, (0.01, 0.02, 0.015), (0.0, 0.0, 0.05), velocity=(1.0, 0.2, 0.0)))
    model.add_body(RigidBody("free", 2.0, (0.03, 0.04, 0.05), (1.0, 0.0, 2.0), angular_velocity=(3.0, -1.0, 2.0)))
    c = model.add_body(RigidBody("c", 0.5, (0.004, 0.004, 0.004), (2.0, 0.0, 0.1), velocity=(0.0, -0.5, 0.0)))
    model.add_contact(SphereContact(a, plane, 0.3, radius=0.05))
    model.add_contact(SphereContact(c, plane, 0.6, radius=0.1))
    dense, islands = _runs(model, "regularized", 300)
    for name in ("position", "quaternion", "velocity", "angular_velocity", "contact_normal_force"):
        np.testing.assert_allclose(getattr(islands, name), getattr(dense, name), rtol=0, atol=1e-9, err_msg=name)
    assert islands.position[-1, 1, 2] < 2.0 - 0.5 * 9.81 * 0.29**2  # the free body fell


@pytest.mark.parametrize("friction", ["regularized", "box"])
def test_one_body_islands_are_the_dense_path_bit_for_bit(friction):
    """With one body the island is the whole problem in the same order: identical steps."""
    scene = SCENES["wheel"].build(t_end=0.05)
    assert Simulation(scene.model, friction)._islands is None  # auto: one body takes the dense path
    dense, islands = _runs(scene.model, scene.friction(friction), 50)
    for name in ("position", "velocity", "contact_normal_force", "contact_friction_force", "energy"):
        np.testing.assert_array_equal(getattr(islands, name), getattr(dense, name), err_msg=name)


def _jointed_model(seed=1):
    """Four dumbbells (lcpdyn.islands.BodyGroups: one island each), a pendulum hanging from a
    world point by a ball joint (an island without contacts) and a free body."""
    model = Dumbbells.build(count=4, seed=seed, speed=2.0).model
    bob = model.add_body(
        RigidBody(
            "bob",
            0.7,
            (0.002, 0.003, 0.004),
            (3.0, 0.0, 1.0),
            velocity=(0.0, 0.5, 0.0),
            angular_velocity=(1.0, 0.0, 0.0),
        )
    )
    model.add_constraint(BallJoint(body_a=bob, offset_a=(0.0, 0.0, 0.3), offset_b=(3.0, 0.0, 1.3), name="hinge"))
    model.add_body(RigidBody("free", 2.0, (0.03, 0.04, 0.05), (-3.0, 0.0, 2.0), angular_velocity=(3.0, -1.0, 2.0)))
    return model


@pytest.mark.parametrize("friction", ["regularized", "box", "polygonal", "coulomb"])
def test_islands_of_jointed_bodies_give_the_dense_steps(friction):
    """Bilateral rows couple bodies into islands (one per dumbbell, the pendulum alone, the free
    body in none): states, contact forces and joint multipliers equal the dense path's -- to
    1e-9 for the bounded-LCP models (the same problem per island); NSGS stops within its
    tolerance (1e-8 relative) on u = W r + b, which for the exact cone leaves velocities 1e-8 of
    the largest (35 rad/s here) and forces 1e-6 N apart (sweeping each island alone, not the
    whole problem)."""
    model = _jointed_model()
    sims = {sparse: Simulation(model, friction, 1e-3, sparse=sparse) for sparse in (False, True)}
    assert len(sims[True]._islands) == 5 and Simulation(model, friction, 1e-3)._islands is not None  # auto splits
    force, velocity = (1e-6, 1e-8) if friction == "coulomb" else (1e-9, 1e-9)
    for _ in range(120):  # each step from the same state (the dense run's), so differences cannot accumulate
        steps = {True: sims[True].advance(sims[False].state)[1], False: sims[False].step()}
        scale = np.abs(steps[False].v).max() if friction == "coulomb" else 1.0
        for name, atol in (
            ("v", velocity * scale),
            ("normal_force", force),
            ("friction_force", force),
            ("bilateral", force * 1e-3),
        ):
            np.testing.assert_allclose(
                getattr(steps[True], name), getattr(steps[False], name), rtol=0, atol=atol, err_msg=name
            )
        assert steps[True].status == 0 and not steps[True].fallback
    np.testing.assert_allclose(
        sims[True].run(0.12).velocity,
        Simulation(model, friction, 1e-3, sparse=False).run(0.12).velocity,
        rtol=0,
        atol=velocity if friction != "coulomb" else 1e-7,
    )
    assert np.abs(steps[True].bilateral).max() > 1e-4  # the joints carry impulses


def test_a_users_constraint_is_split_by_the_pattern_of_its_jacobian():
    """Two undeclared user constraints (lcpdyn.constraints.Holonomic without ``bodies``), each
    reading two of four spheres: the stepper finds the two islands from A's pattern at random
    states, and the steps equal the dense path's and those with the bodies declared."""

    def build(declare):
        model = Spheres.build(count=4, seed=5).model
        b = model.bodies
        for i, j in ((0, 1), (2, 3)):
            rest = float(np.linalg.norm(b[i].position - b[j].position))
            model.add_constraint(
                Holonomic(
                    lambda s, i=i, j=j, rest=rest: jnp.array(
                        [jnp.sum((s.position(b[i]) - s.position(b[j])) ** 2) - rest**2]
                    ),
                    1,
                    f"rod {i}{j}",
                    bodies=(b[i], b[j]) if declare else None,
                )
            )
        return model

    runs = {}
    for declare in (False, True):
        sim = Simulation(build(declare), "regularized", 1e-3)
        assert [g.bodies.tolist() for g in sim._islands.groups] == [[0, 1], [2, 3]]
        runs[declare] = sim.run(0.1)
    dense = Simulation(build(False), "regularized", 1e-3, sparse=False).run(0.1)
    for run in runs.values():
        np.testing.assert_allclose(run.velocity, dense.velocity, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(runs[True].velocity, runs[False].velocity)


def test_a_step_whose_rows_leave_their_islands_is_solved_whole():
    """If a step's A reaches a body outside its structural island (a user's data-dependent
    constraint), that step is solved by the dense path, cold, and the run goes on unchanged."""
    model = _jointed_model()
    split, whole = Simulation(model, "regularized", 1e-3), Simulation(model, "regularized", 1e-3, sparse=False)
    split.run(0.01), whole.run(0.01)
    allowed = split._groups.allowed.copy()
    split._groups.allowed[:] = False  # every row now "leaves" its island
    a, b = split.step(), whole.step()
    split._groups.allowed[:] = allowed
    assert a.problem is not None and a.problem.q.shape == b.problem.q.shape  # posed whole
    np.testing.assert_allclose(a.v, b.v, rtol=0, atol=1e-12)
    assert split.active_set is None  # the next split step starts cold, not from the whole problem's order
    c, d = split.step(), whole.step()  # and the islands take over again
    assert c.problem is None
    np.testing.assert_allclose(c.v, d.v, rtol=0, atol=1e-9)


def test_the_sparse_schur_solve_of_the_bilateral_system_is_the_dense_one(monkeypatch):
    """lcpdyn.kkt.solve_kkt on a chain of 40 bodies joined by ball joints (n + m = 357): the
    sparse Schur-complement branch gives the dense LU's answer; dependent rows are an error
    from either branch."""
    rng = np.random.default_rng(3)
    nb = 40
    mass = rng.uniform(0.5, 2.0, nb)
    inertia = np.array([np.diag(rng.uniform(0.01, 0.1, 3)) for _ in range(nb)])
    A = np.zeros((3 * (nb - 1), 6 * nb))
    for j in range(nb - 1):  # p_j + R_j a_j = p_{j+1} + R_{j+1} b_{j+1}, linearized
        for body, sign in ((j, 1.0), (j + 1, -1.0)):
            A[3 * j : 3 * j + 3, 6 * body : 6 * body + 3] = sign * np.eye(3)
            A[3 * j : 3 * j + 3, 6 * body + 3 : 6 * body + 6] = sign * rng.normal(size=(3, 3))
    right = rng.normal(size=(6 * nb + A.shape[0], 4))
    sparse = kkt.solve_kkt(mass, inertia, A, right)
    monkeypatch.setattr(kkt, "SPARSE_SIZE", 10**6)
    dense = kkt.solve_kkt(mass, inertia, A, right)
    np.testing.assert_allclose(sparse, dense, rtol=1e-10, atol=1e-10 * np.abs(dense).max())
    A[1] = A[0]  # a repeated row
    for size in (0, 10**6):
        monkeypatch.setattr(kkt, "SPARSE_SIZE", size)
        with pytest.raises(np.linalg.LinAlgError, match="dependent bilateral rows"):
            kkt.solve_kkt(mass, inertia, A, right)


def test_declared_bodies_give_the_same_jacobian_and_a_wrong_declaration_is_named():
    """A constraint's ``bodies`` only restricts the differentiation: A is the undeclared one's
    (holonomic and non-holonomic); reading an undeclared body fails at compile time naming it."""
    arrays = {}
    for declare in (False, True):
        model = Dumbbells.build(count=2, seed=4).model
        b = model.bodies
        model.add_constraint(
            Nonholonomic(
                lambda s: s.velocity(b[0])[:2] - s.velocity(b[2])[:2],
                2,
                name="tow",
                bodies=(b[0], b[2]) if declare else None,
            )
        )
        model.holonomic[1].bodies = model.holonomic[1].bodies if declare else None
        arrays[declare] = model.compile()(*model.initial_state(), 0.0).A
    np.testing.assert_allclose(arrays[True], arrays[False], rtol=0, atol=1e-15)
    model = Dumbbells.build(count=2).model
    b = model.bodies
    model.add_constraint(Holonomic(lambda s: s.position(b[3])[:1], 1, "liar", bodies=(b[0],)))
    with pytest.raises(KeyError, match="'liar' reads body 'dumbbell1b'"):
        model.compile()
    with pytest.raises(TypeError, match="bodies must be"):
        Holonomic(lambda s: s.position(b[0]), 3, "x", bodies=("b0",))
    with pytest.raises(ValueError, match="twice"):
        Holonomic(lambda s: s.position(b[0]), 3, "x", bodies=(b[0], b[0]))
    other = RigidBody("stranger", 1.0, (0.1, 0.1, 0.1))
    with pytest.raises(ValueError, match="has not been added"):
        model.add_constraint(Holonomic(lambda s: s.position(other), 3, "x", bodies=(other,)))


def test_sparse_true_says_why_a_model_cannot_be_split():
    model = Model()
    a = model.add_body(RigidBody("a", 1.0, (0.01, 0.01, 0.01), (0.0, 0.0, 0.1)))
    b = model.add_body(RigidBody("b", 1.0, (0.01, 0.01, 0.01), (0.3, 0.0, 0.1)))
    model.add_contact(SphereContact(a, Plane(), 0.3, radius=0.1))
    model.add_constraint(Holonomic(lambda s: jnp.array([s.position(a)[0] - s.position(b)[0] + 0.3]), 1, "rod"))
    with pytest.raises(ValueError, match="bilateral rows .* couple all its bodies into one island"):
        Simulation(model, "regularized", sparse=True)
    assert Simulation(model, "regularized")._islands is None  # auto: the dense path
    with pytest.raises(ValueError, match="solved by 'nsgs'"):
        Simulation(Spheres.build(count=2).model, "coulomb", method="siconos-nsn-ac", sparse=True)
    # any bounded-LCP model splits (the general island path, tests/test_friction_protocol.py)
    assert Simulation(Spheres.build(count=2).model, "polygonal")._islands is not None
    with pytest.raises(ValueError, match="sparse must be"):
        Simulation(Spheres.build(count=2).model, "regularized", sparse="yes")


def test_models_of_one_structure_share_one_compilation():
    """A mu x theta sweep of the wheel: the numbers are inputs of the compiled kinematics."""
    wheel = SCENES["wheel"]
    before = model_module.COMPILATIONS[0]
    states = []
    for mu in (0.2, 0.5):
        for theta in (60.0, 75.0):
            scene = wheel.build(mu=mu, theta_deg=theta)
            k = scene.model.compile()(*scene.model.initial_state(), 0.0)
            states.append(float(k.sin_tilt[0]))
    assert model_module.COMPILATIONS[0] - before <= 1
    assert states[0] == states[2] and states[1] == states[3] and states[0] != states[1]  # theta counts, mu not


class OffsetSphere(Contact):
    """A user's geometry: a sphere of ``radius`` centred at the body-fixed ``offset`` (not the
    centre of mass) against the plane -- written only through the protocol."""

    def __init__(self, body, plane, mu, offset, radius):
        super().__init__(body, plane, mu)
        self._check()
        self.offset = np.asarray(offset, float)
        self.radius = float(radius)

    def geometry(self):
        return {**super().geometry(), "offset": self.offset, "radius": np.float64(self.radius)}

    @staticmethod
    def frame_of(p, x, R, compliant):
        n = p["plane_normal"]
        centre = x + R @ p["offset"]
        gap = n @ (centre - p["plane_point"]) - p["radius"]
        return gap, centre - p["radius"] * n, n, p["plane_t1"], p["plane_t2"]


def test_a_user_contact_geometry_plugs_in_without_editing_the_engine():
    """An eccentric sphere (centre 0.02 m off the centre of mass) dropped onto the plane: the
    engine evaluates the user's frame_of, the body comes to rest on it with the gap closed and
    the normal force carrying its weight, on the island and the dense path alike."""
    model = Model()
    body = model.add_body(RigidBody("egg", 1.0, (0.004, 0.004, 0.004), (0.0, 0.0, 0.125)))
    model.add_contact(OffsetSphere(body, Plane(), 0.5, (0.0, 0.0, -0.02), 0.1))
    model.add_contact(OffsetSphere(body, Plane(), 0.5, (0.0, 0.0, -0.02), 0.1))  # two of a kind: one vmap
    k = model.compile()(*model.initial_state(), 0.0)
    np.testing.assert_allclose(k.gap, [0.125 - 0.02 - 0.1] * 2, rtol=0, atol=1e-15)
    dense, islands = _runs(model, "regularized", 400)
    for run in (dense, islands):
        assert np.all(run.solver_status == 0)
        assert abs(run.contact_gap[-1]).max() < 1e-9
        np.testing.assert_allclose(run.contact_normal_force[-1].sum(), 9.81, rtol=1e-6)


def test_stacked_joints_give_the_jacobian_of_the_whole_residual():
    """Joints of one class are evaluated together (one vmap per class, size, anchoring and time
    dependence): g, A and dg/dt equal the plain JAX derivatives of the model's whole residual,
    A = dg/dq Gamma with the dense Gamma (revolute joints between bodies, ball joints to a moving
    world anchor, at a random state); the trace does not grow with the joints."""
    import jax

    from lcpdyn.constraints import RevoluteJoint
    from lcpdyn.precision import float64

    model = Dumbbells.build(count=3, seed=6).model
    b = model.bodies
    for i in range(2):
        model.add_constraint(
            RevoluteJoint(
                body_a=b[2 * i],
                body_b=b[2 * i + 2],
                offset_a=(0.1, 0.0, 0.0),
                axis_a=(0.0, 0.0, 1.0),
                axis_b=(0.0, 1.0, 1.0),
            )
        )
    for i, speed in ((1, 0.3), (3, -0.2)):
        model.add_constraint(BallJoint(body_a=b[i], offset_b=(0.0, 0.0, 1.0), anchor_velocity=(speed, 0.0, 0.0)))
    rng = np.random.default_rng(0)
    q, v = model.initial_state()
    Q = q.reshape(-1, 7)
    Q[:, :3] += rng.normal(size=(len(b), 3))
    Q[:, 3:] = rng.normal(size=(len(b), 4))
    Q[:, 3:] /= np.linalg.norm(Q[:, 3:], axis=1, keepdims=True)
    k = model.compile()(Q.reshape(-1), v, 0.4)
    with float64():
        g = np.asarray(model.holonomic_residual(Q.reshape(-1), 0.4))
        J = np.asarray(jax.jacfwd(model.holonomic_residual)(Q.reshape(-1), 0.4))
        Gamma = np.asarray(jax.jacfwd(model.gamma_v, argnums=1)(Q.reshape(-1), v))
        rate = np.asarray(jax.jacfwd(model.holonomic_residual, argnums=1)(Q.reshape(-1), 0.4))
    m = g.size
    np.testing.assert_allclose(k.holonomic_error, g, rtol=0, atol=1e-14)
    np.testing.assert_allclose(k.A[:m], J @ Gamma, rtol=0, atol=1e-13)
    np.testing.assert_allclose(k.holonomic_rate, rate, rtol=0, atol=1e-14)
    assert np.abs(rate).max() > 0.1 and len(model_module._Layout(model).constraint_groups) == 3
