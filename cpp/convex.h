// Convex pairs by GJK and EPA (src/physai/engine/convex.py, MuJoCo 4's engine_collision_convex.c, native CCD, one
// contact), function by function with the NumPy text's names:
//
//     sphere_support ... mesh_support_point   the geoms' support functions (their point farthest along a direction)
//     shrink, restore                         a geom without its margin, a sphere as its centre, a capsule as its segment
//     convex_pair(p, out)                     MuJoCo's mjc_Convex: the pair's contact (gjk.h's ccd)
//     is_convex_pair(t1, t2)                  the pairs convex.CONVEX_PAIRS lists
//     Prism, prism_add, prism_center, prism_support, local_extent, hfield_convex
//                                             MuJoCo's mjc_ConvexHField: a heightfield's prisms against a convex geom
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

// ccd's contact when in contact (dist < 0): margin + dist, pos halfway between the witness points, normal along x1 - x2
// ((1, 0, 0) when they coincide), appended to out; whether there was one (convex._contact)
inline bool contact(const Status &status, double margin, std::vector<PreContact> &out) {
    if (!(status.dist < 0) || !status.nx) return false;
    V3 normal = status.x1 - status.x2;
    double length = norm3(normal);
    normal = length >= GJK_MINVAL ? normal * (1 / length) : V3{1.0, 0.0, 0.0};
    V3 pos = (status.x1 + status.x2) * 0.5;
    add(out, margin + status.dist, pos.data(), normal.data(), nullptr);
    return true;
}

// MuJoCo's mjc_Convex with native CCD, one contact (convex.convex)
void convex_pair(const Pair &p, std::vector<PreContact> &out) {
    CcdObject o1 = make_object(p.type1, p.pos1, p.mat1, p.size1, p.mesh1, p.margin);
    CcdObject o2 = make_object(p.type2, p.pos2, p.mat2, p.size2, p.mesh2, p.margin);
    Status status = ccd(o1, o2, p.ccd_tolerance, p.ccd_iterations);
    contact(status, p.margin, out);
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
    for (int64_t r = rmin; r < rmax; r++) {
        corner(r + 1, cmin), corner(r, cmin);
        for (int64_t c = cmin + 1; c <= cmax; c++) {
            for (int64_t row : {r + 1, r}) {                           // two prisms per cell
                corner(row, c);
                if (prism.vert[3][2] < lo[2] - margin && prism.vert[4][2] < lo[2] - margin &&
                    prism.vert[5][2] < lo[2] - margin)
                    continue;                                          // wholly below the geom and its margin
                o1.pos = prism_center(prism);
                Status status = ccd(o1, o2, p.ccd_tolerance, p.ccd_iterations);
                if (contact(status, margin, out)) {                    // back to the world: R1 x + p1
                    PreContact &con = out.back();
                    double pos[3] = {con.pos[0], con.pos[1], con.pos[2]};
                    double normal[3] = {con.normal[0], con.normal[1], con.normal[2]};
                    for (int i = 0; i < 3; i++) {
                        con.pos[i] = (R[3 * i] * pos[0] + R[3 * i + 1] * pos[1]) + R[3 * i + 2] * pos[2] + p.pos1[i];
                        con.normal[i] = (R[3 * i] * normal[0] + R[3 * i + 1] * normal[1]) + R[3 * i + 2] * normal[2];
                    }
                }
                if (out.size() - start >= MAXCONPAIR) return;
            }
        }
    }
}

}  // namespace
}  // namespace physai
