"""Jacobians of points and bodies, in the world frame (MuJoCo's mj_jac, mj_jacBody, mj_jacBodyCom), for every joint type.

A link's spatial velocity is the sum of cdof_i qd_i over the dofs i between the base and the link (engine Data:
world-aligned motion vectors about the tree's centre c). The world point p fixed in body b then moves with

    pdot  = sum_i (cdof_i_lin + cdof_i_ang x (p - c)) qd_i = Jp qd       (3, nv)   [m/s]
    omega = sum_i cdof_i_ang qd_i                          = Jr qd       (3, nv)   [rad/s]

and both are zero in the columns of dofs that do not move b. A body is named by its index in the model's
bodies (Model.body_name order; the world excluded) or by its name. For a free joint, columns 0-2 of a body's
Jp are the identity (MuJoCo's world linear velocity) and columns 3-5 of Jr its orientation matrix (body-frame
angular velocity).

Frames (sites and bodies, Model.frame) have Pinocchio's three references in frame_jacobian; rows (linear; angular):

    "local_world_aligned"   the frame origin's velocity and the angular velocity, in world axes (mj_jacSite's jacp; jacr)
    "world"                 the spatial velocity at the world origin: linear = pdot + p x omega (p: the frame origin)
    "local"                 local_world_aligned's rows in the frame's own axes: R^T pdot; R^T omega
"""

import numpy as np

from physai import validation
from physai.engine import Data, as_model, native
from physai.kinematics import check_reference, frame_in_link, frame_poses
from physai.spatial import skew
from physai.engine.smooth import com_pos, com_vel, kinematics, motion_subspaces
from physai.engine.support import point_jacobian_dots, point_jacobians, point_offsets
from physai.validation import states
from physai.engine.model import Model


#: the compiled (Jp; Jr) (6, nv) of a point fixed in a link, and its rate (cpp/support.h's jacobian, jacobian_dot)
JACOBIAN_KERNEL, JACOBIAN_DOT_KERNEL = native.kernel("jacobian"), native.kernel("jacobian_dot")
JACOBIAN = native.OPS.get("jacobian")


def point_jacobian(model, q: np.ndarray, body: int | str, point: np.ndarray) -> np.ndarray:
    """Translational Jacobian Jp (3, nv) of a point fixed in `body`, so that its world velocity is Jp @ qd [m/s].

    q: (nq,), or (N, nq) (then Jp is (N, 3, nv)).
    point: (3,) position in the body's frame [m]. Equals the jacp of mujoco.mj_jac at the point's world position.
    """
    return body_jacobian(model, q, body, point)[..., :3, :]


def body_jacobian(model, q: np.ndarray, body: int | str, point: np.ndarray | None = None) -> np.ndarray:
    """Stacked world Jacobian (Jp; Jr) (6, nv) of a point fixed in `body`: (pdot; omega) = J @ qd.

    q: (nq,), or (N, nq) for N states at once (then J is (N, 6, nv)).
    point: (3,) in the body's frame [m]; None means the body's origin. Rows 0-2 are MuJoCo's jacp and
    rows 3-5 its jacr: mj_jacBody for point=None, mj_jacBodyCom for point = the body's centre of mass.
    On the compiled backend one compiled call computes it (positions, cdof and the columns); the NumPy text below
    (physai.engine.support.point_jacobians) is the reference.
    """
    model = model if type(model) is Model else as_model(model)
    b = model.body_id(body)
    point = None if point is None else validation.as_array("point", point, (3,))
    link = int(model.body_linkid[b])
    if native.on and link >= 0:                               # one compiled call, the point in its link's frame
        return JACOBIAN_KERNEL(model, q, link, model.body_pos[b] if point is None else model.body_pos[b] + model.body_rot[b] @ point)
    point = np.zeros(3) if point is None else point
    (Q,), batch = states(q=(q, model.nq))
    d = Data(model, Q.shape[1])
    kinematics(model, d, Q)
    motion_subspaces(model, d)                                # the Jacobian needs cdof, not the inertias
    J = point_jacobians(model, d, b, point_offsets(model, d, b, point[None]), centered=True)[0]
    return J[:, :, 0] if batch is None else J.transpose(2, 0, 1)


