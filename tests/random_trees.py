"""Random kinematic trees as MJCF text, drawn with hypothesis, for property tests against MuJoCo.

    spec = data.draw(random_trees.trees())        # inside a @given test (st.data())
    m = mujoco.MjModel.from_xml_string(random_trees.mjcf(spec))

A TreeSpec is plain data: bodies in MuJoCo's depth-first order, each with its parent, pose, joint (or none)
and full inertia, plus the gravity vector. mjcf() nests the bodies and writes every number with repr, so
MuJoCo reads back exactly the doubles that were drawn. trees() draws hinges, slides and welds, one joint per
body (the lesson's trees); trees(joints=ALL_JOINTS, max_joints=3) also draws ball joints, several joints in one
body, and a free joint on bodies whose parent is the world (for physai.engine, which takes every joint type).
"""

from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

JOINTS = ("hinge", "slide", "")        # "" is a weld: the body is fixed to its parent
ALL_JOINTS = ("hinge", "slide", "ball", "free", "")
QPOS_SIZE = {"hinge": 1, "slide": 1, "ball": 4, "free": 7, "": 0}
DOF_SIZE = {"hinge": 1, "slide": 1, "ball": 3, "free": 6, "": 0}


@dataclass
class JointSpec:
    kind: str                          # one of JOINTS
    axis: tuple                        # (3,) unit vector in the body frame
    anchor: tuple                      # (3,) point on the axis in the body frame [m] (MJCF joint pos)
    ref: float                         # joint position at which the body has its MJCF pose [rad | m]
    armature: float                    # rotor inertia [kg m^2 | kg], >= 0


@dataclass
class BodySpec:
    parent: int                        # index of the parent in TreeSpec.bodies, -1 for the world
    pos: tuple                         # (3,) origin in the parent's frame [m]
    quat: tuple                        # (4,) unit quaternion (w, x, y, z), orientation in the parent's frame
    joint: JointSpec | None            # None: welded
    mass: float                        # [kg] > 0
    com: tuple                         # (3,) centre of mass in the body frame [m]
    inertia: tuple                     # (ixx, iyy, izz, ixy, ixz, iyz) about the com, body frame (MJCF fullinertia)
    more: list = field(default_factory=list)   # further joints of the body after `joint`, in order

    @property
    def joints(self) -> list:
        return ([self.joint] if self.joint else []) + self.more


@dataclass
class TreeSpec:
    bodies: list                       # parents before children, in MuJoCo's depth-first body order
    gravity: tuple                     # (3,) [m/s^2]

    @property
    def nq(self) -> int:
        return sum(QPOS_SIZE[j.kind] for b in self.bodies for j in b.joints)

    @property
    def nv(self) -> int:
        return sum(DOF_SIZE[j.kind] for b in self.bodies for j in b.joints)


def _finite(lo: float, hi: float):
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False, allow_subnormal=False)


def _vec3(lo: float = -0.5, hi: float = 0.5):
    return st.tuples(_finite(lo, hi), _finite(lo, hi), _finite(lo, hi))


@st.composite
def _unit(draw, dim: int) -> tuple:
    """A unit vector: a normalized draw from the cube, redrawn when too short to normalize well."""
    v = np.array(draw(st.tuples(*[_finite(-1.0, 1.0)] * dim).filter(lambda v: np.linalg.norm(v) > 0.1)))
    return tuple(v / np.linalg.norm(v))


@st.composite
def _rotation(draw) -> np.ndarray:
    w, x, y, z = draw(_unit(4))
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


@st.composite
def full_inertia(draw) -> tuple:
    """(ixx, iyy, izz, ixy, ixz, iyz) of R diag(a, b, c) R^T with a random rotation R and principal moments that
    keep the triangle rule with margin: c lies strictly between |a - b| and a + b."""
    a, b = draw(_finite(0.01, 0.5)), draw(_finite(0.01, 0.5))
    t = draw(_finite(0.1, 0.9))
    c = abs(a - b) + t * (a + b - abs(a - b))
    R = draw(_rotation())
    I = R @ np.diag([a, b, c]) @ R.T
    return (I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2])


@st.composite
def _joint(draw, kind: str) -> JointSpec | None:
    if not kind:
        return None
    if kind == "free":
        return JointSpec(kind, (0.0, 0.0, 1.0), (0.0, 0.0, 0.0), 0.0, draw(st.one_of(st.just(0.0), _finite(0.0, 0.5))))
    ref = 0.0 if kind == "ball" else draw(_finite(-1.0, 1.0) if kind == "hinge" else _finite(-0.2, 0.2))
    armature = draw(st.one_of(st.just(0.0), _finite(0.0, 0.5)))
    return JointSpec(kind, draw(_unit(3)), draw(_vec3()), ref, armature)


