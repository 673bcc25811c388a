"""Rigid-body dynamics of a tree of bodies with hinge and slide joints, in the symbols of lesson 11.

Every velocity is a spatial 6-vector (omega, v0) and every inertia a 6x6 matrix about the world
origin (see physai.spatial), so that the inertia of several bodies is a plain sum. The algorithms:

    rnea(tree, q, qd, qdd)         inverse dynamics, recursive Newton-Euler    tau = M qdd + c   [N m | N]
    bias(tree, q, qd)              c = C(q, qd) qd + g(q) = rnea(q, qd, 0)      (MuJoCo's qfrc_bias)
    gravity(tree, q)               g(q) = rnea(q, 0, 0)                          (qfrc_bias at rest)
    mass_matrix(tree, q)           M(q) by composite rigid bodies, armature on the diagonal (mj_fullM)
    forward_dynamics(tree, q, qd, tau)   qdd = M^-1 (tau - c)                    (mj_forward's qacc)
    energy(tree, q, qd)            kinetic + potential [J]                      (sum of d.energy)

Joint positions q are in [rad] for hinges and [m] for slides; one entry per jointed body, in body order.

This module is the lesson's text, kept as learners read it: hinges and slides, one joint per body, every
spatial quantity about the world origin. The rest of physai runs on physai.engine (every joint type, batched),
which compiles a Tree (engine.compile_tree) and is tested against this module as an oracle.
"""

from dataclasses import dataclass, field

import mujoco
import numpy as np

from physai import models, validation
from physai.linalg import solve
from physai.exceptions import InvalidInertiaError, InvalidModelError, InvalidStateError, UnsupportedModelError
from physai.spatial import axis_angle_to_mat, cross_force, cross_motion, quat_to_mat, skew, spatial_inertia

JOINT_TYPES = ("hinge", "slide", "")


@dataclass(eq=False)
class Body:
    """One rigid body and the joint that attaches it to its parent.

    parent:  index of the parent body in the tree, -1 for the world
    pos:     (3,) origin in the parent's frame [m]
    rot:     (3, 3) orientation in the parent's frame at q = ref
    joint:   "hinge", "slide" or "" (welded to its parent)
    axis:    (3,) unit joint axis in this body's frame (None when welded)
    anchor:  (3,) a point on the joint axis in this body's frame [m]; None means the body origin (ignored when welded)
    mass:    [kg]
    com:     (3,) centre of mass in this body's frame [m]
    inertia: (3, 3) rotational inertia about the centre of mass, body frame [kg m^2]
    name:    optional label used in messages and tables
    ref:     joint position at which the body has the pose (pos, rot) [rad or m]; MuJoCo's joint ref
    joint_name: the joint's name, the compiled Model's jnt_name (the loaders give MuJoCo's or the URDF's, "" when
             unnamed); None (a Tree built by hand): the body's name
    """

    parent: int
    pos: np.ndarray
    rot: np.ndarray
    joint: str
    axis: np.ndarray | None
    anchor: np.ndarray | None
    mass: float
    com: np.ndarray
    inertia: np.ndarray
    name: str = ""
    ref: float = 0.0
    joint_name: str | None = None

    def __post_init__(self):
        who = f"body {self.name!r}" if self.name else "body"
        if isinstance(self.parent, bool) or not isinstance(self.parent, (int, np.integer)):
            raise InvalidModelError(f"{who}: parent must be a body index (int, -1 for the world), got {self.parent!r}")
        self.parent = int(self.parent)
        if self.joint not in JOINT_TYPES:
            raise UnsupportedModelError(f"{who}: unknown joint type {self.joint!r}; expected 'hinge', 'slide' or '' (welded)")
        self.pos = validation.as_array(f"{who} pos", self.pos, (3,))
        self.rot = validation.as_array(f"{who} rot", self.rot, (3, 3))
        if np.abs(self.rot.T @ self.rot - np.eye(3)).max() > 1e-9 or np.linalg.det(self.rot) < 0:
            raise InvalidModelError(f"{who}: rot is not a rotation matrix (orthonormal, determinant +1)")
        if self.joint:
            self.axis = validation.as_array(f"{who} axis", self.axis, (3,))
            if abs(np.linalg.norm(self.axis) - 1.0) > 1e-9:
                length = np.linalg.norm(self.axis)
                raise InvalidModelError(f"{who}: joint axis {self.axis} has length {length:.6g}, expected a unit vector")
            self.anchor = validation.as_array(f"{who} anchor", np.zeros(3) if self.anchor is None else self.anchor, (3,))
        self.com = validation.as_array(f"{who} com", self.com, (3,))
        self.inertia = validation.as_array(f"{who} inertia", self.inertia, (3, 3))
        self.mass = validation.mass(who, validation.as_array(f"{who} mass", self.mass, ()))
        self.ref = float(validation.as_array(f"{who} ref", self.ref, ()))
        validation.inertia(who, self.inertia)


