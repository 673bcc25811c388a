"""The forward pipeline and the integrators, named after MuJoCo's engine_forward.c (mirrored function by function by the
compiled engine's cpp/forward.h): one step from (q, qd) of one state, each returning (q_next, qd_next, energy of (q, qd)).

    euler(run, q, qd)           semi-implicit Euler, joint damping implicit                      (mj_Euler)
    implicit(run, q, qd)        implicit in velocity, (M - h D) a = f                          (mj_implicit)
    implicitfast(run, q, qd)    the same without the bias's derivative, D symmetrized           (mj_implicit)
    runge_kutta(run, q, qd)     classic 4th-order Runge-Kutta, inputs held over the step        (mj_RungeKutta)
    discrete(run, q, qd)        implicit in velocity and position, (M + h B + h^2 K) a = f - h K qd (+ J^T f_c) (mjINT_DISCRETE)
    STEPPERS                    each integrator's name to its function
    DynamicsEvaluator           the forward pipeline of one run (engine.DynamicsEvaluator)
    step_matrix, velocity_derivative, free_body_solve   the single-step integrators' M - h D and its pieces

`run` is the forward pipeline of one run (DynamicsEvaluator below: a model, the timestep h [s], the
inputs, the activations act (na,) of the state being stepped, and one workspace), which gives what a step needs at a
state: evaluate(q, qd, act) -> (M, f, potential energy) with f MuJoCo's qfrc_smooth and the activations' rate in
run.act_dot; acceleration(q, qd, M, f) -> (qacc, qfrc_constraint), M^-1 f or the constrained solve;
step_matrix(q, qd, M, integrator) -> M - h D (discrete: M + h B + h^2 K);
discrete_step_metric(q, qd, M) -> DiscreteMetric (M + h B + h^2 K, and which free bodies the step solves in it);
rows(q, qd, M, discrete) -> the solve's rows; free_blocks(q, qd, M, skip) and free_body_solve(q, qd, M, rhs, qacc).
The equations are in physai.integrators' docstring.

cpp/forward.h's coupling_metric has no function of its name here: it forms C = h B_c + h^2 K_c from coupling_terms'
tendon and servo parts (discrete_metric_terms' B_c, K_c), factored_metric's C = M_hat - backbone.
"""

from typing import NamedTuple

import numpy as np

from physai import joints, validation
from physai.engine import actuation, api, collision, constraint, native, observe, passive, smooth, solver, support, tendon
from physai.engine.actuators import MUSCLE, TRN_BODY
from physai.engine.data import Data, StepInputs
from physai.engine.loaders import as_model
from physai.engine.support import standalone_free_dofs
from physai.exceptions import InvalidStateError, UnsupportedModelError
from physai.linalg import solve

#: RK4's stage times c_2..c_4 (MuJoCo's tableau A is diag(1/2, 1/2, 1)) and weights b_1..b_4
RK4_TIMES = (0.5, 0.5, 1.0)
RK4_WEIGHTS = (1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0)


def advance(model, q, qd, h):
    """q (+) h qd (physai.joints.integrate, MuJoCo's mj_integratePos) for one state."""
    return joints.integrate(model.coords, q[:, None], qd[:, None], h)[:, 0]


def advance_activation(run, act_dot):
    """run.act after the step (mj_advance): act + h act_dot (filterexact exactly), clamped to actrange (actuation.
    next_activation); nothing without activations."""
    if len(run.act):
        run.act = actuation.next_activation(run.inputs.actuators, run.act, act_dot, run.h)


def _semi_implicit_update(run, q, qd, qacc, M, potential):
    """(q_next, qd_next, energy of (q, qd)) of a single-step integrator: qd' = qd + h a, q' = q (+) h qd'; the
    activations advance at the start state's rate."""
    advance_activation(run, run.act_dot)               # act' = act + h act_dot, clamped
    qd_next = qd + run.h * qacc                        # new velocity first...
    return advance(run.model, q, qd_next, run.h), qd_next, start_energy(qd, M, potential)   # ...then the position


def start_energy(qd, M, potential) -> float:
    """The energy 1/2 qd^T M qd + U [J] of the state a step starts from, 0 when the run does not ask for it (potential
    None: DynamicsEvaluator.with_energy False, as cpp/forward.h's without x.energy)."""
    return 0.0 if potential is None else 0.5 * qd @ M @ qd + potential


def energy_or_nan(energy_of, model, q, *rest) -> float:
    """energy_of(model, q, *rest) (api.energy or api.potential_energy) of one state, NaN where it overflows (finite
    forces, an energy beyond 1.8e308) instead of its InvalidStateError: the step goes on and physai.integrators names
    the state after the run, as for the compiled loop's inf. A zero quaternion in q is refused as ever."""
    try:
        return energy_of(model, q, *rest)
    except InvalidStateError:
        if zero_quaternion(model, q):
            raise
        return np.nan


def euler(run, q, qd):
    """One semi-implicit Euler step (mj_Euler): (M + h B) a = f (+ qfrc_constraint) when the joint damping is implicit
    (run.euler_damping and the model has damping), else the acceleration M^-1 f or the constrained solve's qacc."""
    M, f, potential = run.evaluate(q, qd, energy=run.with_energy)
    qacc, qfrc = run.acceleration(q, qd, M, f)    # M^-1 f, or the constrained solve
    if run.euler_damping and (run.model.dof_damping > 0).any():   # (M + h B)^-1 (f + qfrc_constraint)
        qacc = solve(run.step_matrix(q, qd, M, "euler"), f + qfrc)
    return _semi_implicit_update(run, q, qd, qacc, M, potential)


