"""Lesson 7.1 (seed 002): the equations of motion MuJoCo solves, derived by hand, read out of the engine and
computed by physai.

    M(q) qacc + qfrc_bias = qfrc_actuator + qfrc_passive + qfrc_constraint + qfrc_applied

(1) the two-link arm's Lagrangian M(q) and bias c(q, qd) against mj_fullM and qfrc_bias (XML inertias and the
    exact rod values m L^2 / 12), M at (0, 0) and (0, pi/2);
(2) where armature and joint damping enter: M's diagonal and qfrc_passive;
(3) the full balance on arm7 with random states, controls and applied forces, with MuJoCo's own terms and
    with physai's;
(4) kinetic energy 1/2 qd^T M qd against MuJoCo's energy[1], and M's spectrum with and without armature;
Exercise: a 0.5 kg point mass at arm2's tip, M and g updated by hand, against MuJoCo at five poses;
Challenge: passivity, dT/dt = 0 along a trajectory with no actuation, damping or gravity, and the
    skew-symmetry of Mdot - 2C with the Christoffel C of the two-link arm.

Each block prints our numbers and, on a "seed:" line, the lesson's.

    uv run python experiments/equations-of-motion/equations_of_motion.py     (PHYSAI_FAST=1: fewer states, no file)

Prints and writes output.txt beside this file, the same on every machine: residuals at machine precision are
printed as the bounds of BOUNDS (their last digits depend on the CPU), which tests/test_seed_experiments.py asserts
the values against; the seed's residuals are quoted beside them.
"""

import os
from pathlib import Path

import mujoco
import numpy as np

from physai import acceptance, dynamics, forces, integrators, models
from physai.coriolis import coriolis_matrix, mass_matrix_dot
from physai.lessons import bound

HERE = Path(__file__).resolve().parent
N = 200 if os.environ.get("PHYSAI_FAST") == "1" else 1000
G = 9.81
M1, M2, L1, C1, C2, L2 = 1.0, 0.8, 0.5, 0.25, 0.2, 0.4       # arm2: masses [kg], link 1 length, COM distances, link 2 length [m]
I1, I2 = 0.0208333, 0.0106667                                  # COM inertias as written in arm2.xml [kg m^2]
I1_ROD, I2_ROD = M1 * L1**2 / 12, M2 * L2**2 / 12              # the exact thin-rod values they round
TIP_MASS = 0.5                                                 # the Exercise's point mass at link 2's tip [kg]
#: Printed bounds on the residuals: 7 to 100 times the worst value seen on the kernels tried, a few eps (2.2e-16) times
#: each quantity's scale (M < 1 kg m^2; torques ~15 N m on arm2 at |qdot| up to ~10 rad/s, ~50 N m on arm7).
BOUNDS = {
    "M": 1e-14,               # [kg m^2] mj_fullM vs the Lagrangian (and the tip-loaded arm's, by hand)
    "bias": 1e-13,            # [N m] qfrc_bias vs the Lagrangian (and g of the tip-loaded arm)
    "M_physai": 1e-13,        # [kg m^2] mj_fullM vs physai (1000 states), eigenvalues of M (arm7), tip-loaded M
    "bias_physai": 1e-12,     # [N m] qfrc_bias vs physai (1000 states)
    "balance": 1e-11,         # [N m] the balance on arm7, MuJoCo's terms and physai's
    "dTdt": 1e-13,            # [W] the two terms of dT/dt cancelling, and qd^T (Mdot - 2C) qd
    "trajectory": 1e-12,      # [rad] physai's and MuJoCo's RK4 trajectories over 2 s
    "C": 1e-14,               # [N m s] C and Mdot by hand vs physai; max |S + S^T|
}
POSES = np.array([[0.0, 0.0], [0.5, -1.0], [-1.2, 2.0], [2.5, -0.3], [np.pi / 2, np.pi / 2]])


# ---- the two-link arm by hand ----


def mass_matrix_2link(q, i1=I1, i2=I2, tip=0.0) -> np.ndarray:
    """Lagrangian M(q) of arm2 [kg m^2]; tip adds a point mass [kg] at link 2's end (the Exercise)."""
    c2 = np.cos(q[1])
    m11 = i1 + i2 + M1 * C1**2 + M2 * (L1**2 + C2**2 + 2 * L1 * C2 * c2)
    m12 = i2 + M2 * (C2**2 + L1 * C2 * c2)
    m22 = i2 + M2 * C2**2
    M = np.array([[m11, m12], [m12, m22]])
    point = np.array([[L1**2 + L2**2 + 2 * L1 * L2 * c2, L2**2 + L1 * L2 * c2], [L2**2 + L1 * L2 * c2, L2**2]])
    return M + tip * point


