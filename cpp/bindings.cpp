// physai.engine._native: the engine's kernels (cpp/kernels.h) as a Python module. The only file that knows Python,
// nanobind and numpy: it reads the arguments, allocates the results, releases the GIL around threads, and defines the
// module:
//
//     Model(fields)              the compiled model, from a mapping of named arrays (physai.engine.native.fields);
//                                Model.add_constraints(fields) adds the constraint model's (native.constraint_fields)
//     Actuators(model, fields)   a simulation's actuators, from the named arrays of physai.engine.actuators.Actuators
//     call(model, op, a, ..., e)  operation op (OPS[name]) of cpp/kernels.h's table on its arguments (ARGUMENTS[name]):
//                                the kernels of batch.h (run), the rollout's loop (rollout), the constraint
//                                operations (constrain: their rows vary per state, gathered from each thread's ranges)
//                                and collision detection (collision_detect: each state's contacts, concatenated), and
//                                the still dofs' proof (proven_still: cpp/constraint_derivative.h)
//     OPS, ARGUMENTS, INTEGRATORS, KernelError, the instruction sets (isa, isas, set_isa, lanes;
//     constrained_lanes_step: whether a constrained rollout runs in lanes) and the threads (num_threads,
//     hardware_threads, max_threads; _set_thread_limit: test-only, see cpp/parallel.h); _dense_metric: test and
//     benchmark hook, the discrete metric's layout (cpp/kernels.h's DenseMetricHook, solver.h's metric_model)
//
// A signal (Ctrl-C) during a long call raises its exception (KeyboardInterrupt) within milliseconds, the results discarded.
// call checks every argument before any kernel runs and either returns the results or raises
// KernelError(kind, argument, state, index, result): the Python side (physai.engine.native) turns it into physai's named
// error, or converts an argument of another type once and calls again. Kinds:
//     "type"               an argument is not what the kernel reads in place (not a float64 numpy array, or misaligned)
//     "shape"              a state argument is not (size,) or (N, size), or its N is not the others' (or 0)
//     "nonfinite"          a state argument holds NaN or infinity at [state, index]
//     "zero_quaternion"    a quaternion of q is zero (in state `state`; rollout: trajectory `state` at step `index`)
//     "singular"           a matrix to factor is not positive definite (the mass matrix: a dof without mass or armature;
//                          the constraint solver's Hessian)
//     "nonfinite_result"   finite inputs gave a result that is not finite (an overflow); `result`: what was computed
//
// The Model's arrays are copied once into the compiled Model (cached on the Python Model, physai.engine.Model.compiled):
// the const Model the kernels read, the arrays it points into, and the workspaces its calls keep (cpp/workspace.h, which
// also shares a call's states among threads, cpp/parallel.h). The GIL is kept for calls on the calling thread and
// released around threads (the Release type given to cpp/workspace.h's runs).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL physai_native_ARRAY_API
#include <numpy/arrayobject.h>                                          // PyArray_SimpleNew: the results, without a Python call

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <atomic>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "configuration.h"
#include "constraint_derivative.h"
#include "kernels.h"
#include "workspace.h"

namespace nb = nanobind;

namespace physai {
namespace {

using IArr = nb::ndarray<const int64_t, nb::c_contig, nb::device::cpu>;
using DArr = nb::ndarray<const double, nb::c_contig, nb::device::cpu>;

// ---------------------------------------------------------------- errors

PyObject *kernel_error = nullptr;                                      // _native.KernelError, made at import

// raise KernelError(kind, argument, state, index, result)
[[noreturn]] void fail(const char *kind, const char *argument, int64_t state = -1, int64_t index = -1,
                       nb::object result = nb::none()) {
    nb::object arg = argument ? nb::object(nb::str(argument)) : nb::none();
    nb::tuple args = nb::make_tuple(kind, arg, state, index, result);
    PyErr_SetObject(kernel_error, args.ptr());
    throw nb::python_error();
}

// the poll of a run on threads (cpp/parallel.h), on the calling thread: whether a signal is pending, its Python handler
// run (Ctrl-C: KeyboardInterrupt, kept set for the caller to raise once the threads have joined)
bool signal_pending() {
    nb::gil_scoped_acquire gil;
    return PyErr_CheckSignals() != 0;
}

// ---------------------------------------------------------------- the compiled model, from named fields

// copies of the fields' arrays, which a Model or Actuators points into
struct Arrays {
    std::vector<std::vector<int64_t>> ints;
    std::vector<std::vector<double>> doubles;
    std::vector<std::vector<char>> flags;
    ClimbBlocks climb;                                                  // Model.mesh_climb, mesh_climbadr, ...
};

// str(x)
std::string text(nb::handle x) {
    nb::object s = nb::steal(PyObject_Str(x.ptr()));
    if (!s.is_valid()) throw nb::python_error();
    return PyUnicode_AsUTF8(s.ptr());
}

// "(3, 4)"
std::string shape_text(std::initializer_list<int64_t> shape) {
    std::string s = "(";
    for (int64_t d : shape) s += std::to_string(d) + ", ";
    if (shape.size()) s.resize(s.size() - 2);
    return s + (shape.size() == 1 ? ",)" : ")");
}

// the fields of a mapping (name -> array or number), each read once by name, its type and shape checked against what
// the kernels need; every error names the owner (Model, Actuators) and the field
class Fields {
  public:
    Fields(nb::handle mapping, const char *owner, Arrays &keep) : owner_(owner), keep_(keep) {
        if (!nb::isinstance<nb::dict>(mapping)) throw nb::type_error((owner_ + ": expected a dict of named fields").c_str());
        dict_ = nb::borrow<nb::dict>(mapping);
    }
    // a whole number >= 0
    int size(const char *name) {
        nb::handle x = get(name);
        long long v = 0;
        if (!PyLong_Check(x.ptr()) || (v = PyLong_AsLongLong(x.ptr())) < 0 || v > INT32_MAX) error(name, "a whole number >= 0", x);
        return int(v);
    }
    double number(const char *name) {
        nb::handle x = get(name);
        if (!PyFloat_Check(x.ptr()) && !PyLong_Check(x.ptr())) error(name, "a number", x);
        return PyFloat_AsDouble(x.ptr());
    }
    // True or False (a bool, not a number)
    bool flag(const char *name) {
        nb::handle x = get(name);
        if (!PyBool_Check(x.ptr())) error(name, "True or False", x);
        return x.ptr() == Py_True;
    }
    // the object itself (an array, an Actuators or None: its reader checks it)
    nb::handle object(const char *name) { return get(name); }
    // whether the mapping holds `name` (an optional field)
    bool has(const char *name) {
        PyObject *x = PyDict_GetItemWithError(dict_.ptr(), key(name));
        if (!x && PyErr_Occurred()) throw nb::python_error();
        return x != nullptr;
    }
    // a copy of the int64 array `name` of this shape (an entry -1: any length, returned in *free)
    const int64_t *ints(const char *name, std::initializer_list<int64_t> shape, int64_t *free = nullptr) {
        IArr a = array<IArr>(name, shape, free, "int64");
        return keep_.ints.emplace_back(a.data(), a.data() + a.size()).data();
    }
    const double *doubles(const char *name, std::initializer_list<int64_t> shape, int64_t *free = nullptr) {
        DArr a = array<DArr>(name, shape, free, "float64");
        return keep_.doubles.emplace_back(a.data(), a.data() + a.size()).data();
    }
    // the float64 (int64) array `name` of this shape read in place: valid while the mapping holds it
    const double *view_doubles(const char *name, std::initializer_list<int64_t> shape) {
        return array<DArr>(name, shape, nullptr, "float64").data();
    }
    const int64_t *view_ints(const char *name, std::initializer_list<int64_t> shape) {
        return array<IArr>(name, shape, nullptr, "int64").data();
    }
    // every field was read: ValueError naming those that were not (a misspelt name); at once when the mapping holds as
    // many fields as were read (each read one is in it)
    void done() {
        if (size_t(PyDict_GET_SIZE(dict_.ptr())) == read_.size()) return;
        std::string unknown;
        for (auto item : dict_) {
            bool read = false;
            for (PyObject *k : read_) read = read || PyObject_RichCompareBool(item.first.ptr(), k, Py_EQ) == 1;
            if (!read) unknown += (unknown.empty() ? "" : ", ") + text(item.first);
        }
        if (!unknown.empty()) throw nb::value_error((owner_ + ": unknown fields " + unknown).c_str());
    }
    [[noreturn]] void invalid(const char *name, const char *why) {
        throw nb::value_error((owner_ + " field " + name + ": " + why).c_str());
    }
    // TypeError: the field is not what the kernels read (its type, shape, layout or byte order)
    [[noreturn]] void error(const char *name, const std::string &expected, nb::handle got) {
        std::string what = nb::hasattr(got, "dtype") && nb::hasattr(got, "shape")
                               ? text(got.attr("dtype")) + " of shape " + text(got.attr("shape"))
                               : text(nb::handle(Py_TYPE(got.ptr())).attr("__name__"));
        throw nb::type_error((owner_ + " field " + name + ": expected " + expected + ", got " + what).c_str());
    }

