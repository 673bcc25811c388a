"""physai's constraint model against MuJoCo 4, computed in the test: the rows (efc_J, efc_pos, efc_aref, efc_R, efc_D,
...), the invweight constants, inverse dynamics in closed form (mj_inverse, with invdiscrete) and forward dynamics by
Newton's method (mj_forward's qacc and efc_force).

Scenes: random trees on a plane (tests/helpers.constraint_scene_xml: a free root, hinges, slides and balls with limits
and margins, friction loss, spheres, capsules and boxes, a connect, a weld and a joint equality to a free body) under
pyramidal and elliptic cones with condim 1, 3, 4 and 6; contacts from MuJoCo's collision (physai.collision.from_mujoco);
the G1 standing in its scene (keyframe, then 200 mj_step states), the SO-101 (elliptic cones, friction loss) and the
Panda (its fingers' joint equality).

Bounds (|physai - MuJoCo| <= bound * max(1, max |MuJoCo|) per quantity): rows and invweights 1e-12; inverse
dynamics 1e-12 of the scale of its terms (tau = M qacc + c - qfrc_constraint: the largest of |tau| and
|qfrc_constraint|, which stiff contacts make large while tau stays small); forward dynamics with both solvers at
tolerance 1e-15: qacc 1e-7 and efc_force 1e-6 (MuJoCo against itself from another warm start differs by up to 1.2e-8
in qacc on elliptic cones); at MuJoCo's default tolerance physai's qacc is no further from the exact solution than 10
times MuJoCo's own distance (plus 1e-9 of the scale).
"""

import copy
import warnings

import mujoco
import numpy as np
import pytest

from physai import collision, constraints, dynamics, engine, models
from physai.engine import constraint, setconst, smooth
from physai.engine.data import Data
from physai.exceptions import (ConvergenceWarning, InvalidArgumentError, InvalidModelError, InvalidStateError, ShapeError,
                               UnsupportedModelError)

from helpers import DATA, assert_close, constraint_scene as scene, run
from scenes import random_scene

CASES = [(seed, cone, condim) for seed in range(3)
         for cone, condim in [("pyramidal", 1), ("pyramidal", 3), ("elliptic", 3), ("elliptic", 4), ("pyramidal", 4),
                              ("elliptic", 6), ("pyramidal", 6)]]
ROWS = {"type": "efc_type", "id": "efc_id", "pos": "efc_pos", "margin": "efc_margin", "diagA": "efc_diagA", "R": "efc_R",
        "D": "efc_D", "vel": "efc_vel", "aref": "efc_aref"}


def robot_scene(name: str, seed: int = 1):
    """(m, d) of a Menagerie robot in its scene at its first keyframe (else qpos0), random velocities, mj_forward."""
    m = models.load(name, "scene")
    d = mujoco.MjData(m)
    if m.nkey:
        mujoco.mj_resetDataKeyframe(m, d, 0)
    d.qvel[:] = 0.3 * np.random.default_rng(seed).normal(size=m.nv)
    mujoco.mj_forward(m, d)
    return m, d


def physai_rows(m, d):
    return constraints.rows(engine.from_mujoco(m), d.qpos, d.qvel, collision.from_mujoco(m, d), d.eq_active.astype(bool))


def assert_rows_equal(m, d, what: str) -> None:
    r = physai_rows(m, d)
    assert r.nefc == d.nefc and (r.ne, r.nf, r.nl) == (d.ne, d.nf, d.nl), f"{what}: rows {r.nefc} vs {d.nefc}"
    for ours, theirs in ROWS.items():
        assert_close(getattr(r, ours), getattr(d, theirs), 1e-12, what=f"{what} {ours}")
    assert_close(r.J, d.efc_J.reshape(d.nefc, m.nv), 1e-12, what=f"{what} J")


@pytest.mark.parametrize("seed, cone, condim", CASES)
def test_rows_equal_mujocos(seed, cone, condim):
    m, d = scene(seed, cone, condim)
    assert d.ncon and d.ne and d.nf and d.nl                          # every kind of row is there
    assert_rows_equal(m, d, f"scene {seed} {cone} condim {condim}")


@pytest.mark.parametrize("name", ["unitree_g1", "robotstudio_so101", "franka_emika_panda"])
def test_robot_rows_equal_mujocos(name):
    m, d = robot_scene(name)
    assert_rows_equal(m, d, name)


PILE = "".join(f'<body pos="{0.3 * (k % 4)} {0.3 * (k // 4)} .2"><freejoint/><geom size=".1"/></body>' for k in range(12))
INVWEIGHT_SOURCES = {
    "scene": lambda: scene(0, "pyramidal", 3)[0],
    "mixed_joints": lambda: mujoco.MjModel.from_xml_path(str(DATA / "mixed_joints.xml")),
    "pile": lambda: mujoco.MjModel.from_xml_string(f'<mujoco><worldbody><geom type="plane" size="2 2 .1"/>{PILE}'
                                                   '</worldbody></mujoco>'),
}


