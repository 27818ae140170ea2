"""The friction-model protocol (lcpdyn.friction.base): a user's model plugs into the stepper
without editing it -- on the dense path and island by island -- and is checked against the
protocol with errors that name what is missing; the built-in models satisfy it too."""

from __future__ import annotations

import numpy as np
import pytest

from lcpdyn import friction
from lcpdyn.body import RigidBody
from lcpdyn.contact import Plane, PointContact
from lcpdyn.friction import BOUNDED_LCP, FrictionBlock, FrictionModel, check_friction_model, make_friction
from lcpdyn.model import Model
from lcpdyn.stepper import Simulation
from scenes.scale import Spheres

G, MU, SIDE, H = 9.81, 0.5, 0.2, 1e-3


class Orthotropic:
    """A user's model, written against the protocol alone: box friction with a coefficient per
    direction of the plane's base basis, mu_1 = mu a_1 along t1 and mu_2 = mu a_2 along t2 (a
    ski, a grooved surface): -h mu a_k lam_N <= h lam_Tk <= h mu a_k lam_N with rigid stiction
    D v+ = sigma, so a body sliding along t_k decelerates at mu a_k g."""

    name = "orthotropic"
    default_method = "judice-pires"
    formulation = BOUNDED_LCP
    chooses_static_coefficient = False

    def __init__(self, along_t1: float = 1.0, along_t2: float = 1.0):
        self.along = np.array([along_t1, along_t2], float)

    def parameters(self) -> dict:
        return {"model": self.name, "along_t1": float(self.along[0]), "along_t2": float(self.along[1])}

    def block(self, D, v, h, mu, normal_force, friction_force, tangent, mu_static=None):
        r = mu.shape[0]
        hi = (h * mu * normal_force)[:, None] * self.along[None, :]
        return FrictionBlock(
            F=D, G=D, P=None, C=np.zeros((2 * r, 2 * r)), c=np.zeros(2 * r), lo=-hi.reshape(-1), hi=hi.reshape(-1),
            basis=np.tile(np.eye(2), (r, 1, 1)), kinetic=np.zeros(r, bool),
        )  # fmt: skip

    def world_force(self, x, block, tangent, h):
        impulse = x.reshape(-1, 2) / h
        return impulse[:, 0, None] * tangent[:, 0] + impulse[:, 1, None] * tangent[:, 1]


def _cubes(velocities):
    """Cubes (side 0.2 m, 1 kg) on four corners each, 1 m apart, launched at ``velocities``."""
    model = Model(gravity=(0.0, 0.0, -G))
    for k, velocity in enumerate(velocities):
        cube = model.add_body(
            RigidBody(f"cube{k}", 1.0, (SIDE**2 / 6,) * 3, position=(0.0, 1.0 * k, SIDE / 2), velocity=velocity)
        )
        for sx in (-1, 1):
            for sy in (-1, 1):
                model.add_contact(PointContact(cube, Plane(), MU, offset=(sx * SIDE / 2, sy * SIDE / 2, -SIDE / 2)))
    return model


def test_a_user_friction_model_plugs_in_and_meets_its_closed_form_on_both_paths():
    """Three cubes: along x (t1), along y (t2), at rest. Each sliding cube stops after
    v0^2 / (2 mu a_k g) along its direction (to v0 h, the first-order step), the resting one
    never moves, the weight is carried; the island path (general: assembled from the user's
    block) gives the dense path's motion (corner loads are not unique: rank 3 of 4)."""
    model = _cubes([(2.0, 0.0, 0.0), (0.0, 2.0, 0.0), (0.0, 0.0, 0.0)])
    user = Orthotropic(along_t1=0.6, along_t2=1.5)
    runs = {}
    for sparse in (False, True):
        sim = Simulation(model, user, H, sparse=sparse)
        assert (sim._islands is not None) == sparse and sim.friction is user
        runs[sparse] = sim.run(1.0)
        run = runs[sparse]
        assert np.all(run.solver_status == 0) and not run.solver_fallback.any()
        moved = run.position[-1] - run.initial_position
        np.testing.assert_allclose(run.velocity[-1], 0.0, atol=1e-8)
        assert moved[0, 0] == pytest.approx(4.0 / (2 * MU * 0.6 * G), abs=2.0 * H)
        assert moved[1, 1] == pytest.approx(4.0 / (2 * MU * 1.5 * G), abs=2.0 * H)
        np.testing.assert_allclose([moved[0, 1], moved[1, 0]], 0.0, atol=1e-9)
        np.testing.assert_allclose(moved[2], 0.0, atol=1e-9)
        np.testing.assert_allclose(run.contact_normal_force.sum(axis=1), 3 * G, rtol=1e-7)
        assert run.parameters["friction"] == {"model": "orthotropic", "along_t1": 0.6, "along_t2": 1.5}
    for name in ("position", "velocity", "angular_velocity"):
        np.testing.assert_allclose(getattr(runs[True], name), getattr(runs[False], name), rtol=0, atol=1e-8)


