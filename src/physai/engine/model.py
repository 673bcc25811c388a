"""The engine's constant Model: a physai.dynamics.Tree compiled into flat per-body arrays.

compile_tree(tree) does, once, everything that does not depend on the state:

- welded bodies are fused into the nearest jointed ancestor (MuJoCo's `fusestatic`, Pinocchio's fixed
  joints): their mass, centre of mass and inertia are merged, and a jointed body hanging below a welded
  one gets its offset composed through it. Bodies welded to the world only add a constant potential energy.
  After fusing, every engine body has exactly one joint and one dof, and body i is moved by dof i;
- parents come before children (body_parentid[i] < i, -1 for the world);
- all joint-type knowledge becomes constants, in one function, jcalc: a joint's transform is linear in
  (1, t, sin t, 1 - cos t), t = q - ref, so the engine's kinematics needs no branch on joint types.

Arrays follow MuJoCo's <object>_<attribute> naming; shapes are given per field. Frames: "body frame"
is the engine body's own frame (the frame of the Tree's jointed body); "parent frame" is the frame of
the parent engine body (the world for roots).
"""

from dataclasses import dataclass

import numpy as np

from physai.dynamics import Tree
from physai.spatial import skew
from physai.exceptions import InvalidModelError

#: joint types, MuJoCo's numbers (mjtJoint)
JNT_SLIDE, JNT_HINGE = 2, 3


def jcalc(jnttype: int, rot: np.ndarray, pos: np.ndarray, axis: np.ndarray, anchor: np.ndarray):
    """All joint-type knowledge of the engine: a joint as constants (G (3, 4, 4), S (6,)).

    The body's pose in its parent frame at joint position q is the 3x4 matrix [R | p] = G @ (1, t, sin t, 1 - cos t),
    t = q - ref, given its pose (rot, pos) at t = 0, the unit axis and a point on it (anchor) in the body frame:
      hinge: R = rot (1 + sin t K + (1 - cos t) K^2), p = pos + rot (anchor - R_t anchor), K = skew(axis) (Rodrigues);
      slide: R = rot, p = pos + t rot axis.
    S is the motion subspace in the body frame about the body origin: (axis, anchor x axis) for a hinge, (0, axis)
    for a slide.
    """
    G = np.zeros((3, 4, 4))
    G[:, :3, 0], G[:, 3, 0] = rot, pos
    if jnttype == JNT_HINGE:
        K = skew(axis)
        G[:, :3, 2], G[:, 3, 2] = rot @ K, -rot @ K @ anchor
        G[:, :3, 3], G[:, 3, 3] = rot @ K @ K, -rot @ K @ K @ anchor
        return G, np.r_[axis, np.cross(anchor, axis)]
    if jnttype == JNT_SLIDE:
        G[:, 3, 1] = rot @ axis
        return G, np.r_[np.zeros(3), axis]
    raise InvalidModelError(f"unknown joint type {jnttype}")  # SHOULD NOT OCCUR: Body accepts hinge and slide only


