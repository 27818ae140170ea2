"""The README's engine example runs as printed."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

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


def _python_examples():
    """(line, code) of every ```python block of the README."""
    import re

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    return [(text[: m.start()].count("\n") + 1, m.group(1)) for m in re.finditer(r"```python\n(.*?)```", text, re.S)]


IN_PROCESS = ("## Using the engine", "## Flexible beams", "### Moreland's tyre")  # the tests above


def _run_in_a_folder():
    """The README's examples the tests above do not run, as (line, code)."""
    import re

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    above = {re.search(r"```python\n(.*?)```", text[text.index(h) :], re.S).group(1) for h in IN_PROCESS}
    return [(line, code) for line, code in _python_examples() if code not in above]


@pytest.mark.skipif(
    os.environ.get("LCPDYN_STACK") != "current",
    reason="README examples run on the plain-install stack (the test command's current leg)",
)
@pytest.mark.parametrize("line, code", _run_in_a_folder(), ids=[f"line{line}" for line, _ in _run_in_a_folder()])
def test_every_readme_example_runs_in_an_empty_folder(tmp_path, line, code):
    """Issue 46, item 8: each of the README's Python examples, as printed, in a fresh process
    whose working folder is empty (the sweep's out folder used to need a results/ folder; the
    friction approximations read ../shared/problems, there only inside the checkout)."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    (tmp_path / "example.py").write_text(code)
    env = dict(os.environ, PYTHONPATH=str(root), MPLBACKEND="Agg")
    done = subprocess.run(
        [sys.executable, "example.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, f"README.md line {line}:\n{done.stderr[-3000:]}"
