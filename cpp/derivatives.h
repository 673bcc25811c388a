// physai.derivatives in C++: rnea_derivatives and forward_dynamics_derivatives, included by engine.cpp after its kernels
// (kinematics, com_pos, com_vel, rne, crb, cholesky_solve), spatial helpers and batch-kernel variants, inside its
// anonymous namespace. Written once for a number type T as the engine's kernels: double for one state, lanes of states
// for batches (derivatives_lanes: one variant per instruction set, as compute_lanes).
//
// The text follows derivatives._rnea_derivatives (see the module docstring of src/physai/derivatives.py for the
// recursion): about each tree's centre, world axes; u_j = S_j x v_lambda(j), w_j = S_j x a_lambda(j) - u_j x v_lambda(j),
// psi_j = (v_link(j) + v_lambda(j)) x S_j; Ic, 2 Bc the subtree sums of the inertias and of the Coriolis matrices
// 2 B_i = v x* I - I v x + (I v) xbar*; then one product per pair of related dofs (k, j):
//     link(k) in the subtree of link(j):   dtau_k/dq_j = -S_k . (Ic_k w_j + 2 Bc_k u_j),  dtau_k/dqd_j = S_k . (Ic_k psi_j + 2 Bc_k S_j)
//     link(k) a strict ancestor of link(j): dtau_k/dq_j = S_k . (S_j x* F_j - Ic_j w_j - 2 Bc_j u_j),  dtau_k/dqd_j = S_k . (Ic_j psi_j + 2 Bc_j S_j)
// and dtau/dqdd = M (crb). The q chart is the tangent space of physai.joints.integrate (MuJoCo's).

// the per-state buffers of the derivatives (besides Data): 2 Bc per link (6x6), and u, w, psi, P = Ic_k S_k,
// Q = (2 Bc_k)^T S_k, G, H per dof (6 each); for forward dynamics also qdd, c, M's Cholesky factor L and X (nv, 3 nv)
template <class T> struct DerivWork {
    T *B2, *u, *w, *psi, *P, *Q, *G, *H, *qdd, *c, *L, *X;
    explicit DerivWork(const NativeModel &m) {
        size_t Ln = size_t(m.nlink), V = size_t(m.nv);
        static thread_local Vec<T> buf;                                 // per thread, grown once: no allocation per call
        buf.resize(std::max(buf.size(), 36 * Ln + 7 * 6 * V + 2 * V + 4 * V * V));
        T *p = buf.data();
        B2 = p, p += 36 * Ln;
        for (T **x : {&u, &w, &psi, &P, &Q, &G, &H}) *x = p, p += 6 * V;
        qdd = p, p += V;
        c = p, p += V;
        L = p, p += V * V;
        X = p;
    }
};

