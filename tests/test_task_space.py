"""Operational-space dynamics: the task inertia, the dynamically consistent pseudo-inverse and the task bias against the
same formulas on MuJoCo's M (mj_fullM), c (qfrc_bias) and Jacobians (mj_jacSite, mj_jacDot), and the identity they exist
for: the joint forces J^T (Lam xdd + mu) give the task the acceleration xdd (MuJoCo's mj_forward)."""

import mujoco
import numpy as np
import pytest

from physai import engine, jacobians, task_space
from physai.exceptions import InvalidArgumentError, InvalidStateError, ShapeError

from helpers import load
from mj import full_mass

CASES = [("franka_emika_panda", "attachment_site"), ("unitree_h1", None)]
N = 3


@pytest.fixture(scope="module", params=CASES, ids=[c[0] for c in CASES])
def task(request):
    """(m, d, model, q, qd, J, J_dot, site): the Panda's hand site, or the H1's first site, with its 6-row Jacobian."""
    name, site = request.param
    m = load(name, constraints=False)
    site = site or m.site(0).name
    model = engine.from_mujoco(m)
    q, qd = engine.random_states(model, N, 3, qd_max=1.0)
    return (m, mujoco.MjData(m), model, q, qd, jacobians.frame_jacobian(model, q, site),
            jacobians.frame_jacobian_dot(model, q, qd, site), site)


def mujoco_quantities(m, d, q, qd, site):
    """(M, c, J, J_dot) from MuJoCo at one state."""
    d.qpos[:], d.qvel[:] = q, qd
    mujoco.mj_forward(m, d)
    M = full_mass(m, d)
    s = m.site(site).id
    jp, jr, dp, dr = (np.zeros((3, m.nv)) for _ in range(4))
    mujoco.mj_jacSite(m, d, jp, jr, s)
    mujoco.mj_jacDot(m, d, dp, dr, d.site_xpos[s], m.site_bodyid[s])
    return M, d.qfrc_bias.copy(), np.vstack([jp, jr]), np.vstack([dp, dr])


def test_inertia_pseudo_inverse_and_bias_equal_mujoco_formulas(task):
    m, d, model, q, qd, J, Jd, site = task
    Lam, Jbar, mu = task_space.inertia(model, q, J), task_space.pseudo_inverse(model, q, J), task_space.bias(model, q, qd, J, Jd)
    for k in range(N):
        M, c, Jm, Jdm = mujoco_quantities(m, d, q[k], qd[k], site)
        Minv = np.linalg.inv(M)
        Lref = np.linalg.inv(Jm @ Minv @ Jm.T)
        for got, ref in ((Lam[k], Lref), (Jbar[k], Minv @ Jm.T @ Lref), (mu[k], Lref @ (Jm @ Minv @ c - Jdm @ qd[k]))):
            assert np.abs(got - ref).max() <= 1e-9 * np.abs(ref).max()
        assert np.abs(J[k] @ Jbar[k] - np.eye(6)).max() <= 1e-9
    one = task_space.inertia(model, q[1], J[1])                      # one state as in the batch (Lam's condition number
    assert np.abs(one - Lam[1]).max() <= 1e-9 * np.abs(one).max()    # is about 1e5: rounding of M differs in the 12th digit)


def test_task_forces_give_the_task_acceleration(task):
    """tau = J^T (Lam xdd + mu) (the actuators off, the passive forces cancelled): mj_forward's qacc makes
    J qacc + J_dot qd = xdd."""
    m, d, model, q, qd, J, Jd, site = task
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_ACTUATION
    xdd = np.random.default_rng(5).normal(size=(N, 6))
    Lam, mu = task_space.inertia(model, q, J), task_space.bias(model, q, qd, J, Jd)
    for k in range(N):
        tau = J[k].T @ (Lam[k] @ xdd[k] + mu[k])
        d.qpos[:], d.qvel[:], d.qfrc_applied[:] = q[k], qd[k], tau - passive(m, d, q[k], qd[k])
        mujoco.mj_forward(m, d)
        got = J[k] @ d.qacc + Jd[k] @ qd[k]
        assert np.abs(got - xdd[k]).max() <= 1e-7 * max(1.0, np.abs(xdd[k]).max())


def passive(m, d, q, qd):
    """MuJoCo's passive forces (damping, springs) at (q, qd): cancelled through qfrc_applied, so that only tau acts."""
    d.qpos[:], d.qvel[:] = q, qd
    mujoco.mj_forward(m, d)
    return d.qfrc_passive.copy()


def test_damping_and_shapes_are_checked():
    model = engine.from_mujoco("franka_emika_panda")
    q = engine.random_states(model, 1, 3)[0][0]
    J = jacobians.frame_jacobian(model, q, "hand")
    damped = task_space.inertia(model, q, J, damping=0.1)
    plain = task_space.inertia(model, q, J)
    assert np.linalg.eigvalsh(damped).max() < np.linalg.eigvalsh(plain).max()       # damping bounds the inertia
    with pytest.raises(ShapeError, match=r"J has shape \(6, 8\); for one state it must be \(m, 9\)"):
        task_space.inertia(model, q, J[:, :8])
    with pytest.raises(InvalidArgumentError, match="damping is -0.1; expected a finite number >= 0"):
        task_space.inertia(model, q, J, damping=-0.1)
    with pytest.raises(InvalidArgumentError, match="J has entries that are not finite"):
        task_space.inertia(model, q, J * np.nan)
    straight = jacobians.frame_jacobian(model, model.qpos0, "hand")      # the arm upright: joints 1, 3, 5, 7 aligned
    with pytest.raises(InvalidStateError, match=r"J M\^-1 J\^T is singular: the task Jacobian loses rank .* damping > 0"):
        task_space.inertia(model, model.qpos0, straight)
    assert np.isfinite(task_space.inertia(model, model.qpos0, straight, damping=0.05)).all()
