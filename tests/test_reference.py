"""The event-driven exact Coulomb reference (lcpdyn.reference) against closed forms: the spinning
sphere curving on a plane, a block sliding to rest, a block on an incline with mu_s > mu_k, a ball
rolling down an incline, the frictionless wheel's invariants; its own consistency (E + W_friction
constant, switch times unchanged when the ODE tolerance tightens 100x); failures named."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lcpdyn import Model, RigidBody
from lcpdyn.compliance import SpringDamperLaw
from lcpdyn.contact import Plane, PointContact, SphereContact
from lcpdyn.reference import ReferenceFailure, ReferenceInterrupted, exact_coulomb

G = 9.81


def sphere_model(v0, w0, mu=0.3, radius=0.1, mass=2.0, gravity=(0.0, 0.0, -G)):
    inertia = 0.4 * mass * radius**2
    model = Model(gravity=gravity)
    body = model.add_body(RigidBody("ball", mass, (inertia,) * 3, position=(0.0, 0.0, radius), velocity=v0,
                                    angular_velocity=w0))  # fmt: skip
    model.add_contact(SphereContact(body, Plane(), mu, radius=radius))
    return model


def block_model(v0, mu, mu_static=None, gravity=(0.0, 0.0, -G)):
    """A block as a particle on the plane: its one contact point at the centre of mass, so the
    friction force has no moment and the block does not turn."""
    model = Model(gravity=gravity)
    body = model.add_body(RigidBody("block", 3.0, (0.1, 0.1, 0.1), position=(0.0, 0.0, 0.0), velocity=v0))
    model.add_contact(PointContact(body, Plane(), mu, mu_static=mu_static))
    return model


def test_spinning_sphere_curves_on_a_parabola_then_rolls_on_a_line():
    """Slip u0 = v0 + w0 x (-r n) decays along its own fixed direction at 7/2 mu g: it stops at
    t* = 2 |u0| / (7 mu g); the centre follows x0 + v0 t - mu g u^ t^2 / 2, then a line."""
    mu, r = 0.3, 0.1
    v0, w0 = np.array([1.0, 0.5, 0.0]), np.array([3.0, -4.0, 2.0])
    u0 = v0 + np.cross(w0, [0.0, 0.0, -r])
    direction = u0 / np.linalg.norm(u0)
    t_star = 2 * np.linalg.norm(u0) / (7 * mu * G)
    samples = np.linspace(0.0, 0.6, 61)
    sol = exact_coulomb(sphere_model(v0, w0, mu, r), 0.6, samples)
    assert [(e.kind, e.contact) for e in sol.events] == [("stick", 0)]
    assert sol.events[0].t == pytest.approx(t_star, abs=1e-8)
    v_star = v0 - mu * G * direction * t_star
    for t, x, lam in zip(sol.t, sol.position, sol.contact_force[:, 0]):
        before = min(t, t_star)
        expected = np.array([0.0, 0.0, r]) + v0 * before - 0.5 * mu * G * direction * before**2
        expected += v_star * max(t - t_star, 0.0)
        np.testing.assert_allclose(x, expected, atol=1e-8)
        if t < t_star - 1e-6:  # the friction force keeps the slip's first direction
            np.testing.assert_allclose(lam[1:] / np.linalg.norm(lam[1:]), -direction[:2], atol=1e-9)
            assert np.linalg.norm(lam[1:]) == pytest.approx(mu * lam[0], rel=1e-12)
        if t > t_star + 1e-6:
            np.testing.assert_allclose(sol.contact_velocity[np.searchsorted(sol.t, t), 0], 0.0, atol=1e-9)


def test_block_slides_to_rest_and_stays():
    mu, v0 = 0.4, 2.0
    stop = v0 / (mu * G)
    sol = exact_coulomb(block_model((v0, 0.0, 0.0), mu), 1.0, np.linspace(0.0, 1.0, 101))
    assert [e.kind for e in sol.events] == ["stick"]
    assert sol.events[0].t == pytest.approx(stop, abs=1e-8)
    x = np.where(sol.t < stop, v0 * sol.t - 0.5 * mu * G * sol.t**2, v0**2 / (2 * mu * G))
    np.testing.assert_allclose(sol.position[:, 0], x, atol=1e-8)
    np.testing.assert_allclose(sol.velocity[sol.t > stop], 0.0, atol=1e-9)


@pytest.mark.parametrize("theta_deg", [15.0])
def test_block_on_an_incline_with_static_above_kinetic_friction(theta_deg):
    """tan theta between mu_k = 0.2 and mu_s = 0.35: at rest the block stays (the static force
    m g sin theta < mu_s N, no event); moving, it accelerates down at g (sin theta - mu_k cos
    theta) and never sticks. The incline is the gravity's tilt."""
    theta = math.radians(theta_deg)
    gravity = (G * math.sin(theta), 0.0, -G * math.cos(theta))
    samples = np.linspace(0.0, 1.0, 51)
    resting = exact_coulomb(block_model((0.0, 0.0, 0.0), 0.2, 0.35, gravity), 1.0, samples)
    assert resting.events == [] and resting.segments[0][2] == ("stick",)
    np.testing.assert_allclose(resting.position, 0.0, atol=1e-12)
    np.testing.assert_allclose(resting.contact_force[:, 0, 1], -3.0 * G * math.sin(theta), rtol=1e-12)
    moving = exact_coulomb(block_model((0.5, 0.0, 0.0), 0.2, 0.35, gravity), 1.0, samples)
    assert moving.events == []
    a = G * (math.sin(theta) - 0.2 * math.cos(theta))
    np.testing.assert_allclose(moving.position[:, 0], 0.5 * samples + 0.5 * a * samples**2, atol=1e-8)


