"""`physai check MODEL`: the acceptance test of the manipulator equation M qdd + C qd + g = tau on random states.

MODEL is a model name (see physai.models) or the path of an MJCF file; a file MuJoCo cannot compile is an error.

(a) M symmetric positive definite, (b) the hold torque is g(q), (c) forward then inverse dynamics returns tau,
(d) C qd is the velocity part of the bias, Mdot - 2C is skew-symmetric and qd^T (Mdot - 2C) qd = 0, and
(e) the full balance M qacc + qfrc_bias = qfrc_actuator + qfrc_passive + qfrc_constraint + qfrc_applied with
physai's terms against MuJoCo's qacc, then each term against MuJoCo's: first with MuJoCo's constraints disabled
(qfrc_constraint = 0), then with them on (joint limits, friction loss, equalities, contacts) and physai's own
qfrc_constraint (physai.constraints.inverse_dynamics at MuJoCo's qacc, MuJoCo's Newton solver at tolerance 1e-15
without noslip, whatever the model's solver: the constraint force of qacc is the optimum's). The round trip's scale is
also the size of the terms M qdd sums (|M| |qdd|). The checks live in physai.acceptance.
Exit status 0 when every check passes, 1 otherwise (2 for errors, from cli.py).
"""

import argparse

from physai import acceptance, engine, joints, models
from physai.commands import nonnegative_int, positive_int, require_joints, require_memory


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of `physai check`."""
    parser.add_argument("model", metavar="MODEL", help=f"model name ({', '.join(models.names())}) or path to an MJCF file")
    parser.add_argument("--states", type=positive_int, default=100, metavar="N", help="number of random states (default 100)")
    parser.add_argument("--seed", type=nonnegative_int, default=0, metavar="S", help="seed of the random states (default 0)")


def run(args: argparse.Namespace) -> int:
    """Print the table of checks; 0 when all pass, else 1."""
    m = models.load(args.model)
    require_joints(args.model, m.nv)
    require_memory(args.states, m.nq, m.nv)
    model = engine.from_mujoco(m)                            # every joint type; the actuators come with it
    print(f"physai check {args.model}: nq = {m.nq}, nv = {m.nv} ({joints.describe(model.jnt_type)}), {m.nu} actuators, "
          f"{args.states} random states, seed {args.seed}")
    print("states: hinges and slides uniform in the joint range where limited, else [-pi, pi]; quaternions uniform; "
          f"qd in [-{acceptance.QD_MAX:g}, {acceptance.QD_MAX:g}]; "
          f"tau in [-{acceptance.TAU_MAX:g}, {acceptance.TAU_MAX:g}]; ctrl uniform in ctrlrange; qfrc_applied and every "
          f"body's xfrc_applied component in [-{acceptance.APPLIED_MAX:g}, {acceptance.APPLIED_MAX:g}]")
    print("(e) first with MuJoCo's constraints disabled (mjDSBL_CONSTRAINT), so qfrc_constraint = 0 in the balance; then "
          "with them on, physai's qfrc_constraint computed from MuJoCo's qacc (its Newton solver at tolerance 1e-15, "
          "no noslip)")
    print(f"tolerance: {acceptance.RTOL:g} x scale (10 x for the balance, {acceptance.CONSTRAINED_RTOL:g} x with constraints: "
          "the solver's stopping point), scale = max(1, largest magnitude of the compared quantities; the round trip's "
          "also of |M| |qdd|); the smallest eigenvalue must exceed its tolerance\n")
    results = acceptance.run_checks(m, args.states, args.seed, model)
    width = max(len(r.label) for r in results)
    print(f"{'check':<{width}}  {'result':<6} {'worst':>10} {'tolerance':>11}  unit")
    for r in results:
        bound = ">" if r.lower_bound else "<="
        print(f"{r.label:<{width}}  {'pass' if r.passed else 'FAIL':<6} {r.worst:>10.1e} {bound:>2} {r.tolerance:.1e}  {r.unit}")
    failed = [r.key for r in results if not r.passed]
    print("\nall checks pass" if not failed else f"\nFAIL: {', '.join(failed)}")
    return 1 if failed else 0
