"""Time physai.derivatives next to Pinocchio's computeRNEADerivatives / computeABADerivatives (and MuJoCo's mjd_inverseFD).

    uv run python benchmarks/bench_derivatives.py                          # arm7, Panda, H1; N = 1000
    uv run python benchmarks/bench_derivatives.py --models franka_emika_panda --n 4000
    uv run python benchmarks/bench_derivatives.py --step-only --integrators discrete implicitfast

Microseconds per state, best of several rounds, for rnea_derivatives, then forward_dynamics_derivatives:
    physai-1    one state per call (the engine's backend: compiled, or PHYSAI_BACKEND=numpy for the NumPy text)
    physai-N    one call on N states, divided by N (compiled: lanes of states side by side, on the backend's threads,
                as the header says)
    Pinocchio   pin.computeRNEADerivatives / pin.computeABADerivatives, one state per call (C++, one thread;
                fixed-base robots only: H1's free joint has another chart, see tests/test_derivatives.py)
    mjd-FD      mujoco.mjd_inverseFD (forward differences, nv + nv + nv evaluations of mj_inverse; rnea only)
and the ratios physai-1 / Pinocchio and physai-N / Pinocchio (below 1: physai is faster).
Then step_derivatives (A, B of one step; analytical) beside mujoco.mjd_transitionFD (centred finite differences of
mj_step, eps 1e-6, the same integrator and timestep 2 ms; MuJoCo refuses rk4 there; discrete is MuJoCo 4's
mjINT_DISCRETE, compiled with the joints' and servos' metric), in microseconds per state:
physai-1 one state per call, physai-N N states in one call divided by N, and the ratios of each to MuJoCo's call.
On a shared machine expect +-20 % between runs.
"""

import argparse
import os
import platform
import sys
from functools import partial

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):     # one thread, as Pinocchio's call
    os.environ.setdefault(_var, "1")

import mujoco  # noqa: E402
import numpy as np  # noqa: E402

from bench_dynamics import best_time as timing  # noqa: E402  (the one timing rule of benchmarks/)
from physai import derivatives, engine, models  # noqa: E402
from physai.engine import native  # noqa: E402

try:
    import pinocchio as pin
except ImportError:                                   # pragma: no cover - pin is in the dev group
    pin = None

ROUNDS = 7


def best_time(fn, budget: float = 0.3) -> float:
    """Seconds per call: bench_dynamics' timing rule with ROUNDS rounds and a 0.3 s budget."""
    return timing(fn, budget, ROUNDS)


