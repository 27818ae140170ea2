"""The whole-run compiled loop (lcpdyn.compiled_loop): the same motion as the ordinary step, every
answer measured on the host, refused steps taken by the ordinary step, chunking invisible."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import scenes
from lcpdyn.compiled_loop import Chunk, declined_by_auto, unsupported
from lcpdyn.rebuild import resume
from lcpdyn.stepper import Simulation
from lcpdyn.trajectory import load

FIELDS = ("position", "quaternion", "velocity", "angular_velocity", "contact_normal_force", "contact_friction_force")


@pytest.fixture(scope="module")
def wheel():
    return scenes.build_scene("wheel")


@pytest.mark.parametrize("friction", ["regularized", "box", "polygonal"])
def test_compiled_loop_follows_the_ordinary_step(wheel, friction):
    """Peiret's wheel, 1 s (slides, then rolls): the compiled loop's motion is the ordinary
    step's to rounding, every step measured and SOLVED, all but the first step compiled. The
    polygonal cone (k + 1 = 9 unknowns per contact) with judice-pires, which the loop pivots like."""
    method = {"method": "judice-pires"} if friction == "polygonal" else {}
    ordinary = Simulation(wheel.model, friction, wheel.dt, **method).run(1.0)
    sim = Simulation(wheel.model, friction, wheel.dt, compiled_loop=True, **method)
    compiled = sim.run(1.0)
    assert sim.loop_steps["compiled"] >= 990 and sum(sim.loop_steps.values()) == 1000
    assert np.all(compiled.solver_status == 0) and np.all(compiled.solver_residual <= sim.tolerance)
    assert np.max(np.abs(compiled.velocity - ordinary.velocity)) < 1e-9  # m/s, of ~6 m/s
    assert np.max(np.abs(compiled.position - ordinary.position)) < 1e-11  # m
    assert np.max(np.abs(compiled.contact_normal_force - ordinary.contact_normal_force)) < 1e-7  # N, of ~16 N
    assert np.max(np.abs(compiled.contact_friction_force - ordinary.contact_friction_force)) < 1e-7
    assert np.max(np.abs(compiled.energy - ordinary.energy)) < 1e-9 * np.max(np.abs(ordinary.energy))
    np.testing.assert_array_equal(compiled.contact_kinetic, ordinary.contact_kinetic)
    np.testing.assert_array_equal(compiled.health, ordinary.health)
    assert sim.parameters()["compiled_loop"] is True
    assert np.all(sim.timing[1:, 2] > 0.0)  # the compiled call is timed as the solve


def test_compiled_loop_takes_the_static_branch_in_the_cone(wheel):
    """static_bound="cone" (its three more passes per step, each from the last pass's force and
    normal force): the wheel to 2.5 s, past its slide -> roll switch at 2.0 s, follows the
    ordinary step to rounding and keeps its static force in the cone."""
    from lcpdyn.friction import Regularized
    from lcpdyn.metrics import static_force_ratio

    constants = wheel.contact_model
    cone = Regularized(constants["tangential_stiffness"], constants["velocity_threshold"], static_bound="cone")
    ordinary = Simulation(wheel.model, cone, wheel.dt).run(2.5)
    sim = Simulation(wheel.model, cone, wheel.dt, compiled_loop=True)
    compiled = sim.run(2.5)
    assert sim.loop_steps["compiled"] >= 2490
    assert np.all(compiled.solver_status == 0) and np.all(compiled.solver_residual <= sim.tolerance)
    assert np.max(np.abs(compiled.velocity - ordinary.velocity)) < 1e-9
    assert np.max(np.abs(compiled.contact_friction_force - ordinary.contact_friction_force)) < 1e-7
    np.testing.assert_array_equal(compiled.solver_iterations, ordinary.solver_iterations)  # the same passes
    assert 1.0 < static_force_ratio(compiled)["max"] < 1.001


def test_compiled_loop_is_reproducible_and_chunking_is_invisible(wheel, tmp_path):
    """Bit for bit: a repeat; other record_every and chunk_steps (other chunk boundaries); a run
    streamed to a file, stopped, and resumed from the file."""
    sim = Simulation(wheel.model, "regularized", wheel.dt, compiled_loop=True, scene={"name": "wheel"})
    first = sim.run(0.8)
    again = Simulation(wheel.model, "regularized", wheel.dt, compiled_loop=True).run(0.8)
    sparse = Simulation(wheel.model, "regularized", wheel.dt, compiled_loop=True).run(
        0.8, record_every=7, chunk_steps=33
    )
    rows = np.searchsorted(first.t, sparse.t)
    for name in FIELDS + ("energy", "health", "solver_residual"):
        np.testing.assert_array_equal(getattr(again, name), getattr(first, name))
        np.testing.assert_array_equal(getattr(sparse, name), getattr(first, name)[rows])
    path = tmp_path / "wheel.h5"
    Simulation(wheel.model, "regularized", wheel.dt, compiled_loop=True, scene={"name": "wheel"}).run(0.3, out=path)
    resume(path, 0.8)
    resumed = load(path)
    assert resumed.parameters["compiled_loop"] is True
    for name in FIELDS + ("energy",):
        np.testing.assert_array_equal(getattr(resumed, name), getattr(first, name))


def refusing(sim, refused):
    """``sim``'s loop with the first step of every chunk that ``refused(steps_done)`` names made
    wrong (its answer moved by 1 in a velocity), so that the host's residual rejects it: a
    failure of the loop's as persistent as the run asks, decided by the state alone."""
    run = sim._loop.run
    calls = []

    def spoil(state, steps):
        calls.append(state.steps_done)
        chunk = run(state, steps)
        if refused(state.steps_done) and chunk.done:
            z = chunk.z.copy()
            z[0, 0] += 1.0
            return chunk._replace(z=z)
        return chunk

    sim._loop.run = spoil
    return calls


