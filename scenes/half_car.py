"""A half car with traction saturation (Ikoki 2022 Sec. 3-4): chassis, two trailing suspension
arms and two wheels in the vertical x-z plane, driven on the rear wheel over a road whose grip
drops on a slippery stretch.

Bodies: chassis (pitching, heaving, moving forward; held in the x-z plane by three bilateral
rows), front and rear arms hinged to it (revolute joints with torsional suspension springs and
dampers), wheels on revolute joints at the arm ends, compliant tyres (linear spring-damper) on a
flat road with friction mu(t). Loads (the paper's equations):

* driving torque on the rear wheel (reaction on its arm) T_mot = T_max tanh(k_M t)   (Eq. 34)
* braking torque on both wheels, a pulse from t_b lasting b_d with edge rate t_br:
  T_b = T_bm/4 (1 + tanh(t_br (t - t_b)/2)) (1 - tanh(t_br (t - t_b - b_d)/2)) tanh(omega)   (Eq. 35,
  written with (1 - e^-x)/(1 + e^-x) = tanh(x/2))
* road grip mu(t) = mu_l + (mu_u - mu_l) tanh((t - t_s)/s_d)^4   (Eq. 36)
* air drag F_w = rho A c_x x_dot^2 / 2 on the chassis, bearing resistance T_be = k_be omega^2 on each
  wheel, opposing the motion   (Eq. 37)

The paper's Table 1 values are lost; the defaults below are chosen for one side of a mid-size car
(about 1400 kg in all): sprung half-mass 600 kg, pitch inertia 800 kg m^2, wheelbase 2.7 m (centre
of mass 1.2 m behind the front axle), trailing arms 0.35 m / 25 kg, wheels 0.3 m / 20 kg, tyre
250 kN/m and 1.5 kN s/m, suspension 35 kN/m and 3 kN s/m at the wheel (torsional k L^2, c L^2),
k_M = 1/s, braking 800 N m from t = 8 s for 2 s, grip 0.9 dropping to 0.15 around t = 4 s
(s_d = 1.5 s), air 1.2 kg/m^3 x 1.1 m^2 x 0.3, bearings 0.01 N m s^2. Runs: T_max = 150, 550,
700 N m. With mu N r of the rear wheel near 0.15 x 3 kN x 0.3 m = 135 N m on the slippery stretch,
the larger torques make it spin while the free front wheel keeps rolling.
"""
from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from lcpdyn.body import RigidBody
from lcpdyn.compliance import SpringDamperLaw
from lcpdyn.constraints import Holonomic, RevoluteJoint
from lcpdyn.contact import DiskContact, Plane
from lcpdyn.forces import BodyForce, TorsionalSpringDamper
from lcpdyn.model import Model

from .scene import Scene, override

NAME = "half-car"
DEFAULTS = {
    "chassis_mass": 600.0, "chassis_pitch_inertia": 800.0, "cg_height": 0.55, "front_axle": 1.2,
    "rear_axle": 1.5, "arm_length": 0.35, "arm_mass": 25.0, "wheel_mass": 20.0, "wheel_radius": 0.3,
    "tyre_stiffness": 2.5e5, "tyre_damping": 1.5e3, "suspension_stiffness": 3.5e4, "suspension_damping": 3e3,
    "torque_max": 550.0, "torque_rate": 1.0, "brake_torque": 800.0, "brake_start": 8.0, "brake_duration": 2.0,
    "brake_rate": 10.0, "mu_high": 0.9, "mu_low": 0.15, "slippery_time": 4.0, "slippery_width": 1.5,
    "air_density": 1.2, "frontal_area": 1.1, "drag_coefficient": 0.3, "bearing_coefficient": 0.01,
    "gravity": 9.81, "dt": 1e-3, "t_end": 12.0, "tangential_stiffness": 1e10, "velocity_threshold": 0.01,
}


def driving_torque(t, p):
    """Eq. (34)."""
    return p["torque_max"] * jnp.tanh(p["torque_rate"] * t)


def braking_envelope(t, p):
    """Eq. (35) without the tanh(omega) factor."""
    rate, start, duration = p["brake_rate"], p["brake_start"], p["brake_duration"]
    return p["brake_torque"] / 4 * (1 + jnp.tanh(rate * (t - start) / 2)) * (1 - jnp.tanh(rate * (t - start - duration) / 2))


def grip(t, p):
    """Eq. (36)."""
    return p["mu_low"] + (p["mu_high"] - p["mu_low"]) * math.tanh((t - p["slippery_time"]) / p["slippery_width"]) ** 4


