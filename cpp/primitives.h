// The narrow phase (src/physai/engine/primitives.py, MuJoCo's engine_collision_primitive.c and _box.c), pair by pair
// with the NumPy text's names, one state at a time (double; compiled into the scalar translation unit only):
//
//     make_frame(normal, tangent, frame)   a contact's frame (rows: normal, tangent, their cross product)
//     plane_sphere, ..., box_box           the contacts of two geoms of primitive shapes (or a plane and a convex mesh)
//     segment_weights                      the nearest points of two segments (MuJoCo 4's mjc_segWeights: capsule_capsule)
//     narrow_phase(t1, t2)                 the function of a pair of geom types (primitives.FUNCTIONS)
//
// Each takes a Pair (the two geoms' world positions, axes, sizes, geom 2's convex mesh, the margin) and appends its
// contacts as PreContacts: distance, point, normal from geom 1 to geom 2, first tangent (zero: make_frame picks one).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "model.h"
#include "spatial.h"

namespace physai {
namespace {

// a contact of the narrow phase (MuJoCo's mjPreContact): distance, point, normal from geom 1 to geom 2, first tangent
struct PreContact {
    double dist, pos[3], normal[3], tangent[3];
};

// ---------------------------------------------------------------- small helpers (MuJoCo's arithmetic)

inline double dot3(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

// std::fmin, std::fmax inline (else libm's calls): libm's x < y ? x : y (x > y ? x : y), a NaN operand skipped as by them
inline double fmin_inline(double x, double y) { return x < y ? x : y == y ? y : x; }
inline double fmax_inline(double x, double y) { return x > y ? x : y == y ? y : x; }

// v scaled to unit length in place (mju_normalize3: (1, 0, 0) below MINVAL); its length
inline double normalize3(double *v) {
    double length = std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    if (length < MINVAL) {
        v[0] = 1.0, v[1] = 0.0, v[2] = 0.0;
    } else {
        double inv = 1.0 / length;
        v[0] *= inv, v[1] *= inv, v[2] *= inv;
    }
    return length;
}

// column c of a row-major 3x3
inline void column(const double *R, int c, double *out) { out[0] = R[c], out[1] = R[3 + c], out[2] = R[6 + c]; }

// a frame (rows: normal, tangent, their cross product) from a normal and a tangent that may be zero (make_frame)
inline void make_frame(const double *normal, const double *tangent, double *frame) {
    double *x = frame, *y = frame + 3;
    for (int a = 0; a < 3; a++) x[a] = normal[a], y[a] = tangent[a];
    normalize3(x);
    if (dot3(y, y) < 0.25) tangent_axis(x, y);
    double d = dot3(x, y);
    for (int a = 0; a < 3; a++) y[a] = y[a] - x[a] * d;
    normalize3(y);
    cross(x, y, frame + 6);
}

inline void add(std::vector<PreContact> &out, double dist, const double *pos, const double *normal, const double *tangent) {
    PreContact c;
    c.dist = dist;
    for (int a = 0; a < 3; a++) c.pos[a] = pos[a], c.normal[a] = normal[a], c.tangent[a] = tangent ? tangent[a] : 0.0;
    out.push_back(c);
}

// the narrow phase's arguments: the two geoms' world position, axes (row-major) and size, the margin
// a convex mesh (physai.engine.geoms.ConvexMesh): the Model's mesh_* arrays of one mesh, its own ids. hull_*: its
// graph's neighbour list starts, vertex ids and neighbour lists (null: no graph); extrema (27); polygons' corners and
// normals; each vertex's polygons
struct ConvexMesh {
    int64_t nvert = 0, npoly = 0;
    const double *vert = nullptr, *polynormal = nullptr;
    const int64_t *hull_start = nullptr, *hull_ids = nullptr, *hull_edges = nullptr, *extrema = nullptr;
    const double *edge_vert = nullptr;                                 // hull_edges[k]'s point at 3 k
    const ClimbEdge *blocks = nullptr;                                 // the hull's blocks (Model.mesh_climb, or nullptr)
    const int32_t *block_extrema = nullptr;                            // the extrema's blocks (27)
    const int64_t *polyvertadr = nullptr, *polyvertnum = nullptr, *polyvert = nullptr;
    const int64_t *polymapadr = nullptr, *polymapnum = nullptr, *polymap = nullptr;
};

// mesh i of the model (Meshes.mesh)
inline ConvexMesh convex_mesh(const Model &m, int64_t i) {
    ConvexMesh c;
    int64_t va = m.mesh_vertadr[i], pa = m.mesh_polyadr[i], ga = m.mesh_graphadr[i];
    c.nvert = m.mesh_vertnum[i], c.npoly = m.mesh_polynum[i], c.vert = m.mesh_vert + 3 * va, c.polynormal = m.mesh_polynormal + 3 * pa;
    if (ga >= 0) {
        int64_t n = m.mesh_graph[ga];
        c.hull_start = m.mesh_graph + ga + 2, c.hull_ids = c.hull_start + n, c.hull_edges = c.hull_ids + n;
        c.edge_vert = m.mesh_graph_vert + 3 * (ga + 2 + 2 * n);
        if (m.mesh_climb) c.blocks = m.mesh_climb + m.mesh_climbadr[i], c.block_extrema = m.mesh_climb_extrema + 27 * i;
    }
    c.extrema = m.mesh_extrema + 27 * i;
    c.polyvertadr = m.mesh_polyvertadr + pa, c.polyvertnum = m.mesh_polyvertnum + pa, c.polyvert = m.mesh_polyvert;
    c.polymapadr = m.mesh_polymapadr + va, c.polymapnum = m.mesh_polymapnum + va, c.polymap = m.mesh_polymap;
    return c;
}

// a heightfield (physai.engine.geoms.HField): size (4: x, y half sides, top, base depth), nrow x ncol elevations
struct HField {
    const double *size = nullptr, *elevation = nullptr;
    int64_t nrow = 0, ncol = 0;
};

// heightfield i of the model (Hfields.hfield)
inline HField hfield_of(const Model &m, int64_t i) {
    return HField{m.hfield_size + 4 * i, m.hfield_data + m.hfield_adr[i], m.hfield_nrow[i], m.hfield_ncol[i]};
}

// a pair's geoms: world positions, axes (3x3, rows), sizes, geom 2's convex mesh (a mesh geom), the margin
struct CcdRoom;                                       // convex.h: the convex pairs' scratch room
struct Pair {
    const double *pos1, *mat1, *size1, *pos2, *mat2, *size2;
    double margin;
    const ConvexMesh *mesh1 = nullptr, *mesh2 = nullptr;
    const HField *hfield1 = nullptr;                  // geom 1's heightfield (convex.h's hfield_convex)
    int64_t type1 = 0, type2 = 0;                     // the geoms' types and GJK's settings (the convex pairs, convex.h)
    double ccd_tolerance = 1e-6;
    int64_t ccd_iterations = 35;
    bool multiccd = true;                             // MuJoCo's multi-contact (mjDSBL_MULTICCD off)
    CcdRoom *room = nullptr;                          // the convex pairs' room kept by the caller (null: made per pair)
};

inline void plane_sphere(const Pair &p, std::vector<PreContact> &out) {
    double normal[3], tmp[3];
    column(p.mat1, 2, normal);
    for (int a = 0; a < 3; a++) tmp[a] = p.pos2[a] - p.pos1[a];
    double cdist = dot3(tmp, normal);
    if (cdist > p.margin + p.size2[0]) return;
    double dist = cdist - p.size2[0], pos[3];
    for (int a = 0; a < 3; a++) pos[a] = p.pos2[a] + normal[a] * (-dist / 2 - p.size2[0]);
    add(out, dist, pos, normal, nullptr);
}

inline void plane_capsule(const Pair &p, std::vector<PreContact> &out) {
    double axis[3], end[3];
    column(p.mat2, 2, axis);
    for (int sign : {1, -1}) {
        for (int a = 0; a < 3; a++) end[a] = sign > 0 ? p.pos2[a] + p.size2[1] * axis[a] : p.pos2[a] - p.size2[1] * axis[a];
        size_t before = out.size();
        Pair s = p;
        s.pos2 = end;
        plane_sphere(s, out);
        if (out.size() > before)
            for (int a = 0; a < 3; a++) out.back().tangent[a] = axis[a];
    }
}

inline void plane_cylinder(const Pair &p, std::vector<PreContact> &out) {
    double normal[3], axis[3], vec[3];
    column(p.mat1, 2, normal), column(p.mat2, 2, axis);
    double prjaxis = dot3(normal, axis);
    if (prjaxis > 0) {
        for (int a = 0; a < 3; a++) axis[a] = -axis[a];
        prjaxis = -prjaxis;
    }
    for (int a = 0; a < 3; a++) vec[a] = p.pos2[a] - p.pos1[a];
    double dist0 = dot3(vec, normal);
    for (int a = 0; a < 3; a++) vec[a] = axis[a] * prjaxis - normal[a];
    double len_sqr = dot3(vec, vec);
    if (len_sqr >= MINVAL * MINVAL) {
        double scale = p.size2[0] / std::sqrt(len_sqr);
        for (int a = 0; a < 3; a++) vec[a] = vec[a] * scale;
    } else {
        for (int a = 0; a < 3; a++) vec[a] = p.mat2[3 * a] * p.size2[0];
    }
    double prjvec = dot3(vec, normal);
    for (int a = 0; a < 3; a++) axis[a] = axis[a] * p.size2[1];
    prjaxis *= p.size2[1];
    if (dist0 + prjaxis + prjvec > p.margin) return;
    double dist = dist0 + prjaxis + prjvec, pos[3];
    for (int a = 0; a < 3; a++) pos[a] = p.pos2[a] + vec[a] + axis[a] + normal[a] * (-dist * 0.5);
    add(out, dist, pos, normal, nullptr);
    if (dist0 - prjaxis + prjvec <= p.margin) {
        dist = dist0 - prjaxis + prjvec;
        for (int a = 0; a < 3; a++) pos[a] = p.pos2[a] + vec[a] - axis[a] + normal[a] * (-dist * 0.5);
        add(out, dist, pos, normal, nullptr);
    }
    double prjvec1 = -prjvec * 0.5;
    if (dist0 + prjaxis + prjvec1 <= p.margin) {
        double side[3];
        cross(vec, axis, side);
        normalize3(side);
        double scale = p.size2[0] * std::sqrt(3.0) / 2;
        for (int a = 0; a < 3; a++) side[a] = side[a] * scale;
        dist = dist0 + prjaxis + prjvec1;
        for (double sign : {1.0, -1.0}) {
            for (int a = 0; a < 3; a++) pos[a] = p.pos2[a] + sign * side[a] + axis[a] - 0.5 * vec[a] + normal[a] * (-dist * 0.5);
            add(out, dist, pos, normal, nullptr);
        }
    }
}

inline void plane_box(const Pair &p, std::vector<PreContact> &out) {
    double normal[3], dif[3];
    column(p.mat1, 2, normal);
    for (int a = 0; a < 3; a++) dif[a] = p.pos2[a] - p.pos1[a];
    double dist = dot3(dif, normal);
    int count = 0;
    for (int i = 0; i < 8; i++) {
        double local[3] = {i & 1 ? p.size2[0] : -p.size2[0], i & 2 ? p.size2[1] : -p.size2[1], i & 4 ? p.size2[2] : -p.size2[2]};
        double corner[3], pos[3];
        mat3_times(p.mat2, local, corner);
        double ldist = dot3(normal, corner);
        if (dist + ldist > p.margin || ldist > 0) continue;
        double d = dist + ldist;
        for (int a = 0; a < 3; a++) pos[a] = corner[a] + p.pos2[a] + normal[a] * (-d / 2);
        add(out, d, pos, normal, nullptr);
        if (++count >= 4) return;
    }
}

inline void plane_ellipsoid(const Pair &p, std::vector<PreContact> &out) {
    double normal[3], support[3], world[3], dif[3];
    column(p.mat1, 2, normal);
    for (int a = 0; a < 3; a++)
        support[a] = -(p.mat2[a] * normal[0] + p.mat2[3 + a] * normal[1] + p.mat2[6 + a] * normal[2]) * p.size2[a];
    normalize3(support);
    for (int a = 0; a < 3; a++) support[a] = support[a] * p.size2[a];
    mat3_times(p.mat2, support, world);
    for (int a = 0; a < 3; a++) world[a] = world[a] + p.pos2[a], dif[a] = world[a] - p.pos1[a];
    double dist = dot3(normal, dif), pos[3];
    if (dist > p.margin) return;
    for (int a = 0; a < 3; a++) pos[a] = world[a] + normal[a] * (-0.5 * dist);
    add(out, dist, pos, normal, nullptr);
}

// the vertex of a convex mesh farthest along dir (its frame) as MuJoCo's support search finds it, from last (where the
// previous search of the same geom ended; -1: none), which is set to where the next one starts (primitives.mesh_support;
// a climb of the blocks names a vertex by its block's offset); its point in point (3) when given
inline int64_t mesh_support(const ConvexMesh &c, const double *dir, int64_t &last, double *point = nullptr) {
    auto along = [&](int64_t v) { const double *x = c.vert + 3 * v; return dir[0] * x[0] + dir[1] * x[1] + dir[2] * x[2]; };
    auto found = [&](int64_t v) {
        if (point) point[0] = c.vert[3 * v], point[1] = c.vert[3 * v + 1], point[2] = c.vert[3 * v + 2];
        return v;
    };
    if (!c.hull_start || c.nvert < 10) {                       // every vertex, the first of equals unless last is as far
        int64_t best = 0;
        double top = along(0);
        for (int64_t v = 1; v < c.nvert; v++) {
            double x = along(v);
            if (x > top) top = x, best = v;
        }
        if (last >= 0 && !(top > along(last))) best = last;
        return found(last = best);
    }
    int cell[3];                                                // climb the hull from the vertex of dir's grid cell
    for (int a = 0; a < 3; a++) cell[a] = int(dir[a] > 0.4) - int(dir[a] < -0.4) + 1;
    if (c.blocks) {                                             // the same numbers from the blocks
        auto reach = [&](const ClimbEdge &e) { return dir[0] * double(e.x[0]) + dir[1] * double(e.x[1]) + dir[2] * double(e.x[2]); };
        int64_t best = c.block_extrema[cell[0] * 9 + cell[1] * 3 + cell[2]], previous = -1;
        if (last >= 0 && !(reach(c.blocks[best]) > reach(c.blocks[last]))) best = last;
        double top = reach(c.blocks[best]);
        while (best != previous) {
            previous = best;
            for (const ClimbEdge *e = c.blocks + previous + 1; e->next >= 0; e++) {
                double x = reach(*e);
                if (x > top) top = x, best = e->next;
            }
        }
        const ClimbEdge &own = c.blocks[last = best];
        if (point) point[0] = double(own.x[0]), point[1] = double(own.x[1]), point[2] = double(own.x[2]);
        return own.next;
    }
    int64_t best = c.extrema[cell[0] * 9 + cell[1] * 3 + cell[2]], previous = -1;
    if (last >= 0 && !(along(c.hull_ids[best]) > along(c.hull_ids[last]))) best = last;   // warm start: last unless worse
    double top = along(c.hull_ids[best]);
    while (best != previous) {
        previous = best;
        for (int64_t k = c.hull_start[previous]; c.hull_edges[k] >= 0; k++) {
            const double *x = c.edge_vert + 3 * k;                     // the neighbour's point, stored beside its edge
            double reach = dir[0] * x[0] + dir[1] * x[1] + dir[2] * x[2];
            if (reach > top) top = reach, best = c.hull_edges[k];
        }
    }
    last = best;
    return found(c.hull_ids[best]);
}

// half the norm of (a - c) x (b - d): the area of the quadrilateral a b c d (primitives._quad_area)
inline double quad_area(const double *a, const double *b, const double *c, const double *d) {
    double u[3] = {a[0] - c[0], a[1] - c[1], a[2] - c[2]}, w[3] = {b[0] - d[0], b[1] - d[1], b[2] - d[2]}, r[3];
    cross(u, w, r);
    return std::sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]) * 0.5;
}

// three more corners (b, c, d: indices into the polygon) of a wide quadrilateral on the polygon corners (n of them)
// from its corner k (primitives._widest_quad)
inline void widest_quad(const ConvexMesh &m, const int64_t *corners, int64_t n, int64_t k, int64_t *bcd) {
    auto at = [&](int64_t i) { return m.vert + 3 * corners[i]; };
    int64_t b = (k + 1) % n, c = (k + 2) % n, d = (k + 3) % n;
    double area = quad_area(at(k), at(b), at(c), at(d)), moved;
    auto step = [n](int64_t i) { return i + 1 < n ? i + 1 : 0; };    // (i + 1) % n, i < n: no division
    while ((moved = quad_area(at(k), at(b), at(c), at(step(d)))) > area) {
        area = moved, d = step(d);
        while ((moved = quad_area(at(k), at(b), at(step(c)), at(d))) > area) area = moved, c = step(c);
        while ((moved = quad_area(at(k), at(step(b)), at(c), at(d))) > area) area = moved, b = step(b);
    }
    bcd[0] = b, bcd[1] = c, bcd[2] = d;
}

// a plane and a convex mesh (MuJoCo 4's mjc_PlaneConvex; primitives.plane_mesh)
inline void plane_mesh(const Pair &p, std::vector<PreContact> &out) {
    const ConvexMesh &mesh = *p.mesh2;
    double normal[3], dir[3], local[3];
    column(p.mat1, 2, normal);
    for (int a = 0; a < 3; a++) {
        dir[a] = p.mat2[a] * -normal[0] + p.mat2[3 + a] * -normal[1] + p.mat2[6 + a] * -normal[2];
        local[a] = p.mat2[a] * normal[0] + p.mat2[3 + a] * normal[1] + p.mat2[6 + a] * normal[2];
    }
    // a vertex's contact: dist = n . (R v + p2 - p1), halfway into the overlap; its side of the mesh's centre
    auto contact = [&](int64_t v, double *pos, double &side) {
        double point[3], dif[3];
        mat3_times(p.mat2, mesh.vert + 3 * v, point);
        for (int a = 0; a < 3; a++) point[a] += p.pos2[a], dif[a] = point[a] - p.pos1[a];
        double dist = dot3(normal, dif);
        for (int a = 0; a < 3; a++) pos[a] = point[a] + normal[a] * (-0.5 * dist), dif[a] = point[a] - p.pos2[a];
        side = dot3(normal, dif);
        return dist;
    };
    int64_t cold = -1, deepest = mesh_support(mesh, dir, cold);
    double pos[3], side;
    double dist = contact(deepest, pos, side);
    if (dist > p.margin) return;
    add(out, dist, pos, normal, nullptr);
    double best = 1.0;                                          // the polygon at it facing the plane most
    int64_t face = -1;
    for (int64_t k = mesh.polymapadr[deepest]; k < mesh.polymapadr[deepest] + mesh.polymapnum[deepest]; k++) {
        int64_t poly = mesh.polymap[k];
        double along = dot3(local, mesh.polynormal + 3 * poly);
        if (along < best) best = along, face = poly;
    }
    if (face < 0) return;
    const int64_t *corners = mesh.polyvert + mesh.polyvertadr[face];
    int64_t n = mesh.polyvertnum[face], k = 0, others[3];
    for (int64_t j = 0; j < n; j++)
        if (corners[j] == deepest) {
            k = j;
            break;
        }
    if (n > 4)
        widest_quad(mesh, corners, n, k, others);
    else
        for (int64_t j = 1; j < n; j++) others[j - 1] = (k + j) % n;
    for (int64_t j = 0; j < std::min<int64_t>(n - 1, 3); j++) {
        dist = contact(corners[others[j]], pos, side);
        if (dist > p.margin || side > 0) continue;
        add(out, dist, pos, normal, nullptr);
    }
}

inline void sphere_sphere(const Pair &p, std::vector<PreContact> &out) {
    double dif[3], normal[3];
    for (int a = 0; a < 3; a++) dif[a] = p.pos1[a] - p.pos2[a];
    double cdist_sqr = dot3(dif, dif), min_dist = p.margin + p.size1[0] + p.size2[0];
    if (cdist_sqr > min_dist * min_dist) return;
    double dist = std::sqrt(cdist_sqr) - p.size1[0] - p.size2[0];
    for (int a = 0; a < 3; a++) normal[a] = p.pos2[a] - p.pos1[a];
    if (normalize3(normal) < MINVAL) {
        double z1[3], z2[3];
        column(p.mat1, 2, z1), column(p.mat2, 2, z2);
        cross(z1, z2, normal);
        normalize3(normal);
    }
    double pos[3];
    for (int a = 0; a < 3; a++) pos[a] = p.pos1[a] + normal[a] * (p.size1[0] + dist / 2);
    add(out, dist, pos, normal, nullptr);
}

inline void sphere_capsule(const Pair &p, std::vector<PreContact> &out) {
    double axis[3], dif[3], point[3];
    column(p.mat2, 2, axis);
    for (int a = 0; a < 3; a++) dif[a] = p.pos1[a] - p.pos2[a];
    double x = fmin_inline(fmax_inline(dot3(axis, dif), -p.size2[1]), p.size2[1]);
    for (int a = 0; a < 3; a++) point[a] = p.pos2[a] + axis[a] * x;
    Pair s = p;
    s.pos2 = point;
    sphere_sphere(s, out);
}

inline void sphere_cylinder(const Pair &p, std::vector<PreContact> &out) {
    double radius = p.size2[0], height = p.size2[1], axis[3], vec[3], a_proj[3], p_proj[3];
    column(p.mat2, 2, axis);
    for (int a = 0; a < 3; a++) vec[a] = p.pos1[a] - p.pos2[a];
    double x = dot3(axis, vec);
    for (int a = 0; a < 3; a++) a_proj[a] = axis[a] * x, p_proj[a] = vec[a] - a_proj[a];
    double p_proj_sqr = dot3(p_proj, p_proj);
    bool side = std::fabs(x) < height, cap = p_proj_sqr < radius * radius;
    if (side && cap) {                                               // the centre inside: the nearer surface
        if (height - std::fabs(x) < radius - std::sqrt(p_proj_sqr)) side = false;
        else cap = false;
    }
    Pair s = p;
    if (side) {
        double point[3];
        for (int a = 0; a < 3; a++) point[a] = a_proj[a] + p.pos2[a];
        s.pos2 = point;
        sphere_sphere(s, out);
        return;
    }
    if (cap) {
        double pos_cap[3], flip[9];
        for (int a = 0; a < 3; a++) pos_cap[a] = x > 0 ? p.pos2[a] + axis[a] * height : p.pos2[a] - axis[a] * height;
        for (int k = 0; k < 9; k++) flip[k] = k % 3 == 1 ? p.mat2[k] : -p.mat2[k];
        Pair c{pos_cap, x > 0 ? p.mat2 : flip, p.size2, p.pos1, p.mat1, p.size1, p.margin};
        size_t before = out.size();
        plane_sphere(c, out);
        if (out.size() > before)
            for (int a = 0; a < 3; a++) out.back().normal[a] = -out.back().normal[a];
        return;
    }
    double rim[3], scale = radius / std::sqrt(p_proj_sqr), zero[1] = {0.0};
    for (int a = 0; a < 3; a++) rim[a] = p_proj[a] * scale + axis[a] * (x > 0 ? height : -height) + p.pos2[a];
    s.pos2 = rim, s.size2 = zero;
    sphere_sphere(s, out);
}

// x clamped to [0, 1] (MuJoCo's order: min(1, x), then 0 below 0)
inline double clip01(double x) { return x < 0 ? 0.0 : fmin_inline(1.0, x); }

// the nearest points of segments a0-a1 and b0-b1 as weights (s, t) in [0, 1] (MuJoCo 4's mjc_segWeights) into w;
// returns their count: one pair, or two for (near-)parallel segments, one per end of the first segment
inline int segment_weights(const double *a0, const double *a1, const double *b0, const double *b1, double (*w)[2]) {
    double d1[3], d2[3], r[3];
    for (int a = 0; a < 3; a++) d1[a] = a1[a] - a0[a], d2[a] = b1[a] - b0[a], r[a] = a0[a] - b0[a];
    double A = dot3(d1, d1), E = dot3(d2, d2);
    if (A <= MINVAL && E <= MINVAL) {                                 // two points
        w[0][0] = 0.0, w[0][1] = 0.0;
        return 1;
    }
    double f = dot3(d2, r);
    if (A <= MINVAL) {                                                // a point and a segment
        w[0][0] = 0.0, w[0][1] = clip01(f / E);
        return 1;
    }
    double c = dot3(d1, r);
    if (E <= MINVAL) {
        w[0][0] = clip01(-c / A), w[0][1] = 0.0;
        return 1;
    }
    double b = dot3(d1, d2);
    auto settle = [&](double s, double t, double *out) {             // t beyond [0, 1]: the end of segment 2, projected back
        if (t < 0) out[0] = clip01(-c / A), out[1] = 0.0;
        else if (t > 1) out[0] = clip01((b - c) / A), out[1] = 1.0;
        else out[0] = s, out[1] = t;
    };
    double n[3], m[3];
    cross(d1, d2, n);
    double nn = dot3(n, n);
    if (nn > A * 1e-8 * E) {                                          // s = (d2 x r) . n / |n|^2, t = (b s + f) / E
        cross(d2, r, m);
        double s = clip01(dot3(n, m) / nn);
        settle(s, (b * s + f) / E, w[0]);
        return 1;
    }
    settle(0.0, f / E, w[0]);                                         // parallel: each end of segment 1 projected
    settle(1.0, (f + b) / E, w[1]);
    return 2;
}

inline void capsule_capsule(const Pair &p, std::vector<PreContact> &out) {
    double a0[3], a1[3], b0[3], b1[3], w[2][2];
    for (int a = 0; a < 3; a++) {
        double axis1 = p.mat1[3 * a + 2] * p.size1[1], axis2 = p.mat2[3 * a + 2] * p.size2[1];
        a0[a] = p.pos1[a] - axis1, a1[a] = p.pos1[a] + axis1, b0[a] = p.pos2[a] - axis2, b1[a] = p.pos2[a] + axis2;
    }
    int n = segment_weights(a0, a1, b0, b1, w);
    for (int k = 0; k < n; k++) {
        double v1[3], v2[3];
        for (int a = 0; a < 3; a++) v1[a] = w[k][0] * (a1[a] - a0[a]) + a0[a], v2[a] = w[k][1] * (b1[a] - b0[a]) + b0[a];
        Pair s = p;
        s.pos1 = v1, s.pos2 = v2;
        sphere_sphere(s, out);
    }
}

inline void sphere_box(const Pair &p, std::vector<PreContact> &out) {
    double dif[3], center[3], clamped[3], direction[3], pos[3], normal[3];
    for (int a = 0; a < 3; a++) dif[a] = p.pos1[a] - p.pos2[a];
    for (int a = 0; a < 3; a++) center[a] = p.mat2[a] * dif[0] + p.mat2[3 + a] * dif[1] + p.mat2[6 + a] * dif[2];
    for (int a = 0; a < 3; a++) {
        clamped[a] = fmin_inline(fmax_inline(center[a], -p.size2[a]), p.size2[a]);
        direction[a] = clamped[a] - center[a];
    }
    double dist = normalize3(direction);
    if (dist - p.size1[0] > p.margin) return;
    if (dist <= MINVAL) {                                            // the centre inside: the nearest face
        double closest = (p.size2[0] + p.size2[1] + p.size2[2]) * 2;
        int k = 0;
        for (int i = 0; i < 6; i++) {
            double face = std::fabs((i % 2 ? 1 : -1) * p.size2[i / 2] - center[i / 2]);
            if (closest > face) closest = face, k = i;
        }
        double nearest[3] = {0.0, 0.0, 0.0};
        nearest[k / 2] = k % 2 ? -1.0 : 1.0;
        for (int a = 0; a < 3; a++) pos[a] = center[a] + nearest[a] * ((p.size1[0] - closest) / 2);
        mat3_times(p.mat2, nearest, normal);
        dist = -closest;
    } else {
        for (int a = 0; a < 3; a++) pos[a] = clamped[a] * 0.5 + (center[a] + direction[a] * p.size1[0]) * 0.5;
        mat3_times(p.mat2, direction, normal);
    }
    double world[3];
    mat3_times(p.mat2, pos, world);
    for (int a = 0; a < 3; a++) world[a] = world[a] + p.pos2[a];
    add(out, dist - p.size1[0], world, normal, nullptr);
}

// where along the capsule MuJoCo's mjraw_CapsuleBox puts a second sphere (primitives._capsule_box_second), -4: none
inline double capsule_box_second(const double *pos, const double *axis, const double *halfaxis, const double *size2,
                                 int axisdir, int cltype, int clface, int clcorner, int cledge, double best_seg,
                                 double best_box) {
    if (cltype >= 0 && cltype / 3 != 1) {                          // a corner of the box is closest
        int c1 = axisdir ^ clcorner;
        if (c1 == 0 || c1 == 7) return -4.0;
        double mul, de, dp;
        if (c1 == 1 || c1 == 2 || c1 == 4) {
            mul = 1.0, de = 1 - best_seg, dp = 1 + best_seg;
        } else {
            mul = -1.0, c1 = 7 - c1, dp = 1 - best_seg, de = 1 + best_seg;
        }
        int ax = c1 == 1 ? 0 : c1 == 2 ? 1 : 2, ax1 = c1 == 1 ? 1 : c1 == 2 ? 2 : 0, ax2 = c1 == 1 ? 2 : c1 == 2 ? 0 : 1;
        if (axis[ax] * axis[ax] > 0.5) return fmin_inline(de, 2 * size2[ax] / std::fabs(halfaxis[ax])) * mul;
        double second = fmin_inline(fmin_inline(dp, 2 * size2[ax1] / std::fabs(halfaxis[ax1])), 2 * size2[ax2] / std::fabs(halfaxis[ax2]));
        return second * -mul;
    }
    if (cltype >= 0) {                                             // on a box edge
        int c1 = (axisdir ^ clcorner) & (7 - (1 << cledge));
        if (c1 != 1 && c1 != 2 && c1 != 4) return -4.0;
        int ax = cledge, ax1 = cledge == 0 ? 1 : cledge == 1 ? 2 : 0, ax2 = cledge == 0 ? 2 : cledge == 1 ? 0 : 1;
        if (std::fabs(axis[ax1]) > std::fabs(axis[ax2])) ax1 = ax2;
        ax2 = 3 - ax - ax1;
        double mul, second;
        if (c1 & (1 << ax2)) mul = 1.0, second = 1 - best_seg;
        else mul = -1.0, second = 1 + best_seg;
        second = fmin_inline(second, 2 * size2[ax2] / std::fabs(halfaxis[ax2]));
        double e2 = ((axisdir & (1 << ax)) != 0) == ((c1 & (1 << ax2)) != 0) ? 1 - best_box : 1 + best_box;
        return fmin_inline(second, size2[ax] * e2 / std::fabs(halfaxis[ax])) * mul;
    }
    if (clface == -1) return -4.0;                                 // an end inside the box
    double mul = cltype == -3 ? 1.0 : -1.0, second = 2.0, end[3];
    for (int a = 0; a < 3; a++) end[a] = pos[a] - halfaxis[a] * mul;
    for (int i = 0; i < 3; i++) {
        if (i == clface) continue;
        for (double limit : {size2[i], -size2[i]}) {
            double e1 = (limit - end[i]) / halfaxis[i] * mul;
            if (0 < e1 && e1 < second) second = e1;
        }
    }
    return second * mul;
}

inline void capsule_box(const Pair &p, std::vector<PreContact> &out) {
    const double *size1 = p.size1, *size2 = p.size2, *mat2 = p.mat2;
    double halflength = size1[1], dif[3], pos[3], z1[3], axis[3], halfaxis[3];
    for (int a = 0; a < 3; a++) dif[a] = p.pos1[a] - p.pos2[a];
    column(p.mat1, 2, z1);
    for (int a = 0; a < 3; a++) {
        pos[a] = mat2[a] * dif[0] + mat2[3 + a] * dif[1] + mat2[6 + a] * dif[2];
        axis[a] = mat2[a] * z1[0] + mat2[3 + a] * z1[1] + mat2[6 + a] * z1[2];
        halfaxis[a] = axis[a] * halflength;
    }
    int axisdir = (halfaxis[0] > 0) + 2 * (halfaxis[1] > 0) + 4 * (halfaxis[2] > 0);
    double bestdist = p.margin + 2 * (size1[0] + halflength + size2[0] + size2[1] + size2[2]);
    double best_seg = 0.0, best_box = 0.0;
    int cltype = -4, clface = -1, clcorner = 0, cledge = 0;
    for (int i = -1; i <= 1; i += 2) {                             // an end of the segment over a face
        double end[3], clipped[3];
        int outside = 0, face = -1;
        for (int j = 0; j < 3; j++) {
            end[j] = pos[j] + halfaxis[j] * i, clipped[j] = end[j];
            if (end[j] < -size2[j] || end[j] > size2[j]) {
                outside++, face = j;
                clipped[j] = end[j] < -size2[j] ? -size2[j] : size2[j];
            }
        }
        if (outside > 1) continue;
        double gap[3] = {clipped[0] - end[0], clipped[1] - end[1], clipped[2] - end[2]};
        double dist = dot3(gap, gap);
        if (dist < bestdist) bestdist = dist, best_seg = double(i), cltype = -2 + i, clface = face;
    }
    for (int j = 0; j < 3; j++)                                     // the segment against each edge along axis j
        for (int i = 0; i < 8; i++) {
            if (i & (1 << j)) continue;
            double corner[3] = {i & 1 ? size2[0] : -size2[0], i & 2 ? size2[1] : -size2[1], i & 4 ? size2[2] : -size2[2]};
            corner[j] = 0.0;
            double d[3];
            for (int a = 0; a < 3; a++) d[a] = corner[a] - pos[a];
            double ma = size2[j] * size2[j], mb = -size2[j] * halfaxis[j], mc = size1[1] * size1[1];
            double u = -size2[j] * d[j], v = dot3(halfaxis, d), det = ma * mc - mb * mb;
            if (std::fabs(det) < MINVAL) continue;
            double idet = 1 / det, x1 = (mc * u - mb * v) * idet, x2 = (ma * v - mb * u) * idet;
            int s1 = 1, s2 = 1;
            if (x1 > 1) x1 = 1.0, s1 = 2, x2 = (v - mb) * (1 / mc);
            else if (x1 < -1) x1 = -1.0, s1 = 0, x2 = (v + mb) * (1 / mc);
            if (x2 > 1 || x2 < -1) {
                s2 = x2 > 1 ? 2 : 0;
                x2 = x2 > 1 ? 1.0 : -1.0;
                x1 = s2 == 2 ? (u - mb) * (1 / ma) : (u + mb) * (1 / ma);
                if (x1 > 1) x1 = 1.0, s1 = 2;
                else if (x1 < -1) x1 = -1.0, s1 = 0;
            }
            for (int a = 0; a < 3; a++) d[a] = corner[a] - pos[a] - halfaxis[a] * x2;
            d[j] += size2[j] * x1;
            double dist = dot3(d, d);
            if (dist < bestdist - MINVAL) {
                int c1 = s1 * 3 + s2;
                bestdist = dist, best_seg = x2, best_box = x1;
                clcorner = i + (1 << j) * (c1 / 6), cledge = j, cltype = c1;
            }
        }
    if (cltype == -4) return;
    double second = capsule_box_second(pos, axis, halfaxis, size2, axisdir, cltype, clface, clcorner, cledge, best_seg, best_box);
    auto sphere_at = [&](double x) {
        double local[3], center[3];
        for (int a = 0; a < 3; a++) local[a] = pos[a] + halfaxis[a] * x;
        mat3_times(mat2, local, center);
        for (int a = 0; a < 3; a++) center[a] = center[a] + p.pos2[a];
        Pair s = p;
        s.pos1 = center;
        sphere_box(s, out);
    };
    sphere_at(best_seg);
    if (second > -3) sphere_at(second + best_seg);
}

// box-box's rounding scales (primitives.BOXBOX_*, MuJoCo's mjBOXBOX_*) and MuJoCo's mjMAXVAL
constexpr double BOXBOX_SEPEPS = 1e-13, BOXBOX_PAREPS = 1e-16, BOXBOX_SGNEPS = 1e-9, BOXBOX_DUPEPS = 1e-14,
                 BOXBOX_EDGEBIAS = 1e-6, MAXVAL = 1e10;
constexpr int BOXBOX_MAXVERT = 12;

// a polygon (n vertices (x, y, z)) clipped to sign v[coord] <= limit into out, z carried along (primitives.
// _clip_half_plane, MuJoCo's clipHalfPlane); returns the count (in itself when every vertex is inside)
inline int clip_half_plane(const double (*in)[3], int n, int coord, double sign, double limit, double (*out)[3], bool &moved) {
    double d[BOXBOX_MAXVERT];
    bool inside = true;
    for (int k = 0; k < n; k++) d[k] = sign * in[k][coord] - limit, inside = inside && d[k] <= 0;
    moved = !inside;
    if (inside) return n;
    int m = 0;
    for (int k = 0; k < n; k++) {
        int k1 = k + 1 == n ? 0 : k + 1;
        double dp = d[k], dq = d[k1];
        if (dp <= 0 && m < BOXBOX_MAXVERT) {
            for (int a = 0; a < 3; a++) out[m][a] = in[k][a];
            m++;
        }
        if (((dp < 0 && dq > 0) || (dp > 0 && dq < 0)) && m < BOXBOX_MAXVERT) {
            double t = dp / (dp - dq);
            for (int a = 0; a < 3; a++) out[m][a] = in[k][a] + t * (in[k1][a] - in[k][a]);
            m++;
        }
    }
    return m;
}

// box-box's edge-cross axis of code (6 + 3 i + j) in box 1's frame, normalized
inline void box_edge_axis(const double *rot, int code, double *axis) {
    int i = (code - 6) / 3, j = (code - 6) % 3;
    axis[i] = 0.0, axis[(i + 1) % 3] = -rot[3 * ((i + 2) % 3) + j], axis[(i + 2) % 3] = rot[3 * ((i + 1) % 3) + j];
    normalize3(axis);
}

// box_box's edge-edge contact (primitives._box_box_edges)
inline void box_box_edges(const Pair &p, const double *pos21, const double *rot, int code, double *axis, double septol,
                          std::vector<PreContact> &out) {
    const double *size1 = p.size1, *size2 = p.size2;
    int i = (code - 6) / 3, j = (code - 6) % 3, i1 = (i + 1) % 3, i2 = (i + 2) % 3, j1 = (j + 1) % 3, j2 = (j + 2) % 3;
    if (dot3(axis, pos21) < 0)
        for (int a = 0; a < 3; a++) axis[a] = -axis[a];
    double a2[3];
    for (int c = 0; c < 3; c++) a2[c] = axis[0] * rot[c] + axis[1] * rot[3 + c] + axis[2] * rot[6 + c];
    int amb1 = std::fabs(axis[i1]) < BOXBOX_SGNEPS ? i1 : std::fabs(axis[i2]) < BOXBOX_SGNEPS ? i2 : -1;
    int amb2 = std::fabs(a2[j1]) < BOXBOX_SGNEPS ? j1 : std::fabs(a2[j2]) < BOXBOX_SGNEPS ? j2 : -1;
    double d2[3] = {rot[j], rot[3 + j], rot[6 + j]}, b = d2[i], denom = 1 - b * b, best = MAXVAL, w1[3] = {}, w2[3] = {};
    for (int v1 = 0; v1 < (amb1 >= 0 ? 2 : 1); v1++)
        for (int v2 = 0; v2 < (amb2 >= 0 ? 2 : 1); v2++) {
            double c1[3], cc[3], c2[3], e[3], p1[3], p2[3], gap[3];
            c1[i] = 0.0, c1[i1] = axis[i1] >= 0 ? size1[i1] : -size1[i1], c1[i2] = axis[i2] >= 0 ? size1[i2] : -size1[i2];
            if (amb1 >= 0 && v1) c1[amb1] = -c1[amb1];
            cc[j] = 0.0, cc[j1] = a2[j1] >= 0 ? -size2[j1] : size2[j1], cc[j2] = a2[j2] >= 0 ? -size2[j2] : size2[j2];
            if (amb2 >= 0 && v2) cc[amb2] = -cc[amb2];
            mat3_times(rot, cc, c2);
            for (int a = 0; a < 3; a++) c2[a] = c2[a] + pos21[a], e[a] = c2[a] - c1[a];
            double d1e = e[i], d2e = dot3(d2, e);
            double s = denom < MINVAL ? 0.0 : (d1e - b * d2e) / denom;
            s = fmin_inline(fmax_inline(s, -size1[i]), size1[i]);
            double t = fmin_inline(fmax_inline(b * s - d2e, -size2[j]), size2[j]);
            s = fmin_inline(fmax_inline(d1e + b * t, -size1[i]), size1[i]);
            for (int a = 0; a < 3; a++) p1[a] = c1[a], p2[a] = c2[a] + d2[a] * t;
            p1[i] += s;
            for (int a = 0; a < 3; a++) gap[a] = p2[a] - p1[a];
            if (dot3(gap, gap) < best) {
                best = dot3(gap, gap);
                for (int a = 0; a < 3; a++) w1[a] = p1[a], w2[a] = p2[a];
            }
        }
    double gap[3] = {w2[0] - w1[0], w2[1] - w1[1], w2[2] - w1[2]}, dist = dot3(gap, axis);
    if (dist > septol) return;
    double mid[3] = {0.5 * (w1[0] + w2[0]), 0.5 * (w1[1] + w2[1]), 0.5 * (w1[2] + w2[2])}, pos[3], normal[3];
    mat3_times(p.mat1, mid, pos);
    for (int a = 0; a < 3; a++) pos[a] = pos[a] + p.pos1[a];
    mat3_times(p.mat1, axis, normal);
    add(out, dist, pos, normal, nullptr);
}

// box_box's face contact (primitives._box_box_faces)
inline void box_box_faces(const Pair &p, const double *pos21, const double *pos12, const double *rot, int code,
                          std::vector<PreContact> &out) {
    bool ref1 = code < 3;
    int a = ref1 ? code : code - 3;
    const double *sizeref = ref1 ? p.size1 : p.size2, *sizeinc = ref1 ? p.size2 : p.size1;
    const double *posref = ref1 ? p.pos1 : p.pos2, *matref = ref1 ? p.mat1 : p.mat2, *posoi = ref1 ? pos21 : pos12;
    double rinc[9];
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) rinc[3 * r + c] = ref1 ? rot[3 * r + c] : rot[3 * c + r];
    double sgn = posoi[a] >= 0 ? 1.0 : -1.0;
    int binc = 0;
    for (int k = 1; k < 3; k++)
        if (std::fabs(rinc[3 * a + k]) > std::fabs(rinc[3 * a + binc])) binc = k;
    double tinc = sgn * rinc[3 * a + binc] > 0 ? -1.0 : 1.0;
    int ax = (a + 1) % 3, ay = (a + 2) % 3, bu = (binc + 1) % 3, bv = (binc + 2) % 3;
    double cx[3], du[3], dv[3];
    for (int r = 0; r < 3; r++) {
        int c = r == 0 ? ax : r == 1 ? ay : a;
        cx[r] = posoi[c] + tinc * sizeinc[binc] * rinc[3 * c + binc];
        du[r] = sizeinc[bu] * rinc[3 * c + bu], dv[r] = sizeinc[bv] * rinc[3 * c + bv];
    }
    cx[2] = sgn * cx[2] - sizeref[a];
    du[2] *= sgn, dv[2] *= sgn;
    double poly[2][BOXBOX_MAXVERT][3];
    const double corner[4][2] = {{1, 1}, {-1, 1}, {-1, -1}, {1, -1}};
    for (int k = 0; k < 4; k++)
        for (int r = 0; r < 3; r++) poly[0][k][r] = cx[r] + corner[k][0] * du[r] + corner[k][1] * dv[r];
    int n = 4, cur = 0;
    const double sides[4][3] = {{0, 1, sizeref[ax]}, {0, -1, sizeref[ax]}, {1, 1, sizeref[ay]}, {1, -1, sizeref[ay]}};
    for (const auto &side : sides) {
        bool moved;
        n = clip_half_plane(poly[cur], n, int(side[0]), side[1], side[2], poly[1 - cur], moved);
        if (moved) cur = 1 - cur;
    }
    double accepted[BOXBOX_MAXVERT][3], dupe2 = BOXBOX_DUPEPS * (sizeref[ax] * sizeref[ax] + sizeref[ay] * sizeref[ay]);
    int naccept = 0;
    for (int k = 0; k < n; k++) {
        const double *v = poly[cur][k];
        if (v[2] > p.margin) continue;
        bool dupe = false;
        for (int q = 0; q < naccept && !dupe; q++) {
            double dx = accepted[q][0] - v[0], dy = accepted[q][1] - v[1];
            dupe = dx * dx + dy * dy < dupe2;
        }
        if (!dupe) {
            for (int r = 0; r < 3; r++) accepted[naccept][r] = v[r];
            naccept++;
        }
    }
    double nsign = ref1 ? sgn : -sgn, normal[3] = {nsign * matref[a], nsign * matref[3 + a], nsign * matref[6 + a]};
    for (int k = 0; k < naccept; k++) {
        double posc[3], pos[3];
        posc[ax] = accepted[k][0], posc[ay] = accepted[k][1], posc[a] = sgn * (sizeref[a] + 0.5 * accepted[k][2]);
        mat3_times(matref, posc, pos);
        for (int r = 0; r < 3; r++) pos[r] = pos[r] + posref[r];
        add(out, accepted[k][2], pos, normal, nullptr);
    }
}