def gravity_2link(q, tip=0.0) -> np.ndarray:
    """g(q) of arm2 [N m] (lesson 5.1's formula); tip adds the point mass at link 2's end."""
    c1, c12 = np.cos(q[0]), np.cos(q[0] + q[1])
    g2 = G * (M2 * C2 + tip * L2) * c12
    return np.array([G * (M1 * C1 + (M2 + tip) * L1) * c1 + g2, g2])


def coriolis_2link(q, qd) -> np.ndarray:
    """Christoffel C(q, qd) of arm2 [N m s]: C qd = (-h (2 qd1 qd2 + qd2^2), h qd1^2), h = m2 L1 c2 sin q2."""
    h = M2 * L1 * C2 * np.sin(q[1])
    return np.array([[-h * qd[1], -h * (qd[0] + qd[1])], [h * qd[0], 0.0]])


def mass_matrix_dot_2link(q, qd) -> np.ndarray:
    """dM/dt of arm2: dM11/dq2 = -2h, dM12/dq2 = -h, times qd2."""
    h = M2 * L1 * C2 * np.sin(q[1])
    return np.array([[-2 * h, -h], [-h, 0.0]]) * qd[1]


def bias_2link(q, qd) -> np.ndarray:
    """c(q, qd) = C qd + g(q) [N m], the torque needed for qacc = 0."""
    return coriolis_2link(q, qd) @ qd + gravity_2link(q)


def full_mass(m, d) -> np.ndarray:
    M = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, M)
    return M


def two_link(n: int = N) -> dict:
    """(1): worst differences over n random states (q uniform in arm2's range, qd ~ N(0, 3 rad/s)), and M at two poses."""
    m = models.load("arm2")
    d = mujoco.MjData(m)
    tree = dynamics.tree_from_mujoco(m)
    rng = np.random.default_rng(0)
    e = dict(M=0.0, M_rod=0.0, bias=0.0, M_physai=0.0, bias_physai=0.0)
    for _ in range(n):
        d.qpos[:] = rng.uniform(m.jnt_range[:, 0], m.jnt_range[:, 1])
        d.qvel[:] = rng.normal(scale=3.0, size=2)
        mujoco.mj_forward(m, d)
        M = full_mass(m, d)
        e["M"] = max(e["M"], np.abs(M - mass_matrix_2link(d.qpos)).max())
        e["M_rod"] = max(e["M_rod"], np.abs(M - mass_matrix_2link(d.qpos, I1_ROD, I2_ROD)).max())
        e["bias"] = max(e["bias"], np.abs(d.qfrc_bias - bias_2link(d.qpos, d.qvel)).max())
        e["M_physai"] = max(e["M_physai"], np.abs(M - dynamics.mass_matrix(tree, d.qpos)).max())
        e["bias_physai"] = max(e["bias_physai"], np.abs(d.qfrc_bias - dynamics.bias(tree, d.qpos, d.qvel)).max())
    out = {k: float(v) for k, v in e.items()}
    for name, q in (("M00", [0.0, 0.0]), ("M0pi2", [0.0, np.pi / 2])):
        d.qpos[:], d.qvel[:] = q, 0.0
        mujoco.mj_forward(m, d)
        out[name] = full_mass(m, d)
        out[name + "_physai"] = dynamics.mass_matrix(tree, np.array(q))
        out[name + "_lagrange"] = mass_matrix_2link(np.array(q))
    return out


def armature_and_damping() -> dict:
    """(2): M's change with armature 0.1 on both joints, and qfrc_passive against -damping qvel, MuJoCo and physai."""
    m = models.load("arm2")
    d = mujoco.MjData(m)
    tree = dynamics.tree_from_mujoco(m)
    q, qd = np.array([0.3, -0.8]), np.array([1.5, -2.0])
    d.qpos[:], d.qvel[:] = q, qd
    mujoco.mj_forward(m, d)
    bare, bare_physai = full_mass(m, d), dynamics.mass_matrix(tree, q)
    m.dof_armature[:] = 0.1
    tree.armature = np.full(2, 0.1)
    mujoco.mj_forward(m, d)
    return dict(dM=full_mass(m, d) - bare, dM_physai=dynamics.mass_matrix(tree, q) - bare_physai,
                passive=d.qfrc_passive.copy(), damping=-m.dof_damping * qd, passive_physai=forces.passive_force(tree, q, qd),
                bias_no_damping=float(np.abs(d.qfrc_bias - dynamics.bias(tree, q, qd)).max()))


