"""The actuators' forces and activation dynamics, named after MuJoCo's mj_fwdActuation (engine_forward.c; the muscle
curves of engine_util_misc.c; mirrored by the compiled engine's cpp/actuation.h), for one state:

    clamped_ctrl(actuators, ctrl)                          ctrl (nu,) checked, clamped to ctrlrange where ctrllimited
    activation_rate(actuators, u, act)                     act_dot (na,) of the stateful actuators      (MuJoCo's act_dot)
    next_activation(actuators, act, act_dot, h)            act after a step of h [s]                    (mj_nextActivation)
    scalar_forces(actuators, q, qd, u, act, act_dot, h)    f (nu,) [N m | N]                       (actuator_force)
                                                           (raw_forces within limited_forces: a tendon's actuatorfrcrange
                                                           scales its actuators' forces, then forcerange clamps each)
    joint_force(actuators, f)                              moment^T f clamped per dof (nv,)         (qfrc_actuator)
    velocity_derivative(actuators, q, qd, u, raw, act, act_dot, h) d qfrc_actuator / d qd (nv, nv)  (mjd_actuator_vel)
    transmission(actuators, model, d, q, contacts)         actuator_length (nu,), actuator_moment (nu, nv) (mj_transmission)
    posed(actuators, model, d, q, contacts)                the actuators with the moment arms of the state q

Actuators whose moment arms depend on the configuration (Actuators.posed_each: ball and free joints, slider-cranks,
sites, bodies, spatial tendons) are used through posed at each state; the functions above refuse them unposed. The
compiled twin (cpp/actuation.h's transmission) computes all but a body's at each evaluation of its steppers.

f = gain * input + bias, input = u (dyntype none) or the actuator's activation (its next one with actearly); gain and
bias are affine in the actuator's length and velocity, or MuJoCo's muscle curves. u are the controls after
clamped_ctrl; act (na,) the activations, one per stateful actuator in order (Actuators.act_index).
"""

import dataclasses
import math

import numpy as np

from physai import joints, validation
from physai.engine.actuators import (AFFINE, DYN_FILTEREXACT, DYN_INTEGRATOR, DYN_MUSCLE, MUSCLE, TRN_JOINT,
                                     TRN_JOINTINPARENT, TRN_SITE, TRN_SLIDERCRANK, TRN_TENDON, Actuators, Limits)
from physai.engine.data import Data
from physai.engine.model import Model
from physai.engine.smooth import body_poses, quat_to_mat_mj, rotate_mj
from physai.engine.support import dof_chain, point_jacobians
from physai.engine.tendon import tendons
from physai.exceptions import InvalidArgumentError, ShapeError, UnsupportedModelError
from physai.spatial import mat_to_quat, quat_mul_mj

#: MuJoCo's mjMINVAL: the floor of the divisors in the actuator models
MINVAL = 1e-15


def clamped_ctrl(actuators: Actuators, ctrl) -> np.ndarray:
    """ctrl checked to have nu finite entries and clamped to ctrlrange where ctrllimited."""
    u = np.asarray(ctrl, dtype=float)
    if u.shape != (actuators.nu,):
        got = f"{u.shape[0]} entries" if u.ndim == 1 else f"shape {u.shape}"
        raise ShapeError(f"ctrl has {got}, the model has nu = {actuators.nu} actuators (one control each)")
    u = validation.vector("ctrl", u, actuators.nu)
    return clamped(u, actuators.ctrl_limits)


def clamped(x: np.ndarray, limits: Limits) -> np.ndarray:
    """A new array of x (n,) clamped to limits (one of an Actuators' Limits) where limited, the other entries kept."""
    return np.clip(x, limits.lo, limits.hi) if limits.some else x.copy()


def check_state(actuators: Actuators, q, qd, act, dt):
    """(q, qd, act, dt) checked: act None is zeros (na,), a new MjData's activations; ShapeError names a wrong act; dt
    [s] is the timestep of actearly's next activation, required (InvalidArgumentError) when an actuator has it."""
    q, qd = validation.vector("q", q, actuators.nq), validation.vector("qd", qd, actuators.nv)
    early = np.flatnonzero(actuators.stateful & actuators.actearly)
    if dt is None and early.size:
        raise InvalidArgumentError(f"actuator {actuators.names[early[0]]!r} has actearly: its force uses the activation "
                                   "after one step, so dt (the timestep [s], MuJoCo's m.opt.timestep) is required")
    return q, qd, check_act(actuators, act), 0.0 if dt is None else validation.number("dt", dt, "s", positive=True)


