"""Loaders: a Model from a MuJoCo model (MjModel, model name or MJCF path), a URDF, or a lesson Tree.

They read static model data, build a body list (physai.engine.model.BodySpec) and call build, then set_const
(the constants derived once, MuJoCo's mj_setConst: physai.engine.setconst); nothing here depends on a state.
Joint-type knowledge stays in physai.joints: the loaders only name the type each joint has.

    from_mujoco(m)                        MjModel | name | path -> Model (constraints are not modelled)
    from_urdf(source, floating_base=False)  URDF path, text or bytes -> Model; floating_base puts a free joint at the root
    compile_tree(tree)                    a lesson Tree (physai.dynamics.Tree, read by its fields) -> Model
    as_model(source)                      any of these, or a Model itself
    actuators_from_mujoco(m)              the Actuators of an MjModel
"""

from pathlib import Path

import mujoco
import numpy as np

from physai import joints, models, validation
from physai.engine import urdf
from physai.engine.actuators import Actuators
from physai.engine.geoms import Geoms, Hfields, Meshes, spans
from physai.engine.model import CONNECT, JOINT, TENDON, WELD, BodySpec, EqualitySpec, JointSpec, Model, Options, SiteSpec, build
from physai.engine.model_checks import label
from physai.engine.passive import MINVAL
from physai.engine.setconst import set_const
from physai.exceptions import InvalidModelError, UnsupportedModelError
from physai.spatial import quat_to_mat

_FROM_MJ = {int(mujoco.mjtJoint.mjJNT_FREE): joints.FREE, int(mujoco.mjtJoint.mjJNT_BALL): joints.BALL,
            int(mujoco.mjtJoint.mjJNT_SLIDE): joints.SLIDE, int(mujoco.mjtJoint.mjJNT_HINGE): joints.HINGE}
#: the fields of a lesson Tree (physai.dynamics.Tree) and of its bodies that compile_tree reads
TREE_FIELDS = ("bodies", "armature", "gravity", "damping", "stiffness", "springref")
TREE_BODY_FIELDS = ("parent", "pos", "rot", "joint", "axis", "anchor", "mass", "com", "inertia", "name", "ref",
                    "joint_name")


def is_tree(source) -> bool:
    """Whether source has a lesson Tree's fields (physai.dynamics.Tree, or anything shaped like it)."""
    return all(hasattr(source, name) for name in TREE_FIELDS)


