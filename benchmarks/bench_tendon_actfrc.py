"""A force-limited tendon's actuators (tendon actuatorfrcrange): physai beside MuJoCo, steps per second, in one run.

    uv run python benchmarks/bench_tendon_actfrc.py

The model of tests/test_tendon_actfrc.py with a fixed tendon alone (three actuators on it, its total saturated for most
steps), from one random state under a constant random control: integrators.simulate beside mj_step called from a Python
loop, and integrators.rollout of 64 trajectories beside mujoco.rollout (same thread count), for euler, implicitfast,
implicit and discrete. The ratio is physai's steps per second over MuJoCo's (above 1: physai is faster). Best of 3
rounds, wall clock; the compiled backend.
"""

import sys
import time
from functools import partial
from pathlib import Path

import mujoco
import numpy as np
from mujoco import rollout as mj_rollout

from physai import engine, integrators
from physai.engine import native

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from test_tendon_actfrc import start, tendon_frc_xml  # noqa: E402

STEPS, N, ROLLOUT_STEPS = 2000, 64, 200


def best(f, rounds: int = 3) -> float:
    """The shortest of `rounds` wall-clock runs of f [s]."""
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def mj_loop(m, q0, qd0, ctrl) -> None:
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:], d.ctrl[:] = q0, qd0, ctrl
    for _ in range(STEPS):
        mujoco.mj_step(m, d)


def rollout_rates(m, model, Q, QD, U, threads: int) -> tuple:
    """(integrators.rollout's, mujoco.rollout's) steps per second: N trajectories from Q (N, nq), QD (N, nv) of
    ROLLOUT_STEPS steps under the constant controls U (N, nu), best of 3, mujoco.rollout on `threads` threads."""
    n = len(Q)
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    initial, d = np.empty((n, mujoco.mj_stateSize(m, spec))), mujoco.MjData(m)
    for k in range(n):
        d.qpos[:], d.qvel[:] = Q[k], QD[k]
        mujoco.mj_getState(m, d, initial[k], spec)
    control = np.ascontiguousarray(np.broadcast_to(U[:, None, :], (n, ROLLOUT_STEPS, m.nu)))
    mine = n * ROLLOUT_STEPS / best(partial(integrators.rollout, model, Q, QD, steps=ROLLOUT_STEPS, ctrl=U[:, None, :],
                                            energy=False))
    datas = [mujoco.MjData(m) for _ in range(threads)]
    with mj_rollout.Rollout(nthread=threads if threads > 1 else 0) as r:
        theirs = n * ROLLOUT_STEPS / best(partial(r.rollout, m, datas, initial, control, nstep=ROLLOUT_STEPS))
    return mine, theirs


def main() -> None:
    engine.set_backend("native")
    threads = native.threads()
    print(f"simulate ({STEPS} steps) vs mj_step loop; rollout ({N} x {ROLLOUT_STEPS}) vs mujoco.rollout, {threads} threads")
    print(f"{'integrator':<13} {'simulate/s':>11} {'mj_step/s':>10} {'ratio':>6} {'rollout/s':>11} {'mj rollout/s':>13} {'ratio':>6}")
    for integrator in ("euler", "implicitfast", "implicit", "discrete"):
        m = mujoco.MjModel.from_xml_string(tendon_frc_xml(2, integrator, spatial=False))
        model = engine.from_mujoco(m)
        q0, qd0, ctrl = start(m, 2)
        mine = STEPS / best(partial(integrators.simulate, model, q0, qd0, steps=STEPS, ctrl=ctrl, energy=False))
        theirs = STEPS / best(partial(mj_loop, m, q0, qd0, ctrl))
        starts = [start(m, 10 + k) for k in range(N)]
        Q, QD, U = (np.array(x) for x in zip(*starts))
        batch, mj_batch = rollout_rates(m, model, Q, QD, U, threads)
        print(f"{integrator:<13} {mine:>11.0f} {theirs:>10.0f} {mine / theirs:>6.2f} {batch:>11.0f} {mj_batch:>13.0f} "
              f"{batch / mj_batch:>6.2f}")


if __name__ == "__main__":
    main()