  private:
    // the interned str of a field name (a string literal: its address keys the cache), made once; the GIL is held
    static PyObject *key(const char *name) {
        static std::unordered_map<const char *, PyObject *> keys;
        auto at = keys.find(name);
        if (at != keys.end()) return at->second;
        PyObject *k = PyUnicode_InternFromString(name);
        if (!k) throw nb::python_error();
        return keys.emplace(name, k).first->second;
    }
    nb::handle get(const char *name) {
        PyObject *k = key(name);                                       // equal names: the same interned str
        if (std::find(read_.begin(), read_.end(), k) == read_.end()) read_.push_back(k);
        PyObject *x = PyDict_GetItemWithError(dict_.ptr(), k);
        if (!x && PyErr_Occurred()) throw nb::python_error();
        if (!x) throw nb::value_error((owner_ + ": the field " + name + " is missing").c_str());
        return x;
    }
    template <class A> A array(const char *name, std::initializer_list<int64_t> shape, int64_t *free, const char *dtype) {
        nb::handle x = get(name);
        A a;
        bool ok = nb::try_cast(x, a, false) && a.ndim() == shape.size();
        size_t k = 0;
        for (int64_t d : shape) {
            if (!ok) break;
            int64_t got = int64_t(a.shape(k++));
            if (d < 0 && free) *free = got;
            ok = d < 0 || got == d;
        }
        if (!ok) error(name, std::string("a C-contiguous ") + dtype + " array of shape " + shape_text(shape), x);
        return a;
    }
    std::string owner_;
    Arrays &keep_;
    nb::dict dict_;
    std::vector<PyObject *> read_;                                      // the names read, interned (key)
};

// the workspaces of one state's constrained step in one call (one_call_state): the detection's, the solve's and its
// rows, the kinematics', the step's, and the arrays between them; the calling thread's kept on the compiled model, a
// batch's threads' too while no other batch holds them (else the call's own)
struct OneCallWork {
    CollisionPtr collision;
    DetectOut detected;
    ConstraintPtr constraint;
    RowsOut rows;
    WorkspacePtr kinematics;
    StepDerivativePtr step;
    int64_t nu = 0;
    OneCallTerms terms;
    std::vector<double> floats, qacc, qfrc, f, M, poses, jac;
    std::vector<int64_t> ints, geom, left, near;
    std::vector<uint8_t> proven;
    StillWork still;
    OneCallWork(const Model &m, const Actuators &act)
        : collision(scalar::make_collision_work(m)), constraint(scalar::constraint_kernels.create(m)),
          kinematics(workspace(scalar::kernels, m)), step(scalar::step_derivative_kernels.create(m, act)), nu(act.nu) {}
};

// the bound Model (_native.Model): the arrays, the const Model the kernels read, each operation's layout, and the
// workspaces its calls keep (cpp/workspace.h)
struct CompiledModel {
    Arrays arrays, constraint_arrays;
    Model model;
    Call calls[NOPS];                                                   // each operation's layout for this model
    Workspaces work;
    std::unique_ptr<OneCallWork> one_call;                       // CONSTRAINED_STEP's, one state (the GIL held),
    std::mutex one_call_lock;                                           // and a batch's threads' (one call at a time:
    std::vector<std::unique_ptr<OneCallWork>> one_call_threads;         // another makes its own)
    // (source, compiled copy) of the last actuators compiled for this model (physai.engine.native.compiled_actuators)
    nb::object actuators = nb::none();
    // (options, fields) of the last one-step rollout options made for this model (physai.engine.native.step_fields)
    nb::object step_fields = nb::none();
};

void make_model(CompiledModel *self, nb::handle mapping) {
    CompiledModel *nm = new (self) CompiledModel();
    try {
        Model &m = nm->model;
        Fields f(mapping, "Model", nm->arrays);
        m.nq = f.size("nq"), m.nv = f.size("nv"), m.nlink = f.size("nlink"), m.nbody = f.size("nbody");
        const int64_t L = m.nlink, V = m.nv, B = m.nbody;
        int64_t nspring = 0, nscalar = 0, nquat = 0;
        const double *gravity = f.doubles("gravity", {3}), *static_com = f.doubles("static_com", {3});
        for (int k = 0; k < 3; k++) m.gravity[k] = gravity[k], m.static_com[k] = static_com[k];
        m.static_mass = f.number("static_mass");
        m.link_parentid = f.ints("link_parentid", {L}), m.link_centerid = f.ints("link_centerid", {L});
        m.link_relative = f.ints("link_relative", {L}), m.link_dofadr = f.ints("link_dofadr", {L});
        m.link_dofnum = f.ints("link_dofnum", {L});
        m.link_mass = f.doubles("link_mass", {L}), m.link_ipos = f.doubles("link_ipos", {L, 3});
        m.link_subtreemass = f.doubles("link_subtreemass", {L});
        m.link_inertia = f.doubles("link_inertia", {L, 3, 3});
        m.link_jnttype = f.ints("link_jnttype", {L}), m.link_qposadr = f.ints("link_qposadr", {L});
        m.link_ref = f.doubles("link_ref", {L}), m.link_G = f.doubles("link_G", {L, 3, 4, 4});
        m.link_ballrot = f.doubles("link_ballrot", {L, 3, 3}), m.link_ballpos = f.doubles("link_ballpos", {L, 3});
        m.link_ballanchor = f.doubles("link_ballanchor", {L, 3});
        m.dof_linkid = f.ints("dof_linkid", {V}), m.dof_parentid = f.ints("dof_parentid", {V});
        m.dof_turnlink = f.ints("dof_turnlink", {V});
        m.dof_motion = f.doubles("dof_motion", {V, 6}), m.dof_armature = f.doubles("dof_armature", {V});
        m.dof_damping = f.doubles("dof_damping", {V}), m.dof_simplenum = f.ints("dof_simplenum", {V});
        m.spring_qposadr = f.ints("spring_qposadr", {-1}, &nspring);
        m.spring_dofadr = f.ints("spring_dofadr", {nspring}), m.spring_stiffness = f.doubles("spring_stiffness", {nspring});
        m.spring_ref = f.doubles("spring_ref", {nspring});
        m.scalar_qposadr = f.ints("scalar_qposadr", {-1}, &nscalar), m.scalar_dofadr = f.ints("scalar_dofadr", {nscalar});
        m.quat_qposadr = f.ints("quat_qposadr", {-1}, &nquat), m.quat_dofadr = f.ints("quat_dofadr", {nquat});
        m.body_linkid = f.ints("body_linkid", {B}), m.body_pos = f.doubles("body_pos", {B, 3});
        m.body_rot = f.doubles("body_rot", {B, 3, 3}), m.body_linkipos = f.doubles("body_linkipos", {B, 3});
        int64_t nfree = 0;
        m.free_dofadr = f.ints("free_dofadr", {-1}, &nfree);
        m.has_gravcomp = f.number("has_gravcomp") != 0;
        m.body_gravcompforce = f.doubles("body_gravcompforce", {B, 3}), m.dof_gravcompshare = f.doubles("dof_gravcompshare", {V});
        m.fluid_density = f.number("fluid_density"), m.fluid_viscosity = f.number("fluid_viscosity");
        const double *wind = f.doubles("fluid_wind", {3});
        for (int k = 0; k < 3; k++) m.fluid_wind[k] = wind[k];
        m.fluid_linkid = f.ints("fluid_linkid", {-1}, &m.nfluid);
        m.fluid_ellipsoid = f.ints("fluid_ellipsoid", {m.nfluid}), m.fluid_linkpos = f.doubles("fluid_linkpos", {m.nfluid, 3});
        m.fluid_linkrot = f.doubles("fluid_linkrot", {m.nfluid, 3, 3}), m.fluid_size = f.doubles("fluid_size", {m.nfluid, 3});
        m.fluid_coef = f.doubles("fluid_coef", {m.nfluid, 12});
        m.tendon_adr = f.ints("tendon_adr", {-1}, &m.ntendon), m.tendon_num = f.ints("tendon_num", {m.ntendon});
        const int64_t NT = m.ntendon;
        m.wrap_qposadr = f.ints("wrap_qposadr", {-1}, &m.nwrap), m.wrap_dofadr = f.ints("wrap_dofadr", {m.nwrap});
        m.wrap_type = f.ints("wrap_type", {m.nwrap}), m.wrap_objid = f.ints("wrap_objid", {m.nwrap});
        m.wrap_prm = f.doubles("wrap_prm", {m.nwrap}), m.tendon_stiffness = f.doubles("tendon_stiffness", {NT});
        m.tendon_damping = f.doubles("tendon_damping", {NT}), m.tendon_lengthspring = f.doubles("tendon_lengthspring", {NT, 2});
        m.tendon_armature = f.doubles("tendon_armature", {NT}), m.tendon_limited = f.ints("tendon_limited", {NT});
        m.tendon_range = f.doubles("tendon_range", {NT, 2}), m.tendon_margin = f.doubles("tendon_margin", {NT});
        m.tendon_solref_lim = f.doubles("tendon_solref_lim", {NT, 2}), m.tendon_solimp_lim = f.doubles("tendon_solimp_lim", {NT, 5});
        m.tendon_frictionloss = f.doubles("tendon_frictionloss", {NT});
        m.tendon_solref_fri = f.doubles("tendon_solref_fri", {NT, 2}), m.tendon_solimp_fri = f.doubles("tendon_solimp_fri", {NT, 5});
        m.site_bodyid = f.ints("site_bodyid", {-1}, &m.nsite), m.site_pos = f.doubles("site_pos", {m.nsite, 3});
        m.site_quat = f.doubles("site_quat", {m.nsite, 4});
        for (int64_t w = 0; w < m.nwrap; w++) m.tendon_spatial |= m.wrap_type[w] != WRAP_JOINT;
        m.nspring = int(nspring), m.nscalar = int(nscalar), m.nquat = int(nquat), m.nfree = int(nfree);
        f.done();
        if (const char *field = check_model(m)) f.invalid(field, "an index outside the model");
        // scalar links whose G has no t term (hinges), or only 1 and t terms (slides): kinematics skips the zero terms
        nm->arrays.flags.assign(2, std::vector<char>(size_t(L), 0));
        std::vector<char> &hinge = nm->arrays.flags[0], &slide = nm->arrays.flags[1];
        for (int64_t i = 0; i < L; i++) {
            if (m.link_jnttype[i] != 0) continue;
            bool t = false, trig = false;
            for (int k = 0; k < 12; k++) {
                const double *g = &m.link_G[48 * i + 4 * k];
                t |= g[1] != 0.0, trig |= g[2] != 0.0 || g[3] != 0.0;
            }
            hinge[size_t(i)] = !t, slide[size_t(i)] = !trig;
        }
        m.link_hinge = hinge.data(), m.link_slide = slide.data();
        // link_pose's constants (model.h): G[:, :, 0] as (R, p), the entries of (R, p) with a term in t, the links whose
        // axes are the world's, the balls about their own origin
        std::vector<double> T0(size_t(12 * L), 0.0);
        std::vector<int64_t> tvaryadr(static_cast<size_t>(L)), tvarynum(static_cast<size_t>(L)), tvary;
        std::vector<char> worldaxes(static_cast<size_t>(L), 0), ballplain(static_cast<size_t>(L), 0);
        for (int64_t i = 0; i < L; i++) {
            tvaryadr[size_t(i)] = int64_t(tvary.size());
            bool turns = m.link_jnttype[i] != 0, eye = true;
            for (int a = 0; a < 12 && !turns; a++) {                   // entry a of G's rows (3, 4): (R, p) entry RP_OF[a]
                const double *g = &m.link_G[48 * i + 4 * a];
                T0[size_t(12 * i + RP_OF[a])] = g[0];
                bool varies = g[1] != 0.0 || g[2] != 0.0 || g[3] != 0.0;
                if (varies) tvary.push_back(a);
                if (a % 4 < 3) eye = eye && !varies && g[0] == (a % 4 == a / 4 ? 1.0 : 0.0);
            }
            tvarynum[size_t(i)] = int64_t(tvary.size()) - tvaryadr[size_t(i)];
            int64_t p = m.link_parentid[i];
            worldaxes[size_t(i)] = !turns && eye && (p < 0 || worldaxes[size_t(p)]);
            if (turns) {
                bool plain = true;
                for (int a = 0; a < 9; a++) plain = plain && m.link_ballrot[9 * i + a] == (a % 4 == 0 ? 1.0 : 0.0);
                for (int a = 0; a < 3; a++) plain = plain && m.link_ballpos[3 * i + a] == 0.0 && m.link_ballanchor[3 * i + a] == 0.0;
                ballplain[size_t(i)] = plain;
            }
        }
        m.link_T0 = nm->arrays.doubles.emplace_back(std::move(T0)).data();
        m.link_tvaryadr = nm->arrays.ints.emplace_back(std::move(tvaryadr)).data();
        m.link_tvarynum = nm->arrays.ints.emplace_back(std::move(tvarynum)).data();
        m.link_tvary = nm->arrays.ints.emplace_back(std::move(tvary)).data();
        m.link_worldaxes = nm->arrays.flags.emplace_back(std::move(worldaxes)).data();
        m.link_ballplain = nm->arrays.flags.emplace_back(std::move(ballplain)).data();
        // the axis each hinge's local rotation keeps (model.h): row k and column k of its R constant e_k
        std::vector<int64_t> keptaxis(static_cast<size_t>(L), -1);
        for (int64_t i = 0; i < L; i++)
            for (int k = 2; k >= 0 && m.link_jnttype[i] == 0; k--) {
                bool kept = true;
                for (int c = 0; c < 3; c++)
                    for (int a : {3 * k + c, 3 * c + k}) {             // (R, p) entries (k, c) and (c, k): G's rows a + a / 3
                        const double *g = &m.link_G[48 * i + 4 * (a + a / 3)];
                        kept = kept && g[1] == 0.0 && g[2] == 0.0 && g[3] == 0.0 && g[0] == (c == k ? 1.0 : 0.0);
                    }
                if (kept) keptaxis[size_t(i)] = k;
            }
        m.link_keptaxis = nm->arrays.ints.emplace_back(std::move(keptaxis)).data();
        // the links without mass or inertia (model.h)
        std::vector<char> &massless = nm->arrays.flags.emplace_back(size_t(L), 0);
        for (int64_t i = 0; i < L; i++)
            massless[size_t(i)] = m.link_mass[i] == 0.0 && std::all_of(m.link_inertia + 9 * i, m.link_inertia + 9 * i + 9,
                                                                        [](double x) { return x == 0.0; });
        m.link_massless = massless.data();
        // each link's path centred (model.h): its path links' centres and its path dofs' turning links on the path
        std::vector<char> &centred = nm->arrays.flags.emplace_back(size_t(L), 1);
        for (int64_t l = 0; l < L; l++) {
            auto on_path = [&](int64_t i) {
                for (int64_t k = l; k >= 0; k = m.link_parentid[k])
                    if (k == i) return true;
                return false;
            };
            for (int64_t k = l; k >= 0 && centred[size_t(l)]; k = m.link_parentid[k]) {
                centred[size_t(l)] = on_path(m.link_centerid[k]);
                for (int64_t j = m.link_dofadr[k]; centred[size_t(l)] && j < m.link_dofadr[k] + m.link_dofnum[k]; j++)
                    centred[size_t(l)] = m.dof_turnlink[j] < 0 || on_path(m.dof_turnlink[j]);
            }
        }
        m.link_pathcentred = centred.data();
        // each dof's nonzero motion parts (model.h): dof_subspace skips a zero one
        std::vector<char> &parts = nm->arrays.flags.emplace_back(size_t(V), 0);
        for (int64_t j = 0; j < V; j++)
            for (int a = 0; a < 6; a++)
                if (m.dof_motion[6 * j + a] != 0.0) parts[size_t(j)] |= char(a < 3 ? 1 : 2);
        m.dof_motionparts = parts.data();
        // each dof's angular part as a signed coordinate axis (model.h), or -1
        std::vector<int64_t> unitaxis(static_cast<size_t>(V), -1);
        for (int64_t j = 0; j < V; j++) {
            const double *s = &m.dof_motion[6 * j];
            for (int k = 0; k < 3; k++)
                if (std::fabs(s[k]) == 1.0 && s[(k + 1) % 3] == 0.0 && s[(k + 2) % 3] == 0.0) unitaxis[size_t(j)] = s[k] > 0 ? k : k + 3;
        }
        m.dof_unitaxis = nm->arrays.ints.emplace_back(std::move(unitaxis)).data();
        // M's rows (model.h): row i is its parent's row, then i
        std::vector<int64_t> rownnz(static_cast<size_t>(V)), rowadr(static_cast<size_t>(V)), colind;
        for (int64_t i = 0; i < V; i++) {
            int64_t p = m.dof_parentid[i];
            rownnz[size_t(i)] = p < 0 ? 1 : rownnz[size_t(p)] + 1, rowadr[size_t(i)] = int64_t(colind.size());
            for (int64_t s = 0; p >= 0 && s < rownnz[size_t(p)]; s++) colind.push_back(colind[size_t(rowadr[size_t(p)] + s)]);
            colind.push_back(i);
        }
        m.M_rownnz = nm->arrays.ints.emplace_back(std::move(rownnz)).data();         // the buffers outlive moves of the list
        m.M_rowadr = nm->arrays.ints.emplace_back(std::move(rowadr)).data();
        m.M_colind = nm->arrays.ints.emplace_back(std::move(colind)).data();
        for (int op = 0; op < NOPS; op++) {
            nm->calls[op].op = op;
            layout(m, nm->calls[op]);
        }
    } catch (...) {
        nm->~CompiledModel();
        throw;
    }
}

// Model.add_constraints(fields): the constraint model's fields (physai.engine.native.constraint_fields, cpp/model.h),
// read by name once (a second call changes nothing)
void add_constraints(CompiledModel &nm, nb::handle mapping) {
    Model &m = nm.model;
    if (m.has_constraints) return;
    Fields f(mapping, "Model constraints", nm.constraint_arrays);
    m.njnt = f.size("njnt"), m.neq = f.size("neq");
    const int64_t J = m.njnt, E = m.neq, V = m.nv, B = m.nbody;
    m.qpos0 = f.doubles("qpos0", {m.nq});
    m.jnt_type = f.ints("jnt_type", {J}), m.jnt_qposadr = f.ints("jnt_qposadr", {J});
    m.jnt_dofadr = f.ints("jnt_dofadr", {J}), m.jnt_bodyid = f.ints("jnt_bodyid", {J});
    m.jnt_limited = f.ints("jnt_limited", {J}), m.jnt_axis = f.doubles("jnt_axis", {J, 3});
    m.jnt_range = f.doubles("jnt_range", {J, 2}), m.jnt_margin = f.doubles("jnt_margin", {J});
    m.jnt_solref = f.doubles("jnt_solref", {J, 2}), m.jnt_solimp = f.doubles("jnt_solimp", {J, 5});
    m.dof_frictionloss = f.doubles("dof_frictionloss", {V}), m.dof_solref = f.doubles("dof_solref", {V, 2});
    m.dof_solimp = f.doubles("dof_solimp", {V, 5}), m.dof_invweight0 = f.doubles("dof_invweight0", {V});
    m.eq_type = f.ints("eq_type", {E}), m.eq_obj1id = f.ints("eq_obj1id", {E}), m.eq_obj2id = f.ints("eq_obj2id", {E});
    m.eq_active0 = f.ints("eq_active0", {E}), m.eq_data = f.doubles("eq_data", {E, 11});
    m.eq_solref = f.doubles("eq_solref", {E, 2}), m.eq_solimp = f.doubles("eq_solimp", {E, 5});
    m.tendon_length0 = f.doubles("tendon_length0", {m.ntendon});
    m.tendon_invweight0 = f.doubles("tendon_invweight0", {m.ntendon});
    m.body_parentid = f.ints("body_parentid", {B}), m.body_jntadr = f.ints("body_jntadr", {B});
    m.body_jntnum = f.ints("body_jntnum", {B}), m.body_quat = f.doubles("body_quat", {B, 4});
    m.body_invweight0 = f.doubles("body_invweight0", {B, 2});
    m.jnt_pos = f.doubles("jnt_pos", {J, 3}), m.body_offset = f.doubles("body_offset", {B, 3});
    m.poselink_type = f.ints("poselink_type", {-1}, &m.npose);
    m.body_poselinkadr = f.ints("body_poselinkadr", {B}), m.body_poselinknum = f.ints("body_poselinknum", {B});
    m.poselink_qposadr = f.ints("poselink_qposadr", {m.npose}), m.poselink_world = f.ints("poselink_world", {m.npose});
    m.poselink_ref = f.doubles("poselink_ref", {m.npose}), m.poselink_axis = f.doubles("poselink_axis", {m.npose, 3});
    m.poselink_anchor = f.doubles("poselink_anchor", {m.npose, 3});
    m.geom_type = f.ints("geom_type", {-1}, &m.ngeom);
    const int64_t G = m.ngeom;
    m.geom_bodyid = f.ints("geom_bodyid", {G}), m.geom_pos = f.doubles("geom_pos", {G, 3});
    m.geom_quat = f.doubles("geom_quat", {G, 4}), m.geom_size = f.doubles("geom_size", {G, 3});
    m.geom_rbound = f.doubles("geom_rbound", {G}), m.geom_aabb = f.doubles("geom_aabb", {G, 6});
    m.cand_dim = f.ints("cand_dim", {-1}, &m.ncand);
    m.cand_geom = f.ints("cand_geom", {m.ncand, 2}), m.cand_param = f.ints("cand_param", {m.ncand});
    m.cand_float = f.doubles("cand_float", {-1, CAND_FLOATS}, &m.nparam);
    m.cand_midphase = f.ints("cand_midphase", {m.ncand});
    m.missing_bound = f.doubles("missing_bound", {-1}, &m.nmissing);
    m.missing_geom = f.ints("missing_geom", {m.nmissing, 2});
    m.group_start = f.ints("group_start", {-1}, &m.ngroup);
    m.group_body = f.ints("group_body", {m.ngroup, 2}), m.group_split = f.ints("group_split", {m.ngroup});
    m.group_end = f.ints("group_end", {m.ngroup}), m.group_always = f.ints("group_always", {m.ngroup});
    m.sweep_body = f.ints("sweep_body", {-1}, &m.nsweep), m.geom_pad = f.doubles("geom_pad", {G});
    m.group_shrunk = f.ints("group_shrunk", {m.ngroup}), m.geom_inflate = f.doubles("geom_inflate", {G});
    m.geom_collides = f.ints("geom_collides", {G}), m.geom_dataid = f.ints("geom_dataid", {G});
    m.mesh_vertadr = f.ints("mesh_vertadr", {-1}, &m.nmesh), m.mesh_vertnum = f.ints("mesh_vertnum", {m.nmesh});
    m.mesh_vert = f.doubles("mesh_vert", {-1, 3}, &m.nmeshvert), m.mesh_graphadr = f.ints("mesh_graphadr", {m.nmesh});
    m.mesh_graph = f.ints("mesh_graph", {-1}, &m.nmeshgraph), m.mesh_extrema = f.ints("mesh_extrema", {m.nmesh, 27});
    m.mesh_graph_vert = f.doubles("mesh_graph_vert", {m.nmeshgraph, 3});
    m.mesh_polyadr = f.ints("mesh_polyadr", {m.nmesh}), m.mesh_polynum = f.ints("mesh_polynum", {m.nmesh});
    m.mesh_polyvertadr = f.ints("mesh_polyvertadr", {-1}, &m.nmeshpoly);
    m.mesh_polyvertnum = f.ints("mesh_polyvertnum", {m.nmeshpoly});
    m.mesh_polynormal = f.doubles("mesh_polynormal", {m.nmeshpoly, 3});
    m.mesh_polyvert = f.ints("mesh_polyvert", {-1}, &m.nmeshpolyvert);
    m.mesh_polymapadr = f.ints("mesh_polymapadr", {m.nmeshvert}), m.mesh_polymapnum = f.ints("mesh_polymapnum", {m.nmeshvert});
    m.mesh_polymap = f.ints("mesh_polymap", {-1}, &m.nmeshpolymap);
    m.hfield_nrow = f.ints("hfield_nrow", {-1}, &m.nhfield), m.hfield_ncol = f.ints("hfield_ncol", {m.nhfield});
    m.hfield_adr = f.ints("hfield_adr", {m.nhfield}), m.hfield_size = f.doubles("hfield_size", {m.nhfield, 4});
    m.hfield_data = f.doubles("hfield_data", {-1}, &m.nhfielddata);
    m.opt_timestep = f.number("opt_timestep"), m.opt_impratio = f.number("opt_impratio");
    m.opt_tolerance = f.number("opt_tolerance"), m.opt_ls_tolerance = f.number("opt_ls_tolerance");
    m.opt_iterations = f.size("opt_iterations"), m.opt_ls_iterations = f.size("opt_ls_iterations");
    m.opt_ccd_tolerance = f.number("opt_ccd_tolerance"), m.opt_ccd_iterations = f.size("opt_ccd_iterations");
    m.opt_multiccd = f.size("opt_multiccd");
    m.opt_solver = f.size("opt_solver");
    m.opt_noslip_iterations = f.size("opt_noslip_iterations"), m.opt_noslip_tolerance = f.number("opt_noslip_tolerance");
    m.opt_island = f.size("opt_island");
    m.opt_elliptic = f.size("opt_elliptic"), m.opt_equality = f.size("opt_equality");
    m.opt_frictionloss = f.size("opt_frictionloss"), m.opt_limit = f.size("opt_limit");
    m.opt_contact = f.size("opt_contact"), m.opt_refsafe = f.size("opt_refsafe");
    f.done();
    if (const char *field = check_constraints(m))
        f.invalid(field, !std::strcmp(field, "cand_dim") ? "a contact dimension other than 1, 3, 4 or 6" : "an index outside the model");
    ClimbBlocks &climb = nm.constraint_arrays.climb = climb_blocks(m);
    if (!climb.edges.empty())
        m.mesh_climb = climb.edges.data(), m.mesh_climbadr = climb.adr.data(), m.mesh_climb_extrema = climb.extrema.data();
    m.has_constraints = true;
}

// the bound Actuators (_native.Actuators), for the model they were made for
struct CompiledActuators {
    Arrays arrays;
    Actuators act;
    int nq = 0, nv = 0;
};

void make_actuators(CompiledActuators *self, const CompiledModel &model, nb::handle mapping) {
    CompiledActuators *na = new (self) CompiledActuators();
    try {
        Actuators &a = na->act;
        Fields f(mapping, "Actuators", na->arrays);
        const Model &m = model.model;
        na->nq = m.nq, na->nv = m.nv, a.nu = f.size("nu");
        const int64_t U = a.nu, V = m.nv, Q = m.nq;
        a.moment = f.doubles("moment", {U, V}), a.qmoment = f.doubles("qmoment", {U, Q});
        a.gain = f.doubles("gain", {U, 3}), a.bias = f.doubles("bias", {U, 3});
        a.ctrlrange = f.doubles("ctrlrange", {U, 2}), a.ctrllimited = f.ints("ctrllimited", {U});
        a.forcerange = f.doubles("forcerange", {U, 2}), a.forcelimited = f.ints("forcelimited", {U});
        a.dof_forcerange = f.doubles("dof_forcerange", {V, 2}), a.dof_forcelimited = f.ints("dof_forcelimited", {V});
        a.joint_dof = f.ints("joint_dof", {U});
        a.tendon_frcid = f.ints("tendon_frcid", {U}), a.tendon_frcrange = f.doubles("tendon_frcrange", {U, 2});
        a.dyntype = f.ints("dyntype", {U}), a.gaintype = f.ints("gaintype", {U}), a.biastype = f.ints("biastype", {U});
        a.dynprm = f.doubles("dynprm", {U, 3}), a.gainprm = f.doubles("gainprm", {U, 9});
        a.biasprm = f.doubles("biasprm", {U, 9}), a.lengthrange = f.doubles("lengthrange", {U, 2});
        a.acc0 = f.doubles("acc0", {U}), a.actrange = f.doubles("actrange", {U, 2});
        a.actlimited = f.ints("actlimited", {U}), a.actearly = f.ints("actearly", {U});
        a.act_index = f.ints("act_index", {U});
        a.posed_each = f.ints("posed_each", {U}), a.trntype = f.ints("trntype", {U}), a.trnid = f.ints("trnid", {U, 2});
        a.gear6 = f.doubles("gear6", {U, 6}), a.cranklength = f.doubles("cranklength", {U});
        f.done();
        for (int64_t u = 0; u < U; u++) {                              // the posed transmissions' targets (transmission)
            if (!a.posed_each[u]) continue;
            a.posed = true;
            const int64_t kind = a.trntype[u], *id = a.trnid + 2 * u;
            if (!m.has_constraints) f.invalid("posed_each", "the model's constraint part first (native.compiled_actuators)");
            if (kind == TRN_BODY) f.invalid("trntype", "no body transmission (adhesion runs on the NumPy engine: native.runs)");
            bool joint = kind == TRN_JOINT || kind == TRN_JOINTINPARENT;
            if (kind < TRN_JOINT || kind > TRN_SITE) f.invalid("trntype", "expected 0 .. 4 (mjtTrn)");
            if (joint && (id[0] < 0 || id[0] >= m.njnt || (m.jnt_type[id[0]] != JNT_BALL && m.jnt_type[id[0]] != JNT_FREE)))
                f.invalid("trnid", "expected a ball or free joint");
            if (kind == TRN_TENDON && (id[0] < 0 || id[0] >= m.ntendon)) f.invalid("trnid", "expected a tendon");
            if ((kind == TRN_SITE || kind == TRN_SLIDERCRANK) &&
                (id[0] < 0 || id[0] >= m.nsite || id[1] < (kind == TRN_SITE ? -1 : 0) || id[1] >= m.nsite))
                f.invalid("trnid", "expected sites (a crank and a slider, or a site and a refsite or -1)");
        }
        a.lanes = a.lanes && !a.posed;                                 // posed arms: one state at a time
        for (int64_t u = 0; u < U; u++) {
            if (a.dyntype[u] < DYN_NONE || a.dyntype[u] > DYN_MUSCLE) f.invalid("dyntype", "expected 0 .. 4 (mjtDyn)");
            if (a.gaintype[u] < GAIN_FIXED || a.gaintype[u] > GAIN_MUSCLE) f.invalid("gaintype", "expected 0 .. 2 (mjtGain)");
            if (a.biastype[u] < GAIN_FIXED || a.biastype[u] > GAIN_MUSCLE) f.invalid("biastype", "expected 0 .. 2 (mjtBias)");
            if (a.act_index[u] != (a.dyntype[u] != DYN_NONE ? a.na : -1)) f.invalid("act_index", "expected 0, 1, .. in order");
            a.na += a.dyntype[u] != DYN_NONE;
            a.lanes = a.lanes && a.dyntype[u] != DYN_MUSCLE && a.gaintype[u] != GAIN_MUSCLE && a.biastype[u] != GAIN_MUSCLE;
        }
        for (int64_t u = 0; u < U; u++)
            if (a.joint_dof[u] < -1 || a.joint_dof[u] >= V) f.invalid("joint_dof", "expected a dof in [0, nv) or -1 (a tendon)");
        for (int64_t u = 0; u < U; u++) {
            if (a.tendon_frcid[u] < -1) f.invalid("tendon_frcid", "expected a tendon >= 0 or -1 (none)");
            a.tendon_limited = a.tendon_limited || a.tendon_frcid[u] >= 0;
        }
        // the nonzero entries of a (U, cols) matrix row by row into rownnz, rowadr, colind (model.h); with posed_rows, every
        // column of a posed actuator's row (its arms computed at each state)
        auto rows = [&](const double *x, int64_t cols, const int64_t *&rownnz, const int64_t *&rowadr,
                        const int64_t *&colind, bool posed_rows) {
            std::vector<int64_t> nnz(static_cast<size_t>(U)), adr(static_cast<size_t>(U)), ind;
            for (int64_t u = 0; u < U; u++) {
                adr[size_t(u)] = int64_t(ind.size());
                for (int64_t j = 0; j < cols; j++)
                    if (x[u * cols + j] != 0.0 || (posed_rows && a.posed_each[u])) ind.push_back(j);
                nnz[size_t(u)] = int64_t(ind.size()) - adr[size_t(u)];
            }
            rownnz = na->arrays.ints.emplace_back(std::move(nnz)).data();
            rowadr = na->arrays.ints.emplace_back(std::move(adr)).data();
            colind = na->arrays.ints.emplace_back(std::move(ind)).data();
        };
        rows(a.moment, V, a.moment_rownnz, a.moment_rowadr, a.moment_colind, true);     // a posed row: every dof
        rows(a.qmoment, Q, a.qmoment_rownnz, a.qmoment_rowadr, a.qmoment_colind, false);
    } catch (...) {
        na->~CompiledActuators();
        throw;
    }
}

// ---------------------------------------------------------------- the arguments of a call

// an operation's arguments (OPERATIONS[op].arguments), read once at import
struct Argument {
    std::string name;
    char kind;
};
std::vector<Argument> SIGNATURES[NOPS];

// obj as a float64 NumPy array of nd dimensions (aligned, in the machine's byte order, strides in whole doubles, any
// sign or 0), read in place; null for anything else (no DLPack: a fraction of a microsecond less per argument)
PyArrayObject *float64_array(nb::handle obj, int nd) {
    if (!PyArray_Check(obj.ptr())) return nullptr;
    PyArrayObject *a = reinterpret_cast<PyArrayObject *>(obj.ptr());
    if (PyArray_TYPE(a) != NPY_DOUBLE || PyArray_NDIM(a) != nd || !PyArray_ISALIGNED(a) || PyArray_ISBYTESWAPPED(a)) return nullptr;
    for (int t = 0; t < nd; t++)
        if (PyArray_STRIDE(a, t) % npy_intp(sizeof(double)) != 0) return nullptr;
    return a;
}

// the state argument `obj` named `name` with `size` entries per state (batched: (N, size) only) into in, gathered once
// into a copy where its entries are strided; batch: N, or -1 while every state argument so far is a single state
void read_state(nb::handle obj, const char *name, int64_t size, bool batched, Input &in, int64_t &batch,
                std::vector<std::vector<double>> &copies) {
    PyArrayObject *arr =
        PyArray_Check(obj.ptr()) ? float64_array(obj, PyArray_NDIM(reinterpret_cast<PyArrayObject *>(obj.ptr()))) : nullptr;
    if (!arr) fail("type", name);
    int ndim = PyArray_NDIM(arr);
    const npy_intp *shp = PyArray_DIMS(arr), *str = PyArray_STRIDES(arr);
    const double *data = static_cast<const double *>(PyArray_DATA(arr));
    int64_t n = 1, stride_state = 0, stride_entry;
    if (ndim == 1 && !batched) {
        if (int64_t(shp[0]) != size) fail("shape", name);
        stride_entry = int64_t(str[0] / 8);
    } else if (ndim == 2) {
        n = int64_t(shp[0]);
        if (int64_t(shp[1]) != size || n == 0 || (batch >= 0 && n != batch)) fail("shape", name);
        batch = n;
        stride_state = int64_t(str[0] / 8), stride_entry = int64_t(str[1] / 8);
    } else {
        fail("shape", name);
    }
    if (size > 0 && stride_entry != 1) {                               // gather a strided input once
        std::vector<double> &buf = copies.emplace_back(size_t(n * size));
        for (int64_t s = 0; s < n; s++)
            for (int64_t e = 0; e < size; e++) buf[size_t(s * size + e)] = data[s * stride_state + e * stride_entry];
        data = buf.data(), stride_state = ndim == 2 ? size : 0;
    }
    in = {data, stride_state};
    for (int64_t s = 0; s < n; s++) {
        if ((s & 0xFFFFF) == 0xFFFFF && PyErr_CheckSignals()) throw nb::python_error();   // Ctrl-C in a long check
        const double *row = data + s * stride_state;                   // contiguous: a strided input was gathered
        if (all_finite(row, size)) continue;
        for (int64_t e = 0; e < size; e++)                             // the entry that is not
            if (!std::isfinite(row[e])) fail("nonfinite", name, s, e);
    }
}

// a new array of shape dims (nd of them) and its data
nb::object new_array(int nd, const npy_intp *dims, int type, void *&data) {
    PyObject *arr = PyArray_SimpleNew(nd, const_cast<npy_intp *>(dims), type);
    if (!arr) throw nb::python_error();
    data = PyArray_DATA(reinterpret_cast<PyArrayObject *>(arr));
    return nb::steal(arr);
}

// a float64 result of kind `kind` (OPERATIONS' outputs) for N states (batch: with a leading N), its data into out; a
// single number is written to `scalar` and returned as a float after the call (an invalid object here)
nb::object new_result(const Model &m, char kind, int64_t batch, double *&out, double &scalar) {
    npy_intp dims[4];
    int nd = 0;
    if (batch >= 0) dims[nd++] = npy_intp(batch);
    switch (kind) {
        case 'v': dims[nd++] = m.nv; break;
        case 'q': dims[nd++] = m.nq; break;
        case 'M': dims[nd++] = m.nv, dims[nd++] = m.nv; break;
        case 'J': dims[nd++] = 6, dims[nd++] = m.nv; break;
        case 'w': dims[nd++] = 6; break;
        case 'C': dims[nd++] = 3, dims[nd++] = m.nv; break;
        case 'P': dims[nd++] = m.nbody, dims[nd++] = 3; break;
        case 'R': dims[nd++] = m.nbody, dims[nd++] = 3, dims[nd++] = 3; break;
        case 'L': dims[nd++] = npy_intp(m.ntendon); break;
        case 'T': dims[nd++] = npy_intp(m.ntendon), dims[nd++] = m.nv; break;
        default: break;                                                // 's': one number per state
    }
    if (nd == 0) {
        out = &scalar;
        return nb::object();
    }
    void *data;
    nb::object r = new_array(nd, dims, NPY_DOUBLE, data);
    out = static_cast<double *>(data);
    return r;
}

// ---------------------------------------------------------------- running the kernels

// op (every operation but ROLLOUT) on its arguments a, b, c: its result (an array, a float, or a tuple of them)
nb::object run(CompiledModel &nm, int op, const nb::handle *args) {
    const Model &m = nm.model;
    const std::vector<Argument> &signature = SIGNATURES[op];
    Call c = nm.calls[op];
    int64_t batch = -1;
    std::vector<std::vector<double>> copies;                           // none: inputs are read in place (strided)
    int nin = 0;
    for (size_t k = 0; k < signature.size(); k++) {
        const Argument &a = signature[k];
        nb::handle x = args[k];
        if (is_state(a.kind)) {
            read_state(x, a.name.c_str(), c.in_size[nin], false, c.in[nin], batch, copies);
            nin++;
        } else if (a.kind == 'h') {
            if (!PyFloat_Check(x.ptr())) fail("type", a.name.c_str());
            c.h = PyFloat_AS_DOUBLE(x.ptr());
        } else if (a.kind == 'l') {
            if (!PyLong_Check(x.ptr())) fail("type", a.name.c_str());
            c.link = PyLong_AsLongLong(x.ptr());
            if (c.link < 0 || c.link >= m.nlink) throw nb::value_error("the link is not one of the model's");
        } else if (a.kind == 'p') {
            PyArrayObject *p = float64_array(x, 1);                    // (3,), contiguous
            if (!p || PyArray_DIM(p, 0) != 3 || PyArray_STRIDE(p, 0) != npy_intp(sizeof(double))) fail("type", a.name.c_str());
            c.point = static_cast<const double *>(PyArray_DATA(p));    // x, which the caller holds, outlives the call
        }
    }
    int64_t N = batch < 0 ? 1 : batch;
    nb::object results[3];
    double scalar = 0.0;
    for (int k = 0; k < c.nout; k++) results[k] = new_result(m, OPERATIONS[op].outputs[k], batch, c.out[k], scalar);
    Failures failures;
    for (auto &first : failures.first) first.store(NO_STATE, std::memory_order_relaxed);   // before any thread starts
    std::atomic<bool> stop{false};
    run_states<nb::gil_scoped_release>(nm.work, m, c, N, failures, stop, signal_pending);
    if (stop) throw nb::python_error();                                // a signal: the results discarded
    nb::object result = c.nout == 1 ? (results[0].is_valid() ? results[0] : nb::float_(scalar))
                      : c.nout == 2 ? nb::object(nb::make_tuple(results[0], results[1]))
                                    : nb::object(nb::make_tuple(results[0], results[1], results[2]));
    // what the NumPy path would meet first: positions (a zero quaternion), the solve (a singular matrix), the result
    auto first = [&](int status) { return failures.first[status].load(std::memory_order_relaxed); };   // threads joined
    if (first(ZERO_QUATERNION) != NO_STATE) fail("zero_quaternion", signature[0].name.c_str(), first(ZERO_QUATERNION));
    if (first(SINGULAR) != NO_STATE) fail("singular", nullptr, first(SINGULAR));
    if (first(NONFINITE) != NO_STATE) fail("nonfinite_result", nullptr, first(NONFINITE), -1, result);
    return result;
}

// an input (N, steps, size) of a rollout as a Series, or none; ValueError unless its shape is exactly that
// (a float64 array in place, never a converted copy: the Series points into the caller's array, which outlives the call)
Series series(nb::handle obj, int64_t N, int64_t steps, int64_t size, const char *what) {
    Series r;
    if (obj.is_none()) return r;
    PyArrayObject *x = float64_array(obj, 3);
    if (!x || int64_t(PyArray_DIM(x, 0)) != N || int64_t(PyArray_DIM(x, 1)) != steps || int64_t(PyArray_DIM(x, 2)) != size)
        throw nb::value_error(what);
    r.data = static_cast<const double *>(PyArray_DATA(x));
    r.trajectory = PyArray_STRIDE(x, 0) / 8, r.step = PyArray_STRIDE(x, 1) / 8, r.entry = PyArray_STRIDE(x, 2) / 8;
    return r;
}

// the actuators option of a simulation call (rollout, step_derivatives): a compiled Actuators made for m, or None (none)
const Actuators &actuators_option(const Model &m, nb::handle x, const char *who) {
    static const Actuators none;
    if (x.is_none()) return none;
    const CompiledActuators &na = nb::cast<const CompiledActuators &>(x);
    if (na.nq != m.nq || na.nv != m.nv) throw nb::value_error((std::string(who) + ": the actuators were made for another model").c_str());
    return na.act;
}

// the numbers of a state's observed fields (cpp/observe.h's observe_offsets: 44 per body and the world, 3 per site, 3 nv,
// 2 per tendon)
inline int64_t observe_width(const Model &m) {
    return 44 * (int64_t(m.nbody) + 1) + 3 * m.nsite + 3 * int64_t(m.nv) + 2 * int64_t(m.ntendon);
}

// ROLLOUT: N trajectories of integrators.simulate from q0 (N, nq), qd0 (N, nv), with a dict of named options
// (physai.engine.native.rollout_fields: StepOptions' h, integrator (INTEGRATORS), implicit_damping, explicit_couplings,
// tolerance, iterations; steps, with_energy, constrained; actuators (an Actuators or None), ctrl (N, steps, nu), qfrc_applied (N, steps, nv), xfrc_applied
// (N, steps, 6 nbody), warm (N, nv) and act (N, na), or None each; a constrained rollout's optional observe (N, W),
// observe_body (nbody, 13) and frames (N,) int64, each 0 or steps: 0 no step, the forward pass at q0 alone), on threads with the GIL released: (Q (N, steps+1, nq),
// QD, E (N, steps+1), status (N): -1, or the step at which the trajectory stopped, ncon, near, warm_out, A (N, steps+1,
// na) the activations, capped (N): the first step whose discrete smooth solve stopped at its iteration cap (-1: none),
// capped_residual (N): its relative residual). When the first
// trajectory that stopped did so on a zero quaternion or a singular matrix, KernelError(kind, "q0", trajectory, step,
// (Q, QD, E)) instead; when it diverged, status says where (the caller raises the DivergenceError).
nb::object rollout(CompiledModel &nm, const nb::handle *args) {
    const Model &m = nm.model;
    int64_t batch = -1;
    std::vector<std::vector<double>> copies;
    Input q0, qd0;
    read_state(args[0], "q0", m.nq, true, q0, batch, copies);
    read_state(args[1], "qd0", m.nv, true, qd0, batch, copies);
    Arrays none;
    Fields o(args[2], "rollout options", none);
    Rollout r;
    int64_t N = batch;
    r.opt.h = o.number("h"), r.opt.integrator = o.size("integrator"), r.opt.implicit_damping = o.flag("implicit_damping");
    r.opt.explicit_couplings = o.flag("explicit_couplings"), r.opt.tolerance = o.number("tolerance");
    r.opt.iterations = o.size("iterations");
    r.steps = o.size("steps"), r.with_energy = o.flag("with_energy"), r.constrained = o.flag("constrained");
    if (r.constrained && !m.has_constraints) throw nb::value_error("rollout: constrained, but the model has no constraint part");
    if (r.opt.integrator > DISCRETE) o.invalid("integrator", "expected 0 (euler) ... 4 (discrete)");
    const Actuators *act = &actuators_option(m, o.object("actuators"), "rollout");
    r.ctrl = series(o.object("ctrl"), N, r.steps, act->nu, "rollout: ctrl (N, steps, nu)");
    r.qfrc = series(o.object("qfrc_applied"), N, r.steps, m.nv, "rollout: qfrc_applied (N, steps, nv)");
    r.xfrc = series(o.object("xfrc_applied"), N, r.steps, 6 * int64_t(m.nbody), "rollout: xfrc_applied (N, steps, 6 nbody)");
    nb::handle warm = o.object("warm"), act_in = o.object("act");
    nb::handle observe = o.has("observe") ? o.object("observe") : nb::none();
    nb::handle observe_body = o.has("observe_body") ? o.object("observe_body") : nb::none();
    nb::handle frames = o.has("frames") ? o.object("frames") : nb::none();
    o.done();
    if (!frames.is_none()) {                                           // (N,) int64, each 0 or steps: a constrained rollout
        PyArrayObject *f = PyArray_Check(frames.ptr()) ? reinterpret_cast<PyArrayObject *>(frames.ptr()) : nullptr;
        bool ok = r.constrained && f && PyArray_TYPE(f) == NPY_INT64 && PyArray_NDIM(f) == 1 &&
                  int64_t(PyArray_DIM(f, 0)) == N && PyArray_IS_C_CONTIGUOUS(f) && PyArray_ISALIGNED(f) &&
                  !PyArray_ISBYTESWAPPED(f);
        const int64_t *each = ok ? static_cast<const int64_t *>(PyArray_DATA(f)) : nullptr;
        for (int64_t n = 0; ok && n < N; n++) ok = each[n] == 0 || each[n] == r.steps;
        if (!ok) throw nb::value_error("rollout: frames (N,) int64 in C order, each 0 or steps, a constrained rollout");
        r.frames = each;
    }
    if (!observe.is_none()) {                                          // (N, W) and (nbody, 13) float64, C order
        PyArrayObject *ob = float64_array(observe, 2), *bb = float64_array(observe_body, 2);
        if (!r.constrained || r.steps < 1 || !ob || !bb || int64_t(PyArray_DIM(ob, 0)) != N ||
            int64_t(PyArray_DIM(ob, 1)) != observe_width(m) || !PyArray_IS_C_CONTIGUOUS(ob) ||
            !PyArray_ISWRITEABLE(ob) || int64_t(PyArray_DIM(bb, 0)) != m.nbody || PyArray_DIM(bb, 1) != 13 ||
            !PyArray_IS_C_CONTIGUOUS(bb))
            throw nb::value_error("rollout: observe (N, W) and observe_body (nbody, 13), float64 in C order, a "
                                  "constrained rollout (the fields of its last step)");
        r.observe = static_cast<double *>(PyArray_DATA(ob)), r.observe_body = static_cast<const double *>(PyArray_DATA(bb));
    }
    if (act->nu && !r.ctrl.data) throw nb::value_error("rollout: the actuators need ctrl");
    const npy_intp da[3] = {npy_intp(N), npy_intp(r.steps + 1), act->na};
    void *av;
    nb::object A = new_array(3, da, NPY_DOUBLE, av);
    r.A = static_cast<double *>(av);
    const double *act0 = nullptr;
    if (!act_in.is_none()) {                                          // (N, na) float64, C order, finite
        PyArrayObject *a = float64_array(act_in, 2);
        if (!a || int64_t(PyArray_DIM(a, 0)) != N || int64_t(PyArray_DIM(a, 1)) != act->na ||
            (act->na > 1 && PyArray_STRIDE(a, 1) != 8) || (N > 1 && PyArray_STRIDE(a, 0) != 8 * act->na))
            throw nb::value_error("rollout: act (N, na), float64 in C order");
        act0 = static_cast<const double *>(PyArray_DATA(a));
        if (!std::all_of(act0, act0 + N * act->na, [](double x) { return std::isfinite(x); }))
            throw nb::value_error("rollout: act holds NaN or infinity");
    }
    const npy_intp dq[3] = {npy_intp(N), npy_intp(r.steps + 1), m.nq}, dv[3] = {npy_intp(N), npy_intp(r.steps + 1), m.nv};
    void *q, *qd, *e, *st;
    nb::object Q = new_array(3, dq, NPY_DOUBLE, q), QD = new_array(3, dv, NPY_DOUBLE, qd), E = new_array(2, dq, NPY_DOUBLE, e);
    nb::object status = new_array(1, dq, NPY_INT64, st);
    const npy_intp dn[2] = {npy_intp(N), npy_intp(r.steps)};
    void *nc, *nr;
    nb::object ncon = new_array(2, dn, NPY_INT64, nc), near = new_array(1, dn, NPY_INT64, nr);
    const npy_intp dw[2] = {npy_intp(N), m.nv};
    void *wo;
    nb::object warm_out = new_array(2, dw, NPY_DOUBLE, wo);
    void *cp, *cr;
    nb::object capped = new_array(1, dq, NPY_INT64, cp), capped_residual = new_array(1, dq, NPY_DOUBLE, cr);
    r.capped = static_cast<int64_t *>(cp), r.capped_residual = static_cast<double *>(cr);
    r.Q = static_cast<double *>(q), r.QD = static_cast<double *>(qd), r.E = static_cast<double *>(e);
    r.status = static_cast<int64_t *>(st), r.ncon = static_cast<int64_t *>(nc), r.near = static_cast<int64_t *>(nr);
    r.warm_out = static_cast<double *>(wo);
    if (!warm.is_none()) {                                            // (N, nv) float64, C order
        PyArrayObject *w = float64_array(warm, 2);
        if (!w || int64_t(PyArray_DIM(w, 0)) != N || int64_t(PyArray_DIM(w, 1)) != m.nv ||
            (m.nv > 1 && PyArray_STRIDE(w, 1) != 8) || (N > 1 && PyArray_STRIDE(w, 0) != 8 * m.nv))
            throw nb::value_error("rollout: warm (N, nv), float64 in C order");
        r.warm_in = static_cast<const double *>(PyArray_DATA(w));
        // a NaN or infinite start is refused, not taken as no start (the caller's full path names the entry)
        if (!std::all_of(r.warm_in, r.warm_in + N * m.nv, [](double x) { return std::isfinite(x); }))
            throw nb::value_error("rollout: warm holds NaN or infinity");
    }
    std::vector<int> failure(size_t(N), OK);
    r.failure = failure.data();
    std::vector<int64_t> resume(size_t(N), 0);                        // constrained: where each scalar run starts
    r.resume = resume.data();
    std::atomic<bool> stop{false};
    r.stop = &stop;
    // trajectories [lo, hi) set to their first state, on the threads that run them, until stop: a row's first touch of
    // a large output has the system zero its pages (seconds for N = 1000 of 20000 steps), so it is polled work too
    auto start = [&](int64_t lo, int64_t hi) {
        for (int64_t n = lo; n < hi && !stop.load(std::memory_order_relaxed); n++) {
            std::copy_n(q0.data + n * q0.stride, m.nq, r.Q + n * (r.steps + 1) * m.nq);
            std::copy_n(qd0.data + n * qd0.stride, m.nv, r.QD + n * (r.steps + 1) * m.nv);
            std::fill_n(r.ncon + n * r.steps, r.steps, 0), std::fill_n(r.warm_out + n * m.nv, m.nv, 0.0);
            double *an = r.A + n * (r.steps + 1) * act->na;             // row 0: the first activations, or zero
            if (act0) std::copy_n(act0 + n * act->na, act->na, an);
            else std::fill_n(an, act->na, 0.0);
            r.near[n] = -1, r.status[n] = RERUN, r.resume[n] = 0, r.capped[n] = -1, r.capped_residual[n] = 0.0;
        }
        return !stop.load();
    };
    simulate_states<nb::gil_scoped_release>(nm.work, m, *act, r, N, start, stop, signal_pending);
    if (stop) throw nb::python_error();                                // a signal: the trajectories discarded
    for (int64_t n = 0; n < N; n++) {
        if (r.status[n] == -1) continue;
        if (failure[size_t(n)] == ZERO_QUATERNION || failure[size_t(n)] == SINGULAR)
            fail(failure[size_t(n)] == SINGULAR ? "singular" : "zero_quaternion", "q0", n, r.status[n], nb::make_tuple(Q, QD, E));
        break;
    }
    return nb::make_tuple(Q, QD, E, status, ncon, near, warm_out, A, capped, capped_residual);
}

// the constrained step's terms of one state (cpp/data.h's ConstrainedTerms) from a dict of named arrays
// (physai.derivatives._Constraints.terms), read in place, each checked against the sizes it gives
ConstrainedTerms read_constrained(const Model &m, nb::handle mapping, Arrays &keep) {
    Fields o(mapping, "step_derivatives constraints", keep);
    ConstrainedTerms t;
    int64_t nv = m.nv;
    t.nefc = o.size("nefc"), t.nrows = o.size("nrows"), t.nmoving = o.size("nmoving"), t.points = o.size("points");
    t.ncone = o.size("ncone"), t.stiff = o.flag("stiff"), t.step = o.number("step");
    int64_t n = t.nefc, cone = 0;
    t.a_c = o.view_doubles("a_c", {nv}), t.qfrc = o.view_doubles("qfrc", {nv}), t.J = o.view_doubles("J", {n, nv});
    t.D = o.view_doubles("D", {n}), t.aref = o.view_doubles("aref", {n}), t.B = o.view_doubles("B", {n});
    t.K = o.view_doubles("K", {n}), t.imp = o.view_doubles("imp", {n}), t.impP = o.view_doubles("impP", {n});
    t.pos = o.view_doubles("pos", {n}), t.margin = o.view_doubles("margin", {n}), t.force = o.view_doubles("force", {n});
    t.state = o.view_ints("state", {n});
    t.rows = o.view_ints("rows", {t.nrows});
    t.moving = o.view_ints("moving", {t.nmoving}), t.weights = o.view_doubles("weights", {t.points});
    t.Jpts = o.view_doubles("Jpts", {t.nmoving * t.points, n, nv}), t.fpts = o.view_doubles("fpts", {t.nmoving * t.points, n});
    t.daref = o.view_doubles("daref", {n, nv});
    t.cone_first = o.view_ints("cone_first", {t.ncone}), t.cone_dim = o.view_ints("cone_dim", {t.ncone});
    for (int64_t b = 0; b < t.ncone; b++) {
        if (t.cone_first[b] < 0 || t.cone_dim[b] < 1 || t.cone_first[b] + t.cone_dim[b] > n) o.invalid("cone_dim", "a cone outside the rows");
        cone += t.cone_dim[b] * t.cone_dim[b];
    }
    t.cone_H = o.view_doubles("cone_H", {cone});
    t.nplane = o.size("nplane"), t.plane_at = o.size("plane_at"), t.plane_rows = o.size("plane_rows");
    int64_t np_ = t.nplane, rows = 0;
    if (t.plane_at + t.plane_rows > t.nrows) o.invalid("plane_rows", "plane rows past the analytic rows");
    t.plane_body = o.view_ints("plane_body", {np_}), t.plane_dim = o.view_ints("plane_dim", {np_});
    t.plane_origin = o.view_doubles("plane_origin", {np_, 3}), t.plane_frame = o.view_doubles("plane_frame", {np_, 3, 3});
    t.plane_pos = o.view_doubles("plane_pos", {np_, 3}), t.plane_dist = o.view_doubles("plane_dist", {np_});
    t.plane_friction = o.view_doubles("plane_friction", {np_, 5}), t.plane_radius = o.view_doubles("plane_radius", {np_});
    t.plane_axis = o.view_doubles("plane_axis", {np_, 3}), t.turns = o.view_doubles("turns", {nv, nv});
    for (int64_t c = 0; c < np_; c++) {
        if (t.plane_dim[c] != 1 && t.plane_dim[c] != 3) o.invalid("plane_dim", "a plane contact's dim not 1 or 3");
        if (t.plane_body[c] < 0 || t.plane_body[c] >= m.nbody) o.invalid("plane_body", "a body outside 0 .. nbody - 1");
        rows += pyramid_rows(t.plane_dim[c]);
    }
    if (rows != t.plane_rows) o.invalid("plane_rows", "not the plane contacts' rows");
    t.dJ = o.view_doubles("dJ", {t.nrows - t.plane_rows, nv, nv}), t.dpos = o.view_doubles("dpos", {t.nrows - t.plane_rows, nv});
    for (int64_t i = 0; i < t.nrows; i++)
        if (t.rows[i] < 0 || t.rows[i] >= n) o.invalid("rows", "a row outside 0 .. nefc - 1");
    for (int64_t k = 0; k < t.nmoving; k++)
        if (t.moving[k] < 0 || t.moving[k] >= nv) o.invalid("moving", "a dof outside 0 .. nv - 1");
    t.nanchor = o.size("nanchor"), t.anchored = o.view_ints("anchored", {t.nanchor});
    t.anchor_dJ = o.view_doubles("anchor_dJ", {t.nanchor, nv, nv});
    t.anchor_dbias = o.view_doubles("anchor_dbias", {t.nanchor, nv}), t.anchor_dgap = o.view_doubles("anchor_dgap", {t.nanchor, nv});
    for (int64_t i = 0; i < t.nanchor; i++)
        if (t.anchored[i] < 0 || t.anchored[i] >= n) o.invalid("anchored", "a row outside 0 .. nefc - 1");
    o.done();
    return t;
}

// one input of N states, x (N, size) float64 in C order (its array kept in a), into in; None leaves in empty;
// ValueError `what` for another type or shape
void per_state(nb::handle x, int64_t N, int64_t size, DArr &a, Input &in, const char *what) {
    if (x.is_none()) return;
    if (!nb::try_cast(x, a, false) || a.ndim() != 2 || int64_t(a.shape(0)) != N || int64_t(a.shape(1)) != size)
        throw nb::value_error(what);
    in = {a.data(), size};
}

// step_derivatives' options o (StepOptions' h, integrator, implicit_damping; actuators, ctrl (N, nu) and qfrc_applied
// (N, nv) or None, float64 in C order, their arrays kept in ctrl and qfrc) into call: its actuators; ValueError for a
// shape, an integrator code or actuators without ctrl (STEP_DERIVATIVES' and CONSTRAINED_STEP's)
const Actuators &read_step_options(const Model &m, Fields &o, int64_t N, StepDerivativeCall &call, DArr &ctrl, DArr &qfrc,
                                   const char *who) {
    call.opt.h = o.number("h"), call.opt.integrator = o.size("integrator"), call.opt.implicit_damping = o.flag("implicit_damping");
    if (call.opt.integrator > DISCRETE) o.invalid("integrator", "expected 0 (euler) ... 4 (discrete)");
    const Actuators &act = actuators_option(m, o.object("actuators"), who);
    const std::string name(who);
    per_state(o.object("ctrl"), N, act.nu, ctrl, call.ctrl, (name + ": ctrl (N, nu), float64 in C order").c_str());
    per_state(o.object("qfrc_applied"), N, m.nv, qfrc, call.qfrc, (name + ": qfrc_applied (N, nv), float64 in C order").c_str());
    if (act.nu && !call.ctrl.data) throw nb::value_error((name + ": the actuators need ctrl").c_str());
    return act;
}

// STEP_DERIVATIVES: A (N, 2 nv, 2 nv) and B (N, 2 nv, nu) of one step from each of N states q (N, nq), qd (N, nv) (or one,
// (nq,), (nv,)) with a dict of named options (physai.engine.native.step_derivative_fields: StepOptions' h, integrator
// (INTEGRATORS), implicit_damping; actuators (an Actuators or None), ctrl (N, nu) or None, qfrc_applied (N, nv) or None;
// float64 in C order), on threads with the GIL released for more than one state:
// (A, B, status (N): OK, or the Status a state met, its A and B undefined; the caller names it)
nb::object step_derivatives(CompiledModel &nm, const nb::handle *args) {
    const Model &m = nm.model;
    int64_t batch = -1;
    std::vector<std::vector<double>> copies;
    StepDerivativeCall call;
    read_state(args[0], "q", m.nq, false, call.q, batch, copies);
    read_state(args[1], "qd", m.nv, false, call.qd, batch, copies);
    int64_t N = batch < 0 ? 1 : batch;
    Arrays none;
    Fields o(args[2], "step_derivatives options", none);
    DArr ctrl, qfrc;                                                   // (N, size) in C order, or None
    const Actuators *act = &read_step_options(m, o, N, call, ctrl, qfrc, "step_derivatives");
    ConstrainedTerms terms;
    Arrays kept;
    if (o.has("constraints") && !o.object("constraints").is_none()) {   // one state of euler, implicit or implicitfast
        if (N != 1 || call.opt.integrator == RK4 || call.opt.integrator == DISCRETE)
            o.invalid("constraints", "one state of euler, implicit or implicitfast");
        terms = read_constrained(m, o.object("constraints"), kept);
        call.constrained = &terms;
    }
    o.done();
    int64_t nv = m.nv, nu = act->nu;
    const npy_intp da[3] = {npy_intp(N), npy_intp(2 * nv), npy_intp(2 * nv)}, db[3] = {npy_intp(N), npy_intp(2 * nv), npy_intp(nu)};
    void *a, *b, *st;
    nb::object A = new_array(3, da, NPY_DOUBLE, a), B = new_array(3, db, NPY_DOUBLE, b), status = new_array(1, da, NPY_INT64, st);
    call.A = static_cast<double *>(a), call.B = static_cast<double *>(b), call.status = static_cast<int64_t *>(st);
    std::atomic<bool> stop{false};
    step_derivative_states<nb::gil_scoped_release>(nm.work, m, *act, call, N, stop, signal_pending);
    if (stop) throw nb::python_error();                                // a signal: the results discarded
    return nb::make_tuple(A, B, status);
}

// ---------------------------------------------------------------- the constraint operations

// one contact set (floats (n, CONTACT_FLOATS) float64, ints (n, CONTACT_INTS) int64: ContactSet.packed()'s, C-contiguous
// and aligned) read in place; KernelError "type" or "shape" naming "contacts", ValueError for a dim or a body outside
// the model
Contacts read_set(const Model &m, nb::handle obj) {
    if (!PyTuple_Check(obj.ptr()) || PyTuple_GET_SIZE(obj.ptr()) != 2) fail("type", "contacts");
    int64_t n = -1;
    auto array = [&](int k, int type, int64_t entries) -> const void * {    // item k: n rows of `entries` (n: item 0's)
        PyObject *x = PyTuple_GET_ITEM(obj.ptr(), k);
        if (!PyArray_Check(x)) fail("type", "contacts");
        PyArrayObject *a = reinterpret_cast<PyArrayObject *>(x);
        if (PyArray_TYPE(a) != type || !PyArray_IS_C_CONTIGUOUS(a) || !PyArray_ISALIGNED(a) || PyArray_ISBYTESWAPPED(a))
            fail("type", "contacts");
        int64_t first = PyArray_NDIM(a) ? int64_t(PyArray_DIMS(a)[0]) : -1;
        if (n < 0) n = first;
        if (first != n || int64_t(PyArray_SIZE(a)) != n * entries) fail("shape", "contacts");
        return PyArray_DATA(a);
    };
    Contacts con;
    con.f = static_cast<const double *>(array(0, NPY_DOUBLE, CONTACT_FLOATS));
    con.i = static_cast<const int64_t *>(array(1, NPY_INT64, CONTACT_INTS));
    con.n = n;
    for (int64_t k = 0; k < n; k++) {
        int64_t dim = con.dim(k);
        if (dim != 1 && dim != 3 && dim != 4 && dim != 6) throw nb::value_error("contacts: a dim is not 1, 3, 4 or 6");
        if (con.body1(k) < -1 || con.body1(k) >= m.nbody || con.body2(k) < -1 || con.body2(k) >= m.nbody)
            throw nb::value_error("contacts: a body outside the model");
    }
    return con;
}

// the contacts of a constraint call on N states into c.sets: None, or a list of one set for every state or of N sets
// (read_set's, read where they are: no copy; keep holds them for the call, the list may change while it runs without
// the GIL); KernelError "type" or "shape" naming "contacts"
void read_contacts(const Model &m, nb::handle obj, int64_t N, ConstraintCall &c, std::vector<nb::object> &keep) {
    c.sets.clear();
    if (obj.is_none()) return;
    if (!PyList_Check(obj.ptr())) fail("type", "contacts");
    Py_ssize_t n = PyList_GET_SIZE(obj.ptr());
    if (n != 1 && n != N) fail("shape", "contacts");
    c.sets.reserve(size_t(n)), keep.reserve(size_t(n));
    for (Py_ssize_t s = 0; s < n; s++) {
        keep.push_back(nb::borrow(PyList_GET_ITEM(obj.ptr(), s)));
        c.sets.push_back(read_set(m, keep.back()));
    }
}

// a new array (total, cols) of `type` (cols 0: (total,)) filled from member `field` of each range's RowsOut, in order;
// rows >= 0: (rows, cols) whatever cols (the rows' Jacobians, (nefc, nv): with nv 0 their numbers cannot count the rows)
template <class X> nb::object gather_rows(const std::vector<const RowsOut *> &outs, std::vector<X> RowsOut::*field,
                                          int64_t cols, int type, int64_t rows = -1) {
    size_t total = 0;
    for (const RowsOut *o : outs) total += (o->*field).size();
    npy_intp dims[2] = {npy_intp(rows >= 0 ? size_t(rows) : cols ? total / size_t(cols) : total), npy_intp(cols)};
    void *data;
    nb::object r = new_array(rows >= 0 || cols ? 2 : 1, dims, type, data);
    X *at = static_cast<X *>(data);
    for (const RowsOut *o : outs) at = std::copy((o->*field).begin(), (o->*field).end(), at);
    return r;
}

// the rows of every range's RowsOut (one type each)
int64_t total_rows(const std::vector<const RowsOut *> &outs) {
    size_t total = 0;
    for (const RowsOut *o : outs) total += o->type.size();
    return int64_t(total);
}

// a new array (fields, total) of `type`, its row k filled as gather_rows fills member fields[k] (one allocation for the
// per-row arrays; each row a contiguous view)
template <class X> nb::object gather_block(const std::vector<const RowsOut *> &outs,
                                           std::initializer_list<std::vector<X> RowsOut::*> fields, int type) {
    size_t total = 0;
    for (const RowsOut *o : outs) total += (o->**fields.begin()).size();
    npy_intp dims[2] = {npy_intp(fields.size()), npy_intp(total)};
    void *data;
    nb::object r = new_array(2, dims, type, data);
    X *at = static_cast<X *>(data);
    for (auto field : fields)
        for (const RowsOut *o : outs) at = std::copy((o->*field).begin(), (o->*field).end(), at);
    return r;
}

// a constraint call's discrete option (fields, ctrl, act) into dc (constrain's), the arrays it reads kept in keep;
// kernel: the call's kernel's name, for the errors
const DiscreteCall *read_discrete(const Model &m, nb::handle x, DiscreteCall &dc, Arrays &keep, const char *kernel) {
    if (!PyTuple_Check(x.ptr()) || PyTuple_GET_SIZE(x.ptr()) != 3) fail("type", "discrete");
    nb::tuple t = nb::borrow<nb::tuple>(x);
    Fields o(t[0], "discrete options", keep);
    dc.opt.h = o.number("h"), dc.opt.integrator = o.size("integrator"), dc.opt.implicit_damping = o.flag("implicit_damping");
    dc.opt.explicit_couplings = o.flag("explicit_couplings"), dc.opt.tolerance = o.number("tolerance");
    dc.opt.iterations = o.size("iterations");
    if (dc.opt.integrator != DISCRETE) o.invalid("integrator", "expected 4 (discrete)");
    dc.act = &actuators_option(m, o.object("actuators"), kernel);
    auto vector = [&](nb::handle v, int64_t n, const char *name) -> const double * {
        if (v.is_none()) return nullptr;
        PyArrayObject *a = float64_array(v, 1);
        if (!a || int64_t(PyArray_DIM(a, 0)) != n || !PyArray_IS_C_CONTIGUOUS(a)) fail("shape", name);
        return static_cast<const double *>(PyArray_DATA(a));
    };
    dc.inputs.ctrl.data = vector(t[1], dc.act->nu, "ctrl"), dc.act_in = vector(t[2], dc.act->na, "act");
    if (dc.act->nu && !dc.inputs.ctrl.data) throw nb::value_error((std::string(kernel) + ": the actuators need ctrl").c_str());
    return &dc;
}

// constraint_forward's front option (actuators, ctrl (N, nu) or None, qfrc_applied (N, nv) or None; float64 in C order)
// into c.front, c.ctrl and c.applied (their arrays kept in ctrl and applied); ValueError for another shape, or actuators
// the front does not take (activations, arms of the configuration: forward.DynamicsEvaluator.evaluate's compiled branch
// leaves those to the NumPy text), or a discrete call
void read_front(const Model &m, nb::handle obj, int64_t N, ConstraintCall &c, DArr &ctrl, DArr &applied) {
    if (!PyTuple_Check(obj.ptr()) || PyTuple_GET_SIZE(obj.ptr()) != 3)
        throw nb::value_error("constraint_forward: front (actuators, ctrl, qfrc_applied)");
    nb::tuple t = nb::borrow<nb::tuple>(obj);
    const Actuators &act = actuators_option(m, t[0], "constraint_forward");
    if (act.na || act.posed || c.discrete)
        throw nb::value_error("constraint_forward: the front takes actuators without activations or arms of the "
                              "configuration, and no discrete step");
    per_state(t[1], N, act.nu, ctrl, c.ctrl, "constraint_forward: the front's ctrl (N, nu), float64 in C order");
    per_state(t[2], N, m.nv, applied, c.applied, "constraint_forward: the front's qfrc_applied (N, nv), float64 in C order");
    if (act.nu && !c.ctrl.data) throw nb::value_error("constraint_forward: the front's actuators need ctrl");
    c.front = &act;
}

// CONSTRAINT_ROWS, CONSTRAINT_FORWARD, CONSTRAINT_INVERSE on q, qd (and tau or qacc) and the options (contacts,
// eq_active (neq) bool or None; forward: qacc_warmstart (a state or None), tolerance, iterations, balanced (qfrc_constraint
// as solver.balanced_constraint_force gives it); forward and inverse: rows, whether to return the rows; forward then
// own_force, its rows with the solver's efc_force; last, each op's discrete: None, or a discrete model's step
// (inverse.h's discrete_forward_state, discrete_state: its rows at the step's end, the forward's step map, the
// inverse's tau) as (its step_fields' dict (h, integrator, implicit_damping, explicit_couplings, tolerance, iterations,
// actuators; the rest unread), ctrl (nu,) or None, act (na,) or None), forward's without rows). Returns (results, sizes, rows...): results per state (forward: qacc,
// qfrc_constraint, iterations, improvement, converged, discrete's capped (N,): each state's relative residual where its
// smooth solve stopped at its iteration cap, -1 none; inverse: tau, qfrc_constraint; none for the rows), with a leading
// N for a batch; sizes (N, 5): each state's nefc, ne, nf, nl and contacts; then the states' rows concatenated: J (total
// nefc, nv); values (12 or 13, total nefc): pos, margin, frictionloss, diagA, R, D, K, B, imp, impP, vel, aref and
// efc_force (not for the rows); ints (2, total nefc): type, id (forward, inverse: (3, total nefc), each row's state
// third); contact_row (1, total contacts), contact_mu (total contacts); forward then ncone (N,): each state's contacts
// on their cone, cones (2, total cones): each one's first row in its state's rows and dim, cone_H (the cones' dim x
// dim Hessians concatenated); forward's efc_force, states and cones those of update at qacc (J qacc - aref), its
// qfrc_constraint J^T efc_force; with own_force the solver's efc_force and qfrc_constraint, no states (ints (2, total
// nefc)) and nothing after contact_mu. With the front option (forward: tau None, read_front) each state's f (nv) and M
// (nv, nv) end results. Without rows: (results, sizes, efc_force (total nefc)). Small calls keep the GIL and run on the
// CompiledModel's workspace; larger ones run on threads with the GIL released.
nb::object constrain(CompiledModel &nm, int op, const nb::handle *args) {
    const Model &m = nm.model;
    if (!m.has_constraints) throw nb::value_error("the compiled model has no constraint fields (Model.add_constraints)");
    const std::vector<Argument> &signature = SIGNATURES[op];
    ConstraintCall c;
    c.op = op, c.lanes = &isa_kernels(active_isa());
    int64_t batch = -1;
    std::vector<std::vector<double>> copies;
    read_state(args[0], "q", m.nq, false, c.q, batch, copies);
    read_state(args[1], "qd", m.nv, false, c.qd, batch, copies);
    int k = 2;
    bool no_tau = op == CONSTRAINT_FORWARD && args[k].is_none();      // forward: tau made from its front option
    if (op != CONSTRAINT_ROWS && !no_tau) read_state(args[k], signature[size_t(k)].name.c_str(), m.nv, false, c.x, batch, copies);
    if (op != CONSTRAINT_ROWS) k++;
    size_t options = op == CONSTRAINT_FORWARD ? 10 : op == CONSTRAINT_INVERSE ? 4 : 3;
    if (!PyTuple_Check(args[k].ptr()) || size_t(PyTuple_GET_SIZE(args[k].ptr())) != options)
        throw nb::value_error(op == CONSTRAINT_FORWARD ? "constraint_forward: options (contacts, eq_active, qacc_warmstart, "
                                                         "tolerance, iterations, balanced, rows, own_force, discrete, front)"
                              : op == CONSTRAINT_INVERSE ? "constraint_inverse: options (contacts, eq_active, rows, discrete)"
                                                         : "constraint_rows: options (contacts, eq_active, discrete)");
    nb::tuple o = nb::borrow<nb::tuple>(args[k]);
    int64_t N = batch < 0 ? 1 : batch;
    std::vector<nb::object> kept_sets;
    read_contacts(m, o[0], N, c, kept_sets);
    DiscreteCall discrete;
    Arrays keep;
    if (!o[1].is_none()) {
        PyObject *x = o[1].ptr();
        if (!PyArray_Check(x)) fail("type", "eq_active");
        PyArrayObject *a = reinterpret_cast<PyArrayObject *>(x);
        if (PyArray_TYPE(a) != NPY_BOOL || !PyArray_IS_C_CONTIGUOUS(a)) fail("type", "eq_active");
        if (PyArray_NDIM(a) != 1 || int64_t(PyArray_DIMS(a)[0]) != m.neq) fail("shape", "eq_active");
        c.eq_active = static_cast<const bool *>(PyArray_DATA(a));
    }
    if (op == CONSTRAINT_FORWARD) {
        if (!o[2].is_none()) {
            int64_t warm_batch = batch;
            read_state(o[2], "qacc_warmstart", m.nv, false, c.warm, warm_batch, copies);
            if (warm_batch != batch) fail("shape", "qacc_warmstart");
        }
        if (!PyFloat_Check(o[3].ptr()) || !PyLong_Check(o[4].ptr())) fail("type", "constraint");
        c.tolerance = PyFloat_AS_DOUBLE(o[3].ptr()), c.iterations = PyLong_AsLongLong(o[4].ptr());
        if (!PyBool_Check(o[5].ptr()) || !PyBool_Check(o[7].ptr())) fail("type", "constraint");
        c.balanced = o[5].ptr() == Py_True, c.own_force = o[7].ptr() == Py_True;
    }
    size_t discrete_at = op == CONSTRAINT_FORWARD ? 8 : options - 1;
    if (!o[discrete_at].is_none()) c.discrete = read_discrete(m, o[discrete_at], discrete, keep, OPERATIONS[op].name);
    DArr front_ctrl, front_applied;                                    // forward's front: (actuators, ctrl, qfrc_applied)
    if (op == CONSTRAINT_FORWARD && !o[9].is_none())
        read_front(m, o[9], batch < 0 ? 1 : batch, c, front_ctrl, front_applied);
    if (no_tau && !c.front) throw nb::value_error("constraint_forward: tau is None without the front option");
    if (op != CONSTRAINT_ROWS) {
        size_t at = op == CONSTRAINT_FORWARD ? 6 : 2;
        if (!PyBool_Check(o[at].ptr())) fail("type", "constraint");
        c.rows = o[at].ptr() == Py_True;
    }
    // the results per state
    npy_intp vdims[2] = {npy_intp(N), m.nv}, sdims[1] = {npy_intp(N)};
    int nd = batch < 0 ? 1 : 2;
    const npy_intp *vd = batch < 0 ? vdims + 1 : vdims;
    void *data;
    nb::list results;
    auto vector_result = [&](double *&out) {
        results.append(new_array(nd, vd, NPY_DOUBLE, data));
        out = static_cast<double *>(data);
    };
    if (op == CONSTRAINT_FORWARD) {
        vector_result(c.qacc);
        vector_result(c.qfrc);
        results.append(new_array(1, sdims, NPY_INT64, data)), c.iters = static_cast<int64_t *>(data);
        results.append(new_array(1, sdims, NPY_DOUBLE, data)), c.improvement = static_cast<double *>(data);
        results.append(new_array(1, sdims, NPY_BOOL, data)), c.converged = static_cast<bool *>(data);
        if (c.front) {                                                 // each state's f (nv) and M (nv, nv)
            vector_result(c.f_out);
            npy_intp mdims[3] = {npy_intp(N), m.nv, m.nv};
            results.append(new_array(batch < 0 ? 2 : 3, batch < 0 ? mdims + 1 : mdims, NPY_DOUBLE, data));
            c.M_out = static_cast<double *>(data);
        }
        if (c.discrete) {                                              // each state's smooth solve at its cap, or -1
            results.append(new_array(1, sdims, NPY_DOUBLE, data)), discrete.capped = static_cast<double *>(data);
            std::fill_n(discrete.capped, N, -1.0);
        }
    } else if (op == CONSTRAINT_INVERSE) {
        vector_result(c.tau);
        vector_result(c.qfrc);
    }
    Failures failures;
    for (auto &first : failures.first) first.store(NO_STATE, std::memory_order_relaxed);
    ConstraintRun run;
    std::atomic<bool> stop{false};
    constrain_states<nb::gil_scoped_release>(nm.work, m, c, N, failures, run, stop, signal_pending);
    if (stop) throw nb::python_error();                                // a signal: the results discarded
    const std::vector<const RowsOut *> &outs = run.outs;
    auto first = [&](int status) { return failures.first[status].load(std::memory_order_relaxed); };
    if (first(ZERO_QUATERNION) != NO_STATE) fail("zero_quaternion", "q", first(ZERO_QUATERNION));
    if (first(SINGULAR) != NO_STATE) fail("singular", nullptr, first(SINGULAR));
    using R = RowsOut;
    if (!c.rows) return nb::make_tuple(nb::tuple(results), gather_rows(outs, &R::sizes, ROW_SIZES, NPY_INT64),
                                       gather_rows(outs, &R::force, 0, NPY_DOUBLE));
    bool states = op != CONSTRAINT_ROWS && !c.own_force;                // each row's state: update's (not own_force's)
    nb::object ints = !states ? gather_block(outs, {&R::type, &R::id}, NPY_INT64)
                                            : gather_block(outs, {&R::type, &R::id, &R::state}, NPY_INT64);
    nb::object values = op == CONSTRAINT_ROWS
        ? gather_block(outs, {&R::pos, &R::margin, &R::frictionloss, &R::diagA, &R::R, &R::D, &R::K, &R::B, &R::imp, &R::impP,
                              &R::vel, &R::aref}, NPY_DOUBLE)
        : gather_block(outs, {&R::pos, &R::margin, &R::frictionloss, &R::diagA, &R::R, &R::D, &R::K, &R::B, &R::imp, &R::impP,
                              &R::vel, &R::aref, &R::force}, NPY_DOUBLE);
    nb::tuple rows = nb::make_tuple(nb::tuple(results), gather_rows(outs, &R::sizes, ROW_SIZES, NPY_INT64),
                                    gather_rows(outs, &R::J, m.nv, NPY_DOUBLE, total_rows(outs)), values, ints,
                                    gather_block(outs, {&R::contact_row}, NPY_INT64),
                                    gather_rows(outs, &R::contact_mu, 0, NPY_DOUBLE));
    if (op != CONSTRAINT_FORWARD || c.own_force) return rows;
    return nb::make_tuple(rows[0], rows[1], rows[2], rows[3], rows[4], rows[5], rows[6],
                          gather_rows(outs, &R::ncone, 0, NPY_INT64),
                          gather_block(outs, {&R::cone_first, &R::cone_dim}, NPY_INT64),
                          gather_rows(outs, &R::cone_H, 0, NPY_DOUBLE));
}

// an int64 or float64 array of shape (n, width) (width 0: (n,)) holding v
template <class X> nb::object vector_array(const std::vector<X> &v, int64_t width) {
    npy_intp dims[2] = {npy_intp(width ? int64_t(v.size()) / width : int64_t(v.size())), npy_intp(width)};
    void *data;
    nb::object r = new_array(width ? 2 : 1, dims, std::is_same_v<X, double> ? NPY_DOUBLE : NPY_INT64, data);
    std::copy(v.begin(), v.end(), static_cast<X *>(data));
    return r;
}

// the collision workspace and output of a detection on the calling thread (the GIL held): the compiled model's kept
// ones unless a call in progress holds them (then this call's own; an output of more than 64 states its own too),
// held while this lives (Workspaces::detecting)
struct KeptDetection {
    CollisionPtr own_work;
    DetectOut own_out;
    bool *held = nullptr;
    CollisionWorkspace *work = nullptr;
    DetectOut *out = nullptr;
    KeptDetection(CompiledModel &nm, int64_t N) {
        Workspaces &kept = nm.work;
        bool keeps = !kept.detecting;
        if (keeps && !kept.collision_one) kept.collision_one = CollisionPtr(scalar::make_collision_work(nm.model));
        if (!keeps) own_work = CollisionPtr(scalar::make_collision_work(nm.model));
        work = keeps ? kept.collision_one.get() : own_work.get();
        out = keeps && N <= 64 ? &kept.detect_out : &own_out;
        if (keeps) kept.detecting = true, held = &kept.detecting;
        out->clear();
    }
    ~KeptDetection() {
        if (held) *held = false;
    }
    KeptDetection(const KeptDetection &) = delete;
    KeptDetection &operator=(const KeptDetection &) = delete;
};

// the contacts of N states of q (subset, q0 and dofs: cpp/collision.h's detect's) appended to kept's output, 64 states at
// a time; a pending signal between them stops the call (its results discarded)
void detect_chunks(const Model &m, KeptDetection &kept, Input q, const uint8_t *subset, int64_t N, const double *q0,
                   const int64_t *dofs) {
    for (int64_t lo = 0; lo < N; lo += 64) {
        if (lo && PyErr_CheckSignals()) throw nb::python_error();
        scalar::detect_states(m, *kept.work, q, subset, lo, std::min(N, lo + 64), *kept.out, q0, dofs);
    }
}

// COLLISION_DETECT: the contacts of q (nq,) or N states (N, nq) (cpp/collision.h's detect; subset None, or each
// state's pairs to collide: bool (N, ncand + nmissing), C order; along None, or (q0 float64 (nq,), dofs int64 (N,)):
// state s is q0 moved along dof dofs[s], its other bodies posed at q0): (ncon (N,), floats (total,
// CONTACT_FLOATS), ints (total, CONTACT_INTS), geom (total, 2): each contact's candidate pair's geoms (cand_geom),
// nnear (N,), near: the left-out pairs that may touch, per state), the states' contacts concatenated, floats, ints and
// geom read-only (a ContactSet's, as they are); Ctrl-C stops it between states
nb::object collision_detect(CompiledModel &nm, const nb::handle *args) {
    const Model &m = nm.model;
    if (!m.has_constraints) throw nb::value_error("the compiled model has no collision fields (Model.add_constraints)");
    int64_t batch = -1;
    std::vector<std::vector<double>> copies;
    Input q;
    read_state(args[0], "q", m.nq, false, q, batch, copies);
    int64_t N = batch < 0 ? 1 : batch;
    const uint8_t *subset = nullptr;
    if (!args[1].is_none()) {
        PyObject *x = args[1].ptr();
        if (!PyArray_Check(x)) fail("type", "subset");
        PyArrayObject *a = reinterpret_cast<PyArrayObject *>(x);
        if (PyArray_TYPE(a) != NPY_BOOL || !PyArray_IS_C_CONTIGUOUS(a)) fail("type", "subset");
        if (PyArray_NDIM(a) != 2 || int64_t(PyArray_DIMS(a)[0]) != N || int64_t(PyArray_DIMS(a)[1]) != m.ncand + m.nmissing)
            fail("shape", "subset");
        subset = static_cast<const uint8_t *>(PyArray_DATA(a));
    }
    const double *q0 = nullptr;                                         // along: (q0 (nq,), dofs (N,)) or None
    const int64_t *dofs = nullptr;
    if (!args[2].is_none()) {
        PyObject *x = args[2].ptr();
        if (!PyTuple_Check(x) || PyTuple_GET_SIZE(x) != 2) fail("type", "along");
        PyObject *a0 = PyTuple_GET_ITEM(x, 0), *a1 = PyTuple_GET_ITEM(x, 1);
        if (!PyArray_Check(a0) || !PyArray_Check(a1)) fail("type", "along");
        PyArrayObject *base = reinterpret_cast<PyArrayObject *>(a0), *along = reinterpret_cast<PyArrayObject *>(a1);
        if (PyArray_TYPE(base) != NPY_DOUBLE || !PyArray_IS_C_CONTIGUOUS(base) || PyArray_TYPE(along) != NPY_INT64 ||
            !PyArray_IS_C_CONTIGUOUS(along))
            fail("type", "along");
        if (PyArray_NDIM(base) != 1 || int64_t(PyArray_DIMS(base)[0]) != m.nq || PyArray_NDIM(along) != 1 ||
            int64_t(PyArray_DIMS(along)[0]) != N)
            fail("shape", "along");
        q0 = static_cast<const double *>(PyArray_DATA(base)), dofs = static_cast<const int64_t *>(PyArray_DATA(along));
        for (int64_t s = 0; s < N; s++)
            if (dofs[s] < 0 || dofs[s] >= m.nv) fail("type", "along");
        for (int64_t k = 0; k < m.nq; k++)
            if (!std::isfinite(q0[k])) fail("type", "along");
    }
    KeptDetection kept(nm, N);
    detect_chunks(nm.model, kept, q, subset, N, q0, dofs);
    const DetectOut &out = *kept.out;
    npy_intp dims[2] = {npy_intp(out.cand.size()), 2};
    void *data;
    nb::object geom = new_array(2, dims, NPY_INT64, data);
    for (size_t k = 0; k < out.cand.size(); k++)
        for (int a = 0; a < 2; a++) static_cast<int64_t *>(data)[2 * k + a] = m.cand_geom[2 * out.cand[k] + a];
    nb::object f = vector_array(out.f, CONTACT_FLOATS), i = vector_array(out.i, CONTACT_INTS);
    for (const nb::object &a : {f, i, geom}) PyArray_CLEARFLAGS(reinterpret_cast<PyArrayObject *>(a.ptr()), NPY_ARRAY_WRITEABLE);
    return nb::make_tuple(vector_array(out.ncon, 0), f, i, geom, vector_array(out.nnear, 0), vector_array(out.near, 0));
}

// the numpy array `name` of mapping f read in place (C-contiguous, aligned, native order, of this type and shape; an entry
// -1: any length, returned in *free): PyArray's checks, a few nanoseconds where nanobind's ndarray cast takes microseconds
const void *array_view(Fields &f, const char *name, int type, std::initializer_list<int64_t> shape, int64_t *free = nullptr) {
    PyObject *x = f.object(name).ptr();
    PyArrayObject *a = reinterpret_cast<PyArrayObject *>(x);
    bool ok = PyArray_Check(x) && PyArray_TYPE(a) == type && PyArray_IS_C_CONTIGUOUS(a) && PyArray_ISALIGNED(a) &&
              !PyArray_ISBYTESWAPPED(a) && size_t(PyArray_NDIM(a)) == shape.size();
    int k = 0;
    for (int64_t d : shape) {
        if (!ok) break;
        int64_t got = int64_t(PyArray_DIMS(a)[k++]);
        if (d < 0 && free) *free = got;
        ok = d < 0 || got == d;
    }
    if (!ok) f.error(name, std::string("a C-contiguous ") + (type == NPY_DOUBLE ? "float64" : "int64") + " array of shape " +
                               shape_text(shape), nb::handle(x));
    return PyArray_DATA(a);
}

// PROVEN_STILL's check (derivatives._Constraints._checked_still), on a collision workspace and output of the caller's:
// each dof of `dofs` detected at q0 moved by -2 and +2
// ROW_STEP along it (integrate_pos, as _Constraints._points), posing only the bodies it moves and colliding the pairs
// it may change (_detect_subset's: those it moves one geom of, and those in contact at q0 it moves either geom of), then
// held to q0's contacts S as _moved_contacts and _one_side hold them: at each point as many contacts as q0's the dof
// moves, their dims and bodies in order, and every normal (q0's and the points') on one side of make_frame's switch.
// 0 where all hold; 1 where one does not, or a contact of q0 has no geom pair (the caller's NumPy text then finds which
// and names it). The left-out pairs that may touch at a point (indices into the model's missing pairs, sorted, once)
// into near
int still_check(const Model &m, CollisionWorkspace &work, DetectOut &out, const StillTables &T, const StillState &S,
                const double *q0, const std::vector<int64_t> &dofs, std::vector<int64_t> &near) {
    const int64_t P = T.npair, nv = m.nv, nq = m.nq, npts = 2 * int64_t(dofs.size());
    if (dofs.empty()) return 0;
    for (int64_t c = 0; c < 2 * S.nc; c++)
        if (S.geom[c] < 0) return 1;
    std::vector<uint8_t> touching(size_t(P), 0), subset(size_t(npts * P));
    for (int64_t p = 0; p < P; p++)                                     // the pairs with a contact at q0
        for (int64_t c = 0; c < S.nc && !touching[size_t(p)]; c++)
            touching[size_t(p)] = T.pair[2 * p] == S.geom[2 * c] && T.pair[2 * p + 1] == S.geom[2 * c + 1];
    std::vector<double> Q(size_t(npts * nq)), v(size_t(nv), 0.0);
    std::vector<int64_t> along(static_cast<size_t>(npts));
    for (int64_t i = 0; i < npts; i++) {                                // q0 moved by -2, +2 ROW_STEP along each dof
        const int64_t k = dofs[size_t(i / 2)];
        v[size_t(k)] = (i % 2 ? 2.0 : -2.0) * T.row_step;
        integrate_pos(m, q0, v.data(), 1.0, &Q[size_t(i * nq)]);
        v[size_t(k)] = 0.0, along[size_t(i)] = k;
        for (int64_t p = 0; p < P; p++) {
            const int64_t a = T.geom_dofs[T.pair[2 * p] * nv + k], b = T.geom_dofs[T.pair[2 * p + 1] * nv + k];
            subset[size_t(i * P + p)] = uint8_t((a ^ b) | ((a | b) & touching[size_t(p)]));
        }
    }
    out.clear();
    scalar::detect_states(m, work, Input{Q.data(), nq}, subset.data(), 0, npts, out, q0, along.data());
    near.assign(out.near.begin(), out.near.end());
    std::sort(near.begin(), near.end()), near.erase(std::unique(near.begin(), near.end()), near.end());
    auto from_y = [](const double *floats) { return std::fabs(floats[4]) < 0.5; };   // tangent_from_y of its normal
    bool one = true, any = false;
    for (int64_t c = 0; c < S.nc; c++) {
        bool y = from_y(S.floats + c * PACKED_WIDTH);
        one = one && y, any = any || y;
    }
    if (!one && any) return 1;                                          // q0's normals on both sides
    size_t at = 0;
    for (int64_t i = 0; i < npts; i++) {                                // each point's contacts, q0's moved ones in order
        const int64_t k = along[size_t(i)];
        int64_t found = out.ncon[size_t(i)], j = 0;
        for (int64_t c = 0; c < S.nc; c++) {
            if (!(T.geom_dofs[S.geom[2 * c] * nv + k] | T.geom_dofs[S.geom[2 * c + 1] * nv + k])) continue;
            if (j >= found) return 1;
            for (int e = 0; e < CONTACT_INTS; e++)
                if (out.i[(at + size_t(j)) * CONTACT_INTS + size_t(e)] != S.ints[CONTACT_INTS * c + e]) return 1;
            if (from_y(&out.f[(at + size_t(j)) * CONTACT_FLOATS]) != one) return 1;
            j++;
        }
        if (j != found) return 1;
        at += size_t(found);
    }
    return 0;
}

// array_view of a float64 (int64) array
const double *doubles_view(Fields &f, const char *name, std::initializer_list<int64_t> shape, int64_t *free = nullptr) {
    return static_cast<const double *>(array_view(f, name, NPY_DOUBLE, shape, free));
}
const int64_t *ints_view(Fields &f, const char *name, std::initializer_list<int64_t> shape) {
    return static_cast<const int64_t *>(array_view(f, name, NPY_INT64, shape));
}

// derivatives._still_kernel_tables' dict as the proof reads it (StillTables, in place: valid while the dict holds its
// arrays); TypeError or ValueError naming the field and `who` (proven_still_call's and constrained_step_call's)
StillTables read_still_tables(const Model &m, nb::handle mapping, const char *who) {
    const int64_t nv = m.nv, nbody = m.nbody;
    Arrays none;
    Fields t(mapping, who, none);
    StillTables T;
    T.nv = nv, T.nbody = nbody, T.ngeom = t.size("ngeom"), T.npair = t.size("npair"), T.nflat = t.size("nflat");
    const int64_t G = T.ngeom, P = T.npair, F = T.nflat;
    T.pair = ints_view(t, "pair", {P, 2}), T.bound = doubles_view(t, "bound", {P}), T.margin = doubles_view(t, "margin", {P});
    T.reach = doubles_view(t, "reach", {G}), T.local = doubles_view(t, "local", {G, 3}), T.frame = doubles_view(t, "frame", {G, 3, 3});
    T.box = doubles_view(t, "box", {G, 6}), T.body = ints_view(t, "body", {nv}), T.anchor = doubles_view(t, "anchor", {nv});
    T.turn = doubles_view(t, "turn", {nv}), T.slide = doubles_view(t, "slide", {nv}), T.gbody = ints_view(t, "gbody", {G});
    T.sphere = doubles_view(t, "sphere", {P}), T.flat = ints_view(t, "flat", {F}), T.plane = ints_view(t, "plane", {F});
    T.other = ints_view(t, "other", {F}), T.lift = doubles_view(t, "lift", {F}), T.geom_dofs = ints_view(t, "geom_dofs", {G, nv});
    T.geom_type = ints_view(t, "geom_type", {G}), T.geom_size = doubles_view(t, "geom_size", {G, 3});
    T.row_step = t.number("row_step"), T.ccd_tolerance = t.number("ccd_tolerance"), T.shapes = &m;
    t.done();
    for (int64_t p = 0; p < 2 * P; p++)
        if (T.pair[p] < 0 || T.pair[p] >= G) t.invalid("pair", "a geom outside 0 .. ngeom - 1");
    for (int64_t s = 0; s < nv; s++)
        if (T.body[s] < 0 || T.body[s] >= nbody) t.invalid("body", "a body outside 0 .. nbody - 1");
    for (int64_t g = 0; g < G; g++)
        if (T.gbody[g] < 0 || T.gbody[g] > nbody) t.invalid("gbody", "a body outside 0 .. nbody");
    for (int64_t f = 0; f < F; f++)
        if (T.flat[f] < 0 || T.flat[f] >= P || T.plane[f] < 0 || T.plane[f] >= G || T.other[f] < 0 || T.other[f] >= G)
            t.invalid("flat", "a pair or a geom outside the tables");
    return T;
}

// PROVEN_STILL: still (k,) int64 dofs, tables (derivatives._still_kernel_tables' dict, per model), state (a dict: xpos
// (nbody, 3), xmat (nbody, 3, 3) the bodies' poses at q; floats (nc, 28), ints (nc, 3) the contacts there, packed,
// geom (nc, 2) their geoms; every array C-contiguous float64 or int64): bool (k,), each dof proven (cpp/constraint_derivative.h's
// proven_still); TypeError for an array of another type, shape, layout or byte order (Fields.error's, as the other
// kernels' fields), ValueError for an index out of range. With a fourth argument check, q0 (nq,) float64 the state:
// (proven, status, near) of still_check on the dofs the proof leaves
nb::object proven_still_call(CompiledModel &nm, const nb::handle *args) {
    const Model &m = nm.model;
    const int64_t nv = m.nv, nbody = m.nbody;
    PyArrayObject *dofs = reinterpret_cast<PyArrayObject *>(args[0].ptr());
    if (!PyArray_Check(args[0].ptr()) || PyArray_TYPE(dofs) != NPY_INT64 || !PyArray_IS_C_CONTIGUOUS(dofs) ||
        !PyArray_ISALIGNED(dofs) || PyArray_ISBYTESWAPPED(dofs) || PyArray_NDIM(dofs) != 1)
        throw nb::type_error("proven_still still: expected a C-contiguous int64 array of shape (k,) in native byte order");
    const int64_t k = int64_t(PyArray_DIMS(dofs)[0]);
    const int64_t *still = static_cast<const int64_t *>(PyArray_DATA(dofs));
    for (int64_t s = 0; s < k; s++)
        if (still[s] < 0 || still[s] >= nv) throw nb::value_error("proven_still: a dof outside 0 .. nv - 1");
    Arrays none;
    StillTables T = read_still_tables(m, args[1], "proven_still tables");
    const int64_t G = T.ngeom;
    Fields a(args[2], "proven_still state", none);
    StillState S;
    S.xpos = doubles_view(a, "xpos", {nbody, 3}), S.xmat = doubles_view(a, "xmat", {nbody, 3, 3});
    int64_t nc = 0;
    S.floats = doubles_view(a, "floats", {-1, PACKED_WIDTH}, &nc);
    S.nc = nc, S.ints = ints_view(a, "ints", {nc, 3}), S.geom = ints_view(a, "geom", {nc, 2});
    a.done();
    for (int64_t c = 0; c < 2 * nc; c++)
        if (S.geom[c] >= G) a.invalid("geom", "a geom outside 0 .. ngeom - 1");
    const npy_intp dims[1] = {npy_intp(k)};
    void *out;
    nb::object r = new_array(1, dims, NPY_BOOL, out);
    StillWork work;
    proven_still(T, S, still, k, static_cast<uint8_t *>(out), work);
    if (args[3].is_none()) return r;
    PyArrayObject *base = reinterpret_cast<PyArrayObject *>(args[3].ptr());   // the check: q0 (nq,), the state
    if (!PyArray_Check(args[3].ptr()) || PyArray_TYPE(base) != NPY_DOUBLE || !PyArray_IS_C_CONTIGUOUS(base) ||
        !PyArray_ISALIGNED(base) || PyArray_NDIM(base) != 1 || int64_t(PyArray_DIMS(base)[0]) != m.nq)
        throw nb::type_error("proven_still check: expected q0, a C-contiguous float64 array of shape (nq,)");
    if (!m.has_constraints || T.npair != m.ncand + m.nmissing || T.nv != nv)
        throw nb::value_error("proven_still check: the tables are not this model's (its pairs, ncand + nmissing)");
    const double *q0 = static_cast<const double *>(PyArray_DATA(base));
    for (int64_t i = 0; i < m.nq; i++)
        if (!std::isfinite(q0[i])) throw nb::value_error("proven_still check: q0 is not finite");
    std::vector<int64_t> left;                                          // the dofs the proof leaves
    for (int64_t s = 0; s < k; s++)
        if (!static_cast<uint8_t *>(out)[s]) left.push_back(still[s]);
    std::vector<int64_t> near;
    KeptDetection kept(nm, 2 * int64_t(left.size()));
    int status = still_check(m, *kept.work, *kept.out, T, S, q0, left, near);
    return nb::make_tuple(r, status, vector_array(near, 0));
}

// what one_call_state reads besides the state: the model's tables, the solver's settings, the kernels' layouts
struct OneCallSetup {
    const Actuators *act = nullptr;
    OneCallTables tables;
    StillTables still;
    StepOptions opt;
    double tolerance = 0.0;
    int64_t iterations = 0;
    Call pose, jacobian;                                                // BODY_POSES' and JACOBIAN's layouts
};

// one state's constrained step in one call (CONSTRAINED_STEP's): the contacts at q (collision.h's detect), the smooth
// forces and the solve (the constraint kernel's forward with its front), the bodies' poses (BODY_POSES), the pairs'
// bodies' Jacobians (JACOBIAN), the rows' terms (one_call_terms), every contact dof proven still or detected at its
// points and held (proven_still, still_check), then the step kernel into A (2 nv, 2 nv), B (2 nv, nu), and the margins
// (4: one_call_margins); the solve from warm (nv) where given and its cost is lower. 0, or why the state is left to the
// NumPy text (OneCallDecline; A, B and the margins then undefined). No Python: a batch's threads run it
int one_call_state(const Model &m, const OneCallSetup &u, OneCallWork &w, const double *q, const double *qd,
                   const double *ctrl, const double *applied, const double *warm, double *A, double *B, double *margins) {
    const int64_t nv = m.nv, nbody = m.nbody;
    const OneCallTables &T = u.tables;
    w.detected.clear();                                                 // the contacts at q, packed, and their geoms
    scalar::detect_states(m, *w.collision, Input{q, m.nq}, nullptr, 0, 1, w.detected);
    if (!w.detected.near.empty()) return ONE_CALL_CONTACT;             // a left-out pair may touch: the text warns
    w.floats = w.detected.f, w.ints = w.detected.i, w.geom.clear();
    for (int64_t k : w.detected.cand) w.geom.push_back(m.cand_geom[2 * k]), w.geom.push_back(m.cand_geom[2 * k + 1]);
    Contacts contacts;
    contacts.n = int64_t(w.geom.size() / 2), contacts.f = w.floats.data(), contacts.i = w.ints.data();
    ConstraintCall c;                                                   // the smooth forces and the solve, its rows
    c.op = CONSTRAINT_FORWARD, c.lanes = &isa_kernels(active_isa()), c.q = Input{q, m.nq}, c.qd = Input{qd, nv};
    c.sets.push_back(contacts), c.tolerance = u.tolerance, c.iterations = u.iterations, c.rows = true;
    c.front = u.act, c.ctrl = Input{ctrl, u.act->nu}, c.applied = Input{applied, nv}, c.warm = Input{warm, nv};
    const size_t V = static_cast<size_t>(nv);
    w.qacc.resize(V), w.qfrc.resize(V), w.f.resize(V), w.M.resize(V * V), w.poses.resize(static_cast<size_t>(12 * nbody));
    double improvement = 0.0;
    int64_t iterations = 0;
    bool converged = false;
    c.qacc = w.qacc.data(), c.qfrc = w.qfrc.data(), c.f_out = w.f.data(), c.M_out = w.M.data();
    c.iters = &iterations, c.improvement = &improvement, c.converged = &converged;
    Failures failures;
    for (auto &first : failures.first) first.store(NO_STATE, std::memory_order_relaxed);
    w.rows.clear();
    scalar::constraint_kernels.run(m, *w.constraint, c, 0, 1, w.rows, failures);
    for (auto &first : failures.first)
        if (first.load(std::memory_order_relaxed) != NO_STATE) return ONE_CALL_SOLVE;
    bool finite = converged;                                            // unconverged: the text warns
    for (double x : w.f) finite = finite && std::isfinite(x);
    if (!finite) return ONE_CALL_SOLVE;
    Call pose = u.pose;                                                 // the bodies' xpos, xmat at q (body_poses)
    pose.in[0] = Input{q, m.nq}, pose.out[0] = w.poses.data(), pose.out[1] = w.poses.data() + 3 * nbody;
    scalar::kernels.run(m, *w.kinematics, pose, 0, 1, failures);
    w.jac.clear();                                                      // the pairs' bodies' Jacobians (body_jacobian)
    for (int64_t k = 0; k < contacts.n; k++) {
        if (!segment_geom(m.geom_type[w.geom[size_t(2 * k)]]) || !segment_geom(m.geom_type[w.geom[size_t(2 * k + 1)]])) continue;
        if (w.jac.empty()) w.jac.assign(static_cast<size_t>(6 * nv * nbody), 0.0);
        for (int64_t body : {contacts.body1(k), contacts.body2(k)}) {
            if (body < 0 || m.body_linkid[body] < 0) continue;          // the world, or welded to it: zeros
            Call J = u.jacobian;
            J.in[0] = Input{q, m.nq}, J.link = m.body_linkid[body], J.point = m.body_pos + 3 * body;
            J.out[0] = &w.jac[static_cast<size_t>(6 * nv * body)];
            scalar::kernels.run(m, *w.kinematics, J, 0, 1, failures);
        }
    }
    ConstrainedTerms terms;
    terms.a_c = w.qacc.data(), terms.qfrc = w.qfrc.data();
    int status = one_call_terms(m, T, w.rows, contacts, w.geom.data(), q, w.poses.data(), w.poses.data() + 3 * nbody,
                                w.jac.data(), w.M.data(), w.terms, terms);
    if (status != ONE_CALL_TAKEN) return status;
    StillState S;                                                       // every contact dof: proven, or detected and held
    S.xpos = w.poses.data(), S.xmat = w.poses.data() + 3 * nbody, S.nc = contacts.n;
    S.floats = w.floats.data(), S.ints = w.ints.data(), S.geom = w.geom.data();
    w.proven.resize(size_t(T.ncontact_dofs)), w.left.clear(), w.near.clear();
    proven_still(u.still, S, T.contact_dofs, T.ncontact_dofs, w.proven.data(), w.still);
    for (int64_t k = 0; k < T.ncontact_dofs; k++)
        if (!w.proven[size_t(k)]) w.left.push_back(T.contact_dofs[k]);
    if (still_check(m, *w.collision, w.detected, u.still, S, q, w.left, w.near) != 0 || !w.near.empty()) return ONE_CALL_STILL;
    StepDerivativeCall call;                                            // the step after the rows' derivatives
    int64_t step_status = 0;
    call.q = Input{q, m.nq}, call.qd = Input{qd, nv}, call.ctrl = Input{ctrl, u.act->nu}, call.qfrc = Input{applied, nv};
    call.opt = u.opt, call.constrained = &terms, call.A = A, call.B = B, call.status = &step_status;
    scalar::step_derivative_kernels.run(m, *u.act, *w.step, call, 0, 1);
    if (step_status) return ONE_CALL_STEP;
    one_call_margins(m, T, w.rows, contacts, w.geom.data(), w.poses.data() + 3 * nbody, w.qacc.data(), margins);
    return ONE_CALL_TAKEN;
}

// CONSTRAINED_STEP: step_derivatives(constraints=True) of one state or N of euler, implicit or implicitfast, each in
// one call where one_call_terms takes its solve (derivatives._one_call, the compiled twin of _Stepper.constrained_terms
// there; one_call_state). q (nq,) or (N, nq), qd likewise; options: step_derivatives' (ctrl (N, nu), qfrc_applied (N,
// nv) or None) and optionally qacc_warmstart (N, nv) or None (the solves' starts); tables: derivatives._one_call_tables'
// dict (still: the still tables; OneCallTables' arrays and numbers; tolerance, iterations: the solver's). One state
// here with the compiled model's kept workspaces, N on threads (the GIL released), each with its own. (A (N, 2 nv,
// 2 nv), B (N, 2 nv, nu), status (N), margins (N, 4)) (no N for one state): status 0, or why the state is left to the
// NumPy text (OneCallDecline; its A, B and margins then undefined), which names what is wrong
nb::object constrained_step_call(CompiledModel &nm, const nb::handle *args) {
    const Model &m = nm.model;
    if (!m.has_constraints) throw nb::value_error("the compiled model has no constraint fields (Model.add_constraints)");
    int64_t batch = -1;
    std::vector<std::vector<double>> copies;
    StepDerivativeCall call;
    read_state(args[0], "q", m.nq, false, call.q, batch, copies);
    read_state(args[1], "qd", m.nv, false, call.qd, batch, copies);
    const int64_t N = batch < 0 ? 1 : batch;
    Arrays none;
    Fields o(args[2], "constrained_step options", none);
    DArr ctrl, qfrc, warm;
    OneCallSetup u;
    u.act = &read_step_options(m, o, N, call, ctrl, qfrc, "constrained_step");
    Input warm_in{nullptr, 0};                                          // the solves' warm starts (N, nv), optional
    if (o.has("qacc_warmstart"))
        per_state(o.object("qacc_warmstart"), N, m.nv, warm, warm_in, "constrained_step: qacc_warmstart (N, nv), float64 in C order");
    u.opt = call.opt;
    if (u.opt.integrator == RK4 || u.opt.integrator == DISCRETE) o.invalid("integrator", "euler, implicit or implicitfast");
    o.done();
    if (u.act->na || u.act->posed)
        throw nb::value_error("constrained_step: actuators without activations or arms of the configuration");
    Fields t(args[3], "constrained_step tables", none);
    u.still = read_still_tables(m, t.object("still"), "constrained_step tables' still");
    if (u.still.npair != m.ncand + m.nmissing) t.invalid("still", "not this model's pairs (ncand + nmissing)");
    const int64_t nv = m.nv, nbody = m.nbody, nu = u.act->nu;
    OneCallTables &T = u.tables;
    T.static_body = ints_view(t, "static_body", {nbody});
    T.nlimited = t.size("nlimited"), T.ncontact_dofs = t.size("ncontact_dofs");
    T.limited_adr = ints_view(t, "limited_adr", {T.nlimited}), T.limited_ball = ints_view(t, "limited_ball", {T.nlimited});
    T.limited_low = doubles_view(t, "limited_low", {T.nlimited}), T.limited_high = doubles_view(t, "limited_high", {T.nlimited});
    T.limited_margin = doubles_view(t, "limited_margin", {T.nlimited});
    T.contact_dofs = ints_view(t, "contact_dofs", {T.ncontact_dofs}), T.turns = doubles_view(t, "turns", {nv, nv});
    T.geom_axes = doubles_view(t, "geom_axes", {m.ngeom, 3}), T.body_dofs = doubles_view(t, "body_dofs", {nbody + 1, nv});
    T.weights = doubles_view(t, "weights", {4});
    T.r_floor = t.number("r_floor"), T.stiff_rows = t.number("stiff_rows"), T.row_step = u.still.row_step;
    u.tolerance = t.number("tolerance"), u.iterations = t.size("iterations");
    t.done();
    for (int64_t k = 0; k < T.nlimited; k++)
        if (T.limited_adr[k] < 0 || T.limited_adr[k] >= m.nq) t.invalid("limited_adr", "a q entry outside 0 .. nq - 1");
    for (int64_t k = 0; k < T.ncontact_dofs; k++)
        if (T.contact_dofs[k] < 0 || T.contact_dofs[k] >= nv) t.invalid("contact_dofs", "a dof outside 0 .. nv - 1");
    u.pose = nm.calls[BODY_POSES], u.jacobian = nm.calls[JACOBIAN];
    const npy_intp da[3] = {npy_intp(N), npy_intp(2 * nv), npy_intp(2 * nv)}, db[3] = {npy_intp(N), npy_intp(2 * nv), npy_intp(nu)};
    void *a, *b, *st;
    const int nd = batch < 0 ? 2 : 3;
    nb::object A = new_array(nd, da + 3 - nd, NPY_DOUBLE, a), B = new_array(nd, db + 3 - nd, NPY_DOUBLE, b);
    nb::object status = new_array(1, da, NPY_INT64, st);
    int64_t *out = static_cast<int64_t *>(st);
    const npy_intp dm[2] = {npy_intp(N), 4};
    void *mg;
    nb::object margins = new_array(nd - 1, dm + 3 - nd, NPY_DOUBLE, mg);
    auto state = [&](OneCallWork &w, int64_t s) {
        out[s] = one_call_state(m, u, w, call.q.data + s * call.q.stride, call.qd.data + s * call.qd.stride,
                                call.ctrl.data ? call.ctrl.data + s * call.ctrl.stride : nullptr,
                                call.qfrc.data ? call.qfrc.data + s * call.qfrc.stride : nullptr,
                                warm_in.data ? warm_in.data + s * warm_in.stride : nullptr,
                                static_cast<double *>(a) + s * 4 * nv * nv, static_cast<double *>(b) + s * 2 * nv * nu,
                                static_cast<double *>(mg) + s * 4);
    };
    if (N == 1) {                                                       // the compiled model's workspaces, the GIL held
        std::unique_ptr<OneCallWork> &kept = nm.one_call;
        if (!kept || kept->nu != nu) kept.reset(new OneCallWork(m, *u.act));
        state(*kept, 0);
    } else {                                                            // each thread its own, kept unless in use
        std::atomic<bool> stop{false};
        int T_ = int(std::min<int64_t>(int64_t(num_threads()), N));
        std::unique_lock<std::mutex> kept = kept_workspaces(nm.one_call_lock);
        std::vector<std::unique_ptr<OneCallWork>> own, &works = kept ? nm.one_call_threads : own;
        if (works.size() < size_t(T_)) works.resize(size_t(T_));
        for (auto &w : works)
            if (w && w->nu != nu) w.reset();                            // made for other actuators
        {
            nb::gil_scoped_release release;
            parallel_pieces<true>(N, T_, stop, [&](int thread, int64_t s) {   // a state's pieces: short
                std::unique_ptr<OneCallWork> &w = works[size_t(thread)];
                if (!w) w.reset(new OneCallWork(m, *u.act));
                state(*w, s);
            }, signal_pending);
        }
        if (stop) throw nb::python_error();                            // a signal: the results discarded
    }
    return nb::make_tuple(A, B, batch < 0 ? nb::object(nb::int_(out[0])) : status, margins);
}

// _native.call: one entry for every operation
nb::object call(CompiledModel &nm, int op, nb::handle a, nb::handle b, nb::handle c, nb::handle d, nb::handle e) {
    if (op < 0 || op >= NOPS) throw nb::value_error("unknown operation (see OPS)");
    const nb::handle args[5] = {a, b, c, d, e};
    if (op == ROLLOUT) return rollout(nm, args);
    if (op == STEP_DERIVATIVES) return step_derivatives(nm, args);
    if (op == COLLISION_DETECT) return collision_detect(nm, args);
    if (op == PROVEN_STILL) return proven_still_call(nm, args);
    if (op == CONSTRAINED_STEP) return constrained_step_call(nm, args);
    return is_constraint(op) ? constrain(nm, op, args) : run(nm, op, args);
}

// the Python exception of the C++ exception being handled (nanobind's translation: a Python error as it was; nanobind's
// builtin exceptions, std::bad_alloc, nb::cast_error and other std::exceptions as their Python types)
PyObject *raise_handled() noexcept {
    try {
        throw;
    } catch (nb::python_error &e) {
        e.restore();
    } catch (const nb::builtin_exception &e) {
        nb::exception_type t = e.type();
        PyErr_SetString(t == nb::exception_type::type_error ? PyExc_TypeError
                        : t == nb::exception_type::index_error ? PyExc_IndexError
                        : t == nb::exception_type::key_error ? PyExc_KeyError
                        : PyExc_ValueError, e.what());
    } catch (const std::bad_alloc &) {
        PyErr_NoMemory();
    } catch (const nb::cast_error &) {
        PyErr_SetString(PyExc_TypeError, "an argument of the wrong type");
    } catch (const std::exception &e) {
        PyErr_SetString(PyExc_RuntimeError, e.what());
    } catch (...) {
        PyErr_SetString(PyExc_SystemError, "an unknown C++ exception");
    }
    return nullptr;
}

PyTypeObject *compiled_model_type = nullptr;                            // _native.Model, set at import

// _native.call(model, op, a, b=None, c=None, d=None, e=None) as CPython's fast call of positional arguments: call's
// arguments read without nanobind's general dispatch (a few hundred instructions a call); TypeError for another model
// or op type
PyObject *call_fast(PyObject *, PyObject *const *args, Py_ssize_t nargs) noexcept {
    if (nargs < 3 || nargs > 7 || Py_TYPE(args[0]) != compiled_model_type || !nb::inst_ready(args[0]) || !PyLong_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "call(model: physai.engine._native.Model, op: int, a, b=None, c=None, d=None, e=None)");
        return nullptr;
    }
    long op = PyLong_AsLong(args[1]);
    if (op == -1 && PyErr_Occurred()) return nullptr;
    nb::handle x[5];
    for (Py_ssize_t k = 0; k < 5; k++) x[k] = k + 2 < nargs ? nb::handle(args[k + 2]) : nb::none();
    try {
        return call(*nb::inst_ptr<CompiledModel>(args[0]), int(op), x[0], x[1], x[2], x[3], x[4]).release().ptr();
    } catch (...) {
        return raise_handled();
    }
}

PyMethodDef CALL_DEF = {"call", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&call_fast)), METH_FASTCALL,
                        "call(model, op, a, b=None, c=None, d=None, e=None): operation op (OPS) on its arguments (ARGUMENTS): "
                        "its result, or KernelError (see cpp/bindings.cpp)"};

