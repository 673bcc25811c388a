"""The engine's compiled backend: physai.engine._native (cpp/bindings.cpp, the kernels in cpp/*.h), the stages of
smooth.py and forward.py in C++, and the one way physai calls it.

The public functions of physai.engine (rnea, bias, gravity, mass_matrix, forward_dynamics, aba, kinetic_energy,
potential_energy, energy) run on the compiled backend when it is built and active, and on the NumPy text of api.py
(smooth.py) otherwise; both take the same Model and give the same numbers within rounding
(tests/test_native_vs_numpy.py bounds the difference by 1e-13 relative to each state's largest entry; forward dynamics
and aba by max(1e-13, 1e-16 cond(M))). The NumPy text stays the readable reference and is used

- when the extension is missing (a source checkout without a C++ build) or PHYSAI_BACKEND=numpy is set;
- when a data=Data(...) workspace is passed (the intermediate quantities are the NumPy stages').

    physai.engine.backend            "native" or "numpy", the backend in use
    physai.engine.set_backend(name)  switch ("native" needs the built extension); returns the previous one

The boundary. Every compiled entry point is a row of one table, cpp/kernels.h's OPERATIONS (its name, its arguments by
name and kind, its results), and a Kernel here: Kernel(name)(model, a, b, c) calls _native.call(model.compiled,
OPS[name], a, b, c), which checks every argument before any kernel runs and returns the result, or raises
_native.KernelError(kind, argument, state, index, result) that Kernel.failed turns into physai's named error:

    "type"               an argument of another type (a list, integers, float32, a byte-swapped array): converted once
                         as the NumPy path converts it (validation.states, which raises the named error for strings,
                         booleans, ...), and the kernel called again
    "shape", "nonfinite" ShapeError, InvalidStateError: validation.states words them, as on the NumPy path
    "zero_quaternion"    InvalidStateError worded by physai.joints.quat_to_mat on the argument
    "singular"           InvalidModelError(physai.linalg.SINGULAR)
    "nonfinite_result"   InvalidStateError worded by the caller's result check (physai.engine.batching.result)

No kernel declines valid input, and no error reruns the NumPy algorithm. The engine's public functions take the fast
path of dispatch (one attribute read and the compiled call); physai.derivatives' rnea_derivatives and
forward_dynamics_derivatives, physai.jacobians, physai.kinematics.body_poses, engine.integrate / difference and
physai.integrators' simulate and rollout (rollout below) and physai.collision.detect (detect below) call their Kernel.
A new kernel is a row of OPERATIONS (with its case in cpp/batch.h) and a Kernel (or dispatch) here.

The compiled copy of a Model is Model.compiled, a _native.Model made once from the mapping fields(model) (the Model's
arrays by their own names) on first use; it is not pickled (a Dask worker makes its own). Actuators, which simulate and
rollout may override per call, are a _native.Actuators of their own (actuator_fields), the last one kept on the compiled
copy (compiled_actuators), which also holds the constraint part once it is added (with_constraints): nothing of the
compiled backend but Model.compiled is written into a Model.

The kernels loop over links in C++ (one compiled call per public call, whatever the batch, checks included). A
batch runs lanes of states side by side (states innermost), in chunks on threads with the GIL released
(PHYSAI_NUM_THREADS sets the count, a whole number up to 4 per core; default, or when it is not one: every core; see
thread_request). A signal (Ctrl-C) stops a long compiled call within milliseconds: KeyboardInterrupt, the results
discarded. The batch kernel is built three times on x86-64 Linux with
GCC, each on its register's width: AVX-512 ("avx512f", 8 states), AVX2 ("avx2", 4) and baseline x86-64 with SSE2
("default", 2), and one is chosen when the extension loads:
PHYSAI_ISA=avx512f|avx2|default if the CPU supports it, otherwise (unset, an unknown name, an instruction set the
CPU lacks) the best the CPU supports. Elsewhere (another compiler or CPU) there is one variant, "default" (2 states).

    isa()            the variant batches run with ("avx512f", "avx2" or "default"; physai verify prints it)
    isas()           the variants this CPU supports, best first
    set_isa(name)    switch to one of isas() in this process: True; False (nothing changes) for another name

One text serves one state and lanes of them, without FMA contraction: the same operations in the same order for a
state alone, anywhere in a batch, on any thread count and any of the variants (tests/test_native_vs_numpy.py bounds the
difference by 4 eps). physai.integrators.simulate runs its whole loop here too (every integrator, actuators, per-step
ctrl and applied forces; cpp/forward.h, cpp/rollout.h), and physai.integrators.rollout runs N trajectories in one call,
side by side in the variant's lanes and on threads with the GIL released.
"""

import functools
import inspect
import os

import numpy as np

from physai import joints
from physai.engine.actuators import TRN_BODY
from physai.engine.loaders import as_model
from physai.engine.model import WRAP_JOINT, Model, per_model
from physai.engine import collision, model_checks, passive, smooth
from physai.engine.contact import ContactSet
from physai.engine.data import RolloutInputs, StepOptions
from physai.engine.support import dof_turnlink, standalone_free_dofs
from physai.exceptions import InvalidArgumentError, InvalidModelError, InvalidStateError, ShapeError
from physai.linalg import SINGULAR
from physai.spatial import mat_to_quat
from physai.validation import states

try:
    from physai.engine import _native as _ext
except ImportError:                       # a checkout without the compiled extension: the NumPy engine alone
    _ext = None

BACKENDS = ("native", "numpy")
_active = "native" if _ext is not None and os.environ.get("PHYSAI_BACKEND", "").strip().lower() != "numpy" else "numpy"
on = _active == "native"                  # read by every caller of the compiled backend, and by dispatch's fast path

