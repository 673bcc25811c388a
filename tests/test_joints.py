"""physai.joints: the quaternion step equals MuJoCo's mju_quatIntegrate for arrays of any leading shape."""

import mujoco
import numpy as np

from physai import joints


def test_quat_integrate_takes_any_leading_axes_as_mju_quatIntegrate():
    rng = np.random.default_rng(0)
    quat, w, h = rng.normal(size=(2, 3, 4, 5)), rng.normal(size=(2, 3, 3, 5)), 0.01
    out = joints.quat_integrate(quat, w, h)
    assert out.shape == quat.shape
    for index in np.ndindex(2, 3, 5):
        expected = quat[index[0], index[1], :, index[2]].copy()
        mujoco.mju_quatIntegrate(expected, w[index[0], index[1], :, index[2]], h)
        np.testing.assert_allclose(out[index[0], index[1], :, index[2]], expected, rtol=0, atol=1e-15)
