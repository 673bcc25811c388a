"""A simulator independent of MuJoCo at run time: MuJoCo's five integrators, step by step, in its order.

    step(model, q, qd, dt=None, integrator=None, ctrl=None, actuators=None, qfrc_applied=None) -> (q_next, qd_next)
    step_result(model, q, qd, ..., qacc_warmstart=None, on_divergence="raise", observe=None)
                                                            -> StepResult (q, qd, qacc_warmstart, status, act, observed)
    step_frames(model, q, qd, frames, ctrl=None, qacc_warmstart=None, observe=None)
                                                            -> StepResult of the last of `frames` steps in one compiled
                                                               call (ctrl held), or None: then step_result per frame
    body_quantities(model, q, qd, names=OBSERVABLE, ...)    -> {name: MjData field} (mj_forward + mj_rnePostConstraint)
    simulate(model, q0, qd0, dt=None, steps=<required>, integrator=None, ...)                  -> Trajectory
    rollout(model, q0 (N, nq), qd0 (N, nv), dt=None, steps=<required>, integrator=None, ...)   -> Trajectory (N, ...)
    (all take euler_damping=False to reproduce MuJoCo with mjDSBL_EULERDAMP: damping explicit in Euler)

DEFAULTS, as mj_step's, from the model (model_options): dt=None is model.opt.timestep, integrator=None model.opt.integrator
(MuJoCo's <option integrator>; an integrator is given by name or by MuJoCo's mjtIntegrator value, e.g. 3 or
mujoco.mjtIntegrator.mjINT_IMPLICITFAST), euler_damping=None the model's eulerdamp flag, and constraints=None on when the
model has any (has_constraints: a limited joint, friction loss, an active equality, a geom pair that may touch, each
kind unless the model's disable flags turn it off); constraints=False is MuJoCo's mjDSBL_CONSTRAINT. A model with
constraints physai does not model is then refused by name (UnsupportedModelError; pass constraints=False for its smooth
dynamics).

ACTIVATIONS. Actuators with activation dynamics (MuJoCo's dyntype integrator, filter, filterexact, muscle) have a state
of their own, the activations act (na,), one per such actuator in order (MuJoCo's d.act): step(..., act=...) returns
(q_next, qd_next, act_next) for such a model, step_result its StepResult.act, simulate and rollout take the first act and
return Trajectory.act (None: zero, as a new MjData's). Each integrator advances act as mj_step does: euler and the
implicit ones by act + h act_dot at the start state (filterexact exactly, then clamped to actrange), rk4 with act in
its stages (physai.engine.actuation, physai.engine.forward).

Every integrator starts from the smooth force of MuJoCo's forward dynamics (its qfrc_smooth),

    f(q, qd) = actuator_force + passive_force + applied_force - bias        [N m | N]

and from the mass matrix M(q) (armature included), both from one pass of the engine (physai.engine) over a
workspace allocated once per run. With h = dt they advance (q, qd) as MuJoCo 4 does for a model without
constraints, positions always through physai.joints' integrate (q (+) h v: quaternions turn, MuJoCo's
mj_integratePos), written q' = q + h qd' below:

    "euler"         semi-implicit Euler with implicit joint damping B = diag(tree.damping)  (mj_Euler)
                        (M + h B) a = f,   qd' = qd + h a,   q' = q + h qd'
                    (without any damping this is a = M^-1 f, the textbook semi-implicit Euler)
    "implicit"      implicit in velocity: D = d f / d qd, with every velocity-dependent force  (mj_implicit)
                        D = dA/dqd - B - dc/dqd,           (M - h D) a = f,   then as euler
                    dA/dqd is the actuators' velocity derivative and dc/dqd that of the bias (MuJoCo's
                    mjd_rne_vel; 2 C(q, qd) with C the Christoffel matrix on hinges and slides). The bias is
                    quadratic in qd, so dc/dqd e_k = (c(qd + e_k) - c(qd - e_k)) / 2 exactly: one batched call.
    "implicitfast"  the same without the Coriolis/centripetal part, symmetrized               (mj_implicit)
                        D = sym(dA/dqd - B),              (M - h D) a = f,   then as euler
    "rk4"           classic 4th-order Runge-Kutta on (q, qd) with ctrl held constant         (mj_RungeKutta)
                        stage i (c = 0, 1/2, 1/2, 1):  q_i = q (+) h c_i k_(i-1),  qd_i = qd + h c_i a_(i-1),
                                                       a_i = M(q_i)^-1 f(q_i, qd_i)       (damping explicit)
                        qd' = qd + h (a_1 + 2 a_2 + 2 a_3 + a_4) / 6
                        q'  = q (+) h (k_1 + 2 k_2 + 2 k_3 + k_4) / 6   (positions from the stage velocities)
                    k_i = qd_i for hinges and slides; for quaternions k_i = dexp^-1(h c_i k_(i-1)) qd_i, the stage
                    velocity carried back to q's tangent space (joints.dexp_inv): Runge-Kutta-Munthe-Kaas on SO(3),
                    which MuJoCo 4's RK4 takes (its 3.x text, k_i = qd_i, differs by O(h^2 |qd|^2) per step)
    "discrete"      MuJoCo 4's discrete-time step, implicit in velocity and position (mjINT_DISCRETE, since 3.13):
                        (M + h B + h^2 K) a = f - h K qd,   then as euler
                    a the step map (qd' - qd) / h; B and K the positive damping and stiffness: the joints' diagonal,
                    the inertia boxes' fluid drag (-d qfrc_fluid / d qd), the tendons' J^T diag(b) J and J^T diag(k) J,
                    the servos' moment^T max(-slope, 0) moment of their velocity and length slopes
                    (engine.forward.discrete_metric_terms; both engines, but the compiled one hands a muscle or ellipsoid
                    fluid to the NumPy engine: forward.compiled_discrete);
                    standalone free bodies solved again in their blocks as implicitfast's (without actuator damping)
                    unless a tendon or servo term of the metric reaches them (engine.forward.discrete_metric_terms);
                    a0 = M^-1 f in that metric by conjugate gradients to opt.tolerance (at most opt.iterations),
                    preconditioned with its factored part (the joints' and fluid's terms plus the couplings' diagonal;
                    engine.forward.cg_backbone, engine.solver.smooth_acceleration; both engines), as MuJoCo 4 applies
                    the couplings matrix-free; where they couple two branches or trees, the coupled trees in one island.
                    It follows mj_step to rounding at tolerance 1e-15; at a looser tolerance both stop short of the
                    exact a0, each at its own iterate.
                    Under the PGS solver (its dual solve needs the metric factored) the tendon and servo terms stay out
                    of the metric and out of the free bodies' blocks, their forces explicit at the step's start
                    (engine.forward.explicit_couplings, as MuJoCo 4); noslip after Newton or CG with them is refused.
                    With constraints the solver minimises in the metric M + h B + h^2 K (see CONSTRAINTS). Refused by
                    name (UnsupportedModelError): ellipsoid-model fluid, fluid on a standalone free body, muscles,
                    tendon or servo terms under PGS or noslip; the discrete inverse refuses the integrator.
                    physai.derivatives.step_derivatives differentiates its step, with or without constraints.

MuJoCo's Euler treats only joint damping implicitly (actuator velocity gains, e.g. a position servo's kv,
stay explicit), unless the model sets the eulerdamp disable flag (mjDSBL_EULERDAMP): then it solves M a = f
with the damping explicit in f; euler_damping=False does the same here. implicitfast takes the lower
triangle of D, which equals sym(D) for joint and tendon transmissions, where D is symmetric.

CONSTRAINTS. constraints=False gives the smooth dynamics: joint limits, friction loss, equalities and contacts do not act
(compare against MuJoCo with m.opt.disableflags |= mjDSBL_CONSTRAINT). constraints=True (the default for a model that has
any) makes them act as in mj_step:
each evaluation detects the contacts at its q (physai.collision.detect: the Model's geoms, with MuJoCo's filters),
builds the constraint rows of physai.engine.constraint and solves them by Newton's method (physai.engine.solver) from
the last solve's qacc (MuJoCo's qacc_warmstart; zero at the start), giving qacc and qfrc_constraint. Euler without
damping steps with the solver's qacc; Euler with damping and the implicit integrators solve (M - h D) a = f +
qfrc_constraint, as mj_Euler and mj_implicit do; RK4 solves the constraints at each of its four stages. The discrete
integrator solves (M + h B + h^2 K) a = f - h K qd + J^T f_c in one solve, each row's spring-damper at the end of the
step (physai.engine.constraint.rows' discrete_h: aref = (aref - h K imp vel) / s, R / s with s = 1 + h B + h^2 K imp,
the effective impedance at most MAXIMP, diagApprox scaled by J diag(M + h B + h^2 K)^-1 J^T / J diag(M)^-1 J^T; with
refsafe a limit's or contact's spring with timeconst dampratio < h becomes K = 1 / (imp h^2), B = 2 dampratio sqrt(K),
and no time constant is raised to 2 h); standalone free bodies that no row moves are solved again in their blocks
(cpp/forward.h's discrete and cpp/constraint.h's rows on the compiled backend). The loop then runs in Python (each solve
compiled on the compiled backend), or compiled whole (cpp/simulate.h). A model with pairs of geoms physai cannot collide is
refused unless built by physai.collision.ignoring_unsupported.

Energy. simulate() returns energy[k] = physai.engine.energy(model, q[k], qd[k]), the energy of the k-th
state of the trajectory. MuJoCo computes d.energy inside mj_forward, at the start of mj_step, so after
the (k+1)-th mj_step d.energy equals energy[k], the state that step started from, not the state it produced.
RK4 is the exception: each of its stages runs mj_forward again, so after an RK4 mj_step d.energy belongs
to the last stage's state (q + h qd_3, qd + h qdd_3), neither the start nor the end (see rk4_stages).
A state whose energy overflows while its forces do not (a spring's 1/2 k q^2 at q = 1e154) raises InvalidStateError
naming it, as engine.energy there, on either backend (MuJoCo's d.energy is not finite there either); energy=False
steps it.

Divergence. A step that produces NaN or infinity raises DivergenceError naming the step, the time and the
integrator. step(..., on_divergence="report") instead reports each state of a batch that failed (StepStatus) and steps
the others as each alone: a vector environment resets the failed ones and goes on.
The steps themselves are physai.engine.forward's (euler, implicit, implicitfast, runge_kutta: MuJoCo's mj_Euler,
mj_implicit, mj_RungeKutta, mirrored by cpp/forward.h); this module checks the inputs, batches the states, runs the
trajectories and reports. It calls physai.engine and physai.forces; they never call it.
"""

import operator
import functools
import re
import warnings
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np

from physai import collision, engine, forces, joints, tendons, trajectory_files, validation
from physai.trajectory_files import ContactRecord
from physai.engine import constraint, forward, model_checks, native, observe, passive, solver
from physai.engine.model import WRAP_JOINT, per_model
from physai.engine.data import RolloutInputs, StepInputs, StepOptions
# the step matrices' pieces and the standalone free bodies live in the engine; kept here under their public names
from physai.engine.forward import (bias_velocity_derivative, discrete_stiffness, dof_pattern, free_body_blocks,  # noqa: F401
                                   free_body_solve)
from physai.engine.support import standalone_free_dofs  # noqa: F401
from physai.exceptions import (ConvergenceWarning, DivergenceError, InvalidArgumentError, InvalidModelError,
                               InvalidStateError, PhysaiError, ShapeError, UnknownQuantityError, UnsupportedModelError)

INTEGRATORS = ("euler", "rk4", "implicit", "implicitfast")

