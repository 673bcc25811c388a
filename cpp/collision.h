// Collision detection (src/physai/engine/collision.py, MuJoCo's engine_collision_driver.c), function by function with
// the NumPy text's names, one state at a time (double; compiled into the scalar translation unit only):
//
//     broad_phase(m, w)                  the groups of candidates this state tests (collision.sweep_and_prune, tested)
//     tested_directly(m, w, subset)      which of some candidates it tests, without the sweep (collision.tested_directly)
//     detect(m, w, q, ..., subset)       the contacts of a state in MuJoCo's order, as a Contacts over w's arrays
//     near_missing_pairs(m, w, out)      every left-out pair that may touch at detect's state (collision_detect's warnings)
//
// The candidate pairs (MuJoCo's filters and order) and their contact parameters are the model's, made once by
// physai.engine.collision.candidates and contact_parameters (Model's cand_*); per state only the geoms' frames
// (cpp/smooth.h's geom_poses), the broad phase (with MuJoCo 4's own boxes along its covariance frame for the groups whose
// margins sum below 0: eig3, sweep_frame, mujoco_box, mujoco_boxes_apart), the bounding-sphere test and the narrow
// phase (cpp/primitives.h) run. The pairs without a narrow phase here (missing_*)
// are only tested for overlap, for a warning.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "data.h"
#include "model.h"
#include "primitives.h"
#include "smooth.h"
#include "spatial.h"

