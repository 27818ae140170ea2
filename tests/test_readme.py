"""The README's engine example runs as printed."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np


def test_readme_engine_example_runs(tmp_path, monkeypatch):
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = text[text.index("## Using the engine") :]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(code, "README.md", "exec"), namespace)
    trajectory = namespace["trajectory"]
    assert (tmp_path / "wheel.npz").exists()
    assert np.all(trajectory.solver_status == 0)
    assert (
        1.9
        < trajectory.t[np.flatnonzero(np.linalg.norm(trajectory.contact_slip_velocity[:, 0], axis=1) > 0.01)[-1]]
        < 2.1
    )
