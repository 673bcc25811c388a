"""Forward kinematics: where every body is, for one state or N (MuJoCo's d.xpos and d.xmat after mj_kinematics).

    pos, rot = kinematics.body_poses(model, q)      # q (nq,): pos (nbody, 3) [m], rot (nbody, 3, 3)
                                                    # q (N, nq): pos (N, nbody, 3), rot (N, nbody, 3, 3)

    pos, rot = kinematics.frame_poses(model, q, ["left_foot", "pelvis"])   # named frames: sites, then bodies
                                                    # pos (nf, 3) or (N, nf, 3), rot (nf, 3, 3) or (N, nf, 3, 3)
    v = kinematics.frame_velocity(model, q, qd, "left_foot")              # (6,): (linear, angular)
    a = kinematics.frame_acceleration(model, q, qd, qdd, "left_foot")     # (6,): classical by default

Bodies are the model's (Model.body_name order, the world excluded: MuJoCo's body b + 1 is physai's body b). A body
frame is its engine link's pose composed with the body's fixed offset in that link (Model.body_pos, body_rot);
bodies welded to the world keep their world pose. rot maps body coordinates to world coordinates. A named frame is a
site (MuJoCo's <site>: a pose fixed in a body) or a body (a URDF link, also one merged by a fixed joint, is a body).
"""

import numpy as np

from physai.engine import Data, as_model, native
from physai.engine.smooth import base_acceleration, com_pos, com_vel, kinematics, rne
from physai.engine.support import body_frames
from physai.exceptions import InvalidArgumentError
from physai.validation import states
from physai.engine.model import Model


_BODY_POSES = native.Kernel("body_poses")                    # the compiled poses of every body
#: the motion of a point fixed in a link (cpp/support.h's frame_motion): (pdot; w) = J qd, and (pddot; alpha) = J qdd + J_dot qd
FRAME_VELOCITY_KERNEL, FRAME_ACCELERATION_KERNEL = native.kernel("frame_velocity"), native.kernel("frame_acceleration")


def body_poses(model, q) -> tuple[np.ndarray, np.ndarray]:
    """(pos, rot) of every body at joint positions q: pos (nbody, 3) [m] and rot (nbody, 3, 3), or with a leading N
    for q (N, nq). Equals MuJoCo's d.xpos[1:] and d.xmat[1:] (reshaped to 3 x 3) after mj_kinematics. One compiled call
    on the compiled backend; the NumPy text below is the reference."""
    if native.on:
        return _BODY_POSES(model, q)
    model = model if type(model) is Model else as_model(model)
    (Q,), batch = states(q=(q, model.nq))
    d = Data(model, Q.shape[1])
    kinematics(model, d, Q)
    pos, rot = body_frames(model, d)
    pos, rot = np.moveaxis(pos, -1, 0), np.moveaxis(rot, -1, 0)
    return (pos[0], rot[0]) if batch is None else (pos, rot)


def frame_poses(model, q, frames=None) -> tuple[np.ndarray, np.ndarray]:
    """(pos, rot) of named frames at joint positions q: pos (nf, 3) [m] and rot (nf, 3, 3), or with a leading N for q
    (N, nq). frames: a list of names (a site's, else a body's: Model.frame), or None for every site and then every body
    (Model.frame_name). Equals MuJoCo's d.site_xpos and d.site_xmat after mj_kinematics for sites, d.xpos and d.xmat for
    bodies (Pinocchio's oMf of the same frames)."""
    model = model if type(model) is Model else as_model(model)
    if frames is None:                                          # every site, then every body, by index (names may repeat)
        where = ([(int(model.site_bodyid[k]), model.site_pos[k], model.site_rot[k]) for k in range(model.nsite)]
                 + [(b, np.zeros(3), np.eye(3)) for b in range(model.nbody)])
    else:
        where = [model.frame(name) for name in _frame_list(frames)]
    body_pos, body_rot = body_poses(model, q)
    bodies = np.array([b for b, _, _ in where], dtype=np.intp)
    offset = np.array([p for _, p, _ in where], dtype=float).reshape(-1, 3)
    turn = np.array([r for _, _, r in where], dtype=float).reshape(-1, 3, 3)
    on_world = bodies < 0
    P, R = body_pos[..., bodies, :], body_rot[..., bodies, :, :]          # (..., nf, 3), (..., nf, 3, 3)
    pos = P + np.einsum("...fij,fj->...fi", R, offset)                    # p = p_body + R_body offset
    rot = np.einsum("...fik,fkj->...fij", R, turn)                        # R = R_body turn
    pos[..., on_world, :], rot[..., on_world, :, :] = offset[on_world], turn[on_world]
    return pos, rot


