"""The engine's compiled backend beside Pinocchio and MuJoCo, per call and batched, from Python, in one run.

    uv run python benchmarks/bench_native.py                                  # Panda, iiwa, H1, double pendulum; N = 1e5
    uv run python benchmarks/bench_native.py --models franka_emika_panda --n 10000 --numpy --no-extras

Then, on the Panda, time per state against the batch size N = 1 ... 1e5 (rnea, forward dynamics, beside Pinocchio's
*InParallel on the same N), body_jacobian / integrate / difference beside MuJoCo's calls; serial chains of 5-100
hinge links (rnea and mass matrix per state, batched, and the fitted exponent of time ~ links^p), and the peak
memory of one rnea call on N = 1e6 Panda states against its inputs and output.

Columns, microseconds per state (per call for the single-state columns):
    native-1   physai.engine on the compiled backend, one state per call (checks included)
    native-N   one call on N states (every thread, PHYSAI_NUM_THREADS to change), divided by N
    numpy-N    the NumPy reference backend on the same N states (with --numpy; slow for large N)
    Pinocchio  the matching pin.* function, one state per call, on the model pin.buildModelFromMJCF reads (the H1
               with a free flyer): the same states in Pinocchio's conventions (physai.conventions: quaternions
               x y z w, the free flyer's linear velocity in the body frame, a and tau mapped), converted before timing;
               Pinocchio's rnea and aba on them, mapped back, must equal physai's within 1e-9 relative or the run stops
    Pin-N      pin.rneaInParallel / abaInParallel on N states, one thread, per state
    MuJoCo     the MuJoCo calls that produce the quantity, state copied into MjData first (as bench_dynamics.py)
Ratios first: native-1 / Pinocchio, native-N / Pinocchio, native-N / Pin-N, native-N / MuJoCo (below 1: physai is
faster). Inputs: numpy.random.default_rng(0); quaternions of free and ball joints are random unit quaternions.
Times are the best of several rounds of wall-clock time; on a shared machine expect +-20% between runs.
"""

import argparse
import os
import platform
import sys
from functools import partial

import mujoco
import numpy as np

from bench_dynamics import best_time as timing  # the one timing rule of benchmarks/
from physai import conventions, engine, models
from physai.engine import native

try:
    import pinocchio as pin
except ImportError:                                   # pragma: no cover - pin is in the dev group
    pin = None

DEFAULT_MODELS = ["franka_emika_panda", "kuka_iiwa_14", "unitree_h1", "double_pendulum"]
PIN_MJCF = {"franka_emika_panda", "kuka_iiwa_14", "unitree_h1", "double_pendulum"}  # Pinocchio reads these MJCFs faithfully
PIN_RTOL = 1e-9                                      # Pinocchio's rnea and aba, mapped back, against physai's
ROUNDS = 7
QUANTITIES = ["rnea", "bias", "gravity", "mass_matrix", "forward_dynamics", "aba", "energy"]


def best_time(fn, budget: float = 0.2) -> float:
    """Seconds per call: bench_dynamics' timing rule with ROUNDS rounds."""
    return timing(fn, budget, ROUNDS)


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def header() -> str:
    isa = native.isa() if native.available() else "-"
    return (f"CPU {cpu_name()} ({platform.machine()}, {os.cpu_count()} cpus); backend {engine.backend}, instruction set "
            f"{isa}, {native.threads()} threads for batches\npython {platform.python_version()}, numpy {np.__version__}, "
            f"mujoco {mujoco.__version__}, pinocchio {pin.__version__ if pin else 'not installed'}")


