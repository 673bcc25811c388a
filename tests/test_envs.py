"""physai.envs against Gymnasium's own MuJoCo v5 environments, computed live: gymnasium.make_vec(id, num_envs=8,
vectorization_mode="sync") and physai.envs.make_vec(id, num_envs=8) under the same seed and the same random actions.

Two comparisons per task:
- synced: before each step physai's environments take the state of Gymnasium's (qpos, qvel, qacc_warmstart, ctrl and
  the body quantities MjData holds), so every step, reward, termination, truncation and autoreset (with its random
  draws) is checked from the same state, over the whole run;
- free-running: both run on their own; this holds within 1e-8 as long as the task does not amplify the ~1e-15
  differences of one step (contact-rich and chaotic tasks do: see docs/envs.md).
"""

import inspect
import os
import warnings
from pathlib import Path

import gymnasium
import numpy as np
import pytest

import physai.envs
import physai.envs.vector
from physai.envs.tasks import TASKS
from physai.exceptions import ActionWarning, InvalidArgumentError, InvalidStateError, RenderError, ShapeError, UnknownModelError
from physai.integrators import Trajectory

N, SEED, RTOL = 8, 3, 1e-8


def _relative(a, b) -> float:
    """max |a - b| / max(1, |b|) (relative for large values, absolute near zero)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b) / np.maximum(1.0, np.abs(b)))) if a.size else 0.0


def _sync(p, g) -> None:
    """physai's environments set to the state of Gymnasium's: qpos, qvel, warm start, ctrl, observed quantities."""
    s = p._state
    for i, env in enumerate(g.envs):
        d = env.unwrapped.data
        s.q[i], s.qd[i], p._warm[i], s.ctrl[i] = d.qpos, d.qvel, d.qacc_warmstart, d.ctrl
        for name in s.observed:
            s.observed[name][i] = getattr(d, name)


def _compare(task, steps, synced, kwargs=None, autoreset_mode=None, scale=1.0):
    """Run Gymnasium's and physai's vector envs side by side: the worst relative error of observations and rewards,
    the number of episodes that ended, and where termination or truncation first differed (None if never)."""
    kwargs = kwargs or {}
    vk = {} if autoreset_mode is None else {"autoreset_mode": autoreset_mode}
    g = gymnasium.make_vec(task, num_envs=N, vectorization_mode="sync", vector_kwargs=vk, **kwargs)
    p = physai.envs.make_vec(task, num_envs=N, **vk, **kwargs)
    assert p.single_observation_space == g.single_observation_space
    assert p.single_action_space == g.single_action_space
    og, _ = g.reset(seed=SEED)
    op, _ = p.reset(seed=SEED)
    worst, ended = _relative(op, og), 0
    rng = np.random.default_rng(SEED)
    low, high = g.single_action_space.low, g.single_action_space.high
    for k in range(steps):
        a = (scale * rng.uniform(low, high, size=(N, len(low)))).astype(np.float32)
        if synced:
            _sync(p, g)
        og, rg, tg, ug, ig = g.step(a)
        op, rp, tp, up, ip = p.step(a)
        worst = max(worst, _relative(op, og), _relative(rp, rg))
        if "final_obs" in ig:
            done = ig["_final_obs"]
            assert np.array_equal(done, ip["_final_obs"])
            worst = max(worst, _relative(np.stack(ip["final_obs"][done]), np.stack(ig["final_obs"][done])))
        if not (np.array_equal(tp, tg) and np.array_equal(up, ug)):
            return worst, ended, k
        ended += int(np.sum(tg | ug))
    return worst, ended, None


@pytest.mark.parametrize("task", sorted(TASKS))
def test_synced_matches_gymnasium(task):
    """100 steps of each task from Gymnasium's state at every step: observations and rewards within 1e-8."""
    worst, _, differ = _compare(task, 100, synced=True)
    assert differ is None and worst < RTOL, (task, worst, differ)


