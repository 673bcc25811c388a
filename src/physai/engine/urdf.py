"""URDF robots read into the engine's body list (physai.engine.model.BodySpec): every link a body, every joint its
parent joint. Reads, builds nothing, computes nothing; physai.engine.loaders.from_urdf builds the Model and
physai.urdf.tree_from_urdf the lesson's Tree from the same parse.

What a URDF says, and where it goes:
    joint origin xyz, rpy   -> BodySpec.pos, BodySpec.rot (the child link's frame in the parent link's frame)
    joint axis              -> JointSpec.axis, normalized (default 1 0 0); the anchor is 0: the axis passes the link origin
    revolute, continuous    -> a hinge;  prismatic -> a slide;  fixed -> no joint (welded)
    inertial origin xyz     -> BodySpec.com
    inertial origin rpy     -> BodySpec.inertia = R I R^T, the inertia turned into the link frame (kept, never dropped)
    dynamics damping        -> JointSpec.damping
    dynamics friction       -> JointSpec.frictionloss (dry friction, a constraint row)
    limit lower, upper      -> JointSpec.limited and range (revolute and prismatic, when lower < upper)
The root link is welded to the world at the origin. floating and planar joints are refused; mimic joints too,
unless independent_mimic=True makes each an independent joint (what Pinocchio's buildModelFromUrdf does).

The XML is read with defusedxml: a URDF with a DTD (<!DOCTYPE ...>), entity declarations or external references
is refused with InvalidModelError before anything is expanded or fetched. The link graph must be a tree (unique
link and joint names, every link but the root the child of exactly one joint, no loops), every number a finite
number and every inertia physical; anything else is an InvalidModelError (InvalidInertiaError) that names the link
or joint.
"""

import xml.etree.ElementTree as ET
from pathlib import Path

import defusedxml
import defusedxml.ElementTree as SafeET
import numpy as np

from physai import joints, validation
from physai.engine.geoms import BOX, CYLINDER, SPHERE, Geoms
from physai.engine.model import BodySpec, JointSpec
from physai.spatial import mat_to_quat
from physai.exceptions import InvalidModelError, UnsupportedModelError

#: URDF joint types and the physai joint type each becomes (None: welded)
KINDS = {"revolute": joints.HINGE, "continuous": joints.HINGE, "prismatic": joints.SLIDE, "fixed": None}


