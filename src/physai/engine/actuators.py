"""Actuators: the constant description of a model's motors and servos (MuJoCo's actuator_* arrays, for the actuators
physai models). physai.engine.loaders reads them from a MuJoCo model; physai.forces turns them into forces.
"""

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from physai import validation
from physai.exceptions import InvalidModelError, ShapeError

#: activation dynamics (MuJoCo's mjtDyn values): none, integrator, filter, filterexact, muscle
DYN_NONE, DYN_INTEGRATOR, DYN_FILTER, DYN_FILTEREXACT, DYN_MUSCLE = range(5)
#: gain and bias types (MuJoCo's mjtGain, mjtBias values): fixed (gain) or none (bias), affine, muscle
FIXED, AFFINE, MUSCLE = range(3)
#: transmission types (MuJoCo's mjtTrn values): joint, joint in the parent frame, slider-crank, tendon, site, body
TRN_JOINT, TRN_JOINTINPARENT, TRN_SLIDERCRANK, TRN_TENDON, TRN_SITE, TRN_BODY = range(6)


class Subset(NamedTuple):
    """The actuators of one kind (a gain or bias type): each (nu,) bool, and whether some (any) and every (all) actuator
    is of it, so that the force pipeline skips the work of an empty kind and the masking of a full one."""
    each: np.ndarray
    some: bool
    every: bool

    @classmethod
    def of(cls, each: np.ndarray) -> "Subset":
        return cls(each, bool(each.any()), bool(each.all()))


class Limits(NamedTuple):
    """A range [low, high] (n, 2) used where limited (n,) as bounds for np.clip: lo, hi (n,) the range's where limited,
    -inf and +inf elsewhere (np.clip(x, -inf, inf) is x, bit for bit, NaN too), and whether some entry is limited."""
    some: bool
    lo: np.ndarray
    hi: np.ndarray

    @classmethod
    def of(cls, limited: np.ndarray, limits: np.ndarray) -> "Limits":
        return cls(bool(limited.any()), np.where(limited, limits[:, 0], -np.inf), np.where(limited, limits[:, 1], np.inf))


