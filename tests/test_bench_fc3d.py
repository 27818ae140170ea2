"""The fc3d benchmark's own arithmetic (no timing is asserted)."""

from __future__ import annotations

import pytest

from .benchmark_modules import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_fc3d")


def test_rho_against_siconos_alone(bench):
    """auto wins where it is at least as fast as every Siconos solver that solved the problem
    (its own stage, newton, is not a rival there); 'lcpdyn (best)' takes the fastest lcpdyn
    method per problem; a problem no Siconos solver solved counts for whoever solved it."""

    def record(method, problem, seconds):
        return {"method": method, "problem": problem, "seconds": seconds, "solved": seconds is not None}

    records = [
        record("auto", "a", 1.0), record("newton", "a", 0.5), record("siconos-prox", "a", 2.0),
        record("auto", "b", 3.0), record("newton", "b", 1.0), record("siconos-prox", "b", 2.0),
        record("auto", "c", 1.0), record("newton", "c", None), record("siconos-prox", "c", None),
        record("auto", "d", None), record("newton", "d", None), record("siconos-prox", "d", 1.0),
    ]  # fmt: skip
    methods = ["newton", "auto", "siconos-prox"]
    result = bench.peer_rho(records, methods, ["a", "b", "c", "d"])
    assert result == {"newton": 0.5, "auto": 0.5, "lcpdyn (best)": 0.75}
    assert bench.peer_rho(records, ["newton", "auto"], ["a"]) == {}


def test_timing_resolution_is_the_quantile_of_the_a_a_spreads(bench):
    """The A/A control: the replicated method's two times per problem; a problem not solved in
    both runs gives no spread; the resolution is a measured spread (nearest rank), not an
    interpolation between two."""

    def record(method, problem, seconds):
        return {"method": method, "problem": problem, "seconds": seconds, "solved": seconds is not None}

    first = [record("auto", p, 1.0) for p in "abcdefghij"] + [record("auto", "k", None), record("newton", "a", 9.0)]
    again = [record("auto", p, 1.0 + 0.01 * (i + 1)) for i, p in enumerate("abcdefghij")]
    again += [record("auto", "k", 1.0)]
    result = bench.timing_resolution(first, again)
    assert set(result["per_problem"]) == set("abcdefghij")
    assert result["per_problem"]["c"] == pytest.approx(0.03)
    assert result["resolution"] == pytest.approx(0.09)  # the 9th of 10 spreads
    assert bench.timing_resolution(first, [record("auto", "k", 1.0)])["resolution"] is None
    # ties within the resolution: rho(1 + eps) counts a solver 5 % slower than the fastest
    ratios = {"a": 1.05, "b": 1.0, "c": 1.2, "d": float("inf")}
    assert bench.rho(ratios, 1.0) == 0.25
    assert bench.rho(ratios, 1.0 + result["resolution"]) == 0.5


def _pair(method, problem, seconds, tolerances=(1e-8,)):
    return {
        "method": method,
        "problem": problem,
        "seconds": seconds,
        "solved": seconds is not None,
        "attempts": [{"tolerance": t} for t in tolerances],
    }


def test_entrants_are_the_quick_solvers_with_their_tolerances_and_the_replicate(bench):
    """Interleaved timing takes the pairs solved in under INTERLEAVE_BELOW_S, each with the
    tolerances it needed (a retried solve is timed as the same sequence), and the replicate a
    second time under its own label; an unsolved or slow pair keeps its own process's time."""
    slow = bench.INTERLEAVE_BELOW_S * 2
    records = [
        _pair("nsgs", "p", 1e-4, (1e-8, 1e-10)), _pair("auto", "p", 2e-4), _pair("prox", "p", None),
        _pair("siconos-prox", "p", slow),
    ]  # fmt: skip
    entrants = bench.entrants_of(records, "auto")
    assert [e["label"] for e in entrants] == ["nsgs", "auto", "auto (A/A)"]
    assert entrants[0]["tolerances"] == [1e-8, 1e-10]
    assert entrants[2]["method"] == "auto"
    assert [e["label"] for e in bench.entrants_of(records, "prox")] == ["nsgs", "auto"]


def test_interleaved_medians_become_the_times_only_where_the_answer_passes_again(bench):
    records = [_pair("nsgs", "p", 3e-4), _pair("auto", "p", 1e-4), _pair("siconos-prox", "p", 5.0)]
    replicates = [_pair("auto", "p", 2e-4)]
    timing = {
        "ok": True,
        "medians": {"nsgs": 2e-4, "auto": 1.5e-4, "auto (A/A)": 1.6e-4},
        "errors": {"nsgs": 2e-8, "auto": 1e-12, "auto (A/A)": 1e-12},  # nsgs: not solved this time
    }
    bench.apply_interleaved(records, replicates, timing)
    nsgs, auto, prox = records
    assert (nsgs["seconds"], nsgs["timing"]) == (3e-4, "isolated") and "interleave_note" in nsgs
    assert (auto["seconds"], auto["seconds_isolated"], auto["timing"]) == (1.5e-4, 1e-4, "interleaved")
    assert (prox["seconds"], prox["timing"]) == (5.0, "isolated")
    assert replicates[0]["seconds"] == 1.6e-4 and replicates[0]["seconds_isolated"] == 2e-4
    # the A/A spread from either set of times
    assert bench.timing_resolution(records, replicates)["per_problem"]["p"] == pytest.approx(0.1 / 1.5)
    assert bench.timing_resolution(records, replicates, key="seconds_isolated")["per_problem"]["p"] == 1.0
    # a failed interleaved run leaves every time as measured in its own process
    again = [_pair("auto", "p", 1e-4)]
    bench.apply_interleaved(again, [], {"ok": False, "reason": "exit 1"})
    assert (again[0]["seconds"], again[0]["timing"]) == (1e-4, "isolated")


def test_a_small_run_end_to_end(bench, tmp_path):
    """Two lcpdyn methods on two small problems of tests/data/fc3d: every pair solved, timed
    interleaved (each the same computation as in its own process), the A/A control measured
    both ways, the JSON, table and figure written."""
    import json
    from pathlib import Path

    data = Path(__file__).parent / "data" / "fc3d"
    code = bench.main(
        ["--problems", "FC3D_Example1.dat,Rover1039", "--methods", "nsgs,auto", "--data", str(data),
         "--out", str(tmp_path), "--time-limit", "30"]
    )  # fmt: skip
    assert code == 0
    report = json.loads((tmp_path / "bench_fc3d.json").read_text())
    assert all(r["solved"] and r["timing"] == "interleaved" for r in report["records"])
    assert len(report["records"]) == 4 and len(report["replicates"]) == 2
    assert set(report["interleaved"]) == {"FC3D_Example1", "Rover1039"}
    for timing in report["interleaved"].values():
        assert timing["ok"] and timing["entrants"] == ["nsgs", "auto", "auto (A/A)"]
        assert timing["rounds"] >= bench.INTERLEAVE_MIN_ROUNDS
        assert all(e <= bench.TARGET for e in timing["errors"].values())
    assert report["timing_resolution"]["resolution"] is not None
    assert report["timing_resolution_isolated"]["resolution"] is not None
    assert (tmp_path / "bench_fc3d_profiles.png").stat().st_size > 0
    assert "interleaved" in (tmp_path / "bench_fc3d.txt").read_text()