def implicit(run, q, qd, fast: bool = False):
    """One implicit-in-velocity step (mj_implicit): (M - h D) a = f (+ qfrc_constraint), D = dA/dqd - B - dc/dqd;
    fast (implicitfast): D = sym(dA/dqd - B), the standalone free bodies' rows solved again in their own blocks."""
    M, f, potential = run.evaluate(q, qd, energy=run.with_energy)
    qfrc = run.acceleration(q, qd, M, f)[1]       # the constrained solve (its warm start), or zero
    qacc = solve(run.step_matrix(q, qd, M, "implicitfast" if fast else "implicit"), f + qfrc)
    if fast:                                       # standalone free bodies: their block with the bias derivative
        qacc = run.free_body_solve(q, qd, M, f + qfrc, qacc)
    return _semi_implicit_update(run, q, qd, qacc, M, potential)


def implicitfast(run, q, qd):
    """implicit(run, q, qd, fast=True): MuJoCo's implicitfast."""
    return implicit(run, q, qd, fast=True)


def discrete(run, q, qd):
    """One step of MuJoCo 4's discrete integrator (mjINT_DISCRETE): (M + h B + h^2 K) a = f - h K qd (+ J^T f_c), B the
    joint damping, K the joint stiffness (f at the end of the step to first order in h), a the step map (qd' - qd) / h;
    with constraints, the solver minimises in the metric M + h B + h^2 K with the rows at the end of the step
    (constraint.rows' discrete_h); standalone free bodies solved again in their blocks as implicitfast's (without
    actuator damping) unless a row or a tendon or actuator term of the metric reaches them (discrete_metric_terms)."""
    M, f, potential = run.evaluate(q, qd, energy=run.with_energy)
    qacc = discrete_acceleration(run, q, qd, M, f)
    run.settle(qacc)                                   # the step map, free bodies included: d.qacc, the next warm start
    return _semi_implicit_update(run, q, qd, qacc, M, potential)


def discrete_acceleration(run, q, qd, M, f):
    """The discrete step's a (nv,) = (qd' - qd) / h at (q, qd) after run.evaluate gave M and f (MuJoCo 4's mj_forward
    qacc under mjINT_DISCRETE; physai.constraints.forward_dynamics takes it for such a model)."""
    metric = run.discrete_step_metric(q, qd, M)
    rhs = f - run.h * metric.K @ qd                    # f at the step's end, to first order: f - h K qd
    back = cg_backbone(run.model, run.h, M, metric.M_hat, metric.B_joint)
    slip = back if run.constrained and run.model.opt.noslip_iterations else None   # noslip's Delassus matrix in it too
    qacc = run.acceleration(q, qd, metric.M_hat, rhs, discrete=True, noslip_metric=slip, backbone=back, inertia=M)[0]
    skip = metric.skipped(run.solved[1] if run.constrained else None)     # solved in M^: reached by rows or couplings
    return run.free_body_solve(q, qd, M, rhs, qacc, skip, actuator_damping=False)


class DiscreteMetric(NamedTuple):
    """The discrete step's metric at a state (DynamicsEvaluator.discrete_step_metric): M_hat = M + h B + h^2 K (nv, nv),
    K (nv, nv), coupled (nv,) bool the dofs its tendon and actuator terms reach and B_joint (nv, nv) B's joints' and
    fluid's part (discrete_metric_terms)."""
    M_hat: np.ndarray
    K: np.ndarray
    coupled: np.ndarray
    B_joint: np.ndarray

    def skipped(self, rows) -> np.ndarray:
        """(nv,) bool: the dofs whose standalone free bodies the step leaves in M_hat's solve instead of solving them
        again in their own blocks: those the coupled terms reach and those the rows (constraint.Rows; None: none) move."""
        return self.coupled if rows is None else self.coupled | (rows.J != 0).any(axis=0)


def rk4_stages(run, q, qd):
    """The stages (q_i, qd_i, qdd_i, M_i, k_i): k_i is qd_i in q's tangent space (joints.dexp_inv; qd_i itself for
    hinges and slides), the velocity the positions advance with (Runge-Kutta-Munthe-Kaas, as MuJoCo 4 on quaternions).
    The activations ride along: stage i at act + h c act_dot_(i-1), unclamped; each stage's act_dot into
    run.stage_act_dot."""
    stages, energy, warm = [], None, run.warmstart
    qi, qdi, theta, act_i = q, qd, None, run.act
    run.stage_act_dot = []
    for c in (None,) + RK4_TIMES:
        if c is not None:                              # stage i uses only stage i - 1 (A is diagonal)
            step = c * stages[-1][4]                   # q_i = q (+) h step, step = c k_(i-1) (MuJoCo's dX)
            qi, qdi, theta = advance(run.model, q, step, run.h), qd + run.h * (c * stages[-1][2]), run.h * step
            act_i = run.act + run.h * (c * run.stage_act_dot[-1])
        M, f, potential = run.evaluate(qi, qdi, act_i, energy=c is None and run.with_energy)   # the start state's alone
        run.stage_act_dot.append(run.act_dot)
        energy = start_energy(qdi, M, potential) if c is None else energy
        k = qdi if c is None else joints.dexp_inv(run.model.coords, theta[:, None], qdi[:, None])[:, 0]
        run.warmstart = warm                           # every stage starts from the last step's qacc, as MuJoCo's;
        stages.append((qi, qdi, run.acceleration(qi, qdi, M, f)[0], M, k))    # the next step from stage 4's
    run.start_energy = energy
    return stages