// dq, dv ([k, j] = d tau_k / d x_j at dq[k * ld + j]) from a Data after kinematics, com_pos, com_vel(qd), rne(qd, qdd), crb
template <class T> void composite_derivatives(const NativeModel &m, Data<T> &d, DerivWork<T> &w, T *dq, T *dv, int ld) {
    const T zero = splat<T>(0.0);
    int nv = m.nv, nlink = m.nlink;
    // 2 B_i = (I v) xbar* - X - X^T with X = I crm(v) (v x* I = -X^T, I v x = X for I symmetric)
    for (int i = 0; i < nlink; i++) {
        const Inertia<T> &I = d.cinert[i];
        const T *v = d.vel(i);
        T *B = w.B2 + 36 * i, Iv[6], X[36];
        inertia_times(I, v, Iv);
        // X = I crm(v) = [[Ibar W + H U, H W], [m U - H W, m W]], W = skew(v_ang), U = skew(v_lin), H = skew(h);
        // row r of A skew(x) is a_r x x
        const T *vw = v, *vu = v + 3, *h = I.h;
        T Wm[9] = {zero, -vw[2], vw[1], vw[2], zero, -vw[0], -vw[1], vw[0], zero};
        T Um[9] = {zero, -vu[2], vu[1], vu[2], zero, -vu[0], -vu[1], vu[0], zero};
        T Hm[9] = {zero, -h[2], h[1], h[2], zero, -h[0], -h[1], h[0], zero};
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
        int64_t p = m.parent[i];
        if (p < 0) continue;
        T *Bp = w.B2 + 36 * p;
        const T *Bi = w.B2 + 36 * i;
        for (int k = 0; k < 36; k++) Bp[k] = Bp[k] + Bi[k];
    }
    // per dof j (link l, parent link p): u, w, psi; P = Ic S, Q = (2 Bc)^T S, G = S x* F - Ic w - 2 Bc u, H = Ic psi + 2 Bc S
    for (int j = 0; j < nv; j++) {
        int64_t l = m.dof_link[j], p = m.parent[l];
        const T *S = &d.cdof[6 * j], *vp = d.vel(p), *ap = d.acc(p), *vl = d.vel(l), *B = w.B2 + 36 * l;
        const Inertia<T> &Ic = d.crb[l];
        T *u = w.u + 6 * j, *wj = w.w + 6 * j, *psi = w.psi + 6 * j, *P = w.P + 6 * j, *Q = w.Q + 6 * j;
        T *G = w.G + 6 * j, *H = w.H + 6 * j, t[6], vs[6];
        cross_motion(S, vp, u);
        cross_motion(S, ap, wj);                                       // w = S x a_p - u x v_p
        cross_motion(u, vp, t);
        for (int k = 0; k < 6; k++) wj[k] = wj[k] - t[k], vs[k] = vl[k] + vp[k];
        cross_motion(vs, S, psi);                                      // psi = (v_l + v_p) x S
        inertia_times(Ic, S, P);
        for (int c = 0; c < 6; c++) {
            T s = zero;
            for (int r = 0; r < 6; r++) s = s + B[6 * r + c] * S[r];
            Q[c] = s;
        }
        T Iw[6], Ipsi[6];
        cross_force(S, &d.cfrc[6 * l], G);
        inertia_times(Ic, wj, Iw);
        inertia_times(Ic, psi, Ipsi);
        for (int r = 0; r < 6; r++) {
            G[r] = G[r] - Iw[r] - dot6(B + 6 * r, u);
            H[r] = Ipsi[r] + dot6(B + 6 * r, S);
        }
    }
    for (int k = 0; k < nv; k++)
        for (int j = 0; j < nv; j++) dq[size_t(k) * ld + j] = zero, dv[size_t(k) * ld + j] = zero;
    for (int k = 0; k < nv; k++) {
        // link(k) in the subtree of link(j): j runs over the dofs of link(k) and of its ancestors
        int64_t l = m.dof_link[k];
        const T *P = w.P + 6 * k, *Q = w.Q + 6 * k;
        for (int64_t j = m.dofadr[l] + m.dofnum[l] - 1; j >= 0; j = m.dof_parent[j]) {
            dq[size_t(k) * ld + j] = -(dot6(P, w.w + 6 * j) + dot6(Q, w.u + 6 * j));
            dv[size_t(k) * ld + j] = dot6(P, w.psi + 6 * j) + dot6(Q, &d.cdof[6 * j]);
        }
    }
    for (int j = 0; j < nv; j++) {
        // link(k) a strict ancestor of link(j): k runs over the dofs above link(j)'s first
        const T *G = w.G + 6 * j, *H = w.H + 6 * j;
        for (int64_t k = m.dof_parent[m.dofadr[m.dof_link[j]]]; k >= 0; k = m.dof_parent[k]) {
            const T *S = &d.cdof[6 * k];
            dq[size_t(k) * ld + j] = dot6(S, G);
            dv[size_t(k) * ld + j] = dot6(S, H);
        }
    }
}

// (dtau/dq, dtau/dqd, M) at (q, qd, qdd) into dq, dv, M (nv, nv each)
template <class T> int rnea_derivatives(const NativeModel &m, Data<T> &d, DerivWork<T> &w, const T *q, const T *qd, const T *qdd,
                                         T *dq, T *dv, T *M) {
    int st = kinematics(m, d, q);                                      // about each tree's centre: fixed while differentiating
    if (st != OK) return st;
    com_pos(m, d);
    com_vel(m, d, qd);
    rne(m, d, qd, qdd, w.c);                                           // cacc, cfrc = F (subtree sums)
    crb(m, d, M);                                                      // d.crb = Ic
    composite_derivatives(m, d, w, dq, dv, m.nv);
    return OK;
}

// X (n, cols) <- M^-1 X from M's Cholesky factor L (lower triangle of an (n, n) row-major array, as cholesky_solve leaves it)
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

