"""MuJoCo's soft constraints, one state at a time: the rows, their impedance and reference acceleration, and the force
of every row (engine_core_constraint.c; the forward problem they pose is solver.py's, the inverse problem inverse.py's).

    invweight0(model)                       body_invweight0 (nbody, 2), dof_invweight0 (nv,) at qpos0 (mj_setConst)
    tendon_invweight0(model)                tendon_invweight0 (ntendon,): J M^-1 J^T of each tendon at qpos0
    rows(model, d, q, qd, contacts, ...)    Rows: MuJoCo's efc_* arrays for the state in d      (mj_makeConstraint,
                                            mj_makeImpedance, mj_referenceConstraint); discrete_h: those of MuJoCo 4's
                                            discrete integrator (their spring-dampers at the end of the step)
    update(rows, jar)                       the force of every row for jar = J qacc - aref, the cost   (mj_constraintUpdate)

A row is one scalar constraint; the rows come in MuJoCo's order (equality, friction loss, limits, contacts) and layout
(a connect 3 rows, a weld 6, a pyramidal contact of dimension dim 2 (dim - 1) edges, an elliptic one dim rows), so
that they compare one by one with MuJoCo's efc_J, efc_aref, efc_R, efc_D and efc_force. Per row i:

    aref_i = -B_i vel_i - K_i imp_i (pos_i - margin_i)        reference acceleration from solref (K, B) and solimp (imp)
    R_i    = (1 - imp_i) / imp_i * diagApprox_i,  D_i = 1 / R_i   the regulariser, from the invweight constants
    force  = -D_i jar_i (equality), Huber in +-frictionloss (friction loss), one-sided (limits, pyramidal edges),
             by the three zones of the cone (elliptic contacts)

The NumPy text here is the reference; it works on one state (a batch loops over its states). The compiled backend
(physai.engine.native) runs the same functions in C++ (cpp/constraint.h), one state at a time and batches on threads:

    compiled_rows                           the kernel constraint_rows on N states with their own contacts (the
                                            kernels of the solver and the inverse: solver.py, inverse.py); kernel_rows
                                            makes a kernel's rows into Rows (the solver's with rows=True too)
"""

from dataclasses import dataclass, field

import numpy as np

from physai import spatial
from physai.engine import model_checks, native, smooth, tendon
from physai.engine.contact import FRICTION_COLUMNS, ContactSet
from physai.engine.data import Data
from physai.engine.primitives import mat_times_mj, sequential_sum
from physai.engine.model import CONNECT, TENDON, WELD, Model, per_model
from physai.engine.model_checks import MAXIMP, MINIMP, MINVAL
from physai.engine.smooth import body_poses, quat_to_mat_mj
from physai.engine.support import dof_chain, point_jacobians
from physai.exceptions import UnsupportedModelError
from physai.joints import BALL, HINGE, SLIDE

#: row types, MuJoCo's numbers (mjtConstraint)
EQUALITY, FRICTION_DOF, FRICTION_TENDON, LIMIT_JOINT, LIMIT_TENDON, CONTACT_FRICTIONLESS, CONTACT_PYRAMIDAL, CONTACT_ELLIPTIC = range(8)
#: row states after an update, MuJoCo's numbers (mjtConstraintState)
SATISFIED, QUADRATIC, LINEARNEG, LINEARPOS, CONE = range(5)


# ---------------------------------------------------------------- the constants at qpos0 (mj_setConst)

def invweight0(model: Model) -> tuple[np.ndarray, np.ndarray]:
    """(body_invweight0 (nbody, 2), dof_invweight0 (nv,)) at qpos0, made when the model was built
    (physai.engine.setconst.invweight0, mj_setConst's); they scale each row's regulariser R (diagApprox).
    InvalidModelError naming the moving bodies without mass when M is singular at qpos0, which MuJoCo's compiler
    refuses ("mass and inertia of moving bodies must be larger than mjMINVAL")."""
    found = model.kept("invweight0")
    if found is None:
        raise model_checks.singular_at_rest(model)
    return found


def tendon_invweight0(model: Model) -> np.ndarray:
    """(ntendon,) MuJoCo's tendon_invweight0: J M^-1 J^T of each tendon at qpos0, made when the model was built
    (physai.engine.setconst.tendon_invweight0); the diagApprox of its limit, friction and equality rows."""
    found = model.kept("tendon_invweight0")
    if found is None:
        raise model_checks.singular_at_rest(model)
    return found


# ---------------------------------------------------------------- kinematics the rows read

def bias_accelerations(model: Model, d: Data, qd: np.ndarray) -> np.ndarray:
    """(nlink + 1, 6) each link's spatial acceleration with qdd = 0 and no gravity: sum of cdof_dot qd over its dofs
    (the row -1: the world, zero), from a one-state Data with com_vel done."""
    inc = smooth.per_link(model, d.cdof_dot[:, :, 0] * qd[:, None])
    a = np.zeros((model.nlink + 1, 6))
    for i, p in enumerate(model.link_parents):
        a[i] = a[p] + inc[i]
    return a


def point_bias_acceleration(model: Model, d: Data, acc: np.ndarray, b: int, point: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(Jdot qd of the point (3,), Jrdot qd (3,)) of a world point moving with body b: its acceleration with qdd = 0 and
    no gravity, a = a_lin + a_ang x r + w x (v + w x r), r = point - centre, and the body's angular one a_ang."""
    link = model.body_linkid[b] if b >= 0 else -1
    if link < 0:
        return np.zeros(3), np.zeros(3)
    w, v = d.cvel[link, :3, 0], d.cvel[link, 3:, 0]
    r = point - d.center[link, :, 0]
    a = acc[link]
    return a[3:] + np.cross(a[:3], r) + np.cross(w, v + np.cross(w, r)), a[:3].copy()


# ---------------------------------------------------------------- the rows

@dataclass
class Rows:
    """The constraint rows of one state, MuJoCo's efc_* arrays (nefc rows) and what the solver needs besides:

    J (nefc, nv), pos, margin, frictionloss, type, id        efc_J, efc_pos, efc_margin, efc_frictionloss, efc_type, efc_id
    ne, nf, nl                                               rows of equalities, friction loss, limits (contacts after)
    diagA, R, D, K, B, imp, impP                             diagApprox (as MuJoCo adjusts it), efc_R, efc_D, efc_KBIP
    vel, aref                                                efc_vel = J qd, efc_aref
    contact_dim, contact_mu, contact_friction, contact_row   per contact with rows: dim, the regularised cone's mu, the
                                                             5 friction coefficients, its first row (-1: no rows)
    contact_body                                             (ncon, 2) its geoms' bodies (-1: the world), which place
                                                             its rows in an island (physai.engine.island)
    group                                                    the first row of each group of consecutive rows on the same
                                                             columns (a contact's; cpp's r.group), then nefc; None: by
                                                             the rows' nonzero columns (row_groups)
    """

    J: np.ndarray
    pos: np.ndarray
    margin: np.ndarray
    frictionloss: np.ndarray
    type: np.ndarray
    id: np.ndarray
    ne: int = 0
    nf: int = 0
    nl: int = 0
    diagA: np.ndarray = field(default_factory=lambda: np.zeros(0))
    R: np.ndarray = field(default_factory=lambda: np.zeros(0))
    D: np.ndarray = field(default_factory=lambda: np.zeros(0))
    K: np.ndarray = field(default_factory=lambda: np.zeros(0))
    B: np.ndarray = field(default_factory=lambda: np.zeros(0))
    imp: np.ndarray = field(default_factory=lambda: np.zeros(0))
    impP: np.ndarray = field(default_factory=lambda: np.zeros(0))
    vel: np.ndarray = field(default_factory=lambda: np.zeros(0))
    aref: np.ndarray = field(default_factory=lambda: np.zeros(0))
    contact_dim: np.ndarray = field(default_factory=lambda: np.zeros(0, np.intp))
    contact_mu: np.ndarray = field(default_factory=lambda: np.zeros(0))
    contact_friction: np.ndarray = field(default_factory=lambda: np.zeros((0, 5)))
    contact_row: np.ndarray = field(default_factory=lambda: np.zeros(0, np.intp))
    contact_body: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.intp))
    group: np.ndarray | None = None

    @property
    def nefc(self) -> int:
        return len(self.pos)


