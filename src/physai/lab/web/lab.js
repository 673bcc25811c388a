// physai lab: the page's runtime. Loads /lab.json (the lesson's lab block), MuJoCo's WebAssembly build and
// the model, runs `setup`, then each frame steps until simulated time advances by the frame time, runs
// mj_forward, and updates the readouts, plots, geoms, trail and camera. window.lab is the test hook.
import * as THREE from 'three';
import loadMujoco from '@mujoco/mujoco';
import { loadModel, makeLib, compileScript, compileExpr, runScript, formatNumber, errorText } from './lib.js';

const FRAME_TIME = 1 / 60;             // simulated seconds per frame (a lab may set "frame_time")
const MAX_STEPS_PER_FRAME = 20000;
const TRAIL_POINTS = 600;
const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#17becf'];
const $ = (id) => document.getElementById(id);

let settle, fail;
const hook = {
  ready: new Promise((resolve, reject) => { settle = resolve; fail = reject; }),
  frames: 0,
  errors: [],
};
window.lab = hook;

let mujoco, model, data, lib, spec;
let paused = false, dirty = true, simDebt = 0, lastTime = -Infinity;
const scripts = {};                     // compiled scripts: setup, control, controls by label
const readouts = [];                    // {label, fn, digits, format, cell}
const plots = [];                       // Plot
const seenErrors = new Set();

// ---- errors: shown in the page, logged as warnings, never stopping the loop ----

function report(where, error) {
  const text = `${where}: ${errorText(error)}`;
  if (seenErrors.has(text)) return;
  seenErrors.add(text);
  hook.errors.push(text);
  const li = document.createElement('li');
  li.textContent = text;
  $('errors').appendChild(li);
  $('errors').hidden = false;
  console.warn(`physai lab: ${text}`);
}

function compile(where, code, expr = false) {
  try {
    return expr ? compileExpr(code) : compileScript(code);
  } catch (error) {
    report(where, error);
    return null;
  }
}

function run(where, fn, value) {
  if (!fn) return undefined;
  const result = runScript(fn, model, data, lib, value);
  if (!result.ok) report(where, result.error);
  return result.ok ? result.value : undefined;
}

// ---- simulation ----

function stepOnce() {
  run('control', scripts.control);
  mujoco.mj_step(model, data);
}

function advance(dt) {
  simDebt += dt;
  const h = model.opt.timestep;
  let n = 0;
  while (simDebt > 0.5 * h && n < MAX_STEPS_PER_FRAME) {
    const t = data.time;
    stepOnce();
    const moved = data.time - t;
    simDebt -= moved > 0 ? moved : h;   // a script that resets time still pays for the step
    n++;
  }
  if (n === MAX_STEPS_PER_FRAME) simDebt = 0;
  mujoco.mj_forward(model, data);
  dirty = true;
}

function afterChange(jump = true) {       // a button, select or hook call changed the state or model
  mujoco.mj_forward(model, data);
  simDebt = 0;
  if (jump) trail?.clear();               // a teleport, not a motion: start the trail afresh
  dirty = true;
  render();
}

// ---- readouts and plots ----

function readValues() {
  const values = {};
  for (const r of readouts) {
    const v = run(`readout "${r.label}"`, r.fn);
    values[r.label] = typeof v === 'number' ? v : NaN;
  }
  return values;
}

function printed(values) {
  const text = {};
  for (const r of readouts) text[r.label] = formatNumber(values[r.label], r.digits, r.format);
  return text;
}

class Plot {
  constructor(p, parent) {
    this.window = p.window ?? 10;
    this.ylabel = p.ylabel ?? '';
    this.traces = p.traces.map((t, i) => ({
      label: t.label, dash: !!t.dash, color: t.color ?? PALETTE[i % PALETTE.length],
      fn: compile(`plot trace "${t.label}"`, t.expr, true), t: [], y: [],
    }));
    const box = document.createElement('div');
    box.className = 'plot';
    this.canvas = document.createElement('canvas');
    box.appendChild(this.canvas);
    parent.appendChild(box);
  }

