"""Spatial algebra: tiny pure functions on 3-vectors, rotations and 6-vectors.

Spatial vectors are (angular, linear): a velocity is (omega, v0), with v0 the velocity of the
body point that passes through the world origin; a force is (moment about the origin, force).
Quaternions are (w, x, y, z), as in MuJoCo.

SO(3) and SE(3) (Pinocchio's exp3/log3/Jlog3 and exp6/log6/Jlog6): a twist xi is ordered (linear, angular), as
Pinocchio's Motion; every function takes one argument or a stack (..., 3), (..., 6), (..., 3, 3), (..., 4, 4).

    so3_exp(w) -> R,  so3_log(R) -> w (angle in [0, pi]),  so3_log_jacobian(R) -> Jlog3 (3, 3),
    so3_right_jacobian(w) -> J_r (3, 3)
    se3_exp(xi) -> T (4 x 4),  se3_log(T) -> xi,  se3_log_jacobian(T) -> Jlog6 (6, 6)

The log's Jacobian is the inverse of the exponential's right Jacobian: log(T exp(d)) = log(T) + Jlog d + O(|d|^2) for
a small twist d in T's own frame.
"""

import numpy as np

from physai.exceptions import InvalidArgumentError, ShapeError


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
    """Unit quaternion (w, x, y, z) of a rotation matrix (MuJoCo's mju_mat2Quat: from its largest component); for a
    stack (..., 3, 3) the stack (..., 4), each as for one matrix."""
    R = np.asarray(R, dtype=float)
    stack = R.shape[:-2] if R.ndim > 2 else ()
    m = np.moveaxis(R.reshape(stack + (9,)), -1, 0)
    with np.errstate(invalid="ignore", divide="ignore"):                # each branch for all; the chosen one kept
        w = 0.5 * np.sqrt(1 + m[0] + m[4] + m[8])
        x = 0.5 * np.sqrt(1 + m[0] - m[4] - m[8])
        y = 0.5 * np.sqrt(1 - m[0] + m[4] - m[8])
        z = 0.5 * np.sqrt(1 - m[0] - m[4] + m[8])
        cases = [np.stack([w, 0.25 * (m[7] - m[5]) / w, 0.25 * (m[2] - m[6]) / w, 0.25 * (m[3] - m[1]) / w], axis=-1),
                 np.stack([0.25 * (m[7] - m[5]) / x, x, 0.25 * (m[1] + m[3]) / x, 0.25 * (m[2] + m[6]) / x], axis=-1),
                 np.stack([0.25 * (m[2] - m[6]) / y, 0.25 * (m[1] + m[3]) / y, y, 0.25 * (m[5] + m[7]) / y], axis=-1),
                 np.stack([0.25 * (m[3] - m[1]) / z, 0.25 * (m[2] + m[6]) / z, 0.25 * (m[5] + m[7]) / z, z], axis=-1)]
    chosen = [m[0] + m[4] + m[8] > 0, (m[0] > m[4]) & (m[0] > m[8]), m[4] > m[8]]
    q = np.select([c[..., None] for c in chosen], cases[:3], cases[3])
    return q / (np.linalg.norm(q, axis=-1, keepdims=True) if stack else np.linalg.norm(q))


def quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product a * b of quaternions (w, x, y, z) (MuJoCo's mju_mulQuat); stacks (..., 4) too."""
    aw, ax, ay, az = np.moveaxis(np.asarray(a, dtype=float), -1, 0)
    bw, bx, by, bz = np.moveaxis(np.asarray(b, dtype=float), -1, 0)
    return np.stack([aw * bw - ax * bx - ay * by - az * bz, aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx, aw * bz + ax * by - ay * bx + az * bw], axis=-1)


def quat_mul_mj(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    """The product a b of quaternions (components along `axis`) with MuJoCo 4's arithmetic (mju_mulQuat: the four products
    of each component summed in pairs; cpp/spatial.h's quat_mul_mj): body poses, sites, collision's turns and
    physai.joints.quat_integrate (mju_quatIntegrate)."""
    a0, a1, a2, a3 = np.moveaxis(np.asarray(a, dtype=float), axis, 0)
    b0, b1, b2, b3 = np.moveaxis(np.asarray(b, dtype=float), axis, 0)
    return np.stack([(a0 * b0 - a1 * b1) - (a2 * b2 + a3 * b3), (a0 * b1 + a1 * b0) + (a2 * b3 - a3 * b2),
                     (a0 * b2 - a1 * b3) + (a2 * b0 + a3 * b1), (a0 * b3 + a1 * b2) + (a3 * b0 - a2 * b1)], axis=axis)


def axis_angle_to_quat(axis: np.ndarray, angle: float) -> np.ndarray:
    """Quaternion (w, x, y, z) of a rotation by `angle` [rad] about the unit vector `axis` (MuJoCo's mju_axisAngle2Quat)."""
    return np.r_[np.cos(0.5 * angle), np.sin(0.5 * angle) * np.asarray(axis, dtype=float)]


def tangent_from_y(normal: np.ndarray) -> np.ndarray:
    """(...,) bool: whether the default first tangent of unit normals n (..., 3) starts from y: |n_y| < 1/2 (MuJoCo's
    mju_makeFrame's switch; z otherwise)."""
    return np.abs(normal[..., 1]) < 0.5


def tangent_axis(normal: np.ndarray) -> np.ndarray:
    """(..., 3) the world axis a contact frame's default first tangent starts from, for unit normals n (..., 3): y where
    |n_y| < 1/2 (tangent_from_y), else z (MuJoCo's mju_makeFrame; the tangent is its part normal to n, y0 - n (n . y0),
    normalised)."""
    return np.where(tangent_from_y(normal)[..., None], (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))


# ---- SO(3) and SE(3): exp, log and the log's Jacobian (twists (linear, angular), as Pinocchio's) ----

def _series(t: np.ndarray, closed, coefficients, below: float = 0.1) -> np.ndarray:
    """closed(t) for t >= below, else the even series sum_k coefficients[k] t^(2k) (no cancellation near 0)."""
    t = np.asarray(t, dtype=float)
    small = t < below
    safe = np.where(small, 1.0, t)
    t2 = t * t
    series = sum(c * t2**k for k, c in enumerate(coefficients))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(small, series, closed(safe))


def _one_minus_cos(t):                            # (1 - cos t) / t^2
    return _series(t, lambda t: (1.0 - np.cos(t)) / t**2, (1 / 2, -1 / 24, 1 / 720, -1 / 40320, 1 / 3628800))


def _minus_sin(t):                                # (t - sin t) / t^3
    return _series(t, lambda t: (t - np.sin(t)) / t**3, (1 / 6, -1 / 120, 1 / 5040, -1 / 362880, 1 / 39916800))


def dexp_inv_coefficient(t: np.ndarray) -> np.ndarray:
    """c(t) = 1/t^2 - 1/(2 t tan(t/2)) of SO(3)'s inverse dexp and of Jlog3 (-> 1/12 + t^2/720 as t -> 0; series below
    1e-4, as cpp/configuration.h's dexp_inv). Just above 1e-4 the closed form keeps about 7 digits, but every use multiplies
    it by |w|^2 <= 1e-8 there, so the products keep all of theirs."""
    t = np.asarray(t, dtype=float)
    small = t < 1e-4
    safe = np.where(small, 1.0, t)
    return np.where(small, 1.0 / 12.0 + t * t / 720.0, 1.0 / safe**2 - 1.0 / (2.0 * safe * np.tan(0.5 * safe)))


def _checked(name: str, x, shape: tuple) -> np.ndarray:
    """x as a float array whose last axes are `shape` (one of them, or a stack), finite; ShapeError or
    InvalidArgumentError naming `name` otherwise."""
    if np.iscomplexobj(x):                           # numpy would drop the imaginary parts
        raise InvalidArgumentError(f"{name} must be real numbers, got complex values")
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"{name} must be real numbers of shape {shape} or a stack (..., {', '.join(map(str, shape))})"
                                   f", got {type(x).__name__}") from None
    if a.shape[a.ndim - len(shape):] != shape or a.ndim < len(shape):
        raise ShapeError(f"{name} has shape {a.shape}; expected {shape} or a stack (..., {', '.join(map(str, shape))})")
    if not np.isfinite(a).all():
        raise InvalidArgumentError(f"{name} has entries that are not finite")
    return a


#: how far R^T R may be from the identity for so3_log and se3_log to take R as a rotation
ROTATION_TOLERANCE = 1e-6


def _rotation(name: str, R: np.ndarray) -> None:
    """InvalidArgumentError naming `name` unless every R (..., 3, 3) is a rotation: R^T R = I within ROTATION_TOLERANCE
    and det R = +1 (not a reflection)."""
    error = np.abs(np.swapaxes(R, -1, -2) @ R - np.eye(3)).max(initial=0.0)
    det = np.linalg.det(R).reshape(-1)
    det = det.min() if det.size else 1.0
    if not error <= ROTATION_TOLERANCE or not det > 0:
        raise InvalidArgumentError(f"{name} is not a rotation: expected R^T R = I (within {ROTATION_TOLERANCE:g}; it is "
                                   f"off by {error:.3g}) and det R = +1 (not a reflection; det R is {det:.3g})")


def _overflow(name: str, result: np.ndarray) -> np.ndarray:
    """result, or InvalidArgumentError naming `name` when finite input overflowed (entries beyond about 1e150)."""
    if not np.isfinite(result).all():
        raise InvalidArgumentError(f"{name} is too large: its result overflows (keep its entries below about 1e150)")
    return result


def _angle(w: np.ndarray) -> np.ndarray:
    return np.sqrt(np.einsum("...i,...i->...", w, w))


def so3_exp(w) -> np.ndarray:
    """The rotation (..., 3, 3) by |w| [rad] about w / |w| (Rodrigues; Pinocchio's exp3): I + a [w] + b [w]^2 with
    a = sin t / t, b = (1 - cos t) / t^2."""
    w = _checked("w", w, (3,))
    t = _angle(w)[..., None, None]
    W = skew(w)
    sin_t = _series(t, lambda t: np.sin(t) / t, (1.0, -1 / 6, 1 / 120, -1 / 5040, 1 / 362880))
    return _overflow("w", np.eye(3) + sin_t * W + _one_minus_cos(t) * (W @ W))


def so3_right_jacobian(w) -> np.ndarray:
    """SO(3)'s right Jacobian J_r(w) (..., 3, 3): exp(w + d) = exp(w) exp(J_r(w) d) to first order;
    I - (1 - cos t)/t^2 [w] + (t - sin t)/t^3 [w]^2, t = |w| (the inverse of so3_log_jacobian at exp(w))."""
    w = _checked("w", w, (3,))
    t = _angle(w)[..., None, None]
    W = skew(w)
    return np.eye(3) - _one_minus_cos(t) * W + _minus_sin(t) * (W @ W)


def so3_log(R) -> np.ndarray:
    """The rotation vector w (..., 3) with so3_exp(w) = R, |w| in [0, pi] (Pinocchio's log3): angle from
    atan2(|s|, (tr R - 1) / 2) with s = vee(R - R^T) / 2; near pi the axis from R's symmetric part. R is taken to be a
    rotation: R^T R = I within ROTATION_TOLERANCE and det R = +1, else InvalidArgumentError."""
    R = _checked("R", R, (3, 3))
    _rotation("R", R)
    s = 0.5 * np.stack([R[..., 2, 1] - R[..., 1, 2], R[..., 0, 2] - R[..., 2, 0], R[..., 1, 0] - R[..., 0, 1]], axis=-1)
    c = 0.5 * (np.trace(R, axis1=-2, axis2=-1) - 1.0)
    sin_t = _angle(s)
    t = np.arctan2(sin_t, c)
    # t / sin t (series near 0): w = t / sin t * s away from pi
    ratio = _series(t, lambda t: t / np.sin(t), (1.0, 1 / 6, 7 / 360, 31 / 15120, 127 / 604800))
    w = ratio[..., None] * s
    near_pi = c < -0.9
    if np.any(near_pi):                                          # (R + R^T) / 2 - c I = (1 - c) a a^T
        B = 0.5 * (R + np.swapaxes(R, -1, -2)) - c[..., None, None] * np.eye(3)
        diag = np.diagonal(B, axis1=-2, axis2=-1)
        k = np.argmax(diag, axis=-1)
        column = np.take_along_axis(B, k[..., None, None], axis=-1)[..., 0]
        a = column / np.sqrt(np.maximum(np.take_along_axis(diag, k[..., None], axis=-1) * (1.0 - c[..., None]), 1e-300))
        a = np.where(np.einsum("...i,...i->...", a, s)[..., None] < 0, -a, a)   # sin t a = s: the sign of s
        w = np.where(near_pi[..., None], t[..., None] * a, w)
    return w


def so3_log_jacobian(R) -> np.ndarray:
    """Jlog3 (..., 3, 3) at R: I + [w]/2 + c(t) [w]^2 with w = so3_log(R), t = |w|, c = dexp_inv_coefficient (the inverse
    of SO(3)'s right Jacobian; Pinocchio's Jlog3)."""
    w = so3_log(R)
    W = skew(w)
    return np.eye(3) + 0.5 * W + dexp_inv_coefficient(_angle(w))[..., None, None] * (W @ W)


def _se3_q(v: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Barfoot's Q(v, w) (..., 3, 3): the coupling block of SE(3)'s left Jacobian [[Jl(w), Q], [0, Jl(w)]]."""
    t = _angle(w)[..., None, None]
    V, W = skew(v), skew(w)
    WV, VW, WVW = W @ V, V @ W, W @ V @ W
    b = _series(t, lambda t: (t * t + 2.0 * np.cos(t) - 2.0) / (2.0 * t**4),
                (1 / 24, -1 / 720, 1 / 40320, -1 / 3628800, 1 / 479001600))
    c = _series(t, lambda t: (2.0 * t - 3.0 * np.sin(t) + t * np.cos(t)) / (2.0 * t**5),
                (1 / 120, -1 / 2520, 1 / 120960, -1 / 9979200, 1 / 1245404160))
    return (0.5 * V + _minus_sin(t) * (WV + VW + WVW) + b * (W @ WV + VW @ W - 3.0 * WVW)
            + c * (WVW @ W + W @ WVW))


def se3_exp(xi) -> np.ndarray:
    """The rigid transform T (..., 4, 4) of the twist xi (..., 6) = (v, w) applied for unit time (Pinocchio's exp6):
    R = so3_exp(w), p = V v with V = I + (1 - cos t)/t^2 [w] + (t - sin t)/t^3 [w]^2."""
    xi = _checked("xi", xi, (6,))
    v, w = xi[..., :3], xi[..., 3:]
    t = _overflow("xi", _angle(w)[..., None, None])
    W = skew(w)
    V = np.eye(3) + _one_minus_cos(t) * W + _minus_sin(t) * (W @ W)
    T = np.zeros(xi.shape[:-1] + (4, 4))
    T[..., :3, :3] = so3_exp(w)
    T[..., :3, 3] = np.einsum("...ij,...j->...i", V, v)
    T[..., 3, 3] = 1.0
    return _overflow("xi", T)


def se3_log(T) -> np.ndarray:
    """The twist xi (..., 6) = (v, w) with se3_exp(xi) = T, |w| in [0, pi] (Pinocchio's log6): w = so3_log(R),
    v = V^-1 p, V^-1 = I - [w]/2 + c(t) [w]^2 (c: dexp_inv_coefficient). T must be a rigid transform: a rotation
    (so3_log) and the last row (0, 0, 0, 1), else InvalidArgumentError."""
    T = _checked("T", T, (4, 4))
    if (T[..., 3, :] != (0.0, 0.0, 0.0, 1.0)).any():
        raise InvalidArgumentError("T's last row is not (0, 0, 0, 1): T must be a rigid transform")
    _rotation("T's rotation block", T[..., :3, :3])
    w = so3_log(T[..., :3, :3])
    W = skew(w)
    Vinv = np.eye(3) - 0.5 * W + dexp_inv_coefficient(_angle(w))[..., None, None] * (W @ W)
    return np.concatenate([np.einsum("...ij,...j->...i", Vinv, T[..., :3, 3]), w], axis=-1)


def se3_log_jacobian(T) -> np.ndarray:
    """Jlog6 (..., 6, 6) at T: the inverse of SE(3)'s right Jacobian at xi = se3_log(T) (Pinocchio's Jlog6), rows and
    columns (linear, angular): [[A, -A Q A], [0, A]] with A = Jlog3 and Q = Barfoot's Q(-v, -w)."""
    xi = se3_log(T)
    v, w = xi[..., :3], xi[..., 3:]
    W = skew(w)
    A = np.eye(3) + 0.5 * W + dexp_inv_coefficient(_angle(w))[..., None, None] * (W @ W)
    J = np.zeros(xi.shape[:-1] + (6, 6))
    J[..., :3, :3] = J[..., 3:, 3:] = A
    J[..., :3, 3:] = -A @ _se3_q(-v, -w) @ A
    return J