#: the extension's operation codes by name (cpp/kernels.h's OPERATIONS) and each one's arguments ((name, kind), ...)
OPS = dict(_ext.OPS) if _ext is not None else {}
ARGUMENTS = dict(_ext.ARGUMENTS) if _ext is not None else {}
#: the extension's integrator codes by physai.integrators' names (cpp/data.h's Integrator)
INTEGRATOR_CODES = dict(_ext.INTEGRATORS) if _ext is not None else {}
KernelError = _ext.KernelError if _ext is not None else type("KernelError", (Exception,), {})
_call = _ext.call if _ext is not None else None
call = _call      # the extension's call itself: a fast path in line (KernelError or TypeError: then its Kernel)


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
    is named, e.g. "batches: avx512f (PHYSAI_ISA='sse9' unavailable)", and a PHYSAI_NUM_THREADS that was ignored, with
    why (threads_note). Why the extension is missing comes from
    physai/engine/_build.json, which the build installs beside it (CMakeLists.txt)."""
    if _active == "native":
        used, asked = isa(), os.environ.get("PHYSAI_ISA")
        note = f" (PHYSAI_ISA={asked!r} unavailable)" if asked and asked not in isas() else ""
        ignored = f"; {threads_note()}" if threads_note() else ""
        return f"native (C++; batches: {used}{note}, {_ext.lanes()} states side by side, {threads()} threads{ignored})"
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


def thread_request(value: str | None, hardware: int) -> tuple:
    """PHYSAI_NUM_THREADS's rule (cpp/parallel.h's parse_threads is the same): (threads, why the value was ignored or
    capped, or ""). Decimal digits only, a whole number >= 1, capped at 4 x the hardware's threads (at most 256);
    anything else ("1e9", " 4", "+4", "0", "-2") is ignored for the hardware's count; unset: the hardware's count."""
    limit = min(256, 4 * hardware)
    if value is None:
        return hardware, ""
    if not (value.isascii() and value.isdigit()):
        why = "not a whole number (decimal digits only)"
    elif int(value) < 1:
        why = "not at least 1"
    elif int(value) > limit:
        return limit, f"PHYSAI_NUM_THREADS={value!r} capped at {limit} (4 per hardware thread, at most 256)"
    else:
        return int(value), ""
    return hardware, f"PHYSAI_NUM_THREADS={value!r} ignored: {why}; using the {hardware} hardware threads"


def threads() -> int:
    """Threads a large batch runs on in the compiled backend (PHYSAI_NUM_THREADS when valid, see thread_request; else
    every core); 1 without it. threads_note() says why a PHYSAI_NUM_THREADS was ignored."""
    return _ext.num_threads() if _ext is not None else 1


def threads_note() -> str:
    """Why PHYSAI_NUM_THREADS was ignored (thread_request), or "" (unset, valid, or no compiled backend)."""
    if _ext is None:
        return ""
    return thread_request(os.environ.get("PHYSAI_NUM_THREADS"), _ext.hardware_threads())[1]


# ---------------------------------------------------------------- the compiled model

def fields(model: Model) -> dict:
    """The named fields of the compiled Model (cpp/model.h, read and checked by name and shape in cpp/bindings.cpp): the
    Model's sizes and arrays by their own names, int64 or float64 in C order; the link transforms' constants per link
    (Model.link_transforms: link_jnttype 0 for a hinge or slide, with link_qposadr, link_ref and link_G (3, 4, 4); 1 for
    a ball, with link_qposadr, link_ballrot, link_ballpos and link_ballanchor); q's layout from Model.coords
    (scalar_qposadr, scalar_dofadr, quat_qposadr, quat_dofadr);
    each body's centre of mass in its link's frame (body_linkipos = body_pos + body_rot body_ipos); and the link whose
    velocity turns a ball's or free joint's rotation column (dof_turnlink, support.dof_turnlink); the first dofs of the
    free joints that move a body alone (free_dofadr, support.standalone_free_dofs); the passive part (passive_fields)
    and the tendons (tendon_fields)."""
    lt, L = model.link_transforms, model.nlink
    jnttype, qposadr, ref = np.zeros(L, np.int64), np.zeros(L, np.int64), np.zeros(L)
    G, rot, pos, anchor = np.zeros((L, 3, 4, 4)), np.zeros((L, 3, 3)), np.zeros((L, 3)), np.zeros((L, 3))
    jnttype[lt.ball] = 1
    qposadr[lt.scalar], qposadr[lt.ball] = lt.scalar_q, lt.ball_q
    ref[lt.scalar], G[lt.scalar] = lt.scalar_ref, lt.scalar_G
    rot[lt.ball], pos[lt.ball], anchor[lt.ball] = lt.ball_rot, lt.ball_pos, lt.ball_anchor
    ints = ("link_parentid", "link_centerid", "link_relative", "link_dofadr", "link_dofnum", "dof_linkid", "dof_parentid",
            "dof_simplenum", "spring_qposadr", "spring_dofadr", "body_linkid")
    floats = ("gravity", "link_mass", "link_subtreemass", "link_ipos", "link_inertia", "dof_motion", "dof_armature", "dof_damping",
              "spring_stiffness", "spring_ref", "body_pos", "body_rot", "static_com")
    c = model.coords
    return {"nq": model.nq, "nv": model.nv, "nlink": L, "nbody": model.nbody, "static_mass": float(model.static_mass),
            **{name: _int64(getattr(model, name)) for name in ints},
            **{name: _float64(getattr(model, name)) for name in floats},
            "link_jnttype": jnttype, "link_qposadr": qposadr, "link_ref": ref, "link_G": G, "link_ballrot": rot,
            "link_ballpos": pos, "link_ballanchor": anchor,
            "scalar_qposadr": _int64(c.scalar_q), "scalar_dofadr": _int64(c.scalar_v), "quat_qposadr": _int64(c.quat_q),
            "quat_dofadr": _int64(c.quat_v),
            "body_linkipos": _float64(model.body_pos + np.einsum("bij,bj->bi", model.body_rot, model.body_ipos)),
            "dof_turnlink": _int64(dof_turnlink(model)), "free_dofadr": _int64(standalone_free_dofs(model)),
            **passive_fields(model), **tendon_fields(model)}


def passive_fields(model: Model) -> dict:
    """The compiled Model's passive part (cpp/passive.h): has_gravcomp, each body's gravity compensation force
    (body_gravcompforce, passive.gravcomp_force) and each dof's share of it (dof_gravcompshare: gravcomp_passive +
    gravcomp_actuator); the fluid_density, fluid_viscosity, fluid_wind and the fluid elements in their links' frames
    (fluid_linkid, fluid_linkpos, fluid_linkrot: passive.link_frames), fluid_ellipsoid, fluid_size, fluid_coef."""
    link, pos, rot = passive.link_frames(model, model.fluid_bodyid, model.fluid_pos, model.fluid_rot)
    return {"has_gravcomp": int(passive.has_gravcomp(model)), "body_gravcompforce": _float64(passive.gravcomp_force(model)),
            "dof_gravcompshare": _float64(model.gravcomp_passive + model.gravcomp_actuator),
            "fluid_density": float(model.fluid_density), "fluid_viscosity": float(model.fluid_viscosity),
            "fluid_wind": _float64(model.fluid_wind), "fluid_linkid": _int64(link), "fluid_linkpos": _float64(pos),
            "fluid_linkrot": _float64(rot), "fluid_ellipsoid": _int64(model.fluid_ellipsoid),
            "fluid_size": _float64(model.fluid_size), "fluid_coef": _float64(model.fluid_coef)}


#: the compiled Model's opt_solver codes of physai.engine.model.Options.solver (cpp/model.h: SOLVER_NEWTON, SOLVER_PGS,
#: SOLVER_CG)
SOLVERS = {"newton": 0, "pgs": 1, "cg": 2}


def runs(model, actuators=None) -> bool:
    """Whether the compiled engine models all of the model's dynamics: every tendon physai models (cpp/tendon.h: fixed
    and spatial tendons' springs, dampers, armature, limits, friction loss and equalities) and every transmission
    (cpp/actuation.h's transmission: ball and free joints, slider-cranks, sites, spatial tendons) but a body's
    (adhesion, whose arms come from the contacts: the NumPy engine's physai.engine.actuation.body_transmission), of the
    actuators given and the model's own."""
    own = _runs_own(model) if type(model) is Model else not _contact_arms(model.actuators)
    return own and (actuators is None or actuators is model.actuators or not _contact_arms(actuators))


def _contact_arms(actuators) -> bool:
    """Whether an actuator has a body's transmission (adhesion: its arms come from the contacts)."""
    return actuators is not None and bool((actuators.posed_each & (actuators.trntype == TRN_BODY)).any())


@per_model
def _runs_own(model: Model) -> bool:
    """runs() of the model's own actuators (made once per model)."""
    return not _contact_arms(model.actuators)


def tendon_fields(model: Model) -> dict:
    """The compiled Model's tendon part (cpp/model.h, cpp/tendon.h), every tendon in the model's order: the path elements
    (tendon_adr, tendon_num) into wrap_type, wrap_objid, wrap_prm, and a joint element's q index and dof (wrap_qposadr,
    wrap_dofadr; 0 for the others); the springs and dampers (tendon_stiffness, tendon_damping, tendon_lengthspring),
    tendon_armature, the limits (tendon_limited, tendon_range, tendon_margin, tendon_solref_lim, tendon_solimp_lim) and
    friction loss (tendon_frictionloss, tendon_solref_fri, tendon_solimp_fri); the sites (site_bodyid, site_pos, and
    site_quat: site_rot as MuJoCo's quaternion, which the transmissions compose with the bodies'). A
    spatial tendon also reads the constraint part's body frames and geoms (compiled adds it)."""
    joint = model.wrap_type == WRAP_JOINT
    objid = np.where(joint, model.wrap_objid, 0)
    return {"tendon_adr": _int64(model.tendon_adr), "tendon_num": _int64(model.tendon_num),
            "wrap_type": _int64(model.wrap_type), "wrap_objid": _int64(model.wrap_objid), "wrap_prm": _float64(model.wrap_prm),
            "wrap_qposadr": _int64(np.where(joint, model.jnt_qposadr[objid], 0)),
            "wrap_dofadr": _int64(np.where(joint, model.jnt_dofadr[objid], 0)),
            "tendon_limited": _int64(model.tendon_limited),
            **{name: _float64(getattr(model, name)) for name in
               ("tendon_stiffness", "tendon_damping", "tendon_armature", "tendon_range", "tendon_margin", "tendon_solref_lim",
                "tendon_solimp_lim", "tendon_frictionloss", "tendon_solref_fri", "tendon_solimp_fri")},
            "tendon_lengthspring": _float64(model.tendon_lengthspring.reshape(-1, 2)),
            "site_bodyid": _int64(model.site_bodyid), "site_pos": _float64(model.site_pos.reshape(-1, 3)),
            "site_quat": _float64(np.array([mat_to_quat(R) for R in model.site_rot]).reshape(-1, 4))}


def has_spatial_tendon(model: Model) -> bool:
    """Whether a tendon of the model is spatial (its compiled path reads the constraint part's frames and geoms)."""
    return bool(model.ntendon and (model.wrap_type[model.tendon_adr] != WRAP_JOINT).any())


def compiled_solver(model) -> bool:
    """Whether the compiled kernels solve model's constraints with its solver (Newton, PGS, CG, each with its noslip
    sweeps) and run its dynamics (runs); else the NumPy engine runs."""
    return model.opt.solver in SOLVERS and runs(model)


def constraint_fields(model: Model, body_invweight0: np.ndarray, dof_invweight0: np.ndarray,
                      tendon_invweight0: np.ndarray | None = None) -> dict:
    """The named fields of the compiled Model's constraint part (cpp/model.h; _native.Model.add_constraints): the
    Model's constraint arrays by their own names (jnt_*, dof_frictionloss, dof_solref, dof_solimp, eq_*, body_quat,
    body_parentid; flags as int64), qpos0, each body's joints (body_jntadr, body_jntnum: a body's joints are
    consecutive), the invweight constants at qpos0 (physai.engine.constraint.invweight0; tendon_invweight0: its
    tendon_invweight0, zeros when not given, for a model without tendon equalities) and model.opt's settings
    (opt_<name>; opt_elliptic for the elliptic cone, opt_solver the solver's code in SOLVERS)."""
    ints = ("jnt_type", "jnt_qposadr", "jnt_dofadr", "jnt_bodyid", "jnt_limited", "eq_type", "eq_obj1id", "eq_obj2id",
            "eq_active0", "body_parentid")
    floats = ("jnt_axis", "jnt_range", "jnt_margin", "jnt_solref", "jnt_solimp", "dof_frictionloss", "dof_solref",
              "dof_solimp", "eq_data", "eq_solref", "eq_solimp", "body_quat")
    opt = model.opt
    bodies = np.arange(model.nbody)
    return {"njnt": model.njnt, "neq": len(model.eq_type), "qpos0": _float64(model.qpos0),
            **{name: _int64(getattr(model, name)) for name in ints},
            **{name: _float64(getattr(model, name)) for name in floats},
            "body_jntadr": _int64(np.searchsorted(model.jnt_bodyid, bodies)),
            "body_jntnum": _int64((model.jnt_bodyid[:, None] == bodies).sum(axis=0)),
            "body_invweight0": _float64(body_invweight0), "dof_invweight0": _float64(dof_invweight0),
            "tendon_invweight0": _float64(np.zeros(model.ntendon) if tendon_invweight0 is None else tendon_invweight0),
            "tendon_length0": _float64(model.tendon_length0),
            **{f"opt_{name}": float(getattr(opt, name)) for name in ("timestep", "impratio", "tolerance", "ls_tolerance",
                                                                     "ccd_tolerance", "noslip_tolerance")},
            **{f"opt_{name}": int(getattr(opt, name)) for name in ("iterations", "ls_iterations", "equality", "frictionloss",
                                                                   "limit", "contact", "refsafe", "ccd_iterations",
                                                                   "noslip_iterations", "island")},
            "opt_elliptic": int(opt.cone == "elliptic"), "opt_solver": SOLVERS[opt.solver],
            "opt_multiccd": int(model.geoms.multiccd), **collision_fields(model)}


def collision_fields(model: Model) -> dict:
    """The compiled Model's collision part (cpp/collision.h): joint anchors (jnt_pos), bodies' offsets in their parents
    (body_offset), the bodies' joints as links for their MuJoCo-order frames (pose_link_fields), the geoms (geom_type,
    geom_bodyid, geom_pos, geom_quat, geom_size, geom_rbound, geom_aabb), the candidate pairs
    in MuJoCo's order with their contact parameters (cand_geom (n, 2), cand_dim, cand_param: the row of cand_float
    (nparam, 16) of each: margin, gap, friction (5), solref, solreffriction (2 each), solimp (5); collision.candidates,
    contact_parameter_arrays on one candidate of each candidate_classes row) and
    whether MuJoCo's midphase tests their boxes (cand_midphase), and the pairs
    without a narrow phase (missing_geom (n, 2), missing_bound: margin + gap); the broad phase's groups, swept bodies
    and pads (collision.broad_phase: group_*, sweep_body, geom_pad, geom_inflate); the convex meshes and heightfields (geom_dataid,
    Meshes' mesh_*, Hfields' hfield_*)."""
    G = model.geoms
    pairs, missing = collision.candidates(model)
    param, first = candidate_classes(model, pairs)
    condim, friction, solref, reffric, solimp, margin, gap = collision.contact_parameter_arrays(
        model, pairs.geom[first, 0], pairs.geom[first, 1], pairs.ipair[first])
    floats = np.column_stack([margin, gap, friction, solref, reffric, solimp]).reshape(-1, 16)
    m1, m2 = np.array(missing, np.intp).reshape(-1, 2).T
    bounds = np.sum(collision.contact_parameter_arrays(model, m1, m2, np.full(len(m1), -1))[5:], axis=0)
    bp = collision.broad_phase(model)
    return {"jnt_pos": _float64(model.jnt_pos), "body_offset": _float64(model.body_offset), **pose_link_fields(model),
            "geom_type": _int64(G.geom_type), "geom_bodyid": _int64(G.geom_bodyid), "geom_pos": _float64(G.geom_pos),
            "geom_quat": _float64(G.geom_quat), "geom_size": _float64(G.geom_size), "geom_rbound": _float64(G.geom_rbound),
            "geom_aabb": _float64(G.geom_aabb), "cand_geom": _int64(pairs.geom), "cand_midphase": _int64(pairs.midphase),
            "cand_dim": _int64(condim[param]), "cand_param": _int64(param), "cand_float": _float64(floats),
            "missing_geom": _int64(np.array(missing).reshape(-1, 2)), "missing_bound": _float64(bounds),
            "group_body": _int64(bp.group_body), "group_start": _int64(bp.group_start), "group_split": _int64(bp.group_split),
            "group_end": _int64(bp.group_end), "group_always": _int64(bp.group_always), "sweep_body": _int64(bp.sweep_body),
            "geom_pad": _float64(bp.pad), "group_shrunk": _int64(bp.group_shrunk), "geom_inflate": _float64(bp.inflate),
            "geom_collides": _int64((G.geom_contype != 0) | (G.geom_conaffinity != 0)),
            "geom_dataid": _int64(G.geom_dataid),
            **{name: (_float64 if name in ("mesh_vert", "mesh_polynormal") else _int64)(value)
               for name, value in vars(G.meshes).items()},
            "mesh_graph_vert": graph_points(G.meshes),
            **{name: (_float64 if name in ("hfield_size", "hfield_data") else _int64)(value)
               for name, value in vars(G.hfields).items()}}


def candidate_classes(model: Model, pairs) -> tuple[np.ndarray, np.ndarray]:
    """(each candidate's parameter row (ncand,), the first candidate of each row (nparam,)): candidates share a row when
    their geoms have the same contact attributes in the same order (collision.contact_parameter_arrays reads no other)
    and neither is an explicit pair, so that the compiled model keeps one row of CAND_FLOATS per distinct parameters
    (a pile of N equal spheres: a few rows, not N^2 / 2)."""
    G = model.geoms
    attributes = np.column_stack([G.geom_priority, G.geom_solmix, G.geom_solref, G.geom_solimp, G.geom_condim,
                                  G.geom_friction, G.geom_margin, G.geom_gap]).astype(np.float64)
    _, kind = np.unique(attributes, axis=0, return_inverse=True)
    kind = kind.reshape(-1).astype(np.int64)
    n = int(kind.max(initial=0)) + 1
    key = np.where(pairs.ipair >= 0, n * n + pairs.ipair, kind[pairs.geom[:, 0]] * n + kind[pairs.geom[:, 1]])
    _, first, param = np.unique(key, return_index=True, return_inverse=True)
    return param.reshape(-1), first


def graph_points(meshes) -> np.ndarray:
    """(len(mesh_graph), 3) beside each entry of the meshes' hull graphs, the point it names when it is an edge's far
    end (mesh_vert of hull_ids[edge]; else 0): the compiled climb (cpp/primitives.h mesh_support) reads a neighbour's
    coordinates there, one load instead of three, the same numbers as the NumPy text's; the compiled model copies them
    as floats beside the graph's entries (cpp/model.h climb_edges: MuJoCo's points are floats, half the memory) and
    reads these arrays only when a point is not a float."""
    graph, out = np.asarray(meshes.mesh_graph), np.zeros((len(meshes.mesh_graph), 3))
    for i, ga in enumerate(np.asarray(meshes.mesh_graphadr).tolist()):
        if ga < 0:
            continue
        n, faces = int(graph[ga]), int(graph[ga + 1])
        ids, edges = graph[ga + 2 + n:ga + 2 + 2 * n], ga + 2 + 2 * n      # the lists: n + 3 faces entries, -1 ended
        k = edges + np.flatnonzero(graph[edges:edges + n + 3 * faces] >= 0)
        out[k] = meshes.mesh_vert[int(meshes.mesh_vertadr[i]) + ids[graph[k]]]
    return _float64(out)


def pose_link_fields(model: Model) -> dict:
    """The bodies' joints as links for MuJoCo's frames (smooth.pose_links; cpp/smooth.h's body_poses): per body its
    first link and count (body_poselinkadr, body_poselinknum), per link its type, first q entry, ref, axis, anchor and
    whether it starts from the world's frame (poselink_*)."""
    per_body = smooth.pose_links(model)
    links = [item for body in per_body for item in body]
    counts = [len(body) for body in per_body]
    return {"body_poselinkadr": _int64(np.cumsum([0] + counts[:-1])[:len(counts)]), "body_poselinknum": _int64(counts),
            "poselink_type": _int64([link.type for link, _, _ in links]), "poselink_qposadr": _int64([a for _, a, _ in links]),
            "poselink_ref": _float64([ref for _, _, ref in links]),
            "poselink_axis": _float64(np.array([link.axis for link, _, _ in links]).reshape(-1, 3)),
            "poselink_anchor": _float64(np.array([link.anchor for link, _, _ in links]).reshape(-1, 3)),
            "poselink_world": _int64([link.world_axes for link, _, _ in links])}


def kept_invweights(model: Model) -> tuple:
    """(body_invweight0, dof_invweight0, tendon_invweight0): the constants set_const kept in the Model
    (constraint.invweight0, constraint.tendon_invweight0); InvalidModelError when M is singular at qpos0."""
    body_dof, tendon = model.kept("invweight0"), model.kept("tendon_invweight0")
    if body_dof is None or tendon is None:
        raise model_checks.singular_at_rest(model)
    return (*body_dof, tendon)


def with_constraints(model: Model, constants) -> object:
    """model.compiled with its constraint part (constraint_fields), added on first use: constants() gives the
    invweight constants (body_invweight0, dof_invweight0, tendon_invweight0), called only then."""
    c = compiled(model)
    if not c.has_constraints:
        c.add_constraints(constraint_fields(model, *constants()))
    return c


def compiled_actuators(model: Model, actuators):
    """The compiled copy of a simulation's actuators for the model (None for None), made once per (model, actuators)
    and kept on the model's compiled copy (the last one used; nothing is written into the Model); with arms that depend
    on the configuration, the model's constraint part first (their joints, and the bodies' MuJoCo-order frames)."""
    if actuators is None:
        return None
    c = compiled(model) if not actuators.posed_each.any() else with_constraints(model, lambda: kept_invweights(model))
    kept = c.actuators                                             # one pair, replaced whole: no thread sees half of it
    if kept is None or kept[0] is not actuators:
        kept = c.actuators = actuators, _ext.Actuators(c, actuator_fields(actuators))
    return kept[1]


def actuator_fields(actuators) -> dict:
    """The named fields of a compiled Actuators: physai.engine.actuators.Actuators' arrays by their own names (flags as
    int64; the transmissions' posed_each, trntype, trnid, gear6, cranklength too), and nu."""
    return {"nu": actuators.nu,
            **{name: _float64(getattr(actuators, name)) for name in
               ("moment", "qmoment", "gain", "bias", "ctrlrange", "forcerange", "dof_forcerange", "tendon_frcrange",
                "dynprm", "gainprm",
                "biasprm", "lengthrange", "acc0", "actrange", "gear6", "cranklength")},
            **{name: _int64(getattr(actuators, name)) for name in ("ctrllimited", "forcelimited", "dof_forcelimited", "joint_dof",
                                                                  "tendon_frcid",
                                                                  "dyntype", "gaintype", "biastype", "actlimited",
                                                                  "actearly", "act_index", "posed_each", "trntype",
                                                                  "trnid")}}


def _int64(x) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.int64)


def _float64(x) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float64)