@pytest.mark.parametrize("source", ["unitree_g1", "unitree_h1", "robotstudio_so101", "franka_emika_panda", "kuka_iiwa_14",
                                    *INVWEIGHT_SOURCES])
def test_invweight0_equals_mujocos(source):
    """body_invweight0 and dof_invweight0, made at load by the articulated-body recursion (setconst.inverse_inertias),
    are MuJoCo's (its M factor's solves) within 2e-13 relative to the largest: 1.05e-13 seen on the KUKA iiwa, where the
    dense inverse of M that made them before gives the same doubles; 1.0e-14 on the G1."""
    m = INVWEIGHT_SOURCES[source]() if source in INVWEIGHT_SOURCES else models.load(source)
    body, dof = constraint.invweight0(engine.from_mujoco(m))
    assert_close(body, m.body_invweight0[1:], 2e-13, floor=0.0, what="body_invweight0")
    assert_close(dof, m.dof_invweight0, 2e-13, floor=0.0, what="dof_invweight0")


def test_inverse_inertias_are_those_of_the_inverse_mass_matrix():
    """setconst.inverse_inertias at a random state of hinges, slides, balls and a free joint: diag(M^-1) is the
    diagonal of the dense inverse of M, and each link's Omega its 6 x 6 J M^-1 J^T (J: the link's spatial Jacobian
    about its tree's centre, the cdof of its chain), within 1e-12 relative to the largest entry."""
    model = engine.from_mujoco(mujoco.MjModel.from_xml_path(str(DATA / "mixed_joints.xml")))
    q = engine.random_states(model, 1, rng=3)[0][0]
    d = Data(model)
    smooth.position_stages(model, d, q[:, None])
    omega, minv_diag = setconst.inverse_inertias(model, d)
    Minv = np.linalg.inv(engine.mass_matrix(model, q))
    assert_close(minv_diag, np.diag(Minv), 1e-12, what="diag(M^-1)")
    for link in range(model.nlink):
        chain = np.flatnonzero(dof_chain_of_link(model, link))
        J = d.cdof[chain, :, 0].T                                           # (6, m)
        reference = J @ Minv[np.ix_(chain, chain)] @ J.T
        assert np.abs(omega[link] - reference).max() <= 1e-12 * np.abs(reference).max(), link


def dof_chain_of_link(model, link: int) -> np.ndarray:
    """(nv,) booleans: the dofs of link and of its ancestors."""
    out = np.zeros(model.nv, bool)
    while link >= 0:
        out[model.link_dofadr[link]:model.link_dofadr[link] + model.link_dofnum[link]] = True
        link = model.link_parentid[link]
    return out


def mujoco_inverse(m, d, qacc, discrete: str | None = None):
    """d2 after mj_inverse at d's state with qacc (invdiscrete with the named integrator)."""
    m2 = m if discrete is None else _with(m, discrete)
    d2 = mujoco.MjData(m2)
    d2.qpos[:], d2.qvel[:], d2.qacc[:], d2.ctrl[:], d2.eq_active[:] = d.qpos, d.qvel, qacc, d.ctrl, d.eq_active
    mujoco.mj_inverse(m2, d2)
    return m2, d2


def tau_scale(d2) -> float:
    """The scale of inverse dynamics' terms: max |tau| and max |qfrc_constraint|."""
    return max(np.abs(d2.qfrc_inverse + d2.qfrc_passive).max(), np.abs(d2.qfrc_constraint).max())


def _with(m, integrator: str):
    m2 = copy.copy(m)
    m2.opt.integrator = getattr(mujoco.mjtIntegrator, f"mjINT_{integrator.upper()}")
    m2.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_INVDISCRETE
    return m2


@pytest.mark.parametrize("seed, cone, condim", CASES)
def test_inverse_equals_mj_inverse(seed, cone, condim):
    m, d = scene(seed, cone, condim)
    _, d2 = mujoco_inverse(m, d, d.qacc)
    inv = constraints.inverse_dynamics(engine.from_mujoco(m), d.qpos, d.qvel, d.qacc, collision.from_mujoco(m, d))
    assert_close(inv.qfrc_constraint, d2.qfrc_constraint, 1e-12, what="qfrc_constraint")
    assert_close(inv.efc_force, d2.efc_force, 1e-12, what="efc_force")
    assert_close(inv.tau, d2.qfrc_inverse + d2.qfrc_passive, 1e-12, tau_scale(d2), what="tau")


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_a_weld_near_its_anchor_has_mujocos_error(backend):
    """tests/data/elliptic_weld.xml at its keyframe: the weld's error (2 mm) is the difference of its anchor's world
    position (0.17 m from the sphere's centre) and the sphere's, whose last digits K imp (2000) carries into aref; with
    MuJoCo's arithmetic for the anchor (mj_kinematics' xpos and xmat, then R a + p), qfrc_constraint equals
    mj_inverse's to 1e-13 of the scale of the terms (3e-13 from physai's own kinematics)."""
    m = mujoco.MjModel.from_xml_path(str(DATA / "elliptic_weld.xml"))
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    mujoco.mj_forward(m, d)
    _, d2 = mujoco_inverse(m, d, d.qacc)
    assert d2.ncon and d2.nf
    inv = run(backend, constraints.inverse_dynamics, engine.from_mujoco(m), d.qpos, d.qvel, d.qacc,
              collision.from_mujoco(m, d))
    assert_close(inv.qfrc_constraint, d2.qfrc_constraint, 1e-13, tau_scale(d2), what="qfrc_constraint")
    assert_close(inv.tau, d2.qfrc_inverse + d2.qfrc_passive, 1e-13, tau_scale(d2), what="tau")


