"""The G1 pushed while standing, balanced by LQR from its linearisation through contact; MuJoCo simulates.

    uv run python examples/lqr_g1_contact.py                     # a 0.4 m/s push, 2 s
    uv run python examples/lqr_g1_contact.py --push 0.3 --seconds 3

The G1 (../shared/menagerie's scene: its floor and feet) settles for 2 s under its keyframe's controls u* (position
servos); that state x* = (q*, 0) is the design point. derivatives.step_derivatives(..., constraints=True) gives the
step's (A, B) there through the solver's optimum: its 8 foot contacts' forces move with the state (MuJoCo's soft
contacts, implicitfast at 2 ms). The discrete Riccati equation (scipy.linalg.solve_discrete_are; Q = I, R = 100 I)
gives K of u = u* - K (q - q*; qd). The base is then pushed (its velocity set to (p, p/2, 0) m/s) and MuJoCo steps the
robot twice: under u* alone (the servos' own stiffness) and under the LQR controls, clipped to the actuators' range.
main(argv) returns, for each run, the largest deviation |q - q*| over the last 0.2 s [rad | m] and the base's final
height [m]; tests/test_examples.py runs it.
"""

import argparse

import mujoco
import numpy as np
from scipy.linalg import solve_discrete_are

from physai import derivatives, engine, models


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--push", type=float, default=0.4, help="the base's forward speed given by the push [m/s]")
    parser.add_argument("--seconds", type=float, default=2.0, help="simulated time after the push [s]")
    args = parser.parse_args(argv)

    m = models.load("unitree_g1", "scene")
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    u_star = d.ctrl.copy()
    for _ in range(1000):                              # settle on the feet: the design point
        mujoco.mj_step(m, d)
    q_star, ncon = d.qpos.copy(), d.ncon
    model, nv, nu = engine.from_mujoco(m), m.nv, m.nu
    A, B = derivatives.step_derivatives(model, q_star, np.zeros(nv), ctrl=u_star, constraints=True)
    Q, R = np.eye(2 * nv), 100.0 * np.eye(nu)          # x = (q - q*; qd)
    P = solve_discrete_are(A, B, Q, R)
    K = np.linalg.solve(R + B.T @ P @ B, B.T @ P @ A)

    lo, hi = m.actuator_ctrlrange.T
    last = int(round(0.2 / m.opt.timestep))
    results = {}
    for name, gain in (("servos alone", None), ("LQR", K)):
        mujoco.mj_resetData(m, d)                      # each run from the same data: no warm start carried over
        d.qpos[:], d.qvel[:] = q_star, 0.0
        d.qvel[:3] = [args.push, 0.5 * args.push, 0.0]
        deviation = []
        for _ in range(int(round(args.seconds / m.opt.timestep))):
            x = np.r_[engine.difference(model, q_star, d.qpos), d.qvel]
            d.ctrl[:] = u_star if gain is None else np.clip(u_star - gain @ x, lo, hi)
            mujoco.mj_step(m, d)
            deviation.append(np.abs(engine.difference(model, q_star, d.qpos)).max())
        results[name] = (float(max(deviation[-last:])), float(d.qpos[2]))

    print(f"the G1 pushed to {args.push:g} m/s while standing (MuJoCo, {m.opt.timestep:g} s steps, {args.seconds:g} s); "
          f"A, B through its {ncon} contacts at the design point")
    print(f"closed loop: the largest |eigenvalue| of A - B K is {np.abs(np.linalg.eigvals(A - B @ K)).max():.9f}")
    for name, (dev, z) in results.items():
        print(f"{name:13s} largest |q - q*| over the last 0.2 s {dev:.3f}; base height {z:.3f} m "
              f"(standing: {q_star[2]:.3f} m)")
    return results["servos alone"], results["LQR"], float(q_star[2])


if __name__ == "__main__":
    main()
