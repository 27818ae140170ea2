import os

import pytest

from solvers.siconos_route import SiconosUnavailable, import_siconos


@pytest.fixture(scope="session")
def siconos():
    """Siconos numerics. Skips where it is unavailable -- except under CI=true, where the
    cross-checks are mandatory and a missing Siconos is a failure."""
    try:
        return import_siconos()
    except SiconosUnavailable as exc:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"CI requires Siconos: {exc}")
        pytest.skip(str(exc))
