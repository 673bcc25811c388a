// The kernels as the bindings see them: one table (Kernels) per number type, each from its own translation unit
// compiled with its own flags:
//
//     scalar.cpp       physai::scalar::kernels     one state at a time (double), baseline flags
//     isa_default.cpp  physai::baseline::kernels   2 states side by side (Lanes2), baseline x86-64 (SSE2) or NEON
//     isa_avx2.cpp     physai::avx2::kernels       4 states (Lanes4), -mavx2
//     isa_avx512.cpp   physai::avx512::kernels     8 states (Lanes8), -mavx512f
//
// A batch call runs a range of states through the active instruction set's lanes, then what they leave (a last single
// state, or what a lane block declined) through the scalar kernels. The run-time choice is in dispatch.cpp (isa_*).
//
// Against the one-definition-rule hazard of per-ISA translation units (an inline function or template instantiation
// emitted in two objects is kept once by the linker, which could put AVX-512 code on the baseline path): every function
// of the engine's headers has internal linkage (an unnamed namespace), the shared types (Model, Data<T>, ...) carry no
// code but their lane-typed members, and each ISA unit instantiates them for its own lane type only; the only names an
// ISA unit exports are its table below. scripts/check_isa_symbols.sh checks the objects for symbols defined twice.
#pragma once

#include <atomic>
#include <cstdint>

#include "data.h"
#include "model.h"

namespace physai {

// the operations of a batch call (physai.engine._native.run; OPS names them)
enum Op { RNEA = 0, BIAS, GRAVITY, MASS_MATRIX, FORWARD_DYNAMICS, ABA, KINETIC, POTENTIAL, ENERGY, NOPS };
inline constexpr const char *OP_NAMES[NOPS] = {"rnea", "bias", "gravity", "mass_matrix", "forward_dynamics", "aba",
                                               "kinetic_energy", "potential_energy", "energy"};
// inputs (sizes: 'q' nq, 'v' nv) and the output size per state ('v' nv, 'M' nv^2, 's' 1)
inline constexpr const char *OP_INPUTS[NOPS] = {"qvv", "qv", "q", "q", "qvv", "qvv", "qv", "q", "qv"};
inline constexpr char OP_OUTPUT[NOPS] = {'v', 'v', 'v', 'M', 'v', 'v', 's', 's', 's'};
// the derivatives (physai.engine._native.derivatives): inputs q, qd, qdd or q, qd, tau; three (nv, nv) outputs
enum DerivativeOp { RNEA_DERIVATIVES = 0, FORWARD_DYNAMICS_DERIVATIVES = 1 };

// a kernel set's workspace (Work<T> of data.h for its number type T), made and freed by the set
struct Workspace;

// the return of a range kernel when a state failed (not finite, a zero quaternion, a singular matrix)
constexpr int64_t FAILED = -1;

// a range kernel: states [lo, hi) of op for the inputs into the outputs (as many as op has, its output size per state
// each); returns the first state not done (the lane kernels leave a last single state to the scalar kernels), or FAILED;
// stops early once `stop` is set
using RangeKernel = int64_t (*)(const Model &, Workspace &, int op, const Input *in, double *const *out, int64_t lo, int64_t hi,
                                const std::atomic<int> &stop);

struct Kernels {
    const char *name;                 // PHYSAI_ISA's and set_isa's name: "avx512f", "avx2", "default"; "scalar"
    int lanes;                        // states side by side
    Workspace *(*create)(const Model &);
    void (*destroy)(Workspace *);
    RangeKernel compute;              // an Op into out[0]
    RangeKernel derivatives;          // a DerivativeOp into out[0], out[1], out[2] (nv^2 per state each)
    // the trajectories n in [lo, hi) of r whose status is RERUN: the scalar kernels run each and set its status; the
    // lane kernels run blocks side by side and set -1 for those they finish (not for implicit, whose LU pivots per lane)
    void (*simulate)(const Model &, const SimModel &, const Rollout &r, int64_t lo, int64_t hi);
};

namespace scalar {
extern const Kernels kernels;
// (Jp; Jr) (6, nv) of a point (3, in link's frame) for each of N states q (N, nq) into out (N, 6, nv); ZERO_QUATERNION
int jacobians(const Model &, Workspace &, const double *q, int64_t N, int64_t link, const double *point, double *out);
// every body's world pose (pos (N, nbody, 3), rot (N, nbody, 3, 3)) from its link's (-1: the world) and its pose in it
int body_poses(const Model &, Workspace &, const double *q, int64_t N, int64_t nbody, const int64_t *body_link,
               const double *body_pos, const double *body_rot, double *pos, double *rot);
// integrate (op 0: x = q (nq), y = v (nv) -> q) or difference (op 1: x = q0, y = q1 -> v) for N states; false when a
// result is not finite
bool configuration(const SimModel &, int op, const double *x, const double *y, int64_t N, double h, double *out);
}  // namespace scalar

namespace baseline { extern const Kernels kernels; }
namespace avx2 { extern const Kernels kernels; }
namespace avx512 { extern const Kernels kernels; }

// the batch kernels' instruction sets built into this module, best first; whether this CPU runs them; the active one
// (PHYSAI_ISA when the CPU supports it, else the best it supports; set_isa switches)
int isa_count();
const Kernels &isa_kernels(int k);
bool isa_supported(int k);
int active_isa();
bool set_isa(const char *name);

}  // namespace physai
