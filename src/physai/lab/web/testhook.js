// physai lab: window.lab, the hook through which tests (tests/test_lab.py) and scripts/lab_screenshot.py drive the page.
//   await lab.ready; lab.pause(); lab.resume(); lab.reset(); lab.press(label); lab.select(label, value); lab.step(n) -> lab.state()
//   lab.readouts() (values by label), lab.printed() (their text), lab.errors, lab.frames, lab.trailPoints, lab.geoms
//   lab.bodies() (each body's world position, physai's order); a lab that replays a run: lab.seek(t), lab.replay
import { press, select } from './controls.js';
import { afterChange, showReplay, stepOnce } from './loop.js';
import { printed, readValues } from './readouts.js';
import { reset, setPaused } from './transport.js';

/** The hook before loading: `ready` (settled by the returned settle/fail), the frame count and the errors. */
export function createHook(state) {
  let settle, fail;
  const hook = {
    ready: new Promise((resolve, reject) => { settle = resolve; fail = reject; }),
    errors: state.errors,
  };
  Object.defineProperty(hook, 'frames', { get: () => state.frames, enumerable: true });
  return { hook, settle, fail };
}

/** The hook's calls, once the lab has loaded. */
export function completeHook(hook, state) {
  const { spec, mujoco, model, data, lib, versions } = state;
  Object.assign(hook, {
    spec, mujoco, model, data, lib, versions,
    pause() { setPaused(state, true); },
    resume() { setPaused(state, false); },
    reset() { reset(state); return hook.state(); },
    step(n = 1) {
      for (let k = 0; k < n; k++) stepOnce(state);
      afterChange(state, false);
      return hook.state();
    },
    press: (label) => press(state, label),
    select: (label, value) => select(state, label, value),
    readouts: () => readValues(state),
    printed: () => printed(state, readValues(state)),
    state() { return { time: data.time, qpos: Array.from(data.qpos), qvel: Array.from(data.qvel) }; },
    // each body's world position [m] as drawn, physai's body order (MuJoCo's body b + 1 is physai's body b)
    bodies: () => Array.from({ length: model.nbody - 1 }, (_, b) => Array.from(data.xpos.slice(3 * (b + 1), 3 * (b + 2)))),
    // a replayed run at time t [s], paused: its saved state at or before t
    seek(t) {
      if (!state.replay) throw new Error('this lab replays no run (its replay field)');
      setPaused(state, true);
      showReplay(state, t);
      afterChange(state, true);
      return hook.state();
    },
  });
  Object.defineProperty(hook, 'paused', { get: () => state.paused });
  Object.defineProperty(hook, 'replay', {            // {duration [s], states} of a replayed run, else null
    get: () => state.replay && { duration: state.replay.t[state.replay.t.length - 1], states: state.replay.t.length },
  });
  Object.defineProperty(hook, 'speed', { get: () => state.speed });
  Object.defineProperty(hook, 'trailPoints', { get: () => (state.view.trail ? state.view.trail.count : 0) });
  Object.defineProperty(hook, 'geoms', {
    get: () => state.view.geoms.map(({ i, mesh }) => ({ id: i, type: model.geom_type[i], vertices: mesh.geometry.attributes.position.count })),
  });
}
