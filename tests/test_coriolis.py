"""physai.coriolis: the Christoffel Coriolis matrix and Mdot, against identities, the lessons' hand formulas,
MuJoCo's implicit integrator and Pinocchio, all computed live.

Tolerances: 1e-12 times the largest magnitude of the compared quantity (at least 1); central finite
differences of M along qd (step 1e-6) agree to 1e-8 scaled (1.3e-9 seen: rounding eps |M| / h ~ 2e-10 times
the entries' spread, plus truncation h^2 |M'''| / 6). The bias force is exactly quadratic in qd, so
its central difference with a unit step is exact up to rounding and is held to 1e-12.
"""

import mujoco
import numpy as np
import pytest

from physai import coriolis as cor
from physai import dynamics as dyn
from physai import engine, models
from physai.dynamics import Body, Tree
from physai.exceptions import ShapeError
from physai.spatial import cross_force
from helpers import assert_close

import mj

TOL = 1e-12
MODELS = ["double_pendulum", "hinge_slide", "arm2", "franka_emika_panda"]


@pytest.fixture(scope="module", params=MODELS)
def case(request):
    """(name, MjModel, Tree, 20 random states (q, qd)) with q inside the joint ranges and |qd| <= 5."""
    m = models.load(request.param)
    states = [(q, qd) for q, qd, _ in mj.random_states(m, 20, seed=7)]
    return request.param, m, dyn.tree_from_mujoco(m), states


# ---- cross_force_bar: u x* f as a matrix acting on u ----


def test_cross_force_bar_against_its_definition_and_the_cross_product():
    """cross_force_bar(f) @ u == cross_force(u) @ f (its definition), == (w x n + v x f0, w x f0) written with
    np.cross for u = (w, v), f = (n, f0); the matrix is skew-symmetric, so u . (u x* f) = 0. Each entry is a sum
    of at most four products: bound 8 eps times the scale (4.3e-16 seen over 1000 draws)."""
    eps, rng = np.finfo(float).eps, np.random.default_rng(12)
    for _ in range(200):
        f, u = rng.normal(size=6) * rng.uniform(0.1, 100), rng.normal(size=6) * rng.uniform(0.1, 100)
        B = cor.cross_force_bar(f)
        by_hand = np.r_[np.cross(u[:3], f[:3]) + np.cross(u[3:], f[3:]), np.cross(u[:3], f[3:])]
        assert_close(B @ u, cross_force(u) @ f, 8 * eps)
        assert_close(B @ u, by_hand, 8 * eps)
        assert np.array_equal(B, -B.T)
        assert abs(u @ B @ u) <= 8 * eps * np.abs(u).max() ** 2 * np.abs(f).max()


# ---- identities on every model ----


def test_c_qd_is_bias_minus_gravity(case):
    _, _, tree, states = case
    for q, qd in states:
        assert_close(cor.coriolis_matrix(tree, q, qd) @ qd, dyn.bias(tree, q, qd) - dyn.gravity(tree, q), TOL)


def test_mdot_minus_2c_is_skew_and_passive(case):
    _, _, tree, states = case
    for q, qd in states:
        N = cor.mass_matrix_dot(tree, q, qd) - 2 * cor.coriolis_matrix(tree, q, qd)
        assert_close(N, -N.T, TOL)
        assert abs(qd @ N @ qd) <= TOL * max(1.0, np.abs(N).max()) * (qd @ qd)


def test_mdot_matches_central_difference_of_mass_matrix(case):
    _, _, tree, states = case
    h = 1e-6
    for q, qd in states:
        fd = (dyn.mass_matrix(tree, q + h * qd) - dyn.mass_matrix(tree, q - h * qd)) / (2 * h)
        assert_close(cor.mass_matrix_dot(tree, q, qd), fd, 1e-8)


def test_velocity_derivative_of_bias_is_2c(case):
    _, _, tree, states = case
    for q, qd in states:
        E = np.eye(tree.nv)      # c is quadratic in qd: a central difference with unit step is exact
        dc = np.stack([(dyn.bias(tree, q, qd + e) - dyn.bias(tree, q, qd - e)) / 2 for e in E], axis=1)
        assert_close(dc, 2 * cor.coriolis_matrix(tree, q, qd), TOL)