def test_ball_rolls_down_an_incline_at_five_sevenths_g_sin_theta():
    theta = math.radians(20.0)
    gravity = (G * math.sin(theta), 0.0, -G * math.cos(theta))
    samples = np.linspace(0.0, 1.0, 51)
    sol = exact_coulomb(sphere_model((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), mu=0.3, gravity=gravity), 1.0, samples)
    assert sol.events == [] and sol.segments[0][2] == ("stick",)
    np.testing.assert_allclose(sol.position[:, 0], 0.5 * 5 / 7 * G * math.sin(theta) * samples**2, atol=1e-8)
    # the static force needed, 2/7 m g sin theta, is inside the cone (mu >= 2/7 tan theta)
    np.testing.assert_allclose(-sol.contact_force[:, 0, 1], 2 / 7 * 2.0 * G * math.sin(theta), rtol=1e-9)


def test_frictionless_wheel_keeps_its_invariants():
    """Peiret's wheel with mu = 0: only vertical contact forces act, so the energy, the horizontal
    momentum, the angular momentum about the vertical through the centre and the spin about the
    axis (a symmetric disk, the force in the plane of axis and vertical) are constant to 1e-9."""
    from scenes import wheel

    model = wheel.build(mu=0.0).model
    sol = exact_coulomb(model, 2.0, np.linspace(0.0, 2.0, 201))
    assert sol.events == []
    body = model.bodies[0]
    from lcpdyn.rotation import np_rotation_matrix

    angular_momentum, spin = [], []
    for q, w in zip(sol.quaternion, sol.angular_velocity):
        R = np_rotation_matrix(q)
        angular_momentum.append((R @ body.inertia_matrix @ R.T @ w)[2])
        spin.append(w @ R @ np.array([0.0, 1.0, 0.0]))
    assert np.ptp(sol.energy) < 1e-9
    assert np.ptp(sol.velocity[:, 0]) < 1e-9 and np.ptp(sol.velocity[:, 1]) < 1e-9
    assert np.ptp(angular_momentum) < 1e-9 and np.ptp(spin) < 1e-9
    np.testing.assert_allclose(sol.friction_work, 0.0, atol=1e-12)


