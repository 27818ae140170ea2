"""Geometrically exact beams (:mod:`lcpdyn.beam`) against closed forms: Timoshenko's tip
deflection, a tip moment that rolls the beam into a full circle, the first bending and torsion
frequencies, a period simulated by the stepper, and a free spinning beam's angular momentum and
energy."""

from __future__ import annotations

import dataclasses
import math

import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg

from lcpdyn import BodyForce, EnergyWarning, RigidBody, Simulation
from lcpdyn.beam import TABLE_1, BeamSection, WeldJoint, add_beam
from lcpdyn.model import Model
from lcpdyn.rotation import np_rotation_matrix

SECTION, LENGTH = BeamSection.bauchau_2002(1)
UNDAMPED = dataclasses.replace(SECTION, proportional_damping=0.0)


def _cantilever(elements, section=SECTION, length=LENGTH, gravity=(0.0, 0.0, 0.0)):
    model = Model(gravity=gravity)
    beam = add_beam(model, "beam", section, (0.0, 0.0, 0.0), (length, 0.0, 0.0), elements)
    model.add_constraint(WeldJoint(body_a=beam.root, offset_b=(0.0, 0.0, 0.0), name="clamp"))
    return model, beam


@pytest.mark.parametrize("elements", [10, 20])
def test_a_cantilevers_tip_deflection_is_timoshenkos(elements):
    """w = P L^3 / 3 EI + P L / GA_s; the reduced-integration element is stiffer by 1/(4 N^2) of
    the bending part (its piecewise-constant curvature), -0.25 % at N = 10 (module docstring),
    reached by large quasi-static steps (the step's backward Euler then is a Newton step)."""
    model, beam = _cantilever(elements)
    load = 10.0
    model.add_force(BodyForce(beam.tip, lambda t, s: (jnp.array([0.0, 0.0, -load]), jnp.zeros(3))))
    trajectory = Simulation(model, "regularized", 0.05).run(2.0)
    deflection = -trajectory.position[-1, -1, 2]
    bending = load * LENGTH**3 / (3.0 * SECTION.bending_stiffness[1])
    exact = bending + load * LENGTH / SECTION.shear_stiffness[1]
    assert abs(deflection / exact - 1.0) < 0.005
    # the linear prediction; the geometrically exact beam differs by O((w / L)^2) = 2.4e-6
    assert deflection == pytest.approx(exact - bending / (4.0 * elements**2), rel=1e-5)
    assert np.all(trajectory.solver_status == 0) and trajectory.health.max() == 0


def test_a_tip_moment_of_2_pi_EI_over_L_rolls_the_beam_into_a_circle():
    """Large rotations: the tip returns to the root (each element's chord keeps its length and
    turns by 2 pi / N, so the polygon closes) and the tip section has turned by 2 pi."""
    model, beam = _cantilever(10)
    moment = 2.0 * math.pi * SECTION.bending_stiffness[0] / LENGTH
    model.add_force(
        BodyForce(beam.tip, lambda t, s: (jnp.zeros(3), jnp.array([0.0, -moment * jnp.minimum(t / 2.0, 1.0), 0.0])))
    )
    # the run starts at zero energy under zero load: the energy check's relative rounding
    # allowance then flags the first step's 1e-28 J of rounding in the strains (see the note)
    with pytest.warns(EnergyWarning, match="above its lowest value"):
        trajectory = Simulation(model, "regularized", 0.01).run(4.0)
    assert np.all(trajectory.health[1:] == 0)
    tip = trajectory.position[-1, -1]
    assert np.linalg.norm(tip) < 1e-6 * LENGTH
    # half way round, the node opposite the root: the diameter of the polygon of N chords of
    # L / N turned by 2 pi / N each, L / (N sin(pi / N)) (L / pi for the continuous circle)
    middle = trajectory.position[-1, 5]
    assert np.linalg.norm(middle) == pytest.approx(LENGTH / (10 * math.sin(math.pi / 10)), rel=1e-9)
    assert abs(abs(trajectory.quaternion[-1, -1, 0]) - 1.0) < 1e-9  # turned by 2 pi: q = -1


