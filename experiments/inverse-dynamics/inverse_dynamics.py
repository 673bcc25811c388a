"""Lesson 7.2 (seed 003): forward and inverse dynamics, and what makes them agree exactly through a timestep.

(1) mj_inverse undoes mj_forward on arm7, and so does physai's inverse_dynamics;
(2) torques from a minimum-jerk motion of arm7 (home to home + [0.6, -0.3, 0.4, -0.5, 0.5, 0.4, 0.8] rad in 2 s),
    replayed open loop: analytic or integrator-consistent accelerations, invdiscrete off or on, under Euler;
    then implicitfast, implicit and RK4 (mj_inverse refuses RK4; physai.inverse.rk4_shooting solves it).
    MuJoCo's torques (mj_inverse) replay in mj_step, physai's (physai.inverse) in physai.integrators.simulate,
    and the exact ones each in the other simulator as well;
(3) the vertical force that holds a 1 kg box still on a plane, by height, for solref time constants 0.02 and
    0.005 s: mj_inverse's and physai.constraints.inverse_dynamics' (the contacts from MuJoCo's collision until physai
    finds its own), and MuJoCo's forward-inverse check with contacts;
Exercise: arm2, a 1 s minimum-jerk motion (0, 0) -> (0.8, -1.0): torques from lesson 7.1's Lagrangian, from
    mj_inverse with analytic accelerations, and from mj_inverse with consistent accelerations and invdiscrete;
Challenge: RK4 torques by shooting against the Euler ones.

Each block prints our numbers and, on a "seed:" line, the lesson's.

    uv run python experiments/inverse-dynamics/inverse_dynamics.py     (PHYSAI_FAST=1: fewer states, 0.5 s of motion, no file)

Prints and writes output.txt beside this file, the same on every machine: residuals at machine precision are
printed as the bounds of BOUNDS (their last digits depend on the CPU), which tests/test_seed_experiments.py asserts
the values against; the seed's residuals are quoted beside them.
"""

import importlib.util
import os
from pathlib import Path

import mujoco
import numpy as np

from physai import constraints, engine, forces, integrators, inverse, models
from physai.lessons import bound
from physai.trajectories import min_jerk

HERE = Path(__file__).resolve().parent
FAST = os.environ.get("PHYSAI_FAST") == "1"
N = 200 if FAST else 1000
INVDISCRETE = int(mujoco.mjtEnableBit.mjENBL_INVDISCRETE)
STEP = np.array([0.6, -0.3, 0.4, -0.5, 0.5, 0.4, 0.8])       # arm7's motion from home [rad]
DURATION = 2.0                                                 # [s]

#: Printed bounds on the residuals: 7 to 100 times the worst value seen on the kernels tried, a few eps (2.2e-16) times
#: each quantity's scale (arm7's torques up to ~50 N m with the random controls, joint angles ~1 rad).
BOUNDS = {
    "inverse": 1e-11,        # [N m] (1) qfrc_inverse vs the applied forces, MuJoCo's and physai's
    "identity": 1e-12,       # [N m] (1) qfrc_inverse vs its terms
    "torque": 1e-13,         # [N m] physai's torques vs mj_inverse's (|tau| < 7 N m), Lagrangian vs mj_inverse (arm2)
    "replay": 1e-14,         # [rad] exact replays (consistent accelerations + invdiscrete), crossed or not
    "shooting": 1e-12,       # [rad] RK4 shooting: landing error and its replay in physai's rk4
    "shooting_mj": 1e-12,    # [rad] the same torques replayed in mj_step (RK4)
    "fwdinv": 1e-11,         # [N m] MuJoCo's forward-inverse check with contacts, in qfrc
    "box": 1e-11,            # [N] (3) physai's holding force vs mj_inverse's (up to ~500 N)
    "settle": 1e-12,         # [m] (3) physai's box settling (its own contacts and simulator) vs mj_step's, 4 s
    "slide": 1e-10,          # [m] (3) physai's box pushed into sliding vs mj_step's states (up to ~2.5 m travelled)
    "fwdinv_force": 1e-10,   # [N] (3) physai's forward-inverse check in constraint force (forces up to ~10 N)
}
#: The seed's open-loop replay errors (003_d50b4faaac521434.txt, output (2)) at 0.5 s, 1 s and 2 s [rad], quoted.
SEED_REPLAY = {("analytic", False): ("3.1e-04", "7.2e-04", "4.8e-02"), ("analytic", True): ("3.1e-04", "7.2e-04", "2.8e-02"),
               ("integrator-consistent", False): ("6.2e-04", "1.4e-03", "2.0e-02"),
               ("integrator-consistent", True): ("6.9e-18", "5.6e-17", "1.1e-16")}

