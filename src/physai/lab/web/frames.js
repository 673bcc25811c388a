// physai view: the model as the server compiled it (view.bin's arrays, named as MjModel's) and the run's body frames
// as physai computed them (run.bin: kinematics.body_poses of each state), so that the page poses and draws the model
// without compiling it and without kinematics of its own: it only composes the frames fixed on bodies (geoms, sites).
//
//   const model = modelFrom(meta, buffer);   // {nq, nbody, ..., stat, body_parentid: Int32Array, ..., mesh_face}
//   const data = makeData(model);            // {xpos, xmat, geom_xpos, geom_xmat, site_xpos, site_xmat}
//   pose(model, data, run.poses.xpos[k], run.poses.xquat[k]);

const TYPES = { Float64Array, Float32Array, Int32Array };

/** The model's arrays over `buffer` (view.bin) as `meta.arrays` lays them out ({type, offset [bytes], length} by
 * name), beside meta's sizes and statistics. */
export function modelFrom(meta, buffer) {
  return addArrays({ ...meta }, meta.arrays, buffer, 'view.bin');
}

/** `model` with the arrays over `buffer` that `layout` names ({type, offset [bytes] from `start`, length} by name). */
export function addArrays(model, layout, buffer, source, start = 0) {
  for (const [name, { type, offset, length }] of Object.entries(layout)) {
    if (!(type in TYPES)) throw new Error(`${source}: ${name} of an unknown type ${type}`);
    model[name] = new TYPES[type](buffer, start + offset, length);
  }
  return model;
}

/** `node` (view.json's run) with each reference {bin, type, offset [bytes], length, shape} to `buffer` (run.bin)
 * replaced by its typed array: of shape (n,), the array; of shape (n, m, ...), n row views of it (m ... numbers each). */
export function unpack(node, buffer) {
  if (node === null || typeof node !== 'object') return node;
  if (Array.isArray(node)) return node.map((x) => unpack(x, buffer));
  if (node.bin === undefined) return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, unpack(v, buffer)]));
  const { bin, type, offset, length, shape } = node;
  if (!(type in TYPES)) throw new Error(`run.bin: ${bin} of an unknown type ${type}`);
  const flat = new TYPES[type](buffer, offset, length);
  if (shape.length === 1) return flat;
  const m = shape.slice(1).reduce((a, b) => a * b, 1);
  return Array.from({ length: shape[0] }, (_, i) => flat.subarray(i * m, (i + 1) * m));
}

/** The frames the page draws: each body's, geom's and site's world frame (xpos: 3 per body [m], xmat: 9, row-major;
 * geom_ and site_ likewise), the world body's set. */
export function makeData(model) {
  const { nbody, ngeom, nsite } = model;
  const data = {
    xpos: new Float64Array(3 * nbody), xmat: new Float64Array(9 * nbody), geom_xpos: new Float64Array(3 * ngeom),
    geom_xmat: new Float64Array(9 * ngeom), site_xpos: new Float64Array(3 * nsite), site_xmat: new Float64Array(9 * nsite),
  };
  data.xmat.set([1, 0, 0, 0, 1, 0, 0, 0, 1]);
  return data;
}

/** data's frames from one state's body frames as physai computed them (xpos (nbody - 1) x 3 [m], xquat (nbody - 1)
 * x 4, w first; physai's body b being MuJoCo's b + 1), then each geom's and site's frame on its body. */
export function pose(model, data, xpos, xquat) {
  if (xpos.length !== 3 * (model.nbody - 1)) throw new Error(`run.bin: ${xpos.length / 3} body frames, the model has ${model.nbody - 1} bodies`);
  data.xpos.set(xpos, 3);
  for (let b = 1; b < model.nbody; b++) quatToMat(data.xmat, 9 * b, xquat, 4 * (b - 1));
  place(model.geom_bodyid, model.geom_pos, model.geom_mat, data, data.geom_xpos, data.geom_xmat);
  place(model.site_bodyid, model.site_pos, model.site_mat, data, data.site_xpos, data.site_xmat);
}

/** The rotation matrix (row-major, at m[o]) of the quaternion (w, x, y, z) at q[k], normalized first (float32's
 * rounding). */
function quatToMat(m, o, q, k) {
  const n = Math.hypot(q[k], q[k + 1], q[k + 2], q[k + 3]);
  const w = q[k] / n, x = q[k + 1] / n, y = q[k + 2] / n, z = q[k + 3] / n;
  m[o] = w * w + x * x - y * y - z * z; m[o + 1] = 2 * (x * y - w * z); m[o + 2] = 2 * (x * z + w * y);
  m[o + 3] = 2 * (x * y + w * z); m[o + 4] = w * w - x * x + y * y - z * z; m[o + 5] = 2 * (y * z - w * x);
  m[o + 6] = 2 * (x * z - w * y); m[o + 7] = 2 * (y * z + w * x); m[o + 8] = w * w - x * x - y * y + z * z;
}

/** Frames fixed on bodies (geoms, sites), their offsets pos (3 each) and rotations mat (9 each) in their body's frame:
 * x = R_b pos + x_b, R = R_b mat. */
function place(bodyid, pos, mat, data, outPos, outMat) {
  const { xpos, xmat } = data;
  for (let k = 0; k < bodyid.length; k++) {
    const b = 9 * bodyid[k], p = 3 * bodyid[k];
    for (let r = 0; r < 3; r++) {
      const row = b + 3 * r;
      outPos[3 * k + r] = xmat[row] * pos[3 * k] + xmat[row + 1] * pos[3 * k + 1] + xmat[row + 2] * pos[3 * k + 2] + xpos[p + r];
      for (let c = 0; c < 3; c++) {
        outMat[9 * k + 3 * r + c] = xmat[row] * mat[9 * k + c] + xmat[row + 1] * mat[9 * k + 3 + c] + xmat[row + 2] * mat[9 * k + 6 + c];
      }
    }
  }
}
