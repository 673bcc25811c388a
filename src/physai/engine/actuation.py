"""The actuators' forces and activation dynamics, named after MuJoCo's mj_fwdActuation (engine_forward.c; the muscle
curves of engine_util_misc.c; mirrored by the compiled engine's cpp/actuation.h), for one state:

    clamped_ctrl(actuators, ctrl)                          ctrl (nu,) checked, clamped to ctrlrange where ctrllimited
    activation_rate(actuators, u, act)                     act_dot (na,) of the stateful actuators      (MuJoCo's act_dot)
    next_activation(actuators, act, act_dot, h)            act after a step of h [s]                    (mj_nextActivation)
    scalar_forces(actuators, q, qd, u, act, act_dot, h)    f (nu,) [N m | N]                       (actuator_force)
    joint_force(actuators, f)                              moment^T f clamped per dof (nv,)         (qfrc_actuator)
    velocity_derivative(actuators, q, qd, u, f, act, act_dot, h)   d qfrc_actuator / d qd (nv, nv)  (mjd_actuator_vel)

f = gain * input + bias, input = u (dyntype none) or the actuator's activation (its next one with actearly); gain and
bias are affine in the actuator's length and velocity, or MuJoCo's muscle curves. u are the controls after
clamped_ctrl; act (na,) the activations, one per stateful actuator in order (Actuators.act_index).
"""

import numpy as np

from physai import validation
from physai.engine.actuators import AFFINE, DYN_FILTEREXACT, DYN_INTEGRATOR, DYN_MUSCLE, MUSCLE, Actuators
from physai.exceptions import ShapeError

#: MuJoCo's mjMINVAL: the floor of the divisors in the actuator models
MINVAL = 1e-15


def clamped_ctrl(actuators: Actuators, ctrl) -> np.ndarray:
    """ctrl checked to have nu finite entries and clamped to ctrlrange where ctrllimited."""
    u = np.asarray(ctrl, dtype=float)
    if u.shape != (actuators.nu,):
        got = f"{u.shape[0]} entries" if u.ndim == 1 else f"shape {u.shape}"
        raise ShapeError(f"ctrl has {got}, the model has nu = {actuators.nu} actuators (one control each)")
    u = validation.vector("ctrl", u, actuators.nu)
    return np.where(actuators.ctrllimited, np.clip(u, actuators.ctrlrange[:, 0], actuators.ctrlrange[:, 1]), u)


def lengths_velocities(actuators: Actuators, q: np.ndarray, qd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(actuator_length, actuator_velocity) (nu,) each: qmoment q, moment qd."""
    return actuators.qmoment @ q, actuators.moment @ qd


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
    g = actuators.gain
    gain = np.where(actuators.gaintype == AFFINE, g[:, 0] + g[:, 1] * length + g[:, 2] * velocity, g[:, 0])
    m = actuators.gaintype == MUSCLE
    if m.any():
        gain[m] = muscle_gain(length[m], velocity[m], actuators.lengthrange[m], actuators.acc0[m], actuators.gainprm[m])
    return gain


def biases(actuators: Actuators, length: np.ndarray, velocity: np.ndarray) -> np.ndarray:
    """Each actuator's bias (nu,): b0 + b1 length + b2 velocity (affine; zero for none), or muscle_bias."""
    b = actuators.bias
    bias = np.where(actuators.biastype == AFFINE, b[:, 0] + b[:, 1] * length + b[:, 2] * velocity, 0.0)
    m = actuators.biastype == MUSCLE
    if m.any():
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


def scalar_forces(actuators: Actuators, q: np.ndarray, qd: np.ndarray, u: np.ndarray, act: np.ndarray | None = None,
                  act_dot: np.ndarray | None = None, h: float = 0.0) -> np.ndarray:
    """The scalar actuator forces f (nu,) [N m | N] (MuJoCo's actuator_force) for clamped controls u, activations act
    and their rate act_dot (na,; None without stateful actuators), h [s] the step of actearly: f = gain input + bias
    (inputs, gains, biases), clamped to forcerange where forcelimited."""
    length, velocity = lengths_velocities(actuators, q, qd)
    f = gains(actuators, length, velocity) * inputs(actuators, u, act, act_dot, h) + biases(actuators, length, velocity)
    return np.where(actuators.forcelimited, np.clip(f, actuators.forcerange[:, 0], actuators.forcerange[:, 1]), f)


def joint_force(actuators: Actuators, f: np.ndarray) -> np.ndarray:
    """moment^T f (nv,) clamped to dof_forcerange where dof_forcelimited (MuJoCo's qfrc_actuator)."""
    tau = actuators.moment.T @ f
    lo, hi = actuators.dof_forcerange.T
    return np.where(actuators.dof_forcelimited, np.clip(tau, lo, hi), tau)


def joint_saturated(actuators: Actuators, f: np.ndarray) -> np.ndarray:
    """(nu,) bool: the joint actuators (joint_dof >= 0) whose dof's total moment^T f, for the scalar forces f (nu,), is
    at or beyond its dof_forcerange where dof_forcelimited: their force no longer moves with the velocity."""
    tau = actuators.moment.T @ f
    lo, hi = actuators.dof_forcerange.T
    saturated = actuators.dof_forcelimited & ((tau <= lo) | (tau >= hi))      # the dofs clamped at a limit
    j = actuators.joint_dof
    return (j >= 0) & saturated[np.maximum(j, 0)]


def velocity_derivative(actuators: Actuators, q: np.ndarray, qd: np.ndarray, u: np.ndarray, f: np.ndarray,
                        act: np.ndarray | None = None, act_dot: np.ndarray | None = None, h: float = 0.0) -> np.ndarray:
    """d qfrc_actuator / d qd (nv, nv) (mjd_actuator_vel) at clamped controls u and scalar forces f (scalar_forces):
    sum_a moment_a^T (dbias/dvelocity + dgain/dvelocity input_a) moment_a over the actuators whose force is inside its
    forcerange and, for a joint actuator, whose dof's total is inside its actuatorfrcrange (joint_saturated)."""
    length, velocity = lengths_velocities(actuators, q, qd)
    gain_vel = np.where(actuators.gaintype == AFFINE, actuators.gain[:, 2], 0.0)
    m = actuators.gaintype == MUSCLE
    if m.any():
        gain_vel[m] = muscle_gain(length[m], velocity[m], actuators.lengthrange[m], actuators.acc0[m],
                                  actuators.gainprm[m], derivative=True)
    bias_vel = np.where(actuators.biastype == AFFINE, actuators.bias[:, 2], 0.0)
    lo, hi = actuators.forcerange[:, 0], actuators.forcerange[:, 1]
    free = (~actuators.forcelimited | ((f > lo) & (f < hi))) & ~joint_saturated(actuators, f)
    k = np.where(free, bias_vel + gain_vel * inputs(actuators, u, act, act_dot, h), 0.0)
    return actuators.moment.T @ (k[:, None] * actuators.moment)


__all__ = ["MINVAL", "activation_rate", "biases", "clamped_ctrl", "gains", "inputs", "joint_force",
           "joint_saturated", "lengths_velocities", "muscle_bias", "muscle_dynamics", "muscle_gain", "muscle_gain_length",
           "next_activation", "scalar_forces", "velocity_derivative"]