@pytest.mark.parametrize("task", sorted(TASKS))
def test_synced_matches_gymnasium_1000(task):
    """1,000 steps (several episodes ended and autoreset) from Gymnasium's state at every step."""
    worst, ended, differ = _compare(task, 1000, synced=True)
    assert differ is None and worst < RTOL, (task, worst, differ, ended)


@pytest.mark.parametrize("task", ["Hopper-v5", "InvertedPendulum-v5", "Walker2d-v5"])
def test_free_running_matches_gymnasium(task):
    """1,000 steps run on their own (no syncing), episodes ending and autoreset on both sides at the same steps."""
    worst, ended, differ = _compare(task, 1000, synced=False)
    assert differ is None and worst < RTOL and ended > 0, (task, worst, differ, ended)


def test_humanoid_free_running_matches_gymnasium():
    """Humanoid-v5 run on its own for 200 steps (episodes end and autoreset): its reset states' observed fields (cinert,
    cvel, cfrc_ext, the folded forward pass of step_frames' forward_only) feed the next step's observation, which the
    synced tests overwrite from Gymnasium's state; here a wrong reset pass shows in the next observation (Ant's own
    free run is chaotic: it parts from Gymnasium's by rounding within 200 steps, with or without a reset)."""
    worst, ended, differ = _compare("Humanoid-v5", 200, synced=False)
    assert differ is None and worst < RTOL and ended > 0, (worst, differ, ended)


@pytest.mark.parametrize("mode", ["SameStep", "Disabled"])
def test_autoreset_modes(mode):
    """SAME_STEP (final_obs and the reset observation in one step) and DISABLED as Gymnasium's, on a task that ends
    often; DISABLED: stepping an ended environment is refused by name, a masked reset restarts it."""
    if mode == "SameStep":
        worst, ended, differ = _compare("InvertedPendulum-v5", 300, synced=False, autoreset_mode=mode)
        assert differ is None and worst < RTOL and ended > 10, (worst, differ, ended)
        return
    p = physai.envs.make_vec("InvertedPendulum-v5", num_envs=N, autoreset_mode=mode)
    p.reset(seed=SEED)
    a = np.full((N, 1), 3.0, np.float32)
    while True:
        _, _, terminated, truncated, _ = p.step(a)
        if (terminated | truncated).any():
            break
    with pytest.raises(InvalidStateError):
        p.step(a)
    p.reset(options={"reset_mask": terminated | truncated})
    p.step(a)


def test_keyword_arguments_as_gymnasium():
    """Reward weights, reset noise, healthy ranges and the full observation as Gymnasium takes them."""
    kwargs = dict(ctrl_cost_weight=0.5, reset_noise_scale=0.05, healthy_angle_range=(-0.5, 0.5), frame_skip=3,
                  exclude_current_positions_from_observation=False)
    worst, ended, differ = _compare("Hopper-v5", 200, synced=False, kwargs=kwargs)
    assert differ is None and worst < RTOL and ended > 0, (worst, differ, ended)


def test_out_of_range_actions_as_gymnasium():
    """Actions 3 times the range: ctrl clamped by the simulation, the control cost of the actions as given."""
    worst, _, differ = _compare("Walker2d-v5", 100, synced=True, scale=3.0)
    assert differ is None and worst < RTOL, (worst, differ)


def test_registered_with_gymnasium():
    env = gymnasium.make_vec("physai/Hopper-v5", num_envs=4)
    assert isinstance(env.unwrapped, physai.envs.PhysaiVectorEnv)
    assert env.unwrapped.max_episode_steps == gymnasium.spec("Hopper-v5").max_episode_steps
    obs, _ = env.reset(seed=0)
    assert obs.shape == (4,) + gymnasium.make("Hopper-v5").observation_space.shape
    assert gymnasium.make_vec("physai/Hopper-v5", num_envs=2, render_mode="rgb_array").render_mode == "rgb_array"


