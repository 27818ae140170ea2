"""A step's second solve after a friction switch solves again only the islands that hold a switched
contact (lcpdyn.strategies.second_solve): the motion is the same, bit for bit, as when every island
is solved again, with fewer pivots or sweeps."""

from __future__ import annotations

import numpy as np
import pytest

import scenes
from lcpdyn.collision import Collider, Sphere
from lcpdyn.friction import Regularized
from lcpdyn.stepper import Simulation
from lcpdyn.strategies import coulomb, detected, islands

STEPS = 60
MODULES = (islands, coulomb, detected)


def _run(kind, count, model, mu_static, colliders):
    """``model`` a friction model's name, or "cone": the regularized model's static bound in the
    cone, whose basis passes end island by island. ``mu_static`` > mu: a contact slipping slower
    than 0.3 m/s counts as stuck and gets mu_s, and slides all the same (a breakaway inside the
    step, mu_k in its second solve). With
    ``colliders``, every sphere also has a sphere collider and the second sphere starts touching
    the first (the step with detected contacts, split by island)."""
    scene = scenes.SCENES[kind].build(count=count)
    for contact in scene.model.contacts:
        contact.mu_static = mu_static
    options = {}
    if colliders:
        radius = scene.parameters["radius"]
        first, second = scene.model.bodies[:2]
        second.position = np.asarray(first.position) + (2 * radius - 1e-4, 0.0, 0.0)
        for body in scene.model.bodies:
            scene.model.add_collider(Collider(body, Sphere(radius)))
        options["sparse"] = True
    friction = Regularized(static_bound="cone") if model == "cone" else scene.friction(model)
    sim = Simulation(scene.model, friction, scene.dt, compiled_loop=False, static_threshold=0.3, **options)
    results = [sim.step() for _ in range(STEPS)]
    if colliders:
        assert sum(len(out.detected) for out in results) > 0 and all(out.detected.islands > 1 for out in results)
    else:
        assert sim._islands is not None  # an island strategy
    return sim, np.array([out.iterations for out in results])


@pytest.mark.parametrize(
    "kind, count, model, mu_static, colliders",
    [
        ("spheres", 30, "regularized", 0.5, False),  # lcp_islands; reversals of kinetic slip
        ("spheres", 30, "box", 0.75, False),  # lcp_islands; breakaways from mu_s to mu_k
        ("dumbbells", 12, "regularized", 0.75, False),  # solve_islands_general
        ("spheres", 30, "cone", 0.5, False),  # lcp_islands, basis passes ending island by island
        ("dumbbells", 12, "cone", 0.75, False),  # solve_islands_general, the same
        ("spheres", 30, "coulomb", 0.75, False),  # coulomb_islands
        ("dumbbells", 12, "coulomb", 0.75, False),  # coulomb_groups
        ("spheres", 20, "regularized", 0.75, True),  # detected contacts: the bounded problem's islands
        ("spheres", 20, "coulomb", 0.75, True),  # detected contacts: the exact cone's islands
    ],
)
def test_second_solve_keeps_the_islands_without_a_switch(kind, count, model, mu_static, colliders, monkeypatch):
    switched = []

    def counting(original):
        def islands_to_solve(work, *args):
            again = original(work, *args)
            if again is not None:
                switched.append((int(again.sum()), again.size))
            return again

        return islands_to_solve

    for module in MODULES:
        monkeypatch.setattr(module, "islands_to_solve", counting(module.islands_to_solve))
    kept, iterations_kept = _run(kind, count, model, mu_static, colliders)
    monkeypatch.undo()
    for module in MODULES:  # the second solve of every island, as before islands were kept
        monkeypatch.setattr(module, "islands_to_solve", lambda *args: None)
    every, iterations_every = _run(kind, count, model, mu_static, colliders)
    assert switched, "no friction switch in the run: the test does not reach the second solve"
    assert all(0 < solved < size for solved, size in switched)  # some islands kept, some solved again
    for name in ("q", "v", "normal_force", "friction_force"):
        assert np.array_equal(getattr(kept.state, name), getattr(every.state, name)), name
    if colliders:
        assert np.array_equal(kept.state.contact_impulse, every.state.contact_impulse)
    assert iterations_kept.sum() < iterations_every.sum()
