"""Forward kinematics: where every body is, for one state or N (MuJoCo's d.xpos and d.xmat after mj_kinematics).

    pos, rot = kinematics.body_poses(model, q)      # q (nq,): pos (nbody, 3) [m], rot (nbody, 3, 3)
                                                    # q (N, nq): pos (N, nbody, 3), rot (N, nbody, 3, 3)

    pos, rot = kinematics.frame_poses(model, q, ["left_foot", "pelvis"])   # named frames: sites, then bodies
                                                    # pos (nf, 3) or (N, nf, 3), rot (nf, 3, 3) or (N, nf, 3, 3)

Bodies are the model's (Model.body_name order, the world excluded: MuJoCo's body b + 1 is physai's body b). A body
frame is its engine link's pose composed with the body's fixed offset in that link (Model.body_pos, body_rot);
bodies welded to the world keep their world pose. rot maps body coordinates to world coordinates. A named frame is a
site (MuJoCo's <site>: a pose fixed in a body) or a body (a URDF link, also one merged by a fixed joint, is a body).
"""

import numpy as np

from physai.engine import Data, as_model, native
from physai.engine.smooth import kinematics
from physai.engine.support import body_frames
from physai.exceptions import InvalidArgumentError
from physai.validation import states
from physai.engine.model import Model


_BODY_POSES = native.Kernel("body_poses")                    # the compiled poses of every body


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
    names = model.frame_name if frames is None else _frame_list(frames)
    where = [model.frame(name) for name in names]
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
