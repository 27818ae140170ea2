"""Models from their own files: MJCF (MuJoCo) and URDF (ROS, Pinocchio, PyBullet, Drake), read by
MuJoCo's own compiler (``mujoco.MjModel.from_xml_path`` / ``from_xml_string``, the ``models``
extra) and turned into a :class:`~lcpdyn.model.Model`: lcpdyn reads the compiled model (defaults,
frames, inertias from geoms, URDF's joint origins and mesh hulls resolved), not the XML.

What is taken, at the file's reference configuration ``qpos0`` (where every joint coordinate of
:mod:`lcpdyn.actuators` is zero; the model then starts there at rest, or at a keyframe or a
pose given by joint values, :mod:`lcpdyn.model_file_inputs`):

* each body that moves (MuJoCo's ``body_weldid`` not the world) as a :class:`~lcpdyn.body.RigidBody`
  named as in the file, at its centre of mass with its principal axes (``xipos``, ``ximat``,
  ``body_mass``, ``body_inertia``); bodies welded to the world are the world;
* its joint to its parent (or the world): ``hinge`` -> :class:`~lcpdyn.constraints.RevoluteJoint`,
  ``slide`` -> :class:`~lcpdyn.joints.PrismaticJoint`, ``ball`` -> :class:`~lcpdyn.constraints.BallJoint`,
  ``free`` -> none, no joint -> :class:`~lcpdyn.joints.FixedJoint`; two hinges through one point with
  orthogonal axes -> :class:`~lcpdyn.joints.UniversalJoint`, a hinge and a slide along one axis ->
  :class:`~lcpdyn.joints.CylindricalJoint`;
* a hinge's ``stiffness`` (with ``springref``) and ``damping`` -> a
  :class:`~lcpdyn.forces.TorsionalSpringDamper` across it;
* each geom that collides (``contype`` or ``conaffinity`` nonzero) as a
  :class:`~lcpdyn.collision.Collider` (``plane`` -> :class:`~lcpdyn.shapes.HalfSpace`, ``sphere``,
  ``capsule``, ``cylinder``, ``box``, ``mesh`` -> its convex hull), its sliding friction the
  pair's larger one as MuJoCo combines them (``friction[0]``);
* gravity; a file that disables contacts (``<flag contact="disable"/>``) gets no colliders
  (said in the ``notes`` of :class:`ModelFile`);
* a single hinge's or slide's ``range`` (from ``qpos0``; a hinge's within a half turn) as
  :func:`~lcpdyn.actuators.joint_limit` and its ``frictionloss`` as
  :func:`~lcpdyn.actuators.joint_friction` (``limits=True``);
* the motors and position actuators on a single hinge or slide, with their gear, control and
  force ranges (``actuators=True``; :mod:`lcpdyn.model_file_inputs`).

Everything else the file holds is named in one :class:`ModelFileWarning` (or, with
``strict=True``, a :class:`ModelFileError`) -- a limit beyond a half turn or of a combined joint,
armature, a slide's stiffness or damping, other actuators, tendons, equality constraints, sensors,
ellipsoid and height-field geoms, a free joint not on a body of the world -- never dropped in
silence. A file the compiler refuses is a :class:`ModelFileError` carrying its message (which
names the element and line).
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field

import numpy as np

from .actuators import joint_friction, joint_limit
from .body import RigidBody
from .collision import Collider
from .constraints import BallJoint, RevoluteJoint
from .detected_contacts import ContactProperties
from .forces import TorsionalSpringDamper
from .joints import CylindricalJoint, FixedJoint, PrismaticJoint, UniversalJoint
from .model import Model
from .model_file_inputs import set_pose, take_actuators
from .rotation import np_quaternion_from_matrix
from .shapes import Box, Capsule, ConvexMesh, Cylinder, HalfSpace, Sphere

__all__ = ["load_model", "package_roots", "ModelFile", "ModelFileError", "ModelFileWarning"]

FREE, BALL, SLIDE, HINGE = 0, 1, 2, 3  # mjtJoint
PLANE, HFIELD, SPHERE, CAPSULE, ELLIPSOID, CYLINDER, BOX, MESH = 0, 1, 2, 3, 4, 5, 6, 7  # mjtGeom
GEOM_NAMES = {PLANE: "plane", HFIELD: "hfield", SPHERE: "sphere", CAPSULE: "capsule", ELLIPSOID: "ellipsoid",
              CYLINDER: "cylinder", BOX: "box", MESH: "mesh"}  # fmt: skip
JOINT_NAMES = {FREE: "free", BALL: "ball", SLIDE: "slide", HINGE: "hinge"}
MARGIN = 1e-3
"""The least detection margin (m) of a loaded model's colliders: contacts are found this far
before they close (MuJoCo's geom margin is 0 by default, its soft contacts act at touch)."""
TOUCHING = 1e-9
"""How close (m, and the cosine between axes) two joints of one body must be to form one joint."""


class ModelFileError(ValueError):
    """A model file that cannot be read, or (``strict=True``) that holds what lcpdyn does not take."""


class ModelFileWarning(UserWarning):
    """What a model file holds that lcpdyn does not take (each element named)."""


@dataclass(eq=False)
class ModelFile:
    """What :func:`load_model` made of a file: the ``model``, its bodies and joints by the file's
    names, the colliders, the file's own time step (s), what was not taken (``skipped``, one
    line per element), what the file itself turned off (``notes``), each limited joint's
    range in its coordinate (``ranges``: name -> (lower, upper), rad or m from ``qpos0``) and
    the actuators taken (``actuators``: name -> its :class:`~lcpdyn.actuators.JointMotor` or
    servo row, :mod:`lcpdyn.model_file_inputs`)."""

    model: Model
    bodies: dict = field(default_factory=dict)
    joints: dict = field(default_factory=dict)
    colliders: list = field(default_factory=list)
    timestep: float = 0.0
    skipped: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    ranges: dict = field(default_factory=dict)
    actuators: dict = field(default_factory=dict)
    _compiled: tuple = field(default=(), repr=False)

    def set_pose(self, pose) -> None:
        """Places the bodies at ``pose`` (a keyframe's name, or joint name -> value in the file's
        coordinates), as ``load_model(..., pose=pose)`` does (:func:`lcpdyn.model_file_inputs.set_pose`)."""
        set_pose(*self._compiled, pose)

    @property
    def mujoco_model(self):
        """MuJoCo's compiled model (``mujoco.MjModel``) of the same file, as this was read from it:
        ``package://`` meshes resolved, a free joint on the root where ``floating_base`` asked
        for one. The peer of a cross-check: a joint's coordinate here is MuJoCo's ``qpos`` less
        its ``qpos0``."""
        return self._compiled[1]


def _mujoco():
    try:
        import mujoco
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError("reading MJCF or URDF needs MuJoCo's compiler: pip install 'lcpdyn[models]'") from exc
    return mujoco


def _name(mujoco, m, kind, index, fallback):
    name = mujoco.mj_id2name(m, kind, index)
    return name if name else f"{fallback}{index}"


def package_roots(extra=()) -> list:
    """Where ``package://NAME/...`` mesh paths of a URDF are looked for, in order: ``extra``, the
    folders of ``ROS_PACKAGE_PATH``, and the share folder of the installed example-robot-data
    (its files are ``share/example-robot-data/robots/...``, as its URDFs name them)."""
    roots = [os.fspath(x) for x in extra]
    roots += [x for x in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep) if x]
    try:
        from importlib import metadata

        share = metadata.distribution("example-robot-data").locate_file("cmeel.prefix/share")
        if os.path.isdir(share):
            roots.append(os.fspath(share))
    except metadata.PackageNotFoundError:
        pass
    return roots