  clear() { for (const tr of this.traces) { tr.t.length = 0; tr.y.length = 0; } }

  sample(time) {
    for (const tr of this.traces) {
      const v = run(`plot trace "${tr.label}"`, tr.fn);
      if (typeof v !== 'number' || !Number.isFinite(v)) continue;
      tr.t.push(time); tr.y.push(v);
      while (tr.t.length && tr.t[0] < time - this.window) { tr.t.shift(); tr.y.shift(); }
    }
  }

  draw(time) {
    const c = this.canvas, dpr = window.devicePixelRatio || 1;
    const w = c.clientWidth || 320, h = c.clientHeight || 150;
    if (c.width !== Math.round(w * dpr)) { c.width = Math.round(w * dpr); c.height = Math.round(h * dpr); }
    const g = c.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, h);
    const left = 58, right = 8, top = 20, bottom = 22;
    let lo = Infinity, hi = -Infinity;
    for (const tr of this.traces) for (const y of tr.y) { lo = Math.min(lo, y); hi = Math.max(hi, y); }
    if (!Number.isFinite(lo)) { lo = 0; hi = 1; }
    if (hi - lo < 1e-12 * Math.max(1, Math.abs(hi))) { const m = Math.max(Math.abs(hi) * 0.05, 1e-9); lo -= m; hi += m; }
    const pad = 0.08 * (hi - lo); lo -= pad; hi += pad;
    const t1 = Math.max(time, this.window), t0 = t1 - this.window;
    const X = (t) => left + (t - t0) / (t1 - t0) * (w - left - right);
    const Y = (y) => top + (hi - y) / (hi - lo) * (h - top - bottom);
    g.strokeStyle = '#999'; g.lineWidth = 1; g.setLineDash([]);
    g.strokeRect(left, top, w - left - right, h - top - bottom);
    g.fillStyle = '#333'; g.font = '11px sans-serif';
    g.textAlign = 'right';
    for (const y of [hi - pad, lo + pad]) g.fillText(formatTick(y), left - 4, Y(y) + 4);
    g.textAlign = 'center';
    g.fillText(`${t0.toFixed(1)} s`, X(t0) + 14, h - 6);
    g.fillText(`${t1.toFixed(1)} s`, X(t1) - 16, h - 6);
    g.textAlign = 'left';
    g.fillText(this.ylabel, 4, 12);
    let lx = left + 120;
    for (const tr of this.traces) {
      g.strokeStyle = tr.color; g.lineWidth = 1.6; g.setLineDash(tr.dash ? [5, 4] : []);
      g.beginPath();
      tr.t.forEach((t, i) => (i ? g.lineTo(X(t), Y(tr.y[i])) : g.moveTo(X(t), Y(tr.y[i]))));
      g.stroke();
      g.beginPath(); g.moveTo(lx, 8); g.lineTo(lx + 18, 8); g.stroke();
      g.fillText(tr.label, lx + 22, 12);
      lx += 30 + g.measureText(tr.label).width;
    }
    g.setLineDash([]);
  }
}

function formatTick(y) {
  const a = Math.abs(y);
  return a !== 0 && (a < 1e-3 || a >= 1e5) ? y.toExponential(2) : y.toPrecision(4);
}

// ---- 3D view ----

let renderer, scene, camera, geoms = [], trail = null;

