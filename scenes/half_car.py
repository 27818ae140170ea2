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

import jax
import jax.numpy as jnp
import numpy as np

from lcpdyn.body import RigidBody
from lcpdyn.compliance import SpringDamperLaw
from lcpdyn.constraints import Holonomic, RevoluteJoint
from lcpdyn.contact import DiskContact, Plane
from lcpdyn.forces import BodyForce, TorsionalSpringDamper
from lcpdyn.model import Model
from lcpdyn.rotation import rot_y

from .scene import Scene, override

NAME = "half-car"
DEFAULTS = {
    "chassis_mass": 600.0,
    "chassis_pitch_inertia": 800.0,
    "cg_height": 0.55,
    "front_axle": 1.2,
    "rear_axle": 1.5,
    "arm_length": 0.35,
    "arm_mass": 25.0,
    "wheel_mass": 20.0,
    "wheel_radius": 0.3,
    "tyre_stiffness": 2.5e5,
    "tyre_damping": 1.5e3,
    "suspension_stiffness": 3.5e4,
    "suspension_damping": 3e3,
    "torque_max": 550.0,
    "torque_rate": 1.0,
    "brake_torque": 800.0,
    "brake_start": 8.0,
    "brake_duration": 2.0,
    "brake_rate": 10.0,
    "mu_high": 0.9,
    "mu_low": 0.15,
    "slippery_time": 4.0,
    "slippery_width": 1.5,
    "air_density": 1.2,
    "frontal_area": 1.1,
    "drag_coefficient": 0.3,
    "bearing_coefficient": 0.01,
    "gravity": 9.81,
    "dt": 1e-3,
    "t_end": 12.0,
    "tangential_stiffness": 1e10,
    "velocity_threshold": 0.01,
}


def driving_torque(t, p):
    """Eq. (34)."""
    return p["torque_max"] * jnp.tanh(p["torque_rate"] * t)


def braking_envelope(t, p):
    """Eq. (35) without the tanh(omega) factor."""
    rate, start, duration = p["brake_rate"], p["brake_start"], p["brake_duration"]
    return (
        p["brake_torque"]
        / 4
        * (1 + jnp.tanh(rate * (t - start) / 2))
        * (1 - jnp.tanh(rate * (t - start - duration) / 2))
    )


def grip(t, p):
    """Eq. (36)."""
    return p["mu_low"] + (p["mu_high"] - p["mu_low"]) * math.tanh((t - p["slippery_time"]) / p["slippery_width"]) ** 4


def build(**parameters) -> Scene:
    """The half car (module docstring) with ``parameters`` overriding its defaults."""
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
    chassis = model.add_body(
        RigidBody(
            "chassis",
            m1,
            (0.3 * p["chassis_pitch_inertia"], p["chassis_pitch_inertia"], p["chassis_pitch_inertia"]),
            position=(0.0, 0.0, p["cg_height"] + axle_height - r),
        )
    )

    def planar(state):  # the chassis stays in the x-z plane with its y axis along world y
        R = state.rotation(chassis)
        return jnp.array([state.position(chassis)[1], R[0, 1], R[2, 1]])

    model.add_constraint(Holonomic(planar, 3, name="planar chassis"))
    tyre = SpringDamperLaw(p["tyre_stiffness"], p["tyre_damping"])
    bodies = {}
    for side, x_axle in (("front", p["front_axle"]), ("rear", -p["rear_axle"])):
        hinge = np.array([x_axle + L, 0.0, axle_height])  # trailing arm: hinge ahead of the axle
        chassis_offset = hinge - chassis.position
        arm = model.add_body(
            RigidBody(f"{side} arm", ma, (0.01, ma * L * L / 12, ma * L * L / 12), position=hinge - (L / 2, 0.0, 0.0))
        )
        wheel = model.add_body(
            RigidBody(
                f"{side} wheel",
                mw,
                (mw * r * r / 4, mw * r * r / 2, mw * r * r / 4),
                position=(x_axle, 0.0, axle_height),
            )
        )
        model.add_constraint(
            RevoluteJoint(
                body_a=arm,
                offset_a=(L / 2, 0.0, 0.0),
                body_b=chassis,
                offset_b=tuple(chassis_offset),
                name=f"{side} hinge",
            )
        )
        model.add_constraint(RevoluteJoint(body_a=wheel, body_b=arm, offset_b=(-L / 2, 0.0, 0.0), name=f"{side} axle"))
        # preload: the spring carries the static wheel load minus the wheel and half the arm
        preload = (loads[side] - (mw + ma / 2) * g) * L
        model.add_force(TorsionalSpringDamper(arm, chassis, stiffness=k_t, damping=c_t, rest_angle=-preload / k_t))
        model.add_contact(
            DiskContact(
                wheel, Plane(), p["mu_high"], normal_law=tyre, radius=r, friction_profile=lambda t, p=p: grip(t, p)
            )
        )
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
        return jnp.array(
            [-0.5 * p["air_density"] * p["frontal_area"] * p["drag_coefficient"] * vx * jnp.abs(vx), 0.0, 0.0]
        ), jnp.zeros(3)

    model.add_force(BodyForce(chassis, drag))
    return Scene.from_parameters(NAME, model, p, __doc__)


