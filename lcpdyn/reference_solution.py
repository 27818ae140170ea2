"""The exact Coulomb reference's solution and its errors (:mod:`lcpdyn.reference`): the contact
modes, the events at which they switch, the piecewise solution on a sample grid (also as a
:class:`~lcpdyn.trajectory.Trajectory`), the failures, and the error estimate from a looser run."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

FREE, SLIDE, STICK = 0, 1, 2
"""A contact's mode in a segment of the exact solution: separated, sliding, sticking."""
MODE_NAMES = {FREE: "free", SLIDE: "slide", STICK: "stick"}
"""Each mode's name in the solution's segments and events."""


@dataclass
class Event:
    """A mode switch: time (s), contact index, ``kind`` ("stick", "slip", "lift-off",
    "touch-down"), the modes after it."""

    t: float
    contact: int
    kind: str
    modes: tuple
    slip: float = 0.0
    """At a stop ("stick", or a stop that slides on): the slip (m/s) left at the slip's zero that
    the stop's impulse removed (rounding and the first-order step to the zero; docs/theory/exact-reference.md)."""


@dataclass
class ExactSolution:
    """The reference's solution: samples at ``t`` (s) of the state (``position`` (n, 3),
    ``quaternion`` (n, 4), ``velocity`` (n, 3), ``angular_velocity`` (n, 3) world), the contact
    forces ``contact_force`` (n, k, 3) in each contact's (n, t1, t2) basis and the contact
    velocities ``contact_velocity`` (n, k, 3) likewise; the ``events`` in order; ``segments``
    of (t_start, t_end, modes); ``energy`` (n,) J (kinetic plus gravity's potential) and
    ``friction_work`` (n,) J, the work the friction forces have dissipated since t = 0 (integrated
    with the state): E + W_friction is constant; ``contact_gap`` (n, k) m, ``contact_basis``
    (n, k, 3, 3) the rows n, t1, t2, ``contact_mode`` (n, k) of :data:`FREE`, :data:`SLIDE`,
    :data:`STICK`; ``initial_energy`` J at t = 0. ``rejected``: events whose switch the
    consistency check turned back (slip reaching zero where sticking would leave the cone: the
    contact slides on, its direction reseeded)."""

    t: np.ndarray
    position: np.ndarray
    quaternion: np.ndarray
    velocity: np.ndarray
    angular_velocity: np.ndarray
    contact_force: np.ndarray
    contact_velocity: np.ndarray
    energy: np.ndarray
    friction_work: np.ndarray
    contact_gap: np.ndarray
    contact_basis: np.ndarray
    contact_mode: np.ndarray
    initial_energy: float
    events: list = field(default_factory=list)
    segments: list = field(default_factory=list)
    parameters: dict = field(default_factory=dict)
    rejected: list = field(default_factory=list)
    evaluations: list = field(default_factory=list)
    """The ODE solver's right-hand-side evaluations in each segment (its work per event)."""

    def as_trajectory(self, model, name: str = "exact-coulomb"):
        """The solution as a :class:`~lcpdyn.trajectory.Trajectory` of ``model`` (the model it
        was computed for), so :mod:`lcpdyn.metrics` and ``compare`` take it as a reference: forces
        and slips in world axes (the slip is the tangential part of the contact velocity), the
        normal force, the gap, ``contact_kinetic`` 1 where the contact slides, ``contact_mu`` mu_s
        where it sticks and mu_k otherwise; solver fields zero (no solver ran). Its ``parameters``
        record the reference's settings and each contact's mu and mu_static."""
        from .trajectory import Trajectory

        n = self.t.size
        world = np.einsum("nkij,nki->nkj", self.contact_basis[:, :, 1:], self.contact_force[:, :, 1:])
        tangential = np.einsum("nkij,nki->nkj", self.contact_basis[:, :, 1:], self.contact_velocity[:, :, 1:])
        mu = np.array([c.mu for c in model.contacts], float)
        mu_static = np.array([c.mu_static for c in model.contacts], float)
        sticking = self.contact_mode == STICK
        body = model.bodies[0]
        arrays = {
            "t": self.t.copy(), "position": self.position[:, None], "quaternion": self.quaternion[:, None],
            "velocity": self.velocity[:, None], "angular_velocity": self.angular_velocity[:, None],
            "contact_normal_force": self.contact_force[:, :, 0].copy(), "contact_friction_force": world,
            "contact_slip_velocity": tangential, "contact_gap": self.contact_gap.copy(),
            "contact_kinetic": (self.contact_mode == SLIDE).astype(np.int8),
            "contact_mu": np.where(sticking, mu_static[None], mu[None]), "energy": self.energy.copy(),
            "solver_status": np.zeros(n, np.int8), "solver_iterations": np.zeros(n, np.int32),
            "solver_residual": np.zeros(n), "solver_fallback": np.zeros(n, np.int8), "health": np.zeros(n, np.int8),
            "initial_position": np.asarray(body.position, float)[None].copy(),
            "initial_energy": np.float64(self.initial_energy),
        }  # fmt: skip
        contacts = [{"mu": float(c.mu), "mu_static": float(c.mu_static)} for c in model.contacts]
        parameters = {"reference": name, **self.parameters, "contacts": contacts}
        if n > 1 and np.allclose(np.diff(self.t), self.t[1] - self.t[0], rtol=1e-9, atol=0.0):
            parameters["dt"] = float(self.t[1] - self.t[0])
        return Trajectory(arrays, parameters, [body.name])

    def switch_times(self, kind: str | None = None, contact: int | None = None) -> np.ndarray:
        """The times (s) of the solution's events, of one ``kind`` ("stick", "slip", "lift-off", ...) and
        ``contact`` if given."""
        return np.array([e.t for e in self.events if (kind is None or e.kind == kind)
                         and (contact is None or e.contact == contact)])  # fmt: skip