def rk4_step(run, q, qd):
    """One RK4 step: (q_next, qd_next, stages), the stages as rk4_stages gives them (physai.inverse shoots with it)."""
    stages = rk4_stages(run, q, qd)
    dq = sum(b * s[4] for b, s in zip(RK4_WEIGHTS, stages))       # positions advance with the stage velocities k_i
    dqd = sum(b * s[2] for b, s in zip(RK4_WEIGHTS, stages))
    run.settle(dqd, warm_start=False)                  # MuJoCo 4 leaves the stages' weighted qacc in d.qacc
    advance_activation(run, sum(b * a for b, a in zip(RK4_WEIGHTS, run.stage_act_dot)))   # act' from the weighted rates
    return advance(run.model, q, dq, run.h), qd + run.h * dqd, stages


def runge_kutta(run, q, qd):
    """One classic RK4 step (mj_RungeKutta) with the inputs held over the step: (q_next, qd_next, energy of (q, qd))."""
    q_next, qd_next, _ = rk4_step(run, q, qd)
    return q_next, qd_next, run.start_energy


#: each integrator's name (physai.integrators.INTEGRATORS) to its step
STEPPERS = {"euler": euler, "implicit": implicit, "implicitfast": implicitfast, "rk4": runge_kutta, "discrete": discrete}


# ---------------------------------------------------------------- the forward pipeline of one run


