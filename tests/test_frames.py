"""Named frames (sites and bodies), their poses and Jacobians in Pinocchio's three references, and the whole body's centre
of mass, its Jacobian and the centroidal momentum, against MuJoCo (site_xpos/site_xmat, mj_jacSite, mj_jacBody,
mj_objectVelocity, subtree_com, mj_jacSubtreeCom, mj_subtreeVel) and Pinocchio 4.1 (getFrameJacobian,
jacobianCenterOfMass, centerOfMass, ccrba) computed here."""

import mujoco
import numpy as np
import pinocchio as pin
import pytest

from physai import centroidal, engine, jacobians, kinematics, models, spatial
from physai.exceptions import InvalidArgumentError, InvalidStateError, ShapeError, UnknownFrameError

from helpers import MIXED, MODELS, load, run

N = 4
RTOL = 1e-12
CASES = ["franka_emika_panda", "unitree_h1", "unitree_g1", "mixed_joints", "random_sites", "two_trees"]


def with_sites(key: str, seed: int = 3, trees: bool = False) -> mujoco.MjModel:
    """MODELS[key] with a site at a random pose on every body and one on the world, each body named (MjSpec); trees: also
    a second tree (a free box) and a massive body welded to the world, so that the model has several trees and mass that
    never moves."""
    spec = mujoco.MjSpec.from_string(MODELS[key])
    if trees:
        other = spec.worldbody.add_body(pos=[1.0, 0.5, 0.8], quat=[0.9, 0.1, 0.3, -0.2])
        other.add_freejoint()
        other.add_geom(type=mujoco.mjtGeom.mjGEOM_BOX, size=[0.1, 0.05, 0.2], mass=2.0, pos=[0.03, 0.0, -0.02])
        welded = spec.worldbody.add_body(pos=[-0.5, 0.2, 0.3])
        welded.add_geom(type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[0.1, 0, 0], mass=3.0)
    rng = np.random.default_rng(seed)
    for k, body in enumerate(spec.bodies):
        body.name = body.name or f"body{k}"                           # physai finds a body by its MuJoCo name only
        quat = rng.normal(size=4)
        body.add_site(name=f"site{k}", pos=rng.uniform(-0.2, 0.2, 3), quat=quat / np.linalg.norm(quat))
    return spec.compile()


@pytest.fixture(scope="module", params=CASES)
def case(request):
    """(MjModel, MjData, engine Model, q (N, nq), qd (N, nv)) with MuJoCo's quantities at each state after mj_forward."""
    m = (with_sites("random_free") if request.param == "random_sites" else with_sites("random_free", 5, trees=True)
         if request.param == "two_trees" else load(request.param, constraints=False))
    model = engine.from_mujoco(m)
    q, qd = engine.random_states(model, N, 11)
    return m, mujoco.MjData(m), model, q, qd


def at(m, d, q, qd=None):
    d.qpos[:] = q
    d.qvel[:] = 0.0 if qd is None else qd
    mujoco.mj_forward(m, d)
    return d


def close(got, expected, what):
    scale = max(1.0, np.abs(expected).max())
    assert np.abs(got - expected).max() <= RTOL * scale, what


def test_frame_poses_equal_mujoco_sites_and_bodies(case):
    m, d, model, q, _ = case
    bodies = tuple(m.body(b).name for b in range(1, m.nbody))             # MuJoCo's names ("" when unnamed)
    assert model.frame_name == tuple(m.site(k).name for k in range(m.nsite)) + bodies
    pos, rot = kinematics.frame_poses(model, q)
    assert pos.shape == (N, m.nsite + m.nbody - 1, 3) and rot.shape == (N, m.nsite + m.nbody - 1, 3, 3)
    for k in range(N):
        at(m, d, q[k])
        close(pos[k], np.vstack([d.site_xpos, d.xpos[1:]]), "pos")
        close(rot[k], np.concatenate([d.site_xmat.reshape(-1, 3, 3), d.xmat[1:].reshape(-1, 3, 3)]), "rot")
    names = [model.frame_name[-1], model.frame_name[0]]                 # a chosen list, one state
    one = kinematics.frame_poses(model, q[2], names)
    close(one[0], pos[2, [-1, 0]], "one state")