// whether array a has the shape (-1: any size along that axis)
template <class A> bool is(const A &a, std::initializer_list<int64_t> shape) {
    if (a.ndim() != shape.size()) return false;
    size_t k = 0;
    for (int64_t s : shape) {
        if (s >= 0 && int64_t(a.shape(k)) != s) return false;
        k++;
    }
    return true;
}

// _native.plane_contact_rows(J6, origin, frame, pos, dist, friction, radius, dim, axis, turns): (dJ (m, nv, nv),
// ddist (m, nv)) of cpp/constraint_derivative.h's plane_contact_rows (physai.derivatives.plane_contact_rows' arrays);
// ValueError for arrays not shaped as it reads them
nb::tuple plane_contact_rows_call(DArr J6, DArr origin, DArr frame, DArr pos, DArr dist, DArr friction, DArr radius,
                                  IArr dim, DArr axis, DArr turns) {
    if (J6.ndim() != 3 || J6.shape(1) != 6) throw std::invalid_argument("plane_contact_rows: J6 is not (nc, 6, nv)");
    const int64_t nc = int64_t(J6.shape(0)), nv = int64_t(J6.shape(2));
    if (!is(origin, {nc, 3}) || !is(frame, {nc, 3, 3}) || !is(pos, {nc, 3}) || !is(dist, {nc}) || !is(friction, {nc, -1})
        || !is(radius, {nc}) || !is(dim, {nc}) || !is(axis, {nc, 3}) || !is(turns, {nv, nv}))
        throw std::invalid_argument("plane_contact_rows: an array is not shaped as J6's contacts and dofs");
    int64_t m = 0;
    for (int64_t c = 0; c < nc; c++) {
        if (dim.data()[c] != 1 && dim.data()[c] != 3) throw std::invalid_argument("plane_contact_rows: dim is not 1 or 3");
        if (dim.data()[c] == 3 && friction.shape(1) < 2) throw std::invalid_argument("plane_contact_rows: friction (nc, >= 2)");
        m += pyramid_rows(dim.data()[c]);
    }
    void *a = nullptr, *b = nullptr;
    const npy_intp dJ_dims[3] = {npy_intp(m), npy_intp(nv), npy_intp(nv)}, dd_dims[2] = {npy_intp(m), npy_intp(nv)};
    nb::object dJ = new_array(3, dJ_dims, NPY_FLOAT64, a), ddist = new_array(2, dd_dims, NPY_FLOAT64, b);
    plane_contact_rows(nc, nv, J6.data(), origin.data(), frame.data(), pos.data(), dist.data(), friction.data(),
                       int64_t(friction.shape(1)), radius.data(), dim.data(), axis.data(), turns.data(),
                       static_cast<double *>(a), static_cast<double *>(b));
    return nb::make_tuple(dJ, ddist);
}

