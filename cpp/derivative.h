// The derivatives of inverse and forward dynamics (src/physai/derivatives.py: rnea_derivatives and
// forward_dynamics_derivatives), written once for a number type T as the smooth stages.
//
// The text follows derivatives._rnea_derivatives (see the module docstring of src/physai/derivatives.py for the
// recursion): about each tree's centre, world axes; u_j = S_j x v_lambda(j), w_j = S_j x a_lambda(j) - u_j x v_lambda(j),
// psi_j = (v_link(j) + v_lambda(j)) x S_j; Ic, 2 Bc the subtree sums of the inertias and of the Coriolis matrices
// 2 B_i = v x* I - I v x + (I v) xbar*; then one product per pair of related dofs (k, j):
//     link(k) in the subtree of link(j):   dtau_k/dq_j = -S_k . (Ic_k w_j + 2 Bc_k u_j),  dtau_k/dqd_j = S_k . (Ic_k psi_j + 2 Bc_k S_j)
//     link(k) a strict ancestor of link(j): dtau_k/dq_j = S_k . (S_j x* F_j - Ic_j w_j - 2 Bc_j u_j),  dtau_k/dqd_j = S_k . (Ic_j psi_j + 2 Bc_j S_j)
// and dtau/dqdd = M (crb). The q chart is the tangent space of physai.joints.integrate (MuJoCo's).
#pragma once

#include <cstddef>

#include "data.h"
#include "forward.h"
#include "model.h"
#include "smooth.h"
#include "spatial.h"

