"""Dynamics with constraints beside MuJoCo, per call and batched, from Python, in one run.

    uv run python benchmarks/bench_constraints.py                      # the G1 standing in its scene; N = 256
    uv run python benchmarks/bench_constraints.py --n 1024 --numpy

The robot stands in its scene (Menagerie's scene.xml: the floor) at its first keyframe: joint limits, friction loss
and the feet's contacts give MuJoCo about 60 constraint rows. Timed, microseconds:
    forward   physai.constraints.forward_dynamics (rows, M, c and Newton's method) beside mujoco.mj_forward
    inverse   physai.constraints.inverse_dynamics (closed form) beside mujoco.mj_inverse
    discrete  forward_dynamics of the robot under MuJoCo 4's discrete integrator (a copy of the model with mjINT_DISCRETE:
              qacc the step map (qd' - qd) / h, solved in the metric M + h B + h^2 K with its actuators' gains at the
              keyframe's ctrl and act, the compiled step's solve) beside mj_forward under it, on the same states
    dinverse  inverse_dynamics of that discrete robot at mj_forward's step map (its rows at the step's end, tau =
              (M + h B + h^2 K) qacc + c + h K qd - J^T f, compiled) beside mj_inverse under it (invdiscrete implied)
One call at the standing state, then one call on N states divided by N: N states near it (joint angles moved by up to
1e-3 rad, velocities of 1e-2, numpy.random.default_rng(0)), each with its own contacts, on PHYSAI_NUM_THREADS threads
(default: every core); MuJoCo's column on the same N states is one Python loop of mj_forward / mj_inverse on one
thread (state copied into MjData first). The contacts are MuJoCo's (physai.collision.from_mujoco, made before timing):
mj_forward's time includes its collision detection; physai's calls are given the contacts. Both solvers start from MuJoCo's
qacc_warmstart. Ratios: physai / MuJoCo per call, and batched per state / MuJoCo per call, at the standing state
(N/MuJoCo-1) and per state of MuJoCo's loop over the same N states (N/MuJoCo-N; its copies of the state into MjData
take about 2% of it) (below 1: physai is faster). The N states near the keyframe need more solver iterations than the
keyframe itself (about 5.3 against 4 on the G1), so N/MuJoCo-1 compares unlike work; Nstand is the batch of N copies of
the standing state (MuJoCo-1's work; the standing contact set for each, one ContactSet object, so its packed arrays are
made once), per state, and Nstand/MuJoCo-1 its ratio;
--numpy adds the NumPy reference backend, one call. Before timing, every state's results are checked against MuJoCo's
(inverse tau 1e-9 of its scale, forward qacc 1e-6 relative at the model's tolerance; the discrete inverse's against
mj_inverse after mj_forward, which reads its servos' saturation from d.actuator_force) or the run stops; the error
column prints the largest of them over the batch (relative to max(1, |qacc|), and to max(1, |qfrc_constraint|)). Times are the
best of several rounds of wall-clock time; on a shared machine expect +-20% between runs.
"""

import argparse
import copy
import os
import platform

import mujoco
import numpy as np

from bench_dynamics import best_time
from physai import collision, constraints, engine, models
from physai.engine import native


def states(m: mujoco.MjModel, n: int):
    """(d at the standing keyframe after mj_forward, [(qpos, qvel, ctrl, qacc_warmstart) of n states near it]): the
    keyframe's joint angles moved by up to 1e-3 rad and velocities of 1e-2 (normal), the root as at the keyframe."""
    stand = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, stand, 0)
    mujoco.mj_forward(m, stand)
    rng, out = np.random.default_rng(0), []
    free = 7 if m.jnt_type[0] == mujoco.mjtJoint.mjJNT_FREE else 0
    for _ in range(n):
        qpos = stand.qpos.copy()
        qpos[free:] += 1e-3 * rng.uniform(-1.0, 1.0, m.nq - free)
        out.append((qpos, 1e-2 * rng.normal(size=m.nv), stand.ctrl.copy(), stand.qacc.copy()))
    return stand, out


def load(m, d, state) -> None:
    d.qpos[:], d.qvel[:], d.ctrl[:], d.qacc_warmstart[:] = state


