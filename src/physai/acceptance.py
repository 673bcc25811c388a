"""Acceptance checks of the manipulator equation  M(q) qdd + C(q, qd) qd + g(q) = tau, one function per check.

Each function evaluates one property over a batch of states and returns its worst value [units as stated]:

    (a) mass_matrix_asymmetry(model, q)            max |M - M^T|                          0 for a correct M
        mass_matrix_min_eigenvalue(model, q)       smallest eigenvalue of M               > 0: M positive definite
    (b) hold_residual(model, q)                    max |forward_dynamics(q, 0, g(q))|     the hold torque is g(q)
    (c) roundtrip_residual(model, q, qd, tau)      max |rnea(q, qd, forward_dynamics(q, qd, tau)) - tau|
    (d) coriolis_residual(model, q, qd)            max |C(q, qd) qd - (c(q, qd) - g(q))| C belongs to this bias
        skew_residual(model, q, qd)                max |S + S^T|, S = Mdot - 2C          Mdot - 2C skew-symmetric
        passivity_residual(model, q, qd)           max |qd^T (Mdot - 2C) qd|              passivity
    (e) balance_residual(m, states, ...)          max |M qacc + c - (actuator + passive + applied)| with
                                                  MuJoCo's qacc and physai's (or MuJoCo's) terms
        term_differences(m, states, ...)          each of physai's terms against MuJoCo's

    range_violations(model, q)                   the limited joints a trajectory takes out of their range (RangeWarning)

(a)-(d) are the four checks of the manipulator equation; (e) is the full balance against MuJoCo, with
random controls within ctrlrange and random applied forces. MuJoCo runs with its constraints disabled
(mjDSBL_CONSTRAINT: contacts, joint limits, equalities), so qfrc_constraint = 0 in the balance.

The dynamics under test are keyword arguments with physai's functions as defaults (mass_matrix, gravity,
bias, rnea, forward_dynamics, coriolis, mass_matrix_dot; the engine's), each called as fn(model, ...): pass a
hand-written model, or a broken one, to see a check fail. model: a physai.engine.Model or what
physai.engine.as_model takes (a Tree, an MjModel, a model name). run_checks(m, n, seed) runs them all on random states of a
MuJoCo model and attaches a tolerance to each; `physai check MODEL` prints its table.
"""

import copy
import warnings
from dataclasses import dataclass

import mujoco
import numpy as np

from physai import collision, constraints, engine, forces, joints, tendons
from physai.coriolis import coriolis_matrix, mass_matrix_dot
from physai.engine.model_checks import label
from physai.exceptions import InvalidArgumentError, RangeWarning, ShapeError
from physai.validation import states as checked_states

__all__ = ["APPLIED_MAX", "CTRL_FREE", "QDD_MAX", "QD_MAX", "RTOL", "Result", "States", "TAU_MAX", "TERM_NAMES",
           "Terms", "balance_residual", "coriolis_residual", "hold_residual", "mass_matrix_asymmetry",
           "mass_matrix_min_eigenvalue", "mujoco_gravity", "mujoco_states", "mujoco_terms", "passivity_residual",
           "range_violations", "roundtrip_residual", "run_checks", "skew_residual", "term_differences", "without_constraints"]

RTOL = 1e-12        # tolerance of an identity = RTOL x the scale of the quantities it compares
CONSTRAINED_RTOL = 1e-9   # the balance with constraints on: MuJoCo's solver stops where its scaled gradient < 1e-15
QD_MAX = 2.0        # joint speeds uniform in [-QD_MAX, QD_MAX] [rad/s | m/s]
TAU_MAX = 10.0      # joint forces for the round trip, uniform in [-TAU_MAX, TAU_MAX] [N m | N]
APPLIED_MAX = 2.0   # qfrc_applied [N m | N] and each xfrc_applied component [N, N m], uniform in [-APPLIED_MAX, APPLIED_MAX]
CTRL_FREE = 1.0     # ctrl of an actuator without ctrlrange: uniform in [-CTRL_FREE, CTRL_FREE]
QDD_MAX = 20.0      # joint accelerations uniform in [-QDD_MAX, QDD_MAX] [rad/s^2 | m/s^2]


