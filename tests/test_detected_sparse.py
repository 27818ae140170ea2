"""Large islands of detected contacts in the one step: a pile's island solved on its sparse Delassus form
(lcpdyn.strategies.sparse_island), against the dense Eq. (30) of the same step, and what happens when
the sparse solve fails."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import lcpdyn.strategies.detected as detected_strategy
import lcpdyn.strategies.sparse_island as sparse_island
from lcpdyn import Simulation
from lcpdyn.detected_contacts import ContactProperties
from lcpdyn.friction import Regularized
from lcpdyn.run.errors import SimulationError
from scenes.touching import sphere_pile
from solvers.result import Status

pytestmark = pytest.mark.filterwarnings("ignore::lcpdyn.stepper.EnergyWarning")


BOX = Regularized(static_bound="box")  # one problem per pass: the tests of one answer below (named,
# as the regularized model's default may become the cone, issue 44)


def _pile(sparse, friction=BOX):
    """60 spheres poured into a narrow bin (nine a layer): after 250 steps one island of some 110
    contacts, more than SPARSE_CONTACTS. The regularized model with the paper's box (Eq. 12): each
    step one bounded LCP (and its bound passes), whose v+ is unique."""
    model = sphere_pile(count=60, half_width=0.1)
    model.set_collisions(contact=ContactProperties(mu=0.3))
    return Simulation(model, friction, 1e-3, sparse=sparse)


@pytest.fixture(scope="module")
def poured():
    """The pile's state once its island is large, and the steps' counts of sparse solves."""
    sim = _pile("auto")
    counts = []
    for _ in range(250):
        out = sim.step()
        counts.append((len(out.detected), out.detected.islands, out.detected.sparse))
    return sim.snapshot(), counts


def test_a_piles_large_island_is_solved_sparse_and_gives_the_dense_steps_answer(poured):
    """From the same state, the island on its sparse Delassus form and the dense Eq. (30) of the whole
    step (sparse=False) give the same v+ and loads within the solver's tolerance (1e-9 of each
    row's scale): the bounded LCP's v+ is unique (M > 0), so the motion does not depend on the path."""
    saved, counts = poured
    assert counts[-1][0] > sparse_island.SPARSE_CONTACTS and counts[-1][2] == 1
    assert all(s == 0 for c, _, s in counts if c <= sparse_island.SPARSE_CONTACTS)
    a, b = _pile("auto"), _pile(False)
    a.restore(saved)
    b.restore(saved)
    for _ in range(3):
        x, y = a.step(), b.step()
        assert x.detected.sparse == 1 and y.detected.sparse == 0 and not x.fallback
        assert x.residual <= a.tolerance
        assert np.abs(a.v - b.v).max() < 1e-9
        load = y.detected.normal_force.sum()
        assert abs(x.detected.normal_force.sum() - load) < 1e-8 * load


def test_a_failed_sparse_solve_falls_back_to_the_dense_problem_or_names_the_island(poured, monkeypatch):
    """A sparse solve that does not converge is replaced by the island's dense Eq. (30), recorded as a
    fallback (the answer still passes the independent check); beyond DENSE_LIMIT unknowns the step
    stops with an error naming the island and the limit."""
    saved, _ = poured
    solve = sparse_island.solve_sparse_island

    def failing(*args, **kwargs):
        return dataclasses.replace(solve(*args, **kwargs), converged=False, relative=0.5)

    monkeypatch.setattr(detected_strategy, "solve_sparse_island", failing)
    a, b = _pile("auto"), _pile(False)
    a.restore(saved)
    b.restore(saved)
    x = a.step()
    b.step()
    assert x.fallback and x.detected.sparse == 0 and x.residual <= a.tolerance
    assert np.abs(a.v - b.v).max() < 1e-12
    monkeypatch.setattr(sparse_island, "DENSE_LIMIT", 100)
    with pytest.raises(SimulationError, match=r"island of \d+ detected contacts did not converge .*DENSE_LIMIT = 100"):
        a.step()
    # on_unsolved="flag": the island keeps its sparse answer, and the step says it is not solved
    flagged = Simulation(a.model, BOX, 1e-3, sparse="auto", on_unsolved="flag")
    flagged.restore(saved)
    kept = flagged.step()
    assert kept.status == Status.INACCURATE and kept.residual == 0.5 and kept.detected.sparse == 1


def test_the_cones_basis_passes_are_taken_on_the_sparse_path(poured, monkeypatch):
    """The regularized model's static bound in the cone solves the island again with the
    static basis and bounds from the last pass (lcpdyn.friction.base.basis_settled) on the sparse
    form as the dense step does: the same passes, each pass's answer the same to the solver's
    tolerance, and the step's v+ the same to what the passes make of that tolerance (each pass's
    problem is built from the last pass's answer)."""
    import lcpdyn.friction.base as base

    saved, _ = poured
    seen = {}
    for sparse in ("auto", False):
        calls = seen.setdefault(sparse, [])

        def settled(force, used, *args, calls=calls):
            calls.append(np.abs(force).sum())
            return base.basis_settled(force, used, *args)

        monkeypatch.setattr(sparse_island, "basis_settled", settled)
        monkeypatch.setattr(detected_strategy, "basis_settled", settled)
        sim = _pile(sparse, Regularized(static_bound="cone"))
        sim.restore(saved)
        out = sim.step()
        assert out.detected.sparse == (sparse == "auto") and not out.fallback and out.residual <= sim.tolerance
        seen[sparse] = (calls, sim.v.copy(), out.detected.normal_force.sum())
    (calls_a, v_a, load_a), (calls_b, v_b, load_b) = seen["auto"], seen[False]
    assert len(calls_a) == len(calls_b) >= 2  # passes taken: the pile's static forces turn within the step
    np.testing.assert_allclose(calls_a, calls_b, rtol=1e-8)
    assert np.abs(v_a - v_b).max() < 1e-6 and abs(load_a - load_b) < 1e-8 * load_b


