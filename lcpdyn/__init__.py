"""lcpdyn -- contact dynamics on complementarity solvers.

The engine: rigid-body models with JAX kinematics (:mod:`lcpdyn.model`), contact geometry
(:mod:`lcpdyn.contact`), the Peiret 2016 time stepper (:mod:`lcpdyn.stepper`), friction models
(:mod:`lcpdyn.friction`) and metrics (:mod:`lcpdyn.metrics`). The complementarity solvers live
in the separate top-level package :mod:`solvers` (importable without JAX).

The names below are imported lazily, so ``import lcpdyn`` (and ``lcpdyn --version``) does not
load JAX until an engine name is used.
"""

from importlib import import_module as _import_module
from importlib import metadata as _metadata

try:
    __version__ = _metadata.version("lcpdyn")
except _metadata.PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.1.0+source"

_EXPORTS = {
    "Model": "model",
    "RigidBody": "body",
    "Plane": "contact",
    "DiskContact": "contact",
    "MorelandTyre": "tyre",
    "SphereContact": "contact",
    "PointContact": "contact",
    "BodyForce": "forces",
    "SpringDamper": "forces",
    "Holonomic": "constraints",
    "BallJoint": "constraints",
    "RevoluteJoint": "constraints",
    "Nonholonomic": "constraints",
    "WeldJoint": "beam",
    "PrismaticJoint": "joints",
    "CylindricalJoint": "joints",
    "UniversalJoint": "joints",
    "PlanarJoint": "joints",
    "FixedJoint": "joints",
    "JointMotor": "actuators",
    "JointCoordinate": "actuators",
    "position_servo": "actuators",
    "velocity_servo": "actuators",
    "joint_friction": "actuators",
    "joint_limit": "actuators",
    "load_model": "model_files",
    "BeamSection": "beam",
    "add_beam": "beam",
    "TorsionalSpringDamper": "forces",
    "Simulation": "stepper",
    "StepOptions": "options",
    "SimulationError": "stepper",
    "OutputFailed": "stepper",
    "EnergyWarning": "stepper",
    "UnsolvedWarning": "stepper",
    "simulate": "stepper",
    "Trajectory": "trajectory",
    "Health": "trajectory",
    "load": "trajectory",
    "Regularized": "friction",
    "Polygonal": "friction",
    "Box": "friction",
    "Coulomb": "friction",
    "Continuous": "friction",
    "FrictionModel": "friction",
    "FrictionBlock": "friction",
    "StepResult": "step_result",
    "StepState": "step_state",
    "SpringDamperLaw": "compliance",
    "PolynomialLaw": "compliance",
    "euler_zxy": "rotation",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name):
    if name in _EXPORTS:
        value = getattr(_import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'lcpdyn' has no attribute {name!r}")
