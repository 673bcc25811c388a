"""physai.inverse against mj_inverse and mj_step: torques from a planned motion, replayed open loop.

The motion is lesson 7.2's (seed 003): arm7 from home to home + [0.6, -0.3, 0.4, -0.5, 0.5, 0.4, 0.8] rad
in 2 s, minimum jerk, sampled every 2 ms. Torques from the discrete inverse at the integrator-consistent
states must replay onto every sample within 1e-12 rad under euler, implicitfast and implicit, in physai's
simulator and in mj_step (motors with gear 1: ctrl = torque); RK4 shooting within 2e-12 rad (the lesson's
Challenge asks for 1e-10 rad; 1.0e-13 seen).
Runtime: about 15 s.
"""

import copy

import mujoco
import numpy as np
import pytest

from physai import dynamics as dyn
from physai.trajectories import min_jerk
from physai import engine, forces, models
from physai import integrators as integ
from physai import inverse as inv
from physai.exceptions import ConvergenceError, InvalidArgumentError, InvalidStateError, ShapeError, UnsupportedModelError

from helpers import TENDON_XML, assert_close

SINGLE_STEP = ("euler", "implicitfast", "implicit")
INVDISCRETE = int(mujoco.mjtEnableBit.mjENBL_INVDISCRETE)
DURATION, OFFSET = 2.0, np.array([0.6, -0.3, 0.4, -0.5, 0.5, 0.4, 0.8])


@pytest.fixture(scope="module")
def arm7():
    m = models.load("arm7")
    h, q0 = m.opt.timestep, m.key_qpos[m.key("home").id].copy()
    path = min_jerk(q0, q0 + OFFSET, DURATION)
    n = round(DURATION / h)
    samples = np.array([path(k * h)[0] for k in range(n + 1)])
    return m, dyn.tree_from_mujoco(m), forces.actuators_from_mujoco(m), samples, path


@pytest.fixture(scope="module")
def torques(arm7):
    """The discrete-inverse torques of every single-step integrator, computed once: {name: (n, 7)}."""
    m, tree, acts, samples, _ = arm7
    return {name: inv.trajectory_torques(tree, samples, m.opt.timestep, name, actuators=acts) for name in SINGLE_STEP}


def mj_replay(m, integrator, q0, ctrl) -> np.ndarray:
    """qpos after each mj_step with d.ctrl = ctrl[k] during step k + 1: (n, nq)."""
    m = copy.deepcopy(m)
    m.opt.integrator = integ.MUJOCO_INTEGRATOR[integrator]
    d = mujoco.MjData(m)
    d.qpos[:] = q0
    out = []
    for u in ctrl:
        d.ctrl[:] = u
        mujoco.mj_step(m, d)
        out.append(d.qpos.copy())
    return np.array(out)


def mj_inverse(m, integrator, q, qd, qdd, invdiscrete=True) -> np.ndarray:
    m = copy.deepcopy(m)
    m.opt.integrator = integ.MUJOCO_INTEGRATOR[integrator]
    m.opt.enableflags = (m.opt.enableflags | INVDISCRETE) if invdiscrete else (m.opt.enableflags & ~INVDISCRETE)
    d = mujoco.MjData(m)
    out = []
    for state in zip(q, qd, qdd):
        d.qpos[:], d.qvel[:], d.qacc[:] = state
        mujoco.mj_inverse(m, d)
        out.append(d.qfrc_inverse.copy())
    return np.array(out)


# ---- the discrete inverse and its open-loop replay ----

@pytest.mark.parametrize("name", SINGLE_STEP)
def test_discrete_inverse_equals_mj_inverse_with_invdiscrete(arm7, torques, name):
    m, _, _, samples, _ = arm7
    qd, qdd = inv.consistent_accelerations(samples, m.opt.timestep)
    ref = mj_inverse(m, name, samples[:-1], qd, qdd)
    assert np.abs(torques[name] - ref).max() <= 1e-12 * max(1.0, np.abs(ref).max())


