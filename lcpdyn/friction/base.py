"""The friction-model protocol: what the stepper asks of a friction model, and the helpers the
built-in models share.

A friction model is any object with the members of :class:`FrictionModel` (the built-in ones are
:class:`~lcpdyn.friction.Regularized`, :class:`~lcpdyn.friction.Polygonal`,
:class:`~lcpdyn.friction.Box`, :class:`~lcpdyn.friction.Coulomb`,
:class:`~lcpdyn.friction.Continuous` and :class:`~lcpdyn.friction.Creep`, one file each in this
package). It plugs into :class:`lcpdyn.stepper.Simulation` as it is
(``Simulation(model, friction=MyModel())``), and by name once registered
(:func:`lcpdyn.friction.register`); the stepper never asks which class it is, only what the model
says of itself. :func:`check_friction_model` checks an object against the protocol and names what
is missing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple, Protocol, runtime_checkable

import numpy as np
from numba import njit

__all__ = [
    "BOUNDED_LCP",
    "FRICTION_CONTACT",
    "FrictionBlock",
    "FrictionModel",
    "CompiledRows",
    "basis_settled",
    "check_friction_model",
    "for_scheme",
    "unsettled",
    "row_buffers",
    "world_force_in_bases",
]

BOUNDED_LCP = "bounded-lcp"
"""The model's step is a block of the bounded mixed LCP of Peiret 2016 Eq. (30)."""
FRICTION_CONTACT = "friction-contact"
"""The model's step is the 3D friction-contact problem u = W r + b, r in the Coulomb cone."""


@dataclass
class FrictionBlock:
    """A friction model's unknowns and rows in Eq. (30) (module docstring); nf unknowns, r
    contacts, n velocities."""

    F: np.ndarray  # (nf, n) rows of the friction unknowns
    G: np.ndarray  # (nf, n) generalized force map (enters the dynamics rows as -G^T)
    P: np.ndarray | None  # (nf, r) coupling to h lamN, or None
    C: np.ndarray  # (nf, nf)
    c: np.ndarray  # (nf,)
    lo: np.ndarray  # (nf,)
    hi: np.ndarray  # (nf,)
    basis: np.ndarray  # (r, 2, 2): columns are the model's directions in base (t1, t2) coordinates
    kinetic: np.ndarray  # (r,) bool, the regularized model's branch (False for the others)


class CompiledRows(NamedTuple):
    """The constants of a friction block built inside lcpdyn's compiled kernels and traced step:
    ``compliance`` C_T = 1/(k_T h^2) (0 for rigid stiction), ``velocity_threshold`` v_th of the
    static/kinetic switch, ``rigid_box`` True for the box model (F = D, C = 0, bounds h mu lam_N
    per component), False for the regularized model (Peiret 2016 Eqs. 25-27), ``cone`` its
    static branch in the cone, ``directions`` k > 0 for the polygonal cone's k + 1 unknowns per
    contact (Peiret 2016 Eqs. 13-16; the other fields unused), ``continuous`` the continuous law,
    ``creep`` the creep law.
    The host's fused kernels build the regularized and box rows only (``Simulation`` takes the
    others from the model's ``block``)."""

    compliance: float
    velocity_threshold: float
    rigid_box: bool
    cone: bool = False
    """The regularized model's ``static_bound="cone"``: its static rows from the last pass's force
    (``basis_passes`` more passes of the step)."""
    directions: int = 0
    """The polygonal cone's k directions (:func:`lcpdyn.friction.polygonal.cone_directions`); 0: the
    two-rows-per-contact models."""
    continuous: bool = False
    """Bauchau 2002's continuous law (:class:`lcpdyn.friction.continuous.Continuous`), linearized
    about the step's slip, its characteristic velocity v0 in ``velocity_threshold``: two free
    unknowns per contact (the other fields unused)."""
    creep: tuple = ()
    """Kalker's creep law with Vermeulen–Johnson saturation (:class:`lcpdyn.friction.creep.Creep`):
    (f11 N, f22 N, f23 N m, min_speed m/s, saturate), linearized about the step's slips and spin
    with the contacts' rolling kinematics; () for the other models."""