def _first_bending():
    """Euler--Bernoulli cantilever, (1.8751 / L)^2 sqrt(EI / rho A) (rad/s)."""
    return 1.875104**2 * math.sqrt(SECTION.bending_stiffness[0] / (SECTION.mass_per_length * LENGTH**4))


def _modes(elements, section=UNDAMPED):
    """Natural frequencies (rad/s) and mode shapes of the clamped beam, from K = A^T diag(k) A
    (the elements' compliant rows at the unstressed reference) and the lumped M, on the null
    space of the clamp's rigid rows."""
    model, _ = _cantilever(elements, section)
    sim = Simulation(model, "regularized", 1e-3)
    q, v = model.initial_state()
    kinematics = sim.evaluate(q, v, 0.0)
    stiffness, _ = model.holonomic_compliance()
    A = kinematics.A[: stiffness.size]
    soft = np.isfinite(stiffness)
    K = A[soft].T @ (stiffness[soft, None] * A[soft])
    basis = scipy.linalg.null_space(A[~soft])
    values, vectors = scipy.linalg.eigh(basis.T @ K @ basis, basis.T @ sim.M @ basis)
    return np.sqrt(np.maximum(values, 0.0)), basis @ vectors


def test_first_bending_and_torsion_frequencies_within_1_percent_at_20_elements():
    errors = {}
    for elements in (10, 20):
        omega, shapes = _modes(elements)
        twist = np.abs(shapes.reshape(elements + 1, 6, -1)[:, 3]).sum(axis=0)  # body-frame omega_x = twist
        total = np.abs(shapes.reshape(elements + 1, 6, -1)).sum(axis=(0, 1))
        torsion = omega[np.argmax(twist / total > 0.9)]
        bending = omega[0]
        exact_bending = 1.875104**2 * math.sqrt(SECTION.bending_stiffness[0] / (SECTION.mass_per_length * LENGTH**4))
        exact_torsion = (
            math.pi / (2 * LENGTH) * math.sqrt(SECTION.torsional_stiffness / SECTION.polar_inertia_per_length)
        )
        errors[elements] = (bending / exact_bending - 1.0, torsion / exact_torsion - 1.0)
    assert max(abs(e) for e in errors[20]) < 0.01
    assert abs(errors[20][1]) < abs(errors[10][1]) / 3  # converges like 1/N^2
    assert abs(errors[20][0]) < abs(errors[10][0])


def test_the_stepper_reproduces_the_first_bending_period():
    """A small tip-weighted initial velocity, undamped, h = 0.5 ms: the tip's zero crossings
    repeat at the first period (Euler--Bernoulli 0.1844 s; shear and rotary inertia are 1e-4
    corrections) within 1 %, and the energy never rises."""
    elements = 20
    model, beam = _cantilever(elements, UNDAMPED)
    for i, node in enumerate(beam.nodes):
        node.velocity = np.array([0.0, 0.0, 0.01 * (i / elements) ** 2])
    trajectory = Simulation(model, "regularized", 5e-4).run(0.5)
    z, t = trajectory.position[:, -1, 2], trajectory.t
    crossing = np.flatnonzero(np.diff(np.sign(z)) != 0)
    times = t[crossing] - z[crossing] * (t[crossing + 1] - t[crossing]) / (z[crossing + 1] - z[crossing])
    period = 2.0 * np.mean(np.diff(times))
    exact = (
        2 * math.pi / (1.875104**2 * math.sqrt(SECTION.bending_stiffness[0] / (SECTION.mass_per_length * LENGTH**4)))
    )
    assert period == pytest.approx(exact, rel=0.01)
    assert np.all(np.diff(trajectory.energy) <= 1e-12 * trajectory.energy[0])
    assert trajectory.health.max() == 0


