"""physai.engine against Pinocchio, the second and independent reference (rnea, crba, nle, g, aba, energies).

Which Pinocchio model: `tree_to_pinocchio` below converts physai's Tree (the teaching layer's data, before
the engine fuses anything) into a pin.Model, joint by joint, and lets Pinocchio merge the welded bodies
itself (appendBodyToJoint). All dynamics comparisons use it, on every model.

pin.buildModelFromMJCF is checked as well, on the models it reads faithfully (double pendulum, Panda, iiwa):
same joint order, armature, fused masses and dynamics. It is not used for the other two, because (Pinocchio 4.1):
- hinge_slide: the parser ignores <option gravity="..."> and keeps (0, 0, -9.81);
- SO-101: the camera mount has no <inertial>; MuJoCo derives 12 g from its mesh, Pinocchio's parser 16 g.
Pinocchio's crba fills only the upper triangle of M (users-ask A15); it is symmetrized before comparing.
Pinocchio 4.1's computeKineticEnergy adds the armature of prismatic joints only (see test_energies).
"""

import numpy as np
import pinocchio as pin
import pytest

from physai import dynamics, engine, models
from physai.spatial import axis_angle_to_mat
from helpers import Robot, assert_close


ROBOTS = ["double_pendulum", "hinge_slide", "robotstudio_so101", "franka_emika_panda", "kuka_iiwa_14"]
MJCF_FAITHFUL = ["double_pendulum", "franka_emika_panda", "kuka_iiwa_14"]
N = 6
RTOL = 1e-12


def tree_to_pinocchio(tree: dynamics.Tree):
    """A pin.Model with the same dynamics as `tree`, and the same joint positions q (joint refs folded in).

    A hinge turns about the axis through its anchor by q - ref, so its Pinocchio joint frame sits at the
    anchor, turned by -ref about the axis (RevoluteUnaligned), and the body hangs at -anchor from it; a slide's
    joint frame is shifted by -ref along the axis (PrismaticUnaligned). A welded body is appended to the joint
    that carries it; bodies welded to the world go to the universe (joint 0).
    """
    pm = pin.Model()
    pm.gravity.linear = tree.gravity.copy()
    where = []                                        # (joint id, pose of the body frame in that joint's frame)
    for b in tree.bodies:
        jid, parent_pose = where[b.parent] if b.parent >= 0 else (0, pin.SE3.Identity())
        pose = parent_pose * pin.SE3(b.rot, b.pos)    # body frame at q = ref, in joint jid's frame
        if b.joint == "hinge":
            placement = pose * pin.SE3(axis_angle_to_mat(b.axis, -b.ref), b.anchor)
            jid = pm.addJoint(jid, pin.JointModelRevoluteUnaligned(*b.axis), placement, b.joint_name)
            pose = pin.SE3(np.eye(3), -b.anchor)
        elif b.joint == "slide":
            placement = pose * pin.SE3(np.eye(3), -b.ref * b.axis)
            jid = pm.addJoint(jid, pin.JointModelPrismaticUnaligned(*b.axis), placement, b.joint_name)
            pose = pin.SE3.Identity()
        pm.appendBodyToJoint(jid, pin.Inertia(b.mass, b.com, b.inertia), pose)
        where.append((jid, pose))
    pm.armature = tree.armature.copy()
    return pm


def with_pinocchio(robot: Robot) -> Robot:
    """robot (helpers.Robot) with its Tree, the engine Model compiled from that Tree (engine.compile_tree) in place of
    the one read from MuJoCo, and Pinocchio's model of the Tree (pin, data)."""
    robot.tree = dynamics.tree_from_mujoco(robot.m)
    robot.model = engine.compile_tree(robot.tree)
    robot.pin = tree_to_pinocchio(robot.tree)
    robot.data = robot.pin.createData()
    return robot


@pytest.fixture(scope="module")
def robot(request):
    return with_pinocchio(Robot(request.param, n=N))


def symmetric(M_upper):
    return np.triu(M_upper) + np.triu(M_upper, 1).T


def test_converted_model_matches_the_tree(robot):
    pm = robot.pin
    assert (pm.nq, pm.nv, pm.njoints - 1) == (robot.model.nq, robot.model.nv, robot.model.njnt)
    assert [pm.names[i] for i in range(1, pm.njoints)] == list(robot.model.jnt_name)
    # Pinocchio's own merge of welded bodies equals the engine's fusing
    masses = [pm.inertias[i].mass for i in range(1, pm.njoints)]
    assert_close(masses, robot.model.link_mass, RTOL, what="fused masses")
    assert pm.inertias[0].mass == pytest.approx(robot.model.static_mass, rel=1e-14)


