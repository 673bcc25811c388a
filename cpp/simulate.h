// physai.integrators.simulate and rollout in C++: integrators._Run.evaluate and the steppers of integrators.py, written
// once for a number type T like the engine's kernels: double for one trajectory, lanes of trajectories side by side
// for a rollout (the batch kernel's instruction set; simulate_block). Included by engine.cpp after the kernels.

// what drives a simulation besides the Model: joint damping, q's layout for integration, the actuators
// (forces.Actuators), the bodies that wrenches act on, and M's sparsity pattern
struct NativeSim {
    int nq = 0, nv = 0, nu = 0, nbody = 0;
    std::vector<double> damping;
    std::vector<int64_t> scalar_q, scalar_v, quat_q, quat_v, spring_v;   // spring_v: the dof of each Model spring
    std::vector<double> moment, qmoment, gain, bias, ctrlrange, forcerange, dof_forcerange;   // (nu, nv), (nu, nq), (nu, 3) x2, (nu, 2) x2, (nv, 2)
    std::vector<int64_t> ctrllimited, forcelimited, dof_forcelimited;
    std::vector<int64_t> body_link;                                    // (nbody): the engine link a body moves with, -1: the world
    std::vector<double> body_point;                                    // (nbody, 3): its centre of mass in the link's frame
    std::vector<int64_t> pattern;                                      // (nv, nv): M's sparsity (dof i is j, an ancestor or a descendant)
};

// a per-step input of a rollout, (trajectory, step, entry) with strides in doubles (0 along a broadcast axis)
struct Series {
    const double *data = nullptr;                                      // null: no such input
    int64_t trajectory = 0, step = 0, entry = 1;
    const double *at(int64_t n, int64_t k) const { return data + n * trajectory + k * step; }
};

// x clamped to [lo, hi] (a NaN stays NaN)
inline double vclamp(double x, double lo, double hi) { return std::min(std::max(x, lo), hi); }
#if PHYSAI_LANES
template <class L> inline L vclamp(L x, double lo, double hi) {
    L a = splat<L>(lo), b = splat<L>(hi);
    x = select(x < a, a, x);
    return select(x > b, b, x);
}
#endif
inline bool finite_all(double x) { return std::isfinite(x); }
#if PHYSAI_LANES
template <class L> inline bool finite_all(L x) {
    for (int i = 0; i < lanes_of<L>; i++)
        if (!std::isfinite(x[i])) return false;
    return true;
}
#endif

// the inputs of one step: clamped ctrl (nu), qfrc_applied (nv), xfrc_applied (nbody, 6)
template <class T> struct StepInputs {
    Vec<T> u, qfrc, xfrc;
    bool has_qfrc = false, has_xfrc = false;
};

// trajectory n + l's inputs of step k into lane l (l < count; the other lanes repeat the last one): u = ctrl clamped to
// ctrlrange (forces._ctrl)
template <class T> void gather(const NativeSim &s, const Series &ctrl, const Series &qfrc, const Series &xfrc, int64_t n, int64_t count,
                               int64_t k, StepInputs<T> &x) {
    x.has_qfrc = qfrc.data != nullptr, x.has_xfrc = xfrc.data != nullptr;
    for (int64_t l = 0; l < count; l++) {
        auto put = [&](Vec<T> &dst, size_t e, double v) {
            if constexpr (std::is_same_v<T, double>) dst[e] = v;
            else dst[e][l] = v;
        };
        if (ctrl.data)
            for (int a = 0; a < s.nu; a++) {
                double u = ctrl.at(n + l, k)[a * ctrl.entry];
                put(x.u, size_t(a), s.ctrllimited[a] ? vclamp(u, s.ctrlrange[2 * a], s.ctrlrange[2 * a + 1]) : u);
            }
        if (x.has_qfrc)
            for (int j = 0; j < s.nv; j++) put(x.qfrc, size_t(j), qfrc.at(n + l, k)[j * qfrc.entry]);
        if (x.has_xfrc)
            for (int e = 0; e < 6 * s.nbody; e++) put(x.xfrc, size_t(e), xfrc.at(n + l, k)[e * xfrc.entry]);
    }
    if constexpr (!std::is_same_v<T, double>)
        for (int64_t l = count; l < lanes_of<T>; l++) {
            for (auto *v : {&x.u, &x.qfrc, &x.xfrc})
                for (auto &e : *v) e[l] = e[count - 1];
        }
}