@dataclass(frozen=True, eq=False)
class Model:
    """Constant model data of the fast engine (MuJoCo's mjModel for a tree of hinges and slides).

    Sizes: nbody engine bodies (jointed bodies with their welded descendants fused in), nv = nbody dofs.

    body_parentid   (nbody,)       parent engine body, -1 for the world; always < the body's own index
    body_rootid     (nbody,)       the body's root: its ancestor whose parent is the world (itself for a root)
    body_jnttype    (nbody,)       JNT_HINGE (3) or JNT_SLIDE (2)
    body_pos        (nbody, 3)     body origin in the parent frame at q = ref [m]
    body_rot        (nbody, 3, 3)  body orientation in the parent frame at q = ref
    body_mass       (nbody,)       mass of the body and its fused welded descendants [kg]
    body_ipos       (nbody, 3)     their centre of mass, body frame [m]
    body_inertia    (nbody, 3, 3)  their rotational inertia about body_ipos, body frame [kg m^2]
    body_name       (nbody,)       name of the Tree body that carries the joint
    dof_bodyid      (nv,)          the body dof i moves (= i)
    dof_parentid    (nv,)          dof of the parent body, -1 at a root
    dof_axis        (nv, 3)        unit joint axis, body frame
    dof_anchor      (nv, 3)        a point on the joint axis, body frame [m]
    dof_ref         (nv,)          joint position at which the body has pose (body_pos, body_rot) [rad | m]
    dof_motion      (nv, 6)        motion subspace S in the body frame about the body origin:
                                   (axis, anchor x axis) for a hinge, (0, axis) for a slide
    dof_armature    (nv,)          rotor inertia added to M's diagonal [kg m^2 | kg]
    dof_damping     (nv,)          joint damping [N m s/rad | N s/m] (not used by the dynamics; see Tree)
    dof_stiffness   (nv,)          joint stiffness [N m/rad | N/m] (potential energy only)
    dof_springref   (nv,)          spring rest position [rad | m]
    dof_ancestor    (nv, nv)       bool, [i, j] true when dof i is dof j or one of its ancestors (CRBA pattern)
    gravity         (3,)           gravitational acceleration, world frame [m/s^2]
    static_mass     float          mass welded to the world [kg] (fixed, enters only the potential energy)
    static_com      (3,)           its centre of mass, world frame [m]
    tree_bodyid     (ntree,)       engine body each Tree body was fused into, -1 for bodies welded to the world
    tree_pos        (ntree, 3)     each Tree body's origin in the frame of that engine body (world for -1) [m]
    tree_rot        (ntree, 3, 3)  each Tree body's orientation in that frame

    jnt_G           (nv, 3, 4, 4)  joint transforms from jcalc: body i's pose in its parent frame at joint position q_i
                                   is the 3x4 matrix [R | p] = jnt_G[i] @ (1, t, sin t, 1 - cos t), t = q_i - ref
    dof_Mrow, dof_Mcol (nv, nv)    CRBA gather: M[i, j] = (S . Ic S)[dof_Mrow[i, j], dof_Mcol[i, j]] * dof_Mmask[i, j]
    dof_Mmask       (nv, nv, 1)    1.0 where dof i is dof j or an ancestor or descendant of it, else 0.0
    """

    nbody: int
    nv: int
    body_parentid: np.ndarray
    body_rootid: np.ndarray
    body_jnttype: np.ndarray
    body_pos: np.ndarray
    body_rot: np.ndarray
    body_mass: np.ndarray
    body_ipos: np.ndarray
    body_inertia: np.ndarray
    body_name: tuple
    dof_bodyid: np.ndarray
    dof_parentid: np.ndarray
    dof_axis: np.ndarray
    dof_anchor: np.ndarray
    dof_ref: np.ndarray
    dof_motion: np.ndarray
    dof_armature: np.ndarray
    dof_damping: np.ndarray
    dof_stiffness: np.ndarray
    dof_springref: np.ndarray
    dof_ancestor: np.ndarray
    gravity: np.ndarray
    static_mass: float
    static_com: np.ndarray
    tree_bodyid: np.ndarray
    tree_pos: np.ndarray
    tree_rot: np.ndarray
    jnt_G: np.ndarray
    dof_Mrow: np.ndarray
    dof_Mcol: np.ndarray
    dof_Mmask: np.ndarray

    def __post_init__(self):
        for value in vars(self).values():
            if isinstance(value, np.ndarray):
                value.setflags(write=False)
        # plain-Python copies of the topology for the per-body loops (list indexing beats array indexing)
        object.__setattr__(self, "_parents", self.body_parentid.tolist())
        object.__setattr__(self, "_children", [i for i in range(self.nbody) if self.body_parentid[i] >= 0][::-1])
        a_g = np.zeros((6, 1))                      # the base's spatial acceleration that stands in for gravity
        a_g[3:, 0] = -self.gravity
        a_g.setflags(write=False)
        object.__setattr__(self, "_a_g", a_g)
        object.__setattr__(self, "_diag", (np.arange(self.nv), np.arange(self.nv)))

    @classmethod
    def from_tree(cls, tree: Tree) -> "Model":
        """The Model of a physai.dynamics.Tree; same as compile_tree(tree)."""
        return compile_tree(tree)

    def __repr__(self) -> str:
        return f"<physai.engine.Model: {self.nbody} bodies, nv={self.nv}>"


def _merge(mass_a, com_a, inertia_a, mass_b, com_b, inertia_b):
    """Mass, centre of mass and inertia about it of two rigid parts expressed in one frame (parallel axes)."""
    mass = mass_a + mass_b
    com = (mass_a * com_a + mass_b * com_b) / mass if mass > 0 else com_a
    inertia = inertia_a + inertia_b
    for m, c in ((mass_a, com_a), (mass_b, com_b)):
        d = c - com
        inertia = inertia + m * (d @ d * np.eye(3) - np.outer(d, d))
    return mass, com, inertia