def as_model(source) -> Model:
    """A Model from a Model (itself), a lesson Tree (compile_tree), an MjModel, a model name or an MJCF path
    (from_mujoco): what every function of physai that takes a model accepts."""
    if isinstance(source, Model):
        return source
    if is_tree(source):
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
    (actuators_from_mujoco). Contacts, limits and equality constraints are not modelled: compare
    with MuJoCo with mjDSBL_CONSTRAINT, gravity compensation and fluid forces (passive_from_mujoco). Raises
    UnsupportedModelError for passive forces physai does not model (polynomial or tendon springs and dampers).
    """
    m = models.as_mjmodel(source, "from_mujoco")
    models.check_passive_forces(m, body_forces=True)
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
                name=m.joint(j).name, limited=bool(m.jnt_limited[j]), range=tuple(m.jnt_range[j]),
                margin=float(m.jnt_margin[j]), solref=tuple(m.jnt_solref[j]), solimp=tuple(m.jnt_solimp[j]),
                frictionloss=m.dof_frictionloss[va:va + joints.NV[t]].copy(), solreffriction=m.dof_solref[va:va + joints.NV[t]].copy(),
                solimpfriction=m.dof_solimp[va:va + joints.NV[t]].copy()))
        mass, com, inertia = models.body_inertia(m, b)
        who = f"body {m.body(b).name or b!r}"
        validation.inertia(who, inertia)
        bodies.append(BodySpec(int(m.body_parentid[b]) - 1, m.body_pos[b].copy(), quat_to_mat(m.body_quat[b]), specs,
                               validation.mass(who, mass), com, inertia, m.body(b).name, m.body_quat[b].copy()))
    gravity = np.zeros(3) if off & mujoco.mjtDisableBit.mjDSBL_GRAVITY else m.opt.gravity.copy()
    equalities, unsupported = _equalities_from_mujoco(m)
    sites = [SiteSpec(int(m.site_bodyid[k]) - 1, m.site_pos[k].copy(), quat_to_mat(m.site_quat[k]), m.site(k).name)
             for k in range(m.nsite)]
    return set_const(build(bodies, gravity, actuators_from_mujoco(m) if m.nu else None, equalities, options_from_mujoco(m),
                           unsupported + _unsupported_constraints(m), sites, geoms_from_mujoco(m), passive_from_mujoco(m),
                           tendons_from_mujoco(m), m.dof_simplenum))


def tendons_from_mujoco(m: mujoco.MjModel) -> dict:
    """The Model's tendon fields of an MjModel (physai.engine.model.Model: tendon_*, wrap_*), as MuJoCo's mj_tendon,
    mj_passive and constraints read them: springs and dampers off with MuJoCo's spring and damper flags; the spring's
    dead band (tendon_lengthspring) and the lengths at qpos0 (tendon_length0) as MuJoCo's compiler set them.
    UnsupportedModelError for armature on a spatial tendon (its Jdot qd bias is not modelled)."""
    if not m.ntendon:
        return {}
    first = m.wrap_type[np.clip(m.tendon_adr, 0, max(m.nwrap - 1, 0))] if m.nwrap else np.zeros(m.ntendon, int)
    spatial = first != mujoco.mjtWrap.mjWRAP_JOINT                       # (a tendon_adr outside: named by Model)
    heavy = np.flatnonzero(spatial & (m.tendon_armature != 0))
    if heavy.size:
        raise UnsupportedModelError(f"tendon {m.tendon(int(heavy[0])).name or int(heavy[0])!r} is spatial and has armature: "
                                    "its bias force (MuJoCo's mj_tendonBias, armature J (Jdot qd)) is not modelled; "
                                    "physai models armature on fixed tendons")
    off, bit = m.opt.disableflags, mujoco.mjtDisableBit
    spring, damper = not off & bit.mjDSBL_SPRING, not off & bit.mjDSBL_DAMPER
    ints = lambda x: np.asarray(x, dtype=np.intp).copy()         # noqa: E731
    return dict(tendon_adr=ints(m.tendon_adr), tendon_num=ints(m.tendon_num), wrap_type=ints(m.wrap_type),
                wrap_objid=ints(m.wrap_objid), wrap_prm=m.wrap_prm.copy(), tendon_limited=m.tendon_limited.astype(bool),
                tendon_range=m.tendon_range.copy(), tendon_margin=m.tendon_margin.copy(),
                tendon_solref_lim=m.tendon_solref_lim.copy(), tendon_solimp_lim=m.tendon_solimp_lim.copy(),
                tendon_frictionloss=m.tendon_frictionloss.copy(), tendon_solref_fri=m.tendon_solref_fri.copy(),
                tendon_solimp_fri=m.tendon_solimp_fri.copy(), tendon_stiffness=m.tendon_stiffness * spring,
                tendon_damping=m.tendon_damping * damper, tendon_lengthspring=m.tendon_lengthspring.copy(),
                tendon_armature=m.tendon_armature.copy(), tendon_length0=m.tendon_length0.copy(),
                tendon_name=tuple(m.tendon(t).name for t in range(m.ntendon)))


def passive_from_mujoco(m: mujoco.MjModel) -> dict:
    """The Model's gravity compensation and fluid fields of an MjModel (physai.engine.model.Model: body_gravcomp,
    gravcomp_passive, gravcomp_actuator, fluid_*), as MuJoCo's mj_passive applies them: none when its spring and damper
    flags are both off; gravity compensation only with gravity on; a joint's actuatorgravcomp goes into the actuators'
    force when the model has actuators (and is lost without: mj_fwdActuation), refused on a joint that also limits its
    actuator force; fluid forces when density or viscosity is not zero, on every body of mass >= mjMINVAL: its geoms of
    fluidshape "ellipsoid" if it has any, else its inertia box."""
    off, bit = m.opt.disableflags, mujoco.mjtDisableBit
    if off & bit.mjDSBL_SPRING and off & bit.mjDSBL_DAMPER:
        return {}
    gravity_on = not off & bit.mjDSBL_GRAVITY and bool(np.any(m.opt.gravity != 0))
    actuated = m.nu > 0 and not off & bit.mjDSBL_ACTUATION
    dof_jnt = m.dof_jntid
    to_actuator = m.jnt_actgravcomp[dof_jnt].astype(bool)
    both = np.flatnonzero(m.jnt_actgravcomp.astype(bool) & m.jnt_actfrclimited.astype(bool))
    if gravity_on and m.body_gravcomp.any() and both.size:
        j = int(both[0])
        raise UnsupportedModelError(f"joint {label(m.joint(j).name, j, 'joint')!r} takes its gravity compensation through the "
                                    "actuators (actuatorgravcomp) and limits its actuator force (actuatorfrcrange); "
                                    "physai models actuatorgravcomp on joints without that limit")
    fields = {"body_gravcomp": m.body_gravcomp[1:] * gravity_on, "gravcomp_passive": (~to_actuator).astype(float),
              "gravcomp_actuator": (to_actuator & actuated).astype(float)}
    if m.opt.density or m.opt.viscosity:
        fields.update(_fluid_elements(m), fluid_density=float(m.opt.density), fluid_viscosity=float(m.opt.viscosity),
                      fluid_wind=m.opt.wind.copy())
    return fields


def _fluid_elements(m: mujoco.MjModel) -> dict:
    """The Model's fluid_* element arrays: per body of mass >= mjMINVAL, its ellipsoid-model geoms (geom_fluid[0] > 0:
    the interaction coefficient) each in its geom frame, or else its inertia box in its inertial frame."""
    E = {name: [] for name in ("bodyid", "pos", "rot", "ellipsoid", "size", "coef")}

    def add(b, pos, rot, ellipsoid, size, coef):
        for name, value in zip(E, (b - 1, pos, rot, ellipsoid, size, coef)):
            E[name].append(value)

    geom_pos, geom_quat = geom_frames(m)
    for b in range(1, m.nbody):
        if m.body_mass[b] < MINVAL:
            continue
        geoms = range(m.body_geomadr[b], m.body_geomadr[b] + m.body_geomnum[b])
        if any(m.geom_fluid[g, 0] > 0 for g in geoms):
            for g in (g for g in geoms if m.geom_fluid[g, 0] != 0):
                add(b, geom_pos[g], quat_to_mat(geom_quat[g]), True, _semiaxes(m, g), m.geom_fluid[g].copy())
        else:
            com, R = models.inertial_frame(m, b)
            I, mass = m.body_inertia[b], m.body_mass[b]
            # the box of equal mass and principal moments: side_i = sqrt(6 (I_j + I_k - I_i) / m)
            box = [np.sqrt(max(MINVAL, I[(i + 1) % 3] + I[(i + 2) % 3] - I[i]) / mass * 6.0) for i in range(3)]
            add(b, com, R, False, np.array(box), np.zeros(12))
    return {"fluid_bodyid": np.array(E["bodyid"], np.intp), "fluid_pos": np.array(E["pos"], float).reshape(-1, 3),
            "fluid_rot": np.array(E["rot"], float).reshape(-1, 3, 3), "fluid_ellipsoid": np.array(E["ellipsoid"], bool),
            "fluid_size": np.array(E["size"], float).reshape(-1, 3), "fluid_coef": np.array(E["coef"], float).reshape(-1, 12)}


def _semiaxes(m: mujoco.MjModel, g: int) -> np.ndarray:
    """The semi-axes (3,) [m] of geom g's ellipsoid in the fluid model (MuJoCo's mju_geomSemiAxes)."""
    size, kind = m.geom_size[g], int(m.geom_type[g])
    if kind == mujoco.mjtGeom.mjGEOM_SPHERE:
        return np.full(3, size[0])
    if kind == mujoco.mjtGeom.mjGEOM_CAPSULE:
        return np.array([size[0], size[0], size[1] + size[0]])
    if kind == mujoco.mjtGeom.mjGEOM_CYLINDER:
        return np.array([size[0], size[0], size[1]])
    return size.copy()


def geoms_from_mujoco(m: mujoco.MjModel) -> Geoms:
    """The collision model of an MjModel (physai.engine.geoms.Geoms): its geoms (bodies in physai's numbering), explicit
    pairs, excluded body pairs and collision flags, with what physai's collision detection does not model."""
    off, on, bit, enable = m.opt.disableflags, m.opt.enableflags, mujoco.mjtDisableBit, mujoco.mjtEnableBit
    unsupported = []
    if (m.geom_adhesion != 0).any() or (m.pair_adhesion != 0).any():
        unsupported.append("adhesion (geom or pair adhesion != 0)")
    for flag, what in ((enable.mjENBL_OVERRIDE, "contact override (mjENBL_OVERRIDE)"), (enable.mjENBL_SLEEP, "sleeping"),
                       (enable.mjENBL_SPECULATIVE, "speculative contacts"), (enable.mjENBL_IPC, "IPC contacts")):
        if on & flag:
            unsupported.append(what)
    if m.nflex:
        unsupported.append(f"{m.nflex} flexes")
    sdf = np.flatnonzero((m.geom_type == mujoco.mjtGeom.mjGEOM_SDF) & ((m.geom_contype != 0) | (m.geom_conaffinity != 0)))
    if sdf.size:
        unsupported.append(f"{sdf.size} SDF geoms (a plugin's signed distance field, e.g. geom {int(sdf[0])} "
                           f"{m.geom(int(sdf[0])).name!r}; physai collides planes, heightfields, spheres, capsules, "
                           "ellipsoids, cylinders, boxes and convex meshes)")
    exclude = frozenset(tuple(sorted((int(s >> 16) - 1, int(s & 0xFFFF) - 1))) for s in m.exclude_signature)
    meshes, dataid = meshes_from_mujoco(m)
    hfield = m.geom_type == mujoco.mjtGeom.mjGEOM_HFIELD
    dataid[hfield] = m.geom_dataid[hfield]
    pos, quat = geom_frames(m)
    return Geoms(
        geom_type=m.geom_type.astype(np.intp), geom_bodyid=m.geom_bodyid.astype(np.intp) - 1, geom_pos=pos,
        geom_quat=quat, geom_size=m.geom_size.copy(),
        geom_rbound=m.geom_rbound.copy(), geom_contype=m.geom_contype.astype(np.intp),
        geom_conaffinity=m.geom_conaffinity.astype(np.intp), geom_condim=m.geom_condim.astype(np.intp),
        geom_priority=m.geom_priority.astype(np.intp), geom_solmix=m.geom_solmix.copy(), geom_friction=m.geom_friction.copy(),
        geom_solref=m.geom_solref.copy(), geom_solimp=m.geom_solimp.copy(), geom_margin=m.geom_margin.copy(),
        geom_gap=m.geom_gap.copy(), geom_name=tuple(m.geom(g).name for g in range(m.ngeom)),
        pair_geom1=m.pair_geom1.astype(np.intp), pair_geom2=m.pair_geom2.astype(np.intp), pair_dim=m.pair_dim.astype(np.intp),
        pair_friction=m.pair_friction.copy(), pair_solref=m.pair_solref.copy(), pair_solreffriction=m.pair_solreffriction.copy(),
        pair_solimp=m.pair_solimp.copy(), pair_margin=m.pair_margin.copy(), pair_gap=m.pair_gap.copy(), geom_dataid=dataid,
        geom_aabb=m.geom_aabb.copy(),
        meshes=meshes, hfields=hfields_from_mujoco(m), exclude=exclude,
        filterparent=not off & bit.mjDSBL_FILTERPARENT, midphase=not off & bit.mjDSBL_MIDPHASE,
        nativeccd=not off & bit.mjDSBL_NATIVECCD,
        multiccd=not off & bit.mjDSBL_MULTICCD, unsupported=tuple(unsupported))


def hfields_from_mujoco(m: mujoco.MjModel) -> Hfields:
    """The MjModel's heightfields (physai.engine.geoms.Hfields; InvalidModelError naming one whose elevations are not
    finite)."""
    try:
        return Hfields(hfield_size=m.hfield_size.astype(float), hfield_nrow=m.hfield_nrow.astype(np.intp),
                       hfield_ncol=m.hfield_ncol.astype(np.intp), hfield_adr=m.hfield_adr.astype(np.intp),
                       hfield_data=m.hfield_data.astype(float))
    except InvalidModelError as error:
        names = [m.hfield(i).name for i in range(m.nhfield)]
        raise InvalidModelError(f"{error} (the model's heightfields: {names})") from None


def geom_frames(m: mujoco.MjModel) -> tuple[np.ndarray, np.ndarray]:
    """(pos (ngeom, 3), quat (ngeom, 4)): each geom's frame in its body's as MuJoCo's kinematics places it: where its
    compiler found the geom's frame within its tolerance of the body's or the body's inertial frame (geom_sameframe),
    that frame itself (a mesh geom is often off its body's frame by a rounding of its centre)."""
    same, frame, identity = m.geom_sameframe, mujoco.mjtSameFrame, np.array([1.0, 0.0, 0.0, 0.0])
    body = m.geom_bodyid
    body_same = m.body_sameframe[body][:, None]
    ipos = np.where(body_same == frame.mjSAMEFRAME_BODY, 0.0, m.body_ipos[body])     # the inertial frame as the body's
    iquat = np.where(np.isin(body_same, (frame.mjSAMEFRAME_BODY, frame.mjSAMEFRAME_BODYROT)), identity, m.body_iquat[body])
    pos, quat = m.geom_pos.copy(), m.geom_quat.copy()
    pos[same == frame.mjSAMEFRAME_BODY] = 0.0
    pos[same == frame.mjSAMEFRAME_INERTIA] = ipos[same == frame.mjSAMEFRAME_INERTIA]
    quat[np.isin(same, (frame.mjSAMEFRAME_BODY, frame.mjSAMEFRAME_BODYROT))] = identity
    rot = np.isin(same, (frame.mjSAMEFRAME_INERTIA, frame.mjSAMEFRAME_INERTIAROT))
    quat[rot] = iquat[rot]
    return pos, quat


def meshes_from_mujoco(m: mujoco.MjModel) -> tuple[Meshes, np.ndarray]:
    """(the Meshes of the MjModel's mesh geoms that may collide, each geom's mesh in them (-1: none)): MuJoCo's arrays,
    a mesh's vertices cut to its hull's when that has 10 or more (MuJoCo's support search then climbs the hull's graph,
    as it does for the cut mesh; a mesh of fewer hull vertices keeps all its vertices, so that a mesh of 10 or more
    still climbs)."""
    colliding = (m.geom_type == mujoco.mjtGeom.mjGEOM_MESH) & ((m.geom_contype != 0) | (m.geom_conaffinity != 0))
    colliding[m.pair_geom1[m.geom_type[m.pair_geom1] == mujoco.mjtGeom.mjGEOM_MESH]] = True
    colliding[m.pair_geom2[m.geom_type[m.pair_geom2] == mujoco.mjtGeom.mjGEOM_MESH]] = True
    used = sorted({int(m.geom_dataid[g]) for g in np.flatnonzero(colliding)})
    dataid = np.full(m.ngeom, -1, np.intp)
    for g in np.flatnonzero(colliding):
        dataid[g] = used.index(int(m.geom_dataid[g]))
    A = {name: [] for name in ("vertadr", "vertnum", "vert", "graphadr", "graph", "extrema", "polyadr", "polynum",
                               "polyvertadr", "polyvertnum", "polyvert", "polynormal", "polymapadr", "polymapnum", "polymap")}
    nvert = ngraph = npoly = npolyvert = npolymap = 0
    for i in used:
        va, nv, ga = int(m.mesh_vertadr[i]), int(m.mesh_vertnum[i]), int(m.mesh_graphadr[i])
        graph = None
        if ga >= 0:
            hull, nface = int(m.mesh_graph[ga]), int(m.mesh_graph[ga + 1])
            graph = m.mesh_graph[ga:ga + 2 + 3 * hull + 3 * nface].astype(np.intp)     # its faces left out
        who = f"mesh {i} ({m.mesh(i).name!r})"
        if graph is not None:
            _indices("mesh_graph", graph[2 + hull:2 + 2 * hull], nv, who)      # its hull vertices' ids in the mesh
        hull_ids = np.unique(graph[2 + hull:2 + 2 * hull]) if graph is not None else np.arange(nv)
        keep = hull_ids if len(hull_ids) >= 10 else np.arange(nv)     # MuJoCo climbs a graph of 10 vertices or more
        new = np.full(nv, -1, np.intp)
        new[keep] = np.arange(len(keep))
        pa, pn = int(m.mesh_polyadr[i]), int(m.mesh_polynum[i])
        num = m.mesh_polyvertnum[pa:pa + pn].astype(np.intp)
        polyvert = new[_indices("mesh_polyvert", m.mesh_polyvert[spans(m.mesh_polyvertadr[pa:pa + pn].astype(np.intp), num)],
                                nv, who)]
        if (polyvert < 0).any():
            raise UnsupportedModelError(f"mesh {i} ({m.mesh(i).name!r}) has a polygon on a vertex off its hull's graph")
        A["vertadr"].append(nvert), A["vertnum"].append(len(keep)), A["vert"].append(m.mesh_vert[va + keep].astype(float))
        if graph is not None:
            graph[2 + hull:2 + 2 * hull] = new[graph[2 + hull:2 + 2 * hull]]
            A["graphadr"].append(ngraph), A["graph"].append(graph)
            ngraph += len(graph)
        else:
            A["graphadr"].append(-1)
        A["extrema"].append(m.mesh_extrema[i].astype(np.intp))
        A["polyadr"].append(npoly), A["polynum"].append(pn)
        A["polyvertadr"].append(npolyvert + np.cumsum(num) - num), A["polyvertnum"].append(num), A["polyvert"].append(polyvert)
        A["polynormal"].append(m.mesh_polynormal[pa:pa + pn].reshape(-1, 3))
        mapnum = m.mesh_polymapnum[va + keep].astype(np.intp)
        A["polymapadr"].append(npolymap + np.cumsum(mapnum) - mapnum), A["polymapnum"].append(mapnum)
        A["polymap"].append(_indices("mesh_polymap", m.mesh_polymap[spans(m.mesh_polymapadr[va + keep].astype(np.intp), mapnum)],
                                     pn, who))
        nvert, npoly, npolyvert, npolymap = nvert + len(keep), npoly + pn, npolyvert + len(polyvert), npolymap + int(mapnum.sum())
    cat = lambda parts, dtype, width=None: (np.concatenate(parts).astype(dtype) if parts else       # noqa: E731
                                            np.zeros((0,) if width is None else (0, width), dtype))
    meshes = Meshes(
        mesh_vertadr=np.array(A["vertadr"], np.intp), mesh_vertnum=np.array(A["vertnum"], np.intp),
        mesh_vert=cat(A["vert"], float, 3), mesh_graphadr=np.array(A["graphadr"], np.intp), mesh_graph=cat(A["graph"], np.intp),
        mesh_extrema=np.array(A["extrema"], np.intp).reshape(-1, 27), mesh_polyadr=np.array(A["polyadr"], np.intp),
        mesh_polynum=np.array(A["polynum"], np.intp), mesh_polyvertadr=cat(A["polyvertadr"], np.intp),
        mesh_polyvertnum=cat(A["polyvertnum"], np.intp), mesh_polyvert=cat(A["polyvert"], np.intp),
        mesh_polynormal=cat(A["polynormal"], float, 3), mesh_polymapadr=cat(A["polymapadr"], np.intp),
        mesh_polymapnum=cat(A["polymapnum"], np.intp), mesh_polymap=cat(A["polymap"], np.intp))
    return meshes, dataid


def _indices(name: str, x: np.ndarray, size: int, who: str) -> np.ndarray:
    """x, indices into a mesh's own vertices or polygons; InvalidModelError naming the field and the mesh unless each is in
    0..size - 1 (a negative one would count from the end)."""
    bad = np.flatnonzero((x < 0) | (x >= size))
    if bad.size:
        raise InvalidModelError(f"{name} of {who} holds {int(x[bad[0]])}: expected indices of its {size} "
                                f"{'polygons' if name == 'mesh_polymap' else 'vertices'}, 0..{size - 1}")
    return x


#: physai's names of MuJoCo's solvers it runs (mjtSolver)
_SOLVERS = {int(mujoco.mjtSolver.mjSOL_NEWTON): "newton", int(mujoco.mjtSolver.mjSOL_PGS): "pgs",
            int(mujoco.mjtSolver.mjSOL_CG): "cg"}


def options_from_mujoco(m: mujoco.MjModel) -> Options:
    """The solver options and the constraint switches of a MuJoCo model (m.opt and its disable flags)."""
    off, bit = m.opt.disableflags, mujoco.mjtDisableBit
    on = lambda flag: not (off & bit.mjDSBL_CONSTRAINT) and not (off & flag)       # noqa: E731
    integrators = {int(mujoco.mjtIntegrator.mjINT_EULER): "euler", int(mujoco.mjtIntegrator.mjINT_RK4): "rk4",
                   int(mujoco.mjtIntegrator.mjINT_IMPLICIT): "implicit", int(mujoco.mjtIntegrator.mjINT_IMPLICITFAST): "implicitfast",
                   int(mujoco.mjtIntegrator.mjINT_DISCRETE): "discrete"}
    return Options(timestep=float(m.opt.timestep), integrator=integrators[int(m.opt.integrator)],
                   eulerdamp=not off & bit.mjDSBL_EULERDAMP, impratio=float(m.opt.impratio),
                   cone="elliptic" if m.opt.cone == mujoco.mjtCone.mjCONE_ELLIPTIC else "pyramidal",
                   tolerance=float(m.opt.tolerance), iterations=int(m.opt.iterations), ls_tolerance=float(m.opt.ls_tolerance),
                   ls_iterations=int(m.opt.ls_iterations), solver=_SOLVERS[int(m.opt.solver)],
                   equality=on(bit.mjDSBL_EQUALITY),
                   frictionloss=on(bit.mjDSBL_FRICTIONLOSS), limit=on(bit.mjDSBL_LIMIT), contact=on(bit.mjDSBL_CONTACT),
                   refsafe=not off & bit.mjDSBL_REFSAFE, ccd_tolerance=float(m.opt.ccd_tolerance),
                   ccd_iterations=int(m.opt.ccd_iterations), noslip_iterations=int(m.opt.noslip_iterations),
                   noslip_tolerance=float(m.opt.noslip_tolerance), island=not off & bit.mjDSBL_ISLAND)


def _equalities_from_mujoco(m: mujoco.MjModel) -> tuple[list[EqualitySpec], tuple]:
    """The connect, weld, joint and tendon equalities of a MuJoCo model in physai's body, joint and tendon indices
    (connects between sites become connects between their bodies), and what physai does not model (flex equalities,
    welds between sites)."""
    kinds = {int(mujoco.mjtEq.mjEQ_CONNECT): CONNECT, int(mujoco.mjtEq.mjEQ_WELD): WELD, int(mujoco.mjtEq.mjEQ_JOINT): JOINT,
             int(mujoco.mjtEq.mjEQ_TENDON): TENDON}
    site = int(mujoco.mjtObj.mjOBJ_SITE)
    equalities, unsupported = [], []
    for e in range(m.neq):
        name, kind = m.equality(e).name or f"equality{e}", int(m.eq_type[e])
        if kind not in kinds:
            unsupported.append(f"equality {name!r} is a {mujoco.mjtEq(kind).name} constraint (physai has connect, weld, joint, "
                               "tendon)")
            continue
        obj1, obj2, data = int(m.eq_obj1id[e]), int(m.eq_obj2id[e]), m.eq_data[e, :11].copy()   # the 11 entries physai reads
        if kinds[kind] in (CONNECT, WELD) and int(m.eq_objtype[e]) == site:
            if kinds[kind] == WELD:
                unsupported.append(f"equality {name!r} welds two sites (physai welds bodies)")
                continue
            data[0:3], data[3:6] = m.site_pos[obj1], m.site_pos[obj2]     # a connect between sites: between their bodies
            obj1, obj2 = int(m.site_bodyid[obj1]), int(m.site_bodyid[obj2])
        if kinds[kind] in (CONNECT, WELD):
            obj1, obj2 = obj1 - 1, obj2 - 1                                 # MuJoCo's body b + 1 is physai's body b
        equalities.append(EqualitySpec(kinds[kind], obj1, obj2, data, tuple(m.eq_solref[e]), tuple(m.eq_solimp[e]),
                                       bool(m.eq_active0[e]), name))
    return equalities, tuple(unsupported)


def _unsupported_constraints(m: mujoco.MjModel) -> tuple:
    """The constraint features of a MuJoCo model that physai does not model (refused when constraints are computed)."""
    found = []
    if int(m.opt.solver) not in _SOLVERS:
        found.append(f"the {mujoco.mjtSolver(m.opt.solver).name} solver (physai solves with mjSOL_NEWTON, mjSOL_PGS, mjSOL_CG)")
    if m.nflex:
        found.append("flexes")
    return tuple(found)


def compile_tree(tree, *, range=None, frictionloss=None, opt: Options | None = None) -> Model:
    """The Model of a lesson Tree (physai.dynamics.Tree: hinge/slide trees), read by its fields (TREE_FIELDS, and
    TREE_BODY_FIELDS of each body), with constraints the Tree does not hold given by field, one entry per joint in Tree
    order: range (nv, 2) [rad | m] (a joint whose low < high is limited), frictionloss (nv,) [N m | N]; opt: the
    solver's Options. Raises InvalidModelError for anything but a Tree."""
    if not is_tree(tree):
        raise InvalidModelError(f"compile_tree needs a physai.dynamics.Tree, got {type(tree).__name__}")
    bodies = _tree_bodies(tree)
    moving = [j for b in bodies for j in b.joints]
    if range is not None:
        for joint, (low, high) in zip(moving, validation.as_array("range", range, (len(moving), 2))):
            joint.limited, joint.range = bool(low < high), (float(low), float(high))
    if frictionloss is not None:
        for joint, value in zip(moving, validation.vector("frictionloss", frictionloss, len(moving))):
            joint.frictionloss = float(value)
    return set_const(build(bodies, tree.gravity, opt=opt))


def _tree_bodies(tree) -> list[BodySpec]:
    kinds = {"hinge": joints.HINGE, "slide": joints.SLIDE}
    bodies, k = [], 0
    for b in tree.bodies:
        specs = []
        if b.joint:
            specs.append(JointSpec(kinds[b.joint], b.axis, b.anchor, b.ref, tree.armature[k], tree.damping[k],
                                   tree.stiffness[k], tree.springref[k],
                                   b.name if b.joint_name is None else b.joint_name))
            k += 1
        bodies.append(BodySpec(b.parent, b.pos, b.rot, specs, b.mass, b.com, b.inertia, b.name))
    return bodies


def from_urdf(source, floating_base: bool = False, armature=None, gravity=(0.0, 0.0, -9.81),
              independent_mimic: bool = False) -> Model:
    """The Model of a URDF (path, text or bytes), read by physai.engine.urdf; floating_base=True gives the root link a
    free joint (MuJoCo's convention: q = (world position, quaternion w x y z), v = (world linear, body angular
    velocity); physai.conventions maps to Pinocchio's free flyer).

    armature: (n,) rotor inertia per moving URDF joint, in depth-first order [kg m^2 | kg]; gravity (3,) [m/s^2];
    independent_mimic: accept mimic joints as independent joints (Pinocchio's buildModelFromUrdf) instead of refusing them.
    The links' <collision> spheres, boxes and cylinders become the Model's geoms (MuJoCo's URDF defaults).
    """
    bodies, geoms = urdf.read_model(source, validation.flag("independent_mimic", independent_mimic))
    moving = [j for b in bodies for j in b.joints]
    if armature is not None:
        for joint, value in zip(moving, validation.vector("armature", armature, len(moving))):
            joint.armature = value
    if validation.flag("floating_base", floating_base):
        if bodies[0].joints:
            raise UnsupportedModelError("floating_base: the URDF's root link already has a joint")
        bodies[0].joints = [JointSpec(joints.FREE, name=f"{bodies[0].name or 'root'}_free")]
    return set_const(build(bodies, validation.vector("gravity", gravity, 3), geoms=geoms))


def actuators_from_mujoco(m: mujoco.MjModel) -> Actuators:
    """The Actuators of a compiled MuJoCo model (static model data only).

    Supported: motor, position, velocity, intvelocity, muscle, adhesion and general actuators with activation dynamics
    none, integrator, filter, filterexact or muscle (actlimited, actrange, actearly), fixed, affine or muscle gain and no,
    affine or muscle bias, on a joint (jointinparent too), a tendon, a site (with or without a refsite), a slider-crank
    or a body (adhesion); the moment arms of all but hinges, slides and fixed tendons depend on the configuration
    (Actuators.posed_each, physai.engine.actuation.posed).
    Anything else raises UnsupportedModelError naming the actuator. Controls are not clamped if the model
    disables clampctrl; with actuation disabled every moment arm is zero.
    """
    nu, nv = m.nu, m.nv
    moment, qmoment, gain, bias = np.zeros((nu, nv)), np.zeros((nu, m.nq)), np.zeros((nu, 3)), np.zeros((nu, 3))
    joint_dof = np.full(nu, -1, dtype=np.int64)
    posed_each, trnid = np.zeros(nu, bool), np.full((nu, 2), -1, dtype=np.int64)
    names = []
    for a in range(nu):
        name = m.actuator(a).name or f"actuator{a}"
        names.append(name)
        _check_actuator(m, a, name)
        gear = m.actuator_gear[a, 0]
        trn, target = int(m.actuator_trntype[a]), int(m.actuator_trnid[a, 0])
        if _constant_transmission(m, a):
            if trn == mujoco.mjtTrn.mjTRN_TENDON:    # fixed tendon: length = gear * sum coef * qpos
                for w in range(m.tendon_adr[target], m.tendon_adr[target] + m.tendon_num[target]):
                    moment[a, m.jnt_dofadr[m.wrap_objid[w]]] += gear * m.wrap_prm[w]
                    qmoment[a, m.jnt_qposadr[m.wrap_objid[w]]] += gear * m.wrap_prm[w]
            elif int(m.jnt_type[target]) == mujoco.mjtJoint.mjJNT_FREE:   # free joint in its own frame: length 0
                moment[a, m.jnt_dofadr[target]:m.jnt_dofadr[target] + 6] = m.actuator_gear[a]
            else:                                    # hinge or slide: length = gear * qpos
                moment[a, m.jnt_dofadr[target]] = gear
                joint_dof[a] = m.jnt_dofadr[target]
                qmoment[a, m.jnt_qposadr[target]] = gear
        else:                                        # computed at each state (physai.engine.actuation.transmission)
            posed_each[a] = True
            trnid[a] = m.actuator_trnid[a] - (trn == mujoco.mjtTrn.mjTRN_BODY) * np.array([1, 0])
        g, b = m.actuator_gainprm[a], m.actuator_biasprm[a]
        gain[a] = g[:3] if int(m.actuator_gaintype[a]) == mujoco.mjtGain.mjGAIN_AFFINE else (g[0], 0, 0)
        bias[a] = b[:3] if int(m.actuator_biastype[a]) == mujoco.mjtBias.mjBIAS_AFFINE else (0, 0, 0)
    if m.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_ACTUATION:
        moment[:] = qmoment[:] = 0.0
        posed_each[:] = False
    dof_forcerange, dof_forcelimited = np.zeros((nv, 2)), np.zeros(nv, bool)
    for j in np.flatnonzero(m.jnt_actfrclimited):     # limits of the total actuator force on a hinge or slide
        if int(m.jnt_type[j]) not in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE):
            raise UnsupportedModelError(f"joint {label(m.joint(j).name, j, 'joint')!r} limits its total actuator force (actuatorfrcrange) "
                                        "on a ball or free joint; physai does this on hinges and slides")
        dof_forcerange[m.jnt_dofadr[j]], dof_forcelimited[m.jnt_dofadr[j]] = m.jnt_actfrcrange[j], True
    tendon_frcid = np.full(nu, -1, np.int64)           # the tendons that limit their actuators' total force
    on_tendon = m.actuator_trntype == mujoco.mjtTrn.mjTRN_TENDON
    tendon_frcrange = np.zeros((nu, 2))
    if m.ntendon:
        limited = on_tendon & (m.tendon_actfrclimited[np.where(on_tendon, m.actuator_trnid[:, 0], 0)] != 0)
        tendon_frcid[limited] = m.actuator_trnid[limited, 0]
        tendon_frcrange[limited] = m.tendon_actfrcrange[tendon_frcid[limited]]
    ctrllimited = m.actuator_ctrllimited.astype(bool)
    if m.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_CLAMPCTRL:
        ctrllimited[:] = False
    return Actuators(moment, gain, bias, m.actuator_ctrlrange.copy(), ctrllimited, m.actuator_forcerange.copy(),
                     m.actuator_forcelimited.astype(bool), tuple(names), qmoment, dof_forcerange, dof_forcelimited,
                     joint_dof, tendon_frcid, tendon_frcrange, **_actuator_dynamics(m), posed_each=posed_each,
                     trntype=m.actuator_trntype.astype(np.int64),
                     trnid=trnid, gear6=m.actuator_gear.copy(), cranklength=m.actuator_cranklength.copy())


