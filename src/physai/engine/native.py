"""The engine's compiled backend: physai.engine._native (cpp/engine.cpp), the kernels of physai.engine.algorithms in C++.

The public functions of physai.engine (rnea, bias, gravity, mass_matrix, forward_dynamics, aba, kinetic_energy,
potential_energy, energy) run on the compiled backend when it is built and active, and on the NumPy text of
algorithms.py otherwise; both take the same Model and give the same numbers within rounding (tests/test_backend.py
bounds the difference by 1e-13 relative to each state's largest entry; forward dynamics and aba by
max(1e-13, 1e-16 cond(M))). The NumPy text stays the readable reference and is used

- when the extension is missing (a source checkout without a C++ build) or PHYSAI_BACKEND=numpy is set;
- when a data=Data(...) workspace is passed (the intermediate quantities are the NumPy stages');
- for every call the compiled kernel declines: an input that is not a finite float64 array of shape (size,) or
  (N, size) after physai's own checks, a non-finite result, a zero quaternion, a singular mass matrix. The NumPy path
  then raises the same named physai error as without the extension.

    physai.engine.backend            "native" or "numpy", the backend in use
    physai.engine.set_backend(name)  switch ("native" needs the built extension); returns the previous one

The kernels loop over links in C++ (one compiled call per public call, whatever the batch, checks included). A
batch runs lanes of states side by side (states innermost), in chunks on threads with the GIL released
(PHYSAI_NUM_THREADS sets the count, default: every core). The batch kernel is built three times on x86-64 Linux with
GCC, each on its register's width: AVX-512 ("avx512f", 8 states), AVX2 ("avx2", 4) and baseline x86-64 with SSE2
("default", 2), and one is chosen when the extension loads:
PHYSAI_ISA=avx512f|avx2|default if the CPU supports it, otherwise (unset, an unknown name, an instruction set the
CPU lacks) the best the CPU supports. Elsewhere (another compiler or CPU) there is one variant, "default" (2 states).

    isa()            the variant batches run with ("avx512f", "avx2" or "default"; physai verify prints it)
    isas()           the variants this CPU supports, best first
    set_isa(name)    switch to one of isas() in this process: True; False (nothing changes) for another name

One text serves one state and lanes of them, without FMA contraction: the same operations in the same order for a
state alone, anywhere in a batch, on any thread count and any of the variants (tests/test_backend.py bounds the
difference by 4 eps). physai.integrators.simulate runs its whole loop here too (rollout below: every integrator,
actuators, per-step ctrl and applied forces; cpp/simulate.h), and physai.integrators.rollout runs N trajectories in
one call, side by side in the variant's lanes and on threads with the GIL released. physai.jacobians,
physai.kinematics.body_poses, engine.integrate / difference and physai.derivatives' rnea_derivatives and
forward_dynamics_derivatives (cpp/derivatives.h) have compiled calls too.
"""

import functools
import os

import numpy as np

from physai.validation import states
from physai.engine.loaders import as_model
from physai.engine.model import Model
from physai.exceptions import InvalidArgumentError

try:
    from physai.engine import _native as _ext
except ImportError:                       # a checkout without the compiled extension: the NumPy engine alone
    _ext = None

BACKENDS = ("native", "numpy")
_active = "native" if _ext is not None and os.environ.get("PHYSAI_BACKEND", "").strip().lower() != "numpy" else "numpy"
on = _active == "native"                  # read by the public functions' fast path (algorithms.py)
ext_run = _ext.run if _ext is not None else None


def backend() -> str:
    """The backend the engine's public functions run on: "native" (compiled) or "numpy"."""
    return _active


def available() -> bool:
    """Whether the compiled extension is built and importable."""
    return _ext is not None


def set_backend(name: str) -> str:
    """Use backend `name` ("native" or "numpy") from now on; returns the previous one.

    Raises InvalidArgumentError for another name, or for "native" when the extension is not built."""
    global _active, on
    if name not in BACKENDS:
        raise InvalidArgumentError(f"unknown engine backend {name!r}; expected one of {', '.join(map(repr, BACKENDS))}")
    if name == "native" and _ext is None:
        raise InvalidArgumentError("the compiled backend is not built (physai.engine._native is missing); "
                                   "reinstall physai with a C++ compiler available, e.g. uv sync --reinstall-package physai")
    previous, _active = _active, name
    on = name == "native"
    return previous