@dataclass(frozen=True)
class States:
    """A batch of n random states and inputs of a model with nv dofs, nu actuators and nbody bodies (world excluded).

    q, qd:         (n, nq) joint positions [rad | m | quaternion] and (n, nv) velocities [rad/s | m/s]
    tau:           (n, nv) joint forces for the forward/inverse round trip [N m | N]
    ctrl:          (n, nu) actuator controls, within ctrlrange where limited
    qfrc_applied:  (n, nv) generalized applied forces [N m | N]
    xfrc_applied:  (n, nbody, 6) wrench (force [N], torque [N m]) at each body's centre of mass, world frame;
                   MuJoCo's d.xfrc_applied[1:] (physai.forces.applied_force's convention)
    qdd:           (n, nv) joint accelerations [rad/s^2 | m/s^2] (for inverse dynamics, e.g. `physai verify`)
    """

    q: np.ndarray
    qd: np.ndarray
    tau: np.ndarray
    ctrl: np.ndarray
    qfrc_applied: np.ndarray
    xfrc_applied: np.ndarray
    qdd: np.ndarray

    def __len__(self) -> int:
        return len(self.q)


def mujoco_states(m: mujoco.MjModel, n: int, seed: int = 0, qd_max: float = QD_MAX, qdd_max: float = QDD_MAX) -> States:
    """n >= 1 random States of a model: hinge and slide positions uniform in each limited joint's range, else in
    [-pi, pi] (free joints' positions too, in m); quaternions of ball and free joints uniform on SO(3); qd in
    [-qd_max, qd_max] [rad/s | m/s], qdd in [-qdd_max, qdd_max] [rad/s^2 | m/s^2]; tau, qfrc_applied,
    xfrc_applied uniform (TAU_MAX, APPLIED_MAX); ctrl uniform in ctrlrange where ctrllimited, else in
    [-CTRL_FREE, CTRL_FREE]. The fields are drawn in States' order, qdd last."""
    _check_count(n)
    rng = np.random.default_rng(seed)
    c = engine.from_mujoco(m).coords
    jnt = {int(m.jnt_qposadr[j]) + k: j for j in range(m.njnt) for k in range(3)}   # scalar q entry -> joint
    limited = np.array([bool(m.jnt_limited[jnt[i]]) and int(m.jnt_type[jnt[i]]) in (joints.HINGE, joints.SLIDE)
                        for i in c.scalar_q.tolist()], dtype=bool)
    ranges = np.array([m.jnt_range[jnt[i]] for i in c.scalar_q.tolist()]).reshape(-1, 2)
    lo, hi = np.where(limited, ranges[:, 0], -np.pi), np.where(limited, ranges[:, 1], np.pi)
    climited = m.actuator_ctrllimited.astype(bool)
    clo = np.where(climited, m.actuator_ctrlrange[:, 0], -CTRL_FREE)
    chi = np.where(climited, m.actuator_ctrlrange[:, 1], CTRL_FREE)
    nv, nu, nb = m.nv, m.nu, m.nbody - 1
    return States(q=joints.random_positions(c, n, rng, lo, hi, free_box=None),
                  qd=rng.uniform(-qd_max, qd_max, (n, nv)),
                  tau=rng.uniform(-TAU_MAX, TAU_MAX, (n, nv)),
                  ctrl=rng.uniform(clo, chi, (n, nu)),
                  qfrc_applied=rng.uniform(-APPLIED_MAX, APPLIED_MAX, (n, nv)),
                  xfrc_applied=rng.uniform(-APPLIED_MAX, APPLIED_MAX, (n, nb, 6)),
                  qdd=rng.uniform(-qdd_max, qdd_max, (n, nv)))