def test_wheel_energy_balance_and_switch_time_under_a_tighter_tolerance():
    """Peiret's wheel (mu = 0.3) slides, then rolls: E + W_friction constant to 1e-9 J while it
    slides; the slide -> roll time unchanged to 1e-8 s when rtol tightens from 1e-9 to 1e-11."""
    from scenes import wheel

    model = wheel.build().model
    samples = np.linspace(0.0, 2.2, 111)
    fine = exact_coulomb(model, 2.2, samples, rtol=1e-11)
    coarse = exact_coulomb(model, 2.2, samples, rtol=1e-9)
    assert [e.kind for e in fine.events] == ["stick"] and [e.kind for e in coarse.events] == ["stick"]
    assert 1.9 < fine.events[0].t < 2.1
    assert fine.events[0].t == pytest.approx(coarse.events[0].t, abs=1e-8)
    assert np.ptp(fine.energy + fine.friction_work) < 1e-9
    assert fine.friction_work[-1] > 1.0  # it did slide


def test_touch_down_ends_the_run_with_the_solution_so_far():
    model = Model()
    body = model.add_body(RigidBody("ball", 1.0, (0.004,) * 3, position=(0.0, 0.0, 0.2)))
    model.add_contact(SphereContact(body, Plane(), 0.3, radius=0.1))
    with pytest.raises(ReferenceFailure, match="touches down") as info:
        exact_coulomb(model, 1.0, np.linspace(0.0, 1.0, 101))
    drop = math.sqrt(2 * 0.1 / G)
    solution = info.value.solution
    assert solution.t[-1] <= drop < solution.t[-1] + 0.01
    np.testing.assert_allclose(solution.position[:, 2], 0.2 - 0.5 * G * solution.t**2, atol=1e-9)


def test_bad_input_is_named():
    model = block_model((1.0, 0.0, 0.0), 0.3)
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="t_end"):
            exact_coulomb(model, bad)
    for samples in ([0.5, 0.2], [0.1, float("nan")], [], [[0.1]], [0.5, 2.0]):
        with pytest.raises(ValueError, match="samples"):
            exact_coulomb(model, 1.0, samples)
    with pytest.raises(ValueError, match="method"):
        exact_coulomb(model, 1.0, method="Euler")
    two = block_model((1.0, 0.0, 0.0), 0.3)
    two.add_body(RigidBody("other", 1.0, (0.1, 0.1, 0.1), position=(1.0, 0.0, 0.0)))
    with pytest.raises(ValueError, match="one rigid body"):
        exact_coulomb(two, 1.0)
    soft = Model()
    body = soft.add_body(RigidBody("b", 1.0, (0.1, 0.1, 0.1)))
    soft.add_contact(PointContact(body, Plane(), 0.3, normal_law=SpringDamperLaw(1e5)))
    with pytest.raises(ValueError, match="compliant"):
        exact_coulomb(soft, 1.0)


