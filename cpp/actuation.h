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
#include "smooth.h"
#include "spatial.h"
#include "support.h"
#include "tendon.h"

namespace physai {
namespace {

// actuator a's control u as its force reads it: clamped to ctrlrange where ctrllimited (actuation.clamped_ctrl)
inline double clamped_ctrl(const Actuators &act, int a, double u) {
    return act.ctrllimited[a] ? vclamp(u, act.ctrlrange[2 * a], act.ctrlrange[2 * a + 1]) : u;
}

// the moment arms (nu, nv) the actuators act through at the state x was last evaluated at: the transmission's
// (x.trn.moment) when some depend on the configuration (Actuators::posed; actuation.posed), else the constant ones
template <class T> const double *arms(const Actuators &act, const StepInputs<T> &x) {
    return act.posed ? x.trn.moment.data() : act.moment;
}

// the lengths (nu) of that state when some arms depend on the configuration (x.trn.length), else null (qmoment q)
template <class T> const double *posed_lengths(const Actuators &act, const StepInputs<T> &x) {
    return act.posed ? x.trn.length.data() : nullptr;
}

// actuator a's length qmoment_a q (lengths[a] for a posed actuator when given: its state's) and velocity moment_a qd
// with the arms `moment` (nu, nv), over its arms' nonzero entries (one joint for most)
template <class T>
void actuator_length_velocity(const Model &m, const Actuators &act, const double *moment, const double *lengths, int a,
                              const T *q, const T *qd, T &length, T &velocity) {
    const double *qr = &act.qmoment[size_t(a) * m.nq], *r = &moment[size_t(a) * m.nv];
    length = splat<T>(0.0), velocity = splat<T>(0.0);
    if (lengths && act.posed_each[a])
        length = splat<T>(lengths[a]);
    else
        for (int64_t s = act.qmoment_rowadr[a]; s < act.qmoment_rowadr[a] + act.qmoment_rownnz[a]; s++)
            length = length + qr[act.qmoment_colind[s]] * q[act.qmoment_colind[s]];
    for (int64_t s = act.moment_rowadr[a]; s < act.moment_rowadr[a] + act.moment_rownnz[a]; s++)
        velocity = velocity + r[act.moment_colind[s]] * qd[act.moment_colind[s]];
}

// t = moment^T force (nv) with the arms `moment` (nu, nv), the actuators in order, over moment's nonzero entries
template <class T> void joint_force(const Model &m, const Actuators &act, const double *moment, const T *force, T *t) {
    for (int j = 0; j < m.nv; j++) t[j] = splat<T>(0.0);
    for (int a = 0; a < act.nu; a++) {
        const double *r = &moment[size_t(a) * m.nv];
        for (int64_t s = act.moment_rowadr[a]; s < act.moment_rowadr[a] + act.moment_rownnz[a]; s++) {
            int64_t j = act.moment_colind[s];
            t[j] = t[j] + r[j] * force[a];
        }
    }
}

constexpr double MINVAL = 1e-15;                                      // MuJoCo's mjMINVAL: the divisors' floor

// ---------------------------------------------------------------- transmissions (mj_transmission)
// the arms of the actuators whose moment arms depend on the configuration (Actuators::posed), one state at a time
// (double): ball and free joints, slider-cranks, sites, spatial tendons; a body's (adhesion) contacts stay with the
// NumPy engine (native.runs)

constexpr double TRN_PI = 3.14159265358979323846;

// the rotation vector vel (3) of a unit quaternion (actuation.quat_to_vel, mju_quat2Vel over a unit time): its axis
// times its angle, wrapped to (-pi, pi]
inline void quat_to_vel(const double *quat, double *vel) {
    double axis[3] = {quat[1], quat[2], quat[3]};
    const double sin_half = std::sqrt(axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2]);
    for (int a = 0; a < 3; a++) axis[a] = sin_half >= MINVAL ? axis[a] / sin_half : (a == 0 ? 1.0 : 0.0);
    double angle = 2 * std::atan2(sin_half, quat[0]);
    if (angle > TRN_PI) angle -= 2 * TRN_PI;
    for (int a = 0; a < 3; a++) vel[a] = axis[a] * angle;
}

// the inverse (w, -x, -y, -z) of a unit quaternion (actuation.conjugate, mju_negQuat)
inline void conjugate(const double *quat, double *r) {
    r[0] = quat[0], r[1] = -quat[1], r[2] = -quat[2], r[3] = -quat[3];
}

// the site frames of one state the transmissions read into w (actuation.SiteFrames): site_xpos (nsite, 3) [m],
// site_xquat (4) and site_xmat (9), from the bodies' MuJoCo-order poses in d (body_poses)
inline void site_frames(const Model &m, const Data<double> &d, Transmission &w) {
    const double identity[4] = {1.0, 0.0, 0.0, 0.0};
    for (int64_t k = 0; k < m.nsite; k++) {
        const int64_t b = m.site_bodyid[k];
        const double *body_quat = b < 0 ? identity : &d.body_xquat[size_t(4 * b)];
        double *p = &w.site_xpos[size_t(3 * k)], *quat = &w.site_xquat[size_t(4 * k)];
        // site pose: p = R_body site_pos + p_body, q = q_body q_site
        if (b < 0) {
            for (int a = 0; a < 3; a++) p[a] = m.site_pos[3 * k + a];
        } else {
            rotate_mj(m.site_pos + 3 * k, body_quat, p);
            for (int a = 0; a < 3; a++) p[a] = p[a] + d.body_xpos[size_t(3 * b + a)];
        }
        quat_mul_mj(body_quat, m.site_quat + 4 * k, quat);
        quat_to_mat_mj(quat, &w.site_xmat[size_t(9 * k)]);
    }
}

// (Jp; Jr) (6, nv) of site s into J (actuation.site_jacobian, mj_jacSite), from a Data with com_pos done
inline void site_jacobian(const Model &m, const Data<double> &d, const Transmission &w, int64_t s, double *J) {
    double r[3];
    std::fill(J, J + 6 * m.nv, 0.0);
    point_jacobians(m, d, world_offset(m, d, m.site_bodyid[s], &w.site_xpos[size_t(3 * s)], r), r, J);
}

// the length of actuator a on a ball or free joint at q, its moment into moment (nv, zero) (actuation.joint_transmission):
// a ball's length is its rotation vector along the gear axis, a free joint's 0; the moment is the gear (the rotation's
// part turned into the parent frame by the joint's inverse quaternion for jointinparent)
inline double joint_transmission(const Model &m, const Actuators &act, const double *q, int a, double *moment) {
    const int64_t j = act.trnid[2 * a];
    const double *gear = act.gear6 + 6 * a;
    const bool ball = m.jnt_type[j] == JNT_BALL;
    const int64_t qadr = m.jnt_qposadr[j], vadr = m.jnt_dofadr[j];
    double quat[4], inverse[4], axis[3];
    for (int k = 0; k < 4; k++) quat[k] = q[qadr + (ball ? 0 : 3) + k];
    quat_normalize_mj(quat);
    const double *turn = ball ? gear : gear + 3;
    if (act.trntype[a] == TRN_JOINT) {
        for (int k = 0; k < 3; k++) axis[k] = turn[k];
    } else {
        conjugate(quat, inverse);
        rotate_mj(turn, inverse, axis);
    }
    if (ball) {                                                        // L = rotation vector . gear axis, moment = gear axis
        double vel[3];
        for (int k = 0; k < 3; k++) moment[vadr + k] = axis[k];
        quat_to_vel(quat, vel);
        return inner3(vel, axis);
    }
    for (int k = 0; k < 3; k++) moment[vadr + k] = gear[k], moment[vadr + 3 + k] = axis[k];
    return 0.0;
}

// the length of slider-crank actuator a, its moment into moment (nv) (actuation.slider_crank): with v = crank - slider
// and a the slider's z axis, L = a.v - sqrt((a.v)^2 + r^2 - v.v) (a.v where the root is not real), times the gear; the
// moment by the chain rule through the Jacobians of v and of the axis
inline double slider_crank(const Model &m, const Actuators &act, const Data<double> &d, Transmission &w, int a, double *moment) {
    const int64_t crank = act.trnid[2 * a], slider = act.trnid[2 * a + 1], nv = m.nv;
    const double rod = act.cranklength[a], gear = act.gear6[6 * a], *R = &w.site_xmat[size_t(9 * slider)];
    const double axis[3] = {R[2], R[5], R[8]};
    double vec[3], dlda[3], dldv[3], length;
    for (int k = 0; k < 3; k++) vec[k] = w.site_xpos[size_t(3 * crank + k)] - w.site_xpos[size_t(3 * slider + k)];
    const double av = inner3(vec, axis), det = av * av + rod * rod - inner3(vec, vec);
    if (det <= 0) {                                                    // no real root: L = a.v
        length = av;
        for (int k = 0; k < 3; k++) dlda[k] = vec[k], dldv[k] = axis[k];
    } else {                                                           // dL/dv = a (1 - a.v / s) + v / s, dL/da = v (1 - a.v / s)
        const double sdet = std::sqrt(det);
        length = av - sdet;
        for (int k = 0; k < 3; k++) dlda[k] = vec[k] * (1 - av / sdet), dldv[k] = axis[k] * (1 - av / sdet) + vec[k] / sdet;
    }
    double *Jslider = w.jac.data(), *Jcrank = Jslider + 6 * nv;
    site_jacobian(m, d, w, slider, Jslider);
    site_jacobian(m, d, w, crank, Jcrank);
    for (int64_t i = 0; i < nv; i++) {                                 // the axis' rate: omega x a per dof
        const double omega[3] = {Jslider[3 * nv + i], Jslider[4 * nv + i], Jslider[5 * nv + i]};
        double Jaxis[3], Jvec[3];
        cross(omega, axis, Jaxis);
        for (int k = 0; k < 3; k++) Jvec[k] = Jcrank[k * nv + i] - Jslider[k * nv + i];
        moment[i] = (inner3(dlda, Jaxis) + inner3(dldv, Jvec)) * gear;
    }
    return length * gear;
}

// w.chain (nv) += mark on the dofs that move body b (support.dof_chain; none for the world or a body welded to it)
inline void mark_chain(const Model &m, Transmission &w, int64_t b, char mark) {
    const int64_t link = b >= 0 ? m.body_linkid[b] : -1;
    if (link < 0) return;
    for (int64_t i = m.link_dofadr[link] + m.link_dofnum[link] - 1; i >= 0; i = m.dof_parentid[i]) w.chain[size_t(i)] += mark;
}

// the length of site actuator a, its moment into moment (nv, zero) (actuation.site_transmission): without a refsite,
// length 0 and the moment the site's Jacobian projected on the gear wrench turned into the world; with one, the site's
// position and rotation vector relative to the refsite's frame along the gear, the moment through the relative
// Jacobians without the dofs that move both
inline double site_transmission(const Model &m, const Actuators &act, const Data<double> &d, Transmission &w, int a,
                                double *moment) {
    const int64_t s = act.trnid[2 * a], ref = act.trnid[2 * a + 1], nv = m.nv;
    const double *gear = act.gear6 + 6 * a;
    double *J = w.jac.data(), *Jref = J + 6 * nv, turned[6];
    site_jacobian(m, d, w, s, J);
    if (ref < 0) {                                                     // moment = Jp^T R gear_t + Jr^T R gear_r
        mat3_times(&w.site_xmat[size_t(9 * s)], gear, turned), mat3_times(&w.site_xmat[size_t(9 * s)], gear + 3, turned + 3);
        for (int64_t i = 0; i < nv; i++)
            moment[i] = (turned[0] * J[i] + turned[1] * J[nv + i] + turned[2] * J[2 * nv + i]) +
                        (turned[3] * J[3 * nv + i] + turned[4] * J[4 * nv + i] + turned[5] * J[5 * nv + i]);
        return 0.0;
    }
    std::fill(w.chain.begin(), w.chain.end(), char(0));
    mark_chain(m, w, m.site_bodyid[s], 1), mark_chain(m, w, m.site_bodyid[ref], 1);     // 2: the dofs that move both
    site_jacobian(m, d, w, ref, Jref);
    const double *R = &w.site_xmat[size_t(9 * ref)];
    mat3_times(R, gear, turned), mat3_times(R, gear + 3, turned + 3);
    double length = 0.0;
    for (int part = 0; part < 2; part++) {
        const double *g = gear + 3 * part, *t = turned + 3 * part;
        if (g[0] == 0.0 && g[1] == 0.0 && g[2] == 0.0) continue;
        double rel[3];
        if (part == 0) {                                               // L += gear_t . R_ref^T (p - p_ref), moment += (R_ref gear_t)^T dJp
            double dif[3];
            for (int k = 0; k < 3; k++) dif[k] = w.site_xpos[size_t(3 * s + k)] - w.site_xpos[size_t(3 * ref + k)];
            mat_t_times_mj(R, dif, rel);
        } else {                                                       // L += gear_r . log(q_ref^-1 q), moment += (R_ref gear_r)^T dJr
            double inverse[4], quat[4];
            conjugate(&w.site_xquat[size_t(4 * ref)], inverse);
            quat_mul_mj(inverse, &w.site_xquat[size_t(4 * s)], quat);
            quat_to_vel(quat, rel);
        }
        length += inner3(rel, g);
        const double *Jp = J + 3 * part * nv, *Jp_ref = Jref + 3 * part * nv;
        for (int64_t i = 0; i < nv; i++)
            if (w.chain[size_t(i)] != 2)
                moment[i] += t[0] * (Jp[i] - Jp_ref[i]) + t[1] * (Jp[nv + i] - Jp_ref[nv + i]) + t[2] * (Jp[2 * nv + i] - Jp_ref[2 * nv + i]);
    }
    return length;
}

// actuator_length (nu) [m | rad] and actuator_moment (nu, nv) at q into w (actuation.transmission, MuJoCo's
// mj_transmission), from a Data with com_pos done and, when the model has tendons, their lengths and Jacobians (tendon.h's
// tendons, which with a spatial tendon leave the bodies' MuJoCo-order frames in d: one pose pass serves both): the
// constant rows' moment copied (their length stays qmoment q: actuator_length_velocity), the posed rows computed
// (joint_transmission, slider_crank, site_transmission, a spatial tendon's length and Jacobian times the gear)
inline void transmission(const Model &m, const Actuators &act, Data<double> &d, Transmission &w, const double *q) {
    const int64_t nv = m.nv;
    bool sites = false;
    for (int a = 0; a < act.nu; a++) {
        std::copy_n(act.moment + a * nv, nv, &w.moment[size_t(a * nv)]);
        sites |= act.posed_each[a] && (act.trntype[a] == TRN_SLIDERCRANK || act.trntype[a] == TRN_SITE);
    }
    if (sites) {
        if (!m.tendon_spatial) body_poses(m, q, d.body_xpos.data(), d.body_xquat.data(), d.body_xmat.data());
        site_frames(m, d, w);
    }
    for (int a = 0; a < act.nu; a++) {
        if (!act.posed_each[a]) continue;
        double *moment = &w.moment[size_t(a * nv)], &length = w.length[size_t(a)];
        std::fill(moment, moment + nv, 0.0);
        const int64_t kind = act.trntype[a];
        if (kind == TRN_JOINT || kind == TRN_JOINTINPARENT) {
            length = joint_transmission(m, act, q, a, moment);
        } else if (kind == TRN_SLIDERCRANK) {
            length = slider_crank(m, act, d, w, a, moment);
        } else if (kind == TRN_SITE) {
            length = site_transmission(m, act, d, w, a, moment);
        } else {                                                       // L = gear ten_length, moment = gear ten_J
            const int64_t t = act.trnid[2 * a];
            const double gear = act.gear6[6 * a];
            length = d.ten_length[size_t(t)] * gear;
            for (int64_t i = 0; i < nv; i++) moment[i] = d.ten_J[size_t(t * nv + i)] * gear;
        }
    }
}

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

// the forces (nu) before their limits scaled on the force-limited tendons (actuation.tendon_scaled): a tendon's total T
// of its actuators' forces outside [low, high] scales each by low / T or high / T
template <class T> void tendon_scaled(const Actuators &act, T *force) {
    for (int a = 0; a < act.nu; a++) {
        int64_t t = act.tendon_frcid[a];
        bool first = t >= 0;                                           // each tendon once, at its first actuator
        for (int b = 0; b < a && first; b++) first = act.tendon_frcid[b] != t;
        if (!first) continue;
        T total = splat<T>(0.0);                                       // in actuator order, as mj_fwdActuation
        for (int b = a; b < act.nu; b++)
            if (act.tendon_frcid[b] == t) total = total + force[b];
        double lo = act.tendon_frcrange[2 * a], hi = act.tendon_frcrange[2 * a + 1];
        auto on = total != 0.0;
        T safe = select(on, total, splat<T>(1.0));
        T scale = select(on & (total < lo), lo / safe, select(on & (total > hi), hi / safe, splat<T>(1.0)));
        for (int b = a; b < act.nu; b++)                               // f = raw (limit / T)
            if (act.tendon_frcid[b] == t) force[b] = force[b] * scale;
    }
}

// how near a force-limited tendon's total of its actuators' final forces counts as at its limit (the scaled total
// lands there up to rounding; MuJoCo 4.0's qDeriv drops them within 1e-12: actuation.TENDON_AT)
constexpr double TENDON_AT = 1e-12;

// the slopes (nu) zeroed on the force-limited tendons whose total of the final forces force (nu; scaled, then clamped
// to forcerange) is at (within TENDON_AT) or beyond the limits (actuation.tendon_saturated: they drop out of the
// implicit damping, MuJoCo 4.0)
template <class T> void tendon_saturated(const Actuators &act, const T *force, T *slope) {
    for (int a = 0; a < act.nu; a++) {
        int64_t t = act.tendon_frcid[a];
        if (t < 0) continue;
        T total = splat<T>(0.0);                                       // in actuator order, as mj_fwdActuation
        for (int b = 0; b < act.nu; b++)
            if (act.tendon_frcid[b] == t) total = total + force[b];
        double lo = act.tendon_frcrange[2 * a], hi = act.tendon_frcrange[2 * a + 1];
        slope[a] = select((total <= lo + TENDON_AT) | (total >= hi - TENDON_AT), splat<T>(0.0), slope[a]);
    }
}

// f += moment^T force, clamped per dof, with the actuators' scalar forces force (nu) = gain input + bias (scaled on a
// force-limited tendon, tendon_scaled, then clamped to forcerange) for the clamped controls x.u and activations x.act
// (actuation.scalar_forces, actuation.joint_force); their rates into x.act_dot first, each actuator's slope into x.slope
// (zero on a saturated tendon: tendon_saturated of the final forces); moment^T force into t (nv) first
template <class T>
void actuator_force(const Model &m, const Actuators &act, StepInputs<T> &x, const T *q, const T *qd, T *force, T *f, T *t) {
    if (act.na) activation_rate(act, x.u.data(), x.act.data(), x.act_dot.data());
    const double *moment = arms(act, x), *lengths = posed_lengths(act, x);
    for (int a = 0; a < act.nu; a++) {
        T length, velocity;
        actuator_length_velocity(m, act, moment, lengths, a, q, qd, length, velocity);
        force[a] = actuator_gain(act, a, length, velocity) * actuator_input(act, a, x) + actuator_bias(act, a, length, velocity);
        x.slope[a] = actuator_slope(act, a, length, velocity, x);
    }
    if (act.tendon_limited) {
        std::copy(force, force + act.nu, x.raw.begin());
        tendon_scaled(act, force);
    }
    for (int a = 0; a < act.nu; a++)
        if (act.forcelimited[a]) force[a] = vclamp(force[a], act.forcerange[2 * a], act.forcerange[2 * a + 1]);
    if (act.tendon_limited) tendon_saturated(act, force, x.slope.data());
    joint_force(m, act, moment, force, t);
    for (int j = 0; j < m.nv; j++) {
        const double *range = &act.dof_forcerange[2 * j];
        f[j] = f[j] + (act.dof_forcelimited[j] ? vclamp(t[j], range[0], range[1]) : t[j]);
    }
}

// D += dA/dqd = sum_a moment_a^T slope_a moment_a over the actuators not clamped at their forcerange, nor joint
// actuators whose dof's total (moment^T force, into t (nv)) is at or beyond its actuatorfrcrange (MuJoCo 4.0;
// actuation.velocity_derivative, actuation.joint_saturated), with the slopes (x.slope, nu; zero on a saturated tendon,
// tendon_scaled) and arms actuator_force left
template <class T>
void actuator_velocity_derivative(const Model &m, const Actuators &act, const StepInputs<T> &x, const T *force, T *D, T *t) {
    const T *slope = x.slope.data();
    const double *moment = arms(act, x);
    joint_force(m, act, moment, force, t);
    for (int a = 0; a < act.nu; a++) {
        T k = slope[a];
        if (act.forcelimited[a])
            k = select((force[a] > act.forcerange[2 * a]) & (force[a] < act.forcerange[2 * a + 1]), k, splat<T>(0.0));
        int64_t j = act.joint_dof[a];
        if (j >= 0 && act.dof_forcelimited[j])                         // its joint's total strictly inside the range
            k = select((t[j] > act.dof_forcerange[2 * j]) & (t[j] < act.dof_forcerange[2 * j + 1]), k, splat<T>(0.0));
        if (!lane_any(k != 0.0)) continue;                             // a motor: no velocity gain
        const double *r = &moment[size_t(a) * m.nv];
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
