"""Lesson 11: physai.dynamics against MuJoCo, computed live, and against the lesson's hand formulas.

Tolerances are at machine-precision scale: 1e-12 absolute on the bundled models; on the robots
1e-12 times the largest magnitude of the compared quantity (at least 1), since their torques reach tens of N m.
"""

import copy

import mujoco
import numpy as np
import pytest

from physai import dynamics as dyn
from physai import models
from physai.lessons import lesson11 as L
from helpers import assert_close

import mj

TOL = 1e-12


def assert_pairs_close(pairs, scaled: bool = False) -> None:
    """Every (ours, reference) pair within TOL of each other: absolute, or scaled by the largest magnitude of all the
    references (at least 1), as one helpers.assert_close over the pairs' entries."""
    ours, refs = zip(*((np.ravel(a), np.ravel(b)) for a, b in pairs))
    assert_close(np.concatenate(ours), np.concatenate(refs), TOL, None if scaled else 1.0)


# ---- the lesson's double pendulum and its hand formulas (physai.lessons.lesson11, parameters read from the model) ----

P = L.PendulumParams.from_model(models.load("double_pendulum"))


@pytest.fixture(scope="module")
def pendulum():
    m = mj.without_constraints(models.load("double_pendulum"))
    states = list(zip(*L.lesson_states()))   # seed 0: q in [-pi, pi], qd in [-5, 5] rad/s, qdd in [-20, 20] rad/s^2
    return m, mujoco.MjData(m), dyn.tree_from_mujoco(m), states


def test_pendulum_centres_of_mass_match_xipos(pendulum):
    m, d, tree, states = pendulum
    pairs = []
    for q, qd, _ in states:
        coms, _, _ = dyn.spatial_tree(tree, q)
        pairs.append((np.array(coms), mj.forward(m, d, q, qd).xipos[1:].copy()))
    assert_pairs_close(pairs)


def test_pendulum_rnea_matches_mj_inverse_and_hand_formula(pendulum):
    m, d, tree, states = pendulum
    ours = [dyn.rnea(tree, q, qd, qdd) for q, qd, qdd in states]
    assert_pairs_close(zip(ours, (mj.inverse(m, d, *s) for s in states)))
    gravity_mj = (mj.forward(m, d, q, 0 * qd).qfrc_bias.copy() for q, qd, _ in states)
    hand = (L.hand_mass_matrix(P, q) @ qdd + L.hand_coriolis(P, q, qd) + g for (q, qd, qdd), g in zip(states, gravity_mj))
    assert_pairs_close(zip(ours, hand))


def test_pendulum_bias_and_gravity_match_qfrc_bias(pendulum):
    m, d, tree, states = pendulum
    assert_pairs_close((dyn.bias(tree, q, qd), mj.forward(m, d, q, qd).qfrc_bias.copy()) for q, qd, _ in states)
    assert_pairs_close((dyn.gravity(tree, q), mj.forward(m, d, q, 0 * qd).qfrc_bias.copy()) for q, qd, _ in states)
    # the velocity part of the bias is the lesson's C(q, qd) qd
    assert_pairs_close((dyn.bias(tree, q, qd) - dyn.gravity(tree, q), L.hand_coriolis(P, q, qd)) for q, qd, _ in states)


def test_pendulum_mass_matrix_matches_mj_fullM_and_hand_formula(pendulum):
    m, d, tree, states = pendulum
    ours = [dyn.mass_matrix(tree, q) for q, _, _ in states]
    assert_pairs_close(zip(ours, (mj.full_mass(m, mj.forward(m, d, q, qd)) for q, qd, _ in states)))
    assert_pairs_close(zip(ours, (L.hand_mass_matrix(P, q) for q, _, _ in states)))


def test_pendulum_forward_dynamics_matches_mj_forward(pendulum):
    m, d, tree, states = pendulum
    pairs, back = [], []
    for q, qd, qdd in states:
        tau = dyn.rnea(tree, q, qd, qdd)
        qacc = dyn.forward_dynamics(tree, q, qd, tau)
        pairs.append((qacc, mj.forward(m, d, q, qd, qfrc_applied=tau).qacc.copy()))
        back.append((qacc, qdd))
    assert_pairs_close(pairs)
    assert_pairs_close(back)                                   # identity: forward after inverse returns qdd


def test_pendulum_energy_matches_mujoco(pendulum):
    m, d, tree, states = pendulum
    assert_pairs_close((dyn.energy(tree, q, qd), mj.forward(m, d, q, qd).energy.sum()) for q, qd, _ in states)


# ---- the hinge-slide test model and the Menagerie robots ----

MODELS = [("hinge_slide", 200, False), ("robotstudio_so101", 50, True), ("franka_emika_panda", 50, True)]


@pytest.fixture(scope="module", params=MODELS, ids=[name for name, _, _ in MODELS])
def robot(request):
    name, count, scaled = request.param
    m = mj.without_constraints(models.load(name))
    return m, mujoco.MjData(m), dyn.tree_from_mujoco(m), list(mj.random_states(m, count, seed=1)), scaled


