"""integrators.rollout: N trajectories in one call, against mujoco.rollout; diverging trajectories, zero quaternions and
shapes named on both backends. Rollout on the compiled backend against simulate on the NumPy backend (each trajectory
is simulate from its start, in every instruction set's lanes): tests/test_native_vs_numpy.py.

mujoco.rollout runs the same open-loop inputs (per trajectory and step: ctrl, qfrc_applied, xfrc_applied, through
its control_spec) with constraints disabled; physai's q and qd agree with its states after every step within 1e-12
(q) and 1e-10 (qd, up to ~40 rad/s; the Panda's stiff servos amplify rounding under Euler: 4.7e-12 seen), for every
integrator and joint type.
"""

import mujoco
import numpy as np
import pytest
from mujoco import rollout as mujoco_rollout

from physai import engine, integrators, models
from physai.engine import native
from physai.exceptions import DivergenceError, InvalidModelError, InvalidStateError, ShapeError
from helpers import MIXED, Robot, assert_close, open_loop_inputs, run

N, STEPS = 5, 150
Q_TOL, QD_TOL = 1e-12, 1e-10                                         # rad | m, rad/s | m/s


class Case(Robot):
    """A helpers.Robot (constraints off) with N random start states q0, qd0 and random per-trajectory, per-step inputs
    (helpers.open_loop_inputs)."""

    def __init__(self, name):
        super().__init__(name, n=N, seed=1, qd_max=1.0)
        self.q0, self.qd0 = self.q, self.qd
        given = open_loop_inputs(self.m, N, STEPS)
        self.ctrl, self.qfrc, self.xfrc = given["ctrl"], given["qfrc_applied"], given["xfrc_applied"]

    def inputs(self):
        return {"ctrl": self.ctrl, "qfrc_applied": self.qfrc, "xfrc_applied": self.xfrc}

    def mujoco_states(self, integrator):
        """qpos (N, STEPS, nq), qvel after each step of mujoco.rollout."""
        m, d = self.m, mujoco.MjData(self.m)
        m.opt.integrator = integrators.MUJOCO_INTEGRATOR[integrator]
        spec, S = mujoco.mjtState.mjSTATE_FULLPHYSICS, mujoco.mjtState
        initial = np.empty((N, mujoco.mj_stateSize(m, spec)))
        for n in range(N):
            d.qpos[:], d.qvel[:] = self.q0[n], self.qd0[n]
            mujoco.mj_getState(m, d, initial[n], spec)
        xfrc = np.concatenate([np.zeros((N, STEPS, 1, 6)), self.xfrc], axis=2).reshape(N, STEPS, -1)
        control = np.concatenate([self.ctrl if m.nu else np.zeros((N, STEPS, 0)), self.qfrc, xfrc], axis=2)
        with mujoco_rollout.Rollout(nthread=0) as r:
            states, _ = r.rollout(m, d, initial, control,
                                  control_spec=S.mjSTATE_CTRL | S.mjSTATE_QFRC_APPLIED | S.mjSTATE_XFRC_APPLIED)
        Q, QD = np.empty((N, STEPS, m.nq)), np.empty((N, STEPS, m.nv))
        for n in range(N):
            for k in range(STEPS):
                mujoco.mj_setState(m, d, states[n, k], spec)
                Q[n, k], QD[n, k] = d.qpos, d.qvel
        return Q, QD


@pytest.fixture(scope="module", params=["double_pendulum", "franka_emika_panda", "unitree_h1", "mixed_joints"])
def case(request):
    return Case(request.param)


@pytest.mark.parametrize("integrator", integrators.INTEGRATORS)
def test_rollout_equals_mujoco_rollout(case, integrator):
    traj = integrators.rollout(case.model, case.q0, case.qd0, case.m.opt.timestep, STEPS, integrator, **case.inputs())
    assert traj.q.shape == (N, STEPS + 1, case.m.nq) and traj.qd.shape == (N, STEPS + 1, case.m.nv) and traj.energy is None
    Q, QD = case.mujoco_states(integrator)
    assert_close(traj.q[:, 1:], Q, Q_TOL, scale=1.0)
    assert_close(traj.qd[:, 1:], QD, QD_TOL, scale=1.0)


