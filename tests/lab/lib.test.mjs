// node --test of the lab's lib (src/physai/lab/web/lib.js) on the same MuJoCo WebAssembly build as the page.
// Run by tests/test_lab.py::test_node_lib, which sets $LAB_NODE_MODULES (the npm packages in physai's cache folder,
// physai.lab.npm.node_modules_dir()) and $LAB_REFERENCE, a JSON file of reference numbers from Python MuJoCo:
// {xml, states: [{qpos, qvel, fullM, fullM_armature, armature, energy, qfrc_bias}]}.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadModel, makeLib, compileScript, compileExpr, runScript, formatNumber, niceTicks } from '../../src/physai/lab/web/lib.js';

const modules = process.env.LAB_NODE_MODULES;
assert.ok(modules, 'LAB_NODE_MODULES is not set: run this through pytest (tests/test_lab.py::test_node_lib)');
const { default: loadMujoco } = await import(pathToFileURL(path.join(modules, '@mujoco', 'mujoco', 'mujoco.js')).href);
const refPath = process.env.LAB_REFERENCE;
const ref = refPath ? JSON.parse(fs.readFileSync(refPath, 'utf8')) : null;
const mujoco = await loadMujoco();

function setup() {
  assert.ok(ref, 'LAB_REFERENCE is not set: run this through pytest (tests/test_lab.py::test_node_lib)');
  const model = loadModel(mujoco, { [ref.name]: fs.readFileSync(ref.xml) }, ref.name);
  const data = new mujoco.MjData(model);
  return { model, data, lib: makeLib(mujoco, model, data) };
}

function setState(data, s) {
  data.qpos.set(s.qpos);
  data.qvel.set(s.qvel);
}

test('massMatrix and energy equal Python MuJoCo at the reference states', () => {
  const { model, data, lib } = setup();
  assert.ok(ref.states.length >= 3);
  for (const s of ref.states) {
    model.dof_armature.fill(0);
    setState(data, s);
    lib.forward();
    const M = lib.massMatrix();
    assert.equal(M.length, model.nv);
    M.forEach((row, i) => row.forEach((x, j) => assert.ok(Math.abs(x - s.fullM[i][j]) <= 1e-12, `M[${i}][${j}] ${x} vs ${s.fullM[i][j]}`)));
    const e = lib.energy();
    assert.ok(Math.abs(e.potential - s.energy[0]) <= 1e-12, `potential ${e.potential} vs ${s.energy[0]}`);
    assert.ok(Math.abs(e.kinetic - s.energy[1]) <= 1e-12, `kinetic ${e.kinetic} vs ${s.energy[1]}`);
    Array.from(data.qfrc_bias).forEach((x, i) => assert.ok(Math.abs(x - s.qfrc_bias[i]) <= 1e-12));
    model.dof_armature.fill(s.armature);
    lib.forward();
    lib.massMatrix().forEach((row, i) => row.forEach((x, j) => assert.ok(Math.abs(x - s.fullM_armature[i][j]) <= 1e-12)));
  }
});

test('massMatrix stays right after wasm memory grows (views are re-read)', () => {
  const { model, data, lib } = setup();
  const s = ref.states[0];
  setState(data, s);
  lib.forward();
  const before = lib.massMatrix();
  const stale = data.qpos;                                              // a view taken before the growth
  const extra = [];
  for (let k = 0; k < 400 && stale.length > 0; k++) extra.push(new mujoco.MjData(model));   // allocate until memory grows
  assert.equal(stale.length, 0, 'wasm memory did not grow (the old view is still attached); the test proves nothing');
  setState(data, s);
  lib.forward();
  assert.deepEqual(lib.massMatrix(), before);
  assert.ok(Math.abs(lib.energy().kinetic - s.energy[1]) <= 1e-12);
  for (const d of extra) d.delete();
});

test('scripts run as new Function(model, data, lib, value); a throw is returned, not raised', () => {
  const { model, data, lib } = setup();
  const press = compileScript('data.qpos[0] = 0.6; data.qpos[1] = -1.2; data.qvel[0] = 0; data.qvel[1] = 8');
  assert.ok(runScript(press, model, data, lib).ok);
  assert.deepEqual(Array.from(data.qpos), [0.6, -1.2]);
  const apply = compileScript('model.dof_armature.fill(value)');
  runScript(apply, model, data, lib, 0.1);
  assert.deepEqual(Array.from(model.dof_armature), [0.1, 0.1]);
  const expr = compileExpr('(() => { const M = lib.massMatrix(); return M[0][0]; })()');
  lib.forward();
  assert.equal(runScript(expr, model, data, lib).value, lib.massMatrix()[0][0]);
  const bad = runScript(compileScript('data.nothing.fill(0)'), model, data, lib);
  assert.equal(bad.ok, false);
  assert.ok(bad.error instanceof TypeError);
  assert.throws(() => compileExpr('1 +'), SyntaxError);
});

test('readout numbers print with their digits', () => {
  assert.equal(formatNumber(0.516733, 5), '0.51673');
  assert.equal(formatNumber(2.5e-17, 1, 'exp'), '2.5e-17');
  assert.equal(formatNumber(NaN, 3), 'NaN');
});

test('axis ticks are round values with the digits their step needs', () => {
  const text = (lo, hi, n) => niceTicks(lo, hi, n).map((t) => t.text);     // at least two, about n
  assert.deepEqual(text(0.007252, 0.05980, 3), ['0.02', '0.04']);
  assert.deepEqual(text(-1.5, 2.3, 4), ['-1', '0', '1', '2']);
  assert.deepEqual(text(-18, -2, 3), ['-15', '-10', '-5']);
  assert.deepEqual(text(1.1e-9, 3.2e-9, 3), ['2e-9', '3e-9']);
  assert.deepEqual(text(12000, 250000, 3), ['1e+5', '2e+5']);
  assert.deepEqual(niceTicks(1, 1, 3), []);
});