def wheel_speeds(trajectory) -> tuple[np.ndarray, np.ndarray]:
    """(front, rear) wheel spin (rad/s, positive forward) from the world angular velocities."""
    names = trajectory.body_names
    return (
        trajectory.angular_velocity[:, names.index("front wheel"), 1],
        trajectory.angular_velocity[:, names.index("rear wheel"), 1],
    )


def traction(trajectory, contact: int = 1) -> np.ndarray:
    """Longitudinal friction force on the rear wheel (N, contact 1)."""
    return trajectory.contact_friction_force[:, contact, 0]


# --- the Udwadia–Kalaba formulation of the same car (Ikoki 2022 Secs. 2-3) ------------------------
COORDINATES = ("x", "z", "pitch", "front arm", "front wheel", "rear wheel", "rear arm")  # q1..q7 as in the paper


def _geometry(p):
    """Chassis-frame hinge offsets, the axle height and the spring rest angles of :func:`build`."""
    g, L, r = p["gravity"], p["arm_length"], p["wheel_radius"]
    wheelbase = p["front_axle"] + p["rear_axle"]
    total = p["chassis_mass"] + 2 * p["arm_mass"] + 2 * p["wheel_mass"]
    loads = {"front": total * g * p["rear_axle"] / wheelbase, "rear": total * g * p["front_axle"] / wheelbase}
    axle_height = r - 0.5 * (loads["front"] + loads["rear"]) / p["tyre_stiffness"]
    z_chassis = p["cg_height"] + axle_height - r
    k_t = p["suspension_stiffness"] * L * L
    hinges = {
        "front": np.array([p["front_axle"] + L, 0.0, axle_height - z_chassis]),
        "rear": np.array([-p["rear_axle"] + L, 0.0, axle_height - z_chassis]),
    }
    rest = {side: -((loads[side] - (p["wheel_mass"] + p["arm_mass"] / 2) * g) * L) / k_t for side in loads}
    return hinges, z_chassis, rest, total


def _poses(q, p, hinges):
    x, z, pitch, arm_f, wheel_f, wheel_r, arm_r = (q[i] for i in range(7))
    L = p["arm_length"]
    centre = jnp.array([x, 0.0, z])
    Rc = rot_y(pitch)
    positions, rotations = [centre], [Rc]
    for hinge, arm, spin in ((hinges["front"], arm_f, wheel_f), (hinges["rear"], arm_r, wheel_r)):
        pivot = centre + Rc @ jnp.asarray(hinge)
        Ra = Rc @ rot_y(arm)
        positions += [pivot + Ra @ jnp.array([-L / 2, 0.0, 0.0]), pivot + Ra @ jnp.array([-L, 0.0, 0.0])]
        rotations += [Ra, Ra @ rot_y(spin)]
    return jnp.stack(positions), jnp.stack(rotations)  # chassis, front arm, front wheel, rear arm, rear wheel


