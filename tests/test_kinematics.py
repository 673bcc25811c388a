"""physai.kinematics.body_poses against MuJoCo's d.xpos and d.xmat after mj_kinematics, on both backends.

Bound: 1e-12 m and 1e-12 in the rotation entries (the same products in another order; 1e-15 seen for robots near
the origin), one state and a batch; the two backends agree within 4 eps times the scale."""

from pathlib import Path

import mujoco
import numpy as np
import pytest

from physai import engine, kinematics, models
from physai.exceptions import InvalidStateError, ShapeError
from helpers import run

MIXED = str(Path(__file__).parent / "data" / "mixed_joints.xml")
MODELS = ["double_pendulum", "hinge_slide", "arm7", "franka_emika_panda", "kuka_iiwa_14", "unitree_h1", "unitree_g1", MIXED]


@pytest.mark.parametrize("name", MODELS, ids=lambda p: Path(p).stem)
def test_body_poses_equal_mujocos(name):
    m = models.load(name)
    model, d = engine.from_mujoco(m), mujoco.MjData(m)
    q, _ = engine.random_states(model, 6, 3)
    for backend in ("native", "numpy"):
        pos, rot = run(backend, kinematics.body_poses, model, q)
        assert pos.shape == (6, model.nbody, 3) and rot.shape == (6, model.nbody, 3, 3)
        for k in range(6):
            d.qpos[:] = q[k]
            mujoco.mj_kinematics(m, d)
            assert np.abs(pos[k] - d.xpos[1:]).max() <= 1e-12
            assert np.abs(rot[k] - d.xmat[1:].reshape(-1, 3, 3)).max() <= 1e-12
        one = run(backend, kinematics.body_poses, model, q[2])
        assert one[0].shape == (model.nbody, 3) and np.abs(one[0] - pos[2]).max() <= 1e-12
    native, reference = kinematics.body_poses(model, q), run("numpy", kinematics.body_poses, model, q)
    for a, b in zip(native, reference):
        assert np.abs(a - b).max() <= 4 * np.finfo(float).eps * max(1.0, np.abs(b).max())


def test_bad_positions_are_named():
    model = engine.from_mujoco(models.load(MIXED))
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