def balance(n: int = N) -> dict:
    """(3): the balance on arm7 over n random states, controls in ctrlrange, qfrc_applied and xfrc_applied.

    mujoco: MuJoCo's own terms, with the model as it is (joint limits enabled, so qfrc_constraint is included);
    constraint: the largest |qfrc_constraint| at these states (q lies inside the joint ranges, so no limit is active);
    physai: physai's M, bias, actuator, passive and applied forces with MuJoCo's qacc, constraints disabled.
    """
    m = models.load("arm7")
    d = mujoco.MjData(m)
    s = acceptance.mujoco_states(m, n, seed=1)
    worst, constraint = 0.0, 0.0
    for i in range(n):
        d.qpos[:], d.qvel[:], d.ctrl[:], d.qfrc_applied[:] = s.q[i], s.qd[i], s.ctrl[i], s.qfrc_applied[i]
        d.xfrc_applied[1:] = s.xfrc_applied[i]
        mujoco.mj_forward(m, d)
        applied = d.qfrc_applied.copy()
        for b in range(1, m.nbody):
            mujoco.mj_applyFT(m, d, d.xfrc_applied[b, :3], d.xfrc_applied[b, 3:], d.xipos[b], b, applied)
        lhs = full_mass(m, d) @ d.qacc + d.qfrc_bias
        rhs = d.qfrc_actuator + d.qfrc_passive + d.qfrc_constraint + applied
        worst = max(worst, float(np.abs(lhs - rhs).max()))
        constraint = max(constraint, float(np.abs(d.qfrc_constraint).max()))
    tree, act = dynamics.tree_from_mujoco(m), forces.actuators_from_mujoco(m)
    return dict(mujoco=worst, constraint=constraint, physai=acceptance.balance_residual(m, s, tree, act))


def energy_and_spectrum() -> dict:
    """(4): arm7 at home with qvel ~ N(0, 1) (seed 2): kinetic energy three ways; M's spectrum with armature 0.05 and 0."""
    m = models.load("arm7")
    m.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_ENERGY
    d = mujoco.MjData(m)
    tree = dynamics.tree_from_mujoco(m)
    q = m.key_qpos[m.key("home").id].copy()
    d.qpos[:] = q
    d.qvel[:] = np.random.default_rng(2).normal(size=m.nv)
    mujoco.mj_forward(m, d)
    M = full_mass(m, d)
    out = dict(T_matrix=float(0.5 * d.qvel @ M @ d.qvel), T_mujoco=float(d.energy[1]),
               T_physai=dynamics.kinetic_energy(tree, q, d.qvel.copy()))
    for arm in (0.05, 0.0):
        m.dof_armature[:] = arm
        tree.armature = np.full(m.nv, arm)
        mujoco.mj_forward(m, d)
        M = full_mass(m, d)
        eig = np.linalg.eigvalsh(M)
        out[arm] = dict(symmetric=bool(np.array_equal(M, M.T)), lo=float(eig[0]), hi=float(eig[-1]),
                        cond=float(eig[-1] / eig[0]),
                        physai=float(np.abs(np.linalg.eigvalsh(dynamics.mass_matrix(tree, q)) - eig).max()))
    return out


# ---- Exercise and Challenge ----


def arm2_with_tip(mass: float = TIP_MASS) -> mujoco.MjModel:
    """arm2 with a point mass (zero rotational inertia) welded at link 2's tip, built with an MjSpec."""
    spec = mujoco.MjSpec.from_file(str(models.model_path("arm2")))
    tip = spec.body("link2").add_body(name="tip", pos=[L2, 0.0, 0.0])
    tip.explicitinertial = True
    tip.mass, tip.ipos, tip.inertia = mass, [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]
    tip.add_geom(type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[0.02, 0, 0], contype=0, conaffinity=0, density=0)
    return spec.compile()


