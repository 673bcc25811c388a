"""Simulation with constraints (integrators' constraints=True) against mj_step computed here: contacts found by
physai.collision, limits, friction loss, Newton's method warm-started from the step before, and the constraint force in
each integrator's metric. One step from MuJoCo's own states, and whole trajectories: the H1 falling onto its floor and
the G1 standing on its foot spheres."""

import warnings
from pathlib import Path

import mujoco
import numpy as np
import pytest
from mujoco import rollout as mujoco_rollout

from physai import collision, constraints, engine, integrators, models
from physai.engine.collision import candidates
from physai.exceptions import CollisionWarning, DivergenceError, InvalidArgumentError, ShapeError, UnsupportedModelError
from helpers import run
from scenes import capsule_beside_a_bare_mesh, random_scene, sphere_pile, without_meshes
import helpers


def mujoco_rollout_states(m, Q, QD, steps, ctrl=None):
    """(states (n, steps, size), d, spec): mujoco.rollout's full physics states from each (Q[k], QD[k]), ctrl held; d and
    spec to read a state back with mj_setState."""
    n = len(Q)
    d, spec = mujoco.MjData(m), mujoco.mjtState.mjSTATE_FULLPHYSICS
    initial = np.empty((n, mujoco.mj_stateSize(m, spec)))
    for k in range(n):
        mujoco.mj_resetData(m, d)
        d.qpos[:], d.qvel[:] = Q[k], QD[k]
        if ctrl is not None:
            d.ctrl[:] = ctrl
        mujoco.mj_getState(m, d, initial[k], spec)
    controls = None if ctrl is None else np.broadcast_to(ctrl, (n, steps, m.nu)).copy()
    with mujoco_rollout.Rollout(nthread=0) as r:
        states, _ = r.rollout(m, d, initial, controls, nstep=steps)
    return states, d, spec

NAMES = {0: "euler", 1: "rk4", 2: "implicit", 3: "implicitfast"}
CODES = {name: code for code, name in NAMES.items()}


def one_steps(m: mujoco.MjModel, integrator: str, steps: int, every: int, key: int | None):
    """(largest |q' - MuJoCo's|, largest |qd' - MuJoCo's| / max(1, |qd'|)) over steps of physai's step from MuJoCo's
    state (qpos, qvel, ctrl, qacc_warmstart) every `every` steps of an mj_step run."""
    m.opt.integrator = CODES[integrator]
    model = collision.ignoring_unsupported(engine.from_mujoco(m))
    d = mujoco.MjData(m)
    if key is not None:
        mujoco.mj_resetDataKeyframe(m, d, key)
    worst_q = worst_qd = 0.0
    for k in range(steps):
        if k % every:
            mujoco.mj_step(m, d)
            continue
        q, qd, warm, ctrl = d.qpos.copy(), d.qvel.copy(), d.qacc_warmstart.copy(), d.ctrl.copy()
        q1, qd1 = integrators.step(model, q, qd, m.opt.timestep, integrator, ctrl=ctrl if m.nu else None, constraints=True,
                                   qacc_warmstart=warm)
        mujoco.mj_step(m, d)
        worst_q = max(worst_q, np.abs(q1 - d.qpos).max())
        worst_qd = max(worst_qd, np.abs(qd1 - d.qvel).max() / max(1.0, np.abs(d.qvel).max()))
    return worst_q, worst_qd


@pytest.mark.parametrize("integrator", list(CODES))
def test_one_step_on_the_falling_h1_matches_mj_step(integrator):
    """One tree, one island: the same solve as MuJoCo's, to rounding (MuJoCo's default tolerance)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollisionWarning)
        worst_q, worst_qd = one_steps(models.load("unitree_h1", "scene"), integrator, 300, 15, key=0)
    assert worst_q < 1e-12 and worst_qd < 1e-12, (worst_q, worst_qd)


@pytest.mark.parametrize("integrator", list(CODES))
@pytest.mark.parametrize("seed", [0, 1])
def test_one_step_on_random_scenes_matches_mj_step(seed, integrator):
    """Free bodies of every primitive shape and a hinge chain on a tilted plane: MuJoCo solves each body's island on
    its own, physai all at once, so both stop within the solver's tolerance (1e-12 here) of the same optimum."""
    m = mujoco.MjModel.from_xml_string(random_scene(seed, supported_only=True))
    m.opt.tolerance = 1e-12
    worst_q, worst_qd = one_steps(m, integrator, 300, 10, key=None)
    assert worst_q < 1e-10 and worst_qd < 1e-8, (worst_q, worst_qd)


def perturbed_g1(n: int, seed: int = 0):
    """(m, q (n, nq), qd (n, nv), ctrl (nu,)): the G1 in its scene at its keyframe, its joints moved by N(0, 0.05) from
    default_rng(seed) (state 0 is the issue's: implicitfast was 2.2 rad/s off at left_wrist_roll_joint), the first n
    whose contacts are all with the floor (a few touch mesh to mesh, which physai cannot collide)."""
    m = models.load("unitree_g1", "scene")
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    key, rng, q = d.qpos.copy(), np.random.default_rng(seed), []
    while len(q) < n:
        d.qpos[:] = key
        d.qpos[7:] += rng.normal(0, 0.05, m.nq - 7)
        mujoco.mj_forward(m, d)
        if all(0 in (c.geom1, c.geom2) for c in d.contact[:d.ncon]):
            q.append(d.qpos.copy())
    return m, np.array(q), np.repeat(d.qvel[None], n, 0), d.ctrl.copy()