@runtime_checkable
class FrictionModel(Protocol):
    """The friction-model protocol: the members a friction model has (``block`` and
    ``world_force`` where ``formulation`` is :data:`BOUNDED_LCP`), as the stepper reads them.

    ``formulation``
        Which complementarity problem the model's step is. :data:`BOUNDED_LCP`: the model adds a
        block of unknowns x_F in [lo, hi] and rows to the bounded mixed LCP of Peiret 2016
        Eq. (30)::

            [ M       -A^T  -N^T  -G^T ] [ v+     ]   [ -(M v + h f) ]   [ 0     ]
            [ A        0     0     0   ] [ h lam  ] + [ -u           ] = [ 0     ]
            [ N        0     C_N   0   ] [ h lamN ]   [  e_N         ]   [ wN    ]
            [ F        0     P     C   ] [ x_F    ]   [  c           ]   [ sigma ]

        returned by ``block`` as a :class:`FrictionBlock`. :data:`FRICTION_CONTACT`: the step is the
        three-dimensional friction-contact problem on the Delassus operator, u = W r + b with r in
        the exact Coulomb cone per contact (Acary-Brogliato's FC3D, solved by
        :func:`solvers.friction_contact.solve_friction_contact`); the model has no block.
    ``name``, ``default_method``
        The name it is recorded and registered under, and the solver it is solved with unless the
        simulation names another (one of :data:`solvers.METHODS` for a bounded LCP, of
        ``solvers.friction_contact.METHODS`` for the friction-contact problem).
    ``chooses_static_coefficient``
        True when the model receives mu_k and mu_s per contact and applies them itself (the
        regularized model's static branch, Bauchau 2002 Eqs. 26-27; the continuous law, which has
        no sticking). False: the stepper passes mu_s where the contact stuck in the previous step
        (|D v| <= ``static_threshold``) and mu_k where it slid; a contact given mu_s that slides all
        the same is solved again with mu_k in that same step (docs/theory/step.md, "Friction
        switches inside the step").
    ``switches(start, end, kinetic, change, h, two_coefficients, scale)`` (optional)
        A model that chooses its branch per contact from the slip at the step's start may say, from
        the step's first solve, which contacts switched inside it: ``(branch, guess)`` for its
        ``block(..., branch=, guess=)`` to solve the step again with, or None
        (:meth:`lcpdyn.friction.Regularized.switches`).
    ``parameters()``
        A JSON-able dict with ``"model": name`` and the model's constants, recorded in every result
        file; ``make_friction(**parameters())`` (with ``model`` as the name) rebuilds the model.
    ``block(D, v, h, mu, normal_force, friction_force, tangent, mu_static)`` (bounded LCP only)
        The :class:`FrictionBlock` for the step: D (2r, n) the slip rows in each contact's base
        tangent basis (t1, t2), v (n,) the known velocities, h the step (s), mu and mu_static (r,)
        this step's coefficients, ``normal_force`` lam_N (r,) the previous step's normal force (N),
        ``friction_force`` (r, 3) the previous world friction force (N), ``tangent`` (r, 2, 3) the
        base bases.
        In Moreau's midpoint scheme ``block`` is also called over velocities extended by one unknown
        per slip component (D as [D, I], v as [v, 0]), which gives the map T of its rows from the
        slips, F = T D (:func:`lcpdyn.midpoint_friction.midpoint_block`): a model's rows are to be
        linear in the slips D v, whatever n is.
    ``world_force(x, block, tangent, h)`` (bounded LCP only)
        The world friction force (r, 3) in N from the solved unknowns x_F and the block.
    ``rolling_kinematics`` (optional, default False)
        True for a law of rolling contact that needs more than the slips (the creep law,
        :class:`~lcpdyn.friction.Creep`): ``block`` then also gets ``rolling=``
        :class:`~lcpdyn.friction.creep.RollingKinematics` -- each contact's spin row n . omega
        (r, n) and rolling speed V (r,) -- from :class:`lcpdyn.stepper.Simulation` (detected
        contacts, :mod:`lcpdyn.detected_contacts`, have no rolling kinematics: a model with colliders
        refuses such a law).
    ``basis_passes`` (optional, default 0)
        At most this many extra passes of the step in which ``block`` also gets ``basis_force=`` the
        last pass's world friction force (r, 3) and the last pass's normal force: the regularized
        model's ``static_bound="cone"`` aligns its static basis and bounds with it, so that the force
        it settles on lies in the cone. The passes end once one settles (:func:`basis_settled`).
    ``compiled_rows(h)`` (optional)
        For models whose block is the two-rows-per-contact family that lcpdyn's compiled kernels
        build themselves (:func:`lcpdyn.kernels.fused_step`, :func:`lcpdyn.islands.lcp_islands`):
        a :class:`CompiledRows`, or None. Without it a model is assembled from ``block`` (the
        general path, and the general island path in scenes of several bodies).
    ``for_scheme(position_update)`` (optional)
        The model a :class:`~lcpdyn.stepper.Simulation` with that position update
        (``"symplectic"``, ``"paper"``, ``"midpoint"``) runs, itself or another model object of the
        protocol: the regularized model resolves its ``static_bound="auto"`` there
        (:func:`for_scheme`).
    """

    name: str
    default_method: str
    formulation: str
    chooses_static_coefficient: bool

    def parameters(self) -> dict:
        """The model's name (``"model"``) and every number that defines it: recorded in each result file and read
        back to rebuild the run."""
        ...