class DynamicsEvaluator:
    """The forward pipeline of one run (MuJoCo's mj_forward for one state; engine.DynamicsEvaluator): a model, a timestep
    h [s], the StepInputs (physai.engine.data), and one workspace reused by every evaluation of the dynamics:
    evaluate(q, qd) -> (M, f, potential energy), the pieces every integrator steps with (physai.inverse and
    physai.derivatives step with them too); acceleration(q, qd, M, f) -> (qacc, qfrc_constraint), the forward dynamics
    with the model's constraints when `constrained` (MuJoCo's mj_fwdConstraint: contacts detected at q, Newton's method
    warm-started from the last solve's qacc, kept in `warmstart`, zero at first as in a new MjData)."""

    def __init__(self, model, h: float, inputs: StepInputs, euler_damping: bool = True, constrained: bool = False,
                 act: np.ndarray | None = None):
        self.model, self.h, self.inputs, self.euler_damping = model, h, inputs, euler_damping
        self.d = Data(model)
        self.constrained, self.warmstart, self.tau, self.ncon = constrained, np.zeros(model.nv), None, None
        na = 0 if inputs.actuators is None else inputs.actuators.na
        self.act = np.zeros(na) if act is None else act       # the activations of the state stepped (MuJoCo's d.act)
        self.act_dot = np.zeros(na)                              # their rate at the last evaluation (d.act_dot)
        self.actuators = inputs.actuators                        # posed at the last evaluation's q (actuation.posed)
        self.detected = None                                     # (q, its contacts) of the last detection
        self.observing = False                                   # keep what observed() reads (the solve's rows)
        self.last = None                                         # the last evaluation's (q, qd, qacc, qfrc_constraint,
                                                                 # contacts, rows, efc_force, qfrc_actuator)
        self.qfrc_actuator = np.zeros(model.nv)                  # the last evaluation's actuator force
        self.filled = False                                      # whether d holds velocity_stages at the last evaluation
        self.eq_active = self.tolerance = self.iterations = None  # the solve's equalities and settings (None: the model's)
        self.solved = None                                       # the last NumPy solve: (solver.Solution, its rows)
        self.with_energy = True                                  # a step computes its start state's energy (else 0)

    def contacts(self, q: np.ndarray):
        """The contacts at q (None when the model has no collision), detected once per q."""
        if not collision.has_contacts(self.model):
            return None
        if self.detected is None or not np.array_equal(self.detected[0], q):
            self.detected = q.copy(), collision.detect(self.model, q)
        return self.detected[1]

    def actuator_force(self, q: np.ndarray, qd: np.ndarray, act: np.ndarray) -> np.ndarray:
        """qfrc_actuator (nv,) at (q, qd, act) with this run's ctrl (physai.engine.actuation; the clamped ctrl checked),
        the activations' rate into act_dot; the actuators posed at q from this evaluation's Data (and, constrained, the
        contacts at q: adhesion) into self.actuators."""
        acts = self.inputs.actuators
        if acts.posed_some:
            adhesion = self.constrained and (acts.posed_each & (acts.trntype == TRN_BODY)).any()
            acts = self.actuators = actuation.posed(acts, self.model, self.d, q, self.contacts(q) if adhesion else None)
        u = actuation.clamped_ctrl(acts, self.inputs.ctrl)
        self.act_dot = actuation.activation_rate(acts, u, act)
        self.qfrc_actuator = actuation.joint_force(acts, actuation.scalar_forces(acts, q, qd, u, act, self.act_dot, self.h))
        return self.qfrc_actuator

    def acceleration(self, q: np.ndarray, qd: np.ndarray, M: np.ndarray, f: np.ndarray, discrete: bool = False,
                     noslip_metric: np.ndarray | None = None, backbone: np.ndarray | None = None,
                     inertia: np.ndarray | None = None):
        """(qacc, qfrc_constraint) at (q, qd) after evaluate(q, qd) gave M and f: M^-1 f and zero when not
        constrained, else the constrained solve (its qacc becomes the next warm start). discrete: M is the discrete
        step's metric M + h B + h^2 K, f its right side, the rows those of the end of the step (constraint.rows'
        discrete_h), noslip's Delassus matrix in noslip_metric when given (cg_backbone), CG's preconditioner in
        backbone (cg_backbone), the mass matrix that scales the tolerances in inertia."""
        if not self.constrained:
            qacc = solve(M, f) if backbone is None else solver.smooth_acceleration(self.model, M, f, backbone)
            self._keep(q, qd, qacc, np.zeros(self.model.nv))
            return qacc, np.zeros(self.model.nv)
        model, opt = self.model, self.model.opt
        contacts = self.contacts(q)
        if self.ncon is None:                          # the step's first evaluation (RK4: its first stage)
            self.ncon = 0 if contacts is None else len(contacts)
        rows = efc_force = None
        if not discrete and native.on and native.compiled_solver(model) and self.tau is not None and \
                np.isfinite(self.tau).all() and not self.observing:
            qacc, qfrc = solver.compiled_forward(model, q, qd, self.tau, constraint.contact_arrays(contacts), None,
                                                 self.warmstart, opt.tolerance, opt.iterations, balanced=True)[:2]
        else:
            rows = self.rows(q, qd, M, discrete)
            solution = solver.solve_with(model, rows, M, f, self.warmstart, self.tolerance, self.iterations, noslip_metric,
                                         backbone, inertia)
            self.solved = solution, rows
            qacc, qfrc, efc_force = solution.qacc, solution.qfrc_constraint, solution.efc_force
            if not discrete:                           # what (M - h D) a = f + qfrc_constraint integrates
                qfrc = solver.balanced_constraint_force(rows, M, f, solution)
        self.warmstart = qacc
        self._keep(q, qd, qacc, qfrc, contacts, rows, efc_force)
        return qacc, qfrc

    def rows(self, q: np.ndarray, qd: np.ndarray, M: np.ndarray, discrete: bool = False) -> constraint.Rows:
        """The constraint rows of the solve in M at (q, qd) (discrete: M the discrete step's metric, the rows those of
        the end of the step, constraint.rows' discrete_h and step_diagonal), the velocity stages computed first when
        the compiled evaluate left the workspace empty."""
        if not self.filled:
            smooth.velocity_stages(self.model, self.d, q[:, None], qd[:, None])
            self.filled = True
        return constraint.rows(self.model, self.d, q, qd, self.contacts(q), self.eq_active, self.h if discrete else None,
                               step_diagonal=np.diag(M).copy() if discrete else None)

    def settle(self, qacc: np.ndarray, warm_start: bool = True) -> None:
        """The step's final qacc (nv,) after its last solve (the discrete step's standalone free bodies solved again;
        RK4's weighted stages): the observed qacc and, when warm_start and constrained, the next warm start, as MuJoCo
        4's d.qacc and d.qacc_warmstart."""
        if warm_start and self.constrained:
            self.warmstart = qacc
        if self.last is not None:
            self.last = self.last[:2] + (qacc,) + self.last[3:]

    def _keep(self, q, qd, qacc, qfrc, contacts=None, rows=None, efc_force=None) -> None:
        """What observed() reads of this evaluation (when observing): its state, qacc, qfrc_constraint, the solve's
        contacts, rows and efc_force, the actuator force."""
        if self.observing:
            self.last = (q, qd, qacc, qfrc, contacts, rows, efc_force, self.qfrc_actuator)

    def observed(self, names: tuple, qd_next: np.ndarray) -> dict:
        """{name: MuJoCo's MjData field} after this run's step to a state with velocity qd_next (nv,), as mj_step then
        mj_rnePostConstraint leave them: the kinematics, forces and qacc of the step's last evaluation (its start state;
        RK4: its fourth stage), cacc and cfrc_int with qd_next (MuJoCo's mix); names from OBSERVABLE (checked)."""
        q, qd, qacc, qfrc, contacts, rows, efc_force, qfrc_actuator = self.last
        model, d = self.model, self.d
        if not self.filled:
            smooth.velocity_stages(model, d, q[:, None], qd[:, None])
        com = observe.com_bodies(model, q)
        out = dict(xpos=com["xpos"], xquat=com["xquat"], xipos=com["xipos"], cinert=com["cinert"], qacc=qacc,
                   qfrc_constraint=qfrc, qfrc_actuator=qfrc_actuator, site_xpos=observe.site_positions(model, com))
        if {"ten_length", "ten_velocity"} & set(names):              # mj_tendon's, at the evaluation's state
            length, J = api.tendon_kinematics(model, q) if model.ntendon else (np.zeros(0), np.zeros((0, model.nv)))
            out["ten_length"], out["ten_velocity"] = length, J @ qd
        if {"cvel", "cacc", "cfrc_int", "cfrc_ext"} & set(names):
            out["cvel"] = observe.body_velocities(model, d, com)
            out["cfrc_ext"] = observe.body_external_forces(model, com, self.inputs.xfrc_applied, contacts, rows,
                                                              efc_force)
            out["cacc"], out["cfrc_int"] = observe.rne_post_constraint(model, d, com, out["cvel"], qd_next, qacc,
                                                                      out["cfrc_ext"])
        return {name: np.array(out[name], dtype=float) for name in names}

    def step_matrix(self, q: np.ndarray, qd: np.ndarray, M: np.ndarray, integrator: str) -> np.ndarray:
        """M - h D of a single-step integrator at (q, qd) with this run's actuators and ctrl (step_matrix)."""
        x = self.inputs
        return step_matrix(self.model, q, qd, self.h, integrator, self.actuators, x.ctrl, M, self.euler_damping, self.act)

    def discrete_step_metric(self, q: np.ndarray, qd: np.ndarray, M: np.ndarray) -> DiscreteMetric:
        """The discrete step's metric at (q, qd) after evaluate(q, qd) gave M, with this run's actuators and ctrl
        (discrete_metric_terms)."""
        x = self.inputs
        return discrete_step_metric(self.model, q, qd, self.h, M, self.actuators, x.ctrl, self.act)

    def free_blocks(self, q: np.ndarray, qd: np.ndarray, M: np.ndarray, skip: np.ndarray | None = None,
                    actuator_damping: bool = True) -> list:
        """[(first dof, A (6, 6))] of the standalone free bodies with no dof in skip (nv,) bool (the discrete step's
        bodies that constraint rows or coupled terms reach: DiscreteMetric.skipped), free_body_blocks with this run's
        inputs: with the actuators' damping (implicitfast) or without it (discrete; under PGS without the tendon
        dampers too: explicit_couplings)."""
        return free_body_blocks(self.model, q, qd, self.h, M, **self._free_body_inputs(actuator_damping), skip=skip)

    def free_body_solve(self, q: np.ndarray, qd: np.ndarray, M: np.ndarray, rhs: np.ndarray, qacc: np.ndarray,
                        skip: np.ndarray | None = None, actuator_damping: bool = True) -> np.ndarray:
        """qacc with the rows of free_blocks' bodies solved again in their own blocks (free_body_solve)."""
        return free_body_solve(self.model, q, qd, self.h, M, rhs, qacc, **self._free_body_inputs(actuator_damping),
                               skip=skip)

    def _free_body_inputs(self, actuator_damping: bool) -> dict:
        """free_body_blocks' actuators, ctrl, act and tendon_dampers for this run (free_blocks)."""
        return dict(actuators=self.actuators if actuator_damping else None, ctrl=self.inputs.ctrl, act=self.act,
                    tendon_dampers=actuator_damping or not explicit_couplings(self.model))

    def tendon_and_input_forces(self, q, qd, act, M, f, potential, tendon_kinematics):
        """(M, f, potential) with the tendons' springs, dampers and armature added (their lengths and Jacobians from
        tendon_kinematics()), then the actuators' force at act and qfrc_applied (evaluate's common tail); potential
        None: left None."""
        model, x = self.model, self.inputs
        if model.has_tendon_forces:                    # tendon springs, dampers and armature (mj_passive, mj_crb)
            length, J = tendon_kinematics()
            f = f + passive.tendon_passive_force(model, length, J, qd)
            M = M + tendon.armature_matrix(model, J)
            if potential is not None:
                potential += passive.tendon_spring_energy(model, length)
        if x.actuators is not None:
            f = f + self.actuator_force(q, qd, act)
        if x.qfrc_applied is not None:
            f = f + x.qfrc_applied
        return M, f, potential

    def evaluate(self, q: np.ndarray, qd: np.ndarray, act: np.ndarray | None = None, energy: bool = True):
        """(M, f, potential energy) at (q, qd) and the activations act (None: this run's act): one kinematics pass, M by
        CRBA, f = qfrc_smooth (on the compiled backend, without body wrenches: its mass_matrix, bias and
        potential_energy calls instead, unless some actuator's arms depend on the configuration: actuation.posed reads
        this pass's Data); the activations' rate into act_dot. energy False: the potential energy not computed (None),
        for the callers that never read it (the derivatives, the forward dynamics)."""
        model, d, x = self.model, self.d, self.inputs
        act = self.act if act is None else act
        self.tau = None                                # set again below once this evaluation's forces are known
        self.filled = False
        self.qfrc_actuator = np.zeros(model.nv)
        posed = x.actuators is not None and x.actuators.posed_some
        if native.on and native.runs(model, x.actuators) and x.xfrc_applied is None and not posed and \
                not passive.has_body_forces(model) and np.isfinite(q).all() and np.isfinite(qd).all():
            try:
                M, c = api.mass_matrix(model, q), api.bias(model, q, qd)
            except InvalidStateError:                  # a zero quaternion is named; an overflow is left to the divergence check
                if zero_quaternion(model, q):
                    raise
                nan = np.full(model.nv, np.nan)
                return np.full((model.nv, model.nv), np.nan), nan, np.nan
            else:
                potential = energy_or_nan(api.potential_energy, model, q) if energy else None   # the forces stand
                f = passive.damper_spring_force(model, q, qd) - c
                M, f, potential = self.tendon_and_input_forces(q, qd, act, M, f, potential,
                                                               lambda: api.tendon_kinematics(model, q))
                self.tau = f + c                       # every non-constraint force, as the compiled solver takes it
                return M, f, potential
        Q, QD = q[:, None], qd[:, None]
        smooth.velocity_stages(model, d, Q, QD)
        self.filled = True
        f = passive.damper_spring_force(model, q, qd) - smooth.rne(model, d, QD, None)[:, 0]
        if passive.has_body_forces(model):             # gravity compensation and fluid forces (engine_passive.c)
            f = f + passive.body_forces(model, d)[:, 0]
        M = smooth.crb(model, d)[:, :, 0]
        potential = float(smooth.energy_pos(model, d, Q)[0]) if energy else None
        M, f, potential = self.tendon_and_input_forces(q, qd, act, M, f, potential, lambda: tendon.tendons(model, d, q))
        if x.xfrc_applied is not None:                 # the wrenches through the Jacobians of this pass's positions
            f = f + support.body_wrench_force(model, d, x.xfrc_applied)
        return M, f, potential


