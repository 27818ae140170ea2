"""The exact Coulomb cone with maximal dissipation."""

from __future__ import annotations

from .base import FRICTION_CONTACT

__all__ = ["Coulomb"]


class Coulomb:
    """The exact Coulomb cone with maximal dissipation, the reference of Peiret 2016: per
    contact lam in {lam_N >= 0, |lam_T| <= mu lam_N}, stick (slip 0) inside, slide with
    lam_T = -mu lam_N v_T/|v_T| on the boundary, normal complementarity with the normal
    velocity. Its step is the friction-contact problem (:data:`~lcpdyn.friction.base.FRICTION_CONTACT`):
    solved every step to ``tolerance`` on the Delassus problem u = W r + b obtained by
    eliminating v+ and the bilateral multipliers (:func:`solvers.friction_contact.solve_friction_contact`,
    method ``nsgs`` with exact local solves by default, ``siconos-nsgs`` or ``siconos-nsn-ac``
    for Siconos' fc3d)."""

    name = "coulomb"
    default_method = "nsgs"
    formulation = FRICTION_CONTACT
    chooses_static_coefficient = False

    def parameters(self) -> dict:
        """{"model": "coulomb"}: the exact cone has no numbers of its own."""
        return {"model": self.name}
