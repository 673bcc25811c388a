"""physai.engine against MuJoCo and the teaching layer (physai.dynamics), batched and single, plus bad inputs.

Every comparison is on random states (seeded) of the bundled models, three Menagerie arms, the Unitree H1 and
G1 (a free joint at the pelvis) and tests/data/mixed_joints.xml (free, ball, three joints in one body, welded
bodies, tilted gravity). MuJoCo runs with constraints disabled, so rnea = qfrc_inverse + qfrc_passive,
bias = qfrc_bias, M = mj_fullM and forward dynamics = qacc for tau = qfrc_applied + qfrc_actuator + qfrc_passive.
Tolerances are 1e-12 relative to the size of the compared quantity (forward dynamics: times cond(M)).
"""

import mujoco
import numpy as np
import pytest

from physai import dynamics, engine, joints, models
from physai.engine import batching
from physai.exceptions import (InvalidModelError, InvalidStateError, PhysaiError, ShapeError, UnknownBodyError, UnknownFrameError,
                               UnknownJointError, UnsupportedModelError)
from helpers import Robot, assert_close
import mj

ROBOTS = ["double_pendulum", "hinge_slide", "robotstudio_so101", "franka_emika_panda", "kuka_iiwa_14", "unitree_h1", "unitree_g1",
          "mixed_joints"]
N = 6          # states per model and test (helpers.Robot: constraints disabled, engine.random_states)
ROBOT_STATES = {"n": N, "seed": 0}
RTOL = 1e-12


# ---- against MuJoCo ----

def test_sizes(robot):
    model, m = robot.model, robot.m
    assert (model.nq, model.nv, model.nu, model.nbody, model.njnt) == (m.nq, m.nv, m.nu, m.nbody - 1, m.njnt)
    assert list(model.jnt_qposadr) == list(m.jnt_qposadr) and list(model.jnt_dofadr) == list(m.jnt_dofadr)


def test_rnea(robot):
    tau = engine.rnea(robot.model, robot.q, robot.qd, robot.qdd)
    for k in range(N):
        d = robot.mujoco(robot.q[k], robot.qd[k], robot.qdd[k])
        assert_close(tau[k], d.qfrc_inverse + d.qfrc_passive, RTOL, what="rnea vs qfrc_inverse + qfrc_passive")


def test_bias_and_gravity(robot):
    c, g = engine.bias(robot.model, robot.q, robot.qd), engine.gravity(robot.model, robot.q)
    for k in range(N):
        assert_close(c[k], robot.mujoco(robot.q[k], robot.qd[k]).qfrc_bias, RTOL, what="bias vs qfrc_bias")
        assert_close(g[k], robot.mujoco(robot.q[k], 0 * robot.qd[k]).qfrc_bias, RTOL, what="gravity vs qfrc_bias at rest")


def test_mass_matrix(robot):
    M = engine.mass_matrix(robot.model, robot.q)
    for k in range(N):
        robot.mujoco(robot.q[k], robot.qd[k])
        M_mj = np.zeros((robot.m.nv, robot.m.nv))
        mujoco.mj_fullM(robot.m, robot.d, M_mj)
        assert_close(M[k], M_mj, RTOL, what="M vs mj_fullM")


def test_forward_dynamics_and_aba(robot):
    qdd, qdd_aba = (f(robot.model, robot.q, robot.qd, robot.tau) for f in (engine.forward_dynamics, engine.aba))
    for k in range(N):
        passive = robot.mujoco(robot.q[k], robot.qd[k]).qfrc_passive + robot.d.qfrc_actuator
        d = robot.mujoco(robot.q[k], robot.qd[k], qfrc_applied=robot.tau[k] - passive)
        scale = np.linalg.cond(engine.mass_matrix(robot.model, robot.q[k])) * max(1.0, np.abs(d.qacc).max()) * 1e-2
        assert_close(qdd[k], d.qacc, RTOL, scale, what="forward dynamics vs qacc")
        assert_close(qdd_aba[k], d.qacc, RTOL, scale, what="aba vs qacc")


def test_energy(robot):
    robot.m.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_ENERGY
    try:
        E, U = engine.energy(robot.model, robot.q, robot.qd), engine.potential_energy(robot.model, robot.q)
        for k in range(N):
            d = robot.mujoco(robot.q[k], robot.qd[k])
            assert_close(E[k], d.energy.sum(), RTOL, what="energy")
            assert_close(U[k], d.energy[0], RTOL, what="potential energy")
    finally:
        robot.m.opt.enableflags &= ~int(mujoco.mjtEnableBit.mjENBL_ENERGY)


