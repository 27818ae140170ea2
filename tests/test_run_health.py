"""Issue 9, items 5 and 6: run health recorded per step and never silent (non-finite values,
user-function failures, energy gains, the default position update), and the validation gaps
closed at construction."""

from __future__ import annotations

import json
import math
import warnings

import jax.numpy as jnp
import numpy as np
import pytest

import lcpdyn.stepper as stepper
import scenes
from lcpdyn import (
    BallJoint,
    BodyForce,
    DiskContact,
    EnergyWarning,
    Health,
    Model,
    Plane,
    PointContact,
    RevoluteJoint,
    RigidBody,
    Simulation,
    SimulationError,
    SphereContact,
    SpringDamper,
    euler_zxy,
    load,
)
from lcpdyn.kernels import gyroscopic_midpoint
from lcpdyn.rotation import np_rotation_matrix
from lcpdyn.strategies import coulomb

from .engine_helpers import sphere_model, wheel_model

ENERGY_GAIN = int(Health.ENERGY_GAIN)


def quiet_run(sim, t_end):
    """Run with EnergyWarning turned into an error: the run must not flag anything."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", EnergyWarning)
        return sim.run(t_end)


def assert_partial(error: SimulationError):
    """The error carries every completed step, and they are all finite."""
    partial = error.trajectory
    assert partial is not None
    assert partial.t.shape == (error.step,)
    np.testing.assert_allclose(partial.t, (np.arange(error.step) + 1) * 1e-3, rtol=1e-12)
    assert np.all(np.isfinite(partial.position)) and np.all(np.isfinite(partial.velocity))
    return partial


def ball(mu=0.3, **contact):
    model = Model()
    body = model.add_body(
        RigidBody("ball", 2.0, (0.08, 0.08, 0.08), position=(0.0, 0.0, 0.2), velocity=(1.0, 0.0, 0.0))
    )
    model.add_contact(SphereContact(body, Plane(), mu, radius=0.2, **contact))
    return model, body


# --- item 5a: non-finite values and user functions ------------------------------------------------
def test_body_force_returning_nan_names_the_force_and_keeps_the_trajectory():
    model, body = ball()

    def push(t, state):
        return jnp.where(t > 0.05, jnp.nan, 1.0) * jnp.array([1.0, 0.0, 0.0]), jnp.zeros(3)

    model.add_force(BodyForce(body, push))
    with pytest.raises(SimulationError) as info:
        Simulation(model, "coulomb", 1e-3).run(0.2)
    message = str(info.value)
    assert "force 0 (BodyForce on body 'ball') (function 'push')" in message
    assert "force = [nan nan nan]" in message
    assert info.value.step == 51  # t = 0.051 s is the first state with t > 0.05
    assert_partial(info.value)


def test_body_force_returning_an_infinite_torque_is_named():
    model, body = ball()
    model.add_force(BodyForce(body, lambda t, state: (jnp.zeros(3), jnp.where(t > 0.02, jnp.inf, 0.0) * jnp.ones(3))))
    with pytest.raises(SimulationError, match=r"BodyForce on body 'ball'.*torque = \[inf inf inf\]") as info:
        Simulation(model, "regularized", 1e-3).run(0.1)
    assert info.value.step == 21
    assert_partial(info.value)


def test_friction_profile_that_raises_becomes_a_simulation_error_with_the_cause():
    def profile(t):
        if t > 0.03:
            raise ZeroDivisionError("no grip table beyond 30 ms")
        return 0.3

    model, _ = ball(friction_profile=profile)
    with pytest.raises(SimulationError) as info:
        Simulation(model, "regularized", 1e-3).run(0.1)
    error = info.value
    assert isinstance(error.__cause__, ZeroDivisionError)
    assert "friction_profile of contact 0 (SphereContact on body 'ball') raised ZeroDivisionError" in str(error)
    assert "no grip table beyond 30 ms" in str(error)
    assert error.step == 31
    assert_partial(error)


@pytest.mark.parametrize("value", [math.nan, math.inf, -0.1])
def test_friction_profile_giving_a_bad_coefficient_is_named(value):
    model, _ = ball(friction_profile=lambda t: value if t > 0.01 else 0.3)
    with pytest.raises(
        SimulationError,
        match=r"friction_profile of contact 0 \(SphereContact on body 'ball'\) gave "
        r"mu = ",
    ) as info:
        Simulation(model, "coulomb", 1e-3).run(0.1)
    assert info.value.step == 11
    assert_partial(info.value)


def test_an_exception_inside_the_step_is_wrapped_with_the_trajectory(monkeypatch):
    """Whatever raises inside a step (here the solver front door) is re-raised as
    SimulationError, the original as __cause__, with the steps done."""
    model, _ = ball()
    sim = Simulation(model, "coulomb", 1e-3)
    original = coulomb.solve_fc
    calls = []

    def failing(sim, W, b, mu, guess, method):
        calls.append(1)
        if len(calls) == 8:  # the 8th step's solve (one per step, no fallback on this ball)
            raise ValueError("b must be finite; b[0] = nan")
        return original(sim, W, b, mu, guess, method)

    monkeypatch.setattr(coulomb, "solve_fc", failing)
    with pytest.raises(SimulationError, match="ValueError raised during the step: b must be finite") as info:
        sim.run(0.05)
    assert isinstance(info.value.__cause__, ValueError)
    assert info.value.step == 7
    assert_partial(info.value)


def test_a_spring_driving_the_velocity_to_overflow_names_the_body_and_the_energy():
    """k = 1e300 N/m stretched by 1 mm: the first step gives v = 1e294 m/s, whose kinetic energy
    overflows -- stopped naming the body and the quantity, not a raw exception later."""
    model = Model(gravity=(0.0, 0.0, 0.0))
    mass = model.add_body(RigidBody("mass", 1.0, (0.1, 0.1, 0.1), position=(1e-3, 0.0, 0.0)))
    model.add_force(SpringDamper(mass, (0.0, 0.0, 0.0), None, (0.0, 0.0, 0.0), stiffness=1e300))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's overflow note on the way
        with pytest.raises(
            SimulationError,
            match=r"body 'mass': the kinetic energy overflowed \(m \|v\|\^2 / 2 = "
            r"inf J",
        ) as info:
            Simulation(model, "coulomb", 1e-3).run(0.1)
    assert info.value.step == 1
    assert info.value.trajectory.t.shape == (1,)


def test_a_spring_whose_potential_overflows_at_the_start_is_rejected_at_construction():
    model = Model(gravity=(0.0, 0.0, 0.0))
    # (a position beyond MAX_POSITION is refused before the potential is looked at: a stiffness
    # of 1e300 N/m stretched by 1e8 m overflows it within the positions a body may take)
    mass = model.add_body(RigidBody("mass", 1.0, (0.1, 0.1, 0.1), position=(1e8, 0.0, 0.0)))
    model.add_force(SpringDamper(mass, (0.0, 0.0, 0.0), None, (0.0, 0.0, 0.0), stiffness=1e300))
    with pytest.raises(
        ValueError,
        match=r"initial potential energy is not finite.*force 0 \(SpringDamper on body "
        r"'mass'\) gave potential energy inf",
    ):
        Simulation(model, "coulomb", 1e-3)


def test_a_position_whose_gravity_potential_overflows_is_rejected_at_construction():
    # (masses beyond MASS_RANGE and positions beyond MAX_POSITION are refused first: a gravity of
    # 1e301 m/s^2 at 1e8 m overflows m g z within them)
    model = Model(gravity=(0.0, 0.0, -1e301))
    model.add_body(RigidBody("rocket", 1.0, (0.1, 0.1, 0.1), position=(0.0, 0.0, 1e8)))
    with pytest.raises(ValueError, match=r"body 'rocket': gravity's potential energy -m g \. x = inf J overflows"):
        Simulation(model, "coulomb", 1e-3)


def test_the_gyroscopic_newton_iteration_that_fails_is_reported(monkeypatch):
    model = Model(gravity=(0.0, 0.0, 0.0))
    model.add_body(RigidBody("top", 1.0, (1.0, 2.0, 3.0), angular_velocity=(10.0, 0.1, 10.0)))
    monkeypatch.setattr(stepper, "_NEWTON_ITERATIONS", 0)
    with pytest.raises(
        SimulationError,
        match=r"body 'top': the implicit midpoint step of the gyroscopic term did not "
        r"converge",
    ) as info:
        Simulation(model, "coulomb", 1e-2).run(0.1)
    assert info.value.step == 0 and info.value.trajectory.t.shape == (0,)


# --- the gyroscopic midpoint step -------------------------------------------------------------------
@pytest.mark.parametrize("speed, h", [(10.0, 1e-2), (100.0, 1e-2), (1e3, 1e-2), (1e3, 1e-3)])
def test_midpoint_gyroscopic_step_keeps_energy_and_body_momentum_of_a_free_asymmetric_body(speed, h):
    """I = (1, 2, 3), spinning near the unstable middle axis, up to h |omega| = 17 (where the
    Newton iteration needs the continuation in h): omega . I omega and |I omega| stay to 1e-10,
    while the paper's explicit term overflows."""
    model = Model(gravity=(0.0, 0.0, 0.0))
    model.add_body(RigidBody("top", 1.0, (1.0, 2.0, 3.0), angular_velocity=(speed, 0.01 * speed, speed)))
    trajectory = quiet_run(Simulation(model, "coulomb", h), 1000 * h)
    inertia = np.diag([1.0, 2.0, 3.0])
    body = np.array(
        [np_rotation_matrix(q).T @ w for q, w in zip(trajectory.quaternion[:, 0], trajectory.angular_velocity[:, 0])]
    )
    momentum = np.linalg.norm(body @ inertia, axis=1)
    initial = np.linalg.norm(inertia @ np.array([speed, 0.01 * speed, speed]))
    np.testing.assert_allclose(trajectory.energy, trajectory.initial_energy, rtol=1e-10)
    np.testing.assert_allclose(momentum, initial, rtol=1e-10)
    assert np.all(trajectory.health == 0)
    with pytest.raises(SimulationError):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            Simulation(model, "coulomb", h, gyroscopic="explicit").run(1000 * h)