def bench(name: str, n: int) -> tuple:
    m = models.load(name)
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    d = mujoco.MjData(m)
    model = engine.from_mujoco(m)
    q, qd = engine.random_states(model, n, 0)
    qdd = np.random.default_rng(1).uniform(-3, 3, (n, model.nv))
    tau = engine.rnea(model, q, qd, qdd)
    out = {"physai-1": best_time(lambda: derivatives.rnea_derivatives(model, q[0], qd[0], qdd[0])),
           "physai-N": best_time(lambda: derivatives.rnea_derivatives(model, q, qd, qdd)) / n}
    fd = {"physai-1": best_time(lambda: derivatives.forward_dynamics_derivatives(model, q[0], qd[0], tau[0])),
          "physai-N": best_time(lambda: derivatives.forward_dynamics_derivatives(model, q, qd, tau)) / n}
    if pin is not None and model.nq == model.nv:
        pm = pin.buildModelFromMJCF(str(models.model_path(name)))
        pd = pm.createData()
        out["Pinocchio"] = best_time(lambda: pin.computeRNEADerivatives(pm, pd, q[0], qd[0], qdd[0]))
        fd["Pinocchio"] = best_time(lambda: pin.computeABADerivatives(pm, pd, q[0], qd[0], tau[0]))
    nv = m.nv
    Dq, Dv, Da = np.zeros((nv, nv)), np.zeros((nv, nv)), np.zeros((nv, nv))

    def mjd():
        d.qpos[:], d.qvel[:] = q[0], qd[0]
        mujoco.mj_forward(m, d)
        d.qacc[:] = qdd[0]
        mujoco.mjd_inverseFD(m, d, 1e-6, False, Dq, Dv, Da, None, None, None, None)

    out["mjd-FD"] = best_time(mjd)
    return out, fd


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["arm7", "franka_emika_panda", "unitree_h1"])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--step-only", action="store_true", help="only step_derivatives beside mjd_transitionFD")
    parser.add_argument("--integrators", nargs="+", default=list(STEP_INTEGRATORS))
    args = parser.parse_args(argv)
    print(f"microseconds per state; N = {args.n}; Python {sys.version.split()[0]}, numpy {np.__version__}, "
          f"{platform.machine()}, {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.1f}")
    print(f"physai.derivatives backend: {native.describe()}")
    if args.step_only:
        return step(args.models, args.n, tuple(args.integrators))
    cols = ["physai-1", "physai-N", "Pinocchio", "mjd-FD"]
    times = {name: bench(name, args.n) for name in args.models}
    for k, what in enumerate(["rnea_derivatives (Pinocchio: computeRNEADerivatives)",
                              "forward_dynamics_derivatives (Pinocchio: computeABADerivatives)"]):
        print(f"\n{what}")
        print(f"{'model':22s}" + "".join(f"{c:>12s}" for c in cols) + f"{'1/Pin':>9s}{'N/Pin':>9s}")
        for name in args.models:
            t = times[name][k]
            row = "".join(f"{t[c] * 1e6:12.2f}" if c in t else f"{'-':>12s}" for c in cols)
            ratios = (f"{t['physai-1'] / t['Pinocchio']:9.2f}{t['physai-N'] / t['Pinocchio']:9.2f}" if "Pinocchio" in t
                      else f"{'-':>9s}{'-':>9s}")
            print(f"{name:22s}{row}{ratios}")
    step(args.models, args.n, tuple(args.integrators))


#: the integrators step() times by default, and MuJoCo's mjtIntegrator value of each (rk4: none, mjd_transitionFD refuses it)
STEP_INTEGRATORS = ("euler", "implicitfast", "implicit", "rk4", "discrete")
MJ_INTEGRATOR = {"euler": 0, "implicit": 2, "implicitfast": 3, "discrete": 4}


def step(names, n: int, integrators=STEP_INTEGRATORS, h: float = 0.002) -> None:
    """step_derivatives beside mjd_transitionFD: one state per call, and N states in one call."""
    print(f"\nstep_derivatives (A, B) beside mjd_transitionFD (centred), dt = {h:g} s; microseconds per state")
    print(f"{'model':22s}{'integrator':>14s}{'physai-1':>12s}{'physai-N':>12s}{'MuJoCo':>12s}{'1/MuJoCo':>10s}{'N/MuJoCo':>10s}")
    for name in names:
        m = models.load(name)
        m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
        m.opt.timestep = h
        model, d = engine.from_mujoco(m), mujoco.MjData(m)
        q, qd = engine.random_states(model, n, 0)
        A, B = np.zeros((2 * m.nv + m.na, 2 * m.nv + m.na)), np.zeros((2 * m.nv + m.na, m.nu))
        for integrator in integrators:
            one = best_time(partial(derivatives.step_derivatives, model, q[0], qd[0], h, integrator))
            many = best_time(partial(derivatives.step_derivatives, model, q, qd, h, integrator)) / n
            theirs = None
            if integrator != "rk4":
                m.opt.integrator = MJ_INTEGRATOR[integrator]
                d.qpos[:], d.qvel[:] = q[0], qd[0]
                theirs = best_time(partial(mujoco.mjd_transitionFD, m, d, 1e-6, True, A, B, None, None))
            cells = (f"{theirs * 1e6:12.1f}{one / theirs:10.2f}{many / theirs:10.3f}" if theirs
                     else f"{'-':>12s}{'-':>10s}{'-':>10s}")
            print(f"{name:22s}{integrator:>14s}{one * 1e6:12.1f}{many * 1e6:12.2f}{cells}")


if __name__ == "__main__":
    main()