def compile_tree(tree: Tree) -> Model:
    """Compile a physai.dynamics.Tree into the engine's constant Model (fusing welded bodies; see the module).

    The Tree was validated when it was built (parent order, unit axes, physical inertias), so this only
    rearranges it. Raises InvalidModelError if tree is not a Tree.
    """
    if not isinstance(tree, Tree):
        raise InvalidModelError(f"compile_tree needs a physai.dynamics.Tree, got {type(tree).__name__}")
    ntree = len(tree.bodies)
    owner = np.full(ntree, -1)                   # engine body each tree body is fused into
    rel_R = np.zeros((ntree, 3, 3))              # pose of each tree body in its owner's frame
    rel_p = np.zeros((ntree, 3))
    jointed = []                                 # tree index of each engine body
    for i, b in enumerate(tree.bodies):
        pR, pp, powner = (rel_R[b.parent], rel_p[b.parent], owner[b.parent]) if b.parent >= 0 else (np.eye(3), np.zeros(3), -1)
        if b.joint:                              # a new engine body; its pose at q = ref is relative to the owner of its parent
            jointed.append(i)
            owner[i], rel_R[i], rel_p[i] = len(jointed) - 1, np.eye(3), np.zeros(3)
            continue
        owner[i], rel_R[i], rel_p[i] = powner, pR @ b.rot, pp + pR @ b.pos

    nb = len(jointed)
    parentid, jnttype = np.zeros(nb, dtype=np.intp), np.zeros(nb, dtype=np.intp)
    pos, rot = np.zeros((nb, 3)), np.zeros((nb, 3, 3))
    mass, ipos, inertia = np.zeros(nb), np.zeros((nb, 3)), np.zeros((nb, 3, 3))
    axis, anchor, ref = np.zeros((nb, 3)), np.zeros((nb, 3)), np.zeros(nb)
    for k, i in enumerate(jointed):
        b = tree.bodies[i]
        pR, pp, powner = (rel_R[b.parent], rel_p[b.parent], owner[b.parent]) if b.parent >= 0 else (np.eye(3), np.zeros(3), -1)
        parentid[k], pos[k], rot[k] = powner, pp + pR @ b.pos, pR @ b.rot
        jnttype[k] = JNT_HINGE if b.joint == "hinge" else JNT_SLIDE
        axis[k], anchor[k], ref[k] = b.axis, b.anchor, b.ref

    # fuse every body's mass into its owner (in the owner's frame), or into the static world part
    static = (0.0, np.zeros(3), np.zeros((3, 3)))
    for i, b in enumerate(tree.bodies):
        R, p = rel_R[i], rel_p[i]
        part = (b.mass, p + R @ b.com, R @ b.inertia @ R.T)
        if owner[i] < 0:
            static = _merge(*static, *part)
        else:
            k = owner[i]
            mass[k], ipos[k], inertia[k] = _merge(mass[k], ipos[k], inertia[k], *part)
    inertia = 0.5 * (inertia + inertia.transpose(0, 2, 1))

    rootid = np.arange(nb)
    for k in range(nb):
        if parentid[k] >= 0:
            rootid[k] = rootid[parentid[k]]
    ancestor = np.zeros((nb, nb), dtype=bool)
    for j in range(nb):
        i = j
        while i >= 0:
            ancestor[i, j] = True
            i = parentid[i]

    G, motion = np.zeros((nb, 3, 4, 4)), np.zeros((nb, 6))
    for k in range(nb):
        G[k], motion[k] = jcalc(jnttype[k], rot[k], pos[k], axis[k], anchor[k])
    row = np.where(ancestor, np.arange(nb)[:, None], np.arange(nb)[None, :])
    col = np.where(ancestor, np.arange(nb)[None, :], np.arange(nb)[:, None])
    return Model(
        nbody=nb, nv=nb,
        body_parentid=parentid, body_rootid=rootid, body_jnttype=jnttype,
        body_pos=pos, body_rot=rot, body_mass=mass, body_ipos=ipos, body_inertia=inertia,
        body_name=tuple(tree.bodies[i].name for i in jointed),
        dof_bodyid=np.arange(nb), dof_parentid=parentid.copy(),
        dof_axis=axis, dof_anchor=anchor, dof_ref=ref, dof_motion=motion,
        dof_armature=tree.armature.copy(), dof_damping=tree.damping.copy(),
        dof_stiffness=tree.stiffness.copy(), dof_springref=tree.springref.copy(),
        dof_ancestor=ancestor, gravity=tree.gravity.copy(),
        static_mass=float(static[0]), static_com=static[1],
        tree_bodyid=owner, tree_pos=rel_p, tree_rot=rel_R,
        jnt_G=G,
        dof_Mrow=row, dof_Mcol=col, dof_Mmask=(ancestor | ancestor.T).astype(float)[:, :, None],
    )
