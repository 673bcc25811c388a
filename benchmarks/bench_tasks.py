"""Speed of task models: dm_control's Fish and Quadruped and Gymnasium's Humanoid, physai beside MuJoCo, in one run.

    uv run python benchmarks/bench_tasks.py                       # 200 steps, 64 trajectories
    uv run python benchmarks/bench_tasks.py --steps 500 --trajectories 128

Each model from the installed package's MJCF file (experiments/task-models/task_models.py's task_files) with its own
options (integrator, timestep, solver: the Humanoid's PGS), from its first keyframe (or qpos0) under the survey's
constant control (task_models.start). A model physai refuses is retried with MuJoCo's mjDSBL_MULTICCD set on both sides
(the Quadruped's capsule-cylinder pairs, while physai has no multi-contact for them); the table says which ran.
Before timing, physai's run is checked against mj_step's (q within 1e-8) or the row says how far apart they are.

One trajectory: steps per second of integrators.simulate (constraints=True, energy=False) and of mj_step called from
Python in a loop. Batched: N trajectories (--trajectories) from the start with joint angles moved by up to 0.01 rad
(numpy.random.default_rng(0)), steps per second (every trajectory's) of integrators.rollout and of mujoco.rollout on
the same number of threads (physai's PHYSAI_NUM_THREADS, default every core). Ratios: physai / MuJoCo in steps per
second (above 1: physai is faster; targets: simulate >= 1, rollout >= 2). Best of 3 rounds, wall clock.
"""

import argparse
import os
import sys
from pathlib import Path

import mujoco
import numpy as np
from mujoco import rollout as mj_rollout

from physai import collision, engine, integrators
from physai.engine import native
from physai.exceptions import UnsupportedModelError

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "experiments" / "task-models"))
import task_models  # noqa: E402  (the survey's loading and start state)
from bench_contact import best  # noqa: E402  (best of 3 rounds)

MODELS = ["dm_control/fish", "dm_control/quadruped", "gymnasium/humanoid"]
NAMES = {code: name for name, code in integrators.MUJOCO_INTEGRATOR.items()}
CHECK = 1e-8                         # [rad or m] physai's q within this of mj_step's


def setup(name: str):
    """(MjModel, physai Model, note): the model as its file has it, or with mjDSBL_MULTICCD when physai refuses it."""
    m = mujoco.MjModel.from_xml_path(str(task_models.task_files()[name]))
    try:
        model = engine.from_mujoco(m)
        collision.check_supported(model)
        return m, model, ""
    except UnsupportedModelError:
        m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_MULTICCD
        return m, engine.from_mujoco(m), "mjDSBL_MULTICCD"


def row(name: str, steps: int, n: int, threads: int) -> str:
    m, model, note = setup(name)
    q0, qd0, ctrl = task_models.start(m)
    integrator = NAMES[int(m.opt.integrator)]
    simulate = lambda: integrators.simulate(model, q0, qd0, m.opt.timestep, steps, integrator, ctrl=ctrl,  # noqa: E731
                                            constraints=True, energy=False)
    error = np.abs(simulate().q[1:] - task_models.mujoco_run(m, q0, qd0, ctrl, steps)).max()
    d = mujoco.MjData(m)

    def mj_loop():
        d.qpos[:], d.qvel[:], d.ctrl[:], d.qacc_warmstart[:] = q0, qd0, ctrl, 0.0
        for _ in range(steps):
            mujoco.mj_step(m, d)

    rng = np.random.default_rng(0)
    Q0 = np.repeat(q0[None], n, axis=0)
    free = 7 if m.njnt and m.jnt_type[0] == mujoco.mjtJoint.mjJNT_FREE else 0
    Q0[:, free:] += 0.01 * rng.uniform(-1.0, 1.0, (n, m.nq - free))
    QD0 = np.repeat(qd0[None], n, axis=0)
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    start, d0 = np.empty((n, mujoco.mj_stateSize(m, spec))), mujoco.MjData(m)
    for k in range(n):
        mujoco.mj_resetData(m, d0)
        d0.qpos[:], d0.qvel[:], d0.ctrl[:] = Q0[k], QD0[k], ctrl
        mujoco.mj_getState(m, d0, start[k], spec)
    control = np.broadcast_to(ctrl, (n, steps, m.nu))
    datas = [mujoco.MjData(m) for _ in range(max(threads, 1))]
    t_sim, t_mj = best(simulate), best(mj_loop)
    t_batch = best(lambda: integrators.rollout(model, Q0, QD0, m.opt.timestep, steps, integrator, ctrl=ctrl,
                                               constraints=True))
    with mj_rollout.Rollout(nthread=threads if threads > 1 else 0) as r:
        t_roll = best(lambda: r.rollout(m, datas, start, control, nstep=steps))
    check = "" if error <= CHECK else f" (differs from mj_step by {error:.1e})"
    return (f"{name:<21} {note or '-':<16} {steps / t_sim:>10.0f} {steps / t_mj:>10.0f} {t_mj / t_sim:>6.2f} "
            f"{n * steps / t_batch:>11.0f} {n * steps / t_roll:>11.0f} {t_roll / t_batch:>6.2f} {error:>8.1e}{check}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=MODELS)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--trajectories", type=int, default=64)
    args = parser.parse_args()
    threads = native.threads()
    print(f"{os.cpu_count()} cpus, load average {os.getloadavg()[0]:.2f}; physai backend: {native.describe()}; mujoco "
          f"{mujoco.__version__}; {args.steps} steps, {args.trajectories} trajectories on {threads} threads")
    print("steps per second; ratio = physai / MuJoCo (above 1: physai faster)")
    print(f"{'model':<21} {'options':<16} {'simulate':>10} {'mj_step':>10} {'ratio':>6} {'rollout-N':>11} "
          f"{'mj rollout-N':>11} {'ratio':>6} {'max|dq|':>8}")
    for name in args.models:
        print(row(name, args.steps, args.trajectories, threads), flush=True)


if __name__ == "__main__":
    main()