def test_a_free_spinning_beam_keeps_its_angular_momentum_and_loses_energy_only():
    """A free, undamped beam spinning about a transverse axis at 5 rad/s: the internal forces
    are those of objective strains (no net force or moment), so the total angular momentum
    sum m x v + R I omega is kept; centrifugal stretching and the scheme's damping of the
    bending that the spin excites never raise the energy."""
    model = Model(gravity=(0.0, 0.0, 0.0))
    elements, spin = 8, np.array([0.0, 0.0, 5.0])
    beam = add_beam(model, "beam", UNDAMPED, (-1.0, 0.0, 0.0), (1.0, 0.0, 0.0), elements)
    for node in beam.nodes:
        node.velocity = np.cross(spin, node.position)
        node.angular_velocity = spin
    trajectory = Simulation(model, "regularized", 1e-3).run(1.0)
    mass, inertia = model.body_masses()

    def momentum(k):
        total = np.zeros(3)
        for b in range(len(beam.nodes)):
            x, v, w = trajectory.position[k, b], trajectory.velocity[k, b], trajectory.angular_velocity[k, b]
            q = trajectory.quaternion[k, b]
            R = np_rotation_matrix(q)
            total += mass[b] * np.cross(x, v) + R @ inertia[b] @ R.T @ w
        return total

    start, end = momentum(0), momentum(-1)
    assert np.linalg.norm(end - start) < 1e-9 * np.linalg.norm(start)
    assert trajectory.health.max() == 0
    angle = np.arctan2(trajectory.position[-1, -1, 1], trajectory.position[-1, -1, 0])
    assert np.degrees(abs(np.angle(np.exp(1j * (angle - 5.0))))) < 0.5  # it spun 5 rad
    # backward Euler on linear rows cannot raise the energy; on these geometrically nonlinear
    # ones the linearization about the predicted configuration leaves O(h^4) per step: measured
    # 3.5e-8 J on 14 J while the centrifugal stretch sets in, rounding afterwards
    assert np.all(np.diff(trajectory.energy) <= 1e-8 * trajectory.energy[0])


def test_table_1_and_its_reading():
    section, length = BeamSection.bauchau_2002(3)
    assert length == 0.5 and section.bending_stiffness == (11.6e3, 11.6e3)
    # set 3's inertia per length read as 1e-3 kg m is rho (I2 + I3) of its own EI / EA section
    assert section.polar_inertia_per_length == pytest.approx(
        2 * section.mass_per_length * section.bending_stiffness[0] / section.axial_stiffness, rel=0.02
    )
    assert set(TABLE_1) == {1, 2, 3}


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda m: add_beam(m, "b", SECTION, (0, 0, 0), (1, 0, 0), 0), "elements must be an integer >= 1"),
        (lambda m: add_beam(m, "b", SECTION, (0, 0, 0), (0, 0, 0), 4), "start and end coincide"),
        (lambda m: add_beam(m, "b", SECTION, (0, 0, 0), (0, 0, 1), 4), "is parallel to the beam"),
        (lambda m: add_beam(m, "b", SECTION, (0, 0, math.nan), (1, 0, 0), 4), "start"),
        (lambda m: add_beam(m, "b", "steel", (0, 0, 0), (1, 0, 0), 4), "section must be a BeamSection"),
        (lambda m: dataclasses.replace(SECTION, bending_stiffness=-1.0), "bending_stiffness must be > 0"),
        (lambda m: dataclasses.replace(SECTION, proportional_damping=-0.1), "proportional_damping must be >= 0"),
        (lambda m: BeamSection.bauchau_2002(4), "sets 1, 2 and 3"),
    ],
)
def test_bad_beams_are_refused(call, message):
    with pytest.raises((ValueError, TypeError), match=message):
        call(Model())