@pytest.mark.parametrize("integrator", ["euler", "implicitfast", "implicit"])
def test_discrete_inverse_equals_invdiscrete(integrator):
    m, d = robot_scene("unitree_g1")
    m2, d2 = mujoco_inverse(m, d, d.qacc, integrator)
    inv = constraints.inverse_dynamics(engine.from_mujoco(m2), d.qpos, d.qvel, d.qacc, collision.from_mujoco(m, d), discrete=True,
                                       ctrl=d.ctrl)
    assert_close(inv.qfrc_constraint, d2.qfrc_constraint, 1e-12, what="qfrc_constraint")
    assert_close(inv.tau, d2.qfrc_inverse + d2.qfrc_passive, 1e-12, tau_scale(d2), what="tau")


def discrete_scene(seed: int, cone: str, condim: int):
    """(m, d) of constraint_scene under MuJoCo 4's discrete integrator at tolerance 1e-15, its hinges and slides given
    random springs (the scene's dampers kept), after mj_forward: contacts, limits, friction loss and equalities whose
    rows act at the step's end, in the metric M + h B + h^2 K."""
    m, start = scene(seed, cone, condim, tolerance=1e-15)
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_DISCRETE
    rng = np.random.default_rng(seed)
    hinge_slide = m.jnt_type >= int(mujoco.mjtJoint.mjJNT_SLIDE)
    m.jnt_stiffness[:] = np.where(hinge_slide, rng.uniform(1, 50, m.njnt), 0.0)
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = start.qpos, start.qvel
    mujoco.mj_forward(m, d)
    assert d.ncon and m.dof_damping.any() and m.jnt_stiffness.any()
    return m, d


@pytest.mark.parametrize("backend", ["numpy", "native"])
@pytest.mark.parametrize("seed, cone, condim", CASES[::4])
def test_discrete_forward_and_inverse_are_mujocos(seed, cone, condim, backend):
    """Under the discrete integrator mj_forward's qacc is the step map (qd' - qd) / h (MuJoCo 4's docs), not the
    continuous acceleration (hand-measured: 200 to 500 apart, of qacc up to 2500): forward_dynamics gives it, with its
    rows (R, aref) at the step's end, as constraints.rows gives them, qacc within 1e-7 and efc_force 1e-6 as the
    continuous ones; inverse_dynamics (MuJoCo implies invdiscrete) inverts it: tau within 1e-12 of
    mj_inverse's at mj_forward's qacc (scale of its terms), as the continuous one."""
    m, d = discrete_scene(seed, cone, condim)
    model, contacts, active = engine.from_mujoco(m), collision.from_mujoco(m, d), d.eq_active.astype(bool)
    res = run(backend, constraints.forward_dynamics, model, d.qpos, d.qvel, d.qfrc_passive + d.qfrc_actuator, contacts,
              eq_active=active)
    assert_close(res.rows.R, d.efc_R, 1e-12, what="R")
    assert_close(res.rows.aref, d.efc_aref, 1e-12, what="aref")
    alone = run(backend, constraints.rows, model, d.qpos, d.qvel, contacts, active)
    assert_close(alone.R, d.efc_R, 1e-12, what="rows' R")
    assert_close(alone.aref, d.efc_aref, 1e-12, what="rows' aref")
    assert_close(res.qacc, d.qacc, 1e-7, what="qacc")
    assert_close(res.efc_force, d.efc_force, 1e-6, what="efc_force")
    _, d2 = mujoco_inverse(m, d, d.qacc)
    inv = run(backend, constraints.inverse_dynamics, model, d.qpos, d.qvel, d.qacc, contacts, eq_active=active)
    assert_close(inv.efc_force, d2.efc_force, 1e-12, tau_scale(d2), what="inverse efc_force")
    assert_close(inv.tau, d2.qfrc_inverse + d2.qfrc_passive, 1e-12, tau_scale(d2), what="tau")
    two = run(backend, constraints.forward_dynamics, model, np.stack([d.qpos] * 2), np.stack([d.qvel] * 2),
              np.stack([d.qfrc_passive + d.qfrc_actuator] * 2), [contacts] * 2, eq_active=active)
    assert_close(two.qacc, np.stack([res.qacc] * 2), 1e-12, what="a batch's qacc")


