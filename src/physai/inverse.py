"""Inverse dynamics through a timestep: the forces that make a simulator land exactly on planned positions.

    inverse_dynamics(model, q, qd, qdd)                                 continuous: tau = M qdd + c - passive
    inverse_dynamics(model, q, qd, qdd, dt=h, integrator="euler")       discrete:   tau = (M - h D) qdd + c - passive
    consistent_accelerations(samples, dt, model=model)                  (qd, qdd) that semi-implicit Euler needs
    trajectory_torques(model, samples, dt, integrator)                  one force per step, any integrator
    rk4_shooting(model, samples, dt)                                    RK4: Newton on each step's force

inverse_dynamics takes one state or N ((N, nq), (N, nv)), as physai.engine's functions do. tau is what the actuators
and applied forces must add together, MuJoCo's qfrc_inverse on a model without constraints: passive forces (joint
damping and springs) are the model's own and are subtracted. On a model whose actuators are motors with gear 1
(physai's arm7), ctrl = tau as long as tau lies inside ctrlrange.

Why discrete. The single-step integrators do not apply qdd = M^-1 f; they solve (M - h D) a = f and set
qd' = qd + h a, q' = q + h qd' (physai.integrators; D = -diag(damping) for euler, plus the actuators'
velocity derivative for implicitfast, plus -2C for implicit). With the velocities and accelerations of
consistent_accelerations, a = (qd' - qd) / h, and tau = (M - h D) a + c - passive inverts that step exactly:
what MuJoCo's mj_inverse computes with the invdiscrete flag enabled. With ball or free joints, positions differ
on the manifold (physai.joints.difference, MuJoCo's mj_differentiatePos) instead of by subtraction. RK4 evaluates the dynamics four times
with the force held constant and has no such closed form (MuJoCo refuses invdiscrete for it); rk4_shooting
solves for each step's constant force instead.
"""

from dataclasses import dataclass

import numpy as np

from physai import engine, forces, tendons, validation
from physai import integrators as integ
from physai.engine import forward
from physai.engine.data import StepInputs
from physai.exceptions import ConvergenceError, InvalidArgumentError, ShapeError, UnsupportedModelError


def inverse_dynamics(model, q, qd, qdd, dt=None, integrator=None, actuators=None, ctrl=None,
                     euler_damping: bool = True) -> np.ndarray:
    """Generalized force tau (nv,) or (N, nv) [N m | N] the actuators and applied forces must add to give qdd at (q, qd).

    Continuous (dt and integrator None): tau = M(q) qdd + c(q, qd) - passive(q, qd) = rnea - passive,
        MuJoCo's qfrc_inverse without constraints (M with the tendons' armature: physai.tendons.armature).
    Discrete (dt and integrator given): qdd is the finite-difference acceleration (qd_next - qd) / dt of one
        step of `integrator`, and tau = (M - dt D) qdd + c - passive inverts that step (MuJoCo's mj_inverse
        with invdiscrete). D as in physai.integrators.velocity_derivative; `actuators` and `ctrl` enter D
        through the actuators' velocity derivative (implicit and implicitfast only; euler treats only joint
        damping implicitly, and with euler_damping=False, MuJoCo's mjDSBL_EULERDAMP, not even that:
        tau = M qdd + c - passive). rk4 raises UnsupportedModelError: use rk4_shooting.
    q (nq,) or (N, nq), qd and qdd (nv,) or (N, nv) [rad | m, rad/s | m/s, rad/s^2 | m/s^2]: one state, or N states
    (a single one shared by the batch, as physai.engine's functions take them; ShapeError for other shapes or unequal
    N); the result has the batch's shape. rnea, c and the passive forces run batched, D state by state. dt [s];
    ctrl (nu,) is shared by the N states. ctrl without actuators raises InvalidArgumentError, as do actuators of
    another model (ShapeError).
    """
    model = engine.as_model(model)
    cols, batch = validation.states(q=(q, model.nq), qd=(qd, model.nv), qdd=(qdd, model.nv))
    Q, QD, QDD = (c.T for c in cols)                                    # (n, size) each, a shared state repeated
    integ.check_actuators(model, actuators, ctrl)
    integ.refuse_stateful_actuators(model, actuators, "inverse_dynamics")
    if dt is None and integrator is None:
        # tau = M qdd + c - passive, M qdd + c by rnea, the tendons' armature J^T a J apart
        armature = np.einsum("nij,nj->ni", tendons.armature(model, Q), QDD) if model.tendon_armature.any() else 0.0
        tau = engine.rnea(model, Q, QD, QDD) + armature - forces.passive_force(model, Q, QD)
        return tau if batch is not None else tau[0]
    if dt is None or integrator is None:
        missing = "dt" if dt is None else "integrator"
        raise InvalidArgumentError(f"discrete inverse dynamics needs both dt and integrator; {missing} is missing "
                                "(give neither for the continuous inverse)")
    name, h = integ.check_integrator(integrator), integ.check_timestep(dt)
    if name == "rk4":
        raise UnsupportedModelError("discrete inverse dynamics is not defined for rk4: its four stages hold the force "
                                    "constant, so no single matrix maps the force to the step (MuJoCo's mj_inverse "
                                    "refuses invdiscrete too); use physai.inverse.rk4_shooting to solve for each "
                                    "step's force")
    if name == "discrete":
        raise UnsupportedModelError("discrete inverse dynamics of the discrete integrator: physai does not invert its "
                                    "step (M + h B + h^2 K) a = f - h K qd yet; choose another integrator")
    # tau = (M - h D) qdd + c - passive, with M - h D state by state
    A = np.array([integ.step_matrix(model, q, qd, h, name, actuators, ctrl, euler_damping=euler_damping)
                  for q, qd in zip(Q, QD)])
    tau = np.einsum("nij,nj->ni", A, QDD) + engine.bias(model, Q, QD) - forces.passive_force(model, Q, QD)
    return tau if batch is not None else tau[0]


