"""The smooth dynamics' stages on a Data workspace, named after MuJoCo's engine_core_smooth.c (mirrored function by
function by the compiled engine's cpp/smooth.h), for n states at once with the state index last (physai.engine.data).

    kinematics(model, d, q)     link poses                         xmat, xpos, center, cpos
    com_pos(model, d)           inertias and motion subspaces      cipos, cinert, cdof          (mj_comPos)
    motion_subspaces(model, d)  motion subspaces alone             cdof
    com_vel(model, d, qd)       velocities                         cvel, cdof_dot               (mj_comVel)
    rne(model, d, qd, qdd)      recursive Newton-Euler             cacc, cfrc, qfrc             (mj_rne)
    composite_inertias(model, d)  the subtrees' inertias           crb
    subtree_moments(model, d)   the subtrees' mass moments         subtree_moment               (for the CoM Jacobian)
    crb(model, d)               composite rigid bodies             crb, qM                      (mj_crb)
    cholesky_solve(M, b)        x with M x = b for symmetric positive definite M, state last   (the constraint solver's H)
    tree_cholesky_solve(model, M, b)  the same for M on the tree's pattern: M = L^T L, no fill-in  (mj_factorM, mj_solveM)
    block_inverse(D)            inverse of each link's 1x1 or 3x3 joint-space block (by its adjugate)
    aba(model, d, qd, tau)      qdd by the articulated-body algorithm                            (RBDA table 7.1)
    energy_pos(model, d, q), energy_vel(model, d, qd)      potential and kinetic energy     (mj_energyPos, mj_energyVel)
    body_energy_pos(model, d, q), body_energy_vel(model, d, qd)   the same per body (NumPy only: no compiled kernel yet)
    body_poses(model, q), geom_poses(model, q)   one state's body and geom frames in mj_kinematics' own arithmetic
    moved_bodies(model, dof)    the bodies whose frames a dof moves
    moved_geom_poses(model, q, q0, dof)   geom_poses at a point of q0 moved along dof, the others' frames q0's

Each stage is one forward and/or one backward loop over links, parents before children, written once for every
joint type: a link moves by its dofs' columns of cdof, whatever their number. Joint types enter only through
physai.joints (the links' local transforms, in kinematics). These are stages, not results: com_pos computes the
spatial inertias about each tree's centre, not the centre of mass (physai.kinematics has the poses, physai.engine's
public functions the results). Both solves are written as the C++ writes them (the Cholesky factor column by column,
the 3x3 inverse by its adjugate), vectorized over the states: the two backends take the same steps.
"""

import numpy as np

from physai import joints
from physai.engine.data import Data
from physai.engine.model import Model
from physai.engine.primitives import mat_times_mj
from physai.exceptions import InvalidModelError
from physai.linalg import SINGULAR, pivot_error
from physai.spatial import quat_mul_mj

# a x b = a[_L1] b[_L2] - a[_L2] b[_L1]; three crosses of 6-vectors' halves at once, products (k, 18, n) minus
# (angular = 0:3, linear = 3:6):
#   motion  v x m  = (w x m_ang, w x m_lin + u x m_ang)          for v = (w, u)
#   force   v x* f = (w x f_ang + u x f_lin, w x f_lin)
_L1, _L2 = np.array([1, 2, 0]), np.array([2, 0, 1])
_XM_V = np.r_[_L1, _L1, _L1 + 3, _L2, _L2, _L2 + 3]
_XM_M = np.r_[_L2, _L2 + 3, _L2, _L1, _L1 + 3, _L1]
_XF_V = np.r_[_L1, _L1 + 3, _L1, _L2, _L2 + 3, _L2]
_XF_F = np.r_[_L2, _L2 + 3, _L2 + 3, _L1, _L1 + 3, _L1 + 3]
# skew(v)[i, j] = _SKEW_SIGN[i, j] * v[_SKEW_IDX[i, j]]
_SKEW_IDX = np.array([[0, 2, 1], [2, 0, 0], [1, 0, 0]])
_SKEW_SIGN = np.array([[0.0, -1, 1], [1, 0, -1], [-1, 1, 0]])
# cinert[i, j] = P[_CINERT_IDX[i, j]] for P = (Ibar row-major (9) | h (3) | -h (3) | m | 0): [[Ibar, skew(h)], [-skew(h), m 1]]
_CINERT_IDX = np.full((6, 6), 16)
_CINERT_IDX[:3, :3] = np.arange(9).reshape(3, 3)
_CINERT_IDX[:3, 3:] = np.where(_SKEW_SIGN > 0, 9, 12) + _SKEW_IDX
_CINERT_IDX[3:, :3] = np.where(_SKEW_SIGN > 0, 12, 9) + _SKEW_IDX
_CINERT_IDX[3:, 3:][np.diag_indices(3)] = 15
_CINERT_IDX[np.arange(3), np.arange(3) + 3] = _CINERT_IDX[np.arange(3) + 3, np.arange(3)] = 16


