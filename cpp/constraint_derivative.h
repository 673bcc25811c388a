// The constrained step derivatives' pieces (src/physai/derivatives.py, issue U), one to one as the NumPy text, each one
// compiled call per state where NumPy makes many small ones:
//
//     plane_contact_rows   d J/dq and d dist/dq of the rows of a plane's contacts against spheres, capsules and boxes
//                          (derivatives.plane_contact_rows, from _Constraints._plane_contacts)
//     segment_contact_rows d J/dq and d dist/dq of the rows of a contact between two spheres or capsules at their
//                          segments' nearest points (derivatives.segment_contact_rows, from _Constraints._segment_contact)
//     segment_pair         those nearest points' rates along each dof and how far they are from an end
//                          (derivatives.segment_pair, from _Constraints._segment_pair)
//     anchor_rows          d J/dq of a connect's or a weld's rows (derivatives.anchor_rows, from
//                          _Constraints._anchor_rows)
//     anchor_bias_derivative  d(Jdot qd)/dq of those rows (derivatives.anchor_bias_derivative, from
//                          _Constraints._anchor_rows)
//     proven_still         the dofs along which no contact can appear or leave within 2 ROW_STEP of q
//                          (_Constraints._proven_still; with still_rooms (_rooms), separation (_separation),
//                          touching_rooms (_touching_rooms), still_segment_distance (derivatives._segment_distance))
//     one_call_terms       _Constraints.terms and compiled_terms of a solve whose every row is analytic (planes on
//                          the world against spheres, capsules and boxes, sphere and capsule pairs, hinge and slide
//                          limits, joint equalities, dofs' friction loss) and no dof moves one, for the constrained step in one compiled
//                          call (derivatives._one_call; with segment_terms)
//
// Plain arrays in and out (no Model): the caller gathers the bodies' Jacobians and the contacts (proven_still: the
// per-model tables of derivatives._still_tables, StillTables, and the poses and contacts at q, StillState). Included
// by cpp/bindings.cpp only (the module functions _native.plane_contact_rows, ...; the operation proven_still).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "constraint.h"
#include "data.h"
#include "primitives.h"
#include "spatial.h"