@pytest.mark.parametrize("integrator", ["implicit", "implicitfast"])
@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_implicit_steps_with_saturated_joint_actuators_match_mj_step(backend, integrator):
    """MuJoCo 4.0: a joint actuator whose joint's total sits at its actuatorfrcrange adds no implicit damping. The G1
    from perturbed keyframe states (64 on the compiled backend, 16 on NumPy), most with wrist or ankle joints at their
    limit: one step of N states equals mj_step of each within 1e-12 (q) and 1e-11 relative (qd; 1.1e-13 seen)."""
    n = 64 if backend == "native" else 16
    m, Q, QD, ctrl = perturbed_g1(n)
    m.opt.integrator = CODES[integrator]
    model = collision.ignoring_unsupported(engine.from_mujoco(m))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollisionWarning)
        q1, qd1 = helpers.run(backend, integrators.step, model, Q, QD, m.opt.timestep, integrator, ctrl=ctrl,
                              constraints=True)
    d, lo, hi, saturated = mujoco.MjData(m), *m.jnt_actfrcrange[1:].T, 0
    for k in range(n):
        d.qpos[:], d.qvel[:], d.ctrl[:], d.qacc_warmstart[:] = Q[k], QD[k], ctrl, 0.0
        mujoco.mj_step(m, d)
        assert np.abs(q1[k] - d.qpos).max() < 1e-12, k
        assert np.abs(qd1[k] - d.qvel).max() < 1e-11 * max(1.0, np.abs(d.qvel).max()), k
        limited = m.jnt_actfrclimited[1:].astype(bool)
        saturated += np.any(limited & ((d.qfrc_actuator[6:] <= lo) | (d.qfrc_actuator[6:] >= hi)))
    assert saturated > n // 2


@pytest.mark.parametrize("integrator", ["implicit", "implicitfast"])
def test_rollout_with_saturated_joint_actuators_matches_mujoco_rollout(integrator):
    """Four perturbed G1 keyframes (perturbed_g1), 200 steps of integrators.rollout with constraints against
    mujoco.rollout: every state within 1e-12 (q) and 1e-10 (qd; 2e-13 seen), with joints at their actuatorfrcrange."""
    n, steps = 4, 200
    m, Q, QD, ctrl = perturbed_g1(n, seed=3)
    m.opt.integrator = CODES[integrator]
    states, d, spec = mujoco_rollout_states(m, Q, QD, steps, ctrl)
    model = collision.ignoring_unsupported(engine.from_mujoco(m))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollisionWarning)
        run = integrators.rollout(model, Q, QD, m.opt.timestep, steps, integrator, ctrl=ctrl, constraints=True)
    lo, hi, saturated = *m.jnt_actfrcrange[1:].T, 0
    for k in range(n):
        for t in range(steps):
            mujoco.mj_setState(m, d, states[k, t], spec)
            assert np.abs(run.q[k, t + 1] - d.qpos).max() < 1e-12 and np.abs(run.qd[k, t + 1] - d.qvel).max() < 1e-10, (k, t)
            mujoco.mj_forward(m, d)
            saturated += np.any(m.jnt_actfrclimited[1:] & ((d.qfrc_actuator[6:] <= lo) | (d.qfrc_actuator[6:] >= hi)))
    assert saturated > 0


TOUCHING = {"box": ('type="box" size=".1 .1 .1"', 0.1), "cylinder": ('type="cylinder" size=".1 .1"', 0.1),
            "ellipsoid": ('type="ellipsoid" size=".1 .15 .1"', 0.1), "capsule": ('type="capsule" size=".1 .1"', 0.2),
            "sphere": ('type="sphere" size=".1"', 0.1)}


def touching_scene(shape: str, yaw: float, stack: bool) -> mujoco.MjModel:
    """A free `shape` (TOUCHING) resting exactly on a plane, turned by yaw [deg] about the vertical; stack: a box of
    half-size 0.1 on it, exactly touching too. RK4 with constraints."""
    geom, z = TOUCHING[shape]
    top = f'<body pos="0 0 {2 * z + 0.1}" euler="0 0 {-yaw}"><freejoint/><geom type="box" size=".1 .1 .1"/></body>'
    return mujoco.MjModel.from_xml_string(f"""<mujoco><option integrator="RK4"/><worldbody><geom type="plane" size="0 0 1"/>
        <body pos="0 0 {z}" euler="0 0 {yaw}"><freejoint/><geom {geom}/></body>{top if stack else ""}</worldbody></mujoco>""")


