// What physai.jacobians and physai.kinematics read from the smooth stages (MuJoCo's engine_support.c: mj_jac): the
// Jacobian of a point fixed in a link, and a body's world pose from its link's. One state at a time (double).
#pragma once

#include <cstdint>

#include "data.h"
#include "model.h"
#include "spatial.h"

namespace physai {
namespace {

// (Jp; Jr) (6, nv) of a point fixed in link l (p: its position in the link's frame) from a Data after com_pos:
// r = p - centre, Jp = S_lin + S_ang x r, Jr = S_ang in the columns of l's dofs and their ancestors, 0 elsewhere
inline void jacobian(const Model &m, const Data<double> &d, int64_t l, const double *p, double *J) {
    int nv = m.nv;
    for (int k = 0; k < 6 * nv; k++) J[k] = 0.0;
    const double *c = &d.cpos[3 * l];
    double r[3];
    mat3_times(&d.xmat[9 * l], p, r);
    for (int a = 0; a < 3; a++) r[a] = c[a] + r[a];
    for (int64_t i = m.link_dofadr[l] + m.link_dofnum[l] - 1; i >= 0; i = m.dof_parentid[i]) {
        const double *S = &d.cdof[6 * i];
        double wr[3];
        cross(S, r, wr);
        for (int a = 0; a < 3; a++) {
            J[a * nv + i] = S[3 + a] + wr[a];
            J[(3 + a) * nv + i] = S[a];
        }
    }
}

// a body's world pose (p (3), rot (3, 3)) from its pose in link l (bp, br) on a Data after kinematics: p = x + R bp,
// rot = R br; the world's pose (bp, br itself) for l = -1
inline void body_pose(const Data<double> &d, int64_t l, const double *bp, const double *br, double *p, double *rot) {
    if (l < 0) {
        for (int a = 0; a < 3; a++) p[a] = bp[a];
        for (int a = 0; a < 9; a++) rot[a] = br[a];
        return;
    }
    const double *X = &d.xmat[9 * l], *x = &d.xpos[3 * l];
    mat3_times(X, bp, p);
    for (int a = 0; a < 3; a++) p[a] = x[a] + p[a];
    mat3_mul(X, br, rot);
}

}  // namespace
}  // namespace physai
