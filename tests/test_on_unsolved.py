"""A step whose answer misses the run's tolerance (issue 45, "Tolerance"): it stops the run by
default; with ``on_unsolved="flag"`` it is kept -- the answer of the smaller residual, its status
and residual recorded, ``Health.UNSOLVED`` set, a warning at the end -- never silently, and never
reported SOLVED."""

from __future__ import annotations

import numpy as np
import pytest

import scenes
from lcpdyn import Health, Simulation, SimulationError, StepOptions, UnsolvedWarning, load
from lcpdyn.step_result import StepResult
from lcpdyn.strategies import methods
from solvers.result import Status

UNREACHABLE = 1e-20  # below what double precision reaches (a solved step's residual is ~1e-16)


@pytest.mark.parametrize("friction", ["regularized", "coulomb"])
def test_a_step_that_misses_the_tolerance_stops_or_is_kept_marked(friction, tmp_path):
    model = scenes.wheel.build().model
    with pytest.raises(SimulationError, match="step 0 .*failed"):
        Simulation(model, friction, 1e-3, tolerance=UNREACHABLE).run(0.01)
    sim = Simulation(model, friction, 1e-3, tolerance=UNREACHABLE, on_unsolved="flag")
    with pytest.warns(UnsolvedWarning, match=r"10 of 10 steps kept unsolved .*tolerance 1e-20"):
        run = sim.run(0.01, out=str(tmp_path / "run.npz"))
    assert (run.solver_status != Status.SOLVED).all()  # never reported solved
    assert (run.health & Health.UNSOLVED).all()
    assert (run.solver_residual > UNREACHABLE).all() and (run.solver_residual < 1e-14).all()  # the best answer
    # the kept answers are the ones a reachable tolerance accepts: the same motion, bit for bit
    plain = Simulation(model, friction, 1e-3, compiled_loop=False).run(0.01)
    flagged = Simulation(model, friction, 1e-3, compiled_loop=False, tolerance=UNREACHABLE, on_unsolved="flag")
    with pytest.warns(UnsolvedWarning):
        again = flagged.run(0.01)
    np.testing.assert_allclose(again.velocity, plain.velocity, rtol=0, atol=1e-12)
    saved = load(str(tmp_path / "run.npz"))
    assert saved.parameters["on_unsolved"] == "flag" and saved.parameters["tolerance"] == UNREACHABLE
    np.testing.assert_array_equal(saved.health, run.health)


def test_flag_changes_nothing_where_every_step_is_solved():
    model = scenes.wheel.build().model
    runs = [Simulation(model, "regularized", 1e-3, on_unsolved=choice).run(0.2) for choice in ("stop", "flag")]
    for name in ("position", "velocity", "contact_normal_force", "solver_residual", "health"):
        np.testing.assert_array_equal(getattr(runs[0], name), getattr(runs[1], name), err_msg=name)
    assert (runs[1].solver_status == 0).all()


def test_the_steps_verdict_judges_every_path_by_its_residual():
    """:func:`~lcpdyn.strategies.methods.judge_step`: an answer a path returned as SOLVED with a
    residual above the tolerance (or not finite) is not solved, whatever the path."""

    class Sim:
        tolerance, on_unsolved = 1e-9, "stop"

    class State:
        steps_done, t = 7, 0.007

    def answer(residual):
        return StepResult(v=np.zeros(1), normal_force=np.zeros(0), friction_force=np.zeros((0, 3)),
                          status=int(Status.SOLVED), iterations=1, residual=residual, fallback=False,
                          kinetic=np.zeros(0, bool), bilateral=np.zeros(0))  # fmt: skip

    ok = answer(1e-12)
    methods.judge_step(Sim, State, ok)
    assert ok.status == Status.SOLVED
    for residual in (1e-6, float("nan")):
        with pytest.raises(SimulationError, match=r"step 7 .*above the tolerance 1e-09 \(INACCURATE\)"):
            methods.judge_step(Sim, State, answer(residual))
    Sim.on_unsolved = "flag"
    kept = answer(1e-6)
    methods.judge_step(Sim, State, kept)
    assert kept.status == Status.INACCURATE


def test_a_failed_answer_is_kept_only_if_finite():
    class Failed:
        success, status, message = False, Status.MAX_ITERATIONS, "limit"

        def __init__(self, method, z, residual):
            self.method, self.z, self.relative_residual = method, np.asarray(z, float), residual

    first, second = Failed("judice-pires", [1.0], 1e-3), Failed("lemke", [2.0], 1e-5)
    kept, retried = methods.accept_or_fallback(first, lambda m: second, "lemke", 0, 0.0, keep=True)
    assert kept is second and retried
    broken = Failed("lemke", [np.nan], 1e-30)
    assert methods.accept_or_fallback(first, lambda m: broken, "lemke", 0, 0.0, keep=True) == (first, False)
    with pytest.raises(SimulationError, match="and the fallback lemke failed too"):
        methods.accept_or_fallback(first, lambda m: second, "lemke", 0, 0.0)
    with pytest.raises(SimulationError, match="failed too"):
        methods.accept_or_fallback(Failed("a", [np.inf], 1.0), lambda m: broken, "b", 0, 0.0, keep=True)


def test_bad_choice_is_named():
    with pytest.raises(ValueError, match="on_unsolved must be 'stop' or 'flag', got 'ignore'"):
        StepOptions(on_unsolved="ignore")


def test_the_command_line_takes_the_tolerance_and_the_choice(tmp_path, capsys):
    from lcpdyn.cli import main

    out = str(tmp_path / "w.npz")
    base = ["run", "wheel", "--set", "t_end=0.005", "--quiet", "--tolerance", "1e-20", "--out", out]
    assert main(base) == 1
    assert "simulation stopped" in (err := capsys.readouterr().err) and "on_unsolved='flag' keeps" in err
    assert load(out).parameters["status"].startswith("failed")  # what the run did before it stopped
    with pytest.warns(UnsolvedWarning, match="5 of 5 steps kept unsolved"):
        assert main(base + ["--on-unsolved", "flag", "--overwrite"]) == 0
    saved = load(out)
    assert saved.parameters["tolerance"] == 1e-20 and (saved.health & Health.UNSOLVED).all()
    assert main(["run", "--resume", out, "--t-end", "0.01", "--tolerance", "1e-6"]) == 2
    assert "--tolerance" in capsys.readouterr().err