// (dqdd/dq, dqdd/dqd, M^-1) at (q, qd, tau) into aq, av, Minv: qdd = M^-1 (tau - c), then -M^-1 (dtau/dq, dtau/dqd) at qdd;
// SINGULAR when M is not positive definite
template <class T> int forward_dynamics_derivatives(const NativeModel &m, Data<T> &d, DerivWork<T> &w, const T *q, const T *qd,
                                                     const T *tau, T *aq, T *av, T *Minv) {
    int nv = m.nv, st = kinematics(m, d, q);
    if (st != OK) return st;
    com_pos(m, d);
    com_vel(m, d, qd);
    rne(m, d, qd, (const T *)nullptr, w.c);                       // c, then qdd = M^-1 (tau - c)
    crb(m, d, w.L);
    for (int j = 0; j < nv; j++) w.qdd[j] = tau[j] - w.c[j];
    if (cholesky_solve(w.L, nv, w.qdd) != OK) return SINGULAR;         // w.L: M's factor from here on
    rne(m, d, qd, (const T *)w.qdd, w.c);                         // cacc, cfrc at qdd (d.crb stays)
    // X = [dtau/dq | dtau/dqd | 1] (nv, 3 nv), then M^-1 X
    int cols = 3 * nv;
    T *X = w.X;
    composite_derivatives(m, d, w, X, X + nv, cols);
    for (int i = 0; i < nv; i++)
        for (int j = 0; j < nv; j++) X[size_t(i) * cols + 2 * nv + j] = splat<T>(i == j ? 1.0 : 0.0);
    cholesky_solve_rows(w.L, nv, X, cols);
    // dqdd/dx = -M^-1 dtau/dx; M^-1 symmetrized
    for (int i = 0; i < nv; i++)
        for (int j = 0; j < nv; j++) {
            aq[size_t(i) * nv + j] = -X[size_t(i) * cols + j];
            av[size_t(i) * nv + j] = -X[size_t(i) * cols + nv + j];
            Minv[size_t(i) * nv + j] = 0.5 * (X[size_t(i) * cols + 2 * nv + j] + X[size_t(j) * cols + 2 * nv + i]);
        }
    return OK;
}

// op 0: rnea_derivatives (x = q, qd, qdd), op 1: forward_dynamics_derivatives (x = q, qd, tau), into o[0], o[1], o[2]
template <class T> int derivatives_op(const NativeModel &m, Data<T> &d, DerivWork<T> &w, int op, const T *const *x, T *const *o) {
    return op == 0 ? rnea_derivatives(m, d, w, x[0], x[1], x[2], o[0], o[1], o[2])
                   : forward_dynamics_derivatives(m, d, w, x[0], x[1], x[2], o[0], o[1], o[2]);
}

#if PHYSAI_LANES
// lanes of states side by side, one variant per instruction set (as compute_lanes); the width picks the overload
#if PHYSAI_DISPATCH
__attribute__((target("avx512f"), flatten, noinline))
int derivatives_lanes_avx512f(const NativeModel &m, Data<Lanes8> &d, DerivWork<Lanes8> &w, int op, const Lanes8 *const *x, Lanes8 *const *o) {
    return derivatives_op<Lanes8>(m, d, w, op, x, o);
}
__attribute__((target("avx2"), flatten, noinline))
int derivatives_lanes_avx2(const NativeModel &m, Data<Lanes4> &d, DerivWork<Lanes4> &w, int op, const Lanes4 *const *x, Lanes4 *const *o) {
    return derivatives_op<Lanes4>(m, d, w, op, x, o);
}
inline int derivatives_lanes(const NativeModel &m, Data<Lanes8> &d, DerivWork<Lanes8> &w, int op, const Lanes8 *const *x, Lanes8 *const *o) {
    return derivatives_lanes_avx512f(m, d, w, op, x, o);
}
inline int derivatives_lanes(const NativeModel &m, Data<Lanes4> &d, DerivWork<Lanes4> &w, int op, const Lanes4 *const *x, Lanes4 *const *o) {
    return derivatives_lanes_avx2(m, d, w, op, x, o);
}
#endif
__attribute__((flatten, noinline))
int derivatives_lanes_default(const NativeModel &m, Data<Lanes2> &d, DerivWork<Lanes2> &w, int op, const Lanes2 *const *x, Lanes2 *const *o) {
    return derivatives_op<Lanes2>(m, d, w, op, x, o);
}
inline int derivatives_lanes(const NativeModel &m, Data<Lanes2> &d, DerivWork<Lanes2> &w, int op, const Lanes2 *const *x, Lanes2 *const *o) {
    return derivatives_lanes_default(m, d, w, op, x, o);
}
#endif
