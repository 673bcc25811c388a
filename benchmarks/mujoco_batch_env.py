"""The peer of physai.envs in benchmarks/bench_envs.py: the same tasks as a vector environment on MuJoCo 4's own batched
stepping (mujoco.batch.Batch: N simulations of one model on a thread pool), computing the same observations, rewards
and terminations with the same task code (physai.envs.tasks) over Batch's bound arrays.

What it does per env.step(actions), for the environments that step (an environment that ended the step before is
reset instead, Gymnasium's NEXT_STEP autoreset): d.ctrl = actions, Batch.step(nstep=frame_skip) on nthread threads,
then the task's observation and outcome. The body quantities a task observes are Batch's derived fields, which hold
what MjData holds after mj_step (Batch refreshes them after each call), except what mj_rnePostConstraint computes
(cfrc_ext, cacc, cfrc_int): Batch has no call for it, so those stay zero (Ant's and the Humanoids' contact
observations and costs). The peer thus does less work than Gymnasium's environments: its speed is an upper bound of
MuJoCo's, and physai's ratio against it a lower bound. (Forcing it through a sensor that needs mj_rnePostConstraint
would run it at every physics step, frame_skip times where Gymnasium runs it once: measured 5% slower on Ant and 12%
on Humanoid, 64 environments, 2 threads.)
"""

import numpy as np
from mujoco.batch import Batch as MjBatch

from physai.envs.tasks import Batch


class MujocoBatchVectorEnv:
    """N environments of `task` (a physai.envs.tasks.Task) stepped by mujoco.batch.Batch on nthread threads: reset(seed)
    -> obs; step(actions) -> (obs, reward, terminated, truncated), Gymnasium's NEXT_STEP autoreset."""

    def __init__(self, task, num_envs: int, nthread: int, max_episode_steps: int = 1000):
        self.task, self.num_envs, self.max_episode_steps = task, num_envs, max_episode_steps
        self.batch = MjBatch(task.mj, nsim=num_envs, nthread=nthread)
        self.q, self.qd, self.ctrl = (self.batch.bind(name) for name in ("qpos", "qvel", "ctrl"))
        self.observed = {name: self.batch.bind(name) for name in task.observe}
        self.elapsed, self.ended = np.zeros(num_envs, int), np.zeros(num_envs, bool)
        self.rngs = []

    def state(self) -> Batch:
        return Batch(self.q, self.qd, self.ctrl, self.observed)

    def _reset(self, ids: np.ndarray) -> None:
        """Environments ids from the model's qpos0 (warm start and controls zero) with the task's reset draws."""
        self.batch.reset(ids)
        for n in ids:
            self.q[n], self.qd[n] = self.task.reset_state(self.rngs[n])
        self.ctrl[ids] = 0.0
        self.batch.forward(ids)
        self.elapsed[ids], self.ended[ids] = 0, False

    def reset(self, seed: int = 0) -> np.ndarray:
        self.rngs = [np.random.default_rng(seed + n) for n in range(self.num_envs)]
        self._reset(np.arange(self.num_envs))
        return self.task.observation(self.state())

    def step(self, actions: np.ndarray):
        restart, run = np.flatnonzero(self.ended), np.flatnonzero(~self.ended)
        if len(restart):
            self._reset(restart)
        before = self.task.before(self.state())
        self.ctrl[run] = actions[run]
        self.batch.step(run, nstep=self.task.frame_skip)
        reward, terminated, _ = self.task.outcome(self.state(), before, actions)
        obs = self.task.observation(self.state())
        self.elapsed[run] += 1
        truncated = self.elapsed >= self.max_episode_steps
        reward[restart], terminated[restart], truncated[restart] = 0.0, False, False
        self.ended = terminated | truncated
        return obs, reward, terminated, truncated
