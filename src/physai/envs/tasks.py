"""Gymnasium's eleven MuJoCo v5 tasks, written over N environments at once: their observations, rewards, terminations
and reset draws, term by term as gymnasium/envs/mujoco/*_v5.py computes them for one.

A Task holds the constant part (the MjModel it loads, the keyword arguments, body and site indices); the state it
reads is a Batch: q (N, nq), qd (N, nv), ctrl (N, nu) MuJoCo's d.ctrl (the actions as float64, zero after a reset),
and `observed`, the body quantities MjData holds after the last mj_step + mj_rnePostConstraint (or after the reset's
mj_forward), batch axis first (xpos (N, nbody, 3), cfrc_ext (N, nbody, 6), ...). Each task's methods:

    before(batch)                         -> what step reads before simulating (x position, centre of mass)
    outcome(batch, before, action)        -> reward (N,), terminated (N,) bool, info {name: (N,)}
    observation(batch)                    -> (N, obs_size)
    reset_state(rng)                      -> (qpos (nq,), qvel (nv,)) for one environment, drawn from its own
                                             np.random.Generator in Gymnasium's order (its reset_model)
    reset_info(batch)                     -> info {name: (N,)} of a reset
"""

import numbers
import os
from dataclasses import dataclass

import gymnasium
import mujoco
import numpy as np

from physai.exceptions import InvalidArgumentError, UnknownModelError


@dataclass
class Batch:
    """The state of n environments as a task reads it (see the module docstring)."""

    q: np.ndarray
    qd: np.ndarray
    ctrl: np.ndarray
    observed: dict


def assets_dir() -> str:
    """Gymnasium's MuJoCo XML files (gymnasium/envs/mujoco/assets)."""
    return os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets")


def positive_int(x) -> bool:
    """x is a whole number >= 1 (a Python or NumPy integer, not a bool)."""
    return isinstance(x, numbers.Integral) and not isinstance(x, (bool, np.bool_)) and x >= 1


def _rows_sum(x: np.ndarray) -> np.ndarray:
    """np.sum of each environment's array (every axis but the first)."""
    return np.sum(x.reshape(len(x), -1), axis=1)


def _ctrl_cost(weight: float, action: np.ndarray) -> np.ndarray:
    """weight * sum(action^2) per environment, in the action's dtype as Gymnasium's control_cost computes it."""
    return weight * np.sum(np.square(action), axis=1)


