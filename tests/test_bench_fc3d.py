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
