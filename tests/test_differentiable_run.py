"""A run as a differentiable JAX function (lcpdyn.differentiable_run; issue 49, item 2): jax.grad
of a run's final state against the discrete closed form of a sliding sphere and against
central finite differences on the Peiret wheel (regularized; the polygonal cone over 1 s), the
block on four corners and the disk rolling on its rim, on windows without switches; the
compiled step's forward numbers unchanged by the derivative rule; what it does not take refused."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lcpdyn.calibrate import stepped
from lcpdyn.differentiable_run import CONSTANTS, DifferentiableRun, RunOutputs
from lcpdyn.precision import float64
from scenes import build_scene

pytestmark = pytest.mark.one_leg  # proven once per two-leg test command (conftest.dealt_leg)


def simulation(scene, friction, **options):
    """The scene's simulation under ``friction``; the polygonal cone with judice-pires, whose
    pivoting the compiled step does (its default, lemke, is not the compiled step's)."""
    if friction == "polygonal":
        options.setdefault("method", "judice-pires")
    return scene.simulation(friction, **options)


def value_and_gradient(run, x, loss, argnums):
    """One compiled program for a test (each compilation costs seconds, a run milliseconds):
    ``loss(outputs)`` of ``run`` at (q0, v0, mu, constants, floats, mu_static), its outputs, and
    its gradient with respect to the arguments ``argnums`` of (v0, mu, constants, mu_static);
    called as ``program(v0, mu, constants, mu_static) -> ((value, outputs), gradients)``. The
    central differences take their values from the same program."""

    def of(v0, mu, constants, mu_static):
        outputs = run(x["q0"], v0, mu, constants, x["floats"], mu_static)
        return loss(outputs), outputs

    return jax.jit(jax.value_and_grad(of, argnums=argnums, has_aux=True))


def assert_central_differences(loss, grads, at, directions, e, floor=0.0):
    """The gradient ``grads`` of ``loss`` at ``at`` along each of ``directions`` (one entry per
    argument) against the central difference (loss(at + e d) - loss(at - e d)) / 2e, to 1e-6
    relative; ``floor`` > 0: each central difference exceeds it (the loss feels each number)."""
    for along in directions:
        plus = loss(*(a + e * b for a, b in zip(at, along)))
        central = float(plus - loss(*(a - e * b for a, b in zip(at, along)))) / (2 * e)
        exact = sum(float(np.sum(np.asarray(gr) * b)) for gr, b in zip(grads, along))
        assert abs(central) > floor, along
        assert exact == pytest.approx(central, rel=1e-6), (along, exact, central)


# the polygonal cone: its 1 s wheel test below (here it held to 7e-16, a compilation of its own)
@pytest.mark.parametrize("friction", ["regularized", "box", "coulomb"])
def test_a_sliding_spheres_gradient_is_its_discrete_closed_form(friction):
    """80 steps of sliding (t* = 117 steps: no switch): v_k = v0 - k mu g h (friction from the first
    step, whose bound takes lam_N of a first pass as the ordinary step's does) and x_N = x_0 + N h v0
    - mu g h² N(N+1)/2 under the step's symplectic update, so dx_N/dv0 = N h and dx_N/dmu =
    -g h² N(N+1)/2 exactly."""
    scene = build_scene("sliding-sphere")
    run = DifferentiableRun(simulation(scene, friction), 80)
    x = run.inputs
    with float64():
        program = value_and_gradient(run, x, lambda out: out.q[-1, 0], (0, 1))
        (_, outputs), (dv0, dmu) = program(x["v0"], x["mu"], x["constants"], x["mu_static"])
    DifferentiableRun.check(outputs)
    h, g, N = scene.dt, scene.parameters["gravity"], 80
    assert np.all(np.linalg.norm(np.asarray(outputs.slip)[:, 0], axis=1) > 0.1)  # sliding throughout
    assert float(dv0[0]) == pytest.approx(N * h, rel=1e-12)
    assert float(dmu[0]) == pytest.approx(-g * h * h * N * (N + 1) / 2, rel=1e-12)


def test_the_wheels_gradient_is_the_finite_difference():
    """The Peiret wheel under the regularized model for 1 s (1,000 steps of its sliding phase: every
    step kinetic, no switch): the gradient of a loss of its final position and spin with respect to
    its initial velocity (a random direction), mu, h, the wheel's mass and its inertia matrix (a
    random symmetric direction; both in ``floats``: gravity, masses, inertias) agrees with central
    differences at e = 1e-6 to 1e-6 relative, and the central difference's error falls as e²
    (e = 1e-2, 1e-3)."""
    scene = build_scene("wheel")
    run = DifferentiableRun(scene.simulation("regularized"), 1000)
    x = run.inputs

    def of(v0, mu, constants, floats):
        outputs = run(x["q0"], v0, mu, constants, floats, x["mu_static"])
        return outputs.q[-1, 0] + outputs.q[-1, 1] + 0.1 * outputs.v[-1, 5], outputs

    with float64():
        program = jax.jit(jax.value_and_grad(of, argnums=(0, 1, 2, 3), has_aux=True))
        at = (x["v0"], x["mu"], x["constants"], x["floats"])
        (_, outputs), grads = program(*at)

        def loss(*inputs):
            return float(program(*inputs)[0][0])

        rng = np.random.default_rng(0)
        direction = rng.normal(size=6)
        dt = np.zeros_like(x["constants"])
        dt[CONSTANTS.index("dt")] = 1e-3
        mass, inertia = np.zeros_like(x["floats"]), np.zeros_like(x["floats"])
        mass[3] = float(x["floats"][3])  # the wheel's mass (kg), body 0
        symmetric = rng.normal(size=(3, 3))
        inertia[4:13] = (0.1 * (symmetric + symmetric.T) * np.abs(x["floats"][4:13]).max()).ravel()
        e = 1e-6
        for along in ((direction, 0.0, 0.0, 0.0), (0.0, 1.0, 0.0, 0.0), (0.0, 0.0, dt, 0.0),
                      (0.0, 0.0, 0.0, mass), (0.0, 0.0, 0.0, inertia)):  # fmt: skip
            plus = loss(*(a + e * b for a, b in zip(at, along)))
            minus = loss(*(a - e * b for a, b in zip(at, along)))
            central = float(plus - minus) / (2 * e)
            exact = sum(float(np.sum(np.asarray(gr) * b)) for gr, b in zip(grads, along))
            assert abs(central) > 1e-3, along  # the loss feels each number
            assert exact == pytest.approx(central, rel=1e-6), (along, exact, central)
        # the central difference's error is second order in e where truncation dominates (e = 1e-2
        # to 1e-4 here, measured 1.1e-6, 1.1e-8, 8e-11 relative; below, rounding's eps/e takes over)
        dmu = float(grads[1][0])
        errors = [abs(float(loss(x["v0"], x["mu"] + e, *at[2:]) - loss(x["v0"], x["mu"] - e, *at[2:]))
                      / (2 * e) - dmu) for e in (1e-2, 1e-3)]  # fmt: skip
        assert 90 < errors[0] / errors[1] < 110, errors
    DifferentiableRun.check(outputs)
    assert np.asarray(outputs.kinetic).all()


@pytest.mark.parametrize("friction", ["box", "polygonal", "coulomb", "continuous"])
def test_the_wheels_gradient_over_one_second_is_the_finite_difference(friction):
    """The Peiret wheel for 1 s (1,000 steps; it slides throughout: no switch) under the box
    model, the polygonal cone (k = 8: nine unknowns per contact, the cone's mu lam_N - sum beta row coupling them to
    lam_N; it slides on one facet), under Bauchau's continuous law (two free unknowns per contact,
    its law linearized about the step's slip) and under exact Coulomb (each step's friction-contact problem
    solved on the host and differentiated on its contact modes, lcpdyn.differentiable_coulomb):
    the run is the simulation's own ordinary steps to rounding (exact Coulomb: NSGS at 1e-12), and
    the gradient of a loss of its final position and spin with respect to its initial velocity (a
    random direction), mu and h agrees with central differences at e = 1e-5 to 1e-6 relative
    (measured: polygonal 1e-10 to 3e-9; Coulomb, on 300 steps, 5e-12 to 8e-10). Before the
    callback's numbers crossed as bytes, XLA's callback thread rounded them to float32 and the
    exact cone's differences were noise at 1e-4 to 1e-2."""
    scene = build_scene("wheel")
    steps = 1000
    run = DifferentiableRun(simulation(scene, friction), steps)
    x = run.inputs
    with float64():
        program = value_and_gradient(run, x, lambda out: out.q[-1, 0] + out.q[-1, 1] + 0.1 * out.v[-1, 5], (0, 1, 2))
        (_, outputs), grads = program(x["v0"], x["mu"], x["constants"], x["mu_static"])

        def loss(v0, mu, constants):
            return float(program(v0, mu, constants, x["mu_static"])[0][0])

        dt = np.zeros_like(x["constants"])
        dt[CONSTANTS.index("dt")] = 1e-3
        directions = ((np.random.default_rng(0).normal(size=6), 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, dt))
        assert_central_differences(loss, grads, (x["v0"], x["mu"], x["constants"]), directions, 1e-5)
    DifferentiableRun.check(outputs)
    assert run.switches(outputs) == []
    q, v = stepped(simulation(scene, friction, **({"tolerance": 1e-12} if friction == "coulomb" else {})), steps)
    assert np.max(np.abs(np.asarray(outputs.q) - q)) < 1e-12  # m (and quaternion entries)
    assert np.max(np.abs(np.asarray(outputs.v) - v)) < 1e-10  # m/s, of 6 m/s


def test_the_creep_laws_gradient_in_its_coefficients_is_the_finite_difference():
    """The Peiret wheel for 1 s under Kalker's creep with Vermeulen–Johnson saturation (f11 = f22 =
    5 N, f23 = 0.5 N m for the 1 kg wheel: saturated until step 632, then on 225 steps not; no switch: the law
    is C1 at beta = 3): the run is the ordinary steps' to rounding, and the gradient of a loss of
    its final position and spin along v0, mu, h and each Kalker coefficient (traced numbers of the
    run, ``constants``) agrees with central differences at e = 1e-5 to 1e-6 relative."""
    from lcpdyn.friction import Creep

    scene = build_scene("wheel")
    steps, model = 1000, Creep(f11=5.0, f22=5.0, f23=0.5)
    run = DifferentiableRun(scene.simulation(model), steps)
    x = run.inputs
    with float64():
        program = value_and_gradient(run, x, lambda out: out.q[-1, 0] + out.q[-1, 1] + 0.1 * out.v[-1, 5], (0, 1, 2))
        (_, outputs), grads = program(x["v0"], x["mu"], x["constants"], x["mu_static"])

        def loss(v0, mu, constants):
            return float(program(v0, mu, constants, x["mu_static"])[0][0])

        def entry(name, size):
            along = np.zeros_like(x["constants"])
            along[CONSTANTS.index(name)] = size
            return (0.0, 0.0, along)

        directions = [(np.random.default_rng(0).normal(size=6), 0.0, 0.0), (0.0, 1.0, 0.0), entry("dt", 1e-3)]
        directions += [entry("f11", 5.0), entry("f22", 5.0), entry("f23", 0.5)]
        assert_central_differences(loss, grads, (x["v0"], x["mu"], x["constants"]), directions, 1e-5, floor=1e-4)
    DifferentiableRun.check(outputs)
    assert run.switches(outputs) == []
    kinetic = np.asarray(outputs.kinetic)[:, 0]
    assert kinetic[:600].all() and np.sum(~kinetic) > 200  # saturated, then not (on 225 steps)
    q, v = stepped(scene.simulation(model), steps)
    assert np.max(np.abs(np.asarray(outputs.q) - q)) < 1e-12  # m (and quaternion entries)
    assert np.max(np.abs(np.asarray(outputs.v) - v)) < 1e-10  # m/s, of 6 m/s


@pytest.mark.parametrize("friction", ["regularized", "coulomb"])
def test_a_compliant_contacts_gradient_in_its_stiffness_and_damping_is_the_finite_difference(friction):
    """A 2 kg block sliding at 0.5 m/s on a spring-damper contact (k = 1e5 N/m, damping ratio
    0.3; Bauchau 2002 Sec. 4.2: C_N = 1/(h (k h + c)) on its normal row), 300 steps of 1e-4 s
    (about one period of the spring): it sinks into the spring while it slides (no switch). The
    run is the ordinary steps' to rounding, and the gradient of a loss of its final height and
    position along v0, mu, the stiffness and the damping (entries of ``floats``:
    ``run.law_numbers``) agrees with central differences at e = 1e-5 to 1e-6 relative."""
    import math

    from lcpdyn import Model, Plane, PointContact, RigidBody, Simulation
    from lcpdyn.compliance import SpringDamperLaw

    k, m = 1e5, 2.0
    model = Model()
    block = model.add_body(RigidBody("block", m, (0.01, 0.01, 0.01), velocity=(0.5, 0.0, 0.0)))
    model.add_contact(PointContact(block, Plane(), 0.3, normal_law=SpringDamperLaw(k, 0.6 * math.sqrt(k * m))))
    steps = 300
    run = DifferentiableRun(Simulation(model, friction, 1e-4), steps)
    x = run.inputs
    coefficients, damping = run.law_numbers(0)

    def of(v0, mu, floats):
        outputs = run(x["q0"], v0, mu, x["constants"], floats, x["mu_static"])
        return outputs.q[-1, 0] + 100.0 * outputs.q[-1, 2], outputs

    with float64():
        program = jax.jit(jax.value_and_grad(of, argnums=(0, 1, 2), has_aux=True))
        at = (x["v0"], x["mu"], x["floats"])
        (_, outputs), grads = program(*at)
        stiffness, damper = np.zeros_like(x["floats"]), np.zeros_like(x["floats"])
        stiffness[coefficients] = k
        damper[damping] = x["floats"][damping]
        e = 1e-5
        for along in ((np.random.default_rng(0).normal(size=6), 0.0, 0.0), (0.0, 1.0, 0.0),
                      (0.0, 0.0, stiffness), (0.0, 0.0, damper)):  # fmt: skip
            plus = float(program(*(a + e * b for a, b in zip(at, along)))[0][0])
            minus = float(program(*(a - e * b for a, b in zip(at, along)))[0][0])
            central = (plus - minus) / (2 * e)
            exact = sum(float(np.sum(np.asarray(gr) * b)) for gr, b in zip(grads, along))
            assert abs(central) > 1e-6, along  # the loss feels each number
            assert exact == pytest.approx(central, rel=1e-6), (along, exact, central)
    DifferentiableRun.check(outputs)
    assert run.switches(outputs) == []
    assert np.all(np.asarray(outputs.normal_force) > 0.0)
    q, v = stepped(Simulation(model, friction, 1e-4, **({"tolerance": 1e-12} if friction == "coulomb" else {})), steps)
    assert np.max(np.abs(np.asarray(outputs.q) - q)) < 1e-12  # m
    assert np.max(np.abs(np.asarray(outputs.v) - v)) < 1e-10  # m/s
    with pytest.raises(ValueError, match="contact 1 is no compliant contact"):
        run.law_numbers(1)


@pytest.mark.parametrize(
    "friction, mode",
    [("box", "reverse"), ("regularized", "forward"), ("polygonal", "forward"), ("coulomb", "forward")],
)
def test_a_block_on_four_corners_has_the_finite_difference_derivative(friction, mode):
    """The sliding block on its four corners (redundant rigid contacts: the normal impulses are
    not unique, the basic systems singular; 100 steps of its slide, no switch): the run is the
    ordinary steps' (the minimum-norm members, as the host's Júdice–Pires), and the derivative of
    a loss of its final pose and spin along v0 (its slide and spin), the four mu and h agrees with
    central differences at e = 1e-4 to 1e-6 relative: the derivative of the minimum-norm member on
    its rank, and under exact Coulomb the minimum-norm tangent of the modes' equations, along
    whose null space the motion does not move (measured on 300 steps: 1e-11 to 1e-9; exact Coulomb 2e-8 to
    7e-8, where the host solve's 1e-12 answers make the differences' floor). Under exact Coulomb
    the host's answer is a vertex of the family of load sharings (a corner unloaded) that changes
    from step to step, which ``switches`` reports as apart <-> sliding although the motion does not
    switch (the total normal force is the weight throughout). The box by
    ``jax.grad``: before, the unused elimination's infinities met zero cotangents and its
    gradient was NaN; the others by ``jax.jvp`` (the same derivative rule; one compilation)."""
    scene = build_scene("sliding-block")
    steps = 100
    run = DifferentiableRun(simulation(scene, friction), steps)
    x = run.inputs
    dt = np.zeros_like(x["constants"])
    dt[CONSTANTS.index("dt")] = 1e-3
    slide_and_spin = np.array([0.3, 0.2, 0.0, 0.0, 0.0, 1.5])
    directions = ((slide_and_spin, 0.0, 0.0), (0.0, np.ones_like(x["mu"]), 0.0), (0.0, 0.0, dt))
    at, e = (x["v0"], x["mu"], x["constants"]), 1e-4
    with float64():

        def final(v0, mu, constants):
            out = run(x["q0"], v0, mu, constants, x["floats"])
            return out.q[-1, 0] + out.q[-1, 1] + 0.1 * out.v[-1, 5], out

        if mode == "reverse":
            program = value_and_gradient(
                run, x, lambda out: out.q[-1, 0] + out.q[-1, 1] + 0.1 * out.v[-1, 5], (0, 1, 2)
            )
            (_, outputs), grads = program(*at, x["mu_static"])
            derivative = [sum(float(np.sum(np.asarray(g) * b)) for g, b in zip(grads, d)) for d in directions]
            loss = lambda *a: float(program(*a, x["mu_static"])[0][0])  # noqa: E731
        else:  # one compiled program: the loss's value is the jvp's primal
            tangents = jax.jit(lambda a, d: jax.jvp(final, a, d))
            along = [tuple(np.broadcast_to(b, np.shape(a)) * 1.0 for a, b in zip(at, d)) for d in directions]
            pushed = [tangents(at, d) for d in along]
            derivative = [float(t[0]) for _, t in pushed]
            outputs = pushed[0][0][1]
            zero = tuple(np.zeros(np.shape(a)) for a in at)
            loss = lambda *a: float(tangents(a, zero)[0][0])  # noqa: E731
        for d, exact in zip(directions, derivative):
            central = (loss(*(a + e * b for a, b in zip(at, d))) - loss(*(a - e * b for a, b in zip(at, d)))) / (2 * e)
            assert exact == pytest.approx(central, rel=1e-6), (d, exact, central)
    DifferentiableRun.check(outputs)
    normal = np.asarray(outputs.normal_force)
    if friction == "coulomb":  # the host's answer: a vertex of the load sharings (a corner unloaded)
        assert np.min(normal) == 0.0 and run.switches(outputs)
        assert np.max(np.abs(np.sum(normal, axis=1) - scene.parameters["mass"] * scene.parameters["gravity"])) < 1e-9
    else:  # the minimum-norm sharing: left and right corners alike, no switch
        assert run.switches(outputs) == [] and np.max(np.abs(normal[:, [0, 2]] - normal[:, [1, 3]])) < 1e-9
    q, v = stepped(simulation(scene, friction, **({"tolerance": 1e-12} if friction == "coulomb" else {})), steps)
    # exact Coulomb: the host solve's 1e-12 answers differ between the two paths (velocities 1.5e-8 m/s)
    assert np.max(np.abs(np.asarray(outputs.q) - q)) < (1e-9 if friction == "coulomb" else 1e-12)  # m
    assert np.max(np.abs(np.asarray(outputs.v) - v)) < (1e-7 if friction == "coulomb" else 1e-11)  # m/s, of 2 m/s


@pytest.mark.one_leg(leg="siconos")  # the continuous law in this leg too (the 1 s wheel's is the other's)
def test_the_continuous_laws_creep_is_differentiated_through_its_characteristic_velocity():
    """The sliding sphere under Bauchau's continuous law (v0 = 0.01 m/s) for 300 steps: it slides,
    then rolls with a creep of order v0 (Bauchau 2002 Eq. 28). The law is smooth: no stick, no
    switch (``switches`` lists none), and the derivative along its characteristic velocity v0 (the
    constants' velocity threshold), the initial velocity and h agrees with central differences at
    e = 1e-4 to 1e-6 relative (measured 3e-8, 6e-10, 1e-9); the run is the ordinary steps'."""
    scene = build_scene("sliding-sphere")
    steps = 300
    run = DifferentiableRun(simulation(scene, "continuous"), steps)
    x = run.inputs
    creep = np.zeros_like(x["constants"])
    creep[CONSTANTS.index("velocity_threshold")] = x["constants"][CONSTANTS.index("velocity_threshold")]
    dt = np.zeros_like(x["constants"])
    dt[CONSTANTS.index("dt")] = 1e-3
    direction = np.random.default_rng(2).normal(size=6)
    at, e = (x["v0"], x["constants"]), 1e-4
    with float64():

        def final(v0, constants):
            out = run(x["q0"], v0, x["mu"], constants, x["floats"])
            return out.q[-1, 0] + out.q[-1, 1] + 0.1 * out.v[-1, 5] + 0.1 * out.v[-1, 4], out

        tangents = jax.jit(lambda a, d: jax.jvp(final, a, d))
        zero = tuple(np.zeros(np.shape(a)) for a in at)
        for d in ((0.0 * direction, creep), (direction, 0.0 * creep), (0.0 * direction, dt)):
            (_, outputs), (exact, _) = tangents(at, d)
            plus = tangents(tuple(a + e * b for a, b in zip(at, d)), zero)[0][0]
            minus = tangents(tuple(a - e * b for a, b in zip(at, d)), zero)[0][0]
            central = float(plus - minus) / (2 * e)
            assert float(exact) == pytest.approx(central, rel=1e-6), (d, float(exact), central)
    DifferentiableRun.check(outputs)
    assert run.switches(outputs) == []
    kinetic = np.asarray(outputs.kinetic)[:, 0]  # |slip| > v0: sliding, then creeping
    assert kinetic[0] and not kinetic[-1]
    q, v = stepped(simulation(scene, "continuous"), steps)
    assert np.max(np.abs(np.asarray(outputs.q) - q)) < 1e-12  # m (and quaternion entries)
    assert np.max(np.abs(np.asarray(outputs.v) - v)) < 1e-10  # m/s


@pytest.mark.parametrize(
    "friction, mode", [("box", "reverse"), ("regularized", "forward"), ("polygonal", "forward"), ("coulomb", "forward")]
)
def test_the_rolling_disks_derivative_is_the_finite_difference(friction, mode):
    """The wobbling disk rolling on its rim under friction (scenes.rolling_disk, rolling="friction",
    mu = 0.6; 300 steps: it rolls without slip throughout, the contact sticks): the run is the
    ordinary steps', and the derivative of a loss of its final pose and roll rate along v0 (a
    random direction) and h agrees with central differences at e = 1e-4 to 1e-6 relative
    (measured 1e-12 to 1.3e-9); along mu it is exactly 0, as is its central difference: a
    sticking contact does not feel mu. The polygonal cone's sticking contact is degenerate (every
    facet row at w = 0, the basic systems singular): before, its pivoting judged the eliminated
    rows' rounding (a slip of 4e-9 m/s formed from velocities of order 1) against the rows' own size
    and cycled between two sets from step 0, and its derivative on the final set held the friction
    force to the span of the basic facets (1.8 % off in one step)."""
    from scenes import rolling_disk

    scene = rolling_disk.build(rolling="friction")
    steps = 300
    run = DifferentiableRun(simulation(scene, friction), steps)
    x = run.inputs
    dt = np.zeros_like(x["constants"])
    dt[CONSTANTS.index("dt")] = 1e-3
    direction = np.random.default_rng(1).normal(size=6)
    directions = ((direction, 0.0, 0.0), (0.0, np.ones_like(x["mu"]), 0.0), (0.0, 0.0, dt))
    at, e = (x["v0"], x["mu"], x["constants"]), 1e-4

    def measure(out):
        return out.q[-1, 0] + out.q[-1, 1] + out.q[-1, 4] + 0.1 * out.v[-1, 3]

    with float64():
        if mode == "reverse":
            program = value_and_gradient(run, x, measure, (0, 1, 2))
            (_, outputs), grads = program(*at, x["mu_static"])
            derivative = [sum(float(np.sum(np.asarray(g) * b)) for g, b in zip(grads, d)) for d in directions]
            loss = lambda *a: float(program(*a, x["mu_static"])[0][0])  # noqa: E731
        else:

            def final(v0, mu, constants):
                out = run(x["q0"], v0, mu, constants, x["floats"])
                return measure(out), out

            tangents = jax.jit(lambda a, d: jax.jvp(final, a, d))
            along = [tuple(np.broadcast_to(b, np.shape(a)) * 1.0 for a, b in zip(at, d)) for d in directions]
            pushed = [tangents(at, d) for d in along]
            derivative = [float(t[0]) for _, t in pushed]
            outputs = pushed[0][0][1]
            zero = tuple(np.zeros(np.shape(a)) for a in at)
            loss = lambda *a: float(tangents(a, zero)[0][0])  # noqa: E731
        for i, (d, exact) in enumerate(zip(directions, derivative)):
            central = (loss(*(a + e * b for a, b in zip(at, d))) - loss(*(a - e * b for a, b in zip(at, d)))) / (2 * e)
            if i == 1:  # along mu
                assert exact == 0.0 and central == 0.0, (exact, central)
            else:
                assert exact == pytest.approx(central, rel=1e-6), (d, exact, central)
    DifferentiableRun.check(outputs)
    assert run.switches(outputs) == [] and not np.asarray(outputs.kinetic).any()
    assert np.max(np.abs(np.asarray(outputs.slip))) < 1e-9  # m/s: rolling
    q, v = stepped(simulation(scene, friction, **({"tolerance": 1e-12} if friction == "coulomb" else {})), steps)
    assert np.max(np.abs(np.asarray(outputs.q) - q)) < 1e-12  # m (and quaternion entries)
    assert np.max(np.abs(np.asarray(outputs.v) - v)) < 1e-10  # m/s, of 0.41 m/s


@pytest.mark.parametrize("friction", ["regularized", "box"])  # polygonal: the one-second test above
def test_the_run_is_the_simulations_own(friction):
    """The differentiable run's forward numbers are the simulation's: its ordinary steps
    (Simulation.step, whose first step takes its friction bound from lam_N of a first pass) and
    its run (the host's first step, then the compiled loop's chunks: the code the run traces),
    to rounding over 300 steps of the wheel, which slides and then rolls at 1e10 N/m and slides
    throughout at 1e5: the pivoting's derivative rule and the guarded lengths change no number of
    an undifferentiated run. Before the first-pass fix its first step was frictionless, off by
    h mu g = 3e-3 m/s."""
    from lcpdyn.friction import Regularized

    scene = build_scene("wheel")
    model = Regularized(tangential_stiffness=1e5) if friction == "regularized" else friction
    steps = 300
    run = DifferentiableRun(simulation(scene, model), steps)
    with float64():
        outputs = run(**run.inputs)
    DifferentiableRun.check(outputs)
    q, v = stepped(simulation(scene, model), steps)
    assert np.max(np.abs(np.asarray(outputs.q) - q)) < 1e-12  # m (and quaternion entries)
    assert np.max(np.abs(np.asarray(outputs.v) - v)) < 1e-10  # m/s, of 6 m/s
    looped = simulation(scene, model)
    trajectory = looped.run(steps * scene.dt)
    assert looped.loop_steps["compiled"] == steps - 1
    np.testing.assert_allclose(np.asarray(outputs.normal_force), trajectory.contact_normal_force, rtol=0, atol=1e-9)


# the polygonal cone's breakaway is the box's code (a switch of the coefficient; test_compiled_loop
# holds its forward run to the ordinary step's)
@pytest.mark.parametrize("friction", ["regularized", "box"])
def test_a_breakaway_is_the_simulations_own_and_mu_s_acts_through_it_alone(friction):
    """The incline block's pull test (mu_s = 0.5 > mu_k = 0.4, a pull of 20 N/s breaks it away at
    t_b = 62.7 ms), 120 steps: the run solves the breakaway step again with mu_k, as the ordinary
    step does, and equals its trajectory to 1e-12. From the breakaway step k_b on, every step's
    friction impulse is h mu_k lam_N with lam_N = m g cos(theta), so the distance slid has
    dx_N/dmu_k = -g cos(theta) h² K(K+1)/2 (K = N - k_b steps), and the run's derivative is that
    and the central difference's (e = 1e-6, to 1e-6 relative; the step of the breakaway is fixed),
    in reverse mode (jax.grad through the breakaway step's second solve, the branch of the cond a
    step without a switch does not take; forward mode, calibrate's, is tests/test_calibrate.py's). mu_s
    decides only which step breaks away: its derivative is 0 (one-sided values of a step function),
    and a difference wide enough to move the breakaway (e = 3e-3 > c h / (m g cos) = 2.2e-3) is not."""
    from scenes.blocks import InclineBlock

    scene = InclineBlock.build(mu=0.4, mu_static=0.5, pull_rate=20.0)
    steps, h, g = 120, scene.dt, scene.parameters["gravity"]
    run = DifferentiableRun(simulation(scene, friction), steps)
    x = run.inputs
    q, _ = stepped(simulation(scene, friction), steps)
    downhill = jnp.asarray([np.cos(np.radians(20.0)), 0.0, -np.sin(np.radians(20.0))])
    with float64():
        # reverse mode: jax.grad through the breakaway step's second solve (the cond's other branch)
        program = value_and_gradient(run, x, lambda out: (out.q[-1, :3] - x["q0"][:3]) @ downhill, (1, 3))
        (_, outputs), (d_mu, d_static) = program(x["v0"], x["mu"], x["constants"], x["mu_static"])

        def slid(mu, mu_static):
            return program(x["v0"], mu, x["constants"], mu_static)[0][0]

        e, mu, ms = 1e-6, x["mu"], x["mu_static"]
        fd_mu = (slid(mu + e, ms) - slid(mu - e, ms)) / (2 * e)
        fd_static = (slid(mu, ms + e) - slid(mu, ms - e)) / (2 * e)
        wide = (slid(mu, ms + 3e-3) - slid(mu, ms - 3e-3)) / 6e-3
    DifferentiableRun.check(outputs)
    np.testing.assert_allclose(np.asarray(outputs.q), q, rtol=0, atol=1e-12)
    k_b = 63  # the step from 63 to 64 ms: the first whose loads (taken at its start) pass mu_s m g cos
    speed = np.linalg.norm(np.asarray(outputs.v)[:, :3], axis=1)
    assert speed[k_b - 1] < 1e-8 < 1e-4 < speed[k_b]  # held (the bristle's creep: 2e-9 m/s), then slid
    if friction == "regularized":
        assert not np.asarray(outputs.kinetic)[k_b - 1, 0] and np.asarray(outputs.kinetic)[k_b, 0]
    K = steps - k_b
    closed_form = -g * np.cos(np.radians(20.0)) * h * h * K * (K + 1) / 2  # lam_N = m g cos to ~1e-9
    assert float(d_mu[0]) == pytest.approx(closed_form, rel=1e-8)
    assert float(d_mu[0]) == pytest.approx(float(fd_mu), rel=1e-6)
    assert abs(float(d_static[0])) < 1e-12 * abs(float(d_mu[0])) and abs(float(fd_static)) < 1e-9 * abs(float(d_mu[0]))
    assert abs(float(wide)) > 0.1 * abs(float(d_mu[0]))
    assert run.switches(outputs) == [(k_b, 0, "sticking", "sliding")]  # the window's one switch, named


@pytest.mark.one_leg(leg="both")  # a quick refusal test: on both stacks
def test_what_it_does_not_take_is_refused_by_name():
    with pytest.raises(ValueError, match="does not take this simulation"):
        DifferentiableRun(build_scene("dumbbells", count=1).simulation("regularized"), 10)
    with pytest.raises(ValueError, match="whole number"):
        DifferentiableRun(build_scene("wheel").simulation("regularized"), 0)
    run = DifferentiableRun(build_scene("sliding-sphere").simulation("box"), 5)
    x = run.inputs
    with pytest.raises(TypeError, match="q0 has dtype float32"):
        with float64():
            run(jnp.asarray(x["q0"], jnp.float32), x["v0"], x["mu"], x["constants"], x["floats"])
    failed = RunOutputs(*(np.zeros(3),) * 6, np.array([True, False, True]))
    with pytest.raises(ArithmeticError, match="step 1 did not solve"):
        DifferentiableRun.check(failed)
