"""What MjData holds after mj_step and mj_rnePostConstraint besides the state (step_result's observe; mirrors
cpp/observe.h): the bodies' frames and centres, inertias and velocities about their roots' subtree centres (com_bodies,
body_velocities: mj_comPos, mj_comVel's cvel), the external wrenches on them (body_external_forces: xfrc_applied,
contacts, connect and weld), their accelerations and internal wrenches (rne_post_constraint), MuJoCo's layouts with the
world as body 0.

    observed_shapes(model)                     {name: one state's shape} of OBSERVABLE
    com_bodies(model, q)                       xpos, xquat, xmat, xipos, subtree_com, cinert            (mj_comPos)
    body_velocities(model, d, com)             cvel                                                      (mj_comVel)
    body_external_forces(model, com, ...)      cfrc_ext                                      (mj_rnePostConstraint)
    rne_post_constraint(model, d, com, ...)    cacc, cfrc_int                                (mj_rnePostConstraint)
The tendons' ten_length and ten_velocity (mj_tendon, ten_J qd) come from physai.engine.api.tendon_kinematics.
"""

import numpy as np

from physai.engine import constraint
from physai.engine.contact import ContactSet
from physai.engine.constraint import Rows
from physai.engine.data import Data
from physai.engine.model import CONNECT, WELD, Model
from physai.engine.model_checks import MINVAL
from physai.engine.smooth import base_acceleration, body_poses, quat_to_mat_mj, rne
from physai.spatial import quat_mul

#: the MjData fields a step can give besides its state (observed), with their shapes' trailing sizes
OBSERVABLE = ("xpos", "xquat", "xipos", "site_xpos", "cinert", "cvel", "cacc", "cfrc_int", "cfrc_ext", "qfrc_actuator",
              "qfrc_constraint", "qacc", "ten_length", "ten_velocity")


def observed_shapes(model) -> dict:
    """{name: the shape of one state's value} of OBSERVABLE (MuJoCo's: nbody + 1 bodies, the world first)."""
    nb = model.nbody + 1
    return dict(xpos=(nb, 3), xquat=(nb, 4), xipos=(nb, 3), site_xpos=(len(model.site_name), 3), cinert=(nb, 10),
                cvel=(nb, 6), cacc=(nb, 6), cfrc_int=(nb, 6), cfrc_ext=(nb, 6), qfrc_actuator=(model.nv,),
                qfrc_constraint=(model.nv,), qacc=(model.nv,), ten_length=(model.ntendon,),
                ten_velocity=(model.ntendon,))


def site_positions(model, com: dict) -> np.ndarray:
    """MuJoCo's site_xpos (nsite, 3) [m]: xpos + R site_pos of each site's body (com: com_bodies; a site on the
    world: its own position)."""
    b = model.site_bodyid + 1
    return com["xpos"][b] + np.einsum("sij,sj->si", com["xmat"][b], model.site_pos)


def body_rootids(model: Model) -> np.ndarray:
    """(nbody + 1,) MuJoCo's body_rootid: each body's ancestor whose parent is the world (the world: 0), MuJoCo's ids."""
    root = np.zeros(model.nbody + 1, np.intp)
    for b, p in enumerate(model.body_parentid.tolist()):
        root[b + 1] = b + 1 if p < 0 else root[p + 1]
    return root


def body_parents(model: Model) -> np.ndarray:
    """(nbody + 1,) MuJoCo's body_parentid (the world's own parent: 0)."""
    return np.r_[0, model.body_parentid + 1]


