"""Simulation output: per-step arrays, run parameters, and the .npz file format."""
from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field

import numpy as np

from . import __version__

__all__ = ["Trajectory", "load", "Health"]


class Health(enum.IntFlag):
    """Bit flags of the per-step ``health`` array (int8; 0 = nothing to report). See
    :mod:`lcpdyn.stepper`, "Run health", for how each is decided.

    * ``ENERGY_GAIN`` (1): the mechanical energy, net of the work put in by non-conservative
      applied forces and driven constraints, stands above its lowest value so far by more than
      ``energy_tolerance`` times the run's energy scale (only when ``energy_check`` is not
      ``"off"``).
    * ``FALLBACK`` (2): the first solver failed and the fallback method's answer was used
      (as ``solver_fallback``).
    """

    OK = 0
    ENERGY_GAIN = 1
    FALLBACK = 2

# Field -> description; the .npz holds these arrays plus ``parameters`` (JSON) and ``lcpdyn_version``.
FIELDS = {
    "t": "time at the end of each step (s), shape (steps,)",
    "position": "centre of mass (m, world), (steps, bodies, 3)",
    "quaternion": "orientation (w, x, y, z), (steps, bodies, 4)",
    "velocity": "centre-of-mass velocity (m/s, world), (steps, bodies, 3)",
    "angular_velocity": "angular velocity (rad/s, world), (steps, bodies, 3)",
    "contact_normal_force": "lambda_N (N) during the step, (steps, contacts)",
    "contact_friction_force": "lambda_T (N, world) during the step, (steps, contacts, 3)",
    "contact_slip_velocity": "slip of the material contact point, D v+ (m/s, world), (steps, contacts, 3)",
    "contact_gap": "gap Phi (m) at the start of the step, (steps, contacts)",
    "contact_kinetic": "regularized model branch (1 = kinetic), (steps, contacts)",
    "energy": "mechanical energy (J) of the state at the end of the step, (steps,)",
    "solver_status": "solvers.Status code of the accepted solve, (steps,)",
    "solver_iterations": "pivots/sweeps of the accepted solve (summed over fixed-point passes), (steps,)",
    "solver_residual": "framework relative residual of the accepted solve, (steps,)",
    "solver_fallback": "1 where the first method failed and the fallback method's answer was used",
    "health": "lcpdyn.trajectory.Health bit flags per step (0 ok, 1 energy gain, 2 fallback used), int8, (steps,)",
    "initial_position": "(bodies, 3) at t = 0",
    "initial_energy": "mechanical energy at t = 0 (J)",
}


@dataclass
class Trajectory:
    """Arrays of :data:`FIELDS` plus ``parameters`` (dict) and ``body_names``."""

    arrays: dict
    parameters: dict
    body_names: list = field(default_factory=list)

    def __getattr__(self, name):
        arrays = self.__dict__.get("arrays", {})
        if name in arrays:
            return arrays[name]
        raise AttributeError(name)

    def truncated(self, steps: int) -> "Trajectory":
        """The first ``steps`` steps (used to keep a partial run when a simulation stops)."""
        out = {k: (v[:steps] if isinstance(v, np.ndarray) and v.ndim and k not in _STATIC else v)
               for k, v in self.arrays.items()}
        return Trajectory(out, dict(self.parameters), list(self.body_names))

    def save(self, path) -> None:
        """Write an .npz with every array, ``parameters`` (JSON) and ``lcpdyn_version``."""
        np.savez_compressed(path, **self.arrays, parameters=json.dumps(self.parameters, sort_keys=True),
                            body_names=np.array(self.body_names), lcpdyn_version=__version__)


_STATIC = {"initial_position", "initial_energy"}


def load(path) -> Trajectory:
    """Read a file written by :meth:`Trajectory.save`. Files from before the ``health`` field
    get it rebuilt from ``solver_fallback`` (the only flag they recorded; the energy bit is 0 --
    unknown, not checked) and ``parameters["energy_check"] = "not recorded"``."""
    with np.load(path, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files if k not in ("parameters", "body_names", "lcpdyn_version")}
        parameters = json.loads(str(data["parameters"]))
        parameters.setdefault("lcpdyn_version", str(data["lcpdyn_version"]))
        if "health" not in arrays and "solver_fallback" in arrays:
            arrays["health"] = np.where(arrays["solver_fallback"] != 0, int(Health.FALLBACK), 0).astype(np.int8)
            parameters.setdefault("energy_check", "not recorded")
        return Trajectory(arrays, parameters, [str(s) for s in data["body_names"]])