def test_site_jacobians_equal_mj_jacSite_and_mj_objectVelocity(case):
    """local_world_aligned is mj_jacSite's (jacp; jacr); local, times qd, is mj_objectVelocity's local (linear, angular)."""
    m, d, model, q, qd = case
    for s in range(m.nsite):
        name = m.site(s).name
        J, L = (jacobians.frame_jacobian(model, q, name, ref) for ref in ("local_world_aligned", "local"))
        for k in range(N):
            at(m, d, q[k], qd[k])
            jp, jr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
            mujoco.mj_jacSite(m, d, jp, jr, s)
            close(J[k], np.vstack([jp, jr]), (name, "local_world_aligned"))
            v = np.zeros(6)
            mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_SITE, s, v, 1)
            close(L[k] @ qd[k], np.r_[v[3:], v[:3]], (name, "local"))


def test_body_frames_equal_mj_jacBody(case):
    m, d, model, q, _ = case
    for b in range(1, m.nbody):
        J = jacobians.frame_jacobian(model, q[1], model.body_name[b - 1])
        at(m, d, q[1])
        jp, jr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
        mujoco.mj_jacBody(m, d, jp, jr, b)
        close(J, np.vstack([jp, jr]), model.body_name[b - 1])


@pytest.fixture(scope="module")
def panda_pinocchio():
    """The Panda from MJCF in MuJoCo, physai and Pinocchio (whose MJCF parser reads it faithfully: tests/test_pinocchio)."""
    path = str(models.model_path("franka_emika_panda"))
    m = models.load("franka_emika_panda")
    pm = pin.buildModelFromMJCF(path)
    return m, engine.from_mujoco(m), pm, pm.createData()


@pytest.mark.parametrize("reference, pin_reference", [("world", pin.WORLD), ("local", pin.LOCAL),
                                                      ("local_world_aligned", pin.LOCAL_WORLD_ALIGNED)])
def test_frame_jacobians_equal_pinocchio_in_its_three_references(panda_pinocchio, reference, pin_reference):
    """The Panda's body frames (Pinocchio keeps each MJCF body as a frame), at random states: getFrameJacobian."""
    m, model, pm, pd = panda_pinocchio
    q = engine.random_states(model, N, 5)[0]
    for name in ("link3", "link7", "hand", "left_finger"):
        J = jacobians.frame_jacobian(model, q, name, reference)
        fid = pm.getFrameId(name)
        for k in range(N):
            pin.computeJointJacobians(pm, pd, q[k])
            pin.updateFramePlacements(pm, pd)
            close(J[k], pin.getFrameJacobian(pm, pd, fid, pin_reference), (name, reference))


def test_com_and_its_jacobian_equal_mujoco(case):
    m, d, model, q, _ = case
    c, Jc = centroidal.com(model, q), centroidal.com_jacobian(model, q)
    assert c.shape == (N, 3) and Jc.shape == (N, 3, m.nv)
    for k in range(N):
        at(m, d, q[k])
        close(c[k], d.subtree_com[0], "com")
        jp = np.zeros((3, m.nv))
        mujoco.mj_jacSubtreeCom(m, d, jp, 0)
        close(Jc[k], jp, "com_jacobian")
    close(centroidal.com(model, q[3]), c[3], "one state")
    close(centroidal.com_jacobian(model, q[3]), Jc[3], "one state")


def test_pinocchios_com_leaves_out_the_base(panda_pinocchio):
    """Pinocchio's centerOfMass and jacobianCenterOfMass are of the moving bodies: they leave out the mass welded to the
    universe (the Panda's link0), which physai counts as MuJoCo's subtree_com[0] does. With the base's mass put back,
    they equal physai's com and com_jacobian."""
    m, model, pm, pd = panda_pinocchio
    q = engine.random_states(model, 1, 6)[0][0]
    base = model.body_name.index("link0")
    assert model.body_linkid[base] < 0 and model.body_mass[base] > 0
    total = model.body_mass.sum()
    moving = total - model.body_mass[base]
    pos, rot = kinematics.body_poses(model, q)
    base_com = pos[base] + rot[base] @ model.body_ipos[base]
    close(centroidal.com(model, q), (moving * pin.centerOfMass(pm, pd, q) + model.body_mass[base] * base_com) / total, "com")
    close(centroidal.com_jacobian(model, q), moving / total * pin.jacobianCenterOfMass(pm, pd, q), "com_jacobian")


