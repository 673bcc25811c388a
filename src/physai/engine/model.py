"""The engine's constant Model: flat arrays in MuJoCo's style, built once from a body list by `build`.

The loaders (physai.engine.loaders: from_mujoco, from_urdf, compile_tree) turn a MuJoCo model, a URDF or a
lesson Tree into a list of `BodySpec` and call `build`, which does, once, everything that does not depend
on the state:

- every joint becomes one or more links (physai.joints.links: a free joint is three world slides and a
  ball), chained in the body's joint order; the body's mass sits on its last link;
- bodies without joints are fused into the link that carries their parent (MuJoCo's `fusestatic`,
  Pinocchio's fixed joints); bodies welded to the world only add a constant potential energy;
- parents come before children (link_parentid[i] < i, -1 for the world), and dofs follow MuJoCo's order:
  body by body, joint by joint, so q and v are laid out exactly as MuJoCo's qpos and qvel.

Arrays follow MuJoCo's <object>_<attribute> naming; shapes are given per field. "Link frame" is the frame
of an engine link; the frame of a body with joints is the frame of its last link.
"""

import difflib
import functools
import math
import weakref
from dataclasses import dataclass, field

import numpy as np

from physai import joints
from physai.engine import model_checks
from physai.engine import geoms as geoms_module
from physai.engine.geoms import Geoms
from physai.spatial import mat_to_quat
from physai.exceptions import (InvalidInertiaError, InvalidModelError, UnknownBodyError, UnknownFrameError,
                               UnknownJointError, UnsupportedModelError)


def per_model(make):
    """make(model), made once per Model object and held weakly: the one store of what is made per Model and kept out
    of it (the Model stays as built: tests/test_model_constant.py). Dropped with the model, keeping no Model or its
    arrays alive as an lru_cache keyed on it would; keyed by the object, never by id(), which a later model may reuse.
    The values are held strongly: make must return nothing that references the model (it would then never be dropped).
    Threads: two first uses at once may both make, but setdefault (atomic under the GIL) stores the first and every
    thread returns that one object."""
    made = weakref.WeakKeyDictionary()

    @functools.wraps(make)
    def cached(model):
        value = made.get(model)
        return made.setdefault(model, make(model)) if value is None else value
    return cached


#: MuJoCo's default solver parameters of a constraint: solref (timeconst [s], dampratio), solimp (d0, dwidth, width [m | rad],
#: midpoint, power)
SOLREF = (0.02, 1.0)
SOLIMP = (0.9, 0.95, 0.001, 0.5, 2.0)


@dataclass(frozen=True)
class JointAddress:
    """Where one joint's numbers live (Model.joint): index q[..., qpos] and qd, qdd, tau, M[..., dof, dof] with dof.

    id:    the joint's index (MuJoCo's joint id; not its place in q or qd once a free or ball joint comes first)
    name:  its name ("" when unnamed: MuJoCo's); type: "free", "ball", "slide" or "hinge"
    body:  the body it moves, physai's index (Model.body_name; MuJoCo's jnt_bodyid minus one: physai has no world body)
    qpos:  slice of q, jnt_qposadr to + 7 (free), 4 (ball, w x y z) or 1
    dof:   slice of qd, qdd, tau and of M's rows and columns, jnt_dofadr to + 6 (free), 3 (ball) or 1
    """

    id: int
    name: str
    type: str
    body: int
    qpos: slice
    dof: slice


@dataclass
class JointSpec:
    """A joint as a loader reads it: type (joints.HINGE, SLIDE, BALL or FREE), unit axis and anchor in the body
    frame [m], ref (q of the rest pose, hinge/slide) [rad | m], per-dof armature [kg m^2 | kg] and damping,
    stiffness [N m/rad | N/m] and springref [rad | m] (hinge and slide only), name; and its constraints: a limit
    (limited, range [rad | m] (ball: the largest rotation angle is max(range)), margin, solref, solimp) and dry friction
    (frictionloss [N m | N] on each of its dofs, solreffriction, solimpfriction: one value for every dof, or one per dof)."""

    type: int
    axis: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 1.0]))
    anchor: np.ndarray = field(default_factory=lambda: np.zeros(3))
    ref: float = 0.0
    armature: np.ndarray | float = 0.0
    damping: np.ndarray | float = 0.0
    stiffness: float = 0.0
    springref: float = 0.0
    name: str = ""
    limited: bool = False
    range: tuple = (0.0, 0.0)
    margin: float = 0.0
    solref: tuple = SOLREF
    solimp: tuple = SOLIMP
    frictionloss: float = 0.0
    solreffriction: tuple = SOLREF
    solimpfriction: tuple = SOLIMP


#: equality constraint types, MuJoCo's numbers (mjtEq)
CONNECT, WELD, JOINT, TENDON = 0, 1, 2, 3
EQUALITY_NAMES = {CONNECT: "connect", WELD: "weld", JOINT: "joint", TENDON: "tendon"}
#: a tendon path's element types, MuJoCo's numbers (mjtWrap)
WRAP_NONE, WRAP_JOINT, WRAP_PULLEY, WRAP_SITE, WRAP_SPHERE, WRAP_CYLINDER = range(6)


@dataclass
class SiteSpec:
    """A named frame fixed in a body (MuJoCo's site): body index (-1: the world), position (3,) [m] and rotation (3, 3)
    in the body's frame."""

    body: int
    pos: np.ndarray
    rot: np.ndarray
    name: str


@dataclass
class EqualitySpec:
    """An equality constraint as a loader reads it, in MuJoCo's terms (mjModel's eq_*):

    type     CONNECT (a point of body obj1 held on a point of body obj2: a ball joint), WELD (the two bodies' relative
             pose held), JOINT (joint obj1's position a quartic polynomial of joint obj2's, or constant without one) or
             TENDON (the same of two tendons' lengths)
    obj1, obj2  body indices (-1: the world) for connect and weld; joint or tendon indices (obj2 -1: none) for joint
             and tendon
    data     (11,) MuJoCo's eq_data: connect: anchor in body 1, anchor in body 2 [m]; weld: anchor in body 2 [m], anchor
             in body 1 [m], relpose quaternion (w x y z), torquescale; joint: the polynomial's 5 coefficients
    solref, solimp, active (MuJoCo's eq_active0), name
    """

    type: int
    obj1: int
    obj2: int
    data: np.ndarray
    solref: tuple = SOLREF
    solimp: tuple = SOLIMP
    active: bool = True
    name: str = ""