def exercise() -> list[dict]:
    """M and g of the tip-loaded arm by hand against mj_fullM and qfrc_bias (qvel = 0), and physai's, at POSES."""
    m = arm2_with_tip()
    d = mujoco.MjData(m)
    tree = dynamics.tree_from_mujoco(m)
    rows = []
    for q in POSES:
        d.qpos[:], d.qvel[:] = q, 0.0
        mujoco.mj_forward(m, d)
        M, g = full_mass(m, d), d.qfrc_bias.copy()
        Mh, gh = mass_matrix_2link(q, tip=TIP_MASS), gravity_2link(q, tip=TIP_MASS)
        rows.append(dict(q=q, M=M, g=g, M_hand=Mh, g_hand=gh, dM=float(np.abs(M - Mh).max()), dg=float(np.abs(g - gh).max()),
                         dM_physai=float(np.abs(M - dynamics.mass_matrix(tree, q)).max()),
                         dg_physai=float(np.abs(g - dynamics.gravity(tree, q)).max()),
                         dM_bare=float(np.abs(M - mass_matrix_2link(q)).max())))
    return rows


def passive_arm2() -> tuple[mujoco.MjModel, dynamics.Tree]:
    """arm2 with zero damping, gravity and joint limits disabled (ctrl stays 0): nothing does work on it."""
    m = models.load("arm2")
    m.dof_damping[:] = 0.0
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_GRAVITY | mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    return m, dynamics.tree_from_mujoco(m)


def challenge(steps: int = 2000, dt: float = 0.001) -> dict:
    """Passivity along a trajectory of the passive arm2 (physai's RK4, 2 s from q = (0.3, -0.8), qd = (2, -5)):

    dT/dt = qd^T M qdd + 1/2 qd^T Mdot qd with qdd = M^-1 (-C qd) from forward dynamics, term by term;
    T's drift along physai's and MuJoCo's RK4 trajectories; the hand-written Christoffel C and Mdot against
    physai's, and the skew-symmetry of Mdot - 2C, at every state of the trajectory.
    """
    m, tree = passive_arm2()
    q0, qd0 = np.array([0.3, -0.8]), np.array([2.0, -5.0])
    traj = integrators.simulate(tree, q0, qd0, dt, steps, "rk4", energy=False)
    out = dict(inertial=0.0, mdot=0.0, dTdt=0.0, skew=0.0, skew_hand=0.0, passivity=0.0, dC=0.0, dMdot=0.0, Cqd=0.0)
    T = np.empty(steps + 1)
    d = mujoco.MjData(m)
    for k, (q, qd) in enumerate(zip(traj.q, traj.qd)):
        M = dynamics.mass_matrix(tree, q)
        qdd = dynamics.forward_dynamics(tree, q, qd, np.zeros(2))
        Md, C = mass_matrix_dot(tree, q, qd), coriolis_matrix(tree, q, qd)
        Ch, Mdh = coriolis_2link(q, qd), mass_matrix_dot_2link(q, qd)
        T[k] = 0.5 * qd @ M @ qd
        a, b = float(qd @ M @ qdd), float(0.5 * qd @ Md @ qd)
        S, Sh = Md - 2 * C, Mdh - 2 * Ch
        d.qpos[:], d.qvel[:] = q, qd
        mujoco.mj_forward(m, d)
        for key, value in (("inertial", abs(a)), ("mdot", abs(b)), ("dTdt", abs(a + b)), ("skew", np.abs(S + S.T).max()),
                           ("skew_hand", np.abs(Sh + Sh.T).max()), ("passivity", abs(qd @ Sh @ qd)),
                           ("dC", np.abs(C - Ch).max()), ("dMdot", np.abs(Md - Mdh).max()),
                           ("Cqd", np.abs(Ch @ qd - d.qfrc_bias).max())):
            out[key] = max(out[key], float(value))
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
    m.opt.timestep = dt
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = q0, qd0
    T_mj, dq = np.empty(steps + 1), 0.0
    for k in range(steps + 1):
        mujoco.mj_forward(m, d)
        M = full_mass(m, d)
        T_mj[k] = 0.5 * d.qvel @ M @ d.qvel
        dq = max(dq, float(np.abs(d.qpos - traj.q[k]).max()))
        if k < steps:
            mujoco.mj_step(m, d)
    out.update(T0=float(T[0]), drift=float(np.abs(T - T[0]).max()), drift_mujoco=float(np.abs(T_mj - T_mj[0]).max()),
               vs_mujoco=dq, seconds=steps * dt)
    return out


