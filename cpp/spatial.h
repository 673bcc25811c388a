// Spatial algebra (src/physai/spatial.py, the cross products of src/physai/engine/smooth.py): 3-vectors,
// 6-vectors (angular, linear), the spatial inertia about a point, rotation matrices and quaternions (w, x, y, z).
// Matrices are row-major. Written once for a number type T (double or lanes, cpp/lanes.h).
#pragma once

#include "lanes.h"

namespace physai {

// a spatial inertia about the centre as (Ibar (9), h (3), m): [[Ibar, skew(h)], [skew(h)^T, m 1]]
template <class T> struct Inertia {
    T I[9], h[3], m;
};

namespace {

// r = a x b of 3-vectors (engine/primitives.py's cross3; gjk.h's cross3 on its V3), r apart from a and b
template <class T> inline void cross(const T *a, const T *b, T *r) {
    r[0] = a[1] * b[2] - a[2] * b[1];
    r[1] = a[2] * b[0] - a[0] * b[2];
    r[2] = a[0] * b[1] - a[1] * b[0];
}

template <class T> inline T dot6(const T *a, const T *b) {
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5];
}

// skew(v) (3x3) with skew(v) x = v x x
template <class T> inline void skew(const T *v, T *S) {
    const T zero = splat<T>(0.0);
    S[0] = zero, S[1] = -v[2], S[2] = v[1];
    S[3] = v[2], S[4] = zero, S[5] = -v[0];
    S[6] = -v[1], S[7] = v[0], S[8] = zero;
}

// r = A x (3x3 times 3)
template <class A, class X, class R> inline void mat3_times(const A *a, const X *x, R *r) {
    for (int i = 0; i < 3; i++) r[i] = a[3 * i] * x[0] + a[3 * i + 1] * x[1] + a[3 * i + 2] * x[2];
}

// r = A B (3x3 each)
template <class A, class B, class R> inline void mat3_mul(const A *a, const B *b, R *r) {
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) r[3 * i + j] = a[3 * i] * b[j] + a[3 * i + 1] * b[3 + j] + a[3 * i + 2] * b[6 + j];
}

// r = A B for a B whose row k and column k are e_k: r's column k is A's, the others the two other terms of the sum in
// mat3_mul's order (the products by B's zeros left out: the same numbers)
template <int K, class A, class B, class R> inline void mat3_mul_keeping(const A *a, const B *b, R *r) {
    constexpr int u = K == 0 ? 1 : 0, w = K == 2 ? 1 : 2;              // the other two indices, in order
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            r[3 * i + j] = j == K ? a[3 * i + K] : a[3 * i + u] * b[3 * u + j] + a[3 * i + w] * b[3 * w + j];
}

// v x m (crm(v) m) for motion vectors v = (w, u): (w x m_ang, w x m_lin + u x m_ang)
template <class T> inline void cross_motion(const T *v, const T *m, T *r) {
    T a[3], b[3];
    cross(v, m, r);
    cross(v, m + 3, a);
    cross(v + 3, m, b);
    for (int k = 0; k < 3; k++) r[3 + k] = a[k] + b[k];
}

// v x* f (crf(v) f): (w x f_ang + u x f_lin, w x f_lin)
template <class T> inline void cross_force(const T *v, const T *f, T *r) {
    T a[3], b[3];
    cross(v, f, a);
    cross(v + 3, f + 3, b);
    for (int k = 0; k < 3; k++) r[k] = a[k] + b[k];
    cross(v, f + 3, r + 3);
}

// I v = (Ibar w + h x u, m u - h x w)
template <class T> inline void inertia_times(const Inertia<T> &I, const T *v, T *r) {
    T hu[3], hw[3];
    cross(I.h, v + 3, hu);
    cross(I.h, v, hw);
    for (int i = 0; i < 3; i++) {
        r[i] = I.I[3 * i] * v[0] + I.I[3 * i + 1] * v[1] + I.I[3 * i + 2] * v[2] + hu[i];
        r[3 + i] = I.m * v[3 + i] - hw[i];
    }
}

// the dense 6x6 matrix of an Inertia (for the articulated inertias of aba)
template <class T> inline void inertia_dense(const Inertia<T> &I, T *A) {
    const T zero = splat<T>(0.0);
    T S[9];
    skew(I.h, S);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            A[6 * i + j] = I.I[3 * i + j];
            A[6 * i + 3 + j] = S[3 * i + j];
            A[6 * (3 + i) + j] = S[3 * j + i];
            A[6 * (3 + i) + 3 + j] = i == j ? I.m : zero;
        }
}

