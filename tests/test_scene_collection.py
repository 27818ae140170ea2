"""The library finds ready scenes without importing them (lcpdyn.scene_collection): no module of
lcpdyn imports a scene package; the installed collection is found through its entry point; a
registry handed in is used instead; several collections are merged, a name given twice refused."""

from __future__ import annotations

import ast
import types
from pathlib import Path

import pytest

import lcpdyn
from lcpdyn import scene_collection as collections
from lcpdyn.rebuild import RebuildError, simulation_from_parameters


def test_no_module_of_the_library_imports_a_scene_package():
    """Every import statement of lcpdyn/**.py, at any depth (lazy imports too): none names the
    ``scenes`` package -- the dependency runs one way, scenes -> lcpdyn."""
    offenders = []
    for path in Path(lcpdyn.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            offenders += [f"{path.name}:{node.lineno} {name}" for name in names if name.split(".")[0] == "scenes"]
    assert offenders == []


def test_the_installed_collection_is_this_projects_scenes():
    import scenes

    found = collections.scene_collection()
    assert found.SCENES is scenes.SCENES and found.REPORTS is scenes.REPORTS
    assert found.build_scene is scenes.build_scene and "wheel" in found.SCENES


def test_a_registry_handed_in_rebuilds_from_it(tmp_path):
    """simulation_from_parameters(..., scenes=registry) takes the scene from the registry given,
    so a user's own scene module rebuilds without being installed; a name the registry lacks is
    named in the error."""
    from scenes import blocks

    mine = {"my-block": blocks.SlidingBlock}
    parameters = {"scene": {"name": "my-block"}, "dt": 1e-3, "friction": {"model": "coulomb"}}
    sim = simulation_from_parameters(parameters, scenes=mine)
    assert sim.scene == {"name": "my-block"} and sim.dt == 1e-3
    with pytest.raises(RebuildError, match="'my-block' is not one of \\['wheel'\\]"):
        simulation_from_parameters(parameters, scenes={"wheel": blocks.SlidingBlock})


class _Point:
    def __init__(self, name, value):
        self.name, self.value = name, value

    def load(self):
        return self.value


def test_several_collections_are_merged_and_a_name_twice_is_refused(monkeypatch):
    ours = types.SimpleNamespace(SCENES={"a": 1}, REPORTS={"a": 1}, STABILITY={}, describe=lambda: [])
    theirs = types.SimpleNamespace(SCENES={"b": 2})
    monkeypatch.setattr(collections, "entry_points", lambda group: [_Point("zeta", theirs), _Point("lcpdyn", ours)])
    collections.scene_collection.cache_clear()
    try:
        merged = collections.scene_collection()
        assert merged.SCENES == {"a": 1, "b": 2} and merged.REPORTS == {"a": 1} and merged.describe is ours.describe
        clash = types.SimpleNamespace(SCENES={"a": 3})
        monkeypatch.setattr(collections, "entry_points", lambda group: [_Point("lcpdyn", ours), _Point("x", clash)])
        collections.scene_collection.cache_clear()
        with pytest.raises(ValueError, match="'a' of SCENES is given by both 'lcpdyn' and 'x'"):
            collections.scene_collection()
        monkeypatch.setattr(collections, "entry_points", lambda group: [])
        collections.scene_collection.cache_clear()
        with pytest.raises(collections.NoSceneCollection, match="pip install -e"):
            collections.scene_collection()
    finally:
        collections.scene_collection.cache_clear()
