// physai lab: the simulation and the frame loop. Each frame steps until simulated time advances by the wall clock's time
// since the last frame (at most MAX_FRAME_WALL, so a hidden tab does not run away; or by the lab's fixed "frame_time"),
// runs mj_forward, and updates the readouts, plots, trail and geoms. A lab that replays a physai run (its `replay`
// field) steps nothing: simulated time advances alike and the run's saved state at or before it is shown.
import { printed, readValues } from './readouts.js';
import { drawScene } from './scene.js';
import { report, run } from './scripts.js';
import { trackSpeed } from './transport.js';

const MAX_FRAME_WALL = 0.1;             // [s] the most wall time one frame makes up for
const MAX_STEPS_PER_FRAME = 20000;

/** The index of the replayed run's last saved state at or before time t [s] (its first before its start). */
function stateAt(replay, t) {
  let lo = 0, hi = replay.t.length - 1;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (replay.t[mid] <= t) lo = mid; else hi = mid - 1;
  }
  return lo;
}

/** The replayed run at time t [s]: data.time = t, qpos and qvel its saved state at or before t, then mj_forward. */
export function showReplay(state, t) {
  const { mujoco, model, data, replay } = state;
  const k = stateAt(replay, t);
  data.time = t;
  data.qpos.set(replay.q[k]);
  data.qvel.set(replay.qd[k]);
  mujoco.mj_forward(model, data);
}

/** The lab's `control` script, then one mj_step; replaying a run: its next saved state. */
export function stepOnce(state) {
  const { replay, data } = state;
  if (replay) {
    showReplay(state, replay.t[Math.min(stateAt(replay, data.time) + 1, replay.t.length - 1)]);
    return;
  }
  run(state, 'control', state.scripts.control);
  state.mujoco.mj_step(state.model, state.data);
}

function advance(state, dt) {
  const { mujoco, model, data, replay } = state;
  if (replay) {                                         // past the run's end, it starts again
    const t = data.time + dt;
    showReplay(state, t > replay.t[replay.t.length - 1] ? replay.t[0] : t);
    state.dirty = true;
    return;
  }
  state.simDebt += dt;
  const h = model.opt.timestep;
  let n = 0;
  while (state.simDebt > 0.5 * h && n < MAX_STEPS_PER_FRAME) {
    const t = data.time;
    stepOnce(state);
    const moved = data.time - t;
    state.simDebt -= moved > 0 ? moved : h;   // a script that resets time still pays for the step
    n++;
  }
  if (n === MAX_STEPS_PER_FRAME) state.simDebt = 0;
  mujoco.mj_forward(model, data);
  state.dirty = true;
}

/** After a button, select or hook call changed the state or model: mj_forward and draw. */
export function afterChange(state, jump = true) {
  state.mujoco.mj_forward(state.model, state.data);
  state.simDebt = 0;
  if (jump) state.view.trail?.clear();    // a teleport, not a motion: start the trail afresh
  state.dirty = true;
  render(state);
}

/** Draw a frame: readouts, plots, trail and the time when the simulation changed, then the 3D view. */
export function render(state) {
  const { data, plots, view } = state;
  if (state.dirty) {
    if (data.time < state.lastTime) { view.trail?.clear(); for (const p of plots) p.clear(); }
    const values = readValues(state), text = printed(state, values);
    for (const r of state.readouts) r.cell.textContent = text[r.label];
    if (data.time !== state.lastTime) {
      for (const p of plots) p.sample(data.time);
      view.trail?.add();
    }
    for (const p of plots) p.draw(data.time);
    state.page.time.textContent = `t = ${data.time.toFixed(2)} s`;
    state.lastTime = data.time;
    state.dirty = false;
  }
  drawScene(state);
}

/** Run a frame on every animation frame: advance by the wall clock (or frame_time) unless paused, draw, count. */
export function startFrames(state) {
  const frame = (now) => {
    try {
      const wall = state.lastFrame === null ? 0 : Math.min((now - state.lastFrame) / 1000, MAX_FRAME_WALL);
      state.lastFrame = now;
      if (!state.paused) {
        const t0 = state.data.time;
        advance(state, state.spec.frame_time ?? wall);
        trackSpeed(state, wall, Math.max(state.data.time - t0, 0));
      }
      render(state);
      state.frames++;
    } catch (error) {
      report(state, 'frame', error);
    }
    requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
}
