"""Detected contacts in the one step (lcpdyn.detected_contacts, lcpdyn.strategies.detected): a
model's colliders give rows beside its joints and declared contacts, in Simulation's step."""

from __future__ import annotations

import numpy as np
import pytest

import scenes
from lcpdyn import Model, RigidBody, Simulation
from lcpdyn.collision import Box, Collider, HalfSpace, Sphere
from lcpdyn.detected_contacts import ContactProperties
from scenes import jointed_chain
from scenes.touching import box_tower, newtons_cradle, solid_box, solid_sphere

pytestmark = pytest.mark.filterwarnings("ignore::lcpdyn.stepper.EnergyWarning")


def _one_engine(builder, contact):
    """The scene of ``builder`` (a model with its colliders) with the contact properties."""
    model = builder()
    model.set_collisions(contact=contact)
    return model


def _apart(sparse, friction="regularized", **options):
    """Two towers of three boxes 1 m apart and a ball dropped 5 cm, 2 m from both: three islands once
    the ball lands (a body on the world's colliders alone is its own island)."""
    model = Model()
    s = 0.2
    for x in (0.0, 1.0):
        for i in range(3):
            box = model.add_body(solid_box(f"box {x} {i}", (s, s, s), 125.0, (x, 0.0, s / 2 + i * s)))
            model.add_collider(Collider(box, Box((s, s, s))))
    ball = model.add_body(solid_sphere("ball", 0.1, 500.0, (3.0, 0.0, 0.15), velocity=(0.5, 0.0, 0.0)))
    model.add_collider(Collider(ball, Sphere(0.1)))
    model.add_collider(Collider(None, HalfSpace(), name="ground"))
    model.set_collisions(margin=0.005, contact=ContactProperties(mu=0.5))
    return Simulation(model, friction, 1e-3, sparse=sparse, **options)


def _pair_loads(detected):
    """The normal force each pair of colliders carries, summed over its contacts: unique where
    the corners' shares of it are not (redundant contacts: any split of the load that keeps v+
    solves the step, and the whole problem and an island may pick different ones)."""
    pairs, index = np.unique(detected.contacts.collider, axis=0, return_inverse=True)
    return np.bincount(index.reshape(-1), detected.normal_force, minlength=len(pairs))


def test_detected_contacts_split_into_islands_give_the_whole_steps_answer():
    """The step with colliders is split into islands (joints' groups joined through the detected
    contacts, lcpdyn.strategies.detected.detected_islands; sparse=True splits every step, "auto"
    only those of more than lcpdyn.strategies.choice.WHOLE_SIZE unknowns): apart, the two towers and the ball
    are three problems, and the motion and the load each pair of colliders carries are the whole
    problem's (sparse=False) to rounding. The chain of ball-jointed links (one group through its
    joints) is an island apart from its box until it lands on it. Once redundant contacts carry
    friction (a link's two contacts on the box's face, the box's four corners) the motion depends
    on how the load is split among them, which the rigid problem leaves open; the island and the
    whole solve then start from different warm starts and may split it differently
    (test_a_jointed_chain_dropped_onto_a_box checks that motion's physics)."""
    split, whole = _apart(True), _apart(False)
    counts = []
    for _ in range(150):
        a, b = split.step(), whole.step()
        counts.append(a.detected.islands)
        assert b.detected.islands == 1
        assert np.abs(split.q - whole.q).max() < 1e-12 and np.abs(split.v - whole.v).max() < 1e-10
        assert np.abs(_pair_loads(a.detected) - _pair_loads(b.detected)).max() < 1e-9 * 9.81
    assert counts[0] == 2 and counts[-1] == 3  # the ball in the air at first, then on the ground
    assert split.options.sparse is True and whole.options.sparse is False
    assert _apart("auto").options.sparse == "auto"  # what a rebuild passes back: the choice stays per step
    scene = jointed_chain.build()
    split, whole = scene.simulation("regularized", sparse=True), scene.simulation("regularized", sparse=False)
    counts = []
    for _ in range(120):
        a, b = split.step(), whole.step()
        counts.append(a.detected.islands)
        if counts[-1] == 2:  # the box on the ground, the chain in the air: two problems
            assert np.abs(split.q - whole.q).max() < 1e-12
    assert counts[:90] == [2] * 90 and counts[-1] == 1  # the chain on the box: one island


