// The workspaces of the kernels (MuJoCo's mjData), for one state (T = double) or lanes of states: Data<T> for the
// smooth stages, DerivData<T> for the derivatives, SimData<T> for a simulation's steps, and Work<T>, the set a batch
// call runs on. Each is owned by its caller (the bound NativeModel keeps one set for the calls that keep the GIL; each
// thread of a large batch makes its own); nothing here is static or thread_local. Then the kernels' status codes, what a
// call met (Failures), and the inputs and outputs of a call (Input, Params, Series, Rollout).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

#include "lanes.h"
#include "model.h"
#include "spatial.h"

namespace physai {

// what a kernel met in a state: OK; a zero quaternion in q; a singular matrix (M not positive definite); a result that
// is not finite (from finite inputs: an overflow); a simulation step whose state is no longer finite (divergence)
enum Status { OK = 0, ZERO_QUATERNION = 1, SINGULAR = 2, NONFINITE = 3, DIVERGED = 4, NSTATUS = 5 };

// the failures of a call: the first state (or trajectory) that met each Status, none: NO_STATE; written by the kernels
// on any thread (record), read by the bindings once every thread has joined
constexpr int64_t NO_STATE = INT64_MAX;
struct Failures {
    std::atomic<int64_t> first[NSTATUS];
};

namespace {

// that state `state` met `status` (failures keeps the first state of each)
inline void record(Failures &failures, int status, int64_t state) {
    std::atomic<int64_t> &first = failures.first[status];
    int64_t seen = first.load(std::memory_order_relaxed);
    while (state < seen && !first.compare_exchange_weak(seen, state, std::memory_order_relaxed)) {}
}

}  // namespace

// 64-byte aligned storage (lanes are up to 64 bytes; std::allocator may not align them)
template <class T> struct Aligned {
    using value_type = T;
    Aligned() = default;
    template <class U> Aligned(const Aligned<U> &) {}
    T *allocate(size_t n) { return static_cast<T *>(::operator new(n * sizeof(T), std::align_val_t(64))); }
    void deallocate(T *p, size_t) { ::operator delete(p, std::align_val_t(64)); }
    template <class U> bool operator==(const Aligned<U> &) const { return true; }
    template <class U> bool operator!=(const Aligned<U> &) const { return false; }
};
template <class T> using Vec = std::vector<T, Aligned<T>>;

// the smooth stages' quantities (physai.engine.data.Data): per link xmat (9), xpos (3), step (3: R_parent p_loc),
// cpos (3), cipos (3), cinert, crb, cfrc (6), the articulated-body quantities IA (36), pA (6), U (18), Dinv (9), u (3),
// c (6), crb_dot (36: the composite inertias' rate, centroidal.momentum_matrix_dot), subtree_moment (3: sum over the
// subtree of m (cpos + R ipos), support.h's com_jacobian); per dof cdof, cdof_dot (6); cvel, cacc (nlink + 1, 6: the
// world last); qM (nv, nv); qL, qLinv: M's factor on its sparse layout and the reciprocals of its diagonal
// (forward.h's tree_cholesky; MuJoCo's qLD, qLDiagInv)
template <class T> struct Data {
    Vec<T> xmat, xpos, step, cpos, cipos, cdof, cvel, cdof_dot, cacc, cfrc, qM, qL, qLinv, IA, pA, U, Dinv, u, c,
        crb_dot, subtree_moment;
    // the tendons (cpp/tendon.h; MuJoCo's ten_length, ten_J dense): ten_length (ntendon), ten_J (ntendon, nv); with a
    // spatial tendon or a site also the bodies' MuJoCo-order frames body_xpos (nbody, 3), body_xquat (4), body_xmat (9)
    // and two point Jacobians (6, nv each) in ten_jac
    Vec<T> ten_length, ten_J, body_xpos, body_xquat, body_xmat, ten_jac;
    bool body_posed = false;             // a lane's copy: body_x* hold its state's frames (constrained_solve's), detect's
    Vec<Inertia<T>> cinert, crb;
    // links from a tree's root to one link (smooth.h): a plain array, not a std::vector<int64_t>, whose out-of-line
    // members every kernel unit would emit under one name (scripts/check_isa_symbols.sh)
    std::unique_ptr<int64_t[]> path;
    Data() = default;                                                   // empty: a lane's copy of the velocity stages alone
    explicit Data(const Model &m) {
        size_t L = size_t(m.nlink), V = size_t(m.nv);
        xmat.resize(9 * L), xpos.resize(3 * L), step.resize(3 * L), cpos.resize(3 * L), cipos.resize(3 * L);
        cdof.resize(6 * V), cvel.resize(6 * (L + 1)), cdof_dot.resize(6 * V), cacc.resize(6 * (L + 1)), cfrc.resize(6 * L);
        qL.resize(size_t(tree_nnz(m))), qLinv.resize(V);               // qM (nv x nv) made by forward_dynamics
        IA.resize(36 * L), pA.resize(6 * L), U.resize(18 * L), Dinv.resize(9 * L), u.resize(3 * L);
        c.resize(6 * L), crb_dot.resize(36 * L), subtree_moment.resize(3 * L);
        cinert.resize(L), crb.resize(L), path.reset(new int64_t[L]());
        ten_length.resize(size_t(m.ntendon)), ten_J.resize(size_t(m.ntendon) * V);
        if (m.tendon_spatial || m.nsite) {                               // spatial tendons' and sites' frames
            size_t B = size_t(m.nbody);
            body_xpos.resize(3 * B), body_xquat.resize(4 * B), body_xmat.resize(9 * B), ten_jac.resize(12 * V);
        }
    }
    // a link's row of cvel and cacc; the world's (the last row) for i = -1
    T *vel(int64_t i) { return cvel.data() + 6 * (i < 0 ? cvel.size() / 6 - 1 : size_t(i)); }
    T *acc(int64_t i) { return cacc.data() + 6 * (i < 0 ? cacc.size() / 6 - 1 : size_t(i)); }
};

// the derivatives' buffers besides Data: 2 Bc per link (6x6), and u, w, psi, P = Ic_k S_k, Q = (2 Bc_k)^T S_k, G, H,
// Bu = 2 Bc_k u_k per dof (6 each); for forward dynamics also qdd, c, M's Cholesky factor L (nv, nv) and X (nv, 3 nv)
template <class T> struct DerivData {
    Vec<T> B2, u, w, psi, P, Q, G, H, Bu, qdd, c, L, X;
    explicit DerivData(const Model &m) {
        size_t Ln = size_t(m.nlink), V = size_t(m.nv);
        B2.resize(36 * Ln);
        for (auto *x : {&u, &w, &psi, &P, &Q, &G, &H, &Bu}) x->resize(6 * V);
        qdd.resize(V), c.resize(V), L.resize(V * V), X.resize(3 * V * V);
    }
};

// what a batch call of cpp/kernels.h runs on: Data, the derivatives' buffers (made on the first derivatives call), and
// for lanes the states gathered side by side (x: the inputs, nq + 2 nv, or constraint_smooth's q, qd, c, M and M on the
// tree's pattern; o: the outputs, up to 3 nv^2)
template <class T> struct Work {
    Data<T> d;
    std::vector<DerivData<T>> deriv;                                    // empty until a derivatives call
    Vec<T> x, o;
    explicit Work(const Model &m) : d(m) {}
};

// the actuators' arms at one state when some depend on the configuration (Actuators::posed; actuation.h's transmission,
// one state at a time): MuJoCo's actuator_length (nu) and actuator_moment (nu, nv, dense), and what they are computed
// with: the sites' frames site_xpos (nsite, 3), site_xquat (4), site_xmat (9), four point Jacobians (6, nv each) in
// jac, and which dofs move a site's body (chain, nv: 1 the first site's, 2 both sites')
struct Transmission {
    std::vector<double> length, moment, site_xpos, site_xquat, site_xmat, jac;
    std::vector<char> chain;
    void resize(const Model &m, int nu) {
        size_t S = size_t(m.nsite), V = size_t(m.nv);
        length.resize(size_t(nu)), moment.resize(size_t(nu) * V), jac.resize(24 * V), chain.resize(V);
        site_xpos.resize(3 * S), site_xquat.resize(4 * S), site_xmat.resize(9 * S);
    }
};

// the inputs of one simulation step: clamped ctrl (nu), qfrc_applied (nv), xfrc_applied (nbody, 6); the activations
// act (na) the forces read (MuJoCo's d.act: the state's, an RK4 stage's; the next ones after a step), their rate act_dot
// (na) and each actuator's d force / d velocity slope (nu) as the last evaluation left them, with its arms (trn: when
// some depend on the configuration); h [s] for actearly
template <class T> struct StepInputs {
    Vec<T> u, qfrc, xfrc, act, act_dot, slope, raw;                   // raw: the forces before their limits (nu)
    Transmission trn;
    bool has_qfrc = false, has_xfrc = false;
    bool energy = true;                                                 // the start state's energy (mjENBL_ENERGY)
    double h = 0;
};

// the buffers of one trajectory's (or one lane block's) steps: M on the tree's pattern (tree_nnz, MuJoCo's qM: never
// nv x nv), Mv (nv) a product with it
template <class T> struct SimData {
    Data<T> d;
    StepInputs<T> x;
    Vec<T> M, D, Mdense, f, tmp, force, a, rhs, qfrc, qi, qdi, dq, dqd, kv, stage_a, qdp, qdm, cp, cm, q, qd, qn, qdn,
        free_M, Mv;
    Vec<T> act0, act_sum;                                              // RK4: the step's first activations, sum of b act_dot
    std::vector<double> stiffness;                                      // discrete: K (nv), the joints' spring stiffness
    std::vector<double> bare_diag;                                      // discrete with constraints: M's diagonal (nv)
    std::vector<char> row_dofs;                                         // discrete with constraints: the dofs rows move (nv)
    // discrete with tendon or actuator terms in its metric (forward.h's coupling_terms), made at their first use: their
    // B and K (nv, nv), K qd (nv), the dofs they reach (nv), the conjugate gradients' vectors (nv each)
    std::vector<double> Bc, Kc, kq, cg_r, cg_z, cg_p, cg_Ap;
    std::vector<char> coupled;
    // discrete: the relative residual |r| / |b| at which metric_pcg stopped at its iteration cap in the last step (MuJoCo's
    // mjWARN_INERTIA), or -1 (it met its tolerance, or did not run); the caller resets it before each step
    double pcg_capped = -1.0;
    SimData(const Model &m, const Actuators &act) : d(m) {
        size_t V = size_t(m.nv), Qn = size_t(m.nq);
        x.u.resize(size_t(act.nu)), x.qfrc.resize(V), x.xfrc.resize(6 * size_t(m.nbody)), x.slope.resize(size_t(act.nu));
        x.raw.resize(size_t(act.nu));
        for (auto *v : {&x.act, &x.act_dot, &act0, &act_sum}) v->resize(size_t(act.na));
        free_M.resize(36 * size_t(m.nfree));
        stiffness.resize(size_t(m.nv)), bare_diag.resize(size_t(m.nv)), row_dofs.resize(size_t(m.nv));
        M.resize(size_t(tree_nnz(m)));
        for (auto *v : {&Mv, &f, &tmp, &a, &rhs, &qfrc, &qdi, &dq, &dqd, &kv, &stage_a, &qdp, &qdm, &cp, &cm, &qd, &qdn}) v->resize(V);
        for (auto *v : {&qi, &q, &qn}) v->resize(Qn);
        force.resize(size_t(act.nu));
        if (act.posed) x.trn.resize(m, act.nu);
    }
    // D (nv, nv), the velocity-derivative matrix of the implicit and discrete integrators, made at its first use (euler
    // and rk4 never hold it)
    T *velocity_matrix(const Model &m) {
        if (D.empty()) D.resize(size_t(m.nv) * size_t(m.nv));
        return D.data();
    }
    // the implicit integrator's M - h D (nv, nv), dense for its LU, made at its first use
    T *dense_matrix(const Model &m) {
        if (Mdense.empty()) Mdense.resize(size_t(m.nv) * size_t(m.nv));
        return Mdense.data();
    }
};

// an input of a batch call: state s's entries at data + s * stride, contiguous (stride 0: one state for the whole batch)
struct Input {
    const double *data;
    int64_t stride;
};

// one call of the range kernel (cpp/kernels.h): the operation, its state inputs (entries per state each), its other
// arguments (a step h [s], a link, a point (3) in it), and its outputs (entries per state each)
struct Call {
    int op = 0, nin = 0, nout = 0;
    Input in[3] = {};
    int64_t in_size[3] = {0, 0, 0};
    double h = 0;
    int64_t link = 0;
    const double *point = nullptr;
    double *out[3] = {nullptr, nullptr, nullptr};
    int64_t out_size[3] = {0, 0, 0};
};

// a per-step input of a rollout, (trajectory, step, entry) with strides in doubles (0 along a broadcast axis)
struct Series {
    const double *data = nullptr;                                       // null: no such input
    int64_t trajectory = 0, step = 0, entry = 1;
};

enum Integrator { EULER = 0, RK4 = 1, IMPLICIT = 2, IMPLICITFAST = 3, DISCRETE = 4 };

// how a step advances (physai.engine.data.StepOptions, read by field name in cpp/bindings.cpp): the timestep h [s],
// the integrator, and whether euler's joint damping is implicit ((M + h B) a = f; euler_damping and damping in the model)
struct StepOptions {
    double h = 0;
    int integrator = EULER;
    bool implicit_damping = false;
    // discrete: the tendons' and actuators' terms left out of the metric, their forces explicit (the PGS solver:
    // forward.explicit_couplings); else its smooth solve with them by conjugate gradients to the model's tolerance,
    // at most `iterations` (solver.metric_pcg)
    bool explicit_couplings = false;
    double tolerance = 1e-8;
    int64_t iterations = 100;
};

// a rollout's arguments: N trajectories of `steps` steps into Q (N, steps+1, nq), QD (N, steps+1, nv), E (N, steps+1),
// each from its row 0; status (N): RERUN (not done yet: the scalar kernel runs it), -1 (done), or the step at which the
// trajectory stopped, with the Status that stopped it in failure (N): DIVERGED, ZERO_QUATERNION or SINGULAR
struct Rollout {
    StepOptions opt;
    int64_t steps = 0;
    bool with_energy = false, constrained = false;                     // constrained: cpp/simulate.h's loop
    Series ctrl, qfrc, xfrc;
    double *Q = nullptr, *QD = nullptr, *E = nullptr;
    int64_t *status = nullptr;
    int64_t *ncon = nullptr, *near = nullptr;      // constrained: contacts per step (N, steps); a left-out pair near (N)
    const double *warm_in = nullptr;               // constrained: each trajectory's first warm start (N, nv), or zero
    double *warm_out = nullptr;                    // constrained: its last solve's qacc (N, nv)
    double *A = nullptr;                           // the activations (N, steps+1, na), each from its row 0
    int64_t *resume = nullptr;                     // constrained: the step each trajectory's scalar run starts from (N;
                                                   // the lanes took the steps before it without rows), or null: 0
    int *failure = nullptr;
    const std::atomic<bool> *stop = nullptr;                           // set: stop at the next step (the run is discarded)
    double *observe = nullptr;                     // constrained: each trajectory's observed fields at its last step (N, W: cpp/observe.h)
    const double *observe_body = nullptr;          // their body constants (nbody, 13: mass, ipos, inertia), or null
    int64_t *capped = nullptr;                     // the first step whose discrete smooth solve (metric_pcg) stopped at
    double *capped_residual = nullptr;             // its iteration cap (N; -1: none), its relative residual (N), or null
    const int64_t *frames = nullptr;               // constrained: each trajectory's steps (N: 0 or steps), or null (all
                                                   // steps); 0: no step, the forward pass at its row 0 alone (forward_one)
};
constexpr int64_t RERUN = -3;

// the constrained step's terms of one state (physai.derivatives._Constraints.terms: the solve and the rows' q-derivatives
// done), read in place: the solver's qacc and qfrc_constraint (nv each); the optimum's rows (nefc: J (nefc, nv), D, aref,
// B, K, imp, impP, pos, margin, their states and forces (_optimum_forces)); the rows whose dG/dq is analytic (rows
// (nrows), dJ (nrows - plane_rows, nv, nv), dpos (nrows - plane_rows, nv): _analytic_rows, but the plane_rows rows from
// rows[plane_at] on, those of nplane plane contacts whose terms the step takes (plane_forces; each one's body,
// origin (3), frame (9), pos (3), dist, friction (5), radius, dim, axis (3): _plane_arrays; turns (nv, nv): Model.
// dof_turns)); the others' J and forces at `points` points along each
// moving dof (moving (nmoving), Jpts (nmoving points, nefc, nv), fpts (nmoving points, nefc): _held_forces), their
// weights (points) over step; daref/dqd (nefc, nv); the cones' Hessians (ncone: first row, dim, then (dim, dim) each
// concatenated); stiff: _hessian_solve's range-space branch may run
struct ConstrainedTerms {
    int64_t nefc = 0, nrows = 0, nmoving = 0, points = 0, ncone = 0;
    bool stiff = false;
    double step = 1.0;
    const double *a_c = nullptr, *qfrc = nullptr, *J = nullptr, *D = nullptr, *aref = nullptr, *B = nullptr, *K = nullptr;
    const double *imp = nullptr, *impP = nullptr, *pos = nullptr, *margin = nullptr, *force = nullptr;
    const int64_t *state = nullptr, *rows = nullptr, *moving = nullptr, *cone_first = nullptr, *cone_dim = nullptr;
    const double *dJ = nullptr, *dpos = nullptr, *Jpts = nullptr, *fpts = nullptr, *weights = nullptr, *daref = nullptr;
    const double *cone_H = nullptr;
    int64_t nplane = 0, plane_at = 0, plane_rows = 0;
    const int64_t *plane_body = nullptr, *plane_dim = nullptr;
    const double *plane_origin = nullptr, *plane_frame = nullptr, *plane_pos = nullptr, *plane_dist = nullptr;
    const double *plane_friction = nullptr, *plane_radius = nullptr, *plane_axis = nullptr, *turns = nullptr;
    const int *support = nullptr, *support_at = nullptr;               // the given rows' dofs (row i's from support_at[i]
                                                                       // to [i + 1]: dJ and dpos zero off them), or
                                                                       // null (the step scans dJ and dpos for them)
    int64_t nanchor = 0;                                               // the connect and weld rows (_anchor_rows):
    const int64_t *anchored = nullptr;                                 // dJ/dq (nanchor, nv, nv), d(Jdot qd)/dq and
    const double *anchor_dJ = nullptr, *anchor_dbias = nullptr, *anchor_dgap = nullptr;   // d|pos|/dq (nanchor, nv)
};

// a call of step_derivatives (cpp/step_derivative.h) on N states: q, qd, ctrl (nu: as given) and qfrc_applied (nv, data null:
// none) per state, the step h [s], the integrator and whether euler's damping is implicit; the results per state A (2 nv,
// 2 nv), B (2 nv, nu) and its Status (a state that failed is left for the NumPy text to name); constrained: one state's
// constrained terms (euler, implicit, implicitfast), or null (the smooth step)
struct StepDerivativeCall {
    Input q{}, qd{}, ctrl{}, qfrc{};
    StepOptions opt;
    const ConstrainedTerms *constrained = nullptr;
    double *A = nullptr, *B = nullptr;
    int64_t *status = nullptr;
};

// the constrained accelerations of a simulation with constraints (cpp/simulate.h; null: the smooth dynamics): at (q,
// qd), with the velocity stages in d and M and f from evaluate, the solver's qacc and qfrc_constraint (nv each; qfrc
// null: a step that reads qacc alone, qfrc_constraint not formed); the warm start kept in ctx is replaced by qacc when
// update_warm (the last stage of a step); a Status
// the discrete step's part of a constrained solve (forward.discrete): its h [s], M's diagonal before M + h B + h^2 K
// (nv; M itself is the step's factored metric then), out the dofs the rows move (nv); the tendons' and actuators' terms
// C = h Bc + h^2 Kc of the metric (nv x nv, dense; null: none) and out the relative residual of a smooth solve in it
// that stopped at its iteration cap (left as it is when none did)
struct DiscreteSolve {
    double h = 0;
    const double *bare_diag = nullptr;
    char *row_dofs = nullptr;
    const double *coupling = nullptr;
    double *capped = nullptr;
};

// accel's factor: null, or M's factor on the tree's pattern already made (tree_nnz numbers of L, then the nv reciprocals
// of its diagonal: tree_cholesky's), which the solve then reads instead of factoring M again
struct Constrain {
    void *ctx = nullptr;
    int (*accel)(void *ctx, const Data<double> &d, const double *q, const double *qd, const double *M, const double *f,
                 double *qacc, double *qfrc, bool update_warm, const DiscreteSolve *discrete,
                 const double *factor) = nullptr;
    void (*stepped)(void *ctx, int64_t n, int64_t k) = nullptr;        // after step k of trajectory n: its records
    void (*settle)(void *ctx, const double *qacc) = nullptr;          // the step's final qacc (nv): warm start, d.qacc
    // the lanes' solves in three parts (null: accel alone): begin, accel's arguments, may leave a PGS solve set up
    // (PGS_PENDING, no discrete step); together runs the pending solves of count contexts at once; finish ends one
    // (qacc, qfrc and the warm start as accel's): the same numbers as accel
    int (*begin)(void *ctx, const Data<double> &d, const double *q, const double *qd, const double *M, const double *f,
                 double *qacc, double *qfrc, bool update_warm, const DiscreteSolve *discrete,
                 const double *factor) = nullptr;
    void (*together)(void *const *ctx, int count) = nullptr;
    int (*finish)(void *ctx, const Data<double> &d, const double *q, const double *qd, double *qacc, double *qfrc,
                  bool update_warm) = nullptr;
};
// Constrain::begin's status when its PGS solve waits for together and finish (never a kernel's result)
constexpr int PGS_PENDING = -2;

// the constrained solves of a block of lanes (the laned steppers' Constrain, cpp/forward.h's constrained_solve): lane
// l's Constrain (its trajectory's context) for l < count, the lanes past count repeating lane count - 1's result; and
// each of the count lanes' copies of its velocity stages (d: the fields the rows and the observed fields read alone,
// sized as constrained_solve fills them), state, M (nM: the tree's pattern), f and M's factor (state l's at l times the
// size), which the rows and the solver read one state at a time (workspace: the lanes' numbers gathered per lane, not
// another computation). Made empty and owned by the scalar kernels (cpp/simulate.h), sized (fit) and filled by the
// lanes'. When the rollout observes (one non-null): a lane's applied body forces and actuator forces into one->x.xfrc
// and one->force before its solve (the observed fields read them there), and at the block's end each lane's last RK4
// stage sum into dqd (count, nv: observe_end's qacc)
struct LaneConstrain {
    const Constrain *lane = nullptr;
    int64_t count = 0;
    SimData<double> *one = nullptr;
    mutable std::vector<Data<double>> d;
    mutable std::vector<double> q, qd, M, f, qacc, qfrc, dqd, factor;
    // room for count lanes' copies (grown only: the workspace is kept from block to block and rollout to rollout)
    void fit(const Model &m) const {
        if (d.size() >= size_t(count)) return;
        size_t n = size_t(count), nq = size_t(m.nq), nv = size_t(m.nv), nM = size_t(tree_nnz(m));
        d.resize(n);
        q.resize(n * nq), qd.resize(n * nv), M.resize(n * nM), f.resize(n * nv), dqd.resize(n * nv);
        factor.resize(n * (nM + nv)), qacc.resize(nv), qfrc.resize(nv);
    }
};

// contacts (physai.engine.contact.ContactSet.packed(), n of them): per contact CONTACT_FLOATS doubles, the point (3),
// frame (3 x 3, rows), dist, includemargin, friction (5), solref, solreffriction (2 each) and solimp (5), and
// CONTACT_INTS integers, dim, body1 and body2 (physai's bodies, -1 the world)
constexpr int64_t CONTACT_FLOATS = 28, CONTACT_INTS = 3;
struct Contacts {
    int64_t n = 0;
    const double *f = nullptr;
    const int64_t *i = nullptr;
    const double *pos(int64_t c) const { return f + CONTACT_FLOATS * c; }
    const double *frame(int64_t c) const { return f + CONTACT_FLOATS * c + 3; }
    double dist(int64_t c) const { return f[CONTACT_FLOATS * c + 12]; }
    double includemargin(int64_t c) const { return f[CONTACT_FLOATS * c + 13]; }
    const double *friction(int64_t c) const { return f + CONTACT_FLOATS * c + 14; }
    const double *solref(int64_t c) const { return f + CONTACT_FLOATS * c + 19; }
    const double *solreffriction(int64_t c) const { return f + CONTACT_FLOATS * c + 21; }
    const double *solimp(int64_t c) const { return f + CONTACT_FLOATS * c + 23; }
    int64_t dim(int64_t c) const { return i[CONTACT_INTS * c]; }
    int64_t body1(int64_t c) const { return i[CONTACT_INTS * c + 1]; }
    int64_t body2(int64_t c) const { return i[CONTACT_INTS * c + 2]; }
};

// a call of the constraint kernels (cpp/inverse.h) on N states: q, qd and x (forward: tau; inverse: qacc) per state;
// the contacts: each state's set (sets[s]), one set for every state (one in sets) or none (sets empty); eq_active (neq)
// or null (the model's eq_active0); forward's warm start (warm.data null: none), tolerance and iterations; and the
// results per state: forward qacc, qfrc (J^T efc_force), iterations, improvement, converged; inverse tau, qfrc (null
// for the rows alone); forward's rows with own_force: the solver's efc_force with them (no update at its qacc, no
// states or cones)
struct Kernels;
// forward on a discrete model's states (inverse.h's discrete_forward_state): the step's options, its actuators, the
// ctrl every state shares (a one-step Rollout's series: inputs.ctrl) and act (na; null: zeros); out: capped (N), each
// state's relative residual where its smooth solve in the coupled metric stopped at its iteration cap (-1: none)
struct DiscreteCall {
    StepOptions opt;
    const Actuators *act = nullptr;
    Rollout inputs;
    const double *act_in = nullptr;
    double *capped = nullptr;
};

struct ConstraintCall {
    int op = 0;
    const Kernels *lanes = nullptr;                                    // the smooth stages of blocks of states (or none)
    Input q{}, qd{}, x{}, warm{};
    std::vector<Contacts> sets;
    const bool *eq_active = nullptr;
    double tolerance = 0;
    int64_t iterations = 0;
    bool rows = true;                                                  // forward, inverse: return each state's rows
    bool balanced = false;                                             // forward: qfrc_constraint as (M - h D) steps take it
    bool own_force = false;                                            // forward's rows: efc_force the solver's
    const DiscreteCall *discrete = nullptr;                            // forward: a discrete model's step map (or null)
    // forward: the smooth force made here from the actuators (or null: x is tau), the states' controls (nu each, as given)
    // and applied forces (nv each, or none): f = passive - c + actuator + applied, tau = f + c (derivatives' front, the
    // compiled branch of forward.DynamicsEvaluator.evaluate); f and M (nv x nv) of each state into f_out and M_out
    const Actuators *front = nullptr;
    Input ctrl{}, applied{};
    double *f_out = nullptr, *M_out = nullptr;
    double *qacc = nullptr, *qfrc = nullptr, *tau = nullptr, *improvement = nullptr;
    int64_t *iters = nullptr;
    bool *converged = nullptr;
};

// the smooth quantities of one state that its constraint rows and solver read (Kernels::constraint_smooth writes them,
// inverse.h's constraint_state reads them), one after another: xmat (9 nlink), xpos (3 nlink), cdof and cdof_dot
// (6 nv each), cvel (6 (nlink + 1)), M on the tree's pattern (Mt) and its factor (qL) (tree_nnz each), the factor's
// reciprocal diagonal (qLinv, nv) and the bias forces c (nv)
namespace {
struct SmoothLayout {
    size_t xmat, xpos, cdof, cdof_dot, cvel, Mt, qL, qLinv, c, size;
    explicit SmoothLayout(const Model &m) {
        size_t L = size_t(m.nlink), V = size_t(m.nv), nM = size_t(tree_nnz(m));
        xmat = 0, xpos = xmat + 9 * L, cdof = xpos + 3 * L, cdof_dot = cdof + 6 * V, cvel = cdof_dot + 6 * V;
        Mt = cvel + 6 * (L + 1), qL = Mt + nM, qLinv = qL + nM, c = qLinv + V, size = c + V;
    }
};
}  // namespace

// the rows of consecutive states, appended state by state (a thread's range of a call; the bindings concatenate them):
// per state its sizes (nefc, ne, nf, nl, nc: ROW_SIZES each), per row MuJoCo's efc_* arrays (J nefc x nv) and the force
// (forward, inverse), per contact the regularised cone's mu and its first row (-1: none); forward and inverse with
// their rows: each row's state, and forward's the contacts on their cone (per state their number, per cone its first
// row, dim and Hessian, dim x dim)
constexpr int ROW_SIZES = 5;
// RowsOut's fields, the one list of them (X(element type, name) each): the struct declares and clear() empties what
// it lists, so a field added here is emptied too (a field missed there piled up across calls on kept buffers)
#define PHYSAI_ROWS_OUT_FIELDS(X)                                                                                      \
    X(int64_t, sizes) X(int64_t, type) X(int64_t, id) X(int64_t, contact_row) X(int64_t, state) X(int64_t, ncone)      \
    X(int64_t, cone_first) X(int64_t, cone_dim) X(double, J) X(double, pos) X(double, margin) X(double, frictionloss)  \
    X(double, diagA) X(double, R) X(double, D) X(double, K) X(double, B) X(double, imp) X(double, impP)                \
    X(double, vel) X(double, aref) X(double, force) X(double, contact_mu) X(double, cone_H)
struct RowsOut {
#define PHYSAI_DECLARE(T, name) std::vector<T> name;
    PHYSAI_ROWS_OUT_FIELDS(PHYSAI_DECLARE)
#undef PHYSAI_DECLARE
    // every field emptied, its buffer kept
    void clear() {
#define PHYSAI_CLEAR(T, name) name.clear();
        PHYSAI_ROWS_OUT_FIELDS(PHYSAI_CLEAR)
#undef PHYSAI_CLEAR
    }
};
#undef PHYSAI_ROWS_OUT_FIELDS

}  // namespace physai
