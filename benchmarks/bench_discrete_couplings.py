"""The discrete integrator with tendon and servo terms in its metric: physai beside MuJoCo, steps per second, in one run.

    uv run python benchmarks/bench_discrete_couplings.py
    uv run python benchmarks/bench_discrete_couplings.py --only G1       # the rows whose name holds "G1"

Models stepped by MuJoCo 4's discrete integrator (mjINT_DISCRETE) whose metric M + h B + h^2 K takes the tendons'
and servos' terms (engine.forward.discrete_metric_terms): the fixed tendon of tests/test_tendon_actfrc.py with three
actuators on it (benchmarks/bench_tendon_actfrc.py's model) and tests/test_integrators.py's discrete_cross_tree_model
(tendon springs, dampers and servos coupling two branches, two trees and a free body), from one random state under a
constant random control; the cross-tree scene also with constraints (limit rows past their ranges, friction loss and
the free body's contacts on a floor: cross_tree_start's state) under Newton and under CG; and the Menagerie G1 in its
scene standing at its keyframe (its position servos' kv and kp on hinges: joint-level terms, inside M's tree pattern;
contacts, limits and friction loss, Newton) under the discrete integrator and, beside it, under its own implicitfast
(no "numpy step" column for these two). Columns: integrators.simulate compiled (cpp/forward.h's coupling_terms and
metric_pcg; with rows cpp/solver.h's metric_model, whose metric stays on the tree's sparse layout when its terms fit M's
pattern), the same with the step handed to the NumPy engine as before those (forward.compiled_discrete's earlier rule,
restored for this column only: "numpy step"), the same with the metric forced onto the chain of every dof (the test
hook native._ext._dense_metric: the layout before r-sparse, "chain"; "-" where the run made no metric there: no
rows), mj_step from a Python loop, and integrators.rollout of 64 trajectories beside mujoco.rollout (same thread
count). Ratios are physai's steps per second over MuJoCo's (above 1: physai is faster); "/chain": simulate's over the
chain's. Last, the G1's discrete / implicitfast: physai's simulate under discrete over its simulate under implicitfast,
and mj_step's likewise. Best of 3 rounds, wall clock; the compiled backend; the machine's load average printed first.
"""

import argparse
import os
import sys
from functools import partial
from pathlib import Path

import mujoco
import numpy as np

from physai import engine, integrators, models as menagerie
from physai.engine import forward, native, passive

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from test_integrators import cross_tree_start, discrete_cross_tree_model  # noqa: E402
from test_tendon_actfrc import start, tendon_frc_xml  # noqa: E402
from bench_tendon_actfrc import N, ROLLOUT_STEPS, STEPS, best, mj_loop, rollout_rates  # noqa: E402

NUMPY_STEPS = 100


def numpy_step_rule(model, actuators) -> bool:
    """forward.compiled_discrete before the compiled couplings: no fluid, no tendon or actuator terms."""
    return not (forward.metric_couplings(model, actuators) or passive.has_fluid(model))


def numpy_steps_per_second(model, q0, qd0, ctrl) -> float:
    """simulate's steps per second with the discrete step handed to the NumPy engine (the earlier rule)."""
    kept = forward.compiled_discrete
    forward.compiled_discrete = numpy_step_rule
    try:
        return NUMPY_STEPS / best(partial(integrators.simulate, model, q0, qd0, steps=NUMPY_STEPS, ctrl=ctrl, energy=False),
                                  rounds=1)
    finally:
        forward.compiled_discrete = kept


def chain_steps_per_second(model, q0, qd0, ctrl) -> float:
    """simulate's steps per second with the discrete metric forced onto the chain of every dof (NaN: none made)."""
    dense_metric = native._ext._dense_metric
    dense_metric(True)
    try:
        rate = STEPS / best(partial(integrators.simulate, model, q0, qd0, steps=STEPS, ctrl=ctrl, energy=False))
    finally:
        made = dense_metric(False)
    return rate if made else np.nan