_BOUNDED_MEMBERS = ("block", "world_force")


def check_friction_model(model):
    """``model`` if it satisfies the friction-model protocol, else a ``TypeError`` naming the
    missing or malformed member."""
    kind = type(model).__name__
    for name in ("name", "default_method", "formulation"):
        value = getattr(model, name, None)
        if not isinstance(value, str) or not value:
            raise TypeError(f"friction model {kind}: '{name}' must be a non-empty string, got {value!r}")
    if model.formulation not in (BOUNDED_LCP, FRICTION_CONTACT):
        raise TypeError(
            f"friction model {kind}: formulation must be {BOUNDED_LCP!r} or {FRICTION_CONTACT!r}, "
            f"got {model.formulation!r}"
        )
    if not isinstance(getattr(model, "chooses_static_coefficient", None), bool):
        raise TypeError(f"friction model {kind}: 'chooses_static_coefficient' must be True or False")
    if not isinstance(getattr(model, "rolling_kinematics", False), bool):
        raise TypeError(f"friction model {kind}: 'rolling_kinematics' must be True or False")
    members = ("parameters",) + (_BOUNDED_MEMBERS if model.formulation == BOUNDED_LCP else ())
    for name in members:
        if not callable(getattr(model, name, None)):
            raise TypeError(f"friction model {kind} has no method '{name}' (see lcpdyn.friction.base)")
    parameters = model.parameters()
    if not isinstance(parameters, dict) or parameters.get("model") != model.name:
        raise TypeError(f"friction model {kind}: parameters() must be a dict with 'model': {model.name!r}")
    return model


def compiled_rows(model, h: float) -> CompiledRows | None:
    """The model's :class:`CompiledRows` at step ``h``, or None when it is assembled from its
    ``block`` (a model without ``compiled_rows``)."""
    method = getattr(model, "compiled_rows", None)
    if method is None:
        return None
    rows = method(h)
    if rows is not None and not isinstance(rows, CompiledRows):
        raise TypeError(f"friction model {type(model).__name__}: compiled_rows(h) must return CompiledRows or None")
    return rows