def test_midpoint_kernel_solves_the_midpoint_equation_and_keeps_the_applied_torque():
    rng = np.random.default_rng(4)
    inertia = np.diag([0.3, 0.6, 0.4])
    M = np.zeros((6, 6))
    M[:3, :3] = 2.0 * np.eye(3)
    M[3:, 3:] = inertia
    v = rng.normal(size=6) * 20.0
    torque = rng.normal(size=3)
    force = np.concatenate([rng.normal(size=3), torque - np.cross(v[3:], inertia @ v[3:])])  # f_app - c
    h = 1e-2
    rhs, residual, _ = gyroscopic_midpoint(np.array([2.0]), inertia[None], v, force, h, 1e-14, 50)
    assert residual <= 1e-14
    np.testing.assert_allclose(rhs[:3], M[:3, :3] @ v[:3] + h * force[:3], rtol=1e-15)
    star = np.linalg.solve(inertia, rhs[3:] - h * torque)
    x = 0.5 * (v[3:] + star)
    np.testing.assert_allclose(inertia @ (star - v[3:]), -h * np.cross(x, inertia @ x), rtol=1e-9, atol=1e-12)
    assert star @ inertia @ star == pytest.approx(v[3:] @ inertia @ v[3:], rel=1e-13)


# --- item 5b: the energy check ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def paper_wheel():
    scene = scenes.wheel.build()
    sim = Simulation(scene.model, scene.friction("regularized"), scene.dt, position_update="paper")
    with pytest.warns(EnergyWarning) as record:
        trajectory = sim.run(scene.t_end)
    return trajectory, [str(w.message) for w in record if issubclass(w.category, EnergyWarning)]