@dataclass(frozen=True)
class Options:
    """What the constraint solver reads of MuJoCo's mjOption: timestep [s] (the solref safety floor, invdiscrete),
    integrator and eulerdamp (which step invdiscrete inverts: physai.integrators' names; MuJoCo's mjDSBL_EULERDAMP off),
    impratio (friction-to-normal impedance ratio), cone ("pyramidal" or "elliptic"), the solver's tolerance, iterations,
    ls_tolerance and ls_iterations (MuJoCo's Newton defaults), solver ("newton", "pgs" or "cg": mjSOL_NEWTON, mjSOL_PGS,
    mjSOL_CG), and which constraints are on (MuJoCo's disable flags off): equality, frictionloss, limit, contact, refsafe
    (time constants raised to at least 2 timesteps); ccd_tolerance [m] and ccd_iterations of the convex pairs' GJK and
    EPA (MuJoCo's defaults); noslip_iterations (0: off) and noslip_tolerance of the noslip sweeps after the solver; island:
    the solver runs on each constraint island alone (MuJoCo's mjDSBL_ISLAND off, its default; physai.engine.island)."""

    timestep: float = 0.002
    integrator: str = "euler"
    eulerdamp: bool = True
    impratio: float = 1.0
    cone: str = "pyramidal"
    tolerance: float = 1e-8
    iterations: int = 100
    ls_tolerance: float = 0.01
    ls_iterations: int = 50
    solver: str = "newton"
    equality: bool = True
    frictionloss: bool = True
    limit: bool = True
    contact: bool = True
    refsafe: bool = True
    ccd_tolerance: float = 1e-6
    ccd_iterations: int = 35
    noslip_iterations: int = 0
    noslip_tolerance: float = 1e-6
    island: bool = True


@dataclass
class BodySpec:
    """A body as a loader reads it: parent index (-1 world), rest pose (pos [m], rot) in the parent's frame,
    its joints in order, mass [kg], centre of mass com [m] and inertia about it [kg m^2] in its own frame."""

    parent: int
    pos: np.ndarray
    rot: np.ndarray
    joints: list
    mass: float
    com: np.ndarray
    inertia: np.ndarray
    name: str = ""
    quat: np.ndarray | None = None        # rot as a unit quaternion (w x y z) when the source has one (MuJoCo's body_quat)


