"""The options of a simulation's step and run, as one frozen, typed object validated once.

:class:`StepOptions` holds every choice of :class:`lcpdyn.stepper.Simulation` that is not a
number of the model: the solver, its tolerance and fallback, the time-stepping scheme, the solve
strategy and the run's checks. ``Simulation(model, friction, dt, options=StepOptions(...))`` and
``Simulation(model, friction, dt, method=..., tolerance=...)`` are the same; the keywords are
applied to ``options`` with :func:`dataclasses.replace`, which validates again. What the options
mean for the step is derived in ``docs/theory/step.md``; the fields recorded in every output
file, and passed back when a run is rebuilt from its file, are :data:`RECORDED`.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping

from .validation import finite_number, positive

__all__ = ["StepOptions", "POSITION_UPDATES", "RECORDED", "COLLISION_RECORDED"]

POSITION_UPDATES = ("symplectic", "paper", "midpoint")
"""The time-stepping schemes of ``position_update`` (docs/theory/step.md)."""


def _integer(name, value, least, alternative=""):
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{name} must be an integer >= {least}{alternative}, got {value!r}")
    return value


@dataclasses.dataclass(frozen=True)
class StepOptions:
    """How :class:`lcpdyn.stepper.Simulation` steps and runs (its docstring says what each
    field does; ``docs/theory/step.md`` derives the schemes).

    method, fallback_method, solver_options, tolerance : the solver of Eq. (30) (or of the exact
        cone's problem), its fallback (``"auto"``: chosen for the method; ``None``: none), its
        options (a mapping, copied) and the acceptance bound on the framework's relative
        residual. ``method=None`` takes the friction model's default.
    position_update, gyroscopic, stabilization : the scheme (``"symplectic"``, ``"paper"``,
        ``"midpoint"``), the treatment of omega x I omega (``None``: ``"explicit"`` with
        ``"paper"``, else ``"midpoint"``) and beta in [0, 1] for penetration and drift.
    normal_force_iterations : extra passes toward mu lam_N+ (>= 0).
    bound_passes, bound_change : at most ``bound_passes`` (>= 0) more solves of a step whose
        detected contacts' friction bounds mu lam_N moved by more than the share ``bound_change``
        (>= 0) where it matters (``docs/theory/detected-contacts.md``, "Friction bounds").
    static_threshold : slip speed (m/s) below which a contact counts as sticking (>= 0).
    fused, sparse, compiled_loop : the solve strategy's choices (``sparse`` one of ``"auto"``,
        ``True``, ``False``, ``"condensed"``; ``compiled_loop`` one of ``"auto"``, ``True``,
        ``False``).
    energy_check, energy_tolerance : ``"warn"``, ``"stop"`` or ``"off"``, and the relative bound
        of the run's energy check (> 0).
    blas_threads : BLAS threads while a run runs (>= 1, or ``None`` to leave the process's
        setting alone); not recorded, as it changes no number of the run.
    """

    method: str | None = None
    tolerance: float = 1e-9
    position_update: str = "symplectic"
    stabilization: float = 1.0
    normal_force_iterations: int = 0
    fallback_method: str | None = "auto"
    solver_options: Mapping = dataclasses.field(default_factory=dict, hash=False)
    fused: bool = True
    static_threshold: float = 0.01
    gyroscopic: str | None = None
    energy_check: str = "warn"
    energy_tolerance: float = 1e-3
    blas_threads: int | None = 1
    sparse: bool | str = "auto"
    compiled_loop: bool | str = "auto"
    bound_passes: int = 2
    bound_change: float = 0.5

    def __post_init__(self):
        def put(name, value):
            object.__setattr__(self, name, value)

        if self.method is not None and not isinstance(self.method, str):
            raise ValueError(f"method must be a method's name or None, got {self.method!r}")
        if self.fallback_method is not None and not isinstance(self.fallback_method, str):
            raise ValueError(f"fallback_method must be a method's name, 'auto' or None, got {self.fallback_method!r}")
        put("tolerance", positive("tolerance", self.tolerance))
        if self.solver_options is None:
            put("solver_options", {})
        if not isinstance(self.solver_options, Mapping):
            raise ValueError(f"solver_options must be a dict, got {type(self.solver_options).__name__}")
        put("solver_options", types.MappingProxyType(dict(self.solver_options)))
        if self.position_update not in POSITION_UPDATES:
            raise ValueError(f"position_update must be one of {POSITION_UPDATES}, got {self.position_update!r}")
        if self.gyroscopic not in (None, "explicit", "midpoint"):
            raise ValueError(f"gyroscopic must be 'explicit', 'midpoint' or None, got {self.gyroscopic!r}")
        if self.position_update == "midpoint" and self.gyroscopic_scheme != "midpoint":
            raise ValueError(
                "position_update='midpoint' needs gyroscopic='midpoint' (the explicit c = omega x I omega "
                "would make the scheme first order)"
            )
        put("stabilization", finite_number("stabilization", self.stabilization))
        if not 0.0 <= self.stabilization <= 1.0:
            raise ValueError(f"stabilization must be in [0, 1], got {self.stabilization!r}")
        _integer("normal_force_iterations", self.normal_force_iterations, 0)
        _integer("bound_passes", self.bound_passes, 0)
        put("bound_change", finite_number("bound_change", self.bound_change))
        if self.bound_change < 0:
            raise ValueError(f"bound_change must be >= 0, got {self.bound_change!r}")
        put("static_threshold", finite_number("static_threshold", self.static_threshold))
        if self.static_threshold < 0:
            raise ValueError(f"static_threshold must be >= 0, got {self.static_threshold!r}")
        if not isinstance(self.fused, bool):
            raise ValueError(f"fused must be True or False, got {self.fused!r}")
        if self.sparse not in ("auto", True, False, "condensed"):
            raise ValueError(f"sparse must be 'auto', True, False or 'condensed', got {self.sparse!r}")
        if not (isinstance(self.compiled_loop, bool) or self.compiled_loop == "auto"):
            raise ValueError(f"compiled_loop must be 'auto', True or False, got {self.compiled_loop!r}")
        if self.energy_check not in ("warn", "stop", "off"):
            raise ValueError(f"energy_check must be 'warn', 'stop' or 'off', got {self.energy_check!r}")
        put("energy_tolerance", positive("energy_tolerance", self.energy_tolerance))
        if self.blas_threads is not None:
            _integer("blas_threads", self.blas_threads, 1, " or None")

    @property
    def gyroscopic_scheme(self) -> str:
        """``gyroscopic`` with ``None`` resolved: ``"explicit"`` with ``position_update="paper"``,
        else ``"midpoint"``."""
        if self.gyroscopic is not None:
            return self.gyroscopic
        return "explicit" if self.position_update == "paper" else "midpoint"

    def record(self, collisions: bool = False) -> dict:
        """The :data:`RECORDED` fields as plain data (``solver_options`` as a dict, without a
        ``warm_start``, which belongs to one step, not to the run); with ``collisions`` also
        :data:`COLLISION_RECORDED`."""
        fields = {name: getattr(self, name) for name in RECORDED + (COLLISION_RECORDED if collisions else ())}
        fields["solver_options"] = {k: v for k, v in self.solver_options.items() if k != "warm_start"}
        return fields

    def replace(self, **changes) -> StepOptions:
        """A copy with ``changes`` (validated); an unknown name is a TypeError naming it and the
        fields there are."""
        unknown = sorted(set(changes) - {f.name for f in dataclasses.fields(self)})
        if unknown:
            raise TypeError(
                f"unknown option(s) {unknown}; StepOptions has {[f.name for f in dataclasses.fields(self)]}"
            )
        return dataclasses.replace(self, **changes) if changes else self


COLLISION_RECORDED = ("bound_passes", "bound_change")
"""The options that change a run only through detected contacts: recorded where the model has
colliders (a run without them reads the same as before they existed)."""

RECORDED = tuple(
    f.name for f in dataclasses.fields(StepOptions) if f.name != "blas_threads" and f.name not in COLLISION_RECORDED
)
"""The options every output file records (:meth:`lcpdyn.stepper.Simulation.parameters`, as the
simulation resolved them) and :mod:`lcpdyn.rebuild` passes back (with :data:`COLLISION_RECORDED`
where recorded)."""