def cross_motion(v: np.ndarray, m: np.ndarray) -> np.ndarray:
    """v x m (Featherstone's crm(v) m) for motion vectors stacked as (k, 6, n)."""
    P = v[:, _XM_V] * m[:, _XM_M]
    r = P[:, :9] - P[:, 9:]                                            # w x m_ang, w x m_lin, u x m_ang
    r[:, 3:6] += r[:, 6:9]
    return r[:, :6]


def cross_force(v: np.ndarray, f: np.ndarray) -> np.ndarray:
    """v x* f (Featherstone's crf(v) f = -crm(v)^T f) for a motion vector v and a force f, stacked as (k, 6, n)."""
    P = v[:, _XF_V] * f[:, _XF_F]
    r = P[:, :9] - P[:, 9:]                                            # w x f_ang, u x f_lin, w x f_lin
    r[:, 3:6] += r[:, 0:3]
    return r[:, 3:]


def inertia_times(I: np.ndarray, v: np.ndarray) -> np.ndarray:
    """I v for 6x6 inertias (k, 6, 6, n) and 6-vectors (k, 6, n)."""
    return np.einsum("bijn,bjn->bin", I, v)


def per_link(model: Model, x: np.ndarray) -> np.ndarray:
    """Sum (nlink, ...) over each link's dofs of a per-dof array (nv, ...) (a link's dofs are consecutive)."""
    return np.add.reduceat(x, model.link_dofadr, axis=0) if model.nv else np.zeros((0,) + x.shape[1:])


def base_acceleration(model: Model) -> np.ndarray:
    """(6, 1): the world's spatial acceleration (0, -gravity) that stands in for gravity in rne and aba."""
    a_g = np.zeros((6, 1))
    a_g[3:, 0] = -model.gravity
    return a_g


# ---------------------------------------------------------------- position

def kinematics(model: Model, d: Data, q: np.ndarray, about_origin: bool = False) -> None:
    """Link poses at joint positions q (nq, n): d.xmat, d.xpos, d.center, d.cpos.

    about_origin=True puts every centre at the world origin (a fixed point: physai.coriolis needs one)."""
    n = q.shape[1]
    T_loc = model.link_transforms(q)                                   # each link's pose in its parent: jcalc
    T = np.empty_like(T_loc)                                           # (nlink, 3, 4, n): [xmat | xpos]
    Ts, Ls, xs = list(T), list(T_loc), list(T[:, :, 3])
    step = np.empty((model.nlink, 3, n))                               # R_parent p_loc: the offset from the parent
    # forward pass over links: R = R_parent R_loc, x = x_parent + R_parent p_loc
    for i, p in enumerate(model.link_parents):
        if p < 0:
            Ts[i][...] = Ls[i]
        else:
            np.einsum("ikn,kjn->ijn", Ts[p][:, :3], Ls[i], out=Ts[i])
            step[i] = xs[i]
            np.add(xs[i], xs[p], out=xs[i])
    d.xmat, d.xpos = T[:, :, :3], T[:, :, 3]
    if about_origin:
        d.center, d.cpos = np.zeros_like(d.xpos), d.xpos
        return
    d.center = d.xpos[model.link_centerid]
    # positions relative to the centre, summed from the centre outward so that they keep their digits far away
    cpos = d.xpos - d.center
    cs = list(cpos)
    for i in np.flatnonzero(model.link_relative).tolist():
        np.add(cs[model.link_parents[i]], step[i], out=cs[i])
    cpos[model.link_centerid == np.arange(model.nlink)] = 0.0
    d.cpos = cpos


# ---------------------------------------------------------------- MuJoCo-order poses
# collision must match mj_collision bit for bit (near-degenerate contacts amplify the frames' last digits), so its
# frames are composed body by body with mj_kinematics' own arithmetic, not with the link kinematics above

