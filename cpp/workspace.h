// The workspaces a compiled model keeps between calls, and how a call's states are shared among threads with them:
// small calls run on the calling thread with the kept workspaces of one state (or of one instruction set's lanes);
// larger ones on threads (cpp/parallel.h), each with a kept workspace of its own while no other call holds them, else
// with workspaces of the call's own. Nothing here knows Python: cpp/bindings.cpp passes the type whose lifetime lets
// other threads run (Release: nanobind's GIL release) and the poll of a run on threads (whether a signal is pending).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "kernels.h"
#include "parallel.h"

namespace physai {
namespace {

// a kernel set's workspace, freed by its set
struct FreeWorkspace {
    const Kernels *kernels;
    void operator()(Workspace *w) const { kernels->destroy(w); }
};
using WorkspacePtr = std::unique_ptr<Workspace, FreeWorkspace>;
inline WorkspacePtr workspace(const Kernels &k, const Model &m) { return WorkspacePtr(k.create(m), FreeWorkspace{&k}); }

// a constraint workspace, freed by the scalar kernels that made it
struct FreeConstraintWorkspace {
    void operator()(ConstraintWorkspace *w) const { scalar::constraint_kernels.destroy(w); }
};
using ConstraintPtr = std::unique_ptr<ConstraintWorkspace, FreeConstraintWorkspace>;
struct FreeConstrainedSim {
    void operator()(ConstrainedSimWorkspace *w) const { scalar::constraint_kernels.destroy_sim(w); }
};
using ConstrainedSimPtr = std::unique_ptr<ConstrainedSimWorkspace, FreeConstrainedSim>;
struct FreeStepDerivative {
    void operator()(StepDerivativeWorkspace *w) const { scalar::step_derivative_kernels.destroy(w); }
};
using StepDerivativePtr = std::unique_ptr<StepDerivativeWorkspace, FreeStepDerivative>;
struct FreeCollisionWork {
    void operator()(CollisionWorkspace *w) const { scalar::free_collision_work(w); }
};
using CollisionPtr = std::unique_ptr<CollisionWorkspace, FreeCollisionWork>;

// the workspaces one compiled model keeps between its calls, made on first use
struct Workspaces {
    WorkspacePtr one{nullptr, FreeWorkspace{&scalar::kernels}};      // the calls on the calling thread: one state,
    std::vector<WorkspacePtr> lanes;                                    // and the lanes of each instruction set
    // the constraint operations: the workspace and rows of the calls on the calling thread; the threads' of larger
    // calls, kept between calls (pool_lock: one call at a time uses them, another makes its own)
    ConstraintPtr constraint_one;
    RowsOut constraint_out;
    ConstrainedSimPtr sim_one;                                          // short rollouts of one state (calling thread)
    std::mutex sims_lock;                                               // constrained rollouts on threads: a workspace
    std::vector<ConstrainedSimPtr> sims;                                // per thread, kept (one call at a time)
    StepDerivativePtr step_derivative_one;                              // step_derivatives of one state (calling thread)
    CollisionPtr collision_one;                                         // collision_detect's workspace and output (the
    DetectOut detect_out;                                               // calling thread, the GIL held; detecting: in
    bool detecting = false;                                             // use, a call inside one makes its own)
    std::mutex pool_lock;
    std::vector<ConstraintPtr> pool;
    std::vector<RowsOut> pool_out;
    // the batch kernels' threads: a scalar and a lanes workspace per thread of a call, for instruction set
    // threads_variant, kept between calls (threads_lock: one call at a time uses them, another makes its own)
    std::mutex threads_lock;
    int threads_variant = -1;
    std::vector<std::pair<WorkspacePtr, WorkspacePtr>> threads_work;
    Workspace &scalar_work(const Model &m) {
        if (!one) one = workspace(scalar::kernels, m);
        return *one;
    }
    Workspace &lanes_work(const Model &m, int variant) {
        if (lanes.empty())
            for (int k = 0; k < isa_count(); k++) lanes.emplace_back(nullptr, FreeWorkspace{&isa_kernels(k)});
        if (!lanes[size_t(variant)]) lanes[size_t(variant)] = workspace(isa_kernels(variant), m);
        return *lanes[size_t(variant)];
    }
};

// the lock of workspaces a compiled model keeps for a call's threads, taken if free; not taken (the call makes its own)
// when another call holds it, or when this thread's own run does (a nested call from a signal handler in its poll)
inline std::unique_lock<std::mutex> kept_workspaces(std::mutex &lock) {
    std::unique_lock<std::mutex> kept(lock, std::defer_lock);
    if (!in_run()) kept.try_lock();
    return kept;
}

// the work of one state of op, in units of one pass over the links: where threads pay (about 20 us to start each)
inline int64_t cost_per_state(const Model &m, int op) {
    int64_t pass = m.nlink + 1;
    if (op == MASS_MATRIX || op == FORWARD_DYNAMICS) return pass * (m.nv + 1);
    if (op == RNEA_DERIVATIVES || op == FORWARD_DYNAMICS_DERIVATIVES) return 4 * pass * (m.nv + 1);   // about 4 crb's
    if (op == MOMENTUM_MATRIX || op == COM_JACOBIAN || op == JACOBIAN || op == JACOBIAN_DOT || op == FRAME_VELOCITY ||
        op == FRAME_ACCELERATION)
        return 8 * pass;                                               // stages, columns
    if (op == MOMENTUM_MATRIX_DOT) return 16 * pass;                  // and the composite inertias' rates
    return pass;
}

// the call's states [0, N): the active instruction set's lanes, then the scalar kernels for what they leave. Small calls
// (cost < 40000) run on the calling thread with the kept workspaces; larger ones on threads where the work outweighs
// starting them (a Release held), each thread with workspaces of its own, in pieces of about 20000 (a few
// milliseconds) between which it stops once poll() says so (stop set, the results to discard)
template <class Release, class Poll> void run_states(Workspaces &w, const Model &m, const Call &c, int64_t N, Failures &failures,
                                                     std::atomic<bool> &stop, Poll &&poll) {
    const int variant = active_isa();                                  // the batch kernels' variant for this call
    const Kernels &lanes = isa_kernels(variant);
    auto work = [&](int64_t lo, int64_t hi, Workspace &one, Workspace *lw) {
        int64_t s = hi - lo >= 2 ? lanes.run(m, *lw, c, lo, hi, failures) : lo;
        scalar::kernels.run(m, one, c, s, hi, failures);
    };
    int64_t cost = N * cost_per_state(m, c.op);
    if (cost < 40000) {
        work(int64_t(0), N, w.scalar_work(m), N > 1 ? &w.lanes_work(m, variant) : nullptr);
        return;
    }
    int T = int(std::min<int64_t>({int64_t(num_threads()), cost / 20000, (N + BLOCK - 1) / BLOCK}));
    int64_t piece = std::max<int64_t>(1, 20000 / cost_per_state(m, c.op) / BLOCK) * BLOCK;
    std::unique_lock<std::mutex> kept = kept_workspaces(w.threads_lock);
    if (kept) {
        if (w.threads_variant != variant) w.threads_work.clear(), w.threads_variant = variant;
        while (w.threads_work.size() < size_t(T)) w.threads_work.emplace_back(workspace(scalar::kernels, m), workspace(lanes, m));
    }
    std::atomic<int> slot{0};                                          // each thread's pair of the kept workspaces
    Release release;
    threads_for(N, T, cost, stop, [&](int64_t lo, int64_t hi) {
        WorkspacePtr own_one{nullptr, FreeWorkspace{&scalar::kernels}}, own_lanes{nullptr, FreeWorkspace{&lanes}};
        Workspace *one, *lw;
        if (kept) {
            auto &pair = w.threads_work[size_t(slot.fetch_add(1))];
            one = pair.first.get(), lw = pair.second.get();
        } else {
            own_one = workspace(scalar::kernels, m), own_lanes = workspace(lanes, m);
            one = own_one.get(), lw = own_lanes.get();
        }
        in_pieces(lo, hi, piece, stop, [&](int64_t a, int64_t b) { work(a, b, *one, lw); });
    }, poll);
}

// the kept constrained-run workspaces moved so that a model keeps one where one serves (a large model's workspace is
// its largest memory): the short runs' (sim_one) to the threads' (sims) when they have none, or a thread's to the
// short runs' when they have none; the GIL held, and not while a call on threads holds sims (kept_workspaces)
inline void share_kept_sim(Workspaces &w, bool to_threads) {
    std::unique_lock<std::mutex> kept = kept_workspaces(w.sims_lock);
    if (!kept) return;
    if (to_threads && w.sim_one && w.sims.empty()) w.sims.push_back(std::move(w.sim_one));
    if (!to_threads && !w.sim_one && !w.sims.empty()) w.sim_one = std::move(w.sims.back()), w.sims.pop_back();
}

// N trajectories of a rollout (cpp/simulate.h), each first set by start(lo, hi) (false: stopped) on the thread that
// runs it: one short trajectory here with the kept workspace; otherwise on threads (a Release held), constrained ones
// in blocks of the lanes up to the first step that may have a row (a model whose only rows are contacts: r.resume),
// then one at a time from there with a kept workspace per thread (made for these actuators) or the call's own, the
// others in blocks of the lanes, then one by one what is left; poll() says when to stop
template <class Release, class Start, class Poll> void simulate_states(Workspaces &w, const Model &m, const Actuators &act,
                                                                       Rollout &r, int64_t N, Start &&start,
                                                                       std::atomic<bool> &stop, Poll &&poll) {
    const ConstraintKernels &ck = scalar::constraint_kernels;
    const Kernels &lanes = isa_kernels(active_isa());
    int64_t constrained_cost = N * r.steps * (m.nlink + 1) * 8;
    if (N == 1 && constrained_cost < 200000) {                        // short: here, the model's workspace
        if (!w.sim_one) share_kept_sim(w, false);                      // (a thread's kept one: one workspace, not two)
        if (!w.sim_one || !ck.sim_fits(w.sim_one.get(), m, act)) w.sim_one = ConstrainedSimPtr(ck.create_sim(m, act));
        if (start(0, N)) ck.simulate_in(*w.sim_one, m, act, r, 0, N);
        return;
    }
    if (r.constrained) share_kept_sim(w, true);                        // the short runs' workspace serves a thread
    Release release;
    int T = int(std::min<int64_t>(int64_t(num_threads()), (N + BLOCK - 1) / BLOCK));
    if (r.constrained) {                                               // one at a time: cpp/simulate.h
        // in pieces of BLOCK trajectories (the lanes' blocks), each to whichever thread is free: trajectories with more
        // contacts take longer, and a thread of a shared machine may be held up (each trajectory's numbers are its own:
        // where it runs changes nothing)
        int64_t pieces = (N + BLOCK - 1) / BLOCK;
        T = int(std::min<int64_t>(int64_t(num_threads()), pieces));
        std::unique_lock<std::mutex> kept = kept_workspaces(w.sims_lock);
        if (kept) {                                                    // made for these actuators, one per thread
            for (auto &s : w.sims)
                if (!ck.sim_fits(s.get(), m, act)) s = ConstrainedSimPtr(ck.create_sim(m, act));
            while (w.sims.size() < size_t(T)) w.sims.emplace_back(ck.create_sim(m, act));
        }
        auto piece = [&](int t, int64_t k) {
            int64_t lo = k * BLOCK, hi = std::min(N, lo + BLOCK);
            if (!start(lo, hi)) return;
            if (!r.observe && !r.frames) lanes.simulate(m, act, r, lo, hi);   // the steps before the first contact, in lanes
            if (kept) ck.simulate_in(*w.sims[size_t(t)], m, act, r, lo, hi);
            else ck.simulate(m, act, r, lo, hi);
        };
        if (T <= 1 && constrained_cost < 200000) parallel_pieces(pieces, T, stop, piece);   // short: no polling
        else parallel_pieces(pieces, T, stop, piece, poll);
    } else {
        threads_for(N, T, N * r.steps * (m.nlink + 1), stop, [&](int64_t lo, int64_t hi) {
            if (!start(lo, hi)) return;
            lanes.simulate(m, act, r, lo, hi);
            scalar::kernels.simulate(m, act, r, lo, hi);
        }, poll);
    }
}

// the step derivatives of N states: one here with the kept workspace (made for nu actuators); more on threads (a
// Release held), each with a workspace of its own, in pieces of 16 states; poll() says when to stop
template <class Release, class Poll> void step_derivative_states(Workspaces &w, const Model &m, const Actuators &act,
                                                                 const StepDerivativeCall &call, int64_t N,
                                                                 std::atomic<bool> &stop, Poll &&poll) {
    const StepDerivativeKernels &k = scalar::step_derivative_kernels;
    if (N == 1) {
        if (!w.step_derivative_one || k.nu(w.step_derivative_one.get()) != act.nu)
            w.step_derivative_one = StepDerivativePtr(k.create(m, act));
        k.run(m, act, *w.step_derivative_one, call, 0, 1);
        return;
    }
    Release release;
    int T = int(std::min<int64_t>(int64_t(num_threads()), N));
    threads_for(N, T, N * (m.nlink + 1) * m.nv, stop, [&](int64_t lo, int64_t hi) {
        StepDerivativePtr own(k.create(m, act));
        in_pieces(lo, hi, 16, stop, [&](int64_t l, int64_t h) { k.run(m, act, *own, call, l, h); });
    }, poll);
}

// the rows a constraint call made, in state order (outs), and what holds them until they are gathered: the kept pool
// (its lock) or the call's own workspaces
struct ConstraintRun {
    std::vector<const RowsOut *> outs;
    std::unique_lock<std::mutex> pool;
    std::vector<ConstraintPtr> own;
    std::vector<RowsOut> own_out;
};

// the constraint operation c on states [0, N): few states (under 8 per thread) here with the kept workspace; more on
// threads (a Release held) in pieces of 8 states, taken by whichever thread is free, each into its own RowsOut, with
// the kept pool or, when another call holds it, workspaces of the call's own; poll() says when to stop
template <class Release, class Poll> void constrain_states(Workspaces &w, const Model &m, const ConstraintCall &c, int64_t N,
                                                           Failures &failures, ConstraintRun &run, std::atomic<bool> &stop,
                                                           Poll &&poll) {
    const ConstraintKernels &kern = scalar::constraint_kernels;
    int T = int(std::min<int64_t>(int64_t(num_threads()), N / 4));
    if (T <= 1) {
        if (!w.constraint_one) w.constraint_one = ConstraintPtr(kern.create(m));
        w.constraint_out.clear();
        kern.run(m, *w.constraint_one, c, 0, N, w.constraint_out, failures);
        run.outs.push_back(&w.constraint_out);
        return;
    }
    run.pool = kept_workspaces(w.pool_lock);
    bool shared = run.pool.owns_lock();
    std::vector<ConstraintPtr> &works = shared ? w.pool : run.own;
    std::vector<RowsOut> &rows = shared ? w.pool_out : run.own_out;
    while (works.size() < size_t(T)) works.emplace_back(kern.create(m));
    const int64_t PIECE = 8, pieces = (N + PIECE - 1) / PIECE;
    if (rows.size() < size_t(pieces)) rows.resize(size_t(pieces));
    {
        Release release;
        parallel_pieces(pieces, T, stop, [&](int t, int64_t k) {
            RowsOut &out = rows[size_t(k)];
            out.clear();
            kern.run(m, *works[size_t(t)], c, k * PIECE, std::min(N, (k + 1) * PIECE), out, failures);
        }, poll);
    }
    for (int64_t k = 0; k < pieces; k++) run.outs.push_back(&rows[size_t(k)]);
}

}  // namespace
}  // namespace physai
