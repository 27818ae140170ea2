"""What the command line lists -- scenes with their parameters, friction models, solver methods,
figure formats -- without importing the engine: a catalogue built once from the tables the code
uses and kept, fingerprinted by the sources it was built from, in lcpdyn's cache folder.

The parser, ``--help``, ``lcpdyn scenes`` and the usage errors read it, so they answer in a
fraction of a second; building it imports every scene (and so JAX), about 2 s, after an install
or any change of lcpdyn's, the solvers' or a scene collection's source files, or of a package
version it depends on. :func:`catalogue` rebuilds it whenever its fingerprint differs; a cache
folder that cannot be written only costs the rebuild (``LCPDYN_CACHE`` sets the folder)."""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import json
import os
import sys
from importlib import metadata
from pathlib import Path

from . import __version__

__all__ = ["catalogue", "build", "fingerprint", "cache_folder"]

FORMAT = 1


def cache_folder() -> Path:
    """``$LCPDYN_CACHE``, else ``$XDG_CACHE_HOME/lcpdyn``, else ``~/.cache/lcpdyn``."""
    if os.environ.get("LCPDYN_CACHE"):
        return Path(os.environ["LCPDYN_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "lcpdyn"


def _sources() -> list[Path]:
    """The folders whose Python files decide the catalogue: lcpdyn, solvers and every installed
    scene collection."""
    from .scene_collection import GROUP

    folders = [Path(__file__).parent]
    packages = ["solvers", *(point.value.split(":")[0].split(".")[0] for point in metadata.entry_points(group=GROUP))]
    for package in dict.fromkeys(packages):
        spec = importlib.util.find_spec(package)  # found, not imported
        if spec is not None and spec.origin:
            folders.append(Path(spec.origin).parent)
    return folders


def fingerprint(folders=None) -> str:
    """A hash of every ``.py`` file's path, size and modification time under ``folders`` (default:
    ``_sources``), of lcpdyn's and Python's versions and of matplotlib's (the figure formats)."""
    digest = hashlib.sha256()
    digest.update(f"{FORMAT} {__version__} {sys.version} {sys.executable}".encode())
    try:
        digest.update(metadata.version("matplotlib").encode())
    except metadata.PackageNotFoundError:
        pass
    for folder in folders if folders is not None else _sources():
        for path in sorted(Path(folder).rglob("*.py")):
            stat = path.stat()
            digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:32]


def _text(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def build() -> dict:
    """The catalogue, from the live tables (imports every scene, the friction models, the solvers
    and matplotlib's backend registry)."""
    from matplotlib.backend_bases import FigureCanvasBase

    import solvers
    from solvers import friction_contact

    from .compare import MODELS as COMPARED
    from .friction import MODELS
    from .scene_collection import scene_collection

    collection = scene_collection()
    SCENES, STABILITY, REPORTS = collection.SCENES, collection.STABILITY, collection.REPORTS
    units = collection.PARAMETER_UNITS
    scenes = {}
    for name, line, kinds in collection.describe():
        module = SCENES.get(name) or STABILITY[name]
        parameters = []
        if name in SCENES:
            parameters.append(("run", dict(SCENES[name].DEFAULTS)))
        if name in STABILITY:
            known = getattr(STABILITY[name], "SYSTEM_PARAMETERS", None)  # without building the system
            parameters.append(("stability", dict(STABILITY[name].system().parameters if known is None else known)))
        scenes[name] = {
            "kinds": kinds,
            "summary": " ".join((module.__doc__ or line).strip().split("\n\n")[0].split()),
            "doc": inspect.cleandoc(module.__doc__ or line),
            "parameters": [
                [kind, [[key, _text(value), units.get(key, "?")] for key, value in values.items()]]
                for kind, values in parameters
            ],
            "sweep": list(STABILITY[name].SWEEP) if name in STABILITY else None,
        }
    return {
        "format": FORMAT,
        "scenes": scenes,
        "run": list(SCENES),
        "stability": list(STABILITY),
        "reports": list(REPORTS),
        "units": dict(units),
        "friction_models": {name: cls.default_method for name, cls in MODELS.items()},
        "compared_models": list(COMPARED),
        "methods": list(solvers.METHODS),
        "coulomb_methods": list(friction_contact.METHODS),
        "plot_suffixes": ["." + name for name in sorted(FigureCanvasBase.get_supported_filetypes())],
    }


_LOADED: dict = {}


def catalogue() -> dict:
    """The catalogue: from the cache when the fingerprint it was built with matches the sources,
    else built and written there (atomically; an unwritable cache folder is skipped). One file per
    Python interpreter, so that two environments (the test legs) do not rebuild each other's."""
    key = fingerprint()
    if key in _LOADED:
        return _LOADED[key]
    interpreter = hashlib.sha256(sys.executable.encode()).hexdigest()[:16]
    path = cache_folder() / f"cli-catalogue-{interpreter}.json"
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        found = None
    if not isinstance(found, dict) or found.get("format") != FORMAT or found.get("fingerprint") != key:
        found = dict(build(), fingerprint=key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            temporary.write_text(json.dumps(found))
            os.replace(temporary, path)
        except OSError:
            pass
    _LOADED[key] = found
    return found
