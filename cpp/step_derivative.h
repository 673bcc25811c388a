// The derivatives of one integrator step (src/physai/derivatives.py: step_derivatives), one state at a time (double),
// function by function as the NumPy text:
//
//     acceleration   K a = f and X = K^-1 [df/dq - dtau/dq | df/dqd - dtau/dqd | df/dctrl + h d(D a)/dctrl]
//                    (_Stepper.acceleration), with K = M - h D the integrator's matrix (forward.h's step_matrix;
//                    implicitfast's free bodies in their blocks; discrete: M + h B + h^2 K, the joints' and servos')
//     euler, implicit, implicitfast, discrete:   Tv = Ev + h X,  Tq = Ad Eq + Jw Tv   (the retraction q' = q (+) h qd')
//     rk4: the four stages chained, Ta_i = Xq Tq_i + Xv Tv_i + Xu Eu, with the Jacobians of dexp^-1 between them
//
// T = [Tq; Tv] (2 nv, 2 nv + nu) is [A | B] in MuJoCo's layout (mjd_transitionFD): columns dq, dqd, dctrl, dq in the
// tangent space of integrate_pos.
//
// The constrained step (euler, implicit, implicitfast; one state: derivatives._compiled_constrained): the NumPy text
// solves and takes the rows' q-derivatives (cpp/data.h's ConstrainedTerms) but the plane contacts' (plane_forces takes
// their terms from the step's kinematics at q), then acceleration adds qfrc_constraint to K a = f and its derivative to X
// through the solve's d(a_c) (constrained_derivatives: derivatives._Constraints.derivatives after terms()).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "actuation.h"
#include "constraint.h"
#include "constraint_derivative.h"
#include "data.h"
#include "derivative.h"
#include "forward.h"
#include "model.h"
#include "spatial.h"
#include "support.h"