def compiled(model: Model):
    """model.compiled: the Model's compiled copy, made on first use from fields(model), with its constraint part when a
    tendon is spatial (with_constraints)."""
    if model.compiled is None:
        object.__setattr__(model, "compiled", _ext.Model(fields(model)))
        if has_spatial_tendon(model):             # its path's body frames and geoms: the constraint part, at once
            with_constraints(model, lambda: kept_invweights(model))
    return model.compiled


# ---------------------------------------------------------------- the calls

class Kernel:
    """One compiled entry point: the extension's operation `name` (a row of cpp/kernels.h's OPERATIONS) and what comes
    back from it, its result or the named error. Call it as kernel(model, a, b, c), its arguments in the order of
    ARGUMENTS[name], on the compiled backend (the caller checks `on`); any model physai.engine.as_model takes.

    what names the result in the error of a non-finite result, which `finite(x, batch, what)` raises (the caller's
    physai.engine.batching.result, for x in the engine's layout, states last); None for an operation without that check.
    options: {name: options(model, x)} converting an options argument (kind o) of another type, or naming what is
    wrong with it (raises), by the argument's name in ARGUMENTS[name].
    check(model) raises the named error of a model the operation cannot take (a model without mass has no centre of
    mass: the kernels return NONFINITE for it); called first when a call fails, so a call that succeeds pays nothing.
    """

    def __init__(self, name: str, what: str | None = None, finite=None, options=None, check=None):
        self.name, self.what, self.finite, self.options, self.check = name, what, finite, options, check
        self.code, self.arguments = OPS.get(name), ARGUMENTS.get(name, ())
        if options is not None and self.code is not None and (
                not isinstance(options, dict) or set(options) - {n for n, k in self.arguments if k == "o"}):
            raise TypeError(f"the {name} kernel's options must be {{argument name: function}} for its options "
                            f"arguments {[n for n, k in self.arguments if k == 'o']}, got {options!r}")

    def __call__(self, model, a, b=None, c=None, d=None, e=None):
        compiled_model = model.compiled if type(model) is Model else None    # the common case first: no other lookup
        if compiled_model is None:
            model = model if isinstance(model, Model) else as_model(model)
            compiled_model = compiled(model)
        try:
            return _call(compiled_model, self.code, a, b, c, d, e)
        except KernelError as error:
            failure = error.args
        return self.failed(failure, model, (a, b, c, d, e))    # outside the except: the named error comes alone

    def failed(self, failure: tuple, model, args: tuple, converted: bool = False):
        """What a KernelError of this kernel on args (failure: its args) becomes: the result, once arguments of another
        type are converted (kind "type"), or physai's named error, raised."""
        kind, argument, state, index, result = failure
        model = model if isinstance(model, Model) else as_model(model)
        if self.check is not None:
            self.check(model)
        if kind == "type" and not converted:
            args = self._convert(model, args)
            try:
                return _call(compiled(model), self.code, *args)
            except KernelError as error:
                failure = error.args
            return self.failed(failure, model, args, converted=True)
        if kind in ("type", "shape", "nonfinite"):
            states(**self._states(model, args))                        # raises the NumPy path's error
            for (name, k), x in zip(self.arguments, args):
                if k == "o" and self.options is not None:
                    self.options[name](model, x)                       # raises the named error of what is wrong in it
            raise ShapeError(f"{argument} is not an array of the model's shape ({kind})")
        if self.arguments[0][1] == "Q":                                # rollout: state is a trajectory, index its step
            where = ("the simulation" if len(args[0]) == 1 else f"trajectory {state} of the rollout") + f" at step {index + 1}"
            if kind == "singular":
                raise located(InvalidModelError(f"{where}: {SINGULAR}"), state, index)
            try:
                _ball_quaternions(model, result[0][state, index][:, None])
            except InvalidStateError as e:
                raise located(InvalidStateError(f"{where}: {e}"), state, index) from None
            raise located(InvalidStateError(f"{where}: a zero quaternion"), state, index)
        if kind == "zero_quaternion":
            _ball_quaternions(model, dict(zip(self._names(), self._columns(model, args)))[argument])
            raise InvalidStateError(f"{argument} holds a zero quaternion (state {state})")
        if kind == "singular":
            raise InvalidModelError(SINGULAR)
        if kind == "nonfinite_result":
            batch = states(**self._states(model, args))[1]
            for part in result if isinstance(result, tuple) else (result,):
                x = np.asarray(part, dtype=float)
                self.finite(x[..., None] if batch is None else np.moveaxis(x, 0, -1), batch, self.what)
            raise InvalidStateError(f"{self.what} is not finite at state {state} although the inputs are")
        raise RuntimeError(f"the compiled {self.name} failed: {failure[:4]}")

    def _names(self) -> list:
        return [name for name, kind in self.arguments if kind in "qvQV"]

    def _states(self, model: Model, args: tuple) -> dict:
        """The state arguments by name, with their sizes: validation.states' input (a state given as None, which a
        kernel's options make in the call, as constraint_forward's tau with its front, left out)."""
        sizes = {"q": model.nq, "v": model.nv, "Q": model.nq, "V": model.nv}
        return {name: (x, sizes[kind]) for (name, kind), x in zip(self.arguments, args) if kind in sizes and x is not None}

    def _columns(self, model: Model, args: tuple) -> list:
        return states(**self._states(model, args))[0]

    def _convert(self, model: Model, args: tuple) -> tuple:
        """args as the kernel reads them: states as validation.states converts them (it raises the named errors), a
        step as a float, a link as an int, a point as a float64 array."""
        cols, batch = states(**self._states(model, args))
        cols, out = iter(cols), []
        for (name, kind), x in zip(self.arguments, args):
            if kind in "qvQV" and x is not None:
                col = next(cols)
                out.append(col[:, 0] if batch is None else col.T)
            elif kind == "o" and self.options is not None:
                out.append(self.options[name](model, x))
            else:
                out.append({"h": float, "l": int, "p": _float64}.get(kind, lambda y: y)(x))
        return tuple(out) + (None,) * (5 - len(out))


