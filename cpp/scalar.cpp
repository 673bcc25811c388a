// The kernels for one state at a time (double), compiled with the baseline flags: the scalar table of cpp/kernels.h
// (what the lanes leave of a batch, and every call of one state), and the calls that exist for one state only:
// Jacobians, body poses, integrate / difference.
#include "batch.h"
#include "integrate.h"
#include "kernels.h"
#include "smooth.h"
#include "support.h"

namespace physai {
namespace scalar {

const Kernels kernels = kernels_of<double>("scalar");

int jacobians(const Model &m, Workspace &ws, const double *q, int64_t N, int64_t link, const double *point, double *out) {
    Data<double> &d = work_of<double>(ws).d;
    for (int64_t s = 0; s < N; s++) {
        int st = position(m, d, q + s * m.nq);
        if (st != OK) return st;
        jacobian(m, d, link, point, out + s * 6 * m.nv);
    }
    return OK;
}

int body_poses(const Model &m, Workspace &ws, const double *q, int64_t N, int64_t nbody, const int64_t *body_link,
               const double *body_pos, const double *body_rot, double *pos, double *rot) {
    Data<double> &d = work_of<double>(ws).d;
    for (int64_t s = 0; s < N; s++) {
        int st = kinematics(m, d, q + s * m.nq);
        if (st != OK) return st;
        for (int64_t b = 0; b < nbody; b++)
            body_pose(d, body_link[b], body_pos + 3 * b, body_rot + 9 * b, pos + (s * nbody + b) * 3, rot + (s * nbody + b) * 9);
    }
    return OK;
}

bool configuration(const SimModel &s, int op, const double *x, const double *y, int64_t N, double h, double *out) {
    int64_t xs = s.nq, ys = op == 0 ? s.nv : s.nq, os = op == 0 ? s.nq : s.nv;
    for (int64_t n = 0; n < N; n++) {
        const double *a = x + n * xs, *b = y + n * ys;
        double *o = out + n * os;
        if (op == 0) integrate_pos(s, a, b, h, o);
        else difference_pos(s, a, b, h, o);
        if (!all_finite(o, os)) return false;
    }
    return true;
}

}  // namespace scalar
}  // namespace physai
