"""Time physai's teaching layer and engine next to MuJoCo and Pinocchio, per call, from Python.

    uv run python benchmarks/bench_dynamics.py                      # double pendulum, Panda, iiwa; N = 1000
    uv run python benchmarks/bench_dynamics.py --models franka_emika_panda --n 10000

The header names what the timings depend on: the CPU and kernel, the SIMD targets numpy dispatches to, the BLAS
library and the OpenBLAS core type (kernel) it picked, the Python, numpy, MuJoCo and Pinocchio versions, and the
load average when the run started (other jobs on the machine slow every column).

For each model and quantity it prints microseconds per state:
    teaching   physai.dynamics, one state per call
    engine-1   physai.engine, one state per call
    engine-N   physai.engine, one call on N states, divided by N
    MuJoCo     the MuJoCo calls that produce the quantity (state copied into MjData, then the calls)
    MuJoCo-N   mujoco.rollout of N states, one mj_step each (forward dynamics + integration), per state
    Pinocchio  the matching pin.* function, one state per call
    Pin-N      pin.rneaInParallel / pin.abaInParallel on N states with one thread (Pinocchio's C++ batch), per state
and the ratios engine-N / Pinocchio, engine-N / MuJoCo and engine-1 / Pinocchio (below 1: physai is faster).
Contacts and constraints are disabled in MuJoCo; all inputs come from numpy.random.default_rng(0).
The peers run on one thread (rollout with nthread=0, Pinocchio's batch with num_thread=1); physai's compiled batches on
PHYSAI_NUM_THREADS threads (default: every core).
Times are the best of several rounds (wall clock); on a shared machine expect +-20% between runs.
"""

import argparse
import os
import platform
import sys
import timeit

import mujoco
import numpy as np

from physai import dynamics, engine, models

try:
    import pinocchio as pin
except ImportError:                                   # pragma: no cover - pin is in the dev group
    pin = None

DEFAULT_MODELS = ["double_pendulum", "franka_emika_panda", "kuka_iiwa_14"]
COLUMNS = ["teaching", "engine-1", "engine-N", "MuJoCo", "MuJoCo-N", "Pinocchio", "Pin-N"]
ROUNDS = 9


def calibrated(fn, seconds: float) -> tuple[timeit.Timer, int]:
    """fn's timer and the number of calls that take about `seconds` (at least one)."""
    timer = timeit.Timer(fn)
    number, elapsed = 1, timer.timeit(1)
    while elapsed < seconds and number < 1_000_000:
        number = max(2 * number, int(seconds / max(elapsed, 1e-9) * number))
        elapsed = timer.timeit(number)
    return timer, number


def best_time(fn, budget: float = 0.2, rounds: int = ROUNDS) -> float:
    """Seconds per call: the best of `rounds` rounds, each of as many calls as fit in about budget / rounds.

    The timing rule of every script in benchmarks/ (they import it)."""
    timer, number = calibrated(fn, budget / rounds)
    return min(timer.repeat(rounds, number)) / number


def paired_times(fn, peer, budget: float = 0.6, rounds: int = 205) -> tuple[np.ndarray, np.ndarray]:
    """Seconds per call of fn and of peer in each of `rounds` short rounds (two arrays), the two timed back to back in
    every round (which goes first alternates), each for about budget / (2 rounds): on a shared machine a short round
    often runs undisturbed, and a load that comes and goes falls on both alike, so the best rounds compare fairly."""
    (a, na), (b, nb) = calibrated(fn, budget / (2 * rounds)), calibrated(peer, budget / (2 * rounds))
    times = np.zeros((rounds, 2))
    for r in range(rounds):
        for side in ((0, 1) if r % 2 == 0 else (1, 0)):
            timer, number = (a, na) if side == 0 else (b, nb)
            times[r, side] = timer.timeit(number) / number
    return times[:, 0], times[:, 1]


