"""Rebuilding a simulation from the parameters recorded in a result file.

Every output file records :meth:`lcpdyn.stepper.Simulation.parameters`: the step size, the
friction model with its constants, the solver and its options, the position update and the
energy check -- and, for a run of a ready scene, ``"scene"``: the scene's name and every
parameter that built it (``Simulation(..., scene=...)``, set by
:meth:`scenes.scene.Scene.simulation` and by ``lcpdyn run``). From these alone
:func:`simulation_from_parameters` builds the same model and the same simulation, which then
reproduces the recorded run bit for bit (:func:`simulation_from_trajectory`,
``tests/test_run_resume.py``) or continues it (:func:`resume`). The scene is looked up in the
installed scene collection (:mod:`lcpdyn.scene_collection`), or in the registry passed as
``scenes=`` (name -> scene module): this module, like the rest of the library, never imports a
scene package.

A model built in Python (not a ready scene) cannot be rebuilt from data: its bodies, contacts
and forces may hold user functions (``BodyForce``, friction profiles), which are never pickled.
Its file records everything needed to analyse the run; to continue it, build the same
``Simulation`` and call ``restore(path)``.
"""

from __future__ import annotations

import math
from pathlib import Path

from .friction import make_friction
from .options import COLLISION_RECORDED, RECORDED
from .scene_collection import scene_collection

__all__ = [
    "RebuildError",
    "simulation_from_parameters",
    "simulation_from_trajectory",
    "simulation_from_file",
    "continue_file",
    "resume",
    "SIMULATION_KEYS",
]

SIMULATION_KEYS = RECORDED + COLLISION_RECORDED
"""The options recorded by :meth:`~lcpdyn.stepper.Simulation.parameters` and passed back when
rebuilding (:data:`lcpdyn.options.RECORDED`)."""


class RebuildError(ValueError):
    """The recorded parameters do not determine a simulation (no scene recorded, an unknown
    scene, missing or malformed entries); the message names the source and the problem."""


def simulation_from_parameters(parameters: dict, source: str = "the parameters", scenes=None):
    """A fresh :class:`~lcpdyn.stepper.Simulation` built from recorded ``parameters`` (at the
    scene's initial state; :meth:`~lcpdyn.stepper.Simulation.restore` moves it on).

    The scene is rebuilt with the recorded parameter values that differ from its defaults (a
    default is left to the scene, so that parameters whose default is "not set", such as a NaN
    ``mu_static``, stay unset), then the Simulation with the recorded step, friction model and
    :data:`SIMULATION_KEYS`. ``scenes``: the registry (name -> scene module), by default the
    installed collection's ``SCENES``."""
    from .stepper import Simulation

    SCENES = scene_collection().SCENES if scenes is None else scenes

    if not isinstance(parameters, dict):
        raise RebuildError(f"{source}: parameters must be a dict, got {type(parameters).__name__}")
    record = parameters.get("scene")
    if record is None:
        raise RebuildError(
            f"{source}: no scene recorded (the model was built in Python, not from a ready scene); "
            "build the same Simulation yourself, then restore(path) continues it"
        )
    if not isinstance(record, dict) or not isinstance(record.get("name"), str):
        raise RebuildError(f"{source}: the recorded scene {record!r} is not a dict with a 'name'")
    if record["name"] not in SCENES:
        raise RebuildError(f"{source}: recorded scene {record['name']!r} is not one of {sorted(SCENES)}")
    module = SCENES[record["name"]]

    def is_default(key, value):
        if key not in module.DEFAULTS:
            return False
        fixed = module.DEFAULTS[key]
        return value == fixed or (
            isinstance(value, float) and isinstance(fixed, float) and math.isnan(value) and math.isnan(fixed)
        )

    overrides = {key: value for key, value in record.items() if key != "name" and not is_default(key, value)}
    missing = [key for key in ("dt", "friction") if key not in parameters]
    if missing:
        raise RebuildError(f"{source}: the parameters lack {missing}")
    friction = parameters["friction"]
    if not isinstance(friction, dict) or not isinstance(friction.get("model"), str):
        raise RebuildError(f"{source}: the recorded friction {friction!r} is not a dict with a 'model'")
    try:
        scene = module.build(**overrides)
        friction = dict(friction)
        if friction["model"] == "regularized":
            friction.setdefault("static_bound", "box")  # files from before the option had the box
        model = make_friction(friction.pop("model"), **friction)
        return Simulation(
            scene.model,
            model,
            parameters["dt"],
            scene=record,
            **{key: parameters[key] for key in SIMULATION_KEYS if key in parameters},
        )
    except (TypeError, ValueError) as exc:
        raise RebuildError(f"{source}: the recorded parameters do not build a simulation: {exc}") from exc


def simulation_from_trajectory(trajectory, scenes=None):
    """A fresh :class:`~lcpdyn.stepper.Simulation` of the run that wrote ``trajectory`` (a
    :class:`~lcpdyn.trajectory.Trajectory`, e.g. ``load(path)``), from its recorded parameters:
    run to the same end time, it reproduces the recorded steps bit for bit. Raises
    :class:`RebuildError` for a run whose model was built in Python (no scene recorded)."""
    return simulation_from_parameters(trajectory.parameters, source="the trajectory", scenes=scenes)


def simulation_from_file(path, scenes=None):
    """:func:`simulation_from_parameters` of the file's recorded parameters; returns
    ``(simulation, parameters)``."""
    from .trajectory import load

    parameters = load(path).parameters
    return simulation_from_parameters(parameters, source=str(Path(path)), scenes=scenes), parameters


def continue_file(simulation, parameters: dict, path, t_end: float, progress: bool = False):
    """Restore ``simulation`` (built by :func:`simulation_from_file`) from the stopped run in
    ``path`` and run it on to ``t_end``, appending to the same file with the recorded
    ``record_every``; returns the trajectory of the continued part."""
    simulation.restore(path)
    return simulation.run(t_end, progress, out=path, record_every=int(parameters.get("record_every", 1)))


def resume(path, t_end: float, progress: bool = False, scenes=None):
    """Continue the stopped run in ``path`` (an .h5 that ``Simulation.run`` streamed into, from
    a ready scene: the file records the scene) to ``t_end``, appending to the same file: rebuilds
    the simulation from the recorded parameters (:func:`simulation_from_file`), restores the saved
    state and runs on with the recorded ``record_every``. Gives the same steps, bit for bit, as
    the run that was never stopped. Returns the trajectory of the continued part."""
    simulation, parameters = simulation_from_file(path, scenes=scenes)
    return continue_file(simulation, parameters, path, t_end, progress)
