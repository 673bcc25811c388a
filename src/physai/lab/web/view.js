// physai view: replays a physai Trajectory (/view.json, its arrays in /run.bin) with the lab's scene.js drawing the model as the server's MuJoCo
// compiled it (/view.bin: its meshes, materials and the geoms' and sites' frames on their bodies; no MuJoCo in the page).
// Each shown frame takes its state's body frames as physai computed them (run.bin's poses: kinematics.body_poses) and
// composes the geoms and sites on them (frames.js): the positions are physai's. Play, pause, step, speed, loop and a slider scrub the run;
// the contacts of the shown state are points, normals and force arrows; the named sites' frames are three short axes;
// the plot shows a chosen series with a cursor. A second run (a ghost) is drawn translucent over the first.
// window.viewer (the test hook): {ready, duration, frames, time(), seek(t), bodies(), ghostBodies(), contacts(),
// normals(), sites(), cursor(), series(), select(label), triangles(), detail(), simplify(), errors}. Playing under a
// software renderer (headless Chromium's SwiftShader), the meshes are drawn simplified (buildDetail; fetched when
// first played, or by simplify()); paused, as compiled.
import * as THREE from 'three';
import { OrbitControls } from 'three/addons/controls/OrbitControls.js';
import { addArrays, makeData, modelFrom, pose, unpack } from './frames.js';
import { errorText, niceTicks } from './lib.js';
import { buildScene, drawScene, geomGeometry, updateGeoms } from './scene.js';

const IDS = ['title', 'time', 'status', 'view', 'canvas', 'play', 'back', 'forward', 'speed', 'loop', 'follow', 'show-contacts',
  'show-sites', 'slider', 'series', 'plot', 'legend', 'errors', 'versions'];
const ARROW_LENGTH = 0.4;              // [m] the drawn length of the run's largest contact force
const NORMAL_LENGTH = 0.1;             // [m] the drawn length of a contact normal
const SITE_AXIS = 0.06;                // [m] the drawn length of a site frame's axes
const MANY_SITES = 10;                 // more named sites than this: their frames hidden until asked for
const HINGE_OR_SLIDE = new Set([2, 3]);
const LOD_PIXELS = 1.5;               // playing in software: meshes simplified in cubes up to this many pixels wide
const MAX_FRAME_WALL = 1.0;           // [s] the most one frame advances (times speed): a slow browser skips states, keeping time

/** The state index shown at time t [s]: the last saved state at or before t. */
function frameAt(run, t) {
  const k = Math.floor(t / run.dt + 1e-9);
  return Math.max(0, Math.min(run.t.length - 1, k));
}

/** The plot's series by label: energy, base height, total contact force, each hinge or slide joint's q and qd, each
 * actuator's force if recorded. */
function seriesOf(run) {
  const out = {};
  if (run.energy) out['energy [J]'] = run.energy;
  if (run.base_height !== null) out['base height [m]'] = run.q.map((q) => q[run.base_height]);
  if (run.contacts) {
    const { start, force } = run.contacts;
    out['contact force, sum of |f| [N]'] = run.t.map((_, k) => {
      let s = 0;
      for (let i = start[k]; i < start[k + 1]; i++) s += Math.hypot(...force[i]);
      return s;
    });
  }
  for (const j of run.joints.filter((j) => HINGE_OR_SLIDE.has(j.type))) {
    out[`${j.name} q`] = run.q.map((q) => q[j.qpos]);
    out[`${j.name} qd`] = run.qd.map((qd) => qd[j.dof]);
  }
  const a = run.actuators;
  a?.names.forEach((name, i) => { out[`actuator ${name} force [${a.units[i]}]`] = a.force.map((f) => f[i]); });
  return out;
}

/** Points at the contacts, lines along their normals and arrows along their forces, for the shown state; a pool of
 * arrows reused frame to frame. normals: the drawn normals' directions (the contact frames' first rows). */
