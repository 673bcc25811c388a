"""physai.integrators against mj_step, computed live: MuJoCo's four integrators reproduced without MuJoCo.

Each integrator runs the lesson's double pendulum for the full 10 s (5000 steps of 2 ms) and must stay
within 1e-12 rad of mj_step, without damping and with damping 0.05 on both joints (6.6e-14 rad seen: the chaotic
swing amplifies last-bit differences, so the bound keeps a 15x margin for other CPUs and BLAS kernels); the Panda
(constraints off, home ctrl) 2 s. The energy is checked against d.energy with MuJoCo's timing: computed at the start of each mj_step
(for RK4: at its last stage). Runtime: about 30 s, most of it in the pure-Python dynamics.
"""

import copy
import dataclasses
import warnings
import re
from functools import partial

import mujoco
import numpy as np
import pytest

from physai import dynamics as dyn
from physai import collision, constraints, derivatives, engine, forces, inverse, joints, models
from physai.engine import constraint, forward, native, smooth, solver
from physai import integrators as integ
from physai.exceptions import (ConvergenceWarning, DivergenceError, InvalidArgumentError, InvalidStateError, ShapeError,
                               StiffRowWarning, TrajectoryFileError, UnsupportedModelError)

import mj
from helpers import assert_close, run
from scenes import SIMPLE_COUPLINGS, SIMPLE_FREE_BODY, SIMPLE_JOINTS, capsule_beside_a_bare_mesh, simple_body

TOL = 1e-12                                             # rad, over the whole run (6.6e-14 seen)


def run_mujoco(m, steps, q0=None, ctrl=None, qfrc_applied=None, xfrc_applied=None):
    """mj_step `steps` times: qpos (steps + 1, nq), qvel (steps + 1, nv), d.energy.sum() after each step (steps,)."""
    d = mujoco.MjData(m)
    if q0 is not None:
        d.qpos[:] = q0
    if ctrl is not None:
        d.ctrl[:] = ctrl
    if qfrc_applied is not None:
        d.qfrc_applied[:] = qfrc_applied
    if xfrc_applied is not None:
        d.xfrc_applied[:] = xfrc_applied
    Q, V, E = [d.qpos.copy()], [d.qvel.copy()], []
    for _ in range(steps):
        mujoco.mj_step(m, d)
        Q.append(d.qpos.copy())
        V.append(d.qvel.copy())
        E.append(d.energy.sum())
    return np.array(Q), np.array(V), np.array(E)


def pendulum(damping=0.0, integrator="euler"):
    m = models.load("double_pendulum")
    m.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_ENERGY
    m.opt.integrator = integ.MUJOCO_INTEGRATOR[integrator]
    m.dof_damping[:] = damping
    return m, dyn.tree_from_mujoco(m)


# ---- the double pendulum, released from horizontal ----

@pytest.fixture(scope="module", params=integ.INTEGRATORS)
def swing(request):
    """10 s of the frictionless pendulum under one integrator: (name, physai Trajectory, MuJoCo qpos, qvel, energy)."""
    name = request.param
    m, tree = pendulum(0.0, name)
    traj = integ.simulate(tree, np.zeros(2), np.zeros(2), m.opt.timestep, 5000, name)
    return name, tree, traj, *run_mujoco(m, 5000)


def test_pendulum_10_s_reproduces_mj_step(swing):
    name, _, traj, Q, V, _ = swing
    assert traj.q.shape == (5001, 2) and traj.t[-1] == pytest.approx(10.0)
    assert np.abs(traj.q - Q).max() <= TOL, f"{name}: {np.abs(traj.q - Q).max():.2e} rad"
    assert np.abs(traj.qd - V).max() <= 10 * TOL                    # rad/s (7.5e-13 seen)


def test_pendulum_energy_is_d_energy_of_the_step_start(swing):
    """d.energy after mj_step k + 1 is energy[k]: the state that step started from (RK4: see the next test)."""
    name, tree, traj, Q, V, E = swing
    if name != "rk4":
        np.testing.assert_allclose(traj.energy[:-1], E, rtol=0, atol=1e-12)      # J (5.2e-14 seen)
    # labeled cross-check against the lesson's published Result 2 at 2 ms (max |E - E0| / final E - E0 in % of
    # 4.660 J); the comparison with MuJoCo's live d.energy above is the test proper
    releasable = traj.energy[0] - dyn.energy(tree, np.array([np.pi / 2, 0.0]), np.zeros(2))   # 4.660 J
    drift = 100 * (traj.energy[:-1] - traj.energy[0]) / releasable
    table = {"euler": (14.357, 14.355), "implicitfast": (14.357, 14.355), "implicit": (11.352, -11.352),
             "rk4": (0.000, -0.000)}[name]
    half = 5e-4                                            # half a unit in the lesson's last printed digit
    assert abs(np.abs(drift).max() - table[0]) <= half and abs(drift[-1] - table[1]) <= half


def test_rk4_d_energy_belongs_to_its_last_stage():
    """MuJoCo evaluates the energy in each RK4 stage's mj_forward: after mj_step it holds stage 4's energy."""
    m, tree = pendulum(0.05, "rk4")
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = [0.3, -0.4], [1.0, 2.0]
    q, qd = d.qpos.copy(), d.qvel.copy()
    for _ in range(5):
        stages = integ.rk4_stages(tree, q, qd, m.opt.timestep)
        q, qd = integ.step(tree, q, qd, m.opt.timestep, "rk4")
        mujoco.mj_step(m, d)
        assert abs(d.energy.sum() - dyn.energy(tree, *stages[3][:2])) <= 1e-12
        assert abs(d.energy.sum() - dyn.energy(tree, q, qd)) > 1e-9          # not the end state's


@pytest.mark.parametrize("name", integ.INTEGRATORS)
def test_damped_pendulum_reproduces_mj_step(name):
    """Damping 0.05 N m s/rad on both joints, 10 s: Euler's implicit damping, implicit's D = -B - 2C, RK4's explicit."""
    m, tree = pendulum(0.05, name)
    assert (tree.damping == 0.05).all()
    traj = integ.simulate(tree, np.zeros(2), np.zeros(2), m.opt.timestep, 5000, name)
    Q, _, E = run_mujoco(m, 5000)
    assert np.abs(traj.q - Q).max() <= TOL
    if name != "rk4":
        np.testing.assert_allclose(traj.energy[:-1], E, rtol=0, atol=1e-12)      # J (8.9e-15 seen)


def test_with_damping_implicitfast_still_equals_euler():
    """The lesson's Hard exercise: both solve (M + h B) a = f, so they stay identical, in physai and in MuJoCo."""
    runs = {}
    for name in ("euler", "implicitfast"):
        m, tree = pendulum(0.05, name)
        runs[name] = integ.simulate(tree, np.zeros(2), np.zeros(2), m.opt.timestep, 300, name, energy=False).q, \
            run_mujoco(m, 300)[0]
    for physai_or_mujoco in (0, 1):       # the same equations in two code paths: equal within rounding
        assert np.abs(runs["euler"][physai_or_mujoco] - runs["implicitfast"][physai_or_mujoco]).max() <= 1e-13


def test_applied_forces_enter_like_qfrc_and_xfrc_applied():
    """Constant qfrc_applied and xfrc_applied (a wrench on link 2), 100 steps under each integrator."""
    m, tree = pendulum(0.05)
    xfrc = np.zeros((m.nbody, 6))
    xfrc[2] = [0.4, 0.0, 2.0, 0.0, 0.1, 0.0]
    for name in integ.INTEGRATORS:
        m.opt.integrator = integ.MUJOCO_INTEGRATOR[name]
        traj = integ.simulate(tree, np.zeros(2), np.zeros(2), m.opt.timestep, 100, name, qfrc_applied=[0.5, -0.2],
                              xfrc_applied=xfrc[1:], energy=False)
        Q = run_mujoco(m, 100, qfrc_applied=[0.5, -0.2], xfrc_applied=xfrc)[0]
        assert np.abs(traj.q - Q).max() <= TOL, name


def test_per_step_inputs_act_during_their_step():
    """Row k of a per-step qfrc_applied acts from state k to k + 1, as d.qfrc_applied does in the (k+1)-th mj_step."""
    m, tree = pendulum()
    tau = np.column_stack([np.sin(np.arange(100) * 0.1), np.cos(np.arange(100) * 0.07)])
    traj = integ.simulate(tree, np.zeros(2), np.zeros(2), m.opt.timestep, 100, "euler", qfrc_applied=tau, energy=False)
    d = mujoco.MjData(m)
    for k in range(100):
        d.qfrc_applied[:] = tau[k]
        mujoco.mj_step(m, d)
    assert np.abs(traj.q[-1] - d.qpos).max() <= 1e-13
    q, qd = integ.step(tree, np.zeros(2), np.zeros(2), m.opt.timestep, "euler", qfrc_applied=tau[0])
    assert np.abs(q - traj.q[1]).max() <= 1e-15 and np.abs(qd - traj.qd[1]).max() <= 1e-13      # rad, rad/s


def test_smooth_force_is_qfrc_smooth():
    """f = actuator + passive + applied - bias, the right-hand side every integrator starts from (arm7, damped)."""
    m = models.load("arm7")
    tree, acts = dyn.tree_from_mujoco(m), forces.actuators_from_mujoco(m)
    rng = np.random.default_rng(2)
    d = mujoco.MjData(m)
    for _ in range(5):
        d.qpos[:], d.qvel[:] = rng.uniform(m.jnt_range[:, 0], m.jnt_range[:, 1]), rng.normal(size=7)
        d.ctrl[:], d.qfrc_applied[:] = rng.uniform(-10, 10, 7), rng.normal(size=7)
        mujoco.mj_forward(m, d)
        f = integ.smooth_force(tree, d.qpos, d.qvel, d.ctrl, acts, d.qfrc_applied)
        assert np.abs(f - d.qfrc_smooth).max() <= 1e-12 * max(1.0, np.abs(f).max())


# ---- arm7 with MuJoCo's eulerdamp disable flag: damping explicit in Euler ----

def test_euler_without_implicit_damping_reproduces_mjDSBL_EULERDAMP():
    """euler_damping=False against mj_step with mjDSBL_EULERDAMP on arm7 (damping 0.5, motors): one step and 100."""
    m = models.load("arm7")
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_EULERDAMP | mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    tree, acts = dyn.tree_from_mujoco(m), forces.actuators_from_mujoco(m)
    assert (tree.damping > 0).all() and m.opt.integrator == integ.MUJOCO_INTEGRATOR["euler"]
    rng = np.random.default_rng(1)
    q0, qd0, ctrl = m.key_qpos[m.key("home").id], rng.uniform(-2, 2, 7), rng.uniform(-5, 5, 7)
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:], d.ctrl[:] = q0, qd0, ctrl
    mujoco.mj_step(m, d)
    q1, qd1 = integ.step(tree, q0, qd0, m.opt.timestep, "euler", ctrl=ctrl, actuators=acts, euler_damping=False)
    assert np.abs(q1 - d.qpos).max() <= 1e-15 and np.abs(qd1 - d.qvel).max() <= 1e-13
    implicit = integ.step(tree, q0, qd0, m.opt.timestep, "euler", ctrl=ctrl, actuators=acts)[1]
    assert np.abs(implicit - d.qvel).max() > 1e-4                     # the default (implicit damping) differs
    traj = integ.simulate(tree, q0, qd0, m.opt.timestep, 100, "euler", ctrl=ctrl, actuators=acts, energy=False,
                          euler_damping=False)
    for _ in range(99):
        mujoco.mj_step(m, d)
    assert np.abs(traj.q[-1] - d.qpos).max() <= TOL and np.abs(traj.qd[-1] - d.qvel).max() <= 100 * TOL
    with pytest.raises(InvalidArgumentError, match="euler_damping must be True or False"):
        integ.step(tree, q0, qd0, m.opt.timestep, euler_damping="no")


# ---- the Panda: 9 dof, position servos, a tendon actuator on the fingers ----

@pytest.fixture(scope="module")
def panda():
    m = models.load("franka_emika_panda")
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    m.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_ENERGY
    key = m.key("home").id
    return m, m.key_qpos[key].copy(), m.key_ctrl[key].copy()


@pytest.mark.parametrize("name", integ.INTEGRATORS)
def test_panda_2_s_with_home_ctrl_reproduces_mj_step(panda, name):
    """Released at home with the home ctrl: the servos hold the arm against gravity, it sags and rings.

    Under euler and rk4 the servos' velocity gain kv is set to 0: kv h / M reaches 3.7 on the wrist at 2 ms,
    so explicit integration of it is unstable (MuJoCo itself chatters between the force limits, a chaotic
    motion that amplifies 1e-15 differences to 1e-4 rad in 2 s). implicit and implicitfast keep kv: it is
    the actuator derivative they integrate implicitly.
    """
    m0, q0, ctrl = panda
    m = copy.deepcopy(m0)
    m.opt.integrator = integ.MUJOCO_INTEGRATOR[name]
    if name in ("euler", "rk4"):
        m.actuator_biasprm[:, 2] = 0.0
    tree, acts = dyn.tree_from_mujoco(m), forces.actuators_from_mujoco(m)
    with_energy, steps = name == "implicitfast", 1000
    traj = integ.simulate(tree, q0, np.zeros(m.nv), m.opt.timestep, steps, name, ctrl=ctrl, actuators=acts,
                          energy=with_energy)
    Q, _, E = run_mujoco(m, steps, q0, ctrl)
    assert np.abs(Q - q0).max() > 1e-3                                  # it does move
    assert np.abs(traj.q - Q).max() <= TOL, f"{name}: {np.abs(traj.q - Q).max():.2e} rad"
    if with_energy:
        np.testing.assert_allclose(traj.energy[:-1], E, rtol=0, atol=1e-9)


# ---- bad input ----

@pytest.fixture(scope="module")
def tree():
    return pendulum()[1]


@pytest.mark.parametrize("bad", ["Euler2", "semi-implicit", 5, -1, True, 3.0, [0]])
def test_unknown_integrator_is_named(tree, bad):
    with pytest.raises(InvalidArgumentError, match=r"unknown integrator .*expected one of 'euler', 'rk4', 'implicit', "
                                                r"'implicitfast', 'discrete'"):
        integ.step(tree, np.zeros(2), np.zeros(2), 0.002, bad)


def test_integrator_names_ignore_case(tree):
    assert np.array_equal(integ.step(tree, [0.1, 0], [0, 0], 0.002, "RK4")[0],
                          integ.step(tree, [0.1, 0], [0, 0], 0.002, "rk4")[0])


@pytest.mark.parametrize("dt", [0.0, -0.002, np.nan, np.inf, "fast", True])
def test_bad_timestep_is_refused(tree, dt):
    with pytest.raises(InvalidArgumentError, match=r"timestep dt .*finite number > 0"):
        integ.simulate(tree, np.zeros(2), np.zeros(2), dt, 10)


def test_ctrl_of_wrong_length_names_nu():
    m = models.load("arm7")
    t, acts = dyn.tree_from_mujoco(m), forces.actuators_from_mujoco(m)
    with pytest.raises(ShapeError, match=r"ctrl has 3 entries, the model needs 7"):
        integ.step(t, m.qpos0, np.zeros(7), 0.002, "euler", ctrl=np.zeros(3), actuators=acts)
    with pytest.raises(ShapeError, match=r"ctrl has 6 entries per step, the model needs 7"):
        integ.simulate(t, m.qpos0, np.zeros(7), 0.002, 4, "rk4", ctrl=np.zeros((4, 6)), actuators=acts)
    with pytest.raises(ShapeError, match=r"ctrl must have shape \(4, 7\)"):
        integ.simulate(t, m.qpos0, np.zeros(7), 0.002, 4, "rk4", ctrl=np.zeros((5, 7)), actuators=acts)


def test_ctrl_without_actuators_says_what_to_pass(tree):
    """One check everywhere ctrl is taken (it used to be ignored by velocity_derivative and the inverse)."""
    with pytest.raises(InvalidArgumentError, match="ctrl was given without actuators.*actuators_from_mujoco"):
        integ.step(tree, np.zeros(2), np.zeros(2), 0.002, ctrl=[1.0])
    with pytest.raises(InvalidArgumentError, match="ctrl was given without actuators"):
        integ.simulate(tree, np.zeros(2), np.zeros(2), 0.002, 3, ctrl=[1.0])
    with pytest.raises(InvalidArgumentError, match="ctrl was given without actuators"):
        integ.simulate(tree, np.zeros(2), np.zeros(2), 0.002, 0, ctrl=[1.0])
    for name in ("euler", "implicit"):
        with pytest.raises(InvalidArgumentError, match="ctrl was given without actuators"):
            integ.velocity_derivative(tree, np.zeros(2), np.zeros(2), name, ctrl=[1.0])
    with pytest.raises(InvalidArgumentError, match="ctrl was given without actuators"):
        integ.smooth_force(tree, np.zeros(2), np.zeros(2), ctrl=[1.0])


@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_an_empty_ctrl_on_a_model_without_actuators_is_no_ctrl(backend):
    """step_result(ctrl=np.zeros(0)) (one state, or (N, 0) for N) on a model with nu = 0 steps as without ctrl, as
    mj_step with its empty d.ctrl, on both engines (the NumPy engine refused it; within 1e-12 of mj_step)."""
    m = mujoco.MjModel.from_xml_string('<mujoco><worldbody><body><joint axis="0 1 0"/><geom size=".1" fromto="0 0 0 .3 0 0"'
                                       ' type="capsule"/></body></worldbody></mujoco>')
    d = mujoco.MjData(m)
    d.qvel[:] = 1.0
    q, qd = d.qpos.copy(), d.qvel.copy()
    mujoco.mj_step(m, d)
    model = engine.from_mujoco(m)
    one = run(backend, integ.step_result, model, q, qd, ctrl=np.zeros(0))
    two = run(backend, integ.step_result, model, np.stack([q, q]), np.stack([qd, qd]), ctrl=np.zeros((2, 0)))
    assert np.abs(one.qd - d.qvel).max() < 1e-12 and np.abs(two.qd - d.qvel).max() < 1e-12
    assert np.abs(one.q - d.qpos).max() < 1e-12 and np.abs(two.q - d.qpos).max() < 1e-12
    with pytest.raises(InvalidArgumentError, match="ctrl was given without actuators"):
        run(backend, integ.step_result, model, q, qd, ctrl=np.zeros(1))


def test_actuators_of_another_model_are_named(tree):
    """arm7's actuators on the 2-dof pendulum: the message names both dof counts, not "q has 2 entries"."""
    acts7 = forces.actuators_from_mujoco(models.load("arm7"))
    with pytest.raises(ShapeError, match=r"the actuators act on 7 dofs \(actuators.nv\), the model has nv = 2"):
        integ.step(tree, np.zeros(2), np.zeros(2), 0.002, actuators=acts7)
    with pytest.raises(ShapeError, match="the actuators act on 7 dofs"):
        integ.simulate(tree, np.zeros(2), np.zeros(2), 0.002, 2, "rk4", ctrl=np.zeros(7), actuators=acts7)
    with pytest.raises(ShapeError, match="the actuators act on 7 dofs"):
        integ.velocity_derivative(tree, np.zeros(2), np.zeros(2), "implicit", actuators=acts7)
    with pytest.raises(InvalidArgumentError, match="actuators must be physai.forces.Actuators.*got dict"):
        integ.step(tree, np.zeros(2), np.zeros(2), 0.002, actuators={"moment": np.eye(2)})


@pytest.mark.parametrize("steps", [-1, 2.5, True, "10"])
def test_bad_step_count_is_refused(tree, steps):
    with pytest.raises(InvalidArgumentError, match="steps must be a whole number >= 0"):
        integ.simulate(tree, np.zeros(2), np.zeros(2), 0.002, steps)


def test_bad_state_and_forces_are_named(tree):
    with pytest.raises(ShapeError, match="q0 has 3 entries, the model needs 2"):
        integ.simulate(tree, np.zeros(3), np.zeros(2), 0.002, 3)
    with pytest.raises(InvalidStateError, match=r"qd\[1\] is nan"):
        integ.step(tree, np.zeros(2), [0.0, np.nan], 0.002)
    with pytest.raises(ShapeError, match="qfrc_applied has 3 entries, the model needs 2"):
        integ.step(tree, np.zeros(2), np.zeros(2), 0.002, qfrc_applied=np.zeros(3))


def test_zero_steps_give_the_initial_state(tree):
    traj = integ.simulate(tree, [0.1, 0.2], [0.0, 1.0], 0.002, 0, "implicit")
    assert traj.q.tolist() == [[0.1, 0.2]] and traj.energy.shape == (1,)


# ---- every joint type: a free-floating humanoid and a spinning top against mj_step ----

TOP = """<mujoco><option timestep="0.001" gravity="0 0 -9.81"/><worldbody>
<body name="top" pos="0 0 0.1"><joint type="ball" pos="0 0 -0.1" damping="0.01"/>
<geom type="cylinder" size="0.1 0.02" mass="1"/><geom type="capsule" fromto="0 0 -0.1 0 0 0" size="0.01" mass="0.1"/>
</body></worldbody></mujoco>"""


def _free_floating_h1():
    """The H1 without contacts or gravity, 1 ms steps, in a random pose turning and moving."""
    m = models.load("unitree_h1")
    m.opt.gravity[:] = 0.0
    m.opt.timestep = 0.001
    model = engine.from_mujoco(m)
    q, qd = engine.random_states(model, 1, 5, qd_max=0.5)
    return m, q[0], qd[0]


def _spinning_top():
    """A top on a ball joint (anchor at its tip, joint damping), tilted and spinning at 30 rad/s."""
    m = mujoco.MjModel.from_xml_string(TOP)
    q0 = np.array([0.99, 0.1, 0.0, 0.0])
    return m, q0 / np.linalg.norm(q0), np.array([0.0, 0.0, 30.0])


SYSTEMS = {"free_floating_h1": _free_floating_h1, "spinning_top": _spinning_top}


