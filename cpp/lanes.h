// The number types of the engine: double for one state, and lanes of states side by side for a batch (GCC/Clang
// vector extension: 8 doubles with AVX-512, 4 with AVX2, 2 with baseline x86-64's SSE2 or NEON), states innermost.
// Every kernel is written once for a number type T; the helpers below take the same operations in the same order for
// double and for lanes, so a state gives the same numbers alone or anywhere in a batch, on any instruction set.
//
// Linkage: the types are shared; every function of the engine's headers lives in an unnamed namespace, so each
// translation unit (one per instruction set, compiled with its own flags) keeps its own copy of the code and the
// linker never merges an AVX-512 copy into the baseline path (see cpp/kernels.h and scripts/check_isa_symbols.sh).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

namespace physai {

#if defined(__GNUC__)                                                   // GCC and Clang
#define PHYSAI_LANES 1
typedef double Lanes8 __attribute__((vector_size(64)));                 // 8 states: one AVX-512 register
typedef double Lanes4 __attribute__((vector_size(32)));                 // 4 states: AVX2
typedef double Lanes2 __attribute__((vector_size(16)));                 // 2 states: SSE2 (or NEON)
#else
#define PHYSAI_LANES 0
#endif

template <class T> constexpr int lanes_of = int(sizeof(T) / sizeof(double));   // states in a T: 1 for double
constexpr int BLOCK = 8;                                                // threads' chunks start at multiples of the widest lanes

namespace {

template <class T> inline T splat(double x) { return T{} + x; }        // x in every lane
template <> inline double splat<double>(double x) { return x; }

inline double vsqrt(double x) { return std::sqrt(x); }
inline bool any_zero(double x) { return x == 0.0; }
inline bool all_positive(double x) { return x > 0.0; }
inline double select(bool m, double a, double b) { return m ? a : b; }
inline bool lane_any(bool m) { return m; }
inline bool finite_all(double x) { return std::isfinite(x); }
// whether the n entries of x are all finite: v - v is 0 for a finite v and NaN otherwise (four sums side by side, no
// branch per entry, as scatter's check)
inline bool all_finite(const double *x, int64_t n) {
    double acc[4] = {0.0, 0.0, 0.0, 0.0};
    int64_t e = 0;
    for (; e + 4 <= n; e += 4)
        for (int k = 0; k < 4; k++) acc[k] = acc[k] + (x[e + k] - x[e + k]);
    for (; e < n; e++) acc[0] = acc[0] + (x[e] - x[e]);
    return (acc[0] + acc[1]) + (acc[2] + acc[3]) == 0.0;
}

// x clamped to [lo, hi] as std::min(std::max(x, lo), hi) (a NaN stays NaN)
inline double vclamp(double x, double lo, double hi) {
    double y = x < lo ? lo : x;
    return hi < y ? hi : y;
}

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
template <class L> inline bool finite_all(L x) {
    for (int i = 0; i < lanes_of<L>; i++)
        if (!std::isfinite(x[i])) return false;
    return true;
}
template <class L> inline L vclamp(L x, double lo, double hi) {
    L a = splat<L>(lo), b = splat<L>(hi);
    x = select(x < a, a, x);
    return select(x > b, b, x);
}
#endif

// x rounded to the nearest integer (ties to even) for |x| < 2^51, without a branch: adding and subtracting 1.5 * 2^52
// leaves no fraction bits
template <class T> inline T round_nearest(T x) {
    const double magic = 6755399441055744.0;                            // 1.5 * 2^52
    return (x + magic) - magic;
}

// sin x and cos x for |x| <= 1e5, the same operations for one state and for lanes:
// - Cody-Waite reduction: j = round(x 2/pi), r = x - j pi/2 with pi/2 split into DP1 + DP2 + DP3 (DP1 and DP2 have
//   trailing zero bits, so j DP1 and j DP2 are exact for the |j| that |x| <= 1e5 gives); |r| <= pi/4;
// - Cephes' minimax polynomials on [-pi/4, pi/4] (sin.c: sincof and coscof): sin r = r + r z P(z),
//   cos r = 1 - z/2 + z^2 Q(z) with z = r^2, each within about 1 ulp there;
// - the quadrant j mod 4 picks (sin, cos) = (s, c), (c, -s), (-s, -c) or (-c, s).
// sincos_any takes libm's sin and cos beyond |x| = 1e5 (where the reduction would lose digits).
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
    if constexpr (std::is_same_v<T, double>) {                          // one state: the same pick by j's last bits
        switch (int64_t(j) & 3) {
            case 0: s = sr, c = cr; break;
            case 1: s = cr, c = -sr; break;
            case 2: s = -sr, c = -cr; break;
            default: s = -cr, c = sr; break;
        }
    } else {
        T quad = j - 4.0 * round_nearest<T>((j - 1.5) * 0.25);          // j mod 4 in {0, 1, 2, 3}
        s = select(quad == 0.0, sr, select(quad == 1.0, cr, select(quad == 2.0, -sr, -cr)));
        c = select(quad == 0.0, cr, select(quad == 1.0, -sr, select(quad == 2.0, -cr, sr)));
    }
}

inline void sincos_any(double x, double &s, double &c) {
    if (std::fabs(x) <= 1e5) {
        sincos_poly<double>(x, s, c);
    } else {
        s = std::sin(x), c = std::cos(x);
    }
}

// libm's sin x and cos x (MuJoCo's mju_sin, mju_cos), lane by lane: where the last bit must be MuJoCo's
inline void sincos_libm(double x, double &s, double &c) { s = std::sin(x), c = std::cos(x); }

#if PHYSAI_LANES
#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 12)        // __builtin_shufflevector
#define PHYSAI_SHUFFLE 1
// one step of a transpose of W rows of lanes: rows i and j = i + B (i & B == 0) exchange their off-diagonal blocks of
// B entries (i's entries x with x & B from j, j's without from i); after B = 1, 2, .. W / 2 row l holds lane l
template <class L, int B, size_t... X> inline void swap_blocks(L &a, L &b, std::index_sequence<X...>) {
    constexpr int W = lanes_of<L>;
    const L lo = __builtin_shufflevector(a, b, int((X & B) == 0 ? X : W + X - B)...);
    const L hi = __builtin_shufflevector(a, b, int((X & B) == 0 ? X + B : W + X)...);
    a = lo, b = hi;
}
template <class L, int B> inline void transpose_step(L *r) {
    for (int i = 0; i < lanes_of<L>; i++)
        if ((i & B) == 0) swap_blocks<L, B>(r[i], r[i + B], std::make_index_sequence<lanes_of<L>>{});
}
// W rows of lanes r[k][l] into r[l][k] (W = lanes_of<L>)
template <class L> inline void transpose_lanes(L *r) {
    transpose_step<L, 1>(r);
    if constexpr (lanes_of<L> > 2) transpose_step<L, 2>(r);
    if constexpr (lanes_of<L> > 4) transpose_step<L, 4>(r);
}
#else
#define PHYSAI_SHUFFLE 0
#endif

// the lanes apart: to[l][e] = from[e][l] for e < n and the first count lanes (count <= lanes_of<L>), a copy; a full
// block W entries at a time (transposed in registers, each lane's W entries stored together), else each entry loaded
// once and its lanes stored to their states' arrays
template <class L> inline void lanes_apart(const L *from, size_t n, double *const *to, int64_t count) {
    if (count == lanes_of<L>) {                                         // a full block: its lanes known
        size_t e = 0;
#if PHYSAI_SHUFFLE
        constexpr int W = lanes_of<L>;
        for (; e + W <= n; e += W) {
            L r[W];
            for (int k = 0; k < W; k++) r[k] = from[e + k];
            transpose_lanes(r);
            for (int l = 0; l < W; l++) std::memcpy(to[l] + e, &r[l], sizeof(L));
        }
#endif
        for (; e < n; e++) {
            const L v = from[e];
            for (int l = 0; l < lanes_of<L>; l++) to[l][e] = v[l];
        }
        return;
    }
    for (size_t e = 0; e < n; e++) {
        const L v = from[e];
        for (int64_t l = 0; l < count; l++) to[l][e] = v[l];
    }
}

template <class L> inline void sincos_libm(L x, L &s, L &c) {
    for (int i = 0; i < lanes_of<L>; i++) s[i] = std::sin(x[i]), c[i] = std::cos(x[i]);
}
template <class L> inline void sincos_any(L x, L &s, L &c) {
    sincos_poly<L>(x, s, c);
    for (int i = 0; i < lanes_of<L>; i++)
        if (!(std::fabs(x[i]) <= 1e5)) {                                // the same numbers as for one state
            double si, ci;
            sincos_any(double(x[i]), si, ci);
            s[i] = si, c[i] = ci;
        }
}
#endif

}  // namespace
}  // namespace physai
