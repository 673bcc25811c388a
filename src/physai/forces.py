"""The right-hand side of the equations of motion: the generalized forces that make a tree move.

    M(q) qdd + c(q, qd) = tau_actuator + tau_passive + tau_applied + J^T f

    passive_force(model, q, qd)                joint dampers and springs            (MuJoCo's qfrc_passive)
    actuator_force(actuators, q, qd, ctrl)     motors, servos, general actuators    (qfrc_actuator)
    applied_force(model, q, qfrc, xfrc)        forces you push with                 (qfrc_applied + xfrc_applied)
    constraint_force(J, f)                     J^T f of any constraint or contact force f

All are (nv,) vectors in [N m] for rotations and [N] for translations; q is (nq,). `model` is a
physai.engine.Model (or anything physai.engine.as_model takes: a Tree, an MjModel, a model name).
Actuators are read from a MuJoCo model by actuators_from_mujoco; actuator_velocity_derivative gives
d tau_actuator / d qd for implicit integrators.
"""

from dataclasses import dataclass

import mujoco
import numpy as np

from physai import _checks
from physai.exceptions import InvalidModelError, ShapeError, UnsupportedModelError

# ---- passive forces ----


def passive_force(model, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """Joint damping and spring forces -damping qd - stiffness (q - springref) (nv,) [N m | N].

    Damping acts on every dof, springs on hinges and slides. Equals MuJoCo's qfrc_passive on a model whose
    passive forces are joint dampers and springs only (no gravity compensation, fluid forces, tendon springs or
    polynomial damping).
    """
    from physai.engine import as_model

    model = as_model(model)
    q, qd = _checks.vector("q", q, model.nq), _checks.vector("qd", qd, model.nv)
    return _passive(model, q, qd)


def _passive(model, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """passive_force without checks, for q (nq, ...) and qd (nv, ...) (a batch keeps the state index last)."""
    f = -model.dof_damping.reshape((-1,) + (1,) * (qd.ndim - 1)) * qd
    k = model._spring_k.reshape((-1,) + (1,) * (q.ndim - 1))
    f[model._spring_v] -= k * (q[model._spring_q] - model._spring_ref.reshape(k.shape))
    return f


# ---- actuators ----


@dataclass(eq=False)
class Actuators:
    """The nu actuators of a model, each a scalar force acting along a transmission with constant moment arms.

    moment:      (nu, nv) transmission: actuator a has length moment[a] @ q and velocity moment[a] @ qd, and
                 its scalar force f_a adds moment[a] * f_a to qfrc_actuator (MuJoCo's actuator_moment).
                 A joint transmission puts the gear at the joint's dof; a fixed tendon puts gear * coef at
                 each of its joints' dofs.
    gain:        (nu, 3) (g0, g1, g2): gain = g0 + g1 length + g2 velocity
    bias:        (nu, 3) (b0, b1, b2): bias = b0 + b1 length + b2 velocity
                 so that f = gain ctrl + bias, MuJoCo's affine form (a motor: gain (1, 0, 0), bias 0;
                 a position servo: gain (kp, 0, 0), bias (0, -kp, -kv); a velocity servo: gain (kv, 0, 0),
                 bias (0, 0, -kv))
    ctrlrange:   (nu, 2) [low, high] of ctrl, used where ctrllimited (nu,) is True
    forcerange:  (nu, 2) [low, high] of f, used where forcelimited (nu,) is True
    names:       (nu,) labels used in messages
    qmoment:     (nu, nq) length map: length = qmoment q (MuJoCo's actuator_length); None means moment
                 (a model whose nq equals nv)
    dof_forcerange, dof_forcelimited: (nv, 2), (nv,) limits of the total actuator force on each dof
                 (MuJoCo's joint actuatorfrcrange); None means unlimited
    Arrays of the wrong shape raise ShapeError, NaN or infinity InvalidStateError, a used range with
    low > high InvalidModelError.
    """

    moment: np.ndarray
    gain: np.ndarray
    bias: np.ndarray
    ctrlrange: np.ndarray
    ctrllimited: np.ndarray
    forcerange: np.ndarray
    forcelimited: np.ndarray
    names: tuple = ()
    qmoment: np.ndarray | None = None
    dof_forcerange: np.ndarray | None = None
    dof_forcelimited: np.ndarray | None = None

    def __post_init__(self):
        self.moment = _matrix("moment", self.moment, "(nu, nv)")
        nu = self.nu
        self.qmoment = self.moment if self.qmoment is None else _matrix("qmoment", self.qmoment, "(nu, nq)")
        if self.qmoment.shape[0] != nu:
            raise ShapeError(f"qmoment has {self.qmoment.shape[0]} rows, there are nu = {nu} actuators")
        nv = self.nv
        self.dof_forcerange = np.zeros((nv, 2)) if self.dof_forcerange is None else \
            _checks.as_array("dof_forcerange", self.dof_forcerange, (nv, 2))
        self.dof_forcelimited = np.zeros(nv, bool) if self.dof_forcelimited is None else \
            _flags("dof_forcelimited", self.dof_forcelimited, nv)
        self.gain = _checks.as_array("gain", self.gain, (nu, 3))
        self.bias = _checks.as_array("bias", self.bias, (nu, 3))
        self.ctrlrange = _checks.as_array("ctrlrange", self.ctrlrange, (nu, 2))
        self.forcerange = _checks.as_array("forcerange", self.forcerange, (nu, 2))
        self.ctrllimited = _flags("ctrllimited", self.ctrllimited, nu)
        self.forcelimited = _flags("forcelimited", self.forcelimited, nu)
        self.names = tuple(self.names) or tuple(f"actuator{a}" for a in range(nu))
        if len(self.names) != nu:
            raise ShapeError(f"names has {len(self.names)} entries, there are nu = {nu} actuators")
        for what, limits, limited in (("ctrl", self.ctrlrange, self.ctrllimited), ("force", self.forcerange, self.forcelimited)):
            bad = np.flatnonzero(limited & (limits[:, 0] > limits[:, 1]))
            if bad.size:
                a = int(bad[0])
                raise InvalidModelError(f"actuator {self.names[a]!r}: {what}range is [{limits[a, 0]:g}, {limits[a, 1]:g}], "
                                        f"low > high; a limited {what}range needs low <= high")

    @property
    def nu(self) -> int:
        """Number of actuators (the length of ctrl)."""
        return self.moment.shape[0]

    @property
    def nv(self) -> int:
        """Number of degrees of freedom the actuators act on."""
        return self.moment.shape[1]

    @property
    def nq(self) -> int:
        """Number of position coordinates of the model the actuators belong to."""
        return self.qmoment.shape[1]


def _matrix(name: str, x, shape: str) -> np.ndarray:
    """x as a finite 2-D float array: ShapeError if it is ragged or not 2-D, InvalidStateError for NaN or infinity."""
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ShapeError(f"{name} must be an {shape} array, got {type(x).__name__}: {exc}") from None
    if a.ndim != 2:
        raise ShapeError(f"{name} must be an {shape} array, got shape {a.shape}")
    return _checks.as_array(name, a, a.shape)


def _flags(name: str, x, nu: int) -> np.ndarray:
    """x as a boolean array (nu,); ShapeError naming `name` otherwise."""
    a = np.asarray(x)
    if a.shape != (nu,):
        raise ShapeError(f"{name} must have one entry per actuator, shape ({nu},), got shape {a.shape}")
    return a.astype(bool)


def actuators_from_mujoco(m) -> Actuators:
    """The Actuators of a compiled MuJoCo model (static model data only).

    Supported: motor, position, velocity and general actuators without activation dynamics (dyntype none),
    with fixed or affine gain and no or affine bias, on a hinge or slide joint or on a fixed tendon.
    Anything else raises UnsupportedModelError naming the actuator. Controls are not clamped if the model
    disables clampctrl; with actuation disabled every moment arm is zero.
    """
    nu, nv = m.nu, m.nv
    if nu and m.ngravcomp and np.any(m.jnt_actgravcomp):
        j = int(np.flatnonzero(m.jnt_actgravcomp)[0])
        raise UnsupportedModelError(f"joint {m.joint(j).name!r} takes its gravity compensation through the actuators "
                                    "(actuatorgravcomp); physai does not model gravity compensation")
    moment, qmoment, gain, bias = np.zeros((nu, nv)), np.zeros((nu, m.nq)), np.zeros((nu, 3)), np.zeros((nu, 3))
    names = []
    for a in range(nu):
        name = m.actuator(a).name or f"actuator{a}"
        names.append(name)
        _check_actuator(m, a, name)
        gear = m.actuator_gear[a, 0]
        trn, target = int(m.actuator_trntype[a]), int(m.actuator_trnid[a, 0])
        if trn in (mujoco.mjtTrn.mjTRN_JOINT, mujoco.mjtTrn.mjTRN_JOINTINPARENT):
            moment[a, m.jnt_dofadr[target]] = gear   # hinge or slide: length = gear * qpos
            qmoment[a, m.jnt_qposadr[target]] = gear
        else:                                        # fixed tendon: length = gear * sum coef * qpos
            for w in range(m.tendon_adr[target], m.tendon_adr[target] + m.tendon_num[target]):
                moment[a, m.jnt_dofadr[m.wrap_objid[w]]] += gear * m.wrap_prm[w]
                qmoment[a, m.jnt_qposadr[m.wrap_objid[w]]] += gear * m.wrap_prm[w]
        g, b = m.actuator_gainprm[a], m.actuator_biasprm[a]
        gain[a] = (g[0], 0, 0) if int(m.actuator_gaintype[a]) == mujoco.mjtGain.mjGAIN_FIXED else g[:3]
        bias[a] = (0, 0, 0) if int(m.actuator_biastype[a]) == mujoco.mjtBias.mjBIAS_NONE else b[:3]
    if m.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_ACTUATION:
        moment[:] = qmoment[:] = 0.0
    dof_forcerange, dof_forcelimited = np.zeros((nv, 2)), np.zeros(nv, bool)
    for j in np.flatnonzero(m.jnt_actfrclimited):     # limits of the total actuator force on a hinge or slide
        if int(m.jnt_type[j]) not in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE):
            raise UnsupportedModelError(f"joint {m.joint(j).name!r} limits its total actuator force (actuatorfrcrange) "
                                        "on a ball or free joint; physai does this on hinges and slides")
        dof_forcerange[m.jnt_dofadr[j]], dof_forcelimited[m.jnt_dofadr[j]] = m.jnt_actfrcrange[j], True
    ctrllimited = m.actuator_ctrllimited.astype(bool)
    if m.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_CLAMPCTRL:
        ctrllimited[:] = False
    return Actuators(moment, gain, bias, m.actuator_ctrlrange.copy(), ctrllimited, m.actuator_forcerange.copy(),
                     m.actuator_forcelimited.astype(bool), tuple(names), qmoment, dof_forcerange, dof_forcelimited)


def _check_actuator(m, a: int, name: str) -> None:
    """Raise UnsupportedModelError if actuator a uses a feature actuator_force does not model."""
    def refuse(what: str):
        raise UnsupportedModelError(f"actuator {name!r}: {what}; physai supports actuators without activation "
                                    "dynamics, with affine gain and bias, on a hinge or slide joint or a fixed tendon")

    dyn, gtype, btype = int(m.actuator_dyntype[a]), int(m.actuator_gaintype[a]), int(m.actuator_biastype[a])
    if dyn != mujoco.mjtDyn.mjDYN_NONE:
        refuse(f"activation dynamics {mujoco.mjtDyn(dyn).name} (dyntype must be none)")
    if gtype not in (mujoco.mjtGain.mjGAIN_FIXED, mujoco.mjtGain.mjGAIN_AFFINE):
        refuse(f"gain type {mujoco.mjtGain(gtype).name}")
    if btype not in (mujoco.mjtBias.mjBIAS_NONE, mujoco.mjtBias.mjBIAS_AFFINE):
        refuse(f"bias type {mujoco.mjtBias(btype).name}")
    trn, target = int(m.actuator_trntype[a]), int(m.actuator_trnid[a, 0])
    if trn in (mujoco.mjtTrn.mjTRN_JOINT, mujoco.mjtTrn.mjTRN_JOINTINPARENT):
        jtype = int(m.jnt_type[target])
        if jtype not in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE):
            refuse(f"its joint {m.joint(target).name!r} is a {mujoco.mjtJoint(jtype).name} joint")
    elif trn == mujoco.mjtTrn.mjTRN_TENDON:
        wraps = range(m.tendon_adr[target], m.tendon_adr[target] + m.tendon_num[target])
        if any(int(m.wrap_type[w]) != mujoco.mjtWrap.mjWRAP_JOINT for w in wraps):
            refuse(f"its tendon {m.tendon(target).name!r} is spatial (only fixed tendons have constant moment arms)")
        if m.tendon_actfrclimited[target]:
            refuse(f"its tendon {m.tendon(target).name!r} limits the total actuator force (actuatorfrcrange)")
    else:
        refuse(f"transmission {mujoco.mjtTrn(trn).name} (a joint or a fixed tendon is needed)")
    checks = [
        (m.actuator_plugin[a] >= 0, "it is a plugin"),
        (m.actuator_ctrlnum[a] != 1 or m.actuator_outnum[a] != 1, "it has more than one control or output"),
        (m.actuator_delay[a] != 0, "it has a control delay"),
        (m.actuator_damping[a] != 0 or np.any(m.actuator_dampingpoly[a]), "it has actuator damping"),
        (m.actuator_armature[a] != 0, "it has actuator armature"),
        ((m.opt.disableactuator >> int(m.actuator_group[a])) & 1 if 0 <= m.actuator_group[a] < 31 else False,
         f"its group {m.actuator_group[a]} is disabled"),
    ]
    for bad, what in checks:
        if bad:
            refuse(what)


