"""URDF robots as the lesson's Trees (physai.dynamics): tree_from_urdf, from the engine's URDF reader.

    tree = tree_from_urdf("ur5_robot.urdf")            # or the XML text itself, or its bytes
    tree.bodies[i].name                                 # the child link's joint name ("" welded: the link name)

physai.engine.urdf reads the URDF (safely: no DTDs, entities or external references) into the engine's body list,
which physai.engine.from_urdf builds into a Model; this module turns the same body list into a Tree: every link a
Body, every moving joint its hinge or slide, inertias turned into the link frame (the inertial rpy is kept), joint
damping into Tree.damping. URDF has no rotor inertia: pass `armature` (one entry per moving joint, in Tree order)
if the robot has gearboxes. See physai.engine.urdf for what a URDF says and where it goes.
"""

from pathlib import Path

import numpy as np

from physai import joints
from physai.dynamics import Body, Tree
from physai.engine.urdf import read, rpy_to_mat

__all__ = ["rpy_to_mat", "tree_from_urdf"]

KINDS = {joints.HINGE: "hinge", joints.SLIDE: "slide"}


def tree_from_urdf(urdf: str | Path | bytes, armature=None, gravity=(0.0, 0.0, -9.81), independent_mimic: bool = False) -> Tree:
    """The Tree of a URDF file (path), URDF text (str) or URDF bytes; bodies in depth-first order from the root link.

    armature: (nv,) rotor inertia per moving joint [kg m^2 | kg], default zero; gravity: (3,) [m/s^2];
    independent_mimic: accept mimic joints as independent joints instead of refusing them.
    Raises what physai.engine.urdf.read raises for a URDF physai cannot read.
    """
    bodies, damping = [], []
    for spec in read(urdf, independent_mimic):
        kind, axis, anchor, joint_name = "", None, None, ""
        if spec.joints:
            joint = spec.joints[0]
            kind, axis, anchor, joint_name = KINDS[joint.type], joint.axis, joint.anchor, joint.name
            damping.append(float(joint.damping))
        bodies.append(Body(spec.parent, spec.pos, spec.rot, kind, axis, anchor, spec.mass, spec.com, spec.inertia, spec.name,
                           joint_name=joint_name))
    nv = len(damping)
    return Tree(bodies, np.zeros(nv) if armature is None else armature, gravity, np.array(damping))
