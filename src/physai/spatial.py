"""Spatial algebra: tiny pure functions on 3-vectors, rotations and 6-vectors.

Spatial vectors are (angular, linear): a velocity is (omega, v0), with v0 the velocity of the
body point that passes through the world origin; a force is (moment about the origin, force).
Quaternions are (w, x, y, z), as in MuJoCo.
"""

import numpy as np


def skew(v: np.ndarray) -> np.ndarray:
    """3x3 matrix of the cross product: skew(a) @ b == np.cross(a, b); for a stack (..., 3) the stack (..., 3, 3)."""
    v = np.asarray(v, dtype=float)
    S = np.zeros(v.shape[:-1] + (3, 3))
    S[..., 0, 1], S[..., 0, 2] = -v[..., 2], v[..., 1]
    S[..., 1, 0], S[..., 1, 2] = v[..., 2], -v[..., 0]
    S[..., 2, 0], S[..., 2, 1] = -v[..., 1], v[..., 0]
    return S


def cross_motion(v: np.ndarray) -> np.ndarray:
    """6x6 matrix of v x (.) acting on motion vectors (Featherstone's crm)."""
    X = np.zeros((6, 6))
    X[:3, :3] = X[3:, 3:] = skew(v[:3])                  # [w x   0 ]
    X[3:, :3] = skew(v[3:])                              # [u x  w x]
    return X


def cross_force(v: np.ndarray) -> np.ndarray:
    """6x6 matrix of v x* (.) acting on force vectors (Featherstone's crf); equals -cross_motion(v).T."""
    return -cross_motion(v).T


def spatial_inertia(mass: float, c: np.ndarray, Ic: np.ndarray) -> np.ndarray:
    """6x6 inertia about the origin of a body of `mass` [kg] with centre of mass c [m] and 3x3 inertia Ic about c [kg m^2]."""
    C = skew(c)
    I = np.empty((6, 6))
    I[:3, :3], I[:3, 3:] = Ic + mass * C @ C.T, mass * C   # [Ic + m c x c x^T   m c x]
    I[3:, :3], I[3:, 3:] = mass * C.T, mass * np.eye(3)    # [m c x^T            m 1  ]
    return I


def quat_to_mat(quat: np.ndarray) -> np.ndarray:
    """Rotation matrix of a quaternion (w, x, y, z), normalized first (as MuJoCo's kinematics); for a stack (..., 4) the
    stack (..., 3, 3). A zero quaternion gives NaN (callers that take states check for it first: physai.joints)."""
    quat = np.asarray(quat, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        w, x, y, z = np.moveaxis(quat / np.sqrt(np.einsum("...i,...i->...", quat, quat))[..., None], -1, 0)
    R = np.empty(quat.shape[:-1] + (3, 3))
    R[..., 0, 0], R[..., 0, 1], R[..., 0, 2] = 1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)
    R[..., 1, 0], R[..., 1, 1], R[..., 1, 2] = 2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)
    R[..., 2, 0], R[..., 2, 1], R[..., 2, 2] = 2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)
    return R


def axis_angle_to_mat(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rotation by `angle` [rad] about the unit vector `axis` (Rodrigues' formula)."""
    K = skew(axis)
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * K @ K