#: MuJoCo's mjtIntegrator values of each integrator (m.opt.integrator).
MUJOCO_INTEGRATOR = {"euler": 0, "rk4": 1, "implicit": 2, "implicitfast": 3}

#: MuJoCo 4's fifth integrator (mjINT_DISCRETE = 4), which step, simulate, rollout and step_derivatives take besides
#: INTEGRATORS (both engines, with or without constraints; so does step_derivatives; the discrete inverse does not)
DISCRETE = "discrete"


@dataclass(frozen=True)
class Trajectory:
    """A simulated run of `steps` steps: states 0..steps, energy of each state.

    t:      (steps+1,) time of each state [s], starting at 0
    q:      (steps+1, nq) joint positions; q[0] is the initial state [rad | m | quaternion]
    qd:     (steps+1, nv) joint velocities [rad/s | m/s]
    energy: (steps+1,) kinetic plus potential energy of (q[k], qd[k]) [J]; after the (k+1)-th mj_step
            MuJoCo's d.energy.sum() equals energy[k] (it is computed at the start of the step; RK4: at its
            last stage); None when simulate(..., energy=False)
    integrator: the integrator's name;  dt: the timestep [s]
    ncon:   (steps,) the number of contacts of each step (found at its start state), with constraints=True; else None
    act:    (steps+1, na) the actuators' activations (MuJoCo's d.act; act[0] the initial ones), (steps+1, 0) for a
            model without activation dynamics
    model:  the model's name or MJCF path, for a viewer to rebuild it (None: not given)
    contacts: each state's contacts and forces (trajectory_files.ContactRecord, from physai.recording.record_contacts)
    actuator_force: (steps+1, nu) each state's actuator forces [N | N m] (MuJoCo's d.actuator_force after mj_forward at
            that state and its ctrl; physai.recording.record_actuator_forces), or None
    save(path) / Trajectory.load(path): a .npz file (physai.trajectory_files; one run, not a rollout's N)
    """

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    energy: np.ndarray
    integrator: str
    dt: float
    ncon: np.ndarray | None = None
    act: np.ndarray | None = None
    model: str | None = None
    contacts: ContactRecord | None = None
    actuator_force: np.ndarray | None = None

    def save(self, path) -> None:
        """Write this run to `path` (NumPy .npz): trajectory_files.save."""
        trajectory_files.save(path, vars(self))

    @classmethod
    def load(cls, path) -> "Trajectory":
        """The run saved at `path`; TrajectoryFileError for a file that is not one (trajectory_files.load)."""
        return cls(**trajectory_files.load(path))


#: The integrator of each mjtIntegrator value.
_BY_CODE = {code: name for name, code in MUJOCO_INTEGRATOR.items()} | {4: DISCRETE}
_NAMES = INTEGRATORS + (DISCRETE,)


def check_integrator(integrator) -> str:
    """The integrator's name in lower case, given by name (any case) or by MuJoCo's mjtIntegrator value as m.opt.integrator
    holds it (0 euler, 1 rk4, 2 implicit, 3 implicitfast, 4 discrete: an int or a mujoco.mjtIntegrator member); raises
    InvalidArgumentError for anything else (True is not 1)."""
    if type(integrator) is str and integrator in _NAMES:           # the usual case, at once
        return integrator
    if isinstance(integrator, str):
        name = integrator.lower()
    elif isinstance(integrator, (bool, np.bool_)) or not hasattr(type(integrator), "__index__"):
        name = None
    else:
        name = _BY_CODE.get(operator.index(integrator))
    if name not in _NAMES:
        raise InvalidArgumentError(f"unknown integrator {integrator!r}; expected one of {', '.join(map(repr, _NAMES))} "
                                   "or MuJoCo's mjtIntegrator value (0-3, e.g. mujoco.mjtIntegrator.mjINT_IMPLICITFAST)")
    return name


def model_options(model, dt=None, integrator=None, euler_damping=None, constraints=None) -> tuple:
    """(dt, integrator, euler_damping, constraints), each None taken from the model as mj_step takes it from m.opt:
    model.opt.timestep [s], model.opt.integrator, model.opt.eulerdamp (MuJoCo's mjDSBL_EULERDAMP off) and constraints on
    when the model has any (has_constraints). The integrator comes back as its name (check_integrator), the others as
    given (checked by the caller)."""
    opt = model.opt
    integrator = check_integrator(opt.integrator if integrator is None else integrator)
    passive.check_integrator(model, integrator)
    dt = opt.timestep if dt is None else dt
    euler_damping = opt.eulerdamp if euler_damping is None else euler_damping
    constraints = _constraints_by_default(model) if constraints is None else constraints
    if integrator == DISCRETE:
        check_discrete(model)
    return dt, integrator, euler_damping, constraints


def check_discrete(model) -> None:
    """UnsupportedModelError for what physai's discrete integrator does not model: fluid forces on a standalone free body
    (their drag joins the free body's own 6 x 6 block solve, which physai's leaves out); the ellipsoid model's are
    refused with the implicit integrators' (passive.check_integrator)."""
    free = set(standalone_free_dofs(model))
    for b in model.fluid_bodyid:
        if free.intersection(model.jnt_dofadr[model.jnt_bodyid == b].tolist()):
            body = model_checks.label(model.body_name[b], b, "body")
            raise UnsupportedModelError(f"the discrete integrator with fluid forces on the standalone free body "
                                        f"{body!r} (their drag joins its 6 x 6 block solve; physai "
                                        "does not model that): choose another integrator")


def has_constraints(model) -> bool:
    """Whether mj_step applies constraints to the model: a kind of constraint its disable flags leave on (mjDSBL_CONSTRAINT
    turns all off; the loader keeps them in model.opt) with something to act on: a limited joint, a dof with friction loss,
    an active equality, or a geom pair that may touch. Made when the model is built (physai.engine.setconst)."""
    return engine.as_model(model).kept("constraints_by_default")


def _constraints_by_default(model) -> bool:
    """has_constraints(model), after checking that physai models them all: else UnsupportedModelError, with the way out
    (checked at each call: a few attribute reads)."""
    if not model.kept("constraints_by_default"):
        return False
    try:
        constraint.check_supported(model)
        collision.check_supported(model)
    except UnsupportedModelError as error:
        raise UnsupportedModelError(f"{error}. The model has constraints, which act by default as in mj_step: pass "
                                    "constraints=False for its smooth dynamics (MuJoCo's mjDSBL_CONSTRAINT)") from None
    return True


def check_timestep(dt) -> float:
    """dt as a float; raises InvalidArgumentError unless it is one finite number > 0 [s] (True is not 1 s)."""
    return validation.number("timestep dt", dt, "s", positive=True)


def check_actuators(model, actuators, ctrl):
    """(actuators, ctrl): the actuators given, else the model's own (MuJoCo's), and ctrl, zeros (nu,) if None.

    ctrl without any actuators raises InvalidArgumentError (it would have nothing to drive), unless it holds no control
    (an array whose last axis has length 0, as MuJoCo's d.ctrl when nu = 0: taken as None); actuators must be a
    physai.forces.Actuators (InvalidArgumentError) acting on the model's nv dofs (ShapeError otherwise, e.g. the
    actuators of another model). ctrl's own shape and values are checked, and clamped, by physai.forces.
    """
    actuators = model.actuators if actuators is None else actuators
    if actuators is None:
        if ctrl is not None and not (isinstance(ctrl, np.ndarray) and ctrl.shape[-1:] == (0,)):
            raise InvalidArgumentError("ctrl was given without actuators; pass actuators=physai.forces.actuators_from_mujoco(m) "
                                       "or a model built by physai.engine.from_mujoco, which has its actuators")
        return None, None
    if not isinstance(actuators, forces.Actuators):
        raise InvalidArgumentError(f"actuators must be physai.forces.Actuators (from physai.forces.actuators_from_mujoco), "
                                   f"got {type(actuators).__name__}")
    if actuators.nv != model.nv:
        raise ShapeError(f"the actuators act on {actuators.nv} dofs (actuators.nv), the model has nv = {model.nv}: "
                         "pass the actuators of the model's own MuJoCo model")
    model_checks.check_transmissions(model, actuators)
    return actuators, np.zeros(actuators.nu) if ctrl is None else ctrl


def refuse_posed_actuators(model, actuators, who: str) -> None:
    """UnsupportedModelError when some actuator (given, else the model's) has moment arms that depend on the
    configuration, which `who` does not model yet (it models constant moment arms)."""
    actuators = model.actuators if actuators is None else actuators
    if actuators is not None and actuators.needs_pose:
        a = int(np.flatnonzero(actuators.posed_each)[0])
        raise UnsupportedModelError(f"{who} models actuators with constant moment arms; actuator {actuators.names[a]!r}'s "
                                    "depend on the configuration (a ball or free joint, a slider-crank, a site, a body or "
                                    "a spatial tendon) (simulate, step and rollout run it)")


def refuse_stateful_actuators(model, actuators, who: str) -> None:
    """UnsupportedModelError when the actuators (given, else the model's) have configuration-dependent moment arms,
    activation dynamics or muscles, which `who` does not model yet (it models stateless actuators with constant arms
    and affine gain and bias)."""
    refuse_posed_actuators(model, actuators, who)
    actuators = model.actuators if actuators is None else actuators
    if actuators is None or actuators.affine:
        return
    a = int(np.flatnonzero(~actuators.affine_each)[0])
    raise UnsupportedModelError(f"{who} models actuators without activation dynamics and with affine gain and bias; "
                                f"actuator {actuators.names[a]!r} has activation dynamics or a muscle's gain or bias "
                                "(simulate, step and rollout run it)")


def clamped_controls(actuators, ctrl: np.ndarray) -> np.ndarray:
    """ctrl (..., nu) clamped to ctrlrange where ctrllimited, as mj_fwdActuation clamps d.ctrl before its check (an
    infinite control of a ctrllimited actuator is its range's end); NaN stays NaN."""
    lo, hi = actuators.ctrlrange[:, 0], actuators.ctrlrange[:, 1]
    return np.where(actuators.ctrllimited, np.clip(ctrl, lo, hi), ctrl)


def bad_controls(u: np.ndarray) -> np.ndarray:
    """Where clamped controls u are what mju_isBad calls bad (NaN or |u| > mjMAXVAL 1e10): mj_step would then step with
    every control zero (mjWARN_BADCTRL), silently for a caller, so physai refuses them by name."""
    return ~(np.abs(u) <= model_checks.MAXVAL)                          # NaN compares False


def bad_control_text(value: float) -> str:
    """Why a control whose clamped value is `value` is refused."""
    if not np.isfinite(value):
        return f"is {value}; ctrl must be finite (or infinite on a ctrllimited actuator, clamped to its ctrlrange)"
    return (f"is {value:g} after clamping to ctrlrange, beyond MuJoCo's mjMAXVAL {model_checks.MAXVAL:g}: mj_step would "
            "step with every control zero (mju_isBad, mjWARN_BADCTRL)")


def check_controls(actuators, name: str, ctrl: np.ndarray) -> np.ndarray:
    """ctrl (..., nu) clamped (clamped_controls); InvalidStateError naming its first entry that is bad after clamping
    (bad_controls): NaN, or infinite or beyond 1e10 on an actuator that is not ctrllimited."""
    u = clamped_controls(actuators, ctrl)
    bad = bad_controls(u)
    if bad.any():
        i = tuple(int(k) for k in np.argwhere(bad)[0])
        what = f"{name}[{', '.join(map(str, i))}]" if i else name
        raise InvalidStateError(f"{what} {bad_control_text(float(ctrl[i]))}")
    return u


