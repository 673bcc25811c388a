"""physai.urdf: URDF robots as Trees, checked against Pinocchio's URDF parser and MuJoCo's URDF import.

The example-robot-data arms are compared with pinocchio.buildModelFromUrdf (joints matched by name); a small
URDF with rotated inertial frames on moving and welded links is compared with Pinocchio and with MuJoCo,
which compiles the same file.
"""

import tracemalloc
from importlib.metadata import distribution
from pathlib import Path

import mujoco
import numpy as np
import pinocchio as pin
import pytest

from physai import dynamics as dyn
from physai import engine
from physai.exceptions import InvalidModelError, UnsupportedModelError
from physai.urdf import rpy_to_mat, tree_from_urdf

ROBOTS = Path(distribution("example-robot-data").locate_file("cmeel.prefix/share/example-robot-data/robots"))
ROTATED = Path(__file__).parent / "data" / "rotated_inertials.urdf"
ARMS = ["ur_description/urdf/ur5_robot.urdf", "panda_description/urdf/panda.urdf", "so_arm_description/urdf/so101.urdf",
        "z1_description/urdf/z1.urdf", "xarm_description/urdf/xarm7.urdf"]


class PinocchioTwin:
    """Pinocchio's model of the same URDF, and the map from physai's joint vectors to Pinocchio's."""

    def __init__(self, path: Path, tree: dyn.Tree):
        self.model = pin.buildModelFromUrdf(str(path))
        self.data = self.model.createData()
        self.joints = [self.model.joints[self.model.getJointId(b.name)] for b in tree.bodies if b.joint]

    def q(self, q):
        """physai's q as Pinocchio's: a continuous joint is (cos q, sin q)."""
        out = np.zeros(self.model.nq)
        for j, qi in zip(self.joints, q):
            out[j.idx_q:j.idx_q + j.nq] = [np.cos(qi), np.sin(qi)] if j.nq == 2 else qi
        return out

    def v(self, v):
        out = np.zeros(self.model.nv)
        out[[j.idx_v for j in self.joints]] = v
        return out

    def back(self, x):
        """A Pinocchio vector (nv,) or matrix (nv, nv) in physai's joint order."""
        idx = [j.idx_v for j in self.joints]
        return x[idx] if x.ndim == 1 else x[np.ix_(idx, idx)]


def compare_with_pinocchio(path: Path, tree: dyn.Tree, states: int = 20) -> float:
    twin, rng, worst = PinocchioTwin(path, tree), np.random.default_rng(0), 0.0
    for _ in range(states):
        q, qd, qdd = rng.uniform(-1, 1, tree.nv), rng.uniform(-1, 1, tree.nv), rng.uniform(-5, 5, tree.nv)
        Q, V, A = twin.q(q), twin.v(qd), twin.v(qdd)
        M = pin.crba(twin.model, twin.data, Q)
        M = np.triu(M) + np.triu(M, 1).T                # Pinocchio fills the upper triangle only
        g = pin.computeGeneralizedGravity(twin.model, twin.data, Q)
        tau = pin.rnea(twin.model, twin.data, Q, V, A)
        scale = max(1.0, np.abs(tau).max())
        worst = max(worst, np.abs(dyn.rnea(tree, q, qd, qdd) - twin.back(tau)).max() / scale,
                    np.abs(dyn.mass_matrix(tree, q) - twin.back(M)).max(), np.abs(dyn.gravity(tree, q) - twin.back(g)).max() / scale)
    return worst


@pytest.mark.parametrize("arm", ARMS, ids=[Path(a).stem for a in ARMS])
def test_example_robot_data_arms_match_pinocchio(arm):
    path = ROBOTS / arm
    tree = tree_from_urdf(path, independent_mimic=True)
    assert compare_with_pinocchio(path, tree) <= 1e-12


