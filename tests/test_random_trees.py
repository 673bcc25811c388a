"""Random trees against MuJoCo: rnea, M, bias, forward dynamics and energy, teaching layer and engine.

Each example of the first test is a tree drawn by tests/random_trees.py (hinges, slides and welds; branching; tilted gravity;
full inertias; joint anchors away from the body origin; random refs and armature), compiled by MuJoCo from
MJCF text, read with tree_from_mujoco and compiled with engine.compile_tree, at random states. MuJoCo runs
with constraints disabled and energy enabled; the tree has no springs or dampers, so qfrc_passive is zero.

Bound: |ours - MuJoCo| <= 1e-12 * scale with scale = max(1, max |MuJoCo|) for rnea, M, bias and energy.
Forward dynamics solves M qdd = tau - c, whose rounding is amplified by M's condition number, so its scale
is max(1, max |qacc|) * cond(M) (cond(M) reaches ~1e3 on the CI draws: zero armature, light distal bodies).
The engine is also run on all the example's states in one batched call (its other code path).
The second test draws trees with every joint type (ball, free roots, up to three joints in one body) for the
engine alone, and adds Jacobians and integrate. The CI profile (tests/conftest.py) draws 100 trees per test
with a fixed seed. Worst relative errors seen
on those draws: rnea 2.6e-14, M 5.8e-15, bias 1.1e-14, energy 3.4e-14, qacc 9.1e-15 (6.6e-15 even without
the cond(M) factor); the bound leaves ~30x margin for other CPUs and BLAS kernels.
"""

import mujoco
import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st

from physai import dynamics, engine, integrators, jacobians, models

import random_trees
from helpers import assert_close

TOL = 1e-12
STATES = 3


def check(layer: str, quantity: str, ours, ref, scale: float) -> None:
    assert_close(ours, ref, TOL, scale, what=f"{layer} {quantity}")


def scale(ref) -> float:
    return max(1.0, float(np.abs(ref).max()))


@st.composite
def cases(draw):
    """(TreeSpec, q, qd, qdd, tau) with STATES rows each: hinges in [-pi, pi], slides in [-0.5, 0.5] m."""
    spec = draw(random_trees.trees())
    nq, nv = spec.nq, spec.nv
    qmax = np.array([np.pi if b.joint.kind == "hinge" else 0.5 for b in spec.bodies if b.joint])
    floats = st.floats(-1.0, 1.0, allow_nan=False, allow_subnormal=False)
    draw_array = lambda n: np.array(draw(st.lists(floats, min_size=STATES * n, max_size=STATES * n))).reshape(STATES, n)  # noqa: E731
    q = draw_array(nq) * qmax
    qd, qdd, tau = 5 * draw_array(nv), 20 * draw_array(nv), 20 * draw_array(nv)
    return spec, q, qd, qdd, tau


def mujoco_reference(m, q, qd, qdd, tau) -> dict:
    """MuJoCo's quantities at one state (constraints off, energy on)."""
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:], d.qacc[:] = q, qd, qdd
    mujoco.mj_inverse(m, d)
    rnea = d.qfrc_inverse + d.qfrc_passive
    d.qfrc_applied[:] = tau
    mujoco.mj_forward(m, d)
    M = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, M)
    return dict(rnea=rnea, M=M, bias=d.qfrc_bias.copy(), qacc=d.qacc.copy(), energy=d.energy[0] + d.energy[1])


@given(cases())
def test_random_tree_matches_mujoco(case):
    spec, Q, QD, QDD, TAU = case
    m = mujoco.MjModel.from_xml_string(random_trees.mjcf(spec))
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    m.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_ENERGY
    assert (m.nbody - 1, m.nv) == (len(spec.bodies), spec.nv)
    tree = dynamics.tree_from_mujoco(m)
    model = engine.compile_tree(tree)
    refs = [mujoco_reference(m, *state) for state in zip(Q, QD, QDD, TAU)]
    batched = dict(rnea=engine.rnea(model, Q, QD, QDD), M=engine.mass_matrix(model, Q), bias=engine.bias(model, Q, QD),
                   qacc=engine.forward_dynamics(model, Q, QD, TAU), energy=engine.energy(model, Q, QD))
    for k, (q, qd, qdd, tau, ref) in enumerate(zip(Q, QD, QDD, TAU, refs)):
        scales = {name: scale(ref[name]) for name in ("rnea", "M", "bias", "energy")}
        scales["qacc"] = scale(ref["qacc"]) * np.linalg.cond(ref["M"])
        ours = {
            "teaching": dict(rnea=dynamics.rnea(tree, q, qd, qdd), M=dynamics.mass_matrix(tree, q), bias=dynamics.bias(tree, q, qd),
                             qacc=dynamics.forward_dynamics(tree, q, qd, tau), energy=dynamics.energy(tree, q, qd)),
            "engine": dict(rnea=engine.rnea(model, q, qd, qdd), M=engine.mass_matrix(model, q), bias=engine.bias(model, q, qd),
                           qacc=engine.forward_dynamics(model, q, qd, tau), energy=engine.energy(model, q, qd)),
            "engine-batch": {name: value[k] for name, value in batched.items()},
        }
        for layer, values in ours.items():
            for name, value in values.items():
                check(layer, name, value, ref[name], scales[name])