// _native.segment_contact_rows(J, origin, frame, pos, dist, friction, dim, d1, ds, dD, L, radius, v1, turns, common):
// (dJ (rows, nv, nv), ddist (nv,)) of cpp/constraint_derivative.h's segment_contact_rows
// (physai.derivatives.segment_contact_rows' arrays); ValueError for arrays not shaped as it reads them
nb::tuple segment_contact_rows_call(DArr J, DArr origin, DArr frame, DArr pos, double dist, DArr friction, int64_t dim,
                                    DArr d1, DArr ds, DArr dD, double L, DArr radius, DArr v1, DArr turns, DArr common) {
    if (J.ndim() != 3 || J.shape(0) != 2 || J.shape(1) != 6) throw std::invalid_argument("segment_contact_rows: J is not (2, 6, nv)");
    const size_t nv = J.shape(2);
    const int64_t n = int64_t(nv);
    if (!is(origin, {2, 3}) || !is(frame, {3, 3}) || !is(pos, {3}) || !is(d1, {3}) || !is(ds, {n}) || !is(dD, {3, n})
        || !is(radius, {2}) || !is(v1, {3, n}) || !is(turns, {n, n}) || !is(common, {n}) || friction.ndim() != 1)
        throw std::invalid_argument("segment_contact_rows: an array is not shaped as J's dofs");
    if ((dim != 1 && dim != 3) || (dim == 3 && friction.shape(0) < 2))
        throw std::invalid_argument("segment_contact_rows: dim is not 1 or 3 (friction: at least 2 for 3)");
    void *a = nullptr, *b = nullptr;
    const npy_intp dJ_dims[3] = {npy_intp(pyramid_rows(dim)), npy_intp(nv), npy_intp(nv)}, dd_dims[1] = {npy_intp(nv)};
    nb::object dJ = new_array(3, dJ_dims, NPY_FLOAT64, a), ddist = new_array(1, dd_dims, NPY_FLOAT64, b);
    segment_contact_rows(int64_t(nv), J.data(), origin.data(), frame.data(), pos.data(), dist, friction.data(), dim,
                         d1.data(), ds.data(), dD.data(), L, radius.data(), v1.data(), turns.data(), common.data(),
                         static_cast<double *>(a), static_cast<double *>(b));
    return nb::make_tuple(dJ, ddist);
}