def guarded(stepper, run: "DynamicsEvaluator", q, qd):
    """stepper(run, q, qd), with a state that overflows inside the step (a runaway velocity makes the bias or a stage
    infinite; physai's checks then raise InvalidStateError) returned as NaN, so that the caller reports a divergence.
    A zero quaternion in q is the state's own fault: its error goes through."""
    try:
        return stepper(run, q, qd)
    except InvalidStateError:
        if zero_quaternion(run.model, q):
            raise
        return np.full_like(q, np.nan), np.full_like(qd, np.nan), np.nan


def zero_quaternion(model, q) -> np.ndarray:
    """Whether a ball or free joint's quaternion is zero (all four components, as physai.joints.quat_to_mat refuses it:
    the state's own fault, not a divergence), per state of q (..., nq)."""
    iq = model.coords.quats()[0]
    return (q[..., iq] == 0).all(axis=-1).any(axis=-1)


# ---------------------------------------------------------------- the single-step integrators' matrices (mj_implicit)


def step_matrix(model, q, qd, h: float, name: str, actuators, ctrl, M: np.ndarray, euler_damping: bool = True,
                act=None) -> np.ndarray:
    """M - h D (nv, nv) [kg m^2 | kg] of the single-step integrator `name` at (q, qd), h [s], M the mass matrix there
    (tendon armature included), actuators and ctrl checked (physai.integrators.step_matrix checks them and explains it):
    euler M + h B (M without damping or without euler_damping), discrete M + h B + h^2 K (discrete_stiffness)."""
    if name == "euler" and (not euler_damping or not (model.dof_damping > 0).any()):
        return M                                       # mj_Euler skips the second factorization then
    if name == "discrete":
        return discrete_step_metric(model, q, qd, h, M, actuators, ctrl, act).M_hat
    return M - h * velocity_derivative(model, q, qd, name, actuators, ctrl, act, h)