def test_refused_steps_go_to_the_ordinary_step(wheel):
    """A loop whose every chunk is refused at its first step (its answer spoiled; the host's
    residual rejects it): every step goes to the ordinary step and the run is the ordinary run
    bit for bit, with the loop tried ever more rarely (backing off)."""
    ordinary = Simulation(wheel.model, "box", wheel.dt, compiled_loop=False).run(0.3)
    sim = Simulation(wheel.model, "box", wheel.dt, compiled_loop=True)
    calls = refusing(sim, lambda steps_done: True)
    compiled = sim.run(0.3)
    assert sim.loop_steps == {"compiled": 0, "ordinary": 300}
    assert len(calls) <= 10  # backing off 1, 2, 4, ... ordinary steps between attempts
    for name in FIELDS + ("energy", "solver_iterations", "solver_fallback"):
        np.testing.assert_array_equal(getattr(compiled, name), getattr(ordinary, name))


@pytest.mark.parametrize("friction", ["box", "polygonal"])
def test_a_block_on_four_corners_runs_in_the_loop(friction):
    """The sliding block on its four corners (redundant rigid contacts: every basic system
    singular; sliding, and from ~0.41 s at rest): the loop solves them for their minimum-norm
    members, as the ordinary Júdice–Pires does, and takes every step but the first, with the
    ordinary step's motion to rounding (measured: box 1e-14 m, polygonal 8e-14 m and 9e-13 m/s).
    The load sharing is indeterminate: the loop's is the minimum-norm one, left and right corners
    alike; the ordinary step's polygonal answer on some steps of the slide is another member of
    the family (1.53, 0.93, 3.38, 3.98 N against 1.23, 1.23, 3.68, 3.68 N at step 85), with the
    same total and moments."""
    block = scenes.build_scene("sliding-block")
    method = {"method": "judice-pires"} if friction == "polygonal" else {}
    ordinary = Simulation(block.model, friction, block.dt, **method).run(0.6)
    sim = Simulation(block.model, friction, block.dt, compiled_loop=True, **method)
    compiled = sim.run(0.6)
    assert sim.loop_steps == {"compiled": 599, "ordinary": 1}
    assert np.all(compiled.solver_status == 0) and np.all(compiled.solver_residual <= sim.tolerance)
    assert np.max(np.abs(compiled.velocity - ordinary.velocity)) < 1e-10  # m/s, of 2 m/s
    assert np.max(np.abs(compiled.position - ordinary.position)) < 1e-12  # m
    total = np.sum(compiled.contact_normal_force, axis=1)
    assert np.max(np.abs(total - np.sum(ordinary.contact_normal_force, axis=1))) < 1e-8  # N, of 9.81 N
    normal = compiled.contact_normal_force
    assert np.max(np.abs(normal[:, [0, 2]] - normal[:, [1, 3]])) < 1e-9  # left = right
    assert np.max(np.abs(compiled.velocity[-1])) < 1e-12  # at rest


