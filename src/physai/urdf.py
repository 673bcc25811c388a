"""URDF robots as physai Trees: every link a Body, every joint its parent joint. Builds, computes nothing.

    tree = tree_from_urdf("ur5_robot.urdf")            # or the XML text itself
    tree.bodies[i].name                                 # the child link's joint name ("" welded: the link name)

What a URDF says, and where it goes:
    joint origin xyz, rpy   -> Body.pos, Body.rot (the child link's frame in the parent link's frame)
    joint axis              -> Body.axis, normalized (default 1 0 0); Body.anchor = 0: the axis passes the link origin
    revolute, continuous    -> "hinge";  prismatic -> "slide";  fixed -> "" (welded)
    inertial origin xyz     -> Body.com
    inertial origin rpy     -> Body.inertia = R I R^T, the inertia turned into the link frame (kept, never dropped)
    dynamics damping        -> Tree.damping
The root link is welded to the world at the origin. URDF has no rotor inertia: pass `armature` (one entry per
moving joint, in Tree order) if the robot has gearboxes. floating and planar joints are refused; mimic joints
too, unless independent_mimic=True makes each an independent joint (what Pinocchio's buildModelFromUrdf does).
"""

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from physai.dynamics import Body, Tree
from physai.exceptions import InvalidModelError, UnsupportedModelError

KINDS = {"revolute": "hinge", "continuous": "hinge", "prismatic": "slide", "fixed": ""}


def rpy_to_mat(rpy) -> np.ndarray:
    """Rotation matrix of URDF roll-pitch-yaw angles [rad]: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def tree_from_urdf(urdf: str | Path, armature=None, gravity=(0.0, 0.0, -9.81), independent_mimic: bool = False) -> Tree:
    """The Tree of a URDF file (path) or URDF text; bodies in depth-first order from the root link.

    armature: (nv,) rotor inertia per moving joint [kg m^2 | kg], default zero; gravity: (3,) [m/s^2];
    independent_mimic: accept mimic joints as independent joints instead of refusing them.
    Raises UnsupportedModelError (floating, planar or mimic joints; several roots) or InvalidModelError.
    """
    robot = _parse(urdf)
    links = {link.get("name"): link for link in robot.findall("link")}
    joints = robot.findall("joint")                     # direct children: <transmission> holds <joint> too
    children: dict[str, list] = {name: [] for name in links}
    parent_of = {}
    for j in joints:
        parent, child = _attr(j, "parent", "link"), _attr(j, "child", "link")
        for link in (parent, child):
            if link not in links:
                raise InvalidModelError(f"joint {j.get('name')!r} names link {link!r}, which the URDF does not define")
        children[parent].append(j)
        parent_of[child] = j
    roots = [name for name in links if name not in parent_of]
    if len(roots) != 1:
        raise UnsupportedModelError(f"the URDF has {len(roots)} root links {roots}; physai needs one tree with one root")

    bodies: list[Body] = []
    damping: list[float] = []

    def add(link_name: str, joint, parent: int) -> None:
        index = len(bodies)
        bodies.append(_body(links[link_name], joint, parent, independent_mimic))
        if joint is not None and bodies[-1].joint:
            dyn = joint.find("dynamics")
            damping.append(float(dyn.get("damping", 0.0)) if dyn is not None else 0.0)
        for j in children[link_name]:
            add(_attr(j, "child", "link"), j, index)

    add(roots[0], None, -1)
    nv = len(damping)
    return Tree(bodies, np.zeros(nv) if armature is None else armature, gravity, np.array(damping))


def _parse(urdf: str | Path) -> ET.Element:
    text = str(urdf)
    try:
        root = ET.fromstring(text) if text.lstrip().startswith("<") else ET.parse(text).getroot()
    except ET.ParseError as exc:
        raise InvalidModelError(f"not a valid URDF: {exc}") from None
    except OSError as exc:
        raise InvalidModelError(f"cannot read URDF file {text!r}: {exc}") from None
    if root.tag != "robot":
        raise InvalidModelError(f"a URDF's root element is <robot>, this one is <{root.tag}>")
    return root


def _attr(element: ET.Element, tag: str, name: str) -> str:
    child = element.find(tag)
    if child is None or child.get(name) is None:
        raise InvalidModelError(f"joint {element.get('name')!r} has no <{tag} {name}=...>")
    return child.get(name)


def _origin(element: ET.Element | None) -> tuple[np.ndarray, np.ndarray]:
    """(xyz [m], rotation) of an element's <origin>, identity when absent."""
    origin = element.find("origin") if element is not None else None
    if origin is None:
        return np.zeros(3), np.eye(3)
    return _floats(origin.get("xyz", "0 0 0")), rpy_to_mat(_floats(origin.get("rpy", "0 0 0")))


def _floats(text: str, count: int = 3) -> np.ndarray:
    values = np.array(text.split(), dtype=float)
    if values.shape != (count,):
        raise InvalidModelError(f"expected {count} numbers, got {text!r}")
    return values


def _body(link: ET.Element, joint: ET.Element | None, parent: int, independent_mimic: bool) -> Body:
    """The Body of `link`, attached by `joint` (None for the root, welded to the world)."""
    kind, axis, pos, rot, name = "", None, np.zeros(3), np.eye(3), link.get("name")
    if joint is not None:
        jtype = joint.get("type")
        if jtype not in KINDS:
            raise UnsupportedModelError(f"joint {joint.get('name')!r} is a {jtype} joint; physai supports "
                                        "revolute, continuous, prismatic and fixed joints")
        if joint.find("mimic") is not None and not independent_mimic:
            raise UnsupportedModelError(f"joint {joint.get('name')!r} mimics another joint; physai has no mimic joints "
                                        "(independent_mimic=True makes it an independent joint, as Pinocchio does)")
        kind, (pos, rot) = KINDS[jtype], _origin(joint)
        if kind:
            axis_el = joint.find("axis")
            axis = _floats(axis_el.get("xyz", "1 0 0")) if axis_el is not None else np.array([1.0, 0.0, 0.0])
            if np.linalg.norm(axis) == 0:
                raise InvalidModelError(f"joint {joint.get('name')!r} has a zero axis")
            axis, name = axis / np.linalg.norm(axis), joint.get("name")
    mass, com, inertia = 0.0, np.zeros(3), np.zeros((3, 3))
    inertial = link.find("inertial")
    if inertial is not None:
        mass_el, i_el = inertial.find("mass"), inertial.find("inertia")
        mass = float(mass_el.get("value")) if mass_el is not None else 0.0
        com, R = _origin(inertial)                       # the inertial frame: position and orientation in the link
        if i_el is not None:
            ixx, ixy, ixz, iyy, iyz, izz = (float(i_el.get(k, 0.0)) for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"))
            inertia = R @ np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]]) @ R.T
    return Body(parent, pos, rot, kind, axis, np.zeros(3) if kind else None, mass, com, inertia, name)
