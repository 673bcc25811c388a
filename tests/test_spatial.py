"""Spatial helpers against their definitions and against MuJoCo's own conversions."""

import mujoco
import numpy as np
import pinocchio as pin
import pytest

from physai import spatial
from physai.spatial import axis_angle_to_mat, cross_force, cross_motion, quat_to_mat, skew, spatial_inertia

rng = np.random.default_rng(3)


def test_skew_is_the_cross_product():
    a, b = rng.normal(size=3), rng.normal(size=3)
    np.testing.assert_allclose(skew(a) @ b, np.cross(a, b), atol=1e-15)


def test_quat_to_mat_matches_mujoco():
    for _ in range(20):
        quat = rng.normal(size=4)
        ref = np.zeros(9)
        mujoco.mju_quat2Mat(ref, quat / np.linalg.norm(quat))
        np.testing.assert_allclose(quat_to_mat(quat), ref.reshape(3, 3), atol=1e-15)


def test_mat_to_quat_matches_mujoco_one_by_one_and_stacked():
    """mat_to_quat of a matrix equals mju_mat2Quat (1e-15), for a stack (2, 20, 3, 3) each matrix's (2, 20, 4),
    through each of its four branches (random rotations, and turns by pi about x, y, z where the trace is -1)."""
    quats = np.r_[rng.normal(size=(36, 4)), [[0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1], [1, 0, 0, 0]]]
    mats = quat_to_mat(quats)
    ref = np.zeros((len(mats), 4))
    for k, R in enumerate(mats):
        mujoco.mju_mat2Quat(ref[k], R.ravel())
        np.testing.assert_allclose(spatial.mat_to_quat(R), ref[k], atol=1e-15)
    stacked = spatial.mat_to_quat(mats.reshape(2, 20, 3, 3))
    assert stacked.shape == (2, 20, 4)
    np.testing.assert_allclose(stacked.reshape(-1, 4), ref, atol=1e-15)


def test_axis_angle_matches_mujoco():
    for _ in range(20):
        axis, angle = rng.normal(size=3), rng.uniform(-4, 4)
        axis /= np.linalg.norm(axis)
        quat, ref = np.zeros(4), np.zeros(9)
        mujoco.mju_axisAngle2Quat(quat, axis, angle)
        mujoco.mju_quat2Mat(ref, quat)
        np.testing.assert_allclose(axis_angle_to_mat(axis, angle), ref.reshape(3, 3), atol=1e-15)


def test_force_cross_is_dual_of_motion_cross():
    v, m, f = rng.normal(size=6), rng.normal(size=6), rng.normal(size=6)
    # power is invariant: (v x m) . f + m . (v x* f) = 0
    assert abs((cross_motion(v) @ m) @ f + m @ (cross_force(v) @ f)) < 1e-14


def test_spatial_inertia_gives_momentum_and_kinetic_energy():
    mass, c = 2.0, rng.normal(size=3)
    A = rng.normal(size=(3, 3))
    Ic = A @ A.T
    w, v0 = rng.normal(size=3), rng.normal(size=3)
    vc = v0 + np.cross(w, c)                             # velocity of the centre of mass
    h = spatial_inertia(mass, c, Ic) @ np.r_[w, v0]
    np.testing.assert_allclose(h[3:], mass * vc, atol=1e-14)
    np.testing.assert_allclose(h[:3], Ic @ w + np.cross(c, mass * vc), atol=1e-14)
    T = 0.5 * np.r_[w, v0] @ h
    assert abs(T - (0.5 * mass * vc @ vc + 0.5 * w @ Ic @ w)) < 1e-13


# ---- SO(3) and SE(3): against Pinocchio 4.1 (exp3/log3/Jlog3, exp6/log6/Jlog6) and finite differences ----

ANGLES = [1e-9, 1e-5, 1e-3, 0.05, 0.5, 2.0, 3.0, np.pi - 1e-7]