def _frame_list(frames) -> list:
    """frames as a list of names (one name alone is refused: a list is asked for, so the shapes never change)."""
    if isinstance(frames, str):
        raise InvalidArgumentError(f"frames is the string {frames!r}; expected a list of frame names, e.g. [{frames!r}]")
    try:
        return list(frames)
    except TypeError:
        raise InvalidArgumentError(f"frames must be a list of site or body names or None, got {type(frames).__name__}") from None


#: the references of frame velocities and accelerations (Pinocchio's ReferenceFrame names, lower case; see physai.jacobians)
REFERENCES = ("local_world_aligned", "world", "local")


def check_reference(reference: str) -> None:
    """InvalidArgumentError unless `reference` is one of REFERENCES."""
    if reference not in REFERENCES:
        raise InvalidArgumentError(f"reference is {reference!r}; expected one of {', '.join(map(repr, REFERENCES))}")


def frame_in_link(model, frame: str) -> tuple[Model, tuple]:
    """(the model as a Model, Model.frame_in_link(frame): (link, pos (3,), rot (3, 3))), read from Model.frame_links for
    a name seen before (jacobians.frame_jacobian reads it in line: a call costs as much again)."""
    found = model.frame_links.get(frame) if type(model) is Model and type(frame) is str else None
    if found is None:
        model = as_model(model)
        found = model.frame_in_link(frame)
    return model, found


def _frame_motion(model, q, qd, qdd, frame: str, reference: str):
    """(the frame's world origin p, rotation R, pdot, w, and, with qdd, pddot and the angular acceleration alpha), each
    (n, 3) or (n, 3, 3) (p and R None on the compiled backend for "local_world_aligned"); batch (None for one state).
    On the compiled backend from the frame's Jacobian and its rate in world axes, column by column (cpp/support.h's
    frame_motion): (pdot; w) = J qd, (pddot; alpha) = J qdd + J_dot qd; on the NumPy engine from its stages: cvel and
    (rne without gravity) cacc of the frame's link, about the centre of its tree."""
    check_reference(reference)
    model, (link, in_link, turn) = frame_in_link(model, frame)
    arrays = dict(q=(q, model.nq), qd=(qd, model.nv)) if qdd is None else dict(q=(q, model.nq), qd=(qd, model.nv), qdd=(qdd, model.nv))
    X, batch = states(**arrays)
    Q, V = X[0], X[1]
    n = Q.shape[1]
    zeros = np.zeros((n, 3))
    if link < 0:                                               # on the world, or welded to it: it does not move
        return (np.tile(in_link, (n, 1)), np.tile(turn, (n, 1, 1)), zeros, zeros, zeros, zeros), batch
    if native.on:
        q_, qd_ = np.ascontiguousarray(Q.T), np.ascontiguousarray(V.T)
        p = R = None                                                             # the pose: only "world" and "local" use it
        if reference != "local_world_aligned":
            pos, rot = frame_poses(model, q_, [frame])
            p, R = pos[:, 0], rot[:, 0]
        if qdd is None:
            v = FRAME_VELOCITY_KERNEL(model, q_, qd_, link, in_link)                      # (n, 6): (pdot; w)
            return (p, R, v[:, :3], v[:, 3:], None, None), batch
        v, a = FRAME_ACCELERATION_KERNEL(model, q_, qd_, np.ascontiguousarray(X[2].T), link, in_link)
        return (p, R, v[:, :3], v[:, 3:], a[:, :3], a[:, 3:]), batch
    d = Data(model, n)
    kinematics(model, d, Q)
    com_pos(model, d)
    com_vel(model, d, V)
    r = (d.cpos[link] + np.einsum("ijn,j->in", d.xmat[link], in_link)).T          # the origin relative to the centre
    p = d.center[link].T + r
    R = np.einsum("ijn,jk->nik", d.xmat[link], turn)
    w, vc = d.cvel[link, :3].T, d.cvel[link, 3:].T
    pdot = vc + np.cross(w, r)
    if qdd is None:
        return (p, R, pdot, w, None, None), batch
    rne(model, d, V, X[2])                                     # cacc: with the world accelerating at (0, -gravity)
    a = d.cacc[link] - base_acceleration(model)
    alpha, ac = a[:3].T, a[3:].T
    pddot = ac + np.cross(alpha, r) + np.cross(w, pdot)        # the classical acceleration of the origin
    return (p, R, pdot, w, pddot, alpha), batch


