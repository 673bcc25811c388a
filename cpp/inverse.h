// MuJoCo's inverse constraint problem (src/physai/engine/inverse.py: engine_inverse.c's mj_invConstraint), and the
// constraint operations on a call's states (the kernels constraint_rows, constraint_forward and constraint_inverse of
// physai.engine.constraint, solver and inverse), here as the header above the rows (cpp/constraint.h) and the solver
// (cpp/solver.h), as MuJoCo's engine_inverse.c is above engine_forward.c; one state at a time (compiled into the scalar
// translation unit only):
//
//     inverse_force(r, qacc)                     the forces of given accelerations, row by row (mj_invConstraint)
//     discrete_state(m, sim, call, op, s)        a discrete model's rows at the step's end, its step map inverted
//     constraint_states(m, ws, call, lo, hi)     the constraint operations (rows, forward, inverse) on states [lo, hi);
//                                                forward and inverse take the smooth stages (kinematics, M and its
//                                                factor, c) of blocks of states from the active lanes (batch.h's
//                                                constraint_smooth), the states they leave computed here
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "constraint.h"
#include "data.h"
#include "forward.h"
#include "kernels.h"
#include "model.h"
#include "simulate.h"
#include "smooth.h"
#include "solver.h"

namespace physai {
namespace {

// ---------------------------------------------------------------- the inverse problem (mj_invConstraint)

// efc_force for given accelerations into force: each row's force at jar = J qacc - aref, without a solver, its
// state into w.state and, with cones, the Hessians of the contacts on their cone (inverse_force; forward's rows: update
// at the solution, derivatives._Constraints.solve's)
inline void inverse_force(ConstraintWork &w, const double *qacc, double *force, Cones *cones = nullptr) {
    const Rows &r = w.r;
    if (w.jar.size() < size_t(r.nefc)) w.jar.resize(size_t(r.nefc));
    if (w.state.size() < size_t(r.nefc)) w.state.resize(size_t(r.nefc));
    rows_times(r, qacc, w.jar.data());
    for (int i = 0; i < r.nefc; i++) w.jar[size_t(i)] = w.jar[size_t(i)] - r.aref[size_t(i)];
    update(r, w.jar.data(), force, w.state.data(), cones);
}

// ---------------------------------------------------------------- the operations on a call's states

// the rows of w.r (their sizes alone unless rows), with force (forward, inverse: nefc; null for the rows alone), each
// row's state (nefc, or null) and the contacts on their cone (or null), appended to out
inline void append(const Rows &r, const double *force, const int *state, const Cones *cones, bool rows, RowsOut &out) {
    size_t n = size_t(r.nefc);
    auto put = [n](std::vector<double> &to, const std::vector<double> &from) { to.insert(to.end(), from.begin(), from.begin() + long(n)); };
    for (int64_t s : {int64_t(r.nefc), int64_t(r.ne), int64_t(r.nf), int64_t(r.nl), r.con.n}) out.sizes.push_back(s);
    if (force) out.force.insert(out.force.end(), force, force + n);
    if (state) out.state.insert(out.state.end(), state, state + n);
    if (cones) {                                                       // each cone's first row, dim, dim x dim Hessian
        out.ncone.push_back(cones->n);
        for (size_t k = 0; k < size_t(cones->n); k++) {
            int dim = cones->dim[k];
            const double *H = &cones->H[36 * k];
            out.cone_first.push_back(cones->first[k]), out.cone_dim.push_back(dim);
            out.cone_H.insert(out.cone_H.end(), H, H + dim * dim);
        }
    }
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

// the smooth force of state s of a forward call with call.front (forward.DynamicsEvaluator.evaluate's: forward.h's
// smooth_force at the clamped controls and the applied forces) into the call's f_out, tau = f + c into w.tau, M (nv x
// nv) into its M_out; w holds the velocity stages (computed here: no lanes' smooth stages with a front), M and c. The
// front's actuators have no activations and no arms of the configuration (bindings.cpp's read_front refuses them)
inline int front_force(const Model &m, ConstraintWork &w, const ConstraintCall &call, int64_t s, const double *q,
                       const double *qd) {
    const Actuators &act = *call.front;
    const size_t nv = size_t(m.nv), nu = size_t(act.nu);
    StepInputs<double> &x = w.front;
    if (x.u.size() != nu) x.u.resize(nu), x.slope.resize(nu), x.raw.resize(nu), w.front_force.resize(nu);
    if (x.qfrc.size() != nv) x.qfrc.resize(nv), w.front_joint.resize(nv), w.tau.resize(nv);
    const double *u = call.ctrl.data + s * call.ctrl.stride;
    for (int a = 0; a < act.nu; a++) x.u[size_t(a)] = clamped_ctrl(act, a, u[a]);
    x.has_qfrc = call.applied.data != nullptr, x.has_xfrc = false;
    if (x.has_qfrc) std::copy(call.applied.data + s * call.applied.stride, call.applied.data + s * call.applied.stride + nv,
                              x.qfrc.begin());
    double *f = call.f_out + size_t(s) * nv, tendon_pot;
    std::copy(w.c.begin(), w.c.begin() + long(nv), w.front_joint.begin());   // c, then smooth_force's scratch
    int st = smooth_force(m, act, w.d, x, q, qd, f, w.front_joint.data(), w.front_force.data(), tendon_pot);
    if (st != OK) return st;
    for (size_t j = 0; j < nv; j++) w.tau[j] = f[j] + w.c[j];
    std::copy(w.M.begin(), w.M.begin() + long(nv * nv), call.M_out + size_t(s) * nv * nv);
    return OK;
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
    const double *x = call.front ? nullptr : call.x.data + s * call.x.stride;
    if (!smooth) {                                                     // M (with tendon armature) on the tree's pattern, c
        w.M.resize(size_t(m.nv) * m.nv);                              // made on first use (a simulation never uses it)
        crb(m, w.d, w.M.data());
        if (m.ntendon) armature_matrix(m, w.d.ten_J.data(), w.M.data());
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
    if (call.front) {                                                  // tau made here: f = tau - c as the callers'
        int st = front_force(m, w, call, s, q, qd);
        if (st != OK) return st;
        x = w.tau.data();
    }
    for (int j = 0; j < nv; j++) w.qfrc_smooth[size_t(j)] = x[j] - w.c[size_t(j)];
    Solution sol;
    const double *warm = call.warm.data ? call.warm.data + s * call.warm.stride : nullptr;
    if (!smooth && !factor_mass(m, w)) return SINGULAR;
    int st = solve_with(m, w, nullptr, warm, call.tolerance, call.iterations, sol);
    if (st != OK) return st;
    if (call.rows && !call.own_force) inverse_force(w, w.qacc.data(), w.force.data(), &w.cones);   // update's, at qacc
    std::copy(w.qacc.begin(), w.qacc.end(), call.qacc + s * nv);
    if (call.balanced) balanced_constraint_force(m, w, qfrc);         // what (M - h D) a = f + qfrc integrates
    else rows_transpose_times(w.r, w.force.data(), qfrc);
    call.iters[s] = sol.iterations, call.improvement[s] = sol.improvement, call.converged[s] = sol.converged;
    return OK;
}

// a discrete model's state s of a call evaluated (constraints' _discrete_runs): the call's actuators at its ctrl
// (clamped) and act (null: zeros), evaluate's M into sim.w.M and velocity stages into sim.w.d, c at them into c (nv);
// the run given the state's contacts con (the caller unsets them after), eq_active, tolerance and iterations; a Status
inline int discrete_evaluate(const Model &m, ConstrainedSim &sim, const ConstraintCall &call, int64_t s, const Contacts &con,
                             double *c) {
    const DiscreteCall &dc = *call.discrete;
    const double *q = call.q.data + s * call.q.stride, *qd = call.qd.data + s * call.qd.stride;
    SimData<double> &w = sim.w;
    ConstrainedRun &run = sim.run;
    step_inputs(m, *dc.act, dc.inputs, 0, 1, 0, w.x);                // u = ctrl clamped
    if (dc.act_in) std::copy_n(dc.act_in, dc.act->na, w.x.act.begin());
    else std::fill_n(w.x.act.begin(), dc.act->na, 0.0);
    w.x.h = dc.opt.h, w.pcg_capped = -1.0;
    double pot;
    if (evaluate(m, *dc.act, w.d, w.x, q, qd, w.f.data(), w.M.data(), w.tmp.data(), w.force.data(), pot) != OK)
        return ZERO_QUATERNION;
    rne(m, w.d, qd, (const double *)nullptr, c);                      // c at evaluate's velocity stages
    run.given = &con, run.eq_active = call.eq_active, run.tolerance = call.tolerance, run.iterations = call.iterations;
    return OK;
}

// forward of a discrete model's state s of the call (constraints' _discrete_forward): evaluate with the call's
// actuators, ctrl and act leaves M, f = tau - c (discrete_evaluate), then the discrete step's acceleration (forward.h's
// discrete_acceleration) with the state's contacts, eq_active, warm start (or zero), tolerance and iterations; its rows
// and efc_force in sim.run.c, its smooth solve's residual at the cap into dc.capped[s] (-1: below it); a Status
inline int discrete_forward_state(const Model &m, ConstrainedSim &sim, const ConstraintCall &call, int64_t s) {
    const DiscreteCall &dc = *call.discrete;
    const double *q = call.q.data + s * call.q.stride, *qd = call.qd.data + s * call.qd.stride;
    const double *tau = call.x.data + s * call.x.stride;
    int nv = m.nv;
    SimData<double> &w = sim.w;
    ConstrainedRun &run = sim.run;
    const Contacts con = state_contacts(call, s);
    if (discrete_evaluate(m, sim, call, s, con, w.tmp.data()) != OK) return ZERO_QUATERNION;
    for (int j = 0; j < nv; j++) w.rhs[size_t(j)] = tau[j] - w.tmp[size_t(j)];   // f = tau - c
    const double *warm = call.warm.data ? call.warm.data + s * call.warm.stride : nullptr;
    if (warm) std::copy_n(warm, nv, run.warm.begin());
    else std::fill(run.warm.begin(), run.warm.end(), 0.0);
    const Constrain solve{&run, constrained_accel, nullptr, nullptr};
    int st = discrete_acceleration(m, *dc.act, w, dc.opt, q, qd, &solve);
    run.given = nullptr;
    if (dc.capped) dc.capped[s] = w.pcg_capped;                        // the smooth solve at its cap (-1: not)
    if (st != OK) return st;
    std::copy_n(w.a.begin(), nv, call.qacc + s * nv);
    std::copy_n(w.qfrc.begin(), nv, call.qfrc + s * nv);                   // J^T efc_force
    call.iters[s] = run.sol.iterations, call.improvement[s] = run.sol.improvement, call.converged[s] = run.sol.converged;
    return OK;
}

// y's rows of each standalone free body with no dof in skip (nv): A a there, A the body's own block of the discrete
// step (free_body_matrix; the block free_body_solve solves a in)
inline void free_body_product(const Model &m, SimData<double> &w, double h, const double *qd, const double *a, double *y,
                              const char *skip) {
    for (int k = 0; k < m.nfree; k++) {
        int adr = int(m.free_dofadr[k]);
        if (std::any_of(skip + adr, skip + adr + 6, [](char c) { return c != 0; })) continue;
        double A[36];
        free_body_matrix(m, w, h, qd, k, A);
        for (int i = 0; i < 6; i++) {
            double v = 0.0;
            for (int j = 0; j < 6; j++) v += A[6 * i + j] * a[adr + j];
            y[adr + i] = v;
        }
    }
}

// a discrete model's state s of a rows or inverse call (op 0 or 2; constraints' _discrete_rows and _discrete_inverse):
// evaluated as its forward (discrete_evaluate), the step's metric M^ = X + C as discrete_acceleration makes it
// (discrete_matrix's X in sim.w.M; coupling_terms, coupling_metric: C in sim.w.Bc) and its rows at the end of the step
// into sim.run.c.r (solve_rows; J dense when the call returns the rows); inverse: f row by row at qacc (inverse_force)
// into sim.run.c.force, qfrc = J^T f and tau = M^ qacc + c + h K qd - J^T f, M^ qacc in their own blocks for the
// standalone free bodies no row or coupling term reaches (free_body_product); a Status
inline int discrete_state(const Model &m, ConstrainedSim &sim, const ConstraintCall &call, int op, int64_t s) {
    const StepOptions &o = call.discrete->opt;
    const Actuators &act = *call.discrete->act;
    const double *q = call.q.data + s * call.q.stride, *qd = call.qd.data + s * call.qd.stride;
    int nv = m.nv;
    SimData<double> &w = sim.w;
    ConstraintWork &c = sim.run.c;
    const Contacts con = state_contacts(call, s);
    if (discrete_evaluate(m, sim, call, s, con, c.c.data()) != OK) return ZERO_QUATERNION;
    const double *K = discrete_stiffness(m, w.stiffness);
    bool coupled = metric_couplings(m, act, o) && coupling_terms(m, act, w, qd);   // the tendons' and servos' terms
    for (int j = 0; j < nv; j++) w.bare_diag[size_t(j)] = tree_diagonal(m, w.M.data(), j);
    step_matrix(m, act, w, o.h, DISCRETE, o.implicit_damping, qd);
    if (coupled) coupling_metric(m, w, o.h);                           // C = h Bc + h^2 Kc
    DiscreteSolve step{o.h, w.bare_diag.data(), w.row_dofs.data(), coupled ? w.Bc.data() : nullptr, &w.pcg_capped};
    solve_rows(sim.run, w.d, q, qd, w.M.data(), &step, op == 0 || call.rows);
    sim.run.given = nullptr;
    if (op == 0) return OK;
    const double *a = call.x.data + s * call.x.stride;
    double *qfrc = call.qfrc + s * nv, *tau = call.tau + s * nv, *Ma = c.Ma.data();
    if (c.force.size() < size_t(c.r.nefc)) c.force.resize(size_t(c.r.nefc));
    inverse_force(c, a, c.force.data());
    rows_transpose_times(c.r, c.force.data(), qfrc);
    if (coupled) {
        metric_product(m, w.M.data(), w.Bc.data(), a, Ma);
        for (int j = 0; j < nv; j++) w.row_dofs[size_t(j)] = char(w.row_dofs[size_t(j)] || w.coupled[size_t(j)]);
    } else {
        tree_times(m, w.M.data(), a, Ma);
    }
    if (m.nfree) free_body_product(m, w, o.h, qd, a, Ma, w.row_dofs.data());
    for (int j = 0; j < nv; j++)                                       // M^ a = tau - c - h K qd + J^T f
        tau[j] = Ma[j] + c.c[size_t(j)] + o.h * (K[j] * qd[j] + (coupled ? w.kq[size_t(j)] : 0.0)) - qfrc[j];
    return OK;
}

// the scalar constraint kernels' workspace (scalar.cpp's): the rows' and solver's, and a discrete model's step's (its
// evaluation, metric and solve: made at its first call for the call's actuators, kept while they fit)
struct ConstraintStates {
    ConstraintWork w;
    std::unique_ptr<ConstrainedSim> sim;
    explicit ConstraintStates(const Model &m) : w(m) {}
};

// the states [lo, hi) of a constraint call (op 0: rows, 1: forward, 2: inverse), each appended to out (a state that
// fails appends no rows and is recorded in failures); a discrete model's (call.discrete) by its step's workspace,
// ws.sim (discrete_forward_state, discrete_state)
inline void constraint_states(const Model &m, ConstraintStates &ws, const ConstraintCall &call, int op, int64_t lo,
                              int64_t hi, RowsOut &out, Failures &failures) {
    const SmoothLayout at(m);
    ConstraintWork &w = ws.w;
    ConstrainedSim *sim = nullptr;                                     // a discrete model's: the step's workspace, kept
    if (call.discrete) {
        const Actuators &act = *call.discrete->act;
        if (!ws.sim || !ws.sim->fits(m, act)) ws.sim = std::make_unique<ConstrainedSim>(m, act);
        sim = ws.sim.get();
    }
    const int64_t BLOCK_STATES = 16;                                   // the smooth stages of up to 16 states at once
    int64_t done = lo, block = lo;                                     // [block, done): their SmoothLayout blocks in w.smooth
    for (int64_t s = lo; s < hi; s++) {
        if (sim) {                                                     // its rows and forces the step's
            int st = op == 1 ? discrete_forward_state(m, *sim, call, s) : discrete_state(m, *sim, call, op, s);
            ConstraintWork &c = sim->run.c;
            Rows &r = c.r;
            if (st != OK) {
                record(failures, st, s);
                r.nefc = r.ne = r.nf = r.nl = 0, r.con.n = 0, r.contact_mu.clear(), r.contact_row.clear();
            }
            bool with_rows = op != 1 && (call.rows || !op);            // forward's: made again by the rows kernel
            append(r, op ? c.force.data() : nullptr, with_rows && op ? c.state.data() : nullptr, nullptr, with_rows, out);
            continue;
        }
        if (s == done && op != 0 && call.lanes && call.lanes->lanes > 1 && hi - s >= 2 && !has_armature(m) && !call.front) {
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
            w.cones.n = 0;
        }
        bool states = op && call.rows && !call.own_force;              // forward's and inverse's rows: their states too
        append(w.r, op ? w.force.data() : nullptr, states ? w.state.data() : nullptr,
               states && op == 1 ? &w.cones : nullptr, call.rows || !op, out);
    }
}

}  // namespace
}  // namespace physai
