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
//     cholesky_solve, tree_cholesky_solve   x = M^-1 b by M's Cholesky factor, dense or on the tree's pattern (MuJoCo's
//                                 mj_factorM, mj_solveM): forward.h, the derivatives and the constraint solver use them
//     block_inverse, aba          the articulated-body algorithm (RBDA table 7.1)
//     energy_vel, energy_pos      the kinetic and potential energies (MuJoCo's mj_energyVel, mj_energyPos)
//     body_poses, geom_poses      one state's body and geom frames in mj_kinematics' own arithmetic (collision's)
//     moved_bodies, moved_geom_poses   those of a state moved along one dof from a base state's (base_poses): its bodies
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "data.h"
#include "model.h"
#include "spatial.h"

namespace physai {
namespace {

// link i's pose at positions q from its parent's: xmat, xpos (and step, R_parent p_loc); ZERO_QUATERNION for a ball
// joint's zero quaternion. The constant entries of the local transform and a parent whose axes are the world's are read
// as they are (model.h's link_T0, link_tvary, link_worldaxes, link_ballplain): the same numbers as the products by
// their zeros and ones
template <class T> int link_pose(const Model &m, Data<T> &d, const T *q, int i) {
    T Rp[12], *R = Rp, *p = Rp + 9;                                // the local transform (Model.link_transforms)
    if (m.link_jnttype[i] == 0) {                                  // hinge or slide: G @ (1, t, sin t, 1 - cos t)
        T t = q[m.link_qposadr[i]] - m.link_ref[i];
        // sin t = 2 sin(t/2) cos(t/2), 1 - cos t = 2 sin(t/2)^2: 1 - cos t keeps its relative precision for small t
        T coef[4] = {splat<T>(1.0), t, splat<T>(0.0), splat<T>(0.0)};
        if (!m.link_slide[i]) {
            T sh, ch;
            sincos_any(0.5 * t, sh, ch);
            coef[2] = 2.0 * sh * ch, coef[3] = 2.0 * sh * sh;
        }
        const double *G = &m.link_G[48 * i], *T0 = &m.link_T0[12 * i];
        for (int a = 0; a < 12; a++) Rp[a] = splat<T>(T0[a]);
        const int64_t *vary = m.link_tvary + m.link_tvaryadr[i], nvary = m.link_tvarynum[i];
        if (m.link_hinge[i]) {                                     // G[:, :, 1] = 0: the same numbers without it
            for (int64_t k = 0; k < nvary; k++) {
                int64_t a = vary[k];
                Rp[RP_OF[a]] = G[4 * a] * coef[0] + G[4 * a + 2] * coef[2] + G[4 * a + 3] * coef[3];
            }
        } else if (m.link_slide[i]) {                              // G[:, :, 2:] = 0
            for (int64_t k = 0; k < nvary; k++) {
                int64_t a = vary[k];
                Rp[RP_OF[a]] = G[4 * a] * coef[0] + G[4 * a + 1] * coef[1];
            }
        } else {
            for (int64_t k = 0; k < nvary; k++) {
                int64_t a = vary[k];
                Rp[RP_OF[a]] = G[4 * a] * coef[0] + G[4 * a + 1] * coef[1] + G[4 * a + 2] * coef[2] + G[4 * a + 3] * coef[3];
            }
        }
    } else {                                                       // ball: R = rot Q, p = pos + rot (o - Q o)
        T u[4], Q[9], Qo[3], e[3], re[3];
        if (any_zero(quat_normalize(q + m.link_qposadr[i], u))) return ZERO_QUATERNION;
        if (m.link_ballplain[i]) {                                 // rot = 1, pos = o = 0: R = Q, p = 0
            quat_to_mat(u, R);
            p[0] = p[1] = p[2] = splat<T>(0.0);
        } else {
            quat_to_mat(u, Q);
            const double *rot = &m.link_ballrot[9 * i], *pos = &m.link_ballpos[3 * i], *o = &m.link_ballanchor[3 * i];
            mat3_mul(rot, Q, R);
            mat3_times(Q, o, Qo);
            for (int a = 0; a < 3; a++) e[a] = o[a] - Qo[a];
            mat3_times(rot, e, re);
            for (int a = 0; a < 3; a++) p[a] = pos[a] + re[a];
        }
    }
    // forward pass over links: R = R_parent R_loc, x = x_parent + R_parent p_loc (R_parent = 1: R_loc, p_loc)
    T *X = &d.xmat[9 * i], *x = &d.xpos[3 * i], *st = &d.step[3 * i];
    int64_t par = m.link_parentid[i];
    if (par < 0) {
        for (int a = 0; a < 9; a++) X[a] = R[a];
        for (int a = 0; a < 3; a++) x[a] = p[a], st[a] = p[a];
    } else if (m.link_worldaxes[par]) {
        const T *xp = &d.xpos[3 * par];
        for (int a = 0; a < 9; a++) X[a] = R[a];
        for (int a = 0; a < 3; a++) st[a] = p[a], x[a] = p[a] + xp[a];
    } else {
        const T *Xp = &d.xmat[9 * par], *xp = &d.xpos[3 * par];
        switch (m.link_keptaxis[i]) {                                  // a hinge about a coordinate axis: R_loc's zeros skipped
            case 0: mat3_mul_keeping<0>(Xp, R, X); break;
            case 1: mat3_mul_keeping<1>(Xp, R, X); break;
            case 2: mat3_mul_keeping<2>(Xp, R, X); break;
            default: mat3_mul(Xp, R, X);
        }
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

// ---------------------------------------------------------------- MuJoCo-order poses
// collision must match mj_collision bit for bit (near-degenerate contacts amplify the frames' last digits), so its
// frames are composed body by body with mj_kinematics' own arithmetic (double, one state), not with the link kinematics
// above

// MuJoCo 4's mju_normalize4 (squares summed in pairs), exact at any size (quat_normalize_scaled where |q|^2 over- or
// underflows); zero: the identity (physai.joints.quat_normalize_mj)
inline void quat_normalize_mj(double *q) {
    double norm2 = (q[0] * q[0] + q[1] * q[1]) + (q[2] * q[2] + q[3] * q[3]);
    if (!norm2_in_range(norm2)) {
        if (q[0] == 0 && q[1] == 0 && q[2] == 0 && q[3] == 0) {
            q[0] = 1.0;
            return;
        }
        double u[4];
        quat_normalize_scaled(q, u);
        for (int a = 0; a < 4; a++) q[a] = u[a];
        return;
    }
    double norm = std::sqrt(norm2);
    if (std::fabs(norm - 1) > MINVAL) {
        double inv = 1 / norm;
        for (int a = 0; a < 4; a++) q[a] *= inv;
    }
}

// R (3x3, rows) of a unit quaternion (MuJoCo 4's mju_quat2Mat: products of the components summed in its order; the
// identity exact; smooth.quat_to_mat_mj)
inline void quat_to_mat_mj(const double *q, double *R) {
    double w = q[0], x = q[1], y = q[2], z = q[3];
    if (w == 1 && x == 0 && y == 0 && z == 0) {
        for (int k = 0; k < 9; k++) R[k] = k % 4 == 0 ? 1.0 : 0.0;
        return;
    }
    double ww_yy = w * w - y * y;
    R[0] = ww_yy + (x * x - z * z), R[4] = (w * w + y * y) - (x * x + z * z), R[8] = ww_yy + (z * z - x * x);
    R[1] = 2 * (x * y - w * z), R[2] = 2 * (x * z + w * y), R[3] = 2 * (x * y + w * z);
    R[5] = 2 * (y * z - w * x), R[6] = 2 * (x * z - w * y), R[7] = 2 * (y * z + w * x);
}

// v rotated by a unit quaternion (mju_rotVecQuat; smooth.rotate_mj)
inline void rotate_mj(const double *v, const double *q, double *r) {
    double w = q[0], x = q[1], y = q[2], z = q[3];
    if (w == 1 && x == 0 && y == 0 && z == 0) {
        r[0] = v[0], r[1] = v[1], r[2] = v[2];
        return;
    }
    double t[3] = {w * v[0] + y * v[2] - z * v[1], w * v[1] + z * v[0] - x * v[2], w * v[2] + x * v[1] - y * v[0]};
    r[0] = v[0] + 2 * (y * t[2] - z * t[1]), r[1] = v[1] + 2 * (z * t[0] - x * t[2]), r[2] = v[2] + 2 * (x * t[1] - y * t[0]);
}

#if PHYSAI_LANES
// quat_normalize_mj, quat_to_mat_mj and rotate_mj for lanes (body_poses side by side): the same numbers as
// for one state in every lane, their branches as selects (a lane whose |q|^2 over- or underflows: the one state's)
template <class L> inline void quat_normalize_mj(L *q) {
    L norm2 = (q[0] * q[0] + q[1] * q[1]) + (q[2] * q[2] + q[3] * q[3]), orig[4] = {q[0], q[1], q[2], q[3]};
    L norm = vsqrt(norm2), dn = norm - 1.0, inv = 1.0 / norm;
    auto scaled = (dn > MINVAL) | (dn < -MINVAL);
    for (int a = 0; a < 4; a++) q[a] = select(scaled, q[a] * inv, q[a]);
    for (int i = 0; i < lanes_of<L>; i++)
        if (!norm2_in_range(norm2[i])) {                                // the same numbers as for one state
            double u[4] = {orig[0][i], orig[1][i], orig[2][i], orig[3][i]};
            quat_normalize_mj(u);
            for (int a = 0; a < 4; a++) q[a][i] = u[a];
        }
}
template <class L> inline auto is_identity(const L *q) { return (q[0] == 1.0) & (q[1] == 0.0) & (q[2] == 0.0) & (q[3] == 0.0); }
template <class L> inline void quat_to_mat_mj(const L *q, L *R) {
    L w = q[0], x = q[1], y = q[2], z = q[3], ww_yy = w * w - y * y, one = splat<L>(1.0), zero = splat<L>(0.0);
    auto id = is_identity(q);
    R[0] = select(id, one, ww_yy + (x * x - z * z)), R[4] = select(id, one, (w * w + y * y) - (x * x + z * z));
    R[8] = select(id, one, ww_yy + (z * z - x * x));
    R[1] = select(id, zero, 2.0 * (x * y - w * z)), R[2] = select(id, zero, 2.0 * (x * z + w * y));
    R[3] = select(id, zero, 2.0 * (x * y + w * z)), R[5] = select(id, zero, 2.0 * (y * z - w * x));
    R[6] = select(id, zero, 2.0 * (x * z - w * y)), R[7] = select(id, zero, 2.0 * (y * z + w * x));
}
template <class V, class L> inline void rotate_mj(const V *v, const L *q, L *r) {
    L w = q[0], x = q[1], y = q[2], z = q[3];
    auto id = is_identity(q);
    L t[3] = {w * v[0] + y * v[2] - z * v[1], w * v[1] + z * v[0] - x * v[2], w * v[2] + x * v[1] - y * v[0]};
    L u[3] = {v[0] + 2.0 * (y * t[2] - z * t[1]), v[1] + 2.0 * (z * t[0] - x * t[2]), v[2] + 2.0 * (x * t[1] - y * t[0])};
    for (int a = 0; a < 3; a++) r[a] = select(id, splat<L>(0.0) + v[a], u[a]);
}
#endif

// the rotation by which pose link k's coordinates turn it, with MuJoCo's arithmetic, into local (physai.joints.turn_mj):
// a ball's quaternion normalized, a hinge's (cos t/2, sin t/2 axis) at t = q - ref (the identity at t = 0); false for a
// slide, which moves along its axis by q - ref instead (one state or lanes)
template <class T> inline bool turn_mj(const Model &m, const T *q, int64_t k, T *local) {
    const T *x = q + m.poselink_qposadr[k];
    if (m.poselink_type[k] == JNT_SLIDE) return false;
    if (m.poselink_type[k] == JNT_BALL) {
        for (int a = 0; a < 4; a++) local[a] = x[a];
        quat_normalize_mj(local);
        return true;
    }
    T angle = x[0] - m.poselink_ref[k], s{}, c{};
    sincos_libm(angle * 0.5, s, c);
    auto still = angle == 0.0;                                         // the identity at t = 0
    local[0] = select(still, splat<T>(1.0), c);
    for (int a = 0; a < 3; a++) local[1 + a] = select(still, splat<T>(0.0), m.poselink_axis[3 * k + a] * s);
    return true;
}

// (xpos (nbody, 3), xquat (nbody, 4), xmat (nbody, 9)) of every body at q (one state or lanes), link by link as
// mj_kinematics (smooth.body_poses; the links of its joints: Model's poselink_*); moved (nbody flags, or nullptr: all): the bodies
// posed, the others' frames left as the arrays hold them (another state's, which q moves only those from)
template <class T> void body_poses(const Model &m, const T *q, T *xpos, T *xquat, T *xmat,
                       const char *moved = nullptr) {
    for (int b = 0; b < m.nbody; b++) {
        if (moved && !moved[b]) continue;                               // not moved: the base state's frame
        int64_t k0 = m.body_poselinkadr[b], n = m.body_poselinknum[b], p = m.body_parentid[b];
        T pos[3], quat[4];
        if (n > 0 && m.poselink_world[k0]) {                            // a free joint's links start from the world
            pos[0] = pos[1] = pos[2] = splat<T>(0.0);
            quat[0] = splat<T>(1.0), quat[1] = quat[2] = quat[3] = splat<T>(0.0);
        } else if (p >= 0) {                                            // p = R_parent offset + p_parent, q = q_parent q_body
            mat3_times(xmat + 9 * p, m.body_offset + 3 * b, pos);
            for (int a = 0; a < 3; a++) pos[a] = pos[a] + xpos[3 * p + a];
            quat_mul_mj(xquat + 4 * p, m.body_quat + 4 * b, quat);
        } else {
            for (int a = 0; a < 3; a++) pos[a] = splat<T>(m.body_offset[3 * b + a]);
            for (int a = 0; a < 4; a++) quat[a] = splat<T>(m.body_quat[4 * b + a]);
        }
        for (int64_t k = k0; k < k0 + n; k++) {
            const double *o = m.poselink_anchor + 3 * k;
            T axis[3], anchor[3], local[4], turned[4], offset[3];
            rotate_mj(m.poselink_axis + 3 * k, quat, axis);
            rotate_mj(o, quat, anchor);
            for (int a = 0; a < 3; a++) anchor[a] = anchor[a] + pos[a];
            if (!turn_mj(m, q, k, local)) {                             // a slide: p += axis (q - ref)
                T t = q[m.poselink_qposadr[k]] - m.poselink_ref[k];
                for (int a = 0; a < 3; a++) pos[a] = pos[a] + axis[a] * t;
                continue;
            }
            quat_mul_mj(quat, local, turned);                           // a turn about the anchor: q = q turn, p = anchor - R o
            for (int a = 0; a < 4; a++) quat[a] = turned[a];
            rotate_mj(o, quat, offset);
            for (int a = 0; a < 3; a++) pos[a] = anchor[a] - offset[a];
        }
        quat_normalize_mj(quat);
        for (int a = 0; a < 3; a++) xpos[3 * b + a] = pos[a];
        for (int a = 0; a < 4; a++) xquat[4 * b + a] = quat[a];
        quat_to_mat_mj(quat, xmat + 9 * b);
    }
}

// the bodies whose frames move along dof (smooth.moved_bodies) into moved (nbody flags): those of its link and the
// links below it (parents first)
inline void moved_bodies(const Model &m, int64_t dof, std::vector<char> &moved_link, std::vector<char> &moved) {
    for (int64_t l = 0; l < m.nlink; l++) {
        int64_t p = m.link_parentid[l];
        moved_link[size_t(l)] = l == m.dof_linkid[dof] || (p >= 0 && moved_link[size_t(p)]);
    }
    for (int64_t b = 0; b < m.nbody; b++) moved[size_t(b)] = m.body_linkid[b] >= 0 && moved_link[size_t(m.body_linkid[b])];
}

// the MuJoCo-order frames of a state: every body's (xpos, xquat, xmat) and the geoms' (gpos, gmat) of posed (the
// geoms a caller reads); base_*: those of a state others move from along one dof (base_poses), and moved the bodies
// the last moved_geom_poses posed off it (empty: the frames are not the base's, a geom_poses')
struct PoseWork {
    std::vector<double> xpos, xquat, xmat, gpos, gmat;
    std::vector<double> base_xpos, base_xquat, base_xmat, base_gpos, base_gmat;
    std::vector<int64_t> posed;
    std::vector<char> moved, moved_link;
    explicit PoseWork(const Model &m) {
        size_t B = size_t(m.nbody), G = size_t(m.ngeom);
        xpos.resize(3 * B), xquat.resize(4 * B), xmat.resize(9 * B), gpos.resize(3 * G), gmat.resize(9 * G);
    }
};

// geom g's world position p and axes R from the bodies' MuJoCo-order frames (body_poses'): R = mat(q_body q_geom),
// p = R_body geom_pos + p_body
inline void geom_pose(const Model &m, const double *xpos, const double *xquat, const double *xmat, int64_t g, double *p,
                      double *R) {
    int64_t b = m.geom_bodyid[g];
    const double identity[4] = {1.0, 0.0, 0.0, 0.0}, eye[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, zero[3] = {0.0, 0.0, 0.0};
    const double *bq = b < 0 ? identity : xquat + 4 * b, *bp = b < 0 ? zero : xpos + 3 * b;
    const double *Rb = b < 0 ? eye : xmat + 9 * b;                    // body_poses' mat(q_body)
    double quat[4];
    quat_mul_mj(bq, m.geom_quat + 4 * g, quat);
    quat_to_mat_mj(quat, R);
    mat3_times(Rb, m.geom_pos + 3 * g, p);
    for (int a = 0; a < 3; a++) p[a] = p[a] + bp[a];
}

// the world position and axes of the geoms w.posed into w.gpos, w.gmat (smooth.geom_poses, which poses them all); the
// bodies' frames body_poses' at q, or those of posed when given (body_x*: the lanes' body_poses at the same q, read
// there: w's body frames are then left as they were)
inline void geom_poses(const Model &m, PoseWork &w, const double *q, const Data<double> *posed = nullptr) {
    if (!posed) body_poses(m, q, w.xpos.data(), w.xquat.data(), w.xmat.data());
    const double *xpos = posed ? posed->body_xpos.data() : w.xpos.data();
    const double *xquat = posed ? posed->body_xquat.data() : w.xquat.data();
    const double *xmat = posed ? posed->body_xmat.data() : w.xmat.data();
    for (int64_t g : w.posed) geom_pose(m, xpos, xquat, xmat, g, &w.gpos[size_t(3 * g)], &w.gmat[size_t(9 * g)]);
    w.moved.clear();
}

// geom_poses at q0 kept as the base that moved_geom_poses moves states from (w.base_*)
inline void base_poses(const Model &m, PoseWork &w, const double *q0) {
    geom_poses(m, w, q0);
    w.base_xpos = w.xpos, w.base_xquat = w.xquat, w.base_xmat = w.xmat, w.base_gpos = w.gpos, w.base_gmat = w.gmat;
}

// the frames of the bodies moved (flags) and of their posed geoms copied from w's base_* into w's arrays
inline void restore_base(const Model &m, PoseWork &w, const std::vector<char> &moved) {
    auto copy = [](const std::vector<double> &from, std::vector<double> &to, size_t at, size_t n) {
        std::copy(from.begin() + long(at * n), from.begin() + long((at + 1) * n), to.begin() + long(at * n));
    };
    for (int64_t b = 0; b < m.nbody; b++) {
        if (!moved[size_t(b)]) continue;
        copy(w.base_xpos, w.xpos, size_t(b), 3), copy(w.base_xquat, w.xquat, size_t(b), 4), copy(w.base_xmat, w.xmat, size_t(b), 9);
    }
    for (int64_t g : w.posed) {
        if (m.geom_bodyid[g] < 0 || !moved[size_t(m.geom_bodyid[g])]) continue;
        copy(w.base_gpos, w.gpos, size_t(g), 3), copy(w.base_gmat, w.gmat, size_t(g), 9);
    }
}

// geom_poses at q, a state moved from base_poses' q0 along dof (smooth.moved_geom_poses): the bodies dof moves
// (moved_bodies) and their posed geoms posed at q, the others' frames q0's (those the last state moved restored
// first; every frame after a geom_poses)
inline void moved_geom_poses(const Model &m, PoseWork &w, const double *q, int64_t dof) {
    if (w.moved.empty()) {
        w.xpos = w.base_xpos, w.xquat = w.base_xquat, w.xmat = w.base_xmat, w.gpos = w.base_gpos, w.gmat = w.base_gmat;
        w.moved.assign(size_t(m.nbody), 0), w.moved_link.assign(size_t(m.nlink), 0);
    }
    restore_base(m, w, w.moved);
    moved_bodies(m, dof, w.moved_link, w.moved);
    body_poses(m, q, w.xpos.data(), w.xquat.data(), w.xmat.data(), w.moved.data());
    for (int64_t g : w.posed)
        if (m.geom_bodyid[g] >= 0 && w.moved[size_t(m.geom_bodyid[g])])
            geom_pose(m, w.xpos.data(), w.xquat.data(), w.xmat.data(), g, &w.gpos[size_t(3 * g)], &w.gmat[size_t(9 * g)]);
}

// dof j's motion subspace about the centre, cdof = (R s_ang, x x (R s_ang) + R s_lin), from its link's pose; a zero
// s_ang or s_lin (a slide's, a hinge's about its link's origin: dof_motionparts) is skipped, the same numbers without it
template <class T> void dof_subspace(const Model &m, Data<T> &d, int j) {
    int64_t l = m.dof_linkid[j];
    const T *R = &d.xmat[9 * l], *x = &d.cpos[3 * l];
    const double *s = &m.dof_motion[6 * j];
    const int parts = m.dof_motionparts[j];
    T *S = &d.cdof[6 * j], xs[3];
    const int64_t axis = m.dof_unitaxis[j];
    if (axis >= 0) {                                                   // s_ang = +-e_k: R s_ang is R's column k
        for (int a = 0; a < 3; a++) S[a] = axis < 3 ? R[3 * a + axis] : -R[3 * a + axis - 3];
    } else if (parts & 1) {
        mat3_times(R, s, S);
    } else {
        S[0] = S[1] = S[2] = splat<T>(0.0);
    }
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
        if (m.link_massless[i]) {                                      // no mass, no inertia: I = 0
            for (int k = 0; k < 9; k++) I.I[k] = splat<T>(0.0);
            for (int a = 0; a < 3; a++) I.h[a] = splat<T>(0.0);
            I.m = splat<T>(0.0);
            continue;
        }
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
    for (int k = 0; k < m.nquat; k++) {                                // every quaternion checked, as kinematics does
        T u[4];
        if (any_zero(quat_normalize(q + m.quat_qposadr[k], u))) return ZERO_QUATERNION;
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
            if (m.link_massless[i]) {                                  // no mass, no inertia: f = 0 (slide links)
                for (int k = 0; k < 6; k++) f[k] = splat<T>(0.0);
                continue;
            }
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

// M on the tree's pattern (the model's sparse layout, below: MuJoCo's qM) into out (tree_nnz), armature included: crb's
// entries (i, j) of j and its ancestors i, each the same product, without the dense nv x nv (its zeros between
// unrelated branches never written)
template <class T> void crb_tree(const Model &m, Data<T> &d, T *out) {
    composite_inertias(m, d);
    for (int64_t j = 0; j < m.nv; j++) {
        T F[6];
        inertia_times(d.crb[m.dof_linkid[j]], &d.cdof[6 * j], F);
        T *row = out + m.M_rowadr[j];                                  // entry (j, i) at depth(i) = M_rownnz[i] - 1
        for (int64_t i = j; i >= 0; i = m.dof_parentid[i]) row[m.M_rownnz[i] - 1] = dot6(&d.cdof[6 * i], F);
    }
    for (int64_t j = 0; j < m.nv; j++) {
        T &diag = out[m.M_rowadr[j] + m.M_rownnz[j] - 1];
        diag = diag + m.dof_armature[j];
    }
}

// ---------------------------------------------------------------- solves with M (mj_factorM, mj_solveM), ABA

// x with M x = b (M symmetric positive definite, overwritten by its Cholesky factor L in the lower triangle); SINGULAR on
// a non-positive pivot
template <class T> int cholesky_solve(T *M, int n, T *b) {
    for (int j = 0; j < n; j++) {
        T *Mj = M + size_t(j) * n;
        T s = Mj[j];
        for (int k = 0; k < j; k++) s = s - Mj[k] * Mj[k];
        if (!all_positive(s)) return SINGULAR;
        T L = vsqrt(s);
        Mj[j] = L;
        for (int i = j + 1; i < n; i++) {
            T *Mi = M + size_t(i) * n;
            T t = Mi[j];
            for (int k = 0; k < j; k++) t = t - Mi[k] * Mj[k];
            Mi[j] = t / L;
        }
    }
    for (int i = 0; i < n; i++) {                                      // L y = b
        const T *Mi = M + size_t(i) * n;
        T t = b[i];
        for (int k = 0; k < i; k++) t = t - Mi[k] * b[k];
        b[i] = t / Mi[i];
    }
    for (int i = n - 1; i >= 0; i--) {                                 // L^T x = y
        T t = b[i];
        for (int k = i + 1; k < n; k++) t = t - M[size_t(k) * n + i] * b[k];
        b[i] = t / M[size_t(i) * n + i];
    }
    return OK;
}

// M on the tree's pattern (M_ij = 0 unless i and j are on one path to the root) in the model's sparse layout (MuJoCo's
// M_rowadr, M_rownnz, M_colind): row k holds its entries with its ancestors from the root, then its diagonal, so entry
// (i, j) of an ancestor j is at M_rowadr[i] + depth(j) and an ancestor's row runs along row k's first entries.

// the lower triangle of a dense M (nv x nv) onto the sparse layout, into Ms (M_rowadr[nv - 1] + M_rownnz[nv - 1])
template <class T> void tree_pack(const Model &m, const T *M, T *Ms) {
    for (int k = 0; k < m.nv; k++)
        for (int64_t a = m.M_rowadr[k]; a < m.M_rowadr[k] + m.M_rownnz[k]; a++)
            Ms[a] = M[size_t(k) * m.nv + size_t(m.M_colind[a])];
}

// the symmetric dense M (nv x nv) of a matrix on the tree's pattern Ms: entry (k, j) and (j, k) from Ms's row k, zero
// elsewhere
template <class T> void tree_unpack(const Model &m, const T *Ms, T *M) {
    size_t nv = size_t(m.nv);
    for (size_t k = 0; k < nv * nv; k++) M[k] = splat<T>(0.0);
    for (int k = 0; k < m.nv; k++)
        for (int64_t a = m.M_rowadr[k]; a < m.M_rowadr[k] + m.M_rownnz[k]; a++) {
            size_t j = size_t(m.M_colind[a]);
            M[size_t(k) * nv + j] = Ms[a], M[j * nv + size_t(k)] = Ms[a];
        }
}

// entry (i, i) of a matrix on the tree's pattern
template <class T> inline T &tree_diagonal(const Model &m, T *Ms, int64_t i) { return Ms[m.M_rowadr[i] + m.M_rownnz[i] - 1]; }
template <class T> inline const T &tree_diagonal(const Model &m, const T *Ms, int64_t i) {
    return Ms[m.M_rowadr[i] + m.M_rownnz[i] - 1];
}

// y -= a x over n entries (y and x apart: the loop vectorizes without a check)
template <class T> inline void subtract_scaled(T *__restrict y, const T *__restrict x, T a, int64_t n) {
    for (int64_t s = 0; s < n; s++) y[s] = y[s] - a * x[s];
}

// f(D) with the depth D of a row on the tree's pattern a compile-time constant up to 5 (a free joint's chain: the loops
// on it unrolled, the same operations), else f(depth)
template <class F> inline void with_depth(int64_t depth, F &&f) {
    switch (depth) {
        case 0: f(std::integral_constant<int64_t, 0>()); break;
        case 1: f(std::integral_constant<int64_t, 1>()); break;
        case 2: f(std::integral_constant<int64_t, 2>()); break;
        case 3: f(std::integral_constant<int64_t, 3>()); break;
        case 4: f(std::integral_constant<int64_t, 4>()); break;
        case 5: f(std::integral_constant<int64_t, 5>()); break;
        default: f(depth);
    }
}

// L with M = L^T L on the sparse layout, in place, and the reciprocals of L's diagonal into inv (MuJoCo's mj_factorM and
// qLDiagInv, as L^T L): eliminating the last dof first fills nothing in (row k's entries times its pivot's reciprocal,
// then L_ki L_kj subtracted from row i's entries j <= i: row i's are row k's first). O(sum of depth^2) against
// cholesky_solve's O(n^3); false on a non-positive pivot. smooth.tree_cholesky_solve.
template <class T> bool tree_cholesky(const Model &m, T *L, T *inv) {
    for (int k = m.nv - 1; k >= 0; k--) {
        T *Lk = L + m.M_rowadr[k];
        const int64_t *anc = m.M_colind + m.M_rowadr[k], depth = m.M_rownnz[k] - 1;
        if (!all_positive(Lk[depth])) return false;
        T d = vsqrt(Lk[depth]), di = 1.0 / d;
        Lk[depth] = d, inv[k] = di;
        for (int64_t s = 0; s < depth; s++) Lk[s] = Lk[s] * di;
        with_depth(depth, [&](auto D) {                               // M_ij -= L_ki L_kj, j <= i < k
            for (int64_t a = 0; a < D; a++) subtract_scaled(L + m.M_rowadr[anc[a]], Lk, Lk[a], a + 1);
        });
    }
    return true;
}

// x with L^T L x = b from tree_cholesky's factor and reciprocal diagonal, over b (MuJoCo's mj_solveM)
template <class T> void tree_solve(const Model &m, const T *L, const T *inv, T *b) {
    for (int k = m.nv - 1; k >= 0; k--) {                              // L^T y = b
        const T *Lk = L + m.M_rowadr[k];
        const int64_t *anc = m.M_colind + m.M_rowadr[k], depth = m.M_rownnz[k] - 1;
        T y = b[k] * inv[k];
        b[k] = y;
        with_depth(depth, [&](auto D) {
            for (int64_t s = 0; s < D; s++) b[anc[s]] = b[anc[s]] - Lk[s] * y;
        });
    }
    for (int k = 0; k < m.nv; k++) {                                   // L x = y
        const T *Lk = L + m.M_rowadr[k];
        const int64_t *anc = m.M_colind + m.M_rowadr[k], depth = m.M_rownnz[k] - 1;
        T y = b[k];
        with_depth(depth, [&](auto D) {
            for (int64_t s = 0; s < D; s++) y = y - Lk[s] * b[anc[s]];
        });
        b[k] = y * inv[k];
    }
}

// x with M x = b for a dense M (nv x nv, its lower triangle read) on the tree's pattern, over b: M packed into L (the
// sparse layout's size), factored there with its reciprocal diagonal in inv (nv). SINGULAR on a non-positive pivot. The
// steppers' matrices keep M's pattern (forward.h's step_matrix: euler's M + h B, implicitfast's M - h D).
template <class T> int tree_cholesky_solve(const Model &m, const T *M, T *b, T *L, T *inv) {
    tree_pack(m, M, L);
    if (!tree_cholesky(m, L, inv)) return SINGULAR;
    tree_solve(m, L, inv, b);
    return OK;
}

// tree_cholesky_solve of M already on the tree's pattern (Ms, tree_nnz: the steppers' matrices, cpp/forward.h)
template <class T> int tree_cholesky_solve_packed(const Model &m, const T *Ms, T *b, T *L, T *inv) {
    std::copy(Ms, Ms + tree_nnz(m), L);
    if (!tree_cholesky(m, L, inv)) return SINGULAR;
    tree_solve(m, L, inv, b);
    return OK;
}

// X (n, cols) <- M^-1 X from M's Cholesky factor L (as cholesky_solve leaves it), row by row for many right-hand sides
template <class T> void cholesky_solve_rows(const T *L, int n, T *X, int cols) {
    for (int i = 0; i < n; i++) {                                      // L Y = X
        T *Xi = X + size_t(i) * cols;
        for (int k = 0; k < i; k++) {
            T a = L[size_t(i) * n + k];
            const T *Xk = X + size_t(k) * cols;
            for (int c = 0; c < cols; c++) Xi[c] = Xi[c] - a * Xk[c];
        }
        T inv = 1.0 / L[size_t(i) * n + i];
        for (int c = 0; c < cols; c++) Xi[c] = Xi[c] * inv;
    }
    for (int i = n - 1; i >= 0; i--) {                                 // L^T Z = Y
        T *Xi = X + size_t(i) * cols;
        for (int k = i + 1; k < n; k++) {
            T a = L[size_t(k) * n + i];
            const T *Xk = X + size_t(k) * cols;
            for (int c = 0; c < cols; c++) Xi[c] = Xi[c] - a * Xk[c];
        }
        T inv = 1.0 / L[size_t(i) * n + i];
        for (int c = 0; c < cols; c++) Xi[c] = Xi[c] * inv;
    }
}

// inverse of a symmetric positive k x k block (k = 1 or 3; by its adjugate); SINGULAR on a zero determinant
// (smooth.block_inverse)
template <class T> int block_inverse(const T *D, int k, T *out) {
    if (k == 1) {
        if (any_zero(D[0])) return SINGULAR;
        out[0] = 1.0 / D[0];
        return OK;
    }
    T A[9] = {D[4] * D[8] - D[5] * D[7], D[2] * D[7] - D[1] * D[8], D[1] * D[5] - D[2] * D[4],
              D[5] * D[6] - D[3] * D[8], D[0] * D[8] - D[2] * D[6], D[2] * D[3] - D[0] * D[5],
              D[3] * D[7] - D[4] * D[6], D[1] * D[6] - D[0] * D[7], D[0] * D[4] - D[1] * D[3]};
    T det = D[0] * A[0] + D[1] * A[3] + D[2] * A[6];
    if (any_zero(det)) return SINGULAR;
    T inv = 1.0 / det;
    for (int a = 0; a < 9; a++) out[a] = A[a] * inv;
    return OK;
}

// qdd by the articulated-body algorithm about the centres (RBDA table 7.1; smooth.aba) on a Data after
// velocity_stages(q, qd)
template <class T> int aba(const Model &m, Data<T> &d, const T *qd, const T *tau, T *qdd) {
    int L = m.nlink;
    for (int i = 0; i < L; i++) {
        T *c = &d.c[6 * i];                                            // velocity-product accelerations
        for (int k = 0; k < 6; k++) c[k] = splat<T>(0.0);
        for (int64_t j = m.link_dofadr[i]; j < m.link_dofadr[i] + m.link_dofnum[i]; j++)
            for (int k = 0; k < 6; k++) c[k] = c[k] + d.cdof_dot[6 * j + k] * qd[j];
        inertia_dense(d.cinert[i], &d.IA[36 * i]);                     // articulated inertias
        T Iv[6];                                                       // pA = v x* (I v): bias forces
        inertia_times(d.cinert[i], d.vel(i), Iv);
        cross_force(d.vel(i), Iv, &d.pA[6 * i]);
    }
    // backward pass over links: U = IA S, D = S^T U + armature, u = tau - S^T pA; the parent gets Ia = IA - U D^-1 U^T
    // and pA + Ia c + U D^-1 u
    for (int i = L - 1; i >= 0; i--) {
        int k0 = int(m.link_dofadr[i]), n = int(m.link_dofnum[i]);
        const T *S = &d.cdof[6 * k0], *IA = &d.IA[36 * i], *pA = &d.pA[6 * i];
        T *U = &d.U[18 * i], *Dinv = &d.Dinv[9 * i], *u = &d.u[3 * i], D[9];
        for (int a = 0; a < n; a++) mat6_times(IA, S + 6 * a, U + 6 * a);
        for (int a = 0; a < n; a++)
            for (int b = 0; b < n; b++) {
                D[n * a + b] = dot6(S + 6 * a, U + 6 * b);
                if (a == b) D[n * a + b] = D[n * a + b] + m.dof_armature[k0 + a];
            }
        if (block_inverse(D, n, Dinv) != OK) return SINGULAR;
        for (int a = 0; a < n; a++) u[a] = tau[k0 + a] - dot6(S + 6 * a, pA);
        int64_t p = m.link_parentid[i];
        if (p < 0) continue;
        T UD[18], Ia[36], t[6];
        for (int b = 0; b < n; b++)
            for (int r = 0; r < 6; r++) {
                T s = U[r] * Dinv[b];
                for (int a = 1; a < n; a++) s = s + U[6 * a + r] * Dinv[n * a + b];
                UD[6 * b + r] = s;
            }
        for (int r = 0; r < 6; r++)
            for (int c = 0; c < 6; c++) {
                T s = UD[r] * U[c];
                for (int b = 1; b < n; b++) s = s + UD[6 * b + r] * U[6 * b + c];
                Ia[6 * r + c] = IA[6 * r + c] - s;
            }
        T *IAp = &d.IA[36 * p], *pAp = &d.pA[6 * p];
        for (int k = 0; k < 36; k++) IAp[k] = IAp[k] + Ia[k];
        mat6_times(Ia, &d.c[6 * i], t);
        for (int r = 0; r < 6; r++) {
            T s = UD[r] * u[0];
            for (int b = 1; b < n; b++) s = s + UD[6 * b + r] * u[b];
            pAp[r] = pAp[r] + (pA[r] + (t[r] + s));
        }
    }
    // forward pass over links: a' = a_parent + c, qdd = D^-1 (u - U^T a'), a = a' + S qdd
    base_acc(m, d.acc(-1));
    for (int i = 0; i < L; i++) {
        int k0 = int(m.link_dofadr[i]), n = int(m.link_dofnum[i]);
        const T *ap = d.acc(m.link_parentid[i]), *U = &d.U[18 * i], *Dinv = &d.Dinv[9 * i], *u = &d.u[3 * i];
        const T *S = &d.cdof[6 * k0];
        T *a = d.acc(i), r[3];
        for (int k = 0; k < 6; k++) a[k] = ap[k] + d.c[6 * i + k];
        for (int b = 0; b < n; b++) r[b] = u[b] - dot6(U + 6 * b, a);
        for (int x = 0; x < n; x++) {
            T s = Dinv[n * x] * r[0];
            for (int b = 1; b < n; b++) s = s + Dinv[n * x + b] * r[b];
            qdd[k0 + x] = s;
        }
        for (int k = 0; k < 6; k++) {
            T s = S[k] * qdd[k0];
            for (int x = 1; x < n; x++) s = s + S[6 * x + k] * qdd[k0 + x];
            a[k] = a[k] + s;
        }
    }
    return OK;
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