def test_body_energies(robot):
    """Each body's kinetic energy 1/2 cvel . (cinert cvel) + its joints' armature, and potential -m g . xipos + its
    joints' springs, from MuJoCo's per-body quantities; their sums are the totals (identity)."""
    check_body_energies(robot)


def test_body_energies_with_springs_and_a_ball_at_the_root():
    check_body_energies(Robot("random_fixed", n=N))                       # hinge and slide springs, tilted gravity


def test_body_energies_when_no_body_moves():
    check_body_energies(Robot("welded", n=N))                             # nv = 0: no link, every body welded


def check_body_energies(robot):
    m = robot.m
    T, U = engine.body_kinetic_energy(robot.model, robot.q, robot.qd), engine.body_potential_energy(robot.model, robot.q)
    assert T.shape == U.shape == (N, m.nbody - 1)
    assert_close(T.sum(axis=1), engine.kinetic_energy(robot.model, robot.q, robot.qd), RTOL, what="sum of T_b")
    assert_close(U.sum(axis=1), engine.potential_energy(robot.model, robot.q), RTOL, what="sum of U_b")
    spring = np.flatnonzero((m.jnt_type == mujoco.mjtJoint.mjJNT_HINGE) | (m.jnt_type == mujoco.mjtJoint.mjJNT_SLIDE))
    for k in range(N):
        d = robot.mujoco(robot.q[k], robot.qd[k])
        U_mj = -m.body_mass * (d.xipos @ m.opt.gravity)
        T_mj = np.array([0.5 * v @ mj.cinert_matrix(i) @ v for i, v in zip(d.cinert, d.cvel)])
        np.add.at(T_mj, m.dof_bodyid, 0.5 * m.dof_armature * robot.qd[k] ** 2)
        a = m.jnt_qposadr[spring]
        np.add.at(U_mj, m.jnt_bodyid[spring], 0.5 * m.jnt_stiffness[spring] * (robot.q[k][a] - m.qpos_spring[a]) ** 2)
        assert_close(T[k], T_mj[1:], RTOL, max(1.0, T_mj.sum()), what="T_b vs cvel . cinert cvel")
        assert_close(U[k], U_mj[1:], RTOL, np.abs(U_mj).sum(), what="U_b vs -m g . xipos")
    assert_close(engine.body_kinetic_energy(robot.model, robot.q[0], robot.qd[0]), T[0], RTOL, what="one state")


def test_data_against_mujocos_stages(robot):
    """Data after rnea at MuJoCo's qacc: link frames vs xmat/xpos, and cvel, cacc, cfrc vs cvel, cacc, cfrc_int.

    MuJoCo takes spatial vectors about the subtree com S of the root, the engine about its centre C:
    a motion vector (w, v) moves as v_C = v_S + w x (C - S), a force (n, f) as n_C = n_S + (S - C) x f.
    """
    model = robot.model
    body_link = model.body_linkid
    for k in range(N):
        md = robot.mujoco(robot.q[k], robot.qd[k], qfrc_applied=robot.tau[k])
        mujoco.mj_rnePostConstraint(robot.m, md)                     # fills cacc and cfrc_int
        d = engine.Data(model)
        engine.rnea(model, robot.q[k], robot.qd[k], md.qacc, data=d)
        for b in range(model.nbody):
            link, mb = body_link[b], b + 1                             # MuJoCo's body 0 is the world
            if link < 0:
                continue                                               # welded to the world
            C, S = d.center[link, :, 0], md.subtree_com[robot.m.body_rootid[mb]]
            R = d.xmat[link, :, :, 0]
            assert_close(R @ model.body_rot[b], md.xmat[mb].reshape(3, 3), RTOL, what="xmat")
            assert_close(d.xpos[link, :, 0] + R @ model.body_pos[b], md.xpos[mb], RTOL, what="xpos")
            if b not in model.jnt_bodyid:                              # a welded body shares its link's velocity...
                continue                                               # ...and its subtree force belongs to the link
            for ours, theirs, what in ((d.cvel, md.cvel, "cvel"), (d.cacc, md.cacc, "cacc")):
                w, v = theirs[mb, :3], theirs[mb, 3:]
                assert_close(ours[link, :, 0], np.r_[w, v + np.cross(w, C - S)], RTOL, what=what)
            n, f = md.cfrc_int[mb, :3], md.cfrc_int[mb, 3:]
            # rounding accumulates over the whole tree: the scale is the largest force of any body
            assert_close(d.cfrc[link, :, 0], np.r_[n + np.cross(S - C, f), f], RTOL, np.abs(md.cfrc_int).max(), what="cfrc vs cfrc_int")