@pytest.mark.parametrize("integrator", ["euler", "implicitfast", "implicit", "rk4"])
@pytest.mark.parametrize("system", SYSTEMS)
def test_free_and_ball_joints_follow_mj_step_for_1_s(system, integrator):
    """1000 steps of 1 ms against mj_step (constraints off): within 1e-9 in q and qd (RK4 included: its stages carry
    quaternion velocities through dexp^-1, Runge-Kutta-Munthe-Kaas, as MuJoCo 4 does; 6.9e-15 seen on the top)."""
    m, q0, qd0 = SYSTEMS[system]()
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    m.opt.integrator = integ.MUJOCO_INTEGRATOR[integrator]
    run = integ.simulate(engine.from_mujoco(m), q0, qd0, m.opt.timestep, 1000, integrator, energy=False)
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = q0, qd0
    for _ in range(1000):
        mujoco.mj_step(m, d)
    assert np.abs(run.q[-1] - d.qpos).max() <= 1e-9 and np.abs(run.qd[-1] - d.qvel).max() <= 1e-9


FREE_BODY = """<mujoco><option timestep="0.001" gravity="0 0 0"/><worldbody><body><freejoint/>
  <geom type="box" size=".1 .2 .3" pos=".05 .02 -.03" mass="1"/><geom type="sphere" size=".1" pos="-.2 0 .1" mass=".5"/>
  </body><body pos="1 0 0"><freejoint/><geom type="capsule" size=".05 .2" pos="0 .1 0" mass="2"/></body></worldbody></mujoco>"""


FREE_QD0 = np.array([0.1, -0.2, 0.3, 3.0, -5.0, 7.0, 0.0, 0.1, 0.0, -4.0, 2.0, 6.0])     # both bodies spinning


def free_bodies_against_mj_step(m: mujoco.MjModel, backend: str, integrators: tuple) -> tuple[list, mujoco.MjData]:
    """200 steps from qpos0 and FREE_QD0, constraints off: physai's simulate with each of `integrators` on `backend`,
    and MuJoCo's mj_step with the model's own integrator."""
    model = engine.from_mujoco(m)
    previous = engine.set_backend(backend)
    try:
        runs = [integ.simulate(model, m.qpos0, FREE_QD0, m.opt.timestep, 200, name, energy=False, constraints=False)
                for name in integrators]
    finally:
        engine.set_backend(previous)
    d = mujoco.MjData(m)
    d.qvel[:] = FREE_QD0
    for _ in range(200):
        mujoco.mj_step(m, d)
    return runs, d


@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_implicitfast_solves_standalone_free_bodies_with_their_gyroscopic_term(backend):
    """Issue J's sighting: two free bodies alone (centres of mass off their origins, spinning, no gravity): MuJoCo 4's
    implicitfast solves each one's 6 x 6 block with the bias's velocity derivative (mjd_freeMhat), so it differs from its
    Euler; physai does the same on both backends: 200 steps within 1e-12 of mj_step (3e-4 apart without it)."""
    m = mujoco.MjModel.from_xml_string(FREE_BODY)
    m.opt.integrator = integ.MUJOCO_INTEGRATOR["implicitfast"]
    assert integ.standalone_free_dofs(engine.from_mujoco(m)) == [0, 6]
    (run, euler), d = free_bodies_against_mj_step(m, backend, ("implicitfast", "euler"))
    assert np.abs(run.q[-1] - d.qpos).max() <= 1e-12 and np.abs(run.qd[-1] - d.qvel).max() <= 1e-12
    assert np.abs(euler.q[-1] - d.qpos).max() > 1e-6                 # the term matters here


@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_a_free_body_with_welded_children_is_standalone(backend):
    """MuJoCo 4.0 solves a free body whose descendants have no joints (bodies welded to it, with mass: a pre-4.0 source
    refused those) in its own block with the whole rigid tree's gyroscopic derivative (found by tests/test_random_trees'
    search); physai too, on both backends: 200 implicitfast steps within 1e-12 of mj_step."""
    m = mujoco.MjModel.from_xml_string(FREE_BODY.replace(
        'mass="2"/></body>', 'mass="2"/><body pos=".1 0 .2" euler=".3 .2 .1"><geom type="box" size=".1 .05 .2" '
        'mass="1.5"/></body></body>'))
    m.opt.integrator = integ.MUJOCO_INTEGRATOR["implicitfast"]
    assert integ.standalone_free_dofs(engine.from_mujoco(m)) == [0, 6]
    (run,), d = free_bodies_against_mj_step(m, backend, ("implicitfast",))
    assert np.abs(run.q[-1] - d.qpos).max() <= 1e-12 and np.abs(run.qd[-1] - d.qvel).max() <= 1e-12


def test_a_free_body_with_a_child_is_not_standalone():
    m = mujoco.MjModel.from_xml_string(FREE_BODY.replace('mass="2"/></body>', 'mass="2"/><body><joint/><geom size=".1"/>'
                                                                            '</body></body>'))
    assert integ.standalone_free_dofs(engine.from_mujoco(m)) == [0]


@pytest.mark.parametrize("backend", ["native", "numpy"])
@pytest.mark.parametrize("integrator", ["implicitfast", "implicit"])
@pytest.mark.parametrize("order", list(SIMPLE_JOINTS))
@pytest.mark.parametrize("coupling", list(SIMPLE_COUPLINGS))
def test_a_simple_bodys_velocity_coupling_follows_mj_step(backend, integrator, order, coupling):
    """Issue R: MuJoCo keeps no off-diagonal entries of a simple body's dofs in its reduced M (dof_simplenum > 0), so
    implicitfast's M - h D leaves D's coupling of the two out (implicit's LU, on the whole pattern, keeps it); physai on
    both backends: 100 steps within 1e-10 of mj_step (1.8e-2 in qd after one implicitfast step when D kept it)."""
    m = mujoco.MjModel.from_xml_string(simple_body(order, coupling, integrator))
    assert (m.dof_simplenum > 0).all() == (order == "slide first")    # the case the test is about, and its control
    qd0, d = np.array([0.3, -0.6]), mujoco.MjData(m)
    d.qvel[:], d.ctrl[:] = qd0, 0.4
    for _ in range(100):
        mujoco.mj_step(m, d)
    ctrl = np.full(m.nu, 0.4) if m.nu else None
    r = run(backend, integ.simulate, engine.from_mujoco(m), m.qpos0, qd0, m.opt.timestep, 100, integrator, ctrl,
            energy=False, constraints=False)
    assert np.abs(r.q[-1] - d.qpos).max() <= 1e-10 and np.abs(r.qd[-1] - d.qvel).max() <= 1e-10


@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_a_simple_free_body_in_air_follows_mj_step(backend):
    """A free body MuJoCo marks simple, with inertia-box fluid drag: MuJoCo 4's implicitfast solves its 6 x 6 block with
    D whole (mjd_freeMhat reads D's own layout, not the reduced M's); physai too: 100 steps within 1e-10 of mj_step."""
    m = mujoco.MjModel.from_xml_string(SIMPLE_FREE_BODY)
    assert (m.dof_simplenum > 0).all()
    qd0, d = np.array([0.5, -0.3, 0.2, 3.0, -5.0, 7.0]), mujoco.MjData(m)
    d.qvel[:] = qd0
    for _ in range(100):
        mujoco.mj_step(m, d)
    r = run(backend, integ.simulate, engine.from_mujoco(m), m.qpos0, qd0, m.opt.timestep, 100, "implicitfast",
            energy=False, constraints=False)
    assert np.abs(r.q[-1] - d.qpos).max() <= 1e-10 and np.abs(r.qd[-1] - d.qvel).max() <= 1e-10


@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_rk4_turns_quaternions_like_mujoco_at_large_angles(backend):
    """One RK4 step of a top spinning at 300 rad/s with h = 5 ms (1.5 rad per step): the dexp^-1 coefficient
    c(t) = 1/t^2 - 1/(2 t tan(t/2)) is needed exactly (its 1/12 limit is off by 3.6e-7 here); a free joint too."""
    for joint, q0, qd0 in (('<joint type="ball" pos="0 0 -0.1"/>', [0.99, 0.1, 0.0, 0.0], [0.3, 0.0, 300.0]),
                           ("<freejoint/>", [0.1, 0.2, 0.3, 0.99, 0.1, 0.0, 0.0], [0.5, -0.2, 0.1, 0.3, 0.0, 300.0])):
        m = mujoco.MjModel.from_xml_string(TOP.replace('timestep="0.001"', 'timestep="0.005"')
                                           .replace('<joint type="ball" pos="0 0 -0.1" damping="0.01"/>', joint))
        m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
        m.opt.integrator = integ.MUJOCO_INTEGRATOR["rk4"]
        q0 = np.array(q0)
        q0[-4:] /= np.linalg.norm(q0[-4:])
        previous = engine.set_backend(backend)
        try:
            run = integ.simulate(engine.from_mujoco(m), q0, np.array(qd0), m.opt.timestep, 3, "rk4", energy=False)
        finally:
            engine.set_backend(previous)
        d = mujoco.MjData(m)
        d.qpos[:], d.qvel[:] = q0, qd0
        for _ in range(3):
            mujoco.mj_step(m, d)
        assert np.abs(run.q[-1] - d.qpos).max() <= 1e-13 and np.abs(run.qd[-1] - d.qvel).max() <= 1e-11


def test_divergence_names_the_step_time_and_integrator():
    tree = dyn.tree_from_mujoco(models.load("double_pendulum"))
    with pytest.raises(DivergenceError, match=r"diverged at step \d+ \(t = .* s\) with the euler integrator at dt = 1 s.*smaller timestep"):
        integ.simulate(tree, [0.0, 0.0], [300.0, -300.0], 1.0, 400, "euler")


@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_a_start_state_whose_forces_overflow_is_not_told_to_shorten_the_step(backend):
    """A double pendulum at 1e200 rad/s: its centripetal forces (1e400) overflow at the start, and MuJoCo's own qacc
    there is not finite, so no timestep helps: the DivergenceError at step 1 says to bring the state within range, not
    to take a smaller timestep (it said so before). A run that diverges from a representable start keeps the advice."""
    m = mujoco.MjModel.from_xml_string(DOUBLE_PENDULUM)
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = [0.3, -0.5], [1e200, -3e199]
    with np.errstate(all="ignore"):
        mujoco.mj_forward(m, d)
    assert not np.isfinite(d.qacc).all()
    model = engine.from_mujoco(m)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(DivergenceError, match=r"diverged at step 1 .*the start state's own accelerations are not "
                                                  r"finite .*bring q, qd and the inputs within range$") as error:
            run(backend, integ.simulate, model, d.qpos.copy(), d.qvel.copy(), m.opt.timestep, 3, "euler", energy=False)
    assert "smaller timestep" not in str(error.value)
    with pytest.raises(DivergenceError, match=r"diverged at step 1 .*smaller timestep"):
        run(backend, integ.simulate, model, d.qpos.copy(), np.array([1e150, -3e149]), 1e300, 3, "euler", energy=False)


# ---- defaults from the model, as mj_step (issue V, item 13) ----

LIMITED = """<mujoco><option timestep="0.005" integrator="implicitfast" tolerance="1e-15" iterations="1000"/><worldbody>
  <geom type="plane" size="0 0 1"/>
  <body pos="0 0 1"><joint type="hinge" axis="0 1 0" range="-30 30" damping="0.3"/>
    <geom type="capsule" fromto="0 0 0 .4 0 0" size=".03" contype="0" conaffinity="0"/></body>
  <body pos="0.5 0 0.1"><freejoint/><geom type="box" size=".05 .05 .05"/></body></worldbody></mujoco>"""


def _parts(result: integ.StepResult) -> tuple:
    return result.q, result.qd, result.qacc_warmstart, result.status


def _limited(change=None):
    """(m, Model, q0, qd0) of LIMITED: a damped pendulum swinging into its joint limit and a box dropped onto the plane,
    with implicitfast at 5 ms; change(m) edits m.opt first."""
    m = mujoco.MjModel.from_xml_string(LIMITED)
    if change is not None:
        change(m)
    qd0 = np.zeros(m.nv)
    qd0[0] = 4.0
    return m, engine.from_mujoco(m), m.qpos0.copy(), qd0


@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_simulation_follows_the_models_options_as_mj_step(backend):
    """simulate/rollout/step without dt, integrator or constraints run as mj_step on the same model: its timestep, its
    integrator (implicitfast), its joint limit and contacts (the pendulum stops at 30 degrees, the box lands): the same
    run as with them given (1e-14), and as mj_step's within 1e-9 in q and, in qd, twice mj_step's own spread: the box's
    landing multiplies a last-bit difference about 100 times a step for three steps, so mj_step's run from the box's
    qvel moved by 1e-16 to 1e-15 leaves its own by ~1e-7 (spread, the largest of three)."""
    m, model, q0, qd0 = _limited()
    steps = 100 if backend == "native" else 40

    def mj_run(nudge: float):
        d = mujoco.MjData(m)
        d.qvel[:] = qd0
        d.qvel[1:] += nudge
        Q, V = [], []
        for _ in range(steps):
            mujoco.mj_step(m, d)
            Q.append(d.qpos.copy())
            V.append(d.qvel.copy())
        return np.array(Q), np.array(V)

    Q, V = mj_run(0.0)
    spread = max(np.abs(mj_run(nudge)[1] - V).max() for nudge in (1e-16, 4e-16, 1e-15))
    previous = engine.set_backend(backend)
    try:
        run = integ.simulate(model, q0, qd0, steps=steps, energy=False)
        given = integ.simulate(model, q0, qd0, 0.005, steps, "implicitfast", energy=False, constraints=True)
        smooth = integ.simulate(model, q0, qd0, steps=steps, energy=False, constraints=False)
        batch = integ.rollout(model, q0[None], qd0[None], steps=steps)
        one = integ.step(model, q0, qd0)
    finally:
        engine.set_backend(previous)
    assert run.integrator == "implicitfast" and run.dt == 0.005 and run.ncon is not None and run.ncon[-1] > 0
    assert np.abs(run.q - given.q).max() < 1e-14 and np.abs(run.qd - given.qd).max() < 1e-14
    assert 0 < spread < 1e-6                                     # a last bit's growth, not a different run
    assert np.abs(run.q[1:] - Q).max() < 1e-9 and np.abs(run.qd[1:] - V).max() < 2 * spread
    assert np.abs(batch.q[0] - run.q).max() < 1e-14
    assert np.abs(one[0] - run.q[1]).max() < 1e-14 and np.abs(one[1] - run.qd[1]).max() < 1e-14
    assert run.q[:, 0].max() < np.radians(30) + 0.05 < smooth.q[:, 0].max()      # the limit held


@pytest.mark.parametrize("flag", ["mjDSBL_CONSTRAINT", "mjDSBL_EULERDAMP"])
def test_the_models_disable_flags_are_honoured(flag):
    """mjDSBL_CONSTRAINT: the default is the smooth dynamics (the pendulum swings through its limit, the box through the
    plane); mjDSBL_EULERDAMP: Euler's damping explicit by default. Both as mj_step, 100 steps within 1e-12."""
    def change(m):
        m.opt.disableflags |= getattr(mujoco.mjtDisableBit, flag)
        m.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    m, model, q0, qd0 = _limited(change)
    assert integ.has_constraints(model) == (flag != "mjDSBL_CONSTRAINT")
    d = mujoco.MjData(m)
    d.qvel[:] = qd0
    for _ in range(100):
        mujoco.mj_step(m, d)
    run = integ.simulate(model, q0, qd0, steps=100, energy=False)
    assert run.integrator == "euler" and (run.ncon is None) == (flag == "mjDSBL_CONSTRAINT")
    assert np.abs(run.q[-1] - d.qpos).max() < 1e-12


def test_a_kind_of_constraint_turned_off_leaves_the_rest():
    """mjDSBL_LIMIT and mjDSBL_CONTACT off on LIMITED: nothing left to constrain, so the default is smooth; one of them
    alone leaves the other."""
    for flags, expected in (("mjDSBL_LIMIT", True), ("mjDSBL_CONTACT", True), ("mjDSBL_LIMIT mjDSBL_CONTACT", False)):
        m = mujoco.MjModel.from_xml_string(LIMITED)
        for name in flags.split():
            m.opt.disableflags |= getattr(mujoco.mjtDisableBit, name)
        assert integ.has_constraints(engine.from_mujoco(m)) == expected, flags


@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_mujocos_integrator_enum_is_taken(backend):
    """m.opt.integrator as MuJoCo holds it (an int, a mujoco.mjtIntegrator member): the same step as by name."""
    m, model, q0, qd0 = _limited()
    previous = engine.set_backend(backend)
    try:
        for code, name in enumerate(["euler", "rk4", "implicit", "implicitfast"]):
            by_name = integ.step(model, q0, qd0, 0.005, name)
            for given in (code, np.int32(code), mujoco.mjtIntegrator(code)):
                q1, qd1 = integ.step(model, q0, qd0, 0.005, given)
                assert np.abs(q1 - by_name[0]).max() < 1e-15 and np.abs(qd1 - by_name[1]).max() < 1e-15
            assert integ.simulate(model, q0, qd0, None, 2, mujoco.mjtIntegrator(code)).integrator == name
    finally:
        engine.set_backend(previous)


def test_a_model_with_constraints_physai_cannot_model_is_refused_with_the_way_out():
    """A capsule beside a mesh geom without its data (a pair physai cannot collide): the default turns the constraints
    on, and the refusal names constraints=False."""
    model = capsule_beside_a_bare_mesh(0.3)
    with pytest.raises(UnsupportedModelError, match="constraints=False for its smooth dynamics"):
        integ.simulate(model, model.qpos0, np.zeros(model.nv), steps=2)
    assert integ.simulate(model, model.qpos0, np.zeros(model.nv), steps=2, constraints=False).ncon is None


def test_steps_is_required_and_step_derivatives_take_the_models_defaults():
    m, model, q0, qd0 = _limited()
    with pytest.raises(InvalidArgumentError, match="steps is required"):
        integ.simulate(model, q0, qd0)
    A, B = derivatives.step_derivatives(model, q0, qd0)
    A1, B1 = derivatives.step_derivatives(model, q0, qd0, 0.005, "implicitfast", euler_damping=True)
    assert np.abs(A - A1).max() < 1e-15 and B.shape == B1.shape
    samples = integ.simulate(model, q0, qd0, steps=5, constraints=False).q
    tau = inverse.trajectory_torques(model, samples, qd0=qd0)
    assert np.abs(tau - inverse.trajectory_torques(model, samples, 0.005, "implicitfast", qd0=qd0)).max() < 1e-12


# ---- one bad state in a batch (issue V, item 15) ----

@pytest.mark.parametrize("integrator", ["euler", "rk4", "implicit", "implicitfast"])
@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_a_batch_with_bad_states_steps_the_others_as_alone(backend, integrator):
    """arm7, 6 states: state 2 with qd 1e300 diverges, state 4's ctrl is NaN, state 5's qd is NaN. With
    on_divergence="report" the others equal each stepped alone (1e-14), the bad ones are NaN and named; by default the
    call raises for all."""
    model = engine.from_mujoco(models.load("arm7"))
    rng = np.random.default_rng(1)
    Q, QD = engine.random_states(model, 6, 2)
    C = rng.normal(size=(6, model.nu))
    QD[2, 3], C[4, 0], QD[5, 1] = 1e300, np.nan, np.nan
    previous = engine.set_backend(backend)
    try:
        q1, qd1, warm, status = _parts(integ.step_result(model, Q, QD, 0.002, integrator, ctrl=C, constraints=False,
                                                          on_divergence="report"))
        alone = [integ.step(model, Q[n], QD[n], 0.002, integrator, ctrl=C[n], constraints=False) for n in (0, 1, 3)]
        with pytest.raises(DivergenceError, match="diverged"):
            integ.step(model, Q[:4], QD[:4], 0.002, integrator, ctrl=C[:4], constraints=False)
    finally:
        engine.set_backend(previous)
    assert status.ok.tolist() == [True, True, False, True, False, False] and status.failed == [2, 4, 5]
    for n, (qa, qda) in zip((0, 1, 3), alone):
        assert np.abs(q1[n] - qa).max() < 1e-14 and np.abs(qd1[n] - qda).max() < 1e-14
    assert np.isnan(q1[[2, 4, 5]]).all() and np.isnan(qd1[[2, 4, 5]]).all() and not warm[[2, 4, 5]].any()
    assert isinstance(status.errors[2], DivergenceError)
    assert re.match(rf"state 2 of the step diverged .* the {integrator} integrator", status.messages[2])
    assert re.match(r"state 4 of the step: its ctrl is not finite", status.messages[4])
    assert re.match(r"state 5 of the step: its qd is not finite", status.messages[5])


TWO_MOTORS = """<mujoco><option timestep="0.002"/><worldbody><body><joint name="a" axis="0 1 0" damping=".1"/>
  <geom type="capsule" fromto="0 0 0 .3 0 -.4" size=".05"/></body></worldbody>
  <actuator><motor joint="a" ctrllimited="false"/><motor joint="a" ctrllimited="true" ctrlrange="-1 1"/></actuator>
</mujoco>"""


