"""Operational-space control of the Panda's hand: its attachment site follows a horizontal circle, holding its
orientation, while MuJoCo simulates the arm (issue L, whole-body control).

    uv run python examples/osc_panda.py                      # 2 s, a circle of 5 cm radius in 1 s
    uv run python examples/osc_panda.py --seconds 4 --radius 0.1

Each control step reads the state, computes with physai the site's pose (kinematics.frame_poses), its Jacobian and
its rate (jacobians.frame_jacobian, frame_jacobian_dot; rows (linear; angular) in world axes), the task inertia Lam
and bias mu (task_space), and applies
    tau = J^T (Lam (xdd_ref + Kp e + Kd (xd_ref - J qd)) + mu) + (1 - J^T Jbar^T) (-Kq (q - q_home) - Dq qd)
with e = (p_ref - p; so3_log(R_ref R^T)): the task's own dynamics decoupled, a posture held in its null space. MuJoCo
steps the model (implicitfast, 2 ms) with the actuators off and tau as qfrc_applied; MuJoCo's own joint damping and
the fingers' equality are forces the controller does not cancel. main(argv) returns the largest position error [m]
and orientation error [rad] after the first 0.5 s; tests/test_examples.py runs it.
"""

import argparse

import mujoco
import numpy as np

from physai import engine, jacobians, kinematics, models, spatial, task_space

SITE = "attachment_site"


def control(model, q, qd, ref, home, gains) -> np.ndarray:
    """tau (nv,) of the operational-space law above for the reference ref = (p, R, pdot, pddot)."""
    kp, kd, kq, dq = gains
    p_ref, R_ref, pd_ref, pdd_ref = ref
    (p,), (R,) = kinematics.frame_poses(model, q, [SITE])
    J = jacobians.frame_jacobian(model, q, SITE)
    J_dot = jacobians.frame_jacobian_dot(model, q, qd, SITE)
    e = np.r_[p_ref - p, spatial.so3_log(R_ref @ R.T)]
    e_dot = np.r_[pd_ref, 0, 0, 0] - J @ qd
    xdd = np.r_[pdd_ref, 0, 0, 0] + kp * e + kd * e_dot
    Lam, mu = task_space.inertia(model, q, J), task_space.bias(model, q, qd, J, J_dot)
    Jbar = task_space.pseudo_inverse(model, q, J)
    posture = -kq * engine.difference(model, home, q) - dq * qd
    return J.T @ (Lam @ xdd + mu) + (np.eye(model.nv) - J.T @ Jbar.T) @ posture


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="simulated time [s]")
    parser.add_argument("--radius", type=float, default=0.05, help="the circle's radius [m]")
    parser.add_argument("--period", type=float, default=1.0, help="one turn [s]")
    args = parser.parse_args(argv)

    m = models.load("franka_emika_panda")
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_ACTUATION
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    m.opt.timestep = 0.002
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    mujoco.mj_forward(m, d)
    model = engine.from_mujoco(m)
    home = d.qpos.copy()
    (centre,), (R_ref,) = kinematics.frame_poses(model, home, [SITE])
    centre = centre - np.r_[args.radius, 0, 0]                  # the circle starts where the hand is
    w = 2 * np.pi / args.period
    gains = (400.0, 40.0, 10.0, 2.0)
    worst_p = worst_r = 0.0
    for _ in range(int(round(args.seconds / m.opt.timestep))):
        t = d.time
        ref = (centre + args.radius * np.r_[np.cos(w * t), np.sin(w * t), 0],
               R_ref, args.radius * w * np.r_[-np.sin(w * t), np.cos(w * t), 0],
               -args.radius * w * w * np.r_[np.cos(w * t), np.sin(w * t), 0])
        d.qfrc_applied[:] = control(model, d.qpos.copy(), d.qvel.copy(), ref, home, gains)
        mujoco.mj_step(m, d)
        if d.time > 0.5:                                        # after the start-up transient
            (p,), (R,) = kinematics.frame_poses(model, d.qpos, [SITE])
            t = d.time
            p_ref = centre + args.radius * np.r_[np.cos(w * t), np.sin(w * t), 0]
            worst_p = max(worst_p, float(np.abs(p - p_ref).max()))
            worst_r = max(worst_r, float(np.abs(spatial.so3_log(R_ref @ R.T)).max()))
    print(f"Panda, operational-space control of its {SITE}: a circle of {args.radius:g} m radius every {args.period:g} s "
          f"for {args.seconds:g} s (MuJoCo, implicitfast, {m.opt.timestep:g} s steps)")
    print(f"after 0.5 s: largest position error {worst_p:.1e} m, orientation error {worst_r:.1e} rad")
    return worst_p, worst_r


if __name__ == "__main__":
    main()