def test_the_condensed_step_equals_the_dense_one_with_a_rolling_wheel():
    """The clamped beam carrying a wheel that rolls on the ground (benchmarks/bench_beam.py):
    eliminating the velocities and bilateral multipliers by the sparse KKT factorization and
    solving the contact's LCP alone gives the dense path's steps to rounding."""
    from tests.benchmark_modules import load_benchmark

    bench = load_benchmark("bench_beam")
    runs = {}
    for sparse in (False, "condensed"):
        sim = Simulation(bench.build("clamped-wheel", 4), "regularized", 1e-3, sparse=sparse)
        runs[sparse] = sim.run(0.1)
        assert sim.parameters()["sparse"] == sparse
    dense, condensed = runs[False], runs["condensed"]
    assert np.max(np.abs(dense.position - condensed.position)) < 1e-12
    assert np.max(np.abs(dense.contact_normal_force - condensed.contact_normal_force)) < 1e-6 * 200.0
    assert np.all(condensed.contact_normal_force[10:, 0] > 150.0)  # the wheel stays on the ground
    assert np.all(condensed.solver_status == 0) and condensed.health.max() == 0


def test_auto_condenses_a_long_beam_and_refuses_what_cannot_be_condensed():
    model, _ = _cantilever(40)
    assert Simulation(model, "regularized", 1e-3).parameters()["sparse"] == "condensed"
    model, _ = _cantilever(4)
    assert Simulation(model, "regularized", 1e-3).parameters()["sparse"] is False
    with pytest.raises(ValueError, match="coulomb or the midpoint scheme"):
        Simulation(model, "coulomb", 1e-3, sparse="condensed")
    bare = Model()
    bare.add_body(RigidBody("b", 1.0, (1.0, 1.0, 1.0)))
    with pytest.raises(ValueError, match="no bilateral rows"):
        Simulation(bare, "regularized", 1e-3, sparse="condensed")


def test_the_beam_benchmark_reports_costs_and_exponents(tmp_path):
    from tests.benchmark_modules import load_benchmark

    report = load_benchmark("bench_beam").main(
        ["--sizes", "4", "--repeats", "1", "--steps", "5", "--out", str(tmp_path / "beam.json")]
    )
    assert (tmp_path / "beam.json").exists()
    assert len(report["rows"]) == 4 and all(r["all_solved"] and r["ms_per_step"] > 0 for r in report["rows"])
    assert set(report["growth_exponent_16_to_256"]) == {
        "free/condensed", "free/dense", "clamped-wheel/condensed", "clamped-wheel/dense"
    }  # fmt: skip
    assert (
        max(v for d in report["largest_position_difference_condensed_vs_dense_m"].values() for v in d.values()) < 1e-12
    )
    peer = report["mujoco"]  # MuJoCo measured in the same run where it is installed, a note where not
    try:
        import mujoco  # noqa: F401
    except ImportError:
        assert "not installed" in peer["skipped"] and "rows" not in peer
    else:
        assert [(r["scene"], r["elements"]) for r in peer["rows"]] == [("free", 4), ("clamped-wheel", 4)]
        assert set(peer["lcpdyn_over_mujoco"]) == {"free/N=4", "clamped-wheel/N=4"}
        assert set(peer["growth_exponent_16_to_256"]) == {"free", "clamped-wheel"}


def test_the_beam_benchmarks_mujoco_peer_rolls_the_wheel():
    """MuJoCo's clamped beam (benchmarks/bench_beam.py): its wheel rolls (spin v / r, and friction
    alone spins it up from rest), the ground carries it, and it ends where lcpdyn's does."""
    pytest.importorskip("mujoco")
    from tests.benchmark_modules import load_benchmark

    bench = load_benchmark("bench_beam")
    row = bench.measure_mujoco("clamped-wheel", 4, 20, 1)
    assert row["finite"] and row["warnings"] == 0 and row["ms_per_step"] > 0
    assert row["contacts"] >= 1 and row["normal_force_n"] > 150.0
    assert abs(row["spin_over_v_r"] - 1.0) < 1e-3 and abs(row["spin_up_over_v_r"] - 1.0) < 0.02
    assert abs(row["cart_speed"] - bench.SPEED) < 1e-4
    ours = Simulation(bench.build("clamped-wheel", 4), "regularized", 1e-3, sparse="condensed").run(0.02)
    assert np.max(np.abs(np.subtract(row["final_position"], ours.position[-1]))) < 1e-5