def frame_jacobian(model, q: np.ndarray, frame: str, reference: str = "local_world_aligned") -> np.ndarray:
    """Jacobian (6, nv) of the named frame (a site, else a body: Model.frame), rows (linear; angular), in one of
    kinematics.REFERENCES (see the module docstring); q (N, nq) gives (N, 6, nv). Equals MuJoCo's mj_jacSite (jacp; jacr) for
    "local_world_aligned" and Pinocchio's getFrameJacobian with LOCAL_WORLD_ALIGNED, WORLD and LOCAL (velocities in
    MuJoCo's coordinates: physai.conventions for a free joint). A frame welded to the world has zeros."""
    if reference == "local_world_aligned" and native.on:      # a Model and a frame seen before: one compiled call
        try:
            link, point, _ = model.frame_links[frame]
            return native.call(model.compiled, JACOBIAN, q, link, point)
        except (AttributeError, KeyError, TypeError, ValueError, native.KernelError):
            pass                                              # ValueError: a frame welded to the world (link -1)
    model, (link, point, _) = frame_in_link(model, frame)
    if link >= 0 and reference == "local_world_aligned" and native.on:     # one compiled call, the point in its link
        return JACOBIAN_KERNEL(model, q, link, point)                      # compiles, converts, or names the error
    check_reference(reference)
    b, offset, turn = model.frame(frame)
    if b < 0:
        (Q,), batch = states(q=(q, model.nq))
        J = np.zeros((Q.shape[1], 6, model.nv))
        return J[0] if batch is None else J
    J = body_jacobian(model, q, b, offset)
    if reference == "local_world_aligned":
        return J
    pos, rot = frame_poses(model, q, [frame])
    pos, rot = pos[..., 0, :], rot[..., 0, :, :]
    lin, ang = J[..., :3, :], J[..., 3:, :]
    if reference == "world":                                   # velocity of the point at the world origin: pdot + p x w
        return np.concatenate([lin + skew(pos) @ ang, ang], axis=-2)
    Rt = np.swapaxes(rot, -1, -2)                              # "local": the rows in the frame's axes
    return np.concatenate([Rt @ lin, Rt @ ang], axis=-2)


def frame_jacobian_dot(model, q: np.ndarray, qd: np.ndarray, frame: str, reference: str = "local_world_aligned") -> np.ndarray:
    """The time derivative J_dot (6, nv) of frame_jacobian(model, q, frame, reference) along velocity qd, or (N, 6, nv)
    for N states; J_dot qd is the frame's classical acceleration at qdd = 0. "local_world_aligned": MuJoCo's mj_jacDot
    (jacp; jacr) at the frame's origin (one compiled call on the compiled backend: cpp/support.h's jacobian_dot, the
    NumPy text's support.point_jacobian_dots); "world" and "local" the derivatives of those rows (Pinocchio's
    getFrameJacobianTimeVariation): d/dt (Jp + [p] Jr) = Jp_dot + [pdot] Jr + [p] Jr_dot, d/dt (R^T J) = R^T (J_dot -
    [w] J)."""
    model, (link, in_link, turn) = frame_in_link(model, frame)
    if reference == "local_world_aligned" and native.on and link >= 0:     # one compiled call
        return JACOBIAN_DOT_KERNEL(model, q, qd, link, in_link)
    check_reference(reference)
    (Q, V), batch = states(q=(q, model.nq), qd=(qd, model.nv))
    n = Q.shape[1]
    if link < 0:                                               # on the world, or welded to it: no dof moves it
        Jdot = np.zeros((n, 6, model.nv))
        return Jdot[0] if batch is None else Jdot
    if native.on:
        Jdot, J = JACOBIAN_DOT_KERNEL(model, q, qd, link, in_link), JACOBIAN_KERNEL(model, q, link, in_link)
        pos, rot = frame_poses(model, q, [frame])
        return _moved(reference, J, Jdot, pos[..., 0, :], rot[..., 0, :, :], V.T if batch is not None else V[:, 0])
    d = Data(model, n)
    kinematics(model, d, Q)
    com_pos(model, d)
    com_vel(model, d, V)
    b = model.frame(frame)[0]
    r = d.cpos[link] + np.einsum("ijn,j->in", d.xmat[link], in_link)            # the origin relative to the centre
    Jdot = point_jacobian_dots(model, d, b, r[None])[0].transpose(2, 0, 1)       # (n, 6, nv)
    if reference != "local_world_aligned":
        J = point_jacobians(model, d, b, r[None], centered=True)[0].transpose(2, 0, 1)
        rot = np.einsum("ijn,jk->nik", d.xmat[link], turn)
        Jdot = _moved(reference, J, Jdot, (d.center[link] + r).T, rot, V.T)
    return Jdot[0] if batch is None else Jdot


def _moved(reference: str, J, Jdot, p, R, qd) -> np.ndarray:
    """J_dot in "world" or "local" from the local_world_aligned J and J_dot (..., 6, nv), the frame's origin p (..., 3),
    rotation R (..., 3, 3) and the velocity qd (..., nv)."""
    lin, ang, lin_dot, ang_dot = J[..., :3, :], J[..., 3:, :], Jdot[..., :3, :], Jdot[..., 3:, :]
    if reference == "world":
        pdot = np.einsum("...ij,...j->...i", lin, qd)
        return np.concatenate([lin_dot + skew(pdot) @ ang + skew(p) @ ang_dot, ang_dot], axis=-2)
    w = skew(np.einsum("...ij,...j->...i", ang, qd))
    Rt = np.swapaxes(R, -1, -2)
    return np.concatenate([Rt @ (lin_dot - w @ lin), Rt @ (ang_dot - w @ ang)], axis=-2)
