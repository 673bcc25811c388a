// Convex pairs by GJK and EPA (src/physai/engine/convex.py, MuJoCo 4's engine_collision_convex.c, native CCD, one
// contact), function by function with the NumPy text's names:
//
//     sphere_support ... mesh_support_point   the geoms' support functions (their point farthest along a direction)
//     shrink, restore                         a geom without its margin, a sphere as its centre, a capsule as its segment
//     convex_pair(p, out)                     MuJoCo's mjc_Convex: the pair's contact (gjk.h's ccd)
//     is_convex_pair(t1, t2)                  the pairs convex.CONVEX_PAIRS lists
#pragma once

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
    return to_world(o, {scale * local[0], scale * local[1], local[2] >= 0 ? o.size[1] : -o.size[1]});
}

// a box's corner along d; o.vertex its id (bit k: the + side of axis k)
inline V3 box_support(CcdObject &o, const V3 &d) {
    V3 local = to_local(o, d), corner;
    for (int a = 0; a < 3; a++) corner[a] = local[a] >= 0 ? o.size[a] : -o.size[a];
    o.vertex = int64_t(corner[0] > 0) | int64_t(corner[1] > 0) << 1 | int64_t(corner[2] > 0) << 2;
    return to_world(o, corner);
}

// a convex mesh's vertex along d (mesh_support: the hull graph's climb); o.vertex its id
inline V3 mesh_support_point(CcdObject &o, const V3 &d) {
    const ConvexMesh &mesh = *static_cast<const ConvexMesh *>(o.mesh);
    V3 local = to_local(o, d);
    o.vertex = mesh_support(mesh, local.data());
    const double *v = mesh.vert + 3 * o.vertex;
    return to_world(o, {v[0], v[1], v[2]});
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

// the pairs collided here (convex.CONVEX_PAIRS and MULTI_PAIRS; which candidates they take: collision.candidates)
inline bool is_convex_pair(int64_t t1, int64_t t2) {
    return (t1 == GEOM_SPHERE && (t2 == GEOM_ELLIPSOID || t2 == GEOM_MESH)) || (t1 == GEOM_CAPSULE && t2 == GEOM_ELLIPSOID) ||
           (t1 == GEOM_ELLIPSOID && (t2 == GEOM_ELLIPSOID || t2 == GEOM_CYLINDER || t2 == GEOM_BOX || t2 == GEOM_MESH)) ||
           ((t1 == GEOM_CAPSULE || t1 == GEOM_CYLINDER) && (t2 == GEOM_CYLINDER || t2 == GEOM_MESH)) ||
           (t1 == GEOM_CYLINDER && t2 == GEOM_BOX) || ((t1 == GEOM_BOX || t1 == GEOM_MESH) && t2 == GEOM_MESH);
}

// MuJoCo's mjc_Convex with native CCD, one contact (convex.convex)
void convex_pair(const Pair &p, std::vector<PreContact> &out) {
    CcdObject o1 = make_object(p.type1, p.pos1, p.mat1, p.size1, p.mesh1, p.margin);
    CcdObject o2 = make_object(p.type2, p.pos2, p.mat2, p.size2, p.mesh2, p.margin);
    Status status = ccd(o1, o2, p.ccd_tolerance, p.ccd_iterations);
    if (!(status.dist < 0) || !status.nx) return;
    V3 normal = status.x1 - status.x2;
    double length = norm3(normal);
    normal = length >= GJK_MINVAL ? normal * (1 / length) : V3{1.0, 0.0, 0.0};
    V3 pos = (status.x1 + status.x2) * 0.5;
    add(out, p.margin + status.dist, pos.data(), normal.data(), nullptr);
}

}  // namespace
}  // namespace physai
