// physai.engine._native: the engine's algorithms (src/physai/engine/algorithms.py) in C++.
//
// The text follows algorithms.py function by function and keeps its names and quantities (kinematics, com_pos,
// com_vel, rne, crb, aba, energy): spatial vectors are (angular, linear), world-aligned, about the centre of each
// link's tree. The Model's arrays are copied once into a NativeModel (cached on the Python Model). A call checks its
// inputs (float64 arrays of shape (size,) or (N, size), finite) and its outputs (finite), and returns None on
// anything it does not accept: the Python side then takes the NumPy path, which raises the named physai error.
//
// Every kernel is written once for a number type T: double for one state, lanes of states side by side (GCC/Clang
// vector extension: 8 with AVX-512, 4 with AVX2, 2 with baseline x86-64's SSE2) for batches, states innermost, the
// instruction set chosen at run time (compute_lanes; PHYSAI_ISA). The same operations in the same order run in both, without contraction into FMAs,
// for a state alone or anywhere in a batch, on any of these instruction sets. Batches run in chunks of states on
// std::threads with the GIL released. Then the simulation (simulate_one: the four integrators over N trajectories),
// the Jacobians and integrate / difference, for one state at a time.

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL physai_native_ARRAY_API
#include <numpy/arrayobject.h>                                          // PyArray_SimpleNew: the results, without a Python call

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <vector>

namespace nb = nanobind;

namespace {

using IArr = nb::ndarray<const int64_t, nb::c_contig, nb::device::cpu>;
using DArr = nb::ndarray<const double, nb::c_contig, nb::device::cpu>;

std::vector<double> doubles(const DArr &a) { return std::vector<double>(a.data(), a.data() + a.size()); }
std::vector<int64_t> ints(const IArr &a) { return std::vector<int64_t>(a.data(), a.data() + a.size()); }

// ---------------------------------------------------------------- the Model

template <class T> struct Data;

struct NativeModel {
    int nq = 0, nv = 0, nlink = 0;
    double gravity[3] = {0, 0, 0};
    std::vector<int64_t> parent, center, relative, dofadr, dofnum;    // per link
    std::vector<double> mass, ipos, inertia;                          // (nlink), (nlink, 3), (nlink, 3, 3)
    // link_transforms: per link, kind 0 = hinge/slide (G (3, 4, 4) @ (1, t, sin t, 1 - cos t)), 1 = ball
    std::vector<int64_t> kind, qadr;
    std::vector<double> ref, G, brot, bpos, banchor;                   // per link: (nlink), (nlink, 48), (nlink, 9), (nlink, 3), (nlink, 3)
    std::vector<char> hinge, slide;                                    // scalar links whose G has no t, or only 1 and t, terms
    std::vector<int64_t> dof_link, dof_parent;                        // per dof
    std::vector<double> motion, armature;                             // (nv, 6), (nv)
    std::vector<int64_t> spring_q;
    std::vector<double> spring_k, spring_ref;
    double static_mass = 0, static_com[3] = {0, 0, 0};
    std::shared_ptr<Data<double>> scratch;                             // workspaces of the calls that keep the GIL:
    std::shared_ptr<void> scratch_lanes[3];                            // one state, lanes of states (per variant)
};

// ---------------------------------------------------------------- number types

// 64-byte aligned storage for the workspaces (lanes are up to 64 bytes; std::allocator may not align them)
template <class T> struct Aligned {
    using value_type = T;
    Aligned() = default;
    template <class U> Aligned(const Aligned<U> &) {}
    T *allocate(size_t n) { return static_cast<T *>(::operator new(n * sizeof(T), std::align_val_t(64))); }
    void deallocate(T *p, size_t) { ::operator delete(p, std::align_val_t(64)); }
    template <class U> bool operator==(const Aligned<U> &) const { return true; }
    template <class U> bool operator!=(const Aligned<U> &) const { return false; }
};
template <class T> using Vec = std::vector<T, Aligned<T>>;

#if defined(__GNUC__)
#define PHYSAI_LANES 1
typedef double Lanes8 __attribute__((vector_size(64)));                 // 8 states: one AVX-512 register
typedef double Lanes4 __attribute__((vector_size(32)));                 // 4 states: AVX2
typedef double Lanes2 __attribute__((vector_size(16)));                 // 2 states: SSE2 (or NEON)
template <class L> constexpr int lanes_of = int(sizeof(L) / sizeof(double));
#else
#define PHYSAI_LANES 0
#endif
constexpr int BLOCK = 8;                                                // threads' chunks start at multiples of the widest lanes

template <class T> inline T splat(double x) { return T{} + x; }
template <> inline double splat<double>(double x) { return x; }

inline double vsqrt(double x) { return std::sqrt(x); }
inline bool any_zero(double x) { return x == 0.0; }
inline bool all_positive(double x) { return x > 0.0; }
inline double select(bool m, double a, double b) { return m ? a : b; }
inline bool lane_any(bool m) { return m; }
#if PHYSAI_LANES                                                        // the same for lanes L and their masks M
template <class L> inline L vsqrt(L x) {
    L r;
    for (int i = 0; i < lanes_of<L>; i++) r[i] = __builtin_sqrt(x[i]);
    return r;
}
template <class M> inline bool lane_any(M m) {
    for (int i = 0; i < int(sizeof(M) / sizeof(m[0])); i++)
        if (m[i]) return true;
    return false;
}
template <class L> inline bool any_zero(L x) { return lane_any(x == 0.0); }
template <class L> inline bool all_positive(L x) { return !lane_any(!(x > 0.0)); }
template <class M, class L> inline L select(M m, L a, L b) { return m ? a : b; }
#endif

// x rounded to the nearest integer (ties to even) for |x| < 2^51, without a branch
template <class T> inline T round_nearest(T x) {
    const double magic = 6755399441055744.0;                            // 1.5 * 2^52
    return (x + magic) - magic;
}

// sin x and cos x for |x| <= 1e5 (Cody-Waite reduction by pi/2, Cephes' minimax polynomials on [-pi/4, pi/4]);
// libm's sin and cos elsewhere. The same operations for one state and for a batch's lanes.
template <class T> inline void sincos_poly(T x, T &s, T &c) {
    const double DP1 = 1.57079625129699707031, DP2 = 7.54978941586159635336e-8, DP3 = 5.39030285815811905290e-15;
    T j = round_nearest<T>(x * 0.63661977236758134308);                 // 2 / pi
    T r = ((x - j * DP1) - j * DP2) - j * DP3;
    T z = r * r;
    T ps = ((((( 1.58962301576546568060e-10 * z - 2.50507477628578072866e-8) * z + 2.75573136213857245213e-6) * z
               - 1.98412698295895385996e-4) * z + 8.33333333332211858878e-3) * z - 1.66666666666666307295e-1);
    T pc = (((((-1.13585365213876817300e-11 * z + 2.08757008419747316778e-9) * z - 2.75573141792967388112e-7) * z
               + 2.48015872888517045348e-5) * z - 1.38888888888730564116e-3) * z + 4.16666666666665929218e-2);
    T sr = r + r * z * ps;
    T cr = (1.0 - 0.5 * z) + z * z * pc;
    T quad = j - 4.0 * round_nearest<T>((j - 1.5) * 0.25);              // j mod 4 in {0, 1, 2, 3}
    s = select(quad == 0.0, sr, select(quad == 1.0, cr, select(quad == 2.0, -sr, -cr)));
    c = select(quad == 0.0, cr, select(quad == 1.0, -sr, select(quad == 2.0, -cr, sr)));
}

inline void sincos_any(double x, double &s, double &c) {
    if (std::fabs(x) <= 1e5) {
        sincos_poly<double>(x, s, c);
    } else {
        s = std::sin(x), c = std::cos(x);
    }
}
#if PHYSAI_LANES
template <class L> inline void sincos_any(L x, L &s, L &c) {
    sincos_poly<L>(x, s, c);
    for (int i = 0; i < lanes_of<L>; i++)
        if (!(std::fabs(x[i]) <= 1e5)) sincos_any(x[i], s[i], c[i]);   // the same numbers as for one state
}
#endif

// ---------------------------------------------------------------- small vector algebra

template <class T> inline void cross(const T *a, const T *b, T *r) {
    r[0] = a[1] * b[2] - a[2] * b[1];
    r[1] = a[2] * b[0] - a[0] * b[2];
    r[2] = a[0] * b[1] - a[1] * b[0];
}

template <class T> inline T dot6(const T *a, const T *b) {
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5];
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

// a spatial inertia about the centre as (Ibar (9), h (3), m): [[Ibar, skew(h)], [skew(h)^T, m 1]]
template <class T> struct Inertia {
    T I[9], h[3], m;
};

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
    const T *h = I.h, zero = splat<T>(0.0);
    T S[9] = {zero, -h[2], h[1], h[2], zero, -h[0], -h[1], h[0], zero};   // skew(h)
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

// ---------------------------------------------------------------- workspace (MuJoCo's mjData) for one state or lanes of states

template <class T> struct Data {
    using number = T;
    Vec<T> xmat, xpos, step, cpos, cipos, cdof, cvel, cdof_dot, cacc, cfrc, qM, IA, pA, U, Dinv, u, c;
    Vec<Inertia<T>> cinert, crb;
    explicit Data(const NativeModel &m) {
        int L = m.nlink, V = m.nv;
        xmat.resize(9 * L); xpos.resize(3 * L); step.resize(3 * L); cpos.resize(3 * L); cipos.resize(3 * L);
        cdof.resize(6 * V); cvel.resize(6 * (L + 1)); cdof_dot.resize(6 * V); cacc.resize(6 * (L + 1)); cfrc.resize(6 * L);
        qM.resize(size_t(V) * V); IA.resize(36 * L); pA.resize(6 * L); U.resize(18 * L); Dinv.resize(9 * L); u.resize(3 * L);
        c.resize(6 * L);
        cinert.resize(L); crb.resize(L);
    }
    // the world's row (index nlink) of cvel and cacc
    T *vel(int64_t i) { return cvel.data() + 6 * (i < 0 ? cvel.size() / 6 - 1 : i); }
    T *acc(int64_t i) { return cacc.data() + 6 * (i < 0 ? cacc.size() / 6 - 1 : i); }
};

enum Status { OK = 0, ZERO_QUATERNION = 1, SINGULAR = 2 };

// ---------------------------------------------------------------- position

// link poses at positions q: xmat, xpos, cpos (relative to the centre of the link's tree)
template <class T> int kinematics(const NativeModel &m, Data<T> &d, const T *q) {
    for (int i = 0; i < m.nlink; i++) {
        T R[9], p[3];
        if (m.kind[i] == 0) {                                          // hinge or slide: G @ (1, t, sin t, 1 - cos t)
            T t = q[m.qadr[i]] - m.ref[i];
            // sin t = 2 sin(t/2) cos(t/2), 1 - cos t = 2 sin(t/2)^2: 1 - cos t keeps its relative precision for small t
            T coef[4] = {splat<T>(1.0), t, splat<T>(0.0), splat<T>(0.0)};
            if (!m.slide[i]) {
                T sh, ch;
                sincos_any(0.5 * t, sh, ch);
                coef[2] = 2.0 * sh * ch, coef[3] = 2.0 * sh * sh;
            }
            const double *G = &m.G[48 * i];
            T Tl[12];
            if (m.hinge[i]) {                                          // G[:, :, 1] = 0: the same numbers without it
                for (int a = 0; a < 12; a++) Tl[a] = G[4 * a] * coef[0] + G[4 * a + 2] * coef[2] + G[4 * a + 3] * coef[3];
            } else if (m.slide[i]) {                                   // G[:, :, 2:] = 0
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
            const T *qq = q + m.qadr[i];
            T norm = vsqrt(qq[0] * qq[0] + qq[1] * qq[1] + qq[2] * qq[2] + qq[3] * qq[3]);
            if (any_zero(norm)) return ZERO_QUATERNION;
            T w = qq[0] / norm, x = qq[1] / norm, y = qq[2] / norm, z = qq[3] / norm;
            T Q[9] = {1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - w * z), 2.0 * (x * z + w * y),
                      2.0 * (x * y + w * z), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - w * x),
                      2.0 * (x * z - w * y), 2.0 * (y * z + w * x), 1.0 - 2.0 * (x * x + y * y)};
            const double *rot = &m.brot[9 * i], *pos = &m.bpos[3 * i], *o = &m.banchor[3 * i];
            T e[3];
            for (int a = 0; a < 3; a++) {
                for (int b = 0; b < 3; b++) R[3 * a + b] = rot[3 * a] * Q[b] + rot[3 * a + 1] * Q[3 + b] + rot[3 * a + 2] * Q[6 + b];
                e[a] = o[a] - (Q[3 * a] * o[0] + Q[3 * a + 1] * o[1] + Q[3 * a + 2] * o[2]);
            }
            for (int a = 0; a < 3; a++) p[a] = pos[a] + (rot[3 * a] * e[0] + rot[3 * a + 1] * e[1] + rot[3 * a + 2] * e[2]);
        }
        T *X = &d.xmat[9 * i], *x = &d.xpos[3 * i], *st = &d.step[3 * i];
        int64_t par = m.parent[i];
        if (par < 0) {                                                 // R = R_loc, x = p_loc
            for (int a = 0; a < 9; a++) X[a] = R[a];
            for (int a = 0; a < 3; a++) x[a] = p[a], st[a] = p[a];
        } else {                                                       // R = R_parent R_loc, x = x_parent + R_parent p_loc
            const T *Xp = &d.xmat[9 * par], *xp = &d.xpos[3 * par];
            for (int a = 0; a < 3; a++) {
                for (int b = 0; b < 3; b++) X[3 * a + b] = Xp[3 * a] * R[b] + Xp[3 * a + 1] * R[3 + b] + Xp[3 * a + 2] * R[6 + b];
                st[a] = Xp[3 * a] * p[0] + Xp[3 * a + 1] * p[1] + Xp[3 * a + 2] * p[2];
            }
            for (int a = 0; a < 3; a++) x[a] = st[a] + xp[a];
        }
    }
    // positions relative to the centre, summed from the centre outward for the links that allow it
    for (int i = 0; i < m.nlink; i++) {
        int64_t c = m.center[i];
        T *cp = &d.cpos[3 * i];
        if (c == i) {
            cp[0] = cp[1] = cp[2] = splat<T>(0.0);
        } else if (m.relative[i]) {
            const T *pp = &d.cpos[3 * m.parent[i]];
            for (int a = 0; a < 3; a++) cp[a] = pp[a] + d.step[3 * i + a];
        } else {
            for (int a = 0; a < 3; a++) cp[a] = d.xpos[3 * i + a] - d.xpos[3 * c + a];
        }
    }
    return OK;
}