def udwadia_kalaba(**parameters):
    """(UdwadiaKalaba model, initial state, parameters) of the half car in the paper's relative
    coordinates q1..q7 (:data:`COORDINATES`), with the same bodies, springs, tyres and loads as
    :func:`build`. Constraints: zero longitudinal slip of each wheel (Eq. 29a, 29c); weights
    s_i = 1 - tanh^2(k_s (T_mot,i + T_b,i) / (3 mu N_i r_i)) (Eq. 32); sliding friction
    F_i = mu N_i tanh(k_F (T_mot,i + T_b,i) / (3 mu N_i r_i)) tanh(omega_i r_i - x_dot_i) (Eq. 33),
    with k_s = k_F = 3 (their values are lost); Baumgarte rate ``uk_gamma`` (default 20 /s); the
    penalty weights are scaled by the vehicle's total mass (``weight_scale``, see
    :mod:`lcpdyn.udwadia_kalaba`)."""
    from lcpdyn.nonholonomic import MinimalSystem
    from lcpdyn.udwadia_kalaba import UdwadiaKalaba

    extra = {"k_s": 3.0, "k_F": 3.0, "uk_gamma": 20.0}
    p = override(DEFAULTS | extra, parameters, NAME)
    hinges, z_chassis, rest, total = _geometry(p)
    L, r = p["arm_length"], p["wheel_radius"]
    k_t, c_t = p["suspension_stiffness"] * L * L, p["suspension_damping"] * L * L

    def pose(q, t, p_):
        return _poses(q, p, hinges)

    def contact_state(q, qdot, t, p_):
        """Per wheel (front, rear): centre height, its rate, absolute spin rate, centre x rate, tyre force."""
        (positions, _), (rates, _) = jax.jvp(lambda q_: _poses(q_, p, hinges), (q,), (qdot,))
        out = []
        for index, spin_rate in ((2, qdot[2] + qdot[3] + qdot[4]), (4, qdot[2] + qdot[6] + qdot[5])):
            height, height_rate = positions[index][2], rates[index][2]
            approach = r - height
            normal = jnp.where(
                approach > 0, jnp.maximum(p["tyre_stiffness"] * approach - p["tyre_damping"] * height_rate, 0.0), 0.0
            )
            out.append((height, height_rate, spin_rate, rates[index][0], normal))
        return out

    def loads(t, qdot):
        brake = braking_envelope(t, p)
        front = -brake * jnp.tanh(qdot[4]) - p["bearing_coefficient"] * qdot[4] * jnp.abs(qdot[4])
        rear = driving_torque(t, p) - brake * jnp.tanh(qdot[5]) - p["bearing_coefficient"] * qdot[5] * jnp.abs(qdot[5])
        return front, rear

    def contact_force_map(q, qdot, t, forces):
        """Generalized force of world forces at the two contact points (on the wheels)."""

        def material(v):
            (positions, R), (rates, R_dot) = jax.jvp(lambda q_: _poses(q_, p, hinges), (q,), (v,))
            velocities = []
            for index in (2, 4):
                S = R_dot[index] @ R[index].T  # [omega]x in world components
                omega = jnp.array([S[2, 1] - S[1, 2], S[0, 2] - S[2, 0], S[1, 0] - S[0, 1]]) / 2.0
                contact = positions[index] - jnp.array([0.0, 0.0, positions[index][2]])
                velocities.append(rates[index] + jnp.cross(omega, contact - positions[index]))
            return jnp.stack(velocities)

        _, pullback = jax.vjp(material, qdot)
        return pullback(forces)[0]

    def force(q, qdot, t, p_):
        front, rear = loads(t, qdot)
        drag = -0.5 * p["air_density"] * p["frontal_area"] * p["drag_coefficient"] * qdot[0] * jnp.abs(qdot[0])
        generalized = jnp.array(
            [
                drag,
                0.0,
                0.0,
                -k_t * (q[3] - rest["front"]) - c_t * qdot[3],
                front,
                rear,
                -k_t * (q[6] - rest["rear"]) - c_t * qdot[6],
            ]
        )
        (_, _, _, _, n_f), (_, _, _, _, n_r) = contact_state(q, qdot, t, p_)
        normals = jnp.array([[0.0, 0.0, n_f], [0.0, 0.0, n_r]])
        return generalized + contact_force_map(q, qdot, t, normals)

    masses = jnp.array([p["chassis_mass"], p["arm_mass"], p["wheel_mass"], p["arm_mass"], p["wheel_mass"]])
    I_c, ma, mw = p["chassis_pitch_inertia"], p["arm_mass"], p["wheel_mass"]
    chassis_inertia = jnp.diag(jnp.array([0.3 * I_c, I_c, I_c]))
    arm_inertia = jnp.diag(jnp.array([0.01, ma * L * L / 12, ma * L * L / 12]))
    wheel_inertia = jnp.diag(jnp.array([mw * r * r / 4, mw * r * r / 2, mw * r * r / 4]))
    inertias = jnp.stack([chassis_inertia, arm_inertia, wheel_inertia, arm_inertia, wheel_inertia])
    system = MinimalSystem(
        "half-car (minimal coordinates)",
        COORDINATES,
        (),
        pose,
        lambda *a: jnp.zeros(0),
        masses=masses,
        inertias=inertias,
        force=force,
        gravity=(0.0, 0.0, -p["gravity"]),
        parameters={"unused": 0.0},
    )

    def mu_of(t):
        return (
            p["mu_low"] + (p["mu_high"] - p["mu_low"]) * jnp.tanh((t - p["slippery_time"]) / p["slippery_width"]) ** 4
        )

    def demand(q, qdot, t):
        front, rear = loads(t, qdot)
        states = contact_state(q, qdot, t, None)
        brake = braking_envelope(t, p)
        torques = (
            jnp.abs(brake * jnp.tanh(qdot[4])),
            jnp.abs(driving_torque(t, p)) + jnp.abs(brake * jnp.tanh(qdot[5])),
        )
        ratios = [torque / jnp.maximum(mu_of(t) * state[4] * state[0], 1e-9) for torque, state in zip(torques, states)]
        return states, ratios

    def constraint(q, qdot, t, p_):
        states = contact_state(q, qdot, t, p_)
        return jnp.array([state[3] - state[2] * state[0] for state in states])

    def weights(q, qdot, t, p_):
        _, ratios = demand(q, qdot, t)
        return jnp.array([1.0 - jnp.tanh(p["k_s"] * ratio / 3.0) ** 2 for ratio in ratios])

    def nonideal(q, qdot, t, p_):
        states, ratios = demand(q, qdot, t)
        forces = []
        for state, ratio in zip(states, ratios):
            slip = state[2] * state[0] - state[3]
            forces.append(
                jnp.array([mu_of(t) * state[4] * jnp.tanh(p["k_F"] * ratio / 3.0) * jnp.tanh(slip), 0.0, 0.0])
            )
        return contact_force_map(q, qdot, t, jnp.stack(forces))

    model = UdwadiaKalaba(system, constraint, weights, nonideal, gamma=p["uk_gamma"], weight_scale=total)
    q0 = np.array([0.0, z_chassis, 0.0, 0.0, 0.0, 0.0, 0.0])
    return model, np.concatenate([q0, np.zeros(7)]), p


