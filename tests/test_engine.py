"""physai.engine against the teaching layer (physai.dynamics) and MuJoCo, batched and single, plus bad inputs.

Every comparison is on random states (seeded) of the bundled models and three Menagerie arms. MuJoCo runs
with constraints disabled, so rnea = qfrc_inverse + qfrc_passive, bias = qfrc_bias, M = mj_fullM and
forward dynamics = qacc for tau = qfrc_applied + qfrc_actuator + qfrc_passive.
Tolerances are 1e-12 relative to the size of the compared quantity (forward dynamics: times cond(M)).
"""

import mujoco
import numpy as np
import pytest

from physai import dynamics, engine, models
from physai.exceptions import InvalidModelError, InvalidStateError, PhysaiError, ShapeError

MODELS = ["double_pendulum", "hinge_slide", "robotstudio_so101", "franka_emika_panda", "kuka_iiwa_14"]
N = 6          # states per model and test
RTOL = 1e-12


class Robot:
    """A MuJoCo model with constraints disabled, its Tree, the compiled engine Model and random states."""

    def __init__(self, name):
        self.m = models.load(name)
        self.m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
        self.d = mujoco.MjData(self.m)
        self.tree = dynamics.tree_from_mujoco(self.m)
        self.model = engine.compile_tree(self.tree)
        nv = self.m.nv
        rng = np.random.default_rng(0)
        self.q = rng.uniform(-1.5, 1.5, (N, nv))
        self.qd = rng.uniform(-2.0, 2.0, (N, nv))
        self.qdd = rng.uniform(-3.0, 3.0, (N, nv))
        self.tau = rng.uniform(-5.0, 5.0, (N, nv))

    def mujoco(self, q, qd, qdd=None, qfrc_applied=None):
        """Load a state into MjData and run mj_forward (and mj_inverse when qdd is given)."""
        d = self.d
        d.qpos[:], d.qvel[:], d.ctrl[:] = q, qd, 0.0
        d.qfrc_applied[:] = 0.0 if qfrc_applied is None else qfrc_applied
        mujoco.mj_forward(self.m, d)
        if qdd is not None:
            d.qacc[:] = qdd
            mujoco.mj_inverse(self.m, d)
        return d


@pytest.fixture(scope="module", params=MODELS)
def robot(request):
    return Robot(request.param)