@dataclass(eq=False)
class Tree:
    """A kinematic tree: bodies ordered base to tips (a parent always before its children).

    bodies:   list of Body
    armature: (nv,) rotor inertia added to each joint's diagonal of M [kg m^2 or kg]
    gravity:  (3,) gravitational acceleration in the world frame [m/s^2]
    damping:   (nv,) joint damping b, passive force -b qd [N m s/rad | N s/m]; None means zero
    stiffness: (nv,) joint stiffness k, passive force -k (q - springref) [N m/rad | N/m]; None means zero
    springref: (nv,) joint position at which the spring is relaxed; None means zero

    The passive fields do not enter rnea, mass_matrix or forward_dynamics (whose tau is the total applied
    force); physai.forces turns them into forces and energy() counts the springs' potential.
    """

    bodies: list
    armature: np.ndarray
    gravity: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, -9.81]))
    damping: np.ndarray | None = None
    stiffness: np.ndarray | None = None
    springref: np.ndarray | None = None

    def __post_init__(self):
        for i, b in enumerate(self.bodies):
            if not isinstance(b, Body):
                raise InvalidModelError(f"tree body {i} is a {type(b).__name__}, expected a physai.dynamics.Body")
            if not -1 <= b.parent < i:
                who = f"body {i}" + (f" ({b.name!r})" if b.name else "")
                raise InvalidModelError(f"{who} has parent {b.parent}; "
                                        "a parent must come before its child (-1 for the world)")
        self.armature = validation.as_array("armature", self.armature, (self.nv,))
        if (self.armature < 0).any():
            raise InvalidInertiaError(f"armature {self.armature} has a negative entry; rotor inertia must be >= 0")
        self.gravity = validation.as_array("gravity", self.gravity, (3,))
        for name in ("damping", "stiffness", "springref"):
            value = getattr(self, name)
            setattr(self, name, np.zeros(self.nv) if value is None else validation.as_array(name, value, (self.nv,)))
        for name in ("damping", "stiffness"):
            if (getattr(self, name) < 0).any():
                raise InvalidModelError(f"{name} {getattr(self, name)} has a negative entry; expected >= 0")

    @property
    def nv(self) -> int:
        """Number of degrees of freedom: one per jointed body."""
        return sum(1 for b in self.bodies if b.joint)


def tree_from_mujoco(m) -> Tree:
    """The Tree of a compiled MuJoCo model whose joints are single hinges or slides (static model data only).

    m is a mujoco.MjModel, or a model name or the path of an MJCF file, which physai.models.load compiles first.
    Anything else is an InvalidArgumentError.

    Reads body offsets and orientations, joint axes, anchors and refs (qpos0), masses, centres of mass, inertias
    (turned from principal axes into the body frame), armature, joint damping, stiffness and springref
    (qpos_spring), and gravity, honouring the gravity, spring and damper disable flags; nothing that depends on
    the state. Raises UnsupportedModelError for free or ball joints, several joints in one body, and passive
    forces a Tree cannot hold (polynomial or tendon springs and dampers, gravity compensation, fluid forces).
    """
    m = models.as_mjmodel(m, "tree_from_mujoco")
    kinds = {3: "hinge", 2: "slide"}
    bodies = []
    for b in range(1, m.nbody):
        name = m.body(b).name                          # MuJoCo's, "" when unnamed
        who = f"body {name!r}" if name else f"body {b}"
        kind, axis, anchor, ref, joint_name = "", None, None, 0.0, ""
        if m.body_jntnum[b] > 1:
            raise UnsupportedModelError(f"{who} has {m.body_jntnum[b]} joints; physai needs at most one joint per body")
        if m.body_jntnum[b]:
            j = m.body_jntadr[b]
            jtype = int(m.jnt_type[j])
            if jtype not in kinds:
                kind_name = {0: "free", 1: "ball"}.get(jtype, str(jtype))
                joint = f"joint {m.joint(j).name!r}" if m.joint(j).name else f"joint {j}"
                raise UnsupportedModelError(f"{joint} of {who} is a {kind_name} joint; "
                                            "physai supports hinge and slide joints only")
            kind, axis, anchor, ref = kinds[jtype], m.jnt_axis[j].copy(), m.jnt_pos[j].copy(), float(m.qpos0[m.jnt_qposadr[j]])
            joint_name = m.joint(j).name               # MuJoCo's, "" when unnamed
        mass, com, inertia = models.body_inertia(m, b)   # turned from MuJoCo's principal axes into the body frame
        bodies.append(Body(int(m.body_parentid[b]) - 1, m.body_pos[b].copy(), quat_to_mat(m.body_quat[b]), kind, axis,
                           anchor, mass, com, inertia, name, ref, joint_name))
    models.check_passive_forces(m)
    off = m.opt.disableflags
    gravity = np.zeros(3) if off & mujoco.mjtDisableBit.mjDSBL_GRAVITY else m.opt.gravity.copy()
    damping = m.dof_damping * (not off & mujoco.mjtDisableBit.mjDSBL_DAMPER)
    stiffness = m.jnt_stiffness[m.dof_jntid] * (not off & mujoco.mjtDisableBit.mjDSBL_SPRING)
    qadr = [m.jnt_qposadr[m.body_jntadr[b]] for b in range(1, m.nbody) if m.body_jntnum[b]]
    return Tree(bodies, m.dof_armature.copy(), gravity, damping, stiffness, m.qpos_spring[qadr].copy())