function buildContacts(view, run) {
  const group = new THREE.Group();
  view.scene.add(group);
  const forces = run.contacts ? run.contacts.force.map((f) => Math.hypot(...f)) : [];
  const scale = ARROW_LENGTH / Math.max(1e-12, ...forces, 0);
  const points = new THREE.Points(new THREE.BufferGeometry(),
    new THREE.PointsMaterial({ color: 0xd62728, size: 7, sizeAttenuation: false, depthTest: false }));
  points.renderOrder = 2;
  group.add(points);
  const lines = new THREE.LineSegments(new THREE.BufferGeometry(),
    new THREE.LineBasicMaterial({ color: 0x2ca02c, depthTest: false }));
  lines.renderOrder = 2;
  group.add(lines);
  const arrows = [];
  return {
    scale, shown: 0, normals: [],
    update(k, visible) {
      group.visible = visible;
      const c = run.contacts;
      const from = c ? c.start[k] : 0, to = c ? c.start[k + 1] : 0;
      points.geometry.setAttribute('position', new THREE.Float32BufferAttribute(c ? c.pos.slice(from, to).flatMap((p) => [...p]) : [], 3));
      this.normals = c ? c.normal.slice(from, to) : [];
      const ends = this.normals.flatMap((n, i) => [...c.pos[from + i], ...c.pos[from + i].map((p, j) => p + NORMAL_LENGTH * n[j])]);
      lines.geometry.setAttribute('position', new THREE.Float32BufferAttribute(ends, 3));
      for (let i = from; i < to; i++) {
        const n = i - from, f = new THREE.Vector3(...c.force[i]), len = f.length() * scale;
        if (!arrows[n]) { arrows[n] = new THREE.ArrowHelper(); arrows[n].setColor(0x1f77b4); group.add(arrows[n]); }
        arrows[n].position.set(...c.pos[i]);
        arrows[n].setDirection(len > 0 ? f.normalize() : new THREE.Vector3(0, 0, 1));
        arrows[n].setLength(Math.max(len, 1e-6), Math.min(0.05, 0.3 * len + 1e-6), Math.min(0.03, 0.2 * len + 1e-6));
        arrows[n].visible = true;
      }
      for (let n = to - from; n < arrows.length; n++) arrows[n].visible = false;
      this.shown = visible ? to - from : 0;
    },
  };
}

/** The frames of the named sites (run.sites) as three short axes (x red, y green, z blue), posed from `data`. */
function buildSites(view, run) {
  const group = new THREE.Group();
  view.scene.add(group);
  const axes = run.sites.map(() => {
    const helper = new THREE.AxesHelper(SITE_AXIS);
    helper.material.depthTest = false;
    helper.renderOrder = 2;
    helper.matrixAutoUpdate = false;
    group.add(helper);
    return helper;
  });
  return {
    update(data, visible) {
      group.visible = visible;
      run.sites.forEach(({ id }, i) => {
        const p = data.site_xpos.slice(3 * id, 3 * id + 3), r = data.site_xmat.slice(9 * id, 9 * id + 9);
        axes[i].matrix.set(r[0], r[1], r[2], p[0], r[3], r[4], r[5], p[1], r[6], r[7], r[8], p[2], 0, 0, 0, 1);
      });
    },
    // each drawn site's world position [m], in run.sites' order ([] when hidden)
    positions: () => (group.visible ? axes.map((a) => a.matrix.elements.slice(12, 15)) : []),
  };
}

/** Each body's world position in `data` [m], physai's body order (MuJoCo's body b + 1 is physai's body b). */
function bodyPositions(model, data) {
  return Array.from({ length: model.nbody - 1 }, (_, b) => Array.from(data.xpos.slice(3 * (b + 1), 3 * (b + 2))));
}

/** The chosen series against time, the cursor at the shown time and its value. */
function drawPlot(canvas, t, y, label, time, k) {
  const dpr = window.devicePixelRatio || 1, w = canvas.clientWidth || 320, h = canvas.clientHeight || 220;
  if (canvas.width !== Math.round(w * dpr)) { canvas.width = Math.round(w * dpr); canvas.height = Math.round(h * dpr); }
  const g = canvas.getContext('2d');
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, w, h);
  if (!y) return;
  const left = 58, right = 8, top = 20, bottom = 22, t1 = Math.max(t[t.length - 1], 1e-9);
  let lo = Math.min(...y), hi = Math.max(...y);
  if (hi - lo < 1e-12 * Math.max(1, Math.abs(hi))) { lo -= 0.5; hi += 0.5; }
  const X = (s) => left + s / t1 * (w - left - right), Y = (v) => top + (hi - v) / (hi - lo) * (h - top - bottom);
  g.strokeStyle = '#999'; g.strokeRect(left, top, w - left - right, h - top - bottom);
  g.fillStyle = '#333'; g.font = '11px sans-serif'; g.textAlign = 'right';
  for (const { value, text } of niceTicks(lo, hi, 4)) g.fillText(text, left - 4, Y(value) + 4);
  g.textAlign = 'left';
  g.fillText(`${label} = ${y[k].toPrecision(6)} at t = ${time.toFixed(3)} s`, 4, 12);
  g.fillText(`0 … ${t1.toFixed(2)} s`, left + 4, h - 6);
  g.strokeStyle = '#1f77b4'; g.lineWidth = 1.4; g.beginPath();
  const every = Math.max(1, Math.floor(t.length / (2 * w)));          // about two points per pixel
  for (let i = 0; i < t.length; i += every) (i ? g.lineTo(X(t[i]), Y(y[i])) : g.moveTo(X(t[i]), Y(y[i])));
  g.stroke();
  g.strokeStyle = '#d62728'; g.beginPath(); g.moveTo(X(time), top); g.lineTo(X(time), h - bottom); g.stroke();
}

