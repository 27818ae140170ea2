"""Siconos' own engine as a peer on the pile of ``benchmarks/bench_pile.py``
(``benchmarks/siconos_pile.py``): a short pour that lands, and the entry in bench_pile's table."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.benchmark_modules import load_benchmark

# 72 spheres: a full first layer of 8 x 8 on the floor and 8 more in a second layer, which start
# 0.1 + 3.4 r above the floor, land on the first by t = 0.16 s and rest on it by 0.25 s.
COUNT, SETTLE, STEPS, TOLERANCE = 72, 0.25, 5, 1e-4


@pytest.fixture(scope="module")
def entry(siconos):
    """One short run (a few seconds): Siconos is mandatory under CI=true (the ``siconos`` fixture)."""
    return load_benchmark("siconos_pile").run_siconos(count=COUNT, settle=SETTLE, steps=STEPS, tolerance=TOLERANCE)


def test_same_scene_as_bench_pile():
    """The peer's constants are bench_pile's; its planes bound the bin (no Siconos needed)."""
    bench, peer = load_benchmark("bench_pile"), load_benchmark("siconos_pile")
    names = ("RADIUS", "HALF_WIDTH", "DENSITY", "MU")
    assert [getattr(peer, n) for n in names] == [getattr(bench, n) for n in names]
    planes = peer.bin_planes(bench.HALF_WIDTH)
    w = bench.HALF_WIDTH
    inside = np.array([[0.0, 0.0, 0.1], [0.9 * w, -0.9 * w, 0.01]])
    outside = np.array(
        [[0.0, 0.0, -0.01], [-1.1 * w, 0, 0.1], [1.1 * w, 0, 0.1], [0, -1.1 * w, 0.1], [0, 1.1 * w, 0.1]]
    )
    assert (peer.plane_gaps(inside, 0.0, planes) > 0).all()
    assert np.array_equal(peer.plane_gaps(outside, 0.0, planes) < 0, np.eye(5, dtype=bool))


@pytest.mark.siconos
def test_siconos_pile_lands_and_carries_the_weight(entry):
    peer = load_benchmark("siconos_pile")
    assert entry["engine"] == "siconos" and entry["completed"], entry
    assert entry["bodies"] == COUNT and entry["contacts"] > COUNT  # every sphere on the floor, the top layer on it
    assert entry["iterations"] >= 1 and entry["step_ms"] > 0 and entry["step_cpu_ms"] > 0
    # NSGS stops when its error is below the tolerance, or at the cap
    assert entry["iterations_capped"] > 0 or entry["error"] <= TOLERANCE
    # no position correction: overlaps are left by impacts, about h times the approach speed (measured
    # 1.47 mm, the second layer landing at 1.47 m/s), below h times the speed of a fall from the pour's top
    top = 0.1 + peer.RADIUS + 2.4 * peer.RADIUS  # the second layer's starting height
    assert math.isfinite(entry["penetration_max"])
    assert 0 <= entry["penetration_max"] < peer.H * math.sqrt(2 * peer.GRAVITY * top)
    assert entry["penetration_max_radii"] == pytest.approx(entry["penetration_max"] / peer.RADIUS)
    # at rest, the floor and the walls carry the spheres' weight (measured 0.994)
    assert entry["bin_force_ratio"] == pytest.approx(1.0, abs=0.05)
    assert entry["interaction_changes"] <= COUNT  # kept across steps: warm starts carry over
    # Siconos' answers judged by lcpdyn's own measure of the problem it solved
    assert 0.0 <= entry["lcpdyn_residual"] <= entry["lcpdyn_residual_max"] < math.inf


def test_lcpdyn_judges_a_siconos_answer_by_its_own_measure():
    """The measure the peer applies to Siconos' answers: on one contact of a sphere resting on the
    floor (W = diag(w_N, w_T, w_T), q = (-g h, 0, 0)), Siconos' exact answer r = (g h / w_N, 0, 0)
    is judged converged to rounding, and an answer 1 % short of it far above any tolerance (its
    normal velocity -0.01 g h against the row's scale, a few times g h)."""
    import scipy.sparse as sp

    from solvers.sparse_measure import csr_arrays, csr_friction_contact_measure

    W = sp.csr_matrix(np.diag([2.0, 5.0, 5.0]))
    q = np.array([-9.81e-3, 0.0, 0.0])
    exact = np.array([9.81e-3 / 2.0, 0.0, 0.0])
    measure = lambda r: csr_friction_contact_measure(*csr_arrays(W), q, np.array([0.5]), r, np.empty(3))[0]  # noqa: E731
    assert measure(exact) <= 1e-15
    assert 1e-3 < measure(0.99 * exact) < 1e-2


@pytest.mark.siconos
def test_siconos_rows_in_the_bench_pile_table(entry):
    bench = load_benchmark("bench_pile")
    failed = {"engine": "siconos", "scene": "pile", "bodies": 3, "tolerance": 1e-8, "completed": False,
              "error_message": "RuntimeError: x"}  # fmt: skip
    report = {"lcpdyn_version": "0", "git": "abc", "machine": "m", "lcpdyn": [], "mujoco": [],
              "siconos": [entry, failed]}  # fmt: skip
    text = bench.table(report)
    assert "Siconos NSGS tol=0.0001" in text and "Siconos NSGS tol=1e-08" in text and "failed: RuntimeError: x" in text