def test_integrate_and_difference(robot):
    """integrate is mj_integratePos, difference mj_differentiatePos, and they invert each other."""
    h = 0.013
    q1 = engine.integrate(robot.model, robot.q, robot.qd, h)
    v = engine.difference(robot.model, robot.q, q1, h)
    for k in range(N):
        expected = robot.q[k].copy()
        mujoco.mj_integratePos(robot.m, expected, robot.qd[k], h)
        assert_close(q1[k], expected, 1e-14, what="integrate vs mj_integratePos")
        v_mj = np.zeros(robot.m.nv)
        mujoco.mj_differentiatePos(robot.m, v_mj, h, robot.q[k], q1[k])
        assert_close(v[k], v_mj, 1e-11, what="difference vs mj_differentiatePos")
    assert_close(v, robot.qd, 1e-11, what="difference(q, integrate(q, v)) = v")


# ---- identities ----

def test_identities(robot):
    model, q, qd, qdd = robot.model, robot.q, robot.qd, robot.qdd
    tau = engine.rnea(model, q, qd, qdd)
    M, c = engine.mass_matrix(model, q), engine.bias(model, q, qd)
    assert_close(tau, np.einsum("nij,nj->ni", M, qdd) + c, RTOL, what="rnea = M qdd + c")
    assert_close(c, engine.rnea(model, q, qd, np.zeros_like(qdd)), RTOL, what="bias = rnea(q, qd, 0)")
    assert_close(engine.gravity(model, q), engine.rnea(model, q, 0 * qd, 0 * qdd), RTOL, what="gravity = rnea(q, 0, 0)")
    assert_close(engine.forward_dynamics(model, q, qd, tau), qdd, RTOL, np.linalg.cond(M).max() * 1e-2, what="FD inverts rnea")
    assert_close(engine.aba(model, q, qd, tau), qdd, RTOL, np.linalg.cond(M).max() * 1e-2, what="ABA inverts rnea")
    T = engine.kinetic_energy(model, q, qd)
    assert_close(T, 0.5 * np.einsum("ni,nij,nj->n", qd, M, qd), RTOL, what="T = 1/2 qd M qd")
    assert (np.linalg.eigvalsh(M) > 0).all()


FUNCTIONS = {   # name: the joint arrays it takes
    "rnea": "q qd qdd", "bias": "q qd", "gravity": "q", "mass_matrix": "q", "forward_dynamics": "q qd tau",
    "aba": "q qd tau", "energy": "q qd", "kinetic_energy": "q qd", "potential_energy": "q",
}


@pytest.mark.parametrize("name", FUNCTIONS)
def test_batched_equals_single(robot, name):
    """A state's result does not depend on the batch it is in beyond rounding: numpy may sum a batch of one in
    another order than a batch of many, and BLAS kernels differ across CPUs, so the bound is 1e-13 x scale
    (times cond(M) for the accelerations; seen up to 1e-16 x cond(M) x scale with OpenBLAS's Prescott kernel)."""
    f, args = getattr(engine, name), [getattr(robot, a) for a in FUNCTIONS[name].split()]
    batched = np.asarray(f(robot.model, *args))
    scale = np.abs(batched).max()
    if name in ("forward_dynamics", "aba"):                  # a solve with M amplifies rounding by cond(M)
        scale *= np.linalg.cond(engine.mass_matrix(robot.model, robot.q)).max()
    for i in range(N):
        assert_close(f(robot.model, *(a[i] for a in args)), batched[i], 1e-13, scale, what=name)
        assert_close(f(robot.model, *(a[i:i + 1] for a in args))[0], batched[i], 1e-13, scale, what=name)
    assert_close(f(robot.model, *(a[:3] for a in args)), batched[:3], 1e-13, scale, what=name)


def test_large_batches_run_in_chunks(robot, monkeypatch):
    q, qd = engine.random_states(robot.model, 11, 2)
    qdd = np.random.default_rng(3).uniform(-1, 1, (11, robot.m.nv))

    def everything():
        return [engine.rnea(robot.model, q, qd, qdd), engine.mass_matrix(robot.model, q), engine.energy(robot.model, q, qd),
                engine.forward_dynamics(robot.model, q, qd, qdd)]

    whole = everything()
    monkeypatch.setattr(batching, "CHUNK", 4)                             # 11 states -> chunks of 3, 4, 4
    for a, b in zip(whole, everything()):
        assert_close(b, a, 1e-13)


