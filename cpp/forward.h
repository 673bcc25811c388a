// The forward pipeline and the integrators (src/physai/engine/forward.py, MuJoCo's engine_forward.c): the smooth force
// and M at a state (evaluate: mj_fwdVelocity, mj_fwdActuation without constraints), qdd = M^-1 (tau - c)
// (forward_dynamics), and one step of each integrator from (q, qd): euler (mj_Euler), implicit and implicitfast
// (mj_implicit), runge_kutta (mj_RungeKutta), discrete (mjINT_DISCRETE; its tendon and servo terms coupling_terms,
// solved by metric_pcg, or with constraints by the solver in the whole metric), each its own function;
// step picks one by StepOptions.integrator. M's Cholesky solves are smooth.h's (mj_factorM, mj_solveM); positions move
// by configuration.h's integrate_pos.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "actuation.h"
#include "configuration.h"
#include "data.h"
#include "model.h"
#include "smooth.h"
#include "spatial.h"
#include "tendon.h"
#include "wide.h"

namespace physai {
namespace {

// qdd = M^-1 (tau - c) (api.forward_dynamics) on a Data after velocity_stages(q, qd): c by rne, M by crb into d.qM,
// solved by Cholesky on M's pattern (smooth.tree_cholesky_solve; its factor in d.qL, d.qLinv)
template <class T> int forward_dynamics(const Model &m, Data<T> &d, const T *qd, const T *tau, T *qdd) {
    rne(m, d, qd, (const T *)nullptr, qdd);                            // c, then tau - c
    for (int j = 0; j < m.nv; j++) qdd[j] = tau[j] - qdd[j];
    d.qM.resize(size_t(m.nv) * m.nv);                                  // made on first use (a simulation never uses it)
    crb(m, d, d.qM.data());
    return tree_cholesky_solve(m, d.qM.data(), qdd, d.qL.data(), d.qLinv.data());
}

// a step's status besides cpp/data.h's (OK: stepped; DIVERGED, ZERO_QUATERNION, SINGULAR): what lanes cannot step
// side by side (implicit: its LU pivots per lane; a spatial tendon's path), which the scalar kernel then steps one
// trajectory at a time
constexpr int ONE_BY_ONE = NSTATUS;

// evaluate's f = passive + actuator + applied - c at (q, qd) from a Data with the velocity stages, c in tmp (read
// first, then tmp is scratch (nv)): the joints' springs and dampers, gravity compensation and fluid forces (body_forces),
// the tendons' springs and dampers (their potential energy into tendon_pot), the actuators' joint forces at x's inputs
// (their scalar forces into force, nu), the applied forces; the constraint kernels' front too (inverse.h's front_force)
template <class T> int smooth_force(const Model &m, const Actuators &act, Data<T> &d, StepInputs<T> &x, const T *q,
                                    const T *qd, T *f, T *tmp, T *force, T &tendon_pot) {
    damper_spring_force(m, q, qd, f);
    for (int j = 0; j < m.nv; j++) f[j] = f[j] - tmp[j];
    body_forces(m, d, f, tmp);                                         // gravcomp, fluid (passive.h); tmp read already
    tendon_pot = splat<T>(0.0);
    if (m.ntendon) {                                                   // the tendons' springs and dampers (tendon.h, passive.h)
        if constexpr (!std::is_same_v<T, double>)
            if (m.tendon_spatial) return ONE_BY_ONE;                   // a spatial tendon's path: one state at a time
        tendons(m, d, q);
        tendon_passive_force(m, d, qd, f, tendon_pot);
    }
    if (act.posed) {                                                   // arms of the configuration (actuation.posed)
        if constexpr (std::is_same_v<T, double>)
            transmission(m, act, d, x.trn, q);
        else
            return ONE_BY_ONE;                                         // one state at a time (Actuators::lanes)
    }
    if (act.nu) actuator_force(m, act, x, q, qd, force, f, tmp);       // tmp (the bias) read already
    if (x.has_qfrc)
        for (int j = 0; j < m.nv; j++) f[j] = f[j] + x.qfrc[j];
    if (x.has_xfrc) body_wrench_force(m, d, x.xfrc.data(), f);
    return OK;
}

// f = passive + actuator + applied - bias and M (on the tree's pattern: tree_nnz) at (q, qd) and the activations x.act
// (forward.DynamicsEvaluator.evaluate); the actuators' scalar forces into force (nu), their activations' rates into
// x.act_dot, the potential energy into pot when x.energy (else 0, as MuJoCo without mjENBL_ENERGY); ZERO_QUATERNION when
// a quaternion is zero
template <class T> int evaluate(const Model &m, const Actuators &act, Data<T> &d, StepInputs<T> &x, const T *q,
                                const T *qd, T *f, T *M, T *tmp, T *force, T &pot) {
    int st = velocity_stages(m, d, q, qd);
    if (st != OK) return st;
    rne(m, d, qd, (const T *)nullptr, tmp);
    T tendon_pot;
    st = smooth_force(m, act, d, x, q, qd, f, tmp, force, tendon_pot);
    if (st != OK) return st;
    crb_tree(m, d, M);                                                 // M on the tree's pattern (MuJoCo's qM)
    if (m.ntendon) armature_tree(m, d.ten_J.data(), M);                // tendon armature (mj_tendonArmature)
    pot = x.energy ? energy_pos(m, d, q) + tendon_pot : splat<T>(0.0);
    return OK;
}

// v @ M @ v for M on the tree's pattern, as numpy: (v @ M) @ v, each (v @ M)_j summed over i ascending (its ancestors,
// j, then its descendants: the entries the dense sum adds besides zeros) in t (nv)
template <class T> inline T quadratic(const Model &m, const T *M, const T *v, T *t) {
    int n = m.nv;
    for (int j = 0; j < n; j++) {                                      // the ancestors i <= j: row j
        T s = splat<T>(0.0);
        for (int64_t a = m.M_rowadr[j]; a < m.M_rowadr[j] + m.M_rownnz[j]; a++) s = s + v[m.M_colind[a]] * M[a];
        t[j] = s;
    }
    for (int i = 0; i < n; i++)                                        // the descendants i > j, i ascending
        for (int64_t a = m.M_rowadr[i]; a < m.M_rowadr[i] + m.M_rownnz[i] - 1; a++) {
            int64_t j = m.M_colind[a];
            t[j] = t[j] + v[i] * M[a];
        }
    T s = splat<T>(0.0);
    for (int j = 0; j < n; j++) s = s + t[j] * v[j];
    return s;
}

// whether any entry (any lane) of x[0 .. n) is NaN or infinite: x - x is 0 for a finite x and NaN otherwise, so one
// sum tells, in any order (four sums side by side: their additions' latencies overlap, and they vectorize)
template <class T> bool any_nonfinite(const T *x, size_t n) {
    T acc[4] = {splat<T>(0.0), splat<T>(0.0), splat<T>(0.0), splat<T>(0.0)};
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int k = 0; k < 4; k++) acc[k] = acc[k] + (x[i + k] - x[i + k]);
    for (; i < n; i++) acc[0] = acc[0] + (x[i] - x[i]);
    return !finite_all((acc[0] + acc[1]) + (acc[2] + acc[3]));
}

// whether M's diagonal (M on the tree's pattern) is finite (a state that ran away makes it NaN or infinite with
// everything else)
template <class T> bool finite_diagonal(const Model &m, const T *M) {
    T acc = splat<T>(0.0);
    for (int i = 0; i < m.nv; i++) acc = acc + (tree_diagonal(m, M, i) - tree_diagonal(m, M, i));
    return finite_all(acc);
}

// free body k's block of M (6 x 6, both triangles) from M on the tree's pattern into B (its dofs a chain: row adr + i
// holds columns adr .. adr + i)
template <class T> void free_block(const Model &m, const T *M, int64_t k, T *B) {
    int64_t adr = m.free_dofadr[k];
    for (int i = 0; i < 6; i++)
        for (int j = 0; j <= i; j++) {
            T v = M[m.M_rowadr[adr + i] + m.M_rownnz[adr + j] - 1];
            B[6 * i + j] = v, B[6 * j + i] = v;
        }
}

// the steppers' constraint context for number type T: Constrain for one state, LaneConstrain for lanes
template <class T> using ConstrainFor = std::conditional_t<std::is_same_v<T, double>, Constrain, LaneConstrain>;

// Constrain::accel at a stage (not the discrete step's): the solver's qacc and qfrc_constraint (qfrc null: not formed)
// at (q, qd) with the velocity stages in w.d, M (tree's pattern) and f; OK or the solver's status
inline int constrained_solve(const Model &, const Constrain &con, SimData<double> &w, const double *q, const double *qd,
                             const double *M, const double *f, double *qacc, double *qfrc, bool update_warm) {
    return con.accel(con.ctx, w.d, q, qd, M, f, qacc, qfrc, update_warm, nullptr, nullptr);
}

// the same for lanes: M factored once in the lanes (tree_cholesky, into w.d.qL and w.d.qLinv; a lane with a
// non-positive pivot: each lane factors its own, which tells), every lane's velocity stages (the fields the rows read
// alone; with collisions also its bodies' MuJoCo-order frames, body_poses in the lanes, which detect then reads instead of
// posing them one state at a time: Data::body_posed), state, M, f and factor taken apart into its own copies
// (lanes_apart), then each lane's state in turn through
// its trajectory's Constrain::accel with its lane of the factor (the rows and the solver differ per state), its qacc
// and qfrc (when asked) back into the lane; with Constrain::begin (not observed) the lanes' PGS solves are set up in turn, run
// together (Constrain::together: their sweeps interleaved) and ended in lane order (Constrain::finish). The first
// status that is not OK
template <class L> int constrained_solve(const Model &m, const LaneConstrain &con, SimData<L> &w, const L *q, const L *qd,
                                         const L *M, const L *f, L *qacc, L *qfrc, bool update_warm) {
    size_t nq = size_t(m.nq), nv = size_t(m.nv), nM = size_t(tree_nnz(m));
    const Data<L> &d = w.d;
    std::copy(M, M + nM, w.d.qL.data());
    const bool factored = tree_cholesky(m, w.d.qL.data(), w.d.qLinv.data());
    const int64_t count = con.count;
    double *to[BLOCK];
    auto apart = [&](const L *from, size_t n, auto at) {             // at(l): lane l's array
        for (int64_t l = 0; l < count; l++) to[l] = at(l);
        lanes_apart(from, n, to, count);
    };
    auto stage = [&](const Vec<L> &from, Vec<double> Data<double>::*field) {   // sized at its first copy
        apart(from.data(), from.size(), [&](int64_t l) {
            Vec<double> &to = con.d[size_t(l)].*field;
            to.resize(from.size());
            return to.data();
        });
    };
    stage(d.xmat, &Data<double>::xmat), stage(d.xpos, &Data<double>::xpos), stage(d.cpos, &Data<double>::cpos);
    stage(d.cipos, &Data<double>::cipos), stage(d.cdof, &Data<double>::cdof), stage(d.cdof_dot, &Data<double>::cdof_dot);
    stage(d.cvel, &Data<double>::cvel), stage(d.ten_length, &Data<double>::ten_length), stage(d.ten_J, &Data<double>::ten_J);
    const bool posed = collides(m);                                    // detect's MuJoCo-order body frames, side by side
    if (posed) {
        size_t B = size_t(m.nbody);
        w.d.body_xpos.resize(3 * B), w.d.body_xquat.resize(4 * B), w.d.body_xmat.resize(9 * B);
        body_poses(m, q, w.d.body_xpos.data(), w.d.body_xquat.data(), w.d.body_xmat.data());
        stage(d.body_xpos, &Data<double>::body_xpos), stage(d.body_xquat, &Data<double>::body_xquat);
        stage(d.body_xmat, &Data<double>::body_xmat);
    }
    for (int64_t l = 0; l < count; l++) con.d[size_t(l)].body_posed = posed;
    apart(q, nq, [&](int64_t l) { return con.q.data() + l * nq; });
    apart(qd, nv, [&](int64_t l) { return con.qd.data() + l * nv; });
    apart(M, nM, [&](int64_t l) { return con.M.data() + l * nM; });
    apart(f, nv, [&](int64_t l) { return con.f.data() + l * nv; });
    if (factored) {
        apart(d.qL.data(), nM, [&](int64_t l) { return con.factor.data() + l * (nM + nv); });
        apart(d.qLinv.data(), nv, [&](int64_t l) { return con.factor.data() + l * (nM + nv) + nM; });
    }
    auto back = [&](int64_t l) {                                       // lane l's qacc, qfrc into the lanes repeating it
        for (int64_t k = l; k < (l == count - 1 ? int64_t(lanes_of<L>) : l + 1); k++)
            for (size_t j = 0; j < nv; j++) {
                qacc[j][k] = con.qacc[j];
                if (qfrc) qfrc[j][k] = con.qfrc[j];
            }
    };
    int64_t pending[BLOCK];                                            // the lanes whose PGS solves wait (Constrain::begin)
    void *ctx[BLOCK];
    int np = 0;
    for (int64_t l = 0; l < count; l++) {
        auto take = [l](const L *from, size_t n, double *to) {
            for (size_t e = 0; e < n; e++) to[e] = from[e][l];
        };
        if (con.one) {                                                 // what the observed fields read besides
            con.one->x.has_xfrc = w.x.has_xfrc;
            if (w.x.has_xfrc) take(w.x.xfrc.data(), w.x.xfrc.size(), con.one->x.xfrc.data());
            take(w.force.data(), w.force.size(), con.one->force.data());
        }
        const Constrain &c = con.lane[l];
        const size_t a = size_t(l);
        // observed: each lane's solve whole (its observed fields read con.one as taken above)
        auto accel = c.begin && !con.one ? c.begin : c.accel;
        int st = accel(c.ctx, con.d[a], con.q.data() + a * nq, con.qd.data() + a * nv, con.M.data() + a * nM,
                       con.f.data() + a * nv, con.qacc.data(), qfrc ? con.qfrc.data() : nullptr, update_warm, nullptr,
                       factored ? con.factor.data() + a * (nM + nv) : nullptr);
        if (st == PGS_PENDING && accel == c.begin) {
            pending[np] = l, ctx[np++] = c.ctx;
            continue;
        }
        if (st != OK) return st;
        back(l);
    }
    if (np) con.lane[pending[0]].together(ctx, np);                   // the pending solves' sweeps interleaved
    for (int p = 0; p < np; p++) {
        const int64_t l = pending[p];
        const size_t a = size_t(l);
        int st = con.lane[l].finish(ctx[p], con.d[a], con.q.data() + a * nq, con.qd.data() + a * nv, con.qacc.data(),
                                    qfrc ? con.qfrc.data() : nullptr, update_warm);
        if (st != OK) return st;
        back(l);
    }
    return OK;
}

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

// X (n, cols) <- A^-1 X from lu_factor's factors: row r of L Y = P X less L_rc Y_c over c < r ascending, then row i
// of U Z = Y less U_ij Z_j over j > i ascending, over U_ii. Many columns: up to kMaxSources rows at a time in sub's
// kernels (wide.h's subtract_rows_set, looked up by the caller; null with few columns); few: one row at a time inline
inline void lu_apply(const double *LU, int n, const int *piv, double *X, int cols, const SubtractRows (*sub)[kMaxGroup]) {
    for (int c = 0; c < n; c++)                                        // P X (the swaps moved L's rows too)
        if (piv[c] != c)
            for (int k = 0; k < cols; k++) std::swap(X[size_t(piv[c]) * cols + k], X[size_t(c) * cols + k]);
    const SubtractRows(*wide)[kMaxGroup] = cols >= 16 ? sub : nullptr;
    auto rows_from = [X, cols](int first) {                            // source k: X's row first + k
        return [X, cols, first](int k) -> const double * { return X + size_t(first + k) * cols; };
    };
    for (int r = 1; r < n; r++)                                        // L Y = P X
        subtract_sources(wide, X + size_t(r) * cols, rows_from(0), LU + size_t(r) * n, r, cols);
    for (int i = n - 1; i >= 0; i--) {                                 // U Z = Y
        double *y = X + size_t(i) * cols;
        subtract_sources(wide, y, rows_from(i + 1), LU + size_t(i) * n + i + 1, n - i - 1, cols);
        for (int k = 0; k < cols; k++) y[k] /= LU[size_t(i) * n + i];
    }
}

// x with A x = b by LU with partial pivoting (A overwritten); false on an exactly zero pivot
inline bool lu_solve(double *A, int n, double *b) {
    int piv[64];
    std::vector<int> many;
    int *p = n <= 64 ? piv : (many.resize(size_t(n)), many.data());
    if (!lu_factor(A, n, p)) return false;
    lu_apply(A, n, p, b, 1, nullptr);
    return true;
}

// implicitfast's standalone free body k (forward.free_body_blocks, MuJoCo's mjd_freeMhat): its block of the implicit
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

// implicitfast's standalone free bodies (forward.free_body_solve): each one's 6 rows of a solved again in its own
// block A a = rhs (free_body_matrix), by LU with partial pivoting; the bodies with a dof in skip (nv, or null) keep a
inline bool free_body_solve(const Model &m, SimData<double> &w, double h, const double *qd, const double *rhs, double *a,
                            const char *skip = nullptr) {
    for (int k = 0; k < m.nfree; k++) {
        int adr = int(m.free_dofadr[k]);
        if (skip && std::any_of(skip + adr, skip + adr + 6, [](char c) { return c != 0; })) continue;
        double A[36], b[6];
        free_body_matrix(m, w, h, qd, k, A);
        for (int i = 0; i < 6; i++) b[i] = rhs[adr + i];
        if (!lu_solve(A, 6, b)) return false;
        for (int i = 0; i < 6; i++) a[adr + i] = b[i];
    }
    return true;
}

// K (nv) <- the joints' spring stiffness on their dofs (forward.discrete_stiffness), into the workspace's w.stiffness
inline const double *discrete_stiffness(const Model &m, std::vector<double> &K) {
    std::fill(K.begin(), K.end(), 0.0);
    for (int s = 0; s < m.nspring; s++) K[size_t(m.spring_dofadr[s])] = m.spring_stiffness[s];
    return K.data();
}

// w.M <- M + h B + h^2 K (on the tree's pattern), the discrete integrator's factored metric (forward.factored_metric's
// backbone: B the joints' damping and the inertia boxes' fluid drag on M's reduced pattern, forward.joint_fluid_damping;
// K the joints' stiffness), with D = -B in w.D (whole) and the free bodies' blocks of M in w.free_M first for their own
// solves (double: free_body_matrix); w.d holds the velocity stages (the fluid's derivative)
template <class T> void discrete_matrix(const Model &m, SimData<T> &w, double h) {
    int nv = m.nv;
    T *M = w.M.data(), *D = w.velocity_matrix(m);
    for (size_t k = 0; k < size_t(nv) * nv; k++) D[k] = splat<T>(0.0);
    for (int j = 0; j < nv; j++) D[size_t(j) * nv + j] = splat<T>(-m.dof_damping[j]);
    if (m.nfluid) fluid_velocity_derivative(m, w.d, D, w.tmp.data());   // the inertia boxes' (passive.h)
    if constexpr (std::is_same_v<T, double>)
        for (int k = 0; k < m.nfree; k++) free_block(m, M, k, &w.free_M[36 * size_t(k)]);
    const double *K = discrete_stiffness(m, w.stiffness);
    if (m.nfluid) {                                                    // M + h B on the reduced pattern, then h^2 K
        for (int i = 0; i < nv; i++)
            for (int64_t s = m.M_rowadr[i]; s < m.M_rowadr[i] + m.M_rownnz[i]; s++) {
                int64_t j = m.M_colind[s];
                if (j != i && (m.dof_simplenum[i] || m.dof_simplenum[j])) continue;   // a simple dof's: not factored
                M[s] = M[s] - h * D[size_t(i) * nv + size_t(j)];
            }
        for (int j = 0; j < nv; j++) tree_diagonal(m, M, j) = tree_diagonal(m, M, j) + h * h * K[j];
        return;
    }
    for (int j = 0; j < nv; j++) tree_diagonal(m, M, j) = tree_diagonal(m, M, j) + (h * m.dof_damping[j] + h * h * K[j]);
}

// whether the discrete step's metric takes tendon or actuator terms (forward.metric_couplings; muscles are the NumPy
// engine's, which refuses them): a tendon's spring or damper, an actuator's affine gain or bias on its length or
// velocity; none when they stay explicit (o.explicit_couplings: the PGS solver, forward.explicit_couplings)
inline bool metric_couplings(const Model &m, const Actuators &act, const StepOptions &o) {
    if (o.explicit_couplings) return false;
    for (int t = 0; t < m.ntendon; t++)
        if (m.tendon_stiffness[t] != 0.0 || m.tendon_damping[t] != 0.0) return true;
    for (int k = 0; k < act.nu; k++)
        if (act.gain[3 * k + 1] != 0.0 || act.gain[3 * k + 2] != 0.0 || act.bias[3 * k + 1] != 0.0 || act.bias[3 * k + 2] != 0.0)
            return true;
    return false;
}

// B += c r r^T (nv, nv) over r's non-zero entries
inline void add_outer(int nv, double *B, const double *r, double c) {
    for (int i = 0; i < nv; i++) {
        if (r[i] == 0.0) continue;
        double ci = c * r[i];
        for (int j = 0; j < nv; j++) B[size_t(i) * nv + j] += ci * r[j];
    }
}

// the tendons' and actuators' terms of the discrete metric at the state evaluate left in w (forward.discrete_metric_terms):
// w.Bc = sum_t J_t^T b_t J_t + sum_a m_a^T cb_a m_a, w.Kc = sum_t J_t^T k_t J_t + sum_a m_a^T ck_a m_a (nv, nv), k_t the
// spring's stiffness outside its dead band (zero inside), cb_a and ck_a the actuator's velocity and length slopes kept
// with the stabilizing sign, max(-slope, 0), for an actuator not saturated by its forcerange, its joint's or its
// tendon's actuatorfrcrange (actuation.servo_metric); w.kq = Kc qd; the dofs they reach into w.coupled. Whether any.
inline bool coupling_terms(const Model &m, const Actuators &act, SimData<double> &w, const double *qd) {
    size_t nv = size_t(m.nv);
    if (w.Bc.empty()) {
        for (auto *v : {&w.Bc, &w.Kc}) v->resize(nv * nv);
        for (auto *v : {&w.kq, &w.cg_r, &w.cg_z, &w.cg_p, &w.cg_Ap}) v->resize(nv);
        w.coupled.resize(nv);
    }
    double *B = w.Bc.data(), *K = w.Kc.data();
    std::fill(w.Bc.begin(), w.Bc.end(), 0.0), std::fill(w.Kc.begin(), w.Kc.end(), 0.0);
    const Data<double> &d = w.d;
    for (int t = 0; t < m.ntendon; t++) {                              // J^T diag(b) J, J^T diag(k) J
        const double *J = &d.ten_J[size_t(t) * nv], *band = &m.tendon_lengthspring[2 * t];
        double len = d.ten_length[t];
        double k = len < band[0] || len > band[1] ? m.tendon_stiffness[t] : 0.0;   // none inside the dead band
        if (m.tendon_damping[t] != 0.0) add_outer(m.nv, B, J, m.tendon_damping[t]);
        if (k != 0.0) add_outer(m.nv, K, J, k);
    }
    if (act.nu) {                                                      // the servos' slopes
        const double *force = w.force.data(), *moment = arms(act, w.x);
        std::vector<double> keep(size_t(act.nu), 1.0);
        if (act.tendon_limited) tendon_saturated(act, force, keep.data());
        joint_force(m, act, moment, force, w.tmp.data());
        for (int k = 0; k < act.nu; k++) {
            bool on = keep[size_t(k)] != 0.0;
            if (act.forcelimited[k]) on = on && force[k] > act.forcerange[2 * k] && force[k] < act.forcerange[2 * k + 1];
            int64_t j = act.joint_dof[k];
            if (j >= 0 && act.dof_forcelimited[j])                     // its joint's total strictly inside the range
                on = on && w.tmp[j] > act.dof_forcerange[2 * j] && w.tmp[j] < act.dof_forcerange[2 * j + 1];
            if (!on) continue;
            double input = actuator_input(act, k, w.x), slope[2];
            for (int c = 1; c <= 2; c++)                               // d force / d length (1), d velocity (2)
                slope[c - 1] = (act.biastype[k] == GAIN_AFFINE ? act.bias[3 * k + c] : 0.0) +
                               (act.gaintype[k] == GAIN_AFFINE ? act.gain[3 * k + c] : 0.0) * input;
            const double *r = &moment[size_t(k) * nv];
            if (slope[1] < 0.0) add_outer(m.nv, B, r, -slope[1]);
            if (slope[0] < 0.0) add_outer(m.nv, K, r, -slope[0]);
        }
    }
    bool any = false;
    for (size_t i = 0; i < nv; i++) {
        double s = 0.0;
        bool reach = false;
        for (size_t j = 0; j < nv; j++) {
            s += K[i * nv + j] * qd[j];
            reach = reach || B[i * nv + j] != 0.0 || K[i * nv + j] != 0.0;
        }
        w.kq[i] = s, w.coupled[i] = reach, any = any || reach;
    }
    return any;
}

// y = X v + C v for X on the tree's pattern (symmetric: its lower triangle kept) and C (nv, nv) dense
inline void metric_product(const Model &m, const double *X, const double *C, const double *v, double *y) {
    int n = m.nv;
    for (int i = 0; i < n; i++) {
        double s = 0.0;
        for (int j = 0; j < n; j++) s += C[size_t(i) * n + j] * v[j];
        y[i] = s;
    }
    for (int i = 0; i < n; i++)
        for (int64_t a = m.M_rowadr[i]; a < m.M_rowadr[i] + m.M_rownnz[i]; a++) {
            int64_t j = m.M_colind[a];
            y[i] += X[a] * v[j];
            if (j != i) y[j] += X[a] * v[i];
        }
}

// x (n) with A x = b (n) by conjugate gradients preconditioned with P (solver.conjugate_gradients): times(v, y) y = A v,
// precondition(z) z <- P^-1 z; from x = 0 until |r|^2 < tolerance^2 |b|^2 or after `iterations`, r, z, p, Ap (n each)
// its vectors. The relative residual |r| / |b| when it stopped at the cap (MuJoCo's mjWARN_INERTIA), else -1
template <class Times, class Precondition>
double conjugate_gradients(int n, const double *b, double *x, double tolerance, int64_t iterations, double *r, double *z,
                           double *p, double *Ap, Times times, Precondition precondition) {
    double bn = 0.0;
    for (int j = 0; j < n; j++) x[j] = 0.0, r[j] = b[j], bn += b[j] * b[j];
    if (bn <= MINVAL) return -1.0;
    std::copy(r, r + n, z);
    precondition(z);
    double rz = 0.0, rr = bn;
    for (int j = 0; j < n; j++) p[j] = z[j], rz += r[j] * z[j];
    for (int64_t it = 0; it < iterations; it++) {
        times(p, Ap);
        double pAp = 0.0;
        for (int j = 0; j < n; j++) pAp += p[j] * Ap[j];
        if (pAp <= 0.0) return -1.0;                                   // no curvature along p: x is the best there is
        double alpha = rz / pAp;
        rr = 0.0;
        for (int j = 0; j < n; j++) x[j] += alpha * p[j], r[j] -= alpha * Ap[j], rr += r[j] * r[j];   // x += alpha p
        if (rr < tolerance * tolerance * bn) return -1.0;
        std::copy(r, r + n, z);
        precondition(z);
        double rz_new = 0.0;
        for (int j = 0; j < n; j++) rz_new += r[j] * z[j];
        for (int j = 0; j < n; j++) p[j] = z[j] + rz_new / rz * p[j];   // p = z + beta p
        rz = rz_new;
    }
    return std::sqrt(rr / bn);                                         // stopped at the cap
}

// w.Bc <- C = h Bc + h^2 Kc (nv x nv), the tendons' and actuators' terms of the discrete metric M^ = X + C
// (coupling_terms' Bc and Kc; forward.discrete's M_hat less its factored part)
inline void coupling_metric(const Model &m, SimData<double> &w, double h) {
    double *C = w.Bc.data();
    for (size_t k = 0; k < size_t(m.nv) * size_t(m.nv); k++) C[k] = h * C[k] + h * h * w.Kc[k];
}

// a (nv) with (X + C) a = b by conjugate gradients preconditioned with the factor of X + diag(C) (solver.metric_pcg: the
// discrete metric M^ = X + C, X its factored part on the tree's pattern in w.M, C = h Bc + h^2 Kc in w.Bc
// (coupling_metric) its tendons' and actuators' terms, as MuJoCo 4 applies them matrix-free), from a = 0 until
// |r|^2 < tolerance^2 |b|^2 or after o.iterations (then its relative residual |r| / |b| into w.pcg_capped, as
// solver.metric_pcg warns). SINGULAR when the preconditioner is not positive definite
inline int metric_pcg(const Model &m, SimData<double> &w, const StepOptions &o, const double *b, double *a) {
    size_t nv = size_t(m.nv);
    const double *C = w.Bc.data();
    double *L = w.d.qL.data(), *inv = w.d.qLinv.data();
    std::copy(w.M.begin(), w.M.end(), L);                              // the preconditioner X + diag(C), factored once
    for (size_t j = 0; j < nv; j++) tree_diagonal(m, L, int64_t(j)) += C[j * nv + j];
    if (!tree_cholesky(m, L, inv)) return SINGULAR;
    double capped = conjugate_gradients(
        m.nv, b, a, o.tolerance, o.iterations, w.cg_r.data(), w.cg_z.data(), w.cg_p.data(), w.cg_Ap.data(),
        [&](const double *v, double *y) { metric_product(m, w.M.data(), C, v, y); },
        [&](double *z) { tree_solve(m, (const double *)L, (const double *)inv, z); });
    if (capped >= 0.0) w.pcg_capped = capped;
    return OK;
}

// w.M <- the matrix a single-step integrator solves with (forward.step_matrix), w.M holding M at (q, qd) on the tree's
// pattern and w.d its velocity stages (implicit's into w.dense_matrix: dense, for LU; w.M as it was): euler M + h B
// when the damping is implicit; implicitfast (on M's reduced pattern: not between a simple body's dofs, whose
// off-diagonal entries w.D keeps for the free bodies' blocks) and implicit M - h D on M's pattern with
// D = dA/dqd - B + dF/dqd (fluid) (- dc/dqd: implicit; implicitfast symmetrizes it) in w.D, implicitfast's free
// bodies' blocks of M kept in w.free_M first (double: free_body_matrix; w.tmp takes the dofs' actuator totals); rk4 and euler with explicit
// damping: M as it is
template <class T> void step_matrix(const Model &m, const Actuators &act, SimData<T> &w, double h, int integrator,
                                    bool implicit_damping, const T *qd) {
    int nv = m.nv;
    T *M = w.M.data();
    if (integrator == RK4) return;
    if (integrator == DISCRETE) return discrete_matrix(m, w, h);
    if (integrator == EULER) {
        if (implicit_damping)
            for (int j = 0; j < nv; j++) tree_diagonal(m, M, j) = tree_diagonal(m, M, j) + h * m.dof_damping[j];
        return;
    }
    Data<T> &d = w.d;
    T *D = w.velocity_matrix(m);
    for (size_t k = 0; k < size_t(nv) * nv; k++) D[k] = splat<T>(0.0);
    for (int j = 0; j < nv; j++) D[size_t(j) * nv + j] = splat<T>(-m.dof_damping[j]);
    if (act.nu) actuator_velocity_derivative(m, act, w.x, w.force.data(), D, w.tmp.data());
    if (m.nfluid) fluid_velocity_derivative(m, d, D, w.tmp.data());   // the inertia boxes' (passive.h)
    if (m.ntendon) tendon_damping_derivative(m, d, D);                  // the tendons' dampers (passive.h)
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
    if (integrator == IMPLICITFAST) {
        if constexpr (std::is_same_v<T, double>)                       // the free bodies' blocks of M, before M - h D
            for (int k = 0; k < m.nfree; k++) free_block(m, M, k, &w.free_M[36 * size_t(k)]);
        for (int i = 0; i < nv; i++)                                   // on M's pattern: row i's columns j <= i
            for (int64_t s = m.M_rowadr[i]; s < m.M_rowadr[i] + m.M_rownnz[i]; s++) {
                size_t j = size_t(m.M_colind[s]), ij = size_t(i) * nv + j, ji = j * nv + size_t(i);
                if (j != size_t(i) && m.dof_simplenum[i]) continue;   // the reduced pattern: a simple dof's row (w.D whole)
                M[s] = M[s] - h * (0.5 * (D[ij] + D[ji]));
            }
        return;
    }
    T *A = w.dense_matrix(m);                                          // implicit: M dense, then (i, j) and (j, i)
    tree_unpack(m, (const T *)M, A);
    for (int i = 0; i < nv; i++)
        for (int64_t s = m.M_rowadr[i]; s < m.M_rowadr[i] + m.M_rownnz[i]; s++) {
            size_t j = size_t(m.M_colind[s]), ij = size_t(i) * nv + j, ji = j * nv + size_t(i);
            A[ij] = A[ij] - h * D[ij];
            if (ji != ij) A[ji] = A[ji] - h * D[ji];
        }
}

// ---------------------------------------------------------------- the integrators

// a single-step integrator's start at (q, qd) (forward.single_step_start): M and f (evaluate), DIVERGED when they are no
// longer finite (the state ran away), the start state's energy into e, and rhs = f; with constraints (con, double only)
// the solver's qacc into w.a and rhs = f + qfrc_constraint, constrained true; with_rhs false: a constrained step that
// reads its qacc alone (euler's without implicit damping), so neither qfrc_constraint nor rhs is formed. OK,
// ZERO_QUATERNION or the solver's status
template <class T> int single_step_start(const Model &m, const Actuators &act, SimData<T> &w, const T *q, const T *qd, T &e,
                                         const ConstrainFor<T> *con, bool &constrained, bool with_rhs = true) {
    int nv = m.nv;
    T *M = w.M.data(), *f = w.f.data(), *rhs = w.rhs.data(), pot;
    if (evaluate(m, act, w.d, w.x, q, qd, f, M, w.tmp.data(), w.force.data(), pot) != OK) return ZERO_QUATERNION;
    if (any_nonfinite(f, size_t(nv)) || !finite_diagonal(m, M)) return DIVERGED;
    e = w.x.energy ? 0.5 * quadratic(m, M, qd, w.Mv.data()) + pot : splat<T>(0.0);   // the energy only when asked
    for (int j = 0; j < nv; j++) rhs[j] = f[j];
    constrained = false;
    if (con) {                                                         // the constrained solve: qacc, f + qfrc_constraint
        int st = constrained_solve(m, *con, w, q, qd, M, f, w.a.data(), with_rhs ? w.qfrc.data() : nullptr, true);
        if (st != OK) return st;
        if (with_rhs)
            for (int j = 0; j < nv; j++) rhs[j] = f[j] + w.qfrc[j];
        constrained = true;
    }
    return OK;
}

// qd' = qd + h a, q' = q (+) h qd' from the acceleration in w.a: the new velocity first, then the position; the
// activations w.x.act advance at the start state's rate (forward.advance_activation: mj_advance)
template <class T>
void semi_implicit_update(const Model &m, const Actuators &act, SimData<T> &w, double h, const T *q, const T *qd, T *qn, T *qdn) {
    if (act.na) advance_activations(act, w.x.act.data(), w.x.act_dot.data(), h);      // act' = act + h act_dot, clamped
    for (int j = 0; j < m.nv; j++) qdn[j] = qd[j] + h * w.a[j];
    integrate_pos(m, q, qdn, h, qn);
}

// one semi-implicit Euler step (mj_Euler, forward.euler) from (q, qd) into (qn, qdn) with the inputs in w.x, the start
// state's energy into e: (M + h B) a = f (+ qfrc_constraint) when the damping is implicit, else M a = f or, with
// constraints (con), the solver's qacc. OK, DIVERGED, ZERO_QUATERNION, SINGULAR, or the solver's status
template <class T> int euler(const Model &m, const Actuators &act, SimData<T> &w, const StepOptions &o, const T *q, const T *qd,
                             T *qn, T *qdn, T &e, const ConstrainFor<T> *con = nullptr) {
    bool constrained;
    int st = single_step_start(m, act, w, q, qd, e, con, constrained, o.implicit_damping);   // constrained: qacc alone
    if (st != OK) return st;
    if (!constrained || o.implicit_damping) {                          // (M + h B) a = rhs (step_matrix), or M a = rhs
        for (int j = 0; j < m.nv; j++) w.a[j] = w.rhs[j];
        step_matrix(m, act, w, o.h, EULER, o.implicit_damping, qd);
        if (tree_cholesky_solve_packed(m, w.M.data(), w.a.data(), w.d.qL.data(), w.d.qLinv.data()) != OK) return SINGULAR;
    }
    semi_implicit_update(m, act, w, o.h, q, qd, qn, qdn);
    return OK;
}

// one implicit-in-velocity step (mj_implicit, forward.implicit) as euler's with (M - h D) a = f (+ qfrc_constraint)
// (step_matrix): implicit's D = dA/dqd - B - dc/dqd by LU; implicitfast's (fast) D = sym(dA/dqd - B) by Cholesky on M's
// pattern, as MuJoCo does, its standalone free bodies' rows again in their own blocks (free_body_solve). ONE_BY_ONE on
// lanes for implicit, or implicitfast with free bodies (LU pivots per lane)
template <class T> int implicit(const Model &m, const Actuators &act, SimData<T> &w, const StepOptions &o, bool fast, const T *q,
                                const T *qd, T *qn, T *qdn, T &e, const ConstrainFor<T> *con = nullptr) {
    int nv = m.nv;
    bool constrained;
    int st = single_step_start(m, act, w, q, qd, e, con, constrained);
    if (st != OK) return st;
    T *M = w.M.data(), *a = w.a.data();
    for (int j = 0; j < nv; j++) a[j] = w.rhs[j];
    if constexpr (!std::is_same_v<T, double>) {                        // pivots per lane: one trajectory at a time
        if (!fast || m.nfree) return ONE_BY_ONE;
    }
    step_matrix(m, act, w, o.h, fast ? IMPLICITFAST : IMPLICIT, o.implicit_damping, qd);
    bool ok;
    if constexpr (std::is_same_v<T, double>) {
        ok = !fast ? lu_solve(w.Mdense.data(), nv, a) : tree_cholesky_solve_packed(m, M, a, w.d.qL.data(), w.d.qLinv.data()) == OK;
        if (ok && fast && m.nfree) ok = free_body_solve(m, w, o.h, qd, w.rhs.data(), a);
    } else {
        ok = tree_cholesky_solve_packed(m, M, a, w.d.qL.data(), w.d.qLinv.data()) == OK;
    }
    if (!ok) return SINGULAR;
    semi_implicit_update(m, act, w, o.h, q, qd, qn, qdn);
    return OK;
}

// the discrete step's a = (qd' - qd) / h into w.a at (q, qd) after evaluate left M in w.M and f in w.rhs
// (forward.discrete_acceleration; constraints.forward_dynamics' qacc of a discrete model): (M + h B + h^2 K) a = f - h K qd
// (+ J^T f_c) (discrete_matrix); the tendons' and servos' terms of the metric (coupling_terms, coupling_metric) by
// metric_pcg; with constraints (con, double only) the solver minimises in that metric, those terms included
// (DiscreteSolve::coupling), with the rows at the end of the step; standalone free bodies no row or coupling term
// reaches solved again in their blocks as implicitfast's (free_body_solve). ONE_BY_ONE on lanes with free bodies or
// coupling terms (LU pivots, the iterations per lane), SINGULAR, or the solver's status
template <class T> int discrete_acceleration(const Model &m, const Actuators &act, SimData<T> &w, const StepOptions &o,
                                             const T *q, const T *qd, const ConstrainFor<T> *con) {
    int nv = m.nv, st = OK;
    if constexpr (!std::is_same_v<T, double>) {                        // LU pivots, the couplings' iterations per lane
        if (m.nfree || metric_couplings(m, act, o)) return ONE_BY_ONE;
    }
    const double *K = discrete_stiffness(m, w.stiffness);
    T *rhs = w.rhs.data(), *a = w.a.data();
    bool coupled = false;
    if constexpr (std::is_same_v<T, double>) {                         // the tendons' and servos' terms
        coupled = metric_couplings(m, act, o) && coupling_terms(m, act, w, qd);
        if (coupled)
            for (int j = 0; j < nv; j++) rhs[j] = rhs[j] - o.h * (K[j] * qd[j] + w.kq[j]);   // f - h K qd, K whole
    }
    if (!coupled)
        for (int j = 0; j < nv; j++) rhs[j] = rhs[j] - (o.h * K[j]) * qd[j];              // f - h K qd
    for (int j = 0; j < nv; j++) a[j] = rhs[j];
    if constexpr (std::is_same_v<T, double>) {
        if (con)
            for (int j = 0; j < nv; j++) w.bare_diag[size_t(j)] = tree_diagonal(m, w.M.data(), j);
    }
    step_matrix(m, act, w, o.h, DISCRETE, o.implicit_damping, qd);
    bool solved = false;
    if constexpr (std::is_same_v<T, double>) {
        if (coupled) coupling_metric(m, w, o.h);                       // C = h Bc + h^2 Kc
        if (con) {                                                     // the solve in M^, the rows at the step's end
            DiscreteSolve step{o.h, w.bare_diag.data(), w.row_dofs.data(), coupled ? w.Bc.data() : nullptr,
                               &w.pcg_capped};
            st = con->accel(con->ctx, w.d, q, qd, w.M.data(), rhs, a, w.qfrc.data(), true, &step, nullptr);
            if (st != OK) return st;
            solved = true;
        } else if (coupled) {                                          // in M^ with its couplings, iteratively
            if (metric_pcg(m, w, o, rhs, a) != OK) return SINGULAR;
            solved = true;
        }
    }
    if (!solved && tree_cholesky_solve_packed(m, w.M.data(), a, w.d.qL.data(), w.d.qLinv.data()) != OK) return SINGULAR;
    if constexpr (std::is_same_v<T, double>) {      // skipped: the bodies rows or couplings reach (DiscreteMetric.skipped)
        if (con && coupled)
            for (int j = 0; j < nv; j++) w.row_dofs[size_t(j)] = char(w.row_dofs[size_t(j)] || w.coupled[size_t(j)]);
        const char *skip = con ? w.row_dofs.data() : coupled ? w.coupled.data() : nullptr;
        if (m.nfree && !free_body_solve(m, w, o.h, qd, rhs, a, skip)) return SINGULAR;
    }
    return OK;
}

// one step of MuJoCo 4's discrete integrator (mjINT_DISCRETE, forward.discrete): evaluate's M and f at (q, qd)
// (single_step_start), the step map a (discrete_acceleration), qd' = qd + h a, q' = q (+) h qd'; with constraints the
// step's final a (free bodies included) settled as the next warm start
template <class T> int discrete(const Model &m, const Actuators &act, SimData<T> &w, const StepOptions &o, const T *q,
                                const T *qd, T *qn, T *qdn, T &e, const ConstrainFor<T> *con = nullptr) {
    bool constrained;
    int st = single_step_start(m, act, w, q, qd, e, nullptr, constrained);
    if (st != OK) return st;
    if ((st = discrete_acceleration(m, act, w, o, q, qd, con)) != OK) return st;
    if constexpr (std::is_same_v<T, double>) {
        if (con && con->settle) con->settle(con->ctx, w.a.data());     // the step map, free bodies included: d.qacc
    }
    semi_implicit_update(m, act, w, o.h, q, qd, qn, qdn);
    return OK;
}

// one classic RK4 step (mj_RungeKutta, forward.runge_kutta) with the inputs held over the step: stage i at
// q (+) h c k_(i-1), qd + h c a_(i-1); k_i = dexp^-1 qd_i; with constraints each stage's acceleration is the solver's.
// OK, DIVERGED, ZERO_QUATERNION, SINGULAR, or the solver's status
template <class T> int runge_kutta(const Model &m, const Actuators &acts, SimData<T> &w, const StepOptions &o, const T *q,
                                   const T *qd, T *qn, T *qdn, T &e, const ConstrainFor<T> *con = nullptr) {
    int nv = m.nv;
    Data<T> &d = w.d;
    T *M = w.M.data(), *f = w.f.data(), *a = w.a.data(), *rhs = w.rhs.data(), pot;
    // the inputs held over the step: stage i at q (+) h c k_(i-1), qd + h c a_(i-1); k_i = dexp^-1 qd_i
    const double C[3] = {0.5, 0.5, 1.0}, B[4] = {1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0};
    T *qi = w.qi.data(), *qdi = w.qdi.data(), *dqd = w.dqd.data(), *kv = w.kv.data();
    T *act = w.x.act.data(), *act0 = w.act0.data(), *act_dot = w.x.act_dot.data(), *act_sum = w.act_sum.data();
    int na = acts.na;
    for (int i = 0; i < na; i++) act0[i] = act[i];
    for (int stage = 0; stage < 4; stage++) {
        if (stage == 0) {
            for (int i = 0; i < m.nq; i++) qi[i] = q[i];
            for (int j = 0; j < nv; j++) qdi[j] = qd[j];
        } else {
            double c = C[stage - 1];
            for (int j = 0; j < nv; j++) w.dq[j] = c * kv[j];
            integrate_pos(m, q, w.dq.data(), o.h, qi);
            for (int j = 0; j < nv; j++) qdi[j] = qd[j] + o.h * (c * w.stage_a[j]);
            for (int i = 0; i < na; i++) act[i] = act0[i] + o.h * (c * act_dot[i]);      // the stage's act, unclamped
        }
        if (evaluate(m, acts, d, w.x, qi, qdi, f, M, w.tmp.data(), w.force.data(), pot) != OK) return ZERO_QUATERNION;
        if (any_nonfinite(f, size_t(nv)) || !finite_diagonal(m, M)) return DIVERGED;
        if (stage == 0) e = w.x.energy ? 0.5 * quadratic(m, M, qdi, w.Mv.data()) + pot : splat<T>(0.0);
        for (int i = 0; i < na; i++) act_sum[i] = stage == 0 ? 0.0 + B[0] * act_dot[i] : act_sum[i] + B[stage] * act_dot[i];
        bool constrained = false;
        if (con) {                                                     // the stage's constrained acceleration into f
            int st = constrained_solve(m, *con, w, qi, qdi, M, f, rhs, (T *)nullptr, stage == 3);   // qacc alone
            if (st != OK) return st;
            for (int j = 0; j < nv; j++) f[j] = rhs[j];
            constrained = true;
        }
        if (!constrained && tree_cholesky_solve_packed(m, M, f, d.qL.data(), d.qLinv.data()) != OK) return SINGULAR;
        for (int j = 0; j < nv; j++) kv[j] = qdi[j], w.stage_a[j] = f[j];
        if (stage > 0) {
            for (int j = 0; j < nv; j++) w.dq[j] = o.h * w.dq[j];
            dexp_inv(m, w.dq.data(), kv);
        }
        for (int j = 0; j < nv; j++) {
            a[j] = stage == 0 ? 0.0 + B[0] * kv[j] : a[j] + B[stage] * kv[j];         // sum of b k_i
            dqd[j] = stage == 0 ? 0.0 + B[0] * f[j] : dqd[j] + B[stage] * f[j];       // sum of b a_i
        }
    }
    for (int i = 0; i < na; i++) act[i] = act0[i];                    // act' from the weighted rates (mj_advance)
    if (na) advance_activations(acts, act, act_sum, o.h);
    integrate_pos(m, q, a, o.h, qn);
    for (int j = 0; j < nv; j++) qdn[j] = qd[j] + o.h * dqd[j];
    return OK;
}

// one step of o.integrator from (q, qd) into (qn, qdn) with the inputs in w.x, the start state's energy into e
// (forward.STEPPERS), with the model's constraints when con (double only): euler, implicit or runge_kutta's status
template <class T> int step(const Model &m, const Actuators &act, SimData<T> &w, const StepOptions &o, const T *q, const T *qd,
                            T *qn, T *qdn, T &e, const ConstrainFor<T> *con = nullptr) {
    w.x.h = o.h;                                                       // actearly's step
    if constexpr (!std::is_same_v<T, double>) {                        // lanes solve at stages: not the discrete step's
        if (con && o.integrator == DISCRETE) return ONE_BY_ONE;
    }
    if (o.integrator == EULER) return euler(m, act, w, o, q, qd, qn, qdn, e, con);
    if (o.integrator == RK4) return runge_kutta(m, act, w, o, q, qd, qn, qdn, e, con);
    if (o.integrator == DISCRETE) return discrete(m, act, w, o, q, qd, qn, qdn, e, con);
    return implicit(m, act, w, o, o.integrator == IMPLICITFAST, q, qd, qn, qdn, e, con);
}

// the energy of the final state into e (simulate's E[steps])
template <class T> int final_energy(const Model &m, Data<T> &d, const T *q, const T *qd, T &e) {
    if (velocity_stages(m, d, q, qd) != OK) return ZERO_QUATERNION;
    e = energy_vel(m, d, qd) + energy_pos(m, d, q);
    return OK;
}

}  // namespace
}  // namespace physai