def step(model, q, qd, dt=None, integrator=None, ctrl=None, actuators=None, qfrc_applied=None, xfrc_applied=None,
         euler_damping=None, constraints=None, qacc_warmstart=None, return_warmstart: bool = False,
         on_divergence: str = "raise", act=None):
    """One step of `integrator` from one state or N: (q_next, qd_next), new arrays shaped as q and qd; for actuators
    with activation dynamics (na > 0) (q_next, qd_next, act_next), the activations being part of the state.

    model:        a physai.engine.Model (or what physai.engine.as_model takes: a Tree, an MjModel, a name)
    q, qd:        (nq,) joint positions [rad | m | quaternion] and (nv,) velocities [rad/s | m/s], or N of them
                  ((N, nq), (N, nv)): N environments stepped in one call (compiled, on threads); a policy's closed
                  loop takes step_result, which returns the next warm start and the states that failed too
    dt:           the timestep h [s], a finite number > 0; None (default): the model's, model.opt.timestep
    integrator:   "euler", "rk4", "implicit" or "implicitfast" (any case), or MuJoCo's mjtIntegrator value (0-3, e.g.
                  mujoco.mjtIntegrator.mjINT_IMPLICITFAST); None (default): the model's, model.opt.integrator
    ctrl:         (nu,) actuator controls for `actuators` (default the model's own, physai.engine.from_mujoco), or (N, nu)
                  one row per state; clamped to ctrlrange where ctrllimited, as mj_step (an infinite control of a
                  ctrllimited actuator is its range's end). A control that is NaN, or infinite or beyond MuJoCo's mjMAXVAL
                  1e10 after clamping, is refused by name (InvalidStateError; "report": that state), as in simulate and
                  rollout: mj_step would step with every control zero (mju_isBad, mjWARN_BADCTRL), silently for a caller
    qfrc_applied: (nv,) or (N, nv) generalized force added to the joints [N m | N] (MuJoCo's qfrc_applied)
    xfrc_applied: (nbody, 6) or (N, nbody, 6) wrenches at the bodies' centres of mass, as physai.forces.applied_force
    euler_damping: True (MuJoCo's default): euler treats joint damping implicitly, (M + h B) a = f.
                  False reproduces MuJoCo with mjDSBL_EULERDAMP: damping explicit in Euler, M a = f.
                  None (default): the model's (model.opt.eulerdamp). The other integrators ignore it.
    constraints:  True: the model's constraints act as in mj_step (joint limits, friction loss, equalities, and the
                  contacts physai.collision.detect finds at q; see CONSTRAINTS in the module docstring). False: the smooth
                  dynamics (mjDSBL_CONSTRAINT). None (default): True when the model has any (has_constraints).
    qacc_warmstart: (nv,) or (N, nv) where the constraint solver starts (MuJoCo's d.qacc_warmstart: the last step's
                  qacc); default zero, as in a new MjData.
    return_warmstart: deprecated (DeprecationWarning; use step_result): also return the next step's qacc_warmstart,
                  shaped as qd: the last solve's qacc (MuJoCo's d.qacc_warmstart after mj_step; zero without constraints).
    act:          (na,) or (N, na) the activations of the actuators with activation dynamics (MuJoCo's d.act: filters,
                  integrators, muscles, in actuator order); None (default): zero, as in a new MjData. ShapeError for
                  another shape.
    on_divergence: "raise" (default): a state whose step fails raises for the whole call (DivergenceError if its result
                  is not finite, InvalidModelError for a singular matrix). "report" (deprecated here, DeprecationWarning;
                  use step_result): every state is stepped as alone and
                  the call returns a StepStatus last, (q_next, qd_next[, warm], status): status.ok (N,) (() for one state)
                  is False for a state that failed (its result not finite or a singular matrix), or whose own rows of
                  q, qd, ctrl, qfrc_applied, xfrc_applied or qacc_warmstart are not finite or hold a zero quaternion (not
                  stepped); status.errors {state: the error, naming "state n of the step"}. A failed state's q_next and
                  qd_next are NaN (never mistaken for a state) and its warm start zero (a new MjData's): reset it. Errors
                  of the call itself (shapes, a non-finite input shared by every state, a bad option) still raise.
    All inputs are held constant over the step (also across RK4's stages). Raises DivergenceError if the
    result is not finite (on_divergence="raise").
    """
    return_warmstart = validation.flag("return_warmstart", return_warmstart)
    result = step_result(model, q, qd, dt, integrator, ctrl, actuators, qfrc_applied, xfrc_applied, euler_damping,
                         constraints, qacc_warmstart, on_divergence, act)
    stateful = result.act.shape[-1] > 0
    if not return_warmstart and on_divergence == "raise":
        return (result.q, result.qd, result.act) if stateful else (result.q, result.qd)
    warnings.warn("step(..., return_warmstart=True) and step(..., on_divergence='report'), which add values to the "
                  "returned tuple by flag, are deprecated: use step_result(...), which returns a StepResult (q, qd, "
                  "qacc_warmstart, status)", DeprecationWarning, stacklevel=2)
    return ((result.q, result.qd) + ((result.qacc_warmstart,) if return_warmstart else ())
            + ((result.status,) if on_divergence == "report" else ()))


def step_result(model, q, qd, dt=None, integrator=None, ctrl=None, actuators=None, qfrc_applied=None, xfrc_applied=None,
                euler_damping=None, constraints=None, qacc_warmstart=None, on_divergence: str = "raise",
                act=None, observe=None) -> "StepResult":
    """One step of `integrator` from one state or N, as step, with everything it produces: a StepResult (q, qd,
    qacc_warmstart, status, act). The arguments are step's; on_divergence="report" steps every state as alone and reports
    the ones that failed in status (on_divergence="raise", the default, raises, and status is all ok). A policy's loop:

        for k in range(T):
            ctrl = policy(q, qd)                                                # (N, nu), NumPy or a network
            r = step_result(model, q, qd, ctrl=ctrl, qacc_warmstart=warm, on_divergence="report")
            q, qd, warm = r.q, r.qd, r.qacc_warmstart
            for n in r.status.failed:                                           # reset what failed; the others went on
                q[n], qd[n] = model.qpos0, 0.0                                  # (warm[n] is zero already)

    observe: names of MuJoCo's MjData fields to return in StepResult.observed (OBSERVABLE: xpos, xquat, xipos,
    site_xpos, cinert, cvel, cacc, cfrc_int, cfrc_ext, qfrc_actuator, qfrc_constraint, qacc, ten_length, ten_velocity),
    each with MuJoCo's shape and layout (bodies as MuJoCo's ids, row 0 the world), the states' axis first: what MjData
    holds after mj_step then mj_rnePostConstraint (Gymnasium's frame). Like MuJoCo's, they belong to the step's START
    (the forward pass the step integrated from; RK4: its fourth stage), while q and qd are the new state; cacc and
    cfrc_int multiply the start's cdof_dot by the NEW qd, as mj_rnePostConstraint after mj_step does. None or ()
    (default): nothing more computed. UnknownQuantityError for another name. A state that failed
    (on_divergence="report") has NaN there.
    """
    model = engine.as_model(model)
    names = check_observe(observe, model)
    dt, integrator, euler_damping, constraints = model_options(model, dt, integrator, euler_damping, constraints)
    report = _reporting(on_divergence)
    if native.on and actuators is None and xfrc_applied is None and act is None:
        fast = _compiled_step(model, q, qd, dt, integrator, ctrl, qfrc_applied, euler_damping, constraints, qacc_warmstart,
                              names)
        if fast is not None:
            return _built(StepResult, q=fast[0], qd=fast[1], qacc_warmstart=fast[2],
                          status=_built(StepStatus, ok=_all_true(fast[0].shape[:-1]), errors={}), act=fast[3],
                          observed=fast[4])
    options = _step_options(integrator, dt, euler_damping, constraints)
    inputs = dict(ctrl=ctrl, qfrc_applied=qfrc_applied, xfrc_applied=xfrc_applied, qacc_warmstart=qacc_warmstart, act=act)
    caps = {}                                          # {state: (capped step, residual)} of the compiled discrete solve
    if report:
        q_next, qd_next, warm, act_next, status, seen = _step_reporting(model, q, qd, inputs, options, actuators, names,
                                                                        caps)
        _warn_caps(model, caps, q_next.shape[:-1], "step", stacklevel=2)
        return StepResult(q_next, qd_next, warm, status, act_next, seen)
    q_next, qd_next, warm, act_next, seen = _step_batch(model, q, qd, inputs, options, actuators, names=names, caps=caps)
    _warn_caps(model, caps, q_next.shape[:-1], "step", stacklevel=2)
    return StepResult(q_next, qd_next, warm, StepStatus.all_ok(q_next.shape[:-1]), act_next, seen)


#: the names step_result(..., observe=...) takes: MuJoCo's MjData fields (physai.engine.observe.OBSERVABLE)
OBSERVABLE = observe.OBSERVABLE


def check_observe(observe, model=None) -> tuple:
    """observe as a tuple of names of OBSERVABLE (None: ()); UnknownQuantityError naming the valid ones for another,
    InvalidArgumentError for what is not a name or a sequence of names; UnsupportedModelError for the bodies' forces
    (cacc, cfrc_int, cfrc_ext) of a model with spatial tendons (MuJoCo 4 adds their forces on bodies; physai does not)."""
    if observe is None:
        return ()
    names = (observe,) if isinstance(observe, str) else observe
    try:
        names = tuple(names)
    except TypeError:
        raise InvalidArgumentError(f"observe must be a sequence of names, got {observe!r}") from None
    for name in names:
        if not isinstance(name, str) or name not in OBSERVABLE:
            raise UnknownQuantityError(f"observe: {name!r} is not a quantity a step gives; expected any of "
                                       f"{', '.join(OBSERVABLE)}")
    names = tuple(dict.fromkeys(names))
    if model is not None and {"cacc", "cfrc_int", "cfrc_ext"} & set(names) and (model.wrap_type != WRAP_JOINT).any():
        raise UnsupportedModelError("observe: cacc, cfrc_int and cfrc_ext of a model with spatial tendons (MuJoCo 4's "
                                    "mj_rnePostConstraint adds the tendons' forces on the bodies; physai does not)")
    return names


def _step_batch(model, q, qd, inputs: dict, options: StepOptions, actuators, errors: dict | None = None,
                names: tuple = (), caps: dict | None = None):
    """step's full path: (q_next, qd_next, next warm start, act_next, observed), each input checked. errors: None raises
    a state's failure; a dict takes it (state index: the error) instead, the state's outputs NaN and its warm start
    zero. names: the observed fields (step_result's observe), {} without. caps: a dict that takes the states whose
    compiled discrete solve met its iteration cap (_run_all's), for the caller to warn once in step's words."""
    (Q, QD), batch = validation.states(q=(q, model.nq), qd=(qd, model.nv))
    N = Q.shape[1]
    per_state = lambda key, width: _per_state(key, inputs[key], width, batch)         # noqa: E731
    series = _series_inputs(model, actuators, per_state("ctrl", 1), per_state("qfrc_applied", 1),
                            per_state("xfrc_applied", 2), N, 1, batched=True, act=inputs["act"], batch=batch)
    warm = None
    if inputs["qacc_warmstart"] is not None:
        (W,), warm_batch = validation.states(qacc_warmstart=(inputs["qacc_warmstart"], model.nv))
        if warm_batch is not None and warm_batch != N:
            raise ShapeError(f"qacc_warmstart has {warm_batch} states, q has {batch or 'one'}")
        warm = np.ascontiguousarray(np.broadcast_to(W.T, (N, model.nv)))
    shapes = observe.observed_shapes(model)
    seen = {name: np.full((N,) + shapes[name], np.nan) for name in names}
    try:
        Qn, QDn, _, _, warm_out, A = _run_all(model, options, 1, np.ascontiguousarray(Q.T), np.ascontiguousarray(QD.T),
                                              replace(series, warm=warm), False, errors, seen if names else None,
                                              {} if caps is None else caps)
    except PhysaiError as error:
        raise _worded_for_step(error) from None
    if batch is not None:
        return Qn[:, 1], QDn[:, 1], warm_out, A[:, 1], seen
    return Qn[0, 1], QDn[0, 1], warm_out[0], A[0, 1], {name: x[0] for name, x in seen.items()}


