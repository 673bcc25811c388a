"""Simulation speed: physai.integrators.simulate beside MuJoCo's mj_step, and integrators.rollout beside
mujoco.rollout, steps per second, in one run.

    uv run python benchmarks/bench_simulate.py                    # double pendulum, Panda, H1; euler, implicitfast, rk4
    uv run python benchmarks/bench_simulate.py --models unitree_h1 --steps 500 --trajectories 256

Both run the same model with constraints (contacts, limits) disabled, from the same state, for the same number
of steps; MuJoCo steps from Python in a loop (one mj_step call per step, as a user's loop would). The ratio is
physai's time per step over MuJoCo's (below 1: physai is faster). Best of ROUNDS rounds, wall clock. On the
compiled backend simulate runs its whole loop in C++.

Then batches: N trajectories (--trajectories) of --rollout-steps steps from N random states, each with its own
constant ctrl (random in a tenth of ctrlrange: full-range random torques send some H1 runs to infinity, in
both simulators), by physai.integrators.rollout and by mujoco.rollout, both on the same number of threads
(physai's PHYSAI_NUM_THREADS, default every core; mujoco.rollout.Rollout(nthread=that)). Steps per second count
every trajectory's steps.
"""

import argparse
import platform
import time
from functools import partial

import mujoco
import numpy as np

from physai import engine, integrators, models
from physai.engine import native

ROUNDS = 3


def steps_per_second(fn, steps: int) -> float:
    best = np.inf
    for _ in range(ROUNDS):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return steps / best


def load(name: str):
    """(MjModel with constraints off, the physai Model of it)."""
    m = models.load(name)
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    return m, engine.from_mujoco(m)


def mj_steps(m, d, q0, qd0, steps: int) -> None:
    d.qpos[:], d.qvel[:] = q0, qd0
    for _ in range(steps):
        mujoco.mj_step(m, d)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["double_pendulum", "franka_emika_panda", "unitree_h1"])
    parser.add_argument("--integrators", nargs="+", default=["euler", "implicitfast", "rk4"])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--trajectories", type=int, default=64)
    parser.add_argument("--rollout-steps", type=int, default=200)
    args = parser.parse_args(argv)
    print(f"physai.integrators.simulate vs mj_step; {platform.processor() or platform.machine()}, Python "
          f"{platform.python_version()}, numpy {np.__version__}, MuJoCo {mujoco.__version__}; {args.steps} steps, "
          f"best of {ROUNDS}; engine backend: {native.describe()}")
    print(f"{'model':<20} {'integrator':<12} {'physai steps/s':>15} {'mj_step steps/s':>16} {'ratio':>8}")
    for name in args.models:
        m, model = load(name)
        q0, qd0 = model.qpos0, np.zeros(model.nv)
        for integrator in args.integrators:
            m.opt.integrator = integrators.MUJOCO_INTEGRATOR[integrator]
            d = mujoco.MjData(m)

            run = (model, q0, qd0, m.opt.timestep, args.steps, integrator)
            mine = steps_per_second(lambda r=run: integrators.simulate(*r, energy=False), args.steps)
            theirs = steps_per_second(lambda r=(m, d, q0, qd0, args.steps): mj_steps(*r), args.steps)
            print(f"{name:<20} {integrator:<12} {mine:>15.0f} {theirs:>16.0f} {theirs / mine:>7.3g}x")
    rollouts(args)


def rollouts(args) -> None:
    """integrators.rollout vs mujoco.rollout: N trajectories, each with its own constant ctrl, same thread count."""
    from mujoco import rollout as mj_rollout

    n, steps, threads = args.trajectories, args.rollout_steps, native.threads()
    print(f"\nintegrators.rollout vs mujoco.rollout: {n} trajectories x {steps} steps from random states, a constant "
          f"random ctrl per trajectory (a tenth of ctrlrange), {threads} threads each")
    print(f"{'model':<20} {'integrator':<12} {'physai steps/s':>15} {'mujoco steps/s':>16} {'ratio':>8}")
    for name in args.models:
        m, model = load(name)
        q0, qd0 = engine.random_states(model, n, 0, qd_max=1.0)
        ctrl = 0.1 * np.random.default_rng(1).uniform(*m.actuator_ctrlrange.T, (n, 1, m.nu)) if m.nu else None
        spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
        initial, d = np.empty((n, mujoco.mj_stateSize(m, spec))), mujoco.MjData(m)
        for k in range(n):
            d.qpos[:], d.qvel[:] = q0[k], qd0[k]
            mujoco.mj_getState(m, d, initial[k], spec)
        control = np.zeros((n, 1, 0)) if ctrl is None else ctrl
        for integrator in args.integrators:
            m.opt.integrator = integrators.MUJOCO_INTEGRATOR[integrator]
            mine = steps_per_second(partial(integrators.rollout, model, q0, qd0, m.opt.timestep, steps, integrator, ctrl=ctrl),
                                    n * steps)
            datas = [mujoco.MjData(m) for _ in range(threads)]
            with mj_rollout.Rollout(nthread=threads if threads > 1 else 0) as r:
                theirs = steps_per_second(partial(r.rollout, m, datas, initial, np.broadcast_to(control, (n, steps, m.nu)),
                                                  nstep=steps), n * steps)
            print(f"{name:<20} {integrator:<12} {mine:>15.0f} {theirs:>16.0f} {theirs / mine:>7.3g}x")


if __name__ == "__main__":
    main()