namespace physai {
namespace {

// a state's collision workspace: every body's frame, every geom's (PoseWork; posed: the geoms detect reads, those that
// collide by type (the bodies' boxes), and those of the candidates and the left-out pairs), the contacts found
// (CONTACT_FLOATS and CONTACT_INTS per contact, cpp/data.h's Contacts layout), and the first left-out pair that may
// touch (-1: none)
struct CollisionWork : PoseWork {
    std::vector<double> f, lo, hi;
    std::vector<int64_t> i, order, open, groups, tested;
    std::vector<char> hit, boxed;
    std::vector<PreContact> found;
    std::vector<int64_t> cand;           // the candidate pair of each contact in f, i
    // each body's place in m.sweep_body (-1: not swept; nbody + 1) and the group of swept bodies i, j at i nsweep + j
    // (-1: none; made when nsweep <= 256, else group_of looks it up)
    std::vector<int32_t> sweep_at, sweep_group;
    int64_t near_missing = -1;
    ConvexMesh mesh1, mesh2;             // a pair's meshes (collide), kept here: not cleared for every pair
    HField hfield;
    CcdRoom ccd_room;                    // the convex pairs' polytope and multi-contact lists, refilled pair after pair
    std::vector<char> every;             // the groups tested in every state: always tested or with explicit pairs
    std::vector<int64_t> cand_group;     // each candidate's group; tested: the candidates tested_directly keeps
    int order_axis = -1;                 // the axis w.order was last sorted along (broad_phase starts from that order)
    bool shrunk = false;                 // a group MuJoCo's own boxes may drop (m.group_shrunk): every geom posed
    bool proper = true;                  // no body's box can be inverted (collision.boxes_proper): every geom_pad >= 0
    // each candidate's numbers of sphere_apart, made once: bound = margin + gap; both radii > 0: reach2 = (r1 + r2 +
    // bound)^2; else geom k (0: g1, 1: g2) a plane and the other's radius r > 0 (plane[k]): above[k] = bound + r
    struct SphereTest {
        double bound, reach2, above[2];
        bool spheres, plane[2];
    };
    std::vector<SphereTest> sphere;
    std::vector<Narrow> narrow;          // each candidate's narrow phase (narrow_phase of its types), made once
    explicit CollisionWork(const Model &m) : PoseWork(m) {
        size_t B = size_t(m.nbody), G = size_t(m.ngeom);
        lo.resize(3 * (B + 1)), hi.resize(3 * (B + 1)), boxed.resize(B + 1), hit.resize(size_t(m.ngroup));
        every.resize(size_t(m.ngroup)), cand_group.resize(size_t(m.ncand));
        for (int64_t g = 0; g < m.ngroup; g++) every[size_t(g)] = m.group_always[g] || m.group_split[g] > m.group_start[g];
        for (int64_t g = 0; g < m.ngroup; g++)
            for (int64_t k = m.group_start[g]; k < m.group_end[g]; k++) cand_group[size_t(k)] = g;
        for (int64_t g = 0; g < m.ngeom && m.geom_collides; g++) proper = proper && !(m.geom_collides[g] && m.geom_pad[g] < 0);
        for (int64_t g = 0; g < m.ngroup && m.group_shrunk; g++) shrunk = shrunk || m.group_shrunk[g];
        sphere.resize(size_t(m.ncand)), narrow.resize(size_t(m.ncand));
        for (int64_t k = 0; k < m.ncand; k++) {
            int64_t g1 = m.cand_geom[2 * k], g2 = m.cand_geom[2 * k + 1];
            narrow[size_t(k)] = narrow_phase(m.geom_type[g1], m.geom_type[g2]);
            const double *param = m.cand_float + CAND_FLOATS * m.cand_param[k];
            double r1 = m.geom_rbound[g1], r2 = m.geom_rbound[g2], bound = param[0] + param[1];
            SphereTest &t = sphere[size_t(k)];
            t.bound = bound, t.spheres = r1 > 0 && r2 > 0, t.reach2 = (r1 + r2 + bound) * (r1 + r2 + bound);
            for (int i = 0; i < 2; i++) {
                double r = i ? r1 : r2;
                t.plane[i] = m.geom_type[i ? g2 : g1] == GEOM_PLANE && r > 0, t.above[i] = bound + r;
            }
        }
        std::vector<char> read(G, 0);
        for (int64_t g = 0; g < m.ngeom; g++) read[size_t(g)] = shrunk || !m.geom_collides || m.geom_collides[g];
        for (int64_t k = 0; k < 2 * m.ncand; k++) read[size_t(m.cand_geom[k])] = 1;
        for (int64_t k = 0; k < 2 * m.nmissing; k++) read[size_t(m.missing_geom[k])] = 1;
        for (int64_t g = 0; g < m.ngeom; g++)
            if (read[size_t(g)]) posed.push_back(g);
        if (m.nsweep > 256) return;
        size_t S = size_t(m.nsweep);
        sweep_at.assign(B + 1, -1), sweep_group.assign(S * S, -1);
        for (size_t k = 0; k < S; k++) sweep_at[size_t(m.sweep_body[k])] = int32_t(k);
        for (int64_t g = 0; g < m.ngroup; g++) {
            int32_t a = sweep_at[size_t(m.group_body[2 * g])], b = sweep_at[size_t(m.group_body[2 * g + 1])];
            if (a >= 0 && b >= 0) sweep_group[size_t(a) * S + size_t(b)] = sweep_group[size_t(b) * S + size_t(a)] = int32_t(g);
        }
    }
};

// ---------------------------------------------------------------- the broad phase

// the group of body pair (b1, b2) (b1 < b2), or -1 (the groups are in MuJoCo's order: by body pair)
inline int64_t group_of(const Model &m, int64_t b1, int64_t b2) {
    int64_t a = 0, e = m.ngroup;
    while (a < e) {
        int64_t mid = (a + e) / 2, c1 = m.group_body[2 * mid], c2 = m.group_body[2 * mid + 1];
        if (c1 < b1 || (c1 == b1 && c2 < b2)) a = mid + 1;
        else e = mid;
    }
    return a < m.ngroup && m.group_body[2 * a] == b1 && m.group_body[2 * a + 1] == b2 ? a : -1;
}

// the world axis along which the swept bodies' boxes' lower corners spread most (the first of equals;
// collision.sweep_axis): few boxes open at once along it
inline int sweep_axis(const Model &m, const CollisionWork &w) {
    int axis = 0;
    double widest = -1.0;
    for (int a = 0; a < 3; a++) {
        double lo = INFINITY, hi = -INFINITY;
        for (int64_t k = 0; k < m.nsweep; k++) {
            double x = w.lo[size_t(3 * m.sweep_body[k] + a)];
            lo = fmin_inline(x, lo), hi = fmax_inline(x, hi);            // a NaN x skipped
        }
        if (hi - lo > widest) widest = hi - lo, axis = a;
    }
    return axis;
}

constexpr double EIG_RELTOL = 1e-3;      // the relative tolerance of MuJoCo 4's broad-phase frame (collision.EIG_RELTOL)

// MuJoCo 4's mju_eig3Tol (collision.eig3): the eigenvectors of a symmetric mat (3x3), the columns of V, by Jacobi
// rotations accumulated in a quaternion until the largest off-diagonal entry is at most max(reltol, 4e-15) times mat's
// largest |entry| (at most 500), then sorted by decreasing eigenvalue (within 1e-12 times that entry: kept in place)
inline void eig3(const double *mat, double reltol, double *V) {
    double scale = 0.0, value[3] = {0.0, 0.0, 0.0}, quat[4] = {1.0, 0.0, 0.0, 0.0}, next[4];
    for (int k = 0; k < 9; k++) scale = fmax_inline(scale, std::fabs(mat[k]));
    double eps = fmax_inline(reltol, 4e-15) * scale;
    for (int iter = 0; iter < 500; iter++) {
        double T[9], D[9];
        quat_to_mat_mj(quat, V);
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) T[3 * i + j] = V[i] * mat[j] + V[3 + i] * mat[3 + j] + V[6 + i] * mat[6 + j];
        mat3_mul(T, V, D);                                            // D = V' mat V
        value[0] = D[0], value[1] = D[4], value[2] = D[8];
        double a01 = std::fabs(D[1]), a02 = std::fabs(D[2]), a12 = std::fabs(D[5]);
        int rk = 1, ck = 2, rotk = 0;
        if (a01 > a02 && a01 > a12) rk = 0, ck = 1, rotk = 2;
        else if (a02 > a12) rk = 0, ck = 2, rotk = 1;
        double off = D[3 * rk + ck];
        if (std::fabs(off) <= eps) break;
        double tau = (D[4 * ck] - D[4 * rk]) / (off + off), root = std::sqrt(tau * tau + 1);
        double t = tau >= 0 ? 1 / (tau + root) : -1 / (root - tau);  // tan of the rotation
        double half = t / (std::sqrt(t * t + 1) + 1);                   // tan of half of it
        double c = 1 / std::sqrt(half * half + 1), rot[4] = {c, 0.0, 0.0, 0.0};
        rot[rotk + 1] = (rotk == 1 ? half : -half) * c;
        quat_mul_mj(quat, rot, next);
        quat_normalize_mj(next);
        std::copy(next, next + 4, quat);
    }
    for (int j = 0; j < 3; j++) {                                     // bubble sort, decreasing: 0, 1, 0
        int j1 = j % 2;
        if (!(value[j1] + scale * 1e-12 < value[j1 + 1])) continue;
        std::swap(value[j1], value[j1 + 1]);
        double rot[4] = {0.707106781186548, 0.0, 0.0, 0.0};
        rot[(j1 + 2) % 3 + 1] = 0.707106781186548;
        quat_mul_mj(quat, rot, next);
        quat_normalize_mj(next);
        std::copy(next, next + 4, quat);
    }
    quat_to_mat_mj(quat, V);
}

// MuJoCo 4's broad-phase frame (collision.sweep_frame) into V (its axes the columns): the principal axes of the
// covariance of the positions of the geoms not on the world
inline void sweep_frame(const Model &m, const CollisionWork &w, double *V) {
    double centre[3] = {0.0, 0.0, 0.0}, cov[9] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    int64_t n = 0;
    for (int64_t g = 0; g < m.ngeom; g++) {
        if (m.geom_bodyid[g] < 0) continue;
        for (int a = 0; a < 3; a++) centre[a] = centre[a] + w.gpos[size_t(3 * g + a)];
        n++;
    }
    if (n == 0) {
        for (int k = 0; k < 9; k++) V[k] = k % 4 == 0 ? 1.0 : 0.0;
        return;
    }
    double inv = 1.0 / double(n);
    for (int a = 0; a < 3; a++) centre[a] = centre[a] * inv;
    for (int64_t g = 0; g < m.ngeom; g++) {
        if (m.geom_bodyid[g] < 0) continue;
        double d[3];
        for (int a = 0; a < 3; a++) d[a] = w.gpos[size_t(3 * g + a)] - centre[a];
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++) cov[3 * a + b] = cov[3 * a + b] + d[a] * d[b];
    }
    for (int k = 0; k < 9; k++) cov[k] = cov[k] * inv;
    eig3(cov, EIG_RELTOL, V);
}

