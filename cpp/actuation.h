// The actuators' forces and their velocity derivative (src/physai/engine/actuation.py, MuJoCo's mj_fwdActuation;
// passive forces in cpp/passive.h), and the joint forces of wrenches applied to bodies (physai.forces.body_wrench_force).
// Written once for a number type T as the smooth stages; muscles' curves in double only (a model with muscles steps one
// trajectory at a time: Actuators::lanes).
#pragma once

#include <algorithm>
#include <cmath>
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

constexpr double MINVAL = 1e-15;                                      // MuJoCo's mjMINVAL: the divisors' floor

// a muscle's act_dot (actuation.muscle_dynamics, mju_muscleDynamics): (clip(u, 0, 1) - act) / tau, tau the activation or
// deactivation time prm[0], prm[1] scaled by clip(act, 0, 1), switched smoothly over the width prm[2]
inline double muscle_dynamics(double u, double act, const double *prm) {
    double a = vclamp(act, 0.0, 1.0);
    double tau_act = prm[0] * (0.5 + 1.5 * a), tau_deact = prm[1] / (0.5 + 1.5 * a), width = prm[2];
    double dctrl = vclamp(u, 0.0, 1.0) - act, tau;
    if (width < MINVAL) {
        tau = dctrl > 0 ? tau_act : tau_deact;
    } else {                                                           // the quintic sigmoid of dctrl / width + 1/2
        double x = dctrl / width + 0.5;
        double sig = x <= 0 ? 0.0 : x >= 1 ? 1.0 : x * x * x * (3 * x * (2 * x - 5) + 10);
        tau = tau_deact + (tau_act - tau_deact) * sig;
    }
    return dctrl / std::max(MINVAL, tau);
}

// act_dot (na) of the stateful actuators (actuation.activation_rate): integrator u; filter and filterexact
// (u - act) / tau; muscle muscle_dynamics (double: lanes step no muscle, Actuators::lanes)
template <class T> void activation_rate(const Actuators &act, const T *u, const T *a, T *act_dot) {
    for (int k = 0; k < act.nu; k++) {
        int64_t i = act.act_index[k];
        if (i < 0) continue;
        const double *prm = &act.dynprm[3 * k];
        if (act.dyntype[k] == DYN_INTEGRATOR) {
            act_dot[i] = u[k];
        } else if (act.dyntype[k] == DYN_MUSCLE) {
            if constexpr (std::is_same_v<T, double>) act_dot[i] = muscle_dynamics(u[k], a[i], prm);
        } else {
            act_dot[i] = (u[k] - a[i]) / std::max(MINVAL, prm[0]);
        }
    }
}

// actuator k's activation a after h [s] at the rate act_dot (actuation.next_activation, mj_nextActivation): a + h act_dot
// (filterexact: a + act_dot tau (1 - exp(-h / tau))), clamped to actrange where actlimited
template <class T> T next_activation(const Actuators &act, int k, T a, T act_dot, double h) {
    double tau = std::max(MINVAL, act.dynprm[3 * k]);
    T next = act.dyntype[k] == DYN_FILTEREXACT ? a + act_dot * (tau * (1 - std::exp(-h / tau))) : a + act_dot * h;
    return act.actlimited[k] ? vclamp(next, act.actrange[2 * k], act.actrange[2 * k + 1]) : next;
}

// a <- every activation after h at the rates act_dot (na each)
template <class T> void advance_activations(const Actuators &act, T *a, const T *act_dot, double h) {
    for (int k = 0; k < act.nu; k++)
        if (act.act_index[k] >= 0) a[act.act_index[k]] = next_activation(act, k, a[act.act_index[k]], act_dot[act.act_index[k]], h);
}

// the muscle's normalized active force-length curve FL(L) (actuation.muscle_gain_length, mju_muscleGainLength)
inline double muscle_gain_length(double L, double lmin, double lmax) {
    if (!(lmin <= L && L <= lmax)) return 0.0;
    double a = 0.5 * (lmin + 1), b = 0.5 * (1 + lmax), x;
    if (L <= 1) {
        if (L <= a) return x = (L - lmin) / std::max(MINVAL, a - lmin), 0.5 * (x * x);
        return x = (1 - L) / std::max(MINVAL, 1 - a), 1 - 0.5 * (x * x);
    }
    if (L <= b) return x = (L - 1) / std::max(MINVAL, b - 1), 1 - 0.5 * (x * x);
    return x = (lmax - L) / std::max(MINVAL, lmax - b), 0.5 * (x * x);
}

// actuator k's muscle scales for prm (9) at its length (actuation._muscle_scales): peak force, optimal length L0, and
// the normalized length L
inline void muscle_scales(const Actuators &act, int k, double length, const double *prm, double &force, double &L0, double &L) {
    const double *lr = &act.lengthrange[2 * k];
    force = prm[2] < 0 ? prm[3] / std::max(MINVAL, act.acc0[k]) : prm[2];
    L0 = (lr[1] - lr[0]) / std::max(MINVAL, prm[1] - prm[0]);
    L = prm[0] + (length - lr[0]) / std::max(MINVAL, L0);
}

