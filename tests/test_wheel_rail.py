"""The wheel–rail contact element (lcpdyn.wheel_rail): with no yaw it finds the contact of the
planar geometry (lcpdyn.wheelset_geometry, an independent implementation); a hollow tread on a
flat rail (a torus on a plane) and a cone on a circular head (a cone on a cylinder) against
their closed forms; through the engine's Model, the gap's Jacobian N equals the derivative of the
gap (exact, JAX) and central differences at yawed, rolled poses -- the contact point is
stationary -- and N, D are the normal and tangential material velocity of the contact point."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lcpdyn import Model, RigidBody, wheel_rail
from lcpdyn.contact import Plane
from lcpdyn.kernels import update_positions
from lcpdyn.precision import float64
from lcpdyn.profiles import Profile, circular_rail, conical_wheel, s1002, uic60
from lcpdyn.rotation import np_rotation_matrix
from lcpdyn.wheel_rail import WheelRailContact
from lcpdyn.wheelset_geometry import TrackPlacement, WheelsetGeometry
from tests.engine_helpers import readme_example


def rotation(roll=0.0, yaw=0.0, spin=0.0):
    """R = Rz(yaw) Rx(roll) Ry(spin): the wheelset's yaw, roll and spin about its axle (y)."""
    c, s = math.cos, math.sin
    Rz = np.array([[c(yaw), -s(yaw), 0], [s(yaw), c(yaw), 0], [0, 0, 1]])
    Rx = np.array([[1, 0, 0], [0, c(roll), -s(roll)], [0, s(roll), c(roll)]])
    Ry = np.array([[c(spin), 0, s(spin)], [0, 1, 0], [-s(spin), 0, c(spin)]])
    return Rz @ Rx @ Ry


def quaternion(R):
    w = math.sqrt(max(0.0, 1 + R[0, 0] + R[1, 1] + R[2, 2])) / 2
    return np.array([w, (R[2, 1] - R[1, 2]) / (4 * w), (R[0, 2] - R[2, 0]) / (4 * w), (R[1, 0] - R[0, 1]) / (4 * w)])


def wheelset(geometry, position=(0.0, 0.0, 0.46), R=None, velocity=(0, 0, 0), omega=(0, 0, 0)):
    """A wheelset body (the paper's mass and inertias) on the two rails of ``geometry``."""
    R = np.eye(3) if R is None else R
    model = Model()
    body = model.add_body(RigidBody("wheelset", 1887.0, (1000.0, 100.0, 1000.0), position, quaternion(R),
                                    velocity=velocity, angular_velocity=omega))  # fmt: skip
    for side, sign in ((0, 1.0), (1, -1.0)):
        model.add_contact(WheelRailContact(body, Plane(), 0.3, wheel=geometry.wheels[side],
                                           rail=geometry.rails[side], tape=sign * geometry.tape))  # fmt: skip
    return model


@pytest.fixture(scope="module")
def s1002_uic60():
    return WheelsetGeometry(s1002(0.46), uic60(), TrackPlacement(cant=1 / 40))


@pytest.mark.parametrize(
    "pose", [(0.0, 0.46, 0.0), (0.002, 0.4601, 0.001), (-0.003, 0.459, -0.002), (0.005, 0.46, 0.0)]
)
def test_without_yaw_the_contact_is_the_planar_one(s1002_uic60, pose):
    y, z, roll = pose
    model = wheelset(s1002_uic60, (0.3, y, z), rotation(roll=roll, spin=0.7))  # spin changes nothing
    k = model.compile()(*model.initial_state(), 0.0)
    for side in (0, 1):
        planar = s1002_uic60.contact(side, (y, z), roll)
        assert k.gap[side] == pytest.approx(planar.gap, abs=1e-14)
        # two independent solvers of a nearly conformal contact (rho_w 0.39 m on rho_r 0.30 m at 1/40), each
        # converged to its own rounding: location and normal agree to 2e-11 (the gap, second order in them, 1e-14)
        assert k.point[side][1:] == pytest.approx(planar.point + planar.gap * planar.normal, abs=1e-10)  # P = Q + g n
        assert k.normal[side][1:] == pytest.approx(planar.normal, abs=1e-10) and k.normal[side][0] == 0.0
        assert k.tangent[side, 0] == pytest.approx([1, 0, 0], abs=1e-15)  # a_r: along the track


