"""physai.acceptance: every check passes on correct dynamics, and each one fails on an input broken the way it guards against."""

import warnings

import mujoco
import numpy as np
import pytest

from physai import acceptance, dynamics, engine, forces, integrators, models
from physai.acceptance import range_violations
from physai.coriolis import coriolis_matrix
from physai.exceptions import InvalidArgumentError, RangeWarning, ShapeError

MODELS = ("double_pendulum", "hinge_slide", "arm2", "arm7", "franka_emika_panda")
N = 8


def _setup(name: str):
    m = models.load(name)
    tree = dynamics.tree_from_mujoco(m)
    return m, tree, acceptance.mujoco_states(m, N, seed=3)


@pytest.mark.parametrize("name", MODELS)
def test_all_checks_pass(name):
    results = acceptance.run_checks(models.load(name), N, seed=1)
    assert len({r.key for r in results}) == len(results) >= 14
    failed = [(r.label, r.worst, r.tolerance) for r in results if not r.passed]
    assert not failed


@pytest.mark.parametrize("name", MODELS)
def test_min_eigenvalue_is_mujocos(name):
    """(a)'s smallest eigenvalue is that of mj_fullM at the same states (constraints play no part in M)."""
    m, tree, s = _setup(name)
    d = mujoco.MjData(m)
    lowest = np.inf
    for q in s.q:
        d.qpos[:] = q
        mujoco.mj_forward(m, d)
        M = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, d, M)
        lowest = min(lowest, np.linalg.eigvalsh(M)[0])
    assert acceptance.mass_matrix_min_eigenvalue(tree, s.q) == pytest.approx(lowest, rel=1e-12)   # 1.2e-14 seen


def test_states_respect_ranges():
    m = models.load("franka_emika_panda")
    s = acceptance.mujoco_states(m, 50, seed=0)
    lo, hi = m.jnt_range[m.dof_jntid, 0], m.jnt_range[m.dof_jntid, 1]
    assert ((s.q >= lo) & (s.q <= hi)).all()
    assert ((s.ctrl >= m.actuator_ctrlrange[:, 0]) & (s.ctrl <= m.actuator_ctrlrange[:, 1])).all()
    assert s.xfrc_applied.shape == (50, m.nbody - 1, 6) and len(s) == 50
    again = acceptance.mujoco_states(m, 50, seed=0)
    assert np.array_equal(s.q, again.q) and np.array_equal(s.xfrc_applied, again.xfrc_applied)
    slow = acceptance.mujoco_states(m, 50, seed=0, qd_max=0.5, qdd_max=3.0)
    assert np.abs(slow.qd).max() <= 0.5 and np.abs(slow.qdd).max() <= 3.0 and np.abs(s.qdd).max() <= acceptance.QDD_MAX
    assert np.array_equal(slow.q, s.q)                        # the ranges scale the draws, q stays the same


def test_balance_with_mujocos_terms_and_constraints_disabled():
    """(e) with MuJoCo's own terms; the model passed in is left as it was (the checks disable constraints on a copy)."""
    m = models.load("arm7")
    flags = m.opt.disableflags
    s = acceptance.mujoco_states(m, N, seed=2)
    assert acceptance.balance_residual(m, s) < 1e-11                      # N m (9.9e-14 seen)
    assert acceptance.balance_residual(m, s, dynamics.tree_from_mujoco(m), forces.actuators_from_mujoco(m)) < 1e-11   # (2.5e-13)
    assert m.opt.disableflags == flags
    pairs = acceptance.mujoco_terms(acceptance.without_constraints(m), s)
    assert all(not t.constraint.any() and o is None for t, o in pairs)


# ---- the checks fail on broken inputs ----