def _check_count(n) -> None:
    """Raise InvalidArgumentError unless n is a whole number >= 1 (a number of states)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise InvalidArgumentError(f"the number of states must be a whole number >= 1, got {n!r}")


def _batches(**arrays) -> list[np.ndarray]:
    """The arguments as batches of the same n >= 1 vectors, each (n, k), in argument order.

    An (n, k) array is taken as is; a single (k,) vector stands for every one of the n states (repeated).
    Raises ShapeError if an argument is neither (k,) nor (n, k) or if two batches have different n,
    InvalidArgumentError if the batches are empty (n = 0).
    """
    batches = {}
    for name, x in arrays.items():
        try:
            a = np.asarray(x, dtype=float)
        except (TypeError, ValueError) as exc:
            raise ShapeError(f"{name} must be a (k,) vector or an (n, k) batch of states, got {type(x).__name__}: "
                             f"{exc}") from None
        if a.ndim not in (1, 2):
            raise ShapeError(f"{name} must be a (k,) vector or an (n, k) batch of states, got shape {a.shape}")
        batches[name] = a
    counts = {name: len(a) for name, a in batches.items() if a.ndim == 2}
    if len(set(counts.values())) > 1:
        raise ShapeError("the batches have different numbers of states: "
                         + ", ".join(f"{name} has {k}" for name, k in counts.items()))
    n = next(iter(counts.values()), 1)
    if n == 0:
        raise InvalidArgumentError(f"{', '.join(batches)}: the batch is empty; the checks need at least one state")
    return [a if a.ndim == 2 else np.tile(a, (n, 1)) for a in batches.values()]


# ---- (a) the mass matrix ----


def mass_matrix_asymmetry(model, q, *, mass_matrix=engine.mass_matrix) -> float:
    """max over the states q (n, nq) of max_ij |M_ij - M_ji| [kg m^2 | kg]; 0 for a symmetric M."""
    return max(float(np.abs((M := mass_matrix(model, qi)) - M.T).max()) for qi in _batches(q=q)[0])


def mass_matrix_min_eigenvalue(model, q, *, mass_matrix=engine.mass_matrix) -> float:
    """min over the states q (n, nq) of the smallest eigenvalue of sym(M) [kg m^2 | kg]; > 0 means positive definite."""
    return min(float(np.linalg.eigvalsh(0.5 * ((M := mass_matrix(model, qi)) + M.T))[0]) for qi in _batches(q=q)[0])


# ---- (b) the hold torque ----


def hold_residual(model, q, *, gravity=engine.gravity, forward_dynamics=engine.forward_dynamics) -> float:
    """max |forward_dynamics(q, 0, g(q))| over the states q (n, nq) [rad/s^2 | m/s^2]: the torque g(q) holds q still."""
    worst = 0.0
    for qi in _batches(q=q)[0]:
        g = gravity(model, qi)
        worst = max(worst, float(np.abs(forward_dynamics(model, qi, np.zeros_like(g), g)).max()))
    return worst


def mujoco_gravity(m: mujoco.MjModel):
    """g(model, q) -> MuJoCo's qfrc_bias at rest: the hold torque from an independent code path (with physai's own
    gravity, FD(q, 0, g(q)) = M^-1 (g - g) is zero by construction)."""
    d = mujoco.MjData(m)

    def gravity(model, q):
        d.qpos[:], d.qvel[:] = q, 0.0
        mujoco.mj_forward(m, d)
        return d.qfrc_bias.copy()
    return gravity


# ---- (c) forward then inverse dynamics ----


def roundtrip_residual(model, q, qd, tau, *, forward_dynamics=engine.forward_dynamics, rnea=engine.rnea) -> float:
    """max |rnea(q, qd, forward_dynamics(q, qd, tau)) - tau| over the states [N m | N]: inverse undoes forward."""
    worst = 0.0
    for qi, qdi, ti in zip(*_batches(q=q, qd=qd, tau=tau), strict=True):
        worst = max(worst, float(np.abs(rnea(model, qi, qdi, forward_dynamics(model, qi, qdi, ti)) - ti).max()))
    return worst


# ---- (d) the Coriolis matrix: its product, skew-symmetry of Mdot - 2C, passivity ----


def coriolis_residual(model, q, qd, *, coriolis=coriolis_matrix, bias=engine.bias, gravity=engine.gravity) -> float:
    """max |C(q, qd) qd - (c(q, qd) - g(q))| over the states [N m | N]: C is the velocity part of the bias."""
    return max(float(np.abs(coriolis(model, qi, qdi) @ qdi - (bias(model, qi, qdi) - gravity(model, qi))).max())
               for qi, qdi in zip(*_batches(q=q, qd=qd), strict=True))


def _skew_part(model, q, qd, coriolis, mdot):
    return mdot(model, q, qd) - 2.0 * coriolis(model, q, qd)


def skew_residual(model, q, qd, *, coriolis=coriolis_matrix, mass_matrix_dot=mass_matrix_dot) -> float:
    """max |S + S^T| with S = Mdot - 2C over the states [N m s | N s]; 0 when Mdot - 2C is skew-symmetric."""
    return max(float(np.abs((S := _skew_part(model, qi, qdi, coriolis, mass_matrix_dot)) + S.T).max())
               for qi, qdi in zip(*_batches(q=q, qd=qd), strict=True))


def passivity_residual(model, q, qd, *, coriolis=coriolis_matrix, mass_matrix_dot=mass_matrix_dot) -> float:
    """max |qd^T (Mdot - 2C) qd| over the states [W]: the power of the Coriolis forces against dT/dt is zero."""
    return max(abs(float(qdi @ _skew_part(model, qi, qdi, coriolis, mass_matrix_dot) @ qdi))
               for qi, qdi in zip(*_batches(q=q, qd=qd), strict=True))


# ---- (e) the full balance against MuJoCo ----


def without_constraints(m: mujoco.MjModel) -> mujoco.MjModel:
    """A copy of m with contacts, joint limits and equality constraints disabled (qfrc_constraint = 0)."""
    m = copy.copy(m)
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    return m


@dataclass(frozen=True)
class Terms:
    """The terms of the balance at one state, each (nv,) except M (nv, nv); qacc is always MuJoCo's."""

    M: np.ndarray
    bias: np.ndarray
    actuator: np.ndarray
    passive: np.ndarray
    applied: np.ndarray
    constraint: np.ndarray
    qacc: np.ndarray

    def residual(self) -> np.ndarray:
        """M qacc + bias - (actuator + passive + constraint + applied) (nv,) [N m | N]."""
        return self.M @ self.qacc + self.bias - (self.actuator + self.passive + self.constraint + self.applied)