def test_a_registered_model_is_selected_by_name_and_rebuilt_from_its_parameters():
    try:
        assert friction.register(Orthotropic) is Orthotropic
        sim = Simulation(_cubes([(1.0, 0.0, 0.0)]), "orthotropic", H)
        assert isinstance(sim.friction, Orthotropic)
        rebuilt = make_friction(**{"model": "orthotropic", "along_t1": 0.5, "along_t2": 2.0})
        assert rebuilt.parameters() == {"model": "orthotropic", "along_t1": 0.5, "along_t2": 2.0}

        class Impostor(Orthotropic):
            pass

        with pytest.raises(ValueError, match="registered already"):
            friction.register(Impostor)
    finally:
        friction.MODELS.pop("orthotropic", None)
    with pytest.raises(ValueError, match="unknown friction model 'orthotropic'"):
        make_friction("orthotropic")


@pytest.mark.parametrize(
    "change, match",
    [
        ({"name": None}, "'name' must be a non-empty string"),
        ({"formulation": "penalty"}, "formulation must be"),
        ({"chooses_static_coefficient": "no"}, "chooses_static_coefficient"),
        ({"block": None}, "no method 'block'"),
        ({"world_force": None}, "no method 'world_force'"),
        ({"parameters": lambda: {"model": "other"}}, "parameters\\(\\) must be a dict"),
    ],
)
def test_a_model_that_breaks_the_protocol_is_refused_naming_the_member(change, match):
    model = Orthotropic()
    for key, value in change.items():
        setattr(model, key, value)
    with pytest.raises(TypeError, match=match):
        Simulation(_cubes([(0.0, 0.0, 0.0)]), model, H)
    with pytest.raises(TypeError, match="parameters only with a model name"):
        make_friction(Orthotropic(), along_t1=2.0)
    with pytest.raises(TypeError, match="friction model class"):
        friction.register(Orthotropic())


def test_a_model_chooses_its_rows_by_the_position_update_through_for_scheme():
    """``for_scheme(position_update)``: a user's model gives the simulation another model for a
    scheme (here an isotropic one under the midpoint scheme); what it gives is checked."""

    class BySchemes(Orthotropic):
        def for_scheme(self, position_update):
            return Orthotropic(1.0, 1.0) if position_update == "midpoint" else self

    model = BySchemes(1.0, 0.5)
    assert Simulation(_cubes([(0.0, 0.0, 0.0)]), model, H).friction is model
    chosen = Simulation(_cubes([(0.0, 0.0, 0.0)]), model, H, position_update="midpoint").friction
    assert type(chosen) is Orthotropic and chosen.along.tolist() == [1.0, 1.0]
    model.for_scheme = lambda position_update: object()
    with pytest.raises(TypeError, match="for_scheme\\('symplectic'\\) gave friction model object"):
        Simulation(_cubes([(0.0, 0.0, 0.0)]), model, H)


def test_the_built_in_models_satisfy_the_protocol():
    for name, cls in friction.MODELS.items():
        model = cls()
        assert isinstance(model, FrictionModel) and check_friction_model(model) is model
        assert model.name == name and model.parameters()["model"] == name


@pytest.mark.parametrize("model", ["polygonal", "continuous", "regularized-general", "box-general"])
def test_models_assembled_from_their_block_split_into_islands_like_the_dense_problem(model):
    """The general island path (each island assembled from the model's block and solved by
    its method) against the dense problem on random spheres (slide, then roll): the same
    states and forces to 1e-9. The regularized and box models are taken there with fused=False."""
    name, _, general = model.partition("-")
    options = {"fused": False} if general else {}
    scene = Spheres.build(count=6, seed=4, speed=2.0)
    runs = {}
    for sparse in (False, True):
        sim = Simulation(scene.model, scene.friction(name), scene.dt, sparse=sparse, **options)
        assert (sim._islands is not None) == sparse
        runs[sparse] = sim.run(0.15)
    dense, islands = runs[False], runs[True]
    assert np.all(islands.solver_status == 0)
    for field in ("position", "velocity", "angular_velocity", "contact_normal_force", "contact_friction_force"):
        np.testing.assert_allclose(getattr(islands, field), getattr(dense, field), rtol=0, atol=1e-9, err_msg=field)


def test_a_user_friction_model_takes_the_midpoint_scheme_laws():
    """The same cubes under Moreau's midpoint scheme, which writes each law at the middle or at
    the end of the step from the user's own block (docs/theory/step.md, "Friction in the
    midpoint scheme"): the stops are second-order close to v0^2 / (2 mu a_k g) -- where the
    first-order step is within v0 h -- and the cubes then stay at rest."""
    model = _cubes([(2.0, 0.0, 0.0), (0.0, 2.0, 0.0), (0.0, 0.0, 0.0)])
    run = Simulation(model, Orthotropic(along_t1=0.6, along_t2=1.5), H, position_update="midpoint").run(1.0)
    assert np.all(run.solver_status == 0)
    moved = run.position[-1] - run.initial_position
    deceleration = MU * np.array([0.6, 1.5]) * G
    assert moved[0, 0] == pytest.approx(4.0 / (2 * deceleration[0]), abs=deceleration[0] * H**2)
    assert moved[1, 1] == pytest.approx(4.0 / (2 * deceleration[1]), abs=deceleration[1] * H**2)
    np.testing.assert_allclose(moved[2], 0.0, atol=1e-12)
    assert np.abs(run.velocity[run.t > 0.75]).max() < 1e-10