def discrete_random_states(cone: str, solver: str, n: int):
    """(m, [d]) of tests' random_scene(0) (free bodies of primitive geoms on a tilted plane, a two-link hinge chain)
    under the discrete integrator with the given cone and solver (Newton and CG at tolerance 1e-15, 1000 iterations;
    PGS at the model's), its hinges given springs and dampers: n of mj_step's states along its run (every 40 steps from
    step 100: bodies resting and sliding on the plane), each after mj_forward."""
    m = mujoco.MjModel.from_xml_string(random_scene(0, supported_only=True))
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_DISCRETE
    m.opt.cone = getattr(mujoco.mjtCone, f"mjCONE_{cone.upper()}")
    m.opt.solver = getattr(mujoco.mjtSolver, f"mjSOL_{solver.upper()}")
    if solver != "pgs":
        m.opt.tolerance, m.opt.iterations, m.opt.ls_iterations = 1e-15, 1000, 100
    rng = np.random.default_rng(0)
    hinge = m.jnt_type == int(mujoco.mjtJoint.mjJNT_HINGE)
    m.jnt_stiffness[hinge] = rng.uniform(1, 50, hinge.sum())
    m.dof_damping[m.jnt_dofadr[hinge]] = rng.uniform(0.1, 2, hinge.sum())
    d, states = mujoco.MjData(m), []
    for k in range(100 + 40 * n):
        mujoco.mj_step(m, d)
        if k >= 100 and (k - 100) % 40 == 0:
            mujoco.mj_forward(m, d)
            states.append(copy.copy(d))
    return m, states