@pytest.mark.parametrize("shape", list(TOUCHING))
@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_rk4_at_exact_touching_matches_mj_step(shape, backend):
    """A shape exactly on a plane (and a box exactly on it), spinning about the vertical: RK4's later stages turn it at
    the same height, where its contacts are there or not by the last bit of the rotation (a box at 1 rad/s was 0.034
    off on the compiled backend, its sin and cos not libm's; a turned stack 0.4 off on both, the quaternion product
    not rounded as MuJoCo 4.0's). One rk4 step with constraints equals mj_step within 1e-12 (q) and 1e-12 relative
    (qd), at the issue's state and at random yaws and spins up to 50 rad/s."""
    rng = np.random.default_rng(7)
    cases = [(0.0, False, [1.0]), (0.0, False, [50.0])]
    stacks = (False, True) if shape in ("box", "sphere", "capsule") else (False,)   # physai collides these with a box
    cases += [(rng.uniform(-180, 180), stack, rng.uniform(-50, 50, 2)) for stack in stacks for _ in range(3)]
    for yaw, stack, spins in cases:
        m = touching_scene(shape, yaw, stack)
        d = mujoco.MjData(m)
        qd = np.zeros(m.nv)
        qd[5::6] = spins[:m.nv // 6]
        d.qvel[:] = qd
        mujoco.mj_step(m, d)
        model = engine.from_mujoco(m)
        q1, qd1 = helpers.run(backend, integrators.step, model, m.qpos0, qd, m.opt.timestep, "rk4", constraints=True)
        assert np.abs(q1 - d.qpos).max() < 1e-12, (yaw, stack, spins)
        assert np.abs(qd1 - d.qvel).max() < 1e-12 * max(1.0, np.abs(d.qvel).max()), (yaw, stack, spins)


def mujoco_run(m: mujoco.MjModel, steps: int):
    """(q0, qd0, ctrl, [qpos after each step], [qvel after each step], [ncon of each step]) of mj_step from the first
    keyframe."""
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    start = (d.qpos.copy(), d.qvel.copy(), d.ctrl.copy())
    Q, QD, ncon = [], [], []
    for _ in range(steps):
        mujoco.mj_step(m, d)
        Q.append(d.qpos.copy())
        QD.append(d.qvel.copy())
        ncon.append(d.ncon)
    return (*start, np.array(Q), np.array(QD), np.array(ncon))


def every_pair_physai_collides(m: mujoco.MjModel):
    """(the physai Model of m, the geom pairs physai refuses as (geom1, geom2) sorted): the model as it is when physai
    collides all its candidate pairs, else ignoring_unsupported (which leaves out only the refused ones)."""
    model = engine.from_mujoco(m)
    refused = {tuple(sorted((int(a), int(b)))) for a, b in candidates(model)[1]}
    return (collision.ignoring_unsupported(model) if refused else model), refused


@pytest.mark.parametrize("tolerance", [None, 1e-15])
@pytest.mark.parametrize("robot,steps", [("unitree_h1", 250), ("unitree_g1", 2000)])
def test_trajectory_matches_mj_step(robot, steps, tolerance):
    """The Menagerie acceptance run: the H1 left to fall from its keyframe (Euler; it lands at t = 0.5 s) and the G1
    standing 4 s under its actuators (implicitfast), at MuJoCo's default solver tolerance and at 1e-15 (both sides),
    with every geom pair: all of the G1's (meshes, cylinders, foot spheres) and of the H1's (its 110 capsule-cylinder
    and 6 box-cylinder pairs by MuJoCo 4's multi-contact, without margin; they never touch in MuJoCo's run). Every state
    of the run equals MuJoCo's within 1e-12 in q and 1e-9 of the speed scale in qd, with the same number of contacts
    each step."""
    m = models.load(robot, "scene")
    if tolerance is not None:
        m.opt.tolerance, m.opt.iterations = tolerance, 1000
    q0, qd0, ctrl, Q, QD, ncon = mujoco_run(m, steps)
    model, refused = every_pair_physai_collides(m)
    assert not refused
    run = integrators.simulate(model, q0, qd0, m.opt.timestep, steps, NAMES[int(m.opt.integrator)], ctrl=ctrl,
                               constraints=True, energy=False)
    assert np.abs(run.q[1:] - Q).max() < 1e-12
    assert np.abs(run.qd[1:] - QD).max() < 1e-9 * max(1.0, np.abs(QD).max())
    assert run.ncon.tolist() == ncon.tolist()


@pytest.mark.parametrize("iterations, ls_iterations, backend", [(i, ls, "native") for i in (1, 2, 3) for ls in (1, 2, 3)]
                         + [(1, ls, "numpy") for ls in (1, 2, 3)] + [(2, 1, "numpy")])
def test_solver_limits_follow_mj_step(iterations, ls_iterations, backend):
    """The H1 from its keyframe (on its floor) for 60 steps with the solver's iterations and ls_iterations of 1 to 3:
    each step's unconverged solve is MuJoCo's, so the run equals mj_step's (1e-9 in q, 1e-7 of the speed scale in qd:
    with iterations 1 and ls_iterations 3 the contacts come and go every few steps and amplify rounding to 7e-11 in q,
    6e-9 in qd; 1e-13 otherwise). The NumPy engine (5 s a run) on the four runs MuJoCo's limits change most."""
    m = models.load("unitree_h1", "scene")
    m.opt.iterations, m.opt.ls_iterations = iterations, ls_iterations
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    q0, qd0, Q, QD = d.qpos.copy(), d.qvel.copy(), [], []
    for _ in range(60):
        mujoco.mj_step(m, d)
        Q.append(d.qpos.copy()), QD.append(d.qvel.copy())
    model = collision.ignoring_unsupported(engine.from_mujoco(m))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollisionWarning)
        out = run(backend, integrators.simulate, model, q0, qd0, m.opt.timestep, 60, NAMES[int(m.opt.integrator)],
                  constraints=True, energy=False)
    assert np.abs(out.q[1:] - np.array(Q)).max() < 1e-9 * max(1.0, np.abs(Q).max())
    assert np.abs(out.qd[1:] - np.array(QD)).max() < 1e-7 * max(1.0, np.abs(QD).max())