def with_tight_solver(m: mujoco.MjModel, newton: bool = True) -> mujoco.MjModel:
    """A copy of m whose constraint solver runs to tolerance 1e-15; with newton, Newton's method without noslip
    whatever m's solver (so that its qacc balances to rounding and its qfrc_constraint is the constraint force of that
    qacc, which inverse dynamics recovers: PGS stops short of the optimum, where its forces and qacc disagree, and
    noslip changes the friction forces after the solve; the optimum does not depend on the solver)."""
    m = copy.copy(m)
    if newton:
        m.opt.solver, m.opt.noslip_iterations = mujoco.mjtSolver.mjSOL_NEWTON, 0
    m.opt.tolerance, m.opt.iterations, m.opt.ls_iterations = 1e-15, max(1000, m.opt.iterations), max(100, m.opt.ls_iterations)
    return m


def mujoco_terms(m: mujoco.MjModel, states: States, model=None, actuators=None) -> list[tuple[Terms, Terms | None]]:
    """For each state, (MuJoCo's Terms, physai's Terms or None if model is None) after mj_forward.

    MuJoCo's applied term is qfrc_applied plus each body's wrench pushed through mj_applyFT at its centre of mass,
    physai's is forces.applied_force. physai's constraint term is its own qfrc_constraint at MuJoCo's qacc
    (physai.constraints.inverse_dynamics with MuJoCo's contacts), zero when m has its constraints disabled
    (without_constraints). physai's Terms use the model and actuators given (actuators=None means the model's own,
    if any). Raises InvalidArgumentError for an empty batch of states.
    """
    _check_count(len(states))
    if model is not None:
        model = engine.as_model(model)
        actuators = model.actuators if actuators is None else actuators
    d = mujoco.MjData(m)
    nv = m.nv
    out = []
    for i in range(len(states)):
        q, qd, ctrl = states.q[i], states.qd[i], states.ctrl[i]
        qfrc, xfrc = states.qfrc_applied[i], states.xfrc_applied[i]
        d.qpos[:], d.qvel[:], d.ctrl[:] = q, qd, ctrl
        d.qfrc_applied[:], d.xfrc_applied[0], d.xfrc_applied[1:] = qfrc, 0.0, xfrc
        mujoco.mj_forward(m, d)
        M = np.zeros((nv, nv))
        mujoco.mj_fullM(m, d, M)
        applied = d.qfrc_applied.copy()
        for b in range(1, m.nbody):
            if xfrc[b - 1].any():
                mujoco.mj_applyFT(m, d, xfrc[b - 1, :3], xfrc[b - 1, 3:], d.xipos[b], b, applied)
        theirs = Terms(M, d.qfrc_bias.copy(), d.qfrc_actuator.copy(), d.qfrc_passive.copy(), applied,
                       d.qfrc_constraint.copy(), d.qacc.copy())
        ours = None
        if model is not None:
            act = np.zeros(nv) if actuators is None else forces.actuator_force(_posed(m, d, model, actuators), q, qd, ctrl,
                                                                                 d.act, m.opt.timestep)
            constraint = np.zeros(nv)
            if d.nefc:
                constraint = constraints.inverse_dynamics(model, q, qd, d.qacc, collision.from_mujoco(m, d),
                                                          eq_active=d.eq_active.astype(bool)).qfrc_constraint
            M = engine.mass_matrix(model, q) + (tendons.armature(model, q) if model.tendon_armature.any() else 0.0)
            ours = Terms(M, engine.bias(model, q, qd), act,
                         forces.passive_force(model, q, qd), forces.applied_force(model, q, qfrc, xfrc),
                         constraint, d.qacc.copy())
        out.append((theirs, ours))
    return out