def forward_error(qacc, ds, what: str) -> float:
    """The largest |qacc - mj_forward's qacc| / max(1, |its qacc|) over the states of ds (each after mj_forward), or
    SystemExit above 1e-6."""
    error = max(np.abs(a - d.qacc).max() / max(1.0, np.abs(d.qacc).max()) for a, d in zip(qacc, ds))
    if error > 1e-6:
        raise SystemExit(f"{what}: forward dynamics differs from mj_forward's by {error:.3g} (relative)")
    return error


def discrete_inverse_error(m, ds, tau, what: str) -> float:
    """The largest |tau - mj_inverse's| / max(1, |its qfrc_constraint|) over the states of ds of a discrete model (each
    after mj_forward; mj_inverse on a copy, at its qacc), or SystemExit above 1e-9."""
    error = 0.0
    for t, d in zip(tau, ds):
        d2 = copy.copy(d)
        mujoco.mj_inverse(m, d2)
        error = max(error, np.abs(t - d2.qfrc_inverse - d2.qfrc_passive).max() / max(1.0, np.abs(d2.qfrc_constraint).max()))
    if error > 1e-9:
        raise SystemExit(f"{what}: the discrete inverse dynamics differs from mj_inverse's by {error:.3g} (relative)")
    return error


def check(model, m, ds, contacts, tau, qacc, warm) -> tuple[float, float]:
    """(forward's, inverse's) largest relative error against MuJoCo's over every state (qacc: forward_error; tau
    against mj_inverse's, relative to max(1, |qfrc_constraint|)), or SystemExit above 1e-6 and 1e-9."""
    inv = constraints.inverse_dynamics(model, [d.qpos for d in ds], [d.qvel for d in ds], qacc, contacts)
    fwd = constraints.forward_dynamics(model, [d.qpos for d in ds], [d.qvel for d in ds], tau, contacts, qacc_warmstart=warm)
    inverse = 0.0
    for k, d in enumerate(ds):
        d2 = mujoco.MjData(m)
        d2.qpos[:], d2.qvel[:], d2.qacc[:], d2.ctrl[:] = d.qpos, d.qvel, d.qacc, d.ctrl
        mujoco.mj_inverse(m, d2)
        error = np.abs(inv.tau[k] - d2.qfrc_inverse - d2.qfrc_passive).max() / max(1.0, np.abs(d2.qfrc_constraint).max())
        if error > 1e-9:
            raise SystemExit(f"state {k}: inverse dynamics differs from mj_inverse's")
        inverse = max(inverse, error)
    return forward_error(fwd.qacc, ds, "the batch"), inverse


