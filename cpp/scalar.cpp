// The kernels for one state at a time (double), compiled with the baseline flags: the scalar table of cpp/kernels.h
// (every call of one state, what the lanes leave of a batch, and the operations the lanes do not run: Jacobians, body
// poses, integrate / difference), and the constraint operations (cpp/inverse.h) and step_derivatives
// (cpp/step_derivative.h), which run here only.
#include "batch.h"
#include "inverse.h"
#include "kernels.h"
#include "simulate.h"
#include "step_derivative.h"

namespace physai {
namespace scalar {

const Kernels kernels = kernels_of<double>("scalar");

const ConstraintKernels constraint_kernels = {
    [](const Model &m) { return reinterpret_cast<ConstraintWorkspace *>(new ConstraintStates(m)); },
    [](ConstraintWorkspace *w) { delete reinterpret_cast<ConstraintStates *>(w); },
    [](const Model &m, ConstraintWorkspace &w, const ConstraintCall &call, int64_t lo, int64_t hi, RowsOut &out,
       Failures &failures) {
        constraint_states(m, *reinterpret_cast<ConstraintStates *>(&w), call, call.op - CONSTRAINT_ROWS, lo, hi, out, failures);
    },
    &simulate_constrained,
    [](const Model &m, const Actuators &act) { return reinterpret_cast<ConstrainedSimWorkspace *>(new ConstrainedSim(m, act)); },
    [](ConstrainedSimWorkspace *w) { delete reinterpret_cast<ConstrainedSim *>(w); },
    [](const ConstrainedSimWorkspace *w, const Model &m, const Actuators &act) {
        return reinterpret_cast<const ConstrainedSim *>(w)->fits(m, act);
    },
    [](ConstrainedSimWorkspace &w, const Model &m, const Actuators &act, const Rollout &r, int64_t lo, int64_t hi) {
        simulate_constrained_in(*reinterpret_cast<ConstrainedSim *>(&w), m, act, r, lo, hi);
    },
};

const StepDerivativeKernels step_derivative_kernels = {
    [](const Model &m, const Actuators &act) { return reinterpret_cast<StepDerivativeWorkspace *>(new StepDerivData(m, act)); },
    [](StepDerivativeWorkspace *w) { delete reinterpret_cast<StepDerivData *>(w); },
    [](const StepDerivativeWorkspace *w) { return reinterpret_cast<const StepDerivData *>(w)->nu; },
    [](const Model &m, const Actuators &act, StepDerivativeWorkspace &w, const StepDerivativeCall &call, int64_t lo, int64_t hi) {
        step_derivative_states(m, act, *reinterpret_cast<StepDerivData *>(&w), call, lo, hi);
    },
};

CollisionWorkspace *make_collision_work(const Model &m) { return reinterpret_cast<CollisionWorkspace *>(new CollisionWork(m)); }

void free_collision_work(CollisionWorkspace *w) { delete reinterpret_cast<CollisionWork *>(w); }

void detect_states(const Model &m, CollisionWorkspace &work, Input q, const uint8_t *subset, int64_t lo, int64_t hi,
                   DetectOut &out, const double *q0, const int64_t *dofs) {
    CollisionWork &w = *reinterpret_cast<CollisionWork *>(&work);
    if (q0) base_poses(m, w, q0);
    for (int64_t s = lo; s < hi; s++) {
        const uint8_t *pairs = subset ? subset + s * (m.ncand + m.nmissing) : nullptr;
        Contacts con = detect(m, w, q.data + s * q.stride, true, pairs, q0 ? dofs[s] : -1);
        out.ncon.push_back(con.n);
        out.f.insert(out.f.end(), w.f.begin(), w.f.end());
        out.i.insert(out.i.end(), w.i.begin(), w.i.end());
        out.cand.insert(out.cand.end(), w.cand.begin(), w.cand.end());
        size_t before = out.near.size();
        near_missing_pairs(m, w, out.near, pairs);
        out.nnear.push_back(int64_t(out.near.size() - before));
    }
}

}  // namespace scalar
}  // namespace physai