class Case:
    def __init__(self, name: str, n: int):
        self.name, self.n = name, n
        self.m = models.load(name)
        self.m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT | mujoco.mjtDisableBit.mjDSBL_CONTACT
        self.d = mujoco.MjData(self.m)
        self.model = engine.from_mujoco(self.m)
        nv = self.model.nv
        Q, QD = engine.random_states(self.model, n + 1, 0)
        rng = np.random.default_rng(0)
        QDD = rng.uniform(-1.0, 1.0, (n + 1, nv))
        self.q, self.qd, self.qdd = Q[0], QD[0], QDD[0]
        self.Q, self.QD, self.QDD = Q[1:], QD[1:], QDD[1:]
        self.pin = None
        if pin is not None and name in PIN_MJCF:
            self.pin = pin.buildModelFromMJCF(str(models.model_path(name)))
            self.pin_data = self.pin.createData()
            self.pin_pool = pin.ModelPool(self.pin, 1)
            # the same states in Pinocchio's conventions: q, v, a for rnea and tau (QDD) for aba
            self.pin_state = to_pinocchio(self.model, self.q[None], self.qd[None], self.qdd[None])
            self.pin_batch = [np.asfortranarray(x.T) for x in to_pinocchio(self.model, self.Q, self.QD, self.QDD)]
            self.pin_out = np.asfortranarray(np.zeros((nv, n)))
            self.check_pinocchio()

    def mujoco(self, quantity):
        m, d, nv = self.m, self.d, self.m.nv
        q, qd, qdd, out, M = self.q, self.qd, self.qdd, np.empty(nv), np.empty((nv, nv))

        def inverse():
            d.qpos[:], d.qvel[:], d.qacc[:] = q, qd, qdd
            mujoco.mj_inverse(m, d)

        def bias(v):
            def run():
                d.qpos[:], d.qvel[:] = q, v
                mujoco.mj_kinematics(m, d)
                mujoco.mj_comPos(m, d)
                mujoco.mj_comVel(m, d)
                mujoco.mj_rne(m, d, 0, out)
            return run

        def mass():
            d.qpos[:] = q
            mujoco.mj_kinematics(m, d)
            mujoco.mj_comPos(m, d)
            mujoco.mj_crb(m, d)
            mujoco.mj_fullM(m, d, M)

        def forward():
            d.qpos[:], d.qvel[:], d.qfrc_applied[:] = q, qd, qdd
            mujoco.mj_forward(m, d)

        def energy():
            d.qpos[:], d.qvel[:] = q, qd
            mujoco.mj_kinematics(m, d)
            mujoco.mj_comPos(m, d)
            mujoco.mj_energyPos(m, d)
            mujoco.mj_comVel(m, d)
            mujoco.mj_energyVel(m, d)

        return {"rnea": inverse, "bias": bias(qd), "gravity": bias(np.zeros(nv)), "mass_matrix": mass,
                "forward_dynamics": forward, "aba": forward, "energy": energy}[quantity]

    def check_pinocchio(self, states: int = 16):
        """Raise unless Pinocchio's rnea and aba (one state per call and in parallel) on the converted states, mapped
        back with physai.conventions, equal physai's within PIN_RTOL relative to each state's largest entry."""
        P, D, mo = self.pin, self.pin_data, self.model
        Q, V, A, T = (x[:, :states] for x in self.pin_batch)
        fn_pin = {"rnea": lambda k: pin.rnea(P, D, Q[:, k], V[:, k], A[:, k]),
                  "forward_dynamics": lambda k: pin.aba(P, D, Q[:, k], V[:, k], T[:, k])}
        back = {"rnea": lambda k, x: conventions.tau_from_pinocchio(mo, self.Q[k], x),
                "forward_dynamics": lambda k, x: conventions.a_from_pinocchio(mo, self.Q[k], self.QD[k], x)}
        par = {}
        for quantity, fn in (("rnea", pin.rneaInParallel), ("forward_dynamics", pin.abaInParallel)):
            out = np.asfortranarray(np.zeros((mo.nv, states)))
            fn(1, self.pin_pool, Q, V, A if quantity == "rnea" else T, out)
            par[quantity] = out
        for quantity in ("rnea", "forward_dynamics"):
            ours = getattr(engine, quantity)(mo, *self.engine_args(quantity, True))
            for k in range(states):
                for theirs in (fn_pin[quantity](k), par[quantity][:, k]):
                    err = np.abs(back[quantity](k, np.array(theirs)) - ours[k]).max() / max(np.abs(ours[k]).max(), 1e-300)
                    if not err <= PIN_RTOL:
                        raise RuntimeError(f"{self.name}: Pinocchio's {quantity} on the converted state {k}, mapped back, "
                                           f"differs from physai's by {err:.3g} relative (> {PIN_RTOL:g})")

    def pinocchio(self, quantity):
        if self.pin is None:
            return None
        P, D = self.pin, self.pin_data
        q, qd, qdd, tau = (x[0] for x in self.pin_state)
        return {"rnea": lambda: pin.rnea(P, D, q, qd, qdd), "bias": lambda: pin.nonLinearEffects(P, D, q, qd),
                "gravity": lambda: pin.computeGeneralizedGravity(P, D, q), "mass_matrix": lambda: pin.crba(P, D, q),
                "forward_dynamics": lambda: pin.aba(P, D, q, qd, tau), "aba": lambda: pin.aba(P, D, q, qd, tau),
                "energy": lambda: pin.computeMechanicalEnergy(P, D, q, qd)}[quantity]

    def pin_parallel(self, quantity):
        if self.pin is None or quantity not in ("rnea", "forward_dynamics", "aba"):
            return None
        fn = pin.rneaInParallel if quantity == "rnea" else pin.abaInParallel
        Q, QD, QDD, TAU = self.pin_batch
        X = QDD if quantity == "rnea" else TAU
        return lambda: fn(1, self.pin_pool, Q, QD, X, self.pin_out)

    def engine_args(self, quantity, batched):
        q, qd, qdd = (self.Q, self.QD, self.QDD) if batched else (self.q, self.qd, self.qdd)
        return {"rnea": (q, qd, qdd), "bias": (q, qd), "gravity": (q,), "mass_matrix": (q,), "forward_dynamics": (q, qd, qdd),
                "aba": (q, qd, qdd), "energy": (q, qd)}[quantity]

    def run(self, with_numpy: bool):
        table = {}
        for quantity in QUANTITIES:
            f, mo = getattr(engine, quantity), self.model
            one, many = self.engine_args(quantity, False), self.engine_args(quantity, True)
            pn, pp = self.pinocchio(quantity), self.pin_parallel(quantity)
            row = {"native-1": best_time(lambda f=f, mo=mo, one=one: f(mo, *one)),
                   "native-N": best_time(lambda f=f, mo=mo, many=many: f(mo, *many), 0.5) / self.n,
                   "Pinocchio": pn and best_time(pn),
                   "Pin-N": pp and best_time(pp, 0.5) / self.n,
                   "MuJoCo": best_time(self.mujoco(quantity))}
            if with_numpy:
                previous = engine.set_backend("numpy")
                row["numpy-N"] = best_time(lambda f=f, mo=mo, many=many: f(mo, *many), 0.5) / self.n
                engine.set_backend(previous)
            table[quantity] = {k: (None if v is None else 1e6 * v) for k, v in row.items()}
        return table