namespace physai {
namespace {

// a pyramidal contact's rows' count: the normal alone (dim 1), else 2 (dim - 1) edges (derivatives._pyramid_edges)
inline int pyramid_rows(int64_t dim) { return dim == 1 ? 1 : 2 * int(dim - 1); }

// derivatives._pyramid_edges of a frame of rows of `width` entries each (frame[k] at frame + k width): the normal
// frame[0] (dim 1), else frame[0] + sign mu_k frame[k], k = 1 .. dim - 1, sign +1 then -1; out (rows, width). A null
// frame[0] stands for zeros (the edges' derivative, linear in the frame's)
inline void pyramid_edges(const double *first, const double *frame, const double *mu, int64_t dim, int64_t width,
                          double *out) {
    if (dim == 1) {
        for (int64_t x = 0; x < width; x++) out[x] = first ? first[x] : 0.0;
        return;
    }
    int64_t row = 0;
    for (int64_t k = 1; k < dim; k++)
        for (double sign : {1.0, -1.0}) {
            const double c = sign * mu[k - 1];
            for (int64_t x = 0; x < width; x++)
                out[row * width + x] = (first ? first[x] : 0.0) + c * frame[k * width + x];
            row++;
        }
}

// the columns of a body's Jacobian J6 (6, nv) that are not zero (the dofs of its chain) into cols; their count. rows
// 12: two bodies' Jacobians (2, 6, nv), the union of their chains
inline int jacobian_support(const double *J6, int64_t nv, int *cols, int rows = 6) {
    int n = 0;
    for (int64_t k = 0; k < nv; k++) {
        bool on = false;
        for (int r = 0; r < rows && !on; r++) on = J6[r * nv + k] != 0;
        if (on) cols[n++] = int(k);
    }
    return n;
}

// derivatives._rows_on_point for one row e (3,) on a body's point Jacobian P (3, nv), its angular one W (3, nv), the
// point moving by dp (3, nv): out (nv, nv), [j, k] = (e x W_j) . dp_k + turns[j, k] (P_j . (e x W_k) - P_k . (e x W_j));
// only over the ns columns S (jacobian_support: P, W and dp are zero off them, so out is zero off S x S; those entries
// are not written); EW, turned: scratch (3 nv, nv nv)
inline void rows_on_point(const double *e, const double *P, const double *W, const double *dp, const double *turns,
                          int64_t nv, const int *S, int ns, double *EW, double *turned, double *out) {
    for (int a = 0; a < ns; a++) {                                     // e x W_j (= -(W_j x e))
        const int64_t j = S[a];
        const double w[3] = {W[j], W[nv + j], W[2 * nv + j]};
        double ew[3];
        cross(e, w, ew);
        EW[j] = ew[0], EW[nv + j] = ew[1], EW[2 * nv + j] = ew[2];
    }
    for (int a = 0; a < ns; a++) {                                     // P_j . (e x W_k)
        const int64_t j = S[a];
        const double p0 = P[j], p1 = P[nv + j], p2 = P[2 * nv + j];    // held: the stores may alias P
        for (int b = 0; b < ns; b++) {
            const int64_t k = S[b];
            turned[j * nv + k] = p0 * EW[k] + p1 * EW[nv + k] + p2 * EW[2 * nv + k];
        }
    }
    for (int a = 0; a < ns; a++) {
        const int64_t j = S[a];
        const double e0 = EW[j], e1 = EW[nv + j], e2 = EW[2 * nv + j];
        for (int b = 0; b < ns; b++) {
            const int64_t k = S[b];
            out[j * nv + k] = e0 * dp[k] + e1 * dp[nv + k] + e2 * dp[2 * nv + k]
                              + turns[j * nv + k] * (turned[j * nv + k] - turned[k * nv + j]);
        }
    }
}

// derivatives.plane_contact_rows, one to one: nc contacts of a plane (geom 1, on no moving body) against a body's
// sphere, capsule or box; J6 (nc, 6, nv) the body's Jacobian at its origin (nc, 3), the contact's frame (nc, 3, 3), pos
// (nc, 3), dist (nc), friction (nc, nf), radius (nc: 0 for a box), dim (nc: 1 or 3), axis (nc, 3: a capsule's, zero
// otherwise), turns (nv, nv) (Model.dof_turns, [j, k], 0 or 1). Each contact's rows in turn: dJ (m, nv, nv),
// ddist (m, nv); dJ's entries off each contact's body's chain (jacobian_support) are zero.
//   x = p + n (radius + dist / 2),  P = Jp(o) + W x (p - o),  X = P + W x (x - p)
//   d dist = n . X,  dp = X - n d dist / 2,  dJ[row] = rows_on_point(e, P, W, dp)
//   a capsule (dim 3): da = W x a, v = da - n (n . da), dt1 = (v - t1 (t1 . v)) / |a - n (n . a)|, dt2 = n x dt1,
//   dJ[row] += P^T dE (dE: the edges of (0, dt1, dt2))
inline void plane_contact_rows(int64_t nc, int64_t nv, const double *J6, const double *origin, const double *frame,
                               const double *pos, const double *dist, const double *friction, int64_t nf,
                               const double *radius, const int64_t *dim, const double *axis, const double *turns,
                               double *dJ, double *ddist) {
    std::vector<double> P(3 * nv), X(3 * nv), dp(3 * nv), dd(nv), EW(3 * nv), turned(nv * nv), E(6 * 3);
    std::vector<double> dframe(3 * 3 * nv), dE(6 * 3 * nv);
    std::vector<int> S(static_cast<size_t>(nv));
    int64_t row = 0;
    for (int64_t c = 0; c < nc; c++) {
        const double *Jp = J6 + c * 6 * nv, *W = Jp + 3 * nv, *n = frame + 9 * c, *p = pos + 3 * c, *mu = friction + c * nf;
        const int ns = jacobian_support(Jp, nv, S.data());              // the body's chain: dJ is zero off it
        const double s = radius[c] + dist[c] / 2;
        double po[3], xp[3];
        for (int x = 0; x < 3; x++) po[x] = p[x] - origin[3 * c + x], xp[x] = (p[x] + n[x] * s) - p[x];
        for (int64_t k = 0; k < nv; k++) {
            const double w[3] = {W[k], W[nv + k], W[2 * nv + k]};
            double a[3], b[3];
            cross(w, po, a);
            cross(w, xp, b);
            for (int x = 0; x < 3; x++) P[x * nv + k] = Jp[x * nv + k] + a[x], X[x * nv + k] = P[x * nv + k] + b[x];
            dd[k] = n[0] * X[k] + n[1] * X[nv + k] + n[2] * X[2 * nv + k];
            for (int x = 0; x < 3; x++) dp[x * nv + k] = X[x * nv + k] - n[x] * dd[k] / 2;
        }
        const int rows = pyramid_rows(dim[c]);
        std::fill(dJ + row * nv * nv, dJ + (row + rows) * nv * nv, 0.0);
        pyramid_edges(n, n, mu, dim[c], 3, E.data());
        for (int e = 0; e < rows; e++)
            rows_on_point(&E[3 * e], P.data(), W, dp.data(), turns, nv, S.data(), ns, EW.data(), turned.data(),
                          dJ + (row + e) * nv * nv);
        const double *a = axis + 3 * c;
        if (dim[c] > 1 && (a[0] != 0 || a[1] != 0 || a[2] != 0)) {      // a capsule's tangents turn with its axis
            const double *t1 = n + 3;
            const double na = n[0] * a[0] + n[1] * a[1] + n[2] * a[2];
            const double y[3] = {a[0] - n[0] * na, a[1] - n[1] * na, a[2] - n[2] * na};
            const double norm = std::sqrt(y[0] * y[0] + y[1] * y[1] + y[2] * y[2]);
            double *dt1 = dframe.data() + 3 * nv, *dt2 = dframe.data() + 6 * nv;
            for (int64_t k = 0; k < nv; k++) {
                const double w[3] = {W[k], W[nv + k], W[2 * nv + k]};
                double da[3], v[3], u[3];
                cross(w, a, da);                                        // W_k x a
                const double nda = n[0] * da[0] + n[1] * da[1] + n[2] * da[2];
                for (int x = 0; x < 3; x++) v[x] = da[x] - n[x] * nda;
                const double tv = t1[0] * v[0] + t1[1] * v[1] + t1[2] * v[2];
                for (int x = 0; x < 3; x++) u[x] = (v[x] - t1[x] * tv) / norm, dt1[x * nv + k] = u[x];
                double nu[3];
                cross(n, u, nu);                                        // n x dt1
                for (int x = 0; x < 3; x++) dt2[x * nv + k] = nu[x];
            }
            pyramid_edges(nullptr, dframe.data(), mu, dim[c], 3 * nv, dE.data());
            for (int e = 0; e < rows; e++) {
                const double *de = dE.data() + e * 3 * nv;
                double *out = dJ + (row + e) * nv * nv;
                for (int a = 0; a < ns; a++)
                    for (int b = 0; b < ns; b++) {
                        const int64_t j = S[a], k = S[b];
                        out[j * nv + k] += P[j] * de[k] + P[nv + j] * de[nv + k] + P[2 * nv + j] * de[2 * nv + k];
                    }
            }
        }
        for (int e = 0; e < rows; e++)
            for (int64_t k = 0; k < nv; k++) ddist[(row + e) * nv + k] = dd[k];
        row += rows;
    }
}

// derivatives.segment_contact_rows, one to one: a contact between two spheres or capsules at their segments' nearest
// points c1 = a0 + s d1, c2 (_Constraints._segment_pair's), of dim 1 or 3; J (2, 6, nv) the bodies' Jacobians at their
// origins (2, 3) (zeros for the world), the contact's frame (3, 3), pos (3), dist, mu (dim - 1), d1 (3), ds (nv: s's
// rates), dD (3, nv: d(c2 - c1)), L = |c2 - c1|, radius (2), v1 (3, nv: body 1's point Jacobian at c1), turns (nv, nv),
// common (nv: 1 on the dofs moving both bodies, skipped). dJ (rows, nv, nv), ddist (nv). dJ is zero off the bodies'
// chains (the dofs where a Jacobian's column is not zero: P, W, v1, dD and dp are zero off them) and not computed
// there; scratch: kept between calls, or null
//   dn = (dD - n (n . dD)) / L,  d dist = n . dD,  dp = v1 + d1 ds + dn (r1 + dist / 2) + n d dist / 2
//   dim 3: y0 = tangent_axis(n), y = y0 - n (n . y0), g = -(dn (n . y0) + n (y0 . dn)),
//          dt1 = (g - t1 (t1 . g)) / |y|,  dt2 = dn x t1 + n x dt1
//   dJ[row] = sum over the bodies (-1, +1) of rows_on_point(e, P_b, W_b, dp) + dE^T Jd,  Jd = P_2 - P_1
inline void segment_contact_rows(int64_t nv, const double *J, const double *origin, const double *frame,
                                 const double *pos, double dist, const double *mu, int64_t dim, const double *d1,
                                 const double *ds, const double *dD, double L, const double *radius, const double *v1,
                                 const double *turns, const double *common, double *dJ, double *ddist,
                                 std::vector<double> *scratch = nullptr) {
    std::vector<double> own, &buffer = scratch ? *scratch : own;
    const size_t V = size_t(nv);
    buffer.resize(39 * V + 18 + 2 * V * V);
    double *dframe = buffer.data(), *dp = dframe + 9 * V, *E = dp + 3 * V, *dE = E + 18, *P = dE + 18 * V, *Jd = P + 3 * V;
    double *EW = Jd + 3 * V, *turned = EW + 3 * V, *part = turned + V * V;
    std::fill(Jd, Jd + 3 * V, 0.0);
    std::vector<int> S(V);                                              // dp moves on both bodies' chains: their union
    const int ns = jacobian_support(J, nv, S.data(), 12);
    const double *n = frame, *t1 = frame + 3;
    double *dn = dframe;
    const double r = radius[0] + dist / 2;
    for (int64_t k = 0; k < nv; k++) {
        const double dd = n[0] * dD[k] + n[1] * dD[nv + k] + n[2] * dD[2 * nv + k];
        ddist[k] = dd;
        for (int x = 0; x < 3; x++) dn[x * nv + k] = (dD[x * nv + k] - n[x] * dd) / L;
        for (int x = 0; x < 3; x++)
            dp[x * nv + k] = v1[x * nv + k] + d1[x] * ds[k] + dn[x * nv + k] * r + n[x] * (dd / 2);
    }
    if (dim > 1) {                                                     // make_frame's tangents turn with n
        double y0[3];
        tangent_axis(n, y0);
        const double ny0 = n[0] * y0[0] + n[1] * y0[1] + n[2] * y0[2];
        const double y[3] = {y0[0] - n[0] * ny0, y0[1] - n[1] * ny0, y0[2] - n[2] * ny0};
        const double norm = std::sqrt(y[0] * y[0] + y[1] * y[1] + y[2] * y[2]);
        double *dt1 = dframe + 3 * nv, *dt2 = dframe + 6 * nv;
        for (int64_t k = 0; k < nv; k++) {
            const double d[3] = {dn[k], dn[nv + k], dn[2 * nv + k]};
            const double y0d = y0[0] * d[0] + y0[1] * d[1] + y0[2] * d[2];
            double g[3], u[3], a[3], nu[3];
            for (int x = 0; x < 3; x++) g[x] = -(d[x] * ny0 + n[x] * y0d);
            const double tg = t1[0] * g[0] + t1[1] * g[1] + t1[2] * g[2];
            for (int x = 0; x < 3; x++) u[x] = (g[x] - t1[x] * tg) / norm, dt1[x * nv + k] = u[x];
            cross(d, t1, a), cross(n, u, nu);                           // dn x t1 + n x dt1
            for (int x = 0; x < 3; x++) dt2[x * nv + k] = a[x] + nu[x];
        }
    }
    const int rows = pyramid_rows(dim);
    pyramid_edges(frame, frame, mu, dim, 3, E);
    pyramid_edges(dframe, dframe, mu, dim, 3 * nv, dE);
    for (int64_t i = 0; i < rows * nv * nv; i++) dJ[i] = 0.0;
    for (int b = 0; b < 2; b++) {                                      // Jd = Jp2(p) - Jp1(p)
        const double sign = b == 0 ? -1.0 : 1.0, *Jb = J + b * 6 * nv, *W = Jb + 3 * nv;
        const double po[3] = {pos[0] - origin[3 * b], pos[1] - origin[3 * b + 1], pos[2] - origin[3 * b + 2]};
        for (int64_t k = 0; k < nv; k++) {
            const double w[3] = {W[k], W[nv + k], W[2 * nv + k]};
            double a[3];
            cross(w, po, a);
            for (int x = 0; x < 3; x++) P[x * nv + k] = Jb[x * nv + k] + a[x];
        }
        for (int e = 0; e < rows; e++) {
            rows_on_point(&E[3 * e], P, W, dp, turns, nv, S.data(), ns, EW, turned, part);
            double *out = dJ + e * nv * nv;
            for (int a = 0; a < ns; a++)
                for (int c = 0; c < ns; c++) out[S[a] * nv + S[c]] += sign * part[S[a] * nv + S[c]];
        }
        for (int64_t i = 0; i < 3 * nv; i++) Jd[i] += sign * P[i];
    }
    for (int e = 0; e < rows; e++) {
        const double *de = dE + e * 3 * nv;
        double *out = dJ + e * nv * nv;
        for (int a = 0; a < ns; a++) {
            const int64_t j = S[a];
            if (common[j] != 0) {
                for (int c = 0; c < ns; c++) out[j * nv + S[c]] = 0.0;
                continue;
            }
            for (int c = 0; c < ns; c++) {
                const int64_t k = S[c];
                out[j * nv + k] += de[k] * Jd[j] + de[nv + k] * Jd[nv + j] + de[2 * nv + k] * Jd[2 * nv + j];
            }
        }
    }
}

// derivatives.anchor_rows, one to one: a connect's rows (rows 3) or a weld's (rows 6) between bodies 1 and 2; J (2, 6,
// nv) the bodies' Jacobians at their origins (2, 3) (zeros for the world), anchor (2, 3) the anchors in the world, each
// fixed in its body, turns (nv, nv), a weld's quats (2, 4) (neg, quat) = (conj(xquat_2), xquat_1 relpose) and scale
// its torquescale. dJ (rows, nv, nv):
//   P_b = Jp_b(o_b) + W_b x (x_b - o_b),  dJ[:3] = rows_on_point(e, P_1, W_1, P_1) - rows_on_point(e, P_2, W_2, P_2)
//   a weld's: w = W_1 - W_2,  X_jk = ((W2_k - W1_k) . w_j / 2,  w_j x (W1_k + W2_k) / 2 + turns[j, k] (W1_k x W1_j
//   - W2_k x W2_j)),  dJ[3 + x, j, k] = scale / 2 Im(neg X_jk quat)_x
inline void anchor_rows(int64_t nv, const double *J, const double *origin, const double *anchor, const double *turns,
                        const double *quats, double scale, int64_t rows, double *dJ) {
    std::vector<double> P(2 * 3 * nv), EW(3 * nv), turned(nv * nv), part(nv * nv);
    std::vector<int> S(static_cast<size_t>(nv));
    const double E[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    for (int64_t i = 0; i < rows * nv * nv; i++) dJ[i] = 0.0;
    for (int b = 0; b < 2; b++) {                                      // the anchors' Jacobians Jp(x)
        const double *Jb = J + b * 6 * nv, *W = Jb + 3 * nv;
        const double xo[3] = {anchor[3 * b] - origin[3 * b], anchor[3 * b + 1] - origin[3 * b + 1],
                              anchor[3 * b + 2] - origin[3 * b + 2]};
        double *Pb = P.data() + b * 3 * nv;
        for (int64_t k = 0; k < nv; k++) {
            const double w[3] = {W[k], W[nv + k], W[2 * nv + k]};
            double a[3];
            cross(w, xo, a);
            for (int x = 0; x < 3; x++) Pb[x * nv + k] = Jb[x * nv + k] + a[x];
        }
        const double sign = b == 0 ? 1.0 : -1.0;
        const int ns = jacobian_support(Jb, nv, S.data());             // body b's chain: its part is zero off it
        for (int e = 0; e < 3; e++) {
            std::fill(part.begin(), part.end(), 0.0);
            rows_on_point(&E[3 * e], Pb, W, Pb, turns, nv, S.data(), ns, EW.data(), turned.data(), part.data());
            double *out = dJ + e * nv * nv;
            for (int64_t i = 0; i < nv * nv; i++) out[i] += sign * part[i];
        }
    }
    if (rows == 3) return;
    double L[3][4];                                                    // X -> Im(neg X quat)
    for (int i = 0; i < 4; i++) {
        double e[4] = {0, 0, 0, 0}, t[4], u[4];
        e[i] = 1.0;
        quat_mul(quats, e, t);
        quat_mul(t, quats + 4, u);
        for (int x = 0; x < 3; x++) L[x][i] = u[1 + x];
    }
    const double *W1 = J + 3 * nv, *W2 = J + 9 * nv;
    for (int64_t j = 0; j < nv; j++) {
        const double a1j[3] = {W1[j], W1[nv + j], W1[2 * nv + j]}, a2j[3] = {W2[j], W2[nv + j], W2[2 * nv + j]};
        const double w[3] = {a1j[0] - a2j[0], a1j[1] - a2j[1], a1j[2] - a2j[2]};
        for (int64_t k = 0; k < nv; k++) {
            const double a1[3] = {W1[k], W1[nv + k], W1[2 * nv + k]}, a2[3] = {W2[k], W2[nv + k], W2[2 * nv + k]};
            const double sum[3] = {a1[0] + a2[0], a1[1] + a2[1], a1[2] + a2[2]};
            double v[4], s[3], c1[3], c2[3];
            v[0] = 0.5 * (w[0] * (a2[0] - a1[0]) + w[1] * (a2[1] - a1[1]) + w[2] * (a2[2] - a1[2]));
            cross(w, sum, s), cross(a1, a1j, c1), cross(a2, a2j, c2);   // w_j x (W1_k + W2_k), W_k x W_j
            for (int x = 0; x < 3; x++) v[1 + x] = 0.5 * s[x] + turns[j * nv + k] * (c1[x] - c2[x]);
            for (int x = 0; x < 3; x++)
                dJ[(3 + x) * nv * nv + j * nv + k] = 0.5 * scale * (L[x][0] * v[0] + L[x][1] * v[1] + L[x][2] * v[2]
                                                                    + L[x][3] * v[3]);
        }
    }
}

// x (2, nv) solving A x = b (2, nv) for the rows where free (derivatives.segment_pair's np.linalg.solve of A's free
// block): LAPACK's LU with partial pivoting on two rows, a division on one, zero on the others
inline void free_block_solve(const double (*A)[2], const bool *free, const double *b, int64_t nv, double *x) {
    for (int64_t k = 0; k < 2 * nv; k++) x[k] = 0.0;
    if (free[0] != free[1]) {
        const int i = free[0] ? 0 : 1;
        for (int64_t k = 0; k < nv; k++) x[i * nv + k] = b[i * nv + k] / A[i][i];
        return;
    }
    if (!free[0]) return;
    const int p = std::fabs(A[1][0]) > std::fabs(A[0][0]) ? 1 : 0, o = 1 - p;   // the pivot row first
    const double l = A[o][0] / A[p][0], u = A[o][1] - l * A[p][1];
    for (int64_t k = 0; k < nv; k++) {
        const double y = b[o * nv + k] - l * b[p * nv + k];
        x[nv + k] = y / u;
        x[k] = (b[p * nv + k] - A[p][1] * x[nv + k]) / A[p][0];
    }
}

// derivatives.segment_pair, one to one: a contact between two spheres or capsules at their segments' nearest points
// c1 = a0 + s d1, c2 = b0 + t d2 (segment_weights); J (2, 6, nv) the bodies' Jacobians at their origins (2, 3), radius
// (2), the contact's dist. room (2), speed (2), st (2, nv), dD (3, nv), L, v1 (3, nv) (_SegmentPair's); false where the
// segments are parallel (two contacts) or the contact is not at their nearest points (the outputs then undefined).
//   dD = v2 - v1 + d2 dt - d1 ds,   dD . d1 + D . dd1 = 0 (s inside),   dD . d2 + D . dd2 = 0 (t inside)
//   room: a free weight's min(w, 1 - w) at rate dw; a clamped one's multiplier (D . d1, D . d2 signed) at rate
//   dD . d + D . dd; inf on a sphere; speed: each one's largest |rate|
inline bool segment_pair(int64_t nv, const double *J, const double *origin, const double *a0, const double *d1,
                         const double *b0, const double *d2, const double *radius, double dist, double *room,
                         double *speed, double *st, double *dD, double &L, double *v1) {
    double a1[3], b1[3], w[2][2];
    for (int x = 0; x < 3; x++) a1[x] = a0[x] + d1[x], b1[x] = b0[x] + d2[x];
    if (segment_weights(a0, a1, b0, b1, w) != 1) return false;         // parallel: two contacts, differenced
    const double s = w[0][0], t = w[0][1];
    double c1[3], c2[3], D[3], r1[3], r2[3];
    for (int x = 0; x < 3; x++) c1[x] = a0[x] + s * d1[x], c2[x] = b0[x] + t * d2[x], D[x] = c2[x] - c1[x];
    L = std::sqrt(D[0] * D[0] + D[1] * D[1] + D[2] * D[2]);
    if (L < 1e-9 || std::fabs(L - radius[0] - radius[1] - dist) > 1e-9 * std::fmax(1.0, L)) return false;
    for (int x = 0; x < 3; x++) r1[x] = c1[x] - origin[x], r2[x] = c2[x] - origin[3 + x];
    std::vector<double> v2(3 * nv), dd1(3 * nv), dd2(3 * nv), rhs(2 * nv);
    const double *J1 = J, *J2 = J + 6 * nv;
    for (int64_t k = 0; k < nv; k++) {                                 // v = Jp(o) + W x (c - o), dd = W x d
        const double w1[3] = {J1[3 * nv + k], J1[4 * nv + k], J1[5 * nv + k]};
        const double w2[3] = {J2[3 * nv + k], J2[4 * nv + k], J2[5 * nv + k]};
        double x1[3], x2[3], e1[3], e2[3];
        cross(w1, r1, x1), cross(w2, r2, x2), cross(w1, d1, e1), cross(w2, d2, e2);
        for (int x = 0; x < 3; x++) {
            v1[x * nv + k] = J1[x * nv + k] + x1[x], v2[size_t(x * nv + k)] = J2[x * nv + k] + x2[x];
            dd1[size_t(x * nv + k)] = e1[x], dd2[size_t(x * nv + k)] = e2[x];
        }
    }
    const double A11 = d1[0] * d1[0] + d1[1] * d1[1] + d1[2] * d1[2], A22 = d2[0] * d2[0] + d2[1] * d2[1] + d2[2] * d2[2];
    const double A12 = d2[0] * d1[0] + d2[1] * d1[1] + d2[2] * d1[2];
    const double A[2][2] = {{-A11, A12}, {-A12, A22}};
    const bool free[2] = {0 < s && s < 1 && A11 > 0, 0 < t && t < 1 && A22 > 0};
    const double *d[2] = {d1, d2};
    const double *dd[2] = {dd1.data(), dd2.data()};
    for (int i = 0; i < 2; i++)                                        // rhs = -((v2 - v1) . d + D . dd)
        for (int64_t k = 0; k < nv; k++) {
            double a = 0.0, b = 0.0;
            for (int x = 0; x < 3; x++) a += (v2[size_t(x * nv + k)] - v1[x * nv + k]) * d[i][x], b += D[x] * dd[i][x * nv + k];
            rhs[size_t(i * nv + k)] = -(a + b);
        }
    free_block_solve(A, free, rhs.data(), nv, st);
    for (int x = 0; x < 3; x++)
        for (int64_t k = 0; k < nv; k++)
            dD[x * nv + k] = v2[size_t(x * nv + k)] - v1[x * nv + k] + d2[x] * st[nv + k] - d1[x] * st[k];
    const double weights[2] = {s, t}, sign[2] = {2 * s - 1, 1 - 2 * t}, norm[2] = {A11, A22};
    for (int i = 0; i < 2; i++) {
        const double Dd = D[0] * d[i][0] + D[1] * d[i][1] + D[2] * d[i][2];
        room[i] = free[i] ? std::fmin(weights[i], 1 - weights[i]) : Dd * sign[i];
        speed[i] = 0.0;
        for (int64_t k = 0; k < nv; k++) {
            double rate = st[i * nv + k];
            if (!free[i]) {
                double a = 0.0, b = 0.0;
                for (int x = 0; x < 3; x++) a += dD[x * nv + k] * d[i][x], b += D[x] * dd[i][x * nv + k];
                rate = a + b;
            }
            speed[i] = std::fmax(speed[i], std::fabs(rate));
        }
        if (norm[i] == 0) room[i] = INFINITY;                          // a sphere: no segment
    }
    return true;
}


// derivatives.anchor_bias_derivative, one to one: d(Jdot qd)/dq_m (rows, nv) of a connect's rows (rows 3) or a weld's
// (rows 6) at the velocity qd (nv), anchor_rows' arrays. Per body, P its anchor's point Jacobian, W its angular one,
// T = turns, dW_jm = T[j, m] W_m x W_j, dP_jm = W_j x P_m + T[j, m] (W_m x P_j - W_j x P_m), omega = W qd, V = P qd,
// U_j = sum_k T[j, k] qd_k W_k, Pt_j likewise of P, dU_jm, dPt_jm of dW, dP:
//   d a_m = d omega_m x V + omega x dV_m + sum_j qd_j (dU_jm x P_j + U_j x dP_jm - dW_jm x Pt_j - W_j x dPt_jm)
//   d beta_m = sum_j qd_j (dU_jm x W_j + U_j x dW_jm),  beta = sum_j qd_j U_j x W_j
// the translational rows d a_1 - d a_2; a weld's rotational rows ts/2 Im(d(neg Y quat)), Y = (-|w|^2 / 2, w x (omega_1 +
// omega_2) / 2 + beta_1 - beta_2), w = omega_1 - omega_2, d neg = -neg (0, W2_m) / 2, d quat = (0, W1_m) quat / 2
inline void anchor_bias_derivative(int64_t nv, const double *J, const double *origin, const double *anchor,
                                   const double *turns, const double *quats, double scale, int64_t rows, const double *qd,
                                   double *out) {
    const size_t n = size_t(nv), sq = n * n;
    std::vector<double> P(3 * n), U(3 * n), Pt(3 * n), dW(3 * sq), dP(3 * sq), dU(3 * sq), dPt(3 * sq);
    double omega[2][3], beta[2][3];
    std::vector<double> domega(2 * 3 * n), dbeta(2 * 3 * n);
    for (int64_t i = 0; i < rows * nv; i++) out[i] = 0.0;
    auto col = [&](const double *A, int64_t k, double *v) { v[0] = A[k], v[1] = A[nv + k], v[2] = A[2 * nv + k]; };
    for (int b = 0; b < 2; b++) {
        const double *Jb = J + b * 6 * nv, *W = Jb + 3 * nv;
        const double xo[3] = {anchor[3 * b] - origin[3 * b], anchor[3 * b + 1] - origin[3 * b + 1],
                              anchor[3 * b + 2] - origin[3 * b + 2]};
        for (int64_t k = 0; k < nv; k++) {                             // P = Jp(o) + W x (x - o)
            double w[3], a[3];
            col(W, k, w), cross(w, xo, a);
            for (int x = 0; x < 3; x++) P[x * n + k] = Jb[x * nv + k] + a[x];
        }
        double w[3] = {0, 0, 0}, V[3] = {0, 0, 0};
        for (int64_t j = 0; j < nv; j++) {                             // omega, V, U, Pt
            for (int x = 0; x < 3; x++) w[x] += W[x * nv + j] * qd[j], V[x] += P[x * n + j] * qd[j];
            for (int x = 0; x < 3; x++) {
                double u = 0.0, p = 0.0;
                for (int64_t k = 0; k < nv; k++) {
                    double t = turns[j * nv + k] * qd[k];
                    u += W[x * nv + k] * t, p += P[x * n + k] * t;
                }
                U[x * n + j] = u, Pt[x * n + j] = p;
            }
        }
        for (int64_t j = 0; j < nv; j++)                               // dW, dP [x][j][m]
            for (int64_t m = 0; m < nv; m++) {
                double Wj[3], Wm[3], Pj[3], Pm[3], a[3], c[3], e[3], f[3];
                col(W, j, Wj), col(W, m, Wm), col(P.data(), j, Pj), col(P.data(), m, Pm);
                const double T = turns[j * nv + m];
                cross(Wm, Wj, a), cross(Wj, Pm, c), cross(Wm, Pj, e), cross(Wj, Pm, f);
                for (int x = 0; x < 3; x++) {
                    dW[x * sq + j * n + m] = T * a[x];
                    dP[x * sq + j * n + m] = c[x] + T * (e[x] - f[x]);
                }
            }
        for (int x = 0; x < 3; x++)                                    // dU, dPt
            for (int64_t j = 0; j < nv; j++)
                for (int64_t m = 0; m < nv; m++) {
                    double u = 0.0, p = 0.0;
                    for (int64_t k = 0; k < nv; k++) {
                        double t = turns[j * nv + k] * qd[k];
                        u += t * dW[x * sq + k * n + m], p += t * dP[x * sq + k * n + m];
                    }
                    dU[x * sq + j * n + m] = u, dPt[x * sq + j * n + m] = p;
                }
        const double sign = b == 0 ? 1.0 : -1.0;
        double *dom = domega.data() + b * 3 * n, *dbe = dbeta.data() + b * 3 * n;
        for (int x = 0; x < 3; x++) omega[b][x] = w[x], beta[b][x] = 0.0;
        for (int64_t j = 0; j < nv; j++) {
            double Uj[3], Wj[3], c[3];
            col(U.data(), j, Uj), col(W, j, Wj), cross(Uj, Wj, c);
            for (int x = 0; x < 3; x++) beta[b][x] += qd[j] * c[x];
        }
        for (int64_t m = 0; m < nv; m++) {
            double dw[3] = {0, 0, 0}, dV[3] = {0, 0, 0}, acc[3], be[3] = {0, 0, 0}, c[3];
            for (int64_t j = 0; j < nv; j++)
                for (int x = 0; x < 3; x++) dw[x] += dW[x * sq + j * n + m] * qd[j], dV[x] += dP[x * sq + j * n + m] * qd[j];
            cross(dw, V, acc), cross(w, dV, c);
            for (int x = 0; x < 3; x++) acc[x] += c[x];
            for (int64_t j = 0; j < nv; j++) {
                double dUj[3], dPj[3], dWj[3], dPtj[3], Pj[3], Uj[3], Ptj[3], Wj[3], t1[3], t2[3], t3[3], t4[3], t5[3], t6[3];
                for (int x = 0; x < 3; x++) {
                    size_t e = x * sq + j * n + m;
                    dUj[x] = dU[e], dPj[x] = dP[e], dWj[x] = dW[e], dPtj[x] = dPt[e];
                }
                col(P.data(), j, Pj), col(U.data(), j, Uj), col(Pt.data(), j, Ptj), col(W, j, Wj);
                cross(dUj, Pj, t1), cross(Uj, dPj, t2), cross(dWj, Ptj, t3), cross(Wj, dPtj, t4);
                cross(dUj, Wj, t5), cross(Uj, dWj, t6);
                for (int x = 0; x < 3; x++) {
                    acc[x] += qd[j] * (t1[x] + t2[x] - t3[x] - t4[x]);
                    be[x] += qd[j] * (t5[x] + t6[x]);
                }
            }
            for (int x = 0; x < 3; x++) {
                out[x * nv + m] += sign * acc[x];
                dom[x * n + m] = dw[x], dbe[x * n + m] = be[x];
            }
        }
    }
    if (rows == 3) return;
    double w[3], s[3], ws[3], Y[4];
    for (int x = 0; x < 3; x++) w[x] = omega[0][x] - omega[1][x], s[x] = omega[0][x] + omega[1][x];
    cross(w, s, ws);
    Y[0] = -0.5 * (w[0] * w[0] + w[1] * w[1] + w[2] * w[2]);
    for (int x = 0; x < 3; x++) Y[1 + x] = 0.5 * ws[x] + beta[0][x] - beta[1][x];
    const double *neg = quats, *quat = quats + 4;
    const double *W1 = J + 3 * nv, *W2 = J + 9 * nv;
    double negY[4];
    quat_mul(neg, Y, negY);
    for (int64_t m = 0; m < nv; m++) {
        const double *d0 = domega.data(), *d1 = domega.data() + 3 * n;
        double dw[3], ds[3], a[3], c[3], dY[4], e2[4] = {0, W2[m], W2[nv + m], W2[2 * nv + m]};
        double e1[4] = {0, W1[m], W1[nv + m], W1[2 * nv + m]}, dneg[4], dquat[4], t[4], r1[4], r2[4], r3[4];
        for (int x = 0; x < 3; x++) dw[x] = d0[x * n + m] - d1[x * n + m], ds[x] = d0[x * n + m] + d1[x * n + m];
        cross(dw, s, a), cross(w, ds, c);
        dY[0] = -(w[0] * dw[0] + w[1] * dw[1] + w[2] * dw[2]);
        for (int x = 0; x < 3; x++)
            dY[1 + x] = 0.5 * (a[x] + c[x]) + dbeta[x * n + m] - dbeta[3 * n + x * n + m];
        quat_mul(neg, e2, dneg), quat_mul(e1, quat, dquat);
        for (int x = 0; x < 4; x++) dneg[x] *= -0.5, dquat[x] *= 0.5;
        quat_mul(dneg, Y, t), quat_mul(t, quat, r1);
        quat_mul(neg, dY, t), quat_mul(t, quat, r2);
        quat_mul(negY, dquat, r3);
        for (int x = 0; x < 3; x++) out[(3 + x) * nv + m] = 0.5 * scale * (r1[1 + x] + r2[1 + x] + r3[1 + x]);
    }
}

// ---------------------------------------------------------------- the still dofs' proof (issue U's checked points)

// derivatives._still_tables' arrays and the geoms' (read in place; P pairs, k flat pairs)
struct StillTables {
    int64_t ngeom = 0, nv = 0, nbody = 0, npair = 0, nflat = 0;
    const int64_t *pair = nullptr;        // (P, 2) the pairs' geoms
    const double *bound = nullptr;        // (P,) margin + gap (inf: no narrow phase here)
    const double *margin = nullptr;       // (P,)
    const double *reach = nullptr;        // (ngeom,)
    const double *local = nullptr;        // (ngeom, 3)
    const double *frame = nullptr;        // (ngeom, 3, 3)
    const double *box = nullptr;          // (ngeom, 6)
    const int64_t *body = nullptr;        // (nv,)
    const double *anchor = nullptr, *turn = nullptr, *slide = nullptr;   // (nv,)
    const int64_t *gbody = nullptr;       // (ngeom,) nbody: the world
    const double *sphere = nullptr;       // (P,) nan: no sphere test
    const int64_t *flat = nullptr, *plane = nullptr, *other = nullptr;   // (k,)
    const double *lift = nullptr;         // (k,)
    const int64_t *geom_dofs = nullptr;   // (ngeom, nv) 0 or 1
    const int64_t *geom_type = nullptr;   // (ngeom,)
    const double *geom_size = nullptr;    // (ngeom, 3)
    double row_step = 0.0, ccd_tolerance = 0.0;
    const Model *shapes = nullptr;        // the geoms' meshes and ccd_iterations (separation's GJK)
};

// the poses at q and the contacts there (ContactSet.packed's floats (nc, 28) and ints (nc, 3), geom (nc, 2))
struct StillState {
    const double *xpos = nullptr, *xmat = nullptr;   // (nbody, 3), (nbody, 3, 3)
    int64_t nc = 0;
    const double *floats = nullptr;
    const int64_t *ints = nullptr, *geom = nullptr;
};

inline constexpr double STILL_INF = std::numeric_limits<double>::infinity();
inline constexpr int64_t PACKED_WIDTH = 28;          // ContactSet.packed's floats: pos 0..2, frame 3..11, dist 12

inline bool rounded_geom(int64_t kind) { return kind == GEOM_SPHERE || kind == GEOM_CAPSULE; }

// the geoms' frames at q: R (ngeom, 3, 3), their centres (ngeom, 3) (_proven_still's R, centre)
struct StillFrames {
    std::vector<double> R, centre, middle, half;     // middle: each box's centre; half: a segment's half axis
};

// derivatives._segment_distance of one pair of segments a0 + s d1, b0 + t d2 (s, t in [0, 1]): a lower bound on their
// distance, |w|^2 at Ericson's solution less the most its tangent plane falls over the square
inline double still_segment_distance(const double *a0, const double *d1, const double *b0, const double *d2) {
    double r[3] = {a0[0] - b0[0], a0[1] - b0[1], a0[2] - b0[2]};
    double A = dot3(d1, d1), E = dot3(d2, d2), b = dot3(d1, d2), c = dot3(d1, r), f = dot3(d2, r);
    double den = A * E - b * b;
    double s = den > 0 ? std::clamp((b * f - c * E) / den, 0.0, 1.0) : 0.0;
    double t = E > 0 ? (b * s + f) / E : -1.0;                          // a point b0: its nearest on the first
    if (t < 0) s = A > 0 ? std::clamp(-c / A, 0.0, 1.0) : 0.0;
    else if (t > 1) s = A > 0 ? std::clamp((b - c) / A, 0.0, 1.0) : 0.0;
    t = std::clamp(t, 0.0, 1.0);
    double w[3];
    for (int i = 0; i < 3; i++) w[i] = a0[i] + s * d1[i] - b0[i] - t * d2[i];
    double ds = dot3(w, d1), dt = -dot3(w, d2);                         // half the gradient of |w|^2 in s, t
    double fall = 2 * (std::max(ds * s, ds * (s - 1)) + std::max(dt * t, dt * (t - 1)));   // to the best corner
    return std::sqrt(std::max(dot3(w, w) - fall, 0.0));
}

// a geom GJK takes as a convex shape: a sphere, capsule, ellipsoid, cylinder, box, or mesh geom with its mesh
// (_separation's convex_shape)
inline bool convex_geom(const StillTables &T, int64_t g) {
    int64_t kind = T.geom_type[g];
    return (kind >= GEOM_SPHERE && kind <= GEOM_BOX) || (kind == GEOM_MESH && T.shapes->geom_dataid[g] >= 0);
}

// gjk.distance_lower_bound of the geoms g1, g2 at their frames F, ended once it passes enough [m]
inline double gjk_separation(const StillTables &T, const StillFrames &F, int64_t g1, int64_t g2, double enough) {
    const Model &m = *T.shapes;
    ConvexMesh mesh[2];
    CcdObject shape[2];
    for (int k = 0; k < 2; k++) {
        int64_t g = k ? g2 : g1;
        if (T.geom_type[g] == GEOM_MESH) mesh[k] = convex_mesh(m, m.geom_dataid[g]);
        shape[k] = make_object(T.geom_type[g], &F.centre[3 * g], &F.R[9 * g], T.geom_size + 3 * g, &mesh[k], 0.0);
    }
    return distance_lower_bound(shape[0], shape[1], enough, T.ccd_tolerance, m.opt_ccd_iterations);
}

// _Constraints._separation of the pair (g1, g2): a lower bound [m] on their distance (-inf: none), GJK's where the
// boxes' is below enough [m]
inline double separation(const StillTables &T, const StillFrames &F, int64_t g1, int64_t g2, double enough) {
    const int64_t *kind = T.geom_type;
    const double *size = T.geom_size, *box = T.box;
    bool plane1 = kind[g1] == GEOM_PLANE, plane2 = kind[g2] == GEOM_PLANE;
    bool both = rounded_geom(kind[g1]) && rounded_geom(kind[g2]);
    if (!plane1 && !plane2 && !both) {                                  // the boxes' gap on 7 normals
        const double *Ra = &F.R[9 * g1], *Rb = &F.R[9 * g2];
        double line[3], unit[3];
        for (int i = 0; i < 3; i++) line[i] = F.middle[3 * g2 + i] - F.middle[3 * g1 + i];
        double norm = std::max(std::sqrt(dot3(line, line)), 1e-300);
        for (int i = 0; i < 3; i++) unit[i] = line[i] / norm;
        double best = -STILL_INF;
        for (int k = 0; k < 7; k++) {
            double n[3];
            for (int i = 0; i < 3; i++) n[i] = k < 3 ? Ra[3 * i + k] : k < 6 ? Rb[3 * i + k - 3] : unit[i];
            double gap = std::fabs(dot3(n, line));
            for (int j = 0; j < 3; j++) {
                gap -= std::fabs(n[0] * Ra[j] + n[1] * Ra[3 + j] + n[2] * Ra[6 + j]) * box[6 * g1 + 3 + j];
            }
            for (int j = 0; j < 3; j++) {
                gap -= std::fabs(n[0] * Rb[j] + n[1] * Rb[3 + j] + n[2] * Rb[6 + j]) * box[6 * g2 + 3 + j];
            }
            best = std::max(best, gap);
        }
        if (best < enough && T.shapes && convex_geom(T, g1) && convex_geom(T, g2))   // GJK's bound
            best = std::max(best, gjk_separation(T, F, g1, g2, enough));
        return best;
    }
    if (both && !plane1 && !plane2) {                                   // two segments' distance less the radii
        double a0[3], d1[3], b0[3], d2[3];
        for (int i = 0; i < 3; i++) {
            a0[i] = F.centre[3 * g1 + i] - F.half[3 * g1 + i], d1[i] = 2 * F.half[3 * g1 + i];
            b0[i] = F.centre[3 * g2 + i] - F.half[3 * g2 + i], d2[i] = 2 * F.half[3 * g2 + i];
        }
        return still_segment_distance(a0, d1, b0, d2) - size[3 * g1] - size[3 * g2];
    }
    if (plane1 == plane2) return -STILL_INF;                            // two planes
    int64_t p = plane1 ? g1 : g2, o = plane1 ? g2 : g1;                  // a plane's height of the other's lowest point
    const double *Ro = &F.R[9 * o];
    double n[3] = {F.R[9 * p + 2], F.R[9 * p + 5], F.R[9 * p + 8]};
    double low;
    if (rounded_geom(kind[o])) {
        low = std::fabs(dot3(&F.half[3 * o], n)) + size[3 * o];
    } else {
        low = 0.0;
        for (int j = 0; j < 3; j++) low += std::fabs(n[0] * Ro[j] + n[1] * Ro[3 + j] + n[2] * Ro[6 + j]) * box[6 * o + 3 + j];
    }
    const double *from = rounded_geom(kind[o]) ? &F.centre[3 * o] : &F.middle[3 * o];
    double d[3] = {from[0] - F.centre[3 * p], from[1] - F.centre[3 * p + 1], from[2] - F.centre[3 * p + 2]};
    return dot3(d, n) - low;
}

// _Constraints._default_frames of a contact (floats: its packed row): its first tangent make_frame's default
inline bool default_frame(const double *floats) {
    const double *frame = floats + 3, *n = frame;
    double y0[3] = {0.0, std::fabs(n[1]) < 0.5 ? 1.0 : 0.0, std::fabs(n[1]) < 0.5 ? 0.0 : 1.0};
    double along = dot3(n, y0), y[3];
    for (int i = 0; i < 3; i++) y[i] = y0[i] - n[i] * along;
    double norm = std::sqrt(dot3(y, y)), worst = 0.0;
    for (int i = 0; i < 3; i++) worst = std::max(worst, std::fabs(y[i] / norm - frame[3 + i]));
    return worst < 1e-9;
}

// the touching geom pairs at q in their first contact's order: their geoms, contacts (in order) and candidates
struct Touching {
    int64_t g1, g2;
    std::vector<int64_t> contacts, candidates;
};

// _Constraints._touching_rooms' room of each touching pair with one candidate (-inf for the others: not known)
// into room (group: scratch)
inline void touching_rooms(const StillTables &T, const StillFrames &F, const StillState &S,
                           const std::vector<Touching> &touching, std::vector<double> &room, std::vector<double> &group) {
    const int64_t *kind = T.geom_type;
    const double *size = T.geom_size;
    room.assign(touching.size(), -STILL_INF);
    double turn_max = 0.0;
    for (int64_t k = 0; k < T.nv; k++) turn_max = std::max(turn_max, T.turn[k]);
    group.assign(size_t(S.nc), STILL_INF);                              // half the way to another of its group
    for (int64_t c = 0; c < S.nc; c++)
        for (int64_t e = 0; e < S.nc; e++) {
            if (e == c || S.ints[3 * e] != S.ints[3 * c] || S.ints[3 * e + 1] != S.ints[3 * c + 1] ||
                S.ints[3 * e + 2] != S.ints[3 * c + 2])
                continue;
            double d[3];
            for (int i = 0; i < 3; i++) d[i] = S.floats[PACKED_WIDTH * c + i] - S.floats[PACKED_WIDTH * e + i];
            group[c] = std::min(group[c], std::sqrt(dot3(d, d)) / 2);
        }
    for (size_t k = 0; k < touching.size(); k++) {
        const Touching &t = touching[k];
        if (t.candidates.size() != 1) continue;
        int64_t a = t.g1, b = t.g2, count = int64_t(t.contacts.size()), first = t.contacts[0];
        double m = T.margin[t.candidates[0]], r = -STILL_INF;
        if (kind[a] == GEOM_PLANE && rounded_geom(kind[b])) {          // a plane's: each end's dist
            double n[3] = {F.R[9 * a + 2], F.R[9 * a + 5], F.R[9 * a + 8]}, d[3];
            for (int i = 0; i < 3; i++) d[i] = F.centre[3 * b + i] - F.centre[3 * a + i];
            double height = dot3(d, n) - size[3 * b], lift = std::fabs(dot3(&F.half[3 * b], n));
            double end0 = height - lift, end1 = height + lift;
            int64_t inside = int64_t(end0 < m) + int64_t(kind[b] == GEOM_CAPSULE && end1 < m);
            double near = std::min(std::fabs(end0 - m), std::fabs(end1 - m));
            r = inside == count ? near : -STILL_INF;
        } else if (rounded_geom(kind[a]) && rounded_geom(kind[b]) && count == 1) {   // two spheres or capsules
            const double *u = &F.R[9 * a], *v = &F.R[9 * b];
            double uv = u[2] * v[2] + u[5] * v[5] + u[8] * v[8];
            double sine = std::sqrt(std::max(1.0 - uv * uv, 0.0));
            double turning = 2 * T.row_step * turn_max + 1e-9;
            bool parallel = kind[a] == GEOM_CAPSULE && kind[b] == GEOM_CAPSULE && sine <= 1e-4 + turning;
            bool framed = S.ints[3 * first] > 1 && default_frame(S.floats + PACKED_WIDTH * first);
            bool grouped = std::isfinite(group[first]);                 // its point may outrun its geoms
            r = parallel || framed || grouped ? -STILL_INF : m - S.floats[PACKED_WIDTH * first + 12];
        }
        for (int64_t c : t.contacts) r = std::min(r, group[c]);        // nearer its own than half the way to another
        room[k] = r;
    }
}

// _Constraints._rooms: room (P,) how far each pair's geoms may move before their contacts may change (-inf: not
// known), where proven_still reads it: a pair neither needed nor held is not read (inf), nor is a room above travel
// (inf where the bounding spheres' test clears it by a relative 1e-9: its square root and the rest skipped); rest,
// group: scratch
inline void still_rooms(const StillTables &T, const StillFrames &F, const StillState &S,
                        const std::vector<Touching> &touching, const std::vector<char> &needed,
                        const std::vector<char> &held, const std::vector<double> &travel, std::vector<double> &room,
                        std::vector<double> &rest, std::vector<double> &group) {
    room.resize(size_t(T.npair));
    for (int64_t p = 0; p < T.npair; p++) {                             // above detect's bounding-sphere filter
        if (held[p] || !needed[p]) {                                    // held: -inf below (_touching_rooms')
            room[p] = held[p] ? -STILL_INF : STILL_INF;
            continue;
        }
        const double *c1 = &F.centre[3 * T.pair[2 * p]], *c2 = &F.centre[3 * T.pair[2 * p + 1]];
        double d[3] = {c1[0] - c2[0], c1[1] - c2[1], c1[2] - c2[2]};
        const double square = dot3(d, d), sphere = T.sphere[p], reach = travel[p] + sphere;
        if (reach >= 0 && square > reach * reach * (1 + 1e-9) + 1e-300) room[p] = STILL_INF;   // nan: false
        else room[p] = std::sqrt(square) - sphere;                      // nan where no sphere test
    }
    for (int64_t k = 0; k < T.nflat; k++) {                             // a plane's height of the other's sphere
        if (held[T.flat[k]] || !needed[T.flat[k]]) continue;
        int64_t pl = T.plane[k], o = T.other[k];
        double n[3] = {F.R[9 * pl + 2], F.R[9 * pl + 5], F.R[9 * pl + 8]}, d[3];
        for (int i = 0; i < 3; i++) d[i] = F.centre[3 * o + i] - F.centre[3 * pl + i];
        room[T.flat[k]] = std::fmax(room[T.flat[k]], dot3(d, n) - T.lift[k]);
    }
    for (int64_t p = 0; p < T.npair; p++) {
        if (std::isnan(room[p])) room[p] = -STILL_INF;
        if (needed[p] && !held[p] && room[p] <= travel[p] && T.bound[p] < STILL_INF) {   // the narrow phase's margin
            double slack = T.bound[p] + 10 * T.ccd_tolerance;
            room[p] = std::max(room[p], separation(T, F, T.pair[2 * p], T.pair[2 * p + 1], travel[p] + slack) - slack);
        }
        if (held[p]) room[p] = -STILL_INF;
    }
    touching_rooms(T, F, S, touching, rest, group);
    for (size_t k = 0; k < touching.size(); k++)
        if (touching[k].candidates.size() == 1) room[touching[k].candidates[0]] = rest[k];
}

// proven_still's buffers, kept between calls
struct StillWork {
    std::vector<Touching> touching;
    std::vector<char> held, first, paired, needed;
    std::vector<int64_t> used;
    StillFrames F;
    std::vector<uint64_t> moves;
    std::vector<double> speed, fastest, travel, room, rest, group;
};

// _Constraints._proven_still: out[k] whether no contact can appear or leave within 2 ROW_STEP along dof still[k]
// (w: its buffers)
inline void proven_still(const StillTables &T, const StillState &S, const int64_t *still, int64_t nstill, uint8_t *out,
                         StillWork &w) {
    std::fill(out, out + nstill, uint8_t(0));
    const int64_t G = T.ngeom, P = T.npair;
    std::vector<Touching> &touching = w.touching;                       // _touching_pairs, with their candidates
    size_t count = 0;
    for (int64_t c = 0; c < S.nc; c++) {
        int64_t a = S.geom[2 * c], b = S.geom[2 * c + 1];
        if (a < 0 || b < 0) return;                                     // a contact of no geom pair: not followed
        size_t k = 0;
        while (k < count && (touching[k].g1 != a || touching[k].g2 != b)) k++;
        if (k == count) {                                               // a new pair (its vectors kept, emptied)
            if (count == touching.size()) touching.emplace_back();
            Touching &t = touching[count++];
            t.g1 = a, t.g2 = b, t.contacts.clear(), t.candidates.clear();
        }
        touching[k].contacts.push_back(c);
    }
    touching.resize(count);
    std::vector<char> &held = w.held, &first = w.first;                // first: a touching pair's first geom
    held.assign(size_t(P), 0), first.assign(size_t(G), 0);
    for (const Touching &t : touching) first[t.g1] = 1;
    for (int64_t p = 0; p < P; p++) {                                   // each pair's candidates, in p's order
        if (!first[T.pair[2 * p]]) continue;
        for (Touching &t : touching)
            if (T.pair[2 * p] == t.g1 && T.pair[2 * p + 1] == t.g2) t.candidates.push_back(p), held[p] = 1;
    }
    for (const Touching &t : touching)
        if (t.candidates.empty()) return;                               // a contact of no candidate: not followed
    std::vector<char> &paired = w.paired;                               // the geoms of some pair or flat pair (the
    paired.assign(size_t(G), 0);
    for (int64_t x = 0; x < 2 * P; x++) paired[T.pair[x]] = 1;          // others: their centres alone, for the scale)
    for (int64_t k = 0; k < T.nflat; k++) paired[T.plane[k]] = paired[T.other[k]] = 1;
    std::vector<int64_t> &used = w.used;
    used.clear();
    for (int64_t g = 0; g < G; g++)
        if (paired[g]) used.push_back(g);
    StillFrames &F = w.F;                                               // the geoms' frames at q
    F.R.assign(9 * G, 0.0), F.centre.assign(3 * G, 0.0), F.middle.assign(3 * G, 0.0), F.half.assign(3 * G, 0.0);
    static const double eye[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, zero[3] = {0, 0, 0};
    for (int64_t g = 0; g < G; g++) {
        bool world = T.gbody[g] >= T.nbody;
        const double *M = world ? eye : S.xmat + 9 * T.gbody[g], *X = world ? zero : S.xpos + 3 * T.gbody[g];
        const double *fr = T.frame + 9 * g, *lo = T.local + 3 * g, *bx = T.box + 6 * g;
        for (int i = 0; i < 3; i++) F.centre[3 * g + i] = M[3 * i] * lo[0] + M[3 * i + 1] * lo[1] + M[3 * i + 2] * lo[2] + X[i];
        if (!paired[g]) continue;
        double *R = &F.R[9 * g];
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) R[3 * i + j] = M[3 * i] * fr[j] + M[3 * i + 1] * fr[3 + j] + M[3 * i + 2] * fr[6 + j];
        for (int i = 0; i < 3; i++)
            F.middle[3 * g + i] = F.centre[3 * g + i] + (R[3 * i] * bx[0] + R[3 * i + 1] * bx[1] + R[3 * i + 2] * bx[2]);
        double h = T.geom_type[g] == GEOM_CAPSULE ? T.geom_size[3 * g + 1] : 0.0;
        for (int i = 0; i < 3; i++) F.half[3 * g + i] = h * R[3 * i + 2];
    }
    double scale = 1.0;                                                 // the scene's size
    bool finite = true;
    for (int64_t x = 0; x < 3 * G; x++) scale = std::max(scale, std::fabs(F.centre[x])), finite &= std::isfinite(F.centre[x]);
    for (int64_t k = 0; k < nstill; k++)
        for (int i = 0; i < 3; i++) {
            double x = S.xpos[3 * T.body[still[k]] + i];
            scale = std::max(scale, std::fabs(x)), finite &= std::isfinite(x);
        }
    if (!(scale < 1e150 && finite)) return;                             // else squares may overflow: levers, rooms
    const int64_t W = (nstill + 63) / 64;                               // each geom's still dofs, a bit each
    std::vector<uint64_t> &moves = w.moves;
    std::vector<double> &speed = w.speed, &fastest = w.fastest;         // each geom's points' speed along each dof
    moves.assign(size_t(G * W), 0), speed.assign(size_t(nstill * G), 0.0), fastest.assign(size_t(G), 0.0);
    for (int64_t k = 0; k < nstill; k++) {
        int64_t dof = still[k];
        const double *x = S.xpos + 3 * T.body[dof];
        for (int64_t g : used) {
            if (!T.geom_dofs[g * T.nv + dof]) continue;                 // 0: a geom the dof does not move
            moves[g * W + k / 64] |= uint64_t(1) << (k % 64);
            const double *c = &F.centre[3 * g];
            double square = dot3(c, c) + dot3(x, x) - 2 * dot3(x, c);
            double lever = std::sqrt(std::max(square, 0.0)) + (1e-7 * scale + T.anchor[dof]) + T.reach[g];
            double v = T.slide[dof] + T.turn[dof] * lever;
            speed[k * G + g] = v, fastest[g] = std::max(fastest[g], v);
        }
    }
    std::vector<char> &needed = w.needed;                               // the pairs some dof may change
    std::vector<double> &travel = w.travel, &room = w.room;            // and how far they may move at the fastest
    needed.assign(size_t(P), 0), travel.resize(size_t(P));
    double slack = 1e-9 * scale;
    for (int64_t p = 0; p < P; p++) {
        const uint64_t *m1 = &moves[T.pair[2 * p] * W], *m2 = &moves[T.pair[2 * p + 1] * W];
        for (int64_t x = 0; x < W && !needed[p]; x++) needed[p] = (m1[x] ^ m2[x]) || (held[p] && (m1[x] | m2[x]));
        travel[p] = 2 * T.row_step * (fastest[T.pair[2 * p]] + fastest[T.pair[2 * p + 1]]) + slack;
    }
    still_rooms(T, F, S, touching, needed, held, travel, room, w.rest, w.group);
    std::fill(out, out + nstill, uint8_t(1));
    for (int64_t p = 0; p < P; p++) {                                   // those that fail at the fastest: dof by dof
        if (!needed[p] || room[p] > travel[p]) continue;
        int64_t g1 = T.pair[2 * p], g2 = T.pair[2 * p + 1];
        for (int64_t k = 0; k < nstill; k++) {
            bool b1 = moves[g1 * W + k / 64] >> (k % 64) & 1, b2 = moves[g2 * W + k / 64] >> (k % 64) & 1;
            bool need = b1 != b2 || (held[p] && (b1 || b2));
            double move = 2 * T.row_step * (speed[k * G + g1] + speed[k * G + g2]) + slack;
            if (need && !(room[p] > move)) out[k] = 0;
        }
    }
}

// ---------------------------------------------------------------- the terms of a solve whose rows are all analytic

// derivatives._one_call_tables' arrays (read in place)
struct OneCallTables {
    const int64_t *static_body = nullptr;          // (nbody,) 1: a body no dof moves (body_linkid < 0)
    int64_t nlimited = 0;                          // the limited joints (_limited_joints): first q, ball, range, margin
    const int64_t *limited_adr = nullptr, *limited_ball = nullptr;
    const double *limited_low = nullptr, *limited_high = nullptr, *limited_margin = nullptr;
    int64_t ncontact_dofs = 0;
    const int64_t *contact_dofs = nullptr;         // collision.contact_dofs' dofs, in order
    const double *turns = nullptr;                 // (nv, nv) Model.dof_turns
    const double *geom_axes = nullptr;             // (ngeom, 3) each geom's z axis in its body (_geom_axes)
    const double *body_dofs = nullptr;             // (nbody + 1, nv) 1 on the dofs moving each body (_body_dofs)
    double r_floor = 0.0, stiff_rows = 0.0, row_step = 0.0;   // R_FLOOR, STIFF_ROWS, ROW_STEP
    const double *weights = nullptr;               // (4,) _FD_POINT_WEIGHTS
};

// why one_call_terms leaves a solve to the NumPy text (0: taken)
enum OneCallDecline {
    ONE_CALL_TAKEN = 0, ONE_CALL_ROW = 1, ONE_CALL_CONTACT = 2, ONE_CALL_KINK = 3, ONE_CALL_NEAR_LIMIT = 4,
    ONE_CALL_STIFF = 5, ONE_CALL_SOLVE = 6, ONE_CALL_STILL = 7, ONE_CALL_STEP = 8
};

// the arrays ConstrainedTerms points into (one_call_terms' own)
struct OneCallTerms {
    std::vector<int64_t> rows, plane_body, plane_dim;
    std::vector<double> dJ, dpos, daref, plane_origin, plane_frame, plane_pos, plane_dist, plane_friction, plane_radius,
        plane_axis;
    std::vector<int64_t> pairs;                    // the sphere and capsule pairs' contacts, in order
    std::vector<double> pair_J, pair_dJ, pair_ddist, room, speed, st, dD, v1, common;   // one pair's
    std::vector<double> pair_scratch;                                   // segment_contact_rows'
    std::vector<int> pair_support, pair_count, support, support_at;     // the pairs' rows' dofs (their bodies' chains),
};                                                                      // each pair's count; every given row's (t's)

// a geom's z axis in the world (_geom_axis): its body's xmat (world: the identity) times its own in the body
inline void world_axis(const OneCallTables &T, const double *xmat, int64_t body, int64_t g, double *out) {
    const double *a = T.geom_axes + 3 * g;
    for (int i = 0; i < 3; i++)
        out[i] = body < 0 ? a[i] : xmat[9 * body + 3 * i] * a[0] + xmat[9 * body + 3 * i + 1] * a[1] + xmat[9 * body + 3 * i + 2] * a[2];
}

// _axis_sine: geom g's z axis in the world (world_axis) into axis, its n . a into along, and |a - n (n . a)|, the sine
// of its angle from the contact's normal n
inline double axis_sine(const OneCallTables &T, const double *xmat, int64_t body, int64_t g, const double *n, double *axis,
                        double &along) {
    world_axis(T, xmat, body, g, axis);
    along = n[0] * axis[0] + n[1] * axis[1] + n[2] * axis[2];
    double y[3];
    for (int i = 0; i < 3; i++) y[i] = axis[i] - n[i] * along;
    return std::sqrt(dot3(y, y));
}

// a contact's kind of geom: a sphere or a capsule (a segment, _segment_pairs')
inline bool segment_geom(int64_t kind) { return kind == GEOM_SPHERE || kind == GEOM_CAPSULE; }

// _segment_pairs, _refuse_frame_switches and _segment_contact of contact k between two spheres or capsules (geoms g,
// bodies b: -1 the world) with its rows from first: its rows appended to out.rows, their dJ and dpos to out.pair_dJ,
// out.pair_ddist (one ddist a contact); jac (nbody, 6, nv) the bodies' Jacobians at their origins (body_jacobian's)
inline int segment_terms(const Model &m, const OneCallTables &T, const RowsOut &r, const Contacts &c, int64_t k,
                         const int64_t *g, const int64_t *b, int64_t first, const double *xpos, const double *xmat,
                         const double *jac, OneCallTerms &out) {
    const int64_t nv = m.nv, dim = c.dim(k);
    out.pair_J.assign(size_t(12 * nv), 0.0);
    double origin[6] = {0, 0, 0, 0, 0, 0}, ends[2][3], axes[2][3], radius[2];
    for (int side = 0; side < 2; side++) {                              // each geom's segment a0 + s d (_segment_pair)
        int64_t body = b[side], geom = g[side];
        double axis[3], centre[3], half = m.geom_type[geom] == GEOM_CAPSULE ? m.geom_size[3 * geom + 1] : 0.0;
        world_axis(T, xmat, body, geom, axis);
        const double *p = m.geom_pos + 3 * geom;
        for (int i = 0; i < 3; i++) {
            centre[i] = body < 0 ? p[i] : xpos[3 * body + i] + (xmat[9 * body + 3 * i] * p[0] + xmat[9 * body + 3 * i + 1] * p[1] +
                                                               xmat[9 * body + 3 * i + 2] * p[2]);
            ends[side][i] = centre[i] - axis[i] * half, axes[side][i] = 2 * (axis[i] * half);
            origin[3 * side + i] = body < 0 ? 0.0 : xpos[3 * body + i];
        }
        if (body >= 0) std::copy_n(jac + 6 * nv * body, 6 * nv, &out.pair_J[size_t(6 * nv * side)]);
        radius[side] = m.geom_size[3 * geom];
    }
    out.room.resize(2), out.speed.resize(2), out.st.resize(size_t(2 * nv)), out.dD.resize(size_t(3 * nv));
    out.v1.resize(size_t(3 * nv));
    double L = 0.0;
    if (!segment_pair(nv, out.pair_J.data(), origin, ends[0], axes[0], ends[1], axes[1], radius, c.dist(k), out.room.data(),
                      out.speed.data(), out.st.data(), out.dD.data(), L, out.v1.data()))
        return ONE_CALL_CONTACT;                                        // parallel, or not its nearest points: differenced
    for (int w = 0; w < 2; w++)
        if (out.room[size_t(w)] < 2 * T.row_step * out.speed[size_t(w)]) return ONE_CALL_CONTACT;   // near a segment's end
    const double *n = c.frame(k);
    if (dim > 1) {                                                      // make_frame's default tangent switching
        double rate = 0.0;
        for (int64_t j = 0; j < nv; j++) {
            double along = n[0] * out.dD[size_t(j)] + n[1] * out.dD[size_t(nv + j)] + n[2] * out.dD[size_t(2 * nv + j)];
            rate = std::max(rate, std::fabs((out.dD[size_t(nv + j)] - n[1] * along) / L));
        }
        if (std::fabs(std::fabs(n[1]) - 0.5) < 2 * T.row_step * rate) return ONE_CALL_CONTACT;
    }
    if ((r.type[first] != CONTACT_FRICTIONLESS && r.type[first] != CONTACT_PYRAMIDAL) || (dim != 1 && dim != 3) ||
        !(r.R[first] > T.r_floor))
        return ONE_CALL_CONTACT;
    out.common.resize(size_t(nv));
    const double *c1 = T.body_dofs + nv * (b[0] < 0 ? m.nbody : b[0]), *c2 = T.body_dofs + nv * (b[1] < 0 ? m.nbody : b[1]);
    for (int64_t j = 0; j < nv; j++) out.common[size_t(j)] = c1[j] != 0 && c2[j] != 0 ? 1.0 : 0.0;
    const int64_t rows = pyramid_rows(dim);
    size_t at = out.pair_dJ.size(), at_d = out.pair_ddist.size();
    out.pair_dJ.resize(at + size_t(rows * nv * nv)), out.pair_ddist.resize(at_d + size_t(nv));
    segment_contact_rows(nv, out.pair_J.data(), origin, n, c.pos(k), c.dist(k), c.friction(k), dim, axes[0],
                         out.st.data(), out.dD.data(), L, radius, out.v1.data(), T.turns, out.common.data(),
                         &out.pair_dJ[at], &out.pair_ddist[at_d], &out.pair_scratch);
    for (int64_t i = first; i < first + rows; i++) out.rows.push_back(i);
    const size_t at_s = out.pair_support.size();                        // its rows' dofs: both bodies' chains
    out.pair_support.resize(at_s + size_t(nv));
    const int count = jacobian_support(out.pair_J.data(), nv, &out.pair_support[at_s], 12);
    out.pair_support.resize(at_s + size_t(count)), out.pair_count.push_back(count);
    return ONE_CALL_TAKEN;
}

// step_derivatives' margins (4) of a solve one_call_terms took (its rows r at the optimum a, contacts c, geom pairs geom,
// the bodies' xmat): switch_margins' [0] the smallest distance of a row's jar = J a - aref from the edge of its state (a
// friction loss row's from +-R frictionloss, a one-sided row's |jar|) and [1] the smallest margin - pos of a limit's
// or a contact's first row; _break_margins' [2] inf (no power-1 impedance: the one call declines those) and [3] the
// smallest | |n_y| - 1/2 | of a contact of dim > 1 on make_frame's default tangent and |a - n (n . a)| of a capsule's
// on a plane (dim > 1); inf where there is none
inline void one_call_margins(const Model &m, const OneCallTables &T, const RowsOut &r, const Contacts &c,
                             const int64_t *geom, const double *xmat, const double *a, double *margins) {
    const int64_t nv = m.nv, nefc = r.sizes[0], ne = r.sizes[1], nf = r.sizes[2];
    double edge = STILL_INF, leave = STILL_INF, frames = STILL_INF;
    for (int64_t i = ne; i < nefc; i++) {
        double jar = -r.aref[size_t(i)];
        for (int64_t k = 0; k < nv; k++) jar += r.J[size_t(i * nv + k)] * a[k];
        if (i < ne + nf) {                                              // friction loss: from +-R frictionloss
            double Rf = r.R[size_t(i)] * r.frictionloss[size_t(i)];
            edge = std::min(edge, r.state[size_t(i)] == QUADRATIC ? std::min(jar + Rf, Rf - jar) : std::fabs(std::fabs(jar) - Rf));
        } else {
            edge = std::min(edge, std::fabs(jar));
        }
        if (r.type[size_t(i)] == LIMIT_JOINT || r.type[size_t(i)] == LIMIT_TENDON)
            leave = std::min(leave, r.margin[size_t(i)] - r.pos[size_t(i)]);
    }
    for (int64_t k = 0; k < c.n; k++) {
        int64_t first = r.contact_row[size_t(k)];
        if (first < 0) continue;
        leave = std::min(leave, r.margin[size_t(first)] - r.pos[size_t(first)]);
        if (c.dim(k) < 2) continue;
        const double *n = c.frame(k);
        if (default_frame(c.f + CONTACT_FLOATS * k)) frames = std::min(frames, std::fabs(std::fabs(n[1]) - 0.5));
        if (m.geom_type[geom[2 * k]] == GEOM_PLANE && m.geom_type[geom[2 * k + 1]] == GEOM_CAPSULE) {
            double axis[3], along;
            frames = std::min(frames, axis_sine(T, xmat, c.body2(k), geom[2 * k + 1], n, axis, along));
        }
    }
    margins[0] = edge, margins[1] = leave, margins[2] = STILL_INF, margins[3] = frames;
}

// _Constraints.terms and compiled_terms of one solve (its rows r, contacts c with geom pairs geom (nc, 2), q, the
// bodies' xpos (nbody, 3) and xmat (nbody, 9) at q, jac (nbody, 6, nv) the pairs' bodies' Jacobians, M (nv, nv)) where
// every row's q-derivative is analytic and no dof moves one: a dof's friction loss (none), a hinge's or slide's limit
// (dJ 0, dpos its J), a joint equality (dJ -poly'' on its second joint's dof, dpos its J), a plane on a body no dof
// moves against a sphere, a box or a capsule (not upright within 1e-12 of 1 - (n . a)^2, nor of dim 3 within 4
// ROW_STEP of it), dim 1 or 3 on the pyramid (_analytic_plane_indices: their arrays for step_derivative.h's
// plane_forces), two spheres or capsules (segment_terms), R above R_FLOOR, no power-1 impedance (contacts' solimp; the model's,
// power_one: the caller's tables exist only without), no limited joint within 4 ROW_STEP of its limit (_moving_dofs),
// not stiff (STIFF_ROWS); daref = -B J; t points into out. A decline code otherwise (the NumPy text then takes the
// state whole and names what it refuses)
inline int one_call_terms(const Model &m, const OneCallTables &T, const RowsOut &r, const Contacts &c, const int64_t *geom,
                          const double *q, const double *xpos, const double *xmat, const double *jac, const double *M,
                          OneCallTerms &out, ConstrainedTerms &t) {
    const int64_t nv = m.nv, nefc = r.sizes[0], ne = r.sizes[1];
    out.rows.clear();
    for (int64_t i = 0; i < nefc; i++) {                                // the limits, in row order (_analytic_rows)
        int64_t type = r.type[i];
        if (type == EQUALITY) {                                         // a joint equality's (_joint_equality_rows)
            if (m.eq_type[r.id[i]] != EQ_JOINT || !(r.R[i] > T.r_floor)) return ONE_CALL_ROW;
        } else if (type == LIMIT_JOINT) {
            int64_t kind = m.jnt_type[r.id[i]];
            if ((kind != JNT_HINGE && kind != JNT_SLIDE) || !(r.R[i] > T.r_floor)) return ONE_CALL_ROW;
            out.rows.push_back(i);
        } else if (type != FRICTION_DOF && type != CONTACT_FRICTIONLESS && type != CONTACT_PYRAMIDAL) {
            return ONE_CALL_ROW;                                        // differenced: a tendon's, an elliptic cone's
        }
    }
    const int64_t nlimit = int64_t(out.rows.size());
    for (int64_t i = 0; i < ne; i++) out.rows.push_back(i);             // the joint equalities' rows after the limits'
    const int64_t nequality = ne;
    for (int64_t k = 0; k < T.nlimited; k++) {                          // a limit row that may appear or leave
        double x = q[T.limited_adr[k]];
        double inside = std::min(x - T.limited_low[k], T.limited_high[k] - x);
        if (T.limited_ball[k] || std::fabs(inside - T.limited_margin[k]) < 4 * T.row_step) return ONE_CALL_NEAR_LIMIT;
    }
    out.plane_body.clear(), out.plane_dim.clear(), out.plane_origin.clear(), out.plane_frame.clear();
    out.plane_pos.clear(), out.plane_dist.clear(), out.plane_friction.clear(), out.plane_radius.clear();
    out.plane_axis.clear(), out.pairs.clear();
    for (int64_t k = 0; k < c.n; k++) {                                 // each contact a plane's (_plane_arrays) or a pair's
        int64_t g1 = geom[2 * k], g2 = geom[2 * k + 1], b1 = c.body1(k), b2 = c.body2(k), dim = c.dim(k);
        int64_t first = r.contact_row[k];
        if (g1 < 0 || g2 < 0 || first < 0) return ONE_CALL_CONTACT;
        if (c.solimp(k)[4] <= 1) return ONE_CALL_KINK;                  // _refuse_impedance_kinks' power 1
        int64_t kind = m.geom_type[g2];
        if (segment_geom(m.geom_type[g1]) && segment_geom(kind)) {       // after the planes' rows (_analytic_rows)
            out.pairs.push_back(k);
            continue;
        }
        if (m.geom_type[g1] != GEOM_PLANE || b2 < 0 || (b1 >= 0 && !T.static_body[b1])) return ONE_CALL_CONTACT;
        if ((kind != GEOM_SPHERE && kind != GEOM_BOX && kind != GEOM_CAPSULE) || (dim != 1 && dim != 3) ||
            !(r.R[first] > T.r_floor))
            return ONE_CALL_CONTACT;
        double axis[3] = {0, 0, 0};
        if (kind == GEOM_CAPSULE) {                                     // its axis: not upright (_analytic_plane_indices,
            double along, sine = axis_sine(T, xmat, b2, g2, c.frame(k), axis, along);   // _refuse_upright_capsules)
            if (1 - along * along < 1e-12 || (dim > 1 && sine < 4 * T.row_step)) return ONE_CALL_CONTACT;
            if (dim == 1) axis[0] = axis[1] = axis[2] = 0.0;
        }
        out.plane_axis.insert(out.plane_axis.end(), axis, axis + 3);
        out.plane_body.push_back(b2), out.plane_dim.push_back(dim);
        out.plane_origin.insert(out.plane_origin.end(), xpos + 3 * b2, xpos + 3 * b2 + 3);
        out.plane_frame.insert(out.plane_frame.end(), c.frame(k), c.frame(k) + 9);
        out.plane_pos.insert(out.plane_pos.end(), c.pos(k), c.pos(k) + 3);
        out.plane_dist.push_back(c.dist(k));
        out.plane_friction.insert(out.plane_friction.end(), c.friction(k), c.friction(k) + 5);
        out.plane_radius.push_back(kind == GEOM_BOX ? 0.0 : m.geom_size[3 * g2]);
        for (int64_t i = first; i < first + pyramid_rows(dim); i++) out.rows.push_back(i);
    }
    const int64_t nplane = int64_t(out.plane_body.size()), plane_end = int64_t(out.rows.size());
    out.pair_dJ.clear(), out.pair_ddist.clear(), out.pair_support.clear(), out.pair_count.clear();
    for (int64_t k : out.pairs) {                                       // the pairs' rows after the planes'
        int64_t g[2] = {geom[2 * k], geom[2 * k + 1]}, b[2] = {c.body1(k), c.body2(k)};
        int status = segment_terms(m, T, r, c, k, g, b, r.contact_row[k], xpos, xmat, jac, out);
        if (status != ONE_CALL_TAKEN) return status;
    }
    double diag = 0.0, stiffest = -STILL_INF;                           // stiff: a quadratic row's D against M's diagonal
    for (int64_t i = 0; i < nv; i++) diag = std::max(diag, std::fabs(M[i * nv + i]));
    for (int64_t i = 0; i < nefc; i++)
        if (r.state[i] == QUADRATIC) stiffest = std::max(stiffest, r.D[i]);
    if (stiffest > T.stiff_rows * diag) return ONE_CALL_STIFF;
    // dJ, dpos: the limits' (0, J), the joint equalities' (-poly'' on the second joint's dof, J), the pairs'
    const int64_t direct = nlimit + nequality, npair_rows = int64_t(out.rows.size()) - plane_end;
    out.dJ.assign(size_t((direct + npair_rows) * nv * nv), 0.0), out.dpos.resize(size_t((direct + npair_rows) * nv));
    for (int64_t k = 0; k < direct; k++)
        std::copy_n(&r.J[size_t(out.rows[size_t(k)] * nv)], nv, &out.dpos[size_t(k * nv)]);
    for (int64_t k = 0; k < nequality; k++) {                           // pos = x1 - ref1 - poly(x2 - ref2)
        int64_t e = r.id[k], j2 = m.eq_obj2id[e];
        if (j2 < 0) continue;
        const int64_t a2 = m.jnt_qposadr[j2], v2 = m.jnt_dofadr[j2];
        const double *coef = m.eq_data + 11 * e;
        const double dif = q[a2] - m.qpos0[a2];
        out.dJ[size_t((nlimit + k) * nv * nv + v2 * nv + v2)] = -(2 * coef[2] + 6 * coef[3] * dif + 12 * coef[4] * dif * dif);
    }
    std::copy(out.pair_dJ.begin(), out.pair_dJ.end(), out.dJ.begin() + direct * nv * nv);
    for (int64_t at = 0, k = 0; k < int64_t(out.pairs.size()); k++) {  // each pair's ddist on each of its rows
        int64_t rows = pyramid_rows(c.dim(out.pairs[size_t(k)]));
        for (int64_t i = 0; i < rows; i++, at++)
            std::copy_n(&out.pair_ddist[size_t(k * nv)], nv, &out.dpos[size_t((direct + at) * nv)]);
    }
    out.support.clear(), out.support_at.assign(1, 0);                   // the given rows' dofs: a limit's, an equality's
    for (int64_t k = 0; k < direct; k++) {                              // where its J is not zero (and its second dof)
        const double *J = &out.dpos[size_t(k * nv)];
        const int64_t j2 = k >= nlimit ? m.eq_obj2id[r.id[k - nlimit]] : -1, v2 = j2 >= 0 ? m.jnt_dofadr[j2] : -1;
        for (int64_t j = 0; j < nv; j++)
            if (J[j] != 0 || j == v2) out.support.push_back(int(j));
        out.support_at.push_back(int(out.support.size()));
    }
    for (size_t at = 0, p = 0; p < out.pair_count.size(); p++) {       // a pair's rows: its bodies' chains
        const int count = out.pair_count[p], rows = pyramid_rows(c.dim(out.pairs[p]));
        for (int i = 0; i < rows; i++) {
            out.support.insert(out.support.end(), out.pair_support.begin() + at, out.pair_support.begin() + at + count);
            out.support_at.push_back(int(out.support.size()));
        }
        at += size_t(count);
    }
    out.daref.resize(size_t(nefc * nv));                                // -B J (_aref_velocity_derivative)
    for (int64_t i = 0; i < nefc; i++)
        for (int64_t j = 0; j < nv; j++) out.daref[size_t(i * nv + j)] = -r.B[i] * r.J[size_t(i * nv + j)];
    t.nefc = nefc, t.nrows = int64_t(out.rows.size()), t.nmoving = 0, t.points = 4, t.ncone = r.ncone[0];
    t.stiff = false, t.step = 12 * T.row_step;
    t.J = r.J.data(), t.D = r.D.data(), t.aref = r.aref.data(), t.B = r.B.data(), t.K = r.K.data();
    t.imp = r.imp.data(), t.impP = r.impP.data(), t.pos = r.pos.data(), t.margin = r.margin.data();
    t.force = r.force.data(), t.state = r.state.data(), t.rows = out.rows.data(), t.moving = nullptr;
    t.cone_first = r.cone_first.data(), t.cone_dim = r.cone_dim.data(), t.cone_H = r.cone_H.data();
    t.dJ = out.dJ.data(), t.dpos = out.dpos.data(), t.Jpts = nullptr, t.fpts = nullptr, t.weights = T.weights;
    t.daref = out.daref.data();
    t.nplane = nplane, t.plane_at = nlimit + nequality, t.plane_rows = plane_end - nlimit - nequality;
    t.plane_body = out.plane_body.data(), t.plane_dim = out.plane_dim.data(), t.plane_origin = out.plane_origin.data();
    t.plane_frame = out.plane_frame.data(), t.plane_pos = out.plane_pos.data(), t.plane_dist = out.plane_dist.data();
    t.plane_friction = out.plane_friction.data(), t.plane_radius = out.plane_radius.data();
    t.plane_axis = out.plane_axis.data(), t.turns = T.turns;
    t.nanchor = 0, t.anchored = nullptr, t.anchor_dJ = t.anchor_dbias = t.anchor_dgap = nullptr;
    t.support = out.support.data(), t.support_at = out.support_at.data();
    return ONE_CALL_TAKEN;
}

}  // namespace
}  // namespace physai
