// Time integration (src/physai/joints.py's integrate / difference / dexp_inv, src/physai/integrators.py): positions on
// the configuration manifold, integrators._Run.evaluate, the steppers (euler, rk4, implicit, implicitfast) and a
// trajectory's loop, for one trajectory (simulate_one) or lanes of trajectories side by side (simulate_block).
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "actuation.h"
#include "data.h"
#include "forward.h"
#include "model.h"
#include "smooth.h"
#include "spatial.h"

namespace physai {
namespace {

// ---------------------------------------------------------------- the configuration manifold

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
        T inv = 1.0 / select(moving, speed, splat<T>(1.0)), half, c;
        sincos_libm(angle * 0.5, half, c);
        T b[4] = {c, select(moving, w[0] * inv, splat<T>(0.0)) * half, select(moving, w[1] * inv, splat<T>(0.0)) * half,
                  select(moving, w[2] * inv, splat<T>(0.0)) * half};
        const T *p = q + m.quat_qposadr[k];
        T norm2 = (p[0] * p[0] + p[1] * p[1]) + (p[2] * p[2] + p[3] * p[3]), norm = vsqrt(norm2);
        T scale = select((norm - 1.0 > 1e-15) | (1.0 - norm > 1e-15), 1.0 / norm, splat<T>(1.0)), a[4];
        for (int i = 0; i < 4; i++) a[i] = p[i] * scale;
        quat_rescale(p, norm2, a, norm);
        T *r = out + m.quat_qposadr[k];
        r[0] = (a[0] * b[0] - a[1] * b[1]) - (a[2] * b[2] + a[3] * b[3]);
        r[1] = (a[0] * b[1] + a[1] * b[0]) + (a[2] * b[3] - a[3] * b[2]);
        r[2] = (a[0] * b[2] - a[1] * b[3]) + (a[2] * b[0] + a[3] * b[1]);
        r[3] = (a[0] * b[3] + a[1] * b[2]) + (a[3] * b[0] - a[2] * b[1]);
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

// ---------------------------------------------------------------- one step

// the constrained accelerations of a simulation with constraints (cpp/simulate.h; null: the smooth dynamics): at (q,
// qd), with the velocity stages in d and M and f from evaluate, the solver's qacc and qfrc_constraint (nv each); the
// warm start kept in ctx is replaced by qacc when update_warm (the last stage of a step); a Status
struct Constrain {
    void *ctx = nullptr;
    int (*accel)(void *ctx, const Data<double> &d, const double *q, const double *qd, const double *M, const double *f,
                 double *qacc, double *qfrc, bool update_warm) = nullptr;
    void (*stepped)(void *ctx, int64_t n, int64_t k) = nullptr;        // after step k of trajectory n: its records
};

// A's LU factors with partial pivoting in place (row c swapped with piv[c] at step c); false on an exactly zero pivot
// (one state only: the pivots differ per lane)
inline bool lu_factor(double *A, int n, int *piv) {
    for (int c = 0; c < n; c++) {
        int p = c;
        for (int r = c + 1; r < n; r++)
            if (std::fabs(A[size_t(r) * n + c]) > std::fabs(A[size_t(p) * n + c])) p = r;
        piv[c] = p;
        if (A[size_t(p) * n + c] == 0.0) return false;
        if (p != c)
            for (int t = 0; t < n; t++) std::swap(A[size_t(p) * n + t], A[size_t(c) * n + t]);
        for (int r = c + 1; r < n; r++) {
            double f = A[size_t(r) * n + c] / A[size_t(c) * n + c];
            A[size_t(r) * n + c] = f;
            for (int t = c + 1; t < n; t++) A[size_t(r) * n + t] -= f * A[size_t(c) * n + t];
        }
    }
    return true;
}

// X (n, cols) <- A^-1 X from lu_factor's factors
inline void lu_apply(const double *LU, int n, const int *piv, double *X, int cols) {
    for (int c = 0; c < n; c++)                                        // P X (the swaps moved L's rows too)
        if (piv[c] != c)
            for (int k = 0; k < cols; k++) std::swap(X[size_t(piv[c]) * cols + k], X[size_t(c) * cols + k]);
    for (int c = 0; c < n; c++) {                                      // L Y = P X, then U Z = Y
        for (int r = c + 1; r < n; r++) {
            double f = LU[size_t(r) * n + c];
            for (int k = 0; k < cols; k++) X[size_t(r) * cols + k] -= f * X[size_t(c) * cols + k];
        }
    }
    for (int i = n - 1; i >= 0; i--) {
        for (int j = i + 1; j < n; j++) {
            double a = LU[size_t(i) * n + j];
            for (int k = 0; k < cols; k++) X[size_t(i) * cols + k] -= a * X[size_t(j) * cols + k];
        }
        for (int k = 0; k < cols; k++) X[size_t(i) * cols + k] /= LU[size_t(i) * n + i];
    }
}

// x with A x = b by LU with partial pivoting (A overwritten); false on an exactly zero pivot
inline bool lu_solve(double *A, int n, double *b) {
    int piv[64];
    std::vector<int> many;
    int *p = n <= 64 ? piv : (many.resize(size_t(n)), many.data());
    if (!lu_factor(A, n, p)) return false;
    lu_apply(A, n, p, b, 1);
    return true;
}

// implicitfast's standalone free body k (integrators.free_body_blocks, MuJoCo's mjd_freeMhat): its block of the implicit
// integrator's matrix, A = M - h D + h dc/dqd (6, 6), with M's block as saved in w.free_M, D unsymmetrized and
// dc/dqd e_c = (c(qd + e_c) - c(qd - e_c)) / 2 over its 6 columns (c is quadratic in qd); leaves d at qd
inline void free_body_matrix(const Model &m, SimData<double> &w, double h, const double *qd, int k, double *A) {
    int nv = m.nv, adr = int(m.free_dofadr[k]);
    Data<double> &d = w.d;
    double *qdp = w.qdp.data(), *qdm = w.qdm.data(), *cp = w.cp.data(), *cm = w.cm.data();
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++) A[6 * i + j] = w.free_M[36 * size_t(k) + 6 * i + j] - h * w.D[size_t(adr + i) * nv + adr + j];
    for (int j = 0; j < nv; j++) qdp[j] = qd[j], qdm[j] = qd[j];
    for (int c = 0; c < 6; c++) {
        qdp[adr + c] = qd[adr + c] + 1.0, qdm[adr + c] = qd[adr + c] - 1.0;
        com_vel(m, d, qdp);
        rne(m, d, (const double *)qdp, (const double *)nullptr, cp);
        com_vel(m, d, qdm);
        rne(m, d, (const double *)qdm, (const double *)nullptr, cm);
        for (int i = 0; i < 6; i++) A[6 * i + c] += h * (0.5 * (cp[adr + i] - cm[adr + i]));
        qdp[adr + c] = qd[adr + c], qdm[adr + c] = qd[adr + c];
    }
    com_vel(m, d, qd);                                                 // the workspace back at qd
}

// implicitfast's standalone free bodies (integrators.free_body_solve): each one's 6 rows of a solved again in its own
// block A a = rhs (free_body_matrix), by LU with partial pivoting
inline bool free_body_solve(const Model &m, SimData<double> &w, double h, const double *qd, const double *rhs, double *a) {
    for (int k = 0; k < m.nfree; k++) {
        int adr = int(m.free_dofadr[k]);
        double A[36], b[6];
        free_body_matrix(m, w, h, qd, k, A);
        for (int i = 0; i < 6; i++) b[i] = rhs[adr + i];
        if (!lu_solve(A, 6, b)) return false;
        for (int i = 0; i < 6; i++) a[adr + i] = b[i];
    }
    return true;
}

// trajectory n + l's inputs of step k into lane l (l < count; the other lanes repeat the last one): u = ctrl clamped to
// ctrlrange (forces._ctrl)
template <class T> void step_inputs(const Model &m, const Actuators &act, const Rollout &r, int64_t n, int64_t count, int64_t k,
                                    StepInputs<T> &x) {
    x.has_qfrc = r.qfrc.data != nullptr, x.has_xfrc = r.xfrc.data != nullptr;
    auto at = [&](const Series &in, int64_t l) { return in.data + (n + l) * in.trajectory + k * in.step; };
    for (int64_t l = 0; l < count; l++) {
        auto put = [&](Vec<T> &dst, size_t e, double v) {
            if constexpr (std::is_same_v<T, double>) dst[e] = v;
            else dst[e][l] = v;
        };
        if (r.ctrl.data)
            for (int a = 0; a < act.nu; a++) {
                double u = at(r.ctrl, l)[a * r.ctrl.entry];
                put(x.u, size_t(a), act.ctrllimited[a] ? vclamp(u, act.ctrlrange[2 * a], act.ctrlrange[2 * a + 1]) : u);
            }
        if (x.has_qfrc)
            for (int j = 0; j < m.nv; j++) put(x.qfrc, size_t(j), at(r.qfrc, l)[j * r.qfrc.entry]);
        if (x.has_xfrc)
            for (int e = 0; e < 6 * m.nbody; e++) put(x.xfrc, size_t(e), at(r.xfrc, l)[e * r.xfrc.entry]);
    }
    if constexpr (!std::is_same_v<T, double>)
        for (int64_t l = count; l < lanes_of<T>; l++) {
            for (auto *v : {&x.u, &x.qfrc, &x.xfrc})
                for (auto &e : *v) e[l] = e[count - 1];
        }
}

// f = passive + actuator + applied - bias and M at (q, qd) (integrators._Run.evaluate); the actuators' scalar forces
// into force (nu), the potential energy into pot; ZERO_QUATERNION when a quaternion is zero
template <class T> int evaluate(const Model &m, const Actuators &act, Data<T> &d, const StepInputs<T> &x, const T *q,
                                const T *qd, T *f, T *M, T *tmp, T *force, T &pot) {
    int st = velocity_stages(m, d, q, qd);
    if (st != OK) return st;
    rne(m, d, qd, (const T *)nullptr, tmp);
    damper_spring_force(m, q, qd, f);
    for (int j = 0; j < m.nv; j++) f[j] = f[j] - tmp[j];
    body_forces(m, d, f, tmp);                                         // gravcomp, fluid (passive.h); tmp read already
    if (act.nu) actuator_force(m, act, x.u.data(), q, qd, force, f, tmp);   // tmp (the bias) read already
    if (x.has_qfrc)
        for (int j = 0; j < m.nv; j++) f[j] = f[j] + x.qfrc[j];
    if (x.has_xfrc) body_wrench_force(m, d, x.xfrc.data(), f);
    crb(m, d, M);
    pot = energy_pos(m, d, q);
    return OK;
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

// a step's status besides cpp/data.h's (OK: stepped; DIVERGED, ZERO_QUATERNION, SINGULAR): what lanes cannot step
// side by side (implicit: its LU pivots per lane), which the scalar kernel then steps one trajectory at a time
constexpr int ONE_BY_ONE = NSTATUS;

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

// w.M <- the matrix a single-step integrator solves with (integrators.step_matrix), w.M holding M at (q, qd) and w.d its
// velocity stages: euler M + h B when the damping is implicit; implicitfast and implicit M - h D on M's pattern with
// D = dA/dqd - B + dF/dqd (fluid) (- dc/dqd: implicit; implicitfast symmetrizes it) in w.D, implicitfast's free bodies' blocks of M kept
// in w.free_M first (double: free_body_matrix; w.tmp takes the dofs' actuator totals); rk4 and euler with explicit
// damping: M as it is
template <class T> void step_matrix(const Model &m, const Actuators &act, SimData<T> &w, double h, int integrator,
                                    bool implicit_damping, const T *qd) {
    int nv = m.nv;
    T *M = w.M.data();
    if (integrator == RK4) return;
    if (integrator == EULER) {
        if (implicit_damping)
            for (int j = 0; j < nv; j++) M[size_t(j) * nv + j] = M[size_t(j) * nv + j] + h * m.dof_damping[j];
        return;
    }
    Data<T> &d = w.d;
    T *D = w.D.data();
    for (size_t k = 0; k < size_t(nv) * nv; k++) D[k] = splat<T>(0.0);
    for (int j = 0; j < nv; j++) D[size_t(j) * nv + j] = splat<T>(-m.dof_damping[j]);
    if (act.nu) actuator_velocity_derivative(m, act, w.x.u.data(), w.force.data(), D, w.tmp.data());
    if (m.nfluid) fluid_velocity_derivative(m, d, D, w.tmp.data());   // the inertia boxes' (passive.h)
    if (integrator == IMPLICIT) {                                      // dc/dqd e_c = (c(qd + e_c) - c(qd - e_c)) / 2
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
    if constexpr (std::is_same_v<T, double>) {
        if (integrator == IMPLICITFAST)                                // the free bodies' blocks of M, before M - h D
            for (int k = 0; k < m.nfree; k++)
                for (int i = 0; i < 6; i++)
                    for (int j = 0; j < 6; j++)
                        w.free_M[36 * size_t(k) + 6 * i + j] = M[size_t(m.free_dofadr[k] + i) * nv + m.free_dofadr[k] + j];
    }
    for (int i = 0; i < nv; i++)                                       // on M's pattern: row i's columns j <= i, and (j, i)
        for (int64_t s = m.M_rowadr[i]; s < m.M_rowadr[i] + m.M_rownnz[i]; s++) {
            size_t j = size_t(m.M_colind[s]), ij = size_t(i) * nv + j, ji = j * nv + size_t(i);
            T Dij = integrator == IMPLICITFAST ? 0.5 * (D[ij] + D[ji]) : D[ij];
            T Dji = integrator == IMPLICITFAST ? 0.5 * (D[ji] + D[ij]) : D[ji];
            M[ij] = M[ij] - h * Dij;
            if (ji != ij) M[ji] = M[ji] - h * Dji;
        }
}

// one step of `integrator` from (q, qd) into (qn, qdn) with the inputs in w.x, the start state's energy into e
// (integrators._STEPPERS; euler with implicit_damping: (M + h B) a = f); with constraints (con, double only) the solver's
// qacc, or (M - h D) a = f + qfrc_constraint, and RK4's stages constrained: OK; DIVERGED when the forces or the mass
// matrix of a stage are no longer finite (the state ran away: a DivergenceError); ZERO_QUATERNION, or SINGULAR for a
// matrix that does not factor; ONE_BY_ONE for implicit on lanes
template <class T> int step(const Model &m, const Actuators &act, SimData<T> &w, double h, int integrator, bool implicit_damping,
                            const T *q, const T *qd, T *qn, T *qdn, T &e, const Constrain *con = nullptr) {
    int nv = m.nv;
    Data<T> &d = w.d;
    T *M = w.M.data(), *f = w.f.data(), *a = w.a.data(), *rhs = w.rhs.data(), pot;
    if (integrator != RK4) {                                           // (M - h D) a = f, qd' = qd + h a, q' = q (+) h qd'
        if (evaluate(m, act, d, w.x, q, qd, f, M, w.tmp.data(), w.force.data(), pot) != OK) return ZERO_QUATERNION;
        if (any_nonfinite(f, size_t(nv)) || !finite_diagonal(M, nv)) return DIVERGED;
        e = 0.5 * quadratic(M, qd, nv) + pot;
        for (int j = 0; j < nv; j++) rhs[j] = f[j];
        bool solved = false;                                           // a holds the acceleration already
        if constexpr (std::is_same_v<T, double>) {
            if (con) {                                                 // the constrained solve: qacc, f + qfrc_constraint
                int st = con->accel(con->ctx, d, q, qd, M, f, a, w.qfrc.data(), true);
                if (st != OK) return st;
                for (int j = 0; j < nv; j++) rhs[j] = f[j] + w.qfrc[j];
                solved = integrator == EULER && !implicit_damping;
            }
        }
        if (!solved)
            for (int j = 0; j < nv; j++) a[j] = rhs[j];
        bool ok = true;
        if (!solved) {                                                 // (M - h D) a = f (step_matrix)
            if constexpr (!std::is_same_v<T, double>) {         // pivots per lane: one trajectory at a time
                if (integrator == IMPLICIT || (integrator == IMPLICITFAST && m.nfree)) return ONE_BY_ONE;
            }
            step_matrix(m, act, w, h, integrator, implicit_damping, qd);
            // euler, implicitfast: symmetric on M's pattern, factored by Cholesky on it as MuJoCo does; implicit: LU
            if constexpr (std::is_same_v<T, double>) {
                ok = integrator == IMPLICIT ? lu_solve(M, nv, a)
                                            : tree_cholesky_solve(m, M, a, d.qL.data(), d.qLinv.data()) == OK;
                if (ok && integrator == IMPLICITFAST && m.nfree) ok = free_body_solve(m, w, h, qd, rhs, a);
            } else {
                ok = tree_cholesky_solve(m, M, a, d.qL.data(), d.qLinv.data()) == OK;
            }
        }
        if (!ok) return SINGULAR;
        for (int j = 0; j < nv; j++) qdn[j] = qd[j] + h * a[j];
        integrate_pos(m, q, qdn, h, qn);
        return OK;
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
            integrate_pos(m, q, w.dq.data(), h, qi);
            for (int j = 0; j < nv; j++) qdi[j] = qd[j] + h * (c * w.stage_a[j]);
        }
        if (evaluate(m, act, d, w.x, qi, qdi, f, M, w.tmp.data(), w.force.data(), pot) != OK) return ZERO_QUATERNION;
        if (any_nonfinite(f, size_t(nv)) || !finite_diagonal(M, nv)) return DIVERGED;
        if (stage == 0) e = 0.5 * quadratic(M, qdi, nv) + pot;
        bool constrained = false;
        if constexpr (std::is_same_v<T, double>) {
            if (con) {                                                 // the stage's constrained acceleration into f
                int st = con->accel(con->ctx, d, qi, qdi, M, f, rhs, w.qfrc.data(), stage == 3);
                if (st != OK) return st;
                for (int j = 0; j < nv; j++) f[j] = rhs[j];
                constrained = true;
            }
        }
        if (!constrained && tree_cholesky_solve(m, M, f, d.qL.data(), d.qLinv.data()) != OK) return SINGULAR;
        for (int j = 0; j < nv; j++) kv[j] = qdi[j], w.stage_a[j] = f[j];
        if (stage > 0) {
            for (int j = 0; j < nv; j++) w.dq[j] = h * w.dq[j];
            dexp_inv(m, w.dq.data(), kv);
        }
        for (int j = 0; j < nv; j++) {
            a[j] = stage == 0 ? 0.0 + B[0] * kv[j] : a[j] + B[stage] * kv[j];         // sum of b k_i
            dqd[j] = stage == 0 ? 0.0 + B[0] * f[j] : dqd[j] + B[stage] * f[j];       // sum of b a_i
        }
    }
    integrate_pos(m, q, a, h, qn);
    for (int j = 0; j < nv; j++) qdn[j] = qd[j] + h * dqd[j];
    return OK;
}

// the energy of the final state into e (simulate's E[steps])
template <class T> int final_energy(const Model &m, Data<T> &d, const T *q, const T *qd, T &e) {
    if (velocity_stages(m, d, q, qd) != OK) return ZERO_QUATERNION;
    e = energy_vel(m, d, qd) + energy_pos(m, d, q);
    return OK;
}

// ---------------------------------------------------------------- trajectories

// trajectory n of r from its Q[0], QD[0] (with constraints when con): -1 when every step was taken, else the step that
// stopped it, with the reason (DIVERGED: the state k + 1 is not finite; ZERO_QUATERNION, SINGULAR) in r.failure[n]
inline int64_t simulate_one(const Model &m, const Actuators &act, SimData<double> &w, const Rollout &r, int64_t n,
                            const Constrain *con = nullptr) {
    int nq = m.nq, nv = m.nv;
    int64_t steps = r.steps;
    double *Q = r.Q + n * (steps + 1) * nq, *QD = r.QD + n * (steps + 1) * nv, *E = r.E + n * (steps + 1);
    for (int64_t k = 0; k < steps; k++) {
        if (r.stop && r.stop->load(std::memory_order_relaxed)) return k;                  // stopped: discarded
        double *qn = Q + (k + 1) * nq, *qdn = QD + (k + 1) * nv;
        step_inputs(m, act, r, n, 1, k, w.x);
        int st = step(m, act, w, r.h, r.integrator, r.implicit_damping, Q + k * nq, QD + k * nv, qn, qdn, E[k], con);
        if (con) con->stepped(con->ctx, n, k);
        if (st == DIVERGED) {                                          // the state k + 1 is not finite
            for (int i = 0; i < nq; i++) qn[i] = std::nan("");
            for (int j = 0; j < nv; j++) qdn[j] = std::nan("");
        } else if (st == OK) {
            for (int i = 0; i < nq; i++)
                if (!std::isfinite(qn[i])) st = DIVERGED;
            for (int j = 0; j < nv; j++)
                if (!std::isfinite(qdn[j])) st = DIVERGED;
        }
        if (st != OK) {
            r.failure[n] = st;
            return k;
        }
    }
    if (r.with_energy && final_energy(m, w.d, Q + steps * nq, QD + steps * nv, E[steps]) != OK) {
        r.failure[n] = ZERO_QUATERNION;
        return steps;
    }
    return -1;
}

// trajectories n .. n + count - 1 of r (count <= the lanes of L) side by side, from their Q[0], QD[0]: OK with every
// state written, or not (a lane diverged, a zero quaternion, implicit, a matrix that does not factor): the caller then
// runs them one by one (simulate_one), which reports exactly what and where
template <class L> int simulate_block(const Model &m, const Actuators &act, SimData<L> &w, const Rollout &r, int64_t n, int64_t count) {
    constexpr int W = lanes_of<L>;
    int nq = m.nq, nv = m.nv;
    int64_t steps = r.steps, rowq = (steps + 1) * nq, rowv = (steps + 1) * nv, rowe = steps + 1;
    auto lane = [&](int64_t l) { return n + std::min<int64_t>(l, count - 1); };
    for (int l = 0; l < W; l++) {
        for (int i = 0; i < nq; i++) w.q[i][l] = r.Q[lane(l) * rowq + i];
        for (int j = 0; j < nv; j++) w.qd[j][l] = r.QD[lane(l) * rowv + j];
    }
    L e;
    for (int64_t k = 0; k < steps; k++) {
        if (r.stop && r.stop->load(std::memory_order_relaxed)) return DIVERGED;            // stopped: discarded
        step_inputs(m, act, r, n, count, k, w.x);
        int st = step(m, act, w, r.h, r.integrator, r.implicit_damping, w.q.data(), w.qd.data(), w.qn.data(), w.qdn.data(), e);
        if (st != OK) return st;
        if (any_nonfinite(w.qn.data(), size_t(nq)) || any_nonfinite(w.qdn.data(), size_t(nv))) return DIVERGED;
        for (int64_t l = 0; l < count; l++) {
            for (int i = 0; i < nq; i++) r.Q[(n + l) * rowq + (k + 1) * nq + i] = w.qn[i][l];
            for (int j = 0; j < nv; j++) r.QD[(n + l) * rowv + (k + 1) * nv + j] = w.qdn[j][l];
            r.E[(n + l) * rowe + k] = e[l];
        }
        std::swap(w.q, w.qn);
        std::swap(w.qd, w.qdn);
    }
    if (r.with_energy) {
        if (final_energy(m, w.d, w.q.data(), w.qd.data(), e) != OK) return ZERO_QUATERNION;
        for (int64_t l = 0; l < count; l++) r.E[(n + l) * rowe + steps] = e[l];
    }
    return OK;
}

}  // namespace
}  // namespace physai