def test_a_diverging_environment_is_reset_alone():
    """A state that stops being finite ends its episode (truncated, info["diverged"]) and is reset next step; the
    other environments step exactly as in a run without it."""
    ref = physai.envs.make_vec("Hopper-v5", num_envs=4)
    env = physai.envs.make_vec("Hopper-v5", num_envs=4)
    ref.reset(seed=1)
    env.reset(seed=1)
    env._state.qd[2, 3] = 1e300                                     # environment 2's thigh spins beyond any float
    a = np.zeros((4, 3), np.float32)
    o_ref, r_ref, *_ = ref.step(a)
    obs, reward, terminated, truncated, info = env.step(a)
    assert truncated[2] and not terminated[2] and info["diverged"][2] and info["_diverged"].all()
    assert "state" in info["divergence"][2] and np.isfinite(obs).all()
    others = [0, 1, 3]
    assert np.array_equal(obs[others], o_ref[others]) and np.array_equal(reward[others], r_ref[others])
    obs, reward, terminated, truncated, info = env.step(a)             # next step: reset (NEXT_STEP autoreset)
    assert reward[2] == 0.0 and not truncated[2] and np.isfinite(obs).all()


def _nonfinite_equal(a, b) -> bool:
    """Whether a and b hold NaN at the same places and the same infinities at the same places."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    return np.array_equal(np.isnan(a), np.isnan(b)) and np.array_equal(np.where(np.isinf(a), a, 0), np.where(np.isinf(b), b, 0))


def _finite_relative(a, b) -> float:
    """_relative over b's finite entries; inf where a and b are not NaN or infinite at the same places."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    return _relative(a[np.isfinite(b)], b[np.isfinite(b)]) if _nonfinite_equal(a, b) else np.inf


def _bad_actions_run(task, bad, monkeypatch, path, kwargs=None, steps=20, at=(2, 7)):
    """Gymnasium's and physai's vector envs run side by side (free, not synced) under random actions, bad(a) setting bad
    values in the actions of steps `at`; path "fallback": physai frame by frame (step_frames declining every step).
    The worst relative error of observations, rewards and info over finite values (inf where NaN or infinities differ
    or the info's names and masks differ), whether terminations and truncations were equal throughout, and the
    ActionWarnings' messages of each step."""
    kwargs = kwargs or {}
    declined = []
    if path == "fallback":
        monkeypatch.setattr(physai.envs.vector.integrators, "step_frames", lambda *a, **k: declined.append(1))
    g = gymnasium.make_vec(task, num_envs=N, vectorization_mode="sync", **kwargs)
    p = physai.envs.make_vec(task, num_envs=N, **kwargs)
    (og, _), (op, _) = g.reset(seed=SEED), p.reset(seed=SEED)
    worst, equal, warned = _relative(op, og), True, []
    rng = np.random.default_rng(SEED)
    low, high = g.single_action_space.low, g.single_action_space.high
    for k in range(steps):
        a = rng.uniform(low, high, size=(N, len(low))).astype(np.float32)
        if k in at:
            bad(a)
        og, rg, tg, ug, ig = g.step(a)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            op, rp, tp, up, ip = p.step(a)
        warned.append([str(w.message) for w in caught if issubclass(w.category, ActionWarning)])
        worst = max(worst, _relative(op, og), _finite_relative(rp, rg))
        for name in ig:
            mine = ip.get(name)
            if mine is None or (name.startswith("_") and not np.array_equal(mine, ig[name])):
                worst = np.inf
            elif not name.startswith("_"):
                worst = max(worst, _finite_relative(mine[ig["_" + name]], ig[name][ig["_" + name]]))
        worst = worst if set(ip) == set(ig) else np.inf
        equal = equal and np.array_equal(tp, tg) and np.array_equal(up, ug)
    assert path != "fallback" or len(declined) == steps
    return worst, equal, warned


def _nan_inf_huge(a):
    """Environment 1 one NaN, 2 a -inf, 3 1e11 (float32: beyond mjMAXVAL 1e10), 4 every entry NaN, 5 +inf."""
    a[1, 0], a[2, -1], a[3, 0], a[4], a[5, 0] = np.nan, -np.inf, 1e11, np.nan, np.inf


