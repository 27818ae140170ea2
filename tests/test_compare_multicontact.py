"""`lcpdyn.compare` on a scene with several contacts: the 4-corner sliding block
(``scenes.blocks.SlidingBlock``: decelerates at mu g, stops at v0 / (mu g) = 0.408 s), every
contact scored, aggregated by normal impulse; mu read from the runs; Peiret 2016's published
values only for its wheel."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import scenes
from lcpdyn import metrics
from lcpdyn.compare import PAPER, compare, format_table, published_values, write_json
from lcpdyn.compare_figures import _suptitle, write_figures
from lcpdyn.trajectory import Trajectory

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def block():
    return compare(scenes.blocks.SlidingBlock)


def sliding_part(run: Trajectory, t_stop: float) -> Trajectory:
    """The steps before the block stops."""
    return run.truncated(int(np.searchsorted(run.t, t_stop - 0.01)))


def test_every_contact_is_scored(block):
    assert len(block["contacts"]) == 4
    assert [c["label"] for c in block["contacts"]][0] == "point (-0.1, -0.1, -0.1) m of 'block'"
    for name, rows in block["metrics_per_contact"].items():
        assert [row["contact"] for row in rows] == [0, 1, 2, 3], name
        assert sum(row["normal_impulse_share"] for row in rows) == pytest.approx(1.0, rel=1e-12), name
        for row in rows:
            assert math.isfinite(row["force_rms_deviation_percent"]), (name, row)
            assert math.isfinite(row["force_rms_deviation_sliding_percent"]), (name, row)
            assert row["normal_impulse_Ns"] > 0, (name, row)
    assert set(block["metrics_same_step_per_contact"]) == {"regularized", "polygonal", "box"}
    assert len(block["transitions_per_contact"]["regularized"]) == 4


def test_regularized_matches_coulomb_on_the_block_while_it_slides(block):
    """Aggregated over the four corners, the regularized model's friction force equals Coulomb's
    (mu lam_N in total) while the block slides -- whatever way each run shares the load among the
    corners, which the rigid model leaves open and which makes a single corner's score large."""
    t_stop, _ = scenes.blocks.SlidingBlock.stopping(block["parameters"])
    assert t_stop == pytest.approx(0.408, abs=1e-3)
    m = block["metrics"]["regularized"]
    assert m["force_rms_deviation_sliding_percent"] < 0.5
    assert block["metrics_same_step"]["regularized"]["force_rms_deviation_sliding_percent"] < 0.5
    runs = block["runs"]
    reference = runs["coulomb-reference"]
    for name in ("regularized", "polygonal", "box", "coulomb"):
        model = sliding_part(runs[name], t_stop)
        assert metrics.force_rms_deviation(model, reference) < 1.0, name  # every step, aggregated
    # a single corner alone is not a meaningful score: the load sharing differs between the runs
    corner = metrics.force_rms_deviation(sliding_part(runs["regularized"], t_stop), reference, contact=0)
    assert corner > 10 * metrics.force_rms_deviation(sliding_part(runs["regularized"], t_stop), reference)
    for name in ("regularized", "polygonal", "box", "coulomb"):
        assert block["transitions"][name]["first_roll"] == pytest.approx(t_stop, abs=5e-3), name
    assert m["misalignment_rms_deg"] < 1e-6


def test_the_table_has_per_contact_rows_and_no_paper_column(block):
    table = format_table(block)
    header = next(line for line in table.splitlines() if "force RMS dev %" in line)
    assert "contact" in header and "impulse %" in header and "paper" not in header
    assert "No published values" in table
    for name in ("regularized", "polygonal", "box", "coulomb"):
        assert any(line.startswith(name) and " all " in line for line in table.splitlines()), name
    assert sum(line.split()[0] == "#2" for line in table.splitlines() if line.strip()) == 4
    assert "statically indeterminate" in table  # the block rests for the last 0.19 s


def test_json_and_figures_of_the_block(block, tmp_path):
    write_json(block, tmp_path / "block.json")
    saved = json.loads((tmp_path / "block.json").read_text())
    assert saved["paper"] is None
    assert saved["mu"] == 0.5
    assert len(saved["metrics_per_contact"]["box"]) == 4
    paths = write_figures(block, str(tmp_path / "block"))
    assert [p.rsplit("-", 1)[-1] for p in paths] == ["force.png", "errors.png", "contacts.png"]
    for path in paths:
        with open(path, "rb") as handle:
            assert handle.read(8) == PNG_SIGNATURE, path