def test_compare_takes_the_exact_reference(tmp_path):
    """``compare(..., reference="exact")``: the sliding sphere's reference run is the closed form
    (1e-8 m) sampled every reference_dt, its slide -> roll at the first sample after t*, and the
    models are scored against it; a scene of two bodies is refused, naming why."""
    from lcpdyn.compare import compare, format_table, write_json
    from lcpdyn.compare_figures import write_figures
    from scenes.blocks import SlidingSphere

    p = {**SlidingSphere.DEFAULTS, "t_end": 0.5}
    result = compare(SlidingSphere, reference_dt=1e-3, models=("coulomb", "regularized"), reference="exact",
                     t_end=0.5)  # fmt: skip
    run = result["runs"]["coulomb-reference"]
    assert result["reference"] == "exact" and run.t.size == 500
    v, _, x = SlidingSphere.analytic(p, run.t)
    np.testing.assert_allclose(run.position[:, 0, 0], x, atol=1e-8)
    np.testing.assert_allclose(run.velocity[:, 0, 0], v, atol=1e-8)
    t_star = 2 * p["speed"] / (7 * p["mu"] * p["gravity"])
    # the metric calls a contact rolling below v_th = 0.01 m/s: the slip, falling at 7/2 mu g, gets
    # there 0.58 ms before t*; the transition is the first sample after
    below = t_star - 0.01 / (3.5 * p["mu"] * p["gravity"])
    assert below <= result["transitions"]["coulomb-reference"]["first_roll"] < below + 1e-3
    from lcpdyn import metrics

    f = metrics.normalized_friction_force(run)  # |lam_T| / (mu lam_N): 1 while sliding, 0 rolling on a plane
    np.testing.assert_allclose(f[run.t < t_star - 1e-3], 1.0, rtol=1e-9)
    np.testing.assert_allclose(f[run.t > t_star + 1e-3], 0.0, atol=1e-9)
    np.testing.assert_allclose(run.contact_normal_force[:, 0], p["mass"] * p["gravity"], rtol=1e-9)
    assert result["static_force_ratio"]["coulomb-reference"]["max"] <= 1.0
    assert math.isfinite(result["metrics"]["coulomb"]["force_rms_deviation_percent"])
    assert "event-driven exact Coulomb" in format_table(result)
    write_json(result, tmp_path / "sphere.json")
    assert all((tmp_path / name).is_file() for name in ("sphere.json",))
    assert len(write_figures(result, str(tmp_path / "sphere"))) == 2
    with pytest.raises(ValueError, match="one rigid body"):
        compare(SlidingSphere, reference_dt=1e-3, models=("coulomb",), reference="exact", second_mass=2.0)
    with pytest.raises(ValueError, match="reference"):
        compare(SlidingSphere, reference="exactly")


def test_ctrl_c_keeps_the_segments_done(monkeypatch):
    """A KeyboardInterrupt in the second segment (after the sphere's slip stopped) ends the run as
    ReferenceInterrupted carrying the first segment: the slide up to t*."""
    import scipy.integrate

    calls, original = [], scipy.integrate.solve_ivp

    def interrupted(*args, **kwargs):
        calls.append(args[1])
        if len(calls) == 2:
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    monkeypatch.setattr(scipy.integrate, "solve_ivp", interrupted)
    with pytest.raises(ReferenceInterrupted, match="interrupted") as info:
        exact_coulomb(block_model((2.0, 0.0, 0.0), 0.4), 1.0, np.linspace(0.0, 1.0, 101))
    stop = 2.0 / (0.4 * G)
    solution = info.value.solution
    assert solution.t[-1] <= stop < solution.t[-1] + 0.01
    np.testing.assert_allclose(solution.position[:, 0], 2.0 * solution.t - 0.5 * 0.4 * G * solution.t**2, atol=1e-8)


def rod_on_its_end(theta_deg, mu, speed):
    """A uniform rod (m = 1 kg, length 1 m) at theta to the plane on its lower end, sliding at
    ``speed`` (m/s) along its own horizontal direction."""
    theta = math.radians(theta_deg)
    model = Model(gravity=(0.0, 0.0, -G))
    rod = model.add_body(RigidBody("rod", 1.0, (1e-3, 1 / 12, 1 / 12), position=(0.0, 0.0, 0.5 * math.sin(theta)),
                                   orientation=(math.cos(theta / 2), 0.0, math.sin(theta / 2), 0.0),
                                   velocity=(speed, 0.0, 0.0)))  # fmt: skip
    model.add_contact(PointContact(rod, Plane(), mu, offset=(0.5, 0.0, 0.0)))
    return model


