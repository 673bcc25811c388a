"""The constants of a model, derived once when it is built (MuJoCo's engine_setconst.c: mj_setConst).

    set_const(model)         every value Model.KEPT names, made and handed to the model: the loaders' last step
    invweight0(model)        body_invweight0 (nbody, 2), dof_invweight0 (nv,) at qpos0, or None when M is singular there
    tendon_invweight0(model) tendon_invweight0 (ntendon,) at qpos0, or None likewise
    has_constraints(model)   whether mj_step applies constraints to the model (constraints_by_default)
    floor_bodies(model)      the moving bodies whose contacts may have R at its floor MINVAL (physai.constraints' warning)

Each value is made by the module that reads it (collision.make_candidates, ...; the invweight constants and the
constraints' default here, as mj_setConst makes them), in an order where each finds the ones it reads. Their cost
grows with the model, not faster: a pile of 800 free spheres on a plane (320,000 candidate pairs) takes about a second.
A model without geoms makes empty collision structures, one without gravity compensation or fluid no dof chains.
"""

import numpy as np

from physai.engine import collision, passive, smooth, support, tendon
from physai.engine.data import Data
from physai.engine.model import Model
from physai.engine.model_checks import MAXIMP, MINVAL, label
from physai.exceptions import UnsupportedModelError
from physai.joints import BALL, FREE, SLIDE


def set_const(model: Model) -> Model:
    """The model, holding every constant Model.KEPT names (made once, here); returns it."""
    makers = {"collision_functions": collision.make_functions, "collision_candidates": collision.make_candidates,
              "collision_broad_phase": collision.make_broad_phase, "collision_groups": collision.make_groups,
              "collision_shapes": collision.make_shapes, "contact_dofs": collision.make_contact_dofs,
              "standalone_free_dofs": support.make_standalone_free_dofs,
              "pose_links": smooth.make_pose_links, "link_dofchains": passive.make_link_dofchains,
              "fluid_links": passive.make_fluid_links, "invweight0": invweight0, "tendon_invweight0": tendon_invweight0,
              "constraints_by_default": has_constraints, "floor_bodies": floor_bodies}
    check_reduced_mass(model)
    for name in model.KEPT:
        model.keep(name, makers[name](model))
    return model


def check_reduced_mass(model: Model) -> None:
    """UnsupportedModelError where MuJoCo's M, stored reduced, leaves out a mass coupling physai keeps: two joints of a
    body MuJoCo's compiler marks simple (Model.dof_simplenum > 0: no entries between its dofs in M) coupled in M at
    qpos0 (two slides along one axis, say), where MuJoCo's dynamics would differ from the body's. A free joint's own
    dofs are not coupled there (its body's centre of mass at its origin, its inertia diagonal)."""
    dofs = np.flatnonzero(model.dof_simplenum > 0)
    dof_joint = np.searchsorted(model.jnt_dofadr, np.arange(model.nv), side="right") - 1
    dofs = dofs[model.jnt_type[dof_joint[dofs]] != FREE]
    if len(dofs) < 2:
        return
    d = Data(model)
    smooth.position_stages(model, d, model.qpos0[:, None])
    M = smooth.crb(model, d)[:, :, 0][np.ix_(dofs, dofs)]
    diag = np.diag(M)
    coupled = (np.abs(M) > 1e-12 * np.sqrt(np.outer(diag, diag))) & (dof_joint[dofs][:, None] != dof_joint[dofs][None, :])
    if coupled.any():
        i, j = dofs[np.argwhere(coupled)[0]]
        a, b = (label(model.jnt_name[dof_joint[k]], dof_joint[k], "joint") for k in (i, j))
        raise UnsupportedModelError(
            f"joints {a!r} and {b!r} move one body that MuJoCo's compiler marks simple (dof_simplenum), yet they are "
            f"coupled in the mass matrix (M[{i}, {j}] = {M[coupled][0]:.3g} at qpos0): MuJoCo's reduced M leaves that "
            "coupling out, which physai does not model; give the body's joints orthogonal directions or move one "
            "to a child body")


