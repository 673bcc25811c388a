// Row kernels compiled plain, for AVX2 and for AVX-512, chosen at run time by the active instruction set (cpp/kernels.h's
// active_isa: the CPU's best, or PHYSAI_ISA): the same operations on each entry in wider vectors, no FMA, the same
// results. Used by the sparse Cholesky, rank-1 updates and dual problem of cpp/solver.h, forward.h's lu_apply and
// step_derivative.h:
//
//     subtract_rows<G, K>   y_g -= a_kg x_k for G rows and K sources (subtract_rows_set: a table by K and G)
//     subtract_sources      y -= sum_k a_k x_k over any count of sources, kMaxSources at a time
//     rotate_run            a rank-1 update's row (rotate_runs)
//     axpy_run              y -= L t (axpy_runs)
//     divide_run            L = w / d, w = 0 (divide_runs)
//     dot_sums              x . y in mju_dot's order, four sums in one vector (gram_run; solver.h's PGS sweeps together)
//     gram_run              A = B^T B over the dofs each two rows share, in mju_dot's order (gram_runs; solver.h's dual_problem)
#pragma once

#include <algorithm>
#include <cstring>

#include "kernels.h"

namespace physai {
namespace {

// y_g -= a_kg x_k for the G rows y_g (each of n) and the K rows x_k of L (on the same columns), k ascending: each y
// read and written once, each x once, every entry's subtractions in the order of k (the rows and x never overlap:
// ivdep lets the loop run in vectors, each entry's operations unchanged)
template <int G, int K>
__attribute__((always_inline)) inline void subtract_rows(double *const *y, const double *const *x, const double *a, int n) {
    double *yy[G];
    const double *xx[K];
    double aa[K * G];
    for (int g = 0; g < G; g++) yy[g] = y[g];
    for (int k = 0; k < K; k++) xx[k] = x[k];
    for (int c = 0; c < K * G; c++) aa[c] = a[c];
#pragma GCC ivdep
    for (int s = 0; s < n; s++)
        for (int g = 0; g < G; g++) {
            double t = yy[g][s];
            for (int k = 0; k < K; k++) t = t - aa[k * G + g] * xx[k][s];
            yy[g][s] = t;
        }
}

// subtract_rows compiled for AVX2 and AVX-512 too (the same operations on each entry, in wider vectors: no FMA, the
// same results), chosen at run time by the active instruction set (cpp/kernels.h's active_isa: the CPU's best, or
// PHYSAI_ISA); the cholesky's inner loop, sub[K - 1][G - 1] (subtract_rows_set)
constexpr int kMaxGroup = 6;                                         // a supernode's rows at most (a free joint's dofs)
constexpr int kMaxSources = 6;                                       // rows of L subtracted together at most
using SubtractRows = void (*)(double *const *, const double *const *, const double *, int);
template <int G, int K> void subtract_plain(double *const *y, const double *const *x, const double *a, int n) {
    subtract_rows<G, K>(y, x, a, n);
}
#if defined(__GNUC__) && (defined(__x86_64__) || defined(_M_X64))
#define PHYSAI_WIDE(isa) __attribute__((target(isa)))
#else
#define PHYSAI_WIDE(isa)
#endif
template <int G, int K> PHYSAI_WIDE("avx2") void subtract_avx2(double *const *y, const double *const *x, const double *a, int n) {
    subtract_rows<G, K>(y, x, a, n);
}
template <int G, int K> PHYSAI_WIDE("avx512f") void subtract_avx512(double *const *y, const double *const *x, const double *a,
                                                                   int n) {
    subtract_rows<G, K>(y, x, a, n);
}

// one run of a rank-1 update's row (batched_update): l = (L_j +- s x_j) / c as (L_j +- s x_j) cinv, then
// x_j = c x_j - s l, over n entries (L and x apart); compiled plain, for AVX2 and AVX-512 as subtract_rows (the same
// operations on each entry: no FMA, the same results)
template <bool Up> __attribute__((always_inline)) inline void rotate_run(double *__restrict L, double *__restrict x, double s,
                                                                         double c, double cinv, int n) {
    for (int j = 0; j < n; j++) {
        double xj = x[j], l = (Up ? L[j] + s * xj : L[j] - s * xj) * cinv;
        L[j] = l, x[j] = c * xj - s * l;
    }
}
// y_j -= L_j t over n entries (L^T y = b's updates, cholesky_solve_factored)
__attribute__((always_inline)) inline void axpy_run(double *__restrict y, const double *__restrict L, double t, int n) {
    for (int j = 0; j < n; j++) y[j] -= L[j] * t;
}
// L_j = w_j / d, w_j = 0 over n entries (a row of cholesky's factor out of its work row)
__attribute__((always_inline)) inline void divide_run(double *__restrict L, double *__restrict w, double d, int n) {
    for (int j = 0; j < n; j++) L[j] = w[j] / d, w[j] = 0.0;
}
using DivideRun = void (*)(double *, double *, double, int);
inline void divide_plain(double *L, double *w, double d, int n) { divide_run(L, w, d, n); }
PHYSAI_WIDE("avx2") inline void divide_avx2(double *L, double *w, double d, int n) { divide_run(L, w, d, n); }
PHYSAI_WIDE("avx512f") inline void divide_avx512(double *L, double *w, double d, int n) { divide_run(L, w, d, n); }
using RotateRun = void (*)(double *, double *, double, double, double, int);
using AxpyRun = void (*)(double *, const double *, double, int);
template <bool Up> void rotate_plain(double *L, double *x, double s, double c, double ci, int n) { rotate_run<Up>(L, x, s, c, ci, n); }
template <bool Up> PHYSAI_WIDE("avx2") void rotate_avx2(double *L, double *x, double s, double c, double ci, int n) {
    rotate_run<Up>(L, x, s, c, ci, n);
}
template <bool Up> PHYSAI_WIDE("avx512f") void rotate_avx512(double *L, double *x, double s, double c, double ci, int n) {
    rotate_run<Up>(L, x, s, c, ci, n);
}
inline void axpy_plain(double *y, const double *L, double t, int n) { axpy_run(y, L, t, n); }
PHYSAI_WIDE("avx2") inline void axpy_avx2(double *y, const double *L, double t, int n) { axpy_run(y, L, t, n); }
PHYSAI_WIDE("avx512f") inline void axpy_avx512(double *y, const double *L, double t, int n) { axpy_run(y, L, t, n); }
#undef PHYSAI_WIDE

// the wide kernels' instruction set: 0 plain, 1 AVX2, 2 AVX-512 (cpp/kernels.h's active_isa)
inline int wide_isa() {
    int isa = 0;
#if defined(__GNUC__) && (defined(__x86_64__) || defined(_M_X64))
    const char *name = isa_kernels(active_isa()).name;
    isa = std::strcmp(name, "avx512f") == 0 ? 2 : std::strcmp(name, "avx2") == 0 ? 1 : 0;
#endif
    return isa;
}

// rotate_run for the active instruction set: [0] a downdate, [1] an update
inline void rotate_runs(RotateRun *rot) {
    const RotateRun table[3][2] = {{rotate_plain<false>, rotate_plain<true>}, {rotate_avx2<false>, rotate_avx2<true>},
                                   {rotate_avx512<false>, rotate_avx512<true>}};
    const int isa = wide_isa();
    rot[0] = table[isa][0], rot[1] = table[isa][1];
}

// divide_run for the active instruction set
inline DivideRun divide_runs() {
    const DivideRun table[3] = {divide_plain, divide_avx2, divide_avx512};
    return table[wide_isa()];
}

// axpy_run for the active instruction set
inline AxpyRun axpy_runs() {
    const AxpyRun table[3] = {axpy_plain, axpy_avx2, axpy_avx512};
    return table[wide_isa()];
}

template <int K> void subtract_rows_set_k(SubtractRows (*sub)[kMaxGroup], int isa) {
    const SubtractRows table[3][kMaxGroup] = {
        {subtract_plain<1, K>, subtract_plain<2, K>, subtract_plain<3, K>, subtract_plain<4, K>, subtract_plain<5, K>,
         subtract_plain<6, K>},
        {subtract_avx2<1, K>, subtract_avx2<2, K>, subtract_avx2<3, K>, subtract_avx2<4, K>, subtract_avx2<5, K>,
         subtract_avx2<6, K>},
        {subtract_avx512<1, K>, subtract_avx512<2, K>, subtract_avx512<3, K>, subtract_avx512<4, K>, subtract_avx512<5, K>,
         subtract_avx512<6, K>}};
    std::copy(table[isa], table[isa] + kMaxGroup, sub[K - 1]);
}

// the subtract_rows of K = 1 .. kMaxSources rows of L into G = 1 .. kMaxGroup rows for the active instruction set
inline void subtract_rows_set(SubtractRows (*sub)[kMaxGroup]) {
    const int isa = wide_isa();
    subtract_rows_set_k<1>(sub, isa), subtract_rows_set_k<2>(sub, isa), subtract_rows_set_k<3>(sub, isa);
    subtract_rows_set_k<4>(sub, isa), subtract_rows_set_k<5>(sub, isa), subtract_rows_set_k<6>(sub, isa);
}

// y (n) -= sum_k a_k x(k) over the count sources k ascending (x(k): source k's row): kMaxSources at a time in sub's
// kernels (subtract_rows_set), or without sub one at a time inline (few columns); each entry's operations in k's order
template <class Source>
__attribute__((always_inline)) inline void subtract_sources(const SubtractRows (*sub)[kMaxGroup], double *y, Source x,
                                                            const double *a, int count, int n) {
    const double *xs[kMaxSources];
    const int step = sub ? kMaxSources : 1;
    for (int k0 = 0; k0 < count; k0 += step) {
        const int K = std::min(step, count - k0);
        for (int k = 0; k < K; k++) xs[k] = x(k0 + k);
        if (sub) sub[K - 1][0](&y, xs, a + k0, n);
        else subtract_rows<1, 1>(&y, xs, a + k0, n);
    }
}

// x . y over len entries in mju_dot's order (solver.h's dot_mj): the four running sums (s0, s1, s2, s3) as one vector
// of four, (s0 + s2) + (s1 + s3), then the last one to three entries added together; compiled plain (two SSE2 pairs) or
// for AVX2 (one vector) by its caller: no FMA, the same results
typedef double GramSums __attribute__((vector_size(32)));
__attribute__((always_inline)) inline double dot_sums(const double *x, const double *y, int len) {
    int j = 0;
    GramSums acc = {0.0, 0.0, 0.0, 0.0};
    for (; j + 4 <= len; j += 4) {
        GramSums u, v;
        std::memcpy(&u, x + j, sizeof u), std::memcpy(&v, y + j, sizeof v);
        acc = acc + u * v;
    }
    double s = (acc[0] + acc[2]) + (acc[1] + acc[3]);
    if (len - j == 3) s += x[j] * y[j] + x[j + 1] * y[j + 1] + x[j + 2] * y[j + 2];
    else if (len - j == 2) s += x[j] * y[j] + x[j + 1] * y[j + 1];
    else if (len - j == 1) s += x[j] * y[j];
    return s;
}

// A_ik = A_ki = B_i . B_k for n rows B_i of B (nv apart), each over the dofs both reach ([lo, hi) of each; 0.0 when
// none), dot_sums
__attribute__((always_inline)) inline void gram_run(const double *B, const int *lo, const int *hi, int n, int nv, double *A) {
    for (int i = 0; i < n; i++)
        for (int k = 0; k <= i; k++) {
            int a = std::max(lo[i], lo[k]), e = std::min(hi[i], hi[k]);
            double s = a < e ? dot_sums(B + size_t(i) * size_t(nv) + a, B + size_t(k) * size_t(nv) + a, e - a) : 0.0;
            A[size_t(i) * size_t(n) + size_t(k)] = A[size_t(k) * size_t(n) + size_t(i)] = s;
        }
}
using GramRun = void (*)(const double *, const int *, const int *, int, int, double *);
inline void gram_plain(const double *B, const int *lo, const int *hi, int n, int nv, double *A) { gram_run(B, lo, hi, n, nv, A); }
#if defined(__GNUC__) && (defined(__x86_64__) || defined(_M_X64))
__attribute__((target("avx2"))) inline void gram_avx2(const double *B, const int *lo, const int *hi, int n, int nv, double *A) {
    gram_run(B, lo, hi, n, nv, A);
}
#else
inline void gram_avx2(const double *B, const int *lo, const int *hi, int n, int nv, double *A) { gram_run(B, lo, hi, n, nv, A); }
#endif

// gram_run for the active instruction set (AVX-512's the AVX2 one: four sums fill one 256-bit vector)
inline GramRun gram_runs() { return wide_isa() == 0 ? gram_plain : gram_avx2; }

}  // namespace
}  // namespace physai
