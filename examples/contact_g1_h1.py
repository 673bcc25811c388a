"""Contact, simulated by physai alone: the G1 standing under its position servos at its keyframe, and the H1 dropped
onto its floor, each beside mj_step (issue J).

    uv run python examples/contact_g1_h1.py                          # 2 s each; writes contact_g1_h1.png
    uv run python examples/contact_g1_h1.py --seconds 4 --plot /tmp/contact.png
    uv run python examples/contact_g1_h1.py --runs runs/ && uv run physai view - runs/g1.npz    # watch physai's run

physai detects the contacts (physai.collision), builds the constraint rows and solves them every step
(integrators.simulate with constraints=True): every geom pair of the G1 (its meshes, cylinders and foot spheres) and
of the H1 (its capsules and cylinders among them), as MuJoCo 4 collides them. The G1 holds its keyframe pose through its
own actuators (position servos: PD control to the keyframe's ctrl); the H1, started 0.3 m above its keyframe with
no control, falls and lands. The plot shows each robot's base height and the total normal force of its contacts
(physai.constraints.forward_dynamics at the states of the run, the contacts found again) beside MuJoCo's
(mj_contactForce), against time. main(argv) returns, per robot, the largest difference in base height from mj_step's
[m], the largest in total normal force [N] and the final base height [m]; tests/test_examples.py runs it. --runs DIR
writes physai's runs as DIR/g1.npz and DIR/h1.npz (Trajectory.save, with their contacts, contact forces and actuator
forces: physai.recording.record, and the scene's path) for `physai view`.
"""

import argparse
import dataclasses
from pathlib import Path

import mujoco
import numpy as np

from physai import constraints, engine, integrators, models, recording
from physai.engine.constraint import CONTACT_ELLIPTIC, CONTACT_FRICTIONLESS, CONTACT_PYRAMIDAL

NAMES = {code: name for name, code in integrators.MUJOCO_INTEGRATOR.items()}


def normal_force(model, q, qd, tau, warm) -> float:
    """The total normal force of the contacts at (q, qd) [N]: each pyramidal contact's edge forces summed (MuJoCo's
    mju_decodePyramid), an elliptic or frictionless contact's first row."""
    result = constraints.forward_dynamics(model, q, qd, tau, qacc_warmstart=warm)
    rows = result.rows
    kinds = rows.type
    total = result.efc_force[kinds == CONTACT_PYRAMIDAL].sum() + result.efc_force[kinds == CONTACT_FRICTIONLESS].sum()
    elliptic = np.flatnonzero(kinds == CONTACT_ELLIPTIC)
    firsts = [i for i in elliptic if i == 0 or rows.id[i - 1] != rows.id[i] or kinds[i - 1] != CONTACT_ELLIPTIC]
    return float(total + result.efc_force[firsts].sum())


def run(robot: str, seconds: float, lift: float, control: bool, save: Path | None = None):
    """(time (n,), physai's and MuJoCo's base height (n,) each, physai's and MuJoCo's total normal force (n,) each) of
    a run from the robot's keyframe, raised by `lift` [m], with the keyframe's ctrl or none; physai's run written to
    `save` (recorded for the viewer) when given."""
    m = models.load(robot, "scene")
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    d.qpos[2] += lift
    if not control:
        d.ctrl[:] = 0.0
    model = engine.from_mujoco(m)
    steps = int(round(seconds / m.opt.timestep))
    q0, qd0, ctrl = d.qpos.copy(), d.qvel.copy(), d.ctrl.copy()
    traj = integrators.simulate(model, q0, qd0, m.opt.timestep, steps, NAMES[int(m.opt.integrator)], ctrl=ctrl,
                                constraints=True, energy=False)
    if save is not None:
        recorded = recording.record(model, traj, ctrl=ctrl)
        dataclasses.replace(recorded, model=str(models.model_path(robot, "scene"))).save(save)
        print(f"wrote {save}: uv run physai view - {save}")
    every = max(1, steps // 200)
    height, force_mj, force = [], [], []
    wrench = np.zeros(6)
    for k in range(steps + 1):
        if k % every == 0:                                     # the state before step k + 1, as physai's q[k]
            mujoco.mj_forward(m, d)
            height.append(d.qpos[2])
            total = 0.0
            for c in range(d.ncon):
                mujoco.mj_contactForce(m, d, c, wrench)
                total += wrench[0]
            force_mj.append(total)
            tau = d.qfrc_passive + d.qfrc_actuator
            force.append(normal_force(model, traj.q[k], traj.qd[k], tau, d.qacc_warmstart))
        if k < steps:
            mujoco.mj_step(m, d)
    t = traj.t[::every][:len(height)]
    return t, traj.q[::every, 2][:len(height)], np.array(height), np.array(force), np.array(force_mj)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--plot", default="contact_g1_h1.png", help="the figure's file ('' for none)")
    parser.add_argument("--runs", default=None, metavar="DIR", help="write physai's runs there for physai view")
    args = parser.parse_args(argv)
    folder = None if args.runs is None else Path(args.runs)
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
    save = (lambda name: None) if folder is None else (lambda name: folder / f"{name}.npz")   # noqa: E731
    runs = {"G1 standing (position servos at the keyframe)": run("unitree_g1", args.seconds, 0.0, True, save("g1")),
            "H1 dropped from 0.3 m (no control)": run("unitree_h1", args.seconds, 0.3, False, save("h1"))}
    out = []
    for title, (t, z, z_mj, f, f_mj) in runs.items():
        dz, df = float(np.abs(z - z_mj).max()), float(np.abs(f - f_mj).max())
        print(f"{title}: base height {z[-1]:.4f} m at t = {t[-1]:.2f} s (mj_step {z_mj[-1]:.4f}); largest difference "
              f"from mj_step: base height {dz:.2e} m, total normal force {df:.2e} N (largest force {f_mj.max():.1f} N)")
        out.append((dz, df, float(z[-1])))
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(2, 2, figsize=(10, 6), sharex="col")
        for col, (title, (t, z, z_mj, f, f_mj)) in enumerate(runs.items()):
            axes[0, col].plot(t, z, label="physai", lw=2)
            axes[0, col].plot(t, z_mj, "--", label="mj_step", lw=1)
            axes[0, col].set(title=title, ylabel="base height [m]")
            axes[1, col].plot(t, f, label="physai", lw=2)
            axes[1, col].plot(t, f_mj, "--", label="MuJoCo", lw=1)
            axes[1, col].set(xlabel="time [s]", ylabel="total normal contact force [N]")
            axes[0, col].legend()
        fig.tight_layout()
        fig.savefig(args.plot, dpi=100)
        plt.close(fig)
        print(f"wrote {args.plot}")
    return out


if __name__ == "__main__":
    main()
