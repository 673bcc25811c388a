// Moving on the configuration manifold (src/physai/engine/configuration.py, physai.joints' integrate / difference /
// dexp_inv; MuJoCo's mj_integratePos, mj_differentiatePos): positions advanced by a velocity, the velocity between two
// positions, and RK4's stage velocities carried to q's tangent space.
#pragma once

#include <cmath>

#include "model.h"
#include "spatial.h"

namespace physai {
namespace {

// q (+) h v (joints.integrate, MuJoCo's mj_integratePos) into out: scalars add h v, quaternions turn by exp(h w),
// rounded as MuJoCo 4.0's mju_quatIntegrate (joints.quat_integrate; RK4's stages collide at these positions: a box
// resting exactly on a plane touches or not by the last bit): the axis w (1 / |w|), libm's sin and cos, q scaled by
// 1 / |q| (|q|^2 summed in pairs) only when ||q| - 1| > 1e-15 (exactly, quat_rescale, where |q|^2 over- or
// underflows), the product's terms added in pairs
template <class T> void integrate_pos(const Model &m, const T *q, const T *v, double h, T *out) {
    for (int i = 0; i < m.nq; i++) out[i] = q[i];
    for (int k = 0; k < m.nscalar; k++) out[m.scalar_qposadr[k]] = q[m.scalar_qposadr[k]] + h * v[m.scalar_dofadr[k]];
    for (int k = 0; k < m.nquat; k++) {
        const T *w = v + m.quat_dofadr[k];
        T speed = vsqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]), angle = h * speed;
        auto moving = speed > 1e-15;                                   // the axis w / |w|, or 0 at rest
        T inv = 1.0 / select(moving, speed, splat<T>(1.0)), half{}, c{};     // {}: sincos_libm fills them lane by lane
        sincos_libm(angle * 0.5, half, c);
        T b[4] = {c, select(moving, w[0] * inv, splat<T>(0.0)) * half, select(moving, w[1] * inv, splat<T>(0.0)) * half,
                  select(moving, w[2] * inv, splat<T>(0.0)) * half};
        const T *p = q + m.quat_qposadr[k];
        T norm2 = (p[0] * p[0] + p[1] * p[1]) + (p[2] * p[2] + p[3] * p[3]), norm = vsqrt(norm2);
        T scale = select((norm - 1.0 > 1e-15) | (1.0 - norm > 1e-15), 1.0 / norm, splat<T>(1.0)), a[4];
        for (int i = 0; i < 4; i++) a[i] = p[i] * scale;
        quat_rescale(p, norm2, a, norm);
        quat_mul_mj(a, b, out + m.quat_qposadr[k]);
    }
}

// the rotation vector log(q0^-1 q1) of q0 and q1 normalized first (MuJoCo's mj_differentiatePos, mju_subQuat), angle
// wrapped to [-pi, pi], as joints.quat_difference (NaN for a zero quaternion)
inline void quat_difference(const double *q1, const double *q0, double *out) {
    double u0[4], u1[4], d[4];
    quat_normalize(q0, u0), quat_normalize(q1, u1);
    double c[4] = {u0[0], -u0[1], -u0[2], -u0[3]};
    quat_mul(c, u1, d);
    double s = std::sqrt(d[1] * d[1] + d[2] * d[2] + d[3] * d[3]);
    double angle = 2.0 * std::atan2(s, d[0]);
    if (angle > M_PI) angle -= 2.0 * M_PI;
    double k = s > 1e-15 ? angle / s : 0.0;
    for (int a = 0; a < 3; a++) out[a] = d[1 + a] * k;
}

// the velocity v with q0 (+) h v = q1 (joints.difference, MuJoCo's mj_differentiatePos)
inline void difference_pos(const Model &m, const double *q0, const double *q1, double h, double *v) {
    for (int k = 0; k < m.nscalar; k++) v[m.scalar_dofadr[k]] = (q1[m.scalar_qposadr[k]] - q0[m.scalar_qposadr[k]]) / h;
    for (int k = 0; k < m.nquat; k++) {
        double w[3];
        quat_difference(q1 + m.quat_qposadr[k], q0 + m.quat_qposadr[k], w);
        for (int a = 0; a < 3; a++) v[m.quat_dofadr[k] + a] = w[a] / h;
    }
}

// k = dexp^-1(theta) v (joints.dexp_inv) in place over v: the rotations' velocities carried to q's tangent space,
// k = v + 1/2 theta x v + c(|theta|) theta x (theta x v), c(t) = 1/t^2 - 1/(2 t tan(t/2)); scalars unchanged
template <class T> void dexp_inv(const Model &m, const T *theta, T *v) {
    for (int k = 0; k < m.nquat; k++) {
        const T *th = theta + m.quat_dofadr[k];
        T *w = v + m.quat_dofadr[k], tw[3], ttw[3];
        T t = vsqrt(th[0] * th[0] + th[1] * th[1] + th[2] * th[2]);
        auto small = t < 1e-4;                                         // the series 1/12 + t^2/720 there
        T ts = select(small, splat<T>(1.0), t), sh, ch;
        sincos_any(0.5 * ts, sh, ch);
        T c = select(small, 1.0 / 12.0 + t * t / 720.0, 1.0 / (ts * ts) - ch / (2.0 * ts * sh));
        cross(th, w, tw);
        cross(th, tw, ttw);
        for (int a = 0; a < 3; a++) w[a] = w[a] + 0.5 * tw[a] + c * ttw[a];
    }
}

}  // namespace
}  // namespace physai
