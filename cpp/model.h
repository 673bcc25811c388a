// The constant description of a model (MuJoCo's mjModel) and of its actuators: flat arrays named as the fields of
// physai.engine.Model and physai.engine.actuators.Actuators (link_parentid, dof_parentid, moment, gain, ...), the link
// transforms' constants as physai.joints.LinkTransforms gathers them per link (link_jnttype, link_G, ...). A Model only
// points into arrays that its owner keeps (the bound _native.Model of cpp/bindings.cpp, which reads each field by name
// and checks its shape); the kernels take it as const and keep every workspace elsewhere (cpp/data.h). Model and
// Actuators are plain data: no member functions, so no code of theirs is shared between the instruction sets'
// translation units.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace physai {

constexpr int64_t CAND_FLOATS = 16;                // a candidate pair's parameters (Model.cand_float)

// entry a of a scalar link's G rows (3, 4) is entry RP_OF[a] of its local transform (R (9, row-major), p (3))
constexpr int RP_OF[12] = {0, 1, 2, 9, 3, 4, 5, 10, 6, 7, 8, 11};

// physai.joints' joint types (MuJoCo's mjtJoint); physai.engine.geoms' geom types (MuJoCo's mjtGeom)
enum { JNT_FREE = 0, JNT_BALL = 1, JNT_SLIDE = 2, JNT_HINGE = 3 };
enum { SOLVER_NEWTON = 0, SOLVER_PGS = 1, SOLVER_CG = 2 };   // Model.opt_solver (physai.engine.native.SOLVERS)
enum { WRAP_NONE = 0, WRAP_JOINT, WRAP_PULLEY, WRAP_SITE, WRAP_SPHERE, WRAP_CYLINDER };   // mjtWrap
enum { GEOM_PLANE = 0, GEOM_HFIELD, GEOM_SPHERE, GEOM_CAPSULE, GEOM_ELLIPSOID, GEOM_CYLINDER, GEOM_BOX, GEOM_MESH };
constexpr double MINVAL = 1e-15;                  // MuJoCo's mjMINVAL: the smallest denominator

// an entry of a mesh's hull as the climb reads it (cpp/primitives.h mesh_support; Model.mesh_climb, climb_blocks): the
// point it names, as floats, and the entry (a hull vertex's own entry: its mesh vertex; a neighbour's: where that
// neighbour's block starts; -1 ending a block): 16 bytes, four to a cache line
struct ClimbEdge {
    float x[3];
    int32_t next;
};

