"""How physai.envs and the mujoco.batch environment scale from one thread to all, in one run: bench_envs.py's rate of each
at 1 thread and at T threads, alternating.

    uv run python benchmarks/bench_env_threads.py                            # Humanoid-v5, 64 environments
    uv run python benchmarks/bench_env_threads.py --tasks Ant-v5 Humanoid-v5 --rounds 3

bench_envs.py prints physai / mujoco.batch at T threads only. Per task: physai.envs.make_vec(task, num_envs=N) with
PHYSAI_NUM_THREADS set to 1, then to T (the compiled engine reads it at each call), and mujoco_batch_env's environment
on 1 and on T threads, the same seed and random actions as bench_envs.py; each of the four measured --rounds times in
turn (bench_envs.rate: best of 3 rounds of --steps steps, wall clock), the best kept. Printed: environment steps per
second of each, each side's speed-up from 1 to T threads (2 on 2 cores is a perfect split, the environment's Python and
resets included), and physai / mujoco.batch at 1 and at T threads. T: PHYSAI_NUM_THREADS when set, else every core.
The machine's load (os.getloadavg) is printed with the table: the split is only read on a quiet machine.
"""

import argparse
import os

import numpy as np

import physai.envs
from bench_envs import rate
from mujoco_batch_env import MujocoBatchVectorEnv
from physai.engine import native


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", nargs="+", default=["Humanoid-v5"])
    parser.add_argument("--envs", type=int, default=64)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    threads = native.threads()
    print(f"{args.envs} environments, {args.steps} steps, best of 3 x {args.rounds}; 1 and {threads} threads; load "
          f"average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'task':<16}{'physai 1':>10}{f'physai {threads}':>10}{'speed-up':>10}{'mj 1':>10}{f'mj {threads}':>10}"
          f"{'speed-up':>10}{'ratio 1':>9}{f'ratio {threads}':>9}")
    for task in args.tasks:
        ours = physai.envs.make_vec(task, num_envs=args.envs)
        space = ours.single_action_space
        rng = np.random.default_rng(0)
        actions = rng.uniform(space.low, space.high, size=(args.steps + 1, args.envs, space.shape[0])).astype(np.float32)
        peers = {t: MujocoBatchVectorEnv(ours.task, args.envs, t, ours.max_episode_steps) for t in (1, threads)}
        best = {}
        for _ in range(args.rounds):
            for t in (1, threads):                                 # physai's threads: read at each compiled call
                os.environ["PHYSAI_NUM_THREADS"] = str(t)
                best["physai", t] = max(best.get(("physai", t), 0.0), rate(ours, actions))
                best["mj", t] = max(best.get(("mj", t), 0.0), rate(peers[t], actions))
        os.environ["PHYSAI_NUM_THREADS"] = str(threads)
        p1, pT, m1, mT = best["physai", 1], best["physai", threads], best["mj", 1], best["mj", threads]
        print(f"{task:<16}{p1:>10,.0f}{pT:>10,.0f}{pT / p1:>9.2f}x{m1:>10,.0f}{mT:>10,.0f}{mT / m1:>9.2f}x"
              f"{p1 / m1:>8.2f}x{pT / mT:>8.2f}x", flush=True)


if __name__ == "__main__":
    main()