def test_rollout_with_constraints_runs_each_trajectory_as_simulate():
    m = mujoco.MjModel.from_xml_string(random_scene(2, supported_only=True))
    model = engine.from_mujoco(m)
    q0 = np.array([m.qpos0, m.qpos0])
    q0[1, 2] += 0.05                                            # the first free body a little higher
    qd0 = np.zeros((2, m.nv))
    batch = integrators.rollout(model, q0, qd0, m.opt.timestep, 60, constraints=True)
    for n in range(2):
        alone = integrators.simulate(model, q0[n], qd0[n], m.opt.timestep, 60, constraints=True, energy=False)
        assert np.abs(batch.q[n] - alone.q).max() < 1e-12 and batch.ncon[n].tolist() == alone.ncon.tolist()
    assert batch.ncon.sum() > 0


LANE_TASKS = {"ant": "ant.xml", "humanoid": "humanoid.xml", "walker2d": "walker2d_v5.xml"}


@pytest.mark.parametrize("integrator", ["rk4", "euler"])
@pytest.mark.parametrize("task", sorted(LANE_TASKS) + ["humanoid elliptic"])
def test_constrained_rollout_in_lanes_matches_mujoco_rollout(task, integrator, restore_isa):
    """Gymnasium's Ant and Walker2d (Newton) and Humanoid (PGS; and with elliptic cones, its contacts' blocks of three
    rows) from qpos0 above or on their floors, their joints moved by up to 0.05 rad, 11 trajectories of 100 steps (on
    the floor after 20-85) under a random constant control, with RK4 (the tasks') and Euler: on every variant
    (native.isas(); constrained rollouts 8 states side by side under AVX-512, 4 under AVX2, cpp/simulate.h's
    constrained_lanes, 2 under the default) the constrained rollout steps blocks of trajectories with the smooth
    stages and the integration in lanes and each trajectory's contacts, rows and solve alone; each state equals
    mujoco.rollout's (q within 1e-10, qd 1e-8) and each trajectory the run simulate gives it alone (q within 1e-12,
    the same contact counts)."""
    import gymnasium.envs.mujoco as gym_mujoco

    name, *cone = task.split()
    m = mujoco.MjModel.from_xml_path(str(Path(gym_mujoco.__file__).parent / "assets" / LANE_TASKS[name]))
    m.opt.integrator = CODES[integrator]
    if cone:
        m.opt.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    n, steps = 11, 100
    rng = np.random.default_rng(7)
    Q = np.repeat(m.qpos0[None], n, axis=0)
    free = 7 if m.jnt_type[0] == mujoco.mjtJoint.mjJNT_FREE else 0
    Q[:, free:] += rng.uniform(-0.05, 0.05, (n, m.nq - free))
    QD = np.zeros((n, m.nv))
    lo, hi = m.actuator_ctrlrange.T
    ctrl = rng.uniform(lo, hi)
    model = engine.from_mujoco(m)
    alone = [integrators.simulate(model, Q[k], QD[k], m.opt.timestep, steps, integrator, ctrl=ctrl, constraints=True,
                                  energy=False) for k in range(n)]
    assert all(a.ncon.sum() > 0 for a in alone)                        # each touches the floor
    assert_lanes_follow_mujoco_and_simulate(m, model, Q, QD, steps, integrator, ctrl, alone)


def assert_lanes_follow_mujoco_and_simulate(m, model, Q, QD, steps, integrator, ctrl, alone) -> None:
    """On every variant (native.isas()) the constrained rollout of (Q, QD) under ctrl equals mujoco.rollout's states (q
    within 1e-10, qd 1e-8) and each trajectory k the run simulate gave it alone (alone[k]: q within 1e-12, the same
    contact counts)."""
    from physai.engine import native

    states, d, spec = mujoco_rollout_states(m, Q, QD, steps, ctrl)
    for isa in native.isas():
        assert native.set_isa(isa)
        run = integrators.rollout(model, Q, QD, m.opt.timestep, steps, integrator, ctrl=ctrl, constraints=True)
        for k in range(len(Q)):
            for t in range(steps):
                mujoco.mj_setState(m, d, states[k, t], spec)
                assert np.abs(run.q[k, t + 1] - d.qpos).max() < 1e-10, (isa, k, t)
                assert np.abs(run.qd[k, t + 1] - d.qvel).max() < 1e-8, (isa, k, t)
            assert np.abs(run.q[k] - alone[k].q).max() < 1e-12 and run.ncon[k].tolist() == alone[k].ncon.tolist(), (isa, k)


