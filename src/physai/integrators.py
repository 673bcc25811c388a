"""A simulator independent of MuJoCo at run time: MuJoCo's four integrators, step by step, in its order.

    step(tree, q, qd, dt, integrator="euler", ctrl=None, actuators=None, qfrc_applied=None) -> (q_next, qd_next)
    simulate(tree, q0, qd0, dt, steps, integrator="euler", ...)                             -> Trajectory
    (both take euler_damping=False to reproduce MuJoCo with mjDSBL_EULERDAMP: damping explicit in Euler)

Every integrator starts from the smooth force of MuJoCo's forward dynamics (its qfrc_smooth),

    f(q, qd) = actuator_force + passive_force + applied_force - bias        [N m | N]

and from the mass matrix M(q) (armature included). With h = dt they advance (q, qd) as MuJoCo 4 does
for a model of hinges and slides without constraints:

    "euler"         semi-implicit Euler with implicit joint damping B = diag(tree.damping)  (mj_Euler)
                        (M + h B) a = f,   qd' = qd + h a,   q' = q + h qd'
                    (without any damping this is a = M^-1 f, the textbook semi-implicit Euler)
    "implicit"      implicit in velocity: D = d f / d qd, with every velocity-dependent force  (mj_implicit)
                        D = dA/dqd - B - 2 C(q, qd),       (M - h D) a = f,   then as euler
                    dA/dqd is the actuators' velocity derivative and 2C = d(C qd)/d qd the derivative of
                    the Coriolis/centripetal force (C the Christoffel-symbol matrix, physai.coriolis).
    "implicitfast"  the same without the Coriolis/centripetal part, symmetrized               (mj_implicit)
                        D = sym(dA/dqd - B),              (M - h D) a = f,   then as euler
    "rk4"           classic 4th-order Runge-Kutta on (q, qd) with ctrl held constant         (mj_RungeKutta)
                        stage i (c = 0, 1/2, 1/2, 1):  q_i = q + h c_i qd_(i-1),  qd_i = qd + h c_i a_(i-1),
                                                       a_i = M(q_i)^-1 f(q_i, qd_i)       (damping explicit)
                        qd' = qd + h (a_1 + 2 a_2 + 2 a_3 + a_4) / 6
                        q'  = q  + h (qd_1 + 2 qd_2 + 2 qd_3 + qd_4) / 6   (positions from the stage velocities)

MuJoCo's Euler treats only joint damping implicitly (actuator velocity gains, e.g. a position servo's kv,
stay explicit), unless the model sets the eulerdamp disable flag (mjDSBL_EULERDAMP): then it solves M a = f
with the damping explicit in f; euler_damping=False does the same here. implicitfast takes the lower
triangle of D, which equals sym(D) for joint and tendon transmissions, where D is symmetric. Joint limits,
contacts and equality constraints are not modelled: compare against MuJoCo with
m.opt.disableflags |= mjDSBL_CONSTRAINT, or stay inside the joint ranges.

Energy. simulate() returns energy[k] = physai.dynamics.energy(tree, q[k], qd[k]), the energy of the k-th
state of the trajectory. MuJoCo computes d.energy inside mj_forward, at the start of mj_step, so after
the (k+1)-th mj_step d.energy equals energy[k], the state that step started from, not the state it produced.
RK4 is the exception: each of its stages runs mj_forward again, so after an RK4 mj_step d.energy belongs
to the last stage's state (q + h qd_3, qd + h qdd_3), neither the start nor the end (see rk4_stages).

This module calls physai.dynamics, physai.forces and physai.coriolis; they never call it.
"""

from dataclasses import dataclass

import numpy as np

from physai import _checks, forces
from physai import dynamics as dyn
from physai._linalg import solve
from physai.coriolis import coriolis_matrix
from physai.exceptions import InvalidArgumentError, ShapeError

INTEGRATORS = ("euler", "rk4", "implicit", "implicitfast")

#: MuJoCo's mjtIntegrator values of each integrator (m.opt.integrator).
MUJOCO_INTEGRATOR = {"euler": 0, "rk4": 1, "implicit": 2, "implicitfast": 3}


@dataclass(frozen=True)
class Trajectory:
    """A simulated run of `steps` steps: states 0..steps, energy of each state.

    t:      (steps+1,) time of each state [s], starting at 0
    q:      (steps+1, nv) joint positions; q[0] is the initial state [rad | m]
    qd:     (steps+1, nv) joint velocities [rad/s | m/s]
    energy: (steps+1,) kinetic plus potential energy of (q[k], qd[k]) [J]; after the (k+1)-th mj_step
            MuJoCo's d.energy.sum() equals energy[k] (it is computed at the start of the step; RK4: at its
            last stage); None when simulate(..., energy=False)
    integrator: the integrator's name;  dt: the timestep [s]
    """

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    energy: np.ndarray
    integrator: str
    dt: float