def test_frames_are_named_and_checked():
    model = engine.from_mujoco("franka_emika_panda")
    with pytest.raises(UnknownFrameError, match=r"no site or body named 'attachment_sit'\. Did you mean 'attachment_site'"):
        jacobians.frame_jacobian(model, model.qpos0, "attachment_sit")
    with pytest.raises(InvalidArgumentError, match="reference is 'global'; expected one of 'local_world_aligned', 'world', 'local'"):
        jacobians.frame_jacobian(model, model.qpos0, "hand", "global")
    with pytest.raises(InvalidArgumentError, match=r"frames is the string 'hand'; expected a list of frame names, e.g. \['hand'\]"):
        kinematics.frame_poses(model, model.qpos0, "hand")
    with pytest.raises(UnknownFrameError, match="no site or body named 3"):
        kinematics.frame_poses(model, model.qpos0, [3])


def test_centroidal_momentum_equals_mj_subtreeVel(case):
    """h_g = A_g qd: (total mass times subtree_linvel[0]; subtree_angmom[0]), MuJoCo's momentum about the centre of mass."""
    m, d, model, q, qd = case
    A, h = centroidal.momentum_matrix(model, q), centroidal.momentum(model, q, qd)
    assert A.shape == (N, 6, m.nv) and h.shape == (N, 6)
    for k in range(N):
        at(m, d, q[k], qd[k])
        mujoco.mj_subtreeVel(m, d)
        expected = np.r_[m.body_subtreemass[0] * d.subtree_linvel[0], d.subtree_angmom[0]]
        close(h[k], expected, "momentum")
        close(A[k] @ qd[k], expected, "momentum_matrix")
    close(centroidal.momentum(model, q[1], qd[1]), h[1], "one state")


def test_centroidal_momentum_equals_pinocchio_ccrba_moved_to_its_centre(panda_pinocchio):
    """Pinocchio's ccrba gives the momentum about the moving bodies' centre of mass c'; about physai's c (the base's mass
    counted) the angular part is L + (c' - c) x p. The base does not move, so the linear parts are equal."""
    m, model, pm, pd = panda_pinocchio
    q, qd = (x[0] for x in engine.random_states(model, 1, 8))
    Ag = pin.ccrba(pm, pd, q, qd)
    h = Ag @ qd
    c_moving, c = pin.centerOfMass(pm, pd, q), centroidal.com(model, q)
    close(centroidal.momentum(model, q, qd), np.r_[h[:3], h[3:] + np.cross(c_moving - c, h[:3])], "momentum")


def test_jacobian_dots_equal_mj_jacDot(case):
    """J_dot (local_world_aligned) of every site and body: MuJoCo's mj_jacDot at the frame's origin."""
    m, d, model, q, qd = case
    objects = [(m.site(s).name, lambda d, s=s: d.site_xpos[s], int(m.site_bodyid[s])) for s in range(m.nsite)]
    objects += [(model.body_name[b - 1], lambda d, b=b: d.xpos[b], b) for b in range(1, m.nbody)]
    for name, origin, body in objects:
        Jd = jacobians.frame_jacobian_dot(model, q, qd, name)
        for k in range(N):
            at(m, d, q[k], qd[k])
            jp, jr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
            mujoco.mj_jacDot(m, d, jp, jr, origin(d), body)
            close(Jd[k], np.vstack([jp, jr]), name)