def test_the_exact_cones_step_with_detected_contacts_splits_into_islands():
    """Exact Coulomb: each island's Delassus problem (its velocities eliminated) solved apart gives
    the whole problem's motion within the solver's tolerance, and each pair of colliders' load."""
    split, whole = _apart(True, "coulomb"), _apart(False, "coulomb")
    worst = 0.0
    for _ in range(150):
        a, b = split.step(), whole.step()
        assert b.detected.islands == 1 and b.problem is not None
        worst = max(worst, float(np.abs(split.q - whole.q).max()))
        assert np.abs(_pair_loads(a.detected) - _pair_loads(b.detected)).max() < 1e-6 * 125.0 * 0.008 * 9.81
    assert a.detected.islands == 3 and a.problem is None
    assert worst < 1e-9


def test_sparse_auto_splits_a_large_step_and_poses_a_small_one_whole():
    """sparse="auto": 60 spheres dropped into a bin are posed whole while they fall (360
    unknowns, at most WHOLE_SIZE) and island by island once they have landed (more)."""
    from lcpdyn.strategies.choice import WHOLE_SIZE
    from scenes.touching import sphere_pile

    model = sphere_pile(count=60)
    model.set_collisions(contact=ContactProperties(mu=0.3))
    sim = Simulation(model, "regularized", 1e-3)
    seen = []
    for _ in range(250):
        out = sim.step()
        seen.append((6 * 60 + 3 * len(out.detected), out.detected.islands))
    assert all(islands == 1 for size, islands in seen if size <= WHOLE_SIZE)
    assert all(islands > 1 for size, islands in seen if size > WHOLE_SIZE)
    assert seen[0][0] <= WHOLE_SIZE < seen[-1][0]


def test_newtons_cradle_keeps_energy_and_momentum_with_restitution_one():
    """Three touching balls, e = 1, no friction: the row takes the impact as one body --
    striker (1 - k)/(1 + k) v, the row 2/(1 + k) v for k = 2 (docs/theory/detected-contacts.md)."""
    model = _one_engine(newtons_cradle, ContactProperties(mu=0.0, restitution=1.0))
    sim = Simulation(model, "regularized", 1e-3)
    for _ in range(200):
        sim.step()
    v = sim.v.reshape(-1, 6)[:, 0]
    assert v == pytest.approx([-1 / 3, 2 / 3, 2 / 3], abs=1e-9)


def _chain(friction, t_end, **parameters):
    scene = jointed_chain.build(**parameters)
    sim = scene.simulation(friction)
    masses = np.array([b.mass for b in sim.model.bodies])
    gravity = -sim.model.gravity[2]
    outs, momentum = [], [masses @ sim.v.reshape(-1, 6)[:, 2]]
    for _ in range(round(t_end / sim.dt)):
        outs.append(sim.step())
        momentum.append(masses @ sim.v.reshape(-1, 6)[:, 2])
    return sim, outs, np.array(momentum), masses.sum() * gravity


@pytest.mark.parametrize("friction", ["regularized", "coulomb"])
def test_a_jointed_chain_dropped_onto_a_box(friction):
    """Joints and detected contacts in one problem: the chain falls onto the box and drapes over
    it, its ends swinging free. Exact checks of the step: the joints hold at drift
    stabilization's level; the vertical momentum of the whole scene changes, step by step, by
    gravity's impulse and the ground's (the box-chain contacts and the joints are internal: their
    impulses cancel); once the impacts are over the energy stays put (no damping anywhere)."""
    sim, outs, momentum, weight = _chain(friction, 0.8)
    h = sim.dt
    ground = 1  # the ground's collider index (the box is 0)
    lifted = []
    for out in outs:
        d = out.detected
        on_ground = d.contacts.collider[:, 1] == ground
        lifted.append(-d.impulse[on_ground, 2].sum())  # the impulse on the ground is the bodies' reaction
    assert np.diff(momentum) == pytest.approx(np.array(lifted) - weight * h, abs=1e-9 * weight * h * 10)
    k = sim.evaluate(sim.q, sim.v, sim.t)
    assert np.abs(k.holonomic_error).max() < 1e-6  # metres, after ~100 steps of draping
    touching = {tuple(pair) for out in outs[-100:] for pair in out.detected.contacts.collider}
    assert any(0 in pair and pair[1] != ground for pair in touching)  # links on the box
    assert (0, ground) in touching  # the box on the ground
    assert min(out.detected.contacts.gap.min() for out in outs if len(out.detected)) > -1e-4
    energies = []
    for _ in range(200):
        sim.step()
        energies.append(sim.energy())
    assert np.ptp(energies) < 1e-4 * energies[0]