@pytest.mark.parametrize("name", SINGLE_STEP)
def test_torques_replay_onto_the_samples_in_physai(arm7, torques, name):
    m, tree, acts, samples, _ = arm7
    traj = integ.simulate(tree, samples[0], np.zeros(7), m.opt.timestep, len(samples) - 1, name,
                          ctrl=torques[name], actuators=acts, energy=False)
    assert np.abs(traj.q - samples).max() <= 1e-12


@pytest.mark.parametrize("name", SINGLE_STEP)
def test_torques_replay_onto_the_samples_in_mj_step(arm7, torques, name):
    m, _, _, samples, _ = arm7
    assert np.abs(torques[name]).max() < 0.5 * m.actuator_ctrlrange[:, 1].min()      # no ctrl clamping
    assert np.abs(mj_replay(m, name, samples[0], torques[name]) - samples[1:]).max() <= 1e-12


def test_discrete_euler_with_explicit_damping_equals_mj_inverse_with_eulerdamp_disabled(arm7, torques):
    """euler_damping=False inverts MuJoCo's Euler under mjDSBL_EULERDAMP (damping explicit): tau = M qdd + c - passive."""
    m, tree, acts, samples, _ = arm7
    m = copy.deepcopy(m)
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_EULERDAMP
    h, n = m.opt.timestep, 100
    qd, qdd = inv.consistent_accelerations(samples[:n + 1], h)
    tau = inv.trajectory_torques(tree, samples[:n + 1], h, "euler", actuators=acts, euler_damping=False)
    ref = mj_inverse(m, "euler", samples[:n], qd, qdd)
    assert np.abs(tau - ref).max() <= 1e-12 * max(1.0, np.abs(ref).max())
    assert np.abs(tau - torques["euler"][:n]).max() > 1e-4            # not the default's implicit damping
    assert np.abs(mj_replay(m, "euler", samples[0], tau) - samples[1:n + 1]).max() <= 1e-12
    traj = integ.simulate(tree, samples[0], np.zeros(7), h, n, "euler", qfrc_applied=tau, energy=False,
                          euler_damping=False)
    assert np.abs(traj.q - samples[:n + 1]).max() <= 1e-12


def test_analytic_accelerations_do_not_replay(arm7):
    """The lesson's point: the continuous inverse of the planned (q, qd, qdd) drifts off open loop (0.5 s shown)."""
    m, tree, _, samples, path = arm7
    n, h = 250, m.opt.timestep
    tau = np.array([inv.inverse_dynamics(tree, *path(k * h)) for k in range(n)])
    drift = np.abs(mj_replay(m, "euler", samples[0], tau) - samples[1:n + 1]).max()
    assert 1e-5 < drift < 1e-2


def test_continuous_inverse_equals_mj_inverse(arm7):
    m, tree, acts, _, _ = arm7
    rng = np.random.default_rng(3)
    q = rng.uniform(m.jnt_range[:, 0], m.jnt_range[:, 1], (20, 7))
    qd, qdd = rng.normal(size=(20, 7)), rng.normal(scale=5.0, size=(20, 7))
    ours = np.array([inv.inverse_dynamics(tree, *s) for s in zip(q, qd, qdd)])
    assert np.abs(ours - mj_inverse(m, "euler", q, qd, qdd, invdiscrete=False)).max() <= 1e-12 * max(1, np.abs(ours).max())