@pytest.mark.parametrize("theta_deg, mu", [(45.0, 2.0), (30.0, 3.0)])
def test_painleve_rod_is_refused_with_the_closed_form_margin(theta_deg, mu):
    """Painleve's rod sliding away from its upper end: the normal acceleration's coefficient of
    lam_N is (1 + 3 cos^2 - 3 mu sin cos)/m, negative here (contact and separation inconsistent),
    scaled by its frictionless value (1 + 3 cos^2)/m; the other direction and mu = 1 are fine."""
    theta = math.radians(theta_deg)
    margin = (1 + 3 * math.cos(theta) ** 2 - 3 * mu * math.sin(theta) * math.cos(theta)) / (
        1 + 3 * math.cos(theta) ** 2
    )
    assert margin < 0
    with pytest.raises(ReferenceFailure, match="Painleve's paradox at t = 0 s") as failure:
        exact_coulomb(rod_on_its_end(theta_deg, mu, 1.0), 0.3)
    reported = float(str(failure.value).split("principal minor ")[1].split(")")[0])
    assert reported == pytest.approx(margin, rel=2e-3)


def test_painleve_rod_within_the_margin_runs():
    """The same rod at 45 deg sliding the other way (coefficient 1 + 3 cos^2 + 3 mu sin cos > 0),
    and with mu = 1 (margin 0.4): no paradox; it slides, then sticks."""
    assert [e.kind for e in exact_coulomb(rod_on_its_end(45.0, 2.0, -1.0), 0.15).events] == ["stick"]
    assert [e.kind for e in exact_coulomb(rod_on_its_end(45.0, 1.0, 1.0), 0.15).events] == ["stick"]


RTOLS = (1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-11, 1e-12, 1e-13)


@pytest.mark.parametrize("rtol", RTOLS)
def test_stops_are_found_at_any_tolerance_with_bounded_work(rtol):
    """The sliding sphere (slip along one line, the case whose stop the ODE solver once crawled
    towards for over 15 minutes) and the block stop at their closed-form times at every rtol from
    1e-6 to 1e-13 (to 1e-12 s from rtol 1e-9 on, within 100 rtol t* above), each in at most a few
    hundred right-hand-side evaluations per segment, and start their stick at zero slip: what the
    stop removed is at most the solver's noise (100 rtol times the speed), rounding from 1e-11 on."""
    mu, r = 0.3, 0.1
    v0, w0 = np.array([1.0, 0.5, 0.0]), np.array([3.0, -4.0, 2.0])
    u0 = v0 + np.cross(w0, [0.0, 0.0, -r])
    sphere = exact_coulomb(sphere_model(v0, w0, mu, r), 0.3, np.linspace(0.0, 0.3, 31), rtol=rtol)
    block = exact_coulomb(block_model((2.0, 0.0, 0.0), 0.4), 1.0, np.linspace(0.0, 1.0, 11), rtol=rtol)
    for sol, stop in ((sphere, 2 * np.linalg.norm(u0) / (7 * mu * G)), (block, 2.0 / (0.4 * G))):
        assert [e.kind for e in sol.events] == ["stick"] and not sol.rejected
        assert sol.events[0].t == pytest.approx(stop, abs=1e-12 if rtol <= 1e-9 else 100 * rtol * stop)
        assert sol.events[0].slip <= (1e-12 if rtol <= 1e-11 else 100 * rtol * 3.5)
        assert max(sol.evaluations) <= 1000, sol.evaluations
    np.testing.assert_allclose(block.velocity[block.t > 0.6], 0.0, atol=1e-15)


@pytest.mark.parametrize("rtol", [1e-6, 1e-9, 1e-13])
def test_wheel_switch_time_at_any_tolerance_with_bounded_work(rtol):
    """Peiret's wheel: the slide -> roll time agrees with the run at rtol 1e-11 to 1e-9 s from
    rtol 1e-9 on (1e-6: 1e-6 s), in a bounded number of evaluations per segment, with no stop before
    the roll; the slip the stop removed is at most the solver's noise (100 rtol times the speed)."""
    from scenes import wheel

    model = wheel.build().model
    sol = exact_coulomb(model, 2.2, np.linspace(0.0, 2.2, 23), rtol=rtol)
    assert [e.kind for e in sol.events] == ["stick"] and not sol.rejected
    assert sol.events[0].t == pytest.approx(2.00682276088, abs=1e-6 if rtol > 1e-9 else 1e-9)
    assert max(sol.evaluations) <= 3000, sol.evaluations
    body = model.bodies[0]
    speed = np.max(np.abs(np.concatenate([body.velocity, body.body_angular_velocity])))
    assert sol.events[0].slip <= max(2e-9, 100 * rtol * speed)


