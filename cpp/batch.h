// A batch call's states through the kernels of one number type T: double one state at a time, lanes of states side by
// side (gathered into lanes, the last lanes of a short block repeating a state, and scattered back). kernels_of<T> is
// the table of cpp/kernels.h for T; each kernel unit (scalar.cpp, isa_*.cpp) defines its table with it, for its own T.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <optional>
#include <type_traits>

#include "data.h"
#include "derivative.h"
#include "forward.h"
#include "integrate.h"
#include "kernels.h"
#include "model.h"
#include "smooth.h"

namespace physai {
namespace {

// one state (or lanes of states) of op (Op) from the inputs x (q, then qd, then qdd or tau as op takes) into out
template <class T> int compute(const Model &m, Data<T> &d, int op, const T *const *x, T *out) {
    const T *q = x[0], *qd = x[1];
    int st = position(m, d, q);
    if (st != OK) return st;
    switch (op) {
        case RNEA: com_vel(m, d, qd); rne(m, d, qd, x[2], out); return OK;
        case BIAS: com_vel(m, d, qd); rne(m, d, qd, (const T *)nullptr, out); return OK;
        case GRAVITY: rne(m, d, (const T *)nullptr, (const T *)nullptr, out); return OK;
        case MASS_MATRIX: crb(m, d, out); return OK;
        case FORWARD_DYNAMICS: com_vel(m, d, qd); return forward_dynamics(m, d, qd, x[2], out);
        case ABA: com_vel(m, d, qd); return aba(m, d, qd, x[2], out);
        case KINETIC: com_vel(m, d, qd); out[0] = kinetic(m, d, qd); return OK;
        case POTENTIAL: out[0] = potential(m, d, q); return OK;
        case ENERGY: com_vel(m, d, qd); out[0] = kinetic(m, d, qd) + potential(m, d, q); return OK;
    }
    return OK;
}

template <class T> Work<T> &work_of(Workspace &ws) { return *reinterpret_cast<Work<T> *>(&ws); }
template <class T> Workspace *create(const Model &m) { return reinterpret_cast<Workspace *>(new Work<T>(m)); }
template <class T> void destroy(Workspace *ws) { delete reinterpret_cast<Work<T> *>(ws); }

// entries per state of op's input k and of its output
inline int64_t input_size(const Model &m, int op, int k) { return OP_INPUTS[op][k] == 'q' ? m.nq : m.nv; }
inline int64_t output_size(const Model &m, int op) {
    return OP_OUTPUT[op] == 'v' ? m.nv : OP_OUTPUT[op] == 'M' ? int64_t(m.nv) * m.nv : 1;
}

// for lanes: w.x holds the nin inputs' lanes (pointers into xl) and w.o room for `outputs` entries (allocated once)
template <class L> void lanes_buffers(Work<L> &w, int nin, const int64_t *sizes, L **xl, size_t outputs) {
    size_t total = 0;
    for (int k = 0; k < nin; k++) total += size_t(sizes[k]);
    if (w.x.size() < total) w.x.resize(total);
    if (w.o.size() < outputs) w.o.resize(outputs);
    for (int k = 0, at = 0; k < 3; k++) {
        xl[k] = k < nin ? w.x.data() + at : nullptr;
        if (k < nin) at += int(sizes[k]);
    }
}

// states s .. s + count - 1 of the inputs into lane l of xl (lanes past count repeat the last state)
template <class L> void gather(const Input *in, int nin, const int64_t *sizes, int64_t s, int64_t count, L *const *xl) {
    for (int k = 0; k < nin; k++)
        for (int l = 0; l < lanes_of<L>; l++) {
            const double *src = in[k].data + (s + std::min<int64_t>(l, count - 1)) * in[k].stride;
            for (int64_t e = 0; e < sizes[k]; e++) xl[k][e][l] = src[e];
        }
}

// lanes l < count of o (per entries) into states s + l of out; false when an entry is not finite
template <class L> bool scatter(const L *o, int64_t per, int64_t s, int64_t count, double *out) {
    for (int64_t l = 0; l < count; l++) {
        double *dst = out + (s + l) * per;
        for (int64_t e = 0; e < per; e++) {
            dst[e] = o[e][l];
            if (!std::isfinite(dst[e])) return false;
        }
    }
    return true;
}

inline bool all_finite(const double *x, int64_t n) {
    for (int64_t e = 0; e < n; e++)
        if (!std::isfinite(x[e])) return false;
    return true;
}

// Kernels::compute for T
template <class T> int64_t compute_states(const Model &m, Workspace &ws, int op, const Input *in, double *const *outs, int64_t lo,
                                          int64_t hi, const std::atomic<int> &stop) {
    Work<T> &w = work_of<T>(ws);
    double *out = outs[0];
    int nin = 0;
    int64_t sizes[3] = {0, 0, 0}, per = output_size(m, op);
    for (; OP_INPUTS[op][nin]; nin++) sizes[nin] = input_size(m, op, nin);
    int64_t s = lo;
    if constexpr (std::is_same_v<T, double>) {
        for (; s < hi; s++) {                                          // the inputs in place
            if (stop.load(std::memory_order_relaxed)) return FAILED;
            const double *x[3] = {nullptr, nullptr, nullptr};
            for (int k = 0; k < nin; k++) x[k] = in[k].data + s * in[k].stride;
            double *o = out + s * per;
            if (compute(m, w.d, op, x, o) != OK || !all_finite(o, per)) return FAILED;
        }
    } else {
        T *xl[3];
        lanes_buffers(w, nin, sizes, xl, size_t(per));
        const T *x[3] = {xl[0], xl[1], xl[2]};
        for (; hi - s >= 2; s += lanes_of<T>) {
            if (stop.load(std::memory_order_relaxed)) return FAILED;
            int64_t count = std::min<int64_t>(lanes_of<T>, hi - s);
            gather(in, nin, sizes, s, count, xl);
            if (compute(m, w.d, op, x, w.o.data()) != OK || !scatter(w.o.data(), per, s, count, out)) return FAILED;
        }
    }
    return s;
}

// Kernels::derivatives for T
template <class T> int64_t derivatives_states(const Model &m, Workspace &ws, int op, const Input *in, double *const *out,
                                              int64_t lo, int64_t hi, const std::atomic<int> &stop) {
    Work<T> &w = work_of<T>(ws);
    if (w.deriv.empty()) w.deriv.emplace_back(m);
    DerivData<T> &dw = w.deriv[0];
    const int64_t sizes[3] = {m.nq, m.nv, m.nv}, per = int64_t(m.nv) * m.nv;
    int64_t s = lo;
    if constexpr (std::is_same_v<T, double>) {
        for (; s < hi; s++) {                                          // the inputs in place
            if (stop.load(std::memory_order_relaxed)) return FAILED;
            const double *x[3] = {in[0].data + s * in[0].stride, in[1].data + s * in[1].stride, in[2].data + s * in[2].stride};
            double *o[3] = {out[0] + s * per, out[1] + s * per, out[2] + s * per};
            if (derivatives_op(m, w.d, dw, op, x, o) != OK) return FAILED;
            for (int k = 0; k < 3; k++)
                if (!all_finite(o[k], per)) return FAILED;
        }
    } else {
        T *xl[3];
        lanes_buffers(w, 3, sizes, xl, size_t(3 * per));
        const T *x[3] = {xl[0], xl[1], xl[2]};
        T *o[3] = {w.o.data(), w.o.data() + per, w.o.data() + 2 * per};
        for (; hi - s >= 2; s += lanes_of<T>) {
            if (stop.load(std::memory_order_relaxed)) return FAILED;
            int64_t count = std::min<int64_t>(lanes_of<T>, hi - s);
            gather(in, 3, sizes, s, count, xl);
            if (derivatives_op(m, w.d, dw, op, x, o) != OK) return FAILED;
            for (int k = 0; k < 3; k++)
                if (!scatter(o[k], per, s, count, out[k])) return FAILED;
        }
    }
    return s;
}

// Kernels::simulate for T
template <class T> void simulate_states(const Model &m, const SimModel &s, const Rollout &r, int64_t lo, int64_t hi) {
    if constexpr (std::is_same_v<T, double>) {
        std::optional<SimData<double>> w;                              // made for the first trajectory left
        for (int64_t n = lo; n < hi; n++) {
            if (r.status[n] != RERUN) continue;
            if (!w) w.emplace(m, s);
            r.status[n] = simulate_one(m, s, *w, r, n);
        }
    } else {
        if (r.integrator == IMPLICIT || hi - lo < 2) return;
        SimData<T> w(m, s);
        for (int64_t n = lo; hi - n >= 2; n += lanes_of<T>) {
            int64_t count = std::min<int64_t>(lanes_of<T>, hi - n);
            if (simulate_block(m, s, w, r, n, count) == STEPPED)
                for (int64_t l = 0; l < count; l++) r.status[n + l] = -1;
        }
    }
}

// the lane kernels inline everything they call (as the former target-attribute variants did): one function per call
#if defined(__GNUC__)
#define PHYSAI_FLATTEN __attribute__((flatten))
#else
#define PHYSAI_FLATTEN
#endif
template <class L> PHYSAI_FLATTEN int64_t compute_lanes(const Model &m, Workspace &ws, int op, const Input *in, double *const *out,
                                                        int64_t lo, int64_t hi, const std::atomic<int> &stop) {
    return compute_states<L>(m, ws, op, in, out, lo, hi, stop);
}
template <class L> PHYSAI_FLATTEN int64_t derivatives_lanes(const Model &m, Workspace &ws, int op, const Input *in, double *const *out,
                                                            int64_t lo, int64_t hi, const std::atomic<int> &stop) {
    return derivatives_states<L>(m, ws, op, in, out, lo, hi, stop);
}
template <class L> PHYSAI_FLATTEN void simulate_lanes(const Model &m, const SimModel &s, const Rollout &r, int64_t lo, int64_t hi) {
    simulate_states<L>(m, s, r, lo, hi);
}

// the table of cpp/kernels.h for T (double: one state at a time; lanes: flattened)
template <class T> constexpr Kernels kernels_of(const char *name) {
    if constexpr (std::is_same_v<T, double>)
        return {name, 1, &create<T>, &destroy<T>, &compute_states<T>, &derivatives_states<T>, &simulate_states<T>};
    else
        return {name, lanes_of<T>, &create<T>, &destroy<T>, &compute_lanes<T>, &derivatives_lanes<T>, &simulate_lanes<T>};
}

}  // namespace
}  // namespace physai