def test_a_chain_at_rest_on_the_box_and_the_ground_carries_its_weight_there():
    """Ten links: the ends lie on the ground, friction stops them, and the ground carries the box
    and the chain, (box_mass + links mass) g, to 0.1 %."""
    scene = jointed_chain.build(links=10)
    sim = scene.simulation("regularized", stabilization=0.2)
    for _ in range(1200):
        out = sim.step()
    d = out.detected
    on_ground = d.contacts.collider[:, 1] == 1
    carried = -(d.normal_force[on_ground, None] * d.contacts.normal[on_ground] + d.friction_force[on_ground])[:, 2]
    weight = -sim.model.gravity[2] * sum(b.mass for b in sim.model.bodies)
    assert carried.sum() == pytest.approx(weight, rel=1e-3)
    assert 0.5 * sim.v @ (sim.M @ sim.v) < 1e-3


def test_snapshot_restore_continues_a_run_with_detected_contacts_bit_for_bit(tmp_path):
    """The detected contacts of the last step (the warm starts and friction history of the next)
    are part of the saved state, in memory and in a run's file."""
    from lcpdyn.rebuild import resume
    from lcpdyn.trajectory import DETECTED_FIELDS, FIELDS, load

    scene = jointed_chain.build(drop=0.0)
    whole = scene.simulation("regularized").run(0.06)
    first = scene.simulation("regularized")
    first.run(0.03)
    saved = first.snapshot()
    assert saved["contacts_gap"] is not None and saved["contact_impulse"].shape[1] == 3
    again = scene.simulation("regularized")
    again.restore(saved)
    second = again.run(0.06)
    assert np.array_equal(second.position[-1], whole.position[-1])
    path = tmp_path / "chain.h5"
    scene.simulation("regularized").run(0.03, out=path)
    resume(path, t_end=0.06)
    continued = load(path)
    for field in (*FIELDS, *DETECTED_FIELDS):
        assert np.array_equal(getattr(continued, field), getattr(whole, field)), field
    assert "collisions" in continued.parameters and continued.parameters["bound_passes"] == 2


def test_bodies_joined_by_a_joint_do_not_collide_and_the_settings_are_recorded():
    scene = jointed_chain.build(links=3)
    sim = scene.simulation("box")
    excluded = sim._collisions.world._excluded
    assert {(1, 2), (2, 3)} <= excluded and (1, 3) not in excluded
    recorded = sim.parameters()["collisions"]
    assert [c["name"] for c in recorded["colliders"]] == ["box", "ground", "link 0", "link 1", "link 2"]
    assert recorded["colliders"][2]["shape"] == {"type": "Capsule", "radius": 0.01, "length": 0.1}
    assert recorded["contact"] == {"mu": 0.5, "mu_static": 0.5, "restitution": 0.0, "normal_law": None}


def test_colliders_sit_beside_declared_contacts():
    """A sphere on a declared plane contact and a second sphere, found by detection, dropped onto
    it: both kinds of contact in one problem; at rest the plane carries both weights."""
    from lcpdyn.contact import Plane, SphereContact

    model = Model()
    low = model.add_body(RigidBody("low", 1.0, (0.004,) * 3, (0.0, 0.0, 0.1)))
    high = model.add_body(RigidBody("high", 2.0, (0.008,) * 3, (0.0, 0.0, 0.32)))
    model.add_contact(SphereContact(low, Plane(), 0.5, radius=0.1))
    model.add_collider(Collider(low, Sphere(0.1)))
    model.add_collider(Collider(high, Sphere(0.1)))
    model.set_collisions(margin=0.002, contact={"mu": 0.5})
    sim = Simulation(model, "regularized", 1e-3)
    for _ in range(400):
        out = sim.step()
    assert len(out.detected) == 1 and out.detected.normal_force[0] == pytest.approx(2.0 * 9.81, rel=1e-6)
    assert out.normal_force[0] == pytest.approx(3.0 * 9.81, rel=1e-6)
    assert sim.q.reshape(-1, 7)[1, 2] == pytest.approx(0.3, abs=1e-4)