// MuJoCo 4's broad-phase box of a body (MuJoCo's numbering; collision.mujoco_box) along the columns of V into lo, hi:
// over all its geoms, each the overlap of its bounding sphere's and its box's extents, grown by its margin plus gap
inline void mujoco_box(const Model &m, const CollisionWork &w, const double *V, int64_t body, double *lo, double *hi) {
    for (int j = 0; j < 3; j++) lo[j] = INFINITY, hi[j] = -INFINITY;
    for (int64_t g = 0; g < m.ngeom; g++) {
        if (m.geom_bodyid[g] != body - 1) continue;
        const double *aabb = m.geom_aabb + 6 * g, *R = &w.gmat[size_t(9 * g)], *x = &w.gpos[size_t(3 * g)];
        double pos[3], r = m.geom_rbound[g], grow = m.geom_inflate[g];
        mat3_times(R, aabb, pos);
        for (int a = 0; a < 3; a++) pos[a] = pos[a] + x[a];
        for (int j = 0; j < 3; j++) {
            double f[3] = {V[j], V[3 + j], V[6 + j]};
            double centre = pos[0] * f[0] + pos[1] * f[1] + pos[2] * f[2], at = x[0] * f[0] + x[1] * f[1] + x[2] * f[2];
            double half = 0.0;
            for (int k = 0; k < 3; k++) half = half + std::fabs(aabb[3 + k] * (R[k] * f[0] + R[3 + k] * f[1] + R[6 + k] * f[2]));
            lo[j] = fmin_inline(lo[j], fmax_inline(at - r, centre - half) - grow);
            hi[j] = fmax_inline(hi[j], fmin_inline(at + r, centre + half) + grow);
        }
    }
}