class Task:
    """One v5 task: its XML, frame skip, keyword arguments (DEFAULTS, as the Gymnasium class's) and what it observes."""

    name: str = ""
    xml: str = ""
    frame_skip: int = 1
    DEFAULTS: dict = {}
    observe: tuple = ()            # the body quantities the task reads (physai.integrators.step_result's observe)

    def __init__(self, **kwargs):
        unknown = sorted(set(kwargs) - set(self.DEFAULTS) - {"xml_file", "frame_skip"})
        if unknown:
            raise InvalidArgumentError(f"{self.name} takes no keyword argument {unknown[0]!r}; its arguments are "
                                       f"{sorted(self.DEFAULTS) + ['frame_skip', 'xml_file']}")
        self.kw = {**self.DEFAULTS, **{k: v for k, v in kwargs.items() if k in self.DEFAULTS}}
        frame_skip = kwargs.get("frame_skip", self.frame_skip)
        if not positive_int(frame_skip):
            raise InvalidArgumentError(f"frame_skip must be a positive integer, got {frame_skip!r}")
        self.frame_skip = int(frame_skip)
        xml = kwargs.get("xml_file", self.xml)
        path = xml if xml.startswith((".", "/")) else os.path.join(assets_dir(), os.path.expanduser(xml))
        if not os.path.exists(path):
            raise UnknownModelError(f"{self.name}: the model file {path} does not exist")
        self.path = os.path.abspath(path)                          # the model file (a recorded episode names it)
        self.mj = mujoco.MjModel.from_xml_path(path)
        self.init_qpos = self.mj.qpos0.copy()
        self.init_qvel = np.zeros(self.mj.nv)
        self.dt = self.mj.opt.timestep * self.frame_skip           # Gymnasium's env.dt [s]
        self.setup()

    def setup(self) -> None:
        """Indices and sizes the task needs, from self.mj."""

    def body(self, name) -> int:
        """The index of a body given by name or index."""
        return name if isinstance(name, (int, np.integer)) else self.mj.body(name).id

    def observation_size(self) -> int:
        return self.observation(self.zero_batch(1)).shape[1]

    def zero_batch(self, n: int) -> Batch:
        """n environments at the model's qpos0 with zero observed quantities (for sizes)."""
        m = self.mj
        shapes = {"xpos": (m.nbody, 3), "xipos": (m.nbody, 3), "xquat": (m.nbody, 4), "site_xpos": (m.nsite, 3),
                  "cinert": (m.nbody, 10), "cvel": (m.nbody, 6), "cacc": (m.nbody, 6), "cfrc_int": (m.nbody, 6),
                  "cfrc_ext": (m.nbody, 6), "qfrc_actuator": (m.nv,), "qfrc_constraint": (m.nv,), "qacc": (m.nv,),
                  "ten_length": (m.ntendon,), "ten_velocity": (m.ntendon,)}
        return Batch(np.tile(self.init_qpos, (n, 1)), np.zeros((n, m.nv)), np.zeros((n, m.nu)),
                     {k: np.zeros((n,) + shapes[k]) for k in self.observe})

    def before(self, b: Batch):
        return None

    def reset_info(self, b: Batch) -> dict:
        return {}

    def reset_state(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Gymnasium's usual reset_model: qpos + U(-s, s), qvel + U(-s, s) (the tasks that draw qvel from a normal
        override it)."""
        s = self.kw["reset_noise_scale"]
        qpos = self.init_qpos + rng.uniform(low=-s, high=s, size=self.mj.nq)
        qvel = self.init_qvel + rng.uniform(low=-s, high=s, size=self.mj.nv)
        return qpos, qvel

    def normal_qvel_reset(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """qpos + U(-s, s), qvel + s N(0, 1) (Ant, HalfCheetah, InvertedDoublePendulum)."""
        s = self.kw["reset_noise_scale"]
        qpos = self.init_qpos + rng.uniform(low=-s, high=s, size=self.mj.nq)
        qvel = self.init_qvel + s * rng.standard_normal(self.mj.nv)
        return qpos, qvel


class _Locomotion(Task):
    """The planar runners (HalfCheetah, Hopper, Walker2d): forward reward from qpos[0], control cost."""

    def before(self, b):
        return b.q[:, 0].copy()

    def x_velocity(self, b, x_before):
        return (b.q[:, 0] - x_before) / self.dt

    def observation(self, b):
        position = b.q[:, 1:] if self.kw["exclude_current_positions_from_observation"] else b.q
        return np.concatenate((position, self.velocity(b.qd)), axis=1)

    def velocity(self, qd):
        return qd

    def reset_info(self, b):
        return {"x_position": b.q[:, 0].copy(), "z_distance_from_origin": b.q[:, 1] - self.init_qpos[1]}


class HalfCheetah(_Locomotion):
    name, xml, frame_skip = "HalfCheetah-v5", "half_cheetah.xml", 5
    DEFAULTS = dict(forward_reward_weight=1.0, ctrl_cost_weight=0.1, reset_noise_scale=0.1,
                    exclude_current_positions_from_observation=True, default_camera_config=dict(distance=4.0))

    def outcome(self, b, x_before, action):
        x_velocity = self.x_velocity(b, x_before)
        forward_reward = self.kw["forward_reward_weight"] * x_velocity
        ctrl_cost = _ctrl_cost(self.kw["ctrl_cost_weight"], action)
        reward = forward_reward - ctrl_cost
        info = {"x_position": b.q[:, 0].copy(), "x_velocity": x_velocity, "reward_forward": forward_reward,
                "reward_ctrl": -ctrl_cost}
        return reward, np.zeros(len(reward), bool), info

    def reset_state(self, rng):
        return self.normal_qvel_reset(rng)

    def reset_info(self, b):
        return {"x_position": b.q[:, 0].copy()}


class _Hopping(_Locomotion):
    """Hopper and Walker2d: alive bonus while healthy, velocities clipped to [-10, 10] in the observation."""

    def velocity(self, qd):
        return np.clip(qd, -10, 10)

    def healthy(self, b) -> np.ndarray:
        z, angle = b.q[:, 1], b.q[:, 2]
        (zlo, zhi), (alo, ahi) = self.kw["healthy_z_range"], self.kw["healthy_angle_range"]
        return (zlo < z) & (z < zhi) & (alo < angle) & (angle < ahi)

    def outcome(self, b, x_before, action):
        x_velocity = self.x_velocity(b, x_before)
        healthy = self.healthy(b)
        forward_reward = self.kw["forward_reward_weight"] * x_velocity
        healthy_reward = healthy * self.kw["healthy_reward"]
        ctrl_cost = _ctrl_cost(self.kw["ctrl_cost_weight"], action)
        reward = forward_reward + healthy_reward - ctrl_cost
        info = {"x_position": b.q[:, 0].copy(), "z_distance_from_origin": b.q[:, 1] - self.init_qpos[1],
                "x_velocity": x_velocity, "reward_forward": forward_reward, "reward_ctrl": -ctrl_cost,
                "reward_survive": healthy_reward}
        return reward, ~healthy & bool(self.kw["terminate_when_unhealthy"]), info


class Hopper(_Hopping):
    name, xml, frame_skip = "Hopper-v5", "hopper.xml", 4
    DEFAULTS = dict(forward_reward_weight=1.0, ctrl_cost_weight=1e-3, healthy_reward=1.0, terminate_when_unhealthy=True,
                    healthy_state_range=(-100.0, 100.0), healthy_z_range=(0.7, float("inf")),
                    healthy_angle_range=(-0.2, 0.2), reset_noise_scale=5e-3,
                    exclude_current_positions_from_observation=True,
                    default_camera_config=dict(trackbodyid=2, distance=3.0, lookat=np.array((0.0, 0.0, 1.15)), elevation=-20.0))

    def healthy(self, b):
        state = np.concatenate((b.q, b.qd), axis=1)[:, 2:]
        lo, hi = self.kw["healthy_state_range"]
        return np.all((lo < state) & (state < hi), axis=1) & super().healthy(b)


class Walker2d(_Hopping):
    name, xml, frame_skip = "Walker2d-v5", "walker2d_v5.xml", 4
    DEFAULTS = dict(forward_reward_weight=1.0, ctrl_cost_weight=1e-3, healthy_reward=1.0, terminate_when_unhealthy=True,
                    healthy_z_range=(0.8, 2.0), healthy_angle_range=(-1.0, 1.0), reset_noise_scale=5e-3,
                    exclude_current_positions_from_observation=True,
                    default_camera_config=dict(trackbodyid=2, distance=4.0, lookat=np.array((0.0, 0.0, 1.15)), elevation=-20.0))


class Swimmer(Task):
    name, xml, frame_skip = "Swimmer-v5", "swimmer.xml", 4
    DEFAULTS = dict(forward_reward_weight=1.0, ctrl_cost_weight=1e-4, reset_noise_scale=0.1,
                    exclude_current_positions_from_observation=True, default_camera_config=None)

    def before(self, b):
        return b.q[:, 0:2].copy()

    def observation(self, b):
        position = b.q[:, 2:] if self.kw["exclude_current_positions_from_observation"] else b.q
        return np.concatenate((position, b.qd), axis=1)

    def outcome(self, b, xy_before, action):
        xy = b.q[:, 0:2]
        velocity = (xy - xy_before) / self.dt
        forward_reward = self.kw["forward_reward_weight"] * velocity[:, 0]
        ctrl_cost = _ctrl_cost(self.kw["ctrl_cost_weight"], action)
        reward = forward_reward - ctrl_cost
        info = {**self.reset_info(b), "x_velocity": velocity[:, 0], "y_velocity": velocity[:, 1],
                "reward_forward": forward_reward, "reward_ctrl": -ctrl_cost}
        return reward, np.zeros(len(reward), bool), info

    def reset_info(self, b):
        return {"x_position": b.q[:, 0].copy(), "y_position": b.q[:, 1].copy(),
                "distance_from_origin": np.linalg.norm(b.q[:, 0:2], axis=1)}


class InvertedPendulum(Task):
    name, xml, frame_skip = "InvertedPendulum-v5", "inverted_pendulum.xml", 2
    DEFAULTS = dict(reset_noise_scale=0.01, default_camera_config=dict(trackbodyid=0, distance=2.04))

    def observation(self, b):
        return np.concatenate((b.q, b.qd), axis=1)

    def outcome(self, b, _, action):
        obs = self.observation(b)
        terminated = ~np.isfinite(obs).all(axis=1) | (np.abs(obs[:, 1]) > 0.2)
        reward = (~terminated).astype(np.float64)
        return reward, terminated, {"reward_survive": (~terminated).astype(np.int64)}     # Gymnasium's int


class InvertedDoublePendulum(Task):
    name, xml, frame_skip = "InvertedDoublePendulum-v5", "inverted_double_pendulum.xml", 5
    DEFAULTS = dict(healthy_reward=10.0, reset_noise_scale=0.1,
                    default_camera_config=None)     # Gymnasium's default (its file's DEFAULT_CAMERA_CONFIG is unused)
    observe = ("site_xpos", "qfrc_constraint")

    def observation(self, b):
        return np.concatenate((b.q[:, :1], np.sin(b.q[:, 1:]), np.cos(b.q[:, 1:]), np.clip(b.qd, -10, 10),
                               np.clip(b.observed["qfrc_constraint"], -10, 10)[:, :1]), axis=1)

    def outcome(self, b, _, action):
        x, y = b.observed["site_xpos"][:, 0, 0], b.observed["site_xpos"][:, 0, 2]
        terminated = y <= 1
        v1, v2 = b.qd[:, 1], b.qd[:, 2]
        dist_penalty = 0.01 * x ** 2 + (y - 2) ** 2
        vel_penalty = 1e-3 * v1 ** 2 + 5e-3 * v2 ** 2
        alive_bonus = self.kw["healthy_reward"] * (~terminated)
        reward = alive_bonus - dist_penalty - vel_penalty
        info = {"reward_survive": alive_bonus, "distance_penalty": -dist_penalty, "velocity_penalty": -vel_penalty}
        return reward, terminated, info

    def reset_state(self, rng):
        return self.normal_qvel_reset(rng)


class Reacher(Task):
    name, xml, frame_skip = "Reacher-v5", "reacher.xml", 2
    DEFAULTS = dict(reward_dist_weight=1, reward_control_weight=1, default_camera_config=dict(trackbodyid=0))
    observe = ("xpos",)

    def setup(self):
        self.fingertip, self.target = self.body("fingertip"), self.body("target")

    def vec(self, b):
        return b.observed["xpos"][:, self.fingertip] - b.observed["xpos"][:, self.target]

    def observation(self, b):
        theta = b.q[:, :2]
        return np.concatenate((np.cos(theta), np.sin(theta), b.q[:, 2:], b.qd[:, :2], self.vec(b)[:, :2]), axis=1)

    def outcome(self, b, _, action):
        reward_dist = -np.linalg.norm(self.vec(b), axis=1) * self.kw["reward_dist_weight"]
        reward_ctrl = -np.square(action).sum(axis=1) * self.kw["reward_control_weight"]
        reward = reward_dist + reward_ctrl
        return reward, np.zeros(len(reward), bool), {"reward_dist": reward_dist, "reward_ctrl": reward_ctrl}

    def reset_state(self, rng):
        qpos = rng.uniform(low=-0.1, high=0.1, size=self.mj.nq) + self.init_qpos
        while True:                                                  # a goal inside the disc of radius 0.2
            goal = rng.uniform(low=-0.2, high=0.2, size=2)
            if np.linalg.norm(goal) < 0.2:
                break
        qpos[-2:] = goal
        qvel = self.init_qvel + rng.uniform(low=-0.005, high=0.005, size=self.mj.nv)
        qvel[-2:] = 0
        return qpos, qvel


class Pusher(Task):
    name, xml, frame_skip = "Pusher-v5", "pusher_v5.xml", 5
    DEFAULTS = dict(reward_near_weight=0.5, reward_dist_weight=1, reward_control_weight=0.1,
                    default_camera_config=dict(trackbodyid=-1, distance=4.0))
    observe = ("xpos",)

    def setup(self):
        self.tips_arm, self.object, self.goal = self.body("tips_arm"), self.body("object"), self.body("goal")

    def observation(self, b):
        x = b.observed["xpos"]
        return np.concatenate((b.q[:, :7], b.qd[:, :7], x[:, self.tips_arm], x[:, self.object], x[:, self.goal]), axis=1)

    def outcome(self, b, _, action):
        x = b.observed["xpos"]
        reward_near = -np.linalg.norm(x[:, self.object] - x[:, self.tips_arm], axis=1) * self.kw["reward_near_weight"]
        reward_dist = -np.linalg.norm(x[:, self.object] - x[:, self.goal], axis=1) * self.kw["reward_dist_weight"]
        reward_ctrl = -np.square(action).sum(axis=1) * self.kw["reward_control_weight"]
        reward = reward_dist + reward_ctrl + reward_near
        info = {"reward_dist": reward_dist, "reward_ctrl": reward_ctrl, "reward_near": reward_near}
        return reward, np.zeros(len(reward), bool), info

    def reset_state(self, rng):
        qpos = self.init_qpos.copy()
        goal = np.asarray([0, 0])
        while True:                                                  # a cylinder at least 0.17 m from the goal
            cylinder = np.concatenate([rng.uniform(low=-0.3, high=0, size=1), rng.uniform(low=-0.2, high=0.2, size=1)])
            if np.linalg.norm(cylinder - goal) > 0.17:
                break
        qpos[-4:-2] = cylinder
        qpos[-2:] = goal
        qvel = self.init_qvel + rng.uniform(low=-0.005, high=0.005, size=self.mj.nv)
        qvel[-4:] = 0
        return qpos, qvel


class Ant(Task):
    name, xml, frame_skip = "Ant-v5", "ant.xml", 5
    DEFAULTS = dict(forward_reward_weight=1, ctrl_cost_weight=0.5, contact_cost_weight=5e-4, healthy_reward=1.0,
                    main_body=1, terminate_when_unhealthy=True, healthy_z_range=(0.2, 1.0),
                    contact_force_range=(-1.0, 1.0), reset_noise_scale=0.1,
                    exclude_current_positions_from_observation=True, include_cfrc_ext_in_observation=True,
                    default_camera_config=dict(distance=4.0))
    observe = ("xpos", "cfrc_ext")

    def setup(self):
        self.main = self.body(self.kw["main_body"])

    def before(self, b):
        return b.observed["xpos"][:, self.main, :2].copy()

    def contact_forces(self, b):
        return np.clip(b.observed["cfrc_ext"], *self.kw["contact_force_range"])

    def healthy(self, b):
        lo, hi = self.kw["healthy_z_range"]
        finite = np.isfinite(b.q).all(axis=1) & np.isfinite(b.qd).all(axis=1)
        return finite & (lo <= b.q[:, 2]) & (b.q[:, 2] <= hi)

    def observation(self, b):
        parts = [b.q[:, 2:] if self.kw["exclude_current_positions_from_observation"] else b.q, b.qd]
        if self.kw["include_cfrc_ext_in_observation"]:
            parts.append(self.contact_forces(b)[:, 1:].reshape(len(b.q), -1))
        return np.concatenate(parts, axis=1)

    def outcome(self, b, xy_before, action):
        velocity = (b.observed["xpos"][:, self.main, :2] - xy_before) / self.dt
        healthy = self.healthy(b)
        forward_reward = velocity[:, 0] * self.kw["forward_reward_weight"]
        healthy_reward = healthy * self.kw["healthy_reward"]
        ctrl_cost = _ctrl_cost(self.kw["ctrl_cost_weight"], action)
        contact_cost = self.kw["contact_cost_weight"] * _rows_sum(np.square(self.contact_forces(b)))
        reward = forward_reward + healthy_reward - (ctrl_cost + contact_cost)
        info = {**self.reset_info(b), "x_velocity": velocity[:, 0], "y_velocity": velocity[:, 1],
                "reward_forward": forward_reward, "reward_ctrl": -ctrl_cost, "reward_contact": -contact_cost,
                "reward_survive": healthy_reward}
        return reward, ~healthy & bool(self.kw["terminate_when_unhealthy"]), info

    def reset_state(self, rng):
        return self.normal_qvel_reset(rng)

    def reset_info(self, b):
        return {"x_position": b.q[:, 0].copy(), "y_position": b.q[:, 1].copy(),
                "distance_from_origin": np.linalg.norm(b.q[:, 0:2], axis=1)}


class _Humanoids(Task):
    """Humanoid and HumanoidStandup: observations of positions, velocities, cinert, cvel, actuator forces, cfrc_ext."""

    observe = ("xipos", "cinert", "cvel", "qfrc_actuator", "cfrc_ext", "ten_length", "ten_velocity")

    def observation(self, b):
        n, kw, o = len(b.q), self.kw, b.observed
        parts = [b.q[:, 2:] if kw["exclude_current_positions_from_observation"] else b.q, b.qd]
        for flag, part in (("include_cinert_in_observation", o["cinert"][:, 1:]), ("include_cvel_in_observation",
                           o["cvel"][:, 1:]), ("include_qfrc_actuator_in_observation", o["qfrc_actuator"][:, 6:]),
                           ("include_cfrc_ext_in_observation", o["cfrc_ext"][:, 1:])):
            if kw[flag] is True:
                parts.append(part.reshape(n, -1))
        return np.concatenate(parts, axis=1)

    def xy_info(self, b):
        """x, y and the tendons' lengths and velocities (MjData's ten_length, ten_velocity, as the observations')."""
        return {"x_position": b.q[:, 0].copy(), "y_position": b.q[:, 1].copy(),
                "tendon_length": b.observed["ten_length"].copy(), "tendon_velocity": b.observed["ten_velocity"].copy()}


