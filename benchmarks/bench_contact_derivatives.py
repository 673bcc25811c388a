"""The constrained step's derivatives (issue U): physai's step_derivatives(..., constraints=True) beside MuJoCo's
mjd_transitionFD, one state per call, in one run.

    uv run python benchmarks/bench_contact_derivatives.py [--numpy-step]

--numpy-step: derivatives.COMPILED_STEP False, the NumPy text after the rows' derivatives instead of the compiled step
(_compiled_constrained), for the off/on pairs of benchmarks/README.md.

States: the G1 standing in its scene (keyframe, 20 steps of mj_step) and dm_control's humanoid after 100 steps of
mj_step from its start state (task_models.start), and the Panda in its scene (its fingers' joint equality, 20 steps
from its home keyframe with the fingers at 0.03 m), each with its own integrator, the solver at tolerance 1e-15.
Timed: physai's call (where every row's q-derivative is analytic -- plane-sphere/capsule/box contacts,
sphere/capsule pairs, hinge limits, joint equalities, friction loss: the three states here -- the whole state in one
compiled call, derivatives._one_call; elsewhere the smooth forces and the solve in one compiled call, the other rows
rebuilt at 4 points along each dof that moves one of them, their contacts and rows each in one compiled call, the step
in another; along the other dofs, those the proof does not clear detected at +-2e-6 for a contact appearing, proof and
detection in one compiled call), MuJoCo's mjd_transitionFD with forward differences
(eps 1e-6) and centred ones; ratio = physai / MuJoCo's (below 1: physai is faster; issue U's target is 0.1 against the
forward differences). Also printed: the largest
difference of A and B from Richardson-extrapolated centred mjd_transitionFD (eps 2e-6, 1e-6), relative to the largest
entry. Best of 9 rounds (bench_dynamics.best_time); on a shared machine expect +-20% between runs. Last column: physai
and the forward differences timed back to back in each of 205 short rounds (bench_dynamics.paired_times: a short round
often runs undisturbed on a loaded machine), the ratio of their best rounds; text: the largest difference of A and B
(each relative to its largest entry) from the NumPy text's (COMPILED_STEP False; 0 with --numpy-step). physai's solve starts from the
state's d.qacc_warmstart (step_derivatives' qacc_warmstart), the start mjd_transitionFD gives each of its steps (it
restores d.qacc_warmstart before each); cold: physai's time without it (the unconstrained accelerations' start), over
the forward differences'.

Then the compiled detection alone at the call's checked points (those _Constraints._moved_contacts detects without
the proof, recorded on the NumPy text's path (_checks_compiled off: the call itself proves and detects them in one
compiled call, _checked_still): 4 along each differenced dof, 2 along each other one; detected: how many it detects
with it, the others' dofs proven free of a switching contact by _Constraints._proven_still), all of them in one
native.detect_arrays
call: every candidate pair at every point, each point's subset (_Constraints._detect_subset: the pairs its dof moves),
and no pair (the geoms' poses and the broad phase alone), every geom posed and the whole broad phase run; then the
subset and no pair with along=(q, each point's dof: what _moved_contacts calls), posing only the bodies a point's
dof moves and testing the subset's pairs without the sweep; each timed by best_time (100 short rounds) 5 times in turn,
the best; pairs: the subset's mean pairs a point, of all.

Batched (issue U's target: 0.03 of the forward differences a state): 16 states in one call, the state with its qd moved
by 1e-3 normal noise (seed 0), their states on the compiled engine's threads (derivatives._one_call), wall time and CPU
time (process time over the threads: 20 calls, best of 5) a state against MuJoCo's forward differences a state (one
thread; MuJoCo has no batched mjd_transitionFD); alone: the batch's A against each state's own call.
"""

import os
import sys
import time
import timeit
from pathlib import Path

import mujoco
import numpy as np
from bench_dynamics import best_time, paired_times

from physai import derivatives, engine, models
from physai.engine import native

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "experiments" / "task-models"))
import task_models  # noqa: E402  (the survey's loading and start state)


def g1():
    m = models.load("unitree_g1", "scene")
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    return m, d, 20


def panda():
    """The Panda in its scene at its home keyframe, fingers at 0.03 m (the keyframe's 0.04 is their limit's switch),
    the gripper's ctrl 190 holding them there: its one row the fingers' joint equality."""
    m = models.load("franka_emika_panda", "scene")
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    d.qpos[7:9], d.ctrl[7] = 0.03, 190.0
    return m, d, 20


def humanoid():
    m = mujoco.MjModel.from_xml_path(str(task_models.task_files()["dm_control/humanoid"]))
    d = mujoco.MjData(m)
    q0, qd0, ctrl = task_models.start(m)
    d.qpos[:], d.qvel[:], d.ctrl[:] = q0, qd0, ctrl
    return m, d, 100


