"""The :class:`Scene` container and the parameter-override helper shared by all scenes."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from lcpdyn.friction import make_friction
from lcpdyn.model import Model

__all__ = ["Scene", "override", "build_scene", "describe"]


@dataclass
class Scene:
    """A built scene: the model, the parameters that made it and run defaults."""

    name: str
    model: Model
    parameters: dict
    dt: float
    t_end: float
    description: str = ""
    contact_model: dict = field(default_factory=dict)  # k_T, v_th for "regularized"

    def friction(self, name: str):
        """Friction model ``name`` with the scene's contact-model parameters."""
        if name == "regularized":
            keys = ("tangential_stiffness", "velocity_threshold")
            return make_friction(name, **{k: v for k, v in self.contact_model.items() if k in keys})
        if name == "continuous" and "characteristic_velocity" in self.contact_model:
            return make_friction(name, characteristic_velocity=self.contact_model["characteristic_velocity"])
        return make_friction(name)


def override(defaults: dict, overrides: dict, scene: str) -> dict:
    """``defaults`` updated by ``overrides``; unknown names and non-finite numbers raise."""
    unknown = sorted(set(overrides) - set(defaults))
    if unknown:
        raise ValueError(f"scene {scene!r}: unknown parameter(s) {unknown}; known: {sorted(defaults)}")
    out = dict(defaults)
    for key, value in overrides.items():
        if isinstance(defaults[key], str):
            out[key] = str(value)
            continue
        if isinstance(defaults[key], (int, float)) and not isinstance(defaults[key], bool):
            try:
                value = float(value)
            except (TypeError, ValueError):
                raise ValueError(f"scene {scene!r}: parameter {key} must be a number, got {value!r}") from None
            if math.isnan(value) or (math.isinf(value) and key != "tangential_stiffness"):
                raise ValueError(f"scene {scene!r}: parameter {key} must be finite, got {value!r}")
        out[key] = value
    return out


def build_scene(name: str, **parameters) -> Scene:
    from . import SCENES
    if name not in SCENES:
        raise ValueError(f"unknown scene {name!r}; choose one of {sorted(SCENES)}")
    return SCENES[name].build(**parameters)


def describe() -> list[tuple[str, str]]:
    """(name, first docstring line, kinds) of every scene; kinds: run and/or stability."""
    from . import REPORTS, SCENES, STABILITY
    out = []
    for name in dict.fromkeys(list(SCENES) + list(STABILITY)):
        module = SCENES.get(name) or STABILITY[name]
        kinds = "+".join(k for k, table in (("run", SCENES), ("stability", STABILITY), ("reproduce", REPORTS))
                         if name in table)
        out.append((name, (module.__doc__ or "").strip().splitlines()[0], kinds))
    return out