def _built(cls, **fields):
    """An instance of the frozen dataclass cls with these fields (all of them), set without its __init__: the fast
    path's results, whose fields it made itself (a microsecond less per step)."""
    obj = object.__new__(cls)
    obj.__dict__.update(fields)
    return obj


@functools.lru_cache(maxsize=64)
def _all_true(shape: tuple) -> np.ndarray:
    """A read-only bool array of `shape`, all True: one per shape, shared by the statuses of a policy's steps."""
    ok = np.ones(shape, bool)
    ok.setflags(write=False)
    return ok


@dataclass(frozen=True)
class StepStatus:
    """Which states of a step(..., on_divergence="report") came through, and why the others did not.

    ok:     bool array shaped as the states' batch, (N,) (or () for one state): True where the state was stepped
    errors: {state index: the error} for each state that was not: the DivergenceError of a result that is not finite,
            the InvalidStateError of an input row that is not finite or holds a zero quaternion, the InvalidModelError
            of a singular matrix; each message names the state ("state 3 of the step ...")
    """

    ok: np.ndarray
    errors: dict

    @classmethod
    def all_ok(cls, shape: tuple) -> "StepStatus":
        return cls(_all_true(shape), {})

    @property
    def failed(self) -> list:
        """The indices of the states that were not stepped, in order."""
        return sorted(self.errors)

    @property
    def messages(self) -> dict:
        """{state index: why it was not stepped}."""
        return {n: str(e) for n, e in sorted(self.errors.items())}


@dataclass(frozen=True)
class StepResult:
    """What step_result gives for one state or N (shaped as the q and qd given):

    q, qd:          the next state, (nq,) and (nv,) or (N, nq) and (N, nv) [rad | m | quaternion], [rad/s | m/s]
    qacc_warmstart: the next step's constraint warm start, shaped as qd: the last solve's qacc (MuJoCo's
                    d.qacc_warmstart after mj_step; zero without constraints, and for a state that failed)
    status:         the StepStatus: which states came through (all, with on_divergence="raise")
    act:            the next activations, (na,) or (N, na) (MuJoCo's d.act after mj_step; NaN for a state that failed)
    observed:       {name: array} of the fields step_result's observe named (MuJoCo's shapes, the states' axis first;
                    NaN for a state that failed); {} without
    """

    q: np.ndarray
    qd: np.ndarray
    qacc_warmstart: np.ndarray
    status: "StepStatus"
    act: np.ndarray | None = None
    observed: dict = field(default_factory=dict)


def _reporting(on_divergence) -> bool:
    """Whether step reports its states' failures (on_divergence "report") rather than raising them ("raise")."""
    if isinstance(on_divergence, str) and on_divergence in ("raise", "report"):
        return on_divergence == "report"
    raise InvalidArgumentError(f"on_divergence must be 'raise' or 'report', got {on_divergence!r}")


#: The per-state inputs of step, by the number of their axes after the state axis.
_STATE_INPUTS = {"q": 1, "qd": 1, "ctrl": 1, "qfrc_applied": 1, "xfrc_applied": 2, "qacc_warmstart": 1, "act": 1}


def _step_reporting(model, q, qd, inputs: dict, options: StepOptions, actuators, names: tuple = (),
                    caps: dict | None = None):
    """step with on_divergence="report": (q_next, qd_next, next warm start, act_next, StepStatus). The states whose own rows of the
    inputs are not finite, or whose q holds a zero quaternion, are left out; the others are stepped in one batch as step
    steps them (each as alone); a state that fails there is reported, not raised. A failed state's q_next and qd_next are
    NaN and its next warm start zero (a new MjData's): reset it before the next step. caps: as _step_batch's, by the
    states' own indices."""
    arrays = {key: validation.to_float(key, x, "numbers") for key, x in dict(q=q, qd=qd, **inputs).items() if x is not None}
    single = arrays["q"].ndim < 2 and arrays["qd"].ndim < 2
    N = 1 if single else len(arrays["q"] if arrays["q"].ndim == 2 else arrays["qd"])
    if single:                                         # one state: every input is its own row
        rows = {key: a[None] for key, a in arrays.items() if a.ndim == _STATE_INPUTS[key]}
    else:
        rows = {key: a for key, a in arrays.items() if a.ndim == _STATE_INPUTS[key] + 1 and len(a) == N}
    errors = _bad_rows(model, rows, N, model.actuators if actuators is None else actuators)
    keep = np.setdiff1d(np.arange(N), list(errors))
    Q, QD = np.full((N, model.nq), np.nan), np.full((N, model.nv), np.nan)
    W = np.zeros((N, model.nv))
    A = np.full((N, _stateful_count(model, actuators)), np.nan)
    shapes = observe.observed_shapes(model)
    seen = {name: np.full((N,) + shapes[name], np.nan) for name in names}
    if len(keep):
        subset = {key: rows[key][keep] if key in rows else a for key, a in arrays.items()}
        found, met = {}, {}
        Q[keep], QD[keep], W[keep], A[keep], part = _step_batch(model, subset.pop("q"), subset.pop("qd"),
                                                                {key: subset.get(key) for key in inputs}, options,
                                                                actuators, found, names, met)
        if caps is not None:
            caps.update({int(keep[k]): cap for k, cap in met.items()})
        for name, x in part.items():
            seen[name][keep] = x
        errors.update({int(keep[k]): _worded_for_step(error, int(keep[k])) for k, error in found.items()})
    ok = np.ones(N, bool)
    ok[list(errors)] = False
    for x in seen.values():                                            # a failed state's fields: NaN, as its state
        x[~ok] = np.nan
    if single:
        return Q[0], QD[0], W[0], A[0], StepStatus(ok[0], errors), {name: x[0] for name, x in seen.items()}
    return Q, QD, W, A, StepStatus(ok, errors), seen


def _stateful_count(model, actuators) -> int:
    """na of the actuators given, else of the model's own (0 without)."""
    actuators = model.actuators if actuators is None else actuators
    return 0 if actuators is None else actuators.na


def _bad_rows(model, rows: dict, N: int, actuators=None) -> dict:
    """{state index: InvalidStateError} of the states whose rows (key: (N, ...) array) are not finite or whose q holds a
    zero quaternion, the first such row of each state named; a ctrl row (of the actuators' nu) is bad where a control is
    after clamping (bad_controls: infinite on a ctrllimited actuator is its range's end, as in mj_step)."""
    errors = {}
    for key, a in rows.items():
        if key == "ctrl" and actuators is not None and a.shape[-1:] == (actuators.nu,):
            bad = bad_controls(clamped_controls(actuators, a))
            for n in np.flatnonzero(bad.any(axis=1)).tolist():
                v = float(a[n][bad[n]][0])
                what = "not finite" if not np.isfinite(v) else f"beyond MuJoCo's mjMAXVAL {model_checks.MAXVAL:g}"
                errors.setdefault(n, InvalidStateError(f"state {n} of the step: its ctrl is {what} (ctrl[{n}] holds "
                                                       f"{v:g}, after clamping to ctrlrange: mj_step would step with "
                                                       "every control zero, mjWARN_BADCTRL); it was not stepped"))
            continue
        for n in np.flatnonzero(~np.isfinite(a.reshape(N, -1)).all(axis=1)).tolist():
            errors.setdefault(n, InvalidStateError(f"state {n} of the step: its {key} is not finite ({key}[{n}] holds "
                                                   f"{a[n][~np.isfinite(a[n])][0]}); it was not stepped"))
    if "q" in rows and rows["q"].shape[-1] == model.nq:
        for n in np.flatnonzero(forward.zero_quaternion(model, rows["q"])).tolist():
            errors.setdefault(n, InvalidStateError(f"state {n} of the step: its q holds a zero quaternion; it was not stepped"))
    return errors


def _worded_for_step(error: Exception, state: int | None = None) -> Exception:
    """The error of step's one-step run in step's words: "state 3 of the step" for "trajectory 3 of the rollout", "the
    step" for "the simulation" (or "state n of the step" for the run alone of a batch's state n), without "at step 1";
    its attributes (trajectory, step) kept."""
    subject = "the step" if state is None else f"state {state} of the step"
    if state is None:
        text = re.sub(r"^trajectory (\d+) of the rollout", r"state \1 of the step", str(error))
    else:
        text = re.sub(r"^trajectory \d+ of the rollout", subject, str(error))
    text = re.sub(r"^the simulation", subject, text).replace(" at step 1", "", 1)
    worded = type(error)(text if text.startswith(("state", "the step")) else f"{subject}: {text}")
    worded.__dict__.update(error.__dict__)
    return worded


