"""Numba's cache of the packages' compiled functions (solvers.compiled_cache): their locators are
this project's, and their stamp changes with any source file of the packages that uses Numba --
a cached caller is never loaded after a callee in another module changed."""

from __future__ import annotations

from solvers import compiled_cache
from solvers.basic_systems import minimum_norm_solve
from solvers.judice_pires import pivot


def test_the_packages_functions_are_stamped_with_every_numba_source():
    import lcpdyn.shape_pairs as shape_pairs  # a module of lcpdyn that imports solvers only for the locators

    for function in (pivot, minimum_norm_solve, shape_pairs._clip):
        locator = function._cache._impl.locator
        assert isinstance(locator, compiled_cache._WithDependencies), type(locator)
        own, stamp = locator.get_source_stamp()
        assert stamp == compiled_cache.sources_stamp() and own  # Numba's stamp of the file, and ours


def test_a_change_to_any_numba_source_changes_the_stamp(tmp_path, monkeypatch):
    (tmp_path / "solvers").mkdir()
    (tmp_path / "lcpdyn").mkdir()
    callee, caller = tmp_path / "solvers" / "callee.py", tmp_path / "lcpdyn" / "caller.py"
    plain = tmp_path / "lcpdyn" / "plain.py"
    callee.write_text("from numba import njit\n@njit\ndef g(x):\n    return x + 1\n")
    caller.write_text("from numba import njit\n@njit\ndef f(x):\n    return x\n")
    plain.write_text("x = 1\n")
    monkeypatch.setattr(compiled_cache, "_ROOTS", (tmp_path / "solvers", tmp_path / "lcpdyn"))
    stamps = []
    for change in (None, (plain, "x = 2\n"), (callee, "from numba import njit\n@njit\ndef g(x):\n    return x + 2\n")):
        if change is not None:
            change[0].write_text(change[1])
        compiled_cache.sources_stamp.cache_clear()
        stamps.append(compiled_cache.sources_stamp())
    compiled_cache.sources_stamp.cache_clear()  # the packages' own stamp again for later tests
    assert stamps[0] == stamps[1]  # a file without Numba does not count
    assert stamps[2] != stamps[1]  # the callee's change makes every cached entry stale
