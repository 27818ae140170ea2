"""lcpdyn -- contact dynamics on complementarity solvers.

The complementarity solvers live in the separate top-level package :mod:`solvers` (importable
without JAX). The engine (time stepper, friction models, scenes) builds on them.
"""
from importlib import metadata as _metadata

try:
    __version__ = _metadata.version("lcpdyn")
except _metadata.PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.1.0+source"

__all__ = ["__version__"]
