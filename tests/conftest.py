import os
from pathlib import Path

import pytest

# XLA executables kept on disk and reused (JAX's persistent compilation cache, keyed by the
# program's text, the JAX version and the compiler's flags, so a hit is the executable the compile
# would give): many tests build models of the same structure that cannot share one in-process
# compilation (user functions, profiles traced into the code). One directory per test leg, under
# the checkout (.cache/, ignored by git); a clean clone starts empty. Set before JAX is imported,
# and in the environment, so that the command-line tests' subprocesses use it too.
if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
    _leg = os.environ.get("LCPDYN_STACK", "siconos")
    os.environ["JAX_COMPILATION_CACHE_DIR"] = str(Path(__file__).resolve().parent.parent / ".cache" / f"jax-{_leg}")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.2")

from solvers.siconos_route import SiconosUnavailable, import_siconos


@pytest.fixture(scope="session")
def siconos():
    """Siconos numerics. Skips where it is unavailable -- except under CI=true, where the
    cross-checks are mandatory and a missing Siconos is a failure. The current-stack leg of
    ``./dev.sh test`` (``LCPDYN_STACK=current``: a plain venv with NumPy 2 and the newest JAX)
    has no Siconos by design (Debian's build needs NumPy 1.x); there they skip, saying so."""
    if os.environ.get("LCPDYN_STACK") == "current":
        pytest.skip(
            "current-stack leg (LCPDYN_STACK=current): Siconos is not part of this venv by design; "
            "the cross-checks run in the Siconos leg"
        )
    try:
        return import_siconos()
    except SiconosUnavailable as exc:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"CI requires Siconos: {exc}")
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def coal():
    """The collision library coal (the ``collision`` extra). Skips where it is not installed --
    except under CI=true, where both legs of ``./dev.sh test`` install it and a missing coal is a
    failure."""
    try:
        import coal as module
    except ImportError as exc:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"CI requires coal (pip install 'lcpdyn[collision]'): {exc}")
        pytest.skip(f"coal is not installed (pip install 'lcpdyn[collision]'): {exc}")
    return module


LEGS = ("siconos", "current")


def dealt_leg(item) -> str | None:
    """The leg that runs ``item`` when one test command runs both (``one_leg`` marker), else None.

    A long reproduction of a paper's scene, a long run or a matrix of compiled programs proves its
    claim once per test command; the tests of the library's modules, which exercise the same code,
    run on both stacks. ``one_leg(leg=...)`` on a module (``pytestmark``) or a function names the leg
    (``"both"``: a quick test of a dealt module, which is not dealt); without
    a name, the module's dealt tests and cells are dealt to the two legs in turn, in collection
    order, so that each leg runs part of every matrix (in ``tests/test_differentiable_run.py`` every
    friction model's derivatives run in both legs)."""
    marker = item.get_closest_marker("one_leg")
    if marker is None:
        return None
    leg = marker.kwargs.get("leg")
    if leg == "both":  # a quick test in a dealt module: a unit test, on both stacks
        return None
    if leg is not None:
        if leg not in LEGS:
            raise ValueError(f"{item.nodeid}: one_leg(leg={leg!r}) names no leg of {LEGS} (or 'both')")
        return leg
    return LEGS[getattr(item, "_one_leg_place", 0) % 2]


def _deal(config, items):
    """Under ``./dev.sh test`` with both legs (``LCPDYN_BOTH_LEGS=1``), the items another leg runs
    (:func:`dealt_leg`) are deselected, and reported so; a leg run alone, or pytest by hand, runs
    them all."""
    count: dict = {}
    for item in items:  # the item's place among its module's dealt items, in collection order
        if item.get_closest_marker("one_leg") is not None:
            module = item.nodeid.split("::", 1)[0]
            item._one_leg_place = count.get(module, 0)
            count[module] = item._one_leg_place + 1
    if os.environ.get("LCPDYN_BOTH_LEGS") != "1":
        return
    leg = os.environ.get("LCPDYN_STACK", "siconos")
    kept, other = [], []
    for item in items:
        (other if dealt_leg(item) not in (None, leg) else kept).append(item)
    if other:
        config.hook.pytest_deselected(items=other)
        items[:] = kept


def pytest_collection_modifyitems(config, items):
    """Deals the ``one_leg`` tests between the legs (:func:`_deal`). The current-stack leg
    (``LCPDYN_STACK=current``) takes the test modules in reverse order
    (each module's own tests in theirs). ``./dev.sh test`` runs the two legs at once from one
    checkout, and they share Numba's on-disk cache (``__pycache__``; the same Numba release in both
    venvs): a kernel is compiled by whichever leg reaches it first and loaded by the other, where
    in one order both compiled it at the same moment. It also shows that no module depends on
    another having run before it."""
    _deal(config, items)
    if os.environ.get("LCPDYN_STACK") != "current":
        return
    modules: dict = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    items[:] = [item for module in reversed(list(modules.values())) for item in module]