def velocity_derivative(model, q, qd, name: str, actuators=None, ctrl=None, act=None, dt: float | None = None,
                        pattern: str | None = None) -> np.ndarray:
    """D = d f / d qd (nv, nv) of the single-step integrator `name` (not rk4) with checked actuators and ctrl
    (physai.integrators.velocity_derivative checks them and explains D): -B, plus the fluid's and the tendon dampers',
    the actuators' (implicitfast: symmetrized) and, implicit, -dc/dqd; on step_pattern(model, pattern or name) (M's
    sparsity pattern; implicitfast's without the simple bodies' off-diagonal entries). UnsupportedModelError
    for ellipsoid fluid forces under an implicit integrator (physai.engine.passive.check_integrator)."""
    passive.check_integrator(model, name)
    if name == "euler":
        return -np.diag(model.dof_damping)
    D = passive_velocity_derivative(model, q, qd)
    if actuators is not None:
        A = np.asarray(actuation.force_velocity_derivative(actuators, q, qd, ctrl, act, dt), dtype=float)
        D = D + (0.5 * (A + A.T) if name == "implicitfast" else A)
    if name == "implicit":
        D = D - bias_velocity_derivative(model, q, qd)
    return np.where(step_pattern(model, pattern or name), D, 0.0)


def passive_velocity_derivative(model, q, qd, tendon_dampers: bool = True) -> np.ndarray:
    """d qfrc_passive / d qd (nv, nv) [N m s | N s] (MuJoCo's mjd_passive_vel): -B, the inertia boxes' fluid forces' and
    (unless tendon_dampers is False) the tendon dampers' -J^T diag(b) J."""
    D = -np.diag(model.dof_damping)
    tendon_dampers = tendon_dampers and model.tendon_damping.any()
    if passive.has_fluid(model) or tendon_dampers:
        d = Data(model)
        smooth.velocity_stages(model, d, np.asarray(q, float)[:, None], np.asarray(qd, float)[:, None])
        if passive.has_fluid(model):                   # the inertia boxes' (mjd_passive_vel)
            D = D + passive.fluid_velocity_derivative(model, d)[:, :, 0]
        if tendon_dampers:                             # the tendons' dampers: -J^T diag(b) J (mjd_passive_vel)
            J = tendon.tendons(model, d, np.asarray(q, float))[1]
            D = D - tendon.weighted_outer(J, model.tendon_damping)
    return D


def bias_velocity_derivative(model, q, qd) -> np.ndarray:
    """dc/dqd (nv, nv) [N m s | N s] of the bias c(q, qd) (MuJoCo's mjd_rne_vel, 2C on hinges and slides).

    c is quadratic in qd, so column k is (c(q, qd + e_k) - c(q, qd - e_k)) / 2 exactly, up to rounding; the 2 nv
    biases are one batched engine call.
    """
    model = as_model(model)
    q, qd = validation.vector("q", q, model.nq), validation.vector("qd", qd, model.nv)
    if model.nv == 0:                                  # no dof, no column: a batch of no state is no engine call
        return np.zeros((0, 0))
    E = np.eye(model.nv)
    c = api.bias(model, np.broadcast_to(q, (2 * model.nv, model.nq)), np.concatenate([qd + E, qd - E]))
    return 0.5 * (c[:model.nv] - c[model.nv:]).T


def dof_pattern(model, reduced: bool = False) -> np.ndarray:
    """(nv, nv) booleans: True where dof i is dof j, an ancestor or a descendant (where M can be non-zero: MuJoCo's D
    layout, where implicit keeps D); reduced: and neither is simple (Model.dof_simplenum > 0), MuJoCo's reduced M layout
    (mj_makeDofDofSparse's reduced), where implicitfast keeps D (its qH)."""
    model = as_model(model)
    pattern = model.dof_Mmask[:, :, 0] > 0
    if not reduced:
        return pattern
    simple = model.dof_simplenum > 0
    return pattern & ~((simple[:, None] | simple[None, :]) & ~np.eye(model.nv, dtype=bool))


def step_pattern(model, name: str) -> np.ndarray:
    """(nv, nv) booleans: where the single-step integrator `name` keeps D in M - h D: implicitfast on M's reduced pattern
    (dof_pattern reduced: its factor qH) but a standalone free body's block whole (its own solve, mjd_freeMhat, reads D's
    layout); the others on M's pattern (implicit's LU on D's layout)."""
    model = as_model(model)
    if name != "implicitfast":
        return dof_pattern(model)
    pattern = dof_pattern(model, reduced=True)
    for adr in standalone_free_dofs(model):
        pattern[adr:adr + 6, adr:adr + 6] = True
    return pattern