def models():
    """[(name, MjModel, q0, qd0, ctrl)]: the fixed tendon and the cross-tree scene from their random states, the
    cross-tree scene with rows under Newton and CG, the G1 at its keyframe under discrete and implicitfast."""
    out = []
    m = mujoco.MjModel.from_xml_string(tendon_frc_xml(2, "discrete", spatial=False))
    out.append(("fixed tendon", m, *start(m, 2)))
    m = discrete_cross_tree_model(0)
    rng = np.random.default_rng(0)
    q0 = engine.random_states(engine.from_mujoco(m), 1, 0)[0][0]
    out.append(("cross-tree", m, q0, rng.normal(size=m.nv), rng.normal(size=m.nu)))
    for solver in (mujoco.mjtSolver.mjSOL_NEWTON, mujoco.mjtSolver.mjSOL_CG):   # with rows: limits, friction, contacts
        m = discrete_cross_tree_model(0, limits=True, friction=True)
        m.opt.solver, m.opt.tolerance = solver, 1e-8
        _, q0, qd0, ctrl = cross_tree_start(m, 0, True)[:4]
        out.append((f"rows, {'newton' if solver == mujoco.mjtSolver.mjSOL_NEWTON else 'cg'}", m, q0, qd0, ctrl))
    for integrator in (mujoco.mjtIntegrator.mjINT_DISCRETE, mujoco.mjtIntegrator.mjINT_IMPLICITFAST):
        m = menagerie.load("unitree_g1", "scene")
        m.opt.integrator = integrator
        d = mujoco.MjData(m)
        mujoco.mj_resetDataKeyframe(m, d, 0)
        name = "G1 discrete" if integrator == mujoco.mjtIntegrator.mjINT_DISCRETE else "G1 implicitf."
        out.append((name, m, d.qpos.copy(), d.qvel.copy(), d.ctrl.copy()))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="the rows whose model name holds this text")
    only = parser.parse_args().only
    engine.set_backend("native")
    threads = native.threads()
    print(f"load average {os.getloadavg()[0]:.1f}; discrete integrator: simulate ({STEPS} steps; numpy step "
          f"{NUMPY_STEPS}) vs mj_step loop; rollout ({N} x {ROLLOUT_STEPS}) vs mujoco.rollout, {threads} threads")
    print(f"{'model':<13} {'simulate/s':>11} {'numpy step/s':>13} {'chain/s':>8} {'/chain':>7} {'mj_step/s':>10} "
          f"{'ratio':>6} {'numpy ratio':>12} {'rollout/s':>11} {'mj rollout/s':>13} {'ratio':>6}")
    rates = {}
    for name, m, q0, qd0, ctrl in [row for row in models() if only in row[0]]:
        model = engine.from_mujoco(m)
        mine = STEPS / best(partial(integrators.simulate, model, q0, qd0, steps=STEPS, ctrl=ctrl, energy=False))
        before = numpy_steps_per_second(model, q0, qd0, ctrl) if not name.startswith("G1") else np.nan
        chain = chain_steps_per_second(model, q0, qd0, ctrl)
        theirs = STEPS / best(partial(mj_loop, m, q0, qd0, ctrl))
        rates[name] = mine, theirs
        rng = np.random.default_rng(1)
        Q = np.repeat(q0[None], N, axis=0)
        QD = qd0 + 0.1 * rng.normal(size=(N, m.nv))
        U = np.repeat(ctrl[None], N, axis=0)
        batch, mj_batch = rollout_rates(m, model, Q, QD, U, threads)
        numpy = ("-", "-") if np.isnan(before) else (f"{before:.0f}", f"{before / theirs:.3f}")
        chained = ("-", "-") if np.isnan(chain) else (f"{chain:.0f}", f"{mine / chain:.2f}")
        print(f"{name:<13} {mine:>11.0f} {numpy[0]:>13} {chained[0]:>8} {chained[1]:>7} {theirs:>10.0f} "
              f"{mine / theirs:>6.2f} {numpy[1]:>12} {batch:>11.0f} {mj_batch:>13.0f} {batch / mj_batch:>6.2f}")
    if {"G1 discrete", "G1 implicitf."} <= rates.keys():
        (mine, theirs), (mine_fast, theirs_fast) = rates["G1 discrete"], rates["G1 implicitf."]
        print(f"G1 discrete / implicitfast: physai simulate {mine / mine_fast:.2f}, mj_step {theirs / theirs_fast:.2f}")


if __name__ == "__main__":
    main()
