"""Environment steps per second of physai.envs beside Gymnasium's SyncVectorEnv of its own MuJoCo v5 tasks, in one run.

    uv run python benchmarks/bench_envs.py                                  # Ant, Walker2d, Humanoid; 64 envs
    uv run python benchmarks/bench_envs.py --tasks Hopper-v5 Ant-v5 --envs 64 --steps 200

For each task: physai.envs.make_vec(task, num_envs=N), gymnasium.make_vec(task, num_envs=N,
vectorization_mode="sync") and the same task on MuJoCo 4's batched stepping (mujoco_batch_env.MujocoBatchVectorEnv:
mujoco.batch.Batch on as many threads as physai, the same task code computing the same observations and rewards), each
reset with seed 0 and stepped with the same uniformly random actions (numpy.random.default_rng(0), float32 within the
action space), autoresets included. Environment steps per second (N per env.step) of each, best of 3 rounds of --steps
steps (wall clock; the first step of a round untimed), and the ratios physai / Gymnasium (issue T's target >= 10 on
Ant, Walker2d and Humanoid) and physai / mujoco.batch (target >= 1.5). physai runs on PHYSAI_NUM_THREADS threads
(default every core); Gymnasium's SyncVectorEnv on one. The machine's load (os.getloadavg) is printed with the table.

The physics alone: each of Gymnasium's environments' MjData stepped as its env.step steps it (ctrl, mj_step of
frame_skip substeps in C, mj_rnePostConstraint; a Python loop over the environments, no task code), from the same reset
and actions, the step after a termination a reset as the autoreset's, on one thread: its steps/s over Gymnasium's is how much of
Gymnasium's time the physics is, and "bound" = threads x that ratio is what a vector environment whose physics runs at
MuJoCo's speed reaches over SyncVectorEnv if its physics scaled perfectly over the threads and cost nothing else.
"""

import argparse
import os
import time

import gymnasium
import mujoco
import numpy as np

import physai.envs
from mujoco_batch_env import MujocoBatchVectorEnv
from physai.engine import native


def rate(env, actions: np.ndarray) -> float:
    """Environment steps per second of env over the actions (T, N, nu): best of 3 rounds, after one untimed step."""
    best = 0.0
    for _ in range(3):
        env.reset(seed=0)
        env.step(actions[0])
        t0 = time.perf_counter()
        for a in actions[1:]:
            env.step(a)
        best = max(best, (len(actions) - 1) * actions.shape[1] / (time.perf_counter() - t0))
    return best


def terminates(sub) -> bool:
    """Whether a Gymnasium v5 MuJoCo environment's state ends its episode, as its step computes `terminated`:
    unhealthy where the task terminates when unhealthy (tasks without a health check never end)."""
    return not getattr(sub, "is_healthy", True) and getattr(sub, "_terminate_when_unhealthy", False)


def physics_rate(env, actions: np.ndarray) -> float:
    """Environment steps per second of the physics alone of a Gymnasium SyncVectorEnv `env`, stepped on one thread as
    rate steps it (reset with seed 0, one untimed step, then the actions (T, N, nu)); where its task terminates
    (terminates; rounds are shorter than the time limit) the next step only resets it (untimed), as the
    next-step autoreset does: best of 3 rounds."""
    subs = [e.unwrapped for e in env.envs]
    best = 0.0
    for _ in range(3):
        env.reset(seed=0)
        env.step(actions[0])
        elapsed = 0.0
        ended = [False] * len(subs)
        for a in actions[1:]:
            t0 = time.perf_counter()
            for sub, ai, skip in zip(subs, a, ended):
                if not skip:
                    sub.data.ctrl[:] = ai
                    mujoco.mj_step(sub.model, sub.data, nstep=sub.frame_skip)
                    mujoco.mj_rnePostConstraint(sub.model, sub.data)
            elapsed += time.perf_counter() - t0
            for i, sub in enumerate(subs):                 # next-step autoreset: the step after an end only resets
                if ended[i]:
                    sub.reset()
                ended[i] = not ended[i] and terminates(sub)
        best = max(best, (len(actions) - 1) * actions.shape[1] / elapsed)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", nargs="+", default=["Ant-v5", "Walker2d-v5", "Humanoid-v5"])
    parser.add_argument("--envs", type=int, default=64)
    parser.add_argument("--steps", type=int, default=100)
    args = parser.parse_args()
    print(f"{args.envs} environments, {args.steps} steps, best of 3; physai backend "
          f"{'compiled' if native.on else 'numpy'}, load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    threads = native.threads()
    print(f"{'task':<26}{'physai steps/s':>16}{'Gymnasium steps/s':>20}{'ratio':>8}{'mujoco.batch steps/s':>23}"
          f"{'ratio':>8}{'mj_step alone steps/s':>24}{'bound':>8}")
    for task in args.tasks:
        ours = physai.envs.make_vec(task, num_envs=args.envs)
        theirs = gymnasium.make_vec(task, num_envs=args.envs, vectorization_mode="sync")
        space = theirs.single_action_space
        rng = np.random.default_rng(0)
        actions = rng.uniform(space.low, space.high, size=(args.steps + 1, args.envs, space.shape[0])).astype(np.float32)
        peer = MujocoBatchVectorEnv(ours.task, args.envs, threads, ours.max_episode_steps)
        p, g, b = rate(ours, actions), rate(theirs, actions), rate(peer, actions)
        alone = physics_rate(theirs, actions)
        print(f"{task:<26}{p:>16,.0f}{g:>20,.0f}{p / g:>7.1f}x{b:>23,.0f}{p / b:>7.2f}x{alone:>24,.0f}"
              f"{threads * alone / g:>7.1f}x", flush=True)


if __name__ == "__main__":
    main()