def _ctrl(actuators: Actuators, ctrl) -> np.ndarray:
    """ctrl checked to have nu finite entries and clamped to ctrlrange where ctrllimited."""
    u = np.asarray(ctrl, dtype=float)
    if u.shape != (actuators.nu,):
        got = f"{u.shape[0]} entries" if u.ndim == 1 else f"shape {u.shape}"
        raise ShapeError(f"ctrl has {got}, the model has nu = {actuators.nu} actuators (one control each)")
    u = _checks.vector("ctrl", u, actuators.nu)
    return np.where(actuators.ctrllimited, np.clip(u, actuators.ctrlrange[:, 0], actuators.ctrlrange[:, 1]), u)


def _state(actuators: Actuators, q, qd):
    return _checks.vector("q", q, actuators.nq), _checks.vector("qd", qd, actuators.nv)


def actuator_outputs(actuators: Actuators, q: np.ndarray, qd: np.ndarray, ctrl: np.ndarray) -> np.ndarray:
    """Scalar actuator forces f (nu,) [N m | N] (MuJoCo's actuator_force), as mj_fwdActuation computes them.

    ctrl is clamped to ctrlrange where ctrllimited; then f = gain ctrl + bias with
    gain = g0 + g1 length + g2 velocity, bias = b0 + b1 length + b2 velocity,
    length = moment q, velocity = moment qd; f is clamped to forcerange where forcelimited.
    """
    q, qd = _state(actuators, q, qd)
    return _outputs(actuators, q, qd, _ctrl(actuators, ctrl))