def test_what_a_model_with_colliders_does_not_take_is_named():
    model = _one_engine(box_tower, ContactProperties())
    for options, named in (
        ({"compiled_loop": True}, "compiled_loop"),
        ({"sparse": "condensed"}, "condensed"),
    ):
        with pytest.raises(ValueError, match=named):
            Simulation(model, "regularized", 1e-3, **options)
    with pytest.raises(ValueError, match="rolling speed"):
        Simulation(model, "creep", 1e-3)
    stranger = RigidBody("stranger", 1.0, (1.0,) * 3)
    with pytest.raises(ValueError, match="stranger"):
        model.add_collider(Collider(stranger, Sphere(0.1)))
    with pytest.raises(TypeError, match="Collider"):
        model.add_collider(Sphere(0.1))
    with pytest.raises(ValueError, match="already"):
        model.add_collider(model.colliders[0])
    with pytest.raises(ValueError, match="not a collider of the world, a body or None"):
        model.set_collisions(pairs={(stranger, None): {"mu": 0.1}})
    with pytest.raises(ValueError, match="restitution"):
        model.set_collisions(contact={"restitution": 2.0})
    with pytest.raises(ValueError, match="bound_passes"):
        Simulation(model, "box", 1e-3, bound_passes=-1)
    assert Collider(None, HalfSpace()) is not None


@pytest.mark.parametrize("friction", ["coulomb", "regularized", "box", "polygonal", "continuous"])
def test_wheel_rolls_over_a_curb(coal, friction):
    """A wheel rolling at 3 m/s (no slip) meets a 5 cm curb, climbs it, rolls along and drops off
    the far side; the impacts are plastic (e = 0), so energy only goes -- under every model. (The
    continuous law used to add energy in the impact with the curb's edge, while a contact's rows
    were free ones with no data before it carried load; with them fixed at zero until it does, its
    energy rises by at most 3e-9 J.)"""
    from lcpdyn.trajectory import Health
    from scenes.touching import wheel_over_curb

    model = wheel_over_curb()
    model.set_collisions(contact=ContactProperties(mu=0.8))
    run = Simulation(model, friction, 1e-3).run(1.0)
    x, z = run.position[:, 0, 0], run.position[:, 0, 2]
    assert x[-1] > 2.0 and abs(z[-1] - 0.3) < 1e-4 and run.detected_count[-1] > 0  # past the curb, landed
    assert z.max() > 0.3 + 0.05 - 1e-6  # it went up the curb
    # the cylinder's contacts come from coal's GJK/EPA (tolerance 1e-6 by default): the deepest
    # penetration, at the impact on the curb's edge, is at the level of that accuracy
    assert run.solver_status.max() == 0 and -run.detected_gap.min() < 1e-5
    gained = (run.health & int(Health.ENERGY_GAIN)).any()
    assert not gained and run.energy.max() - run.initial_energy < 1e-6 and run.energy[-1] < 0.8 * run.initial_energy


def test_the_scene_is_listed():
    assert scenes.SCENES["chain-on-box"] is jointed_chain


@pytest.mark.parametrize(
    "friction,options,named",
    [
        ("creep", {}, "friction model 'creep'"),
        ("regularized", {"compiled_loop": True}, "compiled_loop=True"),
        ("regularized", {"sparse": "condensed"}, "sparse='condensed'"),
    ],
)
def test_what_a_step_with_colliders_does_not_take_is_named(friction, options, named):
    """Each combination a model with colliders refuses is named when the simulation is built."""
    model = Model()
    ball = model.add_body(solid_sphere("ball", 0.1, 1000.0, (0.0, 0.0, 0.2)))
    model.add_collider(Collider(ball, Sphere(0.1)))
    model.add_collider(Collider(None, HalfSpace()))
    model.set_collisions(margin=0.01, contact=ContactProperties(mu=0.5))
    with pytest.raises(ValueError, match="a model with colliders does not take .*" + named.replace("(", r"\(")):
        Simulation(model, friction, 1e-3, **options)