def test_mu_is_read_from_each_run(block):
    run = block["runs"]["regularized"]
    assert [c["mu"] for c in run.parameters["contacts"]] == [0.5] * 4
    np.testing.assert_array_equal(metrics.friction_coefficients(run), 0.5)
    np.testing.assert_array_equal(run.contact_mu, 0.5)  # the per-step record
    # the metric follows what the run records: a run recorded with mu = 1 has half the normalized
    # force -- in its per-step contact_mu, or (a trajectory without one) in its parameters
    doubled = Trajectory({**run.arrays, "contact_mu": np.ones_like(run.contact_mu)}, run.parameters, run.body_names)
    without = {k: v for k, v in run.arrays.items() if k != "contact_mu"}
    nominal = Trajectory(
        without, {**run.parameters, "contacts": [{**c, "mu": 1.0} for c in run.parameters["contacts"]]}, run.body_names
    )
    for recorded in (doubled, nominal):
        np.testing.assert_allclose(
            metrics.normalized_friction_force(recorded), 0.5 * metrics.normalized_friction_force(run), rtol=1e-14
        )
    with pytest.raises(ValueError, match="disagrees"):
        metrics.normalized_friction_force(run, mu=0.3)


def test_paper_values_only_for_the_paper_wheel():
    defaults = scenes.wheel.DEFAULTS
    assert published_values("wheel", dict(defaults), defaults) is PAPER
    assert published_values("wheel", {**defaults, "t_end": 1.0}, defaults) is PAPER  # run length: not in the paper
    assert published_values("wheel", {**defaults, "mu": 0.5}, defaults) is None
    assert published_values("wheel", {**defaults, "dt": 5e-4}, defaults) is None
    block_defaults = scenes.blocks.SlidingBlock.DEFAULTS
    assert published_values("sliding-block", dict(block_defaults), block_defaults) is None


def test_wheel_compare_shows_the_paper_values_and_one_row_per_model():
    result = compare(scenes.wheel, reference_dt=5e-4, t_end=0.05, position_update="paper")
    assert result["paper"] is PAPER
    assert result["mu"] == 0.3 and len(result["contacts"]) == 1
    for name, row in result["metrics"].items():  # one contact: the aggregate is contact 0
        assert row["force_rms_deviation_percent"] == pytest.approx(
            result["metrics_per_contact"][name][0]["force_rms_deviation_percent"], rel=1e-12, abs=1e-12
        )
    table = format_table(result)
    assert "paper %" in table and "1.67" in table and "#0" not in table
    assert "reference_dt = 0.0005 s" in table  # the paper's reference step was 0.1 ms
    assert "paper Eq. (7)" in _suptitle(result, "x")
    assert "symplectic (default)" in _suptitle({**result, "position_update": "symplectic"}, "x")
    assert "h = 0.5 ms" in _suptitle(result, "x")
    other_mu = compare(scenes.wheel, reference_dt=5e-4, t_end=0.02, mu=0.5, models=("regularized", "coulomb"))
    assert other_mu["paper"] is None and other_mu["mu"] == 0.5
    assert "paper %" not in format_table(other_mu)


def test_the_polygonal_block_runs_to_rest_under_the_papers_update():
    """The four-corner block under the polygonal cone with Eq. (7) comes to rest at 0.41 s
    with self-equilibrated (statically indeterminate) friction; every step is solved and checked
    (it used to stop at t = 0.45 s: see tests/test_solvers.py, the resting-block test)."""
    from lcpdyn.stepper import Simulation
    from scenes.blocks import SlidingBlock

    scene = SlidingBlock.build()
    run = Simulation(scene.model, scene.friction("polygonal"), scene.dt, position_update="paper").run(scene.t_end)
    assert run.t.shape == (600,) and np.all(run.solver_status == 0)
    assert np.all(run.solver_residual <= 1e-9)
    at_rest = run.t > 0.41
    assert np.abs(run.velocity[at_rest, 0, :2]).max() < 1e-12
