// MuJoCo's Newton, CG and PGS solvers of the forward constraint problem (src/physai/engine/solver.py: engine_solver.c), function by
// function with the NumPy text's names, stages and algorithm choices, one state at a time on the rows of
// cpp/constraint.h (compiled into the scalar translation unit only):
//
//     solve(m, w, ...)                           Newton's method with an exact line search (mj_solNewton's stopping
//                                                rules), from the unconstrained accelerations or a warm start
//     solve_cg(m, w, ...)                        conjugate gradients on the same primal problem (mj_solCG)
//     solve_pgs(m, w, ...)                       projected Gauss-Seidel on the dual problem (mj_solPGS), AR dense:
//                                                pgs_setup, then pgs_extrapolate, a sweep and pgs_advance each
//                                                iteration, then pgs_finish
//     pgs_together(w, count)                     the iterations of several solves set up at once, their one-row sweeps
//                                                interleaved (the constrained lanes'; a schedule, the same numbers)
//     noslip(m, w, ...)                          the friction forces again without R (mj_solNoSlip)
//     solve_with(m, w, ...)                      the one m.opt_solver names, then noslip: on each island alone
//                                                (island.h) when m.opt_island
//
// M is factored by Cholesky on the tree's pattern (the model's sparse layout of M, forward.h: no fill-in); so is the
// Hessian M + J^T D J when every row lies on one chain of the tree (contacts with the world, friction loss, limits),
// else on its sparse pattern with the elimination's fill-in (factor_pattern, as MuJoCo's sparse Cholesky: the same
// elimination as forward.h's cholesky_solve, written as row updates); it is updated by rank-1 updates when a few rows changed state and refactored when many did or a contact is on
// its cone. Its buffers are in the caller's ConstraintWork (cpp/constraint.h). The sparse factor's loops run over runs
// of consecutive columns in kernels compiled plain, for AVX2 and AVX-512 (wide.h's subtract_rows, rotate_run, axpy_run,
// divide_run: the same operations on each entry, no FMA), and its rank-1 updates go 8 to a sweep (batched_update): a
// workspace schedule, every entry's operations those of one update after another.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <utility>
#include <vector>

#include "collision.h"
#include "constraint.h"
#include "data.h"
#include "forward.h"
#include "island.h"
#include "kernels.h"
#include "model.h"
#include "wide.h"