function geomGeometry(i) {
  const s = model.geom_size.slice(3 * i, 3 * i + 3);
  switch (model.geom_type[i]) {
    case 0: {                                            // plane: size 0 means infinite; draw 10 m
      const g = new THREE.PlaneGeometry(2 * (s[0] || 5), 2 * (s[1] || 5));
      return g;
    }
    case 2: return new THREE.SphereGeometry(s[0], 32, 16);
    case 3: return new THREE.CapsuleGeometry(s[0], 2 * s[1], 8, 24).rotateX(Math.PI / 2);
    case 4: return new THREE.SphereGeometry(1, 32, 16).scale(s[0], s[1], s[2]);
    case 5: return new THREE.CylinderGeometry(s[0], s[0], 2 * s[1], 32).rotateX(Math.PI / 2);
    case 6: return new THREE.BoxGeometry(2 * s[0], 2 * s[1], 2 * s[2]);
    case 7: {
      const id = model.geom_dataid[i];
      if (id < 0) return null;
      const va = model.mesh_vertadr[id], vn = model.mesh_vertnum[id];
      const fa = model.mesh_faceadr[id], fn = model.mesh_facenum[id];
      const g = new THREE.BufferGeometry();
      g.setAttribute('position', new THREE.BufferAttribute(Float32Array.from(model.mesh_vert.subarray(3 * va, 3 * (va + vn))), 3));
      g.setIndex(new THREE.BufferAttribute(Uint32Array.from(model.mesh_face.subarray(3 * fa, 3 * (fa + fn))), 1));
      g.computeVertexNormals();
      return g;
    }
    default: return null;                               // height fields and SDFs are not drawn
  }
}

function buildScene() {
  const view = $('view');
  const height = Math.max(spec.height ?? 420, 420);
  renderer = new THREE.WebGLRenderer({ canvas: $('canvas'), antialias: true, preserveDrawingBuffer: true });
  renderer.setPixelRatio(window.devicePixelRatio || 1);
  renderer.setSize(view.clientWidth, height);
  scene = new THREE.Scene();
  scene.background = new THREE.Color(0xf4f5f7);
  camera = new THREE.PerspectiveCamera(45, view.clientWidth / height, 0.01, 100);
  camera.up.set(0, 0, 1);                               // MuJoCo's z is up
  scene.add(new THREE.HemisphereLight(0xffffff, 0x667788, 1.6));
  const head = new THREE.DirectionalLight(0xffffff, 1.6);
  head.position.set(0, 0, 1);
  camera.add(head);
  scene.add(camera);
  const mat = model.geom_matid, rgba = model.geom_rgba, matRgba = model.mat_rgba, group = model.geom_group;
  for (let i = 0; i < model.ngeom; i++) {
    const c = mat[i] >= 0 ? matRgba.slice(4 * mat[i], 4 * mat[i] + 4) : rgba.slice(4 * i, 4 * i + 4);
    if (group[i] > 2 || c[3] === 0) continue;           // MuJoCo's viewer shows groups 0-2
    const geometry = geomGeometry(i);
    if (!geometry) continue;
    const material = new THREE.MeshStandardMaterial({
      color: new THREE.Color(c[0], c[1], c[2]), roughness: 0.6, metalness: 0.1,
      transparent: c[3] < 1, opacity: c[3], side: model.geom_type[i] === 0 ? THREE.DoubleSide : THREE.FrontSide,
    });
    const mesh = new THREE.Mesh(geometry, material);
    mesh.matrixAutoUpdate = false;
    scene.add(mesh);
    geoms.push({ i, mesh });
  }
  if (spec.trail !== undefined) trail = makeTrail(spec.trail);
  placeCamera();
  window.addEventListener('resize', () => {
    renderer.setSize(view.clientWidth, height);
    camera.aspect = view.clientWidth / height;
    camera.updateProjectionMatrix();
  });
}

function placeCamera() {
  const cam = spec.camera ?? {};
  const az = (cam.azimuth ?? 90) * Math.PI / 180, el = (cam.elevation ?? -20) * Math.PI / 180;
  const stat = model.stat;
  const dist = cam.distance ?? 2.5 * stat.extent;
  const target = cam.target ?? Array.from(stat.center);
  // MuJoCo's camera: forward = (cos el cos az, cos el sin az, sin el); the eye is target - distance * forward
  const f = [Math.cos(el) * Math.cos(az), Math.cos(el) * Math.sin(az), Math.sin(el)];
  camera.position.set(target[0] - dist * f[0], target[1] - dist * f[1], target[2] - dist * f[2]);
  camera.lookAt(target[0], target[1], target[2]);
}

