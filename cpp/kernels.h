// The kernels as the bindings see them: one table (Kernels) per number type, each from its own translation unit
// compiled with its own flags:
//
//     scalar.cpp       physai::scalar::kernels     one state at a time (double), baseline flags
//     isa_default.cpp  physai::baseline::kernels   2 states side by side (Lanes2), baseline x86-64 (SSE2) or NEON
//     isa_avx2.cpp     physai::avx2::kernels       4 states (Lanes4), -mavx2
//     isa_avx512.cpp   physai::avx512::kernels     8 states (Lanes8), -mavx512f
//
// A batch call runs a range of states through the active instruction set's lanes, then what they leave (a last single
// state, an operation they do not run, what a lane block failed on) through the scalar kernels. The run-time choice
// is in dispatch.cpp (isa_*).
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

// Every operation of the compiled engine, in one table: physai.engine._native.call(model, op, a, ..., e) runs one for the
// arguments a, b, c (as many as it takes; _native.OPS names the codes, _native.ARGUMENTS the arguments). A new kernel is
// one row here (and its case in batch.h's one_state, or its runner in bindings.cpp).
enum Op {
    RNEA, BIAS, GRAVITY, MASS_MATRIX, FORWARD_DYNAMICS, ABA, KINETIC_ENERGY, POTENTIAL_ENERGY, ENERGY,   // smooth.h, forward.h
    RNEA_DERIVATIVES, FORWARD_DYNAMICS_DERIVATIVES,                                                    // derivative.h
    MOMENTUM_MATRIX, MOMENTUM_MATRIX_DOT, COM_JACOBIAN, JACOBIAN, JACOBIAN_DOT,                        // support.h
    FRAME_VELOCITY, FRAME_ACCELERATION,
    BODY_POSES, TENDONS, INTEGRATE, DIFFERENCE,                                                        // one state at a time
    ROLLOUT,                                                                                           // rollout.h's loop
    CONSTRAINT_ROWS, CONSTRAINT_FORWARD, CONSTRAINT_INVERSE,                                           // inverse.h
    STEP_DERIVATIVES,                                                                                  // step_derivative.h
    COLLISION_DETECT,                                                                                  // collision.h
    PROVEN_STILL,                                                                                      // constraint_derivative.h
    CONSTRAINED_STEP,                                                                                  // detect, solve, terms, step
    NOPS
};
struct Operation {
    const char *name;        // physai's name of it: _native.OPS[name] is its code
    const char *arguments;   // its arguments, "name:kind" each; kinds: q, v: a state (nq, nv) or N of them, (size,) or
                             // (N, size); Q, V: N states, (N, size); h: a float; l: a link index; p: a point (3,);
                             // o: options (a tuple: rollout's, the constraint operations' contacts and settings,
                             // step_derivatives' inputs; cpp/bindings.cpp)
    const char *outputs;     // its results per state, one kind each: v (nv), q (nq), M (nv, nv), s (one number),
                             // J (6, nv), C (3, nv), w (6: a twist), P (nbody, 3), R (nbody, 3, 3), L (ntendon), T
                             // (ntendon, nv); none for the rollout and the constraint
                             // operations, whose runners in cpp/bindings.cpp make their results (rows vary per state)
    bool finite;             // whether a result that is not finite is an error (NONFINITE), as on the NumPy path
    bool lanes;              // whether the lane kernels run it (else the scalar kernels run every state)
};
inline constexpr Operation OPERATIONS[NOPS] = {
    {"rnea", "q:q qd:v qdd:v", "v", true, true},
    {"bias", "q:q qd:v", "v", true, true},
    {"gravity", "q:q", "v", true, true},
    {"mass_matrix", "q:q", "M", true, true},
    {"forward_dynamics", "q:q qd:v tau:v", "v", true, true},
    {"aba", "q:q qd:v tau:v", "v", true, true},
    {"kinetic_energy", "q:q qd:v", "s", true, true},
    {"potential_energy", "q:q", "s", true, true},
    {"energy", "q:q qd:v", "s", true, true},
    {"rnea_derivatives", "q:q qd:v qdd:v", "MMM", true, true},
    {"forward_dynamics_derivatives", "q:q qd:v tau:v", "MMM", true, true},
    {"momentum_matrix", "q:q", "J", true, true},
    {"momentum_matrix_dot", "q:q qd:v", "J", true, true},
    {"com_jacobian", "q:q", "C", true, true},
    {"jacobian", "q:q link:l point:p", "J", false, true},
    {"jacobian_dot", "q:q qd:v link:l point:p", "J", false, true},
    {"frame_velocity", "q:q qd:v link:l point:p", "w", false, true},
    {"frame_acceleration", "q:q qd:v qdd:v link:l point:p", "ww", false, true},
    {"body_poses", "q:q", "PR", false, false},
    {"tendons", "q:q", "LT", true, false},
    {"integrate", "q:q qd:v h:h", "q", true, false},
    {"difference", "q0:q q1:q h:h", "v", true, false},
    {"rollout", "q0:Q qd0:V options:o", "", false, false},
    {"constraint_rows", "q:q qd:v constraint:o", "", false, false},
    {"constraint_forward", "q:q qd:v tau:v constraint:o", "", false, false},
    {"constraint_inverse", "q:q qd:v qacc:v constraint:o", "", false, false},
    {"step_derivatives", "q:q qd:v options:o", "", false, false},
    {"collision_detect", "q:q subset:o along:o", "", false, false},
    {"proven_still", "still:o tables:o state:o check:o", "", false, false},
    {"constrained_step", "q:q qd:v options:o tables:o", "", false, false},
};
inline constexpr bool is_constraint(int op) { return op >= CONSTRAINT_ROWS && op <= CONSTRAINT_INVERSE; }