def rpy_to_mat(rpy) -> np.ndarray:
    """Rotation matrix of URDF roll-pitch-yaw angles [rad]: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def read(urdf: str | Path | bytes, independent_mimic: bool = False) -> list[BodySpec]:
    """The bodies of a URDF (read_model's, without the geoms)."""
    return read_model(urdf, independent_mimic)[0]


def read_model(urdf: str | Path | bytes, independent_mimic: bool = False) -> tuple[list[BodySpec], Geoms]:
    """The bodies of a URDF file (path), URDF text (str) or URDF bytes, depth first from the root link (welded to the
    world); a moving joint becomes the JointSpec of its child link's body.

    Bytes are the document itself (e.g. Path.read_bytes() or a download), decoded by the XML parser from its
    encoding declaration (UTF-8 by default); a path is given as str or Path.
    Raises UnsupportedModelError (floating, planar or mimic joints; several roots) or InvalidModelError (unsafe or
    malformed XML, duplicate names, a link with two parent joints, a loop, a missing or non-numeric value).
    """
    robot = _parse(urdf)
    links = _unique(robot.findall("link"), "link")
    joint_elements = list(_unique(robot.findall("joint"), "joint").values())   # direct children: <transmission> holds <joint> too
    children: dict[str, list] = {name: [] for name in links}
    parents: dict[str, list] = {name: [] for name in links}
    for j in joint_elements:
        parent, child = _attr(j, "parent", "link"), _attr(j, "child", "link")
        for link in (parent, child):
            if link not in links:
                raise InvalidModelError(f"joint {j.get('name')!r} names link {link!r}, which the URDF does not define")
        children[parent].append(j)
        parents[child].append(j)
    loop = _find_loop(links, children)
    if loop:
        path = " -> ".join(repr(link) for link, _ in loop) + f" -> {loop[0][0]!r}"
        raise InvalidModelError(f"the joints {', '.join(repr(j.get('name')) for _, j in loop)} form a closed loop of links "
                                f"{path}; a URDF is a tree (every link but the root is the child of exactly one joint), "
                                "physai cannot build kinematic loops")
    for link, js in parents.items():
        if len(js) > 1:
            raise InvalidModelError(f"link {link!r} is the child of {len(js)} joints ({', '.join(repr(j.get('name')) for j in js)}); "
                                    "in a URDF every link but the root is the child of exactly one joint")
    roots = [name for name in links if not parents[name]]
    if len(roots) != 1:
        raise UnsupportedModelError(f"the URDF has {len(roots)} root links {roots}; physai needs one tree with one root")

    bodies: list[BodySpec] = []
    collisions: list[tuple[int, ET.Element]] = []
    stack = [(roots[0], None, -1)]                      # depth first, children in document order; no recursion limit
    while stack:
        link_name, joint, parent = stack.pop()
        index = len(bodies)
        bodies.append(_body(links[link_name], joint, parent, independent_mimic))
        collisions.extend((index, link_name, c) for c in links[link_name].findall("collision"))
        stack.extend((_attr(j, "child", "link"), j, index) for j in reversed(children[link_name]))
    return bodies, _geoms(collisions)


def _geoms(collisions: list) -> Geoms:
    """The collision geoms of the links' <collision> elements (body, link name, element), in body order: spheres, boxes and
    cylinders with MuJoCo's URDF defaults (contype and conaffinity 1, condim 3, friction 1 0.005 0.0001, solref 0.02 1,
    solimp 0.9 0.95 0.001 0.5 2); meshes are recorded as unsupported (collision.detect refuses them by name)."""
    rows, unsupported = [], []
    for body, link, element in collisions:
        owner = f"link {link!r}"
        pos, rot = _origin(element, owner)
        geometry = element.find("geometry")
        shape = None if geometry is None else next(iter(geometry), None)
        kind = None if shape is None else shape.tag
        if kind == "sphere":
            r = _number(shape, "radius", owner, "m")
            row = (SPHERE, (r, 0.0, 0.0), r)
        elif kind == "box":
            half = 0.5 * _floats(shape, "size", owner, "m")
            row = (BOX, tuple(half), float(np.linalg.norm(half)))
        elif kind == "cylinder":
            r, half = _number(shape, "radius", owner, "m"), 0.5 * _number(shape, "length", owner, "m")
            row = (CYLINDER, (r, half, 0.0), float(np.hypot(r, half)))
        else:
            unsupported.append(f"a <collision> {kind or 'without geometry'} of {owner} (physai collides spheres, boxes and "
                               "cylinders of a URDF)")
            continue
        rows.append((row, body, pos, mat_to_quat(rot)))
    n = len(rows)
    return Geoms(geom_type=np.array([r[0][0] for r in rows], np.intp), geom_bodyid=np.array([r[1] for r in rows], np.intp),
                 geom_pos=np.array([r[2] for r in rows]).reshape(n, 3), geom_quat=np.array([r[3] for r in rows]).reshape(n, 4),
                 geom_size=np.array([r[0][1] for r in rows]).reshape(n, 3), geom_rbound=np.array([r[0][2] for r in rows]),
                 geom_contype=np.ones(n, np.intp), geom_conaffinity=np.ones(n, np.intp), geom_condim=np.full(n, 3, np.intp),
                 geom_priority=np.zeros(n, np.intp), geom_solmix=np.ones(n),
                 geom_friction=np.tile([1.0, 0.005, 0.0001], (n, 1)), geom_solref=np.tile([0.02, 1.0], (n, 1)),
                 geom_solimp=np.tile([0.9, 0.95, 0.001, 0.5, 2.0], (n, 1)), geom_margin=np.zeros(n), geom_gap=np.zeros(n),
                 geom_name=("",) * n, unsupported=tuple(unsupported))


#: why physai refuses DTDs, entities and external references, appended to each refusal
_UNSAFE = ("physai reads URDF without DTDs, entity declarations or external references (entities can expand a small file "
           "into gigabytes, external references read other files or URLs); write the values out and remove the <!DOCTYPE>")


def _parse(urdf: str | Path | bytes) -> ET.Element:
    """The <robot> element of a URDF path, text or bytes, parsed safely; InvalidModelError for anything else."""
    if isinstance(urdf, (bytes, bytearray)):
        source, text, what = bytes(urdf), None, "URDF bytes"
    elif isinstance(urdf, (str, Path)):
        text = str(urdf)
        source, what = text, "URDF text"
        if not text.lstrip("\ufeff \t\r\n").startswith("<"):
            source, what = None, f"URDF file {text!r}"
    else:
        raise InvalidModelError(f"a URDF is given as a path (str or Path), its text (str) or its bytes, got {type(urdf).__name__}")
    try:
        if source is None:
            root = SafeET.parse(text, forbid_dtd=True).getroot()
        else:
            root = SafeET.fromstring(source, forbid_dtd=True)
    except defusedxml.DTDForbidden as exc:
        raise InvalidModelError(f"{what} refused: it has a document type declaration <!DOCTYPE {exc.name} ...>; {_UNSAFE}") from None
    except defusedxml.EntitiesForbidden as exc:
        raise InvalidModelError(f"{what} refused: it declares the entity {exc.name!r}; {_UNSAFE}") from None
    except defusedxml.ExternalReferenceForbidden as exc:
        raise InvalidModelError(f"{what} refused: it references the external resource {exc.sysid!r}; {_UNSAFE}") from None
    except defusedxml.DefusedXmlException as exc:
        raise InvalidModelError(f"{what} refused ({type(exc).__name__}); {_UNSAFE}") from None
    except ET.ParseError as exc:
        hint = " (bytes are read as the URDF document itself; give a path as str or Path)" if isinstance(urdf, (bytes, bytearray)) else ""
        raise InvalidModelError(f"not a valid URDF: {exc}{hint}") from None
    except OSError as exc:
        raise InvalidModelError(f"cannot read URDF file {text!r}: {exc}") from None
    if root.tag != "robot":
        raise InvalidModelError(f"a URDF's root element is <robot>, this one is <{root.tag}>")
    return root


def _unique(elements: list[ET.Element], kind: str) -> dict[str, ET.Element]:
    """{name: element} of the <link> or <joint> elements; InvalidModelError for a missing or repeated name."""
    out: dict[str, ET.Element] = {}
    for k, element in enumerate(elements):
        name = element.get("name")
        if not name:
            raise InvalidModelError(f"<{kind}> number {k + 1} has no name; every URDF {kind} needs a unique name=...")
        if name in out:
            raise InvalidModelError(f"the URDF has two {kind}s named {name!r}; {kind} names must be unique")
        out[name] = element
    return out


def _find_loop(links: dict, children: dict) -> list[tuple[str, ET.Element]]:
    """A closed loop of the link graph as [(link, joint from it to the next link), ...], or [] when there is none."""
    state: dict[str, int] = {}                          # 1: on the current path, 2: finished
    for start in links:
        if start in state:
            continue
        path, todo = [], [(start, iter(children[start]))]
        state[start] = 1
        while todo:
            link, rest = todo[-1]
            for j in rest:
                child = _attr(j, "child", "link")
                if state.get(child) == 1:               # back to a link on the path: a loop
                    path.append((link, j))
                    first = [name for name, _ in path].index(child)
                    return path[first:]
                if child not in state:
                    state[child] = 1
                    path.append((link, j))
                    todo.append((child, iter(children[child])))
                    break
            else:
                state[link] = 2
                todo.pop()
                if path:
                    path.pop()
    return []


def _attr(element: ET.Element, tag: str, name: str) -> str:
    child = element.find(tag)
    if child is None or child.get(name) is None:
        raise InvalidModelError(f"joint {element.get('name')!r} has no <{tag} {name}=...>")
    return child.get(name)


def _origin(element: ET.Element | None, owner: str) -> tuple[np.ndarray, np.ndarray]:
    """(xyz [m], rotation) of an element's <origin>, identity when absent."""
    origin = element.find("origin") if element is not None else None
    if origin is None:
        return np.zeros(3), np.eye(3)
    return _floats(origin, "xyz", owner, "m"), rpy_to_mat(_floats(origin, "rpy", owner, "rad"))


def _number(element: ET.Element, attr: str, owner: str, unit: str, default: float | None = None) -> float:
    """Attribute `attr` of `element` as a finite number, `default` when absent; InvalidModelError naming `owner`."""
    text = element.get(attr)
    if text is None:
        if default is not None:
            return default
        raise InvalidModelError(f'{owner}: <{element.tag}> has no {attr}; expected <{element.tag} {attr}="..."/> '
                                f"with a finite number [{unit}]")
    try:
        value = float(text) if "_" not in text else np.nan    # Python reads "1_000" as 1000; URDF numbers have no "_"
    except ValueError:
        value = np.nan
    if not np.isfinite(value):
        raise InvalidModelError(f"{owner}: <{element.tag} {attr}={text!r}> is not a finite number; expected a finite number [{unit}]")
    return value


def _floats(element: ET.Element, attr: str, owner: str, unit: str, default: str = "0 0 0") -> np.ndarray:
    """Attribute `attr` of `element` as 3 finite numbers, `default` when absent; InvalidModelError naming `owner`."""
    text = element.get(attr, default)
    try:
        values = np.array(text.split(), dtype=float) if "_" not in text else None
    except ValueError:
        values = None
    if values is None or values.shape != (3,) or not np.isfinite(values).all():
        raise InvalidModelError(f"{owner}: <{element.tag} {attr}={text!r}> is not 3 finite numbers; expected 3 finite numbers "
                                f"separated by spaces [{unit}]")
    return values


def _body(link: ET.Element, joint: ET.Element | None, parent: int, independent_mimic: bool) -> BodySpec:
    """The BodySpec of `link`, attached by `joint` (None for the root, welded to the world)."""
    specs, pos, rot, name = [], np.zeros(3), np.eye(3), link.get("name")
    if joint is not None:
        jtype = joint.get("type")
        if jtype not in KINDS:
            raise UnsupportedModelError(f"joint {joint.get('name')!r} is a {jtype} joint; physai supports "
                                        "revolute, continuous, prismatic and fixed joints")
        if joint.find("mimic") is not None and not independent_mimic:
            raise UnsupportedModelError(f"joint {joint.get('name')!r} mimics another joint; physai has no mimic joints "
                                        "(independent_mimic=True makes it an independent joint, as Pinocchio does)")
        owner = f"joint {joint.get('name')!r}"
        pos, rot = _origin(joint, owner)
        if KINDS[jtype] is not None:
            axis_el = joint.find("axis")
            text = axis_el.get("xyz", "1 0 0") if axis_el is not None else "1 0 0"
            axis = _floats(axis_el, "xyz", owner, "direction", "1 0 0") if axis_el is not None else np.array([1.0, 0.0, 0.0])
            if not np.abs(axis).max() > 0:
                raise InvalidModelError(f"joint {joint.get('name')!r} has a zero axis (<axis xyz={text!r}>); expected a "
                                        "direction, 3 finite numbers not all zero")
            axis = axis / np.abs(axis).max()             # scaled first: 1e300 1e300 0 and 1e-320 0 0 are directions too
            dyn = joint.find("dynamics")
            damping = 0.0 if dyn is None else _number(dyn, "damping", owner, "N m s/rad | N s/m", 0.0)
            friction = 0.0 if dyn is None else _number(dyn, "friction", owner, "N m | N", 0.0)
            limit = joint.find("limit") if jtype != "continuous" else None
            bounds = (0.0, 0.0) if limit is None else (_number(limit, "lower", owner, "rad | m", 0.0),
                                                        _number(limit, "upper", owner, "rad | m", 0.0))
            name = joint.get("name")
            specs.append(JointSpec(KINDS[jtype], axis / np.linalg.norm(axis), np.zeros(3), damping=damping, name=name,
                                   limited=bounds[0] < bounds[1], range=bounds, frictionloss=friction))
    mass, com, inertia = 0.0, np.zeros(3), np.zeros((3, 3))
    inertial = link.find("inertial")
    if inertial is not None:
        mass_el, i_el = inertial.find("mass"), inertial.find("inertia")
        owner = f"link {link.get('name')!r}"
        mass = validation.mass(owner, _number(mass_el, "value", owner, "kg") if mass_el is not None else 0.0)
        com, R = _origin(inertial, owner)                # the inertial frame: position and orientation in the link
        if i_el is not None:
            ixx, ixy, ixz, iyy, iyz, izz = (_number(i_el, k, owner, "kg m^2", 0.0) for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"))
            inertia = R @ np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]]) @ R.T
            validation.inertia(owner, inertia)
    return BodySpec(parent, pos, rot, specs, mass, com, inertia, name)