function makeTrail(t) {
  const name = typeof t === 'string' ? t : t.body;
  const offset = typeof t === 'string' ? [0, 0, 0] : (t.pos ?? [0, 0, 0]);
  const obj = mujoco.mjtObj;
  let kind = null, id = -1;
  if (typeof t === 'string') { id = mujoco.mj_name2id(model, obj.mjOBJ_SITE.value, name); kind = 'site'; }
  if (id < 0) { id = mujoco.mj_name2id(model, obj.mjOBJ_BODY.value, name); kind = 'body'; }
  if (id < 0) { report('trail', new Error(`the model has no site or body named "${name}"`)); return null; }
  const positions = new Float32Array(3 * TRAIL_POINTS);
  const geometry = new THREE.BufferGeometry();
  geometry.setAttribute('position', new THREE.BufferAttribute(positions, 3));
  geometry.setDrawRange(0, 0);
  const line = new THREE.Line(geometry, new THREE.LineBasicMaterial({ color: new THREE.Color(spec.trail_color ?? '#ff5a00') }));
  line.frustumCulled = false;
  scene.add(line);
  const points = [];
  return {
    get count() { return points.length; },
    point() {
      const xp = kind === 'site' ? data.site_xpos : data.xpos, xm = kind === 'site' ? data.site_xmat : data.xmat;
      const p = [0, 1, 2].map((r) => xp[3 * id + r] + xm[9 * id + 3 * r] * offset[0] + xm[9 * id + 3 * r + 1] * offset[1] + xm[9 * id + 3 * r + 2] * offset[2]);
      return p;
    },
    add() {
      points.push(this.point());
      if (points.length > TRAIL_POINTS) points.shift();
      points.forEach((p, k) => positions.set(p, 3 * k));
      geometry.attributes.position.needsUpdate = true;
      geometry.setDrawRange(0, points.length);
    },
    clear() { points.length = 0; geometry.setDrawRange(0, 0); },
  };
}

function updateGeoms() {
  const xpos = data.geom_xpos, xmat = data.geom_xmat;
  for (const { i, mesh } of geoms) {
    const p = 3 * i, r = 9 * i;
    mesh.matrix.set(xmat[r], xmat[r + 1], xmat[r + 2], xpos[p],
      xmat[r + 3], xmat[r + 4], xmat[r + 5], xpos[p + 1],
      xmat[r + 6], xmat[r + 7], xmat[r + 8], xpos[p + 2],
      0, 0, 0, 1);
    mesh.matrixWorldNeedsUpdate = true;
  }
}

// ---- one frame ----

function render() {
  if (dirty) {
    if (data.time < lastTime) { trail?.clear(); for (const p of plots) p.clear(); }
    const values = readValues(), text = printed(values);
    for (const r of readouts) r.cell.textContent = text[r.label];
    if (data.time !== lastTime) {
      for (const p of plots) p.sample(data.time);
      trail?.add();
    }
    for (const p of plots) p.draw(data.time);
    $('time').textContent = `t = ${data.time.toFixed(2)} s`;
    lastTime = data.time;
    dirty = false;
  }
  updateGeoms();
  renderer.render(scene, camera);
}

function frame() {
  try {
    if (!paused) advance(spec.frame_time ?? FRAME_TIME);
    render();
    hook.frames++;
  } catch (error) {
    report('frame', error);
  }
  requestAnimationFrame(frame);
}

// ---- controls ----

function buildControls() {
  const box = $('controls');
  for (const c of spec.controls) {
    if (c.type === 'button') {
      const b = document.createElement('button');
      b.textContent = c.label;
      scripts[c.label] = compile(`button "${c.label}"`, c.run);
      b.addEventListener('click', () => press(c.label));
      box.appendChild(b);
    } else {
      const label = document.createElement('label');
      label.textContent = `${c.label} `;
      const sel = document.createElement('select');
      c.options.forEach(([text], k) => sel.add(new Option(text, String(k))));
      sel.selectedIndex = c.options.findIndex((o) => o[1] === c.value);
      scripts[c.label] = compile(`select "${c.label}"`, c.apply);
      sel.addEventListener('change', () => select(c.label, c.options[sel.selectedIndex][1]));
      c.element = sel;
      label.appendChild(sel);
      box.appendChild(label);
    }
  }
}

