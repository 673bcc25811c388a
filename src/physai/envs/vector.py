"""One gymnasium.vector.VectorEnv of N copies of a v5 task, stepped by physai's batched, compiled step_result.

Each env.step(actions) is one compiled call of physai.integrators.step_frames over the environments that step (all
frame_skip frames of all of them, on the threads) and those the next-step autoreset resets (their forward pass, in the
same call), then the task's observations, rewards and terminations over the batch.
What Gymnasium's SyncVectorEnv of the same task does one environment at a time is done here for all at once:

    per environment    MuJoCo / Gymnasium                          here
    action             d.ctrl = action (clamped to ctrlrange        ctrl = actions as float64 (step_result clamps it
                       inside mj_step when ctrllimited)              the same way); the costs read the actions unclamped
    simulation         mj_step(m, d, nstep=frame_skip)              one step_frames call of frame_skip frames, the
                       + mj_rnePostConstraint                        body quantities observed at the last frame
    reset              mj_resetData + reset_model (np_random)       the same draws from the same per-environment
                       + mj_forward                                  Generator, warm start zero, ctrl zero; the forward
                                                                     pass in the step's call (step_frames' forward_only)
    TimeLimit          truncated at max_episode_steps               the same counter per environment
    autoreset          NEXT_STEP / SAME_STEP / DISABLED             the same three modes

Faults are per environment; nothing raises for the batch:
- a bad action (NaN, or a control beyond MuJoCo's mjMAXVAL 1e10 after clamping: mju_isBad) is taken as MuJoCo's
  mj_fwdActuation takes it (mjWARN_BADCTRL): that environment steps with every control zero, its d.ctrl (and the
  Humanoids' control cost) the action as given, its reward from the action as given (NaN for a NaN); an infinite or
  huge action of a ctrllimited actuator is clamped (no fault), its control cost infinite or huge, as Gymnasium's. One
  ActionWarning per step names the environments whose actions were not finite or beyond 1e10;
- an integer or bool action (the action space is float32; an int64 array, say) is taken as its float64 value: d.ctrl
  (as Gymnasium's) and the control cost, squared and summed in float64, so info's reward_ctrl is float64. Gymnasium
  squares it in its own integer type instead, which wraps around to a wrong, possibly negative cost: int8 at |a| >= 12,
  uint8 at 16, int16 at 182, int32 at 46341, int64 at 3.04e9, and an unsigned action's negated cost at once (a uint8
  [1, 0] gives reward_ctrl 1.8e19); physai's is the exact one there (rounded to float64) and Gymnasium's elsewhere;
- a state that stops being finite (or a step that fails) is reported by step_result per environment: that environment
  ends with truncated=True, reward 0, its last finite observation, and info["diverged"] True with the reason in
  info["divergence"]; the autoreset then resets it while the others go on.
"""

import numbers
import warnings

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from physai import engine, integrators
from physai.envs.render import DEFAULT_SIZE, FrameRenderer, chosen_camera
from physai.envs.tasks import TASKS, Batch, positive_int
from physai.engine.model_checks import MAXVAL
from physai.exceptions import ActionWarning, InvalidArgumentError, InvalidStateError, ShapeError, UnknownModelError

#: Observed at a reset as after Gymnasium's mj_resetData + mj_forward, which does not run mj_rnePostConstraint (zero).
_ZERO_AT_RESET = ("cfrc_ext", "cfrc_int", "cacc")


#: the render modes physai.envs draws (Gymnasium's MujocoEnv also has "human", a window, and depth images)
RENDER_MODES = ("rgb_array",)


def checked_render_mode(render_mode):
    """render_mode if None or one of RENDER_MODES; InvalidArgumentError naming another ("human": no window here)."""
    if render_mode is None or render_mode in RENDER_MODES:
        return render_mode
    if render_mode == "human":
        raise InvalidArgumentError("render_mode 'human' (a window) is not supported: use render_mode='rgb_array' for "
                                   "frames, or record an episode (physai.envs.record_episode(env, path)) and replay it with physai view")
    raise InvalidArgumentError(f"render_mode must be None or one of {list(RENDER_MODES)}, got {render_mode!r}")