def located(error: Exception, trajectory: int, step: int) -> Exception:
    """error with the rollout's trajectory and step (0-based: the step from state `step` to `step + 1`) as attributes,
    error.trajectory and error.step, for a caller that compares failures in time (physai.integrators.rollout)."""
    error.trajectory, error.step = int(trajectory), int(step)
    return error


def _ball_quaternions(model: Model, q: np.ndarray) -> None:
    """The quaternions of q (nq, n) as the NumPy path reads them (Model.link_transforms): InvalidStateError for a zero one."""
    ball = model.link_transforms.ball_q
    joints.quat_to_mat(q[ball[:, None] + np.arange(4)], ball)


_WRAPPER = """
def make(kernel, f):
    def {name}(model, {args}, *, data=None):
        if data is None and on:
            try:
                return _call(model.compiled, {code}, {padded})
            except KernelError as error:
                failure = error.args
            except (AttributeError, TypeError):           # not a Model, or no compiled copy yet (None)
                return kernel(model, {args})
            return kernel.failed(failure, model, ({args},))
        return f(model, {args}, data=data)
    return {name}
"""


def dispatch(name: str, what: str, finite, check=None):
    """Decorator of a public engine function f(model, *arrays, data=None), the NumPy text of operation `name`: the
    compiled backend computes it when it is active and no data is given (a Model seen before: one attribute read and the
    compiled call, no Python work per argument); otherwise f runs (data= keeps the NumPy stages' quantities). The
    wrapper has f's signature (generated from _WRAPPER for f's arrays, which must be ARGUMENTS[name]'s), so it takes the
    arrays by position or by name; `what`, `finite` and `check` as for Kernel."""
    def wrap(f):
        if _ext is None:
            return f
        kernel = Kernel(name, what, finite, check=check)
        arrays = list(inspect.signature(f).parameters)[1:-1]
        if arrays != [n for n, _ in kernel.arguments]:
            raise ValueError(f"{f.__name__} takes {arrays}; the compiled {name} takes {kernel.arguments}")
        text = _WRAPPER.format(name=f.__name__, args=", ".join(arrays), code=kernel.code,
                               padded=", ".join(arrays + ["None"] * (3 - len(arrays))))
        namespace = {}
        exec(compile(text, f"<physai.engine.native.dispatch of {f.__name__}>", "exec"), globals(), namespace)
        return functools.wraps(f)(namespace["make"](kernel, f))
    return wrap


