"""Ready scenes reproducing the source papers and the analytic checks.

Each scene module provides ``build(**parameters) -> Scene``; :data:`SCENES` maps names to
modules. ``Scene.model`` is an :class:`lcpdyn.model.Model`; ``Scene.friction(name)`` gives the
friction model with the scene's contact-model parameters (e.g. the wheel's k_T and v_th).
"""
from __future__ import annotations

from . import blocks, wheel
from .scene import Scene, build_scene, describe

SCENES = {
    "wheel": wheel,
    "sliding-block": blocks.SlidingBlock,
    "incline-block": blocks.InclineBlock,
    "puck": blocks.Puck,
}

__all__ = ["SCENES", "Scene", "build_scene", "describe"]