def test_paper_update_wheel_is_flagged_while_rolling_and_warned_once(paper_wheel):
    """Eq. (7) gains energy while rolling (after 18 J were lost sliding): flagged against the
    running minimum, with one warning naming how many steps, the largest gain and when."""
    trajectory, messages = paper_wheel
    flagged = (trajectory.health & ENERGY_GAIN) != 0
    assert flagged.sum() > 500
    first = trajectory.t[np.argmax(flagged)]
    assert 2.0 < first < 4.0  # during rolling
    assert not flagged[trajectory.t < 2.0].any()
    rise = trajectory.energy[trajectory.t > 2.0]
    assert rise[-1] - rise.min() > 0.1  # the gain the flags are about, J
    assert len(messages) == 1
    message = messages[0]
    assert f"energy gain in {flagged.sum()} of 4000 steps (first at t = {first:.6g} s)" in message
    assert "position_update='paper', gyroscopic='explicit'" in message
    assert "energy_tolerance = 0.001" in message
    assert trajectory.parameters["energy_check"] == "warn"


def test_default_update_wheel_is_not_flagged(paper_wheel):
    scene = scenes.wheel.build()
    for friction in ("regularized", "coulomb"):
        trajectory = quiet_run(Simulation(scene.model, scene.friction(friction), scene.dt), scene.t_end)
        assert np.all(trajectory.health == 0), friction
        assert trajectory.parameters["position_update"] == "symplectic"
        assert trajectory.parameters["gyroscopic"] == "midpoint"