// ---------------------------------------------------------------- inertia

// cipos, cinert and cdof about the centres
template <class T> void com_pos(const NativeModel &m, Data<T> &d) {
    for (int i = 0; i < m.nlink; i++) {
        const T *R = &d.xmat[9 * i], *x = &d.cpos[3 * i];
        const double *ip = &m.ipos[3 * i], *J = &m.inertia[9 * i];
        T *c = &d.cipos[3 * i];
        Inertia<T> &I = d.cinert[i];
        double mass = m.mass[i];
        for (int a = 0; a < 3; a++) c[a] = x[a] + (R[3 * a] * ip[0] + R[3 * a + 1] * ip[1] + R[3 * a + 2] * ip[2]);
        for (int a = 0; a < 3; a++) I.h[a] = mass * c[a];
        // Ibar = R I R^T - h c^T + (h . c) 1
        T RI[9];
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++) RI[3 * a + b] = R[3 * a] * J[b] + R[3 * a + 1] * J[3 + b] + R[3 * a + 2] * J[6 + b];
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
    // cdof = (R s_ang, R s_lin + x x (R s_ang))
    for (int j = 0; j < m.nv; j++) {
        int64_t l = m.dof_link[j];
        const T *R = &d.xmat[9 * l], *x = &d.cpos[3 * l];
        const double *s = &m.motion[6 * j];
        T *S = &d.cdof[6 * j], xs[3];
        for (int a = 0; a < 3; a++) {
            S[a] = R[3 * a] * s[0] + R[3 * a + 1] * s[1] + R[3 * a + 2] * s[2];
            S[3 + a] = R[3 * a] * s[3] + R[3 * a + 1] * s[4] + R[3 * a + 2] * s[5];
        }
        cross(x, S, xs);
        for (int a = 0; a < 3; a++) S[3 + a] = S[3 + a] + xs[a];
    }
}

// ---------------------------------------------------------------- velocity

// cvel = cvel_parent + S qd; cdof_dot = cvel_parent x cdof
template <class T> void com_vel(const NativeModel &m, Data<T> &d, const T *qd) {
    T *world = d.vel(-1);
    for (int k = 0; k < 6; k++) world[k] = splat<T>(0.0);
    for (int i = 0; i < m.nlink; i++) {
        const T *vp = d.vel(m.parent[i]);
        T *v = d.vel(i), s[6];
        for (int k = 0; k < 6; k++) s[k] = splat<T>(0.0);
        for (int j = m.dofadr[i]; j < m.dofadr[i] + m.dofnum[i]; j++)
            for (int k = 0; k < 6; k++) s[k] = s[k] + d.cdof[6 * j + k] * qd[j];
        for (int k = 0; k < 6; k++) v[k] = vp[k] + s[k];
    }
    for (int j = 0; j < m.nv; j++) cross_motion(d.vel(m.parent[m.dof_link[j]]), &d.cdof[6 * j], &d.cdof_dot[6 * j]);
}

// ---------------------------------------------------------------- RNE

