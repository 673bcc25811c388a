"""The right-hand side of the equations of motion: the generalized forces that make a tree move.

    M(q) qdd + c(q, qd) = tau_actuator + tau_passive + tau_applied + J^T f

    passive_force(model, q, qd)                dampers, springs, gravity compensation, fluid   (MuJoCo's qfrc_passive)
    body_passive_forces(model, q, qd)          gravity compensation and fluid forces            (qfrc_gravcomp, qfrc_fluid)
    actuator_force(actuators, q, qd, ctrl, act)  motors, servos, muscles, general actuators  (qfrc_actuator)
    actuators_at(model, q)                     the actuators with the moment arms of q    (mj_transmission)
    applied_force(model, q, qfrc, xfrc)        forces you push with                 (qfrc_applied + xfrc_applied)
    constraint_force(J, f)                     J^T f of any constraint or contact force f

All are (nv,) vectors in [N m] for rotations and [N] for translations; q is (nq,) (passive_force and
body_passive_forces also take N states, (N, nq) and (N, nv), and return (N, nv)). `model` is a
physai.engine.Model (or anything physai.engine.as_model takes: a Tree, an MjModel, a model name).
Actuators are read from a MuJoCo model by actuators_from_mujoco; actuator_velocity_derivative gives
d tau_actuator / d qd for implicit integrators.
"""

import numpy as np

from physai import collision, engine, validation
from physai.engine import actuation, passive, smooth, tendon
from physai.engine.passive import damper_spring_force
from physai.engine.actuation import check_act
from physai.engine.actuators import Actuators
from physai.engine.loaders import actuators_from_mujoco
from physai.engine.support import body_wrench_force
from physai.exceptions import InvalidArgumentError, ShapeError

__all__ = ["Actuators", "activation_rate", "actuators_at", "actuator_force", "actuator_outputs",
           "actuator_velocity_derivative", "actuators_from_mujoco", "applied_force", "body_passive_forces",
           "body_wrench_force", "check_act", "check_xfrc", "clamped_ctrl", "constraint_force", "damper_spring_force",
           "joint_saturated", "passive_force", "running_actuator_force"]

# ---- passive forces ----