def _resolve(spec, roots, label):
    """Each ``package://`` mesh path made a file path under one of ``roots``; a ModelFileError
    names a mesh found under none."""
    for mesh in spec.meshes:
        name = mesh.file
        if not name.startswith("package://"):
            continue
        relative = name[len("package://") :]
        found = next((os.path.join(r, relative) for r in roots if os.path.isfile(os.path.join(r, relative))), None)
        if found is None:
            raise ModelFileError(f"{label}: mesh {name!r} is under none of the package folders {roots} "
                                 "(give package_dirs=, or set ROS_PACKAGE_PATH)")  # fmt: skip
        mesh.file = found


def _is_urdf(source) -> bool:
    """Whether ``source`` (a path or XML text) is a URDF file: a ``<robot>`` root."""
    text = str(source).lstrip()
    if text.startswith("<"):
        return "<robot" in text[:2000] and "<mujoco" not in text[:2000]
    return os.fspath(source).lower().endswith(".urdf")


def _compile(source, package_dirs=(), floating_base=False, base_position=None, edit=None):
    """(MjModel, label) of a file path or an XML string, its ``package://`` meshes resolved
    (:func:`package_roots`) and, with ``floating_base``, a free joint on the root body;
    ``edit(spec)`` may change the MjSpec before it is compiled (a benchmark's peer adds a floor)."""
    mujoco = _mujoco()
    text = str(source)
    try:
        if text.lstrip().startswith("<"):
            spec, label = mujoco.MjSpec.from_string(text), "the XML given"
        else:
            path = os.fspath(source)
            if not os.path.isfile(path):
                raise ModelFileError(f"model file {path!r} does not exist")
            spec, label = mujoco.MjSpec.from_file(path), repr(path)
        _resolve(spec, package_roots(package_dirs), label)
        if floating_base:
            root = spec.worldbody.first_body()
            if root is None:
                raise ModelFileError(f"{label}: floating_base=True but the file has no body")
            if root.first_joint() is None:
                root.add_freejoint()
            if base_position is not None:
                root.pos = np.asarray(base_position, dtype=float)
        if edit is not None:
            edit(spec)
        return spec.compile(), label
    except ValueError as exc:
        if isinstance(exc, ModelFileError):
            raise
        said = " ".join(str(exc).split())  # its lines (the error, then the element and line) on one
        raise ModelFileError(f"MuJoCo's compiler refused {text[:80]!r}: {said}") from None