def describe() -> str:
    """One line on the backend in use and why, e.g. "native (C++; batches: avx512f, 8 states side by side, 2 threads)"
    or "numpy (the reference; no C++ compiler was found when physai was installed)"; a PHYSAI_ISA that was not applied
    is named, e.g. "batches: avx512f (PHYSAI_ISA='sse9' unavailable)". Why the extension is missing comes from
    physai/engine/_build.json, which the build installs beside it (CMakeLists.txt)."""
    if _active == "native":
        used, asked = isa(), os.environ.get("PHYSAI_ISA")
        note = f" (PHYSAI_ISA={asked!r} unavailable)" if asked and asked not in isas() else ""
        return f"native (C++; batches: {used}{note}, {_ext.lanes()} states side by side, {threads()} threads)"
    if _ext is not None:
        return "numpy (the reference; PHYSAI_BACKEND=numpy or set_backend)"
    import importlib
    import json

    info = None
    for folder in importlib.import_module("physai.engine").__path__:   # the package, and an editable build's folder
        try:
            with open(os.path.join(folder, "_build.json")) as f:
                info = json.load(f)
            break
        except (OSError, ValueError):
            continue
    if info is None:
        why = "the compiled extension is not built"
    elif not info.get("compiled"):
        reason = str(info.get("reason", "not compiled"))
        why = ("no C++ compiler was found when physai was installed" if "no C++ compiler" in reason
               else f"the compiled extension was not built: {reason}")
    else:
        why = f"the compiled extension was built ({info.get('compiler', 'C++')}) but does not import"
    return f"numpy (the reference; {why})"


def isa() -> str:
    """The instruction set the compiled batch kernel runs with: "avx512f", "avx2" or "default" (see above)."""
    return _ext.isa() if _ext is not None else "default"


def isas() -> tuple:
    """The batch kernel's variants this CPU supports, best first (("default",) without the extension)."""
    return tuple(_ext.isas()) if _ext is not None else ("default",)


def set_isa(name: str) -> bool:
    """Run batches with the kernel variant `name` (one of isas()) from now on in this process: True; False, and
    nothing changes, for a name this build or CPU does not have. PHYSAI_ISA chooses at import time instead."""
    return bool(_ext.set_isa(str(name))) if _ext is not None else name == "default"


def threads() -> int:
    """Threads a large batch runs on in the compiled backend (PHYSAI_NUM_THREADS, else every core); 1 without it."""
    return _ext.num_threads() if _ext is not None else 1


def _native_model(model):
    """The model's arrays copied once into the extension's NativeModel, cached on the Model."""
    nm = getattr(model, "_native_model", None)
    if nm is not None:
        return nm
    lt, L = model.link_transforms, model.nlink
    i64 = lambda x: np.ascontiguousarray(x, dtype=np.int64)            # noqa: E731
    f64 = lambda x: np.ascontiguousarray(x, dtype=np.float64)          # noqa: E731
    kind, qadr, ref = np.zeros(L, np.int64), np.zeros(L, np.int64), np.zeros(L)
    G, rot, pos, anchor = np.zeros((L, 3, 4, 4)), np.zeros((L, 3, 3)), np.zeros((L, 3)), np.zeros((L, 3))
    kind[lt.ball] = 1
    qadr[lt.scalar], qadr[lt.ball] = lt.scalar_q, lt.ball_q
    ref[lt.scalar], G[lt.scalar] = lt.scalar_ref, lt.scalar_G
    rot[lt.ball], pos[lt.ball], anchor[lt.ball] = lt.ball_rot, lt.ball_pos, lt.ball_anchor
    relative = model.link_relative.astype(np.int64)
    nm = _ext.NativeModel(
        model.nq, model.nv, L, f64(model.gravity), i64(model.link_parentid), i64(model.link_centerid), relative,
        i64(model.link_dofadr), i64(model.link_dofnum), f64(model.link_mass), f64(model.link_ipos), f64(model.link_inertia),
        kind, qadr, ref, f64(G), f64(rot), f64(pos), f64(anchor), i64(model.dof_linkid), i64(model.dof_parentid),
        f64(model.dof_motion), f64(model.dof_armature), i64(model.spring_qposadr), f64(model.spring_stiffness), f64(model.spring_ref),
        float(model.static_mass), f64(model.static_com))
    object.__setattr__(model, "_native_model", nm)
    return nm


# operation codes of physai.engine._native.run
RNEA, BIAS, GRAVITY, MASS_MATRIX, FORWARD_DYNAMICS, ABA, KINETIC_ENERGY, POTENTIAL_ENERGY, ENERGY = range(9)


def run(model, op: int, a, b=None, c=None):
    """op's result on the compiled backend for float64 arrays a, b, c (as many as op takes), or None: the backend
    is numpy, model is not a Model, or the kernel declined (then `call` converts other inputs, or the NumPy path
    decides). The fast path of every public function: no Python work per argument."""
    if _active != "native":
        return None
    nm = getattr(model, "_native_model", None)
    if nm is None:
        if not isinstance(model, Model):
            return None
        nm = _native_model(model)
    return _ext.run(nm, op, a, b, c)


