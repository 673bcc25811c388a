"""Bodies and points on a Data workspace (mirrored by cpp/support.h): where the bodies are and how points on them move.

    body_frames(model, d)                     every body's world position and orientation (MuJoCo's xpos, xmat)
    point_offsets(model, d, b, points)        points fixed in body b, relative to the centre of its link's tree
    point_jacobians(model, d, b, points)      (Jp; Jr) of world points moving with body b (MuJoCo's mj_jac): THE point
                                              Jacobian, which every other one calls
    point_jacobian_dots(model, d, b, r)       their time derivatives (MuJoCo's mj_jacDot)
    centre_of_mass(model, d)                  the whole model's centre of mass (after com_pos)
    momentum_matrix(model, d)                 the centroidal momentum matrix A_g (after composite_inertias)
    com_jacobian(model, d)                    the centre of mass's Jacobian: A_g's linear rows over the mass, from
                                              subtree masses and mass moments alone (after subtree_moments)
    dof_chain(model, b)                       the dofs that move body b

A point p moving with body b has the world velocity sum_i (cdof_i_lin + cdof_i_ang x (p - c)) qd_i = Jp qd over the
dofs i that move b (c the centre of b's tree, where the engine takes its spatial vectors), and the body the angular
velocity sum_i cdof_i_ang qd_i = Jr qd; the other columns are zero. Arrays keep the state index last.
"""

import numpy as np

from physai import joints
from physai.engine.data import Data
from physai.engine.model import Model


def body_frames(model: Model, d: Data) -> tuple[np.ndarray, np.ndarray]:
    """(pos (nbody, 3, n) [m], rot (nbody, 3, 3, n)) of every body frame, from a Data with its kinematics done: the
    body's link pose composed with the body's pose in it (model.body_pos, body_rot); bodies welded to the world keep
    their world pose."""
    link = model.body_linkid
    if model.nlink == 0:                                               # every body welded to the world
        n = d.xpos.shape[-1]
        return np.repeat(model.body_pos[..., None], n, -1), np.repeat(model.body_rot[..., None], n, -1)
    R, x = d.xmat[link], d.xpos[link]                                  # (nbody, 3, 3, n), (nbody, 3, n)
    # body frame = link frame * (body_pos, body_rot):  p = x + R body_pos,  rot = R body_rot
    pos = x + np.einsum("bijn,bj->bin", R, model.body_pos)
    rot = np.einsum("bikn,bkj->bijn", R, model.body_rot)
    welded = link < 0
    pos[welded], rot[welded] = model.body_pos[welded][..., None], model.body_rot[welded][..., None]
    return pos, rot


def dof_chain(model: Model, b: int) -> np.ndarray:
    """(nv,) booleans: the dofs that move body b (none for the world, b = -1, or a body welded to it)."""
    link = model.body_linkid[b] if b >= 0 else -1
    if link < 0:
        return np.zeros(model.nv, bool)
    return model.dof_ancestor[:, model.link_dofadr[link] + model.link_dofnum[link] - 1].copy()


def point_offsets(model: Model, d: Data, b: int, points: np.ndarray) -> np.ndarray:
    """(k, 3, n) [m]: k points (k, 3) fixed in body b (in its frame) relative to the centre of b's link's tree, from a
    Data with kinematics done, r = cpos + R (body_pos + body_rot p) (cpp/support.h's point_offset: exact however far the
    robot is from the origin); zeros for a body welded to the world."""
    link = model.body_linkid[b]
    if link < 0:
        return np.zeros((len(points), 3, d.n))
    in_link = model.body_pos[b][None] + points @ model.body_rot[b].T   # (k, 3): the points in the link's frame
    return d.cpos[link][None] + np.einsum("ijn,kj->kin", d.xmat[link], in_link)


def point_jacobians(model: Model, d: Data, b: int, points: np.ndarray, centered: bool = False) -> np.ndarray:
    """(Jp; Jr) (k, 6, nv, n) of k world points (k, 3, n) moving with body b (-1: the world: zero), from a Data with
    com_pos done (MuJoCo's mj_jac; cpp/support.h's point_jacobians): Jp = S_lin + S_ang x (p - centre), Jr = S_ang in the
    columns of the dofs that move b. centered: the points are given as p - centre (the centre of b's link's tree, e.g.
    point_offsets), which keeps every digit far from the origin."""
    J = np.zeros((len(points), 6, model.nv, d.n))
    dofs = np.flatnonzero(dof_chain(model, b))
    if not len(dofs):
        return J
    link = model.body_linkid[b]
    S = d.cdof[dofs]                                                   # (m, 6, n)
    r = points if centered else points - d.center[link][None]         # (k, 3, n): the points relative to the centre
    J[:, :3, dofs] = S[None, :, 3:].transpose(0, 2, 1, 3) + np.cross(S[None, :, :3], r[:, None], axis=2).transpose(0, 2, 1, 3)
    J[:, 3:, dofs] = S[None, :, :3].transpose(0, 2, 1, 3)
    return J