@pytest.mark.parametrize("sparse", ["auto", False])
def test_a_second_solve_goes_on_from_the_first_solves_bounds_and_impulses(poured, monkeypatch, sparse):
    """After a friction switch (the regularized model's branch, lcpdyn.friction_switches) the step's
    second solve takes the friction bounds the first solve's last pass took (not the lagged lam_N
    again), starts from the first solve's impulses, and takes only the bound passes the first left:
    at most ``bound_passes`` in the step. On the sparse path and the dense one alike."""
    saved, _ = poured
    calls = []
    if sparse:
        solve = detected_strategy.solve_sparse_island

        def spy(*args, **kwargs):
            answer = solve(*args, **kwargs)
            calls.append((args[12].copy(), args[15].copy(), args[18].bound_passes, answer.bound_normal.copy(),
                          answer.normal.copy(), answer.bound_passes))  # fmt: skip
            return answer

        monkeypatch.setattr(detected_strategy, "solve_sparse_island", spy)
    else:
        part = detected_strategy._solve_part

        def spy(sim, work, state, part_, values, *args):
            out = part(sim, work, state, part_, values, *args)
            n, m = part_.columns.size, part_.rows.size
            calls.append((values["normal"].copy(), None, args[-1], out[5].copy(), out[0].z[n + m : n + m + out[5].size]
                          .copy(), out[6]))  # fmt: skip
            return out

        monkeypatch.setattr(detected_strategy, "_solve_part", spy)
    sim = _pile(sparse)
    sim.restore(saved)
    passes, seconds = sim.options.bound_passes, 0
    for _ in range(12):
        calls.clear()
        out = sim.step()
        assert out.residual <= sim.tolerance and not out.fallback and out.detected.sparse == (sparse == "auto")
        if len(calls) < 2:
            continue
        seconds += 1
        (_, _, allowed, bounds, impulse, taken), (normal, start, left, _, _, more) = calls
        assert allowed == passes and left == passes - taken and taken + more <= passes
        np.testing.assert_array_equal(normal, bounds)  # the first solve's last bounds, exactly
        if start is not None:  # the sparse path's warm start: the first solve's h lam_N
            np.testing.assert_allclose(start, impulse, rtol=1e-12, atol=1e-15 * np.abs(impulse).max())
    assert seconds >= 3  # the pile's contacts switch in most steps


def test_the_exact_cones_large_island_is_solved_by_sparse_nsgs():
    """Exact Coulomb: NSGS on the island's sparse Delassus operator (then proximal Newton where it
    stalls) against the dense Delassus problem of the whole step, from the same state: both within
    the solver's tolerance of the one exact answer, so v+ agrees to the tolerance's order."""
    sim = _pile("auto", "coulomb")
    for _ in range(250):
        out = sim.step()
    assert out.detected.sparse == 1 and out.problem is None
    dense = _pile(False, "coulomb")
    dense.restore(sim.snapshot())
    for _ in range(3):
        x, y = sim.step(), dense.step()
        assert x.detected.sparse == 1 and not x.fallback and x.residual <= sim.tolerance
        assert np.abs(sim.v - dense.v).max() < 1e-6
        load = y.detected.normal_force.sum()
        assert abs(x.detected.normal_force.sum() - load) < 1e-7 * load


