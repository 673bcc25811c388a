// The forward pipeline (src/physai/engine/forward.py, MuJoCo's engine_forward.c): qdd = M^-1 (tau - c) by M's Cholesky
// factor (smooth.h's tree_cholesky_solve).
#pragma once

#include "data.h"
#include "model.h"
#include "smooth.h"

namespace physai {
namespace {

// qdd = M^-1 (tau - c) (api.forward_dynamics) on a Data after velocity_stages(q, qd): c by rne, M by crb into d.qM,
// solved by Cholesky on M's pattern (smooth.tree_cholesky_solve; its factor in d.qL, d.qLinv)
template <class T> int forward_dynamics(const Model &m, Data<T> &d, const T *qd, const T *tau, T *qdd) {
    rne(m, d, qd, (const T *)nullptr, qdd);                            // c, then tau - c
    for (int j = 0; j < m.nv; j++) qdd[j] = tau[j] - qdd[j];
    crb(m, d, d.qM.data());
    return tree_cholesky_solve(m, d.qM.data(), qdd, d.qL.data(), d.qLinv.data());
}

}  // namespace
}  // namespace physai