def transition_fd(m, d, eps: float, centred: bool):
    n = 2 * m.nv + m.na
    A, B = np.zeros((n, n)), np.zeros((n, m.nu))
    mujoco.mjd_transitionFD(m, d, eps, centred, A, B, None, None)
    return A, B


def state(make) -> tuple:
    """(m, d) at the benchmark's state: make's model stepped its steps at tolerance 1e-15, mj_forward at the end."""
    m, d, steps = make()
    m.opt.tolerance, m.opt.iterations, m.opt.ls_iterations = 1e-15, 1000, 100
    for _ in range(steps):
        mujoco.mj_step(m, d)
    mujoco.mj_forward(m, d)
    return m, d


def row(name: str, make) -> str:
    m, d = state(make)
    model = engine.from_mujoco(m)
    q, qd, ctrl, warm = d.qpos.copy(), d.qvel.copy(), d.ctrl.copy() if m.nu else None, d.qacc_warmstart.copy()
    A, B = derivatives.step_derivatives(model, q, qd, ctrl=ctrl, constraints=True, qacc_warmstart=warm)
    fine, coarse = transition_fd(m, d, 1e-6, True), transition_fd(m, d, 2e-6, True)
    ref = [(4 * fine[k] - coarse[k]) / 3 for k in (0, 1)]
    err = [np.abs(X - R).max() / np.abs(R).max() for X, R in zip((A, B), ref)]
    text = against_text(model, q, qd, ctrl, warm, A, B)
    call = lambda: derivatives.step_derivatives(model, q, qd, ctrl=ctrl, constraints=True, qacc_warmstart=warm)  # noqa: E731
    physai = best_time(call, budget=2.0)
    cold = best_time(lambda: derivatives.step_derivatives(model, q, qd, ctrl=ctrl, constraints=True), budget=2.0)
    forward = best_time(lambda: transition_fd(m, d, 1e-6, False), budget=1.0)
    centred = best_time(lambda: transition_fd(m, d, 1e-6, True), budget=1.0)
    ours, theirs = paired_times(call, lambda: transition_fd(m, d, 1e-6, False))
    return (f"{name:12s} {m.nv:3d} {d.ncon:4d} {d.nefc:5d} {1e3 * physai:9.2f} {1e3 * forward:9.2f} {1e3 * centred:9.2f} "
            f"{physai / forward:8.2f} {physai / centred:8.2f} {cold / forward:6.2f}   {err[0]:.1e} {err[1]:.1e} "
            f"{ours.min() / theirs.min():8.2f}  {text:.1e}")


def against_text(model, q, qd, ctrl, warm, A, B) -> float:
    """The largest difference of (A, B) from the NumPy text's (COMPILED_STEP False), each relative to its largest entry."""
    compiled, derivatives.COMPILED_STEP = derivatives.COMPILED_STEP, False
    try:
        At, Bt = derivatives.step_derivatives(model, q, qd, ctrl=ctrl, constraints=True, qacc_warmstart=warm)
    finally:
        derivatives.COMPILED_STEP = compiled
    return max(np.abs(X - T).max() / np.abs(T).max() for X, T in zip((A, B), (At, Bt)))


def batched(name: str, make, n: int = 16) -> str:
    """n states in one step_derivatives call (the state, its qd moved by 1e-3 normal noise, seed 0): milliseconds a state
    (wall, and the process's CPU time over both threads), against mjd_transitionFD's forward differences at the state
    (one thread: MuJoCo has no batched call), and the batch's largest difference from the same states one by one; each
    state's solve from d.qacc_warmstart (cold: the batch's wall time without it, over the forward differences')."""
    m, d = state(make)
    model = engine.from_mujoco(m)
    rng = np.random.default_rng(0)
    Q, QD = np.repeat(d.qpos[None], n, axis=0), d.qvel + rng.normal(size=(n, m.nv)) * 1e-3
    C = np.repeat(d.ctrl[None], n, axis=0) if m.nu else None
    W = np.repeat(d.qacc_warmstart[None], n, axis=0)
    A, _ = derivatives.step_derivatives(model, Q, QD, ctrl=C, constraints=True, qacc_warmstart=W)
    alone = max(np.abs(A[k] - derivatives.step_derivatives(model, Q[k], QD[k], ctrl=None if C is None else C[k],
                                                           constraints=True, qacc_warmstart=W[k])[0]).max()
                / np.abs(A[k]).max() for k in range(n))
    call = lambda: derivatives.step_derivatives(model, Q, QD, ctrl=C, constraints=True, qacc_warmstart=W)  # noqa: E731
    wall = best_time(call, budget=2.0) / n
    cpu = min(timeit.Timer(call, timer=time.process_time).repeat(5, 20)) / (20 * n)
    cold = best_time(lambda: derivatives.step_derivatives(model, Q, QD, ctrl=C, constraints=True), budget=2.0) / n
    forward = best_time(lambda: transition_fd(m, d, 1e-6, False), budget=1.0)
    return (f"{name:12s} {n:6d} {native.threads():7d} {1e3 * wall:9.3f} {1e3 * cpu:9.3f} {1e3 * forward:9.2f} "
            f"{wall / forward:8.3f} {cpu / forward:8.3f} {cold / forward:6.3f}   {alone:.1e}")