# A 1 kg box (half-size 0.05 m) free on a plane, friction 1; the contact's solref time constant is {tc}.
BOX = """
<mujoco model="box on plane">
  <option timestep="0.002"/>
  <worldbody>
    <geom name="floor" type="plane" size="1 1 0.1" friction="1 0.005 0.0001"/>
    <body name="box" pos="0 0 0.05">
      <freejoint/>
      <geom type="box" size="0.05 0.05 0.05" mass="1" friction="1 0.005 0.0001" solref="{tc} 1"/>
    </body>
  </worldbody>
</mujoco>
"""


# ---- (1) ----


def inverse_undoes_forward(n: int = N) -> dict:
    """n random states of arm7 (q uniform in range, qvel ~ N(0, 1), ctrl in ctrlrange, qfrc_applied ~ N(0, 2)).

    mujoco: max |qfrc_inverse - (qfrc_actuator + qfrc_applied)| after mj_forward then mj_inverse;
    identity: at the last state, max |qfrc_inverse - (M qacc + qfrc_bias - qfrc_passive - qfrc_constraint)|;
    physai: max |inverse_dynamics(q, qd, qacc) - (actuator_force + qfrc_applied)| with MuJoCo's qacc;
    constraint: max |qfrc_constraint| (joint limits are enabled, as in the lesson, but inactive inside the range).
    """
    m = models.load("arm7")
    d = mujoco.MjData(m)
    tree, act = engine.from_mujoco(m), forces.actuators_from_mujoco(m)
    rng = np.random.default_rng(0)
    out = dict(mujoco=0.0, physai=0.0, constraint=0.0)
    for _ in range(n):
        d.qpos[:] = rng.uniform(m.jnt_range[:, 0], m.jnt_range[:, 1])
        d.qvel[:] = rng.normal(size=m.nv)
        d.ctrl[:] = rng.uniform(m.actuator_ctrlrange[:, 0], m.actuator_ctrlrange[:, 1])
        d.qfrc_applied[:] = rng.normal(scale=2.0, size=m.nv)
        mujoco.mj_forward(m, d)                                  # torques -> qacc
        applied = d.qfrc_actuator + d.qfrc_applied
        ours = inverse.inverse_dynamics(tree, d.qpos, d.qvel, d.qacc)
        ours_applied = forces.actuator_force(act, d.qpos, d.qvel, d.ctrl) + d.qfrc_applied
        out["physai"] = max(out["physai"], float(np.abs(ours - ours_applied).max()))
        out["constraint"] = max(out["constraint"], float(np.abs(d.qfrc_constraint).max()))
        mujoco.mj_inverse(m, d)                                  # qacc -> the forces that must have been applied
        out["mujoco"] = max(out["mujoco"], float(np.abs(d.qfrc_inverse - applied).max()))
    M = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, M)
    terms = M @ d.qacc + d.qfrc_bias - d.qfrc_passive - d.qfrc_constraint
    out["identity"] = float(np.abs(terms - d.qfrc_inverse).max())
    return out


# ---- (2) ----


