// What a step observes (physai.integrators.step_result's observe; forward.DynamicsEvaluator.observed): MuJoCo's MjData
// fields after mj_step then mj_rnePostConstraint, one state (double), mirroring the NumPy text function by function:
//     com_bodies            xpos, xquat, xipos, subtree_com, cinert            (observe.com_bodies: mj_kinematics, mj_comPos)
//     body_velocities       cvel                                                (observe.body_velocities: mj_comVel)
//     body_external_forces  cfrc_ext: xfrc_applied, contacts, connect, weld    (observe.body_external_forces)
//     rne_post_constraint   cacc, cfrc_int                                      (observe.rne_post_constraint)
// Rows of MuJoCo's bodies (row 0 the world, physai's body b row b + 1), spatial vectors (angular, linear) about the
// subtree centre of mass of the body's tree root. The fields sit in one row of W numbers per state, in OBSERVABLE's
// order (observe_offsets).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "actuation.h"
#include "constraint.h"
#include "data.h"
#include "model.h"
#include "smooth.h"
#include "spatial.h"

namespace physai {
namespace {

// the fields' offsets in a state's row: xpos, xquat, xipos, site_xpos, cinert, cvel, cacc, cfrc_int, cfrc_ext,
// qfrc_actuator, qfrc_constraint, qacc, ten_length, ten_velocity, then W (observe.observed_shapes)
struct ObserveOffsets {
    int64_t xpos, xquat, xipos, site_xpos, cinert, cvel, cacc, cfrc_int, cfrc_ext, qfrc_actuator, qfrc_constraint, qacc,
        ten_length, ten_velocity, W;
};
inline ObserveOffsets observe_offsets(const Model &m) {
    int64_t B = m.nbody + 1;
    ObserveOffsets o;
    o.xpos = 0, o.xquat = 3 * B, o.xipos = 7 * B, o.site_xpos = 10 * B, o.cinert = o.site_xpos + 3 * m.nsite;
    o.cvel = o.cinert + 10 * B, o.cacc = o.cvel + 6 * B, o.cfrc_int = o.cacc + 6 * B, o.cfrc_ext = o.cfrc_int + 6 * B;
    o.qfrc_actuator = o.cfrc_ext + 6 * B, o.qfrc_constraint = o.qfrc_actuator + m.nv, o.qacc = o.qfrc_constraint + m.nv;
    o.ten_length = o.qacc + m.nv, o.ten_velocity = o.ten_length + m.ntendon, o.W = o.ten_velocity + m.ntendon;
    return o;
}

// a run's observation: the body constants (nbody, 13: mass, ipos (3), inertia (9) in the body frame), the state's row,
// and what the last evaluation leaves for the end of the step (the frames, the links' cdof, cdof_dot and centres)
struct Observe {
    const double *body = nullptr;
    double *out = nullptr;
    ObserveOffsets off;
    std::vector<double> xmat, com, cdof, cdof_dot, center, lacc, mass, smass;
    std::vector<int64_t> root;
    explicit Observe(const Model &m) : off(observe_offsets(m)) {
        size_t B = size_t(m.nbody) + 1, V = size_t(m.nv), L = size_t(m.nlink);
        xmat.resize(9 * B), com.resize(3 * B), cdof.resize(6 * V), cdof_dot.resize(6 * V), center.resize(3 * L);
        lacc.resize(6 * (L + 1)), mass.resize(B), smass.resize(B), root.resize(B);
    }
};

// the wrench (torque, force) acting at `at`, about `to`, added times sign to w (6): (torque + (at - to) x force, force)
inline void add_moved_wrench(const double *torque, const double *force, const double *at, const double *to, double sign,
                             double *w) {
    double r[3] = {at[0] - to[0], at[1] - to[1], at[2] - to[2]}, t[3];
    cross(r, force, t);
    for (int a = 0; a < 3; a++) w[a] += sign * (torque[a] + t[a]), w[3 + a] += sign * force[a];
}

// xpos, xquat, xipos, cinert into the row, subtree_com into o.com, xmat and the roots (observe.com_bodies)
inline void com_bodies(const Model &m, Observe &o, const double *q) {
    double *xpos = o.out + o.off.xpos, *xquat = o.out + o.off.xquat, *xipos = o.out + o.off.xipos;
    double *cinert = o.out + o.off.cinert, *xmat = o.xmat.data(), *com = o.com.data();
    int64_t B = m.nbody + 1;
    for (int a = 0; a < 3; a++) xpos[a] = 0.0, xipos[a] = 0.0;
    xquat[0] = 1.0, xquat[1] = xquat[2] = xquat[3] = 0.0;
    for (int k = 0; k < 9; k++) xmat[k] = k % 4 == 0 ? 1.0 : 0.0;
    body_poses(m, q, xpos + 3, xquat + 4, xmat + 9);
    std::vector<double> &mass = o.mass, &smass = o.smass;
    mass[0] = 0.0;
    for (int64_t b = 1; b < B; b++) {                                  // xipos = xpos + R ipos
        const double *c = o.body + 13 * (b - 1);
        mass[size_t(b)] = c[0];
        mat3_times(xmat + 9 * b, c + 1, xipos + 3 * b);
        for (int a = 0; a < 3; a++) xipos[3 * b + a] += xpos[3 * b + a];
        int64_t p = m.body_parentid[b - 1] + 1;
        o.root[size_t(b)] = p == 0 ? b : o.root[size_t(p)];
    }
    o.root[0] = 0;
    // subtree_com = sum m xipos / sum m over the subtree (xipos where it has no mass)
    std::copy(mass.begin(), mass.end(), smass.begin());
    for (int64_t b = 0; b < B; b++)
        for (int a = 0; a < 3; a++) com[3 * b + a] = mass[size_t(b)] * xipos[3 * b + a];
    for (int64_t b = B - 1; b > 0; b--) {
        int64_t p = m.body_parentid[b - 1] + 1;
        for (int a = 0; a < 3; a++) com[3 * p + a] += com[3 * b + a];
        smass[size_t(p)] += smass[size_t(b)];
    }
    for (int64_t b = 0; b < B; b++)
        for (int a = 0; a < 3; a++)
            com[3 * b + a] = smass[size_t(b)] >= MINVAL ? com[3 * b + a] / smass[size_t(b)] : xipos[3 * b + a];
    // cinert: R I R^T + m (|c|^2 1 - c c^T) about the root's subtree_com, c = xipos - subtree_com[root]; m c; m
    for (int a = 0; a < 10; a++) cinert[a] = 0.0;                      // the world's: zero (mj_comPos), however far its com
    for (int64_t b = 1; b < B; b++) {
        double *ci = cinert + 10 * b, I[9], c[3], mb = mass[size_t(b)];
        for (int a = 0; a < 3; a++) c[a] = xipos[3 * b + a] - com[3 * o.root[size_t(b)] + a];
        const double *R = xmat + 9 * b, *J = o.body + 13 * (b - 1) + 4;
        for (int i = 0; i < 3; i++)
            for (int k = 0; k < 3; k++) {
                double s = 0.0;
                for (int j = 0; j < 3; j++)
                    for (int l = 0; l < 3; l++) s += R[3 * i + j] * J[3 * j + l] * R[3 * k + l];
                I[3 * i + k] = s;
            }
        double cc = c[0] * c[0] + c[1] * c[1] + c[2] * c[2];
        for (int i = 0; i < 3; i++)
            for (int k = 0; k < 3; k++) I[3 * i + k] += mb * ((i == k ? cc : 0.0) - c[i] * c[k]);
        ci[0] = I[0], ci[1] = I[4], ci[2] = I[8], ci[3] = I[1], ci[4] = I[2], ci[5] = I[5];
        for (int a = 0; a < 3; a++) ci[6 + a] = mb * c[a];
        ci[9] = mb;
    }
}

// each body's link's motion vector v (nlink + 1 rows of 6, the world last) moved from the link's tree centre to its
// root's subtree_com into out (nbody + 1, 6): v_lin(P) = v_lin(C) + w x (P - C) (smooth._to_root_com)
inline void to_root_com(const Model &m, const Observe &o, const double *v, double *out) {
    for (int64_t b = 0; b <= m.nbody; b++) {
        int64_t L = b == 0 ? -1 : m.body_linkid[b - 1];
        const double *src = v + 6 * (L < 0 ? m.nlink : L);
        double *dst = out + 6 * b;
        for (int a = 0; a < 6; a++) dst[a] = src[a];
        if (L < 0) continue;
        const double *P = &o.com[size_t(3 * o.root[size_t(b)])], *C = &o.center[size_t(3 * L)];
        double r[3] = {P[0] - C[0], P[1] - C[1], P[2] - C[2]}, t[3];
        cross(dst, r, t);
        for (int a = 0; a < 3; a++) dst[3 + a] += t[a];
    }
}

// cvel into the row from the evaluation's velocity stages d; the links' centres, cdof and cdof_dot kept
// (observe.body_velocities)
inline void body_velocities(const Model &m, Observe &o, const Data<double> &d) {
    for (int64_t L = 0; L < m.nlink; L++)
        for (int a = 0; a < 3; a++) o.center[size_t(3 * L + a)] = d.xpos[size_t(3 * m.link_centerid[L] + a)];
    std::copy(d.cdof.begin(), d.cdof.end(), o.cdof.begin());
    std::copy(d.cdof_dot.begin(), d.cdof_dot.end(), o.cdof_dot.begin());
    to_root_com(m, o, d.cvel.data(), o.out + o.off.cvel);
}

// a weld's rotational rows' forces f (3) as the world torque on body 1: ts/2 A^T f, A w = Im(conj(q2) (0, w) q1 relquat)
// (constraint._weld_torque)
inline void weld_torque(const Model &m, const Observe &o, int64_t e, const double *f, double *torque) {
    const double *data = m.eq_data + 11 * e, *xquat = o.out + o.off.xquat;
    const double *q1 = xquat + 4 * (m.eq_obj1id[e] + 1), *q2 = xquat + 4 * (m.eq_obj2id[e] + 1);
    double quat[4], neg[4] = {q2[0], -q2[1], -q2[2], -q2[3]};
    quat_mul(q1, data + 6, quat);
    for (int k = 0; k < 3; k++) {                                      // column k of A: Im(neg (0, e_k) quat)
        double axis[4] = {0, 0, 0, 0}, t[4], col[4];
        axis[1 + k] = 1.0;
        quat_mul(neg, axis, t);
        quat_mul(t, quat, col);
        torque[k] = 0.5 * data[10] * (col[1] * f[0] + col[2] * f[1] + col[3] * f[2]);
    }
}

// cfrc_ext into the row: xfrc (nbody, 6: force, torque at the centre of mass) or null, the contacts' forces (rows r,
// forces force) and the connect and weld forces (observe.body_external_forces)
inline void body_external_forces(const Model &m, Observe &o, const double *xfrc, const Rows &r, const double *force) {
    double *ext = o.out + o.off.cfrc_ext;
    const double *xipos = o.out + o.off.xipos, *xpos = o.out + o.off.xpos;
    auto about = [&](int64_t b) { return &o.com[size_t(3 * o.root[size_t(b)])]; };
    for (int64_t k = 0; k < 6 * (m.nbody + 1); k++) ext[k] = 0.0;
    if (xfrc)
        for (int64_t b = 0; b < m.nbody; b++)
            add_moved_wrench(xfrc + 6 * b + 3, xfrc + 6 * b, xipos + 3 * (b + 1), about(b + 1), 1.0, ext + 6 * (b + 1));
    const Contacts &con = r.con;
    for (int64_t c = 0; c < con.n && size_t(c) < r.contact_row.size(); c++) {
        int64_t first = r.contact_row[size_t(c)], dim = con.dim(c);
        if (first < 0) continue;
        double local[6] = {0, 0, 0, 0, 0, 0};                          // the contact frame's force (mj_contactForce)
        if (dim == 1 || m.opt_elliptic)
            for (int64_t i = 0; i < dim; i++) local[i] = force[first + i];
        else {                                                         // f_n = sum p; f_i = (p[2i] - p[2i+1]) mu_i
            for (int64_t i = 0; i < 2 * (dim - 1); i++) local[0] += force[first + i];
            for (int64_t i = 1; i < dim; i++)
                local[i] = (force[first + 2 * (i - 1)] - force[first + 2 * (i - 1) + 1]) * con.friction(c)[i - 1];
        }
        const double *F = con.frame(c);                                // world = F^T local
        double torque[3], frc[3];
        for (int a = 0; a < 3; a++) {
            torque[a] = F[a] * local[3] + F[3 + a] * local[4] + F[6 + a] * local[5];
            frc[a] = F[a] * local[0] + F[3 + a] * local[1] + F[6 + a] * local[2];
        }
        int64_t b1 = con.body1(c), b2 = con.body2(c);
        if (b1 >= 0) add_moved_wrench(torque, frc, con.pos(c), about(b1 + 1), -1.0, ext + 6 * (b1 + 1));
        if (b2 >= 0) add_moved_wrench(torque, frc, con.pos(c), about(b2 + 1), 1.0, ext + 6 * (b2 + 1));
    }
    for (int i = 0; i < r.ne;) {                                       // connect and weld rows (EQUALITY, in model order)
        int64_t e = r.id[size_t(i)], kind = m.eq_type[e];
        if (kind != 0 && kind != 1) {
            i++;
            continue;
        }
        const double *data = m.eq_data + 11 * e, *frc = force + i;
        double torque[3] = {0, 0, 0};
        if (kind == 1) weld_torque(m, o, e, force + i + 3, torque);
        const double *anchors[2] = {kind == 0 ? data : data + 3, kind == 0 ? data + 3 : data};
        int64_t bodies[2] = {m.eq_obj1id[e], m.eq_obj2id[e]};
        for (int s = 0; s < 2; s++) {
            int64_t b = bodies[s] + 1;
            if (b == 0) continue;
            double at[3];
            mat3_times(&o.xmat[size_t(9 * b)], anchors[s], at);
            for (int a = 0; a < 3; a++) at[a] += xpos[3 * b + a];
            add_moved_wrench(torque, frc, at, about(b), s == 0 ? 1.0 : -1.0, ext + 6 * b);
        }
        i += kind == 1 ? 6 : 3;
    }
}

// qfrc_actuator into the row: moment^T force of the evaluation's scalar forces, clamped per dof (actuation.joint_force)
inline void actuator_joint_force(const Model &m, const Actuators &act, const StepInputs<double> &x, const double *force,
                                 double *t) {
    for (int j = 0; j < m.nv; j++) t[j] = 0.0;
    if (!act.nu) return;
    joint_force(m, act, arms(act, x), force, t);
    for (int j = 0; j < m.nv; j++)
        if (act.dof_forcelimited[j]) t[j] = vclamp(t[j], act.dof_forcerange[2 * j], act.dof_forcerange[2 * j + 1]);
}

// cacc and cfrc_int into the row with the new velocity qd (nv) and the step's qacc (observe.rne_post_constraint):
// cacc = cacc_parent + cdof_dot qd + cdof qacc over the links (the world: (0, -gravity)), moved to the roots'
// subtree_com; cfrc_int = cinert cacc + cvel x* (cinert cvel) - cfrc_ext summed over each body's subtree
inline void rne_post_constraint(const Model &m, Observe &o, const double *qd, const double *qacc) {
    double *a = o.lacc.data(), *world = a + 6 * m.nlink;
    for (int k = 0; k < 3; k++) world[k] = 0.0, world[3 + k] = -m.gravity[k];
    for (int64_t L = 0; L < m.nlink; L++) {
        int64_t p = m.link_parentid[L];
        const double *ap = a + 6 * (p < 0 ? m.nlink : p);
        double *al = a + 6 * L;
        for (int k = 0; k < 6; k++) al[k] = ap[k];
        for (int64_t j = m.link_dofadr[L]; j < m.link_dofadr[L] + m.link_dofnum[L]; j++)
            for (int k = 0; k < 6; k++) al[k] += o.cdof_dot[size_t(6 * j + k)] * qd[j] + o.cdof[size_t(6 * j + k)] * qacc[j];
    }
    double *cacc = o.out + o.off.cacc, *cvel = o.out + o.off.cvel, *cinert = o.out + o.off.cinert;
    double *ext = o.out + o.off.cfrc_ext, *f = o.out + o.off.cfrc_int;
    to_root_com(m, o, a, cacc);
    for (int k = 0; k < 6; k++) cacc[k] = world[k];
    auto inert = [](const double *i, const double *v, double *r) {    // mju_mulInertVec
        r[0] = i[0] * v[0] + i[3] * v[1] + i[4] * v[2] - i[8] * v[4] + i[7] * v[5];
        r[1] = i[3] * v[0] + i[1] * v[1] + i[5] * v[2] + i[8] * v[3] - i[6] * v[5];
        r[2] = i[4] * v[0] + i[5] * v[1] + i[2] * v[2] - i[7] * v[3] + i[6] * v[4];
        r[3] = i[8] * v[1] - i[7] * v[2] + i[9] * v[3];
        r[4] = i[6] * v[2] - i[8] * v[0] + i[9] * v[4];
        r[5] = i[7] * v[0] - i[6] * v[1] + i[9] * v[5];
    };
    for (int k = 0; k < 6; k++) f[k] = 0.0;
    for (int64_t b = 1; b <= m.nbody; b++) {                           // cinert cacc + cvel x* (cinert cvel) - cfrc_ext
        double Ia[6], Iv[6], t1[3], t2[3], t3[3];
        const double *v = cvel + 6 * b, *ci = cinert + 10 * b;
        inert(ci, cacc + 6 * b, Ia);
        inert(ci, v, Iv);
        cross(v, Iv, t1), cross(v + 3, Iv + 3, t2), cross(v, Iv + 3, t3);
        for (int k = 0; k < 3; k++) {
            f[6 * b + k] = Ia[k] + (t1[k] + t2[k]) - ext[6 * b + k];
            f[6 * b + 3 + k] = Ia[3 + k] + t3[k] - ext[6 * b + 3 + k];
        }
    }
    for (int64_t b = m.nbody; b > 0; b--) {                            // backward pass: cfrc_int_parent += cfrc_int
        int64_t p = m.body_parentid[b - 1] + 1;
        for (int k = 0; k < 6; k++) f[6 * p + k] += f[6 * b + k];
    }
}

}  // namespace
}  // namespace physai