@pytest.mark.parametrize("name", SINGLE_STEP)
def test_discrete_inverse_on_the_panda_with_servos_and_a_finger_tendon(name):
    """Position servos (kv enters D), a tendon coupling the fingers (dropped from D, as in MuJoCo), random states.

    Most servos sit at their force limit in these states; a clamped actuator's kv then leaves D in the forward
    step (mj_step). mj_inverse decides the clamping from d.actuator_force, which only mj_forward computes,
    so it is called first: otherwise MuJoCo keeps kv of saturated servos and no longer inverts its own step.
    """
    m = models.load("franka_emika_panda")
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    m.opt.integrator = integ.MUJOCO_INTEGRATOR[name]
    tree, acts = dyn.tree_from_mujoco(m), forces.actuators_from_mujoco(m)
    rng = np.random.default_rng(5)
    lo, hi, h = m.jnt_range[:, 0], m.jnt_range[:, 1], m.opt.timestep
    ctrl = m.key_ctrl[m.key("home").id]
    d = mujoco.MjData(m)
    for _ in range(10):
        q, qd, a = rng.uniform(lo, hi), rng.normal(size=9), rng.normal(scale=3.0, size=9)
        ours = inv.inverse_dynamics(tree, q, qd, a, h, name, acts, ctrl)
        d.ctrl[:], d.qpos[:], d.qvel[:], d.qfrc_applied[:] = ctrl, q, qd, 0.0
        mujoco.mj_forward(m, d)
        force = d.qfrc_actuator.copy()
        m.opt.enableflags |= INVDISCRETE
        d.qacc[:] = a
        mujoco.mj_inverse(m, d)
        m.opt.enableflags &= ~INVDISCRETE
        assert np.abs(ours - d.qfrc_inverse).max() <= 1e-12 * max(1.0, np.abs(ours).max())
        d.qfrc_applied[:] = ours - force                  # the actuators add their share: mj_step gives qdd = a
        mujoco.mj_step(m, d)
        # d.qvel rounds by eps |qd| and the difference divides by h = 2 ms: ~3e-13 (6.8e-13 seen); was 1e-9
        assert np.abs((d.qvel - qd) / h - a).max() <= 2e-11


# ---- RK4: no discrete inverse, shooting instead ----

def test_rk4_has_no_discrete_inverse_and_points_to_shooting(arm7):
    m, tree, _, samples, _ = arm7
    with pytest.raises(UnsupportedModelError, match="rk4.*rk4_shooting"):
        inv.inverse_dynamics(tree, samples[0], np.zeros(7), np.zeros(7), m.opt.timestep, "rk4")


def test_rk4_shooting_replays_onto_the_samples(arm7, torques):
    """The Challenge, on the first 0.5 s (250 steps): replayed in physai's rk4 and in MuJoCo's RK4."""
    m, tree, acts, samples, _ = arm7
    n, h = 250, m.opt.timestep
    res = inv.rk4_shooting(tree, samples[:n + 1], h, actuators=acts)
    assert res.error.max() <= 1e-13 and res.iterations.max() <= 3
    traj = integ.simulate(tree, samples[0], np.zeros(7), h, n, "rk4", ctrl=res.tau, actuators=acts, energy=False)
    assert np.abs(traj.q - res.q).max() <= 1e-13                         # the replay is the shooting's own run (rad)
    assert np.abs(traj.q - samples[:n + 1]).max() <= 2e-12                              # rad (1.0e-13 seen)
    assert np.abs(mj_replay(m, "rk4", samples[0], res.tau) - samples[1:n + 1]).max() <= 2e-12   # (1.0e-13 seen)
    # the RK4 torques differ from Euler's at the 1e-3 N m level: the integrator is part of the plan
    assert 1e-5 < np.abs(res.tau - torques["euler"][:n]).max() < 1e-1


def test_rk4_shooting_with_finite_difference_jacobian_agrees(arm7):
    m, tree, acts, samples, _ = arm7
    a = inv.rk4_shooting(tree, samples[:11], m.opt.timestep, actuators=acts)
    b = inv.rk4_shooting(tree, samples[:11], m.opt.timestep, actuators=acts, jacobian="fd")
    assert b.error.max() <= 1e-13 and b.iterations.max() <= 2
    # both stop once the replay is within 1e-13 rad; a torque moves q by ~h^2 / M per N m, so torques that meet
    # that stop can differ by ~1e-13 * M / h^2 ~ 1e-7 N m (4.2e-7 seen): bound 1e-6
    assert np.abs(a.tau - b.tau).max() <= 1e-6


# ---- consistent accelerations ----