def after_forward(m, trajectory) -> list:
    """[d] of each state of trajectory after mj_forward, its contacts made."""
    ds = []
    for state in trajectory:
        d = mujoco.MjData(m)
        load(m, d, state)
        mujoco.mj_forward(m, d)
        ds.append(d)
    return ds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="unitree_g1", help="a Menagerie robot with a scene and a keyframe")
    parser.add_argument("--n", type=int, default=256, help="states in the batch")
    parser.add_argument("--numpy", action="store_true", help="also time the NumPy reference backend (one call)")
    args = parser.parse_args()

    m = models.load(args.model, "scene")
    stand, trajectory = states(m, args.n)
    model = engine.from_mujoco(m)
    ds = after_forward(m, trajectory)                            # each state after mj_forward, with its contacts
    contacts = [collision.from_mujoco(m, d) for d in ds]
    Q, QD = np.array([d.qpos for d in ds]), np.array([d.qvel for d in ds])
    TAU, QACC = np.array([d.qfrc_passive + d.qfrc_actuator for d in ds]), np.array([d.qacc for d in ds])
    WARM = np.array([state[3] for state in trajectory])             # MuJoCo's qacc_warmstart, for both
    error = dict(zip(("forward", "inverse"), check(model, m, ds, contacts, TAU, QACC, WARM)))

    # the same robot under MuJoCo 4's discrete integrator: mj_forward's qacc the step map, its actuators' gains in the
    # step's metric M + h B + h^2 K at the keyframe's ctrl and act (every state's), on the same states
    md = models.load(args.model, "scene")
    md.opt.integrator = mujoco.mjtIntegrator.mjINT_DISCRETE
    discrete = engine.from_mujoco(md)
    dds = after_forward(md, trajectory)
    dstand = after_forward(md, [(stand.qpos, stand.qvel, stand.ctrl, stand.qacc_warmstart)])[0]
    ctrl, act = stand.ctrl.copy(), stand.act.copy()
    TAUd = np.array([d.qfrc_passive + d.qfrc_actuator for d in dds])
    dcontacts = [collision.from_mujoco(md, d) for d in dds]
    error["discrete"] = forward_error(constraints.forward_dynamics(discrete, Q, QD, TAUd, dcontacts, qacc_warmstart=WARM,
                                                                   ctrl=ctrl, act=act).qacc, dds, "the discrete batch")
    QACCd = np.array([d.qacc for d in dds])
    error["dinverse"] = discrete_inverse_error(
        md, dds, constraints.inverse_dynamics(discrete, Q, QD, QACCd, dcontacts, ctrl=ctrl, act=act).tau, "the batch")

    q, qd, qacc, warm = stand.qpos.copy(), stand.qvel.copy(), stand.qacc.copy(), stand.qacc_warmstart.copy()
    tau, c = stand.qfrc_passive + stand.qfrc_actuator, collision.from_mujoco(m, stand)
    taud, cd = dstand.qfrc_passive + dstand.qfrc_actuator, collision.from_mujoco(md, dstand)
    d, dd = (after_forward(x, [(stand.qpos, stand.qvel, stand.ctrl, stand.qacc_warmstart)])[0] for x in (m, md))
    d_inv = mujoco.MjData(m)
    d_inv.qpos[:], d_inv.qvel[:], d_inv.qacc[:] = q, qd, qacc
    dqacc, dd_inv = dstand.qacc.copy(), copy.copy(dstand)          # mj_inverse after mj_forward (its actuator_force)

    def mujoco_loop(m, d, f, accelerations=None):
        def run():
            for k, state in enumerate(trajectory):
                load(m, d, state)
                if accelerations is not None:
                    d.qacc[:] = accelerations[k]
                f(m, d)
        return run

    one = {"forward": (lambda: constraints.forward_dynamics(model, q, qd, tau, c, qacc_warmstart=warm),
                       lambda: mujoco.mj_forward(m, d)),
           "inverse": (lambda: constraints.inverse_dynamics(model, q, qd, qacc, c), lambda: mujoco.mj_inverse(m, d_inv)),
           "discrete": (lambda: constraints.forward_dynamics(discrete, q, qd, taud, cd, qacc_warmstart=warm, ctrl=ctrl,
                                                             act=act),
                        lambda: mujoco.mj_forward(md, dd)),
           "dinverse": (lambda: constraints.inverse_dynamics(discrete, q, qd, dqacc, cd, ctrl=ctrl, act=act),
                        lambda: mujoco.mj_inverse(md, dd_inv))}
    batch = {"forward": (lambda: constraints.forward_dynamics(model, Q, QD, TAU, contacts, qacc_warmstart=WARM),
                         mujoco_loop(m, d, mujoco.mj_forward)),
             "inverse": (lambda: constraints.inverse_dynamics(model, Q, QD, QACC, contacts),
                         mujoco_loop(m, d, mujoco.mj_inverse, QACC)),
             "discrete": (lambda: constraints.forward_dynamics(discrete, Q, QD, TAUd, dcontacts, qacc_warmstart=WARM,
                                                               ctrl=ctrl, act=act),
                          mujoco_loop(md, dd, mujoco.mj_forward)),
             "dinverse": (lambda: constraints.inverse_dynamics(discrete, Q, QD, QACCd, dcontacts, ctrl=ctrl, act=act),
                          mujoco_loop(md, dd_inv, mujoco.mj_inverse, QACCd))}
    # the standing state N times, the standing contact set for each (one ContactSet in a list of N): the work of
    # MuJoCo-1's call, batched; checked against mj_forward's and mj_inverse's at that state
    tile = lambda x: np.tile(x, (args.n, 1))                                          # noqa: E731
    Qs, QDs, TAUs, QACCs, WARMs, Cs = tile(q), tile(qd), tile(tau), tile(qacc), tile(warm), [c] * args.n
    standing = {"forward": lambda: constraints.forward_dynamics(model, Qs, QDs, TAUs, Cs, qacc_warmstart=WARMs),
                "inverse": lambda: constraints.inverse_dynamics(model, Qs, QDs, QACCs, Cs),
                "discrete": lambda: constraints.forward_dynamics(discrete, Qs, QDs, tile(taud), [cd] * args.n,
                                                                 qacc_warmstart=WARMs, ctrl=ctrl, act=act),
                "dinverse": lambda: constraints.inverse_dynamics(discrete, Qs, QDs, tile(dqacc), [cd] * args.n, ctrl=ctrl,
                                                                 act=act)}
    mujoco.mj_inverse(m, d_inv)
    if np.abs(standing["forward"]().qacc - qacc).max() > 1e-6 * max(1.0, np.abs(qacc).max()) or np.abs(
            standing["inverse"]().tau - d_inv.qfrc_inverse - d_inv.qfrc_passive).max() > 1e-9 * max(
            1.0, np.abs(d_inv.qfrc_constraint).max()):
        raise SystemExit("the standing batch differs from MuJoCo's call")
    forward_error(standing["discrete"]().qacc, [dstand] * args.n, "the discrete standing batch")
    forward_error([one["discrete"][0]().qacc], [dstand], "the discrete call")
    discrete_inverse_error(md, [dstand] * args.n, standing["dinverse"]().tau, "the standing batch")
    discrete_inverse_error(md, [dstand], [one["dinverse"][0]().tau], "the call")

    print(f"{args.model} in its scene at keyframe 0: nv {m.nv}, {stand.nefc} constraint rows ({stand.ne} equality, "
          f"{stand.nf} friction loss, {stand.nl} limit, {stand.nefc - stand.ne - stand.nf - stand.nl} contact from "
          f"{stand.ncon} contacts); mj_forward's solver took {stand.solver_niter[0]} iterations; batch: N = {args.n} "
          f"states near it, {np.mean([d.nefc for d in ds]):.0f} rows and {np.mean([d.solver_niter[0] for d in ds]):.1f} "
          "iterations on average")
    print(f"discrete: the same states under the discrete integrator (its actuators' gains in the metric at the keyframe's "
          f"ctrl): {dstand.solver_niter[0]} iterations at the keyframe, "
          f"{np.mean([d.solver_niter[0] for d in dds]):.1f} on average over the batch")
    print(f"cpu {platform.machine()}, {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.2f}; backend {engine.backend}"
          f", {native.threads()} threads for batches; mujoco {mujoco.__version__}, numpy {np.__version__}")
    print("microseconds per call (batched: per state); ratio = physai / MuJoCo's call; error: physai's largest over the "
          "batch from MuJoCo's (qacc, inverse's tau), relative")
    print(f"{'':9s} {'physai-1':>9s} {'MuJoCo-1':>9s} {'ratio':>6s} {'physai-N':>9s} {'MuJoCo-N':>9s} {'N/MuJoCo-1':>10s}"
          f" {'N/MuJoCo-N':>10s} {'Nstand':>7s} {'Nstand/MuJoCo-1':>15s} {'error':>8s}" +
          (f" {'numpy-1':>9s}" if args.numpy else ""))
    for name in one:
        p1, m1 = (best_time(f) * 1e6 for f in one[name])
        pn, mn = (best_time(f) * 1e6 / args.n for f in batch[name])
        ps = best_time(standing[name]) * 1e6 / args.n
        row = (f"{name:9s} {p1:9.1f} {m1:9.1f} {p1 / m1:6.2f} {pn:9.2f} {mn:9.1f} {pn / m1:10.3f} {pn / mn:10.3f} {ps:7.2f}"
               f" {ps / m1:15.3f} {error[name]:8.1e}")
        if args.numpy:
            previous = engine.set_backend("numpy")
            try:
                row += f" {best_time(one[name][0], 1.0) * 1e6:9.0f}"
            finally:
                engine.set_backend(previous)
        print(row)


if __name__ == "__main__":
    main()