class Bench:
    def __init__(self, name: str, n: int):
        self.name, self.n = name, n
        self.m = models.load(name)
        self.m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT | mujoco.mjtDisableBit.mjDSBL_CONTACT
        self.d = mujoco.MjData(self.m)
        self.tree = dynamics.tree_from_mujoco(self.m)
        self.model = engine.from_mujoco(self.m)
        nv = self.m.nv
        rng = np.random.default_rng(0)
        self.q, self.qd, self.qdd = rng.uniform(-1.0, 1.0, (3, nv))
        self.Q, self.QD, self.QDD = rng.uniform(-1.0, 1.0, (3, n, nv))
        self.pin = self.pin_data = None
        if pin is not None:
            # the MJCF parser reads these three models faithfully (tests/test_pinocchio.py checks it)
            self.pin = pin.buildModelFromMJCF(str(models.model_path(name)))
            self.pin_data = self.pin.createData()
            self.pin_pool = pin.ModelPool(self.pin, 1)
            self.pin_batch = [np.asfortranarray(x.T) for x in (self.Q, self.QD, self.QDD)]
            self.pin_out = np.asfortranarray(np.zeros((nv, n)))

    # ---- MuJoCo: state into MjData, then the calls that produce the quantity ----
    def mj_inverse(self):
        d = self.d
        d.qpos[:], d.qvel[:], d.qacc[:] = self.q, self.qd, self.qdd
        mujoco.mj_inverse(self.m, d)

    def mj_bias(self, qd):
        m, d, out = self.m, self.d, np.empty(self.m.nv)
        def run():
            d.qpos[:], d.qvel[:] = self.q, qd
            mujoco.mj_kinematics(m, d)
            mujoco.mj_comPos(m, d)
            mujoco.mj_comVel(m, d)
            mujoco.mj_rne(m, d, 0, out)
        return run

    def mj_mass(self):
        m, d, out = self.m, self.d, np.empty((self.m.nv, self.m.nv))
        def run():
            d.qpos[:] = self.q
            mujoco.mj_kinematics(m, d)
            mujoco.mj_comPos(m, d)
            mujoco.mj_crb(m, d)
            mujoco.mj_fullM(m, d, out)
        return run

    def mj_forward(self):
        d = self.d
        d.qpos[:], d.qvel[:], d.qfrc_applied[:] = self.q, self.qd, self.qdd
        mujoco.mj_forward(self.m, d)

    def mj_energy(self):
        m, d = self.m, self.d
        d.qpos[:], d.qvel[:] = self.q, self.qd
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        mujoco.mj_energyPos(m, d)
        mujoco.mj_comVel(m, d)
        mujoco.mj_energyVel(m, d)

    def mj_rollout(self):
        """Seconds per state of one mj_step for each of N initial states (mujoco.rollout, calling thread only)."""
        from mujoco import rollout

        m, spec = self.m, mujoco.mjtState.mjSTATE_FULLPHYSICS
        states = np.empty((self.n, mujoco.mj_stateSize(m, spec)))
        d = mujoco.MjData(m)
        for k in range(self.n):
            d.qpos[:], d.qvel[:] = self.Q[k], self.QD[k]
            mujoco.mj_getState(m, d, states[k], spec)
        with rollout.Rollout(nthread=0) as r:
            return best_time(lambda: r.rollout(m, d, states, nstep=1)) / self.n

    def pin_parallel(self, fn):
        """Pinocchio's C++ batch (rneaInParallel, abaInParallel) on one thread; seconds per state."""
        if pin is None:
            return None
        Q, QD, QDD = self.pin_batch
        return best_time(lambda: fn(1, self.pin_pool, Q, QD, QDD, self.pin_out), 0.5) / self.n

    def rows(self):
        """(quantity, teaching, engine single, engine batched, MuJoCo, Pinocchio) callables; None where absent."""
        t, mo, e = self.tree, self.model, engine
        q, qd, qdd, Q, QD, QDD = self.q, self.qd, self.qdd, self.Q, self.QD, self.QDD
        P, Pd = self.pin, self.pin_data
        has_pin = P is not None
        return [
            ("rnea", lambda: dynamics.rnea(t, q, qd, qdd), lambda: e.rnea(mo, q, qd, qdd), lambda: e.rnea(mo, Q, QD, QDD),
             self.mj_inverse, has_pin and (lambda: pin.rnea(P, Pd, q, qd, qdd))),
            ("bias", lambda: dynamics.bias(t, q, qd), lambda: e.bias(mo, q, qd), lambda: e.bias(mo, Q, QD),
             self.mj_bias(qd), has_pin and (lambda: pin.nonLinearEffects(P, Pd, q, qd))),
            ("gravity", lambda: dynamics.gravity(t, q), lambda: e.gravity(mo, q), lambda: e.gravity(mo, Q),
             self.mj_bias(np.zeros_like(qd)), has_pin and (lambda: pin.computeGeneralizedGravity(P, Pd, q))),
            ("mass_matrix", lambda: dynamics.mass_matrix(t, q), lambda: e.mass_matrix(mo, q), lambda: e.mass_matrix(mo, Q),
             self.mj_mass(), has_pin and (lambda: pin.crba(P, Pd, q))),
            ("forward_dynamics", lambda: dynamics.forward_dynamics(t, q, qd, qdd), lambda: e.forward_dynamics(mo, q, qd, qdd),
             lambda: e.forward_dynamics(mo, Q, QD, QDD), self.mj_forward, has_pin and (lambda: pin.aba(P, Pd, q, qd, qdd))),
            ("aba", None, lambda: e.aba(mo, q, qd, qdd), lambda: e.aba(mo, Q, QD, QDD),
             self.mj_forward, has_pin and (lambda: pin.aba(P, Pd, q, qd, qdd))),
            ("energy", lambda: dynamics.energy(t, q, qd), lambda: e.energy(mo, q, qd), lambda: e.energy(mo, Q, QD),
             self.mj_energy, has_pin and (lambda: pin.computeMechanicalEnergy(P, Pd, q, qd))),
        ]

    def run(self):
        """{quantity: {column: microseconds per state}}."""
        table = {}
        step = self.mj_rollout()
        pin_n = {"rnea": self.pin_parallel(pin and pin.rneaInParallel)}
        pin_n["forward_dynamics"] = pin_n["aba"] = self.pin_parallel(pin and pin.abaInParallel)
        for name, teach, one, many, mj, pn in self.rows():
            times = {
                "teaching": teach and best_time(teach, 0.1),
                "engine-1": best_time(one),
                "engine-N": best_time(many, 0.5) / self.n,
                "MuJoCo": best_time(mj),
                "MuJoCo-N": step if name in ("forward_dynamics", "aba") else None,
                "Pinocchio": pn and best_time(pn),
                "Pin-N": pin_n.get(name),
            }
            table[name] = {k: (None if v is None or v is False else 1e6 * v) for k, v in times.items()}
        return table