def kernel(name: str, what: str | None = None, finite=None, options=None):
    """Kernel(name, what, finite, options) as the modules call it: its bound __call__, which Python calls by vectorcall
    (calling the object itself goes through tp_call, with an argument tuple: about 0.4 us more per call)."""
    return Kernel(name, what, finite, options).__call__


ROLLOUT = kernel("rollout")
STEP_DERIVATIVES = kernel("step_derivatives")     # physai.derivatives.step_derivatives
PROVEN_STILL = kernel("proven_still")             # physai.derivatives._Constraints._proven_still (cpp/constraint_derivative.h)
CONSTRAINED_STEP = kernel("constrained_step")     # physai.derivatives._one_call (cpp/bindings.cpp's constrained_step_call)


def _subset_flags(model: Model, subset) -> np.ndarray | None:
    """collision_detect's subset as the kernel reads it (its options): None, or bool (N, ncand + nmissing) in C order
    (each state's pairs to collide: collision.detect's; its shape checked first, _collision_detect); InvalidArgumentError
    naming values other than booleans (collision.check_subset's, on each state's)."""
    if subset is None:
        return None
    subset = np.asarray(subset)
    for row in subset:
        collision.check_subset(model, row)
    return np.ascontiguousarray(subset)


def _along_arrays(model: Model, along) -> tuple | None:
    """collision_detect's along as the kernel reads it: None, or (q0 float64 (nq,), dofs int64 (N,)) in C order, each
    state q0 moved along one dof (collision.detect's along, a dof per state; the count checked first,
    _collision_detect); the named errors of collision.check_along."""
    return None if along is None else collision.check_along(model, *along)