// whether MuJoCo 4's sweep and prune leaves bodies b1 < b2 unpaired (collision.mujoco_boxes_apart): apart along V's
// second or third axis, or along its first compared as floats in a stable sort's order of the boxes' ends
inline bool mujoco_boxes_apart(const Model &m, const CollisionWork &w, const double *V, int64_t b1, int64_t b2) {
    double lo1[3], hi1[3], lo2[3], hi2[3];
    mujoco_box(m, w, V, b1, lo1, hi1), mujoco_box(m, w, V, b2, lo2, hi2);
    for (int j = 1; j < 3; j++)
        if (lo1[j] > hi2[j] || lo2[j] > hi1[j]) return true;
    // each end a key (float value, place in the sort's input: lower 1, upper 1, lower 2, upper 2); an inverted box stays open
    auto key = [](double x, int place) { return std::pair<double, int>(double(float(x)), place); };
    auto s1 = key(lo1[0], 0), e1 = key(hi1[0], 1), s2 = key(lo2[0], 2), e2 = key(hi2[0], 3);
    if (!(s1 < e1)) e1 = {INFINITY, 0};
    if (!(s2 < e2)) e2 = {INFINITY, 0};
    return !((s1 < s2 && s2 < e1) || (s2 < s1 && s1 < e2));
}

// each body's box into w.lo, w.hi (collision.body_boxes; w.boxed: it has one): the union of its colliding geoms'
// bounding spheres grown by their margin and gap
inline void body_boxes(const Model &m, CollisionWork &w) {
    std::fill(w.boxed.begin(), w.boxed.end(), 0);
    for (int64_t g = 0; g < m.ngeom; g++) {
        if (!m.geom_collides[g]) continue;
        size_t b = size_t(m.geom_bodyid[g] + 1);
        double r = m.geom_pad[g], *lo = &w.lo[3 * b], *hi = &w.hi[3 * b];
        const double *x = &w.gpos[size_t(3 * g)];
        if (!w.boxed[b])
            for (int a = 0; a < 3; a++) lo[a] = x[a] - r, hi[a] = x[a] + r;
        else
            for (int a = 0; a < 3; a++) lo[a] = fmin_inline(lo[a], x[a] - r), hi[a] = fmax_inline(hi[a], x[a] + r);
        w.boxed[b] = 1;
    }
}

