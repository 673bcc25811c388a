"""LQR balance of the two-link arm upright: physai linearises one MuJoCo step, MuJoCo simulates the arm.

    uv run python examples/lqr_arm2.py                          # 3 s from 0.3 rad and -0.4 rad away from upright
    uv run python examples/lqr_arm2.py --seconds 5 --tilt 0.5

arm2 (lesson 7.1's planar arm, two motors of +-10 N m) stands straight up at q* = (pi/2, 0), where gravity exerts no
torque, so u* = 0; the equilibrium is unstable. derivatives.step_derivatives gives the step's (A, B) there (MuJoCo's
layout, implicitfast at the model's 2 ms), and the discrete Riccati equation (scipy.linalg.solve_discrete_are) gives
the gain K of u = -K (q - q*; qd). MuJoCo steps the arm with that u, clipped to the motors' range.

After the run, one batched call linearises the step at every state the arm passed through: how far A and B moved from
the design point says how far the controller relied on a linear model (A's largest change, B's relative to its largest
entry where no motor is at its limit: there its column is zero, as the clipped ctrl does not move). main(argv) returns
(the largest |q - q*| in the last 0.5 s [rad], the largest ctrl [N m], those two changes); tests/test_examples.py runs
it.
"""

import argparse

import mujoco
import numpy as np
from scipy.linalg import solve_discrete_are

from physai import derivatives, engine, models

UPRIGHT = np.array([np.pi / 2, 0.0])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="simulated time [s]")
    parser.add_argument("--tilt", type=float, default=0.3, help="the shoulder's start away from upright [rad]")
    args = parser.parse_args(argv)

    m = models.load("arm2")
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    model, h = engine.from_mujoco(m), m.opt.timestep
    nv = model.nv
    A, B = derivatives.step_derivatives(model, UPRIGHT, np.zeros(nv), h, "implicitfast", ctrl=np.zeros(model.nu))
    Q, R = np.diag([100.0, 100.0, 1.0, 1.0]), 0.1 * np.eye(model.nu)          # x = (q - q*; qd)
    P = solve_discrete_are(A, B, Q, R)
    K = np.linalg.solve(R + B.T @ P @ B, B.T @ P @ A)

    d = mujoco.MjData(m)
    d.qpos[:] = UPRIGHT + np.array([args.tilt, -1.3 * args.tilt])
    lo, hi = m.actuator_ctrlrange.T
    qs, qds, us = [], [], []
    for _ in range(int(round(args.seconds / h))):
        x = np.r_[engine.difference(model, UPRIGHT, d.qpos), d.qvel]
        d.ctrl[:] = np.clip(-K @ x, lo, hi)
        qs.append(d.qpos.copy()), qds.append(d.qvel.copy()), us.append(d.ctrl.copy())
        mujoco.mj_step(m, d)
    qs, qds, us = np.array(qs), np.array(qds), np.array(us)
    last = int(round(0.5 / h))
    settled = float(np.abs(qs[-last:] - UPRIGHT).max())
    largest_ctrl = float(np.abs(us).max())

    # every visited state's linearisation in one call (compiled, on threads), against the design point's; where a motor
    # is at its limit its column of B is zero (the clipped ctrl does not move), so B is compared where none is
    A_run, B_run = derivatives.step_derivatives(model, qs, qds, h, "implicitfast", ctrl=us)
    free = (np.abs(us) < hi).all(axis=1)
    moved_A = float(np.abs(A_run - A).max())
    moved_B = float(np.abs(B_run[free] - B).max() / np.abs(B).max())

    print(f"arm2 upright under LQR (MuJoCo, implicitfast, {h:g} s steps): from {args.tilt:g} rad away, {args.seconds:g} s")
    print(f"gain K = {np.array2string(K, precision=1, suppress_small=True)}")
    print(f"largest |q - q*| in the last 0.5 s: {settled:.1e} rad; largest ctrl {largest_ctrl:.2f} N m "
          f"({len(us) - int(free.sum())} steps with a motor at its limit)")
    print(f"along the {len(qs)} states (one batched call), an entry of A changed by up to {moved_A:.3f} and B by up to "
          f"{moved_B:.2f} of its largest entry (where no motor was at its limit)")
    return settled, largest_ctrl, moved_A, moved_B


if __name__ == "__main__":
    main()
