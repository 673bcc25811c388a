// GJK and EPA (src/physai/engine/gjk.py, MuJoCo 4's engine_collision_gjk.c), one contact, function by function with
// the NumPy text's names and block comments:
//
//     gjk(status, o1, o2)        the simplex's point nearest the origin, or a tetrahedron around it
//     polytope2/3/4, epa         the penetration depth and direction from GJK's last simplex
//     inflate, ccd               MuJoCo's mjc_ccd: spheres, capsules and margins taken off first, added back
//
// A shape is a CcdObject whose support function convex.h sets. Both always end within their iteration limits.
#pragma once

#include <array>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <type_traits>
#include <vector>

#include "spatial.h"

namespace physai {
namespace {

using V3 = std::array<double, 3>;
constexpr double GJK_MINVAL = 1e-15, GJK_MINVAL2 = 1e-30, GJK_MAXVAL2 = 1e20;
constexpr double MAX_LIMIT = std::numeric_limits<double>::max();

inline double dot3(const V3 &a, const V3 &b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
inline double norm3(const V3 &a) { return std::sqrt(dot3(a, a)); }
inline V3 cross3(const V3 &a, const V3 &b) {                          // a x b as a V3 (spatial.h's cross)
    V3 r;
    cross(a.data(), b.data(), r.data());
    return r;
}
inline V3 operator+(const V3 &a, const V3 &b) { return {a[0] + b[0], a[1] + b[1], a[2] + b[2]}; }
inline V3 operator-(const V3 &a, const V3 &b) { return {a[0] - b[0], a[1] - b[1], a[2] - b[2]}; }
inline V3 operator-(const V3 &a) { return {-a[0], -a[1], -a[2]}; }
inline V3 operator*(const V3 &a, double s) { return {a[0] * s, a[1] * s, a[2] * s}; }
inline V3 operator*(double s, const V3 &a) { return {s * a[0], s * a[1], s * a[2]}; }

// a list of at most N values kept in place, without allocating: the few weights, points and vertices of GJK's simplex
template <class T, size_t N> struct Few {
    static_assert(std::is_trivially_destructible_v<T>, "Few's slots are assigned unmade and never destroyed");
    union { T items[N]; };                                              // left unmade: only the first n are read
    size_t n = 0;
    Few() {}
    Few(std::initializer_list<T> values) { for (const T &x : values) push_back(x); }
    Few(const Few &o) : n(o.n) { for (size_t i = 0; i < n; i++) items[i] = o.items[i]; }
    // the first n values copied, not all N (a simplex of 4 vertices is 544 bytes: workspace only, the same values)
    Few &operator=(const Few &o) {
        n = o.n;
        for (size_t i = 0; i < n; i++) items[i] = o.items[i];
        return *this;
    }
    size_t size() const { return n; }
    bool empty() const { return n == 0; }
    void clear() { n = 0; }
    void push_back(const T &x) { items[n++] = x; }
    const T &back() const { return items[n - 1]; }
    void assign(size_t count, const T &x) { n = 0; while (n < count) items[n++] = x; }
    T &operator[](size_t i) { return items[i]; }
    const T &operator[](size_t i) const { return items[i]; }
    T *begin() { return items; }
    T *end() { return items + n; }
    const T *begin() const { return items; }
    const T *end() const { return items + n; }
};
using Weights = Few<double, 4>;
using Points = Few<V3, 4>;

// a geom for GJK (convex.Shape): kind, pose, size or mesh, margin, its support function, the last support vertex id,
// where a mesh's last support search ended (its next one starts there; -1: none yet)
struct CcdObject {
    int kind = 0;
    V3 pos{};
    const double *mat = nullptr, *size = nullptr;
    const void *mesh = nullptr;
    double margin = 0.0;
    int64_t vertex = -1, climbed = -1;
    bool polytope = false, rounded = false;
    V3 (*support)(CcdObject &, const V3 &) = nullptr;
    V3 (*saved_support)(CcdObject &, const V3 &) = nullptr;
    double saved_margin = 0.0;
};

// a point of A - B (gjk.Vertex); bare1, bare2: vert1, vert2 before the margins grew them
struct Vertex {
    V3 vert{}, vert1{}, vert2{};
    int64_t index1 = -1, index2 = -1;
    V3 bare1{}, bare2{};
};
using Simplex = Few<Vertex, 4>;                                         // GJK's simplex (at most a tetrahedron)

// what GJK and EPA find (gjk.Status)
struct Status {
    double tolerance = 1e-6;
    int64_t max_iterations = 35;
    double dist_cutoff = 0.0;
    V3 x1{}, x2{};
    double dist = 0.0;
    int nx = 0;
    bool separated = false;
    int64_t gjk_iterations = 0, epa_iterations = 0;
    Simplex simplex;                                                    // kept in place: no allocation per call
    Simplex face;                                                       // EPA's last face (multi-contact reads it)
    bool shallow = false;                                               // ended on a sphere's centre or capsule's segment
    double lower = -MAX_LIMIT;                                          // GJK's best lower bound on the distance (bounds[0])
};

// s_{A-B}(direction), each shape grown by half its margin
inline Vertex support(CcdObject &o1, CcdObject &o2, const V3 &d) {
    V3 bare1 = o1.support(o1, d), v1 = bare1;
    if (o1.margin > 0) v1 = bare1 + d * (0.5 * o1.margin);
    V3 nd = -d;
    V3 bare2 = o2.support(o2, nd), v2 = bare2;
    if (o2.margin > 0) v2 = bare2 + nd * (0.5 * o2.margin);
    return Vertex{v1 - v2, v1, v2, o1.vertex, o2.vertex, bare1, bare2};
}

// the support point of A - B towards the origin from x
inline Vertex gjk_support(CcdObject &o1, CcdObject &o2, const V3 &x, double x_norm) {
    return support(o1, o2, -(x * (1 / x_norm)));
}

// both shapes polytopes without margin
inline bool discrete(const CcdObject &o1, const CcdObject &o2) {
    return o1.margin == 0 && o2.margin == 0 && o1.polytope && o2.polytope;
}

// a / b with IEEE 754's answers for b = 0
inline double div(double a, double b) { return a / b; }

// sum coef_i points_i, in order
inline V3 lincomb(const Weights &coef, const Points &p) {
    V3 out = coef[0] * p[0];
    for (size_t i = 1; i < coef.size() && i < p.size(); i++) out = out + coef[i] * p[i];
    return out;
}

// the origin projected on the plane of v1 v2 v3; false for a degenerate triangle
// (C++: each later normal and the edge d31 computed only when the earlier normal does not settle it, the same values)
inline bool project_origin_plane(const V3 &v1, const V3 &v2, const V3 &v3, V3 &res) {
    V3 d21 = v2 - v1, d32 = v3 - v2;
    auto settles = [&res](const V3 &n, const V3 &v, bool &degenerate) {   // n <n, v> / <n, n> when well conditioned
        double nv = dot3(n, v), nn = dot3(n, n);
        degenerate = nn == 0;
        if (degenerate || !(nv != 0 && nn > GJK_MINVAL)) return false;
        res = n * (nv / nn);
        return true;
    };
    bool degenerate;
    if (settles(cross3(d32, d21), v2, degenerate)) return true;
    if (degenerate) return false;
    V3 d31 = v3 - v1;
    if (settles(cross3(d21, d31), v1, degenerate)) return true;
    if (degenerate) return false;
    V3 n = cross3(d31, d32);
    res = n * div(dot3(n, v3), dot3(n, n));
    return true;
}

inline int same_sign(double a, double b) { return a > 0 && b > 0 ? 1 : a < 0 && b < 0 ? -1 : 0; }

inline double det3(const V3 &a, const V3 &b, const V3 &c) {
    return dot3(a, cross3(b, c));
}

Weights s1d(const V3 &s1, const V3 &s2);
Weights s2d(const V3 &s1, const V3 &s2, const V3 &s3);

// of sub-simplex solutions (weights, kept vertex ids, their points), the weights (n) of the nearest (first of equals)
struct SubSolution {
    Weights weights;
    Few<int, 4> keep;
    Points points;
};
inline Weights nearest_of_faces(const Few<SubSolution, 4> &candidates, int n) {
    Weights best;
    best.assign(size_t(n), 0.0);
    double dmin = MAX_LIMIT;
    for (const SubSolution &c : candidates) {
        V3 x = lincomb(c.weights, c.points);
        double d = dot3(x, x);
        if (d < dmin) {
            best.assign(size_t(n), 0.0), dmin = d;
            for (size_t i = 0; i < c.keep.size(); i++) best[size_t(c.keep[i])] = c.weights[i];
        }
    }
    return best;
}

// C / sum C when every C shares det's sign, else the nearest of the faces without a vertex whose C does not
template <class Sub>
inline Weights inside_or_faces(const Weights &C, double det, const Points &pts, Sub sub) {
    int n = int(pts.size());
    Few<int, 4> comp;
    comp.assign(pts.size(), 0);
    bool all = true;
    for (int i = 0; i < n; i++) comp[size_t(i)] = same_sign(det, C[size_t(i)]), all = all && comp[size_t(i)];
    if (all) {
        double total = C[0];
        for (int i = 1; i < n; i++) total += C[size_t(i)];             // summed in order (s3d: det itself)
        Weights out;
        out.assign(pts.size(), 0.0);
        for (int i = 0; i < n; i++) out[size_t(i)] = C[size_t(i)] / total;
        return out;
    }
    Few<SubSolution, 4> faces;
    for (int drop = 0; drop < n; drop++) {
        if (comp[size_t(drop)]) continue;
        SubSolution s;
        for (int i = 0; i < n; i++)
            if (i != drop) s.keep.push_back(i), s.points.push_back(pts[size_t(i)]);
        s.weights = sub(s.points);
        faces.push_back(s);
    }
    return nearest_of_faces(faces, n);
}

// weights of a tetrahedron's point nearest the origin
inline Weights s3d(const V3 &s1, const V3 &s2, const V3 &s3, const V3 &s4) {
    Weights C = {-det3(s2, s3, s4), det3(s1, s3, s4), -det3(s1, s2, s4), det3(s1, s2, s3)};
    double m_det = C[0] + C[1] + C[2] + C[3];
    return inside_or_faces(C, m_det, {s1, s2, s3, s4}, [](const Points &p) { return s2d(p[0], p[1], p[2]); });
}

// the largest minor M_i4 of [s1 s2 s3; 1 1 1] and the two axes kept: (s2 - s1) x (s3 - s1), up to sign, from the edges
inline double minors(const V3 &s1, const V3 &s2, const V3 &s3, int &x, int &y) {
    V3 d21 = s2 - s1, d31 = s3 - s1;
    double m14 = d21[1] * d31[2] - d21[2] * d31[1];
    double m24 = d21[0] * d31[2] - d21[2] * d31[0];
    double m34 = d21[0] * d31[1] - d21[1] * d31[0];
    double mu1 = std::fabs(m14), mu2 = std::fabs(m24), mu3 = std::fabs(m34);
    if (mu1 >= mu2 && mu1 >= mu3) return x = 1, y = 2, m14;
    if (mu2 >= mu3) return x = 0, y = 2, m24;
    return x = 0, y = 1, m34;
}

// the signed areas C3i of p with each edge of the triangle, in the plane of axes x, y: u_j x u_k of the offsets from p
inline Weights areas(const V3 &p, const V3 &s1, const V3 &s2, const V3 &s3, int x, int y) {
    auto offset = [&](const V3 &s) { return std::array<double, 2>{s[x] - p[x], s[y] - p[y]}; };
    std::array<double, 2> u1 = offset(s1), u2 = offset(s2), u3 = offset(s3);
    auto area = [](const std::array<double, 2> &a, const std::array<double, 2> &b) { return a[0] * b[1] - b[0] * a[1]; };
    return {area(u2, u3), area(u3, u1), area(u1, u2)};
}

// weights of a triangle's point nearest the origin; a degenerate triangle: the nearer of its edges s2 s3 and s1 s3
Weights s2d(const V3 &s1, const V3 &s2, const V3 &s3) {
    V3 p_o;
    if (!project_origin_plane(s1, s2, s3, p_o)) {                       // degenerate: the nearer of two edges
        return nearest_of_faces({{s1d(s2, s3), {1, 2}, {s2, s3}}, {s1d(s1, s3), {0, 2}, {s1, s3}}}, 3);
    }
    int x, y;
    double m_max = minors(s1, s2, s3, x, y);
    return inside_or_faces(areas(p_o, s1, s2, s3, x, y), m_max, {s1, s2, s3},
                           [](const Points &p) { return s1d(p[0], p[1]); });
}

// weights of a segment's point nearest the origin: the projection when inside, else the nearer end
Weights s1d(const V3 &s1, const V3 &s2) {
    V3 diff = s2 - s1;
    double dd = dot3(diff, diff);
    if (dd < GJK_MINVAL2) return {0.0, 1.0};
    V3 p_o = s2 + diff * -(dot3(s2, diff) / dd);
    int index = 0;
    double mu_max = s1[0] - s2[0];
    for (int i = 1; i < 3; i++)
        if (std::fabs(s1[i] - s2[i]) >= std::fabs(mu_max)) index = i, mu_max = s1[i] - s2[i];
    double c1 = p_o[index] - s2[index], c2 = s1[index] - p_o[index];
    if (same_sign(mu_max, c1) && same_sign(mu_max, c2)) return {c1 / mu_max, c2 / mu_max};
    return same_sign(mu_max, c1) ? Weights{1.0, 0.0} : Weights{0.0, 1.0};
}

// barycentric weights of the simplex's point nearest the origin
inline Weights subdistance(const Simplex &s) {
    if (s.size() == 4) return s3d(s[0].vert, s[1].vert, s[2].vert, s[3].vert);
    if (s.size() == 3) return s2d(s[0].vert, s[1].vert, s[2].vert);
    if (s.size() == 2) return s1d(s[0].vert, s[1].vert);
    return {1.0};
}

inline Points verts_of(const Simplex &s, int which) {
    Points out;
    for (const Vertex &v : s) out.push_back(which == 0 ? v.vert : which == 1 ? v.vert1 : v.vert2);
    return out;
}

// the point of the simplex's affine hull nearest the origin: projected on its line or plane, else lincomb
inline V3 nearest(const Simplex &s, const Weights &lam) {
    if (s.size() == 2) {
        V3 d = s[1].vert - s[0].vert;
        double dd = dot3(d, d);
        if (dd >= GJK_MINVAL2) return s[1].vert + d * (-dot3(s[1].vert, d) / dd);
    }
    if (s.size() == 3) {
        V3 projected;
        if (project_origin_plane(s[0].vert, s[1].vert, s[2].vert, projected)) return projected;
    }
    return lincomb(lam, verts_of(s, 0));
}

// status of shapes proven apart at iteration k
inline void apart(Status &status, int64_t k) {
    status.separated = true, status.gjk_iterations = k, status.simplex.clear(), status.nx = 0, status.dist = MAX_LIMIT;
}

// GJK's result: the witness points, a last separation check, the distance and the simplex
inline void finish(Status &status, CcdObject &o1, CcdObject &o2, const Simplex &simplex,
                   const Weights &lam, const V3 &x, double dist, int64_t k) {
    if (!simplex.empty()) status.x1 = lincomb(lam, verts_of(simplex, 1)), status.x2 = lincomb(lam, verts_of(simplex, 2));
    double x_norm = norm3(x);
    if (simplex.size() <= 3 && !status.separated && x_norm >= GJK_MINVAL &&
        dot3(x, gjk_support(o1, o2, x, x_norm).vert) > 0)
        status.separated = true;
    status.nx = 1, status.gjk_iterations = k, status.dist = dist;
    status.simplex = simplex;
}

// GJK from the guess x = x1 - x2 ((1, 0, 0) when they coincide)
inline void gjk(Status &status, CcdObject &o1, CcdObject &o2) {
    bool get_dist = status.dist_cutoff > 0;
    Simplex simplex;
    Weights lam = {1.0};
    status.separated = false;
    bool polytopes = discrete(o1, o2);
    double epsilon = polytopes ? 0.0 : 0.5 * status.tolerance * status.tolerance;
    double min_norm = polytopes || get_dist ? GJK_MINVAL : status.tolerance;
    V3 x = status.x1 - status.x2;
    double x_norm = norm3(x);
    if (x_norm < GJK_MINVAL) x = {1.0, 0.0, 0.0}, x_norm = 1.0;         // coincident centres: any direction
    int64_t k = 0;
    while (k < status.max_iterations) {
        Vertex s = gjk_support(o1, o2, x, x_norm);
        double lower = dot3(x, s.vert);                                 // |x| times a lower bound on the distance
        status.lower = std::max(status.lower, lower / x_norm);
        if (lower > 0) {
            status.separated = true;
            if (!get_dist || (status.dist_cutoff < MAX_LIMIT && lower >= status.dist_cutoff * x_norm)) {
                apart(status, k);
                return;
            }
        }
        if (k && dot3(x, x - s.vert) < epsilon) break;                  // duality gap <x, x - s> closed
        simplex.push_back(s);                                           // grown by s
        Weights weights = subdistance(simplex);
        size_t kept = 0;                                                // drop the points not needed (in place: no copy
        lam.clear();                                                    // of the grown simplex, the same points kept)
        for (size_t i = 0; i < simplex.size(); i++)
            if (weights[i] != 0) {
                if (kept != i) simplex[kept] = simplex[i];
                kept++, lam.push_back(weights[i]);
            }
        simplex.n = kept;
        if (simplex.empty()) {                                          // should not occur
            apart(status, k);
            return;
        }
        if (simplex.size() == 4) {                                      // a tetrahedron around the origin
            finish(status, o1, o2, simplex, lam, x, status.separated ? x_norm : 0.0, k);
            return;
        }
        double x_norm_prev = x_norm;
        x = nearest(simplex, lam);
        x_norm = norm3(x);
        if (x_norm < (simplex.size() == 1 ? GJK_MINVAL : min_norm)) break;     // touching
        if (k && std::fabs(x_norm - x_norm_prev) < GJK_MINVAL) break;            // stalled
        k++;
    }
    finish(status, o1, o2, simplex, lam, x, x_norm, k);
}

// a lower bound [m] on the distance of two shapes as they are (gjk.distance_lower_bound): GJK's best <x, s> / |x|,
// ended once it passes cutoff > 0 [m]
inline double distance_lower_bound(CcdObject &o1, CcdObject &o2, double cutoff, double tolerance, int64_t iterations) {
    Status status;
    status.tolerance = tolerance, status.max_iterations = iterations, status.dist_cutoff = cutoff;
    status.x1 = o1.pos, status.x2 = o2.pos;
    gjk(status, o1, o2);
    return status.lower;
}

// ---------------------------------------------------------------- EPA

// a triangle of the polytope (gjk.Face); made unset (C++: attach_face sets every field, no zeroing first)
struct Face {
    int v[3];
    int adj[3];
    V3 proj;
    double dist2;
    int index;
    Face() {}
};

// EPA's polytope (gjk.Polytope)
struct Polytope {
    int64_t max_faces = 0;
    std::vector<Vertex> verts;
    std::vector<Face> faces;
    std::vector<int> map;
    V3 center{};
    std::vector<std::array<int, 2>> horizon;
};

// the support point along d of length dnorm ((1, 0, 0) for a zero d) added; its id
inline int epa_support(Polytope &pt, CcdObject &o1, CcdObject &o2, const V3 &d, double dnorm) {
    V3 direction = dnorm > GJK_MINVAL ? V3{d[0] / dnorm, d[1] / dnorm, d[2] / dnorm} : V3{1.0, 0.0, 0.0};
    pt.verts.push_back(support(o1, o2, direction));
    return int(pt.verts.size()) - 1;
}

// a face v1 v2 v3 added; its squared distance to the origin (0: degenerate)
inline double attach_face(Polytope &pt, int v1, int v2, int v3, int adj1, int adj2, int adj3) {
    // filled in its place (C++: a face built aside and then copied stalled on the forwarding of its own stores)
    Face &face = pt.faces.emplace_back();
    face.v[0] = v1, face.v[1] = v2, face.v[2] = v3, face.adj[0] = adj1, face.adj[1] = adj2, face.adj[2] = adj3;
    face.index = -1;
    V3 v;
    bool ok = project_origin_plane(pt.verts[size_t(v3)].vert, pt.verts[size_t(v2)].vert, pt.verts[size_t(v1)].vert, v);
    if (!ok) return face.proj = V3{}, face.dist2 = 0.0;                 // degenerate: no projection
    if (dot3(v, pt.verts[size_t(v1)].vert - pt.center) < 0) v = -v;    // point it out of the polytope
    face.proj = v, face.dist2 = dot3(v, v);
    return face.dist2;
}

// every face of the starting polytope in the map; 0 (success)
inline int map_all(Polytope &pt) {
    pt.map.clear();
    for (size_t i = 0; i < pt.faces.size(); i++) pt.map.push_back(int(i)), pt.faces[i].index = int(i);
    return 0;
}

int polytope3(Polytope &pt, Status &status, CcdObject &o1, CcdObject &o2);

// polytope3 from a triangle of the polytope's vertices, the polytope emptied
inline int restart3(Polytope &pt, Status &status, int a, int b, int c, CcdObject &o1, CcdObject &o2) {
    status.simplex = {pt.verts[size_t(a)], pt.verts[size_t(b)], pt.verts[size_t(c)]};
    pt.verts.clear(), pt.faces.clear(), pt.map.clear();
    return polytope3(pt, status, o1, o2);
}

// the rotation by 120 degrees about axis, rows
inline void rotation_120(const V3 &axis, double R[9]) {
    V3 u = axis * div(1.0, norm3(axis));
    const double sin = 0.86602540378, cos = -0.5;
    R[0] = cos + u[0] * u[0] * (1 - cos), R[1] = u[0] * u[1] * (1 - cos) - u[2] * sin, R[2] = u[0] * u[2] * (1 - cos) + u[1] * sin;
    R[3] = u[1] * u[0] * (1 - cos) + u[2] * sin, R[4] = cos + u[1] * u[1] * (1 - cos), R[5] = u[1] * u[2] * (1 - cos) - u[0] * sin;
    R[6] = u[0] * u[2] * (1 - cos) - u[1] * sin, R[7] = u[1] * u[2] * (1 - cos) + u[0] * sin, R[8] = cos + u[2] * u[2] * (1 - cos);
}

inline V3 mat_vec(const double R[9], const V3 &v) {
    V3 r;
    mat3_times(R, v.data(), r.data());
    return r;
}

// nonzero when the ray v1 -> v2 passes through the triangle v3 v4 v5
inline int ray_triangle(const V3 &v1, const V3 &v2, const V3 &v3, const V3 &v4, const V3 &v5) {
    V3 d12 = v2 - v1, d13 = v3 - v1, d14 = v4 - v1, d15 = v5 - v1;
    double vol[3] = {det3(d13, d14, d12), det3(d14, d15, d12), det3(d15, d13, d12)};
    if (vol[0] >= 0 && vol[1] >= 0 && vol[2] >= 0) return 1;
    return vol[0] <= 0 && vol[1] <= 0 && vol[2] <= 0 ? -1 : 0;
}

// polytope2's faces: vertex slots (of v1 .. v5) and neighbours
constexpr int HEXAHEDRON[6][6] = {{0, 2, 3, 1, 3, 2}, {0, 4, 2, 2, 4, 0}, {0, 3, 4, 0, 5, 1},
                                  {1, 3, 2, 5, 0, 4}, {1, 2, 4, 3, 1, 5}, {1, 4, 3, 4, 2, 3}};

// rayTriangle's signed volumes of the line v1 + t diff with the edges a b, b c, c a of a triangle
inline std::array<double, 3> ring_volumes(const V3 &v1, const V3 &diff, const V3 &a, const V3 &b, const V3 &c) {
    V3 da = a - v1, db = b - v1, dc = c - v1;
    return {det3(da, db, diff), det3(db, dc, diff), det3(dc, da, diff)};
}

// whether the line passes through the triangle: its volumes all at least tol, or all at most -tol
inline bool through(const std::array<double, 3> &vols, double tol) {
    return (vols[0] >= tol && vols[1] >= tol && vols[2] >= tol) || (vols[0] <= -tol && vols[1] <= -tol && vols[2] <= -tol);
}

// gjk._convex_ring: where the line misses the ring's triangle, the support point across the edge of the least volume
// replaces the first of its ends (then the third vertex) that makes the line pass through it
inline void convex_ring(Polytope &pt, CcdObject &o1, CcdObject &o2, const V3 &v1, const V3 &diff, const int ring[3]) {
    double dd = dot3(diff, diff);
    double tol = dd * 1e-15 * std::sqrt(dd);
    auto vols = ring_volumes(v1, diff, pt.verts[size_t(ring[0])].vert, pt.verts[size_t(ring[1])].vert, pt.verts[size_t(ring[2])].vert);
    if (through(vols, tol)) return;
    int a = ring[0], b = ring[1], c = ring[2];
    if (vols[1] >= vols[0] && vols[2] >= vols[0]) {
    } else if (vols[1] <= vols[0] && vols[1] <= vols[2]) {
        a = ring[1], b = ring[2], c = ring[0];
    } else {
        a = ring[2], b = ring[0], c = ring[1];
    }
    V3 edge = pt.verts[size_t(b)].vert - pt.verts[size_t(a)].vert;
    double tilt = 0.5 * dd <= dot3(pt.verts[size_t(c)].vert - v1, diff) ? 0.001 : -0.001;
    V3 d = diff * (norm3(edge) * tilt) + cross3(edge, diff);
    Vertex w = pt.verts[size_t(epa_support(pt, o1, o2, d, norm3(d)))];
    pt.verts.pop_back();
    for (int slot : {a, b, c}) {
        V3 p[3];
        for (int k = 0; k < 3; k++) p[k] = ring[k] == slot ? w.vert : pt.verts[size_t(ring[k])].vert;
        if (through(ring_volumes(v1, diff, p[0], p[1], p[2]), tol)) {
            pt.verts[size_t(slot)] = w;
            return;
        }
    }
}

// EPA's start from a segment: a hexahedron of three support points around it (gjk.polytope2)
inline int polytope2(Polytope &pt, Status &status, CcdObject &o1, CcdObject &o2) {
    V3 v1 = status.simplex[0].vert, v2 = status.simplex[1].vert;
    V3 diff = v2 - v1, e{0.0, 0.0, 0.0};
    int axis = 0;                                                       // the axis most across the segment
    for (int i = 1; i < 3; i++)
        if (std::fabs(diff[i]) < std::fabs(diff[axis])) axis = i;
    e[axis] = 1.0;
    V3 d1 = cross3(e, diff);
    double R[9];
    rotation_120(diff, R);
    V3 d2 = mat_vec(R, d1), d3 = mat_vec(R, d2);
    int ids[5] = {int(pt.verts.size()), int(pt.verts.size()) + 1, 0, 0, 0};
    pt.verts.push_back(status.simplex[0]), pt.verts.push_back(status.simplex[1]);
    ids[2] = epa_support(pt, o1, o2, d1, norm3(d1));
    ids[3] = epa_support(pt, o1, o2, d2, norm3(d2));
    ids[4] = epa_support(pt, o1, o2, d3, norm3(d3));
    convex_ring(pt, o1, o2, v1, diff, ids + 2);
    const V3 &p3 = pt.verts[size_t(ids[2])].vert, &p4 = pt.verts[size_t(ids[3])].vert, &p5 = pt.verts[size_t(ids[4])].vert;
    pt.center = ((((v1 + v2) + p3) + p4) + p5) * 0.2;
    V3 r3 = p3, r4 = p4, r5 = p5;                                       // copies: restart3 clears the vertices
    for (const auto &f : HEXAHEDRON)
        if (attach_face(pt, ids[f[0]], ids[f[1]], ids[f[2]], f[3], f[4], f[5]) < GJK_MINVAL2)
            return restart3(pt, status, ids[f[0]], ids[f[1]], ids[f[2]], o1, o2);
    if (!ray_triangle(v1, v2, r3, r4, r5)) return 2;                     // mjEPA_P2_NONCONVEX
    return map_all(pt);
}

// the affine coordinates of p on the triangle v1 v2 v3
inline Weights tri_affine(const V3 &v1, const V3 &v2, const V3 &v3, const V3 &p) {
    int x, y;
    minors(v1, v2, v3, x, y);
    Weights C = areas(p, v1, v2, v3, x, y);
    double total = C[0] + C[1] + C[2];
    for (double &c : C) c = div(c, total);
    return C;
}

// whether p lies on the triangle v1 v2 v3
inline bool tri_point_intersect(const V3 &v1, const V3 &v2, const V3 &v3, const V3 &p) {
    Weights lam = tri_affine(v1, v2, v3, p);
    if (lam[0] < 0 || lam[1] < 0 || lam[2] < 0) return false;
    return norm3(v1 * lam[0] + v2 * lam[1] + v3 * lam[2] - p) < GJK_MINVAL;
}

// whether the origin and p3 lie strictly on the same side of the plane p0 p1 p2
inline bool same_side(const V3 &p0, const V3 &p1, const V3 &p2, const V3 &p3) {
    V3 n = cross3(p1 - p0, p2 - p0);
    double dot1 = dot3(n, p3 - p0), dot2 = dot3(n, -p0);
    return (dot1 > 0 && dot2 > 0) || (dot1 < 0 && dot2 < 0);
}

// whether the origin lies inside the tetrahedron
inline bool test_tetra(const V3 &p0, const V3 &p1, const V3 &p2, const V3 &p3) {
    return same_side(p0, p1, p2, p3) && same_side(p1, p2, p3, p0) && same_side(p2, p3, p0, p1) && same_side(p3, p0, p1, p2);
}

// polytope3's faces: slots (of v1, v2, v3, v4, v5) and neighbours; face j lacks v OPPOSITE3[j]
constexpr int GLUED3[6][6] = {{3, 0, 1, 1, 3, 2}, {3, 2, 0, 2, 4, 0}, {3, 1, 2, 0, 5, 1},
                              {4, 1, 0, 5, 0, 4}, {4, 0, 2, 3, 1, 5}, {4, 2, 1, 4, 2, 3}};
constexpr int OPPOSITE3[6] = {2, 1, 0, 2, 1, 0};

// the hexahedron of the triangle ids[0..2] and the apexes ids[3] (on its normal's side), ids[4] as the polytope's
// faces; false when the origin is within MINDIST3 of a face's plane (gjk._glue)
inline bool glue3(Polytope &pt, const int ids[5]) {
    for (const auto &f : GLUED3)
        if (attach_face(pt, ids[f[0]], ids[f[1]], ids[f[2]], f[3], f[4], f[5]) < GJK_MINVAL2) return false;
    return true;
}

// EPA's start from a triangle: the support points along its normal both ways make a hexahedron; where that is not
// convex, the hull glued the same way on the triangle (v_k, v5, v4) of the vertex opposite the edge the far point
// sees, as MuJoCo 4.0 starts (gjk.polytope3)
int polytope3(Polytope &pt, Status &status, CcdObject &o1, CcdObject &o2) {
    V3 v1 = status.simplex[0].vert, v2 = status.simplex[1].vert, v3 = status.simplex[2].vert;
    pt.center = (v1 + v2 + v3) * (1.0 / 3.0);
    V3 n = cross3(v2 - v1, v3 - v1);
    double n_norm = norm3(n);
    if (n_norm < GJK_MINVAL) return 3;                                  // mjEPA_P3_BAD_NORMAL
    int i1 = int(pt.verts.size());
    for (int j = 0; j < 3; j++) pt.verts.push_back(status.simplex[size_t(j)]);
    int i5 = epa_support(pt, o1, o2, -n, n_norm);
    int i4 = epa_support(pt, o1, o2, n, n_norm);
    V3 v4 = pt.verts[size_t(i4)].vert, v5 = pt.verts[size_t(i5)].vert;
    if (tri_point_intersect(v1, v2, v3, v4)) return 4;
    if (tri_point_intersect(v1, v2, v3, v5)) return 5;
    if (status.dist > 10 * GJK_MINVAL && !test_tetra(v1, v2, v3, v4) && !test_tetra(v1, v2, v3, v5))
        return 6;                                                       // mjEPA_P3_MISSING_ORIGIN
    const int ids[3] = {i1, i1 + 1, i1 + 2}, start[5] = {i1, i1 + 1, i1 + 2, i4, i5};
    if (!glue3(pt, start)) return 7;                                    // mjEPA_P3_ORIGIN_ON_FACE
    int near = dot3(n, v1) < 0 ? i4 : i5, far = near == i4 ? i5 : i4; // the origin on n's side: v4 nearer it
    V3 w = pt.verts[size_t(far)].vert;
    int seen = -1;
    for (int j = 0; j < 6 && seen < 0; j++) {
        const Face &f = pt.faces[size_t(j)];
        if ((f.v[0] == near || f.v[1] == near || f.v[2] == near) && dot3(f.proj, w) - f.dist2 > GJK_MINVAL)
            seen = j;                                                   // far sees a face of the near tetrahedron
    }
    if (seen >= 0) {                                                    // not convex: the hull, glued on (v_k, v5, v4)
        int k = OPPOSITE3[seen];
        const int hull[5] = {ids[k], i5, i4, ids[(k + 1) % 3], ids[(k + 2) % 3]};
        std::vector<Face> saved = pt.faces;
        V3 center = pt.center;
        pt.faces.clear();
        pt.center = (pt.verts[size_t(hull[0])].vert + v5 + v4) * (1.0 / 3.0);
        if (!glue3(pt, hull)) pt.faces = saved, pt.center = center;     // a degenerate face: the glued one
    }
    return map_all(pt);
}

// EPA's start from GJK's tetrahedron; the origin on a face: that face's triangle
inline int polytope4(Polytope &pt, Status &status, CcdObject &o1, CcdObject &o2) {
    int i1 = int(pt.verts.size());
    for (int j = 0; j < 4; j++) pt.verts.push_back(status.simplex[size_t(j)]);
    const V3 &a = pt.verts[size_t(i1)].vert, &b = pt.verts[size_t(i1 + 1)].vert, &c = pt.verts[size_t(i1 + 2)].vert,
             &d = pt.verts[size_t(i1 + 3)].vert;
    pt.center = (((a + b) + c) + d) * 0.25;
    int i2 = i1 + 1, i3 = i1 + 2, i4 = i1 + 3;
    const int faces[4][6] = {{i1, i2, i3, 1, 3, 2}, {i1, i4, i2, 2, 3, 0}, {i1, i3, i4, 0, 3, 1}, {i4, i3, i2, 2, 0, 1}};
    for (const auto &f : faces)
        if (attach_face(pt, f[0], f[1], f[2], f[3], f[4], f[5]) < GJK_MINVAL2)
            return restart3(pt, status, f[0], f[1], f[2], o1, o2);
    V3 p0 = pt.verts[size_t(i1)].vert, p1 = pt.verts[size_t(i2)].vert, p2 = pt.verts[size_t(i3)].vert, p3 = pt.verts[size_t(i4)].vert;
    if (!test_tetra(p0, p1, p2, p3)) return 8;                          // mjEPA_P4_MISSING_ORIGIN
    return map_all(pt);
}

// face f out of the map (the map's last face takes its place) and marked deleted
inline void delete_face(Polytope &pt, int f) {
    Face &face = pt.faces[size_t(f)];
    if (face.index >= 0) {
        int last = pt.map.back();
        pt.map.pop_back();
        if (last != f) pt.map[size_t(face.index)] = last, pt.faces[size_t(last)].index = face.index;
    }
    face.index = -2;
}

// a triangle's next corner or edge ((i + 1) % 3 without a division)
constexpr int NEXT3[5] = {1, 2, 0, 1, 2};

// the edge of face that starts at vertex
inline int edge_of(const Face &face, int vertex) { return face.v[0] == vertex ? 0 : face.v[1] == vertex ? 1 : 2; }

// whether w sees face f (entered across its edge e): then f is deleted and its other two edges searched
inline bool horizon_from(Polytope &pt, int f, int e, const V3 &w) {
    const Face &face = pt.faces[size_t(f)];                             // read only (delete_face sets its index)
    if (dot3(face.proj, w) - face.dist2 <= GJK_MINVAL) return false;
    delete_face(pt, f);
    for (int k = 1; k < 3; k++) {
        int i = NEXT3[e + k - 1], adj = face.adj[i];                 // (e + k) % 3
        if (pt.faces[size_t(adj)].index > -2) {
            int adj_edge = edge_of(pt.faces[size_t(adj)], face.v[NEXT3[i]]);
            if (!horizon_from(pt, adj, adj_edge, w)) pt.horizon.push_back({adj, adj_edge});
        }
    }
    return true;
}

// the horizon of the new point w seen from face f
inline void horizon(Polytope &pt, int f, const V3 &w) {
    delete_face(pt, f);
    const Face &face = pt.faces[size_t(f)];                             // no face is added while the horizon is found
    for (int i = 0; i < 3; i++) {
        int adj = face.adj[i];
        int adj_edge = edge_of(pt.faces[size_t(adj)], face.v[NEXT3[i]]);
        if ((i == 0 || pt.faces[size_t(adj)].index > -2) && !horizon_from(pt, adj, adj_edge, w))
            pt.horizon.push_back({adj, adj_edge});
    }
}

// the witness points of face in status; -|v|
inline double epa_witness(const Polytope &pt, const Face &face, Status &status) {
    const Vertex &a = pt.verts[size_t(face.v[0])], &b = pt.verts[size_t(face.v[1])], &c = pt.verts[size_t(face.v[2])];
    Weights lam = tri_affine(a.vert, b.vert, c.vert, face.proj);
    status.x1 = lincomb(lam, {a.vert1, b.vert1, c.vert1});
    status.x2 = lincomb(lam, {a.vert2, b.vert2, c.vert2});
    return -std::sqrt(face.dist2);
}

// the new vertex wi joined to each horizon edge by a face; false on a degenerate new face
inline bool join(Polytope &pt, int wi, double lower2, double upper2) {
    int nfaces = int(pt.faces.size()), nedges = int(pt.horizon.size());
    for (int i = 0; i < nedges; i++) {
        int h = pt.horizon[size_t(i)][0], e = pt.horizon[size_t(i)][1];
        int v1 = pt.faces[size_t(h)].v[e], v2 = pt.faces[size_t(h)].v[NEXT3[e]];
        int cur = nfaces + i;
        pt.faces[size_t(h)].adj[e] = cur;
        int previous = i == 0 ? nfaces + nedges - 1 : cur - 1;
        double dist2 = attach_face(pt, wi, v2, v1, previous, h, nfaces + (i + 1 < nedges ? i + 1 : 0));
        if (dist2 == 0) return false;
        if (lower2 <= dist2 && dist2 <= upper2) {
            pt.faces.back().index = int(pt.map.size());
            pt.map.push_back(int(pt.faces.size()) - 1);
        }
    }
    return true;
}

// EPA: the nearest face bounds the depth below, the support point along it above; a degenerate new face ends it on
// the nearest face found (gjk.epa)
inline int epa(Status &status, Polytope &pt, CcdObject &o1, CcdObject &o2) {
    double upper = MAX_LIMIT, upper2 = MAX_LIMIT;
    int f = -1;
    bool polytopes = discrete(o1, o2);
    double tolerance = polytopes ? GJK_MINVAL : status.tolerance;
    int64_t kmax = status.max_iterations < 1000 ? status.max_iterations : 1000, k = 0;
    while (k < kmax) {
        int previous = f;
        double lower2 = MAX_LIMIT;
        f = -1;
        for (int i : pt.map)                                            // the face nearest the origin
            if (pt.faces[size_t(i)].dist2 < lower2) f = i, lower2 = pt.faces[size_t(i)].dist2;
        if (f < 0 || lower2 > upper2) {                                 // none valid: the previous one
            f = previous;
            break;
        }
        if (lower2 <= 0) break;                                         // the origin on a face's plane
        double lower = std::sqrt(lower2);
        V3 v = pt.faces[size_t(f)].proj;
        int wi = epa_support(pt, o1, o2, v, lower);
        const Vertex &w = pt.verts[size_t(wi)];                         // valid to its last use: horizon adds no vertex
        double upper_k = dot3(v, w.vert) / lower;
        if (upper_k < upper) upper = upper_k, upper2 = upper_k * upper_k;
        if (upper_k - lower < tolerance) {                              // this support point closes the gap
            if (k == 0 && lower - tolerance > upper) f = -1;            // no depth after all
            break;
        }
        if (polytopes) {                                                // a vertex seen before
            bool seen = false;                                          // the first match ends the search
            for (size_t i = 0; i + 1 < pt.verts.size() && !seen; i++)
                seen = pt.verts[i].index1 == w.index1 && pt.verts[i].index2 == w.index2;
            if (seen) break;
        }
        horizon(pt, f, w.vert);
        if (pt.horizon.size() < 3) {                                    // unrecoverable
            f = -1;
            break;
        }
        if (int64_t(pt.horizon.size()) > pt.max_faces - int64_t(pt.faces.size())) break;   // out of room
        if (!join(pt, wi, lower2, upper2)) {                           // a degenerate new face: keep the nearest
            pt.horizon.clear();
            break;
        }
        pt.horizon.clear();
        if (pt.map.empty() || f < 0) break;
        k++;
    }
    status.epa_iterations = k;
    if (f >= 0) {
        status.dist = epa_witness(pt, pt.faces[size_t(f)], status), status.nx = 1;
    } else {
        status.dist = 0.0, status.nx = 0;
    }
    return f;
}

// witness points moved out by margin1, margin2 along the unit direction n from geom 1 into geom 2 (gjk.inflate_along)
inline void inflate_along(V3 &x1, V3 &x2, const V3 &n, double margin1, double margin2) {
    if (margin1) x1 = x1 + margin1 * n;
    if (margin2) x2 = x2 - margin2 * n;
}

// the witness points of a point or segment moved out by the radii along x2 - x1, the distance shortened
inline void inflate(Status &status, double margin1, double margin2) {
    V3 n = status.x2 - status.x1;
    double length = norm3(n);
    n = length >= GJK_MINVAL ? n * (1 / length) : V3{1.0, 0.0, 0.0};
    inflate_along(status.x1, status.x2, n, margin1, margin2);
    status.dist -= margin1 + margin2;
}

// a shape without its margin, a sphere as its centre, a capsule as its segment; what was taken off (convex.Shape.shrink)
double shrink(CcdObject &o);
void restore(CcdObject &o);

// MuJoCo's mjc_ccd for one contact; room: the caller's polytope to refill (null: one made here)
inline Status ccd(CcdObject &o1, CcdObject &o2, double tolerance, int64_t iterations, Polytope *room = nullptr) {
    Status status;
    status.tolerance = tolerance, status.max_iterations = iterations;
    status.x1 = o1.pos, status.x2 = o2.pos;
    if (o1.rounded || o2.rounded || o1.margin > 0 || o2.margin > 0) {
        double full1 = shrink(o1), full2 = shrink(o2);
        status.dist_cutoff = full1 + full2;
        gjk(status, o1, o2);
        status.dist_cutoff = 0.0;
        restore(o1), restore(o2);
        if (status.dist > tolerance) {                                  // shallow: the radii added back
            inflate(status, full1, full2);
            status.shallow = true;
            if (status.dist > 0) status.dist = MAX_LIMIT;
            return status;
        }
        status.gjk_iterations = 0;                                      // deep: the shapes themselves
        status.x1 = o1.pos, status.x2 = o2.pos;
    }
    gjk(status, o1, o2);
    if (status.dist <= tolerance && status.simplex.size() > 1 && !status.separated) {
        status.dist = 0.0;                                              // touching at least
        // the polytope in the caller's room, emptied (workspace only, C++: no allocation per pair; the NumPy text makes
        // a new Polytope, the same values)
        Polytope local;
        Polytope &pt = room ? *room : local;
        pt.max_faces = 6 * iterations, pt.center = V3{};
        pt.verts.clear(), pt.faces.clear(), pt.map.clear(), pt.horizon.clear();
        pt.verts.reserve(64), pt.faces.reserve(256), pt.map.reserve(256), pt.horizon.reserve(64);   // room made once
        int ret = status.simplex.size() == 2 ? polytope2(pt, status, o1, o2)
                : status.simplex.size() == 3 ? polytope3(pt, status, o1, o2) : polytope4(pt, status, o1, o2);
        int face = ret == 0 ? epa(status, pt, o1, o2) : -1;
        for (int k = 0; face >= 0 && k < 3; k++) status.face.push_back(pt.verts[size_t(pt.faces[size_t(face)].v[k])]);
    }
    return status;
}

}  // namespace
}  // namespace physai