def _posed(m: mujoco.MjModel, d: mujoco.MjData, model, actuators):
    """The actuators with the moment arms of d's state (forces.actuators_at; adhesion through MuJoCo's contacts)."""
    if not actuators.posed_each.any():
        return actuators
    return forces.actuators_at(model, d.qpos, collision.from_mujoco(m, d), actuators)


def balance_residual(m: mujoco.MjModel, states: States, model=None, actuators=None) -> float:
    """max |M qacc + c - (actuator + passive + constraint + applied)| [N m | N] over the states, qacc from mj_forward.

    With model (and actuators, for a model with actuators) the terms are physai's, with qfrc_constraint = 0;
    with model=None they are MuJoCo's own (mj_fullM, qfrc_bias, qfrc_actuator, ...). Constraints are disabled
    on a copy of m first.
    """
    return _worst_residual(mujoco_terms(without_constraints(m), states, model, actuators), physai=model is not None)


def _worst_residual(pairs: list[tuple[Terms, Terms | None]], physai: bool) -> float:
    """max |residual| [N m | N] over the (MuJoCo, physai) pairs of mujoco_terms, of physai's Terms or MuJoCo's."""
    return max(float(np.abs((ours if physai else theirs).residual()).max()) for theirs, ours in pairs)


#: the terms of the balance physai computes, with MuJoCo's name for each
TERM_NAMES = {"M": "mj_fullM", "bias": "qfrc_bias", "actuator": "qfrc_actuator", "passive": "qfrc_passive",
              "applied": "qfrc_applied + mj_applyFT(xfrc_applied)"}


def term_differences(m: mujoco.MjModel, states: States, model, actuators=None) -> dict[str, float]:
    """max |physai - MuJoCo| of each term of the balance over the states, by key of TERM_NAMES."""
    return _term_differences(mujoco_terms(without_constraints(m), states, model, actuators))


def _term_differences(pairs: list[tuple[Terms, Terms]]) -> dict[str, float]:
    """max |physai - MuJoCo| of each term over the (MuJoCo, physai) pairs of mujoco_terms, by key of TERM_NAMES."""
    return {k: max(float(np.abs(getattr(o, k) - getattr(t, k)).max()) for t, o in pairs) for k in TERM_NAMES}