class Motion:
    """arm7's minimum-jerk motion sampled at the timestep: path(t), samples q_0 .. q_(n+1), n steps."""

    def __init__(self, model: str = "arm7", step=STEP, duration: float = DURATION, start=None, steps: int | None = None):
        self.m = models.load(model)
        self.tree = engine.from_mujoco(self.m)
        self.act = forces.actuators_from_mujoco(self.m)
        self.h = self.m.opt.timestep
        self.q0 = self.m.key_qpos[self.m.key("home").id].copy() if start is None else np.asarray(start, dtype=float)
        self.path = min_jerk(self.q0, self.q0 + np.asarray(step), duration)
        self.n = round(duration / self.h) if steps is None else steps
        self.samples = np.array([self.path(k * self.h)[0] for k in range(self.n + 2)])

    def set_integrator(self, name: str) -> None:
        self.m.opt.integrator = integrators.MUJOCO_INTEGRATOR[name]

    def states(self, accel: str):
        """(q, qd, qdd) of each step k < n: the path at t_k ("analytic"), or what Euler needs to land on the samples."""
        if accel == "analytic":
            rows = [self.path(k * self.h) for k in range(self.n)]
            return tuple(np.array([r[i] for r in rows]) for i in range(3))
        qd, qdd = inverse.consistent_accelerations(self.samples[: self.n + 1], self.h)
        return self.samples[: self.n], qd, qdd

    def mj_torques(self, accel: str, invdiscrete: bool) -> np.ndarray:
        """qfrc_inverse of each step from mj_inverse; raises mujoco.FatalError for RK4 with invdiscrete."""
        m, d = self.m, mujoco.MjData(self.m)
        q, qd, qdd = self.states(accel)
        m.opt.enableflags = (m.opt.enableflags | INVDISCRETE) if invdiscrete else (m.opt.enableflags & ~INVDISCRETE)
        try:
            tau = np.zeros((self.n, m.nv))
            for k in range(self.n):
                d.qpos[:], d.qvel[:], d.qacc[:] = q[k], qd[k], qdd[k]
                mujoco.mj_inverse(m, d)
                tau[k] = d.qfrc_inverse
        finally:
            m.opt.enableflags &= ~INVDISCRETE
        return tau

    def physai_torques(self, accel: str, invdiscrete: bool, integrator: str) -> np.ndarray:
        """physai.inverse's force of each step: continuous, or discrete for `integrator` (rk4: shooting)."""
        if accel != "analytic" and invdiscrete:
            return inverse.trajectory_torques(self.tree, self.samples[: self.n + 1], self.h, integrator)
        q, qd, qdd = self.states(accel)
        kw = dict(dt=self.h, integrator=integrator) if invdiscrete else {}
        return np.array([inverse.inverse_dynamics(self.tree, q[k], qd[k], qdd[k], **kw) for k in range(self.n)])

    def mj_replay(self, tau: np.ndarray) -> np.ndarray:
        """max joint error to the samples after each mj_step with ctrl = tau[k] (motors with gear 1) [rad]."""
        d = mujoco.MjData(self.m)
        d.qpos[:] = self.q0
        err = np.zeros(self.n)
        for k in range(self.n):
            d.ctrl[:] = tau[k]
            mujoco.mj_step(self.m, d)
            err[k] = np.abs(d.qpos - self.samples[k + 1]).max()
        return err

    def physai_replay(self, tau: np.ndarray, integrator: str) -> np.ndarray:
        """The same replay in physai.integrators.simulate with the model's actuators and ctrl = tau [rad]."""
        traj = integrators.simulate(self.tree, self.q0, np.zeros(self.tree.nv), self.h, self.n, integrator,
                                    ctrl=tau, actuators=self.act, energy=False)
        return np.abs(traj.q[1:] - self.samples[1: self.n + 1]).max(axis=1)


WAYS = (("analytic", False), ("analytic", True), ("integrator-consistent", False), ("integrator-consistent", True))


