"""Whole-body control quantities beside Pinocchio, per call and batched, from Python, in one run.

    uv run python benchmarks/bench_whole_body.py                     # the H1 (free base), N = 1000
    uv run python benchmarks/bench_whole_body.py --model franka_emika_panda --n 4000

Timed, microseconds, for each quantity at random states (engine.random_states, seed 0):
    frame Jacobian   jacobians.frame_jacobian (local_world_aligned) of the left ankle beside pin.computeFrameJacobian
                     (LOCAL_WORLD_ALIGNED; forward kinematics included, as physai's)
    CoM Jacobian     centroidal.com_jacobian beside pin.jacobianCenterOfMass
    A_g              centroidal.momentum_matrix beside pin.ccrba
    frame J_dot      jacobians.frame_jacobian_dot beside computeJointJacobiansTimeVariation and
                     getFrameJacobianTimeVariation
    A_g_dot          centroidal.momentum_matrix_dot beside pin.dccrba
    frame velocity   kinematics.frame_velocity beside pin.forwardKinematics + getFrameVelocity
    frame accel.     kinematics.frame_acceleration (classical, qdd = 1) beside pin.forwardKinematics +
                     getFrameClassicalAcceleration (all LOCAL_WORLD_ALIGNED)
(each one compiled call on the compiled backend; the frame's velocity and acceleration summed column by column of its
Jacobian and its rate in C++)
physai-1: one state per call; physai-N: one call on N states divided by N (PHYSAI_NUM_THREADS threads, default every
core); Pinocchio: one state per call (it has no batch of these). Ratios physai / Pinocchio (below 1: physai is faster).
Pinocchio reads the robot's MJCF (pin.buildModelFromMJCF: the free joint becomes its free flyer, whose velocity
convention differs; timings only). physai-1 and Pinocchio are timed back to back in each of 205 short rounds
(paired_times in bench_dynamics.py; a short round often runs undisturbed on a loaded machine): each one's time is its
best round, 1/Pin their ratio, and min and median the spread of that ratio over 5 repeats (41 rounds each); physai-N is
the best of several rounds.
"""

import argparse
import os
import platform

import numpy as np
import pinocchio as pin

from bench_dynamics import best_time, paired_times
from physai import centroidal, engine, jacobians, kinematics, models
from physai.engine import native

REPEATS = 5                                                     # paired_times' 205 rounds in 5 repeats of 41
FRAMES = {"unitree_h1": "left_ankle_link", "unitree_g1": "left_ankle_roll_link", "franka_emika_panda": "hand"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="unitree_h1", choices=sorted(FRAMES), help="a Menagerie robot")
    parser.add_argument("--n", type=int, default=1000, help="states in the batch")
    args = parser.parse_args()

    model = engine.from_mujoco(args.model)
    pm = pin.buildModelFromMJCF(str(models.model_path(args.model)))
    pd = pm.createData()
    frame = FRAMES[args.model]
    fid = pm.getFrameId(frame)
    Q, QD = engine.random_states(model, args.n, 0)
    q, qd = Q[0], QD[0]
    qp, vp = pin.neutral(pm), np.zeros(pm.nv)                    # Pinocchio's own state (its free-flyer layout)
    qp[:] = q if pm.nq == model.nq else qp
    vp[:] = qd

    def jdot():
        pin.computeJointJacobiansTimeVariation(pm, pd, qp, vp)
        return pin.getFrameJacobianTimeVariation(pm, pd, fid, pin.LOCAL_WORLD_ALIGNED)

    ap = np.ones(pm.nv)                                          # a joint acceleration for both

    def velocity():
        pin.forwardKinematics(pm, pd, qp, vp)
        return pin.getFrameVelocity(pm, pd, fid, pin.LOCAL_WORLD_ALIGNED)

    def acceleration():
        pin.forwardKinematics(pm, pd, qp, vp, ap)
        return pin.getFrameClassicalAcceleration(pm, pd, fid, pin.LOCAL_WORLD_ALIGNED)

    QDD = np.ones_like(QD)

    rows = [
        ("frame Jacobian", lambda: jacobians.frame_jacobian(model, q, frame), lambda: jacobians.frame_jacobian(model, Q, frame),
         lambda: pin.computeFrameJacobian(pm, pd, qp, fid, pin.LOCAL_WORLD_ALIGNED)),
        ("CoM Jacobian", lambda: centroidal.com_jacobian(model, q), lambda: centroidal.com_jacobian(model, Q),
         lambda: pin.jacobianCenterOfMass(pm, pd, qp)),
        ("A_g", lambda: centroidal.momentum_matrix(model, q), lambda: centroidal.momentum_matrix(model, Q),
         lambda: pin.ccrba(pm, pd, qp, vp)),
        ("frame J_dot", lambda: jacobians.frame_jacobian_dot(model, q, qd, frame),
         lambda: jacobians.frame_jacobian_dot(model, Q, QD, frame), jdot),
        ("A_g_dot", lambda: centroidal.momentum_matrix_dot(model, q, qd), lambda: centroidal.momentum_matrix_dot(model, Q, QD),
         lambda: pin.dccrba(pm, pd, qp, vp)),
        ("frame velocity", lambda: kinematics.frame_velocity(model, q, qd, frame),
         lambda: kinematics.frame_velocity(model, Q, QD, frame), velocity),
        ("frame accel.", lambda: kinematics.frame_acceleration(model, q, qd, QDD[0], frame),
         lambda: kinematics.frame_acceleration(model, Q, QD, QDD, frame), acceleration),
    ]
    print(f"{args.model}: nq {model.nq}, nv {model.nv}, frame {frame!r}; N = {args.n} random states")
    print(f"cpu {platform.machine()}, {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.2f}; backend {engine.backend}"
          f"{f', {native.threads()} threads for batches' if native.on else ''}; pinocchio {pin.__version__}, numpy {np.__version__}")
    print(f"microseconds per state; ratios physai / Pinocchio: 1/Pin of the best rounds (physai-1 and Pinocchio back to "
          f"back in each), min and median of {REPEATS} repeats' own 1/Pin")
    print(f"{'':15s} {'physai-1':>9s} {'physai-N':>9s} {'Pinocchio':>10s} {'1/Pin':>7s} {'min':>6s} {'median':>6s} "
          f"{'N/Pin':>7s}")
    for name, one, batch, peer in rows:
        t1, tp = paired_times(one, peer)
        p1, pn, pp = t1.min() * 1e6, best_time(batch, 0.5) * 1e6 / args.n, tp.min() * 1e6
        repeats = t1.reshape(REPEATS, -1).min(axis=1) / tp.reshape(REPEATS, -1).min(axis=1)
        print(f"{name:15s} {p1:9.2f} {pn:9.3f} {pp:10.2f} {p1 / pp:7.2f} {repeats.min():6.2f} {np.median(repeats):6.2f} "
              f"{pn / pp:7.3f}")

if __name__ == "__main__":
    main()
