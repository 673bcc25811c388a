// Simulation with constraints (src/physai/integrators.py's Dynamics.acceleration, constraints=True) with the loop
// compiled: each evaluation of the dynamics detects the contacts at its q (cpp/collision.h), builds the constraint rows
// (cpp/constraint.h) and solves them by Newton's method from the last solve's qacc (cpp/solver.h); cpp/forward.h's
// steppers then step with the solver's qacc, or with f + qfrc_constraint in their own metric. One trajectory at a time
// (double), on threads over trajectories; compiled into the scalar translation unit only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "constraint.h"
#include "kernels.h"
#include "observe.h"
#include "rollout.h"
#include "solver.h"

namespace physai {
namespace {

// a trajectory's constraint context: the workspace, the warm start (zero at the start, as a new MjData's), the
// discrete step's metric's diagonal (nv), the contacts of the step's first evaluation (-1 before it), the first
// left-out geom pair that may touch (-1: none), the step being taken and the one observed (its last evaluation); a
// forward_dynamics call's given contacts (null: detected at q), eq_active (null: the model's), tolerance and iterations
// (the model's), and the last solve's Solution
struct ConstrainedRun {
    const Model &m;
    const Rollout *r = nullptr;
    ConstraintWork c;
    std::vector<double> warm, diag, qfrc;                 // qfrc: qfrc_constraint for the observed fields when not asked
    int64_t ncon = -1, near = -1, step = 0, observed = 0;
    Observe obs;                                   // the observed fields (Rollout::observe): obs.out null when not asked
    const Actuators *act = nullptr;                // the step's actuators and workspace (their forces, xfrc_applied)
    const SimData<double> *w = nullptr;
    const Contacts *given = nullptr;
    const bool *eq_active = nullptr;
    double tolerance;
    int64_t iterations;
    Solution sol;
    explicit ConstrainedRun(const Model &model)
        : m(model), c(model), warm(size_t(model.nv), 0.0), diag(size_t(model.nv)), qfrc(size_t(model.nv)), obs(model),
          tolerance(model.opt_tolerance), iterations(model.opt_iterations) {}
};

// the observed fields of the evaluation that just solved (its state q, qd in stages; the step's last evaluation ends
// with them): all but cacc and cfrc_int, which need the new velocity (observe_end)
inline void observe_accel(ConstrainedRun &s, const Data<double> &stages, const double *q, const double *qd,
                          const double *qacc, const double *qfrc) {
    const Model &m = s.m;
    Observe &o = s.obs;
    com_bodies(m, o, q);
    for (int64_t k = 0; k < m.nsite; k++) {                            // site_xpos = xpos + R site_pos
        int64_t b = m.site_bodyid[k] + 1;
        double *x = o.out + o.off.site_xpos + 3 * k;
        mat3_times(&o.xmat[size_t(9 * b)], m.site_pos + 3 * k, x);
        for (int a = 0; a < 3; a++) x[a] += o.out[o.off.xpos + 3 * b + a];
    }
    body_velocities(m, o, stages);
    body_external_forces(m, o, s.w->x.has_xfrc ? s.w->x.xfrc.data() : nullptr, s.c.r, s.c.force.data());
    actuator_joint_force(m, *s.act, s.w->x, s.w->force.data(), o.out + o.off.qfrc_actuator);
    std::copy(qfrc, qfrc + m.nv, o.out + o.off.qfrc_constraint);
    std::copy(qacc, qacc + m.nv, o.out + o.off.qacc);
    for (int64_t t = 0; t < m.ntendon; t++) {                          // ten_length; ten_velocity = ten_J qd (mj_tendon)
        const double *J = stages.ten_J.data() + t * m.nv;
        double v = 0.0;
        for (int j = 0; j < m.nv; j++) v += J[j] * qd[j];
        o.out[o.off.ten_length + t] = stages.ten_length[size_t(t)], o.out[o.off.ten_velocity + t] = v;
    }
}

// the step's end: cacc and cfrc_int with the new velocity qd; RK4's qacc is its stages' weighted sum (w.dqd), as
// MuJoCo 4's d.qacc (stages_sum: RK4's step, not forward_one's evaluation); a trajectory that stopped: its row NaN
inline void observe_end(ConstrainedRun &s, const Rollout &r, int64_t n, bool ok, bool stages_sum = true) {
    const Model &m = s.m;
    Observe &o = s.obs;
    if (!ok) {
        std::fill(o.out, o.out + o.off.W, std::nan(""));
        return;
    }
    double *qacc = o.out + o.off.qacc;
    if (r.opt.integrator == RK4 && stages_sum) std::copy(s.w->dqd.begin(), s.w->dqd.end(), qacc);
    rne_post_constraint(m, o, r.QD + (n * (r.steps + 1) + r.steps) * m.nv, qacc);
}

// a simulation's workspace: the steppers' and the constraint context, for actuators of nu controls, na activations and
// arms of the configuration or not (posed: the state's arms), and the model as it was (with its constraint part or not:
// the contexts' sizes)
struct ConstrainedSim {
    SimData<double> w;
    ConstrainedRun run;
    std::vector<std::unique_ptr<ConstrainedRun>> lanes;   // a block of lanes' trajectories' contexts, made at first use
    LaneConstrain lane_solve;                             // and their solves' workspace (sized at first use)
    int nu, na;
    bool posed, with_constraints;
    ConstrainedSim(const Model &m, const Actuators &act)
        : w(m, act), run(m), nu(act.nu), na(act.na), posed(act.posed), with_constraints(m.has_constraints) {}
    bool fits(const Model &m, const Actuators &act) const {
        return nu == act.nu && na == act.na && posed == act.posed && with_constraints == m.has_constraints;
    }
};

// the rows of a solve at (q, qd) into s.c.r (constrained_accel's): the contacts at q (or the given ones), the velocity
// stages evaluate left in stages; discrete: in the step's metric M (+ discrete->coupling) at the end of its step, the
// dofs they move into discrete->row_dofs; J dense too when dense (else its compressed rows alone)
inline void solve_rows(ConstrainedRun &s, const Data<double> &stages, const double *q, const double *qd, const double *M,
                       const DiscreteSolve *discrete, bool dense = false) {
    const Model &m = s.m;
    int nv = m.nv;
    const Data<double> *posed = stages.body_posed ? &stages : nullptr;       // the lanes' body frames at q
    Contacts con = s.given ? *s.given                                 // a left-out pair near: once per trajectory
                           : detect(m, s.c.col, q, s.near < 0, nullptr, -1, posed);
    if (s.ncon < 0) s.ncon = con.n;
    if (s.near < 0 && !s.given) s.near = s.c.col.near_missing;
    s.c.stages = &stages;                                            // evaluate's velocity stages, not again
    const double *C = discrete ? discrete->coupling : nullptr;       // the metric's tendon and actuator terms
    if (discrete) {                                                  // the rows' step diagonal: M^'s
        for (int j = 0; j < nv; j++) s.diag[size_t(j)] = tree_diagonal(m, M, j) + (C ? C[size_t(j) * nv + j] : 0.0);
        rows(m, s.c, q, qd, con, s.eq_active, dense, discrete->h, discrete->bare_diag, s.diag.data());
    } else
        rows(m, s.c, q, qd, con, s.eq_active, dense);
    s.c.stages = nullptr;
    if (discrete) row_dofs(s.c.r, discrete->row_dofs);
}

// constrained_accel after its solve: qacc, qfrc (discrete: J^T force, else balanced_constraint_force; qfrc null: not
// asked, formed in s.qfrc for the observed fields alone), the warm start and the observed fields
inline int constrained_end(ConstrainedRun &s, const Data<double> &stages, const double *q, const double *qd, double *qacc,
                           double *qfrc, bool update_warm, bool discrete) {
    std::copy(s.c.qacc.begin(), s.c.qacc.end(), qacc);
    const bool observed = s.obs.out && update_warm && s.step == s.observed;   // the last step's last evaluation
    if (!qfrc && observed) qfrc = s.qfrc.data();
    if (qfrc && discrete) rows_transpose_times(s.c.r, s.c.force.data(), qfrc);
    else if (qfrc) balanced_constraint_force(s.m, s.c, qfrc);          // what (M - h D) a = f + qfrc integrates
    if (update_warm) std::copy(qacc, qacc + s.m.nv, s.warm.begin());
    if (observed) observe_accel(s, stages, q, qd, qacc, qfrc);        // once (the rollout keeps the last step's)
    return OK;
}

// Constrain::accel: the rows at (q, qd) (solve_rows), Newton's method on M a = f + J^T efc_force from the warm
// start; qacc and qfrc_constraint = J^T efc_force out; M on the tree's pattern (the steppers', cpp/forward.h); discrete:
// M the discrete step's metric, the rows at the end of its step, the dofs they move into discrete->row_dofs; factor:
// M's factor already made (the lanes', Constrain's), else M factored here
inline int constrained_accel(void *ctx, const Data<double> &stages, const double *q, const double *qd, const double *M,
                             const double *f, double *qacc, double *qfrc, bool update_warm, const DiscreteSolve *discrete,
                             const double *factor) {
    ConstrainedRun &s = *static_cast<ConstrainedRun *>(ctx);
    const Model &m = s.m;
    int nv = m.nv;
    solve_rows(s, stages, q, qd, M, discrete);
    const double *C = discrete ? discrete->coupling : nullptr;       // the metric's tendon and actuator terms
    std::copy(f, f + nv, s.c.qfrc_smooth.begin());
    Model ms = m;                                                    // M^ with its couplings: m, or every dof's chain
    s.c.coupled = false, s.c.coupling = nullptr, s.c.pcg_capped = -1.0;
    if (C) {
        if (!metric_model(m, s.c, M, C, ms)) return SINGULAR;
    } else {
        std::copy(M, M + tree_nnz(m), s.c.Mt.begin());               // M and its factor where the solvers read them
    }
    if (factor) {                                                    // the lanes' factor of the same M
        std::copy(factor, factor + tree_nnz(m), s.c.d.qL.begin());
        std::copy(factor + tree_nnz(m), factor + tree_nnz(m) + nv, s.c.d.qLinv.begin());
    } else if (!factor_mass(ms, s.c)) {
        return SINGULAR;
    }
    int st = solve_with(ms, s.c, nullptr, s.warm.data(), s.tolerance, s.iterations, s.sol,
                        discrete ? discrete->bare_diag : nullptr);    // discrete: the mass matrix scales the tolerances
    s.c.coupled = false, s.c.coupling = nullptr;
    if (C && s.c.pcg_capped >= 0.0) *discrete->capped = s.c.pcg_capped;
    if (st != OK) return st;                                         // PGS_PENDING too: constrained_finish's
    return constrained_end(s, stages, q, qd, qacc, qfrc, update_warm, discrete != nullptr);
}

// Constrain::begin: constrained_accel with a PGS solve on all rows (no discrete step, no noslip) left set up in s.c
// (PGS_PENDING), else constrained_accel's
inline int constrained_begin(void *ctx, const Data<double> &stages, const double *q, const double *qd, const double *M,
                             const double *f, double *qacc, double *qfrc, bool update_warm, const DiscreteSolve *discrete,
                             const double *factor) {
    ConstraintWork &w = static_cast<ConstrainedRun *>(ctx)->c;
    w.pgs_defer = discrete == nullptr;
    int st = constrained_accel(ctx, stages, q, qd, M, f, qacc, qfrc, update_warm, discrete, factor);
    w.pgs_defer = false;                                             // not left for a later solve (an early return)
    return st;
}

// Constrain::together: the pending PGS solves of count contexts' workspaces at once (pgs_together)
inline void constrained_together(void *const *ctx, int count) {
    ConstraintWork *w[BLOCK];
    for (int a = 0; a < count; a++) w[a] = &static_cast<ConstrainedRun *>(ctx[a])->c;
    pgs_together(w, count);
}

// Constrain::finish: a pending PGS solve's end (pgs_finish) and constrained_accel's after its solve (always OK)
inline int constrained_finish(void *ctx, const Data<double> &stages, const double *q, const double *qd, double *qacc,
                              double *qfrc, bool update_warm) {
    ConstrainedRun &s = *static_cast<ConstrainedRun *>(ctx);
    pgs_finish(s.m, s.c, s.sol);
    return constrained_end(s, stages, q, qd, qacc, qfrc, update_warm, false);
}

// Constrain::settle (forward.DynamicsEvaluator.settle): the step's final qacc (the discrete step's standalone free
// bodies solved again after the solve) as the next warm start and, at the last step, the observed qacc
inline void constrained_settle(void *ctx, const double *qacc) {
    ConstrainedRun &s = *static_cast<ConstrainedRun *>(ctx);
    std::copy(qacc, qacc + s.m.nv, s.warm.begin());
    if (s.obs.out && s.step == s.observed) std::copy(qacc, qacc + s.m.nv, s.obs.out + s.obs.off.qacc);
}

// Constrain::stepped: step k's contact count into the rollout's ncon (N, steps)
inline void constrained_stepped(void *ctx, int64_t n, int64_t k) {
    ConstrainedRun &s = *static_cast<ConstrainedRun *>(ctx);
    s.r->ncon[n * s.r->steps + k] = std::max<int64_t>(s.ncon, 0);       // -1: the step stopped before its solve
    s.ncon = -1, s.step = k + 1;
}

// trajectories n .. n + count - 1 of a constrained rollout, all from step k0, side by side in the constrained lanes
// (Kernels::simulate_constrained), each with its own context from r.warm_in's warm start (or zero): true when they all
// ran to the end (their statuses, near, warm_out and observed fields set), false when the lanes left them to the
// one-by-one run. Observed: sim.w holds the lane's forces the observed fields read (LaneConstrain::one)
inline bool simulate_constrained_lanes(ConstrainedSim &sim, const Model &m, const Actuators &act, const Rollout &r, int64_t n,
                                       int64_t count, int64_t k0) {
    const Kernels &lanes = constrained_lanes();
    if (!constrained_lanes_step(m, act, r.opt.integrator, count, lanes.lanes)) return false;   // before the contexts
    size_t nv = size_t(m.nv);
    Constrain con[BLOCK];
    while (sim.lanes.size() < size_t(count)) sim.lanes.push_back(std::make_unique<ConstrainedRun>(m));
    for (int64_t l = 0; l < count; l++) {
        ConstrainedRun &run = *sim.lanes[size_t(l)];
        run.r = &r, run.act = &act, run.w = &sim.w;
        run.obs.body = r.observe_body;
        run.obs.out = r.observe ? r.observe + (n + l) * run.obs.off.W : nullptr;
        if (r.warm_in) std::copy_n(r.warm_in + size_t(n + l) * nv, nv, run.warm.begin());
        else std::fill(run.warm.begin(), run.warm.end(), 0.0);
        run.ncon = run.near = -1, run.step = k0, run.observed = r.steps - 1;
        con[l] = Constrain{&run, constrained_accel, constrained_stepped, constrained_settle, constrained_begin,
                           constrained_together, constrained_finish};
    }
    LaneConstrain &solve = sim.lane_solve;
    solve.lane = con, solve.count = count, solve.one = r.observe ? &sim.w : nullptr;
    if (lanes.simulate_constrained(m, act, r, n, k0, solve) != OK) return false;
    for (int64_t l = 0; l < count; l++) {
        ConstrainedRun &run = *sim.lanes[size_t(l)];
        if (run.obs.out) {                                             // the step's end, with the lane's RK4 stage sum
            std::copy_n(solve.dqd.begin() + l * int64_t(nv), nv, sim.w.dqd.begin());
            observe_end(run, r, n + l, true);
            run.obs.out = nullptr;
        }
        r.status[n + l] = -1, r.near[n + l] = run.near;
        std::copy(run.warm.begin(), run.warm.end(), r.warm_out + size_t(n + l) * nv);
    }
    return true;
}

// trajectory n of a constrained rollout with no step (Rollout::frames 0): the forward pass at its row 0 alone, as
// forward.DynamicsEvaluator's at a reset state (an Euler step's evaluation: the contacts, the rows and the solve from
// its warm start, its observed fields when asked, then cacc and cfrc_int at that state's velocity); every row of Q, QD
// and A its row 0; its ncon row stays the start's 0 and capped -1, E is not written (step_frames asks no energy). -1, or 0 with the reason in r.failure[n] (the evaluation's status: ZERO_QUATERNION, SINGULAR, a
// solver's; DIVERGED: M or f not finite)
inline int64_t forward_one(const Model &m, const Actuators &act, SimData<double> &w, ConstrainedRun &run, const Rollout &r,
                           int64_t n, const Constrain &con) {
    int nq = m.nq, nv = m.nv, na = act.na;
    int64_t steps = r.steps;
    double *Q = r.Q + n * (steps + 1) * nq, *QD = r.QD + n * (steps + 1) * nv, *A = r.A + n * (steps + 1) * na;
    std::copy_n(A, na, w.x.act.begin());
    step_inputs(m, act, r, n, 1, 0, w.x);
    StepOptions euler_options = r.opt;
    euler_options.integrator = EULER;
    double e;
    run.step = run.observed = 0;
    int st = step(m, act, w, euler_options, Q, QD, Q + nq, QD + nv, e, &con);   // rows 1 as scratch, set again below
    if (r.warm_in) std::copy_n(r.warm_in + n * nv, nv, run.warm.begin());           // no step: the warm start as given
    else std::fill(run.warm.begin(), run.warm.end(), 0.0);
    for (int64_t k = 1; k <= steps; k++) {
        std::copy_n(Q, nq, Q + k * nq), std::copy_n(QD, nv, QD + k * nv), std::copy_n(A, na, A + k * na);
    }
    if (st == OK) return -1;
    r.failure[n] = st;
    return 0;
}

// trajectories [lo, hi) of a rollout (without constraints: simulate_one's) in sim (made for act's nu); with constraints
// in blocks of the constrained lanes (constrained_lanes, simulate_constrained_lanes), what the lanes leave one at a time from r.warm_in's warm
// start (or zero): r.status and
// r.failure as simulate_one's, the contacts of each step into r.ncon, the first left-out pair that may touch into r.near
// (-1: none), the last solve's qacc into r.warm_out
inline void simulate_constrained_in(ConstrainedSim &sim, const Model &m, const Actuators &act, const Rollout &r, int64_t lo,
                                    int64_t hi) {
    SimData<double> &w = sim.w;
    ConstrainedRun &run = sim.run;
    run.r = &r, run.act = &act, run.w = &w;
    run.obs.body = r.observe_body;
    Constrain con{&run, constrained_accel, constrained_stepped, constrained_settle};
    if (!r.constrained) {                                              // the smooth dynamics, in this workspace
        for (int64_t n = lo; n < hi; n++) r.status[n] = simulate_one(m, act, w, r, n);
        return;
    }
    size_t nv = size_t(m.nv);
    const int64_t W = constrained_lanes().lanes;
    for (int64_t n = lo; n < hi; n++) {
        if ((n - lo) % W == 0 && hi - n >= 2) {                        // a block of lanes whose runs start together
            int64_t count = std::min(W, hi - n), k0 = r.resume ? r.resume[n] : 0;
            for (int64_t l = 0; r.frames && l < count; l++)             // and take every step (forward_one's: apart)
                if (r.frames[n + l] != r.steps) count = l;
            bool together = count >= 2;
            for (int64_t l = 1; l < count; l++) together = together && (r.resume ? r.resume[n + l] : 0) == k0;
            if (together && simulate_constrained_lanes(sim, m, act, r, n, count, k0)) {
                n += count - 1;
                continue;
            }
        }
        if (r.warm_in) std::copy_n(r.warm_in + size_t(n) * nv, nv, run.warm.begin());
        else std::fill(run.warm.begin(), run.warm.end(), 0.0);
        run.ncon = run.near = -1, run.step = r.resume ? r.resume[n] : 0, run.observed = r.steps - 1;
        run.obs.out = r.observe ? r.observe + n * run.obs.off.W : nullptr;
        bool stepped = !r.frames || r.frames[n] != 0;
        r.status[n] = stepped ? simulate_one(m, act, w, r, n, &con, r.resume ? r.resume[n] : 0)
                              : forward_one(m, act, w, run, r, n, con);
        if (run.obs.out) observe_end(run, r, n, r.status[n] == -1, stepped);
        run.obs.out = nullptr;
        r.near[n] = run.near;
        std::copy(run.warm.begin(), run.warm.end(), r.warm_out + size_t(n) * nv);
    }
}

// simulate_constrained_in a workspace of its own (a thread's)
inline void simulate_constrained(const Model &m, const Actuators &act, const Rollout &r, int64_t lo, int64_t hi) {
    ConstrainedSim sim(m, act);
    simulate_constrained_in(sim, m, act, r, lo, hi);
}

}  // namespace
}  // namespace physai