def detection(name: str, make) -> str:
    """The compiled detection at one call's checked points (every pair, the subset, none) and the subset's pairs."""
    m, d = state(make)
    model = engine.from_mujoco(m)
    seen = []
    held = derivatives._Constraints._moved_contacts

    def record(self, Q, dofs):                     # the call's points, their dofs and state, the subset collided
        seen.append((Q, (self.base, dofs), self._detect_subset(dofs)[0]))
        return held(self, Q, dofs)

    prove, compiled = derivatives._Constraints._proven_still, derivatives._Constraints._checks_compiled
    one, derivatives.ONE_CALL = derivatives.ONE_CALL, False            # the calls, not the one call
    derivatives._Constraints._moved_contacts = record
    derivatives._Constraints._checks_compiled = lambda self: False     # the NumPy text's seams: _moved_contacts called
    try:                                           # the points detected with the proof, then every checked one
        derivatives.step_derivatives(model, d.qpos, d.qvel, ctrl=d.ctrl if m.nu else None, constraints=True)
        derivatives._Constraints._proven_still = lambda self, still, poses: np.zeros(len(still), bool)
        derivatives.step_derivatives(model, d.qpos, d.qvel, ctrl=d.ctrl if m.nu else None, constraints=True)
    finally:
        derivatives._Constraints._moved_contacts, derivatives._Constraints._proven_still = held, prove
        derivatives._Constraints._checks_compiled, derivatives.ONE_CALL = compiled, one
    detected = len(seen[0][0]) if len(seen) == 2 else 0
    (Q, along, subset) = seen[-1]
    calls = [(np.ones_like(subset), None), (subset, None), (np.zeros_like(subset), None), (subset, along),
             (np.zeros_like(subset), along)]
    times = np.min([[best_time(lambda s=s, a=a: native.detect_arrays(model, Q, s, a), budget=0.4, rounds=100)
                     for s, a in calls] for _ in range(5)], axis=0)   # in turn, 5 times: a load burst falls on one
    return (f"{name:12s} {len(Q):6d} {detected:8d} " + " ".join(f"{1e3 * t:9.3f}" for t in times) +
            f" {subset.sum(axis=1).mean():7.0f} of {subset.shape[1]}")


def main() -> None:
    if set(sys.argv[1:]) - {"--numpy-step"}:
        sys.exit(f"unknown arguments {sys.argv[1:]}: the only option is --numpy-step")
    derivatives.COMPILED_STEP = "--numpy-step" not in sys.argv[1:]
    print(f"{os.cpu_count()} cpus, load average {os.getloadavg()[0]:.2f}; physai backend {engine.backend}; mujoco {mujoco.__version__}; "
          f"COMPILED_STEP {derivatives.COMPILED_STEP}")
    print("milliseconds per state; ratio = physai / mjd_transitionFD (forward, centred); physai's solve from d.qacc_warmstart, "
          "cold: without it, / forward; err: A, B against extrapolated mjd_transitionFD; paired: physai / forward, best of "
          "205 back-to-back rounds; text: A, B against the NumPy text")
    print("model         nv ncon  nefc    physai   mj fwd  mj cent   /fwd   /cent  cold   err A   err B   paired    text")
    for name, make in (("G1 standing", g1), ("dm humanoid", humanoid), ("Panda", panda)):
        print(row(name, make))
    print("\nbatched: n states in one call (their states on the compiled engine's threads), ms a state: wall, and CPU "
          "time over the threads; ratio = physai / mjd_transitionFD's forward differences (one thread) a state; cold: the "
          "wall ratio without the warm start; alone: largest difference of A from the states one by one (relative)")
    print("model             n threads      wall       cpu   mj fwd    /fwd  cpu/fwd   cold   alone")
    for name, make in (("G1 standing", g1), ("dm humanoid", humanoid)):
        print(batched(name, make))
    print("\ncompiled detection at the checked points (ms per call, all points in one call), pairs a point of all; "
          "detected: those it detects with the proof (the others' dofs proven)")
    print("                                        every geom posed, the sweep   along: moved bodies, no sweep")
    print("model        points detected     every    subset   no pair    subset   no pair   pairs")
    for name, make in (("G1 standing", g1), ("dm humanoid", humanoid)):
        print(detection(name, make))
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