def passive_force(model, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """MuJoCo's qfrc_passive (nv,) | (N, nv) [N m | N]: joint damping and spring forces -damping qd - stiffness (q -
    springref), tendon springs and dampers J^T (-k x - b v) (x: the length beyond the spring's dead band), gravity
    compensation (but a joint's with actuatorgravcomp) and fluid forces (physai.engine.passive).

    Damping acts on every dof, springs on hinges and slides (no polynomial springs or damping). q (nq,) or (N, nq),
    qd (nv,) or (N, nv): one state or N (a single one shared by the batch); the tendons' part runs state by state.
    """
    model = engine.as_model(model)
    (Q, QD), batch = validation.states(q=(q, model.nq), qd=(qd, model.nv))      # (size, n), state last
    f = damper_spring_force(model, Q, QD)
    if model.tendon_stiffness.any() or model.tendon_damping.any():
        for k in range(Q.shape[1]):
            d = engine.Data(model)
            smooth.position_stages(model, d, Q[:, k:k + 1])
            f[:, k] += passive.tendon_passive_force(model, *tendon.tendons(model, d, Q[:, k]), QD[:, k])
    if passive.has_body_forces(model):
        gravcomp, fluid = _body_passive_forces(model, Q, QD)
        f += model.gravcomp_passive[:, None] * gravcomp + fluid
    return f[:, 0] if batch is None else f.T


def body_passive_forces(model, q: np.ndarray, qd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(MuJoCo's qfrc_gravcomp, qfrc_fluid) (nv,) | (N, nv) each [N m | N]: gravity compensation of every body (all of
    it: the part a joint's actuatorgravcomp sends into qfrc_actuator included) and fluid forces (physai.engine.passive).
    q (nq,) or (N, nq), qd (nv,) or (N, nv)."""
    model = engine.as_model(model)
    (Q, QD), batch = validation.states(q=(q, model.nq), qd=(qd, model.nv))
    gravcomp, fluid = _body_passive_forces(model, Q, QD)
    return (gravcomp[:, 0], fluid[:, 0]) if batch is None else (gravcomp.T, fluid.T)


def _body_passive_forces(model, Q: np.ndarray, QD: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(qfrc_gravcomp, qfrc_fluid) (nv, n) of checked states Q (nq, n), QD (nv, n), state last."""
    d = engine.Data(model, Q.shape[1])
    smooth.velocity_stages(model, d, Q, QD)
    zero = np.zeros((model.nv, d.n))
    return (passive.gravcomp(model, d) if passive.has_gravcomp(model) else zero,
            passive.fluid(model, d) if passive.has_fluid(model) else zero)


def clamped_ctrl(actuators: Actuators, ctrl) -> np.ndarray:
    """ctrl checked to have nu finite entries and clamped to ctrlrange where ctrllimited (physai.engine.actuation)."""
    return actuation.clamped_ctrl(actuators, ctrl)


def actuators_at(model, q: np.ndarray, contacts=None, actuators: Actuators | None = None) -> Actuators:
    """The actuators (default the model's own) with the moment arms and lengths of the state q (nq,) (MuJoCo's
    mj_transmission: actuator_moment (nu, nv) in .moment, actuator_length (nu,) in .length), which the functions below
    then take: needed where an arm depends on the configuration (a ball or free joint, a site, a slider-crank, a body's
    contacts, a spatial tendon; Actuators.posed_each), the actuators themselves otherwise. contacts: a ContactSet for
    adhesion, default the contacts physai detects at q."""
    model = engine.as_model(model)
    q = validation.vector("q", q, model.nq)
    actuators = model.actuators if actuators is None else actuators
    if actuators is None:
        raise InvalidArgumentError("actuators_at: the model has no actuators and none were given")
    if not actuators.posed_each.any():
        return actuators
    d = engine.Data(model)
    smooth.position_stages(model, d, q[:, None])
    if contacts is None and collision.has_contacts(model):
        contacts = collision.numpy_detect(model, q)
    return actuation.posed(actuators, model, d, q, contacts)


def actuator_outputs(actuators: Actuators, q: np.ndarray, qd: np.ndarray, ctrl: np.ndarray, act=None,
                     dt: float | None = None) -> np.ndarray:
    """Scalar actuator forces f (nu,) [N m | N] (MuJoCo's actuator_force), as mj_fwdActuation computes them.

    ctrl is clamped to ctrlrange where ctrllimited; then f = gain input + bias with, for affine actuators,
    gain = g0 + g1 length + g2 velocity, bias = b0 + b1 length + b2 velocity,
    length = moment q, velocity = moment qd (muscles: MuJoCo's muscle curves); input is ctrl, or for an actuator with
    activation dynamics its activation act (na,) (None: zeros; with actearly the next one, after dt [s], required then);
    f is clamped to forcerange where forcelimited (physai.engine.actuation.scalar_forces).
    """
    q, qd, act, dt = actuation.check_state(actuators, q, qd, act, dt)
    u = clamped_ctrl(actuators, ctrl)
    return actuation.scalar_forces(actuators, q, qd, u, act, actuation.activation_rate(actuators, u, act), dt)


def activation_rate(actuators: Actuators, ctrl: np.ndarray, act=None) -> np.ndarray:
    """act_dot (na,) [1/s] of the actuators with activation dynamics (MuJoCo's act_dot) for controls ctrl (nu,,
    clamped to ctrlrange) and activations act (na,; None: zeros): integrator ctrl, filter (ctrl - act) / tau, muscle
    MuJoCo's mju_muscleDynamics."""
    act = check_act(actuators, act)
    return actuation.activation_rate(actuators, clamped_ctrl(actuators, ctrl), act)


def actuator_force(actuators: Actuators, q: np.ndarray, qd: np.ndarray, ctrl: np.ndarray, act=None,
                   dt: float | None = None) -> np.ndarray:
    """Generalized actuator force moment^T f (nv,) [N m | N] for controls ctrl (nu,); equals MuJoCo's qfrc_actuator.

    f are the clamped scalar forces of actuator_outputs (act, dt: as there); the total on a dof is clamped to
    dof_forcerange where dof_forcelimited. Raises ShapeError if ctrl does not have nu entries or act na.
    """
    return actuation.joint_force(actuators, actuator_outputs(actuators, q, qd, ctrl, act, dt))


def running_actuator_force(actuators: Actuators, q: np.ndarray, qd: np.ndarray, ctrl: np.ndarray, act=None,
                           dt: float = 0.0) -> np.ndarray:
    """actuator_force inside a simulation: ctrl checked and clamped, q, qd and act (na,; None: zeros) taken as they
    come (a diverging state is NaN or infinite, and the simulator reports it as a divergence, by name)."""
    u = clamped_ctrl(actuators, ctrl)
    act = np.zeros(actuators.na) if act is None else act
    act_dot = actuation.activation_rate(actuators, u, act)
    return actuation.joint_force(actuators, actuation.scalar_forces(actuators, q, qd, u, act, act_dot, dt))


def actuator_velocity_derivative(actuators: Actuators, q: np.ndarray, qd: np.ndarray, ctrl: np.ndarray, act=None,
                                 dt: float | None = None) -> np.ndarray:
    """d qfrc_actuator / d qd (nv, nv), the actuators' share of the implicit integrators' damping matrix.

    Each actuator adds moment[a]^T (b2 + g2 input_a) moment[a] (a muscle: its gain's velocity derivative times its
    activation); for a joint actuator with gear r that is
    (b2 + g2 ctrl) r^2 on the joint's diagonal entry (-kv r^2 for a position or velocity servo). An actuator
    whose force is clamped at or beyond its forcerange contributes nothing, nor (MuJoCo 4.0) a joint actuator
    whose joint's total is at or beyond its actuatorfrcrange (joint_saturated), nor one on a tendon whose actuators'
    total final force (scaled into the tendon's actuatorfrcrange, then clamped to each one's forcerange) is at (within
    1e-12) or beyond that range (actuation.tendon_saturated), and ctrl_a is clamped to ctrlrange, as in MuJoCo's
    mjd_actuator_vel. MuJoCo's qDeriv keeps only the entries of its dof sparsity pattern, which links a dof to its
    ancestors and descendants: it drops the coupling a fixed tendon makes between dofs in different branches (the
    Panda's two fingers); this function returns the full derivative. act, dt: as actuator_outputs.
    """
    return actuation.force_velocity_derivative(actuators, q, qd, ctrl, act, dt)


def joint_saturated(actuators: Actuators, f: np.ndarray) -> np.ndarray:
    """(nu,) bool: the joint actuators (joint_dof >= 0) whose dof's total moment^T f, for the scalar forces f (nu,), is
    at or beyond its dof_forcerange where dof_forcelimited: their force no longer moves with the velocity."""
    return actuation.joint_saturated(actuators, f)


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
    model = engine.as_model(model)
    tau = np.zeros(model.nv) if qfrc_applied is None else validation.vector("qfrc_applied", qfrc_applied, model.nv).copy()
    if xfrc_applied is None:
        return tau
    xfrc = check_xfrc(model, xfrc_applied)
    q = validation.vector("q", q, model.nq)
    d = engine.Data(model)
    smooth.position_stages(model, d, q[:, None])
    return tau + body_wrench_force(model, d, xfrc)


def check_xfrc(model, xfrc_applied) -> np.ndarray:
    """xfrc_applied as a finite (nbody, 6) array; ShapeError (with the hint for MuJoCo's full array, whose row 0 is
    the world) or InvalidStateError otherwise."""
    nb = model.nbody
    try:
        return validation.as_array("xfrc_applied", xfrc_applied, (nb, 6))
    except ShapeError as exc:
        if getattr(xfrc_applied, "shape", None) == (nb + 1, 6):
            raise ShapeError(f"{exc}: it has one row more than the model has bodies, as MuJoCo's d.xfrc_applied "
                             "(row 0 is the world); pass d.xfrc_applied[1:]") from None
        raise


def constraint_force(jacobian: np.ndarray, f: np.ndarray) -> np.ndarray:
    """Generalized force J^T f (nv,) [N m | N] of constraint or contact forces f (m,) acting through the Jacobian J (m, nv).

    Each f_i is in the units that make f_i times row i's velocity (J qd)_i a power [W]: a force [N] along a row
    that gives a point's velocity [m/s] (a contact normal or friction direction), a torque [N m] about a row that
    gives an angular velocity [rad/s], and a joint's own force [N m | N] for a row that picks a joint (a joint
    limit). MuJoCo's efc_force on its efc_J rows is such an f. J and f must be finite (InvalidStateError).
    """
    J = validation.matrix("jacobian", jacobian, "(m, nv)")
    return J.T @ validation.vector("f", f, J.shape[0])