def check_integrator(integrator) -> str:
    """The integrator's name in lower case; raises InvalidArgumentError for anything but MuJoCo's four."""
    name = integrator.lower() if isinstance(integrator, str) else integrator
    if name not in INTEGRATORS:
        raise InvalidArgumentError(f"unknown integrator {integrator!r}; expected one of {', '.join(map(repr, INTEGRATORS))}")
    return name


def check_timestep(dt) -> float:
    """dt as a float; raises InvalidArgumentError unless it is one finite number > 0 [s] (True is not 1 s)."""
    return _checks.number("timestep dt", dt, "s", positive=True)


def check_actuators(tree, actuators, ctrl):
    """ctrl checked against the actuators and the actuators against the tree; returns ctrl, zeros (nu,) if None.

    ctrl without actuators raises InvalidArgumentError (it would have nothing to drive); actuators must be a
    physai.forces.Actuators (InvalidArgumentError) acting on the tree's nv dofs (ShapeError otherwise, e.g. the
    actuators of another model). ctrl's own shape and values are checked, and clamped, by physai.forces.
    """
    if actuators is None:
        if ctrl is not None:
            raise InvalidArgumentError("ctrl was given without actuators; pass actuators=physai.forces.actuators_from_mujoco(m)")
        return None
    if not isinstance(actuators, forces.Actuators):
        raise InvalidArgumentError(f"actuators must be physai.forces.Actuators (from physai.forces.actuators_from_mujoco), "
                                   f"got {type(actuators).__name__}")
    if actuators.nv != tree.nv:
        raise ShapeError(f"the actuators act on {actuators.nv} dofs (actuators.nv), the tree has nv = {tree.nv}: "
                         "pass the actuators of the tree's own model")
    return np.zeros(actuators.nu) if ctrl is None else ctrl


def _check_flag(name: str, value) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidArgumentError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def step(tree, q, qd, dt, integrator="euler", ctrl=None, actuators=None, qfrc_applied=None, xfrc_applied=None,
         euler_damping: bool = True):
    """One step of `integrator` from (q, qd); returns (q_next, qd_next), new arrays (nv,).

    q, qd:        (nv,) joint positions [rad | m] and velocities [rad/s | m/s]
    dt:           the timestep h [s], a finite number > 0
    ctrl:         (nu,) actuator controls, needs `actuators` (physai.forces.Actuators of the same model)
    qfrc_applied: (nv,) generalized force added to the joints [N m | N] (MuJoCo's qfrc_applied)
    xfrc_applied: (nbody, 6) wrenches at the bodies' centres of mass, as physai.forces.applied_force takes them
    euler_damping: True (default, MuJoCo's default): euler treats joint damping implicitly, (M + h B) a = f.
                  False reproduces MuJoCo with mjDSBL_EULERDAMP: damping explicit in Euler, M a = f.
                  The other integrators ignore it.
    All inputs are held constant over the step (also across RK4's stages).
    """
    name, h = check_integrator(integrator), check_timestep(dt)
    euler_damping = _check_flag("euler_damping", euler_damping)
    q, qd = _checks.vector("q", q, tree.nv), _checks.vector("qd", qd, tree.nv)
    inputs = _Inputs.make(tree, actuators, ctrl, qfrc_applied, xfrc_applied)
    q_next, qd_next, _ = _STEPPERS[name](tree, q, qd, h, inputs, euler_damping)
    return q_next, qd_next


def simulate(tree, q0, qd0, dt, steps, integrator="euler", ctrl=None, actuators=None, qfrc_applied=None,
             xfrc_applied=None, energy=True, euler_damping: bool = True) -> Trajectory:
    """Run `steps` steps of `integrator` from (q0, qd0), each (nv,); returns the Trajectory, with the energy of every state.

    dt [s] as for step. ctrl and qfrc_applied are either constant, (nu,) and (nv,), or one row per step,
    (steps, nu) and (steps, nv): row k acts during the step from state k to state k+1 (what d.ctrl holds
    during the (k+1)-th mj_step). xfrc_applied is held constant. energy=False skips the energy
    (Trajectory.energy is None). euler_damping=False: damping explicit in Euler (MuJoCo's mjDSBL_EULERDAMP), see step.
    """
    name, h = check_integrator(integrator), check_timestep(dt)
    euler_damping = _check_flag("euler_damping", euler_damping)
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 0:
        raise InvalidArgumentError(f"steps must be a whole number >= 0, got {steps!r}")
    q, qd = _checks.vector("q0", q0, tree.nv), _checks.vector("qd0", qd0, tree.nv)
    check_actuators(tree, actuators, ctrl)
    ctrls = _per_step("ctrl", ctrl, steps, 0 if actuators is None else actuators.nu)
    applied = _per_step("qfrc_applied", qfrc_applied, steps, tree.nv)
    Q, QD, E = np.empty((steps + 1, tree.nv)), np.empty((steps + 1, tree.nv)), np.empty(steps + 1)
    Q[0], QD[0] = q, qd
    stepper = _STEPPERS[name]
    for k in range(steps):
        inputs = _Inputs.make(tree, actuators, None if ctrls is None else ctrls[k],
                              None if applied is None else applied[k], xfrc_applied)
        Q[k + 1], QD[k + 1], M = stepper(tree, Q[k], QD[k], h, inputs, euler_damping)
        if energy:                                     # dynamics.energy(tree, Q[k], QD[k]), reusing the step's M(Q[k])
            E[k] = float(0.5 * QD[k] @ M @ QD[k]) + dyn.potential_energy(tree, Q[k])
    if energy:
        E[steps] = dyn.energy(tree, Q[steps], QD[steps])
    return Trajectory(np.arange(steps + 1) * h, Q, QD, E if energy else None, name, h)


