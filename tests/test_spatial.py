"""Spatial helpers against their definitions and against MuJoCo's own conversions."""

import mujoco
import numpy as np

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