def test_rotated_inertial_frames_match_pinocchio_and_mujoco():
    tree = tree_from_urdf(ROTATED)
    assert [b.name for b in tree.bodies] == ["base", "yaw", "pitch", "tool", "slide"]
    assert [b.joint for b in tree.bodies] == ["", "hinge", "hinge", "", "slide"]
    np.testing.assert_array_equal(tree.damping, [0.0, 0.3, 0.0])
    assert compare_with_pinocchio(ROTATED, tree) <= 1e-12
    m = mujoco.MjModel.from_xml_path(str(ROTATED))       # MuJoCo's own URDF import of the same file
    m.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_ENERGY
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT   # the slide's limit would push back otherwise
    d, rng = mujoco.MjData(m), np.random.default_rng(1)
    for _ in range(20):
        q, qd, qdd = rng.uniform(-1, 1, 3) * [1, 1, 0.02], rng.uniform(-1, 1, 3), rng.uniform(-5, 5, 3)
        d.qpos[:], d.qvel[:], d.qacc[:] = q, qd, qdd
        mujoco.mj_inverse(m, d)
        np.testing.assert_allclose(dyn.rnea(tree, q, qd, qdd), d.qfrc_inverse + d.qfrc_passive, rtol=0, atol=1e-12)
        M = np.zeros((3, 3))
        mujoco.mj_fullM(m, d, M)
        np.testing.assert_allclose(dyn.mass_matrix(tree, q), M, rtol=0, atol=1e-12)
        mujoco.mj_forward(m, d)
        # MuJoCo folds the root link, welded to the world, into the world body: its constant potential is not counted
        root = -tree.bodies[0].mass * tree.gravity @ tree.bodies[0].com
        assert abs(dyn.energy(tree, q, qd) - root - d.energy.sum()) <= 1e-12


def test_dropping_the_inertial_rpy_would_be_caught():
    """The comparisons above can fail: the same robot with its inertial rpy ignored is off by far more than 1e-12."""
    text = ROTATED.read_text()
    flat = text.replace('rpy="0.4 -0.3 0.7"', 'rpy="0 0 0"').replace('rpy="0.9 0.2 0.5"', 'rpy="0 0 0"')
    assert compare_with_pinocchio(ROTATED, tree_from_urdf(flat)) > 1e-4


def test_rpy_is_z_y_x():
    r, p, y = 0.3, -0.5, 1.1
    Rx = np.array([[1, 0, 0], [0, np.cos(r), -np.sin(r)], [0, np.sin(r), np.cos(r)]])
    Ry = np.array([[np.cos(p), 0, np.sin(p)], [0, 1, 0], [-np.sin(p), 0, np.cos(p)]])
    Rz = np.array([[np.cos(y), -np.sin(y), 0], [np.sin(y), np.cos(y), 0], [0, 0, 1]])
    np.testing.assert_allclose(rpy_to_mat([r, p, y]), Rz @ Ry @ Rx, atol=1e-15)
    np.testing.assert_allclose(rpy_to_mat([r, p, y]), pin.rpy.rpyToMatrix(r, p, y), atol=1e-15)


URDF = '<robot name="r"><link name="a"/><link name="b"/>{joint}</robot>'


@pytest.mark.parametrize("urdf, error, message", [
    (URDF.format(joint='<joint name="j" type="floating"><parent link="a"/><child link="b"/></joint>'),
     UnsupportedModelError, "'j' is a floating joint"),
    (URDF.format(joint='<joint name="j" type="revolute"><parent link="a"/><child link="b"/><mimic joint="k"/></joint>'),
     UnsupportedModelError, "mimics another joint.*independent_mimic=True"),
    (URDF.format(joint='<joint name="j" type="fixed"><parent link="a"/><child link="c"/></joint>'),
     InvalidModelError, "names link 'c', which the URDF does not define"),
    (URDF.format(joint=""), UnsupportedModelError, "2 root links"),
    (URDF.format(joint='<joint name="j" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 0"/></joint>'),
     InvalidModelError, "zero axis"),
    ("<mujoco/>", InvalidModelError, "root element is <robot>"),
    ("<robot", InvalidModelError, "not a valid URDF"),
    ("no/such/file.urdf", InvalidModelError, "cannot read URDF file"),
])
def test_bad_urdf_is_refused_with_a_reason(urdf, error, message):
    with pytest.raises(error, match=message):
        tree_from_urdf(urdf)


def joint(name, parent, child, kind="revolute", extra=""):
    return f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>{extra}</joint>'


def robot(links, *joints, inertial=""):
    """A URDF of one link per character of `links`, the last one holding `inertial`."""
    body = "".join(f"<link name={n!r}>{inertial if k == len(links) - 1 else ''}</link>" for k, n in enumerate(links))
    return f'<robot name="r">{body}{"".join(joints)}</robot>'


