// physai lab: window.lab, the hook through which tests (tests/test_lab.py) and scripts/lab_screenshot.py drive the page.
//   await lab.ready; lab.pause(); lab.resume(); lab.reset(); lab.press(label); lab.select(label, value); lab.step(n) -> lab.state()
//   lab.readouts() (values by label), lab.printed() (their text), lab.errors, lab.frames, lab.trailPoints, lab.geoms
import { press, select } from './controls.js';
import { afterChange, stepOnce } from './loop.js';
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
  });
  Object.defineProperty(hook, 'paused', { get: () => state.paused });
  Object.defineProperty(hook, 'speed', { get: () => state.speed });
  Object.defineProperty(hook, 'trailPoints', { get: () => (state.view.trail ? state.view.trail.count : 0) });
  Object.defineProperty(hook, 'geoms', {
    get: () => state.view.geoms.map(({ i, mesh }) => ({ id: i, type: model.geom_type[i], vertices: mesh.geometry.attributes.position.count })),
  });
}
