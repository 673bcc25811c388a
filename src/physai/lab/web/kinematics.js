// physai view: the model as the server compiled it (Python's MuJoCo; view.bin's arrays, named as MjModel's) and
// MuJoCo's mj_kinematics on it, so that the page poses and draws the model without compiling it again.
//
//   const model = modelFrom(meta, buffer);   // {nq, nbody, ..., stat, body_parentid: Int32Array, ..., mesh_face}
//   const data = makeData(model);            // {qpos, xpos, xquat, xmat, geom_xpos, geom_xmat, site_xpos, site_xmat}
//   data.qpos.set(q); kinematics(model, data);

const FREE = 0, BALL = 1, SLIDE = 2, HINGE = 3;       // mjtJoint
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
 * replaced by its typed array: of shape (n,), the array; of shape (n, m), n row views of it. */
export function unpack(node, buffer) {
  if (node === null || typeof node !== 'object') return node;
  if (Array.isArray(node)) return node.map((x) => unpack(x, buffer));
  if (node.bin === undefined) return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, unpack(v, buffer)]));
  const { bin, type, offset, length, shape } = node;
  if (!(type in TYPES)) throw new Error(`run.bin: ${bin} of an unknown type ${type}`);
  const flat = new TYPES[type](buffer, offset, length);
  if (shape.length === 1) return flat;
  const m = shape[1];
  return Array.from({ length: shape[0] }, (_, i) => flat.subarray(i * m, (i + 1) * m));
}

/** The state the page poses: qpos (nq,) and each body's, geom's and site's world frame (xpos: 3 per body [m], xquat:
 * 4, xmat: 9, row-major; geom_ and site_ likewise), the world body's set. */
export function makeData(model) {
  const { nq, nbody, ngeom, nsite } = model;
  const data = {
    qpos: Float64Array.from(model.qpos0), xpos: new Float64Array(3 * nbody), xquat: new Float64Array(4 * nbody),
    xmat: new Float64Array(9 * nbody), geom_xpos: new Float64Array(3 * ngeom), geom_xmat: new Float64Array(9 * ngeom),
    site_xpos: new Float64Array(3 * nsite), site_xmat: new Float64Array(9 * nsite),
  };
  if (data.qpos.length !== nq) throw new Error(`view.bin: qpos0 has ${data.qpos.length} numbers, nq = ${nq}`);
  data.xquat[0] = 1;
  quatToMat(data.xmat, 0, data.xquat, 0);
  return data;
}

/** data's body, geom and site frames from data.qpos: MuJoCo's mj_kinematics (a free joint's q directly; else the
 * parent's frame, the body's offset, then each joint: a slide along its axis, a hinge about it, a ball by its
 * quaternion, about the joint's anchor), then each geom's and site's frame on its body. */
export function kinematics(model, data) {
  const { qpos, xpos, xquat, xmat } = data;
  const q = new Float64Array(4), v = new Float64Array(3), anchor = new Float64Array(3), axis = new Float64Array(3);
  for (let i = 1; i < model.nbody; i++) {
    const adr = model.body_jntadr[i], num = model.body_jntnum[i];
    if (num === 1 && model.jnt_type[adr] === FREE) {
      const a = model.jnt_qposadr[adr];
      xpos.set(qpos.subarray(a, a + 3), 3 * i);
      xquat.set(qpos.subarray(a + 3, a + 7), 4 * i);
      normalize4(xquat, 4 * i);
    } else {
      const p = model.body_parentid[i];
      mulMatVec(xpos, 3 * i, xmat, 9 * p, model.body_pos, 3 * i);        // xpos = xmat_p body_pos + xpos_p
      for (let r = 0; r < 3; r++) xpos[3 * i + r] += xpos[3 * p + r];
      mulQuat(xquat, 4 * i, xquat, 4 * p, model.body_quat, 4 * i);      // xquat = xquat_p body_quat
      for (let j = adr; j < adr + num; j++) joint(model, qpos, j, xpos, xquat, i, q, v, anchor, axis);
      normalize4(xquat, 4 * i);
    }
    quatToMat(xmat, 9 * i, xquat, 4 * i);
  }
  place(model.geom_bodyid, model.geom_pos, model.geom_quat, data, data.geom_xpos, data.geom_xmat, q);
  place(model.site_bodyid, model.site_pos, model.site_quat, data, data.site_xpos, data.site_xmat, q);
}

