"""The full Unitree G1 stands, squats and stands up again, simulated by physai beside mj_step: every geom pair of the
robot collided (its meshes, cylinders and foot spheres), none left out (issue Q).

    uv run python examples/g1_squat.py                      # 3 s; prints the pelvis height every 0.25 s
    uv run python examples/g1_squat.py --depth 0.5 --every 0.1

The G1 in its Menagerie scene from its "stand" keyframe, under its own position servos (kp 500, critically damped):
their targets go from the keyframe's ctrl to a squat -- hips and ankles pitched by -depth, knees by 2 depth, so that
the shins and thighs fold symmetrically and the feet stay flat -- and back, linearly in joint space (PHASES). physai
detects the contacts itself (physai.collision: the feet on the floor and any pair of the body's meshes that touch)
and solves the constraint rows each step (integrators.simulate with constraints=True, the G1's implicitfast);
mj_step runs the same ctrl (mujoco.rollout). main(argv) returns (the lowest pelvis height of physai's run [m], the largest difference
in pelvis height from mj_step's [m], the largest difference in q over the run); tests/test_examples.py runs it.
"""

import argparse

import mujoco
import numpy as np
from mujoco import rollout as mj_rollout

from physai import collision, engine, integrators, models

#: the squat's joints and the multiple of depth each is turned by
SQUAT = {"hip_pitch": -1.0, "knee": 2.0, "ankle_pitch": -1.0}
#: the schedule: (time [s] the phase ends, the fraction of the squat reached then)
PHASES = [(0.25, 0.0), (1.25, 1.0), (1.75, 1.0), (2.75, 0.0), (3.0, 0.0)]
NAMES = {code: name for name, code in integrators.MUJOCO_INTEGRATOR.items()}


def schedule(m: mujoco.MjModel, stand: np.ndarray, depth: float) -> np.ndarray:
    """ctrl (steps, nu): the keyframe's ctrl plus the squat's offsets, scaled linearly from each phase's fraction to
    the next over the phase."""
    offset = np.zeros(m.nu)
    for a in range(m.nu):
        for joint, gain in SQUAT.items():
            if m.actuator(a).name.endswith(f"{joint}_joint"):
                offset[a] = gain * depth
    start, before, ctrl = 0.0, 0.0, []
    for end, fraction in PHASES:
        n = int(round((end - start) / m.opt.timestep))
        s = before + (fraction - before) * np.arange(1, n + 1) / n
        ctrl.append(stand + s[:, None] * offset)
        start, before = end, fraction
    return np.concatenate(ctrl)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=float, default=0.8, help="the hips' and ankles' pitch at the squat [rad]")
    parser.add_argument("--every", type=float, default=0.25, help="print the pelvis height every so many seconds")
    args = parser.parse_args(argv)
    m = models.load("unitree_g1", "scene")
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    model = engine.from_mujoco(m)
    if collision.has_unsupported_pairs(model):
        raise SystemExit("physai refuses some of the G1's geom pairs")
    ctrl = schedule(m, d.ctrl.copy(), args.depth)
    steps = len(ctrl)
    run = integrators.simulate(model, d.qpos.copy(), d.qvel.copy(), m.opt.timestep, steps,
                               NAMES[int(m.opt.integrator)], ctrl=ctrl, constraints=True, energy=False)
    full = mujoco.mjtState.mjSTATE_FULLPHYSICS
    start = np.empty(mujoco.mj_stateSize(m, full))
    mujoco.mj_getState(m, d, start, full)
    state, _ = mj_rollout.rollout(m, d, start, ctrl[None])               # mj_step under the same ctrl, in C
    Q = np.r_[[start[1:1 + m.nq]], state[0, :, 1:1 + m.nq]]               # FULLPHYSICS: time, qpos, qvel, ...
    every = max(1, int(round(args.every / m.opt.timestep)))
    print(f"{'t [s]':>6} {'pelvis z physai [m]':>20} {'pelvis z mj_step [m]':>21}")
    for k in range(0, steps + 1, every):
        print(f"{run.t[k]:>6.2f} {run.q[k, 2]:>20.6f} {Q[k, 2]:>21.6f}")
    dz, dq = float(np.abs(run.q[:, 2] - Q[:, 2]).max()), float(np.abs(run.q - Q).max())
    print(f"the pelvis went from {run.q[0, 2]:.3f} m down to {run.q[:, 2].min():.3f} m and back to {run.q[-1, 2]:.3f} m "
          f"(at most {run.ncon.max()} contacts); largest difference from mj_step over {steps} steps: pelvis height "
          f"{dz:.2e} m, q {dq:.2e}")
    return float(run.q[:, 2].min()), dz, dq


if __name__ == "__main__":
    main()