def euler_four_ways(motion: Motion) -> list[dict]:
    """The four ways under Euler: errors of MuJoCo's torques in mj_step and physai's in physai's simulator."""
    motion.set_integrator("euler")
    rows = []
    for accel, inv in WAYS:
        mj, ours = motion.mj_torques(accel, inv), motion.physai_torques(accel, inv, "euler")
        rows.append(dict(accel=accel, invdiscrete=inv, tau=mj, err_mj=motion.mj_replay(mj),
                         err_physai=motion.physai_replay(ours, "euler"), dtau=float(np.abs(ours - mj).max()),
                         cross_mj=float(motion.mj_replay(ours).max()),
                         cross_physai=float(motion.physai_replay(mj, "euler").max())))
    return rows


def other_integrators(motion: Motion) -> dict:
    """implicitfast and implicit: consistent + invdiscrete, both ways and crossed; rk4: MuJoCo's refusal, physai's shooting."""
    out = {}
    for name in ("implicitfast", "implicit"):
        motion.set_integrator(name)
        mj, ours = motion.mj_torques("integrator-consistent", True), motion.physai_torques("integrator-consistent", True, name)
        out[name] = dict(err_mj=float(motion.mj_replay(mj).max()), err_physai=float(motion.physai_replay(ours, name).max()),
                         dtau=float(np.abs(ours - mj).max()), cross_mj=float(motion.mj_replay(ours).max()),
                         cross_physai=float(motion.physai_replay(mj, name).max()))
    motion.set_integrator("rk4")
    try:
        motion.mj_torques("integrator-consistent", True)
        refusal = None
    except mujoco.FatalError as exc:
        refusal = str(exc)
    shot = inverse.rk4_shooting(motion.tree, motion.samples[: motion.n + 1], motion.h)
    out["rk4"] = dict(refusal=refusal, shot=shot, newton=int(shot.iterations.max()), error=float(shot.error.max()),
                      err_physai=float(motion.physai_replay(shot.tau, "rk4").max()),
                      err_mj=float(motion.mj_replay(shot.tau).max()))
    motion.set_integrator("euler")
    return out


# ---- (3) ----