@dataclass(frozen=True, eq=False)
class Model:
    """Constant model data of the engine (MuJoCo's mjModel for trees of hinge, slide, ball and free joints).

    Sizes: nq positions, nv velocities (nq != nv with ball or free joints), nu actuators, nbody bodies of the
    source model (the world excluded), njnt joints, nlink links (the engine's rigid units, one per hinge,
    slide or ball; four per free joint), gravity.

    Construction checks the model's numbers (physai.engine.model_checks): a float field that is not finite or outside its
    domain, a contact dimension other than 1, 3, 4 or 6 or unusable options raise InvalidModelError naming the field.

    compiled: the compiled engine's copy of the arrays (a physai.engine._native.Model), set by physai.engine.native on
    first use; None before, and without the compiled backend. Not a field and not pickled: each process makes its own.

    link_parentid   (nlink,)        parent link, -1 for the world; < the link's own index
    link_centerid   (nlink,)        link whose origin is the centre of this link's tree (spatial quantities are
                                    taken about it): the link carrying the tree's root body
    link_dofadr     (nlink,)        first dof of the link;  link_dofnum (nlink,): 1 (hinge, slide) or 3 (ball)
    link_mass       (nlink,)        mass of the link: its body and the bodies fused into it [kg]
    link_ipos       (nlink, 3)      their centre of mass, link frame [m]
    link_inertia    (nlink, 3, 3)   their rotational inertia about link_ipos, link frame [kg m^2]
    link_relative   (nlink,)        bool: the link's position relative to its tree's centre is summed from its
                                    parent's (the parent is the centre or is such a link), keeping its digits far away
    link_transforms physai.joints.LinkTransforms: jcalc of every link, link_transforms(q) -> (nlink, 3, 4, n)
    link_parents    list: link_parentid as a Python list (the per-link loops index lists faster than arrays)
    backward_links  list: the links that have a parent, deepest first: the order of every backward pass
    total_mass      float: the mass of every body, those welded to the world included [kg]
    link_subtreemass (nlink,)       the mass of the link's subtree: itself and its descendants [kg]
    frame_links     dict: frame_in_link's results by name, made as they are asked for (physai.kinematics.frame_in_link
                    and jacobians.frame_jacobian read it first: a plain attribute and a dict lookup for a name seen before).
                    The one exception to per_model: the only thing a public call writes into a Model (its entries;
                    tests/test_model_constant.py allows it alone). Read through per_model's store (a property), a lookup
                    took 0.27 us instead of 0.04 us, +0.23-0.28 us on a 0.63-0.90 us compiled frame_jacobian or
                    frame_velocity by name (Panda, hand timeit, load ~4 on 2 cores): far above 2%, so it stays here.
    dof_linkid      (nv,)           the link a dof moves
    dof_bodyid      (nv,)           the body a dof's joint moves (MuJoCo's dof_bodyid; made on first use)
    dof_parentid    (nv,)           previous dof towards the root, -1 at a root
    dof_motion      (nv, 6)         motion subspace S of each dof in its link frame about the link origin
    dof_armature    (nv,)           rotor inertia added to M's diagonal [kg m^2 | kg]
    dof_damping     (nv,)           joint damping, passive force -b v [N m s/rad | N s/m]
    dof_ancestor    (nv, nv)        bool, [i, j] true when dof i is dof j or one of its ancestors
    dof_Mrow, dof_Mcol, dof_Mmask   CRBA gather: M[i, j] = (S . Ic S)[dof_Mrow[i, j], dof_Mcol[i, j]] * dof_Mmask[i, j]
                                    (these four, O(nv^2), are made from dof_parentid on first use and held in
                                    per_model's store, not in the Model: `build` stays linear in the number of bodies, a
                                    20,000-link chain builds without them, and no call writes into the Model)
    dof_turns       (nv, nv)        float64, [j, k] 1 where moving along dof k turns dof j's motion (O(nv^2), on first
                                    use too: joints.turning_dofs)
    jnt_type, jnt_qposadr, jnt_dofadr, jnt_bodyid, jnt_name   (njnt,) the source joints (physai.joints types)
                                    (Model.joint(name or id): one joint's as q and qd slices, a JointAddress)
    jnt_stiffness   (njnt,)         spring stiffness of hinges and slides [N m/rad | N/m]; spring force
                                    -k (q - springref), energy 1/2 k (q - springref)^2
    jnt_springref   (njnt,)         [rad | m]
    spring_qposadr, spring_dofadr, spring_stiffness, spring_ref   (nspring,) the joints with a spring (hinges and
                                    slides with stiffness != 0): q entry, dof, k [N m/rad | N/m], springref [rad | m]
    body_linkid     (nbody,)        link each body moves with, -1 for bodies welded to the world
    body_pos, body_rot (nbody, 3), (nbody, 3, 3)   body frame in that link's frame (world for -1)
    body_mass, body_ipos (nbody,), (nbody, 3)      each body's own mass [kg] and centre of mass in its frame [m]
    body_name       (nbody,)        names (used in messages and by name look-ups). jnt_name, body_name and site_name
                                    are the source's own: "" for an unnamed joint, body or site, which answers to no
                                    name (messages call it "joint 3": model_checks.label)
    static_mass, static_com         mass welded to the world [kg] and its centre of mass [m]
    coords          physai.joints.Coordinates: q and v's layout (scalars, quaternions), qpos0
    actuators       physai.engine.actuators.Actuators or None
    constraints (MuJoCo's names; physai.engine.constraint builds their rows):
    jnt_axis, jnt_pos  (njnt, 3)    joint axis and anchor in the body frame [m]
    body_inertia    (nbody, 3, 3)   each body's own rotational inertia about its centre of mass, body frame [kg m^2]
    jnt_limited, jnt_range, jnt_margin, jnt_solref, jnt_solimp   (njnt,), (njnt, 2), (njnt,), (njnt, 2), (njnt, 5)
    dof_frictionloss, dof_solref, dof_solimp    (nv,), (nv, 2), (nv, 5)   dry friction [N m | N] and its parameters
    dof_simplenum   (nv,)           MuJoCo's dof_simplenum (its compiler's "simple" bodies: > 0 on their dofs), copied by
                                    from_mujoco; zeros from the other loaders (URDF, lesson trees). MuJoCo keeps no
                                    off-diagonal entries of such a dof in its reduced M, so neither does the implicit
                                    integrators' velocity derivative D (forward.dof_pattern)
    eq_type, eq_obj1id, eq_obj2id, eq_data, eq_solref, eq_solimp, eq_active0, eq_name   (neq, ...) EqualitySpec's fields
    body_quat       (nbody, 4)      body frame in its parent body's frame at the rest pose (w x y z, MuJoCo's body_quat)
    body_offset     (nbody, 3)      its origin in the parent body's frame [m] (MuJoCo's body_pos)
    body_parentid   (nbody,)        parent body, -1 for the world
    site_name, site_bodyid, site_pos, site_rot   (nsite,), (nsite,), (nsite, 3), (nsite, 3, 3) named frames fixed in
                                    a body (MuJoCo's sites; body -1: the world): their pose in the body's frame [m]
    opt             Options: timestep, cone, impratio, solver settings, which constraints are on
    geoms           physai.engine.geoms.Geoms: the collision geometry (MuJoCo's geoms, explicit pairs, excluded body pairs)
    unsupported     what the source model has that physai's constraint model does not (tendon limits, a PGS solver,
                    ...): the smooth dynamics run, the constraint functions refuse the model naming these
    passive forces besides joint springs and dampers (physai.engine.passive, MuJoCo's engine_passive.c):
    body_gravcomp   (nbody,)        gravity compensation: the fraction of each body's weight held up (MuJoCo's gravcomp)
    gravcomp_passive, gravcomp_actuator  (nv,) 1.0 where a dof's gravity compensation goes into qfrc_passive, or into
                                    qfrc_actuator (its joint's actuatorgravcomp, when the model has actuators), else 0.0
    fluid_density [kg/m^3], fluid_viscosity [Pa s], fluid_wind (3,) [m/s]   MuJoCo's opt.density, viscosity, wind
    fluid_bodyid, fluid_pos, fluid_rot  (nfluid,), (nfluid, 3), (nfluid, 3, 3) the fluid elements (a body's inertia box,
                                    or each of its ellipsoid-model geoms): body, frame in the body's frame [m]
    fluid_ellipsoid (nfluid,)       bool: the ellipsoid model (else the inertia box)
    fluid_size      (nfluid, 3)     the box's sides or the ellipsoid's semi-axes [m]
    fluid_coef      (nfluid, 12)    the ellipsoid's coefficients (MuJoCo's geom_fluid); zeros for a box
    tendons (physai.engine.tendon, MuJoCo's mj_tendon; ntendon tendons, nwrap path elements):
    tendon_adr, tendon_num (ntendon,)  each tendon's first path element and their number
    wrap_type, wrap_objid, wrap_prm (nwrap,)  the path: tendon.WRAP_JOINT (a fixed tendon's joint, prm its coefficient),
                                    WRAP_SITE, WRAP_SPHERE or WRAP_CYLINDER (a geom, prm its side site or -1), WRAP_PULLEY
                                    (prm its divisor): MuJoCo's mjtWrap and indices
    tendon_limited, tendon_range, tendon_margin, tendon_solref_lim, tendon_solimp_lim   (ntendon,), (ntendon, 2), ... a
                                    length limit [m | rad] as a constraint row (MuJoCo's mjCNSTR_LIMIT_TENDON)
    tendon_frictionloss, tendon_solref_fri, tendon_solimp_fri   dry friction along the tendon [N | N m]
    tendon_stiffness, tendon_damping, tendon_lengthspring (ntendon, 2)   the spring (zero force inside the dead band
                                    [lower, upper], in m | rad) and damper along the tendon
    tendon_armature (ntendon,)      inertia added to M as armature J^T J [kg | kg m^2]
    tendon_length0  (ntendon,)      the lengths at qpos0 (tendon equalities' references); tendon_name
    """

    nq: int
    nv: int
    nbody: int
    njnt: int
    nlink: int
    gravity: np.ndarray
    link_parentid: np.ndarray
    link_centerid: np.ndarray
    link_dofadr: np.ndarray
    link_dofnum: np.ndarray
    link_mass: np.ndarray
    link_ipos: np.ndarray
    link_inertia: np.ndarray
    link_relative: np.ndarray
    link_transforms: joints.LinkTransforms
    dof_linkid: np.ndarray
    dof_parentid: np.ndarray
    dof_motion: np.ndarray
    dof_armature: np.ndarray
    dof_damping: np.ndarray
    jnt_type: np.ndarray
    jnt_qposadr: np.ndarray
    jnt_dofadr: np.ndarray
    jnt_bodyid: np.ndarray
    jnt_stiffness: np.ndarray
    jnt_springref: np.ndarray
    jnt_name: tuple
    spring_qposadr: np.ndarray
    spring_dofadr: np.ndarray
    spring_stiffness: np.ndarray
    spring_ref: np.ndarray
    body_linkid: np.ndarray
    body_pos: np.ndarray
    body_rot: np.ndarray
    body_mass: np.ndarray
    body_ipos: np.ndarray
    body_name: tuple
    static_mass: float
    static_com: np.ndarray
    coords: joints.Coordinates
    actuators: object = None
    jnt_axis: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    jnt_pos: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    body_inertia: np.ndarray = field(default_factory=lambda: np.zeros((0, 3, 3)))
    jnt_limited: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    jnt_range: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    jnt_margin: np.ndarray = field(default_factory=lambda: np.zeros(0))
    jnt_solref: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    jnt_solimp: np.ndarray = field(default_factory=lambda: np.zeros((0, 5)))
    dof_frictionloss: np.ndarray = field(default_factory=lambda: np.zeros(0))
    dof_solref: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    dof_solimp: np.ndarray = field(default_factory=lambda: np.zeros((0, 5)))
    dof_simplenum: np.ndarray = field(default_factory=lambda: np.zeros(0, np.intp))
    eq_type: np.ndarray = field(default_factory=lambda: np.zeros(0, np.intp))
    eq_obj1id: np.ndarray = field(default_factory=lambda: np.zeros(0, np.intp))
    eq_obj2id: np.ndarray = field(default_factory=lambda: np.zeros(0, np.intp))
    eq_data: np.ndarray = field(default_factory=lambda: np.zeros((0, 11)))
    eq_solref: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    eq_solimp: np.ndarray = field(default_factory=lambda: np.zeros((0, 5)))
    eq_active0: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    eq_name: tuple = ()
    body_quat: np.ndarray = field(default_factory=lambda: np.zeros((0, 4)))
    body_offset: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    body_parentid: np.ndarray = field(default_factory=lambda: np.zeros(0, np.intp))
    site_name: tuple = ()
    site_bodyid: np.ndarray = field(default_factory=lambda: np.zeros(0, np.intp))
    site_pos: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    site_rot: np.ndarray = field(default_factory=lambda: np.zeros((0, 3, 3)))
    opt: Options = field(default_factory=Options)
    unsupported: tuple = ()
    geoms: Geoms = field(default_factory=Geoms)
    body_gravcomp: np.ndarray = field(default_factory=lambda: np.zeros(0))
    gravcomp_passive: np.ndarray = field(default_factory=lambda: np.zeros(0))
    gravcomp_actuator: np.ndarray = field(default_factory=lambda: np.zeros(0))
    fluid_density: float = 0.0
    fluid_viscosity: float = 0.0
    fluid_wind: np.ndarray = field(default_factory=lambda: np.zeros(3))
    fluid_bodyid: np.ndarray = field(default_factory=lambda: np.zeros(0, np.intp))
    fluid_pos: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    fluid_rot: np.ndarray = field(default_factory=lambda: np.zeros((0, 3, 3)))
    fluid_ellipsoid: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    fluid_size: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    fluid_coef: np.ndarray = field(default_factory=lambda: np.zeros((0, 12)))
    tendon_adr: np.ndarray = field(default_factory=lambda: np.zeros(0, np.intp))
    tendon_num: np.ndarray = field(default_factory=lambda: np.zeros(0, np.intp))
    wrap_type: np.ndarray = field(default_factory=lambda: np.zeros(0, np.intp))
    wrap_objid: np.ndarray = field(default_factory=lambda: np.zeros(0, np.intp))
    wrap_prm: np.ndarray = field(default_factory=lambda: np.zeros(0))
    tendon_limited: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    tendon_range: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    tendon_margin: np.ndarray = field(default_factory=lambda: np.zeros(0))
    tendon_solref_lim: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    tendon_solimp_lim: np.ndarray = field(default_factory=lambda: np.zeros((0, 5)))
    tendon_frictionloss: np.ndarray = field(default_factory=lambda: np.zeros(0))
    tendon_solref_fri: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    tendon_solimp_fri: np.ndarray = field(default_factory=lambda: np.zeros((0, 5)))
    tendon_stiffness: np.ndarray = field(default_factory=lambda: np.zeros(0))
    tendon_damping: np.ndarray = field(default_factory=lambda: np.zeros(0))
    tendon_lengthspring: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    tendon_armature: np.ndarray = field(default_factory=lambda: np.zeros(0))
    tendon_length0: np.ndarray = field(default_factory=lambda: np.zeros(0))
    tendon_name: tuple = ()

    def __post_init__(self):
        model_checks.check(self)
        for value in vars(self).values():
            if isinstance(value, np.ndarray):
                value.setflags(write=False)
        parents = self.link_parentid.tolist()
        object.__setattr__(self, "link_parents", parents)
        object.__setattr__(self, "backward_links", [i for i in range(self.nlink) if parents[i] >= 0][::-1])
        object.__setattr__(self, "total_mass", float(self.body_mass.sum()))
        subtree = self.link_mass.copy()                                   # backward pass over links: m_parent += m
        for i in self.backward_links:
            subtree[parents[i]] += subtree[i]
        subtree.setflags(write=False)
        object.__setattr__(self, "link_subtreemass", subtree)
        object.__setattr__(self, "frame_links", {})

    compiled = None                       # see above: set by physai.engine.native, dropped by __getstate__

    @property
    @per_model
    def dof_bodyid(self) -> np.ndarray:
        """(nv,) the body each dof's joint moves (MuJoCo's dof_bodyid); made on first use."""
        count = np.array([joints.NV[int(t)] for t in self.jnt_type], dtype=np.intp)
        return _read_only(np.repeat(self.jnt_bodyid, count))

    @property
    @per_model
    def dof_ancestor(self) -> np.ndarray:
        """(nv, nv) bool, [i, j] true when dof i is dof j or one of its ancestors; made on first use (O(nv^2))."""
        nv, parent = self.nv, self.dof_parentid.tolist()
        above = np.zeros((nv, nv), dtype=bool)        # above[j]: dof j's ancestors and itself, a row per dof
        for j in range(nv):                           # its parent's row and itself (parents come first)
            if parent[j] >= 0:
                above[j, :j] = above[parent[j], :j]
            above[j, j] = True
        return _read_only(np.ascontiguousarray(above.T))

    @property
    @per_model
    def dof_turns(self) -> np.ndarray:
        """(nv, nv) float64, [j, k] 1 where moving along dof k turns dof j's motion S_j by S_k x S_j (joints.turning_dofs:
        k is j or its ancestor, or both are rotations of one ball or free joint); made on first use (O(nv^2)), by
        physai.derivatives' analytic contact rows."""
        return _read_only(joints.turning_dofs(self.jnt_type, self.jnt_dofadr, self.dof_ancestor))

    @property
    @per_model
    def geom_dofs(self) -> np.ndarray:
        """(ngeom, nv) bool, [g, k] true when moving along dof k moves geom g (k on the chain of its body's link; none
        for a geom of the world or of a body without dofs); made on first use (O(ngeom nv)), by physai.derivatives'
        detection at its differenced points."""
        body = self.geoms.geom_bodyid
        link = np.full(len(body), -1, np.intp)                           # -1: the world's geoms (no body at all too)
        link[body >= 0] = self.body_linkid[body[body >= 0]]
        last = self.link_dofadr + self.link_dofnum - 1                    # each link's last dof: its chain's column
        chains = np.vstack([self.dof_ancestor[:, last].T, np.zeros((1, self.nv), bool)])   # row -1: no dof
        return _read_only(np.ascontiguousarray(chains[link]))

    @property
    @per_model
    def dof_ancestors(self) -> list[list[int]]:
        """Each dof's ancestors on dof_parentid's chain, from the root (the columns left of the diagonal in M's row:
        MuJoCo's M_colind, which the compiled model derives the same way); made on first use (O(nv depth))."""
        chains: list[list[int]] = []
        for p in self.dof_parentid.tolist():
            chains.append([] if p < 0 else chains[p] + [p])
        return chains

    @property
    @per_model
    def dof_Mrow(self) -> np.ndarray:
        """(nv, nv) CRBA gather rows: i where dof i is an ancestor of dof j, else j (see the class docstring)."""
        nv = np.arange(self.nv)
        return _read_only(np.where(self.dof_ancestor, nv[:, None], nv[None, :]))

    @property
    @per_model
    def dof_Mcol(self) -> np.ndarray:
        """(nv, nv) CRBA gather columns: j where dof i is an ancestor of dof j, else i."""
        nv = np.arange(self.nv)
        return _read_only(np.where(self.dof_ancestor, nv[None, :], nv[:, None]))

    @property
    @per_model
    def dof_Mmask(self) -> np.ndarray:
        """(nv, nv, 1) 1.0 where M[i, j] can be nonzero (one dof an ancestor of the other), else 0.0."""
        return _read_only((self.dof_ancestor | self.dof_ancestor.T).astype(float)[:, :, None])

    #: the constants derived from a model once, when it is built: MuJoCo's mj_setConst (physai.engine.setconst.set_const,
    #: the loaders' last step), each made by the module named and held from then on (Model.kept reads them). A model
    #: without geoms, contacts, gravity compensation or fluid makes empty ones. M's sparsity pattern (dof_ancestor and
    #: the gathers below, dof_ancestors), dof_turns and geom_dofs are the exception, made on first use and held in
    #: per_model's store (properties reading it; the Model's __dict__ stays as built): their size is nv times the tree's
    #: depth, nv^2 or ngeom nv, quadratic on a chain, and building stays linear in the links (tests/test_urdf.py)
    KEPT = ("collision_functions", "collision_candidates", "collision_broad_phase", "collision_groups",   # engine.collision
            "collision_shapes", "contact_dofs",
            "standalone_free_dofs",                                                                   # engine.support
            "pose_links",                                                                             # engine.smooth
            "link_dofchains", "fluid_links",                                                          # engine.passive
            "invweight0", "tendon_invweight0", "constraints_by_default", "floor_bodies")              # engine.setconst

    def keep(self, name: str, value) -> None:
        """Hold `value` as the constant `name`, one of KEPT, once: physai.engine.setconst.set_const's way of handing the
        model what it derives (MuJoCo's mj_setConst writing into mjModel); a constant held already is never replaced."""
        if name not in self.KEPT:
            raise KeyError(f"{name!r} is not one of Model.KEPT: a Model keeps no other derived value")
        if name in self.__dict__:
            raise KeyError(f"the Model holds {name!r} already: its constants are made once, by set_const")
        self.__dict__[name] = value

    def kept(self, name: str):
        """The constant `name` (one of KEPT) that set_const made when the model was built. Nothing else is written
        into a Model (tests/test_model_constant.py). InvalidModelError for a Model that did not go through set_const
        (one made by dataclasses.replace: pass it to physai.engine.set_const)."""
        try:
            return self.__dict__[name]
        except KeyError:
            if name not in self.KEPT:
                raise KeyError(f"{name!r} is not one of Model.KEPT: a Model keeps no other derived value") from None
            raise InvalidModelError(f"the Model holds no {name!r}: it was made without physai.engine.set_const (by "
                                    "dataclasses.replace?); set_const(model) derives its constants") from None

    def __getstate__(self) -> dict:
        """Pickled (Dask sends the Model to its workers) without its compiled copy, which cannot be pickled, and without
        frame_links' entries: a pickle's size is the model's, not what its uses made; the receiving process remakes the
        compiled copy on first use (physai.engine.native), as it does what per_model holds (M's pattern, dof_turns, ...)."""
        state = {name: value for name, value in self.__dict__.items() if name != "compiled"}
        state["frame_links"] = {}
        return state

    @property
    def nu(self) -> int:
        """Number of actuators (0 without actuators)."""
        return 0 if self.actuators is None else self.actuators.nu

    @property
    def ntendon(self) -> int:
        return len(self.tendon_adr)

    @property
    @per_model
    def has_tendon_forces(self) -> bool:
        """Whether a tendon acts on the dynamics: a spring, damper, armature, limit or friction loss, or an equality
        between tendons (a fixed tendon that only transmits an actuator's force does not count: Actuators hold it); both
        engines run them (physai.engine.tendon, cpp/tendon.h); made on first use."""
        return bool(self.ntendon and (self.tendon_stiffness.any() or self.tendon_damping.any() or self.tendon_armature.any()
                                      or self.tendon_limited.any() or self.tendon_frictionloss.any()
                                      or self.has_tendon_equality))

    @property
    def has_tendon_equality(self) -> bool:
        """Whether an equality constraint couples tendons (MuJoCo's mjEQ_TENDON)."""
        return bool((self.eq_type == TENDON).any())

    @property
    def qpos0(self) -> np.ndarray:
        """(nq,) the rest configuration: refs of hinges and slides, identity quaternions, free joints at the origin."""
        return self.coords.neutral.copy()

    def body_id(self, body) -> int:
        """Index of a body given by index or name; physai.exceptions.UnknownBodyError otherwise."""
        if isinstance(body, str):
            if (b := _named(self.body_name, body)) >= 0:
                return b
            known = ", ".join(repr(b) for b in self.body_name if b)
            raise UnknownBodyError(f"the model has no body named {body!r}; its bodies are {known or 'unnamed'}")
        if isinstance(body, (int, np.integer)) and not isinstance(body, bool) and 0 <= body < self.nbody:
            return int(body)
        raise UnknownBodyError(f"body {body!r} is not a body of the model: expected an index 0..{self.nbody - 1} or a body name")

    def joint(self, joint) -> JointAddress:
        """The q and qd slices, type and body of a joint given by name or index (JointAddress); UnknownJointError,
        naming the model's joints, otherwise. model.joint("left_knee").dof indexes qd, tau and M's diagonal, where
        the joint's index would be off by 5 behind a free joint (nv 6, one joint) and by 2 behind a ball."""
        j = self._joint_index(joint)
        kind = int(self.jnt_type[j])
        qadr, vadr = int(self.jnt_qposadr[j]), int(self.jnt_dofadr[j])
        return JointAddress(j, self.jnt_name[j], joints.NAMES[kind], int(self.jnt_bodyid[j]),
                            slice(qadr, qadr + joints.NQ[kind]), slice(vadr, vadr + joints.NV[kind]))

    def _joint_index(self, joint) -> int:
        if (j := _named(self.jnt_name, joint)) >= 0:
            return j
        if isinstance(joint, (int, np.integer)) and not isinstance(joint, bool) and 0 <= joint < self.njnt:
            return int(joint)
        known = [n for n in self.jnt_name if n]
        close = difflib.get_close_matches(str(joint), known, n=3) if isinstance(joint, str) else []
        hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
        raise UnknownJointError(f"the model has no joint {joint!r}: expected an index 0..{self.njnt - 1} or a name.{hint} "
                                f"Its joints: {', '.join(map(repr, known)) or 'unnamed'}")

    @property
    def nsite(self) -> int:
        return len(self.site_name)

    @property
    def frame_name(self) -> tuple:
        """The named frames, in the order kinematics.frame_poses(frames=None) returns them: the sites, then the bodies
        (a name may stand twice, a site's and a body's: Model.frame's "site:" and "body:" tell them apart)."""
        return self.site_name + self.body_name

    def frame(self, name: str) -> tuple[int, np.ndarray, np.ndarray]:
        """(body, pos (3,), rot (3, 3)) of the frame `name`: a site (its body and pose in the body's frame) or, when no
        site has that name, a body (itself, at its origin); body -1 is the world. "site:NAME" and "body:NAME" choose
        where a site and a body share a name (MuJoCo allows it); a name that itself starts so ("body:x") is found as it
        is when the part after the prefix names no such frame. UnknownFrameError otherwise."""
        if isinstance(name, str):
            prefixed = name.startswith(("site:", "body:"))
            for kind, bare in ((name[:4], name[5:]), ("", name)) if prefixed else (("", name),):
                if kind != "body" and (k := _named(self.site_name, bare)) >= 0:
                    return int(self.site_bodyid[k]), self.site_pos[k], self.site_rot[k]
                if kind != "site" and (b := _named(self.body_name, bare)) >= 0:
                    return b, np.zeros(3), np.eye(3)
        known = sorted({n for n in self.frame_name if n} - {name})
        close = difflib.get_close_matches(str(name), known, n=3)
        hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
        raise UnknownFrameError(f"the model has no site or body named {name!r}.{hint} Its frames: "
                                f"{', '.join(map(repr, known[:40]))}{' ...' if len(known) > 40 else ''}")

    def frame_in_link(self, name: str) -> tuple[int, np.ndarray, np.ndarray]:
        """(link, pos (3,), rot (3, 3)) of the frame `name` (Model.frame) in the frame of the engine link it moves with;
        link -1: fixed in the world (pos, rot in world coordinates). Made once per name and kept."""
        found = self.frame_links.get(name) if type(name) is str else None
        if found is None:
            b, pos, rot = self.frame(name)
            if b < 0:
                found = (-1, np.array(pos, dtype=float), np.array(rot, dtype=float))
            else:
                found = (int(self.body_linkid[b]), self.body_pos[b] + self.body_rot[b] @ pos, self.body_rot[b] @ rot)
            for a in found[1:]:
                a.setflags(write=False)
            if isinstance(name, str):
                self.frame_links[name] = found
        return found


    def __repr__(self) -> str:
        return f"<physai.engine.Model: nq={self.nq}, nv={self.nv}, nu={self.nu}, {self.nbody} bodies, {self.nlink} links>"