def _outputs(actuators: Actuators, q: np.ndarray, qd: np.ndarray, u: np.ndarray) -> np.ndarray:
    """actuator_outputs for checked, clamped controls u, without checking q and qd (a simulation's running state)."""
    length, velocity = actuators.qmoment @ q, actuators.moment @ qd
    g, b = actuators.gain, actuators.bias
    f = (g[:, 0] + g[:, 1] * length + g[:, 2] * velocity) * u + b[:, 0] + b[:, 1] * length + b[:, 2] * velocity
    return np.where(actuators.forcelimited, np.clip(f, actuators.forcerange[:, 0], actuators.forcerange[:, 1]), f)


def actuator_force(actuators: Actuators, q: np.ndarray, qd: np.ndarray, ctrl: np.ndarray) -> np.ndarray:
    """Generalized actuator force moment^T f (nv,) [N m | N] for controls ctrl (nu,); equals MuJoCo's qfrc_actuator.

    f are the clamped scalar forces of actuator_outputs; the total on a dof is clamped to dof_forcerange where
    dof_forcelimited. Raises ShapeError if ctrl does not have nu entries.
    """
    return _joint_force(actuators, actuator_outputs(actuators, q, qd, ctrl))


def _joint_force(actuators: Actuators, f: np.ndarray) -> np.ndarray:
    """moment^T f clamped to dof_forcerange where dof_forcelimited."""
    tau = actuators.moment.T @ f
    lo, hi = actuators.dof_forcerange.T
    return np.where(actuators.dof_forcelimited, np.clip(tau, lo, hi), tau)


