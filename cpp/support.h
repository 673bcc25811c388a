// What physai.jacobians, physai.kinematics and physai.centroidal read from the smooth stages (MuJoCo's
// engine_support.c: mj_jac): the Jacobian of a point fixed in a link (any number type: lanes too), a body's world pose
// from its link's (one state at a time, double), and the centroidal momentum matrix (lanes too).
#pragma once

#include <cstdint>

#include "data.h"
#include "model.h"
#include "spatial.h"

namespace physai {
namespace {

// the point fixed in link l at p (in the link's frame) relative to l's centre, r = cpos + R p, from a Data after com_pos
template <class T> inline void point_offset(const Data<T> &d, int64_t l, const double *p, T *r) {
    const T *c = &d.cpos[3 * l];
    mat3_times(&d.xmat[9 * l], p, r);
    for (int a = 0; a < 3; a++) r[a] = c[a] + r[a];
}

// column i of (Jp; Jr) at r: (S_lin + S_ang x r; S_ang)
template <class T> inline void jacobian_column(const Data<T> &d, int64_t i, const T *r, T *col) {
    const T *S = &d.cdof[6 * i];
    T wr[3];
    cross(S, r, wr);
    for (int a = 0; a < 3; a++) col[a] = S[3 + a] + wr[a], col[3 + a] = S[a];
}

// column i of (Jp_dot; Jr_dot) at r with the point's velocity pdot (MuJoCo's mj_jacDot): Sdot = cdof_dot_i, or cvel of
// dof_turnlink[i] x cdof_i for a ball's or free joint's rotation dof; (Sdot_lin + Sdot_ang x r + S_ang x pdot; Sdot_ang)
template <class T> inline void jacobian_dot_column(const Model &m, const Data<T> &d, int64_t i, const T *r, const T *pdot, T *col) {
    const T *S = &d.cdof[6 * i];
    T Sdot[6], a1[3], a2[3];
    if (m.dof_turnlink[i] >= 0) {                                      // cvel_body x cdof: (w x S_ang, w x S_lin + v x S_ang)
        const T *v = &d.cvel[6 * m.dof_turnlink[i]];
        cross(v, S, Sdot);
        cross(v, S + 3, a1), cross(v + 3, S, a2);
        for (int a = 0; a < 3; a++) Sdot[3 + a] = a1[a] + a2[a];
    } else {
        for (int a = 0; a < 6; a++) Sdot[a] = d.cdof_dot[6 * i + a];
    }
    cross(Sdot, r, a1), cross(S, pdot, a2);
    for (int a = 0; a < 3; a++) col[a] = Sdot[3 + a] + a1[a] + a2[a], col[3 + a] = Sdot[a];
}

// the velocity pdot = v + w x r of the point at r in link l ((w, v) = cvel of l), from a Data after com_vel
template <class T> inline void point_velocity(const Data<T> &d, int64_t l, const T *r, T *pdot) {
    const T *vb = &d.cvel[6 * l];
    T wr[3];
    cross(vb, r, wr);
    for (int a = 0; a < 3; a++) pdot[a] = vb[3 + a] + wr[a];
}

// the world point `point` moving with body b relative to the centre of its link's tree, r = point - centre; returns b's
// link, or -1 (r left as it is) for the world (b = -1) or a body welded to it
template <class T> int64_t world_offset(const Model &m, const Data<T> &d, int64_t b, const T *point, T *r) {
    int64_t link = b >= 0 ? m.body_linkid[b] : -1;
    if (link < 0) return -1;
    const T *center = &d.xpos[3 * m.link_centerid[link]];
    for (int a = 0; a < 3; a++) r[a] = point[a] - center[a];
    return link;
}

// THE point Jacobian (support.point_jacobians; MuJoCo's mj_jac): (Jp; Jr) (6, nv, row-major) of the point at r
// (relative to the centre of link l's tree) moving with link l, from a Data after com_pos: Jp = S_lin + S_ang x r,
// Jr = S_ang in the columns of l's dofs and their ancestors, the others left as they are (all of them for l = -1)
template <class T> void point_jacobians(const Model &m, const Data<T> &d, int64_t l, const T *r, T *J) {
    if (l < 0) return;
    int nv = m.nv;
    T col[6];
    for (int64_t i = m.link_dofadr[l] + m.link_dofnum[l] - 1; i >= 0; i = m.dof_parentid[i]) {
        jacobian_column(d, i, r, col);
        for (int a = 0; a < 6; a++) J[a * nv + i] = col[a];
    }
}

// (Jp; Jr) (6, nv) of a point fixed in link l (p: its position in the link's frame) from a Data after com_pos:
// point_jacobians at r = cpos + R p, 0 elsewhere
template <class T> void jacobian(const Model &m, const Data<T> &d, int64_t l, const double *p, T *J) {
    for (int k = 0; k < 6 * m.nv; k++) J[k] = splat<T>(0.0);
    T r[3];
    point_offset(d, l, p, r);
    point_jacobians(m, d, l, r, J);
}

// (Jp_dot; Jr_dot) (6, nv) of a point fixed in link l (p in the link's frame) from a Data after com_vel
// (support.point_jacobian_dots, MuJoCo's mj_jacDot) in the columns of l's dofs and their ancestors
template <class T> void jacobian_dot(const Model &m, const Data<T> &d, int64_t l, const double *p, T *J) {
    int nv = m.nv;
    for (int k = 0; k < 6 * nv; k++) J[k] = splat<T>(0.0);
    T r[3], pdot[3], col[6];
    point_offset(d, l, p, r);
    point_velocity(d, l, r, pdot);
    for (int64_t i = m.link_dofadr[l] + m.link_dofnum[l] - 1; i >= 0; i = m.dof_parentid[i]) {
        jacobian_dot_column(m, d, i, r, pdot, col);
        for (int a = 0; a < 6; a++) J[a * nv + i] = col[a];
    }
}

// the motion of a point fixed in link l (p in the link's frame): v = J qd (6: pdot; w) from a Data after com_pos, and
// with qdd (a not null; the Data after com_vel) a = J qdd + J_dot qd (6: its classical acceleration; angular), summed
// over l's dofs and their ancestors (kinematics.frame_velocity, frame_acceleration)
template <class T> void frame_motion(const Model &m, const Data<T> &d, int64_t l, const double *p, const T *qd, const T *qdd,
                                     T *v, T *a) {
    T r[3], pdot[3], col[6];
    point_offset(d, l, p, r);
    if (a) point_velocity(d, l, r, pdot);
    for (int k = 0; k < 6; k++) {
        v[k] = splat<T>(0.0);
        if (a) a[k] = splat<T>(0.0);
    }
    for (int64_t i = m.link_dofadr[l] + m.link_dofnum[l] - 1; i >= 0; i = m.dof_parentid[i]) {
        jacobian_column(d, i, r, col);
        for (int k = 0; k < 6; k++) v[k] = v[k] + col[k] * qd[i];
        if (!a) continue;
        for (int k = 0; k < 6; k++) a[k] = a[k] + col[k] * qdd[i];
        jacobian_dot_column(m, d, i, r, pdot, col);
        for (int k = 0; k < 6; k++) a[k] = a[k] + col[k] * qd[i];
    }
}

// a body's world pose (p (3), rot (3, 3)) from its pose in link l (bp, br) on a Data after kinematics: p = x + R bp,
// rot = R br; the world's pose (bp, br itself) for l = -1
inline void body_pose(const Data<double> &d, int64_t l, const double *bp, const double *br, double *p, double *rot) {
    if (l < 0) {
        for (int a = 0; a < 3; a++) p[a] = bp[a];
        for (int a = 0; a < 9; a++) rot[a] = br[a];
        return;
    }
    const double *X = &d.xmat[9 * l], *x = &d.xpos[3 * l];
    mat3_times(X, bp, p);
    for (int a = 0; a < 3; a++) p[a] = x[a] + p[a];
    mat3_mul(X, br, rot);
}

// the whole model's centre of mass c (3) from a Data after com_pos (support.centre_of_mass): c = (sum_l m_l (centre_l +
// cipos_l) + the mass welded to the world at its centre) / mass; returns the mass
template <class T> double centre_of_mass(const Model &m, const Data<T> &d, T *c) {
    double total = m.static_mass;
    for (int a = 0; a < 3; a++) c[a] = splat<T>(m.static_mass * m.static_com[a]);
    for (int i = 0; i < m.nlink; i++) {
        const T *ci = &d.cipos[3 * i], *ctr = &d.xpos[3 * m.link_centerid[i]];
        total += m.link_mass[i];
        for (int a = 0; a < 3; a++) c[a] = c[a] + m.link_mass[i] * (ctr[a] + ci[a]);
    }
    for (int a = 0; a < 3; a++) c[a] = c[a] / total;
    return total;
}

// the centroidal momentum matrix A_g (6, nv, row-major: linear, then angular about the model's centre of mass c) into
// out, from a Data after com_pos and composite_inertias (support.momentum_matrix): column j is dof j's subtree's
// momentum F = Ic S_j (angular about the centre of j's tree, linear), its angular part moved to c: F_ang + (ctr - c) x F_lin
template <class T> int momentum_matrix(const Model &m, Data<T> &d, T *out) {
    T c[3];
    if (!(centre_of_mass(m, d, c) > 0)) return NONFINITE;              // no mass: no centre of mass
    int nv = m.nv;
    for (int j = 0; j < nv; j++) {
        int64_t l = m.dof_linkid[j];
        T F[6], r[3], rF[3];
        const T *S = &d.cdof[6 * j];
        if (m.dof_motionparts[j] & 1) {
            inertia_times(d.crb[l], S, F);
        } else {                                                       // S_ang = 0 (a slide): F = (h x u, m u)
            cross(d.crb[l].h, S + 3, F);
            for (int a = 0; a < 3; a++) F[3 + a] = d.crb[l].m * S[3 + a];
        }
        const T *ctr = &d.xpos[3 * m.link_centerid[l]];
        for (int a = 0; a < 3; a++) r[a] = ctr[a] - c[a];
        cross(r, F + 3, rF);
        for (int a = 0; a < 3; a++) out[a * nv + j] = F[3 + a], out[(3 + a) * nv + j] = F[a] + rF[a];
    }
    return OK;
}

// the centre of mass's Jacobian (3, nv, row-major) into out, from a Data after kinematics, motion_subspaces and
// subtree_moments (support.com_jacobian; MuJoCo's mj_jacSubtreeCom of the world): momentum_matrix's linear rows over the
// mass without the inertias. Column j of link l: (m_sub S_lin + S_ang x h_sub) / mass, m_sub = link_subtreemass[l],
// h_sub = subtree_moment of l
template <class T> int com_jacobian(const Model &m, Data<T> &d, T *out) {
    double total = m.static_mass;
    for (int i = 0; i < m.nlink; i++) total += m.link_mass[i];
    if (!(total > 0)) return NONFINITE;                                // no mass: no centre of mass
    int nv = m.nv;
    for (int j = 0; j < nv; j++) {
        int64_t l = m.dof_linkid[j];
        const T *S = &d.cdof[6 * j];
        T wh[3];
        cross(S, &d.subtree_moment[3 * l], wh);
        for (int a = 0; a < 3; a++) out[a * nv + j] = (m.link_subtreemass[l] * S[3 + a] + wh[a]) / total;
    }
    return OK;
}

// the rate of the centroidal momentum matrix A_g_dot (6, nv, row-major) into out, from a Data after com_pos, com_vel and
// composite_inertias (centroidal._momentum_matrix_dot): I_k_dot = X + X^T, X = v_k x* I_k, summed over subtrees into
// crb_dot; F_dot_j = Ic_dot S_j + Ic S_dot_j (S_dot_j: cdof_dot, or cvel of dof_turnlink x cdof for a ball's or free
// joint's rotation dof); column j (F_lin_dot; F_ang_dot + (ctr - c) x F_lin_dot - c_dot x F_lin)
template <class T> int momentum_matrix_dot(const Model &m, Data<T> &d, T *out) {
    for (int k = 0; k < m.nlink; k++) {                                // I_k_dot = X + X^T, X = v_k x* I_k
        T I[36], X[36], col[6];
        inertia_dense(d.cinert[k], I);
        for (int c = 0; c < 6; c++) {                                  // column c of X from I's column c (its row c)
            cross_force(d.vel(k), I + 6 * c, col);
            for (int r = 0; r < 6; r++) X[6 * r + c] = col[r];
        }
        T *D = &d.crb_dot[36 * size_t(k)];
        for (int r = 0; r < 6; r++)
            for (int c = 0; c < 6; c++) D[6 * r + c] = X[6 * r + c] + X[6 * c + r];
    }
    for (int i = m.nlink - 1; i >= 0; i--) {                          // backward pass over links: Ic_dot_parent += Ic_dot
        int64_t p = m.link_parentid[i];
        if (p < 0) continue;
        for (int e = 0; e < 36; e++) d.crb_dot[36 * size_t(p) + e] = d.crb_dot[36 * size_t(p) + e] + d.crb_dot[36 * size_t(i) + e];
    }
    T c[3], cdot[3];                                                   // c and its rate sum m_l (v_l + w_l x cipos_l) / mass
    double total = centre_of_mass(m, d, c);
    if (!(total > 0)) return NONFINITE;                                // no mass: no centre of mass
    for (int a = 0; a < 3; a++) cdot[a] = splat<T>(0.0);
    for (int i = 0; i < m.nlink; i++) {
        const T *ci = &d.cipos[3 * i], *v = d.vel(i);
        T wr[3];
        cross(v, ci, wr);
        for (int a = 0; a < 3; a++) cdot[a] = cdot[a] + m.link_mass[i] * (v[3 + a] + wr[a]);
    }
    for (int a = 0; a < 3; a++) cdot[a] = cdot[a] / total;
    int nv = m.nv;
    for (int j = 0; j < nv; j++) {
        int64_t l = m.dof_linkid[j];
        const T *S = &d.cdof[6 * j];
        T Sdot[6], F[6], Fd[6], IcSd[6], a1[3], a2[3];
        if (m.dof_turnlink[j] >= 0) {
            cross_motion(d.vel(m.dof_turnlink[j]), S, Sdot);
        } else {
            for (int a = 0; a < 6; a++) Sdot[a] = d.cdof_dot[6 * j + a];
        }
        inertia_times(d.crb[l], S, F);
        mat6_times(&d.crb_dot[36 * size_t(l)], S, Fd);
        inertia_times(d.crb[l], Sdot, IcSd);
        for (int a = 0; a < 6; a++) Fd[a] = Fd[a] + IcSd[a];
        const T *ctr = &d.xpos[3 * m.link_centerid[l]];
        T r[3];
        for (int a = 0; a < 3; a++) r[a] = ctr[a] - c[a];
        cross(r, Fd + 3, a1), cross(cdot, F + 3, a2);
        for (int a = 0; a < 3; a++) out[a * nv + j] = Fd[3 + a], out[(3 + a) * nv + j] = Fd[a] + a1[a] - a2[a];
    }
    return OK;
}

}  // namespace
}  // namespace physai
