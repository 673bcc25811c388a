// MuJoCo's soft constraints (src/physai/engine/constraint.py: engine_core_constraint.c, engine_solver.c,
// engine_inverse.c), function by function with the NumPy text's names, stages and algorithm choices, one state at a
// time (double: the rows vary per state, so no lanes for them; compiled into the scalar translation unit only):
//
//     rows(m, w, q, qd, contacts, eq_active)     the rows of a state in MuJoCo's order and layout (efc_J, efc_pos,
//                                                efc_margin, ..., efc_aref): equality, friction loss, limits, contacts
//     impedance_all (_impedance), impedance      R, D, K, B, imp of every row and the regularised cones' mu
//     update(r, jar, ...)                        each row's force and the constraint cost at jar = J qacc - aref
//     solve(m, w, ...)                           Newton's method with an exact line search (mj_solNewton's stopping
//                                                rules), from the unconstrained accelerations or a warm start
//     inverse_force(r, qacc)                     the forces of given accelerations, row by row (mj_invConstraint)
//     constraint_states(m, ws, call, lo, hi)     the constraint operations (rows, forward, inverse) on states [lo, hi);
//                                                forward and inverse take the smooth stages (kinematics, M and its
//                                                factor, c) of blocks of states from the active lanes (batch.h's
//                                                constraint_smooth), the states they leave computed here
//
// The invweight constants at qpos0 (body_invweight0, dof_invweight0, meaninertia) come with the model (Model's
// constraint fields, computed once by physai.engine.constraint.invweight0). A row's Jacobian is kept in compressed
// rows (its nonzero columns and their entries; dense too, MuJoCo's efc_J as the NumPy text has it, when the rows are
// returned), in groups of rows on the same columns (a foot's contacts), which the solver's products and Hessian walk.
// M is factored by Cholesky on the tree's pattern (the model's sparse layout of M, forward.h: no fill-in); so is the
// Hessian M + J^T D J when every row lies on one chain of the tree (contacts with the world, friction loss, limits),
// else it is factored dense (the factor of forward.h's cholesky_solve, written as row updates, on its rows' nonzero
// runs); it is updated by rank-1 updates when a few rows changed state and refactored when many did or a contact is on
// its cone.
// Every buffer is in the ConstraintWork of the caller (one per thread), grown to the largest state seen and kept.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "collision.h"
#include "data.h"
#include "forward.h"
#include "kernels.h"
#include "model.h"
#include "smooth.h"
#include "spatial.h"
#include "support.h"