def test_consistent_accelerations_land_semi_implicit_euler_on_the_samples():
    rng = np.random.default_rng(0)
    Q, h = np.cumsum(rng.normal(size=(50, 3)), axis=0) * 1e-3, 0.002
    qd, qdd = inv.consistent_accelerations(Q, h, qd0=[0.1, 0.0, -0.2])
    assert qd.shape == qdd.shape == (49, 3)
    # second differences divide rounding of eps |Q| by h^2 = 4e-6: ~1e-13 (4.5e-13 seen, values up to 950); was 1e-9
    np.testing.assert_allclose(qdd[1:], (Q[2:] - 2 * Q[1:-1] + Q[:-2]) / h**2, rtol=0, atol=1e-11)
    q, v = Q[0], np.array([0.1, 0.0, -0.2])
    for k in range(49):
        v = v + h * qdd[k]
        q = q + h * v
        assert np.abs(q - Q[k + 1]).max() <= 1e-15


@pytest.mark.parametrize("key, name", [("unitree_g1", None), ("tendon", None), ("franka_emika_panda", "implicitfast"),
                                       ("franka_emika_panda", "implicit"), ("franka_emika_panda", "euler")])
def test_inverse_dynamics_of_n_states_equals_one_state_at_a_time(key, name):
    """N states in one call: each row as the call on that state alone (rnea batched, chunk sums in numpy's order: 1e-12
    of the forces' size); a single q shared by a batch of qd and qdd; shapes of the inputs' batch."""
    m = mujoco.MjModel.from_xml_string(TENDON_XML) if key == "tendon" else models.load(key)
    model = engine.from_mujoco(m)
    q, qd = engine.random_states(model, 5, 1)
    qdd = np.random.default_rng(2).normal(scale=3.0, size=(5, model.nv))
    dt, ctrl = (None, None) if name is None else (0.002, m.key_ctrl[0])
    batched = inv.inverse_dynamics(model, q, qd, qdd, dt, name, ctrl=ctrl)
    assert batched.shape == (5, model.nv)
    loop = np.array([inv.inverse_dynamics(model, *s, dt, name, ctrl=ctrl) for s in zip(q, qd, qdd)])
    assert_close(batched, loop, 1e-12, per_state=True, what="batched vs one state at a time")
    shared = inv.inverse_dynamics(model, q[0], qd, qdd, dt, name, ctrl=ctrl)
    assert_close(shared[1], inv.inverse_dynamics(model, q[0], qd[1], qdd[1], dt, name, ctrl=ctrl), 1e-12, what="shared q")
    assert inv.inverse_dynamics(model, q[0], qd[0], qdd[0], dt, name, ctrl=ctrl).shape == (model.nv,)


# ---- bad input ----

def test_discrete_inverse_needs_dt_and_integrator(arm7):
    _, tree, _, samples, _ = arm7
    with pytest.raises(InvalidArgumentError, match="needs both dt and integrator; dt is missing"):
        inv.inverse_dynamics(tree, samples[0], np.zeros(7), np.zeros(7), integrator="euler")
    with pytest.raises(InvalidArgumentError, match="integrator is missing"):
        inv.inverse_dynamics(tree, samples[0], np.zeros(7), np.zeros(7), dt=0.002)
    with pytest.raises(InvalidArgumentError, match="unknown integrator 'verlet'"):
        inv.inverse_dynamics(tree, samples[0], np.zeros(7), np.zeros(7), 0.002, "verlet")
    with pytest.raises(InvalidArgumentError, match="timestep dt is -0.002"):
        inv.inverse_dynamics(tree, samples[0], np.zeros(7), np.zeros(7), -0.002, "euler")
    with pytest.raises(ShapeError, match="qdd has 6 entries, the model needs 7"):
        inv.inverse_dynamics(tree, samples[0], np.zeros(7), np.zeros(6))
    with pytest.raises(ShapeError, match="qdd has 3 states but q has 4; batched inputs need the same number"):
        inv.inverse_dynamics(tree, samples[:4], np.zeros((4, 7)), np.zeros((3, 7)))
    with pytest.raises(ShapeError, match=r"q must have shape \(7,\) or \(N, 7\)"):
        inv.inverse_dynamics(tree, samples[None, :4], np.zeros(7), np.zeros(7))