def test_frame_velocities_and_accelerations_equal_mujoco(case):
    """Sites: frame_velocity (local_world_aligned, local) against mj_objectVelocity, the classical frame_acceleration
    against mj_objectAcceleration after mj_rnePostConstraint (MuJoCo's includes gravity as an upward acceleration, so
    gravity is added back here). Identities: the velocity is J qd in every reference, the classical acceleration
    J qdd + J_dot qd in local_world_aligned."""
    m, d, model, q, qd = case
    qdd = np.random.default_rng(2).normal(size=qd.shape)
    for s in range(m.nsite):
        name = m.site(s).name
        v, vl = (kinematics.frame_velocity(model, q, qd, name, ref) for ref in ("local_world_aligned", "local"))
        a, al = (kinematics.frame_acceleration(model, q, qd, qdd, name, ref) for ref in ("local_world_aligned", "local"))
        for k in range(N):
            at(m, d, q[k], qd[k])
            d.qacc[:] = qdd[k]
            mujoco.mj_rnePostConstraint(m, d)
            R, r = d.site_xmat[s].reshape(3, 3), np.zeros(6)
            for flag, got in ((0, v[k]), (1, vl[k])):
                mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_SITE, s, r, flag)
                close(got, np.r_[r[3:], r[:3]], (name, "velocity", flag))
            for flag, got, g in ((0, a[k], m.opt.gravity), (1, al[k], R.T @ m.opt.gravity)):
                mujoco.mj_objectAcceleration(m, d, mujoco.mjtObj.mjOBJ_SITE, s, r, flag)
                close(got, np.r_[r[3:] + g, r[:3]], (name, "acceleration", flag))
    name = model.frame_name[-1]
    for ref in ("local_world_aligned", "world", "local"):
        J = jacobians.frame_jacobian(model, q, name, ref)
        close(kinematics.frame_velocity(model, q, qd, name, ref), np.einsum("nij,nj->ni", J, qd), ("J qd", ref))
    J, Jd = jacobians.frame_jacobian(model, q, name), jacobians.frame_jacobian_dot(model, q, qd, name)
    close(kinematics.frame_acceleration(model, q, qd, qdd, name), np.einsum("nij,nj->ni", J, qdd) + np.einsum("nij,nj->ni", Jd, qd),
          "J qdd + J_dot qd")


@pytest.mark.parametrize("reference, pin_reference", [("world", pin.WORLD), ("local", pin.LOCAL),
                                                      ("local_world_aligned", pin.LOCAL_WORLD_ALIGNED)])
def test_frame_derivatives_equal_pinocchio(panda_pinocchio, reference, pin_reference):
    """The Panda's body frames: getFrameJacobianTimeVariation, getFrameVelocity, getFrameAcceleration and
    getFrameClassicalAcceleration, in each reference."""
    m, model, pm, pd = panda_pinocchio
    q, qd = engine.random_states(model, N, 5)
    qdd = np.random.default_rng(1).normal(size=qd.shape)
    for name in ("link3", "hand", "left_finger"):
        Jd = jacobians.frame_jacobian_dot(model, q, qd, name, reference)
        v = kinematics.frame_velocity(model, q, qd, name, reference)
        a = kinematics.frame_acceleration(model, q, qd, qdd, name, reference, classical=False)
        ac = kinematics.frame_acceleration(model, q, qd, qdd, name, reference)
        fid = pm.getFrameId(name)
        for k in range(N):
            pin.computeJointJacobiansTimeVariation(pm, pd, q[k], qd[k])
            pin.updateFramePlacements(pm, pd)
            close(Jd[k], pin.getFrameJacobianTimeVariation(pm, pd, fid, pin_reference), (name, "J_dot"))
            pin.forwardKinematics(pm, pd, q[k], qd[k], qdd[k])
            pin.updateFramePlacements(pm, pd)
            close(v[k], pin.getFrameVelocity(pm, pd, fid, pin_reference).vector, (name, "velocity"))
            close(a[k], pin.getFrameAcceleration(pm, pd, fid, pin_reference).vector, (name, "acceleration"))
            close(ac[k], pin.getFrameClassicalAcceleration(pm, pd, fid, pin_reference).vector, (name, "classical"))


