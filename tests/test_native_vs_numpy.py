"""The compiled backend (physai.engine._native, cpp/) against the NumPy reference (PHYSAI_BACKEND=numpy), every compiled
entry point on every instruction-set variant of the batch kernel this CPU runs (physai.engine.native.isas()).

CALLS: the engine's public functions, physai.derivatives' rnea_derivatives and forward_dynamics_derivatives,
physai.jacobians' body and point jacobians, physai.kinematics.body_poses, engine.integrate and engine.difference, on
random states (helpers.states, seed 0) of the bundled models, the Panda, the iiwa, the Unitree H1 and G1 and
tests/data/mixed_joints.xml (free, ball, multi-joint bodies, welded bodies, tilted gravity). N = 11 states is no multiple
of any variant's lanes (8, 4, 2): full blocks and a short one. Bounds per state, relative to the state's largest entry
(helpers.assert_close with floor 0):
- the engine's functions, the jacobians, integrate and difference: 1e-13; forward dynamics and aba
  max(1e-13, 1e-16 cond(M)), as two backward-stable solves (NumPy's LU, the kernel's Cholesky and ABA) can differ by
  eps cond(M) (the iiwa without armature reaches cond(M) ~ 1e3-1e4);
- the derivatives: 1e-12, forward dynamics derivatives max(1e-12, 1e-15 cond(M)) (NumPy's LU inverse, the kernel's
  Cholesky);
- body_poses: 4 eps, relative to the batch's largest entry (at least 1).
The kernel runs the same operations for a state alone and in a batch, so a state's result alone, in a batch of one and
anywhere in a batch agree within SAME (4 eps times the allowance of forward dynamics; the derivatives 1e-12).

The simulation loop: integrators.rollout (trajectories side by side in the variant's lanes, on 2 threads) against
simulate on the NumPy backend trajectory by trajectory, simulate's compiled loop against its Python loop, on the
double pendulum, the Panda (position servos), the H1 and mixed_joints with every integrator; and rollout with every
input (ctrl, qfrc_applied, xfrc_applied per trajectory and step) on both backends; the bounds at each test.
"""

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

from physai import centroidal, derivatives, engine, integrators, jacobians, kinematics
from physai.engine import native
from helpers import Robot, assert_close, open_loop_inputs, run

ROBOTS = ["double_pendulum", "hinge_slide", "arm2", "arm7", "franka_emika_panda", "kuka_iiwa_14", "unitree_h1", "unitree_g1",
          "mixed_joints"]
N = 11
ROBOT_STATES = {"n": N, "seed": 0}
SAME = 4 * np.finfo(float).eps             # the same state on the compiled backend alone or in another batch
H = 0.01                                   # engine.integrate's and difference's step [s]
POINT = np.array([0.03, -0.02, 0.05])      # the jacobians' point, off each body's origin [m]


@dataclass(frozen=True)
class Call:
    f: Callable                # f(model, *arrays): an array or a tuple of arrays
    arrays: str                # the state arrays it takes, helpers.Robot's names ("q qd qdd"; q1 = integrate(q, qd, H))
    rtol: float                # against NumPy, per state, relative to the state's largest entry
    cond: float = 0.0          # the bound is rtol * max(1, cond * cond(M)) per state (a solve with M)
    same: float = SAME         # alone or in a batch of one against the batch, times the same allowance
    per_state: bool = True     # False: one bound for the batch, relative to its largest entry, at least 1


def _body_jacobians(model, q):
    """Every body's (Jp; Jr) of POINT: (nbody, 6, nv), or (N, nbody, 6, nv)."""
    return np.stack([jacobians.body_jacobian(model, q, b, POINT) for b in range(model.nbody)], axis=-3)