def test_tampered_inertia_fails_only_against_mujoco():
    """A tree 10 % heavier in one link is a consistent model of another robot: its identities (a), (c), (d) pass;
    the checks against MuJoCo fail: (b), whose hold torque is MuJoCo's gravity torque, and (e)."""
    m = models.load("arm7")
    tree = dynamics.tree_from_mujoco(m)
    tree.bodies[3].mass *= 1.1
    tree.bodies[3].inertia = tree.bodies[3].inertia * 1.1
    results = {r.key: r for r in acceptance.run_checks(m, N, seed=0, model=tree, actuators=forces.actuators_from_mujoco(m))}
    for key in ("asymmetry", "min_eigenvalue", "roundtrip", "coriolis", "skew", "passivity"):
        assert results[key].passed, key
    for key in ("hold", "balance", "term_M", "term_bias"):
        assert not results[key].passed and results[key].worst > 1e-3, key
    assert results["balance_mujoco"].passed and results["term_actuator"].passed


def test_wrong_armature_fails_the_balance():
    m, tree, s = _setup("franka_emika_panda")
    tree.armature = tree.armature * 0.5
    assert acceptance.balance_residual(m, s, tree, forces.actuators_from_mujoco(m)) > 1e-2
    assert acceptance.term_differences(m, s, tree, forces.actuators_from_mujoco(m))["M"] == pytest.approx(0.05)


def test_asymmetric_or_indefinite_mass_matrix_fails():
    m, tree, s = _setup("arm2")

    def lopsided(t, q):
        M = dynamics.mass_matrix(t, q)
        M[0, 1] += 1e-3
        return M

    def indefinite(t, q):
        M = dynamics.mass_matrix(t, q)
        return M - 2 * np.linalg.eigvalsh(M)[-1] * np.eye(len(M))

    # (mass_matrix writes M_ij and M_ji from one value, so its own asymmetry is 0 by construction: not asserted)
    assert acceptance.mass_matrix_asymmetry(tree, s.q, mass_matrix=lopsided) == pytest.approx(1e-3)
    assert acceptance.mass_matrix_min_eigenvalue(tree, s.q) > 0
    assert acceptance.mass_matrix_min_eigenvalue(tree, s.q, mass_matrix=indefinite) < 0


def test_wrong_gravity_fails_the_hold_check():
    """With its defaults the hold residual is M^-1 (g - bias(q, 0)), both from rnea(q, 0, 0): zero by construction.
    MuJoCo's gravity torque (qfrc_bias at qd = 0) is an independent g that must hold physai's tree still."""
    m, tree, s = _setup("arm7")
    d = mujoco.MjData(m)

    def mujoco_gravity(t, q):
        d.qpos[:], d.qvel[:] = q, 0.0
        mujoco.mj_forward(m, d)
        return d.qfrc_bias.copy()

    assert acceptance.hold_residual(tree, s.q, gravity=mujoco_gravity) < 1e-12    # rad/s^2 (3.4e-14 seen)
    assert acceptance.hold_residual(tree, s.q, gravity=lambda t, q: 1.01 * dynamics.gravity(t, q)) > 1e-3


def test_inverse_without_armature_fails_the_round_trip():
    m, tree, s = _setup("arm7")

    def rnea_no_armature(t, q, qd, qdd):
        return dynamics.rnea(t, q, qd, qdd) - t.armature * qdd

    assert acceptance.roundtrip_residual(tree, s.q, s.qd, s.tau) < 1e-12      # N m (4.0e-14 seen)
    assert acceptance.roundtrip_residual(tree, s.q, s.qd, s.tau, rnea=rnea_no_armature) > 1e-2


def test_fake_coriolis_matrices_fail():
    """C = 0 breaks skew-symmetry; C^T keeps Mdot - 2C^T = C - C^T skew (and passive) but not C qd = c - g."""
    m, tree, s = _setup("arm7")
    zero = lambda t, q, qd: np.zeros((t.nv, t.nv))                       # noqa: E731
    transposed = lambda t, q, qd: coriolis_matrix(t, q, qd).T            # noqa: E731
    assert acceptance.skew_residual(tree, s.q, s.qd) < 1e-13
    assert acceptance.skew_residual(tree, s.q, s.qd, coriolis=zero) > 1e-2
    assert acceptance.passivity_residual(tree, s.q, s.qd, coriolis=zero) > 1e-2
    assert acceptance.skew_residual(tree, s.q, s.qd, coriolis=transposed) < 1e-13
    assert acceptance.passivity_residual(tree, s.q, s.qd, coriolis=transposed) < 1e-13
    assert acceptance.coriolis_residual(tree, s.q, s.qd) < 1e-12
    assert acceptance.coriolis_residual(tree, s.q, s.qd, coriolis=transposed) > 1e-2


