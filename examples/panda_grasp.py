"""The Panda grasps a box and lifts it, simulated by physai beside mj_step: its own collision meshes and fingertip pads
against a free box (issue Q).

    uv run python examples/panda_grasp.py                   # 2.4 s; prints the box's height every 0.2 s
    uv run python examples/panda_grasp.py --every 0.1

The Menagerie Panda's scene with a free 4 x 4 x 5 cm box of 0.1 kg on its floor, added by mujoco.MjSpec (the scene's
file compiled with one more body; the keyframe's qpos extended by the box's pose). The schedule is joint space: the
arm's position servos (the Panda's own actuators) go linearly between four poses -- home, 10 cm above the box, at the
box, 15 cm above the floor -- found once by damped least squares on physai's frame Jacobian (the attachment site
between the fingertips, its orientation held at home's); the gripper's actuator (255: open, 0: closed) closes once the
hand is at the box. physai detects every contact itself (the finger meshes and pads against the box are box-mesh
and box-box pairs; the box on the floor) and solves the constraint rows each step (integrators.simulate with
constraints=True); mj_step runs the same ctrl. main(argv) returns (the box's final height in physai's run [m], its
largest difference from mj_step's [m], the largest difference in q over the run); tests/test_examples.py runs it.
"""

import argparse

import mujoco
import numpy as np

from physai import engine, integrators, jacobians, kinematics, models, spatial

SITE = "attachment_site"
BOX = (0.02, 0.02, 0.025)                       # the box's half sizes [m]
BOX_AT = np.array([0.5, 0.0, BOX[2]])           # its centre, resting on the floor [m]
ARM = 7                                         # the arm's joints: qpos 0-6, dofs 0-6, actuators 0-6
OPEN, CLOSED = 255.0, 0.0                       # the gripper's ctrl
#: the schedule: (time [s] the phase ends, the hand's target above the box's centre [m] or None for home, gripper)
PHASES = [(0.6, 0.10, OPEN), (1.1, 0.008, OPEN), (1.5, 0.008, CLOSED), (2.4, 0.15, CLOSED)]


def scene() -> mujoco.MjModel:
    """The Panda's scene with the free box on the floor; keyframe 0 ("home") holds the box's pose too."""
    spec = mujoco.MjSpec.from_file(str(models.model_path("franka_emika_panda", "scene")))
    body = spec.worldbody.add_body(name="box", pos=BOX_AT)
    body.add_freejoint(name="box")
    body.add_geom(name="box", type=mujoco.mjtGeom.mjGEOM_BOX, size=BOX, mass=0.1, rgba=[0.8, 0.3, 0.3, 1])
    key = spec.keys[0]
    key.qpos = np.r_[key.qpos, BOX_AT, 1.0, 0.0, 0.0, 0.0]
    return spec.compile()


def reach(model: engine.Model, q: np.ndarray, p_target: np.ndarray, R_target: np.ndarray, damping: float = 1e-3):
    """The arm's joint angles (7,) putting SITE at p_target [m] with orientation R_target, by damped least squares
    from q (nq,) on the arm's columns of physai's frame Jacobian (the box's joint held)."""
    q = q.copy()
    for _ in range(200):
        (p,), (R,) = kinematics.frame_poses(model, q, [SITE])
        e = np.r_[p_target - p, spatial.so3_log(R_target @ R.T)]
        if np.abs(e).max() < 1e-10:
            break
        J = jacobians.frame_jacobian(model, q, SITE)[:, :ARM]
        q[:ARM] += J.T @ np.linalg.solve(J @ J.T + damping**2 * np.eye(6), e)     # v = J^T (J J^T + d^2 1)^-1 e
    return q[:ARM]


def schedule(m: mujoco.MjModel, model: engine.Model, home_q: np.ndarray, home_ctrl: np.ndarray) -> np.ndarray:
    """ctrl (steps, nu): the arm's servo targets moved linearly from each phase's pose to the next over the phase,
    the gripper's set at each phase's start."""
    (_,), (R_home,) = kinematics.frame_poses(model, home_q, [SITE])
    poses, start, ctrl = [home_ctrl[:ARM]], 0.0, []
    for end, height, gripper in PHASES:
        poses.append(reach(model, home_q, BOX_AT + [0.0, 0.0, height], R_home))
        n = int(round((end - start) / m.opt.timestep))
        s = (np.arange(1, n + 1) / n)[:, None]
        arm = (1 - s) * poses[-2] + s * poses[-1]                 # linear in joint space over the phase
        ctrl.append(np.c_[arm, np.full(n, gripper)])
        start = end
    return np.concatenate(ctrl)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", type=float, default=0.2, help="print the box's height every so many seconds")
    args = parser.parse_args(argv)
    m = scene()
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    model = engine.from_mujoco(m)
    ctrl = schedule(m, model, d.qpos.copy(), d.ctrl.copy())
    steps = len(ctrl)
    integrator = {code: name for name, code in integrators.MUJOCO_INTEGRATOR.items()}[int(m.opt.integrator)]
    run = integrators.simulate(model, d.qpos.copy(), d.qvel.copy(), m.opt.timestep, steps, integrator, ctrl=ctrl,
                               constraints=True, energy=False)
    Q = [d.qpos.copy()]
    for k in range(steps):
        d.ctrl[:] = ctrl[k]
        mujoco.mj_step(m, d)
        Q.append(d.qpos.copy())
    Q = np.array(Q)
    z = m.jnt_qposadr[m.joint("box").id] + 2                       # the box's height in q
    every = max(1, int(round(args.every / m.opt.timestep)))
    print(f"{'t [s]':>6} {'box z physai [m]':>17} {'box z mj_step [m]':>18} {'contacts':>8}")
    for k in range(0, steps + 1, every):
        print(f"{run.t[k]:>6.2f} {run.q[k, z]:>17.6f} {Q[k, z]:>18.6f} {run.ncon[max(k - 1, 0)]:>8}")
    dz, dq = float(np.abs(run.q[:, z] - Q[:, z]).max()), float(np.abs(run.q - Q).max())
    print(f"the box lifted from {BOX_AT[2]:.3f} m to {run.q[-1, z]:.4f} m; largest difference from mj_step over "
          f"{steps} steps: box height {dz:.2e} m, q {dq:.2e}")
    return float(run.q[-1, z]), dz, dq


if __name__ == "__main__":
    main()