@st.composite
def every_joint_case(draw):
    """(TreeSpec with hinges, slides, balls, free roots and up to three joints per body, seed of the states)."""
    return draw(random_trees.trees(joints=random_trees.ALL_JOINTS, max_joints=3)), draw(st.integers(0, 2**31 - 1))


@given(every_joint_case())
def test_every_joint_type_matches_mujoco(case):
    """The engine on trees the teaching layer cannot hold: ball and free joints, several joints per body.

    States from engine.random_states (quaternions uniform on SO(3)); besides the five quantities, Jacobians of
    every body's centre of mass against mj_jacBodyCom and integrate against mj_integratePos. Same bounds."""
    spec, seed = case
    m = mujoco.MjModel.from_xml_string(random_trees.mjcf(spec))
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    m.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_ENERGY
    model = engine.from_mujoco(m)
    assert (model.nq, model.nv, model.nbody) == (spec.nq, spec.nv, len(spec.bodies))
    Q, QD = engine.random_states(model, STATES, seed, qd_max=5.0)
    # two joints of one body can be drawn (and shrunk) onto the same axis: M is then singular, for MuJoCo too
    M0 = np.zeros((m.nv, m.nv))
    d0 = mujoco.MjData(m)
    d0.qpos[:] = Q[0]
    mujoco.mj_forward(m, d0)
    mujoco.mj_fullM(m, d0, M0)
    assume(np.linalg.cond(M0) < 1e8)
    rng = np.random.default_rng(seed)
    QDD, TAU = rng.uniform(-20, 20, (2, STATES, model.nv))
    batched = dict(rnea=engine.rnea(model, Q, QD, QDD), M=engine.mass_matrix(model, Q), bias=engine.bias(model, Q, QD),
                   qacc=engine.forward_dynamics(model, Q, QD, TAU), energy=engine.energy(model, Q, QD))
    d = mujoco.MjData(m)
    for k, (q, qd, qdd, tau) in enumerate(zip(Q, QD, QDD, TAU)):
        ref = mujoco_reference(m, q, qd, qdd, tau)
        scales = {name: scale(ref[name]) for name in ("rnea", "M", "bias", "energy")}
        scales["qacc"] = scale(ref["qacc"]) * np.linalg.cond(ref["M"])
        for name, value in batched.items():
            check("engine-every-joint", name, value[k], ref[name], scales[name])
        d.qpos[:] = q
        mujoco.mj_forward(m, d)
        for b in range(model.nbody):
            jp, jr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
            mujoco.mj_jacBodyCom(m, d, jp, jr, b + 1)
            com = models.inertial_frame(m, b + 1)[0]                # MuJoCo's xipos: the body origin if sameframe
            check("engine-every-joint", "jacobian", jacobians.body_jacobian(model, q, b, com),
                  np.r_[jp, jr], scale(np.r_[jp, jr]))
        q_next = q.copy()
        mujoco.mj_integratePos(m, q_next, qd, 0.01)
        check("engine-every-joint", "integrate", engine.integrate(model, q, qd, 0.01), q_next, scale(q_next))


@given(every_joint_case(), st.sampled_from(list(integrators.MUJOCO_INTEGRATOR)))
def test_every_integrator_follows_mj_step_on_trees_with_free_joints(case, integrator):
    """200 steps of 1 ms of each integrator against mj_step (constraints off) on random trees with free roots, balls
    and several joints per body: within 1e-9 in q and qd (relative to 1 + their size). implicitfast included, whose
    standalone free bodies MuJoCo 4 solves with their gyroscopic term (integrators.free_body_solve). Trees whose run
    amplifies a change of 1e-15 in qd by more than 1e4 in MuJoCo itself (stiff or chaotic draws, where any two
    implementations part within rounding), or whose joints line up on the way (M's condition number above 1e6), are set
    aside."""
    spec, seed = case
    m = mujoco.MjModel.from_xml_string(random_trees.mjcf(spec))
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    m.opt.timestep, m.opt.integrator = 0.001, integrators.MUJOCO_INTEGRATOR[integrator]
    model = engine.from_mujoco(m)
    q0, qd0 = engine.random_states(model, 1, seed, qd_max=2.0)
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = q0[0], qd0[0]
    M0 = np.zeros((m.nv, m.nv))
    mujoco.mj_forward(m, d)
    mujoco.mj_fullM(m, d, M0)
    assume(np.linalg.cond(M0) < 1e6)
    nudged = mujoco.MjData(m)
    nudged.qpos[:], nudged.qvel[:] = q0[0], qd0[0] * (1 + 1e-15)
    worst_cond = 0.0
    for k in range(200):
        mujoco.mj_step(m, d)
        mujoco.mj_step(m, nudged)
        if k % 10 == 0:                                 # joints of one body can line up on the way: M singular there
            mujoco.mj_fullM(m, d, M0)
            worst_cond = max(worst_cond, np.linalg.cond(M0))
    assume(worst_cond < 1e6)
    spread = np.abs(nudged.qpos - d.qpos).max() + np.abs(nudged.qvel - d.qvel).max()
    assume(np.isfinite(spread) and spread < 1e-11 * (1 + np.abs(d.qvel).max()))
    run = integrators.simulate(model, q0[0], qd0[0], m.opt.timestep, 200, integrator, energy=False)
    assert np.abs(run.q[-1] - d.qpos).max() <= 1e-9 * (1 + np.abs(d.qpos).max())
    assert np.abs(run.qd[-1] - d.qvel).max() <= 1e-9 * (1 + np.abs(d.qvel).max())
