"""Loaders: a Model from a MuJoCo model (MjModel, model name or MJCF path), a URDF, or a lesson Tree.

They read static model data, build a body list (physai.engine.model.BodySpec) and call build; nothing here
depends on a state or computes dynamics. Joint-type knowledge stays in physai.joints: the loaders only name
the type each joint has.

    from_mujoco(m)                        MjModel | name | path -> Model (constraints are not modelled)
    from_urdf(source, floating_base=False)  URDF path or text -> Model; floating_base puts a free joint at the root
    compile_tree(tree)                    physai.dynamics.Tree -> Model
"""

from pathlib import Path

import mujoco
import numpy as np

from physai import joints
from physai.engine.model import BodySpec, JointSpec, Model, build
from physai.exceptions import InvalidModelError, UnsupportedModelError
from physai.spatial import quat_to_mat

_FROM_MJ = {int(mujoco.mjtJoint.mjJNT_FREE): joints.FREE, int(mujoco.mjtJoint.mjJNT_BALL): joints.BALL,
            int(mujoco.mjtJoint.mjJNT_SLIDE): joints.SLIDE, int(mujoco.mjtJoint.mjJNT_HINGE): joints.HINGE}


_SAMEFRAME_BODY, _SAMEFRAME_BODYROT = int(mujoco.mjtSameFrame.mjSAMEFRAME_BODY), int(mujoco.mjtSameFrame.mjSAMEFRAME_BODYROT)


def mjmodel(source) -> mujoco.MjModel:
    """An MjModel from an MjModel, a model name (physai.models) or a path to an MJCF file."""
    if isinstance(source, mujoco.MjModel):
        return source
    if isinstance(source, (str, Path)):
        from physai import models

        return models.load(str(source))
    raise InvalidModelError(f"expected a mujoco.MjModel, a model name or a path to an MJCF file, got {type(source).__name__}")


def as_model(source) -> Model:
    """A Model from a Model (itself), a physai.dynamics.Tree (compile_tree), an MjModel, a model name or an MJCF path
    (from_mujoco): what every function of physai that takes a model accepts."""
    if isinstance(source, Model):
        return source
    from physai.dynamics import Tree

    if isinstance(source, Tree):
        return compile_tree(source)
    if isinstance(source, (mujoco.MjModel, str, Path)):
        return from_mujoco(source)
    raise InvalidModelError(f"expected a physai.engine.Model, a physai.dynamics.Tree, a mujoco.MjModel, a model name or an "
                            f"MJCF path, got {type(source).__name__}")


