"""Figures fit for a paper: the stability boundary of a sweep (critical_values), the root-locus
figure, the quick-look figure of a run, and the scenes' report figures -- their axes carry units,
their titles the run's step and position update, and the published values are drawn."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lcpdyn.plotting import contact_names, group_identical, plot_run, run_settings
from lcpdyn.stability import critical_values, plot_root_locus, published_values, root_locus, unstable_values
from lcpdyn.stepper import Simulation
from lcpdyn.trajectory import Trajectory
from scenes import blocks, caster_shimmy, rolling_disk, swivel_shimmy

pytestmark = pytest.mark.one_leg(leg="current")  # proven once per two-leg test command (conftest.dealt_leg)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def synthetic(values, rows, scene="synthetic", parameter="p"):
    return {
        "scene": scene,
        "parameter": parameter,
        "values": np.asarray(values, float),
        "eigenvalues": np.array([np.sort_complex(np.asarray(r, complex)) for r in rows]),
        "fixed": {},
        "defaults": {parameter: 0.0},
    }


def texts(figure):
    """Every string on a figure: titles, axis labels, legend entries."""
    out = [t.get_text() for t in figure.texts]
    for ax in figure.axes:
        out += [ax.get_title(), ax.get_xlabel(), ax.get_ylabel()]
        if ax.get_legend():
            out += [t.get_text() for t in ax.get_legend().get_texts()]
    for legend in figure.legends:
        out += [t.get_text() for t in legend.get_texts()]
    if figure._suptitle is not None:
        out.append(figure._suptitle.get_text())
    return " | ".join(out).replace("\n", " ")


def assert_png(path):
    assert path.is_file() and path.read_bytes()[:8] == PNG_SIGNATURE and path.stat().st_size > 10_000


# --- critical_values -------------------------------------------------------------------------------
def test_critical_value_of_a_complex_pair_crossing_linearly():
    """alpha(p) = p - 0.37 +- 2i (Hopf at 0.37), a stable real mode and a zero eigenvalue."""
    values = np.linspace(0.0, 1.0, 11)
    rows = [[p - 0.37 + 2j, p - 0.37 - 2j, -1.0, 0.0] for p in values]
    (crossing,) = critical_values(synthetic(values, rows))
    assert crossing["value"] == pytest.approx(0.37, abs=1e-12)
    assert crossing["direction"] == "destabilizing"
    assert crossing["frequency"] == pytest.approx(2.0, abs=1e-12)
    assert crossing["kind"] == "oscillatory"
    assert crossing["bracket"] == pytest.approx([0.3, 0.4])
    assert crossing["interpolated"] == "max Re"


def test_critical_values_in_both_directions_and_none():
    values = np.linspace(0.0, 1.0, 21)
    rows = [[(p - 0.23) * (p - 0.81) + 1j, (p - 0.23) * (p - 0.81) - 1j] for p in values]  # stable inside
    found = critical_values(synthetic(values, rows))
    assert [c["direction"] for c in found] == ["stabilizing", "destabilizing"]
    for c, exact in zip(found, (0.23, 0.81)):  # quadratic g: linear interpolation is close, inside the bracket
        assert c["bracket"][0] <= c["value"] <= c["bracket"][1]
        assert c["value"] == pytest.approx(exact, abs=5e-3)
    stable = [[-1.0, -2.0 + 1j, -2.0 - 1j]] * len(values)
    assert critical_values(synthetic(values, stable)) == []


def test_real_pair_turning_imaginary_is_interpolated_in_lambda_squared():
    """lambda^2 = 0.63 - p: +-sqrt real (unstable) below 0.63, +-i sqrt imaginary (marginal) above,
    with two zero eigenvalues; max Re ~ sqrt(0.63 - p) would put the crossing at the grid point 0.7."""
    values = np.linspace(0.0, 1.0, 11)
    rows = [[np.sqrt(complex(0.63 - p)), -np.sqrt(complex(0.63 - p)), 0.0, 0.0] for p in values]
    (crossing,) = critical_values(synthetic(values, rows))
    assert crossing["value"] == pytest.approx(0.63, abs=1e-12)
    assert crossing["direction"] == "stabilizing"
    assert crossing["frequency"] == 0.0 and crossing["kind"] == "non-oscillatory"
    assert crossing["interpolated"] == "lambda^2"


def test_a_stiff_mode_does_not_hide_a_slow_crossing():
    """A slow pair alpha(p) = (p - 0.37) * 5 +- 165i beside a stiff mode at -3e8 (a beam's): each
    eigenvalue is judged against its own modulus, so the slow crossing is found at 0.37 -- a
    threshold of 1e-8 max|lambda| = 3 would have bracketed it between 0.9 and 1.0 (and extrapolated)."""
    values = np.linspace(0.0, 1.0, 11)
    rows = [[5 * (p - 0.37) + 165j, 5 * (p - 0.37) - 165j, -3e8, 0.0] for p in values]
    (crossing,) = critical_values(synthetic(values, rows))
    assert crossing["value"] == pytest.approx(0.37, abs=1e-12)
    assert crossing["bracket"] == pytest.approx([0.3, 0.4])
    assert crossing["frequency"] == pytest.approx(165.0)
    assert list(unstable_values(synthetic(values, rows))) == [p > 0.37 for p in values]


@pytest.fixture(scope="module")
def disk_locus():
    return root_locus(rolling_disk, "speed", np.linspace(0.0, 1.0, 101))


def test_rolling_disk_critical_speed_from_the_sweep(disk_locus):
    """The sweep's one crossing is the analytic critical speed 1/sqrt(3) (Neimark-Fufaev;
    test_rolling_stability checks rolling_disk.critical_speed() against it to rounding)."""
    (crossing,) = critical_values(disk_locus)
    assert crossing["parameter"] == "speed"
    assert crossing["value"] == pytest.approx(1 / math.sqrt(3), abs=1e-4)
    assert crossing["bracket"] == pytest.approx([0.57, 0.58])
    assert crossing["direction"] == "stabilizing"  # unstable below, marginal (slalom pair) above
    assert crossing["frequency"] == 0.0
    (paper,) = published_values(disk_locus)["critical"]
    assert paper["value"] == pytest.approx(1 / math.sqrt(3), rel=1e-12) and "Schwab–Meijaard 2003" in paper["label"]


def test_swivel_wheel_boundaries_from_the_sweep():
    locus = root_locus(swivel_shimmy, "a_over_l", np.linspace(0.0, 1.0, 41))
    found = critical_values(locus)
    assert [c["direction"] for c in found] == ["stabilizing", "destabilizing"]
    np.testing.assert_allclose([c["value"] for c in found], [0.3, 0.7], atol=2e-3)
    # the critical case: lambda_2,3 = +-i omega_n, omega_n^2 = k l^2 / (m (a^2 + r^2)) (after their Eq. 32)
    np.testing.assert_allclose(
        [c["frequency"] for c in found], [math.sqrt(1 / (0.09 + 0.21)), math.sqrt(1 / (0.49 + 0.21))], rtol=1e-2
    )
    np.testing.assert_allclose([c["value"] for c in published_values(locus)["critical"]], [0.3, 0.7], atol=1e-12)


# --- root-locus figure -------------------------------------------------------------------------------
def test_root_locus_figure_has_units_and_marks_ours_and_the_papers_critical_speed(disk_locus, tmp_path):
    path = tmp_path / "roots.png"
    figure = plot_root_locus(disk_locus, path)
    assert_png(path)
    re_axis, im_axis, plane = figure.axes[:3]
    assert re_axis.get_ylabel() == "real part Re λ (√(g/r))"
    assert im_axis.get_ylabel() == "imaginary part Im λ (√(g/r))"
    assert im_axis.get_xlabel() == "forward speed v (√(g r))"
    assert plane.get_xlabel() == "real part Re λ (√(g/r))" and plane.get_ylabel() == "imaginary part Im λ (√(g/r))"
    words = texts(figure)
    assert "critical value (ours)" in words and "v = 0.5773" in words
    assert "Schwab–Meijaard 2003 Sec. 3.2: v_c = √(g r/3) = 0.57735" in words
    assert "6 eigenvalues λ = 0 at every value" in words
    lines = [line.get_xdata()[0] for line in re_axis.get_lines() if line.get_linestyle() == "--"]
    assert lines == pytest.approx([1 / math.sqrt(3)])  # the published value, dashed


def test_root_locus_figure_of_another_scene_names_its_units(tmp_path):
    values = np.linspace(0.0, 1.0, 11)
    rows = [[p - 0.37 + 2j, p - 0.37 - 2j, -1.0] for p in values]
    figure = plot_root_locus(synthetic(values, rows, parameter="gain"), tmp_path / "r.png")
    assert_png(tmp_path / "r.png")
    assert figure.axes[1].get_xlabel() == "gain (scene units)"
    assert figure.axes[0].get_ylabel() == "real part Re λ (1/time unit)"
    assert "destabilizing: gain = 0.37" in texts(figure)


# --- quick-look figure of a run ------------------------------------------------------------------
@pytest.fixture(scope="module")
def block_run():
    scene = blocks.SlidingBlock.build(t_end=0.1)
    trajectory = Simulation(scene.model, scene.friction("regularized"), scene.dt).run(scene.t_end)
    trajectory.parameters["scene"] = {"name": scene.name, **scene.parameters}
    return trajectory


def test_run_figure_labels_units_contacts_and_the_run_settings(block_run, tmp_path):
    path = tmp_path / "run.png"
    figure = plot_run(block_run, path, title="sliding-block, regularized")
    assert_png(path)
    labels = {ax.get_ylabel(): ax.get_xlabel() for ax in figure.axes}
    assert labels["y (m)"] == "x (m)"
    for y in (
        "normal force λ_N (N)",
        "friction force |λ_T| (N)",
        "slip speed |v_T| (m/s)",
        "mechanical energy E (J)",
        "gap Φ at the step start (m)",
    ):
        assert labels[y] == "time t (s)"
    words = texts(figure)
    assert "h = 1 ms, position update: symplectic (default), gyroscopic term: midpoint" in words
    assert "contact 1 (block, point)" in words and "contact 4 (block, point)" in words
    assert "lam_N" not in words
    # the four corners slide alike: their slip curves are drawn once, and the panel says so
    assert "contacts 1, 2, 3, 4 identical, drawn once" in words


def test_run_title_takes_step_and_position_update_from_the_parameters(block_run, tmp_path):
    parameters = dict(block_run.parameters, dt=2.5e-4, position_update="paper", gyroscopic="explicit")
    assert run_settings(parameters) == (
        "h = 0.25 ms, position update: paper Eq. (7), gyroscopic term: explicit, friction: regularized"
    )
    block_run.parameters, saved = parameters, block_run.parameters
    try:
        figure = plot_run(block_run, tmp_path / "run.png")
    finally:
        block_run.parameters = saved
    assert "sliding-block h = 0.25 ms, position update: paper Eq. (7)" in texts(figure)
    assert run_settings({"dt": 0.002}, time_unit="√(r/g)") == "h = 0.002 √(r/g)"


def many_bodies(count, steps=200, seed=0):
    """A made-up run of ``count`` bodies, each on one contact, moving and loaded differently."""
    rng = np.random.default_rng(seed)
    t = np.arange(1, steps + 1) * 1e-3
    start = rng.uniform(-1.0, 1.0, (count, 3))
    drift = rng.normal(0.0, 0.3, (count, 3))
    position = start[None] + t[:, None, None] * drift[None]
    load = rng.uniform(0.5, 5.0, count)[None] * (1.0 + 0.1 * np.sin(40.0 * t[:, None]))
    arrays = {
        "t": t,
        "position": position,
        "velocity": np.broadcast_to(drift, position.shape).copy(),
        "contact_normal_force": load,
        "contact_friction_force": 0.3 * load[:, :, None] * np.array([1.0, 0.0, 0.0]),
        "contact_slip_velocity": np.broadcast_to(drift, position.shape).copy(),
        "contact_gap": -1e-6 * rng.uniform(0.0, 1.0, (steps, count)),
        "energy": 10.0 - t,
        "initial_position": start,
        "initial_energy": np.float64(10.0),
    }
    parameters = {
        "dt": 1e-3,
        "position_update": "symplectic",
        "friction": {"model": "regularized"},
        "contacts": [{"type": "SphereContact", "body": f"ball{b}"} for b in range(count)],
    }
    return Trajectory(arrays, parameters, [f"ball{b}" for b in range(count)])


def _overlap(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


@pytest.mark.parametrize("count", [1, 4, 64, 1000])
def test_the_run_figure_stays_readable_for_any_number_of_bodies_and_contacts(count, tmp_path):
    """1, 4, 64 and 1,000 bodies and contacts: laid out without matplotlib's warning, no legend
    of more than FEW + 2 entries, no title over another title or a legend outside the figure,
    and beyond FEW bodies the few that travelled furthest named (issue 46, item 7; the figure
    of `spheres` and `boxes` had a 64-entry legend over the axes and titles over each other)."""
    import warnings

    from lcpdyn.plotting import FEW, NAMED

    trajectory = many_bodies(count)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        figure = plot_run(trajectory, tmp_path / "run.png", title=f"{count} balls")
    assert_png(tmp_path / "run.png")
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(figure)  # the figure is closed: draw it again, laid out as saved
    canvas.draw()
    renderer = canvas.get_renderer()
    whole = figure.bbox
    legends = [ax.get_legend() for ax in figure.axes if ax.get_legend()] + list(figure.legends)
    for legend in legends:
        assert len(legend.get_texts()) <= FEW + 2
        box = legend.get_window_extent(renderer)
        assert whole.x0 <= box.x0 and box.x1 <= whole.x1 and whole.y0 <= box.y0 and box.y1 <= whole.y1
    titles = [figure._suptitle] + [ax.title for ax in figure.axes if ax.get_title()]
    boxes = [title.get_window_extent(renderer) for title in titles]
    for i, box in enumerate(boxes):
        assert whole.x0 <= box.x0 and box.x1 <= whole.x1, titles[i].get_text()
        for other in boxes[i + 1 :]:
            assert not _overlap(box, other), titles[i].get_text()
    for legend in figure.legends:  # the contacts' legend below the figure: over no panel
        assert not any(
            _overlap(legend.get_window_extent(renderer), ax.get_window_extent(renderer)) for ax in figure.axes
        )
    words = texts(figure)
    if count > FEW:
        travelled = np.linalg.norm(trajectory.position[-1] - trajectory.initial_position, axis=1)
        furthest = np.argsort(-travelled)[:NAMED]
        assert all(f"ball{b} (" in words for b in furthest)
        assert f"{count} bodies (grey)" in words and f"all {count} contacts: min to max" in words
    else:
        assert all(f"contact {c + 1} (ball{c}, sphere)" in words for c in range(count))


def test_contact_names_and_coinciding_curves():
    assert contact_names({"contacts": [{"type": "DiskContact", "body": "wheel"}]}, 2) == [
        "contact 1 (wheel, disk rim)",
        "contact 2",
    ]
    a = np.linspace(0.0, 1.0, 50)
    assert group_identical([a, a + 1e-7, a + 0.5, a.copy()]) == [[0, 1, 3], [2]]


# --- the scenes' report figures --------------------------------------------------------------------------
def test_caster_path_figure_marks_the_published_wavelengths(tmp_path):
    rigid = caster_shimmy.transient(flexible=0.0, distance=15.0)
    flexible = caster_shimmy.transient(flexible=1.0, distance=15.0)
    figure = caster_shimmy.plot_paths(rigid, flexible, tmp_path / "path.png")
    assert_png(tmp_path / "path.png")
    (ax,) = figure.axes
    assert ax.get_xlabel() == "longitudinal contact-point position x/r (–)"
    assert ax.get_ylabel() == "lateral contact-point position y/r (–)"
    words = texts(figure)
    assert "2πr (Schwab–Meijaard 2003 Eq. 34, rigid yoke)" in words and "7.83 r (Schwab–Meijaard 2003 Sec. 3.3" in words


def test_rolling_disk_transient_figure(tmp_path):
    result = rolling_disk.transient(t_end=3.0, samples=301)
    stepped = {
        label: Simulation(
            rolling_disk.build(dt=2e-3, t_end=3.0).model, "regularized", 2e-3, position_update=update
        ).run(3.0)
        for label, update in (("first order", "symplectic"), ("midpoint", "midpoint"))
    }
    figure = rolling_disk.plot_transient(result, stepped, tmp_path / "t.png")
    assert_png(tmp_path / "t.png")
    assert [ax.get_xlabel() for ax in figure.axes] == ["x/r (–)", "time t (√(r/g))", "time t (√(r/g))"]
    assert [ax.get_ylabel() for ax in figure.axes] == ["y/r (–)", "contact force on the disk (mg)", "|F_xy| / F_z (–)"]
    words = texts(figure)
    assert "h = 0.002 √(r/g), gyroscopic term: midpoint" in words  # the scheme is in each path's label
    assert "centre, LCP stepper, midpoint (within 1 % of the path throughout)" in words
    assert "Schwab–Meijaard 2003 Sec. 3.2, Fig. 6: at most 0.52" in words


def test_road_wheel_history_figure(tmp_path):
    from scenes import road_wheel

    scene = road_wheel.build(t_end=0.02)
    run = Simulation(scene.model, scene.friction("coulomb"), scene.dt, position_update="paper").run(0.02)
    figure = road_wheel.plot_history({"coulomb": run}, scene, tmp_path / "h.png")
    assert_png(tmp_path / "h.png")
    assert [ax.get_ylabel() for ax in figure.axes] == [
        "beam root rotation φ_R (deg)",
        "wheel angular velocity ω (rad/s)",
        "relative velocity V_r (m/s)",
        "relative distance q (m; linear within ±1 mm)",
    ]
    assert figure.axes[-1].get_xlabel() == "time t (s)"
    words = texts(figure)
    assert "h = 0.2 ms, position update: paper Eq. (7)" in words
    assert "Bauchau 2002 Sec. 8.1: contact events t₁, t₂, t₃ = 1.092, 3.289, 5.195 s" in words
    assert "V/ρ = 32 rad/s" in words


def test_incline_pendulum_figure(tmp_path):
    from scenes import incline_pendulum

    results = incline_pendulum.compare_models(t_end=0.05, dt=1e-3, models=("coulomb", "continuous"))
    figure = incline_pendulum.plot_slip_forces(results, tmp_path / "s.png")
    assert_png(tmp_path / "s.png")
    assert [ax.get_ylabel() for ax in figure.axes] == [
        "slip speed |v_T| (m/s; linear below 1 mm/s)",
        "friction force |F_T| (N)",
        "normal force F_N (N)",
        "|F_T| / F_N (–)",
    ]
    words = texts(figure)
    assert "h = 1 ms, position update: symplectic (default)" in words
    assert "Bauchau 2002 Sec. 8.2 (Coulomb with rolling constraints): 5 rolling events" in words


def test_half_car_figure(tmp_path):
    from scenes import half_car

    trajectory, scene, _ = half_car.run_engine(550.0, t_end=0.2)
    p = scene.parameters
    mu = np.array([half_car.grip(t - scene.dt, p) for t in trajectory.t])
    front, rear = half_car.wheel_speeds(trajectory)
    row = {
        "torque": 550.0,
        "trajectory": trajectory,
        "parameters": p,
        "speed": trajectory.velocity[:, 0, 0],
        "front_rim": front * trajectory.position[:, 2, 2],
        "rear_rim": rear * trajectory.position[:, 4, 2],
        "traction": half_car.traction(trajectory),
        "mu_normal": mu * trajectory.contact_normal_force[:, 1],
        "uk": half_car.run_udwadia_kalaba(550.0, t_end=0.2),
    }
    figure = half_car.plot_formulations([row], tmp_path / "car.png")
    assert_png(tmp_path / "car.png")
    assert [ax.get_ylabel() for ax in figure.axes] == ["speed (m/s)", "longitudinal force (N)"]
    assert [ax.get_xlabel() for ax in figure.axes] == ["time t (s)", "time t (s)"]
    words = texts(figure)
    assert "engine: h = 1 ms, position update: symplectic (default)" in words
    assert "±μ N, rear wheel (engine)" in words and "rear constraint force (Udwadia–Kalaba)" in words
