"""A fuzz of bad inputs through the API, the command line and files (issue 46): every case is a
mistake a user makes, each judged by what lcpdyn answers.

    clear    an error naming the culprit (every word the case expects in the message), before any
             step (a usage error, exit 2, on the command line)
    late     the culprit named, but after steps were taken (a run that fails, exit 1)
    unclear  an error that does not name the culprit, or a raw traceback
    silent   no error at all: the bad input was taken

    python benchmarks/bad_inputs.py [--out results/bad_inputs.json] [--show unclear,silent]

tests/test_bad_inputs.py runs every case and asserts that each is clear.
"""

# ruff: noqa: E501 -- a table of cases, one per line
from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import sys
import tempfile
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

OUTCOMES = ("clear", "late", "unclear", "silent")


@dataclass
class Case:
    kind: str  # the class of the case: body, contact, cli, file, ...
    name: str  # what is wrong
    action: object  # folder -> None (raises for a refusal), or ["cli", argv] for the command line
    culprit: tuple = ()  # words the message must hold
    extra: dict = field(default_factory=dict)


CASES: list[Case] = []


def case(kind, name, culprit=()):
    """Decorator: the function ``action(folder)`` is a case."""

    def register(action):
        CASES.append(Case(kind, name, action, tuple([culprit] if isinstance(culprit, str) else culprit)))
        return action

    return register


def add(kind, name, action, culprit=()):
    CASES.append(Case(kind, name, action, tuple([culprit] if isinstance(culprit, str) else culprit)))


# --- helpers ------------------------------------------------------------------------------------------
def _body(**changes):
    from lcpdyn import RigidBody

    arguments = {"name": "b", "mass": 1.0, "inertia": (0.1, 0.1, 0.1), "position": (0.0, 0.0, 0.1)}
    arguments.update(changes)
    return RigidBody(**arguments)


def _sphere_model(mu=0.3, **contact):
    from lcpdyn import Model
    from lcpdyn.contact import Plane, SphereContact

    model = Model()
    body = model.add_body(_body())
    model.add_contact(SphereContact(body, Plane(), mu, radius=0.1, **contact))
    return model


def _simulate(model=None, friction="regularized", dt=1e-3, t_end=0.01, run=None, **options):
    from lcpdyn import Simulation

    sim = Simulation(model if model is not None else _sphere_model(), friction, dt, **options)
    sim.run(t_end, **(run or {}))
    return sim


# --- bodies (API) ---------------------------------------------------------------------------------------
for value in (-1.0, 0.0, math.nan, math.inf, -math.inf, "1", None, True, [1.0]):
    add("body", f"mass {value!r}", lambda folder, v=value: _body(mass=v), ("'b'", "mass"))