def for_scheme(model, position_update: str):
    """The model a simulation with ``position_update`` runs: ``model.for_scheme(position_update)``
    (checked against the protocol), or ``model`` itself when it has no ``for_scheme``."""
    method = getattr(model, "for_scheme", None)
    if method is None:
        return model
    chosen = method(position_update)
    try:
        return check_friction_model(chosen)
    except TypeError as exc:
        raise TypeError(f"friction model {type(model).__name__}: for_scheme({position_update!r}) gave {exc}") from None


def bristle_compliance(stiffness: float, h: float) -> float:
    """C_T = 1/(k_T h^2) of Peiret 2016 Eq. (26) (0 for k_T = inf, Eq. 29)."""
    return 0.0 if math.isinf(stiffness) else 1.0 / (stiffness * h * h)


@njit(cache=True)
def row_buffers(r, n):
    """Uninitialized (F (2r, n), C (2r), c (2r), hi (2r), basis (r, 2, 2), kinetic (r)) for the
    two-rows-per-contact models, filled by their compiled block builders."""
    return (
        np.empty((2 * r, n)),
        np.empty(2 * r),
        np.empty(2 * r),
        np.empty(2 * r),
        np.empty((r, 2, 2)),
        np.empty(r, np.bool_),
    )


def world_force_in_bases(components, basis, tangent, h):
    """World friction force (r, 3) in N from impulses h lam (r, 2) given in per-contact bases
    ``basis`` (r, 2, 2) (columns: the directions in base (t1, t2) coordinates)."""
    out = np.empty((tangent.shape[0], 3))
    world_kernel(np.ascontiguousarray(components), np.ascontiguousarray(basis), tangent, h, out)
    return out


@njit(cache=True)
def world_kernel(components, basis, tangent, h, out):
    """The loop of :func:`world_force_in_bases`, into ``out``."""
    for i in range(components.shape[0]):
        b1 = (basis[i, 0, 0] * components[i, 0] + basis[i, 0, 1] * components[i, 1]) / h
        b2 = (basis[i, 1, 0] * components[i, 0] + basis[i, 1, 1] * components[i, 1]) / h
        for j in range(3):
            out[i, j] = b1 * tangent[i, 0, j] + b2 * tangent[i, 1, j]


def basis_settled(force, used, normal_force, bounded, mu_static, tolerance, kinetic) -> bool:
    """Whether a model's ``basis_passes`` may stop: the last pass would be repeated by the next.
    Its normal force ``normal_force`` (r,) lies within ``tolerance`` x lam_N of the ``bounded``
    one its bounds were built on, and the friction force ``force`` (r, 3, N) of every contact in
    its static branch (``kinetic`` False; a kinetic contact's rows do not read the basis) within
    ``tolerance`` x max(|force|, mu_s lam_N) of the force ``used`` it built its static basis on:
    a contact at rest settles at once, a static force that turns or a normal force that changes
    takes the passes."""
    return not unsettled(force, used, normal_force, bounded, mu_static, tolerance, kinetic).any()


def unsettled(force, used, normal_force, bounded, mu_static, tolerance, kinetic) -> np.ndarray:
    """(r,) bool: the contacts that keep :func:`basis_settled` from holding (same arguments), so
    that a step split into independent islands ends each island's passes on its own contacts."""
    normal_force, bounded = np.maximum(normal_force, 0.0), np.maximum(bounded, 0.0)
    out = np.abs(normal_force - bounded) > tolerance * np.maximum(normal_force, bounded)
    static = ~np.asarray(kinetic, bool)
    scale = np.maximum(np.sqrt((force**2).sum(axis=1)), mu_static * normal_force)
    return out | (static & ~(np.sqrt(((force - used) ** 2).sum(axis=1)) <= tolerance * scale))