@pytest.mark.parametrize("solver", ["newton", "cg", "pgs"])
@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_compiled_discrete_forward_is_the_numpy_texts_and_mujocos(cone, solver, monkeypatch):
    """forward_dynamics of a discrete model on the compiled backend is its step's compiled solve (cpp/forward.h's
    discrete_acceleration; the NumPy text's forward.discrete_acceleration never called): on discrete_random_states
    warm-started from MuJoCo's qacc_warmstart, 8 states in one call (on threads) and one alone: qacc within the larger of
    10 times the NumPy text's own move when tau is scaled by 1 + 1e-15 and the NumPy text's distance from mj_forward
    (+ 1e-12 of its scale, a margin for CG's iterates, which part by rounding: not derived; a hand measurement saw
    5.5e-8 on one state, the NumPy text then 1.9e-6 from MuJoCo), efc_force and qfrc_constraint within that bound
    relative to their scale; and within 1e-7 of mj_forward's qacc (its scale), the bound of the continuous
    forward_dynamics against MuJoCo."""
    m, states = discrete_random_states(cone, solver, 8)
    model = engine.from_mujoco(m)
    Q, QD = np.stack([d.qpos for d in states]), np.stack([d.qvel for d in states])
    tau = np.stack([d.qfrc_passive + d.qfrc_actuator for d in states])
    contacts = [collision.from_mujoco(m, d) for d in states]
    warm = np.stack([d.qacc_warmstart for d in states])
    assert min(len(c) for c in contacts) > 0

    def numpy_solve(*args):
        raise AssertionError("the NumPy text's discrete solve ran on the compiled backend")

    with monkeypatch.context() as patch:
        patch.setattr(engine.forward, "discrete_acceleration", numpy_solve)
        res = run("native", constraints.forward_dynamics, model, Q, QD, tau, contacts, qacc_warmstart=warm)
        one = run("native", constraints.forward_dynamics, model, Q[3], QD[3], tau[3], contacts[3], qacc_warmstart=warm[3])
    ref = run("numpy", constraints.forward_dynamics, model, Q, QD, tau, contacts, qacc_warmstart=warm)
    moved = run("numpy", constraints.forward_dynamics, model, Q, QD, tau * (1 + 1e-15), contacts, qacc_warmstart=warm)
    mj = np.stack([d.qacc for d in states])
    scale = max(1.0, np.abs(ref.qacc).max())
    bound = max(10 * np.abs(moved.qacc - ref.qacc).max(), np.abs(ref.qacc - mj).max()) + 1e-12 * scale
    assert np.abs(res.qacc - ref.qacc).max() <= bound
    assert np.abs(one.qacc - ref.qacc[3]).max() <= bound
    for k in range(len(states)):
        force = max(1.0, np.abs(ref.efc_force[k]).max())
        assert np.abs(res.efc_force[k] - ref.efc_force[k]).max() <= bound / scale * force
    assert np.abs(res.qfrc_constraint - ref.qfrc_constraint).max() <= bound / scale * max(1.0, np.abs(ref.qfrc_constraint).max())
    for k in range(len(states)):
        assert np.abs(res.qacc[k] - mj[k]).max() <= 1e-7 * max(1.0, np.abs(mj[k]).max())
    assert_close(res.rows[3].R, ref.rows[3].R, 1e-15, what="the rows read")


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_compiled_discrete_inverse_and_rows_are_the_numpy_texts_and_mujocos(cone, monkeypatch):
    """inverse_dynamics and rows of a discrete model on the compiled backend are cpp/inverse.h's discrete_state (the
    NumPy text's _discrete_runs never called): on discrete_random_states (free bodies on a plane, those no row reaches
    inverted in their own blocks; hinges with springs and dampers), 8 states in one call (on threads), one alone and
    constraints.rows of one, at mj_forward's qacc: tau and efc_force within 1e-12 of mj_inverse's (the scale of its
    terms, tau_scale: the NumPy text's bound in test_discrete_forward_and_inverse_are_mujocos) and of the NumPy text's;
    the rows (J, R, D, aref) within 1e-12 of the NumPy text's (their scale), R and aref of mj_forward's; the state alone
    and its rows as in the batch (1e-15 of their scale: the same code)."""
    m, states = discrete_random_states(cone, "newton", 8)
    model = engine.from_mujoco(m)
    Q, QD, A = (np.stack([getattr(d, name) for d in states]) for name in ("qpos", "qvel", "qacc"))
    contacts = [collision.from_mujoco(m, d) for d in states]
    assert min(len(c) for c in contacts) > 0

    def numpy_text(*args):
        raise AssertionError("the NumPy text's discrete runs ran on the compiled backend")

    with monkeypatch.context() as patch:
        patch.setattr(constraints, "_discrete_runs", numpy_text)
        res = run("native", constraints.inverse_dynamics, model, Q, QD, A, contacts)
        one = run("native", constraints.inverse_dynamics, model, Q[3], QD[3], A[3], contacts[3])
        rows, one_rows = res.rows, one.rows
        alone = run("native", constraints.rows, model, Q[3], QD[3], contacts[3])
    ref = run("numpy", constraints.inverse_dynamics, model, Q, QD, A, contacts)
    for k, d in enumerate(states):
        _, d2 = mujoco_inverse(m, d, d.qacc)
        scale = tau_scale(d2)
        assert_close(res.tau[k], d2.qfrc_inverse + d2.qfrc_passive, 1e-12, scale, what=f"state {k}'s tau")
        assert_close(res.efc_force[k], d2.efc_force, 1e-12, scale, what=f"state {k}'s efc_force")
        assert_close(res.tau[k], ref.tau[k], 1e-12, scale, what=f"state {k}'s tau, the NumPy text's")
        for name in ("J", "R", "D", "aref"):
            assert_close(getattr(rows[k], name), getattr(ref.rows[k], name), 1e-12, what=f"state {k}'s {name}")
        assert_close(rows[k].R, d.efc_R, 1e-12, what=f"state {k}'s R")
        assert_close(rows[k].aref, d.efc_aref, 1e-12, what=f"state {k}'s aref")
    assert_close(one.tau, res.tau[3], 1e-15, what="the state alone")
    for name in ("J", "R", "D", "aref"):
        assert_close(getattr(one_rows, name), getattr(rows[3], name), 1e-15, what=f"its {name}")
        assert_close(getattr(alone, name), getattr(rows[3], name), 1e-15, what=f"rows' {name}")


def test_compiled_discrete_rows_read_later_are_the_calls():
    """The rows of a compiled discrete forward_dynamics call are made when first read (the compiled rows kernel at the
    step's end) from the call's inputs as they were: the list of contact sets and the
    arrays copied (before, a deep copy of every contact set on each call, read or not): discrete_scene(0) as 2 states,
    the caller's q, qd, tau, eq_active and list of contact sets changed in place after the call: the rows then read
    are those of the same call made again on unchanged inputs (1e-15 of their scale: the same code) and mj_forward's
    (R and aref within 1e-12 of theirs)."""
    m, d = discrete_scene(0, "pyramidal", 3)
    model, contacts = engine.from_mujoco(m), collision.from_mujoco(m, d)
    two = lambda x: np.stack([x, x])                                                    # noqa: E731
    tau = d.qfrc_passive + d.qfrc_actuator
    Q, QD, TAU, active, sets = two(d.qpos), two(d.qvel), two(tau), d.eq_active.astype(bool), [contacts, contacts]
    res = run("native", constraints.forward_dynamics, model, Q, QD, TAU, sets, eq_active=active)
    Q += .1
    QD *= 2
    TAU[:] = 0
    active[:] = ~active
    sets[1] = collision.ContactSet.empty(m.nbody)
    again = run("native", constraints.forward_dynamics, model, two(d.qpos), two(d.qvel), two(tau), [contacts] * 2,
                eq_active=d.eq_active.astype(bool))
    assert m.neq and len(contacts)
    for k in range(2):
        for name in ("J", "R", "aref", "D", "pos"):
            assert_close(getattr(res.rows[k], name), getattr(again.rows[k], name), 1e-15, what=f"state {k}'s {name}")
        assert_close(res.rows[k].R, d.efc_R, 1e-12, what="R")
        assert_close(res.rows[k].aref, d.efc_aref, 1e-12, what="aref")