CALLS = {
    "rnea": Call(engine.rnea, "q qd qdd", 1e-13), "bias": Call(engine.bias, "q qd", 1e-13),
    "gravity": Call(engine.gravity, "q", 1e-13), "mass_matrix": Call(engine.mass_matrix, "q", 1e-13),
    "forward_dynamics": Call(engine.forward_dynamics, "q qd tau", 1e-13, cond=1e-3),
    "aba": Call(engine.aba, "q qd tau", 1e-13, cond=1e-3), "energy": Call(engine.energy, "q qd", 1e-13),
    "kinetic_energy": Call(engine.kinetic_energy, "q qd", 1e-13), "potential_energy": Call(engine.potential_energy, "q", 1e-13),
    "rnea_derivatives": Call(derivatives.rnea_derivatives, "q qd qdd", 1e-12, same=1e-12),
    "forward_dynamics_derivatives": Call(derivatives.forward_dynamics_derivatives, "q qd tau", 1e-12, cond=1e-3, same=1e-12),
    "body_jacobian": Call(_body_jacobians, "q", 1e-13),
    "point_jacobian": Call(lambda model, q: jacobians.point_jacobian(model, q, model.nbody - 1, POINT), "q", 1e-13),
    "body_poses": Call(kinematics.body_poses, "q", SAME, per_state=False),
    "integrate": Call(lambda model, q, qd: engine.integrate(model, q, qd, H), "q qd", 1e-13),
    "difference": Call(lambda model, q, q1: engine.difference(model, q, q1, H), "q q1", 1e-13),
    "momentum_matrix": Call(centroidal.momentum_matrix, "q", 1e-13), "com_jacobian": Call(centroidal.com_jacobian, "q", 1e-13),
    "momentum_matrix_dot": Call(centroidal.momentum_matrix_dot, "q qd", 1e-13),
    "jacobian_dot": Call(lambda model, q, qd: jacobians.frame_jacobian_dot(model, q, qd, f"body:{model.body_name[-1]}"),
                         "q qd", 1e-13),
}


def _jacobian_kernel(model, q, b):
    """body_jacobian's compiled call for body b (6, nv) or (N, 6, nv): the kernel's point is POINT in b's link frame."""
    link = int(model.body_linkid[b])
    if link < 0:                                                       # welded to the world: no call, zeros
        return np.zeros(np.shape(q)[:-1] + (6, model.nv))
    return native.Kernel("jacobian")(model, q, link, model.body_pos[b] + model.body_rot[b] @ POINT)


#: The compiled call (physai.engine.native.Kernel, one operation of cpp/kernels.h) behind each entry point, on the same
#: arrays: the public function on the compiled backend must give exactly its result (else it ran something else).
KERNELS = {
    **{name: native.Kernel(name) for name in ("rnea", "bias", "gravity", "mass_matrix", "forward_dynamics", "aba", "energy",
                                               "kinetic_energy", "potential_energy", "rnea_derivatives",
                                               "forward_dynamics_derivatives", "body_poses", "momentum_matrix",
                                               "com_jacobian", "momentum_matrix_dot")},
    "body_jacobian": lambda model, q: np.stack([_jacobian_kernel(model, q, b) for b in range(model.nbody)], axis=-3),
    "point_jacobian": lambda model, q: _jacobian_kernel(model, q, model.nbody - 1)[..., :3, :],
    "integrate": lambda model, q, qd: native.Kernel("integrate")(model, q, qd, H),
    "difference": lambda model, q, q1: native.Kernel("difference")(model, q, q1, H),
    "jacobian_dot": lambda model, q, qd: _jacobian_dot_kernel(model, q, qd),
}


def _jacobian_dot_kernel(model, q, qd):
    """frame_jacobian_dot's compiled call for the last body (zeros when it is welded to the world)."""
    link, point, _ = model.frame_in_link(f"body:{model.body_name[-1]}")
    if link < 0:
        return np.zeros(np.shape(q)[:-1] + (6, model.nv))
    return native.Kernel("jacobian_dot")(model, q, qd, link, point)


def parts(result) -> tuple:
    return result if isinstance(result, tuple) else (result,)


def reference(robot, name):
    """The NumPy backend's results of CALLS[name], cached on the robot: the batch and the states 0 and N - 1 alone."""
    cache = robot.__dict__.setdefault("numpy_results", {})
    if name not in cache:
        if not hasattr(robot, "q1"):
            robot.q1 = run("numpy", engine.integrate, robot.model, robot.q, robot.qd, H)
            robot.cond = np.linalg.cond(run("numpy", engine.mass_matrix, robot.model, robot.q))
        call = CALLS[name]
        f = lambda *a: run("numpy", call.f, robot.model, *a)   # noqa: E731
        cache[name] = f(*robot.args(call.arrays)), {i: f(*robot.args(call.arrays, i)) for i in (0, N - 1)}
    return cache[name]


