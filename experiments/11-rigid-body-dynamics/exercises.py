"""Lesson 11 · Check yourself: the three exercises, answered by computation.

    uv run python experiments/11-rigid-body-dynamics/exercises.py     (or: physai lesson 11 exercises)

Easy: how much M11 of the double pendulum changes between q2 = 0 and q2 = pi.
Medium: mj_inverse on the Panda at home with qvel = qacc = 0, against qfrc_bias, and why.
Hard: the energy table with damping="0.05" on both pendulum joints.

Try first: each question is asked before its answer is computed; type your answer (or only Enter) and the
computation follows. --answers prints every answer at once (for scripts); when the input is not a terminal, only the
questions are printed, the answers on request (--answers). The answers are written to exercises_output.txt beside this
file when they are computed (your own answers are not).
"""

import argparse
import sys
from pathlib import Path

import mujoco
import numpy as np

from physai import dynamics as dyn
from physai import models
from physai.lessons import Transcript, bound
from physai.lessons import lesson11 as L

HERE = Path(__file__).resolve().parent
DAMPING = 0.05   # N m s/rad, on both joints
#: Printed bounds [N m] (tests/test_lesson11_experiments.py asserts the values against them): the Panda's torques
#: reach ~30 N m, so a few eps times that, with 10 times margin over the worst value seen on the kernels tried.
BOUNDS = {"inverse_vs_bias": 1e-12, "gravity_vs_bias": 1e-12}


def easy(out: Transcript) -> dict:
    """Delta M11 between the arm straight (q2 = 0) and folded back (q2 = pi), three ways [kg m^2]."""
    out("== Easy. M11 of the double pendulum, arm straight (q2 = 0) vs folded back (q2 = pi) ==")
    m = models.load("double_pendulum")
    d, tree, p = mujoco.MjData(m), dyn.tree_from_mujoco(m), L.PendulumParams.from_model(m)
    poses = {"straight": np.array([0.0, 0.0]), "folded": np.array([0.0, np.pi])}
    ours = {k: dyn.mass_matrix(tree, q)[0, 0] for k, q in poses.items()}
    theirs = {}
    for k, q in poses.items():
        d.qpos[:] = q
        mujoco.mj_forward(m, d)
        M = np.zeros((2, 2))
        mujoco.mj_fullM(m, d, M)
        theirs[k] = M[0, 0]
    formula = 4 * p.m2 * p.l1 * p.c2
    delta, delta_mj = ours["straight"] - ours["folded"], theirs["straight"] - theirs["folded"]
    out(f"M11 straight {ours['straight']:.4f}, folded {ours['folded']:.4f} kg m^2 (physai.mass_matrix)")
    out(f"Delta M11 = {delta:.4f} kg m^2 (physai), {delta_mj:.4f} (mj_fullM), "
        f"4 m2 l1 c2 = 4 * {p.m2:g} * {p.l1:g} * {p.c2:g} = {formula:.4f} (formula); "
        f"larger {'straight' if delta > 0 else 'folded'}")
    return {"delta": delta, "delta_mj": delta_mj, "formula": formula}


def medium(out: Transcript) -> dict:
    """mj_inverse at the Panda's home with qvel = qacc = 0 against qfrc_bias [N m]."""
    out("== Medium. mj_inverse on the Panda at home with qvel = 0 and qacc = 0 ==")
    m = models.load("franka_emika_panda")
    d = mujoco.MjData(m)
    d.qpos[:] = m.key("home").qpos
    mujoco.mj_forward(m, d)
    bias = d.qfrc_bias.copy()
    d.qvel[:], d.qacc[:] = 0.0, 0.0
    mujoco.mj_inverse(m, d)
    inverse = d.qfrc_inverse.copy()
    g = dyn.gravity(dyn.tree_from_mujoco(m), d.qpos)
    diff = np.abs(inverse - bias).max()
    out(f"qfrc_inverse, joints 1-7 [N m]: {', '.join(f'{x:.2f}' for x in inverse[:7])}")
    out(f"qfrc_bias,    joints 1-7 [N m]: {', '.join(f'{x:.2f}' for x in bias[:7])}")
    gdiff = np.abs(g - bias).max()
    out(f"max |qfrc_inverse - qfrc_bias| {bound(diff, BOUNDS['inverse_vs_bias'], 'N m')} over all {m.nv} dofs; "
        f"max |physai gravity(q) - qfrc_bias| {bound(gdiff, BOUNDS['gravity_vs_bias'], 'N m')}")
    out(f"why: qfrc_inverse = M qacc + c(q, qvel) - qfrc_passive - qfrc_constraint; with qacc = 0 the inertial term "
        f"vanishes, with qvel = 0 the Coriolis term and the damping force vanish (qfrc_passive max "
        f"{np.abs(d.qfrc_passive).max():.1e}, joint stiffness max {m.jnt_stiffness.max():g}), and nothing pushes on a "
        f"constraint at rest (qfrc_constraint max {np.abs(d.qfrc_constraint).max():.1e}, {d.ncon} contacts): "
        "what is left is the gravity torque g(q), the holding torque of Result 3")
    return {"inverse": inverse, "bias": bias, "diff": diff, "gravity_diff": gdiff}


