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

from . import (
    ball_on_beam,
    beam_tyre_shimmy,
    blocks,
    caster_shimmy,
    crate_on_half_car,
    half_car,
    incline_pendulum,
    jointed_chain,
    road_wheel,
    rolling_disk,
    scale,
    swivel_shimmy,
    wheel,
    wheel_into_boxes,
    wheelset_hunting,
    wheelset_klingel,
)
from .scene import PARAMETER_UNITS, Scene, build_scene, describe, override

# time-stepper scenes (``lcpdyn run``)
SCENES = {
    "wheel": wheel,
    "sliding-block": blocks.SlidingBlock,
    "incline-block": blocks.InclineBlock,
    "puck": blocks.Puck,
    "sliding-sphere": blocks.SlidingSphere,
    "rolling-disk": rolling_disk,
    "road-wheel": road_wheel,
    "incline-pendulum": incline_pendulum,
    "beam-tyre-shimmy": beam_tyre_shimmy,
    "half-car": half_car,
    "spheres": scale.Spheres,
    "boxes": scale.Boxes,
    "dumbbells": scale.Dumbbells,
    "wheelset-klingel": wheelset_klingel,
    "wheelset-hunting": wheelset_hunting,
    "chain-on-box": jointed_chain,
    "wheel-into-boxes": wheel_into_boxes,
    "crate-on-half-car": crate_on_half_car,
    "ball-on-beam": ball_on_beam,
}

# scenes with a paper report (``lcpdyn reproduce``): report(out_dir) -> numbers
REPORTS = {
    "rolling-disk": rolling_disk,
    "swivel-shimmy": swivel_shimmy,
    "caster-shimmy": caster_shimmy,
    "road-wheel": road_wheel,
    "incline-pendulum": incline_pendulum,
    "beam-tyre-shimmy": beam_tyre_shimmy,
    "half-car": half_car,
    "wheelset-klingel": wheelset_klingel,
    "wheelset-hunting": wheelset_hunting,
}

# linearization scenes in minimal coordinates (``lcpdyn stability``): system(), nominal(p), SWEEP
STABILITY = {
    "rolling-disk": rolling_disk,
    "swivel-shimmy": swivel_shimmy,
    "caster-shimmy": caster_shimmy,
    "beam-tyre-shimmy": beam_tyre_shimmy,
    "wheelset-hunting": wheelset_hunting,
}

__all__ = ["SCENES", "STABILITY", "REPORTS", "Scene", "build_scene", "describe", "override", "PARAMETER_UNITS"]
