"""Simulation speed: physai.integrators.simulate beside MuJoCo's mj_step, steps per second, in one run.

    uv run python benchmarks/bench_simulate.py                    # double pendulum and Panda, euler and rk4
    uv run python benchmarks/bench_simulate.py --models unitree_h1 --steps 500

Both run the same model with constraints (contacts, limits) disabled, from the same state, for the same number
of steps; MuJoCo steps from Python in a loop (one mj_step call per step, as a user's loop would). The ratio is
physai's time per step over MuJoCo's (below 1: physai is faster). Best of ROUNDS rounds, wall clock. On the
compiled backend simulate runs its whole loop in C++ (euler, rk4; implicitfast without actuators).
"""

import argparse
import platform
import time

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


def mj_steps(m, d, q0, qd0, steps: int) -> None:
    d.qpos[:], d.qvel[:] = q0, qd0
    for _ in range(steps):
        mujoco.mj_step(m, d)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["double_pendulum", "franka_emika_panda"])
    parser.add_argument("--integrators", nargs="+", default=["euler", "rk4"])
    parser.add_argument("--steps", type=int, default=1000)
    args = parser.parse_args(argv)
    print(f"physai.integrators.simulate vs mj_step; {platform.processor() or platform.machine()}, Python "
          f"{platform.python_version()}, numpy {np.__version__}, MuJoCo {mujoco.__version__}; {args.steps} steps, "
          f"best of {ROUNDS}; engine backend: {native.describe()}")
    print(f"{'model':<20} {'integrator':<12} {'physai steps/s':>15} {'mj_step steps/s':>16} {'ratio':>8}")
    for name in args.models:
        m = models.load(name)
        m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
        model = engine.from_mujoco(m)
        q0, qd0 = model.qpos0, np.zeros(model.nv)
        for integrator in args.integrators:
            m.opt.integrator = integrators.MUJOCO_INTEGRATOR[integrator]
            d = mujoco.MjData(m)

            run = (model, q0, qd0, m.opt.timestep, args.steps, integrator)
            mine = steps_per_second(lambda r=run: integrators.simulate(*r, energy=False), args.steps)
            theirs = steps_per_second(lambda r=(m, d, q0, qd0, args.steps): mj_steps(*r), args.steps)
            print(f"{name:<20} {integrator:<12} {mine:>15.0f} {theirs:>16.0f} {theirs / mine:>7.3g}x")


if __name__ == "__main__":
    main()
