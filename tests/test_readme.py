"""The README's engine example runs as printed."""

from __future__ import annotations

from pathlib import Path

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


def test_readme_beam_example_prints_the_deflection_it_claims(capsys):
    namespace = readme_example("## Flexible beams")
    deflection = -namespace["trajectory"].position[-1, -1, 2]
    assert f"{deflection:.3e}" == "5.867e-03"
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert "5.867e-3 m" in readme  # the number the example's comment states
    assert capsys.readouterr().out.strip() == str(deflection)


def test_readme_tyre_example_prints_what_it_claims(capsys):
    namespace = readme_example("### Moreland's tyre")
    assert namespace["footprint"].body is namespace["model"].bodies[1]
    assert capsys.readouterr().out.strip() == "wheel/footprint 2 2"