/** The second run, drawn translucent over the first: its own frames and a copy of each drawn geom; null without one. */
function buildGhost(state, ghost) {
  if (!ghost) return null;
  const { model, view } = state;
  const data = makeData(model);
  const material = new THREE.MeshStandardMaterial({ color: 0xff7f0e, transparent: true, opacity: 0.35, depthWrite: false });
  const geoms = view.geoms.filter(({ i }) => model.geom_type[i] !== 0).map(({ i, mesh }) => {   // planes: once
    const copy = new THREE.Mesh(mesh.geometry, material);
    copy.matrixAutoUpdate = false;
    view.scene.add(copy);
    return { i, mesh: copy };
  });
  return {
    data, geoms,
    show(time) {
      const k = frameAt(ghost, time);
      pose(model, data, ghost.poses.xpos[k], ghost.poses.xquat[k]);
      updateGeoms(geoms, data);
    },
  };
}

/** Mesh geom i's geometry from a simplified model's mesh arrays, with the normals they carry (mesh_normal). */
function simplified(lod, i) {
  const g = geomGeometry(lod, i), id = lod.geom_dataid[i], a = lod.mesh_vertadr[id], n = lod.mesh_vertnum[id];
  g.setAttribute('normal', new THREE.BufferAttribute(lod.mesh_normal.slice(3 * a, 3 * (a + n)), 3));
  return g;
}

/** The meshes' level of detail: set(k) draws each mesh as its k-th simplification (view.lod.bin's lod<k>_ arrays:
 * vertex clustering in cubes of its header's cells[k] [m], finest first, no vertex moved farther than sqrt(3) times
 * that), the ghost's copies alike; set(-1) as MuJoCo compiled it. coarsest(pixel): the coarsest level whose cube is at
 * most LOD_PIXELS pixels of `pixel` [m], else -1. Only under a software renderer (view.software), where each frame's
 * time grows with the triangles drawn, and once load() has fetched view.lod.bin (its promise: whether it did; the
 * page calls it when first played); else set() changes nothing. */
function buildDetail(state, ghost) {
  const { model, view } = state;
  let level = -1, cells = [], swaps = [];
  const load = async () => {
    if (!view.software || !model.nmesh) return false;
    const res = await fetch('view.lod.bin');
    if (!res.ok) throw new Error(`view.lod.bin: HTTP ${res.status}`);
    const buffer = await res.arrayBuffer(), size = new DataView(buffer).getUint32(0, true);
    const header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 4, size)));   // {cells, arrays}
    addArrays(model, header.arrays, buffer, 'view.lod.bin', 4 + size);
    const levels = header.cells.map((_, k) => {
      const lod = { ...model };
      for (const name of ['mesh_vert', 'mesh_face', 'mesh_vertadr', 'mesh_vertnum', 'mesh_faceadr', 'mesh_facenum', 'mesh_normal']) {
        lod[name] = model[`lod${k}_${name}`];
      }
      return lod;
    });
    swaps = view.geoms.filter(({ i }) => model.geom_type[i] === 7).map(({ i, mesh }) => ({
      meshes: [mesh, ...(ghost ? ghost.geoms.filter((g) => g.i === i).map((g) => g.mesh) : [])],
      geometries: [...levels.map((lod) => simplified(lod, i)), mesh.geometry],      // [-1]: the compiled mesh
    }));
    cells = header.cells;
    return cells.length > 0;
  };
  return {
    load,
    set(to) {
      if (to === level || to >= cells.length) return;
      level = to;
      for (const { meshes, geometries } of swaps) for (const mesh of meshes) mesh.geometry = geometries.at(to);
    },
    coarsest: (pixel) => cells.findLastIndex((cell) => cell <= LOD_PIXELS * pixel),
    level: () => level,
    cell: () => cells[level] ?? 0,
  };
}