def consistent_accelerations(samples, dt, qd0=None, model=None):
    """Velocities and accelerations (qd, qdd), each (N, nv), that make semi-implicit Euler hit every sample.

    samples: (N + 1, nq) positions q_0 .. q_N, one timestep dt apart. With a model, differences of positions are
    taken on its manifold (q_k - q_(k-1) below means physai.engine.difference: quaternions of ball and free
    joints); without one, samples are plain vectors (nq = nv).
    qd_k  = (q_k - q_(k-1)) / dt          the velocity the previous step arrived with (qd_0 = qd0, default 0)
    qdd_k = ((q_(k+1) - q_k) / dt - qd_k) / dt  = (q_(k+1) - 2 q_k + q_(k-1)) / dt^2 for k >= 1
    so that qd_(k+1) = qd_k + dt qdd_k and q_(k+1) = q_k + dt qd_(k+1): every single-step integrator
    (euler, implicit, implicitfast) updates this way once its a = qdd_k.
    """
    h = integ.check_timestep(dt)
    Q = np.asarray(samples, dtype=float)
    if Q.ndim != 2 or Q.shape[0] < 2:
        raise ShapeError(f"samples must be an (N + 1, nv) array of positions with N >= 1, got shape {Q.shape}")
    Q = validation.as_array("samples", Q, Q.shape)
    if model is not None:
        model = engine.as_model(model)
        if Q.shape[1] != model.nq:
            raise ShapeError(f"samples have {Q.shape[1]} columns, the model needs nq = {model.nq}")
    nv = Q.shape[1] if model is None else model.nv
    v0 = np.zeros(nv) if qd0 is None else validation.vector("qd0", qd0, nv)
    steps = (Q[1:] - Q[:-1]) / h if model is None else engine.difference(model, Q[:-1], Q[1:], h)   # (N, nv)
    qd = np.empty((Q.shape[0] - 1, nv))
    qd[0] = v0
    qd[1:] = steps[:-1]
    qdd = (steps - qd) / h
    return qd, qdd