struct Model {
    int nq = 0, nv = 0, nlink = 0, nbody = 0, nspring = 0, nscalar = 0, nquat = 0;
    double gravity[3] = {0, 0, 0};
    // per link (nlink): the tree
    const int64_t *link_parentid = nullptr;      // parent link, -1: the world
    const int64_t *link_centerid = nullptr;      // the link its tree's positions are taken about (its centre)
    const int64_t *link_relative = nullptr;      // 1: cpos summed from the centre outward (keeps digits far away)
    const int64_t *link_dofadr = nullptr, *link_dofnum = nullptr;    // its dofs: [dofadr, dofadr + dofnum), 1 to 3
    // per link: inertia in the link frame
    const double *link_mass = nullptr, *link_ipos = nullptr, *link_inertia = nullptr;   // (nlink), (nlink, 3), (nlink, 3, 3)
    const double *link_subtreemass = nullptr;    // (nlink): the link's subtree's mass (Model.link_subtreemass)
    // per link: the local transform (Model.link_transforms); jnttype 0: hinge or slide, G (3, 4, 4) @ (1, t, sin t,
    // 1 - cos t) with t = q[qposadr] - ref; 1: ball, rot Q(q) about the anchor, then pos
    const int64_t *link_jnttype = nullptr, *link_qposadr = nullptr;
    const double *link_ref = nullptr, *link_G = nullptr;                                 // (nlink), (nlink, 48)
    const double *link_ballrot = nullptr, *link_ballpos = nullptr, *link_ballanchor = nullptr;   // (nlink, 9), (nlink, 3) x2
    const char *link_hinge = nullptr, *link_slide = nullptr;   // scalar links whose G has no t term, or only 1 and t terms
    // per link, derived by the bound Model for link_pose (the same numbers, fewer operations): the local transform's
    // constant part as (R (9), p (3)), G[:, :, 0]; the entries of (R, p) whose G has a term in t (link_tvary, indices
    // into the (R, p) of 12, from link_tvaryadr, link_tvarynum of them; the others are the constant part); whether the
    // link's axes are the world's at every q (a slide that does not turn, on the world or on such a link: a free joint's
    // translations); whether a ball turns about its own origin alone (rot 1, pos and anchor 0: a free joint's rotation)
    const double *link_T0 = nullptr;                             // (nlink, 12)
    const int64_t *link_tvaryadr = nullptr, *link_tvarynum = nullptr, *link_tvary = nullptr;
    const char *link_worldaxes = nullptr, *link_ballplain = nullptr;
    // per link: the axis k a hinge's local rotation keeps, its row k and column k e_k at every t (a hinge about a
    // coordinate axis of its link's frame), or -1 (derived by the bound Model: link_pose's product skips the zeros)
    const int64_t *link_keptaxis = nullptr;
    const char *link_massless = nullptr;         // (nlink): no mass and no inertia (com_pos: its cinert is zero)
    // per link: its path's stages suffice for its Jacobians (smooth.h's path_stages): every path link's centre and every
    // path dof's turning link on the path from its tree's root to it (derived by the bound Model)
    const char *link_pathcentred = nullptr;
    // per dof (nv)
    const int64_t *dof_linkid = nullptr, *dof_parentid = nullptr;   // its link; the dof before it on the path to the root, -1
    const int64_t *dof_turnlink = nullptr;     // a ball's or free joint's rotation dof: its body's link, whose velocity
                                               // turns its column (mj_jacDot); -1 for the others (cdof_dot as it is)
    const double *dof_motion = nullptr, *dof_armature = nullptr;    // (nv, 6) in the link frame, (nv)
    const char *dof_motionparts = nullptr;     // (nv): 1 if dof_motion's angular part is not zero, + 2 if its linear part is not
    const int64_t *dof_unitaxis = nullptr;     // (nv): k if dof_motion's angular part is e_k, k + 3 if -e_k, else -1 (derived
                                               // by the bound Model: dof_subspace reads R s as a column of R)
    const double *dof_damping = nullptr;                            // (nv)
    const int64_t *dof_simplenum = nullptr;    // (nv): MuJoCo's dof_simplenum (Model.dof_simplenum): > 0 on a simple body's dofs
    // M's lower triangle row by row (MuJoCo's M_rownnz, M_rowadr, M_colind, derived from dof_parentid by the bound
    // Model): row i's columns are i's ancestors from the root, then i, at M_colind[M_rowadr[i] ..] (M_rownnz[i] of them)
    const int64_t *M_rownnz = nullptr, *M_rowadr = nullptr, *M_colind = nullptr;
    // the free joints that move a body alone (support.standalone_free_dofs, MuJoCo's mj_isFreeBody): first dofs (nfree)
    int nfree = 0;
    const int64_t *free_dofadr = nullptr;
    // joint springs (nspring): q index, dof, stiffness, rest position
    const int64_t *spring_qposadr = nullptr, *spring_dofadr = nullptr;
    const double *spring_stiffness = nullptr, *spring_ref = nullptr;
    // q's layout (Model.coords): scalar coordinates (nscalar), q and v index; quaternions (nquat), q (4) and v (3) index
    const int64_t *scalar_qposadr = nullptr, *scalar_dofadr = nullptr;
    const int64_t *quat_qposadr = nullptr, *quat_dofadr = nullptr;
    // bodies (nbody): the engine link a body moves with (-1: the world), its pose in that link's frame, and its centre
    // of mass there (body_pos + body_rot body_ipos: where wrenches act)
    const int64_t *body_linkid = nullptr;
    const double *body_pos = nullptr, *body_rot = nullptr, *body_linkipos = nullptr;      // (nbody, 3), (nbody, 9), (nbody, 3)
    // passive forces besides joint springs and dampers (cpp/passive.h): gravity compensation's constant force per body
    // (nbody, 3: -gravcomp m g) and the share of it each dof takes (nv: passive.body_forces); the fluid (density,
    // viscosity, wind) and its elements (nfluid): link, origin (3) and frame (3, 3) in the link's frame, model (1:
    // ellipsoid, 0: inertia box), size (3: the box's sides or the semi-axes), coefficients (12: MuJoCo's geom_fluid)
    bool has_gravcomp = false;
    const double *body_gravcompforce = nullptr, *dof_gravcompshare = nullptr;
    int64_t nfluid = 0;
    double fluid_density = 0, fluid_viscosity = 0, fluid_wind[3] = {0, 0, 0};
    const int64_t *fluid_linkid = nullptr, *fluid_ellipsoid = nullptr;
    const double *fluid_linkpos = nullptr, *fluid_linkrot = nullptr, *fluid_size = nullptr, *fluid_coef = nullptr;
    // the tendons (ntendon; physai.engine.native.tendon_fields, cpp/tendon.h): each one's path elements [tendon_adr,
    // + tendon_num) of the nwrap: type (WRAP_JOINT, WRAP_PULLEY, WRAP_SITE, WRAP_SPHERE, WRAP_CYLINDER), object (joint,
    // site or geom), prm (a joint's coefficient, a geom's side site or -1, a pulley's divisor) and a joint's q index and
    // dof (0 for the other elements); stiffness, damping, the spring's dead band (2: lower, upper), armature; the limit
    // (limited, range (2), margin, solref (2), solimp (5)) and friction loss (frictionloss, solref (2), solimp (5));
    // tendon_spatial: whether a tendon is spatial (its path needs the constraint part's MuJoCo-order body frames and
    // geoms: native.compiled adds it at once); the sites (nsite): body (-1: the world), position and orientation
    // (quaternion, 4) in its frame
    int64_t ntendon = 0, nwrap = 0, nsite = 0;
    bool tendon_spatial = false;
    const int64_t *tendon_adr = nullptr, *tendon_num = nullptr, *wrap_type = nullptr, *wrap_objid = nullptr;
    const int64_t *wrap_qposadr = nullptr, *wrap_dofadr = nullptr, *tendon_limited = nullptr, *site_bodyid = nullptr;
    const double *wrap_prm = nullptr, *tendon_stiffness = nullptr, *tendon_damping = nullptr, *tendon_lengthspring = nullptr;
    const double *tendon_armature = nullptr, *tendon_range = nullptr, *tendon_margin = nullptr;
    const double *tendon_solref_lim = nullptr, *tendon_solimp_lim = nullptr, *tendon_frictionloss = nullptr;
    const double *tendon_solref_fri = nullptr, *tendon_solimp_fri = nullptr, *site_pos = nullptr, *site_quat = nullptr;
    // bodies welded to the world (their gravity moment)
    double static_mass = 0, static_com[3] = {0, 0, 0};
    // the constraint model (physai.engine.constraint, cpp/constraint.h), by the Model's names; set by the bound Model's
    // add_constraints (null until then: has_constraints). joints (njnt): physai.joints' type, q and v index, body, axis
    // (3) in the body frame, limit (limited, range (2), margin, solref (2), solimp (5)); dofs (nv): dry friction and
    // its solref, solimp, and dof_invweight0 (mj_setConst); equalities (neq): type (CONNECT 0, WELD 1, JOINT 2, TENDON 3), the
    // two objects, data (11), solref, solimp, eq_active0; bodies (nbody): parent, rest quaternion (4), joints
    // [body_jntadr, body_jntadr + body_jntnum), body_invweight0 (2); qpos0 (nq); and opt's settings
    bool has_constraints = false;
    int njnt = 0, neq = 0;
    const double *qpos0 = nullptr;
    const int64_t *jnt_type = nullptr, *jnt_qposadr = nullptr, *jnt_dofadr = nullptr, *jnt_bodyid = nullptr;
    const int64_t *jnt_limited = nullptr;
    const double *jnt_axis = nullptr, *jnt_range = nullptr, *jnt_margin = nullptr, *jnt_solref = nullptr, *jnt_solimp = nullptr;
    const double *dof_frictionloss = nullptr, *dof_solref = nullptr, *dof_solimp = nullptr, *dof_invweight0 = nullptr;
    const int64_t *eq_type = nullptr, *eq_obj1id = nullptr, *eq_obj2id = nullptr, *eq_active0 = nullptr;
    const double *eq_data = nullptr, *eq_solref = nullptr, *eq_solimp = nullptr;
    const int64_t *body_parentid = nullptr, *body_jntadr = nullptr, *body_jntnum = nullptr;
    const double *body_quat = nullptr, *body_invweight0 = nullptr;
    const double *tendon_length0 = nullptr, *tendon_invweight0 = nullptr;   // (ntendon): at qpos0 (tendon equalities)
    // collision (physai.engine.collision; set with the constraints): joints' anchors (njnt, 3) and bodies' offsets in
    // their parents (nbody, 3: MuJoCo's body_pos) for MuJoCo's frames; geoms (ngeom): type, body, pos (3), quat (4),
    // size (3), bounding radius; the candidate pairs (ncand) in MuJoCo's order, geom ids (2), dim and their row
    // (cand_param) of the nparam rows of CAND_FLOATS parameters (margin, gap, friction (5), solref (2), solreffriction
    // (2), solimp (5): one row per distinct parameters); the pairs without a narrow phase (nmissing): geom ids (2) and
    // margin + gap
    const double *jnt_pos = nullptr, *body_offset = nullptr;
    // the bodies' joints as links (physai.engine.smooth.pose_links, from physai.joints.links: a free joint is three slides
    // along the world's axes and a ball), for MuJoCo's frames (smooth.h's body_poses): body b's are [body_poselinkadr,
    // + body_poselinknum); per link (npose): its joints' type (JNT_SLIDE, JNT_BALL, JNT_HINGE), first q entry, ref,
    // axis and anchor in the body frame (3 each), and 1 if it starts from the world's frame (a free joint's)
    int64_t npose = 0;
    const int64_t *body_poselinkadr = nullptr, *body_poselinknum = nullptr, *poselink_type = nullptr;
    const int64_t *poselink_qposadr = nullptr, *poselink_world = nullptr;
    const double *poselink_ref = nullptr, *poselink_axis = nullptr, *poselink_anchor = nullptr;
    int64_t ngeom = 0, ncand = 0, nmissing = 0, nparam = 0;
    const int64_t *geom_type = nullptr, *geom_bodyid = nullptr, *cand_geom = nullptr, *cand_dim = nullptr;
    const int64_t *missing_geom = nullptr;
    const int64_t *cand_param = nullptr;
    const double *geom_pos = nullptr, *geom_quat = nullptr, *geom_size = nullptr, *geom_rbound = nullptr;
    const double *cand_float = nullptr, *missing_bound = nullptr;
    // each geom's box in its frame (centre, half sides: MuJoCo's geom_aabb); whether a candidate's boxes are tested
    // (MuJoCo's midphase: collision.Candidates.midphase)
    const double *geom_aabb = nullptr;
    const int64_t *cand_midphase = nullptr;
    // the convex meshes (physai.engine.geoms.Meshes, MuJoCo's mesh_* layout): a mesh geom's mesh (geom_dataid; -1:
    // none); per mesh its vertices, graph, extrema (27) and polygons; per polygon its corners and normal; per vertex its
    // polygons. Sizes: nmesh, nmeshvert, nmeshgraph, nmeshpoly, nmeshpolyvert, nmeshpolymap
    int64_t nmesh = 0, nmeshvert = 0, nmeshgraph = 0, nmeshpoly = 0, nmeshpolyvert = 0, nmeshpolymap = 0;
    const int64_t *geom_dataid = nullptr, *mesh_vertadr = nullptr, *mesh_vertnum = nullptr, *mesh_graphadr = nullptr;
    const int64_t *mesh_graph = nullptr, *mesh_extrema = nullptr, *mesh_polyadr = nullptr, *mesh_polynum = nullptr;
    const int64_t *mesh_polyvertadr = nullptr, *mesh_polyvertnum = nullptr, *mesh_polyvert = nullptr;
    const int64_t *mesh_polymapadr = nullptr, *mesh_polymapnum = nullptr, *mesh_polymap = nullptr;
    // beside each entry of mesh_graph, the point it names when it is a hull edge's far end (nmeshgraph, 3; else 0):
    // the climb reads a neighbour's coordinates in one load (physai.engine.native.graph_points)
    const double *mesh_graph_vert = nullptr;
    // the hulls as the climb reads them (climb_blocks), made from mesh_graph when every hull point is a float (MuJoCo's
    // mesh_vert is float: the same numbers): per hull vertex, in the graph's order, one block of ClimbEdge (its own entry,
    // one per neighbour in the graph's order, an end), contiguous; offsets from the mesh's first block (mesh_climbadr;
    // -1: no graph), the blocks of its 27 extrema (mesh_climb_extrema, nmesh x 27); nullptr otherwise, when the climb
    // reads mesh_graph and mesh_graph_vert
    const ClimbEdge *mesh_climb = nullptr;
    const int64_t *mesh_climbadr = nullptr;
    const int32_t *mesh_climb_extrema = nullptr;
    const double *mesh_vert = nullptr, *mesh_polynormal = nullptr;
    // the heightfields (physai.engine.geoms.Hfields, MuJoCo's hfield_* layout): a heightfield geom's field (geom_dataid);
    // per field its size (4: x, y half sides, top, base depth), rows, columns and elevations' start in hfield_data
    int64_t nhfield = 0, nhfielddata = 0;
    const int64_t *hfield_nrow = nullptr, *hfield_ncol = nullptr, *hfield_adr = nullptr;
    const double *hfield_size = nullptr, *hfield_data = nullptr;
    // the broad phase (collision.BroadPhase): the candidates in groups of one body pair each (ngroup; MuJoCo's body
    // numbers, the world 0): bodies (2), [start, end) with the explicit pairs up to split, always tested or not; the
    // swept bodies (nsweep); each geom's bounding radius plus margin and gap (ngeom); the groups MuJoCo's own boxes may
    // drop (group_shrunk: margins and gaps summing below 0) and each geom's margin plus gap (geom_inflate)
    int64_t ngroup = 0, nsweep = 0;
    const int64_t *group_body = nullptr, *group_start = nullptr, *group_split = nullptr, *group_end = nullptr;
    const int64_t *group_always = nullptr, *sweep_body = nullptr, *geom_collides = nullptr;   // (ngeom): contype or conaffinity
    const int64_t *group_shrunk = nullptr;
    const double *geom_pad = nullptr, *geom_inflate = nullptr;
    // physai.engine.model.Options: the solref floor's timestep, impratio, the cone (elliptic or pyramidal), Newton's
    // tolerance and iterations, the line search's, and which constraints are on
    double opt_timestep = 0.002, opt_impratio = 1.0, opt_tolerance = 1e-8, opt_ls_tolerance = 0.01;
    int64_t opt_iterations = 100, opt_ls_iterations = 50, opt_solver = 0;   // opt_solver: SOLVER_NEWTON, SOLVER_PGS or SOLVER_CG
    double opt_ccd_tolerance = 1e-6;                  // GJK/EPA's tolerance and iteration limit (convex.h)
    int64_t opt_ccd_iterations = 35;
    int64_t opt_noslip_iterations = 0;                // the noslip sweeps after the solver (0: none) and their tolerance
    double opt_noslip_tolerance = 1e-6;
    int64_t opt_island = 1;                           // the solver runs on each constraint island alone (island.h)
    int64_t opt_multiccd = 1;                         // MuJoCo's multi-contact on (Geoms.multiccd; convex.h)
    bool opt_elliptic = false, opt_equality = true, opt_frictionloss = true, opt_limit = true, opt_contact = true,
         opt_refsafe = true;
};