namespace physai {
namespace {

// the terms of dof j (link l, parent link p) that move with the acceleration: w = S x a_p - u x v_p and
// G = S x* F - Ic w - 2 Bc u (2 Bc u kept in w.Bu), from d's cacc and cfrc (rne's)
template <class T> void acceleration_terms(const Model &m, Data<T> &d, DerivData<T> &w, int j) {
    int64_t l = m.dof_linkid[j], p = m.link_parentid[l];
    const T *S = &d.cdof[6 * j], *vp = d.vel(p), *ap = d.acc(p), *u = w.u.data() + 6 * j, *Bu = w.Bu.data() + 6 * j;
    T *wj = w.w.data() + 6 * j, *G = w.G.data() + 6 * j, t[6], Iw[6];
    cross_motion(S, ap, wj);
    cross_motion(u, vp, t);
    for (int k = 0; k < 6; k++) wj[k] = wj[k] - t[k];
    cross_force(S, &d.cfrc[6 * l], G);
    inertia_times(d.crb[l], wj, Iw);
    for (int r = 0; r < 6; r++) G[r] = G[r] - Iw[r] - Bu[r];
}

// dq ([k, j] = d tau_k / d q_j at dq[k * ld + j]) from each dof's terms in w
template <class T> void position_columns(const Model &m, Data<T> &d, DerivData<T> &w, T *dq, int ld) {
    int nv = m.nv;
    for (int k = 0; k < nv; k++)
        for (int j = 0; j < nv; j++) dq[size_t(k) * ld + j] = splat<T>(0.0);
    for (int k = 0; k < nv; k++) {                                     // link(k) in the subtree of link(j)
        int64_t l = m.dof_linkid[k];
        const T *P = w.P.data() + 6 * k, *Q = w.Q.data() + 6 * k;
        for (int64_t j = m.link_dofadr[l] + m.link_dofnum[l] - 1; j >= 0; j = m.dof_parentid[j])
            dq[size_t(k) * ld + j] = -(dot6(P, w.w.data() + 6 * j) + dot6(Q, w.u.data() + 6 * j));
    }
    for (int j = 0; j < nv; j++)                                       // link(k) a strict ancestor of link(j)
        for (int64_t k = m.dof_parentid[m.link_dofadr[m.dof_linkid[j]]]; k >= 0; k = m.dof_parentid[k])
            dq[size_t(k) * ld + j] = dot6(&d.cdof[6 * k], w.G.data() + 6 * j);
}

// dq, dv ([k, j] = d tau_k / d x_j at dq[k * ld + j]) from a Data after kinematics, com_pos, com_vel(qd), rne(qd, qdd), crb
template <class T> void composite_derivatives(const Model &m, Data<T> &d, DerivData<T> &w, T *dq, T *dv, int ld) {
    const T zero = splat<T>(0.0);
    int nv = m.nv, nlink = m.nlink;
    // 2 B_i = (I v) xbar* - X - X^T with X = I crm(v) (v x* I = -X^T, I v x = X for I symmetric)
    for (int i = 0; i < nlink; i++) {
        const Inertia<T> &I = d.cinert[i];
        const T *v = d.vel(i);
        T *B = w.B2.data() + 36 * i, Iv[6], X[36];
        inertia_times(I, v, Iv);
        // X = I crm(v) = [[Ibar W + H U, H W], [m U - H W, m W]], W = skew(v_ang), U = skew(v_lin), H = skew(h);
        // row r of A skew(x) is a_r x x
        const T *vw = v, *vu = v + 3, *h = I.h;
        T Wm[9], Um[9], Hm[9];
        skew(vw, Wm), skew(vu, Um), skew(h, Hm);
        for (int r = 0; r < 3; r++) {
            T IW[3], HU[3], HW[3];
            cross(I.I + 3 * r, vw, IW);
            cross(Hm + 3 * r, vu, HU);
            cross(Hm + 3 * r, vw, HW);
            for (int c = 0; c < 3; c++) {
                X[6 * r + c] = IW[c] + HU[c];
                X[6 * r + 3 + c] = HW[c];
                X[6 * (3 + r) + c] = I.m * Um[3 * r + c] - HW[c];
                X[6 * (3 + r) + 3 + c] = I.m * Wm[3 * r + c];
            }
        }
        // (f xbar*) = [[-skew(n), -skew(f)], [-skew(f), 0]] for f = I v = (n, f)
        const T *n = Iv, *f = Iv + 3;
        T bar[36] = {zero, n[2], -n[1], zero, f[2], -f[1],
                     -n[2], zero, n[0], -f[2], zero, f[0],
                     n[1], -n[0], zero, f[1], -f[0], zero,
                     zero, f[2], -f[1], zero, zero, zero,
                     -f[2], zero, f[0], zero, zero, zero,
                     f[1], -f[0], zero, zero, zero, zero};
        for (int r = 0; r < 6; r++)
            for (int c = 0; c < 6; c++) B[6 * r + c] = bar[6 * r + c] - X[6 * r + c] - X[6 * c + r];
    }
    // backward pass: 2 Bc_parent += 2 Bc
    for (int i = nlink - 1; i >= 0; i--) {
        int64_t p = m.link_parentid[i];
        if (p < 0) continue;
        T *Bp = w.B2.data() + 36 * p;
        const T *Bi = w.B2.data() + 36 * i;
        for (int k = 0; k < 36; k++) Bp[k] = Bp[k] + Bi[k];
    }
    // per dof j (link l, parent link p): u, psi; P = Ic S, Q = (2 Bc)^T S, H = Ic psi + 2 Bc S, 2 Bc u; then w and G
    for (int j = 0; j < nv; j++) {
        int64_t l = m.dof_linkid[j], p = m.link_parentid[l];
        const T *S = &d.cdof[6 * j], *vp = d.vel(p), *vl = d.vel(l), *B = w.B2.data() + 36 * l;
        const Inertia<T> &Ic = d.crb[l];
        T *u = w.u.data() + 6 * j, *psi = w.psi.data() + 6 * j, *P = w.P.data() + 6 * j, *Q = w.Q.data() + 6 * j;
        T *H = w.H.data() + 6 * j, *Bu = w.Bu.data() + 6 * j, vs[6];
        cross_motion(S, vp, u);
        for (int k = 0; k < 6; k++) vs[k] = vl[k] + vp[k];
        cross_motion(vs, S, psi);                                      // psi = (v_l + v_p) x S
        inertia_times(Ic, S, P);
        for (int c = 0; c < 6; c++) {
            T s = zero;
            for (int r = 0; r < 6; r++) s = s + B[6 * r + c] * S[r];
            Q[c] = s;
        }
        T Ipsi[6];
        inertia_times(Ic, psi, Ipsi);
        for (int r = 0; r < 6; r++) {
            Bu[r] = dot6(B + 6 * r, u);
            H[r] = Ipsi[r] + dot6(B + 6 * r, S);
        }
        acceleration_terms(m, d, w, j);
    }
    position_columns(m, d, w, dq, ld);
    for (int k = 0; k < nv; k++)
        for (int j = 0; j < nv; j++) dv[size_t(k) * ld + j] = zero;
    for (int k = 0; k < nv; k++) {                                     // link(k) in the subtree of link(j)
        int64_t l = m.dof_linkid[k];
        const T *P = w.P.data() + 6 * k, *Q = w.Q.data() + 6 * k;
        for (int64_t j = m.link_dofadr[l] + m.link_dofnum[l] - 1; j >= 0; j = m.dof_parentid[j])
            dv[size_t(k) * ld + j] = dot6(P, w.psi.data() + 6 * j) + dot6(Q, &d.cdof[6 * j]);
    }
    for (int j = 0; j < nv; j++)                                       // link(k) a strict ancestor of link(j)
        for (int64_t k = m.dof_parentid[m.link_dofadr[m.dof_linkid[j]]]; k >= 0; k = m.dof_parentid[k])
            dv[size_t(k) * ld + j] = dot6(&d.cdof[6 * k], w.H.data() + 6 * j);
}

// rnea_derivatives' dq and dv at (q, qd, qdd) on a d whose position stages and composite inertias are q's already
// (after forward.h's evaluate at q: kinematics, com_pos, crb's composite inertias; its velocities may have moved since):
// com_vel at qd, rne at qdd and composite_derivatives, without M
template <class T> void rnea_derivatives_posed(const Model &m, Data<T> &d, DerivData<T> &w, const T *qd, const T *qdd,
                                                T *dq, T *dv) {
    com_vel(m, d, qd);
    rne(m, d, qd, qdd, w.c.data());
    composite_derivatives(m, d, w, dq, dv, m.nv);
}

// dtau/dq again at another qdd (nv, into dq) after rnea_derivatives at the same (q, qd) on the same d and w: rne at
// qdd, then only the terms that move with it (acceleration_terms, position_columns); dtau/dqd is rnea_derivatives'
template <class T> void position_derivatives_at(const Model &m, Data<T> &d, DerivData<T> &w, const T *qd, const T *qdd,
                                                 T *dq) {
    rne(m, d, qd, qdd, w.c.data());
    for (int j = 0; j < m.nv; j++) acceleration_terms(m, d, w, j);
    position_columns(m, d, w, dq, m.nv);
}

// (dtau/dq, dtau/dqd, M) at (q, qd, qdd) into dq, dv, M (nv, nv each)
template <class T> int rnea_derivatives(const Model &m, Data<T> &d, DerivData<T> &w, const T *q, const T *qd, const T *qdd,
                                         T *dq, T *dv, T *M) {
    int st = velocity_stages(m, d, q, qd);                                    // about each tree's centre: fixed while differentiating
    if (st != OK) return st;
    rne(m, d, qd, qdd, w.c.data());                                    // cacc, cfrc = F (subtree sums)
    crb(m, d, M);                                                      // d.crb = Ic
    composite_derivatives(m, d, w, dq, dv, m.nv);
    return OK;
}

// (dqdd/dq, dqdd/dqd, M^-1) at (q, qd, tau) into aq, av, Minv: qdd = M^-1 (tau - c), then -M^-1 (dtau/dq, dtau/dqd) at qdd;
// SINGULAR when M is not positive definite
template <class T> int forward_dynamics_derivatives(const Model &m, Data<T> &d, DerivData<T> &w, const T *q, const T *qd,
                                                     const T *tau, T *aq, T *av, T *Minv) {
    int nv = m.nv, st = velocity_stages(m, d, q, qd);
    if (st != OK) return st;
    rne(m, d, qd, (const T *)nullptr, w.c.data());                     // c, then qdd = M^-1 (tau - c)
    crb(m, d, w.L.data());
    for (int j = 0; j < nv; j++) w.qdd[j] = tau[j] - w.c[j];
    if (cholesky_solve(w.L.data(), nv, w.qdd.data()) != OK) return SINGULAR;   // w.L: M's factor from here on
    rne(m, d, qd, (const T *)w.qdd.data(), w.c.data());                // cacc, cfrc at qdd (d.crb stays)
    // X = [dtau/dq | dtau/dqd | 1] (nv, 3 nv), then M^-1 X
    int cols = 3 * nv;
    T *X = w.X.data();
    composite_derivatives(m, d, w, X, X + nv, cols);
    for (int i = 0; i < nv; i++)
        for (int j = 0; j < nv; j++) X[size_t(i) * cols + 2 * nv + j] = splat<T>(i == j ? 1.0 : 0.0);
    cholesky_solve_rows(w.L.data(), nv, X, cols);
    // dqdd/dx = -M^-1 dtau/dx; M^-1 symmetrized
    for (int i = 0; i < nv; i++)
        for (int j = 0; j < nv; j++) {
            aq[size_t(i) * nv + j] = -X[size_t(i) * cols + j];
            av[size_t(i) * nv + j] = -X[size_t(i) * cols + nv + j];
            Minv[size_t(i) * nv + j] = 0.5 * (X[size_t(i) * cols + 2 * nv + j] + X[size_t(j) * cols + 2 * nv + i]);
        }
    return OK;
}

}  // namespace
}  // namespace physai
