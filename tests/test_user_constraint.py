"""A constraint written outside the package -- a rigid rod between two points -- is a source of
bilateral rows through the holonomic-constraint protocol of :class:`lcpdyn.constraints.Holonomic`
(``size``, ``bodies``, ``residual(state, t)``, and ``stack_fields`` for the numbers that many
rods of one kind are evaluated over, vmapped): no edit of lcpdyn, and every strategy takes it
beside contacts and the built-in joints."""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np
import pytest

from lcpdyn import Plane, PointContact, RigidBody, Simulation
from lcpdyn.constraints import BallJoint, Holonomic
from lcpdyn.model import Model


@dataclass(eq=False)
class Rod(Holonomic):
    """|p_a - p_b| = length: point ``offset_a`` of ``body_a`` and point ``offset_b`` of ``body_b``
    (a world point if ``body_b`` is None) a fixed distance apart; one equation,
    g = (|p_a - p_b|^2 - length^2) / (2 length) (m), zero on the rod and of unit slope along it."""

    function: object = None
    size: int = 1
    name: str = "rod"
    body_a: RigidBody = None
    offset_a: object = (0.0, 0.0, 0.0)
    body_b: RigidBody | None = None
    offset_b: object = (0.0, 0.0, 0.0)
    length: float = 1.0

    stack_fields = ("offset_a", "offset_b", "length")  # rods of one anchoring are evaluated together

    def __post_init__(self):
        self.offset_a = np.asarray(self.offset_a, float)
        self.offset_b = np.asarray(self.offset_b, float)
        self.length = float(self.length)
        self.bodies = (self.body_a,) if self.body_b is None else (self.body_a, self.body_b)
        self._check_compliance()

    def residual(self, state, t=0.0):
        pa = state.point(self.body_a, self.offset_a)
        pb = jnp.asarray(self.offset_b) if self.body_b is None else state.point(self.body_b, self.offset_b)
        d = pa - pb
        return jnp.reshape((d @ d - self.length**2) / (2.0 * self.length), (1,))


def _bob(name, position, mass=1.0, radius=0.05):
    inertia = 0.4 * mass * radius**2
    return RigidBody(name, mass, (inertia,) * 3, position=position)


def test_a_pendulum_on_a_user_rod_swings_at_the_closed_form_period():
    """A bob hung from a world point by the rod (L = 1 m, 5 degrees): the period of its
    small swings is 2 pi sqrt(L/g) (1 + theta0^2/16) to 1e-4, the rod's length kept to the
    velocity-level rows' drift h^2 v^2 / L (7e-8 m at v = 0.27 m/s, h = 1 ms), which each next
    step removes."""
    length, theta0, g = 1.0, math.radians(5.0), 9.81
    model = Model(gravity=(0.0, 0.0, -g))
    bob = model.add_body(_bob("bob", (length * math.sin(theta0), 0.0, -length * math.cos(theta0))))
    model.add_constraint(Rod(body_a=bob, length=length))
    run = Simulation(model, "regularized", 1e-3).run(4.0)
    x = run.position[:, 0, 0]
    down = np.flatnonzero((x[:-1] > 0) & (x[1:] <= 0))  # crossings of x = 0 going down, interpolated
    crossings = run.t[down] - x[down] * (run.t[down + 1] - run.t[down]) / (x[down + 1] - x[down])
    period = crossings[1] - crossings[0]
    expected = 2 * math.pi * math.sqrt(length / g) * (1 + theta0**2 / 16)
    assert period == pytest.approx(expected, rel=1e-4)
    distance = np.linalg.norm(run.position[:, 0], axis=1)
    speed = np.linalg.norm(run.velocity[:, 0], axis=1).max()
    assert np.abs(distance - length).max() < 1e-3**2 * speed**2 / length


@pytest.mark.parametrize("friction", ["coulomb", "regularized"])
def test_a_chain_of_user_rods_and_a_built_in_joint_slides_as_one_body(friction):
    """Four sliders in a line on the ground (point contacts, mu = 0.5): the first three joined by
    two body-to-body rods (one stacked group, evaluated vmapped), the last tied to the third by a
    built-in ball joint. Only the first is pushed (1 m/s along the line): the rods' and the joint's
    impulses share its momentum at once -- all four move at 1/4 m/s -- and the chain slides as one
    body, stopping after (v0/4)^2 / (2 mu g) = 1.59 mm, as one body would (to the first-order
    scheme's h v / 2). The rods keep their length and the joint its point to 1e-12 m, every
    slider carries its own weight, and no step needs a fallback."""
    g, mu, v0, gap = 9.81, 0.5, 1.0, 0.3
    model = Model(gravity=(0.0, 0.0, -g))
    sliders = [model.add_body(_bob(f"slider{i}", (gap * i, 0.0, 0.0), mass=1.0)) for i in range(4)]
    sliders[0].velocity = np.array([v0, 0.0, 0.0])
    for a, b in zip(sliders[:2], sliders[1:3]):
        model.add_constraint(Rod(name=f"rod {a.name}-{b.name}", body_a=a, body_b=b, length=gap))
    model.add_constraint(BallJoint(name="joint", body_a=sliders[2], offset_a=(gap, 0.0, 0.0), body_b=sliders[3]))
    for slider in sliders:
        model.add_contact(PointContact(slider, Plane(), mu))
    run = Simulation(model, friction, 1e-3).run(0.2)
    assert run.solver_status.max() == 0 and not run.solver_fallback.any()
    x = run.position[:, :, 0]
    np.testing.assert_allclose(run.velocity[0, :, 0], v0 / 4 - mu * g * 1e-3, rtol=1e-9)  # the first step
    assert np.abs(np.diff(x, axis=1) - gap).max() < 1e-12  # rods and joint: a rigid line
    distance = (v0 / 4) ** 2 / (2 * mu * g)
    assert x[-1, 0] == pytest.approx(distance, abs=0.5e-3 * v0 / 4)
    assert np.abs(run.velocity[-1]).max() < 1e-9  # stopped, and held by static friction
    # each its own weight: the joint's vertical row carries nothing (it would turn the third slider),
    # to the rounding of Eq. (30) with its 1e-3 kg m^2 inertias (2e-9 relative seen)
    np.testing.assert_allclose(run.contact_normal_force[-1], g, rtol=1e-7)
