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