def load_model(
    source,
    *,
    contact=None,
    strict: bool = False,
    package_dirs=(),
    floating_base: bool = False,
    base_position=None,
    self_collision=None,
    limits: bool = True,
    margin=None,
    pose=None,
    actuators: bool = True,
    controls=None,
) -> ModelFile:
    """The :class:`ModelFile` of ``source`` -- a path to an MJCF (``.xml``) or URDF (``.urdf``)
    file, or MJCF or URDF text -- as the module docstring says. ``contact``: the
    :class:`~lcpdyn.detected_contacts.ContactProperties` for the colliders' touches (default: the
    geoms' own sliding friction, no restitution). ``strict``: what the file holds and lcpdyn does
    not take is an error instead of a warning. ``package_dirs``: folders holding the packages a
    URDF's ``package://`` mesh paths name (besides :func:`package_roots`' own). ``floating_base``:
    a free joint on the root body (URDF's root link is otherwise fixed to the world: a legged
    robot or a vehicle needs one), placed at ``base_position`` (m, world) if given.
    ``self_collision``: whether the file's bodies collide with each other (beyond the pairs a
    joint excludes); None: as its format says -- MJCF's contype/conaffinity bits are MuJoCo's
    filter, so True; a URDF has none (a robot's SRDF lists the pairs to ignore, and links overlap
    at their joints), so False, as PyBullet's default, the bodies colliding with the world and
    with other models' bodies only. ``limits``: a single hinge's or slide's range and
    ``frictionloss`` as a :func:`~lcpdyn.actuators.joint_limit` and a
    :func:`~lcpdyn.actuators.joint_friction` (bounded and unilateral rows, which Moreau's
    midpoint scheme does not take: ``limits=False`` leaves them out, named).
    ``margin``: the detection margin (m) of :meth:`~lcpdyn.model.Model.set_collisions`, within
    which a contact is a row before it closes; default the file's largest geom ``margin``, at
    least :data:`MARGIN`. ``pose``: the start -- a keyframe's name, or joint name -> value in the
    file's coordinates (default ``qpos0`` at rest); ``actuators``: the file's motors and position
    actuators as :class:`~lcpdyn.actuators.JointMotor` and servos, driven by ``controls``
    (actuator name -> a number or a function of t; default 0) -- :mod:`lcpdyn.model_file_inputs`."""
    mujoco = _mujoco()
    urdf = _is_urdf(source)
    if self_collision is None:
        self_collision = not urdf
    if base_position is not None and not floating_base:
        raise ValueError("base_position places a floating base: give floating_base=True with it")
    m, label = _compile(source, package_dirs, floating_base, base_position)
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    out = ModelFile(Model(gravity=tuple(float(g) for g in m.opt.gravity)), timestep=float(m.opt.timestep))
    skipped = out.skipped
    body_name = {b: _name(mujoco, m, mujoco.mjtObj.mjOBJ_BODY, b, "body") for b in range(m.nbody)}
    moving = {}  # MuJoCo body -> RigidBody
    frames = {}  # MuJoCo body -> (centre of mass, R of its principal axes)
    for b in range(1, m.nbody):
        if m.body_weldid[b] == 0:
            continue  # welded to the world: part of it
        mass = float(m.body_mass[b])
        if not mass > 0.0:
            welded = [body_name[c] for c in range(m.nbody) if m.body_parentid[c] == b and m.body_jntnum[c] == 0]
            hint = f" (its mass is in {welded}, welded to it, which lcpdyn does not merge)" if welded else ""
            raise ModelFileError(f"{label}: body {body_name[b]!r} moves but has no mass of its own{hint}; "
                                 "lcpdyn's bodies need one")  # fmt: skip
        R = d.ximat[b].reshape(3, 3).copy()
        x = d.xipos[b].copy()
        frames[b] = (x, R)
        moving[b] = out.model.add_body(
            RigidBody(
                body_name[b],
                mass,
                tuple(float(i) for i in m.body_inertia[b]),
                position=tuple(x),
                orientation=tuple(np_quaternion_from_matrix(R)),
            )  # fmt: skip
        )
        out.bodies[body_name[b]] = moving[b]
    for b, body in moving.items():
        _joint_of(mujoco, m, d, b, body, moving, frames, body_name, out, label)
    _joint_properties(mujoco, m, out, moving, frames, label, limits)
    if m.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_CONTACT:
        skipped_geoms = sum(1 for g in range(m.ngeom) if m.geom_contype[g] or m.geom_conaffinity[g])
        if skipped_geoms:  # the file's own choice: said, not warned
            out.notes.append(f"contacts disabled in the file (<flag contact=\"disable\"/>): {skipped_geoms} geoms "
                             "made no colliders")  # fmt: skip
    else:
        band = max(float(m.geom_margin.max(initial=0.0)), MARGIN) if margin is None else float(margin)
        _colliders(mujoco, m, d, moving, frames, out, contact, self_collision, band)
    controls = {} if controls is None else dict(controls)
    if actuators:
        take_actuators(mujoco, m, out, controls, label)
    elif controls:
        raise ValueError("controls drive the file's actuators: give actuators=True with them")
    out._compiled = (mujoco, m, moving, label)
    if pose is not None:
        out.set_pose(pose)
    for kind, count, what in (
        (mujoco.mjtObj.mjOBJ_ACTUATOR, 0 if actuators else m.nu, "actuator"),
        (mujoco.mjtObj.mjOBJ_TENDON, m.ntendon, "tendon"),
        (mujoco.mjtObj.mjOBJ_EQUALITY, m.neq, "equality constraint"),
        (mujoco.mjtObj.mjOBJ_SENSOR, m.nsensor, "sensor"),
    ):
        for i in range(count):
            skipped.append(f"{what} {_name(mujoco, m, kind, i, what + ' ')!r}: not taken")
    if skipped:
        message = f"{label}: lcpdyn does not take {len(skipped)} element(s) of this file:\n  " + "\n  ".join(skipped)
        if strict:
            raise ModelFileError(message)
        warnings.warn(message, ModelFileWarning, stacklevel=2)
    return out