def test_energy_check_stop_raises_at_the_first_flagged_step_with_the_trajectory(paper_wheel):
    flagged_run, _ = paper_wheel
    first = int(np.argmax((flagged_run.health & ENERGY_GAIN) != 0))
    scene = scenes.wheel.build()
    sim = Simulation(scene.model, scene.friction("regularized"), scene.dt, position_update="paper", energy_check="stop")
    with pytest.raises(
        SimulationError,
        match=r"the energy rose .* J above its lowest value so far, more than "
        r"energy_tolerance = 0.001 .*energy_check='stop'",
    ) as info:
        sim.run(scene.t_end)
    partial = info.value.trajectory
    assert partial.t.shape == (first + 1,)  # the flagged step is recorded, with its flag
    assert partial.health[-1] & ENERGY_GAIN and not np.any(partial.health[:-1] & ENERGY_GAIN)
    np.testing.assert_array_equal(partial.energy, flagged_run.energy[: first + 1])


def test_energy_check_off_records_no_flag():
    scene = scenes.wheel.build(t_end=3.0)
    trajectory = quiet_run(
        Simulation(scene.model, scene.friction("regularized"), scene.dt, position_update="paper", energy_check="off"),
        scene.t_end,
    )
    assert np.all(trajectory.health == 0)


def test_a_larger_tolerance_accepts_the_paper_gain():
    scene = scenes.wheel.build()
    trajectory = quiet_run(
        Simulation(
            scene.model, scene.friction("regularized"), scene.dt, position_update="paper", energy_tolerance=0.05
        ),
        scene.t_end,
    )
    assert np.all(trajectory.health == 0)


def test_frictionless_and_conservative_runs_are_not_flagged():
    """Energy that only oscillates (symplectic Euler's bounded error) is no gain: the check
    carries the scheme's O(h) modified-energy term, so even a coarse spring step passes."""
    quiet_run(Simulation(sphere_model(), "coulomb", 1e-3), 1.0)
    quiet_run(
        Simulation(
            wheel_model(mu=0.0, theta_deg=10.0, velocity=(0.0, 0.0, 0.0), angular_velocity=(0.0, 0.0, 3.0)),
            "coulomb",
            2e-3,
        ),
        0.5,
    )
    pendulum = Model()
    bob = pendulum.add_body(RigidBody("bob", 1.0, (0.01, 0.01, 0.01), position=(1.0, 0.0, 0.0)))
    pendulum.add_constraint(BallJoint(body_a=bob, offset_a=(-1.0, 0.0, 0.0), offset_b=(0.0, 0.0, 0.0)))
    trajectory = quiet_run(Simulation(pendulum, "coulomb", 1e-3), 3.0)
    assert np.ptp(trajectory.energy) > 1e-3 * 9.81  # it does oscillate by more than the tolerance
    spring = Model(gravity=(0.0, 0.0, 0.0))
    mass = spring.add_body(RigidBody("mass", 2.0, (0.1, 0.1, 0.1), position=(0.1, 0.0, 0.0)))
    spring.add_force(SpringDamper(mass, (0.0, 0.0, 0.0), None, (0.0, 0.0, 0.0), stiffness=50.0))
    trajectory = quiet_run(Simulation(spring, "coulomb", 5e-2), 10.0)  # h omega = 0.25
    assert np.ptp(trajectory.energy) > 0.1 * trajectory.initial_energy