def _named(names: tuple, name) -> int:
    """The index of the entry called `name` in a model's names (MuJoCo's own: "" when unnamed), or -1: an unnamed
    entry answers to no name (MuJoCo's mj_name2id)."""
    return names.index(name) if isinstance(name, str) and name and name in names else -1


def _read_only(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def merge(mass_a, com_a, inertia_a, mass_b, com_b, inertia_b):
    """Mass, centre of mass and inertia about it of two rigid parts expressed in one frame (parallel axes)."""
    mass = mass_a + mass_b
    com = (mass_a * com_a + mass_b * com_b) / mass if mass > 0 else com_a
    inertia = inertia_a + inertia_b
    for m, c in ((mass_a, com_a), (mass_b, com_b)):
        d = c - com
        inertia = inertia + m * (d @ d * np.eye(3) - np.outer(d, d))
    return mass, com, inertia


def build(bodies: list[BodySpec], gravity, actuators=None, equalities: list[EqualitySpec] = (), opt: Options | None = None,
          unsupported: tuple = (), sites: list[SiteSpec] = (), geoms: Geoms | None = None, passive: dict | None = None,
          tendons: dict | None = None, dof_simplenum=None) -> Model:
    """The Model of a body list (parents before children), its equality constraints, solver options, sites and
    collision geoms, passive: the Model's gravity compensation and fluid fields by name (body_gravcomp, fluid_*; see
    Model), tendons: its tendon_* and wrap_* fields by name, and dof_simplenum (nv,) as given (zeros without); see the
    module docstring. Computes nothing of a state."""
    nb = len(bodies)
    geoms = Geoms() if geoms is None else geoms
    geoms.check_bodies(nb)
    owner = np.full(nb, -1)                             # link each body moves with
    rel_R, rel_p = np.zeros((nb, 3, 3)), np.zeros((nb, 3))
    L = dict(parent=[], pos=[], rot=[], link=[], joint=[], body=[])   # per link
    jnts = []                                          # (JointSpec, body, qposadr, dofadr)
    nq = nv = 0
    for b, spec in enumerate(bodies):
        if not -1 <= spec.parent < b:
            raise InvalidModelError(f"body {b} ({spec.name!r}) has parent {spec.parent}; a parent must come first")
        pR, pp, plink = (rel_R[spec.parent], rel_p[spec.parent], owner[spec.parent]) if spec.parent >= 0 \
            else (np.eye(3), np.zeros(3), -1)
        R0, p0 = pR @ spec.rot, pp + pR @ spec.pos       # rest pose in the parent's link frame
        if not spec.joints:
            owner[b], rel_R[b], rel_p[b] = plink, R0, p0
            continue
        who = f"body {model_checks.label(spec.name, b, 'body')!r}"
        types = [joints.check_type(j.type, who) for j in spec.joints]
        joints.check_body(types, plink < 0, who)
        for k, j in enumerate(spec.joints):
            jnts.append((j, b, nq, nv))
            for link in joints.links(types[k], j.axis, j.anchor):
                first = len(L["parent"]) == 0 or L["body"][-1] != b
                pos, rot = joints.rest_pose(link, first, p0, R0)
                L["parent"].append(plink if first else len(L["parent"]) - 1)
                L["pos"].append(pos), L["rot"].append(rot), L["link"].append(link)
                L["joint"].append((len(jnts) - 1, nq + link.qoffset, nv + link.voffset)), L["body"].append(b)
            nq, nv = nq + joints.NQ[types[k]], nv + joints.NV[types[k]]
        owner[b], rel_R[b], rel_p[b] = len(L["parent"]) - 1, np.eye(3), np.zeros(3)

    nlink = len(L["parent"])
    parent = np.array(L["parent"], dtype=np.intp)
    mass, ipos, inertia = np.zeros(nlink), np.zeros((nlink, 3)), np.zeros((nlink, 3, 3))
    static = (0.0, np.zeros(3), np.zeros((3, 3)))
    for b, spec in enumerate(bodies):                  # each body's mass into its link (its frame), or the world
        part = (float(spec.mass), rel_p[b] + rel_R[b] @ spec.com, rel_R[b] @ spec.inertia @ rel_R[b].T)
        if owner[b] < 0:
            static = merge(*static, *part)
        else:
            k = owner[b]
            mass[k], ipos[k], inertia[k] = merge(mass[k], ipos[k], inertia[k], *part)
    inertia = 0.5 * (inertia + inertia.transpose(0, 2, 1))

    # dofs, motion subspaces and the two kinds of link transforms
    dofnum = np.array([joints.NV[link.type] for link in L["link"]], dtype=np.intp)
    dofadr = np.array([jq[2] for jq in L["joint"]], dtype=np.intp)
    dof_link = np.repeat(np.arange(nlink), dofnum)
    motion = np.concatenate([joints.motion_subspace(link) for link in L["link"]]) if nlink else np.zeros((0, 6))
    dof_parent = np.empty(nv, dtype=np.intp)
    for i in range(nlink):
        up = parent[i]
        dof_parent[dofadr[i]] = dofadr[up] + dofnum[up] - 1 if up >= 0 else -1
        dof_parent[dofadr[i] + 1:dofadr[i] + dofnum[i]] = np.arange(dofadr[i], dofadr[i] + dofnum[i] - 1)

    def ref(i):
        j, link = jnts[L["joint"][i][0]][0], L["link"][i]
        return 0.0 if link.world_axes else float(j.ref)

    # the centre of each tree: the link carrying its root body (the body whose parent is the world or welded to it);
    # parents come first, so one pass in body order finds every body's root body
    root_body = list(range(nb))
    for b, spec in enumerate(bodies):
        if spec.parent >= 0 and owner[spec.parent] >= 0:
            root_body[b] = root_body[spec.parent]
    center = np.array([owner[root_body[b]] for b in L["body"]], dtype=np.intp)
    relative = np.zeros(nlink, dtype=bool)
    for i in range(nlink):
        p = parent[i]
        relative[i] = p >= 0 and center[i] != i and center[p] == center[i] and (center[p] == p or relative[p])

    per_dof = lambda attr: np.concatenate([np.broadcast_to(np.asarray(getattr(j, attr), float), (joints.NV[j.type],))  # noqa: E731
                                           for j, *_ in jnts]) if jnts else np.zeros(0)
    jtype = np.array([j.type for j, *_ in jnts], dtype=np.intp)
    qadr = np.array([a for _, _, a, _ in jnts], dtype=np.intp)
    vadr = np.array([a for *_, a in jnts], dtype=np.intp)
    stiff = np.array([float(j.stiffness) for j, *_ in jnts])
    springless = [model_checks.label(j.name, k, "joint") for k, (j, *_) in enumerate(jnts) if j.stiffness and not joints.has_spring(j.type)]
    if springless:
        raise UnsupportedModelError(f"joint {springless[0]!r} has stiffness; physai's springs are on hinges and slides")
    springref = np.array([float(j.springref) for j, *_ in jnts])
    armature = per_dof("armature")
    if (armature < 0).any():
        raise InvalidInertiaError(f"armature {armature} has a negative entry; rotor inertia must be >= 0")
    spring = np.flatnonzero(stiff != 0)
    return Model(
        nq=nq, nv=nv, nbody=nb, njnt=len(jnts), nlink=nlink, gravity=np.array(gravity, dtype=float),
        link_parentid=parent, link_centerid=center, link_dofadr=dofadr, link_dofnum=dofnum,
        link_mass=mass, link_ipos=ipos, link_inertia=inertia, link_relative=relative,
        link_transforms=joints.LinkTransforms.of(L["link"], L["rot"], L["pos"], [jq[1] for jq in L["joint"]],
                                                 [ref(i) for i in range(nlink)]),
        dof_linkid=dof_link, dof_parentid=dof_parent, dof_motion=motion.reshape(-1, 6),
        dof_armature=armature, dof_damping=per_dof("damping"),
        dof_simplenum=np.zeros(nv, np.intp) if dof_simplenum is None else np.array(dof_simplenum, dtype=np.intp),
        jnt_type=jtype, jnt_qposadr=qadr, jnt_dofadr=vadr, jnt_bodyid=np.array([b for _, b, *_ in jnts], dtype=np.intp),
        jnt_stiffness=stiff, jnt_springref=springref, jnt_name=tuple(j.name for j, *_ in jnts),
        spring_qposadr=qadr[spring], spring_dofadr=vadr[spring], spring_stiffness=stiff[spring], spring_ref=springref[spring],
        body_linkid=owner.astype(np.intp), body_pos=rel_p, body_rot=rel_R,
        body_mass=np.array([float(s.mass) for s in bodies]), body_ipos=np.array([s.com for s in bodies]).reshape(-1, 3),
        body_name=tuple(s.name for s in bodies),
        static_mass=float(static[0]), static_com=static[1],
        coords=joints.Coordinates.of(jtype, qadr, vadr, [float(j.ref) for j, *_ in jnts], nq, nv),
        actuators=actuators,
        **_constraint_fields(bodies, jnts, equalities, len((tendons or {}).get("tendon_adr", ()))),
        opt=Options() if opt is None else opt, unsupported=tuple(unsupported), **_site_fields(sites, nb), geoms=geoms,
        **_passive_fields(passive or {}, nb, nv), **_tendon_fields(tendons or {}, jtype, len(sites), geoms),
    )


def _tendon_fields(tendons: dict, jnt_type: np.ndarray, nsite: int, geoms: Geoms) -> dict:
    """The tendon fields as given, each path element checked to name an object the model has: a hinge or slide joint,
    a site, a sphere or cylinder geom (with a side site or -1), a pulley with a divisor > 0; InvalidModelError naming the
    tendon and the element otherwise."""
    if not tendons:
        return {}
    names = tendons.get("tendon_name", ())
    kinds, ids, prm = tendons["wrap_type"], tendons["wrap_objid"], tendons["wrap_prm"]
    spans = list(zip(tendons["tendon_adr"], tendons["tendon_num"]))
    nwrap = len(kinds)
    if len(ids) != nwrap or len(prm) != nwrap:
        raise InvalidModelError(f"wrap_type, wrap_objid and wrap_prm have {nwrap}, {len(ids)} and {len(prm)} entries: "
                                "expected one each per path element")
    for t, (adr, num) in enumerate(spans):
        who = f"tendon {names[t] if t < len(names) and names[t] else t!r}"
        if not (0 <= adr and 0 <= num <= nwrap - adr):
            raise InvalidModelError(f"{who}: its path elements tendon_adr = {adr}, tendon_num = {num} lie outside the "
                                    f"{nwrap} wrap entries: expected 0 <= adr and adr + num <= {nwrap}")
        for w in range(adr, adr + num):
            kind, i = int(kinds[w]), int(ids[w])
            what = {WRAP_JOINT: ("a joint", len(jnt_type)), WRAP_SITE: ("a site", nsite), WRAP_SPHERE: ("a geom", geoms.ngeom),
                    WRAP_CYLINDER: ("a geom", geoms.ngeom), WRAP_PULLEY: ("a pulley", 1)}.get(kind)
            if what is None:
                raise InvalidModelError(f"{who}: path element {w - adr} has type {kind}: expected a joint, site, sphere "
                                        "or cylinder geom, or pulley (MuJoCo's mjtWrap 1..5)")
            if kind != WRAP_PULLEY and not 0 <= i < what[1]:
                raise InvalidModelError(f"{who}: path element {w - adr} names {what[0]} {i}; the model has {what[1]} "
                                        f"({what[0][2:]} indices 0..{what[1] - 1})")
            if kind == WRAP_JOINT and jnt_type[i] not in (joints.HINGE, joints.SLIDE):
                raise InvalidModelError(f"{who}: path element {w - adr} is joint {i}, a {joints.NAMES[jnt_type[i]]} joint: a "
                                        "fixed tendon's joints are hinges and slides")
            if kind in (WRAP_SPHERE, WRAP_CYLINDER):
                gtype = int(geoms.geom_type[i])
                if gtype != {WRAP_SPHERE: geoms_module.SPHERE, WRAP_CYLINDER: geoms_module.CYLINDER}[kind]:
                    raise InvalidModelError(f"{who} wraps around {geoms.describe(i)}, of geom type {gtype}: expected a "
                                            "sphere or cylinder geom")
                radius = float(geoms.geom_size[i, 0])
                if not (math.isfinite(radius) and radius > 0):
                    raise InvalidModelError(f"{who} wraps around {geoms.describe(i)} of radius {radius!r}: expected a "
                                            "finite radius > 0")
                if not -1 <= round(prm[w]) < nsite:
                    raise InvalidModelError(f"{who}: the side site of its wrap around {geoms.describe(i)} is {prm[w]}; "
                                            f"expected -1 (none) or a site 0..{nsite - 1}")
            if kind == WRAP_PULLEY and not prm[w] > 0:
                raise InvalidModelError(f"{who}: a pulley's divisor is {prm[w]}: expected a value > 0")
    return tendons


def _passive_fields(passive: dict, nbody: int, nv: int) -> dict:
    """The Model's gravity compensation fields, zero where not given (body_gravcomp (nbody,), gravcomp_passive and
    gravcomp_actuator (nv,)), and the fluid fields as given."""
    return {"body_gravcomp": np.zeros(nbody), "gravcomp_passive": np.ones(nv), "gravcomp_actuator": np.zeros(nv), **passive}


def _site_fields(sites: list[SiteSpec], nbody: int) -> dict:
    """The Model's site arrays; a site on a body the list does not have is an InvalidModelError."""
    for k, site in enumerate(sites):
        if not -1 <= site.body < nbody:
            raise InvalidModelError(f"site {model_checks.label(site.name, k, 'site')!r} is on body {site.body}; the model has "
                                    f"{nbody} bodies (-1: the world)")
    return dict(site_name=tuple(site.name for site in sites), site_bodyid=np.array([site.body for site in sites], dtype=np.intp),
                site_pos=np.array([site.pos for site in sites], dtype=float).reshape(-1, 3),
                site_rot=np.array([site.rot for site in sites], dtype=float).reshape(-1, 3, 3))


def _constraint_fields(bodies: list[BodySpec], jnts: list, equalities: list[EqualitySpec], ntendon: int = 0) -> dict:
    """The Model's constraint arrays from the joints' limits and friction, the equalities and the bodies' rest poses."""
    floats = lambda rows, width: np.array(rows, dtype=float).reshape(-1, width)            # noqa: E731
    # a joint's value for each of its dofs: one value shared, or one per dof (a ball's or free joint's own)
    per_dof = lambda attr, width: floats([row for j, *_ in jnts for row in np.broadcast_to(  # noqa: E731
        floats(getattr(j, attr), width), (joints.NV[j.type], width))], width)
    for e in equalities:
        if e.type not in EQUALITY_NAMES:
            raise UnsupportedModelError(f"equality {e.name!r}: unknown type {e.type}; physai has connect, weld, joint and "
                                        "tendon equalities")
        scalar = e.type in (JOINT, TENDON)
        objects = {JOINT: len(jnts), TENDON: ntendon}.get(e.type, len(bodies))
        if not (0 <= e.obj1 < objects or (not scalar and e.obj1 == -1)) or not -1 <= e.obj2 < objects:
            kind = {JOINT: "joints", TENDON: "tendons"}.get(e.type, "bodies")
            raise InvalidModelError(f"equality {e.name!r} names {EQUALITY_NAMES[e.type]} objects {e.obj1}, {e.obj2}; "
                                    f"the model has {objects} {kind}")
    return dict(
        jnt_axis=floats([j.axis for j, *_ in jnts], 3), jnt_pos=floats([j.anchor for j, *_ in jnts], 3),
        body_inertia=np.array([b.inertia for b in bodies], dtype=float).reshape(-1, 3, 3),
        jnt_limited=np.array([bool(j.limited) for j, *_ in jnts], dtype=bool),
        jnt_range=floats([j.range for j, *_ in jnts], 2), jnt_margin=floats([j.margin for j, *_ in jnts], 1)[:, 0],
        jnt_solref=floats([j.solref for j, *_ in jnts], 2), jnt_solimp=floats([j.solimp for j, *_ in jnts], 5),
        dof_frictionloss=per_dof("frictionloss", 1)[:, 0], dof_solref=per_dof("solreffriction", 2),
        dof_solimp=per_dof("solimpfriction", 5),
        eq_type=np.array([e.type for e in equalities], dtype=np.intp), eq_obj1id=np.array([e.obj1 for e in equalities], dtype=np.intp),
        eq_obj2id=np.array([e.obj2 for e in equalities], dtype=np.intp), eq_data=floats([e.data for e in equalities], 11),
        eq_solref=floats([e.solref for e in equalities], 2), eq_solimp=floats([e.solimp for e in equalities], 5),
        eq_active0=np.array([bool(e.active) for e in equalities], dtype=bool), eq_name=tuple(e.name for e in equalities),
        body_quat=floats([b.quat if b.quat is not None else mat_to_quat(b.rot) for b in bodies], 4),
        body_offset=floats([b.pos for b in bodies], 3),
        body_parentid=np.array([b.parent for b in bodies], dtype=np.intp),
    )