// the integrators of a rollout by code (data.h's Integrator), named as physai.integrators names them (_native.INTEGRATORS)
inline constexpr const char *INTEGRATOR_NAMES[] = {"euler", "rk4", "implicit", "implicitfast", "discrete"};
static_assert(sizeof(INTEGRATOR_NAMES) / sizeof(INTEGRATOR_NAMES[0]) == DISCRETE + 1, "a name per Integrator");

// a kernel set's workspace (Work<T> of data.h for its number type T), made and freed by the set
struct Workspace;

// the range kernel: states [lo, hi) of a call (every operation but ROLLOUT). A state that meets a zero quaternion or a
// singular matrix, or whose result is not finite (where the operation checks), is recorded in failures and the others
// go on. Returns the first state not done: the lane kernels leave what does not fill their lanes, every state of an
// operation they do not run, and the rest of a block that failed to the scalar kernels, which do each state.
using RangeKernel = int64_t (*)(const Model &, Workspace &, const Call &call, int64_t lo, int64_t hi, Failures &failures);

struct Kernels {
    const char *name;                 // PHYSAI_ISA's and set_isa's name: "avx512f", "avx2", "default"; "scalar"
    int lanes;                        // states side by side
    Workspace *(*create)(const Model &);
    void (*destroy)(Workspace *);
    RangeKernel run;
    // the trajectories n in [lo, hi) of r whose status is RERUN: the scalar kernels run each and set its status; the
    // lane kernels run blocks side by side and set -1 for those they finish (not for implicit, whose LU pivots per lane)
    void (*simulate)(const Model &, const Actuators &, const Rollout &r, int64_t lo, int64_t hi);
    // the smooth quantities of the constraint operations (data.h's SmoothLayout) of states [lo, hi) of q and qd into out
    // (SmoothLayout::size per state, from lo's): the lane kernels in blocks of their lanes, as run; returns the first
    // state not done (the scalar kernels: lo), which the constraint kernel computes itself
    int64_t (*constraint_smooth)(const Model &, Workspace &, Input q, Input qd, int64_t lo, int64_t hi, double *out);
    // trajectories n .. n + con.count - 1 of a constrained rollout side by side (count <= lanes), from step k0, lane l's
    // contacts, rows and solve through con.lane[l] (cpp/simulate.h's, one state at a time): OK with every step written;
    // otherwise (the scalar kernels; a solve or a lane that failed; what the lanes do not step) not, and the caller runs
    // them one by one, which reports exactly what and where
    int (*simulate_constrained)(const Model &, const Actuators &, const Rollout &r, int64_t n, int64_t k0,
                                const LaneConstrain &con);
};