def quat_to_mat_mj(quat: np.ndarray) -> np.ndarray:
    """(..., 3, 3) rotation matrices of unit quaternions (..., 4) with MuJoCo 4's arithmetic (mju_quat2Mat: products of
    the components summed in its order, the identity kept exact; cpp/smooth.h's quat_to_mat_mj): near-degenerate
    contacts (a cylinder on its cap) amplify the last digits of a geom's axes, and ties (a face lying flat) follow
    them, so they are computed as MuJoCo computes them, not with the normalizing spatial.quat_to_mat of the dynamics."""
    w, x, y, z = np.moveaxis(quat, -1, 0)
    R = np.empty(quat.shape[:-1] + (3, 3))
    ww_yy = w * w - y * y
    R[..., 0, 0] = ww_yy + (x * x - z * z)
    R[..., 1, 1] = (w * w + y * y) - (x * x + z * z)
    R[..., 2, 2] = ww_yy + (z * z - x * x)
    R[..., 0, 1], R[..., 0, 2] = 2 * (x * y - w * z), 2 * (x * z + w * y)
    R[..., 1, 0], R[..., 1, 2] = 2 * (x * y + w * z), 2 * (y * z - w * x)
    R[..., 2, 0], R[..., 2, 1] = 2 * (x * z - w * y), 2 * (y * z + w * x)
    identity = (w == 1) & (x == 0) & (y == 0) & (z == 0)
    R[identity] = np.eye(3)
    return R


def rotate_mj(v: np.ndarray, quat: np.ndarray) -> np.ndarray:
    """v (3,) rotated by a unit quaternion with MuJoCo's arithmetic (mju_rotVecQuat)."""
    w, x, y, z = quat
    if w == 1 and x == 0 and y == 0 and z == 0:
        return v.copy()
    t = np.array([w * v[0] + y * v[2] - z * v[1], w * v[1] + z * v[0] - x * v[2], w * v[2] + x * v[1] - y * v[0]])
    return np.array([v[0] + 2 * (y * t[2] - z * t[1]), v[1] + 2 * (z * t[0] - x * t[2]), v[2] + 2 * (x * t[1] - y * t[0])])


def pose_links(model: Model) -> list[list[tuple]]:
    """Per body, the links of its joints (physai.joints.links: a free joint is three slides along the world's axes and a
    ball) as (link, its first q entry, its ref: qpos0 there), made when the model is built (make_pose_links)."""
    return model.kept("pose_links")


def make_pose_links(model: Model) -> list[list[tuple]]:
    """pose_links' value, made once by physai.engine.setconst.set_const."""
    out = [[] for _ in range(model.nbody)]
    for j in range(model.njnt):
        a = int(model.jnt_qposadr[j])
        for link in joints.links(int(model.jnt_type[j]), model.jnt_axis[j], model.jnt_pos[j]):
            out[int(model.jnt_bodyid[j])].append((link, a + link.qoffset, float(model.qpos0[a + link.qoffset])))
    return out