def _local(frames, b, point=None, axis=None):
    """A world point and axis in body b's frame (its centre of mass and principal axes), or in the
    world's (b not moving)."""
    if b not in frames:
        return point, axis
    x, R = frames[b]
    return (None if point is None else R.T @ (point - x)), (None if axis is None else R.T @ axis)


def _joint_of(mujoco, m, d, b, body, moving, frames, body_name, out, label):
    """The joint that holds body b to its parent (module docstring)."""
    parent = int(m.body_parentid[b])
    while parent and parent not in moving:  # a parent welded to the world is the world
        parent = int(m.body_parentid[parent])
    other = moving.get(parent)
    first, count = int(m.body_jntadr[b]), int(m.body_jntnum[b])
    joints = list(range(first, first + count))
    names = [_name(mujoco, m, mujoco.mjtObj.mjOBJ_JOINT, j, "joint") for j in joints]
    types = [int(m.jnt_type[j]) for j in joints]
    anchors = [d.xanchor[j].copy() for j in joints]
    axes = [d.xaxis[j].copy() for j in joints]
    if not joints:
        anchor = frames[b][0]
        offset_b, _ = _local(frames, parent, anchor)
        joint = FixedJoint(body_a=body, body_b=other, offset_b=tuple(offset_b), name=f"{body.name} (fixed)")
    elif types == [FREE]:
        if other is not None:
            out.skipped.append(f"joint {names[0]!r}: a free joint on body {body_name[b]!r}, whose parent "
                               f"{body_name[parent]!r} moves (the body is left free)")  # fmt: skip
        return
    else:
        joint = _lower_pair(types, names, anchors, axes, body, other, b, parent, frames, label)
    out.model.add_constraint(joint)
    for name in names:
        out.joints[name] = joint


