"""MuJoCo reference values, computed live, for the tests: one small function per quantity."""

import mujoco
import numpy as np

from physai import acceptance


def without_constraints(m: mujoco.MjModel) -> mujoco.MjModel:
    """Switch off contacts, limits and equalities, so MuJoCo's forces hold only the smooth dynamics."""
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    m.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_ENERGY
    return m


def random_states(m: mujoco.MjModel, count: int, seed: int = 0, qd_max: float = 5.0, qdd_max: float = 20.0):
    """`count` states (q, qd, qdd) from physai.acceptance.mujoco_states: q within limited joints' ranges, else [-pi, pi]."""
    s = acceptance.mujoco_states(m, count, seed, qd_max, qdd_max)
    return zip(s.q, s.qd, s.qdd)


def inverse(m, d, q, qd, qdd) -> np.ndarray:
    """mj_inverse's qfrc_inverse plus qfrc_passive: M qdd + c on a model without constraints."""
    d.qpos[:], d.qvel[:], d.qacc[:] = q, qd, qdd
    mujoco.mj_inverse(m, d)
    return d.qfrc_inverse + d.qfrc_passive


def forward(m, d, q, qd, qfrc_applied=None) -> mujoco.MjData:
    """d after mj_forward at (q, qd) with zero ctrl and the given generalized force."""
    d.qpos[:], d.qvel[:], d.ctrl[:] = q, qd, 0.0
    d.qfrc_applied[:] = 0.0 if qfrc_applied is None else qfrc_applied
    mujoco.mj_forward(m, d)
    return d


def full_mass(m, d) -> np.ndarray:
    """Dense M of the state in d (after mj_forward)."""
    M = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, M)
    return M


def dense_qDeriv(m, d) -> tuple[np.ndarray, np.ndarray]:
    """MuJoCo's sparse qDeriv (after an implicit step or mj_forward) as a dense matrix, and its sparsity mask."""
    D, mask = np.zeros((m.nv, m.nv)), np.zeros((m.nv, m.nv), dtype=bool)
    for i in range(m.nv):
        cols = m.D_colind[m.D_rowadr[i]:m.D_rowadr[i] + m.D_rownnz[i]]
        D[i, cols] = d.qDeriv[m.D_rowadr[i]:m.D_rowadr[i] + m.D_rownnz[i]]
        mask[i, cols] = True
    return D, mask


def steps(m, d, count: int) -> tuple[np.ndarray, np.ndarray]:
    """(qpos, qvel) after each of `count` mj_steps from d, ((count, nq), (count, nv)); d is left at the last state."""
    Q, QD = np.empty((count, m.nq)), np.empty((count, m.nv))
    for k in range(count):
        mujoco.mj_step(m, d)
        Q[k], QD[k] = d.qpos, d.qvel
    return Q, QD


def cinert_matrix(i) -> np.ndarray:
    """MuJoCo's cinert row (10,) (I_xx, I_yy, I_zz, I_xy, I_xz, I_yz, m c, m) as the 6 x 6 spatial inertia that
    mju_mulInertVec multiplies by (angular, linear) vectors."""
    I = np.array([[i[0], i[3], i[4]], [i[3], i[1], i[5]], [i[4], i[5], i[2]]])
    h = np.array([[0.0, -i[8], i[7]], [i[8], 0.0, -i[6]], [-i[7], i[6], 0.0]])     # skew(m c)
    return np.block([[I, h], [h.T, i[9] * np.eye(3)]])