def call(model, op: int, arrays: dict):
    """op's result on the compiled backend for inputs that `run` declined: arrays (name -> (value, size)) of any
    type physai accepts (lists, integers, float32) are checked and converted as on the NumPy path (which raises the
    named errors), then computed. None when the NumPy path must decide (see the module docstring)."""
    values = [v for v, _ in arrays.values()]
    if _active != "native" or all(type(v) is np.ndarray and v.dtype == np.float64 for v in values):
        return None
    cols, batch = states(**arrays)
    args = [c[:, 0] if batch is None else c.T for c in cols]
    return _ext.run(_native_model(model), op, *args, *(None,) * (3 - len(args)))


def dispatch(op: int, names: str):
    """Decorator of a public engine function f(model, *arrays, data=None) with joint arrays `names` ("q qd qdd"):
    the compiled backend computes op when it is active and takes the inputs (a Model seen before: one call, no
    Python work per argument); otherwise f, the NumPy text, runs and raises the named errors. With data given, f
    runs (the NumPy path keeps its intermediate quantities). The wrapper takes the arrays by position or by name."""
    sizes = [name == "q" for name in names.split()]                    # True: nq entries, False: nv

    def wrap(f):
        def other(model, arrays, data):
            """Every call the fast path did not take: a new or non-Model model, other inputs, a declined kernel."""
            if data is None and on:
                out = run(model, op, *arrays, *(None,) * (3 - len(arrays)))
                if out is not None:
                    return out
                model = model if isinstance(model, Model) else as_model(model)
                out = call(model, op, {n: (a, model.nq if q else model.nv) for n, a, q in zip(names.split(), arrays, sizes)})
                if out is not None:
                    return out
            return f(model, *arrays, data=data)

        # one wrapper per signature, without *args: the fast path is an attribute read and the compiled call
        if names == "q":
            def public(model, q, *, data=None):
                nm = getattr(model, "_native_model", None)
                if nm is not None and data is None and on:
                    out = ext_run(nm, op, q, None, None)
                    if out is not None:
                        return out
                return other(model, (q,), data)
        elif names == "q qd":
            def public(model, q, qd, *, data=None):
                nm = getattr(model, "_native_model", None)
                if nm is not None and data is None and on:
                    out = ext_run(nm, op, q, qd, None)
                    if out is not None:
                        return out
                return other(model, (q, qd), data)
        elif names == "q qd qdd":
            def public(model, q, qd, qdd, *, data=None):
                nm = getattr(model, "_native_model", None)
                if nm is not None and data is None and on:
                    out = ext_run(nm, op, q, qd, qdd)
                    if out is not None:
                        return out
                return other(model, (q, qd, qdd), data)
        elif names == "q qd tau":
            def public(model, q, qd, tau, *, data=None):
                nm = getattr(model, "_native_model", None)
                if nm is not None and data is None and on:
                    out = ext_run(nm, op, q, qd, tau)
                    if out is not None:
                        return out
                return other(model, (q, qd, tau), data)
        else:
            raise ValueError(f"no dispatch wrapper for the arrays {names!r}")
        return functools.wraps(f)(public)
    return wrap


def jacobians(model, q, link: int, point):
    """(Jp; Jr) (6, nv), or (N, 6, nv) for q (N, nq), of `point` (3,) in link `link`'s frame, on the compiled backend;
    None when it declines: q is not a finite float64 array (nq,) or (N, nq), or has a zero quaternion (the NumPy path
    then converts or raises the named error)."""
    if type(q) is not np.ndarray or q.dtype != np.float64:
        return None
    return _ext.jacobians(_native_model(model), q, link, point)


def body_poses(model, q):
    """(pos, rot) of every body (physai.kinematics.body_poses) in one compiled call, or None: another q (not a finite
    float64 array (nq,) or (N, nq)), a zero quaternion, or a model that is no Model."""
    if not isinstance(model, Model):
        return None
    arrays = getattr(model, "_native_bodies", None)
    if arrays is None:
        arrays = (np.ascontiguousarray(model.body_linkid, dtype=np.int64), np.ascontiguousarray(model.body_pos, dtype=np.float64),
                  np.ascontiguousarray(model.body_rot, dtype=np.float64))
        object.__setattr__(model, "_native_bodies", arrays)
    return _ext.body_poses(_native_model(model), q, *arrays)