// the widest lanes of a constrained rollout (constrained_lanes below; wider tables' simulate_constrained:
// always one by one): AVX-512's 8. The pile of benchmarks/bench_collision.py (a), slower in lanes of 8 than one by one
// (benchmarks/README.md, issue Q), now runs one by one by lanes_gain; Gymnasium's Humanoid (RK4 + PGS): lanes of 8
// against 4 in benchmarks/README.md's bench_tasks section (a hand measurement)
constexpr int CONSTRAINED_LANES = 8;

// the constraint operations (cpp/inverse.h), one state at a time, compiled into the scalar translation unit only (the
// rows vary per state: no lanes; the smooth stages of a call's blocks of states come from the active lanes'
// constraint_smooth): a workspace per thread (create, destroy, grown to the largest state it meets and kept), and the
// states [lo, hi) of a call, each state's rows appended to out, a state that meets a zero quaternion or a singular
// matrix recorded in failures
struct ConstraintWorkspace;
struct ConstrainedSimWorkspace;
struct ConstraintKernels {
    ConstraintWorkspace *(*create)(const Model &);
    void (*destroy)(ConstraintWorkspace *);
    void (*run)(const Model &, ConstraintWorkspace &, const ConstraintCall &call, int64_t lo, int64_t hi, RowsOut &out,
                Failures &failures);
    // cpp/simulate.h: a rollout with constraints, in a workspace of its own, or in one kept by the caller (made for the
    // model and actuators as they were; sim_fits tells whether it still fits them)
    void (*simulate)(const Model &, const Actuators &, const Rollout &r, int64_t lo, int64_t hi);
    ConstrainedSimWorkspace *(*create_sim)(const Model &, const Actuators &);
    void (*destroy_sim)(ConstrainedSimWorkspace *);
    bool (*sim_fits)(const ConstrainedSimWorkspace *, const Model &, const Actuators &);
    void (*simulate_in)(ConstrainedSimWorkspace &, const Model &, const Actuators &, const Rollout &r, int64_t lo, int64_t hi);
};

// step_derivatives (cpp/step_derivative.h), one state at a time, compiled into the scalar translation unit only: a
// workspace for a model and its actuators (create, destroy; nu: the controls it was made for), and the states [lo, hi) of
// a call, each one's Status into call.status
struct StepDerivativeWorkspace;
struct StepDerivativeKernels {
    StepDerivativeWorkspace *(*create)(const Model &, const Actuators &);
    void (*destroy)(StepDerivativeWorkspace *);
    int (*nu)(const StepDerivativeWorkspace *);
    void (*run)(const Model &, const Actuators &, StepDerivativeWorkspace &, const StepDerivativeCall &call, int64_t lo, int64_t hi);
};

// collision detection (cpp/collision.h's detect), one state at a time, compiled into the scalar translation unit only:
// the contacts of states [lo, hi) of q appended to out: each state's count (ncon), CONTACT_FLOATS and CONTACT_INTS per
// contact (f, i) and its candidate pair (cand); each state's count of left-out pairs that may touch (nnear) and their
// indices into the model's missing_* (near)
struct DetectOut {
    std::vector<int64_t> ncon, i, cand, nnear, near;
    std::vector<double> f;
    void clear() { ncon.clear(), i.clear(), cand.clear(), nnear.clear(), near.clear(), f.clear(); }
};
struct CollisionWorkspace;