// _native.anchor_rows(J, origin, anchor, turns, quats, scale, rows): dJ (rows, nv, nv) of cpp/constraint_derivative.h's
// anchor_rows (physai.derivatives.anchor_rows' arrays); ValueError for arrays not shaped as it reads them
nb::object anchor_rows_call(DArr J, DArr origin, DArr anchor, DArr turns, DArr quats, double scale, int64_t rows) {
    if (J.ndim() != 3 || J.shape(0) != 2 || J.shape(1) != 6) throw std::invalid_argument("anchor_rows: J is not (2, 6, nv)");
    const int64_t nv = int64_t(J.shape(2));
    if (!is(origin, {2, 3}) || !is(anchor, {2, 3}) || !is(turns, {nv, nv}) || !is(quats, {2, 4}))
        throw std::invalid_argument("anchor_rows: an array is not shaped as J's bodies and dofs");
    if (rows != 3 && rows != 6) throw std::invalid_argument("anchor_rows: rows is not 3 (a connect) or 6 (a weld)");
    void *a = nullptr;
    const npy_intp dims[3] = {npy_intp(rows), npy_intp(nv), npy_intp(nv)};
    nb::object dJ = new_array(3, dims, NPY_FLOAT64, a);
    anchor_rows(nv, J.data(), origin.data(), anchor.data(), turns.data(), quats.data(), scale, rows,
                static_cast<double *>(a));
    return dJ;
}