// f += sum_b J_b(com_b)^T w_b for wrenches w_b = (force, torque) at the bodies' centres of mass (forces.body_wrench_force):
// with r the centre of mass relative to the tree's centre, dof i takes S_lin . F + S_ang . (r x F + torque)
template <class T> void add_wrenches(const NativeModel &m, const NativeSim &s, const Data<T> &d, const T *xfrc, T *f) {
    for (int b = 0; b < s.nbody; b++) {
        const T *w = xfrc + 6 * b;
        int64_t l = s.body_link[b];
        if (l < 0) continue;
        if constexpr (std::is_same_v<T, double>)
            if (w[0] == 0.0 && w[1] == 0.0 && w[2] == 0.0 && w[3] == 0.0 && w[4] == 0.0 && w[5] == 0.0) continue;
        const T *R = &d.xmat[9 * l], *c = &d.cpos[3 * l];
        const double *pt = &s.body_point[3 * b];
        T r[3], rF[3], moment[3];
        for (int a = 0; a < 3; a++) r[a] = c[a] + (R[3 * a] * pt[0] + R[3 * a + 1] * pt[1] + R[3 * a + 2] * pt[2]);
        cross(r, w, rF);
        for (int a = 0; a < 3; a++) moment[a] = rF[a] + w[3 + a];
        for (int64_t i = m.dofadr[l] + m.dofnum[l] - 1; i >= 0; i = m.dof_parent[i]) {
            const T *S = &d.cdof[6 * i];
            f[i] = f[i] + (S[3] * w[0] + S[4] * w[1] + S[5] * w[2] + S[0] * moment[0] + S[1] * moment[1] + S[2] * moment[2]);
        }
    }
}

// f = passive + actuator + applied - bias and M at (q, qd) (integrators._Run.evaluate); the actuators' scalar forces
// into force (nu), the potential energy into pot; ZERO_QUATERNION when a quaternion is zero
template <class T> int evaluate(const NativeModel &m, const NativeSim &s, Data<T> &d, const StepInputs<T> &x, const T *q,
                                const T *qd, T *f, T *M, T *tmp, T *force, T &pot) {
    int st = kinematics(m, d, q);
    if (st != OK) return st;
    com_pos(m, d);
    com_vel(m, d, qd);
    rne(m, d, qd, (const T *)nullptr, tmp);
    for (int j = 0; j < m.nv; j++) f[j] = -s.damping[j] * qd[j];     // passive: damping, then springs
    for (size_t k = 0; k < m.spring_q.size(); k++)
        f[s.spring_v[k]] = f[s.spring_v[k]] - m.spring_k[k] * (q[m.spring_q[k]] - m.spring_ref[k]);
    for (int j = 0; j < m.nv; j++) f[j] = f[j] - tmp[j];
    if (s.nu) {                                                        // actuators: gain u + bias, clamped
        for (int a = 0; a < s.nu; a++) {
            T length = splat<T>(0.0), velocity = splat<T>(0.0);
            for (int i = 0; i < s.nq; i++) length = length + s.qmoment[size_t(a) * s.nq + i] * q[i];
            for (int j = 0; j < s.nv; j++) velocity = velocity + s.moment[size_t(a) * s.nv + j] * qd[j];
            const double *g = &s.gain[3 * a], *b = &s.bias[3 * a];
            T fa = (g[0] + g[1] * length + g[2] * velocity) * x.u[a] + b[0] + b[1] * length + b[2] * velocity;
            force[a] = s.forcelimited[a] ? vclamp(fa, s.forcerange[2 * a], s.forcerange[2 * a + 1]) : fa;
        }
        for (int j = 0; j < s.nv; j++) {                               // moment^T force, clamped per dof
            T t = splat<T>(0.0);
            for (int a = 0; a < s.nu; a++) t = t + s.moment[size_t(a) * s.nv + j] * force[a];
            f[j] = f[j] + (s.dof_forcelimited[j] ? vclamp(t, s.dof_forcerange[2 * j], s.dof_forcerange[2 * j + 1]) : t);
        }
    }
    if (x.has_qfrc)
        for (int j = 0; j < m.nv; j++) f[j] = f[j] + x.qfrc[j];
    if (x.has_xfrc) add_wrenches(m, s, d, x.xfrc.data(), f);
    crb(m, d, M);
    pot = potential(m, d, q);
    return OK;
}