def row_groups(r: Rows) -> np.ndarray:
    """r.group, or when not given or not r's (rows from the compiled kernel, or rows selected from others) the groups of
    consecutive rows on the same nonzero columns: the first row of each, then nefc. The fallback is not always the
    compiled twin's (which groups a contact by its chain's columns, an exact zero entry included), so a Hessian of such
    rows may round apart from its in the last bit."""
    if r.group is not None and len(r.group) and r.group[-1] == r.nefc:
        return r.group
    nonzero = r.J != 0
    new = np.r_[True, (nonzero[1:] != nonzero[:-1]).any(axis=1)] if r.nefc else np.zeros(0, bool)
    return np.r_[np.flatnonzero(new), r.nefc]


def rows_transpose_times(r: Rows, f: np.ndarray) -> np.ndarray:
    """J^T f (nv,) for f (nefc,) in MuJoCo's order (mju_mulMatTVec; cpp/constraint.h's rows_transpose_times): y += J_i
    f_i row after row (sequential_sum), in elementwise products and sums that never fuse (BLAS's J.T @ f rounds in its
    kernel's order, with fused multiply-adds: fma(-a, b, a b) is a b's rounding error where the exact sum is 0). Rows
    with f_i = 0 add nothing (J is finite) and are skipped."""
    k = np.flatnonzero(f)
    return sequential_sum(r.J[k] * f[k, None])


class _Builder:
    """Rows appended block by block (MuJoCo's mj_addConstraint): a block whose Jacobian is all zero is dropped, except
    a contact's."""

    def __init__(self, nv: int):
        self.nv = nv
        self.J, self.pos, self.margin, self.floss, self.type, self.id, self.dA = [], [], [], [], [], [], []
        self.cols: list = []                                                    # each row's columns (nv,) bool

    def add(self, J, pos, margin, frictionloss, kind, ident, diagA, cols=None) -> bool:
        """Append the block J (n, nv) or (nv,); cols (nv,) bool: its rows' columns when given (a contact's dofs, a
        limited joint's), else each row's nonzero entries."""
        J = np.asarray(J, dtype=float)
        J = J.reshape(len(J) if J.ndim == 2 else 1, self.nv)                   # rows counted, not inferred: nv may be 0
        if kind < CONTACT_FRICTIONLESS and not J.any():
            return False
        n = len(J)
        self.J.append(J)
        self.cols += [J[i] != 0 if cols is None else cols for i in range(n)]
        self.pos += list(np.broadcast_to(pos, (n,)))
        self.margin += list(np.broadcast_to(margin, (n,)))
        self.floss += [frictionloss] * n
        self.type += [kind] * n
        self.id += [ident] * n
        self.dA += list(np.broadcast_to(diagA, (n,)))
        return True

    def rows(self) -> Rows:
        J = np.concatenate(self.J) if self.J else np.zeros((0, self.nv))
        # a new group unless on the previous row's columns (cpp/constraint.h's add)
        new = [i == 0 or not np.array_equal(c, self.cols[i - 1]) for i, c in enumerate(self.cols)]
        return Rows(J, np.array(self.pos, dtype=float), np.array(self.margin, dtype=float), np.array(self.floss, dtype=float),
                    np.array(self.type, dtype=np.intp), np.array(self.id, dtype=np.intp), diagA=np.array(self.dA, dtype=float),
                    group=np.r_[np.flatnonzero(new), len(new)].astype(np.intp))


def quat_axis(quat: np.ndarray, axis: np.ndarray) -> np.ndarray:
    """quat * (0, axis) (MuJoCo's mju_mulQuatAxis)."""
    return spatial.quat_mul(quat, np.r_[0.0, axis])


def quat_conjugate(quat: np.ndarray) -> np.ndarray:
    """The conjugate (w, -x, -y, -z) of a quaternion (MuJoCo's mju_negQuat)."""
    return quat * np.array([1.0, -1.0, -1.0, -1.0])


