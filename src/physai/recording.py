"""What a run touched: each contact's force in its contact frame (MuJoCo's mj_contactForce), for one state or for every
state of a Trajectory, for the viewer (physai view) and for plots.

    f = recording.contact_forces(model, q, qd, ctrl=ctrl, actuators=acts)   # ContactForces: f.contacts, f.force (ncon, 6)
    run = recording.record_contacts(model, trajectory, ctrl=ctrl)          # the Trajectory with .contacts (ContactRecord)
    f = recording.actuator_forces(model, q, qd, ctrl, act=act)              # (nu,) MuJoCo's actuator_force [N | N m]
    run = recording.record_actuator_forces(model, trajectory, ctrl=ctrl)   # the Trajectory with .actuator_force (S, nu)
    run = recording.record(model, trajectory, ctrl=ctrl)                   # both

Built on the public constraint model: physai.collision.detect finds the contacts, physai.constraints.forward_dynamics
solves their forces (efc_force) at (q, qd) under the smooth forces (actuators, passive, applied), and each contact's
rows are read back into its frame as mj_contactForce does: an elliptic cone's rows are the frame's components; a
pyramidal cone's 2(dim-1) edge forces p give the normal force sum(p) and the tangential ones (p[2i] - p[2i+1]) mu_i
(mju_decodePyramid); a frictionless contact has its one row. Components past dim, and a contact without rows, are 0.

record_contacts re-solves each saved state rather than recording inside the stepping loop: mj_step's constraint forces
are those of mj_forward at the step's start state, so the solve at that state, warm-started from the state before as
the run was, gives the run's forces within the solver's tolerance; the loop (compiled, or the NumPy reference) stays as
it is, and a trajectory from anywhere (loaded from a file) can be given its contacts.
"""

from dataclasses import dataclass, replace

import numpy as np

from physai import collision, constraints, engine, forces, validation
from physai.collision import ContactSet
from physai.engine import constraint
from physai.exceptions import InvalidArgumentError
from physai.integrators import Trajectory, check_actuators, smooth_force
from physai.trajectory_files import CONTACT_ARRAYS, ContactRecord

__all__ = ["ContactForces", "actuator_forces", "contact_forces", "record", "record_actuator_forces", "record_contacts"]


@dataclass(frozen=True)
class ContactForces:
    """The contacts of one state (a physai.collision.ContactSet) and each one's force in its contact frame, force
    (ncon, 6): normal, two tangential, torsional and two rolling components [N | N m] (MuJoCo's mj_contactForce), and
    the solver's qacc (nv,), which warm-starts the next state's solve."""

    contacts: ContactSet
    force: np.ndarray
    qacc: np.ndarray


def contact_forces(model, q, qd, ctrl=None, actuators=None, qfrc_applied=None, xfrc_applied=None, contacts=None,
                   qacc_warmstart=None) -> ContactForces:
    """Each contact's force at (q (nq,), qd (nv,)) in its frame, as mj_contactForce after mj_forward: the constraint
    forces of physai.constraints.forward_dynamics under the smooth forces of ctrl (nu,) through `actuators` (None: the
    model's), qfrc_applied (nv,) and xfrc_applied (nbody, 6). contacts: None finds them (physai.collision.detect), or a
    ContactSet. qacc_warmstart (nv,): where the solver starts (the previous state's qacc), as in a run."""
    model = engine.as_model(model)
    q, qd = validation.vector("q", q, model.nq), validation.vector("qd", qd, model.nv)
    contacts = collision.detect(model, q) if contacts is None else contacts
    tau = smooth_force(model, q, qd, ctrl, actuators, qfrc_applied, xfrc_applied) + engine.bias(model, q, qd)
    result = constraints.forward_dynamics(model, q, qd, tau, contacts, qacc_warmstart=qacc_warmstart)
    return ContactForces(contacts, _in_contact_frames(model, result.rows, result.efc_force), result.qacc)


def _in_contact_frames(model, rows, efc_force: np.ndarray) -> np.ndarray:
    """(ncon, 6): each contact's rows of efc_force in its contact frame (mj_contactForce, mju_decodePyramid)."""
    return constraint.contact_frame_forces(model, rows, efc_force)