def test_single_state_is_shared_by_a_batch(robot):
    q0 = robot.q[0]
    tau = engine.rnea(robot.model, q0, robot.qd, robot.qdd)
    assert_close(tau[2], engine.rnea(robot.model, q0, robot.qd[2], robot.qdd[2]), 1e-13)
    assert np.isscalar(engine.energy(robot.model, q0, robot.qd[0]))


# ---- the teaching layer as an oracle ----

@pytest.mark.parametrize("name", ["double_pendulum", "hinge_slide", "robotstudio_so101", "franka_emika_panda"])
def test_teaching_layer_agrees(name):
    """physai.dynamics (the lesson's text, one joint per body) and the engine compiled from its Tree agree."""
    tree = dynamics.tree_from_mujoco(models.load(name))
    model = engine.compile_tree(tree)
    rng = np.random.default_rng(4)
    for q, qd, qdd in rng.uniform(-1.5, 1.5, (N, 3, tree.nv)):
        tau = dynamics.rnea(tree, q, qd, qdd)
        assert_close(engine.rnea(model, q, qd, qdd), tau, RTOL, what="rnea")
        assert_close(engine.mass_matrix(model, q), dynamics.mass_matrix(tree, q), RTOL, what="M")
        assert_close(engine.bias(model, q, qd), dynamics.bias(tree, q, qd), RTOL, what="bias")
        assert_close(engine.energy(model, q, qd), dynamics.energy(tree, q, qd), RTOL, what="energy")
        M = dynamics.mass_matrix(tree, q)
        assert_close(engine.forward_dynamics(model, q, qd, tau), qdd, RTOL, np.linalg.cond(M) * 1e-2, what="FD")


def test_the_lessons_tree_keeps_mujocos_body_names():
    """tree_from_mujoco names its bodies as MuJoCo does ("" when unnamed), so that the Model compiled from the Tree
    answers name look-ups as from_mujoco's: an unnamed body is no "body1" (UnknownBodyError from both), a named one is
    found by its name; an unnamed body with two joints is refused by its index."""
    chain = ('<mujoco><worldbody><body><joint axis="0 1 0"/><geom size=".1"/><body name="tip" pos="0 0 -.5">'
             '<joint type="slide"/><geom size=".1"/><body pos="0 0 -.5"><joint/>{}<geom size=".1"/></body></body></body>'
             '</worldbody></mujoco>')
    m = mujoco.MjModel.from_xml_string(chain.format(""))
    tree = dynamics.tree_from_mujoco(m)
    assert [b.name for b in tree.bodies] == ["", "tip", ""]
    compiled, loaded = engine.compile_tree(tree), engine.from_mujoco(m)
    assert compiled.body_name == loaded.body_name
    assert compiled.body_id("tip") == loaded.body_id("tip") == 1
    for model in (compiled, loaded):
        with pytest.raises(UnknownBodyError):
            model.body_id("body1")
    with pytest.raises(UnsupportedModelError, match="^body 3 has 2 joints"):
        dynamics.tree_from_mujoco(mujoco.MjModel.from_xml_string(chain.format('<joint type="slide"/>')))


NAMED_AND_UNNAMED_JOINTS = ('<mujoco><worldbody><body><joint axis="0 1 0"/><geom size=".1"/><body name="tip" pos="0 0 -.5">'
                            '<joint name="reach" type="slide"/><geom size=".1"/><body name="hand" pos="0 0 -.5"><joint/>'
                            '<geom size=".1"/></body></body></body></worldbody></mujoco>')


@pytest.mark.parametrize("source", ["franka_emika_panda", "named_and_unnamed_joints"])
def test_a_compiled_tree_keeps_mujocos_joint_names(source):
    """compile_tree names each joint as from_mujoco does (MuJoCo's joint name, "" when unnamed), not after its body:
    the Panda's joints ("joint1", ...) sit on bodies "link1", ...; the chain has an unnamed joint on an unnamed body, a
    named one ("reach") on body "tip" and an unnamed one on body "hand". Name look-ups answer alike."""
    m = mujoco.MjModel.from_xml_string(NAMED_AND_UNNAMED_JOINTS) if source == "named_and_unnamed_joints" else models.load(source)
    tree = dynamics.tree_from_mujoco(m)
    compiled, loaded = engine.compile_tree(tree), engine.from_mujoco(m)
    assert [b.joint_name for b in tree.bodies if b.joint] == [m.joint(j).name for j in range(m.njnt)]
    assert compiled.jnt_name == loaded.jnt_name == tuple(m.joint(j).name for j in range(m.njnt))
    named = next(name for name in loaded.jnt_name if name)
    assert compiled.joint(named) == loaded.joint(named)
    assert compiled.joint(named).qpos.start == m.jnt_qposadr[m.joint(named).id]