function control(label, type) {
  const c = spec.controls.find((x) => x.label === label && x.type === type);
  if (!c) throw new Error(`no ${type} labelled "${label}"; ${type}s: ${spec.controls.filter((x) => x.type === type).map((x) => x.label).join(', ')}`);
  return c;
}

function press(label) {
  control(label, 'button');
  run(`button "${label}"`, scripts[label]);
  afterChange();
}

function select(label, value) {
  const c = control(label, 'select');
  const k = c.options.findIndex((o) => o[1] === value || String(o[1]) === String(value));
  if (k < 0) throw new Error(`select "${label}" has no option with value ${value}; values: ${c.options.map((o) => o[1]).join(', ')}`);
  c.element.selectedIndex = k;
  run(`select "${label}"`, scripts[label], c.options[k][1]);
  afterChange();
}

// ---- start ----

async function main() {
  const cfg = await (await fetch('lab.json')).json();
  spec = cfg.spec;
  document.title = `${spec.title ?? spec.model} · physai lab`;
  $('title').textContent = spec.title ?? spec.model;
  $('note').textContent = spec.note ?? '';
  mujoco = await loadMujoco();
  const files = {};
  await Promise.all(cfg.model.files.map(async (f) => {
    const res = await fetch(`model/${f}`);
    if (!res.ok) throw new Error(`model file ${f}: HTTP ${res.status}`);
    files[f] = new Uint8Array(await res.arrayBuffer());
  }));
  model = loadModel(mujoco, files, cfg.model.file);
  data = new mujoco.MjData(model);
  lib = makeLib(mujoco, model, data);
  scripts.setup = compile('setup', spec.setup ?? '');
  scripts.control = spec.control ? compile('control', spec.control) : null;
  for (const r of spec.readouts) {
    const tr = document.createElement('tr');
    const th = document.createElement('th'), td = document.createElement('td');
    th.textContent = r.label;
    tr.append(th, td);
    $('readouts').appendChild(tr);
    readouts.push({ label: r.label, fn: compile(`readout "${r.label}"`, r.expr, true), digits: r.digits ?? 4, format: r.format ?? 'fixed', cell: td });
  }
  buildControls();
  for (const p of spec.plots) plots.push(new Plot(p, $('plots')));
  buildScene();
  run('setup', scripts.setup);
  for (const c of spec.controls) if (c.type === 'select') run(`select "${c.label}"`, scripts[c.label], c.value);
  mujoco.mj_forward(model, data);
  $('versions').textContent = `MuJoCo ${mujoco.mj_versionString()} (WebAssembly, @mujoco/mujoco) · three.js r${THREE.REVISION} · ${cfg.source}`;
  Object.assign(hook, {
    spec, mujoco, model, data, lib,
    versions: { mujoco: mujoco.mj_versionString(), three: THREE.REVISION },
    pause() { paused = true; },
    resume() { paused = false; simDebt = 0; },
    step(n = 1) {
      for (let k = 0; k < n; k++) stepOnce();
      afterChange(false);
      return hook.state();
    },
    press, select,
    readouts: readValues,
    printed() { return printed(readValues()); },
    state() { return { time: data.time, qpos: Array.from(data.qpos), qvel: Array.from(data.qvel) }; },
  });
  Object.defineProperty(hook, 'paused', { get: () => paused });
  Object.defineProperty(hook, 'trailPoints', { get: () => (trail ? trail.count : 0) });
  Object.defineProperty(hook, 'geoms', { get: () => geoms.map(({ i, mesh }) => ({ id: i, type: model.geom_type[i], vertices: mesh.geometry.attributes.position.count })) });
  render();
  hook.frames = 1;
  $('status').textContent = '';
  requestAnimationFrame(frame);
  settle(true);
}

main().catch((error) => {
  report('loading', error);
  $('status').textContent = 'failed to load';
  fail(error);
});