def body_poses(model: Model, q: np.ndarray, base: tuple | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(xpos (nbody, 3) [m], xquat (nbody, 4)) of every body at q (nq,), composed link by link with MuJoCo's
    arithmetic (mj_kinematics): the frames contacts are computed in, whose last digits near-degenerate contacts
    amplify (physai's own kinematics agrees with them to rounding). base: None, or (xpos, xquat, moved (nbody,) bool)
    of another state q0 and the bodies q moves from it (moved_bodies): the others' frames are q0's, copied."""
    xpos, xquat = np.zeros((model.nbody, 3)), np.zeros((model.nbody, 4))
    xmat = np.zeros((model.nbody, 3, 3))
    for b, links in enumerate(pose_links(model)):
        if base is not None and not base[2][b]:                       # not moved: q0's frame
            xpos[b], xquat[b], xmat[b] = base[0][b], base[1][b], quat_to_mat_mj(base[1][b])
            continue
        p = int(model.body_parentid[b])
        if links and links[0][0].world_axes:                       # a free joint's links start from the world
            pos, quat = np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0])
        elif p >= 0:                                               # p = R_parent offset + p_parent, q = q_parent q_body
            pos = mat_times_mj(xmat[p], model.body_offset[b]) + xpos[p]
            quat = quat_mul_mj(xquat[p], model.body_quat[b])
        else:
            pos, quat = model.body_offset[b].copy(), model.body_quat[b].copy()
        for link, a, ref in links:
            axis = rotate_mj(link.axis, quat)
            anchor = rotate_mj(link.anchor, quat) + pos
            turn = joints.turn_mj(link, q[a:], ref)
            if turn is None:                                       # a slide: p += axis (q - ref)
                pos = pos + axis * (q[a] - ref)
            else:                                                  # a turn about the anchor: q = q turn, p = anchor - R o
                quat = quat_mul_mj(quat, turn)
                pos = anchor - rotate_mj(link.anchor, quat)
        xquat[b] = joints.quat_normalize_mj(quat)
        xpos[b], xmat[b] = pos, quat_to_mat_mj(xquat[b])
    return xpos, xquat


def moved_bodies(model: Model, dof: int) -> np.ndarray:
    """(nbody,) bool: the bodies whose frames move along dof (its link or a link below it holds them, welded bodies
    with their link; a body welded to the world: none)."""
    link = model.body_linkid
    last = model.link_dofadr + model.link_dofnum - 1                    # each link's last dof: below dof when moved
    return (link >= 0) & model.dof_ancestor[dof, last[np.maximum(link, 0)]]


def geom_poses(model: Model, q: np.ndarray, poses: tuple | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(pos (ngeom, 3) [m], mat (ngeom, 3, 3)) of every geom in the world at q (nq,) as mj_kinematics computes them
    (geom_xpos, geom_xmat): R = mat(q_body q_geom), p = p_body + mat(q_body) geom_pos; poses: body_poses(model, q) when
    the caller has them."""
    G = model.geoms
    pos, quat = body_poses(model, q) if poses is None else poses
    bodies, world = G.geom_bodyid, G.geom_bodyid < 0
    xquat, xbody = quat[bodies], pos[bodies]
    xquat[world], xbody[world] = (1.0, 0.0, 0.0, 0.0), 0.0
    xmat = quat_to_mat_mj(quat_mul_mj(xquat, G.geom_quat))                      # R = mat(q_body q_geom)
    R, v = quat_to_mat_mj(xquat), G.geom_pos
    xpos = (R[:, :, 0] * v[:, :1] + R[:, :, 1] * v[:, 1:2] + R[:, :, 2] * v[:, 2:]) + xbody   # p = R_body geom_pos + p_body
    return xpos, xmat


def moved_geom_poses(model: Model, q: np.ndarray, q0: np.ndarray, dof: int) -> tuple[np.ndarray, np.ndarray]:
    """geom_poses at q (nq,) with the bodies dof does not move (moved_bodies) at their frames at q0 (nq,): q's own where
    q differs from q0 only in dof's joint (a point of q0 moved along dof), the others' frames taken as they are."""
    return geom_poses(model, q, body_poses(model, q, (*body_poses(model, q0), moved_bodies(model, dof))))


# ---------------------------------------------------------------- inertia

def com_pos(model: Model, d: Data) -> None:
    """Spatial inertias d.cinert, centres of mass d.cipos and motion subspaces d.cdof, about the centres."""
    R, x, m, n = d.xmat, d.cpos, model.link_mass[:, None, None], d.n
    # c = x + R ipos;  h = m c
    d.cipos = c = x + np.einsum("bikn,bk->bin", R, model.link_ipos)
    # cinert = [[R I R^T + m (c.c 1 - c c^T), skew(h)], [skew(h)^T, m 1]], gathered from P = (top-left 3x3 | h | -h | m | 0)
    P = np.empty((model.nlink, 17, n))
    Ibar, h = P[:, :9].reshape(-1, 3, 3, n), P[:, 9:12]
    np.multiply(m, c, out=h)
    np.negative(h, out=P[:, 12:15])
    RI = np.einsum("bikn,bkl->biln", R, model.link_inertia)
    np.einsum("bikn,bjkn->bijn", RI, R, out=Ibar)
    Ibar -= h[:, :, None] * c[:, None, :]
    hc = np.einsum("bin,bin->bn", h, c)
    for k in (0, 4, 8):
        P[:, k] += hc
    P[:, 15] = model.link_mass[:, None]
    P[:, 16] = 0.0
    d.cinert = P[:, _CINERT_IDX]
    motion_subspaces(model, d)


def motion_subspaces(model: Model, d: Data) -> None:
    """Motion subspaces d.cdof about the centres, from a Data with kinematics done (com_pos's last part, alone for
    Jacobians, which need no inertias)."""
    R, x, n = d.xmat, d.cpos, d.n
    # cdof = (R s_ang, x x (R s_ang) + R s_lin): each dof's link-frame motion subspace moved to the centre
    Rd, xd = R[model.dof_linkid], x[model.dof_linkid]
    S = np.empty((model.nv, 6, n))
    S[:, :3] = np.einsum("dikn,dk->din", Rd, model.dof_motion[:, :3])
    S[:, 3:] = np.einsum("dikn,dk->din", Rd, model.dof_motion[:, 3:])
    S[:, 3:] += xd[:, _L1] * S[:, _L2] - xd[:, _L2] * S[:, _L1]
    d.cdof = S


# ---------------------------------------------------------------- velocity

def com_vel(model: Model, d: Data, qd: np.ndarray) -> None:
    """Link velocities d.cvel and d.cdof_dot = cvel_parent x cdof."""
    Sqd = per_link(model, d.cdof * qd[:, None, :])                  # (nlink, 6, n)
    v = np.zeros((model.nlink + 1, 6, d.n))                            # row -1: the world
    vs, Ss = list(v), list(Sqd)
    # forward pass over links: v = v_parent + S qd
    for i, p in enumerate(model.link_parents):
        np.add(vs[p], Ss[i], out=vs[i])
    d.cvel = v
    # cdof_dot = v_parent x S (for a multi-dof link the product with qd is the same as with its own velocity)
    d.cdof_dot = cross_motion(v[model.link_parentid[model.dof_linkid]], d.cdof)


# ---------------------------------------------------------------- RNE

def rne(model: Model, d: Data, qd: np.ndarray | None, qdd: np.ndarray | None) -> np.ndarray:
    """Recursive Newton-Euler on a Data with positions (and, if qd is given, velocities) done.

    Returns d.qfrc = M qdd + C qd + g (nv, n); qd None means qd = 0 and qdd None means qdd = 0
    (MuJoCo's flg_acc), so rne(model, d, None, None) is g(q).
    """
    a_g = base_acceleration(model)                                     # (0, -gravity): gravity as an upward base acceleration
    if qd is None and qdd is None:
        # every link accelerates at a_g: f = cinert a_g
        f = np.einsum("bijn,j->bin", d.cinert, a_g[:, 0])
    else:
        inc = 0.0
        if qdd is not None:
            inc = d.cdof * qdd[:, None, :]
        if qd is not None:
            inc = inc + d.cdof_dot * qd[:, None, :]
        inc = per_link(model, inc)
        a = np.empty((model.nlink + 1, 6, d.n))
        a[-1] = a_g
        As, incs = list(a), list(inc)
        # forward pass over links: a = a_parent + S qdd + cdof_dot qd
        for i, p in enumerate(model.link_parents):
            np.add(As[p], incs[i], out=As[i])
        d.cacc = a
        # f = cinert a + v x* (cinert v)
        f = inertia_times(d.cinert, a[:-1])
        if qd is not None:
            f += cross_force(d.cvel[:-1], inertia_times(d.cinert, d.cvel[:-1]))
    # backward pass over links: f_parent += f
    fs, parents = list(f), model.link_parents
    for i in model.backward_links:
        np.add(fs[parents[i]], fs[i], out=fs[parents[i]])
    d.cfrc = f
    # tau = S . f + armature qdd
    tau = np.einsum("din,din->dn", d.cdof, f[model.dof_linkid])
    if qdd is not None:
        tau += model.dof_armature[:, None] * qdd
    d.qfrc = tau
    return tau


# ---------------------------------------------------------------- CRBA

def subtree_sums(model: Model, x: np.ndarray) -> np.ndarray:
    """Per link (nlink, ...), the sum of a per-link array over the link's subtree (itself and its descendants)."""
    out = x.copy()
    outs, parents = list(out), model.link_parents
    # backward pass over links: x_parent += x
    for i in model.backward_links:
        np.add(outs[parents[i]], outs[i], out=outs[parents[i]])
    return out


def subtree_moments(model: Model, d: Data) -> None:
    """Each link's subtree's mass moment about its tree's centre, d.subtree_moment (nlink, 3, n): the sum over the
    subtree of m_k (cpos_k + R_k ipos_k), from a Data with kinematics done (support.com_jacobian's input)."""
    h = model.link_mass[:, None, None] * (d.cpos + np.einsum("bikn,bk->bin", d.xmat, model.link_ipos))
    d.subtree_moment = subtree_sums(model, h)


def composite_inertias(model: Model, d: Data) -> None:
    """Composite inertias d.crb (nlink, 6, 6, n): each link's subtree's spatial inertia about the centre."""
    d.crb = subtree_sums(model, d.cinert)


def crb(model: Model, d: Data) -> np.ndarray:
    """Composite inertias d.crb and the joint-space inertia d.qM = M(q) (nv, nv, n), armature included."""
    composite_inertias(model, d)
    Ic = d.crb
    # M_ij = S_i . (Ic_j S_j) for i = j or an ancestor of j, M_ji = M_ij, 0 between unrelated branches: every pair in one
    # vectorized product, then masked (the C++ walks each dof's ancestors instead: no product is wasted there)
    F = inertia_times(Ic[model.dof_linkid], d.cdof)
    SF = np.einsum("ikn,jkn->ijn", d.cdof, F)
    M = SF[model.dof_Mrow, model.dof_Mcol] * model.dof_Mmask
    M[np.arange(model.nv), np.arange(model.nv)] += model.dof_armature[:, None]
    d.qM = M
    return M


# ---------------------------------------------------------------- solves with M (mj_factorM, mj_solveM), ABA

def cholesky_solve(M: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x (nv, n) with M x = b for M (nv, nv, n) symmetric positive definite and b (nv, n): M = L L^T, L y = b, L^T x = y.

    Raises InvalidModelError when a pivot is not positive (M singular: a dof without mass or armature)."""
    n = len(M)
    L = np.zeros_like(M)
    # L_jj = sqrt(M_jj - sum_k<j L_jk^2),  L_ij = (M_ij - sum_k<j L_ik L_jk) / L_jj  for i > j
    for j in range(n):
        s = M[j, j] - np.einsum("kn,kn->n", L[j, :j], L[j, :j]) if j else M[j, j].copy()
        if not (s > 0).all():
            raise pivot_error(s)
        L[j, j] = np.sqrt(s)
        if j + 1 < n:
            L[j + 1:, j] = (M[j + 1:, j] - np.einsum("ikn,kn->in", L[j + 1:, :j], L[j, :j])) / L[j, j]
    x = np.empty_like(b)
    for i in range(n):                                                 # L y = b
        x[i] = (b[i] - np.einsum("kn,kn->n", L[i, :i], x[:i])) / L[i, i]
    for i in reversed(range(n)):                                       # L^T x = y
        x[i] = (x[i] - np.einsum("kn,kn->n", L[i + 1:, i], x[i + 1:])) / L[i, i]
    return x


def tree_cholesky_solve(model: Model, M: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x (nv, n) with M x = b for M (nv, nv, n) on the tree's pattern (M_ij = 0 unless dofs i and j are on one path to
    the root: the mass matrix, and the steppers' M + h B and M - h D): M = L^T L with L lower triangular on the same
    pattern, eliminating the last dof first, which fills nothing in (MuJoCo's mj_factorM as L^T L); L^T y = b, L x = y.
    Work O(sum of the dofs' depths squared) against cholesky_solve's O(nv^3).

    Raises InvalidModelError when a pivot is not positive (M singular: a dof without mass or armature)."""
    ancestors = dof_ancestors(model)
    L = M.copy()
    for k in reversed(range(len(M))):
        a = ancestors[k]
        if not (L[k, k] > 0).all():
            raise pivot_error(L[k, k])
        L[k, k] = np.sqrt(L[k, k])
        if a:
            L[k, a] = L[k, a] * (1.0 / L[k, k])                        # L_ki = M_ki / L_kk
            # M_ij -= L_ki L_kj for ancestors i, j of k (one chain: all on the pattern; the upper triangle is not read)
            L[np.ix_(a, a)] -= L[k, a][:, None] * L[k, a][None, :]
    x = b.copy()
    for k in reversed(range(len(M))):                                  # L^T y = b
        x[k] = x[k] / L[k, k]
        x[ancestors[k]] -= L[k, ancestors[k]] * x[k]
    for k in range(len(M)):                                            # L x = y
        a = ancestors[k]
        x[k] = (x[k] - np.einsum("kn,kn->n", L[k, a], x[a])) / L[k, k]
    return x


def dof_ancestors(model: Model) -> list[list[int]]:
    """Each dof's ancestors on dof_parentid's chain, from the root (the columns left of the diagonal in M's row: MuJoCo's
    M_colind, which the compiled model derives the same way): Model.dof_ancestors, made on first use with M's pattern."""
    return model.dof_ancestors


def block_inverse(D: np.ndarray) -> np.ndarray:
    """Inverse (k, k, n) of symmetric k x k blocks D (k, k, n), k = 1 or 3, by the adjugate; InvalidModelError when
    a determinant is zero."""
    if D.shape[0] == 1:
        if (D == 0).any():
            raise InvalidModelError(SINGULAR)
        return 1.0 / D
    A = np.empty_like(D)                                               # adjugate: A = det(D) D^-1
    for r in range(3):
        for c in range(3):
            r1, r2, c1, c2 = (c + 1) % 3, (c + 2) % 3, (r + 1) % 3, (r + 2) % 3
            A[r, c] = D[r1, c1] * D[r2, c2] - D[r1, c2] * D[r2, c1]
    det = D[0, 0] * A[0, 0] + D[0, 1] * A[1, 0] + D[0, 2] * A[2, 0]
    if (det == 0).any():
        raise InvalidModelError(SINGULAR)
    return A * (1.0 / det)


def aba(model: Model, d: Data, qd: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """qdd (nv, n) by the articulated-body algorithm (RBDA table 7.1) from a Data with positions and velocities done.

    Works about the centres in the world frame, so no coordinate changes between links are needed; a link's dofs form
    one block D (1 x 1 for hinges and slides, 3 x 3 for balls). Fills d.cacc.
    """
    arm, parents, adr, num = model.dof_armature, model.link_parents, model.link_dofadr, model.link_dofnum
    c = list(per_link(model, d.cdof_dot * qd[:, None, :]))           # velocity-product accelerations (6, n)
    IA = list(d.cinert.copy())                                         # articulated inertias (6, 6, n)
    # pA = v x* (I v): bias forces
    pA = list(cross_force(d.cvel[:-1], inertia_times(d.cinert, d.cvel[:-1])))
    S, U, Dinv, u = [None] * model.nlink, [None] * model.nlink, [None] * model.nlink, [None] * model.nlink
    # backward pass over links: U = IA S, D = S^T U + armature, u = tau - S^T pA;
    # the parent gets Ia = IA - U D^-1 U^T and pA + Ia c + U D^-1 u
    for i in reversed(range(model.nlink)):
        k = slice(adr[i], adr[i] + num[i])
        S[i] = d.cdof[k]                                               # (k, 6, n)
        U[i] = np.einsum("ijn,ajn->ain", IA[i], S[i])
        D = np.einsum("ain,bin->abn", S[i], U[i])
        D[np.arange(num[i]), np.arange(num[i])] += arm[k, None]
        Dinv[i] = block_inverse(D)
        u[i] = tau[k] - np.einsum("ain,in->an", S[i], pA[i])
        p = parents[i]
        if p >= 0:
            UD = np.einsum("ain,abn->bin", U[i], Dinv[i])              # (U D^-1)^T rows
            Ia = IA[i] - np.einsum("bin,bjn->ijn", UD, U[i])
            np.add(IA[p], Ia, out=IA[p])
            np.add(pA[p], pA[i] + np.einsum("ijn,jn->in", Ia, c[i]) + np.einsum("bin,bn->in", UD, u[i]), out=pA[p])
    a, qdd = np.empty((model.nlink + 1, 6, d.n)), np.empty((model.nv, d.n))
    a[-1] = base_acceleration(model)
    As = list(a)
    # forward pass over links: a' = a_parent + c, qdd = D^-1 (u - U^T a'), a = a' + S^T qdd
    for i, p in enumerate(parents):
        k = slice(adr[i], adr[i] + num[i])
        np.add(As[p], c[i], out=As[i])
        qdd[k] = np.einsum("abn,bn->an", Dinv[i], u[i] - np.einsum("ain,in->an", U[i], As[i]))
        As[i] += np.einsum("ain,an->in", S[i], qdd[k])
    d.cacc = a
    return qdd


# ---------------------------------------------------------------- energy

def energy_vel(model: Model, d: Data, qd: np.ndarray) -> np.ndarray:
    """Kinetic energy (n,) [J] from a Data with velocities done (MuJoCo's mj_energyVel)."""
    # T = 1/2 sum_l v . (cinert v) + 1/2 sum_i armature qd^2
    v = d.cvel[:-1]
    return 0.5 * (np.einsum("bin,bin->n", v, inertia_times(d.cinert, v)) + np.einsum("i,in->n", model.dof_armature, qd**2))


def energy_pos(model: Model, d: Data, q: np.ndarray) -> np.ndarray:
    """Potential energy (n,) [J] of gravity and springs from a Data with positions done (MuJoCo's mj_energyPos)."""
    # U = -g . (sum_l m_l (center_l + cipos_l) + static mass moment) + 1/2 k (q - springref)^2
    moment = np.einsum("b,bin->in", model.link_mass, d.cipos + d.center) + (model.static_mass * model.static_com)[:, None]
    springs = 0.5 * np.einsum("i,in->n", model.spring_stiffness, (q[model.spring_qposadr] - model.spring_ref[:, None]) ** 2)
    return springs - np.einsum("i,in->n", model.gravity, moment)


def body_energy_vel(model: Model, d: Data, qd: np.ndarray) -> np.ndarray:
    """Each body's kinetic energy (nbody, n) [J] from a Data with velocities done; bodies welded to the world 0.

    Sums over the bodies to energy_vel: a dof's armature energy 1/2 armature qd^2 counts to the body its joint moves
    (MuJoCo's dof_bodyid), as MuJoCo's M puts it on that dof's diagonal."""
    b = np.flatnonzero(model.body_linkid >= 0)
    link, R = model.body_linkid[b], d.xmat[model.body_linkid[b]]
    # c = x + R (pos + rot ipos): the body's centre of mass about the tree's centre;  v_c = v + w x c
    c = d.cpos[link] + np.einsum("bikn,bk->bin", R, model.body_pos[b] + np.einsum("bij,bj->bi", model.body_rot[b],
                                                                                      model.body_ipos[b]))
    w, v = d.cvel[link, :3], d.cvel[link, 3:]
    v_c = v + w[:, _L1] * c[:, _L2] - w[:, _L2] * c[:, _L1]
    # T_b = 1/2 (m |v_c|^2 + w_b . I_b w_b), w_b = (R rot)^T w the angular velocity in the body's frame
    w_b = np.einsum("bkin,bkn->bin", np.einsum("bkjn,bji->bkin", R, model.body_rot[b]), w)
    T = np.zeros((model.nbody, d.n))
    T[b] = 0.5 * (model.body_mass[b, None] * np.einsum("bin,bin->bn", v_c, v_c)
                  + np.einsum("bin,bij,bjn->bn", w_b, model.body_inertia[b], w_b))
    np.add.at(T, model.dof_bodyid, 0.5 * model.dof_armature[:, None] * qd**2)
    return T


def body_energy_pos(model: Model, d: Data, q: np.ndarray) -> np.ndarray:
    """Each body's potential energy (nbody, n) [J] from a Data with positions done: gravity's -m g . com (zero at the world
    origin), and the springs of the body's joints 1/2 k (q - springref)^2. Sums over the bodies to energy_pos."""
    # com = pos + rot ipos (world frame) for a welded body, center + x + R (pos + rot ipos) for a moving one
    local = model.body_pos + np.einsum("bij,bj->bi", model.body_rot, model.body_ipos)
    com = np.repeat(local[:, :, None], d.n, axis=2)
    b = np.flatnonzero(model.body_linkid >= 0)
    link = model.body_linkid[b]
    com[b] = d.center[link] + d.cpos[link] + np.einsum("bikn,bk->bin", d.xmat[link], local[b])
    U = -model.body_mass[:, None] * np.einsum("i,bin->bn", model.gravity, com)
    body = model.dof_bodyid[model.spring_dofadr]
    np.add.at(U, body, 0.5 * model.spring_stiffness[:, None] * (q[model.spring_qposadr] - model.spring_ref[:, None]) ** 2)
    return U


# ---------------------------------------------------------------- the stages a result needs

def position_stages(model: Model, d: Data, q: np.ndarray) -> None:
    """kinematics then com_pos: everything that depends on q alone (MuJoCo's mj_fwdPosition, without constraints)."""
    kinematics(model, d, q)
    com_pos(model, d)


def velocity_stages(model: Model, d: Data, q: np.ndarray, qd: np.ndarray) -> None:
    """position_stages then com_vel: everything that depends on q and qd (MuJoCo's mj_fwdVelocity without forces)."""
    position_stages(model, d, q)
    com_vel(model, d, qd)
