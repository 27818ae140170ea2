"""Small models shared by the engine tests."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from lcpdyn.body import RigidBody
from lcpdyn.contact import DiskContact, Plane, PointContact, SphereContact
from lcpdyn.model import Model
from lcpdyn.rotation import euler_zxy


def wheel_model(
    theta_deg=20.0,
    psi_deg=0.0,
    phi_deg=0.0,
    mu=0.3,
    height_offset=0.0,
    velocity=(6.0, 0.0, 0.0),
    angular_velocity=(0.0, 0.0, -2.0),
    plane=None,
):
    theta = np.radians(theta_deg)
    model = Model()
    body = model.add_body(
        RigidBody(
            "wheel",
            1.0,
            (0.3, 0.6, 0.3),
            position=(0.0, 0.0, 0.5 * np.cos(theta) + height_offset),
            orientation=euler_zxy(np.radians(psi_deg), theta, np.radians(phi_deg)),
            velocity=velocity,
            angular_velocity=angular_velocity,
        )
    )
    model.add_contact(DiskContact(body, plane or Plane(), mu, radius=0.5))
    return model


def sphere_model(mu=0.0, velocity=(1.0, 0.5, 0.0), angular_velocity=(0.3, -2.0, 5.0)):
    model = Model()
    body = model.add_body(
        RigidBody(
            "ball",
            2.0,
            (0.08, 0.08, 0.08),
            position=(0.0, 0.0, 0.2),
            velocity=velocity,
            angular_velocity=angular_velocity,
        )
    )
    model.add_contact(SphereContact(body, Plane(), mu, radius=0.2))
    return model


def random_pose_model(seed):
    """A body with a disk, a sphere and a corner contact at a random pose (for Jacobian checks)."""
    rng = np.random.default_rng(seed)
    quaternion = rng.normal(size=4)
    model = Model()
    body = model.add_body(
        RigidBody(
            "body",
            1.3,
            (0.2, 0.3, 0.4),
            position=rng.normal(size=3),
            orientation=quaternion / np.linalg.norm(quaternion),
            velocity=rng.normal(size=3),
            angular_velocity=rng.normal(size=3),
        )
    )
    tilted = Plane(point=(0.1, -0.2, 0.05), normal=rng.normal(size=3))
    model.add_contact(DiskContact(body, tilted, 0.4, radius=0.5, axis=rng.normal(size=3)))
    model.add_contact(SphereContact(body, Plane(), 0.4, radius=0.3))
    model.add_contact(PointContact(body, tilted, 0.4, offset=rng.normal(size=3)))
    return model


def documentation_pages() -> list[Path]:
    """The README and every page of the documentation site (``docs/**/*.md``, generated pages aside)."""
    root = Path(__file__).resolve().parents[1]
    pages = sorted(p for p in (root / "docs").rglob("*.md") if "_build" not in p.parts and p.parts[-2] != "api")
    return [root / "README.md", *pages]


def documentation_example(heading: str) -> tuple[Path, str]:
    """(page, code) of the first ```python block after the heading titled ``heading`` (its #'s are
    not compared: a README section keeps its title when it moves to a documentation page), in the
    README or the documentation's pages, the first page where such a block follows it."""
    title = heading.lstrip("#").strip()
    for page in documentation_pages():
        text = page.read_text()
        found = re.search(rf"^#+ {re.escape(title)}", text, re.M)
        block = found and re.search(r"```python\n(.*?)```", text[found.start() :], re.S)
        if block:
            return page, block.group(1)
    raise LookupError(f"no page of the documentation has a Python example under a heading {title!r}")


def readme_example(heading: str) -> dict:
    """Run :func:`documentation_example` ``heading``'s code as printed; returns its namespace."""
    page, code = documentation_example(heading)
    namespace = {}
    exec(compile(code, page.name, "exec"), namespace)
    return namespace
