"""Time stepping with contacts that bodies make with each other: the step's complementarity
problem posed for whatever contacts collision detection finds, with every friction model and a
Newton impact law.

One step from (t, q, v) with step h (Peiret 2016 Eqs. 5-7 and 21-31, as
:mod:`lcpdyn.stepper`, with the contact set found anew):

1. **Detection** (:class:`~lcpdyn.collision.CollisionWorld`): the contacts with gap g <= margin
   at q, each between body a and body b (or the world), witness points, normal n (a to b).
2. **Rows** (:mod:`lcpdyn.contact_rows`): per contact the blocks of (n, t1, t2)^T (v_b(p_b) -
   v_a(p_a)) over the two bodies' 6 velocities each (JAX Jacobians of the material velocities).
3. **Free velocity**: v* = M^-1 (M v + h f_app) with the gyroscopic term by the implicit
   midpoint rule (:func:`lcpdyn.kernels.gyroscopic_midpoint`, energy-conserving).
4. **Islands**: bodies joined by contacts (a connected component of the contact graph, the world
   not joining) are one island; each island's problem is posed and solved alone.
5. **The island's problem** with the velocities eliminated (M is block-diagonal: W = H M^-1 H^T,
   the Delassus operator, exact):

   * exact Coulomb (:data:`~lcpdyn.friction.FRICTION_CONTACT`): u = W r + b with
     b = H v* + (e_N, 0, 0) per contact, r in the cone (solved by
     :func:`solvers.friction_contact.solve_friction_contact`);
   * every bounded-LCP friction model (regularized, box, polygonal, continuous, a user's): the
     model's block of Peiret 2016 Eq. (30) for the island's contacts, and Eq. (30) with v+
     eliminated,

         [ N M^-1 N^T        N M^-1 G^T     ] [ h lam_N ]   [ N v* + e_N ]   [ w_N   ]
         [ F M^-1 N^T + P    F M^-1 G^T + C ] [ x_F     ] + [ F v* + c   ] = [ sigma ]

     with lam_N >= 0 and lo <= x_F <= hi complementary to w_N, sigma (solved by
     :func:`solvers.solve`, Júdice–Pires by default). The model's block is asked for with
     D = I over the island's slip rows and the known slips D v (so its size is the island's
     contacts, not the scene's velocities) and multiplied by the island's D: every friction model
     whose rows of a contact are combinations of that contact's two slip rows -- all of
     lcpdyn's -- gives exactly the block it gives for the full D (tested).

   Then v+ = v* + M^-1 H^T r, and q+ = q + h Gamma(q) v+ (symplectic Euler).

Normal rows (drift stabilization as :mod:`lcpdyn.stepper`): u_N+ + e_N >= 0 with e_N = g/h for
g >= 0 (a contact within the margin may close exactly, not pass through) and beta g/h when
penetrating. **Restitution** (Newton's impact law at velocity level, as Anitescu & Potra 1997
and Moreau's impact law with a coefficient): a contact *impacts* in this step when it is closing
faster than ``restitution_threshold`` (u_N- = N v < -v_e, v the velocity at the start of the
step) and closes within the step (g + h u_N- < 0); its row becomes

    u_N+ >= -e u_N-,   i.e.  e_N = min(g/h or beta g/h,  e u_N-),

complementary to its normal impulse, with e in [0, 1] per pair (:class:`ContactProperties`).
With e = 1 a frictionless impact of two bodies keeps their kinetic energy and reverses the
normal relative velocity exactly; with e < 1 it loses (1 - e^2) m_eff u_N-^2 / 2. Impacts slower
than v_e (default 0.01 m/s) are plastic: this is what lets a bouncing ball come to rest (an
infinite number of ever smaller bounces otherwise) and keeps resting contacts, whose u_N- is at
most g h from one step of gravity, from bouncing.

Limits of a Newton law at velocity level with simultaneous impacts. The law is imposed contact by
contact inside one complementarity problem, so several impacts in one step are resolved
together, with the impulses coupled through the bodies' masses. Newton's cradle is the classic
counterexample: a ball striking a row of touching balls should, in the experiment, send the last
ball off with the striker's speed and leave the others at rest -- a sequence of two-body impacts
travelling through the row. The simultaneous law with e = 1 instead distributes the impulse at
once: the touching pairs have u_N- = 0, so their rows ask only that they do not approach, and the
row of touching balls takes the impact as one rigid body of their combined mass. The striker m
against a row of mass k m, elastically: the striker ends at (1 - k)/(1 + k) v and the whole row at
2/(1 + k) v -- (-1/3, 2/3, 2/3) v for 3 balls, (-3/5, 2/5, 2/5, 2/5, 2/5) v for 5 -- kinetic
energy kept, momentum kept, but not the experiment's (0, ..., 0, v).
:func:`scenes.touching.newtons_cradle` and ``tests/test_body_contact.py::test_newtons_cradle``
show it; a small gap between the balls (wider than the distance they travel in one step) turns
the row back into a sequence of two-body impacts, each exact, and the cradle then behaves as in
the experiment.

Friction bounds (bounded-LCP models). Peiret 2016 Eq. (12) bounds the friction impulse by
mu lam_N of the *previous* step. With contacts that come and go this lag is wrong by the whole
force where it matters most: a contact carries no force before an impact (so the impact would
be frictionless), the impact's force is hundreds of times the resting one (so the step after a
bounce would grant a large friction impulse to a contact that has opened), and a new contact has
no history. An island is therefore solved again -- the fixed-point iteration the paper mentions
after Eq. (12) -- when some contact's lam_N+ differs from the lam_N its bound was taken from by
more than ``bound_change`` (default one half) of the larger and its friction is at its bound
(sliding; a new contact, whose bound was 0) or beyond the new one, at most ``bound_passes``
(default 2) more times, and the next pass takes the bound from lam_N+ at those contacts only;
a contact sticking inside both bounds does not count, because the answer solves the problem
with the new bounds as it is, and one whose force moved less keeps its bound as in the paper
(models with two friction unknowns per contact; with more, every contact that moved counts).
Re-bounding only those contacts cut projected Newton's iterations in the second and third
passes by ~20 % on the 500-sphere pour at t = 0.7 s. In steady contact (a resting stack)
the forces hardly change and each step is solved once, as in the paper. In a pile the
iteration does not settle: forces of lightly loaded contacts flip between passes, and every
step pays all its passes (measured on 200 spheres at t = 0.7 s: 29-51 contacts still matter
per pass with this rule, 32-58 with every contact counted; on 500 spheres nearly at rest at
t = 1.0-1.3 s, 150-200 per pass, README "Known limits").
Difference from the paper: this iteration is selective and automatic; ``bound_passes=0`` is the
paper's lag.

Warm starts. Contacts that persist from the previous step (same collider pair, witness point
within ``match_tolerance`` in the first collider's body frame: :meth:`Contacts.match`) keep their
impulse as the starting guess of the exact-cone solvers, their active set for Júdice–Pires, and
-- for the friction models that need it -- their previous normal force (the bound mu lam_N of
Peiret 2016 Eq. 12) and their previous friction force (the bristle state, Eqs. 11-15), both
taken from the previous world impulse projected on the new frame. A persisting contact also
keeps its tangent t1 (projected on the new tangent plane), so the basis of its friction rows does
not jump.

Large islands. An island of more than ``sparse_threshold`` contacts (a pile: one island of 1400
contacts over 500 spheres) is never assembled dense: its problem is kept as compressed sparse
rows over the contacts (:meth:`BodyContactSimulation._solve_island_sparse`) and judged by the
framework's residual computed on the sparse problem (:mod:`solvers.sparse_measure`).

* Bounded-LCP models with two friction rows per contact (regularized, box): the Delassus form of
  Eq. (30). Where its matrix is symmetric (F = G and a diagonal C, as for regularized and box:
  tested on the matrix, not on the model's name), it is the optimality condition of a convex
  quadratic program in the bounds of this pass, solved by Bertsekas' projected Newton method
  (:func:`solvers.sparse_newton.projected_newton_csr`), which decreases the quadratic at every
  iteration; otherwise, or if that does not converge within ``newton_iterations``, the
  primal-dual active-set iteration alternating with block Gauss–Seidel sweeps
  (:mod:`solvers.sparse_gauss_seidel`). The acceptance is Eq. (30) itself, v+ recovered exactly.
* Exact Coulomb: NSGS on the sparse Delassus operator from the warm start (at most
  ``max_sweeps`` sweeps), then, if it stalls, the proximal-point loop around the semismooth
  Alart–Curnier Newton with sparse LU (:func:`solvers.sparse_newton.proximal_point_csr`, at
  most ``proximal_iterations`` outer iterations) from NSGS's iterate. Measured on islands of
  840-1210 contacts of the 500-sphere pour: from 100 sweeps in, NSGS reached 1e-9 within
  1300 more sweeps (0.5-1.9 s) on 7 of 8 and was at 1.5e-5 after 2000 on the eighth, where the
  proximal loop from its iterate converged in 11 outer iterations (1.1 s); started from the
  100-sweep iterate instead (residuals near 1e-3) the proximal loop failed on all 8 (100 outer
  iterations, 12-83 s each): the Coulomb problem is not monotone, and Newton's globalization
  holds only near a solution. Plain Newton's Jacobian is singular on a hyperstatic pile. The
  limit (README, "Known limits"): on some islands NSGS has a slow mode -- 21,300 sweeps to 1e-9
  on 189 contacts of a pour into a narrow bin, 2 % per 2500 sweeps near 1.5e-7 on 1305 contacts
  of the 500-sphere pour -- that the proximal loop does not cure either, and the run stops there.
* Other models (polygonal, continuous: more rows per contact) and a sparse solve that fails take
  the dense island path, recorded as a fallback, up to ``dense_limit`` unknowns; beyond it the
  run stops with a :class:`~lcpdyn.stepper.SimulationError` naming the island.

Every island's answer is judged by the framework's residual (:mod:`solvers.result`) on the island
problem; a failed solve is re-solved with ``fallback_method`` (recorded per step), and if that
fails too the run stops with :class:`~lcpdyn.stepper.SimulationError` carrying the trajectory so
far. Non-finite states stop the run; energy gains are flagged as :mod:`lcpdyn.stepper` does.

A run can stream into an HDF5 file (``run(..., out="pour.h5")``, :mod:`lcpdyn.body_contact_file`)
with the state to continue from; SIGINT and SIGTERM stop it after the step in progress, and
:meth:`BodyContactSimulation.resume` continues an interrupted or killed run to the same result,
bit for bit, as the run that never stopped.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.sparse import block_diag, coo_matrix, csr_matrix
from scipy.sparse.csgraph import connected_components

import solvers
from solvers import friction_contact
from solvers.result import Status

from . import __version__
from .body_contact_file import _CONTACT_ARRAYS, CONTACT_FIELDS, STEP_FIELDS
from .collision import CollisionWorld, Contacts
from .contact_rows import ContactRows, carried_basis, contact_rows
from .detected_contacts import ContactProperties, bounds_moved, pair_entries, properties_of
from .friction import FRICTION_CONTACT, make_friction
from .kernels import bounded_vectors, fill_matrix, gyroscopic_midpoint, kinetic_energy, update_positions
from .model import Model
from .rotation import np_rotation_matrices
from .run.errors import EnergyWarning, RunInterrupted, SimulationError
from .run.signals import StopOnSignal
from .stepper import MIN_DT
from .strategies.methods import accept_or_fallback, choose_methods
from .strategies.sparse_island import (
    SparseSettings,
    friction_block,
    solve_sparse_coulomb,
    solve_sparse_island,
    two_rows,
)
from .trajectory import Health
from .validation import finite_number, nonnegative, positive

__all__ = [
    "ContactProperties",
    "BodyContactSimulation",
    "BodyContactState",
    "BodyContactStep",
    "BodyContactRun",
]


@dataclass(frozen=True, eq=False)
class BodyContactState:
    """Everything a step reads that earlier steps wrote: q (7 nb,), v (6 nb,), t, the steps
    done, and the previous step's contacts (:class:`~lcpdyn.collision.Contacts` or None) with
    their impulses ``impulse`` (k, 3), world vectors (N s), the Júdice–Pires active set per
    contact ``active`` (k, 3) int8 (normal, two friction rows) or None, and their tangents
    ``tangent`` (k, 2, 3) (a persisting contact keeps its friction directions)."""

    q: np.ndarray
    v: np.ndarray
    t: float
    steps_done: int
    contacts: Contacts | None = None
    impulse: np.ndarray | None = None
    active: np.ndarray | None = None
    tangent: np.ndarray | None = None


@dataclass(eq=False)
class BodyContactStep:
    """What one step found and solved (k contacts).

    v : (6 nb,) v+.
    contacts : the step's contacts; ``rows`` their :class:`~lcpdyn.contact_rows.ContactRows`.
    reaction : (k, 3) contact-frame impulses (r_N, r_T1, r_T2) in N s (over h: forces).
    normal_force : (k,) N; friction_force : (k, 3) world, N.
    impact : (k,) bool, the contacts whose row carried the Newton impact law this step.
    status, iterations, residual, fallback : the solves' (worst island; fallback if any island
        needed its fallback method).
    islands : islands solved; largest_island : contacts in the largest.
    work : work of the non-conservative applied loads in the step, h f_nc . (v + v+) / 2 (J).
    timing : wall time (s) of detection, rows (Jacobians), solve and the rest.
    """

    v: np.ndarray
    contacts: Contacts
    rows: ContactRows
    reaction: np.ndarray
    normal_force: np.ndarray
    friction_force: np.ndarray
    impact: np.ndarray
    status: int = int(Status.SOLVED)
    iterations: int = 0
    residual: float = 0.0
    fallback: bool = False
    islands: int = 0
    largest_island: int = 0
    timing: dict = field(default_factory=dict)
    active: np.ndarray | None = None
    work: float = 0.0


class BodyContactSimulation:
    """Time-step a :class:`~lcpdyn.model.Model` whose bodies touch each other and the world
    through the colliders of a :class:`~lcpdyn.collision.CollisionWorld` (module docstring).

    Parameters
    ----------
    model : the bodies and their applied forces (gravity, :class:`~lcpdyn.forces.BodyForce`,
        springs). Plane contacts and bilateral constraints are not taken here yet: fix a
        :class:`~lcpdyn.collision.HalfSpace` in the world instead of a plane contact.
    world : the colliders; its ``bodies`` must be the model's bodies in the model's order.
    friction : a friction model or its name (``"regularized"``, ``"box"``, ``"polygonal"``,
        ``"continuous"``, ``"coulomb"``, or a registered one).
    dt : step h (s).
    contact : the default :class:`ContactProperties` (or a dict of its fields).
    pairs : ``{(x, y): ContactProperties}`` overriding the default for the contacts between x and
        y, each a :class:`~lcpdyn.collision.Collider`, a body or ``None`` (the world); a pair of
        colliders wins over a pair of bodies.
    method, fallback_method, solver_options, tolerance : as :class:`lcpdyn.stepper.Simulation`,
        except that exact Coulomb defaults to the friction-contact method ``auto`` (stacks have
        redundant contacts, where NSGS stalls); islands above ``sparse_threshold`` use NSGS on
        the sparse problem whatever the method.
    stabilization : beta in [0, 1], the share of a penetration removed per step.
    restitution_threshold : v_e (m/s): slower impacts are plastic (module docstring).
    match_tolerance : how far (m) a contact's witness point may move in its body's frame and
        still be the same contact for warm starts (default: the world's margin, at least 1 mm).
    bound_passes, bound_change : at most ``bound_passes`` more solves of an island whose friction
        bounds mu lam_N moved by more than the share ``bound_change`` (module docstring,
        "Friction bounds").
    sparse_threshold, max_sweeps, check_every, newton_iterations, proximal_iterations, dense_limit :
        an island of more contacts than ``sparse_threshold`` is solved on the sparse problem
        (module docstring, "Large islands"): Gauss–Seidel at most ``max_sweeps`` sweeps, its
        residual measured every ``check_every``; projected Newton at most ``newton_iterations``
        iterations per pass (its objective decreases at every one, so a high cap costs only
        where it is needed: the 500-sphere pile nearly at rest took up to 142 at t = 1.3 s), the
        proximal-point loop at most ``proximal_iterations`` outer iterations (0: not used). A
        large island that does
        not converge there falls back to the dense path only up to ``dense_limit`` unknowns (6 per
        body, 3 per contact), and otherwise stops the run with a
        :class:`~lcpdyn.stepper.SimulationError` saying so.
    energy_check, energy_tolerance : as :class:`lcpdyn.stepper.Simulation` ("Run health").
    """

    def __init__(
        self,
        model: Model,
        world: CollisionWorld,
        friction="regularized",
        dt: float = 1e-3,
        *,
        contact=None,
        pairs=None,
        method: str | None = None,
        fallback_method: str | None = "auto",
        solver_options: dict | None = None,
        tolerance: float = 1e-9,
        stabilization: float = 1.0,
        restitution_threshold: float = 0.01,
        match_tolerance: float | None = None,
        bound_passes: int = 2,
        bound_change: float = 0.5,
        sparse_threshold: int = 64,
        max_sweeps: int = 2000,
        check_every: int = 10,
        newton_iterations: int = 500,
        proximal_iterations: int = 50,
        dense_limit: int = 2000,
        energy_check: str = "warn",
        energy_tolerance: float = 1e-3,
    ):
        if not isinstance(model, Model):
            raise TypeError(f"model must be an lcpdyn Model, got {type(model).__name__}")
        if not isinstance(world, CollisionWorld):
            raise TypeError(f"world must be a CollisionWorld, got {type(world).__name__}")
        if model.contacts or model.holonomic or model.nonholonomic:
            kinds = [k for k, x in (("plane contacts", model.contacts), ("holonomic constraints", model.holonomic),
                                    ("non-holonomic constraints", model.nonholonomic)) if x]  # fmt: skip
            raise ValueError(
                f"BodyContactSimulation does not take a model with {' or '.join(kinds)} yet: give the ground "
                "as a HalfSpace collider fixed in the world"
            )
        if len(world.bodies) != len(model.bodies) or any(a is not b for a, b in zip(world.bodies, model.bodies)):
            raise ValueError("the collision world's bodies must be the model's bodies, in the model's order")
        if not model.bodies:
            raise ValueError("the model has no bodies")
        self.model, self.world = model, world
        self.friction = make_friction(friction)
        if getattr(self.friction, "rolling_kinematics", False):
            raise ValueError(
                f"friction model {self.friction.name!r} needs the spin and rolling speed of wheel contacts "
                "(lcpdyn.stepper.Simulation gives them); body-to-body contacts have neither"
            )
        self.dt = positive("dt", dt)
        if self.dt < MIN_DT:
            raise ValueError(f"dt = {dt!r} s is below the smallest step size MIN_DT = {MIN_DT:g} s")
        self.coulomb = self.friction.formulation == FRICTION_CONTACT
        # exact Coulomb defaults to "auto" here (Newton, then the proximal-point loop): body-contact
        # scenes are stacks with redundant contacts, where NSGS (the friction model's default)
        # stalls -- measured: 1000 sweeps short of 1e-9 on the 10-box tower, whose step auto solves
        default = "auto" if self.coulomb else self.friction.default_method
        self.method, self.fallback_method = choose_methods(self.friction, method or default, fallback_method)
        self.solver_options = dict(solver_options or {})
        known = (
            friction_contact.options_fields(self.method)
            if self.coulomb
            else tuple(f.name for f in dataclasses.fields(solvers.METHODS[self.method].Options))
        )
        unknown = sorted(set(self.solver_options) - set(known))
        if unknown:  # checked here, not at the first contact
            raise ValueError(f"unknown solver_options {unknown} for method {self.method!r}; known: {sorted(known)}")
        self.tolerance = positive("tolerance", tolerance)
        self.stabilization = finite_number("stabilization", stabilization)
        if not 0.0 <= self.stabilization <= 1.0:
            raise ValueError(f"stabilization must be in [0, 1], got {stabilization!r}")
        self.restitution_threshold = nonnegative("restitution_threshold", restitution_threshold)
        self.match_tolerance = (
            max(world.margin, 1e-3) if match_tolerance is None else nonnegative("match_tolerance", match_tolerance)
        )
        if isinstance(bound_passes, bool) or not isinstance(bound_passes, int) or bound_passes < 0:
            raise ValueError(f"bound_passes must be an integer >= 0, got {bound_passes!r}")
        self.bound_passes = bound_passes
        self.bound_change = nonnegative("bound_change", bound_change)
        for name, value, least in (("sparse_threshold", sparse_threshold, 0), ("max_sweeps", max_sweeps, 1),
                                   ("check_every", check_every, 1), ("newton_iterations", newton_iterations, 0),
                                   ("proximal_iterations", proximal_iterations, 0)):  # fmt: skip
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"{name} must be an integer >= {least}, got {value!r}")
        self.sparse_threshold, self.max_sweeps, self.check_every = sparse_threshold, max_sweeps, check_every
        self.newton_iterations, self.proximal_iterations = newton_iterations, proximal_iterations
        if isinstance(dense_limit, bool) or not isinstance(dense_limit, int) or dense_limit < 1:
            raise ValueError(f"dense_limit must be an integer >= 1, got {dense_limit!r}")
        self.dense_limit = dense_limit
        if energy_check not in ("warn", "stop", "off"):
            raise ValueError(f"energy_check must be 'warn', 'stop' or 'off', got {energy_check!r}")
        self.energy_check = energy_check
        self.energy_tolerance = positive("energy_tolerance", energy_tolerance)
        self.contact = properties_of("contact", contact if contact is not None else ContactProperties())
        self._pairs = self._pair_table(pairs or {})
        self._pair_cache: dict = {}
        # two friction rows per contact, contact-major, no P: the sparse path's blocks
        self._two_rows = not self.coulomb and two_rows(self.friction, self.dt)
        self._sparse_settings = SparseSettings(
            self.tolerance, bound_passes, self.bound_change, newton_iterations, max_sweeps, check_every,
            proximal_iterations,
        )  # fmt: skip
        self.evaluate = model.compile()
        self._mass, self._inertia = model.body_masses()
        self._inverse_inertia = np.linalg.inv(self._inertia)
        gravity = float(np.linalg.norm(model.gravity))
        self._energy_floor = sum(
            b.mass * gravity * math.sqrt(np.trace(b.inertia_matrix) / b.mass) for b in model.bodies
        )

    # --- set-up -------------------------------------------------------------------------
    def _pair_table(self, pairs) -> dict:
        known = {id(b) for b in self.model.bodies} | {id(c) for c in self.world.colliders}
        return {frozenset((id(x), id(y))): value for (x, y), value in pair_entries(pairs, known)}

    def properties(self, a: int, b: int) -> ContactProperties:
        """The :class:`ContactProperties` of a contact between colliders ``a`` and ``b``
        (indices into the world's colliders)."""
        key = (a, b)
        found = self._pair_cache.get(key)
        if found is None:
            ca, cb = self.world.colliders[a], self.world.colliders[b]
            found = self._pairs.get(frozenset((id(ca), id(cb))))
            if found is None:
                found = self._pairs.get(frozenset((id(ca.body), id(cb.body))), self.contact)
            self._pair_cache[key] = found
        return found

    def initial_state(self) -> BodyContactState:
        q, v = self.model.initial_state()
        return BodyContactState(q, v, 0.0, 0)

    def parameters(self) -> dict:
        """Everything but the scene that fixes a run (recorded in :class:`BodyContactRun`)."""
        return {
            "version": __version__,
            "friction": self.friction.parameters(),
            "dt": self.dt,
            "method": self.method,
            "fallback_method": self.fallback_method,
            "solver_options": self.solver_options,
            "tolerance": self.tolerance,
            "stabilization": self.stabilization,
            "restitution_threshold": self.restitution_threshold,
            "match_tolerance": self.match_tolerance,
            "bound_passes": self.bound_passes,
            "bound_change": self.bound_change,
            "sparse_threshold": self.sparse_threshold,
            "max_sweeps": self.max_sweeps,
            "check_every": self.check_every,
            "dense_limit": self.dense_limit,
            "margin": self.world.margin,
            "contact": vars(self.contact).copy(),
        }

    # --- one step -----------------------------------------------------------------------
    def poses(self, q) -> tuple[np.ndarray, np.ndarray]:
        """(positions (nb, 3), rotations (nb, 3, 3)) of the coordinates q."""
        Q = np.asarray(q, np.float64).reshape(-1, 7)
        return Q[:, :3].copy(), np_rotation_matrices(Q[:, 3:])

    def advance(self, state: BodyContactState) -> tuple[BodyContactState, BodyContactStep]:
        """One step from ``state``; returns the next state and what the step solved. Pure: the
        simulation object is not changed."""
        h = self.dt
        clock = time.perf_counter()
        positions, rotations = self.poses(state.q)
        contacts = self.world.detect(positions, rotations)
        detected = time.perf_counter()
        k = len(contacts)
        # history of persisting contacts (matched by collider pair and body-fixed witness point)
        previous = np.full(k, -1, np.int64)
        prev_impulse = np.zeros((k, 3))
        prev_active = None
        tangent = None
        if state.contacts is not None and len(state.contacts) and k:
            previous = contacts.match(state.contacts, self.match_tolerance)
            kept = previous >= 0
            if state.impulse is not None:
                prev_impulse[kept] = state.impulse[previous[kept]]
            if state.active is not None:
                prev_active = np.zeros((k, 3), np.int8)
                prev_active[:, 0] = -1  # a new contact starts separated (at its lower bound)
                prev_active[kept] = state.active[previous[kept]]
            if state.tangent is not None and kept.any():
                t1 = np.zeros((k, 3))
                t1[kept] = state.tangent[previous[kept], 0]
                tangent = carried_basis(contacts.normal, t1)
        rows = contact_rows(contacts, positions, rotations, tangent)
        built = time.perf_counter()
        kin = self.evaluate(state.q, state.v, state.t)
        if not kin.finite:
            culprits = self.model.diagnose(state.q, state.v, state.t)
            raise SimulationError(
                "the applied forces are not finite" + (": " + "; ".join(culprits) if culprits else ""),
                state.steps_done,
                state.t,
            )
        rhs, worst, body = gyroscopic_midpoint(self._mass, self._inertia, state.v, kin.force, h, 1e-12, 50)
        if not worst <= 1e-10:
            raise SimulationError(
                f"the implicit midpoint rule of the gyroscopic term did not converge on body "
                f"{self.model.bodies[body].name!r} (relative residual {worst:.3g})",
                state.steps_done,
                state.t,
            )
        free = self._apply_inverse_mass(rhs)
        # per-contact coefficients
        mu = np.empty(k)
        mu_static = np.empty(k)
        e = np.empty(k)
        for i, (a, b) in enumerate(contacts.collider):
            p = self.properties(int(a), int(b))
            mu[i], mu_static[i], e[i] = p.mu, p.mu_static, p.restitution
        before = rows.velocity(state.v)  # (k, 3) at the known v
        gap = contacts.gap
        e_N = np.where(gap >= 0.0, gap / h, self.stabilization * gap / h)
        impact = (e > 0.0) & (before[:, 0] < -self.restitution_threshold) & (gap + h * before[:, 0] < 0.0)
        e_N = np.where(impact, np.minimum(e_N, e * before[:, 0]), e_N)
        if not self.friction.chooses_static_coefficient:  # box, polygonal, coulomb: mu_s where it stuck
            stuck = (previous >= 0) & (np.hypot(before[:, 1], before[:, 2]) <= 0.01)
            mu = np.where(stuck, mu_static, mu)
        along = np.einsum("kj,kj->k", prev_impulse, rows.frame[:, 0])
        normal_prev = np.maximum(along, 0.0) / h  # the bound mu lam_N of a persisting contact
        friction_prev = (prev_impulse - along[:, None] * rows.frame[:, 0]) / h  # in the new tangent plane
        # island by island
        reaction = np.zeros((k, 3))
        active = None if self.coulomb else np.zeros((k, 3), np.int8)
        iterations, residual, fallback, largest = 0, 0.0, False, 0
        islands = _islands(rows.body, len(self.model.bodies))
        for members in islands:
            largest = max(largest, members.size)
            bodies = np.unique(rows.body[members])
            bodies = bodies[bodies >= 0]
            solve = self._solve_island if members.size <= self.sparse_threshold else self._solve_island_sparse
            r_island, its, res, retried, act = solve(
                state, rows, members, bodies, rhs, free, before, e_N, mu, mu_static, normal_prev, friction_prev,
                prev_impulse, prev_active,
            )  # fmt: skip
            reaction[members] = r_island
            if act is not None:
                active[members] = act
            iterations += its
            residual = max(residual, res)
            fallback = fallback or retried
        v_new = free + self._apply_inverse_mass(rows.impulse(reaction, len(self.model.bodies))) if k else free
        solved_at = time.perf_counter()
        for name, value, width in (("velocity", v_new, 6),):
            if not np.all(np.isfinite(value)):
                bad = int(np.flatnonzero(~np.isfinite(value))[0]) // width
                raise SimulationError(
                    f"the new {name} of body {self.model.bodies[bad].name!r} is not finite", state.steps_done, state.t
                )
        q_new = update_positions(np.asarray(state.q, np.float64), v_new, h)
        work = h * float(kin.nonconservative_force @ (np.asarray(state.v) + v_new)) / 2.0
        world_impulse = np.einsum("kr,krj->kj", reaction, rows.frame)
        step = BodyContactStep(
            v=v_new,
            contacts=contacts,
            rows=rows,
            reaction=reaction,
            normal_force=reaction[:, 0] / h,
            friction_force=(world_impulse - reaction[:, :1] * rows.frame[:, 0]) / h,
            impact=impact,
            status=int(Status.SOLVED),
            iterations=iterations,
            residual=residual,
            fallback=fallback,
            islands=len(islands),
            largest_island=largest,
            active=active,
            work=work,
        )
        step.timing = {
            "detection": detected - clock,
            "rows": built - detected,
            "solve": solved_at - built,
            "rest": time.perf_counter() - solved_at,
        }
        new_state = BodyContactState(
            q_new, v_new, state.t + h, state.steps_done + 1, contacts, world_impulse, active, rows.frame[:, 1:].copy()
        )
        return new_state, step

    def _apply_inverse_mass(self, x):
        X = np.asarray(x, np.float64).reshape(-1, 6)
        out = np.empty_like(X)
        out[:, :3] = X[:, :3] / self._mass[:, None]
        out[:, 3:] = np.einsum("bij,bj->bi", self._inverse_inertia, X[:, 3:])
        return out.reshape(-1)

    def _island_matrices(self, rows, members, bodies):
        """(H (3c, 6 nb_I), M^-1 H^T (6 nb_I, 3c)) of one island, dense."""
        c, nb = members.size, bodies.size
        local = np.full(len(self.model.bodies), -1, np.int64)
        local[bodies] = np.arange(nb)
        H = np.zeros((3 * c, 6 * nb))
        for side in range(2):
            body = rows.body[members, side]
            on = np.flatnonzero(body >= 0)
            for i in on:
                o = 6 * local[body[i]]
                H[3 * i : 3 * i + 3, o : o + 6] += rows.blocks[members[i], side]
        Minv_Ht = np.empty((6 * nb, 3 * c))
        for j, b in enumerate(bodies):
            o = 6 * j
            Minv_Ht[o : o + 3] = H[:, o : o + 3].T / self._mass[b]
            Minv_Ht[o + 3 : o + 6] = self._inverse_inertia[b] @ H[:, o + 3 : o + 6].T
        return H, Minv_Ht

    def _solve_island(self, state, rows, members, bodies, rhs, free, before, e_N, mu, mu_static, normal_prev,
                      friction_prev, prev_impulse, prev_active):  # fmt: skip
        """(reactions (c, 3), iterations, residual, fallback, active (c, 3) or None) of one island."""
        h = self.dt
        H, Minv_Ht = self._island_matrices(rows, members, bodies)
        columns = (6 * bodies[:, None] + np.arange(6)).reshape(-1)
        b0 = H @ free[columns]
        c = members.size
        if self.coulomb:
            W = H @ Minv_Ht
            W = 0.5 * (W + W.T)
            b = b0.copy()
            b[0::3] += e_N[members]
            guess = np.einsum("kj,krj->kr", prev_impulse[members], rows.frame[members]).reshape(-1)
            m = mu[members]
            result = self._solve_fc(W, b, m, guess, self.method)
            result, fallback = self._accept(state, result, lambda method: self._solve_fc(W, b, m, guess, method))
            return result.r.reshape(c, 3), result.iterations, result.relative_residual, fallback, None
        # bounded LCP: the model's block over the island's slip rows, then Eq. (30) over the island
        slips = before[members, 1:]
        n = H.shape[1]
        D = np.empty((2 * c, n))
        D[0::2] = H[1::3]
        D[1::2] = H[2::3]
        N = H[0::3]
        M = np.zeros((n, n))  # the island's block of M (block-diagonal)
        for j, body in enumerate(bodies):
            o = 6 * j
            M[o : o + 3, o : o + 3] = self._mass[body] * np.eye(3)
            M[o + 3 : o + 6, o + 3 : o + 6] = self._inertia[body]
        no_rows = np.zeros((0, n))
        normal_force = normal_prev[members].copy()
        warm = None if prev_active is None else prev_active[members]
        iterations, fallback = 0, False
        for _ in range(1 + self.bound_passes):
            F1, G1, P, C, cvec, lo, hi, basis, kinetic = friction_block(
                self.friction, slips.reshape(-1), h, mu[members], mu_static[members], normal_force,
                friction_prev[members], rows.frame[members, 1:],
            )  # fmt: skip
            F, G = F1 @ D, G1 @ D
            nf = F.shape[0]
            K = np.zeros((n + c + nf,) * 2)
            fill_matrix(K, M, no_rows, N, F, G, C, P, np.zeros(c), np.zeros(0))
            qv, lower, upper = bounded_vectors(rhs[columns], np.zeros(0), e_N[members], cvec, lo, hi)
            start = None
            if warm is not None and nf == 2 * c:  # velocities basic, then the contacts' codes
                start = np.concatenate([np.zeros(n, np.int8), warm[:, 0], warm[:, 1:].reshape(-1)]).astype(np.int8)
            result = self._solve_lcp(K, qv, lower, upper, start, self.method)
            result, retried = self._accept(
                state, result, lambda method: self._solve_lcp(K, qv, lower, upper, None, method)
            )
            fallback = fallback or retried
            iterations += result.iterations
            z = result.z
            latest = np.maximum(z[n : n + c], 0.0) / h
            if nf == 2 * c:
                codes = result.active_set[n:]
                warm = np.concatenate([codes[:c, None], codes[c:].reshape(c, 2)], axis=1)
            if nf == 2 * c:  # two friction unknowns per contact: only contacts where the bound matters
                pair = (z[n + c :].reshape(c, 2), lower[n + c :].reshape(c, 2), upper[n + c :].reshape(c, 2))
            else:
                pair = (None, None, None)
            moved = bounds_moved(normal_force, latest, self.bound_change, *pair, rows.body[members])
            if not moved.any():
                break
            normal_force = np.where(moved, latest, normal_force)  # only where it matters
        # the friction impulse in the contact frame: G^T x_F = D^T (G1^T x_F)
        tangential = (G1.T @ z[n + c :]).reshape(c, 2)
        out = np.concatenate([z[n : n + c, None], tangential], axis=1)
        active = warm if (warm is not None and nf == 2 * c) else np.zeros((c, 3), np.int8)
        return out, iterations, result.relative_residual, fallback, active

    def _sparse_matrices(self, rows, members, bodies):
        """(H (3c, 6 nb_I), M^-1 (6 nb_I, 6 nb_I), M) of one island as CSR matrices."""
        c, nb = members.size, bodies.size
        local = np.full(len(self.model.bodies), -1, np.int64)
        local[bodies] = np.arange(nb)
        data, row_index, col_index = [], [], []
        for side in range(2):
            body = rows.body[members, side]
            on = np.flatnonzero(body >= 0)
            blocks = rows.blocks[members[on], side]  # (m, 3, 6)
            r_idx = (3 * on[:, None, None] + np.arange(3)[None, :, None]) + np.zeros((1, 1, 6), np.int64)
            c_idx = (6 * local[body[on]][:, None, None] + np.arange(6)[None, None, :]) + np.zeros((1, 3, 1), np.int64)
            data.append(blocks.reshape(-1))
            row_index.append(r_idx.reshape(-1))
            col_index.append(c_idx.reshape(-1))
        H = csr_matrix(
            (np.concatenate(data), (np.concatenate(row_index), np.concatenate(col_index))), shape=(3 * c, 6 * nb)
        )
        inverse = np.zeros((nb, 6, 6))
        mass = np.zeros((nb, 6, 6))
        for j, b in enumerate(bodies):
            inverse[j, :3, :3] = np.eye(3) / self._mass[b]
            inverse[j, 3:, 3:] = self._inverse_inertia[b]
            mass[j, :3, :3] = np.eye(3) * self._mass[b]
            mass[j, 3:, 3:] = self._inertia[b]
        return H, block_diag(list(inverse), format="csr"), block_diag(list(mass), format="csr")

    def _solve_island_sparse(self, state, rows, members, bodies, rhs, free, before, e_N, mu, mu_static, normal_prev,
                             friction_prev, prev_impulse, prev_active):  # fmt: skip
        """A large island (more than ``sparse_threshold`` contacts) by Gauss–Seidel over its
        contacts on the sparse Delassus form (:mod:`solvers.sparse_gauss_seidel`), judged by the
        framework's residual on the sparse problem (:mod:`solvers.sparse_measure`): the exact
        cone's Delassus problem, or Peiret 2016 Eq. (30) itself for the bounded-LCP models. A
        model whose friction rows are not two per contact (polygonal, continuous), or a run that
        does not converge within ``max_sweeps``, takes the dense path (recorded as a fallback when
        it was a failure)."""
        h = self.dt
        c = members.size
        H, Minv, M = self._sparse_matrices(rows, members, bodies)
        columns = (6 * bodies[:, None] + np.arange(6)).reshape(-1)
        v_free = free[columns]
        if self.coulomb:
            start = np.einsum("kj,krj->kr", prev_impulse[members], rows.frame[members])
            r, sweeps, relative, converged = solve_sparse_coulomb(
                H, Minv, v_free, e_N[members], mu[members], start, self._sparse_settings
            )
            if converged:
                return r, sweeps, relative, False, None
            self._dense_fallback_allowed(state, members, bodies, f"NSGS and proximal Newton: residual {relative:.3g}")
            out = self._solve_island(state, rows, members, bodies, rhs, free, before, e_N, mu, mu_static, normal_prev,
                                     friction_prev, prev_impulse, prev_active)  # fmt: skip
            return out[0], out[1] + sweeps, out[2], True, out[4]
        if not self._two_rows:
            return self._solve_island(state, rows, members, bodies, rhs, free, before, e_N, mu, mu_static,
                                      normal_prev, friction_prev, prev_impulse, prev_active)  # fmt: skip
        previous = np.einsum("kj,krj->kr", prev_impulse[members], rows.frame[members])
        answer = solve_sparse_island(
            self.friction, H, Minv, M, v_free, rhs[columns], e_N[members], before[members, 1:], h, mu[members],
            mu_static[members], normal_prev[members], friction_prev[members], rows.frame[members, 1:],
            previous[:, 0], h * np.einsum("krj,kj->kr", rows.frame[members, 1:], friction_prev[members]),
            rows.body[members], self._sparse_settings,
        )  # fmt: skip
        if not answer.converged:
            self._dense_fallback_allowed(
                state, members, bodies, f"{answer.methods} and Gauss–Seidel: residual {answer.relative:.3g}"
            )
            out = self._solve_island(state, rows, members, bodies, rhs, free, before, e_N, mu, mu_static,
                                     normal_prev, friction_prev, prev_impulse, prev_active)  # fmt: skip
            return out[0], out[1] + answer.iterations, out[2], True, out[4]
        out = np.concatenate([answer.normal[:, None], answer.tangential], axis=1)
        return out, answer.iterations, answer.relative, False, np.zeros((c, 3), np.int8)

    def _dense_fallback_allowed(self, state, members, bodies, why):
        """Raises :class:`SimulationError` when the dense fallback of a large island would exceed
        ``dense_limit`` unknowns (its dense matrix and pivoting would take minutes)."""
        size = 6 * bodies.size + 3 * members.size
        if size > self.dense_limit:
            raise SimulationError(
                f"the sparse solve of an island of {members.size} contacts did not converge ({why}) and its dense "
                f"fallback ({size} unknowns) exceeds dense_limit = {self.dense_limit}",
                state.steps_done,
                state.t,
            )

    def _solve_fc(self, W, b, mu, guess, method):
        options = dict(self.solver_options) if method == self.method else {}
        return friction_contact.solve_friction_contact(
            W, b, mu, method=method, tolerance=self.tolerance,
            initial_guess=guess if method in ("nsgs", "prox", "auto", "newton") else None, **options,
        )  # fmt: skip

    def _solve_lcp(self, K, qv, lo, hi, warm, method):
        options = dict(self.solver_options) if method == self.method else {}
        if warm is not None and method == "judice-pires":
            options["warm_start"] = warm
        return solvers.solve(K, qv, lo, hi, method=method, tolerance=self.tolerance, **options)

    def _accept(self, state, result, retry):
        return accept_or_fallback(result, retry, self.fallback_method, state.steps_done, state.t)

    # --- energy -------------------------------------------------------------------------
    def energy(self, q, v, t=0.0) -> tuple[float, float, float]:
        """(mechanical energy T + V, kinetic energy T, conservative power P_c) at (q, v): J, J, W."""
        kin = self.evaluate(q, v, t)
        T = kinetic_energy(self._mass, self._inertia, np.asarray(v, np.float64))
        return T + kin.potential_energy, T, kin.conservative_power

    # --- runs ---------------------------------------------------------------------------
    def run(self, duration: float, state: BodyContactState | None = None, record_contacts: bool = True, *,
            out=None, chunk_steps: int = 100):  # fmt: skip
        """Steps from ``state`` (default the model's initial state) for ``duration`` seconds;
        returns a :class:`BodyContactRun`. A failure raises
        :class:`~lcpdyn.stepper.SimulationError` with ``trajectory`` the run so far. SIGINT
        (Ctrl-C) and SIGTERM stop the run after the step in progress:
        :class:`~lcpdyn.stepper.RunInterrupted`, with the steps done.

        out : optional ``.h5``/``.hdf5`` path: the run streams into it
            (:mod:`lcpdyn.body_contact_file`), a block of ``chunk_steps`` steps at a time with the
            state to continue from, and ends with its status (``completed``, ``interrupted``,
            ``failed: <reason>``); an interrupted or killed run goes on with :meth:`resume`.
            Checked before the first step."""
        duration = nonnegative("duration", duration)
        if isinstance(chunk_steps, bool) or not isinstance(chunk_steps, int) or chunk_steps < 1:
            raise ValueError(f"chunk_steps must be an integer >= 1, got {chunk_steps!r}")
        steps = int(round(duration / self.dt))
        state = self.initial_state() if state is None else state
        run = BodyContactRun(self, state, steps, record_contacts)
        writer = None
        if out is not None:
            from .body_contact_file import BodyContactWriter, scene_fingerprint

            writer = BodyContactWriter(out, self.parameters(), scene_fingerprint(self._mass, self._inertia),
                                       self._mass.shape[0], steps, record_contacts)  # fmt: skip
        return self._steps(run, state, steps, writer, chunk_steps)

    def resume(self, path, chunk_steps: int = 100) -> BodyContactRun:
        """Continue the run streamed into ``path`` (:meth:`run` with ``out=``) that was
        interrupted or killed, to the end it was asked for, appending to the same file; returns
        the whole run (the file's steps and the new ones), equal bit for bit to the run had it
        not stopped. This simulation must be the file's: same parameters
        (:meth:`parameters`) and same bodies (count, masses, inertias), else ``ValueError``
        saying what differs. A completed run is returned as it is; a failed one is refused (it
        would fail again)."""
        from .body_contact_file import BodyContactWriter, read_resume, read_run, scene_fingerprint

        if isinstance(chunk_steps, bool) or not isinstance(chunk_steps, int) or chunk_steps < 1:
            raise ValueError(f"chunk_steps must be an integer >= 1, got {chunk_steps!r}")
        saved = read_resume(path)
        if saved["status"].startswith("failed"):
            raise ValueError(f"{path}: the run there {saved['status']}; continuing it would repeat the failure")
        mine = json.loads(json.dumps(self.parameters(), sort_keys=True))
        if mine != saved["parameters"]:
            keys = sorted(k for k in set(mine) | set(saved["parameters"]) if mine.get(k) != saved["parameters"].get(k))
            raise ValueError(f"{path} was made by a simulation with other parameters: {keys} differ")
        if scene_fingerprint(self._mass, self._inertia) != saved["scene"]:
            raise ValueError(f"{path} was made with other bodies (count, masses or inertias differ from this model's)")
        if saved["status"] == "completed":
            return BodyContactRun.continued(self, read_run(path), saved, None).finish("completed")
        writer = BodyContactWriter.continuing(path)
        try:
            run = BodyContactRun.continued(self, read_run(path), saved, _state_from(saved))
        except BaseException:
            writer.close("interrupted")
            raise
        return self._steps(run, run.state, saved["total_steps"] - saved["steps_in_file"], writer, chunk_steps)

    def _steps(self, run, state, steps, writer, chunk_steps):
        """The stepping loop of :meth:`run` and :meth:`resume`: ``steps`` steps from ``state``
        recorded in ``run`` and, with a ``writer``, streamed."""
        with StopOnSignal() as stop:
            try:
                for i in range(steps):
                    state, step = self.advance(state)
                    run.record(state, step)
                    if writer is not None and len(run._steps) - writer.steps >= chunk_steps:
                        run.flush(writer)
                    if stop.signal is not None and i + 1 < steps:
                        path = None
                        if writer is not None:
                            run.flush(writer)
                            path = writer.close("interrupted")
                        raise RunInterrupted(stop.signal, state.steps_done, state.t, run.finish("interrupted"), path)
            except RunInterrupted:
                raise
            except SimulationError as exc:
                if writer is not None:
                    run.flush(writer)
                    writer.close(f"failed: {exc}")
                exc.trajectory = run.finish("failed")
                raise
            except KeyboardInterrupt as exc:  # outside the main thread no handler catches SIGINT
                if writer is not None:
                    run.flush(writer)
                    writer.close("interrupted")
                error = SimulationError("interrupted (KeyboardInterrupt)", run.state.steps_done, run.state.t)
                error.trajectory = run.finish("interrupted")
                raise error from exc
            except BaseException as exc:
                if writer is not None:
                    run.flush(writer)
                    writer.close(f"failed: {type(exc).__name__}: {exc}")
                raise
        run.state = state
        if writer is not None:
            run.flush(writer)
            writer.close("completed")
        return run.finish("completed")


def load_run(path) -> BodyContactRun:
    """The run streamed into ``path`` by :meth:`BodyContactSimulation.run` (``out=``), as the
    :class:`BodyContactRun` it returned, up to its last flush: ``status`` the file's,
    ``parameters`` the simulation's, no ``sim`` or ``state``, and the wall times (``time_*``),
    which the file does not keep, NaN. A missing, foreign or damaged file is a
    :class:`~lcpdyn.trajectory.TrajectoryFileError` naming it."""
    from .body_contact_file import ROW_FIELDS, read_run

    data = read_run(path)
    run = BodyContactRun.__new__(BodyContactRun)
    run.sim, run.state, run.status = None, None, data["status"]
    run.parameters, run.record_contacts = data["parameters"], data["record_contacts"]
    for name in (*ROW_FIELDS, *STEP_FIELDS):
        setattr(run, name, data[name])
    if run.record_contacts:
        run.contact_start = np.concatenate([[0], np.cumsum(data["contact_count"])]).astype(np.int64)
        for name in CONTACT_FIELDS:
            setattr(run, name, data[name])
    return run


def _state_from(saved: dict) -> BodyContactState:
    """The :class:`BodyContactState` of a resume group (:func:`lcpdyn.body_contact_file.read_resume`)."""
    contacts = None
    if saved.get("contacts_gap") is not None:
        contacts = Contacts(*(saved[f"contacts_{name}"] for name in _CONTACT_ARRAYS),
                            int(saved["contacts_candidates"]))  # fmt: skip
    return BodyContactState(saved["q"], saved["v"], float(saved["t"]), int(saved["steps_done"]), contacts,
                            saved["impulse"], saved["active"], saved["tangent"])  # fmt: skip


def _islands(body: np.ndarray, n_bodies: int) -> list[np.ndarray]:
    """The contacts grouped by connected component of the bodies they join (the world joins
    nothing): a list of index arrays, in order of their first contact."""
    k = body.shape[0]
    if k == 0:
        return []
    both = (body[:, 0] >= 0) & (body[:, 1] >= 0)
    graph = coo_matrix((np.ones(int(both.sum())), (body[both, 0], body[both, 1])), shape=(n_bodies, n_bodies)).tocsr()
    _, label = connected_components(graph, directed=False)
    of_contact = label[body[:, 0]]
    order = np.argsort(of_contact, kind="stable")
    cuts = np.flatnonzero(np.diff(of_contact[order])) + 1
    groups = np.split(order, cuts)
    groups.sort(key=lambda g: g[0])
    return groups


def _full_shape(matrix, size):
    """``matrix`` (CSR) as size x size (bmat drops nothing here; kept for a model without P)."""
    if matrix.shape != (size, size):
        raise ValueError(f"Eq. (30) assembled as {matrix.shape}, expected {(size, size)}")
    return matrix


class BodyContactRun:
    """The record of a :meth:`BodyContactSimulation.run`: per step t, q, v, energy, the number
    of contacts, the largest penetration (m, >= 0), the solve's status, iterations, residual,
    fallback flag, health flags, islands and timing (``solve_status`` per step: a
    :class:`solvers.result.Status` value); with ``record_contacts`` every contact's
    bodies, point, normal, normal force and friction force, flattened (``contact_start[s]`` ..
    ``contact_start[s + 1]`` are step s's). ``status`` is ``"completed"``, ``"failed"`` or
    ``"interrupted"``; ``parameters`` the simulation's."""

    def __init__(self, sim: BodyContactSimulation, state: BodyContactState, steps: int, record_contacts: bool):
        self.sim = sim
        self.parameters = sim.parameters()
        self.record_contacts = record_contacts
        self.state = state
        energy, kinetic, power = sim.energy(state.q, state.v, state.t)
        self._work = 0.0
        self._shadow = 0.5 * sim.dt  # the O(h) term of symplectic Euler's modified energy (lcpdyn.stepper)
        self._t, self._q, self._v = [state.t], [np.asarray(state.q).copy()], [np.asarray(state.v).copy()]
        self._energy, self._kinetic = [energy], [kinetic]
        self._steps: list[tuple] = []
        self._contacts: list[tuple] = []
        self._lowest = energy + self._shadow * power
        self._scale = max(sim._energy_floor, kinetic)
        self._gains = []
        self._potential_start = energy - kinetic

    def record(self, state: BodyContactState, step: BodyContactStep):
        sim = self.sim
        energy, kinetic, power = sim.energy(state.q, state.v, state.t)
        if not math.isfinite(energy):
            raise SimulationError(f"the energy is not finite ({energy!r} J)", state.steps_done, state.t)
        self._work += step.work
        budget = energy + self._shadow * power - self._work
        self._scale = max(self._scale, kinetic, abs(energy - kinetic - self._potential_start), abs(self._work))
        self._lowest = min(self._lowest, budget)
        gain = budget - self._lowest
        health = 0
        allowed = sim.energy_tolerance * self._scale + 1e-12 * (abs(energy) + self._scale)
        if sim.energy_check != "off" and gain > allowed:
            health |= int(Health.ENERGY_GAIN)
            self._gains.append((state.t, gain))
            if sim.energy_check == "stop":
                raise SimulationError(
                    f"the energy rose {gain:.4g} J above its lowest value so far, more than energy_tolerance = "
                    f"{sim.energy_tolerance:g} of the energy scale {self._scale:.4g} J (energy_check='stop')",
                    state.steps_done,
                    state.t,
                )
        if step.fallback:
            health |= int(Health.FALLBACK)
        self.state = state
        self._t.append(state.t)
        self._q.append(np.asarray(state.q).copy())
        self._v.append(np.asarray(state.v).copy())
        self._energy.append(energy)
        self._kinetic.append(kinetic)
        gap = step.contacts.gap
        timing = step.timing
        self._steps.append((
            len(gap), float(max(0.0, -gap.min())) if gap.size else 0.0, step.status, step.iterations, step.residual,
            step.fallback, health, step.islands, step.largest_island, step.contacts.candidates,
            timing["detection"], timing["rows"], timing["solve"], timing["rest"],
        ))  # fmt: skip
        if self.record_contacts:
            self._contacts.append((
                step.contacts.body.copy(), 0.5 * (step.contacts.point_a + step.contacts.point_b),
                step.contacts.normal.copy(), step.normal_force.copy(), step.friction_force.copy(), gap.copy(),
            ))  # fmt: skip

    @classmethod
    def continued(cls, sim: BodyContactSimulation, data: dict, saved: dict, state) -> BodyContactRun:
        """The run a file holds (:func:`lcpdyn.body_contact_file.read_run` ``data``, its resume
        group ``saved``), ready to record more steps from ``state`` as if it had never stopped."""
        run = cls.__new__(cls)
        run.sim, run.parameters, run.record_contacts = sim, sim.parameters(), data["record_contacts"]
        run.state = state
        run._shadow = 0.5 * sim.dt
        run._work, run._lowest, run._scale = float(saved["work"]), float(saved["lowest"]), float(saved["scale"])
        run._potential_start = float(saved["potential_start"])
        run._gains = [(float(t), float(g)) for t, g in np.asarray(saved["gains"]).reshape(-1, 2)]
        run._t, run._q, run._v = list(data["t"]), list(data["q"]), list(data["v"])
        run._energy, run._kinetic = list(data["energy"]), list(data["kinetic_energy"])
        run._steps = list(zip(*(data[name] for name in STEP_FIELDS)))
        run._contacts = []
        if run.record_contacts:
            cuts = np.cumsum(data["contact_count"])[:-1]
            columns = [np.split(data[name], cuts) for name in CONTACT_FIELDS]
            run._contacts = list(zip(*columns)) if len(data["contact_count"]) else []
        return run

    def flush(self, writer) -> None:
        """Append to ``writer`` (:class:`lcpdyn.body_contact_file.BodyContactWriter`) the
        steps it does not hold yet, and the state to continue from."""
        n, rows = writer.steps, writer.rows
        nb = self.sim._mass.shape[0]
        state_rows = {"t": np.array(self._t[rows:], float), "q": np.array(self._q[rows:], float).reshape(-1, 7 * nb),
                      "v": np.array(self._v[rows:], float).reshape(-1, 6 * nb),
                      "energy": np.array(self._energy[rows:], float),
                      "kinetic_energy": np.array(self._kinetic[rows:], float)}  # fmt: skip
        block = self._steps[n:]
        columns = list(zip(*block)) if block else [[] for _ in STEP_FIELDS]
        steps = {name: np.array(values, kind) for (name, kind), values in zip(STEP_FIELDS.items(), columns)}
        contacts = None
        if self.record_contacts:
            parts = self._contacts[n:]
            contacts = {"contact_count": np.array([len(p[0]) for p in parts], np.int64)}
            for j, (name, (trailing, kind)) in enumerate(CONTACT_FIELDS.items()):
                contacts[name] = np.concatenate([p[j] for p in parts]) if parts else np.zeros((0, *trailing), kind)
        state = self.state
        resume = {"q": state.q, "v": state.v, "t": state.t, "steps_done": state.steps_done, "impulse": state.impulse,
                  "active": state.active, "tangent": state.tangent, "work": self._work, "lowest": self._lowest,
                  "scale": self._scale, "potential_start": self._potential_start,
                  "gains": np.array(self._gains, float).reshape(-1, 2)}  # fmt: skip
        for name in _CONTACT_ARRAYS:
            resume[f"contacts_{name}"] = None if state.contacts is None else getattr(state.contacts, name)
        resume["contacts_candidates"] = None if state.contacts is None else state.contacts.candidates
        writer.append(state_rows, steps, contacts, resume)

    def finish(self, status: str) -> BodyContactRun:
        self.status = status
        self.t = np.array(self._t)
        self.q = np.array(self._q)
        self.v = np.array(self._v)
        self.energy = np.array(self._energy)
        self.kinetic_energy = np.array(self._kinetic)
        columns = list(zip(*self._steps)) if self._steps else [[] for _ in STEP_FIELDS]
        for (name, kind), values in zip(STEP_FIELDS.items(), columns):
            setattr(self, name, np.array(values, dtype=kind))
        if self.record_contacts:
            counts = [len(c[0]) for c in self._contacts]
            self.contact_start = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
            for j, (name, (trailing, kind)) in enumerate(CONTACT_FIELDS.items()):
                parts = [c[j] for c in self._contacts]
                setattr(self, name, np.concatenate(parts) if parts else np.zeros((0, *trailing), kind))
        if self._gains and self.sim.energy_check == "warn":
            t, gain = max(self._gains, key=lambda x: x[1])
            warnings.warn(
                f"{len(self._gains)} steps raised the energy beyond energy_tolerance = "
                f"{self.sim.energy_tolerance:g} of its scale; the largest gain {gain:.4g} J at t = {t:.6g} s "
                f"(first at t = {self._gains[0][0]:.6g} s)",
                EnergyWarning,
                stacklevel=3,
            )
        return self

    def contacts_at(self, step: int) -> dict:
        """Step ``step``'s contacts (0-based over the steps taken): bodies, point, normal, normal
        force, friction force and gap."""
        if not self.record_contacts:
            raise ValueError("this run was made with record_contacts=False")
        a, b = self.contact_start[step], self.contact_start[step + 1]
        return {
            "body": self.contact_body[a:b],
            "point": self.contact_point[a:b],
            "normal": self.contact_normal[a:b],
            "normal_force": self.contact_normal_force[a:b],
            "friction_force": self.contact_friction_force[a:b],
            "gap": self.contact_gap[a:b],
        }
