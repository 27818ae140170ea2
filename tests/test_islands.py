"""The step split into per-body islands (lcpdyn.islands) against the dense path, the vectorized
kinematics' shared compilation, and a user-defined contact geometry plugged in through the
geometry protocol (lcpdyn.contact.Contact)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from lcpdyn import model as model_module
from lcpdyn.body import RigidBody
from lcpdyn.constraints import Holonomic
from lcpdyn.contact import Contact, Plane, SphereContact
from lcpdyn.model import Model
from lcpdyn.stepper import Simulation
from scenes import SCENES
from scenes.scale import Boxes, Spheres


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


def test_sparse_true_says_why_a_model_cannot_be_split():
    model = Model()
    a = model.add_body(RigidBody("a", 1.0, (0.01, 0.01, 0.01), (0.0, 0.0, 0.1)))
    b = model.add_body(RigidBody("b", 1.0, (0.01, 0.01, 0.01), (0.3, 0.0, 0.1)))
    model.add_contact(SphereContact(a, Plane(), 0.3, radius=0.1))
    model.add_constraint(Holonomic(lambda s: jnp.array([s.position(a)[0] - s.position(b)[0] + 0.3]), 1, "rod"))
    with pytest.raises(ValueError, match="bilateral rows"):
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