def ratio(a, b):
    return f"{a / b:7.2f}" if a and b else "      -"


def print_table(bench: Bench, table: dict) -> None:
    m = bench.m
    print(f"\n{bench.name}: nv = {m.nv}, {m.nbody - 1} bodies ({bench.model.nlink} engine links after fusing welded ones), "
          f"N = {bench.n}; microseconds per state")
    head = f"{'':17s}" + "".join(f"{c:>10s}" for c in COLUMNS) + "   N/pin  N/pinN    N/mj   1/pin"
    print(head)
    print("-" * len(head))
    for name, row in table.items():
        cells = "".join(f"{row[c]:10.2f}" if row[c] else f"{'-':>10s}" for c in COLUMNS)
        print(f"{name:17s}{cells} {ratio(row['engine-N'], row['Pinocchio'])} {ratio(row['engine-N'], row['Pin-N'])}"
              f" {ratio(row['engine-N'], row['MuJoCo'])} {ratio(row['engine-1'], row['Pinocchio'])}")


def cpu_model() -> str:
    """The CPU's model name, family and model from /proc/cpuinfo (Linux), else platform.processor()."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    name = fields.get("model name") or fields.get("Hardware") or platform.processor() or "unknown CPU"
    if "cpu family" in fields:
        name += f" (family {fields['cpu family']}, model {fields.get('model', '?')}, stepping {fields.get('stepping', '?')})"
    return name


def numpy_simd() -> str:
    """numpy's compiled-in baseline and the dispatch targets this CPU supports (the ones numpy's loops can use)."""
    try:
        from numpy._core import _multiarray_umath as mu
    except ImportError:                                   # pragma: no cover - numpy < 2
        from numpy.core import _multiarray_umath as mu
    features = mu.__cpu_features__
    used = [t for t in mu.__cpu_dispatch__ if features.get(t)]
    return f"baseline {' '.join(mu.__cpu_baseline__) or '-'}; dispatch in use {' '.join(used) or '-'}"


def blas() -> str:
    """Each BLAS numpy loaded: library, version, core type (OpenBLAS kernel) and threads, from threadpoolctl."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:                                   # pragma: no cover - threadpoolctl is in the dev group
        return "threadpoolctl not installed"
    libs = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    return "; ".join(f"{i.get('internal_api')} {i.get('version')}, core type {i.get('architecture', '?')}, "
                     f"{i.get('num_threads')} threads ({os.path.basename(i.get('filepath', ''))})" for i in libs) or "none found"


def load() -> str:
    """The 1, 5 and 15 minute load averages: other jobs on the machine slow every column."""
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:                                       # pragma: no cover - not on Windows
        return "unknown"


def header() -> list[str]:
    """What the timings depend on: CPU, kernel, numpy's SIMD, the BLAS kernel, library versions."""
    return [
        f"cpu: {cpu_model()}, {platform.machine()}, {os.cpu_count()} cpus; kernel {platform.system()} {platform.release()}; "
        f"load average at start {load()}",
        f"numpy {np.__version__} SIMD: {numpy_simd()}",
        f"blas: {blas()}; OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', 'unset')}",
        f"python {platform.python_version()}, numpy {np.__version__}, mujoco {mujoco.__version__}, "
        f"pinocchio {pin.__version__ if pin else 'not installed'}",
        f"engine backend (engine-1, engine-N columns): {engine.backend} (PHYSAI_BACKEND=numpy selects the NumPy reference)",
    ]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=DEFAULT_MODELS, help="model names (physai.models)")
    parser.add_argument("--n", type=int, default=1000, help="states per batched call (default 1000)")
    args = parser.parse_args(argv)
    for line in header():
        print(line)
    print("MuJoCo column: rnea mj_inverse | bias, gravity mj_kinematics+comPos+comVel+rne(flg_acc=0) | "
          "mass_matrix mj_kinematics+comPos+crb+fullM | forward_dynamics, aba mj_forward | energy kinematics+comPos+"
          "energyPos+comVel+energyVel.\nPinocchio: rnea, nonLinearEffects, computeGeneralizedGravity, crba, aba, aba, "
          "computeMechanicalEnergy. MuJoCo-N: mujoco.rollout, 1 mj_step per state. Pin-N: rnea/abaInParallel, 1 thread.")
    for name in args.models:
        bench = Bench(name, args.n)
        print_table(bench, bench.run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