@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_controls_bad_after_clamping_are_refused_by_name_everywhere(backend):
    """MuJoCo clamps d.ctrl to ctrlrange, then steps with EVERY control zero where one is NaN or beyond mjMAXVAL 1e10
    (mju_isBad, mjWARN_BADCTRL; checked live here). physai refuses such a control by name on every path: simulate,
    rollout, step_result raise InvalidStateError, step_result(on_divergence="report") reports the state, step_frames
    returns None (before: 1e11 on the actuator that is not ctrllimited applied silently, 1e11 times too much). An
    infinite or huge control of the ctrllimited actuator is its range's end, as in mj_step, on every path (before:
    simulate and rollout refused inf): within 1e-12 of mj_step with the same d.ctrl."""
    m = mujoco.MjModel.from_xml_string(TWO_MOTORS)
    model = engine.from_mujoco(m)
    q0, qd0 = np.array([0.3]), np.array([0.2])

    def mj_next(ctrl):
        d = mujoco.MjData(m)
        d.qpos[:], d.qvel[:], d.ctrl[:] = q0, qd0, ctrl
        mujoco.mj_step(m, d)
        return d.qpos.copy(), d.warning[mujoco.mjtWarning.mjWARN_BADCTRL].number

    zeroed, _ = mj_next([0.0, 0.0])
    previous = engine.set_backend(backend)
    try:
        for bad in (1e11, -np.inf, np.nan):
            ctrl = np.array([bad, 0.5])
            q_mj, warned = mj_next(ctrl)
            assert warned == 1 and np.abs(q_mj - zeroed).max() == 0.0                # what mj_step does with it
            for f, q, qd, kw in ((integ.simulate, q0, qd0, dict(steps=2)), (integ.rollout, q0[None], qd0[None], dict(steps=2)),
                                 (integ.step_result, q0, qd0, {}), (integ.step_result, np.stack([q0, q0]),
                                                                   np.stack([qd0, qd0]), {})):
                with pytest.raises(InvalidStateError, match=r"^ctrl\[0\] is (1e\+11 after clamping|-inf;|nan;)"):
                    f(model, q, qd, ctrl=ctrl, **kw)
            r = integ.step_result(model, np.stack([q0, q0]), np.stack([qd0, qd0]), ctrl=np.stack([[0.1, 0.5], ctrl]),
                                  on_divergence="report")
            assert r.status.failed == [1] and re.match(r"state 1 of the step: its ctrl is (not finite|beyond MuJoCo's "
                                                       r"mjMAXVAL)", r.status.messages[1]), r.status.messages
            assert integ.step_frames(model, q0[None], qd0[None], 2, ctrl=ctrl[None]) is None
        for huge in (np.inf, -1e11, 1e300):
            ctrl = np.array([0.1, huge])
            q_mj, warned = mj_next(ctrl)
            assert warned == 0
            got = [integ.simulate(model, q0, qd0, steps=1, ctrl=ctrl).q[1],
                   integ.rollout(model, q0[None], qd0[None], steps=1, ctrl=ctrl).q[0, 1],
                   integ.step_result(model, q0, qd0, ctrl=ctrl).q,
                   integ.step_result(model, q0[None], qd0[None], ctrl=ctrl[None], on_divergence="report").q[0]]
            frames = integ.step_frames(model, q0[None], qd0[None], 1, ctrl=ctrl[None])
            got += [] if frames is None else [frames.q[0]]
            assert max(np.abs(q - q_mj).max() for q in got) < 1e-12, got
    finally:
        engine.set_backend(previous)


@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_a_batch_with_contacts_and_a_singular_or_zero_quaternion_state_goes_on(backend):
    """With constraints (LIMITED: the box on its plane) a state with a zero quaternion is left out and one that diverges
    is named; the others as alone (1e-14), warm starts included. A gimbal-locked state (three hinges at one point, the
    middle at 90 degrees: M singular) is named in its own batch."""
    m, model, q0, qd0 = _limited()
    Q, QD = np.repeat(q0[None], 4, 0), np.repeat(qd0[None], 4, 0)
    Q[:, 3] -= 0.06 + 0.01 * np.arange(4)                 # the box into its plane
    Q[1, 4:8], QD[3, 4] = 0.0, 1e300
    gimbal = engine.from_mujoco(mujoco.MjModel.from_xml_string(
        """<mujoco><worldbody><body><joint axis="1 0 0"/><joint axis="0 1 0"/><joint axis="0 0 1"/>
           <geom type="box" size=".1 .2 .3" contype="0" conaffinity="0"/></body></worldbody></mujoco>"""))
    G = np.zeros((3, 3))
    G[1, 1] = np.pi / 2
    previous = engine.set_backend(backend)
    try:
        q1, qd1, warm, status = _parts(integ.step_result(model, Q, QD, on_divergence="report"))
        alone = [_parts(integ.step_result(model, Q[n], QD[n]))[:3] for n in (0, 2)]
        g1, _, _, locked = _parts(integ.step_result(gimbal, G, np.ones((3, 3)), 0.002, on_divergence="report"))
        g_alone = integ.step(gimbal, G[2], np.ones(3), 0.002)
        one = integ.step_result(model, Q[3], QD[3], on_divergence="report")
    finally:
        engine.set_backend(previous)
    assert status.failed == [1, 3] and "zero quaternion" in status.messages[1] and "diverged" in status.messages[3]
    for n, (qa, qda, wa) in zip((0, 2), alone):
        assert np.abs(q1[n] - qa).max() < 1e-14 and np.abs(qd1[n] - qda).max() < 1e-14 and np.abs(warm[n] - wa).max() < 1e-9
    assert locked.failed == [1] and re.match(r"state 1 of the step: the mass matrix is singular", locked.messages[1])
    assert np.abs(g1[2] - g_alone[0]).max() < 1e-14 and np.isnan(g1[1]).all()
    assert one.status.ok.shape == () and not one.status.ok and np.isnan(one.q).all()


def test_on_divergence_takes_raise_or_report(tree):
    with pytest.raises(InvalidArgumentError, match="on_divergence must be 'raise' or 'report'"):
        integ.step(tree, np.zeros(2), np.zeros(2), 0.002, on_divergence="ignore")
    status = integ.step_result(tree, np.zeros((3, 2)), np.zeros((3, 2)), 0.002, on_divergence="report").status
    assert status.ok.tolist() == [True] * 3 and status.errors == {}
    r = integ.step_result(tree, np.zeros(2), [0.0, np.nan], 0.002, on_divergence="report")
    assert r.status.ok.shape == () and not r.status.ok and np.isnan(r.q).all() and "its qd is not finite" in r.status.messages[0]


@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_step_result_names_what_the_flags_of_step_returned_which_still_work_with_a_deprecation_warning(backend):
    """step_result gives q, qd, qacc_warmstart and status by name, equal (1e-14) to what step(..., return_warmstart=True,
    on_divergence="report") returned by position; those forms still work, with a DeprecationWarning, and step without
    them returns (q, qd) without one. The warm start is MuJoCo's d.qacc_warmstart after mj_step (1e-8)."""
    m, model, q0, qd0 = _limited()
    Q, QD = np.repeat(q0[None], 3, 0), np.repeat(qd0[None], 3, 0)
    Q[:, 3] -= 0.06 + 0.01 * np.arange(3)                 # the box into its plane
    QD[1, 4] = np.nan
    previous = engine.set_backend(backend)
    try:
        r = integ.step_result(model, Q, QD, on_divergence="report")
        alone = integ.step_result(model, Q[0], QD[0])
        with pytest.warns(DeprecationWarning, match="use step_result"):
            old = integ.step(model, Q, QD, return_warmstart=True, on_divergence="report")
        with pytest.warns(DeprecationWarning, match="use step_result"):
            q1, qd1, warm = integ.step(model, Q[0], QD[0], return_warmstart=True)
        with pytest.warns(DeprecationWarning, match="use step_result"):
            q2, qd2, status = integ.step(model, Q[0], QD[0], on_divergence="report")
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)
            plain = integ.step(model, Q[0], QD[0])
    finally:
        engine.set_backend(previous)
    d = mujoco.MjData(m)
    d.qpos, d.qvel = Q[0], QD[0]
    mujoco.mj_step(m, d)
    assert isinstance(r, integ.StepResult) and r.status.failed == [1] and alone.status.ok
    assert np.abs(alone.q - d.qpos).max() < 1e-12 and np.abs(alone.qacc_warmstart - d.qacc_warmstart).max() < 1e-8
    assert len(old) == 4 and old[3].failed == [1] and len(plain) == 2 and status.ok
    for a, b in [(old[0], r.q), (old[1], r.qd), (old[2], r.qacc_warmstart), (q1, alone.q), (qd1, alone.qd),
                 (warm, alone.qacc_warmstart), (q2, alone.q), (qd2, alone.qd), (plain[0], alone.q), (plain[1], alone.qd)]:
        assert np.allclose(a, b, rtol=0, atol=1e-14, equal_nan=True)


def discrete_model(seed: int, contacts: bool = False) -> mujoco.MjModel:
    """A random tree for the discrete integrator: hinges and slides with damping, stiffness and springref, a ball joint
    with damping, armature, a standalone free body with an asymmetric inertia, motors, gravity; geoms that do not
    collide, or with `contacts` colliding and a floor the free body rests on."""
    rng = np.random.default_rng(seed)
    num = lambda *x: " ".join(f"{v:.6g}" for v in x)                                    # noqa: E731
    body = ""
    for i in range(int(rng.integers(3, 6)))[::-1]:
        kind = ["hinge", "slide", "ball"][i % 3]
        spring = (f'stiffness="{num(rng.uniform(0, 20))}" springref="{num(rng.uniform(-.5, .5))}"'
                  if kind != "ball" else "")
        body = (f'<body pos="{num(*rng.uniform(-.2, .2, 3))}"><joint name="j{i}" type="{kind}" axis="{num(*rng.normal(size=3))}" '
                f'damping="{num(rng.uniform(0, 2))}" armature="{num(rng.uniform(0, .05))}" {spring}/>'
                f'<geom type="box" size="{num(*rng.uniform(.03, .1, 3))}" pos="{num(*rng.uniform(-.1, .1, 3))}"/>{body}</body>')
    motors = "".join(f'<motor joint="j{i}" gear="{num(rng.uniform(.5, 2))}"/>' for i in range(0, 5, 3))
    floor = '<geom type="plane" size="5 5 .1" pos="0 0 -1"/>' if contacts else ""
    apart = "" if contacts else '<default><geom contype="0" conaffinity="0"/></default>'
    xml = (f'<mujoco><option integrator="discrete" timestep="{num(rng.uniform(.002, .01))}"/>{apart}<worldbody>{floor}'
           f'<body pos="0 0 .5">{body}</body><body pos="1 0 -.85"><freejoint/><geom type="box" size=".1 .2 .05"/></body>'
           f'</worldbody><actuator>{motors}</actuator></mujoco>')
    return mujoco.MjModel.from_xml_string(xml)


@pytest.mark.parametrize("backend", ["native", "numpy"])
@pytest.mark.parametrize("seed", range(4))
def test_discrete_integrator_follows_mj_step(seed, backend):
    """MuJoCo 4's discrete integrator (mjINT_DISCRETE: (M + h B + h^2 K) a = f - h K qd, standalone free bodies in their
    blocks) on random trees of hinges, slides and a ball with damping and stiffness, motors and a spinning free body,
    from random states under a constant control: 100 steps of simulate and rollout within 1e-10 of mj_step in q and qd
    (1.4e-13 seen), one step within 1e-12, on both engines (cpp/forward.h's discrete)."""
    m = discrete_model(seed)
    d = mujoco.MjData(m)
    rng = np.random.default_rng(seed)
    d.qpos[:] = engine.random_states(engine.from_mujoco(m), 1, seed)[0][0]
    d.qvel[:] = 2 * rng.normal(size=m.nv)
    d.ctrl[:] = ctrl = rng.normal(size=m.nu)
    q0, qd0 = d.qpos.copy(), d.qvel.copy()
    Q, QD = mj.steps(m, d, 100)
    model = engine.from_mujoco(m)
    assert model.opt.integrator == "discrete"
    traj = run(backend, integ.simulate, model, q0, qd0, steps=100, ctrl=ctrl, energy=False)
    assert np.abs(traj.q[1:] - Q).max() < 1e-10
    assert np.abs(traj.qd[1:] - QD).max() < 1e-10
    q1, qd1 = run(backend, integ.step, model, q0, qd0, ctrl=ctrl)
    assert np.abs(q1 - Q[0]).max() < 1e-12 and np.abs(qd1 - QD[0]).max() < 1e-12
    batch = run(backend, integ.rollout, model, np.stack([q0, q0]), np.stack([qd0, qd0]), steps=100, ctrl=ctrl, energy=False)
    assert np.abs(batch.q[:, 1:] - Q).max() < 1e-10


def two_arms_and_a_box(cone: str, solver: str, base: float = .1) -> str:
    """Two trees of damped hinges (a z hinge, two branches of two y hinges, the first damped and limited) whose
    collinear capsules meet tip to tip and side by side, a free box above them, under the discrete integrator: contact
    normals whose J rows are rounding noise (~1e-16). base [m]: the height of the z hinges' boxes (half size .1: at .1
    they rest exactly on the plane: at dist exactly 0 = margin MuJoCo always excludes the contact, exclude = dist >=
    includemargin; only a dist rounded below 0, as -2.8e-17, keeps it)."""
    def arm(p: str, pos: str) -> str:
        branch = lambda n, s: (f'<body pos="{s * .1:g} 0 .25"><joint name="{p}{n}1" axis="0 1 0" damping=".1" limited="true" '   # noqa: E731
                               f'range="-.3 .3"/><geom type="capsule" fromto="0 0 0 {s * .3:g} 0 0" size=".05"/>'
                               f'<body pos="{s * .3:g} 0 0"><joint name="{p}{n}2" axis="0 1 0"/>'
                               f'<geom type="capsule" fromto="0 0 0 {-s * .25:g} 0 0" size=".05"/></body></body>')
        return (f'<body pos="{pos}"><joint name="{p}r" axis="0 0 1"/><geom type="box" size=".1 .1 .1"/>'
                f'{branch("a", 1)}{branch("b", -1)}</body>')
    return (f'<mujoco><option integrator="discrete" timestep=".005" solver="{solver}" cone="{cone}" tolerance="1e-15" '
            f'iterations="2000"/><worldbody><geom type="plane" size="5 5 .1"/>{arm("L", f"0 0 {base:g}")}'
            f'{arm("R", f".35 0 {base:g}")}'
            f'<body pos="0 0 .8"><freejoint/><geom type="box" size=".2 .2 .05"/></body></worldbody></mujoco>')


def mj_steps_from(m: mujoco.MjModel, q0: np.ndarray | None, qd0: np.ndarray, warmstart: np.ndarray | None,
                  steps: int) -> tuple[np.ndarray, np.ndarray]:
    """mj.steps from (q0 (nq,), qd0 (nv,)) with qacc_warmstart (nv,) (None: qpos0 and zeros, a new MjData's)."""
    d = mujoco.MjData(m)
    if q0 is not None:
        d.qpos[:] = q0
    if warmstart is not None:
        d.qacc_warmstart[:] = warmstart
    d.qvel[:] = qd0
    return mj.steps(m, d, steps)


def rounding_spread(m: mujoco.MjModel, qd0: np.ndarray, steps: int, trials: int = 32, q0: np.ndarray | None = None,
                    warmstart: np.ndarray | None = None) -> float:
    """How far mj_step's qd after `steps` steps from qd0 moves when qd0 moves by one ulp (each entry times 1 +- 2^-52,
    random signs, `trials` times): the largest change [m/s | rad/s], the spread MuJoCo's own answer has under rounding.
    A bound on another engine's distance needs a margin above it (the tests take 10 times): the spread samples rounding
    of qd only, where another engine rounds differently at every sum of the solve, a larger perturbation. q0 (nq,) and
    warmstart (nv,): the start's positions and qacc_warmstart (None: qpos0 and zeros, a new MjData's)."""
    def after(qd):
        return mj_steps_from(m, q0, qd, warmstart, steps)[1]
    base = after(qd0)
    signs = [np.random.default_rng(k).choice([-1.0, 1.0], m.nv) for k in range(1, trials + 1)]
    return max(float(np.abs(after(qd0 * (1 + 2.0 ** -52 * s)) - base).max()) for s in signs)


@pytest.mark.parametrize("backend", ["native", "numpy"])
@pytest.mark.parametrize("solver", ["Newton", "CG"])
@pytest.mark.parametrize("cone", ["elliptic", "pyramidal"])
def test_discrete_rows_with_a_noise_jacobian_keep_their_diagonal(cone, solver, backend):
    """A row whose J diag(M)^-1 J^T is at most MINVAL (a contact normal whose J is rounding noise) keeps its diagApprox
    under the discrete integrator, as MuJoCo 4's (constraint.discrete_diagonal_ratio; before: scaled by the ratio of
    two noise terms, its elliptic contact's R 0.3% off, qd 1.8e-4 off mj_step after one step): two_arms_and_a_box from a
    random velocity on both engines. Newton: 5 steps within 1e-11 of mj_step in q and qd (1.2e-12 seen). CG: the first
    step within 10 times the spread of MuJoCo's own CG under a 1-ulp change of qd (rounding_spread, its margin there:
    3.5e-13 on the ellipse, 1.3e-11 on the pyramid, whose CG stops where rounding puts it; seen: 7e-14 and 1.5e-11; the
    NumPy engine's CG recomputing M qacc and J qacc - aref at each iterate instead of carrying them as MuJoCo does was
    6.4e-12 off on the ellipse). Its later steps are not compared here: the boxes rest exactly on the plane, and a 3e-14 difference
    in q decides whether their contacts (normal J exactly zero, diagApprox 0, so R = MINVAL) are kept; with them CG
    stops far from the minimum, MuJoCo's own too (test_discrete_cg_warm_started_steps_follow_mj_step lifts the boxes)."""
    m = mujoco.MjModel.from_xml_string(two_arms_and_a_box(cone, solver))
    d = mujoco.MjData(m)
    d.qvel[:] = np.random.default_rng(0).normal(size=m.nv)
    q0, qd0 = d.qpos.copy(), d.qvel.copy()
    steps = 5 if solver == "Newton" else 1
    Q, QD = mj.steps(m, d, steps)
    traj = run(backend, integ.simulate, engine.from_mujoco(m), q0, qd0, steps=steps, energy=False)
    bound = 1e-11 if solver == "Newton" else 10 * rounding_spread(m, qd0, steps)
    assert np.abs(traj.q[1:] - Q).max() < bound and np.abs(traj.qd[1:] - QD).max() < bound


@pytest.mark.parametrize("backend", ["native", "numpy"])
@pytest.mark.parametrize("cone", ["elliptic", "pyramidal"])
def test_discrete_cg_warm_started_steps_follow_mj_step(cone, backend):
    """CG's warm-started steps under the discrete integrator (the start chosen between the last qacc and a0 by their
    costs) follow mj_step's: two_arms_and_a_box with its z hinges' boxes 1 mm above the plane (resting on it, contacts
    kept or left out by rounding make CG stop far from the minimum, MuJoCo's own too), 3 steps from a random velocity
    within 1e-9 in q and qd (1.1e-10 seen; MuJoCo's own CG and Newton 1.2e-9 apart on the pyramid)."""
    m = mujoco.MjModel.from_xml_string(two_arms_and_a_box(cone, "CG", base=.101))
    d = mujoco.MjData(m)
    d.qvel[:] = np.random.default_rng(0).normal(size=m.nv)
    q0, qd0 = d.qpos.copy(), d.qvel.copy()
    Q, QD = mj.steps(m, d, 3)
    traj = run(backend, integ.simulate, engine.from_mujoco(m), q0, qd0, steps=3, energy=False)
    assert np.abs(traj.q[1:] - Q).max() < 1e-9 and np.abs(traj.qd[1:] - QD).max() < 1e-9


def on_the_knife_edge(m: mujoco.MjModel, q: np.ndarray, qd: np.ndarray) -> tuple[bool, list]:
    """Whether mj_step from (q (nq,), qd (nv,)) is on a knife edge by MuJoCo's own criterion at that start (mj_forward):
    rows with R at its floor (efc_R <= 2 MINVAL: a kept contact whose normal J is 0, where CG stops far from the
    minimum) or, under RK4 (whose later stages collide at states rounding moves), a contact whose dist - margin is
    within 8 ulps of the largest geom coordinate of 0 (kept or excluded as rounding falls). Also MuJoCo's active
    contacts' geom pairs there (a list of [g1, g2], one per contact)."""
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = q, qd
    mujoco.mj_forward(m, d)
    floor = bool((d.efc_R[:d.nefc] <= 2 * mujoco.mjMINVAL).any())
    gap = d.contact.dist[:d.ncon] - d.contact.includemargin[:d.ncon]
    near = bool((np.abs(gap) <= 8 * np.finfo(float).eps * np.abs(d.geom_xpos).max()).any())
    return floor or (near and m.opt.integrator == mujoco.mjtIntegrator.mjINT_RK4), collision.from_mujoco(m, d).geom.tolist()


def ten_spreads(spread: float, qd: np.ndarray) -> float:
    """The bound on another engine's distance from mj_step: 10 times MuJoCo's 1-ulp spread (rounding_spread), floored
    at 4 ulps of max|qd| (qd (nv,) [rad/s | m/s]) so that exact agreement (a zero spread) passes."""
    return max(10 * spread, 4 * np.finfo(float).eps * np.abs(qd).max())


@pytest.mark.parametrize("cone", ["elliptic", "pyramidal"])
@pytest.mark.parametrize("integrator, backend", [("implicit", "native"), ("implicitfast", "native"), ("RK4", "native"),
                                                 ("implicitfast", "numpy")])
def test_cg_steps_follow_mj_step_off_the_knife_edge_and_each_step_on_it(integrator, cone, backend):
    """CG's warm-started steps under MuJoCo's other integrators (tolerance 1e-15) follow mj_step where the scene is not
    a knife edge. Lifted: two_arms_and_a_box with its z hinges' boxes 1 mm above the plane, 6 steps from a random
    velocity, each step k within ten_spreads of MuJoCo's own spread after k steps under a 1-ulp change of qd
    (rounding_spread; 10 times it, floored at 4 ulps of max|qd|). Resting: the boxes exactly on the plane (dist 0 =
    margin, and MuJoCo excludes a contact when dist >= includemargin) the paths part; by hand, implicitfast on the
    ellipse on the NumPy engine: 57 rad/s at step 4 after 7e-9 at step 3, a 7e-9 difference in q putting the boxes'
    corners at -2.8e-17 instead of 0, kept contacts whose normal J is exactly 0 (R at its floor MINVAL), where CG runs
    its 2000 iterations and stops far from the minimum (MuJoCo's own CG 67 from its Newton there, by hand). Which step
    reaches that edge, if any, depends on the BLAS kernel (under OPENBLAS_CORETYPE=Haswell the NumPy run never does),
    so the test does not ask that it be reached. On both scenes each step is compared from physai's own state (its q,
    qd and warm start) with mj_step from that state: physai's active contacts' geom pairs equal MuJoCo's there, and,
    where the step is not on the knife edge (on_the_knife_edge: R at its floor, or under RK4 a contact within ulps of
    its margin, whose later stages may keep it or not as rounding falls), within ten_spreads of MuJoCo's one-step
    spread. Steps on the edge are left out of that bound: there MuJoCo's own one-step answer jumps (14 apart under a
    1-ulp change of qd by hand; its spread samples the jump only sometimes, so a bound from it passes by luck).
    Under RK4 every resting step counts as on the edge (the boxes' corners at dist 0), and so does its first lifted
    step (capsules touching at -2.8e-17 and 0 at qpos0): there it checks the contact pairs only. Seen by hand: off the
    edge at most 0.26 of the bound on the lifted scene; resting, the cold first step is 1.0e-10 (native) and 1.6e-10
    (NumPy) against a spread of 3e-10, all at most 0.14 of the bound; physai's damping changed by 1e-8 relative fails
    at step 1 of the lifted scene. MuJoCo's CG stops 1e-8 from its own Newton in qacc on the lifted scene (by hand).
    Euler is not run: on this scene without actuators its implicit joint damping makes its step implicitfast's (the
    same numbers). The NumPy engine runs implicitfast only (its CG's 2000 iterations on the plane are the test's
    slowest part)."""
    for base in (.101, .1):
        m = mujoco.MjModel.from_xml_string(two_arms_and_a_box(cone, "CG", base).replace("discrete", integrator))
        model = engine.from_mujoco(m)
        q0, qd0 = m.qpos0.copy(), np.random.default_rng(0).normal(size=m.nv)
        Q, QD = mj_steps_from(m, q0, qd0, None, 6)
        traj = run(backend, integ.simulate, model, q0, qd0, steps=6, energy=False)
        q, qd, warm = q0, qd0, None
        for k in range(6):
            r = run(backend, integ.step_result, model, q, qd, qacc_warmstart=warm)
            edge, pairs = on_the_knife_edge(m, q, qd)
            assert run(backend, collision.detect, model, q).geom.tolist() == pairs, (base, k)
            if not edge:
                q1, qd1 = mj_steps_from(m, q, qd, warm, 1)
                bound = ten_spreads(rounding_spread(m, qd, 1, 16, q, warm), qd1)
                assert np.abs(r.q - q1).max() < bound and np.abs(r.qd - qd1).max() < bound, (base, k)
            q, qd, warm = r.q, r.qd, r.qacc_warmstart
            if base > .1:
                bound = ten_spreads(rounding_spread(m, qd0, k + 1), QD[k])
                assert np.abs(traj.q[k + 1] - Q[k]).max() < bound and np.abs(traj.qd[k + 1] - QD[k]).max() < bound, k


