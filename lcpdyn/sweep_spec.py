"""What a sweep is (:mod:`lcpdyn.sweep`): its specification (:class:`SweepSpec`, :class:`Reference`),
the metrics and bookkeeping fields of its table, and the options it may vary."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from dataclasses import asdict, dataclass, field

import numpy as np

from . import __version__
from .scene_collection import scene_collection

METRICS = (
    "force_rms_deviation_percent",
    "force_rms_deviation_sliding_percent",
    "misalignment_rms_deg",
    "static_force_ratio_max",
    "position_error_final",
    "position_error_max",
    "position_error_final_per_path",
    "energy_error_final_J",
    "energy_error_max_abs_J",
    "energy_error_max_relative",
    "first_roll_s",
    "first_roll_error_s",
)
"""A run's scores against its reference (:func:`lcpdyn.metrics.summary`, plus its first
slide-to-roll time and that time's distance from the reference's), NaN where undefined or failed."""

RUN_FIELDS = ("wall_s", "steps", "fallback_steps", "energy_gain_steps", "compilations", "compiled_steps", "batch")
"""A run's bookkeeping: wall time (s, build and run), steps taken, steps whose first solver failed
and the fallback's answer was used, steps flagged for an energy gain, compilations it caused,
steps taken by the compiled loop (:mod:`lcpdyn.compiled_loop`), and the runs of the batch it ran
in (:mod:`lcpdyn.batch`; 1: alone). A batched run's wall time is its batch's shared evenly, and
its batch's compilations are on the batch's first run."""

REFERENCE_METRICS = (
    "force_rms_deviation_percent",
    "force_rms_deviation_sliding_percent",
    "position_error_final",
    "position_error_max",
    "energy_error_max_abs_J",
    "first_roll_s",
)
"""The columns in which the reference's own error is estimated (``reference_error_<name>``)."""

OPTIONS = (
    "method",
    "tolerance",
    "position_update",
    "stabilization",
    "normal_force_iterations",
    "fallback_method",
    "static_threshold",
    "gyroscopic",
    "sparse",
    "compiled_loop",
    "on_unsolved",
)
"""The :class:`~lcpdyn.stepper.Simulation` options a sweep may vary (``options=``)."""

NOT_RUN = "not run"


# --- what a sweep is ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Reference:
    """The run every run of a scene-parameter point is scored against: friction model
    ``friction`` at step ``dt`` (s), or ``friction="exact"``: the event-driven exact Coulomb
    solution (:func:`lcpdyn.reference.exact_coulomb`) sampled every ``dt``."""

    friction: str = "coulomb"
    dt: float = 1e-4
    position_update: str = "symplectic"

    @classmethod
    def parse(cls, text) -> Reference | None:
        """``"MODEL@DT"`` (``"coulomb@1e-4"``, ``"exact@1e-4"``), a :class:`Reference`, or
        None / ``"none"``: no reference (runs are timed and checked, not scored)."""
        if text is None or text == "none":
            return None
        if isinstance(text, Reference):
            return text
        if isinstance(text, dict):
            return cls(**text)
        if not isinstance(text, str) or text.count("@") != 1:
            raise ValueError(f"reference must be 'MODEL@DT' (e.g. 'coulomb@1e-4', 'exact@1e-4'), got {text!r}")
        name, step = text.split("@")
        try:
            dt = float(step)
        except ValueError:
            raise ValueError(f"reference {text!r}: the step after '@' must be a number, got {step!r}") from None
        return cls(name.strip(), dt)

    @property
    def label(self) -> str:
        """The reference run's short name in tables: "friction@dt"."""
        return f"{self.friction}@{self.dt:g}"