def check_act(actuators: Actuators, act) -> np.ndarray:
    """act as a finite (na,) array, zeros for None; ShapeError for another shape (naming na), InvalidStateError for NaN."""
    na = actuators.na
    if act is None:
        return np.zeros(na)
    a = validation.to_float("act", act, f"({na},) numbers")
    if a.shape != (na,):
        raise ShapeError(f"act has shape {a.shape}, the actuators have na = {na} activations (one per actuator with "
                         "activation dynamics), so act must have shape ({na},)")
    return validation.vector("act", a, na)


def check_posed(actuators: Actuators) -> None:
    """UnsupportedModelError when some actuator's moment arms depend on the configuration and these actuators hold no
    state's (posed makes a copy that does)."""
    if actuators.needs_pose:
        a = int(np.flatnonzero(actuators.posed_each)[0])
        raise UnsupportedModelError(f"actuator {actuators.names[a]!r}: its moment arms depend on the configuration (a "
                                    "ball or free joint, a slider-crank, a site, a body or a spatial tendon); use the "
                                    "actuators posed at the state (physai.engine.actuation.posed) or the integrators")


def lengths_velocities(actuators: Actuators, q: np.ndarray, qd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(actuator_length, actuator_velocity) (nu,) each: qmoment q (a posed copy's length), moment qd."""
    check_posed(actuators)
    length = actuators.qmoment @ q if actuators.length is None else actuators.length
    return length, actuators.moment @ qd


# ---- transmissions (mj_transmission) ----


def quat_to_vel(quat: np.ndarray) -> np.ndarray:
    """The rotation vector (3,) of a unit quaternion (4,) (mju_quat2Vel over a unit time): its axis times its angle,
    wrapped to (-pi, pi]."""
    axis = quat[1:].copy()
    sin_half = math.sqrt(axis @ axis)
    axis = axis / sin_half if sin_half >= MINVAL else np.array([1.0, 0.0, 0.0])
    angle = 2 * math.atan2(sin_half, quat[0])
    return axis * (angle - 2 * math.pi if angle > math.pi else angle)


def conjugate(quat: np.ndarray) -> np.ndarray:
    """The inverse (w, -x, -y, -z) of a unit quaternion (mju_negQuat)."""
    return np.array([quat[0], -quat[1], -quat[2], -quat[3]])


class SiteFrames:
    """The site frames of one state q that the transmissions read: xpos (nsite, 3) [m], quat (nsite, 4) and xmat
    (nsite, 3, 3), from the bodies' MuJoCo-order poses (smooth.body_poses; poses: theirs when the caller has them)."""

    def __init__(self, model: Model, q: np.ndarray, poses: tuple | None = None):
        bxpos, bxquat = body_poses(model, q) if poses is None else poses
        self.xpos, self.quat = np.zeros((model.nsite, 3)), np.zeros((model.nsite, 4))
        for k, b in enumerate(model.site_bodyid.tolist()):
            body_quat = np.array([1.0, 0.0, 0.0, 0.0]) if b < 0 else bxquat[b]
            # site pose: p = R_body site_pos + p_body, q = q_body q_site
            self.xpos[k] = model.site_pos[k] if b < 0 else rotate_mj(model.site_pos[k], body_quat) + bxpos[b]
            self.quat[k] = quat_mul_mj(body_quat, mat_to_quat(model.site_rot[k]))
        self.xmat = quat_to_mat_mj(self.quat)


def site_jacobian(model: Model, d: Data, frames: SiteFrames, s: int) -> tuple[np.ndarray, np.ndarray]:
    """(Jp, Jr) (3, nv) each of site s (mj_jacSite), from a one-state Data with com_pos done."""
    J = point_jacobians(model, d, int(model.site_bodyid[s]), frames.xpos[s][None, :, None])[0, :, :, 0]
    return J[:3], J[3:]


def joint_transmission(actuators: Actuators, model: Model, q: np.ndarray, a: int) -> tuple[float, np.ndarray]:
    """(length, moment (nv,)) of actuator a on a ball or free joint: a ball's length is its rotation vector along
    the gear axis, a free joint's 0; the moment is the gear (the rotation's part turned into the parent frame by the
    joint's inverse quaternion for jointinparent)."""
    j, gear = int(actuators.trnid[a, 0]), actuators.gear6[a]
    ball = model.jnt_type[j] == joints.BALL
    qadr, vadr = int(model.jnt_qposadr[j]), int(model.jnt_dofadr[j])
    quat = joints.quat_normalize_mj(q[qadr:qadr + 4] if ball else q[qadr + 3:qadr + 7])
    turn = gear[:3] if ball else gear[3:]
    axis = turn if actuators.trntype[a] == TRN_JOINT else rotate_mj(turn, conjugate(quat))
    moment = np.zeros(model.nv)
    if ball:                                           # L = rotation vector . gear axis, moment = gear axis
        moment[vadr:vadr + 3] = axis
        return float(quat_to_vel(quat) @ axis), moment
    moment[vadr:vadr + 3], moment[vadr + 3:vadr + 6] = gear[:3], axis
    return 0.0, moment


def slider_crank(actuators: Actuators, model: Model, d: Data, frames: SiteFrames, a: int) -> tuple[float, np.ndarray]:
    """(length, moment (nv,)) of slider-crank actuator a: with v = crank - slider and a the slider's z axis,
    L = a.v - sqrt((a.v)^2 + r^2 - v.v) (a.v where the root is not real), times the gear; the moment by the chain rule
    through the Jacobians of v and of the axis."""
    crank, slider = (int(s) for s in actuators.trnid[a])
    rod, gear = actuators.cranklength[a], actuators.gear6[a, 0]
    axis, vec = frames.xmat[slider][:, 2], frames.xpos[crank] - frames.xpos[slider]
    av = vec @ axis
    det = av * av + rod * rod - vec @ vec
    if det <= 0:                                       # no real root: L = a.v
        length, dlda, dldv = av, vec, axis
    else:                                              # dL/dv = a (1 - a.v / s) + v / s, dL/da = v (1 - a.v / s)
        sdet = math.sqrt(det)
        length, dlda, dldv = av - sdet, vec * (1 - av / sdet), axis * (1 - av / sdet) + vec / sdet
    Jslider, Jrot = site_jacobian(model, d, frames, slider)
    Jaxis = np.cross(Jrot.T, axis).T                   # the axis' rate: omega x a per dof
    Jvec = site_jacobian(model, d, frames, crank)[0] - Jslider
    return length * gear, (dlda @ Jaxis + dldv @ Jvec) * gear


def site_transmission(actuators: Actuators, model: Model, d: Data, frames: SiteFrames, a: int) -> tuple[float, np.ndarray]:
    """(length, moment (nv,)) of site actuator a: without a refsite, length 0 and the moment the site's Jacobian
    projected on the gear wrench turned into the world; with one, the site's position and rotation vector relative to the
    refsite's frame along the gear, the moment through the relative Jacobians without the dofs that move both."""
    s, ref = (int(k) for k in actuators.trnid[a])
    gear = actuators.gear6[a]
    Jp, Jr = site_jacobian(model, d, frames, s)
    if ref < 0:                                        # moment = Jp^T R gear_t + Jr^T R gear_r
        R = frames.xmat[s]
        return 0.0, (R @ gear[:3]) @ Jp + (R @ gear[3:]) @ Jr
    common = dof_chain(model, int(model.site_bodyid[s])) & dof_chain(model, int(model.site_bodyid[ref]))
    Jp_ref, Jr_ref = site_jacobian(model, d, frames, ref)
    R = frames.xmat[ref]
    length, moment = 0.0, np.zeros(model.nv)
    if gear[:3].any():                                 # L += gear_t . R_ref^T (p - p_ref), moment += (R_ref gear_t)^T dJp
        length += (R.T @ (frames.xpos[s] - frames.xpos[ref])) @ gear[:3]
        dJ = Jp - Jp_ref
        dJ[:, common] = 0.0
        moment += (R @ gear[:3]) @ dJ
    if gear[3:].any():                                 # L += gear_r . log(q_ref^-1 q), moment += (R_ref gear_r)^T dJr
        length += quat_to_vel(quat_mul_mj(conjugate(frames.quat[ref]), frames.quat[s])) @ gear[3:]
        dJ = Jr - Jr_ref
        dJ[:, common] = 0.0
        moment += (R @ gear[3:]) @ dJ
    return float(length), moment


def body_transmission(model: Model, d: Data, body: int, contacts) -> np.ndarray:
    """The moment (nv,) of an adhesion actuator on `body`: minus the mean over the contacts that touch it (a
    physai.engine.contact.ContactSet, None for none) of their normal rows n^T (J_body2 - J_body1) at the contact point
    (what MuJoCo's mean of the normal efc rows, or of a pyramid's, adds up to); zero without such contacts."""
    moment, count = np.zeros(model.nv), 0
    if contacts is None:
        return moment
    for c in np.flatnonzero((contacts.body1 == body) | (contacts.body2 == body)).tolist():
        count += 1
        J1, J2 = (point_jacobians(model, d, int(b), contacts.pos[c][None, :, None])[0, :3, :, 0]
                  for b in (contacts.body1[c], contacts.body2[c]))
        moment += contacts.frame[c, 0] @ (J2 - J1)
    # moment = -sum n^T (J2 - J1) / count
    return -moment / count if count else moment


def transmission(actuators: Actuators, model: Model, d: Data, q: np.ndarray, contacts=None) -> tuple[np.ndarray, np.ndarray]:
    """(actuator_length (nu,) [m | rad], actuator_moment (nu, nv)) at q (nq,) (MuJoCo's mj_transmission), from a
    one-state Data with com_pos done: the constant rows as qmoment q and moment, the posed_each rows computed (joint_transmission,
    slider_crank, site_transmission, a spatial tendon's length and Jacobian times the gear, body_transmission with the
    contacts of q (a physai.engine.contact.ContactSet, None: none)); one pass of the bodies' MuJoCo-order poses serves
    the sites and the spatial tendons."""
    length, moment = actuators.qmoment @ q, actuators.moment.copy()
    posed_rows = np.flatnonzero(actuators.posed_each)
    kinds = actuators.trntype[posed_rows]
    sites, spatial = np.isin(kinds, (TRN_SLIDERCRANK, TRN_SITE)).any(), (kinds == TRN_TENDON).any()
    poses = body_poses(model, q) if sites or spatial else None
    frames = SiteFrames(model, q, poses) if sites else None
    ten_length, ten_J = tendons(model, d, q, poses) if spatial else (None, None)
    for a, kind in zip(posed_rows.tolist(), kinds.tolist()):
        if kind in (TRN_JOINT, TRN_JOINTINPARENT):
            length[a], moment[a] = joint_transmission(actuators, model, q, a)
        elif kind == TRN_SLIDERCRANK:
            length[a], moment[a] = slider_crank(actuators, model, d, frames, a)
        elif kind == TRN_SITE:
            length[a], moment[a] = site_transmission(actuators, model, d, frames, a)
        elif kind == TRN_TENDON:                       # L = gear ten_length, moment = gear ten_J
            t, gear = int(actuators.trnid[a, 0]), actuators.gear6[a, 0]
            length[a], moment[a] = ten_length[t] * gear, ten_J[t] * gear
        else:
            length[a], moment[a] = 0.0, body_transmission(model, d, int(actuators.trnid[a, 0]), contacts)
    return length, moment


def posed(actuators: Actuators, model: Model, d: Data, q: np.ndarray, contacts=None) -> Actuators:
    """The actuators with the moment arms and lengths of the state q (transmission), or themselves when none depends on
    the configuration."""
    if not actuators.posed_some:
        return actuators
    length, moment = transmission(actuators, model, d, q, contacts)
    return dataclasses.replace(actuators, moment=moment, length=length)


# ---- activation dynamics ----


def muscle_dynamics(u: np.ndarray, act: np.ndarray, prm: np.ndarray) -> np.ndarray:
    """act_dot of muscles (mju_muscleDynamics) for controls u, activations act and prm (., 3) = (tau_act, tau_deact,
    smoothing width): (clip(u, 0, 1) - act) / tau, tau the activation or deactivation time scaled by clip(act, 0, 1)."""
    a = np.clip(act, 0.0, 1.0)
    tau_act = prm[:, 0] * (0.5 + 1.5 * a)                  # activation and deactivation time scales
    tau_deact = prm[:, 1] / (0.5 + 1.5 * a)
    width = prm[:, 2]
    dctrl = np.clip(u, 0.0, 1.0) - act
    x = dctrl / np.where(width < MINVAL, 1.0, width) + 0.5     # smooth switching: quintic sigmoid of x
    s = np.where(x <= 0, 0.0, np.where(x >= 1, 1.0, x * x * x * (3 * x * (2 * x - 5) + 10)))
    tau = np.where(width < MINVAL, np.where(dctrl > 0, tau_act, tau_deact), tau_deact + (tau_act - tau_deact) * s)
    return dctrl / np.maximum(MINVAL, tau)


def activation_rate(actuators: Actuators, u: np.ndarray, act: np.ndarray) -> np.ndarray:
    """act_dot (na,) [1/s] of the stateful actuators (their activations act (na,), clamped controls u (nu,)):
    integrator u; filter and filterexact (u - act) / tau; muscle mju_muscleDynamics."""
    if not actuators.na:                               # none stateful: no rate (its empty arrays' work skipped)
        return np.zeros(0)
    s = actuators.stateful
    dyn, prm, us = actuators.dyntype[s], actuators.dynprm[s], u[s]
    tau = np.maximum(MINVAL, prm[:, 0])
    rate = np.where(dyn == DYN_INTEGRATOR, us, (us - act) / tau)
    return np.where(dyn == DYN_MUSCLE, muscle_dynamics(us, act, prm), rate)


def next_activation(actuators: Actuators, act: np.ndarray, act_dot: np.ndarray, h: float) -> np.ndarray:
    """act after a step of h [s] at the rate act_dot (mj_nextActivation): act + h act_dot (filterexact: exactly,
    act + act_dot tau (1 - exp(-h / tau))), clamped to actrange where actlimited."""
    s = actuators.stateful
    tau = np.maximum(MINVAL, actuators.dynprm[s, 0])
    exact = actuators.dyntype[s] == DYN_FILTEREXACT
    nxt = np.where(exact, act + act_dot * (tau * (1 - np.exp(-h / tau))), act + act_dot * h)
    lo, hi = actuators.actrange[s, 0], actuators.actrange[s, 1]
    return np.where(actuators.actlimited[s], np.clip(nxt, lo, hi), nxt)


# ---- gain and bias ----


def _muscle_scales(length, lengthrange, acc0, prm):
    """(force, L0, L): the muscles' peak force (prm's force, or scale / acc0 when negative), optimal length L0 and
    normalized length L (mju_muscleGain's first lines)."""
    force = np.where(prm[:, 2] < 0, prm[:, 3] / np.maximum(MINVAL, acc0), prm[:, 2])
    L0 = (lengthrange[:, 1] - lengthrange[:, 0]) / np.maximum(MINVAL, prm[:, 1] - prm[:, 0])
    L = prm[:, 0] + (length - lengthrange[:, 0]) / np.maximum(MINVAL, L0)
    return force, L0, L


def muscle_gain_length(L, lmin, lmax):
    """The muscles' normalized active force-length curve FL(L) (mju_muscleGainLength): two half-quadratics each side
    of its peak 1 at L = 1, zero outside [lmin, lmax]."""
    a, b = 0.5 * (lmin + 1), 0.5 * (1 + lmax)
    rising = np.where(L <= a, 0.5 * ((L - lmin) / np.maximum(MINVAL, a - lmin)) ** 2,
                      1 - 0.5 * ((1 - L) / np.maximum(MINVAL, 1 - a)) ** 2)
    falling = np.where(L <= b, 1 - 0.5 * ((L - 1) / np.maximum(MINVAL, b - 1)) ** 2,
                       0.5 * ((lmax - L) / np.maximum(MINVAL, lmax - b)) ** 2)
    return np.where((lmin <= L) & (L <= lmax), np.where(L <= 1, rising, falling), 0.0)


def muscle_gain(length, velocity, lengthrange, acc0, prm, derivative: bool = False):
    """The muscles' gain -force FL(L) FV(V) (mju_muscleGain), prm (., 9) = (range (2), force, scale, lmin, lmax, vmax,
    fpmax, fvmax); derivative: its derivative in the velocity instead (mjd_muscleGain_vel)."""
    force, L0, L = _muscle_scales(length, lengthrange, acc0, prm)
    vscale = np.maximum(MINVAL, L0 * prm[:, 6])
    V, fvmax = velocity / vscale, prm[:, 8]
    y = fvmax - 1
    if derivative:                                     # dFV/dV on each piece
        FV = np.where(V <= -1, 0.0, np.where(V <= 0, 2 * V + 2, np.where(V <= y, (-2 * V + 2 * y) / np.maximum(MINVAL, y),
                                                                          0.0)))
    else:                                              # the force-velocity curve FV(V)
        FV = np.where(V <= -1, 0.0, np.where(V <= 0, (V + 1) * (V + 1),
                                             np.where(V <= y, fvmax - (y - V) * (y - V) / np.maximum(MINVAL, y), fvmax)))
    FL = muscle_gain_length(L, prm[:, 4], prm[:, 5])
    return -force * FL * FV / vscale if derivative else -force * FL * FV


def muscle_bias(length, lengthrange, acc0, prm):
    """The muscles' passive force (mju_muscleBias): -force fpmax times a half-quadratic in L from 1 to
    b = (1 + lmax) / 2, linear beyond."""
    force, _, L = _muscle_scales(length, lengthrange, acc0, prm)
    b, fpmax = 0.5 * (1 + prm[:, 5]), prm[:, 7]
    x = (L - 1) / np.maximum(MINVAL, b - 1)
    beyond = (L - b) / np.maximum(MINVAL, b - 1)
    return np.where(L <= 1, 0.0, np.where(L <= b, -force * fpmax * 0.5 * x * x, -force * fpmax * (0.5 + beyond)))


def gains(actuators: Actuators, length: np.ndarray, velocity: np.ndarray) -> np.ndarray:
    """Each actuator's gain (nu,): g0 (fixed), g0 + g1 length + g2 velocity (affine), or muscle_gain."""
    g, affine = actuators.gain, actuators.gain_affine
    if not affine.some:                                # fixed (muscles overwritten below)
        gain = g[:, 0].copy()
    else:
        gain = g[:, 0] + g[:, 1] * length + g[:, 2] * velocity
        gain = gain if affine.every else np.where(affine.each, gain, g[:, 0])
    if actuators.gain_muscle.some:
        m = actuators.gain_muscle.each
        gain[m] = muscle_gain(length[m], velocity[m], actuators.lengthrange[m], actuators.acc0[m], actuators.gainprm[m])
    return gain


def biases(actuators: Actuators, length: np.ndarray, velocity: np.ndarray) -> np.ndarray:
    """Each actuator's bias (nu,): b0 + b1 length + b2 velocity (affine; zero for none), or muscle_bias."""
    b, affine = actuators.bias, actuators.bias_affine
    if not affine.some:                                # none (muscles overwritten below)
        bias = np.zeros(actuators.nu)
    else:
        bias = b[:, 0] + b[:, 1] * length + b[:, 2] * velocity
        bias = bias if affine.every else np.where(affine.each, bias, 0.0)
    if actuators.bias_muscle.some:
        m = actuators.bias_muscle.each
        bias[m] = muscle_bias(length[m], actuators.lengthrange[m], actuators.acc0[m], actuators.biasprm[m])
    return bias


def inputs(actuators: Actuators, u: np.ndarray, act: np.ndarray, act_dot: np.ndarray, h: float) -> np.ndarray:
    """What each gain multiplies (nu,): u for dyntype none, else the actuator's activation (with actearly its next
    one, next_activation)."""
    if not actuators.na:
        return u
    s = actuators.stateful
    early = next_activation(actuators, act, act_dot, h)
    x = u.copy()
    x[s] = np.where(actuators.actearly[s], early, act)
    return x


def raw_forces(actuators: Actuators, q: np.ndarray, qd: np.ndarray, u: np.ndarray, act: np.ndarray | None = None,
               act_dot: np.ndarray | None = None, h: float = 0.0) -> np.ndarray:
    """Each actuator's force before its limits (nu,) [N m | N]: gain input + bias (inputs, gains, biases) for clamped
    controls u, activations act and their rate act_dot (na,; None without stateful actuators), h [s] the step of
    actearly."""
    check_posed(actuators)
    # fixed gains and no biases (motors) read no length or velocity
    length, velocity = lengths_velocities(actuators, q, qd) if actuators.reads_length else (None, None)
    return gains(actuators, length, velocity) * inputs(actuators, u, act, act_dot, h) + biases(actuators, length, velocity)


def tendon_totals(actuators: Actuators, raw: np.ndarray) -> np.ndarray:
    """(nu,) the sum of the forces raw (nu,) over the actuators on actuator a's force-limited tendon (tendon_frcid),
    summed in actuator order as mj_fwdActuation; 0 for an actuator on none."""
    t = actuators.tendon_frcid
    total = np.zeros(actuators.nu)
    for a in np.flatnonzero(t >= 0).tolist():
        total[t == t[a]] += raw[a]
    return total


def tendon_scaled(actuators: Actuators, raw: np.ndarray) -> np.ndarray:
    """The forces raw (nu,) with those on a force-limited tendon whose total T (tendon_totals) is outside its
    tendon_frcrange [low, high] scaled: f = raw (low / T) below, raw (high / T) above (mj_fwdActuation)."""
    total = tendon_totals(actuators, raw)
    lo, hi = actuators.tendon_frcrange.T
    on = (actuators.tendon_frcid >= 0) & (total != 0)
    safe = np.where(on, total, 1.0)
    scale = np.where(on & (total < lo), lo / safe, np.where(on & (total > hi), hi / safe, 1.0))
    return raw * scale


TENDON_AT = 1e-12      # a force-limited tendon's final total this near a limit is at it (the scaled total, rounded)


def tendon_saturated(actuators: Actuators, f: np.ndarray) -> np.ndarray:
    """(nu,) bool: the actuators on a force-limited tendon whose total of the final forces f (nu,; limited_forces:
    scaled, then clamped to forcerange) is at (within TENDON_AT) or beyond its tendon_frcrange: their force no longer
    moves with the velocity (MuJoCo 4.0's implicit derivatives decide from actuator_force, not the total before the
    limits: an actuator's own forcerange can move a scaled total back inside, or a total inside out)."""
    total = tendon_totals(actuators, f)
    lo, hi = actuators.tendon_frcrange.T
    return (actuators.tendon_frcid >= 0) & ((total <= lo + TENDON_AT) | (total >= hi - TENDON_AT))


def limited_forces(actuators: Actuators, raw: np.ndarray) -> np.ndarray:
    """The scalar forces (nu,) of the forces raw (nu,) before the limits: scaled on their force-limited tendons
    (tendon_scaled), then clamped to forcerange where forcelimited (mj_fwdActuation's order)."""
    f = tendon_scaled(actuators, raw) if actuators.tendon_limited else raw
    return clamped(f, actuators.force_limits)


def scalar_forces(actuators: Actuators, q: np.ndarray, qd: np.ndarray, u: np.ndarray, act: np.ndarray | None = None,
                  act_dot: np.ndarray | None = None, h: float = 0.0) -> np.ndarray:
    """The scalar actuator forces f (nu,) [N m | N] (MuJoCo's actuator_force) for clamped controls u, activations act
    and their rate act_dot (na,; None without stateful actuators), h [s] the step of actearly: raw_forces within their
    limits (limited_forces: a force-limited tendon's total, then forcerange)."""
    return limited_forces(actuators, raw_forces(actuators, q, qd, u, act, act_dot, h))


def joint_force(actuators: Actuators, f: np.ndarray) -> np.ndarray:
    """moment^T f (nv,) clamped to dof_forcerange where dof_forcelimited (MuJoCo's qfrc_actuator)."""
    check_posed(actuators)
    tau = actuators.moment.T @ f
    return clamped(tau, actuators.dof_limits)


def joint_saturated(actuators: Actuators, f: np.ndarray) -> np.ndarray:
    """(nu,) bool: the joint actuators (joint_dof >= 0) whose dof's total moment^T f, for the scalar forces f (nu,), is
    at or beyond its dof_forcerange where dof_forcelimited: their force no longer moves with the velocity."""
    tau = actuators.moment.T @ f
    lo, hi = actuators.dof_forcerange.T
    saturated = actuators.dof_forcelimited & ((tau <= lo) | (tau >= hi))      # the dofs clamped at a limit
    j = actuators.joint_dof
    return (j >= 0) & saturated[np.maximum(j, 0)]


def velocity_derivative(actuators: Actuators, q: np.ndarray, qd: np.ndarray, u: np.ndarray, raw: np.ndarray,
                        act: np.ndarray | None = None, act_dot: np.ndarray | None = None, h: float = 0.0) -> np.ndarray:
    """d qfrc_actuator / d qd (nv, nv) (mjd_actuator_vel) at clamped controls u and forces raw before their limits
    (raw_forces): sum_a moment_a^T (dbias/dvelocity + dgain/dvelocity input_a) moment_a over the actuators whose force
    is inside its forcerange, not joint_saturated and not tendon_saturated, each decided from the final forces
    (unsaturated)."""
    length, velocity = lengths_velocities(actuators, q, qd)
    gain_vel = np.where(actuators.gaintype == AFFINE, actuators.gain[:, 2], 0.0)
    m = actuators.gaintype == MUSCLE
    if m.any():
        gain_vel[m] = muscle_gain(length[m], velocity[m], actuators.lengthrange[m], actuators.acc0[m],
                                  actuators.gainprm[m], derivative=True)
    k = servo_slopes(actuators, u, raw, act, act_dot, h, gain_vel, 2)
    return actuators.moment.T @ (k[:, None] * actuators.moment)


def unsaturated(actuators: Actuators, raw: np.ndarray) -> np.ndarray:
    """(nu,) bool: the actuators whose derivatives MuJoCo 4.0 keeps, for the forces raw (nu,) before their limits:
    the scalar force (limited_forces) strictly inside forcerange (or unlimited), not joint_saturated, not
    tendon_saturated, all three decided from the final forces."""
    f = limited_forces(actuators, raw)
    lo, hi = actuators.forcerange[:, 0], actuators.forcerange[:, 1]
    free = (~actuators.forcelimited | ((f > lo) & (f < hi))) & ~joint_saturated(actuators, f)
    return free & ~tendon_saturated(actuators, f)


def servo_slopes(actuators: Actuators, u: np.ndarray, raw: np.ndarray, act, act_dot, h: float, gain_slope: np.ndarray,
                 column: int) -> np.ndarray:
    """d force / d x (nu,) of each actuator's scalar force, x its length (column 1) or velocity (column 2): the affine
    bias's slope plus gain_slope times the input (inputs), zero for an actuator saturated by its forcerange, its
    joint's or its tendon's actuatorfrcrange (unsaturated) at the forces raw (nu,) before their limits."""
    bias_slope = np.where(actuators.biastype == AFFINE, actuators.bias[:, column], 0.0)
    return np.where(unsaturated(actuators, raw), bias_slope + gain_slope * inputs(actuators, u, act, act_dot, h), 0.0)


def servo_metric(actuators: Actuators, q: np.ndarray, qd: np.ndarray, ctrl: np.ndarray, act=None,
                 dt: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(B, K) (nv, nv): the actuators' part of MuJoCo 4's discrete-step metric M + h B + h^2 K, sum_a moment_a^T
    max(-d force_a / d x, 0) moment_a with x the actuator's velocity (B) or length (K): each slope (servo_slopes) kept
    only with the stabilizing sign. UnsupportedModelError for muscles (their gain and bias are not affine)."""
    if (actuators.gaintype == MUSCLE).any() or (actuators.biastype == MUSCLE).any():
        raise UnsupportedModelError("the discrete integrator with muscle actuators (MuJoCo folds their length and "
                                    "velocity slopes into its step's metric; physai does not): choose another integrator")
    q, qd, act, dt = check_state(actuators, q, qd, act, dt)
    u = clamped_ctrl(actuators, ctrl)
    act_dot = activation_rate(actuators, u, act)
    raw = raw_forces(actuators, q, qd, u, act, act_dot, dt)
    B, K = (np.maximum(-servo_slopes(actuators, u, raw, act, act_dot, dt,
                                     np.where(actuators.gaintype == AFFINE, actuators.gain[:, column], 0.0), column), 0.0)
            for column in (2, 1))
    return tuple(actuators.moment.T @ (c[:, None] * actuators.moment) for c in (B, K))


__all__ = ["MINVAL", "SiteFrames", "TENDON_AT", "activation_rate", "biases", "body_transmission", "check_posed", "clamped",
           "clamped_ctrl", "conjugate", "gains", "inputs", "joint_force", "joint_saturated", "joint_transmission", "lengths_velocities",
           "muscle_bias", "muscle_dynamics", "muscle_gain", "muscle_gain_length", "next_activation", "posed",
           "quat_to_vel", "raw_forces", "limited_forces", "scalar_forces", "servo_metric", "servo_slopes",
           "site_jacobian", "site_transmission", "slider_crank", "tendon_saturated", "tendon_scaled", "tendon_totals",
           "transmission", "unsaturated", "velocity_derivative"]


def force_velocity_derivative(actuators: Actuators, q: np.ndarray, qd: np.ndarray, ctrl: np.ndarray, act=None,
                              dt: float | None = None) -> np.ndarray:
    """d qfrc_actuator / d qd (nv, nv) at (q, qd, act) with ctrl (physai.forces.actuator_velocity_derivative, which
    explains it; the implicit integrators' damping matrix through physai.engine.forward.velocity_derivative): the
    state checked (check_state), ctrl clamped, then velocity_derivative of the scalar forces."""
    q, qd, act, dt = check_state(actuators, q, qd, act, dt)
    u = clamped_ctrl(actuators, ctrl)
    act_dot = activation_rate(actuators, u, act)
    return velocity_derivative(actuators, q, qd, u, raw_forces(actuators, q, qd, u, act, act_dot, dt), act, act_dot, dt)