def test_work_of_a_body_force_is_counted_as_energy_put_in():
    """A ball pushed by 5 N gains kinetic energy: the work 5 N x distance is in the budget, so
    nothing is flagged -- and with the force left out of the budget it would be."""
    model, body = ball(mu=0.1)
    model.add_force(BodyForce(body, lambda t, state: (jnp.array([5.0, 0.0, 0.0]), jnp.zeros(3))))
    sim = Simulation(model, "coulomb", 1e-3)
    trajectory = quiet_run(sim, 1.0)
    assert trajectory.energy[-1] - trajectory.initial_energy > 5.0
    assert sim._work == pytest.approx(
        5.0 * (trajectory.position[-1, 0, 0] - trajectory.initial_position[0, 0]), rel=1e-3
    )
    sim.reset()
    sim._nonconservative = False  # forget the force's work
    with pytest.warns(EnergyWarning):
        sim.run(1.0)


def test_work_of_a_driven_joint_is_counted_as_energy_put_in():
    """A pendulum whose hinge is driven upwards at 3 m/s: the joint lifts it (~59 J in 2 s), which
    is the driving work (h lam) . u, not a gain."""
    model = Model()
    bob = model.add_body(RigidBody("bob", 2.0, (0.02, 0.05, 0.05), position=(-1.0, 0.0, 0.0), velocity=(0.0, 0.0, 3.0)))
    model.add_constraint(RevoluteJoint(body_a=bob, offset_a=(1.0, 0.0, 0.0), anchor_velocity=(0.0, 0.0, 3.0)))
    sim = Simulation(model, "coulomb", 1e-3)
    trajectory = quiet_run(sim, 2.0)
    assert trajectory.energy[-1] - trajectory.initial_energy > 50.0
    assert np.all(trajectory.health == 0)
    sim.reset()
    sim._driven = False
    with pytest.warns(EnergyWarning):
        sim.run(2.0)


def test_a_deep_initial_penetration_is_flagged():
    """A block started 1 mm inside the floor is pushed out at 1 m/s by the beta = 1 stabilization
    and jumps 5 cm: energy from nowhere, flagged on purpose (see the stepper's docstring)."""
    model = Model()
    block = model.add_body(RigidBody("block", 1.0, (0.01, 0.01, 0.01), position=(0.0, 0.0, -1e-3)))
    model.add_contact(PointContact(block, Plane(), 0.3))
    with pytest.warns(EnergyWarning, match=r"energy gain in \d+ of 500 steps \(first at t = 0.001 s\)"):
        trajectory = Simulation(model, "coulomb", 1e-3).run(0.5)
    assert trajectory.health[0] & ENERGY_GAIN
    assert trajectory.position[:, 0, 2].max() > 0.04


def test_health_marks_the_fallback_steps():
    options = {"max_sweeps": 10, "check_every": 1}
    scene = scenes.build_scene("sliding-block")
    trajectory = Simulation(scene.model, "regularized", 1e-3, method="pgs", solver_options=options).run(0.45)
    assert trajectory.solver_fallback.sum() > 0
    np.testing.assert_array_equal((trajectory.health & int(Health.FALLBACK)) != 0, trajectory.solver_fallback != 0)


