"""Siconos' own engine on the pile of ``bench_pile.py``: the same spheres poured into the same bin,
stepped by Moreau-Jean time stepping (``MoreauJeanOSI``, theta 0.50001, ``TimeStepping``) with
``FrictionContact(3)`` solved by NSGS (``FC3D_NSGS``, local solver
``FC3D_ONECONTACT_NSN_GP_HYBRID``), warm-started from the previous step: the defaults of
Siconos' ``MechanicsHdf5Runner.run()``, without the runner, its HDF5 output or Bullet (whose
sphere-sphere contacts are re-created every step in Siconos 4.4, which defeats warm starts).

Contacts are Siconos' exact sphere relations, ``SphereNEDSSphereNEDSR`` between spheres and
``SphereNEDSPlanR`` against the floor and the four walls (planes), decided by a small pair manager
(an ``InteractionManager`` called inside each step; sphere pairs found with SciPy's k-d tree): a
pair is linked when its gap is below lcpdyn's margin (0.1 r) plus 2 h v_max and unlinked beyond
twice that, so interactions (and their warm starts) live across steps.

``run_siconos`` returns an entry shaped like ``bench_pile.run_lcpdyn``'s; the CPU and wall time of
a step include the pair manager (Siconos' own engine has no collision detection of its own here).
Each timed step's answer is also judged by lcpdyn's own measure: the friction-contact problem
Siconos solved (its W, q and the NSGS answer r, after the step's solve, outside the timing) put
to :func:`solvers.sparse_measure.csr_friction_contact_measure`, the per-row relative residual
that lcpdyn's coulomb steps must meet -- one yardstick for both engines' answers, beside
Siconos' own error (which divides by the norm of the whole problem).

Usage: ``python benchmarks/siconos_pile.py [--count 30] [--settle 0.2] [--steps 10]
[--tolerance 1e-4] [--max-iterations 1000]`` prints the entry as JSON.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# bench_pile's scene constants (kept equal to it; bench_pile imports this module, not the reverse)
RADIUS, HALF_WIDTH, DENSITY, MU = 0.025, 0.25, 1000.0, 0.5
H, GRAVITY, THETA = 1e-3, 9.81, 0.50001


def import_siconos_engine():
    """(kernel, numerics, the sphere relations' module), or ImportError saying why: numerics as
    the solvers' Siconos route imports it (:func:`solvers.siconos_route.import_siconos`), then the
    kernel and the mechanics the engine adds."""
    from solvers.siconos_route import SiconosUnavailable, import_siconos

    sn = import_siconos()  # SiconosUnavailable (an ImportError) saying why
    try:
        import siconos.kernel as sk
        import siconos.mechanics.collision.bodies as bodies
        from siconos.mechanics.collision import RigidBodyDS  # noqa: F401  (the bodies' class)
    except Exception as exc:  # ImportError, or NumPy ABI errors raised as other types
        raise SiconosUnavailable(
            f"the Siconos peer needs siconos.kernel and siconos.mechanics.collision: {exc}"
        ) from exc
    return sk, sn, bodies


def bin_planes(half_width: float) -> np.ndarray:
    """The floor z >= 0 and the walls |x|, |y| <= half_width as rows (A, B, C, D) with A x + B y +
    C z + D >= 0 inside and (A, B, C) the unit normal into the bin (``scenes.touching.bin_walls``)."""
    h = float(half_width)
    return np.array([[0, 0, 1, 0], [1, 0, 0, h], [-1, 0, 0, h], [0, 1, 0, h], [0, -1, 0, h]], float)


def _pair_manager_class(sk, bodies):
    from scipy.spatial import cKDTree

    class PairManager(sk.InteractionManager):
        """Links sphere-sphere and sphere-plane interactions whose gap is below ``margin`` (0.1 r +
        2 h v_max) and unlinks those whose gap exceeds twice that; kept interactions keep their
        multipliers (warm starts). Siconos 4.4 calls it twice a step: at the step's start and on the
        positions q + h v predicted by its Newton loop (the interactions of the step's problem)."""

        def __init__(self, spheres, radius, planes, nslaw, h):
            super().__init__()
            self.spheres, self.radius, self.planes, self.nslaw, self.h = spheres, radius, planes, nslaw, h
            self.pairs = {}  # (i, j) -> Interaction, i < j
            self.walls = {}  # (i, k) -> Interaction, k a plane
            self.changes = 0
            self.seconds = 0.0

        def positions_velocities(self):
            q = np.array([ds.q()[:3] for ds in self.spheres])
            v = np.array([ds.twist()[:3] for ds in self.spheres])
            return q, v

        def updateInteractions(self, simulation):  # noqa: N802 (Siconos' name)
            start = time.perf_counter()
            q, v = self.positions_velocities()
            r = self.radius
            margin = 0.1 * r + 2 * self.h * float(np.max(np.linalg.norm(v, axis=1), initial=0.0))
            close = cKDTree(q).query_pairs(2 * r + 2 * margin, output_type="ndarray")  # gaps <= 2 margin
            gaps = np.linalg.norm(q[close[:, 0]] - q[close[:, 1]], axis=1) - 2 * r
            kept = set()
            for (i, j), gap in zip(close.tolist(), gaps.tolist()):
                key = (i, j) if i < j else (j, i)
                if key in self.pairs:
                    kept.add(key)
                elif gap < margin:
                    inter = sk.Interaction(self.nslaw, bodies.SphereNEDSSphereNEDSR(r, r))
                    simulation.link(inter, self.spheres[key[0]], self.spheres[key[1]])
                    self.pairs[key] = inter
                    kept.add(key)
                    self.changes += 1
            for key in [key for key in self.pairs if key not in kept]:  # gap beyond 2 margin
                simulation.unlink(self.pairs.pop(key))
                self.changes += 1
            wall_gaps = plane_gaps(q, r, self.planes)
            for i, k in zip(*np.nonzero(wall_gaps < margin)):
                key = (int(i), int(k))
                if key not in self.walls:
                    A, B, C, D = self.planes[k]
                    inter = sk.Interaction(self.nslaw, bodies.SphereNEDSPlanR(r, A, B, C, D))
                    simulation.link(inter, self.spheres[key[0]])
                    self.walls[key] = inter
                    self.changes += 1
            for (i, k), inter in list(self.walls.items()):
                if wall_gaps[i, k] > 2 * margin:
                    simulation.unlink(inter)
                    del self.walls[i, k]
                    self.changes += 1
            self.seconds += time.perf_counter() - start

    return PairManager


def deepest_overlap(q: np.ndarray, radius: float) -> float:
    """The deepest overlap of two spheres (m, >= 0), from the pairs closer than 2 r (k-d tree)."""
    from scipy.spatial import cKDTree

    close = cKDTree(q).query_pairs(2 * radius, output_type="ndarray")
    if close.size == 0:
        return 0.0
    return float(np.max(2 * radius - np.linalg.norm(q[close[:, 0]] - q[close[:, 1]], axis=1), initial=0.0))


def plane_gaps(q: np.ndarray, radius: float, planes: np.ndarray) -> np.ndarray:
    """(n, planes) signed distances of the spheres' surfaces to the planes."""
    return q @ planes[:, :3].T + planes[:, 3] - radius


def _scene_spheres(count: int):
    """Positions, masses and inertia matrices of ``bench_pile``'s pour (``scenes.touching.sphere_pile``)."""
    from scenes.touching import sphere_pile

    scene = sphere_pile(count, RADIUS, HALF_WIDTH, DENSITY)
    return [(np.array(b.position, float), float(b.mass), np.array(b.inertia_matrix, float)) for b in scene.bodies]


def run_siconos(count: int, settle: float, steps: int, tolerance: float, max_iterations: int = 1000) -> dict:
    """Siconos on ``count`` spheres: the pour for ``settle`` s, then ``steps`` steps timed one by one
    (module docstring). The entry: ``step_ms`` / ``step_cpu_ms`` (median wall / CPU ms per step,
    pair manager included), ``contacts`` (median interactions in the step's friction-contact
    problem), ``interactions`` (median linked), ``iterations`` (median NSGS sweeps,
    iparam[ITER_DONE]), ``iterations_capped`` (steps at ``max_iterations``), ``error`` (median of
    Siconos' own error, dparam[RESIDU]; ``error_max`` the largest), ``lcpdyn_residual`` (median
    of lcpdyn's relative residual of the same answers, module docstring; ``lcpdyn_residual_max``
    the largest), ``penetration_max`` (deepest
    overlap over the timed steps, m; ``penetration_max_radii`` in radii), ``bin_force_ratio``
    (vertical force of the floor and walls on the spheres over their weight, at the last step),
    ``pour_s`` (wall time of the pour); also ``interaction_changes`` (links and unlinks over the
    timed steps: few means the warm starts carry over) and ``pair_manager_ms`` (median ms of a
    step spent in the pair manager, part of ``step_ms``). A step that raises ends the run:
    ``completed`` False, ``error_message`` and ``stopped_at``."""
    sk, sn, bodies = import_siconos_engine()
    from siconos.mechanics.collision import RigidBodyDS

    from solvers.sparse_measure import csr_arrays, csr_friction_contact_measure

    start = time.perf_counter()
    spheres_data = _scene_spheres(count)
    out = {"engine": "siconos", "scene": "pile", "bodies": len(spheres_data), "tolerance": tolerance,
           "max_iterations": max_iterations, "completed": True}  # fmt: skip
    nsds = sk.NonSmoothDynamicalSystem(0.0, settle + (steps + 10) * H)
    spheres, weight = [], 0.0
    for position, mass, inertia in spheres_data:
        ds = RigidBodyDS(list(position) + [1.0, 0.0, 0.0, 0.0], [0.0] * 6, mass, inertia)
        ds.setFExtPtr(np.array([0.0, 0.0, -mass * GRAVITY]))
        nsds.insertDynamicalSystem(ds)
        spheres.append(ds)
        weight += mass * GRAVITY
    nslaw = sk.NewtonImpactFrictionNSL(0.0, 0.0, MU, 3)
    osi = sk.MoreauJeanOSI(THETA)
    problem = sk.FrictionContact(3, sn.SICONOS_FRICTION_3D_NSGS)
    options = problem.numericsSolverOptions()
    sk.solver_options_update_internal(options, 0, sn.SICONOS_FRICTION_3D_ONECONTACT_NSN_GP_HYBRID)
    options.iparam[sn.SICONOS_IPARAM_MAX_ITER] = int(max_iterations)
    options.iparam[sn.SICONOS_FRICTION_3D_IPARAM_ERROR_EVALUATION] = (
        sn.SICONOS_FRICTION_3D_NSGS_ERROR_EVALUATION_LIGHT_WITH_FULL_FINAL
    )
    options.dparam[sn.SICONOS_DPARAM_TOL] = float(tolerance)
    problem.setMStorageType(sn.NM_SPARSE_BLOCK)
    problem.setMaxSize(0)  # MechanicsHdf5Runner.run()'s default
    problem.setKeepLambdaAndYState(True)  # warm start: the previous step's multipliers
    simulation = sk.TimeStepping(nsds, sk.TimeDiscretisation(0.0, H))
    simulation.insertIntegrator(osi)
    simulation.insertNonSmoothProblem(problem)
    manager = _pair_manager_class(sk, bodies)(spheres, RADIUS, bin_planes(HALF_WIDTH), nslaw, H)
    simulation.insertInteractionManager(manager)
    simulation.setNewtonOptions(sk.SICONOS_TS_NONLINEAR)
    simulation.setNewtonMaxIteration(20)
    simulation.setNewtonTolerance(1e-10)

    def step():
        simulation.computeOneStep()
        simulation.nextStep()

    def lcpdyn_residual(contacts):
        """lcpdyn's relative residual of the friction-contact problem Siconos has just solved."""
        if contacts == 0:
            return 0.0
        W = sn.SBM_to_sparse(problem.M().numericsMatrix())[1]
        q, r = np.array(problem.q(), dtype=float), np.array(problem.z(), dtype=float)
        return float(csr_friction_contact_measure(*csr_arrays(W), q, np.full(contacts, MU), r, np.empty_like(q))[0])

    def solver_output():
        so = problem.numericsSolverOptions()
        size = problem.getSizeOutput() if problem.hasInteractions() else 0
        return int(so.iparam[sn.SICONOS_IPARAM_ITER_DONE]), float(so.dparam[sn.SICONOS_DPARAM_RESIDU]), size // 3

    try:
        settle_start = time.perf_counter()
        for _ in range(int(round(settle / H))):
            step()
        out["pour_s"] = time.perf_counter() - settle_start
        records = []
        for _ in range(steps):
            changes, manager_s = manager.changes, manager.seconds
            t0, c0 = time.perf_counter(), time.process_time()
            simulation.computeOneStep()
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            iterations, error, contacts = solver_output()
            residual = lcpdyn_residual(contacts)  # untimed, before nextStep() moves the problem on
            t0, c0 = time.perf_counter(), time.process_time()
            simulation.nextStep()
            wall, cpu = wall + time.perf_counter() - t0, cpu + time.process_time() - c0
            changes, manager_s = manager.changes - changes, manager.seconds - manager_s
            if contacts == 0:
                iterations, error = 0, 0.0  # no problem was solved: the options keep the last solve's output
            q, _ = manager.positions_velocities()
            penetration = max(deepest_overlap(q, RADIUS), -float(plane_gaps(q, RADIUS, manager.planes).min()), 0.0)
            records.append((wall, cpu, contacts, len(manager.pairs) + len(manager.walls), iterations, error,
                            penetration, changes, manager_s, residual))  # fmt: skip
    except Exception as exc:  # a failed step is a result: reported, not hidden
        out["completed"] = False
        out["error_message"] = f"{type(exc).__name__}: {exc}"
        out["stopped_at"] = float(simulation.nextTime())
        return out
    wall, cpu, contacts, linked, iterations, error, penetration, changes, manager_s, residual = (
        np.array(x, float) for x in zip(*records)
    )
    out.update(
        step_ms=float(np.median(wall) * 1e3),
        step_ms_mean=float(np.mean(wall) * 1e3),
        step_cpu_ms=float(np.median(cpu) * 1e3),
        contacts=float(np.median(contacts)),
        interactions=float(np.median(linked)),
        iterations=float(np.median(iterations)),
        iterations_capped=int(np.sum(iterations >= max_iterations)),
        error=float(np.median(error)),
        error_max=float(np.max(error)),
        lcpdyn_residual=float(np.median(residual)),
        lcpdyn_residual_max=float(np.max(residual)),
        penetration_max=float(penetration.max()),
        penetration_max_radii=float(penetration.max() / RADIUS),
        bin_force_ratio=bin_force(manager, H) / weight,
        interaction_changes=int(changes.sum()),
        pair_manager_ms=float(np.median(manager_s) * 1e3),
        setup_s=settle_start - start,
    )
    return out


def bin_force(manager, h: float) -> float:
    """The vertical force (N) of the floor and walls on the spheres over the last step: each
    sphere-plane interaction's impulse (lambda(1): normal, two tangents in its contact frame)
    taken to world coordinates by the relation's Jacobian, over h."""
    total = 0.0
    for inter in manager.walls.values():
        impulse = np.asarray(inter.lambda_(1), float)
        if not np.any(impulse):
            continue
        jacobian = np.asarray(inter.relation().jachqT(), float)  # (3, 6): contact frame x twist
        total += float((jacobian[:, :3].T @ impulse)[2])
    return total / h


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=30)
    parser.add_argument("--settle", type=float, default=0.2)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--tolerance", type=float, default=1e-4)
    parser.add_argument("--max-iterations", type=int, default=1000)
    args = parser.parse_args(argv)
    entry = run_siconos(args.count, args.settle, args.steps, args.tolerance, args.max_iterations)
    print(json.dumps(entry, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