def _compiled_step(model, q, qd, dt, integrator, ctrl, qfrc_applied, euler_damping, constraints, qacc_warmstart,
                   names: tuple = (), steps: int = 1, forward_only=None):
    """step's fast path on the compiled backend: (q_next, qd_next, next warm start, act, observed) from one call of the
    rollout kernel, which checks the arrays itself; None whenever anything is not plainly well formed (the full path then
    names what is wrong) or the run diverged. Written for a policy's loop (a few microseconds of Python per call).
    names: the observed fields (step_result's observe), computed in the compiled step (cpp/observe.h) for a model with
    constraints and without gravity compensation (else None: the full path computes them). steps: that many steps with
    ctrl and qfrc_applied held (step_frames), the results those of the last (its observed fields too). forward_only (N,)
    bool (a constrained model's batch): those states take no step, their fields the forward pass's at their state."""
    code = native.INTEGRATOR_CODES.get(integrator) if type(integrator) is str else None
    if (code is None or type(q) is not np.ndarray or type(qd) is not np.ndarray or type(dt) not in (float, np.float64)
            or not 0.0 < dt < np.inf or type(euler_damping) not in _BOOLS or type(constraints) not in _BOOLS):
        return None
    if (constraints and not native.compiled_solver(model)) or not native.runs(model):
        return None
    if names and (not constraints or model.body_gravcomp.any()):
        return None
    if forward_only is not None and (not constraints or q.ndim != 2):
        return None
    if integrator == DISCRETE and not forward.compiled_discrete(model, model.actuators):
        return None                                                # the NumPy engine's discrete metric
    single = q.ndim == 1
    if (q.dtype != np.float64 or qd.dtype != np.float64 or not (single or q.ndim == 2) or q.shape[-1] != model.nq
            or qd.shape != q.shape[:-1] + (model.nv,)):
        return None
    N = 1 if single else len(q)
    inputs = [None, None]
    for k, (x, size) in enumerate(((ctrl, model.nu), (qfrc_applied, model.nv))):
        if x is None:
            continue
        if type(x) is not np.ndarray or x.dtype != np.float64 or x.shape[-1:] != (size,):
            return None
        if k == 0 and size and not (x.max() <= model_checks.MAXVAL and x.min() >= -model_checks.MAXVAL):
            return None                                            # NaN, inf or beyond 1e10: the full path clamps or names
        if x.ndim == 1:                                                # one row for every state
            inputs[k] = x.reshape(1, 1, size) if single and steps == 1 else np.broadcast_to(x, (N, steps, size))
        elif x.ndim == 2 and not single and len(x) == N:               # row n acts on state n (at every step)
            inputs[k] = x.reshape(N, 1, size) if steps == 1 else np.broadcast_to(x[:, None], (N, steps, size))
        else:
            return None
    if ctrl is None and model.nu:
        inputs[0] = np.zeros((N, steps, model.nu))
    warm = qacc_warmstart
    if warm is not None:
        if type(warm) is not np.ndarray or warm.dtype != np.float64 or warm.shape not in ((model.nv,), (N, model.nv)):
            return None
        warm = np.ascontiguousarray(warm.reshape(N, model.nv) if warm.ndim == q.ndim else np.tile(warm, (N, 1)))
    if constraints:
        G = model.geoms                           # the compiled copy's constraint part, after the collision check
        unchecked = not G.ignore_unsupported and collision.has_unsupported_pairs(model)
        if not native.compiled(model).has_constraints or G.unsupported or unchecked:
            collision.check_supported(model)
            constraint.prepare_compiled(model)
    else:
        warm = None
    try:                                                           # the options' fields made once, the inputs per call
        fields = native.step_fields(model, integrator, float(dt), bool(euler_damping), bool(constraints)).copy()
        fields["ctrl"], fields["qfrc_applied"], fields["warm"] = inputs[0], inputs[1], warm
        if steps != 1:
            fields["steps"] = steps
        if forward_only is not None:
            fields["frames"] = np.where(forward_only, 0, steps)
        if names:
            if not native.compiled(model).has_constraints:
                return None
            seen = np.empty((N, _observe_width(model)))
            fields["observe"], fields["observe_body"] = seen, _observe_bodies(model)
        Q, QD, _, stopped, _, near, warm_out, A, capped, residual = native.ROLLOUT(
            model, q.reshape(N, model.nq), qd.reshape(N, model.nv), fields)
    except (PhysaiError, ValueError):
        return None
    observed = _observed_fields(model, seen[0] if single else seen, names) if names else {}
    if single:
        if stopped[0] >= 0:
            return None
        if near[0] >= 0:
            collision.warn_near(model, [int(near[0])], stacklevel=3)
        if capped[0] >= 0:
            warn_capped(model, capped, residual, "step" if steps == 1 else "frames", stacklevel=3)
        return Q[0, -1], QD[0, -1], warm_out[0], A[0, -1], observed
    stopped, near = stopped.tolist(), near.tolist()                # lists: cheaper than numpy's max for a few states
    if max(stopped) >= 0:
        return None
    if max(near) >= 0:
        collision.warn_near(model, sorted(set(near) - {-1}), stacklevel=3)
    if integrator == DISCRETE and capped.max() >= 0:
        warn_capped(model, capped, residual, "step" if steps == 1 else "frames", stacklevel=3)
    return Q[:, -1], QD[:, -1], warm_out, A[:, -1], observed


def warn_capped(model, capped: np.ndarray, residual: np.ndarray, kind: str, stacklevel: int,
                 iterations: int | None = None) -> None:
    """One ConvergenceWarning for a compiled call whose discrete smooth solve stopped at its iteration cap (as
    solver.metric_pcg warns, and MuJoCo counts mjWARN_INERTIA): capped (N,) each run's first such step (-1: none),
    residual (N,) its relative residual; naming the first in time (then by index) as the call's errors name a step
    (kind: "rollout", "step" or "frames"; "forward": constraints.forward_dynamics' states, one state named not, as
    metric_pcg's own words), and how many of the runs met it. stacklevel: counted from the caller; iterations: the
    cap (None: model.opt.iterations)."""
    hit = np.flatnonzero(capped >= 0)
    if not len(hit):
        return
    n = int(min(hit, key=lambda i: (capped[i], i)))
    k, N = int(capped[n]), len(capped)
    if kind == "rollout":
        where = f" at step {k + 1}" + (f" of trajectory {n}" if N > 1 else "")
    elif kind == "frames":
        where = f" at frame {k + 1}" + (f" of state {n}" if N > 1 else "")
    elif kind == "forward":
        where = "" if N == 1 else f" in state {n}"
    else:
        where = " in the step" if N == 1 else f" in state {n} of the step"
    where += f" ({len(hit)} of the {N} runs met it)" if len(hit) > 1 else ""
    iterations = int(model.opt.iterations if iterations is None else iterations)
    warnings.warn(solver.pcg_cap_message(iterations, float(residual[n]), where), ConvergenceWarning,
                  stacklevel=stacklevel + 1)


def _warn_caps(model, caps: dict, shape: tuple, kind: str, stacklevel: int) -> None:
    """warn_capped for the runs in caps ({run: (its first capped step, its residual)}) of a call of `shape` (() one
    state, (N,) N), none when caps is empty."""
    if not caps:
        return
    N = int(np.prod(shape, dtype=int))
    capped, residual = np.full(N, -1), np.zeros(N)
    for n, (k, r) in caps.items():
        capped[n], residual[n] = k, r
    warn_capped(model, capped, residual, kind, stacklevel + 1)


def step_frames(model, q, qd, frames: int, ctrl=None, qacc_warmstart=None, observe=None,
                forward_only=None) -> "StepResult | None":
    """`frames` steps of the model's own options (integrator, timestep, constraints) from N states q (N, nq), qd (N, nv)
    with ctrl (N, nu) held over them, as mj_step(m, d, nstep=frames), in ONE compiled call: the StepResult of the last
    frame (q, qd, its qacc_warmstart, and the observed fields of its last step, as step_result's observe), the same
    numbers as `frames` calls of step_result carrying qacc_warmstart along. None when the compiled step does not take
    it (the NumPy backend, a model with activation states, an input not plainly well formed, a control that is NaN,
    infinite or beyond 1e10, observed fields it does not compute, a state that diverged): the caller then steps frame
    by frame with step_result, which clamps, names or reports what went wrong. Written for a vector environment's frame
    skip (physai.envs): one call, one pass of the threads, instead of `frames`.
    forward_only (N,) bool, or None: the states marked take no frame (a vector environment's autoreset, folded into the
    same call): their q, qd and warm start come back as given, their observed fields those of the forward pass at
    their state (its first evaluation of an Euler step from the given warm start and ctrl: mj_forward's, then
    mj_rnePostConstraint's cacc, cfrc_int and cfrc_ext at that state); None also for a model without constraints, and
    under the discrete integrator (its mj_forward solves in the step's metric, not an Euler step's: not folded).
    InvalidArgumentError when the frames' outputs would not fit in memory."""
    model = engine.as_model(model)
    if isinstance(frames, bool) or not isinstance(frames, (int, np.integer)) or frames < 1:
        raise InvalidArgumentError(f"step_frames: frames must be a positive integer, got {frames!r}")
    names = check_observe(observe, model)
    dt, integrator, euler_damping, constraints = model_options(model)
    if not native.on or (model.actuators is not None and model.actuators.na):
        return None                                                # activations: step_result carries act
    if isinstance(q, np.ndarray) and q.ndim == 2:
        _check_output_size(model, len(q), int(frames))             # the compiled rollout keeps every frame
    if forward_only is not None and (type(forward_only) is not np.ndarray or forward_only.dtype != np.bool_):
        raise InvalidArgumentError(f"step_frames: forward_only must be a numpy bool array, got "
                                   f"{getattr(forward_only, 'dtype', type(forward_only).__name__)}")
    if forward_only is not None and (forward_only.shape != np.shape(q)[:1] or np.ndim(q) != 2):
        raise ShapeError(f"step_frames: forward_only must have shape (N,) for q (N, nq), got {forward_only.shape} "
                         f"for q {np.shape(q)}")
    if forward_only is not None and integrator == "discrete":
        return None
    fast = _compiled_step(model, q, qd, dt, integrator, ctrl, None, euler_damping, constraints, qacc_warmstart, names,
                          steps=int(frames), forward_only=forward_only)
    if fast is None:
        return None
    return _built(StepResult, q=fast[0], qd=fast[1], qacc_warmstart=fast[2],
                  status=_built(StepStatus, ok=_all_true(fast[0].shape[:-1]), errors={}), act=fast[3], observed=fast[4])


def body_quantities(model, q, qd, names=OBSERVABLE, ctrl=None, actuators=None, qfrc_applied=None, xfrc_applied=None,
                    constraints=None, qacc_warmstart=None, act=None) -> dict:
    """{name: MuJoCo's MjData field} at (q, qd) outside a step, as mj_forward then mj_rnePostConstraint leave them:
    names from OBSERVABLE (step_result's observe; UnknownQuantityError for another), each with MuJoCo's shape (bodies as
    MuJoCo's ids, row 0 the world), for one state (q (nq,), qd (nv,)) or N ((N, nq), (N, nv): the states' axis first).
    The inputs are step_result's (ctrl, actuators, qfrc_applied, xfrc_applied, act: one row or one per state); with
    constraints (None: the model's) the contacts at q are solved from qacc_warmstart (zero by default). One forward pass
    per state on the NumPy engine (its compiled pieces inside)."""
    model = engine.as_model(model)
    names = check_observe(names, model)
    _, _, euler_damping, constraints = model_options(model, None, None, None, constraints)
    (Q, QD), batch = validation.states(q=(q, model.nq), qd=(qd, model.nv))
    N = Q.shape[1]
    per_state = lambda key, x, width: _per_state(key, x, width, batch)                  # noqa: E731
    series = _series_inputs(model, actuators, per_state("ctrl", ctrl, 1), per_state("qfrc_applied", qfrc_applied, 1),
                            per_state("xfrc_applied", xfrc_applied, 2), N, 1, batched=True, act=act, batch=batch)
    warm = None if qacc_warmstart is None else np.broadcast_to(validation.to_float("qacc_warmstart", qacc_warmstart,
                                                                                   "numbers"), (N, model.nv))
    shapes = observe.observed_shapes(model)
    out = {name: np.empty((N,) + shapes[name]) for name in names}
    for n in range(N):
        row = series.rows(n)
        run = forward.DynamicsEvaluator(model, model.opt.timestep, StepInputs(row.actuators, _first(row.ctrl),
                                        _first(row.qfrc_applied), _first(row.xfrc_applied)), euler_damping, constraints,
                                        None if row.act is None else np.array(row.act, dtype=float))
        if warm is not None:
            run.warmstart = np.array(warm[n], dtype=float)
        run.observing = True
        q_n, qd_n = np.ascontiguousarray(Q[:, n]), np.ascontiguousarray(QD[:, n])
        # a state whose quantities overflow is refused below by name, not with numpy's warnings
        with np.errstate(over="ignore", invalid="ignore"):
            M, f, _ = run.evaluate(q_n, qd_n, energy=False)
            run.acceleration(q_n, qd_n, M, f)
            observed = run.observed(names, qd_n)
        for name, value in observed.items():
            out[name][n] = value
    for name in names:
        validation.finite_result(name, out[name], state_axis=0)
    return out if batch is not None else {name: x[0] for name, x in out.items()}


def _first(x):
    """Row 0 of a one-step series (1, ...) (None stays None)."""
    return None if x is None else x[0]


def _observe_width(model) -> int:
    """The numbers of one state's observed fields, all of OBSERVABLE in order (cpp/observe.h's row)."""
    _, _, end, _ = _observe_layout(model)[-1]
    return end


@per_model
def _observe_layout(model) -> tuple:
    """((name, start, end, shape), ...) of OBSERVABLE in the compiled step's row (cpp/observe.h's observe_offsets): the
    field's columns start:end, as Python ints (no NumPy call per step)."""
    layout, start = [], 0
    for name, shape in observe.observed_shapes(model).items():
        end = start + int(np.prod(shape))
        layout.append((name, start, end, tuple(int(n) for n in shape)))
        start = end
    return tuple(layout)