def test_christoffel_symbols_from_mass_matrix_derivatives(case):
    _, _, tree, states = case
    q, qd = states[0]
    dM, G = cor.mass_matrix_derivatives(tree, q), cor.christoffel_symbols(tree, q)
    h = 1e-6
    for k in range(tree.nv):
        e = np.eye(tree.nv)[k]
        assert_close(dM[:, :, k], (dyn.mass_matrix(tree, q + h * e) - dyn.mass_matrix(tree, q - h * e)) / (2 * h), 1e-8)
    # Gamma_ijk = 1/2 (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i), symmetric in j and k
    assert_close(G, 0.5 * (dM + dM.transpose(0, 2, 1) - dM.transpose(2, 0, 1)), TOL)
    assert_close(G, G.transpose(0, 2, 1), TOL)
    assert_close(G @ qd, cor.coriolis_matrix(tree, q, qd), TOL)
    assert_close(dM @ qd, cor.mass_matrix_dot(tree, q, qd), TOL)


def test_armature_drops_out(case):
    _, _, tree, states = case
    heavy = Tree(tree.bodies, tree.armature + 0.7, tree.gravity)
    for q, qd in states[:5]:
        assert_close(cor.coriolis_matrix(heavy, q, qd), cor.coriolis_matrix(tree, q, qd), TOL)
        assert_close(cor.mass_matrix_dot(heavy, q, qd), cor.mass_matrix_dot(tree, q, qd), TOL)


# ---- MuJoCo: its implicit integrator differentiates the bias force, d(C qd)/d qd = 2C ----


def _qDeriv(m, q, qd, integrator) -> tuple[np.ndarray, np.ndarray]:
    m.opt.integrator = integrator
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = q, qd
    mujoco.mj_step(m, d)                   # qDeriv is formed at the state before the step
    return mj.dense_qDeriv(m, d)


def test_implicit_integrator_uses_2c(case):
    """implicit's qDeriv minus implicitfast's is -d(qfrc_bias)/d qvel (MuJoCo's mjd_rne_vel) = -2C."""
    _, m, tree, states = case
    m = mj.without_constraints(m)
    for q, qd in states[:5]:
        full, mask = _qDeriv(m, q, qd, mujoco.mjtIntegrator.mjINT_IMPLICIT)
        fast, _ = _qDeriv(m, q, qd, mujoco.mjtIntegrator.mjINT_IMPLICITFAST)
        C = cor.coriolis_matrix(tree, q, qd)
        assert_close(full - fast, np.where(mask, -2 * C, 0.0), TOL)
        assert np.all(C[~mask] == 0)      # outside MuJoCo's pattern (other branches) C is exactly zero


# ---- the two-link arm of the manipulator-equation section: point masses at the link tips ----

m1, m2, l1, l2, G_ACC = 1.5, 1.0, 0.5, 0.4, 9.81


def point_mass_arm() -> Tree:
    """The section's 2-DOF arm built by hand: hinges about -y (q = 0 horizontal, positive lifts), point masses."""
    axis, zero3 = np.array([0.0, -1.0, 0.0]), np.zeros((3, 3))
    return Tree([
        Body(-1, np.zeros(3), np.eye(3), "hinge", axis, None, m1, np.array([l1, 0, 0]), zero3, "link1"),
        Body(0, np.array([l1, 0, 0]), np.eye(3), "hinge", axis, None, m2, np.array([l2, 0, 0]), zero3, "link2"),
    ], np.zeros(2), np.array([0.0, 0.0, -G_ACC]))


def manipulator_matrices(q, dq):
    """M(q), C(q, dq), g(q) exactly as the section writes them."""
    c2, s2 = np.cos(q[1]), np.sin(q[1])
    a = m1 * l1**2 + m2 * (l1**2 + l2**2 + 2 * l1 * l2 * c2)
    b = m2 * (l2**2 + l1 * l2 * c2)
    d = m2 * l2**2
    h = -m2 * l1 * l2 * s2
    C = np.array([[h * dq[1], h * (dq[0] + dq[1])], [-h * dq[0], 0.0]])
    c12 = np.cos(q[0] + q[1])
    g = np.array([(m1 + m2) * G_ACC * l1 * np.cos(q[0]) + m2 * G_ACC * l2 * c12, m2 * G_ACC * l2 * c12])
    return np.array([[a, b], [b, d]]), C, g


