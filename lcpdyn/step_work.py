"""What one step works out for its solve strategies and keeps to itself: :class:`StepWork`.

:meth:`lcpdyn.stepper.Simulation.advance` makes one for each step and passes it to the strategy
that solves the step (:mod:`lcpdyn.strategies`) and to the friction switches
(:mod:`lcpdyn.friction_switches`); the simulation holds none of it, so a step writes nothing
outside the state and result it returns."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["IslandAnswers", "StepWork"]


@dataclass(frozen=True, eq=False)
class IslandAnswers:
    """What an island strategy's solve of a step leaves for the step's second solve
    (:mod:`lcpdyn.strategies.second_solve`), per island j of its partition.

    residuals : (islands,) the relative residual of island j's answer.
    offsets : (islands + 1,) where island j's entries begin in the stacked active set, or None.
    sparse : (islands,) bool, island j solved on its sparse Delassus form, or None.
    impulse : the stacked impulses (normal, t1, t2 per contact) of an exact-cone solve, or None."""

    residuals: np.ndarray
    offsets: np.ndarray | None = None
    sparse: np.ndarray | None = None
    impulse: np.ndarray | None = None


@dataclass(eq=False)
class StepWork:
    """The step's own numbers besides the model's and the state's.

    mu, mu_static : (r,) the friction coefficients of the declared contacts for this step (friction
        profiles mu(t), then mu_k where a contact slid in the previous step and mu_s where it stuck;
        a switch inside the step may give a contact mu_k).
    normal_compliance : (r,) C_N of compliant contacts (1 / (h (F' h + c)), :mod:`lcpdyn.compliance`),
        0 for rigid ones.
    bilateral_compliance : (m,) the compliance of compliant bilateral rows (beams, constraints with a
        stiffness; docs/theory/step.md), 0 for rigid rows.
    branch, guess : a friction switch inside the step (:meth:`lcpdyn.friction.Regularized.switches`):
        the branch per contact (int8) and the guess (r, 2); None when there is none.
    clock : [assembly, solve] seconds spent so far, for ``StepResult.timing``.
    detected_mu, detected_branch, detected_guess : the same for the step's c detected contacts
        (:class:`~lcpdyn.detected_contacts.DetectedSet`), where a switch inside the step set
        them; None otherwise (their mu is then the set's own).
    switched : (r + c,) bool, the contacts (declared, then detected) whose friction switched
        inside the step, or None.
    first : the step's first solve (a :class:`~lcpdyn.step_result.StepResult`) while its second
        runs after a switch: an island strategy solves again only the islands that hold a
        switched contact (:mod:`lcpdyn.strategies.second_solve`); None otherwise, and in the
        midpoint scheme, whose second pass couples the islands through the forces.
    bound_normal, bound_passes : (r + c,) per contact, the lam_N its friction bound was last taken
        from and the bound passes its island took (:mod:`lcpdyn.strategies.detected`), left by the
        first solve of a step with detected contacts for its second, which goes on from them.
    islands : what an island strategy's solve leaves for a second (:class:`IslandAnswers`), or None.
    friction_point : in Moreau's midpoint scheme, where each declared contact's friction law is
        written (:class:`lcpdyn.midpoint_friction.FrictionPoint`); None otherwise.
    delassus : the Delassus operator of the large island solved last, kept for the step's second
        solve (:func:`lcpdyn.strategies.sparse_island.island_delassus`).
    bilateral_bounds : (lower, upper) (m,) impulse bounds of the bilateral rows (h times the
        force bounds of :func:`lcpdyn.bounded_rows.row_bounds`), or None: every row free."""

    mu: np.ndarray
    mu_static: np.ndarray
    normal_compliance: np.ndarray
    bilateral_compliance: np.ndarray
    branch: np.ndarray | None = None
    guess: np.ndarray | None = None
    clock: list = field(default_factory=lambda: [0.0, 0.0])
    detected_mu: np.ndarray | None = None
    detected_branch: np.ndarray | None = None
    detected_guess: np.ndarray | None = None
    switched: np.ndarray | None = None
    first: object = None
    bound_normal: np.ndarray | None = None
    bound_passes: np.ndarray | None = None
    islands: IslandAnswers | None = None
    friction_point: object = None
    delassus: dict = field(default_factory=dict)
    bilateral_bounds: tuple | None = None

    def row_bounds(self, rows=slice(None)):
        """The impulse bounds of the bilateral ``rows`` for :func:`~lcpdyn.strategies.assembly.assemble_rows`,
        or None (free)."""
        if self.bilateral_bounds is None:
            return None
        return self.bilateral_bounds[0][rows], self.bilateral_bounds[1][rows]

    def switch_arrays(self):
        """(branch (r,) int8, guess (r, 2)) for the compiled kernels: this step's switch, or none."""
        if self.branch is None:
            r = self.mu.shape[0]
            return np.zeros(r, np.int8), np.zeros((r, 2))
        return self.branch, self.guess

    def switch_arguments(self, contacts=slice(None)) -> dict:
        """The ``branch`` and ``guess`` keywords of a friction model's ``block`` for this step's
        switch, for ``contacts``; empty when none."""
        if self.branch is None:
            return {}
        return {"branch": self.branch[contacts], "guess": self.guess[contacts]}

    def with_detected(self, det):
        """(mu (r + c,), branch and guess over the declared then the detected contacts, or None
        and None where no switch set a branch) for a step posed over both (:mod:`lcpdyn.strategies.detected`)."""
        c = len(det)
        mu = np.concatenate([self.mu, det.mu if self.detected_mu is None else self.detected_mu])
        if self.branch is None and self.detected_branch is None:
            return mu, None, None
        r = self.mu.shape[0]
        branch = np.concatenate(
            [
                np.zeros(r, np.int8) if self.branch is None else self.branch,
                np.zeros(c, np.int8) if self.detected_branch is None else self.detected_branch,
            ]
        )
        guess = np.concatenate(
            [
                np.zeros((r, 2)) if self.guess is None else self.guess,
                np.zeros((c, 2)) if self.detected_guess is None else self.detected_guess,
            ]
        )
        return mu, branch, guess

    def time(self, start: float, middle: float, end: float) -> None:
        """Adds an assembly phase [start, middle] and a solve phase [middle, end] (s)."""
        self.clock[0] += middle - start
        self.clock[1] += end - middle