// actuator k's muscle gain -force FL(L) FV(V) (actuation.muscle_gain, mju_muscleGain), or with derivative its
// derivative in the velocity (mjd_muscleGain_vel)
inline double muscle_gain(const Actuators &act, int k, double length, double velocity, bool derivative) {
    const double *prm = &act.gainprm[9 * k];
    double force, L0, L, FV;
    muscle_scales(act, k, length, prm, force, L0, L);
    double vscale = std::max(MINVAL, L0 * prm[6]), V = velocity / vscale, fvmax = prm[8], y = fvmax - 1;
    if (derivative)                                                    // dFV/dV on each piece
        FV = V <= -1 ? 0.0 : V <= 0 ? 2 * V + 2 : V <= y ? (-2 * V + 2 * y) / std::max(MINVAL, y) : 0.0;
    else                                                               // the force-velocity curve FV(V)
        FV = V <= -1 ? 0.0 : V <= 0 ? (V + 1) * (V + 1) : V <= y ? fvmax - (y - V) * (y - V) / std::max(MINVAL, y) : fvmax;
    double FL = muscle_gain_length(L, prm[4], prm[5]);
    return derivative ? -force * FL * FV / vscale : -force * FL * FV;
}

// actuator k's muscle bias (actuation.muscle_bias, mju_muscleBias): -force fpmax times a half-quadratic in L from 1 to
// b = (1 + lmax) / 2, linear beyond
inline double muscle_bias(const Actuators &act, int k, double length) {
    const double *prm = &act.biasprm[9 * k];
    double force, L0, L;
    muscle_scales(act, k, length, prm, force, L0, L);
    double b = 0.5 * (1 + prm[5]), fpmax = prm[7];
    if (L <= 1) return 0.0;
    if (L <= b) {
        double x = (L - 1) / std::max(MINVAL, b - 1);
        return -force * fpmax * 0.5 * x * x;
    }
    return -force * fpmax * (0.5 + (L - b) / std::max(MINVAL, b - 1));
}

// actuator k's gain (actuation.gains): g0 + g1 length + g2 velocity (affine), g0 (fixed), or the muscle's (double)
template <class T> T actuator_gain(const Actuators &act, int k, T length, T velocity) {
    const double *g = &act.gain[3 * k];
    if constexpr (std::is_same_v<T, double>)
        if (act.gaintype[k] == GAIN_MUSCLE) return muscle_gain(act, k, length, velocity, false);
    return act.gaintype[k] == GAIN_AFFINE ? g[0] + g[1] * length + g[2] * velocity : splat<T>(g[0]);
}

// actuator k's bias (actuation.biases): b0 + b1 length + b2 velocity (affine), zero (none), or the muscle's (double)
template <class T> T actuator_bias(const Actuators &act, int k, T length, T velocity) {
    const double *b = &act.bias[3 * k];
    if constexpr (std::is_same_v<T, double>)
        if (act.biastype[k] == GAIN_MUSCLE) return muscle_bias(act, k, length);
    return act.biastype[k] == GAIN_AFFINE ? b[0] + b[1] * length + b[2] * velocity : splat<T>(0.0);
}

// what actuator k's gain multiplies (actuation.inputs): u, or its activation (with actearly its next one)
template <class T> T actuator_input(const Actuators &act, int k, const StepInputs<T> &x) {
    int64_t i = act.act_index[k];
    if (i >= 0) return act.actearly[k] ? next_activation(act, k, x.act[i], x.act_dot[i], x.h) : x.act[i];
    return x.u[k];
}

// actuator k's d force / d velocity before the clamps (actuation.velocity_derivative): the bias's slope (affine) plus
// the gain's (affine, or the muscle's) times its input
template <class T> T actuator_slope(const Actuators &act, int k, T length, T velocity, const StepInputs<T> &x) {
    T gain_vel = splat<T>(act.gaintype[k] == GAIN_AFFINE ? act.gain[3 * k + 2] : 0.0);
    if constexpr (std::is_same_v<T, double>)
        if (act.gaintype[k] == GAIN_MUSCLE) gain_vel = muscle_gain(act, k, length, velocity, true);
    return (act.biastype[k] == GAIN_AFFINE ? act.bias[3 * k + 2] : 0.0) + gain_vel * actuator_input(act, k, x);
}

// f += moment^T force, clamped per dof, with the actuators' scalar forces force (nu) = gain input + bias (clamped to
// forcerange) for the clamped controls x.u and activations x.act (actuation.scalar_forces, actuation.joint_force); their
// rates into x.act_dot first, each actuator's slope into x.slope; moment^T force into t (nv) first
template <class T>
void actuator_force(const Model &m, const Actuators &act, StepInputs<T> &x, const T *q, const T *qd, T *force, T *f, T *t) {
    if (act.na) activation_rate(act, x.u.data(), x.act.data(), x.act_dot.data());
    for (int a = 0; a < act.nu; a++) {
        T length, velocity;
        actuator_length_velocity(m, act, a, q, qd, length, velocity);
        T fa = actuator_gain(act, a, length, velocity) * actuator_input(act, a, x) + actuator_bias(act, a, length, velocity);
        force[a] = act.forcelimited[a] ? vclamp(fa, act.forcerange[2 * a], act.forcerange[2 * a + 1]) : fa;
        x.slope[a] = actuator_slope(act, a, length, velocity, x);
    }
    joint_force(m, act, force, t);
    for (int j = 0; j < m.nv; j++) {
        const double *range = &act.dof_forcerange[2 * j];
        f[j] = f[j] + (act.dof_forcelimited[j] ? vclamp(t[j], range[0], range[1]) : t[j]);
    }
}

// D += dA/dqd = sum_a moment_a^T slope_a moment_a over the actuators not clamped at their forcerange, nor joint
// actuators whose dof's total (moment^T force, into t (nv)) is at or beyond its actuatorfrcrange (MuJoCo 4.0;
// actuation.velocity_derivative, actuation.joint_saturated), with the slopes (nu) actuator_force left
template <class T>
void actuator_velocity_derivative(const Model &m, const Actuators &act, const T *slope, const T *force, T *D, T *t) {
    joint_force(m, act, force, t);
    for (int a = 0; a < act.nu; a++) {
        T k = slope[a];
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