def test_ctrl_and_act_are_for_the_discrete_metric_only():
    """forward_dynamics' and rows' ctrl and act (and inverse_dynamics' act) set the discrete integrator's metric: with another
    integrator they would change nothing, so they are refused by name, the message naming those given and the model's
    integrator."""
    m, d = scene(0, "pyramidal", 3)
    model = engine.from_mujoco(m)
    with pytest.raises(InvalidArgumentError, match="^ctrl sets the discrete integrator's metric; this model's integrator is 'euler'"):
        constraints.forward_dynamics(model, d.qpos, d.qvel, d.qfrc_passive, ctrl=np.zeros(0))
    with pytest.raises(InvalidArgumentError, match="^act sets the discrete integrator's metric; this model's integrator is 'euler'"):
        constraints.inverse_dynamics(model, d.qpos, d.qvel, d.qacc, act=np.zeros(0))
    with pytest.raises(InvalidArgumentError, match="^ctrl sets the discrete integrator's metric"):
        constraints.rows(model, d.qpos, d.qvel, ctrl=np.zeros(0))
    with pytest.raises(InvalidArgumentError, match="^ctrl and act set the discrete integrator's metric"):
        constraints.rows(model, d.qpos, d.qvel, ctrl=np.zeros(0), act=np.zeros(0))


def forward_both(m, d, tolerance: float | None):
    """(physai's ForwardResult, MuJoCo's d) at d's state, both with the given tolerance (None: the model's)."""
    if tolerance is not None:
        m.opt.tolerance, m.opt.iterations, m.opt.ls_iterations = tolerance, 1000, 100
    mujoco.mj_forward(m, d)
    tau = d.qfrc_passive + d.qfrc_actuator + d.qfrc_applied
    res = constraints.forward_dynamics(engine.from_mujoco(m), d.qpos, d.qvel, tau, collision.from_mujoco(m, d),
                                       eq_active=d.eq_active.astype(bool))
    return res, d


@pytest.mark.parametrize("seed, cone, condim", CASES)
def test_forward_equals_mujocos_at_tight_tolerance(seed, cone, condim):
    res, d = forward_both(*scene(seed, cone, condim), 1e-15)
    assert_close(res.qacc, d.qacc, 1e-7, what="qacc")
    assert_close(res.efc_force, d.efc_force, 1e-6, what="efc_force")
    assert_close(res.qfrc_constraint, d.qfrc_constraint, 1e-6, what="qfrc_constraint")


@pytest.mark.parametrize("seed, cone, condim", CASES[::3])
def test_forward_at_defaults_is_as_close_as_mujocos(seed, cone, condim):
    m, d = scene(seed, cone, condim)
    ours, theirs = forward_both(m, d, None)[0].qacc, d.qacc.copy()
    exact = forward_both(m, d, 1e-15)[1].qacc
    scale = max(1.0, np.abs(exact).max())
    assert np.abs(ours - exact).max() <= 10 * np.abs(theirs - exact).max() + 1e-9 * scale


def test_g1_along_its_steps():
    """The G1 standing under position control from its keyframe: every 10th of 200 mj_step states, rows and inverse
    dynamics at MuJoCo's qacc, forward dynamics at tight tolerance."""
    m, d = robot_scene("unitree_g1")
    m.opt.tolerance, m.opt.iterations, m.opt.ls_iterations = 1e-15, 1000, 100
    rng = np.random.default_rng(3)
    model = engine.from_mujoco(m)
    for k in range(200):
        d.ctrl[:] = d.qpos[7:7 + m.nu] + 0.05 * rng.normal(size=m.nu) if m.nu else 0.0
        mujoco.mj_step(m, d)
        if k % 10:
            continue
        mujoco.mj_forward(m, d)
        assert_rows_equal(m, d, f"step {k}")
        contacts = collision.from_mujoco(m, d)
        _, d2 = mujoco_inverse(m, d, d.qacc)
        inv = constraints.inverse_dynamics(model, d.qpos, d.qvel, d.qacc, contacts)
        assert_close(inv.tau, d2.qfrc_inverse + d2.qfrc_passive, 1e-12, tau_scale(d2), what=f"tau, step {k}")
        res = constraints.forward_dynamics(model, d.qpos, d.qvel, d.qfrc_passive + d.qfrc_actuator, contacts)
        assert_close(res.qacc, d.qacc, 1e-7, what=f"qacc, step {k}")