def trajectory_torques(model, samples, dt=None, integrator=None, qd0=None, actuators=None, ctrl=None,
                       euler_damping=None) -> np.ndarray:
    """One generalized force per step (N, nv) [N m | N] whose open-loop replay under `integrator` lands on every sample.

    samples (N + 1, nq) [rad | m], dt [s], qd0 (nv,) [rad/s | m/s].
    Single-step integrators: the discrete inverse at the states of consistent_accelerations. rk4: rk4_shooting.
    Replay from (samples[0], qd0) with physai.integrators.simulate(..., qfrc_applied=tau) or, on arm7, with
    ctrl = tau; in MuJoCo, d.ctrl[:] = tau[k] before the (k+1)-th mj_step. euler_damping=False inverts
    euler with the damping explicit (MuJoCo's mjDSBL_EULERDAMP; replay with simulate(..., euler_damping=False)).
    dt, integrator and euler_damping default to the model's, as simulate's (physai.integrators.model_options).
    """
    model = engine.as_model(model)
    dt, name, euler_damping, _ = integ.model_options(model, dt, integrator, euler_damping, False)
    integ.check_actuators(model, actuators, ctrl)
    integ.refuse_stateful_actuators(model, actuators, "trajectory_torques")
    if name == "rk4":
        return rk4_shooting(model, samples, dt, qd0, actuators, ctrl).tau
    Q = validation.to_float("samples", samples, "an (N + 1, nq) array of positions")
    qd, qdd = consistent_accelerations(Q, dt, qd0, model)
    return inverse_dynamics(model, Q[:-1], qd, qdd, dt, name, actuators, ctrl, euler_damping)


@dataclass(frozen=True)
class ShootingResult:
    """What rk4_shooting found, for N steps.

    tau:        (N, nv) generalized force held constant during step k [N m | N]
    q, qd:      (N + 1, nv) the RK4 states the forces produce from (samples[0], qd0); q[k] is within
                `error[k-1]` of samples[k]
    error:      (N,) max |q[k+1] - samples[k+1]| (on the manifold) after each step's Newton iterations [rad | m]
    iterations: (N,) Newton iterations per step (0 when the first guess already met the tolerance)
    """

    tau: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    error: np.ndarray
    iterations: np.ndarray


def rk4_shooting(model, samples, dt, qd0=None, actuators=None, ctrl=None, tol=1e-13, max_iter=20,
                 jacobian="stages") -> ShootingResult:
    """Forces whose open-loop replay under physai's rk4 lands on every sample: Newton on each step's force.

    samples (N + 1, nv) positions dt apart; the replay starts at (samples[0], qd0 or 0). For each step k, the
    constant generalized force u (added like qfrc_applied; `actuators` with their fixed `ctrl` act as well)
    solves  r(u) = q_next(q_k, qd_k, u) - samples[k+1] = 0  for one physai rk4 step; the step then continues
    from the state that force produces, so replaying tau reproduces q and qd exactly.

    First guess: the linear extrapolation 2 tau_(k-1) - tau_(k-2) of the previous forces; for the first two
    steps the force giving the constant acceleration that reaches the sample, a = 2 (q_(k+1) - q_k - h qd_k) / h^2
    (under constant acceleration RK4 moves q + h qd + h^2 a / 2). Either lands within about 1e-9 rad.
    Jacobian. The map u -> q_next is smooth: q_next = q + h/6 (qd_1 + 2 qd_2 + 2 qd_3 + qd_4) with
    qd_(i+1) = qd + h c_i a_i, so dq_next/du = h^2/6 (da_1/du + da_2/du + da_3/du), where
    da_1/du = M_1^-1 and da_(i+1)/du = M_(i+1)^-1 (I + h c_i D da_i/du + position terms of order h^2).
      jacobian="stages" (default): this chain with the stage mass matrices the step computes anyway and D from
          joint damping and the actuators, leaving out the Coriolis part of D and the position terms. The
          Newton iteration then contracts by about 1e-3 per iteration on arm7 at 2 ms: two iterations, three
          rk4 steps per time step.
      jacobian="fd": the full Jacobian by forward differences of the rk4 step (step 1e-6 of the force scale;
          the map is nearly affine in u, so the difference quotient is accurate to about 1e-9): one
          iteration, but nv + 2 rk4 steps per time step.
    Stops when max |r| <= tol [rad | m], a finite number > 0; raises ConvergenceError after max_iter iterations,
    a whole number >= 0 (0: the first guess must meet tol). Bad tol or max_iter raise InvalidArgumentError.
    """
    model = engine.as_model(model)
    h = integ.check_timestep(dt)
    tol = validation.number("tol", tol, "rad | m", positive=True)
    if isinstance(max_iter, (bool, np.bool_)) or not isinstance(max_iter, (int, np.integer)) or max_iter < 0:
        raise InvalidArgumentError(f"max_iter must be a whole number >= 0, got {max_iter!r}")
    Q = validation.to_float("samples", samples, "an (N + 1, nq) array of positions")
    qd_all, _ = consistent_accelerations(Q, h, qd0, model)   # validates samples and qd0
    if jacobian not in ("stages", "fd"):
        raise InvalidArgumentError(f"unknown jacobian {jacobian!r}; expected 'stages' or 'fd'")
    N, nv = Q.shape[0] - 1, model.nv
    base = integ.step_inputs(model, actuators, ctrl, None, None)
    integ.refuse_stateful_actuators(model, actuators, "rk4_shooting")
    tau, err, iters = np.zeros((N, nv)), np.zeros(N), np.zeros(N, dtype=int)
    q, qd = np.empty((N + 1, model.nq)), np.empty((N + 1, nv))
    q[0], qd[0] = Q[0], qd_all[0]
    run = engine.DynamicsEvaluator(model, h, base)
    run.with_energy = False                            # the shooting reads no energy

    def rk4(u, k):                                     # one physai rk4 step from state k with force u
        run.inputs = StepInputs(base.actuators, base.ctrl, u, None)
        return forward.rk4_step(run, q[k], qd[k])

    def miss(q1, k):                                   # how far q1 lands from sample k + 1, in the tangent space
        return engine.difference(model, Q[k + 1], q1)

    for k in range(N):
        if k >= 2:                                     # the force profile is smooth: extrapolate it linearly
            u = 2.0 * tau[k - 1] - tau[k - 2]
        else:                                          # constant acceleration that reaches the sample
            a = 2.0 * (engine.difference(model, q[k], Q[k + 1]) - h * qd[k]) / h**2
            u = inverse_dynamics(model, q[k], qd[k], a) - _own_forces(model, q[k], qd[k], base)
        q1, qd1, stages = rk4(u, k)
        r = miss(q1, k)
        n = 0
        while np.abs(r).max() > tol:
            if n >= max_iter:
                raise ConvergenceError(f"rk4_shooting: step {k} did not reach the sample within tol = {tol:g} after "
                                        f"{max_iter} Newton iterations (error {np.abs(r).max():.3g}); the motion may "
                                        "be infeasible or the timestep too large")
            J = _fd_jacobian(rk4, miss, u, k, r) if jacobian == "fd" else _stage_jacobian(model, stages, h, base)
            u = u - np.linalg.solve(J, r)
            q1, qd1, stages = rk4(u, k)
            r = miss(q1, k)
            n += 1
        tau[k], err[k], iters[k] = u, np.abs(r).max(), n
        q[k + 1], qd[k + 1] = q1, qd1
    return ShootingResult(tau, q, qd, err, iters)