# ---- forces --------------------------------------------------------------------------------------


@dataclass
class _Inputs:
    """What drives the tree during a step besides its own state: actuators with their ctrl, applied forces."""

    actuators: object
    ctrl: np.ndarray | None
    qfrc_applied: np.ndarray | None
    xfrc_applied: np.ndarray | None

    @classmethod
    def make(cls, tree, actuators, ctrl, qfrc_applied, xfrc_applied) -> "_Inputs":
        ctrl = check_actuators(tree, actuators, ctrl)
        if qfrc_applied is not None:
            qfrc_applied = _checks.vector("qfrc_applied", qfrc_applied, tree.nv)
        return cls(actuators, ctrl, qfrc_applied, xfrc_applied)


def _per_step(name: str, value, steps: int, n: int):
    """None, or an array (steps, n) from a constant (n,) or per-step (steps, n) input."""
    if value is None:
        return None
    a = np.asarray(value, dtype=float)
    if a.ndim == 1:
        return np.broadcast_to(_checks.vector(name, a, n), (steps, n))
    if a.ndim == 2 and a.shape[1] != n:
        raise ShapeError(f"{name} has {a.shape[1]} entries per step, the model needs {n}")
    return _checks.as_array(name, a, (steps, n))


def smooth_force(tree, q, qd, ctrl=None, actuators=None, qfrc_applied=None, xfrc_applied=None) -> np.ndarray:
    """MuJoCo's qfrc_smooth: actuator + passive + applied - bias (nv,) [N m | N], the f of M a = f."""
    q, qd = _checks.vector("q", q, tree.nv), _checks.vector("qd", qd, tree.nv)
    return _smooth_force(tree, q, qd, _Inputs.make(tree, actuators, ctrl, qfrc_applied, xfrc_applied))


def _smooth_force(tree, q, qd, inputs: _Inputs) -> np.ndarray:
    f = forces.passive_force(tree, q, qd) - dyn.bias(tree, q, qd)
    if inputs.actuators is not None:
        f = f + forces.actuator_force(inputs.actuators, q, qd, inputs.ctrl)
    if inputs.qfrc_applied is not None or inputs.xfrc_applied is not None:
        f = f + forces.applied_force(tree, q, inputs.qfrc_applied, inputs.xfrc_applied)
    return f


def velocity_derivative(tree, q, qd, integrator: str, actuators=None, ctrl=None) -> np.ndarray:
    """D = d f / d qd as the single-step integrator uses it (nv, nv): the matrix in M - h D.

    euler:        -B                                   (B = diag(tree.damping); actuators stay explicit)
    implicitfast: sym(dA/dqd) - B                      (dA/dqd from physai.forces.actuator_velocity_derivative)
    implicit:     dA/dqd - B - 2 C(q, qd)              (C from physai.coriolis.coriolis_matrix)
    Like MuJoCo's qDeriv, D keeps only the entries of the mass matrix's sparsity pattern (dof pairs where one
    is an ancestor of the other): a fixed tendon coupling two branches, such as the Panda's fingers, drops out.
    Raises InvalidArgumentError for rk4, which has no such matrix, and for ctrl without actuators.
    """
    name = check_integrator(integrator)
    ctrl = check_actuators(tree, actuators, ctrl)
    if name == "rk4":
        raise InvalidArgumentError("rk4 has no velocity-derivative matrix; it is a 4-stage explicit method")
    D = -np.diag(tree.damping)
    if name == "euler":
        return D
    if actuators is not None:
        A = np.asarray(forces.actuator_velocity_derivative(actuators, q, qd, ctrl), dtype=float)
        D = D + (0.5 * (A + A.T) if name == "implicitfast" else A)
    if name == "implicit":
        D = D - 2.0 * coriolis_matrix(tree, q, qd)
    return np.where(dof_pattern(tree), D, 0.0)


