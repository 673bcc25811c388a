// physai lab: the 3D view with three.js: the model's geoms posed from data each frame, MuJoCo's camera, the trail.
// buildScene(state) sets state.view = {renderer, scene, camera, geoms, trail, software}; drawScene(state) draws a frame.
import * as THREE from 'three';
import { report } from './scripts.js';

const TRAIL_POINTS = 600;

/** Geom i's geometry in its own frame (a mesh's from model.mesh_vert and mesh_face); null for what is not drawn. */
export function geomGeometry(model, i) {
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

/** Whether WebGL runs on the CPU (SwiftShader, llvmpipe: a headless browser, a machine without a GPU), where
 * multisampling makes each frame about 4 times slower. */
function softwareRendering() {
  const gl = document.createElement('canvas').getContext('webgl2');
  const info = gl?.getExtension('WEBGL_debug_renderer_info');
  const name = info ? String(gl.getParameter(info.UNMASKED_RENDERER_WEBGL)) : '';
  gl?.getExtension('WEBGL_lose_context')?.loseContext();
  return /SwiftShader|llvmpipe|softpipe|software/i.test(name);
}

/** The renderer, scene, camera, a mesh per visible geom and the trail, as state.view. Antialiased (multisampled)
 * unless WebGL renders in software, or as spec.antialias says. */
export function buildScene(state) {
  const { spec, model, page } = state;
  const height = Math.max(spec.height ?? 420, 420);
  const software = softwareRendering();
  const antialias = spec.antialias ?? !software;
  const renderer = new THREE.WebGLRenderer({ canvas: page.canvas, antialias, preserveDrawingBuffer: true });
  renderer.setPixelRatio(window.devicePixelRatio || 1);
  renderer.setSize(page.view.clientWidth, height);
  const scene = new THREE.Scene();
  scene.background = new THREE.Color(0xf4f5f7);
  const camera = new THREE.PerspectiveCamera(45, page.view.clientWidth / height, 0.01, 100);
  camera.up.set(0, 0, 1);                               // MuJoCo's z is up
  scene.add(new THREE.HemisphereLight(0xffffff, 0x667788, 1.6));
  const head = new THREE.DirectionalLight(0xffffff, 1.6);
  head.position.set(0, 0, 1);
  camera.add(head);
  scene.add(camera);
  const geoms = [];
  const mat = model.geom_matid, rgba = model.geom_rgba, matRgba = model.mat_rgba, group = model.geom_group;
  for (let i = 0; i < model.ngeom; i++) {
    const c = mat[i] >= 0 ? matRgba.slice(4 * mat[i], 4 * mat[i] + 4) : rgba.slice(4 * i, 4 * i + 4);
    if (group[i] > 2 || c[3] === 0) continue;           // MuJoCo's viewer shows groups 0-2
    const geometry = geomGeometry(model, i);
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
  state.view = { renderer, scene, camera, geoms, trail: null, software };
  if (spec.trail !== undefined) state.view.trail = makeTrail(state, spec.trail);
  placeCamera(camera, spec.camera ?? {}, model.stat);
  window.addEventListener('resize', () => {
    renderer.setSize(page.view.clientWidth, height);
    camera.aspect = page.view.clientWidth / height;
    camera.updateProjectionMatrix();
  });
}

function placeCamera(camera, cam, stat) {
  const az = (cam.azimuth ?? 90) * Math.PI / 180, el = (cam.elevation ?? -20) * Math.PI / 180;
  const dist = cam.distance ?? 2.5 * stat.extent;
  const target = cam.target ?? Array.from(stat.center);
  // MuJoCo's camera: forward = (cos el cos az, cos el sin az, sin el); the eye is target - distance * forward
  const f = [Math.cos(el) * Math.cos(az), Math.cos(el) * Math.sin(az), Math.sin(el)];
  camera.position.set(target[0] - dist * f[0], target[1] - dist * f[1], target[2] - dist * f[2]);
  camera.lookAt(target[0], target[1], target[2]);
}

/** A line through the last TRAIL_POINTS positions of a site (a name) or a body point ({body, pos}); null, reported, if none. */
function makeTrail(state, t) {
  const { mujoco, model } = state;
  const name = typeof t === 'string' ? t : t.body;
  const offset = typeof t === 'string' ? [0, 0, 0] : (t.pos ?? [0, 0, 0]);
  const obj = mujoco.mjtObj;
  let kind = null, id = -1;
  if (typeof t === 'string') { id = mujoco.mj_name2id(model, obj.mjOBJ_SITE.value, name); kind = 'site'; }
  if (id < 0) { id = mujoco.mj_name2id(model, obj.mjOBJ_BODY.value, name); kind = 'body'; }
  if (id < 0) { report(state, 'trail', new Error(`the model has no site or body named "${name}"`)); return null; }
  const positions = new Float32Array(3 * TRAIL_POINTS);
  const geometry = new THREE.BufferGeometry();
  geometry.setAttribute('position', new THREE.BufferAttribute(positions, 3));
  geometry.setDrawRange(0, 0);
  const color = new THREE.Color(state.spec.trail_color ?? '#ff5a00');
  const line = new THREE.Line(geometry, new THREE.LineBasicMaterial({ color, depthTest: false }));
  // WebGL draws lines one pixel wide: dots of 4 pixels on the same points make the trail readable, drawn over the model
  const dots = new THREE.Points(geometry, new THREE.PointsMaterial({ color, size: 4, sizeAttenuation: false, depthTest: false }));
  for (const o of [line, dots]) {
    o.frustumCulled = false;
    o.renderOrder = 1;
    state.view.scene.add(o);
  }
  const points = [];
  return {
    get count() { return points.length; },
    point() {
      const data = state.data;
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

/** Each {i, mesh} of `geoms` posed at geom i's place in `data` (geom_xpos, geom_xmat). */
export function updateGeoms(geoms, data) {
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

/** The geoms posed from data, then the scene drawn. */
export function drawScene(state) {
  const { renderer, scene, camera, geoms } = state.view;
  updateGeoms(geoms, state.data);
  renderer.render(scene, camera);
}