// the actuators (physai.engine.actuators.Actuators, nu of them) of a simulation: moment (nu, nv) and length moment
// qmoment (nu, nq) arms, gain and bias (nu, 3: constant, length, velocity), ctrl and force limits (nu, 2) where limited;
// the limits of the total actuator force per dof (nv, 2) where dof_forcelimited; joint_dof (nu) the dof of a joint
// transmission, -1 for a fixed tendon; tendon_frcid (nu) the tendon of a transmission whose tendon limits its
// actuators' total force (-1: none) with its limits tendon_frcrange (nu, 2), tendon_limited whether any is
struct Actuators {
    int nu = 0;
    const double *moment = nullptr, *qmoment = nullptr, *gain = nullptr, *bias = nullptr;
    const int64_t *ctrllimited = nullptr, *forcelimited = nullptr;
    const double *ctrlrange = nullptr, *forcerange = nullptr;
    const int64_t *dof_forcelimited = nullptr;
    const double *dof_forcerange = nullptr;
    const int64_t *joint_dof = nullptr;
    const int64_t *tendon_frcid = nullptr;
    const double *tendon_frcrange = nullptr;
    bool tendon_limited = false;
    // moment's nonzero entries row by row (MuJoCo's moment_rownnz, moment_rowadr, moment_colind; derived by the bound
    // Actuators): actuator a's dofs at moment_colind[moment_rowadr[a] ..], moment_rownnz[a] of them, ascending;
    // qmoment's likewise (its coordinates)
    const int64_t *moment_rownnz = nullptr, *moment_rowadr = nullptr, *moment_colind = nullptr;
    const int64_t *qmoment_rownnz = nullptr, *qmoment_rowadr = nullptr, *qmoment_colind = nullptr;
    // activation dynamics, gain and bias types (physai.engine.actuators.Actuators: MuJoCo's mjtDyn, mjtGain, mjtBias
    // values) with their parameters: dynprm (nu, 3), gainprm and biasprm (nu, 9), lengthrange (nu, 2), acc0 (nu),
    // actrange (nu, 2); act_index (nu) each stateful actuator's activation (-1: none), na of them; lanes: no actuator
    // has a muscle's dynamics, gain or bias (the lanes' kernels step only those; muscles run one trajectory at a time)
    int na = 0;
    bool lanes = true;
    const int64_t *dyntype = nullptr, *gaintype = nullptr, *biastype = nullptr, *actlimited = nullptr, *actearly = nullptr;
    const int64_t *act_index = nullptr;
    const double *dynprm = nullptr, *gainprm = nullptr, *biasprm = nullptr, *lengthrange = nullptr, *acc0 = nullptr;
    const double *actrange = nullptr;
    // the transmissions (physai.engine.actuators.Actuators): posed_each (nu) the actuators whose arms depend on the
    // configuration (their rows of moment and qmoment zero; actuation.h's transmission computes them at each state),
    // posed whether any does; trntype (nu, MuJoCo's mjtTrn), trnid (nu, 2: joint, tendon or site, the slider site or
    // refsite second, -1 for none), gear6 (nu, 6), cranklength (nu)
    bool posed = false;
    const int64_t *posed_each = nullptr, *trntype = nullptr, *trnid = nullptr;
    const double *gear6 = nullptr, *cranklength = nullptr;
};

