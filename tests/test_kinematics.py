"""physai.kinematics.body_poses against MuJoCo's d.xpos and d.xmat after mj_kinematics, on both backends.

Bound: 1e-12 m and 1e-12 in the rotation entries (the same products in another order; 1e-15 seen for robots near
the origin), one state and a batch. The two backends against each other: tests/test_native_vs_numpy.py."""

import mujoco
import numpy as np
import pytest

from physai import engine, kinematics
from physai.exceptions import InvalidStateError, ShapeError
from helpers import MIXED, assert_close, run

ROBOTS = ["double_pendulum", "hinge_slide", "arm7", "franka_emika_panda", "kuka_iiwa_14", "unitree_h1", "unitree_g1", "mixed_joints"]
ROBOT_STATES = {"n": 6, "seed": 3}


def test_body_poses_equal_mujocos(robot):
    m, model, d, q = robot.m, robot.model, robot.d, robot.q
    for backend in ("native", "numpy"):
        pos, rot = run(backend, kinematics.body_poses, model, q)
        assert pos.shape == (6, model.nbody, 3) and rot.shape == (6, model.nbody, 3, 3)
        for k in range(6):
            d.qpos[:] = q[k]
            mujoco.mj_kinematics(m, d)
            assert_close(pos[k], d.xpos[1:], 1e-12, scale=1.0)
            assert_close(rot[k], d.xmat[1:].reshape(-1, 3, 3), 1e-12, scale=1.0)
        one = run(backend, kinematics.body_poses, model, q[2])
        assert_close(one[0], pos[2], 1e-12, scale=1.0)


def test_bad_positions_are_named():
    model = engine.from_mujoco(MIXED)
    with pytest.raises(ShapeError, match=f"has 3 entries.*{model.nq}|shape"):
        kinematics.body_poses(model, np.zeros(3))
    q = model.qpos0.copy()
    q[model.coords.quat_q[0]] = 0.0
    with pytest.raises(InvalidStateError, match="zero quaternion"):
        kinematics.body_poses(model, q)
    q = model.qpos0.copy()
    q[0] = np.nan
    with pytest.raises(InvalidStateError):
        kinematics.body_poses(model, q)
    assert kinematics.body_poses(model, list(model.qpos0))[0].shape == (model.nbody, 3)    # lists are converted