# ---- all checks with tolerances ----


@dataclass(frozen=True)
class Result:
    """One row of the check table: the worst value over the states and how it is judged.

    passed means worst <= tolerance, or worst > tolerance when lower_bound is set (the smallest eigenvalue).
    """

    key: str
    label: str
    worst: float
    unit: str
    tolerance: float
    lower_bound: bool = False

    @property
    def passed(self) -> bool:
        return bool(self.worst > self.tolerance) if self.lower_bound else bool(self.worst <= self.tolerance)


def run_checks(m: mujoco.MjModel, n: int = 100, seed: int = 0, model=None, actuators=None) -> list[Result]:
    """Every check on n random states of m; tolerances RTOL x scale, the scale being the largest magnitude of
    what the identity compares over the states (at least 1; the round trip's also of |M| |qdd|, the terms M qdd sums;
    the hold torque's an acceleration, M^-1 of a rounding of g). model and actuators default to physai's reading
    of m (physai.engine.from_mujoco, with its actuators); pass others to check them instead. n must be >= 1
    (InvalidArgumentError otherwise).
    """
    _check_count(n)
    model = engine.from_mujoco(m) if model is None else engine.as_model(model)
    actuators = model.actuators if actuators is None else actuators
    s = mujoco_states(m, n, seed)
    slide = bool((m.jnt_type == mujoco.mjtJoint.mjJNT_SLIDE).any())
    frc, acc, inertia, damp = (("N m | N", "rad/s^2 | m/s^2", "kg m^2 | kg", "N m s | N s") if slide
                               else ("N m", "rad/s^2", "kg m^2", "N m s"))
    Ms = [engine.mass_matrix(model, q) for q in s.q]
    gs = [engine.gravity(model, q) for q in s.q]
    cs = [engine.bias(model, q, qd) for q, qd in zip(s.q, s.qd, strict=True)]
    Cs = [coriolis_matrix(model, q, qd) for q, qd in zip(s.q, s.qd, strict=True)]
    Mds = [mass_matrix_dot(model, q, qd) for q, qd in zip(s.q, s.qd, strict=True)]
    # |M| |qdd| of the round trip: the size of the terms M qdd sums (which sets the size of their rounding)
    Ma = [np.abs(M) @ np.abs(np.linalg.solve(M, t - c)) for M, t, c in zip(Ms, s.tau, cs, strict=True)]

    def big(*xs) -> float:
        return max(1.0, *(float(np.abs(x).max()) for x in xs))

    s_M = big(*Ms)                                                # inertia
    s_acc = big(*gs) / min(np.linalg.eigvalsh(M)[0] for M in Ms)  # an acceleration: M^-1 of a rounding error in g
    s_tau = big(s.tau, *cs)                                       # torques and the bias
    s_trip = big(s.tau, *cs, *Ma)                                 # and the round trip's terms
    s_S = big(*Mds, *Cs)                                          # Mdot and C
    s_pow = s_S * float(np.abs(s.qd).max()) ** 2                  # qd^T S qd
    pairs = mujoco_terms(without_constraints(m), s, model, actuators)
    s_bal = big(*(x for t, _ in pairs for x in (t.M @ t.qacc, t.bias, t.actuator, t.passive, t.applied)))
    ours, theirs = _worst_residual(pairs, physai=True), _worst_residual(pairs, physai=False)
    diffs = _term_differences(pairs)
    tight = with_tight_solver(m)
    constrained = mujoco_terms(tight, s, engine.from_mujoco(tight), actuators)
    s_con = big(*(x for t, _ in constrained for x in (t.M @ t.qacc, t.bias, t.actuator, t.passive, t.applied, t.constraint)))
    con_ours, con_theirs = _worst_residual(constrained, physai=True), _worst_residual(constrained, physai=False)
    results = [
        Result("asymmetry", "(a) M symmetric: max |M - M^T|", mass_matrix_asymmetry(model, s.q), inertia, RTOL * s_M),
        Result("min_eigenvalue", "(a) M positive definite: smallest eigenvalue", mass_matrix_min_eigenvalue(model, s.q),
               inertia, RTOL * s_M, lower_bound=True),
        Result("hold", "(b) hold torque g(q) (MuJoCo's): max |FD(q, 0, g(q))|",
               hold_residual(model, s.q, gravity=mujoco_gravity(m)), acc, RTOL * s_acc),
        Result("roundtrip", "(c) ID(FD(tau)) = tau: max |diff|", roundtrip_residual(model, s.q, s.qd, s.tau), frc,
               RTOL * s_trip),
        Result("coriolis", "(d) C qd = c - g: max |diff|", coriolis_residual(model, s.q, s.qd), frc, RTOL * s_tau),
        Result("skew", "(d) Mdot - 2C skew: max |S + S^T|", skew_residual(model, s.q, s.qd), damp, RTOL * s_S),
        Result("passivity", "(d) passivity: max |qd^T (Mdot - 2C) qd|", passivity_residual(model, s.q, s.qd), "W",
               RTOL * s_pow),
        Result("balance", "(e) balance, physai terms, MuJoCo qacc", ours, frc, 10 * RTOL * s_bal),
        Result("balance_mujoco", "(e) balance, MuJoCo's own terms", theirs, frc, 10 * RTOL * s_bal),
        Result("balance_constrained", "(e) with constraints on: physai's terms and qfrc_constraint", con_ours, frc,
               CONSTRAINED_RTOL * s_con),
        Result("balance_constrained_mujoco", "(e) with constraints on: MuJoCo's own terms", con_theirs, frc,
               CONSTRAINED_RTOL * s_con),
    ]
    for k, name in TERM_NAMES.items():
        scale = s_M if k == "M" else big(*(getattr(t, k) for t, _ in pairs))
        unit = inertia if k == "M" else frc
        results.append(Result(f"term_{k}", f"(e) {k} vs {name}", diffs[k], unit, RTOL * scale))
    constraint = max(float(np.abs(o.constraint - t.constraint).max()) for t, o in constrained)
    results.append(Result("term_constraint", "(e) constraint vs qfrc_constraint (at MuJoCo's qacc)", constraint, frc,
                          10 * RTOL * big(*(t.constraint for t, _ in constrained))))
    return results