template <class T> inline void mat6_times(const T *A, const T *v, T *r) {
    for (int i = 0; i < 6; i++) r[i] = dot6(A + 6 * i, v);
}

// the rotation matrix of a unit quaternion (w, x, y, z)
template <class T> inline void quat_to_mat(const T *q, T *R) {
    T w = q[0], x = q[1], y = q[2], z = q[3];
    R[0] = 1.0 - 2.0 * (y * y + z * z), R[1] = 2.0 * (x * y - w * z), R[2] = 2.0 * (x * z + w * y);
    R[3] = 2.0 * (x * y + w * z), R[4] = 1.0 - 2.0 * (x * x + z * z), R[5] = 2.0 * (y * z - w * x);
    R[6] = 2.0 * (x * z - w * y), R[7] = 2.0 * (y * z + w * x), R[8] = 1.0 - 2.0 * (x * x + y * y);
}

// the product a b of quaternions (w, x, y, z)
template <class T> inline void quat_mul(const T *a, const T *b, T *r) {
    r[0] = a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3];
    r[1] = a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2];
    r[2] = a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1];
    r[3] = a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0];
}

// the product a b of quaternions with MuJoCo 4's arithmetic (mju_mulQuat: the four products of each component summed
// in pairs; spatial.quat_mul_mj): body poses, sites, collision's turns and the lanes' mju_quatIntegrate
template <class A, class B, class T> inline void quat_mul_mj(const A *a, const B *b, T *r) {
    r[0] = (a[0] * b[0] - a[1] * b[1]) - (a[2] * b[2] + a[3] * b[3]);
    r[1] = (a[0] * b[1] + a[1] * b[0]) + (a[2] * b[3] - a[3] * b[2]);
    r[2] = (a[0] * b[2] - a[1] * b[3]) + (a[2] * b[0] + a[3] * b[1]);
    r[3] = (a[0] * b[3] + a[1] * b[2]) + (a[3] * b[0] - a[2] * b[1]);
}

// q / |q| into u, q first scaled by the power of two 2^-e just above its largest component (exact), for a q whose
// |q|^2 over- or underflows; returns |q| (as spatial.quat_normalize; zero for a zero quaternion)
inline double quat_normalize_scaled(const double *q, double *u) {
    double big = std::fmax(std::fmax(std::fabs(q[0]), std::fabs(q[1])), std::fmax(std::fabs(q[2]), std::fabs(q[3])));
    int e;
    std::frexp(big, &e);
    double p[4];
    for (int a = 0; a < 4; a++) p[a] = std::ldexp(q[a], -e);
    double norm = std::sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2] + p[3] * p[3]);
    for (int a = 0; a < 4; a++) u[a] = p[a] / norm;
    return std::ldexp(norm, e);
}

inline bool norm2_in_range(double n2) { return n2 >= 1e-200 && n2 <= 1e200; }

// redo u and norm scaled where |q|^2 = norm2 over- or underflowed (|q| beyond about 1e100 or below 1e-100)
inline void quat_rescale(const double *q, double norm2, double *u, double &norm) {
    if (!norm2_in_range(norm2)) norm = quat_normalize_scaled(q, u);
}
#if PHYSAI_LANES
template <class L> inline void quat_rescale(const L *q, L norm2, L *u, L &norm) {
    for (int i = 0; i < lanes_of<L>; i++)
        if (!norm2_in_range(norm2[i])) {                                // the same numbers as for one state
            double qi[4] = {q[0][i], q[1][i], q[2][i], q[3][i]}, ui[4];
            norm[i] = quat_normalize_scaled(qi, ui);
            for (int a = 0; a < 4; a++) u[a][i] = ui[a];
        }
}
#endif

// q / |q| into u, exact for any finite q; returns |q| (zero for a zero quaternion, whose u is then not finite)
template <class T> inline T quat_normalize(const T *q, T *u) {
    T norm2 = q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3], norm = vsqrt(norm2);
    for (int a = 0; a < 4; a++) u[a] = q[a] / norm;
    quat_rescale(q, norm2, u, norm);
    return norm;
}

// the world axis y0 a contact frame's default first tangent starts from, for a unit normal n: y where |n_y| < 1/2,
// else z (MuJoCo's mju_makeFrame; physai.spatial.tangent_axis)
inline void tangent_axis(const double *n, double *y0) {
    const bool side = -0.5 < n[1] && n[1] < 0.5;
    y0[0] = 0.0, y0[1] = side ? 1.0 : 0.0, y0[2] = side ? 0.0 : 1.0;
}

}  // namespace
}  // namespace physai