def task_class(name: str):
    """The Task class of a Gymnasium id ("Ant-v5", also "physai/Ant-v5"); UnknownModelError for another."""
    key = name.split("/", 1)[1] if isinstance(name, str) and name.startswith("physai/") else name
    if key not in TASKS:
        raise UnknownModelError(f"no task {name!r}; physai.envs has {sorted(TASKS)}")
    return TASKS[key]


class PhysaiVectorEnv(VectorEnv):
    """N environments of one Gymnasium v5 MuJoCo task, as gymnasium.make_vec(id, num_envs=N) builds them.

    task:              a Gymnasium id, e.g. "Ant-v5"
    num_envs:          N >= 1
    max_episode_steps: TimeLimit's (default the id's registered value: 1000, 50 for Reacher, 100 for Pusher);
                       None for no limit
    autoreset_mode:    gymnasium.vector.AutoresetMode or its value ("NextStep" default, "SameStep", "Disabled")
    render_mode:       None or "rgb_array": render() gives the frame (height, width, 3) uint8 of environment render_env
    render_env:        the environment drawn (0 .. N-1; default 0)
    width, height, camera_id, camera_name, max_geom, visual_options: Gymnasium's MujocoEnv's (480 x 480, its free
                       camera set by the task's default_camera_config, 1000 geoms); see physai.envs.render
    **kwargs:          the task's keyword arguments (Gymnasium's: reward weights, reset_noise_scale, healthy ranges,
                       exclude_current_positions_from_observation, frame_skip, xml_file ...)
    """

    def __init__(self, task: str, num_envs: int = 1, max_episode_steps="registered",
                 autoreset_mode=AutoresetMode.NEXT_STEP, render_mode=None, render_env: int = 0,
                 width: int = DEFAULT_SIZE, height: int = DEFAULT_SIZE, camera_id=None, camera_name=None,
                 max_geom: int = 1000, visual_options=None, **kwargs):
        super().__init__()
        cls = task_class(task)
        if type(num_envs) is not int or num_envs < 1:
            raise InvalidArgumentError(f"num_envs must be a positive int, got {num_envs!r}")
        try:
            self.autoreset_mode = AutoresetMode(autoreset_mode)
        except ValueError:
            raise InvalidArgumentError(f"autoreset_mode must be one of {[m.value for m in AutoresetMode]}, "
                                       f"got {autoreset_mode!r}") from None
        self.task = cls(**kwargs)
        if max_episode_steps == "registered":
            max_episode_steps = gymnasium.spec(cls.name).max_episode_steps
        if max_episode_steps is not None and not positive_int(max_episode_steps):
            raise InvalidArgumentError(f"max_episode_steps must be a positive integer or None, got {max_episode_steps!r}")
        self.max_episode_steps = max_episode_steps
        self.num_envs = num_envs
        self.model = engine.from_mujoco(self.task.mj)
        self.render_mode, self.render_env = checked_render_mode(render_mode), render_env
        if not (isinstance(render_env, numbers.Integral) and not isinstance(render_env, bool) and 0 <= render_env < num_envs):
            raise InvalidArgumentError(f"render_env must be an environment index 0..{num_envs - 1}, got {render_env!r}")
        self._renderer = FrameRenderer(self.task.mj, width, height, chosen_camera(self.task.mj, camera_id, camera_name),
                                       self.task.kw["default_camera_config"], max_geom, visual_options)
        self.metadata = {"autoreset_mode": self.autoreset_mode, "render_modes": list(RENDER_MODES),
                         "render_fps": int(np.round(1.0 / self.task.dt))}
        low, high = self.task.mj.actuator_ctrlrange.copy().astype(np.float32).T
        self.single_action_space = spaces.Box(low=low, high=high, dtype=np.float32)
        self.single_observation_space = spaces.Box(-np.inf, np.inf, (self.task.observation_size(),), np.float64)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self._state = self.task.zero_batch(num_envs)
        self._warm = np.zeros((num_envs, self.model.nv))
        self._elapsed = np.zeros(num_envs, np.int64)
        self._rngs = [None] * num_envs
        self._autoreset = np.zeros(num_envs, bool)
        self._obs = np.zeros(self.observation_space.shape)
        self._every = np.arange(num_envs)
        act = self.model.actuators                     # ctrlrange where ctrllimited, else no bound (_applied's clip)
        self._ctrl_low = np.where(act.ctrllimited, act.ctrlrange[:, 0], -np.inf)
        self._ctrl_high = np.where(act.ctrllimited, act.ctrlrange[:, 1], np.inf)
        self._started = False

    # ---- reset ----

    def reset(self, *, seed=None, options=None):
        """(obs (N, obs_size), info): every environment reset, or those of options["reset_mask"] (N,) bool. seed: an
        int (environment i seeded with seed + i, as SyncVectorEnv), a list of N ints or None."""
        N = self.num_envs
        if isinstance(seed, numbers.Integral) and not isinstance(seed, (bool, np.bool_)):
            seeds = [int(seed) + i for i in range(N)]
        elif seed is None or isinstance(seed, (list, tuple, np.ndarray)):
            seeds = [None] * N if seed is None else list(seed)
        else:
            raise InvalidArgumentError(f"seed must be an int, a list of {N} ints or None, got {seed!r}")
        if len(seeds) != N:
            raise InvalidArgumentError(f"seed: {len(seeds)} seeds for {N} environments")
        bad = [s for s in seeds if s is not None and not (isinstance(s, numbers.Integral) and s >= 0)]
        if bad:
            raise InvalidArgumentError(f"seed: every seed must be a whole number >= 0 (or None), got {bad[0]!r}")
        seeds = [None if s is None else int(s) for s in seeds]
        mask = np.ones(N, bool)
        if options is not None and "reset_mask" in options:
            mask = options["reset_mask"]
            if not isinstance(mask, np.ndarray) or mask.shape != (N,) or mask.dtype != np.bool_ or not mask.any():
                raise InvalidArgumentError(f"options['reset_mask'] must be a bool array of shape ({N},) with a True")
        for i in np.flatnonzero(mask):
            if seeds[i] is not None or self._rngs[i] is None:
                self._rngs[i], _ = seeding.np_random(seeds[i])
        self._autoreset[mask] = False
        info = self._reset_envs(np.flatnonzero(mask))
        self._started = True
        return self._obs.copy(), info

    def _reset_envs(self, idx: np.ndarray) -> dict:
        """Reset environments idx (mj_resetData + reset_model + mj_forward): their state, observation; their info."""
        if len(idx) == 0:
            return {}
        self._draw_resets(idx)
        return self._observe_resets(idx)

    def _draw_resets(self, idx: np.ndarray) -> None:
        """mj_resetData + reset_model of environments idx: their states drawn from their Generators, ctrl, warm start
        and step count zero."""
        s = self._state
        for i in idx:
            s.q[i], s.qd[i] = self.task.reset_state(self._rngs[i])
        s.ctrl[idx], self._warm[idx], self._elapsed[idx] = 0.0, 0.0, 0

    def _observe_resets(self, idx: np.ndarray, observed: dict | None = None) -> dict:
        """mj_forward of the environments idx just drawn: their observed fields (`observed`, those of the step's call,
        or None: a forward pass of their own), with what mj_forward does not compute zero; their observation; their
        info."""
        s = self._state
        if self.task.observe:
            if observed is None:
                observed = self._forward(Batch(s.q[idx], s.qd[idx], s.ctrl[idx], {}))
            for k, v in observed.items():
                s.observed[k][idx] = 0.0 if k in _ZERO_AT_RESET else v
        sub = Batch(s.q[idx], s.qd[idx], s.ctrl[idx], {k: v[idx] for k, v in s.observed.items()})
        self._obs[idx] = self.task.observation(sub)
        return self._vector_info(self.task.reset_info(sub), idx)

    def _forward(self, b: Batch) -> dict:
        """The body quantities of states b at their forward pass (warm start zero): those of the first frame of a step
        from b. The step is Euler's, whose observed fields are those at its start state (RK4's are its last stage's)."""
        r = integrators.step_result(self.model, b.q, b.qd, integrator="euler", ctrl=b.ctrl,
                                    qacc_warmstart=np.zeros_like(b.qd),
                                    on_divergence="report", observe=self.task.observe)
        return r.observed

    # ---- rendering ----

    def render(self):
        """The frame (height, width, 3) uint8 of environment render_env in its present state, drawn by MuJoCo's renderer
        as Gymnasium's env.render() draws it after set_state(qpos, qvel) (physai.envs.render). InvalidStateError when
        the env was made without render_mode="rgb_array"; RenderError when no OpenGL context can be made."""
        if self.render_mode is None:
            raise InvalidStateError('render() of an env made with render_mode=None: make it with render_mode="rgb_array"')
        s, i = self._state, self.render_env
        return self._renderer.render(s.q[i], s.qd[i], s.ctrl[i])

    def close_extras(self, **kwargs):
        """Free the renderer's OpenGL context."""
        self._renderer.close()

    # ---- step ----

    def step(self, actions):
        """(obs (N, obs_size), reward (N,), terminated (N,), truncated (N,), info) after one step of each environment;
        actions (N, nu) within the action space (outside it, ctrl is clamped as MuJoCo clamps it; the costs read the
        actions as given: float32 in float32, an integer action in float64, where Gymnasium's may wrap around: see the
        module). ShapeError for another shape, InvalidArgumentError for complex or text actions; an
        environment's NaN (or beyond 1e10 after clamping) action steps it with zero controls, as MuJoCo, with one
        ActionWarning naming the environments (see the module)."""
        if not self._started:
            raise InvalidStateError("step before reset: call env.reset() first")
        a = self._checked(actions)
        N, mode = self.num_envs, self.autoreset_mode
        reward, terminated, truncated = np.zeros(N), np.zeros(N, bool), np.zeros(N, bool)
        resetting = mode != AutoresetMode.SAME_STEP and bool(self._autoreset.any())
        if mode == AutoresetMode.DISABLED and resetting:
            raise InvalidStateError(f"environments {np.flatnonzero(self._autoreset).tolist()} ended and autoreset_mode "
                                    "is Disabled: reset them with reset(options={'reset_mask': ...}) first")
        info = {}
        if resetting:                                  # NEXT_STEP: drawn now, their forward pass in the step's call
            reset, idx = np.flatnonzero(self._autoreset), np.flatnonzero(~self._autoreset)
            self._draw_resets(reset)
            a = a[idx]
        else:
            reset, idx = None, self._every
        reset_observed = None
        if len(idx):
            step_info, r, term, trunc, done, reset_observed = self._step_envs(idx, a, reset)
        if resetting:
            info = self._observe_resets(reset, reset_observed)
        if len(idx):
            reward[idx], terminated[idx], truncated[idx] = r, term, trunc
            if self.autoreset_mode == AutoresetMode.SAME_STEP and done.any():
                ended = idx[done]
                final_info = self._vector_info({k: v[done] for k, v in step_info.items()}, ended)
                final_obs = np.full(N, None, dtype=object)
                for i in ended:
                    final_obs[i] = self._obs[i].copy()
                mask = np.zeros(N, bool)
                mask[ended] = True
                step_info = {k: np.where(_widen(~done, v), v, 0) for k, v in step_info.items()}
                info = _merged(info, self._vector_info(step_info, idx, present=~done))
                info.update({"final_obs": final_obs, "_final_obs": mask, "final_info": final_info,
                             "_final_info": mask.copy()})
                info = _merged(info, self._reset_envs(ended))
            else:
                info = _merged(info, self._vector_info(step_info, idx))
        self._autoreset = terminated | truncated
        return self._obs.copy(), reward, terminated, truncated, info

    def _checked(self, actions) -> np.ndarray:
        """actions as an (N, nu) float array (float32 kept: Gymnasium's costs are computed in the actions' dtype;
        integers and bools as float64: see the module); InvalidArgumentError for another kind (complex, text)."""
        a = np.asarray(actions)
        shape = (self.num_envs, self.model.nu)
        if a.shape != shape:
            raise ShapeError(f"actions must have shape {shape} (num_envs, action size), got {a.shape}")
        if a.dtype.kind not in "fiub":
            raise InvalidArgumentError(f"actions must be real numbers (a float, integer or bool array), got dtype "
                                       f"{a.dtype}")
        return a if a.dtype.kind == "f" else a.astype(np.float64)

    def _applied(self, idx: np.ndarray, ctrl: np.ndarray) -> np.ndarray:
        """The controls mj_fwdActuation applies for d.ctrl = ctrl (n, nu) of environments idx: clamped to ctrlrange where
        ctrllimited, an environment's all zero where one clamped control is bad (NaN or |u| > MAXVAL: mju_isBad,
        mjWARN_BADCTRL); one ActionWarning naming the environments whose actions are not finite or beyond MAXVAL."""
        u = np.clip(ctrl, self._ctrl_low, self._ctrl_high)
        if np.abs(u).max(initial=0.0) <= MAXVAL and np.abs(ctrl).max(initial=0.0) <= MAXVAL:
            return u                                                            # NaN compares False: below
        bad = ~(np.abs(u) <= MAXVAL).all(axis=1)
        odd = ~(np.abs(ctrl) <= MAXVAL).all(axis=1)
        if odd.any():
            zeroed, clamped = idx[bad].tolist(), idx[odd & ~bad].tolist()
            parts = ([f"{zeroed} step with every control zero (a NaN, or beyond {MAXVAL:g} after clamping to "
                      "ctrlrange: MuJoCo's mjWARN_BADCTRL)"] if zeroed else []) + \
                    ([f"{clamped} step with their controls clamped to ctrlrange"] if clamped else [])
            warnings.warn(f"actions of environments {idx[odd].tolist()} are NaN, infinite or beyond {MAXVAL:g}: "
                          f"{'; '.join(parts)}; their rewards are computed from the actions as given", ActionWarning,
                          stacklevel=4)
        return np.where(bad[:, None], 0.0, u)

    def _step_envs(self, idx: np.ndarray, action: np.ndarray, reset: np.ndarray | None = None):
        """Step environments idx frame_skip frames, the forward pass of the environments `reset` (drawn) in the same
        call: (info, reward, terminated, truncated, done) over idx, and the observed fields of `reset` (None: not
        computed)."""
        s, task = self._state, self.task
        if len(idx) == self.num_envs:
            before = Batch(s.q, s.qd, s.ctrl, s.observed)
            warm = self._warm
        else:
            before = Batch(s.q[idx], s.qd[idx], s.ctrl[idx], {k: v[idx] for k, v in s.observed.items()})
            warm = self._warm[idx]
        x_before = task.before(before)
        ctrl = action.astype(np.float64)
        q, qd, warm, observed, failed, reset_observed = self._frames(before.q, before.qd, self._applied(idx, ctrl),
                                                                     warm, reset)
        after = Batch(q, qd, ctrl, observed)
        reward, terminated, info = task.outcome(after, x_before, action)
        obs = task.observation(after)
        self._elapsed[idx] += 1
        limit = self.max_episode_steps
        truncated = self._elapsed[idx] >= limit if limit is not None else np.zeros(len(idx), bool)
        if failed:
            bad = np.array(sorted(failed))
            obs[bad], reward[bad], terminated[bad], truncated[bad] = self._obs[idx[bad]], 0.0, False, True
            info["diverged"] = np.zeros(len(idx), bool)
            info["diverged"][bad] = True
            info["divergence"] = np.array([failed.get(n, "") for n in range(len(idx))], dtype=object)
        self._store(idx, after, warm, obs)
        return info, reward, terminated, truncated, terminated | truncated, reset_observed

    def _frames(self, q, qd, ctrl, warm, reset=None):
        """frame_skip frames from states (q (n, nq), qd (n, nv)) with ctrl (n, nu) held: (q, qd, warm start, the observed
        fields of the last frame, {state: failure message}, the observed fields of the forward pass of the environments
        `reset` at their drawn states, or None). One compiled call for every frame and those forward passes
        (integrators.step_frames, forward_only); where it does not take them (a state diverged), frame by frame with
        step_result reporting per state, a failed state stepped on as a rest state (the autoreset resets it), the
        forward passes left to the caller: the same numbers either way."""
        task, n = self.task, len(q)
        if reset is not None and len(reset) and task.observe:
            s, extra = self._state, len(reset)
            only = np.zeros(n + extra, bool)
            only[n:] = True
            r = integrators.step_frames(self.model, np.concatenate((q, s.q[reset])), np.concatenate((qd, s.qd[reset])),
                                        task.frame_skip, ctrl=np.concatenate((ctrl, s.ctrl[reset])),
                                        qacc_warmstart=np.concatenate((warm, self._warm[reset])), observe=task.observe,
                                        forward_only=only)
            if r is not None:
                return (r.q[:n], r.qd[:n], r.qacc_warmstart[:n], {k: v[:n] for k, v in r.observed.items()}, {},
                        {k: v[n:] for k, v in r.observed.items()})
        else:
            r = integrators.step_frames(self.model, q, qd, task.frame_skip, ctrl=ctrl, qacc_warmstart=warm,
                                        observe=task.observe)
            if r is not None:
                return r.q, r.qd, r.qacc_warmstart, dict(r.observed), {}, None
        failed = {}
        for frame in range(task.frame_skip):
            last = frame == task.frame_skip - 1
            kw = {"observe": task.observe} if last and task.observe else {}
            r = integrators.step_result(self.model, q, qd, ctrl=ctrl, qacc_warmstart=warm, on_divergence="report", **kw)
            q, qd, warm = r.q, r.qd, r.qacc_warmstart
            for n in r.status.failed:
                failed.setdefault(n, r.status.messages[n])
                q[n], qd[n], warm[n] = task.init_qpos, 0.0, 0.0      # stepped on as a rest state, then reset
        return q, qd, warm, dict(r.observed) if task.observe else {}, failed, None

    def _store(self, idx, after: Batch, warm, obs) -> None:
        """The stepped environments' new state, warm start and observation."""
        s = self._state
        at = slice(None) if len(idx) == self.num_envs else idx           # every one: a copy, not a scatter
        s.q[at], s.qd[at], s.ctrl[at], self._warm[at], self._obs[at] = after.q, after.qd, after.ctrl, warm, obs
        for k, v in after.observed.items():
            s.observed[k][at] = v

    def _vector_info(self, values: dict, idx: np.ndarray, present=None) -> dict:
        """Gymnasium's vector info: for each name an (N,) array with the values of environments idx and a mask
        "_name" (True where present); none when no environment has them (as SyncVectorEnv's _add_info, which adds a
        name only with an environment's value)."""
        out = {}
        if present is not None and not np.any(present):
            return out
        every = present is None and len(idx) == self.num_envs               # every environment's value: copies
        for k, v in values.items():
            v = np.asarray(v)
            if every:
                out[k], out["_" + k] = v.copy(), np.ones(self.num_envs, bool)
                continue
            full = np.zeros((self.num_envs,) + v.shape[1:], v.dtype) if v.dtype != object else \
                np.full(self.num_envs, None, object)
            full[idx] = v
            mask = np.zeros(self.num_envs, bool)
            mask[idx] = True if present is None else present
            out[k], out["_" + k] = full, mask
        return out


def _merged(info: dict, new: dict) -> dict:
    """Two vector infos as one: a name in both takes each environment's value from the one whose mask holds it."""
    if not info:
        return dict(new)
    out = dict(info)
    for k, v in new.items():
        if k.startswith("_"):
            continue
        if k in info and "_" + k in info:
            mask = new["_" + k]
            out[k], out["_" + k] = np.where(_widen(mask, v), v, info[k]), mask | info["_" + k]
        else:
            out[k], out["_" + k] = v, new["_" + k]
    return out


def _widen(mask: np.ndarray, v: np.ndarray) -> np.ndarray:
    """mask (n,) broadcast against v (n, ...)."""
    return mask.reshape(mask.shape + (1,) * (np.ndim(v) - 1))
