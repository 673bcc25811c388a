// Forward dynamics (src/physai/engine/forward.py: api.forward_dynamics's solve and forward.aba): qdd = M^-1 (tau - c) with M's Cholesky factor, and
// the articulated-body algorithm; the Cholesky solve also serves the derivatives and the steppers.
#pragma once

#include <cstddef>

#include "data.h"
#include "model.h"
#include "smooth.h"
#include "spatial.h"

namespace physai {
namespace {

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

// y -= a x over n entries (y and x apart: the loop vectorizes without a check)
template <class T> inline void subtract_scaled(T *__restrict y, const T *__restrict x, T a, int64_t n) {
    for (int64_t s = 0; s < n; s++) y[s] = y[s] - a * x[s];
}

// L with M = L^T L on the sparse layout, in place, and the reciprocals of L's diagonal into inv (MuJoCo's mj_factorM and
// qLDiagInv, as L^T L): eliminating the last dof first fills nothing in (row k's entries times its pivot's reciprocal,
// then L_ki L_kj subtracted from row i's entries j <= i: row i's are row k's first). O(sum of depth^2) against
// cholesky_solve's O(n^3); false on a non-positive pivot. forward.tree_cholesky_solve.
template <class T> bool tree_cholesky(const Model &m, T *L, T *inv) {
    for (int k = m.nv - 1; k >= 0; k--) {
        T *Lk = L + m.M_rowadr[k];
        const int64_t *anc = m.M_colind + m.M_rowadr[k], depth = m.M_rownnz[k] - 1;
        if (!all_positive(Lk[depth])) return false;
        T d = vsqrt(Lk[depth]), di = 1.0 / d;
        Lk[depth] = d, inv[k] = di;
        for (int64_t s = 0; s < depth; s++) Lk[s] = Lk[s] * di;
        for (int64_t a = 0; a < depth; a++)                            // M_ij -= L_ki L_kj, j <= i < k
            subtract_scaled(L + m.M_rowadr[anc[a]], Lk, Lk[a], a + 1);
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
        for (int64_t s = 0; s < depth; s++) b[anc[s]] = b[anc[s]] - Lk[s] * y;
    }
    for (int k = 0; k < m.nv; k++) {                                   // L x = y
        const T *Lk = L + m.M_rowadr[k];
        const int64_t *anc = m.M_colind + m.M_rowadr[k], depth = m.M_rownnz[k] - 1;
        T y = b[k];
        for (int64_t s = 0; s < depth; s++) y = y - Lk[s] * b[anc[s]];
        b[k] = y * inv[k];
    }
}

// x with M x = b for a dense M (nv x nv, its lower triangle read) on the tree's pattern, over b: M packed into L (the
// sparse layout's size), factored there with its reciprocal diagonal in inv (nv). SINGULAR on a non-positive pivot. The
// steppers' matrices keep M's pattern (integrate.h's step_matrix: euler's M + h B, implicitfast's M - h D).
template <class T> int tree_cholesky_solve(const Model &m, const T *M, T *b, T *L, T *inv) {
    tree_pack(m, M, L);
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

// qdd = M^-1 (tau - c) (api.forward_dynamics) on a Data after velocity_stages(q, qd): c by rne, M by crb into d.qM,
// solved by Cholesky on M's pattern (forward.tree_cholesky_solve; its factor in d.qL, d.qLinv)
template <class T> int forward_dynamics(const Model &m, Data<T> &d, const T *qd, const T *tau, T *qdd) {
    rne(m, d, qd, (const T *)nullptr, qdd);                            // c, then tau - c
    for (int j = 0; j < m.nv; j++) qdd[j] = tau[j] - qdd[j];
    crb(m, d, d.qM.data());
    return tree_cholesky_solve(m, d.qM.data(), qdd, d.qL.data(), d.qLinv.data());
}

// inverse of a symmetric positive k x k block (k = 1 or 3; by its adjugate); SINGULAR on a zero determinant
// (forward.block_inverse)
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

// qdd by the articulated-body algorithm about the centres (RBDA table 7.1; forward.aba) on a Data after
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

}  // namespace
}  // namespace physai