@st.composite
def trees(draw, max_bodies: int = 6, joints: tuple = JOINTS, max_joints: int = 1) -> TreeSpec:
    """A random tree of 1..max_bodies bodies: each body's parent is the world or any earlier body (branching),
    its joint one of `joints` (at least one body moves), with a random pose, joint anchor away from the body
    origin, armature, mass, centre of mass and full inertia; gravity 9.81 m/s^2 in a random direction.
    With max_joints > 1 a body may carry up to that many joints (hinge, slide, ball; never a free joint); a
    free joint is drawn only for bodies whose parent is the world, and alone."""
    n = draw(st.integers(1, max_bodies))
    parents = [draw(st.integers(-1, i - 1)) for i in range(n)]
    kinds = [draw(st.sampled_from([k for k in joints if k != "free" or p < 0])) for p in parents]
    if not any(kinds):
        kinds[draw(st.integers(0, n - 1))] = next(k for k in joints if k and k != "free")
    more = [_more_joints(draw, joints, max_joints - 1) if k in ("hinge", "slide") else [] for k in kinds]
    bodies = [BodySpec(p, draw(_vec3()), draw(_unit(4)), draw(_joint(k)), draw(_finite(0.1, 2.0)), draw(_vec3(-0.2, 0.2)),
                       draw(full_inertia()), extra) for p, k, extra in zip(parents, kinds, more)]
    gravity = tuple(9.81 * np.array(draw(_unit(3))))
    return TreeSpec(_depth_first(bodies), gravity)


def _more_joints(draw, joints: tuple, most: int) -> list:
    """Joints after a body's first: hinges and slides, the last may be a ball (MuJoCo allows no rotation after a ball)."""
    kinds = [draw(st.sampled_from([k for k in joints if k in ("hinge", "slide")])) for _ in range(draw(st.integers(0, most)))]
    if kinds and "ball" in joints and draw(st.booleans()):
        kinds[-1] = "ball"
    return [draw(_joint(k)) for k in kinds]


def _depth_first(bodies: list) -> list:
    """The bodies renumbered in the order MuJoCo gives nested bodies: depth first, children in list order."""
    order = []

    def visit(parent: int):
        for i, b in enumerate(bodies):
            if b.parent == parent:
                order.append(i)
                visit(i)
    visit(-1)
    new = {old: k for k, old in enumerate(order)}
    new[-1] = -1
    return [BodySpec(**{**vars(bodies[i]), "parent": new[bodies[i].parent]}) for i in order]


def _num(values) -> str:
    return " ".join(repr(float(v)) for v in values)


def _joint_xml(j: JointSpec, name: str) -> str:
    if j.kind == "free":
        return f'<joint name="{name}" type="free" armature="{j.armature!r}"/>'
    if j.kind == "ball":
        return f'<joint name="{name}" type="ball" pos="{_num(j.anchor)}" armature="{j.armature!r}"/>'
    return (f'<joint name="{name}" type="{j.kind}" axis="{_num(j.axis)}" pos="{_num(j.anchor)}" ref="{j.ref!r}" '
            f'armature="{j.armature!r}"/>')


def mjcf(spec: TreeSpec) -> str:
    """MJCF text of the tree: angles in radians, no geoms (inertias come from <inertial fullinertia>)."""
    lines = ['<mujoco model="random_tree">', '  <compiler angle="radian"/>',
             f'  <option gravity="{_num(spec.gravity)}"/>', "  <worldbody>"]

    def body(i: int, depth: int):
        b, pad = spec.bodies[i], "  " * depth
        lines.append(f'{pad}<body name="b{i}" pos="{_num(b.pos)}" quat="{_num(b.quat)}">')
        for k, j in enumerate(b.joints):
            lines.append(f"{pad}  {_joint_xml(j, f'j{i}_{k}')}")
        lines.append(f'{pad}  <inertial pos="{_num(b.com)}" mass="{b.mass!r}" fullinertia="{_num(b.inertia)}"/>')
        for k, c in enumerate(spec.bodies):
            if c.parent == i:
                body(k, depth + 1)
        lines.append(f"{pad}</body>")
    for i, b in enumerate(spec.bodies):
        if b.parent == -1:
            body(i, 2)
    lines += ["  </worldbody>", "</mujoco>"]
    return "\n".join(lines)