@pytest.mark.parametrize("law", ["continuous", "creep"])
def test_the_laws_linearized_about_the_slip_run_in_the_loop(wheel, law):
    """Bauchau's continuous law and Kalker's creep with Vermeulen–Johnson saturation (two free
    unknowns per contact, the law linearized about the step's slip -- and spin, for creep, with the
    contact's rolling speed; the impulses act along D) in the loop: every step of the wheel's
    second but the first, with the ordinary step's motion to rounding (measured 2e-14 m, 5e-13
    m/s). The creep coefficients (5 N, 5 N, 0.5 N m: the wheel weighs 1 kg) saturate the force
    until step 632, then on 225 of the last 368 steps not."""
    from lcpdyn.friction import Creep

    model = Creep(f11=5.0, f22=5.0, f23=0.5) if law == "creep" else law
    ordinary = wheel.simulation(model, compiled_loop=False).run(1.0)
    sim = wheel.simulation(model)
    compiled = sim.run(1.0)
    assert sim.loop_steps == {"compiled": 999, "ordinary": 1}  # taken by "auto"
    assert np.all(compiled.solver_status == 0) and np.all(compiled.solver_residual <= sim.tolerance)
    assert np.max(np.abs(compiled.position - ordinary.position)) < 1e-12  # m
    assert np.max(np.abs(compiled.velocity - ordinary.velocity)) < 1e-10  # m/s, of 6 m/s
    if law == "creep":  # saturated, then not: both of the law's regimes in the run
        kinetic = np.asarray(compiled.contact_kinetic, bool)[:, 0]
        assert kinetic[:600].all() and np.sum(~kinetic) > 200


def test_a_disk_sticking_on_its_rim_runs_in_the_loop_under_the_polygonal_cone():
    """The disk rolling on its rim under friction (scenes.rolling_disk, rolling="friction"): its
    contact sticks, every facet row of the polygonal cone is at w = 0 and the basic systems are
    singular. The loop takes every step but the first, with the ordinary step's motion. Before,
    its pivoting judged each eliminated row's rounding against that row's own size: a free slip
    of 4e-9 m/s is a difference of velocities of order 1, whose rounding (1e-17) looked like an
    infeasibility, and the pivoting cycled between two sets; every step went back to the host."""
    from scenes import rolling_disk

    disk = rolling_disk.build(rolling="friction")
    ordinary = disk.simulation("polygonal", method="judice-pires", compiled_loop=False).run(0.3)
    sim = disk.simulation("polygonal", method="judice-pires", compiled_loop=True)
    compiled = sim.run(0.3)
    assert sim.loop_steps == {"compiled": 299, "ordinary": 1}
    assert np.all(compiled.solver_status == 0) and np.all(compiled.solver_residual <= sim.tolerance)
    assert np.max(np.abs(compiled.position - ordinary.position)) < 1e-13  # m (measured 1.8e-16)
    assert np.max(np.abs(compiled.velocity - ordinary.velocity)) < 1e-12  # m/s, of 0.41 m/s


def test_a_failing_step_is_taken_by_the_ordinary_step(wheel):
    """A step the host's residual rejects is discarded with everything after it in the chunk
    and redone by the ordinary step; the run goes on in the loop."""
    sim = Simulation(wheel.model, "regularized", wheel.dt, compiled_loop=True)
    run = sim._loop.run
    spoiled = []

    def spoil(state, steps):
        chunk = run(state, steps)
        if state.steps_done in (1, 300) and chunk.done > 5:  # corrupt the answer of the chunk's 6th step
            z = chunk.z.copy()
            z[5, 0] += 1.0
            spoiled.append(state.steps_done + 5)
            return chunk._replace(z=z)
        return chunk

    sim._loop.run = spoil
    compiled = sim.run(0.5)
    ordinary = Simulation(wheel.model, "regularized", wheel.dt).run(0.5)
    assert spoiled == [6] and sim.loop_steps["ordinary"] == 2  # the first step, the spoiled one
    assert np.all(compiled.solver_residual <= sim.tolerance)
    assert np.max(np.abs(compiled.velocity - ordinary.velocity)) < 1e-9


