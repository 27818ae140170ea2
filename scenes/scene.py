"""The :class:`Scene` container and the parameter-override helper shared by all scenes."""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field

from lcpdyn.friction import MODELS, make_friction
from lcpdyn.model import Model

__all__ = ["Scene", "override", "build_scene", "describe", "PARAMETER_UNITS", "beam_defaults", "flexible_beam"]

# The unit of every scene parameter (the keys of each scene's DEFAULTS and of each stability
# scene's system().parameters), shown by ``lcpdyn scenes``; "-" for dimensionless numbers and
# choices. A parameter added to a scene needs an entry here (tests/test_cli_and_io.py checks).
PARAMETER_UNITS = {
    # run control
    "dt": "s",
    "t_end": "s",
    # friction and contact models
    "mu": "-",
    "mu_static": "-",
    "mu_high": "-",
    "mu_low": "-",
    "rolling": "-",
    "tangential_stiffness": "N/m",
    "velocity_threshold": "m/s",
    "characteristic_velocity": "m/s",
    # bodies: masses, inertias, dimensions
    "mass": "kg",
    "second_mass": "kg",
    "wheel_mass": "kg",
    "arm_mass": "kg",
    "chassis_mass": "kg",
    "beam_mass_per_length": "kg/m",
    "bar_mass_per_length": "kg/m",
    "axial_inertia": "kg m^2",
    "transverse_inertia": "kg m^2",
    "chassis_pitch_inertia": "kg m^2",
    "radius": "m",
    "wheel_radius": "m",
    "side": "m",
    "length": "m",
    "beam_length": "m",
    "bar_length": "m",
    "arm_length": "m",
    "yoke_length": "m",
    "support_height": "m",
    "cg_height": "m",
    "front_axle": "m",
    "rear_axle": "m",
    "a_over_l": "-",
    "gyration": "-",
    "flexible": "-",
    "beam_elements": "-",
    "axial_stiffness": "N",
    "bending_stiffness": "N m^2",
    "torsional_stiffness": "N m^2",
    "shear_stiffness": "N",
    "beam_inertia_per_length": "kg m",
    "beam_damping": "s",
    "bar_direction": "-",
    # initial state, motion, gravity
    "speed": "m/s",
    "road_speed": "m/s",
    "yaw_rate": "rad/s",
    "roll_rate": "rad/s",
    "gravity": "m/s^2",
    "psi_deg": "deg",
    "theta_deg": "deg",
    "phi_deg": "deg",
    "heading_deg": "deg",
    "angle_deg": "deg",
    "incline_deg": "deg",
    # springs, dampers, tyres
    "k1": "N/m",
    "k2": "N/m^2",
    "k3": "N/m^3",
    "k4": "N/m^4",
    "c1": "N s/m",
    "stiffness": "N/m",
    "tyre_stiffness": "N/m",
    "tyre_damping": "N s/m",
    "suspension_stiffness": "N/m",
    "suspension_damping": "N s/m",
    "spring_stiffness": "N m/rad",
    "joint_damping": "N m s/rad",
    # Moreland's tyre (Bauchau 2002 Eqs. 37-38, Table 2)
    "lateral_stiffness": "N/m",
    "lateral_damping": "N s/m",
    "yaw_damping": "N m s/rad",
    "yaw_compliance": "1/N",
    "yaw_time_constant": "s",
    "lateral_kick": "m/s",
    # half-car loads (Ikoki 2022 Eqs. 34-37) and its Udwadia-Kalaba extras
    "torque_max": "N m",
    "torque_rate": "1/s",
    "brake_torque": "N m",
    "brake_start": "s",
    "brake_duration": "s",
    "brake_rate": "1/s",
    "slippery_time": "s",
    "slippery_width": "s",
    "air_density": "kg/m^3",
    "frontal_area": "m^2",
    "drag_coefficient": "-",
    "bearing_coefficient": "N m s^2",
    "k_s": "-",
    # wheelset on track (Schwab-Meijaard 2002 §5)
    "cant": "-",  # tan of the rail slant (1/40, 1/20)
    "gauge": "m",
    "load": "N",
    "yaw_stiffness": "N m/rad",
    "flange_stiffness": "N/m",  # 0: no flange contact pair
    "flange_damping": "N s/m",
    "saturation": "-",
    "f11": "N",
    "f22": "N",
    "f23": "N m",
    "flange_back_distance": "m",
    "nominal_radius": "m",
    "amplitude": "m",
    "pull_rate": "N/s",  # incline block: the pull test's force ramp
    # scale scenes
    "count": "-",
    "seed": "-",
    "spacing": "m",
    "spin": "-",  # dumbbells: spins up to spin * speed / radius
    "across": "-",  # dumbbells: 1 = launched across their axis
    "k_F": "-",
    "uk_gamma": "1/s",
    # scenes with colliders
    "links": "-",
    "box_mass": "kg",
    "drop": "m",
    "restitution": "-",
    "margin": "m",
    "boxes": "-",
    "gap": "m",
    "wheel_width": "m",
    "mu_wheel": "-",
    "static_bound": "-",
    "crate_mass": "kg",
    "crate_side": "m",
    "crate_position": "m",
    "bed_length": "m",
    "bed_front": "m",
    "bed_height": "m",
    "beam_radius": "m",
    "ball_mass": "kg",
    "ball_radius": "m",
    "strike_node": "-",
    # robots from model files (scenes.robots): joint servos
    "turn": "rad",
    "thigh": "rad",
    "calf": "rad",
    "opening": "m",
    "mount": "m",
    "limits": "-",  # 1: the file's joint limits are stops, 0: left out
    "servo_stiffness": "N m/rad",
    "servo_damping": "N m s/rad",
}