@pytest.mark.parametrize("tolerance, iterations", [(0.0, 150), (1e-10, 100)])
def test_constrained_rollout_in_lanes_with_pgs_solves_of_any_length(tolerance, iterations, restore_isa):
    """Gymnasium's Humanoid with PGS at tolerance 0 and 150 iterations (every solve runs to the limit, past the 128
    sweeps whose visiting orders the compiled solver keeps, cpp/solver.h's pgs_order_at) and at 1e-10 (solves of 2 to
    46 sweeps side by side, MuJoCo's counts), 5 trajectories on the floor from their start (the lanes' solves run
    together, cpp/solver.h's pgs_together; under AVX2 one trajectory alone): on every variant each state equals
    mujoco.rollout's (q within 1e-10, qd 1e-8) and each trajectory the run simulate gives it alone (q within 1e-12,
    the same contact counts)."""
    import gymnasium.envs.mujoco as gym_mujoco

    m = mujoco.MjModel.from_xml_path(str(Path(gym_mujoco.__file__).parent / "assets" / "humanoid.xml"))
    m.opt.tolerance, m.opt.iterations = tolerance, iterations
    n, steps = 5, 12
    rng = np.random.default_rng(11)
    Q = np.repeat(m.qpos0[None], n, axis=0)
    Q[:, 2] = 1.0 + rng.uniform(0.0, 0.05, n)                        # the feet into the floor: contacts from the start
    Q[:, 7:] += rng.uniform(-0.05, 0.05, (n, m.nq - 7))
    QD = np.zeros((n, m.nv))
    lo, hi = m.actuator_ctrlrange.T
    ctrl = rng.uniform(lo, hi)
    model = engine.from_mujoco(m)
    alone = [integrators.simulate(model, Q[k], QD[k], m.opt.timestep, steps, "rk4", ctrl=ctrl, constraints=True,
                                  energy=False) for k in range(n)]
    assert all(a.ncon[1] > 0 for a in alone)                          # each in contact from its first step
    assert_lanes_follow_mujoco_and_simulate(m, model, Q, QD, steps, "rk4", ctrl, alone)