def contact_inverse(offsets=(1e-3, 0.0, -2e-4, -5e-4, -1e-3), settle: int = 2000, push_steps: int = 1000) -> dict:
    """For tc = 0.02 and 0.005 s: the box settled by physai's simulator (its own contacts, integrators.simulate with
    constraints) beside mj_step, its rest depth, and the vertical force holding it still (qacc = 0) at rest height + each
    offset, MuJoCo's (qfrc_inverse) and physai's (constraints.inverse_dynamics with its own contacts); then (tc 0.02) the
    box at rest and pushed into sliding by 12 N, stepped by both, with the forward-inverse check: MuJoCo's
    (mjENBL_FWDINV) and physai's (forward dynamics, then inverse dynamics of its qacc, at every state of its run)."""
    out = {}
    for tc in (0.02, 0.005):
        m = mujoco.MjModel.from_xml_string(BOX.format(tc=tc))
        model = engine.from_mujoco(m)
        d = mujoco.MjData(m)
        for _ in range(settle):
            mujoco.mj_step(m, d)
        run = integrators.simulate(model, m.qpos0, np.zeros(m.nv), m.opt.timestep, settle, constraints=True, energy=False)
        rest = float(d.qpos[2])
        forces_z, physai_z = [], []
        for dz in offsets:
            probe = mujoco.MjData(m)
            probe.qpos[:] = d.qpos
            probe.qpos[2] = rest + dz
            mujoco.mj_inverse(m, probe)                        # qvel = qacc = 0: hold it perfectly still here
            forces_z.append(float(probe.qfrc_inverse[2]))
            zero = np.zeros(m.nv)
            held = constraints.inverse_dynamics(model, probe.qpos, zero, zero)     # contacts: physai's own
            physai_z.append(float(held.tau[2]))
        out[tc] = dict(depth=0.05 - rest, forces=forces_z, physai=physai_z, physai_depth=0.05 - float(run.q[-1, 2]),
                       settle_gap=float(np.abs(run.q[-1] - d.qpos).max()))
    m = mujoco.MjModel.from_xml_string(BOX.format(tc=0.02))
    m.opt.enableflags |= int(mujoco.mjtEnableBit.mjENBL_FWDINV)
    model = engine.from_mujoco(m)
    d = mujoco.MjData(m)
    push = np.zeros((push_steps, model.nbody, 6))
    push[push_steps // 2 + 1:, 0, 0] = 12.0                    # 12 N along x from the middle on
    worst, states = np.zeros(2), []
    for k in range(push_steps):                                # rest, then push it into sliding
        d.xfrc_applied[1] = push[k, 0]
        mujoco.mj_step(m, d)
        worst = np.maximum(worst, d.solver_fwdinv)
        states.append(d.qpos.copy())
    run = integrators.simulate(model, m.qpos0, np.zeros(m.nv), m.opt.timestep, push_steps, xfrc_applied=push,
                               constraints=True, energy=False)
    tau = np.array([forces.applied_force(model, q, xfrc_applied=push[k]) for k, q in enumerate(run.q[:-1])])
    fwd = constraints.forward_dynamics(model, run.q[:-1], run.qd[:-1], tau)
    inv = constraints.inverse_dynamics(model, run.q[:-1], run.qd[:-1], fwd.qacc)
    out["fwdinv"] = worst.tolist()
    out["physai_fwdinv"] = [float(np.abs(inv.tau - tau).max()),
                            max(float(np.abs(a - b).max(initial=0.0)) for a, b in zip(inv.efc_force, fwd.efc_force))]
    out["offsets"], out["settle_time"] = list(offsets), settle * m.opt.timestep
    out["speed"], out["physai_speed"] = float(d.qvel[0]), float(run.qd[-1, 0])
    out["push_gap"] = float(np.abs(run.q[1:] - np.array(states)).max())
    return out


# ---- Exercise and Challenge ----


def _lesson71():
    """Lesson 7.1's two-link Lagrangian (experiments/equations-of-motion), loaded from its script."""
    path = HERE.parent / "equations-of-motion" / "equations_of_motion.py"
    spec = importlib.util.spec_from_file_location("equations_of_motion", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def exercise(steps: int | None = None) -> dict:
    """arm2, 1 s minimum-jerk (0, 0) -> (0.8, -1.0) under Euler: torques three ways and their replays in mj_step.

    Lagrangian: M(q) qdd + c(q, qd) + damping qd (the motors also supply what the joint dampers take);
    mj_inverse with the analytic (q, qd, qdd); mj_inverse with consistent accelerations and invdiscrete.
    Also physai's trajectory_torques against the third.
    """
    L = _lesson71()
    mo = Motion("arm2", step=[0.8, -1.0], duration=1.0, start=[0.0, 0.0], steps=steps)
    q, qd, qdd = mo.states("analytic")
    lagrange = np.array([L.mass_matrix_2link(q[k]) @ qdd[k] + L.bias_2link(q[k], qd[k]) + mo.m.dof_damping * qd[k]
                         for k in range(mo.n)])
    analytic = mo.mj_torques("analytic", False)
    exact = mo.mj_torques("integrator-consistent", True)
    ours = inverse.trajectory_torques(mo.tree, mo.samples[: mo.n + 1], mo.h, "euler")
    return dict(n=mo.n, lagrange_vs_mj=float(np.abs(lagrange - analytic).max()),
                err=[float(mo.mj_replay(t)[-1]) for t in (lagrange, analytic, exact)],
                physai_vs_exact=float(np.abs(ours - exact).max()),
                limit=float(np.max(np.abs(exact) / mo.m.actuator_ctrlrange[:, 1])))


def challenge(motion: Motion, shot: inverse.ShootingResult, euler_tau: np.ndarray) -> dict:
    """RK4 torques by shooting against the Euler ones (consistent + invdiscrete), and both against the continuous
    inverse dynamics of the analytic path (physai.inverse.inverse_dynamics) at the step starts t_k and the step
    midpoints t_k + h/2.

    Shooting on positions alone leaves each step's end velocity free: zigzag is the largest step-to-step
    alternation of the RK4 torques, max |tau_k - (tau_(k-1) + tau_(k+1)) / 2|, ringing the largest deviation of
    the shot velocities from the path's, and pair_vs_mid compares the mean of neighbouring torques with the mean
    of the continuous torques at the two midpoints.
    """
    def continuous(offset: float) -> np.ndarray:
        return np.array([inverse.inverse_dynamics(motion.tree, *motion.path((k + offset) * motion.h)) for k in range(motion.n)])

    rk4_tau, (start, middle) = shot.tau, (continuous(0.0), continuous(0.5))
    path_qd = np.array([motion.path(k * motion.h)[1] for k in range(motion.n + 1)])
    pair = lambda x: 0.5 * (x[:-1] + x[1:])                                          # noqa: E731
    return dict(rk4_vs_euler=float(np.abs(rk4_tau - euler_tau).max()), scale=float(np.abs(euler_tau).max()),
                rk4_vs_start=float(np.abs(rk4_tau - start).max()), euler_vs_start=float(np.abs(euler_tau - start).max()),
                rk4_vs_mid=float(np.abs(rk4_tau - middle).max()), euler_vs_mid=float(np.abs(euler_tau - middle).max()),
                zigzag=float(np.abs(rk4_tau[1:-1] - 0.5 * (rk4_tau[:-2] + rk4_tau[2:])).max()),
                ringing=float(np.abs(shot.qd - path_qd).max()),
                pair_vs_mid=float(np.abs(pair(rk4_tau) - pair(middle)).max()))


# ---- printing ----


def main(n: int = N, steps: int | None = 250 if FAST else None) -> list[str]:
    lines: list[str] = []
    say = lines.append
    B = BOUNDS
    say("(1) mj_inverse undoes mj_forward (arm7, no contacts)")
    a = inverse_undoes_forward(n)
    say(f"  {n} random states: max |qfrc_inverse - (qfrc_actuator + qfrc_applied)| {bound(a['mujoco'], B['inverse'], 'N m')}")
    say(f"  qfrc_inverse = M qacc + qfrc_bias - qfrc_passive - qfrc_constraint: max difference "
        f"{bound(a['identity'], B['identity'], 'N m')}")
    say(f"  physai: max |inverse_dynamics(q, qd, qacc) - (actuator_force + qfrc_applied)| {bound(a['physai'], B['inverse'], 'N m')} "
        f"(max |qfrc_constraint| = {a['constraint']:.1e}: no joint limit is active)")
    say("  seed: 1.6e-11 N m; identity 7.1e-15 N m")
    mo = Motion(steps=steps)
    T = mo.n * mo.h
    marks = [(f"{t:g} s", round(t / mo.h) - 1, j) for j, t in enumerate((0.5, 1.0, 2.0)) if round(t / mo.h) <= mo.n]
    say("(2) torque from motion, replayed open loop")
    say(f"  motion: home to home + {STEP.tolist()} rad in {DURATION} s (first {T:g} s replayed), Euler, h = {mo.h} s")
    say("  MuJoCo: mj_inverse's torques replayed with mj_step; "
        "physai: physai.inverse's replayed with physai.integrators.simulate")
    rows = euler_four_ways(mo)
    equal = []                                        # where our MuJoCo replay error prints as the seed's
    for x in rows:
        way = (x["accel"], x["invdiscrete"])
        seed = SEED_REPLAY[way]
        head = f"  {x['accel']:<22} invdiscrete {str(x['invdiscrete']):<5}:"
        if way == WAYS[-1]:                           # the exact way: rounding level, printed as a bound
            def errors(e, who):
                return f"max joint error over {T:g} s {bound(e.max(), B['replay'], 'rad', what=f'{who} exact replay')}"
        else:
            def errors(e, who):
                return "max joint error " + ", ".join(f"at {lbl} {e[i]:.1e}" for lbl, i, _ in marks) + " rad"
            equal += [f"{x['accel']}, invdiscrete {x['invdiscrete']}, {lbl}" for lbl, i, j in marks if f"{x['err_mj'][i]:.1e}" == seed[j]]
        say(f"{head} {errors(x['err_mj'], 'MuJoCo')} (MuJoCo)")
        say(" " * len(head) + f" {errors(x['err_physai'], 'physai')} (physai); max |tau_physai - qfrc_inverse| "
            f"{bound(x['dtau'], B['torque'], 'N m')}")
        say(" " * len(head) + " seed: " + ", ".join(f"at {t} {v}" for t, v in zip(("0.5 s", "1 s", "2 s"), seed)) + " rad")
    exact = rows[-1]
    say(f"  crossed, consistent + invdiscrete: physai's torques in mj_step {bound(exact['cross_mj'], B['replay'], 'rad')}, "
        f"MuJoCo's in physai's simulator {bound(exact['cross_physai'], B['replay'], 'rad')}")
    limit = np.max(np.abs(exact["tau"]) / mo.m.actuator_ctrlrange[:, 1])
    say(f"  largest torque over the motion / motor limit: {limit:.2f}          seed: 0.32")
    other = other_integrators(mo)
    seed_other = {"implicitfast": "5.4e-20", "implicit": "6.9e-18"}
    for name in ("implicitfast", "implicit"):
        o = other[name]
        say(f"  {name:<13} integrator-consistent, invdiscrete True: max joint error over {T:g} s "
            f"{bound(o['err_mj'], B['replay'], 'rad')} (MuJoCo), {bound(o['err_physai'], B['replay'], 'rad')} (physai); "
            f"max |tau_physai - qfrc_inverse| {bound(o['dtau'], B['torque'], 'N m')}; "
            f"crossed {bound(o['cross_mj'], B['replay'])}, {bound(o['cross_physai'], B['replay'], 'rad')}")
        say(f"                seed: {seed_other[name]} rad")
    rk = other["rk4"]
    say(f"  rk4           mj_inverse with invdiscrete raises: {rk['refusal']}")
    say(f"                physai.inverse.rk4_shooting: at most {rk['newton']} Newton iterations per step, landing error "
        f"{bound(rk['error'], B['shooting'], 'rad')}; replayed in physai's rk4 {bound(rk['err_physai'], B['shooting'], 'rad')}, "
        f"in mj_step (RK4) {bound(rk['err_mj'], B['shooting_mj'], 'rad')}")
    say("                seed: mj_discreteAcc: discrete inverse dynamics is not supported by RK4 integrator")
    say("  (arm7 is physai's own stand-in for the course's arm. Our MuJoCo replay errors, printed to two digits, equal the seed's "
        f"at {len(equal)} of the {3 * (len(WAYS) - 1)} points: " + ("; ".join(equal) if equal else "none") + ".")
    say("  Where the error is the integrator's discretisation of the path the two arms agree; later the errors compound "
        "through our model's dynamics, and the torque ratio is our lighter arm's. The exact ways replay to rounding, "
        "as in the seed.)")
    say("(3) vertical force needed to hold a 1 kg box still, by height offset from its rest pose")
    c = contact_inverse()
    seed_box = {0.02: ("0.108", "+9.81, +0.00, -21.35, -80.15, -211.74"),
                0.005: ("0.043", "+9.81, -0.00, -50.19, -177.52, -524.00")}
    for tc in (0.02, 0.005):
        row = ", ".join(f"{1000 * dz:+.1f} mm: {f:+8.2f} N" for dz, f in zip(c["offsets"], c[tc]["forces"]))
        say(f"  solref time constant {tc} s (rests {1000 * c[tc]['depth']:.3f} mm deep): {row}")
        ours = ", ".join(f"{f:+8.2f} N" for f in c[tc]["physai"])
        gap = max(abs(a - b) for a, b in zip(c[tc]["physai"], c[tc]["forces"]))
        say(f"    physai (its own contacts and simulator: rests {1000 * c[tc]['physai_depth']:.3f} mm deep, "
            f"{bound(c[tc]['settle_gap'], B['settle'], 'm')} from mj_step after {c['settle_time']:g} s): {ours}; "
            f"vs mj_inverse {bound(gap, B['box'], 'N')}")
        say(f"    seed: rests {seed_box[tc][0]} mm deep; {seed_box[tc][1]} N")
    say(f"  with contacts active (box at rest, then sliding under a 12 N push, above its 9.81 N friction limit; "
        f"{c['speed']:.2f} m/s at the end), the forward-inverse check (mjENBL_FWDINV) stays "
        f"{bound(c['fwdinv'][0], B['fwdinv'])} in qfrc and at most {c['fwdinv'][1]:.1e} in constraint force (the solver's tolerance)")
    say(f"    physai (its own contacts and simulator: {c['physai_speed']:.2f} m/s at the end, every state "
        f"{bound(c['push_gap'], B['slide'], 'm')} from mj_step's): forward then inverse dynamics at each state "
        f"{bound(c['physai_fwdinv'][0], B['fwdinv'])} in qfrc, {bound(c['physai_fwdinv'][1], B['fwdinv_force'])} in constraint force")
    say("    seed: 1.0e-12 in qfrc and 3.0e-08 in constraint force")
    say("  (our box XML is written here, the seed's is cut: 1 kg, half-size 0.05 m, friction 1, solref \"tc 1\")")
    say("Exercise: arm2, 1 s minimum-jerk (0, 0) -> (0.8, -1.0) rad, Euler, replayed open loop in mj_step")
    e = exercise(None if steps is None else min(steps, 500))
    say(f"  Lagrangian (lesson 7.1's M qdd + c, plus damping qd) vs mj_inverse with analytic accelerations: "
        f"max difference {bound(e['lagrange_vs_mj'], B['torque'], 'N m')}")
    say(f"  joint error at {e['n'] * 0.002:g} s: Lagrangian {e['err'][0]:.1e} rad, mj_inverse analytic {e['err'][1]:.1e} rad, "
        f"mj_inverse consistent + invdiscrete {bound(e['err'][2], B['replay'], 'rad')} (only the third replays exactly)")
    say(f"  physai trajectory_torques vs the third: max difference {bound(e['physai_vs_exact'], B['torque'], 'N m')}; "
        f"largest torque / motor limit {e['limit']:.2f}")
    say("  seed: no printed numbers (the Exercise asks for the check)")
    say("Challenge: RK4 torques (shooting) against Euler's (consistent + invdiscrete), arm7")
    ch = challenge(mo, rk["shot"], exact["tau"])
    say(f"  max |tau_rk4 - tau_euler| = {ch['rk4_vs_euler']:.1e} N m (largest torque {ch['scale']:.2f} N m)")
    say(f"  against the continuous inverse dynamics of the path at the step starts t_k: RK4 {ch['rk4_vs_start']:.1e} N m, "
        f"Euler {ch['euler_vs_start']:.1e} N m; at the step midpoints t_k + h/2: RK4 {ch['rk4_vs_mid']:.1e} N m, "
        f"Euler {ch['euler_vs_mid']:.1e} N m")
    say(f"  shooting matches positions only, so the velocities ring around the path's (up to {ch['ringing']:.1e} rad/s) and "
        f"the RK4 torques alternate step to step (up to {ch['zigzag']:.1e} N m);")
    say(f"  the mean of neighbouring RK4 torques follows the continuous torques at the step midpoints to "
        f"{ch['pair_vs_mid']:.1e} N m: a force held over a step acts at its middle, "
        "while Euler's torques belong to the step start")
    say("  seed: no printed numbers (the Challenge asks for the torques and the comparison)")
    return lines


if __name__ == "__main__":
    text = "\n".join(main()) + "\n"
    print(text, end="")
    if not FAST:
        (HERE / "output.txt").write_text(text, encoding="utf-8", newline="\n")