@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_discrete_qacc_and_warm_start_hold_the_free_bodys_block_solve(backend):
    """Under the discrete integrator the standalone free bodies (no row reaches them) are solved again in their own 6 x 6
    blocks after the constraint solve; d.qacc and d.qacc_warmstart after mj_step hold that final step map, and so do
    step_result's qacc_warmstart and observed qacc (they held the solver's qacc from before the block solve, 0.58 off on
    the spinning box). two_arms_and_a_box (Newton, tolerance 1e-15: contacts among the arms and on the plane) with its
    free box spinning, 5 steps on both engines, each from the last one's warm start: q and qd within 1e-11 of mj_step
    (as test_discrete_rows_with_a_noise_jacobian_keep_their_diagonal), qacc and the warm start within 1e-11 / h = 2e-9
    (a difference in qd over the step h); simulate's 5 steps within 1e-11 too."""
    m = mujoco.MjModel.from_xml_string(two_arms_and_a_box("pyramidal", "Newton"))
    d = mujoco.MjData(m)
    d.qvel[:] = np.random.default_rng(0).normal(size=m.nv)
    d.qvel[-3:] = 3.0, -5.0, 7.0                       # the free box spinning fast [rad/s]
    model = engine.from_mujoco(m)
    q, qd, warm = d.qpos.copy(), d.qvel.copy(), None
    traj = run(backend, integ.simulate, model, q, qd, steps=5, energy=False)
    bound = 1e-11 / m.opt.timestep
    for k in range(5):
        mujoco.mj_step(m, d)
        assert d.ncon > 0
        r = run(backend, integ.step_result, model, q, qd, qacc_warmstart=warm, observe=("qacc",))
        q, qd, warm = r.q, r.qd, r.qacc_warmstart
        assert np.abs(q - d.qpos).max() < 1e-11 and np.abs(qd - d.qvel).max() < 1e-11
        assert np.abs(warm - d.qacc_warmstart).max() < bound and np.abs(r.observed["qacc"] - d.qacc).max() < bound
        assert np.abs(traj.q[k + 1] - d.qpos).max() < 1e-11 and np.abs(traj.qd[k + 1] - d.qvel).max() < 1e-11


@pytest.mark.parametrize("backend", ["native", "numpy"])
@pytest.mark.parametrize("cone", ["elliptic", "pyramidal"])
@pytest.mark.parametrize("integrator", ["Euler", "discrete"])
def test_forward_dynamics_warns_of_rows_whose_R_is_at_its_floor(integrator, cone, backend, monkeypatch):
    """forward_dynamics warns (StiffRowWarning) of rows whose R is at its floor MINVAL, the rows where mj_forward's efc_R
    is (2 MINVAL at most: friction 1, impratio 1): two_arms_and_a_box (Euler or discrete, CG) with its z hinges' boxes
    1 mm into the plane, contacts whose normal J is exactly zero (diagApprox 0), where MuJoCo's CG stops at least 1e4
    times farther from its Newton in qacc than with the boxes lifted 1 mm above the plane (0.05 vs 3e-9 on the ellipse, 13 vs 7e-10 on
    the pyramid, whose CG runs to its 2000 iterations); the rows' R equal MuJoCo's (1e-12 relative). Lifted: no such
    rows, no warning; both engines (solving by Newton: the rows, not the solver, warn); the compiled discrete call by
    its compiled solve (the NumPy text's never called), its rows the NumPy text's at the step's end."""
    if backend == "native":
        monkeypatch.setattr(engine.forward, "discrete_acceleration", _no_numpy_discrete_solve)
    gaps = []
    for base, touching in ((.099, True), (.101, False)):
        xml = two_arms_and_a_box(cone, "CG", base).replace("discrete", integrator)
        qacc = []
        for text in (xml, xml.replace('solver="CG"', 'solver="Newton"')):               # the rows' warning: Newton's
            m = mujoco.MjModel.from_xml_string(text)
            d = mujoco.MjData(m)
            d.qvel[:] = np.random.default_rng(0).normal(size=m.nv)
            mujoco.mj_forward(m, d)
            qacc.append(d.qacc.copy())
        gaps.append(np.abs(qacc[1] - qacc[0]).max())
        expected = np.flatnonzero(d.efc_R <= 2 * mujoco.mjMINVAL)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = run(backend, constraints.forward_dynamics, engine.from_mujoco(m), d.qpos, d.qvel, d.qfrc_passive)
            run(backend, constraints.forward_dynamics, engine.from_mujoco(m), *(np.stack([x, x]) for x in
                                                                              (d.qpos, d.qvel, d.qfrc_passive)))
        stiff = [str(w.message) for w in caught if w.category is StiffRowWarning]
        assert len(stiff) == 2 * touching and all("rows of state 0 (2 of 2 states" in w for w in stiff[1:])
        stiff = stiff[:1]
        assert np.abs(result.rows.R - d.efc_R).max() <= 1e-12 * np.abs(d.efc_R).max()
        assert len(expected) == (24 if cone == "elliptic" else 32) if touching else not len(expected)
        assert constraint.floor_rows(result.rows).tolist() == expected.tolist()
        assert len(stiff) == touching and all(w.startswith(f"{len(expected)} constraint rows have R at its floor MINVAL "
                                                         "(the first: row 0): their diagApprox is 0") for w in stiff)
    assert gaps[0] > 1e4 * gaps[1]


def discrete_servo_model(seed: int, limit: bool = False, free: bool = True) -> mujoco.MjModel:
    """A random chain of hinges and slides for the discrete integrator's coupled metric: joint dampers and springs, a fixed
    and a spatial tendon with stiffness, damping and a springlength (a dead band for the fixed one), position and
    velocity servos on joints and tendons, an affine general actuator (slopes of either sign, sometimes a filter or
    force-limited), and (`free`) a standalone free body; with `limit` a limited hinge pressed past its range."""
    rng = np.random.default_rng(seed)
    num = lambda *x: " ".join(f"{v:.6g}" for v in x)                                    # noqa: E731
    body = '<site name="tip" pos=".1 .05 0"/>'
    n = int(rng.integers(3, 6))
    for i in range(n)[::-1]:
        kind = ["hinge", "slide"][i % 2]
        rng_lim = ' limited="true" range="-.2 .2"' if limit and i == 0 else ""
        body = (f'<body pos="{num(*rng.uniform(-.2, .2, 3))}"><joint name="j{i}" type="{kind}" axis="{num(*rng.normal(size=3))}" '
                f'damping="{num(rng.uniform(0, 1))}" stiffness="{num(rng.uniform(0, 5))}"{rng_lim}/>'
                f'<geom type="box" size="{num(*rng.uniform(.03, .1, 3))}" pos="{num(*rng.uniform(-.1, .1, 3))}"/>{body}</body>')
    coefs = "".join(f'<joint joint="j{i}" coef="{num(rng.normal())}"/>' for i in range(n))
    low = rng.uniform(-.3, .3)
    tendons = (f'<fixed name="fx" stiffness="{num(rng.uniform(0, 40))}" damping="{num(rng.uniform(0, 2))}" '
               f'springlength="{num(low, low + rng.uniform(0, .2))}">{coefs}</fixed>'
               f'<spatial name="sp" stiffness="{num(rng.uniform(0, 40))}" damping="{num(rng.uniform(0, 2))}" '
               f'springlength="{num(rng.uniform(0, .3))}"><site site="base"/><site site="tip"/></spatial>')
    drifter = '<body pos="1 0 -.85"><freejoint/><geom type="box" size=".1 .2 .05"/></body>'
    dyn = f'dyntype="filter" dynprm="{num(rng.uniform(.02, .2))}"' if seed % 2 else ""
    limited = 'forcelimited="true" forcerange="-2 2"' if seed % 3 == 0 else ""
    actuators = (f'<position joint="j0" kp="{num(rng.uniform(10, 100))}" kv="{num(rng.uniform(0, 3))}" {limited}/>'
                 f'<velocity tendon="fx" kv="{num(rng.uniform(0, 5))}"/><position tendon="sp" kp="{num(rng.uniform(10, 60))}"/>'
                 f'<general joint="j1" gaintype="affine" biastype="affine" gainprm="{num(*rng.normal(size=3))}" '
                 f'biasprm="{num(*rng.normal(size=3))}" {dyn}/>')
    xml = (f'<mujoco><option integrator="discrete" timestep="{num(rng.uniform(.002, .01))}" tolerance="1e-15"/>'
           f'<default><geom contype="0" conaffinity="0"/></default><worldbody><site name="base" pos=".3 .2 .6"/>'
           f'<body pos="0 0 .5">{body}</body>{drifter if free else ""}'
           f'</worldbody><tendon>{tendons}</tendon><actuator>{actuators}</actuator></mujoco>')
    return mujoco.MjModel.from_xml_string(xml)


def discrete_servo_state(seed: int) -> tuple:
    """(m, d): discrete_servo_model(seed) with its limit, the solver at 1000 iterations, at a random state, velocities,
    controls and activations (from seed), after mj_forward."""
    m = discrete_servo_model(seed, limit=True)
    m.opt.iterations = 1000
    d = mujoco.MjData(m)
    rng = np.random.default_rng(seed)
    d.qpos[:] = engine.random_states(engine.from_mujoco(m), 1, seed)[0][0]
    d.qvel[:], d.ctrl[:], d.act[:] = rng.normal(size=m.nv), rng.normal(size=m.nu), rng.normal(size=m.na)
    mujoco.mj_forward(m, d)
    return m, d


@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_discrete_calls_on_two_models_in_turn_are_each_models_own(backend):
    """constraints' discrete calls keep each model's checks (constraints._discrete_model, per model): two servo models
    of different sizes called in turn, each call's qacc within 1e-7 of its own model's mj_forward (the servo test's
    bound); a cache that answered with the other model's checks would refuse or misread ctrl and act."""
    scenes = [(engine.from_mujoco(m), d) for m, d in map(discrete_servo_state, (0, 1))]   # nv 11, na 0; nv 10, na 1
    assert len({(model.nv, model.actuators.nu, model.actuators.na) for model, _ in scenes}) == 2
    for model, d in scenes + scenes[::-1]:
        res = run(backend, constraints.forward_dynamics, model, d.qpos, d.qvel, d.qfrc_passive + d.qfrc_actuator,
                  ctrl=d.ctrl, act=d.act)
        assert np.abs(res.qacc - d.qacc).max() <= 1e-7 * max(1.0, np.abs(d.qacc).max())


@pytest.mark.parametrize("backend", ["native", "numpy"])
@pytest.mark.parametrize("seed", range(2))
def test_discrete_forward_and_inverse_with_servos_are_mujocos(seed, backend, monkeypatch):
    """physai.constraints' forward and inverse dynamics of a discrete model with tendon springs and dampers, servos at a
    ctrl (their terms in the metric M + h B + h^2 K), a limit pressed past its range and a standalone free body (solved
    in its own block): mj_forward's qacc, the step map, within 1e-7 of its scale; mj_inverse's tau at it within 1e-12
    of the scale of its terms (mj_inverse after mj_forward, as MuJoCo's fwdinv check: seed 0's force-limited servo
    saturates, and mj_inverse in a new MjData, its actuator_force zero, keeps that servo's terms in the metric:
    hand-measured 15 N m from its own mj_forward)."""
    m, d = discrete_servo_state(seed)
    assert d.nefc
    model = engine.from_mujoco(m)
    def numpy_text(*args, **kwargs):
        raise AssertionError("the NumPy text's discrete runs ran on the compiled backend")

    if backend == "native":                             # the compiled discrete path, not the NumPy text's fallback
        monkeypatch.setattr(constraints, "_discrete_runs", numpy_text)
    res = run(backend, constraints.forward_dynamics, model, d.qpos, d.qvel, d.qfrc_passive + d.qfrc_actuator, ctrl=d.ctrl,
              act=d.act)
    assert np.abs(res.qacc - d.qacc).max() <= 1e-7 * max(1.0, np.abs(d.qacc).max())
    d2 = copy.copy(d)                    # mj_inverse reads which servos saturate from d.actuator_force (mj_forward's)
    mujoco.mj_inverse(m, d2)
    inv = run(backend, constraints.inverse_dynamics, model, d.qpos, d.qvel, d.qacc, ctrl=d.ctrl, act=d.act)
    scale = max(1.0, np.abs(d2.qfrc_inverse + d2.qfrc_passive).max(), np.abs(d2.qfrc_constraint).max())
    assert np.abs(inv.tau - (d2.qfrc_inverse + d2.qfrc_passive)).max() <= 1e-12 * scale


def test_a_discrete_servo_model_requires_ctrl_and_act():
    """A discrete model whose servos' terms in the metric depend on ctrl and act (their slopes, their saturation): left
    out, the step map would be 0.04 to 1 off mj_forward's (hand-measured), so forward_dynamics, inverse_dynamics and
    rows require them by name; a batch shares one ctrl and one act, and a batch of them is refused by name."""
    m = discrete_servo_model(1, limit=True)
    assert m.na
    model, d = engine.from_mujoco(m), mujoco.MjData(m)
    q, qd = np.stack([d.qpos] * 2), np.zeros((2, m.nv))
    for call in (lambda **kw: constraints.forward_dynamics(model, d.qpos, d.qvel, d.qfrc_passive, **kw),
                 lambda **kw: constraints.inverse_dynamics(model, d.qpos, d.qvel, d.qacc, **kw),
                 lambda **kw: constraints.rows(model, d.qpos, d.qvel, **kw)):
        with pytest.raises(InvalidArgumentError, match="^ctrl and act required"):
            call()
        with pytest.raises(InvalidArgumentError, match="^act required"):
            call(ctrl=d.ctrl)
    with pytest.raises(ShapeError, match="a batch of states shares one ctrl"):
        constraints.forward_dynamics(model, q, qd, qd, ctrl=np.zeros((2, m.nu)), act=d.act)


@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_a_discrete_models_ctrl_is_checked_on_both_backends(backend):
    """A NaN or a short ctrl on a discrete servo model: the same named error from forward_dynamics, inverse_dynamics
    and rows on both backends (the compiled inverse and rows returned finite numbers for a NaN ctrl, the compiled
    forward too; the NumPy text named it). Each after a good call on the model (what is kept of it per model,
    constraints._discrete_model, lets no bad input through), a NaN act too, and ctrl and act required as before."""
    m = discrete_servo_model(1, limit=True)
    model, d = engine.from_mujoco(m), mujoco.MjData(m)
    calls = (lambda **kw: constraints.forward_dynamics(model, d.qpos, d.qvel, d.qfrc_passive, **kw),
             lambda **kw: constraints.inverse_dynamics(model, d.qpos, d.qvel, d.qacc, **kw),
             lambda **kw: constraints.rows(model, d.qpos, d.qvel, **kw))
    for call in calls:
        run(backend, call, ctrl=d.ctrl, act=d.act)
        with pytest.raises(InvalidStateError, match=r"^ctrl\[0\] is nan"):
            run(backend, call, ctrl=np.full(m.nu, np.nan), act=d.act)
        with pytest.raises(ShapeError, match=rf"^ctrl .*{m.nu - 1}.*{m.nu}"):
            run(backend, call, ctrl=np.zeros(m.nu - 1), act=d.act)
        with pytest.raises(InvalidStateError, match=r"^act\[0\] is nan"):
            run(backend, call, ctrl=d.ctrl, act=np.full(m.na, np.nan))
        with pytest.raises(InvalidArgumentError, match="^ctrl and act required"):
            run(backend, call)


def random_start_and_mj_steps(m: mujoco.MjModel, seed: int, rng: np.random.Generator):
    """(physai model, q0, qd0, ctrl, mj_step's qpos (100, nq), its qvel (100, nv)) from a random state, velocity and
    control (random_states' seed, then rng)."""
    d = mujoco.MjData(m)
    model = engine.from_mujoco(m)
    d.qpos[:] = engine.random_states(model, 1, seed)[0][0]
    d.qvel[:] = rng.normal(size=m.nv)
    d.ctrl[:] = ctrl = rng.normal(size=m.nu)
    q0, qd0 = d.qpos.copy(), d.qvel.copy()
    return (model, q0, qd0, ctrl, *mj.steps(m, d, 100))


@pytest.mark.parametrize("backend", ["native", "numpy"])
@pytest.mark.parametrize("limit", [False, True])
@pytest.mark.parametrize("seed", range(3))
def test_discrete_integrator_with_tendons_and_servos_follows_mj_step(seed, limit, backend):
    """The discrete metric M + h B + h^2 K with the tendons' J^T diag(b) J and J^T diag(k) J and the servos' slopes kept
    with their stabilizing sign (engine.forward.discrete_metric_terms), on random chains with fixed and spatial tendon springs
    and dampers, position, velocity and affine servos (filters, force limits), with and without a limit row: 100 steps
    of simulate and rollout within 1e-10 of mj_step in q and qd, one step within 1e-12 (the compiled backend hands the
    step to the NumPy engine: engine.forward.compiled_discrete)."""
    model, q0, qd0, ctrl, Q, QD = random_start_and_mj_steps(discrete_servo_model(seed, limit), seed, np.random.default_rng(seed))
    traj = run(backend, integ.simulate, model, q0, qd0, steps=100, ctrl=ctrl, energy=False)
    assert np.abs(traj.q[1:] - Q).max() < 1e-10
    assert np.abs(traj.qd[1:] - QD).max() < 1e-10
    q1, qd1 = run(backend, integ.step, model, q0, qd0, ctrl=ctrl)[:2]              # (q, qd, act) with a filter
    assert np.abs(q1 - Q[0]).max() < 1e-12 and np.abs(qd1 - QD[0]).max() < 1e-12
    batch = run(backend, integ.rollout, model, np.stack([q0, q0]), np.stack([qd0, qd0]), steps=100, ctrl=ctrl, energy=False)
    assert np.abs(batch.q[:, 1:] - Q).max() < 1e-10


@pytest.mark.parametrize("backend", ["native", "numpy"])
@pytest.mark.parametrize("case", ["an affine velocity gain through a site on a free body (outside the metric for one sign of ctrl)",
                                  "a spatial tendon's spring and damper from the world",
                                  "an affine velocity gain on a free dof (either sign of ctrl) and a servo"])
def test_discrete_free_bodies_the_metric_couples_follow_mj_step(case, backend):
    """A standalone free body that the discrete metric's tendon or actuator terms reach is solved in the whole metric, one
    they do not reach in its implicitfast block without actuator damping (engine.forward.discrete_metric_terms; before,
    physai solved both in blocks with the actuators' damping: 3e-5 off mj_step in qd after one step): 100 steps from a
    random state with ctrl of either sign (an affine velocity gain leaves the metric for one), solver tolerance 1e-15:
    one step within 1e-12 of mj_step, 100 within 1e-10. MuJoCo solves the metric's tendon and actuator terms
    iteratively to opt.tolerance even without rows: at the default 1e-8 its step is not affine in qfrc_applied and sits
    2e-10 (the spatial tendon) and 7e-10 (the site actuator in the metric) in qd a step from the exact solve physai
    makes; at 1e-15 both follow to rounding (1.4e-15 a step, 5e-14 after 100 measured)."""
    from test_derivatives import FREE_COUPLED
    m = mujoco.MjModel.from_xml_string(FREE_COUPLED[case])
    m.opt.tolerance = 1e-15
    model = engine.from_mujoco(m)
    q, qd = engine.random_states(model, 1, 3, qd_max=2.0)
    for sign in (1, -1):
        d = mujoco.MjData(m)
        d.qpos[:], d.qvel[:], d.ctrl[:] = q[0], qd[0], sign * np.linspace(0.4, 0.7, m.nu)
        ctrl = d.ctrl.copy()
        Q, QD = mj.steps(m, d, 100)
        traj = run(backend, integ.simulate, model, q[0], qd[0], steps=100, ctrl=ctrl, energy=False)
        assert np.abs(traj.q[1] - Q[0]).max() < 1e-12 and np.abs(traj.qd[1] - QD[0]).max() < 1e-12
        bound = 1e-10
        assert np.abs(traj.q[1:] - Q).max() < bound and np.abs(traj.qd[1:] - QD).max() < bound


