// MuJoCo's soft constraints' rows (src/physai/engine/constraint.py: engine_core_constraint.c), function by function
// with the NumPy text's names, stages and algorithm choices, one state at a time (double: the rows vary per state, so no
// lanes for them; compiled into the scalar translation unit only):
//
//     rows(m, w, q, qd, contacts, eq_active)     the rows of a state in MuJoCo's order and layout (efc_J, efc_pos,
//                                                efc_margin, ..., efc_aref): equality, friction loss, limits, contacts
//     impedance_all (_impedance), impedance      R, D, K, B, imp of every row and the regularised cones' mu
//     update(r, jar, ...)                        each row's force and the constraint cost at jar = J qacc - aref
//
// The solver of the forward problem they pose is cpp/solver.h; the inverse problem and the constraint operations on a
// call's states, cpp/inverse.h.
//
// The invweight constants at qpos0 (body_invweight0, dof_invweight0) come with the model (Model's constraint
// fields, computed once when the Model is built: physai.engine.setconst.invweight0, mj_setConst's). A row's Jacobian is kept in compressed
// rows (its nonzero columns and their entries; dense too, MuJoCo's efc_J as the NumPy text has it, when the rows are
// returned), in groups of rows on the same columns (a foot's contacts), which the solver's products and Hessian walk.
// Every buffer is in the ConstraintWork of the caller (one per thread), grown to the largest state seen and kept.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "collision.h"
#include "data.h"
#include "kernels.h"
#include "model.h"
#include "spatial.h"
#include "support.h"
#include "tendon.h"