def run_engine(torque_max: float, friction: str = "coulomb", t_end: float | None = None, **parameters):
    """The complementarity engine on the car; returns (trajectory, scene, CPU seconds)."""
    import time

    from lcpdyn.stepper import Simulation

    scene = build(torque_max=torque_max, **parameters)
    start = time.process_time()
    trajectory = Simulation(
        scene.model, scene.friction(friction), scene.dt, position_update="symplectic", normal_force_iterations=1
    ).run(t_end or scene.t_end)
    return trajectory, scene, time.process_time() - start


def run_udwadia_kalaba(torque_max: float, t_end: float = 12.0, samples_per_second: int = 100, **parameters) -> dict:
    """The Udwadia–Kalaba car: times, speed, wheel rim speeds (omega r_eff), rear traction
    (constraint force + sliding friction, N), rear mu N, CPU seconds."""
    import time

    from lcpdyn.precision import float64

    model, x0, p = udwadia_kalaba(torque_max=torque_max, **parameters)
    start = time.process_time()
    t, x = model.simulate(x0, t_end, samples=int(t_end * samples_per_second) + 1)
    cpu = time.process_time() - start
    hinges, *_ = _geometry(p)
    params = model.system.params()

    def sample(state, time_):
        positions, _ = _poses(state[:7], p, hinges)
        lam, C = model.multipliers(state, time_, params)
        qd = state[7:]
        spins = jnp.array([qd[2] + qd[3] + qd[4], qd[2] + qd[6] + qd[5]])
        return positions[jnp.array([2, 4]), 2], spins, lam, C

    with float64():
        heights, spins, lam, C = jax.jit(jax.vmap(sample))(jnp.asarray(x), jnp.asarray(t))
    heights, spins, lam = np.asarray(heights), np.asarray(spins), np.asarray(lam)
    rear_height = heights[:, 1]
    normal = np.maximum(
        p["tyre_stiffness"] * (p["wheel_radius"] - rear_height) - p["tyre_damping"] * np.gradient(rear_height, t), 0.0
    )
    mu = np.array([grip(ti, p) for ti in t])
    return {
        "t": t,
        "speed": x[:, 7],
        "front_rim": spins[:, 0] * heights[:, 0],
        "rear_rim": spins[:, 1] * heights[:, 1],
        "rear_constraint_force": lam[:, 1],
        "rear_mu_normal": mu * normal,
        "cpu_s": cpu,
    }