function showError(page, where, error) {
  const li = document.createElement('li');
  li.textContent = `${where}: ${errorText(error)}`;
  page.errors.appendChild(li);
  page.errors.hidden = false;
}

async function main(page, hook) {
  const timings = hook.timings = {};                                   // [ms] since navigation: the load's stages
  const fetched = (url) => fetch(url).then((res) => {
    if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
    return res;
  });
  const bin = fetched('view.bin').then((res) => res.arrayBuffer());   // all three at once
  const runBin = fetched('run.bin').then((res) => res.arrayBuffer());
  const cfg = await (await fetched('view.json')).json();
  const run = unpack(cfg.run, await runBin), duration = run.t[run.t.length - 1];
  timings.json = performance.now();
  page.title.textContent = cfg.title;
  document.title = `${cfg.title} · physai view`;
  const model = modelFrom(cfg.model.scene, await bin);
  const data = makeData(model);
  timings.model = performance.now();
  if (model.nq !== run.q[0].length) throw new Error(`the model has nq = ${model.nq}, the run ${run.q[0].length}`);
  const antialias = new URLSearchParams(location.search).has('antialias') || undefined;   // ?antialias: pictures
  const state = { spec: { height: 480, antialias }, model, data, page, view: null };
  buildScene(state);
  const orbit = new OrbitControls(state.view.camera, page.canvas);
  const base = () => new THREE.Vector3(...data.xpos.slice(3, 6));    // body 1: the base, which the camera follows
  pose(model, data, run.poses.xpos[0], run.poses.xquat[0]);
  orbit.target.copy(base());
  state.view.camera.position.copy(base()).add(new THREE.Vector3(2.2, -2.2, 0.9).multiplyScalar(Math.max(0.5, model.stat.meansize * 8)));
  orbit.update();
  const contacts = buildContacts(state.view, run);
  const sites = buildSites(state.view, run);
  page['show-sites'].checked = run.sites.length <= MANY_SITES;
  page['show-sites'].disabled = run.sites.length === 0;
  const ghost = buildGhost(state, run.ghost);
  const detail = buildDetail(state, ghost);
  const pixelSize = () => {                                          // [m] a pixel's size at the camera's target
    const { camera, renderer } = state.view;
    const distance = camera.position.distanceTo(orbit.target);
    return 2 * distance * Math.tan(camera.fov * Math.PI / 360) / renderer.domElement.height;
  };
  const series = seriesOf(run);
  for (const label of Object.keys(series)) page.series.add(new Option(label, label));
  page.legend.textContent = run.contacts ? `arrows: contact forces, ${ARROW_LENGTH} m = ${(ARROW_LENGTH / contacts.scale).toPrecision(3)} N; `
    + `green lines: contact normals (${NORMAL_LENGTH} m); sites: x red, y green, z blue`
    : 'no contacts recorded (physai.recording.record_contacts)';
  page.slider.max = run.t.length - 1;
  const v = { time: 0, playing: false, frames: 0, last: null, showing: false };

  const show = (time) => {
    v.showing = true;                                                  // the orbit's change event draws nothing now
    v.time = Math.max(0, Math.min(duration, time));
    const k = frameAt(run, v.time);
    const before = base();
    pose(model, data, run.poses.xpos[k], run.poses.xquat[k]);
    if (page.follow.checked) {                                         // the camera moves with the base
      const moved = base().sub(before);
      state.view.camera.position.add(moved);
      orbit.target.add(moved);
      orbit.update();
    }
    contacts.update(k, page['show-contacts'].checked);
    sites.update(data, page['show-sites'].checked);
    ghost?.show(v.time);
    page.slider.value = k;
    page.time.textContent = `t = ${v.time.toFixed(3)} s / ${duration.toFixed(3)} s`;
    drawPlot(page.plot, run.t, series[page.series.value], page.series.value, v.time, k);
    detail.set(v.playing ? detail.coarsest(pixelSize()) : -1);        // paused: the meshes as compiled
    drawScene(state);
    v.frames++;
    v.showing = false;
  };
  const pause = () => { v.playing = false; page.play.textContent = 'Play'; };
  const step = (n) => { pause(); show(run.t[Math.max(0, Math.min(run.t.length - 1, frameAt(run, v.time) + n))]); };
  let detailed = null;
  const simplify = () => (detailed ??= detail.load().catch((error) => {   // the simplified meshes, once
    showError(page, 'simplified meshes', error);
    hook.errors.push(errorText(error));
    return false;
  }));
  page.play.onclick = () => {
    v.playing = !v.playing; v.last = null;
    if (v.playing && v.time >= duration) v.time = 0;
    page.play.textContent = v.playing ? 'Pause' : 'Play';
    if (v.playing) simplify();                                         // first played: fetched (in software)
    else show(v.time);                                                 // drawn again in full detail
  };
  page.back.onclick = () => step(-1);
  page.forward.onclick = () => step(1);
  page.slider.oninput = () => { pause(); show(run.t[Number(page.slider.value)]); };
  page.series.onchange = page['show-contacts'].onchange = page['show-sites'].onchange = () => show(v.time);
  orbit.addEventListener('change', () => v.showing || drawScene(state));   // a frame is drawn once
  for (const el of [page.play, page.back, page.forward, page.slider]) el.disabled = false;

  const frame = (now) => {
    try {
      if (v.playing) {
        const wall = v.last === null ? 0 : Math.min((now - v.last) / 1000, MAX_FRAME_WALL);
        let t = v.time + wall * Number(page.speed.value);
        if (t > duration) { if (page.loop.checked) t = 0; else pause(); }
        show(t);
      }
      v.last = now;
    } catch (error) { showError(page, 'frame', error); }
    requestAnimationFrame(frame);
  };
  Object.assign(hook, {
    duration,
    time: () => v.time,
    // paused at time t [s]; `level` >= 0: drawn with that simplification of the meshes (for comparing pictures)
    seek(t, level = -1) {
      pause();
      show(t);
      if (level >= 0) { detail.set(level); drawScene(state); }
      return frameAt(run, v.time);
    },
    play() { if (!v.playing) page.play.click(); },
    // the simplified meshes fetched (a promise: whether there are some; a page rendering on a GPU fetches none)
    simplify,
    pause() { if (v.playing) page.play.click(); },
    // each body's world position as drawn
    bodies: () => bodyPositions(model, data),
    contacts: () => contacts.shown,
    // the drawn contact normals' directions (the contact frames' first rows; [] when the contacts are hidden)
    normals: () => (contacts.shown ? contacts.normals.map((n) => Array.from(n)) : []),
    sites: () => sites.positions(),
    // the triangles of the last frame drawn, and the meshes' level of detail then (level -1: as compiled; k: simplified
    // in cubes of `cell` [m], playing under a software renderer), with a pixel's size at the camera's target [m]
    triangles: () => state.view.renderer.info.render.triangles,
    detail: () => ({ level: detail.level(), cell: detail.cell(), pixel: pixelSize() }),
    // the ghost's bodies likewise (null without a ghost)
    ghostBodies: () => ghost && bodyPositions(model, ghost.data),
    cursor: () => { const y = series[page.series.value]; return y ? y[frameAt(run, v.time)] : null; },
    series: () => Object.keys(series),
    select(label) {
      if (!(label in series)) return false;
      page.series.value = label;
      show(v.time);
      return true;
    },
  });
  Object.defineProperty(hook, 'frames', { get: () => v.frames, enumerable: true });
  page.versions.textContent = `the model compiled by MuJoCo ${model.mujoco} (Python) · three.js r${THREE.REVISION} · positions: physai`;
  show(0);
  timings.ready = performance.now();
  page.status.textContent = '';
  requestAnimationFrame(frame);
}

const page = Object.fromEntries(IDS.map((id) => [id, document.getElementById(id)]));
const hook = { errors: [] };
hook.ready = new Promise((resolve, reject) => {
  main(page, hook).then(() => resolve(true), (error) => {
    showError(page, 'loading', error);
    hook.errors.push(errorText(error));
    page.status.textContent = 'failed to load';
    reject(error);
  });
});
window.viewer = hook;