for value, word in (
    ((-0.1, 0.1, 0.1), "inertia"),
    ((0.0, 0.1, 0.1), "inertia"),
    ((math.nan, 0.1, 0.1), "inertia"),
    ((0.1, 0.1), "inertia"),
    (np.ones((3, 3)), "inertia"),
    (np.array([[1.0, 0.5, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]), "symmetric"),
    ((1.0, 1.0, 3.0), "triangle"),
    ("abc", "inertia"),
):
    add("body", f"inertia {np.asarray(value).tolist()!r}", lambda folder, v=value: _body(inertia=v), ("'b'", word))
for field_name, value in (
    ("position", (math.nan, 0.0, 0.0)),
    ("position", (math.inf, 0.0, 0.0)),
    ("position", (1e300, 0.0, 0.0)),
    ("position", (1e16, 0.0, 0.0)),
    ("position", (0.0, 0.0)),
    ("position", "origin"),
    ("orientation", (0.0, 0.0, 0.0, 0.0)),
    ("orientation", (math.nan, 1.0, 0.0, 0.0)),
    ("orientation", (1.0, 0.0, 0.0)),
    ("velocity", (math.inf, 0.0, 0.0)),
    ("velocity", (1e200, 0.0, 0.0)),
    ("velocity", (1.0, 2.0)),
    ("angular_velocity", (0.0, 0.0, 1e160)),
    ("angular_velocity", (math.nan, 0.0, 0.0)),
):
    add("body", f"{field_name} {value!r}", lambda folder, f=field_name, v=value: _body(**{f: v}), ("'b'", field_name))
for value in ("", None, 5):
    add("body", f"name {value!r}", lambda folder, v=value: _body(name=v), "name")


@case("body", "two bodies with one name", ("'b'", "already exists"))
def _(folder):
    model = _sphere_model()
    model.add_body(_body())


# --- contacts and planes (API) --------------------------------------------------------------------------
for value in (-0.3, math.nan, math.inf, "0.3", None):
    add("contact", f"mu {value!r}", lambda folder, v=value: _sphere_model(mu=v), ("'b'", "mu"))
for value, word in ((-0.1, "mu_static"), (math.nan, "mu_static"), (0.1, "below the kinetic")):
    add("contact", f"mu_static {value!r}", lambda folder, v=value: _sphere_model(mu_static=v), ("'b'", word))
add("contact", "normal_law a number", lambda folder: _sphere_model(normal_law=3.0), ("'b'", "normal_law"))
add(
    "contact",
    "friction_profile a number",
    lambda folder: _sphere_model(friction_profile=0.3),
    ("'b'", "friction_profile"),
)
for value in (-0.1, 0.0, math.nan):
    add("contact", f"sphere radius {value!r}", lambda folder, v=value: _contact("sphere", radius=v), ("'b'", "radius"))
for value in (-0.5, math.inf):
    add("contact", f"disk radius {value!r}", lambda folder, v=value: _contact("disk", radius=v), ("'b'", "radius"))
for value, word in (((0.0, 0.0, 0.0), "axis"), ((math.nan, 1.0, 0.0), "axis"), ((0.0, 0.0, 1.0), "flat")):
    add("contact", f"disk axis {value!r}", lambda folder, v=value: _contact("disk", axis=v), ("'b'", word))
for value in (0.0, 1.0, math.nan):
    add(
        "contact",
        f"disk min_sin_tilt {value!r}",
        lambda folder, v=value: _contact("disk", min_sin_tilt=v),
        "min_sin_tilt",
    )
for key, value in (("rolling", "sliding"), ("spin", "locked")):
    add("contact", f"disk {key} {value!r}", lambda folder, k=key, v=value: _contact("disk", **{k: v}), (key, value))
for value in ((math.nan, 0.0, 0.0), (0.0, 0.0)):
    add("contact", f"point offset {value!r}", lambda folder, v=value: _contact("point", offset=v), ("'b'", "offset"))
add("contact", "a body not in the model", lambda folder: _contact("foreign"), ("'b'", "has not been added"))
add("contact", "a plane that is a tuple", lambda folder: _contact("plane"), "plane")
for key, value in (
    ("normal", (0.0, 0.0, 0.0)),
    ("normal", (math.nan, 0.0, 1.0)),
    ("point", (math.inf, 0.0, 0.0)),
    ("tangent", (0.0, 0.0, 5.0)),
):
    add("plane", f"{key} {value!r}", lambda folder, k=key, v=value: _plane(**{k: v}), ("plane", key))


def _plane(**arguments):
    from lcpdyn.contact import Plane

    return Plane(**arguments)


def _contact(kind, **arguments):
    from lcpdyn import Model
    from lcpdyn.contact import DiskContact, Plane, PointContact, SphereContact

    model = Model()
    body = model.add_body(_body(position=(0.0, 0.0, 0.5)))
    if kind == "sphere":
        return model.add_contact(SphereContact(body, Plane(), 0.3, **arguments))
    if kind == "disk":
        return model.add_contact(DiskContact(body, Plane(), 0.3, **{"radius": 0.5, **arguments}))
    if kind == "point":
        return model.add_contact(PointContact(body, Plane(), 0.3, **arguments))
    if kind == "foreign":
        return model.add_contact(SphereContact(_body(), Plane(), 0.3, radius=0.1))
    return model.add_contact(SphereContact(body, (0.0, 0.0, 1.0), 0.3, radius=0.1))


# --- models, forces and constraints (API) ---------------------------------------------------------------
for value in ((math.nan, 0.0, -9.81), (0.0, -9.81), "down"):
    add("model", f"gravity {value!r}", lambda folder, v=value: _model(gravity=v), "gravity")


def _model(**arguments):
    from lcpdyn import Model

    return Model(**arguments)


for method, value, word in (
    ("add_body", "a body", "RigidBody"),
    ("add_contact", 3, "Contact"),
    ("add_force", lambda t, s: None, "add_force"),
    ("add_constraint", object(), "add_constraint"),
):
    add("model", f"{method}({type(value).__name__})", lambda folder, m=method, v=value: getattr(_model(), m)(v), word)


def _with_force(make):
    from lcpdyn import Model

    model = Model()
    body = model.add_body(_body())
    model.add_force(make(body))
    return model, body


def _bad_force(result):
    from lcpdyn.forces import BodyForce

    model, _ = _with_force(lambda body: BodyForce(body, lambda t, s: result))
    _simulate(model)


add(
    "force",
    "BodyForce returning a 2-vector",
    lambda folder: _bad_force(((0.0, 0.0), (0.0, 0.0, 0.0))),
    ("'b'", "shape"),
)
add("force", "BodyForce returning one vector", lambda folder: _bad_force(np.zeros(3)), ("'b'", "force"))
add("force", "BodyForce not callable", lambda folder: _with_force(lambda body: _body_force(body, 3.0)), "callable")
for key, value in (("stiffness", -1.0), ("damping", math.nan), ("rest_length", -0.1), ("offset_a", (0.0, 0.0))):
    add("force", f"SpringDamper {key} {value!r}", lambda folder, k=key, v=value: _spring(**{k: v}), key)


def _body_force(body, function):
    from lcpdyn.forces import BodyForce

    return BodyForce(body, function)


def _spring(**arguments):
    from lcpdyn.forces import SpringDamper

    values = {"offset_a": (0.0, 0.0, 0.0), "offset_b": (0.0, 0.0, 0.0), "stiffness": 10.0}
    values.update(arguments)
    return SpringDamper(_body(), values.pop("offset_a"), None, values.pop("offset_b"), **values)


@case("constraint", "a joint on a body not in the model", ("has not been added", "'b'"))
def _(folder):
    from lcpdyn.constraints import BallJoint

    model = _model()
    model.add_body(_body(name="a"))
    model.add_constraint(BallJoint(body_a=_body()))


# --- changed after the simulation was built (API) ------------------------------------------------------
def _changed(change):
    from lcpdyn import Simulation

    model = _sphere_model()
    sim = Simulation(model, "regularized", 1e-3)
    change(model)
    sim.run(0.01)


for label, change, culprit in (
    ("a body added", lambda m: m.add_body(_body(name="extra")), ("model changed", "bodies 1 -> 2")),
    ("a contact added", lambda m: _add_sphere_contact(m), ("model changed", "contacts 1 -> 2")),
    ("mass set to 2", lambda m: setattr(m.bodies[0], "mass", 2.0), ("'b'", "mass changed")),
    ("mass set to -2", lambda m: setattr(m.bodies[0], "mass", -2.0), ("'b'", "mass must be")),
    ("mass set to 1e-300 then 0", lambda m: setattr(m.bodies[0], "mass", 0.0), ("'b'", "mass must be")),
    ("inertia set flat", lambda m: setattr(m.bodies[0], "inertia", (1.0, 1.0, 3.0)), ("'b'", "triangle")),
    ("position moved", lambda m: setattr(m.bodies[0], "position", (1.0, 0.0, 0.1)), ("'b'", "initial pose changed")),
    ("mu set to -0.3", lambda m: setattr(m.contacts[0], "mu", -0.3), ("'b'", "mu must be")),
    ("mu set to 0.9", lambda m: setattr(m.contacts[0], "mu", 0.9), ("'b'", "mu changed")),
    ("mu_static set below mu", lambda m: setattr(m.contacts[0], "mu_static", 0.1), ("'b'", "below the kinetic")),
):
    add("changed", label, lambda folder, c=change: _changed(c), culprit)


def _add_sphere_contact(model):
    from lcpdyn.contact import Plane, SphereContact

    model.add_contact(SphereContact(model.bodies[0], Plane(), 0.3, radius=0.1))


# --- magnitudes the step cannot represent (API) --------------------------------------------------------
for mu in (1e9, 1e18, 1e300):
    add(
        "magnitude",
        f"polygonal mu {mu:g}",
        lambda folder, m=mu: _simulate(_sphere_model(mu=m), "polygonal"),
        ("mu", "largest_mu"),
    )


@case("magnitude", "a wheel spinning at 1e10 rad/s", ("'wheel'", "omega", "dt <="))
def _(folder):
    import scenes

    scene = scenes.SCENES["wheel"].build(t_end=0.01)
    scene.model.bodies[0].angular_velocity = np.array([0.0, 1e10, 0.0])
    scene.simulation("regularized").run(0.01)


add(
    "magnitude",
    "a body 1e16 m from the origin",
    lambda folder: _body(position=(1e16, 0.0, 0.0)),
    ("'b'", "MAX_POSITION"),
)
for value in (1e-300, 1e-150, 1e150):
    add("magnitude", f"mass {value:g} kg", lambda folder, v=value: _body(mass=v), ("'b'", "MASS_RANGE"))
add("magnitude", "inertia 1e-200 kg m^2", lambda folder: _body(inertia=(1e-200, 1e-200, 1e-200)), ("'b'", "MASS_RANGE"))
add(
    "magnitude",
    "a sphere started 0.9 m inside its plane",
    lambda folder: _simulate(_inside()),
    ("'b'", "inside", "MAX_START_PENETRATION"),
)
add("magnitude", "dt = 1e-300 s", lambda folder: _simulate(dt=1e-300), ("dt", "MIN_DT"))
add("magnitude", "t_end needing 1e12 steps", lambda folder: _simulate(dt=1e-9, t_end=1e3), ("t_end", "MAX_STEPS"))
add("magnitude", "stiffness 1e300 stretched 1e8 m", lambda folder: _stretched(), ("potential energy", "SpringDamper"))


def _inside():
    model = _sphere_model()
    model.bodies[0].position = np.array([0.0, 0.0, -0.9])
    return model


def _stretched():
    from lcpdyn import Model, Simulation
    from lcpdyn.forces import SpringDamper

    model = Model(gravity=(0.0, 0.0, 0.0))
    body = model.add_body(_body(position=(1e8, 0.0, 0.0)))
    model.add_force(SpringDamper(body, (0.0, 0.0, 0.0), None, (0.0, 0.0, 0.0), stiffness=1e300))
    Simulation(model, "coulomb", 1e-3)


# --- simulation options and run arguments (API) ----------------------------------------------------------
for value in (0.0, -1e-3, math.nan, math.inf, "1e-3", None):
    add("options", f"dt {value!r}", lambda folder, v=value: _simulate(dt=v), "dt")
for key, value in (
    ("tolerance", 0.0),
    ("tolerance", -1e-9),
    ("tolerance", math.nan),
    ("on_unsolved", "ignore"),
    ("position_update", "euler"),
    ("gyroscopic", "implicit"),
    ("energy_check", "maybe"),
    ("energy_tolerance", -1.0),
    ("method", "simplex"),
    ("fallback_method", "simplex"),
    ("normal_force_iterations", -1),
    ("blas_threads", 0),
    ("compiled_loop", "sometimes"),
    ("solver_options", {"colour": 10}),
    ("no_such_option", 1),
):
    word = "colour" if key == "solver_options" else key
    add("options", f"{key}={value!r}", lambda folder, k=key, v=value: _simulate(**{k: v}), word)
for value in ("stribeck", 3.0, None):
    add("options", f"friction {value!r}", lambda folder, v=value: _simulate(friction=v), "friction")
for key, value in (("record_every", 0), ("record_every", 2.5), ("record_every", True), ("chunk_steps", 0)):
    add("run", f"{key}={value!r}", lambda folder, k=key, v=value: _simulate(run={k: v}), key)
for value in (math.nan, math.inf, -1.0, 0.0):
    add("run", f"t_end {value!r}", lambda folder, v=value: _simulate(t_end=v), "t_end")
add("run", "out with suffix .csv", lambda folder: _simulate(run={"out": folder / "r.csv"}), ("r.csv", ".npz, .h5"))
add(
    "run",
    "out in a missing folder",
    lambda folder: _simulate(run={"out": folder / "no" / "r.h5"}),
    ("no", "does not exist"),
)
add("run", "out onto a result without overwrite", lambda folder: _twice(folder / "r.h5"), ("r.h5", "overwrite"))
add("run", "out onto a folder", lambda folder: _simulate(run={"out": _folder(folder / "d.h5")}), ("d.h5",))


def _folder(path):
    path.mkdir()
    return path


def _twice(path):
    _simulate(run={"out": path})
    _simulate(run={"out": path})


# --- friction models (API) -----------------------------------------------------------------------------
def _friction(name, **arguments):
    from lcpdyn import friction

    return friction.make_friction(name) if not arguments else getattr(friction, name)(**arguments)


for model, key, value in (
    ("Regularized", "tangential_stiffness", -1.0),
    ("Regularized", "tangential_stiffness", 0.0),
    ("Regularized", "velocity_threshold", -0.01),
    ("Regularized", "velocity_threshold", math.nan),
    ("Regularized", "static_bound", "circle"),
    ("Polygonal", "directions", 2),
    ("Polygonal", "directions", 3.5),
    ("Polygonal", "directions", True),
    ("Continuous", "characteristic_velocity", 0.0),
    ("Creep", "f11", -1.0),
    ("Creep", "min_speed", -0.1),
):
    add("friction", f"{model}({key}={value!r})", lambda folder, m=model, k=key, v=value: _friction(m, **{k: v}), key)


# --- solvers (API) ---------------------------------------------------------------------------------------
def _solve(M, q, lo=None, hi=None, **options):
    import solvers

    return solvers.solve(np.asarray(M, float), np.asarray(q, float), lo, hi, **options)


for label, arguments, word in (
    ("M not square", (np.ones((2, 3)), np.ones(2)), "M"),
    ("q of the wrong length", (np.eye(2), np.ones(3)), "q"),
    ("NaN in M", (np.array([[math.nan]]), np.ones(1)), "M"),
    ("inf in q", (np.eye(1), np.array([math.inf])), "q"),
    ("lo above hi", (np.eye(1), np.ones(1), np.ones(1), np.zeros(1)), "lo"),
    ("lo of the wrong length", (np.eye(2), np.ones(2), np.zeros(3), None), "lo"),
):
    add("solver", label, lambda folder, a=arguments: _solve(*a), word)
add("solver", "an unknown method", lambda folder: _solve(np.eye(1), -np.ones(1), method="simplex"), "simplex")
add("solver", "an unknown option", lambda folder: _solve(np.eye(1), -np.ones(1), max_sweeps=3), "max_sweeps")
add("solver", "tolerance -1", lambda folder: _solve(np.eye(1), -np.ones(1), tolerance=-1.0), "tolerance")


def _fc(W, b, mu):
    from solvers import FrictionContactProblem

    return FrictionContactProblem.make(np.asarray(W, float), np.asarray(b, float), mu)


for label, arguments, word in (
    ("W not square", (np.ones((3, 6)), np.ones(3), 0.3), "W"),
    ("b not 3 per contact", (np.eye(4), np.ones(4), 0.3), "b"),
    ("mu negative", (np.eye(3), np.ones(3), -0.3), "mu"),
    ("mu NaN", (np.eye(3), np.ones(3), math.nan), "mu"),
    ("W with inf", (np.diag([1.0, math.inf, 1.0]), np.ones(3), 0.3), "W"),
):
    add("solver", f"friction contact: {label}", lambda folder, a=arguments: _fc(*a), word)


# --- files ----------------------------------------------------------------------------------------------
def _load(path):
    from lcpdyn import load

    return load(path)


def _write(path, data: bytes):
    path.write_bytes(data)
    return path


for label, make, word in (
    ("a missing file", lambda f: f / "none.h5", "no such file"),
    ("an empty .h5", lambda f: _write(f / "e.h5", b""), "e.h5"),
    ("random bytes as .h5", lambda f: _write(f / "r.h5", os.urandom(4096)), "r.h5"),
    ("random bytes as .npz", lambda f: _write(f / "r.npz", os.urandom(4096)), "r.npz"),
    ("a text file as .npz", lambda f: _write(f / "t.npz", b"t,x\n0,1\n"), "t.npz"),
    ("a .csv", lambda f: _write(f / "t.csv", b"t,x\n0,1\n"), "t.csv"),
    ("a folder", lambda f: _folder(f / "d.h5"), "d.h5"),
    ("an .npz of other arrays", lambda f: _npz(f / "o.npz", {"x": np.ones(3)}), "o.npz"),
    ("an .npz with an object array", lambda f: _npz(f / "p.npz", {"t": np.array([{}], dtype=object)}), "p.npz"),
    ("an HDF5 file of another program", lambda f: _h5(f / "h.h5"), "h.h5"),
    ("a truncated lcpdyn .h5", lambda f: _truncated(f / "cut.h5"), "cut.h5"),
):
    add("file", f"load {label}", lambda folder, m=make: _load(m(folder)), word)


def _npz(path, arrays):
    np.savez(path, **arrays)
    return path


def _h5(path):
    import h5py

    with h5py.File(path, "w") as file:
        file["data"] = np.arange(5)
    return path


def _truncated(path):
    _simulate(run={"out": path}, t_end=0.05)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def _read(reader, path):
    import solvers

    return getattr(solvers, reader)(path)


for reader, label, make, word in (
    ("read_fclib", "random bytes", lambda f: _write(f / "p.hdf5", os.urandom(2048)), "p.hdf5"),
    ("read_fclib", "an HDF5 file without a problem", lambda f: _h5(f / "q.hdf5"), "q.hdf5"),
    ("read_fclib", "a missing file", lambda f: f / "none.hdf5", "none.hdf5"),
    ("read_siconos_dat", "an empty file", lambda f: _write(f / "e.dat", b""), "e.dat"),
    ("read_siconos_dat", "words", lambda f: _write(f / "w.dat", b"hello world\n"), "w.dat"),
    ("read_siconos_dat", "counts that do not add up", lambda f: _write(f / "c.dat", b"3\n2\n1 2 3\n"), "c.dat"),
    ("read_siconos_dat", "a missing file", lambda f: f / "none.dat", "none.dat"),
):
    add("file", f"{reader}: {label}", lambda folder, r=reader, m=make: _read(r, m(folder)), word)


# --- the command line -------------------------------------------------------------------------------------
def _result(name):
    """A ``prepare`` that leaves a run's result file ``name`` in the case's folder."""
    return lambda folder: _simulate(run={"out": folder / name})


def cli(kind, name, argv, culprit, prepare=None):
    CASES.append(
        Case(kind, name, ["cli", argv], tuple([culprit] if isinstance(culprit, str) else culprit), {"prepare": prepare})
    )


RUN = ["run", "puck", "--t-end", "0.01", "--quiet"]
cli("cli", "no command option", ["run"], "SCENE")
cli("cli", "an unknown command", ["simulate", "wheel"], "simulate")
cli("cli", "an unknown scene", ["run", "no-such", "--out", "x.npz"], "no-such")
cli("cli", "run without --out", ["run", "puck"], "--out")
for option, value in (
    ("--dt", "-1e-3"),
    ("--dt", "0"),
    ("--dt", "nan"),
    ("--dt", "inf"),
    ("--dt", "abc"),
    ("--t-end", "abc"),
):
    cli("cli", f"{option} {value}", [*RUN, option, value, "--out", "x.npz"], option)
cli("cli", "--t-end before the start", ["run", "puck", "--t-end", "-1", "--out", "x.npz", "--quiet"], "--t-end")
cli("cli", "--t-end nan", ["run", "puck", "--t-end", "nan", "--out", "x.npz", "--quiet"], "--t-end")
cli("cli", "--friction unknown", [*RUN, "--friction", "stribeck", "--out", "x.npz"], "stribeck")
cli("cli", "--method unknown", [*RUN, "--method", "simplex", "--out", "x.npz"], "simplex")
cli("cli", "--position-update unknown", [*RUN, "--position-update", "euler", "--out", "x.npz"], "--position-update")
cli("cli", "--record-every 0", [*RUN, "--record-every", "0", "--out", "x.npz"], "--record-every")
cli("cli", "--record-every 1.5", [*RUN, "--record-every", "1.5", "--out", "x.npz"], "--record-every")
cli("cli", "--tolerance 0", [*RUN, "--tolerance", "0", "--out", "x.npz"], "--tolerance")
cli("cli", "--tolerance -1", [*RUN, "--tolerance", "-1", "--out", "x.npz"], "--tolerance")
cli("cli", "--energy-tolerance -1", [*RUN, "--energy-tolerance", "-1", "--out", "x.npz"], "--energy-tolerance")
cli(
    "cli",
    "--resume --t-end 0",
    ["run", "--resume", "r.h5", "--t-end", "0"],
    "--t-end",
    prepare=_result("r.h5"),
)
cli("cli", "--on-unsolved ignore", [*RUN, "--on-unsolved", "ignore", "--out", "x.npz"], "--on-unsolved")
cli("cli", "--compiled-loop sometimes", [*RUN, "--compiled-loop", "sometimes", "--out", "x.npz"], "--compiled-loop")
for item, culprit in (
    ("nope=1", "nope"),
    ("mu", "KEY=VALUE"),
    ("mu=abc", "mu"),
    ("mu=-1", "mu"),
    ("mu=nan", "mu"),
    ("mass=-1", "mass"),
    ("mass=0", "mass"),
    ("gravity=-9.81", "gravity"),
    ("dt=0", "dt"),
    ("mu_static=0.1", "mu_static"),
):
    cli("cli", f"--set {item}", [*RUN, "--set", item, "--out", "x.npz"], culprit)
cli("cli", "--set given twice", [*RUN, "--set", "mu=0.3", "--set", "mu=0.5", "--out", "x.npz"], ("mu", "twice"))
cli("cli", "--out .csv", [*RUN, "--out", "x.csv"], ("--out", "x.csv"))
cli("cli", "--out in a missing folder", [*RUN, "--out", "no/x.npz"], ("--out", "does not exist"))
cli(
    "cli",
    "--out onto a result",
    [*RUN, "--out", "old.npz"],
    ("old.npz", "--overwrite"),
    prepare=_result("old.npz"),
)
cli(
    "cli",
    "--out onto a FIFO",
    [*RUN, "--out", "fifo.h5"],
    ("fifo.h5", "FIFO"),
    prepare=lambda f: os.mkfifo(f / "fifo.h5"),
)
cli("cli", "--out onto a folder", [*RUN, "--out", "d.npz"], "d.npz", prepare=lambda f: _folder(f / "d.npz"))
cli("cli", "--plot .xyz", [*RUN, "--out", "x.npz", "--plot", "x.xyz"], ("--plot", "x.xyz"))
cli("cli", "--plot in a missing folder", [*RUN, "--out", "x.npz", "--plot", "no/x.png"], ("--plot", "does not exist"))
cli("cli", "--resume a missing file", ["run", "--resume", "none.h5", "--t-end", "1"], "none.h5")
cli("cli", "--resume an .npz", ["run", "--resume", "r.npz", "--t-end", "1"], ("r.npz", ".h5"))
cli(
    "cli",
    "--resume without --t-end",
    ["run", "--resume", "r.h5"],
    "--t-end",
    prepare=_result("r.h5"),
)
cli(
    "cli",
    "--resume with a scene",
    ["run", "puck", "--resume", "r.h5", "--t-end", "1"],
    "--resume",
    prepare=_result("r.h5"),
)
cli(
    "cli",
    "--resume another program's file",
    ["run", "--resume", "h.h5", "--t-end", "1"],
    "h.h5",
    prepare=lambda f: _h5(f / "h.h5"),
)
cli(
    "cli",
    "--resume random bytes",
    ["run", "--resume", "r.h5", "--t-end", "1"],
    "r.h5",
    prepare=lambda f: _write(f / "r.h5", os.urandom(512)),
)
cli("cli", "compare an unknown scene", ["compare", "no-such"], "no-such")
cli("cli", "compare --reference-dt 0", ["compare", "puck", "--reference-dt", "0"], "--reference-dt")
cli("cli", "compare --reference-dt -1e-4", ["compare", "puck", "--reference-dt", "-1e-4"], "--reference-dt")
cli("cli", "compare --out-dir in a missing folder", ["compare", "puck", "--out-dir", "no/deeper"], ("--out-dir", "no"))
cli("cli", "compare --reference unknown", ["compare", "puck", "--reference", "oracle"], "--reference")
cli("cli", "stability an unknown scene", ["stability", "no-such"], "no-such")
cli("cli", "stability --param bad", ["stability", "rolling-disk", "--param", "speed"], "--param")
cli("cli", "stability --param unknown name", ["stability", "rolling-disk", "--param", "colour=0:1:3"], "colour")
cli("cli", "stability --param count 0", ["stability", "rolling-disk", "--param", "speed=0:1:0"], "--param")
cli("cli", "stability --set mass=-1", ["stability", "rolling-disk", "--set", "mass=-1"], "mass")
cli("cli", "stability --set inertia not SPD", ["stability", "rolling-disk", "--set", "mass=0"], "mass")
cli("cli", "stability --out .csv", ["stability", "rolling-disk", "--out", "x.csv"], ("--out", "x.csv"))
SWEEP = ["sweep", "wheel", "--out", "sweep", "--quiet"]
cli("cli", "sweep an unknown scene", ["sweep", "no-such", "--grid", "mu=0.1,0.2", "--out", "sweep"], "no-such")
cli("cli", "sweep --grid bad", [*SWEEP, "--grid", "mu"], "--grid")
cli("cli", "sweep --grid unknown name", [*SWEEP, "--grid", "colour=1,2"], "colour")
cli("cli", "sweep --grid given twice", [*SWEEP, "--grid", "mu=0.1,0.2", "--grid", "mu=0.3"], "mu")
cli("cli", "sweep --friction unknown", [*SWEEP, "--grid", "mu=0.1,0.2", "--friction", "stribeck"], "stribeck")
cli("cli", "sweep --dt -1", [*SWEEP, "--grid", "mu=0.1,0.2", "--dt", "-1"], "--dt")
cli("cli", "sweep --option unknown", [*SWEEP, "--grid", "mu=0.1,0.2", "--option", "colour=1"], "colour")
cli(
    "cli",
    "sweep --scheduler that does not answer",
    [*SWEEP, "--grid", "mu=0.1,0.2", "--scheduler", "tcp://127.0.0.1:1"],
    ("--scheduler", "tcp://127.0.0.1:1", "no Dask scheduler"),
)
cli(
    "cli",
    "sweep --scheduler without a port",
    [*SWEEP, "--grid", "mu=0.1,0.2", "--scheduler", "tcp://localhost"],
    ("--scheduler", "port"),
)
cli("cli", "sweep --points missing", [*SWEEP, "--points", "none.json"], "none.json")
cli(
    "cli",
    "sweep --points not JSON",
    [*SWEEP, "--points", "p.json"],
    "p.json",
    prepare=lambda f: _write(f / "p.json", b"{mu: 1"),
)
cli("cli", "animate a missing result", ["animate", "none.npz", "--out", "a.gif"], "none.npz")
cli(
    "cli",
    "animate --fps 0",
    ["animate", "r.npz", "--out", "a.gif", "--fps", "0"],
    "--fps",
    prepare=_result("r.npz"),
)
cli(
    "cli",
    "animate --speed -1",
    ["animate", "r.npz", "--out", "a.gif", "--speed", "-1"],
    "--speed",
    prepare=_result("r.npz"),
)
cli(
    "cli",
    "animate --out .txt",
    ["animate", "r.npz", "--out", "a.txt"],
    ("--out", "a.txt"),
    prepare=_result("r.npz"),
)
cli(
    "cli",
    "animate random bytes",
    ["animate", "r.npz", "--out", "a.gif"],
    "r.npz",
    prepare=lambda f: _write(f / "r.npz", os.urandom(256)),
)
cli("cli", "reproduce an unknown scene", ["reproduce", "no-such"], "no-such")
cli(
    "cli",
    "reproduce --out-dir a file",
    ["reproduce", "rolling-disk", "--out-dir", "f.txt"],
    "f.txt",
    prepare=lambda f: _write(f / "f.txt", b"x"),
)
cli("cli", "scenes an unknown scene", ["scenes", "no-such"], "no-such")


# --- running the cases ---------------------------------------------------------------------------------
def judge(case_: Case, folder: Path) -> tuple[str, str]:
    """(outcome, what was said) of one case, run in ``folder``."""
    if isinstance(case_.action, list):
        return _judge_cli(case_, folder)
    import warnings

    from lcpdyn.stepper import SimulationError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            case_.action(folder)
    except Exception as exc:  # noqa: BLE001 -- every refusal is judged by its words
        message = f"{type(exc).__name__}: {exc}"
        if not all(word in message for word in case_.culprit):
            return "unclear", message + "\n" + "".join(traceback.format_exception(exc)[-3:])
        if isinstance(exc, SimulationError) and exc.step > 0:
            return "late", message
        return "clear", message
    return "silent", ""


def _judge_cli(case_: Case, folder: Path) -> tuple[str, str]:
    from lcpdyn.cli import main

    if case_.extra.get("prepare") is not None:
        case_.extra["prepare"](folder)
    err, out = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            try:
                code = main(case_.action[1])
            except SystemExit as exc:  # argparse
                code = exc.code
            except Exception:  # noqa: BLE001 -- a raw traceback is what a user would see
                traceback.print_exc()
                code = "traceback"
    finally:
        os.chdir(cwd)
    said = err.getvalue().strip()
    if code == 0:
        return "silent", said
    if "Traceback" in said or code == "traceback":
        return "unclear", said[-600:]
    if not all(word in said for word in case_.culprit):
        return "unclear", said[-600:]
    return ("clear" if code == 2 else "late"), said.splitlines()[-1] if said else ""


def run_all(cases=None) -> list[dict]:
    rows = []
    for case_ in cases if cases is not None else CASES:
        with tempfile.TemporaryDirectory() as work:
            outcome, said = judge(case_, Path(work))
        rows.append({"kind": case_.kind, "case": case_.name, "outcome": outcome, "said": said})
    return rows


def summary(rows) -> dict:
    """{kind: {outcome: count}} and the totals under "all"."""
    table: dict = {}
    for row in rows:
        table.setdefault(row["kind"], Counter())[row["outcome"]] += 1
    table["all"] = sum(table.values(), Counter())
    return {kind: {o: counts.get(o, 0) for o in OUTCOMES} for kind, counts in table.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="a JSON file for every case and its outcome")
    parser.add_argument("--show", default="unclear,late,silent", help="outcomes whose cases are printed")
    args = parser.parse_args(argv)
    rows = run_all()
    table = summary(rows)
    print(f"{len(rows)} cases\n{'class':12s} " + " ".join(f"{o:>8s}" for o in OUTCOMES))
    for kind, counts in table.items():
        print(f"{kind:12s} " + " ".join(f"{counts[o]:8d}" for o in OUTCOMES))
    shown = set(args.show.split(","))
    for row in rows:
        if row["outcome"] in shown:
            print(f"\n[{row['outcome']}] {row['kind']}: {row['case']}\n  {row['said'][:800]}")
    if args.out:
        Path(args.out).write_text(json.dumps({"summary": table, "cases": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