def _constant_transmission(m: mujoco.MjModel, a: int) -> bool:
    """Whether actuator a's moment arms and length map are constant: a hinge or a slide joint, a free joint in its own
    frame (the gear, length 0), or a fixed tendon."""
    trn, target = int(m.actuator_trntype[a]), int(m.actuator_trnid[a, 0])
    if trn in (mujoco.mjtTrn.mjTRN_JOINT, mujoco.mjtTrn.mjTRN_JOINTINPARENT):
        free_own = trn == mujoco.mjtTrn.mjTRN_JOINT and int(m.jnt_type[target]) == mujoco.mjtJoint.mjJNT_FREE
        return free_own or int(m.jnt_type[target]) in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE)
    if trn == mujoco.mjtTrn.mjTRN_TENDON:
        wraps = range(m.tendon_adr[target], m.tendon_adr[target] + m.tendon_num[target])
        return all(int(m.wrap_type[w]) == mujoco.mjtWrap.mjWRAP_JOINT for w in wraps)
    return False


def _actuator_dynamics(m: mujoco.MjModel) -> dict:
    """The Actuators' activation, gain and bias fields of an MjModel (MuJoCo's actuator_dyntype, dynprm[:3], gaintype,
    biastype, gainprm[:9], biasprm[:9], lengthrange, acc0, actlimited, actrange, actearly)."""
    return {"dyntype": m.actuator_dyntype.astype(np.int64), "dynprm": m.actuator_dynprm[:, :3].copy(),
            "gaintype": m.actuator_gaintype.astype(np.int64), "biastype": m.actuator_biastype.astype(np.int64),
            "gainprm": m.actuator_gainprm[:, :9].copy(), "biasprm": m.actuator_biasprm[:, :9].copy(),
            "lengthrange": m.actuator_lengthrange.copy(), "acc0": m.actuator_acc0.copy(),
            "actlimited": m.actuator_actlimited.astype(bool), "actrange": m.actuator_actrange.copy(),
            "actearly": m.actuator_actearly.astype(bool)}