def humanoid_with_boxes(boxes: int) -> mujoco.MjModel:
    """Gymnasium's Humanoid (qpos0, above its floor) with `boxes` free boxes dropped beside it, each to land on the floor."""
    import gymnasium.envs.mujoco as gym_mujoco

    spec = mujoco.MjSpec.from_file(str(Path(gym_mujoco.__file__).parent / "assets" / "humanoid.xml"))
    for b in range(boxes):
        body = spec.worldbody.add_body(pos=[0.5 + 0.15 * (b % 4), -0.3 + 0.15 * (b // 4), 0.1])
        body.add_freejoint()
        body.add_geom(type=mujoco.mjtGeom.mjGEOM_BOX, size=[0.04, 0.03, 0.05])
    return spec.compile()


@pytest.mark.parametrize("boxes, in_lanes", [(3, True), (16, False)])
def test_constrained_rollout_with_free_bodies_runs_each_trajectory_as_simulate(boxes, in_lanes, restore_isa):
    """Which way a constrained rollout goes (cpp/kernels.h's constrained_lanes_step, read through
    native.constrained_lanes_step), on every variant (native.isas()): the Humanoid, and with 3 free boxes (their dofs
    18 of 41), in lanes under euler and one by one under implicit; with 16 boxes (96 of 119 dofs, three quarters or
    more: lanes_gain) and a pile of 40 free spheres (every dof) one by one. Both ways, euler, 5 trajectories of 40
    steps from joint angles moved by up to 0.05 rad: each trajectory the run simulate gives it alone (q within 1e-12,
    the same contact counts), and each touches. An integrator the engine does not have: InvalidArgumentError."""
    from physai.engine import native

    m = humanoid_with_boxes(boxes)
    model = engine.from_mujoco(m)
    n, steps = 9, 40                                   # a full block and one alone at every lane width (8, 4, 2)
    humanoid, pile = engine.from_mujoco(humanoid_with_boxes(0)), engine.from_mujoco(mujoco.MjModel.from_xml_string(sphere_pile(40)))
    rng = np.random.default_rng(3)
    Q = np.repeat(m.qpos0[None], n, axis=0)
    Q[:, 7:m.nq - 7 * boxes] += rng.uniform(-0.05, 0.05, (n, m.nq - 7 - 7 * boxes))
    QD = np.zeros((n, m.nv))
    alone = [integrators.simulate(model, Q[k], QD[k], m.opt.timestep, steps, "euler", constraints=True, energy=False)
             for k in range(n)]
    assert all(a.ncon.sum() > 0 for a in alone)
    for isa in native.isas():
        assert native.set_isa(isa)
        assert native.constrained_lanes_step(model, "euler", n) is in_lanes, isa
        assert not native.constrained_lanes_step(model, "implicit", n), isa
        assert native.constrained_lanes_step(humanoid, "euler", n) and not native.constrained_lanes_step(pile, "euler", n), isa
        run = integrators.rollout(model, Q, QD, m.opt.timestep, steps, "euler", constraints=True)
        for k in range(n):
            assert np.abs(run.q[k] - alone[k].q).max() < 1e-12 and run.ncon[k].tolist() == alone[k].ncon.tolist(), (isa, k)
    with pytest.raises(InvalidArgumentError, match="integrator must be one of"):
        native.constrained_lanes_step(model, "verlet", n)


DROPS = """<mujoco><option timestep="0.005"/><worldbody>
  <geom type="plane" size="2 2 0.1"/>
  <body pos="0 0 0.35"><joint type="hinge" axis="0 1 0" damping="0.01"/>
    <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.04"/><geom type="sphere" pos="0.3 0 0" size="0.06"/></body>
  {ball}</worldbody></mujoco>"""
BALL = '<body pos="1 0 0.3"><freejoint/><geom type="sphere" size="0.1"/></body>'


@pytest.mark.parametrize("integrator", ["euler", "implicitfast"])
def test_rollout_whose_contacts_start_midway_matches_mujoco_rollout(integrator):
    """A swinging arm (and with euler a falling ball) above a plane, contacts the only constraint: 19 trajectories from
    angles, heights and speeds that meet the plane at different steps against mujoco.rollout (the steps before a
    trajectory's first contact side by side in lanes, the rest one by one from the step before it), every state
    within 1e-12 (q) and 1e-10 (qd), and each trajectory as simulate runs it alone (the same contact counts)."""
    m = mujoco.MjModel.from_xml_string(DROPS.format(ball=BALL if integrator == "euler" else ""))
    m.opt.integrator = CODES[integrator]
    n, steps = 19, 150
    rng = np.random.default_rng(5)
    Q = np.repeat(m.qpos0[None], n, axis=0)
    Q[:, 0] = rng.uniform(-1.5, 1.4, n)                            # the arm's angle [rad]
    QD = np.zeros((n, m.nv))
    QD[:, 0] = rng.uniform(-3.0, 1.0, n)
    if m.nq > 1:
        Q[:, 3] += rng.uniform(0.0, 1.5, n)                        # the ball's height
    states, d, spec = mujoco_rollout_states(m, Q, QD, steps)
    model = engine.from_mujoco(m)
    run = integrators.rollout(model, Q, QD, m.opt.timestep, steps, integrator, constraints=True)
    first = [int(np.argmax(c > 0)) if c.any() else steps for c in run.ncon]
    assert min(first) == 0 and max(first) > 40, first          # touching from the start, and only after 40 steps
    for k in range(n):
        for t in range(steps):
            mujoco.mj_setState(m, d, states[k, t], spec)
            assert np.abs(run.q[k, t + 1] - d.qpos).max() < 1e-12 and np.abs(run.qd[k, t + 1] - d.qvel).max() < 1e-10, (k, t)
        alone = integrators.simulate(model, Q[k], QD[k], m.opt.timestep, steps, integrator, constraints=True, energy=False)
        assert np.abs(run.q[k] - alone.q).max() < 1e-12 and run.ncon[k].tolist() == alone.ncon.tolist(), k


def test_the_numpy_engine_rollout_whose_contacts_start_midway_matches_mujoco_rollout():
    """The euler rollout above on the NumPy engine, its trajectories 0, 4 and 10 (the ball lands on the plane): every
    state within the same bounds of mujoco.rollout's (1e-12 in q, 1e-10 in qd). The NumPy solver maps forces to the
    joints (J^T f) and builds Newton's Hessian in MuJoCo's order, with no fused multiply-add; with BLAS's J^T f the
    ball's quaternion left the bound at trajectory 0's step 65 (1.5e-12), with BLAS's Hessian trajectory 10's qd at
    step 50 (4e-10)."""
    m = mujoco.MjModel.from_xml_string(DROPS.format(ball=BALL))
    m.opt.integrator = CODES["euler"]
    n, steps = 19, 150
    rng = np.random.default_rng(5)                             # the test above's 19 starts, three of them kept
    Q = np.repeat(m.qpos0[None], n, axis=0)
    Q[:, 0] = rng.uniform(-1.5, 1.4, n)
    QD = np.zeros((n, m.nv))
    QD[:, 0] = rng.uniform(-3.0, 1.0, n)
    Q[:, 3] += rng.uniform(0.0, 1.5, n)
    Q, QD = Q[[0, 4, 10]], QD[[0, 4, 10]]
    states, d, spec = mujoco_rollout_states(m, Q, QD, steps)
    out = run("numpy", integrators.rollout, engine.from_mujoco(m), Q, QD, m.opt.timestep, steps, "euler", constraints=True)
    for k in range(len(Q)):
        for t in range(steps):
            mujoco.mj_setState(m, d, states[k, t], spec)
            assert np.abs(out.q[k, t + 1] - d.qpos).max() < 1e-12 and np.abs(out.qd[k, t + 1] - d.qvel).max() < 1e-10, (k, t)


def test_numpy_backend_gives_the_same_run():
    m = mujoco.MjModel.from_xml_string(random_scene(3, supported_only=True))
    model = engine.from_mujoco(m)
    runs = []
    for backend in ("native", "numpy"):
        previous = engine.set_backend(backend)
        try:
            runs.append(integrators.simulate(model, m.qpos0, np.zeros(m.nv), m.opt.timestep, 40, "implicit",
                                             constraints=True, energy=False))
        finally:
            engine.set_backend(previous)
    assert np.abs(runs[0].q - runs[1].q).max() < 1e-9 and runs[0].ncon.tolist() == runs[1].ncon.tolist()


def test_joint_limit_stops_the_panda_as_mj_step():
    """Issue I's first sighting: 200 N m on the Panda's first joint for 0.5 s; with its limits the joint stops at its
    range as under mj_step (without them it turns on)."""
    m = models.load("franka_emika_panda")
    m.geom_contype[:] = 0                                       # the arm's meshes: no contacts in this check
    m.geom_conaffinity[:] = 0
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    q0, qd0, ctrl = d.qpos.copy(), d.qvel.copy(), d.ctrl.copy()
    applied = np.zeros(m.nv)
    applied[0] = 200.0
    d.qfrc_applied[:] = applied
    steps = 250
    for _ in range(steps):
        mujoco.mj_step(m, d)
    model = engine.from_mujoco(m)
    run = integrators.simulate(model, q0, qd0, m.opt.timestep, steps, NAMES[int(m.opt.integrator)], ctrl=ctrl,
                               qfrc_applied=applied, constraints=True, energy=False)
    free = integrators.simulate(model, q0, qd0, m.opt.timestep, steps, NAMES[int(m.opt.integrator)], ctrl=ctrl,
                                qfrc_applied=applied, energy=False, constraints=False)
    assert abs(run.q[-1, 0] - d.qpos[0]) < 1e-9
    assert free.q[-1, 0] > m.jnt_range[0, 1] + 0.5             # smooth dynamics alone pass the limit


def test_models_with_pairs_physai_cannot_collide_are_refused():
    model = without_meshes(engine.from_mujoco(models.load("unitree_g1", "scene")))   # its mesh pairs: unsupported
    with pytest.raises(UnsupportedModelError, match="ignore_unsupported|ignoring_unsupported"):
        integrators.simulate(model, model.qpos0, np.zeros(model.nv), 0.002, 2, constraints=True)


def test_the_g1_in_its_scene_stands_by_default():
    """Issue V's newcomer: simulate on the G1 scene with neither constraints nor integrator nor dt, every geom pair
    collided (meshes too): the run is the model's own, implicitfast at 2 ms with its contacts (the same run as with them
    given, 1e-14), standing on its feet."""
    m = models.load("unitree_g1", "scene")
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    model = engine.from_mujoco(m)
    run = integrators.simulate(model, d.qpos, d.qvel, steps=50, ctrl=d.ctrl, energy=False)
    given = integrators.simulate(model, d.qpos, d.qvel, m.opt.timestep, 50, "implicitfast", ctrl=d.ctrl, energy=False,
                                 constraints=True)
    assert run.integrator == "implicitfast" and run.dt == m.opt.timestep and (run.ncon > 0).all()
    assert np.abs(run.q - given.q).max() < 1e-14 and abs(run.q[-1, 2] - d.qpos[2]) < 0.05


@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_a_left_out_pair_that_comes_near_warns(backend):
    """A capsule beside a mesh geom without its data (pairs physai cannot collide) on a floor, the model built with
    collision.ignoring_unsupported: the run goes on with the capsule's floor contacts and warns that the left-out pairs
    may touch, on both backends."""
    model = collision.ignoring_unsupported(capsule_beside_a_bare_mesh(-0.05, floor=True))
    previous = engine.set_backend(backend)
    try:
        with pytest.warns(CollisionWarning, match="may be touching"):
            run = integrators.simulate(model, model.qpos0, np.zeros(model.nv), 0.002, 10, constraints=True, energy=False)
    finally:
        engine.set_backend(previous)
    assert (run.ncon > 0).all()


def test_a_closed_loop_of_steps_follows_mj_step():
    """The policy loop of integrators.step's docstring: one state stepped call by call with its warm start handed back
    (step_result's qacc_warmstart) runs as mj_step does, within 1e-12 over the H1's fall; N states in one call equal each stepped
    alone."""
    m = models.load("unitree_h1", "scene")
    model = collision.ignoring_unsupported(engine.from_mujoco(m))
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    q, qd, ctrl, warm = d.qpos.copy(), d.qvel.copy(), d.ctrl.copy(), None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollisionWarning)
        for _ in range(150):
            r = integrators.step_result(model, q, qd, m.opt.timestep, "euler", ctrl=ctrl, constraints=True,
                                        qacc_warmstart=warm)
            q, qd, warm = r.q, r.qd, r.qacc_warmstart
            mujoco.mj_step(m, d)
            assert np.abs(q - d.qpos).max() < 1e-12 and np.abs(warm - d.qacc_warmstart).max() < 1e-8
        rng = np.random.default_rng(0)
        n = 9                                          # a full block of lanes and one state alone at every width
        Q, QD = q + 0.01 * rng.uniform(-1.0, 1.0, (n, m.nq)), qd + 0.1 * rng.normal(size=(n, m.nv))
        Q[:, 3:7] /= np.linalg.norm(Q[:, 3:7], axis=1, keepdims=True)
        C = ctrl + rng.normal(size=(n, m.nu))
        batch = integrators.step(model, Q, QD, m.opt.timestep, "euler", ctrl=C, constraints=True)
        for k in range(n):
            alone = integrators.step(model, Q[k], QD[k], m.opt.timestep, "euler", ctrl=C[k], constraints=True)
            assert np.abs(batch[0][k] - alone[0]).max() < 1e-12 and np.abs(batch[1][k] - alone[1]).max() < 1e-10


@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_step_checks_per_state_inputs(backend):
    model = engine.from_mujoco(models.load("arm7"))
    Q, QD = np.repeat(model.qpos0[None], 3, 0), np.zeros((3, model.nv))
    previous = engine.set_backend(backend)
    try:
        with pytest.raises(ShapeError, match="ctrl has 2 rows, q has 3 states"):
            integrators.step(model, Q, QD, 0.002, ctrl=np.zeros((2, model.nu)))
        with pytest.raises(ShapeError, match=r"qd has shape \(3, 6\)"):
            integrators.step(model, Q, np.zeros((3, 6)), 0.002)
        with pytest.raises(ShapeError, match="qacc_warmstart has 2 states"):
            integrators.step(model, Q, QD, 0.002, constraints=True, qacc_warmstart=np.zeros((2, model.nv)))
        one = integrators.step(model, Q, QD, 0.002, ctrl=np.ones(model.nu))          # one ctrl for every state
        assert one[0].shape == (3, model.nq)
    finally:
        engine.set_backend(previous)


def test_constraint_functions_find_their_own_contacts():
    """constraints.forward_dynamics and inverse_dynamics with contacts=None detect the contacts (physai.collision) and
    equal mj_forward and mj_inverse on the H1 lying on its floor; an empty ContactSet turns them off."""
    m = models.load("unitree_h1", "scene")
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    for _ in range(250):
        mujoco.mj_step(m, d)
    mujoco.mj_forward(m, d)
    assert d.ncon > 0
    model = collision.ignoring_unsupported(engine.from_mujoco(m))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollisionWarning)
        fwd = constraints.forward_dynamics(model, d.qpos, d.qvel, d.qfrc_passive + d.qfrc_actuator,
                                           qacc_warmstart=d.qacc_warmstart)
        inv = constraints.inverse_dynamics(model, d.qpos, d.qvel, d.qacc)
        off = constraints.forward_dynamics(model, d.qpos, d.qvel, d.qfrc_passive + d.qfrc_actuator,
                                           collision.ContactSet.empty(model.nbody))
    assert np.abs(fwd.qacc - d.qacc).max() < 1e-6 * max(1.0, np.abs(d.qacc).max())
    d2 = mujoco.MjData(m)
    d2.qpos[:], d2.qvel[:], d2.qacc[:] = d.qpos, d.qvel, d.qacc
    mujoco.mj_inverse(m, d2)
    assert np.abs(inv.tau - d2.qfrc_inverse - d2.qfrc_passive).max() < 1e-9 * max(1.0, np.abs(d2.qfrc_constraint).max())
    assert np.abs(off.qacc - fwd.qacc).max() > 1.0                      # without the floor it falls


def test_a_diverging_contact_run_names_its_deepest_contact():
    """A ball pressed into its floor by a gravity of 1e300 m/s^2: the run overflows within two steps, and the
    DivergenceError names the step, the time and the contact the step before (compiled backend: its arithmetic does not
    depend on the BLAS kernel, whose overflow paths differ). Loading it warns of nothing (the loader's |g| overflowed)."""
    xml = """<mujoco><option timestep="0.01" gravity="0 0 -1e300"/><worldbody>
             <geom name="floor" type="plane" size="0 0 1"/><body><freejoint/>
             <geom name="ball" type="sphere" size="0.1"/></body></worldbody></mujoco>"""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        model = engine.from_mujoco(mujoco.MjModel.from_xml_string(xml))
    previous = engine.set_backend("native")
    try:
        with pytest.raises(DivergenceError, match=r"diverged at step \d+ \(t = .* s\).*deepest contact was geom 0 "
                                                  r"\('floor', plane\) with geom 1 \('ball', sphere\)"):
            integrators.simulate(model, model.qpos0, np.zeros(6), 0.01, 50, constraints=True, energy=False)
    finally:
        engine.set_backend(previous)


@pytest.mark.parametrize("backend,steps", [("native", 1000), ("numpy", 100)])
def test_a_stack_of_boxes_follows_mj_step(backend, steps):
    """Three boxes dropped onto each other and the floor (box-box and box-plane contacts, up to 12 at once): every
    state within 1e-12 of mj_step's, on both backends (2 s compiled, 0.2 s on NumPy)."""
    xml = """<mujoco><worldbody><geom type="plane" size="0 0 1"/>
             <body pos="0 0 0.1"><freejoint/><geom type="box" size="0.1 0.07 0.05"/></body>
             <body pos="0.02 0.01 0.25" euler="0.3 0.2 0.1"><freejoint/><geom type="box" size="0.06 0.12 0.03"/></body>
             <body pos="-0.03 0.02 0.4" euler="0.1 0.5 0.7"><freejoint/><geom type="box" size="0.05 0.05 0.05"/></body>
             </worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    states = []
    for _ in range(steps):
        mujoco.mj_step(m, d)
        states.append(d.qpos.copy())
    previous = engine.set_backend(backend)
    try:
        run = integrators.simulate(engine.from_mujoco(m), m.qpos0, np.zeros(m.nv), m.opt.timestep, steps, constraints=True,
                                   energy=False)
    finally:
        engine.set_backend(previous)
    assert np.abs(run.q[1:] - np.array(states)).max() < 1e-12 and run.ncon.max() >= 8


@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_a_pile_of_spheres_follows_mj_step(backend):
    """A pile of 64 free spheres in a box (nv 384), every sphere touching its neighbours: one island whose Hessian
    couples the trees (the compiled engine's sparse factor with its fill-in, as MuJoCo's), 20 steps within 1e-8 of
    mj_step's q."""
    m = mujoco.MjModel.from_xml_string(sphere_pile(64))
    d = mujoco.MjData(m)
    reference = []
    for _ in range(20):
        mujoco.mj_step(m, d)
        reference.append(d.qpos.copy())
    trajectory = run(backend, integrators.simulate, engine.from_mujoco(m), m.qpos0, np.zeros(m.nv), m.opt.timestep, 20,
                     "euler", constraints=True, energy=False)
    assert d.ncon > 100
    assert np.abs(trajectory.q[1:] - np.array(reference)).max() < 1e-8