def test_chunk_energy_budget_is_the_step_by_step_one(wheel):
    """The vectorized energy budget of a chunk gives the same flags, gains and budget state as
    lcpdyn.run.energy.energy_health step by step, to the bit."""
    sim = Simulation(wheel.model, "regularized", wheel.dt, compiled_loop=True, energy_tolerance=1e-4)
    sim.run(0.01)
    rng = np.random.default_rng(3)
    count = 200
    kinetic = 5.0 + rng.random(count)
    potential = -3.0 + np.cumsum(rng.normal(0, 1e-3, count))
    work = rng.normal(0, 1e-4, count)
    power = rng.normal(0, 1e-2, count)
    zeros = np.zeros(count)
    chunk = Chunk(count, *([zeros] * 14), kinetic, potential, power, work)
    record = type("R", (), {})()
    from lcpdyn.run.energy import energy_health
    from lcpdyn.run.recorder import Recorder

    health = Recorder.chunk_health(record, sim, chunk, count)
    step = copy.copy(sim)
    flags, gains = [], []
    for i in range(count):
        flag, gain, _ = energy_health(step, potential[i] + kinetic[i], kinetic[i], work[i], power[i])
        flags.append(bool(flag))
        gains.append(gain)
    assert any(flags) and not all(flags)
    np.testing.assert_array_equal(health["flags"], flags)
    np.testing.assert_array_equal(health["gain"], gains)
    assert (health["works"][-1], health["lowest"][-1], health["scale"][-1]) == (step._work, step._lowest, step._scale)


def test_what_the_compiled_loop_cannot_run(wheel):
    disk = scenes.build_scene("rolling-disk")
    with pytest.raises(ValueError, match="bilateral rows"):
        Simulation(disk.model, "regularized", disk.dt, compiled_loop=True)
    for friction, culprit in (("coulomb", "friction model 'coulomb'"), ("polygonal", "method 'lemke'")):
        with pytest.raises(ValueError, match=culprit):  # the polygonal cone's default method is lemke
            Simulation(wheel.model, friction, wheel.dt, compiled_loop=True)
    with pytest.raises(ValueError, match="method 'lemke'"):
        Simulation(wheel.model, "regularized", wheel.dt, method="lemke", compiled_loop=True)
    with pytest.raises(ValueError, match="compiled_loop must be 'auto', True or False"):
        Simulation(wheel.model, "regularized", wheel.dt, compiled_loop="yes")
    assert unsupported(Simulation(wheel.model, "regularized", wheel.dt)) == []


def test_the_default_takes_the_compiled_loop_wherever_it_applies(wheel):
    """``compiled_loop="auto"`` (the default): the wheel under regularized and box runs in the
    compiled loop, the same run as ``compiled_loop=True`` bit for bit; a scene or model it cannot
    take (bilateral rows, the exact cone, lemke) runs the ordinary step, with no error, and so
    does a body on four contacts (the sliding block: a short run of a small scene, which the
    loop's compilation would not repay), which ``True`` runs in the loop; the choice made is
    what ``options`` records."""
    runs = {}
    for friction in ("regularized", "box"):
        for choice in ("auto", True):
            sim = Simulation(wheel.model, friction, wheel.dt, compiled_loop=choice)
            assert sim.options.compiled_loop is True
            runs[friction, choice] = sim.run(0.02)
            assert sim.loop_steps["compiled"] >= 19
        np.testing.assert_array_equal(runs[friction, "auto"].velocity, runs[friction, True].velocity)
    disk = scenes.build_scene("rolling-disk")
    block = scenes.build_scene("sliding-block")  # four corners
    assert declined_by_auto(Simulation(block.model, "regularized", block.dt, compiled_loop=False))
    assert Simulation(block.model, "regularized", block.dt, compiled_loop=True)._loop is not None  # asked: taken
    for sim in (
        Simulation(disk.model, "regularized", disk.dt),
        Simulation(wheel.model, "coulomb", wheel.dt),
        Simulation(wheel.model, "regularized", wheel.dt, method="lemke"),
        Simulation(block.model, "regularized", block.dt),
    ):
        assert sim.options.compiled_loop is False and sim._loop is None
        sim.run(0.003)
        assert sim.loop_steps["compiled"] == 0
    spheres = scenes.build_scene("spheres", count=64)
    with pytest.raises(ValueError, match="MAX_SIZE"):
        Simulation(spheres.model, "regularized", spheres.dt, compiled_loop=True)


def test_simulations_built_together_share_one_compilation(wheel, monkeypatch):
    """Loops of one structure made before any of them ran compile once, not once each (every
    compilation also keeps its machine code mapped: hundreds of them exhaust the process's maps)."""
    from collections import OrderedDict

    from lcpdyn import compiled_loop

    monkeypatch.setattr(compiled_loop, "_COMPILED", OrderedDict())
    sims = [Simulation(wheel.model, "regularized", dt, compiled_loop=True) for dt in (1e-3, 2e-3, 5e-4)]
    before = compiled_loop.COMPILATIONS[0]
    for sim in sims:
        sim.run(0.01)
    assert compiled_loop.COMPILATIONS[0] - before == 1