// _native.anchor_bias_derivative(J, origin, anchor, turns, quats, scale, rows, qd): (rows, nv) of
// cpp/constraint_derivative.h's anchor_bias_derivative (physai.derivatives.anchor_bias_derivative's arrays); ValueError
// for arrays not shaped as it reads them
nb::object anchor_bias_derivative_call(DArr J, DArr origin, DArr anchor, DArr turns, DArr quats, double scale, int64_t rows,
                                       DArr qd) {
    if (J.ndim() != 3 || J.shape(0) != 2 || J.shape(1) != 6)
        throw std::invalid_argument("anchor_bias_derivative: J is not (2, 6, nv)");
    const int64_t nv = int64_t(J.shape(2));
    if (!is(origin, {2, 3}) || !is(anchor, {2, 3}) || !is(turns, {nv, nv}) || !is(quats, {2, 4}) || !is(qd, {nv}))
        throw std::invalid_argument("anchor_bias_derivative: an array is not shaped as J's bodies and dofs");
    if (rows != 3 && rows != 6) throw std::invalid_argument("anchor_bias_derivative: rows is not 3 (a connect) or 6 (a weld)");
    void *a = nullptr;
    const npy_intp dims[2] = {npy_intp(rows), npy_intp(nv)};
    nb::object out = new_array(2, dims, NPY_FLOAT64, a);
    anchor_bias_derivative(nv, J.data(), origin.data(), anchor.data(), turns.data(), quats.data(), scale, rows, qd.data(),
                           static_cast<double *>(a));
    return out;
}