def frame_velocity(model, q, qd, frame: str, reference: str = "local_world_aligned") -> np.ndarray:
    """The frame's velocity (6,) (linear; angular), or (N, 6): "local_world_aligned" (pdot; w) of its origin in world axes
    (MuJoCo's mj_objectVelocity with flg_local 0, rows swapped), "world" (pdot - w x p; w), the velocity of the point at
    the world origin, "local" (R^T pdot; R^T w). Equals frame_jacobian(model, q, frame, reference) @ qd (Pinocchio's
    getFrameVelocity)."""
    if reference == "local_world_aligned" and native.on:      # one compiled call
        model, (link, in_link, _) = frame_in_link(model, frame)
        if link >= 0:
            return FRAME_VELOCITY_KERNEL(model, q, qd, link, in_link)
    (p, R, pdot, w, _, _), batch = _frame_motion(model, q, qd, None, frame, reference)
    if reference == "world":
        v = np.concatenate([pdot - np.cross(w, p), w], axis=1)
    elif reference == "local":
        v = np.concatenate([np.einsum("nji,nj->ni", R, pdot), np.einsum("nji,nj->ni", R, w)], axis=1)
    else:
        v = np.concatenate([pdot, w], axis=1)
    return v[0] if batch is None else v


def frame_acceleration(model, q, qd, qdd, frame: str, reference: str = "local_world_aligned", classical: bool = True) -> np.ndarray:
    """The frame's acceleration (6,) (linear; angular), or (N, 6), at (q, qd, qdd), as Pinocchio's
    getFrameClassicalAcceleration (classical=True) or getFrameAcceleration (False):
        spatial:    the time derivative of frame_velocity's twist in "world" and "local"; in "local_world_aligned" the
                    local one turned to world axes (pddot - w x pdot; alpha)
        classical:  spatial + (w x v; 0) with (v; w) the frame's velocity in that reference: for "local_world_aligned"
                    the origin's acceleration and the angular acceleration (pddot; alpha) in world axes, for "local"
                    R^T (pddot; alpha)
    At qdd = 0 the classical "local_world_aligned" acceleration is J_dot qd (jacobians.frame_jacobian_dot)."""
    if not isinstance(classical, bool):
        raise InvalidArgumentError(f"classical must be True or False, got {classical!r}")
    if reference == "local_world_aligned" and classical and native.on:     # one compiled call
        model, (link, in_link, _) = frame_in_link(model, frame)
        if link >= 0:
            return FRAME_ACCELERATION_KERNEL(model, q, qd, qdd, link, in_link)[1]
    (p, R, pdot, w, pddot, alpha), batch = _frame_motion(model, q, qd, qdd, frame, reference)
    if reference == "local_world_aligned":
        lin = pddot if classical else pddot - np.cross(w, pdot)
        a = np.concatenate([lin, alpha], axis=1)
    elif reference == "local":
        Rt = np.swapaxes(R, -1, -2)
        lin = pddot if classical else pddot - np.cross(w, pdot)
        a = np.concatenate([np.einsum("nij,nj->ni", Rt, lin), np.einsum("nij,nj->ni", Rt, alpha)], axis=1)
    else:                                                      # d/dt (pdot - w x p; w)
        v_origin = pdot - np.cross(w, p)
        lin = pddot - np.cross(alpha, p) - np.cross(w, pdot)
        if classical:
            lin = lin + np.cross(w, v_origin)
        a = np.concatenate([lin, alpha], axis=1)
    return a[0] if batch is None else a