@pytest.mark.parametrize("friction", ["regularized", "box", "polygonal"])
def test_switches_inside_the_step_are_solved_again_in_the_loop(friction):
    """The steps the ordinary step solves twice (lcpdyn.friction_switches) are the compiled loop's
    own, with the same second solve: the incline block's pull test (mu_s = 0.5 > mu_k = 0.4, the
    pull breaks it away at t_b = 62.7 ms: the breakaway step takes mu_k) and, for the
    regularized model, the sliding sphere whose kinetic slip reverses in the step it stops in
    (v_th = 1e-4 m/s < mu g h: that step is solved again in the static branch; before, the host
    handed it and the steps after it to the ordinary step). Every step but the first is the
    loop's, and the motion, branches and pivoting iterations are the ordinary step's (the polygonal
    cone's motion: its sticking steps' bases are singular, its pivoting paths its own)."""
    from scenes.blocks import InclineBlock, SlidingSphere

    pull = InclineBlock.build(mu=0.4, mu_static=0.5, pull_rate=20.0)
    sphere = SlidingSphere.build(velocity_threshold=1e-4)
    runs = []
    for scene, end in [(pull, 0.2)] + ([(sphere, 0.15)] if friction == "regularized" else []):
        model, method = scene.friction(friction), {"method": "judice-pires"} if friction == "polygonal" else {}
        ordinary = Simulation(scene.model, model, scene.dt, compiled_loop=False, **method).run(end)
        sim = Simulation(scene.model, model, scene.dt, compiled_loop=True, **method)
        runs.append(compiled := sim.run(end))
        assert sim.loop_steps == {"compiled": round(end / scene.dt) - 1, "ordinary": 1}
        assert np.max(np.abs(compiled.velocity - ordinary.velocity)) < 1e-12
        np.testing.assert_array_equal(compiled.contact_kinetic, ordinary.contact_kinetic)
        if friction != "polygonal":  # the same pivoting; the cone's sticking steps take singular bases, which
            # the loop solves by the pseudo-inverse and the host by its own minimum-norm solve: other paths
            np.testing.assert_array_equal(compiled.solver_iterations, ordinary.solver_iterations)
    downhill = np.array([np.cos(np.radians(20.0)), 0.0, -np.sin(np.radians(20.0))])  # the plane's t1
    slid = (runs[0].position[:, 0] - pull.model.bodies[0].position) @ downhill
    exact = InclineBlock.distance(pull.parameters, runs[0].t)  # 17.3 mm at 0.2 s
    assert np.max(np.abs(slid - exact)) < 3e-5  # first order in h: the breakaway falls on a step (2.5e-5 m)


def test_a_run_continued_from_a_snapshot_takes_the_same_steps_in_the_loop(wheel):
    """A loop refused at every chunk that starts before 0.07 s (refusing): it hands those steps
    back and waits 1, 2, 4, ... ordinary steps before trying again. That schedule is state of the
    run (``loop_retry``, in the snapshot and a file's resume state): a run stopped at 0.1 s and
    continued from its snapshot in a new simulation takes the same steps in the loop and gives the
    uninterrupted run's motion bit for bit (before, the schedule restarted and the continued run
    differed in the last bits)."""

    def refused(steps_done):
        return steps_done < 70

    whole_sim = Simulation(wheel.model, "regularized", wheel.dt, compiled_loop=True)
    refusing(whole_sim, refused)
    whole = whole_sim.run(0.2)
    first = Simulation(wheel.model, "regularized", wheel.dt, compiled_loop=True)
    refusing(first, refused)
    head = first.run(0.1)
    assert first.loop_retry != (0, 1)  # stopped in the middle of a wait
    second = Simulation(wheel.model, "regularized", wheel.dt, compiled_loop=True)
    refusing(second, refused)
    second.restore(first.snapshot())
    tail = second.run(0.2)
    steps = {k: first.loop_steps[k] + second.loop_steps[k] for k in ("compiled", "ordinary")}
    assert steps == whole_sim.loop_steps and steps["compiled"] > 0 and steps["ordinary"] > 0
    np.testing.assert_array_equal(np.concatenate([head.position, tail.position]), whole.position)
    np.testing.assert_array_equal(np.concatenate([head.velocity, tail.velocity]), whole.velocity)