@pytest.mark.parametrize("isa", native.isas())
@pytest.mark.parametrize("name", CALLS)
def test_native_equals_numpy(robot, name, isa, restore_isa):
    """CALLS[name] on the compiled backend in variant `isa` against NumPy, a batch and single states; a state alone,
    in a batch of one and in the batch give the same result."""
    call = CALLS[name]
    batch_ref, single_ref = reference(robot, name)
    allowance = np.maximum(1.0, call.cond * robot.cond)                 # per state
    assert native.set_isa(isa) and native.isa() == isa
    native_call = lambda *a: run("native", call.f, robot.model, *a)     # noqa: E731

    def close(actual, expected, rtol, what):
        """actual and expected: the parts of a result, each with the states' axis first."""
        assert len(actual) == len(expected), what
        for a, e in zip(actual, expected):
            assert np.asarray(a).dtype == np.float64, what
            if call.per_state:
                assert_close(a, e, rtol, floor=0.0, per_state=True, what=what)
            else:
                assert_close(a, e, np.max(rtol), what=what)

    def one(x):
        """A single state's result (its parts) with a states' axis of length 1."""
        return tuple(np.asarray(p)[None] for p in parts(x))

    batch = native_call(*robot.args(call.arrays))
    for sl in (slice(None), 0):
        compiled = run("native", KERNELS[name], robot.model, *robot.args(call.arrays, sl))
        public = batch if sl != 0 else native_call(*robot.args(call.arrays, sl))
        assert all(np.array_equal(a, b) for a, b in zip(parts(public), parts(compiled), strict=True)), f"{name} is not its kernel"
    assert type(batch) is type(batch_ref), name
    close(parts(batch), parts(batch_ref), call.rtol * allowance, f"{name} batch vs numpy")
    for i in (0, N - 1):
        single = native_call(*robot.args(call.arrays, i))
        assert type(single) is type(single_ref[i]), name
        close(one(single), one(single_ref[i]), call.rtol * allowance[i], f"{name} state {i} vs numpy")
        row = tuple(p[i:i + 1] for p in parts(batch))
        close(one(single), row, call.same * allowance[i], f"{name} state {i} alone vs in the batch")
        alone = native_call(*robot.args(call.arrays, slice(i, i + 1)))
        close(parts(alone), row, call.same * allowance[i], f"{name} state {i} in a batch of one vs in the batch")


def test_difference_inverts_integrate(robot):
    """difference(q, integrate(q, v, h), h) = v within rounding, eps |q| / h (on the compiled backend)."""
    back = engine.difference(robot.model, robot.q, engine.integrate(robot.model, robot.q, robot.qd, H), H)
    assert_close(back, robot.qd, 1e-10)                                 # rad/s


# ---- the simulation loop ----

_REFERENCE = {}                          # NumPy results of the simulations below, computed once per case


def cached(key, compute):
    if key not in _REFERENCE:
        _REFERENCE[key] = compute()
    return _REFERENCE[key]


@dataclass(frozen=True)
class Rollout:
    """N trajectories of `steps` steps of dt from random states (helpers.states(n, seed, qd_max=1)), with:
    lanes=False: a constant ctrl per trajectory (N, 1, nu) and one qfrc_applied row per step shared by all (steps, nv)
    (helpers.open_loop_inputs); lanes=True: a ctrl per trajectory and step, 0.1 of a random one in ctrlrange, on 2
    threads (19 trajectories: full blocks of lanes, a block split between the threads' chunks, a short one)."""
    key: str
    integrator: str
    n: int = 5
    seed: int = 1
    steps: int = 150
    dt: float = 1e-3
    lanes: bool = False


ROLLOUTS = {f"{key}-{integrator}": Rollout(key, integrator)
            for key in ("double_pendulum", "franka_emika_panda", "unitree_h1", "mixed_joints") for integrator in integrators.INTEGRATORS}
