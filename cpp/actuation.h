// The actuators' forces and their velocity derivative (src/physai/engine/actuation.py, MuJoCo's mj_fwdActuation;
// passive forces in cpp/passive.h), and the joint forces of wrenches applied to bodies (physai.forces.body_wrench_force).
// Written once for a number type T as the smooth stages. Stateless affine actuators only: the others (activation
// dynamics, muscles) run in the NumPy engine (native.compiled_actuation).
#pragma once

#include <cstddef>
#include <type_traits>

#include "data.h"
#include "model.h"
#include "passive.h"
#include "spatial.h"

namespace physai {
namespace {

// actuator a's length qmoment_a q and velocity moment_a qd, over its arms' nonzero entries (one joint for most)
template <class T>
void actuator_length_velocity(const Model &m, const Actuators &act, int a, const T *q, const T *qd, T &length, T &velocity) {
    const double *qr = &act.qmoment[size_t(a) * m.nq], *r = &act.moment[size_t(a) * m.nv];
    length = splat<T>(0.0), velocity = splat<T>(0.0);
    for (int64_t s = act.qmoment_rowadr[a]; s < act.qmoment_rowadr[a] + act.qmoment_rownnz[a]; s++)
        length = length + qr[act.qmoment_colind[s]] * q[act.qmoment_colind[s]];
    for (int64_t s = act.moment_rowadr[a]; s < act.moment_rowadr[a] + act.moment_rownnz[a]; s++)
        velocity = velocity + r[act.moment_colind[s]] * qd[act.moment_colind[s]];
}

// t = moment^T force (nv), the actuators in order, over moment's nonzero entries
template <class T> void joint_force(const Model &m, const Actuators &act, const T *force, T *t) {
    for (int j = 0; j < m.nv; j++) t[j] = splat<T>(0.0);
    for (int a = 0; a < act.nu; a++) {
        const double *r = &act.moment[size_t(a) * m.nv];
        for (int64_t s = act.moment_rowadr[a]; s < act.moment_rowadr[a] + act.moment_rownnz[a]; s++) {
            int64_t j = act.moment_colind[s];
            t[j] = t[j] + r[j] * force[a];
        }
    }
}

// f += moment^T force, clamped per dof, with the actuators' scalar forces force (nu) = gain u + bias (clamped to
// forcerange) for the clamped controls u (actuation.scalar_forces, actuation.joint_force); moment^T force into t (nv) first
template <class T>
void actuator_force(const Model &m, const Actuators &act, const T *u, const T *q, const T *qd, T *force, T *f, T *t) {
    for (int a = 0; a < act.nu; a++) {
        T length, velocity;
        actuator_length_velocity(m, act, a, q, qd, length, velocity);
        const double *g = &act.gain[3 * a], *b = &act.bias[3 * a];
        T fa = (g[0] + g[1] * length + g[2] * velocity) * u[a] + b[0] + b[1] * length + b[2] * velocity;
        force[a] = act.forcelimited[a] ? vclamp(fa, act.forcerange[2 * a], act.forcerange[2 * a + 1]) : fa;
    }
    joint_force(m, act, force, t);
    for (int j = 0; j < m.nv; j++) {
        const double *range = &act.dof_forcerange[2 * j];
        f[j] = f[j] + (act.dof_forcelimited[j] ? vclamp(t[j], range[0], range[1]) : t[j]);
    }
}

// D += dA/dqd = sum_a moment_a^T (b2 + g2 u_a) moment_a over the actuators not clamped at their forcerange, nor joint
// actuators whose dof's total (moment^T force, into t (nv)) is at or beyond its actuatorfrcrange (MuJoCo 4.0;
// actuation.velocity_derivative, actuation.joint_saturated)
template <class T>
void actuator_velocity_derivative(const Model &m, const Actuators &act, const T *u, const T *force, T *D, T *t) {
    joint_force(m, act, force, t);
    for (int a = 0; a < act.nu; a++) {
        T k = act.bias[3 * a + 2] + act.gain[3 * a + 2] * u[a];
        if (act.forcelimited[a])
            k = select((force[a] > act.forcerange[2 * a]) & (force[a] < act.forcerange[2 * a + 1]), k, splat<T>(0.0));
        int64_t j = act.joint_dof[a];
        if (j >= 0 && act.dof_forcelimited[j])                         // its joint's total strictly inside the range
            k = select((t[j] > act.dof_forcerange[2 * j]) & (t[j] < act.dof_forcerange[2 * j + 1]), k, splat<T>(0.0));
        if (!lane_any(k != 0.0)) continue;                             // a motor: no velocity gain
        const double *r = &act.moment[size_t(a) * m.nv];
        const int64_t *dofs = act.moment_colind + act.moment_rowadr[a], n = act.moment_rownnz[a];   // one joint for most
        for (int64_t s = 0; s < n; s++)
            for (int64_t t = 0; t < n; t++) {
                int64_t i = dofs[s], j = dofs[t];
                D[size_t(i) * m.nv + j] = D[size_t(i) * m.nv + j] + r[i] * (k * r[j]);
            }
    }
}

// f += sum_b J_b(com_b)^T w_b for wrenches w_b = (force, torque) at the bodies' centres of mass (forces.body_wrench_force)
// on a Data after com_pos: with r the centre of mass relative to the tree's centre, dof i takes
// S_lin . F + S_ang . (r x F + torque)
template <class T> void body_wrench_force(const Model &m, const Data<T> &d, const T *xfrc, T *f) {
    for (int b = 0; b < m.nbody; b++) {
        const T *w = xfrc + 6 * b;
        int64_t l = m.body_linkid[b];
        if (l < 0) continue;
        if constexpr (std::is_same_v<T, double>)
            if (w[0] == 0.0 && w[1] == 0.0 && w[2] == 0.0 && w[3] == 0.0 && w[4] == 0.0 && w[5] == 0.0) continue;
        T r[3];
        link_point(d, l, &m.body_linkipos[3 * b], r);
        apply_force(m, d, l, r, w, w + 3, f);
    }
}

}  // namespace
}  // namespace physai