def test_momentum_matrix_dot_is_the_rate_of_the_momentum_matrix(case):
    """A_g_dot against central differences of A_g along the motion, q moved by +-h qd (engine.integrate), h = 1e-5:
    within 1e-8 of its scale (their own error is about 1e-10)."""
    m, d, model, q, qd = case
    A_dot = centroidal.momentum_matrix_dot(model, q, qd)
    h = 1e-5
    fd = (centroidal.momentum_matrix(model, engine.integrate(model, q, qd, h))
          - centroidal.momentum_matrix(model, engine.integrate(model, q, -qd, h))) / (2 * h)
    assert np.abs(A_dot - fd).max() <= 1e-8 * np.abs(A_dot).max()
    close(centroidal.momentum_matrix_dot(model, q[2], qd[2]), A_dot[2], "one state")


def test_momentum_matrix_and_its_rate_equal_pinocchio_ccrba_and_dccrba(panda_pinocchio):
    """Pinocchio's Ag and dAg are about the moving bodies' centre of mass c'; about physai's c (the base's mass counted)
    they become S Ag and S dAg + S_dot Ag, S = [[1, 0], [(c' - c) x, 1]]."""
    m, model, pm, pd = panda_pinocchio
    q, qd = (x[0] for x in engine.random_states(model, 1, 9))
    dAg = pin.dccrba(pm, pd, q, qd).copy()
    Ag = pd.Ag.copy()
    c_moving = pin.centerOfMass(pm, pd, q, qd).copy()
    c_moving_dot = pd.vcom[0].copy()
    c, c_dot = centroidal.com(model, q), centroidal.com_jacobian(model, q) @ qd
    S, S_dot = np.eye(6), np.zeros((6, 6))
    S[3:, :3], S_dot[3:, :3] = spatial.skew(c_moving - c), spatial.skew(c_moving_dot - c_dot)
    close(centroidal.momentum_matrix(model, q), S @ Ag, "A_g")
    close(centroidal.momentum_matrix_dot(model, q, qd), S @ dAg + S_dot @ Ag, "A_g_dot")


def test_a_site_and_a_body_may_share_a_name():
    """MuJoCo lets a site and a body share a name: frame_poses(frames=None) gives each its own pose (by index), a name
    alone is the site's, and "body:NAME" / "site:NAME" choose."""
    m = mujoco.MjModel.from_xml_string("""<mujoco><worldbody><body name="hand" pos="0 0 1"><joint type="hinge"/>
        <geom size="0.1" mass="1"/><site name="hand" pos="0 1 0"/></body></worldbody></mujoco>""")
    model, d = engine.from_mujoco(m), mujoco.MjData(m)
    q = np.array([0.4])
    at(m, d, q)
    pos, _ = kinematics.frame_poses(model, q)
    close(pos, np.vstack([d.site_xpos, d.xpos[1:]]), "both frames")
    for name, expected in (("hand", d.site_xpos[0]), ("site:hand", d.site_xpos[0]), ("body:hand", d.xpos[1])):
        close(kinematics.frame_poses(model, q, [name])[0][0], expected, name)


def test_frame_motion_is_the_same_on_both_backends(case):
    """frame_velocity and frame_acceleration (spatial and classical, each reference) from the compiled Jacobian and its
    rate against the NumPy engine's stages (cvel, cacc), every site and the last body, within 1e-12 of their scale."""
    m, d, model, q, qd = case
    qdd = np.random.default_rng(2).normal(size=qd.shape)
    frames = [f"site:{name}" for name in model.site_name] + [f"body:{model.body_name[-1]}"]

    def motion():
        return [f(model, q, qd, *extra, frame, reference, **options) for frame in frames
                for reference in ("local_world_aligned", "world", "local")
                for f, extra, options in ((kinematics.frame_velocity, (), {}),
                                          (kinematics.frame_acceleration, (qdd,), {"classical": True}),
                                          (kinematics.frame_acceleration, (qdd,), {"classical": False}))]
    compiled, reference = run("native", motion), run("numpy", motion)
    for got, expected in zip(compiled, reference, strict=True):
        assert np.abs(got - expected).max() <= 1e-12 * max(1.0, np.abs(expected).max())