namespace physai {
namespace {

// row types, MuJoCo's numbers (mjtConstraint)
enum { EQUALITY, FRICTION_DOF, FRICTION_TENDON, LIMIT_JOINT, LIMIT_TENDON, CONTACT_FRICTIONLESS, CONTACT_PYRAMIDAL,
       CONTACT_ELLIPTIC };
// row states after an update, MuJoCo's numbers (mjtConstraintState)
enum { SATISFIED, QUADRATIC, LINEARNEG, LINEARPOS, CONE };
// physai.engine.model's equality types (the joint types and MINVAL: cpp/model.h)
enum { EQ_CONNECT = 0, EQ_WELD = 1, EQ_JOINT = 2, EQ_TENDON = 3 };
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
// a layout of H's factor kept for later solves (ConstraintWork::layouts): the fields of ConstraintWork of the same names
// and the key they were made from
struct FactorLayout {
    std::vector<int> key, Ladr, Lcol, Ltadr, Ltent, Lgroup, Lgroupnt, Lsame, Hadr, Hcol, Hentry;
    std::vector<uint16_t> Lrun;
};

// the dof and row indices of one island, ascending (island.h's partition)
struct Island {
    std::vector<int> dofs, rows;
};

// island.h's partition's own arrays, kept in a workspace between solves (each dof's tree, the trees' sets, each row's
// tree, the islands' numbers by root)
struct IslandScratch {
    std::vector<int64_t> trees, parent, row_tree, number;
};

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
    std::vector<int> cols;                          // a contact's columns (nv) and its two chains' (nv after them)
    // each dof's chain when it is consecutive dofs from a root (a free joint's, a root link's: root_first[j] .. j, each
    // dof's parent the one before it), its first dof; else -1
    std::vector<int> root_first;
    // the solver: M (nv x nv, crb's; inverse.h makes it on first use); M on the tree's pattern (Mt: the model's sparse
    // layout of M, forward.h; entry (i, j) of an ancestor j of i at M_rowadr[i] + depth(j), depth(j) = M_rownnz[j] - 1),
    // its factor in d.qL, d.qLinv;
    // H's factor there (LHt) when the rows are chains (r.tree), else on its sparse pattern (LH at Ladr, Lcol, from
    // factor_pattern, Lrows its rows' columns while made); H's tree factor's reciprocal diagonal (LHinv); a row's x x^T
    // along a chain (xt, by depth); vectors of nv; vectors of nefc
    std::vector<double> M, Mt, LHt, LH, LHinv, xt, c, qfrc_smooth, qacc_smooth, qacc, Ma, grad, step, v, Mv,
        tmp;
    // Ltadr, Ltent: its columns' entries; Lrun: each entry's distance to the first entry of its run of consecutive
    // columns in its row (16 bits: a run in pieces of at most 65536); Lgroup: the lowest row of the supernode (up to 6
    // consecutive rows whose columns have the same entries in the rows below it) each row heads or belongs to,
    // Lgroupnt: the number of those shared entries; Lsame: the leading entries each row shares with the row before it
    // (factor_pattern)
    std::vector<int> Ladr, Lcol, Ltadr, Ltent, Lgroup, Lgroupnt, Lsame;
    std::vector<uint16_t> Lrun;
    std::vector<std::vector<int>> Lrows;
    std::vector<double> Lwork;
    // H's own entries before the fill-in (a workspace layout, not an algorithm: hessian sums H there and cholesky
    // gathers each row from there, so that the factor's entries need no zeroing): row k's columns ascending at
    // Hcol[Hadr[k] .. Hadr[k + 1]) (factor_pattern's rows before the elimination), their values in Hval; Hentry the
    // entry (in Hcol) hessian adds to for each group's pair of columns (b <= a, group by group) and then each of M's
    std::vector<int> Hadr, Hcol, Hentry;
    std::vector<double> Hval;
    // solver.h's balanced_constraint_force on stiff rows: the residual, a row and the orthonormal basis (nv, nv, nv x nv)
    std::vector<double> balance;
    // solver.h's batched_update: the rows whose rank-1 updates wait for one sweep over L (at most 8, kUpdateBatch), whether
    // each entered the quadratic state, their count (the updates' x in x, nv apart)
    int batch_row[8] = {0}, batch_n = 0;
    bool batch_is[8] = {false};
    // factor_pattern's layout kept between solves (solver.h's kept_factor_pattern; workspace only, not an algorithm of
    // its own: the NumPy engine makes the pattern every solve, the same one): Lkey the pattern's inputs it was made
    // from (M's pattern, each group's columns), layouts one kept layout per island ordinal (layout_slot), key_scratch
    // the key of the current rows
    std::vector<int> Lkey, key_scratch;
    std::vector<FactorLayout> layouts;
    size_t layout_slot = 0;
    std::vector<double> G, g;                       // a group of rows' J^T D J (nc x nc), a row's entries (nv)
    std::vector<double> force, jar, Jv, wforce, wjar, x, quad;   // quad: 3 per row (Line)
    std::vector<int> state, wstate, hstate;
    Cones wcones;
    // the dual problem (dual_problem, solve_pgs): AR (nefc x nefc), b, 1 / AR's diagonal and its reciprocal (nefc), B = L^-T J^T
    // (nefc x nv) and the dofs [lo, hi) each of B's rows reaches; PGS's blocks (first row, dim), sweep order and the
    // forces before the extrapolation and the sweep, and one-row blocks' bounds (pgs_bounds) (nefc)
    std::vector<double> dual_A, dual_b, dual_inv, dual_diag, dual_B, pgs_previous, pgs_momentum, pgs_lower,
        pgs_upper;
    std::vector<int> dual_lo, dual_hi, pgs_first, pgs_dims, pgs_order;
    // an island's dofs gathered (solver.h's island_model): each dof's number in its island (nv), the island's M pattern
    // in its own numbers (rowadr, rownnz, colind, parent), and M on the tree's pattern, its factor and reciprocal
    // diagonal of every dof, kept while the islands use Mt, d.qL and d.qLinv
    std::vector<int64_t> island_local, island_rowadr, island_rownnz, island_colind, island_parent;
    std::vector<double> all_Mt;
    Vec<double> all_qL, all_qLinv;
    int all_nv = 0;                                 // the model's nv while an island runs alone (0: none)
    // an island's a0 = M^-1 qfrc_smooth already in qacc_smooth (solver.h's solve_islands: the entries of every dof's a0,
    // the same numbers as the island's own solve; workspace only): primal_start does not solve for it again
    bool a0_given = false;
    // the island whose chosen start's M qacc, J qacc - aref, forces, states and cones primal_start gathers from every
    // row's and dof's (start_Ma, start_jar, start_force, start_state, start_cones: island_start's, the same numbers as
    // the island's own evaluation; start_cone: each row's cone in start_cones where it is a cone's first row, else -1;
    // solver.h's solve_islands, workspace only; null: it evaluates them)
    const Island *start_of = nullptr;
    // the discrete step's metric with tendon and actuator terms (solver.h's metric_model; coupled false: none):
    // Mt then holds the whole metric M^ = X + C on the tree's layout when C fits it, else dense on the layout of a
    // chain of every dof (dense_*: its rowadr, rownnz, colind and parents), P and Pinv (on the same layout) the factor
    // of its factored part X + diag(C) (forward.factored_metric: the conjugate gradients' preconditioner, noslip's
    // Delassus metric), coupling C (nv x nv) the islands' links; cg_* the conjugate gradients' vectors (nv each);
    // pcg_capped the relative residual of the last smooth solve that stopped at its iteration cap (-1: none)
    bool coupled = false;
    const double *coupling = nullptr;
    std::vector<int64_t> dense_rowadr, dense_rownnz, dense_colind, dense_parent;
    std::vector<double> P, Pinv, cg_r, cg_z, cg_p, cg_Ap;
    double pcg_capped = -1.0;
    std::vector<double> start_Ma, start_jar, start_force;
    std::vector<int> start_state, start_cone;
    Cones start_cones;
    // solve_islands' gathered vectors (nv or nefc) and every row set aside while an island's rows are in r: room kept
    // from step to step (workspace only, C++: the NumPy text makes them afresh; no allocation per step)
    std::vector<double> gather_start, gather_warm, gather_qfrc, gather_qacc, gather_force;
    std::vector<int> gather_state;
    Rows all_rows;
    std::vector<uint64_t> pgs_magic;                                   // the PGS shuffle's moduli (solver.h's mod_magics)
    // the front's smooth force (inverse.h's front_force): the actuators' inputs, scalar forces (nu) and joint forces
    // (nv), tau (nv); sized at its first use
    StepInputs<double> front;
    std::vector<double> front_force, front_joint, tau;
    // the islands of the last solve and partition's arrays (solver.h's solve_with; workspace only, not an algorithm of
    // its own: the NumPy engine makes them anew each solve, the same ones)
    std::vector<Island> islands;
    IslandScratch island_scratch;
    // PGS's visiting orders kept per block count (solver.h's pgs_order_at; workspace only, not an algorithm of its own:
    // the NumPy engine shuffles every iteration, to the same orders): per count, the orders of the iterations made so
    // far (iteration t's at t * count), the last of them and the PCG32 state after it
    struct PgsOrders {
        std::vector<int> orders, current;
        uint64_t rng = 0;
        int64_t made = 0;
    };
    std::vector<PgsOrders> pgs_orders;
    // one PGS solve between pgs_setup and pgs_finish (solver.h's solve_pgs loop, or the lanes' pgs_together, which runs
    // several solves' loops at once; workspace only, the same iterations): the iteration and the count k since
    // Nesterov's last restart, the limits, the tolerance's scale, this iteration's extrapolation factor beta and visiting
    // order, the last improvement; rows: every block one row (pgs_sweep_rows); kept: the kept orders (null: drawn from
    // rng into pgs_order)
    struct PgsRun {
        int64_t k = 0, it = 0, iterations = 0;
        double tolerance = 0.0, scale = 0.0, beta = 0.0, improvement = 0.0;
        bool rows = false;
        PgsOrders *kept = nullptr;
        uint64_t rng = 0;
        const int *visit = nullptr;
    };
    PgsRun pgs;
    bool pgs_defer = false;                         // solve_with's next PGS solve only set up (PGS_PENDING), once
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
        mark.assign(V, 0), cols.resize(2 * V);
        root_first.resize(V);
        for (int j = 0; j < m.nv; j++) {
            int64_t p = m.dof_parentid[j];
            root_first[size_t(j)] = p < 0 ? j : p == j - 1 ? root_first[size_t(p)] : -1;
        }
        for (auto *x : {&Mt, &LHt}) x->resize(size_t(tree_nnz(m)));
        g.resize(V), xt.resize(V), LHinv.resize(V);
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

// y += v f0 + v[nc ..] f1 + v[2 nc ..] f2 + v[3 nc ..] f3 over nc entries, each entry's sum in that order (y apart from
// v: the loop vectorizes, every entry's operations its own)
inline void add_rows4(double *__restrict y, const double *__restrict v, int nc, double f0, double f1, double f2, double f3) {
    for (int k = 0; k < nc; k++) y[k] = (((y[k] + v[k] * f0) + v[nc + k] * f1) + v[2 * nc + k] * f2) + v[3 * nc + k] * f3;
}

// y = J^T f (nv) over the rows' nonzero columns: y_j += J_ij f_i, the rows ascending (a group's four at a time, column
// by column; a group on consecutive columns, as an island's contacts between free bodies, by add_rows4 on y's entries
// there, the same sums)
inline void rows_transpose_times(const Rows &r, const double *f, double *y) {
    for (int j = 0; j < r.nv; j++) y[j] = 0.0;
    const double *val = r.val.data();
    const int *start = r.start.data();
    for_each_group(r, [&](int i, int e, int nc, const int *cols) {
        const bool consecutive = nc > 0 && cols[nc - 1] - cols[0] == nc - 1;   // (cols ascending)
        for (; i + 4 <= e; i += 4) {
            const double *v = val + start[i], f0 = f[i], f1 = f[i + 1], f2 = f[i + 2], f3 = f[i + 3];
            if (consecutive) {
                add_rows4(y + cols[0], v, nc, f0, f1, f2, f3);
                continue;
            }
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

// the rows' buffers for up to n rows: J (n x nv) when it is returned (r.dense; else a block's scratch, next_rows), the
// nonzero columns and their entries grown as rows are added (add)
inline void reserve_rows(Rows &r, int n) {
    size_t N = size_t(n);
    if (r.dense && r.J.size() < N * size_t(r.nv)) r.J.resize(N * size_t(r.nv));
    if (r.start.size() > N) return;
    for (auto *x : {&r.pos, &r.margin, &r.frictionloss, &r.diagA, &r.R, &r.D, &r.K, &r.B, &r.imp, &r.impP, &r.vel, &r.aref})
        x->resize(N);
    r.type.resize(N), r.id.resize(N), r.start.resize(N + 1);
}

// the next block's rows of J: at row nefc when J is returned (r.dense), else the scratch's first rows
inline double *block_rows(Rows &r) { return r.J.data() + (r.dense ? size_t(r.nefc) * r.nv : 0); }

// the next n rows of J, zeroed for a block to write (a block that writes all its given columns, which add reads alone,
// needs no zeros when J is not returned)
inline double *next_rows(Rows &r, int n, bool given = false) {
    if (!r.dense && r.J.size() < size_t(n) * r.nv) r.J.resize(size_t(n) * r.nv);
    double *J = block_rows(r);
    if (r.dense || !given) std::fill(J, J + size_t(n) * r.nv, 0.0);
    return J;
}

// the block of n rows written at next_rows, appended (MuJoCo's mj_addConstraint): pos, margin, diagA per row; a block
// whose Jacobian is all zero is dropped, except a contact's. The rows' nonzero columns are found, or given (ncols
// ascending columns outside which the rows are zero). Returns whether it was added. compact (with given): the block's
// entries at the given columns (n x ncols, row by row), read instead of J's rows (a contact's, C++ only: its dense
// rows are written only when J is returned; the same entries)
inline bool add(Rows &r, int n, const double *pos, const double *margin, double frictionloss, int kind, int64_t id,
                const double *diagA, const int *given = nullptr, int ncols = 0, const double *compact = nullptr) {
    int nv = r.nv, at = r.start[size_t(r.nefc)], first = at;
    const double *J = block_rows(r);
    size_t room = size_t(at) + size_t(n) * nv;                         // the block's columns at most
    if (r.cols.size() < room) r.cols.resize(room), r.val.resize(room);
    int *cols = r.cols.data();
    for (int i = 0; i < n; i++) {
        if (given)
            std::copy(given, given + ncols, cols + at), at += ncols;
        else
            for (int j = 0; j < nv; j++)
                if (J[size_t(i) * nv + j] != 0.0) cols[at++] = j;
        r.start[size_t(r.nefc + i) + 1] = at;
    }
    if (given && kind < CONTACT_FRICTIONLESS) {                        // an all-zero block is still dropped
        bool zero = true;
        for (int i = 0; i < n && zero; i++)
            for (int k = 0; k < ncols && zero; k++)
                zero = (compact ? compact[size_t(i) * ncols + k] : J[size_t(i) * nv + given[k]]) == 0.0;
        if (zero) at = first;
    }
    if (kind < CONTACT_FRICTIONLESS && at == first) return false;
    for (int i = 0; i < n && !(given && i > 0); i++) {                 // a new group unless on the previous row's columns
        size_t k = size_t(r.nefc + i);                                 // (a given block's later rows: on its first's)
        int a = r.start[k], e = r.start[k + 1], p = k > 0 ? r.start[k - 1] : 0;
        bool same = k > 0 && e - a == a - p &&
                    (e == a || (cols[e - 1] == cols[a - 1] && std::equal(cols + a, cols + e - 1, cols + p)));
        if (!same) r.group.push_back(int(k));
    }
    for (int i = 0; i < n; i++) {
        size_t k = size_t(r.nefc + i);
        if (compact)                                                   // the given columns' entries, in order
            std::copy(compact + size_t(i) * ncols, compact + size_t(i + 1) * ncols, r.val.begin() + r.start[k]);
        else
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
    if (m.opt_frictionloss) {
        for (int i = 0; i < m.nv; i++) n += m.dof_frictionloss[i] != 0.0;
        for (int64_t t = 0; t < m.ntendon; t++) n += m.tendon_frictionloss[t] != 0.0;
    }
    if (m.opt_limit) {
        for (int j = 0; j < m.njnt; j++) n += m.jnt_limited[j] ? (m.jnt_type[j] == JNT_BALL ? 1 : 2) : 0;
        for (int64_t t = 0; t < m.ntendon; t++) n += m.tendon_limited[t] ? 2 : 0;
    }
    for (int64_t c = 0; c < con.n; c++) {
        int64_t dim = con.dim(c);
        n += int(dim == 1 ? 1 : m.opt_elliptic ? dim : 2 * (dim - 1));
    }
    return n;
}

// (value, its reference, Jacobian J (nv, added into), invweight0) of joint i (q, qpos0, the unit row of its dof) or, for a
// tendon equality, tendon i (its length, tendon_length0, ten_J, tendon_invweight0: d's, tendon.h's tendons)
// (constraint._scalar_object)
inline void scalar_object(const Model &m, const Data<double> &d, int64_t kind, int64_t i, const double *q, double &x,
                          double &ref, double *J, double &weight) {
    if (kind == EQ_TENDON) {
        x = d.ten_length[size_t(i)];
        for (int64_t j = 0; j < m.nv; j++) J[j] += d.ten_J[size_t(i * m.nv + j)];
        ref = m.tendon_length0[i], weight = m.tendon_invweight0[i];
        return;
    }
    int64_t a = m.jnt_qposadr[i], v = m.jnt_dofadr[i];
    x = q[a], ref = m.qpos0[a], J[v] = 1.0, weight = m.dof_invweight0[v];
}

// connect (3 rows), weld (6), joint and tendon (1) equalities in model order (mj_instantiateEquality), with the connect and weld
// blocks' Jdot qd for the correction of aref (mj_Jdotv)
inline void equality_rows(const Model &m, ConstraintWork &w, const double *q, const bool *eq_active) {
    Rows &r = w.r;
    const Data<double> &d = w.stages ? *w.stages : w.d;
    int nv = m.nv;
    const double *bw = m.body_invweight0;
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
        // joint or tendon: x1 - ref1 - data[0] - poly(x2 - ref2), J = J1 - poly'(x2 - ref2) J2
        double *J = next_rows(r, 1), *J2 = w.J2.data();
        double x1, ref1, w1, zero = 0.0;
        scalar_object(m, d, kind, b1, q, x1, ref1, J, w1);
        double cpos = x1 - ref1 - data[0], dA = w1;
        if (b2 >= 0) {
            double x2, ref2, w2;
            std::fill(J2, J2 + nv, 0.0);
            scalar_object(m, d, kind, b2, q, x2, ref2, J2, w2);
            double dif = x2 - ref2;
            cpos = x1 - ref1 - data[0] - (data[1] * dif + data[2] * dif * dif + data[3] * dif * dif * dif +
                                          data[4] * dif * dif * dif * dif);
            double deriv = data[1] + 2 * data[2] * dif + 3 * data[3] * dif * dif + 4 * data[4] * dif * dif * dif;
            for (int j = 0; j < nv; j++) J[j] = J[j] - deriv * J2[j];
            dA += w2;
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

// (solref, solreffriction, solimp) of row i's constraint, with MuJoCo's safety rules applied (the discrete integrator
// keeps the time constants as authored: impedance_all replaces its unresolved springs instead)
inline void solver_parameters(const Model &m, const Rows &r, int i, double *ref, double *reffric, double *imp,
                              bool discrete = false) {
    int64_t kind = r.type[size_t(i)], ident = r.id[size_t(i)];
    const double *rf, *im, *rff = nullptr;
    if (kind == EQUALITY) rf = m.eq_solref + 2 * ident, im = m.eq_solimp + 5 * ident;
    else if (kind == LIMIT_JOINT) rf = m.jnt_solref + 2 * ident, im = m.jnt_solimp + 5 * ident;
    else if (kind == FRICTION_DOF) rf = m.dof_solref + 2 * ident, im = m.dof_solimp + 5 * ident;
    else if (kind == LIMIT_TENDON) rf = m.tendon_solref_lim + 2 * ident, im = m.tendon_solimp_lim + 5 * ident;
    else if (kind == FRICTION_TENDON) rf = m.tendon_solref_fri + 2 * ident, im = m.tendon_solimp_fri + 5 * ident;
    else rf = r.con.solref(ident), rff = r.con.solreffriction(ident), im = r.con.solimp(ident);
    for (int a = 0; a < 2; a++) ref[a] = rf[a], reffric[a] = rff ? rff[a] : 0.0;
    for (int a = 0; a < 5; a++) imp[a] = im[a];
    if ((ref[0] > 0) != (ref[1] > 0)) ref[0] = 0.02, ref[1] = 1.0;    // mixed standard and direct: MuJoCo's default
    bool clamp = m.opt_refsafe && !discrete;
    if (clamp && ref[0] > 0) ref[0] = std::max(ref[0], 2 * m.opt_timestep);   // a time constant of at least two steps
    if ((reffric[0] > 0) != (reffric[1] > 0)) reffric[0] = reffric[1] = 0.0;
    if (clamp && reffric[0] > 0) reffric[0] = std::max(reffric[0], 2 * m.opt_timestep);
    for (int a : {0, 1, 3}) imp[a] = std::min(MAXIMP, std::max(MINIMP, imp[a]));
    imp[2] = std::max(0.0, imp[2]), imp[4] = std::max(1.0, imp[4]);
}

// the rows of the constraint starting at row i that share one impedance, and its position (MuJoCo's getposdim)
inline int block(const Model &m, const Rows &r, int i, double &pos) {
    int64_t kind = r.type[size_t(i)];
    pos = r.pos[size_t(i)];
    if (kind == CONTACT_ELLIPTIC) return int(r.con.dim(r.id[size_t(i)]));
    if (kind == CONTACT_PYRAMIDAL) return 2 * (int(r.con.dim(r.id[size_t(i)])) - 1);
    if (kind == EQUALITY && m.eq_type[r.id[size_t(i)]] < EQ_JOINT) {
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

// s = 1 + h B + h^2 K imp: a row's spring-damper (K, B, imp) evaluated at the end of a discrete step of h [s] divides
// its aref and R by s (end_of_step_factor)
inline double end_of_step_factor(double h, double B, double K, double imp) { return 1 + h * B + h * h * K * imp; }

// row j under the discrete integrator of step h [s] (_discrete_row): with refsafe, a limit's or contact's spring faster
// than the step (timeconst dampratio < h) replaced by the stiffest zero-restitution spring the step resolves, at the
// authored damping ratio; then R = (1 - imp) / (imp s) diagA, at least (1 - MAXIMP) / MAXIMP diagA
inline void discrete_row(const Model &m, Rows &r, int j, const double *ref, double h) {
    size_t k = size_t(j);
    bool spring = r.K[k] > 0 && r.type[k] >= LIMIT_JOINT;
    if (m.opt_refsafe && spring && ref[0] > 0 && ref[0] * ref[1] < h) {   // K = 1 / (imp h^2), B = 2 dampratio sqrt(K)
        r.K[k] = 1 / (r.imp[k] * h * h);
        r.B[k] = 2 * ref[1] * std::sqrt(r.K[k]);
    }
    double s = end_of_step_factor(h, r.B[k], r.K[k], r.imp[k]);
    r.R[k] = std::max(MINVAL, std::max((1 - r.imp[k]) / (r.imp[k] * s), (1 - MAXIMP) / MAXIMP) * r.diagA[k]);
}

// a row's spring K and damper B from its (solref, solimp): standard K = 1 / (dwidth tc dampratio)^2, B = 2 / (dwidth tc);
// direct K = -solref[0] / dwidth^2, B = -solref[1] / dwidth
inline double stiffness(const double *ref, const double *solimp) {
    return ref[0] > 0 ? 1 / std::max(MINVAL, solimp[1] * solimp[1] * ref[0] * ref[0] * ref[1] * ref[1])
                      : -ref[0] / std::max(MINVAL, solimp[1] * solimp[1]);
}

inline double damping(const double *ref, const double *solimp) {
    return ref[1] > 0 ? 2 / std::max(MINVAL, solimp[1] * ref[0]) : -ref[1] / std::max(MINVAL, solimp[1]);
}

// R, D, K, B, imp, impP of every row and MuJoCo's adjusted diagA; the regularised cones' mu of the contacts (_impedance);
// discrete_h > 0 [s]: the discrete integrator's rows (refsafe's resolved springs, R / s capped at MAXIMP)
inline void impedance_all(const Model &m, Rows &r, double discrete_h = 0) {
    int n = r.nefc;
    for (int i = 0; i < n;) {
        double ref[2], reffric[2], solimp[5], pos, impP;
        solver_parameters(m, r, i, ref, reffric, solimp, discrete_h > 0);
        int dim = block(m, r, i, pos);
        double imp = impedance(solimp, pos, r.margin[size_t(i)], impP);
        // the block's spring K and damper B from ref, the same numbers for each of its rows (an elliptic cone's
        // friction rows: B from reffric when it is given, no spring)
        double K = stiffness(ref, solimp), B = damping(ref, solimp);
        bool reffric_given = reffric[0] != 0 || reffric[1] != 0;
        for (int j = i; j < i + dim; j++) {
            size_t k = size_t(j);
            if (j == i || r.type[k] != CONTACT_PYRAMIDAL)              // (a pyramid's later rows: R set below)
                r.R[k] = std::max(MINVAL, (1 - imp) * r.diagA[k] / imp);
            bool elliptic_friction = r.type[k] == CONTACT_ELLIPTIC && j > i;
            bool friction = r.type[k] == FRICTION_DOF || r.type[k] == FRICTION_TENDON || elliptic_friction;
            r.K[k] = friction ? 0.0 : K;                               // friction: no spring
            r.B[k] = elliptic_friction && reffric_given ? damping(reffric, solimp) : B;
            r.imp[k] = imp, r.impP[k] = impP;
            if (discrete_h > 0) discrete_row(m, r, j, ref, discrete_h);
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

// the next row's J = scale ten_J of tendon t (a tendon's friction or limit row, its columns found by add)
inline void tendon_row(Rows &r, const Data<double> &d, int64_t t, double scale) {
    double *J = next_rows(r, 1);
    for (int j = 0; j < r.nv; j++) J[j] = scale * d.ten_J[size_t(t * r.nv + j)];
}

// each row's diagApprox scaled by its factor under the discrete integrator (discrete_diagonal_ratio):
// J diag(M^)^-1 J^T / J diag(M)^-1 J^T with M's diagonal bare (nv) and M^ = M + h B + h^2 K's (nv), diagA scaled by it
// (kept where J diag(M)^-1 J^T <= MINVAL, as MuJoCo 4: a row whose J is rounding noise)
inline void discrete_diagonal_ratio(Rows &r, const double *bare, const double *step_diag) {
    for (int i = 0; i < r.nefc; i++) {
        double b = 0.0, e = 0.0;
        for (int k = r.start[size_t(i)]; k < r.start[size_t(i) + 1]; k++) {
            int j = r.cols[size_t(k)];
            double J2 = r.val[size_t(k)] * r.val[size_t(k)];
            b += J2 * (1 / bare[j]), e += J2 * (1 / step_diag[j]);
        }
        if (b > MINVAL) r.diagA[size_t(i)] *= e / b;
    }
}

// the dofs the rows move (nv): a nonzero entry of J in their column
inline void row_dofs(const Rows &r, char *dofs) {
    std::fill(dofs, dofs + r.nv, char(0));
    for (int k = 0; k < (r.nefc ? r.start[size_t(r.nefc)] : 0); k++)
        if (r.val[size_t(k)] != 0) dofs[r.cols[size_t(k)]] = 1;
}

// the dofs of the chains ending at dofs e1 and e2 (-1: none) that move one of them only (mark not 3), ascending, into
// cols; their number. Each chain walked up from its end is descending (a dof's parent precedes it), so the two merged
// from their smallest ends give the sorted columns (as sorting them would) without a sort; room: nv ints
inline int merged_chains(const Model &m, const char *mark, int64_t e1, int64_t e2, int *cols, int *room) {
    int n1 = 0, n2 = 0;
    for (int64_t j = e1; j >= 0; j = m.dof_parentid[j])
        if (mark[j] != 3) room[n1++] = int(j);
    int *chain2 = room + n1;
    for (int64_t j = e2; j >= 0; j = m.dof_parentid[j])
        if (mark[j] != 3) chain2[n2++] = int(j);
    int n = 0;
    while (n1 > 0 || n2 > 0)                                           // the smaller of the two chains' last entries
        cols[n++] = n2 == 0 || (n1 > 0 && room[n1 - 1] < chain2[n2 - 1]) ? room[--n1] : chain2[--n2];
    return n;
}

// out = f0 x + f1 y + f2 z over n entries, each entry's sum in that order (out apart from x, y, z: the loop vectorizes)
inline void combine3(double *__restrict out, const double *__restrict x, const double *__restrict y,
                     const double *__restrict z, double f0, double f1, double f2, int n) {
    for (int i = 0; i < n; i++) out[i] = f0 * x[i] + f1 * y[i] + f2 * z[i];
}

// a pyramid's two edges over n entries: plus = normal + mu tangent, minus = normal - mu tangent (apart: the loop vectorizes)
inline void pyramid_edges(double *__restrict plus, double *__restrict minus, const double *__restrict normal,
                          const double *__restrict tangent, double mu, int n) {
    for (int i = 0; i < n; i++) plus[i] = normal[i] + mu * tangent[i], minus[i] = normal[i] - mu * tangent[i];
}

// the constraint rows of the state (q, qd) whose velocity stages w.d holds (or *w.stages), with the contacts con, in
// MuJoCo's order, with their impedance, regulariser and reference acceleration (constraint.rows); J dense too when
// dense (else its compressed rows alone); the caller checks the model has no constraint physai does not model.
// discrete_h > 0 [s]: those of MuJoCo 4's discrete integrator (their spring-dampers at the end of the step), with M's
// diagonal bare (nv) and the step's metric M^'s (nv)
inline void rows(const Model &m, ConstraintWork &w, const double *q, const double *qd, const Contacts &con,
                 const bool *eq_active, bool dense = true, double discrete_h = 0, const double *bare = nullptr,
                 const double *step_diag = nullptr) {
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
    if (m.ntendon && !w.stages) tendons(m, w.d, q);                    // ten_length, ten_J (tendon.h)
    // equalities: connect, weld, joint
    if (m.opt_equality && m.neq) {
        bias_accelerations(m, d, qd, w.acc.data());
        bool anchored = false;                                         // a connect or a weld
        for (int e = 0; e < m.neq; e++) anchored |= m.eq_type[e] < EQ_JOINT;
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
    // dry friction along each tendon: J = ten_J
    if (m.opt_frictionloss)
        for (int64_t t = 0; t < m.ntendon; t++) {
            if (m.tendon_frictionloss[t] == 0.0) continue;
            tendon_row(r, d, t, 1.0);
            add(r, 1, &zero, &zero, m.tendon_frictionloss[t], FRICTION_TENDON, t, m.tendon_invweight0 + t);
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
    // tendon limits: dist = side (range - length), J = -side ten_J
    if (m.opt_limit)
        for (int64_t t = 0; t < m.ntendon; t++) {
            if (!m.tendon_limited[t]) continue;
            double margin = m.tendon_margin[t];
            for (int side = -1; side <= 1; side += 2) {
                double dist = side * (m.tendon_range[2 * t + (side + 1) / 2] - d.ten_length[size_t(t)]);
                if (dist < margin) {
                    tendon_row(r, d, t, -side);
                    add(r, 1, &dist, &margin, 0.0, LIMIT_TENDON, t, m.tendon_invweight0 + t);
                }
            }
        }
    r.nl = r.nefc - r.ne - r.nf;
    // contacts: the frame applied to the difference of the two bodies' point Jacobians (body 2 minus body 1, skipping
    // the dofs that move both)
    int64_t nc = r.con.n;
    r.contact_row.assign(size_t(nc), -1), r.contact_mu.assign(size_t(nc), 0.0);
    char *mark = w.mark.data();
    const int *root_first = w.root_first.data();
    for (int64_t c = 0; c < nc; c++) {
        int64_t b1 = con.body1(c), b2 = con.body2(c), dim = con.dim(c);
        const double *p = con.pos(c), *frame = con.frame(c), *mu = con.friction(c);
        int64_t e1 = chain_end(m, b1), e2 = chain_end(m, b2);
        // the columns of the dofs that move one body only, ascending (n: none, no rows); Jd = J2 - J1 there ((Jp; Jr)
        // (6, n) row by row, point_jacobians' column j: -J1's on body 1's chain, J2's on body 2's)
        int *cols = w.cols.data(), n = 0;
        double *Jd = w.Jd.data(), r1[3] = {0, 0, 0}, r2[3] = {0, 0, 0};
        auto column = [&](int k, int j, bool second) {
            double col[6];
            jacobian_column(d, j, second ? r2 : r1, col);
            if (!second)                                               // J2 - J1 with J2 = 0 there
                for (int a = 0; a < 6; a++) col[a] = 0.0 - col[a];
            for (int a = 0; a < 6; a++) Jd[a * n + k] = col[a];
        };
        int first1 = e1 >= 0 ? root_first[e1] : 0, first2 = e2 >= 0 ? root_first[e2] : 0;
        if (first1 >= 0 && first2 >= 0 && (e1 < 0 || e2 < 0 || first1 != first2)) {
            // two chains of consecutive dofs from different roots (or the world): disjoint, the lower one's first
            int n1 = int(e1) + 1 - first1, n2 = int(e2) + 1 - first2;   // (0 for the world: e -1, first 0)
            n = n1 + n2;
            if (n == 0) continue;
            world_offset(m, d, b1, p, r1), world_offset(m, d, b2, p, r2);
            int at1 = n2 > 0 && first2 < first1 ? n2 : 0, at2 = at1 > 0 ? 0 : n1;
            for (int k = 0; k < n1; k++) cols[at1 + k] = first1 + k, column(at1 + k, first1 + k, false);
            for (int k = 0; k < n2; k++) cols[at2 + k] = first2 + k, column(at2 + k, first2 + k, true);
        } else {
            for (int64_t j = e1; j >= 0; j = m.dof_parentid[j]) mark[j] |= 1;
            for (int64_t j = e2; j >= 0; j = m.dof_parentid[j]) mark[j] |= 2;
            bool moves = false;                                        // a dof moves one body but not the other
            for (int64_t j = e1; j >= 0 && !moves; j = m.dof_parentid[j]) moves = mark[j] != 3;
            for (int64_t j = e2; j >= 0 && !moves; j = m.dof_parentid[j]) moves = mark[j] != 3;
            if (moves) {
                n = merged_chains(m, mark, e1, e2, cols, cols + nv);
                world_offset(m, d, b1, p, r1), world_offset(m, d, b2, p, r2);
                for (int k = 0; k < n; k++) column(k, cols[k], mark[cols[k]] == 2);
            }
            for (int64_t j = e1; j >= 0; j = m.dof_parentid[j]) mark[j] = 0;
            for (int64_t j = e2; j >= 0; j = m.dof_parentid[j]) mark[j] = 0;
            if (n == 0) continue;
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
            const double *f = frame + 3 * (k < nt ? k : k - nt), *x = Jd + (k < nt ? 0 : 3) * n;
            combine3(jac + k * n, x, x + n, x + 2 * n, f[0], f[1], f[2], n);
        }
        // each block's entries on its columns (compact, n per row) to add; its dense rows written only when J
        // is returned (r.dense)
        if (dim == 1) {
            double *J = next_rows(r, 1, true);
            if (r.dense)
                for (int i = 0; i < n; i++) J[cols[i]] = jac[i];
            add(r, 1, &dist, &margin, 0.0, CONTACT_FRICTIONLESS, c, &tran, cols, n, jac);
        } else if (!m.opt_elliptic) {
            double *pair = w.J2.data();                                // a pyramid's two edges (2 x n)
            for (int k = 1; k < dim; k++) {
                double *J = next_rows(r, 2, true), dists[2] = {dist, dist}, margins[2] = {margin, margin};
                pyramid_edges(pair, pair + n, jac, jac + k * n, mu[k - 1], n);
                if (r.dense)
                    for (int i = 0; i < n; i++) J[cols[i]] = pair[i], J[nv + cols[i]] = pair[n + i];
                double dA = tran + mu[k - 1] * mu[k - 1] * (k - 1 < 2 ? tran : rot), dAs[2] = {dA, dA};
                add(r, 2, dists, margins, 0.0, CONTACT_PYRAMIDAL, c, dAs, cols, n, pair);
            }
        } else {
            double dists[6] = {dist, 0, 0, 0, 0, 0}, margins[6] = {margin, 0, 0, 0, 0, 0}, dA[6];
            for (int j = 0; j < dim; j++) dA[j] = j < 3 ? tran : rot;
            double *J = next_rows(r, int(dim), true);
            if (r.dense)
                for (int k = 0; k < dim; k++)
                    for (int i = 0; i < n; i++) J[k * nv + cols[i]] = jac[k * n + i];
            add(r, int(dim), dists, margins, 0.0, CONTACT_ELLIPTIC, c, dA, cols, n, jac);
        }
    }
    r.group.push_back(r.nefc);
    r.tree = chains(m, r);
    if (discrete_h > 0) discrete_diagonal_ratio(r, bare, step_diag);      // diagApprox in the metric M + h B + h^2 K
    impedance_all(m, r, discrete_h);
    rows_times(r, qd, r.vel.data());
    for (int i = 0; i < r.nefc; i++) {
        size_t k = size_t(i);
        r.aref[k] = -r.B[k] * r.vel[k] - r.K[k] * r.imp[k] * (r.pos[k] - r.margin[k]);
    }
    for (size_t b = 0; b < r.jdot_first.size(); b++)                   // connect and weld: aref -= Jdot qd
        for (int a = 0; a < r.jdot_n[b]; a++) r.aref[size_t(r.jdot_first[b] + a)] -= r.jdot[6 * b + size_t(a)];
    if (discrete_h > 0)                                                // the spring-damper at the step's end: (aref - h K imp vel) / s
        for (int i = 0; i < r.nefc; i++) {
            size_t k = size_t(i);
            double s = end_of_step_factor(discrete_h, r.B[k], r.K[k], r.imp[k]);
            r.aref[k] = (r.aref[k] - discrete_h * r.K[k] * r.imp[k] * r.vel[k]) / s;
        }
}

// ---------------------------------------------------------------- the force of every row (mj_constraintUpdate)

// a contact on its cone appended to cones: its first row and dim; returns the room of its Hessian (dim x dim of 36)
inline double *append_cone(Cones &cones, int first, int dim) {
    int k = cones.n++;
    if (cones.first.size() < size_t(cones.n))
        cones.first.resize(size_t(cones.n)), cones.dim.resize(size_t(cones.n)), cones.H.resize(36 * size_t(cones.n));
    cones.first[size_t(k)] = first, cones.dim[size_t(k)] = dim;
    return &cones.H[36 * size_t(k)];
}

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
                double H[36], scale[6] = {mu, 0, 0, 0, 0, 0}, *out = append_cone(*cones, i, dim);
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

}  // namespace
}  // namespace physai
