"""The constants of a model, derived once when it is built (MuJoCo's engine_setconst.c: mj_setConst).

    set_const(model)         every value Model.KEPT names, made and handed to the model: the loaders' last step
    invweight0(model)        body_invweight0 (nbody, 2), dof_invweight0 (nv,) at qpos0, or None when M is singular there
    has_constraints(model)   whether mj_step applies constraints to the model (constraints_by_default)

Each value is made by the module that reads it (collision.make_candidates, ...; the invweight constants and the
constraints' default here, as mj_setConst makes them), in an order where each finds the ones it reads. Their cost
grows with the model, not faster: a pile of 800 free spheres on a plane (320,000 candidate pairs) takes about a second.
A model without geoms makes empty collision structures, one without gravity compensation or fluid no dof chains.
"""

import numpy as np

from physai.engine import collision, passive, smooth, support
from physai.engine.data import Data
from physai.engine.model import Model
from physai.engine.model_checks import MINVAL
from physai.joints import BALL, FREE, SLIDE


def set_const(model: Model) -> Model:
    """The model, holding every constant Model.KEPT names (made once, here); returns it."""
    makers = {"collision_functions": collision.make_functions, "collision_candidates": collision.make_candidates,
              "collision_broad_phase": collision.make_broad_phase, "collision_groups": collision.make_groups,
              "collision_shapes": collision.make_shapes, "standalone_free_dofs": support.make_standalone_free_dofs,
              "pose_links": smooth.make_pose_links, "link_dofchains": passive.make_link_dofchains,
              "fluid_links": passive.make_fluid_links, "invweight0": invweight0, "constraints_by_default": has_constraints}
    for name in model.KEPT:
        model.keep(name, makers[name](model))
    return model


def has_constraints(model: Model) -> bool:
    """Whether mj_step applies constraints to the model: a kind of constraint its disable flags leave on
    (mjDSBL_CONSTRAINT turns all off; the loader keeps them in model.opt) with something to act on: a limited joint, a
    dof with friction loss, an active equality, or a geom pair that may touch."""
    opt = model.opt
    return bool((opt.limit and model.jnt_limited.any()) or (opt.frictionloss and (model.dof_frictionloss > 0).any())
                or (opt.equality and model.eq_active0.any()) or collision.has_contacts(model))


def simple_slider(model: Model, b: int, children: set) -> bool:
    """MuJoCo's body_simple == 2: a body whose inertia frame is its own (centre of mass at its origin, diagonal
    inertia), at a tree's root (its parent the world or welded to it), without children, moved only by slides along a
    body axis through its origin: M is diag(mass) there."""
    parent = model.body_parentid[b]
    mine = np.flatnonzero(model.jnt_bodyid == b)
    inertia = model.body_inertia[b]
    return bool((parent < 0 or model.body_linkid[parent] < 0) and b not in children and len(mine)
                and (model.body_ipos[b] == 0).all() and (inertia == np.diag(np.diag(inertia))).all()
                and all(model.jnt_type[j] == SLIDE and (np.abs(model.jnt_axis[j]) > 1e-14).sum() == 1
                        and (model.jnt_pos[j] == 0).all() for j in mine))