def _check_actuator(m, a: int, name: str) -> None:
    """Raise UnsupportedModelError if actuator a uses a feature actuator_force does not model."""
    def refuse(what: str):
        raise UnsupportedModelError(f"actuator {name!r}: {what}; physai supports actuators with activation dynamics "
                                    "none, integrator, filter, filterexact or muscle, fixed, affine or muscle gain and "
                                    "bias, on a joint, tendon, site, slider-crank or body transmission")

    dyn, gtype, btype = int(m.actuator_dyntype[a]), int(m.actuator_gaintype[a]), int(m.actuator_biastype[a])
    if dyn > int(mujoco.mjtDyn.mjDYN_MUSCLE):
        refuse(f"activation dynamics {mujoco.mjtDyn(dyn).name}")
    if gtype > int(mujoco.mjtGain.mjGAIN_MUSCLE):
        refuse(f"gain type {mujoco.mjtGain(gtype).name}")
    if btype > int(mujoco.mjtBias.mjBIAS_MUSCLE):
        refuse(f"bias type {mujoco.mjtBias(btype).name}")
    trn, target = int(m.actuator_trntype[a]), int(m.actuator_trnid[a, 0])
    if trn == mujoco.mjtTrn.mjTRN_BODY and np.any(m.geom_gap[m.geom_bodyid == target]):
        refuse(f"its body {m.body(target).name!r} has geoms with a gap (MuJoCo counts the contacts inside the gap, "
               "which physai's collision leaves out)")
    elif trn > int(mujoco.mjtTrn.mjTRN_BODY):
        refuse(f"transmission {mujoco.mjtTrn(trn).name}")
    checks = [
        (m.actuator_plugin[a] >= 0, "it is a plugin"),
        (m.actuator_ctrlnum[a] != 1 or m.actuator_outnum[a] != 1, "it has more than one control or output"),
        (m.actuator_actnum[a] != (dyn != mujoco.mjtDyn.mjDYN_NONE), f"it has {m.actuator_actnum[a]} activations"),
        (dyn != mujoco.mjtDyn.mjDYN_NONE and m.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_ACTUATION,
         "actuation is disabled, which freezes its activation"),
        (m.actuator_delay[a] != 0, "it has a control delay"),
        (m.actuator_damping[a] != 0 or np.any(m.actuator_dampingpoly[a]), "it has actuator damping"),
        (m.actuator_armature[a] != 0, "it has actuator armature"),
        ((m.opt.disableactuator >> int(m.actuator_group[a])) & 1 if 0 <= m.actuator_group[a] < 31 else False,
         f"its group {m.actuator_group[a]} is disabled"),
    ]
    for bad, what in checks:
        if bad:
            refuse(what)


