"""Simulation with contact: physai.integrators.simulate and rollout with constraints=True beside mj_step and
mujoco.rollout, in one run.

    uv run python benchmarks/bench_contact.py                       # the H1 falling, the G1 standing
    uv run python benchmarks/bench_contact.py --trajectories 256 --numpy

Each robot in its Menagerie scene (the floor) from its first keyframe under its own integrator and ctrl: the H1 left to
fall (Euler: it lands on the floor within 0.5 s), the G1 standing on its eight foot spheres (implicitfast; joint
limits, friction loss on 29 dofs, up to 61 constraint rows). physai detects the contacts itself (physai.collision),
builds the rows and solves them each step as mj_step does, every geom pair of both robots (meshes, cylinders, capsules,
foot spheres). Before timing, physai's run is checked against mj_step's
(every state within 1e-9) or the script stops.

One trajectory: microseconds per step of integrators.simulate (its loop compiled), of mj_step called from Python in a
loop, and of mujoco.rollout (MuJoCo's loop in C). Batched: N trajectories (--trajectories) from the keyframe with joint
angles moved by up to 0.01 rad (numpy.random.default_rng(0)), by integrators.rollout and by mujoco.rollout on the same
number of threads (physai's PHYSAI_NUM_THREADS, default every core), microseconds per trajectory step. Ratios: physai /
MuJoCo (below 1: physai is faster). Best of 3 rounds, wall clock; on a shared machine expect +-20% between runs.
--numpy also times the NumPy backend's simulate (one trajectory, a tenth of the steps).

Then the closed loop of a policy: integrators.step called once per step from Python with the warm start handed back
(step_result's qacc_warmstart), one state (step-1) beside mj_step called once per step (mj_step-1), and N states in one call
(step-N, per state; ratio-N: its time per state over mj_step's), over the same run from the keyframe.
"""

import argparse
import os
import platform
import time
import warnings

import mujoco
import numpy as np
from mujoco import rollout as mj_rollout

from physai import engine, integrators, models
from physai.engine import native
from physai.exceptions import CollisionWarning

ROBOTS = {"unitree_h1": 250, "unitree_g1": 500}
NAMES = {code: name for name, code in integrators.MUJOCO_INTEGRATOR.items()}


def best(fn, rounds: int = 3) -> float:
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trajectories", type=int, default=64)
    parser.add_argument("--numpy", action="store_true", help="also time the NumPy backend (one trajectory)")
    args = parser.parse_args()
    warnings.simplefilter("ignore", CollisionWarning)
    threads = native.threads()
    print(f"cpu {platform.machine()}, {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.2f}; backend {engine.backend}, "
          f"{threads} threads for batches; mujoco {mujoco.__version__}, numpy {np.__version__}")
    print("microseconds per step (batched: per trajectory step); ratio = physai / MuJoCo")
    print(f"{'robot':<11} {'integrator':<12} {'steps':>5} {'contacts':>8} {'physai-1':>9} {'mj_step':>8} {'rollout-1':>9} "
          f"{'ratio':>6} {'physai-N':>9} {'rollout-N':>9} {'ratio':>6}" + (f" {'numpy-1':>8}" if args.numpy else ""))
    for robot, steps in ROBOTS.items():
        print(time_robot(robot, steps, args.trajectories, args.numpy, threads))
    print(f"\nclosed loop, microseconds per step of one state; ratio = physai / mj_step; step-N: {args.trajectories} states "
          "per call, per state; ratio-N = step-N / mj_step-1")
    print(f"{'robot':<11} {'step-1':>8} {'mj_step-1':>9} {'ratio':>6} {'step-N':>8} {'ratio-N':>7}")
    for robot, steps in ROBOTS.items():
        print(time_loop(robot, steps, args.trajectories))


def setup(robot: str):
    """(MjModel in its scene, the physai Model, the integrator's name, MjData at keyframe 0, q0, qd0, ctrl)."""
    m = models.load(robot, "scene")
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    model = engine.from_mujoco(m)
    return m, model, NAMES[int(m.opt.integrator)], d, d.qpos.copy(), d.qvel.copy(), d.ctrl.copy()