namespace physai {
namespace {

// one state's inputs and outputs: ctrl (nu, as given: clamped here), qfrc_applied (nv) or null; A (2 nv, 2 nv), B (2 nv, nu)
struct StepDerivative {
    double h = 0;
    int integrator = EULER;
    bool implicit_damping = true;
    const double *ctrl = nullptr, *qfrc = nullptr;
    double *A = nullptr, *B = nullptr;
    const ConstrainedTerms *con = nullptr;                             // the constrained step's (one state), or null
};

// the buffers of step_derivative (cols = 2 nv + nu): the step's (SimData), the rnea derivatives', K and its LU factors,
// X (nv, cols), and the stages' tangents (nv, cols each)
struct StepDerivData {
    int nv, nu, cols;
    SimData<double> s;
    DerivData<double> dw;
    std::vector<double> K, X, tq, tv, cq, cv, cqm, cvm, Tq, Tv, Tk, Ta, sumTk, sumTa, Tnext, raw;
    std::vector<double> a, zero, qi, qdi, ki, sumk, theta, dq, qdn, tau, cb, ck, dcb, dck;
    std::vector<double> M0, R, H, G, W, Y, Z, T, dJ, MiJ, Kq, KY, rates;   // the constrained step's (constrained_derivatives)
    std::vector<int> kdiff_at, kdiff_col;                              // K - M0's entries by row (acceleration)
    std::vector<double> kdiff;
    std::vector<double> J6, pscratch;                                  // the plane contacts' Jacobians, plane_forces'
    std::vector<int64_t> pfirst;                                       // scratch; the given rows' dofs where dJ or
    std::vector<int> pS, asupport, asupport_at;                        // dpos is not zero (analytic_rows, its
    std::vector<char> amark, pdone;                                    // scratch)
    std::vector<int> every;                                            // 0 .. nv - 1: the anchored rows' support
    std::vector<const double *> sources;                               // subtract_sources' sources and coefficients
    std::vector<double> coefficients;
    SubtractRows sub[kMaxSources][kMaxGroup] = {};                     // wide.h's kernels, set once per call (step_derivative_states)
    std::vector<int> cpiv, qpiv;
    std::vector<int64_t> Q;
    std::vector<int> piv;
    std::vector<double> L, Linv;                                       // K's Cholesky on M's tree pattern (acceleration)
    std::vector<double> HL, Hinv;                                      // H's or M's there (symmetric_factor), when
    bool htree = false;                                                // htree; on_tree (nv, nv): 1 on the pattern
    std::vector<char> keep, on_tree;
    StepDerivData(const Model &m, const Actuators &act)
        : nv(m.nv), nu(act.nu), cols(2 * m.nv + act.nu), s(m, act), dw(m) {
        size_t V = size_t(nv), C = size_t(cols);
        for (auto *x : {&K, &tq, &tv, &cq, &cv, &cqm, &cvm}) x->resize(V * V);
        for (auto *x : {&X, &Tq, &Tv, &Tk, &Ta, &sumTk, &sumTa, &Tnext}) x->resize(V * C);
        for (auto *x : {&a, &zero, &ki, &sumk, &theta, &dq, &qdi, &qdn, &tau}) x->resize(V);
        qi.resize(size_t(m.nq)), raw.resize(size_t(nu)), piv.resize(V), keep.resize(V), cpiv.resize(V), every.resize(V);
        L.resize(size_t(tree_nnz(m))), Linv.resize(V), HL.resize(size_t(tree_nnz(m))), Hinv.resize(V);
        on_tree.assign(V * V, 0);
        for (int k = 0; k < nv; k++)
            for (int64_t a = m.M_rowadr[k]; a < m.M_rowadr[k] + m.M_rownnz[k]; a++)
                on_tree[size_t(k) * V + size_t(m.M_colind[a])] = on_tree[size_t(m.M_colind[a]) * V + size_t(k)] = 1;
        for (int k = 0; k < nv; k++) every[size_t(k)] = k;
        M0.resize(V * V), R.resize(V * C), kdiff_at.resize(V + 1);
        for (auto *x : {&cb, &ck, &dcb, &dck}) x->resize(size_t(nu));
    }
};

// whether actuator k's derivatives are not zero (derivatives._unclamped): its scalar force inside its forcerange (or
// unlimited) and, for inside, its ctrl as given inside its ctrlrange (or unlimited)
inline bool force_free(const Actuators &act, int k, const double *force) {
    return !act.forcelimited[k] || (force[k] > act.forcerange[2 * k] && force[k] < act.forcerange[2 * k + 1]);
}
inline bool ctrl_inside(const Actuators &act, int k, const double *raw) {
    return !act.ctrllimited[k] || (raw[k] > act.ctrlrange[2 * k] && raw[k] < act.ctrlrange[2 * k + 1]);
}

// R[:, 0:nv] += dP/dq, R[:, nv:2nv] += dP/dqd of the passive force (derivatives._passive_derivatives): -k, -b
inline void passive_derivatives(const Model &m, double *R, int cols) {
    for (int k = 0; k < m.nspring; k++) R[size_t(m.spring_dofadr[k]) * cols + m.spring_dofadr[k]] -= m.spring_stiffness[k];
    for (int j = 0; j < m.nv; j++) R[size_t(j) * cols + m.nv + j] -= m.dof_damping[j];
}

// actuator k's force-limited tendon (actuation.tendon_totals) at the forces before the limits raw (nu): its total T
// into total, whether T is at or beyond the limits (the return: actuation.tendon_saturated) and the scale r / T of
// a total outside them into scale (1 inside, at a zero total or without such a tendon)
inline bool tendon_state(const Actuators &act, int k, const double *raw, double &total, double &scale) {
    int64_t t = act.tendon_frcid[k];
    total = 0.0, scale = 1.0;
    if (t < 0) return false;
    for (int b = 0; b < act.nu; b++)
        if (act.tendon_frcid[b] == t) total += raw[b];
    double lo = act.tendon_frcrange[2 * k], hi = act.tendon_frcrange[2 * k + 1];
    if (total != 0.0 && total < lo) scale = lo / total;
    else if (total != 0.0 && total > hi) scale = hi / total;
    return total <= lo || total >= hi;
}

// e (nv) <- the arm of actuator a's force before its limits in qfrc_actuator (derivatives._tendon_scaling): moment_a
// where its force is inside forcerange (0 outside); on a force-limited tendon scaled by s = r / T,
// s free_a moment_a - (s / T) sum_i free_i raw_i moment_i over the tendon's actuators i
inline void limited_arm(const Actuators &act, int nv, int a, const double *raw, const double *force, double *e) {
    const double *moment = &act.moment[size_t(a) * nv];
    double total, scale;
    bool free = force_free(act, a, force);
    if (!act.tendon_limited || (tendon_state(act, a, raw, total, scale), scale == 1.0)) {
        for (int j = 0; j < nv; j++) e[j] = free ? moment[j] : 0.0;
        return;
    }
    for (int j = 0; j < nv; j++) e[j] = free ? scale * moment[j] : 0.0;
    for (int i = 0; i < act.nu; i++) {                                 // df_i = s (draw_i - raw_i / T sum_j draw_j)
        if (act.tendon_frcid[i] != act.tendon_frcid[a] || !force_free(act, i, force)) continue;
        const double *r = &act.moment[size_t(i) * nv];
        for (int j = 0; j < nv; j++) e[j] -= scale / total * raw[i] * r[j];
    }
}

// R += (dA/dq, dA/dqd, dA/dctrl) of the actuator force (derivatives._actuator_derivatives) for ctrl as given (given), u
// clamped, the forces before their limits (raw) and the scalar forces (force, limited) of evaluate: zero where ctrl or
// a force is clamped, and on a dof whose total is at or beyond its actuatorfrcrange; through a force-limited tendon's
// scaling (limited_arm, its arm into e (nv)). Transmissions act on hinges, slides and fixed tendons: the length's
// q-derivative is qmoment's scalar entries; tau (nv) holds the dofs' totals
inline void actuator_derivatives(const Model &m, const Actuators &act, const double *given, const double *u,
                                 const double *raw, const double *force, const double *q, const double *qd, char *keep,
                                 double *tau, double *e, double *R, int cols) {
    int nv = m.nv;
    joint_force(m, act, act.moment, force, tau);                       // the dofs whose total is not clamped
    for (int j = 0; j < nv; j++)
        keep[j] = !act.dof_forcelimited[j] || (tau[j] > act.dof_forcerange[2 * j] && tau[j] < act.dof_forcerange[2 * j + 1]);
    for (int a = 0; a < act.nu; a++) {
        if (!act.tendon_limited && !force_free(act, a, force)) continue;
        limited_arm(act, nv, a, raw, force, e);
        const double *g = &act.gain[3 * a], *b = &act.bias[3 * a], *moment = &act.moment[size_t(a) * nv];
        const double *qmoment = &act.qmoment[size_t(a) * m.nq];
        bool inside = ctrl_inside(act, a, given);
        double length, velocity;
        actuator_length_velocity(m, act, act.moment, (const double *)nullptr, a, q, qd, length, velocity);
        double kq = g[1] * u[a] + b[1], kv = g[2] * u[a] + b[2], ku = inside ? g[0] + g[1] * length + g[2] * velocity : 0.0;
        for (int j = 0; j < nv; j++) {                                 // row j += e_j (kq dl/dq, kv moment_a, ku e_a)
            double r = e[j];
            if (r == 0.0 || !keep[j]) continue;
            double *Rj = R + size_t(j) * cols;
            for (int k = 0; k < m.nscalar; k++) Rj[m.scalar_dofadr[k]] += r * (kq * qmoment[m.scalar_qposadr[k]]);
            for (int i = 0; i < nv; i++) Rj[nv + i] += r * (kv * moment[i]);
            Rj[2 * nv + a] += r * ku;
        }
    }
}

// whether actuator k's force-limited tendon's total of the final forces force (nu; scaled, then clamped to
// forcerange) is at (within TENDON_AT) or beyond its limits (actuation.tendon_saturated)
inline bool tendon_saturated(const Actuators &act, int k, const double *force) {
    if (!act.tendon_limited || act.tendon_frcid[k] < 0) return false;
    double total = 0.0;
    for (int b = 0; b < act.nu; b++)
        if (act.tendon_frcid[b] == act.tendon_frcid[k]) total += force[b];
    double lo = act.tendon_frcrange[2 * k], hi = act.tendon_frcrange[2 * k + 1];
    return total <= lo + TENDON_AT || total >= hi - TENDON_AT;
}

// R[:, 2nv:] += h d(D a)/dctrl for the implicit integrators' K = M - h D at a fixed a (derivatives.
// _damping_control_derivative): D's actuator part sum_k moment_k^T (b2 + g2 u_k) moment_k on M's pattern changes with
// u_k by g2_k (pattern * moment_k moment_k^T), zero where the force is clamped, ctrl is outside ctrlrange or k's joint
// is at its actuatorfrcrange (not keep[joint_dof], from actuator_derivatives) or its force-limited tendon's total of
// the final forces at or beyond them (tendon_saturated): k is not in D; reduced (implicitfast): on its pattern
// (reduced_pair)
inline void damping_control_derivative(const Model &m, const Actuators &act, const double *raw, const double *force,
                                       const char *keep, const double *a, double h, double *R, int cols, bool reduced) {
    int nv = m.nv;
    for (int k = 0; k < act.nu; k++) {
        double g2 = act.gain[3 * k + 2];
        if (g2 == 0.0) continue;
        if (!force_free(act, k, force) || !ctrl_inside(act, k, raw)) continue;
        if (act.joint_dof[k] >= 0 && !keep[act.joint_dof[k]]) continue;
        if (tendon_saturated(act, k, force)) continue;                // not in D (tendon_saturated)
        const double *r = &act.moment[size_t(k) * nv];
        for (int i = 0; i < nv; i++) {
            if (r[i] == 0.0) continue;
            double t = 0.0;                                            // (pattern * r r^T) a, row i
            for (int j = 0; j < nv; j++)
                if (reduced ? reduced_pair(m, i, j) : tree_pair(m, i, j)) t += r[j] * a[j];
            R[size_t(i) * cols + 2 * nv + k] += h * (g2 * (r[i] * t));
        }
    }
}

// the discrete step's servo metric (actuation.servo_metric): each actuator's slopes c = max(-(b + g u), 0) in velocity
// (cb, column 2) and length (ck, column 1), and their u-derivatives -g where c > 0 (dcb, dck; zero where the force or
// ctrl is clamped or the joint's total is at its actuatorfrcrange); K (nv, nv) += sum_k (h cb_k + h^2 ck_k) m_k m_k^T;
// a (nv) -= h sum_k ck_k m_k (m_k . qd). false (the NumPy text redoes the state) when a servo moves a standalone free
// body's dofs (its block is solved apart: derivatives.discrete_acceleration names what it refuses)
inline bool servo_metric(const Model &m, const Actuators &act, StepDerivData &w, const double *force, const double *qd,
                         double h, double *K, double *a) {
    int nv = m.nv;
    const double *u = w.s.x.u.data();
    joint_force(m, act, act.moment, force, w.tau.data());              // the dofs whose total is not clamped
    for (int j = 0; j < nv; j++)
        w.keep[j] = !act.dof_forcelimited[j] || (w.tau[j] > act.dof_forcerange[2 * j] && w.tau[j] < act.dof_forcerange[2 * j + 1]);
    for (int k = 0; k < act.nu; k++) {
        const double *g = &act.gain[3 * k], *b = &act.bias[3 * k], *r = &act.moment[size_t(k) * nv];
        bool free = force_free(act, k, force) && (act.joint_dof[k] < 0 || w.keep[act.joint_dof[k]]) &&
                    !tendon_saturated(act, k, force);
        double sb = b[2] + g[2] * u[k], sk = b[1] + g[1] * u[k];
        bool inside = ctrl_inside(act, k, w.raw.data());
        w.cb[k] = free && sb < 0 ? -sb : 0.0, w.ck[k] = free && sk < 0 ? -sk : 0.0;
        w.dcb[k] = free && sb < 0 && inside ? -g[2] : 0.0, w.dck[k] = free && sk < 0 && inside ? -g[1] : 0.0;
        if (w.cb[k] == 0.0 && w.ck[k] == 0.0 && w.dcb[k] == 0.0 && w.dck[k] == 0.0) continue;
        for (int f = 0; f < m.nfree; f++)
            for (int i = 0; i < 6; i++)
                if (r[m.free_dofadr[f] + i] != 0.0) return false;
        double c = h * w.cb[k] + h * h * w.ck[k], rq = 0.0;
        for (int j = 0; j < nv; j++) rq += r[j] * qd[j];
        for (int i = 0; i < nv; i++) {
            if (r[i] == 0.0) continue;
            a[i] -= h * w.ck[k] * r[i] * rq;
            for (int j = 0; j < nv; j++) K[size_t(i) * nv + j] += c * r[i] * r[j];
        }
    }
    return true;
}

// R[:, nv:2nv] -= h sum_k ck_k m_k m_k^T (the servos' -h K qd) and R[:, 2nv + k] -= m_k ((h dcb_k + h^2 dck_k) (m_k . a)
// + h dck_k (m_k . qd)) (derivatives._metric_input_derivative), from servo_metric's slopes
inline void servo_metric_derivative(const Model &m, const Actuators &act, const StepDerivData &w, const double *qd,
                                    const double *a, double h, double *R, int cols) {
    int nv = m.nv;
    for (int k = 0; k < act.nu; k++) {
        if (w.cb[k] == 0.0 && w.ck[k] == 0.0 && w.dcb[k] == 0.0 && w.dck[k] == 0.0) continue;
        const double *r = &act.moment[size_t(k) * nv];
        double ra = 0.0, rq = 0.0;
        for (int j = 0; j < nv; j++) ra += r[j] * a[j], rq += r[j] * qd[j];
        double t = (h * w.dcb[k] + h * h * w.dck[k]) * ra + h * w.dck[k] * rq;
        for (int i = 0; i < nv; i++) {
            if (r[i] == 0.0) continue;
            double *Ri = R + size_t(i) * cols;
            for (int j = 0; j < nv; j++) Ri[nv + j] -= h * w.ck[k] * r[i] * r[j];
            Ri[2 * nv + k] -= r[i] * t;
        }
    }
}

// ---------------------------------------------------------------- the constrained step (derivatives._Constraints)

// Y (nefc, cols) = S X (derivatives._Constraints._times_S): D X on the quadratic rows, each cone's Hessian on its block
inline void times_S(const ConstrainedTerms &t, const double *X, int cols, double *Y) {
    for (int64_t i = 0; i < t.nefc; i++) {
        const double *Xi = X + size_t(i) * cols, Di = t.D[i];
        double *Yi = Y + size_t(i) * cols;
        if (t.state[i] == QUADRATIC)
            for (int c = 0; c < cols; c++) Yi[c] = Di * Xi[c];
        else
            std::fill(Yi, Yi + cols, 0.0);
    }
    const double *Hc = t.cone_H;
    for (int64_t b = 0; b < t.ncone; b++) {
        int64_t first = t.cone_first[b], dim = t.cone_dim[b];
        for (int64_t i = 0; i < dim; i++)
            for (int c = 0; c < cols; c++) {
                double y = 0.0;
                for (int64_t j = 0; j < dim; j++) y += Hc[i * dim + j] * X[size_t(first + j) * cols + c];
                Y[size_t(first + i) * cols + c] = y;
            }
        Hc += dim * dim;
    }
}

// each plane contact's body's Jacobian (6, nv) at its origin into J6 (nplane, 6, nv) from the step's kinematics at q (d
// after evaluate: com_pos done) (derivatives._Constraints._plane_contacts' jacobians), at the first contact of each body
// only (plane_forces reads those)
inline void plane_jacobians(const Model &m, const Data<double> &d, const ConstrainedTerms &t, std::vector<double> &J6) {
    size_t size = size_t(6) * m.nv;
    J6.resize(size_t(t.nplane) * size);
    for (int64_t c = 0; c < t.nplane; c++) {
        int64_t b = t.plane_body[c], link = m.body_linkid[b], earlier = 0;
        while (earlier < c && t.plane_body[earlier] != b) earlier++;
        if (earlier < c) continue;                                     // its body's made at that contact
        double *J = J6.data() + size_t(c) * size;
        if (link >= 0) jacobian(m, d, link, m.body_pos + 3 * b, J);
        else std::fill(J, J + size, 0.0);                              // welded to the world: no dof moves it
    }
}

// the given analytic rows' supports (t's dJ and dpos, in _analytic_rows' order without the plane contacts' rows) into
// w.asupport (given row i's dofs from w.asupport_at[i] to [i + 1]): the dofs where a row or column of its dJ, or its
// dpos, is not zero (a limit's: its dof; zeros add nothing but signed zeros); and the plane contacts' Jacobians
// (plane_jacobians), whose rows plane_forces takes
inline void analytic_rows(const Model &m, const Data<double> &d, const ConstrainedTerms &t, StepDerivData &w) {
    size_t nv = size_t(m.nv), sq = nv * nv, given = size_t(t.nrows - t.plane_rows);
    if (t.nplane) plane_jacobians(m, d, t, w.J6);
    if (t.support) return;                                             // given with the rows
    w.asupport.resize(given * nv), w.asupport_at.assign(given + 1, 0), w.amark.resize(nv);
    size_t n = 0;
    for (size_t row = 0; row < given; row++) {
        const double *dJ = t.dJ + row * sq, *dpos = t.dpos + row * nv;   // zero (NaN included)
        char *mark = w.amark.data();
        for (size_t k = 0; k < nv; k++) mark[k] = dpos[k] != 0.0;
        for (size_t j = 0; j < nv; j++) {                              // most rows of dJ are zero: tested first,
            const double *dJj = dJ + j * nv;                           // on the bits but the sign's (an OR)
            uint64_t any = 0;
            for (size_t k = 0; k < nv; k++) {
                uint64_t bits;
                std::memcpy(&bits, dJj + k, sizeof bits);
                any |= bits << 1;
            }
            if (!any) continue;
            mark[j] = 1;
            for (size_t k = 0; k < nv; k++) mark[k] |= dJj[k] != 0.0;
        }
        for (size_t k = 0; k < nv; k++)
            if (mark[k]) w.asupport[n++] = int(k);
        w.asupport_at[row + 1] = int(n);
    }
}

// Wrow (cols) += df of quadratic row `row` along the dofs S (analytic_forces' terms, its dJ qd and dJ a_c given on S):
//   jar = J a_c - aref,  d aref = -B dJ qd - K imp dpos - K impP (pos - margin) dgap - dbias,
//   dD = D impP / (imp (1 - imp)) dgap,  df = -dD jar - D (dJ a_c - d aref)   (dbias null: zero)
inline void row_rates(int nv, const ConstrainedTerms &t, int64_t row, const int *S, int ns, const double *qdJ,
                      const double *adJ, const double *dpos, const double *dgap, const double *dbias, double *Wrow) {
    const double *J = t.J + size_t(row) * nv;
    double jar = -t.aref[row];
    for (int j = 0; j < nv; j++) jar += J[j] * t.a_c[j];
    double spring = t.K[row] * t.imp[row], curve = t.K[row] * t.impP[row] * (t.pos[row] - t.margin[row]);
    double dD = t.D[row] * t.impP[row] / (t.imp[row] * (1 - t.imp[row]));
    for (int b = 0; b < ns; b++) {
        const int k = S[b];
        double daref = -t.B[row] * qdJ[k] - spring * dpos[k] - curve * dgap[k];
        if (dbias) daref -= dbias[k];
        Wrow[k] += -dD * dgap[k] * jar - t.D[row] * (adJ[k] - daref);
    }
}

// Gq (nv, nv) -= sum_r f_r dJ_r, Wq[row] (rows of cols entries) += df (row_rates) of the n rows given (rows; dJ_all
// (n, nv, nv), dpos_all (n, nv): the given analytic rows', or the anchored connect and weld rows' with dpos = J)
// (derivatives._Constraints._analytic_forces), each held in its state at the optimum a_c, f its force there on a
// quadratic row (0 otherwise); dgap = dpos where dgap_all is null, dbias zero where dbias_all is null; row i's dofs (dJ,
// dpos, dgap zero off them) support[support_at[i] .. support_at[i + 1]), or without support_at support's nv; one pass
// over each row's dJ on its support makes dJ qd, dJ a_c and Gq's part (derivatives._turning); rates: scratch (2 nv)
inline void analytic_forces(int nv, const ConstrainedTerms &t, int64_t n, const int64_t *rows, const double *dJ_all,
                            const double *dpos_all, const double *dgap_all, const double *dbias_all, const double *qd,
                            double *Gq, double *Wq, int cols, const int *support, const int *support_at, double *rates) {
    for (int64_t i = 0; i < n; i++) {
        int64_t row = rows[i];
        const double *dJ = dJ_all + size_t(i) * nv * nv, *dpos = dpos_all + size_t(i) * nv;
        const double *dgap = dgap_all ? dgap_all + size_t(i) * nv : dpos;
        const int *S = support_at ? support + support_at[i] : support, ns = support_at ? support_at[i + 1] - support_at[i] : nv;
        bool quadratic = t.state[row] == QUADRATIC;
        double f = quadratic ? t.force[row] : 0.0;
        double *qdJ = rates, *adJ = rates + nv;                        // (dJ qd)_k, (dJ a_c)_k, k in S
        for (int b = 0; b < ns; b++) qdJ[S[b]] = 0.0, adJ[S[b]] = 0.0;
        for (int a = 0; a < ns; a++) {                                 // off S x S: dJ zero, adds nothing
            const int j = S[a];
            const double *dJj = dJ + j * nv, qj = qd[j], aj = t.a_c[j];
            double *Gj = Gq + j * nv;
            for (int b = 0; b < ns; b++) {
                const int k = S[b];
                const double x = dJj[k];
                qdJ[k] += qj * x, adJ[k] += aj * x;
                Gj[k] -= f * x;                                         // Gq -= f dJ (_turning)
            }
        }
        if (quadratic)
            row_rates(nv, t, row, S, ns, qdJ, adJ, dpos, dgap, dbias_all ? dbias_all + size_t(i) * nv : nullptr,
                      Wq + size_t(row) * cols);
    }
}

// Gq[:, dof] = -dJ^T f, Wq[:, dof] = df along each moving dof from the rows at its points (derivatives._Constraints.
// _product_rule, in its order): dJ = (sum_s w_s J_s) / step (nefc, nv), df = (sum_s w_s force_s) / step, then -dJ^T f
// with f the optimum's forces (the analytic and anchored rows 0); f (nefc) and dJ (nefc nv) are scratch
inline void product_rule(int nv, const ConstrainedTerms &t, double *Gq, double *Wq, int cols, double *f, double *dJ) {
    for (int64_t i = 0; i < t.nefc; i++) f[i] = t.force[i];
    for (int64_t i = 0; i < t.nrows; i++) f[t.rows[i]] = 0.0;
    for (int64_t i = 0; i < t.nanchor; i++) f[t.anchored[i]] = 0.0;
    size_t rows = size_t(t.nefc) * nv;
    for (int64_t k = 0; k < t.nmoving; k++) {
        int64_t dof = t.moving[k];
        std::fill(dJ, dJ + rows, 0.0);                                 // dJ = sum_s w_s J_s, df = sum_s w_s force_s
        for (int64_t r = 0; r < t.nefc; r++) Wq[size_t(r) * cols + dof] = 0.0;
        for (int64_t s = 0; s < t.points; s++) {
            double w = t.weights[s];
            const double *J = t.Jpts + size_t(k * t.points + s) * rows, *force = t.fpts + size_t(k * t.points + s) * t.nefc;
            for (size_t e = 0; e < rows; e++) dJ[e] += w * J[e];
            for (int64_t r = 0; r < t.nefc; r++) Wq[size_t(r) * cols + dof] += w * force[r];
        }
        for (size_t e = 0; e < rows; e++) dJ[e] /= t.step;              // over step
        for (int64_t r = 0; r < t.nefc; r++) Wq[size_t(r) * cols + dof] /= t.step;
        for (int v = 0; v < nv; v++) {                                 // Gq[:, dof] = -dJ^T f
            double g = 0.0;
            for (int64_t r = 0; r < t.nefc; r++) g += dJ[size_t(r) * nv + v] * f[r];
            Gq[v * nv + dof] = -g;
        }
    }
}

// X (nv, cols) <- K^-1 X from tree_cholesky's factor L and reciprocal diagonal inv of K on M's tree pattern: smooth.h's
// tree_solve with each b[k] a row of X, its row operations in sub's kernels (wide.h's subtract_rows_set: one source row
// into each ancestor's row, then a row less its ancestors' rows, kMaxSources at a time)
inline void tree_solve_rows(const Model &m, const double *L, const double *inv, double *X, int cols,
                            const SubtractRows (*sub)[kMaxGroup]) {
    for (int k = m.nv - 1; k >= 0; k--) {                              // L^T Y = X
        const double *Lk = L + m.M_rowadr[k];
        const int64_t *anc = m.M_colind + m.M_rowadr[k], depth = m.M_rownnz[k] - 1;
        double *Xk = X + size_t(k) * cols;
        for (int c = 0; c < cols; c++) Xk[c] *= inv[k];
        for (int64_t s = 0; s < depth; s++)
            subtract_sources(sub, X + size_t(anc[s]) * cols, [Xk](int) -> const double * { return Xk; }, Lk + s, 1, cols);
    }
    for (int k = 0; k < m.nv; k++) {                                   // L Z = Y
        const double *Lk = L + m.M_rowadr[k];
        const int64_t *anc = m.M_colind + m.M_rowadr[k], depth = m.M_rownnz[k] - 1;
        double *Xk = X + size_t(k) * cols;
        subtract_sources(sub, Xk, [X, anc, cols](int s) -> const double * { return X + size_t(anc[s]) * cols; }, Lk,
                         int(depth), cols);
        for (int c = 0; c < cols; c++) Xk[c] *= inv[k];
    }
}

// factor a symmetric A (nv, nv; H or M, destroyed) for symmetric_apply: on M's tree pattern (w.on_tree: its entries
// off it zero) by tree_cholesky into w.HL, w.Hinv; else, or not positive definite there, its LU in place; false: singular
inline bool symmetric_factor(const Model &m, StepDerivData &w, double *A) {
    const size_t nv = size_t(m.nv);
    w.htree = true;
    for (size_t e = 0; e < nv * nv && w.htree; e++) w.htree = w.on_tree[e] || A[e] == 0.0;
    if (w.htree) {
        tree_pack(m, (const double *)A, w.HL.data());
        w.htree = tree_cholesky(m, w.HL.data(), w.Hinv.data());
    }
    return w.htree || lu_factor(A, m.nv, w.cpiv.data());
}

// X (nv, cols) <- A^-1 X from symmetric_factor's factor of A
inline void symmetric_apply(const Model &m, StepDerivData &w, const double *A, double *X, int cols) {
    if (w.htree) tree_solve_rows(m, w.HL.data(), w.Hinv.data(), X, cols, w.sub);
    else lu_apply(A, m.nv, w.cpiv.data(), X, cols, w.sub);
}

// X (nv, cols) <- H^-1 (X + J^T W) (derivatives._Constraints._hessian_solve; H (nv, nv) destroyed): with stiff rows (the
// quadratic rows Q, no cone, W zero elsewhere) M^-1 (X - J_Q^T (R_Q + J_Q M^-1 J_Q^T)^-1 (J_Q M^-1 X - W_Q / D_Q)),
// R_Q = 1 / D_Q; otherwise H's factor; M and H by symmetric_factor; false for a singular matrix
inline bool hessian_solve(const Model &m, const ConstrainedTerms &t, StepDerivData &w, const double *M, double *H,
                          double *X, const double *W, int cols) {
    const int nv = m.nv;
    bool stiff = t.stiff && !t.ncone;
    for (int64_t r = 0; r < t.nefc && stiff; r++)
        if (t.state[r] != QUADRATIC)
            for (int c = 0; c < cols && stiff; c++) stiff = W[size_t(r) * cols + c] == 0.0;
    if (!stiff) {                                                      // X_v -= (-J_rv) W_r, r ascending (J's zeros add nothing)
        std::vector<const double *> &src = w.sources;
        std::vector<double> &coef = w.coefficients;
        for (int v = 0; v < nv; v++) {
            src.clear(), coef.clear();
            for (int64_t r = 0; r < t.nefc; r++) {
                const double minus = -t.J[size_t(r) * nv + v];             // an lvalue: push_back inline
                if (minus != 0.0) src.push_back(W + size_t(r) * cols), coef.push_back(minus);
            }
            subtract_sources(w.sub, X + size_t(v) * cols, [&](int k) { return src[size_t(k)]; }, coef.data(), int(src.size()), cols);
        }
        if (!symmetric_factor(m, w, H)) return false;
        symmetric_apply(m, w, H, X, cols);
        return true;
    }
    std::vector<int64_t> &Q = w.Q;                                     // the quadratic rows
    Q.clear();
    for (int64_t r = 0; r < t.nefc; r++)
        if (t.state[r] == QUADRATIC) Q.push_back(r);
    int nq = int(Q.size());
    std::copy(M, M + size_t(nv) * nv, H);                              // M^-1 X, M^-1 J_Q^T (nv, nq)
    if (!symmetric_factor(m, w, H)) return false;
    symmetric_apply(m, w, H, X, cols);
    w.MiJ.resize(size_t(nv) * nq), w.Kq.resize(size_t(nq) * nq), w.KY.resize(size_t(nq) * cols), w.qpiv.resize(size_t(nq));
    double *MiJ = w.MiJ.data(), *Kq = w.Kq.data(), *Y = w.KY.data();
    for (int v = 0; v < nv; v++)
        for (int i = 0; i < nq; i++) MiJ[size_t(v) * nq + i] = t.J[size_t(Q[i]) * nv + v];
    symmetric_apply(m, w, H, MiJ, nq);
    for (int i = 0; i < nq; i++) {                                     // K = diag(1 / D_Q) + J_Q M^-1 J_Q^T
        const double *Ji = t.J + size_t(Q[i]) * nv;
        for (int j = 0; j < nq; j++) {
            double k = i == j ? 1.0 / t.D[Q[i]] : 0.0;
            for (int v = 0; v < nv; v++) k += Ji[v] * MiJ[size_t(v) * nq + j];
            Kq[size_t(i) * nq + j] = k;
        }
        for (int c = 0; c < cols; c++) {                               // J_Q M^-1 X - W_Q / D_Q
            double y = -W[size_t(Q[i]) * cols + c] / t.D[Q[i]];
            for (int v = 0; v < nv; v++) y += Ji[v] * X[size_t(v) * cols + c];
            Y[size_t(i) * cols + c] = y;
        }
    }
    if (!lu_factor(Kq, nq, w.qpiv.data())) return false;
    lu_apply(Kq, nq, w.qpiv.data(), Y, cols, w.sub);
    for (int v = 0; v < nv; v++)                                       // M^-1 X - M^-1 J_Q^T K^-1 (...)
        for (int i = 0; i < nq; i++) {
            double m = MiJ[size_t(v) * nq + i];
            for (int c = 0; c < cols; c++) X[size_t(v) * cols + c] -= m * Y[size_t(i) * cols + c];
        }
    return true;
}

// analytic_forces of the plane contacts' rows (t.rows[plane_at .. plane_at + plane_rows)) without their dJ, body by
// body. On a body's chain S (J6: plane_jacobians'; Jp, W its columns) a contact c at p with po = p - o has P, dp and dd
// as plane_contact_rows makes them, P_k = Jp_k + W_k x po, and a row's dJ is linear in its edge e (a capsule's tangent
// term in the edge's derivative dE), so for v = qd, a_c
//   v^T dJ[:, k] = e . F_k + (P v) . dE[:, k],  F_k = (W v) x dp_k + W_k x (pi_k + mu_k x po) - mu_k x P_k,
//   pi_k = sum_j turns[j, k] v_j Jp_j,  mu_k = sum_j turns[j, k] v_j W_j   (the body's, once)
// and over the body's quadratic rows, with f e summed per contact (e_c) and f dE (dE_c):
//   sum f dJ [j, k] = W_j . Y_k + turns[j, k] (U[j, k] - U[k, j]) + Jp_j . D_k + W_j . Z_k,
//   U[j, k] = Jp_j . (E x W_k) + W_j . (A W_k),  Y_k = sum_c dp_k x e_c,  E = sum_c e_c,
//   A = sum_c (e_c po^T - (po . e_c) I),  D_k = sum_c dE_c[:, k],  Z_k = sum_c po x dE_c[:, k]
// each row's dpos and dgap its contact's dd. Compact arrays (x nv + i) over i in S; dd and rates over the dofs
inline void plane_forces(int nv, const ConstrainedTerms &t, StepDerivData &w, const double *qd, double *Gq, double *Wq,
                         int cols) {
    if (!t.nplane) return;
    const size_t V = size_t(nv);
    w.pscratch.resize(96 * V + 2 * V * V + 6), w.pS.resize(V), w.pdone.assign(size_t(t.nplane), 0);   // laid out below
    double *Jc = w.pscratch.data(), *fields = Jc + 6 * V, *Y = fields + 12 * V, *D = Y + 3 * V, *Z = D + 3 * V;
    double *P = Z + 3 * V, *dp = P + 3 * V, *dd = dp + 3 * V, *F = dd + V, *dt = F + 6 * V, *dE = dt + 6 * V;
    double *rates = dE + 30 * V, *Ts = rates + 2 * V, *U = Ts + V * V, *EW = U + V * V, *AW = EW + 3 * V;
    double *Pv = AW + 3 * V, *u = Pv + 6;                              // Pv (2, 3): P qd, P a_c; u (12, nv); the end
    int *S = w.pS.data();
    const double *turns = t.turns;
    std::vector<int64_t> &first = w.pfirst;                            // each contact's first row in t.rows
    first.resize(size_t(t.nplane));
    for (int64_t c = 0, row = t.plane_at; c < t.nplane; c++) first[size_t(c)] = row, row += pyramid_rows(t.plane_dim[c]);
    for (int64_t b0 = 0; b0 < t.nplane; b0++) {
        if (w.pdone[size_t(b0)]) continue;
        const int64_t body = t.plane_body[b0];
        bool any = false;                                              // a quadratic row: the others add nothing
        for (int64_t c = b0; c < t.nplane; c++)
            if (t.plane_body[c] == body)
                for (int64_t r = first[size_t(c)]; r < first[size_t(c)] + pyramid_rows(t.plane_dim[c]); r++)
                    any = any || t.state[t.rows[r]] == QUADRATIC;
        if (!any) {
            for (int64_t c = b0; c < t.nplane; c++) w.pdone[size_t(c)] = w.pdone[size_t(c)] || t.plane_body[c] == body;
            continue;
        }
        const double *J6 = w.J6.data() + size_t(b0) * 6 * V, *o = t.plane_origin + 3 * b0;
        const int ns = jacobian_support(J6, nv, S);
        for (int r = 0; r < 6; r++)                                    // Jc: Jp (rows 0-2), W (3-5) on S
            for (int i = 0; i < ns; i++) Jc[r * V + i] = J6[r * V + S[i]];
        const double *Jp = Jc, *W = Jc + 3 * V;
        for (int l = 0; l < ns; l++)                                   // Ts[l, i] = turns[S_l, S_i]
            for (int i = 0; i < ns; i++) Ts[l * V + i] = turns[S[l] * nv + S[i]];
        // pi, mu of qd, then of a_c (3 x nv each) as sums from the chain's end: turns[S_l, S_i] is 1 for l >= i (S_i on
        // S_l's chain) and among one ball's or free joint's rotations (joints.turning_dofs), 0 elsewhere, so a field at
        // i sums u over l >= b_i, b_i the first of i's rotations on S (else i)
        double om[2][3] = {{0, 0, 0}, {0, 0, 0}};                      // W qd, W a_c
        for (int l = 0; l < ns; l++) {                                 // u_l: v_l Jp_l, v_l W_l for v = qd, a_c
            const double vq = qd[S[l]], va = t.a_c[S[l]];
            for (int x = 0; x < 3; x++) {
                u[x * V + l] = vq * Jp[x * V + l], u[(3 + x) * V + l] = vq * W[x * V + l];
                u[(6 + x) * V + l] = va * Jp[x * V + l], u[(9 + x) * V + l] = va * W[x * V + l];
                om[0][x] += u[(3 + x) * V + l], om[1][x] += u[(9 + x) * V + l];
            }
        }
        for (int f = 0; f < 12; f++)                                   // u's sums from the end, in place
            for (int l = ns - 2; l >= 0; l--) u[f * V + l] += u[f * V + l + 1];
        for (int i = 0; i < ns; i++) {
            int b = i;
            while (b > 0 && Ts[(b - 1) * V + i] != 0.0) b--;
            for (int f = 0; f < 12; f++) fields[f * V + i] = u[f * V + b];
        }
        double E[3] = {0, 0, 0}, A[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
        std::fill(Y, Y + 3 * V, 0.0), std::fill(D, D + 3 * V, 0.0), std::fill(Z, Z + 3 * V, 0.0);
        bool turning_any = false;
        for (int64_t c = b0; c < t.nplane; c++) {                      // the body's contacts
            if (t.plane_body[c] != body) continue;
            w.pdone[size_t(c)] = 1;
            const int64_t dim = t.plane_dim[c], *index = t.rows + first[size_t(c)];
            const int rows = pyramid_rows(dim);
            const double *n = t.plane_frame + 9 * c, *p = t.plane_pos + 3 * c, *mu = t.plane_friction + 5 * c;
            const double s = t.plane_radius[c] + t.plane_dist[c] / 2;
            const double po[3] = {p[0] - o[0], p[1] - o[1], p[2] - o[2]}, xp[3] = {n[0] * s, n[1] * s, n[2] * s};
            for (int i = 0; i < ns; i++) {                             // P = Jp + W x po, X = P + W x (x - p), dd, dp
                const double wk[3] = {W[i], W[V + i], W[2 * V + i]};
                double a[3], b[3], X[3];
                cross(wk, po, a), cross(wk, xp, b);
                for (int x = 0; x < 3; x++) P[x * V + i] = Jp[x * V + i] + a[x], X[x] = P[x * V + i] + b[x];
                const double d = n[0] * X[0] + n[1] * X[1] + n[2] * X[2];
                dd[S[i]] = d;
                for (int x = 0; x < 3; x++) dp[x * V + i] = X[x] - n[x] * d / 2;
            }
            double edges[30];                                          // the edges (dE: up to 10 rows too)
            pyramid_edges(n, n, mu, dim, 3, edges);
            const double *axis = t.plane_axis + 3 * c;
            const bool turning = dim > 1 && (axis[0] != 0 || axis[1] != 0 || axis[2] != 0);
            turning_any = turning_any || turning;
            if (turning) {                                             // a capsule's tangents turn with its axis
                const double *t1 = n + 3;
                const double na = n[0] * axis[0] + n[1] * axis[1] + n[2] * axis[2];
                const double y[3] = {axis[0] - n[0] * na, axis[1] - n[1] * na, axis[2] - n[2] * na};
                const double norm = std::sqrt(y[0] * y[0] + y[1] * y[1] + y[2] * y[2]);
                for (int i = 0; i < ns; i++) {                         // dt (2, 3 x nv): dt1, dt2 = n x dt1
                    const double wk[3] = {W[i], W[V + i], W[2 * V + i]};
                    double da[3], v[3], u[3], nu[3];
                    cross(wk, axis, da);                                // W_k x a
                    const double nda = n[0] * da[0] + n[1] * da[1] + n[2] * da[2];
                    for (int x = 0; x < 3; x++) v[x] = da[x] - n[x] * nda;
                    const double tv = t1[0] * v[0] + t1[1] * v[1] + t1[2] * v[2];
                    for (int x = 0; x < 3; x++) u[x] = (v[x] - t1[x] * tv) / norm, dt[x * V + i] = u[x];
                    cross(n, u, nu);
                    for (int x = 0; x < 3; x++) dt[3 * V + x * V + i] = nu[x];
                }
                for (int r = 0; r < rows; r++) {                       // dE_r = sign mu_k dt_k (_pyramid_edges of 0)
                    const double coef = (r % 2 ? -1.0 : 1.0) * mu[r / 2], *from = dt + (r / 2) * 3 * V;
                    for (size_t i = 0; i < 3 * V; i++) dE[size_t(r) * 3 * V + i] = coef * from[i];
                }
                for (int x = 0; x < 3; x++) Pv[x] = Pv[3 + x] = 0.0;
                for (int i = 0; i < ns; i++)
                    for (int x = 0; x < 3; x++) Pv[x] += qd[S[i]] * P[x * V + i], Pv[3 + x] += t.a_c[S[i]] * P[x * V + i];
            }
            for (int side = 0; side < 2; side++) {                      // F (qd, then a_c: 3 x nv each)
                const double *pi = fields + 6 * side * V, *mv = pi + 3 * V;
                double *Fv = F + 3 * side * V;
                for (int i = 0; i < ns; i++) {
                    const double m_i[3] = {mv[i], mv[V + i], mv[2 * V + i]}, dpk[3] = {dp[i], dp[V + i], dp[2 * V + i]};
                    const double wk[3] = {W[i], W[V + i], W[2 * V + i]}, pk[3] = {P[i], P[V + i], P[2 * V + i]};
                    double mpo[3], a[3], b[3], d[3], pt[3];
                    cross(m_i, po, mpo);
                    for (int x = 0; x < 3; x++) pt[x] = pi[x * V + i] + mpo[x];
                    cross(om[side], dpk, a), cross(wk, pt, b), cross(m_i, pk, d);
                    for (int x = 0; x < 3; x++) Fv[x * V + i] = a[x] + b[x] - d[x];
                }
            }
            double ec[3] = {0, 0, 0};                                  // f e over the contact's quadratic rows
            for (int r = 0; r < rows; r++) {
                if (t.state[index[r]] != QUADRATIC) continue;
                const double *er = edges + 3 * r, *dEr = dE + size_t(r) * 3 * V, f = t.force[index[r]];
                double *qdJ = rates, *adJ = rates + V;
                for (int i = 0; i < ns; i++) {
                    double q = 0.0, a = 0.0;
                    for (int x = 0; x < 3; x++) q += er[x] * F[x * V + i], a += er[x] * F[3 * V + x * V + i];
                    if (turning)
                        for (int x = 0; x < 3; x++) q += Pv[x] * dEr[x * V + i], a += Pv[3 + x] * dEr[x * V + i];
                    qdJ[S[i]] = q, adJ[S[i]] = a;
                }
                row_rates(nv, t, index[r], S, ns, qdJ, adJ, dd, dd, nullptr, Wq + size_t(index[r]) * cols);
                for (int x = 0; x < 3; x++) ec[x] += f * er[x];
                if (turning)
                    for (int i = 0; i < ns; i++) {                     // D += f dE, Z += po x f dE
                        const double g[3] = {f * dEr[i], f * dEr[V + i], f * dEr[2 * V + i]};
                        double z[3];
                        cross(po, g, z);
                        for (int x = 0; x < 3; x++) D[x * V + i] += g[x], Z[x * V + i] += z[x];
                    }
            }
            const double pe = po[0] * ec[0] + po[1] * ec[1] + po[2] * ec[2];
            for (int x = 0; x < 3; x++) {                              // E += e_c, A += e_c po^T - (po . e_c) I
                E[x] += ec[x];
                for (int y = 0; y < 3; y++) A[3 * x + y] += ec[x] * po[y] - (x == y ? pe : 0.0);
            }
            for (int i = 0; i < ns; i++) {                             // Y += dp x e_c
                const double dpk[3] = {dp[i], dp[V + i], dp[2 * V + i]};
                double yk[3];
                cross(dpk, ec, yk);
                for (int x = 0; x < 3; x++) Y[x * V + i] += yk[x];
            }
        }
        for (int i = 0; i < ns; i++) {                                 // E x W_k, A W_k
            const double wk[3] = {W[i], W[V + i], W[2 * V + i]};
            double ew[3];
            cross(E, wk, ew);
            for (int x = 0; x < 3; x++)
                EW[x * V + i] = ew[x], AW[x * V + i] = A[3 * x] * wk[0] + A[3 * x + 1] * wk[1] + A[3 * x + 2] * wk[2];
        }
        for (int l = 0; l < ns; l++) {                                 // U[j, k] = Jp_j . (E x W_k) + W_j . (A W_k)
            const double j0 = Jp[l], j1 = Jp[V + l], j2 = Jp[2 * V + l], w0 = W[l], w1 = W[V + l], w2 = W[2 * V + l];
            double *Ul = U + l * V;
            for (int i = 0; i < ns; i++)
                Ul[i] = j0 * EW[i] + j1 * EW[V + i] + j2 * EW[2 * V + i] + w0 * AW[i] + w1 * AW[V + i] + w2 * AW[2 * V + i];
        }
        for (int l = 0; l < ns; l++) {                                 // Gq -= sum f dJ on S x S
            const double j0 = Jp[l], j1 = Jp[V + l], j2 = Jp[2 * V + l], w0 = W[l], w1 = W[V + l], w2 = W[2 * V + l];
            const double *T = Ts + l * V, *Ul = U + l * V;
            double *Gj = Gq + size_t(S[l]) * nv;
            for (int i = 0; i < ns; i++) {
                double g = w0 * Y[i] + w1 * Y[V + i] + w2 * Y[2 * V + i] + T[i] * (Ul[i] - U[i * V + l]);
                if (turning_any)
                    g += j0 * D[i] + j1 * D[V + i] + j2 * D[2 * V + i] + w0 * Z[i] + w1 * Z[V + i] + w2 * Z[2 * V + i];
                Gj[S[i]] -= g;
            }
        }
    }
}

// w.Z (nv, cols) = da: the solve's qacc's derivative d(a_c)/d(q, qd, ctrl) from R = [r_q | r_qd | df/dctrl] (nv, cols)
// and M (nv, nv) at the optimum (derivatives._Constraints.derivatives' solve: H da = R - [G_q | 0 | 0] + J^T W, of which
// the text returns dqfrc_constraint = M da - R; acceleration takes da itself), H = M + J^T S J, G_q = Gq - J^T Wq
// (product_rule along the moving dofs, analytic_forces, the anchored rows' -dJ^T f), W = [Wq | S daref/dqd | 0];
// false: singular
inline bool constrained_derivatives(const Model &m, const ConstrainedTerms &t, StepDerivData &w, const double *qd,
                                    const double *M, const double *R, int cols) {
    const int nv = m.nv;
    int64_t nefc = t.nefc;
    w.H.assign(M, M + size_t(nv) * nv);                                // H = M + J^T S J
    w.T.resize(size_t(nefc) * nv);
    times_S(t, t.J, nv, w.T.data());
    for (int64_t r = 0; r < nefc; r++)
        for (int i = 0; i < nv; i++) {
            double j = t.J[size_t(r) * nv + i];
            if (j == 0.0) continue;
            for (int k = 0; k < nv; k++) w.H[size_t(i) * nv + k] += j * w.T[size_t(r) * nv + k];
        }
    w.G.assign(size_t(nv) * nv, 0.0), w.W.assign(size_t(nefc) * cols, 0.0), w.Y.resize(size_t(nefc));
    w.dJ.resize(size_t(nefc) * nv), w.rates.resize(size_t(2) * nv);
    product_rule(nv, t, w.G.data(), w.W.data(), cols, w.Y.data(), w.dJ.data());
    const int64_t at = t.plane_at, after = t.nrows - t.plane_rows - at; // the given rows, then the planes', then given
    const size_t sq = size_t(nv) * nv;
    const int *support = t.support ? t.support : w.asupport.data(), *support_at = t.support ? t.support_at : w.asupport_at.data();
    analytic_forces(nv, t, at, t.rows, t.dJ, t.dpos, nullptr, nullptr, qd, w.G.data(), w.W.data(), cols, support, support_at,
                    w.rates.data());
    plane_forces(nv, t, w, qd, w.G.data(), w.W.data(), cols);
    analytic_forces(nv, t, after, t.rows + at + t.plane_rows, t.dJ + size_t(at) * sq, t.dpos + size_t(at) * nv, nullptr,
                    nullptr, qd, w.G.data(), w.W.data(), cols, support, support_at + at, w.rates.data());
    w.Y.resize(size_t(t.nanchor) * nv);                                // the anchored rows: dpos = J
    for (int64_t i = 0; i < t.nanchor; i++) std::copy_n(t.J + size_t(t.anchored[i]) * nv, nv, w.Y.data() + size_t(i) * nv);
    analytic_forces(nv, t, t.nanchor, t.anchored, t.anchor_dJ, w.Y.data(), t.anchor_dgap, t.anchor_dbias, qd, w.G.data(),
                    w.W.data(), cols, w.every.data(), nullptr, w.rates.data());
    w.Z.resize(size_t(nefc) * nv);                                     // W's qd columns: S daref/dqd
    times_S(t, t.daref, nv, w.Z.data());
    for (int64_t r = 0; r < nefc; r++)
        for (int k = 0; k < nv; k++) w.W[size_t(r) * cols + nv + k] = w.Z[size_t(r) * nv + k];
    w.Z.resize(size_t(nv) * cols);                                     // da = H^-1 ([R_q - Gq | R_qd | R_u] + J^T W)
    for (int i = 0; i < nv; i++)
        for (int c = 0; c < cols; c++) w.Z[size_t(i) * cols + c] = R[size_t(i) * cols + c] - (c < nv ? w.G[size_t(i) * nv + c] : 0.0);
    return hessian_solve(m, t, w, M, w.H.data(), w.Z.data(), w.W.data(), cols);
}

// (a, X) at (q, qd) (derivatives._Stepper.acceleration; the discrete step's discrete_acceleration: K = M + h B + h^2 K_s
// with the joints' and the servos' B and K (servo_metric), K a = f - h K_s qd, X's qd columns less h K_s, its ctrl
// columns the servos' slopes' motion, free bodies as implicitfast's): K a = f with K the integrator's matrix, then
// X = K^-1 [df/dq - dtau/dq | df/dqd - dtau/dqd | df/dctrl] with tau = rnea(q, qd, a) (its derivatives by
// composite_derivatives); implicit, and implicitfast's free bodies' rows, also - h/2 d(c(qd + a) - c(qd - a))/dx, the
// derivative of h dc/dqd a in K a. A Status: ZERO_QUATERNION; NONFINITE when f or a is not finite; SINGULAR
inline int acceleration(const Model &m, const Actuators &act, StepDerivData &w, const StepDerivative &c, const double *q,
                        const double *qd) {
    int nv = m.nv, cols = w.cols;
    SimData<double> &s = w.s;
    double *M = s.M.data(), *f = s.f.data(), *K = w.K.data(), *X = w.X.data(), *a = w.a.data(), pot;
    if (evaluate(m, act, s.d, s.x, q, qd, f, M, s.tmp.data(), s.force.data(), pot) != OK) return ZERO_QUATERNION;
    if (any_nonfinite(f, size_t(nv))) return NONFINITE;
    const ConstrainedTerms *con = c.con;                               // the solve's M (before K replaces it)
    if (con) tree_unpack(m, (const double *)M, w.M0.data());
    if (con) analytic_rows(m, s.d, *con, w);                           // the plane contacts' rows at q's kinematics
    step_matrix(m, act, s, c.h, c.integrator, c.implicit_damping, qd);                 // s.M <- K (implicit: s.Mdense)
    if (c.integrator == IMPLICIT) std::copy(s.Mdense.begin(), s.Mdense.end(), K);
    else tree_unpack(m, (const double *)M, K);                         // K dense from the tree's pattern
    bool discrete = c.integrator == DISCRETE;                          // M + h B + h^2 K (forward.h's discrete_matrix)
    if (c.integrator == IMPLICITFAST || discrete)                      // free bodies: their blocks of the implicit matrix
        for (int k = 0; k < m.nfree; k++) {
            double block[36];
            free_body_matrix(m, s, c.h, qd, k, block);
            for (int i = 0; i < 6; i++)
                for (int j = 0; j < 6; j++) K[size_t(m.free_dofadr[k] + i) * nv + m.free_dofadr[k] + j] = block[6 * i + j];
        }
    std::copy(f, f + nv, a);
    if (con)                                                           // K a = f + qfrc_constraint
        for (int j = 0; j < nv; j++) a[j] += con->qfrc[j];
    const double *stiffness = discrete ? s.stiffness.data() : nullptr;   // step_matrix's discrete_stiffness
    if (discrete)
        for (int j = 0; j < nv; j++) a[j] -= c.h * stiffness[j] * qd[j];   // f - h K qd
    bool servos = discrete && act.nu;                                  // the servos' B and K, their - h K qd
    if (servos && !servo_metric(m, act, w, s.force.data(), qd, c.h, K, a)) return SINGULAR;
    if (con) {                                                         // K - M0 by rows, before K's LU
        w.kdiff_col.clear(), w.kdiff.clear();
        for (int i = 0; i < nv; i++) {
            w.kdiff_at[size_t(i)] = int(w.kdiff.size());
            for (int k = 0; k < nv; k++) {
                const double e = K[size_t(i) * nv + k] - w.M0[size_t(i) * nv + k];
                if (e != 0.0) w.kdiff_col.push_back(k), w.kdiff.push_back(e);
            }
        }
        w.kdiff_at[size_t(nv)] = int(w.kdiff.size());
    }
    // K on M's tree pattern (but implicit's, the free bodies' blocks, the discrete metric): its Cholesky there
    // (tree_cholesky, MuJoCo's mj_factorM; K = M + h B or M - h D, symmetric), else or where not positive definite its LU
    bool tree = c.integrator != IMPLICIT && !discrete && !(c.integrator == IMPLICITFAST && m.nfree);
    if (tree) {
        std::copy(M, M + tree_nnz(m), w.L.begin());
        tree = tree_cholesky(m, w.L.data(), w.Linv.data());
    }
    if (tree) {
        tree_solve(m, w.L.data(), w.Linv.data(), a);
    } else {
        if (!lu_factor(K, nv, w.piv.data())) return SINGULAR;
        lu_apply(K, nv, w.piv.data(), a, 1, nullptr);
    }
    if (any_nonfinite(a, size_t(nv))) return NONFINITE;
    // X = [dF/dq - dtau/dq | dF/dqd - dtau/dqd | dF/dctrl], F = passive + actuators (+ applied: constant)
    std::fill(X, X + size_t(nv) * cols, 0.0);
    passive_derivatives(m, X, cols);
    if (act.nu)
        actuator_derivatives(m, act, w.raw.data(), s.x.u.data(), s.x.raw.data(), s.force.data(), q, qd, w.keep.data(),
                             w.tau.data(), w.qdn.data(), X, cols);
    // constrained: X's K^-1 [F_x - dtau(a)/dx + dqfrc_constraint/dx], dqfrc_constraint/dx = M0 da - R (the text's), R =
    // F_x - dtau(a_c)/dx, is da + K^-1 (dtau(a_c)/dx - dtau(a)/dx - (K - M0) da): no M0 da, and X holds the bracket's rest
    if (con) {
        rnea_derivatives_posed(m, s.d, w.dw, qd, con->a_c, w.cq.data(), w.cv.data());   // evaluate's position stages
        for (int i = 0; i < nv; i++)
            for (int col = 0; col < cols; col++) {
                size_t e = size_t(i) * cols + col;
                w.R[e] = X[e] - (col < nv ? w.cq[size_t(i) * nv + col] : col < 2 * nv ? w.cv[size_t(i) * nv + col - nv] : 0.0);
            }
        if (!constrained_derivatives(m, *con, w, qd, w.M0.data(), w.R.data(), cols)) return SINGULAR;
        position_derivatives_at(m, s.d, w.dw, qd, a, w.tq.data());    // at a on the same (q, qd): dtau/dqd as at a_c
        for (size_t e = 0; e < size_t(nv) * nv; e++) w.tq[e] -= w.cq[e];   // dtau(a)/dx - dtau(a_c)/dx
        std::fill(w.tv.begin(), w.tv.end(), 0.0);
        std::fill(X, X + size_t(nv) * cols, 0.0);
    } else {
        rnea_derivatives_posed(m, s.d, w.dw, qd, a, w.tq.data(), w.tv.data());
    }
    bool implicit = c.integrator == IMPLICIT, free = (c.integrator == IMPLICITFAST || discrete) && m.nfree;
    if (implicit || free) {                                            // dc/dqd a = (c(qd + a) - c(qd - a)) / 2 exactly
        for (int j = 0; j < nv; j++) w.qdn[j] = qd[j] + a[j];
        rnea_derivatives_posed(m, s.d, w.dw, w.qdn.data(), w.zero.data(), w.cq.data(), w.cv.data());
        for (int j = 0; j < nv; j++) w.qdn[j] = qd[j] - a[j];
        rnea_derivatives_posed(m, s.d, w.dw, w.qdn.data(), w.zero.data(), w.cqm.data(), w.cvm.data());
        const double *cqm = w.cqm.data(), *cvm = w.cvm.data();
        auto correct = [&](int i) {
            for (int j = 0; j < nv; j++) {
                w.tq[size_t(i) * nv + j] += 0.5 * c.h * (w.cq[size_t(i) * nv + j] - cqm[size_t(i) * nv + j]);
                w.tv[size_t(i) * nv + j] += 0.5 * c.h * (w.cv[size_t(i) * nv + j] - cvm[size_t(i) * nv + j]);
            }
        };
        if (implicit)
            for (int i = 0; i < nv; i++) correct(i);
        else
            for (int k = 0; k < m.nfree; k++)
                for (int i = 0; i < 6; i++) correct(int(m.free_dofadr[k]) + i);
    }
    for (int i = 0; i < nv; i++)
        for (int j = 0; j < nv; j++) {
            X[size_t(i) * cols + j] -= w.tq[size_t(i) * nv + j];
            X[size_t(i) * cols + nv + j] -= w.tv[size_t(i) * nv + j];
        }
    if (discrete)                                                      // - h K on qd (the joints' K: B and K constant)
        for (int j = 0; j < nv; j++) X[size_t(j) * cols + nv + j] -= c.h * stiffness[j];
    if (servos) servo_metric_derivative(m, act, w, qd, a, c.h, X, cols);   // the servos' metric moves with ctrl
    if (act.nu && (c.integrator == IMPLICIT || c.integrator == IMPLICITFAST))   // K's actuator damping moves with ctrl
        damping_control_derivative(m, act, w.raw.data(), s.force.data(), w.keep.data(), a, c.h, X, cols,
                                   c.integrator == IMPLICITFAST);
    if (con)                                                           // - (K - M0) da
        for (int i = 0; i < nv; i++) {
            const int at = w.kdiff_at[size_t(i)];
            subtract_sources(w.sub, X + size_t(i) * cols, [&](int k) { return w.Z.data() + size_t(w.kdiff_col[size_t(at + k)]) * cols; },
                             w.kdiff.data() + at, w.kdiff_at[size_t(i) + 1] - at, cols);
        }
    if (tree) tree_solve_rows(m, w.L.data(), w.Linv.data(), X, cols, w.sub);
    else lu_apply(K, nv, w.piv.data(), X, cols, w.sub);
    if (con)                                                           // + da
        for (size_t e = 0; e < size_t(nv) * cols; e++) X[e] += w.Z[e];
    return OK;
}

// rotation vector phi: R = exp([phi]) and the right Jacobian J_r(phi) (spatial.so3_exp, so3_right_jacobian; their
// series below t = 0.1)
inline void rotation_and_right_jacobian(const double *phi, double *R, double *J) {
    double t2 = phi[0] * phi[0] + phi[1] * phi[1] + phi[2] * phi[2], t = std::sqrt(t2), W[9], WW[9];
    double sin_t, one_minus_cos, minus_sin;                            // sin t / t, (1 - cos t) / t^2, (t - sin t) / t^3
    if (t < 0.1) {
        sin_t = 1.0 + t2 * (-1.0 / 6 + t2 * (1.0 / 120 + t2 * (-1.0 / 5040 + t2 / 362880)));
        one_minus_cos = 0.5 + t2 * (-1.0 / 24 + t2 * (1.0 / 720 + t2 * (-1.0 / 40320 + t2 / 3628800)));
        minus_sin = 1.0 / 6 + t2 * (-1.0 / 120 + t2 * (1.0 / 5040 + t2 * (-1.0 / 362880 + t2 / 39916800)));
    } else {
        sin_t = std::sin(t) / t, one_minus_cos = (1.0 - std::cos(t)) / t2, minus_sin = (t - std::sin(t)) / (t2 * t);
    }
    skew(phi, W);
    mat3_mul(W, W, WW);
    for (int k = 0; k < 9; k++) {
        double I = (k % 4 == 0) ? 1.0 : 0.0;
        R[k] = I + sin_t * W[k] + one_minus_cos * WW[k];
        J[k] = I - one_minus_cos * W[k] + minus_sin * WW[k];
    }
}

// out (nv, cols) = Ad Eq + Jw Y, the tangent of q' = q (+) s v (derivatives._retraction): scalars Ad = 1, Jw = s;
// quaternions Ad = exp(s v)^T, Jw = s J_r(s v); Eq = [1 0 0]
inline void retraction_tangent(const Model &m, const double *v, double s, const double *Y, double *out, int cols) {
    for (int k = 0; k < m.nscalar; k++) {
        int64_t r = m.scalar_dofadr[k];
        for (int c = 0; c < cols; c++) out[size_t(r) * cols + c] = s * Y[size_t(r) * cols + c];
        out[size_t(r) * cols + r] += 1.0;
    }
    for (int k = 0; k < m.nquat; k++) {
        int64_t adr = m.quat_dofadr[k];
        double phi[3] = {s * v[adr], s * v[adr + 1], s * v[adr + 2]}, R[9], J[9];
        rotation_and_right_jacobian(phi, R, J);
        for (int i = 0; i < 3; i++) {
            double *o = out + size_t(adr + i) * cols;
            for (int c = 0; c < cols; c++) {
                double t = 0.0;
                for (int j = 0; j < 3; j++) t += (s * J[3 * i + j]) * Y[size_t(adr + j) * cols + c];
                o[c] = t;
            }
            for (int j = 0; j < 3; j++) o[adr + j] += R[3 * j + i];
        }
    }
}

// out (nv, cols) = Kv Tv + Kt Y, the tangent of k = dexp^-1(theta) v (derivatives._dexp_inv_jacobians): scalars Kv = 1,
// Kt = 0; rotations Kv = 1 + 1/2 [theta] + c [theta]^2, Kt = -1/2 [v] + c (theta v^T + (theta . v) 1 - 2 v theta^T)
// + (theta x (theta x v)) c'(t) theta^T / t, t = |theta|
inline void dexp_inv_tangent(const Model &m, const double *theta, const double *v, const double *Tv, const double *Y,
                             double *out, int cols) {
    for (int k = 0; k < m.nscalar; k++) {
        int64_t r = m.scalar_dofadr[k];
        std::copy(Tv + size_t(r) * cols, Tv + size_t(r + 1) * cols, out + size_t(r) * cols);
    }
    for (int k = 0; k < m.nquat; k++) {
        int64_t adr = m.quat_dofadr[k];
        const double *th = theta + adr, *w = v + adr;
        double t = std::sqrt(th[0] * th[0] + th[1] * th[1] + th[2] * th[2]), c, dc_t;
        if (t < 1e-4) c = 1.0 / 12.0 + t * t / 720.0;
        else c = 1.0 / (t * t) - 1.0 / (2.0 * t * std::tan(0.5 * t));
        if (t < 1e-2) {                                                // c'(t) / t = 1/360 + t^2/7560 + O(t^4)
            dc_t = 1.0 / 360.0 + t * t / 7560.0;
        } else {
            double g = 2.0 * t * std::tan(0.5 * t), sec = 1.0 / std::cos(0.5 * t);
            dc_t = (-2.0 / (t * t * t) + (2.0 * std::tan(0.5 * t) + t * sec * sec) / (g * g)) / t;
        }
        double T[9], V[9], TT[9], tw[3], ttw[3], Kv[9], Kt[9], tdw = th[0] * w[0] + th[1] * w[1] + th[2] * w[2];
        skew(th, T), skew(w, V), mat3_mul(T, T, TT);
        cross(th, w, tw), cross(th, tw, ttw);
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                double I = i == j ? 1.0 : 0.0;
                Kv[3 * i + j] = I + 0.5 * T[3 * i + j] + c * TT[3 * i + j];
                Kt[3 * i + j] = -0.5 * V[3 * i + j] + c * (th[i] * w[j] + tdw * I - 2.0 * w[i] * th[j]) + ttw[i] * th[j] * dc_t;
            }
        for (int i = 0; i < 3; i++)
            for (int col = 0; col < cols; col++) {
                double s = 0.0;
                for (int j = 0; j < 3; j++)
                    s += Kv[3 * i + j] * Tv[size_t(adr + j) * cols + col] + Kt[3 * i + j] * Y[size_t(adr + j) * cols + col];
                out[size_t(adr + i) * cols + col] = s;
            }
    }
}

// A (2 nv, 2 nv) and B (2 nv, nu) of one step from (q, qd) (derivatives.step_derivatives); a Status
inline int step_derivative(const Model &m, const Actuators &act, StepDerivData &w, const StepDerivative &c, const double *q,
                           const double *qd) {
    int nv = m.nv, nu = act.nu, cols = w.cols;
    double h = c.h;
    SimData<double> &s = w.s;
    for (int a = 0; a < nu; a++) {                                     // the controls as given, and clamped (forces._ctrl)
        w.raw[size_t(a)] = c.ctrl[a];
        s.x.u[size_t(a)] = clamped_ctrl(act, a, c.ctrl[a]);
    }
    s.x.has_qfrc = c.qfrc != nullptr, s.x.has_xfrc = false;
    if (c.qfrc) std::copy(c.qfrc, c.qfrc + nv, s.x.qfrc.begin());
    double *Tq = w.Tq.data(), *Tv = w.Tv.data(), *X = w.X.data();
    auto ev = [&](double *T, double scale, const double *Y) {          // T = Ev + scale Y (Y null: Ev)
        for (int i = 0; i < nv; i++)
            for (int col = 0; col < cols; col++)
                T[size_t(i) * cols + col] = (Y ? scale * Y[size_t(i) * cols + col] : 0.0) + (col == nv + i ? 1.0 : 0.0);
    };
    if (c.integrator != RK4) {                                         // Tv = Ev + h X, Tq = Ad Eq + Jw Tv at qd' = qd + h a
        int st = acceleration(m, act, w, c, q, qd);
        if (st != OK) return st;
        ev(Tv, h, X);
        for (int j = 0; j < nv; j++) w.qdn[j] = qd[j] + h * w.a[j];
        retraction_tangent(m, w.qdn.data(), h, Tv, Tq, cols);
    } else {                                                           // the stages of engine.forward.rk4_stages, with their tangents
        const double C[3] = {0.5, 0.5, 1.0}, Bw[4] = {1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0};
        double *Tk = w.Tk.data(), *Ta = w.Ta.data(), *sumTk = w.sumTk.data(), *sumTa = w.sumTa.data(), *Tn = w.Tnext.data();
        std::fill(Tq, Tq + size_t(nv) * cols, 0.0);
        for (int i = 0; i < nv; i++) Tq[size_t(i) * cols + i] = 1.0;  // Eq
        ev(Tv, 0.0, nullptr), ev(Tk, 0.0, nullptr);                   // Ev
        std::fill(sumTk, sumTk + size_t(nv) * cols, 0.0), std::fill(sumTa, sumTa + size_t(nv) * cols, 0.0);
        std::copy(q, q + m.nq, w.qi.begin()), std::copy(qd, qd + nv, w.qdi.begin()), std::copy(qd, qd + nv, w.ki.begin());
        std::fill(w.sumk.begin(), w.sumk.end(), 0.0);
        for (int stage = 0; stage < 4; stage++) {
            int st = acceleration(m, act, w, c, w.qi.data(), w.qdi.data());
            if (st != OK) return st;
            for (int i = 0; i < nv; i++) {                             // Ta = Xq Tq_i + Xv Tv_i + Xu Eu
                double *row = Ta + size_t(i) * cols;
                const double *x = X + size_t(i) * cols;
                for (int col = 0; col < cols; col++) row[col] = 0.0;
                for (int k = 0; k < nv; k++) {
                    double xq = x[k], xv = x[nv + k];
                    const double *tq = Tq + size_t(k) * cols, *tv = Tv + size_t(k) * cols;
                    for (int col = 0; col < cols; col++) row[col] += xq * tq[col] + xv * tv[col];
                }
                for (int u = 0; u < nu; u++) row[2 * nv + u] += x[2 * nv + u];
            }
            double b = Bw[stage];
            for (int j = 0; j < nv; j++) w.sumk[j] += b * w.ki[j];
            for (size_t e = 0; e < size_t(nv) * cols; e++) sumTk[e] += b * Tk[e], sumTa[e] += b * Ta[e];
            if (stage == 3) break;
            double cs = C[stage];                                      // q_i+1 = q (+) h c k_i, qd_i+1 = qd + h c a_i
            for (int j = 0; j < nv; j++) w.dq[j] = cs * w.ki[j], w.theta[j] = h * w.dq[j];
            retraction_tangent(m, w.ki.data(), h * cs, Tk, Tq, cols);  // Tq_i+1 = Ad Eq + Jw Tk_i
            integrate_pos(m, q, w.dq.data(), h, w.qi.data());
            for (int j = 0; j < nv; j++) w.qdi[j] = qd[j] + h * cs * w.a[j];
            ev(Tv, h * cs, Ta);                                        // Tv_i+1 = Ev + h c Ta_i
            for (size_t e = 0; e < size_t(nv) * cols; e++) Tn[e] = h * cs * Tk[e];
            dexp_inv_tangent(m, w.theta.data(), w.qdi.data(), Tv, Tn, Tk, cols);   // Tk_i+1 = Kv Tv_i+1 + Kt h c Tk_i
            std::copy(w.qdi.begin(), w.qdi.end(), w.ki.begin());       // k_i+1 = dexp^-1(theta) qd_i+1
            dexp_inv(m, w.theta.data(), w.ki.data());
        }
        ev(Tv, h, sumTa);                                              // Tv = Ev + h sum b Ta_i, Tq = Ad Eq + Jw sum b Tk_i
        retraction_tangent(m, w.sumk.data(), h, sumTk, Tq, cols);
    }
    for (int r = 0; r < 2 * nv; r++) {                                 // [A | B] = [Tq; Tv]
        const double *T = (r < nv ? Tq : Tv) + size_t(r % nv) * cols;
        std::copy(T, T + 2 * nv, c.A + size_t(r) * 2 * nv);
        if (nu) std::copy(T + 2 * nv, T + cols, c.B + size_t(r) * nu);
    }
    if (any_nonfinite(c.A, size_t(4) * nv * nv) || (nu && any_nonfinite(c.B, size_t(2) * nv * nu))) return NONFINITE;
    return OK;
}

// the states [lo, hi) of a call, each one's Status into call.status
inline void step_derivative_states(const Model &m, const Actuators &act, StepDerivData &w, const StepDerivativeCall &call,
                                   int64_t lo, int64_t hi) {
    int64_t nv = m.nv, nu = act.nu;
    subtract_rows_set(w.sub);                                          // the active instruction set's, for this call
    for (int64_t n = lo; n < hi; n++) {
        StepDerivative c;
        c.h = call.opt.h, c.integrator = call.opt.integrator, c.implicit_damping = call.opt.implicit_damping;
        c.ctrl = call.ctrl.data + n * call.ctrl.stride;
        c.qfrc = call.qfrc.data ? call.qfrc.data + n * call.qfrc.stride : nullptr;
        c.A = call.A + n * 4 * nv * nv, c.B = call.B + n * 2 * nv * nu, c.con = call.constrained;
        call.status[n] = step_derivative(m, act, w, c, call.q.data + n * call.q.stride, call.qd.data + n * call.qd.stride);
    }
}

}  // namespace
}  // namespace physai
