"""The body quantities a step observes (step_result's observe), beside MuJoCo's mj_step + mj_rnePostConstraint.

    uv run python benchmarks/bench_observed.py [N] [repeats]

Gymnasium's Ant and Humanoid (their own XML and options), N states (default 64) from a MuJoCo run with random
controls, each stepped once per call. Per model, in one run, the median time of:
    physai step         step_result(model, Q, QD, ctrl=U, qacc_warmstart=W)                 (one compiled call)
    physai observe      the same with observe=("xpos", "cinert", "cvel", "cfrc_ext", "qfrc_actuator", "site_xpos")
    MuJoCo              for each state: mj_step then mj_rnePostConstraint on one MjData (Gymnasium's frame)
and the ratios printed: observe / step (what observing costs) and MuJoCo / observe (how much faster physai is).
"""

import os
import sys
import time

import gymnasium
import mujoco
import numpy as np

from physai import engine, integrators

ASSETS = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets")
OBSERVE = ("xpos", "cinert", "cvel", "cfrc_ext", "qfrc_actuator", "site_xpos")


def states(m: mujoco.MjModel, N: int, seed: int = 0):
    """N states (q, qd, warm start, ctrl) of a MuJoCo run with random controls, one every 5 steps after 200."""
    d, rng = mujoco.MjData(m), np.random.default_rng(seed)
    rows = []
    for k in range(200 + 5 * N):
        d.ctrl[:] = rng.uniform(-1, 1, m.nu)
        mujoco.mj_step(m, d)
        if k >= 200 and (k - 200) % 5 == 0:
            rows.append((d.qpos.copy(), d.qvel.copy(), d.qacc_warmstart.copy(), d.ctrl.copy()))
    return (np.array(x) for x in zip(*rows))


def median_time(f, repeats: int) -> float:
    f()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def timings(name: str, N: int, repeats: int) -> tuple[float, float, float]:
    """(physai step, physai observe, MuJoCo) median times [s] of one call on N states of Gymnasium's `name`."""
    m = mujoco.MjModel.from_xml_path(os.path.join(ASSETS, name))
    Q, QD, W, U = states(m, N)
    model = engine.from_mujoco(m)
    d = mujoco.MjData(m)

    def physai_step():
        integrators.step_result(model, Q, QD, ctrl=U, qacc_warmstart=W)

    def physai_observe():
        integrators.step_result(model, Q, QD, ctrl=U, qacc_warmstart=W, observe=OBSERVE)

    def mujoco_steps():
        for n in range(N):
            d.qpos[:], d.qvel[:], d.qacc_warmstart[:], d.ctrl[:] = Q[n], QD[n], W[n], U[n]
            mujoco.mj_step(m, d)
            mujoco.mj_rnePostConstraint(m, d)

    return tuple(median_time(f, repeats) for f in (physai_step, physai_observe, mujoco_steps))


def main(N: int = 64, repeats: int = 30) -> None:
    print(f"N = {N} states, median of {repeats} calls; load: {os.getloadavg()[0]:.2f}")
    print(f"{'model':10s} {'step':>10s} {'observe':>10s} {'MuJoCo':>10s} {'observe/step':>13s} {'MuJoCo/observe':>15s}")
    for name in ("ant.xml", "humanoid.xml"):
        t_step, t_obs, t_mj = timings(name, N, repeats)
        print(f"{name[:-4]:10s} {t_step * 1e3:8.3f}ms {t_obs * 1e3:8.3f}ms {t_mj * 1e3:8.3f}ms {t_obs / t_step:12.2f}x "
              f"{t_mj / t_obs:14.2f}x")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