/** Joint j of body i applied to the body's frame (xpos, xquat at 3i, 4i): mj_kinematics's joint step. */
function joint(model, qpos, j, xpos, xquat, i, qloc, v, anchor, axis) {
  const a = model.jnt_qposadr[j], type = model.jnt_type[j];
  rotVecQuat(axis, 0, model.jnt_axis, 3 * j, xquat, 4 * i);             // the axis and anchor in the world
  rotVecQuat(anchor, 0, model.jnt_pos, 3 * j, xquat, 4 * i);
  for (let r = 0; r < 3; r++) anchor[r] += xpos[3 * i + r];
  if (type === SLIDE) {
    for (let r = 0; r < 3; r++) xpos[3 * i + r] += axis[r] * (qpos[a] - model.qpos0[a]);
    return;
  }
  if (type === BALL) {
    qloc.set(qpos.subarray(a, a + 4));
    normalize4(qloc, 0);
  } else if (type === HINGE) {
    axisAngleQuat(qloc, model.jnt_axis, 3 * j, qpos[a] - model.qpos0[a]);
  } else {
    throw new Error(`joint ${j}: a free joint among the joints of body ${i}`);
  }
  mulQuat(xquat, 4 * i, xquat, 4 * i, qloc, 0);                          // rotate, then about the anchor
  rotVecQuat(v, 0, model.jnt_pos, 3 * j, xquat, 4 * i);
  for (let r = 0; r < 3; r++) xpos[3 * i + r] = anchor[r] - v[r];
}

/** Frames fixed on bodies (geoms, sites): x = xmat_b pos + xpos_b, R = mat(xquat_b quat). */
function place(bodyid, pos, quat, data, outPos, outMat, q) {
  for (let k = 0; k < bodyid.length; k++) {
    const b = bodyid[k];
    mulMatVec(outPos, 3 * k, data.xmat, 9 * b, pos, 3 * k);
    for (let r = 0; r < 3; r++) outPos[3 * k + r] += data.xpos[3 * b + r];
    mulQuat(q, 0, data.xquat, 4 * b, quat, 4 * k);
    quatToMat(outMat, 9 * k, q, 0);
  }
}

// ---- quaternions (w, x, y, z) and 3x3 matrices (row-major) at offsets into flat arrays, as MuJoCo's mju_ ----

function normalize4(q, o) {
  const n = Math.hypot(q[o], q[o + 1], q[o + 2], q[o + 3]);
  if (n < 1e-15) { q[o] = 1; q[o + 1] = q[o + 2] = q[o + 3] = 0; return; }
  for (let r = 0; r < 4; r++) q[o + r] /= n;
}

function mulQuat(out, o, a, i, b, k) {
  const w = a[i] * b[k] - a[i + 1] * b[k + 1] - a[i + 2] * b[k + 2] - a[i + 3] * b[k + 3];
  const x = a[i] * b[k + 1] + a[i + 1] * b[k] + a[i + 2] * b[k + 3] - a[i + 3] * b[k + 2];
  const y = a[i] * b[k + 2] - a[i + 1] * b[k + 3] + a[i + 2] * b[k] + a[i + 3] * b[k + 1];
  const z = a[i] * b[k + 3] + a[i + 1] * b[k + 2] - a[i + 2] * b[k + 1] + a[i + 3] * b[k];
  out[o] = w; out[o + 1] = x; out[o + 2] = y; out[o + 3] = z;
}

function quatToMat(m, o, q, k) {
  const w = q[k], x = q[k + 1], y = q[k + 2], z = q[k + 3];
  m[o] = w * w + x * x - y * y - z * z; m[o + 1] = 2 * (x * y - w * z); m[o + 2] = 2 * (x * z + w * y);
  m[o + 3] = 2 * (x * y + w * z); m[o + 4] = w * w - x * x + y * y - z * z; m[o + 5] = 2 * (y * z - w * x);
  m[o + 6] = 2 * (x * z - w * y); m[o + 7] = 2 * (y * z + w * x); m[o + 8] = w * w - x * x - y * y + z * z;
}

// out = mat vec (mat 3x3 at m[o], vec at v[k])
function mulMatVec(out, i, m, o, v, k) {
  for (let r = 0; r < 3; r++) out[i + r] = m[o + 3 * r] * v[k] + m[o + 3 * r + 1] * v[k + 1] + m[o + 3 * r + 2] * v[k + 2];
}

// out = q v q*: v rotated by the unit quaternion q
function rotVecQuat(out, i, v, k, q, o) {
  const w = q[o], x = q[o + 1], y = q[o + 2], z = q[o + 3], a = v[k], b = v[k + 1], c = v[k + 2];
  const tx = 2 * (y * c - z * b), ty = 2 * (z * a - x * c), tz = 2 * (x * b - y * a);   // t = 2 q_v x v
  out[i] = a + w * tx + y * tz - z * ty;                                                 // v + w t + q_v x t
  out[i + 1] = b + w * ty + z * tx - x * tz;
  out[i + 2] = c + w * tz + x * ty - y * tx;
}

function axisAngleQuat(out, axis, k, angle) {
  const s = Math.sin(angle / 2);
  out[0] = Math.cos(angle / 2); out[1] = axis[k] * s; out[2] = axis[k + 1] * s; out[3] = axis[k + 2] * s;
}
