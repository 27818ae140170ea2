"""Ready scenes reproducing the source papers and the analytic checks.

Time-stepper scenes are listed in :data:`SCENES`, stability (linearization) scenes in
:data:`STABILITY`.

Each scene module provides ``build(**parameters) -> Scene``; :data:`SCENES` maps names to
modules. ``Scene.model`` is an :class:`lcpdyn.model.Model`; ``Scene.friction(name)`` gives the
friction model with the scene's contact-model parameters (e.g. the wheel's k_T and v_th).

This package is the collection that lcpdyn's command line, sweeps and rebuilding find through the
entry-point group ``lcpdyn.scenes`` (:mod:`lcpdyn.scene_collection`); lcpdyn never imports it.
"""

from __future__ import annotations

import importlib
from collections.abc import MutableMapping


class _Registry(MutableMapping):
    """Scene name -> scene module (or class), imported the first time it is looked up: listing the
    names (the command line's parser, its usage errors) imports no scene, and so neither lcpdyn's
    engine nor JAX. Entries may be set like a dict's."""

    def __init__(self, entries: dict):
        self._entries = dict(entries)

    def __getitem__(self, name):
        value = self._entries[name]
        if isinstance(value, str):  # "module" or "module:attribute" of this package
            module, _, attribute = value.partition(":")
            value = importlib.import_module(f"{__name__}.{module}")
            value = getattr(value, attribute) if attribute else value
            self._entries[name] = value
        return value

    def __setitem__(self, name, value):
        self._entries[name] = value

    def __delitem__(self, name):
        del self._entries[name]

    def __iter__(self):
        return iter(self._entries)

    def __len__(self):
        return len(self._entries)

    def __repr__(self):
        return f"_Registry({list(self._entries)})"


#: time-stepper scenes (``lcpdyn run``)
SCENES = _Registry(
    {
        "wheel": "wheel",
        "sliding-block": "blocks:SlidingBlock",
        "incline-block": "blocks:InclineBlock",
        "puck": "blocks:Puck",
        "sliding-sphere": "blocks:SlidingSphere",
        "rolling-disk": "rolling_disk",
        "road-wheel": "road_wheel",
        "incline-pendulum": "incline_pendulum",
        "beam-tyre-shimmy": "beam_tyre_shimmy",
        "half-car": "half_car",
        "spheres": "scale:Spheres",
        "boxes": "scale:Boxes",
        "dumbbells": "scale:Dumbbells",
        "wheelset-klingel": "wheelset_klingel",
        "wheelset-hunting": "wheelset_hunting",
        "chain-on-box": "jointed_chain",
        "wheel-into-boxes": "wheel_into_boxes",
        "crate-on-half-car": "crate_on_half_car",
        "ball-on-beam": "ball_on_beam",
        "ur5-servo": "robots:UR5Servo",
        "panda-servo": "robots:PandaServo",
        "solo12-stand": "robots:Solo12Stand",
        "a1-stand": "robots:A1Stand",
    }
)

# scenes with a paper report (``lcpdyn reproduce``): report(out_dir) -> numbers
REPORTS = _Registry(
    {
        "rolling-disk": "rolling_disk",
        "swivel-shimmy": "swivel_shimmy",
        "caster-shimmy": "caster_shimmy",
        "road-wheel": "road_wheel",
        "incline-pendulum": "incline_pendulum",
        "beam-tyre-shimmy": "beam_tyre_shimmy",
        "half-car": "half_car",
        "wheelset-klingel": "wheelset_klingel",
        "wheelset-hunting": "wheelset_hunting",
    }
)

#: linearization scenes in minimal coordinates (``lcpdyn stability``): system(), nominal(p), SWEEP
STABILITY = _Registry(
    {
        "rolling-disk": "rolling_disk",
        "swivel-shimmy": "swivel_shimmy",
        "caster-shimmy": "caster_shimmy",
        "beam-tyre-shimmy": "beam_tyre_shimmy",
        "wheelset-hunting": "wheelset_hunting",
    }
)

_FROM_SCENE = ("PARAMETER_UNITS", "Scene", "build_scene", "describe", "override")


def __getattr__(name):
    """The helpers of :mod:`scenes.scene` and the scene modules, imported when first used."""
    if name in _FROM_SCENE:
        return getattr(importlib.import_module(f"{__name__}.scene"), name)
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