// the transmission types (physai.engine.actuators' TRN_*, MuJoCo's mjtTrn)
enum TransmissionKind { TRN_JOINT = 0, TRN_JOINTINPARENT = 1, TRN_SLIDERCRANK = 2, TRN_TENDON = 3, TRN_SITE = 4, TRN_BODY = 5 };

// the activation dynamics and the gain and bias types (physai.engine.actuators' DYN_*, FIXED, AFFINE, MUSCLE)
enum ActuatorKind { DYN_NONE = 0, DYN_INTEGRATOR = 1, DYN_FILTER = 2, DYN_FILTEREXACT = 3, DYN_MUSCLE = 4 };
enum GainKind { GAIN_FIXED = 0, GAIN_AFFINE = 1, GAIN_MUSCLE = 2 };

namespace {

// the number of entries of M's sparse layout (M_rowadr, M_rownnz; MuJoCo's nM): row k holds its ancestors' entries, then
// its diagonal
inline int64_t tree_nnz(const Model &m) { return m.nv ? m.M_rowadr[m.nv - 1] + m.M_rownnz[m.nv - 1] : 0; }

// whether collision detection has pairs to look at: contacts on, candidate or left-out pairs (collision.h's detect)
inline bool collides(const Model &m) { return m.opt_contact && (m.ncand > 0 || m.nmissing > 0); }

// whether M_ij is on M's pattern (i is j, an ancestor or a descendant of j; forward.dof_pattern): the lower of the two
// is in the higher's row of M's layout at its depth (M_rownnz - 1), in O(1) and no nv x nv table
inline bool tree_pair(const Model &m, int64_t i, int64_t j) {
    if (i < j) std::swap(i, j);
    const int64_t depth = m.M_rownnz[j] - 1;
    return m.M_rownnz[i] > depth && m.M_colind[m.M_rowadr[i] + depth] == j;
}

// whether i and j are dofs of one standalone free body (free_dofadr)
inline bool free_pair(const Model &m, int64_t i, int64_t j) {
    for (int k = 0; k < m.nfree; k++) {
        int64_t a = m.free_dofadr[k];
        if (i >= a && i < a + 6 && j >= a && j < a + 6) return true;
    }
    return false;
}

// whether (i, j) is on implicitfast's pattern of D (forward.dof_pattern reduced, MuJoCo's reduced M layout: no
// off-diagonal entries on a simple body's dofs), or in a standalone free body's block (solved in it apart, whole)
inline bool reduced_pair(const Model &m, int64_t i, int64_t j) {
    if (!tree_pair(m, i, j)) return false;
    return i == j || !(m.dof_simplenum[i] || m.dof_simplenum[j]) || free_pair(m, i, j);
}

// the field whose indices are inconsistent (named in the caller's ValueError), or nullptr
inline const char *check_model(const Model &m) {
    for (int i = 0; i < m.nlink; i++) {
        if (m.link_parentid[i] >= i || m.link_parentid[i] < -1) return "link_parentid";
        if (m.link_centerid[i] < 0 || m.link_centerid[i] >= m.nlink) return "link_centerid";
        if (m.link_dofnum[i] < 1 || m.link_dofnum[i] > 3) return "link_dofnum";
        if (m.link_dofadr[i] < 0 || m.link_dofadr[i] + m.link_dofnum[i] > m.nv) return "link_dofadr";
        if (m.link_jnttype[i] != 0 && m.link_jnttype[i] != 1) return "link_jnttype";
        if (m.link_qposadr[i] < 0 || m.link_qposadr[i] + (m.link_jnttype[i] ? 4 : 1) > m.nq) return "link_qposadr";
    }
    for (int j = 0; j < m.nv; j++) {
        if (m.dof_linkid[j] < 0 || m.dof_linkid[j] >= m.nlink) return "dof_linkid";
        if (m.dof_parentid[j] >= j || m.dof_parentid[j] < -1) return "dof_parentid";
        if (m.dof_turnlink[j] < -1 || m.dof_turnlink[j] >= m.nlink) return "dof_turnlink";
    }
    for (int k = 0; k < m.nspring; k++) {
        if (m.spring_qposadr[k] < 0 || m.spring_qposadr[k] >= m.nq) return "spring_qposadr";
        if (m.spring_dofadr[k] < 0 || m.spring_dofadr[k] >= m.nv) return "spring_dofadr";
    }
    for (int k = 0; k < m.nscalar; k++) {
        if (m.scalar_qposadr[k] < 0 || m.scalar_qposadr[k] >= m.nq) return "scalar_qposadr";
        if (m.scalar_dofadr[k] < 0 || m.scalar_dofadr[k] >= m.nv) return "scalar_dofadr";
    }
    for (int k = 0; k < m.nquat; k++) {
        if (m.quat_qposadr[k] < 0 || m.quat_qposadr[k] + 4 > m.nq) return "quat_qposadr";
        if (m.quat_dofadr[k] < 0 || m.quat_dofadr[k] + 3 > m.nv) return "quat_dofadr";
    }
    for (int b = 0; b < m.nbody; b++)
        if (m.body_linkid[b] < -1 || m.body_linkid[b] >= m.nlink) return "body_linkid";
    for (int k = 0; k < m.nfree; k++)
        if (m.free_dofadr[k] < 0 || m.free_dofadr[k] + 6 > m.nv) return "free_dofadr";
    for (int64_t e = 0; e < m.nfluid; e++)
        if (m.fluid_linkid[e] < -1 || m.fluid_linkid[e] >= m.nlink) return "fluid_linkid";
    for (int64_t t = 0; t < m.ntendon; t++)
        if (m.tendon_adr[t] < 0 || m.tendon_num[t] < 0 || m.tendon_adr[t] + m.tendon_num[t] > m.nwrap) return "tendon_adr";
    for (int64_t w = 0; w < m.nwrap; w++) {
        if (m.wrap_qposadr[w] < 0 || m.wrap_qposadr[w] >= m.nq) return "wrap_qposadr";
        if (m.wrap_dofadr[w] < 0 || m.wrap_dofadr[w] >= m.nv) return "wrap_dofadr";
        if (m.wrap_type[w] < WRAP_JOINT || m.wrap_type[w] > WRAP_CYLINDER) return "wrap_type";
        if (m.wrap_type[w] == WRAP_SITE && (m.wrap_objid[w] < 0 || m.wrap_objid[w] >= m.nsite)) return "wrap_objid";
        if (m.wrap_type[w] >= WRAP_SPHERE && (m.wrap_prm[w] < -1 || m.wrap_prm[w] >= double(m.nsite))) return "wrap_prm";
    }
    for (int64_t s = 0; s < m.nsite; s++)
        if (m.site_bodyid[s] < -1 || m.site_bodyid[s] >= m.nbody) return "site_bodyid";
    return nullptr;
}

// the mesh field (physai.engine.geoms.Meshes) whose indices are inconsistent, or nullptr
inline const char *check_meshes(const Model &m) {
    auto within = [](int64_t adr, int64_t num, int64_t size) { return num >= 0 && adr >= 0 && num <= size - adr; };
    for (int64_t g = 0; g < m.ngeom; g++)
        if (m.geom_dataid[g] < -1 || m.geom_dataid[g] >= (m.geom_type[g] == 7 ? m.nmesh : m.geom_type[g] == 1 ? m.nhfield : 0))
            return "geom_dataid";
    for (int64_t i = 0; i < m.nhfield; i++)
        if (m.hfield_nrow[i] < 2 || m.hfield_ncol[i] < 2 || m.hfield_nrow[i] > m.nhfielddata || m.hfield_ncol[i] > m.nhfielddata ||
            !within(m.hfield_adr[i], m.hfield_nrow[i] * m.hfield_ncol[i], m.nhfielddata))
            return "hfield_adr";
    for (int64_t p = 0; p < m.nmeshpoly; p++)
        if (!within(m.mesh_polyvertadr[p], m.mesh_polyvertnum[p], m.nmeshpolyvert)) return "mesh_polyvertadr";
    for (int64_t v = 0; v < m.nmeshvert; v++)
        if (!within(m.mesh_polymapadr[v], m.mesh_polymapnum[v], m.nmeshpolymap)) return "mesh_polymapadr";
    for (int64_t i = 0; i < m.nmesh; i++) {
        int64_t va = m.mesh_vertadr[i], nv = m.mesh_vertnum[i], pa = m.mesh_polyadr[i], np = m.mesh_polynum[i];
        if (nv < 1 || !within(va, nv, m.nmeshvert)) return "mesh_vertadr";
        if (!within(pa, np, m.nmeshpoly)) return "mesh_polyadr";
        for (int64_t p = pa; p < pa + np; p++)
            for (int64_t k = m.mesh_polyvertadr[p]; k < m.mesh_polyvertadr[p] + m.mesh_polyvertnum[p]; k++)
                if (m.mesh_polyvert[k] < 0 || m.mesh_polyvert[k] >= nv) return "mesh_polyvert";
        for (int64_t v = va; v < va + nv; v++)
            for (int64_t k = m.mesh_polymapadr[v]; k < m.mesh_polymapadr[v] + m.mesh_polymapnum[v]; k++)
                if (m.mesh_polymap[k] < 0 || m.mesh_polymap[k] >= np) return "mesh_polymap";
        int64_t ga = m.mesh_graphadr[i];
        if (ga < 0) continue;
        if (ga + 2 > m.nmeshgraph) return "mesh_graphadr";
        int64_t hull = m.mesh_graph[ga], edges = ga + 2 + 2 * hull;
        if (hull < 1 || hull > nv || edges > m.nmeshgraph) return "mesh_graph";
        for (int64_t c = 0; c < 27; c++)
            if (m.mesh_extrema[27 * i + c] < 0 || m.mesh_extrema[27 * i + c] >= hull) return "mesh_extrema";
        for (int64_t h = 0; h < hull; h++) {
            int64_t id = m.mesh_graph[ga + 2 + hull + h], k = m.mesh_graph[ga + 2 + h];
            if (id < 0 || id >= nv || k < 0) return "mesh_graph";
            for (;; k++) {                                     // a neighbour list of hull vertices, ended by a negative
                if (edges + k >= m.nmeshgraph) return "mesh_graph";
                int64_t e = m.mesh_graph[edges + k];
                if (e < 0) break;
                if (e >= hull) return "mesh_graph";
            }
        }
    }
    return nullptr;
}

// Model.mesh_climb, mesh_climbadr and mesh_climb_extrema (a hull's graph as contiguous blocks, vertex by vertex: a step
// of the climb reads one block, not a start, a list and the points elsewhere); empty when a point is not a float or an
// id or offset not an int32 (a mesh made from doubles: the climb reads the model's arrays)
struct ClimbBlocks {
    std::vector<ClimbEdge> edges;
    std::vector<int64_t> adr;
    std::vector<int32_t> extrema;
};

// the ClimbEdge of mesh i's vertex v and next; false when its point is not a float
inline bool climb_entry(const Model &m, int64_t i, int64_t v, int64_t next, ClimbEdge &e) {
    e.next = int32_t(next);
    for (int a = 0; a < 3; a++) {
        double x = m.mesh_vert[3 * (m.mesh_vertadr[i] + v) + a];
        if (!(std::fabs(x) <= FLT_MAX) || double(e.x[a] = float(x)) != x) return false;
    }
    return true;
}

inline ClimbBlocks climb_blocks(const Model &m) {
    ClimbBlocks out;
    out.adr.assign(size_t(m.nmesh), -1), out.extrema.assign(size_t(27 * m.nmesh), -1);
    for (int64_t i = 0; i < m.nmesh; i++) {
        int64_t ga = m.mesh_graphadr[i];
        if (ga < 0) continue;
        const int64_t n = m.mesh_graph[ga], *start = m.mesh_graph + ga + 2, *ids = start + n, *edges = ids + n;
        std::vector<int64_t> block(static_cast<size_t>(n));        // each hull vertex's block: 1 + degree + 1 entries
        int64_t size = 0;
        for (int64_t v = 0; v < n; v++) {
            block[size_t(v)] = size++;
            for (int64_t k = start[v]; edges[k] >= 0; k++) size++;
            size++;
        }
        if (size > INT32_MAX || m.mesh_vertnum[i] > INT32_MAX) return {};
        size_t at = out.edges.size();
        out.adr[size_t(i)] = int64_t(at), out.edges.resize(at + size_t(size));
        ClimbEdge *e = out.edges.data() + at;
        for (int64_t v = 0; v < n; v++) {
            if (!climb_entry(m, i, ids[v], ids[v], *e++)) return {};
            for (int64_t k = start[v]; edges[k] >= 0; k++)
                if (!climb_entry(m, i, ids[edges[k]], block[size_t(edges[k])], *e++)) return {};
            *e++ = ClimbEdge{{0.0f, 0.0f, 0.0f}, -1};
        }
        for (int c = 0; c < 27; c++) out.extrema[size_t(27 * i + c)] = int32_t(block[size_t(m.mesh_extrema[27 * i + c])]);
    }
    return out;
}

// the constraint model's field whose indices are inconsistent (named in the caller's ValueError), or nullptr
inline const char *check_constraints(const Model &m) {
    for (int64_t w = 0; w < m.nwrap; w++)                              // a spatial tendon's wrapping geoms
        if (m.wrap_type[w] >= WRAP_SPHERE && (m.wrap_objid[w] < 0 || m.wrap_objid[w] >= m.ngeom)) return "wrap_objid";
    for (int j = 0; j < m.njnt; j++) {
        int64_t t = m.jnt_type[j];
        if (t < 0 || t > 3) return "jnt_type";
        int64_t nq = t == 0 ? 7 : t == 1 ? 4 : 1, nv = t == 0 ? 6 : t == 1 ? 3 : 1;
        if (m.jnt_qposadr[j] < 0 || m.jnt_qposadr[j] + nq > m.nq) return "jnt_qposadr";
        if (m.jnt_dofadr[j] < 0 || m.jnt_dofadr[j] + nv > m.nv) return "jnt_dofadr";
        if (m.jnt_bodyid[j] < 0 || m.jnt_bodyid[j] >= m.nbody) return "jnt_bodyid";
    }
    for (int b = 0; b < m.nbody; b++) {
        if (m.body_parentid[b] < -1 || m.body_parentid[b] >= b) return "body_parentid";
        if (m.body_jntadr[b] < 0 || m.body_jntnum[b] < 0 || m.body_jntadr[b] + m.body_jntnum[b] > m.njnt) return "body_jntadr";
        for (int64_t j = m.body_jntadr[b]; j < m.body_jntadr[b] + m.body_jntnum[b]; j++)
            if (m.jnt_bodyid[j] != b) return "body_jntadr";
    }
    for (int b = 0; b < m.nbody; b++)
        if (m.body_poselinkadr[b] < 0 || m.body_poselinknum[b] < 0 || m.body_poselinkadr[b] + m.body_poselinknum[b] > m.npose)
            return "body_poselinkadr";
    for (int64_t k = 0; k < m.npose; k++) {
        int64_t t = m.poselink_type[k];
        if (t != JNT_SLIDE && t != JNT_BALL && t != JNT_HINGE) return "poselink_type";
        if (m.poselink_qposadr[k] < 0 || m.poselink_qposadr[k] + (t == JNT_BALL ? 4 : 1) > m.nq) return "poselink_qposadr";
    }
    for (int64_t g = 0; g < m.ngeom; g++) {
        if (m.geom_bodyid[g] < -1 || m.geom_bodyid[g] >= m.nbody) return "geom_bodyid";
        if (m.geom_type[g] < 0 || m.geom_type[g] > 8) return "geom_type";                 // mjtGeom's numbers
    }
    for (int64_t k = 0; k < m.ncand; k++) {
        for (int a = 0; a < 2; a++)
            if (m.cand_geom[2 * k + a] < 0 || m.cand_geom[2 * k + a] >= m.ngeom) return "cand_geom";
        int64_t dim = m.cand_dim[k];                                                       // a contact's rows: 1, 3, 4, 6
        if (dim != 1 && dim != 3 && dim != 4 && dim != 6) return "cand_dim";
        if (m.cand_param[k] < 0 || m.cand_param[k] >= m.nparam) return "cand_param";
    }
    for (int64_t k = 0; k < m.nmissing; k++)
        for (int a = 0; a < 2; a++)
            if (m.missing_geom[2 * k + a] < 0 || m.missing_geom[2 * k + a] >= m.ngeom) return "missing_geom";
    for (int64_t g = 0; g < m.ngroup; g++) {
        if (m.group_start[g] < 0 || m.group_start[g] > m.group_split[g] || m.group_split[g] > m.group_end[g] ||
            m.group_end[g] > m.ncand)
            return "group_start";
        for (int a = 0; a < 2; a++)
            if (m.group_body[2 * g + a] < 0 || m.group_body[2 * g + a] > m.nbody) return "group_body";
    }
    for (int64_t k = 0; k < m.nsweep; k++)
        if (m.sweep_body[k] < 1 || m.sweep_body[k] > m.nbody) return "sweep_body";
    if (const char *field = check_meshes(m)) return field;
    for (int e = 0; e < m.neq; e++) {
        int64_t t = m.eq_type[e], objects = t == 2 ? m.njnt : t == 3 ? m.ntendon : m.nbody;
        if (t < 0 || t > 3) return "eq_type";
        if (m.eq_obj1id[e] < (t >= 2 ? 0 : -1) || m.eq_obj1id[e] >= objects) return "eq_obj1id";
        if (m.eq_obj2id[e] < -1 || m.eq_obj2id[e] >= objects) return "eq_obj2id";
    }
    return nullptr;
}

}  // namespace
}  // namespace physai