def invweight0(model: Model) -> tuple[np.ndarray, np.ndarray] | None:
    """(body_invweight0 (nbody, 2), dof_invweight0 (nv,)) of MuJoCo's mj_setConst at qpos0: a body's mean translational
    and rotational diagonal of J M^-1 J^T (J its centre-of-mass Jacobian), a joint's mean diagonal of its block of M^-1
    (free joints: translation and rotation apart); zero for bodies welded to the world; 1 / mass for MuJoCo's "simple"
    sliding bodies. None when M is singular at qpos0 (a moving body without mass: physai.engine.constraint names it when
    a constraint needs the constants). They scale each row's regulariser R (diagApprox).

    MuJoCo solves M x = J^T with M's factor; here the articulated-body recursion gives the same numbers link by link,
    without M: J M^-1 J^T of a body is Omega of its link seen from its centre of mass, M^-1's diagonal block of a link
    D^-1 + D^-1 U^T Omega_parent U D^-1 (inverse_inertias), so a pile of free bodies costs what one body does, times
    their number."""
    d = Data(model)
    smooth.position_stages(model, d, model.qpos0[:, None])
    found = inverse_inertias(model, d)
    if found is None:
        return None
    omega, minv_diag = found
    children = set(model.body_parentid[model.body_parentid >= 0].tolist())
    pos, rot = (x[..., 0] for x in support.body_frames(model, d))
    body = np.zeros((model.nbody, 2))
    for b in np.flatnonzero(model.body_linkid >= 0).tolist():
        link = model.body_linkid[b]
        if simple_slider(model, b, children):
            body[b] = 1.0 / max(MINVAL, model.body_mass[b]), 0.0
            continue
        # the centre of mass's velocity from the spatial one: v = v_centre - r x w, T = [-[r]x, 1]
        r = pos[b] + rot[b] @ model.body_ipos[b] - d.center[link, :, 0]
        T = np.hstack([-np.cross(np.eye(3), r), np.eye(3)])           # np.cross(1, r) = [r]x
        A = T @ omega[link] @ T.T
        body[b] = np.trace(A) / 3, np.trace(omega[link][:3, :3]) / 3
    dof = np.zeros(model.nv)
    for j in range(model.njnt):
        a, t = model.jnt_dofadr[j], model.jnt_type[j]
        if simple_slider(model, int(model.jnt_bodyid[j]), children):
            dof[a] = 1.0 / max(MINVAL, model.body_mass[model.jnt_bodyid[j]])
        elif t == FREE:
            dof[a:a + 3], dof[a + 3:a + 6] = minv_diag[a:a + 3].sum() / 3, minv_diag[a + 3:a + 6].sum() / 3
        elif t == BALL:
            dof[a:a + 3] = minv_diag[a:a + 3].sum() / 3
        else:
            dof[a] = minv_diag[a]
    return body, dof


def inverse_inertias(model: Model, d: Data) -> tuple[np.ndarray, np.ndarray] | None:
    """(Omega (nlink, 6, 6), diag(M^-1) (nv,)) of the one-state Data d with com_pos done: Omega_i = J_i M^-1 J_i^T, the
    spatial acceleration of link i (about its tree's centre) per unit spatial force on it (Featherstone's inverse
    operational-space inertia), and M^-1's diagonal; None when a link's D is not positive definite (M is singular).

    Backward over links (RBDA table 7.1 with no velocity): U = IA S, D = S^T U + armature, the parent's IA gains
    IA - U D^-1 U^T. Forward: P = 1 - U D^-1 S^T, Omega_i = P^T Omega_parent P + S D^-1 S^T (a force f on link i reaches
    its parent as P f), M^-1's block of link i = D^-1 + D^-1 U^T Omega_parent U D^-1 (the world's Omega is 0)."""
    nlink, parents = model.nlink, model.link_parents
    IA = d.cinert[..., 0].copy()
    S = [d.cdof[a:a + k, :, 0].T for a, k in zip(model.link_dofadr.tolist(), model.link_dofnum.tolist())]   # (6, k)
    U, Dinv = [None] * nlink, [None] * nlink
    for i in reversed(range(nlink)):
        a, k = model.link_dofadr[i], model.link_dofnum[i]
        U[i] = IA[i] @ S[i]
        D = S[i].T @ U[i] + np.diag(model.dof_armature[a:a + k])
        try:
            np.linalg.cholesky(D)                                  # D positive definite, or M is singular
        except np.linalg.LinAlgError:
            return None
        Dinv[i] = np.linalg.inv(D)
        if parents[i] >= 0:
            IA[parents[i]] += IA[i] - U[i] @ Dinv[i] @ U[i].T
    omega, minv_diag = np.zeros((nlink, 6, 6)), np.zeros(model.nv)
    for i, p in enumerate(parents):
        a, k = model.link_dofadr[i], model.link_dofnum[i]
        block = Dinv[i]
        if p >= 0:
            W = U[i] @ Dinv[i]
            P = np.eye(6) - W @ S[i].T
            block = block + W.T @ omega[p] @ W
            omega[i] = P.T @ omega[p] @ P
        omega[i] += S[i] @ Dinv[i] @ S[i].T
        minv_diag[a:a + k] = np.diag(block)
    return omega, minv_diag
