import os

import pytest

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
