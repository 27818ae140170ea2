"""Robots that no one here wrote: URDF files of the installed example-robot-data package (the
``robots`` extra), read by :func:`lcpdyn.load_model` through MuJoCo's compiler, with their
meshes' convex hulls as colliders, on a ground plane, their joints driven by implicit PD servos
(:func:`lcpdyn.actuators.position_servo`).

* ``ur5-servo``: Universal Robots' UR5 arm (six revolute joints) on its fixed base, ``mount`` m
  above the floor, each joint servoed from the file's zero pose to ``turn`` rad, alternating in
  sign along the arm (each target kept a tenth of its range inside the file's limits, which are
  stops of the step unless ``limits`` = 0);
* ``panda-servo``: Franka Emika's Panda (seven revolute joints and two prismatic fingers), the
  same way, its fingers opened to ``opening`` m each; it starts with each joint the least turn
  from the file's zero pose that is a tenth of its range inside it (the zero pose lies outside
  the fourth joint's range);
* ``solo12-stand``: ODRI's Solo-12 quadruped (a floating base, twelve revolute joints), dropped
  ``drop`` m onto the ground with its servos holding its legs straight: it lands and stands;
* ``a1-stand``: Unitree's A1 quadruped (sphere feet, boxes and cylinders), started in a standing
  pose (each thigh at ``thigh`` rad, each calf at ``calf`` rad: the file's zero pose lies outside
  its calves' range) ``drop`` m above the ground, its servos holding that pose: it lands on four
  point contacts and stands.

The servos' gains are parameters (``servo_stiffness`` k_p in N m/rad, ``servo_damping`` k_d in
N m s/rad; the fingers' in N/m and N s/m);
the joint limits, effort limits and the other elements of the files that lcpdyn does not take
yet are named by the loader (:class:`lcpdyn.model_files.ModelFileWarning`), which these scenes
turn into one line of their description instead of a warning at every build.
"""

from __future__ import annotations

import os
import warnings

import numpy as np

from lcpdyn.actuators import position_servo
from lcpdyn.collision import Collider, HalfSpace
from lcpdyn.model_files import ModelFileWarning, load_model, package_roots
from lcpdyn.rotation import np_rotation_matrix

from .scene import Scene, override

FILES = {
    "ur5": "example-robot-data/robots/ur_description/urdf/ur5_robot.urdf",
    "panda": "example-robot-data/robots/panda_description/urdf/panda.urdf",
    "solo12": "example-robot-data/robots/solo_description/robots/solo12.urdf",
    "a1": "example-robot-data/robots/a1_description/urdf/a1.urdf",
}
"""Each robot's URDF, relative to the package folders (:func:`lcpdyn.model_files.package_roots`)."""


def robot_file(robot: str) -> str:
    """The path of ``robot``'s URDF in the installed example-robot-data; an ImportError names the
    extra that installs it."""
    for root in package_roots():
        path = os.path.join(root, FILES[robot])
        if os.path.isfile(path):
            return path
    raise ImportError(f"the {robot} scene reads {FILES[robot]!r} from example-robot-data, which is not installed: "
                      "pip install 'lcpdyn[robots]'")  # fmt: skip


def _load(robot: str, **options):
    """The robot's ModelFile, what it skipped said once (in the scene's description)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelFileWarning)
        return load_model(robot_file(robot), **options)


def _reach(shape) -> float:
    """A bound on how far a sphere, capsule, cylinder or box reaches from its origin (m)."""
    size = np.asarray(getattr(shape, "size", (0.0, 0.0, 0.0)), float)
    radius, length = float(getattr(shape, "radius", 0.0)), float(getattr(shape, "length", 0.0))
    return max(radius + 0.5 * length, 0.5 * float(np.linalg.norm(size)))


def lowest_point(model) -> float:
    """The lowest z (m) of the model's colliders on bodies at the initial poses: their convex
    hulls' vertices, or a bound (``_reach``) for the other shapes."""
    low = np.inf
    for collider in model.colliders:
        body = collider.body
        if body is None:
            continue
        R = np_rotation_matrix(body.orientation)
        origin = np.asarray(body.position) + R @ collider.position
        vertices = getattr(collider.shape, "vertices", None)
        if vertices is None:
            low = min(low, float(origin[2]) - _reach(collider.shape))
        else:
            low = min(low, float((origin[:, None] + R @ collider.rotation @ vertices.T)[2].min()))
    return low


def _servoed(loaded, targets, stiffness, damping, mu, margin, floor=0.0):
    """The loaded robot with a servo on every joint and the ground ``floor`` m below z = 0."""
    model = loaded.model
    model.add_collider(Collider(None, HalfSpace((0.0, 0.0, 1.0), -floor), name="ground"))
    for name, joint in loaded.joints.items():
        model.add_constraint(position_servo(joint, targets[name], stiffness, damping, name=f"servo {name}"))
    model.set_collisions(margin=margin, contact={"mu": mu})
    return model