_HUMANOID_FLAGS = dict(exclude_current_positions_from_observation=True, include_cinert_in_observation=True,
                       include_cvel_in_observation=True, include_qfrc_actuator_in_observation=True,
                       include_cfrc_ext_in_observation=True)


class Humanoid(_Humanoids):
    name, xml, frame_skip = "Humanoid-v5", "humanoid.xml", 5
    DEFAULTS = dict(forward_reward_weight=1.25, ctrl_cost_weight=0.1, contact_cost_weight=5e-7,
                    contact_cost_range=(-np.inf, 10.0), healthy_reward=5.0, terminate_when_unhealthy=True,
                    healthy_z_range=(1.0, 2.0), reset_noise_scale=1e-2, **_HUMANOID_FLAGS,
                    default_camera_config=dict(trackbodyid=1, distance=4.0, lookat=np.array((0.0, 0.0, 2.0)),
                                               elevation=-20.0))

    def setup(self):
        self.mass = self.mj.body_mass.copy()

    def before(self, b):
        return self.mass_center(b)

    def mass_center(self, b):
        """Gymnasium's mass_center: the bodies' mass-weighted xipos, x and y (N, 2)."""
        return (np.einsum("b,nbj->nj", self.mass, b.observed["xipos"]) / self.mass.sum())[:, 0:2]

    def outcome(self, b, xy_before, action):
        kw = self.kw
        velocity = (self.mass_center(b) - xy_before) / self.dt
        lo, hi = kw["healthy_z_range"]
        healthy = (lo < b.q[:, 2]) & (b.q[:, 2] < hi)
        forward_reward = kw["forward_reward_weight"] * velocity[:, 0]
        healthy_reward = healthy * kw["healthy_reward"]
        ctrl_cost = _ctrl_cost(kw["ctrl_cost_weight"], b.ctrl)
        contact_cost = np.clip(kw["contact_cost_weight"] * _rows_sum(np.square(b.observed["cfrc_ext"])),
                               *kw["contact_cost_range"])
        reward = forward_reward + healthy_reward - (ctrl_cost + contact_cost)
        info = {**self.reset_info(b), "x_velocity": velocity[:, 0], "y_velocity": velocity[:, 1],
                "reward_survive": healthy_reward, "reward_forward": forward_reward, "reward_ctrl": -ctrl_cost,
                "reward_contact": -contact_cost}
        return reward, ~healthy & bool(kw["terminate_when_unhealthy"]), info

    def reset_info(self, b):
        return {**self.xy_info(b), "distance_from_origin": np.linalg.norm(b.q[:, 0:2], axis=1)}


