// A call's states through the kernels of one number type T: double one state at a time, lanes of states side by side
// (gathered into lanes, the last lanes of a short block repeating a state, and scattered back); one_state is every
// operation of cpp/kernels.h's table but the rollout, whose loop is rollout.h's. kernels_of<T> is the table of
// kernels for T; each kernel unit (scalar.cpp, isa_*.cpp) defines its table with it, for its own T.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <type_traits>

#include "data.h"
#include "derivative.h"
#include "forward.h"
#include "rollout.h"
#include "kernels.h"
#include "model.h"
#include "smooth.h"
#include "support.h"

namespace physai {
namespace {

// one state (or lanes of states) of c.op from the inputs x (its state arguments, in order) into the outputs o: a Status
template <class T> int one_state(const Model &m, Work<T> &w, const Call &c, const T *const *x, T *const *o) {
    Data<T> &d = w.d;
    const T *q = x[0], *qd = x[1];
    switch (c.op) {
        case RNEA_DERIVATIVES:
        case FORWARD_DYNAMICS_DERIVATIVES: {
            if (w.deriv.empty()) w.deriv.emplace_back(m);
            DerivData<T> &dw = w.deriv[0];
            return c.op == RNEA_DERIVATIVES ? rnea_derivatives(m, d, dw, q, qd, x[2], o[0], o[1], o[2])
                                            : forward_dynamics_derivatives(m, d, dw, q, qd, x[2], o[0], o[1], o[2]);
        }
        default: break;
    }
    if constexpr (std::is_same_v<T, double>) {                         // the operations of one state at a time
        switch (c.op) {
            case INTEGRATE: integrate_pos(m, q, qd, c.h, o[0]); return OK;
            case DIFFERENCE: difference_pos(m, q, qd, c.h, o[0]); return OK;
            case BODY_POSES: {
                int st = kinematics(m, d, q);
                if (st != OK) return st;
                for (int b = 0; b < m.nbody; b++)
                    body_pose(d, m.body_linkid[b], m.body_pos + 3 * b, m.body_rot + 9 * b, o[0] + 3 * b, o[1] + 9 * b);
                return OK;
            }
            case TENDONS: {                                            // ten_length, ten_J (tendon.h)
                int st = position_stages(m, d, q);
                if (st != OK) return st;
                tendons(m, d, q);
                std::copy(d.ten_length.begin(), d.ten_length.end(), o[0]);
                std::copy(d.ten_J.begin(), d.ten_J.end(), o[1]);
                return OK;
            }
            default: break;
        }
    }
    if (c.op == JACOBIAN || c.op == JACOBIAN_DOT || c.op == FRAME_VELOCITY || c.op == FRAME_ACCELERATION) {
        bool rates = c.op == JACOBIAN_DOT || c.op == FRAME_ACCELERATION;   // the path's positions, cdof (and their rates)
        int st = path_stages(m, d, q, rates ? qd : (const T *)nullptr, c.link);
        if (st != OK) return st;
        if (c.op == JACOBIAN) jacobian(m, d, c.link, c.point, o[0]);
        else if (c.op == JACOBIAN_DOT) jacobian_dot(m, d, c.link, c.point, o[0]);
        else if (c.op == FRAME_VELOCITY) frame_motion(m, d, c.link, c.point, qd, (const T *)nullptr, o[0], (T *)nullptr);
        else frame_motion(m, d, c.link, c.point, qd, x[2], o[0], o[1]);
        return OK;
    }
    if (c.op == COM_JACOBIAN) {                                        // positions and motion subspaces: no inertias
        int st = kinematics(m, d, q);
        if (st != OK) return st;
        motion_subspaces(m, d);
        subtree_moments(m, d);
        return com_jacobian(m, d, o[0]);
    }
    int st = position_stages(m, d, q);
    if (st != OK) return st;
    T *out = o[0];
    switch (c.op) {
        case RNEA: com_vel(m, d, qd); rne(m, d, qd, x[2], out); return OK;
        case BIAS: com_vel(m, d, qd); rne(m, d, qd, (const T *)nullptr, out); return OK;
        case GRAVITY: rne(m, d, (const T *)nullptr, (const T *)nullptr, out); return OK;
        case MASS_MATRIX: crb(m, d, out); return OK;
        case MOMENTUM_MATRIX: composite_inertias(m, d); return momentum_matrix(m, d, out);
        case MOMENTUM_MATRIX_DOT: com_vel(m, d, qd); composite_inertias(m, d); return momentum_matrix_dot(m, d, out);
        case FORWARD_DYNAMICS: com_vel(m, d, qd); return forward_dynamics(m, d, qd, x[2], out);
        case ABA: com_vel(m, d, qd); return aba(m, d, qd, x[2], out);
        case KINETIC_ENERGY: com_vel(m, d, qd); out[0] = energy_vel(m, d, qd); return OK;
        case POTENTIAL_ENERGY: out[0] = energy_pos(m, d, q); return OK;
        case ENERGY: com_vel(m, d, qd); out[0] = energy_vel(m, d, qd) + energy_pos(m, d, q); return OK;
        default: return OK;
    }
}

template <class T> Work<T> &work_of(Workspace &ws) { return *reinterpret_cast<Work<T> *>(&ws); }
template <class T> Workspace *create(const Model &m) { return reinterpret_cast<Workspace *>(new Work<T>(m)); }
template <class T> void destroy(Workspace *ws) { delete reinterpret_cast<Work<T> *>(ws); }

// for lanes: the call's inputs' lanes (xl, in w.x) and outputs' lanes (ol, in w.o), allocated once
template <class L> void lanes_buffers(Work<L> &w, const Call &c, L **xl, L **ol) {
    size_t inputs = 0, outputs = 0;
    for (int k = 0; k < c.nin; k++) inputs += size_t(c.in_size[k]);
    for (int k = 0; k < c.nout; k++) outputs += size_t(c.out_size[k]);
    if (w.x.size() < inputs) w.x.resize(inputs);
    if (w.o.size() < outputs) w.o.resize(outputs);
    for (int k = 0, at = 0; k < 3; k++) {
        xl[k] = k < c.nin ? w.x.data() + at : nullptr;
        if (k < c.nin) at += int(c.in_size[k]);
    }
    for (int k = 0, at = 0; k < 3; k++) {
        ol[k] = k < c.nout ? w.o.data() + at : nullptr;
        if (k < c.nout) at += int(c.out_size[k]);
    }
}

// states s .. s + count - 1 of the inputs into lane l of xl (lanes past count repeat the last state)
template <class L> void gather(const Call &c, int64_t s, int64_t count, L *const *xl) {
    for (int k = 0; k < c.nin; k++)
        for (int l = 0; l < lanes_of<L>; l++) {
            const double *src = c.in[k].data + (s + std::min<int64_t>(l, count - 1)) * c.in[k].stride;
            for (int64_t e = 0; e < c.in_size[k]; e++) xl[k][e][l] = src[e];
        }
}

// lanes l < count of o (per entries) into states s + l of out; with check, the first such state with an entry that is
// not finite, or -1 (v - v is 0 for a finite v and NaN otherwise: four lane sums side by side tell, no serial chain)
template <class L> int64_t scatter(const L *o, int64_t per, int64_t s, int64_t count, double *out, bool check) {
    for (int64_t l = 0; l < count; l++) {
        double *dst = out + (s + l) * per;
        for (int64_t e = 0; e < per; e++) dst[e] = o[e][l];
    }
    if (!check) return -1;
    L acc[4] = {splat<L>(0.0), splat<L>(0.0), splat<L>(0.0), splat<L>(0.0)};
    int64_t e = 0;
    for (; e + 4 <= per; e += 4)
        for (int k = 0; k < 4; k++) acc[k] = acc[k] + (o[e + k] - o[e + k]);
    for (; e < per; e++) acc[0] = acc[0] + (o[e] - o[e]);
    L sum = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for (int64_t l = 0; l < count; l++)
        if (!(sum[l] == 0.0)) return s + l;
    return -1;
}

// Kernels::run for T
template <class T> int64_t run_states(const Model &m, Workspace &ws, const Call &c, int64_t lo, int64_t hi, Failures &failures) {
    Work<T> &w = work_of<T>(ws);
    const bool finite = OPERATIONS[c.op].finite;
    if constexpr (std::is_same_v<T, double>) {
        for (int64_t s = lo; s < hi; s++) {                            // the inputs in place
            const double *x[3] = {nullptr, nullptr, nullptr};
            double *o[3] = {nullptr, nullptr, nullptr};
            for (int k = 0; k < c.nin; k++) x[k] = c.in[k].data + s * c.in[k].stride;
            for (int k = 0; k < c.nout; k++) o[k] = c.out[k] + s * c.out_size[k];
            int st = one_state(m, w, c, x, o);
            for (int k = 0; st == OK && finite && k < c.nout; k++)
                if (!all_finite(o[k], c.out_size[k])) st = NONFINITE;
            if (st != OK) record(failures, st, s);
        }
        return hi;
    } else {
        if (!OPERATIONS[c.op].lanes) return lo;
        T *xl[3], *ol[3];
        lanes_buffers(w, c, xl, ol);
        const T *x[3] = {xl[0], xl[1], xl[2]};
        int64_t s = lo;
        for (; hi - s >= 2; s += lanes_of<T>) {
            int64_t count = std::min<int64_t>(lanes_of<T>, hi - s);
            gather(c, s, count, xl);
            if (one_state(m, w, c, x, ol) != OK) return s;             // the scalar kernels tell which state, and why
            for (int k = 0; k < c.nout; k++) {
                int64_t bad = scatter(ol[k], c.out_size[k], s, count, c.out[k], finite);
                if (bad >= 0) record(failures, NONFINITE, bad);
            }
        }
        return s;
    }
}

// Kernels::simulate for T
template <class T> void simulate_states(const Model &m, const Actuators &act, const Rollout &r, int64_t lo, int64_t hi) {
    if constexpr (std::is_same_v<T, double>) {
        std::optional<SimData<double>> w;                              // made for the first trajectory left
        for (int64_t n = lo; n < hi; n++) {
            if (r.status[n] != RERUN) continue;
            if (!w) w.emplace(m, act);
            r.status[n] = simulate_one(m, act, *w, r, n);
        }
    } else {
        if (r.opt.integrator == IMPLICIT || hi - lo < 2 || !act.lanes || m.tendon_spatial) return;   // muscles: one by one
        if (r.constrained) {                                           // the steps before the first that may touch
            if ((r.opt.integrator != EULER && r.opt.integrator != IMPLICITFAST) || !r.resume || !contacts_only(m)) return;
            SimData<T> w(m, act);
            ContactFree<T> free(m);
            for (int64_t n = lo; hi - n >= 2; n += lanes_of<T>) {
                int64_t count = std::min<int64_t>(lanes_of<T>, hi - n), done = 0;
                if (simulate_block(m, act, w, r, n, count, &free, &done) != OK) done = 0;
                for (int64_t l = 0; l < count; l++) r.resume[n + l] = std::max<int64_t>(done - 1, 0);
            }
            return;
        }
        SimData<T> w(m, act);
        for (int64_t n = lo; hi - n >= 2; n += lanes_of<T>) {
            int64_t count = std::min<int64_t>(lanes_of<T>, hi - n);
            if (simulate_block(m, act, w, r, n, count) == OK)
                for (int64_t l = 0; l < count; l++) r.status[n + l] = -1;
        }
    }
}

// Kernels::simulate_constrained for T: a block of lanes, each lane's constrained solve through its Constrain; lanes only
// as constrained_lanes_step says (one by one, as simulate_states, for double and lanes wider than CONSTRAINED_LANES: not
// compiled)
template <class T> int simulate_constrained_block(const Model &m, const Actuators &act, const Rollout &r, int64_t n, int64_t k0,
                                                  const LaneConstrain &con) {
    if constexpr (std::is_same_v<T, double> || lanes_of<T> > CONSTRAINED_LANES) {
        return ONE_BY_ONE;
    } else {
        if (!constrained_lanes_step(m, act, r.opt.integrator, con.count, lanes_of<T>)) return ONE_BY_ONE;
        con.fit(m);
        SimData<T> w(m, act);
        return simulate_block(m, act, w, r, n, con.count, (ContactFree<T> *)nullptr, nullptr, &con, k0);
    }
}

// Kernels::constraint_smooth for T: per block of lanes, the velocity stages, M (crb) on the tree's pattern with its
// factor, and c = rne(q, qd, 0), each lane into its state's SmoothLayout block; a block that meets a zero quaternion or
// a non-positive pivot is left (with the states after it) to the scalar path, which tells which state and why
template <class T> int64_t constraint_smooth(const Model &m, Workspace &ws, Input q, Input qd, int64_t lo, int64_t hi,
                                             double *out) {
    if constexpr (std::is_same_v<T, double>) {
        return lo;
    } else {
        Work<T> &w = work_of<T>(ws);
        Data<T> &d = w.d;
        const SmoothLayout at(m);
        const size_t nq = size_t(m.nq), nv = size_t(m.nv), nM = size_t(tree_nnz(m)), L = size_t(m.nlink);
        if (w.x.size() < nq + 2 * nv + nv * nv + nM) w.x.resize(nq + 2 * nv + nv * nv + nM);
        T *ql = w.x.data(), *qdl = ql + nq, *c = qdl + nv, *M = c + nv, *Mt = M + nv * nv, *const xl[2] = {ql, qdl};
        Call states;                                                   // q and qd as a call's inputs, for gather
        states.nin = 2, states.in[0] = q, states.in[1] = qd, states.in_size[0] = m.nq, states.in_size[1] = m.nv;
        int64_t s = lo;
        for (; hi - s >= 2; s += lanes_of<T>) {
            int64_t count = std::min<int64_t>(lanes_of<T>, hi - s);
            gather(states, s, count, xl);
            if (velocity_stages(m, d, ql, qdl) != OK) break;
            crb(m, d, M);
            rne(m, d, qdl, (const T *)nullptr, c);
            tree_pack(m, M, Mt);
            std::copy(Mt, Mt + nM, d.qL.data());
            if (!tree_cholesky(m, d.qL.data(), d.qLinv.data())) break;
            for (int64_t l = 0; l < count; l++) {
                double *o = out + size_t(s - lo + l) * at.size;
                auto put = [&](size_t to, const T *x, size_t n) {
                    for (size_t e = 0; e < n; e++) o[to + e] = x[e][l];
                };
                put(at.xmat, d.xmat.data(), 9 * L), put(at.xpos, d.xpos.data(), 3 * L), put(at.cdof, d.cdof.data(), 6 * nv);
                put(at.cdof_dot, d.cdof_dot.data(), 6 * nv), put(at.cvel, d.cvel.data(), 6 * (L + 1));
                put(at.Mt, Mt, nM), put(at.qL, d.qL.data(), nM), put(at.qLinv, d.qLinv.data(), nv), put(at.c, c, nv);
            }
        }
        return s;
    }
}

// the lane kernels inline everything they call (as the former target-attribute variants did): one function per call
#if defined(__GNUC__)
#define PHYSAI_FLATTEN __attribute__((flatten))
#else
#define PHYSAI_FLATTEN
#endif
template <class L> PHYSAI_FLATTEN int64_t run_lanes(const Model &m, Workspace &ws, const Call &c, int64_t lo, int64_t hi,
                                                    Failures &failures) {
    return run_states<L>(m, ws, c, lo, hi, failures);
}
template <class L> PHYSAI_FLATTEN int64_t constraint_smooth_lanes(const Model &m, Workspace &ws, Input q, Input qd, int64_t lo,
                                                                int64_t hi, double *out) {
    return constraint_smooth<L>(m, ws, q, qd, lo, hi, out);
}
template <class L> PHYSAI_FLATTEN int simulate_constrained_lanes(const Model &m, const Actuators &act, const Rollout &r,
                                                                 int64_t n, int64_t k0, const LaneConstrain &con) {
    return simulate_constrained_block<L>(m, act, r, n, k0, con);
}
template <class L> PHYSAI_FLATTEN void simulate_lanes(const Model &m, const Actuators &act, const Rollout &r, int64_t lo, int64_t hi) {
    simulate_states<L>(m, act, r, lo, hi);
}

// the table of cpp/kernels.h for T (double: one state at a time; lanes: flattened)
template <class T> constexpr Kernels kernels_of(const char *name) {
    if constexpr (std::is_same_v<T, double>)
        return {name, 1, &create<T>, &destroy<T>, &run_states<T>, &simulate_states<T>, &constraint_smooth<T>,
                &simulate_constrained_block<T>};
    else
        return {name, lanes_of<T>, &create<T>, &destroy<T>, &run_lanes<T>, &simulate_lanes<T>, &constraint_smooth_lanes<T>,
                &simulate_constrained_lanes<T>};
}

}  // namespace
}  // namespace physai