def assert_close(actual, expected, scale=None, rtol=RTOL, what=""):
    """|actual - expected| <= rtol * max(1, scale), scale defaulting to the largest |expected|."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} vs {expected.shape}"
    scale = max(1.0, np.abs(expected).max() if scale is None else scale)
    err = np.abs(actual - expected).max()
    assert err <= rtol * scale, f"{what}: max error {err:.3g} > {rtol:g} x {scale:.3g}"


# ---- against the teaching layer and MuJoCo ----

def test_rnea(robot):
    tau = engine.rnea(robot.model, robot.q, robot.qd, robot.qdd)
    assert tau.shape == (N, robot.m.nv)
    for k in range(N):
        d = robot.mujoco(robot.q[k], robot.qd[k], robot.qdd[k])
        assert_close(tau[k], d.qfrc_inverse + d.qfrc_passive, what="rnea vs MuJoCo")
        assert_close(tau[k], dynamics.rnea(robot.tree, robot.q[k], robot.qd[k], robot.qdd[k]), what="rnea vs teaching")


def test_bias_and_gravity(robot):
    c = engine.bias(robot.model, robot.q, robot.qd)
    g = engine.gravity(robot.model, robot.q)
    zero = np.zeros(robot.m.nv)
    for k in range(N):
        assert_close(c[k], robot.mujoco(robot.q[k], robot.qd[k]).qfrc_bias, what="bias vs MuJoCo qfrc_bias")
        assert_close(g[k], robot.mujoco(robot.q[k], zero).qfrc_bias, what="gravity vs MuJoCo qfrc_bias at rest")
        assert_close(c[k], dynamics.bias(robot.tree, robot.q[k], robot.qd[k]), what="bias vs teaching")
        assert_close(g[k], dynamics.gravity(robot.tree, robot.q[k]), what="gravity vs teaching")


def test_mass_matrix(robot):
    M = engine.mass_matrix(robot.model, robot.q)
    nv = robot.m.nv
    assert M.shape == (N, nv, nv)
    full = np.zeros((nv, nv))
    for k in range(N):
        robot.mujoco(robot.q[k], robot.qd[k])
        mujoco.mj_fullM(robot.m, robot.d, full)
        assert_close(M[k], full, what="M vs mj_fullM")
        assert_close(M[k], dynamics.mass_matrix(robot.tree, robot.q[k]), what="M vs teaching")


def test_forward_dynamics_and_aba(robot):
    for k in range(N):
        d = robot.mujoco(robot.q[k], robot.qd[k], qfrc_applied=robot.tau[k])
        total = d.qfrc_applied + d.qfrc_actuator + d.qfrc_passive
        scale = np.linalg.cond(engine.mass_matrix(robot.model, robot.q[k])) * max(1.0, np.abs(d.qacc).max()) / RTOL * 1e-14
        qdd = engine.forward_dynamics(robot.model, robot.q[k], robot.qd[k], total)
        assert_close(qdd, d.qacc, scale, what="forward_dynamics vs MuJoCo qacc")
        assert_close(engine.aba(robot.model, robot.q[k], robot.qd[k], total), d.qacc, scale, what="aba vs MuJoCo qacc")
        assert_close(qdd, dynamics.forward_dynamics(robot.tree, robot.q[k], robot.qd[k], total), scale, what="FD vs teaching")


def test_energy(robot):
    robot.m.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_ENERGY
    try:
        E = engine.energy(robot.model, robot.q, robot.qd)
        T = engine.kinetic_energy(robot.model, robot.q, robot.qd)
        U = engine.potential_energy(robot.model, robot.q)
        assert E.shape == T.shape == U.shape == (N,)
        for k in range(N):
            d = robot.mujoco(robot.q[k], robot.qd[k])
            assert_close(U[k], d.energy[0], what="potential vs MuJoCo energy[0]")
            assert_close(T[k], d.energy[1], what="kinetic vs MuJoCo energy[1]")
            assert_close(E[k], dynamics.energy(robot.tree, robot.q[k], robot.qd[k]), what="energy vs teaching")
    finally:
        robot.m.opt.enableflags &= ~int(mujoco.mjtEnableBit.mjENBL_ENERGY)


def test_data_keeps_poses_and_velocities(robot):
    """Data after rnea: body frames against MuJoCo's xmat/xpos, velocities against cvel moved to the engine's centre."""
    d = engine.Data(robot.model, N)
    engine.rnea(robot.model, robot.q, robot.qd, robot.qdd, data=d)
    tree_index = [i for i, b in enumerate(robot.tree.bodies) if b.joint]
    for k in range(N):
        md = robot.mujoco(robot.q[k], robot.qd[k])
        for b, i in enumerate(tree_index):
            mb = i + 1                                                        # MuJoCo body (0 is the world)
            assert_close(d.xmat[b, :, :, k], md.xmat[mb].reshape(3, 3), what="xmat")
            assert_close(d.center[b, :, k] + d.cpos[b, :, k], md.xpos[mb], what="xpos")
            # MuJoCo's cvel is (rot, lin) about the subtree com of the body's root; v_C = v_S + w x (C - S)
            w, v = md.cvel[mb, :3], md.cvel[mb, 3:]
            C, S = d.center[b, :, k], md.subtree_com[robot.m.body_rootid[mb]]
            assert_close(d.cvel[b, :, k], np.r_[w, v + np.cross(w, C - S)], what="cvel")


# ---- identities ----

def test_identities(robot):
    model, q, qd, qdd = robot.model, robot.q, robot.qd, robot.qdd
    tau = engine.rnea(model, q, qd, qdd)
    M, c = engine.mass_matrix(model, q), engine.bias(model, q, qd)
    assert_close(tau, np.einsum("nij,nj->ni", M, qdd) + c, what="rnea = M qdd + c")
    assert_close(c, engine.rnea(model, q, qd, np.zeros_like(qdd)), what="bias = rnea(q, qd, 0)")
    assert_close(engine.gravity(model, q), engine.rnea(model, q, 0 * qd, 0 * qdd), what="gravity = rnea(q, 0, 0)")
    assert_close(engine.forward_dynamics(model, q, qd, tau), qdd, np.linalg.cond(M).max() * 1e-2, what="FD inverts rnea")
    assert_close(engine.aba(model, q, qd, tau), qdd, np.linalg.cond(M).max() * 1e-2, what="ABA inverts rnea")
    T = engine.kinetic_energy(model, q, qd)
    assert_close(T, 0.5 * np.einsum("ni,nij,nj->n", qd, M, qd), what="T = 1/2 qd M qd")
    assert (np.linalg.eigvalsh(M) > 0).all()


FUNCTIONS = {   # name: number of joint arrays it takes
    "rnea": 3, "bias": 2, "gravity": 1, "mass_matrix": 1, "forward_dynamics": 3, "aba": 3,
    "energy": 2, "kinetic_energy": 2, "potential_energy": 1,
}


@pytest.mark.parametrize("name", FUNCTIONS)
def test_batched_equals_single_bit_for_bit(robot, name):
    f, k = getattr(engine, name), FUNCTIONS[name]
    args = (robot.q, robot.qd, robot.qdd)[:k]
    batched = f(robot.model, *args)
    for i in range(N):
        single = f(robot.model, *(a[i] for a in args))
        assert np.array_equal(single, batched[i]), name
        assert np.array_equal(f(robot.model, *(a[i:i + 1] for a in args))[0], batched[i])
    assert np.array_equal(f(robot.model, *(a[:3] for a in args)), batched[:3])


def test_large_batches_run_in_chunks_with_the_same_bits(robot, monkeypatch):
    from physai.engine import algorithms

    rng = np.random.default_rng(2)
    q, qd, qdd = rng.uniform(-1, 1, (3, 11, robot.m.nv))
    whole = [engine.rnea(robot.model, q, qd, qdd), engine.mass_matrix(robot.model, q), engine.energy(robot.model, q, qd),
             engine.forward_dynamics(robot.model, q, qd, qdd)]
    monkeypatch.setattr(algorithms, "CHUNK", 4)                             # 11 states -> chunks of 3, 4, 4
    chunked = [engine.rnea(robot.model, q, qd, qdd), engine.mass_matrix(robot.model, q), engine.energy(robot.model, q, qd),
               engine.forward_dynamics(robot.model, q, qd, qdd)]
    for a, b in zip(whole, chunked):
        assert np.array_equal(a, b)


def test_single_state_is_shared_by_a_batch(robot):
    q0 = robot.q[0]
    tau = engine.rnea(robot.model, q0, robot.qd, robot.qdd)
    assert np.array_equal(tau[2], engine.rnea(robot.model, q0, robot.qd[2], robot.qdd[2]))
    assert np.isscalar(engine.energy(robot.model, q0, robot.qd[0]))


# ---- the compiled model ----

def test_compile_fuses_welded_bodies():
    robot = Robot("franka_emika_panda")
    tree, model = robot.tree, robot.model
    assert (len(tree.bodies), model.nbody, model.nv) == (12, 9, 9)
    assert all(p < i for i, p in enumerate(model.body_parentid))
    total = sum(b.mass for b in tree.bodies)
    assert model.body_mass.sum() + model.static_mass == pytest.approx(total, rel=1e-14)
    assert model.static_mass == tree.bodies[0].mass                          # link0 is welded to the world
    hand = [b.name for b in tree.bodies].index("hand")
    assert model.tree_bodyid[hand] == [b.name for b in tree.bodies].index("link7") - 1   # fused into link7
    assert model.body_name == tuple(b.name for b in tree.bodies if b.joint)
    with pytest.raises(ValueError):
        model.body_mass[0] = 1.0                                              # the Model is read-only


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
    assert (model.nbody, list(model.body_parentid), model.static_mass) == (2, [-1, 0], 2.0)
    q, qd, qdd = rng.uniform(-1, 1, (3, 2))
    assert_close(engine.rnea(model, q, qd, qdd), dynamics.rnea(tree, q, qd, qdd))
    assert_close(engine.mass_matrix(model, q), dynamics.mass_matrix(tree, q))
    assert_close(engine.energy(model, q, qd), dynamics.energy(tree, q, qd))
    assert_close(engine.potential_energy(model, q), dynamics.potential_energy(tree, q))


def test_far_from_the_origin_keeps_its_digits():
    """Joint forces do not depend on where the robot stands; spatial quantities about the root keep them exact."""
    robot = Robot("franka_emika_panda")
    moved = robot.tree
    far = dynamics.Tree([dynamics.Body(b.parent, b.pos + (1e6 if b.parent < 0 else 0), b.rot, b.joint, b.axis, b.anchor,
                                       b.mass, b.com, b.inertia, b.name, b.ref) for b in moved.bodies],
                        moved.armature, moved.gravity)
    args = (robot.q, robot.qd, robot.qdd)
    near_tau, far_tau = engine.rnea(robot.model, *args), engine.rnea(engine.compile_tree(far), *args)
    assert_close(far_tau, near_tau, rtol=1e-14)
    # the world-origin teaching layer loses about 1e6^2 * eps relative to the torques
    err = np.abs(dynamics.rnea(far, robot.q[0], robot.qd[0], robot.qdd[0]) - near_tau[0]).max()
    assert err > 1e-9


# ---- bad inputs ----

@pytest.fixture(scope="module")
def pendulum():
    return engine.compile_tree(dynamics.tree_from_mujoco(models.load("double_pendulum")))


def test_wrong_length(pendulum):
    with pytest.raises(ShapeError, match=r"q has 3 entries, the model needs 2"):
        engine.rnea(pendulum, [0, 0, 0], [0, 0], [0, 0])
    with pytest.raises(ShapeError, match=r"qdd has 1 entry, the model needs 2"):
        engine.rnea(pendulum, [0, 0], [0, 0], [0])


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
    with pytest.raises(ShapeError, match=r"q must be an array"):
        engine.gravity(pendulum, ["a", "b"])


def test_wrong_model_or_data(pendulum):
    tree = dynamics.tree_from_mujoco(models.load("double_pendulum"))
    with pytest.raises(InvalidModelError, match=r"model must be a physai.engine.Model"):
        engine.rnea(tree, [0, 0], [0, 0], [0, 0])
    with pytest.raises(InvalidModelError, match=r"needs a physai.dynamics.Tree"):
        engine.compile_tree("double_pendulum")
    other = engine.compile_tree(dynamics.tree_from_mujoco(models.load("double_pendulum")))
    with pytest.raises(InvalidModelError, match="data was made for another Model"):
        engine.rnea(pendulum, [0, 0], [0, 0], [0, 0], data=engine.Data(other, 1))
    with pytest.raises(ShapeError, match="q must be real numbers"):
        engine.gravity(pendulum, [1j, 0])
    with pytest.raises(ShapeError, match=r"Data for 3 states"):
        engine.rnea(pendulum, np.zeros((3, 2)), np.zeros((3, 2)), np.zeros((3, 2)), data=engine.Data(pendulum, 1))
    d = engine.Data(pendulum, 3)
    engine.rnea(pendulum, np.zeros((3, 2)), np.zeros((3, 2)), np.zeros((3, 2)), data=d)
    assert d.cvel.shape == (2, 6, 3) and d.cfrc.shape == (2, 6, 3)


def test_singular_mass_matrix():
    B = dynamics.Body
    tree = dynamics.Tree([B(-1, [0, 0, 0], np.eye(3), "slide", [1, 0, 0], None, 0.0, [0, 0, 0], np.zeros((3, 3)))], armature=[0.0])
    with pytest.raises(InvalidModelError, match=r"singular"):
        engine.forward_dynamics(engine.compile_tree(tree), [0.0], [0.0], [1.0])


def test_errors_are_physai_errors(pendulum):
    with pytest.raises(PhysaiError):
        engine.energy(pendulum, [0, 0], [0, 0, 0])