def discrete_cross_tree_model(seed: int, limits: bool = False, islands: bool = True,
                              friction: bool = False, apart: bool = False) -> mujoco.MjModel:
    """Random trees that the discrete metric couples: a branched tree (a hinge root, two branches of hinges and slides,
    one with a ball), a chain of a hinge and a slide, and a standalone free body; a fixed tendon over joints of both
    branches and the chain, spatial tendons from a branch to the chain and from the chain to the free body, each with a
    random spring (a dead band for the fixed one) and damper, position and velocity servos on two of them; with
    `limits` a limited hinge in each jointed tree pressed past its range (rows, islands joined by the metric), islands
    on or off; with `friction` friction loss on the hinges and the free body resting on a floor (friction rows, for
    noslip); with `apart` a limited pendulum no tendon reaches (its own island). Solver tolerance 1e-15 (MuJoCo solves
    the metric's couplings iteratively to its tolerance)."""
    rng = np.random.default_rng(seed)
    num = lambda *x: " ".join(f"{v:.6g}" for v in x)                                    # noqa: E731
    lim = ' limited="true" range="-.2 .2"' if limits else ""

    def joint(name, kind, extra=""):
        spring = "" if kind == "ball" else f' stiffness="{num(rng.uniform(0, 3))}"'    # physai: hinges and slides
        loss = ' frictionloss=".3"' if friction and kind == "hinge" else ""
        return (f'<joint name="{name}" type="{kind}" axis="{num(*rng.normal(size=3))}" damping="{num(rng.uniform(0, .5))}"'
                f'{spring}{extra}{loss}/>')

    def link(inner, name, kind, extra="", site=""):
        return (f'<body pos="{num(*rng.uniform(-.2, .2, 3))}">{joint(name, kind, extra) if kind else ""}'
                f'<geom type="box" size="{num(*rng.uniform(.03, .1, 3))}" pos="{num(*rng.uniform(-.1, .1, 3))}"/>'
                f'{site}{inner}</body>')

    left = link(link("", "a2", "slide"), "a1", "hinge", lim, '<site name="sa" pos=".1 0 .05"/>')
    right = link(link("", "b2", "ball"), "b1", "slide")
    branched = link(left + right, "r", "hinge")
    chain = link(link("", "c2", "slide", "", '<site name="sc" pos="0 .1 0"/>'), "c1", "hinge", lim)
    contact = ' contype="1" conaffinity="1"' if friction else ""
    free = (f'<body pos="1 .5 .3"><freejoint/><geom type="box" size=".1 .2 .05"{contact}/><site name="sf" pos=".1 0 0"/>'
            '</body>' + ('<geom type="plane" size="5 5 .1" pos="0 0 .2501" contype="1" conaffinity="1"/>' if friction else ""))
    coefs = "".join(f'<joint joint="{j}" coef="{num(rng.normal())}"/>' for j in ("a1", "a2", "b1", "c1", "c2"))
    low = rng.uniform(-.3, .3)
    spring = lambda: f'stiffness="{num(rng.uniform(0, 40))}" damping="{num(rng.uniform(0, 2))}"'      # noqa: E731
    tendons = (f'<fixed name="fx" {spring()} springlength="{num(low, low + rng.uniform(0, .2))}">{coefs}</fixed>'
               f'<spatial name="ac" {spring()} springlength="{num(rng.uniform(0, .3))}"><site site="sa"/><site site="sc"/>'
               f'</spatial><spatial name="cf" {spring()}><site site="sc"/><site site="sf"/></spatial>')
    actuators = (f'<position tendon="fx" kp="{num(rng.uniform(10, 60))}" kv="{num(rng.uniform(0, 2))}"/>'
                 f'<velocity tendon="cf" kv="{num(rng.uniform(0, 3))}"/><motor joint="r"/>')
    flags = "" if islands else '<flag island="disable"/>'
    xml = (f'<mujoco><option integrator="discrete" timestep="{num(rng.uniform(.002, .01))}" tolerance="1e-15">{flags}'
           f'</option><default><geom contype="0" conaffinity="0"/></default><worldbody>'
           f'<body pos="0 0 .5">{branched}</body><body pos=".8 0 .5">{chain}</body>{free}{APART if apart else ""}'
           '</worldbody>'
           f'<tendon>{tendons}</tendon><actuator>{actuators}</actuator></mujoco>')
    return mujoco.MjModel.from_xml_string(xml)


APART = ('<body pos="-1 0 .5"><joint name="x1" axis="0 1 0" limited="true" range="-.2 .2" damping=".3" stiffness="2"/>'
         '<geom type="box" size=".05 .05 .2" pos="0 0 -.2"/><body pos="0 0 -.4"><joint name="x2" type="slide" '
         'axis="1 0 0" damping=".2"/><geom type="box" size=".05 .05 .05"/></body></body>')


def cross_tree_start(m: mujoco.MjModel, seed: int, limits: bool):
    """(physai model, q0, qd0, ctrl, MuJoCo's nefc there, mj_step's qpos (100, nq), its qvel (100, nv)) from a random
    state of discrete_cross_tree_model, its limited hinges past their range when `limits`."""
    rng = np.random.default_rng(seed)
    model = engine.from_mujoco(m)
    d = mujoco.MjData(m)
    d.qpos[:] = engine.random_states(model, 1, seed)[0][0]
    if limits:
        for name in [j for j in ("a1", "c1", "x1") if mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, j) >= 0]:
            d.qpos[m.joint(name).qposadr[0]] = .25 * rng.choice([-1, 1])
    d.qvel[:] = rng.normal(size=m.nv)
    d.ctrl[:] = ctrl = rng.normal(size=m.nu)
    q0, qd0 = d.qpos.copy(), d.qvel.copy()
    mujoco.mj_forward(m, d)
    return (model, q0, qd0, ctrl, d.nefc, *mj.steps(m, d, 100))


@pytest.mark.parametrize("backend", ["native", "numpy"])
@pytest.mark.parametrize("limits, islands", [(False, True), (True, True), (True, False)])
@pytest.mark.parametrize("seed", range(3))
def test_discrete_metric_coupling_branches_and_trees_follows_mj_step(seed, limits, islands, backend):
    """Tendon springs, dampers and servos that couple two branches of one tree, two trees and a free body in the discrete
    metric M + h B + h^2 K (its entries off the tree's pattern: the solver's metric_solve solves densely there, and the
    rows' islands join the trees the metric couples; before, the tree's factor dropped those entries: 8e-9 to 1.5e-3
    off mj_step in qd after one step, refused): random discrete_cross_tree_model scenes with and without limit rows,
    islands on and off: 100 steps of simulate within 1e-10 of mj_step in q and qd, one step within 1e-12, a
    rollout of two states (20 steps) within 1e-10."""
    m = discrete_cross_tree_model(seed, limits, islands)
    model, q0, qd0, ctrl, nefc, Q, QD = cross_tree_start(m, seed, limits)
    assert (nefc > 0) == limits
    traj = run(backend, integ.simulate, model, q0, qd0, steps=100, ctrl=ctrl, energy=False)
    assert np.abs(traj.q[1:] - Q).max() < 1e-10 and np.abs(traj.qd[1:] - QD).max() < 1e-10
    q1, qd1 = run(backend, integ.step, model, q0, qd0, ctrl=ctrl)[:2]
    assert np.abs(q1 - Q[0]).max() < 1e-12 and np.abs(qd1 - QD[0]).max() < 1e-12
    batch = run(backend, integ.rollout, model, np.stack([q0, q0]), np.stack([qd0, qd0]), steps=20, ctrl=ctrl, energy=False)
    assert np.abs(batch.q[:, 1:] - Q[:20]).max() < 1e-10


@pytest.mark.parametrize("solver, scene", [("newton", "limits"), ("newton", "no islands"), ("newton", "apart"),
                                           ("newton", "noslip"), ("cg", "limits"), ("cg", "apart")])
@pytest.mark.parametrize("seed", range(2))
def test_the_compiled_discrete_step_solves_rows_in_the_coupled_metric(seed, solver, scene, monkeypatch):
    """With rows under Newton or CG the compiled discrete step minimises in the whole metric M^ = M + h B + h^2 K with its
    tendon and servo terms itself (cpp/solver.h's metric_model: M^ on a chain of every dof here, a0 and CG
    preconditioned with its factored part, noslip's Delassus matrix in that part, the islands the metric couples
    joined), the NumPy engine's discrete step never called (before: handed to it, engine.forward.compiled_discrete):
    discrete_cross_tree_model scenes with limit rows past their ranges (islands on, off, a pendulum apart) or with
    friction loss, the free body's contacts and noslip (5 sweeps). Newton: one step within 1e-12 of mj_step's and of the
    NumPy engine's, simulate 30 steps within 1e-12 of the NumPy engine's (4.3e-13 seen). CG at tolerance 1e-15, whose
    iterates amplify the products' rounding (test_discrete_metric_couplings_under_cg_follow_mj_step_iterate_by_iterate:
    1.4e-11 a step under another BLAS): one step within 5e-11 of mj_step's and of the NumPy engine's (1.6e-11 seen),
    the 30 steps within 1e-9 of the NumPy engine's. A rollout of 3 random states (20 steps; |qd| to 10), whose states
    amplify rounding up to tenfold a step: within 10 times (+ 1e-12) the NumPy engine's own move when its qd is scaled
    by 1 + 1e-15 (Newton 7.2e-11 seen against a move of 7.8e-11, CG 6.0e-10 against 8.7e-10; at most 2x the move)."""
    noslip, apart = scene == "noslip", scene == "apart"
    m = discrete_cross_tree_model(seed, True, scene != "no islands", friction=noslip, apart=apart)
    m.opt.solver = mujoco.mjtSolver.mjSOL_CG if solver == "cg" else mujoco.mjtSolver.mjSOL_NEWTON
    m.opt.noslip_iterations, m.opt.noslip_tolerance = (5, 1e-15) if noslip else (0, 1e-6)
    model, q0, qd0, ctrl, nefc, Q, QD = cross_tree_start(m, seed, True)
    assert nefc > 0 and model.opt.solver == solver
    q, qd = engine.random_states(model, 3, seed + 7, qd_max=2.0)

    def numpy_step(*args):
        raise AssertionError("the NumPy engine's discrete step ran on the compiled backend")

    with monkeypatch.context() as patch:
        patch.setitem(engine.forward.STEPPERS, "discrete", numpy_step)
        q1, qd1 = run("native", integ.step, model, q0, qd0, ctrl=ctrl)[:2]
        traj = run("native", integ.simulate, model, q0, qd0, steps=30, ctrl=ctrl, energy=False)
        batch = run("native", integ.rollout, model, q, qd, steps=20, ctrl=ctrl, energy=False)
    one, many = (1e-12, 1e-12) if solver == "newton" else (5e-11, 1e-9)
    assert np.abs(q1 - Q[0]).max() < one and np.abs(qd1 - QD[0]).max() < one
    q1_numpy, qd1_numpy = run("numpy", integ.step, model, q0, qd0, ctrl=ctrl)[:2]
    assert np.abs(q1 - q1_numpy).max() < one and np.abs(qd1 - qd1_numpy).max() < one
    reference = run("numpy", integ.simulate, model, q0, qd0, steps=30, ctrl=ctrl, energy=False)
    assert np.abs(traj.q - reference.q).max() < many and np.abs(traj.qd - reference.qd).max() < many
    reference = run("numpy", integ.rollout, model, q, qd, steps=20, ctrl=ctrl, energy=False)
    moved = run("numpy", integ.rollout, model, q, qd * (1 + 1e-15), steps=20, ctrl=ctrl, energy=False)
    states = 10 * max(np.abs(moved.q - reference.q).max(), np.abs(moved.qd - reference.qd).max()) + 1e-12
    assert np.abs(batch.q - reference.q).max() < states and np.abs(batch.qd - reference.qd).max() < states


def discrete_joint_servo_model(seed: int, across: bool = False) -> mujoco.MjModel:
    """A branched tree for the discrete metric's layout (the G1's joint-level servos): a hinge root and two branches of
    two hinges, each hinge with damping, stiffness, friction loss (rows) and a position servo with kp and kv (its B and
    K terms diagonal: inside M's tree pattern), the branches' first hinges limited, a standalone free body; with
    `across` a fixed tendon spring and damper over the two branches' first hinges (its J^T k J between branches: off the
    pattern). Solver Newton at tolerance 1e-15."""
    rng = np.random.default_rng(seed)
    num = lambda *x: " ".join(f"{v:.6g}" for v in x)                                    # noqa: E731

    def link(inner, name, extra=""):
        return (f'<body pos="{num(*rng.uniform(-.2, .2, 3))}"><joint name="{name}" axis="{num(*rng.normal(size=3))}" '
                f'damping="{num(rng.uniform(0, .5))}" stiffness="{num(rng.uniform(0, 3))}" frictionloss=".3"{extra}/>'
                f'<geom type="box" size="{num(*rng.uniform(.03, .1, 3))}" pos="{num(*rng.uniform(-.1, .1, 3))}"/>{inner}</body>')

    lim = ' limited="true" range="-.2 .2"'
    tree = link(link(link("", "a2"), "a1", lim) + link(link("", "b2"), "b1", lim), "r")
    servos = "".join(f'<position joint="{j}" kp="{num(rng.uniform(10, 100))}" kv="{num(rng.uniform(.5, 3))}"/>'
                     for j in ("r", "a1", "a2", "b1", "b2"))
    tendon = (f'<tendon><fixed stiffness="{num(rng.uniform(5, 40))}" damping="{num(rng.uniform(.1, 2))}">'
              f'<joint joint="a1" coef="1"/><joint joint="b1" coef="-1"/></fixed></tendon>' if across else "")
    xml = (f'<mujoco><option integrator="discrete" timestep="{num(rng.uniform(.002, .01))}" tolerance="1e-15"/>'
           f'<default><geom contype="0" conaffinity="0"/></default><worldbody><body pos="0 0 .5">{tree}</body>'
           f'<body pos="1 .5 .3"><freejoint/><geom type="box" size=".1 .2 .05"/></body></worldbody>{tendon}'
           f'<actuator>{servos}</actuator></mujoco>')
    return mujoco.MjModel.from_xml_string(xml)


@pytest.mark.parametrize("across", [False, True])
@pytest.mark.parametrize("seed", range(2))
def test_the_discrete_metric_is_factored_on_the_trees_pattern_when_its_terms_fit_it(seed, across):
    """With rows, the discrete metric M^ = M + h B + h^2 K whose tendon and servo terms stay on M's tree pattern (the
    joints' servos: diagonal) is factored on the tree's sparse layout, as M; terms between branches (a fixed tendon over
    two) put it on a chain of every dof, factored densely (cpp/solver.h's metric_model; the NumPy engine's metric_solve,
    by solver.off_pattern, decides alike): discrete_joint_servo_model scenes (friction loss and limit rows), 30 steps of
    the compiled simulate counted by the test hook _native._dense_metric (none on the chain for the servos alone, one
    a step with the tendon) and again with the chain forced: within 1e-13 of each other in q and qd (the same metric,
    its factor on the tree's pattern without fill-in: 0 seen), both within 1e-12 of mj_step's and of the NumPy
    engine's (3.6e-14 seen, |qd| to 60)."""
    m = discrete_joint_servo_model(seed, across)
    rng = np.random.default_rng(seed)
    model = engine.from_mujoco(m)
    d = mujoco.MjData(m)
    d.qpos[:] = engine.random_states(model, 1, seed)[0][0]
    for j in ("a1", "b1"):                                     # past their ranges: limit rows
        d.qpos[m.joint(j).qposadr[0]] = .25 * rng.choice([-1, 1])
    d.qvel[:], d.ctrl[:] = rng.normal(size=m.nv), rng.normal(size=m.nu)
    q0, qd0, ctrl = d.qpos.copy(), d.qvel.copy(), d.ctrl.copy()
    Q, QD = mj.steps(m, d, 30)
    B, K = forward.discrete_metric_terms(model, q0, qd0, model.opt.timestep, model.actuators, ctrl)[:2]
    assert solver.off_pattern(model, B + K).any() == across     # the NumPy engine's choice: dense only across
    dense_metric = native._ext._dense_metric
    dense_metric(False)
    try:
        mine = run("native", integ.simulate, model, q0, qd0, steps=30, ctrl=ctrl, energy=False)
        made = dense_metric(True)
        chain = run("native", integ.simulate, model, q0, qd0, steps=30, ctrl=ctrl, energy=False)
        forced = dense_metric(False)
    finally:
        dense_metric(False)
    assert made == (30 if across else 0) and forced == 30
    assert np.abs(mine.q - chain.q).max() < 1e-13 and np.abs(mine.qd - chain.qd).max() < 1e-13
    reference = run("numpy", integ.simulate, model, q0, qd0, steps=30, ctrl=ctrl, energy=False)
    for traj in (mine, chain):
        assert np.abs(traj.q[1:] - Q).max() < 1e-12 and np.abs(traj.qd[1:] - QD).max() < 1e-12
        assert np.abs(traj.q - reference.q).max() < 1e-12 and np.abs(traj.qd - reference.qd).max() < 1e-12


def discrete_servo_contact_model(solver: str, noslip: int) -> mujoco.MjModel:
    """Two servoed trees touching under a falling free body, for the discrete metric on the tree's layout with rows across
    trees: each tree a z hinge under a box 2 mm above the floor and two branches of two y hinges (the first limited),
    every hinge with a position servo (kp 50, kv 2: diagonal terms), the second tree's branch reaching into the first's
    (contacts between the trees), a free box 0.8 m up; pyramidal cones, `solver` ("Newton" at tolerance 1e-15, or "CG"
    at 1e-10: at 1e-15 CG runs out of its iterations here, its last iterate set by rounding), `noslip` sweeps. A box on
    the floor instead touches it at a rounding-sized depth with normal rows the z hinge cannot move (J's pyramid pair
    sums 0): R at its floor 2e-15, their forces ~2e4 N set by rounding times D = 5e14, noslip's friction bounds with
    them, so that any order of sums but MuJoCo's own lands 1e-5 to 5e-4 from mj_step in qd after noslip."""
    def tree(name, x):
        def branch(s, side):
            return (f'<body pos="{.1 * side} 0 .25"><joint name="{name}{s}1" axis="0 1 0" damping=".1" limited="true" '
                    f'range="-.3 .3"/><geom type="capsule" fromto="0 0 0 {.3 * side} 0 0" size=".05"/>'
                    f'<body pos="{.3 * side} 0 0"><joint name="{name}{s}2" axis="0 1 0"/>'
                    f'<geom type="capsule" fromto="0 0 0 {-.25 * side} 0 0" size=".05"/></body></body>')
        return (f'<body pos="{x} 0 .102"><joint name="{name}r" axis="0 0 1"/><geom type="box" size=".1 .1 .1"/>'
                f'{branch("a", 1)}{branch("b", -1)}</body>')
    servos = "".join(f'<position joint="{t}{j}" kp="50" kv="2"/>' for t in "LR" for j in ("r", "a1", "a2", "b1", "b2"))
    tolerance = 1e-15 if solver == "Newton" else 1e-10
    return mujoco.MjModel.from_xml_string(
        f'<mujoco><option integrator="discrete" timestep=".005" solver="{solver}" cone="pyramidal" tolerance="{tolerance}" '
        f'noslip_iterations="{noslip}" noslip_tolerance="1e-15"/><worldbody><geom type="plane" size="5 5 .1"/>'
        f'{tree("L", 0)}{tree("R", .35)}<body pos="0 0 .8"><freejoint/><geom type="box" size=".2 .2 .05"/></body>'
        f'</worldbody><actuator>{servos}</actuator></mujoco>')


@pytest.mark.parametrize("method, noslip", [("Newton", 0), ("Newton", 5), ("CG", 0)])
@pytest.mark.parametrize("seed", range(2))
def test_the_discrete_metric_on_the_trees_pattern_solves_contacts_across_trees(seed, method, noslip):
    """Contact rows spanning two trees and a free body, the metric's servo terms on M's pattern: the compiled discrete
    step keeps M^ = M + h B + h^2 K on the tree's sparse layout (none on the chain, test hook _native._dense_metric),
    Newton's Hessian M^ + J^T D J on its factor pattern, CG preconditioned by M^'s factor, noslip's Delassus matrix in
    it (5 sweeps); discrete_servo_contact_model (8 to 24 contacts), one step from each of mj_step's first 5 states
    (before chaos amplifies a difference), beside the same step with the chain forced, mj_step's and the NumPy engine's
    (noslip too: its Delassus matrix J M^-1 J^T holds the same factor). Bounds from M^ (nv, nv) at each state and the
    step's velocity change dv = |qd_{k+1} - qd_k|_max: two factorings of M^ differ by Cholesky's backward error (nv + 1)
    eps |M^| (Higham), so a solve's forward error is (nv + 1) eps cond(M^) dv (H >= M^: its minimiser moves no more);
    the forced chain (the same minimiser) within that, mj_step and the NumPy engine (another factor order) within twice
    it (Newton 5e-15 seen, 1e-13 after noslip, against 1.4e-12 to 9e-12, cond(M^) 244). CG at tolerance 1e-10 stops on a
    relative improvement, which leaves a cost gap of about tol / scale = tol trace(M^) (solver's scale): qacc within
    sqrt(2 tol trace(M^) / lambda_min(M^)) of the minimiser, h times it in qd; mj_step and the NumPy engine, whose
    iterates amplify rounding otherwise, within twice that (7.6e-7 seen against 4e-6); the forced chain within the
    rounding bound (0 seen: the same iterates)."""
    m = discrete_servo_contact_model(method, noslip)
    model, d = engine.from_mujoco(m), mujoco.MjData(m)
    rng = np.random.default_rng(seed)
    d.qvel[:], d.ctrl[:] = rng.normal(size=m.nv), rng.normal(size=m.nu)
    ctrl, h, eps, q0, qd0 = d.ctrl.copy(), m.opt.timestep, np.finfo(float).eps, d.qpos.copy(), d.qvel.copy()
    Q, QD = mj.steps(m, d, 5)
    Q, QD = np.vstack([q0, Q]), np.vstack([qd0, QD])
    dense_metric = native._ext._dense_metric
    for k in range(5):
        M = np.zeros((m.nv, m.nv))
        d.qpos[:], d.qvel[:] = Q[k], QD[k]
        mujoco.mj_forward(m, d)
        mujoco.mj_fullM(m, d, M)
        B, K = forward.discrete_metric_terms(model, Q[k], QD[k], h, model.actuators, ctrl)[:2]
        assert not solver.off_pattern(model, B + K).any() and d.ncon > 0
        metric = M + h * B + h * h * K                                 # M^
        rounding = (m.nv + 1) * eps * np.linalg.cond(metric) * np.abs(QD[k + 1] - QD[k]).max()
        gap = h * np.sqrt(2 * m.opt.tolerance * np.trace(metric) / np.linalg.eigvalsh(metric)[0])
        dense_metric(False)
        try:
            mine = run("native", integ.step, model, Q[k], QD[k], ctrl=ctrl)[:2]
            made = dense_metric(True)
            chain = run("native", integ.step, model, Q[k], QD[k], ctrl=ctrl)[:2]
            forced = dense_metric(False)
        finally:
            dense_metric(False)
        assert made == 0 and forced == 1
        far = lambda a, b: max(np.abs(a[0] - b[0]).max(), np.abs(a[1] - b[1]).max())   # noqa: E731
        bound = rounding if method == "Newton" else gap
        assert far(mine, chain) < rounding and far(mine, (Q[k + 1], QD[k + 1])) < 2 * bound
        assert far(mine, run("numpy", integ.step, model, Q[k], QD[k], ctrl=ctrl)[:2]) < 2 * bound


