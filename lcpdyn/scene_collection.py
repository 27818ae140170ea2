"""Ready scenes, found without importing them.

The library (command line, sweeps, rebuilding a run from its file) never imports a scene package:
a package declares its scene collection under the entry-point group :data:`GROUP`
(``lcpdyn.scenes``), as this project's ``scenes`` package does in ``pyproject.toml``::

    [project.entry-points."lcpdyn.scenes"]
    lcpdyn = "scenes"

and :func:`scene_collection` loads what is installed; a caller can also hand a registry in
(``simulation_from_parameters(..., scenes={...})``). A collection is a module or any object with

* ``SCENES``: name -> scene module (``DEFAULTS``, ``build(**parameters) -> Scene``);
* optionally ``STABILITY`` (name -> linearization module) and ``REPORTS`` (name -> module with
  ``report(out_dir)``);
* for the command line, ``describe()``, ``override(defaults, overrides, scene)``,
  ``build_scene(name, **parameters)`` and ``PARAMETER_UNITS`` (as :mod:`scenes` has them).

Several installed collections are merged: the registries are joined (a name given twice is an
error naming both packages), the helpers come from the one named ``lcpdyn``, else the first.
"""

from __future__ import annotations

import functools
import types
from importlib.metadata import entry_points

__all__ = ["GROUP", "NoSceneCollection", "scene_collection"]

GROUP = "lcpdyn.scenes"
"""The entry-point group under which a package registers its scene collection."""
REGISTRIES = ("SCENES", "STABILITY", "REPORTS")


class NoSceneCollection(LookupError):
    """No scene collection is installed (lcpdyn itself was not installed, or installed without
    its entry points)."""


@functools.lru_cache(maxsize=1)
def scene_collection():
    """The installed scene collection (module docstring), loaded once per process."""
    found = sorted(entry_points(group=GROUP), key=lambda point: (point.name != "lcpdyn", point.name))
    if not found:
        raise NoSceneCollection(
            f"no scene collection is installed (entry-point group {GROUP!r}): install lcpdyn "
            "(pip install -e . in a checkout) so that its scenes are registered, or pass a registry in"
        )
    loaded = [(point.name, point.load()) for point in found]
    if len(loaded) == 1:
        return loaded[0][1]
    primary = loaded[0][1]
    merged = types.SimpleNamespace(
        **{name: getattr(primary, name) for name in dir(primary) if not name.startswith("_")}
    )
    for registry in REGISTRIES:
        joined, owner = {}, {}
        for package, collection in loaded:
            for key, value in getattr(collection, registry, {}).items():
                if key in joined:
                    raise ValueError(f"scene {key!r} of {registry} is given by both {owner[key]!r} and {package!r}")
                joined[key], owner[key] = value, package
        setattr(merged, registry, joined)
    return merged