@pytest.mark.parametrize("urdf, message", [
    (robot("ab", joint("j1", "a", "b"), joint("j2", "a", "b")),             # was built twice: nv = 2 for one joint
     r"link 'b' is the child of 2 joints \('j1', 'j2'\); in a URDF every link but the root is the child of exactly one joint"),
    (robot("abc", joint("j1", "a", "c"), joint("j2", "b", "c")), r"link 'c' is the child of 2 joints \('j1', 'j2'\)"),
    (robot("aab", joint("j", "a", "b")), "the URDF has two links named 'a'; link names must be unique"),
    (robot("abc", joint("j", "a", "b"), joint("j", "b", "c")), "the URDF has two joints named 'j'; joint names must be unique"),
    ('<robot name="r"><link/></robot>', "<link> number 1 has no name; every URDF link needs a unique name"),
    (robot("rab", joint("j1", "r", "a"), joint("j2", "a", "b"), joint("j3", "b", "a")),   # was a RecursionError
     r"the joints 'j2', 'j3' form a closed loop of links 'a' -> 'b' -> 'a'; a URDF is a tree .*cannot build kinematic loops"),
    (robot("rab", joint("j2", "a", "b"), joint("j3", "b", "a")),           # a loop beside the root: was silently dropped
     r"the joints 'j2', 'j3' form a closed loop of links 'a' -> 'b' -> 'a'"),
    (robot("ra", joint("j1", "r", "a"), joint("j2", "a", "a")), r"the joints 'j2' form a closed loop of links 'a' -> 'a'"),
])
def test_a_urdf_that_is_not_a_tree_is_refused(urdf, message):
    with pytest.raises(InvalidModelError, match=message):
        tree_from_urdf(urdf)


@pytest.mark.parametrize("inertial, extra, message", [
    ('<inertial><mass value="heavy"/></inertial>', "",
     r"link 'b': <mass value='heavy'> is not a finite number; expected a finite number \[kg\]"),
    ("<inertial><mass/></inertial>", "", r'link \'b\': <mass> has no value; expected <mass value="..."/> with a finite number \[kg\]'),
    ('<inertial><mass value="1"/><inertia ixx="big"/></inertial>', "", r"link 'b': <inertia ixx='big'> is not a finite number"),
    ('<inertial><mass value="inf"/></inertial>', "", r"link 'b': <mass value='inf'> is not a finite number"),
    ('<inertial><origin xyz="0 0 x"/></inertial>', "",
     r"link 'b': <origin xyz='0 0 x'> is not 3 finite numbers; expected 3 finite numbers separated by spaces \[m\]"),
    ("", '<origin xyz="1 2"/>', r"joint 'j': <origin xyz='1 2'> is not 3 finite numbers"),
    ("", '<origin rpy="nan 0 0"/>', r"joint 'j': <origin rpy='nan 0 0'> is not 3 finite numbers; .* \[rad\]"),
    ("", '<axis xyz="0 0 one"/>', r"joint 'j': <axis xyz='0 0 one'> is not 3 finite numbers"),
    ("", '<dynamics damping="lots"/>', r"joint 'j': <dynamics damping='lots'> is not a finite number; expected a finite number"),
])
def test_missing_or_non_numeric_values_name_the_link_or_joint(inertial, extra, message):
    with pytest.raises(InvalidModelError, match=message):
        tree_from_urdf(robot("ab", joint("j", "a", "b", extra=extra), inertial=inertial))


@pytest.mark.parametrize("axis, expected", [("1e300 1e300 0", [1, 1, 0]), ("1e-320 0 0", [1, 0, 0]), ("0 0 -3", [0, 0, -1])])
def test_an_axis_is_normalized_without_overflow(axis, expected):
    """A huge or subnormal axis is a direction like any other (its norm would overflow to inf or underflow to 0)."""
    urdf = robot("ab", joint("j", "a", "b", extra=f'<axis xyz="{axis}"/>'), inertial=INERTIAL)
    unit = np.array(expected, dtype=float) / np.linalg.norm(expected)
    np.testing.assert_allclose(tree_from_urdf(urdf).bodies[1].axis, unit, rtol=1e-15)
    np.testing.assert_allclose(engine.from_urdf(urdf).jnt_axis[0], unit, rtol=1e-15)


def test_a_zero_axis_is_named():
    with pytest.raises(InvalidModelError, match=r"joint 'j' has a zero axis \(<axis xyz='0 0 0'>\); expected a direction"):
        engine.from_urdf(robot("ab", joint("j", "a", "b", extra='<axis xyz="0 -0 0"/>'.replace("0 -0 0", "0 0 0"))))