def test_health_is_saved_loaded_and_old_files_still_load(tmp_path):
    model, _ = ball()
    sim = Simulation(model, "coulomb", 1e-3)
    trajectory = sim.run(0.05)
    trajectory.arrays["health"][3] = ENERGY_GAIN | int(Health.FALLBACK)  # something to round-trip
    path = tmp_path / "new.npz"
    trajectory.save(path)
    again = load(path)
    np.testing.assert_array_equal(again.health, trajectory.health)
    assert again.health.dtype == np.int8
    assert again.parameters["energy_check"] == "warn" and again.parameters["energy_tolerance"] == 1e-3
    # a file written before the field existed: health rebuilt from solver_fallback
    with np.load(path, allow_pickle=False) as data:
        old = {k: data[k] for k in data.files if k != "health"}
    parameters = json.loads(str(old["parameters"]))
    for key in ("energy_check", "energy_tolerance", "gyroscopic"):
        del parameters[key]
    old["parameters"] = json.dumps(parameters)
    old["solver_fallback"] = old["solver_fallback"].copy()
    old["solver_fallback"][[1, 4]] = 1
    old_path = tmp_path / "old.npz"
    np.savez_compressed(old_path, **old)
    legacy = load(old_path)
    expected = np.zeros(50, np.int8)
    expected[[1, 4]] = int(Health.FALLBACK)
    np.testing.assert_array_equal(legacy.health, expected)
    assert legacy.parameters["energy_check"] == "not recorded"


# --- item 5c/d: the default position update on the tilted and the spinning wheel --------------------
@pytest.mark.parametrize(
    "case",
    [dict(theta_deg=60.0, speed=0.0, yaw_rate=0.0), dict(yaw_rate=-100.0), dict(yaw_rate=-1000.0)],
    ids=["tilted-at-rest", "yaw-100", "yaw-1000"],
)
def test_default_update_never_gains_energy_on_the_wheel(case):
    """The default (v+ update, midpoint gyroscopic step) never lifts the energy above its start
    and flags nothing; released at rest at 60 deg the disk falls flat, which stops the run with
    the flat-disk error (the trajectory kept)."""
    scene = scenes.wheel.build(**case)
    sim = Simulation(scene.model, scene.friction("regularized"), scene.dt)
    try:
        trajectory = quiet_run(sim, scene.t_end)
    except SimulationError as exc:
        assert "lies flat on its plane" in str(exc) and case["theta_deg"] == 60.0
        trajectory = assert_partial(exc)
        assert trajectory.t[-1] > 0.5
    assert np.max(trajectory.energy) <= trajectory.initial_energy * (1 + 1e-9)
    assert np.all(trajectory.health == 0)


def test_paper_update_gains_energy_on_the_tilted_disk_at_rest():
    """Why the default changed: with Eq. (7) the disk released at rest at 60 deg gains ~20 J
    (2.45 J -> 24 J) and jumps, every step SOLVED -- now flagged."""
    scene = scenes.wheel.build(theta_deg=60.0, speed=0.0, yaw_rate=0.0)
    with pytest.warns(EnergyWarning):
        trajectory = Simulation(scene.model, scene.friction("regularized"), scene.dt, position_update="paper").run(
            scene.t_end
        )
    assert np.max(trajectory.energy) > 5 * trajectory.initial_energy
    assert np.all(trajectory.solver_status == 0)
    assert np.any(trajectory.health & ENERGY_GAIN)


@pytest.mark.parametrize("gyroscopic", ["explicit", None])
def test_explicit_gyroscopic_term_blows_up_the_spinning_wheel_into_a_simulation_error(gyroscopic):
    """yaw rate -1000 rad/s under the paper's scheme (explicit omega x I omega; with either position
    update): the energy grows until the kinetic energy overflows, which ends the run with a
    SimulationError carrying the trajectory -- never a raw ValueError from inside the solver."""
    scene = scenes.wheel.build(yaw_rate=-1000.0)
    update = "paper" if gyroscopic is None else "symplectic"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(SimulationError, match="body 'wheel'") as info:
            Simulation(
                scene.model, scene.friction("regularized"), scene.dt, position_update=update, gyroscopic=gyroscopic
            ).run(scene.t_end)
    partial = info.value.trajectory
    assert partial.t.shape == (info.value.step,) and info.value.step > 10
    assert np.any(partial.health & ENERGY_GAIN)


