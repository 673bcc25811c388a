// Passive forces (src/physai/engine/passive.py, MuJoCo's engine_passive.c): joint dampers and springs, gravity
// compensation and fluid forces (the inertia-box and the ellipsoid models), on a Data after the velocity stages.
// Written once for a number type T as the smooth stages; r is taken relative to the centre of the link's tree.
#pragma once

#include <cmath>
#include <cstddef>

#include "data.h"
#include "model.h"
#include "spatial.h"

namespace physai {
namespace {

constexpr double FLUID_MINVAL = 1e-15;               // MuJoCo's mjMINVAL: the floor of a denominator
constexpr double FLUID_PI = 3.14159265358979323846;

// f = -damping qd - k (q - springref) (passive.damper_spring_force)
template <class T> void damper_spring_force(const Model &m, const T *q, const T *qd, T *f) {
    for (int j = 0; j < m.nv; j++) f[j] = -m.dof_damping[j] * qd[j];
    for (int k = 0; k < m.nspring; k++)
        f[m.spring_dofadr[k]] = f[m.spring_dofadr[k]] - m.spring_stiffness[k] * (q[m.spring_qposadr[k]] - m.spring_ref[k]);
}

// f += J^T (-k x - b v) of the tendons' springs and dampers from d's ten_length and ten_J (tendon.h's tendons): x the
// part of the length beyond the dead band [lower, upper], v = J qd (passive.tendon_passive_force); pot += 1/2 k x^2
// (passive.tendon_spring_energy)
template <class T> void tendon_passive_force(const Model &m, const Data<T> &d, const T *qd, T *f, T &pot) {
    const int64_t nv = m.nv;
    for (int64_t t = 0; t < m.ntendon; t++) {
        if (m.tendon_stiffness[t] == 0.0 && m.tendon_damping[t] == 0.0) continue;
        const T L = d.ten_length[t], *J = &d.ten_J[t * nv];
        T v = splat<T>(0.0);
        for (int64_t i = 0; i < nv; i++) v = v + J[i] * qd[i];
        const double lower = m.tendon_lengthspring[2 * t], upper = m.tendon_lengthspring[2 * t + 1];
        T x = select(L > upper, L - upper, select(L < lower, L - lower, splat<T>(0.0)));
        T frc = -(x * m.tendon_stiffness[t]) - v * m.tendon_damping[t];
        pot = pot + 0.5 * (m.tendon_stiffness[t] * x * x);
        for (int64_t i = 0; i < nv; i++) f[i] = f[i] + J[i] * frc;
    }
}

// D -= J^T diag(b) J of the tendons' dampers on M's pattern, J from d's ten_J (forward.velocity_derivative,
// mjd_passive_vel)
template <class T> void tendon_damping_derivative(const Model &m, const Data<T> &d, T *D) {
    const int64_t nv = m.nv;
    bool any = false;
    for (int64_t t = 0; t < m.ntendon; t++) any |= m.tendon_damping[t] != 0.0;
    if (!any) return;
    const T *J = d.ten_J.data();
    for (int64_t r = 0; r < nv; r++)
        for (int64_t c = 0; c < nv; c++) {
            if (!tree_pair(m, r, c)) continue;
            T s = splat<T>(0.0);
            for (int64_t t = 0; t < m.ntendon; t++) s = s + (J[t * nv + r] * m.tendon_damping[t]) * J[t * nv + c];
            D[r * nv + c] = D[r * nv + c] - s;
        }
}

// f += the joint forces of a force F and torque tq at r on link l: dof i of its chain takes S_lin . F + S_ang . (r x F
// + tq) (passive.apply_force, mj_applyFT)
template <class T> void apply_force(const Model &m, const Data<T> &d, int64_t l, const T *r, const T *F, const T *tq, T *f) {
    T rF[3], moment[3];
    cross(r, F, rF);
    for (int a = 0; a < 3; a++) moment[a] = rF[a] + tq[a];
    for (int64_t i = m.link_dofadr[l] + m.link_dofnum[l] - 1; i >= 0; i = m.dof_parentid[i]) {
        const T *S = &d.cdof[6 * i];
        f[i] = f[i] + (S[3] * F[0] + S[4] * F[1] + S[5] * F[2] + S[0] * moment[0] + S[1] * moment[1] + S[2] * moment[2]);
    }
}

// r = cpos_l + R_l pos: a point pos of link l's frame relative to the centre (passive._origin)
template <class T> void link_point(const Data<T> &d, int64_t l, const double *pos, T *r) {
    mat3_times(&d.xmat[9 * l], pos, r);
    for (int a = 0; a < 3; a++) r[a] = d.cpos[3 * l + a] + r[a];
}

// f += share_i qfrc_gravcomp_i: -gravcomp m g at each body's centre of mass (passive.gravcomp, mj_gravcomp)
template <class T> void gravcomp(const Model &m, const Data<T> &d, T *f, T *tmp) {
    for (int j = 0; j < m.nv; j++) tmp[j] = splat<T>(0.0);
    const T zero[3] = {splat<T>(0.0), splat<T>(0.0), splat<T>(0.0)};
    for (int b = 0; b < m.nbody; b++) {
        int64_t l = m.body_linkid[b];
        const double *g = &m.body_gravcompforce[3 * b];
        if (l < 0 || (g[0] == 0.0 && g[1] == 0.0 && g[2] == 0.0)) continue;
        T r[3], F[3] = {splat<T>(g[0]), splat<T>(g[1]), splat<T>(g[2])};
        link_point(d, l, &m.body_linkipos[3 * b], r);
        apply_force(m, d, l, r, F, zero, tmp);
    }
    for (int j = 0; j < m.nv; j++) f[j] = f[j] + m.dof_gravcompshare[j] * tmp[j];
}

template <class T> inline T vabs(T x) { return select(x < 0.0, -x, x); }
template <class T> inline T floor_minval(T x) { return select(x < FLUID_MINVAL, splat<T>(FLUID_MINVAL), x); }
inline double pow4(double x) { return (x * x) * (x * x); }

// lfrc (torque; force) on an inertia box of sides box moving at local w, v (passive.inertia_box_force,
// mj_inertiaBoxFluidModel)
template <class T> void inertia_box_force(const Model &m, const T *w, const T *v, const double *box, T *lfrc) {
    for (int a = 0; a < 6; a++) lfrc[a] = splat<T>(0.0);
    const double rho = m.fluid_density, mu = m.fluid_viscosity;
    if (mu > 0) {
        // the sphere of the box's mean side: T = -pi D^3 mu w, F = -3 pi D mu v (Stokes)
        double diam = (box[0] + box[1] + box[2]) / 3.0;
        for (int a = 0; a < 3; a++)
            lfrc[a] = -FLUID_PI * diam * diam * diam * mu * w[a], lfrc[3 + a] = -3.0 * FLUID_PI * diam * mu * v[a];
    }
    if (rho > 0) {
        // quadratic drag: F_i = -1/2 rho A_i |v_i| v_i, T_i = -rho b_i (b_j^4 + b_k^4) |w_i| w_i / 64
        for (int i = 0; i < 3; i++) {
            int j = (i + 1) % 3, k = (i + 2) % 3;
            lfrc[3 + i] = lfrc[3 + i] - 0.5 * rho * box[j] * box[k] * vabs(v[i]) * v[i];
            lfrc[i] = lfrc[i] - rho * box[i] * (pow4(box[j]) + pow4(box[k])) * vabs(w[i]) * w[i] / 64.0;
        }
    }
}

// lfrc (torque; force) on an ellipsoid of semi-axes s with MuJoCo's geom_fluid coefficients c (12) moving at local w, v
// (passive.ellipsoid_force, mj_ellipsoidFluidModel: mj_addedMassForces, mj_viscousForces)
template <class T> void ellipsoid_force(const Model &m, const T *w, const T *v, const double *s, const double *c, T *lfrc) {
    const double rho = m.fluid_density, mu = m.fluid_viscosity;
    const double interaction = c[0], blunt = c[1], slender = c[2], angular = c[3], kutta = c[4], magnus = c[5];
    // added mass: T = p x v + L x w, F = p x w with p = rho m_v v, L = rho I_v w
    T p[3], L[3], pv[3], Lw[3], pw[3];
    for (int a = 0; a < 3; a++) p[a] = rho * c[6 + a] * v[a], L[a] = rho * c[9 + a] * w[a];
    cross(p, v, pv), cross(L, w, Lw), cross(p, w, pw);
    for (int a = 0; a < 3; a++) lfrc[a] = pv[a] + Lw[a], lfrc[3 + a] = pw[a];
    double volume = 4.0 / 3.0 * FLUID_PI * s[0] * s[1] * s[2];
    double d_max = std::fmax(std::fmax(s[0], s[1]), s[2]), d_min = std::fmin(std::fmin(s[0], s[1]), s[2]);
    double d_mid = s[0] + s[1] + s[2] - d_max - d_min, A_max = FLUID_PI * d_max * d_mid;
    // Magnus lift: F = c_M rho V w x v
    T magnus_force[3];
    cross(w, v, magnus_force);
    for (int a = 0; a < 3; a++) magnus_force[a] = magnus_force[a] * (magnus * rho * volume);
    // the area projected along v, A = pi sqrt(den / num), and the cosine between v and the projection's normal
    const double s2[3] = {(s[1] * s[2]) * (s[1] * s[2]), (s[2] * s[0]) * (s[2] * s[0]), (s[0] * s[1]) * (s[0] * s[1])};
    T proj_denom = splat<T>(0.0), proj_num = splat<T>(0.0), speed2 = splat<T>(0.0), n[3];
    for (int a = 0; a < 3; a++) {
        T v2 = v[a] * v[a];
        proj_denom = proj_denom + (s2[a] * s2[a]) * v2, proj_num = proj_num + s2[a] * v2, speed2 = speed2 + v2;
        n[a] = s2[a] * v[a];
    }
    T A_proj = FLUID_PI * vsqrt(proj_denom / floor_minval(proj_num)), speed = vsqrt(speed2);
    T cos_alpha = proj_num / floor_minval(speed * proj_denom);
    // Kutta-Joukowski lift: F = (c_K rho cos(a) A (n x v)) x v with n = s2 v
    T circulation[3], kutta_force[3];
    cross(n, v, circulation);
    for (int a = 0; a < 3; a++) circulation[a] = circulation[a] * (kutta * rho * cos_alpha * A_proj);
    cross(circulation, v, kutta_force);
    // linear (Stokes) and quadratic drag of force and torque
    double D = 2.0 / 3.0 * (s[0] + s[1] + s[2]), I_max = 8.0 / 15.0 * FLUID_PI * d_mid * pow4(d_max);
    T mom2 = splat<T>(0.0);
    for (int a = 0; a < 3; a++) {
        double II = 8.0 / 15.0 * FLUID_PI * s[a] * pow4(std::fmax(s[(a + 1) % 3], s[(a + 2) % 3]));
        T mom = w[a] * (angular * II + slender * (I_max - II));
        mom2 = mom2 + mom * mom;
    }
    T drag_lin = mu * 3.0 * FLUID_PI * D + rho * speed * (A_proj * blunt + slender * (A_max - A_proj));
    T drag_ang = mu * FLUID_PI * D * D * D + rho * vsqrt(mom2);
    for (int a = 0; a < 3; a++) {
        lfrc[a] = interaction * (lfrc[a] - drag_ang * w[a]);
        lfrc[3 + a] = interaction * (lfrc[3 + a] + magnus_force[a] + kutta_force[a] - drag_lin * v[a]);
    }
}

// fluid element e's frame R in the world, its origin r relative to the centre and its local velocity lw, lv there with
// the wind subtracted: R^T w, R^T (v_c + w x r - wind) (passive._element_motions)
template <class T> void element_motion(const Model &m, const Data<T> &d, int64_t e, T *R, T *r, T *lw, T *lv) {
    int64_t l = m.fluid_linkid[e];
    T wv[3], v[3];
    mat3_mul(&d.xmat[9 * l], &m.fluid_linkrot[9 * e], R);
    link_point(d, l, &m.fluid_linkpos[3 * e], r);
    const T *w = d.cvel.data() + 6 * l, *vc = w + 3;
    cross(w, r, wv);
    for (int a = 0; a < 3; a++) v[a] = vc[a] + wv[a] - m.fluid_wind[a];
    for (int a = 0; a < 3; a++) {
        lw[a] = R[a] * w[0] + R[3 + a] * w[1] + R[6 + a] * w[2];
        lv[a] = R[a] * v[0] + R[3 + a] * v[1] + R[6 + a] * v[2];
    }
}

// f += qfrc_fluid of every fluid element (passive.fluid, mj_fluid)
template <class T> void fluid(const Model &m, const Data<T> &d, T *f) {
    for (int64_t e = 0; e < m.nfluid; e++) {
        int64_t l = m.fluid_linkid[e];
        if (l < 0) continue;
        T R[9], r[3], lw[3], lv[3], lfrc[6], tq[3], F[3];
        element_motion(m, d, e, R, r, lw, lv);
        if (m.fluid_ellipsoid[e]) ellipsoid_force(m, lw, lv, &m.fluid_size[3 * e], &m.fluid_coef[12 * e], lfrc);
        else inertia_box_force(m, lw, lv, &m.fluid_size[3 * e], lfrc);
        // back to the world: T = R lfrc_ang, F = R lfrc_lin, at the element's origin
        mat3_times(R, lfrc, tq), mat3_times(R, lfrc + 3, F);
        apply_force(m, d, l, r, F, tq, f);
    }
}

// B (6): d lfrc_k / d (w; v)_k of inertia_box_force, row by row (passive.inertia_box_damping, mjd_inertiaBoxFluid)
template <class T> void inertia_box_damping(const Model &m, const T *w, const T *v, const double *box, T *B) {
    const double rho = m.fluid_density, mu = m.fluid_viscosity;
    for (int a = 0; a < 6; a++) B[a] = splat<T>(0.0);
    if (mu > 0) {
        double diam = (box[0] + box[1] + box[2]) / 3.0;
        for (int a = 0; a < 3; a++) B[a] = splat<T>(-FLUID_PI * diam * diam * diam * mu), B[3 + a] = splat<T>(-3.0 * FLUID_PI * diam * mu);
    }
    if (rho > 0) {
        // d(-c |x| x)/dx = -2 c |x|
        for (int i = 0; i < 3; i++) {
            int j = (i + 1) % 3, k = (i + 2) % 3;
            B[i] = B[i] - rho * box[i] * (pow4(box[j]) + pow4(box[k])) * 2 * vabs(w[i]) / 64.0;
            B[3 + i] = B[3 + i] - 0.5 * rho * box[j] * box[k] * 2 * vabs(v[i]);
        }
    }
}

// D (nv, nv) += d qfrc_fluid / d qd of the inertia boxes: sum_k B_k J_k^T J_k over the local rows J = R^T (S_ang; S_lin +
// S_ang x r) of each box's chain, row k into Jk (nv) (passive.fluid_velocity_derivative, mjd_passive_vel)
template <class T> void fluid_velocity_derivative(const Model &m, const Data<T> &d, T *D, T *Jk) {
    for (int64_t e = 0; e < m.nfluid; e++) {
        int64_t l = m.fluid_linkid[e];
        if (l < 0 || m.fluid_ellipsoid[e]) continue;
        T R[9], r[3], lw[3], lv[3], B[6];
        element_motion(m, d, e, R, r, lw, lv);
        inertia_box_damping(m, lw, lv, &m.fluid_size[3 * e], B);
        const int64_t last = m.link_dofadr[l] + m.link_dofnum[l] - 1;
        for (int k = 0; k < 6; k++) {
            for (int64_t i = last; i >= 0; i = m.dof_parentid[i]) {
                const T *S = &d.cdof[6 * i];
                T x[3];
                cross(S, r, x);
                const T *col = k < 3 ? S : x;
                T s0 = k < 3 ? col[0] : S[3] + col[0], s1 = k < 3 ? col[1] : S[4] + col[1], s2 = k < 3 ? col[2] : S[5] + col[2];
                int c = k % 3;
                Jk[i] = R[c] * s0 + R[3 + c] * s1 + R[6 + c] * s2;
            }
            for (int64_t i = last; i >= 0; i = m.dof_parentid[i])
                for (int64_t j = last; j >= 0; j = m.dof_parentid[j])
                    D[size_t(i) * m.nv + j] = D[size_t(i) * m.nv + j] + Jk[i] * (B[k] * Jk[j]);
        }
    }
}

// f += gravity compensation and fluid forces (passive.body_forces), tmp (nv) a workspace
template <class T> void body_forces(const Model &m, const Data<T> &d, T *f, T *tmp) {
    if (m.has_gravcomp) gravcomp(m, d, f, tmp);
    if (m.nfluid) fluid(m, d, f);
}

}  // namespace
}  // namespace physai
