"""Gymnasium's MuJoCo v5 tasks as one batched environment: N copies stepped by physai in one compiled call per frame.

    import physai.envs
    env = physai.envs.make_vec("Ant-v5", num_envs=64)              # a gymnasium.vector.VectorEnv
    env = gymnasium.make_vec("physai/Ant-v5", num_envs=64)        # the same, registered on import of physai.envs
    obs, info = env.reset(seed=0)                                  # environment i seeded with 0 + i
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
    env = physai.envs.make_vec("Ant-v5", num_envs=8, render_mode="rgb_array")
    frame = env.render()                                           # (480, 480, 3) uint8 of environment 0
    physai.envs.record_episode(env, "ant.npz", seed=0)             # then: physai view - ant.npz

The eleven tasks (TASKS: Ant, HalfCheetah, Hopper, Humanoid, HumanoidStandup, InvertedPendulum, InvertedDoublePendulum,
Pusher, Reacher, Swimmer, Walker2d, all -v5) load Gymnasium's own XML files and take its keyword arguments; the
observations, rewards, terminations, truncations (TimeLimit) and reset draws are Gymnasium's SyncVectorEnv's
(physai.envs.tasks, physai.envs.vector). Needs gymnasium (>= 1.4).
"""

from physai import extras

extras.require("gymnasium", "envs", "physai.envs")

import gymnasium  # noqa: E402

from physai.envs.record import record_episode  # noqa: E402
from physai.envs.tasks import TASKS  # noqa: E402
from physai.envs.vector import PhysaiVectorEnv, task_class  # noqa: E402

__all__ = ["TASKS", "PhysaiVectorEnv", "make_vec", "record_episode", "register", "task_class"]


def make_vec(task: str, num_envs: int = 1, **kwargs) -> PhysaiVectorEnv:
    """N environments of a v5 task ("Ant-v5", or "physai/Ant-v5") as one PhysaiVectorEnv. kwargs: max_episode_steps,
    autoreset_mode ("NextStep" default, "SameStep", "Disabled") and the task's own keyword arguments (Gymnasium's).
    UnknownModelError for an unknown task, InvalidArgumentError for an argument the task does not take."""
    return PhysaiVectorEnv(task, num_envs, **kwargs)


def _vector_entry(task: str):
    """The creator gymnasium.make_vec calls for physai/<task> (num_envs and the spec's kwargs)."""
    def create(num_envs: int = 1, **kwargs):
        return PhysaiVectorEnv(task, num_envs, **kwargs)
    return create


def register() -> None:
    """Register physai/<task> for every task with gymnasium (done on import): gymnasium.make_vec("physai/Ant-v5",
    num_envs=64) then builds a PhysaiVectorEnv with the registered max_episode_steps."""
    for name in TASKS:
        env_id = "physai/" + name
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, vector_entry_point=_vector_entry(name),
                               max_episode_steps=gymnasium.spec(name).max_episode_steps)


register()