namespace physai {
namespace {

// row types, MuJoCo's numbers (mjtConstraint)
enum { EQUALITY, FRICTION_DOF, FRICTION_TENDON, LIMIT_JOINT, LIMIT_TENDON, CONTACT_FRICTIONLESS, CONTACT_PYRAMIDAL,
       CONTACT_ELLIPTIC };
// row states after an update, MuJoCo's numbers (mjtConstraintState)
enum { SATISFIED, QUADRATIC, LINEARNEG, LINEARPOS, CONE };
// physai.engine.model's equality types (the joint types and MINVAL: cpp/collision.h)
enum { EQ_CONNECT = 0, EQ_WELD = 1, EQ_JOINT = 2 };
constexpr double MINIMP = 0.0001, MAXIMP = 0.9999;  // MuJoCo's bounds of a row's impedance

// ---------------------------------------------------------------- the workspace

// the rows of one state (constraint.Rows): nefc rows of J (nv each, dense) with their nonzero columns
// (cols[start[i] .. start[i + 1])) and the groups of rows on the same columns, pos, margin, frictionloss, type, id,
// diagA, R, D, K, B, imp, impP, vel, aref;
// ne, nf, nl; the state's contacts (nc: none when opt.contact is off) with each one's regularised mu and first row
// (-1: no rows); the connect and weld blocks' Jdot qd (jdot_first, jdot_n, 6 values each)
struct Rows {
    int nv = 0, nefc = 0, ne = 0, nf = 0, nl = 0;
    bool dense = true;                                                 // J written (else only val: rows not returned)
    bool tree = true;                                                  // every row's columns on one chain (chains)
    std::vector<double> J, pos, margin, frictionloss, diagA, R, D, K, B, imp, impP, vel, aref;
    std::vector<int64_t> type, id;
    std::vector<int> start, cols;                                      // row i's nonzero columns: cols[start[i] .. start[i + 1])
    std::vector<double> val;                                           // J's entries there (J in compressed rows)
    std::vector<int> group;             // groups of consecutive rows on the same columns (a contact's): group[g] .. group[g + 1]
    Contacts con;
    std::vector<double> contact_mu;
    std::vector<int64_t> contact_row;
    std::vector<int> jdot_first, jdot_n;
    std::vector<double> jdot;
};

// the cone Hessians of the contacts on their cone after an update: n of them, block k from row first[k], dim[k] rows,
// its dim x dim matrix at H[36 k]
struct Cones {
    int n = 0;
    std::vector<int> first, dim;
    std::vector<double> H;
};

// everything a state's constraint kernel needs besides the model (mjData's efc part and the solver's context)
struct ConstraintWork {
    Data<double> d;
    const Data<double> *stages = nullptr;           // the velocity stages the rows read: another workspace's, or d
    Rows r;
    Cones cones;
    // the kinematics the rows read: the links' bias accelerations (nlink + 1, 6: the world last); two point Jacobians
    // and their difference (6 x nv); chain marks (nv) and a contact's columns (nv)
    std::vector<double> acc, J1, J2, Jd;
    CollisionWork col;                              // MuJoCo's body frames (equalities' anchors, welds' quaternions), contacts
    std::vector<char> mark;
    std::vector<int> cols;
    // the solver: M (nv x nv, crb's); M on the tree's pattern (Mt: the model's sparse layout of M, forward.h; entry
    // (i, j) of an ancestor j of i at M_rowadr[i] + depth(j), depth(j) = M_rownnz[j] - 1), its factor in d.qL, d.qLinv;
    // H's factor there (LHt) when the rows are chains (r.tree), else dense (LH, nv x nv) with its rows' nonzero runs
    // (cholesky); H's tree factor's reciprocal diagonal (LHinv); a row's x x^T along a chain (xt, by depth); vectors of
    // nv; vectors of nefc
    std::vector<double> M, Mt, LHt, LH, LHinv, xt, c, qfrc_smooth, qacc_smooth, qacc, Ma, grad, step, v, Mv,
        tmp;
    std::vector<int> nzH, countH;
    std::vector<double> G, g;                       // a group of rows' J^T D J (nv x nv), a row's entries (nv)
    std::vector<double> force, jar, Jv, wforce, wjar, x, quad;   // quad: 3 per row (Line)
    std::vector<int> state, wstate, hstate;
    Cones wcones;
    // the smooth stages of a block of states: the lanes that compute them (call.lanes), their workspace, and the states'
    // SmoothLayout blocks
    const Kernels *lanes = nullptr;
    Workspace *lanes_work = nullptr;
    std::vector<double> smooth;
    explicit ConstraintWork(const Model &m) : d(m), col(m) {
        size_t V = size_t(m.nv);
        r.nv = m.nv;
        acc.resize(6 * (size_t(m.nlink) + 1));
        for (auto *x : {&J1, &J2, &Jd}) x->resize(6 * V);
        mark.assign(V, 0), cols.resize(V);
        for (auto *x : {&M, &LH}) x->resize(V * V);
        for (auto *x : {&Mt, &LHt}) x->resize(size_t(tree_nnz(m)));
        nzH.resize(2 * V * V), countH.resize(V), G.resize(V * V), g.resize(V), xt.resize(V), LHinv.resize(V);
        for (auto *y : {&c, &qfrc_smooth, &qacc_smooth, &qacc, &Ma, &grad, &step, &v, &Mv, &tmp, &x}) y->resize(V);
    }
    ConstraintWork(const ConstraintWork &) = delete;
    ConstraintWork &operator=(const ConstraintWork &) = delete;
    ~ConstraintWork() {
        if (lanes_work) lanes->destroy(lanes_work);
    }
};

// ---------------------------------------------------------------- small helpers

// a . b over n entries
inline double dot(const double *a, const double *b, int n) {
    double s = 0.0;
    for (int k = 0; k < n; k++) s += a[k] * b[k];
    return s;
}

// row k's nonzero columns left of its diagonal in L (row-major n x n) as runs of consecutive columns: [runs[2 a],
// runs[2 a + 1]) for a < count, into runs (k pairs at most); returns count
inline int find_runs(const double *Lk, int k, int *runs) {
    int count = 0;
    for (int i = 0; i < k; i++) {
        if (Lk[i] == 0.0) continue;
        if (count && runs[2 * count - 1] == i) runs[2 * count - 1] = i + 1;
        else runs[2 * count] = i, runs[2 * count + 1] = i + 1, count++;
    }
    return count;
}

// H = L^T L for H symmetric positive definite (row-major n x n: its lower triangle read and overwritten by L, lower
// triangular), the rows eliminated from the last to the first (MuJoCo's mj_factorM order: a dof coupled to its
// ancestors only, a tree's pattern, fills in nothing); row k's nonzero columns left of its diagonal as runs
// (find_runs) into runs[2 k n ..], their number into count[k], for the solves. false on a non-positive pivot.
inline bool cholesky(double *H, int n, int *runs, int *count) {
    for (int k = n - 1; k >= 0; k--) {
        double *Hk = H + size_t(k) * n;
        if (!(Hk[k] > 0.0)) return false;
        double d = std::sqrt(Hk[k]);
        Hk[k] = d;
        int *z = runs + 2 * size_t(k) * n, c = find_runs(Hk, k, z);
        count[k] = c;
        for (int a = 0; a < c; a++)
            for (int i = z[2 * a]; i < z[2 * a + 1]; i++) Hk[i] = Hk[i] / d;
        for (int a = 0; a < c; a++)                                    // H_ij -= L_ki L_kj, j <= i < k
            for (int i = z[2 * a]; i < z[2 * a + 1]; i++) {
                double x = Hk[i], *Hi = H + size_t(i) * n;
                for (int b = 0; b <= a; b++) {
                    int e = std::min(z[2 * b + 1], i + 1);
                    for (int j = z[2 * b]; j < e; j++) Hi[j] -= x * Hk[j];
                }
            }
    }
    return true;
}

// x with L^T L x = b from cholesky's factor, over b
inline void cholesky_solve_factored(const double *L, int n, const int *runs, const int *count, double *b) {
    for (int k = n - 1; k >= 0; k--) {                                 // L^T y = b
        const double *Lk = L + size_t(k) * n;
        const int *z = runs + 2 * size_t(k) * n;
        double y = b[k] / Lk[k];
        b[k] = y;
        for (int a = 0; a < count[k]; a++)
            for (int j = z[2 * a]; j < z[2 * a + 1]; j++) b[j] -= Lk[j] * y;
    }
    for (int k = 0; k < n; k++) {                                      // L x = y
        const double *Lk = L + size_t(k) * n;
        const int *z = runs + 2 * size_t(k) * n;
        double t = b[k];
        for (int a = 0; a < count[k]; a++)
            for (int j = z[2 * a]; j < z[2 * a + 1]; j++) t -= Lk[j] * b[j];
        b[k] = t / Lk[k];
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
        for (int64_t s = 0; s < nnz[i] - 1; s++) yi += Mi[s] * x[c[s]], y[c[s]] += Mi[s] * xi;
        y[i] = yi;
    }
}

// fn(i, e, nc, cols) for each group of rows [i, e) on the same nc columns cols (their entries nc apart in r.val)
template <class Fn> inline void for_each_group(const Rows &r, Fn &&fn) {
    for (size_t g = 0; g + 1 < r.group.size(); g++) {
        int i = r.group[g];
        fn(i, r.group[g + 1], r.start[size_t(i) + 1] - r.start[size_t(i)], r.cols.data() + r.start[size_t(i)]);
    }
}

// y = J x over the rows' nonzero columns, a group's rows four at a time
inline void rows_times(const Rows &r, const double *x, double *y) {
    const double *val = r.val.data();
    const int *start = r.start.data();
    for_each_group(r, [&](int i, int e, int nc, const int *cols) {
        for (; i + 4 <= e; i += 4) {
            const double *v = val + start[i];
            double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
            for (int k = 0; k < nc; k++) {
                double xk = x[cols[k]];
                s0 += v[k] * xk, s1 += v[nc + k] * xk, s2 += v[2 * nc + k] * xk, s3 += v[3 * nc + k] * xk;
            }
            y[i] = s0, y[i + 1] = s1, y[i + 2] = s2, y[i + 3] = s3;
        }
        for (; i < e; i++) {
            const double *v = val + start[i];
            double s = 0.0;
            for (int k = 0; k < nc; k++) s += v[k] * x[cols[k]];
            y[i] = s;
        }
    });
}

// y = J^T f (nv) over the rows' nonzero columns: y_j += J_ij f_i, the rows ascending (a group's four at a time, column
// by column)
inline void rows_transpose_times(const Rows &r, const double *f, double *y) {
    for (int j = 0; j < r.nv; j++) y[j] = 0.0;
    const double *val = r.val.data();
    const int *start = r.start.data();
    for_each_group(r, [&](int i, int e, int nc, const int *cols) {
        for (; i + 4 <= e; i += 4) {
            const double *v = val + start[i], f0 = f[i], f1 = f[i + 1], f2 = f[i + 2], f3 = f[i + 3];
            for (int k = 0; k < nc; k++) {
                double t = y[cols[k]];
                t += v[k] * f0, t += v[nc + k] * f1, t += v[2 * nc + k] * f2, t += v[3 * nc + k] * f3;
                y[cols[k]] = t;
            }
        }
        for (; i < e; i++) {
            const double *v = val + start[i], fi = f[i];
            for (int k = 0; k < nc; k++) y[cols[k]] += v[k] * fi;
        }
    });
}

inline double norm(const double *x, int n) { return std::sqrt(dot(x, x, n)); }

// quat * (0, axis) (MuJoCo's mju_mulQuatAxis)
inline void quat_axis(const double *quat, const double *axis, double *out) {
    const double a[4] = {0.0, axis[0], axis[1], axis[2]};
    quat_mul(quat, a, out);
}

inline void negate(const double *quat, double *out) {
    out[0] = quat[0], out[1] = -quat[1], out[2] = -quat[2], out[3] = -quat[3];
}

// ---------------------------------------------------------------- kinematics the rows read

// the last dof of body b's chain (its link's last dof: the chain is it and its ancestors), -1 for the world or a body
// welded to it
inline int64_t chain_end(const Model &m, int64_t b) {
    int64_t link = b >= 0 ? m.body_linkid[b] : -1;
    return link < 0 ? -1 : m.link_dofadr[link] + m.link_dofnum[link] - 1;
}

// (nlink + 1, 6) each link's spatial acceleration with qdd = 0 and no gravity: the sum of cdof_dot qd over its dofs
// (the last row: the world, zero), from a Data after com_vel
inline void bias_accelerations(const Model &m, const Data<double> &d, const double *qd, double *acc) {
    double *world = acc + 6 * size_t(m.nlink);
    for (int k = 0; k < 6; k++) world[k] = 0.0;
    for (int i = 0; i < m.nlink; i++) {
        int64_t p = m.link_parentid[i];
        const double *ap = p < 0 ? world : acc + 6 * p;
        double inc[6];
        for (int k = 0; k < 6; k++) inc[k] = 0.0;
        for (int64_t j = m.link_dofadr[i]; j < m.link_dofadr[i] + m.link_dofnum[i]; j++)
            for (int k = 0; k < 6; k++) inc[k] = inc[k] + d.cdof_dot[6 * j + k] * qd[j];
        for (int k = 0; k < 6; k++) acc[6 * i + k] = ap[k] + inc[k];
    }
}

// (Jdot qd of the point (3), Jrdot qd (3)) of a world point moving with body b: a_lin + a_ang x r + w x (v + w x r),
// r = point - centre, and the body's angular a_ang
inline void point_bias_acceleration(const Model &m, const Data<double> &d, const double *acc, int64_t b,
                                    const double *point, double *jt, double *jr) {
    int64_t link = b >= 0 ? m.body_linkid[b] : -1;
    if (link < 0) {
        for (int a = 0; a < 3; a++) jt[a] = jr[a] = 0.0;
        return;
    }
    const double *vel = &d.cvel[6 * size_t(link)], *a = acc + 6 * link;
    const double *center = &d.xpos[3 * size_t(m.link_centerid[link])];
    double r[3] = {point[0] - center[0], point[1] - center[1], point[2] - center[2]}, ar[3], wr[3], vw[3], wvw[3];
    cross(a, r, ar);
    cross(vel, r, wr);
    for (int k = 0; k < 3; k++) vw[k] = vel[3 + k] + wr[k];
    cross(vel, vw, wvw);
    for (int k = 0; k < 3; k++) jt[k] = a[3 + k] + ar[k] + wvw[k], jr[k] = a[k];
}

// ---------------------------------------------------------------- the rows

// the rows' buffers for up to n rows
inline void reserve_rows(Rows &r, int n) {
    size_t N = size_t(n);
    if (r.start.size() > N) return;
    for (auto *x : {&r.pos, &r.margin, &r.frictionloss, &r.diagA, &r.R, &r.D, &r.K, &r.B, &r.imp, &r.impP, &r.vel, &r.aref})
        x->resize(N);
    r.type.resize(N), r.id.resize(N), r.start.resize(N + 1), r.cols.resize(N * size_t(r.nv));
    r.J.resize(N * size_t(r.nv)), r.val.resize(N * size_t(r.nv));
}

// the next n rows of J, zeroed for a block to write (a block that writes all its given columns, which add reads alone,
// needs no zeros when J is not returned)
inline double *next_rows(Rows &r, int n, bool given = false) {
    double *J = r.J.data() + size_t(r.nefc) * r.nv;
    if (r.dense || !given) std::fill(J, J + size_t(n) * r.nv, 0.0);
    return J;
}

// the block of n rows written at next_rows, appended (MuJoCo's mj_addConstraint): pos, margin, diagA per row; a block
// whose Jacobian is all zero is dropped, except a contact's. The rows' nonzero columns are found, or given (ncols
// ascending columns outside which the rows are zero). Returns whether it was added.
inline bool add(Rows &r, int n, const double *pos, const double *margin, double frictionloss, int kind, int64_t id,
                const double *diagA, const int *given = nullptr, int ncols = 0) {
    int nv = r.nv;
    const double *J = r.J.data() + size_t(r.nefc) * nv;
    int *cols = r.cols.data(), at = r.start[size_t(r.nefc)], first = at;
    for (int i = 0; i < n; i++) {
        if (given)
            for (int k = 0; k < ncols; k++) cols[at++] = given[k];
        else
            for (int j = 0; j < nv; j++)
                if (J[size_t(i) * nv + j] != 0.0) cols[at++] = j;
        r.start[size_t(r.nefc + i) + 1] = at;
    }
    if (given && kind < CONTACT_FRICTIONLESS) {                        // an all-zero block is still dropped
        bool zero = true;
        for (int i = 0; i < n && zero; i++)
            for (int k = 0; k < ncols && zero; k++) zero = J[size_t(i) * nv + given[k]] == 0.0;
        if (zero) at = first;
    }
    if (kind < CONTACT_FRICTIONLESS && at == first) return false;
    for (int i = 0; i < n; i++) {                                      // a new group unless on the previous row's columns
        size_t k = size_t(r.nefc + i);
        int a = r.start[k], e = r.start[k + 1], p = k > 0 ? r.start[k - 1] : 0;
        bool same = k > 0 && e - a == a - p && (e == a || cols[e - 1] == cols[a - 1]);
        for (int u = a; u < e - 1 && same && !(given && i > 0); u++) same = cols[u] == cols[p + u - a];
        if (!same) r.group.push_back(int(k));
    }
    for (int i = 0; i < n; i++) {
        size_t k = size_t(r.nefc + i);
        for (int a = r.start[k]; a < r.start[k + 1]; a++) r.val[size_t(a)] = J[size_t(i) * nv + size_t(cols[a])];
        r.pos[k] = pos[i], r.margin[k] = margin[i], r.frictionloss[k] = frictionloss, r.type[k] = kind, r.id[k] = id;
        r.diagA[k] = diagA[i];
    }
    r.nefc += n;
    return true;
}

// an upper bound of the state's rows (every active equality, every friction loss, both sides of every limit, every
// contact's rows)
inline int row_bound(const Model &m, const bool *eq_active, const Contacts &con) {
    int n = 0;
    if (m.opt_equality)
        for (int e = 0; e < m.neq; e++)
            if (eq_active ? eq_active[e] : m.eq_active0[e] != 0) n += m.eq_type[e] == EQ_CONNECT ? 3 : m.eq_type[e] == EQ_WELD ? 6 : 1;
    if (m.opt_frictionloss)
        for (int i = 0; i < m.nv; i++) n += m.dof_frictionloss[i] != 0.0;
    if (m.opt_limit)
        for (int j = 0; j < m.njnt; j++) n += m.jnt_limited[j] ? (m.jnt_type[j] == JNT_BALL ? 1 : 2) : 0;
    for (int64_t c = 0; c < con.n; c++) {
        int64_t dim = con.dim(c);
        n += int(dim == 1 ? 1 : m.opt_elliptic ? dim : 2 * (dim - 1));
    }
    return n;
}

// connect (3 rows), weld (6) and joint (1) equalities in model order (mj_instantiateEquality), with the connect and weld
// blocks' Jdot qd for the correction of aref (mj_Jdotv)
inline void equality_rows(const Model &m, ConstraintWork &w, const double *q, const bool *eq_active) {
    Rows &r = w.r;
    const Data<double> &d = w.stages ? *w.stages : w.d;
    int nv = m.nv;
    const double *bw = m.body_invweight0, *dw = m.dof_invweight0;
    auto inv = [&](int64_t b, int k) { return b >= 0 ? bw[2 * b + k] : 0.0; };
    for (int e = 0; e < m.neq; e++) {
        if (!(eq_active ? eq_active[e] : m.eq_active0[e] != 0)) continue;
        int64_t kind = m.eq_type[e], b1 = m.eq_obj1id[e], b2 = m.eq_obj2id[e];
        const double *data = m.eq_data + 11 * e;
        if (kind == EQ_CONNECT || kind == EQ_WELD) {
            static const double zero[3] = {0, 0, 0}, eye[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
            // the bodies' frames in MuJoCo's arithmetic (body_poses): a weld's error cancels in the last digits of its anchors
            const double *xpos = w.col.xpos.data(), *xmat = w.col.xmat.data();
            const double *p1 = b1 >= 0 ? xpos + 3 * b1 : zero, *R1 = b1 >= 0 ? xmat + 9 * b1 : eye;
            const double *p2 = b2 >= 0 ? xpos + 3 * b2 : zero, *R2 = b2 >= 0 ? xmat + 9 * b2 : eye;
            const double *a1 = kind == EQ_CONNECT ? data : data + 3, *a2 = kind == EQ_CONNECT ? data + 3 : data;
            double pos1[3], pos2[3];
            mat3_times(R1, a1, pos1);
            mat3_times(R2, a2, pos2);
            for (int a = 0; a < 3; a++) pos1[a] = pos1[a] + p1[a], pos2[a] = pos2[a] + p2[a];
            double *J1 = w.J1.data(), *J2 = w.J2.data(), *Jd = w.Jd.data();
            std::fill(J1, J1 + 6 * nv, 0.0);
            std::fill(J2, J2 + 6 * nv, 0.0);
            double r1[3] = {0, 0, 0}, r2[3] = {0, 0, 0};
            point_jacobians(m, d, world_offset(m, d, b1, pos1, r1), r1, J1);
            point_jacobians(m, d, world_offset(m, d, b2, pos2, r2), r2, J2);
            for (int k = 0; k < 6 * nv; k++) Jd[k] = J1[k] - J2[k];    // body 1 minus body 2: the opposite of a contact
            double jt1[3], jr1[3], jt2[3], jr2[3];
            point_bias_acceleration(m, d, w.acc.data(), b1, pos1, jt1, jr1);
            point_bias_acceleration(m, d, w.acc.data(), b2, pos2, jt2, jr2);
            double cpos[6], zeros[6] = {0, 0, 0, 0, 0, 0}, dA[6];
            for (int a = 0; a < 3; a++) cpos[a] = pos1[a] - pos2[a];
            if (kind == EQ_CONNECT) {
                double *J = next_rows(r, 3);
                std::copy(Jd, Jd + 3 * nv, J);
                for (int a = 0; a < 3; a++) dA[a] = inv(b1, 0) + inv(b2, 0);
                if (add(r, 3, cpos, zeros, 0.0, EQUALITY, e, dA)) {
                    r.jdot_first.push_back(r.nefc - 3), r.jdot_n.push_back(3);
                    for (int a = 0; a < 6; a++) r.jdot.push_back(a < 3 ? jt1[a] - jt2[a] : 0.0);
                }
                continue;
            }
            double ts = data[10];
            const double identity[4] = {1, 0, 0, 0};
            const double *qb1 = b1 >= 0 ? &w.col.xquat[4 * b1] : identity, *qb2 = b2 >= 0 ? &w.col.xquat[4 * b2] : identity;
            double quat[4], neg[4], err[4];
            quat_mul(qb1, data + 6, quat);                             // q1 relpose
            negate(qb2, neg);
            quat_mul(neg, quat, err);
            double *J = next_rows(r, 6);
            std::copy(Jd, Jd + 3 * nv, J);
            for (int j = 0; j < nv; j++) {
                double axis[3] = {Jd[3 * nv + j], Jd[4 * nv + j], Jd[5 * nv + j]}, t[4], u[4];
                quat_axis(neg, axis, t);
                quat_mul(t, quat, u);
                for (int a = 0; a < 3; a++) J[(3 + a) * nv + j] = 0.5 * u[1 + a] * ts;
            }
            for (int a = 0; a < 3; a++) cpos[3 + a] = err[1 + a] * ts;
            for (int a = 0; a < 6; a++) dA[a] = a < 3 ? inv(b1, 0) + inv(b2, 0) : inv(b1, 1) + inv(b2, 1);
            if (add(r, 6, cpos, zeros, 0.0, EQUALITY, e, dA)) {
                double w1[3] = {0, 0, 0}, w2[3] = {0, 0, 0}, dw_[3];
                if (b1 >= 0 && m.body_linkid[b1] >= 0)
                    for (int a = 0; a < 3; a++) w1[a] = d.cvel[6 * size_t(m.body_linkid[b1]) + a];
                if (b2 >= 0 && m.body_linkid[b2] >= 0)
                    for (int a = 0; a < 3; a++) w2[a] = d.cvel[6 * size_t(m.body_linkid[b2]) + a];
                for (int a = 0; a < 3; a++) dw_[a] = w1[a] - w2[a];
                // world angular velocity: qdot = 1/2 (0, w) q
                double qdot1[4], qdot2[4], nq2[4], t[4], t1[4], t2[4], t3[4], u[4], jr[3];
                double w1q[4] = {0.0, w1[0], w1[1], w1[2]}, w2q[4] = {0.0, w2[0], w2[1], w2[2]};
                quat_mul(w1q, qb1, qdot1);
                quat_mul(w2q, qb2, qdot2);
                for (int a = 0; a < 4; a++) qdot1[a] = 0.5 * qdot1[a], qdot2[a] = 0.5 * qdot2[a];
                negate(qdot2, nq2);
                quat_axis(nq2, dw_, t);
                quat_mul(t, quat, t1);
                for (int a = 0; a < 3; a++) jr[a] = jr1[a] - jr2[a];
                quat_axis(neg, jr, t);
                quat_mul(t, quat, t2);
                quat_axis(neg, dw_, t);
                quat_mul(qdot1, data + 6, u);
                quat_mul(t, u, t3);
                r.jdot_first.push_back(r.nefc - 6), r.jdot_n.push_back(6);
                for (int a = 0; a < 3; a++) r.jdot.push_back(jt1[a] - jt2[a]);
                for (int a = 0; a < 3; a++) r.jdot.push_back(0.5 * (t1[1 + a] + t2[1 + a] + t3[1 + a]) * ts);
            }
            continue;
        }
        // joint: q1 - ref1 - data[0] - poly(q2 - ref2), J = e1 - poly'(q2 - ref2) e2
        int64_t j1 = b1, j2 = b2, a1 = m.jnt_qposadr[j1], v1 = m.jnt_dofadr[j1];
        double *J = next_rows(r, 1);
        J[v1] = 1.0;
        double cpos = q[a1] - m.qpos0[a1] - data[0], dA = dw[v1], zero = 0.0;
        if (j2 >= 0) {
            int64_t a2 = m.jnt_qposadr[j2], v2 = m.jnt_dofadr[j2];
            double dif = q[a2] - m.qpos0[a2];
            cpos = q[a1] - m.qpos0[a1] - data[0] - (data[1] * dif + data[2] * dif * dif + data[3] * dif * dif * dif +
                                                    data[4] * dif * dif * dif * dif);
            double deriv = data[1] + 2 * data[2] * dif + 3 * data[3] * dif * dif + 4 * data[4] * dif * dif * dif;
            J[v2] += -deriv;
            dA += dw[v2];
        }
        add(r, 1, &cpos, &zero, 0.0, EQUALITY, e, &dA);
    }
}

// (rotation angle [rad], unit axis) of a ball joint's quaternion, normalized first (mju_quat2Vel, mju_normalize3)
inline double ball_angle_axis(const double *q, double *axis) {
    double quat[4];
    quat_normalize(q, quat);
    double ax[3] = {quat[1], quat[2], quat[3]};
    double s = std::sqrt(dot(ax, ax, 3));
    if (s < MINVAL) ax[0] = 1.0, ax[1] = ax[2] = 0.0;
    else for (int a = 0; a < 3; a++) ax[a] = ax[a] / s;
    double speed = 2 * std::atan2(s, quat[0]);
    if (speed > M_PI) speed -= 2 * M_PI;
    double v[3] = {ax[0] * speed, ax[1] * speed, ax[2] * speed};
    double value = std::sqrt(dot(v, v, 3));
    if (value < MINVAL) axis[0] = 1.0, axis[1] = axis[2] = 0.0;
    else for (int a = 0; a < 3; a++) axis[a] = v[a] / value;
    return value;
}

// (solref, solreffriction, solimp) of row i's constraint, with MuJoCo's safety rules applied
inline void solver_parameters(const Model &m, const Rows &r, int i, double *ref, double *reffric, double *imp) {
    int64_t kind = r.type[size_t(i)], ident = r.id[size_t(i)];
    const double *rf, *im, *rff = nullptr;
    if (kind == EQUALITY) rf = m.eq_solref + 2 * ident, im = m.eq_solimp + 5 * ident;
    else if (kind == LIMIT_JOINT) rf = m.jnt_solref + 2 * ident, im = m.jnt_solimp + 5 * ident;
    else if (kind == FRICTION_DOF) rf = m.dof_solref + 2 * ident, im = m.dof_solimp + 5 * ident;
    else rf = r.con.solref(ident), rff = r.con.solreffriction(ident), im = r.con.solimp(ident);
    for (int a = 0; a < 2; a++) ref[a] = rf[a], reffric[a] = rff ? rff[a] : 0.0;
    for (int a = 0; a < 5; a++) imp[a] = im[a];
    if ((ref[0] > 0) != (ref[1] > 0)) ref[0] = 0.02, ref[1] = 1.0;    // mixed standard and direct: MuJoCo's default
    if (m.opt_refsafe && ref[0] > 0) ref[0] = std::max(ref[0], 2 * m.opt_timestep);   // at least two steps
    if ((reffric[0] > 0) != (reffric[1] > 0)) reffric[0] = reffric[1] = 0.0;
    if (m.opt_refsafe && reffric[0] > 0) reffric[0] = std::max(reffric[0], 2 * m.opt_timestep);
    for (int a : {0, 1, 3}) imp[a] = std::min(MAXIMP, std::max(MINIMP, imp[a]));
    imp[2] = std::max(0.0, imp[2]), imp[4] = std::max(1.0, imp[4]);
}

// the rows of the constraint starting at row i that share one impedance, and its position (MuJoCo's getposdim)
inline int block(const Model &m, const Rows &r, int i, double &pos) {
    int64_t kind = r.type[size_t(i)];
    pos = r.pos[size_t(i)];
    if (kind == CONTACT_ELLIPTIC) return int(r.con.dim(r.id[size_t(i)]));
    if (kind == CONTACT_PYRAMIDAL) return 2 * (int(r.con.dim(r.id[size_t(i)])) - 1);
    if (kind == EQUALITY && m.eq_type[r.id[size_t(i)]] != EQ_JOINT) {
        int n = m.eq_type[r.id[size_t(i)]] == EQ_WELD ? 6 : 3;
        pos = norm(&r.pos[size_t(i)], n);
        return n;
    }
    return 1;
}

// x^b as the NumPy text takes it: x for b = 1, x x for b = 2, else pow
inline double pw(double x, double b) { return b == 1 ? x : b == 2 ? x * x : std::pow(x, b); }

// (imp, d imp / d pos) of solimp's sigmoid at the violation pos - margin (MuJoCo's getimpedance)
inline double impedance(const double *solimp, double pos, double margin, double &impP) {
    double d0 = solimp[0], dwidth = solimp[1], width = solimp[2], mid = solimp[3], power = solimp[4];
    impP = 0.0;
    if (d0 == dwidth || width <= MINVAL) return 0.5 * (d0 + dwidth);
    double x = (pos - margin) / width, sign = 1.0;
    if (x < 0) x = -x, sign = -1.0;
    if (x >= 1 || x <= 0) return x >= 1 ? dwidth : d0;
    double y, yP;
    if (power == 1) {
        y = x, yP = 1.0;
    } else if (x <= mid) {
        double a = 1 / pw(mid, power - 1);
        y = a * pw(x, power), yP = power * a * pw(x, power - 1);
    } else {
        double b = 1 / pw(1 - mid, power - 1);
        y = 1 - b * pw(1 - x, power), yP = power * b * pw(1 - x, power - 1);
    }
    impP = yP * sign * (dwidth - d0) / width;
    return d0 + y * (dwidth - d0);
}

// R, D, K, B, imp, impP of every row and MuJoCo's adjusted diagA; the regularised cones' mu of the contacts (_impedance)
inline void impedance_all(const Model &m, Rows &r) {
    int n = r.nefc;
    for (int i = 0; i < n;) {
        double ref[2], reffric[2], solimp[5], pos, impP;
        solver_parameters(m, r, i, ref, reffric, solimp);
        int dim = block(m, r, i, pos);
        double imp = impedance(solimp, pos, r.margin[size_t(i)], impP);
        for (int j = i; j < i + dim; j++) {
            size_t k = size_t(j);
            r.R[k] = std::max(MINVAL, (1 - imp) * r.diagA[k] / imp);
            bool elliptic_friction = r.type[k] == CONTACT_ELLIPTIC && j > i;
            const double *use = elliptic_friction && (reffric[0] != 0 || reffric[1] != 0) ? reffric : ref;
            if (r.type[k] == FRICTION_DOF || r.type[k] == FRICTION_TENDON || elliptic_friction)
                r.K[k] = 0.0;                                          // friction: no spring
            else if (use[0] > 0)                                       // standard: K = 1 / (dwidth tc dampratio)^2
                r.K[k] = 1 / std::max(MINVAL, solimp[1] * solimp[1] * use[0] * use[0] * use[1] * use[1]);
            else                                                       // direct: K = -solref[0] / dwidth^2
                r.K[k] = -use[0] / std::max(MINVAL, solimp[1] * solimp[1]);
            r.B[k] = use[1] > 0 ? 2 / std::max(MINVAL, solimp[1] * use[0]) : -use[1] / std::max(MINVAL, solimp[1]);
            r.imp[k] = imp, r.impP[k] = impP;
        }
        i += dim;
    }
    // frictional contacts: R of the friction directions from impratio, the regularised cone's mu
    for (int64_t c = 0; c < r.con.n; c++) {
        int64_t first = r.contact_row[size_t(c)];
        if (first < 0 || r.type[size_t(first)] == CONTACT_FRICTIONLESS) continue;
        int dim = int(r.con.dim(c));
        const double *friction = r.con.friction(c);
        double *R = r.R.data() + first;
        double R1 = R[0] / std::max(MINVAL, m.opt_impratio);
        double mu = friction[0] * std::sqrt(R1 / R[0]);
        r.contact_mu[size_t(c)] = mu;
        if (r.type[size_t(first)] == CONTACT_ELLIPTIC) {
            R[1] = R1;
            for (int j = 1; j < dim - 1; j++) R[j + 1] = R1 * friction[0] * friction[0] / (friction[j] * friction[j]);
        } else {
            double Rp = 2 * mu * mu * R[0];
            for (int j = 0; j < 2 * (dim - 1); j++) R[j] = Rp;
        }
    }
    for (int i = 0; i < n; i++) {
        size_t k = size_t(i);
        r.D[k] = 1 / r.R[k];
        r.diagA[k] = r.R[k] * r.imp[k] / (1 - r.imp[k]);
    }
}

// whether every row's columns lie on the chain of its last column (it and its ancestors): then J^T D J has M's
// pattern, and so has H's factor (no fill-in: the tree's runs serve H too)
inline bool chains(const Model &m, const Rows &r) {
    for (size_t g = 0; g + 1 < r.group.size(); g++) {
        int i = r.group[g], a = r.start[size_t(i)], e = r.start[size_t(i) + 1];
        if (e - a < 2) continue;
        int64_t j = r.cols[size_t(e - 1)];
        for (int k = e - 2; k >= a; k--) {                             // the columns descending, j walking up the chain
            while (j > r.cols[size_t(k)]) j = m.dof_parentid[j];
            if (j != r.cols[size_t(k)]) return false;
        }
    }
    return true;
}

// the constraint rows of the state (q, qd) whose velocity stages w.d holds (or *w.stages), with the contacts con, in
// MuJoCo's order, with their impedance, regulariser and reference acceleration (constraint.rows); J dense too when
// dense (else its compressed rows alone); the caller checks the model has no constraint physai does not model
inline void rows(const Model &m, ConstraintWork &w, const double *q, const double *qd, const Contacts &con,
                 const bool *eq_active, bool dense = true) {
    Rows &r = w.r;
    const Data<double> &d = w.stages ? *w.stages : w.d;
    int nv = m.nv;
    const double *bw = m.body_invweight0, *dw = m.dof_invweight0;
    r.nefc = 0;
    r.dense = dense;
    r.con = con;
    r.con.n = m.opt_contact ? con.n : 0;
    r.jdot_first.clear(), r.jdot_n.clear(), r.jdot.clear();
    reserve_rows(r, row_bound(m, eq_active, r.con));
    r.start[0] = 0;
    r.group.clear();
    // equalities: connect, weld, joint
    if (m.opt_equality && m.neq) {
        bias_accelerations(m, d, qd, w.acc.data());
        bool anchored = false;                                         // a connect or a weld
        for (int e = 0; e < m.neq; e++) anchored |= m.eq_type[e] != EQ_JOINT;
        if (anchored) body_poses(m, q, w.col.xpos.data(), w.col.xquat.data(), w.col.xmat.data());
        equality_rows(m, w, q, eq_active);
    }
    r.ne = r.nefc;
    // dry friction of each dof: J = e_i, force within +-frictionloss
    const double zero = 0.0;
    if (m.opt_frictionloss)
        for (int i = 0; i < nv; i++) {
            if (m.dof_frictionloss[i] == 0.0) continue;
            next_rows(r, 1, true)[i] = 1.0;
            add(r, 1, &zero, &zero, m.dof_frictionloss[i], FRICTION_DOF, i, dw + i, &i, 1);
        }
    r.nf = r.nefc - r.ne;
    // joint limits: dist = side (range - q) for hinge and slide, max(range) - angle for a ball, active below the margin
    if (m.opt_limit)
        for (int j = 0; j < m.njnt; j++) {
            if (!m.jnt_limited[j]) continue;
            int64_t a = m.jnt_qposadr[j], v = m.jnt_dofadr[j], t = m.jnt_type[j];
            double margin = m.jnt_margin[j];
            const double *range = m.jnt_range + 2 * j;
            if (t == JNT_HINGE || t == JNT_SLIDE) {
                for (int side = -1; side <= 1; side += 2) {
                    double dist = side * (range[(side + 1) / 2] - q[a]);
                    if (dist < margin) {
                        next_rows(r, 1, true)[v] = -side;
                        const int col = int(v);
                        add(r, 1, &dist, &margin, 0.0, LIMIT_JOINT, j, dw + v, &col, 1);
                    }
                }
            } else if (t == JNT_BALL) {
                double axis[3], value = ball_angle_axis(q + a, axis);
                double dist = (range[1] > range[0] ? range[1] : range[0]) - value;
                if (dist < margin) {
                    double *J = next_rows(r, 1, true);
                    for (int k = 0; k < 3; k++) J[v + k] = -axis[k];
                    const int cols[3] = {int(v), int(v) + 1, int(v) + 2};
                    add(r, 1, &dist, &margin, 0.0, LIMIT_JOINT, j, dw + v, cols, 3);
                }
            }
        }
    r.nl = r.nefc - r.ne - r.nf;
    // contacts: the frame applied to the difference of the two bodies' point Jacobians (body 2 minus body 1, skipping
    // the dofs that move both)
    int64_t nc = r.con.n;
    r.contact_row.assign(size_t(nc), -1), r.contact_mu.assign(size_t(nc), 0.0);
    char *mark = w.mark.data();
    for (int64_t c = 0; c < nc; c++) {
        int64_t b1 = con.body1(c), b2 = con.body2(c), dim = con.dim(c);
        const double *p = con.pos(c), *frame = con.frame(c), *mu = con.friction(c);
        int64_t e1 = chain_end(m, b1), e2 = chain_end(m, b2);
        for (int64_t j = e1; j >= 0; j = m.dof_parentid[j]) mark[j] |= 1;
        for (int64_t j = e2; j >= 0; j = m.dof_parentid[j]) mark[j] |= 2;
        bool moves = false;                                            // a dof moves one body but not the other
        for (int64_t j = e1; j >= 0 && !moves; j = m.dof_parentid[j]) moves = mark[j] != 3;
        for (int64_t j = e2; j >= 0 && !moves; j = m.dof_parentid[j]) moves = mark[j] != 3;
        if (moves) {
            // the columns of the dofs that move one body only, ascending; Jd = J2 - J1 there ((Jp; Jr) per column)
            int *cols = w.cols.data(), n = 0;
            for (int64_t e : {e1, e2})
                for (int64_t j = e; j >= 0; j = m.dof_parentid[j])
                    if (mark[j] != 3) cols[n++] = int(j);
            std::sort(cols, cols + n);
            double *Jd = w.Jd.data(), r1[3] = {0, 0, 0}, r2[3] = {0, 0, 0};
            world_offset(m, d, b1, p, r1), world_offset(m, d, b2, p, r2);
            for (int k = 0; k < n; k++) {
                int j = cols[k];
                double *col = Jd + 6 * k;
                jacobian_column(d, j, mark[j] == 2 ? r2 : r1, col);   // point_jacobians' column j
                if (mark[j] == 1)                                      // J2 - J1 with J2 = 0 there
                    for (int a = 0; a < 6; a++) col[a] = 0.0 - col[a];
            }
            double tran = 0.0, rot = 0.0;
            for (int64_t b : {b1, b2})
                if (b >= 0) tran += bw[2 * b], rot += bw[2 * b + 1];
            double dist = con.dist(c), margin = con.includemargin(c);
            r.contact_row[size_t(c)] = r.nefc;
            // jac (dim, n): the frame's rows on the translation (1 or 3), then on the rotation (dim 4: 1, dim 6: 3)
            double *jac = w.J1.data();
            int nt = dim > 1 ? 3 : 1, nr = dim > 3 ? int(dim) - 3 : 0;
            for (int k = 0; k < nt + nr; k++) {
                const double *f = frame + 3 * (k < nt ? k : k - nt);
                int o = k < nt ? 0 : 3;
                for (int i = 0; i < n; i++) jac[k * n + i] = f[0] * Jd[6 * i + o] + f[1] * Jd[6 * i + o + 1] + f[2] * Jd[6 * i + o + 2];
            }
            if (dim == 1) {
                double *J = next_rows(r, 1, true);
                for (int i = 0; i < n; i++) J[cols[i]] = jac[i];
                add(r, 1, &dist, &margin, 0.0, CONTACT_FRICTIONLESS, c, &tran, cols, n);
            } else if (!m.opt_elliptic) {
                for (int k = 1; k < dim; k++) {
                    double *J = next_rows(r, 2, true), dists[2] = {dist, dist}, margins[2] = {margin, margin};
                    for (int i = 0; i < n; i++) {
                        J[cols[i]] = jac[i] + mu[k - 1] * jac[k * n + i];
                        J[nv + cols[i]] = jac[i] - mu[k - 1] * jac[k * n + i];
                    }
                    double dA = tran + mu[k - 1] * mu[k - 1] * (k - 1 < 2 ? tran : rot), dAs[2] = {dA, dA};
                    add(r, 2, dists, margins, 0.0, CONTACT_PYRAMIDAL, c, dAs, cols, n);
                }
            } else {
                double dists[6] = {dist, 0, 0, 0, 0, 0}, margins[6] = {margin, 0, 0, 0, 0, 0}, dA[6];
                for (int j = 0; j < dim; j++) dA[j] = j < 3 ? tran : rot;
                double *J = next_rows(r, int(dim), true);
                for (int k = 0; k < dim; k++)
                    for (int i = 0; i < n; i++) J[k * nv + cols[i]] = jac[k * n + i];
                add(r, int(dim), dists, margins, 0.0, CONTACT_ELLIPTIC, c, dA, cols, n);
            }
        }
        for (int64_t j = e1; j >= 0; j = m.dof_parentid[j]) mark[j] = 0;
        for (int64_t j = e2; j >= 0; j = m.dof_parentid[j]) mark[j] = 0;
    }
    r.group.push_back(r.nefc);
    r.tree = chains(m, r);
    impedance_all(m, r);
    rows_times(r, qd, r.vel.data());
    for (int i = 0; i < r.nefc; i++) {
        size_t k = size_t(i);
        r.aref[k] = -r.B[k] * r.vel[k] - r.K[k] * r.imp[k] * (r.pos[k] - r.margin[k]);
    }
    for (size_t b = 0; b < r.jdot_first.size(); b++)                   // connect and weld: aref -= Jdot qd
        for (int a = 0; a < r.jdot_n[b]; a++) r.aref[size_t(r.jdot_first[b] + a)] -= r.jdot[6 * b + size_t(a)];
}

// ---------------------------------------------------------------- the force of every row (mj_constraintUpdate)

// force (nefc) and state (nefc) of every row for jar = J qacc - aref, and the constraint cost s(jar) whose gradient in
// jar is -force; with cones, the Hessians of the contacts on their cone (update)
inline double update(const Rows &r, const double *jar, double *force, int *state, Cones *cones) {
    int n = r.nefc, ne = r.ne, nf = r.nf;
    const double *D = r.D.data(), *R = r.R.data();
    for (int i = 0; i < n; i++) force[i] = -D[i] * jar[i], state[i] = QUADRATIC;
    if (cones) cones->n = 0;
    double cost = 0.0, s = 0.0;
    // equality: quadratic
    for (int i = 0; i < ne; i++) s += D[i] * (jar[i] * jar[i]);
    cost += 0.5 * s;
    // friction loss: Huber, linear beyond +-R frictionloss
    s = 0.0;
    for (int i = ne; i < ne + nf; i++) {
        double fl = r.frictionloss[size_t(i)], Rf = R[i] * fl, x = jar[i];
        if (x <= -Rf) s += -0.5 * Rf * fl - fl * x, force[i] = fl, state[i] = LINEARNEG;
        else if (x >= Rf) s += -0.5 * Rf * fl + fl * x, force[i] = -fl, state[i] = LINEARPOS;
        else s += 0.5 * D[i] * x * x;
    }
    cost += s;
    // limits, frictionless and pyramidal contacts: one-sided
    for (int i = ne + nf; i < n;) {
        if (r.type[size_t(i)] != CONTACT_ELLIPTIC) {
            if (jar[i] >= 0) force[i] = 0.0, state[i] = SATISFIED;
            else cost += 0.5 * D[i] * jar[i] * jar[i];
            i++;
            continue;
        }
        // elliptic cone in the regularised dual space: U = (mu jar_0, friction_j jar_j)
        int64_t c = r.id[size_t(i)];
        int dim = int(r.con.dim(c));
        double mu = r.contact_mu[size_t(c)], U[6] = {};
        const double *friction = r.con.friction(c);
        U[0] = jar[i] * mu;
        for (int j = 1; j < dim; j++) U[j] = jar[i + j] * friction[j - 1];
        double N = U[0], T = std::sqrt(dot(U + 1, U + 1, dim - 1));
        if (N >= mu * T || (T <= 0 && N >= 0)) {                       // top zone: separating
            for (int j = i; j < i + dim; j++) force[j] = 0.0, state[j] = SATISFIED;
        } else if (mu * N + T <= 0 || (T <= 0 && N < 0)) {             // bottom zone: quadratic
            s = 0.0;
            for (int j = i; j < i + dim; j++) s += D[j] * (jar[j] * jar[j]);
            cost += 0.5 * s;
        } else {                                                       // middle zone: on the cone
            double Dm = D[i] / (mu * mu * (1 + mu * mu)), NmT = N - mu * T;
            cost += 0.5 * Dm * NmT * NmT;
            force[i] = -Dm * NmT * mu;
            for (int j = 1; j < dim; j++) force[i + j] = -force[i] / T * U[j] * friction[j - 1];
            for (int j = i; j < i + dim; j++) state[j] = CONE;
            if (cones) {
                int k = cones->n++;
                if (cones->first.size() < size_t(cones->n))
                    cones->first.resize(size_t(cones->n)), cones->dim.resize(size_t(cones->n)), cones->H.resize(36 * size_t(cones->n));
                cones->first[size_t(k)] = i, cones->dim[size_t(k)] = dim;
                double H[36], scale[6] = {mu, 0, 0, 0, 0, 0}, *out = &cones->H[36 * size_t(k)];
                for (int j = 1; j < dim; j++) scale[j] = friction[j - 1];
                double a = mu * N / std::pow(T, 3), b = mu * mu - mu * N / T;
                H[0] = 1.0;
                for (int j = 1; j < dim; j++) H[j] = H[j * dim] = -mu / T * U[j];
                for (int j = 1; j < dim; j++)
                    for (int l = 1; l < dim; l++) H[j * dim + l] = a * (U[j] * U[l]) + (j == l ? b : 0.0);
                for (int j = 0; j < dim; j++)
                    for (int l = 0; l < dim; l++) out[j * dim + l] = Dm * scale[j] * H[j * dim + l] * scale[l];
            }
        }
        i += dim;
    }
    return cost;
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

// H = M + J^T D J over the rows in their quadratic state, plus J_c^T H_c J_c of each contact on its cone, into w.LH's
// lower triangle, or w.LHt on the tree's pattern when the rows are chains (_hessian; H is symmetric by construction)
inline void hessian(const Model &m, ConstraintWork &w, const int *state, const Cones &cones) {
    const Rows &r = w.r;
    int nv = m.nv;
    const bool tree = r.tree;
    const int64_t *adr = m.M_rowadr, *nnz = m.M_rownnz, *col = m.M_colind;
    double *H = tree ? w.LHt.data() : w.LH.data();
    // entry (i, j), j <= i
    auto at = [&](int i, int j) -> double & { return tree ? H[adr[i] + nnz[j] - 1] : H[size_t(i) * nv + j]; };
    std::fill(H, H + (tree ? size_t(tree_nnz(m)) : size_t(nv) * nv), 0.0);
    double *G = w.G.data(), *g = w.g.data();
    for_each_group(r, [&](int i, int e, int nc, const int *cols) {
        // a group's rows i .. e - 1 (the same columns: a contact's): their sum in G (nc x nc, dense) first, then into H
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
        if (any)
            for (int a = 0; a < nc; a++) {
                const double *Ga = G + size_t(a) * nc;
                for (int b = 0; b <= a; b++) at(cols[a], cols[b]) += Ga[b];
            }
    });
    const double *M = w.Mt.data();                                     // + M (on its pattern: zero elsewhere)
    if (tree) {
        for (int64_t a = 0; a < tree_nnz(m); a++) H[a] = M[a] + H[a];
    } else {
        for (int k = 0; k < nv; k++)
            for (int64_t a = adr[k]; a < adr[k] + nnz[k]; a++) {
                double &h = H[size_t(k) * nv + size_t(col[a])];
                h = M[a] + h;
            }
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

// the factor of H (w.LH, or w.LHt when the rows are chains) carried to the current states from those it was made for
// (w.hstate): a rank-1 update for each row that entered its quadratic state, a downdate for each that left it (MuJoCo's
// HessianIncremental, mju_cholUpdate in the factor's order); false when a downdate would lose positive definiteness
// (the caller refactors). When the rows are chains, a row's x stays on the chain of its last column and L on the tree's
// pattern (no fill-in): the rows of L on the chain alone, over their ancestors, with x by depth (w.xt: the chain's dof at
// depth d is any of its rows' ancestor d); else every row of L from the last column down.
inline bool update_factor(const Model &m, ConstraintWork &w) {
    const Rows &r = w.r;
    const int nv = m.nv;
    double *x = w.x.data();
    char *touched = w.mark.data();                                     // the rows of L changed (mark is all zero here)
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
        double *L = w.LH.data();
        std::fill(x, x + top + 1, 0.0);
        for (int k = a; k < e; k++) x[r.cols[size_t(k)]] = r.val[size_t(k)] * sd;
        for (int k = top; k >= 0; k--) {                               // x x^T into the rows of L from the last
            if (x[k] == 0.0) continue;
            touched[k] = 1;
            double *Lk = L + size_t(k) * nv, Lkk = Lk[k];
            double t = Lkk * Lkk + (is ? x[k] * x[k] : -x[k] * x[k]);
            if (!(t >= MINVAL)) {
                std::fill(touched, touched + nv, 0);
                return false;
            }
            double rr = std::sqrt(t), c = rr / Lkk, cinv = 1 / c, sn = x[k] / Lkk;
            Lk[k] = rr;
            if (is)
                for (int j = 0; j < k; j++) Lk[j] = (Lk[j] + sn * x[j]) * cinv;
            else
                for (int j = 0; j < k; j++) Lk[j] = (Lk[j] - sn * x[j]) * cinv;
            for (int j = 0; j < k; j++) x[j] = c * x[j] - sn * Lk[j];
        }
    }
    for (int k = 0; k < nv && !r.tree; k++) {                          // the rows' nonzero columns, fill-in included
        if (!touched[k]) continue;
        touched[k] = 0;
        w.countH[size_t(k)] = find_runs(w.LH.data() + size_t(k) * nv, k, w.nzH.data() + 2 * size_t(k) * nv);
    }
    return true;
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
        if (changed <= std::max(1, m.nv / 2) && update_factor(m, w)) {
            std::copy(w.state.begin(), w.state.begin() + n, w.hstate.begin());
            return true;
        }
    }
    hessian(m, w, w.state.data(), w.cones);
    std::copy(w.state.begin(), w.state.begin() + n, w.hstate.begin());
    fresh = false;
    if (w.r.tree) return tree_cholesky(m, w.LHt.data(), w.LHinv.data());
    return cholesky(w.LH.data(), m.nv, w.nzH.data(), w.countH.data());
}

// M's factor on the tree's pattern (w.d.qL, w.d.qLinv) from M there (w.Mt); false on a non-positive pivot
inline bool factor_mass(const Model &m, ConstraintWork &w) {
    std::copy(w.Mt.begin(), w.Mt.end(), w.d.qL.begin());
    return tree_cholesky(m, w.d.qL.data(), w.d.qLinv.data());
}

// the constrained accelerations: qacc minimising 1/2 |qacc - a0|_M^2 + s(J qacc - aref), a0 = M^-1 qfrc_smooth, by
// Newton's method (Hessian M + J^T D J, MuJoCo's line search), from the warm start when its cost is lower than a0's
// (constraint.solve, with MuJoCo's stopping rules); M (nv x nv, dense: crb's) the mass matrix, or null when w.Mt holds
// it on the tree's pattern and w.d.qL, w.d.qLinv its factor; w.qfrc_smooth the forces. SINGULAR when M or H is not
// positive definite.
inline int solve(const Model &m, ConstraintWork &w, const double *M, const double *warmstart, double tolerance,
                 int64_t iterations, Solution &sol) {
    const Rows &r = w.r;
    int nv = m.nv, n = r.nefc;
    for (auto *x : {&w.force, &w.jar, &w.Jv, &w.wforce, &w.wjar})
        if (x->size() < size_t(n)) x->resize(size_t(n));
    for (auto *x : {&w.state, &w.wstate, &w.hstate})
        if (x->size() < size_t(n)) x->resize(size_t(n));
    if (w.quad.size() < 3 * size_t(n)) w.quad.resize(3 * size_t(n));
    double *LM = w.d.qL.data(), *LMinv = w.d.qLinv.data();            // M's factor
    if (M) {                                                           // M on the tree's pattern, factored
        tree_pack(m, M, w.Mt.data());
        if (!factor_mass(m, w)) return SINGULAR;
    }
    std::copy(w.qfrc_smooth.begin(), w.qfrc_smooth.end(), w.qacc_smooth.begin());
    tree_solve(m, LM, LMinv, w.qacc_smooth.data());
    auto solve_H = [&](double *b) {                                    // b <- H^-1 b from H's factor
        if (r.tree) tree_solve(m, w.LHt.data(), w.LHinv.data(), b);
        else cholesky_solve_factored(w.LH.data(), nv, w.nzH.data(), w.countH.data(), b);
    };
    double scale = 1.0 / (m.meaninertia * std::max(1, nv));
    double *qacc = w.qacc.data();
    std::copy(w.qacc_smooth.begin(), w.qacc_smooth.end(), qacc);
    double cost = total_cost(m, w, qacc, w.Ma.data(), w.jar.data(), w.force.data(), w.state.data(), w.cones);
    if (warmstart) {
        double warm = total_cost(m, w, warmstart, w.tmp.data(), w.wjar.data(), w.wforce.data(), w.wstate.data(), w.wcones);
        if (warm < cost) {
            std::copy(warmstart, warmstart + nv, qacc);
            cost = warm;
            std::swap(w.force, w.wforce), std::swap(w.jar, w.wjar), std::swap(w.state, w.wstate), std::swap(w.cones, w.wcones);
            std::swap(w.Ma, w.tmp);
        }
    }
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
        rows_times(r, v, w.Jv.data());
        tree_times(m, w.Mt.data(), v, w.Mv.data());
        double vMa = 0.0, fv = 0.0, vMv = 0.0;
        for (int j = 0; j < nv; j++) {
            size_t k = size_t(j);
            vMa += v[j] * w.Ma[k], fv += w.qfrc_smooth[k] * v[j], vMv += v[j] * w.Mv[k];
        }
        line_quadratics(r, w.jar.data(), w.Jv.data(), w.quad.data());
        const Line line{r, w.jar.data(), w.Jv.data(), w.quad.data(), {vMa - fv, 0.5 * vMv}};
        double snorm = norm(v, nv), ls_improvement;
        double alpha = line_search(line, snorm, tolerance * m.opt_ls_tolerance * snorm / scale, m.opt_ls_iterations,
                                   ls_improvement, status);
        if (alpha == 0) break;                                         // no improvement along v: stop
        // the step, with M qacc and J qacc - aref carried along it (MuJoCo's Ma += alpha Mv, Jaref += alpha Jv)
        for (int j = 0; j < nv; j++) {
            size_t k = size_t(j);
            qacc[j] = qacc[j] + alpha * v[j], w.Ma[k] = w.Ma[k] + alpha * w.Mv[k];
        }
        for (int i = 0; i < n; i++) w.jar[size_t(i)] = w.jar[size_t(i)] + alpha * w.Jv[size_t(i)];
        cost_at(m, w, qacc, w.Ma.data(), w.jar.data(), w.force.data(), w.state.data(), w.cones);
        improvement = scale * ls_improvement;
        gradient(m, w, w.force.data());
        gnorm = scale * norm(grad, nv);
        if (!factor_hessian(m, w, fresh)) return SINGULAR;
        std::copy(grad, grad + nv, step);
        solve_H(step);
        double decrement = std::max(0.0, 0.5 * scale * dot(grad, step, nv));   // Newton's predicted improvement
        it++;
        done = (0 < improvement && improvement < tolerance) || gnorm < tolerance || decrement < tolerance;
    }
    // converged: stopped by a tolerance, or with no descent left (no search direction, or already optimal along it)
    done = done || status == LINE_NO_DIRECTION || status == LINE_OPTIMAL;
    sol.iterations = it, sol.improvement = improvement, sol.converged = done;
    return OK;
}

// ---------------------------------------------------------------- the inverse problem (mj_invConstraint)

// efc_force for given accelerations into force: each row's force at jar = J qacc - aref, without a solver
// (inverse_force)
inline void inverse_force(ConstraintWork &w, const double *qacc, double *force) {
    const Rows &r = w.r;
    if (w.jar.size() < size_t(r.nefc)) w.jar.resize(size_t(r.nefc)), w.state.resize(size_t(r.nefc));
    rows_times(r, qacc, w.jar.data());
    for (int i = 0; i < r.nefc; i++) w.jar[size_t(i)] = w.jar[size_t(i)] - r.aref[size_t(i)];
    update(r, w.jar.data(), force, w.state.data(), nullptr);
}

// ---------------------------------------------------------------- the operations on a call's states

// the rows of w.r (their sizes alone unless rows), with force (forward, inverse: nefc; null for the rows alone),
// appended to out
inline void append(const Rows &r, const double *force, bool rows, RowsOut &out) {
    size_t n = size_t(r.nefc);
    auto put = [n](std::vector<double> &to, const std::vector<double> &from) { to.insert(to.end(), from.begin(), from.begin() + long(n)); };
    for (int64_t s : {int64_t(r.nefc), int64_t(r.ne), int64_t(r.nf), int64_t(r.nl), r.con.n}) out.sizes.push_back(s);
    if (force) out.force.insert(out.force.end(), force, force + n);
    if (!rows) return;
    out.J.insert(out.J.end(), r.J.begin(), r.J.begin() + long(n * size_t(r.nv)));
    put(out.pos, r.pos), put(out.margin, r.margin), put(out.frictionloss, r.frictionloss), put(out.diagA, r.diagA);
    put(out.R, r.R), put(out.D, r.D), put(out.K, r.K), put(out.B, r.B), put(out.imp, r.imp), put(out.impP, r.impP);
    put(out.vel, r.vel), put(out.aref, r.aref);
    out.type.insert(out.type.end(), r.type.begin(), r.type.begin() + long(n));
    out.id.insert(out.id.end(), r.id.begin(), r.id.begin() + long(n));
    out.contact_mu.insert(out.contact_mu.end(), r.contact_mu.begin(), r.contact_mu.end());
    out.contact_row.insert(out.contact_row.end(), r.contact_row.begin(), r.contact_row.end());
}

// state s's contacts of the call
inline Contacts state_contacts(const ConstraintCall &call, int64_t s) {
    if (call.sets.empty()) return Contacts{};
    return call.sets[call.sets.size() == 1 ? 0 : size_t(s)];
}

// the smooth quantities of a state from its SmoothLayout block (Kernels::constraint_smooth's) into w: the rows'
// (w.d's xmat, xpos, cdof, cdof_dot, cvel), M on the tree's pattern (w.Mt), its factor (w.d.qL, w.d.qLinv), c (w.c)
inline void load_smooth(const Model &m, ConstraintWork &w, const double *in) {
    const SmoothLayout at(m);
    auto get = [in](size_t from, size_t n, double *to) { std::copy(in + from, in + from + n, to); };
    get(at.xmat, at.xpos - at.xmat, w.d.xmat.data()), get(at.xpos, at.cdof - at.xpos, w.d.xpos.data());
    get(at.cdof, at.cdof_dot - at.cdof, w.d.cdof.data()), get(at.cdof_dot, at.cvel - at.cdof_dot, w.d.cdof_dot.data());
    get(at.cvel, at.Mt - at.cvel, w.d.cvel.data()), get(at.Mt, at.qL - at.Mt, w.Mt.data());
    get(at.qL, at.qLinv - at.qL, w.d.qL.data()), get(at.qLinv, at.c - at.qLinv, w.d.qLinv.data());
    get(at.c, at.size - at.c, w.c.data());
}

// state s of the call (CONSTRAINT_ROWS, CONSTRAINT_FORWARD or CONSTRAINT_INVERSE of cpp/kernels.h): its rows into w.r,
// its per-state results into the call's outputs; its smooth quantities from its SmoothLayout block (null: computed
// here); a Status
inline int constraint_state(const Model &m, ConstraintWork &w, const ConstraintCall &call, int op, int64_t s,
                            const double *smooth) {
    const double *q = call.q.data + s * call.q.stride, *qd = call.qd.data + s * call.qd.stride;
    int nv = m.nv;
    if (smooth) {
        load_smooth(m, w, smooth);
    } else {
        int st = velocity_stages(m, w.d, q, qd);
        if (st != OK) return st;
    }
    rows(m, w, q, qd, state_contacts(call, s), call.eq_active, op == 0 || call.rows);
    if (op == 0) return OK;
    const double *x = call.x.data + s * call.x.stride;
    if (!smooth) {                                                     // M on the tree's pattern, c
        crb(m, w.d, w.M.data());
        tree_pack(m, w.M.data(), w.Mt.data());
        rne(m, w.d, qd, (const double *)nullptr, w.c.data());
    }
    if (w.force.size() < size_t(w.r.nefc)) w.force.resize(size_t(w.r.nefc));
    double *qfrc = call.qfrc + s * nv;
    if (op == 2) {                                                     // inverse: tau = M qacc + c - J^T f
        inverse_force(w, x, w.force.data());
        rows_transpose_times(w.r, w.force.data(), qfrc);
        tree_times(m, w.Mt.data(), x, w.Ma.data());
        double *tau = call.tau + s * nv;
        for (int j = 0; j < nv; j++) tau[j] = w.Ma[size_t(j)] + w.c[size_t(j)] - qfrc[j];
        return OK;
    }
    for (int j = 0; j < nv; j++) w.qfrc_smooth[size_t(j)] = x[j] - w.c[size_t(j)];
    Solution sol;
    const double *warm = call.warm.data ? call.warm.data + s * call.warm.stride : nullptr;
    if (!smooth && !factor_mass(m, w)) return SINGULAR;
    int st = solve(m, w, nullptr, warm, call.tolerance, call.iterations, sol);
    if (st != OK) return st;
    std::copy(w.qacc.begin(), w.qacc.end(), call.qacc + s * nv);
    rows_transpose_times(w.r, w.force.data(), qfrc);
    call.iters[s] = sol.iterations, call.improvement[s] = sol.improvement, call.converged[s] = sol.converged;
    return OK;
}

// the states [lo, hi) of a constraint call (op 0: rows, 1: forward, 2: inverse), each appended to out (a state that
// fails appends no rows and is recorded in failures)
inline void constraint_states(const Model &m, ConstraintWork &w, const ConstraintCall &call, int op, int64_t lo,
                              int64_t hi, RowsOut &out, Failures &failures) {
    const SmoothLayout at(m);
    const int64_t BLOCK_STATES = 16;                                   // the smooth stages of up to 16 states at once
    int64_t done = lo, block = lo;                                     // [block, done): their SmoothLayout blocks in w.smooth
    for (int64_t s = lo; s < hi; s++) {
        if (s == done && op != 0 && call.lanes && call.lanes->lanes > 1 && hi - s >= 2) {
            if (w.lanes != call.lanes || !w.lanes_work) {              // the active lanes' workspace, made first
                Workspace *made = call.lanes->create(m);
                if (w.lanes_work) w.lanes->destroy(w.lanes_work);
                w.lanes_work = made, w.lanes = call.lanes;
            }
            int64_t e = std::min(hi, s + BLOCK_STATES);
            if (w.smooth.size() < size_t(e - s) * at.size) w.smooth.resize(size_t(e - s) * at.size);
            block = s, done = call.lanes->constraint_smooth(m, *w.lanes_work, call.q, call.qd, s, e, w.smooth.data());
        }
        const double *smooth = s < done ? w.smooth.data() + size_t(s - block) * at.size : nullptr;
        int st = constraint_state(m, w, call, op, s, smooth);
        if (st != OK) {
            record(failures, st, s);
            w.r.nefc = w.r.ne = w.r.nf = w.r.nl = 0, w.r.con.n = 0, w.r.contact_mu.clear(), w.r.contact_row.clear();
        }
        append(w.r, op ? w.force.data() : nullptr, call.rows || !op, out);
    }
}

}  // namespace
}  // namespace physai
