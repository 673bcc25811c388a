// physai.engine._native: the engine's kernels (cpp/kernels.h) as a Python module. The only file that knows Python,
// nanobind and numpy: it reads the arguments, allocates the results, releases the GIL around threads, and defines the
// module. A call checks its inputs (float64 arrays of shape (size,) or (N, size), finite) and its outputs (finite), and
// returns None on anything it does not accept: the Python side then takes the NumPy path, which raises the named
// physai error.
//
// The Model's arrays are copied once into a NativeModel (cached on the Python Model): the const Model the kernels read,
// the arrays it points into, and the workspaces of the calls that keep the GIL (one state, and the lanes of each
// instruction set), made on first use. Large batches run on threads (cpp/parallel.h), each with workspaces of its own.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL physai_native_ARRAY_API
#include <numpy/arrayobject.h>                                          // PyArray_SimpleNew: the results, without a Python call

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "kernels.h"
#include "parallel.h"

namespace nb = nanobind;

namespace physai {
namespace {

using IArr = nb::ndarray<const int64_t, nb::c_contig, nb::device::cpu>;
using DArr = nb::ndarray<const double, nb::c_contig, nb::device::cpu>;
using RArr = nb::ndarray<const double, nb::device::cpu>;                // any strides (0 along broadcast axes)
using WArr = nb::ndarray<double, nb::c_contig, nb::device::cpu>;

// ---------------------------------------------------------------- the arguments

// copies of the constructors' arrays, which a Model or SimModel points into
struct Arrays {
    std::vector<std::vector<int64_t>> ints;
    std::vector<std::vector<double>> doubles;
    std::vector<std::vector<char>> flags;
    // a copy of a, which must have `want` entries (else ValueError(what))
    const int64_t *keep(const IArr &a, size_t want, const char *what) {
        if (a.size() != want) throw nb::value_error(what);
        return ints.emplace_back(a.data(), a.data() + a.size()).data();
    }
    const double *keep(const DArr &a, size_t want, const char *what) {
        if (a.size() != want) throw nb::value_error(what);
        return doubles.emplace_back(a.data(), a.data() + a.size()).data();
    }
};

// a kernel set's workspace, freed by its set
struct FreeWorkspace {
    const Kernels *kernels;
    void operator()(Workspace *w) const { kernels->destroy(w); }
};
using WorkspacePtr = std::unique_ptr<Workspace, FreeWorkspace>;
WorkspacePtr workspace(const Kernels &k, const Model &m) { return WorkspacePtr(k.create(m), FreeWorkspace{&k}); }

// the bound NativeModel
struct NativeModel {
    Arrays arrays;
    const Model model;
    WorkspacePtr one{nullptr, FreeWorkspace{&scalar::kernels}};      // the calls that keep the GIL: one state,
    std::vector<WorkspacePtr> lanes;                                    // and the lanes of each instruction set
    NativeModel(Arrays &&a, const Model &m) : arrays(std::move(a)), model(m) {}
    Workspace &scalar_work() {
        if (!one) one = workspace(scalar::kernels, model);
        return *one;
    }
    Workspace &lanes_work(int variant) {
        if (lanes.empty())
            for (int k = 0; k < isa_count(); k++) lanes.emplace_back(nullptr, FreeWorkspace{&isa_kernels(k)});
        if (!lanes[size_t(variant)]) lanes[size_t(variant)] = workspace(isa_kernels(variant), model);
        return *lanes[size_t(variant)];
    }
};

// the bound NativeSim
struct NativeSim {
    Arrays arrays;
    const SimModel sim;
    NativeSim(Arrays &&a, const SimModel &s) : arrays(std::move(a)), sim(s) {}
};

void make_model(NativeModel *self, int nq, int nv, int nlink, DArr gravity, IArr parent, IArr center, IArr relative,
                IArr dofadr, IArr dofnum, DArr mass, DArr ipos, DArr inertia, IArr kind, IArr qadr, DArr ref, DArr G,
                DArr brot, DArr bpos, DArr banchor, IArr dof_link, IArr dof_parent, DArr motion, DArr armature,
                IArr spring_q, DArr spring_k, DArr spring_ref, double static_mass, DArr static_com) {
    if (nq < 0 || nv < 0 || nlink < 0) throw nb::value_error("sizes");
    Arrays a;
    Model m;
    size_t L = size_t(nlink), V = size_t(nv), S = spring_q.size();
    m.nq = nq, m.nv = nv, m.nlink = nlink, m.nspring = int(S);
    if (gravity.size() != 3) throw nb::value_error("gravity");
    if (static_com.size() != 3) throw nb::value_error("static_com");
    for (int k = 0; k < 3; k++) m.gravity[k] = gravity.data()[k], m.static_com[k] = static_com.data()[k];
    m.static_mass = static_mass;
    m.link_parentid = a.keep(parent, L, "a per-link array"), m.link_centerid = a.keep(center, L, "a per-link array");
    m.link_relative = a.keep(relative, L, "a per-link array"), m.link_dofadr = a.keep(dofadr, L, "a per-link array");
    m.link_dofnum = a.keep(dofnum, L, "a per-link array"), m.link_jnttype = a.keep(kind, L, "a per-link array");
    m.link_qposadr = a.keep(qadr, L, "a per-link array");
    m.link_mass = a.keep(mass, L, "mass"), m.link_ipos = a.keep(ipos, 3 * L, "ipos"), m.link_inertia = a.keep(inertia, 9 * L, "inertia");
    m.link_ref = a.keep(ref, L, "ref"), m.link_G = a.keep(G, 48 * L, "G"), m.link_ballrot = a.keep(brot, 9 * L, "ball rot");
    m.link_ballpos = a.keep(bpos, 3 * L, "ball pos"), m.link_ballanchor = a.keep(banchor, 3 * L, "ball anchor");
    m.dof_linkid = a.keep(dof_link, V, "dof_link"), m.dof_parentid = a.keep(dof_parent, V, "dof_parent");
    m.dof_motion = a.keep(motion, 6 * V, "motion"), m.dof_armature = a.keep(armature, V, "armature");
    m.spring_qposadr = a.keep(spring_q, S, "springs"), m.spring_stiffness = a.keep(spring_k, S, "springs");
    m.spring_ref = a.keep(spring_ref, S, "springs");
    // scalar links whose G has no t term (hinges), or only 1 and t terms (slides): kinematics skips the zero terms
    a.flags.assign(2, std::vector<char>(L, 0));
    std::vector<char> &hinge = a.flags[0], &slide = a.flags[1];
    for (size_t i = 0; i < L; i++) {
        if (m.link_jnttype[i] != 0) continue;
        bool t = false, trig = false;
        for (int k = 0; k < 12; k++) {
            const double *g = &m.link_G[48 * i + 4 * k];
            t |= g[1] != 0.0, trig |= g[2] != 0.0 || g[3] != 0.0;
        }
        hinge[i] = !t, slide[i] = !trig;
    }
    m.link_hinge = hinge.data(), m.link_slide = slide.data();
    if (const char *error = check_model(m)) throw nb::value_error(error);
    new (self) NativeModel(std::move(a), m);
}

void make_sim(NativeSim *self, int nq, int nv, DArr damping, IArr scalar_q, IArr scalar_v, IArr quat_q, IArr quat_v, IArr spring_v,
              int nu, DArr moment, DArr qmoment, DArr gain, DArr bias, IArr ctrllimited, DArr ctrlrange, IArr forcelimited,
              DArr forcerange, IArr dof_forcelimited, DArr dof_forcerange, int nbody, IArr body_link, DArr body_point, IArr pattern) {
    const char *bad = "inconsistent simulation arrays";
    if (nq < 0 || nv < 0 || nu < 0 || nbody < 0) throw nb::value_error(bad);
    Arrays a;
    SimModel s;
    size_t U = size_t(nu), V = size_t(nv), Qn = size_t(nq), B = size_t(nbody);
    s.nq = nq, s.nv = nv, s.nu = nu, s.nbody = nbody;
    s.nscalar = int(scalar_q.size()), s.nquat = int(quat_q.size()), s.nspring = int(spring_v.size());
    s.dof_damping = a.keep(damping, V, bad);
    s.scalar_qposadr = a.keep(scalar_q, scalar_q.size(), bad), s.scalar_dofadr = a.keep(scalar_v, scalar_q.size(), bad);
    s.quat_qposadr = a.keep(quat_q, quat_q.size(), bad), s.quat_dofadr = a.keep(quat_v, quat_q.size(), bad);
    s.spring_dofadr = a.keep(spring_v, spring_v.size(), bad);
    s.actuator_moment = a.keep(moment, U * V, bad), s.actuator_qmoment = a.keep(qmoment, U * Qn, bad);
    s.actuator_gain = a.keep(gain, 3 * U, bad), s.actuator_bias = a.keep(bias, 3 * U, bad);
    s.actuator_ctrllimited = a.keep(ctrllimited, U, bad), s.actuator_ctrlrange = a.keep(ctrlrange, 2 * U, bad);
    s.actuator_forcelimited = a.keep(forcelimited, U, bad), s.actuator_forcerange = a.keep(forcerange, 2 * U, bad);
    s.dof_forcelimited = a.keep(dof_forcelimited, V, bad), s.dof_forcerange = a.keep(dof_forcerange, 2 * V, bad);
    s.body_linkid = a.keep(body_link, B, bad), s.body_point = a.keep(body_point, 3 * B, bad);
    s.dof_pattern = a.keep(pattern, V * V, bad);
    if (const char *error = check_sim(s)) throw nb::value_error(error);
    new (self) NativeSim(std::move(a), s);
}

// obj as q: a float64 C-order array (nq,) or (N, nq) with finite entries; the number of states (1 for (nq,)), or 0
// when it is not such an array (the caller then declines: the NumPy path converts, or raises the named error)
int64_t positions(const Model &m, nb::handle obj, DArr &q) {
    if (!nb::try_cast(obj, q, false) || (q.ndim() != 1 && q.ndim() != 2) || int64_t(q.shape(q.ndim() - 1)) != m.nq)
        return 0;
    int64_t N = q.ndim() == 2 ? int64_t(q.shape(0)) : 1;
    for (int64_t k = 0; k < N * m.nq; k++)
        if (!std::isfinite(q.data()[k])) return 0;
    return N;
}

// inputs (float64 numpy arrays of shape (size,) or (N, size) with one N, any strides, finite) read in place, or
// gathered once into copies where their entries are strided; false for anything else (the caller declines: the Python
// side converts, or raises the named error); batch: N, or -1 when every input is a single state
bool read_inputs(const nb::handle *handles, const int64_t *sizes, int nin, Input *in, int64_t &batch,
                 std::vector<std::vector<double>> &copies) {
    for (int k = 0; k < nin; k++) {
        PyObject *obj = handles[k].ptr();
        if (!PyArray_Check(obj)) return false;
        PyArrayObject *arr = reinterpret_cast<PyArrayObject *>(obj);
        if (PyArray_TYPE(arr) != NPY_DOUBLE || !PyArray_ISALIGNED(arr) || PyArray_ISBYTESWAPPED(arr)) return false;
        int ndim = PyArray_NDIM(arr);
        const npy_intp *shp = PyArray_DIMS(arr), *str = PyArray_STRIDES(arr);
        for (int t = 0; t < ndim; t++)
            if (str[t] % npy_intp(sizeof(double)) != 0) return false;
        const double *data = static_cast<const double *>(PyArray_DATA(arr));
        int64_t size = sizes[k], n = 1, stride_state = 0, stride_entry;
        if (ndim == 1) {
            if (int64_t(shp[0]) != size) return false;
            stride_entry = int64_t(str[0] / 8);
        } else if (ndim == 2) {
            if (int64_t(shp[1]) != size) return false;
            n = int64_t(shp[0]);
            if (n == 0 || (batch >= 0 && n != batch)) return false;
            batch = n;
            stride_state = int64_t(str[0] / 8), stride_entry = int64_t(str[1] / 8);
        } else {
            return false;
        }
        if (size > 0 && stride_entry != 1) {                           // gather a strided input once
            std::vector<double> &buf = copies.emplace_back(size_t(n * size));
            for (int64_t s = 0; s < n; s++)
                for (int64_t e = 0; e < size; e++) buf[size_t(s * size + e)] = data[s * stride_state + e * stride_entry];
            data = buf.data(), stride_state = ndim == 2 ? size : 0;
        }
        in[k] = {data, stride_state};
        for (int64_t s = 0; s < n; s++)
            for (int64_t e = 0; e < size; e++)
                if (!std::isfinite(data[s * stride_state + e])) return false;
    }
    return true;
}

// a new float64 array of shape dims (nd of them) and its data
nb::object new_array(int nd, const npy_intp *dims, double *&data) {
    PyObject *arr = PyArray_SimpleNew(nd, const_cast<npy_intp *>(dims), NPY_DOUBLE);
    if (!arr) throw nb::python_error();
    data = static_cast<double *>(PyArray_DATA(reinterpret_cast<PyArrayObject *>(arr)));
    return nb::steal(arr);
}

// ---------------------------------------------------------------- running the kernels

// op of one of the range kernels (&Kernels::compute or &Kernels::derivatives) over the states [0, N): the active
// instruction set's lanes, then the scalar kernels for what they leave. Small calls (cost < 40000) run on the caller's
// thread with the NativeModel's workspaces and the GIL kept; larger ones on threads where the work outweighs starting
// them (about 20 us each), GIL released, each thread with workspaces of its own. False when a state failed.
bool run_states(NativeModel &nm, RangeKernel Kernels::*kernel, int op, const Input *in, double *const *out, int64_t N, int64_t cost) {
    const Model &m = nm.model;
    const int variant = active_isa();                                  // the batch kernels' variant for this call
    const Kernels &lanes = isa_kernels(variant);
    std::atomic<int> failed{0};
    auto work = [&](int64_t lo, int64_t hi, Workspace &one, Workspace *lw) {
        int64_t s = hi - lo >= 2 ? (lanes.*kernel)(m, *lw, op, in, out, lo, hi, failed) : lo;
        if (s != FAILED) s = (scalar::kernels.*kernel)(m, one, op, in, out, s, hi, failed);
        if (s == FAILED) failed = 1;
    };
    if (cost < 40000) {
        work(int64_t(0), N, nm.scalar_work(), N > 1 ? &nm.lanes_work(variant) : nullptr);
    } else {
        nb::gil_scoped_release release;
        int T = int(std::min<int64_t>({int64_t(num_threads()), cost / 20000, (N + BLOCK - 1) / BLOCK}));
        parallel_for(N, T, [&](int64_t lo, int64_t hi) {
            WorkspacePtr one = workspace(scalar::kernels, m), lw = workspace(lanes, m);
            work(lo, hi, *one, lw.get());
        });
    }
    return !failed;
}

// op's result for the inputs (each a float64 array (size,) or (N, size)), or None when an input is not one of those,
// is not finite, or the result is not finite, or a quaternion is zero, or M is singular (the caller then takes the
// NumPy path, which raises the named error).
nb::object run(NativeModel &nm, int op, nb::handle a, nb::handle b, nb::handle c) {
    if (op < 0 || op >= NOPS) throw nb::value_error("unknown operation");
    const Model &m = nm.model;
    const nb::handle handles[3] = {a, b, c};
    int nin = int(std::strlen(OP_INPUTS[op]));
    int64_t sizes[3] = {0, 0, 0}, batch = -1;
    for (int k = 0; k < nin; k++) sizes[k] = OP_INPUTS[op][k] == 'q' ? m.nq : m.nv;
    Input in[3];
    std::vector<std::vector<double>> copies;                           // none: inputs are read in place (strided)
    if (!read_inputs(handles, sizes, nin, in, batch, copies)) return nb::none();
    int64_t N = batch < 0 ? 1 : batch;
    // the result: a numpy array of the caller's shape ((nv,), (nv, nv), (N, nv), (N, nv, nv), (N,)) or a float
    nb::object result;
    double scalar = 0.0, *out = &scalar;
    if (OP_OUTPUT[op] != 's' || batch >= 0) {
        npy_intp dims[3];
        int nd = 0;
        if (batch >= 0) dims[nd++] = npy_intp(N);
        if (OP_OUTPUT[op] != 's') dims[nd++] = m.nv;
        if (OP_OUTPUT[op] == 'M') dims[nd++] = m.nv;
        result = new_array(nd, dims, out);
    }
    int64_t cost = N * int64_t(m.nlink + 1) * (OP_OUTPUT[op] == 'M' || op == FORWARD_DYNAMICS ? m.nv + 1 : 1);
    if (!run_states(nm, &Kernels::compute, op, in, &out, N, cost)) return nb::none();
    return result.is_valid() ? result : nb::float_(scalar);
}

// rnea_derivatives (op 0: q, qd, qdd) or forward_dynamics_derivatives (op 1: q, qd, tau) for float64 arrays (size,) or
// (N, size) (a single state is shared by a batch): three (nv, nv) or (N, nv, nv) arrays; None for other inputs, a zero
// quaternion, a singular M or a non-finite result (the NumPy path converts, or raises the named error)
nb::object derivatives(NativeModel &nm, int op, nb::handle a, nb::handle b, nb::handle c) {
    if (op != RNEA_DERIVATIVES && op != FORWARD_DYNAMICS_DERIVATIVES)
        throw nb::value_error("derivatives: op 0 (rnea) or 1 (forward dynamics)");
    const Model &m = nm.model;
    const nb::handle handles[3] = {a, b, c};
    const int64_t sizes[3] = {m.nq, m.nv, m.nv};
    int64_t batch = -1;
    Input in[3];
    std::vector<std::vector<double>> copies;
    if (!read_inputs(handles, sizes, 3, in, batch, copies)) return nb::none();       // as run
    int64_t N = batch < 0 ? 1 : batch;
    const npy_intp dims[3] = {npy_intp(N), npy_intp(m.nv), npy_intp(m.nv)};
    nb::object outs[3];
    double *out[3];
    for (int k = 0; k < 3; k++) outs[k] = batch >= 0 ? new_array(3, dims, out[k]) : new_array(2, dims + 1, out[k]);
    int64_t cost = N * int64_t(m.nlink + 1) * (m.nv + 1) * 4;         // about 4 crb's work per state
    if (!run_states(nm, &Kernels::derivatives, op, in, out, N, cost)) return nb::none();
    return nb::make_tuple(outs[0], outs[1], outs[2]);
}

// an input (N, steps, size) as a Series, or none; ValueError unless its shape is exactly that
// (a float64 array in place, never a converted copy: the Series points into the caller's array, which outlives the call)
Series series(nb::handle obj, int64_t N, int64_t steps, int64_t size, const char *what) {
    Series r;
    if (obj.is_none()) return r;
    RArr x;
    if (!nb::try_cast(obj, x, false) || x.ndim() != 3 || int64_t(x.shape(0)) != N || int64_t(x.shape(1)) != steps ||
        int64_t(x.shape(2)) != size)
        throw nb::value_error(what);
    r.data = x.data(), r.trajectory = x.stride(0), r.step = x.stride(1), r.entry = x.stride(2);
    return r;
}

// N trajectories of integrators.simulate into Q (N, steps+1, nq), QD (N, steps+1, nv), E (N, steps+1), each from its
// row 0, on threads with the GIL released; status (N): -1, the first diverging step, or -2 (declined: the Python loop
// reruns that trajectory and raises the named error)
void rollout(NativeModel &nm, const NativeSim &ns, WArr Q, WArr QD, WArr E, nb::ndarray<int64_t, nb::c_contig, nb::device::cpu> status,
             double h, int integrator, bool implicit_damping, bool with_energy, nb::handle ctrl, nb::handle qfrc, nb::handle xfrc) {
    const Model &m = nm.model;
    const SimModel &s = ns.sim;
    if (Q.ndim() != 3 || QD.ndim() != 3 || E.ndim() != 2 || status.ndim() != 1 || Q.shape(0) != QD.shape(0) ||
        Q.shape(0) != E.shape(0) || Q.shape(0) != status.shape(0) || Q.shape(1) != QD.shape(1) || Q.shape(1) != E.shape(1) ||
        Q.shape(1) < 1 || int64_t(Q.shape(2)) != m.nq || int64_t(QD.shape(2)) != m.nv || s.nq != m.nq || s.nv != m.nv ||
        s.nspring != m.nspring || integrator < EULER || integrator > IMPLICITFAST)
        throw nb::value_error("rollout: Q (N, steps+1, nq), QD (N, steps+1, nv), E (N, steps+1), status (N) for this model");
    for (int b = 0; b < s.nbody; b++)
        if (s.body_linkid[b] >= m.nlink) throw nb::value_error("rollout: a body's link is not in this model");
    int64_t N = int64_t(Q.shape(0));
    Rollout r;
    r.h = h, r.steps = int64_t(Q.shape(1)) - 1, r.integrator = integrator;
    r.implicit_damping = implicit_damping, r.with_energy = with_energy;
    r.ctrl = series(ctrl, N, r.steps, s.nu, "rollout: ctrl (N, steps, nu)");
    r.qfrc = series(qfrc, N, r.steps, s.nv, "rollout: qfrc_applied (N, steps, nv)");
    r.xfrc = series(xfrc, N, r.steps, 6 * int64_t(s.nbody), "rollout: xfrc_applied (N, steps, 6 nbody)");
    if (s.nu && !r.ctrl.data) throw nb::value_error("rollout: the actuators need ctrl");
    r.Q = Q.data(), r.QD = QD.data(), r.E = E.data(), r.status = status.data();
    std::fill(r.status, r.status + N, RERUN);
    const Kernels &lanes = isa_kernels(active_isa());
    // trajectories [lo, hi): blocks of the variant's lanes side by side, then one by one what is left or declined
    nb::gil_scoped_release release;
    parallel_for(N, int(std::min<int64_t>(int64_t(num_threads()), (N + BLOCK - 1) / BLOCK)), [&](int64_t lo, int64_t hi) {
        lanes.simulate(m, s, r, lo, hi);
        scalar::kernels.simulate(m, s, r, lo, hi);
    });
}

// Jacobians of a point fixed in link l for q (nq,) or (N, nq) (float64, C order): (6, nv) or (N, 6, nv); None for any
// other q, a non-finite entry or a zero quaternion (the NumPy path converts, or raises the named error)
nb::object jacobians(NativeModel &nm, nb::handle q_, int64_t link, DArr point) {
    const Model &m = nm.model;
    if (link < 0 || link >= m.nlink || point.size() != 3) throw nb::value_error("jacobians: a link of the model, a point (3,)");
    DArr q;
    int64_t N = positions(m, q_, q);
    if (N == 0) return nb::none();
    const npy_intp dims[3] = {npy_intp(N), 6, m.nv};
    double *out;
    nb::object result = q.ndim() == 2 ? new_array(3, dims, out) : new_array(2, dims + 1, out);
    if (scalar::jacobians(m, nm.scalar_work(), q.data(), N, link, point.data(), out) != OK) return nb::none();
    return result;
}

// every body's world pose for q (nq,) or (N, nq) (float64, C order): (pos (nbody, 3), rot (nbody, 3, 3)) with a leading N
// for a batch; body = link pose * (body_pos, body_rot), the world's pose for link -1. None for another q, a non-finite
// entry or a zero quaternion (the NumPy path converts, or raises the named error).
nb::object body_poses(NativeModel &nm, nb::handle q_, IArr body_link, DArr body_pos, DArr body_rot) {
    const Model &m = nm.model;
    int64_t nbody = int64_t(body_link.size());
    if (body_pos.size() != size_t(3 * nbody) || body_rot.size() != size_t(9 * nbody)) throw nb::value_error("body_poses: body arrays");
    for (int64_t b = 0; b < nbody; b++)
        if (body_link.data()[b] < -1 || body_link.data()[b] >= m.nlink) throw nb::value_error("body_poses: body_link");
    DArr q;
    int64_t N = positions(m, q_, q);
    if (N == 0) return nb::none();
    const npy_intp dp[3] = {npy_intp(N), npy_intp(nbody), 3}, dr[4] = {npy_intp(N), npy_intp(nbody), 3, 3};
    int lead = q.ndim() == 2 ? 0 : 1;
    double *po, *ro;
    nb::object pos = new_array(3 - lead, dp + lead, po), rot = new_array(4 - lead, dr + lead, ro);
    if (scalar::body_poses(m, nm.scalar_work(), q.data(), N, nbody, body_link.data(), body_pos.data(), body_rot.data(), po, ro) != OK)
        return nb::none();
    return nb::make_tuple(pos, rot);
}

// integrate (op 0: x = q (nq), y = v (nv)) or difference (op 1: x = q0, y = q1) for float64 C-order arrays of the same
// shape (size,) or (N, size); None for other inputs or a non-finite result (the NumPy path converts, or raises)
nb::object configuration(const NativeSim &ns, int op, nb::handle x_, nb::handle y_, double h) {
    const SimModel &s = ns.sim;
    DArr x, y;
    if (!nb::try_cast(x_, x, false) || !nb::try_cast(y_, y, false) || x.ndim() != y.ndim() || (x.ndim() != 1 && x.ndim() != 2))
        return nb::none();
    int64_t xs = s.nq, ys = op == 0 ? s.nv : s.nq, os = op == 0 ? s.nq : s.nv;
    int64_t N = x.ndim() == 2 ? int64_t(x.shape(0)) : 1;
    if (int64_t(x.shape(x.ndim() - 1)) != xs || int64_t(y.shape(y.ndim() - 1)) != ys || (x.ndim() == 2 && (N == 0 || int64_t(y.shape(0)) != N)))
        return nb::none();
    const npy_intp dims[2] = {npy_intp(N), npy_intp(os)};
    double *out;
    nb::object result = x.ndim() == 2 ? new_array(2, dims, out) : new_array(1, dims + 1, out);
    if (!scalar::configuration(s, op, x.data(), y.data(), N, h, out)) return nb::none();
    return result;
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
    mod.doc() = "physai's compiled engine backend: the kernels of physai.engine.algorithms in C++ (see cpp/)";
    nb::class_<NativeModel>(mod, "NativeModel")
        .def("__init__", &make_model)
        .def_prop_ro("nq", [](const NativeModel &m) { return m.model.nq; })
        .def_prop_ro("nv", [](const NativeModel &m) { return m.model.nv; })
        .def_prop_ro("nlink", [](const NativeModel &m) { return m.model.nlink; });
    mod.def("run", &run, nb::arg("model"), nb::arg("op"), nb::arg("a").none(), nb::arg("b").none(), nb::arg("c").none(),
            "op's result (see OPS) for float64 inputs (size,) or (N, size), or None when the NumPy path must decide");
    nb::dict ops;
    for (int k = 0; k < NOPS; k++) ops[OP_NAMES[k]] = k;
    mod.attr("OPS") = ops;
    nb::class_<NativeSim>(mod, "NativeSim").def("__init__", &make_sim);
    mod.def("rollout", &rollout, nb::arg("model"), nb::arg("sim"), nb::arg("Q"), nb::arg("QD"), nb::arg("E"), nb::arg("status"),
            nb::arg("h"), nb::arg("integrator"), nb::arg("implicit_damping"), nb::arg("with_energy"), nb::arg("ctrl").none(),
            nb::arg("qfrc_applied").none(), nb::arg("xfrc_applied").none(),
            "N trajectories of euler (0), rk4 (1), implicit (2) or implicitfast (3) from Q[:, 0], QD[:, 0], in place; "
            "status[n]: -1, the first diverging step, or -2 (declined)");
    mod.def("jacobians", &jacobians, nb::arg("model"), nb::arg("q"), nb::arg("link"), nb::arg("point"),
            "(Jp; Jr) (6, nv) or (N, 6, nv) of a point (3,) fixed in a link, in the link's frame, for q (nq,) or (N, nq)");
    mod.def("configuration", &configuration, nb::arg("sim"), nb::arg("op"), nb::arg("x").none(), nb::arg("y").none(), nb::arg("h"),
            "integrate (op 0: q, v) or difference (op 1: q0, q1) for (size,) or (N, size) float64 arrays, or None");
    mod.def("body_poses", &body_poses, nb::arg("model"), nb::arg("q").none(), nb::arg("body_link"), nb::arg("body_pos"),
            nb::arg("body_rot"), "(pos, rot) of every body for q (nq,) or (N, nq), or None");
    mod.def("derivatives", &derivatives, nb::arg("model"), nb::arg("op"), nb::arg("a").none(), nb::arg("b").none(), nb::arg("c").none(),
            "(dtau/dq, dtau/dqd, M) (op 0: q, qd, qdd) or (dqdd/dq, dqdd/dqd, M^-1) (op 1: q, qd, tau), each (nv, nv) or "
            "(N, nv, nv), for float64 (size,) or (N, size) arrays, or None when the NumPy path must decide");
    mod.def("isa", [] { return isa_kernels(active_isa()).name; },
            "the instruction set the batch kernel runs with: avx512f, avx2 or default (baseline x86-64, "
            "SSE2; elsewhere the compiler's default); PHYSAI_ISA chooses at load time");
    mod.def("isas", &isas, "the batch kernel's variants this CPU supports, best first");
    mod.def("set_isa", &set_isa, nb::arg("name"),
            "run the batch kernel's variant name (one of isas()) from now on: true; false (and no change) otherwise");
    mod.def("lanes", [] { return isa_kernels(active_isa()).lanes; }, "states side by side in the batch kernel's variant");
    mod.def("num_threads", &num_threads, "threads a large batch runs on (PHYSAI_NUM_THREADS, else the hardware's)");
}