@dataclass(eq=False)
class Actuators:
    """The nu actuators of a model, each a scalar force acting along a transmission: constant moment arms (hinges,
    slides, fixed tendons) or arms of the configuration (posed_each below).

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
    joint_dof:   (nu,) the dof of actuator a's joint transmission, -1 for a fixed tendon: a joint actuator whose
                 dof's total is at or beyond its dof_forcerange drops out of the implicit integrators' damping
                 (MuJoCo 4.0); None means each row of moment with one nonzero entry is a joint's, the others tendons
    tendon_frcid, tendon_frcrange: (nu,), (nu, 2) the tendon of actuator a's transmission when that tendon limits its
                 actuators' total force (MuJoCo's tendon_actfrclimited; -1: none) and that tendon's limits
                 (tendon_actfrcrange): the scalar forces on one such tendon, summed, outside [low, high] are scaled by
                 low / total or high / total, and those actuators drop out of the implicit integrators' damping where
                 the total is at or beyond its limits (MuJoCo 4.0); None means no such tendon
    dyntype:     (nu,) activation dynamics, MuJoCo's mjtDyn: DYN_NONE (default; the gain multiplies ctrl),
                 DYN_INTEGRATOR (act_dot = ctrl), DYN_FILTER and DYN_FILTEREXACT (act_dot = (ctrl - act) / tau),
                 DYN_MUSCLE (mju_muscleDynamics); a stateful actuator's gain multiplies its activation act
    dynprm:      (nu, 3) tau [s] of a filter; (tau_act, tau_deact, smoothing width) of a muscle
    gaintype, biastype: (nu,) FIXED (gain g0) / none (bias 0), AFFINE (default: gain and bias above), or MUSCLE
                 (mju_muscleGain, mju_muscleBias with gainprm, biasprm (nu, 9) = (range (2), force, scale, lmin, lmax,
                 vmax, fpmax, fvmax), lengthrange (nu, 2) [m | rad] and acc0 (nu,), MuJoCo's actuator_lengthrange
                 and actuator_acc0)
    actlimited, actrange: (nu,), (nu, 2) the activation's clamp after each step (mj_nextActivation)
    actearly:    (nu,) the force uses the next activation (act + h act_dot) rather than act
    posed_each:  (nu,) the actuators whose moment arms depend on the configuration (MuJoCo's mj_transmission: a ball or
                 free joint, a slider-crank, a site, a body's contacts, a spatial tendon); their rows of moment and
                 qmoment are zero and physai.engine.actuation.posed computes them at each state from
                 trntype (nu,) (TRN_JOINT ... TRN_BODY), trnid (nu, 2) (the joint, tendon, site or body, with the
                 slider site or refsite second, -1 for none; physai's own indices), gear6 (nu, 6) (MuJoCo's
                 actuator_gear) and cranklength (nu,) [m]; None: no such actuator
    length:      (nu,) the lengths at the state a posed copy was made at (physai.engine.actuation.posed), whose moment
                 holds that state's arms; None: qmoment q
    Made from them once (constant, as the arrays are; physai.engine.actuation branches on them): stateful (nu,) bool
    and act_index (nu,) (each stateful actuator's place in act, -1 for none); the Subsets (of the actuators)
    gain_affine, gain_muscle, bias_affine, bias_muscle (the gaintype and biastype) and reads_length (some gain or bias
    is affine or a muscle's: reads the actuators' lengths and velocities); the Limits ctrl_limits, force_limits,
    dof_limits (ctrlrange where ctrllimited, forcerange where forcelimited, dof_forcerange where dof_forcelimited);
    tendon_limited (some actuator on a force-limited tendon), posed_some (posed_each.any()) and nstateful (na).
    Arrays of the wrong shape raise ShapeError, NaN or infinity InvalidStateError, a used range with
    low > high or an unknown type InvalidModelError.
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
    joint_dof: np.ndarray | None = None
    tendon_frcid: np.ndarray | None = None
    tendon_frcrange: np.ndarray | None = None
    dyntype: np.ndarray | None = None
    dynprm: np.ndarray | None = None
    gaintype: np.ndarray | None = None
    biastype: np.ndarray | None = None
    gainprm: np.ndarray | None = None
    biasprm: np.ndarray | None = None
    lengthrange: np.ndarray | None = None
    acc0: np.ndarray | None = None
    actlimited: np.ndarray | None = None
    actrange: np.ndarray | None = None
    actearly: np.ndarray | None = None
    posed_each: np.ndarray | None = None
    trntype: np.ndarray | None = None
    trnid: np.ndarray | None = None
    gear6: np.ndarray | None = None
    cranklength: np.ndarray | None = None
    length: np.ndarray | None = None

    def __post_init__(self):
        self.moment = validation.matrix("moment", self.moment, "(nu, nv)")
        nu = self.nu
        self.qmoment = self.moment if self.qmoment is None else validation.matrix("qmoment", self.qmoment, "(nu, nq)")
        if self.qmoment.shape[0] != nu:
            raise ShapeError(f"qmoment has {self.qmoment.shape[0]} rows, there are nu = {nu} actuators")
        nv = self.nv
        self.dof_forcerange = np.zeros((nv, 2)) if self.dof_forcerange is None else \
            validation.as_array("dof_forcerange", self.dof_forcerange, (nv, 2))
        self.dof_forcelimited = np.zeros(nv, bool) if self.dof_forcelimited is None else \
            validation.flags("dof_forcelimited", self.dof_forcelimited, nv)
        self.joint_dof = self._joint_dofs()
        self._check_tendon_limits()
        self.gain = validation.as_array("gain", self.gain, (nu, 3))
        self.bias = validation.as_array("bias", self.bias, (nu, 3))
        self.ctrlrange = validation.as_array("ctrlrange", self.ctrlrange, (nu, 2))
        self.forcerange = validation.as_array("forcerange", self.forcerange, (nu, 2))
        self.ctrllimited = validation.flags("ctrllimited", self.ctrllimited, nu)
        self.forcelimited = validation.flags("forcelimited", self.forcelimited, nu)
        self.names = tuple(self.names) or tuple(f"actuator{a}" for a in range(nu))
        if len(self.names) != nu:
            raise ShapeError(f"names has {len(self.names)} entries, there are nu = {nu} actuators")
        self._check_dynamics()
        self._check_transmissions()
        for what, limits, limited in (("ctrl", self.ctrlrange, self.ctrllimited), ("force", self.forcerange, self.forcelimited),
                                      ("act", self.actrange, self.actlimited)):
            bad = np.flatnonzero(limited & (limits[:, 0] > limits[:, 1]))
            if bad.size:
                a = int(bad[0])
                raise InvalidModelError(f"actuator {self.names[a]!r}: {what}range is [{limits[a, 0]:g}, {limits[a, 1]:g}], "
                                        f"low > high; a limited {what}range needs low <= high")
        self._summarize()

    def _summarize(self) -> None:
        """The Subsets and flags the force pipeline branches on (the class docstring's last paragraph), from the checked
        arrays."""
        self.gain_affine, self.gain_muscle = Subset.of(self.gaintype == AFFINE), Subset.of(self.gaintype == MUSCLE)
        self.bias_affine, self.bias_muscle = Subset.of(self.biastype == AFFINE), Subset.of(self.biastype == MUSCLE)
        self.reads_length = any(k.some for k in (self.gain_affine, self.gain_muscle, self.bias_affine, self.bias_muscle))
        self.ctrl_limits = Limits.of(self.ctrllimited, self.ctrlrange)
        self.force_limits = Limits.of(self.forcelimited, self.forcerange)
        self.dof_limits = Limits.of(self.dof_forcelimited, self.dof_forcerange)
        self.tendon_limited, self.posed_some = bool((self.tendon_frcid >= 0).any()), bool(self.posed_each.any())
        self.nstateful = int(np.count_nonzero(self.stateful))

    def _check_dynamics(self) -> None:
        """The activation, gain and bias fields checked (None: none, affine, zeros, False)."""
        nu = self.nu
        for name, kinds, default in (("dyntype", 5, DYN_NONE), ("gaintype", 3, AFFINE), ("biastype", 3, AFFINE)):
            value = getattr(self, name)
            kind = np.full(nu, default, np.int64) if value is None else np.asarray(value)
            if kind.shape != (nu,) or kind.dtype.kind not in "iu":
                raise ShapeError(f"{name} must be whole numbers, one per actuator, shape ({nu},), got {kind.dtype} of "
                                 f"shape {kind.shape}")
            bad = np.flatnonzero((kind < 0) | (kind >= kinds))
            if bad.size:
                raise InvalidModelError(f"{name}[{bad[0]}] is {kind[bad[0]]}: expected one of 0..{kinds - 1} "
                                        "(MuJoCo's mjtDyn, mjtGain, mjtBias values physai models)")
            setattr(self, name, kind.astype(np.int64))
        for name, shape in (("dynprm", (nu, 3)), ("gainprm", (nu, 9)), ("biasprm", (nu, 9)), ("lengthrange", (nu, 2)),
                            ("acc0", (nu,)), ("actrange", (nu, 2))):
            value = getattr(self, name)
            setattr(self, name, np.zeros(shape) if value is None else validation.as_array(name, value, shape))
        for name in ("actlimited", "actearly"):
            value = getattr(self, name)
            setattr(self, name, np.zeros(nu, bool) if value is None else validation.flags(name, value, nu))
        self._check_muscles()
        self.stateful = self.dyntype != DYN_NONE
        self.act_index = np.where(self.stateful, np.cumsum(self.stateful) - 1, -1)

    def _check_transmissions(self) -> None:
        """The configuration-dependent transmissions' fields checked (None: none such, joint transmissions)."""
        nu = self.nu
        self.posed_each = np.zeros(nu, bool) if self.posed_each is None else validation.flags("posed_each", self.posed_each, nu)
        for name, shape, default in (("trntype", (nu,), TRN_JOINT), ("trnid", (nu, 2), -1)):
            value = getattr(self, name)
            kind = np.full(shape, default, np.int64) if value is None else np.asarray(value)
            if kind.shape != shape or kind.dtype.kind not in "iu":
                raise ShapeError(f"{name} must be whole numbers of shape {shape}, got {kind.dtype} of shape {kind.shape}")
            setattr(self, name, kind.astype(np.int64))
        bad = np.flatnonzero((self.trntype < TRN_JOINT) | (self.trntype > TRN_BODY))
        if bad.size:
            raise InvalidModelError(f"trntype[{bad[0]}] is {self.trntype[bad[0]]}: expected one of 0..{TRN_BODY} "
                                    "(MuJoCo's mjtTrn values physai models)")
        self.gear6 = np.zeros((nu, 6)) if self.gear6 is None else validation.as_array("gear6", self.gear6, (nu, 6))
        self.cranklength = np.zeros(nu) if self.cranklength is None else \
            validation.as_array("cranklength", self.cranklength, (nu,))
        if self.length is not None:
            self.length = validation.as_array("length", self.length, (nu,))

    @property
    def needs_pose(self) -> bool:
        """Whether some actuator's moment arms depend on the configuration and this copy holds none of a state's
        (physai.engine.actuation.posed makes one that does)."""
        return self.length is None and self.posed_some

    def _check_muscles(self) -> None:
        """InvalidModelError for a muscle gain or bias whose parameters MuJoCo's compiler refuses: range[0] < range[1],
        lmin < 1 < lmax and positive scale, vmax, fpmax, fvmax are required (MuJoCo's words); and for one whose
        lengthrange is empty (no optimal length L0: lengthrange[0] < lengthrange[1] is required) or whose peak force
        comes from acc0 (force < 0: scale / acc0) with acc0 <= 0 (an actuator that moves nothing; MuJoCo would divide
        by mjMINVAL, a force of scale * 1e15)."""
        for kind, types, prm in (("gain", self.gaintype, self.gainprm), ("bias", self.biastype, self.biasprm)):
            for a in np.flatnonzero(types == MUSCLE):
                p, lengths = prm[a], self.lengthrange[a]
                who = f"actuator {self.names[a]!r}: its muscle {kind}"
                for bad, need in ((p[0] >= p[1], "range[0]<range[1]"), (not p[4] < 1 < p[5], "lmin<1<lmax")):
                    if bad:
                        raise InvalidModelError(f"{who} has range = [{p[0]:g}, {p[1]:g}], lmin = {p[4]:g}, lmax = "
                                                f"{p[5]:g}; {need} required in muscle (as MuJoCo's compiler requires)")
                if not (p[[3, 6, 7, 8]] > 0).all():
                    raise InvalidModelError(f"{who} has scale = {p[3]:g}, vmax = {p[6]:g}, fpmax = {p[7]:g}, fvmax = "
                                            f"{p[8]:g}; positive scale, vmax, fpmax, fvmax required in muscle (as "
                                            "MuJoCo's compiler requires)")
                if not lengths[0] < lengths[1]:
                    raise InvalidModelError(f"{who} has lengthrange = [{lengths[0]:g}, {lengths[1]:g}]: expected "
                                            "lengthrange[0] < lengthrange[1] (the muscle's optimal length is their "
                                            "difference over range[1] - range[0])")
                if p[2] < 0 and not self.acc0[a] > 0:
                    raise InvalidModelError(f"{who} takes its peak force from acc0 (force = {p[2]:g} < 0: scale / "
                                            f"acc0) and acc0 = {self.acc0[a]:g}: expected acc0 > 0 (the acceleration a "
                                            "unit force of the actuator gives at qpos0; 0: it moves nothing)")

    @property
    def na(self) -> int:
        """Number of activations (MuJoCo's na): one per actuator with activation dynamics."""
        return self.nstateful

    @property
    def affine_each(self) -> np.ndarray:
        """(nu,) bool: the actuators without activation dynamics whose gain and bias are fixed, affine or none."""
        return ~self.stateful & (self.gaintype != MUSCLE) & (self.biastype != MUSCLE)

    @property
    def affine(self) -> bool:
        """Whether every actuator is affine_each: f = gain(length, velocity) ctrl + bias(length, velocity), what the
        compiled engine and the derivatives model."""
        return bool(self.affine_each.all())

    def _joint_dofs(self) -> np.ndarray:
        """joint_dof checked (nu,) int64 with entries in [-1, nv), or the one dof of each single-entry row of moment."""
        if self.joint_dof is None:
            single = np.count_nonzero(self.moment, axis=1) == 1
            return np.where(single, np.argmax(self.moment != 0, axis=1), -1).astype(np.int64)
        j = np.asarray(self.joint_dof)
        if j.shape != (self.nu,) or j.dtype.kind not in "iu":
            raise ShapeError(f"joint_dof must be whole numbers, one per actuator, shape ({self.nu},), got {j.dtype} "
                             f"of shape {j.shape}")
        bad = np.flatnonzero((j < -1) | (j >= self.nv))
        if bad.size:
            raise InvalidModelError(f"joint_dof[{bad[0]}] is {j[bad[0]]}: expected a dof in [0, {self.nv}) or -1 "
                                    "(a tendon)")
        return j.astype(np.int64)

    def _check_tendon_limits(self) -> None:
        """tendon_frcid checked (nu,) int64 with entries >= -1 (None: all -1) and tendon_frcrange (nu, 2) (None:
        zeros); InvalidModelError for a used range with low > high."""
        nu = self.nu
        t = np.full(nu, -1, np.int64) if self.tendon_frcid is None else np.asarray(self.tendon_frcid)
        if t.shape != (nu,) or t.dtype.kind not in "iu":
            raise ShapeError(f"tendon_frcid must be whole numbers, one per actuator, shape ({nu},), got {t.dtype} of "
                             f"shape {t.shape}")
        self.tendon_frcid = t.astype(np.int64)
        self.tendon_frcrange = np.zeros((nu, 2)) if self.tendon_frcrange is None else \
            validation.as_array("tendon_frcrange", self.tendon_frcrange, (nu, 2))
        bad = np.flatnonzero((self.tendon_frcid < -1) | ((self.tendon_frcid >= 0)
                                                        & (self.tendon_frcrange[:, 0] > self.tendon_frcrange[:, 1])))
        if bad.size:
            a = int(bad[0])
            raise InvalidModelError(f"actuator {a}: tendon_frcid {self.tendon_frcid[a]} with tendon_frcrange "
                                    f"[{self.tendon_frcrange[a, 0]:g}, {self.tendon_frcrange[a, 1]:g}]: expected a "
                                    "tendon >= 0 with low <= high, or -1 (none)")

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