def build(**parameters) -> Scene:
    p = override(DEFAULTS, parameters, NAME)
    g, L, r = p["gravity"], p["arm_length"], p["wheel_radius"]
    m1, ma, mw = p["chassis_mass"], p["arm_mass"], p["wheel_mass"]
    if min(L, r, m1, ma, mw) <= 0:
        raise ValueError(f"scene {NAME!r}: lengths and masses must be > 0")
    wheelbase = p["front_axle"] + p["rear_axle"]
    total = m1 + 2 * ma + 2 * mw
    loads = {"front": total * g * p["rear_axle"] / wheelbase, "rear": total * g * p["front_axle"] / wheelbase}
    k_t, c_t = p["suspension_stiffness"] * L * L, p["suspension_damping"] * L * L
    model = Model(gravity=(0.0, 0.0, -g))
    compression = {k: v / p["tyre_stiffness"] for k, v in loads.items()}
    axle_height = r - 0.5 * (compression["front"] + compression["rear"])
    chassis = model.add_body(RigidBody("chassis", m1, (0.3 * p["chassis_pitch_inertia"], p["chassis_pitch_inertia"],
                                                       p["chassis_pitch_inertia"]),
                                       position=(0.0, 0.0, p["cg_height"] + axle_height - r)))

    def planar(state):  # the chassis stays in the x-z plane with its y axis along world y
        R = state.rotation(chassis)
        return jnp.array([state.position(chassis)[1], R[0, 1], R[2, 1]])

    model.add_constraint(Holonomic(planar, 3, name="planar chassis"))
    tyre = SpringDamperLaw(p["tyre_stiffness"], p["tyre_damping"])
    bodies = {}
    for side, x_axle in (("front", p["front_axle"]), ("rear", -p["rear_axle"])):
        hinge = np.array([x_axle + L, 0.0, axle_height])  # trailing arm: hinge ahead of the axle
        chassis_offset = hinge - chassis.position
        arm = model.add_body(RigidBody(f"{side} arm", ma, (0.01, ma * L * L / 12, ma * L * L / 12),
                                       position=hinge - (L / 2, 0.0, 0.0)))
        wheel = model.add_body(RigidBody(f"{side} wheel", mw, (mw * r * r / 4, mw * r * r / 2, mw * r * r / 4),
                                         position=(x_axle, 0.0, axle_height)))
        model.add_constraint(RevoluteJoint(body_a=arm, offset_a=(L / 2, 0.0, 0.0), body_b=chassis,
                                           offset_b=tuple(chassis_offset), name=f"{side} hinge"))
        model.add_constraint(RevoluteJoint(body_a=wheel, body_b=arm, offset_b=(-L / 2, 0.0, 0.0), name=f"{side} axle"))
        # preload: the spring carries the static wheel load minus the wheel and half the arm
        preload = (loads[side] - (mw + ma / 2) * g) * L
        model.add_force(TorsionalSpringDamper(arm, chassis, stiffness=k_t, damping=c_t, rest_angle=-preload / k_t))
        model.add_contact(DiskContact(wheel, Plane(), p["mu_high"], normal_law=tyre, radius=r,
                                      friction_profile=lambda t, p=p: grip(t, p)))
        bodies[side] = (arm, wheel)

    def wheel_loads(side):
        arm, wheel = bodies[side]

        def load(t, state):
            omega = (state.angular_velocity(wheel) - state.angular_velocity(arm)) @ (state.rotation(arm)[:, 1])
            torque = -braking_envelope(t, p) * jnp.tanh(omega) - p["bearing_coefficient"] * omega * jnp.abs(omega)
            if side == "rear":
                torque = torque + driving_torque(t, p)
            axis = state.rotation(arm)[:, 1]
            return torque * axis

        model.add_force(BodyForce(wheel, lambda t, s: (jnp.zeros(3), load(t, s))))
        model.add_force(BodyForce(arm, lambda t, s: (jnp.zeros(3), -load(t, s))))

    wheel_loads("front")
    wheel_loads("rear")

    def drag(t, state):
        vx = state.velocity(chassis)[0]
        return jnp.array([-0.5 * p["air_density"] * p["frontal_area"] * p["drag_coefficient"] * vx * jnp.abs(vx),
                          0.0, 0.0]), jnp.zeros(3)

    model.add_force(BodyForce(chassis, drag))
    return Scene(NAME, model, p, p["dt"], p["t_end"], __doc__.splitlines()[0],
                 {"tangential_stiffness": p["tangential_stiffness"], "velocity_threshold": p["velocity_threshold"]})


def wheel_speeds(trajectory) -> tuple[np.ndarray, np.ndarray]:
    """(front, rear) wheel spin (rad/s, positive forward) from the world angular velocities."""
    names = trajectory.body_names
    return (trajectory.angular_velocity[:, names.index("front wheel"), 1],
            trajectory.angular_velocity[:, names.index("rear wheel"), 1])


def traction(trajectory, contact: int = 1) -> np.ndarray:
    """Longitudinal friction force on the rear wheel (N, contact 1)."""
    return trajectory.contact_friction_force[:, contact, 0]
