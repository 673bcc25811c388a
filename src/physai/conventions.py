"""MuJoCo's and Pinocchio's conventions for free and ball joints, and the maps between them.

physai follows MuJoCo (physai.joints). Pinocchio differs in two places:

    joint   MuJoCo (physai)                                   Pinocchio
    free    q = (p, w, x, y, z)                               q = (p, x, y, z, w)
            v = (linear velocity of the origin, WORLD frame,  v = (linear velocity of the origin, BODY frame,
                 angular velocity, body frame)                     angular velocity, body frame)
    ball    q = (w, x, y, z), v = angular velocity, child      q = (x, y, z, w), v the same

For every free joint with body orientation R, v_pin = T v_mj with T = blkdiag(R^T, 1) on its six velocities
(the identity elsewhere), so

    a_pin = T a_mj + Tdot v_mj,   Tdot = blkdiag(-[w_body]x R^T, 0)
    M_mj  = T^T M_pin T,          tau_mj = T^T tau_pin        (the same power tau . v in both)

q is (nq,), v, a, tau (nv,), M (nv, nv): one state; `model` is a physai.engine.Model (or what
physai.engine.as_model takes). Positions must not be mixed between the two libraries' integrators:
pin.integrate moves on SE(3), MuJoCo's mj_integratePos on R^3 x SO(3).
"""

import numpy as np

from physai import engine, joints, validation
from physai.spatial import skew

_WXYZ_TO_XYZW = np.array([1, 2, 3, 0])
_XYZW_TO_WXYZ = np.array([3, 0, 1, 2])


def _free(model):
    """(q address, v address) of every free joint of the model."""
    return [(int(q), int(v)) for t, q, v in zip(model.jnt_type, model.jnt_qposadr, model.jnt_dofadr) if t == joints.FREE]


def q_to_pinocchio(model, q) -> np.ndarray:
    """Pinocchio's configuration (nq,) of physai's q: every quaternion reordered from (w, x, y, z) to (x, y, z, w)."""
    return _reorder_quaternions(model, "q", q, _WXYZ_TO_XYZW)


def q_from_pinocchio(model, q_pin) -> np.ndarray:
    """physai's q (nq,) of a Pinocchio configuration: quaternions reordered from (x, y, z, w) to (w, x, y, z)."""
    return _reorder_quaternions(model, "q_pin", q_pin, _XYZW_TO_WXYZ)


def _reorder_quaternions(model, name: str, q, order: np.ndarray) -> np.ndarray:
    model = engine.as_model(model)
    out = validation.vector(name, q, model.nq).copy()
    for a in model.coords.quat_q:
        out[a:a + 4] = out[a:a + 4][order]
    return out


def _rotation(q: np.ndarray, a: int) -> np.ndarray:
    """R (3, 3) of the quaternion q[a:a + 4], normalized; InvalidStateError for a zero quaternion (physai.joints)."""
    return joints.quat_to_mat(q[a:a + 4, None], where=[a])[..., 0]


def velocity_map(model, q) -> np.ndarray:
    """T (nv, nv) with v_pin = T v_mj at configuration q (physai's, (nq,)): R^T on each free joint's linear block."""
    model = engine.as_model(model)
    q = validation.vector("q", q, model.nq)
    T = np.eye(model.nv)
    for qa, va in _free(model):
        T[va:va + 3, va:va + 3] = _rotation(q, qa + 3).T
    return T


def _velocity_map_rate(model, q, v) -> np.ndarray:
    """Tdot (nv, nv): -[w_body]x R^T on each free joint's linear block, w_body its angular velocity."""
    Tdot = np.zeros((model.nv, model.nv))
    for qa, va in _free(model):
        Tdot[va:va + 3, va:va + 3] = -skew(v[va + 3:va + 6]) @ _rotation(q, qa + 3).T
    return Tdot


def v_to_pinocchio(model, q, v) -> np.ndarray:
    """Pinocchio's velocity T v (nv,) of physai's velocity v at q."""
    model = engine.as_model(model)
    return velocity_map(model, q) @ validation.vector("v", v, model.nv)


def v_from_pinocchio(model, q, v_pin) -> np.ndarray:
    """physai's velocity T^-1 v_pin (nv,) at q (physai's configuration)."""
    model = engine.as_model(model)
    return velocity_map(model, q).T @ validation.vector("v_pin", v_pin, model.nv)    # T is orthogonal


def a_to_pinocchio(model, q, v, a) -> np.ndarray:
    """Pinocchio's acceleration T a + Tdot v (nv,) of physai's (q, v, a)."""
    model = engine.as_model(model)
    q, v, a = validation.vector("q", q, model.nq), validation.vector("v", v, model.nv), validation.vector("a", a, model.nv)
    return velocity_map(model, q) @ a + _velocity_map_rate(model, q, v) @ v


def a_from_pinocchio(model, q, v, a_pin) -> np.ndarray:
    """physai's acceleration T^-1 (a_pin - Tdot v) (nv,); q and v are physai's."""
    model = engine.as_model(model)
    q, v = validation.vector("q", q, model.nq), validation.vector("v", v, model.nv)
    a_pin = validation.vector("a_pin", a_pin, model.nv)
    return velocity_map(model, q).T @ (a_pin - _velocity_map_rate(model, q, v) @ v)


def tau_from_pinocchio(model, q, tau_pin) -> np.ndarray:
    """physai's (MuJoCo's) generalized force T^T tau_pin (nv,) of Pinocchio's, at q."""
    model = engine.as_model(model)
    return velocity_map(model, q).T @ validation.vector("tau_pin", tau_pin, model.nv)


def tau_to_pinocchio(model, q, tau) -> np.ndarray:
    """Pinocchio's generalized force T tau (nv,) of physai's, at q (T is orthogonal, so T^-T = T)."""
    model = engine.as_model(model)
    return velocity_map(model, q) @ validation.vector("tau", tau, model.nv)


def mass_matrix_from_pinocchio(model, q, M_pin) -> np.ndarray:
    """physai's (MuJoCo's) mass matrix T^T M_pin T (nv, nv) of Pinocchio's, at q."""
    model = engine.as_model(model)
    T = velocity_map(model, q)
    return T.T @ validation.as_array("M_pin", M_pin, (model.nv, model.nv)) @ T