class HumanoidStandup(_Humanoids):
    name, xml, frame_skip = "HumanoidStandup-v5", "humanoidstandup.xml", 5
    DEFAULTS = dict(uph_cost_weight=1, ctrl_cost_weight=0.1, impact_cost_weight=5e-7, impact_cost_range=(-np.inf, 10.0),
                    reset_noise_scale=1e-2, **_HUMANOID_FLAGS,
                    default_camera_config=dict(trackbodyid=1, distance=4.0, lookat=np.array((0.0, 0.0, 0.8925)),
                                               elevation=-20.0))

    def outcome(self, b, _, action):
        kw = self.kw
        uph_cost = (b.q[:, 2] - 0) / self.mj.opt.timestep
        quad_ctrl_cost = _ctrl_cost(kw["ctrl_cost_weight"], b.ctrl)
        quad_impact_cost = np.clip(kw["impact_cost_weight"] * _rows_sum(np.square(b.observed["cfrc_ext"])),
                                   *kw["impact_cost_range"])
        reward = uph_cost - quad_ctrl_cost - quad_impact_cost + 1
        info = {**self.reset_info(b), "reward_linup": uph_cost, "reward_quadctrl": -quad_ctrl_cost,
                "reward_impact": -quad_impact_cost}
        return reward, np.zeros(len(reward), bool), info

    def reset_info(self, b):
        return {**self.xy_info(b), "z_distance_from_origin": b.q[:, 2] - self.init_qpos[2]}


#: The tasks by Gymnasium's id.
TASKS = {cls.name: cls for cls in (Ant, HalfCheetah, Hopper, Humanoid, HumanoidStandup, InvertedPendulum,
                                   InvertedDoublePendulum, Pusher, Reacher, Swimmer, Walker2d)}