@pytest.mark.parametrize("name", ["robotstudio_so101", "franka_emika_panda"])
def test_robot_forward_and_inverse(name):
    m, d = robot_scene(name)
    d.qpos[:m.nq] = np.clip(d.qpos + 0.5, *m.jnt_range[:m.nq].T) if name == "robotstudio_so101" else d.qpos
    d.qpos[-2:] = [0.03, 0.01] if name == "franka_emika_panda" else d.qpos[-2:]   # the fingers off their equality
    res, d = forward_both(m, d, 1e-15)
    assert res.rows.ne == d.ne and d.nefc
    assert_close(res.qacc, d.qacc, 1e-7, what="qacc")
    _, d2 = mujoco_inverse(m, d, d.qacc)
    inv = constraints.inverse_dynamics(engine.from_mujoco(m), d.qpos, d.qvel, d.qacc, collision.from_mujoco(m, d))
    assert_close(inv.tau, d2.qfrc_inverse + d2.qfrc_passive, 1e-12, tau_scale(d2), what="tau")


def test_a_batch_of_states_with_their_own_contacts():
    m, d0 = scene(0, "pyramidal", 3)
    d1 = mujoco.MjData(m)
    d1.qpos[:], d1.qvel[:] = d0.qpos, -d0.qvel
    d1.qpos[2] = 0.1
    mujoco.mj_forward(m, d1)
    states = [(m, d0), (m, d1)]
    model = engine.from_mujoco(m)
    sets = [collision.from_mujoco(*s) for s in states]
    assert len(sets[0]) != len(sets[1])
    q, qd = np.array([d.qpos for _, d in states]), np.array([d.qvel for _, d in states])
    inv = constraints.inverse_dynamics(model, q, qd, np.array([d.qacc for _, d in states]), sets)
    for k, (_, d) in enumerate(states):
        one = constraints.inverse_dynamics(model, d.qpos, d.qvel, d.qacc, sets[k])
        assert_close(inv.tau[k], one.tau, 1e-14, what=f"state {k}")


# ---- bad input ----

def test_contacts_of_another_model_are_refused():
    m, d = scene(0, "pyramidal", 3)
    g1 = engine.from_mujoco("unitree_g1")
    with pytest.raises(InvalidModelError, match="contact set was made for a model with .* bodies"):
        constraints.rows(g1, g1.qpos0, np.zeros(g1.nv), collision.from_mujoco(m, d))


def test_non_finite_contact_data_is_refused():
    m, d = scene(0, "pyramidal", 3)
    c = collision.from_mujoco(m, d)
    with pytest.raises(InvalidStateError, match=r"contacts.dist\[0\] is nan"):
        collision.ContactSet(c.nbody, c.pos, c.frame, np.r_[np.nan, c.dist[1:]], c.includemargin, c.friction, c.solref,
                             c.solreffriction, c.solimp, c.dim, c.body1, c.body2)
    with pytest.raises(InvalidModelError, match="dim 2"):
        collision.ContactSet(c.nbody, c.pos, c.frame, c.dist, c.includemargin, c.friction, c.solref, c.solreffriction,
                             c.solimp, np.full(len(c), 2), c.body1, c.body2)


def test_a_list_of_contacts_needs_one_per_state():
    m, d = scene(0, "pyramidal", 3)
    c = collision.from_mujoco(m, d)
    with pytest.raises(ShapeError, match="one per state"):
        constraints.inverse_dynamics(engine.from_mujoco(m), d.qpos, d.qvel, d.qacc, [c, c])


def test_too_few_iterations_warn_with_the_improvement():
    m, d = scene(0, "elliptic", 6)
    mujoco.mj_forward(m, d)
    with pytest.warns(ConvergenceWarning, match="stopped after 1 iterations .* last improvement"):
        res = constraints.forward_dynamics(engine.from_mujoco(m), d.qpos, d.qvel, d.qfrc_passive, collision.from_mujoco(m, d),
                                           iterations=1, tolerance=1e-15)
    assert res.iterations == 1


@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_noslip_at_its_limit_warns_and_counts_iterations_as_mujoco(backend):
    """A noslip sweep that stops at opt.noslip_iterations (1, tolerance 0: its first sweep's improvement is positive)
    warns with its last improvement, and the iterations count the solver's and noslip's together as MuJoCo's
    solver_niter does (one island: islands off), on both engines."""
    m, d = scene(0, "elliptic", 6)
    m.opt.noslip_iterations, m.opt.noslip_tolerance = 1, 0.0
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_ISLAND
    warm = d.qacc_warmstart.copy()                      # the start mj_forward's solver reads
    mujoco.mj_forward(m, d)
    assert d.nefc > 0
    with pytest.warns(ConvergenceWarning, match=r"noslip sweeps \(at most 1\) stopped after \d+ iterations .* last "
                                                r"improvement"):
        res = run(backend, constraints.forward_dynamics, engine.from_mujoco(m), d.qpos, d.qvel, d.qfrc_passive,
                  collision.from_mujoco(m, d), qacc_warmstart=warm)
    assert res.iterations == d.solver_niter[0]


LIMITS = [(iterations, ls_iterations) for iterations in (1, 2, 3) for ls_iterations in (1, 2, 3)]


