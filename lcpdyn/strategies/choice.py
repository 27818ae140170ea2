"""The choice of a step's solve strategy, made in one place from the problem's size and structure: the
dense problem, the condensed one, or islands (one per body, or per group of bodies that bilateral rows
couple, found from the rows' structural pattern)."""

from __future__ import annotations

import numpy as np

from solvers.options import build_options

from ..islands import BodyGroups, row_bodies
from ..kkt import SPARSE_SIZE


def choose_islands(sim, sparse):
    """The island layout (:mod:`lcpdyn.islands`) when the step is solved island by island,
    else None (the dense path). Without bilateral rows: one island per body with contacts
    (:class:`~lcpdyn.islands.Islands`, the compiled per-body kernels); with them: the bodies
    coupled by the rows' structural pattern (:class:`~lcpdyn.islands.BodyGroups`). Either
    way ``sim._groups`` holds the groups the general island path iterates over."""
    model = sim.model
    sim._condensed = False
    nb = len(model.bodies)
    index = model.index()
    contact_body = np.array([index[id(c.body)] for c in model.contacts], np.int64)
    sim._coupled = model.n_bilateral > 0
    if sparse is False:
        return None  # the dense path, chosen: no structural pattern to find
    reasons = []
    if sim._coupled:
        groups = BodyGroups(
            nb,
            contact_body,
            structural_pattern(
                sim,
            ),
        )
        if groups.sparsity_error is not None:
            j = groups.sparsity_error
            reasons.append(f"the bilateral row of {sim._bilateral_rows[j]!r} (row {j}) touches no body")
        elif not groups.splits:
            reasons.append(
                f"the model's {model.n_bilateral} bilateral rows (joints, ideal rolling) couple all "
                "its bodies into one island"
            )
    else:
        groups = BodyGroups(nb, contact_body, np.zeros((0, nb), bool))
    if sim.coulomb and sim.method != "nsgs":
        reasons.append(f"method {sim.method!r} (the islands of the exact cone are solved by 'nsgs')")
    if sim.position_update == "midpoint":
        reasons.append("position_update='midpoint' (solved whole: its friction rows are rewritten in v_m)")
    bounded = getattr(sim, "_row_bounds", None) is not None
    condensable = sim._coupled and not sim.coulomb and sim.position_update != "midpoint" and not bounded
    if sparse == "condensed" or (sparse == "auto" and condensable and groups.largest > SPARSE_SIZE):
        if not condensable:
            raise ValueError(
                "sparse='condensed' eliminates bilateral rows as equalities for a bounded-LCP friction model: "
                "this simulation has "
                + (
                    "no bilateral rows"
                    if not sim._coupled
                    else "bounded or unilateral rows (lcpdyn.bounded_rows)"
                    if bounded
                    else "coulomb or the midpoint scheme"
                )
            )
        sim._condensed = True
        return None
    if sparse is False or (sparse == "auto" and (reasons or nb == 1)):
        return None  # one body: the island is the whole problem, the dense path solves it
    if reasons:
        raise ValueError("sparse=True: the step cannot be split into islands: " + "; ".join(reasons))
    from ..islands import Islands

    sim._groups = groups
    if sim.coulomb:
        from solvers.friction_contact import Options as FrictionContactOptions

        sim._nsgs_options = build_options(FrictionContactOptions, "nsgs", sim.solver_options)
    return groups if sim._coupled else Islands(contact_body)


WHOLE_SIZE = 400
"""With colliders and ``sparse="auto"``: a step of at most this many unknowns (velocities,
bilateral rows, three per contact) is solved whole, a larger one island by island. Each island
costs a fixed ~0.3 ms of assembly and dispatch besides its solve; measured (CPU per step, one
core): 40 spheres resting apart in a bin (360 unknowns) 10.5 ms whole against 12.3 ms in 40
islands; 80 spheres (99 contacts, 777 unknowns) 69 ms whole against 20.5 ms."""