@pytest.mark.parametrize("solver", ["newton", "pgs"])
@pytest.mark.parametrize("fluid", [False, True])
@pytest.mark.parametrize("seed", range(2))
def test_the_compiled_discrete_step_takes_the_tendon_servo_and_fluid_terms(seed, fluid, solver, monkeypatch):
    """The compiled engine steps the discrete metric's tendon springs and dampers, servo slopes (cpp/forward.h's
    coupling_terms, solved by CG preconditioned with the factored part: metric_pcg) and the inertia boxes' fluid drag
    (factored, on MuJoCo's reduced pattern) itself, the NumPy engine's discrete step never called (before: handed to it,
    0.01x mj_step's speed): random discrete_servo_model chains (a free body beside them, or air instead: fluid on a free
    body is refused), Newton (the terms in the metric) and PGS (explicit, at h = 1 ms: the chains' stiff servos diverge
    explicitly at their own steps, in MuJoCo too): simulate 100 steps within 1e-10 of mj_step,
    step within 1e-12, and a rollout of 3 random states within 1e-12 of the NumPy engine's."""
    m = discrete_servo_model(seed, free=not fluid)
    if fluid:
        m.opt.density, m.opt.viscosity = 1.2, 0.02
    if solver == "pgs":                                # the servos explicit: a step short enough for them
        m.opt.solver, m.opt.timestep = mujoco.mjtSolver.mjSOL_PGS, 0.001
    model, q0, qd0, ctrl, Q, QD = random_start_and_mj_steps(m, seed, np.random.default_rng(seed))
    q, qd = engine.random_states(model, 3, seed + 7, qd_max=2.0)

    def numpy_step(*args):
        raise AssertionError("the NumPy engine's discrete step ran on the compiled backend")

    with monkeypatch.context() as patch:
        patch.setitem(engine.forward.STEPPERS, "discrete", numpy_step)
        traj = run("native", integ.simulate, model, q0, qd0, steps=100, ctrl=ctrl, energy=False)
        q1, qd1 = run("native", integ.step, model, q0, qd0, ctrl=ctrl)[:2]
        batch = run("native", integ.rollout, model, q, qd, steps=50, ctrl=ctrl, energy=False)
    assert np.abs(traj.q[1:] - Q).max() < 1e-10 and np.abs(traj.qd[1:] - QD).max() < 1e-10
    assert np.abs(q1 - Q[0]).max() < 1e-12 and np.abs(qd1 - QD[0]).max() < 1e-12
    reference = run("numpy", integ.rollout, model, q, qd, steps=50, ctrl=ctrl, energy=False)
    assert np.abs(batch.q - reference.q).max() < 1e-12 and np.abs(batch.qd - reference.qd).max() < 1e-12


@pytest.mark.parametrize("armature", [0.0, 0.5])
def test_a_simple_body_whose_joints_mujocos_reduced_mass_matrix_decouples_is_refused(armature):
    """Two slides along one axis on a body MuJoCo's compiler marks simple: MuJoCo's reduced M drops their coupling
    (mj_fullM is diagonal), physai's M keeps it (singular without armature): refused by name at load, on either engine,
    where before the step was 4e-2 off mj_step (or, compiled and without armature, silently wrong)."""
    xml = f"""<mujoco><worldbody><body pos=".5 0 .6"><joint name="a" type="slide" axis="0 0 1"/>
      <joint name="c" type="slide" axis="0 0 1" armature="{armature}"/><geom type="sphere" size=".08"/></body>
      </worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    assert (m.dof_simplenum > 0).all()
    with pytest.raises(UnsupportedModelError, match="'a' and 'c' move one body that MuJoCo's compiler marks simple"):
        engine.from_mujoco(m)


def test_discrete_fluid_drag_on_a_simple_body_keeps_mujocos_reduced_pattern():
    """A body with two slides and a hinge (MuJoCo's compiler marks it simple: no off-diagonal entries in its reduced M)
    in air under the discrete integrator: the fluid drag's damping joins the factored metric on MuJoCo's reduced pattern
    (forward.joint_fluid_damping), as implicitfast's; 50 steps within 1e-10 of mj_step (the full pattern: 1e-8)."""
    xml = """<mujoco><option integrator="discrete" timestep=".005" density="1000" viscosity=".5"/><worldbody>
      <body pos=".5 0 .6"><joint type="slide" axis="1 0 0"/><joint type="slide" axis="0 1 0"/>
        <joint type="hinge" axis="0 0 1" damping=".1"/><geom type="box" size=".1 .2 .05"/></body></worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    assert (m.dof_simplenum > 0).all()
    d = mujoco.MjData(m)
    qd0 = np.random.default_rng(0).uniform(-1, 1, m.nv)
    d.qvel[:] = qd0
    out = integ.simulate(engine.from_mujoco(m), m.qpos0, qd0, m.opt.timestep, 50, "discrete", energy=False,
                         constraints=False)
    for _ in range(50):
        mujoco.mj_step(m, d)
    assert np.abs(out.qd[-1] - d.qvel).max() < 1e-10


NEWTON_SCENE = """<mujoco><option integrator="discrete" timestep=".005"/><worldbody><geom type="plane" size="3 3 .1"/>
  <body pos="0 0 .12"><freejoint/><geom type="box" size=".1 .1 .1"/><site name="s1" pos=".1 0 0"/></body>
  <body pos=".5 0 .12"><freejoint/><geom type="box" size=".1 .1 .1"/><site name="s2" pos="-.1 0 0"/></body>
  <body pos="1 1 .5"><joint name="hb" axis="0 1 0" damping=".2"/><geom type="capsule" fromto="0 0 0 .3 0 0" size=".05"/>
  </body></worldbody>
  <tendon><spatial stiffness="40" damping="3" springlength=".2"><site site="s1"/><site site="s2"/></spatial></tendon>
  <actuator><velocity joint="hb" kv="3"/><position joint="hb" kp="20"/></actuator></mujoco>"""


@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_discrete_newton_solves_the_smooth_step_in_the_metric_as_mujocos_iterations(backend):
    """Two free boxes linked by a damped spring tendon beside a servoed hinge, under the discrete integrator and Newton
    at MuJoCo's default tolerance 1e-8: MuJoCo's a0 = M^-1 qfrc_smooth is preconditioned CG in the factored metric to
    opt.tolerance (the steps without rows included), as under CG (forward.cg_backbone): 30 steps within 1e-12 of
    mj_step (with a0 exact: 2.5e-9)."""
    m = mujoco.MjModel.from_xml_string(NEWTON_SCENE)
    d = mujoco.MjData(m)
    qd0 = np.random.default_rng(1).uniform(-.5, .5, m.nv)
    d.qvel[:], d.ctrl[:] = qd0, 0.3
    out = run(backend, integ.simulate, engine.from_mujoco(m), m.qpos0, qd0, m.opt.timestep, 30, "discrete",
              np.full(m.nu, 0.3), energy=False)
    for _ in range(30):
        mujoco.mj_step(m, d)
    assert np.abs(out.qd[-1] - d.qvel).max() < 1e-12


def test_discrete_smooth_solve_at_its_iteration_cap_warns():
    """The same scene with opt.iterations 1: the smooth solve in the metric stops at the cap, as MuJoCo's (which counts
    mjWARN_INERTIA): a ConvergenceWarning names it, and the step still follows mj_step's under-converged one (1e-12)."""
    m = mujoco.MjModel.from_xml_string(NEWTON_SCENE)
    m.opt.iterations = 1
    d = mujoco.MjData(m)
    qd0 = np.random.default_rng(1).uniform(-.5, .5, m.nv)
    d.qvel[:], d.ctrl[:] = qd0, 0.3
    with pytest.warns(ConvergenceWarning, match="ran out of its 1 iterations"):
        out = integ.simulate(engine.from_mujoco(m), m.qpos0, qd0, m.opt.timestep, 3, "discrete", np.full(m.nu, 0.3),
                             energy=False)
    for _ in range(3):
        mujoco.mj_step(m, d)
    assert d.warning[mujoco.mjtWarning.mjWARN_INERTIA].number > 0
    assert np.abs(out.qd[-1] - d.qvel).max() < 1e-12


@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_discrete_newton_with_rows_warns_at_the_smooth_solves_cap(backend):
    """discrete_cross_tree_model(0) with its limit rows under Newton at opt.iterations 1: MuJoCo 4's a0 in the coupled
    metric is preconditioned CG with rows as without, and counts mjWARN_INERTIA at its cap (measured: in one mj_step at
    iterations 1, 2, 3 and 5 alike); physai's Newton solved a0 directly when rows were present and never warned (its CG
    did). Now ONE ConvergenceWarning on both backends, and the step still follows mj_step's (1e-12)."""
    m = discrete_cross_tree_model(0, limits=True)
    model, q0, qd0, ctrl = cross_tree_start(m, 0, True)[:4]
    m.opt.iterations = 1
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:], d.ctrl[:] = q0, qd0, ctrl
    mujoco.mj_step(m, d)
    assert m.opt.solver == mujoco.mjtSolver.mjSOL_NEWTON and d.nefc
    assert d.warning[mujoco.mjtWarning.mjWARN_INERTIA].number > 0                  # MuJoCo stops at the cap
    out, said = _convergence_warnings(run, backend, integ.simulate, engine.from_mujoco(m), q0, qd0, steps=1, ctrl=ctrl,
                                      energy=False)
    assert len(said) == 1 and "ran out of its 1 iterations" in said[0], said
    assert np.abs(out.q[-1] - d.qpos).max() < 1e-12 and np.abs(out.qd[-1] - d.qvel).max() < 1e-12


@pytest.mark.parametrize("backend", ["numpy", "native"])
@pytest.mark.parametrize("solver_name", ["cg", "newton"])
def test_discrete_smooth_solve_with_islands_warns_once_a_step_as_mujoco_counts(solver_name, backend):
    """NEWTON_SCENE's boxes lowered into the floor (rows every step, one island of the boxes' 12 dofs beside the hinge)
    at opt.iterations 1: MuJoCo solves a0 in the coupled metric once a step (mjWARN_INERTIA counted 5 times in 5 steps)
    and the islands take their part of it; physai's NumPy text solved it again per island (before: 10 warnings), and
    the compiled step's second solve overwrote the residual it names (before: 0.000127, the island's; now 0.000126,
    every dof's, as NumPy's: printed digits, not asserted). Now one ConvergenceWarning a step on NumPy, the compiled
    call's one, and both follow mj_step (1e-12)."""
    xml = NEWTON_SCENE.replace('pos="0 0 .12"', 'pos="0 0 .099"').replace('pos=".5 0 .12"', 'pos=".5 0 .099"')
    m = mujoco.MjModel.from_xml_string(xml)
    m.opt.iterations, m.opt.solver = 1, mujoco.mjtSolver.mjSOL_CG if solver_name == "cg" else mujoco.mjtSolver.mjSOL_NEWTON
    d = mujoco.MjData(m)
    qd0 = np.random.default_rng(1).uniform(-.5, .5, m.nv)
    d.qvel[:], d.ctrl[:] = qd0, 0.3
    for _ in range(5):
        mujoco.mj_step(m, d)
        assert d.nefc and d.nisland == 1                                          # one island, the hinge apart
    counted = d.warning[mujoco.mjtWarning.mjWARN_INERTIA].number
    assert counted == 5
    model = engine.from_mujoco(m)
    out, said = _convergence_warnings(run, backend, integ.simulate, model, m.qpos0, qd0, m.opt.timestep, 5, "discrete",
                                      np.full(m.nu, 0.3), energy=False)
    assert np.abs(out.q[-1] - d.qpos).max() < 1e-12 and np.abs(out.qd[-1] - d.qvel).max() < 1e-12
    assert len(said) == (counted if backend == "numpy" else 1), said