def jcalc(body: Body, R0: np.ndarray, p0: np.ndarray, qi: float):
    """World pose (R, p) and motion vector S of `body` at joint position qi, given its pose (R0, p0) at q = ref.

    All joint-type knowledge lives here. S is the body's spatial velocity per unit joint speed:
    (a, o x a) for a hinge with world axis a through o, (0, a) for a slide; None when welded.
    """
    if not body.joint:
        return R0, p0, None
    a, o = R0 @ body.axis, p0 + R0 @ body.anchor
    if body.joint == "hinge":
        turn = axis_angle_to_mat(a, qi - body.ref)
        return turn @ R0, o + turn @ (p0 - o), np.concatenate([a, skew(o) @ a])      # S = (a, o x a)
    return R0, p0 + a * (qi - body.ref), np.concatenate([np.zeros(3), a])           # S = (0, a)


def body_frames(tree: Tree, q: np.ndarray):
    """World orientation R, origin p and motion vector S of every body at joint positions q (nv,)."""
    q = validation.vector("q", q, tree.nv)
    R, p, S, k = [], [], [], 0
    for b in tree.bodies:
        Rp, pp = (R[b.parent], p[b.parent]) if b.parent >= 0 else (np.eye(3), np.zeros(3))
        Rb, pb, s = jcalc(b, Rp @ b.rot, pp + Rp @ b.pos, q[k] if b.joint else 0.0)
        k += s is not None
        R.append(Rb)
        p.append(pb)
        S.append(s)
    return R, p, S


def spatial_tree(tree: Tree, q: np.ndarray):
    """At joint positions q (nv,): each body's centre of mass (3,), 6x6 inertia and motion vector S, in the world.

    Returns three lists with one entry per body: coms [m], inertias about the world origin, S (None when welded).
    """
    R, p, S = body_frames(tree, q)
    coms = [pb + Rb @ b.com for b, Rb, pb in zip(tree.bodies, R, p)]
    inertias = [spatial_inertia(b.mass, c, Rb @ b.inertia @ Rb.T) for b, Rb, c in zip(tree.bodies, R, coms)]
    return coms, inertias, S


def _dof_of(S) -> list:
    """Index of each body's degree of freedom, None for welded bodies."""
    dofs, k = [], 0
    for s in S:
        dofs.append(k if s is not None else None)
        k += s is not None
    return dofs


