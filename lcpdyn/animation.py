"""Seeing a run: a 3D animation of its bodies and contacts (matplotlib; GIF by Pillow, MP4 by ffmpeg).

``animate(trajectory, "run.gif")`` (or ``lcpdyn animate RESULT --out run.gif``) draws, frame by
frame:

* each body by its contacts' outlines (:meth:`lcpdyn.contact.Contact.outline`, the geometry
  protocol's drawing member: a disk's rim and spokes, a sphere's great circles, a point
  contact's offset), or by its axes where it has none, at its recorded position and orientation;
* the contact planes (a grey patch under the view);
* the view: the whole motion, or, when it is more than :data:`FOLLOW_SIZE` body reaches wide, a
  window of that half-size following the bodies' mean position;
* at each contact in touch (lam_N > 0): the friction force lam_T (red arrow) and the slip
  velocity of the material point (blue arrow), each scaled so that the run's largest is a fixed
  fraction of the scene (the scales are written in the legend);
* the path the contact points have traced so far, and a readout of the time, the step and each
  contact's state (apart where lam_N = 0, else sliding where |v_T| exceeds the scene's velocity
  threshold, as :mod:`lcpdyn.metrics` judges it, else sticking).

Frames: playback at ``fps`` frames per second, ``speed`` simulated seconds per second of video
(1: real time), each frame the recorded step nearest its time; :func:`frame_times` gives them,
so the count is known before anything is drawn (``floor(span fps / speed) + 1`` with the last
step always shown). The model comes from the trajectory's recorded scene
(:func:`lcpdyn.rebuild.simulation_from_trajectory`), or ``model=`` for a model built in Python.

Contact points are those of the geometry (``Contact.frame``) at the recorded configuration: for
the wheel, the point of the rim nearest the plane (Bauchau 2002 Eq. 4).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

__all__ = ["animate", "frame_times", "WRITERS"]

WRITERS = {".gif": "pillow", ".mp4": "ffmpeg"}
"""Output suffix -> matplotlib animation writer."""
ARROW_FRACTION = 0.25
"""The run's largest friction force (and, apart, its largest slip) is drawn this fraction of the view's size."""
FOLLOW_SIZE = 3.0
"""A motion wider than this many body reaches is shown in a window of this half-size that follows the bodies."""


def frame_times(trajectory, fps: float = 25.0, speed: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """(times, step indices) of the frames: every 1/fps s of video, ``speed`` simulated seconds per
    video second, from the first recorded step to the last (always included)."""
    if not (math.isfinite(fps) and fps > 0):
        raise ValueError(f"fps must be finite and > 0, got {fps!r}")
    if not (math.isfinite(speed) and speed > 0):
        raise ValueError(f"speed must be finite and > 0, got {speed!r}")
    t = np.asarray(trajectory.t, float)
    if t.size == 0:
        raise ValueError("the trajectory has no steps: nothing to animate")
    span = float(t[-1] - t[0])
    count = int(math.floor(span * fps / speed + 1e-9)) + 1
    times = t[0] + np.arange(count) * speed / fps
    if times[-1] < t[-1]:
        times = np.append(times, t[-1])
    index = np.clip(np.searchsorted(t, times - 1e-12), 0, t.size - 1)
    return times, index


def model_of(trajectory, model, caller: str):
    """``model``, or the one the trajectory's recorded scene rebuilds; a ValueError saying what to
    do for a run of a model built in Python (no scene recorded). ``caller`` names the function."""
    if model is not None:
        return model
    from .rebuild import RebuildError, simulation_from_trajectory

    try:
        return simulation_from_trajectory(trajectory).model
    except RebuildError:
        raise ValueError(
            "the trajectory records no scene (its model was built in Python), so its bodies cannot be "
            f"rebuilt: pass the model, {caller}(..., model=model)"
        ) from None


def body_outlines(model, size: float) -> tuple[dict, float]:
    """({body index: polylines in body frame}, reach): each body's contacts' outlines
    (:meth:`lcpdyn.contact.Contact.outline`), or its axes where it has none, drawn as long as the
    largest outline reaches (at least 5 % of ``size``, the motion's extent, m)."""
    outlines = {i: [] for i in range(len(model.bodies))}
    body_index = {id(b): i for i, b in enumerate(model.bodies)}
    for contact in model.contacts:
        outlines[body_index[id(contact.body)]].extend(contact.outline())
    reach = max([float(np.abs(line).max()) for lines in outlines.values() for line in lines] + [0.05 * size])
    for i, lines in outlines.items():
        if not lines:
            outlines[i] = [np.asarray([np.zeros(3), reach * e]) for e in np.eye(3)]  # its axes
    return outlines, reach


def _rotation(quaternion):
    from .rotation import np_rotation_matrix

    return np_rotation_matrix(quaternion)


def _contact_points(model, trajectory, steps) -> np.ndarray:
    """(frames, contacts, 3) contact points of the geometry at the recorded configurations."""

    from .compilation import jit
    from .precision import float64

    bodies = {id(b): i for i, b in enumerate(model.bodies)}
    out = np.zeros((len(steps), len(model.contacts), 3))
    with float64():
        for c, contact in enumerate(model.contacts):
            b = bodies[id(contact.body)]
            point = jit(lambda x, R, contact=contact: contact.frame(x, R)[1])
            for f, k in enumerate(steps):
                x = np.asarray(trajectory.position[k, b])
                out[f, c] = np.asarray(point(x, _rotation(trajectory.quaternion[k, b])))
    return out


def animate(trajectory, path, *, fps: float = 25.0, speed: float = 1.0, model=None, dpi: int = 90, title=None):
    """Write the animation of ``trajectory`` (a :class:`~lcpdyn.trajectory.Trajectory` or a result
    file's path) to ``path`` (.gif, or .mp4 where ffmpeg is installed); returns the number of
    frames written. Module docstring for what is drawn."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    from matplotlib import animation

    from .trajectory import Trajectory, load

    if not isinstance(trajectory, Trajectory):
        trajectory = load(trajectory)
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in WRITERS:
        raise ValueError(f"animation {str(path)!r}: the name must end in {', '.join(WRITERS)}")
    if not animation.writers.is_available(WRITERS[suffix]):
        raise ValueError(
            f"animation {str(path)!r}: matplotlib's {WRITERS[suffix]!r} writer is not available"
            + (" (install ffmpeg, or write a .gif)" if suffix == ".mp4" else " (install Pillow)")
        )
    if not path.parent.is_dir():
        raise ValueError(f"animation {str(path)!r}: the directory {str(path.parent)!r} does not exist")
    model = model_of(trajectory, model, "lcpdyn.animation.animate")
    nb, r = len(model.bodies), len(model.contacts)
    if trajectory.position.shape[1] != nb:
        raise ValueError(f"the model has {nb} bodies, the trajectory {trajectory.position.shape[1]}")
    times, steps = frame_times(trajectory, fps, speed)
    points = _contact_points(model, trajectory, steps)
    positions = np.asarray(trajectory.position)[steps]
    # the scene's extent: every body's outline and every contact point, over the frames shown
    size = max(float(np.ptp(positions.reshape(-1, 3), axis=0).max()), 1e-3)
    outlines, reach = body_outlines(model, size)
    corners = np.concatenate([positions.reshape(-1, 3) - reach, positions.reshape(-1, 3) + reach])
    if r:
        corners = np.concatenate([corners, points.reshape(-1, 3)])
    low, high = corners.min(axis=0), corners.max(axis=0)
    centre, half = 0.5 * (low + high), 0.5 * float(np.max(high - low)) * 1.05
    normal = np.asarray(trajectory.contact_normal_force)[steps] if r else np.zeros((len(steps), 0))
    friction = np.asarray(trajectory.contact_friction_force)[steps] if r else np.zeros((len(steps), 0, 3))
    slip = np.asarray(trajectory.contact_slip_velocity)[steps] if r else np.zeros((len(steps), 0, 3))
    scene = trajectory.parameters.get("scene") if isinstance(trajectory.parameters, dict) else None
    threshold = float((scene or {}).get("velocity_threshold", 0.01))  # as lcpdyn.metrics judges sliding
    sliding = np.linalg.norm(slip, axis=-1) > threshold
    largest_force = float(np.max(np.linalg.norm(friction, axis=-1), initial=0.0))
    largest_slip = float(np.max(np.linalg.norm(slip, axis=-1), initial=0.0))

    # the view: the whole motion when it is at most a few bodies wide; else a window of
    # FOLLOW_SIZE body reaches that follows the bodies' mean position (the path stays drawn)
    follow = half > FOLLOW_SIZE * reach
    window = FOLLOW_SIZE * reach if follow else half
    fig = plt.figure(figsize=(7.0, 6.0))
    ax = fig.add_subplot(projection="3d")
    ax.set_box_aspect((1, 1, 1))
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.set_zlabel("z (m)")
    planes = list({id(c.plane): c.plane for c in model.contacts}.values())
    patches = []

    def view(middle):
        ax.set_xlim(middle[0] - window, middle[0] + window)
        ax.set_ylim(middle[1] - window, middle[1] + window)
        ax.set_zlim(middle[2] - window, middle[2] + window)
        for patch in patches:
            patch.remove()
        patches.clear()
        for plane in planes:  # the part of each plane under the view
            s = np.linspace(-1.0, 1.0, 2) * window
            base = middle - plane.normal * float(plane.normal @ (middle - plane.point))
            grid = base + s[:, None, None] * plane.t1 + s[None, :, None] * plane.t2
            patches.append(
                ax.plot_surface(grid[..., 0], grid[..., 1], grid[..., 2], color="0.85", alpha=0.35, linewidth=0)
            )

    view(centre)
    force_scale = ARROW_FRACTION * 2 * window / largest_force if largest_force > 0 else 0.0
    slip_scale = ARROW_FRACTION * 2 * window / largest_slip if largest_slip > 0 else 0.0
    body_lines = [[ax.plot([], [], [], color=f"C{i % 10}", lw=1.6)[0] for _ in outlines[i]] for i in range(nb)]
    traces = [ax.plot([], [], [], color="0.35", lw=0.8)[0] for _ in range(r)]
    force_lines = [ax.plot([], [], [], color="red", lw=2.2)[0] for _ in range(r)]
    slip_lines = [ax.plot([], [], [], color="blue", lw=1.6)[0] for _ in range(r)]
    if r:
        ax.plot(
            [],
            [],
            [],
            color="red",
            lw=2.2,
            label=f"friction force ({1 / force_scale:.3g} N per m)" if force_scale else "friction force",
        )
        ax.plot(
            [],
            [],
            [],
            color="blue",
            lw=1.6,
            label=f"slip velocity ({1 / slip_scale:.3g} m/s per m)" if slip_scale else "slip velocity",
        )
        ax.plot([], [], [], color="0.35", lw=0.8, label="contact path")
        ax.legend(loc="upper left", fontsize=7)
    readout = ax.text2D(0.99, 0.99, "", transform=ax.transAxes, ha="right", va="top", family="monospace", fontsize=8)
    name = title or (scene.get("name") if isinstance(scene, dict) else None) or "run"
    friction_name = trajectory.parameters.get("friction", "")
    if isinstance(friction_name, dict):
        friction_name = friction_name.get("model", "")
    ax.set_title(f"{name}: {friction_name}".rstrip(": "), fontsize=10)
    quaternions = np.asarray(trajectory.quaternion)[steps]

    middle = [centre]

    def draw(f):
        if follow:
            middle[0] = positions[f].mean(axis=0)
            view(middle[0])
        for i in range(nb):
            R = _rotation(quaternions[f, i])
            for line, outline in zip(body_lines[i], outlines[i]):
                world = positions[f, i] + outline @ R.T
                line.set_data_3d(world[:, 0], world[:, 1], world[:, 2])
        states = []
        for c in range(r):
            p = points[: f + 1, c].copy()
            p[np.any(np.abs(p - middle[0]) > window, axis=1)] = np.nan  # matplotlib's 3D axes do not clip
            traces[c].set_data_3d(p[:, 0], p[:, 1], p[:, 2])
            touching = normal[f, c] > 0.0
            tip = points[f, c] + force_scale * friction[f, c] * touching
            force_lines[c].set_data_3d(*np.stack([points[f, c], tip]).T)
            tip = points[f, c] + slip_scale * slip[f, c] * touching
            slip_lines[c].set_data_3d(*np.stack([points[f, c], tip]).T)
            states.append("apart" if not touching else ("sliding" if sliding[f, c] else "sticking"))
        text = f"t = {times[f]:7.3f} s  step {int(steps[f]) + 1}"
        for c, state in enumerate(states[:4]):
            text += f"\ncontact {c}: {state}"
        if r > 4:
            text += f"\n(+{r - 4} contacts)"
        readout.set_text(text)
        return []

    movie = animation.FuncAnimation(fig, draw, frames=len(times), interval=1000.0 / fps, blit=False)
    temporary = path.with_name(f".{path.name}.partial{path.suffix}")
    try:
        movie.save(temporary, writer=WRITERS[suffix], fps=fps, dpi=dpi)
        temporary.replace(path)
    finally:
        temporary.unlink(missing_ok=True)
        plt.close(fig)
    return len(times)