// the groups to test in this state, in MuJoCo's order, into w.groups, w.hit marking the swept pairs whose boxes overlap
// (collision.sweep_and_prune and tested): each swept body's box (body_boxes) sorted along sweep_axis and checked
// against those still open
inline void broad_phase(const Model &m, CollisionWork &w) {
    body_boxes(m, w);
    int axis = sweep_axis(m, w);
    if (axis != w.order_axis || int64_t(w.order.size()) != m.nsweep)   // else the last state's order: nearly sorted
        w.order.assign(m.sweep_body, m.sweep_body + m.nsweep), w.order_axis = axis;
    auto before = [&](int64_t a, int64_t b) { return w.lo[3 * a + axis] < w.lo[3 * b + axis]; };
    if (w.order.size() > 64) {
        std::stable_sort(w.order.begin(), w.order.end(), before);
    } else {                                                          // a few: insertion, without stable_sort's buffer
        for (size_t i = 1; i < w.order.size(); i++)
            for (size_t j = i; j > 0 && before(w.order[j], w.order[j - 1]); j--) std::swap(w.order[j], w.order[j - 1]);
    }
    std::fill(w.hit.begin(), w.hit.end(), 0);
    w.groups.clear(), w.open.clear();
    const double *lo = w.lo.data(), *hi = w.hi.data();
    const int k1 = (axis + 1) % 3, k2 = (axis + 2) % 3;               // the two axes across, in that order
    for (int64_t b : w.order) {
        size_t kept = 0;
        for (int64_t a : w.open)
            if (hi[3 * a + axis] >= lo[3 * b + axis]) w.open[kept++] = a;
        w.open.resize(kept);
        for (int64_t a : w.open) {
            bool overlap = lo[3 * a + k1] <= hi[3 * b + k1] && lo[3 * b + k1] <= hi[3 * a + k1] &&
                           lo[3 * a + k2] <= hi[3 * b + k2] && lo[3 * b + k2] <= hi[3 * a + k2];
            if (!overlap) continue;
            int64_t g = w.sweep_group.empty() ? group_of(m, std::min(a, b), std::max(a, b))
                      : w.sweep_group[size_t(w.sweep_at[size_t(a)]) * size_t(m.nsweep) + size_t(w.sweep_at[size_t(b)])];
            if (g >= 0) w.hit[g] = 1;
        }
        w.open.push_back(b);
    }
    if (w.shrunk) {                                                   // a shrunk group's: where MuJoCo's boxes overlap
        double frame[9];
        bool framed = false;
        for (int64_t g = 0; g < m.ngroup; g++) {
            if (!w.hit[size_t(g)] || !m.group_shrunk[g]) continue;
            if (!framed) sweep_frame(m, w, frame), framed = true;
            w.hit[size_t(g)] = !mujoco_boxes_apart(m, w, frame, m.group_body[2 * g], m.group_body[2 * g + 1]);
        }
    }
    for (int64_t g = 0; g < m.ngroup; g += 8) {                       // in order: hit, always tested or explicit pairs
        uint64_t hit8, every8;                                        // 8 groups none of which is tested: skipped at once
        if (g + 8 <= m.ngroup) {
            std::memcpy(&hit8, &w.hit[size_t(g)], 8), std::memcpy(&every8, &w.every[size_t(g)], 8);
            if (!(hit8 | every8)) continue;
        }
        for (int64_t e = g; e < std::min(g + 8, m.ngroup); e++)
            if (w.hit[size_t(e)] | w.every[size_t(e)]) w.groups.push_back(e);
    }
}

// the candidates flagged in subset (nullptr: all) that broad_phase would test, in its order, into w.tested, without the
// sweep, where w.proper (collision.tested_directly): those of a group always tested, the explicit pairs, and those of a
// group whose bodies' boxes overlap along every axis, a shrunk group's only where MuJoCo's boxes overlap too
inline void tested_directly(const Model &m, CollisionWork &w, const uint8_t *subset) {
    w.tested.clear();
    double frame[9];
    bool framed = false, boxed = false;
    for (int64_t k = 0; k < m.ncand; k++) {
        if (subset && !subset[k]) continue;
        int64_t g = w.cand_group[size_t(k)];
        if (!(m.group_always[g] || k < m.group_split[g])) {
            if (!boxed) body_boxes(m, w), boxed = true;              // at the first candidate that reads them
            size_t b1 = size_t(m.group_body[2 * g]), b2 = size_t(m.group_body[2 * g + 1]);
            bool apart = false;                                       // boxes apart: not swept together
            for (size_t a = 0; a < 3; a++)
                apart = apart || w.lo[3 * b1 + a] > w.hi[3 * b2 + a] || w.lo[3 * b2 + a] > w.hi[3 * b1 + a];
            if (apart) continue;
            if (m.group_shrunk && m.group_shrunk[g]) {
                if (!framed) sweep_frame(m, w, frame), framed = true;
                if (mujoco_boxes_apart(m, w, frame, int64_t(b1), int64_t(b2))) continue;
            }
        }
        w.tested.push_back(k);
    }
}

// ---------------------------------------------------------------- detection (collision.detect)

// whether candidate k's geoms g1 and g2 are farther apart than their bounding spheres plus bound = margin + gap
// (mj_filterSphere; a plane: the other's centre above it by more than its radius plus bound), with the numbers of the
// candidate alone made once (w.sphere)
inline bool sphere_apart(const CollisionWork &w, int64_t k, int64_t g1, int64_t g2) {
    const CollisionWork::SphereTest &t = w.sphere[size_t(k)];
    const double *p1 = &w.gpos[size_t(3 * g1)], *p2 = &w.gpos[size_t(3 * g2)];
    if (t.spheres) {
        double d[3] = {p1[0] - p2[0], p1[1] - p2[1], p1[2] - p2[2]};
        return dot3(d, d) > t.reach2;
    }
    for (int i = 0; i < 2; i++) {
        if (!t.plane[i]) continue;
        int64_t plane = i ? g2 : g1, other = i ? g1 : g2;
        const double *pp = &w.gpos[size_t(3 * plane)], *po = &w.gpos[size_t(3 * other)], *R = &w.gmat[size_t(9 * plane)];
        double d[3] = {po[0] - pp[0], po[1] - pp[1], po[2] - pp[2]}, normal[3] = {R[2], R[5], R[8]};
        if (dot3(d, normal) > t.above[i]) return true;
    }
    return false;
}

