"""The fuzz of bad inputs (benchmarks/bad_inputs.py; issue 46): at least 200 distinct mistakes
through the API, the command line and files, each answered by an error that names its culprit
before any step -- none late, unclear or silent."""

from __future__ import annotations

from tests.benchmark_modules import load_benchmark


def test_every_bad_input_gets_a_clear_error_naming_the_culprit_before_any_work():
    bad = load_benchmark("bad_inputs")
    rows = bad.run_all()
    assert len(rows) >= 200 and len({row["case"] for row in rows}) == len(rows)
    kinds = {row["kind"] for row in rows}
    assert {"body", "contact", "options", "run", "solver", "file", "cli", "changed", "magnitude"} <= kinds
    failures = [
        f"[{row['outcome']}] {row['kind']}: {row['case']}: {row['said'][:300]}"
        for row in rows
        if row["outcome"] != "clear"
    ]
    assert not failures, "\n".join(failures)
    assert bad.summary(rows)["all"] == {"clear": len(rows), "late": 0, "unclear": 0, "silent": 0}


def test_the_judge_can_tell_each_outcome():
    """The fuzz's judge on cases made to give each outcome: a refusal without the culprit's name,
    a bad input taken, a failure after steps."""
    bad = load_benchmark("bad_inputs")

    def taken(folder):
        return None

    def vague(folder):
        raise ValueError("something is wrong")

    def late(folder):
        from lcpdyn.stepper import SimulationError

        raise SimulationError("the mass 'b' broke", 5, 0.005)

    cases = [
        bad.Case("t", "silent", taken, ("mass",)),
        bad.Case("t", "unclear", vague, ("mass",)),
        bad.Case("t", "late", late, ("mass",)),
        bad.Case("t", "cli silent", ["cli", ["scenes"]], ("x",)),
        bad.Case("t", "cli unclear", ["cli", ["run", "no-such", "--out", "x.npz"]], ("some other word",)),
    ]
    assert [row["outcome"] for row in bad.run_all(cases)] == ["silent", "unclear", "late", "silent", "unclear"]
