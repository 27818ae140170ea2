"""A run in an interactive 3D viewer: export to a Rerun recording (``.rrd``; extra ``viewer``).

``export_rerun(trajectory, "run.rrd")`` (or ``lcpdyn animate RESULT --out run.rrd``) writes a
recording that the Rerun viewer opens (``rerun run.rrd``, or the web viewer at rerun.io with the
file dropped on it): a time line over every recorded step, to scrub and replay, with

* ``world/bodies/<name>``: each body's pose (translation and rotation per step) and, under it,
  its outline in its own frame (:meth:`lcpdyn.contact.Contact.outline`; its axes where it has
  none), so the viewer moves the body, not thousands of copies of its lines;
* ``world/planes/<k>``: each contact plane (a grid under the motion);
* ``world/contacts/<c>/point``, ``.../friction`` and ``.../slip``: the contact point and, while
  in touch (lam_N > 0), the friction force (N, red) and the slip velocity (m/s, blue) as arrows,
  each scaled like the animation's (:data:`lcpdyn.animation.ARROW_FRACTION` of the motion's
  size for the run's largest); ``world/contacts/<c>/path``: the whole path of the contact point;
* ``plots/...``: the mechanical energy and, per contact, lam_N, |lam_T|, mu lam_N and |v_T| over
  time, beside the 3D view.

Why Rerun (against meshcat): the recording is a file, written without a server or a browser,
with the time line and the plots in one viewer; meshcat's export needs its server process
running. Rerun's wheels need NumPy >= 2, so the extra is installed in the current-stack venv
only (``dev.sh``); without it, :func:`export_rerun` raises an ImportError naming the extra.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["export_rerun"]


def export_rerun(trajectory, path, *, model=None, every: int = 1) -> int:
    """Write ``trajectory`` (a :class:`~lcpdyn.trajectory.Trajectory` or a result file's path) to
    the Rerun recording ``path`` (``.rrd``), every ``every``-th recorded step (the last always);
    returns the number of time points written. Module docstring for what it holds."""
    try:
        import rerun as rr
    except ImportError:
        raise ImportError(
            "the Rerun export needs the 'viewer' extra: pip install 'lcpdyn[viewer]' (rerun-sdk, NumPy >= 2)"
        ) from None
    from .animation import ARROW_FRACTION, _contact_points, body_outlines, model_of
    from .trajectory import Trajectory, load

    if not isinstance(trajectory, Trajectory):
        trajectory = load(trajectory)
    path = Path(path)
    if path.suffix.lower() != ".rrd":
        raise ValueError(f"Rerun recording {str(path)!r}: the name must end in .rrd")
    if not path.parent.is_dir():
        raise ValueError(f"Rerun recording {str(path)!r}: the directory {str(path.parent)!r} does not exist")
    if isinstance(every, bool) or not isinstance(every, int) or every < 1:
        raise ValueError(f"every must be an integer >= 1, got {every!r}")
    model = model_of(trajectory, model, "lcpdyn.viewer.export_rerun")
    t = np.asarray(trajectory.t, float)
    if t.size == 0:
        raise ValueError("the trajectory has no steps: nothing to export")
    steps = np.unique(np.append(np.arange(0, t.size, every), t.size - 1))
    times = t[steps]
    position = np.asarray(trajectory.position)[steps]
    quaternion = np.asarray(trajectory.quaternion)[steps]
    r = len(model.contacts)
    points = _contact_points(model, trajectory, steps)
    normal = np.asarray(trajectory.contact_normal_force)[steps]
    friction = np.asarray(trajectory.contact_friction_force)[steps]
    slip = np.asarray(trajectory.contact_slip_velocity)[steps]
    mu = np.asarray(trajectory.contact_mu)[steps] if r else np.zeros((len(steps), 0))
    size = max(float(np.ptp(position.reshape(-1, 3), axis=0).max()), 1e-3)
    largest_force = float(np.max(np.linalg.norm(friction, axis=-1), initial=0.0))
    largest_slip = float(np.max(np.linalg.norm(slip, axis=-1), initial=0.0))
    force_scale = ARROW_FRACTION * size / largest_force if largest_force > 0 else 0.0
    slip_scale = ARROW_FRACTION * size / largest_slip if largest_slip > 0 else 0.0

    scene = trajectory.parameters.get("scene") if isinstance(trajectory.parameters, dict) else None
    name = (scene or {}).get("name", "run") if isinstance(scene, dict) else "run"
    recording = rr.RecordingStream(f"lcpdyn-{name}")
    temporary = path.with_name(f".{path.name}.partial")
    recording.save(temporary)
    try:
        recording.log("world", rr.ViewCoordinates.RIGHT_HAND_Z_UP, static=True)
        index = [rr.TimeColumn("time", duration=times)]
        outlines, reach = body_outlines(model, size)
        for i, body in enumerate(model.bodies):
            entity = f"world/bodies/{body.name}"
            recording.log(f"{entity}/outline", rr.LineStrips3D(outlines[i], colors=[_colour(i)]), static=True)
            xyzw = quaternion[:, i][:, [1, 2, 3, 0]]  # lcpdyn's (w, x, y, z) -> Rerun's (x, y, z, w)
            recording.send_columns(
                entity, indexes=index, columns=rr.Transform3D.columns(translation=position[:, i], quaternion=xyzw)
            )
        middle = 0.5 * (position.reshape(-1, 3).min(axis=0) + position.reshape(-1, 3).max(axis=0))
        half = 0.5 * size + 2 * reach
        for k, plane in enumerate({id(c.plane): c.plane for c in model.contacts}.values()):
            base = middle - plane.normal * float(plane.normal @ (middle - plane.point))
            ticks = np.linspace(-half, half, 11)
            grid = [
                np.asarray([base + a * plane.t1 - half * plane.t2, base + a * plane.t1 + half * plane.t2])
                for a in ticks
            ]
            grid += [
                np.asarray([base - half * plane.t1 + a * plane.t2, base + half * plane.t1 + a * plane.t2])
                for a in ticks
            ]
            recording.log(f"world/planes/{k}", rr.LineStrips3D(grid, colors=[(160, 160, 160)]), static=True)
        touching = normal > 0.0
        for c in range(r):
            entity = f"world/contacts/{c}"
            recording.log(f"{entity}/path", rr.LineStrips3D([points[:, c]], colors=[(90, 90, 90)]), static=True)
            recording.send_columns(
                f"{entity}/point", indexes=index, columns=rr.Points3D.columns(positions=points[:, c])
            )
            for what, vectors, scale, colour in (
                ("friction", friction[:, c], force_scale, (220, 30, 30)),
                ("slip", slip[:, c], slip_scale, (30, 60, 220)),
            ):
                recording.log(f"{entity}/{what}", rr.Arrows3D.from_fields(colors=[colour]), static=True)
                recording.send_columns(
                    f"{entity}/{what}", indexes=index,
                    columns=rr.Arrows3D.columns(origins=points[:, c], vectors=scale * vectors * touching[:, c, None]),
                )  # fmt: skip
            for what, values in (
                ("normal_force_N", normal[:, c]),
                ("friction_force_N", np.linalg.norm(friction[:, c], axis=1)),
                ("mu_normal_force_N", mu[:, c] * normal[:, c]),
                ("slip_speed_m_per_s", np.linalg.norm(slip[:, c], axis=1)),
            ):
                recording.send_columns(
                    f"plots/contact_{c}/{what}", indexes=index, columns=rr.Scalars.columns(scalars=values)
                )
        recording.send_columns(
            "plots/energy_J", indexes=index, columns=rr.Scalars.columns(scalars=np.asarray(trajectory.energy)[steps])
        )
        recording.flush()
        recording.disconnect()
        temporary.replace(path)
    finally:
        temporary.unlink(missing_ok=True)
    return len(times)


def _colour(i: int) -> tuple:
    from matplotlib import colormaps

    red, green, blue, _ = colormaps["tab10"](i % 10)
    return int(255 * red), int(255 * green), int(255 * blue)