#: The parameters of the regularized, continuous and creep friction models a scene may set
#: (:meth:`Scene.friction` reads them from ``Scene.contact_model``).
CONTACT_MODEL_KEYS = (
    "tangential_stiffness", "velocity_threshold", "static_bound", "characteristic_velocity", "f11", "f22", "f23",
)  # fmt: skip


@dataclass
class Scene:
    """A built scene: the model, the parameters that made it and run defaults."""

    name: str
    model: Model
    parameters: dict
    dt: float
    t_end: float
    description: str = ""
    contact_model: dict = field(default_factory=dict)  # k_T, v_th for "regularized"

    @classmethod
    def from_parameters(cls, name: str, model: Model, p: dict, doc: str) -> Scene:
        """The scene as every ready scene builds it: step ``p["dt"]``, end ``p["t_end"]``, the
        first line of ``doc`` as its description, and the contact-model constants
        (:data:`CONTACT_MODEL_KEYS`) that ``p`` holds."""
        contact_model = {key: p[key] for key in CONTACT_MODEL_KEYS if key in p}
        return cls(name, model, p, p["dt"], p["t_end"], doc.splitlines()[0], contact_model)

    def simulation(self, friction: str = "regularized", **options):
        """A :class:`~lcpdyn.stepper.Simulation` of this scene with friction model ``friction``
        (:meth:`friction`) at the scene's step (``dt=`` overrides it) and the Simulation
        ``options``; it records the scene (name and parameters), so its result files can be
        rebuilt and continued (:func:`lcpdyn.rebuild.simulation_from_trajectory`,
        :func:`lcpdyn.rebuild.resume`)."""
        from lcpdyn.stepper import Simulation

        dt = options.pop("dt", self.dt)
        return Simulation(
            self.model, self.friction(friction), dt, scene={"name": self.name, **self.parameters}, **options
        )

    def friction(self, name: str):
        """Friction model ``name`` (a key of :data:`lcpdyn.friction.MODELS`) built with those of
        the scene's contact-model constants that its constructor takes (k_T and v_th for the
        regularized model, v0 for the continuous law)."""
        if name not in MODELS:
            return make_friction(name)  # the registry's error, naming the choices
        accepted = inspect.signature(MODELS[name]).parameters
        return make_friction(name, **{k: v for k, v in self.contact_model.items() if k in accepted})