def dof_bodyid(model: Model) -> np.ndarray:
    """(nv,) the body each dof's joint belongs to (MuJoCo's dof_bodyid)."""
    per_joint = [joints.NV[int(t)] for t in model.jnt_type]
    return np.repeat(model.jnt_bodyid, per_joint).astype(np.intp)


def quaternion_dofs(model: Model) -> np.ndarray:
    """(nv,) bool: the dofs of ball joints and of free joints' rotations (their columns turn with their own body)."""
    out = np.zeros(model.nv, dtype=bool)
    for t, v in zip(model.jnt_type.tolist(), model.jnt_dofadr.tolist()):
        if t == joints.BALL:
            out[v:v + 3] = True
        elif t == joints.FREE:
            out[v + 3:v + 6] = True
    return out


def dof_turnlink(model: Model) -> np.ndarray:
    """(nv,) for a ball's or a free joint's rotation dof, the link of its body, whose velocity turns its column (MuJoCo's
    mj_jacDot uses the body's cvel there); -1 for the others, whose column's rate is cdof_dot as it is."""
    out = np.full(model.nv, -1, dtype=np.intp)
    turning = quaternion_dofs(model)
    out[turning] = model.body_linkid[dof_bodyid(model)[turning]]
    return out


def point_jacobian_dots(model: Model, d: Data, b: int, r: np.ndarray) -> np.ndarray:
    """(Jp_dot; Jr_dot) (k, 6, nv, n) of k points moving with body b, given relative to the centre of b's tree (k, 3, n),
    from a Data with com_vel done (MuJoCo's mj_jacDot): column i of the dofs that move b is, with Sdot = cdof_dot_i
    (for a ball's or a free joint's rotation, cvel_body x cdof_i: the column turns with its own body),
        Jr_dot = Sdot_ang,   Jp_dot = Sdot_lin + Sdot_ang x r + cdof_ang x pdot,
    pdot = v + w x r the points' velocity ((w, v) = cvel of b's link)."""
    J = np.zeros((len(r), 6, model.nv, d.n))
    dofs = np.flatnonzero(dof_chain(model, b))
    if not len(dofs):
        return J
    S, Sdot = d.cdof[dofs], d.cdof_dot[dofs].copy()                     # (m, 6, n)
    turn = dof_turnlink(model)[dofs]
    turning = turn >= 0
    if turning.any():                                                   # cvel of the dof's body x cdof
        v = d.cvel[turn[turning]]                                       # (t, 6, n)
        Sq = S[turning]
        Sdot[turning] = np.concatenate([np.cross(v[:, :3], Sq[:, :3], axis=1),
                                        np.cross(v[:, :3], Sq[:, 3:], axis=1) + np.cross(v[:, 3:], Sq[:, :3], axis=1)], axis=1)
    vb = d.cvel[model.body_linkid[b]]                                   # (6, n)
    pdot = vb[None, 3:] + np.cross(vb[None, :3], r, axis=1)             # (k, 3, n)
    lin = (Sdot[None, :, 3:] + np.cross(Sdot[None, :, :3], r[:, None], axis=2)
           + np.cross(S[None, :, :3], pdot[:, None], axis=2))            # (k, m, 3, n)
    J[:, :3, dofs] = lin.transpose(0, 2, 1, 3)
    J[:, 3:, dofs] = np.broadcast_to(Sdot[None, :, :3], (len(r),) + Sdot[:, :3].shape).transpose(0, 2, 1, 3)
    return J


def body_wrench_force(model, d, xfrc: np.ndarray) -> np.ndarray:
    """sum_b J_b(com_b)^T w_b (nv,) for checked wrenches xfrc (nbody, 6), from a one-state engine Data whose
    positions are done (kinematics, com_pos): what applied_force adds for xfrc_applied, without recomputing them."""
    tau = np.zeros(model.nv)
    for b in np.flatnonzero(np.abs(xfrc).sum(axis=1)):
        r = point_offsets(model, d, int(b), model.body_ipos[b][None])
        tau += point_jacobians(model, d, int(b), r, centered=True)[0, :, :, 0].T @ xfrc[b]
    return tau