def has_constraints(model: Model) -> bool:
    """Whether mj_step applies constraints to the model: a kind of constraint its disable flags leave on
    (mjDSBL_CONSTRAINT turns all off; the loader keeps them in model.opt) with something to act on: a limited joint, a
    dof or tendon with friction loss, an active equality, or a geom pair that may touch."""
    opt = model.opt
    return bool((opt.limit and (model.jnt_limited.any() or model.tendon_limited.any()))
                or (opt.frictionloss and ((model.dof_frictionloss > 0).any() or (model.tendon_frictionloss > 0).any()))
                or (opt.equality and model.eq_active0.any()) or collision.has_contacts(model))


def simple_sliders(model: Model) -> np.ndarray:
    """(nbody,) bool, MuJoCo's body_simple == 2: a body whose inertia frame is its own (centre of mass at its origin,
    diagonal inertia), at a tree's root (its parent the world or welded to it), without children, moved only by slides
    along a body axis through its origin: M is diag(mass) there."""
    parent, nbody = model.body_parentid, model.nbody
    at_root = (parent < 0) | (model.body_linkid[np.maximum(parent, 0)] < 0)
    childless = np.bincount(parent[parent >= 0], minlength=nbody) == 0
    inertia = model.body_inertia
    own_frame = (model.body_ipos == 0).all(axis=1) & (inertia == inertia * np.eye(3)).all(axis=(1, 2))
    axial_slide = (model.jnt_type == SLIDE) & ((np.abs(model.jnt_axis) > 1e-14).sum(axis=1) == 1) & \
        (model.jnt_pos == 0).all(axis=1)
    joints_of = np.bincount(model.jnt_bodyid, minlength=nbody)
    sliding = np.bincount(model.jnt_bodyid, weights=axial_slide, minlength=nbody) == joints_of
    return at_root & childless & own_frame & (joints_of > 0) & sliding


def invweight0(model: Model) -> tuple[np.ndarray, np.ndarray] | None:
    """(body_invweight0 (nbody, 2), dof_invweight0 (nv,)) of MuJoCo's mj_setConst at qpos0: a body's mean translational
    and rotational diagonal of J M^-1 J^T (J its centre-of-mass Jacobian), a joint's mean diagonal of its block of M^-1
    (free joints: translation and rotation apart); zero for bodies welded to the world; 1 / mass for MuJoCo's "simple"
    sliding bodies. None when M is singular at qpos0 (a moving body without mass: physai.engine.constraint names it when
    a constraint needs the constants). They scale each row's regulariser R (diagApprox).

    MuJoCo solves M x = J^T with M's factor; here the articulated-body recursion gives the same numbers link by link,
    without M: J M^-1 J^T of a body is Omega of its link seen from its centre of mass, M^-1's diagonal block of a link
    D^-1 + D^-1 U^T Omega_parent U D^-1 (inverse_inertias), so a pile of free bodies costs what one body does, times
    their number. Armature on tendons couples the links (M + armature J^T J): then M^-1 itself (inverse_inertias_dense)."""
    d = Data(model)
    smooth.position_stages(model, d, model.qpos0[:, None])
    found = inverse_inertias_dense(model, d) if model.tendon_armature.any() else inverse_inertias(model, d)
    if found is None:
        return None
    omega, minv_diag = found
    simple, inv_mass = simple_sliders(model), 1.0 / np.maximum(MINVAL, model.body_mass)
    pos, rot = (x[..., 0] for x in support.body_frames(model, d))
    body = np.zeros((model.nbody, 2))
    moving = np.flatnonzero((model.body_linkid >= 0) & ~simple)
    link = model.body_linkid[moving]
    # the centre of mass's velocity from the spatial one: v = v_centre - r x w, T = [-[r]x, 1] (np.cross(1, r) = [r]x)
    r = pos[moving] + np.einsum("bij,bj->bi", rot[moving], model.body_ipos[moving]) - d.center[link, :, 0]
    T = np.concatenate([-np.cross(np.eye(3)[None], r[:, None]), np.broadcast_to(np.eye(3), (len(moving), 3, 3))], axis=2)
    A = T @ omega[link] @ T.transpose(0, 2, 1)
    body[moving, 0] = np.trace(A, axis1=1, axis2=2) / 3
    body[moving, 1] = np.trace(omega[link][:, :3, :3], axis1=1, axis2=2) / 3
    body[simple, 0] = inv_mass[simple]
    dof = np.zeros(model.nv)
    for j in range(model.njnt):
        a, t, b = model.jnt_dofadr[j], model.jnt_type[j], model.jnt_bodyid[j]
        if simple[b]:
            dof[a] = inv_mass[b]
        elif t == FREE:
            dof[a:a + 3], dof[a + 3:a + 6] = minv_diag[a:a + 3].sum() / 3, minv_diag[a + 3:a + 6].sum() / 3
        elif t == BALL:
            dof[a:a + 3] = minv_diag[a:a + 3].sum() / 3
        else:
            dof[a] = minv_diag[a]
    return body, dof