def _equality_rows(model: Model, d: Data, q: np.ndarray, qd: np.ndarray, active: np.ndarray, out: _Builder,
                   frames, quats, acc, jdot: list, tendons) -> None:
    """Connect (3 rows), weld (6), joint and tendon (1) equalities in model order (mj_instantiateEquality); jdot collects
    (first row, Jdot qd of the rows) for the Jdot qd correction of aref (mj_Jdotv); tendons: (ten_length, ten_J)."""
    bw = invweight0(model)[0]
    pos, rot = frames
    weld_rows = 0
    for e in np.flatnonzero(active):
        kind, b1, b2, data = model.eq_type[e], model.eq_obj1id[e], model.eq_obj2id[e], model.eq_data[e]
        inv = lambda b, k: bw[b, k] if b >= 0 else 0.0        # noqa: E731
        if kind in (CONNECT, WELD):
            x = lambda b: (pos[b], rot[b]) if b >= 0 else (np.zeros(3), np.eye(3))   # noqa: E731
            (p1, R1), (p2, R2) = x(b1), x(b2)
            a1, a2 = (data[0:3], data[3:6]) if kind == CONNECT else (data[3:6], data[0:3])
            pos1, pos2 = mat_times_mj(R1, a1) + p1, mat_times_mj(R2, a2) + p2   # R a + p (mj_equalityAnchors)
            J1, J2 = (point_jacobians(model, d, b, p[None, :, None])[0, :, :, 0] for b, p in ((b1, pos1), (b2, pos2)))
            Jd = J1 - J2                                              # body 1 minus body 2: the opposite of a contact
            jt1, jr1 = point_bias_acceleration(model, d, acc, b1, pos1)
            jt2, jr2 = point_bias_acceleration(model, d, acc, b2, pos2)
            if kind == CONNECT:
                if out.add(Jd[:3], pos1 - pos2, 0.0, 0.0, EQUALITY, e, inv(b1, 0) + inv(b2, 0)):
                    jdot.append((len(out.pos) - 3, jt1 - jt2))
                continue
            ts = data[10]
            qb1 = quats[b1] if b1 >= 0 else np.array([1.0, 0, 0, 0])
            qb2 = quats[b2] if b2 >= 0 else np.array([1.0, 0, 0, 0])
            quat = spatial.quat_mul(qb1, data[6:10])                  # q1 relpose
            neg = quat_conjugate(qb2)
            err = spatial.quat_mul(neg, quat)
            Jr = np.array([0.5 * spatial.quat_mul(quat_axis(neg, Jd[3:, j]), quat)[1:] for j in range(model.nv)]).reshape(-1, 3).T
            cpos = np.r_[pos1 - pos2, err[1:] * ts]
            dA = [inv(b1, 0) + inv(b2, 0)] * 3 + [inv(b1, 1) + inv(b2, 1)] * 3
            if weld_rows % 6:                                          # MuJoCo's weld counter (always a multiple of 6)
                dA = dA[weld_rows % 6:] + dA[:weld_rows % 6]
            if out.add(np.vstack([Jd[:3], Jr * ts]), cpos, 0.0, 0.0, EQUALITY, e, np.array(dA)):
                weld_rows += 6
                w1 = d.cvel[model.body_linkid[b1], :3, 0] if b1 >= 0 and model.body_linkid[b1] >= 0 else np.zeros(3)
                w2 = d.cvel[model.body_linkid[b2], :3, 0] if b2 >= 0 and model.body_linkid[b2] >= 0 else np.zeros(3)
                dw_ = w1 - w2
                qdot1 = 0.5 * spatial.quat_mul(np.r_[0.0, w1], qb1)         # world angular velocity: qdot = 1/2 (0, w) q
                qdot2 = 0.5 * spatial.quat_mul(np.r_[0.0, w2], qb2)
                t1 = spatial.quat_mul(quat_axis(quat_conjugate(qdot2), dw_), quat)
                t2 = spatial.quat_mul(quat_axis(neg, jr1 - jr2), quat)
                t3 = spatial.quat_mul(quat_axis(neg, dw_), spatial.quat_mul(qdot1, data[6:10]))
                jdot.append((len(out.pos) - 6, np.r_[jt1 - jt2, 0.5 * (t1 + t2 + t3)[1:] * ts]))
            continue
        # joint or tendon: x1 - ref1 - data[0] - poly(x2 - ref2), J = J1 - poly'(x2 - ref2) J2
        x1, ref1, J1, w1 = _scalar_object(model, kind, b1, q, tendons)
        cpos, J, dA = x1 - ref1 - data[0], J1.copy(), w1
        if b2 >= 0:
            x2, ref2, J2, w2 = _scalar_object(model, kind, b2, q, tendons)
            dif = x2 - ref2
            cpos = x1 - ref1 - data[0] - (data[1] * dif + data[2] * dif * dif + data[3] * dif * dif * dif
                                          + data[4] * dif * dif * dif * dif)
            deriv = data[1] + 2 * data[2] * dif + 3 * data[3] * dif * dif + 4 * data[4] * dif * dif * dif
            J = J - deriv * J2
            dA += w2
        out.add(J, cpos, 0.0, 0.0, EQUALITY, e, dA)


def _scalar_object(model: Model, kind: int, i: int, q: np.ndarray, tendons) -> tuple[float, float, np.ndarray, float]:
    """(value, its reference, Jacobian (nv,), invweight0) of joint i (q, qpos0, the unit row of its dof) or, for a
    tendon equality, tendon i (its length, tendon_length0, ten_J, tendon_invweight0)."""
    if kind == TENDON:
        return tendons[0][i], model.tendon_length0[i], tendons[1][i], tendon_invweight0(model)[i]
    a, v = model.jnt_qposadr[i], model.jnt_dofadr[i]
    J = np.zeros(model.nv)
    J[v] = 1.0
    return q[a], model.qpos0[a], J, invweight0(model)[1][v]


def _ball_angle_axis(quat: np.ndarray) -> tuple[float, np.ndarray]:
    """(rotation angle [rad], unit axis) of a ball joint's quaternion, normalized first (mju_quat2Vel, mju_normalize3)."""
    quat = spatial.quat_normalize(quat)
    axis = quat[1:].copy()
    s = np.sqrt(axis @ axis)
    axis = np.array([1.0, 0.0, 0.0]) if s < MINVAL else axis / s
    speed = 2 * np.arctan2(s, quat[0])
    if speed > np.pi:
        speed -= 2 * np.pi
    v = axis * speed
    value = np.sqrt(v @ v)
    return value, (np.array([1.0, 0.0, 0.0]) if value < MINVAL else v / value)


def check_supported(model: Model) -> None:
    """UnsupportedModelError naming what the model has that physai's constraint model does not cover (both backends)."""
    if model.unsupported:
        raise UnsupportedModelError(f"physai's constraint model does not cover what this model has: {'; '.join(model.unsupported)}")