def override(defaults: dict, overrides: dict, scene: str) -> dict:
    """``defaults`` updated by ``overrides``; unknown names and non-finite numbers raise."""
    unknown = sorted(set(overrides) - set(defaults))
    if unknown:
        raise ValueError(f"scene {scene!r}: unknown parameter(s) {unknown}; known: {sorted(defaults)}")
    out = dict(defaults)
    for key, value in overrides.items():
        if isinstance(defaults[key], str):
            out[key] = str(value)
            continue
        if isinstance(defaults[key], (int, float)) and not isinstance(defaults[key], bool):
            try:
                value = float(value)
            except (TypeError, ValueError):
                raise ValueError(f"scene {scene!r}: parameter {key} must be a number, got {value!r}") from None
            if math.isnan(value) or (math.isinf(value) and key != "tangential_stiffness"):
                raise ValueError(f"scene {scene!r}: parameter {key} must be finite, got {value!r}")
            if key == "gravity" and value < 0.0:  # every scene's g is a magnitude along -z
                raise ValueError(
                    f"scene {scene!r}: parameter gravity is the magnitude g (m/s^2) of gravity along -z and "
                    f"must be >= 0, got {value!r}"
                )
        out[key] = value
    return out


def beam_defaults(set_number: int) -> dict:
    """The scene parameters of a flexible beam with Bauchau 2002 Table 1's section ``set_number``
    (:data:`lcpdyn.beam.TABLE_1`; its mass per length and length stay the scene's own keys), and
    ``beam_elements`` = 0: a rigid bar unless the caller asks for elements."""
    from lcpdyn.beam import TABLE_1

    row = TABLE_1[set_number]
    return {
        "beam_elements": 0,
        "axial_stiffness": row["axial_stiffness"],
        "bending_stiffness": row["bending_stiffness"],
        "torsional_stiffness": row["torsional_stiffness"],
        "shear_stiffness": row["shear_stiffness"],
        "beam_inertia_per_length": row["polar_inertia_per_length"],
        "beam_damping": row["proportional_damping"],
    }


def flexible_beam(p: dict, scene: str, mass_per_length: float):
    """(elements, :class:`~lcpdyn.beam.BeamSection` or None) from a scene's parameters ``p`` with
    the keys of :func:`beam_defaults`: ``beam_elements`` checked to be an integer >= 0 (0: the
    rigid bar, section None) and written back into ``p`` as an int."""
    from lcpdyn.beam import BeamSection

    elements = p["beam_elements"]
    if elements != int(elements) or elements < 0:
        raise ValueError(f"scene {scene!r}: beam_elements must be an integer >= 0 (0: a rigid bar), got {elements!r}")
    p["beam_elements"] = elements = int(elements)
    if not elements:
        return 0, None
    section = BeamSection(
        p["axial_stiffness"], p["shear_stiffness"], p["torsional_stiffness"], p["bending_stiffness"],
        mass_per_length, p["beam_inertia_per_length"], p["beam_damping"],
    )  # fmt: skip
    return elements, section


def build_scene(name: str, **parameters) -> Scene:
    """The registered scene ``name`` built with ``parameters``; a ValueError names an unknown scene and lists the
    known ones."""
    from . import SCENES

    if name not in SCENES:
        raise ValueError(f"unknown scene {name!r}; choose one of {sorted(SCENES)}")
    return SCENES[name].build(**parameters)


def describe() -> list[tuple[str, str]]:
    """(name, first docstring line, kinds) of every scene; kinds: run and/or stability."""
    from . import REPORTS, SCENES, STABILITY

    out = []
    for name in dict.fromkeys(list(SCENES) + list(STABILITY)):
        module = SCENES.get(name) or STABILITY[name]
        kinds = "+".join(
            k for k, table in (("run", SCENES), ("stability", STABILITY), ("reproduce", REPORTS)) if name in table
        )
        out.append((name, (module.__doc__ or "").strip().splitlines()[0], kinds))
    return out