def _convergence_warnings(f, *args, **kwargs):
    """(f(*args, **kwargs), the messages of the ConvergenceWarnings it gave)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = f(*args, **kwargs)
    return out, [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]


@pytest.mark.parametrize("seed", [0, 2])
def test_the_compiled_discrete_smooth_solve_at_its_iteration_cap_warns(seed, monkeypatch):
    """The compiled discrete step's smooth solve in the metric with tendon and servo terms (cpp/forward.h's metric_pcg)
    stopped at opt.iterations silently where the NumPy engine's warns (before: no warning): discrete_servo_model chains
    with opt.iterations 1, which mj_step also stops at (it counts mjWARN_INERTIA): simulate, rollout (3 states), step
    and step_frames (2 states, 5 frames) on the compiled step (the NumPy engine's never called) each give ONE
    ConvergenceWarning naming the first step that stopped and how many runs met it, and still follow mj_step (100
    steps within 1e-10, one step and 5 frames within 1e-12); at the default 100 iterations none."""
    m = discrete_servo_model(seed)
    iterations = m.opt.iterations
    m.opt.iterations = 1
    model, q0, qd0, ctrl, Q, QD = random_start_and_mj_steps(m, seed, np.random.default_rng(seed))
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:], d.ctrl[:] = q0, qd0, ctrl
    mujoco.mj_step(m, d)
    assert d.warning[mujoco.mjtWarning.mjWARN_INERTIA].number > 0                  # MuJoCo stops at the cap too
    q, qd = engine.random_states(model, 3, seed + 7, qd_max=2.0)

    def numpy_step(*args):
        raise AssertionError("the NumPy engine's discrete step ran on the compiled backend")

    cap = r"ran out of its 1 iterations"
    with monkeypatch.context() as patch:
        patch.setitem(engine.forward.STEPPERS, "discrete", numpy_step)
        traj, said = _convergence_warnings(run, "native", integ.simulate, model, q0, qd0, steps=100, ctrl=ctrl, energy=False)
        assert len(said) == 1 and re.search(cap + " at step 1 at a relative residual", said[0]), said
        _, said = _convergence_warnings(run, "native", integ.rollout, model, q, qd, steps=10, ctrl=ctrl, energy=False)
        assert len(said) == 1 and re.search(cap + r" at step 1 of trajectory 0 \(3 of the 3 runs met it\)", said[0]), said
        (q1, qd1, *_), said = _convergence_warnings(run, "native", integ.step, model, q0, qd0, ctrl=ctrl)
        assert len(said) == 1 and re.search(cap + " in the step", said[0]), said
        frames, said = _convergence_warnings(run, "native", integ.step_frames, model, np.stack([q0, q0]),
                                             np.stack([qd0, qd0]), 5, ctrl=np.stack([ctrl, ctrl]))
        assert len(said) == 1 and re.search(cap + r" at frame 1 of state 0 \(2 of the 2 runs met it\)", said[0]), said
        m.opt.iterations = iterations
        _, said = _convergence_warnings(run, "native", integ.simulate, engine.from_mujoco(m), q0, qd0, steps=100,
                                        ctrl=ctrl, energy=False)
        assert said == []
    assert np.abs(traj.q[1:] - Q).max() < 1e-10 and np.abs(traj.qd[1:] - QD).max() < 1e-10
    assert np.abs(q1 - Q[0]).max() < 1e-12 and np.abs(qd1 - QD[0]).max() < 1e-12
    assert np.abs(frames.q - Q[4]).max() < 1e-12 and np.abs(frames.qd - QD[4]).max() < 1e-12


def test_the_compiled_cap_warning_survives_a_failing_state():
    """step_result(on_divergence="report") on the compiled discrete step at opt.iterations 1 (the cap met in every
    state) with state 0 not finite (never stepped) and state 3 diverging: before, no warning (the fast path gives up,
    the full path returned the failures first); now ONE ConvergenceWarning in step's words naming state 1 by its own
    index (state 0 of the stepped subset), at the caller's line; with xfrc_applied (the full path without failures)
    "state 0 of the step", not "step 1 of trajectory 0". The states that stood equal those stepped alone (1e-12)."""
    m = discrete_servo_model(0)
    m.opt.iterations = 1
    model = engine.from_mujoco(m)
    q, qd = engine.random_states(model, 6, 7, qd_max=2.0)
    ctrl = np.zeros(m.nu)
    bad = qd.copy()
    bad[0], bad[3] = np.nan, 1e200
    cap = r"ran out of its 1 iterations"
    for xfrc in (None, np.zeros((m.nbody - 1, 6))):
        previous = engine.set_backend("native")
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                r = integ.step_result(model, q, bad, ctrl=ctrl, xfrc_applied=xfrc, on_divergence="report")
        finally:
            engine.set_backend(previous)
        said = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
        assert r.status.failed == [0, 3]
        assert len(said) == 1 and re.search(cap + r" in state 1 of the step \(\d of the 6 runs met it\)",
                                            str(said[0].message)), [str(w.message) for w in said]
        assert said[0].filename == __file__
        alone, _ = _convergence_warnings(run, "native", integ.step_result, model, q[[1, 2, 4, 5]], qd[[1, 2, 4, 5]],
                                         ctrl=ctrl)
        assert np.abs(r.q[[1, 2, 4, 5]] - alone.q).max() < 1e-12 and np.abs(r.qd[[1, 2, 4, 5]] - alone.qd).max() < 1e-12
    xfrc = np.zeros((m.nbody - 1, 6))
    _, said = _convergence_warnings(run, "native", integ.step_result, model, q[:3], qd[:3], ctrl=ctrl, xfrc_applied=xfrc)
    assert len(said) == 1 and re.search(cap + r" in state 0 of the step \(3 of the 3 runs met it\)", said[0]), said


def _no_numpy_discrete_solve(*args):
    raise AssertionError("the NumPy text's discrete solve ran on the compiled backend")


@pytest.mark.parametrize("seed", [0, 2])
def test_discrete_forward_dynamics_at_the_smooth_solves_cap_warns_on_both_backends(seed, monkeypatch):
    """forward_dynamics of a discrete model whose smooth solve in the metric with tendon and servo terms stops at its
    iteration cap: the compiled call (cpp/forward.h's discrete_acceleration; the NumPy text's never called) warns as the
    NumPy text does (before, silent): discrete_servo_model chains (no rows) called with iterations=1, where mj_forward
    at opt.iterations 1 stops too (it counts mjWARN_INERTIA). One state: on both backends ONE ConvergenceWarning in
    solver.pcg_cap_message's words, the same but for the residual, equal to its 3 printed digits; a batch of 2: the
    compiled call ONE naming state 0 and that both met it, the NumPy text one per state (as its step); qacc within
    1e-10 of mj_forward's under-converged one (of its scale) on both; at the model's 100 iterations no warning."""
    m = discrete_servo_model(seed)
    model = engine.from_mujoco(m)                                            # opt.iterations 100
    rng = np.random.default_rng(seed)
    d = mujoco.MjData(m)
    d.qpos[:] = engine.random_states(model, 1, seed)[0][0]
    d.qvel[:], d.ctrl[:] = rng.normal(size=m.nv), rng.normal(size=m.nu)
    m.opt.iterations = 1
    mujoco.mj_forward(m, d)
    assert d.nefc == 0 and d.warning[mujoco.mjtWarning.mjWARN_INERTIA].number > 0    # MuJoCo stops at the cap too
    tau, two = d.qfrc_passive + d.qfrc_actuator, lambda x: np.stack([x, x])           # noqa: E731
    cap = r"^the discrete step's smooth solve in its metric M \+ h B \+ h\^2 K ran out of its 1 iterations"
    said, results = {}, {}
    for backend in ("native", "numpy"):
        with monkeypatch.context() as patch:
            if backend == "native":
                patch.setattr(engine.forward, "discrete_acceleration", _no_numpy_discrete_solve)
            call = partial(_convergence_warnings, run, backend, constraints.forward_dynamics, model, ctrl=d.ctrl,
                           act=d.act)
            results[backend], said[backend] = call(d.qpos, d.qvel, tau, iterations=1)
            batch, said[backend, 2] = call(two(d.qpos), two(d.qvel), two(tau), iterations=1)
            assert call(d.qpos, d.qvel, tau)[1] == []
        assert len(said[backend]) == 1 and re.search(cap + " at a relative residual", said[backend][0]), said[backend]
        scale = max(1.0, np.abs(d.qacc).max())
        assert np.abs(results[backend].qacc - d.qacc).max() <= 1e-10 * scale
        assert np.abs(batch.qacc - d.qacc).max() <= 1e-10 * scale
    assert len(said["native", 2]) == 1 and re.search(cap + r" in state 0 \(2 of the 2 runs met it\) at a relative",
                                                     said["native", 2][0]), said["native", 2]
    assert len(said["numpy", 2]) == 2 and all(re.search(cap + " at a relative", w) for w in said["numpy", 2])
    native, numpy = (re.fullmatch(r"(.*) at a relative residual (\S+): (.*)", said[b][0]) for b in ("native", "numpy"))
    assert native.group(1, 3) == numpy.group(1, 3)
    assert abs(float(native[2]) - float(numpy[2])) <= 1.01e-2 * float(numpy[2])    # 3 digits: one in the last apart


@pytest.mark.parametrize("limits, apart", [(False, False), (True, False), (True, True)])
@pytest.mark.parametrize("seed", range(3))
def test_discrete_metric_couplings_under_cg_follow_mj_step_iterate_by_iterate(seed, limits, apart):
    """Under CG the discrete step solves a0 by PCG and runs CG preconditioned with the factored metric (the joints' and
    fluid's terms with the diagonal of the tendons' and servos' terms: engine.forward.factored_metric), products in the
    whole M^, both capped by opt.iterations, the start test on the gap and the gradient, the tolerances scaled by the
    mass matrix's trace (before, preconditioned with M^ itself, a0 exact: 1.6e-5 off in qd a step at 100 iterations,
    up to 1.3e-9 at 1e-15, 2.4 after one iteration; 5e-5 over 100 steps): discrete_cross_tree_model scenes under CG,
    with an island apart or not: after 1, 3 and 6 iterations (MuJoCo's iterates) one step within 5e-10 of mj_step in
    qd (1.1e-10 seen, |qacc| 3e2), at 100 iterations with tolerance 1e-8 and 1000 with 1e-15 within 5e-11 (9.2e-12
    seen; 1.4e-11 under OpenBLAS's Haswell kernels, whose products round in another order, which CG's iterates
    amplify); 100 steps within 1e-7 in q and qd (7.2e-8 seen, 2e-10 but for one scene: its line searches stop at points
    5e-8 apart in qacc with equal improvements to 5 digits)."""
    for iterations, tolerance in [(1, 1e-15), (3, 1e-15), (6, 1e-15), (100, 1e-8), (1000, 1e-15)]:
        m = discrete_cross_tree_model(seed, limits, apart=apart)
        m.opt.solver, m.opt.iterations, m.opt.tolerance = mujoco.mjtSolver.mjSOL_CG, iterations, tolerance
        model, q0, qd0, ctrl, nefc, Q, QD = cross_tree_start(m, seed, limits)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")                 # the iteration limit's warning at 1, 3 and 6
            qd1 = integ.step(model, q0, qd0, ctrl=ctrl)[1]
            assert np.abs(qd1 - QD[0]).max() < (5e-11 if iterations >= 100 else 5e-10)
            if iterations >= 100:
                traj = integ.simulate(model, q0, qd0, steps=100, ctrl=ctrl, energy=False)
                assert np.abs(traj.qd[1:] - QD).max() < 1e-7 and np.abs(traj.q[1:] - Q).max() < 1e-7


@pytest.mark.parametrize("backend", ["native", "numpy"])
@pytest.mark.parametrize("seed", range(3))
def test_discrete_integrator_with_fluid_forces_follows_mj_step(seed, backend):
    """The inertia boxes' drag in the discrete metric's B (-d qfrc_fluid / d qd, engine.forward.discrete_metric_terms) on the
    random chains of discrete_servo_model in a fluid (random density, viscosity and wind), the free body kept out of it
    (fluid on a standalone free body is refused): 100 steps within 1e-10 of mj_step in q and qd."""
    rng = np.random.default_rng(seed)
    m = discrete_servo_model(seed, limit=seed == 2, free=False)
    m.opt.density, m.opt.viscosity, m.opt.wind = rng.uniform(.5, 2), rng.uniform(0, .1), rng.normal(size=3)
    model, q0, qd0, ctrl, Q, QD = random_start_and_mj_steps(m, seed, rng)
    traj = run(backend, integ.simulate, model, q0, qd0, steps=100, ctrl=ctrl, energy=False)
    assert np.abs(traj.q[1:] - Q).max() < 1e-10 and np.abs(traj.qd[1:] - QD).max() < 1e-10


@pytest.mark.parametrize("backend", ["native", "numpy"])
@pytest.mark.parametrize("noslip", [0, 5])
@pytest.mark.parametrize("seed", range(3))
def test_discrete_metric_under_pgs_leaves_tendons_and_servos_explicit(seed, noslip, backend):
    """Under PGS (a dual solver: it needs the metric factored) MuJoCo 4's discrete step leaves the tendons' and
    servos' terms out of M + h B + h^2 K, their forces explicit at the step's start (no - h K qd for them), and a
    standalone free body's block without the tendon dampers (engine.forward.explicit_couplings; measured by
    scripts/discrete_metric_probe.py: its metric the joints' alone to 4e-13; before, refused): random
    discrete_cross_tree_model scenes with limit rows, friction loss and a free body's contacts on a floor, the tendons
    coupling branches, trees and the free body, solver and noslip tolerance 1e-15, with and without noslip (in the
    same factored metric): 100 steps of simulate within 1e-10 of mj_step in q and qd (5.7e-13 seen), one step within
    1e-12 (9e-14 seen)."""
    m = discrete_cross_tree_model(seed, True, True, friction=True)
    m.opt.solver, m.opt.noslip_iterations, m.opt.noslip_tolerance = mujoco.mjtSolver.mjSOL_PGS, noslip, 1e-15
    model, q0, qd0, ctrl, nefc, Q, QD = cross_tree_start(m, seed, True)
    assert model.opt.solver == "pgs" and nefc > 0
    traj = run(backend, integ.simulate, model, q0, qd0, steps=100, ctrl=ctrl, energy=False)
    assert traj.ncon[0] > 0
    assert np.abs(traj.q[1:] - Q).max() < 1e-10 and np.abs(traj.qd[1:] - QD).max() < 1e-10
    q1, qd1 = run(backend, integ.step, model, q0, qd0, ctrl=ctrl)[:2]
    assert np.abs(q1 - Q[0]).max() < 1e-12 and np.abs(qd1 - QD[0]).max() < 1e-12


@pytest.mark.parametrize("backend", ["native", "numpy"])
@pytest.mark.parametrize("noslip, noslip_tolerance, islands", [(5, 1e-15, True), (100, 1e-6, True), (5, 1e-15, False)])
@pytest.mark.parametrize("seed", range(3))
def test_discrete_noslip_after_newton_uses_the_factored_metric(seed, noslip, noslip_tolerance, islands, backend):
    """Noslip after Newton in the discrete step: the main solve in the whole metric M^ = M + h B + h^2 K, the
    post-pass's Delassus matrix J X^-1 J^T in its factored part with the diagonal of the tendons' and servos' terms
    (engine.forward.noslip_metric; MuJoCo's efc_AR measured equal to 2e-14), a0 and the final qacc in M^ (before,
    refused; noslip in M^ was 1.2 off in qd a step): discrete_cross_tree_model scenes with limits, friction loss and
    contacts, islands on and off, noslip stopped at 5 sweeps (tolerance 1e-15) or converged to 1e-6 (at 100 sweeps and
    1e-15 the sweep where rounding stops it differs: 2e-8 seen, not tested): 100 steps of simulate within 1e-10 of
    mj_step in q and qd (6e-12 seen), one step within 1e-12 of the state's scale (max(1, |qd|): rounding in the solve
    grows with the forces; 5.4e-13 seen, 1.1e-12 against |qd| up to 14 under OpenBLAS's SSE3 kernels)."""
    m = discrete_cross_tree_model(seed, True, islands, friction=True)
    m.opt.noslip_iterations, m.opt.noslip_tolerance = noslip, noslip_tolerance
    model, q0, qd0, ctrl, nefc, Q, QD = cross_tree_start(m, seed, True)
    assert model.opt.solver == "newton" and model.opt.noslip_iterations == noslip
    traj = run(backend, integ.simulate, model, q0, qd0, steps=100, ctrl=ctrl, energy=False)
    assert traj.ncon[0] > 0
    assert np.abs(traj.q[1:] - Q).max() < 1e-10 and np.abs(traj.qd[1:] - QD).max() < 1e-10
    q1, qd1 = run(backend, integ.step, model, q0, qd0, ctrl=ctrl)[:2]
    scale = max(1.0, np.abs(QD[0]).max())
    assert np.abs(q1 - Q[0]).max() < 1e-12 * scale and np.abs(qd1 - QD[0]).max() < 1e-12 * scale


@pytest.mark.parametrize("backend", ["native", "numpy"])
@pytest.mark.parametrize("solver", ["NEWTON", "CG", "PGS"])
def test_discrete_forward_dynamics_with_noslip_is_mj_forwards(solver, backend, monkeypatch):
    """forward_dynamics of a discrete model with noslip after its solve, on the compiled backend its step's compiled
    solve (cpp/forward.h's discrete_acceleration, the NumPy text's never called; before, untested there):
    discrete_cross_tree_model(1) with limits, friction loss and the free body's contacts at cross_tree_start's state,
    its tendons and servos in the metric (explicit under PGS), noslip stopped at 5 sweeps (tolerance 1e-15; its Delassus
    matrix in the metric's factored part after Newton and CG), cold-started as a new MjData: qacc within 1e-9 of
    mj_forward's (of its scale) and efc_force within 1e-6 (the bounds of the discrete forward_dynamics against MuJoCo),
    alone and as both states of a batch; one ConvergenceWarning per state naming the noslip sweeps' limit."""
    m = discrete_cross_tree_model(1, True, True, friction=True)
    m.opt.solver = getattr(mujoco.mjtSolver, f"mjSOL_{solver}")
    m.opt.noslip_iterations, m.opt.noslip_tolerance = 5, 1e-15
    model, q0, qd0, ctrl = cross_tree_start(m, 1, True)[:4]
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:], d.ctrl[:] = q0, qd0, ctrl
    mujoco.mj_forward(m, d)
    assert d.ncon > 0 and d.nf > 0
    contacts, tau, two = collision.from_mujoco(m, d), d.qfrc_passive + d.qfrc_actuator, lambda x: np.stack([x, x])  # noqa: E731
    with monkeypatch.context() as patch:
        if backend == "native":
            patch.setattr(engine.forward, "discrete_acceleration", _no_numpy_discrete_solve)
        res, said = _convergence_warnings(run, backend, constraints.forward_dynamics, model, q0, qd0, tau, contacts,
                                          qacc_warmstart=np.zeros(m.nv), ctrl=ctrl, act=d.act)
        both, said2 = _convergence_warnings(run, backend, constraints.forward_dynamics, model, two(q0), two(qd0), two(tau),
                                            [contacts] * 2, qacc_warmstart=np.zeros(m.nv), ctrl=ctrl, act=d.act)
    assert len(said) == 1 and "noslip sweeps (at most 5)" in said[0], said
    assert len(said2) == 2 and all("noslip sweeps (at most 5)" in w for w in said2), said2
    assert_close(res.qacc, d.qacc, 1e-9, what="qacc")
    assert_close(res.efc_force, d.efc_force, 1e-6, what="efc_force")
    for k in range(2):
        assert_close(both.qacc[k], d.qacc, 1e-9, what="a batch's qacc")
        assert_close(both.efc_force[k], d.efc_force, 1e-6, what="a batch's efc_force")


@pytest.mark.parametrize("constraints", [False, True])
@pytest.mark.parametrize("seed", [1, 2])
def test_discrete_pgs_servos_and_free_bodies_follow_mj_step(seed, constraints):
    """The explicit tendon and servo forces of the discrete step under PGS (engine.forward.explicit_couplings) on
    discrete_servo_model's chains (position, velocity and affine servos, filters, force limits, a free body), with a
    limit row, or without constraints (MuJoCo's disable flag: PGS still leaves the terms out, measured), and on
    test_derivatives' free bodies that a tendon or servo reaches (their blocks without the tendon dampers; the full
    metric's block was 3e-3 off MuJoCo's): 100 steps within 1e-10 of mj_step and one step within 1e-12, relative to
    max(1, |qd|) (the servos' qacc reach 4e3: 1.5e-12 absolute seen in qd of 27)."""
    from test_derivatives import FREE_COUPLED
    cases = [discrete_servo_model(seed, constraints)] + [mujoco.MjModel.from_xml_string(x) for x in FREE_COUPLED.values()]
    for m in cases:
        m.opt.solver, m.opt.tolerance = mujoco.mjtSolver.mjSOL_PGS, 1e-15
        if not constraints:
            m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
        model, q0, qd0, ctrl, Q, QD = random_start_and_mj_steps(m, seed, np.random.default_rng(seed))
        traj = integ.simulate(model, q0, qd0, steps=100, ctrl=ctrl, energy=False, constraints=constraints)
        scale = max(1.0, np.abs(QD).max())
        assert np.abs(traj.q[1:] - Q).max() < 1e-10 * scale and np.abs(traj.qd[1:] - QD).max() < 1e-10 * scale
        assert max(np.abs(traj.q[1] - Q[0]).max(), np.abs(traj.qd[1] - QD[0]).max()) < 1e-12 * scale


def test_discrete_integrator_refuses_by_name_what_physai_does_not_model():
    """Muscles (their slopes are not affine), fluid forces on a standalone free body or of the ellipsoid model, its
    inverse, step_derivatives of a model with muscles, and constrained step_derivatives with tendon springs and noslip
    under Newton (its post-pass in another metric, which physai's derivatives do not model; simulate steps it):
    UnsupportedModelError naming the discrete integrator; a model with contacts steps with and without its
    constraints."""
    model = engine.from_mujoco(discrete_model(0, contacts=True))
    q0, qd0 = model.qpos0, np.zeros(model.nv)
    assert integ.simulate(model, q0, qd0, steps=2).ncon is not None
    assert integ.simulate(model, q0, qd0, steps=2, constraints=False).q.shape == (3, model.nq)
    arm = ('<worldbody><body><joint name="a" limited="true" range="-.1 .1"/><geom size=".1" pos=".2 0 0"/><body '
           'pos=".3 0 0"><joint name="b"/><geom size=".1"/></body></body></worldbody>')
    tendon = '<tendon><fixed stiffness="50"><joint joint="a" coef="1"/><joint joint="b" coef="-1"/></fixed></tendon>'
    cases = [('<option integrator="discrete"/>' + arm + '<actuator><muscle joint="a"/></actuator>', "muscle"),
             ('<option integrator="discrete" density="1.2" viscosity=".1"/>' + arm.replace(
                 "</worldbody>", '<body name="drifter"><freejoint/><geom size=".1"/></body></worldbody>'), "drifter"),
             ('<option integrator="discrete" density="1.2"/>' + arm.replace('<geom size=".1"/>',
                                                                            '<geom size=".1" fluidshape="ellipsoid"/>'),
              "ellipsoid")]
    for xml, what in cases:
        bad = engine.from_mujoco(mujoco.MjModel.from_xml_string(f"<mujoco>{xml}</mujoco>"))
        with pytest.raises(UnsupportedModelError, match=f"discrete integrator.*{what}|{what}.*discrete integrator"):
            integ.simulate(bad, bad.qpos0, np.ones(bad.nv), steps=2, ctrl=np.ones(bad.nu) if bad.nu else None)
    bad = engine.from_mujoco(mujoco.MjModel.from_xml_string(f"<mujoco>{cases[0][0]}</mujoco>"))
    with pytest.raises(UnsupportedModelError, match="discrete integrator with muscle"):   # step_derivatives too
        derivatives.step_derivatives(bad, bad.qpos0, np.zeros(bad.nv), ctrl=np.ones(bad.nu))
    with pytest.raises(UnsupportedModelError, match="discrete integrator"):
        inverse.inverse_dynamics(model, q0, qd0, np.zeros(model.nv), dt=0.01, integrator="discrete")
    slip = engine.from_mujoco(mujoco.MjModel.from_xml_string(
        f'<mujoco><option integrator="discrete" noslip_iterations="3"/>{arm}{tendon}</mujoco>'))
    q = slip.qpos0 + np.array([.15, 0])                # past the limit: a row
    assert np.isfinite(integ.simulate(slip, q, np.ones(2), steps=2).q).all()   # simulates (noslip_metric)
    with pytest.raises(UnsupportedModelError, match="step_derivatives of the discrete integrator.*noslip"):
        derivatives.step_derivatives(slip, q, np.ones(2), constraints=True)


def discrete_constrained_model(seed: int) -> mujoco.MjModel:
    """A random scene for the discrete integrator with every kind of constraint row: a hinge with a limit (its solref
    sometimes faster than the step, which refsafe resolves), friction loss, damping and a spring, a damped slide on it, a
    joint and a connect equality, free bodies on a plane (a box, an ellipsoid of condim 1, 3, 4 or 6 whose solref may be
    faster than the step) and one flying free; pyramidal or elliptic cones, refsafe on or off, solver tolerance 1e-15."""
    rng = np.random.default_rng(seed)
    num = lambda *x: " ".join(f"{v:.6g}" for v in x)                                    # noqa: E731
    cone, refsafe = ("pyramidal", "elliptic")[seed % 2], ("enable", "disable")[seed // 2 % 2]
    xml = (f'<mujoco><option integrator="discrete" timestep="{num(rng.uniform(.002, .01))}" tolerance="1e-15" '
           f'cone="{cone}"><flag refsafe="{refsafe}"/></option><worldbody>'
           f'<geom type="plane" size="5 5 .1" solref="{num(rng.uniform(.002, .03), rng.uniform(.5, 1.2))}"/>'
           f'<body pos="0 0 .5"><joint name="h" type="hinge" axis="0 1 0" limited="true" range="-.3 .3" armature=".01" '
           f'damping="{num(rng.uniform(0, 2))}" stiffness="{num(rng.uniform(0, 30))}" springref=".1" '
           f'frictionloss="{num(rng.uniform(0, .3))}" solreflimit="{num(rng.uniform(.002, .03), rng.uniform(.3, 1.5))}"/>'
           '<geom type="capsule" fromto="0 0 0 .3 0 -.45" size=".05"/><body name="tip" pos=".3 0 -.45">'
           f'<joint name="s" type="slide" axis="1 0 0" damping="{num(rng.uniform(0, 2))}" stiffness="{num(rng.uniform(0, 30))}"/>'
           '<geom type="sphere" size=".06"/></body></body>'
           '<body name="box" pos="1 0 .1"><freejoint/><geom type="box" size=".1 .2 .1"/></body>'
           f'<body pos="-1 0 .1"><freejoint/><geom type="ellipsoid" size=".1 .05 .08" condim="{(1, 3, 4, 6)[seed % 4]}" '
           f'solref="{num(rng.uniform(.001, .03))} 1"/></body><body pos="0 2 1"><freejoint/>'
           '<geom type="box" size=".1 .05 .02" contype="0" conaffinity="0"/></body></worldbody><equality>'
           '<connect body1="tip" body2="box" anchor="0 0 0" solref=".05 1"/><joint joint1="h" joint2="s" polycoef="0 .5"/>'
           '</equality></mujoco>')
    return mujoco.MjModel.from_xml_string(xml)


def discrete_constrained_start(m, seed: int) -> mujoco.MjData:
    """An MjData in a random state of discrete_constrained_model: the hinge past its limit, the free bodies touching."""
    d = mujoco.MjData(m)
    d.qpos[0] = .35
    d.qpos[m.jnt_qposadr[2] + 2], d.qpos[m.jnt_qposadr[3] + 2] = .09, .075
    d.qvel[:] = np.random.default_rng(seed).normal(size=m.nv)
    return d


@pytest.mark.parametrize("backend", ["native", "numpy"])
@pytest.mark.parametrize("seed", range(4))
def test_discrete_integrator_with_constraints_follows_mj_step(seed, backend):
    """MuJoCo 4's discrete integrator with contacts, a joint limit, friction loss and equalities (the solver in the metric
    M + h B + h^2 K, the rows' spring-dampers at the end of the step, refsafe's resolved springs): 100 steps of simulate
    within 1e-10 of mj_step in q and qd (1.9e-13 seen), one step and a rollout of two states likewise, on both engines
    (cpp/forward.h's discrete with cpp/simulate.h's constrained solve)."""
    m = discrete_constrained_model(seed)
    d = discrete_constrained_start(m, seed)
    q0, qd0 = d.qpos.copy(), d.qvel.copy()
    Q, QD = mj.steps(m, d, 100)
    model = engine.from_mujoco(m)
    traj = run(backend, integ.simulate, model, q0, qd0, steps=100, energy=False)
    assert traj.ncon[0] > 0 and np.abs(traj.q[1:] - Q).max() < 1e-10
    assert np.abs(traj.qd[1:] - QD).max() < 1e-10
    q1, qd1 = run(backend, integ.step, model, q0, qd0)
    assert np.abs(q1 - Q[0]).max() < 1e-12 and np.abs(qd1 - QD[0]).max() < 1e-12
    batch = run(backend, integ.rollout, model, np.stack([q0, q0]), np.stack([qd0, qd0]), steps=20, energy=False)
    assert np.abs(batch.q[:, 1:] - Q[:20]).max() < 1e-10


@pytest.mark.parametrize("backend", ["native", "numpy"])
@pytest.mark.parametrize("variant", ["cg", "pgs", "no islands"])
def test_discrete_integrator_with_constraints_under_cg_pgs_and_without_islands(variant, backend):
    """The discrete step with constraints under MuJoCo's CG and PGS solvers and with islands off (mjDSBL_ISLAND): 50
    steps of simulate within 1e-10 of mj_step in q (5.6e-14 seen)."""
    m = discrete_constrained_model(1)
    if variant == "no islands":
        m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_ISLAND
    else:
        m.opt.solver = {"pgs": mujoco.mjtSolver.mjSOL_PGS, "cg": mujoco.mjtSolver.mjSOL_CG}[variant]
    d = discrete_constrained_start(m, 1)
    q0, qd0 = d.qpos.copy(), d.qvel.copy()
    Q = []
    for _ in range(50):
        mujoco.mj_step(m, d)
        Q.append(d.qpos.copy())
    traj = run(backend, integ.simulate, engine.from_mujoco(m), q0, qd0, steps=50, energy=False)
    assert np.abs(traj.q[1:] - np.array(Q)).max() < 1e-10


@pytest.mark.parametrize("seed", range(4))
def test_discrete_constraint_rows_and_forces_equal_mujocos(seed):
    """The discrete integrator's rows at the states of an mj_step run: efc_R, efc_aref, efc_KBIP (refsafe's resolved
    springs) within 1e-12 relative, and efc_force from the solve in M + h B + h^2 K from MuJoCo's warm start within
    1e-12 relative to the largest force (the solvers' tolerance 1e-15 on both sides; over 100 steps of each scene: R
    2.2e-14, aref 1.8e-15, efc_force 7.2e-15 seen)."""
    m = discrete_constrained_model(seed)
    d = discrete_constrained_start(m, seed)
    model, h = engine.from_mujoco(m), m.opt.timestep
    for _ in range(5):
        warm = d.qacc_warmstart.copy()
        mujoco.mj_forward(m, d)
        q, qd = d.qpos.copy(), d.qvel.copy()
        data = engine.Data(model)
        smooth.velocity_stages(model, data, q[:, None], qd[:, None])
        rows = constraint.rows(model, data, q, qd, collision.numpy_detect(model, q), discrete_h=h)
        assert rows.nefc == d.nefc > 0
        np.testing.assert_allclose(rows.R, d.efc_R, rtol=1e-12)
        np.testing.assert_allclose(rows.aref, d.efc_aref, rtol=1e-12, atol=1e-12 * np.abs(d.efc_aref).max())
        np.testing.assert_allclose(np.c_[rows.K, rows.B], d.efc_KBIP[:, :2], rtol=1e-12)
        M = integ.mass_matrix(model, q)
        Mhat = integ.step_matrix(model, q, qd, h, "discrete", M=M)
        rhs = integ.smooth_force(model, q, qd) - h * integ.discrete_stiffness(model) * qd
        force = solver.solve_with(model, rows, Mhat, rhs, warm).efc_force
        assert np.abs(force - d.efc_force).max() < 1e-12 * np.abs(d.efc_force).max()
        for _ in range(10):
            mujoco.mj_step(m, d)


@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_discrete_rollout_of_many_states_follows_mj_step(backend):
    """A chain of a hinge and a slide with stiff springs and a damped ball, no free body (the compiled rollout steps
    such states on its vector lanes), 16 random states: 50 discrete steps of rollout within 1e-10 of mj_step (2.7e-15
    seen)."""
    m = mujoco.MjModel.from_xml_string(
        '<mujoco><option integrator="discrete" timestep="0.005"/><default><geom contype="0" conaffinity="0"/></default>'
        '<worldbody><body><joint type="hinge" axis="0 1 0" damping="0.7" stiffness="30" springref="0.2"/>'
        '<geom type="capsule" fromto="0 0 0 .3 0 0" size=".03"/><body pos=".3 0 0"><joint type="slide" axis="1 0 0" '
        'damping="0.4" stiffness="500"/><geom type="box" size=".1 .05 .02"/><body pos=".1 0 0"><joint type="ball" '
        'damping="0.3"/><geom type="box" size=".1 .05 .02" pos=".1 0 0"/></body></body></body></worldbody></mujoco>')
    model = engine.from_mujoco(m)
    q0, qd0 = engine.random_states(model, 16, 3)[0], np.random.default_rng(0).normal(size=(16, m.nv))
    traj = run(backend, integ.rollout, model, q0, qd0, steps=50, energy=False)
    d = mujoco.MjData(m)
    for n in range(16):
        d.qpos[:], d.qvel[:] = q0[n], qd0[n]
        for _ in range(50):
            mujoco.mj_step(m, d)
        assert np.abs(traj.q[n, -1] - d.qpos).max() < 1e-10 and np.abs(traj.qd[n, -1] - d.qvel).max() < 1e-10


def test_a_trajectory_saved_and_loaded_is_the_same_run(tmp_path):
    """Trajectory.save / Trajectory.load: every array back bit for bit (a file round trip, no arithmetic), the model's
    name kept, energy and ncon absent when the run had none."""
    model = engine.from_mujoco(models.load("arm2"))
    run = integ.simulate(model, [0.3, -0.5], [1.0, 2.0], steps=20)
    run = dataclasses.replace(run, model="arm2")
    run.save(tmp_path / "run.npz")
    back = integ.Trajectory.load(tmp_path / "run.npz")
    for name in ("t", "q", "qd", "energy", "ncon"):
        assert np.array_equal(getattr(back, name), getattr(run, name)), name
    assert (back.integrator, back.dt, back.model, back.contacts) == (run.integrator, run.dt, "arm2", None)
    bare = integ.simulate(model, [0.3, -0.5], [1.0, 2.0], steps=3, energy=False, constraints=False)
    bare.save(tmp_path / "bare.npz")
    assert (integ.Trajectory.load(tmp_path / "bare.npz").energy, integ.Trajectory.load(tmp_path / "bare.npz").ncon) == (None, None)


def test_a_bad_trajectory_file_is_named(tmp_path):
    """Not an .npz, an .npz of other arrays, a pickled object array, NaN, a mis-shaped array, a rollout: each a
    TrajectoryFileError saying what is wrong (np.load runs with allow_pickle=False: a pickle is refused, not run)."""
    model = engine.from_mujoco(models.load("arm2"))
    run = integ.simulate(model, [0.3, -0.5], [1.0, 2.0], steps=4)
    (tmp_path / "text.npz").write_text("not a zip")
    np.savez(tmp_path / "other.npz", x=np.zeros(3))
    run.save(tmp_path / "good.npz")
    good = dict(np.load(tmp_path / "good.npz"))
    np.savez(tmp_path / "pickled.npz", **{**good, "q": np.array([{"a": 1}], dtype=object)})
    np.savez(tmp_path / "nan.npz", **{**good, "qd": np.where(np.eye(5, 2) > 0, np.nan, good["qd"])})
    np.savez(tmp_path / "short.npz", **{**good, "q": good["q"][:3]})
    cases = {"text": "not a readable NumPy", "other": "not a physai trajectory", "pickled": "not a readable NumPy",
             "nan": "NaN or infinity", "short": r"q has shape \(3, 2\)"}
    for name, message in cases.items():
        with pytest.raises(TrajectoryFileError, match=message):
            integ.Trajectory.load(tmp_path / f"{name}.npz")
    batch = integ.rollout(model, np.zeros((2, 2)), np.zeros((2, 2)), steps=2)
    with pytest.raises(TrajectoryFileError, match="one run"):
        batch.save(tmp_path / "batch.npz")


FRICTIONLESS_BOX = """<mujoco><option timestep="0.002" cone="pyramidal"/><worldbody>
<geom type="plane" size="3 3 .1" friction="0 0 0"/>
<body pos="0 0 0.5"><freejoint/><geom type="box" size=".1 .15 .05" friction="0 0 0"/></body></worldbody></mujoco>"""


def _frictionless_box_states(m, n: int, seed: int = 1):
    """n states of FRICTIONLESS_BOX with its box 1-5 mm into the plane on an edge or a corner, moving (the first: the
    review's edge, tilted 30 deg about x), and mujoco's MjData at each after mj_forward."""
    from scipy.spatial.transform import Rotation
    rng, out = np.random.default_rng(seed), []
    for s in range(n):
        euler = (30, 0, 11) if s == 0 else (rng.uniform(10, 50), rng.uniform(-5, 5), rng.uniform(0, 90))
        depth = 0.003 if s == 0 else rng.uniform(0.001, 0.005)
        d = mujoco.MjData(m)
        quat = Rotation.from_euler("xyz", euler, degrees=True).as_quat()[[3, 0, 1, 2]]
        corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * m.geom_size[1]
        lowest = (Rotation.from_quat(quat[[1, 2, 3, 0]]).as_matrix() @ corners.T)[2].min()
        d.qpos[:3], d.qpos[3:7] = (0, 0, -lowest - depth), quat
        d.qvel[:] = np.random.default_rng(1).normal(size=6) * 0.1 if s == 0 else rng.normal(size=6) * 0.3
        mujoco.mj_forward(m, d)
        out.append(d)
    return out


def _python_stepper(model, integrator: str, h: float, q, qd) -> np.ndarray:
    """qd after one step of the Python stepper with constraints (forward.DynamicsEvaluator: on the compiled backend its
    solve is solver.compiled_forward's), the path step takes with inputs the compiled rollout does not."""
    evaluator = forward.DynamicsEvaluator(model, h, integ.step_inputs(model, None, None, None, None), False, True)
    return forward.STEPPERS[integrator](evaluator, q, qd)[1]


@pytest.mark.parametrize("backend", ["numpy", "native"])
@pytest.mark.parametrize("integrator", ["implicit", "implicitfast"])
def test_implicit_step_at_a_frictionless_pyramid_is_the_solvers_acceleration_integrated(integrator, backend):
    """A box on a plane with friction 0 on the pyramidal cone (20 states): MuJoCo raises mu to 1e-5, the rows' D =
    1 / (2 mu^2 R) is 5.7e11, and -D (J qacc - aref) rounds at 1e-3 N. The implicit steps solve (M - h D) a = f + J^T force; in exact
    arithmetic that is (M - h qDeriv)^-1 M qacc from the solver's qacc (M qacc = f + J^T force at the optimum), which
    MuJoCo's own data give here (mj_forward's qacc and M, mj_step's qDeriv; implicit: implicitfast solves the free
    body's block with its gyroscopic term besides). physai's step from a zero warm start is within 1e-8 m/s of it in
    qd, and of mj_step warm-started at its own optimum; mj_step from a zero warm start (the
    same problem) moves by up to 7e-6 m/s with its force's rounding, which the test checks it still does (the scene is
    the stiff one). Before physai balanced the stiff rows' force (solver.balanced_constraint_force), its step was up
    to 3.0e-5 (NumPy) and 1.5e-5 (compiled) off."""
    m = mujoco.MjModel.from_xml_string(FRICTIONLESS_BOX)
    m.opt.tolerance, m.opt.iterations, m.opt.ls_iterations = 1e-15, 1000, 100
    m.opt.integrator = integ.MUJOCO_INTEGRATOR[integrator]
    model, h, spread = engine.from_mujoco(m), m.opt.timestep, 0.0
    for d in _frictionless_box_states(m, 20):
        q, qd = d.qpos.copy(), d.qvel.copy()
        assert d.nefc and (1 / d.efc_R).max() > 1e11                    # the stiff rows
        M = np.zeros((6, 6))
        mujoco.mj_fullM(m, d, M)
        stepped = []
        for warm in (d.qacc.copy(), np.zeros(6)):                       # mj_step at its optimum, and from zero
            e = mujoco.MjData(m)
            e.qpos[:], e.qvel[:], e.qacc_warmstart[:] = q, qd, warm
            mujoco.mj_step(m, e)
            stepped.append(e)
        D = np.zeros((6, 6))
        for i in range(6):                                              # qDeriv (mj_step's, of the start state) dense
            span = slice(m.D_rowadr[i], m.D_rowadr[i] + m.D_rownnz[i])
            D[i, m.D_colind[span]] = stepped[0].qDeriv[span]
        exact = qd + h * np.linalg.solve(M - h * D, M @ d.qacc)
        qd_next = run(backend, integ.step, model, q, qd, integrator=integrator)[1]
        qd_stepper = run(backend, _python_stepper, model, integrator, h, q, qd)
        assert np.abs(qd_stepper - stepped[0].qvel).max() < 1e-8         # the Python stepper's (compiled_forward's)
        if integrator == "implicit":                                    # (implicitfast: the free body's own block)
            assert np.abs(qd_next - exact).max() < 1e-8
        assert np.abs(qd_next - stepped[0].qvel).max() < 1e-8
        spread = max(spread, np.abs(stepped[1].qvel - stepped[0].qvel).max())
    assert spread > 1e-7                                                # MuJoCo's own step moves by the rounding here


OVERFLOWING_SPRING = ('<mujoco><worldbody><body><joint name="s" type="slide" axis="1 0 0" stiffness="5"/><geom '
                      'type="sphere" size=".1" mass="1"/></body></worldbody><actuator><motor joint="s"/></actuator></mujoco>')


@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_a_spring_whose_energy_overflows_leaves_the_forces_finite(backend):
    """A spring whose potential energy k q^2 / 2 overflows (q = 1e154: 2.5e308) while its force -k q does not:
    smooth_force, body_quantities' qacc and the first RK4 stage's acceleration (rk4_stages) equal MuJoCo's qfrc_smooth
    and qacc, step_result observing qacc its qacc and one mj_step's qvel (finite there; 1e-12 relative) on both engines.
    The compiled evaluate returned NaN there when it computed the energy nobody read (before evaluate(..., energy=False));
    step_result with observe and rk4_stages raised DivergenceError or returned NaN on the compiled backend while their
    Python steps computed it (before DynamicsEvaluator.with_energy and forward.energy_or_nan)."""
    m = mujoco.MjModel.from_xml_string(OVERFLOWING_SPRING)
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = 1e154, 0.1
    mujoco.mj_forward(m, d)
    stepped = copy.copy(d)
    mujoco.mj_Euler(m, stepped)                                       # mj_step's update (mj_step's checks refuse 1e154)
    model = engine.from_mujoco(m)
    f = run(backend, integ.smooth_force, model, d.qpos, d.qvel, ctrl=[0.0])
    qacc = run(backend, integ.body_quantities, model, d.qpos, d.qvel, ("qacc",), ctrl=[0.0])["qacc"]
    stage = run(backend, integ.rk4_stages, model, d.qpos, d.qvel, m.opt.timestep, ctrl=[0.0])[0]
    result = run(backend, integ.step_result, model, d.qpos, d.qvel, ctrl=[0.0], observe=("qacc",))
    assert np.isfinite(d.qfrc_smooth).all() and np.abs(f - d.qfrc_smooth).max() <= 1e-12 * np.abs(d.qfrc_smooth).max()
    for a in (qacc, stage[2], result.observed["qacc"]):
        assert np.abs(a - d.qacc).max() <= 1e-12 * np.abs(d.qacc).max()
    assert np.abs(result.qd - stepped.qvel).max() <= 1e-12 * np.abs(stepped.qvel).max()


@pytest.mark.parametrize("backend", ["native", "numpy"])
@pytest.mark.parametrize("integrator", ["euler", "rk4", "discrete"])
def test_an_energy_that_overflows_is_refused_by_name_on_both_engines(integrator, backend):
    """simulate's energy[k] is engine.energy(q[k], qd[k]) (the module docstring), which refuses an energy that overflows
    from a finite state with InvalidStateError: a spring whose 1/2 k q^2 passes 1.8e308 while its force -k q stays
    finite (q from 5.9e153 m at 5e153 m/s) makes simulate raise it, naming the first state whose engine.energy raises,
    on both engines; rollout names the first such state in time (a trajectory already overflowing at its state 0, not
    trajectory 1's later state); energy=False gives the states, those of the run with the energy up to that state. On
    main the compiled loop returned energy inf and the NumPy loop raised engine.energy's 'state 0' at the last state."""
    model = engine.from_mujoco(mujoco.MjModel.from_xml_string(OVERFLOWING_SPRING))
    q0, qd0 = np.array([[0.0], [5.9e153], [1e154]]), np.array([[0.0], [5e153], [0.1]])
    kw = dict(dt=0.01, steps=6, integrator=integrator)
    quiet = run(backend, integ.simulate, model, q0[1], qd0[1], energy=False, **kw)
    first = None                                                       # the first state whose engine.energy raises
    for k, (q, qd) in enumerate(zip(quiet.q, quiet.qd)):
        try:
            engine.energy(model, q, qd)
        except InvalidStateError:
            first = k
            break
    assert first is not None and first > 0 and np.isfinite(quiet.q).all() and np.isfinite(quiet.qd).all()
    with pytest.raises(InvalidStateError, match=rf"^the energy of the simulation is not finite at state {first} \(t = "
                       rf"{first * 0.01:g} s\) .*energy=False"):
        run(backend, integ.simulate, model, q0[1], qd0[1], **kw)
    with pytest.raises(InvalidStateError, match=r"^the energy of trajectory 2 of the rollout is not finite at state 0 "):
        run(backend, integ.rollout, model, q0, qd0, energy=True, **kw)
    with pytest.raises(InvalidStateError, match=rf"^the energy of trajectory 1 of the rollout .* state {first} "):
        run(backend, integ.rollout, model, q0[:2], qd0[:2], energy=True, **kw)
    before = run(backend, integ.simulate, model, q0[1], qd0[1], energy=True, **(kw | dict(steps=first - 1)))
    scale = np.abs(quiet.q[:first]).max()          # the same steps with and without the energy: within 4 ulps
    assert np.abs(before.q - quiet.q[:first]).max() <= 4 * np.finfo(float).eps * scale
    assert np.isfinite(before.energy).all()


def test_the_numpy_engine_steps_a_spring_whose_energy_overflows_without_numpy_warnings():
    """At the spring's q = 1e154 numpy warned 'overflow encountered in multiply' from joints.sincos's polynomial of the
    slide's 5e153 (its result discarded: numpy's sin and cos take |x| > 1e5) in smooth_force, body_quantities and
    rk4_stages, and dynamics.mass_matrix returned NaN with numpy's warnings for a body 1e154 m away carrying another
    (m c c^T about the world origin). With warnings as errors the NumPy engine's calls give MuJoCo's numbers (qfrc_smooth,
    qacc, mj_fullM, mj_Euler's qpos and qvel: 1e-12 relative) or their named errors (the energy, dynamics' M); sincos
    is numpy's sin and cos beyond 1e5 and within 2 ulp of them below."""
    m = mujoco.MjModel.from_xml_string(OVERFLOWING_SPRING.replace('mass="1"/>', 'mass="1"/><body pos="0 0 .5"><joint '
                                                                  'type="hinge" axis="0 1 0"/><geom type="sphere" '
                                                                  'size=".1" mass="1"/></body>'))
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = [1e154, 0.3], [0.1, 0.2]
    mujoco.mj_forward(m, d)
    M = np.zeros((2, 2))
    mujoco.mj_fullM(m, d, M)
    stepped = copy.copy(d)
    mujoco.mj_Euler(m, stepped)
    model, tree = engine.from_mujoco(m), dyn.tree_from_mujoco(m)
    close = lambda a, b: np.abs(a - b).max() <= 1e-12 * np.abs(b).max()     # noqa: E731
    x = np.array([1e154, -3e5, 0.5, -2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s, c = joints.sincos(x)
        assert np.array_equal(s[:2], np.sin(x[:2])) and np.array_equal(c[:2], np.cos(x[:2]))
        assert np.abs(s[2:] - np.sin(x[2:])).max() <= 4.5e-16 and np.abs(c[2:] - np.cos(x[2:])).max() <= 4.5e-16
        q, qd, ctrl = d.qpos.copy(), d.qvel.copy(), [0.0]
        assert close(run("numpy", integ.smooth_force, model, q, qd, ctrl=ctrl), d.qfrc_smooth)
        assert close(run("numpy", integ.body_quantities, model, q, qd, ("qacc",), ctrl=ctrl)["qacc"], d.qacc)
        assert close(run("numpy", integ.rk4_stages, model, q, qd, m.opt.timestep, ctrl=ctrl)[0][2], d.qacc)
        assert close(run("numpy", engine.mass_matrix, model, q), M)
        trajectory = run("numpy", integ.simulate, model, q, qd, steps=1, ctrl=ctrl, energy=False)
        assert close(trajectory.q[1], stepped.qpos) and close(trajectory.qd[1], stepped.qvel)
        with pytest.raises(InvalidStateError, match="energy of the simulation is not finite at state 0"):
            run("numpy", integ.simulate, model, q, qd, steps=1, ctrl=ctrl)
        with pytest.raises(InvalidStateError, match="inertias about the world origin"):
            dyn.mass_matrix(tree, q)


DOUBLE_PENDULUM = ('<mujoco><worldbody><body><joint type="hinge" axis="0 1 0"/><geom type="capsule" fromto="0 0 0 .3 0 0" '
                   'size=".03" mass="1"/><body pos=".3 0 0"><joint type="hinge" axis="0 1 0"/><geom type="capsule" '
                   'fromto="0 0 0 .3 0 0" size=".03" mass="1"/></body></body></worldbody></mujoco>')


@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_rk4_stages_that_overflow_within_the_step_are_named(backend):
    """A double pendulum spinning at 1e150 rad/s: its acceleration (1e300, centripetal) is finite and MuJoCo's (1e-12
    relative), stage 2's velocity 1e297 makes stage 2's qdd overflow, and MuJoCo's own RK4 step (mj_RungeKutta) ends
    NaN. rk4_stages raises DivergenceError naming stage 2 and its qdd on both engines, without numpy's warnings (it
    returned NaN stages with them); the step raises its DivergenceError as before."""
    m = mujoco.MjModel.from_xml_string(DOUBLE_PENDULUM)
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = [0.3, -0.5], [1e150, -3e149]
    mujoco.mj_forward(m, d)
    stepped = copy.copy(d)
    mujoco.mj_RungeKutta(m, stepped, 4)
    assert np.isfinite(d.qacc).all() and not np.isfinite(stepped.qvel).all()
    model = engine.from_mujoco(m)
    q, qd = d.qpos.copy(), d.qvel.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        qacc = run(backend, integ.body_quantities, model, q, qd, ("qacc",))["qacc"]
        assert np.abs(qacc - d.qacc).max() <= 1e-12 * np.abs(d.qacc).max()
        with pytest.raises(DivergenceError, match=r"^RK4's stage 2 of 4 diverged at dt = 0.002 s: qdd_2 is not finite"):
            run(backend, integ.rk4_stages, model, q, qd, m.opt.timestep)
    with pytest.raises(DivergenceError, match="rk4 integrator"):
        run(backend, integ.step, model, q, qd, integrator="rk4")


def test_the_tree_dynamics_refuses_an_energy_that_overflows():
    """physai.dynamics' potential_energy and energy refuse a spring energy past 1.8e308 from a finite q (1e154) with
    InvalidStateError, as its kinetic_energy and engine.potential_energy do (it returned inf with numpy's overflow
    warning); at q = 1e150 they equal engine's (1e-14 relative)."""
    m = mujoco.MjModel.from_xml_string(OVERFLOWING_SPRING)
    tree, model = dyn.tree_from_mujoco(m), engine.from_mujoco(m)
    for f in (lambda q: dyn.potential_energy(tree, q), lambda q: dyn.energy(tree, q, [0.1]),
              lambda q: engine.potential_energy(model, q)):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(InvalidStateError, match="not finite"):
                f([1e154])
    assert abs(dyn.energy(tree, [1e150], [0.1]) - engine.energy(model, [1e150], [0.1])) <= 1e-14 * 2.5e300


@pytest.mark.parametrize("backend", ["native", "numpy"])
@pytest.mark.parametrize("constrained", [False, True])
def test_zero_steps_return_the_start_state(backend, constrained, panda):
    """simulate(steps=0) on an actuated model returns its one start state (the NumPy loop indexed a (0, nu) ctrl at
    row 0: a bare IndexError on main), and the start's energy equals MuJoCo's energy (mj_energyPos + mj_energyVel)."""
    m0, q0, ctrl = panda
    m, d = engine.from_mujoco(m0), mujoco.MjData(m0)
    qd0 = np.linspace(-0.2, 0.2, m0.nv)
    d.qpos[:], d.qvel[:] = q0, qd0
    mujoco.mj_forward(m0, d)
    mujoco.mj_energyPos(m0, d)
    mujoco.mj_energyVel(m0, d)
    traj = run(backend, integ.simulate, m, q0, qd0, dt=m0.opt.timestep, steps=0, ctrl=ctrl, energy=True,
               constraints=constrained)
    assert traj.q.shape == (1, m0.nq) and np.array_equal(traj.q[0], q0) and np.array_equal(traj.qd[0], qd0)
    assert abs(traj.energy[0] - d.energy.sum()) <= 1e-12 * max(1.0, abs(d.energy).sum())
