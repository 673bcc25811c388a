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
#include <vector>

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
                put(x.u, size_t(a), clamped_ctrl(act, a, u));
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

// trajectory n of r from its Q[k0], QD[k0], A[k0] (with constraints when con): -1 when every step was taken, else the
// step that stopped it, with the reason (DIVERGED: the state k + 1 is not finite; ZERO_QUATERNION, SINGULAR) in
// r.failure[n]
inline int64_t simulate_one(const Model &m, const Actuators &act, SimData<double> &w, const Rollout &r, int64_t n,
                            const Constrain *con = nullptr, int64_t k0 = 0) {
    int nq = m.nq, nv = m.nv, na = act.na;
    int64_t steps = r.steps;
    double *Q = r.Q + n * (steps + 1) * nq, *QD = r.QD + n * (steps + 1) * nv, *E = r.E + n * (steps + 1);
    double *A = r.A + n * (steps + 1) * na;
    std::copy_n(A + k0 * na, na, w.x.act.begin());                     // the activations, stepped in w.x.act
    for (int64_t k = k0; k < steps; k++) {
        if (r.stop && r.stop->load(std::memory_order_relaxed)) return k;                  // stopped: discarded
        double *qn = Q + (k + 1) * nq, *qdn = QD + (k + 1) * nv;
        step_inputs(m, act, r, n, 1, k, w.x);
        w.pcg_capped = -1.0;
        int st = step(m, act, w, r.opt, Q + k * nq, QD + k * nv, qn, qdn, E[k], con);
        if (con) con->stepped(con->ctx, n, k);
        if (w.pcg_capped >= 0.0 && r.capped && r.capped[n] < 0)        // the first step whose smooth solve hit the cap
            r.capped[n] = k, r.capped_residual[n] = w.pcg_capped;
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

// ---------------------------------------------------------------- steps without a contact, side by side

// whether a constrained model's only rows are contacts (cpp/constraint.h's row_bound without contacts is 0: no active
// equality, friction loss or limit) and every geom pair physai may warn about is a candidate (no left-out pair): a
// step whose candidates are all apart then has no row, and steps as without constraints
inline bool contacts_only(const Model &m) {
    if (m.opt_equality)
        for (int e = 0; e < m.neq; e++)
            if (m.eq_active0[e] != 0) return false;
    if (m.opt_frictionloss) {
        for (int i = 0; i < m.nv; i++)
            if (m.dof_frictionloss[i] != 0.0) return false;
        for (int64_t t = 0; t < m.ntendon; t++)
            if (m.tendon_frictionloss[t] != 0.0) return false;
    }
    if (m.opt_limit) {
        for (int j = 0; j < m.njnt; j++)
            if (m.jnt_limited[j]) return false;
        for (int64_t t = 0; t < m.ntendon; t++)
            if (m.tendon_limited[t]) return false;
    }
    return m.nmissing == 0;
}

// the candidate pairs' bounding-sphere test (collision.h's sphere_apart) on the links' frames of the dynamics: each
// candidate geom's centre and axis z in its link's frame (link -1: the world's), so that centre = x_link + R_link c and
// normal = R_link z; per candidate its geoms and margin + gap. SLACK [m] covers the frames' rounding (the dynamics'
// arithmetic, not MuJoCo-order body poses): a pair apart here by more than it is apart for detect too
constexpr double SLACK = 1e-6;
template <class T> struct ContactFree {
    std::vector<int64_t> geom, link;             // the candidates' geoms, each one's link
    std::vector<double> centre, axis, radius;    // (3), (3) per geom in its link's frame; its bounding radius
    std::vector<char> plane;
    std::vector<int64_t> pair;                   // (2) per candidate: indices into geom
    std::vector<double> bound;                   // per candidate: margin + gap + SLACK
    std::vector<T> pos, normal;                  // per geom, in the world: the state's
    explicit ContactFree(const Model &m) {
        std::vector<int64_t> index(size_t(m.ngeom), -1);
        for (int64_t k = 0; k < 2 * m.ncand; k++) {
            int64_t g = m.cand_geom[k];
            if (index[size_t(g)] < 0) {
                index[size_t(g)] = int64_t(geom.size());
                geom.push_back(g);
            }
            pair.push_back(index[size_t(g)]);
        }
        for (int64_t k = 0; k < m.ncand; k++) {
            const double *param = m.cand_float + CAND_FLOATS * m.cand_param[k];
            bound.push_back(param[0] + param[1] + SLACK);
        }
        for (int64_t g : geom) {
            int64_t b = m.geom_bodyid[g], l = b < 0 ? -1 : m.body_linkid[b];
            double R[9], z[3], c[3], n[3];
            quat_to_mat(m.geom_quat + 4 * g, R);
            z[0] = R[2], z[1] = R[5], z[2] = R[8];
            if (b < 0) {
                for (int a = 0; a < 3; a++) c[a] = m.geom_pos[3 * g + a], n[a] = z[a];
            } else {                                                 // the body's frame in its link's: p + B x
                mat3_times(m.body_rot + 9 * b, m.geom_pos + 3 * g, c);
                for (int a = 0; a < 3; a++) c[a] = c[a] + m.body_pos[3 * b + a];
                mat3_times(m.body_rot + 9 * b, z, n);
            }
            link.push_back(l), radius.push_back(m.geom_rbound[g]), plane.push_back(m.geom_type[g] == GEOM_PLANE);
            for (int a = 0; a < 3; a++) centre.push_back(c[a]), axis.push_back(n[a]);
        }
        pos.resize(3 * geom.size()), normal.resize(3 * geom.size());
    }
};

// whether every candidate pair is apart at the state whose link frames d holds (in every lane): two spheres farther
// than their radii plus the bound, or a plane with the other's centre above it by more than its radius plus the bound
// (sphere_apart's tests; anything else counts as near)
template <class T> bool contacts_apart(const Model &m, ContactFree<T> &cf, const Data<T> &d) {
    if (!m.opt_contact) return true;
    for (size_t i = 0; i < cf.geom.size(); i++) {
        int64_t l = cf.link[i];
        const double *c = &cf.centre[3 * i], *z = &cf.axis[3 * i];
        T *p = &cf.pos[3 * i], *n = &cf.normal[3 * i];
        if (l < 0) {
            for (int a = 0; a < 3; a++) p[a] = splat<T>(c[a]), n[a] = splat<T>(z[a]);
            continue;
        }
        const T *R = &d.xmat[size_t(9 * l)], *x = &d.xpos[size_t(3 * l)];
        mat3_times(R, c, p);
        for (int a = 0; a < 3; a++) p[a] = p[a] + x[a];
        if (cf.plane[i]) mat3_times(R, z, n);
    }
    for (size_t k = 0; k < cf.bound.size(); k++) {
        size_t i1 = size_t(cf.pair[2 * k]), i2 = size_t(cf.pair[2 * k + 1]);
        double r1 = cf.radius[i1], r2 = cf.radius[i2], bound = cf.bound[k];
        const T *p1 = &cf.pos[3 * i1], *p2 = &cf.pos[3 * i2];
        if (r1 > 0 && r2 > 0) {                                       // |p1 - p2|^2 > (r1 + r2 + bound)^2
            T d0 = p1[0] - p2[0], d1 = p1[1] - p2[1], d2 = p1[2] - p2[2];
            double reach = r1 + r2 + bound;
            if (lane_any(!(d0 * d0 + d1 * d1 + d2 * d2 > reach * reach))) return false;
            continue;
        }
        size_t plane = cf.plane[i1] && r2 > 0 ? i1 : cf.plane[i2] && r1 > 0 ? i2 : cf.geom.size();
        if (plane == cf.geom.size()) return false;                    // no test tells: near
        size_t other = plane == i1 ? i2 : i1;
        const T *pp = &cf.pos[3 * plane], *po = &cf.pos[3 * other], *n = &cf.normal[3 * plane];
        T height = (po[0] - pp[0]) * n[0] + (po[1] - pp[1]) * n[1] + (po[2] - pp[2]) * n[2];
        if (lane_any(!(height > bound + cf.radius[other]))) return false;   // (n, other's centre - plane's point) > r + bound
    }
    return true;
}

// trajectories n .. n + count - 1 of r (count <= the lanes of L) side by side, from their Q[0], QD[0] and A[0], for
// actuators without muscles (Actuators::lanes): OK with every state written, or not (a lane diverged, a zero quaternion,
// implicit, a matrix that does not factor): the caller then runs them one by one (simulate_one), which reports exactly
// what and where
//
// With free (a constrained model whose only rows are contacts, a single-step integrator): each step is kept only when
// every candidate pair is apart at its start state (contacts_apart on the step's own link frames): a step without rows
// is the smooth dynamics' step. The block stops before the first step that may touch; *done the steps written.
//
// With con (a constrained rollout): every step from k0 with the constraints, the smooth stages and the integration in lanes,
// each lane's contacts, rows and solve through its trajectory's Constrain (constrained_solve), whose stepped records
// each step
template <class L> int simulate_block(const Model &m, const Actuators &act, SimData<L> &w, const Rollout &r, int64_t n, int64_t count,
                                      ContactFree<L> *free = nullptr, int64_t *done = nullptr,
                                      const LaneConstrain *con = nullptr, int64_t k0 = 0) {
    constexpr int W = lanes_of<L>;
    int nq = m.nq, nv = m.nv, na = act.na;
    int64_t steps = r.steps, rowq = (steps + 1) * nq, rowv = (steps + 1) * nv, rowe = steps + 1, rowa = (steps + 1) * na;
    auto lane = [&](int64_t l) { return n + std::min<int64_t>(l, count - 1); };
    for (int l = 0; l < W; l++) {
        for (int i = 0; i < nq; i++) w.q[i][l] = r.Q[lane(l) * rowq + k0 * nq + i];
        for (int j = 0; j < nv; j++) w.qd[j][l] = r.QD[lane(l) * rowv + k0 * nv + j];
        for (int i = 0; i < na; i++) w.x.act[i][l] = r.A[lane(l) * rowa + k0 * na + i];
    }
    L e;
    for (int64_t k = k0; k < steps; k++) {
        if (r.stop && r.stop->load(std::memory_order_relaxed)) return DIVERGED;            // stopped: discarded
        step_inputs(m, act, r, n, count, k, w.x);
        int st = step(m, act, w, r.opt, w.q.data(), w.qd.data(), w.qn.data(), w.qdn.data(), e, con);
        if (st != OK) return st;
        for (int64_t l = 0; con && l < count; l++) con->lane[l].stepped(con->lane[l].ctx, n + l, k);
        if (free && !contacts_apart(m, *free, w.d)) {                  // the start state may touch: not this step
            *done = k;
            return OK;
        }
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
    if (free) {                                                        // the last state's energy: the scalar run's
        *done = steps;
        return OK;
    }
    if (con && con->one)                                               // the last RK4 stage sum per lane (observe_end)
        for (int64_t l = 0; l < count; l++)
            for (int j = 0; j < nv; j++) con->dqd[size_t(l * nv + j)] = w.dqd[j][l];
    if (r.with_energy) {
        if (final_energy(m, w.d, w.q.data(), w.qd.data(), e) != OK) return ZERO_QUATERNION;
        for (int64_t l = 0; l < count; l++) r.E[(n + l) * rowe + steps] = e[l];
    }
    return OK;
}

}  // namespace
}  // namespace physai