# operation codes of physai.engine._native.derivatives
RNEA_DERIVATIVES, FORWARD_DYNAMICS_DERIVATIVES = 0, 1
ext_derivatives = _ext.derivatives if _ext is not None else None


def derivatives(model, op: int, a, b, c):
    """(dtau/dq, dtau/dqd, M) (op RNEA_DERIVATIVES: q, qd, qdd) or (dqdd/dq, dqdd/dqd, M^-1) (FORWARD_DYNAMICS_DERIVATIVES:
    q, qd, tau) on the compiled backend (cpp/derivatives.h), each (nv, nv) or (N, nv, nv); None when the backend is numpy,
    model is not a Model, or the kernel declines (inputs other than finite float64 arrays (size,) or (N, size), a zero
    quaternion, a singular M, a non-finite result: the NumPy path then converts or raises the named error)."""
    if _active != "native" or not isinstance(model, Model):
        return None
    return _ext.derivatives(_native_model(model), op, a, b, c)


def configuration(model, op: int, x, y, h: float):
    """integrate (op 0: q, qd) or difference (op 1: q0, q1) on the compiled backend for float64 arrays of one shape,
    (size,) or (N, size); None when the backend is numpy or declines (other inputs, a non-finite result)."""
    sim = getattr(model, "_native_coords", None)
    if sim is None:
        if _active != "native" or not isinstance(model, Model):
            return None
        sim = _native_sim(model, None)
        object.__setattr__(model, "_native_coords", sim)
    return _ext.configuration(sim, op, x, y, h)


INTEGRATOR_CODES = {"euler": 0, "rk4": 1, "implicit": 2, "implicitfast": 3}


def _native_sim(model, actuators):
    """What drives a simulation besides the Model (damping, q's layout, actuators, bodies, M's pattern) as a NativeSim."""
    c = model.coords
    i64 = lambda x: np.ascontiguousarray(x, dtype=np.int64)            # noqa: E731
    f64 = lambda x: np.ascontiguousarray(x, dtype=np.float64)          # noqa: E731
    if actuators is None:
        nu = 0
        act = [np.zeros(0)] * 4 + [np.zeros(0, np.int64), np.zeros(0), np.zeros(0, np.int64), np.zeros(0),
                                   np.zeros(model.nv, np.int64), np.zeros((model.nv, 2))]
    else:
        nu = actuators.nu
        act = [actuators.moment, actuators.qmoment, actuators.gain, actuators.bias, actuators.ctrllimited,
               actuators.ctrlrange, actuators.forcelimited, actuators.forcerange, actuators.dof_forcelimited,
               actuators.dof_forcerange]
        act = [i64(a) if np.asarray(a).dtype == bool else f64(a) for a in act]
    point = model.body_pos + np.einsum("bij,bj->bi", model.body_rot, model.body_ipos)   # centres of mass in link frames
    return _ext.NativeSim(model.nq, model.nv, f64(model.dof_damping), i64(c.scalar_q), i64(c.scalar_v), i64(c.quat_q),
                          i64(c.quat_v), i64(model.spring_dofadr), nu, *act, model.nbody, i64(model.body_linkid), f64(point),
                          i64(model.dof_Mmask[:, :, 0] > 0))


def rollout(model, q0, qd0, h: float, steps: int, integrator: str, actuators, ctrl, qfrc_applied, xfrc_applied,
            implicit_damping: bool, energy: bool):
    """N trajectories of integrators.simulate's loop in C++ (every integrator, actuators, per-step inputs), from
    checked q0 (N, nq), qd0 (N, nv); ctrl (N, steps, nu), qfrc_applied (N, steps, nv) and xfrc_applied
    (N, steps, nbody, 6) checked and broadcast (views: nothing is copied per step), or None. Returns
    (Q (N, steps+1, nq), QD, E (N, steps+1), status (N,)) with status -1, the first diverging step, or -2 where the
    kernel declined (a zero quaternion, a singular matrix: the Python loop then runs that trajectory and raises what it
    raises); None when the compiled backend is off."""
    if _active != "native" or not isinstance(model, Model):
        return None
    N = len(q0)
    Q, QD, E = np.empty((N, steps + 1, model.nq)), np.empty((N, steps + 1, model.nv)), np.empty((N, steps + 1))
    Q[:, 0], QD[:, 0] = q0, qd0
    status = np.empty(N, np.int64)
    xfrc = None if xfrc_applied is None else xfrc_applied.reshape(N, steps, 6 * model.nbody)
    _ext.rollout(_native_model(model), _native_sim(model, actuators), Q, QD, E, status, float(h),
                 INTEGRATOR_CODES[integrator], bool(implicit_damping), bool(energy), ctrl, qfrc_applied, xfrc)
    return Q, QD, E, status
