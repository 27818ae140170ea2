"""Friction models, one file each, behind one protocol (:mod:`lcpdyn.friction.base`):
``regularized`` (Peiret 2016, the bristle/hybrid model), ``polygonal`` (Anitescu-Potra),
``box`` (Lacoursière), ``coulomb`` (the exact cone), ``continuous`` (Bauchau 2002 Eq. 28) and
``creep`` (wheel–rail creep forces: Kalker's linear theory with Vermeulen–Johnson saturation).

Every model but ``coulomb`` contributes a block of unknowns and rows to the bounded mixed LCP
of Peiret 2016 Eq. (30) (see :mod:`lcpdyn.stepper` and :class:`FrictionBlock`); ``coulomb`` poses
the step as the 3D friction-contact problem on the Delassus operator.

A model of your own plugs in without editing the stepper: write a class with the members of
:class:`FrictionModel` (``tests/test_friction_protocol.py`` adds an orthotropic box model this
way), pass an instance as ``Simulation(model, friction=MyModel())``, or :func:`register` the
class to select it by name (and rebuild runs that used it from their files).

Conventions: r contacts; D (2r x n) in each contact's *base* tangent basis (t1, t2) from the
geometry; ``normal_force`` lamN (r,) is the previous step's (or the fixed-point iterate's)
normal force in N; ``friction_force`` (r, 3) the previous world friction force in N.
"""

from __future__ import annotations

import solvers  # noqa: F401  (first: Numba's cache locators, solvers.compiled_cache)

from .base import (
    BOUNDED_LCP,
    FRICTION_CONTACT,
    CompiledRows,
    FrictionBlock,
    FrictionModel,
    check_friction_model,
    compiled_rows,
    for_scheme,
)
from .box import Box
from .continuous import Continuous
from .coulomb import Coulomb
from .creep import Creep
from .polygonal import Polygonal
from .regularized import Regularized

__all__ = [
    "FrictionBlock",
    "FrictionModel",
    "CompiledRows",
    "BOUNDED_LCP",
    "FRICTION_CONTACT",
    "Regularized",
    "Polygonal",
    "Box",
    "Coulomb",
    "Continuous",
    "Creep",
    "make_friction",
    "register",
    "check_friction_model",
    "compiled_rows",
    "for_scheme",
    "MODELS",
]

MODELS = {cls.name: cls for cls in (Regularized, Polygonal, Box, Coulomb, Continuous, Creep)}
"""The models selectable by name: the built-in ones and those added by :func:`register`."""


def register(model_class, *, replace: bool = False):
    """Make ``model_class`` selectable by its ``name`` (``Simulation(model, "my-model")``, the
    CLI, rebuilding a run from its file). The class must build with its defaults and satisfy the
    protocol (:func:`check_friction_model`); a name already taken by another class raises unless
    ``replace``. Returns the class, so it serves as a decorator."""
    if not isinstance(model_class, type):
        raise TypeError(f"register expects a friction model class, got {type(model_class).__name__}")
    try:
        instance = model_class()
    except TypeError as exc:
        raise TypeError(f"friction model {model_class.__name__} must build with its defaults: {exc}") from None
    check_friction_model(instance)
    name = instance.name
    if MODELS.get(name, model_class) is not model_class and not replace:
        raise ValueError(f"a friction model named {name!r} is registered already ({MODELS[name].__name__})")
    MODELS[name] = model_class
    return model_class


def make_friction(model, **parameters):
    """A friction model from a registered name (with its parameters) or a model object (checked
    against the protocol, :func:`check_friction_model`)."""
    if not isinstance(model, str):
        if parameters:
            raise TypeError("pass parameters only with a model name")
        return check_friction_model(model)
    if model not in MODELS:
        raise ValueError(f"unknown friction model {model!r}; choose one of {sorted(MODELS)}")
    try:
        return MODELS[model](**parameters)
    except TypeError as exc:
        raise TypeError(f"friction model {model!r}: {exc}") from None
