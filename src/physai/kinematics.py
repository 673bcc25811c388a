"""Forward kinematics: where every body is, for one state or N (MuJoCo's d.xpos and d.xmat after mj_kinematics).

    pos, rot = kinematics.body_poses(model, q)      # q (nq,): pos (nbody, 3) [m], rot (nbody, 3, 3)
                                                    # q (N, nq): pos (N, nbody, 3), rot (N, nbody, 3, 3)

Bodies are the model's (Model.body_name order, the world excluded: MuJoCo's body b + 1 is physai's body b). A body
frame is its engine link's pose composed with the body's fixed offset in that link (Model.body_pos, body_rot);
bodies welded to the world keep their world pose. rot maps body coordinates to world coordinates.
"""

import numpy as np

from physai.engine import Data, as_model, native
from physai.engine.smooth import kinematics
from physai.engine.support import body_frames
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