def range_violations(model, q, warn: bool = True) -> list[tuple[str, int, float, tuple[float, float]]]:
    """The limited joints that positions q (nq,) or a trajectory (T, nq) take out of their range (Model.jnt_range,
    MuJoCo's and the URDF's limits): [(joint name, first state outside, its value there [rad | m], (low, high))], in
    joint order. A ball joint's value is its rotation angle, against the larger bound (MuJoCo's cone limit). With
    warn, a RangeWarning names every joint outside (physai's simulate has no limit forces yet: issue J)."""
    model = engine.as_model(model)
    (Q,), _ = checked_states(q=(q, model.nq))
    found = []
    for j in np.flatnonzero(model.jnt_limited).tolist():
        a, t, (low, high) = int(model.jnt_qposadr[j]), int(model.jnt_type[j]), model.jnt_range[j]
        if t in (joints.HINGE, joints.SLIDE):
            value = Q[a]
        elif t == joints.BALL:
            joints.quat_to_mat(Q[a:a + 4][None], [a])              # a zero quaternion: InvalidStateError naming it
            quat = Q[a:a + 4] / np.linalg.norm(Q[a:a + 4], axis=0)
            value, low, high = 2.0 * np.arctan2(np.linalg.norm(quat[1:], axis=0), np.abs(quat[0])), 0.0, max(low, high)
        else:
            continue
        outside = np.flatnonzero((value < low) | (value > high))
        if outside.size:
            k = int(outside[0])
            found.append((label(model.jnt_name[j], j, "joint"), k, float(value[k]), (float(low), float(high))))
    if warn and found:
        shown = "; ".join(f"{name!r} at state {k}: {value:.4g} outside [{low:.4g}, {high:.4g}]" for name, k, value, (low, high) in found)
        warnings.warn(f"the trajectory leaves the range of {len(found)} joint{'s' * (len(found) > 1)}: {shown}", RangeWarning,
                      stacklevel=2)
    return found