def test_rnea_nle_gravity(robot):
    pm, pd = robot.pin, robot.data
    tau = engine.rnea(robot.model, robot.q, robot.qd, robot.qdd)
    c = engine.bias(robot.model, robot.q, robot.qd)
    g = engine.gravity(robot.model, robot.q)
    for k in range(N):
        q, qd, qdd = robot.q[k], robot.qd[k], robot.qdd[k]
        assert_close(tau[k], pin.rnea(pm, pd, q, qd, qdd), RTOL, what="rnea vs pin.rnea")
        assert_close(c[k], pin.nonLinearEffects(pm, pd, q, qd), RTOL, what="bias vs pin.nonLinearEffects")
        assert_close(g[k], pin.computeGeneralizedGravity(pm, pd, q), RTOL, what="gravity vs pin.computeGeneralizedGravity")


def test_crba(robot):
    M = engine.mass_matrix(robot.model, robot.q)
    for k in range(N):
        assert_close(M[k], symmetric(pin.crba(robot.pin, robot.data, robot.q[k])), RTOL, what="M vs pin.crba (armature included)")


def test_aba(robot):
    qdd = engine.forward_dynamics(robot.model, robot.q, robot.qd, robot.tau)
    qdd_aba = engine.aba(robot.model, robot.q, robot.qd, robot.tau)
    for k in range(N):
        expected = pin.aba(robot.pin, robot.data, robot.q[k], robot.qd[k], robot.tau[k])
        scale = np.linalg.cond(engine.mass_matrix(robot.model, robot.q[k])) * max(1.0, np.abs(expected).max()) * 1e-2
        assert_close(qdd[k], expected, RTOL, scale, what="forward_dynamics vs pin.aba")
        assert_close(qdd_aba[k], expected, RTOL, scale, what="aba vs pin.aba")


def test_energies(robot):
    """Kinetic and potential energy; Pinocchio's potential leaves out the universe's (welded) mass, added back.

    Pinocchio 4.1's computeKineticEnergy counts the armature of prismatic joints but not of revolute ones, so the
    kinetic energy is compared on a copy of the model without armature, plus 1/2 sum armature qd^2.
    """
    pm, pd = robot.pin, robot.data
    bare = pin.Model(pm)
    bare.armature = np.zeros(pm.nv)
    bare_data = bare.createData()
    T = engine.kinetic_energy(robot.model, robot.q, robot.qd)
    U = engine.potential_energy(robot.model, robot.q)
    static = -pm.inertias[0].mass * pm.gravity.linear @ pm.inertias[0].lever
    springs = 0.5 * robot.tree.stiffness @ ((robot.q - robot.tree.springref) ** 2).T
    for k in range(N):
        rotor = 0.5 * pm.armature @ robot.qd[k] ** 2
        assert_close(T[k], pin.computeKineticEnergy(bare, bare_data, robot.q[k], robot.qd[k]) + rotor, RTOL, what="kinetic energy")
        assert_close(U[k], pin.computePotentialEnergy(pm, pd, robot.q[k]) + static + springs[k], RTOL, what="potential energy")


@pytest.mark.parametrize("name", MJCF_FAITHFUL)
def test_mjcf_parser_agrees(name):
    """pin.buildModelFromMJCF: joint order, armature, welded inertias merged, and the same dynamics."""
    robot = with_pinocchio(Robot(name, n=N))
    pm = pin.buildModelFromMJCF(str(models.model_path(name)))
    pd = pm.createData()
    assert [pm.names[i] for i in range(1, pm.njoints)] == [robot.m.joint(j).name for j in range(robot.m.njnt)]
    assert_close(pm.armature, robot.m.dof_armature, RTOL, what="armature")
    assert_close(pm.gravity.linear, robot.tree.gravity, RTOL, what="gravity")
    assert_close([pm.inertias[i].mass for i in range(1, pm.njoints)], robot.model.link_mass, RTOL, what="merged masses")
    for k in range(N):
        q, qd, qdd = robot.q[k], robot.qd[k], robot.qdd[k]
        assert_close(engine.rnea(robot.model, q, qd, qdd), pin.rnea(pm, pd, q, qd, qdd), RTOL, what="rnea vs MJCF-parsed pin")
        assert_close(engine.mass_matrix(robot.model, q), symmetric(pin.crba(pm, pd, q)), RTOL, what="M vs MJCF-parsed pin")