INERTIAL = '<inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01"/></inertial>'


def test_urdf_bytes_are_read_as_the_document():
    text_tree, bytes_tree = tree_from_urdf(ROTATED), tree_from_urdf(ROTATED.read_bytes())
    assert [b.name for b in bytes_tree.bodies] == [b.name for b in text_tree.bodies]
    q = np.array([0.3, -0.5, 0.01])
    np.testing.assert_array_equal(dyn.mass_matrix(bytes_tree, q), dyn.mass_matrix(text_tree, q))
    latin1 = '<?xml version="1.0" encoding="ISO-8859-1"?><robot name="r"><link name="bäse"/></robot>'.encode("latin-1")
    assert tree_from_urdf(latin1).bodies[0].name == "bäse"   # decoded by the encoding the document declares
    with pytest.raises(InvalidModelError, match="not a valid URDF: .*bytes are read as the URDF document itself"):
        tree_from_urdf(b"robot.urdf")


def test_a_urdf_is_a_path_text_or_bytes():
    with pytest.raises(InvalidModelError, match=r"a URDF is given as a path \(str or Path\), its text \(str\) or its bytes, got int"):
        tree_from_urdf(42)


def test_a_long_chain_needs_no_recursion():
    n = 3000                                              # deeper than Python's recursion limit
    links = [f"l{i}" for i in range(n)]
    joints = [joint(f"j{i}", links[i - 1], links[i], extra='<axis xyz="0 0 1"/>') for i in range(1, n)]
    urdf = f'<robot name="r">{"".join(f"<link name={n!r}/>" for n in links)}{"".join(joints)}</robot>'
    tree = tree_from_urdf(urdf)
    assert tree.nv == n - 1 and [b.parent for b in tree.bodies[:4]] == [-1, 0, 1, 2]


def chain_urdf(n: int) -> str:
    """A URDF chain of n + 1 links with masses and n revolute joints."""
    inertial = '<inertial><origin xyz="0 0 0.05"/><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01"/></inertial>'
    links = "".join(f'<link name="l{i}">{inertial}</link>' for i in range(n + 1))
    joints = "".join(joint(f"j{i}", f"l{i - 1}", f"l{i}", extra='<origin xyz="0 0 0.1"/><axis xyz="0 1 0"/>')
                     for i in range(1, n + 1))
    return f'<robot name="chain">{links}{joints}</robot>'


def peak_memory(build, urdf: str) -> int:
    """The peak of the memory Python allocates [bytes] while build(urdf) runs (tracemalloc)."""
    tracemalloc.start()
    try:
        build(urdf)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("build", [engine.from_urdf, tree_from_urdf], ids=["from_urdf", "tree_from_urdf"])
def test_building_a_chain_is_linear_in_its_links(build):
    """Four times the links take about four times the memory to build (3.98x seen), not sixteen: no (nv, nv) array
    and no per-link walk to the root (a chain of 4,000 joints took 3.8 s and 20,000 ran out of 8 GB; the dense
    (nv, nv) arrays of the mass matrix's pattern are made on first use). Memory, not time: deterministic."""
    small, large = peak_memory(build, chain_urdf(500)), peak_memory(build, chain_urdf(2000))
    assert large < 6 * small, f"building 2000 links took {large / small:.1f}x the memory of 500"


def test_the_dense_dof_arrays_are_made_on_first_use():
    """A built Model holds no (nv, nv) array; dof_ancestor, made when asked for (and held in engine.model.per_model's
    store, not in the Model), is each dof's path to the root."""
    model = engine.from_mujoco(mujoco.MjModel.from_xml_path(str(Path(__file__).parent / "data" / "mixed_joints.xml")))
    dense = {"dof_ancestor", "dof_Mrow", "dof_Mcol", "dof_Mmask", "dof_turns", "geom_dofs"}
    assert not dense & set(vars(model))
    expected = np.zeros((model.nv, model.nv), dtype=bool)
    for j in range(model.nv):
        i = j
        while i >= 0:
            expected[i, j], i = True, model.dof_parentid[i]
    np.testing.assert_array_equal(model.dof_ancestor, expected)
    np.testing.assert_array_equal(model.dof_Mmask[:, :, 0], expected | expected.T)
    assert not model.dof_ancestor.flags.writeable and model.dof_ancestor.flags.c_contiguous
    assert not dense & set(vars(model))