// D += dA/dqd = sum_a moment_a^T (b2 + g2 u_a) moment_a over the actuators not clamped at their forcerange
// (forces.actuator_velocity_derivative)
template <class T> void add_actuator_velocity_derivative(const NativeSim &s, const T *u, const T *force, T *D) {
    for (int a = 0; a < s.nu; a++) {
        T k = s.bias[3 * a + 2] + s.gain[3 * a + 2] * u[a];
        if (s.forcelimited[a]) k = select((force[a] > s.forcerange[2 * a]) & (force[a] < s.forcerange[2 * a + 1]), k, splat<T>(0.0));
        if (!lane_any(k != 0.0)) continue;                             // a motor: no velocity gain
        const double *r = &s.moment[size_t(a) * s.nv];
        for (int i = 0; i < s.nv; i++) {
            if (r[i] == 0.0) continue;                                 // moment rows are sparse (one joint for most)
            for (int j = 0; j < s.nv; j++)
                if (r[j] != 0.0) D[size_t(i) * s.nv + j] = D[size_t(i) * s.nv + j] + r[i] * (k * r[j]);
        }
    }
}

// x with A x = b by LU with partial pivoting (A overwritten); false on an exactly zero pivot (one trajectory only)
bool lu_solve(double *A, int n, double *b) {
    for (int c = 0; c < n; c++) {
        int p = c;
        for (int r = c + 1; r < n; r++)
            if (std::fabs(A[size_t(r) * n + c]) > std::fabs(A[size_t(p) * n + c])) p = r;
        if (A[size_t(p) * n + c] == 0.0) return false;
        if (p != c) {
            for (int t = 0; t < n; t++) std::swap(A[size_t(p) * n + t], A[size_t(c) * n + t]);
            std::swap(b[p], b[c]);
        }
        for (int r = c + 1; r < n; r++) {
            double f = A[size_t(r) * n + c] / A[size_t(c) * n + c];
            for (int t = c + 1; t < n; t++) A[size_t(r) * n + t] -= f * A[size_t(c) * n + t];
            b[r] -= f * b[c];
        }
    }
    for (int i = n - 1; i >= 0; i--) {
        double t = b[i];
        for (int k = i + 1; k < n; k++) t -= A[size_t(i) * n + k] * b[k];
        b[i] = t / A[size_t(i) * n + i];
    }
    return true;
}

// q (+) h v (joints.integrate, MuJoCo's mj_integratePos) into out: scalars add h v, quaternions turn by exp(h w)
template <class T> void integrate_pos(const NativeSim &s, const T *q, const T *v, double h, T *out) {
    for (int i = 0; i < s.nq; i++) out[i] = q[i];
    for (size_t k = 0; k < s.scalar_q.size(); k++) out[s.scalar_q[k]] = q[s.scalar_q[k]] + h * v[s.scalar_v[k]];
    for (size_t k = 0; k < s.quat_q.size(); k++) {
        const T *qq = q + s.quat_q[k], *w = v + s.quat_v[k];
        T speed = vsqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]), angle = h * speed;
        auto moving = speed > 1e-15;                                   // the axis w / |w|, or 0 at rest
        T safe = select(moving, speed, splat<T>(1.0)), half, c;
        sincos_any(0.5 * angle, half, c);
        T r[4] = {c, select(moving, w[0] / safe, splat<T>(0.0)) * half, select(moving, w[1] / safe, splat<T>(0.0)) * half,
                  select(moving, w[2] / safe, splat<T>(0.0)) * half};
        T norm = vsqrt(qq[0] * qq[0] + qq[1] * qq[1] + qq[2] * qq[2] + qq[3] * qq[3]);
        T a0 = qq[0] / norm, a1 = qq[1] / norm, a2 = qq[2] / norm, a3 = qq[3] / norm;
        T *o = out + s.quat_q[k];
        o[0] = a0 * r[0] - a1 * r[1] - a2 * r[2] - a3 * r[3];
        o[1] = a0 * r[1] + a1 * r[0] + a2 * r[3] - a3 * r[2];
        o[2] = a0 * r[2] - a1 * r[3] + a2 * r[0] + a3 * r[1];
        o[3] = a0 * r[3] + a1 * r[2] - a2 * r[1] + a3 * r[0];
    }
}