def test_ctrl_without_actuators_is_refused_not_ignored(arm7):
    m, tree, acts, samples, _ = arm7
    for dt, name in ((None, None), (0.002, "euler"), (0.002, "implicit")):
        with pytest.raises(InvalidArgumentError, match="ctrl was given without actuators"):
            inv.inverse_dynamics(tree, samples[0], np.zeros(7), np.zeros(7), dt, name, ctrl=np.ones(7))
    for name in ("euler", "rk4"):
        with pytest.raises(InvalidArgumentError, match="ctrl was given without actuators"):
            inv.trajectory_torques(tree, samples[:4], 0.002, name, ctrl=np.ones(7))
    arm2 = dyn.tree_from_mujoco(models.load("arm2"))
    with pytest.raises(ShapeError, match="the actuators act on 7 dofs"):
        inv.trajectory_torques(arm2, samples[:4, :2], 0.002, "implicit", actuators=acts)


@pytest.mark.parametrize("option, value", [("max_iter", 2.5), ("max_iter", -1), ("max_iter", True), ("max_iter", "3"),
                                           ("tol", 0.0), ("tol", -1e-9), ("tol", np.nan), ("tol", np.inf), ("tol", "tiny"),
                                           ("tol", None)])
def test_bad_shooting_options_are_refused(arm7, option, value):
    """max_iter = 2.5 used to loop forever (n == max_iter never held); tol <= 0 gave a misleading ConvergenceError."""
    m, tree, acts, samples, _ = arm7
    name = "max_iter must be a whole number >= 0" if option == "max_iter" else "tol .*finite number > 0"
    with pytest.raises(InvalidArgumentError, match=name):
        inv.rk4_shooting(tree, samples[:3], m.opt.timestep, actuators=acts, **{option: value})


def test_zero_iterations_accept_only_a_first_guess_within_tol(arm7):
    m, tree, acts, samples, _ = arm7
    loose = inv.rk4_shooting(tree, samples[:4], m.opt.timestep, actuators=acts, tol=1e-6, max_iter=0)
    assert loose.iterations.max() == 0 and loose.error.max() <= 1e-6
    with pytest.raises(ConvergenceError, match="after 0 Newton iterations"):
        inv.rk4_shooting(tree, samples[:4], m.opt.timestep, actuators=acts, tol=1e-15, max_iter=0)


def test_bad_samples_are_named(arm7):
    _, tree, _, samples, _ = arm7
    with pytest.raises(ShapeError, match=r"samples must be an \(N \+ 1, nv\) array .* got shape \(1, 7\)"):
        inv.consistent_accelerations(samples[:1], 0.002)
    with pytest.raises(ShapeError, match="qd0 has 2 entries, the model needs 7"):
        inv.consistent_accelerations(samples, 0.002, qd0=[0.0, 0.0])
    with pytest.raises(InvalidStateError, match=r"samples\[3, 2\] is nan"):
        bad = samples[:5].copy()
        bad[3, 2] = np.nan
        inv.trajectory_torques(tree, bad, 0.002)
    with pytest.raises(ShapeError, match="samples have 6 columns, the model needs nq = 7"):
        inv.rk4_shooting(tree, samples[:3, :6], 0.002)
    with pytest.raises(InvalidArgumentError, match="unknown jacobian 'exact'"):
        inv.rk4_shooting(tree, samples[:3], 0.002, jacobian="exact")


def test_infeasible_shooting_says_so(arm7):
    """One Newton iteration cannot reach a sample 1 rad away at 1e-13: the error names the step and the cure."""
    _, tree, _, samples, _ = arm7
    jump = samples[:3].copy()
    jump[2] += 1.0
    with pytest.raises(ConvergenceError, match="step 1 did not reach the sample.*after 1 Newton iterations"):
        inv.rk4_shooting(tree, jump, 0.002, max_iter=1)