@dataclass(frozen=True)
class SweepSpec:
    """A sweep, validated (:meth:`checked`). ``grid``: scene parameter -> values, every
    combination run; or ``points``: a list of scene-parameter dicts run as given (one dimension
    ``point``). ``fixed``: scene parameters held at one value. ``friction``, ``dt`` (s) and
    ``options`` (a :data:`OPTIONS` name -> values) multiply the scene points."""

    scene: str
    grid: dict = field(default_factory=dict)
    points: tuple | None = None
    friction: tuple = ("regularized",)
    dt: tuple = ()
    options: dict = field(default_factory=dict)
    reference: Reference | None = Reference()
    t_end: float | None = None
    fixed: dict = field(default_factory=dict)
    compiled_loop: object = "auto"

    def checked(self) -> SweepSpec:
        """This sweep with every name and number checked before anything runs (a ``ValueError``
        names the culprit), ``dt`` defaulting to the scene's and ``t_end`` made explicit."""
        collection = scene_collection()
        SCENES, override = collection.SCENES, collection.override

        from .friction import MODELS

        if self.scene not in SCENES:
            raise ValueError(f"unknown scene {self.scene!r}; choose one of {sorted(SCENES)}")
        defaults = SCENES[self.scene].DEFAULTS
        fixed = override(defaults, dict(self.fixed), self.scene)
        for key in ("dt", "t_end"):
            if key in self.grid or key in self.fixed or any(key in p for p in self.points or ()):
                raise ValueError(f"sweep: {key} is not a scene parameter to sweep; use the sweep's {key}= instead")
        grid = {}
        for key, values in self.grid.items():
            values = tuple(_plain(v) for v in np.atleast_1d(np.asarray(values, dtype=object)).tolist())
            if not values:
                raise ValueError(f"sweep: grid parameter {key!r} has no values")
            if len(set(values)) != len(values):
                raise ValueError(f"sweep: grid parameter {key!r} repeats a value: {list(values)}")
            for value in values:
                override(defaults, {key: value}, self.scene)  # unknown names, non-numbers, NaN
            grid[key] = values
        points = None
        if self.points is not None:
            if grid:
                raise ValueError("sweep: give a grid or a list of points, not both")
            points = tuple({k: _plain(v) for k, v in dict(p).items()} for p in self.points)
            if not points:
                raise ValueError("sweep: the list of points is empty")
            keys = set(points[0])
            for p in points:
                if set(p) != keys:
                    raise ValueError(f"sweep: every point must set the same parameters; {sorted(p)} != {sorted(keys)}")
                override(defaults, p, self.scene)
        friction = tuple(_strings(self.friction, "friction"))
        for name in friction:
            if name not in MODELS:
                raise ValueError(f"sweep: unknown friction model {name!r}; choose from {sorted(MODELS)}")
        steps = tuple(float(d) for d in np.atleast_1d(self.dt)) if len(np.atleast_1d(self.dt)) else (fixed["dt"],)
        for d in steps:
            if not (math.isfinite(d) and d > 0):
                raise ValueError(f"sweep: every step size dt must be finite and > 0, got {d!r}")
        if len(set(steps)) != len(steps):
            raise ValueError(f"sweep: dt repeats a value: {list(steps)}")
        options = {}
        for key, values in self.options.items():
            if key not in OPTIONS:
                raise ValueError(f"sweep: option {key!r} cannot be swept; choose from {list(OPTIONS)}")
            options[key] = tuple(_plain(v) for v in np.atleast_1d(np.asarray(values, dtype=object)).tolist())
            if not options[key]:
                raise ValueError(f"sweep: option {key!r} has no values")
        reference = Reference.parse(self.reference)
        if reference is not None and reference.friction != "exact" and reference.friction not in MODELS:
            raise ValueError(
                f"sweep: unknown reference model {reference.friction!r}; choose 'exact' or one of {sorted(MODELS)}"
            )
        if reference is not None and not (math.isfinite(reference.dt) and reference.dt > 0):
            raise ValueError(f"sweep: the reference's step must be finite and > 0, got {reference.dt!r}")
        t_end = fixed["t_end"] if self.t_end is None else float(self.t_end)
        if not (math.isfinite(t_end) and t_end > 0):
            raise ValueError(f"sweep: t_end must be finite and > 0, got {self.t_end!r}")
        fixed = {k: _plain(v) for k, v in dict(self.fixed).items()}
        if self.compiled_loop not in ("auto", True, False):
            raise ValueError(f"sweep: compiled_loop must be 'auto', True or False, got {self.compiled_loop!r}")
        return SweepSpec(
            self.scene, grid, points, friction, steps, options, reference, t_end, fixed, self.compiled_loop
        )

    # the runs
    def scene_points(self) -> list[dict]:
        """The scene-parameter points (the grid's combinations, in order, or the list)."""
        if self.points is not None:
            return [dict(p) for p in self.points]
        keys = list(self.grid)
        return [dict(zip(keys, values)) for values in itertools.product(*(self.grid[k] for k in keys))]

    def runs(self) -> list[dict]:
        """Every run: ``{"point": index into scene_points(), "friction", "dt", **options}``."""
        option_keys = list(self.options)
        out = []
        for i, _ in enumerate(self.scene_points()):
            for friction, dt, *values in itertools.product(
                self.friction, self.dt, *(self.options[k] for k in option_keys)
            ):
                out.append({"point": i, "friction": friction, "dt": dt, **dict(zip(option_keys, values))})
        return out

    def identity(self) -> dict:
        """What a results directory must agree on to be resumed (everything but the swept values)."""
        return {
            "scene": self.scene,
            "fixed": self.fixed,
            "reference": _reference_dict(self.reference),
            "t_end": self.t_end,
            "compiled_loop": self.compiled_loop,
            "lcpdyn_version": __version__,
        }

    def to_json(self) -> str:
        """The spec as canonical JSON (sorted keys): what a sweep's folder records and resumes from."""
        data = asdict(self)
        data["reference"] = _reference_dict(self.reference)
        data["points"] = None if self.points is None else [dict(p) for p in self.points]
        return json.dumps(data, sort_keys=True)

    def run_key(self, run: dict) -> str:
        """A run's name in the results directory: a hash of its scene point and settings."""
        point = self.scene_points()[run["point"]]
        text = json.dumps({"scene": point, **{k: v for k, v in run.items() if k != "point"}}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:20]

    def point_key(self, index: int) -> str:
        """The 20-hex-digit key of point ``index`` (a hash of its scene parameters): its result's name in the
        sweep's folder."""
        text = json.dumps(self.scene_points()[index], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:20]


def _reference_dict(reference) -> dict | None:
    reference = Reference.parse(reference)
    return None if reference is None else asdict(reference)


def _reference_label(reference) -> str:
    return "none" if reference is None else reference.label


def _plain(value):
    """A JSON- and netCDF-friendly scalar (NumPy scalars to Python's)."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple, dict, set)) or value is None:
        raise ValueError(f"sweep: swept values must be numbers, strings or booleans, got {value!r}")
    return value


def _strings(values, what) -> list[str]:
    values = [values] if isinstance(values, str) else list(values)
    if not values:
        raise ValueError(f"sweep: {what} has no values")
    for v in values:
        if not isinstance(v, str):
            raise ValueError(f"sweep: {what} values must be names, got {v!r}")
    if len(set(values)) != len(values):
        raise ValueError(f"sweep: {what} repeats a value: {values}")
    return values
