"""physai.jacobians against MuJoCo's mj_jac, mj_jacBody, mj_jacBodyCom and mj_jacSite, computed live,
and against a finite difference of the point's world position. Tolerance 1e-12 (the Panda's lever arms
are about a metre, so no scaling is needed).
"""

import mujoco
import numpy as np
import pytest

from physai import dynamics as dyn
from physai import jacobians as jac
from physai import models
from physai.exceptions import ShapeError, UnknownBodyError

import mj

TOL = 1e-12
MODELS = ["double_pendulum", "hinge_slide", "arm2", "franka_emika_panda"]


@pytest.fixture(scope="module", params=MODELS)
def case(request):
    m = models.load(request.param)
    return m, mujoco.MjData(m), dyn.tree_from_mujoco(m), [q for q, _, _ in mj.random_states(m, 10, seed=3)]


def _mj(fn, m, d, *args) -> np.ndarray:
    jacp, jacr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
    fn(m, d, jacp, jacr, *args)
    return np.r_[jacp, jacr]


def test_body_jacobian_matches_mj_jacBody_and_mj_jacBodyCom(case):
    m, d, tree, qs = case
    worst = 0.0
    for q in qs:
        d.qpos[:] = q
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        for b, body in enumerate(tree.bodies):      # physai body b is MuJoCo body b + 1
            worst = max(worst, np.abs(jac.body_jacobian(tree, q, b) - _mj(mujoco.mj_jacBody, m, d, b + 1)).max(),
                        np.abs(jac.body_jacobian(tree, q, b, body.com) - _mj(mujoco.mj_jacBodyCom, m, d, b + 1)).max())
    assert worst <= TOL, worst


def test_point_jacobian_matches_mj_jac_at_any_point(case):
    m, d, tree, qs = case
    rng = np.random.default_rng(2)
    for q in qs:
        d.qpos[:] = q
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        for b in range(len(tree.bodies)):
            point = rng.uniform(-0.3, 0.3, 3)             # in the body frame
            world = d.xpos[b + 1] + d.xmat[b + 1].reshape(3, 3) @ point
            ref = _mj(mujoco.mj_jac, m, d, world, b + 1)
            by_name = tree.bodies[b].name or b
            assert np.abs(jac.point_jacobian(tree, q, by_name, point) - ref[:3]).max() <= TOL
            assert np.abs(jac.body_jacobian(tree, q, b, point) - ref).max() <= TOL


def test_point_jacobian_is_the_derivative_of_the_point_position(case):
    _, _, tree, qs = case
    rng = np.random.default_rng(8)
    b, point = len(tree.bodies) - 1, np.array([0.05, -0.02, 0.1])

    def position(q):
        R, p, _ = dyn.body_frames(tree, q)
        return p[b] + R[b] @ point

    h = 1e-6
    for q in qs[:3]:
        qd = rng.normal(size=tree.nv)
        fd = (position(q + h * qd) - position(q - h * qd)) / (2 * h)
        # central difference, h = 1e-6: rounding eps |p| / h ~ 2e-10 m/s, truncation h^2 |p'''| / 6 ~ 1e-12 (5.2e-10 seen)
        assert np.abs(jac.point_jacobian(tree, q, b, point) @ qd - fd).max() <= 1e-8


def test_site_jacobian_of_arm2_tip():
    m = models.load("arm2")
    d, tree = mujoco.MjData(m), dyn.tree_from_mujoco(m)
    site = m.site("ee")
    for q in ([0.3, -0.8], [1.0, 2.0], [-2.5, 0.1]):
        d.qpos[:] = q
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        ref = _mj(mujoco.mj_jacSite, m, d, site.id)
        ours = jac.body_jacobian(tree, q, "link2", m.site_pos[site.id])
        assert np.abs(ours - ref).max() <= TOL
        # planar closed form: the tip at (L1 cos q1 + L2 cos(q1+q2), z) moves with dx = -(...) sin, dz = (...) cos
        s1, c1, s12, c12 = np.sin(q[0]), np.cos(q[0]), np.sin(q[0] + q[1]), np.cos(q[0] + q[1])
        hand = np.array([[-0.5 * s1 - 0.4 * s12, -0.4 * s12], [0.0, 0.0], [0.5 * c1 + 0.4 * c12, 0.4 * c12]])
        assert np.abs(ours[:3] - hand).max() <= TOL
        assert np.abs(ours[3:] - np.array([[0, 0], [-1, -1], [0, 0]])).max() == 0


def test_unknown_body_and_bad_point():
    tree = dyn.tree_from_mujoco(models.load("arm2"))
    with pytest.raises(UnknownBodyError, match="no body named 'hand'.*'link1', 'link2'"):
        jac.body_jacobian(tree, [0, 0], "hand")
    for bad in (2, -1, 1.0, True):
        with pytest.raises(UnknownBodyError, match="not a body of the model"):
            jac.body_jacobian(tree, [0, 0], bad)
    with pytest.raises(ShapeError, match="point"):
        jac.point_jacobian(tree, [0, 0], 0, [0.1, 0.0])
    with pytest.raises(ShapeError, match="q"):
        jac.point_jacobian(tree, [0, 0, 0], 0, [0.1, 0.0, 0.0])
