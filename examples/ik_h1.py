"""Inverse kinematics of the Unitree H1: its feet (position and orientation) and wrists (position: the arms have four
joints) brought to targets by damped least squares, joint ranges respected (issue L, whole-body control).

    uv run python examples/ik_h1.py                 # targets: the frames of a random pose within the joint ranges
    uv run python examples/ik_h1.py --seed 4 --damping 1e-3

Each step stacks the frames' world-aligned Jacobians (jacobians.frame_jacobian, rows (linear; angular); the wrists'
linear rows only) and their errors (position p_target - p; orientation so3_log(R_target R^T), in world axes), takes
the damped least-squares step v = J^T (J J^T + damping^2 1)^-1 e, moves q by it (engine.integrate: the base's
quaternion stays a unit one) and clamps the limited joints into their ranges. The targets are the frames of a random
pose (the base moved 0.1 m and turned 0.2 rad, every joint up to 0.6 rad from rest, clamped into its range), so they
can be reached; the start is the rest pose. A step moves no coordinate more than 0.2 rad or m. Damped least squares
finds a local solution: from the rest pose some targets end where a joint held at its range blocks the way (--seed 0
does, the default 2 does not). main(argv) returns (iterations, largest position error [m], largest orientation error
[rad], the largest range violation [rad]); tests/test_examples.py runs it.
"""

import argparse

import numpy as np

from physai import engine, jacobians, kinematics, spatial

FEET = ["BODY_25:LAnkle", "BODY_25:RAnkle"]
WRISTS = ["BODY_25:LWrist", "BODY_25:RWrist"]


#: the rows of each frame's task: 6 (position and orientation) or 3 (position)
ROWS = {**{f: 6 for f in FEET}, **{f: 3 for f in WRISTS}}


def errors(model: engine.Model, q: np.ndarray, frames: list, targets) -> np.ndarray:
    """The stacked errors of the frames at q: p_target - p, then so3_log(R_target R^T) for a 6-row task."""
    pos, rot = kinematics.frame_poses(model, q, frames)
    return np.concatenate([np.r_[p_t - p, spatial.so3_log(R_t @ R.T)][:ROWS[f]]
                           for f, p, R, p_t, R_t in zip(frames, pos, rot, *targets)])


def clamp(model: engine.Model, q: np.ndarray) -> np.ndarray:
    """q with every limited hinge or slide joint moved into its range."""
    q = q.copy()
    for j in np.flatnonzero(model.jnt_limited).tolist():
        joint = model.joint(j)                                  # its slice of q: jnt_qposadr, not j
        if joint.type in ("hinge", "slide"):
            q[joint.qpos] = np.clip(q[joint.qpos], *model.jnt_range[j])
    return q


def solve(model: engine.Model, frames: list, targets, q: np.ndarray, damping: float = 1e-4, tolerance: float = 1e-9,
          iterations: int = 500, max_step: float = 0.2) -> tuple[np.ndarray, int]:
    """(q, iterations) once the largest error is below tolerance, or after `iterations` steps of at most max_step
    [rad | m] per coordinate."""
    for it in range(iterations):
        e = errors(model, q, frames, targets)
        if np.abs(e).max() < tolerance:
            return q, it
        J = np.concatenate([jacobians.frame_jacobian(model, q, f)[:ROWS[f]] for f in frames])
        v = J.T @ np.linalg.solve(J @ J.T + damping**2 * np.eye(len(J)), e)
        step = min(1.0, max_step / np.abs(v).max())                      # no joint turns more than max_step at once
        q = clamp(model, engine.integrate(model, q, v, step))
    return q, iterations


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=2, help="the random target pose")
    parser.add_argument("--damping", type=float, default=1e-4, help="damped least squares' damping")
    args = parser.parse_args(argv)

    model = engine.from_mujoco("unitree_h1")
    frames = FEET + WRISTS
    rng = np.random.default_rng(args.seed)                     # the target pose: joints within 0.6 rad of rest, in range
    target_q = clamp(model, engine.integrate(model, model.qpos0, np.r_[0.1, -0.05, 0.02, 0, 0, 0.2,
                                                                         rng.uniform(-0.6, 0.6, model.nv - 6)], 1.0))
    targets = kinematics.frame_poses(model, target_q, frames)
    q, iterations = solve(model, frames, targets, model.qpos0, args.damping)
    e = errors(model, q, frames, targets)
    position = np.concatenate([e[a:a + 3] for a in np.cumsum([0] + [ROWS[f] for f in frames])[:-1]])
    orientation = np.concatenate([e[a + 3:a + 6] for a, f in zip(np.cumsum([0] + [ROWS[f] for f in frames]), frames) if ROWS[f] == 6])
    limited = np.flatnonzero(model.jnt_limited).tolist()
    outside = max([0.0] + [max(model.jnt_range[j][0] - q[model.jnt_qposadr[j]], q[model.jnt_qposadr[j]] - model.jnt_range[j][1], 0.0)
                           for j in limited])
    reached = np.abs(e).max() < 1e-9
    print(f"H1: {len(frames)} frames ({', '.join(frames)}) {'reached in' if reached else 'not reached after'} {iterations} "
          f"damped least-squares steps (damping {args.damping:g})")
    print(f"largest position error {np.abs(position).max():.1e} m, feet orientation error {np.abs(orientation).max():.1e} "
          f"rad; {len(limited)} limited joints, largest range violation {outside:.1e} rad")
    return iterations, float(np.abs(position).max()), float(np.abs(orientation).max()), outside


if __name__ == "__main__":
    main()