@per_model
def _observe_bodies(model) -> np.ndarray:
    """(nbody, 13) the bodies' constants the compiled step's observation reads: mass, ipos (3), inertia (9, body frame)."""
    return np.ascontiguousarray(np.concatenate([model.body_mass[:, None], model.body_ipos,
                                                model.body_inertia.reshape(-1, 9)], axis=1), dtype=float)


def _observed_fields(model, row: np.ndarray, names: tuple) -> dict:
    """{name: its part of the compiled step's rows (..., W), shaped (..., *shape)} for the names asked."""
    lead = row.shape[:-1]
    return {name: row[..., start:end].reshape(lead + shape) for name, start, end, shape in _observe_layout(model)
            if name in names}


_BOOLS = (bool, np.bool_)


def _per_state(name: str, x, inner: int, batch):
    """A step's input with one row per state ((N, ...) with `inner` trailing axes) as (N, 1, ...) for _series_inputs;
    anything else as it is (one value for every state, checked there)."""
    if x is None or batch is None or np.ndim(x) != inner + 1:
        return x
    a = np.asarray(x)
    if a.shape[0] != batch:
        raise ShapeError(f"{name} has {a.shape[0]} rows, q has {batch} states: pass one row per state or one for all")
    return a[:, None]


def simulate(model, q0, qd0, dt=None, steps=None, integrator=None, ctrl=None, actuators=None, qfrc_applied=None,
             xfrc_applied=None, energy=True, euler_damping=None, constraints=None, act=None) -> Trajectory:
    """Run `steps` steps of `integrator` from (q0 (nq,), qd0 (nv,)); returns the Trajectory, with the energy of every state.

    dt [s], integrator, euler_damping and constraints as for step (None: the model's, as mj_step). steps is required.
    ctrl, qfrc_applied and xfrc_applied are either constant, (nu,), (nv,) and (nbody, 6), or one
    row per step, (steps, nu), (steps, nv) and (steps, nbody, 6): row k acts during the step from state k to state
    k+1 (what d.ctrl holds during the (k+1)-th mj_step). energy=False skips the energy (Trajectory.energy is None).
    euler_damping=False: damping explicit in Euler (MuJoCo's mjDSBL_EULERDAMP), see step. The whole loop runs in
    compiled code on the compiled backend (physai.engine.backend); on the NumPy backend one engine workspace serves
    the run and each step evaluates the dynamics once (RK4: four times). Raises DivergenceError at the first step
    whose result is not finite, InvalidStateError at the first state whose energy overflows (energy=False runs it).
    constraints=True: the model's constraints act in every step as in mj_step (see step and
    CONSTRAINTS in the module docstring; the loop runs in Python, each step's solve compiled), warm-started from the
    step before; Trajectory.ncon counts each step's contacts. act (na,): the initial activations of the actuators with
    activation dynamics (None: zero, as a new MjData's); Trajectory.act holds them at every state. A model with such
    actuators (or muscles) runs in the NumPy engine.
    """
    model = engine.as_model(model)
    options, steps = _options(model, integrator, dt, steps, euler_damping, constraints)
    energy = validation.flag("energy", energy)
    q, qd = validation.vector("q0", q0, model.nq), validation.vector("qd0", qd0, model.nv)
    inputs = _series_inputs(model, actuators, ctrl, qfrc_applied, xfrc_applied, 1, steps, batched=False, act=act)
    out = _run_all(model, options, steps, q[None], qd[None], inputs, energy)
    h = options.h
    if energy:
        _refuse_infinite_energy(out.E, h)
    return Trajectory(np.arange(steps + 1) * h, out.Q[0], out.QD[0], out.E[0] if energy else None, options.integrator, h,
                      out.ncon[0] if options.constraints else None, out.A[0])


def rollout(model, q0, qd0, dt=None, steps=None, integrator=None, ctrl=None, actuators=None, qfrc_applied=None,
            xfrc_applied=None, energy=False, euler_damping=None, constraints=None, act=None) -> Trajectory:
    """N independent trajectories of `simulate` in one call (like mujoco.rollout): a Trajectory whose q, qd and
    energy have a leading axis of N, (N, steps+1, nq), (N, steps+1, nv), (N, steps+1); t is (steps+1,).

    q0 (N, nq), qd0 (N, nv): the initial states. ctrl, qfrc_applied, xfrc_applied: constant, (nu,), (nv,),
    (nbody, 6); one row per step shared by every trajectory, (steps, nu), ...; or per trajectory and step, shaped
    (N, steps, nu), ... where an axis of length 1 is broadcast (a constant ctrl per trajectory is ctrl[:, None, :],
    (N, 1, nu)). energy=False (default) skips the energy. On the compiled backend the trajectories share the cores,
    with the GIL released. Without constraints they run side by side in the lanes of the batch kernel's instruction
    set (8 with AVX-512, 4 with AVX2, else 2; implicit one by one, its LU pivoting per trajectory).
    constraints=True (ncon (N, steps)): in blocks as wide as the lanes (8 with AVX-512, 4 with AVX2, else 2;
    cpp/kernels.h's CONSTRAINED_LANES) whose smooth stages run side by side and each trajectory's collision and solve
    alone, or one by one for implicit, discrete, muscles or arms that move with the configuration, spatial tendons,
    implicitfast with standalone free bodies, and models whose standalone free bodies hold three quarters of the dofs
    or more (cpp/kernels.h's lanes_gain; native.constrained_lanes_step tells which). Either way each trajectory
    equals simulate from its own start within rounding. Raises DivergenceError naming the first divergence in time
    (its step, then the lowest index), and InvalidStateError naming the trajectory whose initial state holds a zero
    quaternion, or with energy=True the first state (then trajectory) whose energy overflows although the state is
    finite. act: the initial activations, (na,) for every trajectory or (N, na) (None: zero); Trajectory.act is
    (N, steps+1, na).
    """
    model = engine.as_model(model)
    options, steps = _options(model, integrator, dt, steps, euler_damping, constraints)
    energy = validation.flag("energy", energy)
    q = validation.to_float("q0", q0, f"(N, {model.nq}) numbers")
    if q.ndim != 2 or q.shape[0] < 1:
        raise ShapeError(f"q0 must have shape (N, {model.nq}) with N >= 1 (one initial state per trajectory), got shape {q.shape}")
    N = q.shape[0]
    q, qd = validation.as_array("q0", q, (N, model.nq)), validation.as_array("qd0", qd0, (N, model.nv))
    inputs = _series_inputs(model, actuators, ctrl, qfrc_applied, xfrc_applied, N, steps, batched=True, act=act, batch=N)
    Q, QD, E, ncon, _, A = _run_all(model, options, steps, q, qd, inputs, energy)
    h = options.h
    if energy:
        _refuse_infinite_energy(E, h)
    return Trajectory(np.arange(steps + 1) * h, Q, QD, E if energy else None, options.integrator, h,
                      ncon if options.constraints else None, A)


def _options(model, integrator, dt, steps, euler_damping, constraints) -> tuple[StepOptions, int]:
    """(StepOptions, steps) of simulate and rollout, checked, the model's where None."""
    dt, name, euler_damping, constraints = model_options(model, dt, integrator, euler_damping, constraints)
    if steps is None:
        raise InvalidArgumentError("steps is required: the number of steps to run, a whole number >= 0")
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 0:
        raise InvalidArgumentError(f"steps must be a whole number >= 0, got {steps!r}")
    return _step_options(name, dt, euler_damping, constraints), int(steps)


def _step_options(integrator: str, dt, euler_damping, constraints) -> StepOptions:
    """StepOptions of a checked integrator name, the rest checked here."""
    return StepOptions(integrator, check_timestep(dt), validation.flag("euler_damping", euler_damping),
                       validation.flag("constraints", constraints))


def _series_inputs(model, actuators, ctrl, qfrc_applied, xfrc_applied, N: int, steps: int, batched: bool, act=None,
                   batch: int | None = None) -> RolloutInputs:
    """RolloutInputs: the actuators, ctrl, qfrc_applied and xfrc_applied checked and broadcast to (N, steps, ...) views,
    or None each (no warm start), and the first activations act (N, na) (check_act; batch: the number of states act
    may have rows for, None for one)."""
    acts, _ = check_actuators(model, actuators, ctrl)
    if acts is not None and ctrl is None:
        ctrl = np.zeros(acts.nu)
    if xfrc_applied is not None and np.ndim(xfrc_applied) == 2:
        xfrc_applied = forces.check_xfrc(model, xfrc_applied)          # with the hint for MuJoCo's full array
    return RolloutInputs(acts, *(_series(name, value, N, steps, tail, batched, acts) for name, value, tail in (
        ("ctrl", ctrl, (0 if acts is None else acts.nu,)), ("qfrc_applied", qfrc_applied, (model.nv,)),
        ("xfrc_applied", xfrc_applied, (model.nbody, 6)))), None, check_act(acts, act, N, batch))


def check_act(actuators, act, N: int, batch: int | None = None) -> np.ndarray | None:
    """The first activations as a finite (N, na) array (None stays None: zero): act (na,) for every state, or (batch,
    na) one row per state; ShapeError naming na otherwise, InvalidStateError for NaN or infinity."""
    if act is None:
        return None
    na = 0 if actuators is None else actuators.na
    a = validation.to_float("act", act, f"({na},) numbers")
    rows = a.shape == (batch, na) and batch is not None
    if a.shape != (na,) and not rows:
        per_state = f" or ({batch}, {na}), one row per state" if batch is not None else ""
        raise ShapeError(f"act has shape {a.shape}; the actuators have na = {na} activations (one per actuator with "
                         f"activation dynamics), so act must have shape ({na},){per_state}")
    return np.broadcast_to(validation.as_array("act", a, a.shape), (N, na)).copy()


def _series(name: str, value, N: int, steps: int, tail: tuple, batched: bool, actuators=None):
    """value (tail), (steps, *tail) or, batched, (N | 1, steps | 1, *tail), checked, as a (N, steps, *tail) view; ctrl
    clamped to the actuators' ctrlrange and refused where bad after clamping (check_controls)."""
    if value is None:
        return None
    a = validation.to_float(name, value, f"{tail} or (steps, *{tail}) numbers")
    lead = a.ndim - len(tail)
    allowed = (0, 1, 2) if batched else (0, 1)
    per_step = (steps,) + tail
    expected = " or ".join([str(tail), str(per_step)] + ([str((N, steps) + tail)] if batched else []))
    if lead in allowed and a.shape[lead:] != tail and len(tail) == 1:
        per = " per step" if lead else ""
        raise ShapeError(f"{name} has {a.shape[-1]} entries{per}, the model needs {tail[0]}")
    if lead == 1 and a.shape[1:] == tail and a.shape[0] != steps:
        raise ShapeError(f"{name} must have shape {per_step} (one row per step), got shape {a.shape}")
    if batched and lead == 1 and N == steps and N > 1:
        raise ShapeError(f"{name} of shape {a.shape} is ambiguous with {N} trajectories of {steps} steps: pass "
                         f"{name}[None] for one row per step shared by every trajectory, or {name}[:, None] for one "
                         f"constant {name} per trajectory")
    if lead not in allowed or a.shape[lead:] != tail or \
            (lead == 2 and (a.shape[0] not in (1, N) or a.shape[1] not in (1, steps))):
        raise ShapeError(f"{name} must have shape {expected}, got shape {a.shape}")
    if name == "ctrl" and actuators is not None:
        a = check_controls(actuators, name, a)                            # clamped; NaN or beyond 1e10 refused
    else:
        a = validation.as_array(name, a, a.shape)                         # finite
    return np.broadcast_to(a.reshape((1,) * (2 - lead) + a.shape), (N, steps) + tail)