def test_a_crowned_tread_on_a_flat_rail_is_a_torus_on_a_plane():
    """A crowned tread (a convex circular profile: the outer half of a torus with tube radius ρ
    round the circle of radius r_c at y_c along the axle) on a flat rail: the gap to the plane
    (normal n0 = z) is x_z + y_c e_z - r_c sqrt(1 - e_z^2) - ρ, e the axle. (A hollow tread on a
    flat rail touches at its edges, where no closed form is needed.)"""
    rho, y_c, r_c = 0.2, 0.01, 0.3
    y = np.linspace(-0.06, 0.08, 141)
    wheel = Profile.from_points(y, r_c + np.sqrt(rho**2 - (y - y_c) ** 2))
    flat = Profile.from_points(np.linspace(-0.3, 0.3, 9), np.zeros(9))
    rng = np.random.default_rng(3)
    for _ in range(6):
        roll, yaw, spin = rng.uniform(-0.05, 0.05), rng.uniform(-0.05, 0.05), rng.uniform(-3, 3)
        R = rotation(roll, yaw, spin)
        x = np.array([0.1, rng.uniform(-0.01, 0.01), 0.51])
        model = Model()
        body = model.add_body(RigidBody("wheel", 500.0, (40.0, 80.0, 40.0), x, quaternion(R)))
        model.add_contact(WheelRailContact(body, Plane(), 0.3, wheel=wheel, rail=flat, tape=0.0))
        k = model.compile()(*model.initial_state(), 0.0)
        e_z = (R @ [0, 1, 0])[2]
        expected = x[2] + y_c * e_z - r_c * math.sqrt(1 - e_z**2) - rho
        assert k.gap[0] == pytest.approx(expected, abs=1e-12)
        assert k.normal[0] == pytest.approx([0, 0, 1], abs=1e-15)