# --- item 6: validation at construction ------------------------------------------------------------
def tilted_disk(theta_deg=20.0, **contact):
    model = Model()
    theta = math.radians(theta_deg)
    body = model.add_body(
        RigidBody(
            "wheel",
            1.0,
            (0.3, 0.6, 0.3),
            position=(0.0, 0.0, 0.5 * math.cos(theta)),
            orientation=euler_zxy(0.0, theta, 0.0),
        )
    )
    return model, body, lambda: model.add_contact(DiskContact(body, Plane(), 0.3, radius=0.5, **contact))


@pytest.mark.parametrize("value", [math.nan, math.inf, 0.0, -1e-6, 1.0, 2.0, "0.1"])
def test_min_sin_tilt_outside_the_open_unit_interval_is_rejected(value):
    _, _, add = tilted_disk(min_sin_tilt=value)
    with pytest.raises(ValueError, match=r"disk contact on 'wheel': min_sin_tilt"):
        add()


def test_min_sin_tilt_at_or_above_the_initial_tilt_sine_is_rejected():
    _, _, add = tilted_disk(theta_deg=70.0, min_sin_tilt=0.5)  # |n x axis| = cos 70 deg = 0.342
    with pytest.raises(
        ValueError,
        match=r"min_sin_tilt = 0.5 is not below the disk's initial tilt sine "
        r"\|n x axis\| = 0.342",
    ):
        add()
    _, _, add = tilted_disk(theta_deg=89.99999)  # the default 1e-6 against 1.7e-7
    with pytest.raises(ValueError, match="min_sin_tilt = 1e-06 is not below"):
        add()


def test_the_stepper_uses_each_disks_own_min_sin_tilt():
    """A disk at rest tilted 40 deg falls over; with min_sin_tilt = 0.5 the run stops as soon as
    |n x axis| < 0.5 (tilt beyond 60 deg), naming the contact and its threshold, instead of at the
    engine's old hard-coded 1e-6."""
    model, _, add = tilted_disk(theta_deg=40.0, min_sin_tilt=0.5)
    add()
    with pytest.raises(
        SimulationError,
        match=r"contact 0 \(DiskContact on body 'wheel'\) lies flat on its plane "
        r"\(\|n x axis\| = 0\.4\d* < min_sin_tilt = 0.5\)",
    ) as info:
        Simulation(model, "regularized", 1e-3).run(2.0)
    partial = assert_partial(info.value)
    axis = np.array([np_rotation_matrix(q) @ [0.0, 1.0, 0.0] for q in partial.quaternion[:, 0]])
    sin_tilt = np.linalg.norm(np.cross([0.0, 0.0, 1.0], axis), axis=1)
    assert sin_tilt[:-1].min() >= 0.5 and sin_tilt[-1] < 0.5  # stopped at the first state below


@pytest.mark.parametrize("inertia", [(1.0, 1.0, 3.0), (0.3, 0.3, 0.61), (5.0, 1.0, 1.0)])
def test_principal_moments_violating_the_triangle_inequality_are_rejected(inertia):
    with pytest.raises(
        ValueError,
        match=r"body 'slab': principal moments of inertia .* violate the triangle "
        r"inequality",
    ):
        RigidBody("slab", 1.0, inertia)


def test_an_inertia_matrix_violating_the_triangle_inequality_is_rejected():
    rotation = np_rotation_matrix(np.array([0.9, 0.1, -0.3, 0.2]) / np.linalg.norm([0.9, 0.1, -0.3, 0.2]))
    matrix = rotation @ np.diag([1.0, 1.0, 3.0]) @ rotation.T
    with pytest.raises(ValueError, match=r"body 'slab': .*triangle inequality"):
        RigidBody("slab", 1.0, 0.5 * (matrix + matrix.T))
    good = rotation @ np.diag([0.3, 0.3, 0.6]) @ rotation.T  # a flat disk: equality holds
    RigidBody("disk", 1.0, 0.5 * (good + good.T))
    RigidBody("wheel", 1.0, (0.3, 0.6, 0.3))  # Peiret 2016 Table 1, I1 + I3 = I2 exactly


@pytest.mark.parametrize("dt", [1e-300, 1e-12, 5e-10])
def test_step_sizes_below_min_dt_are_rejected_at_construction(dt):
    with pytest.raises(ValueError, match=rf"dt = {dt!r} s is below the smallest step size MIN_DT = 1e-09 s"):
        Simulation(sphere_model(), "coulomb", dt)