def _lower_pair(types, names, anchors, axes, body, other, b, parent, frames, label):
    """One lcpdyn joint for a body's MuJoCo joints (one, or a recognized pair)."""
    anchor, axis = anchors[0], axes[0]
    offset_a, axis_a = _local(frames, b, anchor, axis)
    offset_b, axis_b = _local(frames, parent, anchor, axis)
    where = dict(body_a=body, body_b=other, offset_a=tuple(offset_a), offset_b=tuple(offset_b))
    name = names[0] if len(names) == 1 else " + ".join(names)
    if types == [HINGE]:
        return RevoluteJoint(**where, axis_a=tuple(axis_a), axis_b=tuple(axis_b), name=name)
    if types == [SLIDE]:
        return PrismaticJoint(**where, axis_b=tuple(axis_b), name=name)
    if types == [BALL]:
        return BallJoint(**where, name=name)
    if len(types) == 2 and np.linalg.norm(anchors[0] - anchors[1]) < TOUCHING:
        if types == [HINGE, HINGE] and abs(axes[0] @ axes[1]) < TOUCHING:
            # the outer hinge (the parent's arm) first in the tree, the inner on the body
            _, inner = _local(frames, b, None, axes[1])
            return UniversalJoint(**where, axis_a=tuple(inner), axis_b=tuple(axis_b), name=name)
        if sorted(types) == [SLIDE, HINGE] and abs(abs(axes[0] @ axes[1]) - 1.0) < TOUCHING:
            return CylindricalJoint(**where, axis_a=tuple(axis_a), axis_b=tuple(axis_b), name=name)
    kinds = ", ".join(f"{n!r} ({JOINT_NAMES.get(t, t)})" for n, t in zip(names, types))
    raise ModelFileError(
        f"{label}: body {body.name!r} has the joints {kinds}, which make no joint lcpdyn has "
        "(taken: one hinge, slide or ball; two hinges through one point with orthogonal axes; a hinge "
        "and a slide along one axis)"
    )


