// physai lab: the page's entry. Loads /lab.json (the lesson's lab block), MuJoCo's WebAssembly build and the model,
// builds the page, runs `setup`, then runs the frame loop. Everything the modules share is one object, `state`,
// passed to each: scripts.js (compile, run, report errors), readouts.js, plots.js, scene.js (three.js view and trail),
// controls.js (buttons, selects), loop.js (stepping and drawing), transport.js (pause, step, reset, speed),
// testhook.js (window.lab).
import * as THREE from 'three';
import loadMujoco from '@mujoco/mujoco';
import { fetchModelFiles, loadModel, makeLib } from './lib.js';
import { applySelects, buildControls } from './controls.js';
import { render, showReplay, startFrames } from './loop.js';
import { buildPlots } from './plots.js';
import { buildReadouts } from './readouts.js';
import { buildScene } from './scene.js';
import { compile, report, run } from './scripts.js';
import { completeHook, createHook } from './testhook.js';
import { buildTransport } from './transport.js';

const PAGE_IDS = ['title', 'time', 'status', 'view', 'canvas', 'controls', 'readouts', 'plots', 'errors', 'note', 'versions',
  'pause', 'step', 'reset', 'speed'];

/** The running lab: the page's elements, MuJoCo, the spec, what was built from it, and the loop's variables. */
function createState() {
  return {
    page: Object.fromEntries(PAGE_IDS.map((id) => [id, document.getElementById(id)])),
    spec: null, mujoco: null, model: null, data: null, lib: null, versions: null,
    replay: null,                       // the physai run a lab's `replay` field names: {t, q, qd, dt}
    scripts: {},                        // compiled scripts: setup, control, controls by label
    readouts: [],                       // {label, fn, digits, format, cell}
    plots: [],                          // Plot
    view: null,                         // {renderer, scene, camera, geoms, trail}
    paused: false, dirty: true, simDebt: 0, lastTime: -Infinity, frames: 0,
    lastFrame: null, speed: 1, speedWindow: { wall: 0, simulated: 0 },   // the wall clock and the speed readout
    errors: [], seenErrors: new Set(),  // each error text once
  };
}

async function main(state, hook) {
  const cfg = await (await fetch('lab.json')).json();
  const spec = state.spec = cfg.spec;
  state.replay = cfg.replay ?? null;
  document.title = `${spec.title ?? spec.model} · physai lab`;
  state.page.title.textContent = spec.title ?? spec.model;
  state.page.note.textContent = spec.note ?? '';
  const mujoco = state.mujoco = await loadMujoco();
  const files = await fetchModelFiles(cfg.model.files);
  state.model = loadModel(mujoco, files, cfg.model.file);
  state.data = new mujoco.MjData(state.model);
  state.lib = makeLib(mujoco, state.model, state.data);
  state.scripts.setup = compile(state, 'setup', spec.setup ?? '');
  state.scripts.control = spec.control ? compile(state, 'control', spec.control) : null;
  buildReadouts(state);
  buildControls(state);
  buildPlots(state);
  buildScene(state);
  buildTransport(state);
  run(state, 'setup', state.scripts.setup);
  applySelects(state);
  mujoco.mj_forward(state.model, state.data);
  if (state.replay) showReplay(state, state.replay.t[0]);
  state.versions = { mujoco: mujoco.mj_versionString(), three: THREE.REVISION };
  state.page.versions.textContent = `MuJoCo ${state.versions.mujoco} (WebAssembly, @mujoco/mujoco) · three.js r${state.versions.three} · ${cfg.source}${state.replay ? ` · replaying ${spec.replay}: physai's run, not MuJoCo's simulation` : ''}`;
  completeHook(hook, state);
  render(state);
  state.frames = 1;
  state.page.status.textContent = '';
  startFrames(state);
}

/** Create the state and window.lab, then load; a failure to load is shown in the page and rejects lab.ready. */
function start() {
  const state = createState();
  const { hook, settle, fail } = createHook(state);
  window.lab = hook;
  main(state, hook).then(() => settle(true), (error) => {
    report(state, 'loading', error);
    state.page.status.textContent = 'failed to load';
    fail(error);
  });
}

start();
