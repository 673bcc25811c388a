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

q is (nq,), v, a, tau (nv,), M (nv, nv) for one state, or (N, nq), (N, nv), (N, nv, nv) for N states (a single
state shared by a batch, as physai.engine's functions take them); results have the batch's shape. `model` is a
physai.engine.Model (or what physai.engine.as_model takes). Positions must not be mixed between the two libraries'
integrators: pin.integrate moves on SE(3), MuJoCo's mj_integratePos on R^3 x SO(3).
"""

import numpy as np

from physai import engine, joints, validation
from physai.exceptions import ShapeError
from physai.spatial import skew

_WXYZ_TO_XYZW = np.array([1, 2, 3, 0])
_XYZW_TO_WXYZ = np.array([3, 0, 1, 2])


def _free(model):
    """(q address, v address) of every free joint of the model."""
    return [(int(q), int(v)) for t, q, v in zip(model.jnt_type, model.jnt_qposadr, model.jnt_dofadr) if t == joints.FREE]


def q_to_pinocchio(model, q) -> np.ndarray:
    """Pinocchio's configuration (nq,) | (N, nq) of physai's q: every quaternion reordered from (w, x, y, z) to (x, y, z, w)."""
    return _reorder_quaternions(model, "q", q, _WXYZ_TO_XYZW)


def q_from_pinocchio(model, q_pin) -> np.ndarray:
    """physai's q (nq,) | (N, nq) of a Pinocchio configuration: quaternions reordered from (x, y, z, w) to (w, x, y, z)."""
    return _reorder_quaternions(model, "q_pin", q_pin, _XYZW_TO_WXYZ)


def _reorder_quaternions(model, name: str, q, order: np.ndarray) -> np.ndarray:
    model = engine.as_model(model)
    (Q,), batch = validation.states(**{name: (q, model.nq)})
    out = Q.copy()                                                     # (nq, n), state last
    for a in model.coords.quat_q:
        out[a:a + 4] = out[a:a + 4][order]
    return _caller(out.T, batch)


def _caller(x: np.ndarray, batch) -> np.ndarray:
    """(n, ...) results to the caller's shape: (N, ...) for a batch, (...) for one state."""
    return x if batch is not None else x[0]


def _states(model, **arrays):
    """The arrays (name -> (value, size)) checked by validation.states, each (n, size) (a single state repeated)."""
    cols, batch = validation.states(**arrays)
    return [c.T for c in cols], batch


def _rotations(Q: np.ndarray, a: int) -> np.ndarray:
    """R (n, 3, 3) of the quaternions Q[:, a:a + 4], normalized; InvalidStateError for a zero quaternion (physai.joints)."""
    return np.moveaxis(joints.quat_to_mat(Q[:, a:a + 4].T, where=[a]), -1, 0)


def _velocity_maps(model, Q: np.ndarray) -> np.ndarray:
    """T (n, nv, nv) at the configurations Q (n, nq): R^T on each free joint's linear block."""
    T = np.tile(np.eye(model.nv), (len(Q), 1, 1))
    for qa, va in _free(model):
        T[:, va:va + 3, va:va + 3] = _rotations(Q, qa + 3).transpose(0, 2, 1)
    return T


def _velocity_map_rates(model, Q: np.ndarray, V: np.ndarray) -> np.ndarray:
    """Tdot (n, nv, nv): -[w_body]x R^T on each free joint's linear block, w_body its angular velocity."""
    Tdot = np.zeros((len(Q), model.nv, model.nv))
    for qa, va in _free(model):
        Tdot[:, va:va + 3, va:va + 3] = -skew(V[:, va + 3:va + 6]) @ _rotations(Q, qa + 3).transpose(0, 2, 1)
    return Tdot


def _times(T: np.ndarray, x: np.ndarray) -> np.ndarray:
    """T x for each state: (n, nv, nv), (n, nv) -> (n, nv)."""
    return np.einsum("nij,nj->ni", T, x)


def velocity_map(model, q) -> np.ndarray:
    """T (nv, nv) | (N, nv, nv) with v_pin = T v_mj at configuration q (physai's): R^T on each free joint's linear block."""
    model = engine.as_model(model)
    (Q,), batch = _states(model, q=(q, model.nq))
    return _caller(_velocity_maps(model, Q), batch)


def _mapped(model, q, name: str, x, inverse: bool) -> np.ndarray:
    """T x, or T^-1 x = T^T x when inverse (T is orthogonal), (nv,) | (N, nv) at q for x (nv,) | (N, nv) called name."""
    model = engine.as_model(model)
    (Q, X), batch = _states(model, q=(q, model.nq), **{name: (x, model.nv)})
    T = _velocity_maps(model, Q)
    return _caller(_times(T.transpose(0, 2, 1) if inverse else T, X), batch)


def v_to_pinocchio(model, q, v) -> np.ndarray:
    """Pinocchio's velocity T v (nv,) | (N, nv) of physai's velocity v at q."""
    return _mapped(model, q, "v", v, inverse=False)


def v_from_pinocchio(model, q, v_pin) -> np.ndarray:
    """physai's velocity T^-1 v_pin (nv,) | (N, nv) at q (physai's configuration)."""
    return _mapped(model, q, "v_pin", v_pin, inverse=True)


def a_to_pinocchio(model, q, v, a) -> np.ndarray:
    """Pinocchio's acceleration T a + Tdot v (nv,) | (N, nv) of physai's (q, v, a)."""
    model = engine.as_model(model)
    (Q, V, A), batch = _states(model, q=(q, model.nq), v=(v, model.nv), a=(a, model.nv))
    return _caller(_times(_velocity_maps(model, Q), A) + _times(_velocity_map_rates(model, Q, V), V), batch)


def a_from_pinocchio(model, q, v, a_pin) -> np.ndarray:
    """physai's acceleration T^-1 (a_pin - Tdot v) (nv,) | (N, nv); q and v are physai's."""
    model = engine.as_model(model)
    (Q, V, A), batch = _states(model, q=(q, model.nq), v=(v, model.nv), a_pin=(a_pin, model.nv))
    rest = A - _times(_velocity_map_rates(model, Q, V), V)
    return _caller(_times(_velocity_maps(model, Q).transpose(0, 2, 1), rest), batch)


def tau_from_pinocchio(model, q, tau_pin) -> np.ndarray:
    """physai's (MuJoCo's) generalized force T^T tau_pin (nv,) | (N, nv) of Pinocchio's, at q."""
    return _mapped(model, q, "tau_pin", tau_pin, inverse=True)


def tau_to_pinocchio(model, q, tau) -> np.ndarray:
    """Pinocchio's generalized force T tau (nv,) | (N, nv) of physai's, at q (T is orthogonal, so T^-T = T)."""
    return _mapped(model, q, "tau", tau, inverse=False)


def mass_matrix_from_pinocchio(model, q, M_pin) -> np.ndarray:
    """physai's (MuJoCo's) mass matrix T^T M_pin T (nv, nv) | (N, nv, nv) of Pinocchio's, at q."""
    model = engine.as_model(model)
    nv = model.nv
    M = validation.to_float("M_pin", M_pin, f"an array of shape ({nv}, {nv}) or (N, {nv}, {nv})")
    if M.shape[-2:] != (nv, nv) or M.ndim not in (2, 3):
        raise ShapeError(f"M_pin has shape {M.shape}, the model needs ({nv}, {nv}) or (N, {nv}, {nv})")
    (Q,), batch = _states(model, q=(q, model.nq))
    if M.ndim == 3 and batch is not None and len(M) != batch:
        raise ShapeError(f"M_pin has {len(M)} states but q has {batch}; batched inputs need the same number of states")
    M = validation.as_array("M_pin", M, M.shape)                                   # finite
    T = _velocity_maps(model, Q)
    out = T.transpose(0, 2, 1) @ M @ T
    return out if batch is not None or M.ndim == 3 else out[0]