def rnea(tree: Tree, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
    """Inverse dynamics by recursive Newton-Euler: the joint forces tau (nv,) [N m | N] that give qdd at (q, qd).

    tau = M(q) qdd + C(q, qd) qd + g(q), armature included. Equals MuJoCo's qfrc_inverse + qfrc_passive
    on a model without constraints.
    """
    n = tree.nv
    qd, qdd = validation.vector("qd", qd, n), validation.vector("qdd", qdd, n)
    _, I, S = spatial_tree(tree, q)
    dof = _dof_of(S)
    v, a, f = [], [], []
    for i, b in enumerate(tree.bodies):                # outward: v_i = v_p + S qd,  a_i = a_p + S qdd + v_i x S qd
        vp, ap = (v[b.parent], a[b.parent]) if b.parent >= 0 else (np.zeros(6), np.concatenate([np.zeros(3), -tree.gravity]))
        if dof[i] is not None:
            vp = vp + S[i] * qd[dof[i]]
            ap = ap + S[i] * qdd[dof[i]] + cross_motion(vp) @ S[i] * qd[dof[i]]
        v.append(vp)
        a.append(ap)
        f.append(I[i] @ ap + cross_force(vp) @ I[i] @ vp)   # f_i = I a + v x* I v; gravity rides in a_0
    tau = tree.armature * qdd
    for i in reversed(range(len(tree.bodies))):       # inward: tau_i = S_i . f_i,  f_parent += f_i
        if dof[i] is not None:
            tau[dof[i]] += S[i] @ f[i]
        if tree.bodies[i].parent >= 0:
            f[tree.bodies[i].parent] = f[tree.bodies[i].parent] + f[i]
    return validation.finite_result("rnea", tau)


def bias(tree: Tree, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """Bias force c(q, qd) = C(q, qd) qd + g(q) (nv,) [N m | N]; equals rnea(tree, q, qd, 0) and MuJoCo's qfrc_bias."""
    return rnea(tree, q, qd, np.zeros(tree.nv))


def gravity(tree: Tree, q: np.ndarray) -> np.ndarray:
    """Gravity torques g(q) (nv,) [N m | N], the forces that hold the tree still; equals rnea(tree, q, 0, 0)."""
    return rnea(tree, q, np.zeros(tree.nv), np.zeros(tree.nv))


def mass_matrix(tree: Tree, q: np.ndarray) -> np.ndarray:
    """Joint-space inertia M(q) (nv, nv) by composite rigid bodies, armature on the diagonal; equals mj_fullM.

    M_ij = S_i . (Ic_j S_j) for i an ancestor of j (or j itself), Ic_j the inertia of j and everything beyond it.
    InvalidStateError when it overflows: the inertias about the world origin hold m c c^T, beyond 1.8e308 for bodies
    farther than about 1e150 (physai.engine.mass_matrix works about each tree's centre and gives M there).
    """
    with np.errstate(over="ignore", invalid="ignore"):                  # an overflow is named below
        _, I, S = spatial_tree(tree, q)
        M = _composite_mass_matrix(tree, I, S)
    if not np.isfinite(M).all():
        raise InvalidStateError("the mass matrix is not finite although q is: the bodies' inertias about the world "
                                "origin (m c c^T) overflow for bodies farther than about 1e150 from it; "
                                "physai.engine.mass_matrix works about each tree's centre")
    return M + np.diag(tree.armature)


def _composite_mass_matrix(tree: Tree, I: list, S: list) -> np.ndarray:
    """mass_matrix's CRBA without the armature, from spatial_tree's inertias I and motion vectors S."""
    dof = _dof_of(S)
    Ic = [Ii.copy() for Ii in I]
    for i in reversed(range(len(tree.bodies))):        # composite inertia: Ic_parent += Ic_i
        if tree.bodies[i].parent >= 0:
            Ic[tree.bodies[i].parent] += Ic[i]
    M = np.zeros((tree.nv, tree.nv))
    for j in range(len(tree.bodies)):
        if dof[j] is None:
            continue
        F, i = Ic[j] @ S[j], j                         # force that accelerates j's subtree at joint j's unit rate...
        while i >= 0:                                  # ...as felt by every joint between j and the base
            if dof[i] is not None:
                M[dof[i], dof[j]] = M[dof[j], dof[i]] = S[i] @ F
            i = tree.bodies[i].parent
    return M


def forward_dynamics(tree: Tree, q: np.ndarray, qd: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """Joint accelerations qdd (nv,) [rad/s^2 | m/s^2] for generalized forces tau (nv,): M(q) qdd = tau - c(q, qd).

    tau is the total applied generalized force; equals mj_forward's qacc on a model without passive forces or constraints.
    """
    tau = validation.vector("tau", tau, tree.nv)
    return validation.finite_result("forward dynamics", solve(mass_matrix(tree, q), tau - bias(tree, q, qd)))


def potential_energy(tree: Tree, q: np.ndarray) -> float:
    """Potential energy [J]: gravity, zero at the world origin, plus joint springs.

    U = -sum_b m_b gravity . com_b + 1/2 sum_i k_i (q_i - springref_i)^2   (MuJoCo's energy[0])
    """
    with np.errstate(over="ignore", invalid="ignore"):                  # an overflow is named below
        coms, _, _ = spatial_tree(tree, q)
        springs = 0.5 * tree.stiffness @ (np.asarray(q, dtype=float) - tree.springref) ** 2
        U = -sum(b.mass * tree.gravity @ c for b, c in zip(tree.bodies, coms)) + springs
    return float(validation.finite_result("potential energy", U))


def kinetic_energy(tree: Tree, q: np.ndarray, qd: np.ndarray) -> float:
    """Kinetic energy 1/2 qd^T M(q) qd [J], armature included (MuJoCo's energy[1])."""
    qd = validation.vector("qd", qd, tree.nv)
    return float(validation.finite_result("kinetic energy", 0.5 * qd @ mass_matrix(tree, q) @ qd))


def energy(tree: Tree, q: np.ndarray, qd: np.ndarray) -> float:
    """Kinetic plus potential energy [J], potential measured from the world origin (MuJoCo's energy[0] + energy[1])."""
    return kinetic_energy(tree, q, qd) + potential_energy(tree, q)