// tau = M qdd + C qd + g into out (nv); qd or qdd null means zero (rne(model, d, None, None) is g(q))
template <class T, bool QD, bool QDD> void rne_(const NativeModel &m, Data<T> &d, const T *qd, const T *qdd, T *out) {
    T ag[6] = {splat<T>(0.0), splat<T>(0.0), splat<T>(0.0), splat<T>(-m.gravity[0]), splat<T>(-m.gravity[1]),
               splat<T>(-m.gravity[2])};
    if (!QD && !QDD) {
        for (int i = 0; i < m.nlink; i++) inertia_times(d.cinert[i], ag, &d.cfrc[6 * i]);
    } else {
        T *aw = d.acc(-1);
        for (int k = 0; k < 6; k++) aw[k] = ag[k];
        // forward pass: a = a_parent + S qdd + cdof_dot qd;  f = I a + v x* (I v)
        for (int i = 0; i < m.nlink; i++) {
            T inc[6];
            for (int k = 0; k < 6; k++) inc[k] = splat<T>(0.0);
            for (int j = m.dofadr[i]; j < m.dofadr[i] + m.dofnum[i]; j++)
                for (int k = 0; k < 6; k++) {
                    T x = QDD ? d.cdof[6 * j + k] * qdd[j] : splat<T>(0.0);
                    if (QD) x = x + d.cdof_dot[6 * j + k] * qd[j];
                    inc[k] = inc[k] + x;
                }
            const T *ap = d.acc(m.parent[i]);
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
    // backward pass: f_parent += f
    for (int i = m.nlink - 1; i >= 0; i--) {
        int64_t p = m.parent[i];
        if (p >= 0)
            for (int k = 0; k < 6; k++) d.cfrc[6 * p + k] = d.cfrc[6 * p + k] + d.cfrc[6 * i + k];
    }
    // tau = S . f + armature qdd
    for (int j = 0; j < m.nv; j++) {
        out[j] = dot6(&d.cdof[6 * j], &d.cfrc[6 * m.dof_link[j]]);
        if (QDD) out[j] = out[j] + m.armature[j] * qdd[j];
    }
}

// the flags as template arguments: no test on them inside the loops
template <class T> void rne(const NativeModel &m, Data<T> &d, const T *qd, const T *qdd, T *out) {
    if (qd && qdd) rne_<T, true, true>(m, d, qd, qdd, out);
    else if (qd) rne_<T, true, false>(m, d, qd, qdd, out);
    else if (qdd) rne_<T, false, true>(m, d, qd, qdd, out);
    else rne_<T, false, false>(m, d, qd, qdd, out);
}

// ---------------------------------------------------------------- CRBA

// M (nv, nv) into out: composite inertias, then M_ij = S_i . (Ic_j S_j) for i = j or an ancestor of j
template <class T> void crb(const NativeModel &m, Data<T> &d, T *out) {
    for (int i = 0; i < m.nlink; i++) d.crb[i] = d.cinert[i];
    for (int i = m.nlink - 1; i >= 0; i--) {                          // backward pass: Ic_parent += Ic
        int64_t p = m.parent[i];
        if (p < 0) continue;
        Inertia<T> &P = d.crb[p];
        const Inertia<T> &C = d.crb[i];
        for (int k = 0; k < 9; k++) P.I[k] = P.I[k] + C.I[k];
        for (int k = 0; k < 3; k++) P.h[k] = P.h[k] + C.h[k];
        P.m = P.m + C.m;
    }
    int nv = m.nv;
    for (size_t k = 0; k < size_t(nv) * nv; k++) out[k] = splat<T>(0.0);
    for (int j = 0; j < nv; j++) {
        T F[6];
        inertia_times(d.crb[m.dof_link[j]], &d.cdof[6 * j], F);
        for (int64_t i = j; i >= 0; i = m.dof_parent[i]) {
            T v = dot6(&d.cdof[6 * i], F);
            out[size_t(i) * nv + j] = v;
            out[size_t(j) * nv + i] = v;
        }
    }
    for (int j = 0; j < nv; j++) out[size_t(j) * nv + j] = out[size_t(j) * nv + j] + m.armature[j];
}

// x with M x = b (M symmetric positive definite, overwritten by its Cholesky factor); SINGULAR on a non-positive pivot
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

// ---------------------------------------------------------------- ABA

// inverse of a symmetric positive k x k block (k = 1 or 3; by its adjugate); SINGULAR on a zero determinant
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

// qdd by the articulated-body algorithm about the centres (RBDA table 7.1), as algorithms._aba
template <class T> int aba(const NativeModel &m, Data<T> &d, const T *qd, const T *tau, T *qdd) {
    int L = m.nlink;
    for (int i = 0; i < L; i++) {
        T *c = &d.c[6 * i];                                            // velocity-product accelerations
        for (int k = 0; k < 6; k++) c[k] = splat<T>(0.0);
        for (int j = m.dofadr[i]; j < m.dofadr[i] + m.dofnum[i]; j++)
            for (int k = 0; k < 6; k++) c[k] = c[k] + d.cdof_dot[6 * j + k] * qd[j];
        inertia_dense(d.cinert[i], &d.IA[36 * i]);                     // articulated inertias
        T Iv[6];                                                       // pA = v x* (I v)
        inertia_times(d.cinert[i], d.vel(i), Iv);
        cross_force(d.vel(i), Iv, &d.pA[6 * i]);
    }
    // backward pass: U = IA S, D = S^T U + armature, u = tau - S^T pA; the parent gets Ia = IA - U D^-1 U^T and
    // pA + Ia c + U D^-1 u
    for (int i = L - 1; i >= 0; i--) {
        int k0 = int(m.dofadr[i]), n = int(m.dofnum[i]);
        const T *S = &d.cdof[6 * k0], *IA = &d.IA[36 * i], *pA = &d.pA[6 * i];
        T *U = &d.U[18 * i], *Dinv = &d.Dinv[9 * i], *u = &d.u[3 * i], D[9];
        for (int a = 0; a < n; a++) mat6_times(IA, S + 6 * a, U + 6 * a);
        for (int a = 0; a < n; a++)
            for (int b = 0; b < n; b++) {
                D[n * a + b] = dot6(S + 6 * a, U + 6 * b);
                if (a == b) D[n * a + b] = D[n * a + b] + m.armature[k0 + a];
            }
        if (block_inverse(D, n, Dinv) != OK) return SINGULAR;
        for (int a = 0; a < n; a++) u[a] = tau[k0 + a] - dot6(S + 6 * a, pA);
        int64_t p = m.parent[i];
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
    // forward pass: a' = a_parent + c, qdd = D^-1 (u - U^T a'), a = a' + S qdd
    T *aw = d.acc(-1);
    T ag[6] = {splat<T>(0.0), splat<T>(0.0), splat<T>(0.0), splat<T>(-m.gravity[0]), splat<T>(-m.gravity[1]),
               splat<T>(-m.gravity[2])};
    for (int k = 0; k < 6; k++) aw[k] = ag[k];
    for (int i = 0; i < L; i++) {
        int k0 = int(m.dofadr[i]), n = int(m.dofnum[i]);
        const T *ap = d.acc(m.parent[i]), *U = &d.U[18 * i], *Dinv = &d.Dinv[9 * i], *u = &d.u[3 * i];
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

// ---------------------------------------------------------------- energy

// 1/2 sum_l v . (cinert v) + 1/2 sum_i armature qd^2
template <class T> T kinetic(const NativeModel &m, Data<T> &d, const T *qd) {
    T s = splat<T>(0.0), arm = splat<T>(0.0), Iv[6];
    for (int i = 0; i < m.nlink; i++) {
        inertia_times(d.cinert[i], d.vel(i), Iv);
        s = s + dot6(d.vel(i), Iv);
    }
    for (int j = 0; j < m.nv; j++) arm = arm + m.armature[j] * qd[j] * qd[j];
    return 0.5 * (s + arm);
}

// springs - gravity . (sum_l m_l (center_l + cipos_l) + static mass moment)
template <class T> T potential(const NativeModel &m, Data<T> &d, const T *q) {
    T moment[3] = {splat<T>(0.0), splat<T>(0.0), splat<T>(0.0)};
    for (int i = 0; i < m.nlink; i++) {
        const T *c = &d.cipos[3 * i], *ctr = &d.xpos[3 * m.center[i]];
        for (int a = 0; a < 3; a++) moment[a] = moment[a] + m.mass[i] * (c[a] + ctr[a]);
    }
    T springs = splat<T>(0.0);
    for (size_t s = 0; s < m.spring_q.size(); s++) {
        T e = q[m.spring_q[s]] - m.spring_ref[s];
        springs = springs + m.spring_k[s] * e * e;
    }
    T g = splat<T>(0.0);
    for (int a = 0; a < 3; a++) g = g + m.gravity[a] * (moment[a] + m.static_mass * m.static_com[a]);
    return 0.5 * springs - g;
}

// ---------------------------------------------------------------- one state (or lanes of states), every public function

enum Op { RNEA = 0, BIAS, GRAVITY, MASS_MATRIX, FORWARD_DYNAMICS, ABA, KINETIC, POTENTIAL, ENERGY, NOPS };
//                                 inputs (sizes: 'q' nq, 'v' nv)   output size per state ('v' nv, 'M' nv^2, 's' 1)
const char *OP_INPUTS[NOPS] = {"qvv", "qv", "q", "q", "qvv", "qvv", "qv", "q", "qv"};
const char OP_OUTPUT[NOPS] = {'v', 'v', 'v', 'M', 'v', 'v', 's', 's', 's'};

template <class T> int compute(const NativeModel &m, Data<T> &d, int op, const T *const *x, T *out) {
    const T *q = x[0];
    int st = kinematics(m, d, q);
    if (st != OK) return st;
    com_pos(m, d);
    switch (op) {
        case RNEA: com_vel(m, d, x[1]); rne(m, d, x[1], x[2], out); return OK;
        case BIAS: com_vel(m, d, x[1]); rne(m, d, x[1], (const T *)nullptr, out); return OK;
        case GRAVITY: rne(m, d, (const T *)nullptr, (const T *)nullptr, out); return OK;
        case MASS_MATRIX: crb(m, d, out); return OK;
        case FORWARD_DYNAMICS: {
            com_vel(m, d, x[1]);
            rne(m, d, x[1], (const T *)nullptr, out);                  // c, then tau - c
            for (int j = 0; j < m.nv; j++) out[j] = x[2][j] - out[j];
            crb(m, d, d.qM.data());
            return cholesky_solve(d.qM.data(), m.nv, out);
        }
        case ABA: com_vel(m, d, x[1]); return aba(m, d, x[1], x[2], out);
        case KINETIC: com_vel(m, d, x[1]); out[0] = kinetic(m, d, x[1]); return OK;
        case POTENTIAL: out[0] = potential(m, d, q); return OK;
        case ENERGY: com_vel(m, d, x[1]); out[0] = kinetic(m, d, x[1]) + potential(m, d, q); return OK;
    }
    return OK;
}

#if PHYSAI_LANES && (defined(__x86_64__) || defined(_M_X64)) && defined(__linux__) && !defined(__clang__)
#define PHYSAI_DISPATCH 1
#else
#define PHYSAI_DISPATCH 0
#endif

#if PHYSAI_LANES
// lanes of states side by side: the batch kernel, one variant per instruction set, each on its register's width, chosen
// once (at load time: PHYSAI_ISA if the CPU supports it, else the best it supports) and switchable with set_isa
#if PHYSAI_DISPATCH
__attribute__((target("avx512f"), flatten, noinline))
int compute_lanes_avx512f(const NativeModel &m, Data<Lanes8> &d, int op, const Lanes8 *const *x, Lanes8 *out) {
    return compute<Lanes8>(m, d, op, x, out);
}
__attribute__((target("avx2"), flatten, noinline))
int compute_lanes_avx2(const NativeModel &m, Data<Lanes4> &d, int op, const Lanes4 *const *x, Lanes4 *out) {
    return compute<Lanes4>(m, d, op, x, out);
}
#endif
__attribute__((flatten, noinline))
int compute_lanes_default(const NativeModel &m, Data<Lanes2> &d, int op, const Lanes2 *const *x, Lanes2 *out) {
    return compute<Lanes2>(m, d, op, x, out);
}
#endif

// the batch kernel's variants, best first: the names PHYSAI_ISA and set_isa take, and the states per lane vector
struct IsaVariant {
    const char *name;
    int lanes;
};
#if PHYSAI_DISPATCH
const IsaVariant ISA_VARIANTS[] = {{"avx512f", 8}, {"avx2", 4}, {"default", 2}};
#elif PHYSAI_LANES
const IsaVariant ISA_VARIANTS[] = {{"default", 2}};
#else
const IsaVariant ISA_VARIANTS[] = {{"default", 1}};
#endif
constexpr int N_ISA = int(sizeof(ISA_VARIANTS) / sizeof(ISA_VARIANTS[0]));

// whether this CPU runs variant k
bool isa_supported(int k) {
#if PHYSAI_DISPATCH
    __builtin_cpu_init();
    if (k == 0) return __builtin_cpu_supports("avx512f");
    if (k == 1) return __builtin_cpu_supports("avx2");
#endif
    return k >= 0 && k < N_ISA;
}

// the variant named `name` if the CPU supports it, else -1
int isa_index(const char *name) {
    for (int k = 0; k < N_ISA; k++)
        if (std::strcmp(name, ISA_VARIANTS[k].name) == 0) return isa_supported(k) ? k : -1;
    return -1;
}

// PHYSAI_ISA when the CPU supports it; otherwise (unset, unknown, unsupported) the best variant it supports
int initial_isa() {
    const char *env = std::getenv("PHYSAI_ISA");
    int k = env ? isa_index(env) : -1;
    if (k >= 0) return k;
    for (k = 0; !isa_supported(k); k++) {}
    return k;
}

std::atomic<int> active_isa{initial_isa()};

#if PHYSAI_LANES
// the variant's kernel for its lanes L (the name tells the instruction set; the width picks the overload)
inline int compute_lanes(const NativeModel &m, Data<Lanes2> &d, int op, const Lanes2 *const *x, Lanes2 *out) {
    return compute_lanes_default(m, d, op, x, out);
}
#if PHYSAI_DISPATCH
inline int compute_lanes(const NativeModel &m, Data<Lanes4> &d, int op, const Lanes4 *const *x, Lanes4 *out) {
    return compute_lanes_avx2(m, d, op, x, out);
}
inline int compute_lanes(const NativeModel &m, Data<Lanes8> &d, int op, const Lanes8 *const *x, Lanes8 *out) {
    return compute_lanes_avx512f(m, d, op, x, out);
}
#endif
#endif

// the instruction set the batch kernel runs with
const char *isa() { return ISA_VARIANTS[active_isa.load()].name; }

// a workspace for variant k's lanes (none without the vector extension)
std::shared_ptr<void> lanes_workspace(const NativeModel &m, int k) {
#if PHYSAI_LANES
    switch (ISA_VARIANTS[k].lanes) {
#if PHYSAI_DISPATCH
        case 8: return std::make_shared<Data<Lanes8>>(m);
        case 4: return std::make_shared<Data<Lanes4>>(m);
#endif
        default: return std::make_shared<Data<Lanes2>>(m);
    }
#else
    (void)m, (void)k;
    return nullptr;
#endif
}

// run the batch kernel's variant `name` from now on if the CPU supports it (true); otherwise nothing changes (false)
bool set_isa(const char *name) {
    int k = isa_index(name);
    if (k >= 0) active_isa.store(k);
    return k >= 0;
}

// the variants this CPU supports, best first
nb::list isas() {
    nb::list r;
    for (int k = 0; k < N_ISA; k++)
        if (isa_supported(k)) r.append(nb::str(ISA_VARIANTS[k].name));
    return r;
}


// ---------------------------------------------------------------- positions from Python

using PositionArray = nb::ndarray<const double, nb::c_contig, nb::device::cpu>;

// obj as q: a float64 C-order array (nq,) or (N, nq) with finite entries; the number of states (1 for (nq,)), or 0
// when it is not such an array (the caller then declines: the NumPy path converts, or raises the named error)
int64_t positions(const NativeModel &m, nb::handle obj, PositionArray &q) {
    if (!nb::try_cast(obj, q, false) || (q.ndim() != 1 && q.ndim() != 2) || int64_t(q.shape(q.ndim() - 1)) != m.nq)
        return 0;
    int64_t N = q.ndim() == 2 ? int64_t(q.shape(0)) : 1;
    for (int64_t k = 0; k < N * m.nq; k++)
        if (!std::isfinite(q.data()[k])) return 0;
    return N;
}

// ---------------------------------------------------------------- Jacobians (physai.jacobians)

// (Jp; Jr) (6, nv) of a point fixed in link l (p: its position in the link's frame) from a Data with com_pos done:
// r = p - centre, Jp = S_lin + S_ang x r, Jr = S_ang in the columns of l's dofs and their ancestors, 0 elsewhere
void jacobian(const NativeModel &m, const Data<double> &d, int64_t l, const double *p, double *J) {
    int nv = m.nv;
    for (int k = 0; k < 6 * nv; k++) J[k] = 0.0;
    const double *R = &d.xmat[9 * l], *c = &d.cpos[3 * l];
    double r[3];
    for (int a = 0; a < 3; a++) r[a] = c[a] + (R[3 * a] * p[0] + R[3 * a + 1] * p[1] + R[3 * a + 2] * p[2]);
    for (int64_t i = m.dofadr[l] + m.dofnum[l] - 1; i >= 0; i = m.dof_parent[i]) {
        const double *S = &d.cdof[6 * i];
        double wr[3];
        cross(S, r, wr);
        for (int a = 0; a < 3; a++) {
            J[a * nv + i] = S[3 + a] + wr[a];
            J[(3 + a) * nv + i] = S[a];
        }
    }
}

// Jacobians of a point fixed in link l for q (nq,) or (N, nq) (float64, C order): (6, nv) or (N, 6, nv); None for any
// other q, a non-finite entry or a zero quaternion (the NumPy path converts, or raises the named error)
nb::object jacobians(NativeModel &m, nb::handle q_, int64_t link, DArr point) {
    if (link < 0 || link >= m.nlink || point.size() != 3) throw nb::value_error("jacobians: a link of the model, a point (3,)");
    PositionArray q;
    int64_t N = positions(m, q_, q);
    if (N == 0) return nb::none();
    npy_intp dims[3] = {npy_intp(N), 6, m.nv};
    PyObject *arr = q.ndim() == 2 ? PyArray_SimpleNew(3, dims, NPY_DOUBLE) : PyArray_SimpleNew(2, dims + 1, NPY_DOUBLE);
    if (!arr) throw nb::python_error();
    nb::object result = nb::steal(arr);
    double *out = static_cast<double *>(PyArray_DATA(reinterpret_cast<PyArrayObject *>(arr)));
    if (!m.scratch) m.scratch = std::make_shared<Data<double>>(m);
    Data<double> &d = *m.scratch;
    for (int64_t s = 0; s < N; s++) {
        if (kinematics(m, d, q.data() + s * m.nq) != OK) return nb::none();
        com_pos(m, d);
        jacobian(m, d, link, point.data(), out + s * 6 * m.nv);
    }
    return result;
}

// ---------------------------------------------------------------- body poses (physai.kinematics)

// every body's world pose for q (nq,) or (N, nq) (float64, C order): (pos (nbody, 3), rot (nbody, 3, 3)) with a leading N
// for a batch; body = link pose * (body_pos, body_rot), the world's pose for link -1. None for another q, a non-finite
// entry or a zero quaternion (the NumPy path converts, or raises the named error).
nb::object body_poses(NativeModel &m, nb::handle q_, IArr body_link, DArr body_pos, DArr body_rot) {
    int64_t nb_ = int64_t(body_link.size());
    if (body_pos.size() != size_t(3 * nb_) || body_rot.size() != size_t(9 * nb_)) throw nb::value_error("body_poses: body arrays");
    for (int64_t b = 0; b < nb_; b++)
        if (body_link.data()[b] < -1 || body_link.data()[b] >= m.nlink) throw nb::value_error("body_poses: body_link");
    PositionArray q;
    int64_t N = positions(m, q_, q);
    if (N == 0) return nb::none();
    npy_intp dp[3] = {npy_intp(N), npy_intp(nb_), 3}, dr[4] = {npy_intp(N), npy_intp(nb_), 3, 3};
    int lead = q.ndim() == 2 ? 0 : 1;
    PyObject *P = PyArray_SimpleNew(3 - lead, dp + lead, NPY_DOUBLE), *Rr = PyArray_SimpleNew(4 - lead, dr + lead, NPY_DOUBLE);
    if (!P || !Rr) throw nb::python_error();
    nb::object pos = nb::steal(P), rot = nb::steal(Rr);
    double *po = static_cast<double *>(PyArray_DATA(reinterpret_cast<PyArrayObject *>(P)));
    double *ro = static_cast<double *>(PyArray_DATA(reinterpret_cast<PyArrayObject *>(Rr)));
    if (!m.scratch) m.scratch = std::make_shared<Data<double>>(m);
    Data<double> &d = *m.scratch;
    for (int64_t s = 0; s < N; s++) {
        if (kinematics(m, d, q.data() + s * m.nq) != OK) return nb::none();
        for (int64_t b = 0; b < nb_; b++) {
            int64_t l = body_link.data()[b];
            const double *bp = body_pos.data() + 3 * b, *br = body_rot.data() + 9 * b;
            double *p = po + (s * nb_ + b) * 3, *r = ro + (s * nb_ + b) * 9;
            if (l < 0) {
                for (int a = 0; a < 3; a++) p[a] = bp[a];
                for (int a = 0; a < 9; a++) r[a] = br[a];
                continue;
            }
            const double *X = &d.xmat[9 * l], *x = &d.xpos[3 * l];
            for (int a = 0; a < 3; a++) {                          // p = x + R body_pos,  rot = R body_rot
                p[a] = x[a] + (X[3 * a] * bp[0] + X[3 * a + 1] * bp[1] + X[3 * a + 2] * bp[2]);
                for (int c = 0; c < 3; c++) r[3 * a + c] = X[3 * a] * br[c] + X[3 * a + 1] * br[3 + c] + X[3 * a + 2] * br[6 + c];
            }
        }
    }
    return nb::make_tuple(pos, rot);
}

#include "derivatives.h"                                                // physai.derivatives: rnea and forward dynamics derivatives

// ---------------------------------------------------------------- simulation (physai.integrators.simulate, rollout)

#include "simulate.h"                                                   // NativeSim, the steppers, simulate_one, simulate_block

// ---------------------------------------------------------------- the configuration manifold (engine.integrate, difference)

// the rotation vector log(q0^-1 q1) (MuJoCo's mju_subQuat), angle wrapped to [-pi, pi], as joints.quat_difference
void quat_difference(const double *q1, const double *q0, double *out) {
    double c[4] = {q0[0], -q0[1], -q0[2], -q0[3]};
    double d[4] = {c[0] * q1[0] - c[1] * q1[1] - c[2] * q1[2] - c[3] * q1[3], c[0] * q1[1] + c[1] * q1[0] + c[2] * q1[3] - c[3] * q1[2],
                   c[0] * q1[2] - c[1] * q1[3] + c[2] * q1[0] + c[3] * q1[1], c[0] * q1[3] + c[1] * q1[2] - c[2] * q1[1] + c[3] * q1[0]};
    double s = std::sqrt(d[1] * d[1] + d[2] * d[2] + d[3] * d[3]);
    double angle = 2.0 * std::atan2(s, d[0]);
    if (angle > M_PI) angle -= 2.0 * M_PI;
    double k = s > 1e-15 ? angle / s : 0.0;
    for (int a = 0; a < 3; a++) out[a] = d[1 + a] * k;
}

// the velocity v with q0 (+) h v = q1 (joints.difference, MuJoCo's mj_differentiatePos)
void difference_pos(const NativeSim &s, const double *q0, const double *q1, double h, double *v) {
    for (size_t k = 0; k < s.scalar_q.size(); k++) v[s.scalar_v[k]] = (q1[s.scalar_q[k]] - q0[s.scalar_q[k]]) / h;
    for (size_t k = 0; k < s.quat_q.size(); k++) {
        double w[3];
        quat_difference(q1 + s.quat_q[k], q0 + s.quat_q[k], w);
        for (int a = 0; a < 3; a++) v[s.quat_v[k] + a] = w[a] / h;
    }
}

// integrate (op 0: x = q (nq), y = v (nv)) or difference (op 1: x = q0, y = q1) for float64 C-order arrays of the same
// shape (size,) or (N, size); None for other inputs or a non-finite result (the NumPy path converts, or raises)
nb::object configuration(const NativeSim &s, int op, nb::handle x_, nb::handle y_, double h) {
    using CArr = nb::ndarray<const double, nb::c_contig, nb::device::cpu>;
    CArr x, y;
    if (!nb::try_cast(x_, x, false) || !nb::try_cast(y_, y, false) || x.ndim() != y.ndim() || (x.ndim() != 1 && x.ndim() != 2))
        return nb::none();
    int64_t xs = s.nq, ys = op == 0 ? s.nv : s.nq, os = op == 0 ? s.nq : s.nv;
    int64_t N = x.ndim() == 2 ? int64_t(x.shape(0)) : 1;
    if (int64_t(x.shape(x.ndim() - 1)) != xs || int64_t(y.shape(y.ndim() - 1)) != ys || (x.ndim() == 2 && (N == 0 || int64_t(y.shape(0)) != N)))
        return nb::none();
    npy_intp dims[2] = {npy_intp(N), npy_intp(os)};
    PyObject *arr = x.ndim() == 2 ? PyArray_SimpleNew(2, dims, NPY_DOUBLE) : PyArray_SimpleNew(1, dims + 1, NPY_DOUBLE);
    if (!arr) throw nb::python_error();
    nb::object result = nb::steal(arr);
    double *out = static_cast<double *>(PyArray_DATA(reinterpret_cast<PyArrayObject *>(arr)));
    for (int64_t n = 0; n < N; n++) {
        const double *a = x.data() + n * xs, *b = y.data() + n * ys;
        double *o = out + n * os;
        if (op == 0) integrate_pos(s, a, b, h, o);
        else difference_pos(s, a, b, h, o);
        for (int64_t e = 0; e < os; e++)
            if (!std::isfinite(o[e])) return nb::none();
    }
    return result;
}

int num_threads() {
    if (const char *s = std::getenv("PHYSAI_NUM_THREADS")) {
        int n = std::atoi(s);
        if (n >= 1) return n;
    }
    static const int hardware = [] {                                    // reads /sys: once per process
        unsigned h = std::thread::hardware_concurrency();
        return h ? int(h) : 1;
    }();
    return hardware;
}

using RArr = nb::ndarray<const double, nb::device::cpu>;                // any strides (0 along broadcast axes)
using WArr = nb::ndarray<double, nb::c_contig, nb::device::cpu>;

// an input (N, steps, size) as a Series, or none; ValueError unless its shape is exactly that
// (a float64 array in place, never a converted copy: the Series points into the caller's array, which outlives the call)
Series series(nb::handle obj, int64_t N, int64_t steps, int64_t size, const char *what) {
    Series r;
    if (obj.is_none()) return r;
    RArr x;
    if (!nb::try_cast(obj, x, false) || x.ndim() != 3 || int64_t(x.shape(0)) != N || int64_t(x.shape(1)) != steps || int64_t(x.shape(2)) != size)
        throw nb::value_error(what);
    r.data = x.data(), r.trajectory = x.stride(0), r.step = x.stride(1), r.entry = x.stride(2);
    return r;
}

// N trajectories of integrators.simulate into Q (N, steps+1, nq), QD (N, steps+1, nv), E (N, steps+1), each from its
// row 0, on threads with the GIL released; status (N): -1, the first diverging step, or -2 (declined: the Python loop
// reruns that trajectory and raises the named error)
void rollout(const NativeModel &m, const NativeSim &s, WArr Q, WArr QD, WArr E, nb::ndarray<int64_t, nb::c_contig, nb::device::cpu> status,
             double h, int integrator, bool implicit_damping, bool with_energy, nb::handle ctrl_, nb::handle qfrc_, nb::handle xfrc_) {
    if (Q.ndim() != 3 || QD.ndim() != 3 || E.ndim() != 2 || status.ndim() != 1 || Q.shape(0) != QD.shape(0) ||
        Q.shape(0) != E.shape(0) || Q.shape(0) != status.shape(0) || Q.shape(1) != QD.shape(1) || Q.shape(1) != E.shape(1) ||
        Q.shape(1) < 1 || int64_t(Q.shape(2)) != m.nq || int64_t(QD.shape(2)) != m.nv || s.nq != m.nq || s.nv != m.nv ||
        s.spring_v.size() != m.spring_q.size() || integrator < EULER || integrator > IMPLICITFAST)
        throw nb::value_error("rollout: Q (N, steps+1, nq), QD (N, steps+1, nv), E (N, steps+1), status (N) for this model");
    int64_t N = int64_t(Q.shape(0)), steps = int64_t(Q.shape(1)) - 1;
    Series ctrl = series(ctrl_, N, steps, s.nu, "rollout: ctrl (N, steps, nu)");
    Series qfrc = series(qfrc_, N, steps, s.nv, "rollout: qfrc_applied (N, steps, nv)");
    Series xfrc = series(xfrc_, N, steps, 6 * int64_t(s.nbody), "rollout: xfrc_applied (N, steps, 6 nbody)");
    if (s.nu && !ctrl.data) throw nb::value_error("rollout: the actuators need ctrl");
    double *q = Q.data(), *qd = QD.data(), *e = E.data();
    int64_t *st = status.data();
    int64_t rowq = (steps + 1) * m.nq, rowv = (steps + 1) * m.nv;
    const int variant = active_isa.load();
    // trajectories [lo, hi): blocks of the variant's lanes side by side (not for implicit, whose LU pivots per lane),
    // then one by one what is left or what a block declined
    auto run_chunk = [&](int64_t lo, int64_t hi) {
        SimWork<double> w(m, s);
        auto one_by_one = [&](int64_t from, int64_t to) {
            for (int64_t n = from; n < to; n++)
                st[n] = simulate_one(m, s, w, n, h, steps, integrator, implicit_damping, with_energy, ctrl, qfrc, xfrc,
                                     q + n * rowq, qd + n * rowv, e + n * (steps + 1));
        };
        int64_t n = lo;
#if PHYSAI_LANES
        auto blocks = [&](auto tag) {
            using L = decltype(tag);
            constexpr int W = lanes_of<L>;
            SimWork<L> wl(m, s);
            for (; hi - n >= 2; n += W) {
                int64_t count = std::min<int64_t>(W, hi - n);
                if (simulate_lanes(m, s, wl, n, count, h, steps, integrator, implicit_damping, with_energy, ctrl, qfrc, xfrc, q, qd, e) == STEPPED)
                    for (int64_t l = 0; l < count; l++) st[n + l] = -1;
                else
                    one_by_one(n, n + count);
            }
        };
        if (integrator != IMPLICIT && hi - lo >= 2) {
            switch (ISA_VARIANTS[variant].lanes) {
#if PHYSAI_DISPATCH
                case 8: blocks(Lanes8{}); break;
                case 4: blocks(Lanes4{}); break;
#endif
                default: blocks(Lanes2{});
            }
        }
#endif
        one_by_one(n, hi);
    };
    std::atomic<int> failed{0};                                        // an exception in a thread (e.g. bad_alloc)
    auto run = [&](int64_t lo, int64_t hi) {
        try {
            run_chunk(lo, hi);
        } catch (...) {
            failed = 1;
        }
    };
    {
        nb::gil_scoped_release release;
        int T = int(std::min<int64_t>(int64_t(num_threads()), (N + BLOCK - 1) / BLOCK));
        if (T <= 1) {
            run(0, N);
        } else {
            std::vector<std::thread> pool;
            for (int t = 0; t < T; t++) pool.emplace_back(run, (N * t / T) / BLOCK * BLOCK, t + 1 == T ? N : (N * (t + 1) / T) / BLOCK * BLOCK);
            for (auto &th : pool) th.join();
        }
    }
    if (failed) throw std::runtime_error("rollout: a thread failed (out of memory?)");
}

#if PHYSAI_LANES
// blocks(Data<L> &, s, hi) on the workspace dl of variant's lanes L (Lanes8, Lanes4 or Lanes2): the first state left
template <class Blocks> int64_t lanes_blocks(int variant, void *dl, int64_t s, int64_t hi, Blocks &blocks) {
    switch (ISA_VARIANTS[variant].lanes) {
#if PHYSAI_DISPATCH
        case 8: return blocks(*static_cast<Data<Lanes8> *>(dl), s, hi);
        case 4: return blocks(*static_cast<Data<Lanes4> *>(dl), s, hi);
#endif
        default: return blocks(*static_cast<Data<Lanes2> *>(dl), s, hi);
    }
}
#endif

// work(lo, hi, d1, dl) over the states [0, N): small calls (cost < 40000) on the caller's thread with the model's
// workspaces and the GIL kept; larger ones on threads where the work outweighs starting them (about 20 us each), GIL
// released, each thread with its own workspaces (one state, the variant's lanes); chunks start at multiples of BLOCK
template <class Work> void schedule(NativeModel &m, int variant, int64_t N, int64_t cost, Work &work) {
    if (!m.scratch) m.scratch = std::make_shared<Data<double>>(m);
    if (N > 1 && !m.scratch_lanes[variant]) m.scratch_lanes[variant] = lanes_workspace(m, variant);
    if (cost < 40000) {
        work(0, N, *m.scratch, m.scratch_lanes[variant].get());
        return;
    }
    nb::gil_scoped_release release;
    int T = int(std::min<int64_t>({int64_t(num_threads()), cost / 20000, (N + BLOCK - 1) / BLOCK}));
    auto chunk = [&](int64_t lo, int64_t hi) {
        Data<double> d1(m);
        std::shared_ptr<void> dl = lanes_workspace(m, variant);
        work(lo, hi, d1, dl.get());
    };
    if (T <= 1) {
        chunk(0, N);
    } else {
        std::vector<std::thread> pool;
        for (int t = 0; t < T; t++)
            pool.emplace_back(chunk, (N * t / T) / BLOCK * BLOCK, t + 1 == T ? N : (N * (t + 1) / T) / BLOCK * BLOCK);
        for (auto &th : pool) th.join();
    }
}

struct Input {
    const double *data;
    int64_t stride_state, stride_entry;                                // in doubles; stride_state 0 for a shared state
};

// inputs (float64 numpy arrays of shape (size,) or (N, size) with one N, any strides, finite) read in place, or
// gathered once into copies where their entries are strided; false for anything else (the caller declines: the Python
// side converts, or raises the named error); batch: N, or -1 when every input is a single state
bool read_inputs(const nb::handle *handles, const int64_t *sizes, int nin, Input *in, int64_t &batch,
                 std::vector<std::vector<double>> &copies) {
    for (int k = 0; k < nin; k++) {
        PyObject *obj = handles[k].ptr();
        if (!PyArray_Check(obj)) return false;
        PyArrayObject *arr = reinterpret_cast<PyArrayObject *>(obj);
        if (PyArray_TYPE(arr) != NPY_DOUBLE || !PyArray_ISALIGNED(arr) || PyArray_ISBYTESWAPPED(arr)) return false;
        int ndim = PyArray_NDIM(arr);
        const npy_intp *shp = PyArray_DIMS(arr), *str = PyArray_STRIDES(arr);
        for (int t = 0; t < ndim; t++)
            if (str[t] % npy_intp(sizeof(double)) != 0) return false;
        const double *data = static_cast<const double *>(PyArray_DATA(arr));
        int64_t size = sizes[k];
        if (ndim == 1) {
            if (int64_t(shp[0]) != size) return false;
            in[k] = {data, 0, int64_t(str[0] / 8)};
        } else if (ndim == 2) {
            if (int64_t(shp[1]) != size) return false;
            int64_t n = int64_t(shp[0]);
            if (n == 0 || (batch >= 0 && n != batch)) return false;
            batch = n;
            in[k] = {data, int64_t(str[0] / 8), int64_t(str[1] / 8)};
        } else {
            return false;
        }
        int64_t n = ndim == 2 ? int64_t(shp[0]) : 1;
        if (size > 0 && in[k].stride_entry != 1) {                     // gather a strided input once
            std::vector<double> buf(size_t(n * size));
            for (int64_t s = 0; s < n; s++)
                for (int64_t e = 0; e < size; e++) buf[size_t(s * size + e)] = in[k].data[s * in[k].stride_state + e * in[k].stride_entry];
            copies.push_back(std::move(buf));
            in[k] = {copies.back().data(), ndim == 2 ? size : 0, 1};
        }
        for (int64_t s = 0; s < n; s++)
            for (int64_t e = 0; e < size; e++)
                if (!std::isfinite(in[k].data[s * in[k].stride_state + e])) return false;
    }
    return true;
}

// ---------------------------------------------------------------- the Python entry

// op's result for the inputs (each a float64 array (size,) or (N, size)), or None when an input is not one of those,
// is not finite, or the result is not finite, or a quaternion is zero, or M is singular (the caller then takes the
// NumPy path, which raises the named error).
nb::object run(NativeModel &m, int op, nb::handle a, nb::handle b, nb::handle c) {
    if (op < 0 || op >= NOPS) throw nb::value_error("unknown operation");
    const char *kinds = OP_INPUTS[op];
    nb::handle handles[3] = {a, b, c};
    int nin = int(std::strlen(kinds));
    Input in[3];
    std::vector<std::vector<double>> copies;                           // none: inputs are read in place (strided)
    int64_t batch = -1;
    int64_t sizes[3] = {0, 0, 0};
    for (int k = 0; k < nin; k++) sizes[k] = kinds[k] == 'q' ? m.nq : m.nv;
    if (!read_inputs(handles, sizes, nin, in, batch, copies)) return nb::none();
    int64_t N = batch < 0 ? 1 : batch;
    int64_t per = OP_OUTPUT[op] == 'v' ? m.nv : OP_OUTPUT[op] == 'M' ? int64_t(m.nv) * m.nv : 1;
    // the result: a numpy array of the caller's shape ((nv,), (nv, nv), (N, nv), (N, nv, nv), (N,)) or a float
    nb::object result;
    double scalar = 0.0, *out = &scalar;
    if (OP_OUTPUT[op] != 's' || batch >= 0) {
        npy_intp dims[3];
        int nd = 0;
        if (batch >= 0) dims[nd++] = npy_intp(N);
        if (OP_OUTPUT[op] != 's') dims[nd++] = m.nv;
        if (OP_OUTPUT[op] == 'M') dims[nd++] = m.nv;
        PyObject *arr = PyArray_SimpleNew(nd, dims, NPY_DOUBLE);
        if (!arr) throw nb::python_error();
        result = nb::steal(arr);
        out = static_cast<double *>(PyArray_DATA(reinterpret_cast<PyArrayObject *>(arr)));
    }
    std::atomic<int> failed{0};
    const int variant = active_isa.load();                             // the batch kernel's variant for this call
#if PHYSAI_LANES
    // states [s, hi) in blocks of lanes L on workspace dl (the last lanes of a short block repeat a state); returns the
    // first state left for the scalar loop
    auto blocks = [&](auto &dl, int64_t s, int64_t hi) -> int64_t {
        using L = typename std::decay_t<decltype(dl)>::number;
        constexpr int W = lanes_of<L>;
        Vec<L> xin[3], o(static_cast<size_t>(per));
        for (int k = 0; k < nin; k++) xin[k].resize(size_t(kinds[k] == 'q' ? m.nq : m.nv));
        const L *xl[3] = {xin[0].data(), xin[1].data(), xin[2].data()};
        for (; hi - s >= 2 && !failed.load(std::memory_order_relaxed); s += W) {
            int64_t count = std::min<int64_t>(W, hi - s);
            for (int k = 0; k < nin; k++)
                for (int l = 0; l < W; l++) {
                    const double *src = in[k].data + (s + std::min<int64_t>(l, count - 1)) * in[k].stride_state;
                    for (size_t e = 0; e < xin[k].size(); e++) xin[k][e][l] = src[e];
                }
            if (compute_lanes(m, dl, op, xl, o.data()) != OK) { failed = 1; return hi; }
            for (int64_t l = 0; l < count; l++) {
                double *dst = out + (s + l) * per;
                for (int64_t e = 0; e < per; e++) {
                    dst[e] = o[size_t(e)][l];
                    if (!std::isfinite(dst[e])) { failed = 1; return hi; }
                }
            }
        }
        return s;
    };
#endif
    // states [lo, hi) with workspaces d1 (one state) and dl (the variant's lanes)
    auto work = [&](int64_t lo, int64_t hi, Data<double> &d1, void *dl) {
        const double *x[3] = {nullptr, nullptr, nullptr};
        int64_t s = lo;
#if PHYSAI_LANES
        if (hi - lo >= 2) {
            s = lanes_blocks(variant, dl, s, hi, blocks);
        }
#else
        (void)dl;
#endif
        for (; s < hi && !failed.load(std::memory_order_relaxed); s++) {
            for (int k = 0; k < nin; k++) x[k] = in[k].data + s * in[k].stride_state;
            double *o1 = out + s * per;
            if (compute(m, d1, op, x, o1) != OK) { failed = 1; return; }
            for (int64_t e = 0; e < per; e++)
                if (!std::isfinite(o1[e])) { failed = 1; return; }
        }
    };
    int64_t cost = N * int64_t(m.nlink + 1) * (OP_OUTPUT[op] == 'M' || op == FORWARD_DYNAMICS ? m.nv + 1 : 1);
    schedule(m, variant, N, cost, work);
    if (failed) return nb::none();
    return result.is_valid() ? result : nb::float_(scalar);
}


// rnea_derivatives (op 0: q, qd, qdd) or forward_dynamics_derivatives (op 1: q, qd, tau) for float64 arrays (size,) or
// (N, size) (a single state is shared by a batch): three (nv, nv) or (N, nv, nv) arrays; None for other inputs, a zero
// quaternion, a singular M or a non-finite result (the NumPy path converts, or raises the named error)
nb::object derivatives(NativeModel &m, int op, nb::handle a, nb::handle b, nb::handle c) {
    if (op != 0 && op != 1) throw nb::value_error("derivatives: op 0 (rnea) or 1 (forward dynamics)");
    nb::handle handles[3] = {a, b, c};
    Input in[3];
    int64_t batch = -1;
    std::vector<std::vector<double>> copies;
    const int64_t sizes[3] = {m.nq, m.nv, m.nv};
    if (!read_inputs(handles, sizes, 3, in, batch, copies)) return nb::none();       // as run
    int64_t N = batch < 0 ? 1 : batch, nv = m.nv, per = nv * nv;
    npy_intp dims[3] = {npy_intp(N), npy_intp(nv), npy_intp(nv)};
    nb::object outs[3];
    double *out[3];
    for (int k = 0; k < 3; k++) {
        PyObject *arr = batch >= 0 ? PyArray_SimpleNew(3, dims, NPY_DOUBLE) : PyArray_SimpleNew(2, dims + 1, NPY_DOUBLE);
        if (!arr) throw nb::python_error();
        outs[k] = nb::steal(arr);
        out[k] = static_cast<double *>(PyArray_DATA(reinterpret_cast<PyArrayObject *>(arr)));
    }
    std::atomic<int> failed{0};
    const int variant = active_isa.load();
#if PHYSAI_LANES
    // states [s, hi) in blocks of lanes L on workspace dl (the last lanes of a short block repeat a state); returns the
    // first state left for the scalar loop
    auto blocks = [&](auto &dl, int64_t s, int64_t hi) -> int64_t {
        using L = typename std::decay_t<decltype(dl)>::number;
        constexpr int W = lanes_of<L>;
        DerivWork<L> w(m);
        Vec<L> x(size_t(m.nq + 2 * nv)), o(size_t(3 * per));
        L *xw[3] = {x.data(), x.data() + m.nq, x.data() + m.nq + nv}, *ol[3] = {o.data(), o.data() + per, o.data() + 2 * per};
        const L *xl[3] = {xw[0], xw[1], xw[2]};
        for (; hi - s >= 2 && !failed.load(std::memory_order_relaxed); s += W) {
            int64_t count = std::min<int64_t>(W, hi - s);
            for (int k = 0; k < 3; k++)
                for (int l = 0; l < W; l++) {
                    const double *src = in[k].data + (s + std::min<int64_t>(l, count - 1)) * in[k].stride_state;
                    for (int64_t e = 0; e < sizes[k]; e++) xw[k][e][l] = src[e * in[k].stride_entry];
                }
            if (derivatives_lanes(m, dl, w, op, xl, ol) != OK) { failed = 1; return hi; }
            for (int k = 0; k < 3; k++)
                for (int64_t l = 0; l < count; l++) {
                    double *dst = out[k] + (s + l) * per;
                    for (int64_t e = 0; e < per; e++) {
                        dst[e] = ol[k][e][l];
                        if (!std::isfinite(dst[e])) { failed = 1; return hi; }
                    }
                }
        }
        return s;
    };
#endif
    // states [lo, hi) on workspaces d (one state) and dl (the variant's lanes); inputs gathered contiguous
    auto work = [&](int64_t lo, int64_t hi, Data<double> &d, void *dl) {
        int64_t s = lo;
#if PHYSAI_LANES
        if (hi - lo >= 2) {
            s = lanes_blocks(variant, dl, s, hi, blocks);
        }
#else
        (void)dl;
#endif
        DerivWork<double> w(m);
        std::vector<double> x(size_t(m.nq + 2 * nv));
        double *xw[3] = {x.data(), x.data() + m.nq, x.data() + m.nq + nv};
        const double *xs[3] = {xw[0], xw[1], xw[2]};
        for (; s < hi && !failed.load(std::memory_order_relaxed); s++) {
            for (int k = 0; k < 3; k++)
                for (int64_t e = 0; e < sizes[k]; e++)
                    xw[k][e] = in[k].data[s * in[k].stride_state + e * in[k].stride_entry];
            double *o[3] = {out[0] + s * per, out[1] + s * per, out[2] + s * per};
            if (derivatives_op(m, d, w, op, xs, o) != OK) { failed = 1; return; }
            for (int k = 0; k < 3; k++)
                for (int64_t e = 0; e < per; e++)
                    if (!std::isfinite(o[k][e])) { failed = 1; return; }
        }
    };
    int64_t cost = N * int64_t(m.nlink + 1) * (nv + 1) * 4;       // about 4 crb's work per state
    schedule(m, variant, N, cost, work);
    if (failed) return nb::none();
    return nb::make_tuple(outs[0], outs[1], outs[2]);
}

}  // namespace

NB_MODULE(_native, mod) {
    if (_import_array() < 0) throw nb::python_error();
    mod.doc() = "physai's compiled engine backend: the kernels of physai.engine.algorithms in C++ (see cpp/engine.cpp)";
    nb::class_<NativeModel>(mod, "NativeModel")
        .def("__init__",
             [](NativeModel *self, int nq, int nv, int nlink, DArr gravity, IArr parent, IArr center, IArr relative,
                IArr dofadr, IArr dofnum, DArr mass, DArr ipos, DArr inertia, IArr kind, IArr qadr, DArr ref, DArr G,
                DArr brot, DArr bpos, DArr banchor, IArr dof_link, IArr dof_parent, DArr motion, DArr armature,
                IArr spring_q, DArr spring_k, DArr spring_ref, double static_mass, DArr static_com) {
                 NativeModel *m = new (self) NativeModel();
                 m->nq = nq, m->nv = nv, m->nlink = nlink;
                 auto sized = [](size_t got, size_t want, const char *what) {
                     if (got != want) throw nb::value_error(what);
                 };
                 sized(gravity.size(), 3, "gravity"), sized(static_com.size(), 3, "static_com");
                 for (int k = 0; k < 3; k++) m->gravity[k] = gravity.data()[k], m->static_com[k] = static_com.data()[k];
                 m->parent = ints(parent), m->center = ints(center), m->relative = ints(relative);
                 m->dofadr = ints(dofadr), m->dofnum = ints(dofnum);
                 m->mass = doubles(mass), m->ipos = doubles(ipos), m->inertia = doubles(inertia);
                 m->kind = ints(kind), m->qadr = ints(qadr), m->ref = doubles(ref), m->G = doubles(G);
                 m->brot = doubles(brot), m->bpos = doubles(bpos), m->banchor = doubles(banchor);
                 m->dof_link = ints(dof_link), m->dof_parent = ints(dof_parent);
                 m->motion = doubles(motion), m->armature = doubles(armature);
                 m->spring_q = ints(spring_q), m->spring_k = doubles(spring_k), m->spring_ref = doubles(spring_ref);
                 m->static_mass = static_mass;
                 size_t L = size_t(nlink), V = size_t(nv);
                 for (auto *v : {&m->parent, &m->center, &m->relative, &m->dofadr, &m->dofnum, &m->kind, &m->qadr})
                     sized(v->size(), L, "a per-link array");
                 sized(m->mass.size(), L, "mass"), sized(m->ipos.size(), 3 * L, "ipos"), sized(m->inertia.size(), 9 * L, "inertia");
                 sized(m->ref.size(), L, "ref"), sized(m->G.size(), 48 * L, "G"), sized(m->brot.size(), 9 * L, "ball rot");
                 sized(m->bpos.size(), 3 * L, "ball pos"), sized(m->banchor.size(), 3 * L, "ball anchor");
                 sized(m->dof_link.size(), V, "dof_link"), sized(m->dof_parent.size(), V, "dof_parent");
                 sized(m->motion.size(), 6 * V, "motion"), sized(m->armature.size(), V, "armature");
                 m->hinge.assign(L, 0), m->slide.assign(L, 0);
                 for (size_t i = 0; i < L; i++) {
                     if (m->kind[i] != 0) continue;
                     bool t = false, trig = false;
                     for (int a = 0; a < 12; a++) t |= m->G[48 * i + 4 * a + 1] != 0.0, trig |= m->G[48 * i + 4 * a + 2] != 0.0 || m->G[48 * i + 4 * a + 3] != 0.0;
                     m->hinge[i] = !t, m->slide[i] = !trig;
                 }
                 for (size_t i = 0; i < L; i++) {
                     if (m->parent[i] >= int64_t(i) || m->parent[i] < -1 || m->center[i] < 0 || m->center[i] >= int64_t(L) ||
                         m->dofnum[i] < 1 || m->dofnum[i] > 3 || m->dofadr[i] < 0 || m->dofadr[i] + m->dofnum[i] > int64_t(V) ||
                         m->qadr[i] < 0 || m->qadr[i] + (m->kind[i] ? 4 : 1) > nq)
                         throw nb::value_error("inconsistent link arrays");
                 }
                 for (size_t j = 0; j < V; j++)
                     if (m->dof_link[j] < 0 || m->dof_link[j] >= int64_t(L) || m->dof_parent[j] >= int64_t(j) || m->dof_parent[j] < -1)
                         throw nb::value_error("inconsistent dof arrays");
                 for (int64_t s : m->spring_q)
                     if (s < 0 || s >= nq) throw nb::value_error("spring index");
             })
        .def_ro("nq", &NativeModel::nq)
        .def_ro("nv", &NativeModel::nv)
        .def_ro("nlink", &NativeModel::nlink);
    mod.def("run", &run, nb::arg("model"), nb::arg("op"), nb::arg("a").none(), nb::arg("b").none(), nb::arg("c").none(),
            "op's result (see OPS) for float64 inputs (size,) or (N, size), or None when the NumPy path must decide");
    nb::dict ops;
    const char *names[NOPS] = {"rnea", "bias", "gravity", "mass_matrix", "forward_dynamics", "aba", "kinetic_energy",
                               "potential_energy", "energy"};
    for (int k = 0; k < NOPS; k++) ops[names[k]] = k;
    mod.attr("OPS") = ops;
    nb::class_<NativeSim>(mod, "NativeSim")
        .def("__init__",
             [](NativeSim *self, int nq, int nv, DArr damping, IArr scalar_q, IArr scalar_v, IArr quat_q, IArr quat_v, IArr spring_v,
                int nu, DArr moment, DArr qmoment, DArr gain, DArr bias, IArr ctrllimited, DArr ctrlrange, IArr forcelimited,
                DArr forcerange, IArr dof_forcelimited, DArr dof_forcerange, int nbody, IArr body_link, DArr body_point, IArr pattern) {
                 NativeSim *s = new (self) NativeSim();
                 s->nq = nq, s->nv = nv, s->nu = nu, s->nbody = nbody;
                 s->damping = doubles(damping);
                 s->scalar_q = ints(scalar_q), s->scalar_v = ints(scalar_v), s->quat_q = ints(quat_q), s->quat_v = ints(quat_v);
                 s->spring_v = ints(spring_v);
                 for (int64_t j : s->spring_v)
                     if (j < 0 || j >= nv) throw nb::value_error("spring dof");
                 s->moment = doubles(moment), s->qmoment = doubles(qmoment), s->gain = doubles(gain), s->bias = doubles(bias);
                 s->ctrllimited = ints(ctrllimited), s->ctrlrange = doubles(ctrlrange);
                 s->forcelimited = ints(forcelimited), s->forcerange = doubles(forcerange);
                 s->dof_forcelimited = ints(dof_forcelimited), s->dof_forcerange = doubles(dof_forcerange);
                 s->body_link = ints(body_link), s->body_point = doubles(body_point);
                 s->pattern = ints(pattern);
                 size_t U = size_t(nu), V = size_t(nv), Qn = size_t(nq), Bn = size_t(nbody);
                 if (nq < 0 || nv < 0 || nu < 0 || nbody < 0 || s->pattern.size() != V * V || s->damping.size() != V ||
                     s->moment.size() != U * V || s->qmoment.size() != U * Qn || s->gain.size() != 3 * U || s->bias.size() != 3 * U ||
                     s->ctrllimited.size() != U || s->ctrlrange.size() != 2 * U || s->forcelimited.size() != U ||
                     s->forcerange.size() != 2 * U || s->dof_forcelimited.size() != V || s->dof_forcerange.size() != 2 * V ||
                     s->body_link.size() != Bn || s->body_point.size() != 3 * Bn || s->scalar_q.size() != s->scalar_v.size() ||
                     s->quat_q.size() != s->quat_v.size())
                     throw nb::value_error("inconsistent simulation arrays");
                 for (size_t k = 0; k < s->scalar_q.size(); k++)
                     if (s->scalar_q[k] < 0 || s->scalar_q[k] >= nq || s->scalar_v[k] < 0 || s->scalar_v[k] >= nv)
                         throw nb::value_error("scalar coordinate index");
                 for (size_t k = 0; k < s->quat_q.size(); k++)
                     if (s->quat_q[k] < 0 || s->quat_q[k] + 4 > nq || s->quat_v[k] < 0 || s->quat_v[k] + 3 > nv)
                         throw nb::value_error("quaternion index");
             });
    mod.def("rollout", &rollout, nb::arg("model"), nb::arg("sim"), nb::arg("Q"), nb::arg("QD"), nb::arg("E"), nb::arg("status"),
            nb::arg("h"), nb::arg("integrator"), nb::arg("implicit_damping"), nb::arg("with_energy"), nb::arg("ctrl").none(),
            nb::arg("qfrc_applied").none(), nb::arg("xfrc_applied").none(),
            "N trajectories of euler (0), rk4 (1), implicit (2) or implicitfast (3) from Q[:, 0], QD[:, 0], in place; "
            "status[n]: -1, the first diverging step, or -2 (declined)");
    mod.def("jacobians", &jacobians, nb::arg("model"), nb::arg("q"), nb::arg("link"), nb::arg("point"),
            "(Jp; Jr) (6, nv) or (N, 6, nv) of a point (3,) fixed in a link, in the link's frame, for q (nq,) or (N, nq)");
    mod.def("configuration", &configuration, nb::arg("sim"), nb::arg("op"), nb::arg("x").none(), nb::arg("y").none(), nb::arg("h"),
            "integrate (op 0: q, v) or difference (op 1: q0, q1) for (size,) or (N, size) float64 arrays, or None");
    mod.def("body_poses", &body_poses, nb::arg("model"), nb::arg("q").none(), nb::arg("body_link"), nb::arg("body_pos"),
            nb::arg("body_rot"), "(pos, rot) of every body for q (nq,) or (N, nq), or None");
    mod.def("derivatives", &derivatives, nb::arg("model"), nb::arg("op"), nb::arg("a").none(), nb::arg("b").none(), nb::arg("c").none(),
            "(dtau/dq, dtau/dqd, M) (op 0: q, qd, qdd) or (dqdd/dq, dqdd/dqd, M^-1) (op 1: q, qd, tau), each (nv, nv) or "
            "(N, nv, nv), for float64 (size,) or (N, size) arrays, or None when the NumPy path must decide");
    mod.def("isa", &isa, "the instruction set the batch kernel runs with: avx512f, avx2 or default (baseline x86-64, "
            "SSE2; elsewhere the compiler's default); PHYSAI_ISA chooses at load time");
    mod.def("isas", &isas, "the batch kernel's variants this CPU supports, best first");
    mod.def("set_isa", &set_isa, nb::arg("name"),
            "run the batch kernel's variant name (one of isas()) from now on: true; false (and no change) otherwise");
    mod.def("lanes", [] { return ISA_VARIANTS[active_isa.load()].lanes; }, "states side by side in the batch kernel's variant");
    mod.def("num_threads", &num_threads, "threads a large batch runs on (PHYSAI_NUM_THREADS, else the hardware's)");
}