def record_contacts(model, trajectory: Trajectory, ctrl=None, actuators=None, qfrc_applied=None,
                    xfrc_applied=None) -> Trajectory:
    """The trajectory (one run) with .contacts: every state's contacts and forces (contact_forces), state k under row k
    of ctrl (steps, nu) / qfrc_applied / xfrc_applied as the run had them (a constant row: the same in every state; the
    last state takes the last row), each solve warm-started from the state before."""
    model = engine.as_model(model)
    S = len(trajectory.t)
    parts = {name: [] for name in CONTACT_ARRAYS}
    start, warm = [0], None
    for k in range(S):
        found = contact_forces(model, trajectory.q[k], trajectory.qd[k], _row(ctrl, k, 1), actuators,
                               _row(qfrc_applied, k, 1), _row(xfrc_applied, k, 2), qacc_warmstart=warm)
        c, warm = found.contacts, found.qacc
        n = len(c.dist)
        geom = c.geom if c.geom is not None else np.full((n, 2), -1)
        for name, value in (("pos", c.pos), ("frame", c.frame), ("dist", c.dist), ("force", found.force), ("geom", geom)):
            parts[name].append(np.asarray(value).reshape((n, *CONTACT_ARRAYS[name])))
        start.append(start[-1] + n)
    record = ContactRecord(np.array(start), **{name: np.concatenate(v) for name, v in parts.items()})
    return replace(trajectory, contacts=record)


def actuator_forces(model, q, qd, ctrl=None, actuators=None, act=None, dt=None) -> np.ndarray:
    """Each actuator's scalar force f (nu,) [N | N m] at (q (nq,), qd (nv,)) under ctrl (nu,) (clamped to ctrlrange) and
    activations act (na,; None: zeros), as mj_forward leaves MuJoCo's d.actuator_force: physai.forces.actuator_outputs
    with the moment arms of q (forces.actuators_at). actuators: None, the model's. dt [s]: the step, which an actearly
    actuator looks ahead by (None: model.opt.timestep). InvalidArgumentError for a model without actuators."""
    model = engine.as_model(model)
    q, qd = validation.vector("q", q, model.nq), validation.vector("qd", qd, model.nv)
    actuators, ctrl = check_actuators(model, actuators, ctrl)
    if actuators is None:
        raise InvalidArgumentError("actuator_forces: the model has no actuators and none were given")
    dt = model.opt.timestep if dt is None else dt
    return forces.actuator_outputs(forces.actuators_at(model, q, actuators=actuators), q, qd, ctrl, act, dt)


def record_actuator_forces(model, trajectory: Trajectory, ctrl=None, actuators=None) -> Trajectory:
    """The trajectory (one run) with .actuator_force (S, nu) [N | N m]: every state's actuator forces (actuator_forces),
    state k under row k of ctrl (steps, nu) as the run had it (a constant (nu,): the same in every state; the last
    state takes the last row) and its activations trajectory.act[k] (none recorded: zeros), looking ahead by the run's
    dt for actearly."""
    model = engine.as_model(model)
    act = trajectory.act if trajectory.act is not None and np.shape(trajectory.act)[-1] > 0 else None
    force = [actuator_forces(model, trajectory.q[k], trajectory.qd[k], _row(ctrl, k, 1), actuators,
                             None if act is None else act[k], trajectory.dt) for k in range(len(trajectory.t))]
    return replace(trajectory, actuator_force=np.array(force).reshape(len(trajectory.t), -1))


def record(model, trajectory: Trajectory, ctrl=None, actuators=None, qfrc_applied=None, xfrc_applied=None) -> Trajectory:
    """The trajectory with what the viewer shows: its contacts and their forces (record_contacts) and, if the model has
    actuators, their forces (record_actuator_forces), under the run's ctrl, qfrc_applied and xfrc_applied."""
    model = engine.as_model(model)
    trajectory = record_contacts(model, trajectory, ctrl, actuators, qfrc_applied, xfrc_applied)
    if (model.actuators if actuators is None else actuators) is None:
        return trajectory
    return record_actuator_forces(model, trajectory, ctrl, actuators)


def _row(x, k: int, constant_ndim: int):
    """Row k of a per-step series (one more axis than a constant; the last state takes the last row), else x itself."""
    if x is None or np.ndim(x) == constant_ndim:
        return x
    return np.asarray(x)[min(k, len(x) - 1)]