def running_actuator_force(actuators: Actuators, q: np.ndarray, qd: np.ndarray, ctrl: np.ndarray) -> np.ndarray:
    """actuator_force inside a simulation: ctrl checked and clamped, q and qd taken as they come (a diverging state
    is NaN or infinite, and the simulator reports it as a divergence, by name)."""
    return _joint_force(actuators, _outputs(actuators, q, qd, _ctrl(actuators, ctrl)))


def actuator_velocity_derivative(actuators: Actuators, q: np.ndarray, qd: np.ndarray, ctrl: np.ndarray) -> np.ndarray:
    """d qfrc_actuator / d qd (nv, nv), the actuators' share of the implicit integrators' damping matrix.

    Each actuator adds moment[a]^T (b2 + g2 ctrl_a) moment[a]; for a joint actuator with gear r that is
    (b2 + g2 ctrl) r^2 on the joint's diagonal entry (-kv r^2 for a position or velocity servo). An actuator
    whose force is clamped at or beyond its forcerange contributes nothing, and ctrl_a is clamped to ctrlrange,
    as in MuJoCo's mjd_actuator_vel. MuJoCo's qDeriv keeps only the entries of its dof sparsity pattern, which
    links a dof to its ancestors and descendants: it drops the coupling a fixed tendon makes between dofs in
    different branches (the Panda's two fingers); this function returns the full derivative.
    """
    f = actuator_outputs(actuators, q, qd, ctrl)
    u = _ctrl(actuators, ctrl)
    lo, hi = actuators.forcerange[:, 0], actuators.forcerange[:, 1]
    free = ~actuators.forcelimited | ((f > lo) & (f < hi))
    df_dvelocity = np.where(free, actuators.bias[:, 2] + actuators.gain[:, 2] * u, 0.0)
    return actuators.moment.T @ (df_dvelocity[:, None] * actuators.moment)