def to_pinocchio(model, Q, QD, QDD):
    """(q, v, a, tau) in Pinocchio's conventions, each (N, size), of physai's states Q, QD with QDD taken as the
    acceleration (for rnea) and as the generalized force (for aba). Without free or ball joints the maps are the
    identity and the arrays are copied."""
    if len(model.coords.quat_q) == 0:
        return Q.copy(), QD.copy(), QDD.copy(), QDD.copy()
    c = conventions
    rows = [(c.q_to_pinocchio(model, q), c.v_to_pinocchio(model, q, v), c.a_to_pinocchio(model, q, v, a),
             c.tau_to_pinocchio(model, q, a)) for q, v, a in zip(Q, QD, QDD)]
    return tuple(np.array(x) for x in zip(*rows))


def chain_xml(n: int) -> str:
    """MJCF of a serial chain of n hinge links (alternating y and x axes), 0.1 m apart, 1 kg each."""
    body = ""
    for k in reversed(range(n)):
        axis = "0 1 0" if k % 2 == 0 else "1 0 0"
        body = (f'<body pos="0 0 -0.1"><joint type="hinge" axis="{axis}"/>'
                f'<inertial pos="0 0 -0.05" mass="1" diaginertia="0.01 0.01 0.002"/>{body}</body>')
    return f'<mujoco><option gravity="0 0 -9.81"/><worldbody>{body}</worldbody></mujoco>'


