// Simulation with constraints (src/physai/integrators.py's Dynamics.acceleration, constraints=True) with the loop
// compiled: each evaluation of the dynamics detects the contacts at its q (cpp/collision.h), builds the constraint rows
// (cpp/constraint.h) and solves them by Newton's method from the last solve's qacc (cpp/solver.h); cpp/forward.h's
// steppers then step with the solver's qacc, or with f + qfrc_constraint in their own metric. One trajectory at a time
// (double), on threads over trajectories; compiled into the scalar translation unit only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "constraint.h"
#include "rollout.h"
#include "solver.h"

namespace physai {
namespace {

// a trajectory's constraint context: the workspace, the warm start (zero at the start, as a new MjData's), the
// discrete step's metric's diagonal (nv), the contacts of the step's first evaluation (-1 before it) and the first
// left-out geom pair that may touch (-1: none)
struct ConstrainedRun {
    const Model &m;
    const Rollout *r = nullptr;
    ConstraintWork c;
    std::vector<double> warm, diag;
    int64_t ncon = -1, near = -1;
    explicit ConstrainedRun(const Model &model) : m(model), c(model), warm(size_t(model.nv), 0.0), diag(size_t(model.nv)) {}
};

// a simulation's workspace: the steppers' and the constraint context, for actuators of nu controls, na activations and
// arms of the configuration or not (posed: the state's arms), and the model as it was (with its constraint part or not:
// the contexts' sizes)
struct ConstrainedSim {
    SimData<double> w;
    ConstrainedRun run;
    int nu, na;
    bool posed, with_constraints;
    ConstrainedSim(const Model &m, const Actuators &act)
        : w(m, act), run(m), nu(act.nu), na(act.na), posed(act.posed), with_constraints(m.has_constraints) {}
    bool fits(const Model &m, const Actuators &act) const {
        return nu == act.nu && na == act.na && posed == act.posed && with_constraints == m.has_constraints;
    }
};

// Constrain::accel: the contacts at q, the rows at (q, qd), Newton's method on M a = f + J^T efc_force from the warm
// start; qacc and qfrc_constraint = J^T efc_force out; M on the tree's pattern (the steppers', cpp/forward.h); discrete:
// M the discrete step's metric, the rows at the end of its step, the dofs they move into discrete->row_dofs
inline int constrained_accel(void *ctx, const Data<double> &stages, const double *q, const double *qd, const double *M,
                             const double *f, double *qacc, double *qfrc, bool update_warm, const DiscreteSolve *discrete) {
    ConstrainedRun &s = *static_cast<ConstrainedRun *>(ctx);
    const Model &m = s.m;
    int nv = m.nv;
    Contacts con = detect(m, s.c.col, q, s.near < 0);               // a left-out pair near: once per trajectory
    if (s.ncon < 0) s.ncon = con.n;
    if (s.near < 0) s.near = s.c.col.near_missing;
    s.c.stages = &stages;                                            // evaluate's velocity stages, not again
    if (discrete) {
        for (int j = 0; j < nv; j++) s.diag[size_t(j)] = tree_diagonal(m, M, j);
        rows(m, s.c, q, qd, con, nullptr, false, discrete->h, discrete->bare_diag, s.diag.data());
    } else
        rows(m, s.c, q, qd, con, nullptr, false);
    s.c.stages = nullptr;
    if (discrete) row_dofs(s.c.r, discrete->row_dofs);
    std::copy(f, f + nv, s.c.qfrc_smooth.begin());
    std::copy(M, M + tree_nnz(m), s.c.Mt.begin());                   // M and its factor where the solvers read them
    if (!factor_mass(m, s.c)) return SINGULAR;
    Solution sol;
    int st = solve_with(m, s.c, nullptr, s.warm.data(), m.opt_tolerance, m.opt_iterations, sol);
    if (st != OK) return st;
    std::copy(s.c.qacc.begin(), s.c.qacc.end(), qacc);
    rows_transpose_times(s.c.r, s.c.force.data(), qfrc);
    if (update_warm) std::copy(qacc, qacc + nv, s.warm.begin());
    return OK;
}

// Constrain::stepped: step k's contact count into the rollout's ncon (N, steps)
inline void constrained_stepped(void *ctx, int64_t n, int64_t k) {
    ConstrainedRun &s = *static_cast<ConstrainedRun *>(ctx);
    s.r->ncon[n * s.r->steps + k] = std::max<int64_t>(s.ncon, 0);       // -1: the step stopped before its solve
    s.ncon = -1;
}

// trajectories [lo, hi) of a rollout (without constraints: simulate_one's) in sim (made for act's nu); with constraints
// one at a time from r.warm_in's warm start (or zero): r.status and
// r.failure as simulate_one's, the contacts of each step into r.ncon, the first left-out pair that may touch into r.near
// (-1: none), the last solve's qacc into r.warm_out
inline void simulate_constrained_in(ConstrainedSim &sim, const Model &m, const Actuators &act, const Rollout &r, int64_t lo,
                                    int64_t hi) {
    SimData<double> &w = sim.w;
    ConstrainedRun &run = sim.run;
    run.r = &r;
    Constrain con{&run, constrained_accel, constrained_stepped};
    if (!r.constrained) {                                              // the smooth dynamics, in this workspace
        for (int64_t n = lo; n < hi; n++) r.status[n] = simulate_one(m, act, w, r, n);
        return;
    }
    size_t nv = size_t(m.nv);
    for (int64_t n = lo; n < hi; n++) {
        if (r.warm_in) std::copy_n(r.warm_in + size_t(n) * nv, nv, run.warm.begin());
        else std::fill(run.warm.begin(), run.warm.end(), 0.0);
        run.ncon = run.near = -1;
        r.status[n] = simulate_one(m, act, w, r, n, &con, r.resume ? r.resume[n] : 0);
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