def test_a_tree_built_by_hand_names_its_joints_after_its_bodies():
    """A Body whose joint_name is left None (a Tree written by hand, as the lessons do) gives compile_tree's joint its
    body's name, so joint look-ups by those names and identification's link names keep working."""
    axis = np.array([0.0, -1.0, 0.0])
    tree = dynamics.Tree([
        dynamics.Body(-1, np.zeros(3), np.eye(3), "hinge", axis, None, 1.5, np.array([0.5, 0, 0]), np.eye(3), "link1"),
        dynamics.Body(0, np.array([0.5, 0, 0]), np.eye(3), "hinge", axis, None, 1.0, np.array([0.4, 0, 0]), np.eye(3),
                      "link2", joint_name="elbow"),
    ], np.zeros(2), np.array([0.0, 0.0, -9.81]))
    compiled = engine.compile_tree(tree)
    assert compiled.jnt_name == ("link1", "elbow")
    assert compiled.joint("link1").qpos.start == 0 and compiled.joint("elbow").qpos.start == 1


# ---- the compiled model ----

def test_loaders_fuse_welded_bodies():
    m = models.load("franka_emika_panda")
    tree, model = dynamics.tree_from_mujoco(m), engine.from_mujoco(m)
    assert (model.nbody, model.nlink, model.nv) == (12, 9, 9)
    assert all(p < i for i, p in enumerate(model.link_parentid))
    total = sum(b.mass for b in tree.bodies)
    assert model.link_mass.sum() + model.static_mass == pytest.approx(total, rel=1e-14)
    assert model.static_mass == tree.bodies[0].mass                          # link0 is welded to the world
    names = list(model.body_name)
    assert model.body_linkid[names.index("hand")] == model.body_linkid[names.index("link7")]   # fused into link7
    with pytest.raises(ValueError):
        model.link_mass[0] = 1.0                                              # the Model is read-only


def test_free_joint_is_three_slides_and_a_ball():
    """joints.links: a free joint is slides along the world axes then a ball; q and v keep MuJoCo's layout."""
    model = engine.from_mujoco("unitree_h1")
    assert model.jnt_type[0] == joints.FREE and (model.nq, model.nv) == (26, 25)
    assert list(model.link_dofnum[:4]) == [1, 1, 1, 3] and list(model.link_parentid[:4]) == [-1, 0, 1, 2]
    assert list(model.coords.quat_q) == [3] and list(model.coords.quat_v) == [3]
    assert_close(model.qpos0[:7], [0, 0, 0, 1, 0, 0, 0], RTOL)


#: a ball joint first, then a hinge, a slide and a second ball, all named: every joint after the first has
#: jnt_qposadr and jnt_dofadr different from its index
BALL_FIRST_XML = ('<mujoco><worldbody><body name="upper"><joint name="shoulder" type="ball"/><geom size="0.1"/>'
                  '<body name="fore" pos="0 0 -0.5"><joint name="elbow" axis="0 1 0"/><geom size="0.1"/>'
                  '<body name="tool" pos="0 0 -0.5"><joint name="extend" type="slide"/><joint name="wrist" type="ball"/>'
                  '<geom size="0.05"/></body></body></body></worldbody></mujoco>')


@pytest.mark.parametrize("source", ["unitree_g1", "ball_first"])
def test_joint_addresses_are_mujocos(source):
    """Model.joint(name or id): qpos and dof slices from MuJoCo's jnt_qposadr and jnt_dofadr, with nq and nv of the type."""
    m = models.load(source) if source != "ball_first" else mujoco.MjModel.from_xml_string(BALL_FIRST_XML)
    model = engine.from_mujoco(m)
    sizes = {int(mujoco.mjtJoint.mjJNT_FREE): (7, 6, "free"), int(mujoco.mjtJoint.mjJNT_BALL): (4, 3, "ball"),
             int(mujoco.mjtJoint.mjJNT_SLIDE): (1, 1, "slide"), int(mujoco.mjtJoint.mjJNT_HINGE): (1, 1, "hinge")}
    for j in range(m.njnt):
        name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j)
        nq, nv, kind = sizes[int(m.jnt_type[j])]
        for key in (name, j, np.int64(j)):
            a = model.joint(key)
            assert (a.id, a.name, a.type, a.body) == (j, name, kind, m.jnt_bodyid[j] - 1)       # physai's bodies skip the world
            assert a.qpos == slice(m.jnt_qposadr[j], m.jnt_qposadr[j] + nq)
            assert a.dof == slice(m.jnt_dofadr[j], m.jnt_dofadr[j] + nv)
    assert m.jnt_dofadr[1] != 1 and m.jnt_qposadr[1] != 1                  # indexing by joint id would be wrong here