_DETECT = Kernel("collision_detect", options={"subset": _subset_flags, "along": _along_arrays})


def _collision_detect(model: Model, Q: np.ndarray, subset, along) -> tuple:
    """_DETECT's result for checked states Q (N, nq), subset and along (detect's); ShapeError naming a subset of another
    shape than (N, ncand + nmissing), or an along with another count of dofs than N, the caller's array's."""
    n = len(Q) if np.ndim(Q) == 2 else 1
    if subset is not None:
        pairs, missing = collision.candidates(model)
        expected = (n, len(pairs) + len(missing))
        if np.shape(subset) != expected:
            raise ShapeError(f"detect's subset: (N, ncand + nmissing) = {expected} expected (a row per state, a flag per "
                             f"candidate pair ({len(pairs)}) then per left-out pair ({len(missing)})), got "
                             f"{np.shape(subset)}")
    if along is not None and np.shape(along[1]) != (n,):
        raise ShapeError(f"detect's along: a dof per state, ({n},) expected, got {np.shape(along[1])}")
    return _DETECT(model, Q, subset, along)


def detect(model: Model, Q: np.ndarray, subset: np.ndarray | None = None, along: tuple | None = None) -> tuple[list, list]:
    """collision.detect on the compiled backend (cpp/collision.h's detect; the model's constraint part added first,
    with_constraints): for checked states Q (N, nq), a ContactSet per state and the pairs without a narrow phase that
    may touch in any (indices into collision.candidates' second list, sorted). subset: None, or bool (N, ncand +
    nmissing) in C order, each state's pairs to collide (collision.detect's). along: None, or (q0 (nq,), dofs (N,)):
    state k is q0 moved along dof dofs[k], the bodies it does not move posed as at q0 (collision.detect's along)."""
    ncon, floats, ints, geom, _, near = _collision_detect(model, Q, subset, along)   # floats, ints, geom: read-only
    near = sorted(set(near.tolist())) if len(near) else []
    if len(ncon) == 1:                                                  # one state: its contacts are all of them
        return [ContactSet.unpacked(model.nbody, floats, ints, geom)], near
    ends = np.cumsum(ncon).tolist()
    sets = [ContactSet.unpacked(model.nbody, floats[a:b], ints[a:b], geom[a:b]) for a, b in zip([0] + ends[:-1], ends)]
    return sets, near