ROLLOUTS.update({f"lanes-{key}-{integrator}": Rollout(key, integrator, n=19, seed=4, steps=40, dt=2e-3, lanes=True)
                 for key, integrator in (("unitree_h1", "rk4"), ("franka_emika_panda", "implicitfast"))})


@pytest.mark.parametrize("isa", native.isas())
@pytest.mark.parametrize("case", ROLLOUTS)
def test_rollout_is_simulate_from_each_start(case, isa, restore_isa, monkeypatch):
    """rollout on the compiled backend against simulate on the NumPy backend, trajectory by trajectory, energy
    included, within 1e-10 relative (at least 1) of each trajectory's q, qd and energy; and simulate's compiled loop
    (trajectory 0 alone) against the same Python loop within 1e-13, the two differing by rounding (1e-9 for the Panda
    under euler, whose stiff position servos amplify it)."""
    c = ROLLOUTS[case]
    robot = cached(("robot", c.key, c.n, c.seed), lambda: Robot(c.key, n=c.n, seed=c.seed, qd_max=1.0))
    model, q0, qd0 = robot.model, robot.q, robot.qd
    if c.lanes:
        monkeypatch.setenv("PHYSAI_NUM_THREADS", "2")
        ctrl = 0.1 * np.random.default_rng(5).uniform(*model.actuators.ctrlrange.T, (c.n, c.steps, model.nu))
        rows = [{"ctrl": ctrl[n]} for n in range(c.n)]
        inputs = {"ctrl": ctrl}
    else:
        given = open_loop_inputs(robot.m, c.n, c.steps)
        ctrl = None if given["ctrl"] is None else given["ctrl"][:, :1]
        rows = [{"ctrl": None if ctrl is None else ctrl[n, 0], "qfrc_applied": given["qfrc_applied"][0]} for n in range(c.n)]
        inputs = {"ctrl": ctrl, "qfrc_applied": given["qfrc_applied"][0]}
    expected = cached(case, lambda: [run("numpy", integrators.simulate, model, q0[n], qd0[n], c.dt, c.steps, c.integrator, **rows[n])
                                     for n in range(c.n)])
    assert native.set_isa(isa)
    traj = run("native", integrators.rollout, model, q0, qd0, c.dt, c.steps, c.integrator, energy=True, **inputs)
    for n, one in enumerate(expected):
        for a, b, what in ((traj.q[n], one.q, "q"), (traj.qd[n], one.qd, "qd"), (traj.energy[n], one.energy, "energy")):
            assert_close(a, b, 1e-10, what=f"trajectory {n} {what}")
    assert np.array_equal(traj.t, expected[0].t)
    fast, slow = run("native", integrators.simulate, model, q0[0], qd0[0], c.dt, c.steps, c.integrator, **rows[0]), expected[0]
    bound = 1e-9 if c.key == "franka_emika_panda" and c.integrator == "euler" else 1e-13
    for a, b, what in ((fast.q, slow.q, "q"), (fast.qd, slow.qd, "qd"), (fast.energy, slow.energy, "energy")):
        assert_close(a, b, bound, what=f"simulate {what}")
    assert fast.integrator == slow.integrator and fast.dt == slow.dt and np.array_equal(fast.t, slow.t)


@pytest.mark.parametrize("isa", native.isas())
def test_rollout_with_every_input_equals_numpy(isa, restore_isa):
    """The Panda under implicitfast, 150 steps of 2 ms, ctrl, qfrc_applied and xfrc_applied per trajectory and step:
    rollout on both backends within 1e-12 in q and 1e-10 in qd (absolute: rad | m, rad/s | m/s)."""
    robot = cached(("robot", "franka_emika_panda", 5, 1), lambda: Robot("franka_emika_panda", n=5, seed=1, qd_max=1.0))
    inputs = open_loop_inputs(robot.m, 5, 150)
    args = (robot.model, robot.q, robot.qd, 2e-3, 150, "implicitfast")
    slow = cached("every input", lambda: run("numpy", integrators.rollout, *args, **inputs))
    assert native.set_isa(isa)
    fast = run("native", integrators.rollout, *args, **inputs)
    assert_close(fast.q, slow.q, 1e-12, scale=1.0)
    assert_close(fast.qd, slow.qd, 1e-10, scale=1.0)