// k = dexp^-1(theta) v (joints.dexp_inv) in place over v: the rotations' velocities carried to q's tangent space,
// k = v + 1/2 theta x v + c(|theta|) theta x (theta x v), c(t) = 1/t^2 - 1/(2 t tan(t/2)); scalars unchanged
template <class T> void dexp_inv(const NativeSim &s, const T *theta, T *v) {
    for (size_t k = 0; k < s.quat_v.size(); k++) {
        const T *th = theta + s.quat_v[k];
        T *w = v + s.quat_v[k], tw[3], ttw[3];
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

template <class T> inline T quadratic(const T *M, const T *v, int n) {   // v @ M @ v, as numpy: (v @ M) @ v
    T s = splat<T>(0.0);
    for (int j = 0; j < n; j++) {
        T t = splat<T>(0.0);
        for (int i = 0; i < n; i++) t = t + v[i] * M[size_t(i) * n + j];
        s = s + t * v[j];
    }
    return s;
}

enum Integrator { EULER = 0, RK4 = 1, IMPLICIT = 2, IMPLICITFAST = 3 };

// the buffers of one trajectory's (or one lane block's) steps, allocated once per thread
template <class T> struct SimWork {
    Data<T> d;
    StepInputs<T> x;
    Vec<T> M, D, f, tmp, force, a, qi, qdi, dq, dqd, kv, stage_a, qdp, qdm, cp, cm, q, qd, qn, qdn;
    SimWork(const NativeModel &m, const NativeSim &s) : d(m) {
        size_t V = size_t(m.nv), Qn = size_t(m.nq);
        x.u.resize(size_t(s.nu)), x.qfrc.resize(V), x.xfrc.resize(6 * size_t(s.nbody));
        for (auto *v : {&M, &D}) v->resize(V * V);
        for (auto *v : {&f, &tmp, &a, &qdi, &dq, &dqd, &kv, &stage_a, &qdp, &qdm, &cp, &cm, &qd, &qdn}) v->resize(V);
        for (auto *v : {&qi, &q, &qn}) v->resize(Qn);
        force.resize(size_t(s.nu));
    }
};

enum StepStatus { STEPPED = 0, DECLINED = 1, DIVERGED = 2 };

// whether any entry (any lane) of x[0 .. n) is NaN or infinite: x - x is 0 for a finite x and NaN otherwise, so one
// sum tells (and vectorizes)
template <class T> bool any_nonfinite(const T *x, size_t n) {
    T acc = splat<T>(0.0);
    for (size_t i = 0; i < n; i++) acc = acc + (x[i] - x[i]);
    return !finite_all(acc);
}

// whether M's diagonal is finite (a state that ran away makes it NaN or infinite with everything else)
template <class T> bool finite_diagonal(const T *M, int n) {
    T acc = splat<T>(0.0);
    for (int i = 0; i < n; i++) acc = acc + (M[size_t(i) * n + i] - M[size_t(i) * n + i]);
    return finite_all(acc);
}

// one step of `integrator` from (q, qd) into (qn, qdn) with the inputs in w.x, the start state's energy into e
// (integrators._STEPPERS; euler with implicit_damping: (M + h B) a = f); DIVERGED when the forces or the mass matrix of
// a stage are no longer finite (the state ran away: a DivergenceError); DECLINED on a zero quaternion or a matrix that
// does not factor (the Python loop then raises the named error), and for implicit on lanes (its LU pivots per lane)
template <class T> int step(const NativeModel &m, const NativeSim &s, SimWork<T> &w, double h, int integrator, bool implicit_damping,
                            const T *q, const T *qd, T *qn, T *qdn, T &e) {
    int nv = m.nv;
    Data<T> &d = w.d;
    T *M = w.M.data(), *f = w.f.data(), *a = w.a.data(), pot;
    if (integrator != RK4) {                                           // (M - h D) a = f, qd' = qd + h a, q' = q (+) h qd'
        if (evaluate(m, s, d, w.x, q, qd, f, M, w.tmp.data(), w.force.data(), pot) != OK) return DECLINED;
        if (any_nonfinite(f, size_t(nv)) || !finite_diagonal(M, nv)) return DIVERGED;
        e = 0.5 * quadratic(M, qd, nv) + pot;
        for (int j = 0; j < nv; j++) a[j] = f[j];
        bool ok;
        if (integrator == EULER) {                                     // D = -B, when damping is implicit
            if (implicit_damping)
                for (int j = 0; j < nv; j++) M[size_t(j) * nv + j] = M[size_t(j) * nv + j] + h * s.damping[j];
            ok = cholesky_solve(M, nv, a) == OK;
        } else {                                                       // D = dA/dqd - B (- dc/dqd: implicit) on M's pattern
            if constexpr (!std::is_same_v<T, double>) {
                if (integrator == IMPLICIT) return DECLINED;
            }
            T *D = w.D.data();
            for (size_t k = 0; k < size_t(nv) * nv; k++) D[k] = splat<T>(0.0);
            for (int j = 0; j < nv; j++) D[size_t(j) * nv + j] = splat<T>(-s.damping[j]);
            if (s.nu) add_actuator_velocity_derivative(s, w.x.u.data(), w.force.data(), D);
            if (integrator == IMPLICIT) {                              // dc/dqd e_c = (c(qd + e_c) - c(qd - e_c)) / 2
                T *qdp = w.qdp.data(), *qdm = w.qdm.data(), *cp = w.cp.data(), *cm = w.cm.data();
                for (int j = 0; j < nv; j++) qdp[j] = qd[j], qdm[j] = qd[j];
                for (int c = 0; c < nv; c++) {
                    qdp[c] = qd[c] + 1.0, qdm[c] = qd[c] - 1.0;
                    com_vel(m, d, qdp);
                    rne(m, d, (const T *)qdp, (const T *)nullptr, cp);
                    com_vel(m, d, qdm);
                    rne(m, d, (const T *)qdm, (const T *)nullptr, cm);
                    for (int i = 0; i < nv; i++) D[size_t(i) * nv + c] = D[size_t(i) * nv + c] - 0.5 * (cp[i] - cm[i]);
                    qdp[c] = qd[c], qdm[c] = qd[c];
                }
            }
            for (int i = 0; i < nv; i++)
                for (int j = 0; j < nv; j++) {
                    T Dij = integrator == IMPLICITFAST ? 0.5 * (D[size_t(i) * nv + j] + D[size_t(j) * nv + i]) : D[size_t(i) * nv + j];
                    if (s.pattern[size_t(i) * nv + j]) M[size_t(i) * nv + j] = M[size_t(i) * nv + j] - h * Dij;
                }
            // implicitfast: M - h sym(D) is symmetric, factored by Cholesky as MuJoCo does; implicit: LU
            if constexpr (std::is_same_v<T, double>) ok = integrator == IMPLICITFAST ? cholesky_solve(M, nv, a) == OK : lu_solve(M, nv, a);
            else ok = cholesky_solve(M, nv, a) == OK;
        }
        if (!ok) return DECLINED;
        for (int j = 0; j < nv; j++) qdn[j] = qd[j] + h * a[j];
        integrate_pos(s, q, qdn, h, qn);
        return STEPPED;
    }
    // RK4 with the inputs held over the step: stage i at q (+) h c k_(i-1), qd + h c a_(i-1); k_i = dexp^-1 qd_i
    const double C[3] = {0.5, 0.5, 1.0}, B[4] = {1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0};
    T *qi = w.qi.data(), *qdi = w.qdi.data(), *dqd = w.dqd.data(), *kv = w.kv.data();
    for (int stage = 0; stage < 4; stage++) {
        if (stage == 0) {
            for (int i = 0; i < m.nq; i++) qi[i] = q[i];
            for (int j = 0; j < nv; j++) qdi[j] = qd[j];
        } else {
            double c = C[stage - 1];
            for (int j = 0; j < nv; j++) w.dq[j] = c * kv[j];
            integrate_pos(s, q, w.dq.data(), h, qi);
            for (int j = 0; j < nv; j++) qdi[j] = qd[j] + h * (c * w.stage_a[j]);
        }
        if (evaluate(m, s, d, w.x, qi, qdi, f, M, w.tmp.data(), w.force.data(), pot) != OK) return DECLINED;
        if (any_nonfinite(f, size_t(nv)) || !finite_diagonal(M, nv)) return DIVERGED;
        if (stage == 0) e = 0.5 * quadratic(M, qdi, nv) + pot;
        if (cholesky_solve(M, nv, f) != OK) return DECLINED;
        for (int j = 0; j < nv; j++) kv[j] = qdi[j], w.stage_a[j] = f[j];
        if (stage > 0) {
            for (int j = 0; j < nv; j++) w.dq[j] = h * w.dq[j];
            dexp_inv(s, w.dq.data(), kv);
        }
        for (int j = 0; j < nv; j++) {
            a[j] = stage == 0 ? 0.0 + B[0] * kv[j] : a[j] + B[stage] * kv[j];         // sum of b k_i
            dqd[j] = stage == 0 ? 0.0 + B[0] * f[j] : dqd[j] + B[stage] * f[j];       // sum of b a_i
        }
    }
    integrate_pos(s, q, a, h, qn);
    for (int j = 0; j < nv; j++) qdn[j] = qd[j] + h * dqd[j];
    return STEPPED;
}

// the energy of the final state into e (simulate's E[steps])
template <class T> int final_energy(const NativeModel &m, Data<T> &d, const T *q, const T *qd, T &e) {
    if (kinematics(m, d, q) != OK) return DECLINED;
    com_pos(m, d);
    com_vel(m, d, qd);
    e = kinetic(m, d, qd) + potential(m, d, q);
    return STEPPED;
}

// trajectory n from Q[0], QD[0] into Q (steps+1, nq), QD, E: the first step whose result is not finite, -1, or -2 (declined)
int64_t simulate_one(const NativeModel &m, const NativeSim &s, SimWork<double> &w, int64_t n, double h, int64_t steps, int integrator,
                     bool implicit_damping, bool with_energy, const Series &ctrl, const Series &qfrc, const Series &xfrc,
                     double *Q, double *QD, double *E) {
    int nq = m.nq, nv = m.nv;
    for (int64_t k = 0; k < steps; k++) {
        double *qn = Q + (k + 1) * nq, *qdn = QD + (k + 1) * nv;
        gather(s, ctrl, qfrc, xfrc, n, 1, k, w.x);
        int st = step(m, s, w, h, integrator, implicit_damping, Q + k * nq, QD + k * nv, qn, qdn, E[k]);
        if (st == DIVERGED) {                                          // the state k + 1 is not finite
            for (int i = 0; i < nq; i++) qn[i] = std::nan("");
            for (int j = 0; j < nv; j++) qdn[j] = std::nan("");
            return k;
        }
        if (st != STEPPED) return -2;
        for (int i = 0; i < nq; i++)
            if (!std::isfinite(qn[i])) return k;
        for (int j = 0; j < nv; j++)
            if (!std::isfinite(qdn[j])) return k;
    }
    if (with_energy && final_energy(m, w.d, Q + steps * nq, QD + steps * nv, E[steps]) != STEPPED) return -2;
    return -1;
}

#if PHYSAI_LANES
// trajectories n .. n + count - 1 (count <= the lanes of L) side by side, from their Q[0], QD[0]: STEPPED with every
// state written, or not (a lane diverged, a zero quaternion, implicit, a matrix that does not factor): the caller then
// runs them one by one (simulate_one), which reports exactly what and where
template <class L> int simulate_block(const NativeModel &m, const NativeSim &s, SimWork<L> &w, int64_t n, int64_t count, double h,
                                      int64_t steps, int integrator, bool implicit_damping, bool with_energy, const Series &ctrl,
                                      const Series &qfrc, const Series &xfrc, double *Q, double *QD, double *E) {
    constexpr int W = lanes_of<L>;
    int nq = m.nq, nv = m.nv;
    int64_t rowq = (steps + 1) * nq, rowv = (steps + 1) * nv, rowe = steps + 1;
    auto lane = [&](int64_t l) { return n + std::min<int64_t>(l, count - 1); };
    for (int l = 0; l < W; l++) {
        for (int i = 0; i < nq; i++) w.q[i][l] = Q[lane(l) * rowq + i];
        for (int j = 0; j < nv; j++) w.qd[j][l] = QD[lane(l) * rowv + j];
    }
    L e;
    for (int64_t k = 0; k < steps; k++) {
        gather(s, ctrl, qfrc, xfrc, n, count, k, w.x);
        if (step(m, s, w, h, integrator, implicit_damping, w.q.data(), w.qd.data(), w.qn.data(), w.qdn.data(), e) != STEPPED)
            return DECLINED;
        if (any_nonfinite(w.qn.data(), size_t(nq)) || any_nonfinite(w.qdn.data(), size_t(nv))) return DECLINED;
        for (int64_t l = 0; l < count; l++) {
            for (int i = 0; i < nq; i++) Q[(n + l) * rowq + (k + 1) * nq + i] = w.qn[i][l];
            for (int j = 0; j < nv; j++) QD[(n + l) * rowv + (k + 1) * nv + j] = w.qdn[j][l];
            E[(n + l) * rowe + k] = e[l];
        }
        std::swap(w.q, w.qn);
        std::swap(w.qd, w.qdn);
    }
    if (with_energy) {
        if (final_energy(m, w.d, w.q.data(), w.qd.data(), e) != STEPPED) return DECLINED;
        for (int64_t l = 0; l < count; l++) E[(n + l) * rowe + steps] = e[l];
    }
    return STEPPED;
}

// one variant per instruction set, as the batch kernel (compute_lanes)
#define PHYSAI_BLOCK_ARGS double h, int64_t steps, int integrator, bool implicit_damping, bool with_energy, const Series &ctrl, \
    const Series &qfrc, const Series &xfrc, double *Q, double *QD, double *E
#define PHYSAI_BLOCK_PASS h, steps, integrator, implicit_damping, with_energy, ctrl, qfrc, xfrc, Q, QD, E
#if PHYSAI_DISPATCH
__attribute__((target("avx512f"), flatten, noinline))
int simulate_block_avx512f(const NativeModel &m, const NativeSim &s, SimWork<Lanes8> &w, int64_t n, int64_t count, PHYSAI_BLOCK_ARGS) {
    return simulate_block(m, s, w, n, count, PHYSAI_BLOCK_PASS);
}
__attribute__((target("avx2"), flatten, noinline))
int simulate_block_avx2(const NativeModel &m, const NativeSim &s, SimWork<Lanes4> &w, int64_t n, int64_t count, PHYSAI_BLOCK_ARGS) {
    return simulate_block(m, s, w, n, count, PHYSAI_BLOCK_PASS);
}
inline int simulate_lanes(const NativeModel &m, const NativeSim &s, SimWork<Lanes8> &w, int64_t n, int64_t count, PHYSAI_BLOCK_ARGS) {
    return simulate_block_avx512f(m, s, w, n, count, PHYSAI_BLOCK_PASS);
}
inline int simulate_lanes(const NativeModel &m, const NativeSim &s, SimWork<Lanes4> &w, int64_t n, int64_t count, PHYSAI_BLOCK_ARGS) {
    return simulate_block_avx2(m, s, w, n, count, PHYSAI_BLOCK_PASS);
}
#endif
__attribute__((flatten, noinline))
int simulate_block_default(const NativeModel &m, const NativeSim &s, SimWork<Lanes2> &w, int64_t n, int64_t count, PHYSAI_BLOCK_ARGS) {
    return simulate_block(m, s, w, n, count, PHYSAI_BLOCK_PASS);
}
inline int simulate_lanes(const NativeModel &m, const NativeSim &s, SimWork<Lanes2> &w, int64_t n, int64_t count, PHYSAI_BLOCK_ARGS) {
    return simulate_block_default(m, s, w, n, count, PHYSAI_BLOCK_PASS);
}
#endif