def _joint_properties(mujoco, m, out, moving, frames, label, limits=True):
    """A single hinge's or slide's limits and frictionloss as unilateral and bounded rows
    (``limits``), a hinge's spring and damper as a torsional spring-damper; the rest named as
    skipped."""
    for j in range(m.njnt):
        name = _name(mujoco, m, mujoco.mjtObj.mjOBJ_JOINT, j, "joint")
        kind = int(m.jnt_type[j])
        dof = int(m.jnt_dofadr[j])
        single = isinstance(out.joints.get(name), (RevoluteJoint, PrismaticJoint))  # one joint, one coordinate
        if m.jnt_limited[j]:
            low, high = (float(x) - float(m.qpos0[int(m.jnt_qposadr[j])]) for x in m.jnt_range[j])
            unit = "rad" if kind in (HINGE, BALL) else "m"
            turn = kind == HINGE and not (-np.pi < low and high < np.pi)
            out.ranges[name] = (low, high)
            if single and limits and not turn:
                out.model.add_constraint(joint_limit(out.joints[name], low, high, name=f"limit of {name}"))
            else:
                why = ("limits=False" if not limits else "beyond a half turn" if turn
                       else "not a single hinge or slide")  # fmt: skip
                out.skipped.append(f"joint {name!r}: its limits [{low:g}, {high:g}] ({unit}; {why})")
        width = 3 if kind == BALL else 6 if kind == FREE else 1
        dofs = range(dof, dof + width)
        if any(m.dof_frictionloss[i] > 0 for i in dofs):
            loss = float(m.dof_frictionloss[dof])
            if single and limits:
                out.model.add_constraint(joint_friction(out.joints[name], loss, name=f"friction in {name}"))
            else:
                why = "limits=False" if not limits else "not a single hinge or slide"
                out.skipped.append(f"joint {name!r}: its frictionloss {loss:g} ({why})")
        if any(m.dof_armature[i] > 0 for i in dofs):
            out.skipped.append(f"joint {name!r}: its armature {m.dof_armature[dof]:g}")
        stiffness, damping = float(m.jnt_stiffness[j]), float(m.dof_damping[dof])
        if kind == HINGE and (stiffness > 0 or damping > 0) and name in out.joints:
            joint = out.joints[name]
            if isinstance(joint, RevoluteJoint):
                reference = np.cross(joint.axis_a, np.eye(3)[int(np.argmin(np.abs(joint.axis_a)))])
                reference /= np.linalg.norm(reference)
                body_b = joint.body_b
                world = frames[int(m.jnt_bodyid[j])][1] @ reference
                reference_b = world if body_b is None else frames[_body_index(moving, body_b)][1].T @ world
                rest = float(m.qpos_spring[int(m.jnt_qposadr[j])] - m.qpos0[int(m.jnt_qposadr[j])])
                out.model.add_force(TorsionalSpringDamper(
                    joint.body_a, body_b, axis=tuple(joint.axis_a), reference_a=tuple(reference),
                    reference_b=tuple(reference_b), stiffness=stiffness, damping=damping, rest_angle=rest,
                ))  # fmt: skip
                continue
        if stiffness > 0 or damping > 0:
            out.skipped.append(f"joint {name!r} ({JOINT_NAMES.get(kind, kind)}): its stiffness {stiffness:g} "
                               f"and damping {damping:g}")  # fmt: skip


def _body_index(moving, body):
    return next(b for b, x in moving.items() if x is body)


