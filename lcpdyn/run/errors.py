"""What a run raises and warns: a failed step, an interrupted run, an energy gain."""

from __future__ import annotations

import signal


class SimulationError(RuntimeError):
    """A step could not be solved (or the state became invalid). ``trajectory`` holds the steps
    the failing :meth:`Simulation.run` call completed before it; ``step`` (counted since the last
    :meth:`Simulation.reset`, so it equals ``len(trajectory.t)`` for a run from the start) and
    ``time`` locate the failure; ``result`` is the solver's last answer, if any."""

    def __init__(self, message, step, time, trajectory=None, result=None):
        super().__init__(f"step {step} (t = {time:.6g} s): {message}")
        self.step, self.time, self.trajectory, self.result = step, time, trajectory, result


class RunInterrupted(SimulationError):
    """:meth:`Simulation.run` was stopped by SIGINT or SIGTERM (``signal``) between two steps.
    ``trajectory`` holds the steps done; ``path`` the file they were written to (status
    ``interrupted``, with the state to continue from: :meth:`Simulation.restore`), or None. A
    signal that arrives during the last step or the final save is raised too, after the run
    completed and was saved: the trajectory's status is then ``completed``."""

    def __init__(self, signum, step, time, trajectory=None, path=None):
        name = signal.Signals(signum).name
        SimulationError.__init__(self, f"interrupted by {name}", step, time, trajectory)
        self.signal, self.path = signum, path


class OutputFailed(SimulationError):
    """The run's result file could not be written (a full disk, a quota, an I/O error): the run
    stops there. ``path`` is the file that holds what was written (an HDF5 run's file, or an
    ``.npz`` run's checkpoint), ``steps`` the steps it holds, ``resumable`` whether it holds the
    state to continue from; ``trajectory`` holds every step the run did, in memory."""

    def __init__(self, message, step, time, path=None, steps=0, resumable=False, trajectory=None):
        SimulationError.__init__(self, message, step, time, trajectory)
        self.path, self.steps, self.resumable = path, steps, resumable


class EnergyWarning(RuntimeWarning):
    """Issued at the end of :meth:`Simulation.run` when steps were flagged ``ENERGY_GAIN``
    (docs/theory/step.md, "Run health")."""


class UnsolvedWarning(RuntimeWarning):
    """Issued at the end of :meth:`Simulation.run` when steps were kept unsolved
    (``on_unsolved="flag"``; ``Health.UNSOLVED``)."""


def step_error(state, message, result=None) -> SimulationError:
    """The failure of the step from ``state`` (a :class:`~lcpdyn.step_state.StepState`), with its
    message (and the result so far)."""
    return SimulationError(message, state.steps_done, state.t, result=result)