def plot_formulations(rows: list[dict], path):
    """Per driving torque (one row of panels): car and wheel-rim speeds, and the rear traction
    against mu N, from the complementarity engine (solid) and the Udwadia–Kalaba model (dashed),
    with the slippery stretch (Eq. 36) and the braking pulse (Eq. 35) shaded (cf. Ikoki 2022 Figs.
    6-9). ``rows``: dicts with torque, trajectory, parameters, speed, front_rim, rear_rim, traction,
    mu_normal (engine, per step) and uk (:func:`run_udwadia_kalaba`). Writes ``path``; returns the
    (closed) Figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from lcpdyn.plotting import run_settings

    fig, axes = plt.subplots(len(rows), 2, figsize=(14, 3.9 * len(rows) + 1.2), squeeze=False, sharex=True)
    for i, row in enumerate(rows):
        t, p, uk = row["trajectory"].t, row["parameters"], row["uk"]
        mu = np.array([grip(x, p) for x in t])
        slippery = mu < 0.5 * (p["mu_high"] + p["mu_low"])
        for ax in axes[i]:
            ax.fill_between(
                t,
                0,
                1,
                where=slippery,
                transform=ax.get_xaxis_transform(),
                color="C8",
                alpha=0.15,
                lw=0,
                label="slippery stretch: μ(t) below the mean of μ_high, μ_low (Eq. 36)",
            )
            ax.axvspan(
                p["brake_start"],
                p["brake_start"] + p["brake_duration"],
                color="0.5",
                alpha=0.12,
                lw=0,
                label=f"braking pulse, {p['brake_torque']:g} N m (Eq. 35)",
            )
            ax.grid(alpha=0.3)
        ax = axes[i, 0]
        ax.plot(t, row["speed"], color="k", lw=2.0, zorder=3, label="car speed (engine)")
        ax.plot(
            t,
            row["front_rim"],
            color="C0",
            ls="-.",
            lw=1.2,
            zorder=5,
            label="front rim speed ωr (engine; on the car speed while the front wheel rolls)",
        )
        ax.plot(t, row["rear_rim"], color="C3", lw=1.2, zorder=4, label="rear rim speed ωr (engine)")
        ax.plot(
            uk["t"],
            uk["speed"],
            color="0.45",
            ls="--",
            lw=1.6,
            zorder=6,
            label="car speed (Udwadia–Kalaba; dashed over the engine's)",
        )
        ax.plot(
            uk["t"], uk["front_rim"], color="C0", ls=":", lw=1.6, zorder=7, label="front rim speed (Udwadia–Kalaba)"
        )
        ax.plot(uk["t"], uk["rear_rim"], color="C3", ls="--", lw=1.2, zorder=6, label="rear rim speed (Udwadia–Kalaba)")
        ax.set_ylabel("speed (m/s)")
        ax.set_title(
            f"T_max = {row['torque']:g} N m (Eq. 34): car and wheel-rim speeds (cf. Ikoki 2022 Figs. 6–7, 9)",
            fontsize=10,
        )
        ax = axes[i, 1]
        ax.plot(t, row["mu_normal"], color="k", lw=1.8, zorder=3, label="±μ N, rear wheel (engine)")
        ax.plot(t, -row["mu_normal"], color="k", lw=1.8, zorder=3)
        ax.plot(
            t,
            row["traction"],
            color="C3",
            lw=1.0,
            zorder=5,
            label="rear traction F_x (engine; on ±μ N while the rear wheel spins or locks)",
        )
        ax.plot(
            uk["t"],
            uk["rear_mu_normal"],
            color="0.45",
            ls="--",
            lw=1.6,
            zorder=4,
            label="±μ N, rear wheel (Udwadia–Kalaba; dashed over the engine's)",
        )
        ax.plot(uk["t"], -uk["rear_mu_normal"], color="0.45", ls="--", lw=1.6, zorder=4)
        ax.plot(
            uk["t"],
            uk["rear_constraint_force"],
            color="C3",
            ls="--",
            lw=1.2,
            zorder=6,
            label="rear constraint force (Udwadia–Kalaba)",
        )
        ax.set_ylabel("longitudinal force (N)")
        ax.set_title(
            f"T_max = {row['torque']:g} N m: rear traction against the friction limit μ N (cf. Ikoki 2022 Fig. 8)",
            fontsize=10,
        )
    for ax in axes[-1]:
        ax.set_xlabel("time t (s)")
    for j in range(2):
        handles, labels = axes[0, j].get_legend_handles_labels()
        fig.legend(
            handles, labels, fontsize=8, ncol=1, frameon=False, loc="lower center", bbox_to_anchor=(0.27 + 0.5 * j, 0.0)
        )
    fig.suptitle(
        "half car with traction saturation (Ikoki 2022 Secs. 3–4; our parameters, their Table 1 is lost)\n"
        "engine: " + run_settings(rows[0]["trajectory"].parameters) + "; Udwadia–Kalaba: SciPy integration, "
        "Baumgarte rate 20 /s",
        fontsize=10.5,
    )
    fig.tight_layout(rect=(0, 1.25 / (3.9 * len(rows) + 1.2) + 0.03, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return fig


def report(out_dir, torques=(150.0, 550.0, 700.0)) -> dict:
    """Both formulations at each T_max (cf. Ikoki 2022 Figs. 6-9): wheel speeds, traction against
    mu N, the bound check, CPU time; writes ``half-car-*.png``."""
    import os

    numbers = {}
    rows = []
    for torque in torques:
        trajectory, scene, cpu = run_engine(torque)
        p = scene.parameters
        mu = np.array([grip(t - scene.dt, p) for t in trajectory.t])
        normal = trajectory.contact_normal_force
        ratio = np.linalg.norm(trajectory.contact_friction_force, axis=2) / (mu[:, None] * normal)
        front, rear = wheel_speeds(trajectory)
        speed = trajectory.velocity[:, 0, 0]
        radius_front = trajectory.position[:, 2, 2]
        radius_rear = trajectory.position[:, 4, 2]
        uk = run_udwadia_kalaba(torque)
        saturated = np.abs(traction(trajectory)) >= 0.999 * mu * normal[:, 1]
        numbers[f"T_max={torque:g}"] = {
            "engine_cpu_s": cpu,
            "uk_cpu_s": uk["cpu_s"],
            "engine_max_friction_over_mu_N": float(np.nanmax(ratio)),
            "engine_rear_max_spin_excess_m_per_s": float(np.max(rear * radius_rear - speed)),
            "engine_front_max_slip_m_per_s": float(np.max(np.abs(front * radius_front - speed))),
            "engine_traction_saturated_s": float(saturated.sum() * scene.dt),
            "engine_final_speed": float(speed[-1]),
            "uk_rear_max_spin_excess_m_per_s": float(np.max(uk["rear_rim"] - uk["speed"])),
            "uk_front_max_slip_m_per_s": float(np.max(np.abs(uk["front_rim"] - uk["speed"]))),
            "uk_final_speed": float(uk["speed"][-1]),
        }
        rows.append(
            {
                "torque": torque,
                "trajectory": trajectory,
                "parameters": p,
                "speed": speed,
                "front_rim": front * radius_front,
                "rear_rim": rear * radius_rear,
                "traction": traction(trajectory),
                "mu_normal": mu * normal[:, 1],
                "uk": uk,
            }
        )
    plot_formulations(rows, os.path.join(out_dir, "half-car-formulations.png"))
    return numbers