def from_mujoco(source) -> Model:
    """The Model of a MuJoCo model: an MjModel, a model name (physai.models.names()) or an MJCF path.

    Reads body offsets and orientations, joints (type, axis, anchor, ref = qpos0 for hinges and slides),
    masses, centres of mass, inertias (principal axes turned into the body frame), armature, joint damping,
    stiffness and springref, gravity (honouring the gravity, spring and damper disable flags) and the actuators
    (physai.forces.actuators_from_mujoco). Contacts, limits and equality constraints are not modelled: compare
    with MuJoCo with mjDSBL_CONSTRAINT. Raises UnsupportedModelError for passive forces physai does not model
    (polynomial or tendon springs and dampers, gravity compensation, fluid forces).
    """
    from physai import forces
    from physai.dynamics import refuse_unsupported_passive_forces

    m = mjmodel(source)
    refuse_unsupported_passive_forces(m)
    off = m.opt.disableflags
    damper = not off & mujoco.mjtDisableBit.mjDSBL_DAMPER
    spring = not off & mujoco.mjtDisableBit.mjDSBL_SPRING
    bodies = []
    for b in range(1, m.nbody):
        specs = []
        for j in range(m.body_jntadr[b], m.body_jntadr[b] + m.body_jntnum[b]):
            t = _FROM_MJ[int(m.jnt_type[j])]
            qa, va = m.jnt_qposadr[j], m.jnt_dofadr[j]
            scalar = t in (joints.HINGE, joints.SLIDE)
            specs.append(JointSpec(
                type=t, axis=m.jnt_axis[j].copy(), anchor=m.jnt_pos[j].copy(),
                ref=float(m.qpos0[qa]) if scalar else 0.0,
                armature=m.dof_armature[va:va + joints.NV[t]].copy(),
                damping=m.dof_damping[va:va + joints.NV[t]] * damper,
                stiffness=float(m.jnt_stiffness[j]) * spring, springref=float(m.qpos_spring[qa]) if scalar else 0.0,
                name=m.joint(j).name or f"joint{j}"))
        # principal axes of inertia in the body frame; where MuJoCo's compiler found them within its tolerance of the
        # body frame (body_sameframe), its kinematics uses the body frame itself, and so does physai
        same = int(m.body_sameframe[b])
        R = np.eye(3) if same in (_SAMEFRAME_BODY, _SAMEFRAME_BODYROT) else quat_to_mat(m.body_iquat[b])
        ipos = np.zeros(3) if same == _SAMEFRAME_BODY else m.body_ipos[b].copy()
        bodies.append(BodySpec(int(m.body_parentid[b]) - 1, m.body_pos[b].copy(), quat_to_mat(m.body_quat[b]), specs,
                               float(m.body_mass[b]), ipos, R @ np.diag(m.body_inertia[b]) @ R.T,
                               m.body(b).name or f"body{b}"))
    gravity = np.zeros(3) if off & mujoco.mjtDisableBit.mjDSBL_GRAVITY else m.opt.gravity.copy()
    return build(bodies, gravity, forces.actuators_from_mujoco(m) if m.nu else None)


def compile_tree(tree) -> Model:
    """The Model of a physai.dynamics.Tree (the lesson's hinge/slide trees). Raises InvalidModelError for anything else."""
    from physai.dynamics import Tree

    if not isinstance(tree, Tree):
        raise InvalidModelError(f"compile_tree needs a physai.dynamics.Tree, got {type(tree).__name__}")
    return build(_tree_bodies(tree), tree.gravity)


def _tree_bodies(tree, free_root: bool = False) -> list[BodySpec]:
    kinds = {"hinge": joints.HINGE, "slide": joints.SLIDE}
    bodies, k = [], 0
    for b in tree.bodies:
        specs = []
        if b.joint:
            specs.append(JointSpec(kinds[b.joint], b.axis, b.anchor, b.ref, tree.armature[k], tree.damping[k],
                                   tree.stiffness[k], tree.springref[k], b.name))
            k += 1
        elif free_root and b.parent < 0:
            specs.append(JointSpec(joints.FREE, name=f"{b.name or 'root'}_free"))
        bodies.append(BodySpec(b.parent, b.pos, b.rot, specs, b.mass, b.com, b.inertia, b.name))
    return bodies


def from_urdf(source, floating_base: bool = False, armature=None, gravity=(0.0, 0.0, -9.81),
              independent_mimic: bool = False) -> Model:
    """The Model of a URDF (path, text or bytes), read by physai.urdf; floating_base=True gives the root link a free
    joint (MuJoCo's convention: q = (world position, quaternion w x y z), v = (world linear, body angular velocity);
    physai.conventions maps to Pinocchio's free flyer).

    armature: (n,) rotor inertia per moving URDF joint, in URDF order [kg m^2 | kg]; gravity (3,) [m/s^2];
    independent_mimic: as physai.urdf.tree_from_urdf.
    """
    from physai.urdf import tree_from_urdf

    tree = tree_from_urdf(source, armature=armature, gravity=gravity, independent_mimic=independent_mimic)
    if floating_base and tree.bodies[0].joint:
        raise UnsupportedModelError("floating_base: the URDF's root link already has a joint")
    return build(_tree_bodies(tree, free_root=floating_base), tree.gravity)