# ---- printing ----


def r(x, digits=5):
    """Rounded, as a nested list with -0.0 turned into 0.0."""
    return (np.round(np.asarray(x, dtype=float), digits) + 0.0).tolist()


def main(n: int = N) -> list[str]:
    lines: list[str] = []
    say = lines.append
    B = BOUNDS
    say("(1) two-link arm: Lagrangian against MuJoCo")
    a = two_link(n)
    say(f"  {n} random states (q uniform in arm2's joint range [-3, 3] rad, qdot ~ N(0, 3 rad/s)):")
    say(f"    max |mj_fullM - M(q)| {bound(a['M'], B['M'], 'kg m^2')} with the inertias as written in the XML, "
        f"{a['M_rod']:.1e} with the exact m L^2 / 12 they round")
    say("    seed: 3.9e-16 with the XML inertias, 3.3e-08 with the exact m L^2 / 12")
    say(f"    max |qfrc_bias - c(q, qdot) - g(q)| {bound(a['bias'], B['bias'], 'N m')}          seed: 5.3e-15 N m")
    say(f"    physai: max |mj_fullM - mass_matrix| {bound(a['M_physai'], B['M_physai'], 'kg m^2')}, "
        f"max |qfrc_bias - bias| {bound(a['bias_physai'], B['bias_physai'], 'N m')}")
    say("    (residuals at rounding level are printed as bounds, their last digits depending on the CPU; our states "
        "differ from the seed's, arm2's joint range [-3, 3] being our choice)")
    say(f"  M at q = (0, 0): {r(a['M00'])} kg m^2 (physai {r(a['M00_physai'])}, Lagrangian {r(a['M00_lagrange'])})")
    say("    seed: [[0.486, 0.12267], [0.12267, 0.04267]] kg m^2")
    say(f"  M at q = (0, pi/2): {r(a['M0pi2'])} kg m^2 (physai {r(a['M0pi2_physai'])}; "
        "the off-diagonal shrinks as the elbow bends)")
    say("    seed: [[0.326, 0.04267], [0.04267, 0.04267]] kg m^2")
    say("(2) armature and damping")
    b = armature_and_damping()
    say(f"  armature 0.1 kg m^2 on both joints: M changes by {r(b['dM'], 6)} (physai's mass_matrix: {r(b['dM_physai'], 6)})")
    say("    seed: [[0.1, 0.0], [0.0, 0.1]]")
    say(f"  qfrc_passive = {r(b['passive'], 6)} N m; -damping * qvel = {r(b['damping'], 6)} N m; "
        f"physai passive_force = {r(b['passive_physai'], 6)} N m")
    say(f"    (damping is not part of qfrc_bias: |qfrc_bias - physai bias| {bound(b['bias_no_damping'], B['bias'], 'N m')}, "
        "and physai's bias has no damping term)")
    say("    seed: qfrc_passive = [-0.03  0.04] N m; -damping * qvel = [-0.03  0.04] N m")
    say("(3) the balance MuJoCo solves, arm7")
    c = balance(n)
    say(f"  {n} random states (q uniform in the joint ranges, qdot in [-2, 2] rad/s), ctrl uniform in ctrlrange, "
        "qfrc_applied and every body's xfrc_applied in [-2, 2] (N m, N):")
    say(f"    MuJoCo's terms: max |M qacc + bias - (actuator + passive + constraint + applied)| "
        f"{bound(c['mujoco'], B['balance'], 'N m')} "
        f"(max |qfrc_constraint| = {c['constraint']:.1e}: no joint limit is active inside the range)")
    say(f"    physai's terms, MuJoCo's qacc (constraints disabled, qfrc_constraint = 0): max residual "
        f"{bound(c['physai'], B['balance'], 'N m')}")
    say("    seed: 9.2e-12 N m")
    say("    (arm7 is physai's own 7-dof stand-in, the course's file being unavailable, and the applied forces include "
        "xfrc_applied: the residuals are not the seed's, both are at rounding level)")
    say("(4) kinetic energy and the conditioning of M, arm7 at home")
    e = energy_and_spectrum()
    say(f"  1/2 qdot^T M qdot = {e['T_matrix']:.10f} J, MuJoCo energy[1] = {e['T_mujoco']:.10f} J, "
        f"physai kinetic_energy = {e['T_physai']:.10f} J")
    say("    seed: 1/2 qdot^T M qdot = 2.2154066574 J, MuJoCo energy[1] = 2.2154066574 J")
    for arm, seed in ((0.05, "eigenvalues from 5.02e-02 to 1.781 kg m^2, condition number 35"),
                      (0.0, "eigenvalues from 2.35e-04 to 1.731 kg m^2, condition number 7372")):
        s = e[arm]
        say(f"  armature {arm:<4}: M symmetric {s['symmetric']}, eigenvalues from {s['lo']:.2e} to {s['hi']:.3f} kg m^2, "
            f"condition number {s['cond']:.0f} (physai's eigenvalues differ by {bound(s['physai'], B['M_physai'])})")
        say(f"    seed: {seed}")
    say("  (our arm7 is not the course's: the energy and the spectrum are our model's; armature still lifts the smallest "
        "eigenvalue to about 0.05 and collapses the condition number)")
    say("Exercise: a 0.5 kg point mass welded at arm2's tip (MjSpec), M and g updated by hand")
    say("  M += 0.5 [[L1^2 + L2^2 + 2 L1 L2 cos q2, L2^2 + L1 L2 cos q2], [., L2^2]],  "
        "g += 0.5 G [L1 cos q1 + L2 cos(q1 + q2), L2 cos(q1 + q2)]")
    rows = exercise()
    for x in rows:
        say(f"  q = ({x['q'][0]:+.4f}, {x['q'][1]:+.4f}): M11 {x['M'][0, 0]:.5f}, g {r(x['g'], 4)} N m; "
            f"without the update |dM| {x['dM_bare']:.2f}")
    worst = {k: max(x[k] for x in rows) for k in ("dM", "dg", "dM_physai", "dg_physai")}
    say(f"  at all {len(rows)} poses: |mj_fullM - hand| {bound(worst['dM'], B['M'], 'kg m^2')}, |qfrc_bias - hand| "
        f"{bound(worst['dg'], B['bias'], 'N m')}; physai's M and g against MuJoCo's {bound(worst['dM_physai'], B['M_physai'])}, "
        f"{bound(worst['dg_physai'], B['bias'])}")
    say("  seed: no printed numbers (the Exercise asks for the check)")
    say("Challenge: passivity with no actuation, damping or gravity (arm2, joint limits off, 2 s of RK4 at 1 ms from "
        "q = (0.3, -0.8), qd = (2, -5))")
    ch = challenge()
    say("  dT/dt = qd^T M qdd + 1/2 qd^T Mdot qd = qd^T (tau - C qd - g) + 1/2 qd^T Mdot qd = 1/2 qd^T (Mdot - 2C) qd "
        "when tau = g = 0, so passivity is qd^T (Mdot - 2C) qd = 0")
    say(f"  along the trajectory: max |qd^T M qdd| = {ch['inertial']:.2f} W and max |1/2 qd^T Mdot qd| = {ch['mdot']:.2f} W "
        f"cancel to max |dT/dt| {bound(ch['dTdt'], B['dTdt'], 'W')}")
    say(f"  T(0) = {ch['T0']:.6f} J; drift of T over {ch['seconds']:.0f} s (one digit): physai rk4 {ch['drift']:.0e} J, MuJoCo "
        f"rk4 {ch['drift_mujoco']:.0e} J (integration error; the trajectories agree to "
        f"{bound(ch['vs_mujoco'], B['trajectory'], 'rad')})")
    say(f"  Christoffel C by hand: max |C_hand - coriolis_matrix| {bound(ch['dC'], B['C'], 'N m s')}, "
        f"max |Mdot_hand - mass_matrix_dot| {bound(ch['dMdot'], B['C'])}, max |C_hand qd - qfrc_bias| "
        f"{bound(ch['Cqd'], B['bias'], 'N m')}")
    say(f"  skew-symmetry: max |S + S^T| {bound(ch['skew_hand'], B['C'])} (hand), {bound(ch['skew'], B['C'])} (physai); "
        f"max |qd^T (Mdot - 2C) qd| {bound(ch['passivity'], B['dTdt'], 'W')}")
    say("  seed: no printed numbers (the Challenge asks for the check)")
    return lines


if __name__ == "__main__":
    text = "\n".join(main()) + "\n"
    print(text, end="")
    if os.environ.get("PHYSAI_FAST") != "1":
        (HERE / "output.txt").write_text(text, encoding="utf-8", newline="\n")