def test_an_unknown_joint_is_named_with_the_known_ones():
    model = engine.from_mujoco(mujoco.MjModel.from_xml_string(BALL_FIRST_XML))
    with pytest.raises(UnknownJointError, match=r"no joint 'elbw'.* Did you mean 'elbow'\?.*'shoulder', 'elbow', 'extend', 'wrist'"):
        model.joint("elbw")
    for bad in (4, -1, True, 1.0, None, ""):
        with pytest.raises(UnknownJointError, match=r"expected an index 0\.\.3 or a name"):
            model.joint(bad)


def panda_behind_loose_bodies() -> mujoco.MjModel:
    """The Menagerie Panda with two unnamed free bodies, each with an unnamed site, placed before it in the world."""
    path = models.model_path("franka_emika_panda")
    loose = '<body pos="{} 0 0.5"><freejoint/><geom size="0.1" mass="1"/><site/></body>'
    spec = mujoco.MjSpec.from_string(path.read_text().replace("<worldbody>", "<worldbody>" + loose.format(1) + loose.format(2), 1))
    spec.meshdir = str(path.parent / spec.meshdir)
    return spec.compile()


@pytest.mark.parametrize("source", ["panda_behind_loose_bodies", "unitree_h1"])
def test_unnamed_joints_bodies_and_sites_answer_to_no_name(source):
    """physai keeps MuJoCo's names ("" when unnamed): each of a model's names, "" and the names an unnamed object's
    index would spell ("joint0", "body1", "site1", ...) finds the joint, body or site MuJoCo's look-up finds (at its
    addresses), or raises where MuJoCo's raises (the Panda's "joint1" is its arm's, not the second free body's)."""
    m = panda_behind_loose_bodies() if source == "panda_behind_loose_bodies" else models.load(source)
    model = engine.from_mujoco(m)
    assert model.jnt_name == tuple(m.joint(j).name for j in range(m.njnt)) and model.joint(0).name == ""
    assert model.body_name == tuple(m.body(b).name for b in range(1, m.nbody))
    assert model.site_name == tuple(m.site(k).name for k in range(m.nsite))

    def joint(a):                                        # a JointAddress as MuJoCo's (id, qposadr, dofadr)
        return a.id, a.qpos.start, a.dof.start

    def frame(name):                                      # a site's body as MuJoCo's (the world is MuJoCo's 0)
        return int(model.frame(f"site:{name}")[0]) + 1
    cases = [("joint", m.njnt, lambda j: (j, m.jnt_qposadr[j], m.jnt_dofadr[j]), lambda n: joint(model.joint(n)),
              UnknownJointError), ("body", m.nbody, lambda b: b, lambda n: model.body_id(n) + 1, UnknownBodyError),
             ("site", m.nsite, lambda k: m.site_bodyid[k], frame, UnknownFrameError)]
    for kind, count, mujocos, physais, error in cases:
        names = {getattr(m, kind)(i).name for i in range(count)} | {"", f"{kind}0", f"{kind}1", f"{kind}2"}
        for name in sorted(names - {"world"}):
            try:
                expected = mujocos(getattr(m, kind)(name).id)
            except KeyError:                                                  # MuJoCo has no such name
                with pytest.raises(error, match="no (joint|body|site or body)"):
                    physais(name)
                continue
            assert physais(name) == expected, (kind, name)