// _native.segment_pair(J, origin, a0, d1, b0, d2, radius, dist): (room (2,), speed (2,), st (2, nv), dD (3, nv), L,
// v1 (3, nv)) of cpp/constraint_derivative.h's segment_pair (physai.derivatives.segment_pair's arrays), or None where
// it declines the pair; ValueError for arrays not shaped as it reads them
nb::object segment_pair_call(DArr J, DArr origin, DArr a0, DArr d1, DArr b0, DArr d2, DArr radius, double dist) {
    if (J.ndim() != 3 || J.shape(0) != 2 || J.shape(1) != 6) throw std::invalid_argument("segment_pair: J is not (2, 6, nv)");
    const int64_t nv = int64_t(J.shape(2));
    if (!is(origin, {2, 3}) || !is(a0, {3}) || !is(d1, {3}) || !is(b0, {3}) || !is(d2, {3}) || !is(radius, {2}))
        throw std::invalid_argument("segment_pair: an array is not shaped as origin (2, 3), a0, d1, b0, d2 (3), radius (2)");
    void *room, *speed, *st, *dD, *v1;
    const npy_intp two[1] = {2}, rates[2] = {2, npy_intp(nv)}, moves[2] = {3, npy_intp(nv)};
    nb::object Room = new_array(1, two, NPY_FLOAT64, room), Speed = new_array(1, two, NPY_FLOAT64, speed);
    nb::object St = new_array(2, rates, NPY_FLOAT64, st), DD = new_array(2, moves, NPY_FLOAT64, dD);
    nb::object V1 = new_array(2, moves, NPY_FLOAT64, v1);
    double L = 0.0;
    if (!segment_pair(nv, J.data(), origin.data(), a0.data(), d1.data(), b0.data(), d2.data(), radius.data(), dist,
                      static_cast<double *>(room), static_cast<double *>(speed), static_cast<double *>(st),
                      static_cast<double *>(dD), L, static_cast<double *>(v1)))
        return nb::none();
    return nb::make_tuple(Room, Speed, St, DD, L, V1);
}

