"""Issue 18 item 3: Moreland's tyre (Bauchau 2002 Sec. 7, Eqs. 35-43) as an option of the disk contact."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
import pytest

from lcpdyn import DiskContact, Holonomic, Model, MorelandTyre, Plane, PointContact, RigidBody, Simulation
from lcpdyn.rotation import np_axis_angle
from lcpdyn.trajectory import Health
from lcpdyn.tyre import TABLE_2, deformation

V, RHO, MASS = 10.0, 0.25, 20.0


def _cornering_wheel(alpha: float, tyre: MorelandTyre, rolling: str = "ideal"):
    """A wheel whose centre is driven along -x at V with its axle held horizontal and yawed by
    ``alpha`` (a slip angle), free to spin and to move vertically, on Moreland's tyre."""
    model = Model()
    e3 = np.array([-math.sin(alpha), math.cos(alpha), 0.0])
    heading = jnp.asarray([math.cos(alpha), math.sin(alpha), 0.0])
    wheel = model.add_body(
        RigidBody(
            "wheel", MASS, (MASS * RHO**2 / 4, MASS * RHO**2 / 2, MASS * RHO**2 / 4), position=(0.0, 0.0, RHO),
            orientation=np_axis_angle((0, 0, 1), alpha), velocity=(-V, 0.0, 0.0), angular_velocity=-V / RHO * e3,
        )
    )  # fmt: skip

    def carriage(state, t):
        axle = state.rotation(wheel) @ jnp.array([0.0, 1.0, 0.0])
        x = state.position(wheel)
        return jnp.stack([x[0] + V * t, x[1], axle[2], axle @ heading])

    model.add_constraint(Holonomic(carriage, 4, name="carriage", time_dependent=True, bodies=(wheel,)))
    footprint = model.add_contact(DiskContact(wheel, Plane(), 1.0, radius=RHO, rolling=rolling), tyre=tyre)
    return model, footprint


def _deformation(trajectory):
    names = trajectory.body_names
    i, j = names.index("wheel"), names.index("wheel/footprint")

    def coordinates(k):
        return np.concatenate([trajectory.position[:, k], trajectory.quaternion[:, k]], axis=1)

    return deformation((0.0, 0.0, 1.0), (0.0, 1.0, 0.0), coordinates(i), coordinates(j))


def test_steady_cornering_gives_moreland_s_force_and_torque():
    """At a steady slip angle alpha the footprint rolls along the wheel's velocity, so Psi = alpha
    (the footprint turns back by the slip angle), Delta_dot = 0 and Eq. (38) leaves
    k1 Delta = -Psi / C_Psi: the cornering force F = alpha / C_Psi (cornering stiffness 1/C_Psi,
    105 kN/rad with Table 2) and the aligning torque M = k2 alpha."""
    alpha, tyre = 0.01, MorelandTyre()
    model, footprint = _cornering_wheel(alpha, tyre)
    assert footprint.body.name == "wheel/footprint" and footprint.body.mass == pytest.approx(1e-3 * MASS)
    run = Simulation(model, "regularized", 1e-3).run(1.5)
    delta, psi = _deformation(run)[-1]
    assert psi == pytest.approx(alpha, rel=1e-4)
    assert tyre.k1 * delta == pytest.approx(-alpha / tyre.C_psi, rel=1e-3)
    assert not np.any(run.health & Health.ENERGY_GAIN)  # the tyre's dampers only dissipate


def test_tyre_at_rest_alignment_is_undeformed_and_the_footprint_follows_the_wheel():
    """Zero slip angle: Delta and Psi stay zero to rounding, the footprint on the wheel's centre."""
    model, _ = _cornering_wheel(0.0, MorelandTyre())
    run = Simulation(model, "coulomb", 1e-3).run(0.2)
    np.testing.assert_allclose(_deformation(run), 0.0, atol=1e-12)
    np.testing.assert_allclose(run.position[:, 1], run.position[:, 0], atol=1e-12)


def test_cornering_with_friction_rolling_matches_the_ideal_rolling_when_the_grip_suffices():
    """The footprint's tangential rows under a friction law (mu N = 196 N against the 105 N of a
    0.001 rad slip angle) give the ideal-rolling answer: every friction model stays available."""
    alpha, tyre = 0.001, MorelandTyre()
    ideal = _deformation(Simulation(_cornering_wheel(alpha, tyre, "ideal")[0], "coulomb", 1e-3).run(0.6))[-1]
    for friction in ("coulomb", "regularized", "box"):
        model, _ = _cornering_wheel(alpha, tyre, "friction")
        rolled = _deformation(Simulation(model, friction, 1e-3).run(0.6))[-1]
        np.testing.assert_allclose(rolled, ideal, rtol=2e-3, err_msg=friction)


def test_tyre_constants_default_to_table_2_and_bad_input_is_refused():
    assert {k: getattr(MorelandTyre(), k) for k in TABLE_2} == TABLE_2
    for field, value in (("k1", -1.0), ("C_psi", 0.0), ("c1", math.nan), ("mu1", -0.5), ("mass_fraction", 0.5)):
        with pytest.raises(ValueError, match=field):
            MorelandTyre(**{field: value})
    model = Model()
    body = model.add_body(RigidBody("wheel", 1.0, (0.1, 0.1, 0.1), position=(0.0, 0.0, 0.5)))
    with pytest.raises(TypeError, match="disk contact"):
        model.add_contact(PointContact(body, Plane(), 0.5), tyre=MorelandTyre())
    with pytest.raises(TypeError, match="attach"):
        model.add_contact(DiskContact(body, Plane(), 0.5, radius=0.5), tyre="Moreland")
    assert len(model.bodies) == 1 and not model.contacts and not model.holonomic  # nothing half-added