def com_bodies(model: Model, q: np.ndarray) -> dict:
    """MuJoCo's per-body frames and inertias at q (nq,) (mj_kinematics, mj_comPos), world first (nbody + 1 rows):
    xpos (., 3) [m], xquat (., 4), xmat (., 3, 3), xipos (., 3) [m], subtree_com (., 3) [m], cinert (., 10)."""
    nb = model.nbody + 1
    xpos, xquat = np.zeros((nb, 3)), np.zeros((nb, 4))
    xquat[0, 0] = 1.0
    xpos[1:], xquat[1:] = body_poses(model, q)
    xmat = quat_to_mat_mj(xquat)
    mass, ipos = np.r_[0.0, model.body_mass], np.vstack([np.zeros((1, 3)), model.body_ipos])
    xipos = xpos + np.einsum("bij,bj->bi", xmat, ipos)                 # xipos = xpos + R ipos
    # subtree_com = sum m xipos / sum m over the subtree (xipos where it has no mass)
    moment, smass = mass[:, None] * xipos, mass.copy()
    for b in range(nb - 1, 0, -1):
        p = model.body_parentid[b - 1] + 1
        moment[p] += moment[b]
        smass[p] += smass[b]
    subtree_com = np.where(smass[:, None] >= MINVAL, moment / np.maximum(smass, MINVAL)[:, None], xipos)
    # cinert: R I R^T + m (|c|^2 1 - c c^T) about the root's subtree_com, c = xipos - subtree_com[root]; m c; m
    c = xipos - subtree_com[body_rootids(model)]
    c[0] = 0.0                                         # the world's cinert is zero (mj_comPos), however far its com
    inertia = np.vstack([np.zeros((1, 3, 3)), model.body_inertia])
    I = np.einsum("bij,bjk,blk->bil", xmat, inertia, xmat) + mass[:, None, None] * (
        np.einsum("bi,bi->b", c, c)[:, None, None] * np.eye(3) - c[:, :, None] * c[:, None, :])
    cinert = np.concatenate([I[:, [0, 1, 2, 0, 0, 1], [0, 1, 2, 1, 2, 2]], mass[:, None] * c, mass[:, None]], axis=1)
    return dict(xpos=xpos, xquat=xquat, xmat=xmat, xipos=xipos, subtree_com=subtree_com, cinert=cinert)


def _to_root_com(model: Model, d: Data, com: dict, v: np.ndarray) -> np.ndarray:
    """Per body (nbody + 1, 6), its link's motion vector v (nlink + 1, 6, 1) (about the link's tree centre d.center; row -1
    the world's) moved to its root's subtree_com: v_lin(P) = v_lin(C) + w x (P - C)."""
    link = np.r_[-1, model.body_linkid]
    out = v[link, :, 0].copy()
    moved = link >= 0
    r = com["subtree_com"][body_rootids(model)][moved] - d.center[link[moved], :, 0]
    out[moved, 3:] += np.cross(out[moved, :3], r)
    return out


def body_velocities(model: Model, d: Data, com: dict) -> np.ndarray:
    """MuJoCo's cvel (nbody + 1, 6) [rad/s, m/s] from a Data with com_vel done: each body's link velocity at its root's
    subtree_com (mj_comVel)."""
    return _to_root_com(model, d, com, d.cvel)


def inert_times(cinert: np.ndarray, v: np.ndarray) -> np.ndarray:
    """MuJoCo's mju_mulInertVec for rows: [[I, [h]x], [-[h]x, m 1]] v (k, 6) for cinert (k, 10) = (I's 6, h, m)."""
    I = cinert[:, [0, 3, 4, 3, 1, 5, 4, 5, 2]].reshape(-1, 3, 3)
    h, m = cinert[:, 6:9], cinert[:, 9:]
    w, u = v[:, :3], v[:, 3:]
    return np.concatenate([np.einsum("bij,bj->bi", I, w) + np.cross(h, u), m * u - np.cross(h, w)], axis=1)


def cross_force_rows(v: np.ndarray, f: np.ndarray) -> np.ndarray:
    """v x* f for rows (k, 6) of motion vectors v and forces f (MuJoCo's mju_crossForce)."""
    w, u = v[:, :3], v[:, 3:]
    return np.concatenate([np.cross(w, f[:, :3]) + np.cross(u, f[:, 3:]), np.cross(w, f[:, 3:])], axis=1)