// the instruction sets this CPU supports, best first
nb::list isas() {
    nb::list r;
    for (int k = 0; k < isa_count(); k++)
        if (isa_supported(k)) r.append(nb::str(isa_kernels(k).name));
    return r;
}

}  // namespace
}  // namespace physai

NB_MODULE(_native, mod) {
    using namespace physai;
    if (_import_array() < 0) throw nb::python_error();
    mod.doc() = "physai's compiled engine: the kernels of physai.engine's stages in C++ (see cpp/)";
    kernel_error = PyErr_NewExceptionWithDoc(
        "physai.engine._native.KernelError",
        "KernelError(kind, argument, state, index, result): what a call met before or while running its kernel (see "
        "cpp/bindings.cpp); physai.engine.native turns it into physai's named error",
        PyExc_Exception, nullptr);
    if (!kernel_error) throw nb::python_error();
    mod.attr("KernelError") = nb::handle(kernel_error);
    nb::dict ops, arguments, integrators;
    for (int k = 0; k < NOPS; k++) {
        nb::list names;
        for (const char *s = OPERATIONS[k].arguments; *s;) {           // "name:kind name:kind ..."
            const char *colon = std::strchr(s, ':');
            SIGNATURES[k].push_back({std::string(s, size_t(colon - s)), colon[1]});
            names.append(nb::make_tuple(SIGNATURES[k].back().name, std::string(1, colon[1])));
            s = colon[2] ? colon + 3 : colon + 2;
        }
        ops[OPERATIONS[k].name] = k;
        arguments[OPERATIONS[k].name] = nb::steal<nb::tuple>(PySequence_Tuple(names.ptr()));
    }
    for (int k = EULER; k <= DISCRETE; k++) integrators[INTEGRATOR_NAMES[k]] = k;
    mod.attr("OPS") = ops;
    mod.attr("ARGUMENTS") = arguments;
    mod.attr("INTEGRATORS") = integrators;
    nb::class_<CompiledModel>(mod, "Model", "the compiled model, from a dict of named fields (physai.engine.native.fields)")
        .def("__init__", &make_model, nb::arg("fields"))
        .def_prop_ro("nq", [](const CompiledModel &m) { return m.model.nq; })
        .def_prop_ro("nv", [](const CompiledModel &m) { return m.model.nv; })
        .def_prop_ro("nlink", [](const CompiledModel &m) { return m.model.nlink; })
        .def_prop_ro("nbody", [](const CompiledModel &m) { return m.model.nbody; })
        .def("add_constraints", &add_constraints, nb::arg("fields"),
             "the constraint model's fields (physai.engine.native.constraint_fields), once")
        .def_prop_ro("has_constraints", [](const CompiledModel &m) { return m.model.has_constraints; })
        .def_rw("actuators", &CompiledModel::actuators,
                "(physai.engine.actuators.Actuators, _native.Actuators) of the last actuators compiled for it, or None")
        .def_rw("step_fields", &CompiledModel::step_fields,
                "(options, rollout fields) of the last one-step options made for it (native.step_fields), or None");
    nb::class_<CompiledActuators>(mod, "Actuators", "a simulation's actuators for a compiled Model, from a dict of named fields")
        .def("__init__", &make_actuators, nb::arg("model"), nb::arg("fields"))
        .def_prop_ro("nu", [](const CompiledActuators &a) { return a.act.nu; });
    compiled_model_type = reinterpret_cast<PyTypeObject *>(nb::type<CompiledModel>().ptr());
    PyObject *call_function = PyCFunction_NewEx(&CALL_DEF, nullptr, mod.ptr());
    if (!call_function) throw nb::python_error();
    mod.attr("call") = nb::steal(call_function);
    mod.def("plane_contact_rows", &plane_contact_rows_call, nb::arg("J6"), nb::arg("origin"), nb::arg("frame"), nb::arg("pos"),
            nb::arg("dist"), nb::arg("friction"), nb::arg("radius"), nb::arg("dim"), nb::arg("axis"), nb::arg("turns"),
            "(dJ (m, nv, nv), ddist (m, nv)): physai.derivatives.plane_contact_rows compiled (cpp/constraint_derivative.h)");
    mod.def("anchor_rows", &anchor_rows_call, nb::arg("J"), nb::arg("origin"), nb::arg("anchor"), nb::arg("turns"),
            nb::arg("quats"), nb::arg("scale"), nb::arg("rows"),
            "dJ (rows, nv, nv): physai.derivatives.anchor_rows compiled (cpp/constraint_derivative.h)");
    mod.def("anchor_bias_derivative", &anchor_bias_derivative_call, nb::arg("J"), nb::arg("origin"), nb::arg("anchor"),
            nb::arg("turns"), nb::arg("quats"), nb::arg("scale"), nb::arg("rows"), nb::arg("qd"),
            "(rows, nv): physai.derivatives.anchor_bias_derivative compiled (cpp/constraint_derivative.h)");
    mod.def("segment_contact_rows", &segment_contact_rows_call, nb::arg("J"), nb::arg("origin"), nb::arg("frame"),
            nb::arg("pos"), nb::arg("dist"), nb::arg("friction"), nb::arg("dim"), nb::arg("d1"), nb::arg("ds"), nb::arg("dD"),
            nb::arg("L"), nb::arg("radius"), nb::arg("v1"), nb::arg("turns"), nb::arg("common"),
            "(dJ (rows, nv, nv), ddist (nv,)): physai.derivatives.segment_contact_rows compiled (cpp/constraint_derivative.h)");
    mod.def("segment_pair", &segment_pair_call, nb::arg("J"), nb::arg("origin"), nb::arg("a0"), nb::arg("d1"), nb::arg("b0"),
            nb::arg("d2"), nb::arg("radius"), nb::arg("dist"),
            "(room, speed, st, dD, L, v1) or None: physai.derivatives.segment_pair compiled (cpp/constraint_derivative.h)");
    mod.def("isa", [] { return isa_kernels(active_isa()).name; },
            "the instruction set the batch kernel runs with: avx512f, avx2 or default (baseline x86-64, "
            "SSE2; elsewhere the compiler's default); PHYSAI_ISA chooses at load time");
    mod.def("isas", &isas, "the batch kernel's variants this CPU supports, best first");
    mod.def("set_isa", &set_isa, nb::arg("name"),
            "run the batch kernel's variant name (one of isas()) from now on: true; false (and no change) otherwise");
    mod.def("lanes", [] { return isa_kernels(active_isa()).lanes; }, "states side by side in the batch kernel's variant");
    mod.def("constrained_lanes_step",
            [](const CompiledModel &m, nb::handle actuators, int integrator, int64_t N) {
                int64_t lanes = constrained_lanes().lanes;
                const Actuators &act = actuators_option(m.model, actuators, "constrained_lanes_step");
                return constrained_lanes_step(m.model, act, integrator, std::min(N, lanes), lanes);
            },
            nb::arg("model"), nb::arg("actuators").none(), nb::arg("integrator"), nb::arg("N"),
            "whether a constrained rollout of N trajectories (integrator: INTEGRATORS' code) runs its first block in the "
            "active variant's constrained lanes (cpp/kernels.h's constrained_lanes_step), else one by one");
    mod.def("num_threads", &num_threads, "threads a large batch runs on (PHYSAI_NUM_THREADS when valid, else the hardware's)");
    mod.def("hardware_threads", &hardware_threads, "the hardware's threads (the default of num_threads)");
    mod.def("max_threads", &max_threads, "the most threads PHYSAI_NUM_THREADS may ask for (4 per hardware thread, at most 256)");
    mod.def("_set_thread_limit", [](int k) { thread_limit().store(k < 0 ? -1 : k); }, nb::arg("k"),
            "test-only: threads started past k fail as the system's refusal does (-1: no limit)");
    mod.def("_dense_metric", [](bool force) {
                DenseMetricHook &hook = dense_metric_hook();
                hook.force.store(force);
                return hook.made.exchange(0);
            }, nb::arg("force"),
            "test-only: the discrete step's coupled metrics solver.h's metric_model made on every dof's chain since the "
            "last call; from now on there whatever their pattern when force");
}