def test_work_bound_is_reported_at_once_with_the_solution_so_far():
    """A segment that would need more right-hand-side evaluations than ``max_evaluations`` ends
    the run with ReferenceFailure naming the crawl, keeping the segments done."""
    with pytest.raises(ReferenceFailure, match="crawls") as info:
        exact_coulomb(block_model((2.0, 0.0, 0.0), 0.4), 1.0, np.linspace(0.0, 1.0, 101), max_evaluations=30)
    assert info.value.solution is not None
    with pytest.raises(ValueError, match="max_evaluations"):
        exact_coulomb(block_model((2.0, 0.0, 0.0), 0.4), 1.0, max_evaluations=0)


def _estimate_cases():
    from scenes import wheel

    theta = math.radians(20.0)
    incline = math.radians(15.0)
    return {
        "sphere": (sphere_model(np.array([1.0, 0.5, 0.0]), np.array([3.0, -4.0, 2.0])), 0.6),
        "block": (block_model((2.0, 0.0, 0.0), 0.4), 1.0),
        "incline-block": (
            block_model((0.5, 0.0, 0.0), 0.2, 0.35, (G * math.sin(incline), 0.0, -G * math.cos(incline))),
            1.0,
        ),
        "rolling-ball": (
            sphere_model(
                (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 0.3, gravity=(G * math.sin(theta), 0.0, -G * math.cos(theta))
            ),
            1.0,
        ),
        "wheel": (wheel.build().model, 2.2),
    }


@pytest.mark.parametrize("case", ["sphere", "block", "incline-block", "rolling-ball", "wheel"])
def test_error_estimate_bounds_the_error_against_a_run_100x_tighter(case):
    """error_estimate(run at 1e-11, run at 1e-9) covers the run's actual error, measured against
    the same run at 1e-13, in every field and the switch times."""
    from lcpdyn.reference import ESTIMATED_FIELDS, error_estimate

    model, t_end = _estimate_cases()[case]
    samples = np.linspace(0.0, t_end, 111)
    run, looser, tighter = (exact_coulomb(model, t_end, samples, rtol=r) for r in (1e-11, 1e-9, 1e-13))
    estimate = error_estimate(run, looser)
    for name in ESTIMATED_FIELDS:
        actual = np.max(np.abs(getattr(run, name) - getattr(tighter, name)))
        assert actual <= estimate[name], (name, actual, estimate[name])
    assert np.max(np.abs(run.switch_times() - tighter.switch_times()), initial=0.0) <= estimate["switch_times"]
    with pytest.raises(ValueError, match="same times"):
        error_estimate(run, exact_coulomb(model, t_end, samples[:-1], rtol=1e-9))


def test_stop_keeps_energy_balance_and_starts_the_stick_at_zero_slip():
    """The spinning sphere's stop: E + W_friction constant to 1e-12 J across it (the impulse's
    kinetic energy booked as friction work) and the contact velocity zero after it to rounding."""
    v0, w0 = np.array([1.0, 0.5, 0.0]), np.array([3.0, -4.0, 2.0])
    sol = exact_coulomb(sphere_model(v0, w0), 0.6, np.linspace(0.0, 0.6, 61))
    assert np.ptp(sol.energy + sol.friction_work) < 1e-12
    after = sol.t > sol.events[0].t
    np.testing.assert_allclose(sol.contact_velocity[after], 0.0, atol=1e-14)