def rows(model: Model, d: Data, q: np.ndarray, qd: np.ndarray, contacts: ContactSet | None,
         eq_active: np.ndarray | None = None, discrete_h: float | None = None,
         step_diagonal: np.ndarray | None = None) -> Rows:
    """The constraint rows of the state (q (nq,), qd (nv,)) whose velocity stages d holds (a one-state Data), with the
    contacts given, in MuJoCo's order, with their impedance, regulariser and reference acceleration. discrete_h: the
    timestep h [s] of MuJoCo 4's discrete integrator, whose rows act at the end of the step (discrete_metric_terms);
    step_diagonal (nv,): the diagonal of its metric M + h B + h^2 K (default: the joints' B and K alone)."""
    check_supported(model)
    opt, nv = model.opt, model.nv
    bw, dw = invweight0(model)
    out = _Builder(nv)
    jdot: list = []
    tendons = tendon.tendons(model, d, q) if model.has_tendon_forces else None
    tw = tendon_invweight0(model) if tendons is not None else None
    # equalities: connect, weld, joint
    if opt.equality and len(model.eq_type):
        active = model.eq_active0 if eq_active is None else np.asarray(eq_active, bool)
        acc = bias_accelerations(model, d, qd)
        # the bodies' frames in MuJoCo's arithmetic: a weld's error cancels in the last digits of its anchors
        xpos, xquat = body_poses(model, q)
        _equality_rows(model, d, q, qd, active, out, (xpos, quat_to_mat_mj(xquat)), xquat, acc, jdot, tendons)
    ne = len(out.pos)
    # dry friction of each dof: J = e_i, force within +-frictionloss
    if opt.frictionloss:
        for i in np.flatnonzero(model.dof_frictionloss):
            J = np.zeros(nv)
            J[i] = 1.0
            out.add(J, 0.0, 0.0, model.dof_frictionloss[i], FRICTION_DOF, i, dw[i])
        # dry friction along each tendon: J = ten_J
        for t in np.flatnonzero(model.tendon_frictionloss):
            out.add(tendons[1][t], 0.0, 0.0, model.tendon_frictionloss[t], FRICTION_TENDON, t, tw[t])
    nf = len(out.pos) - ne
    # joint limits: dist = side (range - q) for hinge and slide, max(range) - angle for a ball, active below the margin
    if opt.limit:
        for j in np.flatnonzero(model.jnt_limited):
            a, v, margin = model.jnt_qposadr[j], model.jnt_dofadr[j], model.jnt_margin[j]
            if model.jnt_type[j] in (HINGE, SLIDE):
                for side in (-1, 1):
                    dist = side * (model.jnt_range[j, (side + 1) // 2] - q[a])
                    if dist < margin:
                        J = np.zeros(nv)
                        J[v] = -side
                        out.add(J, dist, margin, 0.0, LIMIT_JOINT, j, dw[v], J != 0)
            elif model.jnt_type[j] == BALL:
                value, axis = _ball_angle_axis(q[a:a + 4])
                dist = max(model.jnt_range[j]) - value
                if dist < margin:
                    J = np.zeros(nv)
                    J[v:v + 3] = -axis
                    out.add(J, dist, margin, 0.0, LIMIT_JOINT, j, dw[v], (np.arange(nv) >= v) & (np.arange(nv) < v + 3))
        # tendon limits: dist = side (range - length), J = -side ten_J
        for t in np.flatnonzero(model.tendon_limited):
            margin = model.tendon_margin[t]
            for side in (-1, 1):
                dist = side * (model.tendon_range[t, (side + 1) // 2] - tendons[0][t])
                if dist < margin:
                    out.add(-side * tendons[1][t], dist, margin, 0.0, LIMIT_TENDON, t, tw[t])
    nl = len(out.pos) - ne - nf
    # contacts: the frame applied to the difference of the two bodies' point Jacobians (body 2 minus body 1, skipping
    # the dofs that move both)
    nc = 0 if contacts is None or not opt.contact else len(contacts)
    contact_row = np.full(nc, -1, np.intp)
    pyramidal = opt.cone == "pyramidal"
    for c in range(nc):
        b1, b2, p, frame, dim = contacts.body1[c], contacts.body2[c], contacts.pos[c], contacts.frame[c], contacts.dim[c]
        c1, c2 = dof_chain(model, b1), dof_chain(model, b2)
        if not (c1 ^ c2).any():
            continue                                                  # no dof moves one body but not the other
        common = c1 & c2
        J2, J1 = (point_jacobians(model, d, b, p[None, :, None])[0, :, :, 0] for b in (b2, b1))
        Jd = J2 - J1
        Jd[:, common] = 0.0                                           # the dofs that move both bodies: skipped
        jac = np.vstack([frame[:3 if dim > 1 else 1] @ Jd[:3]] + ([frame[:dim - 3] @ Jd[3:]] if dim > 3 else []))
        tran = sum(bw[b, 0] for b in (b1, b2) if b >= 0)
        rot = sum(bw[b, 1] for b in (b1, b2) if b >= 0)
        dist, margin, mu = contacts.dist[c], contacts.includemargin[c], contacts.friction[c]
        contact_row[c] = len(out.pos)
        if dim == 1:
            out.add(jac, dist, margin, 0.0, CONTACT_FRICTIONLESS, c, tran, c1 ^ c2)
        elif pyramidal:
            for k in range(1, dim):
                edges = np.vstack([jac[0] + mu[k - 1] * jac[k], jac[0] - mu[k - 1] * jac[k]])
                out.add(edges, dist, margin, 0.0, CONTACT_PYRAMIDAL, c, tran + mu[k - 1] ** 2 * (tran if k - 1 < 2 else rot),
                        c1 ^ c2)
        else:
            out.add(jac, np.r_[dist, np.zeros(dim - 1)], np.r_[margin, np.zeros(dim - 1)], 0.0, CONTACT_ELLIPTIC, c,
                    np.array([tran if j < 3 else rot for j in range(dim)]), c1 ^ c2)
    r = out.rows()
    r.ne, r.nf, r.nl = ne, nf, nl
    r.contact_dim = contacts.dim[:nc].copy() if nc else np.zeros(0, np.intp)
    r.contact_friction = contacts.friction[:nc].copy() if nc else np.zeros((0, 5))
    r.contact_row, r.contact_mu = contact_row, np.zeros(nc)
    r.contact_body = np.stack([contacts.body1[:nc], contacts.body2[:nc]], axis=1) if nc else np.zeros((0, 2), np.intp)
    if discrete_h is not None:                                        # diagApprox in the metric M + h B + h^2 K
        r.diagA = r.diagA * discrete_diagonal_ratio(model, d, r.J, discrete_h, step_diagonal)
    _impedance(model, r, contacts, discrete_h)
    r.vel = r.J @ qd
    r.aref = -r.B * r.vel - r.K * r.imp * (r.pos - r.margin)
    for first, jdv in jdot:                                           # connect and weld: aref -= Jdot qd
        r.aref[first:first + len(jdv)] -= jdv
    if discrete_h is not None:                                        # the spring-damper at the step's end: (aref - h K imp vel) / s
        r.aref = (r.aref - discrete_h * r.K * r.imp * r.vel) / end_of_step_factor(discrete_h, r.B, r.K, r.imp)
    return r


# ---------------------------------------------------------------- MuJoCo 4's discrete integrator (mjINT_DISCRETE)

def discrete_stiffness(model: Model) -> np.ndarray:
    """K (nv,) [N m/rad | N/m]: the joints' spring stiffness on their dofs, the discrete integrator's position
    derivative -d f / d q (diagonal: hinges and slides)."""
    K = np.zeros(model.nv)
    K[model.spring_dofadr] = model.spring_stiffness
    return K


def discrete_diagonal_ratio(model: Model, d: Data, J: np.ndarray, h: float,
                            step_diagonal: np.ndarray | None = None) -> np.ndarray:
    """(nefc,) each row's diagApprox factor under the discrete integrator, for rows J (nefc, nv) at the state whose
    positions the one-state Data d holds and the timestep h [s]: J diag(M + h B + h^2 K)^-1 J^T / J diag(M)^-1 J^T with
    M's diagonal at the state: the row's inverse inertia in the step's metric over the bare one (1 for a row whose bare
    one is at most MINVAL, as MuJoCo 4: a contact normal whose J is rounding noise, ~1e-16, keeps its diagApprox).
    step_diagonal (nv,): diag(M + h B + h^2 K) with the tendons' and servos' terms (forward.discrete_metric_terms);
    default the joints' B and K alone."""
    M = np.diag(smooth.crb(model, d)[:, :, 0])
    J2 = J * J
    bare = J2 @ (1 / M)
    if step_diagonal is None:                                           # the joints' diagonal B and K
        step_diagonal = M + (h * model.dof_damping + h * h * discrete_stiffness(model))
    effective = J2 @ (1 / step_diagonal)
    return np.where(bare > MINVAL, effective / np.where(bare > MINVAL, bare, 1.0), 1.0)


def end_of_step_factor(h: float, B, K, imp):
    """s = 1 + h B + h^2 K imp, of one row or each: a row's spring-damper (K, B, imp) evaluated at the end of a discrete
    step of h [s] divides its aref and R by s."""
    return 1 + h * B + h * h * K * imp


# ---------------------------------------------------------------- impedance and reference (mj_makeImpedance)

def _solver_parameters(model: Model, r: Rows, i: int, contacts: ContactSet | None, discrete: bool = False):
    """(solref, solreffriction, solimp) of row i's constraint, with MuJoCo's safety rules applied (the discrete
    integrator keeps the time constants as authored: _impedance replaces its unresolved springs instead)."""
    kind, ident = r.type[i], r.id[i]
    reffric = np.zeros(2)
    if kind == EQUALITY:
        ref, imp = model.eq_solref[ident], model.eq_solimp[ident]
    elif kind == LIMIT_JOINT:
        ref, imp = model.jnt_solref[ident], model.jnt_solimp[ident]
    elif kind == FRICTION_DOF:
        ref, imp = model.dof_solref[ident], model.dof_solimp[ident]
    elif kind == LIMIT_TENDON:
        ref, imp = model.tendon_solref_lim[ident], model.tendon_solimp_lim[ident]
    elif kind == FRICTION_TENDON:
        ref, imp = model.tendon_solref_fri[ident], model.tendon_solimp_fri[ident]
    else:
        ref, reffric, imp = contacts.solref[ident], contacts.solreffriction[ident], contacts.solimp[ident]
    ref, reffric, imp = np.array(ref, float), np.array(reffric, float), np.array(imp, float)
    if (ref[0] > 0) != (ref[1] > 0):                                  # mixed standard and direct: MuJoCo's default
        ref = np.array([0.02, 1.0])
    clamp = model.opt.refsafe and not discrete
    if clamp and ref[0] > 0:                                          # a time constant of at least two steps
        ref[0] = max(ref[0], 2 * model.opt.timestep)
    if (reffric[0] > 0) != (reffric[1] > 0):
        reffric = np.zeros(2)
    if clamp and reffric[0] > 0:
        reffric[0] = max(reffric[0], 2 * model.opt.timestep)
    imp[0], imp[1], imp[3] = (min(MAXIMP, max(MINIMP, x)) for x in imp[[0, 1, 3]])
    imp[2], imp[4] = max(0.0, imp[2]), max(1.0, imp[4])
    return ref, reffric, imp


def impedance_block(model: Model, r: Rows, i: int) -> tuple[int, float]:
    """(rows, position) of the constraint starting at row i that share one impedance (MuJoCo's getposdim)."""
    kind = r.type[i]
    if kind == CONTACT_ELLIPTIC:
        return int(r.contact_dim[r.id[i]]), r.pos[i]
    if kind == CONTACT_PYRAMIDAL:
        return 2 * (int(r.contact_dim[r.id[i]]) - 1), r.pos[i]
    if kind == EQUALITY and model.eq_type[r.id[i]] == WELD:
        return 6, float(np.linalg.norm(r.pos[i:i + 6]))
    if kind == EQUALITY and model.eq_type[r.id[i]] == CONNECT:
        return 3, float(np.linalg.norm(r.pos[i:i + 3]))
    return 1, r.pos[i]


def impedance(solimp: np.ndarray, pos: float, margin: float) -> tuple[float, float]:
    """(imp, d imp / d pos) of solimp's sigmoid at the violation pos - margin (MuJoCo's getimpedance)."""
    d0, dwidth, width, mid, power = solimp
    if d0 == dwidth or width <= MINVAL:
        return 0.5 * (d0 + dwidth), 0.0
    x = (pos - margin) / width
    sign = 1.0
    if x < 0:
        x, sign = -x, -1.0
    if x >= 1 or x <= 0:
        return (dwidth if x >= 1 else d0), 0.0
    pw = lambda a, b: a if b == 1 else a * a if b == 2 else a ** b   # noqa: E731
    if power == 1:
        y, yP = x, 1.0
    elif x <= mid:
        a = 1 / pw(mid, power - 1)
        y, yP = a * pw(x, power), power * a * pw(x, power - 1)
    else:
        b = 1 / pw(1 - mid, power - 1)
        y, yP = 1 - b * pw(1 - x, power), power * b * pw(1 - x, power - 1)
    return d0 + y * (dwidth - d0), yP * sign * (dwidth - d0) / width


@per_model
def power_one(model: Model) -> bool:
    """Whether some joint's, dof's, equality's or tendon's solimp has power 1 (at most 1: the power is at least 1)."""
    sources = [model.jnt_solimp, model.dof_solimp, model.eq_solimp, model.tendon_solimp_lim, model.tendon_solimp_fri]
    return any(bool((np.reshape(x, (-1, 5))[:, 4] <= 1).any()) for x in sources)


def impedance_kinks(model: Model, r: Rows, contacts: ContactSet | None) -> tuple[np.ndarray, np.ndarray]:
    """(first (k,), gap (k,)): the first row of each constraint whose impedance has a kink away from its switch, and
    gap [m | rad] its distance to the nearest one. Only solimp's power 1 has them: its ramp y = x, x = |pos - margin| /
    width, meets the plateau dmax at x = 1 with slope 1 on one side and 0 on the other (impedance), gap | |pos - margin|
    - width |; on an equality (no switch at pos = 0: its rows are always there) y = |pos| / width is a cone at pos = 0
    too, gap min(that, |pos|). Powers above 1 are C1 at the width (slope p b (1 - x)^(p - 1) -> 0), at the midpoint
    (slope p on both sides) and at 0 (x^p); dmin == dmax (or width <= MINVAL) has none, nor a friction loss row (pos 0
    at every q)."""
    first, gap = [], []
    if not power_one(model) and (contacts is None or not (contacts.solimp[:, 4] <= 1).any()):   # no power 1 (>= 1)
        return np.zeros(0, np.intp), np.zeros(0)
    i = 0
    while i < r.nefc:
        _, _, solimp = _solver_parameters(model, r, i, contacts)
        dim, pos = impedance_block(model, r, i)
        friction = r.type[i] in (FRICTION_DOF, FRICTION_TENDON)
        if solimp[4] == 1 and solimp[0] != solimp[1] and solimp[2] > MINVAL and not friction:
            x = abs(pos - r.margin[i])
            first.append(i)
            gap.append(min(abs(x - solimp[2]), x) if r.type[i] == EQUALITY else abs(x - solimp[2]))
        i += dim
    return np.array(first, np.intp), np.array(gap, float)


def impedance_caps(model: Model, r: Rows, contacts: ContactSet | None, h: float) -> tuple[np.ndarray, np.ndarray]:
    """(first (k,), gap (k,)) of the discrete step's rows (r built with discrete_h h [s]): the first row of each
    constraint whose R = max((1 - imp) / (imp s), (1 - MAXIMP) / MAXIMP) diagA (_discrete_row) meets its cap at some
    |pos - margin| inside solimp's width, and gap [m | rad] its distance to it: R has a kink there. The cap's imp*
    solves imp s / (1 - imp) = MAXIMP / (1 - MAXIMP) (s = 1 + h B + h^2 K imp, refsafe's resolved spring K = 1 / (imp
    h^2), B = 2 dampratio sqrt(K): increasing in imp either way), found by bisection, then its x* by inverting solimp's
    sigmoid. Only reachable with dmax (or dmin) near MAXIMP (above ~0.9998 at h 2 ms)."""
    first, gap, i = [], [], 0
    while i < r.nefc:
        ref, _, solimp = _solver_parameters(model, r, i, contacts, True)
        dim, pos = impedance_block(model, r, i)
        friction = r.type[i] in (FRICTION_DOF, FRICTION_TENDON)
        if not friction and solimp[0] != solimp[1] and solimp[2] > MINVAL:
            x = _cap_crossing(model, r, i, ref, solimp, h)
            if x is not None:
                first.append(i)
                gap.append(abs(abs(pos - r.margin[i]) - x * solimp[2]))
        i += dim
    return np.array(first, np.intp), np.array(gap, float)


def _cap_crossing(model: Model, r: Rows, i: int, ref: np.ndarray, solimp: np.ndarray, h: float) -> float | None:
    """x* = |pos - margin| / width in (0, 1) where row i's R meets its MAXIMP cap under the discrete step (impedance_caps),
    or None where it does not within the width."""
    resolved = _resolves(model, r, i, ref, h)
    def excess(imp):                                                  # imp s / (1 - imp) - MAXIMP / (1 - MAXIMP)
        K = 1 / (imp * h * h) if resolved else r.K[i]
        B = 2 * ref[1] * np.sqrt(K) if resolved else r.B[i]
        return imp * end_of_step_factor(h, B, K, imp) / (1 - imp) - MAXIMP / (1 - MAXIMP)
    d0, dmax, _, mid, power = solimp
    lo, hi = min(d0, dmax), max(d0, dmax)
    if (excess(lo) > 0) == (excess(hi) > 0):
        return None
    for _ in range(100):
        middle = 0.5 * (lo + hi)
        lo, hi = (lo, middle) if excess(middle) > 0 else (middle, hi)
    y = (0.5 * (lo + hi) - d0) / (dmax - d0)                          # solimp's sigmoid inverted at imp*
    if power == 1:
        return y
    if y <= mid:
        return (y * mid ** (power - 1)) ** (1 / power)
    return 1 - ((1 - y) * (1 - mid) ** (power - 1)) ** (1 / power)


def _impedance(model: Model, r: Rows, contacts: ContactSet | None, discrete_h: float | None = None) -> None:
    """R, D, K, B, imp, impP of every row and MuJoCo's adjusted diagA; the regularised cones' mu of the contacts.
    discrete_h [s]: the discrete integrator's rows (refsafe's resolved springs, R / s capped at MAXIMP)."""
    n = r.nefc
    r.R, r.K, r.B, r.imp, r.impP = np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n)
    i = 0
    while i < n:
        ref, reffric, solimp = _solver_parameters(model, r, i, contacts, discrete_h is not None)
        dim, pos = impedance_block(model, r, i)
        imp, impP = impedance(solimp, pos, r.margin[i])
        for j in range(i, i + dim):
            r.R[j] = max(MINVAL, (1 - imp) * r.diagA[j] / imp)
            elliptic_friction = r.type[j] == CONTACT_ELLIPTIC and j > i
            use = reffric if elliptic_friction and (reffric[0] or reffric[1]) else ref
            if r.type[j] in (FRICTION_DOF, FRICTION_TENDON) or elliptic_friction:
                r.K[j] = 0.0                                          # friction: no spring
            elif use[0] > 0:                                          # standard: K = 1 / (dwidth tc dampratio)^2
                r.K[j] = 1 / max(MINVAL, solimp[1] * solimp[1] * use[0] * use[0] * use[1] * use[1])
            else:                                                     # direct: K = -solref[0] / dwidth^2
                r.K[j] = -use[0] / max(MINVAL, solimp[1] * solimp[1])
            r.B[j] = 2 / max(MINVAL, solimp[1] * use[0]) if use[1] > 0 else -use[1] / max(MINVAL, solimp[1])
            r.imp[j], r.impP[j] = imp, impP
            if discrete_h is not None:
                _discrete_row(model, r, j, ref, discrete_h)
        i += dim
    # frictional contacts: R of the friction directions from impratio, the regularised cone's mu
    for c, first in enumerate(r.contact_row):
        if first < 0 or r.type[first] == CONTACT_FRICTIONLESS:
            continue
        dim, friction = int(r.contact_dim[c]), r.contact_friction[c]
        R1 = r.R[first] / max(MINVAL, model.opt.impratio)
        mu = friction[0] * np.sqrt(R1 / r.R[first])
        r.contact_mu[c] = mu
        if r.type[first] == CONTACT_ELLIPTIC:
            r.R[first + 1] = R1
            for j in range(1, dim - 1):                               # R_j mu_j^2 = R_1 mu_1^2
                r.R[first + j + 1] = R1 * friction[0] * friction[0] / (friction[j] * friction[j])
        else:
            r.R[first:first + 2 * (dim - 1)] = 2 * mu * mu * r.R[first]
    r.D = 1 / r.R
    r.diagA = r.R * r.imp / (1 - r.imp)


def floor_rows(r: Rows) -> np.ndarray:
    """The rows (int indices) whose R is at its floor MINVAL (at_floor)."""
    return np.flatnonzero(at_floor(r.R, r.type, r.contact_row, r.contact_mu))


def at_floor(R: np.ndarray, type_: np.ndarray, contact_row: np.ndarray, contact_mu: np.ndarray) -> np.ndarray:
    """(nefc,) bool: the rows whose R is at its floor MINVAL (a pyramid's edges: 2 mu^2 MINVAL): diagApprox ~0, their
    D = 1 / MINVAL, their forces aref / MINVAL, not physical; a stiffness that leaves CG and PGS far from the minimum.
    Rows' R, type, contact_row and contact_mu, of one state or of several concatenated (contact_row then each
    contact's first row in the concatenation, -1 for none)."""
    floor = np.full(len(R), MINVAL)
    edges = np.flatnonzero(type_ == CONTACT_PYRAMIDAL)
    with_rows = np.flatnonzero(contact_row >= 0)                             # contacts' rows: contiguous, ascending
    owner = with_rows[np.searchsorted(contact_row[with_rows], edges, side="right") - 1]
    floor[edges] = 2 * contact_mu[owner] ** 2 * MINVAL                      # R = 2 mu^2 R_first (_impedance)
    return R <= floor


def _discrete_row(model: Model, r: Rows, j: int, ref: np.ndarray, h: float) -> None:
    """Row j under the discrete integrator of step h [s]: with refsafe, a limit's or contact's spring faster than the
    step (timeconst dampratio < h) replaced by the stiffest zero-restitution spring the step resolves, at the authored
    damping ratio; then R = (1 - imp) / (imp s) diagA, at least (1 - MAXIMP) / MAXIMP diagA (the effective impedance
    at most MAXIMP)."""
    if _resolves(model, r, j, ref, h):                                # K = 1 / (imp h^2), B = 2 dampratio sqrt(K)
        r.K[j] = 1 / (r.imp[j] * h * h)
        r.B[j] = 2 * ref[1] * np.sqrt(r.K[j])
    s = end_of_step_factor(h, r.B[j], r.K[j], r.imp[j])
    r.R[j] = max(MINVAL, max((1 - r.imp[j]) / (r.imp[j] * s), (1 - MAXIMP) / MAXIMP) * r.diagA[j])


def _resolves(model: Model, r: Rows, j: int, ref: np.ndarray, h: float) -> bool:
    """Whether the discrete step of h [s] replaces row j's spring (solref ref) by the one it resolves (refsafe: a limit's
    or contact's spring with timeconst dampratio < h)."""
    return bool(model.opt.refsafe and r.K[j] > 0 and r.type[j] >= LIMIT_JOINT and ref[0] > 0 and ref[0] * ref[1] < h)


def resolved_springs(model: Model, r: Rows, contacts: ContactSet | None, h: float) -> np.ndarray:
    """(nefc,) bool: the rows of r (built with discrete_h h [s]) whose spring _discrete_row replaced by the one the step
    resolves (K = 1 / (imp h^2): K imp constant in imp, B going as imp^-1/2)."""
    out, i = np.zeros(r.nefc, bool), 0
    while i < r.nefc:
        ref = _solver_parameters(model, r, i, contacts, True)[0]
        dim = impedance_block(model, r, i)[0]
        out[i:i + dim] = [_resolves(model, r, j, ref, h) for j in range(i, i + dim)]
        i += dim
    return out


# ---------------------------------------------------------------- the force of every row (mj_constraintUpdate)

def elliptic_coordinates(r: Rows, i: int, jar: np.ndarray):
    """(dim, mu, friction (5,), U) of the elliptic contact whose first row is i: U = (mu jar_0, friction_j jar_j) (dim,),
    its rows' jar in the regularised dual space (jar (nefc,); or (n, nefc), U then (n, dim))."""
    c = r.id[i]
    dim, mu, friction = int(r.contact_dim[c]), r.contact_mu[c], r.contact_friction[c]
    U = np.concatenate([jar[..., i:i + 1] * mu, jar[..., i + 1:i + dim] * friction[:dim - 1]], axis=-1)
    return dim, mu, friction, U


def cone_force(D0, mu: float, friction: np.ndarray, U: np.ndarray, N, T):
    """(force (..., dim), Dm, N - mu T) of an elliptic contact on its cone (update's middle zone) at U (..., dim)
    (elliptic_coordinates), N = U_0 and T = |U_1..| (its caller's), D0 its first row's D: f_0 = -Dm (N - mu T) mu,
    f_j = -f_0 U_j friction_j / T, Dm = D0 / (mu^2 (1 + mu^2))."""
    Dm = D0 / (mu * mu * (1 + mu * mu))
    NmT = N - mu * T
    f0 = -Dm * NmT * mu
    dim = U.shape[-1]
    return np.concatenate([f0[..., None], -(f0 / T)[..., None] * U[..., 1:] * friction[:dim - 1]], axis=-1), Dm, NmT


def update(r: Rows, jar: np.ndarray, cone_hessian: bool = False):
    """(force (nefc,), state (nefc,), cost, cone Hessians {first row: (dim, dim)}) for jar = J qacc - aref: the force
    of each row and the constraint cost s(jar) whose gradient in jar is -force."""
    force = -r.D * jar
    state = np.full(r.nefc, QUADRATIC)
    cost = 0.0
    hessians = {}
    ne, nf = r.ne, r.nf
    # equality: quadratic
    cost += 0.5 * float(r.D[:ne] @ (jar[:ne] * jar[:ne]))
    # friction loss: Huber, linear beyond +-R frictionloss
    f = slice(ne, ne + nf)
    Rf = r.R[f] * r.frictionloss[f]
    neg, pos = jar[f] <= -Rf, jar[f] >= Rf
    fl = r.frictionloss[f]
    cost += float(np.sum(np.where(neg, -0.5 * Rf * fl - fl * jar[f], np.where(pos, -0.5 * Rf * fl + fl * jar[f],
                                                                               0.5 * r.D[f] * jar[f] * jar[f]))))
    force[f] = np.where(neg, fl, np.where(pos, -fl, force[f]))
    state[f] = np.where(neg, LINEARNEG, np.where(pos, LINEARPOS, QUADRATIC))
    # limits, frictionless and pyramidal contacts: one-sided
    i = ne + nf
    while i < r.nefc:
        if r.type[i] != CONTACT_ELLIPTIC:
            if jar[i] >= 0:
                force[i], state[i] = 0.0, SATISFIED
            else:
                cost += 0.5 * r.D[i] * jar[i] * jar[i]
            i += 1
            continue
        # elliptic cone in the regularised dual space: U = (mu jar_0, friction_j jar_j)
        dim, mu, friction, U = elliptic_coordinates(r, i, jar)
        N, T = U[0], float(np.sqrt(U[1:] @ U[1:]))
        block = slice(i, i + dim)
        if N >= mu * T or (T <= 0 and N >= 0):                        # top zone: separating
            force[block], state[block] = 0.0, SATISFIED
        elif mu * N + T <= 0 or (T <= 0 and N < 0):                   # bottom zone: quadratic
            cost += 0.5 * float(r.D[block] @ (jar[block] * jar[block]))
        else:                                                         # middle zone: on the cone
            force[block], Dm, NmT = cone_force(r.D[i], mu, friction, U, N, T)
            cost += 0.5 * Dm * NmT * NmT
            state[block] = CONE
            if cone_hessian:
                H = np.zeros((dim, dim))
                H[0, 0] = 1.0
                H[0, 1:] = -mu / T * U[1:]
                H[1:, 1:] = mu * N / T ** 3 * np.outer(U[1:], U[1:]) + (mu * mu - mu * N / T) * np.eye(dim - 1)
                H[1:, 0] = H[0, 1:]
                scale = np.r_[mu, friction[:dim - 1]]
                hessians[i] = Dm * scale[:, None] * H * scale[None, :]
        i += dim
    return force, state, cost, hessians


# ---------------------------------------------------------------- the compiled kernels (cpp/constraint.h)

def contact_arrays(contacts) -> list | None:
    """The contacts as the compiled kernels take them: None (none), or a list of ContactSet.packed() (floats, ints)
    pairs, one for every state (a ContactSet) or one per state (a list of N sets); the kernel reads them where they are."""
    if contacts is None:
        return None
    if isinstance(contacts, ContactSet):
        return [contacts.packed()]
    return [c.packed() for c in contacts]


def kernel_options(model: Model, options: tuple) -> tuple:
    """The options of constraint_rows and constraint_inverse as the kernels read them (after a failed call: the named
    error of what is wrong, or the options converted): the contacts' arrays float64 and int64 in C order, eq_active
    booleans."""
    contacts, active, *rest = options
    if contacts is not None:
        contacts = [(np.ascontiguousarray(floats, float), np.ascontiguousarray(ints, np.int64)) for floats, ints in contacts]
    return (contacts, None if active is None else np.ascontiguousarray(active, bool), *rest)


_ROWS = native.kernel("constraint_rows", options={"constraint": kernel_options})


def prepare_compiled(model: Model) -> None:
    """The compiled model with its constraint part (native.with_constraints), after check_supported."""
    check_supported(model)
    native.with_constraints(model, lambda: native.kept_invweights(model))


def compiled_rows(model: Model, q, qd, contacts, eq_active, discrete=None) -> list:
    """rows() of one state (q (nq,), qd (nv,)) or N ((N, nq), (N, nv)) on the compiled backend, a list of one Rows per
    state; contacts: contact_arrays' list or None, eq_active (neq,) booleans or None (the model's); discrete: None, or a
    discrete model's step (solver.compiled_forward's discrete option): the rows at the end of its step in its metric
    M + h B + h^2 K, as its forward solve makes them (cpp/inverse.h's discrete_state)."""
    prepare_compiled(model)
    _, sizes, J, values, ints, (row,), mu = _ROWS(model, q, qd, (contacts, eq_active, discrete))
    return kernel_rows(contacts, sizes, J, values, ints, row, mu)


def kernel_rows(contacts, sizes, J, values, ints, row, mu) -> list:
    """One Rows per state from a constraint kernel's rows (constraint_rows', or constraint_forward's with rows: sizes
    (N, 5), J, values (12 or more, total nefc: pos ... aref first), ints (type, id, ...), contact_row, contact_mu, the
    states' rows concatenated) and the contacts the kernel was given (contact_arrays' list or None)."""
    pos, margin, frictionloss, diagA, R, D, K, B, imp, impP, vel, aref = values[:12]
    type_, id_ = ints[:2]
    ends, contact_ends = sizes[:, 0].cumsum().tolist(), sizes[:, 4].cumsum().tolist()
    out, a, ca = [], 0, 0
    for k, (ne, nf, nl, nc) in enumerate(sizes[:, 1:].tolist()):
        b, cb = ends[k], contact_ends[k]
        floats, packed = contacts[k if len(contacts) > 1 else 0] if nc else (None, None)
        dim = packed[:, 0].astype(np.intp) if nc else np.zeros(0, np.intp)
        friction = floats[:, FRICTION_COLUMNS].copy() if nc else np.zeros((0, 5))
        bodies = packed[:nc, 1:3].astype(np.intp) if nc else np.zeros((0, 2), np.intp)
        out.append(Rows(J[a:b], pos[a:b], margin[a:b], frictionloss[a:b], type_[a:b], id_[a:b], ne, nf, nl, diagA[a:b], R[a:b],
                        D[a:b], K[a:b], B[a:b], imp[a:b], impP[a:b], vel[a:b], aref[a:b], dim, mu[ca:cb], friction,
                        row[ca:cb], bodies))
        a, ca = b, cb
    return out


def compiled_row_arrays(model: Model, Q, QD, contacts) -> tuple:
    """The compiled rows of N states ((N, nq), (N, nv)) as the kernel gives them, no Rows made: (sizes (N, 5): nefc, ne,
    nf, nl, contacts; J (total nefc, nv); values (12, total nefc): pos, margin, frictionloss, diagA, R, D, K, B, imp, impP,
    vel, aref; ints (2, total nefc): type, id), the states' rows concatenated; contacts: contact_arrays' list or None."""
    prepare_compiled(model)
    _, sizes, J, values, ints, _, _ = _ROWS(model, Q, QD, (contacts, None, None))
    return sizes, J, values, ints


def state_forces(sizes: np.ndarray, force: np.ndarray) -> list:
    """The states' efc_force, concatenated in force, one array per state (sizes: the kernel's, nefc first)."""
    if len(sizes) == 1:
        return [force]
    ends = np.cumsum(sizes[:, 0]).tolist()
    return [force[a:b] for a, b in zip([0] + ends[:-1], ends)]


# ---------------------------------------------------------------- the bodies' constraint forces (mj_rnePostConstraint)

def contact_frame_forces(model: Model, r: Rows, efc_force: np.ndarray) -> np.ndarray:
    """(ncon, 6): each contact's rows of efc_force in its contact frame, normal, two tangential, torsional, two rolling
    [N | N m] (mj_contactForce): an elliptic contact's rows are the components; a pyramidal one's 2 (dim - 1) edge forces
    p give sum(p) and (p[2i] - p[2i+1]) mu_i (mju_decodePyramid); zeros past dim and for a contact without rows."""
    force = np.zeros((len(r.contact_row), 6))
    pyramidal = model.opt.cone == "pyramidal"
    for c, (first, dim) in enumerate(zip(r.contact_row, r.contact_dim)):
        if first < 0:
            continue
        if dim == 1 or not pyramidal:                     # frictionless, or elliptic: the rows are the components
            force[c, :dim] = efc_force[first:first + dim]
            continue
        edges = efc_force[first:first + 2 * (dim - 1)]     # f_n = sum p;  f_i = (p[2i] - p[2i+1]) mu_i
        force[c, 0] = edges.sum()
        force[c, 1:dim] = (edges[0::2] - edges[1::2]) * r.contact_friction[c, :dim - 1]
    return force
