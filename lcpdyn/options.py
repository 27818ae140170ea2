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
    """How :class:`lcpdyn.stepper.Simulation` steps and runs (``docs/theory/step.md`` derives the
    schemes and measures their costs).

    method : solver; default the friction model's (``judice-pires``; ``lemke`` for polygonal;
        ``nsgs`` for coulomb). Any of :data:`solvers.METHODS` for the LCP models, any of
        ``solvers.friction_contact.METHODS`` for coulomb.
    tolerance : acceptance bound on the framework's relative residual.
    position_update : ``"symplectic"`` (default: q+ with v+), ``"paper"`` (Eq. 7, known v) or
        ``"midpoint"`` (Moreau's midpoint scheme, second order on smooth phases); docs/theory/step.md says
        why and what each costs.
    gyroscopic : ``"midpoint"`` (implicit midpoint rule for omega x I omega, energy-conserving) or
        ``"explicit"`` (the paper's c at the known omega); default: ``"midpoint"`` with the v+
        update, ``"explicit"`` with ``"paper"``.
    energy_check : ``"warn"`` (default), ``"stop"`` or ``"off"`` -- what
        :meth:`~lcpdyn.stepper.Simulation.run` does about a step whose energy rises more than
        ``energy_tolerance`` (docs/theory/step.md, "Run health").
    energy_tolerance : relative to the run's energy scale S_n, > 0 (default 1e-3).
    stabilization : beta in [0, 1] for penetration and holonomic drift (docs/theory/step.md).
    normal_force_iterations : extra fixed-point passes toward mu lam_N+ (>= 0).
    fallback_method : method used when the first fails (``"auto"``, the default, picks it: lemke
        for judice-pires and vice versa; for coulomb ``prox`` after nsgs and newton, nsgs after
        the others); ``None`` stops at the first failure. (Here ``"auto"`` means "pick"; the
        friction-contact *method* named ``auto`` can be the main method, not the fallback.)
    solver_options : dict of options for ``method`` (see each method's ``Options``).
    static_threshold : slip speed (m/s) below which a contact counts as sticking when choosing
        between mu_s and mu_k for box, polygonal and coulomb (the regularized model uses its v_th).
    fused : for ``regularized`` and ``box`` with ``judice-pires``, assemble and run the first
        pivoting pass in one compiled call (:func:`lcpdyn.kernels.fused_step`). Same problem, same
        algorithm, same residual test, bit-identical results; ``False`` runs the general path
        (separately timed assembly and solve).
    blas_threads : BLAS threads while :meth:`~lcpdyn.stepper.Simulation.run` runs (threadpoolctl, scoped to the run and
        restored after it; default 1). The per-step dense work is small (a few to a few hundred
        unknowns): threads cost more in synchronization than they bring. ``None`` leaves the
        process's setting alone.
    sparse : ``"auto"`` (default), ``True`` or ``False``: solve the step island by island
        (:mod:`lcpdyn.islands`: one small problem per body with contacts, cost linear in the
        number of bodies) instead of as one dense problem. ``"auto"`` takes the islands whenever
        the step splits into several -- two or more bodies and no bilateral rows (joints and
        ideal rolling couple velocities), and for coulomb the method nsgs -- and the dense path
        otherwise. Regularized and box with judice-pires on the fused path run every island in
        one compiled loop; any other bounded-LCP model (polygonal, continuous, a user's model
        through the friction-model protocol) or method assembles and solves each island from the
        model's block. ``True`` raises if the step does not split. With one body the island is
        the dense problem itself; the two compiled loops may still differ in rounding, which on
        a statically indeterminate contact set (a block on four corners) can pick another of its
        equally valid load sharings. ``"condensed"``: eliminate the velocities and bilateral
        multipliers by the sparse KKT factorization (:func:`lcpdyn.kkt.solve_kkt`) and solve the
        bounded LCP of the contacts alone (:func:`lcpdyn.strategies.condensed.solve_condensed`, the
        cost linear in a chain of bodies such as a beam); ``"auto"`` takes it when bilateral rows
        couple an island of more than :data:`lcpdyn.kkt.SPARSE_SIZE` velocities and rows.
    compiled_loop : ``"auto"`` (default) or ``True``: :meth:`~lcpdyn.stepper.Simulation.run`
        advances in chunks of steps, each chunk one compiled call holding the whole step (:mod:`lcpdyn.compiled_loop`:
        kinematics, Eq. 30 and its Júdice–Pires pivoting in one XLA program), for small scenes of
        the regularized or box model (:func:`lcpdyn.compiled_loop.unsupported` names what rules a
        scene out); every step's answer is still measured by the framework's residual on the
        host, and a step that fails anything is redone by the ordinary step. ``Simulation.loop_steps``
        counts the steps taken each way. ``"auto"`` takes it wherever it applies and the
        ordinary step elsewhere; ``True`` makes a scene it cannot take a ValueError naming why;
        ``False`` always takes the ordinary step. The chunk is traced and compiled at the first
        :meth:`~lcpdyn.stepper.Simulation.run` that uses it (about 2 s, once per structure in a process).
        :meth:`~lcpdyn.stepper.Simulation.step` and
        :meth:`~lcpdyn.stepper.Simulation.advance` always take the ordinary step; ``options.compiled_loop`` records the
        choice made (True or False).
    on_unsolved : ``"stop"`` (default) or ``"flag"`` -- what a step does whose answer misses
        ``tolerance`` after the method and its fallback (its largest relative residual above
        it): ``"stop"`` raises :class:`~lcpdyn.stepper.SimulationError` with the steps done;
        ``"flag"`` keeps the answer of the smaller residual (if finite), records the step's
        status and residual, marks it ``Health.UNSOLVED`` and warns at the end of the run
        (:class:`~lcpdyn.stepper.UnsolvedWarning`) -- never silently.
    bound_passes, bound_change : at most ``bound_passes`` (>= 0) more solves of a step whose
        detected contacts' friction bounds mu lam_N moved by more than the share ``bound_change``
        (>= 0) where it matters (``docs/theory/detected-contacts.md``, "Friction bounds").
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
    on_unsolved: str = "stop"

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
        if self.on_unsolved not in ("stop", "flag"):
            raise ValueError(f"on_unsolved must be 'stop' or 'flag', got {self.on_unsolved!r}")
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
