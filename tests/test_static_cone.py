"""The regularized model's ``static_bound="cone"`` (issue 15, item 5): its rows, and on the
mu = 0.2 wheel (five stick/slip switches) a static force inside the cone and switch times of the
exact cone at the same step, where the paper's Eq. (12) box sticks with |lam_T| up to
sqrt(2) mu lam_N and switches up to 12 ms early."""

from __future__ import annotations

import math

import numpy as np
import pytest

import scenes
from lcpdyn import Simulation
from lcpdyn.friction import Regularized, make_friction
from lcpdyn.metrics import slip_transitions, static_force_ratio


def block_of(static_bound, previous, basis_force=None):
    """One contact sticking (slip 0) on a body with one velocity per tangent direction."""
    D, v = np.eye(2), np.zeros(2)
    tangent = np.array([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    model = Regularized(static_bound=static_bound)
    return model.block(D, v, 1e-3, np.array([0.5]), np.array([10.0]), np.array([previous]), tangent,
                       basis_force=None if basis_force is None else np.array([basis_force]))  # fmt: skip


def test_cone_rows_put_the_box_corner_on_the_cone():
    h, bound = 1e-3, 0.5 * 10.0
    box = block_of("box", (-3.0, 0.0, 0.0))
    cone = block_of("cone", (-3.0, 0.0, 0.0))
    np.testing.assert_allclose(box.hi, [h * bound, h * bound])
    np.testing.assert_allclose(cone.hi, [h * bound, h * 4.0])  # sqrt(5^2 - 3^2)
    np.testing.assert_array_equal(cone.F, box.F)  # same basis (aligned with the previous force)
    np.testing.assert_allclose(cone.c, box.c, atol=1e-20)
    # a later pass: basis along the last pass's force (0, 6): transverse bound 0; the bristle's
    # previous force (-3, 0) is written in that basis
    turned = block_of("cone", (-3.0, 0.0, 0.0), basis_force=(0.0, 6.0, 0.0))
    np.testing.assert_allclose(turned.basis[0], [[0.0, 1.0], [-1.0, 0.0]], atol=1e-15)
    np.testing.assert_allclose(turned.hi, [h * bound, 0.0])
    assert turned.c[1] != 0.0 and math.copysign(1.0, turned.c[1]) == math.copysign(1.0, box.c[0])


def test_parameters_and_bad_input():
    model = make_friction("regularized", static_bound="cone")
    assert model.parameters()["static_bound"] == "cone" and model.basis_passes > 0
    assert make_friction(**{**model.parameters(), "model": "regularized"}).static_bound == "cone"
    assert Regularized().static_bound == "auto" and Regularized().basis_passes == 0
    # "auto": the cone under the midpoint scheme, the paper's box (Eq. 12) under the others; the
    # simulation runs (and records) the bound taken; a named bound is kept whatever the scheme
    wheel = scenes.wheel.build()
    for update, bound in (("symplectic", "box"), ("paper", "box"), ("midpoint", "cone")):
        sim = Simulation(wheel.model, "regularized", 1e-3, position_update=update)
        assert sim.friction.static_bound == bound and sim.parameters()["friction"]["static_bound"] == bound
        assert sim._basis_passes == (3 if bound == "cone" else 0)
        named = Simulation(wheel.model, Regularized(static_bound="box"), 1e-3, position_update=update)
        assert named.friction.static_bound == "box"
    # the wheel scene names its static bound ("auto": its tables reproduce with the paper's box)
    assert wheel.friction("regularized").static_bound == "auto"
    assert scenes.wheel.build(static_bound="cone").friction("regularized").static_bound == "cone"
    assert scenes.wheel.build().friction("coulomb").name == "coulomb"
    with pytest.raises(ValueError, match="scene 'wheel': static_bound must be one of"):
        scenes.wheel.build(static_bound="disk")
    assert Regularized(static_bound="cone").compiled_rows(1e-3).cone  # the compiled kernels build it too
    with pytest.raises(ValueError, match="static_bound must be one of"):
        Regularized(static_bound="disk")


def switches(run):
    transitions = slip_transitions(run, 1e-5)
    return np.array(sorted(transitions["to_roll"] + transitions["to_slide"]))


def test_mu_02_wheel_sticks_inside_the_cone_and_switches_with_the_exact_cone():
    scene = scenes.wheel.build(mu=0.2, t_end=4.0)
    constants = scene.contact_model
    runs = {
        bound: Simulation(
            scene.model,
            Regularized(constants["tangential_stiffness"], constants["velocity_threshold"], static_bound=bound),
            1e-3,
        ).run(4.0)
        for bound in ("box", "cone")
    }
    coulomb = Simulation(scene.model, "coulomb", 1e-3).run(4.0)
    assert static_force_ratio(runs["box"])["max"] > 1.4
    assert static_force_ratio(runs["cone"])["max"] < 1.001
    exact_cone, cone, box = switches(coulomb), switches(runs["cone"]), switches(runs["box"])
    assert exact_cone.size == cone.size == box.size == 5
    assert np.max(np.abs(cone - exact_cone)) <= 1e-3 + 1e-9  # within one step of the exact cone
    assert np.max(np.abs(box - exact_cone)) > 9e-3  # the box's first stick comes 10 ms early


def test_compiled_paths_take_the_cone_bit_for_bit():
    """The dense step's fused kernel and the island kernel build the cone's static rows and pass
    again as the general paths assembled from ``block`` do: the same motion bit for bit (the
    wheel, dense; 12 spheres sliding to rolling, island by island)."""
    from scenes.scale import Spheres

    wheel, spheres = scenes.wheel.build(mu=0.2).model, Spheres.build(count=12).model
    for model, t_end in ((wheel, 0.5), (spheres, 0.3)):
        runs = []
        for fused in (True, False):
            sim = Simulation(model, Regularized(static_bound="cone"), 1e-3, fused=fused)
            assert sim._fused == fused
            runs.append(sim.run(t_end))
        for name in ("position", "velocity", "angular_velocity", "contact_friction_force", "contact_normal_force"):
            np.testing.assert_array_equal(getattr(runs[0], name), getattr(runs[1], name), err_msg=name)