def test_welded_chain_below_the_world_and_between_joints():
    """A hand-made tree: a welded base on the world, a hinge, a welded bracket, a slide under the bracket."""
    rng = np.random.default_rng(1)

    def rot(angle, axis):
        from physai.spatial import axis_angle_to_mat
        return axis_angle_to_mat(np.asarray(axis) / np.linalg.norm(axis), angle)

    def inertia():                                   # of a few point masses: always physical
        r = rng.uniform(-0.1, 0.1, (4, 3))
        return sum(r_ @ r_ * np.eye(3) - np.outer(r_, r_) for r_ in r)

    B = dynamics.Body
    bodies = [
        B(-1, [0.3, 0.1, 0.2], rot(0.4, [1, 2, 3]), "", None, None, 2.0, [0.0, 0.1, 0.0], inertia(), "base"),
        B(0, [0.0, 0.0, 0.4], rot(-0.3, [0, 1, 1]), "hinge", [0, 0, 1], [0.05, 0, 0], 1.5, [0.1, 0, 0], inertia(), "arm", 0.2),
        B(1, [0.4, 0.0, 0.0], rot(0.7, [1, 0, 0]), "", None, None, 0.7, [0.0, 0.02, 0.03], inertia(), "bracket"),
        B(2, [0.1, 0.0, 0.0], rot(0.2, [0, 0, 1]), "slide", [1, 0, 0], None, 0.4, [0.02, 0, 0], inertia(), "slider", 0.1),
        B(1, [0.0, 0.2, 0.0], np.eye(3), "", None, None, 0.0, [0.0, 0.0, 0.0], np.zeros((3, 3)), "marker"),
    ]
    tree = dynamics.Tree(bodies, armature=[0.02, 0.1], gravity=[0.1, 0.2, -9.7], stiffness=[3.0, 20.0], springref=[0.1, -0.05])
    model = engine.compile_tree(tree)
    assert (model.nlink, list(model.link_parentid), model.static_mass) == (2, [-1, 0], 2.0)
    q, qd, qdd = rng.uniform(-1, 1, (3, 2))
    assert_close(engine.rnea(model, q, qd, qdd), dynamics.rnea(tree, q, qd, qdd), RTOL)
    assert_close(engine.mass_matrix(model, q), dynamics.mass_matrix(tree, q), RTOL)
    assert_close(engine.energy(model, q, qd), dynamics.energy(tree, q, qd), RTOL)
    assert_close(engine.potential_energy(model, q), dynamics.potential_energy(tree, q), RTOL)


def test_far_from_the_origin_keeps_its_digits():
    """Joint forces do not depend on where the robot stands; spatial quantities about the root keep them exact."""
    tree = dynamics.tree_from_mujoco(models.load("franka_emika_panda"))
    far = dynamics.Tree([dynamics.Body(b.parent, b.pos + (1e6 if b.parent < 0 else 0), b.rot, b.joint, b.axis, b.anchor,
                                       b.mass, b.com, b.inertia, b.name, b.ref) for b in tree.bodies],
                        tree.armature, tree.gravity)
    q, qd, qdd = np.random.default_rng(5).uniform(-1.5, 1.5, (3, N, tree.nv))
    near_tau, far_tau = engine.rnea(engine.compile_tree(tree), q, qd, qdd), engine.rnea(engine.compile_tree(far), q, qd, qdd)
    assert_close(far_tau, near_tau, 1e-14)
    # the world-origin teaching layer loses about 1e6^2 * eps relative to the torques
    err = np.abs(dynamics.rnea(far, q[0], qd[0], qdd[0]) - near_tau[0]).max()
    assert err > 1e-9


# ---- bad inputs ----

@pytest.fixture(scope="module")
def pendulum():
    return engine.from_mujoco("double_pendulum")


def test_wrong_length(pendulum):
    with pytest.raises(ShapeError, match=r"q has 3 entries, the model needs 2"):
        engine.rnea(pendulum, [0, 0, 0], [0, 0], [0, 0])
    with pytest.raises(ShapeError, match=r"qdd has 1 entry, the model needs 2"):
        engine.rnea(pendulum, [0, 0], [0, 0], [0])
    h1 = engine.from_mujoco("unitree_h1")
    with pytest.raises(ShapeError, match=r"q has 25 entries, the model needs 26"):
        engine.gravity(h1, np.zeros(25))


def test_wrong_batch_shape(pendulum):
    with pytest.raises(ShapeError, match=r"q has shape \(5, 3\), the model needs \(5, 2\) or \(2,\)"):
        engine.mass_matrix(pendulum, np.zeros((5, 3)))
    with pytest.raises(ShapeError, match=r"qd has 4 states but q has 5"):
        engine.bias(pendulum, np.zeros((5, 2)), np.zeros((4, 2)))
    with pytest.raises(ShapeError, match=r"q must have shape \(2,\) or \(N, 2\), got shape \(2, 3, 2\)"):
        engine.gravity(pendulum, np.zeros((2, 3, 2)))
    with pytest.raises(ShapeError, match=r"q must have shape"):
        engine.gravity(pendulum, 0.5)


def test_not_finite_or_not_numbers(pendulum):
    q = np.zeros((4, 2))
    q[3, 1] = np.nan
    with pytest.raises(InvalidStateError, match=r"q\[3, 1\] is nan; q must be finite"):
        engine.gravity(pendulum, q)
    with pytest.raises(InvalidStateError, match=r"tau\[0\] is inf"):
        engine.forward_dynamics(pendulum, [0, 0], [0, 0], [np.inf, 0])
    with pytest.raises(ShapeError, match=r"q must be"):
        engine.gravity(pendulum, ["a", "b"])
    with pytest.raises(InvalidStateError, match=r"zero quaternion"):
        engine.gravity(engine.from_mujoco("unitree_h1"), np.zeros(26))