namespace {
// whether a constrained rollout of m gains from lanes: the lanes step the smooth stages side by side while each lane's
// contacts, rows and solve run alone, with its copies of the stages (LaneConstrain) besides; standalone free bodies
// (m.nfree, 6 dofs each) bring the least smooth work per dof (no chain) and each its collisions, so lanes unless they
// hold three quarters of the dofs or more (6 nfree / nv >= 3/4: 8 nfree >= nv). Measured (benchmarks/README.md, issue
// Q; one thread, CPU time, one-by-one / lanes of 4): the Humanoid 1.16-1.20 (smooth stages 30% of its one-by-one
// step), with 4 free boxes (51% of the dofs free) 1.06, 8 (68%) 1.01, 16 (81%) 0.88; the pile of 40 free bodies
// (100%) 0.94-0.96 (smooth stages 11%); set at lanes of 4, rechecked at 8 by hand (a review: the Humanoid with 0, 4, 8
// boxes in lanes of 8 no slower than of 4)
inline bool lanes_gain(const Model &m) { return 8 * int64_t(m.nfree) < m.nv; }

// whether a block of count trajectories of a constrained rollout steps side by side in lanes `lanes` wide (batch.h's
// simulate_constrained_block; else one by one, known before the lanes' run contexts are made, cpp/simulate.h): at most
// CONSTRAINED_LANES wide, the integrators whose stages solve (euler, rk4; implicitfast without free bodies: implicit's
// ONE_BY_ONE), actuators the lanes step (Actuators::lanes), no spatial tendon, and a model the lanes speed up
// (lanes_gain)
inline bool constrained_lanes_step(const Model &m, const Actuators &act, int integrator, int64_t count, int64_t lanes) {
    bool stages_solve = integrator == EULER || integrator == RK4 || (integrator == IMPLICITFAST && !m.nfree);
    return count >= 2 && count <= lanes && lanes <= CONSTRAINED_LANES && stages_solve && act.lanes && !m.tendon_spatial &&
           lanes_gain(m);
}

// whether an argument of kind `kind` (OPERATIONS) is a state, (size,) or (N, size)
inline bool is_state(char kind) { return kind == 'q' || kind == 'v' || kind == 'Q' || kind == 'V'; }

// the entries per state of an argument or a result of kind `kind` (OPERATIONS), 0 for an argument that is no state
inline int64_t entries(const Model &m, char kind) {
    switch (kind) {
        case 'q': case 'Q': return m.nq;
        case 'v': case 'V': return m.nv;
        case 'M': return int64_t(m.nv) * m.nv;
        case 's': return 1;
        case 'J': return 6 * int64_t(m.nv);
        case 'w': return 6;
        case 'C': return 3 * int64_t(m.nv);
        case 'P': return 3 * int64_t(m.nbody);
        case 'R': return 9 * int64_t(m.nbody);
        case 'L': return m.ntendon;
        case 'T': return m.ntendon * m.nv;
    }
    return 0;
}

// c.op's state inputs and outputs (their counts and entries per state) from OPERATIONS
inline void layout(const Model &m, Call &c) {
    const Operation &o = OPERATIONS[c.op];
    c.nin = c.nout = 0;
    for (const char *a = o.arguments; *a; a++)
        if (*a == ':' && is_state(a[1]) && c.nin < 3) c.in_size[c.nin++] = entries(m, a[1]);
    for (const char *r = o.outputs; *r && c.nout < 3; r++) c.out_size[c.nout++] = entries(m, *r);
}

}  // namespace

namespace scalar {
extern const Kernels kernels;
extern const ConstraintKernels constraint_kernels;
extern const StepDerivativeKernels step_derivative_kernels;
// collision detection's workspace (cpp/collision.h's CollisionWork), made for a model and kept by the caller
CollisionWorkspace *make_collision_work(const Model &m);
void free_collision_work(CollisionWorkspace *w);
// subset: nullptr, or each state's pairs to collide (ncand + nmissing flags a state: cpp/collision.h's detect); q0:
// nullptr, or the state each state s moved from along dof dofs[s] (detect's along: the other bodies posed at q0)
void detect_states(const Model &m, CollisionWorkspace &w, Input q, const uint8_t *subset, int64_t lo, int64_t hi,
                   DetectOut &out, const double *q0 = nullptr, const int64_t *dofs = nullptr);
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

// test hook (_native._dense_metric): force solver.h's metric_model onto every dof's chain (force) and count the metrics
// it made there (made), one for the module (dispatch.cpp), so that its path is seen and compared from Python
struct DenseMetricHook {
    std::atomic<bool> force{false};
    std::atomic<int64_t> made{0};
};
DenseMetricHook &dense_metric_hook();

namespace {
// the lanes of constrained rollouts (cpp/simulate.h): the active instruction set's, or the next narrower one supported
// while it is wider than CONSTRAINED_LANES
inline const Kernels &constrained_lanes() {
    int k = active_isa();
    while (isa_kernels(k).lanes > CONSTRAINED_LANES && k + 1 < isa_count() && isa_supported(k + 1)) k++;
    return isa_kernels(k);
}
}  // namespace

}  // namespace physai