@pytest.mark.parametrize("path", ["frames", "fallback"])
@pytest.mark.parametrize("task", ["Hopper-v5", "Ant-v5"])
def test_bad_actions_as_gymnasium(task, path, monkeypatch):
    """Issue T: a NaN, infinite or huge action faults its own environment only, as Gymnasium's env steps it (MuJoCo's
    mj_fwdActuation clamps ctrl to ctrlrange, then takes every control as zero where one is NaN or beyond 1e10; the
    control cost reads the action: NaN, -inf, 1e21): observations, rewards (NaN and infinite where Gymnasium's are),
    terminations, info, and the steps after, free-running 20 steps with bad actions at steps 2 and 7, on the compiled
    frame path and frame by frame; one ActionWarning at each of those steps naming environments 1 to 5."""
    worst, equal, warned = _bad_actions_run(task, _nan_inf_huge, monkeypatch, path)
    assert equal and worst < RTOL, (worst, equal)
    assert [len(w) for w in warned] == [int(k in (2, 7)) for k in range(20)], warned
    assert "environments [1, 2, 3, 4, 5]" in warned[2][0] and "[1, 4] step with every control zero" in warned[2][0]


@pytest.mark.parametrize("path", ["frames", "fallback"])
def test_unclamped_control_beyond_maxval_as_gymnasium(path, tmp_path, monkeypatch):
    """Hopper with ctrllimited="false": a finite action beyond mjMAXVAL (1e11, -1e11) is a bad control to MuJoCo (its
    environment steps with every control zero, the cost of the action as given, finite); the others are untouched."""
    xml = Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets" / "hopper.xml"
    path_xml = tmp_path / "hopper_unlimited.xml"
    path_xml.write_text(xml.read_text().replace('ctrllimited="true"', 'ctrllimited="false"'))

    def huge(a):
        a[1, 0], a[2, 2] = 1e11, -1e11

    worst, equal, warned = _bad_actions_run("Hopper-v5", huge, monkeypatch, path, kwargs={"xml_file": str(path_xml)})
    assert equal and worst < RTOL, (worst, equal)
    assert "environments [1, 2]" in warned[2][0] and "[1, 2] step with every control zero" in warned[2][0]


@pytest.mark.parametrize("task", ["Hopper-v5", "Reacher-v5"])
def test_integer_actions_cost_in_float64(task):
    """Integer and bool actions (the action space is float32; a user's arrays) are taken as their float64 values. Where
    Gymnasium's integer squares hold (int64, int32 and bool actions of |a| <= 3), observations, terminations, rewards
    and reward_ctrl within RTOL of Gymnasium's live. uint8 actions, small then with a 16 and a 255: Gymnasium squares
    them in uint8, which wraps (16^2 = 0, 255^2 = 1; Reacher's negated cost at once, to ~1.8e19: shown here), physai's
    reward_ctrl is the float64 cost computed here from the action (envs.vector's docstring states the difference);
    the observations stay Gymnasium's."""
    g = gymnasium.make_vec(task, num_envs=N, vectorization_mode="sync")
    p = physai.envs.make_vec(task, num_envs=N)
    g.reset(seed=SEED), p.reset(seed=SEED)
    rng, nu = np.random.default_rng(SEED), g.single_action_space.shape[0]
    env = g.envs[0].unwrapped
    weight = env._ctrl_cost_weight if task == "Hopper-v5" else env._reward_control_weight
    for dtype in (np.int64, np.int32, np.bool_):
        a = rng.integers(-3, 4, size=(N, nu)).astype(dtype)
        og, rg, tg, ug, ig = g.step(a)
        op, rp, tp, up, ip = p.step(a)
        assert _relative(op, og) < RTOL and np.array_equal(tp, tg) and np.array_equal(up, ug), dtype
        assert _relative(rp, rg) < RTOL and _relative(ip["reward_ctrl"], ig["reward_ctrl"]) < RTOL, dtype
    small = rng.integers(0, 2, size=(N, nu)).astype(np.uint8)
    small[0] = [1] + [0] * (nu - 1)
    large = small.copy()
    large[1, 0], large[2, 0] = 16, 255
    for a, rows in ((small, [0] if task == "Reacher-v5" else []), (large, [1, 2])):   # the rows where Gymnasium wraps
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")                            # Gymnasium's wrapped arithmetic may warn
            og, _, tg, ug, ig = g.step(a)
        op, _, tp, up, ip = p.step(a)
        exact = weight * np.sum(a.astype(np.float64) ** 2, axis=1)
        assert _relative(op, og) < RTOL and np.array_equal(tp, tg) and np.array_equal(up, ug)
        assert ip["reward_ctrl"].dtype == np.float64 and _relative(ip["reward_ctrl"], -exact) < RTOL
        assert (np.abs(ig["reward_ctrl"][rows] + exact[rows]) > 1e-3 * exact[rows]).all(), ig["reward_ctrl"]