// two boxes (primitives.box_box, MuJoCo's mjc_BoxBox): the separating-axis test over the 15 axes, then an edge pair or
// the clipped incident face
inline void box_box(const Pair &p, std::vector<PreContact> &out) {
    const double *size1 = p.size1, *size2 = p.size2;
    double dif[3], pos21[3], pos12[3], rot[9], rotabs[9];
    for (int a = 0; a < 3; a++) dif[a] = p.pos2[a] - p.pos1[a];
    for (int a = 0; a < 3; a++) pos21[a] = p.mat1[a] * dif[0] + p.mat1[3 + a] * dif[1] + p.mat1[6 + a] * dif[2];
    for (int a = 0; a < 3; a++) dif[a] = p.pos1[a] - p.pos2[a];
    for (int a = 0; a < 3; a++) pos12[a] = p.mat2[a] * dif[0] + p.mat2[3 + a] * dif[1] + p.mat2[6 + a] * dif[2];
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) {
            rot[3 * r + c] = p.mat1[r] * p.mat2[c] + p.mat1[3 + r] * p.mat2[3 + c] + p.mat1[6 + r] * p.mat2[6 + c];
            rotabs[3 * r + c] = std::fabs(rot[3 * r + c]);
        }
    double septol = p.margin + BOXBOX_SEPEPS * (size1[0] + size1[1] + size1[2] + size2[0] + size2[1] + size2[2]);
    double sep_best = -MAXVAL;
    int code = -1;
    for (int i = 0; i < 3; i++) {                                      // the faces of box 1
        double sep = std::fabs(pos21[i]) - size1[i] -
                     (rotabs[3 * i] * size2[0] + rotabs[3 * i + 1] * size2[1] + rotabs[3 * i + 2] * size2[2]);
        if (sep > septol) return;
        if (sep > sep_best) sep_best = sep, code = i;
    }
    for (int j = 0; j < 3; j++) {                                      // the faces of box 2
        double sep = std::fabs(pos12[j]) - size2[j] - (rotabs[j] * size1[0] + rotabs[3 + j] * size1[1] + rotabs[6 + j] * size1[2]);
        if (sep > septol) return;
        if (sep > sep_best) sep_best = sep, code = 3 + j;
    }
    double sep_face = sep_best;
    int code_face = code;
    for (int i = 0; i < 3; i++)                                        // the edge-cross axes
        for (int j = 0; j < 3; j++) {
            int i1 = (i + 1) % 3, i2 = (i + 2) % 3, j1 = (j + 1) % 3, j2 = (j + 2) % 3;
            double ax1 = -rot[3 * i2 + j], ax2 = rot[3 * i1 + j], norm2 = ax1 * ax1 + ax2 * ax2;
            if (norm2 < BOXBOX_PAREPS) continue;
            double inv = 1 / std::sqrt(norm2);
            ax1 *= inv, ax2 *= inv;
            double radius1 = size1[i1] * std::fabs(ax1) + size1[i2] * std::fabs(ax2);
            double a2_1 = ax1 * rot[3 * i1 + j1] + ax2 * rot[3 * i2 + j1], a2_2 = ax1 * rot[3 * i1 + j2] + ax2 * rot[3 * i2 + j2];
            double radius2 = size2[j1] * std::fabs(a2_1) + size2[j2] * std::fabs(a2_2);
            double sep = std::fabs(ax1 * pos21[i1] + ax2 * pos21[i2]) - radius1 - radius2;
            if (sep > septol) return;
            if (sep - BOXBOX_EDGEBIAS * std::fabs(sep) > sep_best && sep > sep_face) sep_best = sep, code = 6 + 3 * i + j;
        }
    if (code < 0) return;
    double axis[3];
    if (code >= 6) {                                                   // nearly a face's axis: the face instead
        box_edge_axis(rot, code, axis);
        double face_dot = code_face < 3 ? std::fabs(axis[code_face])
                        : std::fabs(axis[0] * rot[code_face - 3] + axis[1] * rot[3 + code_face - 3] + axis[2] * rot[6 + code_face - 3]);
        if (face_dot > 0.99 && sep_best < sep_face + 0.05 * std::fabs(sep_face) + MINVAL) code = code_face, sep_best = sep_face;
    }
    if (code >= 6) {
        box_edge_axis(rot, code, axis);
        box_box_edges(p, pos21, rot, code, axis, septol, out);
        return;
    }
    box_box_faces(p, pos21, pos12, rot, code, out);
}