def test_rnea_matches_mj_inverse(robot):
    m, d, tree, states, scaled = robot
    assert_pairs_close(((dyn.rnea(tree, *s), mj.inverse(m, d, *s)) for s in states), scaled)


def test_bias_and_gravity_match_qfrc_bias(robot):
    m, d, tree, states, scaled = robot
    assert_pairs_close(((dyn.bias(tree, q, qd), mj.forward(m, d, q, qd).qfrc_bias.copy()) for q, qd, _ in states), scaled)
    assert_pairs_close(((dyn.gravity(tree, q), mj.forward(m, d, q, 0 * qd).qfrc_bias.copy()) for q, qd, _ in states), scaled)


def test_mass_matrix_matches_mj_fullM(robot):
    m, d, tree, states, scaled = robot
    pairs = [(dyn.mass_matrix(tree, q), mj.full_mass(m, mj.forward(m, d, q, qd))) for q, qd, _ in states]
    assert_pairs_close(pairs, scaled)
    for M, _ in pairs:                                   # identity: positive definite
        assert np.linalg.eigvalsh(M).min() > 0


def test_forward_dynamics_matches_mj_forward(robot):
    m, d, tree, states, scaled = robot
    pairs = []
    for q, qd, qdd in states:
        d = mj.forward(m, d, q, qd, qfrc_applied=dyn.rnea(tree, q, qd, qdd))
        tau = d.qfrc_applied + d.qfrc_passive + d.qfrc_actuator   # physai's tau is the total applied force
        pairs.append((dyn.forward_dynamics(tree, q, qd, tau), d.qacc.copy()))
    assert_pairs_close(pairs, scaled=True)                     # a linear solve: scale by the accelerations' size


def test_energy_matches_mujoco(robot):
    m, d, tree, states, scaled = robot
    assert_pairs_close(((dyn.energy(tree, q, qd), mj.forward(m, d, q, qd).energy.sum()) for q, qd, _ in states), scaled)


def test_mass_matrix_without_armature_matches_mujoco_without_armature(robot):
    """The rigid-body part of M on its own: both models with armature zeroed (M(tree) - M(bare) = diag(armature)
    holds by construction in mass_matrix, so it is compared against MuJoCo instead)."""
    m, _, tree, states, scaled = robot
    bare_m = copy.deepcopy(m)
    bare_m.dof_armature[:] = 0.0
    bare_d, bare = mujoco.MjData(bare_m), dyn.Tree(tree.bodies, np.zeros(tree.nv), tree.gravity)
    assert_pairs_close(((dyn.mass_matrix(bare, q), mj.full_mass(bare_m, mj.forward(bare_m, bare_d, q, qd))) for q, qd, _ in states[:10]),
                 scaled)


def test_disabled_gravity_is_read_as_zero_gravity():
    m = mj.without_constraints(models.load("hinge_slide"))
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_GRAVITY
    d, tree = mujoco.MjData(m), dyn.tree_from_mujoco(m)
    np.testing.assert_array_equal(tree.gravity, np.zeros(3))
    q, qd, qdd = next(mj.random_states(m, 1))
    np.testing.assert_allclose(dyn.rnea(tree, q, qd, qdd), mj.inverse(m, d, q, qd, qdd), rtol=0, atol=1e-12)


# ---- Step 5: a simulator from physai's forward dynamics ----

def test_semi_implicit_euler_reproduces_mj_step_for_10_s():
    """Released from horizontal, 5000 steps of 2 ms: physai's Euler lands on mj_step and gains the same energy."""
    m = models.load("double_pendulum")
    m.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_ENERGY
    d = mujoco.MjData(m)
    tree = dyn.tree_from_mujoco(m)
    dt, q, qd = m.opt.timestep, np.zeros(2), np.zeros(2)
    E0 = dyn.energy(tree, q, qd)
    ours, theirs = [], []
    for _ in range(5000):
        qd = qd + dt * dyn.forward_dynamics(tree, q, qd, np.zeros(2))   # new speed first...
        q = q + dt * qd                                                # ...then the angle from the new speed
        ours.append(dyn.energy(tree, q, qd) - E0)
        mujoco.mj_step(m, d)
        theirs.append(d.energy.sum() - E0)               # d.energy after mj_step: the state at that step's start
    assert np.abs(q - d.qpos).max() <= 1e-12
    assert np.abs(qd - d.qvel).max() <= 1e-12            # rad/s (1.5e-13 seen; q 4.9e-14)
    # energy: ours after step k is MuJoCo's reading after step k + 1
    np.testing.assert_allclose(ours[:-1], theirs[1:], rtol=0, atol=1e-12)
    releasable = dyn.energy(tree, q * 0, qd * 0) - dyn.energy(tree, np.array([np.pi / 2, 0.0]), np.zeros(2))
    peak = 100 * np.abs(ours).max() / releasable
    assert peak == pytest.approx(100 * np.abs(theirs).max() / releasable, abs=1e-11)   # % (1.5e-13 seen)
    # labeled cross-check against the lesson's published numbers (Result 2, Euler at 2 ms): 4.660 J, +14.357 %
    assert abs(releasable - 4.660) <= 5e-4 and abs(peak - 14.357) <= 5e-4   # half a unit in the last printed digit