def test_bad_input_is_named():
    env = physai.envs.make_vec("Hopper-v5", num_envs=2)
    with pytest.raises(InvalidStateError):
        env.step(np.zeros((2, 3)))                                  # before reset
    env.reset(seed=0)
    with pytest.raises(ShapeError):
        env.step(np.zeros((2, 4)))
    with pytest.raises(ShapeError):
        env.step(np.zeros(3))
    for kind in (complex, str):
        with pytest.raises(InvalidArgumentError, match="real numbers"):
            env.step(np.zeros((2, 3), kind))
    with pytest.raises(UnknownModelError):
        physai.envs.make_vec("Hoppr-v5", num_envs=2)
    with pytest.raises(InvalidArgumentError):
        physai.envs.make_vec("Hopper-v5", num_envs=2, ctrl_cost=1.0)
    with pytest.raises(InvalidArgumentError):
        physai.envs.make_vec("Hopper-v5", num_envs=0)
    for bad in (dict(max_episode_steps=0), dict(max_episode_steps=2.5), dict(frame_skip=2.5), dict(frame_skip=True)):
        with pytest.raises(InvalidArgumentError):
            physai.envs.make_vec("Hopper-v5", num_envs=2, **bad)
    for seed in (-1, 2.5, "3", [0, -1]):
        with pytest.raises(InvalidArgumentError):
            env.reset(seed=seed)
    obs, _ = env.reset(seed=np.int64(3))
    assert np.array_equal(obs, env.reset(seed=3)[0])


def test_reset_observes_the_actuator_force_as_mj_forward(tmp_path):
    """A reset's qfrc_actuator is mj_forward's at the reset state, not zero: Humanoid-v5 with its motors made position
    servos (kp 10: a force at ctrl 0) in a copy of its file; the reset observations equal Gymnasium's own."""
    text = (Path(physai.envs.tasks.assets_dir()) / "humanoid.xml").read_text().replace("<motor ", '<position kp="10" ')
    path = tmp_path / "humanoid_servos.xml"
    path.write_text(text)
    ours = physai.envs.make_vec("Humanoid-v5", num_envs=2, xml_file=str(path))
    theirs = gymnasium.make_vec("Humanoid-v5", num_envs=2, vectorization_mode="sync", xml_file=str(path))
    (obs, _), (expected, _) = ours.reset(seed=5), theirs.reset(seed=5)
    actuator = slice(22 + 23 + 130 + 78, 22 + 23 + 130 + 78 + 17)                  # qfrc_actuator[6:] in the observation
    assert np.abs(expected[:, actuator]).max() > 1.0
    assert np.abs(obs - expected).max() <= 1e-10 * max(1.0, np.abs(expected).max())


# ---- rendering ----

#: frames compared at this size [pixels] (small: fast)
W, H = 64, 48


@pytest.fixture
def egl(monkeypatch):
    """MUJOCO_GL=egl for this test when the process has none (physai's renderer and Gymnasium's read it when their first
    frame is drawn); a machine without EGL fails the tests that use it."""
    if not os.environ.get("MUJOCO_GL"):
        monkeypatch.setenv("MUJOCO_GL", "egl")