def scaling(sizes=(5, 10, 20, 50, 100), n: int = 20_000) -> None:
    """Per-state time of batched rnea and mass matrix on serial chains, and the fitted exponent of time ~ links^p."""
    print(f"\nserial chains of hinge links, N = {n} states per call, microseconds per state (wall clock, every thread)")
    print(f"{'links':>6s}{'rnea':>10s}{'mass_matrix':>13s}")
    times = []
    for links in sizes:
        model = engine.from_mujoco(mujoco.MjModel.from_xml_string(chain_xml(links)))
        Q, QD = engine.random_states(model, n, 0)
        r = best_time(lambda model=model, Q=Q, QD=QD: engine.rnea(model, Q, QD, QD), 0.5) / n * 1e6
        M = best_time(lambda model=model, Q=Q: engine.mass_matrix(model, Q), 0.5) / n * 1e6
        times.append((links, r, M))
        print(f"{links:6d}{r:10.3f}{M:13.3f}")
    x = np.log([t[0] for t in times])
    for k, name in ((1, "rnea"), (2, "mass_matrix")):
        p = np.polyfit(x, np.log([t[k] for t in times]), 1)[0]
        print(f"fitted exponent, {name}: time per state ~ links^{p:.2f}")


def peak_memory(n: int = 1_000_000, name: str = "franka_emika_panda") -> None:
    """Peak memory of one batched rnea call (tracemalloc: numpy's allocations) against its inputs and output."""
    import tracemalloc

    model = engine.from_mujoco(name)
    Q, QD = engine.random_states(model, n, 0)
    QDD = QD.copy()
    engine.rnea(model, Q[:10], QD[:10], QDD[:10])
    tracemalloc.start()
    tau = engine.rnea(model, Q, QD, QDD)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    io = Q.nbytes + QD.nbytes + QDD.nbytes + tau.nbytes
    print(f"\npeak memory of rnea on N = {n} {name} states: {peak / 1e6:.1f} MB allocated during the call "
          f"(the output: {tau.nbytes / 1e6:.1f} MB); inputs + output {io / 1e6:.1f} MB; "
          f"peak / (inputs + output) = {(io - tau.nbytes + peak) / io:.3f}")


def batch_sizes(name: str = "franka_emika_panda", sizes=(1, 10, 100, 1000, 10_000, 100_000)) -> None:
    """rnea and forward dynamics per state against the batch size N, beside Pinocchio's per-call time and its
    rneaInParallel / abaInParallel (one thread) on the same N."""
    case = Case(name, max(sizes))
    print(f"\n{name}: batch size N against time per state (microseconds); Pinocchio one state per call, and its "
          "*InParallel on the same N states with one thread")
    print(f"{'N':>7s}{'rnea':>10s}{'Pin-N rnea':>12s}{'fd':>10s}{'Pin-N aba':>12s}")
    pin_one = {q: best_time(case.pinocchio(q)) for q in ("rnea", "forward_dynamics")} if case.pin else {}
    for n in sizes:
        Q, QD, QDD = case.Q[:n], case.QD[:n], case.QDD[:n]
        cells = []
        for quantity, fn in (("rnea", engine.rnea), ("forward_dynamics", engine.forward_dynamics)):
            cells.append(best_time(partial(fn, case.model, Q, QD, QDD)) / n)
            if case.pin is not None:
                par = pin.rneaInParallel if quantity == "rnea" else pin.abaInParallel
                X = [np.asfortranarray(x[:, :n]) for x in case.pin_batch]
                out = np.asfortranarray(np.zeros((case.model.nv, n)))
                cells.append(best_time(partial(par, 1, case.pin_pool, X[0], X[1], X[2] if quantity == "rnea" else X[3], out)) / n)
            else:
                cells.append(0.0)
        print(f"{n:>7d}" + "".join(f"{c * 1e6:>{w}.3f}" if c else f"{'-':>{w}s}" for c, w in zip(cells, (10, 12, 10, 12))))
    if pin_one:
        print(f"Pinocchio one state per call: rnea {pin_one['rnea'] * 1e6:.3f}, aba {pin_one['forward_dynamics'] * 1e6:.3f}")