def _colliders(mujoco, m, d, moving, frames, out, contact, self_collision=True, margin=MARGIN):
    """The geoms that collide, as colliders; their friction as ContactProperties."""
    made, friction, masks, fixed = [], [], [], 0
    for g in range(m.ngeom):
        if m.geom_contype[g] == 0 and m.geom_conaffinity[g] == 0:
            continue  # a visual geom
        b = int(m.geom_bodyid[g])
        body = moving.get(b)  # None: the world, or a body welded to it
        if body is None and not self_collision and int(m.geom_type[g]) != PLANE:
            fixed += 1  # the robot's own fixed base: without self-collision, not an obstacle of its links
            continue
        name = _name(mujoco, m, mujoco.mjtObj.mjOBJ_GEOM, g, "geom")
        kind = int(m.geom_type[g])
        size = m.geom_size[g]
        R = d.geom_xmat[g].reshape(3, 3)
        x = d.geom_xpos[g]
        if kind == PLANE:
            if body is not None:
                out.skipped.append(f"geom {name!r}: a plane on a moving body")
                continue
            normal = R[:, 2]
            shape = HalfSpace(tuple(normal), float(normal @ x))
        elif kind == SPHERE:
            shape = Sphere(float(size[0]))
        elif kind == CAPSULE:
            shape = Capsule(float(size[0]), 2.0 * float(size[1]))
        elif kind == CYLINDER:
            shape = Cylinder(float(size[0]), 2.0 * float(size[1]))
        elif kind == BOX:
            shape = Box(tuple(2.0 * float(s) for s in size[:3]))
        elif kind == MESH:
            mesh = int(m.geom_dataid[g])
            start, count = int(m.mesh_vertadr[mesh]), int(m.mesh_vertnum[mesh])
            shape = ConvexMesh(np.array(m.mesh_vert[start : start + count], dtype=np.float64))
        else:
            out.skipped.append(f"geom {name!r}: a {GEOM_NAMES.get(kind, kind)} (no such collider)")
            continue
        if body is None:
            position, rotation = (np.zeros(3), np.eye(3)) if kind == PLANE else (x.copy(), R.copy())
        else:
            xb, Rb = frames[b]
            position, rotation = Rb.T @ (x - xb), Rb.T @ R
        collider = out.model.add_collider(Collider(body, shape, tuple(position), rotation, name=name))
        made.append(collider)
        friction.append(float(m.geom_friction[g][0]))
        masks.append((int(m.geom_contype[g]), int(m.geom_conaffinity[g]), b))
    out.colliders = made
    if not self_collision:
        out.notes.append("self_collision off: the file's bodies touch only other models' bodies and the world"
                         + (f" ({fixed} geoms of its fixed base made no colliders)" if fixed else ""))  # fmt: skip
    if not made:
        return
    exclude = _excluded(mujoco, m, made, masks, moving, out)
    if not self_collision:
        bodies = list(moving.values())
        exclude = exclude + tuple((a, b) for i, a in enumerate(bodies) for b in bodies[i + 1 :])
    if contact is not None:
        out.model.set_collisions(margin=margin, contact=contact, exclude=exclude)
        return
    values = np.array(friction)
    low = float(values.min())
    pairs = {}
    if values.max() > low:  # MuJoCo's combination: the larger of the two geoms' coefficients
        for i in range(len(made)):
            for j in range(i + 1, len(made)):
                mu = max(values[i], values[j])
                if mu != low:
                    pairs[(made[i], made[j])] = ContactProperties(mu=mu)
    out.model.set_collisions(margin=margin, contact=ContactProperties(mu=low), pairs=pairs, exclude=exclude)


def _excluded(mujoco, m, made, masks, moving, out):
    """Body pairs that never touch: the file's ``<exclude>`` elements, and pairs of bodies every
    one of whose geom pairs MuJoCo's contype/conaffinity bits keep apart; a pair of bodies whose
    geoms the bits keep apart only in part is named as skipped, as are ``<pair>`` elements."""
    key = {b: body for b, body in moving.items()}
    exclude = set()
    for signature in m.exclude_signature[: m.nexclude]:
        first, second = int(signature) >> 16, int(signature) & 0xFFFF
        exclude.add((key.get(first), key.get(second)))
    apart_pairs, together = {}, set()
    for i in range(len(made)):
        for j in range(i + 1, len(made)):
            (type_i, affinity_i, b_i), (type_j, affinity_j, b_j) = masks[i], masks[j]
            pair = (key.get(b_i), key.get(b_j))
            if pair[0] is pair[1]:
                continue  # one body, or both the world: never tested
            if id(pair[0]) > id(pair[1]):
                pair = pair[::-1]
            touching = bool(type_i & affinity_j) or bool(type_j & affinity_i)
            if touching:
                together.add((id(pair[0]), id(pair[1])))
            else:
                apart_pairs[(id(pair[0]), id(pair[1]))] = pair
    for ids, pair in apart_pairs.items():
        if ids in together:
            names = [getattr(x, "name", "world") for x in pair]
            out.skipped.append(f"contype/conaffinity: only some geoms of {names[0]!r} and {names[1]!r} "
                               "are kept apart (all of them touch here)")  # fmt: skip
        else:
            exclude.add(pair)
    for i in range(m.npair):
        out.skipped.append(f"contact pair {_name(mujoco, m, mujoco.mjtObj.mjOBJ_PAIR, i, 'pair ')!r}: not taken")
    return tuple(pair if pair[0] is not None else (pair[1], None) for pair in exclude if pair != (None, None))
