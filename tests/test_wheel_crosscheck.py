"""The same wheel steps solved by lcpdyn's solvers and by Siconos (independent check)."""

from __future__ import annotations

import numpy as np
import pytest

import scenes
import solvers
from lcpdyn.stepper import Simulation

SAMPLES = (0, 1, 2, 500, 1500, 1995, 2003, 2010, 2400)  # sliding, transition, rolling


def _sampled_steps(friction, t_end=2.45):
    scene = scenes.wheel.build(t_end=t_end)
    sim = Simulation(scene.model, scene.friction(friction), scene.dt)
    taken = {}
    for step in range(int(round(t_end / scene.dt))):
        out = sim.step()
        if step in SAMPLES:
            taken[step] = out
    return taken


@pytest.mark.siconos
def test_regularized_wheel_steps_judice_pires_equals_siconos(siconos):
    steps = _sampled_steps("regularized")
    kinds = set()
    for step, out in steps.items():
        assert isinstance(out.problem, solvers.BoundedLCP)  # the step's Eq. (30), through the one front door
        ours = solvers.solve(out.problem)
        theirs = solvers.solve(out.problem, method="siconos")
        assert ours.success and theirs.success, (step, ours.message, theirs.message)
        scale = 1.0 + np.abs(ours.z).max()
        np.testing.assert_allclose(ours.z, theirs.z, atol=1e-8 * scale, err_msg=f"step {step}")
        np.testing.assert_allclose(ours.z[:6], out.v, atol=1e-8 * scale)  # the stepper applied this answer
        kinds.add(bool(out.kinetic[0]))
    assert kinds == {True, False}  # both the kinetic and the static branch were compared


@pytest.mark.siconos
@pytest.mark.parametrize("siconos_method", ["siconos-nsgs", "siconos-nsn-ac"])
def test_coulomb_wheel_steps_nsgs_equals_siconos_fc3d(siconos, siconos_method):
    steps = _sampled_steps("coulomb")
    phases = set()
    for step, out in steps.items():
        problem = out.problem  # the exact cone's Delassus problem with the step's mu
        assert isinstance(problem, solvers.FrictionContactProblem) and problem.mu.tolist() == [0.3]
        ours = solvers.solve(problem, tolerance=1e-10)
        theirs = solvers.solve(problem, method=siconos_method, tolerance=1e-10)
        assert ours.success and theirs.success, (step, ours.message, theirs.message)
        np.testing.assert_allclose(ours.r, theirs.r, rtol=1e-7, atol=1e-9, err_msg=f"step {step}")
        slip = np.linalg.norm(out.slip_world[0])
        phases.add("slide" if slip > 1e-6 else "stick")
    assert phases == {"slide", "stick"}