def kinematic_calls(name: str = "franka_emika_panda", n: int = 10_000) -> None:
    """body_jacobian, integrate and difference, one state per call and batched, beside MuJoCo's calls."""
    from physai import jacobians

    m = models.load(name)
    model, d = engine.from_mujoco(m), mujoco.MjData(m)
    Q, QD = engine.random_states(model, n, 0)
    b = model.nbody - 1
    q, qd, q1 = Q[0], QD[0], Q[1]
    jacp, jacr, out = np.zeros((3, m.nv)), np.zeros((3, m.nv)), np.zeros(m.nv)

    def mj_jacobian():
        d.qpos[:] = q
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        mujoco.mj_jacBody(m, d, jacp, jacr, b + 1)

    def mj_integrate():
        x = q.copy()
        mujoco.mj_integratePos(m, x, qd, 0.01)

    rows = {"body_jacobian": (lambda: jacobians.body_jacobian(model, q, b), lambda: jacobians.body_jacobian(model, Q, b), mj_jacobian),
            "integrate": (lambda: engine.integrate(model, q, qd, 0.01), lambda: engine.integrate(model, Q, QD, 0.01), mj_integrate),
            "difference": (lambda: engine.difference(model, q, q1, 0.01), lambda: engine.difference(model, Q[:-1], Q[1:], 0.01),
                           lambda: mujoco.mj_differentiatePos(m, out, 0.01, q, q1))}
    print(f"\n{name}: body {model.body_name[b]!r}, N = {n}; microseconds (per call, per state for native-N); MuJoCo: "
          "mj_kinematics+comPos+jacBody, mj_integratePos, mj_differentiatePos")
    print(f"{'':15s}{'1/mj':>8s}  |{'native-1':>10s}{'native-N':>10s}{'MuJoCo':>10s}")
    for label, (one, many, theirs) in rows.items():
        t1, tn, tm = best_time(one), best_time(many) / n, best_time(theirs)
        print(f"{label:15s}{t1 / tm:8.3f}  |{t1 * 1e6:10.3f}{tn * 1e6:10.3f}{tm * 1e6:10.3f}")


def ratio(a, b):
    return f"{a / b:8.3f}" if a and b else f"{'-':>8s}"


def print_table(case: Case, table: dict, with_numpy: bool) -> None:
    mo = case.model
    print(f"\n{case.name}: nq = {mo.nq}, nv = {mo.nv}, {mo.nlink} links, N = {case.n}; ratios, then microseconds per state")
    columns = ["native-1", "native-N"] + (["numpy-N"] if with_numpy else []) + ["Pinocchio", "Pin-N", "MuJoCo"]
    head = f"{'':17s}{'1/pin':>8s}{'N/pin':>8s}{'N/pinN':>8s}{'N/mj':>8s}  |" + "".join(f"{c:>10s}" for c in columns)
    print(head)
    print("-" * len(head))
    for name, row in table.items():
        ratios = (ratio(row["native-1"], row["Pinocchio"]) + ratio(row["native-N"], row["Pinocchio"])
                  + ratio(row["native-N"], row["Pin-N"]) + ratio(row["native-N"], row["MuJoCo"]))
        cells = "".join(f"{row[c]:10.3f}" if row[c] else f"{'-':>10s}" for c in columns)
        print(f"{name:17s}{ratios}  |{cells}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=DEFAULT_MODELS, help="model names (physai.models)")
    parser.add_argument("--n", type=int, default=100_000, help="states per batched call (default 100000)")
    parser.add_argument("--numpy", action="store_true", help="also time the NumPy backend on the batch")
    parser.add_argument("--no-extras", action="store_true",
                        help="skip the N sweep, the Jacobian/integrate/difference table, the chains and the memory peak")
    args = parser.parse_args(argv)
    print(header())
    for name in args.models:
        case = Case(name, args.n)
        print_table(case, case.run(args.numpy), args.numpy)
    if not args.no_extras:
        batch_sizes()
        kinematic_calls()
        scaling()
        peak_memory()
    return 0


if __name__ == "__main__":
    sys.exit(main())