#: K (nv,) [N m/rad | N/m]: the joints' spring stiffness on their dofs, the discrete integrator's position derivative
discrete_stiffness = constraint.discrete_stiffness


def discrete_step_metric(model, q, qd, h: float, M: np.ndarray, actuators=None, ctrl=None, act=None) -> DiscreteMetric:
    """The discrete step's metric at (q, qd), h [s], M (nv, nv) the mass matrix there: M_hat = M + h B + h^2 K with
    discrete_metric_terms' B, K, coupled and B_joint."""
    B, K, coupled, B_joint = discrete_metric_terms(model, q, qd, h, actuators, ctrl, act)
    return DiscreteMetric(M + h * B + h * h * K, K, coupled, B_joint)                 # M^ = M + h B + h^2 K


def discrete_metric_terms(model, q, qd, h: float, actuators=None, ctrl=None, act=None):
    """(B, K, coupled, B_joint): B and K (nv, nv) [N m s/rad | N s/m, N m/rad | N/m], the positive damping and
    stiffness of MuJoCo 4's discrete step metric M + h B + h^2 K at (q, qd): the joints' (diagonal), the inertia boxes'
    fluid drag (-d qfrc_fluid / d qd), the tendons' J^T diag(b) J and J^T diag(k) J (k zero inside a spring's dead band),
    and the actuators' slopes with the stabilizing sign (actuation.servo_metric); coupled (nv,) bool: the dofs its
    tendon and actuator terms reach; B_joint (nv, nv), B's joints' and fluid's part (joint_fluid_damping: the factored
    part's, cg_backbone).
    MuJoCo applies those terms matrix-free, outside its factored metric (the joints' diagonals, the fluid drag), and
    solves a standalone free body with such a dof in the whole metric, not in its own block (discrete). Where they
    couple branches or trees, M + h B + h^2 K leaves the tree's pattern: the solver then solves densely
    (solver.metric_solve) and joins the coupled trees' islands (island.partition). Under the PGS solver (which needs
    the metric factored) MuJoCo leaves them out, with or without rows: the factored part alone (explicit_couplings)."""
    B = joint_fluid_damping(model, q, qd)                                   # joints, fluid drag
    K = np.diag(discrete_stiffness(model))
    B_c, K_c = np.zeros_like(B), np.zeros_like(B)
    if explicit_couplings(model):                                           # their forces integrate explicitly
        return B, K, np.zeros(model.nv, bool), B
    if model.tendon_stiffness.any() or model.tendon_damping.any():         # J^T diag(b) J, J^T diag(k) J
        length, J = api.tendon_kinematics(model, np.asarray(q, float))
        lower, upper = model.tendon_lengthspring[:, 0], model.tendon_lengthspring[:, 1]
        k = np.where((length < lower) | (length > upper), model.tendon_stiffness, 0.0)   # none inside the dead band
        B_c, K_c = tendon.weighted_outer(J, model.tendon_damping), tendon.weighted_outer(J, k)
    if actuators is not None:                                               # the servos' gains
        B_act, K_act = actuation.servo_metric(actuators, q, qd, ctrl, act, h)
        B_c, K_c = B_c + B_act, K_c + K_act
    coupled = (B_c != 0) | (K_c != 0)
    return B + B_c, K + K_c, coupled.any(axis=1), B


def factored_metric(model, h: float, M: np.ndarray, M_hat: np.ndarray, B_joint: np.ndarray) -> np.ndarray | None:
    """(nv, nv) the part of the discrete metric M_hat = M + h B + h^2 K that MuJoCo 4 factors (None: all of it, no
    tendon or actuator terms): the joints' and the fluid's terms (the backbone) with the diagonal of the tendons' and
    actuators' terms C = M_hat - backbone, X = M_hat - (C - diag C). CG preconditions with it and noslip's Delassus
    matrix is in it (measured: MuJoCo's a0 iterate by iterate to 1.8e-12 at |a0| 3e2, its efc_AR to 2e-14). B_joint
    (nv, nv): the joints' and fluid's damping at the state (joint_fluid_damping, as discrete_metric_terms gave it)."""
    backbone = M + h * B_joint + h * h * np.diag(discrete_stiffness(model))
    C = M_hat - backbone
    if not C.any():
        return None
    return M_hat - C + np.diag(np.diag(C))


def cg_backbone(model, h: float, M: np.ndarray, M_hat: np.ndarray, B_joint: np.ndarray) -> np.ndarray | None:
    """(nv, nv) the metric that preconditions the discrete step's iterative solves in M_hat (None: M_hat itself):
    factored_metric under a primal solver (Newton, CG; PGS has no couplings in its metric): a0 = M_hat^-1 qfrc_smooth is
    itself preconditioned CG to opt.tolerance under both, with rows or without (solver.smooth_acceleration, solve's and
    solve_cg's start: stopped at opt.iterations it warns, as MuJoCo 4 counts mjWARN_INERTIA there), and CG's iterations
    too, products and gradients in M_hat (MuJoCo 4 applies the couplings matrix-free; Newton, when its a0 was
    a direct solve: 2.5e-9 off mj_step in 7 steps); Newton's Hessian is M_hat's own. It is
    also the metric of noslip's Delassus matrix J X^-1 J^T after Newton or CG (measured on MuJoCo's efc_AR to 2e-14
    beside 2e-2 for M_hat and 5e-2 for the backbone alone); noslip's a0 and final qacc stay in M_hat."""
    return None if explicit_couplings(model) else factored_metric(model, h, M, M_hat, B_joint)