class RunOutputs(NamedTuple):
    """The outputs of N runs of `steps` steps: Q (N, steps+1, nq), QD (N, steps+1, nv), E (N, steps+1), ncon (N, steps)
    the contacts of each step (zero without constraints), warm_out (N, nv) each run's last solve's qacc and A
    (N, steps+1, na) the activations."""

    Q: np.ndarray
    QD: np.ndarray
    E: np.ndarray
    ncon: np.ndarray
    warm_out: np.ndarray
    A: np.ndarray


def _activations(inputs: RolloutInputs, N: int, steps: int) -> np.ndarray:
    """A (N, steps+1, na) with each run's first activations (inputs.act, zero when None) in A[:, 0]."""
    na = 0 if inputs.actuators is None else inputs.actuators.na
    A = np.zeros((N, steps + 1, na))
    if inputs.act is not None:
        A[:, 0] = inputs.act
    return A


def _run_all(model, options: StepOptions, steps: int, q, qd, inputs: RolloutInputs, energy: bool,
             errors: dict | None = None, observed: dict | None = None, caps: dict | None = None) -> RunOutputs:
    """The RunOutputs of N runs from q (N, nq), qd (N, nv), stepped as options say with the inputs' (N, steps, ...)
    series: compiled when the backend is native (which raises the named error of a singular matrix, naming the
    trajectory and the step), else the Python loop; with constraints, each run starts its solver from inputs.warm[n]
    (default zero) and warm_out is its last solve's qacc. A zero quaternion in an initial state is refused first;
    DivergenceError at the first diverging step in time (ties: the lowest index), on either backend. errors (a dict):
    the runs that fail are not raised but kept there (run index: its error as run alone, "the simulation ..."), their
    outputs NaN and warm starts zero; the others' outputs stand. observed: {name: (N, ...) array} filled with each run's
    last step's observed fields (forward.DynamicsEvaluator.observed; the Python loop). caps: None warns once
    (ConvergenceWarning, as a rollout) for the compiled runs whose discrete solve met its iteration cap; a dict takes
    them instead ({run: (its first capped step, its residual)}), also the runs kept in errors and those run again."""
    batch = _Batch(model, options, steps, q, qd, inputs, energy)
    _check_output_size(model, len(q), steps)
    _refuse_zero_quaternions(model, q)
    constrained = options.constraints
    if constrained:
        constraint.check_supported(model)
        collision.check_supported(model)
    compiled_metric = options.integrator != DISCRETE or forward.compiled_discrete(model, inputs.actuators)
    if native.on and native.runs(model, inputs.actuators) and options.integrator in native.INTEGRATOR_CODES and \
            compiled_metric and (not constrained or native.compiled_solver(model)) and observed is None:
        if constrained:
            constraint.prepare_compiled(model)
        try:
            Q, QD, E, stopped, ncon, near, warm_out, A, capped, residual = native.rollout(model, q, qd, options, steps,
                                                                                          inputs, energy)
        except (InvalidModelError, InvalidStateError) as error:        # the lowest-index trajectory that stopped
            failure = error
        else:
            failure = None
        met = {} if caps is None else caps
        if failure is not None and errors is not None and hasattr(failure, "trajectory"):   # the others, then it alone
            out = _report_failures(batch, [failure.trajectory], None, errors, met)
            _warn_caps(model, met if caps is None else {}, (len(q),), "rollout", stacklevel=2)
            return out
        if failure is not None and errors is not None:          # not one trajectory's: the call's own error
            raise failure
        if errors is not None and (stopped >= 0).any():
            met.update({int(n): (int(capped[n]), float(residual[n])) for n in np.flatnonzero(capped >= 0)})
            out = _report_failures(batch, np.flatnonzero(stopped >= 0).tolist(), RunOutputs(Q, QD, E, ncon, warm_out, A),
                                   errors, {})
            _warn_caps(model, met if caps is None else {}, (len(q),), "rollout", stacklevel=2)
            return out
        if failure is not None:
            k = getattr(failure, "step", 0)
            if len(q) > 1 and k > 0:            # a later trajectory may have stopped earlier: the steps before, again
                _run_all(model, options, k, q, qd, inputs.prefix(k), False)
            raise failure
        for n in sorted(np.flatnonzero(stopped >= 0).tolist(), key=lambda n: (stopped[n], n))[:1]:
            k = int(stopped[n])                                        # the first to stop in time (then by index)
            _check_finite(Q[n, k + 1], QD[n, k + 1], k, options.h, options.integrator, n if len(q) > 1 else None,
                          _deepest_contact(model, Q[n, k]) if constrained else "",
                          k == 0 and _start_overflows(model, Q[n, 0], QD[n, 0], inputs.rows(n)))
            _rerun_alone(batch, n)                                     # another failure
        collision.warn_near(model, sorted(set(near.tolist()) - {-1}), stacklevel=3)
        if caps is None:
            warn_capped(model, capped, residual, "rollout", stacklevel=3)
        else:
            caps.update({int(n): (int(capped[n]), float(residual[n])) for n in np.flatnonzero(capped >= 0)})
        return RunOutputs(Q, QD, E, ncon, warm_out, A)
    N = len(q)
    out = RunOutputs(np.empty((N, steps + 1, model.nq)), np.empty((N, steps + 1, model.nv)), np.empty((N, steps + 1)),
                     np.zeros((N, steps), np.intp), np.zeros((N, model.nv)), _activations(inputs, N, steps))
    out.Q[:, 0], out.QD[:, 0] = q, qd
    first, failed = None, []                                           # (step, trajectory, error) of the first failure
    for n in range(N):
        seen = None if observed is None else {name: x[n] for name, x in observed.items()}
        stop = _python_loop(model, options, steps, inputs.rows(n), energy, RunOutputs(*(x[n] for x in out)), seen)
        failed += [n] if stop is not None else []
        if stop is not None and (first is None or stop[0] < first[0]):
            first = (stop[0], n, stop[1])
    if first is not None and errors is not None:
        return _report_failures(batch, failed, out, errors, {})
    if first is not None:
        k, n, error = first
        if error is not None:                                          # named as the compiled loop names it
            which = "the simulation" if N == 1 else f"trajectory {n} of the rollout"
            raise type(error)(f"{which} at step {k + 1}: {error}") from None
        _check_finite(out.Q[n, k + 1], out.QD[n, k + 1], k, options.h, options.integrator, n if N > 1 else None,
                      _deepest_contact(model, out.Q[n, k]) if constrained else "",
                      k == 0 and _start_overflows(model, out.Q[n, 0], out.QD[n, 0], inputs.rows(n)))
    return out


@dataclass(frozen=True)
class _Batch:
    """The arguments of one _run_all call, to run some of its runs again."""

    model: object
    options: StepOptions
    steps: int
    q: np.ndarray
    qd: np.ndarray
    inputs: RolloutInputs
    energy: bool

    def run(self, index, errors: dict | None = None, caps: dict | None = None) -> RunOutputs:
        """_run_all of the runs `index` (an index array or a slice); caps: None warns, a dict takes the runs that met
        the discrete solve's cap by their indices in this batch (not in the subset)."""
        met = None if caps is None else {}
        out = _run_all(self.model, self.options, self.steps, self.q[index], self.qd[index], self.inputs.rows(index),
                       self.energy, errors, caps=met)
        if caps is not None:
            caps.update({int(np.arange(len(self.q))[index][k]): cap for k, cap in met.items()})
        return out


def _report_failures(batch: _Batch, failed: list, out: RunOutputs | None, errors: dict, caps: dict) -> RunOutputs:
    """_run_all's outputs of `batch` whose runs `failed` stopped: each failed run again alone, its error into errors and
    its outputs NaN (warm start zero), or, if it runs alone, those outputs. out: the batch's outputs, or None when the
    batch gave none (then every other run is run again, in one batch). caps: takes the runs run again here that met
    the discrete solve's cap, by their indices in the batch (_Batch.run)."""
    model, steps = batch.model, batch.steps
    if out is None:
        N = len(batch.q)
        out = RunOutputs(np.full((N, steps + 1, model.nq), np.nan), np.full((N, steps + 1, model.nv), np.nan),
                         np.full((N, steps + 1), np.nan), np.zeros((N, steps), np.intp), np.zeros((N, model.nv)),
                         np.full(_activations(batch.inputs, N, steps).shape, np.nan))
        others, found = np.setdiff1d(np.arange(N), failed), {}
        if len(others):
            for part, value in zip(out, batch.run(others, found, caps)):
                part[others] = value
            errors.update({int(others[k]): error for k, error in found.items()})
    for n in failed:
        try:
            alone = batch.run(slice(n, n + 1), caps=caps)
        except (DivergenceError, InvalidStateError, InvalidModelError) as error:
            errors[n], alone = error, (np.nan, np.nan, np.nan, 0, 0.0, np.nan)
        for part, value in zip(out, alone):
            part[n] = value
    return out


def _check_output_size(model, N: int, steps: int) -> None:
    """InvalidArgumentError when the outputs of N runs of `steps` steps (q, qd, energy and t: 8 bytes a number) would
    not fit in this machine's memory, before anything is allocated."""
    size = 8 * (steps + 1) * (N * (model.nq + model.nv + 1) + 1)
    memory = validation.machine_memory()
    if size > memory:
        raise InvalidArgumentError(f"steps={steps}: the outputs of {N} run(s) would take {size / 1e9:.3g} GB, more than "
                                   f"this machine's {memory / 1e9:.3g} GB of memory; expected fewer steps (run in "
                                   "pieces, each starting from the last state of the one before)")


def _rerun_alone(batch: _Batch, n: int) -> None:
    """Trajectory n of a compiled rollout that stopped without diverging, run again alone (the same operations, the same
    numbers): the compiled loop raises the named error of what stopped it (a singular matrix), raised here naming
    trajectory n. The compiled rollout names only the lowest-index failure of a batch; the first in time comes here."""
    alone = slice(n, n + 1)
    try:
        native.rollout(batch.model, batch.q[alone], batch.qd[alone], batch.options, batch.steps, batch.inputs.rows(alone))
    except (InvalidStateError, InvalidModelError) as error:
        text = str(error)
        alone = "the simulation"                                       # native.Kernel.failed's words for one trajectory
        raise type(error)(f"trajectory {n} of the rollout{text[len(alone):]}" if text.startswith(alone) else text) from None


def _refuse_zero_quaternions(model, q: np.ndarray) -> None:
    """InvalidStateError naming the first trajectory whose initial state (a row of q (N, nq)) holds a zero quaternion,
    and the quaternion, on either backend: "trajectory 5 of the rollout at step 1: q[3:7] is a zero quaternion; ..."."""
    iq = model.coords.quats()[0]
    for n in np.flatnonzero(forward.zero_quaternion(model, q))[:1]:
        try:
            joints.quat_to_mat(q[n][iq][..., None], iq[:, 0])
        except InvalidStateError as e:
            which = "the simulation" if len(q) == 1 else f"trajectory {n} of the rollout"
            raise InvalidStateError(f"{which} at step 1: {e}") from None