def centre_of_mass(model: Model, d: Data) -> np.ndarray:
    """The whole model's centre of mass (3, n) [m] from a Data with com_pos done: (sum_l m_l (centre_l + cipos_l) + the
    mass welded to the world at its centre) / the model's mass (cpp/support.h's centre_of_mass)."""
    moment = np.einsum("l,lin->in", model.link_mass, d.center + d.cipos) + (model.static_mass * model.static_com)[:, None]
    return moment / (model.link_mass.sum() + model.static_mass)


def momentum_matrix(model: Model, d: Data) -> np.ndarray:
    """The centroidal momentum matrix A_g (6, nv, n), rows (linear; angular about the whole model's centre of mass c),
    from a Data with com_pos and composite_inertias done (cpp/support.h's momentum_matrix): column j is the momentum of
    dof j's subtree moving at cdof_j, F = Ic S_j = (angular about the centre of j's tree, linear), its angular part
    moved to c: F_ang + (centre - c) x F_lin. c = (sum_l m_l (centre_l + cipos_l) + the mass welded to the world) / mass."""
    c = centre_of_mass(model, d)                                                # (3, n)
    link = model.dof_linkid
    Ic = d.crb[link]                                                            # (nv, 6, 6, n)
    F = np.einsum("jikn,jkn->jin", Ic, d.cdof)                                   # (nv, 6, n)
    ang = F[:, :3] + np.cross(d.center[link] - c[None], F[:, 3:], axis=1)
    return np.concatenate([F[:, 3:], ang], axis=1).transpose(1, 0, 2)            # (6, nv, n)


def com_jacobian(model: Model, d: Data) -> np.ndarray:
    """The centre of mass's Jacobian (3, nv, n), from a Data with kinematics, motion_subspaces and subtree_moments done
    (cpp/support.h's com_jacobian; MuJoCo's mj_jacSubtreeCom of the world): momentum_matrix's linear rows over the mass
    without the inertias. Column j is the linear momentum of dof j's subtree moving at cdof_j = (S_ang; S_lin), over the
    mass: (m_sub S_lin + S_ang x h_sub) / mass, with m_sub the subtree's mass (Model.link_subtreemass) and h_sub its mass
    moment about its tree's centre (d.subtree_moment)."""
    link, S = model.dof_linkid, d.cdof
    J = model.link_subtreemass[link, None, None] * S[:, 3:] + np.cross(S[:, :3], d.subtree_moment[link], axis=1)
    return J.transpose(1, 0, 2) / (model.link_mass.sum() + model.static_mass)                             # (3, nv, n)


def standalone_free_dofs(model: Model) -> list[int]:
    """The first dof of each free joint that moves its tree alone (MuJoCo 4.0's standalone free body: the body's only
    joint, no joint below it; bodies welded below it move with it). implicitfast solves their 6 x 6 blocks with the
    bias's velocity derivative as well (MuJoCo's mjd_freeMhat), of the whole rigid tree: the gyroscopic term it leaves
    out elsewhere. (MuJoCo's pre-4.0 source also required no mass below; 4.0 applies the block to a free body with
    massive welded children, measured: implicitfast then equals the exact derivative's solve.) Made when the model is
    built."""
    return model.kept("standalone_free_dofs")


def make_standalone_free_dofs(model: Model) -> list[int]:
    """standalone_free_dofs' value, made once by physai.engine.setconst.set_const: one backward pass over the bodies."""
    jointed = np.bincount(model.jnt_bodyid, minlength=model.nbody) if model.njnt else np.zeros(model.nbody, int)
    # the joints among each body's strict descendants, summed from the leaves (children come after)
    joints_below = np.zeros(model.nbody, int)
    for b in reversed(range(model.nbody)):
        p = model.body_parentid[b]
        if p >= 0:
            joints_below[p] += joints_below[b] + jointed[b]
    bodies = model.jnt_bodyid
    return [int(model.jnt_dofadr[j]) for j in np.flatnonzero(model.jnt_type == joints.FREE).tolist()
            if jointed[bodies[j]] == 1 and not joints_below[bodies[j]]]
