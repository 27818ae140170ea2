"""The README's engine example runs as printed."""

from __future__ import annotations

import numpy as np

from tests.engine_helpers import readme_example


def test_readme_engine_example_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace = readme_example("## Using the engine")
    trajectory = namespace["trajectory"]
    assert (tmp_path / "wheel.npz").exists()
    assert np.all(trajectory.solver_status == 0)
    assert (
        1.9
        < trajectory.t[np.flatnonzero(np.linalg.norm(trajectory.contact_slip_velocity[:, 0], axis=1) > 0.01)[-1]]
        < 2.1
    )
