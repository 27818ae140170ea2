"""Sphinx configuration of lcpdyn's documentation site (``./dev.sh docs``; issue 48).

Pages are Markdown (MyST), the API reference is generated from the docstrings (autodoc; their
numpydoc-style sections read as reStructuredText definition lists), equations are rendered by
MathJax. The build runs with warnings as
errors and nitpicky references (``./dev.sh docs`` passes ``-W -n``), so a broken cross-reference
fails it.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import lcpdyn  # noqa: E402

project = "lcpdyn"
author = "lcpdyn developers"
copyright = "2026, lcpdyn developers"
release = version = lcpdyn.__version__

# sphinx-mathjax-offline: MathJax copied into the site, so the equations render without a network
extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",
    "sphinx_gallery.gen_gallery",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}  # reST: the gallery's generated pages
exclude_patterns = ["_build", "examples"]
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3
html_theme = "furo"
html_title = f"lcpdyn {release}"

autodoc_typehints = "none"  # the docstrings say the types, in the paper's notation and units
autodoc_member_order = "bysource"
# every public member a module defines and documents, whether or not its __all__ lists it (the
# constants a docstring refers to are documented where they are defined)
autodoc_default_options = {"members": True, "ignore-module-all": True}
# references into other projects' documentation are not checked here (the build needs no network)
_OTHERS = "numpy|scipy|jax|h5py|pathlib|dataclasses|matplotlib|dask|xarray|mujoco|coal"
nitpick_ignore_regex = [(r"py:.*", rf"({_OTHERS})(\..*)?")]

# --- the gallery: docs/examples/*/plot_*.py run at each build, their figures and output shown ----

sys.path.insert(0, str(ROOT / "docs"))
sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "gallery",
    "filename_pattern": r"/plot_",  # every example runs; a failing one fails the build
    "ignore_pattern": r"^_",  # helpers beside the examples (papers/_stored.py)
    "capture_repr": (),  # printed output only, not the value of a block's last expression
    "image_scrapers": ("matplotlib", "gallery_figures.written_figures"),
    "within_subsection_order": "FileNameSortKey",
    "subsection_order": ["examples/papers", "examples/scenes", "examples/robots", "examples/calibration"],
    "download_all_examples": False,
    "remove_config_comments": True,
    "show_memory": False,
    "min_reported_time": 1,
}

# --- the API reference: one page per package, every module of it (generated at each build) -----

PACKAGES = {
    "lcpdyn": "The engine: models, bodies, contacts, joints, the step and its runs.",
    "lcpdyn.friction": "The friction models (the friction-model protocol and its implementations).",
    "lcpdyn.strategies": "How a step's problem is posed and solved: dense, islands, detected contacts, exact cone.",
    "lcpdyn.run": "Running: the loop, recording, checks, resume.",
    "solvers": "The complementarity solvers (importable without JAX).",
    "scenes": "The scenes: the papers' examples and the benchmarks' scenes, ready-made.",
}


def _modules(package: str) -> list[str]:
    folder = ROOT / package.replace(".", "/")
    names = [package]
    for path in sorted(folder.glob("*.py")):
        if path.stem not in ("__init__", "__main__") and not path.stem.startswith("_"):
            names.append(f"{package}.{path.stem}")
    return names


def _write(page: Path, text: str) -> None:
    """Writes a generated page only where it changed (Sphinx rereads what is newer)."""
    if not page.exists() or page.read_text() != text:
        page.write_text(text)


def _write_api_pages() -> None:
    """docs/api/: an index of the packages, a page per package listing its modules, a page per
    module (its docstring and every public member that has one)."""
    out = ROOT / "docs" / "api"
    out.mkdir(exist_ok=True)
    index = ["# API reference\n\nGenerated from the docstrings at each build.\n\n```{toctree}\n:maxdepth: 2\n\n"]
    written = set()
    for package, summary in PACKAGES.items():
        index.append(f"{package}\n")
        modules = _modules(package)
        lines = [f"# `{package}`\n\n{summary}\n\n```{{eval-rst}}\n.. automodule:: {package}\n```\n"]
        lines.append("\n```{toctree}\n:maxdepth: 1\n\n" + "".join(f"{m}\n" for m in modules[1:]) + "```\n")
        _write(out / f"{package}.md", "".join(lines))
        written.add(f"{package}.md")
        for module in modules[1:]:
            _write(out / f"{module}.md", f"# `{module}`\n\n```{{eval-rst}}\n.. automodule:: {module}\n```\n")
            written.add(f"{module}.md")
    index.append("```\n")
    _write(out / "index.md", "".join(index))
    for stale in out.glob("*.md"):  # a module that no longer exists
        if stale.name not in written and stale.name != "index.md":
            stale.unlink()


_write_api_pages()

# --- docstrings: plain-text notation read as such ---------------------------------------------

_NORM = re.compile(r"(?<![`\\|])\|(?=[^\s|])([^|\n`]*?[^\s|\\])\|(?![`_|])")


_UNDERLINE = re.compile(r"^\s*(-{3,}|={3,})\s*$")
_ENTRY = re.compile(r"^((?:\*\*|\*)?[A-Za-z_][\w.]*(?:, ?[A-Za-z_][\w.]*)*(?: ?\([^)]*\))?) : (\S.*)$")
_BULLET = re.compile(r"^(\* |- |\d+\. )")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _read_as_written(lines: list[str]) -> list[str]:
    """The docstrings' dialect as reStructuredText: a numpydoc section title (``Parameters`` over
    dashes) becomes a rubric; an entry ``name : what it is`` at the left margin (continued on
    indented lines) a field of a field list; a list or a field list starts and ends with a blank
    line where the text runs into it; ``|x|`` (a norm) is not a substitution."""
    lines = [_NORM.sub(r"\\|\1\\|", line) for line in lines]
    for i in range(len(lines) - 1, 0, -1):
        title = lines[i - 1].strip()
        if _UNDERLINE.match(lines[i]) and title and len(lines[i].strip()) >= len(title) - 1:
            lines[i - 1 : i + 1] = [" " * _indent(lines[i - 1]) + f".. rubric:: {title}", ""]
    out: list[str] = []
    block = None  # the margin of the field list or list being read, or None
    fence = False
    for line in lines:
        text = line.strip()
        if text.endswith("::") or text.startswith(".. "):
            fence = True  # a literal block or a directive follows: left as written
        elif fence and text and _indent(line) == 0:
            fence = False
        if fence or not text:
            out.append(line)
            if not text and block is not None:
                block = None
            continue
        margin = _indent(line)
        entry = _ENTRY.match(line) if margin == 0 else None
        bullet = _BULLET.match(text)
        starts = entry is not None or bullet is not None
        if starts and (block is None or margin < block) and out and out[-1].strip():
            out.append("")  # the list starts: a blank line before it
        if entry is not None:
            line = ":" + entry.group(1).replace("*", "\\*") + f": {entry.group(2)}"
            block = 0
        elif bullet is not None:
            block = margin if block is None else min(block, margin)
        elif block is not None and margin <= block:
            out.append("")  # the list ends
            block = None
        out.append(line)
    return out


def _plain_notation(app, what, name, obj, options, lines):
    lines[:] = _read_as_written(list(lines))


# --- references as the docstrings write them ----------------------------------------------------


def _documented(env) -> dict:
    """Every documented Python object: full name -> (docname, node id, object type)."""
    domain = env.get_domain("py")
    return {name: (entry.docname, entry.node_id, entry.objtype) for name, entry in domain.objects.items()}


_MISSING = object()


def _imported(target: str):
    """The object ``target`` (a dotted path) names, or _MISSING."""
    import importlib

    parts = target.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for part in parts[cut:]:
                obj = getattr(obj, part)
        except AttributeError:
            return _MISSING
        return obj
    return _MISSING


def _canonical(target: str, objects: dict) -> str | None:
    """Where ``target`` is documented if it is an object re-exported or imported elsewhere
    (``lcpdyn.friction.Regularized`` -> ``lcpdyn.friction.regularized.Regularized``;
    ``solvers.METHODS`` -> ``solvers.api.METHODS``): its defining module's name, or the one
    documented name of that last part that holds the same object."""
    obj = _imported(target)
    if obj is _MISSING:
        return None
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str) and f"{module}.{qualname}" in objects:
        return f"{module}.{qualname}"
    last = target.rsplit(".", 1)[-1]
    same = [name for name in objects if name.rsplit(".", 1)[-1] == last and _imported(name) is obj]
    return same[0] if len(same) == 1 else None


def _resolve(app, env, node, contnode):
    """A reference the Python domain did not find, resolved as its writer meant it: a name
    re-exported by a package (its defining module's object), or a name relative to the
    documenting module or unique among the documented objects (``Simulation.run``). Anything
    else stays unresolved, and the nitpicky build fails on it."""
    from sphinx.util.nodes import make_refnode

    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].lstrip("~.")
    objects = _documented(env)
    module = node.get("py:module") or ""
    found = None
    for name in ([f"{module}.{target}"] if module else []) + ([target] if "." in target else []):
        found = found or _canonical(name, objects)
    if found is None:
        unique = sorted({name for name in objects if name.endswith("." + target)})
        found = unique[0] if len(unique) == 1 else None
    if found is None:
        return None
    docname, node_id, _ = objects[found]
    return make_refnode(app.builder, node["refdoc"], docname, node_id, contnode, found)


def setup(app):
    app.connect("autodoc-process-docstring", _plain_notation, priority=400)
    app.connect("missing-reference", _resolve)
    return {"parallel_read_safe": True}