class ReferenceFailure(RuntimeError):
    """The reference cannot continue (no or several solutions of a mode's acceleration problem,
    a touch-down, too many switches); ``solution`` holds the run up to there."""

    def __init__(self, message: str, solution: ExactSolution | None = None):
        super().__init__(message)
        self.solution = solution


class ReferenceInterrupted(ReferenceFailure):
    """Ctrl-C (KeyboardInterrupt) during :func:`exact_coulomb`; ``solution`` holds the segments
    completed before it (the segment being integrated is lost: the ODE solver returns none of
    it)."""


ESTIMATED_FIELDS = ("position", "velocity", "angular_velocity", "contact_force")
"""The fields of an :class:`ExactSolution` whose own error :func:`error_estimate` bounds."""


def error_estimate(solution: ExactSolution, looser: ExactSolution) -> dict:
    """A bound on ``solution``'s own error from the same run at a looser ODE tolerance (100x
    ``solution``'s rtol is what :mod:`lcpdyn.compare` uses): per field of
    :data:`ESTIMATED_FIELDS` and for the switch times (``"switch_times"``, s), the largest
    difference between the two plus rtol times the field's largest magnitude (the error the
    tolerance asked for, a floor where the two agree to rounding). The looser run's error, about
    100x ``solution``'s, bounds it; the tests check the bound against a run 100x tighter. Switch
    times are ``inf`` where the two runs switch in different sequences."""
    if solution.t.shape != looser.t.shape or not np.array_equal(solution.t, looser.t):
        raise ValueError("error_estimate: the two solutions must be sampled at the same times")
    rtol = float(solution.parameters["rtol"])
    out = {}
    for name in ESTIMATED_FIELDS:
        a, b = getattr(solution, name), getattr(looser, name)
        out[name] = float(np.max(np.abs(a - b), initial=0.0) + rtol * np.max(np.abs(a), initial=0.0))
    kinds = [(e.kind, e.contact) for e in solution.events]
    if kinds != [(e.kind, e.contact) for e in looser.events]:
        out["switch_times"] = math.inf
    else:
        a, b = solution.switch_times(), looser.switch_times()
        out["switch_times"] = float(np.max(np.abs(a - b), initial=0.0) + rtol * np.max(np.abs(a), initial=0.0))
    return out
