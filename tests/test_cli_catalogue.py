"""The command line answers at once (issue 46, item 6): --help, `lcpdyn scenes` and usage errors
read the catalogue (lcpdyn.cli_catalogue) and import nothing of the engine -- no JAX, Numba, SciPy,
matplotlib or h5py; the catalogue is rebuilt whenever the sources it was built from change.
Times are measured in benchmarks/cli_latency.py, not asserted here."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import lcpdyn.cli_catalogue as cli_catalogue

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEAVY = ("jax", "numba", "scipy", "matplotlib", "h5py", "solvers", "lcpdyn.model")
PROBE = (
    "import sys, json\n"
    "from lcpdyn.cli import main\n"
    "try:\n"
    "    code = main(json.loads(sys.argv[1]))\n"
    "except SystemExit as exc:  # argparse, after --help\n"
    "    code = exc.code\n"
    f"print(json.dumps([code, [m for m in {HEAVY!r} if m in sys.modules]]), file=sys.stderr)\n"
)


@pytest.fixture(scope="module")
def warm_cache(tmp_path_factory):
    """A cache folder holding the catalogue (built by a first command, as after an install)."""
    folder = tmp_path_factory.mktemp("cache")
    env = dict(os.environ, LCPDYN_CACHE=str(folder))
    # from a folder outside the checkout, as the probes run: an installed (not editable) lcpdyn is
    # then the one imported, and its sources are the ones the catalogue is fingerprinted by
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(["--help"])], cwd=elsewhere, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert len(list(folder.glob("cli-catalogue-*.json"))) == 1
    return env


@pytest.mark.parametrize(
    "argv, code",
    [
        (["--help"], 0),
        (["scenes"], 0),
        (["scenes", "wheelset-hunting"], 0),
        (["run", "--help"], 0),
        (["run", "no-such-scene", "--out", "x.npz"], 2),
        (["run", "wheel"], 2),
        (["run", "wheel", "--friction", "nope", "--out", "x.npz"], 2),
        (["run", "wheel", "--dt", "-1e-3", "--out", "x.npz"], 2),
        (["run", "wheel", "--set", "nope=1", "--out", "x.npz"], 2),
        (["run", "wheel", "--out", "/no/such/folder/x.npz"], 2),
        (["compare", "no-such-scene"], 2),
        (["stability", "no-such-scene"], 2),
        (["reproduce", "no-such-scene"], 2),
    ],
)
def test_help_scenes_and_usage_errors_import_nothing_of_the_engine(warm_cache, argv, code, tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(argv)], cwd=tmp_path, env=warm_cache, capture_output=True, text=True
    )
    result, imported = json.loads(done.stderr.strip().splitlines()[-1])
    assert result == code, done.stderr
    assert imported == [], f"{argv} imported {imported}"


def test_the_catalogue_is_what_the_tables_say(tmp_path, monkeypatch):
    """Built from the live registries; read back from the cache file, equal."""
    import lcpdyn.friction
    import scenes
    import solvers
    from solvers import friction_contact

    monkeypatch.setenv("LCPDYN_CACHE", str(tmp_path))
    monkeypatch.setattr(cli_catalogue, "_LOADED", {})
    built = cli_catalogue.catalogue()
    assert built["run"] == list(scenes.SCENES) and built["stability"] == list(scenes.STABILITY)
    assert built["reports"] == list(scenes.REPORTS)
    assert built["friction_models"] == {name: cls.default_method for name, cls in lcpdyn.friction.MODELS.items()}
    assert built["methods"] == list(solvers.METHODS) and built["coulomb_methods"] == list(friction_contact.METHODS)
    for name, module in scenes.SCENES.items():
        run = dict(built["scenes"][name]["parameters"])["run"]
        assert [key for key, _, _ in run] == list(module.DEFAULTS), name

    def refuse():
        raise AssertionError("built again although the sources did not change")

    monkeypatch.setattr(cli_catalogue, "_LOADED", {})
    monkeypatch.setattr(cli_catalogue, "build", refuse)
    assert cli_catalogue.catalogue() == built  # from the file


def test_a_change_of_the_sources_rebuilds_the_catalogue(tmp_path, monkeypatch):
    """The fingerprint follows every source file's size and time; a catalogue built from other
    sources is not read but replaced; another interpreter's file is left alone; an unwritable
    cache folder only costs the build."""
    folder = tmp_path / "package"
    folder.mkdir()
    source = folder / "module.py"
    source.write_text("X = 1\n")
    first = cli_catalogue.fingerprint([folder])
    assert cli_catalogue.fingerprint([folder]) == first
    source.write_text("X = 22\n")
    assert cli_catalogue.fingerprint([folder]) != first

    cache = tmp_path / "cache"
    monkeypatch.setenv("LCPDYN_CACHE", str(cache))
    monkeypatch.setattr(cli_catalogue, "_LOADED", {})
    keys = iter(["a" * 32, "b" * 32])
    monkeypatch.setattr(cli_catalogue, "fingerprint", lambda folders=None: current)
    builds = []
    monkeypatch.setattr(
        cli_catalogue, "build", lambda: builds.append(1) or {"format": cli_catalogue.FORMAT, "n": len(builds)}
    )
    current = next(keys)
    assert cli_catalogue.catalogue()["n"] == 1
    other = cache / "cli-catalogue-another-python.json"
    other.write_text("{}")
    current = next(keys)
    assert cli_catalogue.catalogue()["n"] == 2
    (mine,) = [path for path in cache.iterdir() if path != other]
    assert json.loads(mine.read_text())["fingerprint"] == "b" * 32 and other.read_text() == "{}"

    monkeypatch.setenv("LCPDYN_CACHE", "/proc/no-such-folder")
    monkeypatch.setattr(cli_catalogue, "_LOADED", {})
    assert cli_catalogue.catalogue()["n"] == 3


def test_the_latency_benchmark_measures_warm_and_cold(monkeypatch):
    from tests.benchmark_modules import load_benchmark

    bench = load_benchmark("cli_latency")
    monkeypatch.setattr(bench, "COMMANDS", {"usage error": ["run", "no-such-scene", "--out", "x.npz"]})
    row = bench.measure(1)["usage error"]
    assert row["exit"] == 2 and 0 < row["warm_wall"] and 0 < row["cold_cpu"]