def dof_pattern(tree) -> np.ndarray:
    """(nv, nv) booleans: True where dof i is dof j, an ancestor or a descendant (where M can be non-zero)."""
    dof, chain, k = [], [], 0
    for b in tree.bodies:                              # chain[i]: the dofs between body i and the base
        up = list(chain[b.parent]) if b.parent >= 0 else []
        if b.joint:
            up.append(k)
            k += 1
        chain.append(up)
        dof.append(k - 1 if b.joint else None)
    P = np.zeros((tree.nv, tree.nv), dtype=bool)
    for i, d in enumerate(dof):
        if d is not None:
            P[d, chain[i]] = P[chain[i], d] = True
    return P


def step_matrix(tree, q, qd, h: float, integrator: str, actuators=None, ctrl=None, M=None,
                euler_damping: bool = True) -> np.ndarray:
    """The matrix a single-step integrator solves with (nv, nv) [kg m^2 | kg]: M - h D, h [s].

    euler: M + h B, or M without damping or with euler_damping=False (MuJoCo's mjDSBL_EULERDAMP: the damping
    stays explicit in f). M (optional) is mass_matrix(tree, q) if already computed.
    """
    name = check_integrator(integrator)
    check_actuators(tree, actuators, ctrl)
    M = dyn.mass_matrix(tree, q) if M is None else M
    if name == "euler" and (not euler_damping or not (tree.damping > 0).any()):
        return M                                       # mj_Euler skips the second factorization then
    return M - h * velocity_derivative(tree, q, qd, name, actuators, ctrl)


def rk4_stages(tree, q, qd, dt, ctrl=None, actuators=None, qfrc_applied=None, xfrc_applied=None):
    """The four stages of one RK4 step: a list of (q_i, qd_i, qdd_i, M_i), i = 1..4, M_i = M(q_i).

    Stage 1 is the start state; stage i + 1 is (q + h c qd_i, qd + h c qdd_i) with c = 1/2, 1/2, 1.
    MuJoCo evaluates its energy in every stage's mj_forward, so after an RK4 mj_step d.energy holds the
    energy of stage 4, not of the start or of the end state.
    """
    h = check_timestep(dt)
    q, qd = _checks.vector("q", q, tree.nv), _checks.vector("qd", qd, tree.nv)
    return _rk4_stages(tree, q, qd, h, _Inputs.make(tree, actuators, ctrl, qfrc_applied, xfrc_applied))


# ---- the integrators: each returns (q_next, qd_next, M(q)) ----------------------------------------


def _single_step(name: str):
    def stepper(tree, q, qd, h, inputs, euler_damping=True):
        M = dyn.mass_matrix(tree, q)
        a = solve(step_matrix(tree, q, qd, h, name, inputs.actuators, inputs.ctrl, M, euler_damping),
                  _smooth_force(tree, q, qd, inputs))
        qd_next = qd + h * a                           # new velocity first...
        return q + h * qd_next, qd_next, M             # ...then the position from the new velocity

    return stepper


_RK4_C = (0.5, 0.5, 1.0)                             # stage times; MuJoCo's tableau A is diag(1/2, 1/2, 1)
_RK4_B = (1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0)


def _rk4_stages(tree, q, qd, h, inputs):
    stages = []
    qi, qdi = q, qd
    for c in (None,) + _RK4_C:
        if c is not None:                              # stage i uses only stage i - 1 (A is diagonal)
            qi, qdi = q + h * (c * stages[-1][1]), qd + h * (c * stages[-1][2])
        M = dyn.mass_matrix(tree, qi)
        stages.append((qi, qdi, solve(M, _smooth_force(tree, qi, qdi, inputs)), M))
    return stages


def _rk4_step(tree, q, qd, h, inputs):
    """One RK4 step: (q_next, qd_next, stages), the stages as _rk4_stages gives them (physai.inverse shoots with it)."""
    stages = _rk4_stages(tree, q, qd, h, inputs)
    dq = sum(b * s[1] for b, s in zip(_RK4_B, stages))       # positions advance with the stage velocities
    dqd = sum(b * s[2] for b, s in zip(_RK4_B, stages))
    return q + h * dq, qd + h * dqd, stages


def _rk4(tree, q, qd, h, inputs, euler_damping=True):          # euler_damping concerns euler only
    q_next, qd_next, stages = _rk4_step(tree, q, qd, h, inputs)
    return q_next, qd_next, stages[0][3]


_STEPPERS = {"euler": _single_step("euler"), "implicit": _single_step("implicit"),
             "implicitfast": _single_step("implicitfast"), "rk4": _rk4}