def joint_fluid_damping(model, q, qd) -> np.ndarray:
    """B (nv, nv): the joints' damping and the inertia boxes' fluid drag, -d qfrc_passive / d qd without the tendons',
    on MuJoCo's reduced M pattern (dof_pattern reduced): the discrete metric's factored part, as implicitfast's."""
    return np.where(dof_pattern(model, reduced=True), -passive_velocity_derivative(model, q, qd, tendon_dampers=False),
                    0.0)


def refuse_discrete_couplings(model, actuators) -> None:
    """UnsupportedModelError when tendons or actuators add to the discrete metric (metric_couplings) and noslip runs
    after a primal solver (Newton, CG), for step_derivatives: its post-pass's Delassus matrix is in another metric
    (cg_backbone), which physai's derivatives of the constrained solve do not model."""
    if metric_couplings(model, actuators) and model.opt.noslip_iterations and not explicit_couplings(model):
        raise UnsupportedModelError("step_derivatives of the discrete integrator with tendon springs, dampers or servo "
                                    "gains and noslip under the Newton or CG solver (MuJoCo's noslip then works in the "
                                    "factored part of the metric; physai's derivatives do not): choose the PGS solver "
                                    "or no noslip, or another integrator")


def explicit_couplings(model) -> bool:
    """Whether the discrete step leaves the tendons' and actuators' terms out of its metric, their forces explicit at the
    step's start (no - h K qd for them): under the PGS solver, whose dual solve needs the metric factored (MuJoCo 4:
    measured by scripts/discrete_metric_probe.py, the step map's metric the joints' and the fluid's alone)."""
    return model.opt.solver == "pgs"


def metric_couplings(model, actuators) -> bool:
    """Whether tendons or actuators add to the discrete metric: tendon springs or dampers, an actuator gain or bias on
    length or velocity, or a muscle."""
    return bool(servo_couplings(actuators) or model.tendon_damping.any() or model.tendon_stiffness.any())


def servo_couplings(actuators) -> bool:
    """Whether actuators add to the discrete metric (their terms depend on ctrl and act): a gain or bias on length or
    velocity, or a muscle."""
    return actuators is not None and bool(actuators.gain[:, 1:].any() or actuators.bias[:, 1:].any()
                                          or (actuators.gaintype == MUSCLE).any() or (actuators.biastype == MUSCLE).any())


def compiled_discrete(model, actuators) -> bool:
    """Whether the compiled discrete step (cpp/forward.h's discrete: the joints' and the inertia boxes' terms factored,
    the tendons' and actuators' by conjugate gradients, cpp/forward.h's coupling_terms and metric_pcg; with constraints
    its solver in the whole metric, cpp/solver.h's metric_model) models the discrete metric: not for muscles or
    the ellipsoid model's fluid (the NumPy engine names them)."""
    muscle = actuators is not None and ((actuators.gaintype == MUSCLE).any() or (actuators.biastype == MUSCLE).any())
    return not (muscle or (passive.has_fluid(model) and model.fluid_ellipsoid.any()))


def free_body_blocks(model, q, qd, h: float, M: np.ndarray, actuators=None, ctrl=None, act=None,
                     tendon_dampers: bool = True, skip: np.ndarray | None = None) -> list:
    """[(first dof, A (6, 6))] for each standalone free body: A = M - h (dA/dqd - B) + h dc/dqd, its block of the implicit
    integrator's matrix (which implicitfast leaves the bias out of), B with the fluid's and tendon dampers' parts
    (passive_velocity_derivative): MuJoCo's implicitfast solves these rows in it (mj_implicitSkip's local solve,
    mjd_freeMhat). dc/dqd from 12 bias evaluations per body (exact: c is quadratic in
    qd); dA/dqd unsymmetrized, as MuJoCo's block. tendon_dampers=False: B without them (the discrete step under PGS,
    explicit_couplings). The bodies with a dof in skip (nv,) bool left out."""
    dofs = [a for a in standalone_free_dofs(model) if skip is None or not skip[a:a + 6].any()]
    if not dofs:
        return []
    A = None if actuators is None else np.asarray(actuation.force_velocity_derivative(actuators, q, qd, ctrl, act, h))
    P = passive_velocity_derivative(model, q, qd, tendon_dampers)   # damping, fluid, tendon dampers (mjd_freeMhat's)
    blocks = []
    for a in dofs:
        block = slice(a, a + 6)
        E = np.zeros((6, model.nv))
        E[:, block] = np.eye(6)
        c = api.bias(model, np.broadcast_to(q, (12, model.nq)), np.concatenate([qd + E, qd - E]))
        D = P[block, block] + (0.0 if A is None else A[block, block])
        blocks.append((a, M[block, block] - h * D + h * 0.5 * (c[:6, block] - c[6:, block]).T))
    return blocks


def free_body_solve(model, q, qd, h: float, M: np.ndarray, rhs: np.ndarray, qacc: np.ndarray, actuators=None,
                    ctrl=None, act=None, skip: np.ndarray | None = None, tendon_dampers: bool = True) -> np.ndarray:
    """qacc with the rows of each standalone free body solved again in its own 6 x 6 block (free_body_blocks, with
    the tendon dampers or not), A a = rhs: MuJoCo's implicitfast; the bodies with a dof in skip (nv,) bool keep qacc."""
    blocks = free_body_blocks(model, q, qd, h, M, actuators, ctrl, act, tendon_dampers, skip)
    if not blocks:
        return qacc
    qacc = qacc.copy()
    for a, A in blocks:
        qacc[a:a + 6] = solve(A, rhs[a:a + 6])
    return qacc