def twists(angle: float, n: int = 12, seed: int = 0) -> np.ndarray:
    """n twists (n, 6) = (v, w): v normal, w of norm `angle` in a random direction."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(n, 3))
    return np.concatenate([rng.normal(size=(n, 3)), angle * w / np.linalg.norm(w, axis=1, keepdims=True)], axis=1)


@pytest.mark.parametrize("angle", ANGLES)
def test_se3_exp_and_log_equal_pinocchio_and_round_trip(angle):
    xi = twists(angle)
    T = spatial.se3_exp(xi)                                              # a stack of 12
    log = spatial.se3_log(T)
    assert np.abs(log - xi).max() <= 1e-14 * np.abs(xi).max()            # round trip: angles below pi
    assert np.abs(spatial.so3_log(spatial.so3_exp(xi[:, 3:])) - xi[:, 3:]).max() <= 2e-15 * angle
    for k in range(len(xi)):
        motion = pin.Motion(xi[k, :3], xi[k, 3:])
        assert np.abs(T[k] - pin.exp6(motion).homogeneous).max() <= 1e-13
        assert np.abs(spatial.se3_exp(xi[k]) - T[k]).max() <= 1e-15                   # one twist as in the stack
        assert np.abs(log[k] - pin.log6(pin.SE3(T[k])).vector).max() <= 1e-13 * max(1.0, np.abs(xi[k]).max())
        R = T[k, :3, :3]
        assert np.abs(spatial.so3_exp(xi[k, 3:]) - pin.exp3(xi[k, 3:])).max() <= 1e-15
        assert np.abs(spatial.so3_log(R) - pin.log3(R)).max() <= 1e-13


@pytest.mark.parametrize("angle", ANGLES)
def test_log_jacobians_equal_finite_differences_and_pinocchio(angle):
    """Jlog6 against central differences of log(T exp(d)), step 1e-6 (1e-8: their own error is about 1e-9; not at
    pi - 1e-7, where a step crosses the log's cut at pi), and Jlog3, Jlog6 against Pinocchio within 1e-12, except at
    1e-3 rad, where Pinocchio 4.1's closed forms lose digits (Jlog6 off by 2.5e-7, while these match the finite
    differences to 1e-9)."""
    xi = twists(angle, n=6, seed=1)
    T = spatial.se3_exp(xi)
    J = spatial.se3_log_jacobian(T)
    h = 1e-6
    for k in range(len(xi)):
        for c in range(6 if angle < 3.1 else 0):
            d = np.zeros(6)
            d[c] = h
            fd = (spatial.se3_log(T[k] @ spatial.se3_exp(d)) - spatial.se3_log(T[k] @ spatial.se3_exp(-d))) / (2 * h)
            assert np.abs(fd - J[k, :, c]).max() <= 1e-8, (k, c)
        if angle != 1e-3:
            assert np.abs(J[k] - pin.Jlog6(pin.SE3(T[k]))).max() <= 1e-12
            assert np.abs(spatial.so3_log_jacobian(T[k, :3, :3]) - pin.Jlog3(T[k, :3, :3])).max() <= 1e-12


def test_so3_log_near_pi_keeps_the_axis_and_its_sign():
    """Rotations by pi - 1e-7 and exactly pi about random axes: the log's angle and axis (its sign fixed by the rotation
    for pi - 1e-7; either sign at pi, which are the same rotation) give the rotation back within 1e-14."""
    rng = np.random.default_rng(4)
    for _ in range(20):
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        for angle in (np.pi - 1e-7, np.pi):
            R = axis_angle_to_mat(axis, angle)
            w = spatial.so3_log(R)
            assert abs(np.linalg.norm(w) - angle) <= 1e-14
            assert np.abs(spatial.so3_exp(w) - R).max() <= 1e-14
            if angle < np.pi:
                assert np.abs(w / angle - axis).max() <= 1e-7


@pytest.mark.parametrize("angle", ANGLES[:-1])
def test_so3_right_jacobian_is_the_inverse_of_jlog3_and_equals_pinocchio(angle):
    for w in twists(angle, n=4, seed=2)[:, 3:]:
        Jr = spatial.so3_right_jacobian(w)
        assert np.abs(Jr @ spatial.so3_log_jacobian(spatial.so3_exp(w)) - np.eye(3)).max() <= 1e-12
        assert np.abs(Jr - pin.Jexp3(w)).max() <= 1e-12


@pytest.mark.parametrize("T, message", [
    (np.diag([2.0, 2.0, 2.0, 1.0]), r"T's rotation block is not a rotation: expected R\^T R = I"),
    (np.diag([1.0, 1.0, -1.0, 1.0]), r"not a reflection; det R is -1"),
    (np.r_[np.eye(4)[:3], [[1.0, 0.0, 0.0, 1.0]]], r"T's last row is not \(0, 0, 0, 1\)"),
    (np.eye(4) + 0.5j, "T must be real numbers, got complex values"),
])
def test_se3_log_refuses_what_is_not_a_rigid_transform(T, message):
    """A scaled rotation, a reflection, a bad last row and complex input used to give a twist (zeros, or the real parts)."""
    from physai.exceptions import InvalidArgumentError
    with pytest.raises(InvalidArgumentError, match=message):
        spatial.se3_log(T)


def test_so3_log_refuses_a_reflection_and_se3_exp_an_overflowing_twist():
    from physai.exceptions import InvalidArgumentError
    with pytest.raises(InvalidArgumentError, match="R is not a rotation"):
        spatial.so3_log(-np.eye(3))
    with pytest.raises(InvalidArgumentError, match="xi is too large: its result overflows"):
        spatial.se3_exp(np.full(6, 1e300))
    R = spatial.so3_exp([0.3, -0.2, 0.1])                      # a rotation off by rounding is still one
    assert np.allclose(spatial.so3_exp(spatial.so3_log(R + 1e-12)), R, atol=1e-10)