def test_a_cone_on_a_circular_head_is_a_cone_on_a_cylinder():
    """Axle horizontal, rolled by φ: the cone's section through the axle is its lowest generator,
    the line r = r0 - γ y_w rolled and placed; the gap is that line's distance from the head's
    axis less ρ_r."""
    gamma, rho_r = 0.05, 0.3
    wheel, head = conical_wheel(0.46, gamma, 0.03), circular_rail(rho_r, 0.03)
    for y, roll in ((0.0, 0.0), (0.004, 0.003), (-0.006, -0.002)):
        model = Model()
        body = model.add_body(RigidBody("wheel", 500.0, (40.0, 80.0, 40.0), (0.0, y, 0.47), quaternion(rotation(roll))))
        model.add_contact(WheelRailContact(body, Plane(), 0.3, wheel=wheel, rail=head, tape=0.0))
        k = model.compile()(*model.initial_state(), 0.0)
        c, s = math.cos(roll), math.sin(roll)
        axle, down = np.array([c, s]), np.array([s, -c])  # in (y, z): the axle and the radial direction down
        origin = np.array([y, 0.47]) + 0.46 * down  # the generator's point at y_w = 0
        direction = axle - gamma * down
        direction /= np.linalg.norm(direction)
        centre = np.array([0.0, -rho_r])
        offset = centre - origin
        distance = abs(offset[0] * direction[1] - offset[1] * direction[0])
        assert k.gap[0] == pytest.approx(distance - rho_r, abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_N_is_the_gap_rate_and_D_the_material_velocity(s1002_uic60, seed):
    rng = np.random.default_rng(seed)
    R = rotation(rng.uniform(-0.003, 0.003), rng.uniform(-0.01, 0.01), rng.uniform(-3, 3))
    x = (rng.uniform(-1, 1), rng.uniform(-0.004, 0.004), 0.46 + rng.uniform(-1e-4, 1e-4))
    model = wheelset(s1002_uic60, x, R, rng.normal(size=3), rng.normal(size=3))
    evaluate = model.compile()
    q, v = model.initial_state()
    k = evaluate(q, v, 0.0)
    with float64():
        exact = np.asarray(model.gap_jacobian(q))
    np.testing.assert_allclose(k.N, exact, rtol=1e-9, atol=1e-12)  # the point is stationary
    for _ in range(3):
        dv = rng.normal(size=6)
        eps = 1e-6
        rate = evaluate(update_positions(q, dv, eps), v, 0.0).gap - evaluate(update_positions(q, dv, -eps), v, 0.0).gap
        np.testing.assert_allclose(k.N @ dv, rate / (2 * eps), rtol=1e-6, atol=1e-9)
    omega = np_rotation_matrix(q[3:7]) @ v[3:6]
    for i in range(2):
        velocity = v[:3] + np.cross(omega, k.point[i] - q[:3])
        np.testing.assert_allclose(k.N[i] @ v, k.normal[i] @ velocity, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(k.D[2 * i : 2 * i + 2] @ v, k.tangent[i] @ velocity, rtol=1e-10, atol=1e-12)


def test_bad_input_is_named():
    body = RigidBody("w", 1.0, (1.0, 1.0, 1.0), (0, 0, 0.5))
    wheel, rail = conical_wheel(0.46, 0.05), circular_rail(0.3)
    with pytest.raises(TypeError, match="Profile"):
        WheelRailContact(body, Plane(), 0.3, wheel=None, rail=rail)
    with pytest.raises(ValueError, match="axis"):
        WheelRailContact(body, Plane(), 0.3, wheel=wheel, rail=rail, axis=(0, 0, 0))
    with pytest.raises(ValueError, match="tape"):
        WheelRailContact(body, Plane(), 0.3, wheel=wheel, rail=rail, tape=float("nan"))
    with pytest.raises(ValueError, match="mu"):
        WheelRailContact(body, Plane(), -0.3, wheel=wheel, rail=rail)


def test_readme_wheel_rail_example_runs(capsys):
    k = readme_example("### The wheel–rail contact element")["k"]
    assert k.gap == pytest.approx([1.82e-4, 1.82e-4], abs=1e-6)
    assert abs(k.normal[0, 1]) == pytest.approx(0.0243, abs=1e-4)  # the contact angle, ~1.4 degrees


def test_a_contact_point_not_found_is_not_a_finite_gap():
    """The rail beyond the end of the wheel's profile: no point satisfies the conditions on both
    profiles, and the gap is NaN (the stepper stops on it, naming the contact) -- never a point
    off the profile taken as the contact."""
    wheel, head = conical_wheel(0.46, 0.05, 0.03), circular_rail(0.3, 0.03)
    model = Model()
    body = model.add_body(RigidBody("wheel", 500.0, (40.0, 80.0, 40.0), (0.0, 0.2, 0.47)))
    model.add_contact(WheelRailContact(body, Plane(), 0.3, wheel=wheel, rail=head, tape=0.0))
    k = model.compile()(*model.initial_state(), 0.0)
    assert np.isnan(k.gap[0])
    from lcpdyn import Simulation
    from lcpdyn.stepper import SimulationError

    with pytest.raises(SimulationError, match="WheelRailContact.*gap = nan"):
        Simulation(model, "regularized", 1e-3).run(0.01)


# --- two contact pairs per wheel: tread and compliant flange (Schwab & Meijaard 2002 §1) -------


def paired_wheelset(geometry, position, R):
    """The wheelset with each wheel's tread and flange as separate elements, as
    scenes.wheelset_klingel builds it with a flange law (contacts 0, 1 treads; 2, 3 flanges)."""
    from lcpdyn.compliance import SpringDamperLaw
    from scenes.wheelset_klingel import wheelset as scene_wheelset

    p = {"amplitude": 0.0, "speed": 10.0, "mass": 1887.0, "mu": 0.3}
    model = scene_wheelset(geometry, p, flange_law=SpringDamperLaw(2e7, 2e4))
    model.bodies[0].position = np.asarray(position, float)
    model.bodies[0].orientation = quaternion(R)
    return model


def test_flange_split_of_s1002_leaves_every_point_a_contact_jumps_to_on_the_flange_side():
    """The split (12° on the root, s = 64.7 mm) separates, at slants 1/40 and 1/20, the
    centred wheelset's single-point contacts reached continuously from centred running (on the
    tread side) from those it jumps to (root and face, on the flange side), with no contact
    point within 2 mm of it."""
    from lcpdyn.wheel_rail import flange_split

    wheel = s1002(0.46)
    split, side = flange_split(wheel)
    assert side == -1 and 0.045 < split < 0.07  # between the face's steepest point (70°, s = 45 mm) and the tread
    d = wheel.derivative(split)
    assert math.degrees(math.atan2(abs(d[1]), abs(d[0]))) == pytest.approx(12.0, abs=0.05)
    for cant in (1 / 40, 1 / 20):
        track = WheelsetGeometry(s1002(0.46), uic60(), TrackPlacement(cant=cant))
        s = np.array([track.equilibrium(y)[2][0].s for y in np.arange(0.0, 9.01e-3, 0.25e-3)])
        tread = s > split
        first_off = int(np.argmin(tread))
        assert 0 < first_off and tread[:first_off].all() and not tread[first_off:].any()  # one crossing
        assert s[first_off - 1] - s[first_off] > 0.01  # by a jump of over 10 mm along the profile
        assert np.min(np.abs(s - split)) > 0.002
    mirrored, side = flange_split(wheel.mirrored())
    assert side == 1 and mirrored == pytest.approx(wheel.length - split, abs=2 * wheel.length / 20000)
    assert flange_split(wheel, angle=45.0)[0] == pytest.approx(0.0526, abs=2e-4)
    with pytest.raises(ValueError, match="no flange"):
        flange_split(conical_wheel(0.46, 0.05))


@pytest.mark.parametrize("y", [0.0, 0.002, 0.004])
def test_the_tread_part_finds_the_whole_profiles_point_and_the_flange_part_is_apart(s1002_uic60, y):
    """Shifts where the contact lies on the tread: the tread element limited to its part gives the
    whole-profile element's (and the planar geometry's) contact; the flange element is apart, never
    closer than the clearance between the placed flange part and rail profiles measured here by
    brute force (dense samples): beyond CLEAR inactive with a finite gap within 0.1 mm of it;
    within CLEAR inactive (nearest at its split end, where the tread's part continues) or at its
    own point (at 4 mm the root, 0.14 mm away, where the contact will jump)."""
    from lcpdyn.wheel_rail import CLEAR

    z, roll, contacts = s1002_uic60.equilibrium(y)
    R = rotation(roll=roll, spin=0.3)
    model_whole = wheelset(s1002_uic60, (0.2, y, z), R)
    model_paired = paired_wheelset(s1002_uic60, (0.2, y, z), R)
    k_whole = model_whole.compile()(*model_whole.initial_state(), 0.0)
    k = model_paired.compile()(*model_paired.initial_state(), 0.0)
    for side in (0, 1):
        assert k.gap[side] == pytest.approx(k_whole.gap[side], abs=1e-13)
        np.testing.assert_allclose(k.point[side], k_whole.point[side], atol=1e-10)
        assert k.gap[side] == pytest.approx(contacts[side].gap, abs=1e-13)
    for side in (0, 1):
        flange = model_paired.contacts[2 + side]
        lo, hi = flange.wheel_range
        s = np.linspace(lo, hi, 4001)
        wheel_points = s1002_uic60._wheel_point(side, s, (y, z), roll)
        rail = s1002_uic60.rails[side]
        rail_points = rail.point(np.linspace(0.0, rail.length, 40001))
        brute = np.min(np.linalg.norm(wheel_points[:, None, :] - rail_points[None, ::10, :], axis=2))
        assert np.isfinite(k.gap[2 + side]) and k.gap[2 + side] >= brute - 1e-5
        if brute > CLEAR:
            assert k.gap[2 + side] == pytest.approx(brute, abs=1e-4)


@pytest.mark.parametrize("y", [0.005, 0.008])
def test_past_the_jump_the_flange_pair_takes_the_single_points_contact(s1002_uic60, y):
    """At a 5 mm shift (slant 1/40) the rigid single-point contact has jumped to the left
    flange's root (17°), at 8 mm to its face (55°): the flange element finds that point (gap 0,
    the planar geometry's normal), the left tread element has no point touching (its own local
    minimum is apart, or its part is inactive), the right tread carries."""
    z, roll, contacts = s1002_uic60.equilibrium(y)
    assert math.degrees(abs(contacts[0].angle)) > 12.0  # the single point is past the split
    model = paired_wheelset(s1002_uic60, (0.0, y, z), rotation(roll=roll))
    k = model.compile()(*model.initial_state(), 0.0)
    assert k.gap[2] == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(k.normal[2][1:], contacts[0].normal, atol=1e-9)
    assert k.gap[0] > 1e-5
    assert k.gap[1] == pytest.approx(0.0, abs=1e-12)
    assert k.gap[3] > 1e-3


def test_a_nearly_conformal_tread_contact_where_plain_newton_overshoots():
    """A state of the hunting wheelset at slant 1/20 (V = 131 m/s, 5.8 mm shift, tread limited to
    its part): the tread contact is nearly conformal, a whole Newton step from the start
    overshoots (eight plain iterations ended with the slope equation at 2e-6); the damped
    iterations find it (a finite gap is a point meeting both tolerances)."""
    from scenes import wheelset_hunting

    scene = wheelset_hunting.build(cant=1 / 20, yaw_stiffness=816e3, speed=131.0, amplitude=5e-3,
                                   flange_stiffness=2e7, flange_damping=2e4)  # fmt: skip
    body = scene.model.bodies[0]
    body.position = np.array([38.514, 5.785227678883446e-03, 4.597583211200746e-01])
    body.orientation = np.array([-7.2199172317148907e-01, -1.0272413080779971e-04, -6.9190168271352737e-01,
                                 5.0772100693934495e-05])  # fmt: skip
    k = scene.model.compile()(*scene.model.initial_state(), 0.0)
    assert np.isfinite(k.gap[0]) and k.gap[0] == pytest.approx(-2.53e-6, abs=1e-8)


def _hunting_state(position, quaternion_wxyz):
    """The limit-cycle wheelset of scenes.wheelset_hunting (slant 1/20, 131 m/s, flange pairs)
    placed at a recorded pose; its kinematics at that pose."""
    from scenes import wheelset_hunting

    scene = wheelset_hunting.build(cant=1 / 20, yaw_stiffness=816e3, speed=131.0, amplitude=5e-3,
                                   flange_stiffness=1e9, flange_damping=1e5)  # fmt: skip
    body = scene.model.bodies[0]
    body.position = np.array(position)
    body.orientation = np.array(quaternion_wxyz)
    return scene.model.compile()(*scene.model.initial_state(), 0.0)


def test_a_tread_start_where_uic60s_arcs_meet():
    """A limit-cycle state (t = 1.368 s of a run with a 3e8 N/m flange): the tread point lies
    where UIC60's R300 and R80 arcs meet (the rail's curvature changes fourfold within 1 mm);
    from a start 0.3 mm away Newton wandered for 11 iterations before converging in 4 more, so
    12 iterations lost the point and stopped the run. 16 find it."""
    k = _hunting_state([179.208, 5.8599416075600106e-03, 4.5975147488084572e-01],
                       [-1.4797835361383624e-01, -7.1013101130071158e-04, 9.8899034015055631e-01,
                        -9.8308556019956946e-05])  # fmt: skip
    assert np.isfinite(k.gap[0]) and k.gap[0] == pytest.approx(-5.7300e-5, abs=1e-9)


@pytest.mark.parametrize(
    "position, quaternion_wxyz, gap",
    [
        ([68.644, -6.732209250650597e-03, 4.598163922042998e-01],
         [3.094619122732421e-01, -1.963146800762168e-03, -9.509096520353836e-01, -5.518811217740781e-04],
         -3.4821959249e-4),
        ([96.678, -6.6932871136841541e-03, 4.5980983250433255e-01],
         [-0.7553586842234967, -0.00119936391172989, -0.6553087552752694, 0.00150165040279189],
         -3.1166454850e-4),
    ],
)  # fmt: skip
def test_the_flange_pair_searches_from_the_envelopes_start_too(position, quaternion_wxyz, gap):
    """Two limit-cycle states with the right wheel on its flange root: from the nearest start
    alone (one grid spacing from the point in s and in u) Newton does not converge; from the
    envelope's start it does. Over a whole 2 s limit cycle the nearest start alone lost 2 of
    2000 flange points, the envelope's alone 39, the two together none."""
    k = _hunting_state(position, quaternion_wxyz)
    assert np.isfinite(k.gap[3]) and k.gap[3] == pytest.approx(gap, abs=1e-12)


def test_bad_ranges_and_starts_are_named():
    body = RigidBody("w", 1.0, (1.0, 1.0, 1.0), (0, 0, 0.5))
    wheel, rail = conical_wheel(0.46, 0.05), circular_rail(0.3)
    for bad in [(0.05, 0.01), (-0.01, 0.05), (0.0, 10.0), "ab", (0.0,)]:
        with pytest.raises(ValueError, match="wheel_range"):
            WheelRailContact(body, Plane(), 0.3, wheel=wheel, rail=rail, wheel_range=bad)
    with pytest.raises(ValueError, match="start"):
        wheel_rail.wheel_rail_frame({}, np.zeros(3), np.eye(3), start="lowest")
