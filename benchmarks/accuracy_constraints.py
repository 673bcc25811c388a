"""physai's constraint model beside MuJoCo's own, on Menagerie robots in their scenes (the constraint model's accuracy table).

    uv run python benchmarks/accuracy_constraints.py

Per model group, the largest error over its states, relative to each quantity's scale, printed as a bound (the next
power of ten). The contacts are MuJoCo's (physai.collision.from_mujoco), so the rows and forces are compared alone:
    J, aref, R, D     constraints.rows                        efc_J, efc_aref, efc_R, efc_D (scale: max(1, |x|))
    tau, qfrc_c       constraints.inverse_dynamics            mj_inverse's qfrc_inverse + qfrc_passive, qfrc_constraint
                                                              (scale: the larger of max |tau|, max |qfrc_constraint|)
    qacc, efc_force   constraints.forward_dynamics            mj_forward's, both solvers at tolerance 1e-15 (1000
                                                              iterations, 100 line-search iterations)
    defaults          forward_dynamics at the model's options the distance of physai's and of MuJoCo's qacc (physai,
                                                              MuJoCo) to the tolerance-1e-15 solution (MuJoCo's),
                                                              relative to max(1, |qacc|)
Groups: the G1 at its keyframe with random velocities; the G1 along 200 mj_step states from it under noisy position
targets (every 10th); the SO-101 (elliptic cones, friction loss) with its joints moved past their limits; the Panda with
its fingers apart (the joint equality between them). tests/test_constraints.py holds random trees (every joint type,
limits with margins, friction loss, connect, weld and joint equalities; condim 1, 3, 4, 6; both cones) to the same
quantities with bounds of 1e-12 (rows, inverse), 1e-7 (qacc) and 1e-6 (efc_force).
"""

import copy

import mujoco
import numpy as np

from accuracy_whole_body import bound, error
from physai import collision, constraints, engine, models

TIGHT = (1e-15, 1000, 100)
QUANTITIES = ("J", "aref", "R", "D", "tau", "qfrc_c", "qacc", "efc_force", "defaults physai", "defaults MuJoCo")


def robot_scene(name: str):
    """(m, d) of a Menagerie robot in its scene at its first keyframe (else qpos0), random velocities (seed 1)."""
    m = models.load(name, "scene")
    d = mujoco.MjData(m)
    if m.nkey:
        mujoco.mj_resetDataKeyframe(m, d, 0)
    d.qvel[:] = 0.3 * np.random.default_rng(1).normal(size=m.nv)
    return m, d


def g1_steps():
    """The G1's states along 200 mj_step from its keyframe under noisy position targets, every 10th."""
    m, d = robot_scene("unitree_g1")
    rng = np.random.default_rng(3)
    for k in range(200):
        d.ctrl[:] = d.qpos[7:7 + m.nu] + 0.05 * rng.normal(size=m.nu)
        mujoco.mj_step(m, d)
        if k % 10 == 0:
            yield m, d


def groups():
    def one(name, change=None):
        m, d = robot_scene(name)
        if change:
            change(m, d)
        yield m, d

    def so101(m, d):                                             # past the joint limits
        d.qpos[:] = np.clip(d.qpos + 0.5, *m.jnt_range[:m.nq].T)

    def panda(m, d):                                             # the fingers off their equality
        d.qpos[-2:] = [0.03, 0.01]

    return {"G1 keyframe": one("unitree_g1"), "G1 200 steps": g1_steps(),
            "SO-101 elliptic": one("robotstudio_so101", so101), "Panda finger equality": one("franka_emika_panda", panda)}


def with_options(m, options):
    """A copy of m with the solver options (tolerance, iterations, ls_iterations)."""
    m2 = copy.copy(m)
    m2.opt.tolerance, m2.opt.iterations, m2.opt.ls_iterations = options
    return m2


def state(m, d):
    """The errors of one state (m, d at any point: its qpos, qvel, ctrl are read), and its number of rows."""
    out = {}
    d = _forward(m, d)
    model, contacts = engine.from_mujoco(m), collision.from_mujoco(m, d)
    r = constraints.rows(model, d.qpos, d.qvel, contacts, d.eq_active.astype(bool))
    if r.nefc != d.nefc:
        raise SystemExit(f"{r.nefc} rows against MuJoCo's {d.nefc}")
    out["J"] = error(r.J, d.efc_J.reshape(d.nefc, m.nv))
    out["aref"], out["R"], out["D"] = error(r.aref, d.efc_aref), error(r.R, d.efc_R), error(r.D, d.efc_D)
    d2 = mujoco.MjData(m)                                        # mj_inverse at MuJoCo's qacc
    d2.qpos[:], d2.qvel[:], d2.qacc[:], d2.ctrl[:], d2.eq_active[:] = d.qpos, d.qvel, d.qacc, d.ctrl, d.eq_active
    mujoco.mj_inverse(m, d2)
    inv = constraints.inverse_dynamics(model, d.qpos, d.qvel, d.qacc, contacts)
    tau = d2.qfrc_inverse + d2.qfrc_passive
    scale = max(1.0, np.abs(tau).max(), np.abs(d2.qfrc_constraint).max())
    out["tau"] = float(np.abs(inv.tau - tau).max() / scale)
    out["qfrc_c"] = float(np.abs(inv.qfrc_constraint - d2.qfrc_constraint).max() / scale)
    tight = with_options(m, TIGHT)                               # both solvers to tolerance 1e-15
    dt = _forward(tight, d)
    tau_smooth = dt.qfrc_passive + dt.qfrc_actuator
    fwd = constraints.forward_dynamics(engine.from_mujoco(tight), dt.qpos, dt.qvel, tau_smooth, contacts)
    out["qacc"], out["efc_force"] = error(fwd.qacc, dt.qacc), error(fwd.efc_force, dt.efc_force)
    default = constraints.forward_dynamics(model, d.qpos, d.qvel, d.qfrc_passive + d.qfrc_actuator, contacts)
    scale = max(1.0, np.abs(dt.qacc).max())
    out["defaults physai"] = float(np.abs(default.qacc - dt.qacc).max() / scale)
    out["defaults MuJoCo"] = float(np.abs(d.qacc - dt.qacc).max() / scale)
    return out, d.nefc


def _forward(m, d):
    """A new MjData at d's state (qpos, qvel, ctrl, eq_active) after mj_forward from a zero warm start."""
    d2 = mujoco.MjData(m)
    d2.qpos[:], d2.qvel[:], d2.ctrl[:], d2.eq_active[:] = d.qpos, d.qvel, d.ctrl, d.eq_active
    mujoco.mj_forward(m, d2)
    return d2


def main() -> None:
    print(f"mujoco {mujoco.__version__}; the largest error over a group's states relative to each quantity's scale, as a"
          " bound; 'defaults': the distance of physai's and of MuJoCo's qacc at the model's solver options to the"
          " tolerance-1e-15 solution")
    width = 22
    print(f"{'':{width}s}" + "".join(f"{q:>16s}" for q in QUANTITIES) + "  states    rows")
    for name, states in groups().items():
        worst, n, rows = dict.fromkeys(QUANTITIES, 0.0), 0, []
        for m, d in states:
            errors, nefc = state(m, d)
            for q, e in errors.items():
                worst[q] = max(worst[q], e)
            n += 1
            rows.append(nefc)
        print(f"{name:{width}s}" + "".join(f"{bound(worst[q]):>16s}" for q in QUANTITIES) + f"  {n:6d} {min(rows):3d}-{max(rows)}")


if __name__ == "__main__":
    main()