def time_loop(robot: str, steps: int, n: int) -> str:
    """The closed-loop table's row of one robot: step per call from Python, beside mj_step."""
    m, model, name, d, q0, qd0, ctrl = setup(robot)
    integrators.step(model, q0, qd0, m.opt.timestep, name, ctrl=ctrl, constraints=True)       # compiled once

    def loop(q, qd, c):
        warm = None
        for _ in range(steps):
            r = integrators.step_result(model, q, qd, m.opt.timestep, name, ctrl=c, constraints=True, qacc_warmstart=warm)
            q, qd, warm = r.q, r.qd, r.qacc_warmstart

    def mj_loop():
        d.qpos[:], d.qvel[:], d.ctrl[:], d.qacc_warmstart[:] = q0, qd0, ctrl, 0.0
        for _ in range(steps):
            mujoco.mj_step(m, d)

    Q, QD, C = (np.repeat(x[None], n, axis=0) for x in (q0, qd0, ctrl))
    t_one = best(lambda: loop(q0, qd0, ctrl)) / steps
    t_mj = best(mj_loop) / steps
    t_n = best(lambda: loop(Q, QD, C)) / (steps * n)
    return f"{robot:<11} {t_one * 1e6:>8.1f} {t_mj * 1e6:>9.1f} {t_one / t_mj:>6.2f} {t_n * 1e6:>8.2f} {t_n / t_mj:>7.2f}"


def time_robot(robot: str, steps: int, n: int, with_numpy: bool, threads: int) -> str:
    """The table's row of one robot (see the module docstring)."""
    m, model, name, d, q0, qd0, ctrl = setup(robot)
    reference, ncon = [], []
    for _ in range(steps):
        mujoco.mj_step(m, d)
        reference.append(d.qpos.copy())
        ncon.append(d.ncon)
    simulate = lambda: integrators.simulate(model, q0, qd0, m.opt.timestep, steps, name, ctrl=ctrl,  # noqa: E731
                                            constraints=True, energy=False)
    run = simulate()
    if np.abs(run.q[1:] - np.array(reference)).max() > 1e-9:
        raise SystemExit(f"{robot}: physai's run differs from mj_step's")

    def mj_loop():
        d.qpos[:], d.qvel[:], d.ctrl[:], d.qacc_warmstart[:] = q0, qd0, ctrl, 0.0
        for _ in range(steps):
            mujoco.mj_step(m, d)

    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    rng = np.random.default_rng(0)
    Q0 = np.repeat(q0[None], n, axis=0)
    free = 7 if m.jnt_type[0] == mujoco.mjtJoint.mjJNT_FREE else 0
    Q0[:, free:] += 0.01 * rng.uniform(-1.0, 1.0, (n, m.nq - free))
    QD0 = np.zeros((n, m.nv))
    start, d0 = np.empty((n, mujoco.mj_stateSize(m, spec))), mujoco.MjData(m)
    for k in range(n):
        mujoco.mj_resetData(m, d0)
        d0.qpos[:], d0.ctrl[:] = Q0[k], ctrl
        mujoco.mj_getState(m, d0, start[k], spec)
    control = np.broadcast_to(ctrl, (n, steps, m.nu))
    one_state, one_control = start[:1], control[:1]
    datas = [mujoco.MjData(m) for _ in range(max(threads, 1))]
    with mj_rollout.Rollout(nthread=0) as r:
        t_roll1 = best(lambda: r.rollout(m, datas[:1], one_state, one_control, nstep=steps)) / steps
    with mj_rollout.Rollout(nthread=threads if threads > 1 else 0) as r:
        t_rollN = best(lambda: r.rollout(m, datas, start, control, nstep=steps)) / (n * steps)
    t_one = best(simulate) / steps
    t_loop = best(mj_loop) / steps
    t_batch = best(lambda: integrators.rollout(model, Q0, QD0, m.opt.timestep, steps, name, ctrl=ctrl,
                                               constraints=True)) / (n * steps)
    row = (f"{robot:<11} {name:<12} {steps:>5} {max(ncon):>8} {t_one * 1e6:>9.1f} {t_loop * 1e6:>8.1f} {t_roll1 * 1e6:>9.1f} "
           f"{t_one / t_roll1:>6.2f} {t_batch * 1e6:>9.2f} {t_rollN * 1e6:>9.2f} {t_batch / t_rollN:>6.2f}")
    if with_numpy:
        previous = engine.set_backend("numpy")
        try:
            short = steps // 10
            t_np = best(lambda: integrators.simulate(model, q0, qd0, m.opt.timestep, short, name, ctrl=ctrl,
                                                     constraints=True, energy=False), rounds=1) / short
        finally:
            engine.set_backend(previous)
        row += f" {t_np * 1e6:>8.0f}"
    return row


if __name__ == "__main__":
    main()
