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
    w, x, y, z = np.moveaxis(quat_normalize(quat), -1, 0)
    R = np.empty(quat.shape[:-1] + (3, 3))
    R[..., 0, 0], R[..., 0, 1], R[..., 0, 2] = 1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)
    R[..., 1, 0], R[..., 1, 1], R[..., 1, 2] = 2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)
    R[..., 2, 0], R[..., 2, 1], R[..., 2, 2] = 2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)
    return R


def quat_normalize(quat: np.ndarray) -> np.ndarray:
    """quat / |quat| for a quaternion or a stack (..., 4), exact for every finite size (as cpp/spatial.h's
    quat_normalize): when |quat|^2 would overflow or underflow (|quat| beyond about 1e100 or below 1e-100), quat is
    first scaled by the power of two just above its largest component, which is exact. A zero quaternion gives NaN."""
    quat = np.asarray(quat, dtype=float)
    norm2 = np.einsum("...i,...i->...", quat, quat)
    scaled = ~((norm2 >= 1e-200) & (norm2 <= 1e200))
    if scaled.any():
        _, e = np.frexp(np.abs(quat).max(axis=-1))
        quat = np.where(scaled[..., None], np.ldexp(quat, -e[..., None]), quat)
        norm2 = np.einsum("...i,...i->...", quat, quat)
    with np.errstate(invalid="ignore", divide="ignore"):
        return quat / np.sqrt(norm2)[..., None]


def axis_angle_to_mat(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rotation by `angle` [rad] about the unit vector `axis` (Rodrigues' formula)."""
    K = skew(axis)
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * K @ K


def mat_to_quat(R: np.ndarray) -> np.ndarray:
    """Unit quaternion (w, x, y, z) of a rotation matrix (MuJoCo's mju_mat2Quat: from its largest component)."""
    m = np.asarray(R, dtype=float).ravel()
    if m[0] + m[4] + m[8] > 0:
        w = 0.5 * np.sqrt(1 + m[0] + m[4] + m[8])
        q = np.array([w, 0.25 * (m[7] - m[5]) / w, 0.25 * (m[2] - m[6]) / w, 0.25 * (m[3] - m[1]) / w])
    elif m[0] > m[4] and m[0] > m[8]:
        x = 0.5 * np.sqrt(1 + m[0] - m[4] - m[8])
        q = np.array([0.25 * (m[7] - m[5]) / x, x, 0.25 * (m[1] + m[3]) / x, 0.25 * (m[2] + m[6]) / x])
    elif m[4] > m[8]:
        y = 0.5 * np.sqrt(1 - m[0] + m[4] - m[8])
        q = np.array([0.25 * (m[2] - m[6]) / y, 0.25 * (m[1] + m[3]) / y, y, 0.25 * (m[5] + m[7]) / y])
    else:
        z = 0.5 * np.sqrt(1 - m[0] - m[4] + m[8])
        q = np.array([0.25 * (m[3] - m[1]) / z, 0.25 * (m[2] + m[6]) / z, 0.25 * (m[5] + m[7]) / z, z])
    return q / np.linalg.norm(q)


def quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product a * b of quaternions (w, x, y, z) (MuJoCo's mju_mulQuat); stacks (..., 4) too."""
    aw, ax, ay, az = np.moveaxis(np.asarray(a, dtype=float), -1, 0)
    bw, bx, by, bz = np.moveaxis(np.asarray(b, dtype=float), -1, 0)
    return np.stack([aw * bw - ax * bx - ay * by - az * bz, aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx, aw * bz + ax * by - ay * bx + az * bw], axis=-1)


def axis_angle_to_quat(axis: np.ndarray, angle: float) -> np.ndarray:
    """Quaternion (w, x, y, z) of a rotation by `angle` [rad] about the unit vector `axis` (MuJoCo's mju_axisAngle2Quat)."""
    return np.r_[np.cos(0.5 * angle), np.sin(0.5 * angle) * np.asarray(axis, dtype=float)]
