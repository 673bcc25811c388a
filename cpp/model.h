// The constant description of a model (MuJoCo's mjModel): flat arrays named as the fields of physai.engine.Model where
// they exist (link_parentid, link_dofadr, dof_parentid, ...). A Model only points into arrays that its owner keeps
// (the bound NativeModel of cpp/bindings.cpp); the kernels take it as const and keep every workspace elsewhere
// (cpp/data.h). Model and SimModel are plain data: no member functions, so no code of theirs is shared between the
// instruction sets' translation units.
#pragma once

#include <cstdint>

namespace physai {

struct Model {
    int nq = 0, nv = 0, nlink = 0, nspring = 0;
    double gravity[3] = {0, 0, 0};
    // per link (nlink): the tree
    const int64_t *link_parentid = nullptr;      // parent link, -1: the world
    const int64_t *link_centerid = nullptr;      // the link its tree's positions are taken about (its centre)
    const int64_t *link_relative = nullptr;      // 1: cpos summed from the centre outward (keeps digits far away)
    const int64_t *link_dofadr = nullptr, *link_dofnum = nullptr;    // its dofs: [dofadr, dofadr + dofnum), 1 to 3
    // per link: inertia in the link frame
    const double *link_mass = nullptr, *link_ipos = nullptr, *link_inertia = nullptr;   // (nlink), (nlink, 3), (nlink, 3, 3)
    // per link: the local transform (Model.link_transforms); jnttype 0: hinge or slide, G (3, 4, 4) @ (1, t, sin t,
    // 1 - cos t) with t = q[qposadr] - ref; 1: ball, rot Q(q) about the anchor, then pos
    const int64_t *link_jnttype = nullptr, *link_qposadr = nullptr;
    const double *link_ref = nullptr, *link_G = nullptr;                                 // (nlink), (nlink, 48)
    const double *link_ballrot = nullptr, *link_ballpos = nullptr, *link_ballanchor = nullptr;   // (nlink, 9), (nlink, 3) x2
    const char *link_hinge = nullptr, *link_slide = nullptr;   // scalar links whose G has no t term, or only 1 and t terms
    // per dof (nv)
    const int64_t *dof_linkid = nullptr, *dof_parentid = nullptr;   // its link; the dof before it on the path to the root, -1
    const double *dof_motion = nullptr, *dof_armature = nullptr;    // (nv, 6) in the link frame, (nv)
    // joint springs (nspring): q index, stiffness, rest position
    const int64_t *spring_qposadr = nullptr;
    const double *spring_stiffness = nullptr, *spring_ref = nullptr;
    // bodies welded to the world (their gravity moment)
    double static_mass = 0, static_com[3] = {0, 0, 0};
};

// What drives a simulation besides the Model (integrators.simulate, forces.Actuators): joint damping, q's layout for
// integration, the actuators, the bodies that wrenches act on, and M's sparsity pattern
struct SimModel {
    int nq = 0, nv = 0, nu = 0, nbody = 0, nscalar = 0, nquat = 0, nspring = 0;
    const double *dof_damping = nullptr;                                  // (nv)
    const int64_t *scalar_qposadr = nullptr, *scalar_dofadr = nullptr;    // (nscalar): scalar coordinates, q and v index
    const int64_t *quat_qposadr = nullptr, *quat_dofadr = nullptr;        // (nquat): quaternions, q (4) and v (3) index
    const int64_t *spring_dofadr = nullptr;                               // (nspring): the dof of each Model spring
    // actuators (nu): moment (nu, nv) and length moment (nu, nq) arms, gain and bias (nu, 3: constant, length, velocity)
    const double *actuator_moment = nullptr, *actuator_qmoment = nullptr, *actuator_gain = nullptr, *actuator_bias = nullptr;
    const int64_t *actuator_ctrllimited = nullptr, *actuator_forcelimited = nullptr;
    const double *actuator_ctrlrange = nullptr, *actuator_forcerange = nullptr;                   // (nu, 2)
    const int64_t *dof_forcelimited = nullptr;                                                    // (nv)
    const double *dof_forcerange = nullptr;                                                       // (nv, 2)
    const int64_t *body_linkid = nullptr;          // (nbody): the engine link a body moves with, -1: the world
    const double *body_point = nullptr;            // (nbody, 3): its centre of mass in the link's frame
    const int64_t *dof_pattern = nullptr;          // (nv, nv): M's sparsity (dof i is j, an ancestor or a descendant)
};

namespace {

// what is inconsistent in m's indices (the message of the caller's ValueError), or nullptr
inline const char *check_model(const Model &m) {
    for (int i = 0; i < m.nlink; i++) {
        if (m.link_parentid[i] >= i || m.link_parentid[i] < -1 || m.link_centerid[i] < 0 || m.link_centerid[i] >= m.nlink ||
            m.link_dofnum[i] < 1 || m.link_dofnum[i] > 3 || m.link_dofadr[i] < 0 || m.link_dofadr[i] + m.link_dofnum[i] > m.nv ||
            m.link_qposadr[i] < 0 || m.link_qposadr[i] + (m.link_jnttype[i] ? 4 : 1) > m.nq)
            return "inconsistent link arrays";
    }
    for (int j = 0; j < m.nv; j++)
        if (m.dof_linkid[j] < 0 || m.dof_linkid[j] >= m.nlink || m.dof_parentid[j] >= j || m.dof_parentid[j] < -1)
            return "inconsistent dof arrays";
    for (int k = 0; k < m.nspring; k++)
        if (m.spring_qposadr[k] < 0 || m.spring_qposadr[k] >= m.nq) return "spring index";
    return nullptr;
}

// the same for a SimModel
inline const char *check_sim(const SimModel &s) {
    for (int k = 0; k < s.nspring; k++)
        if (s.spring_dofadr[k] < 0 || s.spring_dofadr[k] >= s.nv) return "spring dof";
    for (int k = 0; k < s.nscalar; k++)
        if (s.scalar_qposadr[k] < 0 || s.scalar_qposadr[k] >= s.nq || s.scalar_dofadr[k] < 0 || s.scalar_dofadr[k] >= s.nv)
            return "scalar coordinate index";
    for (int k = 0; k < s.nquat; k++)
        if (s.quat_qposadr[k] < 0 || s.quat_qposadr[k] + 4 > s.nq || s.quat_dofadr[k] < 0 || s.quat_dofadr[k] + 3 > s.nv)
            return "quaternion index";
    for (int b = 0; b < s.nbody; b++)
        if (s.body_linkid[b] < -1) return "body link";
    return nullptr;
}

}  // namespace
}  // namespace physai
