"""Numba's on-disk cache of lcpdyn's compiled functions, kept only while every source it depends on is unchanged.

Numba judges a cached function by its own source file alone: a compiled function that calls
one in another module (``judice_pires.pivot`` calls ``basic_systems.minimum_norm_solve``) is
loaded from the cache after the callee's file has changed, and runs the old callee. An
installation from a package rewrites every file, but a git checkout (an editable install) that
pulls a change to one module would run stale machine code without a word. :func:`install` puts
locators first in Numba's list that, for the functions of :mod:`solvers` and :mod:`lcpdyn`
only, add to Numba's stamp of the function's file a hash of every source file of both packages
that uses Numba: a change to any of them makes every cached entry of both packages stale, and
Numba compiles them again (and overwrites the entries). Other code's functions keep Numba's own
locators. ``NUMBA_CACHE_LOCATOR_CLASSES``, where a user sets it, replaces Numba's list and this
one with it.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from numba.core import caching

__all__ = ["install", "sources_stamp"]

_ROOTS = (Path(__file__).resolve().parent, Path(__file__).resolve().parent.parent / "lcpdyn")


@functools.cache
def sources_stamp() -> str:
    """SHA-256 over the path and content of every ``.py`` file of the two packages that mentions
    Numba (read once per process)."""
    digest = hashlib.sha256()
    for root in _ROOTS:
        for path in sorted(root.rglob("*.py")):
            data = path.read_bytes()
            if b"numba" in data:
                digest.update(str(path.relative_to(root.parent)).encode() + b"\0" + data)
    return digest.hexdigest()


def _ours(py_file) -> bool:
    path = Path(py_file).resolve()
    return any(path.is_relative_to(root) for root in _ROOTS)


class _WithDependencies:
    """A locator of a function of these packages whose stamp covers their Numba sources."""

    def get_source_stamp(self):
        return (super().get_source_stamp(), sources_stamp())

    @classmethod
    def from_function(cls, py_func, py_file):
        return super().from_function(py_func, py_file) if _ours(py_file) else None


class _UserProvided(_WithDependencies, caching.UserProvidedCacheLocator):
    pass


class _InTree(_WithDependencies, caching.InTreeCacheLocator):
    pass


class _UserWide(_WithDependencies, caching.UserWideCacheLocator):
    pass


def install() -> None:
    """Put this module's locators first in Numba's list (once; before the packages' compiled
    functions are defined, which is when Numba picks a function's locator)."""
    classes = caching.CacheImpl._locator_classes
    if _InTree not in classes:
        caching.CacheImpl._locator_classes = [_UserProvided, _InTree, _UserWide, *classes]
