// physai lab: the transport (Pause/Run, Step, Reset) and the speed readout. Simulated time follows the wall clock
// (loop.js advances by the real time since the last frame) unless the lab fixes "frame_time"; when the browser cannot
// keep up, the speed shows how far behind real time the simulation runs.
import { applySelects } from './controls.js';
import { afterChange, showReplay, stepOnce } from './loop.js';
import { run } from './scripts.js';

/** Pause or run (the button's label says what a press does). */
export function setPaused(state, paused) {
  state.paused = paused;
  state.simDebt = 0;
  state.page.pause.textContent = paused ? 'Run' : 'Pause';
  state.speedWindow.wall = state.speedWindow.simulated = 0;      // a pause starts the speed's measurement afresh
  state.page.speed.textContent = '';
}

/** One mj_step (the lab's control script first), paused. */
export function stepButton(state) {
  setPaused(state, true);
  stepOnce(state);
  afterChange(state, false);
}

/** Back to the start: mj_resetData, the lab's setup, its selects' current choices; time 0 (a replayed run's first
 * state), trail and plots cleared. */
export function reset(state) {
  state.mujoco.mj_resetData(state.model, state.data);
  run(state, 'setup', state.scripts.setup);
  applySelects(state);
  if (state.replay) showReplay(state, state.replay.t[0]);
  afterChange(state, true);
}

/** The buttons into the header, wired to the state. */
export function buildTransport(state) {
  const { pause, step, reset: resetButton } = state.page;
  pause.addEventListener('click', () => setPaused(state, !state.paused));
  step.addEventListener('click', () => stepButton(state));
  resetButton.addEventListener('click', () => reset(state));
  for (const b of [pause, step, resetButton]) b.disabled = false;
}

/** The speed readout: simulated over wall time of the last second or so, shown when below real time. */
export function trackSpeed(state, wall, simulated) {
  const s = state.speedWindow;
  s.wall += wall;
  s.simulated += simulated;
  if (s.wall < 1.0) return;
  state.speed = s.simulated / s.wall;
  s.wall = s.simulated = 0;
  const fixed = state.spec.frame_time !== undefined;            // a lab's own pace is no lag
  state.page.speed.textContent = !fixed && state.speed < 0.95 ? `speed ${state.speed.toFixed(2)}× real time` : '';
}
