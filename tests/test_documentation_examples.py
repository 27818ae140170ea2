"""The README's and the documentation site's examples run as printed (issue 48: none drifts from
the API), and the numbers they state are the numbers they print."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest

from tests.engine_helpers import documentation_example, documentation_pages, readme_example

ROOT = Path(__file__).resolve().parents[1]


def test_the_engine_example_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace = readme_example("# Building a model")
    trajectory = namespace["trajectory"]
    assert (tmp_path / "wheel.npz").exists()
    assert np.all(trajectory.solver_status == 0)
    assert (
        1.9
        < trajectory.t[np.flatnonzero(np.linalg.norm(trajectory.contact_slip_velocity[:, 0], axis=1) > 0.01)[-1]]
        < 2.1
    )


def test_the_beam_example_prints_the_deflection_it_claims(capsys):
    namespace = readme_example("# Flexible beams")
    deflection = -namespace["trajectory"].position[-1, -1, 2]
    assert f"{deflection:.3e}" == "5.867e-03"
    page = (ROOT / "docs" / "guide" / "beams.md").read_text()
    assert "5.867e-3 m" in page  # the number the example's comment states
    assert capsys.readouterr().out.strip() == str(deflection)


def test_the_tyre_example_prints_what_it_claims(capsys):
    namespace = readme_example("# Moreland's tyre")
    assert namespace["footprint"].body is namespace["model"].bodies[1]
    assert capsys.readouterr().out.strip() == "wheel/footprint 2 2"


IN_PROCESS = ("Building a model", "Flexible beams", "Moreland's tyre")  # the tests above


def _python_examples():
    """(page, line, code) of every ```python block of the README and of the documentation's pages,
    but those the tests above run in this process."""
    above = {documentation_example(title) for title in IN_PROCESS}
    out = []
    for page in documentation_pages():
        text = page.read_text()
        for m in re.finditer(r"```python\n(.*?)```", text, re.S):
            if (page, m.group(1)) not in above:
                out.append((page.relative_to(ROOT), text[: m.start()].count("\n") + 1, m.group(1)))
    return out


EXAMPLES = _python_examples()


def test_every_page_with_python_has_its_examples_collected():
    pages = {str(page) for page, _, _ in EXAMPLES}
    assert {"README.md", "docs/getting-started.md", "docs/guide/robots.md", "docs/guide/sweeps.md"} <= pages


@pytest.mark.skipif(
    os.environ.get("LCPDYN_STACK") != "current",
    reason="the documentation's examples run on the plain-install stack (the test command's current leg)",
)
@pytest.mark.parametrize("page, line, code", EXAMPLES, ids=[f"{page}:{line}" for page, line, _ in EXAMPLES])
def test_every_example_runs_in_an_empty_folder(tmp_path, page, line, code):
    """Issue 46, item 8, and issue 48: each Python example of the README and the documentation, as
    printed, in a fresh process whose working folder is empty (the sweep's out folder used to need
    a results/ folder; the friction approximations read ../shared/problems, there only inside the
    checkout)."""
    import subprocess
    import sys

    (tmp_path / "example.py").write_text(code)
    env = dict(os.environ, PYTHONPATH=str(ROOT), MPLBACKEND="Agg")
    done = subprocess.run(
        [sys.executable, "example.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, f"{page} line {line}:\n{done.stderr[-3000:]}"


def test_the_gallery_has_a_page_for_every_scene():
    """Every scene of the catalogue (run, stability and paper reproductions) has a gallery script
    that builds it, runs its report or shows its stored report; every stored reproduction's
    figures and numbers are in the checkout, with their provenance."""
    import json

    from scenes import REPORTS, SCENES, STABILITY

    examples = ROOT / "docs" / "examples"
    scripts = {path: path.read_text() for path in examples.glob("*/plot_*.py")}
    named = set()
    for text in scripts.values():
        named.update(re.findall(r'(?:build_scene|show)\("([a-z0-9-]+)"', text))
        named.update(m.replace("_", "-") for m in re.findall(r"from scenes import (\w+)$", text, re.M))
    missing = sorted((set(SCENES) | set(STABILITY) | set(REPORTS)) - named)
    assert not missing, f"scenes without a gallery page: {missing}"
    import importlib.util

    spec = importlib.util.spec_from_file_location("_stored", examples / "papers" / "_stored.py")
    stored = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(stored)
    SLOW, STORED = stored.SLOW, stored.STORED
    for scene in SLOW:
        content = json.loads((STORED / f"{scene}.json").read_text())
        assert content["scene"] == scene and content["numbers"] and content["provenance"]["commit"] != "unknown"
        assert list(STORED.glob(f"{scene}-*.png")), scene
        assert any(f'show("{scene}")' in text for text in scripts.values()), scene
