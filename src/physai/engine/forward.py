"""The integrators, named after MuJoCo's engine_forward.c (mirrored function by function by the compiled engine's
cpp/forward.h): one step from (q, qd) of one state, each returning (q_next, qd_next, energy of (q, qd)).

    euler(run, q, qd)           semi-implicit Euler, joint damping implicit                      (mj_Euler)
    implicit(run, q, qd)        implicit in velocity, (M - h D) a = f                          (mj_implicit)
    implicitfast(run, q, qd)    the same without the bias's derivative, D symmetrized           (mj_implicit)
    runge_kutta(run, q, qd)     classic 4th-order Runge-Kutta, inputs held over the step        (mj_RungeKutta)
    discrete(run, q, qd)        implicit in velocity and position, (M + h B + h^2 K) a = f - h K qd (+ J^T f_c) (mjINT_DISCRETE)
    STEPPERS                    each integrator's name to its function

`run` is the forward pipeline of one run (physai.integrators.DynamicsEvaluator: a model, the timestep h [s], the
inputs, the activations act (na,) of the state being stepped, and one workspace), which gives what a step needs at a
state: evaluate(q, qd, act) -> (M, f, potential energy) with f MuJoCo's qfrc_smooth and the activations' rate in
run.act_dot; acceleration(q, qd, M, f) -> (qacc, qfrc_constraint), M^-1 f or the constrained solve;
step_matrix(q, qd, M, integrator) -> M - h D (discrete: M + h B + h^2 K); stiffness_force(qd) -> h K qd;
free_body_solve(q, qd, M, rhs, qacc). The equations are in physai.integrators' docstring.
"""

from physai import joints
from physai.engine import actuation
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
    return advance(run.model, q, qd_next, run.h), qd_next, 0.5 * qd @ M @ qd + potential   # ...then the position


def euler(run, q, qd):
    """One semi-implicit Euler step (mj_Euler): (M + h B) a = f (+ qfrc_constraint) when the joint damping is implicit
    (run.euler_damping and the model has damping), else the acceleration M^-1 f or the constrained solve's qacc."""
    M, f, potential = run.evaluate(q, qd)
    qacc, qfrc = run.acceleration(q, qd, M, f)    # M^-1 f, or the constrained solve
    if run.euler_damping and (run.model.dof_damping > 0).any():   # (M + h B)^-1 (f + qfrc_constraint)
        qacc = solve(run.step_matrix(q, qd, M, "euler"), f + qfrc)
    return _semi_implicit_update(run, q, qd, qacc, M, potential)


def implicit(run, q, qd, fast: bool = False):
    """One implicit-in-velocity step (mj_implicit): (M - h D) a = f (+ qfrc_constraint), D = dA/dqd - B - dc/dqd;
    fast (implicitfast): D = sym(dA/dqd - B), the standalone free bodies' rows solved again in their own blocks."""
    M, f, potential = run.evaluate(q, qd)
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
    (constraint.rows' discrete_h); standalone free bodies no row moves solved again in their blocks as implicitfast's."""
    M, f, potential = run.evaluate(q, qd)
    rhs = f - run.stiffness_force(qd)
    qacc = run.acceleration(q, qd, run.step_matrix(q, qd, M, "discrete"), rhs, discrete=True)[0]   # the solve in M^
    qacc = run.free_body_solve(q, qd, M, rhs, qacc, run.row_dofs if run.constrained else None)
    return _semi_implicit_update(run, q, qd, qacc, M, potential)


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
        M, f, potential = run.evaluate(qi, qdi, act_i)
        run.stage_act_dot.append(run.act_dot)
        energy = 0.5 * qdi @ M @ qdi + potential if energy is None else energy
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
    advance_activation(run, sum(b * a for b, a in zip(RK4_WEIGHTS, run.stage_act_dot)))   # act' from the weighted rates
    return advance(run.model, q, dq, run.h), qd + run.h * dqd, stages


def runge_kutta(run, q, qd):
    """One classic RK4 step (mj_RungeKutta) with the inputs held over the step: (q_next, qd_next, energy of (q, qd))."""
    q_next, qd_next, _ = rk4_step(run, q, qd)
    return q_next, qd_next, run.start_energy


#: each integrator's name (physai.integrators.INTEGRATORS) to its step
STEPPERS = {"euler": euler, "implicit": implicit, "implicitfast": implicitfast, "rk4": runge_kutta, "discrete": discrete}

