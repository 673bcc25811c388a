// The smooth stages (src/physai/engine/smooth.py, MuJoCo's engine_core_smooth.c), function by function with the
// NumPy text's names, stages and quantities: spatial vectors are (angular, linear), world-aligned, about the centre of
// each link's tree.
//
//     kinematics(m, d, q)         link poses                       xmat, xpos, cpos
//     com_pos(m, d)               inertias and motion subspaces    cipos, cinert, cdof
//     com_vel(m, d, qd)           velocities                       cvel, cdof_dot
//     rne(m, d, qd, qdd, out)     recursive Newton-Euler           cacc, cfrc, qfrc
//     crb(m, d, out)              composite rigid bodies           crb, qM
//     subtree_moments(m, d)       the subtrees' mass moments       subtree_moment (the CoM Jacobian's)
//     position_stages, velocity_stages   kinematics and com_pos; then com_vel
//     path_stages(m, d, q, qd, l) the poses, cdof (and velocities) of l and its ancestors alone: a point's Jacobian
//     energy_vel, energy_pos      the kinetic and potential energies (MuJoCo's mj_energyVel, mj_energyPos)
#pragma once

#include <algorithm>

#include "data.h"
#include "model.h"
#include "spatial.h"

namespace physai {
namespace {

// link i's pose at positions q from its parent's: xmat, xpos (and step, R_parent p_loc); ZERO_QUATERNION for a ball
// joint's zero quaternion
template <class T> int link_pose(const Model &m, Data<T> &d, const T *q, int i) {
    T R[9], p[3];                                                  // the local transform (Model.link_transforms)
    if (m.link_jnttype[i] == 0) {                                  // hinge or slide: G @ (1, t, sin t, 1 - cos t)
        T t = q[m.link_qposadr[i]] - m.link_ref[i];
        // sin t = 2 sin(t/2) cos(t/2), 1 - cos t = 2 sin(t/2)^2: 1 - cos t keeps its relative precision for small t
        T coef[4] = {splat<T>(1.0), t, splat<T>(0.0), splat<T>(0.0)};
        if (!m.link_slide[i]) {
            T sh, ch;
            sincos_any(0.5 * t, sh, ch);
            coef[2] = 2.0 * sh * ch, coef[3] = 2.0 * sh * sh;
        }
        const double *G = &m.link_G[48 * i];
        T Tl[12];
        if (m.link_hinge[i]) {                                     // G[:, :, 1] = 0: the same numbers without it
            for (int a = 0; a < 12; a++) Tl[a] = G[4 * a] * coef[0] + G[4 * a + 2] * coef[2] + G[4 * a + 3] * coef[3];
        } else if (m.link_slide[i]) {                              // G[:, :, 2:] = 0
            for (int a = 0; a < 12; a++) Tl[a] = G[4 * a] * coef[0] + G[4 * a + 1] * coef[1];
        } else {
            for (int a = 0; a < 12; a++)
                Tl[a] = G[4 * a] * coef[0] + G[4 * a + 1] * coef[1] + G[4 * a + 2] * coef[2] + G[4 * a + 3] * coef[3];
        }
        for (int a = 0; a < 3; a++) {
            for (int b = 0; b < 3; b++) R[3 * a + b] = Tl[4 * a + b];
            p[a] = Tl[4 * a + 3];
        }
    } else {                                                       // ball: R = rot Q, p = pos + rot (o - Q o)
        T u[4], Q[9], Qo[3], e[3], re[3];
        if (any_zero(quat_normalize(q + m.link_qposadr[i], u))) return ZERO_QUATERNION;
        quat_to_mat(u, Q);
        const double *rot = &m.link_ballrot[9 * i], *pos = &m.link_ballpos[3 * i], *o = &m.link_ballanchor[3 * i];
        mat3_mul(rot, Q, R);
        mat3_times(Q, o, Qo);
        for (int a = 0; a < 3; a++) e[a] = o[a] - Qo[a];
        mat3_times(rot, e, re);
        for (int a = 0; a < 3; a++) p[a] = pos[a] + re[a];
    }
    // forward pass over links: R = R_parent R_loc, x = x_parent + R_parent p_loc
    T *X = &d.xmat[9 * i], *x = &d.xpos[3 * i], *st = &d.step[3 * i];
    int64_t par = m.link_parentid[i];
    if (par < 0) {
        for (int a = 0; a < 9; a++) X[a] = R[a];
        for (int a = 0; a < 3; a++) x[a] = p[a], st[a] = p[a];
    } else {
        const T *Xp = &d.xmat[9 * par], *xp = &d.xpos[3 * par];
        mat3_mul(Xp, R, X);
        mat3_times(Xp, p, st);
        for (int a = 0; a < 3; a++) x[a] = st[a] + xp[a];
    }
    return OK;
}

// link i's position relative to the centre of its tree, cpos: summed from the centre outward where the link allows it
// (its parent's cpos known), else from xpos
template <class T> void link_offset(const Model &m, Data<T> &d, int i) {
    int64_t c = m.link_centerid[i];
    T *cp = &d.cpos[3 * i];
    if (c == i) {
        cp[0] = cp[1] = cp[2] = splat<T>(0.0);
    } else if (m.link_relative[i]) {
        const T *pp = &d.cpos[3 * m.link_parentid[i]];
        for (int a = 0; a < 3; a++) cp[a] = pp[a] + d.step[3 * i + a];
    } else {
        for (int a = 0; a < 3; a++) cp[a] = d.xpos[3 * i + a] - d.xpos[3 * c + a];
    }
}

// link poses at positions q: xmat, xpos, cpos (relative to the centre of the link's tree); ZERO_QUATERNION for a ball
// joint's zero quaternion
template <class T> int kinematics(const Model &m, Data<T> &d, const T *q) {
    for (int i = 0; i < m.nlink; i++)
        if (link_pose(m, d, q, i) != OK) return ZERO_QUATERNION;
    for (int i = 0; i < m.nlink; i++) link_offset(m, d, i);
    return OK;
}

// dof j's motion subspace about the centre, cdof = (R s_ang, x x (R s_ang) + R s_lin), from its link's pose; a zero
// s_ang or s_lin (a slide's, a hinge's about its link's origin: dof_motionparts) is skipped, the same numbers without it
template <class T> void dof_subspace(const Model &m, Data<T> &d, int j) {
    int64_t l = m.dof_linkid[j];
    const T *R = &d.xmat[9 * l], *x = &d.cpos[3 * l];
    const double *s = &m.dof_motion[6 * j];
    const int parts = m.dof_motionparts[j];
    T *S = &d.cdof[6 * j], xs[3];
    if (parts & 1) mat3_times(R, s, S);
    else S[0] = S[1] = S[2] = splat<T>(0.0);
    if (parts & 2) mat3_times(R, s + 3, S + 3);
    else S[3] = S[4] = S[5] = splat<T>(0.0);
    if (!(parts & 1)) return;
    cross(x, S, xs);
    for (int a = 0; a < 3; a++) S[3 + a] = S[3 + a] + xs[a];
}

template <class T> void motion_subspaces(const Model &m, Data<T> &d);

// spatial inertias cinert, centres of mass cipos and motion subspaces cdof, about the centres
template <class T> void com_pos(const Model &m, Data<T> &d) {
    for (int i = 0; i < m.nlink; i++) {
        const T *R = &d.xmat[9 * i], *x = &d.cpos[3 * i];
        const double *J = &m.link_inertia[9 * i];
        T *c = &d.cipos[3 * i], Rp[3], RI[9];
        Inertia<T> &I = d.cinert[i];
        double mass = m.link_mass[i];
        // c = x + R ipos;  h = m c
        mat3_times(R, &m.link_ipos[3 * i], Rp);
        for (int a = 0; a < 3; a++) c[a] = x[a] + Rp[a];
        for (int a = 0; a < 3; a++) I.h[a] = mass * c[a];
        // Ibar = R I R^T - h c^T + (h . c) 1
        mat3_mul(R, J, RI);
        T hc = I.h[0] * c[0] + I.h[1] * c[1] + I.h[2] * c[2];
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++) {
                T v = RI[3 * a] * R[3 * b] + RI[3 * a + 1] * R[3 * b + 1] + RI[3 * a + 2] * R[3 * b + 2];
                v = v - I.h[a] * c[b];
                if (a == b) v = v + hc;
                I.I[3 * a + b] = v;
            }
        I.m = splat<T>(mass);
    }
    motion_subspaces(m, d);
}

// motion subspaces cdof about the centres alone (com_pos's last part; smooth.motion_subspaces): for Jacobians
template <class T> void motion_subspaces(const Model &m, Data<T> &d) {
    for (int j = 0; j < m.nv; j++) dof_subspace(m, d, j);
}

// each link's subtree's mass moment about its tree's centre, subtree_moment (3): the sum over the subtree of
// m_k (cpos_k + R_k ipos_k), from a Data after kinematics (smooth.subtree_moments; support.h's com_jacobian reads it)
template <class T> void subtree_moments(const Model &m, Data<T> &d) {
    T *h = d.subtree_moment.data();
    for (int i = 0; i < m.nlink; i++) {                                // h = m (cpos + R ipos)
        T Rp[3];
        mat3_times(&d.xmat[9 * i], &m.link_ipos[3 * i], Rp);
        for (int a = 0; a < 3; a++) h[3 * i + a] = m.link_mass[i] * (d.cpos[3 * i + a] + Rp[a]);
    }
    for (int i = m.nlink - 1; i >= 0; i--) {                          // backward pass over links: h_parent += h
        int64_t p = m.link_parentid[i];
        if (p >= 0)
            for (int a = 0; a < 3; a++) h[3 * p + a] = h[3 * p + a] + h[3 * i + a];
    }
}

// link i's velocity cvel = cvel_parent + S qd, from its parent's
template <class T> void link_velocity(const Model &m, Data<T> &d, const T *qd, int i) {
    const T *vp = d.vel(m.link_parentid[i]);
    T *v = d.vel(i), s[6];
    for (int k = 0; k < 6; k++) s[k] = splat<T>(0.0);
    for (int64_t j = m.link_dofadr[i]; j < m.link_dofadr[i] + m.link_dofnum[i]; j++)
        for (int k = 0; k < 6; k++) s[k] = s[k] + d.cdof[6 * j + k] * qd[j];
    for (int k = 0; k < 6; k++) v[k] = vp[k] + s[k];
}

// dof j's cdof_dot = cvel_parent x cdof (its link's parent's velocity)
template <class T> void dof_rate(const Model &m, Data<T> &d, int64_t j) {
    cross_motion(d.vel(m.link_parentid[m.dof_linkid[j]]), &d.cdof[6 * j], &d.cdof_dot[6 * j]);
}

// link velocities cvel = cvel_parent + S qd and cdof_dot = cvel_parent x cdof
template <class T> void com_vel(const Model &m, Data<T> &d, const T *qd) {
    T *world = d.vel(-1);
    for (int k = 0; k < 6; k++) world[k] = splat<T>(0.0);
    for (int i = 0; i < m.nlink; i++) link_velocity(m, d, qd, i);                 // forward pass over links
    for (int j = 0; j < m.nv; j++) dof_rate(m, d, j);
}

// the links from the root of l's tree down to l (l's ancestors and l), root first, into d.path: their count
template <class T> int link_path(const Model &m, Data<T> &d, int64_t l) {
    int n = 0;
    for (int64_t i = l; i >= 0; i = m.link_parentid[i]) d.path[size_t(n++)] = i;
    std::reverse(d.path.get(), d.path.get() + n);
    return n;
}

// the stages of the links from the root of l's tree down to l alone: poses, cpos and cdof (kinematics, motion_subspaces),
// and with qd their velocities and cdof_dot (com_vel): what a point fixed in l needs for its Jacobian and their rates
// (Pinocchio's frame Jacobians compute the same support). ZERO_QUATERNION for a zero quaternion anywhere in q, as
// kinematics; every link's stages when a path link's centre or a path dof's turning link is off the path (a point on
// the links of a body's first joints, above the link that carries the body)
template <class T> int path_stages(const Model &m, Data<T> &d, const T *q, const T *qd, int64_t l) {
    int n = link_path(m, d, l);
    const int64_t *path = d.path.get();
    if (!m.link_pathcentred[l]) {
        if (kinematics(m, d, q) != OK) return ZERO_QUATERNION;
        motion_subspaces(m, d);
        if (qd) com_vel(m, d, qd);
        return OK;
    }
    for (int i = 0; i < m.nlink; i++)                                  // every quaternion checked, as kinematics does
        if (m.link_jnttype[i] == 1) {
            T u[4];
            if (any_zero(quat_normalize(q + m.link_qposadr[i], u))) return ZERO_QUATERNION;
        }
    for (int k = 0; k < n; k++) link_pose(m, d, q, int(path[k]));
    for (int k = 0; k < n; k++) link_offset(m, d, int(path[k]));
    for (int k = 0; k < n; k++)
        for (int64_t j = m.link_dofadr[path[k]]; j < m.link_dofadr[path[k]] + m.link_dofnum[path[k]]; j++) dof_subspace(m, d, int(j));
    if (!qd) return OK;
    T *world = d.vel(-1);
    for (int k = 0; k < 6; k++) world[k] = splat<T>(0.0);
    for (int k = 0; k < n; k++) {
        link_velocity(m, d, qd, int(path[k]));
        for (int64_t j = m.link_dofadr[path[k]]; j < m.link_dofadr[path[k]] + m.link_dofnum[path[k]]; j++) dof_rate(m, d, j);
    }
    return OK;
}

// (0, -gravity) into a: gravity as an upward acceleration of the world (Model._a_g)
template <class T> void base_acc(const Model &m, T *a) {
    for (int k = 0; k < 3; k++) a[k] = splat<T>(0.0), a[3 + k] = splat<T>(-m.gravity[k]);
}

// recursive Newton-Euler: tau = M qdd + C qd + g into out (nv); QD or QDD false means qd or qdd = 0 (MuJoCo's flg_acc),
// so rne_<T, false, false> is g(q). The flags are template arguments: no test on them inside the loops.
template <class T, bool QD, bool QDD> void rne_(const Model &m, Data<T> &d, const T *qd, const T *qdd, T *out) {
    T ag[6];
    base_acc(m, ag);
    if (!QD && !QDD) {                                                 // every link accelerates at a_g: f = cinert a_g
        for (int i = 0; i < m.nlink; i++) inertia_times(d.cinert[i], ag, &d.cfrc[6 * i]);
    } else {
        T *aw = d.acc(-1);
        for (int k = 0; k < 6; k++) aw[k] = ag[k];
        // forward pass over links: a = a_parent + S qdd + cdof_dot qd;  f = cinert a + v x* (cinert v)
        for (int i = 0; i < m.nlink; i++) {
            T inc[6];
            for (int k = 0; k < 6; k++) inc[k] = splat<T>(0.0);
            for (int64_t j = m.link_dofadr[i]; j < m.link_dofadr[i] + m.link_dofnum[i]; j++)
                for (int k = 0; k < 6; k++) {
                    T x = QDD ? d.cdof[6 * j + k] * qdd[j] : splat<T>(0.0);
                    if (QD) x = x + d.cdof_dot[6 * j + k] * qd[j];
                    inc[k] = inc[k] + x;
                }
            const T *ap = d.acc(m.link_parentid[i]);
            T *a = d.acc(i), *f = &d.cfrc[6 * i];
            for (int k = 0; k < 6; k++) a[k] = ap[k] + inc[k];
            inertia_times(d.cinert[i], a, f);
            if (QD) {
                T Iv[6], vf[6];
                inertia_times(d.cinert[i], d.vel(i), Iv);
                cross_force(d.vel(i), Iv, vf);
                for (int k = 0; k < 6; k++) f[k] = f[k] + vf[k];
            }
        }
    }
    // backward pass over links: f_parent += f
    for (int i = m.nlink - 1; i >= 0; i--) {
        int64_t p = m.link_parentid[i];
        if (p >= 0)
            for (int k = 0; k < 6; k++) d.cfrc[6 * p + k] = d.cfrc[6 * p + k] + d.cfrc[6 * i + k];
    }
    // tau = S . f + armature qdd
    for (int j = 0; j < m.nv; j++) {
        out[j] = dot6(&d.cdof[6 * j], &d.cfrc[6 * m.dof_linkid[j]]);
        if (QDD) out[j] = out[j] + m.dof_armature[j] * qdd[j];
    }
}

// qd or qdd null means zero: rne(m, d, nullptr, nullptr, out) is g(q)
template <class T> void rne(const Model &m, Data<T> &d, const T *qd, const T *qdd, T *out) {
    if (qd && qdd) rne_<T, true, true>(m, d, qd, qdd, out);
    else if (qd) rne_<T, true, false>(m, d, qd, qdd, out);
    else if (qdd) rne_<T, false, true>(m, d, qd, qdd, out);
    else rne_<T, false, false>(m, d, qd, qdd, out);
}

// composite inertias d.crb: each link's subtree's spatial inertia about the centre (smooth.composite_inertias)
template <class T> void composite_inertias(const Model &m, Data<T> &d) {
    // Ic = I first (one memmove, as MuJoCo's mju_copy: the copy loop of 13-lane structs compiled to a slow rep movsq);
    // std::copy_n makes no call for no links (a memcpy from the null data of an empty vector is undefined)
    std::copy_n(d.cinert.data(), m.nlink, d.crb.data());
    for (int i = m.nlink - 1; i >= 0; i--) {                          // backward pass over links: Ic_parent += Ic
        int64_t p = m.link_parentid[i];
        if (p < 0) continue;
        Inertia<T> &P = d.crb[p];
        const Inertia<T> &C = d.crb[i];
        for (int k = 0; k < 9; k++) P.I[k] = P.I[k] + C.I[k];
        for (int k = 0; k < 3; k++) P.h[k] = P.h[k] + C.h[k];
        P.m = P.m + C.m;
    }
}

// composite inertias crb and M (nv, nv) into out, armature included.
// M_ij = S_i . (Ic_j S_j) for i = j or an ancestor of j, M_ji = M_ij, 0 between unrelated branches. The NumPy text
// forms every product S_i . (Ic_j S_j) and masks the pairs by ancestry (one einsum over the batch, no Python loop per
// pair); here each column walks its dof's parent chain (dof_parentid), which computes only the nonzero entries: the
// same products, the same numbers.
template <class T> void crb(const Model &m, Data<T> &d, T *out) {
    composite_inertias(m, d);
    size_t nv = size_t(m.nv);
    for (size_t k = 0; k < nv * nv; k++) out[k] = splat<T>(0.0);
    for (size_t j = 0; j < nv; j++) {
        T F[6];
        inertia_times(d.crb[m.dof_linkid[j]], &d.cdof[6 * j], F);
        for (int64_t i = int64_t(j); i >= 0; i = m.dof_parentid[i]) {
            T v = dot6(&d.cdof[6 * i], F);
            out[size_t(i) * nv + j] = v;
            out[j * nv + size_t(i)] = v;
        }
    }
    for (size_t j = 0; j < nv; j++) out[j * nv + j] = out[j * nv + j] + m.dof_armature[j];
}

// kinematics and com_pos (smooth.position_stages)
template <class T> int position_stages(const Model &m, Data<T> &d, const T *q) {
    int st = kinematics(m, d, q);
    if (st == OK) com_pos(m, d);
    return st;
}

// position_stages, then com_vel (smooth.velocity_stages)
template <class T> int velocity_stages(const Model &m, Data<T> &d, const T *q, const T *qd) {
    int st = position_stages(m, d, q);
    if (st == OK) com_vel(m, d, qd);
    return st;
}

// T = 1/2 sum_l v . (cinert v) + 1/2 sum_i armature qd^2
template <class T> T energy_vel(const Model &m, Data<T> &d, const T *qd) {
    T s = splat<T>(0.0), arm = splat<T>(0.0), Iv[6];
    for (int i = 0; i < m.nlink; i++) {
        inertia_times(d.cinert[i], d.vel(i), Iv);
        s = s + dot6(d.vel(i), Iv);
    }
    for (int j = 0; j < m.nv; j++) arm = arm + m.dof_armature[j] * qd[j] * qd[j];
    return 0.5 * (s + arm);
}

// U = 1/2 k (q - springref)^2 - gravity . (sum_l m_l (center_l + cipos_l) + static mass moment)
template <class T> T energy_pos(const Model &m, Data<T> &d, const T *q) {
    T moment[3] = {splat<T>(0.0), splat<T>(0.0), splat<T>(0.0)};
    for (int i = 0; i < m.nlink; i++) {
        const T *c = &d.cipos[3 * i], *ctr = &d.xpos[3 * m.link_centerid[i]];
        for (int a = 0; a < 3; a++) moment[a] = moment[a] + m.link_mass[i] * (c[a] + ctr[a]);
    }
    T springs = splat<T>(0.0);
    for (int s = 0; s < m.nspring; s++) {
        T e = q[m.spring_qposadr[s]] - m.spring_ref[s];
        springs = springs + m.spring_stiffness[s] * e * e;
    }
    T g = splat<T>(0.0);
    for (int a = 0; a < 3; a++) g = g + m.gravity[a] * (moment[a] + m.static_mass * m.static_com[a]);
    return 0.5 * springs - g;
}

}  // namespace
}  // namespace physai
