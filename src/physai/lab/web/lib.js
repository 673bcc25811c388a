// physai lab: the parts of the runtime that need no browser (loaded by the page and by `node --test`).
//
//   const model = loadModel(mujoco, {'arm2.xml': bytes}, 'arm2.xml');   // MJCF and assets into MuJoCo's FS
//   const data = new mujoco.MjData(model);
//   const lib = makeLib(mujoco, model, data);   // what the lab's scripts see as `lib`
//   const fn = compileScript(code);  runScript(fn, model, data, lib, value) -> {ok, value, error}
//
// Views such as data.qpos are live Float64Arrays over wasm memory: any call that allocates (new MjData,
// a DoubleBuffer, loading a model) may grow that memory and detach views taken before it, so nothing here
// keeps a view across calls; each use reads the property again.

/** The model's files, fetched from the page's model/ folder: {name: bytes}. */
export async function fetchModelFiles(files) {
  const bytes = {};
  await Promise.all(files.map(async (f) => {
    const res = await fetch(`model/${f}`);
    if (!res.ok) throw new Error(`model file ${f}: HTTP ${res.status}`);
    bytes[f] = new Uint8Array(await res.arrayBuffer());
  }));
  return bytes;
}

/** Write the model's files into MuJoCo's in-memory FS under /model and compile the main MJCF file. */
export function loadModel(mujoco, files, main, root = '/model') {
  for (const [name, bytes] of Object.entries(files)) {
    const path = `${root}/${name}`;
    const parts = path.split('/').slice(1, -1);
    let dir = '';
    for (const part of parts) {
      dir += `/${part}`;
      try { mujoco.FS.mkdir(dir); } catch (e) { /* exists */ }
    }
    mujoco.FS.writeFile(path, bytes);
  }
  const model = mujoco.MjModel.from_xml_path(`${root}/${main}`);
  // lib.energy() reads data.energy, which MuJoCo fills only with the energy flag; it changes no dynamics.
  model.opt.enableflags = model.opt.enableflags | mujoco.mjtEnableBit.mjENBL_ENERGY.value;
  return model;
}

/** The helpers a lab's scripts get as `lib`. */
export function makeLib(mujoco, model, data) {
  const nv = model.nv;
  const dense = new mujoco.DoubleBuffer(Math.max(nv * nv, 1));   // allocated once: mj_fullM writes into it
  return {
    mujoco,
    /** Scratch space that a lab's scripts share (setup stores tables and helpers here). */
    vars: {},
    /** The dense joint-space mass matrix (mj_fullM) at the last mj_forward, as nv rows of nv numbers. */
    massMatrix() {
      mujoco.mj_fullM(model, data, dense);
      const flat = dense.GetView();           // re-read: the view of a previous call may be detached
      const rows = [];
      for (let i = 0; i < nv; i++) rows.push(Array.from(flat.subarray(i * nv, (i + 1) * nv)));
      return rows;
    },
    /** MuJoCo's energy terms at the last mj_forward [J]. */
    energy() {
      const e = data.energy;
      return { potential: e[0], kinetic: e[1] };
    },
    /** mj_forward on the lab's model and data. */
    forward() { mujoco.mj_forward(model, data); },
    /** Free what makeLib allocated. */
    dispose() { dense.delete(); },
  };
}

const ARGS = ['model', 'data', 'lib', 'value'];

/** Compile a script (statements). Throws SyntaxError for code that does not parse. */
export function compileScript(code) {
  return new Function(...ARGS, code);
}

/** Compile a readout or trace expression into a function returning its value. */
export function compileExpr(expr) {
  return new Function(...ARGS, `return (${expr}\n);`);
}

/** Run a compiled script; a throw becomes {ok: false, error} so that nothing else stops. */
export function runScript(fn, model, data, lib, value) {
  try {
    return { ok: true, value: fn(model, data, lib, value) };
  } catch (error) {
    return { ok: false, error };
  }
}

/** A readout's text: `digits` decimals (default 4), or exponent notation with format "exp". */
export function formatNumber(x, digits = 4, format = 'fixed') {
  if (typeof x !== 'number') return String(x);
  if (!Number.isFinite(x)) return String(x);
  return format === 'exp' ? x.toExponential(digits) : x.toFixed(digits);
}

/** An error as one line of text. */
export function errorText(error) {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}

/** Axis ticks for [lo, hi]: the multiples of a round step (1, 2 or 5 times a power of ten) inside it, about `count` of
 * them, each {value, text} with as many digits as the step needs (0.02, 0.04 rather than 0.05980, 0.007252). */
export function niceTicks(lo, hi, count = 4) {
  if (!(hi > lo) || !Number.isFinite(lo) || !Number.isFinite(hi)) return [];
  const raw = (hi - lo) / count, mag = 10 ** Math.floor(Math.log10(raw));
  const steps = [0.5, 1, 2, 5, 10].map((f) => f * mag);
  let k = steps.findIndex((s) => s >= raw * (1 - 1e-12));
  const inside = (s) => Math.floor(hi / s + 1e-9) - Math.ceil(lo / s - 1e-9) + 1;
  while (k > 0 && inside(steps[k]) < 2) k--;                           // at least two ticks
  const step = steps[k];
  const stepExp = Math.floor(Math.log10(step) + 1e-9);
  const ticks = [];
  for (let k = Math.ceil(lo / step - 1e-9); k * step <= hi + 1e-9 * step; k++) {
    const value = k * step, a = Math.abs(value);
    let text;
    if (value === 0) text = '0';
    else if (step >= 1e-3 && a < 1e5) text = value.toFixed(Math.max(0, -stepExp));
    else text = value.toExponential(Math.max(0, Math.floor(Math.log10(a) + 1e-9) - stepExp));
    ticks.push({ value, text });
  }
  return ticks;
}