ARM_DEFAULTS = {"turn": 0.3, "opening": 0.03, "servo_stiffness": 2000.0, "servo_damping": 100.0, "mount": 0.8,
                "limits": 1.0, "mu": 0.8, "margin": 0.002, "dt": 1e-3, "t_end": 1.0}  # fmt: skip


def _arm(robot, name, defaults, parameters, doc):
    p = override(defaults, parameters, name)
    loaded = _load(robot, limits=bool(p["limits"]))
    targets, start = {}, {}
    for i, (joint_name, joint) in enumerate(loaded.joints.items()):
        finger = type(joint).__name__ == "PrismaticJoint"
        target = p.get("opening", 0.0) if finger else p["turn"] * (-1) ** i
        low, high = loaded.ranges.get(joint_name, (-np.inf, np.inf))
        span = 0.1 * (high - low) if np.isfinite(high - low) else 0.0
        targets[joint_name] = float(np.clip(target, low + span, high - span))  # within the joint's range
        start[joint_name] = float(np.clip(0.0, low + span, high - span))  # a URDF's qpos0 is 0
    if any(start.values()):  # the file's zero pose lies outside a joint's range (the Panda's fourth joint)
        loaded.set_pose(start)
    model = _servoed(loaded, targets, p["servo_stiffness"], p["servo_damping"], p["mu"], p["margin"], floor=p["mount"])
    scene = Scene.from_parameters(name, model, p, doc)
    scene.description += f" ({len(loaded.skipped)} elements of the file not taken: lcpdyn.model_files)"
    scene.targets, scene.loaded = targets, loaded
    return scene


class UR5Servo:
    """The UR5 arm servoed to a pose (``scenes.robots``)."""

    DEFAULTS = {k: v for k, v in ARM_DEFAULTS.items() if k != "opening"}

    @staticmethod
    def build(**parameters) -> Scene:
        """Universal Robots' UR5 from example-robot-data, its six joints servoed to a pose."""
        return _arm("ur5", "ur5-servo", UR5Servo.DEFAULTS, parameters, UR5Servo.build.__doc__)


class PandaServo:
    """The Panda arm servoed to a pose, its fingers opened (``scenes.robots``)."""

    DEFAULTS = dict(ARM_DEFAULTS)

    @staticmethod
    def build(**parameters) -> Scene:
        """Franka Emika's Panda from example-robot-data, its joints servoed to a pose, fingers open."""
        return _arm("panda", "panda-servo", PandaServo.DEFAULTS, parameters, PandaServo.build.__doc__)


def _legged(robot, name, p, pose_of, doc):
    """A quadruped on a floating base, started in the pose ``pose_of(joints)`` (the file's joints
    by name -> value, rad from the file's zero pose) with its feet ``drop`` m above the ground, each
    joint servoed to its start."""
    first = _load(robot, floating_base=True)
    pose = pose_of(first.joints)
    first.set_pose(pose)
    base = (0.0, 0.0, p["drop"] - lowest_point(first.model))  # the feet drop m above the ground
    loaded = _load(robot, floating_base=True, base_position=base)
    loaded.set_pose(pose)
    servo = (p["servo_stiffness"], p["servo_damping"])
    model = _servoed(loaded, pose, *servo, p["mu"], p["margin"])
    scene = Scene.from_parameters(name, model, p, doc)
    scene.description += f" ({len(loaded.skipped)} elements of the file not taken: lcpdyn.model_files)"
    scene.loaded, scene.base_position, scene.targets = loaded, base, dict(pose)
    return scene


class Solo12Stand:
    """The Solo-12 quadruped dropped onto the ground, standing on servoed legs (``scenes.robots``)."""

    DEFAULTS = {"drop": 0.05, "servo_stiffness": 20.0, "servo_damping": 0.5, "mu": 0.8, "margin": 0.002, "dt": 1e-3,
                "t_end": 1.0}  # fmt: skip

    @staticmethod
    def build(**parameters) -> Scene:
        """ODRI's Solo-12 from example-robot-data dropped onto the ground on servoed straight legs."""
        p = override(Solo12Stand.DEFAULTS, parameters, "solo12-stand")
        straight = lambda joints: dict.fromkeys(joints, 0.0)  # noqa: E731
        return _legged("solo12", "solo12-stand", p, straight, Solo12Stand.build.__doc__)


class A1Stand:
    """The Unitree A1 quadruped dropped onto the ground in a standing pose (``scenes.robots``)."""

    DEFAULTS = {"drop": 0.03, "thigh": 0.8, "calf": -1.6, "servo_stiffness": 100.0, "servo_damping": 10.0,
                "mu": 0.8, "margin": 0.002, "dt": 1e-3, "t_end": 1.0}  # fmt: skip

    @staticmethod
    def build(**parameters) -> Scene:
        """Unitree's A1 from example-robot-data dropped onto the ground in a standing pose, servoed there."""
        p = override(A1Stand.DEFAULTS, parameters, "a1-stand")

        def pose(joints):
            return {name: 0.0 if "hip" in name else p["thigh"] if "thigh" in name else p["calf"] for name in joints}

        return _legged("a1", "a1-stand", p, pose, A1Stand.build.__doc__)