// MuJoCo's midphase box test (mj_collideOBB; collision.boxes_apart): whether the geoms' boxes (geom_aabb, in their
// frames), grown by bound, are apart along one of their six face normals; a box unbounded on every axis is never apart,
// nor is anything along the normals of one unbounded on any axis
inline bool boxes_apart(const Model &m, const CollisionWork &w, int64_t g1, int64_t g2, double bound) {
    const int64_t g[2] = {g1, g2};
    const double *aabb[2] = {m.geom_aabb + 6 * g1, m.geom_aabb + 6 * g2};
    bool all[2], any[2];
    double centre[2][3];
    for (int i = 0; i < 2; i++) {
        const double *h = aabb[i] + 3;
        all[i] = h[0] >= MAXVAL && h[1] >= MAXVAL && h[2] >= MAXVAL, any[i] = h[0] >= MAXVAL || h[1] >= MAXVAL || h[2] >= MAXVAL;
    }
    if (all[0] || all[1]) return false;                               // (a plane's) before the centres
    for (int i = 0; i < 2; i++) {
        mat3_times(&w.gmat[size_t(9 * g[i])], aabb[i], centre[i]);
        for (int a = 0; a < 3; a++) centre[i][a] += w.gpos[size_t(3 * g[i] + a)];
    }
    for (int j = 0; j < 2; j++) {
        if (any[1 - j]) continue;                                     // the other box unbounded: not tested
        const double *Rj = &w.gmat[size_t(9 * g[j])];
        for (int k = 0; k < 3; k++) {
            // |c2 - c1| . n against the boxes' extents along n: sum |half_l (R_l . n)|
            double n[3] = {Rj[k], Rj[3 + k], Rj[6 + k]}, proj[2], radius[2];
            for (int i = 0; i < 2; i++) {
                const double *R = &w.gmat[size_t(9 * g[i])], *h = aabb[i] + 3;
                proj[i] = dot3(centre[i], n), radius[i] = 0.0;
                for (int l = 0; l < 3; l++) radius[i] += std::fabs(h[l] * (R[l] * n[0] + R[3 + l] * n[1] + R[6 + l] * n[2]));
            }
            if (radius[0] + radius[1] + bound < std::fabs(proj[1] - proj[0])) return true;
        }
    }
    return false;
}

// a capsule that holds geom g (collision.bounding_capsule): centre, half axis, radius (a plane: its point, normal, 0)
inline double bounding_capsule(const Model &m, const CollisionWork &w, int64_t g, double *centre, double *half) {
    int64_t kind = m.geom_type[g];
    const double *size = m.geom_size + 3 * g, *R = &w.gmat[size_t(9 * g)];
    for (int a = 0; a < 3; a++) centre[a] = w.gpos[size_t(3 * g + a)], half[a] = 0.0;
    if (kind == GEOM_PLANE) {
        column(R, 2, half);
        return 0.0;
    }
    if (kind == GEOM_CAPSULE || kind == GEOM_CYLINDER) {
        for (int a = 0; a < 3; a++) half[a] = R[3 * a + 2] * size[1];
        return size[0];
    }
    if (kind == GEOM_BOX || kind == GEOM_ELLIPSOID) {
        int k = size[1] > size[0] ? (size[2] > size[1] ? 2 : 1) : (size[2] > size[0] ? 2 : 0);
        double o1 = size[(k + 1) % 3], o2 = size[(k + 2) % 3];
        if (k == 1) o1 = size[0], o2 = size[2];                       // the other two in index order, as the text's
        for (int a = 0; a < 3; a++) half[a] = R[3 * a + k] * size[k];
        return kind == GEOM_BOX ? std::sqrt(o1 * o1 + o2 * o2) : fmax_inline(o1, o2);
    }
    return kind == GEOM_SPHERE ? size[0] : m.geom_rbound[g];
}