def _gymnasium_frame(g, q, qd, ctrl):
    """Gymnasium's own env.render() after set_state(q, qd) (its OpenGL context made current: physai's draws between)."""
    g.unwrapped.set_state(q, qd)
    g.unwrapped.data.ctrl[:] = ctrl
    viewer = g.unwrapped.mujoco_renderer.viewer
    if viewer is not None:
        viewer.make_context_current()
    return g.render()


@pytest.mark.parametrize("task", ["Ant-v5", "Hopper-v5", "Humanoid-v5"])
def test_render_matches_gymnasium(task, egl):
    """env.render() of environment 1 equals Gymnasium's frame of the same state (set_state), at the reset and after 10
    random steps: mean and max |difference| of the uint8 pixels within the bounds below (measured: 0 and 0)."""
    p = physai.envs.make_vec(task, num_envs=3, render_mode="rgb_array", render_env=1, width=W, height=H)
    g = gymnasium.make(task, render_mode="rgb_array", width=W, height=H)
    g.reset(seed=0)
    p.reset(seed=SEED)
    rng = np.random.default_rng(SEED)
    frames = []
    try:
        for k in range(2):
            s = p._state
            ours = p.render()
            theirs = _gymnasium_frame(g, s.q[1], s.qd[1], s.ctrl[1])
            assert ours.shape == (H, W, 3) and ours.dtype == np.uint8 and ours.std() > 5.0
            d = np.abs(ours.astype(int) - theirs.astype(int))
            assert d.mean() <= 0.5 and d.max() <= 8, (task, k, d.mean(), d.max())
            frames.append(ours)
            for _ in range(10):
                p.step(rng.uniform(-1, 1, size=(3, p.model.nu)).astype(np.float32))
    finally:
        p.close()
        g.close()
    assert not np.array_equal(frames[0], frames[1])                 # the frame follows the state


def test_render_arguments_are_named(egl, monkeypatch):
    """render_mode "human" and others, a render_env, camera or size out of range: InvalidArgumentError; render() of an
    env without render_mode: InvalidStateError; a MUJOCO_GL that gives no context: RenderError naming MUJOCO_GL."""
    for bad in (dict(render_mode="human"), dict(render_mode="depth_array"), dict(render_mode="rgb_array", render_env=2),
                dict(render_mode="rgb_array", camera_id=5), dict(render_mode="rgb_array", camera_name="nope"),
                dict(render_mode="rgb_array", camera_id=0, camera_name="track"), dict(render_mode="rgb_array", width=0)):
        with pytest.raises(InvalidArgumentError):
            physai.envs.make_vec("Ant-v5", num_envs=2, **bad)
    env = physai.envs.make_vec("Ant-v5", num_envs=2)
    env.reset(seed=0)
    with pytest.raises(InvalidStateError):
        env.render()
    env = physai.envs.make_vec("Ant-v5", num_envs=2, render_mode="rgb_array", width=W, height=H)
    assert env.metadata["render_fps"] == gymnasium.make("Ant-v5").metadata["render_fps"]
    env.reset(seed=0)
    monkeypatch.setenv("MUJOCO_GL", "no-such-backend")
    with pytest.raises(RenderError, match="MUJOCO_GL"):
        env.render()


def test_camera_configs_are_gymnasiums():
    """Each task's default_camera_config is DEFAULT_CAMERA_CONFIG of Gymnasium's *_v5.py (the class default)."""
    for name, cls in TASKS.items():
        theirs = inspect.signature(type(gymnasium.make(name).unwrapped).__init__).parameters["default_camera_config"]
        ours = cls.DEFAULTS["default_camera_config"]
        assert (ours is None) == (theirs.default is None), name
        if ours is not None:
            assert ours.keys() == theirs.default.keys(), name
            assert all(np.array_equal(ours[k], theirs.default[k]) for k in ours), name


# ---- recording ----