def detect_arrays(model: Model, Q: np.ndarray, subset: np.ndarray | None = None, along: tuple | None = None) -> tuple:
    """detect's contacts as the compiled call gives them, no ContactSet made: (ncon (N,), floats (total, 28), ints
    (total, 3): the states' packed contacts concatenated (ContactSet.packed's columns), near: the pairs without a narrow
    phase that may touch in any, sorted). Q (N, nq) checked states; the model's constraint part added (the caller).
    subset: None, or bool (N, ncand + nmissing) in C order, each state's pairs to collide (collision.detect's); along:
    None, or (q0 (nq,), dofs (N,)), each state q0 moved along a dof (detect's)."""
    ncon, floats, ints, _, _, near = _collision_detect(model, Q, subset, along)
    return ncon, floats, ints, sorted(set(near.tolist())) if len(near) else []


def plane_contact_rows(*arrays) -> tuple:
    """physai.derivatives.plane_contact_rows compiled (cpp/constraint_derivative.h): its arrays in the same order (the
    floats as float64, dim as int64, each in C order), (dJ (m, nv, nv), ddist (m, nv))."""
    kinds = [np.float64] * 7 + [np.int64, np.float64, np.float64]
    return _ext.plane_contact_rows(*(np.ascontiguousarray(x, dtype=t) for x, t in zip(arrays, kinds, strict=True)))


def segment_contact_rows(J, origin, frame, pos, dist, friction, dim, d1, ds, dD, L, radius, v1, turns, common) -> tuple:
    """physai.derivatives.segment_contact_rows compiled (cpp/constraint_derivative.h): its arguments in the same order
    (the arrays as float64 in C order), (dJ (rows, nv, nv), ddist (nv,))."""
    arrays = [np.ascontiguousarray(x, dtype=np.float64) for x in (J, origin, frame, pos)]
    rest = [np.ascontiguousarray(x, dtype=np.float64) for x in (d1, ds, dD)]
    tail = [np.ascontiguousarray(x, dtype=np.float64) for x in (radius, v1, turns, common)]
    return _ext.segment_contact_rows(*arrays, float(dist), np.ascontiguousarray(friction, dtype=np.float64), int(dim),
                                     *rest, float(L), *tail)


def anchor_rows(J, origin, anchor, turns, quats, scale, rows) -> np.ndarray:
    """physai.derivatives.anchor_rows compiled (cpp/constraint_derivative.h): its arguments in the same order (the
    arrays as float64 in C order), dJ (rows, nv, nv)."""
    arrays = [np.ascontiguousarray(x, dtype=np.float64) for x in (J, origin, anchor, turns, quats)]
    return _ext.anchor_rows(*arrays, float(scale), int(rows))


def anchor_bias_derivative(J, origin, anchor, turns, quats, scale, rows, qd) -> np.ndarray:
    """physai.derivatives.anchor_bias_derivative compiled (cpp/constraint_derivative.h): its arguments in the same order
    (the arrays as float64 in C order), (rows, nv)."""
    arrays = [np.ascontiguousarray(x, dtype=np.float64) for x in (J, origin, anchor, turns, quats)]
    return _ext.anchor_bias_derivative(*arrays, float(scale), int(rows), np.ascontiguousarray(qd, dtype=np.float64))