def test_a_pour_into_a_narrow_bin_is_solved_on_the_sparse_path_throughout():
    """80 spheres poured into a bin 4 diameters wide for 0.5 s (regularized): the column forms one
    island of up to ~200 contacts, far above SPARSE_CONTACTS, through hundreds of impacts; projected
    Newton solves every such step (no fallback) to the framework's tolerance, nothing penetrates,
    and the energy only goes."""
    model = sphere_pile(80, 0.025, 0.1, 1000.0)
    model.set_collisions(contact=ContactProperties(mu=0.5))
    sim = Simulation(model, "regularized", 1e-3)
    energy = [sim.energy()]
    sizes, sparse, deepest = [], 0, 0.0
    for _ in range(500):
        out = sim.step()
        assert not out.fallback and out.residual <= 1e-9
        sizes.append(len(out.detected))
        sparse += out.detected.sparse
        if len(out.detected):
            deepest = max(deepest, -float(out.detected.contacts.gap.min()))
        energy.append(sim.energy())
    assert max(sizes) > 3 * sparse_island.SPARSE_CONTACTS and sparse > 200
    assert deepest < 1e-12
    assert np.all(np.diff(energy) <= 1e-9 * energy[0]) and energy[-1] < 0.5 * energy[0]


def test_bench_pile_runs_and_reports(tmp_path):
    """The pile benchmark's lcpdyn entry on a short tower run, a model timed from another's poured
    state, and its table (MuJoCo rows when MuJoCo is importable; the benchmark runs outside CI)."""
    from tests.benchmark_modules import load_benchmark

    bench = load_benchmark("bench_pile")
    entry = bench.run_lcpdyn("tower", 0, "regularized", 0.0, 3, 1e-9)
    assert entry["completed"] and entry["contacts"] == 40 and entry["fallbacks"] == 0
    assert entry["penetration_max"] < 1e-9 and entry["step_ms"] > 0 and entry["islands"] == 1
    assert entry["friction"] == {"model": "regularized", "tangential_stiffness": 1e10, "velocity_threshold": 0.01,
                                 "static_bound": "box"}  # fmt: skip
    state = entry.pop("state")  # the state after the pour, for another model: not part of the report
    assert entry["unsolved"] == 0 and entry["on_unsolved"] == "stop"
    other = bench.run_lcpdyn("tower", 0, "box", 0.0, 2, 1e-9, poured=state)
    assert other["completed"] and other["poured_with"] == "regularized" and other["contacts"] == 40
    other.pop("state")
    # a tolerance no answer meets, flagged: every step counted (the first one with the pour)
    missed = bench.run_lcpdyn("tower", 0, "box", 0.0, 2, 1e-20, poured=state, on_unsolved="flag")
    assert missed["completed"] and missed["unsolved_pour"] == 1 and missed["unsolved"] == 3
    assert 1e-20 < missed["unsolved_residual_max"] < 1e-12
    missed.pop("state")
    # compliant contacts: MuJoCo's solref (2 ms, 1) on one box, its law recorded, its own pour
    soft = bench.run_lcpdyn("tower", 0, "regularized", 0.0, 2, 1e-9, timeconst=0.002)
    assert soft["completed"] and soft["timeconst"] == 0.002 and soft["poured_with"] == "regularized"
    assert soft["normal_law"]["stiffness"] == pytest.approx(1.0 / 0.002**2)  # a box of the tower is 1 kg
    assert 0.0 < soft["penetration_max"] < 1e-2
    soft.pop("state")
    failed = {"scene": "pile", "model": "coulomb", "bodies": 5, "completed": False, "error": "SimulationError: x"}
    report = {"lcpdyn_version": "0", "git": "abc", "machine": "m", "lcpdyn": [entry, other, missed, soft, failed],
              "mujoco": []}  # fmt: skip
    text = bench.table(report)
    assert "lcpdyn regularized k_T=1e+10 |" in text and "lcpdyn box |" in text and "failed: SimulationError: x" in text
    assert "lcpdyn regularized k_T=1e+10, compliant (solref 2 ms) |" in text
    assert "0, 3 unsolved" in text
    out = tmp_path / "pile.json"  # written after every entry: a stopped run keeps what it measured
    bench.save(report, out, complete=False)
    assert '"complete": false' in out.read_text() and "Partial" in out.with_suffix(".txt").read_text()
    assert '<geom type="box"' in bench.mjcf("tower", 0, "CG")
    assert "np.float64" not in bench.mjcf("pile", 3, "CG")  # plain numbers in MJCF under NumPy 2