def test_recorded_episode_opens_in_the_viewer(tmp_path):
    """record_episode saves environment 1's episode: the viewer's loader reads it, its q is the env's states as the
    observations give them (the full positions observed: the same numbers), and its model file is the task's."""
    from physai import models
    from physai.lab.viewer import make_server

    env = physai.envs.make_vec("Hopper-v5", num_envs=2, exclude_current_positions_from_observation=False)
    seen, rng = [], np.random.default_rng(SEED)

    def policy(obs):
        seen.append(obs[1].copy())
        return rng.uniform(-1, 1, size=(2, 3)).astype(np.float32)

    path = tmp_path / "hopper.npz"
    run = physai.envs.record_episode(env, path, policy=policy, env_index=1, seed=SEED)
    back = Trajectory.load(path)
    nq = env.model.nq
    assert 2 < len(back.q) <= 1001 and len(seen) == len(back.q) - 1
    assert np.array_equal(back.q[:-1], np.array(seen)[:, :nq]) and np.array_equal(back.q, run.q)
    assert np.array_equal(back.t, np.arange(len(back.q)) * env.task.dt)
    mj, theirs = models.load(back.model), gymnasium.make("Hopper-v5").unwrapped.model
    for field in ("body_pos", "body_mass", "geom_size", "jnt_range", "actuator_gear"):
        assert np.array_equal(getattr(mj, field), getattr(theirs, field)), field
    server = make_server(back.model, back, 0)                      # the page's server takes the run and its model
    server.server_close()
    with pytest.raises(InvalidArgumentError):
        physai.envs.record_episode(physai.envs.make_vec("Hopper-v5", num_envs=2, autoreset_mode="SameStep"))


# ---- info ----

def _info_differences(ours: dict, theirs: dict, where: str = "info") -> list:
    """Where two vector infos differ: their names (masks "_name" included), a mask, a value's shape or dtype, or a value
    beyond RTOL (relative) where the mask holds; final_info compared the same way, final_obs where its mask holds."""
    out = [] if set(ours) == set(theirs) else [(where, "names", sorted(set(ours) ^ set(theirs)))]
    for name in set(ours) & set(theirs):
        a, b = ours[name], theirs[name]
        if isinstance(b, dict):
            out += _info_differences(a, b, f"{where}[{name!r}]")
            continue
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or a.dtype != b.dtype:
            out.append((where, name, a.shape, b.shape, a.dtype, b.dtype))
        elif name.startswith("_"):
            out += [] if np.array_equal(a, b) else [(where, name, a, b)]
        else:
            held = np.asarray(theirs["_" + name])
            if held.any() and _relative(np.stack(list(a[held])), np.stack(list(b[held]))) > RTOL:
                out.append((where, name, a[held], b[held]))
    return out


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
@pytest.mark.parametrize("task", ["Hopper-v5", "Humanoid-v5", "HumanoidStandup-v5", "InvertedPendulum-v5", "Reacher-v5"])
def test_info_as_gymnasium(task, mode):
    """The whole info of each step as SyncVectorEnv's (synced, 60 steps: episodes ending alone, and Reacher's all at
    once at its 50-step limit): the same names and masks, dtypes, values within 1e-8, final_info and final_obs of the
    environments that ended (SameStep: ended and reset in one step, the reset's info in place of the step's). The
    Humanoids' tendon_length and tendon_velocity: MjData's ten_length and ten_velocity (RK4: at its fourth stage)."""
    vk = {"autoreset_mode": mode}
    g = gymnasium.make_vec(task, num_envs=N, vectorization_mode="sync", vector_kwargs=vk)
    p = physai.envs.make_vec(task, num_envs=N, **vk)
    (_, ig), (_, ip) = g.reset(seed=SEED), p.reset(seed=SEED)
    assert _info_differences(ip, ig) == []
    rng, ended = np.random.default_rng(SEED), 0
    low, high = g.single_action_space.low, g.single_action_space.high
    for k in range(60):
        a = rng.uniform(low, high, size=(N, len(low))).astype(np.float32)
        _sync(p, g)
        *_, tg, ug, ig = g.step(a)
        *_, ip = p.step(a)
        assert _info_differences(ip, ig) == [], k
        ended += int(np.sum(tg | ug))
    assert ended > 0 or task == "HumanoidStandup-v5"                 # it never ends but at its 1000-step limit