def test_runs_needing_absurd_step_counts_are_rejected_before_any_work():
    sim = Simulation(sphere_model(), "coulomb", 1e-9)
    with pytest.raises(ValueError, match=r"t_end = 1.0 with dt = 1e-09 needs 1e\+09 steps, more than MAX_STEPS"):
        sim.run(1.0)
    assert sim.steps_done == 0 and sim.timing is None  # nothing was allocated or stepped


@pytest.mark.parametrize(
    "quaternion, expected",
    [
        ((1e300, 1e300, 0.0, 0.0), (math.sqrt(0.5), math.sqrt(0.5), 0.0, 0.0)),
        ((1.7e308, 0.0, 0.0, -1.7e308), (math.sqrt(0.5), 0.0, 0.0, -math.sqrt(0.5))),
        ((1e-310, 0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0)),
        ((2.0, 0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0)),
    ],
)
def test_orientations_of_any_finite_scale_are_normalized_without_overflow(quaternion, expected):
    body = RigidBody("b", 1.0, (0.1, 0.1, 0.1), orientation=quaternion)
    np.testing.assert_allclose(body.orientation, expected, rtol=1e-15)
    assert np.linalg.norm(body.orientation) == pytest.approx(1.0, rel=1e-15)


@pytest.mark.parametrize(
    "quaternion, pattern",
    [
        ((0.0, 0.0, 0.0, 0.0), "must be nonzero"),
        ((math.inf, 0.0, 0.0, 0.0), "must be finite"),
        ((math.nan, 1.0, 0.0, 0.0), "must be finite"),
    ],
)
def test_bad_orientations_are_named(quaternion, pattern):
    with pytest.raises(ValueError, match=rf"body 'b': orientation {pattern}"):
        RigidBody("b", 1.0, (0.1, 0.1, 0.1), orientation=quaternion)


def test_huge_axis_and_normal_vectors_are_normalized():
    body = RigidBody("wheel", 1.0, (0.3, 0.6, 0.3), position=(0.0, 0.0, 0.5))
    plane = Plane(normal=(0.0, 0.0, 1e308), tangent=(1e308, 0.0, 0.0))
    np.testing.assert_array_equal(plane.normal, [0.0, 0.0, 1.0])
    np.testing.assert_array_equal(plane.t1, [1.0, 0.0, 0.0])
    contact = DiskContact(body, plane, 0.3, radius=0.5, axis=(0.0, 1e300, 0.0))
    np.testing.assert_array_equal(contact.axis, [0.0, 1.0, 0.0])


@pytest.mark.parametrize(
    "name, value, term",
    [
        ("velocity", (1e200, 0.0, 0.0), r"m \|v\|\^2 / 2"),
        ("angular_velocity", (0.0, 0.0, 1e160), r"omega \. I omega / 2"),
    ],
)
def test_velocities_that_overflow_the_kinetic_energy_are_rejected(name, value, term):
    with pytest.raises(ValueError, match=rf"body 'fast': {name} overflows the kinetic energy \({term} = inf J\)"):
        RigidBody("fast", 1.0, (0.1, 0.1, 0.1), **{name: value})


@pytest.mark.parametrize("mass", [-1.0, 0.0, math.nan, math.inf, -math.inf, "1", None, True])
def test_bad_masses_are_rejected_naming_the_body(mass):
    with pytest.raises(ValueError, match=r"body 'b': mass must"):
        RigidBody("b", mass, (0.1, 0.1, 0.1))


@pytest.mark.parametrize("key, value", [("mu", -0.1), ("mu", math.nan), ("mu", math.inf), ("mu_static", -0.2)])
def test_bad_friction_coefficients_are_rejected_naming_the_contact(key, value):
    body = RigidBody("ball", 1.0, (0.1, 0.1, 0.1), position=(0.0, 0.0, 0.1))
    arguments = {"mu": 0.3, key: value}
    with pytest.raises(ValueError, match=rf"contact on body 'ball': .*{key}"):
        SphereContact(body, Plane(), radius=0.1, **arguments)
