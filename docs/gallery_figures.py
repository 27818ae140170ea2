"""The gallery's image scraper (sphinx-gallery): the PNG files an example wrote into its own folder.

lcpdyn's figures are written by its plotting functions (``lcpdyn.plotting.plot_run``, each paper
scene's ``report``) to a file and closed, as a user's script writes them; sphinx-gallery runs an
example in the example's folder, so after each code block the files it wrote there are moved
into the gallery's images (the source folder stays clean) and shown in the order they were
written.
"""

from __future__ import annotations

import shutil
from pathlib import Path


def written_figures(block, block_vars, gallery_conf) -> str:
    """reST showing the PNG files the code block just wrote beside its example (moved into the
    gallery's image paths)."""
    from sphinx_gallery.scrapers import figure_rst

    folder = Path(block_vars["src_file"]).parent
    written = sorted(folder.glob("*.png"), key=lambda path: path.stat().st_mtime_ns)
    shown = []
    for png, target in zip(written, block_vars["image_path_iterator"]):
        shutil.move(png, target)
        shown.append(target)
    return figure_rst(shown, gallery_conf["src_dir"])