def test_overflow_is_named_not_returned(pendulum):
    """Finite inputs whose result overflows: an error naming the cause, not [nan, nan]."""
    with pytest.raises(InvalidStateError, match=r"rnea is not finite at state 0, index \(\d+,\) although the inputs are"):
        engine.rnea(pendulum, [0, 0], [1e200, 0], [0, 0])


@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_a_zero_quaternion_in_integrate_is_named(backend):
    """Not "the numbers overflow": the argument, the quaternion's place in q and, in a batch, the state."""
    h1 = engine.from_mujoco("unitree_h1")
    q = h1.qpos0
    zero = q.copy()
    zero[3:7] = 0.0
    v = np.zeros(h1.nv)
    previous = engine.set_backend(backend)
    try:
        with pytest.raises(InvalidStateError, match=r"^q\[3:7\] is a zero quaternion; a ball or free joint needs a unit"):
            engine.integrate(h1, zero, v, 0.01)
        with pytest.raises(InvalidStateError, match=r"^q\[3:7\] is a zero quaternion \(state 2\)"):
            engine.integrate(h1, np.stack([q, q, zero]), np.zeros((3, h1.nv)), 0.01)
        with pytest.raises(InvalidStateError, match=r"integrate is not finite at state 0, index \(\d+,\) although the "
                                                      r"inputs are: the numbers overflow"):
            with np.errstate(over="ignore", invalid="ignore"):
                engine.integrate(h1, q, np.full(h1.nv, 1e300), 1e10)      # an overflow is still one
    finally:
        engine.set_backend(previous)


def test_wrong_model_or_data(pendulum):
    with pytest.raises(InvalidModelError, match=r"expected a physai.engine.Model, a physai.dynamics.Tree"):
        engine.rnea(42, [0, 0], [0, 0], [0, 0])
    with pytest.raises(InvalidModelError, match=r"needs a physai.dynamics.Tree"):
        engine.compile_tree("double_pendulum")
    other = engine.from_mujoco("double_pendulum")
    with pytest.raises(InvalidModelError, match="data was made for another Model"):
        engine.rnea(pendulum, [0, 0], [0, 0], [0, 0], data=engine.Data(other, 1))
    with pytest.raises(ShapeError, match="q must be real numbers"):
        engine.gravity(pendulum, [1j, 0])
    with pytest.raises(ShapeError, match=r"Data for 3 states"):
        engine.rnea(pendulum, np.zeros((3, 2)), np.zeros((3, 2)), np.zeros((3, 2)), data=engine.Data(pendulum, 1))
    d = engine.Data(pendulum, 3)
    engine.rnea(pendulum, np.zeros((3, 2)), np.zeros((3, 2)), np.zeros((3, 2)), data=d)
    assert d.cvel.shape == (3, 6, 3) and d.cfrc.shape == (2, 6, 3)


def test_a_tree_is_compiled_on_the_fly(pendulum):
    tree = dynamics.tree_from_mujoco(models.load("double_pendulum"))
    q, qd, qdd = [0.3, -0.2], [1.0, 0.5], [0.1, 0.2]
    assert_close(engine.rnea(tree, q, qd, qdd), engine.rnea(pendulum, q, qd, qdd), 1e-15)


def test_singular_mass_matrix():
    B = dynamics.Body
    tree = dynamics.Tree([B(-1, [0, 0, 0], np.eye(3), "slide", [1, 0, 0], None, 0.0, [0, 0, 0], np.zeros((3, 3)))], armature=[0.0])
    with pytest.raises(InvalidModelError, match=r"singular"):
        engine.forward_dynamics(engine.compile_tree(tree), [0.0], [0.0], [1.0])
    with pytest.raises(InvalidModelError, match=r"singular"):
        engine.aba(engine.compile_tree(tree), [0.0], [0.0], [1.0])


def test_errors_are_physai_errors(pendulum):
    with pytest.raises(PhysaiError):
        engine.energy(pendulum, [0, 0], [0, 0, 0])


@pytest.mark.parametrize("old, new", [("crba", "mass_matrix"), ("kinematics", "smooth.kinematics"), ("com_pos", "smooth.com_pos"),
                                      ("com_vel", "smooth.com_vel"), ("rne", "smooth.rne"), ("crb", "smooth.crb")])
def test_old_names_warn_and_still_work(old, new):
    with pytest.warns(DeprecationWarning, match=f"physai.engine.{old} is deprecated.*physai.engine.{new}"):
        f = getattr(engine, old)
    assert f is eval(f"engine.{new}")                                     # the same function, one release more