@pytest.mark.parametrize("integrator", integrators.INTEGRATORS)
def test_a_diverging_trajectory_is_named(integrator):
    """A runaway trajectory among others, in a block of lanes, raises DivergenceError naming it (not an error about
    non-finite numbers inside a step), on both backends; also with a free joint (the H1) under RK4."""
    model = engine.from_mujoco(models.load("double_pendulum"))
    qd0 = np.zeros((11, 2))
    qd0[9] = [1e150, -1e150]
    for backend in ("native", "numpy"):
        with pytest.raises(DivergenceError, match="trajectory 9 of the rollout diverged at step"):
            run(backend, integrators.rollout, model, np.zeros((11, 2)), qd0, 0.01, 20, integrator)
    h1 = engine.from_mujoco(models.load("unitree_h1"))
    q0, qd0 = engine.random_states(h1, 3, 1)
    qd0[2] = 1e150
    for backend in ("native", "numpy"):
        with pytest.raises(DivergenceError, match="trajectory 2 of the rollout diverged at step 1 "):
            run(backend, integrators.rollout, h1, q0, qd0, 1e-3, 5, integrator, constraints=False)


def test_a_zero_quaternion_is_refused_by_name():
    """On both backends, naming the trajectory and the step (not "state 0", the state's index within one trajectory)."""
    model = engine.from_mujoco(models.load(MIXED))
    q0 = np.stack([model.qpos0] * 8)
    a = model.coords.quat_q[1]
    q0[5, a:a + 4] = 0.0
    q0[7, a:a + 4] = 0.0
    for backend in ("native", "numpy"):
        with pytest.raises(InvalidStateError, match=rf"^trajectory 5 of the rollout at step 1: q\[{a}:{a + 4}\] is a zero "
                                                    r"quaternion; a ball or free joint needs a unit quaternion") as error:
            run(backend, integrators.rollout, model, q0, np.zeros((8, model.nv)), 1e-3, 5, "rk4")
        assert "state" not in str(error.value)
        with pytest.raises(InvalidStateError, match=rf"^the simulation at step 1: q\[{a}:{a + 4}\] is a zero quaternion"):
            run(backend, integrators.simulate, model, q0[5], np.zeros(model.nv), 1e-3, 5, "rk4")


@pytest.mark.parametrize("integrator", integrators.INTEGRATORS)
def test_the_first_divergence_in_time_is_named(integrator):
    """Trajectory 11 diverges before trajectory 3 (a faster runaway): the error names trajectory 11 and its step, the
    first divergence in time, not the lowest index; on both backends (each trajectory from simulate alone says when)."""
    model = engine.from_mujoco(models.load("double_pendulum"))
    qd0 = np.zeros((16, 2))
    qd0[11], qd0[3] = [1e100, -1e100], [1e20, -1e20]
    alone = {}
    for n in (3, 11):
        with pytest.raises(DivergenceError) as error:
            integrators.simulate(model, np.zeros(2), qd0[n], 0.01, 20, integrator)
        alone[n] = int(str(error.value).split("diverged at step ")[1].split()[0])
    assert alone[11] < alone[3]
    for backend in ("native", "numpy"):
        with pytest.raises(DivergenceError, match=f"^trajectory 11 of the rollout diverged at step {alone[11]} "):
            run(backend, integrators.rollout, model, np.zeros((16, 2)), qd0, 0.01, 20, integrator)


def test_a_singular_mass_matrix_is_named_alike_on_both_backends():
    """The NumPy loop names the trajectory and the step of a singular matrix as the compiled loop does."""
    from physai import dynamics

    body = dynamics.Body(-1, [0, 0, 0], np.eye(3), "slide", [1, 0, 0], None, 0.0, [0, 0, 0], np.zeros((3, 3)))
    massless = engine.compile_tree(dynamics.Tree([body], armature=[0.0]))
    for backend in ("native", "numpy"):
        with pytest.raises(InvalidModelError, match="^trajectory 0 of the rollout at step 1: the mass matrix is singular"):
            run(backend, integrators.rollout, massless, np.zeros((3, 1)), np.zeros((3, 1)), 1e-3, 5, "rk4")
        with pytest.raises(InvalidModelError, match="^the simulation at step 1: the mass matrix is singular"):
            run(backend, integrators.simulate, massless, [0.0], [0.0], 1e-3, 5)