def rne_post_constraint(model: Model, d: Data, com: dict, cvel: np.ndarray, qd: np.ndarray, qacc: np.ndarray,
                        cfrc_ext: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """MuJoCo's mj_rnePostConstraint's accelerations and internal forces, (cacc, cfrc_int) (nbody + 1, 6) each, from a
    Data with com_vel done (its cdof, cdof_dot, at the state com and cvel belong to), the velocity qd (nv,) and
    acceleration qacc (nv,) it multiplies (after mj_step: the new qvel, the step's qacc) and the bodies' external
    forces cfrc_ext (nbody + 1, 6) (constraint.body_external_forces):

        cacc = cacc_parent + cdof_dot qd + cdof qacc          (the world's: (0, -gravity))
        cfrc_int = cinert cacc + cvel x* (cinert cvel) - cfrc_ext, summed over each body's subtree (into the world too)
    """
    rne(model, d, qd[:, None], qacc[:, None])                          # the links' cacc (and cfrc, qfrc: unused)
    cacc = _to_root_com(model, d, com, d.cacc)
    cacc[0] = base_acceleration(model)[:, 0]
    f = inert_times(com["cinert"], cacc) + cross_force_rows(cvel, inert_times(com["cinert"], cvel)) - cfrc_ext
    f[0] = 0.0
    # backward pass over bodies: cfrc_int_parent += cfrc_int
    for b in range(model.nbody, 0, -1):
        f[model.body_parentid[b - 1] + 1] += f[b]
    return cacc, f


def _moved_wrench(torque: np.ndarray, force: np.ndarray, at: np.ndarray, to: np.ndarray) -> np.ndarray:
    """The wrench (torque, force) acting at the point `at`, about the point `to` (mju_transformSpatial of a force):
    (torque + (at - to) x force, force)."""
    return np.r_[torque + np.cross(at - to, force), force]


def body_external_forces(model: Model, com: dict, xfrc_applied: np.ndarray | None, contacts: ContactSet | None,
                         r: Rows | None, efc_force: np.ndarray | None) -> np.ndarray:
    """MuJoCo's cfrc_ext (nbody + 1, 6) [N m, N]: the external wrench on each body about its root's subtree_com (rows
    and layout of com_bodies, which gives com): xfrc_applied (nbody, 6) (force, torque at the centre of mass),
    the contact forces (the first geom's body pushed by minus the contact frame's force, the second's by plus it,
    at the contact point) and the connect and weld forces (plus on body 1 at its anchor, minus on body 2), from the
    solve's rows r and efc_force (mj_rnePostConstraint)."""
    ext = np.zeros((model.nbody + 1, 6))
    root, P = body_rootids(model), com["subtree_com"]
    about = lambda b: P[root[b]]                                       # noqa: E731
    if xfrc_applied is not None:
        for b in np.flatnonzero(np.abs(xfrc_applied).sum(axis=1)).tolist():
            ext[b + 1] += _moved_wrench(xfrc_applied[b, 3:], xfrc_applied[b, :3], com["xipos"][b + 1], about(b + 1))
    if r is None or efc_force is None:
        return ext
    if contacts is not None and len(contacts.dist):
        local = constraint.contact_frame_forces(model, r, efc_force)
        for c in np.flatnonzero(r.contact_row >= 0).tolist():
            F = contacts.frame[c]                                      # world = F^T local
            torque, force = F.T @ local[c, 3:], F.T @ local[c, :3]
            for b, sign in ((contacts.body1[c], -1.0), (contacts.body2[c], 1.0)):
                if b >= 0:
                    ext[b + 1] += sign * _moved_wrench(torque, force, contacts.pos[c], about(b + 1))
    _equality_body_forces(model, com, r, efc_force, ext)
    return ext


def _weld_torque(model: Model, com: dict, e: int, f: np.ndarray) -> np.ndarray:
    """The world torque on body 1 of weld e of its rotational rows' forces f (3,) (MuJoCo 4's mj_rnePostConstraint):
    the rows' velocity is ts/2 Im(conj(q2) (0, w) q1 relquat) = ts/2 A w for the bodies' relative angular velocity w,
    so the torque is ts/2 A^T f."""
    b1, b2, data = model.eq_obj1id[e], model.eq_obj2id[e], model.eq_data[e]
    q1 = com["xquat"][b1 + 1] if b1 >= 0 else np.array([1.0, 0, 0, 0])
    q2 = com["xquat"][b2 + 1] if b2 >= 0 else np.array([1.0, 0, 0, 0])
    quat, neg = quat_mul(q1, data[6:10]), constraint.quat_conjugate(q2)
    A = np.array([quat_mul(constraint.quat_axis(neg, axis), quat)[1:] for axis in np.eye(3)]).T
    return 0.5 * data[10] * A.T @ f


def _equality_body_forces(model: Model, com: dict, r: Rows, efc_force: np.ndarray, ext: np.ndarray) -> None:
    """ext += the connect and weld rows' forces (world frame: force rows, then a weld's torque rows), plus on body 1 at
    its anchor, minus on body 2 at its own (com_bodies' frames)."""
    root, P = body_rootids(model), com["subtree_com"]
    i = 0
    while i < r.ne:
        e = int(r.id[i])
        kind, data = model.eq_type[e], model.eq_data[e]
        if kind not in (CONNECT, WELD):
            i += 1
            continue
        force = efc_force[i:i + 3]
        torque = _weld_torque(model, com, e, efc_force[i + 3:i + 6]) if kind == WELD else np.zeros(3)
        anchors = (data[0:3], data[3:6]) if kind == CONNECT else (data[3:6], data[0:3])
        for b, anchor, sign in ((model.eq_obj1id[e], anchors[0], 1.0), (model.eq_obj2id[e], anchors[1], -1.0)):
            if b >= 0:
                at = com["xmat"][b + 1] @ anchor + com["xpos"][b + 1]
                ext[b + 1] += sign * _moved_wrench(torque, force, at, P[root[b + 1]])
        i += 6 if kind == WELD else 3
