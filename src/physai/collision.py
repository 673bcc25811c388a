"""Contacts for physai's constraint model: which bodies touch, where, and how (MuJoCo's mjContact, physai's ContactSet).

    contacts = collision.detect(model, q)       # physai's own collision detection: MuJoCo's mj_collision
    contacts = collision.from_mujoco(m, d)      # MuJoCo's d.contact after mj_forward / mj_collision, as a ContactSet
    ContactSet.empty(model.nbody)               # no contacts

A ContactSet holds what the constraint rows read of each contact: position, frame, distance, margin, friction, solver
parameters, dimension, the two bodies (physai's indices: MuJoCo's body b + 1 is physai's body b, -1 the world) and the
two geoms (MuJoCo's numbering). detect finds them from the Model's geoms (physai.engine.geoms, read from MJCF by
engine.from_mujoco, scene files included) with MuJoCo's filters, parameter mixing and order; its narrow phase covers
plane against sphere, capsule, cylinder, box, ellipsoid and convex mesh, sphere against sphere, capsule, cylinder and
box, capsule against capsule and box, box against box (physai.engine.primitives). It runs compiled (cpp/collision.h, the
detection of the compiled step, on N states in one call) when the compiled backend is on, else the NumPy text; both give
the same contacts. A model with other colliding pairs (a mesh against anything but a plane, cylinder against capsule,
...) is refused by name unless collision.ignoring_unsupported(model) (which the simulators take too) or detect's
ignore_unsupported=True, which leave those pairs out and warn (CollisionWarning) when one may be touching: once per
pair and model, whichever call finds it near first.
"""

import dataclasses

import mujoco
import numpy as np

from physai import engine, validation
from physai.engine import collision as engine_collision
from physai.engine import constraint, native
from physai.engine.contact import ContactSet
from physai.exceptions import InvalidArgumentError, UnsupportedModelError

__all__ = ["ContactSet", "detect", "from_mujoco", "ignoring_unsupported"]

# the driver's names the simulators and the constraint model use (physai.integrators, physai.constraints; physai.collision
# is the one module outside the engine that reads physai.engine.collision): whether a model can have contacts, the
# refusal of what physai cannot collide, the warning of left-out pairs that may touch, the dofs that move a pair apart
# (physai.derivatives), the NumPy text's detect of one state (q (nq,), not validated: the simulators' own evaluations)
has_contacts, check_supported, warn_near = engine_collision.has_contacts, engine_collision.check_supported, engine_collision.warn_near
contact_dofs = engine_collision.contact_dofs
numpy_detect = engine_collision.detect


def has_unsupported_pairs(model: engine.Model) -> bool:
    """Whether model has candidate geom pairs physai cannot collide (left out only by ignoring_unsupported)."""
    return bool(engine_collision.candidates(model)[1])


def ignoring_unsupported(model) -> engine.Model:
    """The model with its geom pairs that physai cannot collide left out of every detection (detect, the constrained
    simulators), with a CollisionWarning when one may be touching: the caller's choice for a robot whose unsupported
    pairs (e.g. mesh geoms whose mesh data was left out) stay apart while its supported
    ones (feet on the floor) carry it."""
    model = engine.as_model(model)
    return engine.set_const(dataclasses.replace(model, geoms=dataclasses.replace(model.geoms, ignore_unsupported=True)))


def detect(model, q, *, ignore_unsupported: bool = False) -> ContactSet | list[ContactSet]:
    """The contacts at joint positions q (nq,), or a list of one ContactSet per state for q (N, nq), as MuJoCo's
    mj_collision finds them for the same model: the same geom pairs in the same order, positions, frames (normal from
    geom 1 to geom 2, then MuJoCo's tangents), distances [m] and mixed contact parameters. Contacts MuJoCo excludes
    (in a pair's gap) are left out, as its constraint rows leave them out. No contacts when model.opt.contact is off.

    ignore_unsupported: leave out the geom pairs physai has no narrow phase for (else UnsupportedModelError lists
    them), warning (physai.exceptions.CollisionWarning) for each that may be touching, once per pair and model. Runs
    compiled (all N states in one call) on the compiled backend, unless the model has what the compiled constraint
    model does not cover."""
    model = engine.as_model(model)
    if not isinstance(ignore_unsupported, bool):
        raise InvalidArgumentError(f"ignore_unsupported must be True or False, got {ignore_unsupported!r}")
    (Q,), batch = validation.states(q=(q, model.nq))
    check_supported(model, ignore_unsupported)
    if native.on and not model.unsupported:                 # compiled: the model's constraint part holds the pairs
        constraint.prepare_compiled(model)
        sets, near = native.detect(model, np.ascontiguousarray(Q.T))
        warn_near(model, near, stacklevel=2)
    else:
        sets = [numpy_detect(model, Q[:, k], ignore_unsupported) for k in range(Q.shape[1])]
    return sets[0] if batch is None else sets


def from_mujoco(m: mujoco.MjModel, d: mujoco.MjData) -> ContactSet:
    """The contacts MuJoCo found in d (d.contact, after mj_forward or mj_collision) as a ContactSet of the physai Model
    built from m (physai.engine.from_mujoco(m)). Contacts MuJoCo excludes (gap, disabled pairs) are left out, as its
    constraint rows leave them out. Contacts of flexes raise UnsupportedModelError."""
    if not isinstance(m, mujoco.MjModel) or not isinstance(d, mujoco.MjData):
        raise InvalidArgumentError(f"from_mujoco needs a mujoco.MjModel and its mujoco.MjData, got {type(m).__name__} and "
                                   f"{type(d).__name__}")
    con = d.contact
    keep = np.flatnonzero(con.exclude[:d.ncon] == 0)
    geoms = con.geom[keep].reshape(-1, 2)
    if (geoms < 0).any():
        raise UnsupportedModelError("a contact involves a flex; physai's contacts are between bodies' geoms")
    body = m.geom_bodyid[geoms] - 1                                  # MuJoCo's body b + 1 is physai's body b
    return ContactSet(nbody=m.nbody - 1, pos=con.pos[keep].reshape(-1, 3), frame=con.frame[keep].reshape(-1, 3, 3),
                      dist=con.dist[keep].reshape(-1), includemargin=con.includemargin[keep].reshape(-1),
                      friction=con.friction[keep].reshape(-1, 5), solref=con.solref[keep].reshape(-1, 2),
                      solreffriction=con.solreffriction[keep].reshape(-1, 2), solimp=con.solimp[keep].reshape(-1, 5),
                      dim=con.dim[keep].reshape(-1).astype(np.intp), body1=body[:, 0].astype(np.intp),
                      body2=body[:, 1].astype(np.intp), geom=geoms.astype(np.intp))
