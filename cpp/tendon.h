// Tendons (src/physai/engine/tendon.py: MuJoCo's mj_tendon in engine_core_smooth.c, mju_wrap in engine_util_misc.c,
// mj_tendonArmature), function by function with the NumPy text's names and one-line block comments:
//
//     tendons(m, d, q)                      ten_length (ntendon) and ten_J (ntendon, nv) of a state into d  (mj_tendon)
//     wrap(x0, x1, xpos, xmat, radius, kind, side, w0, w1)   a segment's path around a sphere or cylinder   (mju_wrap)
//     armature_matrix(m, J, M)              M += sum_t armature_t J_t^T J_t on M's pattern          (mj_tendonArmature)
//
// A fixed tendon's length and Jacobian are linear in q: any number type (lanes too). A spatial tendon's path branches
// per state (which geoms it wraps): one state at a time (double); lanes leave a model with one to the scalar kernels
// (forward.h's evaluate: ONE_BY_ONE). Spatial tendons read the MuJoCo-order body frames (smooth.h's body_poses) and
// the geoms of the compiled model's constraint part, which physai.engine.native.compiled adds for them at once.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "data.h"
#include "model.h"
#include "smooth.h"
#include "spatial.h"
#include "support.h"

namespace physai {
namespace {

constexpr double WRAP_PI = 3.14159265358979323846;

// r = R^T v (3x3, 3: mju_mulMatTVec3; primitives.mat_t_times_mj)
inline void mat_t_times_mj(const double *R, const double *v, double *r) {
    for (int i = 0; i < 3; i++) r[i] = R[i] * v[0] + R[3 + i] * v[1] + R[6 + i] * v[2];
}

inline double inner3(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
inline double length3(const double *v) { return std::sqrt(inner3(v, v)); }
inline double length2(const double *v) { return std::sqrt(v[0] * v[0] + v[1] * v[1]); }

// site s's world position at the bodies' MuJoCo-order frames (tendon.site_positions): p_body + R_body site_pos
inline void site_position(const Model &m, const Data<double> &d, int64_t s, double *p) {
    int64_t b = m.site_bodyid[s];
    const double *local = m.site_pos + 3 * s;
    if (b < 0) {
        for (int a = 0; a < 3; a++) p[a] = local[a];
        return;
    }
    mat3_times(&d.body_xmat[size_t(9 * b)], local, p);
    for (int a = 0; a < 3; a++) p[a] = p[a] + d.body_xpos[size_t(3 * b + a)];
}

inline double spatial(const Model &m, Data<double> &d, int64_t t, double *J);

// ten_length (ntendon) [m | rad] and ten_J (ntendon, nv) of the state q into d, from a Data with com_pos done
// (tendon.tendons, MuJoCo's mj_tendon); ten_velocity is ten_J qd
template <class T> void tendons(const Model &m, Data<T> &d, const T *q) {
    const int64_t nv = m.nv;
    T *length = d.ten_length.data(), *J = d.ten_J.data();
    for (size_t k = 0; k < d.ten_J.size(); k++) J[k] = splat<T>(0.0);
    if constexpr (std::is_same_v<T, double>)
        if (m.tendon_spatial) body_poses(m, q, d.body_xpos.data(), d.body_xquat.data(), d.body_xmat.data());
    for (int64_t t = 0; t < m.ntendon; t++) {
        int64_t adr = m.tendon_adr[t], num = m.tendon_num[t];
        length[t] = splat<T>(0.0);
        if (num && m.wrap_type[adr] == WRAP_JOINT) {
            // fixed: L = sum coef q, J = coef at the joints' dofs
            for (int64_t w = adr; w < adr + num; w++) {
                length[t] = length[t] + m.wrap_prm[w] * q[m.wrap_qposadr[w]];
                J[t * nv + m.wrap_dofadr[w]] = J[t * nv + m.wrap_dofadr[w]] + m.wrap_prm[w];
            }
        } else {
            if constexpr (std::is_same_v<T, double>) length[t] = spatial(m, d, t, J + t * nv);
        }
    }
}

inline double distance(const double *a, const double *b);
inline void segment_jacobian(const Model &m, Data<double> &d, int64_t b0, int64_t b1, const double *p0, const double *p1,
                             double divisor, double *J);
inline double wrap(const double *x0, const double *x1, const double *xpos, const double *xmat, double radius, int64_t kind,
                   const double *side, double *w0, double *w1);

// the length of spatial tendon t, its Jacobian added into J (nv): the path site by site, each wrapping geom between two
// sites, each pulley's divisor applying to what follows it (tendon._spatial)
inline double spatial(const Model &m, Data<double> &d, int64_t t, double *J) {
    const int64_t adr = m.tendon_adr[t], num = m.tendon_num[t];
    const int64_t *kinds = m.wrap_type + adr, *ids = m.wrap_objid + adr;
    const double *prm = m.wrap_prm + adr;
    double length = 0.0, divisor = 1.0;
    int64_t j = 0;
    while (j < num - 1) {
        if (kinds[j] == WRAP_PULLEY || kinds[j + 1] == WRAP_PULLEY) {
            if (kinds[j] == WRAP_PULLEY) divisor = prm[j];
            j++;
            continue;
        }
        const int64_t s0 = ids[j];
        double points[4][3];
        int64_t bodies[4], n = 1, s1;
        site_position(m, d, s0, points[0]);
        bodies[0] = m.site_bodyid[s0];
        double wlen = -1.0;
        const bool geom = kinds[j + 1] == WRAP_SPHERE || kinds[j + 1] == WRAP_CYLINDER;
        if (geom) {
            const int64_t g = ids[j + 1], side = std::lround(prm[j + 1]);
            s1 = ids[j + 2];
            double x1[3], at[3], gpos[3], gmat[9], w0[3], w1[3];
            site_position(m, d, s1, x1);
            if (side >= 0) site_position(m, d, side, at);
            geom_pose(m, d.body_xpos.data(), d.body_xquat.data(), d.body_xmat.data(), g, gpos, gmat);
            wlen = wrap(points[0], x1, gpos, gmat, m.geom_size[3 * g], kinds[j + 1], side >= 0 ? at : nullptr, w0, w1);
            if (wlen >= 0) {
                for (int a = 0; a < 3; a++) points[1][a] = w0[a], points[2][a] = w1[a];
                bodies[1] = bodies[2] = m.geom_bodyid[g];
                n = 3;
            }
        } else {
            s1 = ids[j + 1];
        }
        site_position(m, d, s1, points[n]);
        bodies[n++] = m.site_bodyid[s1];
        // L += (|p1 - p0| + wrap + |p3 - p2|) / divisor, or |p1 - p0| / divisor without a wrap
        if (wlen < 0)
            length += distance(points[0], points[1]) / divisor;
        else
            length += (distance(points[0], points[1]) + wlen + distance(points[2], points[3])) / divisor;
        // J += u^T (J_p1 - J_p0) / divisor over segments whose ends move with different bodies
        for (int64_t k = 0; k < n - 1; k++)
            if (bodies[k] != bodies[k + 1])
                segment_jacobian(m, d, bodies[k], bodies[k + 1], points[k], points[k + 1], divisor, J);
        j += geom ? 2 : 1;
    }
    return length;
}

// |b - a| (mju_dist3)
inline double distance(const double *a, const double *b) {
    const double dif[3] = {a[0] - b[0], a[1] - b[1], a[2] - b[2]};
    return std::sqrt(dif[0] * dif[0] + dif[1] * dif[1] + dif[2] * dif[2]);
}

// J (nv) += u^T (J_p1 - J_p0) / divisor: the rate of |p1 - p0| for p0 moving with body b0 and p1 with b1,
// u = (p1 - p0) / |p1 - p0| (tendon._segment_jacobian); the two point Jacobians in d.ten_jac
inline void segment_jacobian(const Model &m, Data<double> &d, int64_t b0, int64_t b1, const double *p0, const double *p1,
                             double divisor, double *J) {
    const int64_t nv = m.nv;
    const double norm = distance(p0, p1);
    double u[3], r[3];
    for (int a = 0; a < 3; a++) u[a] = norm >= MINVAL ? (p1[a] - p0[a]) / norm : 0.0;
    double *J0 = d.ten_jac.data(), *J1 = J0 + 6 * nv;
    std::fill(J0, J0 + 12 * nv, 0.0);
    point_jacobians(m, d, world_offset(m, d, b0, p0, r), r, J0);
    point_jacobians(m, d, world_offset(m, d, b1, p1, r), r, J1);
    for (int64_t i = 0; i < nv; i++)
        J[i] += (u[0] * (J1[i] - J0[i]) + u[1] * (J1[nv + i] - J0[nv + i]) + u[2] * (J1[2 * nv + i] - J0[2 * nv + i])) / divisor;
}

// ---------------------------------------------------------------- wrapping (mju_wrap)

inline void plane(const double *p0, const double *p1, double *axis0, double *axis1);
inline double wrap_circle(const double *end, const double *side, double radius, double *pnt);
inline double wrap_inside(const double *end, double radius, double *pnt);

// the length of the wrapped arc [m] or -1 without a wrap, the two wrap points w0, w1 (3 each, world) of the segment
// x0 -> x1 (world points [m]) around a sphere or cylinder (kind WRAP_SPHERE, WRAP_CYLINDER) of the radius at xpos, xmat,
// with an optional side site (world point, or null): MuJoCo's mju_wrap (tendon.wrap). The wrap is solved in a plane:
// the one through the sphere's centre and both points, or the cylinder's cross-section (its length along the axis added
// after)
inline double wrap(const double *x0, const double *x1, const double *xpos, const double *xmat, double radius, int64_t kind,
                   const double *side, double *w0, double *w1) {
    double d0[3], d1[3], p0[3], p1[3];
    for (int a = 0; a < 3; a++) d0[a] = x0[a] - xpos[a], d1[a] = x1[a] - xpos[a];
    mat_t_times_mj(xmat, d0, p0), mat_t_times_mj(xmat, d1, p1);
    if (length3(p0) < MINVAL || length3(p1) < MINVAL) return -1.0;
    double axis0[3] = {1.0, 0.0, 0.0}, axis1[3] = {0.0, 1.0, 0.0};
    if (kind == WRAP_SPHERE) plane(p0, p1, axis0, axis1);
    // the points in the plane's coordinates
    const double end[4] = {inner3(p0, axis0), inner3(p0, axis1), inner3(p1, axis0), inner3(p1, axis1)};
    double s[3] = {0.0, 0.0, 0.0}, sd[2] = {0.0, 0.0}, pnt[4];
    if (side) {
        double ds[3];
        for (int a = 0; a < 3; a++) ds[a] = side[a] - xpos[a];
        mat_t_times_mj(xmat, ds, s);
        sd[0] = inner3(s, axis0), sd[1] = inner3(s, axis1);
        const double n = length2(sd);
        if (n >= MINVAL) sd[0] = sd[0] / n * radius, sd[1] = sd[1] / n * radius;
    }
    double wlen = side && length3(s) < radius ? wrap_inside(end, radius, pnt) : wrap_circle(end, side ? sd : nullptr, radius, pnt);
    if (wlen < 0) return -1.0;
    double res0[3], res1[3];
    for (int a = 0; a < 3; a++) res0[a] = axis0[a] * pnt[0] + axis1[a] * pnt[1], res1[a] = axis0[a] * pnt[2] + axis1[a] * pnt[3];
    if (kind == WRAP_CYLINDER) {
        // heights along the axis in proportion to the path length: z = z0 + (z1 - z0) L_before / L_total
        const double L0 = std::sqrt((p0[0] - res0[0]) * (p0[0] - res0[0]) + (p0[1] - res0[1]) * (p0[1] - res0[1]));
        const double L1 = std::sqrt((p1[0] - res1[0]) * (p1[0] - res1[0]) + (p1[1] - res1[1]) * (p1[1] - res1[1]));
        res0[2] = p0[2] + (p1[2] - p0[2]) * L0 / (L0 + wlen + L1);
        res1[2] = p0[2] + (p1[2] - p0[2]) * (L0 + wlen) / (L0 + wlen + L1);
        const double height = std::fabs(res1[2] - res0[2]);
        wlen = std::sqrt(wlen * wlen + height * height);
    }
    mat3_times(xmat, res0, w0), mat3_times(xmat, res1, w1);
    for (int a = 0; a < 3; a++) w0[a] = w0[a] + xpos[a], w1[a] = w1[a] + xpos[a];
    return wlen;
}

// two unit axes of the plane through the sphere's centre, p0 and p1: p0's direction and the one normal to it in the
// plane (a plane through p0 and a coordinate axis when p0 and p1 are parallel) (tendon._plane)
inline void plane(const double *p0, const double *p1, double *axis0, double *axis1) {
    const double n0 = length3(p0);
    for (int a = 0; a < 3; a++) axis0[a] = p0[a] / n0;
    double normal[3];
    cross(p0, p1, normal);
    if (length3(normal) < MINVAL) {
        const double x = std::fabs(axis0[0]), y = std::fabs(axis0[1]), z = std::fabs(axis0[2]);
        const int i = y > x && y > z ? 1 : z > x && z > y ? 2 : 0;
        double other[3] = {1.0, 1.0, 1.0};
        other[i] = 0.0;
        cross(axis0, other, normal);
    }
    const double nn = length3(normal);
    for (int a = 0; a < 3; a++) normal[a] = normal[a] / nn;
    cross(normal, axis0, axis1);
    const double n1 = length3(axis1);
    for (int a = 0; a < 3; a++) axis1[a] = axis1[a] / n1;
}

inline double cross2(const double *a, const double *b) { return a[0] * b[1] - a[1] * b[0]; }

// the signed angle from a to b (2D) in (-pi, pi] [rad] (tendon._angle)
inline double angle(const double *a, const double *b) { return std::atan2(cross2(a, b), a[0] * b[0] + a[1] * b[1]); }

// the point where the line from p (2D, outside the circle) touches the circle, on the side `sign` (+1: the tangent
// point lies counter-clockwise of p, seen from the centre) (tendon._tangent)
inline void tangent(const double *p, double radius, double sign, double *out) {
    const double sqlen = p[0] * p[0] + p[1] * p[1], root = std::sqrt(sqlen - radius * radius);
    out[0] = (p[0] * radius * radius - sign * radius * p[1] * root) / sqlen;
    out[1] = (p[1] * radius * radius + sign * radius * p[0] * root) / sqlen;
}

// the arc length or -1, the two tangent points pnt (4) of the 2D segment end[0:2] -> end[2:4] around the circle of the
// radius at the origin (tendon._wrap_circle). Without a side point: the shorter way round, when the segment passes
// through the circle. With one (on the circle): the way the polyline end0 -> side -> end1 winds around the centre, no
// wrap when the straight segment already winds so and misses the circle
inline double wrap_circle(const double *end, const double *side, double radius, double *pnt) {
    const double *a = end, *b = end + 2, sq = radius * radius;
    if (a[0] * a[0] + a[1] * a[1] < sq || b[0] * b[0] + b[1] * b[1] < sq || radius < MINVAL) return -1.0;
    const double dif[2] = {b[0] - a[0], b[1] - a[1]}, dd = dif[0] * dif[0] + dif[1] * dif[1];
    if (dd < MINVAL) return -1.0;
    // the point of the segment nearest the centre: a + t dif, t in [0, 1]
    const double t = std::min(1.0, std::max(0.0, -(dif[0] * a[0] + dif[1] * a[1]) / dd));
    const double near[2] = {a[0] + t * dif[0], a[1] + t * dif[1]};
    const bool crosses = near[0] * near[0] + near[1] * near[1] <= sq;
    const double straight = angle(a, b);
    double sign, turn;
    if (!side) {
        if (!crosses) return -1.0;
        sign = straight >= 0 ? 1.0 : -1.0;
        turn = std::fabs(straight);
    } else {
        turn = angle(a, side) + angle(side, b);                        // the winding angle of end0 -> side -> end1
        sign = turn >= 0 ? 1.0 : -1.0;
        turn = std::fabs(turn);
        if (!crosses && std::fabs(straight - sign * turn) < WRAP_PI) return -1.0;
    }
    // tangent points: from a turning `sign`, into b turning `sign`; the arc between them
    tangent(a, radius, sign, pnt), tangent(b, radius, -sign, pnt + 2);
    double arc = sign * angle(pnt, pnt + 2);
    if (arc < 0) arc += 2 * WRAP_PI;
    if (side) {
        const double alpha0 = std::acos(std::min(1.0, radius / length2(a))), alpha1 = std::acos(std::min(1.0, radius / length2(b)));
        arc = std::max(0.0, turn - alpha0 - alpha1);
    }
    return radius * arc;
}

// 0 when wrapped, else -1; the point (twice, pnt (4)) on the circle the path touches, of the 2D segment end[0:2] ->
// end[2:4] forced through the inside of the circle (a side site inside the geom): the point where the path's angles of
// incidence balance, asin(A z) + asin(B z) - 2 asin(z) + G = 0 solved by Newton's method (tendon._wrap_inside,
// MuJoCo's wrap_inside)
inline double wrap_inside(const double *end, double radius, double *pnt) {
    const double len0 = length2(end), len1 = length2(end + 2);
    const double dif[2] = {end[2] - end[0], end[3] - end[1]}, dd = dif[0] * dif[0] + dif[1] * dif[1];
    if (len0 <= radius || len1 <= radius || radius < MINVAL || len0 < MINVAL || len1 < MINVAL) return -1.0;
    if (dd > MINVAL) {
        const double a = -(dif[0] * end[0] + dif[1] * end[1]) / dd, at[2] = {end[0] + a * dif[0], end[1] + a * dif[1]};
        if (0 < a && a < 1 && length2(at) <= radius) return -1.0;
    }
    double mid[2] = {0.5 * (end[0] + end[2]), 0.5 * (end[1] + end[3])};
    const double nm = length2(mid);
    mid[0] = mid[0] / nm * radius, mid[1] = mid[1] / nm * radius;
    auto fallback = [&]() {
        pnt[0] = pnt[2] = mid[0], pnt[1] = pnt[3] = mid[1];
        return 0.0;
    };
    const double A = radius / len0, B = radius / len1;
    const double cosG = (len0 * len0 + len1 * len1 - dd) / (2 * len0 * len1);
    if (cosG < -1 + MINVAL) return -1.0;
    if (cosG > 1 - MINVAL) return fallback();
    const double G = std::acos(cosG);
    double z = 1 - 1e-7;
    double f = std::asin(A * z) + std::asin(B * z) - 2 * std::asin(z) + G;
    if (f > 0) return fallback();
    int iterations = 0;
    while (iterations < 20 && std::fabs(f) > 1e-6) {                   // Newton's method from z just below 1, moving left
        const double df = A / std::max(MINVAL, std::sqrt(1 - z * z * A * A)) + B / std::max(MINVAL, std::sqrt(1 - z * z * B * B))
                          - 2 / std::max(MINVAL, std::sqrt(1 - z * z));
        if (df > -MINVAL) return fallback();
        const double z1 = z - f / df;
        if (z1 > z) return fallback();
        z = z1;
        f = std::asin(A * z) + std::asin(B * z) - 2 * std::asin(z) + G;
        if (f > 1e-6) return fallback();
        iterations++;
    }
    if (iterations >= 20) return fallback();
    // the touching point: vec turned by ang, vec the endpoint the other lies counter-clockwise of
    double vec[2], ang;
    if (cross2(end, end + 2) > 0) {
        vec[0] = end[0] / len0, vec[1] = end[1] / len0, ang = std::asin(z) - std::asin(A * z);
    } else {
        vec[0] = end[2] / len1, vec[1] = end[3] / len1, ang = std::asin(z) - std::asin(B * z);
    }
    pnt[0] = pnt[2] = radius * (std::cos(ang) * vec[0] - std::sin(ang) * vec[1]);
    pnt[1] = pnt[3] = radius * (std::sin(ang) * vec[0] + std::cos(ang) * vec[1]);
    return 0.0;
}

// ---------------------------------------------------------------- inertia

// whether a tendon has armature (the lanes' smooth stages of the constraint operations leave it out: cpp/inverse.h)
inline bool has_armature(const Model &m) {
    for (int64_t t = 0; t < m.ntendon; t++)
        if (m.tendon_armature[t] != 0.0) return true;
    return false;
}

// M (nv, nv) += sum over tendons of armature J^T J (J: ten_J (ntendon, nv)), kept to M's sparsity pattern (dof pairs
// where one is an ancestor of the other), as MuJoCo adds tendon armature into its sparse M (tendon.armature_matrix,
// mj_tendonArmature)
template <class T> void armature_matrix(const Model &m, const T *J, T *M) {
    const int64_t nv = m.nv;
    if (!has_armature(m)) return;
    for (int64_t i = 0; i < nv; i++)
        for (int64_t j = 0; j < nv; j++) {
            if (!tree_pair(m, i, j)) continue;
            T s = splat<T>(0.0);
            for (int64_t t = 0; t < m.ntendon; t++) s = s + (J[t * nv + i] * m.tendon_armature[t]) * J[t * nv + j];
            M[i * nv + j] = M[i * nv + j] + s;
        }
}

// armature_matrix with M on the tree's pattern (Ms, tree_nnz: the steppers' layout), entry (i, j) of row i's pattern
// as armature_matrix's (i, j)
template <class T> void armature_tree(const Model &m, const T *J, T *Ms) {
    const int64_t nv = m.nv;
    if (!has_armature(m)) return;
    for (int64_t i = 0; i < nv; i++)
        for (int64_t a = m.M_rowadr[i]; a < m.M_rowadr[i] + m.M_rownnz[i]; a++) {
            int64_t j = m.M_colind[a];
            T s = splat<T>(0.0);
            for (int64_t t = 0; t < m.ntendon; t++) s = s + (J[t * nv + i] * m.tendon_armature[t]) * J[t * nv + j];
            Ms[a] = Ms[a] + s;
        }
}

}  // namespace
}  // namespace physai
