"""A quick-look figure of one run (``lcpdyn run ... --plot FILE.png``)."""
from __future__ import annotations

import numpy as np


def plot_run(trajectory, path, title: str = "") -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = trajectory.t
    fig, axes = plt.subplots(2, 2, figsize=(10, 7))
    for b, name in enumerate(trajectory.body_names):
        axes[0, 0].plot(trajectory.position[:, b, 0], trajectory.position[:, b, 1], label=name)
    axes[0, 0].set_xlabel("x (m)")
    axes[0, 0].set_ylabel("y (m)")
    axes[0, 0].set_aspect("equal", adjustable="datalim")
    axes[0, 0].set_title("centre of mass path")
    for c in range(trajectory.contact_normal_force.shape[1]):
        axes[0, 1].plot(t, trajectory.contact_normal_force[:, c], label=f"lam_N[{c}]")
        axes[0, 1].plot(t, np.linalg.norm(trajectory.contact_friction_force[:, c], axis=1), "--", label=f"|lam_T|[{c}]")
        axes[1, 0].plot(t, np.linalg.norm(trajectory.contact_slip_velocity[:, c], axis=1), label=f"|v_T|[{c}]")
    axes[0, 1].set_title("contact forces (N)")
    axes[1, 0].set_title("slip speed (m/s)")
    axes[1, 1].plot(t, trajectory.energy)
    axes[1, 1].set_title("mechanical energy (J)")
    for ax in axes.flat:
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    for ax in (axes[0, 1], axes[1, 0], axes[1, 1]):
        ax.set_xlabel("t (s)")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