def test_point_mass_arm_matches_section_closed_forms():
    tree = point_mass_arm()
    rng = np.random.default_rng(4)
    for q, dq in [(np.array([0.4, -0.7]), np.array([1.2, 0.9]))] + [(rng.uniform(-3, 3, 2), rng.normal(0, 3, 2))
                                                                    for _ in range(50)]:
        M, C, g = manipulator_matrices(q, dq)
        assert_close(dyn.mass_matrix(tree, q), M, TOL)
        assert_close(dyn.gravity(tree, q), g, TOL)
        assert_close(cor.coriolis_matrix(tree, q, dq), C, TOL)
        dMdq2 = -m2 * l1 * l2 * np.sin(q[1]) * np.array([[2.0, 1.0], [1.0, 0.0]])
        assert_close(cor.mass_matrix_dot(tree, q, dq), dMdq2 * dq[1], TOL)


# ---- the double pendulum (lesson 11) and the two-link arm (lesson 7.1): hand formulas for C qd ----


@pytest.mark.parametrize("name", ["double_pendulum", "arm2"])
def test_planar_two_link_hand_formulas(name):
    """C qd = h (-(2 qd1 qd2 + qd2^2), qd1^2) and the Christoffel C = h [[-qd2, -(qd1 + qd2)], [qd1, 0]], h = m2 l1 c2 sin q2."""
    m = models.load(name)
    tree = dyn.tree_from_mujoco(m)
    # m2, l1 (elbow offset along the link) and c2 (link 2's centre of mass along it), read from the model
    m2_, l1_, c2_ = float(m.body_mass[2]), float(np.linalg.norm(m.body_pos[2])), float(np.linalg.norm(m.body_ipos[2]))
    rng = np.random.default_rng(5)
    for _ in range(50):
        q, qd = rng.uniform(-3, 3, 2), rng.normal(0, 3, 2)
        h = m2_ * l1_ * c2_ * np.sin(q[1])
        C = cor.coriolis_matrix(tree, q, qd)
        assert_close(C @ qd, h * np.array([-(2 * qd[0] * qd[1] + qd[1] ** 2), qd[0] ** 2]), TOL)
        assert_close(C, h * np.array([[-qd[1], -(qd[0] + qd[1])], [qd[0], 0.0]]), TOL)


# ---- Pinocchio: computeCoriolisMatrix, after checking that the two models agree on M and c ----


def _pin_states(tree, count=20, seed=11):
    rng = np.random.default_rng(seed)
    return [(rng.uniform(-1.5, 1.5, tree.nv), rng.uniform(-3, 3, tree.nv)) for _ in range(count)]


def _compare_with_pinocchio(pin, pm, tree, q_offset):
    pd = pm.createData()
    for q, qd in _pin_states(tree):
        qp = q - q_offset
        M = pin.crba(pm, pd, qp)
        M = np.triu(M) + np.triu(M, 1).T                  # crba fills the upper triangle only
        assert_close(dyn.mass_matrix(tree, q), M, TOL)
        assert_close(dyn.bias(tree, q, qd), pin.nonLinearEffects(pm, pd, qp, qd), TOL)
        assert_close(cor.coriolis_matrix(tree, q, qd), pin.computeCoriolisMatrix(pm, pd, qp, qd), TOL)


def _mass_per_joint(tree: Tree) -> list:
    """Mass moved by each joint's own body plus the bodies welded to it (Pinocchio lumps them into one inertia)."""
    carrier, mass = [], {}
    for i, b in enumerate(tree.bodies):
        carrier.append(i if b.joint else (carrier[b.parent] if b.parent >= 0 else None))
        if carrier[i] is not None:
            mass[carrier[i]] = mass.get(carrier[i], 0.0) + b.mass
    return [mass[i] for i, b in enumerate(tree.bodies) if b.joint]


def test_panda_coriolis_matches_pinocchio_mjcf_parser():
    """The Panda read by Pinocchio's own MJCF parser: same joint order, armature and gravity as MuJoCo's."""
    import pinocchio as pin
    m = models.load("franka_emika_panda")
    tree = dyn.tree_from_mujoco(m)
    pm = pin.buildModelFromMJCF(str(models.model_path("franka_emika_panda")))
    assert [pm.names[i] for i in range(1, pm.njoints)] == [m.joint(j).name for j in range(m.njnt)]
    assert_close(pm.armature, tree.armature, TOL)
    assert_close(pm.gravity.linear, tree.gravity, TOL)
    assert_close([pm.inertias[i].mass for i in range(1, pm.njoints)], _mass_per_joint(tree), TOL)
    _compare_with_pinocchio(pin, pm, tree, np.zeros(tree.nv))