// the narrow phase of a pair of geom types (geom 1 the lower type; primitives.FUNCTIONS), or nullptr
using Narrow = void (*)(const Pair &, std::vector<PreContact> &);
inline bool is_convex_pair(int64_t t1, int64_t t2);                      // convex.h
void convex_pair(const Pair &p, std::vector<PreContact> &out);
void hfield_convex(const Pair &p, std::vector<PreContact> &out);
inline Narrow narrow_phase(int64_t t1, int64_t t2) {
    if (is_convex_pair(t1, t2)) return convex_pair;                       // GJK/EPA (convex.h)
    if (t1 == GEOM_HFIELD) return t2 >= GEOM_SPHERE && t2 <= GEOM_MESH ? hfield_convex : nullptr;   // prisms (convex.h)
    if (t1 == GEOM_PLANE) {
        return t2 == GEOM_SPHERE ? plane_sphere : t2 == GEOM_CAPSULE ? plane_capsule : t2 == GEOM_CYLINDER ? plane_cylinder
             : t2 == GEOM_BOX ? plane_box : t2 == GEOM_ELLIPSOID ? plane_ellipsoid : t2 == GEOM_MESH ? plane_mesh : nullptr;
    }
    if (t1 == GEOM_SPHERE) {
        return t2 == GEOM_SPHERE ? sphere_sphere : t2 == GEOM_CAPSULE ? sphere_capsule : t2 == GEOM_CYLINDER ? sphere_cylinder
             : t2 == GEOM_BOX ? sphere_box : nullptr;
    }
    if (t1 == GEOM_CAPSULE) return t2 == GEOM_CAPSULE ? capsule_capsule : t2 == GEOM_BOX ? capsule_box : nullptr;
    if (t1 == GEOM_BOX) return t2 == GEOM_BOX ? box_box : nullptr;
    return nullptr;
}

}  // namespace
}  // namespace physai

#include "convex.h"                               // the convex pairs narrow_phase names
