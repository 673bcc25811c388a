// Trajectories (src/physai/integrators.py's rollout and simulate loops, MuJoCo's rollout): each step's inputs read from
// the rollout's series, then forward.h's step, for one trajectory (simulate_one) or lanes of trajectories side by side
// (simulate_block).
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "data.h"
#include "forward.h"
#include "model.h"

namespace physai {
namespace {

// trajectory n + l's inputs of step k into lane l (l < count; the other lanes repeat the last one): u = ctrl clamped to
// ctrlrange (forces._ctrl)
template <class T> void step_inputs(const Model &m, const Actuators &act, const Rollout &r, int64_t n, int64_t count, int64_t k,
                                    StepInputs<T> &x) {
    x.has_qfrc = r.qfrc.data != nullptr, x.has_xfrc = r.xfrc.data != nullptr, x.energy = r.with_energy;
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

// trajectory n of r from its Q[0], QD[0] (with constraints when con): -1 when every step was taken, else the step that
// stopped it, with the reason (DIVERGED: the state k + 1 is not finite; ZERO_QUATERNION, SINGULAR) in r.failure[n]
inline int64_t simulate_one(const Model &m, const Actuators &act, SimData<double> &w, const Rollout &r, int64_t n,
                            const Constrain *con = nullptr) {
    int nq = m.nq, nv = m.nv, na = act.na;
    int64_t steps = r.steps;
    double *Q = r.Q + n * (steps + 1) * nq, *QD = r.QD + n * (steps + 1) * nv, *E = r.E + n * (steps + 1);
    double *A = r.A + n * (steps + 1) * na;
    std::copy_n(A, na, w.x.act.begin());                               // the activations, stepped in w.x.act
    for (int64_t k = 0; k < steps; k++) {
        if (r.stop && r.stop->load(std::memory_order_relaxed)) return k;                  // stopped: discarded
        double *qn = Q + (k + 1) * nq, *qdn = QD + (k + 1) * nv;
        step_inputs(m, act, r, n, 1, k, w.x);
        int st = step(m, act, w, r.opt, Q + k * nq, QD + k * nv, qn, qdn, E[k], con);
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
        std::copy_n(w.x.act.begin(), na, A + (k + 1) * na);
    }
    if (r.with_energy && final_energy(m, w.d, Q + steps * nq, QD + steps * nv, E[steps]) != OK) {
        r.failure[n] = ZERO_QUATERNION;
        return steps;
    }
    return -1;
}

// trajectories n .. n + count - 1 of r (count <= the lanes of L) side by side, from their Q[0], QD[0] and A[0], for
// actuators without muscles (Actuators::lanes): OK with every state written, or not (a lane diverged, a zero quaternion,
// implicit, a matrix that does not factor): the caller then runs them one by one (simulate_one), which reports exactly
// what and where
template <class L> int simulate_block(const Model &m, const Actuators &act, SimData<L> &w, const Rollout &r, int64_t n, int64_t count) {
    constexpr int W = lanes_of<L>;
    int nq = m.nq, nv = m.nv, na = act.na;
    int64_t steps = r.steps, rowq = (steps + 1) * nq, rowv = (steps + 1) * nv, rowe = steps + 1, rowa = (steps + 1) * na;
    auto lane = [&](int64_t l) { return n + std::min<int64_t>(l, count - 1); };
    for (int l = 0; l < W; l++) {
        for (int i = 0; i < nq; i++) w.q[i][l] = r.Q[lane(l) * rowq + i];
        for (int j = 0; j < nv; j++) w.qd[j][l] = r.QD[lane(l) * rowv + j];
        for (int i = 0; i < na; i++) w.x.act[i][l] = r.A[lane(l) * rowa + i];
    }
    L e;
    for (int64_t k = 0; k < steps; k++) {
        if (r.stop && r.stop->load(std::memory_order_relaxed)) return DIVERGED;            // stopped: discarded
        step_inputs(m, act, r, n, count, k, w.x);
        int st = step(m, act, w, r.opt, w.q.data(), w.qd.data(), w.qn.data(), w.qdn.data(), e);
        if (st != OK) return st;
        if (any_nonfinite(w.qn.data(), size_t(nq)) || any_nonfinite(w.qdn.data(), size_t(nv))) return DIVERGED;
        for (int64_t l = 0; l < count; l++) {
            for (int i = 0; i < nq; i++) r.Q[(n + l) * rowq + (k + 1) * nq + i] = w.qn[i][l];
            for (int j = 0; j < nv; j++) r.QD[(n + l) * rowv + (k + 1) * nv + j] = w.qdn[j][l];
            r.E[(n + l) * rowe + k] = e[l];
            for (int i = 0; i < na; i++) r.A[(n + l) * rowa + (k + 1) * na + i] = w.x.act[i][l];
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
