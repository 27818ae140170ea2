"""The scale benchmark's own arithmetic and its MuJoCo model (no timing is asserted)."""

from __future__ import annotations

import math

import pytest

import scenes

from .benchmark_modules import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_scale")


def test_growth_exponent_is_the_log_log_slope_over_64_contacts_and_more(bench):
    entries = [{"contacts": c, "step_ms": 0.5 * c**1.5} for c in (16, 64, 256, 1000)]
    entries[0]["step_ms"] = 1e6  # below 64 contacts: not fitted
    assert bench._growth(entries) == pytest.approx(1.5, rel=1e-12)
    assert bench._growth([{"contacts": 64, "step_ms": 1.0}, {"contacts": 256, "skipped": "budget"}]) is None


def test_an_entry_predicted_beyond_the_budget_is_skipped_and_the_table_says_why(bench):
    previous = {"contacts": 256, "startup_s": 50.0, "step_ms": 700.0}
    predicted = bench._predicted_seconds(previous, 1000, 10)
    assert predicted == pytest.approx(50.0 * 1000 / 256 + 0.7 * (1000 / 256) ** 3 * 11)
    report = {
        "steps": 10,
        "results": {
            "spheres/regularized": {
                "entries": [
                    {"requested_contacts": 256, **previous, "peak_rss_mb": 2000.0, "iterations": 1.7, "fallbacks": 0},
                    {"contacts": 1000, "skipped": f"predicted {predicted:.0f} s > budget 400 s"},
                ],
                "growth_exponent": None,
            }
        },
    }
    table = bench._table(report)
    assert "predicted" in table and "700.000" in table


def test_the_mujoco_model_mirrors_the_scene(bench):
    """Same bodies, masses, inertias, sizes, friction and step in the MJCF (parsed as XML here;
    MuJoCo itself is an optional benchmark dependency)."""
    import xml.etree.ElementTree as ET

    for kind, count in (("spheres", 3), ("boxes", 2), ("dumbbells", 2)):
        scene = scenes.SCENES[kind].build(count=count)
        root = ET.fromstring(bench.mjcf(scene, kind))
        assert float(root.find("option").get("timestep")) == scene.dt
        assert root.find("option").get("cone") == "elliptic"
        bodies = root.find("worldbody").findall("body")
        assert [b.get("name") for b in bodies] == [b.name for b in scene.model.bodies]
        for element, body in zip(bodies, scene.model.bodies):
            inertial = element.find("inertial")
            assert float(inertial.get("mass")) == body.mass
            assert [float(x) for x in inertial.get("diaginertia").split()] == list(body.inertia_matrix.diagonal())
            geom = element.find("geom")
            assert float(geom.get("friction").split()[0]) == scene.parameters["mu"]
            size = [float(x) for x in geom.get("size").split()]
            expected = [scene.parameters["radius"]] if kind != "boxes" else [scene.parameters["side"] / 2] * 3
            assert size == expected and not math.isnan(size[0])
        joints = root.findall("equality/connect")  # a dumbbell's ball joint: anchor = offset_a in body a
        assert len(joints) == len(scene.model.holonomic)
        for element, joint in zip(joints, scene.model.holonomic):
            assert (element.get("body1"), element.get("body2")) == (joint.body_a.name, joint.body_b.name)
            assert [float(x) for x in element.get("anchor").split()] == list(joint.offset_a)
        excluded = [(e.get("body1"), e.get("body2")) for e in root.findall("contact/exclude")]
        assert excluded == [(j.body_a.name, j.body_b.name) for j in scene.model.holonomic]
