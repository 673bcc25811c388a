"""One environment's episode as a physai Trajectory, for `physai view` (or physai.view) to replay.

    record_episode(env, path=None, policy=None, env_index=0, seed=None, steps=None) -> Trajectory

The trajectory holds the states (q, qd) of environment env_index after the reset and after each env.step until its
episode ends (terminated or truncated), t = k env.dt, and the model file of the task (Gymnasium's XML), so that
`physai view - run.npz` finds it; saved with Trajectory.save (physai.trajectory_files) when a path is given.
"""

import numbers

import numpy as np
from gymnasium.vector import AutoresetMode

from physai.exceptions import InvalidArgumentError
from physai.integrators import Trajectory, check_integrator


def record_episode(env, path=None, policy=None, env_index: int = 0, seed=None, steps=None) -> Trajectory:
    """Reset `env` (a PhysaiVectorEnv, or a wrapper of one) with `seed`, step it with `policy` until environment
    env_index's episode ends, and return that environment's run (saved to `path`, a .npz, if given).

    policy: a function of the observations (N, obs_size) giving the actions (N, nu); None: uniform random actions in
            the action space, drawn from numpy.random.default_rng(seed)
    steps:  at most this many steps (None: until the episode ends; needs the env's max_episode_steps then)
    The run: t (S,) [s] = k env.dt, q (S, nq), qd (S, nv) of the S = steps + 1 states (the reset's first, the
    episode's last state last), energy None, the task's integrator, dt = env.dt (the time between saved states), model
    the task's XML file. InvalidArgumentError for an env_index outside 0..N-1, an env with autoreset_mode SameStep
    (it resets an ended environment within the step, so its last state is gone), or an episode without an end.
    """
    base = env.unwrapped
    N = base.num_envs
    if not (isinstance(env_index, numbers.Integral) and not isinstance(env_index, bool) and 0 <= env_index < N):
        raise InvalidArgumentError(f"env_index must be an environment index 0..{N - 1}, got {env_index!r}")
    if base.autoreset_mode == AutoresetMode.SAME_STEP:
        raise InvalidArgumentError("record_episode needs autoreset_mode NextStep or Disabled: SameStep resets an ended "
                                   "environment within the step, and its last state is not kept")
    limit = steps if steps is not None else base.max_episode_steps
    if limit is None or not (isinstance(limit, numbers.Integral) and limit >= 1):
        raise InvalidArgumentError(f"steps must be a positive integer (or None with a max_episode_steps), got {steps!r}")
    rng = np.random.default_rng(seed)
    low, high = base.single_action_space.low, base.single_action_space.high
    obs, _ = env.reset(seed=seed)
    s = base._state
    q, qd = [s.q[env_index].copy()], [s.qd[env_index].copy()]
    for _ in range(int(limit)):
        actions = policy(obs) if policy is not None else rng.uniform(low, high, size=(N, len(low))).astype(low.dtype)
        obs, _, terminated, truncated, _ = env.step(actions)
        q.append(s.q[env_index].copy())
        qd.append(s.qd[env_index].copy())
        if terminated[env_index] or truncated[env_index]:
            break
    run = Trajectory(t=np.arange(len(q)) * base.task.dt, q=np.array(q), qd=np.array(qd), energy=None,
                     integrator=check_integrator(base.task.mj.opt.integrator), dt=base.task.dt, model=base.task.path)
    if path is not None:
        run.save(path)
    return run