def _python_loop(model, options: StepOptions, steps: int, inputs: RolloutInputs, energy: bool, out: RunOutputs,
                 observed: dict | None = None):
    """The simulation of one trajectory from out.Q[0], out.QD[0] step by step in Python, in place; inputs: its (steps, ...)
    ctrl, qfrc, xfrc or None; with constraints, each step's contact count into out.ncon, the solver from inputs.warm
    (default zero), its last qacc into out.warm_out. Returns None, or where the run stopped: (step k, None) when
    Q[k + 1], QD[k + 1] are not finite, (step k, the error) when step k raised the named error of a singular matrix.
    observed: {name: view to fill} with the last step's observed fields (DynamicsEvaluator.observed)."""
    Q, QD, E, ncon, warm_out, A = out
    acts, ctrls, applied, xfrc = inputs.actuators, inputs.ctrl, inputs.qfrc_applied, inputs.xfrc_applied
    constrained = options.constraints
    stepper = forward.STEPPERS[options.integrator]
    row = lambda x, k: None if x is None or k >= len(x) else x[k]    # noqa: E731  (steps = 0: no row)
    run = forward.DynamicsEvaluator(model, options.h, StepInputs(acts, row(ctrls, 0), row(applied, 0), row(xfrc, 0)),
                            options.euler_damping, constrained, A[0].copy())
    if inputs.warm is not None:
        run.warmstart = np.array(inputs.warm, dtype=float)
    run.observing, run.with_energy = observed is not None, energy
    for k in range(steps):
        run.inputs, run.ncon = StepInputs(acts, row(ctrls, k), row(applied, k), row(xfrc, k)), None
        try:
            with np.errstate(over="ignore", invalid="ignore"):        # a diverging step is reported by name
                Q[k + 1], QD[k + 1], E[k] = forward.guarded(stepper, run, Q[k], QD[k])
        except (InvalidModelError, InvalidStateError) as error:
            return k, error
        ncon[k], A[k + 1] = run.ncon or 0, run.act
        if constrained:
            warm_out[:] = run.warmstart
        if not (np.isfinite(Q[k + 1]).all() and np.isfinite(QD[k + 1]).all()):
            return k, None
        if observed and k == steps - 1:
            for name, value in run.observed(tuple(observed), QD[k + 1]).items():
                observed[name][...] = value
    if energy:                                         # NaN where it overflows: _refuse_infinite_energy names it
        E[steps] = forward.energy_or_nan(engine.energy, model, Q[steps], QD[steps])
    return None


def _refuse_infinite_energy(E: np.ndarray, h: float) -> None:
    """InvalidStateError at the first state in time (then by trajectory) of runs that did not diverge whose energy E
    (N, steps+1) [J] is not finite (inf from the compiled loop, inf or NaN from the Python one): physai.engine.energy's
    rule, which simulate's energy is, on either backend."""
    bad = ~np.isfinite(E)
    if bad.any():
        k = int(np.flatnonzero(bad.any(axis=0))[0])
        n = int(np.flatnonzero(bad[:, k])[0])
        which = "the simulation" if len(E) == 1 else f"trajectory {n} of the rollout"
        raise InvalidStateError(f"the energy of {which} is not finite at state {k} (t = {k * h:.6g} s) although the "
                                "state and its forces are: it overflows (1/2 qd^T M qd or a spring's 1/2 k q^2 beyond "
                                "1.8e308); run with energy=False for the trajectory without it")


def _check_finite(q, qd, k: int, h: float, name: str, trajectory: int | None = None, contact: str = "",
                  start_overflows: bool = False) -> None:
    """DivergenceError when the state after step k is not finite; start_overflows: the start state's own accelerations
    are not finite (no timestep or integrator can help: the advice is the state's range)."""
    if not (np.isfinite(q).all() and np.isfinite(qd).all()):
        which = "the simulation" if trajectory is None else f"trajectory {trajectory} of the rollout"
        advice = ("; the start state's own accelerations are not finite (they overflow double precision): bring q, qd "
                  "and the inputs within range" if start_overflows else "; use a smaller timestep" +
                  (", or the implicitfast or rk4 integrator" if name == "euler" else " or another integrator"))
        raise DivergenceError(f"{which} diverged at step {k + 1} (t = {(k + 1) * h:.6g} s) with the {name} "
                              f"integrator at dt = {h:g} s: the state is no longer finite{contact}{advice}")


def _start_overflows(model, q, qd, row) -> bool:
    """Whether the smooth accelerations at a run's start state (q, qd, with its first inputs `row`) are not finite."""
    try:
        body_quantities(model, q, qd, ("qacc",), _first(row.ctrl), row.actuators, _first(row.qfrc_applied),
                        _first(row.xfrc_applied), constraints=False, act=row.act)
    except InvalidStateError:
        return True
    return False


def _deepest_contact(model, q) -> str:
    """', its deepest contact before: geom ... with geom ..., d m deep' at the last finite state q of a constrained run
    that diverged (physai.collision.detect again), or '' when it had none (or q cannot be read)."""
    try:
        contacts = collision.numpy_detect(model, q)
    except (PhysaiError, ValueError, FloatingPointError):
        return ""
    if not len(contacts):
        return ", with no contact the step before"
    c = int(np.argmin(contacts.dist))
    g1, g2 = contacts.geom[c]
    G = model.geoms
    return (f"; the step before, its deepest contact was {G.describe(int(g1))} with {G.describe(int(g2))}, "
            f"{-contacts.dist[c]:.3g} m deep")


def smooth_force(model, q, qd, ctrl=None, actuators=None, qfrc_applied=None, xfrc_applied=None) -> np.ndarray:
    """MuJoCo's qfrc_smooth: actuator + passive + applied - bias (nv,) [N m | N], the f of M a = f."""
    model = engine.as_model(model)
    q, qd = validation.vector("q", q, model.nq), validation.vector("qd", qd, model.nv)
    run = forward.DynamicsEvaluator(model, 1.0, step_inputs(model, actuators, ctrl, qfrc_applied, xfrc_applied))
    return run.evaluate(q, qd, energy=False)[1]


def step_inputs(model, actuators, ctrl, qfrc_applied, xfrc_applied) -> StepInputs:
    """The StepInputs (physai.engine.data) of a step, checked: the actuators (given, else the model's) and ctrl
    (check_actuators), qfrc_applied (nv,), xfrc_applied (nbody, 6) (physai.forces.check_xfrc)."""
    actuators, ctrl = check_actuators(model, actuators, ctrl)
    if qfrc_applied is not None:
        qfrc_applied = validation.vector("qfrc_applied", qfrc_applied, model.nv)
    if xfrc_applied is not None:
        xfrc_applied = forces.check_xfrc(model, xfrc_applied)
    return StepInputs(actuators, ctrl, qfrc_applied, xfrc_applied)


def velocity_derivative(model, q, qd, integrator: str, actuators=None, ctrl=None, act=None, dt: float | None = None) -> np.ndarray:
    """D = d f / d qd as the single-step integrator uses it (nv, nv): the matrix in M - h D.

    euler:        -B                                   (B = diag(damping); actuators stay explicit)
    implicitfast: sym(dA/dqd) - B + dF/dqd             (dA/dqd from physai.forces.actuator_velocity_derivative)
    implicit:     dA/dqd - B + dF/dqd - dc/dqd         (dc/dqd = bias_velocity_derivative)
    dF/dqd is the fluid's inertia boxes' (physai.engine.passive.fluid_velocity_derivative, MuJoCo's mjd_passive_vel) and
    the tendon dampers' -J^T diag(b) J.
    Like MuJoCo's qDeriv, D keeps only the entries of the mass matrix's sparsity pattern (dof pairs where one
    is an ancestor of the other): a fixed tendon coupling two branches, such as the Panda's fingers, drops out.
    act (na,), dt [s]: the activations and, for actearly, the step (physai.forces.actuator_velocity_derivative).
    Raises InvalidArgumentError for rk4, which has no such matrix, and for ctrl without actuators.
    """
    model = engine.as_model(model)
    name = check_integrator(integrator)
    actuators, ctrl = check_actuators(model, actuators, ctrl)
    if name == "rk4":
        raise InvalidArgumentError("rk4 has no velocity-derivative matrix; it is a 4-stage explicit method")
    return forward.velocity_derivative(model, q, qd, name, actuators, ctrl, act, dt)


def step_matrix(model, q, qd, h: float, integrator: str, actuators=None, ctrl=None, M=None,
                euler_damping: bool = True, act=None) -> np.ndarray:
    """The matrix a single-step integrator solves with (nv, nv) [kg m^2 | kg]: M - h D, h [s].

    euler: M + h B, or M without damping or with euler_damping=False (MuJoCo's mjDSBL_EULERDAMP: the damping
    stays explicit in f); discrete: M + h B + h^2 K (discrete_stiffness). M (optional) is mass_matrix(model, q) (tendon
    armature included) if already computed; act (na,) the activations.
    """
    model = engine.as_model(model)
    name = check_integrator(integrator)
    actuators, ctrl = check_actuators(model, actuators, ctrl)
    M = mass_matrix(model, q) if M is None else M
    return forward.step_matrix(model, q, qd, h, name, actuators, ctrl, M, euler_damping, act)


def mass_matrix(model, q) -> np.ndarray:
    """MuJoCo's M (nv, nv) [kg m^2 | kg] at q (nq,): the rigid bodies' (engine.mass_matrix) and the tendons' armature
    (physai.tendons.armature)."""
    model = engine.as_model(model)
    M = engine.mass_matrix(model, q)
    return M + tendons.armature(model, q) if model.tendon_armature.any() else M


def rk4_stages(model, q, qd, dt, ctrl=None, actuators=None, qfrc_applied=None, xfrc_applied=None):
    """The four stages of one RK4 step: a list of (q_i, qd_i, qdd_i, M_i), i = 1..4, M_i = M(q_i).

    Stage 1 is the start state; stage i + 1 is (q (+) h c qd_i, qd + h c qdd_i) with c = 1/2, 1/2, 1. The stages are
    the smooth dynamics': the model's contacts, limits and equalities do not enter (step(..., "rk4") with constraints
    solves them in every stage, as mj_RungeKutta does). MuJoCo evaluates its energy in every stage's mj_forward, so
    after an RK4 mj_step d.energy holds the energy of stage 4, not of the start or of the end state. Raises
    DivergenceError naming the first stage that is not finite (a state whose stages overflow within the step).
    """
    model = engine.as_model(model)
    h = check_timestep(dt)
    q, qd = validation.vector("q", q, model.nq), validation.vector("qd", qd, model.nv)
    run = forward.DynamicsEvaluator(model, h, step_inputs(model, actuators, ctrl, qfrc_applied, xfrc_applied))
    run.with_energy = False                            # the stages carry no energy
    with np.errstate(over="ignore", invalid="ignore"):           # a diverging stage is named below
        stages = [s[:4] for s in forward.rk4_stages(run, q, qd)]
    _refuse_diverging_stage(stages, h)
    return stages


def _refuse_diverging_stage(stages: list, h: float) -> None:
    """DivergenceError naming the first of RK4's stages (q_i, qd_i, qdd_i, M_i) that is not finite and its first such
    field (in that order: the compiled evaluation leaves M NaN too where the bias overflows), as step's for a diverging
    step; stage 1 is the state itself."""
    for i, stage in enumerate(stages, 1):
        bad = next((f"{name}_{i}" for name, x in zip(("q", "qd", "qdd", "M"), stage) if not np.isfinite(x).all()), None)
        if bad is not None:
            if i == 1:                                 # no timestep helps: the state's or its inputs' forces overflow
                raise DivergenceError(f"RK4's stage 1 of 4 diverged at dt = {h:g} s: {bad} is not finite (the state's "
                                      "or its inputs' forces overflow double precision); bring q, qd and the applied "
                                      "forces and controls within range")
            raise DivergenceError(f"RK4's stage {i} of 4 diverged at dt = {h:g} s: {bad} is not finite (the stages' "
                                  "states overflow within the step); use a smaller timestep")