# ---- applied forces ----


def applied_force(model, q: np.ndarray, qfrc_applied: np.ndarray | None = None,
                  xfrc_applied: np.ndarray | None = None) -> np.ndarray:
    """Generalized force (nv,) [N m | N] of forces pushed on the model from outside.

    qfrc_applied: (nv,) generalized forces, passed through (MuJoCo's qfrc_applied); None means zero.
    xfrc_applied: (nbody, 6) one wrench per body of the model, (force [N], torque [N m]) in world coordinates,
        the force acting at the body's centre of mass; None means zero. This is MuJoCo's xfrc_applied
        without its first row: MuJoCo's body 0 is the world and its body b + 1 is physai's body b,
        so pass d.xfrc_applied[1:] (MuJoCo's full array, nbody + 1 rows, is refused with that hint).
    Each wrench w_b acts through the Jacobian of its body's centre of mass: tau = sum_b J_b(com_b)^T w_b,
    with J_b = (Jp; Jr) of physai.jacobians.body_jacobian.
    """
    from physai import engine

    model = engine.as_model(model)
    tau = np.zeros(model.nv) if qfrc_applied is None else _checks.vector("qfrc_applied", qfrc_applied, model.nv).copy()
    if xfrc_applied is None:
        return tau
    xfrc = check_xfrc(model, xfrc_applied)
    q = _checks.vector("q", q, model.nq)
    d = engine.Data(model)
    engine.kinematics(model, d, q[:, None])
    engine.com_pos(model, d)
    return tau + body_wrench_force(model, d, xfrc)


def check_xfrc(model, xfrc_applied) -> np.ndarray:
    """xfrc_applied as a finite (nbody, 6) array; ShapeError (with the hint for MuJoCo's full array, whose row 0 is
    the world) or InvalidStateError otherwise."""
    nb = model.nbody
    try:
        return _checks.as_array("xfrc_applied", xfrc_applied, (nb, 6))
    except ShapeError as exc:
        if getattr(xfrc_applied, "shape", None) == (nb + 1, 6):
            raise ShapeError(f"{exc}: it has one row more than the model has bodies, as MuJoCo's d.xfrc_applied "
                             "(row 0 is the world); pass d.xfrc_applied[1:]") from None
        raise


def body_wrench_force(model, d, xfrc: np.ndarray) -> np.ndarray:
    """sum_b J_b(com_b)^T w_b (nv,) for checked wrenches xfrc (nbody, 6), from a one-state engine Data whose
    positions are done (kinematics, com_pos): what applied_force adds for xfrc_applied, without recomputing them."""
    from physai.jacobians import jacobians

    tau = np.zeros(model.nv)
    for b in np.flatnonzero(np.abs(xfrc).sum(axis=1)):
        tau += jacobians(model, d, int(b), model.body_ipos[b][None])[0, :, :, 0].T @ xfrc[b]
    return tau


def constraint_force(jacobian: np.ndarray, f: np.ndarray) -> np.ndarray:
    """Generalized force J^T f (nv,) [N m | N] of constraint or contact forces f (m,) acting through the Jacobian J (m, nv).

    Each f_i is in the units that make f_i times row i's velocity (J qd)_i a power [W]: a force [N] along a row
    that gives a point's velocity [m/s] (a contact normal or friction direction), a torque [N m] about a row that
    gives an angular velocity [rad/s], and a joint's own force [N m | N] for a row that picks a joint (a joint
    limit). MuJoCo's efc_force on its efc_J rows is such an f. J and f must be finite (InvalidStateError).
    """
    J = _matrix("jacobian", jacobian, "(m, nv)")
    return J.T @ _checks.vector("f", f, J.shape[0])
