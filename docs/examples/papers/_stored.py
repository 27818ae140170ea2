"""The paper reproductions that take minutes, run once and stored for the gallery.

Not an example itself: ``python docs/examples/papers/_stored.py [SCENE ...]`` runs each named
scene's ``report`` (what ``lcpdyn reproduce SCENE`` runs; all of :data:`SLOW` by default) and
stores its figures and numbers in ``stored/`` beside this file, with where they came from: the
lcpdyn version, the git commit, the date, the machine and the CPU and wall time taken
(``./dev.sh gallery-store`` runs it). The gallery pages of those scenes show them with
:func:`show`, saying so.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
STORED = HERE / "stored"
#: the reproductions whose page shows stored results: each takes a minute or more on a 2-core machine
SLOW = (
    "wheel", "rolling-disk", "road-wheel", "incline-pendulum", "beam-tyre-shimmy", "half-car", "wheelset-hunting",
    "wheelset-klingel", "caster-shimmy",
)  # fmt: skip


def _commit() -> str:
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=HERE, capture_output=True, text=True)
        return out.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def _machine() -> str:
    try:
        names = [line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")]
    except OSError:
        names = []
    return f"{names[0] if names else platform.machine()}, {os.cpu_count()} CPUs"


def _wheel_comparison(out_dir) -> dict:
    """What ``lcpdyn compare wheel`` runs (Peiret 2016's wheel, every model at 1 kHz against exact
    Coulomb at 10 kHz): its figures into ``out_dir``; its table, metrics and the paper's values."""
    from lcpdyn.compare import compare, format_table
    from lcpdyn.compare_figures import write_figures
    from scenes import wheel

    result = compare(wheel, reference_dt=1e-4)
    write_figures(result, str(Path(out_dir) / "wheel"))
    return {"table": format_table(result), "metrics": result["metrics"], "paper": result["paper"]}


def _compact(png: Path) -> None:
    """The figure as a 256-colour palette PNG (a line plot loses nothing visible; ~3x smaller in
    the repository)."""
    from PIL import Image

    with Image.open(png) as image:
        palette = image.convert("RGB").quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    palette.save(png, optimize=True)


def store(scene: str) -> dict:
    """Runs ``scene``'s report (for ``wheel``, the comparison of ``lcpdyn compare wheel``) and
    writes ``stored/SCENE.json`` (its numbers and their provenance) and ``stored/SCENE-*.png``,
    replacing what was stored; returns the JSON's content."""
    from lcpdyn import __version__
    from scenes import REPORTS

    with tempfile.TemporaryDirectory() as scratch:
        wall, cpu = time.perf_counter(), time.process_time()
        numbers = _wheel_comparison(scratch) if scene == "wheel" else REPORTS[scene].report(scratch)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        STORED.mkdir(exist_ok=True)
        for old in STORED.glob(f"{scene}-*.png"):
            old.unlink()
        for png in sorted(Path(scratch).glob("*.png")):
            _compact(png)
            shutil.move(png, STORED / png.name)
    provenance = {
        "lcpdyn_version": __version__,
        "commit": _commit(),
        "date": time.strftime("%Y-%m-%d"),
        "machine": _machine(),
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "command": "lcpdyn compare wheel" if scene == "wheel" else f"lcpdyn reproduce {scene}",
    }
    content = {"scene": scene, "provenance": provenance, "numbers": numbers}
    (STORED / f"{scene}.json").write_text(json.dumps(content, indent=2, default=float) + "\n")
    return content


def show(scene: str) -> dict:
    """The stored numbers of ``scene``'s reproduction; its stored figures are copied beside this
    file, where the gallery takes them up, and where they came from is printed."""
    content = json.loads((STORED / f"{scene}.json").read_text())
    for png in sorted(STORED.glob(f"{scene}-*.png")):
        shutil.copy(png, HERE / png.name)
    p = content["provenance"]
    print(
        f"Stored results of `{p['command']}`: lcpdyn {p['lcpdyn_version']} (commit {p['commit']}), {p['date']};\n"
        f"{p['wall_s'] / 60:.1f} min wall and {p['cpu_s'] / 60:.1f} min CPU on {p['machine']}.\n"
    )
    return content["numbers"]


if __name__ == "__main__":
    for name in sys.argv[1:] or SLOW:
        if name not in SLOW:
            raise SystemExit(f"{name!r} is not one of the stored reproductions {SLOW}")
        print(f"{name}: ran in {store(name)['provenance']['wall_s']:.0f} s")
