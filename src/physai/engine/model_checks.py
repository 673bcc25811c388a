"""One pass over a Model's numbers at its construction (physai.engine.model.Model): every float field finite, the
fields with a domain inside it, the solver's options usable. What fails is an InvalidModelError naming the field, the
entry and what was expected, e.g. "dof_frictionloss[3] (joint 'hip') is nan: expected a finite value >= 0", before any
dynamics runs: no NaN result, no LinAlgError, no compiled kernel reading a contact dimension it has no room for.

    check(model)        raises InvalidModelError for the first field out of its domain
    check_options(opt)  the same for an Options (timestep, impratio, tolerances, iteration counts)
    check_transmissions(model, actuators)  the configuration-dependent transmissions' targets inside the model
"""

import math

import numpy as np

from physai.exceptions import InvalidModelError

#: MuJoCo's mjMAXVAL: the largest magnitude MuJoCo takes as a physical value; larger sizes and frictions overflow the
#: constraint rows (a friction squared, a sphere's bounding box)
MAXVAL = 1e10
#: MuJoCo's mjMINVAL: the smallest denominator
MINVAL = 1e-15
#: MuJoCo's bounds of a row's impedance (mjMINIMP, mjMAXIMP)
MINIMP, MAXIMP = 0.0001, 0.9999
#: MuJoCo's contact dimensions (mjContact.dim: frictionless, sliding, + torsional, + rolling)
CONTACT_DIMS = (1, 3, 4, 6)
#: the largest iteration count: MuJoCo's int
MAX_ITERATIONS = 2**31 - 1
#: field: (lowest, highest) of the float fields with a domain; every other float field needs only be finite
RANGES = {"dof_frictionloss": (0.0, math.inf), "dof_armature": (0.0, math.inf), "body_mass": (0.0, math.inf),
          "geom_size": (0.0, MAXVAL), "geom_friction": (0.0, MAXVAL), "pair_friction": (0.0, MAXVAL),
          "tendon_frictionloss": (0.0, math.inf), "tendon_armature": (0.0, math.inf),
          "geom_rbound": (0.0, MAXVAL), "geom_margin": (-MAXVAL, MAXVAL), "geom_gap": (-MAXVAL, MAXVAL),
          "pair_margin": (-MAXVAL, MAXVAL), "pair_gap": (-MAXVAL, MAXVAL), "body_gravcomp": (-MAXVAL, MAXVAL)}
#: the Model's scalar float fields, each needing only be finite
SCALARS = ("fluid_density", "fluid_viscosity")
#: the entity each field prefix belongs to, with the Model (or Geoms) attribute holding its names
OWNERS = {"jnt": ("joint", "jnt_name"), "body": ("body", "body_name"), "eq": ("equality", "eq_name"),
          "site": ("site", "site_name"), "geom": ("geom", "geom_name"), "tendon": ("tendon", "tendon_name")}


def check(model) -> None:
    """InvalidModelError for the first float field of the Model, its Geoms or its Actuators that is not finite or lies
    outside its domain (RANGES), a contact dimension other than 1, 3, 4 or 6 (geom_condim, pair_dim), a transmission
    whose targets are not in the model (check_transmissions), or options check_options refuses."""
    for owner, name, value in _float_fields(model):
        low, high = RANGES.get(name, (-math.inf, math.inf))
        if name not in RANGES and np.isfinite(value).all():           # the common case: one pass
            continue
        bad = ~(np.isfinite(value) & (value >= low) & (value <= high))
        if bad.any():
            index = tuple(int(k) for k in np.argwhere(bad)[0])
            raise InvalidModelError(f"{name}[{', '.join(map(str, index))}]{_who(model, owner, name, index[0])} is "
                                    f"{value[index].item()!r}: expected {_domain(low, high)}")
    for name in SCALARS:
        value = getattr(model, name)
        if not math.isfinite(value):
            raise InvalidModelError(f"{name} is {value!r}: expected a finite value")
    geoms = model.geoms
    for name in ("geom_condim", "pair_dim"):
        dims = getattr(geoms, name)
        bad = np.flatnonzero(~np.isin(dims, CONTACT_DIMS))
        if bad.size:
            k = int(bad[0])
            raise InvalidModelError(f"{name}[{k}]{_who(model, geoms, name, k)} is {int(dims[k])}: expected a contact "
                                    "dimension 1, 3, 4 or 6 (frictionless, sliding, + torsional, + rolling friction)")
    if model.actuators is not None:
        check_transmissions(model, model.actuators)
    check_options(model.opt)