def pinocchio_model_from_tree(pin, tree: Tree):
    """A Pinocchio model of a physai Tree: one revolute/prismatic joint per jointed body, placed at its anchor
    with the body's orientation at q = ref; welded bodies' inertias appended to the nearest jointed ancestor.
    Pinocchio's q is physai's q - ref."""
    refs = np.array([b.ref for b in tree.bodies if b.joint])
    R, p, _ = dyn.body_frames(tree, refs)
    pm = pin.Model()
    pm.gravity = pin.Motion(np.r_[tree.gravity, np.zeros(3)])
    frame = {}                                        # body -> (pinocchio joint id, world pose of that joint frame)
    for i, b in enumerate(tree.bodies):
        parent_id, parent_pose = frame[b.parent] if b.parent >= 0 else (0, pin.SE3.Identity())
        if b.joint:
            pose = pin.SE3(R[i], p[i] + R[i] @ b.anchor)
            jm = (pin.JointModelRevoluteUnaligned if b.joint == "hinge" else pin.JointModelPrismaticUnaligned)(b.axis)
            jid = pm.addJoint(parent_id, jm, parent_pose.actInv(pose), b.name)
            frame[i] = (jid, pose)
        else:
            frame[i] = (parent_id, parent_pose)
        jid, pose = frame[i]
        body_in_joint = pose.actInv(pin.SE3(R[i], p[i]))
        inertia = pin.Inertia(b.mass, b.com, b.inertia)   # about the com, in the body frame
        if jid > 0:
            pm.appendBodyToJoint(jid, body_in_joint.act(inertia), pin.SE3.Identity())
    pm.armature = tree.armature.copy()
    return pm, refs


def test_branching_tree_coriolis_matches_pinocchio():
    """hinge_slide (branches, slides, welded bodies, joint refs, tilted gravity), built for Pinocchio from the Tree:
    Pinocchio's MJCF parser misreads this file (it drops the gravity option), so the Tree is the common source."""
    import pinocchio as pin
    tree = dyn.tree_from_mujoco(models.load("hinge_slide"))
    pm, refs = pinocchio_model_from_tree(pin, tree)
    _compare_with_pinocchio(pin, pm, tree, refs)


# ---- input checks ----


def test_wrong_qd_length_names_qd():
    tree = dyn.tree_from_mujoco(models.load("arm2"))
    with pytest.raises(ShapeError, match="^qd has 3 entries, the model needs 2"):
        cor.coriolis_matrix(tree, np.zeros(2), np.zeros(3))
    with pytest.raises(ShapeError, match="^q has 1 entry, the model needs 2"):
        cor.mass_matrix_dot(tree, np.zeros(1), np.zeros(2))


def test_n_states_give_each_states_matrices(case):
    """q (N, nq), qd (N, nv) give the N states' C, Mdot, dM/dq and Christoffel symbols stacked, each within TOL of its
    state's alone (one state shared by the batch too); N states of another count than qd's are named."""
    _, m, _, states = case
    model = engine.from_mujoco(m)
    Q, QD = (np.array(x[:3]) for x in zip(*states))
    for name, batch, alone in [("coriolis_matrix", (Q, QD), lambda k: (Q[k], QD[k])),
                               ("mass_matrix_dot", (Q[0], QD), lambda k: (Q[0], QD[k])),
                               ("mass_matrix_derivatives", (Q,), lambda k: (Q[k],)),
                               ("christoffel_symbols", (Q,), lambda k: (Q[k],))]:
        f = getattr(cor, name)
        stacked = f(model, *batch)
        assert stacked.shape[0] == 3, name
        for k in range(3):
            assert_close(stacked[k], f(model, *alone(k)), TOL, what=name)
    with pytest.raises(ShapeError, match="qd has 2 states but q has 3"):
        cor.coriolis_matrix(model, Q, QD[:2])


def test_a_model_without_dofs_gives_empty_matrices():
    """A model with no dofs (a plane alone) gives (0, 0) C and Mdot and (0, 0, 0) dM/dq and Christoffel symbols, one
    state or N."""
    model = engine.from_mujoco(mujoco.MjModel.from_xml_string('<mujoco><worldbody><geom type="plane" size="1 1 .1"/>'
                                                                '</worldbody></mujoco>'))
    assert cor.coriolis_matrix(model, np.zeros(0), np.zeros(0)).shape == (0, 0)
    assert cor.mass_matrix_dot(model, np.zeros(0), np.zeros(0)).shape == (0, 0)
    for f in (cor.mass_matrix_derivatives, cor.christoffel_symbols):
        assert f(model, np.zeros(0)).shape == (0, 0, 0)
        assert f(model, np.zeros((2, 0))).shape == (2, 0, 0, 0)