@pytest.mark.parametrize("backend", ["numpy", "native"])
@pytest.mark.parametrize("iterations, ls_iterations", LIMITS)
def test_solver_limits_stop_where_mj_forward_stops(iterations, ls_iterations, backend):
    """The G1 at its keyframe with m.opt.iterations and ls_iterations of 1 to 3: MuJoCo's Newton stops unconverged,
    its line search bounded by ls_iterations evaluations of the cost; physai stops at the same qacc (1e-11 of its
    scale: rounding, carried through up to 3 Newton steps) after as many iterations, and warns only when it stops before
    the tolerance (MuJoCo sets no warning: it leaves solver_niter = iterations)."""
    m = models.load("unitree_g1", "scene")
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    m.opt.iterations, m.opt.ls_iterations = iterations, ls_iterations
    mujoco.mj_forward(m, d)
    tau = d.qfrc_passive + d.qfrc_actuator + d.qfrc_applied
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        res = run(backend, constraints.forward_dynamics, engine.from_mujoco(m), d.qpos, d.qvel, tau,
                  collision.from_mujoco(m, d), qacc_warmstart=d.qacc_warmstart)
    assert_close(res.qacc, d.qacc, 1e-11, what="qacc")
    assert_close(res.efc_force, d.efc_force, 1e-11, what="efc_force")
    assert res.iterations == d.solver_niter[0]
    # a warning where MuJoCo used every iteration and its last one met neither the improvement nor the gradient test
    # (the third, the Newton decrement, MuJoCo does not record)
    last = d.solver[d.solver_niter[0] - 1]
    met = 0 < last.improvement < m.opt.tolerance or last.gradient < m.opt.tolerance
    if any(w.category is ConvergenceWarning for w in caught):
        assert d.solver_niter[0] == iterations and not met


def test_what_physai_does_not_model_is_refused_by_name():
    xml = ('<mujoco><worldbody><body><joint name="a" limited="true" range="-1 1"/>'
           '<geom size=".1"/><site name="s1"/></body><body pos="1 0 0"><freejoint/><geom size=".1"/><site name="s2"/></body>'
           '</worldbody><equality><weld site1="s1" site2="s2"/></equality></mujoco>')
    model = engine.from_mujoco(mujoco.MjModel.from_xml_string(xml))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        engine.rnea(model, model.qpos0, np.zeros(model.nv), np.zeros(model.nv))   # the smooth dynamics still run
    with pytest.raises(UnsupportedModelError, match="welds two sites"):
        constraints.rows(model, model.qpos0, np.zeros(model.nv))


URDF = """<robot name="r"><link name="base"/>
<joint name="j1" type="revolute"><parent link="base"/><child link="a"/><axis xyz="0 1 0"/>
  <limit lower="-1" upper="0.5" effort="1" velocity="1"/><dynamics damping="0.1" friction="0.3"/></joint>
<link name="a"><inertial><mass value="2"/><origin xyz="0.5 0 0"/><inertia ixx="0.01" iyy="0.17" izz="0.17" ixy="0" ixz="0" iyz="0"/>
  </inertial></link>
<joint name="j2" type="prismatic"><parent link="a"/><child link="b"/><origin xyz="1 0 0"/><axis xyz="1 0 0"/>
  <limit lower="-0.2" upper="0.2" effort="1" velocity="1"/><dynamics friction="0.5"/></joint>
<link name="b"><inertial><mass value="1"/><origin xyz="0.5 0 0"/><inertia ixx="0.01" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/>
  </inertial></link>
</robot>"""


def test_urdf_limits_and_friction_as_mujoco_reads_them(tmp_path):
    path = tmp_path / "r.urdf"
    path.write_text(URDF)
    m = mujoco.MjModel.from_xml_path(str(path))
    model = engine.from_urdf(URDF)
    assert (model.jnt_limited == m.jnt_limited.astype(bool)).all()
    assert_close(model.jnt_range, m.jnt_range, 0.0, what="range")
    assert_close(model.dof_frictionloss, m.dof_frictionloss, 0.0, what="frictionloss")
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = [0.52, -0.25], [0.3, -0.1]                # both joints beyond their limits
    mujoco.mj_forward(m, d)
    assert d.nl == 2
    assert_rows_equal(m, d, "URDF")


def test_a_tree_takes_its_constraints_by_field():
    tree = dynamics.tree_from_mujoco("double_pendulum")
    model = engine.compile_tree(tree, range=[[-0.5, 0.5], [0.0, 0.0]], frictionloss=[0.2, 0.1])
    assert model.jnt_limited.tolist() == [True, False] and model.dof_frictionloss.tolist() == [0.2, 0.1]
    r = constraints.rows(model, [0.6, 0.0], [0.0, 0.0])
    assert r.nf == 2 and r.nl == 1 and r.pos[2] == pytest.approx(0.5 - 0.6)   # dist = range_high - q past the upper limit