def segment_pair(J, origin, a0, d1, b0, d2, radius, dist) -> tuple | None:
    """physai.derivatives.segment_pair compiled (cpp/constraint_derivative.h): its arguments in the same order (the
    arrays as float64 in C order), (room (2,), speed (2,), st (2, nv), dD (3, nv), L, v1 (3, nv)) or None."""
    arrays = [np.ascontiguousarray(x, dtype=np.float64) for x in (J, origin, a0, d1, b0, d2, radius)]
    return _ext.segment_pair(*arrays, float(dist))


def rollout_fields(model: Model, options: StepOptions, steps: int, inputs: RolloutInputs, energy: bool = False) -> dict:
    """The named options of the compiled rollout (cpp/data.h's Rollout and StepOptions, read by name in
    cpp/bindings.cpp): options' h, integrator (its code) and implicit_damping; the discrete step's explicit_couplings
    (the PGS solver: forward.explicit_couplings), and the tolerance and iterations of its smooth solve with tendon and
    actuator terms (model.opt's: solver.metric_pcg); steps, with_energy, constrained; and the inputs (actuators
    compiled, xfrc_applied as (N, steps, 6 nbody), warm and act in C order), None where there are none."""
    xfrc, warm, act = inputs.xfrc_applied, inputs.warm, inputs.act
    return {"h": float(options.h), "integrator": INTEGRATOR_CODES[options.integrator],
            "implicit_damping": options.implicit_damping(model), "explicit_couplings": model.opt.solver == "pgs",
            "tolerance": float(model.opt.tolerance), "iterations": int(model.opt.iterations),
            "steps": int(steps), "with_energy": bool(energy),
            "constrained": bool(options.constraints), "actuators": compiled_actuators(model, inputs.actuators),
            "ctrl": inputs.ctrl, "qfrc_applied": inputs.qfrc_applied,
            "xfrc_applied": None if xfrc is None else xfrc.reshape(len(xfrc), steps, 6 * model.nbody),
            "warm": None if warm is None else np.ascontiguousarray(warm, dtype=np.float64),
            "act": None if act is None else np.ascontiguousarray(act, dtype=np.float64)}


def step_fields(model: Model, integrator: str, h: float, euler_damping: bool, constraints: bool) -> dict:
    """rollout_fields of one step (StepOptions(integrator, h, euler_damping, constraints)) of the model's own actuators
    without per-step inputs (ctrl, qfrc_applied, xfrc_applied and warm None: the caller sets them in a copy), made once
    and kept on the compiled copy (for the last options asked): a policy's loop of step calls builds them once."""
    c = compiled(model)
    opt = model.opt
    key = (integrator, h, euler_damping, constraints, opt.solver, opt.tolerance, opt.iterations)
    kept = c.step_fields                                           # one pair, replaced whole: no thread sees half of it
    if kept is None or kept[0] != key:
        options = StepOptions(integrator, h, euler_damping, constraints)
        kept = c.step_fields = key, rollout_fields(model, options, 1, RolloutInputs(model.actuators))
    return kept[1]


def step_derivative_fields(model: Model, options: StepOptions, actuators, ctrl, qfrc_applied) -> dict:
    """The named options of the compiled step_derivatives (cpp/data.h's StepDerivativeCall and StepOptions, read by
    name in cpp/bindings.cpp): options' h, integrator (its code) and implicit_damping; the actuators compiled, ctrl
    (N, nu) and qfrc_applied (N, nv) in C order, or None."""
    return {"h": float(options.h), "integrator": INTEGRATOR_CODES[options.integrator],
            "implicit_damping": options.implicit_damping(model), "actuators": compiled_actuators(model, actuators),
            "ctrl": ctrl, "qfrc_applied": qfrc_applied}


def constrained_lanes_step(model: Model, integrator: str, N: int) -> bool:
    """Whether a compiled constrained rollout of N trajectories of the model (its own actuators) under `integrator`
    runs its first block side by side in the active variant's constrained lanes (cpp/kernels.h's
    constrained_lanes_step), else one by one; it reads the choice and runs nothing. InvalidArgumentError for an
    integrator the compiled engine does not have, or without the compiled backend."""
    if integrator not in INTEGRATOR_CODES:
        raise InvalidArgumentError(f"integrator must be one of {', '.join(map(repr, INTEGRATOR_CODES))} on the compiled "
                                   f"backend, got {integrator!r}")
    code = INTEGRATOR_CODES[integrator]
    return bool(_ext.constrained_lanes_step(compiled(model), compiled_actuators(model, model.actuators), code, int(N)))


def rollout(model: Model, q0, qd0, options: StepOptions, steps: int, inputs: RolloutInputs, energy: bool = False):
    """N trajectories of integrators.simulate's loop in C++ (every integrator, actuators, per-step inputs), from
    checked q0 (N, nq), qd0 (N, nv), stepped as options say; the inputs' ctrl (N, steps, nu), qfrc_applied
    (N, steps, nv) and xfrc_applied (N, steps, nbody, 6) checked and broadcast (views: nothing is copied per step), or
    None. Returns (Q (N, steps+1, nq), QD, E (N, steps+1), status (N,), ncon (N, steps), near (N,), warm_out (N, nv),
    A (N, steps+1, na): the activations from inputs.act (default zero), capped (N,): the first step whose discrete
    smooth solve (cpp/forward.h's metric_pcg) stopped at model.opt.iterations, -1 none, and residual (N,): its relative
    residual (the caller warns, as solver.metric_pcg)):
    status -1, or the step at which a
    trajectory stopped; the first that stopped diverged (the caller raises the DivergenceError) unless it met a zero
    quaternion or a singular matrix, raised here as the named error naming the trajectory and the step (also as its
    attributes .trajectory and .step, see located). "The first" is the lowest index: the caller finds the first in time.
    options.constraints: with the model's constraints (cpp/simulate.h; the model's constraint part added first,
    with_constraints): ncon the contacts of each step, near the first geom pair without a narrow phase that came near
    (-1: none; an index into collision.candidates' second list), warm_out the last solve's qacc (the next warm start;
    inputs.warm (N, nv): the first, default zero); zero and -1 without."""
    return ROLLOUT(model, q0, qd0, rollout_fields(model, options, steps, inputs, energy))