def hard(out: Transcript) -> dict:
    """The energy table with joint damping, and the three answers, from the tables."""
    out(f"== Hard. damping=\"{DAMPING:g}\" on both pendulum joints: the energy table again ==")
    damped, plain = L.damped_pendulum(DAMPING), models.load("double_pendulum")
    scale = L.releasable_energy(dyn.tree_from_mujoco(plain))
    tables = {}
    for label, m in (("damped", damped), ("undamped", plain)):
        tables[label] = L.EnergyTable(L.TIMESTEPS, scale)
        for name in L.INTEGRATORS:
            tables[label].add(name, L.mujoco_energy_run(m, name))
    t, t0 = tables["damped"], tables["undamped"]
    out(f"damped, % of {scale:.3f} J; each cell is max |E(t) - E0| / final E - E0:")
    out(t.format())
    same = t.identical("Euler", "implicitfast")
    gap = max(np.abs(a.drift - b.drift).max() for a, b in zip(t.rows["Euler"], t.rows["implicitfast"]))
    out(f"1. Does implicitfast still equal Euler? {'yes, bit-identical in every cell' if same else f'no: max difference {gap:.3e}%'}"
        " (Euler already treats joint damping implicitly; implicitfast adds the same damping derivative and drops "
        "only Coriolis/centripetal)")
    falls = {n: sum(c.final < 0 for c in cells) for n, cells in t.rows.items()}
    rises = {n: max(int((np.diff(c.drift) > 0).sum()) for c in cells) for n, cells in t.rows.items()}
    out("2. Does the energy now fall for every integrator? final E < E0 in "
        + ", ".join(f"{n} {k}/{len(t.timesteps)}" for n, k in falls.items())
        + f" cells: {'yes' if all(k == len(t.timesteps) for k in falls.values()) else 'no'}. "
        "A damped passive system's energy may never rise; the most readings that rise over the one before, in any "
        "one run: " + ", ".join(f"{n} {k}" for n, k in rises.items()))
    out("3. Does Euler's gain still show on top of the damping? Euler's final E - E0 minus RK4's (RK4 ~ exact):")
    gain = [e.final - r.final for e, r in zip(t.rows["Euler"], t.rows["RK4"])]
    for dt, e, r, e0, g in zip(t.timesteps, t.rows["Euler"], t.rows["RK4"], t0.rows["Euler"], gain):
        out(f"   {dt * 1000:4g} ms: damped Euler {e.final:+8.3f}%, RK4 {r.final:+8.3f}%, difference {g:+8.3f}% "
            f"(undamped Euler gain {e0.final:+8.3f}%)")
    above, growing = all(g > 0 for g in gain), all(a < b for a, b in zip(gain, gain[1:]))
    smaller = all(g < e0.final for g, e0 in zip(gain, t0.rows["Euler"]))
    out(f"   Euler ends above RK4 at {'every' if above else 'not every'} step size, "
        f"{'by more the larger dt' if growing else 'not steadily more with dt'}, and by "
        f"{'less' if smaller else 'not always less'} than its undamped gain: "
        + ("its numerical gain still shows on top of the damping, smaller since the swing it feeds on dies out"
           if above and smaller else "see the rows above"))
    return {"table": t, "undamped": t0, "same": same, "falls": falls, "rises": rises, "gain": gain,
            "above": above, "growing": growing, "smaller": smaller}


#: the questions as lesson 11's Check yourself asks them
QUESTIONS = {
    "easy": "Easy. For the double pendulum, by how much does M11 change between q2 = 0 (arm straight) and q2 = pi "
            "(folded back)?",
    "medium": "Medium. Call mj_inverse on the Panda at home with qvel = 0 and qacc = 0. What should qfrc_inverse equal, "
              "and why?",
    "hard": "Hard. Add damping=\"0.05\" to both pendulum joints and rerun part B. Predict before running: does "
            "implicitfast still equal Euler? Does the energy now decrease for every integrator?",
}


def run(out: Transcript, ask=None) -> dict:
    """The three exercises; returns their numbers. ask(question) -> bool is called before each answer is computed
    (try first); False stops asking (the rest are answered at once)."""
    results = {}
    for name, exercise in (("easy", easy), ("medium", medium), ("hard", hard)):
        if ask is not None and not ask(QUESTIONS[name]):
            ask = None
        results[name] = exercise(out)
    return results


def ask_terminal(question: str) -> bool:
    """The question on the terminal; the learner's answer (any text, or Enter) before the computation. False at the
    input's end (a script, a pipe): the answers then come at once."""
    print(f"\n{question}")
    try:
        answer = input("Your answer (Enter to see the computation): ").strip()
    except EOFError:
        print()
        return False
    if answer:
        print(f"You answered: {answer}. The computation:")
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE, help="folder for exercises_output.txt (default: beside this script)")
    parser.add_argument("--answers", action="store_true", help="print every answer at once, without asking first")
    args = parser.parse_args(argv)
    if not args.answers and not sys.stdin.isatty():   # no one to ask (a pipe, a script): the questions; answers on request
        print("\n\n".join(QUESTIONS.values()))
        print("\nTry them first; the computed answers: physai lesson 11 exercises --answers")
        return 0
    out = Transcript()
    run(out, None if args.answers else ask_terminal)
    out.save(args.out / "exercises_output.txt")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