// the distance between the segments p1 +- d1 and p2 +- d2 (collision.segment_distance)
inline double segment_distance(const double *p1, const double *d1, const double *p2, const double *d2) {
    double r[3];
    for (int k = 0; k < 3; k++) r[k] = (p1[k] - d1[k]) - (p2[k] - d2[k]);
    double a = 4 * dot3(d1, d1), e = 4 * dot3(d2, d2), b = 4 * dot3(d1, d2), c = 2 * dot3(d1, r), f = 2 * dot3(d2, r);
    auto clamp01 = [](double x) { return fmin_inline(fmax_inline(x, 0.0), 1.0); };
    double s = 0.0, t = 0.0;
    if (a <= MINVAL && e <= MINVAL) {
    } else if (a <= MINVAL) {
        t = clamp01(f / e);
    } else if (e <= MINVAL) {
        s = clamp01(-c / a);
    } else {
        double denom = a * e - b * b;
        s = denom > MINVAL ? clamp01((b * f - c * e) / denom) : 0.0;
        t = (b * s + f) / e;
        if (t < 0.0) t = 0.0, s = clamp01(-c / a);
        else if (t > 1.0) t = 1.0, s = clamp01((b - c) / a);
    }
    double gap[3];
    for (int k = 0; k < 3; k++) gap[k] = (p1[k] - d1[k] + 2 * d1[k] * s) - (p2[k] - d2[k] + 2 * d2[k] * t);
    return std::sqrt(dot3(gap, gap));
}

// whether geoms g1 and g2 may be within bound of each other (collision.may_touch)
inline bool may_touch(const Model &m, const CollisionWork &w, int64_t g1, int64_t g2, double bound) {
    double c1[3], h1[3], c2[3], h2[3];
    double r1 = bounding_capsule(m, w, g1, c1, h1), r2 = bounding_capsule(m, w, g2, c2, h2);
    for (int k = 0; k < 2; k++) {
        int64_t g = k ? g2 : g1;
        if (m.geom_type[g] != GEOM_PLANE) continue;
        const double *p = k ? c2 : c1, *n = k ? h2 : h1, *centre = k ? c1 : c2, *half = k ? h1 : h2;
        double r = k ? r1 : r2, up[3], down[3];
        for (int a = 0; a < 3; a++) up[a] = centre[a] + half[a] - p[a], down[a] = centre[a] - half[a] - p[a];
        return fmin_inline(dot3(up, n), dot3(down, n)) - r <= bound;
    }
    return segment_distance(c1, h1, c2, h2) - r1 - r2 <= bound;
}

// candidate k's contacts past collide's filters appended to w.f, w.i (its narrow phase; out of detect's loops)
#if defined(__GNUC__)
__attribute__((noinline))
#endif
inline void collide_pair(const Model &m, CollisionWork &w, int64_t k, int64_t g1, int64_t g2, const double *param) {
    double margin = param[0], gap = param[1];
    Narrow fn = w.narrow[size_t(k)];
    if (!fn) return;                                                  // not a candidate collision.candidates makes
    w.found.clear();
    Pair pair{&w.gpos[size_t(3 * g1)], &w.gmat[size_t(9 * g1)], m.geom_size + 3 * g1, &w.gpos[size_t(3 * g2)],
              &w.gmat[size_t(9 * g2)], m.geom_size + 3 * g2, margin + gap};
    pair.type1 = m.geom_type[g1], pair.type2 = m.geom_type[g2];
    pair.ccd_tolerance = m.opt_ccd_tolerance, pair.ccd_iterations = m.opt_ccd_iterations, pair.multiccd = m.opt_multiccd != 0;
    pair.room = &w.ccd_room;
    if (m.geom_type[g1] == GEOM_MESH) {
        if (m.geom_dataid[g1] < 0) return;                            // not a candidate collision.candidates makes
        w.mesh1 = convex_mesh(m, m.geom_dataid[g1]), pair.mesh1 = &w.mesh1;
    }
    if (m.geom_type[g2] == GEOM_MESH) {
        if (m.geom_dataid[g2] < 0) return;                            // not a candidate collision.candidates makes
        w.mesh2 = convex_mesh(m, m.geom_dataid[g2]), pair.mesh2 = &w.mesh2;
    }
    if (m.geom_type[g1] == GEOM_HFIELD) {
        if (m.geom_dataid[g1] < 0) return;                            // not a candidate collision.candidates makes
        w.hfield = hfield_of(m, m.geom_dataid[g1]), pair.hfield1 = &w.hfield;
    }
    fn(pair, w.found);
    size_t kept = 0;                                                  // the rows of the pair's contacts made at once
    for (const PreContact &c : w.found) kept += !(c.dist >= margin);   // (C++: one resize per pair, not per contact)
    if (!kept) return;
    size_t at = w.f.size();
    w.f.resize(at + kept * CONTACT_FLOATS);
    double *f = w.f.data() + at;
    for (const PreContact &c : w.found) {
        if (c.dist >= margin) continue;                               // MuJoCo's exclude: in the gap
        for (int a = 0; a < 3; a++) f[a] = c.pos[a];
        make_frame(c.normal, c.tangent, f + 3);
        f[12] = c.dist, f[13] = margin;
        for (int a = 0; a < 14; a++) f[14 + a] = param[2 + a];
        w.i.push_back(m.cand_dim[k]), w.i.push_back(m.geom_bodyid[g1]), w.i.push_back(m.geom_bodyid[g2]);
        w.cand.push_back(k);
        f += CONTACT_FLOATS;
    }
}