#: a body's translational invweight0 [1/kg] at most this may give its contacts R at the floor MINVAL: (1 - imp) / imp
#: diagApprox <= MINVAL for an imp up to MAXIMP (floor_bodies)
FLOOR_INVWEIGHT = MINVAL * MAXIMP / (1 - MAXIMP)


def floor_bodies(model: Model) -> np.ndarray:
    """The moving bodies with geoms whose translational invweight0 is at most FLOOR_INVWEIGHT (int ids): their contacts
    with static bodies or with each other may have R at its floor MINVAL (a box on a z hinge resting on a plane: its
    normal J exactly zero, diagApprox 0); none in most models, whose rows physai.constraints then need not look at
    (constraint.floor_rows). Reads invweight0's constant (none when M is singular at qpos0: no bodies)."""
    weights = model.kept("invweight0")
    bodies = np.unique(model.geoms.geom_bodyid)
    bodies = bodies[bodies >= 0]
    if weights is None:
        return bodies[:0]
    return bodies[(model.body_linkid[bodies] >= 0) & (weights[0][bodies, 0] <= FLOOR_INVWEIGHT)]


def inverse_inertias(model: Model, d: Data) -> tuple[np.ndarray, np.ndarray] | None:
    """(Omega (nlink, 6, 6), diag(M^-1) (nv,)) of the one-state Data d with com_pos done: Omega_i = J_i M^-1 J_i^T, the
    spatial acceleration of link i (about its tree's centre) per unit spatial force on it (Featherstone's inverse
    operational-space inertia), and M^-1's diagonal; None when a link's D is not positive definite (M is singular).

    Backward over links (RBDA table 7.1 with no velocity): U = IA S, D = S^T U + armature, the parent's IA gains
    IA - U D^-1 U^T. Forward: P = 1 - U D^-1 S^T, Omega_i = P^T Omega_parent P + S D^-1 S^T (a force f on link i reaches
    its parent as P f), M^-1's block of link i = D^-1 + D^-1 U^T Omega_parent U D^-1 (the world's Omega is 0). Links
    of one depth and dof count go together (link_groups): a pile of free bodies is four steps each way."""
    IA = d.cinert[..., 0].copy()
    groups = link_groups(model)
    U, Dinv, S = {}, {}, {}
    for key, links in reversed(groups):
        dofs = model.link_dofadr[links][:, None] + np.arange(key[1])             # (g, k)
        S[key] = d.cdof[dofs, :, 0].transpose(0, 2, 1)                          # (g, 6, k)
        U[key] = IA[links] @ S[key]
        D = S[key].transpose(0, 2, 1) @ U[key] + model.dof_armature[dofs][:, :, None] * np.eye(key[1])
        try:
            np.linalg.cholesky(D)                                  # D positive definite, or M is singular
        except np.linalg.LinAlgError:
            return None
        Dinv[key] = np.linalg.inv(D)
        parents, moving = model.link_parentid[links], model.link_parentid[links] >= 0
        np.add.at(IA, parents[moving], (IA[links] - U[key] @ Dinv[key] @ U[key].transpose(0, 2, 1))[moving])
    omega, minv_diag = np.zeros((model.nlink, 6, 6)), np.zeros(model.nv)
    for key, links in groups:
        parent = model.link_parentid[links]
        above = np.where(parent[:, None, None] >= 0, omega[parent], 0.0)         # Omega of the parent, 0 for the world
        W = U[key] @ Dinv[key]
        P = np.eye(6) - W @ S[key].transpose(0, 2, 1)
        omega[links] = P.transpose(0, 2, 1) @ above @ P + S[key] @ Dinv[key] @ S[key].transpose(0, 2, 1)
        block = Dinv[key] + W.transpose(0, 2, 1) @ above @ W
        minv_diag[model.link_dofadr[links][:, None] + np.arange(key[1])] = np.diagonal(block, axis1=1, axis2=2)
    return omega, minv_diag


