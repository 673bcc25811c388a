"""The whole-body quantities beside MuJoCo's own, on Menagerie robots at random states (the whole-body accuracy table).

    uv run python benchmarks/accuracy_whole_body.py                 # Panda, H1, G1; 20 states each
    uv run python benchmarks/accuracy_whole_body.py --models unitree_h1 --n 50

For every site and body of the robot (and the whole body), the largest error over the states, relative to the
quantity's scale (|physai - MuJoCo| / max(1, |MuJoCo|), the largest entry), printed as a bound (the next power of ten):
    frame poses       kinematics.frame_poses                          site_xpos, site_xmat; xpos, xmat
    frame Jacobian    jacobians.frame_jacobian (local_world_aligned)  mj_jacSite; mj_jacBody
    J_dot             jacobians.frame_jacobian_dot                    mj_jacDot at the frame's origin
    frame velocity    kinematics.frame_velocity ("local")             mj_objectVelocity (local; a body as mjOBJ_XBODY),
                                                                      rows swapped
    CoM, CoM Jacobian centroidal.com, com_jacobian                    subtree_com[0], mj_jacSubtreeCom of the world
    h_g, A_g qd       centroidal.momentum, momentum_matrix @ qd       mass * subtree_linvel[0]; subtree_angmom[0]
Pinocchio's side is tests/test_frames.py's (its MJCF model of the Panda moves a site; its centre of mass leaves out the
base), and tests/test_task_space.py's for the task-space inertia.
"""

import argparse
import math

import mujoco
import numpy as np

from physai import centroidal, engine, jacobians, kinematics, models


def bound(err: float) -> str:
    """err as a bound: "0" or "< 1e-k" with the smallest such k that holds."""
    return "0" if err == 0 else f"< 1e{math.floor(math.log10(err)) + 1}"


def error(got, expected) -> float:
    return float(np.abs(np.asarray(got) - expected).max() / max(1.0, np.abs(expected).max()))


def robot(name: str, n: int) -> dict:
    """The largest relative error of each quantity over n random states (seed 0) of the robot."""
    m = models.load(name)
    d = mujoco.MjData(m)
    model = engine.from_mujoco(m)
    Q, QD = engine.random_states(model, n, 0)
    frames = [("site", s, m.site(s).name) for s in range(m.nsite)] + [("body", b, m.body(b).name) for b in range(1, m.nbody)]
    names = [f"{kind}:{label}" for kind, _, label in frames]
    pos, rot = kinematics.frame_poses(model, Q, names)
    J = {f: jacobians.frame_jacobian(model, Q, f) for f in names}
    Jdot = {f: jacobians.frame_jacobian_dot(model, Q, QD, f) for f in names}
    V = {f: kinematics.frame_velocity(model, Q, QD, f, reference="local") for f in names}
    c, Jc = centroidal.com(model, Q), centroidal.com_jacobian(model, Q)
    h, A = centroidal.momentum(model, Q, QD), centroidal.momentum_matrix(model, Q)
    worst = dict.fromkeys(["frame poses", "frame Jacobian", "J_dot", "frame velocity", "CoM", "CoM Jacobian", "h_g",
                           "A_g qd"], 0.0)

    def keep(key, err):
        worst[key] = max(worst[key], err)

    for k in range(n):
        d.qpos[:], d.qvel[:] = Q[k], QD[k]
        mujoco.mj_forward(m, d)
        mujoco.mj_subtreeVel(m, d)
        for i, (kind, idx, _) in enumerate(frames):
            f = names[i]
            xpos, xmat = (d.site_xpos[idx], d.site_xmat[idx]) if kind == "site" else (d.xpos[idx], d.xmat[idx])
            keep("frame poses", max(error(pos[k, i], xpos), error(rot[k, i], xmat.reshape(3, 3))))
            jp, jr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
            (mujoco.mj_jacSite if kind == "site" else mujoco.mj_jacBody)(m, d, jp, jr, idx)
            keep("frame Jacobian", error(J[f][k], np.vstack([jp, jr])))
            body = int(m.site_bodyid[idx]) if kind == "site" else idx
            mujoco.mj_jacDot(m, d, jp, jr, xpos, body)
            keep("J_dot", error(Jdot[f][k], np.vstack([jp, jr])))
            v = np.zeros(6)
            mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_SITE if kind == "site" else mujoco.mjtObj.mjOBJ_XBODY, idx, v, 1)
            keep("frame velocity", error(V[f][k], np.r_[v[3:], v[:3]]))
        keep("CoM", error(c[k], d.subtree_com[0]))
        jp = np.zeros((3, m.nv))
        mujoco.mj_jacSubtreeCom(m, d, jp, 0)
        keep("CoM Jacobian", error(Jc[k], jp))
        expected = np.r_[m.body_subtreemass[0] * d.subtree_linvel[0], d.subtree_angmom[0]]
        keep("h_g", error(h[k], expected))
        keep("A_g qd", error(A[k] @ QD[k], expected))
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["franka_emika_panda", "unitree_h1", "unitree_g1"])
    parser.add_argument("--n", type=int, default=20, help="random states per robot")
    args = parser.parse_args()
    rows = {name: robot(name, args.n) for name in args.models}
    print(f"largest error relative to the quantity's scale over {args.n} random states (backend {engine.backend}); "
          "bounds, against MuJoCo")
    print(f"{'':16s}" + "".join(f"{name:>20s}" for name in rows))
    for key in next(iter(rows.values())):
        print(f"{key:16s}" + "".join(f"{bound(rows[name][key]):>20s}" for name in rows))


if __name__ == "__main__":
    main()