// candidate k's contacts (its bounding spheres apart: none) appended to w.f, w.i: the filters here (inline in detect's
// loops, most candidates stop at them), the rest in collide_pair
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
inline void collide(const Model &m, CollisionWork &w, int64_t k) {
    int64_t g1 = m.cand_geom[2 * k], g2 = m.cand_geom[2 * k + 1];
    if (sphere_apart(w, k, g1, g2) || (m.cand_midphase[k] && boxes_apart(m, w, g1, g2, w.sphere[size_t(k)].bound))) return;
    collide_pair(m, w, k, g1, g2, m.cand_float + CAND_FLOATS * m.cand_param[k]);   // margin, gap, friction (5), ...
}

// the contacts at q (collision.detect) in w.f, w.i (CONTACT_FLOATS, CONTACT_INTS each) as a Contacts; w.near_missing:
// the first left-out pair that may touch (collision.may_touch; -1: none; not looked for unless check_missing). subset
// (ncand + nmissing flags: the candidates, then the left-out pairs; nullptr: all): the pairs collided and looked at, the
// whole detect's contacts of those pairs in its order (the broad phase is the whole one's). dof >= 0 (detect's along):
// q is the state w's base_poses hold moved along dof, the bodies it does not move posed as there (moved_geom_poses),
// the subset's candidates tested without the sweep (tested_directly) where w.proper; posed: the bodies' frames at q
// already made (a lane's copy of the lanes' body_poses, Data::body_posed), else body_poses here
inline Contacts detect(const Model &m, CollisionWork &w, const double *q, bool check_missing = true,
                       const uint8_t *subset = nullptr, int64_t dof = -1, const Data<double> *posed = nullptr) {
    w.f.clear(), w.i.clear(), w.cand.clear(), w.near_missing = -1;
    Contacts con;
    if (!collides(m)) return con;
    if (dof < 0) geom_poses(m, w, q, posed);
    else moved_geom_poses(m, w, q, dof);
    for (int64_t k = 0; check_missing && k < m.nmissing && w.near_missing < 0; k++)
        if ((!subset || subset[m.ncand + k]) && may_touch(m, w, m.missing_geom[2 * k], m.missing_geom[2 * k + 1], m.missing_bound[k]))
            w.near_missing = k;
    if (dof >= 0 && w.proper) {
        tested_directly(m, w, subset);
        for (int64_t k : w.tested) collide(m, w, k);
    } else {
        broad_phase(m, w);
        for (int64_t group : w.groups) {                              // the explicit pairs; the rest when near or always
            int64_t end = m.group_always[group] || w.hit[group] ? m.group_end[group] : m.group_split[group];
            for (int64_t k = m.group_start[group]; k < end; k++)
                if (!subset || subset[k]) collide(m, w, k);
        }
    }
    con.n = int64_t(w.i.size()) / CONTACT_INTS;
    con.f = w.f.data(), con.i = w.i.data();
    return con;
}

// every left-out pair (in subset, as detect's) that may touch at the state detect(m, w, q) just posed (its near_missing
// the first), appended to out
inline void near_missing_pairs(const Model &m, const CollisionWork &w, std::vector<int64_t> &out,
                               const uint8_t *subset = nullptr) {
    for (int64_t k = w.near_missing; k >= 0 && k < m.nmissing; k++)
        if ((!subset || subset[m.ncand + k]) && may_touch(m, w, m.missing_geom[2 * k], m.missing_geom[2 * k + 1], m.missing_bound[k]))
            out.push_back(k);
}

}  // namespace
}  // namespace physai