namespace physai {
namespace {

// ---------------------------------------------------------------- small helpers

constexpr int kUpdateBatch = 8;                                      // rank-1 updates in one sweep over L (batched_update)
constexpr int kMaxRun = 65535;                                       // a run's entries at most, less one (w.Lrun: 16 bits)
constexpr int kShortRun = 4;                                         // runs shorter go inline, not through the wide
                                                                     // kernels' pointers (the same operations on each entry)

// v resized to n, its capacity exactly n when it grows (std::vector's resize may double it: the factor's arrays are
// large)
template <class V> inline void resize_exact(V &v, size_t n) {
    if (v.capacity() < n) {
        V u;
        u.reserve(n);
        u.assign(v.begin(), v.end());
        v.swap(u);
    }
    v.resize(n);
}

// the row k of L holding entry a (w.Ladr[k] <= a < w.Ladr[k + 1])
inline int row_of(const ConstraintWork &w, int a) {
    return int(std::upper_bound(w.Ladr.begin(), w.Ladr.end(), a) - w.Ladr.begin()) - 1;
}

// the first entry of entry a's run (consecutive columns in its row; runs longer than kMaxRun + 1 in pieces)
inline int run_start(const uint16_t *run, int a) { return a - int(run[a]); }

// true when column i joins the supernode of columns i+1..hi: the entries of column i in the rows below hi are in the
// same rows as column hi's (nt of them), each just left of column i+1's, and column i has no other rows below hi
inline bool joins_group(const ConstraintWork &w, int i, int hi, int nt) {
    const int *tadr = w.Ltadr.data(), *tent = w.Ltent.data(), *col = w.Lcol.data();
    if (tadr[i + 1] - tadr[i] < nt) return false;
    for (int t = 0; t < nt; t++) {                                      // (an entry left of a diagonal: the next
        int a = tadr[i] + t, b = tadr[i + 1] + t;                       // entry is in its row) column i's and column
        if (tent[a] != tent[b] - 1 || col[tent[a]] != i) return false;  // i+1's t-th entries
    }
    int rest = tadr[i] + nt;                                            // column i's next entry is in a row <= hi
    return rest == tadr[i + 1] || tent[rest] < w.Ladr[size_t(hi) + 1];
}

// the supernodes (w.Lgroup, w.Lgroupnt): from the last row down, consecutive rows grouped while joins_group
inline void supernodes(ConstraintWork &w, int nv) {
    w.Lgroup.assign(size_t(nv), 0), w.Lgroupnt.assign(size_t(nv), 0);
    for (int hi = nv - 1; hi >= 0;) {
        int nt = w.Ltadr[size_t(hi) + 1] - w.Ltadr[size_t(hi)], lo = hi;
        while (lo > 0 && hi - lo + 1 < kMaxGroup && joins_group(w, lo - 1, hi, nt)) lo--;
        for (int i = lo; i <= hi; i++) w.Lgroup[size_t(i)] = lo, w.Lgroupnt[size_t(i)] = nt;
        hi = lo - 1;
    }
}

// factor_pattern's layout from the rows' columns before the fill-in (w.Lrows): the fill-in of the elimination, then the
// rows (w.Ladr, w.Lcol), the columns (w.Ltadr, w.Ltent), the runs (w.Lrun) and the supernodes; the arrays of one
// entry each sized exactly
inline void factor_layout(ConstraintWork &w, int nv) {
    std::vector<std::vector<int>> &rows = w.Lrows;
    std::vector<int> merged;
    for (int k = nv - 1; k >= 0; k--) {
        std::vector<int> &row = rows[size_t(k)];
        if (row.size() < 2) continue;
        std::vector<int> &parent = rows[size_t(row[row.size() - 2])];     // row p gains row k's columns left of p
        merged.clear();
        std::set_union(row.begin(), row.end() - 2, parent.begin(), parent.end(), std::back_inserter(merged));
        parent.assign(merged.begin(), merged.end());                    // copied, not swapped: each row keeps a buffer
                                                                        // of its own size (swaps passed the largest
                                                                        // around, every row's growing to it over solves)
    }
    w.Ladr.assign(1, 0);
    for (int k = 0; k < nv; k++) w.Ladr.push_back(w.Ladr.back() + int(rows[size_t(k)].size()));
    resize_exact(w.Lcol, size_t(w.Ladr.back()));
    for (int k = 0; k < nv; k++) std::copy(rows[size_t(k)].begin(), rows[size_t(k)].end(), w.Lcol.begin() + w.Ladr[size_t(k)]);
    // the columns: column j's entries left of the diagonal (their index in Lcol) by row descending
    w.Ltadr.assign(size_t(nv) + 1, 0);
    for (int k = 0; k < nv; k++)
        for (int a = w.Ladr[size_t(k)]; a < w.Ladr[size_t(k) + 1] - 1; a++) w.Ltadr[size_t(w.Lcol[size_t(a)]) + 1]++;
    for (int j = 0; j < nv; j++) w.Ltadr[size_t(j) + 1] += w.Ltadr[size_t(j)];
    resize_exact(w.Ltent, size_t(w.Ltadr[size_t(nv)]));
    std::vector<int> fill(w.Ltadr.begin(), w.Ltadr.end() - 1);
    for (int k = nv - 1; k >= 0; k--)
        for (int a = w.Ladr[size_t(k)]; a < w.Ladr[size_t(k) + 1] - 1; a++) w.Ltent[size_t(fill[size_t(w.Lcol[size_t(a)])]++)] = a;
    // the runs: an entry continues the run of the entry before it when their columns are consecutive (and the run has
    // fewer than kMaxRun + 1 entries: a longer one is taken in pieces, the same entries); Lrun its distance to the start
    resize_exact(w.Lrun, w.Lcol.size());
    for (int k = 0; k < nv; k++)
        for (int a = w.Ladr[size_t(k)]; a < w.Ladr[size_t(k) + 1]; a++) {
            bool more = a > w.Ladr[size_t(k)] && w.Lcol[size_t(a) - 1] == w.Lcol[size_t(a)] - 1 && w.Lrun[size_t(a) - 1] < kMaxRun;
            w.Lrun[size_t(a)] = more ? uint16_t(w.Lrun[size_t(a) - 1] + 1) : uint16_t(0);
        }
    // the leading entries each row shares with the row before it (the same columns)
    w.Lsame.assign(size_t(nv), 0);
    for (int k = 1; k < nv; k++) {
        const int *a = w.Lcol.data() + w.Ladr[size_t(k)], *b = w.Lcol.data() + w.Ladr[size_t(k) - 1];
        int n = std::min(w.Ladr[size_t(k) + 1] - w.Ladr[size_t(k)], w.Ladr[size_t(k)] - w.Ladr[size_t(k) - 1]), same = 0;
        while (same < n && a[same] == b[same]) same++;
        w.Lsame[size_t(k)] = same;
    }
    supernodes(w, nv);
    if (w.LH.size() < w.Lcol.size()) resize_exact(w.LH, w.Lcol.size());
    if (w.Lwork.size() < size_t(kMaxGroup) * size_t(nv)) w.Lwork.assign(size_t(kMaxGroup) * size_t(nv), 0.0);
}

// the pattern of H's factor when the rows are not chains (w.Ladr, w.Lcol: row k's columns left of its diagonal
// ascending, then k): M's on the tree's pattern and each group's columns pairwise, over every row whatever its state
// (a contact's rows share their columns, so its cone's J_c^T H_c J_c is inside), with the fill-in of the elimination from
// the last row to the first (MuJoCo's mju_cholFactorSymbolic: row k's columns left of its parent p, its last column
// left of the diagonal, merged into row p's)
inline void factor_pattern(const Model &m, ConstraintWork &w) {
    const int nv = m.nv;
    std::vector<std::vector<int>> &rows = w.Lrows;
    rows.resize(size_t(nv));
    for (int i = 0; i < nv; i++) rows[size_t(i)].assign(m.M_colind + m.M_rowadr[i], m.M_colind + m.M_rowadr[i] + m.M_rownnz[i]);
    for_each_group(w.r, [&](int, int, int nc, const int *cols) {
        for (int a = 0; a < nc; a++) rows[size_t(cols[a])].insert(rows[size_t(cols[a])].end(), cols, cols + a + 1);
    });
    w.Hadr.assign(1, 0), w.Hcol.clear();
    for (std::vector<int> &row : rows) {
        std::sort(row.begin(), row.end());
        row.erase(std::unique(row.begin(), row.end()), row.end());
        w.Hcol.insert(w.Hcol.end(), row.begin(), row.end()), w.Hadr.push_back(int(w.Hcol.size()));   // H's own entries
    }
    // the entry of H each group's pair of columns and each of M's entries adds to (hessian's order; its searches' entry)
    const int *Hcol = w.Hcol.data();
    auto entry = [&](int i, int j) { return int(std::lower_bound(Hcol + w.Hadr[size_t(i)], Hcol + w.Hadr[size_t(i) + 1], j) - Hcol); };
    w.Hentry.clear();
    for_each_group(w.r, [&](int, int, int nc, const int *cols) {
        for (int a = 0; a < nc; a++)
            for (int b = 0; b <= a; b++) w.Hentry.push_back(entry(cols[a], cols[b]));
    });
    for (int k = 0; k < nv; k++)
        for (int64_t a = m.M_rowadr[k]; a < m.M_rowadr[k] + m.M_rownnz[k]; a++) w.Hentry.push_back(entry(k, int(m.M_colind[a])));
    factor_layout(w, nv);
}

// the inputs factor_pattern's layout is made from into key: nv, M's pattern row by row, each group's columns
inline void pattern_key(const Model &m, const Rows &r, std::vector<int> &key) {
    size_t size = 1 + size_t(m.nv);                                    // sized first, then written in place
    for (int i = 0; i < m.nv; i++) size += size_t(m.M_rownnz[i]);
    for_each_group(r, [&](int, int, int nc, const int *) { size += 1 + size_t(nc); });
    key.resize(size);
    int *k = key.data();
    *k++ = m.nv;
    for (int i = 0; i < m.nv; i++) {
        *k++ = int(m.M_rownnz[i]);
        for (int64_t a = m.M_rowadr[i]; a < m.M_rowadr[i] + m.M_rownnz[i]; a++) *k++ = int(m.M_colind[a]);
    }
    for_each_group(r, [&](int, int, int nc, const int *cols) {
        *k++ = -nc;
        k = std::copy(cols, cols + nc, k);
    });
}

// w's layout of H's factor and the layout kept in slot exchanged (every field with its key: each side stays whole)
inline void swap_layout(ConstraintWork &w, FactorLayout &slot) {
    w.Lkey.swap(slot.key), w.Ladr.swap(slot.Ladr), w.Lcol.swap(slot.Lcol), w.Ltadr.swap(slot.Ltadr);
    w.Ltent.swap(slot.Ltent), w.Lgroup.swap(slot.Lgroup), w.Lgroupnt.swap(slot.Lgroupnt), w.Lsame.swap(slot.Lsame);
    w.Lrun.swap(slot.Lrun), w.Hadr.swap(slot.Hadr), w.Hcol.swap(slot.Hcol), w.Hentry.swap(slot.Hentry);
}

// factor_pattern's layout, kept between solves (a workspace cache, not an algorithm of its own: the layout is a function
// of pattern_key's inputs, and the NumPy engine makes the same one every solve): the layout of slot w.layout_slot (an
// island's ordinal, 0 without islands) taken into w and made afresh only when the key of the rows differs from the one
// it was made from (a pile whose contacts stay keeps its islands' layouts: MuJoCo's mju_cholFactorSymbolic every step
// costs as much as a numeric factorisation). Returns the slot, which the caller gives back (swap_layout) when done.
inline FactorLayout &kept_factor_pattern(const Model &m, ConstraintWork &w) {
    if (w.layouts.size() <= w.layout_slot) w.layouts.resize(w.layout_slot + 1);
    FactorLayout &slot = w.layouts[w.layout_slot];
    swap_layout(w, slot);
    pattern_key(m, w.r, w.key_scratch);
    if (w.key_scratch != w.Lkey) {
        factor_pattern(m, w);
        w.Lkey.swap(w.key_scratch);
    } else {                                                           // the kept layout: the buffers it needs
        if (w.LH.size() < w.Lcol.size()) resize_exact(w.LH, w.Lcol.size());
        if (w.Lwork.size() < size_t(kMaxGroup) * size_t(m.nv)) w.Lwork.assign(size_t(kMaxGroup) * size_t(m.nv), 0.0);
    }
    return slot;
}

// H = L^T L for H symmetric positive definite on the pattern of factor_pattern (w.Ladr, w.Lcol: row k's columns
// ascending, its diagonal last; L into w.LH, every entry written; H's lower triangle read from its own entries, w.Hval at
// w.Hadr, w.Hcol: the fill-in's entries start at zero in w.Lwork), the rows eliminated from
// the last to the first (MuJoCo's mj_factorM order: a dof coupled to its ancestors only, a tree's pattern, fills in
// nothing; mju_cholFactorNumeric): row i gathers H_ij - sum_k L_ki L_kj over the rows k > i with L_ki != 0 (k
// descending, in w.Lwork: the updates of the elimination, in its order; row k's entries run by run of consecutive
// columns, each run one contiguous loop), then is scaled by its pivot's square root. false on a non-positive pivot.
// A supernode's rows (supernodes) take the rows below it together, each such row read once (subtract_rows), before
// their own updates among themselves: every entry's subtractions in the same order, the same factor to the bit.
// A dense pattern (an island of two free bodies in contact) goes by cholesky_dense: the same operations.
inline bool cholesky_dense(ConstraintWork &w, int n);
inline bool cholesky(ConstraintWork &w, int n) {
    if (w.Ladr[size_t(n)] == n * (n + 1) / 2) return cholesky_dense(w, n);   // every row full: the dense lower triangle
    double *L = w.LH.data();
    const double *Hval = w.Hval.data();
    const int *adr = w.Ladr.data(), *col = w.Lcol.data(), *tadr = w.Ltadr.data(), *tent = w.Ltent.data();
    const int *Hadr = w.Hadr.data(), *Hcol = w.Hcol.data();
    const uint16_t *run = w.Lrun.data();
    SubtractRows sub[kMaxSources][kMaxGroup];
    subtract_rows_set(sub);
    const DivideRun divide = divide_runs();
    for (int hi = n - 1; hi >= 0;) {
        const int lo = w.Lgroup[size_t(hi)], G = hi - lo + 1, nt = w.Lgroupnt[size_t(hi)];
        double *work[kMaxGroup];
        double x[kMaxSources * kMaxGroup];
        for (int g = 0; g < G; g++) {                                   // row hi - g into work[g]
            work[g] = w.Lwork.data() + size_t(g) * size_t(n);
            const int i = hi - g;
            for (int a = Hadr[i]; a < Hadr[i + 1]; a++) work[g][Hcol[a]] = Hval[a];   // (zero elsewhere)
        }
        for (int t = 0; t < nt;) {                                      // H_ij -= L_ki L_kj for the rows k below hi
            // the next rows k (up to kMaxSources, each the row before the last) whose columns up to lo are the same (a
            // free body's rows, w.Lsame): together
            int e[kMaxSources], k0[kMaxSources], K = 1, row = row_of(w, tent[tadr[hi] + t]);
            e[0] = tent[tadr[hi] + t], k0[0] = adr[row];
            const int len = e[0] - (G - 1) - k0[0];                    // entries left of column lo
            while (K < kMaxSources && t + K < nt) {
                int ek = tent[tadr[hi] + t + K], kk = adr[row - 1];
                if (ek < kk || ek >= adr[row] || ek - (G - 1) - kk != len || w.Lsame[size_t(row)] < len) break;
                e[K] = ek, k0[K] = kk, K++, row--;
            }
            for (int k = 0; k < K; k++)
                for (int g = 0; g < G; g++) x[k * G + g] = L[e[k] - g];
            const int elo = e[0] - (G - 1);
            for (int b = elo; b >= k0[0]; b = run_start(run, b) - 1) {  // the columns up to lo: every row of the group
                const int r0 = run_start(run, b);
                double *y[kMaxGroup];
                const double *xs[kMaxSources];
                for (int g = 0; g < G; g++) y[g] = work[g] + col[r0];
                for (int k = 0; k < K; k++) xs[k] = L + k0[k] + (r0 - k0[0]);
                sub[K - 1][G - 1](y, xs, x, b - r0 + 1);
            }
            for (int k = 0; k < K; k++) {                               // columns lo+1 .. hi-g: row hi - g only
                const double *Lg = L + e[k] - (G - 1);                 // row k's entries of columns lo .. hi
                for (int g = 0; g < G - 1; g++) {
                    double xg = x[k * G + g], *wg = work[g] + lo;
                    for (int j = 1; j <= G - 1 - g; j++) wg[j] = wg[j] - xg * Lg[j];
                }
            }
            t += K;
        }
        for (int g = 0; g < G; g++) {                                   // the group's rows, hi first
            const int i = hi - g;
            double *Li = L + adr[i];
            const int *ci = col + adr[i], ni = adr[i + 1] - adr[i] - 1;
            for (int t = tadr[i] + nt; t < tadr[i + 1]; t++) {          // H_ij -= L_ki L_kj for the rows i < k <= hi
                int e = tent[t], k0 = adr[row_of(w, e)];
                double xk = L[e];
                for (int b = e; b >= k0; b = run_start(run, b) - 1) {
                    const int r0 = run_start(run, b);
                    double *y = work[g] + col[r0];
                    const double *xs = L + r0;
                    if (b - r0 + 1 >= kShortRun) sub[0][0](&y, &xs, &xk, b - r0 + 1);
                    else subtract_rows<1, 1>(&y, &xs, &xk, b - r0 + 1);  // short: inline
                }
            }
            const double pivot = work[g][i];
            if (!(pivot > 0.0)) {
                for (int h = g; h < G; h++)
                    for (int a = adr[hi - h]; a < adr[hi - h + 1]; a++) work[h][col[a]] = 0.0;
                return false;
            }
            const double d = std::sqrt(pivot);
            for (int e = ni; e >= 0;) {                                 // row i out of work[g] over d, run by run
                const int a0 = run_start(run, adr[i] + e) - adr[i];
                divide(Li + a0, work[g] + ci[a0], d, e - a0 + 1);
                e = a0 - 1;
            }
            Li[ni] = d;
        }
        hi = lo - 1;
    }
    return true;
}

// cholesky on a dense pattern (row k's columns 0 .. k at w.Ladr[k] = k (k + 1) / 2): row i gathers H_ij - L_ki L_kj over
// the rows k > i descending, each row k's entries in one contiguous loop (axpy_run), in w.Lwork's first i + 1 entries
// (left zero, as cholesky leaves them), then over its pivot's square root: each entry's operations cholesky's, in its
// order, without its runs' and supernodes' bookkeeping. false on a non-positive pivot.
inline bool cholesky_dense(ConstraintWork &w, int n) {
    double *L = w.LH.data(), *row = w.Lwork.data();
    const double *Hval = w.Hval.data();
    const int *adr = w.Ladr.data(), *Hadr = w.Hadr.data(), *Hcol = w.Hcol.data();
    for (int i = n - 1; i >= 0; i--) {
        for (int a = Hadr[i]; a < Hadr[i + 1]; a++) row[Hcol[a]] = Hval[a];   // (zero elsewhere)
        for (int k = n - 1; k > i; k--) axpy_run(row, L + adr[k], L[adr[k] + i], i + 1);
        const double pivot = row[i];
        if (!(pivot > 0.0)) {
            std::fill(row, row + i + 1, 0.0);
            return false;
        }
        const double d = std::sqrt(pivot);
        double *Li = L + adr[i];
        for (int j = 0; j < i; j++) Li[j] = row[j] / d, row[j] = 0.0;
        Li[i] = d, row[i] = 0.0;
    }
    return true;
}

// t_j -= L_j[a] b[c[a]] for a = 0 .. n - 1 ascending, for B rows L_j with the same columns c side by side (each row's
// sum in its own order: B independent chains of subtractions instead of one)
template <int B> inline void rows_dot(const double *const *Lr, const int *c, const double *b, int n, double *t) {
    double s[B];
    for (int j = 0; j < B; j++) s[j] = t[j];
    for (int a = 0; a < n; a++) {
        const double x = b[c[a]];
        for (int j = 0; j < B; j++) s[j] = s[j] - Lr[j][a] * x;
    }
    for (int j = 0; j < B; j++) t[j] = s[j];
}

// x with L^T L x = b from cholesky's factor, over b; run: w.Lrun (L^T y's updates of one row, each to its own entry of
// b, run by run of consecutive columns: contiguous loops, the same operations); same: w.Lsame (L x = y's rows k, k + 1,
// ... that begin with row k's columns left of k, up to kMaxGroup of them, summed over those columns side by side
// (rows_dot), then each over the rest of its columns in turn: every row's sum in its own order, the same operations)
// A dense pattern (an island of two free bodies in contact) goes by cholesky_solve_dense: the same operations.
inline void cholesky_solve_dense(const double *L, int n, double *b);
inline void cholesky_solve_factored(const double *L, const int *adr, const int *col, const uint16_t *run, const int *same,
                                    int n, double *b) {
    if (adr[n] == n * (n + 1) / 2) return cholesky_solve_dense(L, n, b);   // every row full: the dense lower triangle
    const AxpyRun axpy = axpy_runs();
    for (int k = n - 1; k >= 0; k--) {                                 // L^T y = b
        const double *Lk = L + adr[k];
        const int nk = adr[k + 1] - adr[k] - 1;
        double y = b[k] / Lk[nk];
        b[k] = y;
        for (int e = adr[k] + nk - 1; e >= adr[k];) {                   // the runs from the last (axpy_run)
            const int r0 = run_start(run, e);
            if (e - r0 + 1 >= kShortRun) axpy(b + col[r0], L + r0, y, e - r0 + 1);
            else axpy_run(b + col[r0], L + r0, y, e - r0 + 1);         // short: inline
            e = r0 - 1;
        }
    }
    for (int k = 0; k < n;) {                                          // L x = y
        const int nk = adr[k + 1] - adr[k] - 1;                        // row k's columns left of k: x there known
        int B = 1, c = nk;
        while (B < kMaxGroup && k + B < n && same[k + B] >= c) B++;         // rows that begin with them
        const double *Lr[kMaxGroup];
        double t[kMaxGroup];
        for (int j = 0; j < B; j++) Lr[j] = L + adr[k + j], t[j] = b[k + j];
        switch (B) {                                                   // the shared columns 0 .. c - 1, side by side
            case 1: rows_dot<1>(Lr, col + adr[k], b, c, t); break;
            case 2: rows_dot<2>(Lr, col + adr[k], b, c, t); break;
            case 3: rows_dot<3>(Lr, col + adr[k], b, c, t); break;
            case 4: rows_dot<4>(Lr, col + adr[k], b, c, t); break;
            case 5: rows_dot<5>(Lr, col + adr[k], b, c, t); break;
            default: rows_dot<6>(Lr, col + adr[k], b, c, t); break;
        }
        for (int j = 0; j < B; j++) {                                  // then each row's other columns, in turn
            const double *Lj = Lr[j];
            const int *cj = col + adr[k + j], nj = adr[k + j + 1] - adr[k + j] - 1;
            double s = t[j];
            for (int a = c; a < nj; a++) s -= Lj[a] * b[cj[a]];
            b[k + j] = s / Lj[nj];
        }
        k += B;
    }
}

// L x = y's rows k .. k + B - 1 of a dense factor (row i at i (i + 1) / 2), over b: their sums over the columns left of
// k side by side (B independent chains), then each row's over the columns k .. of the rows before it, in turn; each
// row's subtractions over its columns ascending, as cholesky_solve_factored's rows_dot and its loop over the rest
template <int B> inline void dense_rows_solve(const double *L, int k, double *b) {
    const double *Lr[B];
    double s[B];
    for (int j = 0; j < B; j++) Lr[j] = L + size_t(k + j) * size_t(k + j + 1) / 2, s[j] = b[k + j];
    for (int a = 0; a < k; a++) {                                      // the shared columns 0 .. k - 1, side by side
        const double x = b[a];
        for (int j = 0; j < B; j++) s[j] = s[j] - Lr[j][a] * x;
    }
    for (int j = 0; j < B; j++) {                                      // then each row's other columns, in turn
        for (int a = k; a < k + j; a++) s[j] = s[j] - Lr[j][a] * b[a];
        b[k + j] = s[j] / Lr[j][k + j];
    }
}

// cholesky_solve_factored on a dense pattern (row k's columns 0 .. k at k (k + 1) / 2): L^T y = b's rows from the last
// four at a time (y_k, then y_k-1 from b_k-1 - L_k,k-1 y_k, ..., then b_j's four subtractions in one loop over the
// columns left of them: each b_j's in the order of the rows, descending), then L x = y's rows four at a time
// (dense_rows_solve): every entry's operations cholesky_solve_factored's, in its order, without the runs' and column
// indices' bookkeeping
inline void cholesky_solve_dense(const double *L, int n, double *b) {
    auto row = [L](int k) { return L + size_t(k) * size_t(k + 1) / 2; };
    int k = n - 1;                                                     // L^T y = b
    for (; k >= 3; k -= 4) {
        const double *__restrict L0 = row(k), *__restrict L1 = row(k - 1), *__restrict L2 = row(k - 2), *__restrict L3 = row(k - 3);
        const double y0 = b[k] / L0[k];                                // the four rows' own entries, row after row
        double b1 = b[k - 1] - L0[k - 1] * y0, b2 = b[k - 2] - L0[k - 2] * y0, b3 = b[k - 3] - L0[k - 3] * y0;
        const double y1 = b1 / L1[k - 1];
        b2 = b2 - L1[k - 2] * y1, b3 = b3 - L1[k - 3] * y1;
        const double y2 = b2 / L2[k - 2];
        b3 = b3 - L2[k - 3] * y2;
        const double y3 = b3 / L3[k - 3];
        b[k] = y0, b[k - 1] = y1, b[k - 2] = y2, b[k - 3] = y3;
        double *__restrict bj = b;                                     // then the columns left of them
        for (int j = 0; j < k - 3; j++) bj[j] = (((bj[j] - L0[j] * y0) - L1[j] * y1) - L2[j] * y2) - L3[j] * y3;
    }
    for (; k >= 0; k--) {                                              // the first rows, one at a time
        const double *Lk = row(k), y = b[k] / Lk[k];
        b[k] = y;
        axpy_run(b, Lk, y, k);
    }
    k = 0;                                                             // L x = y
    for (; k + 4 <= n; k += 4) dense_rows_solve<4>(L, k, b);
    switch (n - k) {
        case 3: dense_rows_solve<3>(L, k, b); break;
        case 2: dense_rows_solve<2>(L, k, b); break;
        case 1: dense_rows_solve<1>(L, k, b); break;
        default: break;
    }
}

// y += c0 x[0] + c1 x[1] + c2 x[2] + c3 x[3] over n entries (y apart from the x: the loop vectorizes without a check)
inline void add_scaled4(double *__restrict y, const double *const *x, double c0, double c1, double c2, double c3, int n) {
    const double *__restrict x0 = x[0], *__restrict x1 = x[1], *__restrict x2 = x[2], *__restrict x3 = x[3];
    for (int s = 0; s < n; s++) y[s] += c0 * x0[s] + c1 * x1[s] + c2 * x2[s] + c3 * x3[s];
}

// y = M x for a symmetric M on the tree's pattern (the model's sparse layout): y_i = M_ii x_i, then row by row its
// entries j left of the diagonal into y_i and y_j
inline void tree_times(const Model &m, const double *M, const double *x, double *y) {
    const int64_t *adr = m.M_rowadr, *nnz = m.M_rownnz, *col = m.M_colind;
    for (int i = 0; i < m.nv; i++) y[i] = M[adr[i] + nnz[i] - 1] * x[i];
    for (int i = 0; i < m.nv; i++) {
        const double *Mi = M + adr[i];
        const int64_t *c = col + adr[i];
        double xi = x[i], yi = y[i];
        with_depth(nnz[i] - 1, [&](auto D) {                           // a free joint's chain unrolled
            for (int64_t s = 0; s < D; s++) yi += Mi[s] * x[c[s]], y[c[s]] += Mi[s] * xi;
        });
        y[i] = yi;
    }
}

// ---------------------------------------------------------------- solving in the metric

// whether C (nv x nv) has an entry off M's tree pattern, between dofs not on one path to the root (solver.off_pattern's
// any; C's pattern is symmetric, its lower triangle read)
inline bool off_pattern(const Model &m, const double *C) {
    for (int i = 0; i < m.nv; i++)
        for (int j = 0; j < i; j++)
            if (C[size_t(i) * size_t(m.nv) + size_t(j)] != 0.0 && !tree_pair(m, i, j)) return true;
    return false;
}

// the discrete step's metric with its tendon and actuator terms (solver.metric_solve's choice): on <- the Model the
// solvers run on, m itself when C (nv x nv) fits M's tree pattern (joint-level servos, one chain's tendons: the tree's
// sparse factor, as for M), else (off_pattern, or the test hook's force) a Model whose M layout is a chain of every dof
// (row i: columns 0 .. i, its layout in w.dense_*, w.r.tree then true: every row on it), on which tree_cholesky is a
// dense Cholesky and tree_times a dense product; so that the solvers run unchanged in M^ = X + C. w.Mt <- M^ on on's
// layout (X on m's tree pattern), w.P, w.Pinv <- the factor of X + diag(C) (forward.factored_metric, its zeros where
// the tree has none), w.coupled set and C kept for the islands (w.coupling). false when X + diag(C) is not positive
// definite
inline bool metric_model(const Model &m, ConstraintWork &w, const double *X, const double *C, Model &on) {
    const size_t nv = size_t(m.nv);
    on = m;
    DenseMetricHook &hook = dense_metric_hook();
    const bool chain = hook.force.load(std::memory_order_relaxed) || off_pattern(m, C);
    if (chain) {                                                       // every dof's chain
        const size_t nM = nv * (nv + 1) / 2;
        w.dense_rowadr.resize(nv), w.dense_rownnz.resize(nv), w.dense_parent.resize(nv), w.dense_colind.resize(nM);
        for (size_t i = 0; i < nv; i++) {
            w.dense_rowadr[i] = int64_t(i * (i + 1) / 2), w.dense_rownnz[i] = int64_t(i + 1);
            w.dense_parent[i] = int64_t(i) - 1;
            for (size_t j = 0; j <= i; j++) w.dense_colind[i * (i + 1) / 2 + j] = int64_t(j);
        }
        on.M_rowadr = w.dense_rowadr.data(), on.M_rownnz = w.dense_rownnz.data();
        on.M_colind = w.dense_colind.data(), on.dof_parentid = w.dense_parent.data();
        w.r.tree = true;
        hook.made.fetch_add(1, std::memory_order_relaxed);
    }
    const size_t nM = size_t(tree_nnz(on));
    for (auto *x : {&w.Mt, &w.LHt, &w.P}) resize_exact(*x, nM);
    w.d.qL.resize(nM), w.Pinv.resize(nv);
    for (auto *x : {&w.cg_r, &w.cg_z, &w.cg_p, &w.cg_Ap}) x->resize(nv);
    std::fill(w.P.begin(), w.P.end(), 0.0);
    for (size_t i = 0; i < nv; i++)                                    // X on its own entries
        for (int64_t a = m.M_rowadr[i]; a < m.M_rowadr[i] + m.M_rownnz[i]; a++)
            w.P[chain ? i * (i + 1) / 2 + size_t(m.M_colind[a]) : size_t(a)] = X[a];
    for (size_t i = 0; i < nv; i++)                                    // M^ = X + C, X + diag(C)
        for (int64_t a = on.M_rowadr[i]; a < on.M_rowadr[i] + on.M_rownnz[i]; a++)
            w.Mt[size_t(a)] = w.P[size_t(a)] + C[i * nv + size_t(on.M_colind[a])];
    for (size_t i = 0; i < nv; i++) tree_diagonal(on, w.P.data(), int64_t(i)) = tree_diagonal(on, w.Mt.data(), int64_t(i));
    w.coupled = true, w.coupling = C;
    return tree_cholesky(on, w.P.data(), w.Pinv.data());
}

// x = M^-1 b (nv) (solver.smooth_acceleration): in the discrete step's metric with its couplings (w.coupled) by
// conjugate gradients preconditioned with w.P's factor to the tolerance, at most `iterations` (its relative residual
// into w.pcg_capped when it stopped there), products in w.Mt; else by M's factor (w.d.qL, w.d.qLinv)
inline void smooth_acceleration(const Model &m, ConstraintWork &w, const double *b, double *x, double tolerance,
                                int64_t iterations) {
    if (!w.coupled) {
        std::copy(b, b + m.nv, x);
        tree_solve(m, w.d.qL.data(), w.d.qLinv.data(), x);
        return;
    }
    double capped = conjugate_gradients(
        m.nv, b, x, tolerance, iterations, w.cg_r.data(), w.cg_z.data(), w.cg_p.data(), w.cg_Ap.data(),
        [&](const double *v, double *y) { tree_times(m, w.Mt.data(), v, y); },
        [&](double *z) { tree_solve(m, (const double *)w.P.data(), (const double *)w.Pinv.data(), z); });
    if (capped >= 0.0) w.pcg_capped = capped;
}

// ---------------------------------------------------------------- the forward problem: Newton's method (mj_solNewton)

// the primal cost 1/2 (qacc - a0)^T M (qacc - a0) + s(J qacc - aref) at qacc from Ma = M qacc and jar = J qacc - aref,
// with s's forces and states into force, state and cones
inline double cost_at(const Model &m, ConstraintWork &w, const double *qacc, const double *Ma, const double *jar,
                      double *force, int *state, Cones &cones) {
    double s = update(w.r, jar, force, state, &cones), gauss = 0.0;
    for (int j = 0; j < m.nv; j++) gauss += (Ma[j] - w.qfrc_smooth[size_t(j)]) * (qacc[j] - w.qacc_smooth[size_t(j)]);
    return 0.5 * gauss + s;
}

// cost_at qacc with M qacc into Ma and J qacc - aref into jar (_total_cost)
inline double total_cost(const Model &m, ConstraintWork &w, const double *qacc, double *Ma, double *jar, double *force,
                         int *state, Cones &cones) {
    const Rows &r = w.r;
    rows_times(r, qacc, jar);
    for (int i = 0; i < r.nefc; i++) jar[i] = jar[i] - r.aref[size_t(i)];
    tree_times(m, w.Mt.data(), qacc, Ma);
    return cost_at(m, w, qacc, Ma, jar, force, state, cones);
}

// ---------------------------------------------------------------- the line search (MuJoCo's PrimalSearch)

// a point of the line search: alpha, cost(alpha) - cost(0) and its first and second derivatives in alpha
struct LinePoint {
    double alpha = 0.0, cost = 0.0, d1 = 0.0, d2 = 0.0;
};

// the primal cost along qacc + alpha v, each row's as a polynomial in alpha (_line): quad (3 per row) 1/2 D Jaref^2,
// D Jaref Jv, 1/2 D Jv^2 (an elliptic contact's first row: its block's sums, then in the block's next two rows' slots
// U0, V0, UU, UV, VV, Dm: Jaref, Jv scaled by mu and friction, their tangential products); gauss the Gauss term's
// linear and quadratic coefficients
struct Line {
    const Rows &r;
    const double *Jaref, *Jv, *quad;
    double gauss[2];
};

// the quadratics of Line into quad (MuJoCo's PrimalPrepare)
inline void line_quadratics(const Rows &r, const double *Jaref, const double *Jv, double *quad) {
    const double *D = r.D.data();
    for (int i = 0; i < r.nefc; i++) {
        double *q = quad + 3 * size_t(i), DJ = D[i] * Jaref[i];
        q[0] = Jaref[i] * DJ, q[1] = Jv[i] * DJ, q[2] = Jv[i] * D[i] * Jv[i];
        if (r.type[size_t(i)] == CONTACT_ELLIPTIC) {
            int64_t c = r.id[size_t(i)];
            int dim = int(r.con.dim(c));
            double mu = r.contact_mu[size_t(c)], UU = 0.0, UV = 0.0, VV = 0.0;
            const double *friction = r.con.friction(c);
            for (int j = 1; j < dim; j++) {
                double DJj = D[i + j] * Jaref[i + j];
                q[0] += Jaref[i + j] * DJj, q[1] += Jv[i + j] * DJj, q[2] += Jv[i + j] * D[i + j] * Jv[i + j];
            }
            for (int j = 1; j < dim; j++) {
                double U = Jaref[i + j] * friction[j - 1], V = Jv[i + j] * friction[j - 1];
                UU += U * U, UV += U * V, VV += V * V;
            }
            q[3] = Jaref[i] * mu, q[4] = Jv[i] * mu, q[5] = UU, q[6] = UV, q[7] = VV, q[8] = D[i] / (mu * mu * (1 + mu * mu));
            i += dim - 1;
        }
        q[0] *= 0.5, q[2] *= 0.5;
    }
}

// the friction-loss cost at x: 1/2 D x^2 inside +-Rf, f (|x| - Rf / 2) outside (_huber)
inline double huber(double x, double f, double Rf, double D) {
    if (-Rf < x && x < Rf) return 0.5 * D * x * x;
    return x <= -Rf ? f * (-0.5 * Rf - x) : f * (-0.5 * Rf + x);
}

// the friction-loss cost's change from start to x, within a zone without cancellation (_huber_change)
inline double huber_change(double start, double x, double f, double Rf, double D) {
    auto zone = [&](double y) { return (-Rf < y && y < Rf) ? 0 : (y <= -Rf ? -1 : 1); };
    int z0 = zone(start), z = zone(x);
    if (z0 == 0 && z == 0) return 0.5 * D * (x - start) * (x + start);
    if (z0 == -1 && z == -1) return f * (start - x);
    if (z0 == 1 && z == 1) return f * (x - start);
    return huber(x, f, Rf, D) - huber(start, f, Rf, D);
}

// the zone of an elliptic contact at scaled normal N and tangential T^2 = Tsqr: 1 top, 2 bottom, 3 middle; T into T
// (_cone_zone)
inline int cone_zone(double N, double Tsqr, double mu, double &T) {
    T = 0.0;
    if (Tsqr <= 0) return N < 0 ? 2 : 1;
    T = std::sqrt(Tsqr);
    return N >= mu * T ? 1 : (mu * N + T <= 0 ? 2 : 3);
}

// cost(alpha) - cost(0) of an elliptic contact from its zones at 0 and at alpha (_cone_change)
inline double cone_change(const double *q, double alpha, double mu) {
    double U0 = q[3], V0 = q[4], UU = q[5], UV = q[6], VV = q[7], Dm = q[8], T0, T, N = U0 + alpha * V0;
    int zone0 = cone_zone(U0, UU, mu, T0), zone = cone_zone(N, UU + alpha * (2 * UV + alpha * VV), mu, T);
    double quadratic = alpha * (alpha * q[2] + q[1]);
    // on the cone both: r - r0 with T - T0 = (T^2 - T0^2) / (T + T0), no cancellation
    if (zone0 == 3 && zone == 3) {
        double r_delta = alpha * V0 - mu * (alpha * (2 * UV + alpha * VV) / (T + T0));
        return 0.5 * Dm * r_delta * (2 * (U0 - mu * T0) + r_delta);
    }
    if (zone0 == 2 && zone == 2) return alpha * alpha * q[2] + alpha * q[1];
    // cone to bottom: the quadratic's change plus the gap at 0; bottom to cone: less the gap at alpha
    if (zone0 == 3 && zone == 2) return quadratic + 0.5 * Dm * (mu * U0 + T0) * (mu * U0 + T0);
    if (zone0 == 2 && zone == 3) return quadratic - 0.5 * Dm * (mu * N + T) * (mu * N + T);
    if (zone0 == 1 && zone == 2) return alpha * alpha * q[2] + alpha * q[1] + q[0];
    if (zone0 == 1 && zone == 3) return 0.5 * Dm * (N - mu * T) * (N - mu * T);
    if (zone0 == 3 && zone == 1) return -0.5 * Dm * (U0 - mu * T0) * (U0 - mu * T0);
    return zone0 == 2 && zone == 1 ? -q[0] : 0.0;
}

// the first and second derivatives of an elliptic contact's cost at alpha, by its zone there, added to d1, d2
// (_cone_derivatives)
inline void cone_derivatives(const double *q, double alpha, double mu, double &d1, double &d2) {
    double U0 = q[3], V0 = q[4], UU = q[5], UV = q[6], VV = q[7], Dm = q[8], T, N = U0 + alpha * V0;
    int zone = cone_zone(N, UU + alpha * (2 * UV + alpha * VV), mu, T);
    if (zone == 2) d1 += 2 * alpha * q[2] + q[1], d2 += 2 * q[2];
    if (zone != 3) return;
    // middle: Dm/2 (N - mu T)^2 with T' = (UV + alpha VV) / T, T'' = VV / T - (UV + alpha VV) T' / T^2
    double T1 = (UV + alpha * VV) / T, T2 = VV / T - (UV + alpha * VV) * T1 / (T * T);
    d1 += Dm * (N - mu * T) * (V0 - mu * T1);
    d2 += Dm * ((V0 - mu * T1) * (V0 - mu * T1) + (N - mu * T) * (-mu * T2));
}

// the line's point at alpha (MuJoCo's PrimalEval; a second derivative <= 0, which convexity rules out, is raised to
// MINVAL) (_line_point)
inline LinePoint line_point(const Line &line, double alpha) {
    const Rows &r = line.r;
    const double *Jaref = line.Jaref, *Jv = line.Jv, *D = r.D.data();
    double total[3] = {0.0, line.gauss[0], line.gauss[1]}, cost = 0.0, d1 = 0.0, d2 = 0.0;
    for (int i = 0; i < r.nefc; i++) {
        const double *q = line.quad + 3 * size_t(i);
        // equality: quadratic
        if (i < r.ne) {
            total[1] += q[1], total[2] += q[2];
            continue;
        }
        // friction loss: Huber, cost(x) - cost(start)
        if (i < r.ne + r.nf) {
            double f = r.frictionloss[size_t(i)], Rf = r.R[size_t(i)] * f, x = Jaref[i] + alpha * Jv[i];
            cost += huber_change(Jaref[i], x, f, Rf, D[i]);
            if (-Rf < x && x < Rf) d1 += D[i] * x * Jv[i], d2 += D[i] * Jv[i] * Jv[i];
            else d1 += x <= -Rf ? -f * Jv[i] : f * Jv[i];
            continue;
        }
        // elliptic contacts: by zone
        if (r.type[size_t(i)] == CONTACT_ELLIPTIC) {
            int64_t c = r.id[size_t(i)];
            double mu = r.contact_mu[size_t(c)];
            cost += cone_change(q, alpha, mu);
            cone_derivatives(q, alpha, mu, d1, d2);
            i += int(r.con.dim(c)) - 1;
            continue;
        }
        // limits, frictionless and pyramidal contacts: one-sided quadratics
        double cost0 = Jaref[i] < 0 ? q[0] : 0.0;
        if (Jaref[i] + alpha * Jv[i] < 0) total[0] += q[0] - cost0, total[1] += q[1], total[2] += q[2];
        else cost -= cost0;
    }
    cost += alpha * alpha * total[2] + alpha * total[1] + total[0];
    d1 += 2 * alpha * total[2] + total[1];
    d2 += 2 * total[2];
    return {alpha, cost, d1, d2 > 0 ? d2 : MINVAL};
}

// p replaced by the candidate nearest the minimum on p's side (the same sign of d1, a smaller |d1|); whether it was
// (MuJoCo's updateBracket) (_bracket)
inline bool bracket(LinePoint &p, const LinePoint *candidates) {
    bool updated = false;
    for (int i = 0; i < 3; i++) {
        const LinePoint &c = candidates[i];
        if ((p.d1 < 0 && c.d1 < 0 && p.d1 < c.d1) || (p.d1 > 0 && c.d1 > 0 && p.d1 > c.d1)) p = c, updated = true;
    }
    return updated;
}

// the statuses of line_search: converged, no search direction, already optimal, not bracketed, improved without
// converging, no improvement, the bracket at rounding (its midpoint)
enum LineStatus { LINE_CONVERGED = 0, LINE_NO_DIRECTION = 1, LINE_OPTIMAL = 2, LINE_UNBRACKETED = 3, LINE_IMPROVED = 4,
                  LINE_NO_IMPROVEMENT = 5, LINE_ROUNDING = 7 };

// alpha of MuJoCo's PrimalSearch along the line, with its improvement cost(0) - cost(alpha) and status: one Newton step
// from 0, Newton steps on one side until the derivative changes sign, then the bracket shrunk by Newton steps and
// midpoints, until |d cost / d alpha| < gtol or max_evaluations evaluations of the cost (ls_iterations) (_line_search)
inline double line_search(const Line &line, double snorm, double gtol, int64_t max_evaluations, double &improvement,
                          int &status) {
    auto newton = [&](const LinePoint &p) { return line_point(line, p.alpha - p.d1 / p.d2); };
    auto done = [&](const LinePoint &p, int s) { improvement = -p.cost, status = s; return p.alpha; };
    improvement = 0.0;
    if (snorm < MINVAL) return done(LinePoint{}, LINE_NO_DIRECTION);
    LinePoint p0 = line_point(line, 0.0), p1 = newton(p0), p2 = p0;
    int64_t evaluations = 2;
    if (std::abs(p1.d1) < gtol && (p1.alpha == 0 || p1.cost < 0)) return done(p1, p1.alpha == 0 ? LINE_OPTIMAL : LINE_CONVERGED);
    // Newton steps on p1's side until the derivative changes sign
    double direction = p1.d1 < 0 ? 1.0 : -1.0;
    while (p1.d1 * direction <= -gtol && evaluations < max_evaluations) {
        p2 = p1, p1 = newton(p1), evaluations++;
        if (std::abs(p1.d1) < gtol && p1.cost < 0) return done(p1, LINE_CONVERGED);
    }
    if (evaluations >= max_evaluations) return done(p1, LINE_UNBRACKETED);
    // the bracket [p1, p2]: its Newton points and midpoint as candidates
    LinePoint p1next = newton(p1), p2next = p1;
    evaluations++;
    while (evaluations < max_evaluations) {
        LinePoint mid = line_point(line, 0.5 * (p1.alpha + p2.alpha));
        evaluations++;
        const LinePoint candidates[3] = {p1next, p2next, mid};
        int best = -1;
        for (int i = 0; i < 3; i++)
            if (std::abs(candidates[i].d1) < gtol && (best < 0 || candidates[i].cost < candidates[best].cost)) best = i;
        if (best >= 0) return done(candidates[best], LINE_CONVERGED);
        bool moved1 = bracket(p1, candidates);
        if (moved1) p1next = newton(p1), evaluations++;
        bool moved2 = bracket(p2, candidates);
        if (moved2) p2next = newton(p2), evaluations++;
        if (!moved1 && !moved2) return done(mid, mid.cost < 0 ? LINE_CONVERGED : LINE_ROUNDING);
    }
    if (p1.cost <= p2.cost && p1.cost < 0) return done(p1, LINE_IMPROVED);
    if (p2.cost <= p1.cost && p2.cost < 0) return done(p2, LINE_IMPROVED);
    return done(LinePoint{}, LINE_NO_IMPROVEMENT);
}

// H = M + J^T D J over the rows in their quadratic state, plus J_c^T H_c J_c of each contact on its cone, into w.Hval
// (its lower triangle on its own entries, w.Hadr and w.Hcol: factor_pattern's before the fill-in), or w.LHt on the
// tree's pattern when the rows are chains (_hessian; H is symmetric by construction)
inline void hessian(const Model &m, ConstraintWork &w, const int *state, const Cones &cones) {
    const Rows &r = w.r;
    int nv = m.nv;
    const bool tree = r.tree;
    const int64_t *adr = m.M_rowadr, *nnz = m.M_rownnz;
    if (!tree && w.Hval.size() < w.Hcol.size()) resize_exact(w.Hval, w.Hcol.size());
    double *H = tree ? w.LHt.data() : w.Hval.data();
    const int *Ladr = w.Hadr.data(), *Lcol = w.Hcol.data();            // H's own entries (w.Hadr, w.Hcol)
    // entry (i, j), j <= i
    auto at = [&](int i, int j) -> double & {
        return tree ? H[adr[i] + nnz[j] - 1] : H[std::lower_bound(Lcol + Ladr[i], Lcol + Ladr[i + 1], j) - Lcol];
    };
    std::fill(H, H + (tree ? size_t(tree_nnz(m)) : w.Hcol.size()), 0.0);
    double *g = w.g.data();
    const int *to = w.Hentry.data();                                   // each sum's entry of H (not a tree: factor_pattern's)
    for_each_group(r, [&](int i, int e, int nc, const int *cols) {
        // a group's rows i .. e - 1 (the same columns: a contact's): their sum in G (nc x nc, dense) first, then into H
        if (w.G.size() < size_t(nc) * nc) w.G.resize(size_t(nc) * nc);
        double *G = w.G.data();
        std::fill(G, G + size_t(nc) * nc, 0.0);
        const double *J[4];
        double D[4];
        int m = 0;
        bool any = false;
        for (int k = i; k < e; k++) {
            if (state[k] != QUADRATIC) continue;
            J[m] = r.val.data() + r.start[size_t(k)], D[m] = r.D[size_t(k)], any = true;
            if (++m < 4) continue;
            for (int a = 0; a < nc; a++) {                             // four rows in one pass over G's lower triangle
                double c0 = J[0][a] * D[0], c1 = J[1][a] * D[1], c2 = J[2][a] * D[2], c3 = J[3][a] * D[3];
                add_scaled4(G + size_t(a) * nc, J, c0, c1, c2, c3, a + 1);
            }
            m = 0;
        }
        for (int n = 0; n < m; n++) {                                  // the rest one at a time
            for (int b = 0; b < nc; b++) g[b] = J[n][b];
            for (int a = 0; a < nc; a++) subtract_scaled(G + size_t(a) * nc, g, -(g[a] * D[n]), a + 1);
        }
        for (int a = 0; any && a < nc; a++) {
            const double *Ga = G + size_t(a) * nc;
            if (tree) {
                for (int b = 0; b <= a; b++) at(cols[a], cols[b]) += Ga[b];
                continue;
            }
            for (int b = 0; b <= a; b++) H[to[b]] += Ga[b];
            to += a + 1;
        }
        if (!any && !tree) to += size_t(nc) * size_t(nc + 1) / 2;
    });
    const double *M = w.Mt.data();                                     // + M (on its pattern: zero elsewhere)
    if (tree) {
        for (int64_t a = 0; a < tree_nnz(m); a++) H[a] = M[a] + H[a];
    } else {
        for (int k = 0; k < nv; k++)                                   // row k's entries, M's columns ascending
            for (int64_t a = adr[k]; a < adr[k] + nnz[k]; a++, to++) H[*to] = M[a] + H[*to];
    }
    for (int k = 0; k < cones.n; k++) {                                 // + Jc^T Hc Jc over the block's columns
        int first = cones.first[size_t(k)], dim = cones.dim[size_t(k)];
        const double *Hc = &cones.H[36 * size_t(k)];
        for (int a = 0; a < dim; a++)
            for (int b = 0; b < dim; b++) {
                double h = Hc[a * dim + b];
                int sa = r.start[size_t(first + a)], sb = r.start[size_t(first + b)];
                const double *Ja = r.val.data() + sa, *Jb = r.val.data() + sb;
                const int *ca = r.cols.data() + sa, na = r.start[size_t(first + a) + 1] - sa;
                const int *cb = r.cols.data() + sb, nb = r.start[size_t(first + b) + 1] - sb;
                for (int s = 0; s < na; s++) {
                    double x = Ja[s] * h;
                    for (int u = 0; u < nb && cb[u] <= ca[s]; u++) at(ca[s], cb[u]) += x * Jb[u];
                }
            }
    }
}

// the solvers' tolerance scale (solver.tolerance_scale): 1 / (meaninertia max(1, nv)), meaninertia = trace(M) / nv of
// M at this state (Mt: M on the tree's pattern; MuJoCo 4.0, before it stat.meaninertia at qpos0)
inline double tolerance_scale(const Model &m, const double *Mt) {
    if (m.nv == 0) return 1.0;                                         // no dofs, no rows: nothing to scale
    int nv = m.nv;
    double trace = 0.0;
    for (int j = 0; j < m.nv; j++) trace += Mt[size_t(m.M_rowadr[j] + m.M_rownnz[j] - 1)];
    return 1.0 / (trace / nv * nv);                                    // meaninertia: M's mean diagonal here
}

// the results of solve: iterations, the last scaled improvement, converged; qacc in w.qacc, force in w.force, the
// Newton states in w.state
struct Solution {
    int64_t iterations = 0;
    double improvement = 0.0;
    bool converged = false;
};

// grad = M qacc - qfrc_smooth - J^T force (w.Ma holds M qacc)
inline void gradient(const Model &m, ConstraintWork &w, const double *force) {
    rows_transpose_times(w.r, force, w.grad.data());
    for (int j = 0; j < m.nv; j++) {
        size_t k = size_t(j);
        w.grad[k] = w.Ma[k] - w.qfrc_smooth[k] - w.grad[k];
    }
}

// update_factor's rank-1 updates of the sparse factor (w.LH) for the w.batch_n rows in w.batch_row (is: entered the
// quadratic state, else left it), in one sweep over L's rows from the last column down: row k takes the rows'
// updates in their order, each as a sweep of its own would (each update's x_r in w.x at r nv: its entries of row k
// final once the rows below k took it), so every entry of L and of each x_r takes the same operations in the same
// order as one sweep per row (MuJoCo's mju_cholUpdateSparse, row after row), and L is read once per batch instead of
// once per row (a workspace schedule, not an algorithm of its own). false when a downdate would lose positive
// definiteness (the caller refactors, as after one update's failure). Empties the batch.
inline bool batched_update(ConstraintWork &w) {
    const Rows &r = w.r;
    const int nb = w.batch_n, V = int(w.x.size()) / kUpdateBatch;
    w.batch_n = 0;
    double *L = w.LH.data(), sn[kUpdateBatch], c[kUpdateBatch], cinv[kUpdateBatch];
    int tops[kUpdateBatch], top = -1;
    RotateRun rot[2];
    rotate_runs(rot);
    for (int b = 0; b < nb; b++) {
        const int i = w.batch_row[b], a = r.start[size_t(i)], e = r.start[size_t(i) + 1];
        const double sd = std::sqrt(r.D[size_t(i)]);
        double *x = w.x.data() + size_t(b) * V;
        tops[b] = r.cols[size_t(e - 1)], top = std::max(top, tops[b]);
        std::fill(x, x + tops[b] + 1, 0.0);
        for (int k = a; k < e; k++) x[r.cols[size_t(k)]] = r.val[size_t(k)] * sd;
    }
    for (int k = top; k >= 0; k--) {                                  // x x^T into the rows of L from the last
        double *Lk = L + w.Ladr[size_t(k)];
        const int *ck = w.Lcol.data() + w.Ladr[size_t(k)], nk = w.Ladr[size_t(k) + 1] - w.Ladr[size_t(k)] - 1;
        const int base = w.Ladr[size_t(k)];
        for (int b = 0; b < nb; b++) {
            double *x = w.x.data() + size_t(b) * V;
            if (k > tops[b] || x[k] == 0.0) continue;                  // x's other entries are in row k's pattern
            const bool is = w.batch_is[b];
            double Lkk = Lk[nk], t = Lkk * Lkk + (is ? x[k] * x[k] : -x[k] * x[k]);
            if (!(t >= MINVAL)) return false;
            double rr = std::sqrt(t);
            c[b] = rr / Lkk, cinv[b] = 1 / c[b], sn[b] = x[k] / Lkk;
            Lk[nk] = rr;
            // each entry's L, then its x from that L (each entry apart: run by run of consecutive columns, w.Lrun,
            // contiguous loops, rotate_run: the same operations)
            for (int e = nk - 1; e >= 0;) {
                const int j0 = run_start(w.Lrun.data(), base + e) - base;
                const int len = e - j0 + 1;
                if (len >= kShortRun) rot[is](Lk + j0, x + ck[j0], sn[b], c[b], cinv[b], len);
                else if (is) rotate_run<true>(Lk + j0, x + ck[j0], sn[b], c[b], cinv[b], len);   // short: inline
                else rotate_run<false>(Lk + j0, x + ck[j0], sn[b], c[b], cinv[b], len);
                e = j0 - 1;
            }
        }
    }
    return true;
}

// the factor of H (w.LH, or w.LHt when the rows are chains) carried to the current states from those it was made for
// (w.hstate): a rank-1 update for each row that entered its quadratic state, a downdate for each that left it (MuJoCo's
// HessianIncremental, mju_cholUpdate in the factor's order); false when a downdate would lose positive definiteness
// (the caller refactors). When the rows are chains, a row's x stays on the chain of its last column and L on the tree's
// pattern (no fill-in): the rows of L on the chain alone, over their ancestors, with x by depth (w.xt: the chain's dof at
// depth d is any of its rows' ancestor d); else every row of L from the last column down.
inline bool update_factor(const Model &m, ConstraintWork &w) {
    const Rows &r = w.r;
    w.batch_n = 0;
    if (!r.tree && w.x.size() < size_t(kUpdateBatch) * size_t(m.nv)) w.x.resize(size_t(kUpdateBatch) * size_t(m.nv));
    for (int i = 0; i < r.nefc; i++) {
        bool was = w.hstate[size_t(i)] == QUADRATIC, is = w.state[size_t(i)] == QUADRATIC;
        int a = r.start[size_t(i)], e = r.start[size_t(i) + 1];
        if (was == is || a == e) continue;
        const double sd = std::sqrt(r.D[size_t(i)]);
        int top = r.cols[size_t(e - 1)];
        if (r.tree) {
            double *L = w.LHt.data(), *xt = w.xt.data();
            const int64_t *chain = m.M_colind + m.M_rowadr[top], *nnz = m.M_rownnz;   // depth(j) = nnz[j] - 1
            std::fill(xt, xt + nnz[top], 0.0);
            for (int k = a; k < e; k++) xt[nnz[r.cols[size_t(k)]] - 1] = r.val[size_t(k)] * sd;
            for (int64_t d = nnz[top] - 1; d >= 0; d--) {               // x x^T into the rows of L from the last
                if (xt[d] == 0.0) continue;
                double *Lk = L + m.M_rowadr[chain[d]], Lkk = Lk[d], *inv = &w.LHinv[size_t(chain[d])];
                double t = Lkk * Lkk + (is ? xt[d] * xt[d] : -xt[d] * xt[d]);
                if (!(t >= MINVAL)) return false;
                // c = rr / Lkk, 1 / c and sn = x / Lkk from the reciprocals of Lkk (kept) and rr (one division)
                double rr = std::sqrt(t), ri = 1 / rr, c = rr * *inv, cinv = Lkk * ri, sn = xt[d] * *inv, s = is ? sn : -sn;
                Lk[d] = rr, *inv = ri;
                for (int64_t j = 0; j < d; j++) {
                    Lk[j] = (Lk[j] + s * xt[j]) * cinv;
                    xt[j] = c * xt[j] - sn * Lk[j];
                }
            }
            continue;
        }
        // the sparse factor: rows that changed taken kUpdateBatch at a time (batched_update)
        int &nb = w.batch_n;
        w.batch_row[nb] = i, w.batch_is[nb] = is, nb++;
        if (nb == kUpdateBatch && !batched_update(w)) return false;
    }
    return w.batch_n == 0 || batched_update(w);
}

// the factor of H at the current states into w.LH (w.LHt when the rows are chains): kept when the states are those it was made for and no contact is
// on its cone (the same H), updated row by row when a few rows changed state and no cone is involved, made afresh
// otherwise; false when H is not positive definite
inline bool factor_hessian(const Model &m, ConstraintWork &w, bool &fresh) {
    int n = w.r.nefc, changed = 0;
    bool cones = w.cones.n > 0;
    for (int i = 0; i < n; i++) {
        changed += w.state[size_t(i)] != w.hstate[size_t(i)];
        cones |= w.hstate[size_t(i)] == CONE;
    }
    if (!fresh && !cones) {
        if (changed == 0) return true;
        const int nv = w.all_nv ? w.all_nv : m.nv;                    // the model's, an island's dofs gathered or not
        if (changed <= std::max(1, nv / 2) && update_factor(m, w)) {
            std::copy(w.state.begin(), w.state.begin() + n, w.hstate.begin());
            return true;
        }
    }
    hessian(m, w, w.state.data(), w.cones);
    std::copy(w.state.begin(), w.state.begin() + n, w.hstate.begin());
    fresh = false;
    if (w.r.tree) return tree_cholesky(m, w.LHt.data(), w.LHinv.data());
    return cholesky(w, m.nv);
}

// M's factor on the tree's pattern (w.d.qL, w.d.qLinv) from M there (w.Mt); false on a non-positive pivot
inline bool factor_mass(const Model &m, ConstraintWork &w) {
    std::copy(w.Mt.begin(), w.Mt.end(), w.d.qL.begin());
    return tree_cholesky(m, w.d.qL.data(), w.d.qLinv.data());
}

// cone k of from appended to cones as first row first (its dim and Hessian copied)
inline void add_cone(Cones &cones, int first, const Cones &from, int k) {
    const double *H = &from.H[36 * size_t(k)];
    std::copy(H, H + 36, append_cone(cones, first, from.dim[size_t(k)]));
}

// the start of the primal solvers (_primal_start): w's buffers sized for its rows, M (nv x nv, dense: crb's) on the
// tree's pattern and factored (null: w.Mt, w.d.qL and w.d.qLinv hold them), a0 = M^-1 qfrc_smooth into w.qacc_smooth,
// and into w.qacc the warm start when its primal cost is lower than a0's (or when chosen: already chosen, an island's),
// else a0 (MuJoCo's warmstart), with its
// forces, states, cones, M qacc (w.Ma) and J qacc - aref (w.jar); SINGULAR when M is not positive definite
inline int primal_start(const Model &m, ConstraintWork &w, const double *M, const double *warmstart, bool chosen = false) {
    const Rows &r = w.r;
    int nv = m.nv, n = r.nefc;
    for (auto *x : {&w.force, &w.jar, &w.Jv, &w.wforce, &w.wjar})
        if (x->size() < size_t(n)) x->resize(size_t(n));
    for (auto *x : {&w.state, &w.wstate, &w.hstate})
        if (x->size() < size_t(n)) x->resize(size_t(n));
    if (w.quad.size() < 3 * size_t(n)) w.quad.resize(3 * size_t(n));
    if (M) {                                                           // M on the tree's pattern, factored
        tree_pack(m, M, w.Mt.data());
        if (!factor_mass(m, w)) return SINGULAR;
    }
    if (!w.a0_given) {                                                 // a0, unless an island's was gathered
        std::copy(w.qfrc_smooth.begin(), w.qfrc_smooth.end(), w.qacc_smooth.begin());
        tree_solve(m, w.d.qL.data(), w.d.qLinv.data(), w.qacc_smooth.data());
    }
    double *qacc = w.qacc.data();
    if (chosen && warmstart) {                                         // already chosen: an island's start
        std::copy(warmstart, warmstart + nv, qacc);
        if (w.start_of) {                                              // its evaluation gathered from every row's
            const Island &island = *w.start_of;
            for (int a = 0; a < nv; a++) w.Ma[size_t(a)] = w.start_Ma[size_t(island.dofs[size_t(a)])];
            w.cones.n = 0;
            const int *rows = island.rows.data();
            double *jar = w.jar.data(), *force = w.force.data();
            int *state = w.state.data();
            const double *start_jar = w.start_jar.data(), *start_force = w.start_force.data();
            const int *start_state = w.start_state.data();
            for (int c = 0; c < n; c++) {
                const int i = rows[c];
                jar[c] = start_jar[i], force[c] = start_force[i], state[c] = start_state[i];
            }
            if (w.start_cones.n)                                       // rows ascending: update's order
                for (int c = 0; c < n; c++)
                    if (w.start_cone[size_t(rows[c])] >= 0) add_cone(w.cones, c, w.start_cones, w.start_cone[size_t(rows[c])]);
            return OK;
        }
        total_cost(m, w, qacc, w.Ma.data(), w.jar.data(), w.force.data(), w.state.data(), w.cones);
        return OK;
    }
    std::copy(w.qacc_smooth.begin(), w.qacc_smooth.end(), qacc);
    double cost = total_cost(m, w, qacc, w.Ma.data(), w.jar.data(), w.force.data(), w.state.data(), w.cones);
    if (warmstart) {
        double warm = total_cost(m, w, warmstart, w.tmp.data(), w.wjar.data(), w.wforce.data(), w.wstate.data(), w.wcones);
        if (warm < cost) {
            std::copy(warmstart, warmstart + nv, qacc);
            std::swap(w.force, w.wforce), std::swap(w.jar, w.wjar), std::swap(w.state, w.wstate), std::swap(w.cones, w.wcones);
            std::swap(w.Ma, w.tmp);
        }
    }
    return OK;
}

// alpha of the line search along v (w.v) from w.qacc (_primal_search): at most opt.ls_iterations evaluations of the
// cost, to |d cost / d alpha| < tolerance ls_tolerance |v| / scale; its improvement and status; J v into w.Jv and
// M v into w.Mv
inline double primal_search(const Model &m, ConstraintWork &w, double tolerance, double scale, double &ls_improvement,
                            int &status) {
    const Rows &r = w.r;
    int nv = m.nv;
    const double *v = w.v.data();
    rows_times(r, v, w.Jv.data());
    tree_times(m, w.Mt.data(), v, w.Mv.data());
    double vMa = 0.0, fv = 0.0, vMv = 0.0;
    for (int j = 0; j < nv; j++) {
        size_t k = size_t(j);
        vMa += v[j] * w.Ma[k], fv += w.qfrc_smooth[k] * v[j], vMv += v[j] * w.Mv[k];
    }
    line_quadratics(r, w.jar.data(), w.Jv.data(), w.quad.data());
    const Line line{r, w.jar.data(), w.Jv.data(), w.quad.data(), {vMa - fv, 0.5 * vMv}};
    double snorm = norm(v, nv);
    return line_search(line, snorm, tolerance * m.opt_ls_tolerance * snorm / scale, m.opt_ls_iterations, ls_improvement,
                       status);
}

// the step qacc += alpha v, with M qacc and J qacc - aref carried along it (MuJoCo's Ma += alpha Mv, Jaref += alpha
// Jv), then the forces, states and gradient there (solver._primal_step)
inline void primal_step(const Model &m, ConstraintWork &w, double alpha) {
    double *qacc = w.qacc.data();
    const double *v = w.v.data();
    for (int j = 0; j < m.nv; j++) {
        size_t k = size_t(j);
        qacc[j] = qacc[j] + alpha * v[j], w.Ma[k] = w.Ma[k] + alpha * w.Mv[k];
    }
    for (int i = 0; i < w.r.nefc; i++) w.jar[size_t(i)] = w.jar[size_t(i)] + alpha * w.Jv[size_t(i)];
    cost_at(m, w, qacc, w.Ma.data(), w.jar.data(), w.force.data(), w.state.data(), w.cones);
    gradient(m, w, w.force.data());
}

// primal_start (solve's and solve_cg's) with a0 in the discrete step's metric with couplings (w.coupled) by
// smooth_acceleration to the tolerance, at most `iterations`, unless an island's a0 is given (w.a0_given)
inline int coupled_start(const Model &m, ConstraintWork &w, const double *M, const double *warmstart, double tolerance,
                         int64_t iterations, bool chosen) {
    const bool given = w.a0_given;
    if (w.coupled && !given) {                                         // a0 by conjugate gradients in M^
        smooth_acceleration(m, w, w.qfrc_smooth.data(), w.qacc_smooth.data(), tolerance, iterations);
        w.a0_given = true;
    }
    int start = primal_start(m, w, M, warmstart, chosen);
    w.a0_given = given;
    return start;
}

// the constrained accelerations: qacc minimising 1/2 |qacc - a0|_M^2 + s(J qacc - aref), a0 = M^-1 qfrc_smooth, by
// Newton's method (Hessian M + J^T D J, MuJoCo's line search), from the warm start when its cost is lower than a0's
// (solver.solve, with MuJoCo's stopping rules); M (nv x nv, dense: crb's) the mass matrix, or null when w.Mt holds
// it on the tree's pattern and w.d.qL, w.d.qLinv its factor; w.qfrc_smooth the forces. SINGULAR when M, or H where the
// iteration goes on, is not positive definite. In the discrete step's metric with couplings (w.coupled) a0 by smooth_acceleration, as solve_cg's.
inline int solve(const Model &m, ConstraintWork &w, const double *M, const double *warmstart, double tolerance,
                 int64_t iterations, Solution &sol, double scale = 0.0, bool chosen = false) {
    const Rows &r = w.r;
    int nv = m.nv;
    if (coupled_start(m, w, M, warmstart, tolerance, iterations, chosen) != OK) return SINGULAR;
    double *LM = w.d.qL.data(), *LMinv = w.d.qLinv.data();            // M's factor
    auto solve_H = [&](double *b) {                                    // b <- H^-1 b from H's factor
        if (r.tree) tree_solve(m, w.LHt.data(), w.LHinv.data(), b);
        else cholesky_solve_factored(w.LH.data(), w.Ladr.data(), w.Lcol.data(), w.Lrun.data(), w.Lsame.data(), nv, b);
    };
    struct GiveBack {                                                  // the kept layout back to its slot on return
        ConstraintWork &w;
        FactorLayout *slot;
        ~GiveBack() {
            if (slot) swap_layout(w, *slot);
        }
    } give_back{w, r.tree ? nullptr : &kept_factor_pattern(m, w)};
    if (scale == 0.0) scale = tolerance_scale(m, w.Mt.data());
    double improvement = 0.0;
    int64_t it = 0;
    gradient(m, w, w.force.data());
    double *grad = w.grad.data(), *step = w.step.data(), *v = w.v.data();
    double gnorm = scale * norm(grad, nv);
    // converged before a step: the gap 1/2 grad M^-1 grad and the gradient below the tolerance (a good warm start; the
    // gap is computed only when the gradient is small)
    bool done = false, fresh = true;
    if (gnorm < tolerance) {
        std::copy(grad, grad + nv, step);
        tree_solve(m, LM, LMinv, step);
        done = 0.5 * scale * dot(grad, step, nv) < tolerance;
    }
    if (!done) {
        if (!factor_hessian(m, w, fresh)) return SINGULAR;
        std::copy(grad, grad + nv, step);
        solve_H(step);
        done = gnorm < tolerance && 0.5 * scale * dot(grad, step, nv) < tolerance;
    }
    int status = LINE_CONVERGED;
    while (!done && it < iterations) {
        // the line search along the Newton direction, bounded by ls_iterations evaluations of the cost
        for (int j = 0; j < nv; j++) v[j] = -step[j];
        double ls_improvement, alpha = primal_search(m, w, tolerance, scale, ls_improvement, status);
        if (alpha == 0) break;                                         // no improvement along v: stop
        primal_step(m, w, alpha);
        improvement = scale * ls_improvement;
        gnorm = scale * norm(grad, nv);
        it++;
        done = (0 < improvement && improvement < tolerance) || gnorm < tolerance;
        if (done) break;                                               // H and the decrement only when still going
        if (!factor_hessian(m, w, fresh)) return SINGULAR;
        std::copy(grad, grad + nv, step);
        solve_H(step);
        double decrement = std::max(0.0, 0.5 * scale * dot(grad, step, nv));   // Newton's predicted improvement
        done = decrement < tolerance;
    }
    // converged: stopped by a tolerance, or with no descent left (no search direction, or already optimal along it)
    done = done || status == LINE_NO_DIRECTION || status == LINE_OPTIMAL;
    sol.iterations = it, sol.improvement = improvement, sol.converged = done;
    return OK;
}

// ---------------------------------------------------------------- the primal problem by conjugate gradients (mj_solCG)

// the conjugate direction's beta (Hager-Zhang, M-preconditioned; 0: restart when d.y < MINVAL), bounded below by
// -1 / (|d| min(0.01, |grad|)) (mj_solPrimal's update; _hager_zhang); search d, y = grad - grad_old, My = Mgrad - Mgrad_old
inline double hager_zhang(const double *search, const double *grad, const double *y, const double *Mgrad,
                          const double *My, int nv) {
    double d_dot_y = dot(search, y, nv);
    if (d_dot_y < MINVAL) return 0.0;
    double beta = (dot(y, Mgrad, nv) - 2 * (dot(y, My, nv) / d_dot_y) * dot(search, grad, nv)) / d_dot_y;
    double eta = -1.0 / std::max(MINVAL, norm(search, nv) * std::min(0.01, norm(grad, nv)));
    return std::max(eta, beta);
}

// the constrained accelerations of solve by MuJoCo's conjugate gradients (mj_solCG; solver.solve_cg): the same primal
// cost, start and line search, along directions -M^-1 grad + beta d (Hager-Zhang). Stops when the gap 1/2 grad M^-1
// grad is below the tolerance at the start, then when the scaled improvement or gradient is, scale = tolerance_scale
// (1 / trace(M)), or when the line search improves nothing; after `iterations` anyway. M as for solve; SINGULAR when M
// is not positive definite. In the discrete step's metric with couplings (w.coupled: solve_cg's backbone) a0 by
// smooth_acceleration, M^-1 becomes w.P's factor (products, gradient, line search and beta stay in M^) and the start
// test needs the scaled gradient below the tolerance too.
inline int solve_cg(const Model &m, ConstraintWork &w, const double *M, const double *warmstart, double tolerance,
                    int64_t iterations, Solution &sol, double scale = 0.0, bool chosen = false) {
    int nv = m.nv;
    if (coupled_start(m, w, M, warmstart, tolerance, iterations, chosen) != OK) return SINGULAR;
    if (scale == 0.0) scale = tolerance_scale(m, w.Mt.data());
    double *grad = w.grad.data(), *Mgrad = w.step.data(), *search = w.v.data();
    std::vector<double> y(static_cast<size_t>(nv)), My(static_cast<size_t>(nv));   // grad - grad_old, Mgrad - Mgrad_old
    const double *L = w.coupled ? w.P.data() : w.d.qL.data(), *Linv = w.coupled ? w.Pinv.data() : w.d.qLinv.data();
    auto M_solve = [&](double *b) { tree_solve(m, L, Linv, b); };     // the preconditioner: M's, or X + diag(C)'s
    gradient(m, w, w.force.data());
    std::copy(grad, grad + nv, Mgrad);
    M_solve(Mgrad);
    // converged before a step: the gap 1/2 grad M^-1 grad below the tolerance (a good warm start); in the discrete
    // step's metric with couplings the scaled gradient too
    bool done = std::max(0.0, 0.5 * scale * dot(grad, Mgrad, nv)) < tolerance &&
                (!w.coupled || scale * norm(grad, nv) < tolerance);
    for (int j = 0; j < nv; j++) search[j] = -Mgrad[j];
    double improvement = 0.0;
    int64_t it = 0;
    int status = LINE_CONVERGED;
    while (!done && it < iterations) {
        double ls_improvement, alpha = primal_search(m, w, tolerance, scale, ls_improvement, status);
        if (alpha == 0) break;                                         // no improvement along the direction: stop
        for (int j = 0; j < nv; j++) y[size_t(j)] = -grad[j], My[size_t(j)] = -Mgrad[j];
        primal_step(m, w, alpha);
        std::copy(grad, grad + nv, Mgrad);
        M_solve(Mgrad);
        for (int j = 0; j < nv; j++) y[size_t(j)] += grad[j], My[size_t(j)] += Mgrad[j];
        improvement = scale * ls_improvement;
        it++;
        done = (0 < improvement && improvement < tolerance) || scale * norm(grad, nv) < tolerance;
        if (!done) {                                                   // d = -M^-1 grad + beta d
            double beta = hager_zhang(search, grad, y.data(), Mgrad, My.data(), nv);
            for (int j = 0; j < nv; j++) search[j] = -Mgrad[j] + beta * search[j];
        }
    }
    done = done || status == LINE_NO_DIRECTION || status == LINE_OPTIMAL;
    sol.iterations = it, sol.improvement = improvement, sol.converged = done;
    return OK;
}

// ---------------------------------------------------------------- the dual problem: PGS (mj_solPGS)

// GCC: a function's loads kept scalar (no vectorization): the PGS sweep's residual reads the force each block just
// stored, and a 16-byte load over an 8-byte store waits for the store to retire (no store-to-load forwarding)
#if defined(__GNUC__) && !defined(__clang__)
#define PHYSAI_SCALAR_LOADS __attribute__((optimize("no-tree-vectorize", "no-tree-slp-vectorize")))
#else
#define PHYSAI_SCALAR_LOADS
#endif

// a . b (n entries) in MuJoCo's order (mju_dot): four running sums, (s0 + s2) + (s1 + s3), then the last one to three
// entries added together (the dense residual of its PGS rows); a chain four times shorter than dot's
PHYSAI_SCALAR_LOADS inline double dot_mj(const double *a, const double *b, int n) {
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    int i = 0;
    for (; i + 4 <= n; i += 4) s0 += a[i] * b[i], s1 += a[i + 1] * b[i + 1], s2 += a[i + 2] * b[i + 2], s3 += a[i + 3] * b[i + 3];
    double s = (s0 + s2) + (s1 + s3);
    if (n - i == 3) s += a[i] * b[i] + a[i + 1] * b[i + 1] + a[i + 2] * b[i + 2];
    else if (n - i == 2) s += a[i] * b[i] + a[i + 1] * b[i + 1];
    else if (n - i == 1) s += a[i] * b[i];
    return s;
}

// dof k's step of L^T y = J_i^T from the leaves (column_solve's, column_solve4's): y_k scaled by 1 / L_kk, then taken
// times L_k from its ancestors' entries
inline void column_step(const Model &m, const double *LM, const double *LMinv, double *y, int k) {
    const double *Lk = LM + m.M_rowadr[k];
    const int64_t *anc = m.M_colind + m.M_rowadr[k], depth = m.M_rownnz[k] - 1;
    double x = y[k] * LMinv[k];
    y[k] = x;
    for (int64_t s = 0; s < depth; s++) y[anc[s]] = y[anc[s]] - Lk[s] * x;
}

// L^T y = J_i^T for a column y of B (its nonzeros scattered, zero elsewhere below top) from the leaves, zeros skipped
// (dual_problem's); the lowest dof it reaches (top: none)
inline int column_solve(const Model &m, const double *LM, const double *LMinv, double *y, int top) {
    int low = top;
    for (int k = top - 1; k >= 0; k--)
        if (y[k] != 0.0) column_step(m, LM, LMinv, y, k), low = k;
    return low;
}

// column_solve of four columns on the same columns of J (a group's rows): a dof where all four are nonzero updates them
// together (each column's operations and order unchanged, the ancestors read once), else each alone (column_step)
inline void column_solve4(const Model &m, const double *LM, const double *LMinv, double *const *y, int top, int *low) {
    double *y0 = y[0], *y1 = y[1], *y2 = y[2], *y3 = y[3];
    low[0] = low[1] = low[2] = low[3] = top;
    for (int k = top - 1; k >= 0; k--) {
        bool n0 = y0[k] != 0.0, n1 = y1[k] != 0.0, n2 = y2[k] != 0.0, n3 = y3[k] != 0.0;
        if (!(n0 | n1 | n2 | n3)) continue;
        if (n0 & n1 & n2 & n3) {
            const double *Lk = LM + m.M_rowadr[k];
            const int64_t *anc = m.M_colind + m.M_rowadr[k], depth = m.M_rownnz[k] - 1;
            double x0 = y0[k] * LMinv[k], x1 = y1[k] * LMinv[k], x2 = y2[k] * LMinv[k], x3 = y3[k] * LMinv[k];
            y0[k] = x0, y1[k] = x1, y2[k] = x2, y3[k] = x3, low[0] = low[1] = low[2] = low[3] = k;
            for (int64_t s = 0; s < depth; s++) {
                int64_t a = anc[s];
                double L = Lk[s];
                y0[a] = y0[a] - L * x0, y1[a] = y1[a] - L * x1, y2[a] = y2[a] - L * x2, y3[a] = y3[a] - L * x3;
            }
            continue;
        }
        for (int j = 0; j < 4; j++)
            if (y[j][k] != 0.0) column_step(m, LM, LMinv, y[j], k), low[j] = k;
    }
}

// a0 = M^-1 qfrc_smooth into w.qacc_smooth, A = J M^-1 J^T (nefc x nefc) and b = J a0 - aref of the dual problem, from
// M's factor M = L^T L in w.d.qL, w.d.qLinv (_dual_problem; A in w.P's factor instead when the discrete step's metric
// has couplings, w.coupled: its M_delassus): A = B^T B with B = L^-T J^T (MuJoCo's mj_solveM2 half
// solve), each column of B solved from the leaves only over the dofs J's row reaches (its nonzeros and their
// ancestors), and each product only over the dofs two columns share (wide.h's gram_run: dot_mj's sums in one vector)
inline void dual_problem(const Model &m, ConstraintWork &w, std::vector<double> &A, std::vector<double> &b) {
    const Rows &r = w.r;
    int nv = m.nv, n = r.nefc;
    std::copy(w.qfrc_smooth.begin(), w.qfrc_smooth.end(), w.qacc_smooth.begin());
    tree_solve(m, w.d.qL.data(), w.d.qLinv.data(), w.qacc_smooth.data());
    // A's metric: M, or the discrete step's X + diag(C) when M^ has couplings (noslip's M_delassus)
    const double *LM = w.coupled ? w.P.data() : w.d.qL.data(), *LMinv = w.coupled ? w.Pinv.data() : w.d.qLinv.data();
    const size_t N = static_cast<size_t>(n);
    std::vector<double> &B = w.dual_B;
    std::vector<int> &lo = w.dual_lo, &hi = w.dual_hi;                 // the dofs column i of B reaches: [lo, hi)
    B.resize(N * static_cast<size_t>(nv)), lo.resize(N), hi.resize(N);
    A.resize(N * N), b.assign(N, 0.0);                                 // every entry of A written below
    auto scatter = [&](int i, int top) {                               // column i: J_i^T, zero elsewhere below top
        double *y = B.data() + size_t(i) * nv;
        std::fill(y, y + top, 0.0);                                    // only [0, top) is read, below and by gram_run
        for (int k = r.start[size_t(i)]; k < r.start[size_t(i) + 1]; k++) y[r.cols[size_t(k)]] = r.val[size_t(k)];
        hi[size_t(i)] = top;
        return y;
    };
    for_each_group(r, [&](int i, int e, int nc, const int *cols) {    // L^T B_i = J_i^T, a group's rows four at a time
        int top = 0;
        for (int k = 0; k < nc; k++) top = std::max(top, cols[k] + 1);
        for (; i + 4 <= e; i += 4) {
            double *y[4] = {scatter(i, top), scatter(i + 1, top), scatter(i + 2, top), scatter(i + 3, top)};
            column_solve4(m, LM, LMinv, y, top, lo.data() + i);
        }
        for (; i < e; i++) lo[size_t(i)] = column_solve(m, LM, LMinv, scatter(i, top), top);
    });
    gram_runs()(B.data(), lo.data(), hi.data(), n, nv, A.data());    // A_ik = A_ki = B_i . B_k
    rows_times(r, w.qacc_smooth.data(), b.data());
    for (int i = 0; i < n; i++) b[size_t(i)] -= r.aref[size_t(i)];
}

// (next state, 32-bit draw) of MuJoCo's PCG32 generator with increment 1 (pcg32_next)
inline uint32_t pcg32(uint64_t &state) {
    uint64_t old = state;
    state = old * 6364136223846793005ULL + 1;
    uint32_t xorshifted = uint32_t(((old >> 18u) ^ old) >> 27u), rot = uint32_t(old >> 59u);
    return (xorshifted >> rot) | (xorshifted << ((-rot) & 31));
}

// x mod d (d >= 1) for 32-bit x and d by one multiplication with magic = 2^64 / d rounded up (Lemire, Kaser and
// Kurz's fastmod: exact for every 32-bit x and d), no division per draw
inline uint32_t mod_by_magic(uint32_t x, uint64_t magic, uint32_t d) {
#ifdef __SIZEOF_INT128__
    return uint32_t((static_cast<unsigned __int128>(magic * x) * d) >> 64);
#else
    (void)magic;
    return x % d;
#endif
}

// magic[d] = 2^64 / d rounded up for d = 1 .. n (mod_by_magic's), kept: grown, never recomputed
inline void mod_magics(std::vector<uint64_t> &magic, size_t n) {
    for (size_t d = std::max<size_t>(magic.size(), 1); d <= n; d++) {
        if (magic.empty()) magic.push_back(0);                         // d = 0: unused
        magic.push_back(UINT64_MAX / d + 1);
    }
}

// Fisher-Yates shuffle of order in place by PCG32 draws (shuffle_int); magic: mod_magics' for order's size
inline void shuffle(std::vector<int> &order, uint64_t &state, const std::vector<uint64_t> &magic) {
    for (int i = int(order.size()) - 1; i > 0; i--) {
        int j = int(mod_by_magic(pcg32(state), magic[size_t(i + 1)], uint32_t(i + 1)));   // draw % (i + 1)
        std::swap(order[size_t(i)], order[size_t(j)]);
    }
}

// (first row, dim) of each block the dual solver visits: one row, or an elliptic contact's dim rows
inline void pgs_blocks(const Rows &r, std::vector<int> &first, std::vector<int> &dim) {
    first.clear(), dim.clear();
    for (int i = 0; i < r.nefc;) {
        int d = r.type[size_t(i)] == CONTACT_ELLIPTIC ? int(r.con.dim(r.id[size_t(i)])) : 1;
        first.push_back(i), dim.push_back(d);
        i += d;
    }
}

// tangential forces t (n) scaled onto sum (t_j / mu_j)^2 = normal^2 (when feasible: only if outside) (projectEllipsoid)
inline void project_ellipsoid(double *t, double normal, const double *mu, int n, bool feasible) {
    double s = 0.0;
    for (int j = 0; j < n; j++) s += t[j] * t[j] / (mu[j] * mu[j]);
    if (!feasible || s > normal * normal) {
        double scl = std::sqrt(normal * normal / std::max(MINVAL, s));
        for (int j = 0; j < n; j++) t[j] *= scl;
    }
}

// force projected in place: friction loss into +-frictionloss, limits and contacts onto their cones (projectCone)
inline void project_cone(const Rows &r, double *force, const std::vector<int> &first, const std::vector<int> &dim) {
    for (int i = r.ne; i < r.ne + r.nf; i++) {
        double fl = r.frictionloss[size_t(i)];
        force[i] = std::min(std::max(force[i], -fl), fl);
    }
    for (size_t k = 0; k < first.size(); k++) {
        int i = first[k], d = dim[k];
        if (i < r.ne + r.nf) continue;
        if (d == 1 || force[i] < 0) {                                   // non-negative normal (a negative one: all zero)
            if (d == 1) force[i] = std::max(force[i], 0.0);
            else std::fill(force + i, force + i + d, 0.0);
        } else {
            project_ellipsoid(force + i + 1, force[i], r.con.friction(r.id[size_t(i)]), d - 1, true);
        }
    }
}

// whether A (n x n, n <= 5) of determinant det is not positive definite to MuJoCo's 1e-10: det below it for n <= 3
// (mju_QCQP2, mju_QCQP3), else a pivot of its Cholesky factor below it (mju_QCQP's mju_cholFactor rank < n)
// (_not_positive_definite)
inline bool not_positive_definite(const double *A, int n, double det) {
    if (n <= 3) return det < 1e-10;
    double L[25] = {};
    for (int j = 0; j < n; j++) {                                      // pivot t = A_jj - L_j L_j^T
        double t = A[j * n + j] - dot(L + j * n, L + j * n, j);
        if (t < 1e-10) return true;
        L[j * n + j] = std::sqrt(t);
        for (int i = j + 1; i < n; i++) L[i * n + j] = (A[i * n + j] - dot(L + i * n, L + j * n, j)) / L[j * n + j];
    }
    return false;
}

// x (n <= 5) minimising 1/2 x^T A x + x^T b with sum (x_i / d_i)^2 <= radius^2, by Newton's method on the multiplier
// la of (A + la) x = -b in the scaled x / d (mju_QCQP2, mju_QCQP3, mju_QCQP: 20 steps, 1e-10 bounds); true when on
// the constraint
inline bool qcqp(const double *A, const double *b, const double *d, double radius, int n, double *x) {
    double As[25], bs[5], v[5] = {}, P[25], L[25], Ala[25];
    for (int i = 0; i < n; i++) {
        bs[i] = b[i] * d[i];
        for (int j = 0; j < n; j++) As[i * n + j] = A[i * n + j] * d[i] * d[j];
    }
    double la = 0.0;
    for (int iter = 0; iter < 20; iter++) {
        // P = (A + la)^-1 by Gauss-Jordan; not positive definite: no friction
        for (int i = 0; i < n * n; i++) Ala[i] = L[i] = As[i] + (i % (n + 1) == 0 ? la : 0.0), P[i] = i % (n + 1) == 0 ? 1.0 : 0.0;
        double det = 1.0;
        for (int c = 0; c < n; c++) {
            int p = c;
            for (int i = c + 1; i < n; i++)
                if (std::abs(L[i * n + c]) > std::abs(L[p * n + c])) p = i;
            if (L[p * n + c] == 0.0) { det = 0.0; break; }
            if (p != c) {
                det = -det;
                for (int j = 0; j < n; j++) std::swap(L[c * n + j], L[p * n + j]), std::swap(P[c * n + j], P[p * n + j]);
            }
            double piv = L[c * n + c];
            det *= piv;
            for (int j = 0; j < n; j++) L[c * n + j] /= piv, P[c * n + j] /= piv;
            for (int i = 0; i < n; i++) {
                if (i == c) continue;
                double f = L[i * n + c];
                for (int j = 0; j < n; j++) L[i * n + j] -= f * L[c * n + j], P[i * n + j] -= f * P[c * n + j];
            }
        }
        if (not_positive_definite(Ala, n, det)) {
            std::fill(x, x + n, 0.0);
            return false;
        }
        for (int i = 0; i < n; i++) v[i] = -dot(P + i * n, bs, n);
        double val = dot(v, v, n) - radius * radius;                  // |v|^2 - r^2: inside, or on the constraint
        if (val < 1e-10) break;
        double vPv = 0.0;
        for (int i = 0; i < n; i++) vPv += v[i] * dot(P + i * n, v, n);
        double delta = val / (2.0 * vPv);                               // Newton step on la: -val / (d val / d la)
        if (delta < 1e-10) break;
        la += delta;
    }
    for (int i = 0; i < n; i++) x[i] = v[i] * d[i];
    return la != 0;
}

// an elliptic contact's block updated in place: the normal alone (zero normal) or along the force's ray, then the
// tangential forces by the QCQP on the friction ellipsoid at the new normal (mj_solPGS's elliptic update)
inline void pgs_elliptic(const Rows &r, double *force, int i, int dim, const double *A, const double *res, const double *old,
                         double ARinv) {
    const double *mu = r.con.friction(r.id[size_t(i)]);
    if (force[i] < MINVAL) {                                           // normal update: f_n -= res_n / AR_nn, f_n >= 0
        force[i] = std::max(0.0, force[i] - res[0] * ARinv);
        std::fill(force + i + 1, force + i + dim, 0.0);
    } else {                                                           // ray update: f += x f, x = -f.res / f^T A f
        double v[6], denom = 0.0;
        std::copy(force + i, force + i + dim, v);
        for (int j = 0; j < dim; j++) denom += v[j] * dot(A + j * dim, v, dim);
        if (denom >= MINVAL) {
            double x = -dot(v, res, dim) / denom;
            if (force[i] + x * v[0] < 0) x = -v[0] / force[i];
            for (int j = 0; j < dim; j++) force[i + j] += x * v[j];
        }
    }
    // friction at a fixed normal: Ac = A_tt, bc = res_t - A_tt old_t + A_tn (f_n - old_n)
    int n = dim - 1;
    double Ac[25], bc[5], v[5];
    for (int j = 0; j < n; j++) {
        for (int l = 0; l < n; l++) Ac[j * n + l] = A[(j + 1) * dim + l + 1];
        bc[j] = res[j + 1] - dot(Ac + j * n, old + 1, n) + A[(j + 1) * dim] * (force[i] - old[0]);
    }
    if (force[i] < MINVAL) {
        std::fill(force + i + 1, force + i + dim, 0.0);
        return;
    }
    if (qcqp(Ac, bc, mu, force[i], n, v)) project_ellipsoid(v, force[i], mu, n, false);
    std::copy(v, v + n, force + i + 1);
}

// a one-row block's update from its residual res = (AR f + b)_i: f_i = old - res / AR_ii into [lower, upper]
// (pgs_bounds: project_cone's number), or old when the cost's change 1/2 delta^2 AR_ii + delta res is above 1e-10;
// returns the change (0 when kept) (pgs_sweep's, pgs_sweep_rows' and sweep_rows_together's one step)
__attribute__((always_inline)) inline double pgs_row(double res, int i, const double *ARinv, const double *ARdiag,
                                                     const double *lower, const double *upper, double *force) {
    const double old = force[i];
    double f = std::min(std::max(old - res * ARinv[i], lower[i]), upper[i]);
    double delta = f - old;
    double change = 0.5 * delta * delta * ARdiag[i] + delta * res;
    if (change > 1e-10) f = old, change = 0.0;
    force[i] = f;
    return change;
}

// one Gauss-Seidel sweep over the blocks in `order` (a permutation of the blocks), each minimising 1/2 f^T AR f + f^T b over its own forces and
// projected on its set; a block whose cost rises by more than 1e-10 keeps its old forces. ARdiag: 1 / ARinv, made once
// per solve (the cost's change of a row); lower, upper: the one-row blocks' bounds (pgs_bounds). Returns the improvement
PHYSAI_SCALAR_LOADS inline double pgs_sweep(const Rows &r, const double *AR, const double *ARinv, const double *ARdiag, const double *b,
                                            const double *lower, const double *upper, double *force,
                                            const std::vector<int> &first, const std::vector<int> &dims, const int *order) {
    int n = r.nefc;
    double improvement = 0.0;
    for (size_t o = 0; o < first.size(); o++) {
        int k = order[o], i = first[size_t(k)], dim = dims[size_t(k)];
        double res[6], old[6], A[36];
        if (dim == 1) {                                                // one row (pgs_row), its residual AR f + b
            improvement -= pgs_row(b[i] + dot_mj(AR + size_t(i) * n, force, n), i, ARinv, ARdiag, lower, upper, force);
            continue;
        }
        for (int j = 0; j < dim; j++) res[j] = b[i + j] + dot_mj(AR + size_t(i + j) * n, force, n);   // the residual AR f + b
        for (int j = 0; j < dim; j++) old[j] = force[i + j];
        for (int j = 0; j < dim; j++)                                  // an elliptic contact's block
            for (int l = 0; l < dim; l++) A[j * dim + l] = AR[size_t(i + j) * n + size_t(i + l)];
        pgs_elliptic(r, force, i, dim, A, res, old, ARinv[i]);
        // the cost's change 1/2 delta^T A delta + delta^T res, undone when positive
        double delta[6], change, quad = 0.0;
        for (int j = 0; j < dim; j++) delta[j] = force[i + j] - old[j];
        for (int j = 0; j < dim; j++) quad += delta[j] * dot(A + j * dim, delta, dim);
        change = 0.5 * quad + dot(delta, res, dim);
        if (change > 1e-10) {
            std::copy(old, old + dim, force + i);
            change = 0.0;
        }
        improvement -= change;
    }
    return improvement;
}

// dot_mj of n = n4 + T entries (n4 a multiple of 4, T = 0 .. 3 known): the same sums without the tail's tests (four
// entries a turn: eight measured more instructions at the Humanoid's 12 to 20 rows)
template <int T> PHYSAI_SCALAR_LOADS inline double dot_mj_tail(const double *a, const double *b, int n4) {
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    int i = 0;
    for (; i < n4; i += 4) s0 += a[i] * b[i], s1 += a[i + 1] * b[i + 1], s2 += a[i + 2] * b[i + 2], s3 += a[i + 3] * b[i + 3];
    double s = (s0 + s2) + (s1 + s3);
    if (T == 3) s += a[i] * b[i] + a[i + 1] * b[i + 1] + a[i + 2] * b[i + 2];
    else if (T == 2) s += a[i] * b[i] + a[i + 1] * b[i + 1];
    else if (T == 1) s += a[i] * b[i];
    return s;
}

// pgs_sweep when every block is one row (no elliptic contact: block k is row k), each row's projection as its bounds
// [lower, upper] (pgs_bounds), the same operations on each row as pgs_sweep's; T = n % 4 (pgs_sweep_rows below)
template <int T>
PHYSAI_SCALAR_LOADS inline double pgs_sweep_rows_t(int n, const double *AR, const double *ARinv, const double *ARdiag, const double *b,
                                                   const double *lower, const double *upper, double *force, const int *order) {
    double improvement = 0.0;
    const int n4 = n - T;
    for (int o = 0; o < n; o++) {
        int i = order[o];
        double res = b[i] + dot_mj_tail<T>(AR + size_t(i) * size_t(n), force, n4);     // the residual AR f + b
        improvement -= pgs_row(res, i, ARinv, ARdiag, lower, upper, force);
    }
    return improvement;
}
inline double pgs_sweep_rows(int n, const double *AR, const double *ARinv, const double *ARdiag, const double *b,
                             const double *lower, const double *upper, double *force, const int *order) {
    switch (n & 3) {
    case 0: return pgs_sweep_rows_t<0>(n, AR, ARinv, ARdiag, b, lower, upper, force, order);
    case 1: return pgs_sweep_rows_t<1>(n, AR, ARinv, ARdiag, b, lower, upper, force, order);
    case 2: return pgs_sweep_rows_t<2>(n, AR, ARinv, ARdiag, b, lower, upper, force, order);
    default: return pgs_sweep_rows_t<3>(n, AR, ARinv, ARdiag, b, lower, upper, force, order);
    }
}

// each one-row block's projection (project_cone's) as bounds: -inf, inf for equalities, +-frictionloss, 0, inf for limits
// and pyramidal contacts (min(max(f, lower), upper): the same number as project_cone's branch)
inline void pgs_bounds(const Rows &r, std::vector<double> &lower, std::vector<double> &upper) {
    const double inf = std::numeric_limits<double>::infinity();
    lower.assign(size_t(r.nefc), 0.0), upper.assign(size_t(r.nefc), inf);
    for (int i = 0; i < r.ne; i++) lower[size_t(i)] = -inf;
    for (int i = r.ne; i < r.ne + r.nf; i++) lower[size_t(i)] = -r.frictionloss[size_t(i)], upper[size_t(i)] = r.frictionloss[size_t(i)];
}

// MuJoCo's efc_state of dual forces (dualState): friction loss at a bound linear (of the opposite sign to the
// primal's), limits and pyramidal rows quadratic when pushing, elliptic contacts by the zone of (f_n / mu, f_t / friction)
inline void dual_state(const Rows &r, const double *force, const std::vector<int> &first, const std::vector<int> &dims,
                       int *state) {
    for (int i = 0; i < r.nefc; i++) state[i] = QUADRATIC;
    for (int i = r.ne; i < r.ne + r.nf; i++) {
        double fl = r.frictionloss[size_t(i)];
        state[i] = force[i] <= -fl ? LINEARPOS : force[i] >= fl ? LINEARNEG : QUADRATIC;
    }
    for (size_t k = 0; k < first.size(); k++) {
        int i = first[k], dim = dims[k];
        if (i < r.ne + r.nf) continue;
        if (dim == 1) {
            state[i] = force[i] <= 0 ? SATISFIED : QUADRATIC;
            continue;
        }
        int64_t c = r.id[size_t(i)];
        const double *friction = r.con.friction(c);
        double mu = r.contact_mu[size_t(c)], N = force[i] / mu, T = 0.0;
        for (int j = 1; j < dim; j++) T += (force[i + j] / friction[j - 1]) * (force[i + j] / friction[j - 1]);
        T = std::sqrt(T);
        int s = mu * N >= T ? SATISFIED : N + mu * T <= 0 ? QUADRATIC : CONE;
        std::fill(state + i, state + i + dim, s);
    }
}

// PGS's visiting orders are kept for at most this many blocks and iterations (pgs_order_at); beyond, shuffled as made
constexpr size_t PGS_KEPT_BLOCKS = 64;
constexpr int64_t PGS_KEPT_ITERATIONS = 128;

// the visiting orders of nb blocks (nb <= PGS_KEPT_BLOCKS) kept in w (pgs_order_at): the shuffle's orders depend on nb and
// the iteration alone (every solve starts from the identity and PCG32's state 0), so they are made once per workspace
// and kept (ConstraintWork::pgs_orders: the same orders as shuffling every iteration, without the draws)
inline ConstraintWork::PgsOrders &pgs_orders_of(ConstraintWork &w, size_t nb) {
    if (w.pgs_orders.size() <= nb) w.pgs_orders.resize(nb + 1);
    ConstraintWork::PgsOrders &kept = w.pgs_orders[nb];
    if (kept.current.size() != nb) {                                   // first use: the identity, MuJoCo's seed
        kept.current.resize(nb);
        for (size_t k = 0; k < nb; k++) kept.current[k] = int(k);
        kept.rng = 0, kept.made = 0, kept.orders.clear();
        pcg32(kept.rng);
    }
    return kept;
}

// iteration it's visiting order (it < PGS_KEPT_ITERATIONS) of kept's nb blocks, made when first asked for; magic:
// mod_magics' for nb
inline const int *pgs_order_at(ConstraintWork::PgsOrders &kept, size_t nb, int64_t it, const std::vector<uint64_t> &magic) {
    for (; kept.made <= it; kept.made++) {
        shuffle(kept.current, kept.rng, magic);
        kept.orders.insert(kept.orders.end(), kept.current.begin(), kept.current.end());
    }
    return kept.orders.data() + size_t(it) * nb;
}

// the rows' forces at J warmstart - aref into w.force, zero when their dual cost f^T b + 1/2 f^T AR f is positive
// (unless chosen: an island's, whose start the whole problem chose) (_pgs_start)
inline void pgs_start(ConstraintWork &w, const std::vector<double> &AR, const std::vector<double> &b,
                      const double *warmstart, bool chosen) {
    const Rows &r = w.r;
    int n = r.nefc;
    double *force = w.force.data();
    rows_times(r, warmstart, w.jar.data());
    for (int i = 0; i < n; i++) w.jar[size_t(i)] -= r.aref[size_t(i)];
    update(r, w.jar.data(), force, w.wstate.data(), nullptr);
    double cost = dot(force, b.data(), n);
    for (int i = 0; i < n; i++)                                        // a zero force's term is +-0: cost > 0 as with it
        if (force[i] != 0.0) cost += 0.5 * force[i] * dot(AR.data() + size_t(i) * n, force, n);
    if (!chosen && cost > 0) std::fill(force, force + n, 0.0);
}

// solve_pgs up to its loop, into w.pgs (the loop: pgs_extrapolate, a sweep, pgs_advance; then pgs_finish): M factored
// when given, AR, b, the warm start's forces, the tolerance's scale (0: tolerance_scale), the blocks, the bounds and
// the visiting orders; OK or SINGULAR
inline int pgs_setup(const Model &m, ConstraintWork &w, const double *M, const double *warmstart, double tolerance,
                     int64_t iterations, double scale, bool chosen) {
    const Rows &r = w.r;
    int n = r.nefc;
    for (auto *x : {&w.force, &w.jar, &w.wforce})
        if (x->size() < size_t(n)) x->resize(size_t(n));
    for (auto *x : {&w.state, &w.wstate})
        if (x->size() < size_t(n)) x->resize(size_t(n));
    if (M) {
        tree_pack(m, M, w.Mt.data());
        if (!factor_mass(m, w)) return SINGULAR;
    }
    // AR = J M^-1 J^T + R, b = J a0 - aref
    const size_t N = static_cast<size_t>(n);
    std::vector<double> &AR = w.dual_A, &b = w.dual_b, &ARinv = w.dual_inv, &ARdiag = w.dual_diag;   // kept in w: no
    ARinv.resize(N), ARdiag.resize(N);                                                                // allocation per call
    dual_problem(m, w, AR, b);
    for (int i = 0; i < n; i++) AR[size_t(i) * (n + 1)] += r.R[size_t(i)], ARinv[size_t(i)] = 1.0 / AR[size_t(i) * (n + 1)];
    for (int i = 0; i < n; i++) ARdiag[size_t(i)] = 1.0 / ARinv[size_t(i)];   // MuJoCo's 1 / ARinv (costChange's A), once
    double *force = w.force.data();
    std::fill(force, force + n, 0.0);
    if (warmstart) pgs_start(w, AR, b, warmstart, chosen);               // the rows' forces at the warm start, if cost <= 0
    ConstraintWork::PgsRun &p = w.pgs;
    p.scale = scale == 0.0 ? tolerance_scale(m, w.Mt.data()) : scale;
    p.tolerance = tolerance, p.iterations = iterations, p.k = 0, p.it = 0, p.improvement = 0.0;
    std::vector<int> &first = w.pgs_first, &order = w.pgs_order;
    pgs_blocks(r, first, w.pgs_dims);
    const size_t nb = first.size();
    order.resize(nb);
    for (size_t k = 0; k < nb; k++) order[k] = int(k);
    mod_magics(w.pgs_magic, nb);                                       // the shuffle's moduli 1 .. nblocks
    p.rng = 0;                                                         // MuJoCo's seed: state 0, one draw
    pcg32(p.rng);
    p.kept = nb <= PGS_KEPT_BLOCKS ? &pgs_orders_of(w, nb) : nullptr;  // else drawn here
    p.rows = nb == N;                                                  // every block one row: pgs_sweep_rows
    w.pgs_previous.assign(force, force + n), w.pgs_momentum.resize(N);
    pgs_bounds(r, w.pgs_lower, w.pgs_upper);
    return OK;
}

// an iteration's start (solve_pgs's): Nesterov's f += beta (f - f_prev), projected (momentum), f_prev the value before;
// the iteration's visiting order of the blocks into w.pgs.visit
inline void pgs_extrapolate(ConstraintWork &w) {
    const Rows &r = w.r;
    ConstraintWork::PgsRun &p = w.pgs;
    int n = r.nefc;
    double *force = w.force.data(), *previous = w.pgs_previous.data(), *momentum = w.pgs_momentum.data();
    const double beta = p.it > 0 ? double(p.k - 1) / double(p.k + 2) : 0.0;
    p.beta = beta;
    auto extrapolated = [&](int i) {                                   // f_i + beta (f_i - f_prev_i), f_prev_i <- f_i
        double saved = force[i], f = saved + beta * (saved - previous[i]);
        previous[i] = saved;
        return f;
    };
    if (beta > 0 && p.rows) {                                          // one pass: extrapolated, projected, kept
        const double *lower = w.pgs_lower.data(), *upper = w.pgs_upper.data();
        for (int i = 0; i < n; i++) {
            double f = std::min(std::max(extrapolated(i), lower[i]), upper[i]);
            force[i] = f, momentum[i] = f;
        }
    } else if (beta > 0) {
        for (int i = 0; i < n; i++) force[i] = extrapolated(i);
        project_cone(r, force, w.pgs_first, w.pgs_dims);
        std::copy(force, force + n, momentum);
    } else {                                                           // momentum = f_prev = f: no restart test below
        std::copy(force, force + n, previous);
    }
    const size_t nb = w.pgs_first.size();
    if (p.kept && p.it < PGS_KEPT_ITERATIONS) {
        p.visit = pgs_order_at(*p.kept, nb, p.it, w.pgs_magic);
    } else {
        if (p.kept && p.it == PGS_KEPT_ITERATIONS)                     // on from the last kept order
            w.pgs_order.assign(p.kept->current.begin(), p.kept->current.end()), p.rng = p.kept->rng;
        shuffle(w.pgs_order, p.rng, w.pgs_magic);
        p.visit = w.pgs_order.data();
    }
}

// an iteration's sweep over w.pgs.visit (solve_pgs's): its improvement before the scale
inline double pgs_sweep_once(ConstraintWork &w) {
    const Rows &r = w.r;
    const ConstraintWork::PgsRun &p = w.pgs;
    return p.rows ? pgs_sweep_rows(r.nefc, w.dual_A.data(), w.dual_inv.data(), w.dual_diag.data(), w.dual_b.data(),
                                   w.pgs_lower.data(), w.pgs_upper.data(), w.force.data(), p.visit)
                  : pgs_sweep(r, w.dual_A.data(), w.dual_inv.data(), w.dual_diag.data(), w.dual_b.data(), w.pgs_lower.data(),
                              w.pgs_upper.data(), w.force.data(), w.pgs_first, w.pgs_dims, p.visit);
}

// an iteration's end after its sweep improved the cost by swept (unscaled; solve_pgs's): the restart test (a
// correction that opposes the extrapolation; none without one: each term (f - m) 0, never < 0), the count; true while
// the solve goes on (iterations left, the scaled improvement not below the tolerance)
inline bool pgs_advance(ConstraintWork &w, double swept) {
    ConstraintWork::PgsRun &p = w.pgs;
    const int n = w.r.nefc;
    const double *force = w.force.data(), *momentum = w.pgs_momentum.data(), *previous = w.pgs_previous.data();
    p.improvement = p.scale * swept;
    double opposed = 0.0;
    if (p.beta > 0)
        for (int i = 0; i < n; i++) opposed += (force[i] - momentum[i]) * (momentum[i] - previous[i]);
    p.k = p.it > 0 && opposed < 0 ? 0 : p.k + 1;
    p.it++;
    return !(p.improvement < p.tolerance) && p.it < p.iterations;
}

// a PGS solve's end (solve_pgs's, mj_dualFinish): qacc = a0 + M^-1 J^T f, the rows' dual states, sol
inline void pgs_finish(const Model &m, ConstraintWork &w, Solution &sol) {
    const Rows &r = w.r;
    double *qacc = w.qacc.data();
    rows_transpose_times(r, w.force.data(), qacc);
    tree_solve(m, w.d.qL.data(), w.d.qLinv.data(), qacc);
    for (int j = 0; j < m.nv; j++) qacc[j] += w.qacc_smooth[size_t(j)];
    dual_state(r, w.force.data(), w.pgs_first, w.pgs_dims, w.state.data());
    const ConstraintWork::PgsRun &p = w.pgs;
    sol.iterations = p.it, sol.improvement = p.improvement, sol.converged = p.improvement < p.tolerance;
}

// the constrained accelerations by MuJoCo's projected Gauss-Seidel on the dual problem (solver.solve_pgs): forces f
// minimising 1/2 f^T AR f + f^T b, AR = J M^-1 J^T + diag(R), b = J a0 - aref, in each row's set, Nesterov's
// extrapolation with restart and sweeps in MuJoCo's PCG32 order, stopped by the scaled improvement (1 / trace(M)) or
// the iteration limit; then qacc = a0 + M^-1 J^T f (mj_dualFinish). M as for solve; SINGULAR when M is not positive
// definite
inline int solve_pgs(const Model &m, ConstraintWork &w, const double *M, const double *warmstart, double tolerance,
                     int64_t iterations, Solution &sol, double scale = 0.0, bool chosen = false) {
    int st = pgs_setup(m, w, M, warmstart, tolerance, iterations, scale, chosen);
    if (st != OK) return st;
    if (iterations > 0)
        do pgs_extrapolate(w);
        while (pgs_advance(w, pgs_sweep_once(w)));
    pgs_finish(m, w, sol);
    return OK;
}

// the one-row sweeps of count <= BLOCK solves (w[a], each set up with its visiting order made: pgs_extrapolate), row by
// row in turn (a row's residual waits on the force just stored, so the solves' chains overlap), each solve's operations
// and order pgs_sweep_rows'; each's improvement before the scale into swept[a]. Wide: the residual's sums in one vector
// (wide.h's dot_sums, dot_mj's numbers), for the AVX2 variant
template <bool Wide>
__attribute__((always_inline)) inline void sweep_rows_together(ConstraintWork *const *w, int count, double *swept) {
    struct Lane {
        int n;
        const double *AR, *ARinv, *ARdiag, *b, *lower, *upper;
        double *force;
        const int *visit;
    } lane[BLOCK];
    int most = 0;
    for (int a = 0; a < count; a++) {
        ConstraintWork &x = *w[a];
        lane[a] = Lane{x.r.nefc, x.dual_A.data(), x.dual_inv.data(), x.dual_diag.data(), x.dual_b.data(),
                       x.pgs_lower.data(), x.pgs_upper.data(), x.force.data(), x.pgs.visit};
        most = std::max(most, x.r.nefc), swept[a] = 0.0;
    }
    for (int o = 0; o < most; o++)
        for (int a = 0; a < count; a++) {
            const Lane &l = lane[a];
            if (o >= l.n) continue;
            int i = l.visit[o];
            const double *Ai = l.AR + size_t(i) * size_t(l.n);
            double res = l.b[i] + (Wide ? dot_sums(Ai, l.force, l.n) : dot_mj(Ai, l.force, l.n));     // AR f + b
            swept[a] -= pgs_row(res, i, l.ARinv, l.ARdiag, l.lower, l.upper, l.force);
        }
}
using SweepRowsTogether = void (*)(ConstraintWork *const *, int, double *);
PHYSAI_SCALAR_LOADS inline void sweep_rows_together_plain(ConstraintWork *const *w, int count, double *swept) {
    sweep_rows_together<false>(w, count, swept);
}
#if defined(__GNUC__) && (defined(__x86_64__) || defined(_M_X64))
__attribute__((target("avx2"))) inline void sweep_rows_together_avx2(ConstraintWork *const *w, int count, double *swept) {
    sweep_rows_together<true>(w, count, swept);
}
#else
inline void sweep_rows_together_avx2(ConstraintWork *const *w, int count, double *swept) {
    sweep_rows_together<false>(w, count, swept);
}
#endif
// sweep_rows_together for the active instruction set (plain: dot_mj's scalar sums, faster than two SSE2 pairs)
inline SweepRowsTogether pgs_sweep_rows_together() {
    return wide_isa() == 0 ? sweep_rows_together_plain : sweep_rows_together_avx2;
}

// the loops of count <= BLOCK PGS solves set up (pgs_setup) at once, each solve's iterations solve_pgs's (its
// extrapolation, sweep, restart and stop), the one-row sweeps of the solves still going interleaved
// (sweep_rows_together); the caller ends each by pgs_finish (a workspace schedule: the same numbers as one by one)
inline void pgs_together(ConstraintWork *const *w, int count) {
    const SweepRowsTogether sweep_rows = pgs_sweep_rows_together();
    ConstraintWork *going[BLOCK], *one_row[BLOCK];
    int ngoing = 0;
    for (int a = 0; a < count; a++)
        if (w[a]->pgs.iterations > 0) going[ngoing++] = w[a];
    while (ngoing) {
        double swept[BLOCK], swept_rows[BLOCK];
        int nrows = 0;
        for (int a = 0; a < ngoing; a++) {
            pgs_extrapolate(*going[a]);
            if (going[a]->pgs.rows) one_row[nrows++] = going[a];
        }
        sweep_rows(one_row, nrows, swept_rows);
        for (int a = 0, k = 0; a < ngoing; a++) swept[a] = going[a]->pgs.rows ? swept_rows[k++] : pgs_sweep_once(*going[a]);
        int still = 0;
        for (int a = 0; a < ngoing; a++)
            if (pgs_advance(*going[a], swept[a])) going[still++] = going[a];
        ngoing = still;
    }
}

// ---------------------------------------------------------------- noslip: the friction forces again (mj_solNoSlip)

// the cost's change 1/2 delta^T A delta + delta^T res of a block's new forces (n of them, in place), which keeps its old
// forces when the change is above 1e-10 (MuJoCo's costChange; _friction_change)
inline double friction_change(const double *A, double *force, const double *old, const double *res, int n) {
    double delta[5], change = 0.0;
    for (int j = 0; j < n; j++) delta[j] = force[j] - old[j];
    for (int j = 0; j < n; j++) change += 0.5 * delta[j] * dot(A + j * n, delta, n) + delta[j] * res[j];
    if (change > 1e-10) {
        std::copy(old, old + n, force);
        return 0.0;
    }
    return change;
}

// A's diagonal block of rows first..first + n into block, its diagonal at least 1e-10 (extractBlock without R;
// _friction_block); the block's residual A f + b into res and its forces into old
inline void friction_block(const std::vector<double> &A, const std::vector<double> &b, const double *force, int nefc,
                           int first, int n, double *block, double *res, double *old) {
    for (int j = 0; j < n; j++) {
        const double *row = A.data() + size_t(first + j) * nefc;
        for (int k = 0; k < n; k++) block[j * n + k] = row[first + k];
        block[j * (n + 1)] = std::max(1e-10, block[j * (n + 1)]);
        res[j] = b[size_t(first + j)] + dot(row, force, nefc), old[j] = force[first + j];
    }
}

// a pair of opposing pyramid edges j, j + 1 at a fixed sum 2 mid: f = mid +- y minimising the cost over y in
// [-mid, mid] (K1 y + K0 = 0); returns the cost's change (_noslip_pyramid)
inline double noslip_pyramid(const std::vector<double> &A, const std::vector<double> &b, double *force, int nefc, int j) {
    double Ac[4], res[2], old[2], bc[2];
    friction_block(A, b, force, nefc, j, 2, Ac, res, old);
    for (int k = 0; k < 2; k++) bc[k] = res[k] - dot(Ac + 2 * k, old, 2);
    double mid = 0.5 * (old[0] + old[1]), K1 = Ac[0] + Ac[3] - Ac[1] - Ac[2];
    if (K1 < MINVAL) {                                                 // guard against Ac = 0
        force[j] = force[j + 1] = mid;
    } else {                                                           // y = -K0 / K1, clamped to [-mid, mid]
        double y = std::min(std::max(-(mid * (Ac[0] - Ac[3]) + bc[0] - bc[1]) / K1, -mid), mid);
        force[j] = mid + y, force[j + 1] = mid - y;
    }
    return friction_change(Ac, force + j, old, res, 2);
}

// an elliptic contact's tangential forces at its normal force: the QCQP on its friction ellipsoid (zero at a zero
// normal); returns the cost's change (_noslip_ellipse)
inline double noslip_ellipse(const Rows &r, const std::vector<double> &A, const std::vector<double> &b, double *force,
                             int i, int dim) {
    int n = dim - 1;
    double Ac[25], res[5], old[5], bc[5], v[5];
    friction_block(A, b, force, r.nefc, i + 1, n, Ac, res, old);
    if (force[i] < MINVAL) {
        std::fill(force + i + 1, force + i + dim, 0.0);
    } else {
        const double *mu = r.con.friction(r.id[size_t(i)]);
        for (int j = 0; j < n; j++) bc[j] = res[j] - dot(Ac + j * n, old, n);
        if (qcqp(Ac, bc, mu, force[i], n, v)) project_ellipsoid(v, force[i], mu, n, false);
        for (int j = 0; j < n; j++) force[i + 1 + j] = v[j];          // a loop: GCC's std::copy reads n < 0 as a huge size
    }
    return friction_change(Ac, force + i + 1, old, res, n);
}

// (first row, dim) of each contact with friction: a pyramidal one's 2 (dim - 1) rows, an elliptic one's dim
// (_friction_contacts)
inline void friction_contacts(const Rows &r, std::vector<int> &first, std::vector<int> &dims) {
    first.clear(), dims.clear();
    for (int i = r.ne + r.nf; i < r.nefc;) {
        int64_t kind = r.type[size_t(i)];
        if (kind != CONTACT_PYRAMIDAL && kind != CONTACT_ELLIPTIC) {
            i++;
            continue;
        }
        int dim = int(r.con.dim(r.id[size_t(i)]));
        first.push_back(i), dims.push_back(dim);
        i += kind == CONTACT_PYRAMIDAL ? 2 * (dim - 1) : dim;
    }
}

// one noslip sweep in row order: friction loss f -= res / A_ii clamped to +-frictionloss, then each contact's friction
// (pyramid edge pairs, or the elliptic block), res = A f + b without R; returns the improvement (_noslip_sweep)
inline double noslip_sweep(const Rows &r, const std::vector<double> &A, const std::vector<double> &Ainv,
                           const std::vector<double> &b, double *force, const std::vector<int> &first,
                           const std::vector<int> &dims) {
    double improvement = 0.0;
    int n = r.nefc;
    for (int i = r.ne; i < r.ne + r.nf; i++) {                         // dry friction
        double res = b[size_t(i)] + dot(A.data() + size_t(i) * n, force, n), old = force[i], fl = r.frictionloss[size_t(i)];
        force[i] = std::min(std::max(force[i] - res * Ainv[size_t(i)], -fl), fl);
        double delta = force[i] - old;
        improvement -= 0.5 * delta * delta / Ainv[size_t(i)] + delta * res;
    }
    for (size_t k = 0; k < first.size(); k++) {                        // contact friction
        int i = first[k], dim = dims[k];
        if (r.type[size_t(i)] == CONTACT_PYRAMIDAL) {
            for (int j = i; j < i + 2 * (dim - 1); j += 2) improvement -= noslip_pyramid(A, b, force, n, j);
        } else {
            improvement -= noslip_ellipse(r, A, b, force, i, dim);
        }
    }
    return improvement;
}

// the solution with its friction forces solved again without the regulariser R (MuJoCo's mj_solNoSlip, after every
// solver when opt.noslip_iterations > 0; solver.noslip): Gauss-Seidel sweeps on 1/2 f^T A f + f^T b, A = J M^-1 J^T,
// until the sweep's improvement scaled by tolerance_scale (the first sweep's plus 1/2 sum R f^2) is below
// opt.noslip_tolerance, at most opt.noslip_iterations sweeps; then qacc = a0 + M^-1 J^T f (mj_dualFinish). Its
// iterations add to the solver's; stopped at its limit, the solution is not converged and its improvement is the
// last sweep's. M's factor in w.d.qL, w.d.qLinv (the solver's).
inline void noslip(const Model &m, ConstraintWork &w, Solution &sol, double scale = 0.0) {
    const Rows &r = w.r;
    int nv = m.nv, n = r.nefc;
    std::vector<double> A, b, Ainv(static_cast<size_t>(n));
    dual_problem(m, w, A, b);
    for (int i = 0; i < n; i++) Ainv[size_t(i)] = 1.0 / std::max(MINVAL, A[size_t(i) * (n + 1)]);
    std::vector<int> first, dims;
    friction_contacts(r, first, dims);
    double *force = w.force.data();
    if (scale == 0.0) scale = tolerance_scale(m, w.Mt.data());
    int64_t it = 0;
    double improvement = 0.0;
    while (it < m.opt_noslip_iterations) {
        improvement = 0.0;
        if (it == 0)                                                   // the cost without R at the start
            for (int i = 0; i < n; i++) improvement += 0.5 * force[i] * (r.R[size_t(i)] * force[i]);
        improvement = scale * (improvement + noslip_sweep(r, A, Ainv, b, force, first, dims));
        it++;
        if (improvement < m.opt_noslip_tolerance) break;
    }
    // qacc = a0 + M^-1 J^T f
    double *qacc = w.qacc.data();
    rows_transpose_times(r, force, qacc);
    tree_solve(m, w.d.qL.data(), w.d.qLinv.data(), qacc);
    for (int j = 0; j < nv; j++) qacc[j] += w.qacc_smooth[size_t(j)];
    pgs_blocks(r, first, dims);
    dual_state(r, force, first, dims, w.state.data());
    sol.iterations += it;
    if (!(improvement < m.opt_noslip_tolerance)) {                     // stopped at its limit: the warning's numbers
        sol.converged = false;
        sol.improvement = improvement;
    }
}

// no rows (nefc = 0, mj_fwdConstraint's early return; solver._solve_without_rows): qacc = a0 = M^-1 qfrc_smooth (M as
// for solve; smooth_acceleration to the tolerance, at most `iterations`), no iterations, no improvement, converged
// (MuJoCo's solver_niter 0); SINGULAR when M is not positive definite
inline int solve_without_rows(const Model &m, ConstraintWork &w, const double *M, Solution &sol, double tolerance,
                              int64_t iterations) {
    if (M) {                                                           // M on the tree's pattern, factored
        tree_pack(m, M, w.Mt.data());
        if (!factor_mass(m, w)) return SINGULAR;
    }
    smooth_acceleration(m, w, w.qfrc_smooth.data(), w.qacc_smooth.data(), tolerance, iterations);
    std::copy(w.qacc_smooth.begin(), w.qacc_smooth.end(), w.qacc.begin());
    sol.iterations = 0, sol.improvement = 0.0, sol.converged = true;
    return OK;
}

// the solver m.opt_solver names (Newton: solve, PGS: solve_pgs, CG: solve_cg) on w's rows with the tolerance scale
// (0: tolerance_scale) and a start already chosen or not, then noslip when opt.noslip_iterations > 0; without rows
// no solver runs (solve_without_rows)
inline int run_solver(const Model &m, ConstraintWork &w, const double *M, const double *warmstart, double tolerance,
                      int64_t iterations, Solution &sol, double scale, bool chosen) {
    if (w.r.nefc == 0) return solve_without_rows(m, w, M, sol, tolerance, iterations);
    int status = m.opt_solver == SOLVER_PGS ? solve_pgs(m, w, M, warmstart, tolerance, iterations, sol, scale, chosen)
                 : m.opt_solver == SOLVER_CG ? solve_cg(m, w, M, warmstart, tolerance, iterations, sol, scale, chosen)
                                             : solve(m, w, M, warmstart, tolerance, iterations, sol, scale, chosen);
    if (status == OK && m.opt_noslip_iterations > 0) noslip(m, w, sol, scale);
    return status;
}

// the start every island continues from, chosen on all rows (MuJoCo's warmstart; _island_start) into start (nv):
// Newton and CG the warm start when its primal cost is lower than a0's, else a0; PGS the warm start unless its forces'
// dual cost is positive (false: zero forces). M's factor in w.d.qL, w.d.qLinv.
inline bool island_start(const Model &m, ConstraintWork &w, const double *warmstart, std::vector<double> &start) {
    if (!warmstart) return false;
    if (m.opt_solver != SOLVER_PGS) {
        primal_start(m, w, nullptr, warmstart);
        start.assign(w.qacc.begin(), w.qacc.begin() + m.nv);
        return true;
    }
    int n = w.r.nefc;
    std::vector<double> AR, b;
    dual_problem(m, w, AR, b);
    for (int i = 0; i < n; i++) AR[size_t(i) * (n + 1)] += w.r.R[size_t(i)];
    for (auto *x : {&w.force, &w.jar})
        if (x->size() < size_t(n)) x->resize(size_t(n));
    if (w.wstate.size() < size_t(n)) w.wstate.resize(size_t(n));
    pgs_start(w, AR, b, warmstart, false);
    start.assign(warmstart, warmstart + m.nv);
    return std::any_of(w.force.begin(), w.force.begin() + n, [](double f) { return f != 0.0; });
}

// whether solve_islands gathers each island's dofs (island_model): when the solver's sums run over the dofs one by one
// (Newton, CG; PGS's and noslip's dual problem sums four dofs at a time, dot_mj, its rounding set by where the dofs are), so that the island's dofs alone give the same numbers as every dof with the others at zero; not in the
// discrete step's metric with couplings (w.coupled: its layout may be every dof's chain, metric_model)
inline bool gathers_islands(const Model &m, const ConstraintWork &w) {
    return m.opt_solver != SOLVER_PGS && m.opt_noslip_iterations == 0 && !w.coupled;
}

// the island's dofs gathered, a workspace for solve_islands: into mi (a copy of m) the island's nv dofs in order, M's
// pattern (M_rowadr, M_rownnz, M_colind, dof_parentid) in their island numbers (w.island_*; an island holds whole trees,
// a dof's ancestors are its island's), and in w.Mt, w.d.qL, w.d.qLinv the island's entries of M, its factor and
// reciprocal diagonal (every dof's in w.all_*); the island's rows (island_rows) with their columns renumbered into
// w.r. M's and H's rows of the other dofs are apart from the island's, so that each of the island's entries takes the
// same operations as on every dof: O(island) per island instead of O(nv)
inline void island_model(const Model &m, ConstraintWork &w, const Rows &all, const Island &island, Model &mi,
                         bool contacts = true) {
    const size_t n = island.dofs.size();
    const int *dofs = island.dofs.data();
    w.island_rowadr.resize(n), w.island_rownnz.resize(n), w.island_parent.resize(n);
    size_t nnz_all = 0;
    for (size_t a = 0; a < n; a++) w.island_local[size_t(dofs[a])] = int64_t(a), nnz_all += size_t(m.M_rownnz[dofs[a]]);
    w.island_colind.resize(nnz_all);
    int64_t *colind = w.island_colind.data();
    for (size_t a = 0, at = 0; a < n; a++) {                           // the pattern in the island's numbers
        const int j = dofs[a];
        const int64_t adr = m.M_rowadr[j], nnz = m.M_rownnz[j];
        w.island_rowadr[a] = int64_t(at), w.island_rownnz[a] = nnz;
        w.island_parent[a] = m.dof_parentid[j] < 0 ? -1 : w.island_local[size_t(m.dof_parentid[j])];
        for (int64_t s = 0; s < nnz; s++) colind[at++] = w.island_local[size_t(m.M_colind[adr + s])];
        w.d.qLinv[a] = w.all_qLinv[size_t(j)];
    }
    for (size_t a = 0, at = 0; a < n;) {                               // M's and its factor's entries: each run of rows
        size_t b = a + 1;                                              // next to each other in every dof's layout whole
        while (b < n && m.M_rowadr[dofs[b]] == m.M_rowadr[dofs[b - 1]] + m.M_rownnz[dofs[b - 1]]) b++;
        const size_t adr = size_t(m.M_rowadr[dofs[a]]), len = size_t(m.M_rowadr[dofs[b - 1]] + m.M_rownnz[dofs[b - 1]]) - adr;
        std::copy_n(w.all_Mt.begin() + ptrdiff_t(adr), len, w.Mt.begin() + ptrdiff_t(at));
        std::copy_n(w.all_qL.begin() + ptrdiff_t(adr), len, w.d.qL.begin() + ptrdiff_t(at));
        at += len, a = b;
    }
    mi.nv = int(n), mi.M_rowadr = w.island_rowadr.data(), mi.M_rownnz = w.island_rownnz.data();
    mi.M_colind = w.island_colind.data(), mi.dof_parentid = w.island_parent.data();
    island_rows(m, all, island, w.r, contacts, w.island_local.data());   // its columns in the island's numbers
    w.r.nv = int(n), w.r.tree = chains(mi, w.r);
}

// run_solver on each island alone (mj_fwdConstraint with islands; _solve_islands): its rows, its dofs' qfrc_smooth and
// start (zero elsewhere, so every other dof stays exactly at zero), its own scale 1 / trace(M_island), iteration count
// and stopping test, then its own noslip; dofs in no island keep a0. sol's iterations and improvement are the largest
// over the islands, converged whether every island converged; w's rows, qacc, force and state those of all rows.
// Newton and CG run on the island's dofs alone (island_model: the same numbers). inertia (nv): the diagonal whose
// island sums scale the tolerances when M is not the mass matrix (the discrete step's metric; nullptr: M's).
inline int solve_islands(const Model &m, ConstraintWork &w, const double *M, const double *warmstart, double tolerance,
                         int64_t iterations, const std::vector<Island> &islands, Solution &sol,
                         const double *inertia = nullptr) {
    int nv = m.nv, n = w.r.nefc;
    if (M) {                                                           // M on the tree's pattern, factored
        tree_pack(m, M, w.Mt.data());
        if (!factor_mass(m, w)) return SINGULAR;
    }
    // the gathered vectors in w's room (refilled, not allocated)
    std::vector<double> &start = w.gather_start, &warm = w.gather_warm, &qfrc = w.gather_qfrc, &qacc = w.gather_qacc,
                        &force = w.gather_force;
    std::vector<int> &state = w.gather_state;
    start.clear(), warm.assign(size_t(nv), 0.0), qfrc.assign(w.qfrc_smooth.begin(), w.qfrc_smooth.end());
    qacc.assign(qfrc.begin(), qfrc.end()), force.assign(size_t(n), 0.0), state.assign(size_t(n), 0);
    if (w.coupled) {                                                   // a0 of every dof in M^ (smooth_acceleration),
        smooth_acceleration(m, w, qfrc.data(), qacc.data(), tolerance, iterations);   // the start chosen with it
        std::copy(qacc.begin(), qacc.end(), w.qacc_smooth.begin());
        w.a0_given = true;
    }
    bool started = island_start(m, w, warmstart, start);
    w.a0_given = false;
    if (!w.coupled && started && m.opt_solver != SOLVER_PGS)           // a0 of every dof: island_start's (the same solve)
        std::copy(w.qacc_smooth.begin(), w.qacc_smooth.begin() + nv, qacc.begin());
    else if (!w.coupled)
        tree_solve(m, w.d.qL.data(), w.d.qLinv.data(), qacc.data());
    const bool gather = gathers_islands(m, w);
    // the start's evaluation on every row (island_start's primal_start) kept for the islands, its cones by first row
    const bool evaluated = gather && started;
    if (evaluated) {
        w.start_Ma.assign(w.Ma.begin(), w.Ma.begin() + nv), w.start_jar.assign(w.jar.begin(), w.jar.begin() + n);
        w.start_force.assign(w.force.begin(), w.force.begin() + n), w.start_state.assign(w.state.begin(), w.state.begin() + n);
        w.start_cones.n = 0, w.start_cone.assign(size_t(n), -1);
        for (int k = 0; k < w.cones.n; k++) {
            w.start_cone[size_t(w.cones.first[size_t(k)])] = k;
            add_cone(w.start_cones, w.cones.first[size_t(k)], w.cones, k);
        }
    }
    if (gather) {                                                      // every dof's M and factor kept aside
        w.island_local.resize(size_t(nv));
        std::swap(w.Mt, w.all_Mt), std::swap(w.d.qL, w.all_qL), std::swap(w.d.qLinv, w.all_qLinv);
        w.Mt.resize(w.all_Mt.size()), w.d.qL.resize(w.all_qL.size()), w.d.qLinv.resize(w.all_qLinv.size());
        w.all_nv = nv;
    }
    const std::vector<double> &Mt = gather ? w.all_Mt : w.Mt;
    // all rows set aside in w.all_rows; w.r takes the islands' rows in the room they had last step
    std::swap(w.r, w.all_rows);
    Rows &all = w.all_rows;
    w.r.con = std::move(all.con), w.r.contact_mu = std::move(all.contact_mu);   // every island's, not copied per island
    sol = Solution{0, 0.0, true};
    int status = OK;
    Model mi = m;                                                      // each island's (island_model), copied once
    for (const Island &island : islands) {
        w.layout_slot = size_t(&island - islands.data());             // the island's kept layout of H's factor
        if (gather) island_model(m, w, all, island, mi, false);
        if (!gather) {
            island_rows(m, all, island, w.r, false);
            std::fill(w.qfrc_smooth.begin(), w.qfrc_smooth.end(), 0.0), std::fill(warm.begin(), warm.end(), 0.0);
            if (w.coupled) std::fill(w.qacc_smooth.begin(), w.qacc_smooth.end(), 0.0);
        }
        double trace = 0.0;
        for (size_t a = 0; a < island.dofs.size(); a++) {
            size_t k = size_t(island.dofs[a]), at = gather ? a : k;
            w.qfrc_smooth[at] = qfrc[k], warm[at] = started ? start[k] : 0.0;
            if (gather || w.coupled) w.qacc_smooth[at] = qacc[k];      // the island's a0: every dof's entries (its
            trace += inertia ? inertia[k] : Mt[size_t(m.M_rowadr[k] + m.M_rownnz[k] - 1)];   // trees' own solve)
        }
        Solution one;                                                  // in M^: one capped a0 solve a step, as MuJoCo's
        w.a0_given = gather || w.coupled, w.start_of = evaluated ? &island : nullptr;
        status = run_solver(mi, w, nullptr, started ? warm.data() : nullptr, tolerance, iterations, one, 1.0 / trace, true);
        w.a0_given = false, w.start_of = nullptr;
        if (status != OK) break;
        for (size_t a = 0; a < island.dofs.size(); a++) qacc[size_t(island.dofs[a])] = w.qacc[gather ? a : size_t(island.dofs[a])];
        for (size_t c = 0; c < island.rows.size(); c++)
            force[size_t(island.rows[c])] = w.force[c], state[size_t(island.rows[c])] = w.state[c];
        sol.iterations = std::max(sol.iterations, one.iterations), sol.improvement = std::max(sol.improvement, one.improvement);
        sol.converged = sol.converged && one.converged;
    }
    if (gather) {
        std::swap(w.Mt, w.all_Mt), std::swap(w.d.qL, w.all_qL), std::swap(w.d.qLinv, w.all_qLinv);
        w.all_nv = 0;
    }
    all.con = std::move(w.r.con), all.contact_mu = std::move(w.r.contact_mu), w.layout_slot = 0;
    std::swap(w.r, w.all_rows), w.qfrc_smooth.assign(qfrc.begin(), qfrc.end());
    std::copy(qacc.begin(), qacc.end(), w.qacc.begin());
    w.force.assign(force.begin(), force.end()), w.state.assign(state.begin(), state.end());
    return status;
}

// the solver m.opt_solver names on w's rows, then noslip (MuJoCo's mj_fwdConstraint; solver.solve_with): on each
// island by itself when opt.island, else on all rows at once (as is one island over every dof: the same problem, without
// the copies); inertia (nv): the mass matrix's diagonal whose trace scales the tolerances when M is not it (the
// discrete step's metric; nullptr: M's). With w.pgs_defer (once), a PGS solve on all rows without noslip is only set
// up (pgs_setup: PGS_PENDING), for the lanes' pgs_together and pgs_finish
inline int solve_with(const Model &m, ConstraintWork &w, const double *M, const double *warmstart, double tolerance,
                      int64_t iterations, Solution &sol, const double *inertia = nullptr) {
    const bool defer = w.pgs_defer;                                    // not the islands' solves
    w.pgs_defer = false;
    if (m.opt_island && w.r.nefc) {
        std::vector<Island> &islands = w.islands;                      // kept storage (ConstraintWork::islands)
        partition(m, w.r, islands, w.island_scratch, w.coupled ? w.coupling : nullptr);
        if (islands.size() != 1 || islands[0].dofs.size() < size_t(m.nv))
            return solve_islands(m, w, M, warmstart, tolerance, iterations, islands, sol, inertia);
    }
    double scale = 0.0;                                                // 0: tolerance_scale of M
    if (inertia && m.nv) {
        double trace = 0.0;
        for (int j = 0; j < m.nv; j++) trace += inertia[j];
        scale = 1.0 / (trace / m.nv * m.nv);                           // meaninertia of the mass matrix
    }
    if (defer && w.r.nefc && m.opt_solver == SOLVER_PGS && m.opt_noslip_iterations == 0) {   // left set up: the caller's
        int st = pgs_setup(m, w, M, warmstart, tolerance, iterations, scale, false);          // loop and pgs_finish
        return st == OK ? PGS_PENDING : st;
    }
    return run_solver(m, w, M, warmstart, tolerance, iterations, sol, scale, false);
}

// rows are stiff where a quadratic row's D exceeds this times M's largest diagonal entry (solver.STIFF_ROWS: a pyramid
// at friction 0, which MuJoCo raises to 1e-5, has D = 1 / (2 mu^2 R) ~ 6e11)
constexpr double STIFF_ROWS = 1e6;

// qfrc (nv) for the steps that solve (M - h D) a = qfrc_smooth + qfrc (solver.balanced_constraint_force): J^T force
// after solve_with, and where rows are stiff (STIFF_ROWS) that plus the residual M qacc - qfrc_smooth - J^T force
// projected on the quadratic rows' span (an orthonormal basis by Gram-Schmidt, twice, where NumPy takes least squares):
// -D (J qacc - aref) keeps J qacc's rounding times D, 1e-3 N on a frictionless pyramid. M on the tree's pattern (w.Mt)
inline void balanced_constraint_force(const Model &m, ConstraintWork &w, double *qfrc) {
    const Rows &r = w.r;
    int nv = m.nv;
    rows_transpose_times(r, w.force.data(), qfrc);
    double diag = 0.0, D = 0.0;
    for (int j = 0; j < nv; j++) diag = std::max(diag, std::fabs(w.Mt[size_t(m.M_rowadr[j] + m.M_rownnz[j] - 1)]));
    if (w.state.size() < size_t(r.nefc)) return;
    for (int i = 0; i < r.nefc; i++)
        if (w.state[size_t(i)] == QUADRATIC) D = std::max(D, r.D[size_t(i)]);
    if (!(D > STIFF_ROWS * diag)) return;
    size_t n = size_t(nv);
    if (w.balance.size() < n * (n + 2)) w.balance.resize(n * (n + 2));
    double *res = w.balance.data(), *v = res + n, *basis = v + n;
    tree_times(m, w.Mt.data(), w.qacc.data(), res);
    for (int j = 0; j < nv; j++) res[j] -= w.qfrc_smooth[size_t(j)] + qfrc[j];   // the optimum's balance: zero exactly
    int nb = 0;
    for (int i = 0; i < r.nefc && nb < nv; i++) {                      // the quadratic rows' span, orthonormal
        if (w.state[size_t(i)] != QUADRATIC) continue;
        std::fill(v, v + n, 0.0);
        for (int k = r.start[size_t(i)]; k < r.start[size_t(i) + 1]; k++) v[r.cols[size_t(k)]] = r.val[size_t(k)];
        double norm0 = 0.0, norm = 0.0;
        for (int j = 0; j < nv; j++) norm0 += v[j] * v[j];
        for (int pass = 0; pass < 2; pass++)                           // v - its part in the basis, twice
            for (int b = 0; b < nb; b++) {
                const double *e = basis + size_t(b) * n;
                double c = 0.0;
                for (int j = 0; j < nv; j++) c += e[j] * v[j];
                for (int j = 0; j < nv; j++) v[j] -= c * e[j];
            }
        for (int j = 0; j < nv; j++) norm += v[j] * v[j];
        if (!(norm > 1e-18 * norm0)) continue;                         // in the span already (to 1e-9 of its length)
        norm = std::sqrt(norm);
        double *e = basis + size_t(nb) * n;
        for (int j = 0; j < nv; j++) e[j] = v[j] / norm;
        nb++;
    }
    for (int b = 0; b < nb; b++) {                                     // qfrc += the residual's part in the span
        const double *e = basis + size_t(b) * n;
        double c = 0.0;
        for (int j = 0; j < nv; j++) c += e[j] * res[j];
        for (int j = 0; j < nv; j++) qfrc[j] += c * e[j];
    }
}

}  // namespace
}  // namespace physai
