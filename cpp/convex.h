// Convex pairs by GJK and EPA and their multi-contact (src/physai/engine/convex.py, MuJoCo 4's
// engine_collision_convex.c and multicontact of engine_collision_gjk.c), function by function with the NumPy text's names:
//
//     sphere_support ... mesh_support_point   the geoms' support functions (their point farthest along a direction)
//     shrink, restore                         a geom without its margin, a sphere as its centre, a capsule as its segment
//     normalize ... polygon_clip              multi-contact's pieces: face and edge normals, faces, clipping
//     multicontact(status, o1, o2, margin)    MuJoCo's single-shot multi-contact of two boxes, meshes or cylinders, or
//                                             a capsule with a cylinder or a mesh (capsule_side, capsule_on_face)
//     convex_pair(p, out)                     MuJoCo's mjc_Convex: the pair's contacts (gjk.h's ccd, multicontact)
//     is_convex_pair(t1, t2)                  the pairs convex.CONVEX_PAIRS and MULTI_PAIRS list
//     Prism, prism_add, prism_center, prism_support, local_extent, hfield_convex
//                                             MuJoCo's mjc_ConvexHField: a heightfield's prisms against a convex geom
#pragma once

#include <optional>

#include "primitives.h"
#include "gjk.h"

namespace physai {
namespace {

// R local + p, MuJoCo's order of sums
inline V3 to_world(const CcdObject &o, const V3 &local) {
    const double *R = o.mat;
    return {(R[0] * local[0] + R[1] * local[1] + R[2] * local[2]) + o.pos[0],
            (R[3] * local[0] + R[4] * local[1] + R[5] * local[2]) + o.pos[1],
            (R[6] * local[0] + R[7] * local[1] + R[8] * local[2]) + o.pos[2]};
}

// R^T d (mju_mulMatTVec3)
inline V3 to_local(const CcdObject &o, const V3 &d) {
    const double *R = o.mat;
    return {R[0] * d[0] + R[3] * d[1] + R[6] * d[2], R[1] * d[0] + R[4] * d[1] + R[7] * d[2],
            R[2] * d[0] + R[5] * d[1] + R[8] * d[2]};
}

// a sphere's point farthest along d: p + r d
inline V3 sphere_support(CcdObject &o, const V3 &d) { return o.size[0] * d + o.pos; }

// a sphere collided as its centre
inline V3 point_support(CcdObject &o, const V3 &) { return o.pos; }

// a capsule collided as its segment: the end p +- h z along d
inline V3 line_support(CcdObject &o, const V3 &d) {
    V3 z{o.mat[2], o.mat[5], o.mat[8]};
    double along = z[0] * d[0] + z[1] * d[1] + z[2] * d[2];
    return z * (along >= 0 ? o.size[1] : -o.size[1]) + o.pos;
}

// a capsule's: r d_local + (0, 0, +-h)
inline V3 capsule_support(CcdObject &o, const V3 &d) {
    V3 local = to_local(o, d), out = local * o.size[0];
    out[2] += local[2] >= 0 ? o.size[1] : -o.size[1];
    return to_world(o, out);
}

// an ellipsoid's: a * u / |u| with u = a * d_local (the x axis's end when u is below 1e-15)
inline V3 ellipsoid_support(CcdObject &o, const V3 &d) {
    V3 local = to_local(o, d);
    const double *a = o.size;
    V3 u{local[0] * a[0], local[1] * a[1], local[2] * a[2]};
    double norm2 = u[0] * u[0] + u[1] * u[1] + u[2] * u[2];
    if (norm2 < GJK_MINVAL2) return V3{o.mat[0], o.mat[3], o.mat[6]} * a[0] + o.pos;
    double inv = 1 / std::sqrt(norm2);
    return to_world(o, {u[0] * (inv * a[0]), u[1] * (inv * a[1]), u[2] * (inv * a[2])});
}

// a cylinder's: the rim point along d_xy (the axis when d_xy is below 1e-15) at the cap z = +-h along d
inline V3 cylinder_support(CcdObject &o, const V3 &d) {
    V3 local = to_local(o, d);
    double n2 = local[0] * local[0] + local[1] * local[1];
    double scale = n2 >= GJK_MINVAL2 ? o.size[0] / std::sqrt(n2) : 0.0;
    o.vertex = local[2] >= 0 ? 0 : 1;
    return to_world(o, {scale * local[0], scale * local[1], local[2] >= 0 ? o.size[1] : -o.size[1]});
}

// a box's corner along d; o.vertex its id (bit k: the + side of axis k)
inline V3 box_support(CcdObject &o, const V3 &d) {
    V3 local = to_local(o, d), corner;
    for (int a = 0; a < 3; a++) corner[a] = local[a] >= 0 ? o.size[a] : -o.size[a];
    o.vertex = int64_t(corner[0] > 0) | int64_t(corner[1] > 0) << 1 | int64_t(corner[2] > 0) << 2;
    return to_world(o, corner);
}

// a convex mesh's vertex along d (mesh_support: the hull graph's climb, from where o's last one ended); o.vertex its id
inline V3 mesh_support_point(CcdObject &o, const V3 &d) {
    const ConvexMesh &mesh = *static_cast<const ConvexMesh *>(o.mesh);
    V3 local = to_local(o, d);
    V3 v;
    o.vertex = mesh_support(mesh, local.data(), o.climbed, v.data());
    return to_world(o, v);
}

// a geom for GJK (convex.Shape)
inline CcdObject make_object(int64_t kind, const double *pos, const double *mat, const double *size, const ConvexMesh *mesh,
                             double margin) {
    CcdObject o;
    o.kind = int(kind), o.pos = {pos[0], pos[1], pos[2]}, o.mat = mat, o.size = size, o.mesh = mesh, o.margin = margin;
    o.polytope = kind == GEOM_BOX || kind == GEOM_MESH, o.rounded = kind == GEOM_SPHERE || kind == GEOM_CAPSULE;
    o.support = kind == GEOM_SPHERE ? sphere_support : kind == GEOM_CAPSULE ? capsule_support
              : kind == GEOM_ELLIPSOID ? ellipsoid_support : kind == GEOM_CYLINDER ? cylinder_support
              : kind == GEOM_BOX ? box_support : mesh_support_point;
    return o;
}

// the geom without its margin, a sphere as its centre and a capsule as its segment; what was taken off its surface
double shrink(CcdObject &o) {
    o.saved_support = o.support, o.saved_margin = o.margin;
    double full = 0.5 * o.margin;
    if (o.rounded) {
        full += o.size[0];
        o.support = o.kind == GEOM_SPHERE ? point_support : line_support;
    }
    o.margin = 0.0;
    return full;
}

// the support function and margin shrink took
void restore(CcdObject &o) {
    if (o.saved_support) o.support = o.saved_support, o.margin = o.saved_margin, o.saved_support = nullptr;
}

// ---------------------------------------------------------------- multi-contact (MuJoCo's multiccd, single shot)

constexpr double FACE_TOL = 0.996;             // two faces touch when their normals' cosine is below -FACE_TOL
constexpr double EDGE_TOL = 0.0888;            // an edge lies on a face when |cos| to its normal is below it
constexpr int MAX_POLYGON_CONTACTS = 4;        // a box or mesh pair's contact limit (MuJoCo's maxContacts)
constexpr double BOX_NORMALS[6][3] = {{1, 0, 0}, {-1, 0, 0}, {0, 1, 0}, {0, -1, 0}, {0, 0, 1}, {0, 0, -1}};
// the corners of box face f (2 axis + (0: +, 1: -)) in MuJoCo's order; corner id bit k: the + side of axis k
constexpr int BOX_FACES[6][4] = {{7, 3, 1, 5}, {2, 6, 4, 0}, {2, 3, 7, 6}, {4, 5, 1, 0}, {6, 7, 5, 4}, {3, 2, 0, 1}};

// a contact of multi-contact: its distance and witness points (convex.multicontact's tuples)
struct Witness {
    double dist;
    V3 x1, x2;
};

// R v, MuJoCo's order of sums (mat_times_mj)
inline V3 rotate(const CcdObject &o, const V3 &v) {
    V3 r;
    mat3_times(o.mat, v.data(), r.data());
    return r;
}

// v / |v| ((1, 0, 0) when |v| < 1e-15: mju_normalize3)
inline V3 normalize(const V3 &v) {
    double n = norm3(v);
    return n >= GJK_MINVAL ? v * (1 / n) : V3{1.0, 0.0, 0.0};
}

// how many distinct corners (1, 2, 3) one shape's side of EPA's face has; a repeated one dropped
inline int simplex_dim(int64_t ids[3], V3 points[3]) {
    if (ids[0] == ids[1]) {
        if (ids[0] == ids[2]) return 1;
        ids[1] = ids[2], points[1] = points[2];
        return 2;
    }
    return ids[2] == ids[0] || ids[2] == ids[1] ? 2 : 3;
}

// a box's corner (bit k of its id: the + side of axis k) in the world
inline V3 box_corner(const CcdObject &o, int64_t corner) {
    V3 local;
    for (int k = 0; k < 3; k++) local[k] = corner >> k & 1 ? o.size[k] : -o.size[k];
    return to_world(o, local);
}

// the world normal of box face f
inline V3 box_normal(const CcdObject &o, int f) { return rotate(o, {BOX_NORMALS[f][0], BOX_NORMALS[f][1], BOX_NORMALS[f][2]}); }

// the first box face within FACE_TOL of direction n: its world normal and face id, else none
inline void box_normal_near(const CcdObject &o, const V3 &n, std::vector<V3> &normals, std::vector<int64_t> &faces) {
    V3 local = to_local(o, n);
    local = local * (1 / std::sqrt(dot3(local, local)));
    for (int i = 0; i < 6; i++)
        if (dot3(local, {BOX_NORMALS[i][0], BOX_NORMALS[i][1], BOX_NORMALS[i][2]}) > FACE_TOL) {
            normals.push_back(box_normal(o, i)), faces.push_back(i);
            return;
        }
}

// the world normals and face ids of the box faces holding all dim corners ids (a vertex: its 3 faces); when the
// corners do not name them (a face of 3, an edge of 2), the face along direction
inline void box_normals(const CcdObject &o, int dim, const int64_t ids[3], const V3 &direction, std::vector<V3> &normals,
                        std::vector<int64_t> &faces) {
    if (dim == 1) {
        for (int k = 0; k < 3; k++) faces.push_back(2 * k + !(ids[0] >> k & 1)), normals.push_back(box_normal(o, int(faces.back())));
        return;
    }
    int64_t shared[3];
    int count = 0;
    for (int k = 0; k < 3; k++) {
        bool all = true, none = true;
        for (int i = 0; i < dim; i++) all = all && (ids[i] >> k & 1), none = none && !(ids[i] >> k & 1);
        if (all || none) shared[count++] = 2 * k + none;
    }
    if (count != 4 - dim) return box_normal_near(o, direction, normals, faces);   // a face: 1 axis; an edge: 2
    for (int c = 0; c < count; c++) normals.push_back(box_normal(o, int(shared[c]))), faces.push_back(shared[c]);
}

// the unit directions and far ends of the box edges at a corner (dim 1: its 3 edges) or of the edge points[0] points[1]
inline void box_edge_normals(const CcdObject &o, int dim, const V3 points[3], int64_t corner, std::vector<V3> &edges,
                             std::vector<V3> &ends) {
    if (dim == 2) {
        edges.push_back(normalize(points[1] - points[0])), ends.push_back(points[1]);
        return;
    }
    for (int k = 0; k < 3; k++) ends.push_back(box_corner(o, corner ^ (int64_t(1) << k)));
    for (const V3 &e : ends) edges.push_back(normalize(e - points[0]));
}

// box face f's 4 corners in the world, in MuJoCo's order, into out (emptied)
inline void box_face(const CcdObject &o, int64_t f, std::vector<V3> &out) {
    out.clear();
    for (int c : BOX_FACES[f]) out.push_back(box_corner(o, c));
}

// the first (up to limit) entries of a also in b, in a's order, into out; how many
inline int shared_entries(const int64_t *a, int64_t na, const int64_t *b, int64_t nb, int limit, int64_t *out) {
    int count = 0;
    for (int64_t i = 0; i < na && count < limit; i++)
        if (std::find(b, b + nb, a[i]) != b + nb) out[count++] = a[i];
    return count;
}

// the world normals and polygon ids of the mesh polygons holding all dim vertices ids (a vertex: all of its
// polygons; an edge: up to 2; a face of 3: the first)
inline void mesh_normals(const CcdObject &o, int dim, const int64_t ids[3], std::vector<V3> &normals,
                         std::vector<int64_t> &faces) {
    const ConvexMesh &mesh = *static_cast<const ConvexMesh *>(o.mesh);
    auto polys = [&](int64_t v) { return mesh.polymap + mesh.polymapadr[v]; };
    auto add_polygon = [&](int64_t p) {
        const double *n = mesh.polynormal + 3 * p;
        normals.push_back(rotate(o, {n[0], n[1], n[2]})), faces.push_back(p);
    };
    if (dim == 1) {
        for (int64_t i = 0; i < mesh.polymapnum[ids[0]]; i++) add_polygon(polys(ids[0])[i]);
        return;
    }
    int64_t found[2], kept[1];                                         // shared by the edge's ends (a face's: by all 3)
    int count = shared_entries(polys(ids[0]), mesh.polymapnum[ids[0]], polys(ids[1]), mesh.polymapnum[ids[1]], 2, found);
    if (dim == 3) {
        count = shared_entries(found, count, polys(ids[2]), mesh.polymapnum[ids[2]], 1, kept);
        if (count) found[0] = kept[0];                                 // none shared: nothing read
    }
    for (int c = 0; c < count; c++) add_polygon(found[c]);
}

// mesh vertex v in the world
inline V3 mesh_vertex(const CcdObject &o, int64_t v) {
    const double *p = static_cast<const ConvexMesh *>(o.mesh)->vert + 3 * v;
    return to_world(o, {p[0], p[1], p[2]});
}

// the unit directions and far ends of the mesh edges at a vertex (dim 1: one per polygon holding it, to the vertex
// before it in that polygon) or of the edge points[0] points[1]
inline void mesh_edge_normals(const CcdObject &o, int dim, const V3 points[3], int64_t vertex, std::vector<V3> &edges,
                              std::vector<V3> &ends) {
    if (dim == 2) {
        edges.push_back(normalize(points[1] - points[0])), ends.push_back(points[1]);
        return;
    }
    const ConvexMesh &mesh = *static_cast<const ConvexMesh *>(o.mesh);
    for (int64_t i = 0; i < mesh.polymapnum[vertex]; i++) {
        int64_t p = mesh.polymap[mesh.polymapadr[vertex] + i], n = mesh.polyvertnum[p];
        const int64_t *poly = mesh.polyvert + mesh.polyvertadr[p];
        int64_t at = std::find(poly, poly + n, vertex) - poly;
        ends.push_back(mesh_vertex(o, poly[at == 0 ? n - 1 : at - 1]));
    }
    for (const V3 &e : ends) edges.push_back(normalize(e - points[0]));
}

// mesh polygon p's vertices in the world, in reverse order, into out (emptied)
inline void mesh_face(const CcdObject &o, int64_t p, std::vector<V3> &out) {
    const ConvexMesh &mesh = *static_cast<const ConvexMesh *>(o.mesh);
    out.clear();
    for (int64_t k = mesh.polyvertnum[p] - 1; k >= 0; k--) out.push_back(mesh_vertex(o, mesh.polyvert[mesh.polyvertadr[p] + k]));
}

// a cylinder's cap normal and cap id (0: +z, 1: -z) when its side of EPA's face is one cap point, else none
inline void cylinder_normals(const CcdObject &o, int dim, const int64_t ids[3], std::vector<V3> &normals,
                             std::vector<int64_t> &faces) {
    if (dim != 1) return;
    normals.push_back(rotate(o, {0.0, 0.0, ids[0] ? -1.0 : 1.0})), faces.push_back(ids[0]);
}

// (the unit direction along the side, its far end points[0] + 2 h direction) of the cylinder's side line through
// points[0] on cap (0: +z, going down; 1: -z, going up)
inline void cylinder_edge_normals(const CcdObject &o, const V3 points[3], int64_t cap, std::vector<V3> &edges,
                                  std::vector<V3> &ends) {
    V3 direction = V3{o.mat[2], o.mat[5], o.mat[8]} * (cap ? 1.0 : -1.0);
    edges.push_back(direction), ends.push_back(points[0] + direction * (2 * o.size[1]));
}

// cos and sin of 2 pi k / 16 to 15 decimals (MuJoCo's table; its rounding breaks polygon_quad's ties on a cap)
constexpr double COS16[16] = {1.0, 0.923879532511287, 0.707106781186548, 0.382683432365090, 0.0, -0.382683432365090,
                              -0.707106781186547, -0.923879532511287, -1.0, -0.923879532511287, -0.707106781186548,
                              -0.382683432365090, 0.0, 0.382683432365090, 0.707106781186547, 0.923879532511287};

// cap f (0: +z, 1: -z) as a 16-gon of rim points in the world, clockwise seen from outside, into out (emptied)
inline void cylinder_face(const CcdObject &o, int64_t f, std::vector<V3> &out) {
    double sign = f ? -1.0 : 1.0, r = o.size[0], h = o.size[1];
    out.clear();
    for (int k = 0; k < 16; k++) out.push_back(to_world(o, {COS16[k] * r, -COS16[(k + 12) % 16] * r * sign, sign * h}));
}

// a capsule's side line through point (its witness point), from the -z end's level to the +z end's:
// point + (-s -+ h) z with s = <point - p, z>, the axial coordinate of point; into out (emptied)
inline void capsule_side(const CcdObject &o, const V3 &point, std::vector<V3> &out) {
    V3 z{o.mat[2], o.mat[5], o.mat[8]};
    double s = dot3(point - o.pos, z);
    out.clear(), out.push_back(z * (-s - o.size[1]) + point), out.push_back(z * (o.size[1] - s) + point);
}

// the face normals and face ids of a box, mesh or cylinder at its side of EPA's face
inline void feature_normals(const CcdObject &o, int dim, const int64_t ids[3], const V3 &direction, std::vector<V3> &normals,
                            std::vector<int64_t> &faces) {
    if (o.kind == GEOM_CYLINDER) cylinder_normals(o, dim, ids, normals, faces);
    else if (o.kind == GEOM_BOX) box_normals(o, dim, ids, direction, normals, faces);
    else mesh_normals(o, dim, ids, normals, faces);
}

// the edge directions and far ends of a box, mesh or cylinder
inline void edge_normals(const CcdObject &o, int dim, const V3 points[3], int64_t vertex, std::vector<V3> &edges,
                         std::vector<V3> &ends) {
    if (o.kind == GEOM_BOX) box_edge_normals(o, dim, points, vertex, edges, ends);
    else if (o.kind == GEOM_MESH) mesh_edge_normals(o, dim, points, vertex, edges, ends);
    else cylinder_edge_normals(o, points, vertex, edges, ends);
}

// face f of a box, mesh or cylinder, its points in the world, into out (emptied)
inline void face_points(const CcdObject &o, int64_t f, std::vector<V3> &out) {
    if (o.kind == GEOM_BOX) box_face(o, f, out);
    else if (o.kind == GEOM_MESH) mesh_face(o, f, out);
    else cylinder_face(o, f, out);
}

// the (i, j) of the normals n1[i], n2[j] facing each other most closely (least cosine, the first of equals) when
// their cosine is below -FACE_TOL; false: none
inline bool aligned_faces(const std::vector<V3> &n1, const std::vector<V3> &n2, size_t &i, size_t &j) {
    double best = -FACE_TOL;
    bool found = false;
    for (size_t a = 0; a < n1.size(); a++)
        for (size_t b = 0; b < n2.size(); b++) {
            double cos = dot3(n1[a], n2[b]);
            if (cos < best) best = cos, i = a, j = b, found = true;
        }
    return found;
}

// the first (edge j, face i) (faces outer) with the edge across the face's normal within EDGE_TOL, of the faces whose
// normal points along toward (facing the other geom); false: none
inline bool aligned_face_edge(const std::vector<V3> &edges, const std::vector<V3> &normals, const V3 &toward, size_t &j,
                              size_t &i) {
    for (i = 0; i < normals.size(); i++) {
        if (dot3(normals[i], toward) <= GJK_MINVAL) continue;          // facing away from the other geom
        for (j = 0; j < edges.size(); j++)
            if (std::fabs(dot3(edges[j], normals[i])) < EDGE_TOL) return true;
    }
    return false;
}

// the area of the quadrilateral a b c d: |(c - a) x (d - b)| / 2 (half its diagonals' cross product)
inline double area4(const V3 &a, const V3 &b, const V3 &c, const V3 &d) { return 0.5 * norm3(cross3(c - a, d - b)); }

// the 4 vertices of the polygon (n > 4, convex, in order) spanning the largest quadrilateral, as MuJoCo's rotating
// search finds them: for each first corner a, move d, then c, then b forward while the area grows; in place
inline void polygon_quad(std::vector<V3> &polygon) {
    size_t n = polygon.size();
    auto area = [&](size_t a, size_t b, size_t c, size_t d) { return area4(polygon[a], polygon[b], polygon[c], polygon[d]); };
    auto step = [n](size_t i) { return i + 1 < n ? i + 1 : 0; };     // (i + 1) % n, i < n: no division
    size_t b = 1, c = 2, d = 3, best[4] = {0, 1, 2, 3};
    double m = area(0, 1, 2, 3), m_next;
    for (size_t a = 0; a < n; a++) {
        while ((m_next = area(a, b, c, step(d))) > m) {
            m = m_next, d = step(d), best[0] = a, best[1] = b, best[2] = c, best[3] = d;
            while ((m_next = area(a, b, step(c), d)) > m) m = m_next, c = step(c), best[0] = a, best[1] = b, best[2] = c, best[3] = d;
            while ((m_next = area(a, step(b), c, d)) > m) m = m_next, b = step(b), best[0] = a, best[1] = b, best[2] = c, best[3] = d;
        }
        if (b == a) {
            b = step(b);
            if (c == b) {
                c = step(c);
                if (d == c) d = step(d);
            }
        }
    }
    const V3 quad[4] = {polygon[best[0]], polygon[best[1]], polygon[best[2]], polygon[best[3]]};
    polygon.assign(quad, quad + 4);
}

// the unit normal of the plane through the edge v1 v2 along n: (v2 - v1) x n, normalized
inline V3 plane_normal(const V3 &v1, const V3 &v2, const V3 &n) { return normalize(cross3(v2 - v1, (v1 + n) - v1)); }

// a clipped vertex v's contact: x1 its projection along n onto the face's plane through origin, dist
// <x1 - v, direction>, x2 = x1 - direction dist
inline Witness witness_on_face(const V3 &v, const V3 &origin, const V3 &n, const V3 &direction) {
    V3 w = v - n * dot3(v - origin, n);
    double dist = dot3(w - v, direction);
    return {dist, w, w - direction * dist};
}

// the polygon clipped by the half space <p - a, pn> > -1e-15 of one edge (Sutherland-Hodgman): a vertex inside kept,
// and where an edge PQ crosses the plane, P + (Q - P) d_P / (d_P - d_Q) (d: <p - a, pn>)
inline void clip(const std::vector<V3> &polygon, const V3 &a, const V3 &pn, std::vector<V3> &out) {
    out.clear();
    const size_t n = polygon.size();
    double dQ = n ? dot3(polygon[0] - a, pn) : 0.0;                     // each vertex's d once: an edge's dQ is the next's dP
    for (size_t i = 0; i < n; i++) {
        const V3 &P = polygon[i], &Q = polygon[i + 1 < n ? i + 1 : 0];
        double dP = dQ;
        dQ = dot3(Q - a, pn);
        bool inside1 = dP > -GJK_MINVAL, inside2 = dQ > -GJK_MINVAL;
        if (inside1 && inside2) {
            out.push_back(Q);
        } else if (inside1 || inside2) {
            double t = dP != dQ ? dP / (dP - dQ) : -1.0;               // where PQ crosses the edge's plane
            if (0.0 <= t && t <= 1.0) out.push_back(P + (Q - P) * t);
            if (inside2) out.push_back(Q);
        }
    }
}

// the room multi-contact refills pair after pair (workspace only, C++: the NumPy text makes these lists afresh; kept by
// the caller, collision.h's CollisionWork, so that no pair allocates): EPA's polytope, the polygon being clipped and its
// clipped copy, the features' normals, edges, far ends and face ids
struct CcdRoom {
    Polytope polytope;
    std::vector<V3> polygon, clipped, n1, n2, edges, ends;
    std::vector<V3> face1, face2, kept;                                 // the two faces clipped, the points kept
    std::vector<int64_t> faces1, faces2;
    std::vector<Witness> found;                     // the witness pairs (multicontact's, else ccd's; a heightfield prism's)
};

// the contacts of face2 (a polygon or an edge) on face1 (normal n): face2 clipped by the planes through face1's edges
// along n, its points within margin of face1's plane kept, each a witness pair; more than 4: the largest
// quadrilateral's; an edge's: its two farthest points (convex.polygon_clip); into out (emptied)
inline void polygon_clip(const std::vector<V3> &face1, const std::vector<V3> &face2, const V3 &n, const V3 &direction,
                         double margin, CcdRoom &room, std::vector<Witness> &out) {
    out.clear();
    if (face1.size() < 3) return;
    std::vector<V3> &polygon = room.polygon, &clipped = room.clipped;   // clipped edge by edge between the two
    std::vector<V3> &kept = room.kept;
    kept.clear();
    polygon.assign(face2.begin(), face2.end());
    for (size_t e = 0; e < face1.size(); e++) {
        clip(polygon, face1[e], plane_normal(face1[e], face1[e + 1 < face1.size() ? e + 1 : 0], n), clipped);
        std::swap(polygon, clipped);
    }
    for (const V3 &p : polygon)
        if (dot3(p - face1[0], n) <= margin) kept.push_back(p);         // within margin of face1's plane
    if (kept.size() > size_t(MAX_POLYGON_CONTACTS)) {
        polygon_quad(kept);
    } else if (face2.size() == 2 && kept.size() > 2) {                  // an edge: its two farthest points
        size_t b1 = 0, b2 = 1;
        double far = 0.0;
        for (size_t i = 0; i < kept.size(); i++)
            for (size_t j = i + 1; j < kept.size(); j++) {
                double d2 = dot3(kept[j] - kept[i], kept[j] - kept[i]);
                if (d2 > far) b1 = i, b2 = j, far = d2;
            }
        const V3 ends[2] = {kept[b1], kept[b2]};
        kept.assign(ends, ends + 2);
    }
    for (const V3 &p : kept) out.push_back(witness_on_face(p, face1[0], n, direction));
}

// multicontact's witness pairs (dist: the bare geoms' signed distance) as ccd's: each geom grown by margin / 2 along
// the clipped face's unit normal n from geom 1 into geom 2, dist - margin; unchanged without margin
// (convex.inflate_witnesses); in place
inline void inflate_witnesses(std::vector<Witness> &found, const V3 &n, double margin) {
    if (!margin) return;
    double half = 0.5 * margin;
    for (Witness &w : found) {
        w.dist -= half + half;
        inflate_along(w.x1, w.x2, n, half, half);
    }
}

// the 3 Vertex multi-contact reads: EPA's last face, else GJK's last simplex (the geoms without their margin apart, or
// a capsule's segment apart from the other geom: a shallow contact), its last vertex repeated to 3 (convex.simplex_face)
inline Simplex simplex_face(const Status &status) {
    if (!status.face.empty()) return status.face;
    Simplex face = status.simplex;
    while (face.size() < 3) face.push_back(status.simplex.back());
    return face;
}

// the rim point of cap (0: +z, 1: -z) radially out from point (its local x, y scaled to the radius; the axis when they
// are below 1e-15), in the world (convex.cylinder_rim)
inline V3 cylinder_rim(const CcdObject &o, const V3 &point, int64_t cap) {
    V3 local = to_local(o, point - o.pos);
    double n2 = local[0] * local[0] + local[1] * local[1];
    double scale = n2 >= GJK_MINVAL2 ? o.size[0] / std::sqrt(n2) : 0.0;
    return to_world(o, {scale * local[0], scale * local[1], cap ? -o.size[1] : o.size[1]});
}

// the 3 points of one geom (side 0: geom 1, 1: geom 2) at EPA's face or GJK's simplex that multi-contact reads: the
// bare support points; a cylinder's, with a margin, its grown points moved radially onto its rim (convex.edge_points)
inline void edge_points(const CcdObject &o, const Simplex &face, int side, double margin, V3 out[3]) {
    for (int k = 0; k < 3; k++) {
        const Vertex &v = face[size_t(k)];
        if (o.kind == GEOM_CYLINDER && margin > 0) {
            out[k] = cylinder_rim(o, side ? v.vert2 : v.vert1, side ? v.index2 : v.index1);
        } else {
            out[k] = side ? v.bare2 : v.bare1;
        }
    }
}

// MuJoCo 4's multi-contact of a capsule (geom 1; it has no faces): its side line through its witness point x1
// (capsule_side) clipped by the first face of geom 2 facing it that its axis lies on, as a box's edge is, else none; with
// a margin (MuJoCo 4.0's library: a capsule is not grown again), the grown capsule's line clipped, its points within
// half the margin of the face kept, only geom 2's witness grown by half the margin along the face's normal, dist - half
// (convex.capsule_on_face); into room.found (left empty: none)
inline void capsule_on_face(const Status &status, const CcdObject &o1, const CcdObject &o2, const std::vector<V3> &n2,
                            const std::vector<int64_t> &faces2, double margin, CcdRoom &room) {
    size_t i, j;
    room.edges.clear(), room.edges.push_back(V3{o1.mat[2], o1.mat[5], o1.mat[8]});
    if (!aligned_face_edge(room.edges, n2, status.x2 - status.x1, i, j)) return;
    double half = 0.5 * margin;
    face_points(o2, faces2[j], room.face1), capsule_side(o1, status.x1, room.face2);
    polygon_clip(room.face1, room.face2, n2[j], -n2[j], half, room, room.found);
    for (Witness &w : room.found) {
        std::swap(w.x1, w.x2);                                          // the faces were swapped
        w.dist -= half;
        inflate_along(w.x1, w.x2, -n2[j], 0.0, half);
    }
}

// an edge of eo (its side's dimension dim, points p: edge_points', vertex: its first vertex) lying on a face of fo
// (faces, normals: feature_normals'; toward: fo's witness minus eo's): the edge clipped by that face into room.found
// (polygon_clip: x1 on fo, x2 on eo) and the face's normal into normal; false: no edge on a face (convex.edge_on_face)
inline bool edge_on_face(const CcdObject &eo, int dim, const V3 p[3], int64_t vertex, const CcdObject &fo,
                         const std::vector<int64_t> &faces, const std::vector<V3> &normals, const V3 &toward, double margin,
                         CcdRoom &room, V3 &normal) {
    std::vector<V3> &edges = room.edges, &ends = room.ends, &face = room.face1, &edge = room.face2;
    edges.clear(), ends.clear();
    edge_normals(eo, dim, p, vertex, edges, ends);
    size_t i, j;
    if (!aligned_face_edge(edges, normals, toward, i, j)) return false;
    face_points(fo, faces[j], face), edge.clear(), edge.push_back(p[0]), edge.push_back(ends[i]);
    polygon_clip(face, edge, normals[j], -normals[j], margin, room, room.found);
    normal = normals[j];
    return true;
}

// MuJoCo's multicontact: up to 4 contacts of two boxes, meshes or cylinders, or of a capsule (geom 1) with a cylinder
// or a mesh (capsule_on_face), from EPA's last face (or GJK's last simplex), the bare geoms' features clipped, points
// within margin kept, or none (keep ccd's one); into room.found (emptied; left empty: none)
inline void multicontact(const Status &status, const CcdObject &o1, const CcdObject &o2, double margin, CcdRoom &room) {
    std::vector<Witness> &found = room.found;
    std::vector<V3> &face1 = room.face1, &face2 = room.face2;
    found.clear();
    for (const CcdObject *o : {&o1, &o2})
        if (o->kind == GEOM_MESH && !static_cast<const ConvexMesh *>(o->mesh)->npoly) return;
    Simplex face = simplex_face(status);
    int64_t ids1[3], ids2[3];
    V3 p1[3], p2[3];
    for (int k = 0; k < 3; k++) ids1[k] = face[size_t(k)].index1, ids2[k] = face[size_t(k)].index2;
    edge_points(o1, face, 0, margin, p1), edge_points(o2, face, 1, margin, p2);
    int dim1 = simplex_dim(ids1, p1), dim2 = simplex_dim(ids2, p2);
    std::vector<V3> &n1 = room.n1, &n2 = room.n2;                      // the room's, emptied
    std::vector<int64_t> &faces1 = room.faces1, &faces2 = room.faces2;
    n1.clear(), n2.clear(), faces1.clear(), faces2.clear();
    feature_normals(o2, dim2, ids2, status.x2 - status.x1, n2, faces2);
    if (o1.kind == GEOM_CAPSULE) return capsule_on_face(status, o1, o2, n2, faces2, margin, room);   // a capsule's side on a face of 2
    feature_normals(o1, dim1, ids1, status.x1 - status.x2, n1, faces1);
    size_t i, j;
    if (aligned_faces(n1, n2, i, j)) {                                 // face on face
        face_points(o1, faces1[i], face1), face_points(o2, faces2[j], face2);
        polygon_clip(face1, face2, n1[i], n2[j], margin, room, found);
        return inflate_witnesses(found, -n2[j], margin);
    }
    V3 normal;
    auto edge_of_1 = [&]() {                                           // an edge of 1 on a face of 2: whether aligned
        if (!edge_on_face(o1, dim1, p1, ids1[0], o2, faces2, n2, status.x2 - status.x1, margin, room, normal)) return false;
        for (Witness &w : found) std::swap(w.x1, w.x2);                 // the faces were swapped
        inflate_witnesses(found, -normal, margin);
        return true;
    };
    // 1's edge before 2's (from GJK's simplex between a box and a mesh, where 1's side is larger: after it)
    bool first = dim1 <= dim2 || !status.face.empty() || o1.kind == GEOM_CYLINDER || o2.kind == GEOM_CYLINDER;
    if (dim1 < 3 && first && edge_of_1()) return;
    if (dim2 < 3 && edge_on_face(o2, dim2, p2, ids2[0], o1, faces1, n1, status.x1 - status.x2, margin, room, normal))
        return inflate_witnesses(found, normal, margin);               // an edge of 2 on a face of 1
    if (dim1 < 3 && !first) edge_of_1();
}

// whether physai collides a pair by MuJoCo 4's multicontact, multiccd on: two boxes or meshes, a cylinder with a
// cylinder, a box or a mesh, or a capsule with a cylinder or a mesh, whatever their margin (convex.polygon_pair)
inline bool polygon_pair(int64_t t1, int64_t t2, bool multiccd) {
    bool polygonal = ((t1 == GEOM_BOX || t1 == GEOM_MESH || t1 == GEOM_CYLINDER) && (t2 == GEOM_BOX || t2 == GEOM_MESH)) ||
                     (t1 == GEOM_CYLINDER && t2 == GEOM_CYLINDER);
    bool capsule = t1 == GEOM_CAPSULE && (t2 == GEOM_CYLINDER || t2 == GEOM_MESH);
    return multiccd && (polygonal || capsule);
}

// the pairs collided here (convex.CONVEX_PAIRS and MULTI_PAIRS; which candidates they take: collision.candidates)
inline bool is_convex_pair(int64_t t1, int64_t t2) {
    return (t1 == GEOM_SPHERE && (t2 == GEOM_ELLIPSOID || t2 == GEOM_MESH)) || (t1 == GEOM_CAPSULE && t2 == GEOM_ELLIPSOID) ||
           (t1 == GEOM_ELLIPSOID && (t2 == GEOM_ELLIPSOID || t2 == GEOM_CYLINDER || t2 == GEOM_BOX || t2 == GEOM_MESH)) ||
           ((t1 == GEOM_CAPSULE || t1 == GEOM_CYLINDER) && (t2 == GEOM_CYLINDER || t2 == GEOM_MESH)) ||
           (t1 == GEOM_CYLINDER && t2 == GEOM_BOX) || ((t1 == GEOM_BOX || t1 == GEOM_MESH) && t2 == GEOM_MESH);
}

// the contacts of witness pairs when in contact (the least dist < 0): margin + dist, pos halfway between the witness
// points, normal along x1 - x2 ((1, 0, 0) when they coincide), appended to out; whether there were any (convex._contact)
inline bool contact(const std::vector<Witness> &found, double margin, std::vector<PreContact> &out) {
    double least = MAX_LIMIT;
    for (const Witness &w : found) least = std::fmin(least, w.dist);
    if (found.empty() || !(least < 0)) return false;
    for (const Witness &w : found) {
        V3 normal = normalize(w.x1 - w.x2), pos = (w.x1 + w.x2) * 0.5;
        add(out, margin + w.dist, pos.data(), normal.data(), nullptr);
    }
    return true;
}

// ccd's one witness pair (none when it found none), into found (emptied)
inline void witnesses(const Status &status, std::vector<Witness> &found) {
    found.clear();
    if (status.nx) found.push_back({status.dist, status.x1, status.x2});
}

// MuJoCo's mjc_Convex with native CCD (convex.convex): ccd's contact, or up to 4 by multicontact (polygon_pair) from
// EPA's face, or from GJK's last simplex with a margin while the geoms without it are apart, or after a capsule's
// shallow contact
void convex_pair(const Pair &p, std::vector<PreContact> &out) {
    CcdObject o1 = make_object(p.type1, p.pos1, p.mat1, p.size1, p.mesh1, p.margin);
    CcdObject o2 = make_object(p.type2, p.pos2, p.mat2, p.size2, p.mesh2, p.margin);
    std::optional<CcdRoom> local;                                      // the caller's room, else one made here
    CcdRoom &room = p.room ? *p.room : local.emplace();
    Status status = ccd(o1, o2, p.ccd_tolerance, p.ccd_iterations, &room.polytope);
    std::vector<Witness> &found = room.found;
    found.clear();
    bool shallow = status.shallow && status.dist < 0;                  // a capsule touching, its segment apart
    bool apart = p.margin > 0 && !status.simplex.empty() && status.dist < MAX_LIMIT;   // within the margin: GJK's simplex
    if (polygon_pair(p.type1, p.type2, p.multiccd) && (!status.face.empty() || shallow || apart))
        multicontact(status, o1, o2, p.margin, room);
    if (found.empty()) witnesses(status, found);
    contact(found, p.margin, out);
}

// ---------------------------------------------------------------- heightfields (MuJoCo's mjc_ConvexHField)

constexpr size_t MAXCONPAIR = 50;                  // MuJoCo's mjMAXCONPAIR: the most contacts of one geom pair

// one triangular prism of a heightfield (convex.Prism), in its frame: 0-2 the bottom triangle, 3-5 the top one
struct Prism {
    double vert[6][3] = {};
};

// a new corner (x, y) at height z on top: the oldest of the three dropped
inline void prism_add(Prism &p, double x, double y, double z) {
    for (int a = 0; a < 3; a++)
        p.vert[0][a] = p.vert[1][a], p.vert[1][a] = p.vert[2][a], p.vert[3][a] = p.vert[4][a], p.vert[4][a] = p.vert[5][a];
    p.vert[2][0] = p.vert[5][0] = x, p.vert[2][1] = p.vert[5][1] = y, p.vert[5][2] = z;
}

// the mean of the six corners (MuJoCo's mjc_center: summed in order, times 1/6)
inline V3 prism_center(const Prism &p) {
    V3 total{0.0, 0.0, 0.0};
    for (const auto &v : p.vert) total = total + V3{v[0], v[1], v[2]};
    return total * (1.0 / 6.0);
}

// the corner farthest along d: of the top triangle when d_z >= 0, else of the bottom one (the first of equals)
inline V3 prism_support(CcdObject &o, const V3 &d) {
    const Prism &p = *static_cast<const Prism *>(o.mesh);
    int start = d[2] < 0 ? 0 : 3, best_i = start;
    double best = p.vert[start][0] * d[0] + p.vert[start][1] * d[1] + p.vert[start][2] * d[2];
    for (int i = start + 1; i < start + 3; i++) {
        double value = p.vert[i][0] * d[0] + p.vert[i][1] * d[1] + p.vert[i][2] * d[2];
        if (value > best) best = value, best_i = i;
    }
    return {p.vert[best_i][0], p.vert[best_i][1], p.vert[best_i][2]};
}

// the geom's axis-aligned box in its frame's axes, by its support points along -+x, y, z
inline void local_extent(CcdObject &o, double lo[3], double hi[3]) {
    for (int a = 0; a < 3; a++) {
        V3 d{0.0, 0.0, 0.0};
        d[a] = 1.0;
        hi[a] = o.support(o, d)[a];
        d[a] = -1.0;
        lo[a] = o.support(o, d)[a];
    }
}

// a grid index from a real one x, within [0, n - 1] (a floor or ceiling beyond the grid gives an empty loop either way)
inline int64_t grid_index(double x, int64_t n) { return int64_t(std::fmin(std::fmax(x, 0.0), double(n - 1))); }

// MuJoCo's mjc_ConvexHField (convex.hfield_convex): the heightfield geom 1 and the convex geom 2, at most MAXCONPAIR
void hfield_convex(const Pair &p, std::vector<PreContact> &out) {
    const HField &hf = *p.hfield1;
    const double *size = hf.size, *R = p.mat1, *R2 = p.mat2;
    const int64_t nrow = hf.nrow, ncol = hf.ncol;
    const double margin = p.margin;
    double dif[3], local_pos[3], local_mat[9], lo[3], hi[3];
    for (int a = 0; a < 3; a++) dif[a] = p.pos2[a] - p.pos1[a];
    for (int i = 0; i < 3; i++) local_pos[i] = R[i] * dif[0] + R[3 + i] * dif[1] + R[6 + i] * dif[2];    // R1^T (p2 - p1)
    for (int i = 0; i < 3; i++)                                                         // R1^T R2
        for (int j = 0; j < 3; j++) local_mat[3 * i + j] = R[i] * R2[j] + R[3 + i] * R2[3 + j] + R[6 + i] * R2[6 + j];
    CcdObject o2 = make_object(p.type2, local_pos, local_mat, p.size2, p.mesh2, 0.0);
    local_extent(o2, lo, hi);
    for (int a = 0; a < 3; a++)
        if (!std::isfinite(lo[a]) || !std::isfinite(hi[a])) return;    // a pose or size not finite: no cell under it
    if (lo[0] - margin > size[0] || hi[0] + margin < -size[0] || lo[1] - margin > size[1] || hi[1] + margin < -size[1] ||
        lo[2] - margin > size[2] || hi[2] + margin < -size[3])
        return;                                                        // boxes apart
    // the grid's columns and rows under the box grown by margin: c = (x + size_x) / (2 size_x) (ncol - 1), r along y
    int64_t cmin = grid_index(std::floor((lo[0] - margin + size[0]) / (2.0 * size[0]) * double(ncol - 1)), ncol);
    int64_t cmax = grid_index(std::ceil((hi[0] + margin + size[0]) / (2.0 * size[0]) * double(ncol - 1)), ncol);
    int64_t rmin = grid_index(std::floor((lo[1] - margin + size[1]) / (2.0 * size[1]) * double(nrow - 1)), nrow);
    int64_t rmax = grid_index(std::ceil((hi[1] + margin + size[1]) / (2.0 * size[1]) * double(nrow - 1)), nrow);
    o2.margin = margin;
    double dx = 2.0 * size[0] / double(ncol - 1), dy = 2.0 * size[1] / double(nrow - 1);
    Prism prism;
    for (int i = 0; i < 3; i++) prism.vert[i][2] = -size[3];
    CcdObject o1;
    o1.kind = GEOM_HFIELD, o1.mesh = &prism, o1.margin = margin, o1.polytope = true, o1.support = prism_support;
    auto corner = [&](int64_t r, int64_t c) {                         // grid point (r, c) on top
        prism_add(prism, dx * double(c) - size[0], dy * double(r) - size[1], hf.elevation[r * ncol + c] * size[2]);
    };
    size_t start = out.size();
    std::vector<Witness> own, &one = p.room ? p.room->found : own;     // a prism's witness pair: the caller's room's
    for (int64_t r = rmin; r < rmax; r++) {
        corner(r + 1, cmin), corner(r, cmin);
        for (int64_t c = cmin + 1; c <= cmax; c++) {
            for (int64_t row : {r + 1, r}) {                           // two prisms per cell
                corner(row, c);
                if (prism.vert[3][2] < lo[2] - margin && prism.vert[4][2] < lo[2] - margin &&
                    prism.vert[5][2] < lo[2] - margin)
                    continue;                                          // wholly below the geom and its margin
                o1.pos = prism_center(prism);
                Status status = ccd(o1, o2, p.ccd_tolerance, p.ccd_iterations, p.room ? &p.room->polytope : nullptr);
                witnesses(status, one);
                if (contact(one, margin, out)) {         // back to the world: R1 x + p1
                    PreContact &con = out.back();
                    double pos[3] = {con.pos[0], con.pos[1], con.pos[2]};
                    double normal[3] = {con.normal[0], con.normal[1], con.normal[2]};
                    mat3_times(R, pos, con.pos), mat3_times(R, normal, con.normal);
                    for (int i = 0; i < 3; i++) con.pos[i] += p.pos1[i];
                }
                if (out.size() - start >= MAXCONPAIR) return;
            }
        }
    }
}

}  // namespace
}  // namespace physai
