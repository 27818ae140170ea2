"""Simulation output: per-step arrays, run parameters, and the .npz file format."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from . import __version__

__all__ = ["Trajectory", "load"]

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
    with np.load(path, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files if k not in ("parameters", "body_names", "lcpdyn_version")}
        parameters = json.loads(str(data["parameters"]))
        parameters.setdefault("lcpdyn_version", str(data["lcpdyn_version"]))
        return Trajectory(arrays, parameters, [str(s) for s in data["body_names"]])