def check_options(opt) -> None:
    """InvalidModelError unless opt's timestep is finite and > 0, its impratio and tolerances (the solver's, the line
    search's, GJK/EPA's, noslip's) finite and >= 0, ccd_tolerance at most MAXVAL, and its iteration counts whole
    numbers in 0..2**31 - 1 (MuJoCo's int)."""
    for name, positive in (("timestep", True), ("impratio", False), ("tolerance", False), ("ls_tolerance", False),
                           ("ccd_tolerance", False), ("noslip_tolerance", False)):
        value = getattr(opt, name)
        if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or not math.isfinite(value) or \
                value < 0 or (positive and value == 0):
            raise InvalidModelError(f"opt.{name} is {value!r}: expected a finite number {'> 0' if positive else '>= 0'}")
    if opt.ccd_tolerance > MAXVAL:                     # GJK's stopping test squares it: 1e200 would overflow
        raise InvalidModelError(f"opt.ccd_tolerance is {opt.ccd_tolerance!r}: expected a value in [0, {MAXVAL:g}] [m] "
                                "(GJK compares the duality gap with its square, which must not overflow)")
    for name in ("iterations", "ls_iterations", "ccd_iterations", "noslip_iterations"):
        value = getattr(opt, name)
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value <= MAX_ITERATIONS:
            raise InvalidModelError(f"opt.{name} is {value!r}: expected a whole number in 0..{MAX_ITERATIONS}")


def _float_fields(model):
    """(owner, name, array) of every float array of the Model, its Geoms (meshes have their own check) and Actuators."""
    for owner in (model, model.geoms, model.actuators):
        if owner is None:
            continue
        for name, value in vars(owner).items():
            if isinstance(value, np.ndarray) and value.dtype.kind == "f":
                yield owner, name, value


def label(name: str, i: int, kind: str) -> str:
    """How messages and tables call entry i of a model's names (jnt_name[i], body_name[i], ...): its name, or
    "joint 3" (kind and index) when it has none ("")."""
    return name or f"{kind} {i}"


def _who(model, owner, name: str, i: int) -> str:
    """' (joint 'hip')': the named entity entry i of field `name` belongs to; a dof's joint also when unnamed
    (' (joint 'joint 3')'); else ''."""
    prefix = name.partition("_")[0]
    dof = prefix == "dof" and owner is model
    if dof:
        j = np.searchsorted(model.jnt_dofadr, i, side="right") - 1
        prefix, i = "jnt", int(j)
    kind, names = OWNERS.get(prefix, (None, None))
    found = getattr(owner, names, ()) if kind else ()
    return f" ({kind} {label(found[i], i, kind)!r})" if 0 <= i < len(found) and (found[i] or dof) else ""


def _domain(low: float, high: float) -> str:
    if low == -math.inf and high == math.inf:
        return "a finite value"
    return f"a finite value >= {low:g}" if high == math.inf else f"a value in [{low:g}, {high:g}]"


#: mjtTrn value: (what the transmission's targets are, the Model's count of each of them; None: none)
TRANSMISSION_TARGETS = {0: ("a ball or free joint", "njnt", None), 1: ("a ball or free joint", "njnt", None),
                        2: ("a crank site and a slider site", "nsite", "nsite"), 3: ("a spatial tendon", "ntendon", None),
                        4: ("a site and a refsite (-1: none)", "nsite", "nsite"), 5: ("a body or the world", "nbody", None)}


def check_transmissions(model, actuators) -> None:
    """InvalidModelError naming the first actuator whose moment arms depend on the configuration (posed_each) and whose
    targets (trnid) are not in the model: a joint that is not a ball or free joint, a site, tendon or body index out of
    range, a missing slider site (only a site's refsite may be -1)."""
    for a in np.flatnonzero(actuators.posed_each).tolist():
        kind = int(actuators.trntype[a])
        what, first, second = TRANSMISSION_TARGETS[kind]
        ids = actuators.trnid[a]
        good = (-1 if kind == 5 else 0) <= ids[0] < getattr(model, first)   # a body may be the world (-1)
        if second is None:                             # no second target
            good &= bool(ids[1] == -1)
        else:                                          # a slider site, or a refsite (-1: none)
            good &= bool((-1 if kind == 4 else 0) <= ids[1] < getattr(model, second))
        if good and kind in (0, 1):                    # ball (1) or free (0)
            good = int(model.jnt_type[ids[0]]) in (0, 1)
        if not good:
            raise InvalidModelError(f"actuator {actuators.names[a]!r}: its transmission's targets trnid = {ids.tolist()} "
                                    f"are not {what} of the model")


def singular_at_rest(model) -> InvalidModelError:
    """The error of a model whose mass matrix is singular at qpos0 (no invweight0 constants), naming the moving bodies
    without mass."""
    moving = [i for i in range(model.nbody) if model.body_linkid[i] >= 0 and model.body_mass[i] <= 0]
    names = ", ".join(repr(label(model.body_name[i], i, "body")) for i in moving) or "none has zero mass"
    return InvalidModelError(f"the mass matrix at qpos0 is singular, so the constraints cannot be weighed (MuJoCo's "
                             f"invweight0): a moving body needs mass and inertia > 0 or a massive child (bodies "
                             f"without mass that move: {names})")