def test_a_failure_before_a_lower_index_divergence_is_named(monkeypatch):
    """The compiled rollout raises the named error of its lowest-index failure only; when that one diverged later than
    another trajectory stopped on a singular matrix (here: the compiled call's answer made up), the earlier one is run
    again alone and its error names it."""
    model = engine.from_mujoco(models.load("double_pendulum"))
    N, steps = 10, 6
    calls = []

    def compiled(model, q0, qd0, *args):
        calls.append(len(q0))
        if len(q0) == 1:                                              # trajectory 7 alone: what the kernel raises
            raise InvalidModelError("the simulation at step 1: the mass matrix is singular")
        Q, QD = np.zeros((N, steps + 1, 2)), np.zeros((N, steps + 1, 2))
        Q[2, 4:] = np.nan                                             # trajectory 2 diverged at step 4 (index 3)
        stopped = np.full(N, -1)
        stopped[2], stopped[7] = 3, 0                                 # trajectory 7 stopped at step 1, not diverged
        return (Q, QD, np.zeros((N, steps + 1)), stopped, np.zeros((N, steps), np.intp), np.full(N, -1), np.zeros((N, 2)),
                np.zeros((N, steps + 1, 0)), np.full(N, -1), np.zeros(N))     # capped (-1: none), capped_residual

    monkeypatch.setattr(native, "rollout", compiled)
    with pytest.raises(InvalidModelError, match="^trajectory 7 of the rollout at step 1: the mass matrix is singular"):
        run("native", integrators.rollout, model, np.zeros((N, 2)), np.zeros((N, 2)), 0.01, steps)
    assert calls == [N, 1]


@pytest.mark.parametrize("earlier", [True, False])
def test_a_divergence_before_a_lower_index_failure_is_named(monkeypatch, earlier):
    """The compiled rollout raises the error of trajectory 2, singular at step 5 (made up here); trajectory 7 diverged
    at step 2, earlier in time: the steps before step 5 are run again and trajectory 7's divergence is named. Without an
    earlier failure, trajectory 2's error stands."""
    model = engine.from_mujoco(models.load("double_pendulum"))
    N, steps = 10, 6
    calls = []

    def compiled(model, q0, qd0, h, n_steps, *args):
        calls.append(n_steps)
        if n_steps == steps:
            raise native.located(InvalidModelError("trajectory 2 of the rollout at step 5: the mass matrix is singular"), 2, 4)
        Q, QD = np.zeros((N, n_steps + 1, 2)), np.zeros((N, n_steps + 1, 2))
        stopped = np.full(N, -1)
        if earlier:
            Q[7, 2:] = np.inf                                         # trajectory 7 diverged at step 2 (index 1)
            stopped[7] = 1
        return (Q, QD, np.zeros((N, n_steps + 1)), stopped, np.zeros((N, n_steps), np.intp), np.full(N, -1),
                np.zeros((N, 2)), np.zeros((N, n_steps + 1, 0)), np.full(N, -1), np.zeros(N))

    monkeypatch.setattr(native, "rollout", compiled)
    expected = ((DivergenceError, "^trajectory 7 of the rollout diverged at step 2 ") if earlier else
                (InvalidModelError, "^trajectory 2 of the rollout at step 5: the mass matrix is singular"))
    with pytest.raises(expected[0], match=expected[1]):
        run("native", integrators.rollout, model, np.zeros((N, 2)), np.zeros((N, 2)), 0.01, steps)
    assert calls == [steps, 4]


def test_shapes_are_checked():
    case = Case("franka_emika_panda")
    args = (case.model, case.q0, case.qd0, 1e-3, STEPS)
    with pytest.raises(ShapeError, match=r"q0 must have shape \(N, 9\)"):
        integrators.rollout(case.model, case.q0[0], case.qd0, 1e-3, STEPS)
    with pytest.raises(ShapeError, match=r"qd0 must have shape \(5, 9\)"):
        integrators.rollout(case.model, case.q0, case.qd0[:3], 1e-3, STEPS)
    with pytest.raises(ShapeError, match=r"ctrl must have shape"):
        integrators.rollout(*args, ctrl=case.ctrl[:2])
    with pytest.raises(ShapeError, match=r"ctrl has 3 entries per step, the model needs 8"):
        integrators.rollout(*args, ctrl=np.zeros((N, STEPS, 3)))
    with pytest.raises(ShapeError, match=r"xfrc_applied.*d.xfrc_applied\[1:\]"):
        integrators.rollout(*args, xfrc_applied=np.zeros((case.m.nbody, 6)))
    with pytest.raises(ShapeError, match=r"ambiguous with 5 trajectories of 5 steps.*ctrl\[:, None\]"):
        integrators.rollout(case.model, case.q0, case.qd0, 1e-3, N, ctrl=np.zeros((N, case.model.nu)))
    bad = case.qfrc.copy()
    bad[3, 7, 2] = np.nan
    with pytest.raises(InvalidStateError, match=r"qfrc_applied\[3, 7, 2\] is nan"):
        integrators.rollout(*args, qfrc_applied=bad)