# ---- batches of states ----


def test_a_single_vector_stands_for_every_state_of_the_batch():
    """One (nv,) qd with (n, nv) q checks all n states, not only the first (zip used to stop at the shortest)."""
    m, tree, s = _setup("arm7")
    zero = lambda t, q, qd: np.zeros((t.nv, t.nv))                       # noqa: E731 (residual |c - g| != 0)
    each = [acceptance.coriolis_residual(tree, q, s.qd[0], coriolis=zero) for q in s.q]
    assert max(each) > each[0]
    assert acceptance.coriolis_residual(tree, s.q, s.qd[0], coriolis=zero) == max(each)
    per_state = [acceptance.roundtrip_residual(tree, q, s.qd[0], s.tau[0]) for q in s.q]
    assert acceptance.roundtrip_residual(tree, s.q, s.qd[0], s.tau[0]) == max(per_state)


def test_batches_of_different_lengths_are_refused():
    m, tree, s = _setup("arm7")
    with pytest.raises(ShapeError, match="different numbers of states: q has 8, qd has 5"):
        acceptance.coriolis_residual(tree, s.q, s.qd[:5])
    with pytest.raises(ShapeError, match="q has 8, qd has 8, tau has 3"):
        acceptance.roundtrip_residual(tree, s.q, s.qd, s.tau[:3])
    for fn in (acceptance.skew_residual, acceptance.passivity_residual):
        with pytest.raises(ShapeError, match="different numbers of states"):
            fn(tree, s.q[:2], s.qd)
    with pytest.raises(ShapeError, match=r"q must be a \(k,\) vector or an \(n, k\) batch"):
        acceptance.hold_residual(tree, s.q[None])


def test_empty_batches_and_zero_states_are_refused():
    m, tree, s = _setup("arm2")
    with pytest.raises(InvalidArgumentError, match="the batch is empty"):
        acceptance.mass_matrix_asymmetry(tree, s.q[:0])
    with pytest.raises(InvalidArgumentError, match="the batch is empty"):
        acceptance.passivity_residual(tree, s.q[:0], s.qd[:0])
    for n in (0, -3, 2.5, True):
        with pytest.raises(InvalidArgumentError, match="number of states must be a whole number >= 1"):
            acceptance.run_checks(m, n)
    with pytest.raises(InvalidArgumentError, match="number of states must be a whole number >= 1, got 0"):
        acceptance.balance_residual(m, acceptance.States(*(x[:0] for x in (s.q, s.qd, s.tau, s.ctrl, s.qfrc_applied,
                                                                    s.xfrc_applied, s.qdd))))


def test_range_violations_name_the_joints_a_trajectory_leaves():
    """The Panda from its keyframe, pushed by 200 N m on its first joint (the issue's example, on physai's simulate, which
    has no limit forces yet), leaves joint1's range (MuJoCo's +-2.8973 rad): a RangeWarning names it with the first state
    outside, where the state before is inside; the keyframe itself is inside every range and gives nothing."""
    m = models.load("franka_emika_panda")
    model, home = engine.from_mujoco(m), m.key_qpos[0].copy()
    push = np.zeros(model.nv)
    push[0] = 200.0
    q = integrators.simulate(model, home, np.zeros(model.nv), 0.002, 300, "implicitfast", qfrc_applied=push, energy=False,
                            constraints=False).q
    with pytest.warns(RangeWarning, match=r"leaves the range of \d+ joints?: 'joint1' at state \d+: .* outside \[-2.897, 2.897\]"):
        found = range_violations(model, q)
    name, k, value, (low, high) = found[0]
    assert name == "joint1" and value > high == -low and low <= q[k - 1, 0] <= high and q[k, 0] == value
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert range_violations(model, home) == []