def mass_matrix_inverse(model: Model, d: Data) -> np.ndarray | None:
    """(nv, nv) M^-1 at qpos0 (d: a one-state Data there with com_pos done), tendon armature included; None when M is
    not positive definite."""
    M = smooth.crb(model, d)[:, :, 0] + tendon.armature(model, d, model.qpos0)
    try:
        L = np.linalg.cholesky(M)
    except np.linalg.LinAlgError:
        return None
    Linv = np.linalg.inv(L)
    return Linv.T @ Linv


def inverse_inertias_dense(model: Model, d: Data) -> tuple[np.ndarray, np.ndarray] | None:
    """inverse_inertias from M^-1 itself (mass_matrix_inverse): Omega_i = J_i M^-1 J_i^T, J_i (6, nv) link i's spatial
    Jacobian (its dofs' and its ancestors' cdof), at qpos0; for models whose M is not the tree's (tendon armature)."""
    Minv = mass_matrix_inverse(model, d)
    if Minv is None:
        return None
    J = np.zeros((model.nlink, 6, model.nv))
    for i, p in enumerate(model.link_parents):
        if p >= 0:
            J[i] = J[p]
        dofs = model.link_dofadr[i] + np.arange(model.link_dofnum[i])
        J[i][:, dofs] = d.cdof[dofs, :, 0].T
    return J @ Minv @ J.transpose(0, 2, 1), np.diag(Minv).copy()


def tendon_invweight0(model: Model) -> np.ndarray | None:
    """(ntendon,) MuJoCo's tendon_invweight0: J M^-1 J^T of each tendon at qpos0 (tendon armature in M), the
    diagApprox of its limit, friction and equality rows; None when M is singular there."""
    if not model.ntendon:
        return np.zeros(0)
    d = Data(model)
    smooth.position_stages(model, d, model.qpos0[:, None])
    Minv = mass_matrix_inverse(model, d)
    if Minv is None:
        return None
    J = tendon.tendons(model, d, model.qpos0)[1]
    return np.einsum("ti,ij,tj->t", J, Minv, J)


def link_groups(model: Model) -> list[tuple[tuple[int, int], np.ndarray]]:
    """The links by (depth, dof count), depth first: ((depth, k), links (g,)); a link's parent is in an earlier group."""
    depth = np.zeros(model.nlink, np.intp)
    for i, p in enumerate(model.link_parents):
        depth[i] = depth[p] + 1 if p >= 0 else 0
    keys = sorted(set(zip(depth.tolist(), model.link_dofnum.tolist())))
    return [((lv, k), np.flatnonzero((depth == lv) & (model.link_dofnum == k))) for lv, k in keys]