def test_frame_motion_of_one_state_and_bad_input(case):
    """One state (the compiled kernels' one-call path for local_world_aligned) equals that state of a batch, on both
    backends; a qdd or qd of the wrong shape or not finite is named."""
    m, d, model, q, qd = case
    qdd = np.random.default_rng(3).normal(size=qd.shape)
    name = model.frame_name[-1]
    v, a = kinematics.frame_velocity(model, q, qd, name), kinematics.frame_acceleration(model, q, qd, qdd, name)
    for backend in ("native", "numpy"):
        close(run(backend, kinematics.frame_velocity, model, q[1], qd[1], name), v[1], (backend, "velocity"))
        close(run(backend, kinematics.frame_acceleration, model, q[1], qd[1], qdd[1], name), a[1], (backend, "acceleration"))
        with pytest.raises(ShapeError, match="qdd"):
            run(backend, kinematics.frame_acceleration, model, q[0], qd[0], np.zeros(model.nv + 1), name)
        bad = qd[0].copy()
        bad[-1] = np.nan
        with pytest.raises(InvalidStateError, match=r"qd\["):
            run(backend, kinematics.frame_velocity, model, q[0], bad, name)


def test_a_point_jacobian_computes_its_path_and_names_any_zero_quaternion():
    """The compiled Jacobian kernels compute only the links from the tree's root to the point's link (cpp/smooth.h's
    path_stages): a zero quaternion elsewhere in q is still named, as the NumPy engine names it; a point on one of the
    H1's free-joint translation links (above the link that carries the pelvis, its tree's centre) takes every link's
    stages, and its Jacobian is that translation's unit column."""
    from physai.jacobians import JACOBIAN_KERNEL
    model = engine.from_mujoco(MIXED)
    q, qd = engine.random_states(model, 1, 4)
    last = model.frame_name[-1]
    link = model.frame_in_link(last)[0]
    path = set()
    while link >= 0:
        path.add(int(link))
        link = model.link_parentid[link]
    off_path = [a for a, l in zip(model.link_transforms.ball_q.tolist(), model.link_transforms.ball.tolist()) if l not in path]
    assert off_path, "the mixed-joint tree has a ball joint off the last frame's path"
    bad = q[0].copy()
    bad[off_path[0]:off_path[0] + 4] = 0.0
    for backend in ("native", "numpy"):
        with pytest.raises(InvalidStateError, match="quaternion"):
            run(backend, jacobians.frame_jacobian, model, bad, last)
        with pytest.raises(InvalidStateError, match="quaternion"):
            run(backend, kinematics.frame_velocity, model, bad, qd[0], last)
    # a ball then a slide in one body: the ball's rotation dofs turn with the slide's link, below the ball's link, so a
    # point on the ball's link takes every link's stages (no velocity left from an earlier call)
    from physai.jacobians import JACOBIAN_DOT_KERNEL
    two = engine.from_mujoco(mujoco.MjModel.from_xml_string("""<mujoco><worldbody><body pos="0 0 1"><joint type="hinge"
        axis="0 1 0"/><geom size=".1" mass="1"/><body pos="0 0 -.4"><joint type="ball"/><joint type="slide" axis="1 0 0"/>
        <geom type="capsule" size=".05 .2" mass="1"/></body></body></worldbody></mujoco>"""))
    q2, qd2 = engine.random_states(two, 2, 0, qd_max=3.0)
    first = JACOBIAN_DOT_KERNEL(two, q2[0], qd2[0], 1, np.zeros(3))
    JACOBIAN_DOT_KERNEL(two, q2[1], qd2[1], 2, np.zeros(3))
    close(JACOBIAN_DOT_KERNEL(two, q2[0], qd2[0], 1, np.zeros(3)), first, "the ball's link again")
    h1 = engine.from_mujoco("unitree_h1")
    q = engine.random_states(h1, 1, 5)[0][0]
    expected = np.zeros((6, h1.nv))
    expected[0, 0] = 1.0
    close(JACOBIAN_KERNEL(h1, q, 0, np.zeros(3)), expected, "the x translation link")