def _own_forces(model, q, qd, inputs) -> np.ndarray:
    """Forces besides u that the model feels during a step: its actuators at their fixed ctrl (passive is in tau)."""
    if inputs.actuators is None:
        return np.zeros(model.nv)
    return forces.actuator_force(inputs.actuators, q, qd, inputs.ctrl)


def _stage_jacobian(model, stages, h, inputs) -> np.ndarray:
    """dq_next/du = h^2/6 (da_1 + da_2 + da_3) with da_1 = M_1^-1, da_(i+1) = M_(i+1)^-1 (I + h c_i D da_i).

    D = d f / d qd from joint damping and the actuators (constant along the step); the Coriolis part of D and
    the position dependence of the forces are left out, an error of relative size O(h |M^-1 C|, h^2 |M^-1 df/dq|);
    so is dexp^-1 on quaternion stage velocities (physai.engine.forward.rk4_stages), O(h |qd|).
    """
    D = -np.diag(model.dof_damping)
    if inputs.actuators is not None:
        D = D + forces.actuator_velocity_derivative(inputs.actuators, stages[0][0], stages[0][1], inputs.ctrl)
    I = np.eye(model.nv)
    da = np.linalg.inv(stages[0][3])
    total = da
    for c, s in zip(forward.RK4_TIMES[:2], stages[1:3]):
        da = np.linalg.solve(s[3], I + h * c * D @ da)
        total = total + da
    return h * h / 6.0 * total


def _fd_jacobian(rk4, miss, u, k, r) -> np.ndarray:
    eps = 1e-6 * max(1.0, np.abs(u).max())
    J = np.empty((len(u), len(u)))
    for j in range(len(u)):
        du = np.zeros(len(u))
        du[j] = eps
        J[:, j] = (miss(rk4(u + du, k)[0], k) - r) / eps
    return J