def setup_collisions(sim, options):
    """The simulation's detected contacts (:class:`lcpdyn.detected_contacts.CollisionSource`) where
    its model has colliders, with their islands and sparse settings; the options a refused
    combination is named by. Returns the options the rest of the set-up takes (``sparse=False``
    with colliders: the islands of declared contacts alone do not apply)."""
    sim._collisions = sim._detected_groups = sim._sparse_settings = None
    sim._split_always = False
    if not sim.model.colliders:
        return options
    from ..detected_contacts import CollisionSource

    refused = []
    if getattr(sim.friction, "rolling_kinematics", False):
        refused.append(f"friction model {sim.friction.name!r} (it needs the spin and rolling speed of "
                       "wheel contacts, which detected contacts do not have)")  # fmt: skip
    if options.compiled_loop is True:
        refused.append("compiled_loop=True (its contact set is fixed)")
    if options.sparse == "condensed":
        refused.append("sparse='condensed' (a step with detected contacts is split into islands or whole)")
    if refused:
        raise ValueError("a model with colliders does not take " + "; ".join(refused))
    sim._collisions = CollisionSource(sim.model)
    sim._fused = False  # the fused kernel's problem size is fixed
    sim._detected_groups = choose_detected_islands(sim, options.sparse)
    sim._sparse_settings = choose_sparse_settings(sim, options)
    return options.replace(sparse=False)


def choose_detected_islands(sim, sparse):
    """With colliders (:mod:`lcpdyn.detected_contacts`): the static groups of bodies that
    bilateral rows couple (:class:`~lcpdyn.islands.BodyGroups`), which each step joins through
    its detected contacts into that step's islands (:func:`lcpdyn.strategies.detected.detected_islands`);
    or None, the step solved whole: ``sparse=False``, or a bilateral row that touches no body.
    ``sparse=True`` splits every step (``"auto"``: the steps of more than :data:`WHOLE_SIZE`
    unknowns) and raises where the step cannot be split."""
    sim._split_always = sparse is True
    if sparse is False:
        return None
    model = sim.model
    nb = len(model.bodies)
    index = model.index()
    contact_body = np.array([index[id(c.body)] for c in model.contacts], np.int64)
    pattern = structural_pattern(sim) if model.n_bilateral else np.zeros((0, nb), bool)
    groups = BodyGroups(nb, contact_body, pattern)
    reasons = []
    if groups.sparsity_error is not None:
        reasons.append(f"the bilateral row of {sim._bilateral_rows[groups.sparsity_error]!r} touches no body")
    if reasons and sparse is True:
        raise ValueError("sparse=True: the step cannot be split into islands: " + "; ".join(reasons))
    return None if reasons else groups


def choose_sparse_settings(sim, options):
    """With colliders: the settings of the sparse solve of large islands of detected contacts
    (:func:`~lcpdyn.strategies.sparse_island.sparse_applies`), or None where it never applies:
    ``sparse=False`` (every step posed dense, as asked), extra normal-force passes
    (``normal_force_iterations``, which the sparse solve does not make), or Moreau's midpoint
    scheme (whose rows in v_m the sparse form does not write). For a bounded-LCP model,
    ``bounded`` says whether its block has two friction rows per contact without P (the sparse
    form's contact blocks); a model's basis passes (the cone) are taken there too."""
    from .sparse_island import SparseSettings, two_rows

    if options.sparse is False or options.normal_force_iterations:
        return None
    if sim.position_update == "midpoint":
        return None
    bounded = not sim.coulomb and two_rows(sim.friction, sim.dt)
    return SparseSettings(
        sim.tolerance, options.bound_passes, options.bound_change, bounded=bounded, basis_passes=sim._basis_passes
    )


def structural_pattern(sim) -> np.ndarray:
    """(m, nb) bool: the bodies each bilateral row can touch -- the pattern of A at the
    initial state and at two random states (random positions, unit quaternions, velocities
    and time), so a user's constraint is split correctly without declaring its bodies; an
    entry zero at all three is structurally zero (each step still checks its A against it,
    :meth:`~lcpdyn.islands.BodyGroups.conforms`)."""
    nb = len(sim.model.bodies)
    q0, v0 = sim.model.initial_state()
    k = sim.evaluate(q0, v0, 0.0)
    pattern = row_bodies(k.A_block, k.A_body, nb)
    rng = np.random.default_rng(20261125)
    for _ in range(2):
        q = q0.reshape(nb, 7).copy()
        q[:, :3] += rng.normal(size=(nb, 3))
        quaternion = rng.normal(size=(nb, 4))
        q[:, 3:] = quaternion / np.linalg.norm(quaternion, axis=1, keepdims=True)
        k = sim.evaluate(q.reshape(-1), rng.normal(size=v0.shape), float(rng.uniform(0.1, 1.0)))
        pattern |= row_bodies(k.A_block, k.A_body, nb)
    return pattern
